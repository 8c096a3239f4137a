//! The data directory's manifest: which files must be there, and what each finished one
//! holds, so that start-up can tell a complete directory from one that lost files.
//!
//! The byte-by-byte layout is in `docs/PERSISTENCE.md`. In short:
//!
//! ```text
//! manifest = "BKITMAN\n" | version u32 = 1 | flags u32 = 0
//!          | first log generation u64 | sealed count u64
//!          | snapshot (generation, length, checksum: 3 × u64; zeros: none)
//!          | pending snapshot (the same)
//!          | sealed count × (length u64, checksum u64)
//!          | XXH3-64 of every byte before it u64
//! ```
//!
//! Generations `first` to `first + sealed - 1` are **sealed**: finished, with the length and
//! the XXH3-64 of the whole file recorded when the next one was started. Generation
//! `first + sealed` is **open**: the one being appended to, whose length only the file knows.
//! The snapshot names `dump.bks` exactly (its generation, size and trailing checksum). The
//! pending snapshot is one being installed: between the rename of its temporary file and the
//! next manifest, `dump.bks` may be either of the two, and both are known exactly.
//!
//! The manifest is only ever replaced whole (a temporary file, fsynced, renamed over it, the
//! directory fsynced), so a crash leaves the old one or the new one, never a mixture.
//! Redis 7 keeps a manifest for its multi-part append-only file for the same reason.

use std::fs::{self, OpenOptions};
use std::io::{Read, Write};
use std::path::Path;

use xxhash_rust::xxh3::xxh3_64;

use super::dir;
use super::error::PersistError;
use super::files::{MANIFEST_FILE, MANIFEST_TEMP_FILE};

/// The first 8 bytes of a manifest.
pub const MANIFEST_MAGIC: [u8; 8] = *b"BKITMAN\n";

/// The manifest format version this build writes and reads.
pub const MANIFEST_VERSION: u32 = 1;

/// Bytes before the sealed generations' entries.
const FIXED_LEN: usize = 80;

/// Bytes of one sealed generation's entry.
const SEALED_LEN: usize = 16;

/// A manifest larger than this is refused before it is read: a million sealed generations,
/// far beyond what the server ever leaves (a snapshot folds them into one file).
const MAX_MANIFEST_LEN: u64 = (FIXED_LEN + 8 + SEALED_LEN * 1_000_000) as u64;

/// One snapshot file, exactly: what `dump.bks` must be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SnapshotId {
    /// The log generation its replay starts at (its header's field).
    pub generation: u64,
    /// Its size in bytes.
    pub len: u64,
    /// Its trailing checksum (the XXH3-64 of every byte before it, as the file stores it).
    pub checksum: u64,
}

/// A finished log generation: how long it is and what it holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sealed {
    /// Its size in bytes.
    pub len: u64,
    /// XXH3-64 of the whole file.
    pub checksum: u64,
}

/// What a data directory must hold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Manifest {
    /// `dump.bks`, if there is one.
    pub snapshot: Option<SnapshotId>,
    /// A snapshot being installed: `dump.bks` may be this one instead.
    pub pending: Option<SnapshotId>,
    /// The oldest log generation listed: the snapshot's generation, or 1 without one.
    pub first_log: u64,
    /// Generations `first_log`, `first_log + 1`, ..., each finished.
    pub sealed: Vec<Sealed>,
}

impl Manifest {
    /// The generation being appended to: the one after the sealed ones.
    pub fn open_generation(&self) -> u64 {
        self.first_log + self.sealed.len() as u64
    }

    /// The sealed entry of `generation`, if it is a sealed one.
    pub fn sealed(&self, generation: u64) -> Option<Sealed> {
        let index = generation.checked_sub(self.first_log)?;
        self.sealed.get(usize::try_from(index).ok()?).copied()
    }

    /// The file's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(FIXED_LEN + SEALED_LEN * self.sealed.len() + 8);
        out.extend_from_slice(&MANIFEST_MAGIC);
        out.extend_from_slice(&MANIFEST_VERSION.to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(&self.first_log.to_le_bytes());
        out.extend_from_slice(&(self.sealed.len() as u64).to_le_bytes());
        for id in [self.snapshot, self.pending] {
            let id = id.unwrap_or(SnapshotId {
                generation: 0,
                len: 0,
                checksum: 0,
            });
            out.extend_from_slice(&id.generation.to_le_bytes());
            out.extend_from_slice(&id.len.to_le_bytes());
            out.extend_from_slice(&id.checksum.to_le_bytes());
        }
        for sealed in &self.sealed {
            out.extend_from_slice(&sealed.len.to_le_bytes());
            out.extend_from_slice(&sealed.checksum.to_le_bytes());
        }
        let sum = xxh3_64(&out);
        out.extend_from_slice(&sum.to_le_bytes());
        out
    }

    /// Parses a manifest, checking its framing, its checksum, and that what it says hangs
    /// together. The error is the offset of the problem and what it is.
    pub fn decode(bytes: &[u8]) -> Result<Manifest, (u64, String)> {
        if bytes.len() < FIXED_LEN + 8 {
            return Err((
                bytes.len() as u64,
                format!(
                    "the file is {} bytes long, shorter than the {} bytes of an empty manifest",
                    bytes.len(),
                    FIXED_LEN + 8
                ),
            ));
        }
        let u64_at = |at: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&bytes[at..at + 8]);
            u64::from_le_bytes(b)
        };
        let u32_at = |at: usize| {
            let mut b = [0u8; 4];
            b.copy_from_slice(&bytes[at..at + 4]);
            u32::from_le_bytes(b)
        };
        if bytes[..8] != MANIFEST_MAGIC {
            return Err((
                0,
                format!(
                    "not a bloomkit manifest (its first bytes are {:?}, expected {:?})",
                    String::from_utf8_lossy(&bytes[..8]),
                    String::from_utf8_lossy(&MANIFEST_MAGIC)
                ),
            ));
        }
        let version = u32_at(8);
        if version != MANIFEST_VERSION {
            return Err((
                8,
                format!(
                    "manifest format version {version}, but this build reads version \
                     {MANIFEST_VERSION}: run the bloomkit release that wrote it"
                ),
            ));
        }
        if u32_at(12) != 0 {
            return Err((12, "unknown manifest flags".to_string()));
        }
        let count = u64_at(24);
        let expected = u64::try_from(SEALED_LEN)
            .ok()
            .and_then(|entry| count.checked_mul(entry))
            .and_then(|entries| entries.checked_add((FIXED_LEN + 8) as u64));
        if expected != Some(bytes.len() as u64) {
            return Err((
                24,
                format!(
                    "the manifest lists {count} finished generations but is {} bytes long",
                    bytes.len()
                ),
            ));
        }
        let sum_at = bytes.len() - 8;
        let stored = u64_at(sum_at);
        let computed = xxh3_64(&bytes[..sum_at]);
        if stored != computed {
            return Err((
                sum_at as u64,
                format!(
                    "manifest checksum mismatch (stored {stored:#018x}, computed {computed:#018x})"
                ),
            ));
        }
        let id_at = |at: usize| {
            let id = SnapshotId {
                generation: u64_at(at),
                len: u64_at(at + 8),
                checksum: u64_at(at + 16),
            };
            (id.generation != 0).then_some(id)
        };
        let manifest = Manifest {
            first_log: u64_at(16),
            snapshot: id_at(32),
            pending: id_at(56),
            sealed: (0..count as usize)
                .map(|i| {
                    let at = FIXED_LEN + i * SEALED_LEN;
                    Sealed {
                        len: u64_at(at),
                        checksum: u64_at(at + 8),
                    }
                })
                .collect(),
        };
        manifest.check().map_err(|reason| (16, reason))?;
        Ok(manifest)
    }

    /// What a manifest this server writes always satisfies.
    fn check(&self) -> Result<(), String> {
        let open = self
            .first_log
            .checked_add(self.sealed.len() as u64)
            .filter(|_| self.first_log >= 1)
            .ok_or_else(|| format!("impossible first generation {}", self.first_log))?;
        match self.snapshot {
            Some(s) if s.generation != self.first_log => {
                return Err(format!(
                    "the snapshot starts replay at generation {} but the logs listed start at {}",
                    s.generation, self.first_log
                ))
            }
            None if self.first_log != 1 => {
                return Err(format!(
                    "no snapshot is listed, yet the logs listed start at generation {}",
                    self.first_log
                ))
            }
            _ => {}
        }
        if let Some(p) = self.pending {
            if p.generation < self.first_log || p.generation > open {
                return Err(format!(
                    "the snapshot being installed starts at generation {}, outside the logs \
                     listed ({} to {open})",
                    p.generation, self.first_log
                ));
            }
        }
        Ok(())
    }
}

/// Reads `dir`'s manifest: `Ok(None)` when there is none (a directory written before
/// manifests existed, or a new one).
///
/// # Errors
///
/// [`PersistError::CorruptManifest`] naming the file and the offset; [`PersistError::Io`].
pub fn read(dir: &Path) -> Result<Option<Manifest>, PersistError> {
    let path = dir.join(MANIFEST_FILE);
    let mut file = match dir::open_read(&path) {
        Ok(file) => file,
        Err(PersistError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            return Ok(None)
        }
        Err(e) => return Err(e),
    };
    let len = file
        .metadata()
        .map_err(|e| PersistError::io("stat", &path, e))?
        .len();
    let corrupt = |offset: u64, reason: String| PersistError::CorruptManifest {
        path: path.clone(),
        offset,
        reason,
    };
    if len > MAX_MANIFEST_LEN {
        return Err(corrupt(
            0,
            format!("the file is {len} bytes long, far larger than any manifest"),
        ));
    }
    let mut bytes = Vec::with_capacity(len as usize);
    file.read_to_end(&mut bytes)
        .map_err(|e| PersistError::io("read", &path, e))?;
    Manifest::decode(&bytes)
        .map(Some)
        .map_err(|(offset, reason)| corrupt(offset, reason))
}

/// Replaces `dir`'s manifest with `manifest`, durably: a temporary file, fsynced, renamed
/// over the old one, and the directory fsynced. A crash at any point leaves the old
/// manifest or the new one.
///
/// # Errors
///
/// [`PersistError::Io`] naming the file. If the rename was done but the directory fsync
/// failed, which of the two a crash would leave is unknown: the caller must treat that as
/// a failure of the directory, not retry as if nothing happened.
pub fn write(dir: &Path, manifest: &Manifest) -> Result<(), PersistError> {
    let temp = dir.join(MANIFEST_TEMP_FILE);
    let bytes = manifest.encode();
    let mut file = dir::open(
        &temp,
        OpenOptions::new().write(true).create(true).truncate(true),
        "create",
    )?;
    let written = file
        .write_all(&bytes)
        .map_err(|e| PersistError::io("write", &temp, e))
        .and_then(|()| {
            file.sync_all()
                .map_err(|e| PersistError::io("fsync", &temp, e))
        });
    if let Err(e) = written {
        let _ = fs::remove_file(&temp);
        return Err(e);
    }
    drop(file);
    let target = dir.join(MANIFEST_FILE);
    if let Err(e) = fs::rename(&temp, &target) {
        let _ = fs::remove_file(&temp);
        return Err(PersistError::io("rename", &temp, e));
    }
    dir::sync_dir(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Manifest {
        Manifest {
            snapshot: Some(SnapshotId {
                generation: 4,
                len: 1234,
                checksum: 0x1122_3344_5566_7788,
            }),
            pending: Some(SnapshotId {
                generation: 6,
                len: 99,
                checksum: 7,
            }),
            first_log: 4,
            sealed: vec![
                Sealed {
                    len: 24,
                    checksum: 1,
                },
                Sealed {
                    len: 1000,
                    checksum: 2,
                },
            ],
        }
    }

    #[test]
    fn a_manifest_round_trips_and_names_its_open_generation() {
        let m = sample();
        let bytes = m.encode();
        assert_eq!(bytes.len(), FIXED_LEN + 2 * SEALED_LEN + 8);
        assert_eq!(&bytes[..8], b"BKITMAN\n");
        assert_eq!(Manifest::decode(&bytes).unwrap(), m);
        assert_eq!(m.open_generation(), 6);
        assert_eq!(m.sealed(5).map(|s| s.len), Some(1000));
        assert_eq!(m.sealed(6), None);
        assert_eq!(m.sealed(3), None);
        let fresh = Manifest {
            snapshot: None,
            pending: None,
            first_log: 1,
            sealed: Vec::new(),
        };
        assert_eq!(Manifest::decode(&fresh.encode()).unwrap(), fresh);
    }

    #[test]
    fn every_truncation_and_byte_flip_is_refused_with_an_offset_inside_the_file() {
        let bytes = sample().encode();
        for cut in 0..bytes.len() {
            let (offset, _) = Manifest::decode(&bytes[..cut]).unwrap_err();
            assert!(offset <= bytes.len() as u64, "cut at {cut}");
        }
        for pos in 0..bytes.len() {
            let mut damaged = bytes.clone();
            damaged[pos] ^= 0x04;
            let (offset, reason) = Manifest::decode(&damaged).unwrap_err();
            assert!(offset < bytes.len() as u64, "flip at {pos}: {reason}");
        }
    }

    #[test]
    fn inconsistent_contents_are_refused_even_with_a_good_checksum() {
        let mut m = sample();
        m.first_log = 5; // the snapshot says 4
        assert!(Manifest::decode(&m.encode())
            .unwrap_err()
            .1
            .contains("starts replay at generation 4"));
        let mut m = sample();
        m.pending = Some(SnapshotId {
            generation: 9,
            len: 1,
            checksum: 1,
        });
        assert!(Manifest::decode(&m.encode())
            .unwrap_err()
            .1
            .contains("outside the logs listed"));
        let m = Manifest {
            snapshot: None,
            pending: None,
            first_log: 3,
            sealed: Vec::new(),
        };
        assert!(Manifest::decode(&m.encode()).is_err());
    }

    #[test]
    fn a_claimed_count_is_checked_against_the_size_before_anything_is_read() {
        let mut bytes = sample().encode();
        bytes[24..32].copy_from_slice(&u64::MAX.to_le_bytes());
        let (offset, reason) = Manifest::decode(&bytes).unwrap_err();
        assert_eq!(offset, 24);
        assert!(reason.contains("finished generations"), "{reason}");
    }

    #[test]
    fn writing_replaces_the_file_and_leaves_no_temporary_behind() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read(dir.path()).unwrap(), None);
        write(dir.path(), &sample()).unwrap();
        assert_eq!(read(dir.path()).unwrap(), Some(sample()));
        let mut next = sample();
        next.pending = None;
        write(dir.path(), &next).unwrap();
        assert_eq!(read(dir.path()).unwrap(), Some(next));
        assert!(!dir.path().join(MANIFEST_TEMP_FILE).exists());
        fs::write(dir.path().join(MANIFEST_FILE), b"").unwrap();
        match read(dir.path()) {
            Err(PersistError::CorruptManifest { offset: 0, .. }) => {}
            other => panic!("an emptied manifest must be an error: {other:?}"),
        }
    }
}
