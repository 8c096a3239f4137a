//! One client's transaction state: the commands queued since `MULTI`, whether one of them
//! was refused at queue time (so that `EXEC` runs nothing), and the keys it `WATCH`es.
//!
//! The commands that open, run and drop a transaction are in [`crate::cmd::transaction`];
//! `EXEC` itself runs in the dispatcher, which holds the keyspace's gate exclusively while
//! it does.

use std::sync::Arc;

use bloomkit_commands::table::{CommandSpec, Flag};
use bytes::{Bytes, BytesMut};

use crate::keyspace::{Keyspace, WatchFlag};
use crate::shared::Shared;

/// The commands queued since `MULTI`.
#[derive(Clone, Debug, Default)]
pub struct Queue {
    /// The requests, in order, name first, as the client sent them; each command's
    /// arguments copied into one allocation of its own, so that the queue holds what it
    /// counts (a slice of the read buffer would keep the whole buffer alive).
    pub commands: Vec<Vec<Bytes>>,
    /// Bytes the queue holds: what `CLIENT LIST` shows as `multi-mem`, and what counts in
    /// the client's memory (and so in `used_memory`).
    pub memory: usize,
    /// Whether a command was refused while queuing (unknown, wrong arity, not allowed in a
    /// transaction...): `EXEC` then answers `EXECABORT` and runs nothing.
    pub refused: bool,
    /// Whether a queued command may write (`EXEC` is refused while writes are).
    pub writes: bool,
    /// Whether a queued command may allocate (`EXEC` is refused while over `maxmemory`).
    pub deny_oom: bool,
}

impl Queue {
    /// Queues `args`, a command of `spec`.
    pub fn push(&mut self, spec: &CommandSpec, args: &[Bytes]) {
        self.writes |= spec.has(Flag::Write);
        self.deny_oom |= spec.has(Flag::DenyOom);
        let mut owned = BytesMut::with_capacity(args.iter().map(Bytes::len).sum());
        for arg in args {
            owned.extend_from_slice(arg);
        }
        let mut owned = owned.freeze();
        let command: Vec<Bytes> = args.iter().map(|arg| owned.split_to(arg.len())).collect();
        self.memory = self.memory.saturating_add(queued_size(args));
        self.commands.push(command);
    }
}

/// What queuing `args` costs: its bytes, a handle per argument, and the command's place in
/// the queue, each allocation with its allocator's overhead.
pub fn queued_size(args: &[Bytes]) -> usize {
    let bytes: usize = args.iter().map(Bytes::len).sum();
    crate::keyspace::memory::allocation(bytes)
        + crate::keyspace::memory::allocation(std::mem::size_of_val(args))
        + std::mem::size_of::<Vec<Bytes>>()
}

/// The keys a client watches, and the flag a change to any of them raises.
struct Watching {
    /// Where the registrations are, so that they end with the client, however it leaves.
    shared: Arc<Shared>,
    flag: Arc<WatchFlag>,
    /// Each key, and whether it was live when watched.
    keys: Vec<(Bytes, bool)>,
}

impl Drop for Watching {
    fn drop(&mut self) {
        self.shared
            .keyspace()
            .unwatch(self.keys.iter().map(|(key, _)| key), &self.flag);
    }
}

/// One client's transaction state; see the [module documentation](self).
#[derive(Default)]
pub struct Transaction {
    queue: Option<Queue>,
    watching: Option<Watching>,
}

impl Transaction {
    /// Whether the client is between `MULTI` and `EXEC`/`DISCARD`.
    #[inline]
    pub fn is_open(&self) -> bool {
        self.queue.is_some()
    }

    /// `CLIENT LIST`'s `multi` and `watch`: the commands queued (-1 outside `MULTI`) and
    /// the keys watched.
    pub fn client_list_fields(&self) -> (i64, usize) {
        let multi = self.queue.as_ref().map_or(-1, |queue| {
            i64::try_from(queue.commands.len()).unwrap_or(i64::MAX)
        });
        (multi, self.watched_keys())
    }

    /// Whether a queued command is long ([`crate::offload::is_long`]), so that `EXEC` runs
    /// its queue off the worker thread.
    pub fn has_long_command(&self) -> bool {
        self.queue
            .as_ref()
            .is_some_and(|queue| queue.commands.iter().any(|c| crate::offload::is_long(c)))
    }

    /// The queue, while the transaction is open.
    pub fn queue(&self) -> Option<&Queue> {
        self.queue.as_ref()
    }

    /// Bytes the `MULTI` queue holds (0 outside `MULTI`).
    pub fn queue_memory(&self) -> usize {
        self.queue.as_ref().map_or(0, |queue| queue.memory)
    }

    /// `MULTI`: starts queuing.
    pub fn open(&mut self) {
        self.queue = Some(Queue::default());
    }

    /// The queue, while the transaction is open.
    pub fn queue_mut(&mut self) -> Option<&mut Queue> {
        self.queue.as_mut()
    }

    /// Marks the open transaction (if any) as failed: a command was refused while queuing.
    pub fn refuse(&mut self) {
        if let Some(queue) = &mut self.queue {
            queue.refused = true;
        }
    }

    /// Ends the transaction, handing over what was queued (`None` without `MULTI`).
    pub fn take(&mut self) -> Option<Queue> {
        self.queue.take()
    }

    /// `WATCH key...`: watches each key from now until `EXEC`, `DISCARD` or `UNWATCH`.
    pub fn watch(&mut self, shared: &Arc<Shared>, keys: &[Bytes]) {
        let watching = self.watching.get_or_insert_with(|| Watching {
            shared: Arc::clone(shared),
            flag: Arc::new(WatchFlag::default()),
            keys: Vec::new(),
        });
        for key in keys {
            if watching.keys.iter().any(|(watched, _)| watched == key) {
                continue;
            }
            let live = shared.keyspace().watch(key, &watching.flag);
            // Owned: the watch outlives the request's buffer.
            watching.keys.push((Bytes::copy_from_slice(key), live));
        }
    }

    /// Whether a watched key changed since it was watched, or was live then and has
    /// expired since: `EXEC` must then run nothing. Call it holding the gate exclusively.
    pub fn spoiled(&self, keyspace: &Keyspace) -> bool {
        self.watching.as_ref().is_some_and(|w| {
            w.flag.is_raised()
                || w.keys.iter().any(|(key, live)| {
                    *live && keyspace.count_existing(std::slice::from_ref(key)) == 0
                })
        })
    }

    /// `UNWATCH` (and the end of every `EXEC` and `DISCARD`): forgets every watched key.
    pub fn unwatch(&mut self) {
        self.watching = None;
    }

    /// How many keys the client watches.
    pub fn watched_keys(&self) -> usize {
        self.watching.as_ref().map_or(0, |w| w.keys.len())
    }
}

impl Clone for Transaction {
    /// A copy of the queue; the watches stay the original's (each key is registered for
    /// one client, and ends with it).
    fn clone(&self) -> Self {
        Transaction {
            queue: self.queue.clone(),
            watching: None,
        }
    }
}

impl std::fmt::Debug for Transaction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transaction")
            .field("queue", &self.queue)
            .field("watched_keys", &self.watched_keys())
            .finish()
    }
}
