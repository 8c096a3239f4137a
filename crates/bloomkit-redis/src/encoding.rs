//! How a filter is stored in an RDB file or a `DUMP` payload: the module's own encoding,
//! versioned.
//!
//! Redis tags every module value with its type's name and a 10-bit encoding version
//! (`encver`). RedisBloom's types have the same names and use versions 0 to 4; this module's
//! versions start at [`ENCODING_VERSION`] (1000), so that each can tell the other's values
//! apart from its own. Redis finds a module type by its name alone, so a RedisBloom RDB file
//! or `DUMP` payload reaches this module's loader with RedisBloom's version: it is imported
//! (`import.rs`, [`bloomkit::redisbloom`]), keeping RedisBloom's hashing, and saved again in
//! this module's encoding (kinds 10 and 11 of bloomkit's format).
//!
//! # Version 1000
//!
//! * an unsigned integer (Redis's RDB length encoding): the length `n` of the value's
//!   bloomkit encoding ([`Value::to_bytes`]: the filter's file format, `docs/FORMAT.md`,
//!   self-describing and checksummed; for a key still being restored by `LOADCHUNK`, the
//!   partial-dump form);
//! * then those `n` bytes as string buffers of at most [`CHUNK_BYTES`] each, in order.
//!
//! Writing streams the encoding through a [`ChunkWriter`], so a saved filter is never held
//! twice; reading appends chunks as they arrive (an `n` that the data does not back is
//! never allocated up front), then decodes the whole with bloomkit's reader, which checks
//! every field and the checksum. Anything wrong stops the load with a [`LoadError`] that the
//! log shows: never a partial value.

use std::fmt;
use std::io::{self, Write};

use bloomkit_commands::Value;

/// This build's (and the first) version of the encoding.
pub const ENCODING_VERSION: i32 = bloomkit::redisbloom::payload::BLOOMKIT_ENCVER as i32;

/// The largest string buffer a value is written in: small enough that saving a large filter
/// costs one more buffer of this size, not a copy of the filter.
pub const CHUNK_BYTES: usize = bloomkit::redisbloom::payload::BLOOMKIT_CHUNK_BYTES;

/// Why a stored value cannot be loaded. The message is for the server's log, where it stops
/// the load of an RDB file (or answers a `RESTORE`).
#[derive(Debug)]
pub enum LoadError {
    /// RedisBloom's own encoding of a type with the same name, which does not import.
    RedisBloom {
        /// The type's name.
        type_name: &'static str,
        /// The version found.
        version: i32,
        /// What the import found wrong.
        cause: bloomkit::Error,
    },
    /// A newer version of this module's encoding.
    Newer {
        /// The version found.
        version: i32,
        /// The newest version this build reads for the type.
        newest: i32,
    },
    /// The engine could not read what the value claims (a short or damaged file).
    Io,
    /// A chunk runs past the length the value declared, or an empty one.
    BadChunk {
        /// The length declared.
        declared: u64,
        /// Bytes received with the bad chunk.
        received: u64,
    },
    /// bloomkit's reader refused the bytes (damage, a checksum, an unknown kind).
    Decode(bloomkit::Error),
    /// A filter of the other family under this type (a cuckoo filter in `MBbloom--`).
    WrongFamily {
        /// The type being loaded.
        expected: &'static str,
        /// The type the decoded value belongs to.
        found: &'static str,
    },
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadError::RedisBloom {
                type_name,
                version,
                cause,
            } => write!(
                f,
                "this {type_name} value in RedisBloom's encoding (version {version}) does not \
                 import: {cause}"
            ),
            LoadError::Newer { version, newest } => write!(
                f,
                "this value was written by a newer bloomkit module (encoding version \
                 {version}; this one reads up to {newest}): upgrade the module"
            ),
            LoadError::Io => f.write_str("the data ends early or could not be read"),
            LoadError::BadChunk { declared, received } => write!(
                f,
                "the value declares {declared} bytes, and its chunks bring {received}: the \
                 data is damaged"
            ),
            LoadError::Decode(e) => write!(f, "the filter does not decode: {e}"),
            LoadError::WrongFamily { expected, found } => write!(
                f,
                "a {found} filter stored as a {expected} value: the data is damaged"
            ),
        }
    }
}

impl std::error::Error for LoadError {}

/// Whose encoding a stored value is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// This module's, at [`ENCODING_VERSION`].
    Own,
    /// RedisBloom's, at this version (below [`ENCODING_VERSION`]): imported.
    RedisBloom(u64),
}

/// Checks the version a value was stored with.
///
/// # Errors
///
/// [`LoadError::Newer`] above [`ENCODING_VERSION`].
pub fn check_version(version: i32) -> Result<Encoding, LoadError> {
    match version {
        ENCODING_VERSION => Ok(Encoding::Own),
        v if (0..ENCODING_VERSION).contains(&v) => Ok(Encoding::RedisBloom(v as u64)),
        v => Err(LoadError::Newer {
            version: v,
            newest: ENCODING_VERSION,
        }),
    }
}

/// A value's bytes, gathered chunk by chunk as a load reads them.
#[derive(Debug)]
pub struct Assembler {
    declared: u64,
    bytes: Vec<u8>,
}

impl Assembler {
    /// An assembler for a value that declares `declared` bytes. Nothing is allocated for
    /// them until they arrive.
    pub fn new(declared: u64) -> Assembler {
        Assembler {
            declared,
            bytes: Vec::new(),
        }
    }

    /// Whether every declared byte has arrived.
    pub fn is_complete(&self) -> bool {
        self.bytes.len() as u64 == self.declared
    }

    /// Appends the next chunk.
    ///
    /// # Errors
    ///
    /// [`LoadError::BadChunk`] for an empty chunk or one past the declared length.
    pub fn push(&mut self, chunk: &[u8]) -> Result<(), LoadError> {
        let received = self.bytes.len() as u64 + chunk.len() as u64;
        if chunk.is_empty() || received > self.declared {
            return Err(LoadError::BadChunk {
                declared: self.declared,
                received,
            });
        }
        self.bytes.extend_from_slice(chunk);
        Ok(())
    }

    /// The value, decoded and checked to belong under `type_name`.
    ///
    /// # Errors
    ///
    /// [`LoadError::BadChunk`] if bytes are missing, [`LoadError::Decode`] for what
    /// bloomkit's reader refuses, [`LoadError::WrongFamily`] for a value of the other type.
    pub fn finish(self, type_name: &'static str) -> Result<Value, LoadError> {
        if !self.is_complete() {
            return Err(LoadError::BadChunk {
                declared: self.declared,
                received: self.bytes.len() as u64,
            });
        }
        let value = Value::from_bytes(&self.bytes).map_err(LoadError::Decode)?;
        if value.type_name() != type_name {
            return Err(LoadError::WrongFamily {
                expected: type_name,
                found: value.type_name(),
            });
        }
        Ok(value)
    }
}

/// A writer that hands on what is written through it in chunks of [`CHUNK_BYTES`] (the
/// last one shorter): to `RedisModule_SaveStringBuffer` for an RDB file, to
/// `RedisModule_DigestAddStringBuffer` for `DEBUG DIGEST-VALUE`. The cut does not depend on
/// how the writes arrive, so equal values give equal chunks (and equal digests).
pub struct ChunkWriter<F: FnMut(&[u8])> {
    pending: Vec<u8>,
    sink: F,
}

impl<F: FnMut(&[u8])> ChunkWriter<F> {
    /// A writer handing chunks to `sink`.
    pub fn new(sink: F) -> Self {
        ChunkWriter {
            pending: Vec::new(),
            sink,
        }
    }

    /// Writes `value`'s encoding through the writer and hands on the last chunk.
    pub fn write_value(mut self, value: &Value) {
        // Neither the writer nor the sink fails.
        let _ = value.write_to(&mut self);
        self.finish();
    }

    /// Hands on what is still pending.
    pub fn finish(mut self) {
        if !self.pending.is_empty() {
            (self.sink)(&self.pending);
        }
    }
}

impl<F: FnMut(&[u8])> Write for ChunkWriter<F> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut rest = buf;
        while !rest.is_empty() {
            if self.pending.capacity() == 0 {
                self.pending.reserve_exact(CHUNK_BYTES);
            }
            let take = (CHUNK_BYTES - self.pending.len()).min(rest.len());
            self.pending.extend_from_slice(&rest[..take]);
            rest = &rest[take..];
            if self.pending.len() == CHUNK_BYTES {
                (self.sink)(&self.pending);
                self.pending.clear();
            }
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use bloomkit::{CuckooFilter, ScalableBloomFilter};

    use super::*;

    fn chunks_of(value: &Value) -> Vec<Vec<u8>> {
        let mut chunks = Vec::new();
        ChunkWriter::new(|c: &[u8]| chunks.push(c.to_vec())).write_value(value);
        chunks
    }

    fn bloom(capacity: u64) -> Value {
        let mut f = ScalableBloomFilter::new(capacity, 0.01).unwrap();
        for i in 0..1000u32 {
            f.insert(&i).unwrap();
        }
        Value::Bloom(f)
    }

    #[test]
    fn a_value_round_trips_in_chunks() {
        // 3 MiB and a little: four chunks, the last one short.
        let big = bloom(2_500_000);
        let chunks = chunks_of(&big);
        assert_eq!(chunks.len(), big.encoded_len().div_ceil(CHUNK_BYTES));
        assert!(chunks[..chunks.len() - 1]
            .iter()
            .all(|c| c.len() == CHUNK_BYTES));
        let mut cuckoo = CuckooFilter::new(1000, 0.01).unwrap();
        cuckoo.insert("a").unwrap();
        for value in [big, bloom(10), Value::Cuckoo(cuckoo)] {
            let mut assembler = Assembler::new(value.encoded_len() as u64);
            for chunk in chunks_of(&value) {
                assembler.push(&chunk).unwrap();
            }
            assert_eq!(assembler.finish(value.type_name()).unwrap(), value);
        }
    }

    #[test]
    fn damaged_values_are_refused_with_a_reason() {
        let value = bloom(100);
        let bytes = value.to_bytes();
        let declared = bytes.len() as u64;
        // Missing bytes.
        let mut short = Assembler::new(declared);
        short.push(&bytes[..10]).unwrap();
        assert!(matches!(
            short.finish("MBbloom--"),
            Err(LoadError::BadChunk { .. })
        ));
        // Too many, or an empty chunk.
        let mut long = Assembler::new(declared - 1);
        assert!(matches!(long.push(&bytes), Err(LoadError::BadChunk { .. })));
        assert!(matches!(
            Assembler::new(5).push(&[]),
            Err(LoadError::BadChunk { .. })
        ));
        // A flipped bit fails the checksum.
        let mut flipped = bytes.clone();
        flipped[bytes.len() / 2] ^= 1;
        let mut damaged = Assembler::new(declared);
        damaged.push(&flipped).unwrap();
        let e = damaged.finish("MBbloom--").unwrap_err();
        assert!(matches!(e, LoadError::Decode(_)), "{e}");
        // A Bloom filter where a cuckoo filter belongs.
        let mut other = Assembler::new(declared);
        other.push(&bytes).unwrap();
        let e = other.finish("MBbloomCF").unwrap_err();
        assert_eq!(
            e.to_string(),
            "a MBbloom-- filter stored as a MBbloomCF value: the data is damaged"
        );
    }

    #[test]
    fn redisbloom_versions_import_and_newer_ones_are_refused() {
        assert_eq!(check_version(ENCODING_VERSION).unwrap(), Encoding::Own);
        assert_eq!(check_version(4).unwrap(), Encoding::RedisBloom(4));
        let newer = check_version(1001).unwrap_err();
        assert!(newer.to_string().contains("upgrade the module"), "{newer}");
    }
}
