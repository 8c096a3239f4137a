//! The log being appended to: its buffer, its file, and what happens when the disk fails.
//!
//! Records are encoded into a buffer under the log's mutex and written by whoever first
//! needs them on disk. Two kinds of failure stop writes, and they differ in what comes after:
//!
//! * **A `write` fails** (a full disk, `EPERM`, a read-only file system): nothing is lost yet.
//!   The file is cut back to its last whole record (or, if even that fails, the part that
//!   was written is kept and the rest follows it later), the buffer is kept whole, and every
//!   second the fsync thread tries again. Meanwhile write commands are refused before they
//!   run (`MISCONF`), so the buffer holds only what was already applied when the failure
//!   came; once a retry writes it, writes are accepted again. The records a failed `write`
//!   held belong to commands whose replies were waiting: those are answered with the error,
//!   never acknowledged.
//! * **The log cannot go on**: an fsync failed (the kernel may have dropped the pages it
//!   could not write, so nothing since the last good fsync can be trusted, and retrying
//!   would hide that), the file was unlinked (its directory removed: whatever is written to
//!   it is lost with the process), a command could not be encoded, or the server shut down.
//!   Writes are refused until a restart.
//!
//! Reads never wait for a failed log: a reply that only observes the keyspace waits for the
//! records that were written, not for those a failure holds back.

use std::collections::BTreeMap;
use std::fmt;
use std::fs::File;
use std::io::{self, Write};
use std::sync::atomic::Ordering;
use std::sync::{Arc, MutexGuard};

use xxhash_rust::xxh3::Xxh3Default;

pub mod format;
pub(crate) mod sync;
pub mod synced;

use synced::SyncedMark;

use crate::persist::manifest::{Manifest, Sealed, SnapshotId};
use crate::persist::{FsyncPolicy, Shared};

/// Buffered log bytes past which `append` writes them itself rather than wait for someone
/// to need them durable.
pub(crate) const PENDING_FLUSH_BYTES: usize = 1 << 20;

/// [`Shared::health`]: the log takes writes.
pub(crate) const HEALTHY: u8 = 0;
/// [`Shared::health`]: a `write` failed; the buffer is kept and retried.
pub(crate) const WRITE_FAILED: u8 = 1;
/// [`Shared::health`]: the log cannot go on until a restart.
pub(crate) const HALTED: u8 = 2;

/// Why the log stopped taking writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Failure {
    /// The cause in a few words, as Redis puts `strerror` in its `MISCONF` error.
    pub cause: String,
    /// Everything known: the file, the call, the OS error.
    pub detail: String,
}

impl Failure {
    /// A failed call on the log: `cause` is the OS's own words for the error, without the
    /// `(os error N)` that Rust adds.
    pub fn io(what: String, e: &io::Error) -> Failure {
        let text = e.to_string();
        let cause = match e.raw_os_error() {
            Some(code) => text
                .strip_suffix(&format!(" (os error {code})"))
                .unwrap_or(&text)
                .to_string(),
            None => text.clone(),
        };
        Failure {
            cause,
            detail: format!("{what}: {text}"),
        }
    }

    /// A failure with no OS error behind it.
    pub fn other(cause: &str, detail: String) -> Failure {
        Failure {
            cause: cause.to_string(),
            detail,
        }
    }

    /// Redis's error for a write command refused because the log cannot be written.
    pub fn misconf(&self) -> String {
        format!("MISCONF Errors writing to the AOF file: {}", self.cause)
    }

    /// The error for a reply that waited for records this failure holds back: the command
    /// ran, and what it changed or saw is not on disk.
    pub fn held_back(&self, retried: bool) -> String {
        let then = if retried {
            "; that is written once the disk accepts writes again, or lost if the server stops \
             first"
        } else {
            ", and records nothing more until the server is restarted"
        };
        format!(
            "{} (this command ran, but the log could not record what it changed or saw{then})",
            self.misconf()
        )
    }
}

/// The running XXH3-64 of a log file's bytes (a `Debug` wrapper).
#[derive(Clone)]
pub(crate) struct Checksum(pub Xxh3Default);

impl fmt::Debug for Checksum {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Checksum({:#018x})", self.0.digest())
    }
}

#[derive(Debug)]
pub(crate) struct LogState {
    /// The current generation's file, opened for appending. In an `Arc` so that the fsync
    /// thread can sync it without holding the mutex.
    pub file: Arc<File>,
    pub generation: u64,
    /// Bytes in the current generation's file.
    pub file_len: u64,
    /// `file_len` at the end of the last whole record: less than `file_len` only while a
    /// failed write left part of a record that could not be cut away.
    pub whole_len: u64,
    /// XXH3-64 of the `file_len` bytes: what the manifest records when the file is sealed.
    pub checksum: Checksum,
    /// Older generations not yet covered by a snapshot: generation → what it holds.
    pub closed: BTreeMap<u64, Sealed>,
    /// `dump.bks`, exactly, if there is one.
    pub snapshot: Option<SnapshotId>,
    /// Records appended since start-up, plus those found in the logs: tickets count these.
    pub written: u64,
    /// `written` at the cut of the last successful snapshot.
    pub saved: u64,
    /// Set while the buffer cannot be written: retried every second.
    pub write_error: Option<Failure>,
    /// Set when the log cannot go on (see the module documentation).
    pub halted: Option<Failure>,
    /// Records appended but not yet handed to the OS: encoded here under the mutex and
    /// written by whoever needs them on disk first ([`crate::persist::Persistence::durable`], the
    /// fsync thread, a snapshot's cut), so a connection's pipelined batch of writes costs
    /// one `write` system call instead of one per command (Redis's AOF buffer does the same).
    pub pending: Vec<u8>,
    /// How many records `pending` holds.
    pub pending_records: u64,
    /// Where an `EXEC`'s records stand.
    pub transaction: Transaction,
}

/// Where an `EXEC`'s records stand in the log (see [`crate::persist::Persistence::begin_transaction`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Transaction {
    /// No `EXEC` is running.
    None,
    /// An `EXEC` runs and has logged nothing yet: its `MULTI` record comes with its first
    /// record, so a transaction that changes nothing leaves nothing in the log.
    Begun,
    /// Its `MULTI` record is appended; its `EXEC` record closes it.
    Open,
}

impl LogState {
    pub fn total_bytes(&self) -> u64 {
        self.closed.values().map(|s| s.len).sum::<u64>() + self.file_len + self.pending.len() as u64
    }

    /// Records handed to the OS.
    pub fn flushed(&self) -> u64 {
        self.written - self.pending_records
    }

    /// Why the log takes no writes, if it does not.
    pub fn failure(&self) -> Option<&Failure> {
        self.halted.as_ref().or(self.write_error.as_ref())
    }

    /// The manifest of the directory as this state knows it.
    pub fn manifest(&self, pending: Option<SnapshotId>) -> Manifest {
        Manifest {
            snapshot: self.snapshot,
            pending,
            first_log: self
                .closed
                .keys()
                .next()
                .copied()
                .unwrap_or(self.generation),
            sealed: self.closed.values().copied().collect(),
        }
    }
}

/// When a write of the log checks that its file still has a name (an `fstat`), which it
/// must before any record it wrote is acknowledged.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum NameCheck {
    /// Under the log's mutex, right after the `write`.
    Now,
    /// Later, by whoever waits for the records ([`Shared::write_named`]), once the mutex is
    /// released: the other connections append meanwhile instead of waiting for the `fstat`
    /// (with 50 clients writing one command at a time, the check inside the mutex cost a
    /// quarter of the throughput).
    Later,
}

/// What [`Shared::write_pending`] found.
enum WriteOutcome {
    Written,
    /// A `write` failed: worth trying again.
    Failed(Failure),
    /// The file is gone: nothing written to it can be kept.
    Unlinked(Failure),
}

impl Shared {
    pub(crate) fn lock_log(&self) -> MutexGuard<'_, LogState> {
        // Nothing panics while holding it; if something ever did, the state is still
        // consistent between statements, so carry on rather than poison every writer.
        self.log.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Stops the log for good (called with its mutex held) and wakes every waiter.
    pub(crate) fn halt(&self, log: &mut LogState, failure: Failure) {
        if log.halted.is_none() {
            crate::log::warning(format_args!(
                "{}; writes are refused until the server is restarted",
                failure.detail
            ));
            self.sync.fail(failure.held_back(false));
            log.halted = Some(failure);
        }
        self.health.store(HALTED, Ordering::Release);
    }

    /// Writes the buffered records to the current generation's file (called with the log's
    /// mutex held), unless the log has failed. On a failed `write` the log starts refusing
    /// writes and keeps the buffer for the fsync thread to retry.
    pub(crate) fn flush_pending(
        &self,
        log: &mut LogState,
        check: NameCheck,
    ) -> Result<(), Failure> {
        if log.pending.is_empty() {
            return Ok(());
        }
        if let Some(failure) = log.failure() {
            return Err(failure.clone());
        }
        match self.write_pending(log, check) {
            WriteOutcome::Written => Ok(()),
            WriteOutcome::Failed(failure) => {
                crate::log::warn_limited("log write failed", || {
                    format!(
                        "{}; write commands are refused (MISCONF) until the log can be written \
                         again, retried every second",
                        failure.detail
                    )
                });
                log.write_error = Some(failure.clone());
                self.health.store(WRITE_FAILED, Ordering::Release);
                Err(failure)
            }
            WriteOutcome::Unlinked(failure) => {
                self.halt(log, failure.clone());
                Err(failure)
            }
        }
    }

    /// The fsync thread's retry after a failed `write`: writes the kept buffer, and if that
    /// works, accepts writes again. Returns whether it wrote anything.
    pub(crate) fn retry_pending(&self) -> bool {
        let mut guard = self.lock_log();
        let log = &mut *guard;
        if log.halted.is_some() || log.write_error.is_none() {
            return false;
        }
        match self.write_pending(log, NameCheck::Now) {
            WriteOutcome::Written => {
                log.write_error = None;
                self.health.store(HEALTHY, Ordering::Release);
                crate::log::warning(format_args!(
                    "the append-only log can be written again; write commands are accepted \
                     again (the log now ends at byte {} of {})",
                    log.file_len,
                    self.log_path(log.generation).display()
                ));
                true
            }
            // Still failing: the cause may have changed (a full disk, then a read-only one).
            WriteOutcome::Failed(failure) => {
                log.write_error = Some(failure);
                false
            }
            WriteOutcome::Unlinked(failure) => {
                self.halt(log, failure);
                false
            }
        }
    }

    /// Writes the log up to record `upto` (with everything buffered before it) and checks
    /// that the file it went to still has a name, so that those records may be
    /// acknowledged; the check runs once the log's mutex is released. On failure, the
    /// failure and whether a retry may still write the records (for
    /// [`Failure::held_back`]).
    pub(crate) fn write_named(&self, upto: u64) -> Result<(), (Failure, bool)> {
        let (file, flushed) = {
            let mut guard = self.lock_log();
            let log = &mut *guard;
            if upto > log.flushed() {
                let retried = log.halted.is_none();
                self.flush_pending(log, NameCheck::Later)
                    .map_err(|failure| (failure, retried))?;
            }
            (Arc::clone(&log.file), log.flushed())
        };
        if upto <= self.named.load(Ordering::Acquire) {
            // Another waiter checked meanwhile.
            return Ok(());
        }
        if !is_unlinked(&file) {
            self.named.fetch_max(flushed, Ordering::AcqRel);
            return Ok(());
        }
        let mut guard = self.lock_log();
        // A snapshot may have rotated the log meanwhile and, done, deleted the old
        // generation: then it is the current file that must still have a name.
        if Arc::ptr_eq(&guard.file, &file) || is_unlinked(&guard.file) {
            let failure = unlinked(&self.log_path(guard.generation));
            self.halt(&mut guard, failure.clone());
            return Err((failure, false));
        }
        self.named.fetch_max(flushed, Ordering::AcqRel);
        Ok(())
    }

    /// One attempt at writing the buffer, keeping the file at a record boundary when the
    /// `write` fails; with [`NameCheck::Now`], then checks that the file still has a name.
    fn write_pending(&self, log: &mut LogState, check: NameCheck) -> WriteOutcome {
        if log.pending.is_empty() {
            return WriteOutcome::Written;
        }
        // The path only names a failure: formatting it costs more than the write's own work.
        let path = || self.log_path(log.generation);
        let mut done = 0;
        let failed = loop {
            if done == log.pending.len() {
                break None;
            }
            match self.write_hook(&log.file, &log.pending[done..]) {
                Ok(0) => break Some(io::Error::from(io::ErrorKind::WriteZero)),
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => break Some(e),
            }
        };
        if let Some(e) = failed {
            let what = format!("a write to {} failed", path().display());
            if done > 0 {
                // Half a record followed by a later, whole one would be damage in the middle
                // of the log, which start-up (rightly) refuses: take the part back. If even
                // that fails, keep it and let the rest of the buffer follow it: the file then
                // holds exactly the bytes it should, only fewer of them.
                if let Err(undo) = self.truncate_hook(&log.file, log.file_len) {
                    log.checksum.0.update(&log.pending[..done]);
                    log.file_len += done as u64;
                    log.pending.drain(..done);
                    let failure = Failure::io(
                        format!(
                            "{what} after {done} bytes, which could not be taken back ({undo}) \
                             and stay: the rest follows them when a write succeeds"
                        ),
                        &e,
                    );
                    return WriteOutcome::Failed(failure);
                }
            }
            return WriteOutcome::Failed(Failure::io(what, &e));
        }
        // Written, but to a file that no longer has a name (its directory was removed)?
        // Then none of it would come back after a restart: not one of these records may be
        // acknowledged. Checked after the write, so a record acknowledged went to a file
        // that was still there once it had been written.
        if check == NameCheck::Now && is_unlinked(&log.file) {
            return WriteOutcome::Unlinked(unlinked(&path()));
        }
        log.checksum.0.update(&log.pending);
        log.file_len += log.pending.len() as u64;
        log.whole_len = log.file_len;
        log.pending.clear();
        log.pending_records = 0;
        self.flushed.store(log.written, Ordering::Release);
        if check == NameCheck::Now {
            self.named.fetch_max(log.written, Ordering::AcqRel);
        }
        // A 512 MiB LOADCHUNK should not keep its buffer for the life of the server.
        if log.pending.capacity() > PENDING_FLUSH_BYTES * 2 {
            log.pending = Vec::new();
        }
        WriteOutcome::Written
    }

    /// `write(2)` on the log, or the failure a test put in its place.
    fn write_hook(&self, mut file: &File, bytes: &[u8]) -> io::Result<usize> {
        #[cfg(test)]
        if let Some(fault) = self.faults.next_write(bytes.len()) {
            return match fault {
                Ok(n) => file.write(&bytes[..n]),
                Err(e) => Err(e),
            };
        }
        file.write(bytes)
    }

    /// `ftruncate(2)` on the log, or the failure a test put in its place.
    fn truncate_hook(&self, file: &File, len: u64) -> io::Result<()> {
        #[cfg(test)]
        if let Some(e) = self.faults.undo_error() {
            return Err(e);
        }
        file.set_len(len)
    }

    /// Fsyncs the current generation, covering every record written so far (not those a
    /// failed `write` holds back), and tells the waiters. An fsync failure halts the log.
    pub(crate) fn fsync_log(&self) -> Result<(), Failure> {
        let (target, mark, file) = {
            let mut guard = self.lock_log();
            let log = &mut *guard;
            if let Some(failure) = &log.halted {
                return Err(failure.clone());
            }
            // A failed write is kept for the retry; what was written before it still needs
            // its fsync.
            let _ = self.flush_pending(log, NameCheck::Now);
            let mark = SyncedMark {
                generation: log.generation,
                len: log.whole_len,
            };
            (log.flushed(), mark, Arc::clone(&log.file))
        };
        // Without the mutex: appends go on while the disk works, and the next round's
        // fsync covers them (group commit).
        match self.fsync_file(&file) {
            Ok(()) => {
                self.fsyncs.fetch_add(1, Ordering::Relaxed);
                self.sync.synced(target);
                self.record_synced(mark);
                Ok(())
            }
            Err(e) => {
                let path = self.log_path(mark.generation);
                let failure = Failure::io(format!("fsync of {} failed", path.display()), &e);
                let mut log = self.lock_log();
                self.halt(&mut log, failure.clone());
                Err(failure)
            }
        }
    }

    /// Fsyncs a log file, one fsync at a time; fails, without trying, once any fsync of the
    /// log has failed (see `fsync_serial`).
    pub(crate) fn fsync_file(&self, file: &File) -> io::Result<()> {
        let _serial = self.fsync_serial.lock().unwrap_or_else(|e| e.into_inner());
        if self.fsync_failed.load(Ordering::Acquire) {
            return Err(io::Error::other(
                "an earlier fsync of the log failed; what it covered may be lost",
            ));
        }
        file.sync_data().inspect_err(|_| {
            self.fsync_failed.store(true, Ordering::Release);
        })
    }

    /// Notes in `SYNCED` that `mark` is on disk.
    pub(crate) fn record_synced(&self, mark: SyncedMark) {
        self.synced
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .record(mark);
    }

    /// What the fsync thread does once a second: retry a failed write, fsync for
    /// `everysec`, and notice a log file that was deleted while nobody wrote to it.
    pub(crate) fn tick(&self) {
        let retried = self.retry_pending();
        let unsynced = self.lock_log().flushed() > self.sync.upto();
        let fsync = match self.policy {
            FsyncPolicy::Always => retried && unsynced,
            FsyncPolicy::EverySec => unsynced,
            FsyncPolicy::No => false,
        };
        if fsync {
            let _ = self.fsync_log();
        }
        let file = Arc::clone(&self.lock_log().file);
        if is_unlinked(&file) {
            let mut guard = self.lock_log();
            // Still the same file (a snapshot's rotation may have replaced it meanwhile).
            if Arc::ptr_eq(&guard.file, &file) {
                let path = self.log_path(guard.generation);
                self.halt(&mut guard, unlinked(&path));
            }
        }
    }

    /// The line to refuse a write command with, while the log takes none.
    pub(crate) fn refusal(&self) -> Option<String> {
        if self.health.load(Ordering::Acquire) == HEALTHY {
            return None;
        }
        self.lock_log().failure().map(Failure::misconf)
    }
}

/// Whether `file` has lost its last name: deleted, or its directory removed.
fn is_unlinked(file: &File) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        file.metadata().is_ok_and(|m| m.nlink() == 0)
    }
    #[cfg(not(unix))]
    {
        let _ = file;
        false
    }
}

fn unlinked(path: &std::path::Path) -> Failure {
    Failure::other(
        "the log file was deleted",
        format!(
            "the log file {} was deleted (or its data directory removed) while the server was \
             running: what is written to it would be lost with the process",
            path.display()
        ),
    )
}

/// A disk that fills up, for the unit tests: the log's `write` and `ftruncate` calls go
/// through it, and a test decides when they fail. (`scripts/disk_faults.sh` does the same
/// with a real, full file system.)
#[cfg(test)]
#[derive(Debug, Default)]
pub(crate) struct Faults {
    state: std::sync::Mutex<FaultState>,
}

#[cfg(test)]
#[derive(Debug, Default)]
struct FaultState {
    /// Bytes the "disk" still takes; `None`: no limit.
    space: Option<usize>,
    /// The error once it is full.
    errno: i32,
    /// Whether cutting a partial write back fails too.
    undo_fails: bool,
}

#[cfg(test)]
impl Faults {
    /// From now on, `space` more bytes are written, then every `write` fails with `errno`.
    pub fn fill(&self, space: usize, errno: i32) {
        let mut s = self.state.lock().unwrap();
        s.space = Some(space);
        s.errno = errno;
    }

    /// The disk has room again.
    pub fn free(&self) {
        self.state.lock().unwrap().space = None;
    }

    /// Whether `ftruncate` fails too.
    pub fn set_undo_fails(&self, fails: bool) {
        self.state.lock().unwrap().undo_fails = fails;
    }

    fn next_write(&self, len: usize) -> Option<io::Result<usize>> {
        let mut s = self.state.lock().unwrap();
        let space = s.space?;
        if space == 0 {
            return Some(Err(io::Error::from_raw_os_error(s.errno)));
        }
        let n = len.min(space);
        s.space = Some(space - n);
        Some(Ok(n))
    }

    fn undo_error(&self) -> Option<io::Error> {
        let s = self.state.lock().unwrap();
        (s.undo_fails && s.space == Some(0)).then(|| io::Error::from_raw_os_error(s.errno))
    }
}
