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
//! every log record, cuts a torn tail from the last log, and returns a [`Recovery`]: load
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
//!    answer an error, never `OK`.
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
//! ```text
//! <dir>/LOCK                  flock'ed by the server using the directory
//! <dir>/dump.bks              the snapshot, with the generation replay starts from
//! <dir>/appendonly.<g>.aof    one log file per generation g = 1, 2, 3...
//! <dir>/dump.<g>.tmp          a snapshot being written
//! ```
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
//!   so the same code serves tests and the replay before the runtime starts serving.

pub mod aof;
mod dir;
mod error;
mod journal;
mod recovery;
mod save;
pub mod snapshot;
mod sync;

use std::collections::BTreeMap;
use std::fmt;
use std::fs::File;
use std::future::Future;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;

pub use dir::{log_file_name, LOCK_FILE, SNAPSHOT_FILE};
pub use error::PersistError;
pub use journal::PersistentJournal;
pub use recovery::Recovery;
pub use save::SnapshotCut;
pub use snapshot::SnapshotEntry;

use sync::SyncControl;

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

/// Buffered log bytes past which `append` writes them itself rather than wait for someone
/// to need them durable.
const PENDING_FLUSH_BYTES: usize = 1 << 20;

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
    /// Why the log stopped accepting writes, if it did (`aof_last_write_status`).
    pub log_error: Option<String>,
    /// Fsyncs of log files since start-up: with group commit, far fewer than writes.
    pub log_fsyncs: u64,
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
    sync: SyncControl,
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
}

#[derive(Debug)]
struct LogState {
    /// The current generation's file, opened for appending. In an `Arc` so that the fsync
    /// thread can sync it without holding the mutex.
    file: Arc<File>,
    generation: u64,
    /// Bytes in the current generation's file.
    file_len: u64,
    /// Older generations not yet covered by a snapshot: generation → bytes.
    closed: BTreeMap<u64, u64>,
    /// Records appended since start-up, plus those found in the logs: tickets count these.
    written: u64,
    /// `written` at the cut of the last successful snapshot.
    saved: u64,
    /// Set when a write or an fsync failed, or the log was closed: the log then refuses
    /// everything, since what is on disk is no longer known (or the server has stopped).
    failure: Option<String>,
    /// Records appended but not yet handed to the OS: encoded here under the mutex and
    /// written by whoever needs them on disk first ([`Persistence::durable`], the fsync
    /// thread, a snapshot's cut), so a connection's pipelined batch of writes costs one
    /// `write` system call instead of one per command (Redis's AOF buffer does the same).
    pending: Vec<u8>,
    /// How many records `pending` holds.
    pending_records: u64,
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
    /// Takes the directory's lock, checks the snapshot and every log record, truncates a
    /// torn tail from the last log, removes what a crash mid-snapshot left behind, fsyncs
    /// what it keeps, and starts the fsync thread (for `always` and `everysec`).
    ///
    /// # Errors
    ///
    /// [`PersistError::Locked`] if another server uses `dir`; [`PersistError::CorruptLog`] or
    /// [`PersistError::CorruptSnapshot`] (with file and offset) for damage that is not a torn
    /// tail; [`PersistError::Inconsistent`] if a log generation is missing;
    /// [`PersistError::Io`] for file system errors. The directory is left untouched on
    /// every error but `Io`.
    pub fn open(dir: &Path, policy: FsyncPolicy) -> Result<(Persistence, Recovery), PersistError> {
        std::fs::create_dir_all(dir).map_err(|e| PersistError::io("create", dir, e))?;
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
                closed: recovered.closed,
                written: recovered.records,
                saved: 0,
                failure: None,
                pending: Vec::new(),
                pending_records: 0,
            }),
            // Everything found on disk was fsynced by recovery.
            sync: SyncControl::new(recovered.records),
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
                snapshot_bytes: recovered.snapshot_bytes,
            }),
            auto_min_bytes: AtomicU64::new(AUTO_SNAPSHOT_MIN_LOG_BYTES),
            appended: AtomicU64::new(recovered.records),
            flushed: AtomicU64::new(recovered.records),
        });
        let syncer = match policy {
            FsyncPolicy::Always | FsyncPolicy::EverySec => {
                let s = Arc::clone(&shared);
                let handle = std::thread::Builder::new()
                    .name("bloomkit-fsync".to_string())
                    .spawn(move || sync::run(&s))
                    .map_err(|e| PersistError::io("start the fsync thread for", dir, e))?;
                Some(handle)
            }
            FsyncPolicy::No => None,
        };
        Ok((Persistence { shared, syncer }, recovered.recovery))
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
    /// # Errors
    ///
    /// A command that cannot be encoded (nothing of the call is kept); a failed `write` of a
    /// full buffer, after which the file is cut back to its last whole record and the log
    /// refuses everything (the lost records belong to other appenders too); any earlier
    /// failure of the log.
    pub fn append(&self, commands: &[Vec<Bytes>]) -> io::Result<Ticket> {
        let mut guard = self.shared.lock_log();
        let log = &mut *guard;
        if let Some(reason) = &log.failure {
            return Err(failed(reason));
        }
        let mark = log.pending.len();
        for command in commands {
            if let Err(e) = aof::encode_record(&mut log.pending, command) {
                // Nothing of this call may reach the file: drop its half-encoded records.
                log.pending.truncate(mark);
                return Err(e);
            }
        }
        log.pending_records += commands.len() as u64;
        log.written += commands.len() as u64;
        self.shared.appended.store(log.written, Ordering::Release);
        let ticket = Ticket(log.written);
        // Bound the buffer when nobody asks for durability for a while (huge pipelines).
        if log.pending.len() >= PENDING_FLUSH_BYTES {
            if let Err(reason) = self.shared.flush_pending(log) {
                drop(guard);
                self.shared.fail(reason.clone());
                return Err(failed(&reason));
            }
        }
        Ok(ticket)
    }

    /// What a reply that only *observes* the keyspace must wait for, if anything (a reply
    /// that reflects another client's change must not go out before that change is durable,
    /// and that change was appended before its key's lock was released): with
    /// `always`, every record appended so far (it must be fsynced); with the other policies,
    /// every record appended so far if some are still in the buffer (they must reach the
    /// kernel first, or a `kill -9` could take back what the reply reports). Lock-free.
    pub fn observed_position(&self) -> Option<Ticket> {
        let appended = self.shared.appended.load(Ordering::Acquire);
        let waits = self.shared.policy == FsyncPolicy::Always
            || appended > self.shared.flushed.load(Ordering::Acquire);
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
    /// When the fsync failed, or the log failed earlier: the write may not be on disk, and
    /// must not be acknowledged.
    pub fn durable(&self, ticket: Ticket) -> impl Future<Output = io::Result<()>> + Send + 'static {
        // Hand the ticket's record to the OS first (with every record buffered before it):
        // whatever the policy, an acknowledged write must survive the server's own crash.
        let written = if ticket.0 <= self.shared.flushed.load(Ordering::Acquire) {
            // Already handed to the OS, by this connection's write or another's (`flushed`
            // only grows, and never past what was written): no need for the log's mutex,
            // which every `always` read would otherwise take.
            Ok(())
        } else {
            let mut guard = self.shared.lock_log();
            let log = &mut *guard;
            let unwritten_from = log.written - log.pending_records;
            if ticket.0 > unwritten_from {
                self.shared.flush_pending(log).map_err(|reason| {
                    drop(guard);
                    self.shared.fail(reason.clone());
                    failed(&reason)
                })
            } else {
                Ok(())
            }
        };
        let wait = self
            .shared
            .sync
            .wait(ticket.0, self.shared.policy == FsyncPolicy::Always);
        async move {
            written?;
            wait.await
        }
    }

    /// Fsyncs the log now, whatever the policy: for `SHUTDOWN` and for `SAVE` with `no`.
    /// Blocking.
    ///
    /// # Errors
    ///
    /// The fsync's error; the log then refuses further appends.
    pub fn sync(&self) -> io::Result<()> {
        self.shared.fsync_log().map_err(|r| failed(&r))
    }

    /// Syncs the log and releases the data directory, so that another server (or this one,
    /// restarted in the same process) can open it at once, whoever still holds a reference
    /// to this `Persistence`. Every later append fails. Blocking. Called once the server has
    /// stopped; calling it again does nothing.
    ///
    /// # Errors
    ///
    /// The final fsync's error (the directory is released all the same).
    pub fn close(&self) -> io::Result<()> {
        // Under the log's mutex: write what is buffered and stop all appends, so that what
        // the final fsync covers is everything there will ever be.
        let (result, to_sync) = {
            let mut guard = self.shared.lock_log();
            let log = &mut *guard;
            match log.failure.clone() {
                Some(reason) if reason == SHUT_DOWN => (Ok(()), None),
                Some(reason) => (Err(failed(&reason)), None),
                None => match self.shared.flush_pending(log) {
                    Ok(()) => {
                        log.failure = Some(SHUT_DOWN.to_string());
                        (Ok(()), Some((Arc::clone(&log.file), log.written)))
                    }
                    Err(reason) => (Err(failed(&reason)), None),
                },
            }
        };
        let result = match to_sync {
            Some((file, written)) => match self.shared.fsync_file(&file) {
                Ok(()) => {
                    self.shared.fsyncs.fetch_add(1, Ordering::Relaxed);
                    self.shared.sync.synced(written);
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
    /// creates the next one and fsyncs the directory: no other I/O (beyond writing what is
    /// still buffered to the outgoing generation), whatever the keyspace's
    /// size.
    ///
    /// # Errors
    ///
    /// [`PersistError::SnapshotInProgress`] if a cut is still alive (one snapshot at a time:
    /// `BGSAVE` answers `ERR Background save already in progress`); [`PersistError::Io`] if
    /// the fsync or the file creation fails (the log carries on in the old generation, but
    /// an fsync failure stops it for good); [`PersistError::LogFailed`] if the log failed
    /// earlier.
    pub fn begin_snapshot(&self) -> Result<SnapshotCut, PersistError> {
        save::begin(&self.shared)
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
    /// data on disk has doubled since it), no snapshot is running, and the last one did not
    /// fail in the last 5 seconds. Redis's `auto-aof-rewrite-percentage 100` rule.
    pub fn should_auto_snapshot(&self) -> bool {
        if self.shared.snapshot_running.load(Ordering::Acquire) {
            return false;
        }
        let log_bytes = {
            let log = self.shared.lock_log();
            if log.failure.is_some() {
                return false;
            }
            log.total_bytes()
        };
        let saves = self.shared.lock_saves();
        let recently_failed = saves
            .last_failed_at
            .is_some_and(|t| t.elapsed() < AUTO_SNAPSHOT_RETRY_DELAY);
        log_bytes >= self.shared.auto_min_bytes.load(Ordering::Relaxed)
            && log_bytes >= saves.snapshot_bytes
            && !recently_failed
    }

    /// Sets the log size below which [`Persistence::should_auto_snapshot`] never fires
    /// (default [`AUTO_SNAPSHOT_MIN_LOG_BYTES`]).
    pub fn set_auto_snapshot_min_bytes(&self, bytes: u64) {
        self.shared.auto_min_bytes.store(bytes, Ordering::Relaxed);
    }

    /// Figures for `INFO persistence`.
    pub fn stats(&self) -> PersistStats {
        let (log_generation, log_bytes, changes, log_error) = {
            let log = self.shared.lock_log();
            (
                log.generation,
                log.total_bytes(),
                log.written - log.saved,
                log.failure.clone(),
            )
        };
        let saves = self.shared.lock_saves();
        PersistStats {
            policy: self.shared.policy,
            log_generation,
            log_bytes,
            snapshot_bytes: saves.snapshot_bytes,
            changes_since_last_save: changes,
            last_save_unix: saves.last_save_unix,
            snapshot_in_progress: self.shared.snapshot_running.load(Ordering::Acquire),
            last_snapshot_ok: saves.last_ok,
            last_snapshot_error: saves.last_error.clone(),
            last_snapshot_duration_ms: saves.last_duration_ms,
            log_error,
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
    fn lock_log(&self) -> MutexGuard<'_, LogState> {
        // Nothing panics while holding it; if something ever did, the state is still
        // consistent between statements, so carry on rather than poison every writer.
        self.log.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn lock_saves(&self) -> MutexGuard<'_, SaveState> {
        self.saves.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn log_path(&self, generation: u64) -> PathBuf {
        self.dir.join(log_file_name(generation))
    }

    /// Fsyncs the current generation, covering every record written so far, and tells the
    /// waiters. On failure the log is marked failed: after a failed fsync the kernel may have
    /// dropped the dirty pages, so nothing written before can be assumed durable, and
    /// retrying would only hide that.
    fn fsync_log(&self) -> Result<(), String> {
        let (target, file, generation) = {
            let mut guard = self.lock_log();
            let log = &mut *guard;
            if let Some(reason) = &log.failure {
                return Err(reason.clone());
            }
            if let Err(reason) = self.flush_pending(log) {
                drop(guard);
                self.fail(reason.clone());
                return Err(reason);
            }
            (log.written, Arc::clone(&log.file), log.generation)
        };
        // Without the mutex: appends go on while the disk works, and the next round's
        // fsync covers them (group commit).
        match self.fsync_file(&file) {
            Ok(()) => {
                self.fsyncs.fetch_add(1, Ordering::Relaxed);
                self.sync.synced(target);
                Ok(())
            }
            Err(e) => {
                let reason = format!(
                    "fsync of {} failed: {e}",
                    self.log_path(generation).display()
                );
                self.fail(reason.clone());
                Err(reason)
            }
        }
    }

    /// Fsyncs a log file, one fsync at a time; fails, without trying, once any fsync of the
    /// log has failed (see `fsync_serial`).
    fn fsync_file(&self, file: &File) -> io::Result<()> {
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

    /// Writes the buffered records to the current generation's file (called with the log's
    /// mutex held). On failure the file is cut back to its last whole record and the reason
    /// returned: the caller marks the log failed, since the lost records belong to appenders
    /// that may already be waiting to acknowledge them.
    fn flush_pending(&self, log: &mut LogState) -> Result<(), String> {
        if log.pending.is_empty() {
            return Ok(());
        }
        if let Some(reason) = &log.failure {
            return Err(reason.clone());
        }
        match (&*log.file).write_all(&log.pending) {
            Ok(()) => {
                log.file_len += log.pending.len() as u64;
                log.pending.clear();
                log.pending_records = 0;
                self.flushed.store(log.written, Ordering::Release);
                // A 512 MiB LOADCHUNK should not keep its buffer for the life of the server.
                if log.pending.capacity() > PENDING_FLUSH_BYTES * 2 {
                    log.pending = Vec::new();
                }
                Ok(())
            }
            Err(e) => {
                let path = self.log_path(log.generation);
                // A partial write would leave half a record in the middle of the log once a
                // later write succeeds, and start-up would then (rightly) refuse it.
                let undone = log.file.set_len(log.file_len);
                let reason = match undone {
                    Ok(()) => format!("a write to {} failed: {e}", path.display()),
                    Err(e2) => format!(
                        "a write to {} failed ({e}) and could not be undone ({e2})",
                        path.display()
                    ),
                };
                // Recorded before the mutex is released, so that nobody retries the same
                // buffer after a half-record the cut-back could not remove; the caller wakes
                // the waiters.
                log.failure = Some(reason.clone());
                Err(reason)
            }
        }
    }

    /// Marks the log failed and wakes every waiter with the reason.
    fn fail(&self, reason: String) {
        let mut log = self.lock_log();
        if log.failure.is_none() {
            log.failure = Some(reason.clone());
        }
        drop(log);
        self.sync.fail(reason);
    }
}

impl LogState {
    fn total_bytes(&self) -> u64 {
        self.closed.values().sum::<u64>() + self.file_len + self.pending.len() as u64
    }
}

fn failed(reason: &str) -> io::Error {
    io::Error::other(format!("the append-only log is unusable: {reason}"))
}

fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests;
