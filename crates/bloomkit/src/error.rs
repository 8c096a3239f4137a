//! The one error type of the crate.
//!
//! Every message says what was expected, what was found, and what to do about it, so a
//! binary can print it as one line and a user can act on it without reading the source.

use std::fmt;
use std::io;

use crate::FilterKind;

/// A specialised `Result` whose error is [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in bloomkit.
///
/// The enum is `#[non_exhaustive]`: later versions add variants, so match with a
/// wildcard arm.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The false-positive rate is not a number strictly between 0 and 1.
    InvalidFpRate {
        /// The rate that was given.
        fp_rate: f64,
    },
    /// The false-positive rate is so small that the filter would need more hash probes than
    /// a 64-bit key hash can usefully feed.
    FpRateTooSmall {
        /// The rate that was given.
        fp_rate: f64,
        /// The probes it would need.
        num_hashes: u64,
    },
    /// A parameter is outside the range the filter accepts.
    InvalidParameter {
        /// The parameter's name, as the API spells it (e.g. "bucket_size").
        name: &'static str,
        /// The value that was given.
        value: String,
        /// What is accepted, in words (e.g. "1 to 255").
        expected: &'static str,
    },
    /// The filter holds as many keys as it can; the insert changed nothing.
    Full {
        /// The kind of filter that is full.
        kind: FilterKind,
    },
    /// The operation does not apply to this kind of filter.
    Unsupported {
        /// The kind of filter.
        kind: FilterKind,
        /// What was attempted (e.g. "union").
        operation: &'static str,
    },
    /// Building a static filter failed even after re-seeding.
    ConstructionFailed {
        /// How many seeds were tried.
        attempts: u32,
    },
    /// A filter of zero bits was requested.
    ZeroBits,
    /// The number of hash probes is zero or above [`crate::sizing::MAX_NUM_HASHES`].
    InvalidNumHashes {
        /// The count that was given.
        num_hashes: u32,
    },
    /// A [`crate::SectorBloomFilter`]'s probe count is not 8, 16, .. or 64: it sets the
    /// same number of bits in each of a line's eight words.
    InvalidSectorNumHashes {
        /// The count that was given.
        num_hashes: u32,
    },
    /// The filter would be larger than this machine can address.
    TooLarge {
        /// What was asked for, in bits (saturated at `u64::MAX`).
        num_bits: u64,
    },
    /// The allocator refused the memory for the filter.
    OutOfMemory {
        /// How many bytes were requested.
        bytes: u64,
    },
    /// Two filters cannot be combined (union or intersection) because a parameter differs.
    Incompatible {
        /// Which parameter differs: "kind", "number of bits", "number of hashes", "hash
        /// algorithm" or "hash seed".
        parameter: &'static str,
        /// Its value in the filter being changed.
        left: String,
        /// Its value in the other filter.
        right: String,
    },
    /// The bytes do not start with bloomkit's magic number: not a bloomkit filter.
    BadMagic,
    /// The data was written in a format version this build does not read.
    UnsupportedVersion {
        /// The version found in the data.
        found: u16,
        /// The newest version this build reads.
        supported: u16,
    },
    /// The data holds a different kind of filter than the type it is read into.
    WrongKind {
        /// The kind the reading type holds.
        expected: FilterKind,
        /// The kind code found in the data.
        found: u16,
    },
    /// The data holds a kind of filter this build does not know.
    UnknownKind {
        /// The kind code found in the data.
        found: u16,
    },
    /// The data names a hash algorithm this build does not know.
    UnknownHashAlgorithm {
        /// The algorithm code found in the data.
        found: u16,
    },
    /// The data ends before the filter does.
    Truncated,
    /// The checksum at the end of the data does not match its contents.
    ChecksumMismatch {
        /// The checksum stored in the data.
        stored: u64,
        /// The checksum computed over the data that was read.
        computed: u64,
    },
    /// The data is internally inconsistent (its header disagrees with itself or its payload).
    Corrupt {
        /// What is wrong, in words.
        reason: String,
    },
    /// More bytes follow a whole, valid filter where a reader takes exactly one
    /// (`from_bytes`): not damage, but more than a filter, such as a filter inside a larger
    /// buffer. [`format::peek_header`](crate::format::peek_header) gives a filter's length
    /// from its first bytes; `read_from` stops at its end.
    TrailingBytes {
        /// How many bytes follow the filter.
        extra: u64,
    },
    /// An I/O error from the reader or writer.
    Io(io::Error),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::InvalidFpRate { fp_rate } => write!(
                f,
                "invalid false-positive rate {}: it must be a number strictly between 0 and 1, \
                 such as 0.01 for 1%",
                Rate(*fp_rate)
            ),
            Error::FpRateTooSmall {
                fp_rate,
                num_hashes,
            } => write!(
                f,
                "false-positive rate {} is too small: it would need {num_hashes} hash probes, \
                 more than the {} a 64-bit key hash can usefully feed; choose a rate of 1e-15 or \
                 more",
                Rate(*fp_rate),
                crate::sizing::MAX_NUM_HASHES
            ),
            Error::InvalidParameter {
                name,
                value,
                expected,
            } => write!(f, "invalid {} {value}: expected {expected}", in_words(name)),
            Error::Full { kind } => write!(
                f,
                "the {kind} filter is full and the insert changed nothing; create it with a \
                 larger capacity, or let it grow"
            ),
            Error::Unsupported { kind, operation } => {
                write!(
                    f,
                    "{} {kind} filter does not support {operation}",
                    article(kind.name())
                )
            }
            Error::ConstructionFailed { attempts } => write!(
                f,
                "could not build the filter after {attempts} seeds; this is vanishingly \
                 unlikely for real keys, so check that the key count and hashes are sane"
            ),
            Error::ZeroBits => write!(f, "a filter needs at least one bit; ask for more bits"),
            Error::InvalidNumHashes { num_hashes } => write!(
                f,
                "invalid number of hashes {num_hashes}: it must be between 1 and {}",
                crate::sizing::MAX_NUM_HASHES
            ),
            Error::InvalidSectorNumHashes { num_hashes } => write!(
                f,
                "invalid number of hashes {num_hashes} for a sector filter: it sets the same \
                 number of bits in each of a line's 8 words, so it must be 8, 16, 24, .. or \
                 {}",
                crate::sizing::MAX_NUM_HASHES
            ),
            Error::TooLarge { num_bits } => write!(
                f,
                "a filter of {num_bits} bits is larger than this machine can address; plan for \
                 fewer items or a higher false-positive rate"
            ),
            Error::OutOfMemory { bytes } => write!(
                f,
                "could not allocate {bytes} bytes for the filter; plan for fewer items or a \
                 higher false-positive rate, or free memory"
            ),
            Error::Incompatible {
                parameter,
                left,
                right,
            } => write!(
                f,
                "filters differ in {parameter} ({left} vs {right}); only filters built with the \
                 same kind, size, number of hashes, probe derivation and hash seed can be \
                 combined"
            ),
            Error::BadMagic => write!(
                f,
                "not a bloomkit filter: the data does not start with the bloomkit magic number"
            ),
            Error::UnsupportedVersion { found, supported } => write!(
                f,
                "filter format version {found} is not supported (this build reads versions up \
                 to {supported}); upgrade bloomkit to read it"
            ),
            Error::WrongKind { expected, found } => {
                let found_name = FilterKind::from_code(*found)
                    .map(|k| k.to_string())
                    .unwrap_or_else(|| format!("unknown kind {found}"));
                write!(
                    f,
                    "the data holds {} {found_name} filter, not {} {expected} filter; read it \
                     with the matching type, or with AnyFilter",
                    article(&found_name),
                    article(expected.name())
                )
            }
            Error::UnknownKind { found } => write!(
                f,
                "unknown filter kind {found} in the filter header; the file is corrupt or from a \
                 newer bloomkit, so upgrade bloomkit to read it"
            ),
            Error::UnknownHashAlgorithm { found } => write!(
                f,
                "unknown hash algorithm {found} in the filter header; the file is corrupt or \
                 from a newer bloomkit, so upgrade bloomkit to read it"
            ),
            Error::Truncated => write!(
                f,
                "the filter data ends early: it is truncated (an interrupted copy or download?)"
            ),
            Error::ChecksumMismatch { stored, computed } => write!(
                f,
                "checksum mismatch (stored {stored:#018x}, computed {computed:#018x}): the filter \
                 data is corrupt; restore it from a good copy or rebuild it"
            ),
            Error::Corrupt { reason } => {
                write!(
                    f,
                    "corrupt filter data: {reason}; restore it from a good copy or rebuild it"
                )
            }
            Error::TrailingBytes { extra } => write!(
                f,
                "{extra} more bytes follow a whole filter, and from_bytes reads exactly one; \
                 for a filter inside larger data, pass only its bytes (format::peek_header \
                 gives their length from the first ones) or read it with read_from, which \
                 stops at its end"
            ),
            Error::Io(e) => write!(f, "I/O error: {e}"),
        }
    }
}

/// "a" or "an", for a kind's name in a sentence ("an aging filter").
fn article(word: &str) -> &'static str {
    match word.as_bytes().first() {
        Some(b'a' | b'e' | b'i' | b'o' | b'u') => "an",
        _ => "a",
    }
}

/// A rate as a person would write it: `0.01`, and `1e-30` rather than thirty digits (a
/// float's `Display` never uses an exponent, so 1e-300 would print 300 of them).
struct Rate(f64);

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let x = self.0;
        if x != 0.0 && x.is_finite() && !(1e-6..1e15).contains(&x.abs()) {
            write!(f, "{x:e}")
        } else {
            write!(f, "{x}")
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Self {
        // A short read is a property of the data, not of the device: name it as such.
        if e.kind() == io::ErrorKind::UnexpectedEof {
            Error::Truncated
        } else {
            Error::Io(e)
        }
    }
}

/// A parameter's name as an error message says it: `fp_rate` is "false-positive rate"
/// everywhere ([`Error::InvalidFpRate`] says it so), other names as the API spells them.
fn in_words(name: &str) -> &str {
    match name {
        "fp_rate" => "false-positive rate",
        other => other,
    }
}

impl Error {
    /// [`Error::InvalidParameter`] for a rate strictly between 0 and 1 that a kind cannot
    /// deliver (its fingerprints or result bits are too few): `expected` says what it can.
    pub(crate) fn unreachable_fp_rate(fp_rate: f64, expected: &'static str) -> Self {
        Error::InvalidParameter {
            name: "fp_rate",
            value: Rate(fp_rate).to_string(),
            expected,
        }
    }

    pub(crate) fn corrupt(reason: impl Into<String>) -> Self {
        Error::Corrupt {
            reason: reason.into(),
        }
    }

    /// `Ok` if a parameter of two filters to be combined is the same, else
    /// [`Error::Incompatible`] naming it.
    pub(crate) fn check_same<T: PartialEq + fmt::Display>(
        parameter: &'static str,
        left: T,
        right: T,
    ) -> Result<()> {
        if left == right {
            Ok(())
        } else {
            Err(Error::Incompatible {
                parameter,
                left: left.to_string(),
                right: right.to_string(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_print_short() {
        let message = |fp_rate| Error::InvalidFpRate { fp_rate }.to_string();
        assert!(message(1.5).starts_with("invalid false-positive rate 1.5:"));
        assert!(message(-0.25).starts_with("invalid false-positive rate -0.25:"));
        assert!(message(1e300).starts_with("invalid false-positive rate 1e300:"));
        assert!(message(f64::NAN).starts_with("invalid false-positive rate NaN:"));
        // A rate in range that a kind cannot reach is worded the same way.
        for refused in [
            crate::RibbonFilter::build(["a"], 1e-10).unwrap_err(),
            crate::BinaryFuseFilter::build(["a"], 1e-7).unwrap_err(),
            crate::CuckooFilter::new(100, 1e-12).unwrap_err(),
        ] {
            let text = refused.to_string();
            assert!(
                text.starts_with("invalid false-positive rate 1e-"),
                "{text}"
            );
        }
        let small = Error::FpRateTooSmall {
            fp_rate: 1e-300,
            num_hashes: 997,
        }
        .to_string();
        assert!(
            small.starts_with("false-positive rate 1e-300 is too small"),
            "{small}"
        );
        assert!(small.len() < 200, "{small}");
        assert_eq!(Rate(0.00001).to_string(), "0.00001");
        assert_eq!(Rate(1e-7).to_string(), "1e-7");
    }

    #[test]
    fn eof_is_truncation() {
        let e: Error = io::Error::new(io::ErrorKind::UnexpectedEof, "eof").into();
        assert!(matches!(e, Error::Truncated));
        let e: Error = io::Error::new(io::ErrorKind::PermissionDenied, "no").into();
        assert!(matches!(e, Error::Io(_)));
    }

    #[test]
    fn messages_say_how_to_fix() {
        let msg = Error::InvalidFpRate { fp_rate: 2.0 }.to_string();
        assert!(msg.contains("between 0 and 1"), "{msg}");
        let msg = Error::Unsupported {
            kind: FilterKind::Aging,
            operation: "union",
        }
        .to_string();
        assert!(msg.starts_with("an aging filter does not"), "{msg}");
        let msg = Error::WrongKind {
            expected: FilterKind::Classic,
            found: FilterKind::Blocked.code(),
        }
        .to_string();
        assert!(msg.contains("blocked") && msg.contains("classic"), "{msg}");
        let msg = Error::UnsupportedVersion {
            found: 9,
            supported: 1,
        }
        .to_string();
        assert!(msg.contains("upgrade"), "{msg}");
    }
}
