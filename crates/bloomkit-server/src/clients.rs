//! Every connected client, as `CLIENT LIST`, `CLIENT KILL`, `INFO clients` and the memory
//! limits see it.
//!
//! A connection registers a [`ClientInfo`] when it is accepted and publishes into it what
//! other clients' commands may ask about: its buffers' sizes (after each batch of requests
//! and each time they grow), its name and protocol, its last command. Everything a
//! connection updates per request is an atomic or a lock only it takes outside `CLIENT
//! LIST`, so the registry costs no contention on the request path; the registry's own lock
//! is taken only when a client comes or goes and by the commands that list clients.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use bytes::Bytes;
use tokio::sync::Notify;

use crate::keyspace::Keyspace;

/// What a connection says about itself besides its buffers.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClientMeta {
    /// `CLIENT SETNAME`.
    pub name: Option<Bytes>,
    /// `CLIENT SETINFO LIB-NAME`.
    pub lib_name: Option<Bytes>,
    /// `CLIENT SETINFO LIB-VER`.
    pub lib_ver: Option<Bytes>,
    /// 2 or 3.
    pub resp: u8,
    /// The last command run (`client|list` for a subcommand), `NULL` before any.
    pub last_command: &'static str,
    /// Commands queued in a transaction; -1 outside `MULTI`.
    pub multi: i64,
    /// Keys `WATCH`ed.
    pub watch: usize,
}

/// The sizes of a connection's buffers, in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Buffers {
    /// Bytes read and not yet run (Redis's `qbuf`).
    pub input_len: usize,
    /// The read buffer's allocation (`qbuf` + `qbuf-free`).
    pub input_capacity: usize,
    /// Replies not yet sent (`omem`).
    pub output_len: usize,
    /// The output buffer's allocation.
    pub output_capacity: usize,
}

impl Buffers {
    /// What the connection holds in all: what `maxmemory` counts for it (`tot-mem`).
    pub fn total(&self) -> usize {
        CLIENT_OVERHEAD
            + self.input_capacity.max(self.input_len)
            + self.output_capacity.max(self.output_len)
    }
}

/// What a connection's session adds to its count: whether it counts against `maxmemory`
/// (its client has authenticated, or needs not), and its `MULTI` queue.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SessionMemory {
    /// Whether the client has authenticated (or needs not): only then do its buffers count
    /// against `maxmemory` (see [`Keyspace::memory_in_use`]).
    pub authenticated: bool,
    /// Bytes its `MULTI` queue holds (`multi-mem`).
    pub multi_mem: usize,
}

/// What a connection costs beside its buffers (its session, parser, task and registry
/// entry), counted with them as Redis counts its client structure.
pub const CLIENT_OVERHEAD: usize = 1024;

/// One connected client.
#[derive(Debug)]
pub struct ClientInfo {
    /// `CLIENT ID`.
    pub id: u64,
    /// The peer's address, `ip:port`.
    pub addr: String,
    /// The local address it connected to.
    pub laddr: String,
    /// The socket's file descriptor (-1 where there is none).
    pub fd: i64,
    created: Instant,
    /// Milliseconds from `created` to the last request.
    last_interaction_ms: AtomicU64,
    meta: Mutex<ClientMeta>,
    input_len: AtomicUsize,
    input_capacity: AtomicUsize,
    output_len: AtomicUsize,
    output_capacity: AtomicUsize,
    /// What this client adds to the keyspace's client memory now.
    counted: AtomicUsize,
    /// Whether it is counted as a client that has authenticated.
    counted_authenticated: AtomicBool,
    /// Bytes its `MULTI` queue holds.
    multi_mem: AtomicUsize,
    killed: AtomicBool,
    kill: Notify,
}

impl ClientInfo {
    /// A client just accepted.
    pub fn new(id: u64, addr: String, laddr: String, fd: i64) -> ClientInfo {
        ClientInfo {
            id,
            addr,
            laddr,
            fd,
            created: Instant::now(),
            last_interaction_ms: AtomicU64::new(0),
            meta: Mutex::new(ClientMeta {
                resp: 2,
                last_command: "NULL",
                multi: -1,
                ..ClientMeta::default()
            }),
            input_len: AtomicUsize::new(0),
            input_capacity: AtomicUsize::new(0),
            output_len: AtomicUsize::new(0),
            output_capacity: AtomicUsize::new(0),
            counted: AtomicUsize::new(0),
            counted_authenticated: AtomicBool::new(false),
            multi_mem: AtomicUsize::new(0),
            killed: AtomicBool::new(false),
            kill: Notify::new(),
        }
    }

    /// Seconds since it connected.
    pub fn age_secs(&self) -> u64 {
        self.created.elapsed().as_secs()
    }

    /// Seconds since its last request.
    pub fn idle_secs(&self) -> u64 {
        let since = self.created.elapsed().as_millis() as u64;
        since.saturating_sub(self.last_interaction_ms.load(Ordering::Relaxed)) / 1000
    }

    /// Notes a request now.
    pub fn touch(&self) {
        self.last_interaction_ms
            .store(self.created.elapsed().as_millis() as u64, Ordering::Relaxed);
    }

    /// Its name, protocol and last command.
    pub fn meta(&self) -> ClientMeta {
        self.meta
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Replaces its name, protocol and last command; only its own connection calls this.
    pub fn set_meta(&self, meta: ClientMeta) {
        *self.meta.lock().unwrap_or_else(PoisonError::into_inner) = meta;
    }

    /// Records the last command only.
    pub fn set_last_command(&self, name: &'static str) {
        self.meta
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .last_command = name;
    }

    /// Its buffers as last published.
    pub fn buffers(&self) -> Buffers {
        Buffers {
            input_len: self.input_len.load(Ordering::Relaxed),
            input_capacity: self.input_capacity.load(Ordering::Relaxed),
            output_len: self.output_len.load(Ordering::Relaxed),
            output_capacity: self.output_capacity.load(Ordering::Relaxed),
        }
    }

    /// Publishes its buffers' sizes and counts their total (plus `reserved`, input bytes
    /// admitted but not yet allocated, and `session`'s `MULTI` queue) in the keyspace's
    /// client memory: the memory `maxmemory` limits if the client has authenticated, the
    /// memory only reported if not. Returns the total counted. Only the client's own
    /// connection calls it.
    pub fn publish(
        &self,
        keyspace: &Keyspace,
        buffers: Buffers,
        reserved: usize,
        session: SessionMemory,
    ) -> usize {
        self.input_len.store(buffers.input_len, Ordering::Relaxed);
        self.input_capacity
            .store(buffers.input_capacity, Ordering::Relaxed);
        self.output_len.store(buffers.output_len, Ordering::Relaxed);
        self.output_capacity
            .store(buffers.output_capacity, Ordering::Relaxed);
        self.multi_mem.store(session.multi_mem, Ordering::Relaxed);
        let total = buffers
            .total()
            .max(CLIENT_OVERHEAD + reserved)
            .saturating_add(session.multi_mem);
        let before = self.counted.swap(total, Ordering::Relaxed);
        let was = self
            .counted_authenticated
            .swap(session.authenticated, Ordering::Relaxed);
        if was == session.authenticated {
            keyspace.account_clients(was, total, before);
        } else {
            keyspace.account_clients(was, 0, before);
            keyspace.account_clients(session.authenticated, total, 0);
        }
        total
    }

    /// Takes the client's memory out of the count, as it leaves.
    pub fn unpublish(&self, keyspace: &Keyspace) {
        let before = self.counted.swap(0, Ordering::Relaxed);
        let was = self.counted_authenticated.load(Ordering::Relaxed);
        keyspace.account_clients(was, 0, before);
    }

    /// Bytes its `MULTI` queue holds, as last published (`multi-mem`).
    pub fn multi_mem(&self) -> usize {
        self.multi_mem.load(Ordering::Relaxed)
    }

    /// What the client counts for now.
    pub fn counted(&self) -> usize {
        self.counted.load(Ordering::Relaxed)
    }

    /// Asks its connection to close (`CLIENT KILL`, the output buffer limits).
    pub fn kill(&self) {
        self.killed.store(true, Ordering::Release);
        // `notify_one` keeps a permit if the connection is not waiting now, so the next
        // wait returns at once.
        self.kill.notify_one();
    }

    /// Whether it was asked to close.
    pub fn is_killed(&self) -> bool {
        self.killed.load(Ordering::Acquire)
    }

    /// Completes once it is asked to close.
    pub async fn killed(&self) {
        while !self.is_killed() {
            self.kill.notified().await;
        }
    }
}

/// How long `INFO clients`' `client_recent_max_*_buffer` remembers a peak, as in Redis.
const RECENT_SLOTS: usize = 8;

/// Every connected client, by id.
#[derive(Debug, Default)]
pub struct Clients {
    map: Mutex<BTreeMap<u64, Arc<ClientInfo>>>,
    /// The largest input and output buffers seen in each of the last seconds, by second.
    recent: Mutex<[(u64, usize, usize); RECENT_SLOTS]>,
}

impl Clients {
    /// Adds a client.
    pub fn register(&self, client: Arc<ClientInfo>) {
        self.lock().insert(client.id, client);
    }

    /// Removes a client (when its connection ends).
    pub fn unregister(&self, id: u64) {
        self.lock().remove(&id);
    }

    /// The client with `id`, if connected.
    pub fn get(&self, id: u64) -> Option<Arc<ClientInfo>> {
        self.lock().get(&id).cloned()
    }

    /// Every connected client, by id.
    pub fn all(&self) -> Vec<Arc<ClientInfo>> {
        self.lock().values().cloned().collect()
    }

    /// Notes a client's buffer sizes for `INFO clients`' recent peaks: `input` is the larger
    /// of its read buffer's length and allocation, `output` its unsent replies, `second` the
    /// keyspace's coarse clock in seconds ([`Clients::recent_max`] reads with the same clock).
    pub fn note_peak(&self, second: u64, input: usize, output: usize) {
        let mut recent = self.recent.lock().unwrap_or_else(PoisonError::into_inner);
        let slot = &mut recent[(second % RECENT_SLOTS as u64) as usize];
        if slot.0 != second {
            *slot = (second, 0, 0);
        }
        slot.1 = slot.1.max(input);
        slot.2 = slot.2.max(output);
    }

    /// The largest input and output buffers of the last few seconds, and of the clients
    /// connected now (`client_recent_max_input_buffer`, `client_recent_max_output_buffer`);
    /// `second` as for [`Clients::note_peak`].
    pub fn recent_max(&self, second: u64) -> (usize, usize) {
        let recent = *self.recent.lock().unwrap_or_else(PoisonError::into_inner);
        let (mut input, mut output) = recent
            .iter()
            .filter(|(at, _, _)| second.saturating_sub(*at) < RECENT_SLOTS as u64)
            .fold((0, 0), |(i, o), (_, si, so)| (i.max(*si), o.max(*so)));
        for client in self.all() {
            let buffers = client.buffers();
            input = input.max(buffers.input_len.max(buffers.input_capacity));
            output = output.max(buffers.output_len);
        }
        (input, output)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Arc<ClientInfo>>> {
        self.map.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn published_buffers_count_in_the_keyspace_until_the_client_leaves() {
        let keyspace = Keyspace::new(0);
        let client = ClientInfo::new(7, "127.0.0.1:5000".into(), "127.0.0.1:6379".into(), 9);
        let buffers = Buffers {
            input_len: 10,
            input_capacity: 16 << 10,
            output_len: 100,
            output_capacity: 16 << 10,
        };
        let authenticated = SessionMemory {
            authenticated: true,
            multi_mem: 0,
        };
        let counted = client.publish(&keyspace, buffers, 0, authenticated);
        assert_eq!(counted, CLIENT_OVERHEAD + (32 << 10));
        assert_eq!(keyspace.client_memory(), counted);
        // An admitted request counts before its bytes arrive.
        assert_eq!(
            client.publish(&keyspace, buffers, 1 << 20, authenticated),
            CLIENT_OVERHEAD + (1 << 20)
        );
        assert_eq!(keyspace.client_memory(), CLIENT_OVERHEAD + (1 << 20));
        // A transaction's queue counts too.
        let queued = SessionMemory {
            multi_mem: 5000,
            ..authenticated
        };
        let counted = client.publish(&keyspace, buffers, 0, queued);
        assert_eq!(counted, CLIENT_OVERHEAD + (32 << 10) + 5000);
        assert_eq!(
            (keyspace.client_memory(), client.multi_mem()),
            (counted, 5000)
        );
        client.unpublish(&keyspace);
        assert_eq!(keyspace.client_memory(), 0);
    }

    #[test]
    fn a_client_that_has_not_authenticated_is_reported_not_limited() {
        let keyspace = Keyspace::new(1 << 20);
        let client = ClientInfo::new(7, String::new(), String::new(), -1);
        let buffers = Buffers {
            input_capacity: 160 << 10,
            ..Buffers::default()
        };
        let before_auth = SessionMemory::default();
        let counted = client.publish(&keyspace, buffers, 0, before_auth);
        assert_eq!(keyspace.client_memory(), 0);
        assert_eq!(keyspace.unauthenticated_client_memory(), counted);
        assert_eq!(keyspace.memory_in_use(), 0);
        assert_eq!(keyspace.memory_reported(), counted);
        // Once it authenticates, the same bytes move to what maxmemory limits.
        let after_auth = SessionMemory {
            authenticated: true,
            multi_mem: 0,
        };
        client.publish(&keyspace, buffers, 0, after_auth);
        assert_eq!(keyspace.client_memory(), counted);
        assert_eq!(keyspace.unauthenticated_client_memory(), 0);
        client.unpublish(&keyspace);
        assert_eq!(keyspace.memory_reported(), 0);
    }

    #[tokio::test]
    async fn a_kill_is_seen_by_a_waiter_that_comes_later() {
        let client = ClientInfo::new(1, String::new(), String::new(), -1);
        client.kill();
        tokio::time::timeout(std::time::Duration::from_secs(1), client.killed())
            .await
            .expect("seen at once");
        assert!(client.is_killed());
    }

    #[test]
    fn the_registry_lists_by_id() {
        let clients = Clients::default();
        for id in [3, 1, 2] {
            clients.register(Arc::new(ClientInfo::new(
                id,
                String::new(),
                String::new(),
                -1,
            )));
        }
        clients.unregister(2);
        let ids: Vec<u64> = clients.all().iter().map(|c| c.id).collect();
        assert_eq!(ids, [1, 3]);
        assert!(clients.get(2).is_none());
    }
}
