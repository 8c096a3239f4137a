//! The server: the accept loop, one task per client, housekeeping, and graceful shutdown.
//!
//! What the connections share, and the commands reach, is [`Shared`], in its own module.
//! [`Server::bind`] opens the listener (and, through its journal hook, recovers the
//! keyspace); [`Server::run_until`] accepts clients until its shutdown future completes,
//! `SHUTDOWN` is sent, or it is dropped, then lets every connection finish the command it
//! is running, syncs the log and takes a final snapshot.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bloomkit_commands::Reply;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

use crate::client_handle::{ClientHandle, Peer};
use crate::config::Config;
use crate::connection::{Connection, FLUSH_THRESHOLD};
use crate::dispatch::execute;
use crate::keyspace::{Journal, NoJournal, Ticket};
use crate::lifecycle::{self, DataFiles};
use crate::log;
use crate::persist::{Persistence, PersistentJournal};
use crate::resp::decode::Frame;
use crate::session::Session;
use crate::shared::{Shared, SnapshotError};

/// How often expired keys are swept and the journal is asked whether it wants a snapshot.
const TICK: Duration = Duration::from_millis(100);

/// How long shutdown waits for connections to finish the command they are running (a
/// client that never reads its replies must not keep the server up forever).
const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);

/// The reply to a client over `--maxclients`, sent before closing.
const MAX_CLIENTS_REACHED: &[u8] = b"-ERR max number of clients reached\r\n";

/// Loads what start-up found into `shared`'s keyspace: the snapshot's keys, then the log's
/// commands replayed through the dispatcher; returns how many were replayed.
fn load(shared: &Arc<Shared>, recovery: &mut crate::persist::Recovery) -> io::Result<u64> {
    let keyspace = shared.keyspace();
    for entry in recovery.take_entries() {
        keyspace.restore(entry.key, entry.expires_at_ms, entry.value);
    }
    recovery
        .for_each_command(|args| crate::dispatch::replay(shared, &args))
        .map_err(|e| io::Error::other(e.to_string()))
}

/// A listening server: [`Server::bind`], then [`Server::run_until`].
///
/// # Examples
///
/// ```no_run
/// use bloomkit_server::config::Config;
/// use bloomkit_server::server::Server;
///
/// # async fn serve() -> std::io::Result<()> {
/// let server = Server::bind(Config { port: 0, ..Config::default() }).await?;
/// println!("listening on {}", server.local_addr()?);
/// server.run_until(tokio::signal::ctrl_c()).await
/// # }
/// ```
pub struct Server {
    listener: TcpListener,
    shared: Arc<Shared>,
}

impl Server {
    /// Binds `config.bind:config.port`, without persistence (nothing is loaded, logged or
    /// snapshotted): see [`Server::bind_with`].
    ///
    /// # Errors
    ///
    /// When the address cannot be bound (in use, not an address of this machine).
    pub async fn bind(config: Config) -> io::Result<Server> {
        lifecycle::starting(&config, false);
        Server::bind_with(config, |_| Ok(Arc::new(NoJournal) as Arc<dyn Journal>)).await
    }

    /// Binds `config.bind:config.port` and serves the data directory `config.dir` (created
    /// if missing): loads its snapshot, replays its log, and from then on logs every write
    /// with `config.appendfsync`. What `bloomkit serve` runs.
    ///
    /// # Errors
    ///
    /// When the address cannot be bound; when the directory cannot be opened or is in use
    /// by another server; when the snapshot or the log is corrupt (the message names the
    /// file and the byte offset, and says how to proceed). A torn record at the end of the
    /// log (a crash in the middle of a write) is not an error: it is cut away and reported
    /// on standard error.
    pub async fn open(config: Config) -> io::Result<Server> {
        Server::open_with(config, |_| {}).await
    }

    /// [`Server::open`], calling `tune` with the recovered [`Persistence`] before any
    /// client is served: to change what the flags do not, such as
    /// [`Persistence::set_auto_snapshot_min_bytes`] (tests use it to see automatic
    /// snapshots without writing 64 MiB).
    ///
    /// # Errors
    ///
    /// As [`Server::open`].
    pub async fn open_with<T>(config: Config, tune: T) -> io::Result<Server>
    where
        T: FnOnce(&Persistence) + Send + 'static,
    {
        let dir = config.dir.clone();
        let policy = config.appendfsync;
        lifecycle::starting(&config, true);
        Server::bind_with(config, move |shared| {
            let started = Instant::now();
            let files = DataFiles::of(&dir);
            let (persistence, mut recovery) =
                Persistence::open(&dir, policy).map_err(|e| io::Error::other(e.to_string()))?;
            for warning in recovery.warnings() {
                log::warning(warning);
            }
            let replayed = load(shared, &mut recovery)?;
            let keys = shared.keyspace().len();
            lifecycle::loaded(&dir, files, keys, replayed, started.elapsed());
            tune(&persistence);
            Ok(Arc::new(PersistentJournal::new(persistence)) as Arc<dyn Journal>)
        })
        .await
    }

    /// The keys of a stopped server's data directory `dir`, loaded as [`Server::open`]
    /// loads them but without a listener, a log to append to, or any change to the
    /// directory ([`Persistence::inspect`]): for reading a stopped server's filters (`bloomkit
    /// copy`). The returned state's keyspace holds them; it stays in its loading state, so
    /// nothing expires or is logged. Repairs start-up would make are returned as warnings.
    ///
    /// # Errors
    ///
    /// A server runs on `dir` (the message says so); `dir` is not a directory; the
    /// snapshot or the log is damaged (naming the file and the byte offset).
    pub fn load_stopped(dir: &std::path::Path) -> io::Result<(Arc<Shared>, Vec<String>)> {
        let mut stopped = Persistence::inspect(dir).map_err(|e| io::Error::other(e.to_string()))?;
        let shared = Arc::new(Shared::new(Config::default(), 0));
        load(&shared, &mut stopped.recovery)?;
        Ok((shared, stopped.recovery.warnings().to_vec()))
    }

    /// Binds the listener, then recovers the keyspace with `open`: it loads the snapshot
    /// ([`Keyspace::restore`](crate::keyspace::Keyspace::restore)) and replays the log
    /// ([`crate::dispatch::replay`]) into the loading keyspace, and returns the journal to
    /// append to from then on. It runs on a blocking thread, before any client is accepted.
    ///
    /// # Errors
    ///
    /// When the address cannot be bound, or what `open` fails with (a corrupt snapshot,
    /// say): the server must not start on partial data.
    pub async fn bind_with<F>(mut config: Config, open: F) -> io::Result<Server>
    where
        F: FnOnce(&Arc<Shared>) -> io::Result<Arc<dyn Journal>> + Send + 'static,
    {
        // Before anything takes a descriptor: clients past the limit must be refused, not
        // left in the backlog.
        let (maxclients, fitted) =
            crate::limits::fit_open_files(config.maxclients).map_err(io::Error::other)?;
        if let Some(message) = fitted.message() {
            eprintln!("bloomkit serve: {message}");
        }
        config.maxclients = maxclients;
        let listener = TcpListener::bind((config.bind.as_str(), config.port))
            .await
            .map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!(
                        "cannot listen on {}:{}: {e} (choose another --port or --bind)",
                        config.bind, config.port
                    ),
                )
            })?;
        let port = listener.local_addr()?.port();
        log::set_level(config.loglevel);
        let shared = Arc::new(Shared::new(config, port));
        // The run-time options given at start-up, by flags or the config file (the start-up
        // ones are in `config` already).
        shared
            .settings()
            .apply_startup(shared.config(), shared.keyspace())
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        let loading = Arc::clone(&shared);
        let journal = tokio::task::spawn_blocking(move || open(&loading))
            .await
            .map_err(io::Error::other)??;
        shared.keyspace().finish_loading(journal);
        Ok(Server { listener, shared })
    }

    /// The address the server listens on (with the real port when bound to port 0).
    ///
    /// # Errors
    ///
    /// If the OS cannot tell (it always can for a bound socket).
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// The state every connection shares (the keyspace, settings and counters).
    pub fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// Serves clients until `shutdown` completes or a client sends `SHUTDOWN`; then stops
    /// accepting, lets each connection finish its current command (closing idle ones at
    /// once), syncs the log and takes a final snapshot (unless `SHUTDOWN NOSAVE`).
    ///
    /// # Errors
    ///
    /// When the log cannot be synced at the end. A failed final snapshot is reported on
    /// standard error but is not an error: the synced log still holds every write.
    pub async fn run_until(self, shutdown: impl Future) -> io::Result<()> {
        let Server { listener, shared } = self;
        // Every connection task holds a clone of `drained_tx`; when all are dropped,
        // `drained_rx` wakes: the mini-redis way to wait for tasks to finish.
        let (drained_tx, mut drained_rx) = mpsc::channel::<()>(1);
        let mut requested = shared.shutdown_signal();
        if let Ok(addr) = listener.local_addr() {
            lifecycle::ready(addr);
        }
        let housekeeping = tokio::spawn(housekeeping(Arc::clone(&shared)));
        tokio::select! {
            () = accept_loop(&listener, &shared, &drained_tx) => {}
            _ = shutdown => shared.request_shutdown(true),
            _ = requested.wait_for(Option::is_some) => {}
        }
        // Stop accepting before draining, so no new client slips in.
        drop(listener);
        drop(drained_tx);
        let save = shared.shutdown_signal().borrow().unwrap_or(true);
        lifecycle::stopping(&shared, save);
        if tokio::time::timeout(DRAIN_TIMEOUT, drained_rx.recv())
            .await
            .is_err()
        {
            log::warning(format_args!(
                "some clients did not finish within {DRAIN_TIMEOUT:?}; shutting down anyway"
            ));
        }
        housekeeping.abort();
        if let Some(journal) = shared.keyspace().journal().cloned() {
            let synced = tokio::task::spawn_blocking(move || journal.sync())
                .await
                .map_err(io::Error::other)
                .and_then(|r| r);
            if let Err(e) = synced {
                // Still let go of the directory before reporting the failure.
                if let Some(journal) = shared.keyspace().journal().cloned() {
                    let _ = tokio::task::spawn_blocking(move || journal.close()).await;
                }
                return Err(e);
            }
        }
        if save {
            let started = Instant::now();
            loop {
                match shared.snapshot().await {
                    // A BGSAVE is running: wait for it, then take ours, which includes
                    // everything written since it began.
                    Err(SnapshotError::InProgress) => tokio::time::sleep(TICK / 10).await,
                    Err(SnapshotError::Failed(e)) => {
                        // Only true while the log takes writes: after a failure, what it
                        // could not write is not on disk anywhere.
                        let log = match shared.keyspace().journal().and_then(|j| j.refuses_writes())
                        {
                            None => "the log still holds every write".to_string(),
                            Some(why) => format!("nor could the log be written ({why})"),
                        };
                        log::warning(format_args!("final snapshot failed ({e}); {log}"));
                        break;
                    }
                    Ok(()) => {
                        lifecycle::saved(&shared, started.elapsed());
                        break;
                    }
                }
            }
        }
        // Release the data directory now, not when the last task holding the server's
        // state happens to end: a server restarted right away must be able to open it.
        if let Some(journal) = shared.keyspace().journal().cloned() {
            tokio::task::spawn_blocking(move || journal.close())
                .await
                .map_err(io::Error::other)??;
        }
        lifecycle::stopped();
        Ok(())
    }
}

/// Accepts clients until the task is dropped (at shutdown). Never returns: accept errors
/// (out of file descriptors, a client that reset before we got to it) are waited out.
async fn accept_loop(listener: &TcpListener, shared: &Arc<Shared>, drained: &mpsc::Sender<()>) {
    let mut backoff = Duration::from_millis(1);
    let protected = crate::protected::is_active(shared.config());
    let idle_timeout = shared.config().idle_timeout();
    loop {
        let socket = match listener.accept().await {
            Ok((socket, peer)) => {
                backoff = Duration::from_millis(1);
                if protected && crate::protected::refuses(peer.ip()) {
                    refuse(socket, crate::protected::DENIED);
                    continue;
                }
                socket
            }
            Err(e) => {
                // EMFILE and friends pass when other clients leave; retrying at once
                // would spin.
                log::warn_limited("accept", || format!("accept failed: {e}"));
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(1));
                continue;
            }
        };
        shared.stats().count_connection();
        // Only this loop adds clients, so checking and then counting cannot race past
        // the limit.
        if shared.stats().connected_clients() >= shared.config().maxclients {
            shared.stats().count_rejection();
            refuse(socket, MAX_CLIENTS_REACHED);
            continue;
        }
        // Replies are flushed whole, once per batch: Nagle's delay would only add latency.
        let _ = socket.set_nodelay(true);
        let peer = peer_of(&socket);
        let client = ClientGuard::new(Arc::clone(shared));
        let drained = drained.clone();
        tokio::spawn(async move {
            let shared = Arc::clone(&client.shared);
            let conn = Connection::new(socket).with_idle_timeout(idle_timeout);
            serve_client(&shared, conn, peer).await;
            // The server's state first, then the signal that this client is done.
            drop(shared);
            drop(client);
            drop(drained);
        });
    }
}

/// Where a socket connects, as `CLIENT LIST` shows it.
fn peer_of(socket: &tokio::net::TcpStream) -> Peer {
    let address = |addr: io::Result<SocketAddr>| addr.map(|a| a.to_string()).unwrap_or_default();
    #[cfg(unix)]
    let fd = i64::from(std::os::fd::AsRawFd::as_raw_fd(socket));
    #[cfg(not(unix))]
    let fd = -1;
    Peer {
        addr: address(socket.peer_addr()),
        laddr: address(socket.local_addr()),
        fd,
        local: socket
            .peer_addr()
            .is_ok_and(|addr| crate::protected::is_local(addr.ip())),
    }
}

/// Answers `reply` to a client the server will not serve, and closes, in a task of its own
/// (bounded, so that a client that never reads cannot keep it).
fn refuse(socket: tokio::net::TcpStream, reply: &'static [u8]) {
    tokio::spawn(async move {
        let mut socket = socket;
        let _ = tokio::time::timeout(Duration::from_secs(10), async {
            let _ = socket.write_all(reply).await;
            let _ = socket.shutdown().await;
        })
        .await;
    });
}

/// Counts a connected client for as long as it lives, however its task ends.
struct ClientGuard {
    shared: Arc<Shared>,
}

impl ClientGuard {
    fn new(shared: Arc<Shared>) -> ClientGuard {
        shared.stats().client_connected();
        ClientGuard { shared }
    }
}

impl Drop for ClientGuard {
    fn drop(&mut self) {
        self.shared.stats().client_disconnected();
    }
}

/// Serves one client until it leaves, breaks the protocol, sends `QUIT`/`SHUTDOWN`, or
/// the server shuts down while it is idle.
///
/// Every complete request already read is run before anything is sent; then the writes
/// they made are awaited durable (once, for the last ticket), and all their replies go out
/// in one flush. So a pipeline of a thousand commands costs one `write` and, with
/// `appendfsync always`, one `fsync`, and no reply ever leaves before its write is as
/// durable as promised.
async fn serve_client<S>(shared: &Arc<Shared>, mut conn: Connection<S>, peer: Peer)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut session = Session {
        local: peer.local,
        ..Session::new(shared)
    };
    conn.set_authenticated(session.authenticated);
    let mut client = ClientHandle::register(shared, session.id, peer);
    // One future for the connection's life, not one per wait: each wait would otherwise
    // register with both signals and unregister again (about 500 instructions a request
    // for a client that sends one at a time).
    let mut shutdown = shared.shutdown_signal();
    let info = Arc::clone(client.info());
    let stop = async {
        tokio::select! {
            _ = shutdown.wait_for(Option::is_some) => {}
            () = info.killed() => {}
        }
    };
    tokio::pin!(stop);
    let mut ticket = None;
    // Where each reply not yet sent starts in the output, and what it waits for.
    let mut unsent = Vec::new();
    let mut commands = 0;
    loop {
        // Run everything already buffered, without touching the socket.
        loop {
            let request = match client.next_frame(&mut conn) {
                Ok(Some(Frame::Request(request))) => request,
                Ok(Some(Frame::Refused(text))) => {
                    unsent.push((conn.pending_output(), None));
                    client.refuse(&mut conn, text);
                    // A command refused inside MULTI spoils the transaction, as Redis's
                    // refusals do.
                    session.transaction.refuse();
                    continue;
                }
                Ok(None) => break,
                Err(error) => {
                    shared.stats().count_commands(commands);
                    // Answer what came before the bad request, then the error, and close:
                    // the byte stream can no longer be trusted to be in step.
                    settle(shared, &mut conn, &mut ticket, &mut unsent).await;
                    let _ = conn.reject(&error).await;
                    return;
                }
            };
            let long = crate::dispatch::is_long_request(&request);
            let started = Instant::now();
            let executed = execute(shared, &mut session, &request, long).await;
            let took = started.elapsed();
            commands += 1;
            conn.set_protocol(session.protocol);
            conn.set_authenticated(session.authenticated);
            if executed.reply.is_some() {
                unsent.push((conn.pending_output(), executed.ticket));
            }
            client.finish(&mut conn, &request, long, took, &executed, &session);
            ticket = ticket.max(executed.ticket);
            // Neither the request nor its reply (now encoded) is kept while replies wait; a
            // long command's are as long to free as to run.
            let close = executed.close;
            crate::offload::run(long, || drop((request, executed)));
            if close || !client.output_within_limits(&conn) || client.is_killed() {
                shared.stats().count_commands(commands);
                client.end_batch(&conn, &session);
                if close {
                    settle(shared, &mut conn, &mut ticket, &mut unsent).await;
                    let _ = client.flush(&mut conn).await;
                }
                return;
            }
            // A very long pipeline sends its replies in parts rather than buffer them all,
            // and reads no more of the client's requests until they are sent.
            if conn.pending_output() >= FLUSH_THRESHOLD {
                settle(shared, &mut conn, &mut ticket, &mut unsent).await;
                if !client.flush(&mut conn).await {
                    return;
                }
            }
        }
        join_the_next_log_write(shared, ticket, commands).await;
        shared.stats().count_commands(std::mem::take(&mut commands));
        client.end_batch(&conn, &session);
        settle(shared, &mut conn, &mut ticket, &mut unsent).await;
        if !client.flush(&mut conn).await {
            return;
        }
        // Wait for more bytes, or for shutdown: an idle client is closed at once, one in
        // the middle of a command finishes it first (we only get here between commands).
        if !client.wait_input(&mut conn, stop.as_mut()).await {
            return;
        }
    }
}

/// Before a connection that ran a pipelined batch (`batch_len` requests) makes the
/// `write` of the log its replies wait for, lets the other connections with requests ready
/// run theirs first (one `yield`, to the back of the runtime's queue), so that one `write`
/// covers all of their records and theirs find their tickets already written: Redis writes
/// its AOF buffer once per event-loop iteration for the same reason. Nothing is sent
/// meanwhile, so no reply goes out before its write.
///
/// Only for a pipelined batch: a client that sends one request at a time waits for each
/// reply, and the yield would add a round of the runtime to its latency; and with few
/// requests per round the round itself (parking, waking the other workers) costs more
/// than the `write`s it saves (measured with 50 clients: 0.9 µs of server CPU more per
/// unpipelined `CF.ADD`, where at `-P 16` it saves 0.1 to 0.2 µs per request and 7 of 8
/// `write`s). Not with a single client either: nobody would join.
async fn join_the_next_log_write(shared: &Shared, ticket: Option<Ticket>, batch_len: u64) {
    if batch_len < 2 || shared.stats().connected_clients() < 2 {
        return;
    }
    let buffered = match (ticket, shared.keyspace().journal()) {
        (Some(t), Some(journal)) => journal.is_buffered(t),
        _ => false,
    };
    if buffered {
        tokio::task::yield_now().await;
    }
}

/// Awaits the journal for `ticket` (and clears it) before the replies in `conn`'s output
/// go out. If what they waited for could not be made durable (the log cannot be written),
/// each reply that waited for something not on disk becomes the journal's error, Redis's
/// `MISCONF` line: nothing unwritten is acknowledged, and the client still hears back. The
/// other replies go out as they are.
async fn settle<S>(
    shared: &Shared,
    conn: &mut Connection<S>,
    ticket: &mut Option<Ticket>,
    unsent: &mut Vec<(usize, Option<Ticket>)>,
) where
    S: AsyncRead + AsyncWrite + Unpin,
{
    // Cleared rather than taken, so that it keeps its capacity from one batch to the next.
    settle_replies(shared, conn, ticket, unsent).await;
    unsent.clear();
}

/// [`settle`] for the replies listed in `replies`.
async fn settle_replies<S>(
    shared: &Shared,
    conn: &mut Connection<S>,
    ticket: &mut Option<Ticket>,
    replies: &[(usize, Option<Ticket>)],
) where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let (Some(last), Some(journal)) = (ticket.take(), shared.keyspace().journal()) else {
        return;
    };
    if journal.durable(last).await.is_ok() {
        return;
    }
    // Which of them: each answers at once now (written and synced, or not).
    let mut errors = Vec::with_capacity(replies.len());
    for (_, waited) in replies {
        let failed = match waited {
            Some(t) => journal.durable(*t).await.err(),
            None => None,
        };
        errors.push(failed.map(|e| error_reply(&e)));
    }
    let starts: Vec<usize> = replies.iter().map(|(start, _)| *start).collect();
    conn.replace_unsent(&starts, |i| errors[i].take());
}

/// A journal's error as an error reply: its text, which names its error code
/// (`MISCONF ...`), or `ERR` before it if it does not.
fn error_reply(e: &io::Error) -> Reply {
    let text = e.to_string().replace(['\r', '\n'], " ");
    let coded = text
        .split_once(' ')
        .is_some_and(|(code, _)| !code.is_empty() && code.bytes().all(|b| b.is_ascii_uppercase()));
    Reply::Error(if coded { text } else { format!("ERR {text}") })
}

/// Advances the access clock, sweeps expired keys, rotates aging keys whose period has
/// come and starts wanted snapshots every
/// [`TICK`], until aborted.
async fn housekeeping(shared: Arc<Shared>) {
    let mut interval = tokio::time::interval(TICK);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        interval.tick().await;
        shared.keyspace().tick_access_clock();
        let tick_shared = Arc::clone(&shared);
        // The sweep and the aging keys' rotations take locks and may scan many keys: off
        // the async workers.
        let _ = tokio::task::spawn_blocking(move || {
            let keyspace = tick_shared.keyspace();
            keyspace.sweep_expired();
            keyspace.rotate_due_aging(&tick_shared.settings().defaults());
        })
        .await;
        shared.start_wanted_snapshot();
    }
}
