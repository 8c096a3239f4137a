//! The values the keyspace holds: one filter (or aging key) per key, or one still arriving
//! in `BF.LOADCHUNK`/`CF.LOADCHUNK`/`AF.LOADCHUNK` chunks.

use std::io::{self, Write};

use bloomkit::redisbloom::payload::BLOOMKIT_ENCVER;
use bloomkit::redisbloom::{RedisBloomChain, RedisCuckooFilter, BF_TYPE_NAME, CF_TYPE_NAME};
use bloomkit::{format, AnyFilter, CuckooFilter, Error, FilterKind, ScalableBloomFilter};

use crate::aging::AgingKey;
use crate::importing::ImportingDump;

/// What `TYPE` answers for an `AF.*` key: nine characters, as a Redis module type's name
/// must be, in the spirit of RedisBloom's `MBbloom--`. (RedisBloom's own two names are the
/// library's, [`BF_TYPE_NAME`] and [`CF_TYPE_NAME`]: its `DUMP` payloads carry them.)
pub const AGING_TYPE_NAME: &str = "BKaging--";

/// The module encoding version of [`AGING_TYPE_NAME`] values (RDB files and `DUMP`
/// payloads): a type of bloomkit's own, so its versions start at 1 (`MBbloom--`/`MBbloomCF`
/// are at [`BLOOMKIT_ENCVER`], apart from RedisBloom's).
pub const AGING_ENCVER: u64 = 1;

/// A key's value: the filter behind a `BF.*`, `CF.*` or `AF.*` key.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// A Bloom key (`TYPE` answers `MBbloom--`).
    Bloom(ScalableBloomFilter),
    /// A cuckoo key (`TYPE` answers `MBbloomCF`).
    Cuckoo(CuckooFilter),
    /// An aging key (`TYPE` answers [`AGING_TYPE_NAME`]).
    Aging(AgingKey),
    /// A filter being restored from `SCANDUMP` chunks: its header has arrived, not yet all
    /// of its bytes. `TYPE` answers as for the finished filter; filter commands other than
    /// `LOADCHUNK` answer an error until the last chunk arrives.
    Loading(PartialDump),
    /// A Bloom key imported from RedisBloom (a `DUMP` payload or `SCANDUMP` chunks of its
    /// `MBbloom--`), kept with RedisBloom's hashing so it answers as it did there. `TYPE`
    /// answers `MBbloom--`; every `BF.*` command serves it.
    RedisBloom(RedisBloomChain),
    /// A cuckoo key imported from RedisBloom (`MBbloomCF`), likewise.
    RedisCuckoo(RedisCuckooFilter),
    /// A RedisBloom key arriving in the chunks of RedisBloom's own `SCANDUMP`: as
    /// [`Value::Loading`], filter commands other than `LOADCHUNK` answer an error until the
    /// last chunk arrives.
    Importing(Box<ImportingDump>),
}

impl Value {
    /// A value that allocates nothing and holds no filter: what a host's map entry holds for
    /// the moment a write command has the entry's real value (taken out with
    /// [`std::mem::replace`] into the command's slot), so that the entry need not be removed
    /// and inserted again. No command may see it: the host puts back whatever the command
    /// left in the slot before another command can reach the key.
    pub fn stand_in() -> Value {
        Value::Loading(PartialDump {
            encoded_len: 0,
            header_len: 0,
            kind: FilterKind::Scalable,
            received: Vec::new(),
        })
    }

    /// The module encoding version a `DUMP` payload or RDB file names for this key's type
    /// ([`type_name`](Self::type_name)): [`AGING_ENCVER`] or [`BLOOMKIT_ENCVER`].
    pub fn module_encver(&self) -> u64 {
        if self.type_name() == AGING_TYPE_NAME {
            AGING_ENCVER
        } else {
            BLOOMKIT_ENCVER
        }
    }

    /// What `TYPE` answers for this key: RedisBloom's module type names.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Bloom(_) | Value::RedisBloom(_) => BF_TYPE_NAME,
            Value::Cuckoo(_) | Value::RedisCuckoo(_) => CF_TYPE_NAME,
            Value::Aging(_) => AGING_TYPE_NAME,
            Value::Loading(d) if d.is_cuckoo() => CF_TYPE_NAME,
            Value::Loading(d) if d.kind() == FilterKind::Aging => AGING_TYPE_NAME,
            Value::Importing(d) if d.is_cuckoo() => CF_TYPE_NAME,
            Value::Importing(_) => BF_TYPE_NAME,
            Value::Loading(_) => BF_TYPE_NAME,
        }
    }

    /// Bytes this value holds on the heap and inline, for `INFO memory` and `--maxmemory`.
    pub fn memory_bytes(&self) -> usize {
        match self {
            Value::Bloom(f) => f.memory_bytes(),
            Value::Cuckoo(f) => f.memory_bytes(),
            Value::Aging(k) => k.memory_bytes(),
            Value::Loading(d) => d.memory_bytes(),
            Value::RedisBloom(f) => f.memory_bytes(),
            Value::RedisCuckoo(f) => f.memory_bytes(),
            Value::Importing(d) => d.memory_bytes(),
        }
    }

    /// The value in bloomkit's file format (self-describing and checksummed), as stored in
    /// snapshots. A [`Value::Loading`] is stored as [`PartialDump::to_bytes`] writes it.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.encoded_len());
        // Writing to a vector cannot fail.
        let _ = self.write_to(&mut out);
        out
    }

    /// The length of [`to_bytes`](Self::to_bytes), computed without encoding.
    pub fn encoded_len(&self) -> usize {
        match self {
            Value::Bloom(f) => f.encoded_len(),
            Value::Cuckoo(f) => f.encoded_len(),
            Value::Aging(k) => k.encoded_len(),
            Value::Loading(d) => d.stored_len(),
            Value::RedisBloom(f) => f.encoded_len(),
            Value::RedisCuckoo(f) => f.encoded_len(),
            Value::Importing(d) => d.stored_len(),
        }
    }

    /// Writes what [`to_bytes`](Self::to_bytes) returns, without building it in memory: a
    /// snapshot streams each filter this way rather than holding a second copy of it
    /// (and handing the allocator a freed buffer the size of a filter, which glibc answers
    /// by keeping later ones of that size resident).
    ///
    /// # Errors
    ///
    /// Whatever writing returns.
    pub fn write_to<W: Write>(&self, writer: W) -> io::Result<()> {
        let bloomkit_io = |e: bloomkit::Error| match e {
            bloomkit::Error::Io(e) => e,
            e => io::Error::other(e),
        };
        match self {
            Value::Bloom(f) => f.write_to(writer).map_err(bloomkit_io),
            Value::Cuckoo(f) => f.write_to(writer).map_err(bloomkit_io),
            Value::Aging(k) => k.write_to(writer).map_err(bloomkit_io),
            Value::Loading(d) => d.write_to(writer),
            Value::RedisBloom(f) => f.write_to(writer).map_err(bloomkit_io),
            Value::RedisCuckoo(f) => f.write_to(writer).map_err(bloomkit_io),
            Value::Importing(d) => d.write_to(writer),
        }
    }

    /// Reads a value written by [`Value::to_bytes`].
    ///
    /// # Errors
    ///
    /// Whatever the format reader finds wrong (truncation, checksum, corruption), and
    /// [`bloomkit::Error::WrongKind`] for a filter kind the server does not serve.
    pub fn from_bytes(bytes: &[u8]) -> bloomkit::Result<Value> {
        if bytes.starts_with(&PartialDump::MAGIC) {
            return PartialDump::from_bytes(bytes).map(Value::Loading);
        }
        if bytes.starts_with(&ImportingDump::MAGIC) {
            return ImportingDump::from_bytes(bytes).map(|d| Value::Importing(Box::new(d)));
        }
        if bytes.starts_with(&crate::aging::MAGIC) {
            return AgingKey::from_bytes(bytes).map(Value::Aging);
        }
        // The RedisBloom kinds are not AnyFilter's: read them by the header's kind.
        match format::peek_header(bytes).map(|info| info.map(|info| info.kind)) {
            Ok(Some(FilterKind::RedisBloomChain)) => {
                return RedisBloomChain::from_bytes(bytes).map(Value::RedisBloom)
            }
            Ok(Some(FilterKind::RedisCuckoo)) => {
                return RedisCuckooFilter::from_bytes(bytes).map(Value::RedisCuckoo)
            }
            _ => {}
        }
        match AnyFilter::from_bytes(bytes)? {
            AnyFilter::Scalable(f) => Ok(Value::Bloom(f)),
            AnyFilter::Cuckoo(f) => Ok(Value::Cuckoo(f)),
            other => Err(bloomkit::Error::WrongKind {
                expected: bloomkit::FilterKind::Scalable,
                found: other.kind().code(),
            }),
        }
    }
}

/// The longest header: an aging key's fixed fields (41 bytes), then a filter's 44 fixed
/// bytes and at most 1024 of parameters.
pub(crate) const MAX_HEADER_BYTES: u64 = 41 + 44 + 1024;

/// What the header of a value's encoding says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Header {
    /// The filter kind: [`FilterKind::Aging`] for an aging key.
    pub(crate) kind: FilterKind,
    /// Bytes from the start to the end of the header.
    pub(crate) header_len: usize,
    /// Bytes of the whole encoding.
    pub(crate) encoded_len: u64,
}

/// Reads the header at the start of a value's encoding, a filter's
/// ([`format::peek_header`]) or an aging key's; `Ok(None)` while `prefix` is too short to
/// tell.
///
/// # Errors
///
/// The readers' errors for what is neither.
pub(crate) fn peek_header(prefix: &[u8]) -> bloomkit::Result<Option<Header>> {
    let aging_magic = &crate::aging::MAGIC[..prefix.len().min(crate::aging::MAGIC.len())];
    if prefix.starts_with(aging_magic) && !prefix.is_empty() {
        let header = crate::aging::AgingKey::peek_header(prefix)?;
        return Ok(header.map(|(header_len, encoded_len)| Header {
            kind: FilterKind::Aging,
            header_len,
            encoded_len,
        }));
    }
    Ok(format::peek_header(prefix)?.map(|info| Header {
        kind: info.kind,
        header_len: info.header_len,
        encoded_len: info.encoded_len,
    }))
}

/// The first bytes of an encoded filter, received by `BF.LOADCHUNK`/`CF.LOADCHUNK` in
/// order, and how many the whole encoding has.
///
/// Bytes are kept as they arrive, and only when the last one is in is the filter decoded,
/// by bloomkit's reader, which checks every field and the checksum. So a hostile or damaged
/// dump can never build a filter, and memory grows only with the data actually received (a
/// header that claims a terabyte costs nothing until a terabyte is sent).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartialDump {
    /// The length of the whole encoding, from its header.
    encoded_len: u64,
    /// Where the header ends.
    header_len: usize,
    kind: FilterKind,
    /// The encoding's first bytes: at least the header, fewer than `encoded_len`.
    received: Vec<u8>,
}

impl PartialDump {
    /// What a snapshot of a partial dump starts with: not bloomkit's magic (`\x89BKF`), so the
    /// two cannot be confused.
    pub const MAGIC: [u8; 8] = *b"\x89BKP\r\n\x1a\n";

    /// A dump whose first bytes are `header`, which must be exactly an encoded filter's
    /// header (as [`bloomkit::format::peek_header`] reads it), or an aging key's (its fixed
    /// fields, then its filter's header).
    ///
    /// # Errors
    ///
    /// [`Error::Corrupt`] if `header` is not exactly a header, or of a kind other than a
    /// scalable Bloom, a cuckoo filter or an aging key; the reader's errors for a malformed
    /// one.
    pub fn new(header: &[u8]) -> bloomkit::Result<PartialDump> {
        let info = Self::check_header(header)?;
        if header.len() != info.header_len {
            return Err(Error::Corrupt {
                reason: format!(
                    "a dump's first chunk is its {}-byte header, not {} bytes",
                    info.header_len,
                    header.len()
                ),
            });
        }
        Ok(PartialDump {
            encoded_len: info.encoded_len,
            header_len: info.header_len,
            kind: info.kind,
            received: header.to_vec(),
        })
    }

    fn check_header(bytes: &[u8]) -> bloomkit::Result<Header> {
        let info = peek_header(bytes)?.ok_or(Error::Truncated)?;
        if !matches!(
            info.kind,
            FilterKind::Scalable
                | FilterKind::Cuckoo
                | FilterKind::Aging
                | FilterKind::RedisBloomChain
                | FilterKind::RedisCuckoo
        ) {
            return Err(Error::WrongKind {
                expected: FilterKind::Scalable,
                found: info.kind.code(),
            });
        }
        Ok(info)
    }

    /// The kind of filter arriving: [`FilterKind::Scalable`], [`FilterKind::Cuckoo`],
    /// [`FilterKind::Aging`] for an aging key, or one of the RedisBloom kinds (an imported
    /// key's own dump).
    pub fn kind(&self) -> FilterKind {
        self.kind
    }

    /// Whether a cuckoo key (`CF.*`) is arriving: bloomkit's or an imported one.
    pub fn is_cuckoo(&self) -> bool {
        matches!(self.kind, FilterKind::Cuckoo | FilterKind::RedisCuckoo)
    }

    /// Whether a Bloom key (`BF.*`) is arriving: bloomkit's or an imported one.
    pub fn is_bloom(&self) -> bool {
        matches!(
            self.kind,
            FilterKind::Scalable | FilterKind::RedisBloomChain
        )
    }

    /// The length of the whole encoding.
    pub fn encoded_len(&self) -> u64 {
        self.encoded_len
    }

    /// The length of the encoding's header, which the first chunk holds.
    pub fn header_len(&self) -> usize {
        self.header_len
    }

    /// The bytes received so far, header first.
    pub fn received(&self) -> &[u8] {
        &self.received
    }

    /// Appends the next bytes of the encoding; the caller checks they fit in
    /// [`encoded_len`](Self::encoded_len). Storage grows by doubling, but never past the
    /// encoding's length, so the last chunk leaves no slack.
    ///
    /// # Errors
    ///
    /// [`Error::OutOfMemory`] if the allocator refuses.
    pub fn append(&mut self, chunk: &[u8]) -> bloomkit::Result<()> {
        let needed = self.received.len() + chunk.len();
        if needed > self.received.capacity() {
            let total = usize::try_from(self.encoded_len).unwrap_or(usize::MAX);
            let target = needed
                .max(self.received.capacity().saturating_mul(2))
                .min(total.max(needed));
            self.received
                .try_reserve_exact(target - self.received.len())
                .map_err(|_| Error::OutOfMemory {
                    bytes: target as u64,
                })?;
        }
        self.received.extend_from_slice(chunk);
        Ok(())
    }

    /// Whether every byte of the encoding has arrived.
    pub fn is_complete(&self) -> bool {
        self.received.len() as u64 == self.encoded_len
    }

    /// The filter, once [complete](Self::is_complete): decoded and checked by bloomkit's
    /// reader (every field, the payload and the checksum).
    ///
    /// # Errors
    ///
    /// Whatever the reader finds wrong, and [`Error::Truncated`] if bytes are missing.
    pub fn finish(&self) -> bloomkit::Result<Value> {
        if !self.is_complete() {
            return Err(Error::Truncated);
        }
        match self.kind {
            FilterKind::Cuckoo => CuckooFilter::from_bytes(&self.received).map(Value::Cuckoo),
            FilterKind::Aging => AgingKey::from_bytes(&self.received).map(Value::Aging),
            FilterKind::RedisBloomChain => {
                RedisBloomChain::from_bytes(&self.received).map(Value::RedisBloom)
            }
            FilterKind::RedisCuckoo => {
                RedisCuckooFilter::from_bytes(&self.received).map(Value::RedisCuckoo)
            }
            _ => ScalableBloomFilter::from_bytes(&self.received).map(Value::Bloom),
        }
    }

    /// Bytes held.
    pub fn memory_bytes(&self) -> usize {
        std::mem::size_of::<Self>() + self.received.capacity()
    }

    /// The dump as a snapshot stores it: [`MAGIC`](Self::MAGIC), the encoding's length
    /// (8 bytes, little-endian), then the bytes received. (The snapshot file checksums
    /// its records; the encoding's own checksum arrives with its last chunk.)
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.stored_len());
        // Writing to a vector cannot fail.
        let _ = self.write_to(&mut out);
        out
    }

    /// Writes what [`to_bytes`](Self::to_bytes) returns.
    fn write_to<W: Write>(&self, mut writer: W) -> io::Result<()> {
        writer.write_all(&Self::MAGIC)?;
        writer.write_all(&self.encoded_len.to_le_bytes())?;
        writer.write_all(&self.received)
    }

    /// The length of [`to_bytes`](Self::to_bytes).
    fn stored_len(&self) -> usize {
        16 + self.received.len()
    }

    /// Reads what [`to_bytes`](Self::to_bytes) wrote.
    ///
    /// # Errors
    ///
    /// [`Error::BadMagic`] without the magic; [`Error::Corrupt`] when the length disagrees
    /// with the header received, or the bytes are not fewer than it; the header's errors.
    pub fn from_bytes(bytes: &[u8]) -> bloomkit::Result<PartialDump> {
        let rest = bytes.strip_prefix(&Self::MAGIC).ok_or(Error::BadMagic)?;
        let (len, received) = rest.split_at_checked(8).ok_or(Error::Truncated)?;
        let mut len_bytes = [0u8; 8];
        len_bytes.copy_from_slice(len);
        let encoded_len = u64::from_le_bytes(len_bytes);
        let info = Self::check_header(received)?;
        if info.encoded_len != encoded_len || received.len() as u64 >= encoded_len {
            return Err(Error::Corrupt {
                reason: format!(
                    "a partial dump of {} bytes for an encoding of {encoded_len} (its header \
                     says {})",
                    received.len(),
                    info.encoded_len
                ),
            });
        }
        Ok(PartialDump {
            encoded_len,
            header_len: info.header_len,
            kind: info.kind,
            received: received.to_vec(),
        })
    }
}

#[cfg(test)]
mod tests {
    use bloomkit::format;

    use super::*;

    #[test]
    fn a_partial_dump_round_trips_through_a_snapshot() {
        let mut f = ScalableBloomFilter::new(100, 0.01).unwrap();
        f.insert("a").unwrap();
        let bytes = f.to_bytes();
        let info = format::peek_header(&bytes).unwrap().unwrap();
        let mut d = PartialDump::new(&bytes[..info.header_len]).unwrap();
        d.append(&bytes[info.header_len..info.header_len + 10])
            .unwrap();
        let v = Value::Loading(d.clone());
        assert_eq!(v.type_name(), "MBbloom--");
        let back = Value::from_bytes(&v.to_bytes()).unwrap();
        assert_eq!(back, v);
        d.append(&bytes[info.header_len + 10..]).unwrap();
        assert!(d.is_complete());
        assert_eq!(d.received.capacity(), bytes.len());
        assert_eq!(d.finish().unwrap(), Value::Bloom(f));
        // A snapshot whose length disagrees with its header is refused.
        let mut snap = v.to_bytes();
        snap[8] ^= 1;
        assert!(Value::from_bytes(&snap).is_err());
    }

    #[test]
    fn streaming_writes_what_to_bytes_returns() {
        let mut bloom = ScalableBloomFilter::new(10, 0.01).unwrap();
        // What the server creates: classic layers.
        let mut classic = ScalableBloomFilter::builder(10, 0.01)
            .layout(bloomkit::LayerLayout::Classic)
            .build()
            .unwrap();
        for i in 0..50u32 {
            bloom.insert(&i).unwrap();
            classic.insert(&i).unwrap();
        }
        let mut cuckoo = CuckooFilter::new(100, 0.01).unwrap();
        cuckoo.insert("a").unwrap();
        let bytes = bloom.to_bytes();
        let header = format::peek_header(&bytes).unwrap().unwrap().header_len;
        let mut loading = PartialDump::new(&bytes[..header]).unwrap();
        loading.append(&bytes[header..header + 24]).unwrap();
        for v in [
            Value::Bloom(bloom),
            Value::Bloom(classic),
            Value::Cuckoo(cuckoo),
            Value::Loading(loading),
        ] {
            let mut streamed = Vec::new();
            v.write_to(&mut streamed).unwrap();
            assert_eq!(streamed, v.to_bytes(), "{}", v.type_name());
            assert_eq!(v.encoded_len(), streamed.len());
        }
    }
}
