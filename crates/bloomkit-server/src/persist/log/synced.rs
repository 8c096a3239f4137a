//! `SYNCED`: how far the generation being written was last known to be on disk.
//!
//! ```text
//! SYNCED = generation u64 | length u64 | XXH3-64 of the 16 bytes before it u64   (24 bytes)
//! ```
//!
//! After each successful fsync of the log generation being appended to, the server
//! overwrites these 24 bytes in place with that generation and the length the fsync
//! covered (whole records only). Nothing fsyncs this file: it is written after the log's
//! own fsync returned, so whatever version of it reaches the disk names a length that was
//! already durable, never more. A crash can therefore leave the log *longer* than `SYNCED`
//! says (writes after the last fsync), but never shorter: a log found shorter lost bytes
//! that were on disk, which is damage from outside the server, not a crash, and start-up
//! stops rather than report it as a torn write.
//!
//! A missing or unreadable `SYNCED`, or one naming another generation, only means less is
//! known: start-up then checks without it.

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::path::Path;

use xxhash_rust::xxh3::xxh3_64;

use crate::persist::dir;
use crate::persist::error::PersistError;
use crate::persist::files::SYNCED_FILE;

/// The file's size.
const SYNCED_LEN: usize = 24;

/// What `SYNCED` says: `len` bytes of log generation `generation` were on disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct SyncedMark {
    /// The generation.
    pub generation: u64,
    /// Bytes of it, from the start of the file, covered by an fsync.
    pub len: u64,
}

impl SyncedMark {
    /// The file's 24 bytes.
    pub fn encode(self) -> [u8; SYNCED_LEN] {
        let mut out = [0u8; SYNCED_LEN];
        out[..8].copy_from_slice(&self.generation.to_le_bytes());
        out[8..16].copy_from_slice(&self.len.to_le_bytes());
        let sum = xxh3_64(&out[..16]);
        out[16..].copy_from_slice(&sum.to_le_bytes());
        out
    }

    /// Parses the file's bytes; `None` unless they are exactly a mark with a good checksum.
    pub fn decode(bytes: &[u8]) -> Option<SyncedMark> {
        if bytes.len() != SYNCED_LEN {
            return None;
        }
        let word = |at: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&bytes[at..at + 8]);
            u64::from_le_bytes(b)
        };
        (xxh3_64(&bytes[..16]) == word(16)).then(|| SyncedMark {
            generation: word(0),
            len: word(8),
        })
    }
}

/// Reads `dir`'s mark, if there is a readable one (a missing or unreadable file only means
/// less is known).
///
/// # Errors
///
/// [`PersistError::NotAFile`] when `SYNCED` is a symbolic link, a FIFO or anything else
/// but a regular file.
pub fn read(dir: &Path) -> Result<Option<SyncedMark>, PersistError> {
    let mut bytes = Vec::with_capacity(SYNCED_LEN);
    let mut file = match dir::open_read(&dir.join(SYNCED_FILE)) {
        Ok(file) => file,
        Err(e @ PersistError::NotAFile { .. }) => return Err(e),
        Err(_) => return Ok(None),
    };
    if (&mut file)
        .take(SYNCED_LEN as u64 + 1)
        .read_to_end(&mut bytes)
        .is_err()
    {
        return Ok(None);
    }
    Ok(SyncedMark::decode(&bytes))
}

/// The open `SYNCED` file, kept by the log to overwrite after each fsync.
#[derive(Debug)]
pub struct SyncedFile {
    file: File,
    /// The last mark written: a later call with an older one (a slow fsync finishing after
    /// a faster one) writes nothing.
    last: Option<SyncedMark>,
}

impl SyncedFile {
    /// Opens (creating it if missing) `dir`'s `SYNCED` and records `mark` in it.
    ///
    /// # Errors
    ///
    /// When the file cannot be opened; a failed write is not an error (see
    /// [`SyncedFile::record`]).
    pub fn open(dir: &Path, mark: SyncedMark) -> Result<SyncedFile, PersistError> {
        let file = dir::open(
            &dir.join(SYNCED_FILE),
            OpenOptions::new().create(true).truncate(false).write(true),
            "open",
        )?;
        let mut synced = SyncedFile { file, last: None };
        synced.record(mark);
        Ok(synced)
    }

    /// Overwrites the mark with `mark` if it is newer than the last one written. A failure
    /// is ignored: the mark can only lag behind the log, which start-up tolerates, and the
    /// log's own errors are what stop writes.
    pub fn record(&mut self, mark: SyncedMark) {
        if self.last.is_some_and(|last| last >= mark) {
            return;
        }
        if write_at_start(&self.file, &mark.encode()).is_ok() {
            self.last = Some(mark);
        }
    }
}

#[cfg(unix)]
fn write_at_start(file: &File, bytes: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    file.write_all_at(bytes, 0)
}

#[cfg(not(unix))]
fn write_at_start(mut file: &File, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::{Seek, SeekFrom, Write};
    file.seek(SeekFrom::Start(0))?;
    file.write_all(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mark_round_trips_and_any_damage_makes_it_unknown() {
        let mark = SyncedMark {
            generation: 7,
            len: 123_456,
        };
        let bytes = mark.encode();
        assert_eq!(SyncedMark::decode(&bytes), Some(mark));
        for pos in 0..bytes.len() {
            let mut damaged = bytes;
            damaged[pos] ^= 0x20;
            assert_eq!(SyncedMark::decode(&damaged), None, "flip at {pos}");
        }
        assert_eq!(SyncedMark::decode(&bytes[..23]), None);
        assert_eq!(SyncedMark::decode(&[]), None);
    }

    #[test]
    fn only_newer_marks_overwrite_the_file() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read(dir.path()).unwrap(), None);
        let first = SyncedMark {
            generation: 2,
            len: 100,
        };
        let mut file = SyncedFile::open(dir.path(), first).unwrap();
        assert_eq!(read(dir.path()).unwrap(), Some(first));
        file.record(SyncedMark {
            generation: 2,
            len: 50,
        });
        assert_eq!(read(dir.path()).unwrap(), Some(first));
        let next = SyncedMark {
            generation: 3,
            len: 24,
        };
        file.record(next);
        assert_eq!(read(dir.path()).unwrap(), Some(next));
    }
}
