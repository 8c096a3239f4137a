//! The file format shared by every filter kind: header, versions, checksum.
//!
//! `docs/FORMAT.md` describes it byte by byte; in short, all integers little-endian:
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 8 | magic `89 42 4B 46 0D 0A 1A 0A` (`\x89BKF\r\n\x1a\n`) |
//! | 8 | 2 | format version (1) |
//! | 10 | 2 | filter kind ([`FilterKind::code`]) |
//! | 12 | 2 | hash algorithm: the [`KeyFeed`] code (2: XXH3-64 of [`crate::Key`]'s feed; 1: bloomkit 0.1's `Hash` feed) |
//! | 14 | 2 | flags, zero (reserved) |
//! | 16 | 8 | hash seed |
//! | 24 | 8 | item count |
//! | 32 | 4 | parameter length P (at most 1024) |
//! | 36 | P | kind-specific parameters |
//! | 36+P | 8 | payload length L |
//! | 44+P | L | payload |
//! | 44+P+L | 8 | checksum: XXH3-64, seed 0, of every byte before it |
//!
//! Reading is defensive: the header is checked field by field, the payload length must be the
//! one the parameters imply, and the payload is read in bounded chunks into storage that grows
//! only as data actually arrives. A header that claims 2^60 bits in a 100-byte file is an
//! error before anything is allocated, and a stream that claims more than it delivers fails
//! with [`Error::Truncated`] having allocated at most twice what it delivered.

use std::fmt;
use std::io::{self, Read, Write};

use xxhash_rust::xxh3::Xxh3Default;

use crate::bits::{Line, LineArray, LINE_WORDS};
use crate::error::{Error, Result};
use crate::key::{KeyFeed, KeyHasher};

/// The eight bytes every bloomkit filter file starts with.
///
/// Like PNG's, the magic catches the usual mangling: the high first byte fails a 7-bit
/// channel, `\r\n` fails a newline conversion, and `\x1a` stops a DOS `type`.
pub const MAGIC: [u8; 8] = *b"\x89BKF\r\n\x1a\n";

/// The newest format version this build writes and reads.
pub const FORMAT_VERSION: u16 = 1;

/// Parameters are a handful of integers; anything longer is corrupt, and the bound keeps a
/// hostile header from making us allocate.
const MAX_PARAMS_LEN: u32 = 1024;

/// Words read per chunk of payload: 8 KiB, a whole number of 64-byte lines.
const CHUNK_WORDS: usize = 1024;

/// Which kind of filter a file holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FilterKind {
    /// [`crate::BloomFilter`]: the classic layout.
    Classic,
    /// [`crate::BlockedBloomFilter`], and [`crate::AtomicBloomFilter`], which has the same
    /// bits and is stored the same way.
    Blocked,
    /// A counting Bloom filter (4-bit counters; supports removal).
    Counting,
    /// A scalable Bloom filter (a chain of growing layers).
    Scalable,
    /// A cuckoo filter (fingerprints in buckets; supports removal and counts).
    Cuckoo,
    /// A ribbon filter (static, built once from all keys).
    Ribbon,
    /// An aging Bloom filter (generations that rotate out).
    Aging,
    /// A binary fuse filter (static, built once from all keys; the fastest queries).
    Fuse,
    /// [`crate::SectorBloomFilter`]: the sectored layout (the same bits in each word of a
    /// line; the fewest instructions per insert).
    Sector,
    /// [`crate::redisbloom::RedisBloomChain`]: RedisBloom's scalable Bloom filter, with its
    /// hashing (hash algorithm 3).
    RedisBloomChain,
    /// [`crate::redisbloom::RedisCuckooFilter`]: RedisBloom's cuckoo filter, with its hashing
    /// (hash algorithm 3).
    RedisCuckoo,
}

impl FilterKind {
    /// The kind's code in the file header.
    pub fn code(self) -> u16 {
        match self {
            FilterKind::Classic => 1,
            FilterKind::Blocked => 2,
            FilterKind::Counting => 3,
            FilterKind::Scalable => 4,
            FilterKind::Cuckoo => 5,
            FilterKind::Ribbon => 6,
            FilterKind::Aging => 7,
            FilterKind::Fuse => 8,
            FilterKind::Sector => 9,
            FilterKind::RedisBloomChain => 10,
            FilterKind::RedisCuckoo => 11,
        }
    }

    /// The kind with this header code, if there is one.
    pub fn from_code(code: u16) -> Option<Self> {
        match code {
            1 => Some(FilterKind::Classic),
            2 => Some(FilterKind::Blocked),
            3 => Some(FilterKind::Counting),
            4 => Some(FilterKind::Scalable),
            5 => Some(FilterKind::Cuckoo),
            6 => Some(FilterKind::Ribbon),
            7 => Some(FilterKind::Aging),
            8 => Some(FilterKind::Fuse),
            9 => Some(FilterKind::Sector),
            10 => Some(FilterKind::RedisBloomChain),
            11 => Some(FilterKind::RedisCuckoo),
            _ => None,
        }
    }

    /// The kind's lower-case name, as the CLI spells it.
    pub fn name(self) -> &'static str {
        match self {
            FilterKind::Classic => "classic",
            FilterKind::Blocked => "blocked",
            FilterKind::Counting => "counting",
            FilterKind::Scalable => "scalable",
            FilterKind::Cuckoo => "cuckoo",
            FilterKind::Ribbon => "ribbon",
            FilterKind::Aging => "aging",
            FilterKind::Fuse => "fuse",
            FilterKind::Sector => "sector",
            FilterKind::RedisBloomChain => "redisbloom-bf",
            FilterKind::RedisCuckoo => "redisbloom-cf",
        }
    }
}

impl fmt::Display for FilterKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The decoded fixed part of a file, before the payload.
#[derive(Debug)]
pub(crate) struct Header {
    pub(crate) kind: u16,
    /// The seed and the key feed (the hash algorithm field).
    pub(crate) hasher: KeyHasher,
    pub(crate) item_count: u64,
    pub(crate) params: Vec<u8>,
    pub(crate) payload_len: u64,
}

impl Header {
    /// A reader over the kind-specific parameters.
    pub(crate) fn params(&self) -> Params<'_> {
        Params { rest: &self.params }
    }

    /// Fails unless the payload length is `expected` bytes.
    pub(crate) fn expect_payload_len(&self, expected: u64) -> Result<()> {
        if self.payload_len == expected {
            Ok(())
        } else {
            Err(Error::corrupt(format!(
                "the header declares a payload of {} bytes but the parameters need {expected}",
                self.payload_len
            )))
        }
    }
}

/// Reads kind-specific parameters in order.
pub(crate) struct Params<'a> {
    rest: &'a [u8],
}

impl Params<'_> {
    fn take<const N: usize>(&mut self) -> Result<[u8; N]> {
        if self.rest.len() < N {
            return Err(Error::corrupt("the filter parameters are too short"));
        }
        let (head, rest) = self.rest.split_at(N);
        self.rest = rest;
        let mut out = [0; N];
        out.copy_from_slice(head);
        Ok(out)
    }

    pub(crate) fn u64(&mut self) -> Result<u64> {
        self.take().map(u64::from_le_bytes)
    }

    pub(crate) fn u32(&mut self) -> Result<u32> {
        self.take().map(u32::from_le_bytes)
    }

    #[allow(dead_code)] // for the kinds that store small fields
    pub(crate) fn u16(&mut self) -> Result<u16> {
        self.take().map(u16::from_le_bytes)
    }

    #[allow(dead_code)]
    pub(crate) fn u8(&mut self) -> Result<u8> {
        self.take().map(u8::from_le_bytes)
    }

    /// An `f64` stored as its IEEE-754 bits, little-endian.
    #[allow(dead_code)]
    pub(crate) fn f64(&mut self) -> Result<f64> {
        self.take().map(f64::from_le_bytes)
    }

    /// Whether every parameter has been read: for a kind whose block may end early (its
    /// later fields absent in older files).
    pub(crate) fn is_empty(&self) -> bool {
        self.rest.is_empty()
    }

    /// A probe derivation field at the end of the block ([`push_derivation`]): absent,
    /// `first` (code 1); present, a code `from_code` knows other than 1, which is never
    /// written with the field (a file that says 1 was not written by bloomkit). `known` lists
    /// the codes this build reads, for the error.
    pub(crate) fn derivation<T>(
        &mut self,
        first: T,
        from_code: impl Fn(u32) -> Option<T>,
        known: &str,
    ) -> Result<T> {
        if self.is_empty() {
            return Ok(first);
        }
        let code = self.u32()?;
        match from_code(code) {
            Some(probes) if code != 1 => Ok(probes),
            _ => Err(Error::corrupt(format!(
                "the header's probe derivation {code} is not one this build knows ({known}); \
                 a newer bloomkit may read it"
            ))),
        }
    }

    /// Fails if parameters are left over: a longer list is a format this build does not know.
    pub(crate) fn finish(self) -> Result<()> {
        if self.rest.is_empty() {
            Ok(())
        } else {
            Err(Error::corrupt("the filter parameters are too long"))
        }
    }
}

/// A run of a payload's words ([`Persist::payload_runs`]): words where the filter keeps
/// them, or one word made for the payload (a count, a layer's descriptor).
pub(crate) enum Run<'a> {
    Words(&'a [u64]),
    Word(u64),
}

/// What a filter type provides to be stored in the shared format.
pub(crate) trait Persist: Sized {
    /// The kind written in the header and required when reading.
    const KIND: FilterKind;
    fn key_hasher(&self) -> KeyHasher;
    /// The header's hash algorithm field: the key feed's code, but for the kinds that hash
    /// as RedisBloom does (code 3, with the seed field 0).
    fn hash_algorithm(&self) -> u16 {
        self.key_hasher().feed().code()
    }
    fn item_count(&self) -> u64;
    /// The kind-specific parameters, little-endian.
    fn params(&self) -> Vec<u8>;
    /// The payload as 64-bit words (written little-endian).
    fn payload_words(&self) -> impl Iterator<Item = u64> + '_;
    /// The same payload as runs, which the writer turns into bytes a run at a time: a kind
    /// whose words lie in slices hands those over whole.
    fn payload_runs(&self) -> impl Iterator<Item = Run<'_>> + '_ {
        self.payload_words().map(Run::Word)
    }
    fn payload_words_len(&self) -> u64;
    /// Builds the filter from a header already checked to be of `KIND`, reading the payload
    /// from `payload`.
    fn decode<R: Read>(header: &Header, payload: &mut FormatReader<R>) -> Result<Self>;
}

/// The file-format methods every filter type has (`to_bytes`, `encoded_len`, `write_to`,
/// `from_bytes`, `read_from`), and with the `serde` feature its `Serialize` and
/// `Deserialize` (the same bytes, as one byte string), written once for any type that
/// implements [`Persist`].
///
/// `$what` names the type in the docs ("classic filter"). Each bracket adds documentation
/// of the kind's own (examples, errors only it has) after the shared text of its method.
macro_rules! format_methods {
    (
        $ty:ty, $what:literal,
        to_bytes: [$(#[$to_bytes:meta])*],
        write_to: [$(#[$write_to:meta])*],
        from_bytes: [$(#[$from_bytes:meta])*],
        read_from: [$(#[$read_from:meta])*] $(,)?
    ) => {
        impl $ty {
            #[doc = concat!("The ", $what, " in bloomkit's file format (`docs/FORMAT.md`): \
                versioned, little-endian and checksummed, read back by \
                [`from_bytes`](Self::from_bytes) on any platform and by \
                [`AnyFilter::from_bytes`](crate::AnyFilter::from_bytes) whatever the kind.")]
            $(#[$to_bytes])*
            pub fn to_bytes(&self) -> Vec<u8> {
                $crate::format::to_bytes(self)
            }

            /// The length of [`to_bytes`](Self::to_bytes), computed without encoding: for a
            /// container that records a filter's length before streaming it with
            /// [`write_to`](Self::write_to) (a server's snapshot, which need not hold a
            /// second copy of each filter in memory).
            pub fn encoded_len(&self) -> usize {
                $crate::format::encoded_len(self)
            }

            #[doc = concat!("Writes the ", $what, " in bloomkit's file format, the bytes of \
                [`to_bytes`](Self::to_bytes), without a copy in memory. Wrap a file in a \
                `BufWriter`.")]
            ///
            /// # Errors
            ///
            /// [`Error::Io`](crate::Error::Io) from the writer.
            $(#[$write_to])*
            pub fn write_to<W: std::io::Write>(&self, writer: W) -> $crate::Result<()> {
                $crate::format::write_to(self, writer)
            }

            #[doc = concat!("Reads a ", $what, " written by [`to_bytes`](Self::to_bytes); \
                `bytes` must hold exactly one.")]
            ///
            /// # Errors
            ///
            #[doc = concat!("An error, never a panic, for anything but a valid ", $what, ": \
                [`Error::BadMagic`](crate::Error::BadMagic), \
                [`Error::Truncated`](crate::Error::Truncated), \
                [`Error::ChecksumMismatch`](crate::Error::ChecksumMismatch), \
                [`Error::WrongKind`](crate::Error::WrongKind), \
                [`Error::UnsupportedVersion`](crate::Error::UnsupportedVersion), \
                [`Error::UnknownHashAlgorithm`](crate::Error::UnknownHashAlgorithm), and \
                [`Error::Corrupt`](crate::Error::Corrupt) for fields outside their ranges \
                (each names what is wrong), [`Error::TrailingBytes`](crate::Error::TrailingBytes) \
                when more follows a whole filter (for a filter inside larger data, \
                [`peek_header`](crate::format::peek_header) gives its length). Nothing is \
                allocated beyond what `bytes` can hold.")]
            $(#[$from_bytes])*
            pub fn from_bytes(bytes: &[u8]) -> $crate::Result<Self> {
                $crate::format::from_bytes(bytes)
            }

            #[doc = concat!("Reads one ", $what, " from `reader`, consuming exactly its \
                bytes, so filters can follow one another in a stream. Wrap a file in a \
                `BufReader`.")]
            ///
            /// # Errors
            ///
            /// As [`from_bytes`](Self::from_bytes), plus [`Error::Io`](crate::Error::Io)
            /// from the reader. Memory grows only as payload actually arrives, so a header
            /// that claims more than the stream delivers costs at most twice what arrived.
            $(#[$read_from])*
            pub fn read_from<R: std::io::Read>(reader: R) -> $crate::Result<Self> {
                $crate::format::read_from(reader)
            }
        }

        #[cfg(feature = "serde")]
        impl ::serde::Serialize for $ty {
            /// The filter's file format as one byte string: the bytes of
            /// [`to_bytes`](Self::to_bytes).
            fn serialize<S: ::serde::Serializer>(
                &self,
                serializer: S,
            ) -> ::core::result::Result<S::Ok, S::Error> {
                serializer.serialize_bytes(&self.to_bytes())
            }
        }

        #[cfg(feature = "serde")]
        impl<'de> ::serde::Deserialize<'de> for $ty {
            /// Reads the byte string with [`from_bytes`](Self::from_bytes), so every check of
            /// the format applies; its error is the deserializer's custom error.
            fn deserialize<D: ::serde::Deserializer<'de>>(
                deserializer: D,
            ) -> ::core::result::Result<Self, D::Error> {
                $crate::serde_format::deserialize(deserializer, Self::from_bytes)
            }
        }
    };
}
pub(crate) use format_methods;

/// A writer that feeds everything it writes to the checksum.
struct ChecksumWriter<W> {
    inner: W,
    checksum: Xxh3Default,
}

impl<W: Write> ChecksumWriter<W> {
    fn put(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.checksum.update(bytes);
        self.inner.write_all(bytes)
    }
}

/// Writes `filter` in the shared format.
pub(crate) fn write_to<F: Persist, W: Write>(filter: &F, writer: W) -> Result<()> {
    let params = filter.params();
    debug_assert!(params.len() as u32 <= MAX_PARAMS_LEN);
    let mut w = ChecksumWriter {
        inner: writer,
        checksum: Xxh3Default::new(),
    };
    let mut head = Vec::with_capacity(44 + params.len());
    head.extend_from_slice(&MAGIC);
    head.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    head.extend_from_slice(&F::KIND.code().to_le_bytes());
    let hasher = filter.key_hasher();
    head.extend_from_slice(&filter.hash_algorithm().to_le_bytes());
    head.extend_from_slice(&0u16.to_le_bytes());
    head.extend_from_slice(&hasher.seed().to_le_bytes());
    head.extend_from_slice(&filter.item_count().to_le_bytes());
    head.extend_from_slice(&(params.len() as u32).to_le_bytes());
    head.extend_from_slice(&params);
    head.extend_from_slice(&(filter.payload_words_len() * 8).to_le_bytes());
    w.put(&head)?;
    // The payload by runs: a kind's words where they lie go out a chunk at a time, turned
    // into bytes by a loop the compiler vectorizes. (Word by word, through the chained and
    // flattened iterators of a layered filter, the payload cost about 80 instructions a
    // word: a Redis module's save of a 60 MB filter took 2.4x RedisBloom's instructions.)
    let mut bytes = vec![0u8; CHUNK_WORDS * 8];
    let mut put = |w: &mut ChecksumWriter<W>, words: &[u64]| -> io::Result<()> {
        for chunk in words.chunks(CHUNK_WORDS) {
            for (out, word) in bytes.chunks_exact_mut(8).zip(chunk) {
                out.copy_from_slice(&word.to_le_bytes());
            }
            w.put(&bytes[..chunk.len() * 8])?;
        }
        Ok(())
    };
    let mut single = Vec::with_capacity(CHUNK_WORDS);
    for run in filter.payload_runs() {
        match run {
            Run::Word(word) => {
                single.push(word);
                if single.len() == CHUNK_WORDS {
                    put(&mut w, &single)?;
                    single.clear();
                }
            }
            Run::Words(words) => {
                put(&mut w, &single)?;
                single.clear();
                put(&mut w, words)?;
            }
        }
    }
    put(&mut w, &single)?;
    let checksum = w.checksum.digest();
    w.inner.write_all(&checksum.to_le_bytes())?;
    w.inner.flush()?;
    Ok(())
}

/// The size in bytes of `filter` in the shared format.
pub(crate) fn encoded_len<F: Persist>(filter: &F) -> usize {
    44 + filter.params().len() + filter.payload_words_len() as usize * 8 + 8
}

/// `filter` in the shared format, as a vector of bytes.
pub(crate) fn to_bytes<F: Persist>(filter: &F) -> Vec<u8> {
    let mut out = Vec::with_capacity(encoded_len(filter));
    // Writing to a Vec cannot fail.
    let _ = write_to(filter, &mut out);
    out
}

/// What the fixed header at the start of an encoded filter says about the whole encoding,
/// as [`peek_header`] reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct HeaderInfo {
    /// The kind of filter encoded.
    pub kind: FilterKind,
    /// Bytes from the start up to the payload: the magic, the fixed fields, the parameters
    /// and the payload length (44 + the parameter length).
    pub header_len: usize,
    /// Bytes of the whole encoding: header, payload and checksum.
    pub encoded_len: u64,
    /// The item count the header declares.
    pub item_count: u64,
}

/// Reads the header at the start of an encoded filter without reading (or needing) the
/// rest: its kind, where the payload starts and how long the whole encoding is. `Ok(None)`
/// means `prefix` is too short to tell (and, as far as it goes, looks like a filter).
///
/// For receiving a filter in pieces (a server's `BF.LOADCHUNK`): the total length says how
/// much to expect and lets a memory limit refuse it before any of it is stored. The
/// header's fields are checked as the readers check them; the payload and the checksum are
/// checked only when the whole encoding is read with a `from_bytes`.
///
/// # Errors
///
/// [`Error::BadMagic`], [`Error::UnsupportedVersion`], [`Error::UnknownHashAlgorithm`],
/// [`Error::UnknownKind`], and [`Error::Corrupt`] for reserved flags, an oversized
/// parameter block, or a length that overflows.
///
/// # Examples
///
/// ```
/// use bloomkit::{format, FilterKind, ScalableBloomFilter};
/// let bytes = ScalableBloomFilter::new(1000, 0.01)?.to_bytes();
/// let info = format::peek_header(&bytes[..100])?.unwrap();
/// assert_eq!(info.kind, FilterKind::Scalable);
/// assert_eq!(info.encoded_len, bytes.len() as u64);
/// assert!(format::peek_header(&bytes[..info.header_len])?.is_some());
/// assert!(format::peek_header(&bytes[..info.header_len - 1])?.is_none());
/// assert!(format::peek_header(b"not a filter").is_err());
/// # Ok::<(), bloomkit::Error>(())
/// ```
pub fn peek_header(prefix: &[u8]) -> Result<Option<HeaderInfo>> {
    let magic_len = prefix.len().min(MAGIC.len());
    if prefix[..magic_len] != MAGIC[..magic_len] {
        return Err(Error::BadMagic);
    }
    // The parameter length sits at offset 32, and says where the payload length ends.
    let Some(params_len) = prefix.get(32..36) else {
        return Ok(None);
    };
    let params_len =
        u32::from_le_bytes([params_len[0], params_len[1], params_len[2], params_len[3]]);
    if params_len > MAX_PARAMS_LEN {
        return Err(Error::corrupt(format!(
            "the header declares {params_len} bytes of parameters (at most {MAX_PARAMS_LEN} \
             are valid)"
        )));
    }
    let header_len = 44 + params_len as usize;
    let Some(head) = prefix.get(..header_len) else {
        return Ok(None);
    };
    let header = FormatReader::new(head, None).header()?;
    let kind =
        FilterKind::from_code(header.kind).ok_or(Error::UnknownKind { found: header.kind })?;
    let encoded_len = header
        .payload_len
        .checked_add(header_len as u64 + 8)
        .ok_or_else(|| Error::corrupt("the header's payload length overflows"))?;
    Ok(Some(HeaderInfo {
        kind,
        header_len,
        encoded_len,
        item_count: header.item_count,
    }))
}

/// A reader of the shared format that checks as it goes and checksums what it reads.
pub(crate) struct FormatReader<R> {
    inner: R,
    checksum: Xxh3Default,
    /// Bytes the source still holds, when that is known (a slice); lets an impossible
    /// payload length fail before anything is read or allocated.
    remaining: Option<u64>,
}

impl<R: Read> FormatReader<R> {
    pub(crate) fn new(inner: R, remaining: Option<u64>) -> Self {
        FormatReader {
            inner,
            checksum: Xxh3Default::new(),
            remaining,
        }
    }

    fn read_exact(&mut self, buf: &mut [u8]) -> Result<()> {
        self.inner.read_exact(buf)?;
        self.checksum.update(buf);
        if let Some(r) = self.remaining.as_mut() {
            *r = r.saturating_sub(buf.len() as u64);
        }
        Ok(())
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        let mut buf = [0; N];
        self.read_exact(&mut buf)?;
        Ok(buf)
    }

    /// Reads and checks the header, up to the start of the payload.
    pub(crate) fn header(&mut self) -> Result<Header> {
        // Read the magic on its own, so that an empty or foreign file says "not a filter"
        // rather than "truncated".
        let mut magic = [0u8; 8];
        let mut got = 0;
        while got < magic.len() {
            match self.inner.read(&mut magic[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e.into()),
            }
        }
        if magic[..got] != MAGIC[..got] || got == 0 {
            return Err(Error::BadMagic);
        }
        if got < magic.len() {
            return Err(Error::Truncated);
        }
        self.checksum.update(&magic);
        if let Some(r) = self.remaining.as_mut() {
            *r = r.saturating_sub(8);
        }

        let version = u16::from_le_bytes(self.array()?);
        if version == 0 || version > FORMAT_VERSION {
            return Err(Error::UnsupportedVersion {
                found: version,
                supported: FORMAT_VERSION,
            });
        }
        let kind = u16::from_le_bytes(self.array()?);
        let hash_algorithm = u16::from_le_bytes(self.array()?);
        let feed = feed_of(kind, hash_algorithm)?;
        let flags = u16::from_le_bytes(self.array()?);
        if flags != 0 {
            return Err(Error::corrupt(format!(
                "reserved header flags are set ({flags:#06x})"
            )));
        }
        let seed = u64::from_le_bytes(self.array()?);
        let item_count = u64::from_le_bytes(self.array()?);
        let params_len = u32::from_le_bytes(self.array()?);
        if params_len > MAX_PARAMS_LEN {
            return Err(Error::corrupt(format!(
                "the header declares {params_len} bytes of parameters (at most \
                 {MAX_PARAMS_LEN} are valid)"
            )));
        }
        let mut params = vec![0; params_len as usize];
        self.read_exact(&mut params)?;
        let payload_len = u64::from_le_bytes(self.array()?);
        if let Some(remaining) = self.remaining {
            // The payload and the checksum after it must both be there.
            if payload_len.saturating_add(8) > remaining {
                return Err(Error::Truncated);
            }
        }
        Ok(Header {
            kind,
            hasher: KeyHasher::with_feed(seed, feed),
            item_count,
            params,
            payload_len,
        })
    }

    /// Reads `num_words` little-endian words of payload, handing them to `sink` in chunks of
    /// at most 1024 words (whole 64-byte lines).
    pub(crate) fn read_words(
        &mut self,
        num_words: u64,
        mut sink: impl FnMut(&[u64]) -> Result<()>,
    ) -> Result<()> {
        let mut bytes = vec![0u8; CHUNK_WORDS * 8];
        let mut words = Vec::with_capacity(CHUNK_WORDS);
        let mut left = num_words;
        while left > 0 {
            let n = left.min(CHUNK_WORDS as u64) as usize;
            let chunk = &mut bytes[..n * 8];
            self.inner.read_exact(chunk)?;
            self.checksum.update(chunk);
            words.clear();
            words.extend(
                chunk
                    .chunks_exact(8)
                    .map(|b| u64::from_le_bytes(b.try_into().expect("8-byte chunk"))),
            );
            sink(&words)?;
            left -= n as u64;
        }
        if let Some(r) = self.remaining.as_mut() {
            *r = r.saturating_sub(num_words * 8);
        }
        Ok(())
    }

    /// Reads `num_words` words into a vector that grows only as they arrive (see
    /// [`grow_toward`]): a length the input merely claims is never allocated up front.
    pub(crate) fn read_word_vec(&mut self, num_words: u64) -> Result<Vec<u64>> {
        let mut words: Vec<u64> = Vec::new();
        self.read_words(num_words, |chunk| {
            grow_toward(&mut words, chunk.len(), num_words)?;
            words.extend_from_slice(chunk);
            Ok(())
        })?;
        Ok(words)
    }

    /// Reads `num_lines` 512-bit lines (8 words each) into a line array that grows only as
    /// they arrive, as [`read_word_vec`](Self::read_word_vec) does for words. Chunks hold
    /// whole lines: each call starts on a line boundary and chunks are 1024 words.
    pub(crate) fn read_line_array(&mut self, num_lines: u64) -> Result<LineArray> {
        let mut lines: Vec<Line> = Vec::new();
        self.read_words(num_lines * LINE_WORDS as u64, |chunk| {
            grow_toward(&mut lines, chunk.len() / LINE_WORDS, num_lines)?;
            lines.extend(chunk.chunks_exact(LINE_WORDS).map(|w| {
                let mut line = Line::default();
                line.0.copy_from_slice(w);
                line
            }));
            Ok(())
        })?;
        Ok(LineArray::from_lines(lines))
    }

    /// Reads the checksum and compares it with what was read; returns how many bytes the
    /// source still holds, when known.
    pub(crate) fn finish(mut self) -> Result<Option<u64>> {
        let computed = self.checksum.digest();
        let mut stored = [0u8; 8];
        self.inner.read_exact(&mut stored)?;
        let stored = u64::from_le_bytes(stored);
        if stored != computed {
            return Err(Error::ChecksumMismatch { stored, computed });
        }
        Ok(self.remaining.map(|r| r.saturating_sub(8)))
    }
}

/// Reads one filter of type `F` from `reader`, consuming exactly its bytes.
pub(crate) fn read_from<F: Persist, R: Read>(reader: R) -> Result<F> {
    let mut r = FormatReader::new(reader, None);
    let header = r.header()?;
    let filter = decode_checked::<F, R>(&header, &mut r)?;
    r.finish()?;
    Ok(filter)
}

/// The key feed a header's hash algorithm field names for its kind. RedisBloom's hashing
/// (code 3) belongs to the RedisBloom kinds and they to it: any other pairing is refused,
/// so no kind ever probes with a hash it was not built with.
fn feed_of(kind: u16, hash_algorithm: u16) -> Result<KeyFeed> {
    let redisbloom_kind = matches!(
        FilterKind::from_code(kind),
        Some(FilterKind::RedisBloomChain | FilterKind::RedisCuckoo)
    );
    let unknown = Error::UnknownHashAlgorithm {
        found: hash_algorithm,
    };
    match (redisbloom_kind, hash_algorithm) {
        // The RedisBloom kinds hash by their own rules; the feed is not consulted.
        (true, crate::redisbloom::REDISBLOOM_HASH_ALGORITHM) => Ok(KeyFeed::Key),
        (true, _) => Err(unknown),
        (false, code) => KeyFeed::from_code(code).ok_or(unknown),
    }
}

/// Reads a filter of type `F` from `bytes`, which must hold exactly one filter.
pub(crate) fn from_bytes<F: Persist>(bytes: &[u8]) -> Result<F> {
    let mut r = FormatReader::new(bytes, Some(bytes.len() as u64));
    let header = r.header()?;
    let filter = decode_checked::<F, &[u8]>(&header, &mut r)?;
    expect_end(r.finish()?)?;
    Ok(filter)
}

/// Fails if bytes follow the filter: a from_bytes caller handed us something else too.
pub(crate) fn expect_end(remaining: Option<u64>) -> Result<()> {
    match remaining {
        Some(extra) if extra > 0 => Err(Error::TrailingBytes { extra }),
        _ => Ok(()),
    }
}

fn decode_checked<F: Persist, R: Read>(header: &Header, r: &mut FormatReader<R>) -> Result<F> {
    if header.kind != F::KIND.code() {
        return Err(Error::WrongKind {
            expected: F::KIND,
            found: header.kind,
        });
    }
    F::decode(header, r)
}

/// The parameters of the Bloom kinds: number of bits (u64), then number of hashes (u32).
pub(crate) fn encode_bits_and_hashes(num_bits: u64, num_hashes: u32) -> Vec<u8> {
    let mut params = Vec::with_capacity(12);
    params.extend_from_slice(&num_bits.to_le_bytes());
    params.extend_from_slice(&num_hashes.to_le_bytes());
    params
}

/// Decodes and checks [`encode_bits_and_hashes`]'s parameters: the bits a non-zero multiple
/// of `granularity`, the hashes in range, the payload exactly the bits.
pub(crate) fn decode_bits_and_hashes(header: &Header, granularity: u64) -> Result<(u64, u32)> {
    let mut params = header.params();
    let num_bits = params.u64()?;
    let num_hashes = params.u32()?;
    params.finish()?;
    check_bits_and_hashes(header, num_bits, num_hashes, granularity)?;
    Ok((num_bits, num_hashes))
}

/// The checks of [`decode_bits_and_hashes`] once its fields are read.
fn check_bits_and_hashes(
    header: &Header,
    num_bits: u64,
    num_hashes: u32,
    granularity: u64,
) -> Result<()> {
    if num_bits == 0 || !num_bits.is_multiple_of(granularity) {
        return Err(Error::corrupt(format!(
            "the header's number of bits {num_bits} is not a positive multiple of {granularity}"
        )));
    }
    if crate::sizing::check_num_hashes(num_hashes).is_err() {
        return Err(Error::corrupt(format!(
            "the header's number of hashes {num_hashes} is out of range"
        )));
    }
    header.expect_payload_len(num_bits / 8)
}

/// A classic, counting, blocked or atomic filter's parameters: [`encode_bits_and_hashes`]'s
/// 12 bytes (`num_positions` bits or counters), then the probe derivation field
/// ([`push_derivation`]): 16 bytes for any derivation but the first.
pub(crate) fn encode_derived_params(num_positions: u64, num_hashes: u32, code: u32) -> Vec<u8> {
    let mut params = encode_bits_and_hashes(num_positions, num_hashes);
    push_derivation(&mut params, code);
    params
}

/// Appends a probe derivation field with `code` to a parameter block, unless `code` is 1:
/// the first derivation of every kind that has one is written without the field, as every
/// file before the second was, so those files write back byte for byte; a reader that knows
/// only the shorter block refuses the longer one ("too long") instead of probing a new filter
/// the old way. [`Params::derivation`] reads it back.
pub(crate) fn push_derivation(params: &mut Vec<u8>, code: u32) {
    if code != 1 {
        params.extend_from_slice(&code.to_le_bytes());
    }
}

/// Reads [`encode_derived_params`]'s fields: `m`, `k`, and the derivation (`first` when
/// absent, else the one `from_code` names), refusing anything after them.
fn decode_derived_params<T>(
    header: &Header,
    first: T,
    from_code: impl Fn(u32) -> Option<T>,
) -> Result<(u64, u32, T)> {
    let mut params = header.params();
    let num_positions = params.u64()?;
    let num_hashes = params.u32()?;
    let probes = params.derivation(first, from_code, "2")?;
    params.finish()?;
    Ok((num_positions, num_hashes, probes))
}

/// Decodes and checks a blocked or atomic filter's parameters ([`encode_derived_params`]):
/// the bits whole lines of 512, the hashes in range, the payload exactly the bits, the
/// derivation one this build knows.
pub(crate) fn decode_blocked_params(header: &Header) -> Result<(u64, u32, crate::BlockedProbes)> {
    let (num_bits, num_hashes, probes) = decode_derived_params(
        header,
        crate::BlockedProbes::OneSeed,
        crate::BlockedProbes::from_code,
    )?;
    check_bits_and_hashes(header, num_bits, num_hashes, crate::sizing::LINE_BITS)?;
    Ok((num_bits, num_hashes, probes))
}

/// Decodes and checks a classic or counting filter's parameters ([`encode_derived_params`]):
/// `m` (of `positions`, "bits" or "counters") a positive multiple of 64, `k` in range, the
/// derivation one this build knows. The caller checks the payload's length, which depends on
/// the kind.
pub(crate) fn decode_classic_params(
    header: &Header,
    positions: &str,
) -> Result<(u64, u32, crate::ClassicProbes)> {
    let (num_positions, num_hashes, probes) = decode_derived_params(
        header,
        crate::ClassicProbes::DoubleHashing,
        crate::ClassicProbes::from_code,
    )?;
    if num_positions == 0 || num_positions % 64 != 0 {
        return Err(Error::corrupt(format!(
            "the header's number of {positions} {num_positions} is not a positive multiple of 64"
        )));
    }
    if crate::sizing::check_num_hashes(num_hashes).is_err() {
        return Err(Error::corrupt(format!(
            "the header's number of hashes {num_hashes} is out of range"
        )));
    }
    Ok((num_positions, num_hashes, probes))
}

/// The bits of a classic or blocked filter's encoding, borrowed where they lie: what the
/// views (`BloomFilterRef`, `BlockedBloomFilterRef`) read in place.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BorrowedBits<'a> {
    pub(crate) hasher: KeyHasher,
    pub(crate) item_count: u64,
    pub(crate) num_bits: u64,
    pub(crate) num_hashes: u32,
    /// A classic filter's probe derivation (the first for a blocked filter).
    pub(crate) probes: crate::ClassicProbes,
    /// A blocked filter's probe derivation (the first for a classic filter).
    pub(crate) blocked_probes: crate::BlockedProbes,
    /// The payload: `num_bits / 8` bytes, the words little-endian.
    pub(crate) payload: &'a [u8],
}

/// Checks that `bytes` hold exactly one classic or blocked filter (`kind`, with
/// [`encode_derived_params`]'s parameters), and borrows its payload; with `verify`, also
/// that its checksum matches. Every header check the owned readers make is made here, in the
/// same order, so a view refuses exactly what `from_bytes` refuses, with the same
/// error, and nothing is read or allocated beyond the header.
pub(crate) fn borrow_bits(
    bytes: &[u8],
    kind: FilterKind,
    verify: bool,
) -> Result<BorrowedBits<'_>> {
    let mut r = FormatReader::new(bytes, Some(bytes.len() as u64));
    let header = r.header()?;
    if header.kind != kind.code() {
        return Err(Error::WrongKind {
            expected: kind,
            found: header.kind,
        });
    }
    let (num_bits, num_hashes, probes, blocked_probes) = if kind == FilterKind::Classic {
        let (num_bits, num_hashes, probes) = decode_classic_params(&header, "bits")?;
        header.expect_payload_len(num_bits / 8)?;
        (num_bits, num_hashes, probes, crate::BlockedProbes::OneSeed)
    } else {
        let (num_bits, num_hashes, probes) = decode_blocked_params(&header)?;
        (
            num_bits,
            num_hashes,
            crate::ClassicProbes::DoubleHashing,
            probes,
        )
    };
    // The header has checked that the payload and the checksum fit in what is left.
    let start = 44 + header.params.len();
    let end = start as u64 + header.payload_len;
    let total = end + 8;
    if (bytes.len() as u64) < total {
        return Err(Error::Truncated);
    }
    let end = end as usize;
    if verify {
        let mut stored = [0u8; 8];
        stored.copy_from_slice(&bytes[end..end + 8]);
        let stored = u64::from_le_bytes(stored);
        let computed = xxhash_rust::xxh3::xxh3_64(&bytes[..end]);
        if stored != computed {
            return Err(Error::ChecksumMismatch { stored, computed });
        }
    }
    expect_end(Some(bytes.len() as u64 - total))?;
    Ok(BorrowedBits {
        hasher: header.hasher,
        item_count: header.item_count,
        num_bits,
        num_hashes,
        probes,
        blocked_probes,
        payload: &bytes[start..end],
    })
}

/// Grows `v` so that `additional` more elements fit, toward an expected final length of
/// `total`: doubling (so reading is linear), but never past `total` (so the final capacity is
/// exact and `memory_bytes` tells the truth), and only as data actually arrives.
pub(crate) fn grow_toward<T>(v: &mut Vec<T>, additional: usize, total: u64) -> Result<()> {
    let needed = v.len() + additional;
    if needed <= v.capacity() {
        return Ok(());
    }
    let total = usize::try_from(total).unwrap_or(usize::MAX).max(needed);
    let target = needed.max(v.capacity().saturating_mul(2)).min(total);
    v.try_reserve_exact(target - v.len())
        .map_err(|_| Error::OutOfMemory {
            bytes: (target * std::mem::size_of::<T>()) as u64,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every kind's payload by runs, as the writer takes it, is its payload word for word.
    #[test]
    fn payload_runs_are_the_payload_words() {
        fn check<F: Persist>(f: &F, what: &str) {
            let mut from_runs = Vec::new();
            for run in f.payload_runs() {
                match run {
                    Run::Words(words) => from_runs.extend_from_slice(words),
                    Run::Word(word) => from_runs.push(word),
                }
            }
            let words: Vec<u64> = f.payload_words().collect();
            assert_eq!(from_runs, words, "{what}");
            assert_eq!(words.len() as u64, f.payload_words_len(), "{what}");
        }
        let keys = 0..3_000u32;
        let mut classic = crate::BloomFilter::new(1_000, 0.01).unwrap();
        let mut blocked = crate::BlockedBloomFilter::new(1_000, 0.01).unwrap();
        let mut cuckoo = crate::CuckooFilter::redisbloom_builder(500)
            .expansion(2)
            .build()
            .unwrap();
        for k in keys.clone() {
            classic.insert(&k);
            blocked.insert(&k);
            cuckoo.insert(&k).unwrap();
        }
        let mut sector = crate::SectorBloomFilter::new(1_000, 0.01).unwrap();
        let mut aging = crate::AgingBloomFilter::new(1_000, 0.01).unwrap();
        for k in keys.clone() {
            sector.insert(&k);
            aging.insert(&k);
        }
        check(&classic, "classic");
        check(&blocked, "blocked");
        check(&sector, "sector");
        check(&aging, "aging");
        assert!(cuckoo.num_filters() > 1);
        check(&cuckoo, "cuckoo");
        for layout in [crate::LayerLayout::Classic, crate::LayerLayout::Blocked] {
            let mut scalable = crate::ScalableBloomFilter::builder(100, 0.01)
                .layout(layout)
                .build()
                .unwrap();
            for k in keys.clone() {
                scalable.insert(&k).unwrap();
            }
            assert!(scalable.num_layers() > 2);
            check(&scalable, &format!("scalable, {layout:?} layers"));
        }
    }

    #[test]
    fn kind_codes_round_trip() {
        for code in 1..=8 {
            let kind = FilterKind::from_code(code).unwrap();
            assert_eq!(kind.code(), code);
            assert_eq!(FilterKind::from_code(kind.code()), Some(kind));
        }
        assert_eq!(FilterKind::from_code(0), None);
        assert_eq!(FilterKind::from_code(999), None);
    }

    #[test]
    fn growth_is_bounded_by_the_total() {
        let mut v: Vec<u64> = Vec::new();
        for _ in 0..10 {
            grow_toward(&mut v, 3, 30).unwrap();
            v.extend([1, 2, 3]);
        }
        assert_eq!(v.len(), 30);
        assert_eq!(v.capacity(), 30);
    }

    #[test]
    fn peek_header_reads_every_prefix_without_panicking() {
        let f = crate::CuckooFilter::redisbloom_builder(1000)
            .build()
            .unwrap();
        let bytes = f.to_bytes();
        let info = peek_header(&bytes).unwrap().unwrap();
        assert_eq!(info.kind, FilterKind::Cuckoo);
        // 52 bytes of parameters: the distinct placement adds its flag word.
        assert_eq!(info.header_len, 44 + 52);
        assert_eq!(info.encoded_len, bytes.len() as u64);
        for n in 0..info.header_len {
            assert!(peek_header(&bytes[..n]).unwrap().is_none(), "{n}");
        }
        // Flipping any header byte gives an error or another well-formed answer.
        for i in 0..info.header_len {
            let mut b = bytes[..info.header_len].to_vec();
            b[i] ^= 0x80;
            let _ = peek_header(&b);
        }
        // A huge payload length overflows the total: an error, not a wrapped length.
        let mut b = bytes[..info.header_len].to_vec();
        let at = info.header_len - 8;
        b[at..].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(matches!(peek_header(&b), Err(Error::Corrupt { .. })));
        let mut b = bytes[..info.header_len].to_vec();
        b[10] = 99;
        assert!(matches!(
            peek_header(&b),
            Err(Error::UnknownKind { found: 99 })
        ));
        let mut b = bytes.clone();
        b[32..36].copy_from_slice(&5000u32.to_le_bytes());
        assert!(matches!(peek_header(&b), Err(Error::Corrupt { .. })));
        assert!(matches!(peek_header(b"\x89BKX"), Err(Error::BadMagic)));
    }

    #[test]
    fn empty_and_foreign_input_is_bad_magic() {
        for input in [
            &b""[..],
            b"hello world, this is text",
            b"\x89PNG\r\n\x1a\n0000",
        ] {
            let mut r = FormatReader::new(input, Some(input.len() as u64));
            assert!(matches!(r.header(), Err(Error::BadMagic)), "{input:?}");
        }
        // A prefix of the magic is a truncated filter, not a foreign file.
        let mut r = FormatReader::new(&MAGIC[..5], Some(5));
        assert!(matches!(r.header(), Err(Error::Truncated)));
    }
}
