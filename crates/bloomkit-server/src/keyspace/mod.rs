//! The keyspace: every key's filter, sharded so that different keys work in parallel.
//!
//! Keys live in [`NUM_SHARDS`] shards, each a `std::sync::RwLock<HashMap<Bytes, Entry>>`,
//! chosen by the key's hash. A read command (`BF.EXISTS`) takes its shard's read lock, so
//! readers of one filter run side by side; a write takes the write lock. Commands on several
//! keys (`DEL a b`, `RENAME`) lock their shards in index order, so two of them can never
//! wait for each other.
//!
//! # Expiry
//!
//! A key past its expiry is gone for every command from that moment ("lazy" expiry: each
//! access checks the clock); a write that finds one removes it, and a background sweep
//! ([`Keyspace::sweep_expired`]) removes the ones nobody touches. Either way the removal
//! is logged as `DEL key`, as Redis propagates it, so replaying the log never depends on
//! the clock at replay time: while the keyspace is loading, nothing expires.
//!
//! # Memory
//!
//! Each shard keeps the sum of what its keys cost the process (their values, names and
//! table, see [`memory`]), updated by every write's before/after difference; their total
//! is `used_memory_dataset`, which with the clients' buffers `--maxmemory` limits through
//! the keyspace's [`Budget`] implementation.
//!
//! # Persistence
//!
//! Every change is appended to the [`Journal`] while the changed shards are still locked
//! (so the log's order is the order of application), and the caller awaits the returned
//! [`Ticket`] before replying. Values are held as `Arc<Value>` and changed copy-on-write,
//! so a snapshot clones the `Arc`s under the locks and writes them with the locks released.
//!
//! # Transactions
//!
//! Every client command runs inside the keyspace's [`Gate`], shared; `EXEC` takes it
//! exclusively, so its queued commands run with nothing else in between, and so do the
//! sweep and a snapshot's cut, which take it shared themselves. Every change to a key goes
//! through the shard writer (or, for a filter changed in place, touches the key itself), which
//! raises the [`WatchFlag`] of each client that `WATCH`es it.
//!
//! # Where each concern lives
//!
//! [`Keyspace`] is one type whose methods are split by what they are for:
//!
//! | file | what it holds |
//! |---|---|
//! | `mod.rs` | [`Entry`], the [`Keyspace`] itself, loading, counts |
//! | `shard.rs` | the shards, the writer every change goes through, locking and logging helpers |
//! | `filter.rs` | [`Keyspace::run_filter`]: the `BF.*`/`CF.*` commands on their key |
//! | `sources.rs` | the filter commands that read other keys too (`BF.MERGE`) |
//! | `keys.rs` | the generic key commands (`DEL`, `EXPIRE`, `RENAME`, `SCAN`, `FLUSHALL`...) |
//! | `entries.rs` | whole values (`DUMP`, `RESTORE`, `COPY`, `OBJECT`, `DEBUG RELOAD`) |
//! | `expiry.rs` | the background sweep of expired keys |
//! | `aging.rs` | the rotations of `AF.*` keys with a period, run as logged `AF.ROTATE`s |
//! | `journal.rs` | the seam to persistence ([`Journal`]) and a snapshot's cut |
//! | `memory.rs` | `used_memory`, the clients' share, the [`Budget`] for `--maxmemory` |
//! | `evict.rs` | `maxmemory-policy` eviction |
//! | `access.rs` | the access clock and each key's LRU/LFU stamp |
//! | `health.rs` | the filters flagged for `INFO filters` |
//! | `gate.rs`, `watch.rs` | `EXEC`'s gate and `WATCH`'s registry |
//! | `lease.rs` | a long command's hold on its key, so that it holds no shard lock |
//!
//! [`Budget`]: bloomkit_commands::Budget

mod access;
mod aging;
mod entries;
mod evict;
mod expiry;
mod filter;
mod gate;
pub mod health;
mod journal;
mod keys;
pub mod lease;
pub mod memory;
mod shard;
mod sources;
mod watch;

pub use access::{AccessClock, AccessStamp};
pub use entries::{CopyError, ObjectInfo, ReloadFailure, RestoreError, RestoredAccess};
pub use evict::{Eviction, Policy};
pub use gate::{Entered, Exclusive, Gate};
pub use health::{Health, HealthSummary};
pub use journal::{Durable, Journal, NoJournal, SnapshotEntry, SnapshotWriter, Ticket};
pub use keys::{ExpireCondition, RenameError, Ttl};
pub use lease::{Lease, LeaseWait, ReadHold, WriteHold};
pub use watch::{WatchFlag, Watches};

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{SystemTime, UNIX_EPOCH};

use bloomkit_commands::Value;
use bytes::Bytes;

use shard::{read, Shard};

/// How many shards the keyspace has: enough that threads working on different keys
/// rarely share a lock, few enough that taking all of them (for a snapshot or `FLUSHALL`)
/// stays cheap. A power of two, so the shard is a mask of the key's hash.
pub const NUM_SHARDS: usize = 64;

/// A key's value and expiry.
#[derive(Clone, Debug)]
pub struct Entry {
    /// When it was last used and how often: for the LRU/LFU eviction policies and
    /// `OBJECT IDLETIME|FREQ`.
    pub access: AccessStamp,
    /// The filter, shared with snapshots in progress (writers copy it if so).
    pub value: Arc<Value>,
    /// When the key expires, in Unix milliseconds; `None` for never.
    pub expires_at_ms: Option<u64>,
    /// What the value costs ([`memory::value_cost`]) as of its last change, so removing it
    /// needs no walk of the filter; the shard adds its key's cost.
    memory_bytes: usize,
    /// The long command that holds the key, if one does (see [`lease`]).
    lease: Option<Arc<Lease>>,
}

impl Entry {
    fn new(value: Arc<Value>, expires_at_ms: Option<u64>, now_ticks: u32) -> Entry {
        let memory_bytes = memory::value_cost(&value);
        Entry {
            access: AccessStamp::new(now_ticks),
            value,
            expires_at_ms,
            memory_bytes,
            lease: None,
        }
    }

    /// Whether the key is gone at `now` (`None`: while loading, nothing expires). Expired
    /// means strictly past the expiry time, as in Redis.
    fn is_expired(&self, now: Option<u64>) -> bool {
        matches!((self.expires_at_ms, now), (Some(at), Some(now)) if now > at)
    }

    /// Whether the entry stands for a key that a write lease holds and that did not exist:
    /// not a key yet.
    fn is_placeholder(&self) -> bool {
        self.lease.as_ref().is_some_and(|l| l.is_placeholder())
    }

    /// The value's type, for listings: a write lease's stand-in answers for the value it
    /// holds.
    fn type_name(&self) -> &'static str {
        match &self.lease {
            Some(lease) if lease.is_write() => lease.type_name(),
            _ => self.value.type_name(),
        }
    }

    /// [`Entry::is_expired`], reading the clock only for a key that has an expiry: most
    /// have none, and a clock read per command is a measurable part of a pipelined one.
    fn is_expired_with(&self, now: impl FnOnce() -> Option<u64>) -> bool {
        self.expires_at_ms.is_some() && self.is_expired(now())
    }
}

/// The current time in Unix milliseconds.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// All keys, their values and expiries; see the [module documentation](self).
pub struct Keyspace {
    shards: Box<[Shard]>,
    /// Set once loading is over. Until then nothing is logged (replayed commands are
    /// already in the log) and nothing expires (see the module documentation).
    journal: OnceLock<Arc<dyn Journal>>,
    /// `maxmemory` in bytes; 0 for no limit. Changed by `CONFIG SET maxmemory`.
    maxmemory: AtomicU64,
    /// Keys removed because they expired (`expired_keys` in `INFO stats`).
    expired_keys: AtomicU64,
    /// Bytes the clients' buffers hold, which `maxmemory` counts as Redis does (kept by
    /// [`crate::clients`]).
    client_memory: AtomicUsize,
    /// Bytes the buffers of clients that have not authenticated hold: reported, not limited
    /// (see [`Keyspace::memory_in_use`]).
    unauthenticated_client_memory: AtomicUsize,
    /// `maxmemory-policy` and `maxmemory-samples`.
    eviction: Eviction,
    /// The coarse clock of keys' access stamps.
    access_clock: AccessClock,
    /// What `EXEC` holds exclusively (see the module documentation).
    gate: Gate,
    /// Who `WATCH`es which key.
    watches: Watches,
    /// Leases held now (see [`lease`]): while there are none, a command's check costs one
    /// load.
    leases: AtomicUsize,
    /// Write leases held now: a snapshot's cut waits until there are none.
    write_leases: AtomicUsize,
    /// Wakes a snapshot's cut when the last write lease ends.
    no_write_leases: tokio::sync::Notify,
    /// Entries that stand for a key a write lease holds but that did not exist: left out of
    /// the counts.
    placeholders: AtomicUsize,
    /// Set while a snapshot's cut waits for the write leases to end: no new one starts.
    cut_wanted: AtomicBool,
    /// Wakes the long commands waiting for a cut to be done.
    cut_finished: tokio::sync::Notify,
}

impl Keyspace {
    /// An empty keyspace in the loading state: fill it with [`Keyspace::restore`] and
    /// replayed commands, then call [`Keyspace::finish_loading`].
    pub fn new(maxmemory: u64) -> Keyspace {
        Keyspace {
            shards: (0..NUM_SHARDS).map(|_| Shard::default()).collect(),
            journal: OnceLock::new(),
            maxmemory: AtomicU64::new(maxmemory),
            expired_keys: AtomicU64::new(0),
            client_memory: AtomicUsize::new(0),
            unauthenticated_client_memory: AtomicUsize::new(0),
            eviction: Eviction::default(),
            access_clock: AccessClock::default(),
            gate: Gate::default(),
            watches: Watches::default(),
            leases: AtomicUsize::new(0),
            write_leases: AtomicUsize::new(0),
            no_write_leases: tokio::sync::Notify::new(),
            placeholders: AtomicUsize::new(0),
            cut_wanted: AtomicBool::new(false),
            cut_finished: tokio::sync::Notify::new(),
        }
    }

    /// Ends loading: from now on keys expire, and every change is appended to `journal`.
    /// Calling it again changes nothing.
    pub fn finish_loading(&self, journal: Arc<dyn Journal>) {
        let _ = self.journal.set(journal);
    }

    /// Whether the keyspace is still loading (see [`Keyspace::finish_loading`]).
    pub fn is_loading(&self) -> bool {
        self.journal.get().is_none()
    }

    /// The journal, once loading is over.
    pub fn journal(&self) -> Option<&Arc<dyn Journal>> {
        self.journal.get()
    }

    /// Puts a key loaded from a snapshot, replacing any value it had.
    pub fn restore(&self, key: Bytes, expires_at_ms: Option<u64>, value: Value) {
        let now = self.clock_ticks();
        let mut shard = self.write(self.shard_index(&key));
        shard.insert(&key, Entry::new(Arc::new(value), expires_at_ms, now));
    }

    /// `maxmemory` in bytes (0: no limit).
    pub fn maxmemory(&self) -> u64 {
        self.maxmemory.load(Ordering::Relaxed)
    }

    /// Sets `maxmemory` (0: no limit). Only later allocations are refused; nothing is
    /// evicted.
    pub fn set_maxmemory(&self, bytes: u64) {
        self.maxmemory.store(bytes, Ordering::Relaxed);
    }

    /// Bytes held by all values (`used_memory_dataset` in `INFO memory`). With the clients'
    /// buffers, it is what `--maxmemory` limits ([`Keyspace::memory_in_use`]).
    pub fn used_memory(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.memory_bytes.load(Ordering::Relaxed))
            .fold(0, usize::saturating_add)
    }

    /// Keys removed because they expired, since start-up.
    pub fn expired_keys(&self) -> u64 {
        self.expired_keys.load(Ordering::Relaxed)
    }

    /// Log records appended since the last snapshot began.
    pub fn changes_since_snapshot(&self) -> u64 {
        self.shards
            .iter()
            .map(|s| s.dirty.load(Ordering::Relaxed))
            .sum()
    }

    /// The number of keys and how many of them have an expiry (`INFO keyspace`), counting
    /// expired keys not yet swept, as Redis's `DBSIZE` does.
    pub fn counts(&self) -> (usize, usize) {
        let (keys, volatile) = self.shards.iter().fold((0, 0), |(keys, volatile), shard| {
            let map = read(shard);
            (keys + map.entries.len(), volatile + map.volatile)
        });
        let placeholders = self.placeholders.load(Ordering::Relaxed);
        (keys.saturating_sub(placeholders), volatile)
    }

    /// `DBSIZE`.
    pub fn len(&self) -> usize {
        self.counts().0
    }

    /// Whether there are no keys at all.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests;
