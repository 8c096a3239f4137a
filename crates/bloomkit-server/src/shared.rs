//! The state every connection shares (mini-redis's `db.rs`): the start-up options, the
//! keyspace, the run-time settings, the counters, snapshots, and the switch that shuts the
//! server down.
//!
//! The commands reach the server through it alone, never through the accept loop
//! ([`crate::server`]), which creates it and hands it to every connection.

use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use bloomkit_commands::{Defaults, Reply};
use tokio::sync::watch;

use crate::clients::Clients;
use crate::commandstats::CommandStats;
use crate::config::{Config, Settings};
use crate::keyspace::{now_ms, Keyspace};
use crate::log;
use crate::options::View;
use crate::slowlog::SlowLog;

/// Counters for `INFO clients` and `INFO stats`.
#[derive(Debug, Default)]
pub struct Stats {
    connected_clients: AtomicUsize,
    connections_received: AtomicU64,
    rejected_connections: AtomicU64,
    commands_processed: AtomicU64,
}

impl Stats {
    /// Clients connected now.
    pub fn connected_clients(&self) -> usize {
        self.connected_clients.load(Ordering::Relaxed)
    }

    /// Connections accepted since start-up, refused ones included.
    pub fn connections_received(&self) -> u64 {
        self.connections_received.load(Ordering::Relaxed)
    }

    /// Connections refused by `--maxclients`.
    pub fn rejected_connections(&self) -> u64 {
        self.rejected_connections.load(Ordering::Relaxed)
    }

    /// Requests run since start-up.
    pub fn commands_processed(&self) -> u64 {
        self.commands_processed.load(Ordering::Relaxed)
    }

    /// Counts `n` requests: connections count a batch at a time, so that cores serving
    /// different clients do not contend for this counter on every command.
    pub fn count_commands(&self, n: u64) {
        if n > 0 {
            self.commands_processed.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// Counts an accepted connection (refused ones included).
    pub(crate) fn count_connection(&self) {
        self.connections_received.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a connection refused by `--maxclients`.
    pub(crate) fn count_rejection(&self) {
        self.rejected_connections.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a client that is now served.
    pub(crate) fn client_connected(&self) {
        self.connected_clients.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a client that left.
    pub(crate) fn client_disconnected(&self) {
        self.connected_clients.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Why a snapshot did not happen.
#[derive(Debug)]
pub enum SnapshotError {
    /// Another one is running (`SAVE`/`BGSAVE` during a `BGSAVE`).
    InProgress,
    /// It failed; the previous snapshot and the log are intact.
    Failed(io::Error),
}

/// The error reply of a command that wanted a snapshot (`SAVE`, `BGSAVE`, `DEBUG RELOAD`):
/// Redis's words for one already running, and for a failure the cause and what to check.
impl From<SnapshotError> for Reply {
    fn from(error: SnapshotError) -> Reply {
        match error {
            SnapshotError::InProgress => Reply::error("ERR Background save already in progress"),
            SnapshotError::Failed(why) => Reply::Error(
                format!(
                    "ERR snapshot failed: {why}; check that the data directory is writable \
                     and has space"
                )
                .replace(['\r', '\n'], " "),
            ),
        }
    }
}

/// Where snapshots stand, for `INFO persistence`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SnapshotStatus {
    /// Whether one is being written now.
    pub in_progress: bool,
    /// When the last successful one finished (Unix seconds; start-up time before any).
    pub last_save_unix: u64,
    /// Whether the last one succeeded (true before any).
    pub last_ok: bool,
}

/// What every connection shares: the keyspace, the settings, the counters, and the
/// switch that shuts the server down.
pub struct Shared {
    config: Config,
    keyspace: Keyspace,
    settings: Settings,
    stats: Stats,
    started: Instant,
    /// The port actually bound (differs from `config.port` when that is 0).
    port: u16,
    next_client_id: AtomicU64,
    snapshot_running: AtomicBool,
    snapshot_scheduled: AtomicBool,
    last_save_unix: AtomicU64,
    last_save_ok: AtomicBool,
    /// `Some(save)` once shutdown is requested. Why `watch` rather than mini-redis's
    /// broadcast: a connection that subscribes after the request still sees it, and the
    /// value carries whether to take the final snapshot.
    shutdown: watch::Sender<Option<bool>>,
    /// Why shutdown was asked for, for the log.
    shutdown_reason: Mutex<Option<String>>,
    /// Every connected client (`CLIENT LIST`, `CLIENT KILL`).
    clients: Clients,
    /// `INFO commandstats` and `errorstats`.
    command_stats: CommandStats,
    /// `SLOWLOG`.
    slowlog: SlowLog,
}

impl Shared {
    /// State for a server with `config`, listening on `port`, with an empty keyspace in
    /// its loading state.
    pub fn new(config: Config, port: u16) -> Shared {
        Shared {
            keyspace: Keyspace::new(config.maxmemory),
            settings: Settings::new(Defaults::default()),
            stats: Stats::default(),
            started: Instant::now(),
            port,
            next_client_id: AtomicU64::new(1),
            snapshot_running: AtomicBool::new(false),
            snapshot_scheduled: AtomicBool::new(false),
            last_save_unix: AtomicU64::new(now_ms() / 1000),
            last_save_ok: AtomicBool::new(true),
            shutdown: watch::channel(None).0,
            shutdown_reason: Mutex::new(None),
            clients: Clients::default(),
            command_stats: CommandStats::default(),
            slowlog: SlowLog::default(),
            config,
        }
    }

    /// Every connected client.
    pub fn clients(&self) -> &Clients {
        &self.clients
    }

    /// The per-command and per-error counters.
    pub fn command_stats(&self) -> &CommandStats {
        &self.command_stats
    }

    /// The slow log.
    pub fn slowlog(&self) -> &SlowLog {
        &self.slowlog
    }

    /// Asks the server to shut down as [`Shared::request_shutdown`] does, saying why (for
    /// the log); the first reason given is kept.
    pub fn request_shutdown_because(&self, save: bool, reason: impl Into<String>) {
        {
            let mut kept = self
                .shutdown_reason
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if kept.is_none() {
                *kept = Some(reason.into());
            }
        }
        self.request_shutdown(save);
    }

    /// Why shutdown was asked for, if a reason was given.
    pub fn shutdown_reason(&self) -> Option<String> {
        self.shutdown_reason
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The start-up options.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The keyspace.
    pub fn keyspace(&self) -> &Keyspace {
        &self.keyspace
    }

    /// The run-time settings (`CONFIG SET`).
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// What every option's current value is read from (`CONFIG GET`, `CONFIG REWRITE`,
    /// `INFO`).
    pub fn view(&self) -> View<'_> {
        View {
            config: &self.config,
            settings: &self.settings,
            keyspace: &self.keyspace,
        }
    }

    /// The counters.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// The port the server listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Time since start-up.
    pub fn uptime(&self) -> Duration {
        self.started.elapsed()
    }

    /// A fresh client ID.
    pub fn next_client_id(&self) -> u64 {
        self.next_client_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Asks the server to shut down, taking a final snapshot if `save`.
    pub fn request_shutdown(&self, save: bool) {
        self.shutdown.send_if_modified(|state| {
            // The first request decides; a later one changes nothing.
            if state.is_none() {
                *state = Some(save);
                true
            } else {
                false
            }
        });
    }

    /// A receiver that sees `Some(save)` once shutdown is requested.
    pub fn shutdown_signal(&self) -> watch::Receiver<Option<bool>> {
        self.shutdown.subscribe()
    }

    /// Where snapshots stand.
    pub fn snapshot_status(&self) -> SnapshotStatus {
        SnapshotStatus {
            in_progress: self.snapshot_running.load(Ordering::Relaxed),
            last_save_unix: self.last_save_unix.load(Ordering::Relaxed),
            last_ok: self.last_save_ok.load(Ordering::Relaxed),
        }
    }

    /// Takes a snapshot and waits until it is written. The keyspace's locks are held only
    /// while the values' `Arc`s are cloned; the writing happens on a blocking thread.
    ///
    /// # Errors
    ///
    /// [`SnapshotError::InProgress`] if one is already running, else what the journal
    /// reports.
    pub async fn snapshot(&self) -> Result<(), SnapshotError> {
        if !self.claim_snapshot() {
            return Err(SnapshotError::InProgress);
        }
        self.run_claimed_snapshot()
            .await
            .map_err(SnapshotError::Failed)
    }

    /// Starts a snapshot in the background; false if one is already running.
    pub fn start_background_snapshot(self: &Arc<Self>) -> bool {
        if !self.claim_snapshot() {
            return false;
        }
        let shared = Arc::clone(self);
        tokio::spawn(async move {
            if let Err(e) = shared.run_claimed_snapshot().await {
                log::warn_limited("background snapshot", || {
                    format!("background snapshot failed: {e}")
                });
            }
        });
        true
    }

    /// Marks a snapshot as running; false if one already is. Only the caller that gets
    /// true may call [`Shared::run_claimed_snapshot`].
    fn claim_snapshot(&self) -> bool {
        !self.snapshot_running.swap(true, Ordering::AcqRel)
    }

    async fn run_claimed_snapshot(&self) -> io::Result<()> {
        let result = self.write_snapshot().await;
        self.last_save_ok.store(result.is_ok(), Ordering::Relaxed);
        if result.is_ok() {
            self.last_save_unix
                .store(now_ms() / 1000, Ordering::Relaxed);
        }
        self.snapshot_running.store(false, Ordering::Release);
        result
    }

    async fn write_snapshot(&self) -> io::Result<()> {
        let keyspace = &self.keyspace;
        let cut = loop {
            // No new long write may start; those running finish first (their values are
            // out of the map), and an `EXEC` too.
            keyspace.want_cut();
            keyspace.write_leases_ended().await;
            // Clones every value's handle under every shard's lock: off the worker thread.
            match crate::offload::run(true, || keyspace.begin_snapshot()) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    keyspace.gate().opened().await;
                }
                cut => break cut,
            }
        };
        keyspace.cut_done();
        let (writer, entries) = cut?;
        tokio::task::spawn_blocking(move || writer.write(entries))
            .await
            .map_err(io::Error::other)?
    }

    /// Asks for a snapshot as soon as the running one ends (`BGSAVE SCHEDULE`).
    pub fn schedule_snapshot(&self) {
        self.snapshot_scheduled.store(true, Ordering::Relaxed);
    }

    /// Starts a background snapshot if one is wanted: scheduled by `BGSAVE SCHEDULE`, or
    /// asked for by the journal (the log has grown). A scheduled one stays wanted until it
    /// could start.
    pub(crate) fn start_wanted_snapshot(self: &Arc<Self>) {
        let wanted = self.snapshot_scheduled.load(Ordering::Relaxed)
            || self.keyspace.journal().is_some_and(|j| j.wants_snapshot());
        if wanted && self.start_background_snapshot() {
            self.snapshot_scheduled.store(false, Ordering::Relaxed);
        }
    }
}
