//! One connection's side of the server's limits and counters: its entry in the client
//! registry, the admission of its requests, the limits on its replies, what it adds to
//! `INFO commandstats` and `SLOWLOG`, and the waits a `CLIENT KILL` interrupts.
//!
//! The accept loop's task for a client ([`crate::server`]) holds a [`ClientHandle`] for as
//! long as the connection lives, and calls it at a few points of its loop. What it
//! enforces, with Redis's option names:
//!
//! * `client-query-buffer-limit` (1 GiB): a request that would need more is refused before
//!   it is buffered; the connection is answered `ERR Protocol error: ...` and closed (Redis
//!   closes such a client without a reply).
//! * `maxmemory`: a request or a read command's reply larger than 1 MiB (respectively
//!   64 KiB) that would take `used_memory`, the values and every client's buffers, past
//!   `maxmemory` is refused with Redis's `OOM` error, after eviction (under an evicting
//!   `maxmemory-policy`) could not make room. A refused request's bytes are read and
//!   dropped as they arrive, so the connection stays usable. Write commands' replies are
//!   always sent: they report what was done.
//! * `client-output-buffer-limit normal hard soft seconds`: a client whose unsent replies
//!   pass `hard`, or stay above `soft` for `seconds`, is disconnected (logged).
//! * Backpressure: once a client's unsent replies pass
//!   [`FLUSH_THRESHOLD`](crate::connection::FLUSH_THRESHOLD), nothing more is read from it
//!   until they are sent, so a client that pipelines without reading holds at most that
//!   much plus one reply.

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bloomkit_commands::errors::OOM;
use bloomkit_commands::table::Flag;
use bloomkit_commands::Reply;
use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncWrite};

use crate::clients::{Buffers, ClientInfo, ClientMeta, SessionMemory};

/// What a connection last published: its buffers, the bytes admitted for the request in
/// progress, what its session adds.
type Published = (Buffers, usize, SessionMemory);
use crate::cmd::table::Route;
use crate::cmd::Executed;
use crate::commandstats::{code_of, Tally};
use crate::connection::Connection;
use crate::keyspace::Keyspace;
use crate::log;
use crate::options::Options;
use crate::resp::decode::{Admission, Frame, ProtocolError, Verdict};
use crate::resp::encode::encoded_size;
use crate::session::Session;
use crate::shared::Shared;
use bloomkit_commands::Protocol;

/// A request smaller than this is never refused for `maxmemory`: every client may send
/// ordinary requests, whatever the values hold.
pub const BIG_REQUEST: usize = 1 << 20;

pub use crate::keyspace::memory::BIG_REPLY;

/// Where a client connected from, as `CLIENT LIST` shows it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Peer {
    /// The client's address, `ip:port`.
    pub addr: String,
    /// The server's address it connected to.
    pub laddr: String,
    /// The socket's file descriptor; -1 where there is none.
    pub fd: i64,
    /// Whether the client is on the loopback interface.
    pub local: bool,
}

/// What a request was, for the counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Kind {
    /// The command's (or subcommand's) name; `None` for an unknown one.
    name: Option<&'static str>,
    /// Whether it may change the keyspace.
    write: bool,
}

/// One connection's registration, limits and counters; see the [module
/// documentation](self). Dropping it takes the client out of the registry and its buffers
/// out of `used_memory`.
pub struct ClientHandle {
    shared: Arc<Shared>,
    info: Arc<ClientInfo>,
    tally: Tally,
    /// Input bytes admitted for the request in progress.
    reserved: usize,
    /// Since when the unsent replies have been above the soft limit.
    soft_since: Option<Instant>,
    /// What was last published of the session, and whether the last command changed since.
    meta: ClientMeta,
    meta_changed: bool,
    /// Whether bytes were read since a request last counted as the client's interaction:
    /// the first complete request of each read notes the time (for `idle=` and
    /// `--timeout`), not every one of a pipelined batch, each of which would read the clock.
    unnoted_read: bool,
    /// The second and the buffer sizes last noted in the registry's recent peaks.
    noted_peak: Cell<(u64, usize, usize)>,
    /// What the session adds to the count: whether it has authenticated, its `MULTI`
    /// queue (as of the last request run).
    session: SessionMemory,
    /// The buffer sizes, admitted bytes and session memory last published.
    published: Cell<Option<Published>>,
}

impl ClientHandle {
    /// Registers client `id`, connected from `peer`.
    pub fn register(shared: &Arc<Shared>, id: u64, peer: Peer) -> ClientHandle {
        let info = Arc::new(ClientInfo::new(id, peer.addr, peer.laddr, peer.fd));
        shared.clients().register(Arc::clone(&info));
        let meta = info.meta();
        ClientHandle {
            shared: Arc::clone(shared),
            info,
            tally: Tally::default(),
            reserved: 0,
            soft_since: None,
            unnoted_read: true,
            noted_peak: Cell::new((u64::MAX, 0, 0)),
            session: SessionMemory {
                authenticated: shared.config().password().is_none(),
                multi_mem: 0,
            },
            published: Cell::new(None),
            meta,
            meta_changed: false,
        }
    }

    /// The registry entry.
    pub fn info(&self) -> &Arc<ClientInfo> {
        &self.info
    }

    /// The next request in `conn`'s buffer (or one refused), with this client's limits.
    ///
    /// # Errors
    ///
    /// A malformed request, or one past `client-query-buffer-limit`.
    pub fn next_frame<S>(
        &mut self,
        conn: &mut Connection<S>,
    ) -> Result<Option<Frame>, ProtocolError>
    where
        S: AsyncRead + AsyncWrite + Unpin,
    {
        let mut gate = Gate {
            keyspace: self.shared.keyspace(),
            options: self.shared.settings().options(),
            info: &self.info,
            buffers: conn.buffers(),
            reserved: &mut self.reserved,
            session: self.session,
            published: &self.published,
        };
        let frame = conn.next_frame(&mut gate);
        if !conn.in_request() {
            self.reserved = 0;
        }
        if self.unnoted_read && matches!(frame, Ok(Some(_))) {
            self.unnoted_read = false;
            self.info.touch();
        }
        frame
    }

    /// Encodes the reply to `request` (if any), and counts it: `long` is
    /// [`offload::is_long`](crate::offload::is_long) of it, `took` how long it ran. A read
    /// command's large reply that does not fit under `maxmemory` is answered `OOM` instead.
    pub fn finish<S>(
        &mut self,
        conn: &mut Connection<S>,
        request: &[Bytes],
        long: bool,
        took: Duration,
        executed: &Executed,
        session: &Session,
    ) where
        S: AsyncRead + AsyncWrite + Unpin,
    {
        let kind = classify(request, executed.route);
        let reply = executed.reply.as_ref();
        let mut oom = None;
        if let Some(reply) = reply {
            // A long command's reply can be as long to size and encode as the command to run.
            crate::offload::run(long, || {
                // Sized before it is encoded, so a reply refused is never copied.
                let size = encoded_size(reply);
                if !kind.write && size > BIG_REPLY && !self.room_for(size) {
                    oom = Some(Reply::error(OOM));
                    log::warn_limited("reply over maxmemory", || {
                        format!(
                            "a reply of {size} bytes to client id={} addr={} would take used memory past maxmemory; answered OOM instead",
                            self.info.id, self.info.addr
                        )
                    });
                }
                conn.write_reply(oom.as_ref().unwrap_or(reply));
            });
        }
        self.tally.record(kind.name, took, oom.as_ref().or(reply));
        if let Some(name) = kind.name {
            if self.meta.last_command != name {
                self.meta.last_command = name;
                self.meta_changed = true;
            }
        }
        self.session = SessionMemory {
            authenticated: session.authenticated,
            multi_mem: session.transaction.queue_memory(),
        };
        let (multi, watch) = session.transaction.client_list_fields();
        if (self.meta.multi, self.meta.watch) != (multi, watch) {
            (self.meta.multi, self.meta.watch) = (multi, watch);
            self.meta_changed = true;
        }
        let options = self.shared.settings().options();
        self.shared.slowlog().record(
            options.slowlog_log_slower_than(),
            options.slowlog_max_len(),
            took,
            request,
            || {
                (
                    self.info.addr.clone(),
                    session.name.clone().unwrap_or_default(),
                )
            },
        );
    }

    /// Answers a request its admission refused (its text, `OOM ...`) and counts the error.
    pub fn refuse<S>(&mut self, conn: &mut Connection<S>, text: String)
    where
        S: AsyncRead + AsyncWrite + Unpin,
    {
        self.tally.count_error(code_of(&text));
        conn.write_reply(&Reply::Error(text));
    }

    /// Whether `conn`'s unsent replies are within `client-output-buffer-limit`; false:
    /// close the connection (logged).
    pub fn output_within_limits<S>(&mut self, conn: &Connection<S>) -> bool
    where
        S: AsyncRead + AsyncWrite + Unpin,
    {
        let unsent = conn.output_unsent() as u64;
        let limit = self.shared.settings().options().output_limit();
        let over = if limit.hard_bytes > 0 && unsent > limit.hard_bytes {
            Some("hard")
        } else if limit.soft_bytes > 0 && unsent > limit.soft_bytes {
            let since = *self.soft_since.get_or_insert_with(Instant::now);
            (since.elapsed() >= Duration::from_secs(limit.soft_seconds)).then_some("soft")
        } else {
            self.soft_since = None;
            None
        };
        let Some(which) = over else {
            return true;
        };
        log::warn_limited("output buffer limit", || {
            format!(
                "Client id={} addr={} closed for overcoming of output buffer limits ({which} limit; {unsent} bytes unsent)",
                self.info.id, self.info.addr
            )
        });
        false
    }

    /// Ends a batch of requests: hands the counters over and publishes the buffers, the
    /// name and the last command.
    pub fn end_batch<S>(&mut self, conn: &Connection<S>, session: &Session)
    where
        S: AsyncRead + AsyncWrite + Unpin,
    {
        if !self.tally.is_empty() {
            self.shared.command_stats().merge(&mut self.tally);
        }
        self.publish(conn);
        let resp = match session.protocol {
            Protocol::Resp2 => 2,
            Protocol::Resp3 => 3,
        };
        let changed = self.meta_changed
            || self.meta.name != session.name
            || self.meta.lib_name != session.lib_name
            || self.meta.lib_ver != session.lib_ver
            || self.meta.resp != resp;
        if changed {
            self.meta_changed = false;
            self.meta.name.clone_from(&session.name);
            self.meta.lib_name.clone_from(&session.lib_name);
            self.meta.lib_ver.clone_from(&session.lib_ver);
            self.meta.resp = resp;
            self.info.set_meta(self.meta.clone());
        }
    }

    /// Publishes `conn`'s buffer sizes (for `CLIENT LIST`, `INFO` and `maxmemory`).
    pub fn publish<S>(&self, conn: &Connection<S>)
    where
        S: AsyncRead + AsyncWrite + Unpin,
    {
        let buffers = conn.buffers();
        let keyspace = self.shared.keyspace();
        // Unchanged since the last batch (a client sending one request at a time): the
        // registry and the keyspace's client memory already say so.
        let now = (buffers, self.reserved, self.session);
        if self.published.get() != Some(now) {
            self.published.set(Some(now));
            self.info
                .publish(keyspace, buffers, self.reserved, self.session);
        }
        // The registry's peaks are behind one mutex for all clients: each client takes it
        // only when it passes what it noted already this second.
        let second = keyspace.clock_seconds();
        let input = buffers.input_len.max(buffers.input_capacity);
        let output = buffers.output_len;
        let (noted_second, noted_input, noted_output) = self.noted_peak.get();
        if noted_second != second || input > noted_input || output > noted_output {
            let (input, output) = if noted_second == second {
                (input.max(noted_input), output.max(noted_output))
            } else {
                (input, output)
            };
            self.noted_peak.set((second, input, output));
            self.shared.clients().note_peak(second, input, output);
        }
    }

    /// Sends `conn`'s replies; false if the connection should close: the socket failed, the
    /// client was killed, or it stayed past the soft output limit while the replies waited.
    pub async fn flush<S>(&mut self, conn: &mut Connection<S>) -> bool
    where
        S: AsyncRead + AsyncWrite + Unpin,
    {
        if conn.output_unsent() == 0 {
            return true;
        }
        self.publish(conn);
        let info = Arc::clone(&self.info);
        loop {
            let limit = self.shared.settings().options().output_limit();
            let deadline = self
                .soft_since
                .filter(|_| limit.soft_bytes > 0)
                .map(|since| since + Duration::from_secs(limit.soft_seconds));
            let soft_deadline = async {
                match deadline {
                    Some(at) => tokio::time::sleep_until(at.into()).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                sent = conn.flush() => {
                    self.soft_since = None;
                    self.publish(conn);
                    return sent.is_ok();
                }
                () = info.killed() => return false,
                () = soft_deadline => {
                    if !self.output_within_limits(conn) {
                        return false;
                    }
                }
            }
        }
    }

    /// Waits for more bytes from the client: false if the connection should close (the
    /// client left or the socket failed, or `stop` completed: the server is shutting down,
    /// or the client was killed). `stop` lives as long as the connection and must not be
    /// polled again once it has completed.
    pub async fn wait_input<S>(
        &mut self,
        conn: &mut Connection<S>,
        stop: Pin<&mut impl Future<Output = ()>>,
    ) -> bool
    where
        S: AsyncRead + AsyncWrite + Unpin,
    {
        self.unnoted_read = true;
        tokio::select! {
            more = conn.fill() => matches!(more, Ok(true)),
            () = stop => false,
        }
    }

    /// Whether `CLIENT KILL` (or a limit) asked this connection to close.
    pub fn is_killed(&self) -> bool {
        self.info.is_killed()
    }

    /// Whether `bytes` more of client buffers fit under `maxmemory`, evicting keys first
    /// under an evicting policy.
    fn room_for(&self, bytes: usize) -> bool {
        self.shared.keyspace().make_room(bytes, b"")
    }
}

impl Drop for ClientHandle {
    fn drop(&mut self) {
        if !self.tally.is_empty() {
            self.shared.command_stats().merge(&mut self.tally);
        }
        self.shared.clients().unregister(self.info.id);
        self.info.unpublish(self.shared.keyspace());
    }
}

/// A connection's [`Admission`]: `client-query-buffer-limit`, then `maxmemory`.
struct Gate<'a> {
    keyspace: &'a Keyspace,
    options: &'a Options,
    info: &'a ClientInfo,
    buffers: Buffers,
    reserved: &'a mut usize,
    session: SessionMemory,
    /// The handle's record of what was last published, which this publishes too.
    published: &'a Cell<Option<Published>>,
}

impl Admission for Gate<'_> {
    fn admit(&mut self, request_bytes: usize) -> Verdict {
        let limit = self.options.query_buffer_limit();
        if request_bytes as u64 > limit {
            log::warn_limited("query buffer limit", || {
                format!(
                    "Closing client id={} addr={}: a request of over {request_bytes} bytes passes client-query-buffer-limit ({limit} bytes)",
                    self.info.id, self.info.addr
                )
            });
            return Verdict::Close(format!(
                "the request is larger than client-query-buffer-limit ({limit} bytes): send smaller requests, or raise the limit (CONFIG SET client-query-buffer-limit)"
            ));
        }
        if request_bytes > BIG_REQUEST && self.keyspace.maxmemory() > 0 {
            let extra = request_bytes.saturating_sub(self.buffers.input_capacity);
            if !self.keyspace.make_room(extra, b"") {
                log::warn_limited("request over maxmemory", || {
                    format!(
                        "a request of {request_bytes} bytes from client id={} addr={} would take used memory past maxmemory; refused with OOM",
                        self.info.id, self.info.addr
                    )
                });
                return Verdict::Refuse(OOM.to_string());
            }
        }
        *self.reserved = request_bytes;
        self.info
            .publish(self.keyspace, self.buffers, request_bytes, self.session);
        self.published
            .set(Some((self.buffers, request_bytes, self.session)));
        Verdict::Admit
    }
}

/// The command a request names, for the counters: a container's subcommand by its full
/// name (`client|list`), as Redis counts them.
fn classify(request: &[Bytes], route: Option<Route>) -> Kind {
    let unknown = Kind {
        name: None,
        write: false,
    };
    match route {
        None => unknown,
        Some(Route::Filter(row)) => Kind {
            name: Some(row.spec.name),
            write: row.spec.has(Flag::Write),
        },
        Some(Route::Generic(row)) => {
            let spec = &row.spec;
            if spec.subcommands.is_empty() || request.len() < 2 {
                return Kind {
                    name: Some(spec.name),
                    write: spec.has(Flag::Write),
                };
            }
            match spec.subcommand(&request[1]) {
                Some(sub) => Kind {
                    name: Some(sub.name),
                    write: sub.has(Flag::Write) || spec.has(Flag::Write),
                },
                None => unknown,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&str]) -> Vec<Bytes> {
        words.iter().map(|w| Bytes::from(w.to_string())).collect()
    }

    #[test]
    fn requests_are_counted_under_their_command_or_subcommand() {
        let kind = |words: &[&str]| {
            let request = args(words);
            classify(&request, crate::cmd::table::route(&request[0]))
        };
        assert_eq!(kind(&["BF.ADD", "k", "x"]).name, Some("bf.add"));
        assert!(kind(&["bf.add", "k", "x"]).write);
        assert!(!kind(&["BF.SCANDUMP", "k", "0"]).write);
        assert_eq!(
            kind(&["client", "SETNAME", "x"]).name,
            Some("client|setname")
        );
        assert_eq!(kind(&["client"]).name, Some("client"));
        assert_eq!(kind(&["client", "nope"]).name, None);
        assert_eq!(kind(&["nope"]).name, None);
        assert!(kind(&["DEL", "k"]).write);
    }
}
