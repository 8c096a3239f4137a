//! Persistence: an append-only log of every change plus snapshots, so that nothing
//! acknowledged is lost.
//!
//! This module knows files, not keys: the keyspace hands it commands to log and, for a
//! snapshot, its entries; it hands back what start-up must load. Formats, byte by byte, and
//! the recovery rules are in `docs/PERSISTENCE.md`.
//!
//! # How the keyspace uses it
//!
//! **Start-up.** [`Persistence::open`] locks the data directory, checks the snapshot and
//! every log record (against the directory's manifest: every file it lists, each finished
//! log's length and checksum), cuts a torn tail from the last log, and returns a
//! [`Recovery`]: load
//! [`Recovery::take_entries`] into the keyspace, replay [`Recovery::for_each_command`]
//! through the command dispatcher (with an unlimited memory budget), log
//! [`Recovery::warnings`]. Any other damage is a [`PersistError`] that names the file and the
//! byte offset; start-up must stop then, never carry on without the data.
//!
//! **Each write command**, in this order:
//!
//! 1. take the key's shard lock, run the command;
//! 2. [`Persistence::append`] its [`bloomkit_commands::Outcome::log`] while still holding the
//!    lock, so the log's order is the order in which commands changed each key. `append` only
//!    encodes into the log's buffer under a mutex (no system call, no fsync), and returns a
//!    [`Ticket`];
//! 3. release the lock;
//! 4. `persistence.durable(ticket).await`: it first writes the buffer up to the ticket to the
//!    file (one `write` for everything buffered), then, with [`FsyncPolicy::Always`],
//!    resolves once an fsync that covers the record has completed; with the other policies
//!    at once. A reply that only observes the keyspace waits for
//!    [`Persistence::observed_position`] the same way;
//! 5. send the reply. An error from `append` or `durable` means the write may not be on disk:
//!    answer the error's text (Redis's `MISCONF ...`), never `OK`.
//!
//! Before a write command runs, ask [`Persistence::write_refusal`]: while the log cannot be
//! written it gives the `MISCONF` line to refuse the command with, so that the keyspace
//! changes only while the log can record it. A failed `write` is retried once a second; once
//! it succeeds the refusal ends.
//!
//! ```no_run
//! # use bloomkit_server::persist::{FsyncPolicy, Persistence};
//! # use bytes::Bytes;
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let (persistence, mut recovery) =
//!     Persistence::open("bloomkit-data".as_ref(), FsyncPolicy::Always)?;
//! for entry in recovery.take_entries() {
//!     // keyspace.insert(entry.key, entry.expires_at_ms, entry.value)
//! }
//! recovery.for_each_command(|args| {
//!     // dispatch(args, &Unlimited).map_err(|reply| format!("{reply:?}"))
//!     Ok(())
//! })?;
//! for warning in recovery.warnings() {
//!     eprintln!("warning: {warning}");
//! }
//!
//! // A write: append under the key's lock, wait for durability after releasing it.
//! let ticket = {
//!     // let shard = keyspace.lock(key); let outcome = cmd.write(slot, &ctx);
//!     let log = vec![vec![Bytes::from("BF.ADD"), Bytes::from("k"), Bytes::from("x")]];
//!     persistence.append(&log)?
//! };
//! persistence.durable(ticket).await?;
//! // reply
//! # Ok(()) }
//! ```
//!
//! **Snapshots** (`SAVE`, `BGSAVE`, and when [`Persistence::should_auto_snapshot`] says so):
//!
//! 1. take every shard lock (in index order), clone the `Arc<Value>`s, and call
//!    [`Persistence::begin_snapshot`] while holding them: it switches the log to a new
//!    generation, so every command logged from now on is after the cut. It fsyncs the
//!    outgoing generation; with `no`, call [`Persistence::sync`] just before taking the
//!    locks so that the fsync under them has little left to write;
//! 2. release the locks: writers carry on (copy-on-write on the `Arc`s);
//! 3. on a blocking thread, [`SnapshotCut::write`] the clones: it writes `dump.<gen>.tmp`,
//!    fsyncs it, renames it over `dump.bks`, fsyncs the directory, and deletes the log
//!    generations the snapshot now covers. A crash at any point leaves either the old
//!    snapshot and every log, or the new snapshot and the logs after it.
//!
//! **Shutdown**: [`Persistence::close`] once the clients are gone: it writes and fsyncs what
//! is buffered, refuses later appends, waits for a snapshot being written, and releases the
//! directory (dropping the `Persistence` also syncs, ignoring errors).
//!
//! # The files
//!
//! The data directory's files and their names are listed once, in [`files`]: a lock, the
//! manifest, `SYNCED`, one log file per generation, the snapshot and the temporary files
//! that are renamed over them.
//!
//! The module's own files, grouped by what they write:
//!
//! | file | what it does |
//! |---|---|
//! | `mod.rs` | [`Persistence`], the public face: open, append, durable, snapshots, close |
//! | `files.rs` | every file name of the data directory |
//! | `dir.rs` | the directory: listing it, its lock, opening its files, directory fsyncs |
//! | `log/mod.rs` | the log being appended to: its buffer, writes, failures |
//! | `log/format.rs` | the log's record format, and the scan that tells a torn tail from damage |
//! | `log/sync.rs` | the fsync thread, group commit |
//! | `log/synced.rs` | `SYNCED`, how far the log was last fsynced |
//! | `snapshot/mod.rs` | the snapshot's format, writer and reader |
//! | `snapshot/save.rs` | a snapshot's cut, and writing it into place |
//! | `manifest.rs` | `MANIFEST`, what the directory must hold |
//! | `recovery.rs` | start-up: checking everything, cutting a torn tail, the files to carry on with |
//! | `journal.rs` | [`Persistence`] as the keyspace's [`Journal`](crate::keyspace::Journal) |
//! | `error.rs` | [`PersistError`], each naming the file and the offset |
//!
//! # Why it is built this way
//!
//! * **Group commit.** With `always`, an fsync takes milliseconds; one per command would cap
//!   a server at a few hundred writes a second. Instead a dedicated thread fsyncs in a loop
//!   whenever someone waits, and one fsync covers every record written before it began: 50
//!   clients writing at once share one fsync, not 50.
//! * **Generations instead of truncation.** A snapshot cannot truncate the log it is cut
//!   from (writers keep appending to it), and rewriting a log while it grows needs a second
//!   buffer. Switching to a new file at the cut is O(1) under the keyspace's locks, and
//!   deleting whole older files afterwards is atomic per file.
//! * **A buffer before the file.** Appends are encoded under the log's mutex and written by
//!   whoever first needs them on disk (a reply's `durable`, the fsync thread, a snapshot
//!   cut): pipelined writes cost one `write` system call per batch, not one per command, as
//!   with Redis's AOF buffer. An acknowledged write has always reached the kernel.
//! * **A dedicated thread, not `spawn_blocking`, for fsync**: fsyncs are serialized anyway
//!   (one covers all before it), and a thread that lives as long as the log needs no runtime,
//!   so the same code serves tests and the replay before the runtime starts serving. It also
//!   retries a failed `write` once a second, whatever the policy.
//! * **A manifest, not a trailer in each file**: a trailer proves a file finished, but not
//!   that the newest file, or the snapshot, is still there; the manifest says what the whole
//!   directory must hold, and it is replaced atomically (rename) at the few moments the set
//!   of files changes: a rotation, a snapshot, a start-up.
//! * **Degrade, do not stop, on a failed `write`**: the buffer is kept and retried, and write
//!   commands are refused before they run (Redis's `MISCONF`), so the keyspace never runs
//!   ahead of the log by more than what was running at the failure; reads go on. (`log/mod.rs`
//!   says why a failed fsync is different: it stops the log until a restart.)

mod dir;
mod error;
pub mod files;
mod journal;
pub mod log;
pub mod manifest;
mod recovery;
pub mod snapshot;

use std::fmt;
use std::fs::File;
use std::future::Future;
use std::io;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bloomkit_commands::Record;
use bytes::Bytes;

pub use error::PersistError;
pub use files::{log_file_name, LOCK_FILE, MANIFEST_FILE, SNAPSHOT_FILE, SYNCED_FILE};
pub use journal::PersistentJournal;
pub use recovery::Recovery;
pub use snapshot::save::SnapshotCut;
pub use snapshot::SnapshotEntry;

use log::format as aof;
use log::sync::SyncControl;
use log::synced::SyncedFile;
use log::{
    Checksum, Failure, LogState, NameCheck, Transaction as LogTransaction, HALTED, HEALTHY,
    PENDING_FLUSH_BYTES,
};

/// When the log is fsynced: `--appendfsync`, with Redis's names and meanings.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum FsyncPolicy {
    /// `always`: a write is acknowledged only once an fsync covering it has completed, so it
    /// survives `kill -9` and power loss. Concurrent writes share fsyncs (group commit).
    Always,
    /// `everysec` (the default): a background thread fsyncs once a second; a power loss may
    /// lose the last second of acknowledged writes, a `kill -9` loses none (they are in the
    /// kernel's page cache).
    #[default]
    EverySec,
    /// `no`: the kernel writes the log when it likes (typically within 30 s). Snapshots,
    /// log rotation and shutdown still fsync, since the directory's structure depends on it.
    No,
}

impl FsyncPolicy {
    /// The name `--appendfsync` and `CONFIG GET appendfsync` use.
    pub fn as_str(self) -> &'static str {
        match self {
            FsyncPolicy::Always => "always",
            FsyncPolicy::EverySec => "everysec",
            FsyncPolicy::No => "no",
        }
    }
}

impl fmt::Display for FsyncPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The error for an `--appendfsync` value that is not a policy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParsePolicyError(String);

impl fmt::Display for ParsePolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid fsync policy {:?}: expected always, everysec or no",
            self.0
        )
    }
}

impl std::error::Error for ParsePolicyError {}

impl FromStr for FsyncPolicy {
    type Err = ParsePolicyError;

    /// Parses `always`, `everysec` or `no`, in any case (as Redis does).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.eq_ignore_ascii_case("always") {
            Ok(FsyncPolicy::Always)
        } else if s.eq_ignore_ascii_case("everysec") {
            Ok(FsyncPolicy::EverySec)
        } else if s.eq_ignore_ascii_case("no") {
            Ok(FsyncPolicy::No)
        } else {
            Err(ParsePolicyError(s.to_string()))
        }
    }
}

/// A place in the log, returned by [`Persistence::append`]: pass it to
/// [`Persistence::durable`] to wait until everything up to it is on disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Ticket(u64);

impl Ticket {
    /// The ticket's place in the log: the number of records appended up to it.
    pub fn sequence(self) -> u64 {
        self.0
    }

    /// The ticket for a place returned by [`Ticket::sequence`] (for a caller that carries
    /// tickets as plain numbers, such as the keyspace's journal seam).
    pub fn from_sequence(sequence: u64) -> Ticket {
        Ticket(sequence)
    }
}

/// The log size below which [`Persistence::should_auto_snapshot`] never fires: Redis's
/// `auto-aof-rewrite-min-size`.
pub const AUTO_SNAPSHOT_MIN_LOG_BYTES: u64 = 64 * 1024 * 1024;

/// The failure a closed log reports to late appenders.
const SHUT_DOWN: &str = "the server has shut down";

/// How long after a failed snapshot [`Persistence::should_auto_snapshot`] waits before it
/// suggests another (Redis waits 5 s after a failed `BGSAVE` too): a full disk should not be
/// hammered in a loop.
const AUTO_SNAPSHOT_RETRY_DELAY: Duration = Duration::from_secs(5);

/// Figures for `INFO persistence`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PersistStats {
    /// The fsync policy (`aof_fsync`... Redis shows it under `CONFIG GET appendfsync`).
    pub policy: FsyncPolicy,
    /// The generation being appended to.
    pub log_generation: u64,
    /// Bytes in the log files not yet covered by a snapshot (`aof_current_size`).
    pub log_bytes: u64,
    /// Bytes of log records not yet handed to the OS (`aof_buffer_length`): while the log
    /// cannot be written, what a retry will write.
    pub log_buffered_bytes: u64,
    /// Bytes of the last snapshot file (`aof_base_size`; 0 if there is none).
    pub snapshot_bytes: u64,
    /// Records logged since the cut of the last successful snapshot
    /// (`rdb_changes_since_last_save`). A command that creates its key logs two.
    pub changes_since_last_save: u64,
    /// Unix time (seconds) of the last successful snapshot, or of start-up
    /// (`rdb_last_save_time`).
    pub last_save_unix: u64,
    /// Whether a snapshot is being written (`rdb_bgsave_in_progress`).
    pub snapshot_in_progress: bool,
    /// Whether the last snapshot succeeded (`rdb_last_bgsave_status`: ok/err); true before
    /// the first.
    pub last_snapshot_ok: bool,
    /// Why the last snapshot failed.
    pub last_snapshot_error: Option<String>,
    /// How long the last snapshot took, in milliseconds (`rdb_last_bgsave_time_sec` × 1000).
    pub last_snapshot_duration_ms: Option<u64>,
    /// Why the log takes no writes now, if it does not (`aof_last_write_status`).
    pub log_error: Option<String>,
    /// Whether that is for good (until a restart), rather than retried every second.
    pub log_halted: bool,
    /// Fsyncs of log files since start-up: with group commit, far fewer than writes.
    pub log_fsyncs: u64,
}

/// A stopped server's data directory, read by [`Persistence::inspect`]: what start-up would
/// load, and a shared lock that keeps a server from starting on the directory meanwhile.
#[derive(Debug)]
pub struct StoppedDir {
    /// The snapshot's keys and the log's commands.
    pub recovery: Recovery,
    /// Held for the flock; `None` for a directory never served (no `LOCK` file).
    _lock: Option<File>,
}

/// The data directory, open: the log being appended to, the fsync thread, snapshot state.
///
/// One per server. `append` may be called from many threads at once (it takes an internal
/// mutex); `durable` futures are `Send + 'static`.
#[derive(Debug)]
pub struct Persistence {
    shared: Arc<Shared>,
    syncer: Option<JoinHandle<()>>,
}

/// What the fsync thread and snapshot cuts share with the `Persistence`.
#[derive(Debug)]
pub(crate) struct Shared {
    dir: PathBuf,
    policy: FsyncPolicy,
    /// Held for the lock's sake: closing it releases the directory.
    /// `None` once [`Persistence::close`] has released the directory.
    lock: Mutex<Option<File>>,
    /// A `std` mutex, not a tokio one: it is held for a `write` call, never across an
    /// `.await`, and `append` runs under the keyspace's (std) shard locks anyway.
    log: Mutex<LogState>,
    /// `log::HEALTHY`, `WRITE_FAILED` or `HALTED`, readable without the mutex: every write
    /// command asks before it runs.
    health: AtomicU8,
    sync: SyncControl,
    /// `SYNCED`, overwritten after each fsync of the generation being written.
    synced: Mutex<SyncedFile>,
    fsyncs: AtomicU64,
    /// Held across every fsync of a log file and the recording of its failure. Linux reports
    /// a writeback error to one fsync only: without this, a snapshot cut's fsync could
    /// succeed after the fsync thread's failed, before that failure was recorded, and
    /// release waiters whose records the kernel had dropped.
    fsync_serial: Mutex<()>,
    /// Set, under `fsync_serial`, once an fsync of a log file has failed.
    fsync_failed: AtomicBool,
    snapshot_running: AtomicBool,
    saves: Mutex<SaveState>,
    auto_min_bytes: AtomicU64,
    /// `LogState::written`, readable without the mutex (see [`Persistence::observed_position`]).
    appended: AtomicU64,
    /// Records handed to the OS (`written` minus what the buffer holds), readable without the
    /// mutex (see [`Persistence::observed_position`]).
    flushed: AtomicU64,
    /// Records handed to the OS and then found (by an `fstat`) in a file that still had a
    /// name: the ones that may be acknowledged. At most `flushed`.
    named: AtomicU64,
    /// Where the unit tests make the disk fail.
    #[cfg(test)]
    faults: log::Faults,
}

#[derive(Debug)]
struct SaveState {
    last_save_unix: u64,
    last_ok: bool,
    last_error: Option<String>,
    last_failed_at: Option<Instant>,
    last_duration_ms: Option<u64>,
    snapshot_bytes: u64,
}

impl Persistence {
    /// Opens (creating it if missing) and recovers the data directory `dir`.
    ///
    /// Takes the directory's lock, checks the snapshot and every log record (against the
    /// directory's `MANIFEST` when it has one), truncates a torn tail from the last log,
    /// removes what a crash mid-snapshot left behind, fsyncs what it keeps, writes the
    /// manifest, and starts the fsync thread (which also retries failed writes).
    ///
    /// # Errors
    ///
    /// [`PersistError::Locked`] if another server uses `dir`; [`PersistError::CorruptLog`],
    /// [`PersistError::CorruptSnapshot`] or [`PersistError::CorruptManifest`] (with file
    /// and offset) for damage that is not a torn tail; [`PersistError::Inconsistent`] if a
    /// file the directory must hold is missing; [`PersistError::Io`] for file system errors.
    /// The directory is left untouched on every error but `Io`.
    pub fn open(dir: &Path, policy: FsyncPolicy) -> Result<(Persistence, Recovery), PersistError> {
        dir::create(dir)?;
        let lock = dir::lock(dir)?;
        let recovered = recovery::recover(dir)?;
        let now = unix_ms();
        let shared = Arc::new(Shared {
            dir: dir.to_path_buf(),
            policy,
            lock: Mutex::new(Some(lock)),
            log: Mutex::new(LogState {
                file: Arc::new(recovered.file),
                generation: recovered.generation,
                file_len: recovered.file_len,
                whole_len: recovered.file_len,
                checksum: Checksum(recovered.hasher),
                closed: recovered.closed,
                snapshot: recovered.snapshot,
                written: recovered.records,
                saved: 0,
                write_error: None,
                halted: None,
                pending: Vec::new(),
                pending_records: 0,
                transaction: LogTransaction::None,
            }),
            health: AtomicU8::new(HEALTHY),
            // Everything found on disk was fsynced by recovery.
            sync: SyncControl::new(recovered.records),
            synced: Mutex::new(recovered.synced),
            fsyncs: AtomicU64::new(0),
            fsync_serial: Mutex::new(()),
            fsync_failed: AtomicBool::new(false),
            snapshot_running: AtomicBool::new(false),
            saves: Mutex::new(SaveState {
                last_save_unix: recovered.snapshot_unix_ms.unwrap_or(now) / 1000,
                last_ok: true,
                last_error: None,
                last_failed_at: None,
                last_duration_ms: None,
                snapshot_bytes: recovered.snapshot.map_or(0, |s| s.len),
            }),
            auto_min_bytes: AtomicU64::new(AUTO_SNAPSHOT_MIN_LOG_BYTES),
            appended: AtomicU64::new(recovered.records),
            flushed: AtomicU64::new(recovered.records),
            named: AtomicU64::new(recovered.records),
            #[cfg(test)]
            faults: log::Faults::default(),
        });
        // Every policy has the thread: it also retries a failed write once a second.
        let s = Arc::clone(&shared);
        let syncer = std::thread::Builder::new()
            .name("bloomkit-fsync".to_string())
            .spawn(move || log::sync::run(&s))
            .map_err(|e| PersistError::io("start the fsync thread for", dir, e))?;
        Ok((
            Persistence {
                shared,
                syncer: Some(syncer),
            },
            recovered.recovery,
        ))
    }

    /// Reads a stopped server's data directory `dir` without changing anything in it: what
    /// [`Persistence::open`] would recover, checked the same way, with a torn tail left out
    /// rather than cut (a warning says so). The returned [`StoppedDir`] holds a shared lock
    /// on the directory, so no server starts on it until it is dropped.
    ///
    /// # Errors
    ///
    /// [`PersistError::NotADirectory`] if `dir` is not a directory;
    /// [`PersistError::Locked`] while a server runs on it; as [`Persistence::open`] for
    /// damage.
    pub fn inspect(dir: &Path) -> Result<StoppedDir, PersistError> {
        match std::fs::metadata(dir) {
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => {
                return Err(PersistError::NotADirectory {
                    path: dir.to_path_buf(),
                })
            }
            Err(e) => return Err(PersistError::io("open", dir, e)),
        }
        let lock = dir::lock_shared(dir)?;
        let recovery = recovery::inspect(dir)?;
        Ok(StoppedDir {
            recovery,
            _lock: lock,
        })
    }

    /// The data directory.
    pub fn dir(&self) -> &Path {
        &self.shared.dir
    }

    /// The fsync policy.
    pub fn policy(&self) -> FsyncPolicy {
        self.shared.policy
    }

    /// Appends `commands` to the log, in order: encoded into the log's buffer, no system
    /// call and no fsync. [`Persistence::durable`] writes the buffer (with everything
    /// buffered before it) before it waits, so a connection's pipelined batch costs one
    /// `write`; the fsync thread and snapshot cuts write it too, and so does `append` itself
    /// once the buffer passes 1 MiB.
    ///
    /// Call it while holding the lock of the key the commands change, so that the log's
    /// order is the order of the changes; it takes an internal mutex for the length of the
    /// encoding. An empty `commands` appends nothing and returns a ticket that is already
    /// durable or becomes so with what precedes it.
    ///
    /// While a failed `write` is being retried, records are still taken (the commands that
    /// made them already ran: the buffer must hold everything the keyspace does), but their
    /// tickets fail; [`Persistence::write_refusal`] says to refuse write commands before
    /// they run, so that only commands already running when the failure came get here.
    ///
    /// # Errors
    ///
    /// When the log cannot go on (an fsync failed, the file was deleted, the server shut
    /// down); and for a command that cannot be encoded, which stops the log for good: the
    /// keyspace already holds the change, and the log could never bring it back.
    pub fn append(&self, commands: &[Vec<Bytes>]) -> io::Result<Ticket> {
        self.append_with(commands.len(), |pending| {
            commands
                .iter()
                .try_for_each(|command| aof::encode_record(pending, command))
        })
    }

    /// [`append`](Self::append) for a filter command's records, encoded from where their
    /// words lie (the command's own key and items): no list of words is built to log them.
    ///
    /// # Errors
    ///
    /// As [`append`](Self::append).
    pub fn append_records(&self, records: &[Record<'_>]) -> io::Result<Ticket> {
        self.append_with(records.len(), |pending| {
            records.iter().try_for_each(|record| {
                let words = std::iter::once(record.name()).chain(record.args());
                aof::encode_words(pending, record.len(), words)
            })
        })
    }

    /// Appends `count` records, which `encode` writes to the pending buffer.
    fn append_with(
        &self,
        count: usize,
        encode: impl FnOnce(&mut Vec<u8>) -> io::Result<()>,
    ) -> io::Result<Ticket> {
        let mut guard = self.shared.lock_log();
        let log = &mut *guard;
        if let Some(failure) = &log.halted {
            return Err(io::Error::other(failure.held_back(false)));
        }
        let mut records = count as u64;
        if log.transaction == LogTransaction::Begun && count > 0 {
            aof::encode_marker(&mut log.pending, aof::Marker::Multi);
            log.transaction = LogTransaction::Open;
            records += 1;
        }
        let mark = log.pending.len();
        if let Err(e) = encode(&mut log.pending) {
            // Nothing of this call may reach the file: drop its half-encoded records.
            log.pending.truncate(mark);
            let failure = Failure::other(
                "a command could not be logged",
                format!("a command could not be logged ({e})"),
            );
            self.shared.halt(log, failure.clone());
            return Err(io::Error::other(failure.held_back(false)));
        }
        log.pending_records += records;
        log.written += records;
        self.shared.appended.store(log.written, Ordering::Release);
        let ticket = Ticket(log.written);
        // Bound the buffer when nobody asks for durability for a while (huge pipelines). A
        // failure here is the ticket's to report, in `durable`.
        if log.pending.len() >= PENDING_FLUSH_BYTES && log.write_error.is_none() {
            let _ = self.shared.flush_pending(log, NameCheck::Later);
        }
        Ok(ticket)
    }

    /// Starts a transaction (`EXEC`): the records appended until
    /// [`Persistence::end_transaction`] go to the log between a `MULTI` and an `EXEC`
    /// record, and recovery replays them all or none (a crash before the `EXEC` record is
    /// written drops them, as a torn tail). Nothing is written for a transaction that
    /// appends nothing. Call it while nothing else appends (the keyspace's gate, held
    /// exclusively by `EXEC`, sees to that); snapshots are refused until it ends.
    pub fn begin_transaction(&self) {
        self.shared.lock_log().transaction = LogTransaction::Begun;
    }

    /// Ends the transaction: appends its `EXEC` record if it appended anything, and returns
    /// that record's ticket (`None` if it appended nothing).
    ///
    /// # Errors
    ///
    /// When the log cannot go on (as [`Persistence::append`]): the transaction's records
    /// stay without their `EXEC`, and recovery drops them.
    pub fn end_transaction(&self) -> io::Result<Option<Ticket>> {
        let mut guard = self.shared.lock_log();
        let log = &mut *guard;
        if std::mem::replace(&mut log.transaction, LogTransaction::None) != LogTransaction::Open {
            return Ok(None);
        }
        if let Some(failure) = &log.halted {
            return Err(io::Error::other(failure.held_back(false)));
        }
        aof::encode_marker(&mut log.pending, aof::Marker::Exec);
        log.pending_records += 1;
        log.written += 1;
        self.shared.appended.store(log.written, Ordering::Release);
        Ok(Some(Ticket(log.written)))
    }

    /// Why write commands must be refused now, as the error to answer them with: Redis's
    /// `MISCONF Errors writing to the AOF file: <cause>`; `None` while the log takes
    /// writes. One atomic load when all is well: every write command asks, before it runs.
    pub fn write_refusal(&self) -> Option<String> {
        self.shared.refusal()
    }

    /// The error for a command that ran but whose records the log refused (it takes no
    /// writes any more): what it changed is in memory only. `None` while the log takes
    /// writes.
    pub fn held_back_reply(&self) -> Option<String> {
        if self.shared.health.load(Ordering::Acquire) == HEALTHY {
            return None;
        }
        let log = self.shared.lock_log();
        let retried = log.halted.is_none();
        log.failure().map(|f| f.held_back(retried))
    }

    /// What a reply that only *observes* the keyspace must wait for, if anything (a reply
    /// that reflects another client's change must not go out before that change is durable,
    /// and that change was appended before its key's lock was released): with
    /// `always`, every record appended so far (it must be fsynced); with the other policies,
    /// every record appended so far if some are still in the buffer (they must reach the
    /// kernel first, or a `kill -9` could take back what the reply reports). Lock-free.
    ///
    /// While a failed `write` is retried, only the records written before it count (those
    /// held back belong to commands answered with an error, and reads must go on); once the
    /// log has stopped for good, nothing does.
    pub fn observed_position(&self) -> Option<Ticket> {
        // Written records count once their file was seen to have a name, as for a write's
        // own reply.
        let flushed = self.shared.named.load(Ordering::Acquire);
        let appended = match self.shared.health.load(Ordering::Acquire) {
            HEALTHY => self.shared.appended.load(Ordering::Acquire),
            HALTED => return None,
            _ => flushed,
        };
        let waits = self.shared.policy == FsyncPolicy::Always || appended > flushed;
        waits.then_some(Ticket(appended))
    }

    /// Whether `ticket`'s record is still in the buffer: [`Persistence::durable`] would
    /// `write` it (with everything buffered before it). Lock-free.
    pub fn is_buffered(&self, ticket: Ticket) -> bool {
        ticket.0 > self.shared.flushed.load(Ordering::Acquire)
    }

    /// Resolves once the log is durable up to `ticket`, as the policy defines it.
    ///
    /// With [`FsyncPolicy::Always`], once an fsync that began after the ticket's `write`
    /// has completed; one fsync serves every waiter whose record it covers. With
    /// `EverySec` and `No`, at once. The future owns what it needs (`Send + 'static`), so it
    /// can be awaited after the keyspace's locks are released or moved into a task.
    ///
    /// # Errors
    ///
    /// When the record could not be written (it is kept, and written by a retry), the fsync
    /// failed, or the log stopped earlier: the write may not be on disk, and must not be
    /// acknowledged. The error's text is the reply to send instead (`MISCONF ...`).
    pub fn durable(&self, ticket: Ticket) -> impl Future<Output = io::Result<()>> + Send + 'static {
        // Hand the ticket's record to the OS first (with every record buffered before it):
        // whatever the policy, an acknowledged write must survive the server's own crash.
        let written = if ticket.0 <= self.shared.named.load(Ordering::Acquire) {
            // Already handed to the OS and checked, by this connection's write or another's
            // (`named` only grows, and never past what was written): no need for the log's
            // mutex, which every `always` read would otherwise take.
            Ok(())
        } else {
            self.shared
                .write_named(ticket.0)
                .map_err(|(failure, retried)| io::Error::other(failure.held_back(retried)))
        };
        // Only a record on its way to the disk is waited for: one held back would keep the
        // fsync thread asking for what no fsync can cover.
        let wait = written.is_ok().then(|| {
            self.shared
                .sync
                .wait(ticket.0, self.shared.policy == FsyncPolicy::Always)
        });
        async move {
            written?;
            match wait {
                Some(wait) => wait.await,
                None => Ok(()),
            }
        }
    }

    /// Fsyncs the log now, whatever the policy: for `SHUTDOWN` and for `SAVE` with `no`.
    /// Blocking.
    ///
    /// # Errors
    ///
    /// The fsync's error, which stops the log for good; or why the log takes no writes.
    pub fn sync(&self) -> io::Result<()> {
        // One more try for what a failed write holds back, before saying it is not on disk.
        self.shared.retry_pending();
        self.shared
            .fsync_log()
            .map_err(|f| io::Error::other(f.detail))?;
        let log = self.shared.lock_log();
        match log.failure() {
            Some(f) if f.detail == SHUT_DOWN => Ok(()),
            Some(f) if log.pending_records > 0 => Err(io::Error::other(format!(
                "{}; {} records ({} bytes) of commands that were answered with an error are not \
                 on disk",
                f.detail,
                log.pending_records,
                log.pending.len()
            ))),
            Some(f) => Err(io::Error::other(f.detail.clone())),
            None => Ok(()),
        }
    }

    /// Syncs the log and releases the data directory, so that another server (or this one,
    /// restarted in the same process) can open it at once, whoever still holds a reference
    /// to this `Persistence`. Every later append fails. Blocking. Called once the server has
    /// stopped; calling it again does nothing.
    ///
    /// # Errors
    ///
    /// The final fsync's error, or the records a failed `write` still held back (tried once
    /// more here) and that are lost with the process; the directory is released all the
    /// same.
    pub fn close(&self) -> io::Result<()> {
        // A last try for what a failed write holds back.
        self.shared.retry_pending();
        // Under the log's mutex: write what is buffered and stop all appends, so that what
        // the final fsync covers is everything there will ever be.
        let (result, to_sync) = {
            let mut guard = self.shared.lock_log();
            let log = &mut *guard;
            if log.halted.as_ref().is_some_and(|f| f.detail == SHUT_DOWN) {
                (Ok(()), None)
            } else {
                let result = match &log.halted {
                    Some(f) => Err(io::Error::other(f.detail.clone())),
                    None => self.shared.flush_pending(log, NameCheck::Now).map_err(|f| {
                        io::Error::other(format!(
                            "{}: {} records ({} bytes) of commands that were answered with an \
                             error could not be written, and are lost",
                            f.detail,
                            log.pending_records,
                            log.pending.len()
                        ))
                    }),
                };
                let to_sync = result.is_ok().then(|| {
                    let mark = log::synced::SyncedMark {
                        generation: log.generation,
                        len: log.whole_len,
                    };
                    (Arc::clone(&log.file), log.flushed(), mark)
                });
                if log.halted.is_none() {
                    log.halted = Some(Failure::other(SHUT_DOWN, SHUT_DOWN.to_string()));
                }
                self.shared.health.store(HALTED, Ordering::Release);
                (result, to_sync)
            }
        };
        let result = match to_sync {
            Some((file, written, mark)) => match self.shared.fsync_file(&file) {
                Ok(()) => {
                    self.shared.fsyncs.fetch_add(1, Ordering::Relaxed);
                    self.shared.sync.synced(written);
                    self.shared.record_synced(mark);
                    result
                }
                Err(e) => Err(e),
            },
            None => result,
        };
        // Waiters the final fsync did not cover (there should be none once the clients are
        // gone) get an error rather than wait forever for a thread that is stopping.
        self.shared.sync.fail(SHUT_DOWN.to_string());
        self.shared.sync.shut_down();
        // Closing the file releases the advisory lock; this waits for a snapshot being
        // written, which holds the same mutex.
        drop(
            self.shared
                .lock
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take(),
        );
        result
    }

    /// Switches the log to a new generation and returns the cut a snapshot is written from.
    ///
    /// Call it while holding every shard lock, right after cloning the values: every command
    /// logged before it is in the snapshot, every one after it in the new generation. It
    /// fsyncs the outgoing generation (recovery relies on every generation but the last being
    /// complete on disk, and with `always`/`everysec` at most a second of writes is unsynced),
    /// creates the next one, and records both in the manifest (which fsyncs the directory):
    /// no other I/O (beyond writing what is still buffered to the outgoing generation),
    /// whatever the keyspace's size. A generation that holds no record yet is not rotated:
    /// the cut starts at it, and no file is added.
    ///
    /// # Errors
    ///
    /// [`PersistError::SnapshotInProgress`] if a cut is still alive (one snapshot at a time:
    /// `BGSAVE` answers `ERR Background save already in progress`); [`PersistError::Io`] if
    /// the fsync, the file creation or the manifest fails (the log carries on in the old
    /// generation, but an fsync failure stops it for good); [`PersistError::LogFailed`] if
    /// the log takes no writes.
    pub fn begin_snapshot(&self) -> Result<SnapshotCut, PersistError> {
        snapshot::save::begin(&self.shared)
    }

    /// Writes the snapshot for `cut`: see [`SnapshotCut::write`], which this calls. Blocking.
    ///
    /// # Errors
    ///
    /// As [`SnapshotCut::write`].
    pub fn write_snapshot<I, V>(&self, cut: SnapshotCut, entries: I) -> Result<(), PersistError>
    where
        I: IntoIterator<Item = (Bytes, Option<u64>, V)>,
        V: std::borrow::Borrow<bloomkit_commands::Value>,
    {
        cut.write(entries)
    }

    /// Whether the log has grown enough that a snapshot should be taken: it holds at least
    /// [`AUTO_SNAPSHOT_MIN_LOG_BYTES`] and at least as many bytes as the last snapshot (the
    /// data on disk has doubled since it), no snapshot is running, and the log takes writes.
    /// Redis's `auto-aof-rewrite-percentage 100` rule.
    ///
    /// After a failed snapshot, not for 5 seconds, and then only once the generation its cut
    /// started holds the minimum too (or nothing at all, when a cut adds no file): each cut
    /// starts a log file, and a snapshot that keeps failing must not add one every few
    /// seconds. So files come at most one per [`AUTO_SNAPSHOT_MIN_LOG_BYTES`] written.
    pub fn should_auto_snapshot(&self) -> bool {
        if self.shared.snapshot_running.load(Ordering::Acquire) {
            return false;
        }
        let (log_bytes, open_bytes, open_empty) = {
            let log = self.shared.lock_log();
            if log.failure().is_some() {
                return false;
            }
            let open_bytes = log.file_len + log.pending.len() as u64;
            let empty = open_bytes == aof::LOG_HEADER_LEN as u64;
            (log.total_bytes(), open_bytes, empty)
        };
        let min = self.shared.auto_min_bytes.load(Ordering::Relaxed);
        let saves = self.shared.lock_saves();
        let retry_allowed = match saves.last_failed_at {
            None => true,
            Some(t) => {
                t.elapsed() >= AUTO_SNAPSHOT_RETRY_DELAY && (open_empty || open_bytes >= min)
            }
        };
        log_bytes >= min && log_bytes >= saves.snapshot_bytes && retry_allowed
    }

    /// Sets the log size below which [`Persistence::should_auto_snapshot`] never fires
    /// (default [`AUTO_SNAPSHOT_MIN_LOG_BYTES`]).
    pub fn set_auto_snapshot_min_bytes(&self, bytes: u64) {
        self.shared.auto_min_bytes.store(bytes, Ordering::Relaxed);
    }

    /// Figures for `INFO persistence`.
    pub fn stats(&self) -> PersistStats {
        let (log_generation, log_bytes, buffered, changes, log_error, log_halted) = {
            let log = self.shared.lock_log();
            (
                log.generation,
                log.total_bytes(),
                log.pending.len() as u64,
                log.written - log.saved,
                log.failure().map(|f| f.detail.clone()),
                log.halted.is_some(),
            )
        };
        let saves = self.shared.lock_saves();
        PersistStats {
            policy: self.shared.policy,
            log_generation,
            log_bytes,
            log_buffered_bytes: buffered,
            snapshot_bytes: saves.snapshot_bytes,
            changes_since_last_save: changes,
            last_save_unix: saves.last_save_unix,
            snapshot_in_progress: self.shared.snapshot_running.load(Ordering::Acquire),
            last_snapshot_ok: saves.last_ok,
            last_snapshot_error: saves.last_error.clone(),
            last_snapshot_duration_ms: saves.last_duration_ms,
            log_error,
            log_halted,
            log_fsyncs: self.shared.fsyncs.load(Ordering::Relaxed),
        }
    }
}

impl Drop for Persistence {
    fn drop(&mut self) {
        self.shared.sync.shut_down();
        if let Some(handle) = self.syncer.take() {
            let _ = handle.join();
        }
        // A clean stop leaves nothing in the page cache only (Redis fsyncs on shutdown
        // whatever the policy, too). Errors have nowhere to go here: `sync` reports them.
        let _ = self.shared.fsync_log();
    }
}

impl Shared {
    fn lock_saves(&self) -> MutexGuard<'_, SaveState> {
        self.saves.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn log_path(&self, generation: u64) -> PathBuf {
        self.dir.join(log_file_name(generation))
    }
}

fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod disk_tests;
#[cfg(test)]
mod tests;
