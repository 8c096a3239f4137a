//! Taking a snapshot: the cut (a log rotation under the keyspace's locks, recorded in the
//! manifest), then the write (temp file, fsync, a manifest that allows it, rename, directory
//! fsync, a manifest that names it, removal of the covered logs).
//!
//! Why each crash point is safe, in the order the steps run:
//!
//! | crash after | on disk | recovery |
//! |---|---|---|
//! | creating the next generation | the old manifest, an unlisted log holding a header | removes it; old snapshot + every log |
//! | the cut | old snapshot, every log, a new empty generation | old snapshot + every log |
//! | writing `dump.<g>.tmp` (complete or not) | the same + the temp file | removes the temp file; old snapshot + every log |
//! | the manifest that allows it | the same | the same |
//! | the rename, before the directory fsync | old or new `dump.bks` | either is one the manifest knows exactly |
//! | the manifest that names it / some removals | new snapshot + logs it covers | removes the covered logs; new snapshot + newer logs |

use std::borrow::Borrow;
use std::fs::{self, OpenOptions};
use std::io::BufWriter;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use bloomkit_commands::Value;
use bytes::Bytes;

use xxhash_rust::xxh3::Xxh3Default;

use super::{SnapshotHeader, SnapshotWriter};
use crate::persist::dir::{self, DIR_FSYNC};
use crate::persist::error::PersistError;
use crate::persist::files::{temp_snapshot_name, SNAPSHOT_FILE};
use crate::persist::log::format::{log_header, LOG_HEADER_LEN};
use crate::persist::log::synced::SyncedMark;
use crate::persist::log::{Checksum, Failure, NameCheck, Transaction};
use crate::persist::manifest::{self, Sealed, SnapshotId};
use crate::persist::recovery::create_log;
use crate::persist::{unix_ms, Shared};

/// A snapshot's cut: the log generation where replay of this snapshot will start, taken by
/// [`crate::persist::Persistence::begin_snapshot`]. Write it with [`SnapshotCut::write`]; dropping it
/// unwritten abandons the snapshot (the old one and every log still hold everything).
///
/// It owns what it needs, so it can be moved into `spawn_blocking`.
#[derive(Debug)]
pub struct SnapshotCut {
    shared: Arc<Shared>,
    /// The first generation after the cut.
    generation: u64,
    /// Records logged before the cut.
    written: u64,
    started: Instant,
    created_unix_ms: u64,
}

/// Where a test stops [`SnapshotCut::write`], as if the process died there.
#[cfg_attr(not(test), allow(dead_code))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CrashPoint {
    /// The temp file half written, not synced.
    MidTemp,
    /// The temp file complete and synced, not renamed.
    BeforeRename,
    /// The manifest allows the new snapshot, which is not renamed yet.
    BeforeSnapshotRename,
    /// Renamed over `dump.bks`, directory not synced, no log removed.
    AfterRename,
    /// Renamed and synced, the manifest not yet rewritten without the covered logs.
    BeforeManifest,
    /// The oldest covered log removed, the others not.
    MidRemoval,
}

pub(crate) fn begin(shared: &Arc<Shared>) -> Result<SnapshotCut, PersistError> {
    if shared
        .snapshot_running
        .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
        .is_err()
    {
        return Err(PersistError::SnapshotInProgress);
    }
    // From here on the cut's Drop clears the flag, on every path.
    let mut cut = SnapshotCut {
        shared: Arc::clone(shared),
        generation: 0,
        written: 0,
        started: Instant::now(),
        created_unix_ms: unix_ms(),
    };
    let mut guard = shared.lock_log();
    let log = &mut *guard;
    if let Some(failure) = log.failure() {
        return Err(PersistError::LogFailed {
            reason: failure.detail.clone(),
        });
    }
    // A transaction's records stay in one generation (the keyspace's gate keeps snapshots
    // out of an `EXEC`; this keeps any other caller out too).
    if log.transaction != Transaction::None {
        return Err(PersistError::LogFailed {
            reason: "a transaction is being logged; take the snapshot after its EXEC".to_string(),
        });
    }
    // A generation without a record yet can be where replay starts: everything before it
    // is in older generations, all of them finished. No file is added then.
    if log.pending.is_empty() && log.file_len == LOG_HEADER_LEN as u64 {
        cut.generation = log.generation;
        cut.written = log.written;
        return Ok(cut);
    }
    let old_path = shared.log_path(log.generation);
    // Records still buffered belong to the outgoing generation: the snapshot's values
    // include them.
    if let Err(failure) = shared.flush_pending(log, NameCheck::Now) {
        return Err(PersistError::LogFailed {
            reason: failure.detail,
        });
    }
    // Every generation but the last must be complete on disk: recovery treats damage in
    // them as corruption, not as a torn tail.
    if let Err(e) = shared.fsync_file(&log.file) {
        let failure = Failure::io(format!("fsync of {} failed", old_path.display()), &e);
        shared.halt(log, failure);
        return Err(PersistError::io("fsync", old_path, e));
    }
    shared.fsyncs.fetch_add(1, Ordering::Relaxed);
    let next = log.generation + 1;
    let next_path = shared.log_path(next);
    let file = match create_log(&shared.dir, next) {
        Ok(file) => file,
        Err(e) => {
            // Nothing lists it and nothing was appended to it: a half-made file would only
            // stand in the way of the next cut.
            let _ = fs::remove_file(&next_path);
            return Err(e);
        }
    };
    // The outgoing generation is finished: its length and checksum go into the manifest,
    // with the new one as the generation being written. Written before any record reaches
    // the new file, so a crash leaves either manifest, each true of what is on disk.
    let sealed = Sealed {
        len: log.file_len,
        checksum: log.checksum.0.digest(),
    };
    let mut next_manifest = log.manifest(None);
    next_manifest.sealed.push(sealed);
    if let Err(e) = manifest::write(&shared.dir, &next_manifest) {
        if matches!(&e, PersistError::Io { op, .. } if *op == DIR_FSYNC) {
            // The new manifest is in place but perhaps not durably: after a crash the
            // directory may show either. Going on in the old generation would outgrow the
            // length the new one records; going on in the new one could lose what is
            // appended to it. Neither is safe: stop.
            let failure = Failure::other(
                "the data directory could not be fsynced",
                format!("{e} while a new log generation was being started"),
            );
            shared.halt(log, failure);
        } else {
            // The old manifest stands: appends carry on in the old generation, and the
            // new file, which nothing lists, goes.
            let _ = fs::remove_file(&next_path);
        }
        return Err(e);
    }
    log.closed.insert(log.generation, sealed);
    log.file = Arc::new(file);
    log.generation = next;
    log.file_len = LOG_HEADER_LEN as u64;
    log.whole_len = LOG_HEADER_LEN as u64;
    let mut checksum = Xxh3Default::new();
    checksum.update(&log_header(next));
    log.checksum = Checksum(checksum);
    cut.generation = next;
    cut.written = log.written;
    drop(guard);
    // Everything before the cut was just fsynced: wake anyone waiting for it.
    shared.sync.synced(cut.written);
    // And the new generation's header is on disk.
    shared.record_synced(SyncedMark {
        generation: next,
        len: LOG_HEADER_LEN as u64,
    });
    Ok(cut)
}

impl SnapshotCut {
    /// The generation replay of this snapshot starts from.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Writes the snapshot of `entries` (key, expiry in Unix ms, value: what the keyspace
    /// held at the cut) and retires the logs it covers. Blocking: run it on a blocking thread.
    ///
    /// Writes `dump.<generation>.tmp`, fsyncs it, writes a manifest that allows it, renames
    /// it over `dump.bks`, fsyncs the directory, writes a manifest that names it, then
    /// removes every log generation before the cut. Updates the figures in
    /// [`crate::persist::Persistence::stats`] either way.
    ///
    /// # Errors
    ///
    /// [`PersistError::Io`] naming the file; the temp file is removed, and the previous
    /// snapshot and every log are left as they were, so nothing is lost. A key over 512 MiB
    /// is an `Io` error of kind `InvalidInput`. If only the last manifest fails, the new
    /// snapshot is in place and the covered logs are kept (the manifest on disk still lists
    /// them); the next start-up removes them.
    pub fn write<I, V>(self, entries: I) -> Result<(), PersistError>
    where
        I: IntoIterator<Item = (Bytes, Option<u64>, V)>,
        V: Borrow<Value>,
    {
        self.write_until(entries, None)
    }

    /// [`SnapshotCut::write`], stopping at `crash` as if the process died there (tests).
    pub(crate) fn write_until<I, V>(
        self,
        entries: I,
        crash: Option<CrashPoint>,
    ) -> Result<(), PersistError>
    where
        I: IntoIterator<Item = (Bytes, Option<u64>, V)>,
        V: Borrow<Value>,
    {
        let shared = Arc::clone(&self.shared);
        // Held for the whole write, renames and removals included: `Persistence::close`
        // takes it to release the directory, so it waits for a snapshot in progress, and a
        // snapshot never touches a directory its server has let go of (another server may
        // own it by then).
        let dir_lock = shared.lock.lock().unwrap_or_else(|e| e.into_inner());
        if dir_lock.is_none() {
            return Err(PersistError::LogFailed {
                reason: "the server has shut down; the snapshot was not written".to_string(),
            });
        }
        let dir = shared.dir.as_path();
        let temp = dir.join(temp_snapshot_name(self.generation));
        let result = (|| -> Result<Option<SnapshotId>, PersistError> {
            let io = |e| PersistError::io("write", &temp, e);
            let file = dir::open(
                &temp,
                OpenOptions::new().write(true).create(true).truncate(true),
                "create",
            )?;
            let header = SnapshotHeader {
                log_generation: self.generation,
                created_unix_ms: self.created_unix_ms,
            };
            let mut w =
                SnapshotWriter::new(BufWriter::with_capacity(1 << 20, file), header).map_err(io)?;
            for (key, expires_at_ms, value) in entries {
                w.write_entry(&key, expires_at_ms, value.borrow())
                    .map_err(io)?;
            }
            let (file, checksum) = w.finish_with_checksum().map_err(io)?;
            let file = file.into_inner().map_err(|e| io(e.into_error()))?;
            if crash == Some(CrashPoint::MidTemp) {
                let len = file.metadata().map_err(io)?.len();
                file.set_len(len / 2).map_err(io)?;
                return Ok(None);
            }
            file.sync_all()
                .map_err(|e| PersistError::io("fsync", &temp, e))?;
            let bytes = file
                .metadata()
                .map_err(|e| PersistError::io("stat", &temp, e))?
                .len();
            if crash == Some(CrashPoint::BeforeRename) {
                return Ok(None);
            }
            let id = SnapshotId {
                generation: self.generation,
                len: bytes,
                checksum,
            };
            // The manifest first allows the new file, then the rename installs it: a crash
            // between them leaves `dump.bks` either old or new, each known exactly.
            let pending = shared.lock_log().manifest(Some(id));
            manifest::write(dir, &pending)?;
            if crash == Some(CrashPoint::BeforeSnapshotRename) {
                return Ok(None);
            }
            let target = dir.join(SNAPSHOT_FILE);
            fs::rename(&temp, &target).map_err(|e| PersistError::io("rename", &temp, e))?;
            if crash == Some(CrashPoint::AfterRename) {
                return Ok(None);
            }
            dir::sync_dir(dir)?;
            Ok(Some(id))
        })();

        let id = match result {
            Ok(Some(id)) => id,
            // A simulated crash: nothing after this point happens, not even bookkeeping.
            Ok(None) => return Ok(()),
            Err(e) => {
                let _ = fs::remove_file(&temp);
                let mut saves = shared.lock_saves();
                saves.last_ok = false;
                saves.last_error = Some(e.to_string());
                saves.last_failed_at = Some(Instant::now());
                saves.last_duration_ms = Some(self.elapsed_ms());
                return Err(e);
            }
        };

        // The new snapshot is durable: the generations before the cut are redundant. The
        // manifest says so before they go.
        let (covered, installed) = {
            let mut log = shared.lock_log();
            let keep = log.closed.split_off(&self.generation);
            let covered = std::mem::replace(&mut log.closed, keep);
            log.saved = self.written;
            log.snapshot = Some(id);
            let installed = log.manifest(None);
            (covered.into_keys().collect::<Vec<u64>>(), installed)
        };
        if crash == Some(CrashPoint::BeforeManifest) {
            return Ok(());
        }
        if let Err(e) = manifest::write(dir, &installed) {
            // The manifest on disk still allows this snapshot (as the one being installed)
            // and still lists the covered generations: keep them, and say the save failed.
            let mut saves = shared.lock_saves();
            saves.last_ok = false;
            saves.last_error = Some(e.to_string());
            saves.last_failed_at = Some(Instant::now());
            saves.last_duration_ms = Some(self.elapsed_ms());
            saves.snapshot_bytes = id.len;
            return Err(e);
        }
        let bytes = id.len;
        {
            let mut saves = shared.lock_saves();
            saves.last_save_unix = unix_ms() / 1000;
            saves.last_ok = true;
            saves.last_error = None;
            saves.last_failed_at = None;
            saves.last_duration_ms = Some(self.elapsed_ms());
            saves.snapshot_bytes = bytes;
        }
        // Unlinked without the log mutex: appends need not wait for the file system. A
        // removal that fails (or a crash before it) leaves a covered log that the next
        // start-up removes.
        for (i, g) in covered.iter().enumerate() {
            if crash == Some(CrashPoint::MidRemoval) && i == 1 {
                return Ok(());
            }
            let _ = fs::remove_file(shared.log_path(*g));
        }
        drop(dir_lock);
        Ok(())
    }

    fn elapsed_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }
}

impl Drop for SnapshotCut {
    fn drop(&mut self) {
        self.shared.snapshot_running.store(false, Ordering::Release);
    }
}
