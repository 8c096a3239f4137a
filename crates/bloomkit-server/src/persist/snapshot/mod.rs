//! The snapshot format: every key with its expiry and its filter, in one checksummed file.
//!
//! The byte-by-byte layout is in `docs/PERSISTENCE.md`. In short:
//!
//! ```text
//! file   = header entry* end
//! header = "BKITSNP\n" | version u32 = 1 | flags u32 = 0 | log_generation u64 | created_unix_ms u64
//! entry  = 0x01 | key_len u32 | key | has_expiry u8 | expires_at_ms u64 | value_len u64 | value
//! end    = 0x00 | entry_count u64 | XXH3-64 of every byte before it u64
//! ```
//!
//! `value` is [`Value::to_bytes`]: bloomkit's own file format, which carries its kind, its
//! parameters and a checksum of its own, so a damaged filter is caught even before the
//! snapshot's trailing checksum is reached. Entries are tagged rather than counted up front
//! so that the writer can stream the keyspace without knowing its size first; the count at
//! the end cross-checks the tags.

use std::collections::HashSet;
use std::io::{self, Read, Write};

use bloomkit_commands::Value;
use bytes::Bytes;
use xxhash_rust::xxh3::Xxh3Default;

pub mod save;

use crate::persist::log::format::read_full;

/// The first 8 bytes of every snapshot file.
pub const SNAPSHOT_MAGIC: [u8; 8] = *b"BKITSNP\n";

/// The snapshot format version this build writes and reads.
pub const SNAPSHOT_VERSION: u32 = 1;

/// Bytes in a snapshot's header.
pub const SNAPSHOT_HEADER_LEN: usize = 32;

/// Bytes of the end marker: tag, entry count, checksum.
const END_LEN: u64 = 17;

/// The longest key a snapshot holds: Redis's largest bulk string (512 MiB).
pub const MAX_KEY_LEN: u32 = 512 * 1024 * 1024;

const TAG_END: u8 = 0;
const TAG_ENTRY: u8 = 1;

/// One key of a snapshot.
#[derive(Clone, Debug, PartialEq)]
pub struct SnapshotEntry {
    /// The key.
    pub key: Bytes,
    /// When the key expires, in Unix milliseconds; `None` if it never does. A key whose time
    /// has passed is still stored: the keyspace decides what to do with it on load.
    pub expires_at_ms: Option<u64>,
    /// The filter.
    pub value: Value,
}

/// What a snapshot's header says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SnapshotHeader {
    /// The first log generation that the snapshot does NOT contain: replay starts there, and
    /// every older generation is covered by the snapshot.
    pub log_generation: u64,
    /// When the snapshot was cut, in Unix milliseconds.
    pub created_unix_ms: u64,
}

/// A whole snapshot, as read.
#[derive(Clone, Debug, PartialEq)]
pub struct Snapshot {
    /// Its header.
    pub header: SnapshotHeader,
    /// Its keys, in file order.
    pub entries: Vec<SnapshotEntry>,
    /// Its trailing checksum (XXH3-64 of every byte before it): with the file's size, what
    /// a data directory's manifest records to know this very file.
    pub checksum: u64,
}

/// Writes a snapshot to `W`, checksumming as it goes.
pub struct SnapshotWriter<W: Write> {
    inner: W,
    checksum: Xxh3Default,
    entries: u64,
}

impl<W: Write> std::fmt::Debug for SnapshotWriter<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SnapshotWriter")
            .field("entries", &self.entries)
            .finish_non_exhaustive()
    }
}

impl<W: Write> SnapshotWriter<W> {
    /// Writes the header.
    ///
    /// # Errors
    ///
    /// Whatever writing to `inner` returns.
    pub fn new(inner: W, header: SnapshotHeader) -> io::Result<Self> {
        let mut w = SnapshotWriter {
            inner,
            checksum: Xxh3Default::new(),
            entries: 0,
        };
        let mut h = [0u8; SNAPSHOT_HEADER_LEN];
        h[0..8].copy_from_slice(&SNAPSHOT_MAGIC);
        h[8..12].copy_from_slice(&SNAPSHOT_VERSION.to_le_bytes());
        // 12..16: flags, zero.
        h[16..24].copy_from_slice(&header.log_generation.to_le_bytes());
        h[24..32].copy_from_slice(&header.created_unix_ms.to_le_bytes());
        w.put(&h)?;
        Ok(w)
    }

    fn put(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.checksum.update(bytes);
        self.inner.write_all(bytes)
    }

    /// Writes one key.
    ///
    /// # Errors
    ///
    /// `InvalidInput` for a key over [`MAX_KEY_LEN`]; otherwise whatever writing returns.
    pub fn write_entry(
        &mut self,
        key: &[u8],
        expires_at_ms: Option<u64>,
        value: &Value,
    ) -> io::Result<()> {
        let key_len = u32::try_from(key.len())
            .ok()
            .filter(|&l| l <= MAX_KEY_LEN)
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("a key of {} bytes is too long to snapshot", key.len()),
                )
            })?;
        let len = value.encoded_len() as u64;
        self.put(&[TAG_ENTRY])?;
        self.put(&key_len.to_le_bytes())?;
        self.put(key)?;
        self.put(&[u8::from(expires_at_ms.is_some())])?;
        self.put(&expires_at_ms.unwrap_or(0).to_le_bytes())?;
        self.put(&len.to_le_bytes())?;
        // Streamed, not encoded into a buffer first: a snapshot never holds a second copy
        // of a filter (which may be gigabytes).
        let mut sink = EntrySink {
            writer: self,
            written: 0,
        };
        value.write_to(&mut sink)?;
        if sink.written != len {
            // The length is recorded before the value; a mismatch would make the file
            // unreadable, so the snapshot fails here rather than at the next start.
            return Err(io::Error::other(format!(
                "a value announced as {len} bytes wrote {}",
                sink.written
            )));
        }
        self.entries += 1;
        Ok(())
    }

    /// Writes the end marker and checksum, flushes, and hands back the writer.
    ///
    /// # Errors
    ///
    /// Whatever writing or flushing returns.
    pub fn finish(self) -> io::Result<W> {
        self.finish_with_checksum().map(|(inner, _)| inner)
    }

    /// [`SnapshotWriter::finish`], also returning the trailing checksum it wrote.
    ///
    /// # Errors
    ///
    /// Whatever writing or flushing returns.
    pub fn finish_with_checksum(mut self) -> io::Result<(W, u64)> {
        self.put(&[TAG_END])?;
        let count = self.entries;
        self.put(&count.to_le_bytes())?;
        let sum = self.checksum.digest();
        self.inner.write_all(&sum.to_le_bytes())?;
        self.inner.flush()?;
        Ok((self.inner, sum))
    }

    /// Keys written so far.
    pub fn entries(&self) -> u64 {
        self.entries
    }
}

/// Feeds a value's encoding into the snapshot's checksum and file, counting it.
struct EntrySink<'a, W: Write> {
    writer: &'a mut SnapshotWriter<W>,
    written: u64,
}

impl<W: Write> Write for EntrySink<'_, W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.writer.put(buf)?;
        self.written += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Why a snapshot could not be read.
#[derive(Debug)]
pub enum SnapshotError {
    /// The file is damaged at `offset`.
    Corrupt {
        /// Byte offset of the damaged field (of the entry, for a value that does not load).
        offset: u64,
        /// What is wrong, for a human.
        reason: String,
    },
    /// Reading failed.
    Io(io::Error),
}

impl From<io::Error> for SnapshotError {
    fn from(e: io::Error) -> Self {
        SnapshotError::Io(e)
    }
}

/// A reader that checksums and counts what it reads, and knows how much is left.
struct Source<R> {
    inner: R,
    checksum: Xxh3Default,
    offset: u64,
    file_len: u64,
}

impl<R: Read> Source<R> {
    fn exact(&mut self, buf: &mut [u8], what: &str) -> Result<(), SnapshotError> {
        let n = read_full(&mut self.inner, buf)?;
        if n < buf.len() {
            return Err(SnapshotError::Corrupt {
                offset: self.offset + n as u64,
                reason: format!("the file ends inside {what}"),
            });
        }
        self.checksum.update(buf);
        self.offset += n as u64;
        Ok(())
    }

    fn u8(&mut self, what: &str) -> Result<u8, SnapshotError> {
        let mut b = [0u8; 1];
        self.exact(&mut b, what)?;
        Ok(b[0])
    }

    fn u32(&mut self, what: &str) -> Result<u32, SnapshotError> {
        let mut b = [0u8; 4];
        self.exact(&mut b, what)?;
        Ok(u32::from_le_bytes(b))
    }

    fn u64(&mut self, what: &str) -> Result<u64, SnapshotError> {
        let mut b = [0u8; 8];
        self.exact(&mut b, what)?;
        Ok(u64::from_le_bytes(b))
    }

    /// Bytes left before the end marker, which every valid file still has to hold.
    fn room(&self) -> u64 {
        self.file_len.saturating_sub(self.offset + END_LEN)
    }

    /// Reads `len` bytes, refusing before allocating if the file cannot hold them.
    fn vec(&mut self, len: u64, what: &str) -> Result<Vec<u8>, SnapshotError> {
        if len > self.room() {
            return Err(SnapshotError::Corrupt {
                offset: self.offset,
                reason: format!(
                    "{what} claims {len} bytes but the file has only {} left",
                    self.room()
                ),
            });
        }
        // `len <= room <= file_len`: bounded by bytes that exist.
        let mut v = vec![0u8; len as usize];
        self.exact(&mut v, what)?;
        Ok(v)
    }
}

/// Reads a whole snapshot, checking everything: header fields, each entry's framing, each
/// value's own format and checksum, duplicate keys, the entry count, the trailing checksum,
/// and that nothing follows it.
///
/// `file_len` is the file's size: no buffer larger than the bytes it leaves is allocated,
/// whatever a field claims.
///
/// # Errors
///
/// [`SnapshotError::Corrupt`] with the offset of the first problem found;
/// [`SnapshotError::Io`] if reading fails.
pub fn read_snapshot<R: Read>(reader: R, file_len: u64) -> Result<Snapshot, SnapshotError> {
    let corrupt = |offset: u64, reason: String| SnapshotError::Corrupt { offset, reason };
    let mut src = Source {
        inner: reader,
        checksum: Xxh3Default::new(),
        offset: 0,
        file_len,
    };
    let mut h = [0u8; SNAPSHOT_HEADER_LEN];
    src.exact(&mut h, "the header")?;
    if h[0..8] != SNAPSHOT_MAGIC {
        return Err(corrupt(
            0,
            format!(
                "not a bloomkit snapshot (its first bytes are {:?}, expected {:?})",
                String::from_utf8_lossy(&h[0..8]),
                String::from_utf8_lossy(&SNAPSHOT_MAGIC)
            ),
        ));
    }
    let version = u32::from_le_bytes([h[8], h[9], h[10], h[11]]);
    if version != SNAPSHOT_VERSION {
        return Err(corrupt(
            8,
            format!(
                "snapshot format version {version}, but this build reads version \
                 {SNAPSHOT_VERSION}: run the bloomkit release that wrote it"
            ),
        ));
    }
    let flags = u32::from_le_bytes([h[12], h[13], h[14], h[15]]);
    if flags != 0 {
        return Err(corrupt(12, format!("unknown flags {flags:#x}")));
    }
    let header = SnapshotHeader {
        log_generation: u64::from_le_bytes(h[16..24].try_into().unwrap_or([0; 8])),
        created_unix_ms: u64::from_le_bytes(h[24..32].try_into().unwrap_or([0; 8])),
    };
    if header.log_generation == 0 {
        return Err(corrupt(
            16,
            "log generation 0 (generations start at 1)".into(),
        ));
    }

    let mut entries = Vec::new();
    let mut keys = HashSet::new();
    loop {
        let at = src.offset;
        match src.u8("an entry tag")? {
            TAG_END => break,
            TAG_ENTRY => {}
            tag => {
                return Err(corrupt(
                    at,
                    format!("unknown entry tag {tag:#04x} (expected 0x01 or 0x00)"),
                ))
            }
        }
        let key_len = src.u32("a key length")?;
        if key_len > MAX_KEY_LEN {
            return Err(corrupt(
                at,
                format!("a key of {key_len} bytes (the limit is {MAX_KEY_LEN})"),
            ));
        }
        let key = Bytes::from(src.vec(u64::from(key_len), "a key")?);
        let flag_at = src.offset;
        let has_expiry = src.u8("an expiry flag")?;
        let expires = src.u64("an expiry")?;
        let expires_at_ms = match (has_expiry, expires) {
            (0, 0) => None,
            (1, t) => Some(t),
            _ => {
                return Err(corrupt(
                    flag_at,
                    format!("bad expiry (flag {has_expiry}, time {expires})"),
                ))
            }
        };
        let value_len = src.u64("a value length")?;
        let bytes = src.vec(value_len, "a value")?;
        let value = Value::from_bytes(&bytes).map_err(|e| {
            corrupt(
                at,
                format!("the value of key {} does not load: {e}", show_key(&key)),
            )
        })?;
        if !keys.insert(key.clone()) {
            return Err(corrupt(at, format!("key {} appears twice", show_key(&key))));
        }
        entries.push(SnapshotEntry {
            key,
            expires_at_ms,
            value,
        });
    }
    let count_at = src.offset;
    let count = src.u64("the entry count")?;
    if count != entries.len() as u64 {
        return Err(corrupt(
            count_at,
            format!(
                "the end marker counts {count} entries but {} were read",
                entries.len()
            ),
        ));
    }
    let computed = src.checksum.digest();
    let sum_at = src.offset;
    let mut stored = [0u8; 8];
    let n = read_full(&mut src.inner, &mut stored)?;
    if n < 8 {
        return Err(corrupt(
            sum_at + n as u64,
            "the file ends inside the checksum".into(),
        ));
    }
    let stored = u64::from_le_bytes(stored);
    if stored != computed {
        return Err(corrupt(
            sum_at,
            format!("checksum mismatch (stored {stored:#018x}, computed {computed:#018x})"),
        ));
    }
    let mut extra = [0u8; 1];
    if read_full(&mut src.inner, &mut extra)? != 0 {
        return Err(corrupt(
            sum_at + 8,
            "unexpected bytes after the checksum".into(),
        ));
    }
    Ok(Snapshot {
        header,
        entries,
        checksum: stored,
    })
}

/// A key for a message: printable, and short.
fn show_key(key: &[u8]) -> String {
    let shown = String::from_utf8_lossy(&key[..key.len().min(64)]);
    if key.len() > 64 {
        format!("{shown:?}... ({} bytes)", key.len())
    } else {
        format!("{shown:?}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bloomkit::{CuckooFilter, ScalableBloomFilter};

    fn sample() -> Vec<SnapshotEntry> {
        let mut bloom = ScalableBloomFilter::builder(50, 0.01)
            .expansion(2)
            .build()
            .unwrap();
        for i in 0..120 {
            bloom.insert(&format!("b{i}")[..]).unwrap();
        }
        let mut cuckoo = CuckooFilter::redisbloom_builder(64).build().unwrap();
        for i in 0..40 {
            cuckoo.insert(&format!("c{i}")[..]).unwrap();
        }
        vec![
            SnapshotEntry {
                key: Bytes::from_static(b"bloom"),
                expires_at_ms: None,
                value: Value::Bloom(bloom),
            },
            SnapshotEntry {
                key: Bytes::from_static(b"\x00binary\xffkey"),
                expires_at_ms: Some(1_900_000_000_000),
                value: Value::Cuckoo(cuckoo),
            },
        ]
    }

    fn write(entries: &[SnapshotEntry]) -> Vec<u8> {
        let header = SnapshotHeader {
            log_generation: 3,
            created_unix_ms: 1_700_000_000_000,
        };
        let mut w = SnapshotWriter::new(Vec::new(), header).unwrap();
        for e in entries {
            w.write_entry(&e.key, e.expires_at_ms, &e.value).unwrap();
        }
        w.finish().unwrap()
    }

    fn read(bytes: &[u8]) -> Result<Snapshot, SnapshotError> {
        read_snapshot(bytes, bytes.len() as u64)
    }

    #[test]
    fn round_trip_keeps_keys_expiries_and_filters() {
        let entries = sample();
        let snap = read(&write(&entries)).unwrap();
        assert_eq!(snap.header.log_generation, 3);
        assert_eq!(snap.header.created_unix_ms, 1_700_000_000_000);
        assert_eq!(snap.entries, entries);
    }

    #[test]
    fn empty_snapshot_is_header_end_marker_and_checksum() {
        let bytes = write(&[]);
        assert_eq!(bytes.len(), SNAPSHOT_HEADER_LEN + END_LEN as usize);
        assert_eq!(read(&bytes).unwrap().entries, vec![]);
    }

    #[test]
    fn every_truncation_is_an_error_with_an_offset_inside_the_file() {
        let bytes = write(&sample());
        for cut in 0..bytes.len() {
            match read(&bytes[..cut]) {
                Err(SnapshotError::Corrupt { offset, .. }) => {
                    assert!(offset <= cut as u64, "cut {cut}: offset {offset}")
                }
                other => panic!("cut {cut}: {other:?}"),
            }
        }
    }

    #[test]
    fn every_byte_flip_is_an_error() {
        let bytes = write(&sample());
        // Every byte of the small framing, and a stride through the large values.
        let positions = (0..bytes.len()).filter(|&p| p < 200 || p % 7 == 0 || p + 64 > bytes.len());
        for pos in positions {
            let mut damaged = bytes.clone();
            damaged[pos] ^= 0x20;
            assert!(
                matches!(read(&damaged), Err(SnapshotError::Corrupt { .. })),
                "flip at {pos} loaded"
            );
        }
    }

    #[test]
    fn trailing_bytes_duplicates_and_wrong_counts_are_errors() {
        let mut bytes = write(&sample());
        bytes.push(0);
        assert!(read(&bytes).is_err());

        let e = sample();
        let dup = write(&[e[0].clone(), e[0].clone()]);
        match read(&dup) {
            Err(SnapshotError::Corrupt { reason, .. }) => assert!(reason.contains("twice")),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_huge_claimed_value_length_allocates_nothing() {
        let mut bytes = write(&sample()[..1]);
        // The value length of the first entry sits after tag, key length, key, flag, expiry.
        let at = SNAPSHOT_HEADER_LEN + 1 + 4 + 5 + 1 + 8;
        bytes[at..at + 8].copy_from_slice(&u64::MAX.to_le_bytes());
        match read(&bytes) {
            Err(SnapshotError::Corrupt { offset, reason }) => {
                assert_eq!(offset, at as u64 + 8);
                assert!(reason.contains("claims"), "{reason}");
            }
            other => panic!("{other:?}"),
        }
    }
}
