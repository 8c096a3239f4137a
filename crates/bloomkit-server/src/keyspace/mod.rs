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
//! Each shard keeps the sum of its values' [`Value::memory_bytes`], updated by every
//! write's before/after difference; their total is `used_memory`, which `--maxmemory`
//! limits through the keyspace's [`Budget`] implementation.
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

mod access;
mod entries;
mod evict;
mod gate;
pub mod health;
mod journal;
pub mod memory;
mod watch;

pub use access::{AccessClock, AccessStamp};
pub use entries::{CopyError, ObjectInfo, ReloadFailure, RestoreError, RestoredAccess};
pub use evict::{Eviction, Policy};
pub use gate::{Entered, Exclusive, Gate};
pub use health::Health;
pub use journal::{Durable, Journal, NoJournal, SnapshotEntry, SnapshotWriter, Ticket};
pub use watch::{WatchFlag, Watches};

use std::cell::OnceCell;
use std::collections::HashMap;
use std::io;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{SystemTime, UNIX_EPOCH};

use bloomkit_commands::{
    Access, Budget, Ctx, Defaults, FilterCommand, Record, Replay, Reply, Value,
};
use bytes::Bytes;

use crate::glob;

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
    /// `value.memory_bytes()` when the entry was stored, so removing it needs no walk of
    /// the filter.
    memory_bytes: usize,
}

impl Entry {
    fn new(value: Arc<Value>, expires_at_ms: Option<u64>, now_ticks: u32) -> Entry {
        let memory_bytes = value.memory_bytes();
        Entry {
            access: AccessStamp::new(now_ticks),
            value,
            expires_at_ms,
            memory_bytes,
        }
    }

    /// Whether the key is gone at `now` (`None`: while loading, nothing expires). Expired
    /// means strictly past the expiry time, as in Redis.
    fn is_expired(&self, now: Option<u64>) -> bool {
        matches!((self.expires_at_ms, now), (Some(at), Some(now)) if now > at)
    }

    /// [`Entry::is_expired`], reading the clock only for a key that has an expiry: most
    /// have none, and a clock read per command is a measurable part of a pipelined one.
    fn is_expired_with(&self, now: impl FnOnce() -> Option<u64>) -> bool {
        self.expires_at_ms.is_some() && self.is_expired(now())
    }
}

/// One shard: its keys, and the memory their values hold.
///
/// Why a `std::sync::RwLock` and not tokio's: a critical section is one filter operation
/// (nanoseconds to a few microseconds), never awaits, and never does I/O (the journal
/// buffers); a blocking lock held that briefly is cheaper than an async one, and the
/// compiler refuses to hold its guard across an `.await`, which is exactly the rule we
/// want.
// Aligned to two cache lines so that neighbouring shards' locks and counters never share
// one (the adjacent-line prefetcher fetches lines in pairs).
#[repr(align(128))]
#[derive(Default)]
struct Shard {
    map: RwLock<ShardMap>,
    /// Sum of the entries' `memory_bytes`; changed only under the write lock, read without
    /// it (`INFO`, `--maxmemory` checks).
    memory_bytes: AtomicUsize,
    /// Log records appended by writes to this shard since the last snapshot began. Per
    /// shard, beside the lock writers already hold, so that counting never makes writers
    /// on different cores contend for one shared counter.
    dirty: AtomicU64,
}

#[derive(Default)]
struct ShardMap {
    entries: HashMap<Bytes, Entry>,
    /// How many entries have an expiry: the sweep skips shards with none.
    volatile: usize,
    /// The entries past their capacity or target rate (see [`health`]), for `INFO filters`.
    flagged: HashMap<Bytes, Health>,
}

/// A shard's write lock, through which every change goes, so that the volatile count and
/// the memory total can never drift from the entries, and no change escapes a `WATCH`.
struct ShardWriter<'a> {
    map: RwLockWriteGuard<'a, ShardMap>,
    memory_bytes: &'a AtomicUsize,
    watches: &'a Watches,
}

impl ShardWriter<'_> {
    fn get(&self, key: &[u8]) -> Option<&Entry> {
        self.map.entries.get(key)
    }

    fn insert(&mut self, key: Bytes, entry: Entry) -> Option<Entry> {
        self.watches.touch(&key);
        self.memory_bytes
            .fetch_add(entry.memory_bytes, Ordering::Relaxed);
        self.map.volatile += usize::from(entry.expires_at_ms.is_some());
        self.check_health(&key, &entry.value);
        let old = self.map.entries.insert(key, entry);
        if let Some(old) = &old {
            self.forget(old);
        }
        old
    }

    fn remove(&mut self, key: &[u8]) -> Option<Entry> {
        let old = self.map.entries.remove(key)?;
        self.watches.touch(key);
        self.forget(&old);
        if !self.map.flagged.is_empty() {
            self.map.flagged.remove(key);
        }
        Some(old)
    }

    /// Flags or unflags `key` for what `value` now holds.
    fn check_health(&mut self, key: &Bytes, value: &Value) {
        match Health::of(value) {
            Some(health) => {
                self.map.flagged.insert(key.clone(), health);
            }
            None if !self.map.flagged.is_empty() => {
                self.map.flagged.remove(key);
            }
            None => {}
        }
    }

    fn set_expiry(&mut self, key: &[u8], expires_at_ms: Option<u64>) {
        if let Some(entry) = self.map.entries.get_mut(key) {
            self.watches.touch(key);
            let before = usize::from(entry.expires_at_ms.is_some());
            entry.expires_at_ms = expires_at_ms;
            self.map.volatile = self.map.volatile - before + usize::from(expires_at_ms.is_some());
        }
    }

    fn forget(&mut self, old: &Entry) {
        self.memory_bytes
            .fetch_sub(old.memory_bytes, Ordering::Relaxed);
        self.map.volatile -= usize::from(old.expires_at_ms.is_some());
    }
}

/// The conditions of `EXPIRE key seconds [NX] [XX] [GT] [LT]`; all false: none.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct ExpireCondition {
    /// Only if the key has no expiry.
    pub nx: bool,
    /// Only if the key has an expiry.
    pub xx: bool,
    /// Only if the new expiry is later (no expiry counts as infinitely late, so never).
    pub gt: bool,
    /// Only if the new expiry is earlier (no expiry counts as infinitely late, so always).
    pub lt: bool,
}

impl ExpireCondition {
    /// Whether a key whose expiry is `current` may be given `at_ms`; Redis's checks.
    fn allows(self, current: Option<u64>, at_ms: i64) -> bool {
        let current = current.map(|c| i64::try_from(c).unwrap_or(i64::MAX));
        !(self.nx && current.is_some()
            || self.xx && current.is_none()
            || self.gt && current.is_none_or(|c| at_ms <= c)
            || self.lt && current.is_some_and(|c| at_ms >= c))
    }
}

/// A key's remaining time to live, as `TTL`/`PTTL` report it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ttl {
    /// No such key (`-2`).
    Missing,
    /// The key never expires (`-1`).
    Persistent,
    /// Milliseconds left.
    Ms(u64),
}

/// What `RENAME` can fail with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RenameError {
    /// The source key does not exist (`ERR no such key`).
    NoSuchKey,
}

/// The current time in Unix milliseconds.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Puts the value a write command worked on back into its map entry when dropped: on the
/// normal path and on unwinding alike. An empty slot (the command removed the key) leaves
/// the entry's stand-in for the caller to remove.
struct PutBack<'a> {
    place: &'a mut Value,
    slot: Option<Value>,
}

impl Drop for PutBack<'_> {
    fn drop(&mut self) {
        if let Some(value) = self.slot.take() {
            *self.place = value;
        }
    }
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
    /// `maxmemory-policy` and `maxmemory-samples`.
    eviction: Eviction,
    /// The coarse clock of keys' access stamps.
    access_clock: AccessClock,
    /// What `EXEC` holds exclusively (see the module documentation).
    gate: Gate,
    /// Who `WATCH`es which key.
    watches: Watches,
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
            eviction: Eviction::default(),
            access_clock: AccessClock::default(),
            gate: Gate::default(),
            watches: Watches::default(),
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
        shard.insert(key, Entry::new(Arc::new(value), expires_at_ms, now));
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
        self.shards.iter().fold((0, 0), |(keys, volatile), shard| {
            let map = read(shard);
            (keys + map.entries.len(), volatile + map.volatile)
        })
    }

    /// `DBSIZE`.
    pub fn len(&self) -> usize {
        self.counts().0
    }

    /// Whether there are no keys at all.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    // ---- Filter commands -----------------------------------------------------------

    /// Runs a `BF.*`/`CF.*` command on its key: under the shard's read lock for
    /// [`Access::Read`], else under the write lock, logging what it changed before the
    /// lock is released. While loading, the budget is [`Replay`]: what was acknowledged
    /// once must load again.
    ///
    /// Past `maxmemory`, under an evicting `maxmemory-policy`, a write first evicts keys
    /// until memory is back under the limit; and a write the budget refuses before it
    /// changed anything is run again once eviction has made room for what it asked (a
    /// write that had changed something, a `BF.MADD` whose filter had to grow midway,
    /// answers as it did, and the next write finds the room).
    pub fn run_filter(
        &self,
        command: &FilterCommand,
        defaults: &Defaults,
    ) -> (Reply, Option<Ticket>) {
        if self.is_loading() {
            return self.run_filter_once(command, defaults, &Replay).0;
        }
        let evicting = self.eviction.policy() != Policy::NoEviction;
        if command.access() == Access::Read || !evicting {
            return self.run_filter_once(command, defaults, self).0;
        }
        self.make_room(0, command.key());
        let mut attempts = 0;
        loop {
            let budget = RecordingBudget::new(self);
            let ((reply, ticket), changed) = self.run_filter_once(command, defaults, &budget);
            let Some(wanted) = budget.refused() else {
                return (reply, ticket);
            };
            attempts += 1;
            let room = self.make_room(wanted, command.key());
            if changed || !room || attempts >= 3 {
                return (reply, ticket);
            }
        }
    }

    /// One run of a filter command with `budget`; also says whether the command logged a
    /// change of its own.
    fn run_filter_once(
        &self,
        command: &FilterCommand,
        defaults: &Defaults,
        budget: &dyn Budget,
    ) -> ((Reply, Option<Ticket>), bool) {
        let ctx = Ctx { defaults, budget };
        let key = command.key();
        let index = self.shard_index(key);
        let ticks = self.clock_ticks();
        let lfu = self.eviction.policy().is_lfu();
        if command.access() == Access::Read {
            let map = read(&self.shards[index]);
            let entry = map
                .entries
                .get(key)
                .filter(|entry| !entry.is_expired_with(|| self.now()));
            if let Some(entry) = entry {
                entry.access.touch(ticks, lfu);
            }
            return ((command.read(entry.map(|e| &*e.value), &ctx), None), false);
        }
        let mut shard = self.write(index);
        let mut log = Vec::new();
        // Read at most once, so that the expiry check and the removal agree.
        let clock = OnceCell::new();
        let now = || *clock.get_or_init(|| self.now());
        // One lookup for the common case, a live key changed where it lies: no removal and
        // reinsertion, no new `Arc`, and the memory total touched only if the size changed.
        let live = shard
            .map
            .entries
            .get_mut(key)
            .filter(|entry| !entry.is_expired_with(now));
        // What the command left the filter's health at, applied once `live` is let go.
        let mut changed_health = None;
        let outcome = if let Some(entry) = live {
            entry.access.touch(ticks, lfu);
            // Free when no snapshot holds the value; otherwise this is the copy of
            // copy-on-write, and the snapshot keeps the original.
            let value = Arc::make_mut(&mut entry.value);
            // The command works on an `Option<Value>` it may empty; the stand-in holds the
            // entry's place meanwhile, allocating nothing. The guard puts back whatever the
            // command leaves in the slot, also if it panics (none should): the map must
            // not keep the stand-in, which a snapshot cannot store.
            let taken = std::mem::replace(value, Value::stand_in());
            let mut held = PutBack {
                place: value,
                slot: Some(taken),
            };
            let outcome = command.write(&mut held.slot, &ctx);
            let removed = held.slot.is_none();
            drop(held);
            // What it logged is what it changed: a `BF.ADD` of an item already there
            // changes nothing, and spoils no `WATCH`.
            if !outcome.log.is_empty() {
                self.watches.touch(key);
            }
            if removed {
                // The command removed the key (a restore whose last chunk did not decode).
                shard.remove(key);
            } else {
                changed_health = Some(Health::of(&entry.value));
                let (before, after) = (entry.memory_bytes, entry.value.memory_bytes());
                entry.memory_bytes = after;
                if after > before {
                    shard
                        .memory_bytes
                        .fetch_add(after - before, Ordering::Relaxed);
                } else if after < before {
                    shard
                        .memory_bytes
                        .fetch_sub(before - after, Ordering::Relaxed);
                }
            }
            outcome
        } else {
            // Missing, or expired (removed first, its `DEL` logged before the command's
            // records, so that replay sees why the command found no key).
            self.expire_if_needed(&mut shard, key, now(), &mut log);
            let mut slot = None;
            let outcome = command.write(&mut slot, &ctx);
            if let Some(value) = slot {
                shard.insert(
                    Bytes::copy_from_slice(key),
                    Entry::new(Arc::new(value), None, ticks),
                );
            }
            outcome
        };
        match changed_health {
            Some(Some(health)) => {
                shard
                    .map
                    .flagged
                    .insert(Bytes::copy_from_slice(key), health);
            }
            Some(None) if !shard.map.flagged.is_empty() => {
                shard.map.flagged.remove(key);
            }
            _ => {}
        }
        let changed = !outcome.log.is_empty();
        // The command's records as they lie (its own key and items, for the common add),
        // unless an expiry was logged first.
        let ticket = if log.is_empty() {
            self.append_records(index, &outcome.log)
        } else {
            log.extend(outcome.log.iter().map(Record::to_vec));
            self.append(index, &log)
        };
        drop(shard);
        ((outcome.reply, ticket), changed)
    }

    // ---- Generic key commands -----------------------------------------------------

    /// `DEL`/`UNLINK`: removes the keys, returning how many existed. Logged as one
    /// `DEL` of the keys removed. Values are freed after the locks are released.
    pub fn delete(&self, keys: &[Bytes]) -> (i64, Option<Ticket>) {
        let now = self.now();
        let mut shards = self.write_many(keys.iter());
        let mut removed = Vec::new();
        let mut logged = vec![Bytes::from_static(b"DEL")];
        let mut count = 0;
        for key in keys {
            if let Some(entry) = shards.get(self.shard_index(key)).remove(key) {
                if entry.is_expired(now) {
                    self.expired_keys.fetch_add(1, Ordering::Relaxed);
                } else {
                    count += 1;
                }
                logged.push(key.clone());
                removed.push(entry);
            }
        }
        let ticket = if removed.is_empty() {
            None
        } else {
            self.append(shards.first_index(), &[logged])
        };
        drop(shards);
        drop(removed);
        (count, ticket)
    }

    /// `EXISTS`: how many of `keys` exist, a key named twice counting twice.
    pub fn count_existing(&self, keys: &[Bytes]) -> i64 {
        let now = self.now();
        // One lock at a time: EXISTS needs no atomic view, and holding one lock at a
        // time can never deadlock.
        let found = keys
            .iter()
            .filter(|key| self.with_entry(key, now, |entry| entry.is_some()))
            .count();
        i64::try_from(found).unwrap_or(i64::MAX)
    }

    /// `TYPE`: the value's type name, or `None` for a missing key.
    pub fn type_of(&self, key: &[u8]) -> Option<&'static str> {
        self.with_entry(key, self.now(), |entry| entry.map(|e| e.value.type_name()))
    }

    /// `KEYS pattern`: every live key matching the glob `pattern`.
    pub fn keys_matching(&self, pattern: &[u8]) -> Vec<Bytes> {
        let now = self.now();
        let match_all = pattern == b"*";
        let mut keys = Vec::new();
        for shard in self.shards.iter() {
            let map = read(shard);
            keys.extend(
                map.entries
                    .iter()
                    .filter(|(key, entry)| {
                        !entry.is_expired(now) && (match_all || glob::matches(pattern, key, false))
                    })
                    .map(|(key, _)| key.clone()),
            );
        }
        keys
    }

    /// One step of `SCAN`: the keys of whole shards from `cursor` on, until at least
    /// `count` keys were examined, filtered by `pattern` and by type name; returns the next
    /// cursor (0 when done) and the keys.
    ///
    /// The cursor is a shard index, and each call returns whole shards, so every key that
    /// exists for a full iteration is returned exactly once, however the maps rehash
    /// meanwhile (Redis promises "at least once"). `COUNT` is a hint, as in Redis.
    pub fn scan(
        &self,
        cursor: u64,
        count: usize,
        pattern: Option<&[u8]>,
        type_name: Option<&[u8]>,
    ) -> (u64, Vec<Bytes>) {
        let now = self.now();
        let mut keys = Vec::new();
        let mut examined = 0;
        let Ok(mut index) = usize::try_from(cursor) else {
            return (0, keys);
        };
        while index < NUM_SHARDS && examined < count.max(1) {
            let map = read(&self.shards[index]);
            examined += map.entries.len();
            keys.extend(
                map.entries
                    .iter()
                    .filter(|(key, entry)| {
                        !entry.is_expired(now)
                            && pattern.is_none_or(|p| glob::matches(p, key, false))
                            && type_name.is_none_or(|t| {
                                t.eq_ignore_ascii_case(entry.value.type_name().as_bytes())
                            })
                    })
                    .map(|(key, _)| key.clone()),
            );
            index += 1;
        }
        let next = if index >= NUM_SHARDS { 0 } else { index as u64 };
        (next, keys)
    }

    /// `FLUSHALL`/`FLUSHDB`: removes every key; logged as `FLUSHALL`. The values are freed
    /// after the locks are released.
    pub fn flush(&self) -> Option<Ticket> {
        let mut shards = self.write_all();
        // Redis touches every watched key that existed.
        self.watches
            .touch_if(|key| shards[self.shard_index(key)].map.entries.contains_key(key));
        let mut removed = Vec::with_capacity(NUM_SHARDS);
        for shard in &mut shards {
            removed.push(std::mem::take(&mut shard.map.entries));
            shard.map.volatile = 0;
            shard.map.flagged.clear();
            shard.memory_bytes.store(0, Ordering::Relaxed);
        }
        let ticket = self.append(0, &[vec![Bytes::from_static(b"FLUSHALL")]]);
        drop(shards);
        drop(removed);
        ticket
    }

    /// `EXPIRE`/`PEXPIRE`/`EXPIREAT`/`PEXPIREAT`: sets `key` to expire at `at_ms` (Unix
    /// milliseconds) if `condition` holds. Returns whether it did: `false` for a missing key
    /// or an unmet condition. A time already past deletes the key (logged as `DEL`), except
    /// while loading; otherwise the change is logged as `PEXPIREAT key at_ms`, absolute, so
    /// that replay gives the same time.
    pub fn expire_at(
        &self,
        key: &Bytes,
        at_ms: i64,
        condition: ExpireCondition,
    ) -> (bool, Option<Ticket>) {
        let now = self.now();
        let index = self.shard_index(key);
        let mut shard = self.write(index);
        let mut log = Vec::new();
        self.expire_if_needed(&mut shard, key, now, &mut log);
        let allowed = shard
            .get(key)
            .is_some_and(|entry| condition.allows(entry.expires_at_ms, at_ms));
        if allowed {
            match now {
                Some(now) if at_ms <= now as i64 => {
                    shard.remove(key);
                    log.push(vec![Bytes::from_static(b"DEL"), key.clone()]);
                }
                _ => {
                    let at = u64::try_from(at_ms).unwrap_or(0);
                    shard.set_expiry(key, Some(at));
                    log.push(vec![
                        Bytes::from_static(b"PEXPIREAT"),
                        key.clone(),
                        Bytes::from(at.to_string()),
                    ]);
                }
            }
        }
        let ticket = self.append(index, &log);
        drop(shard);
        (allowed, ticket)
    }

    /// `TTL`/`PTTL`: what is left of `key`'s life.
    pub fn ttl(&self, key: &[u8]) -> Ttl {
        let now = self.now();
        self.with_entry(key, now, |entry| match entry {
            None => Ttl::Missing,
            Some(Entry {
                expires_at_ms: None,
                ..
            }) => Ttl::Persistent,
            Some(Entry {
                expires_at_ms: Some(at),
                ..
            }) => Ttl::Ms(at.saturating_sub(now.unwrap_or(0))),
        })
    }

    /// `PERSIST`: removes `key`'s expiry; whether it had one. Logged as `PERSIST key`.
    pub fn persist(&self, key: &Bytes) -> (bool, Option<Ticket>) {
        let now = self.now();
        let index = self.shard_index(key);
        let mut shard = self.write(index);
        let mut log = Vec::new();
        self.expire_if_needed(&mut shard, key, now, &mut log);
        let had = shard.get(key).is_some_and(|e| e.expires_at_ms.is_some());
        if had {
            shard.set_expiry(key, None);
            log.push(vec![Bytes::from_static(b"PERSIST"), key.clone()]);
        }
        let ticket = self.append(index, &log);
        drop(shard);
        (had, ticket)
    }

    /// `RENAME src dst`: moves the value and its expiry, replacing whatever `dst` held.
    /// Logged as `RENAME src dst`.
    ///
    /// # Errors
    ///
    /// [`RenameError::NoSuchKey`] if `src` does not exist.
    pub fn rename(&self, src: &Bytes, dst: &Bytes) -> Result<Option<Ticket>, RenameError> {
        let now = self.now();
        let (src_index, dst_index) = (self.shard_index(src), self.shard_index(dst));
        let mut shards = self.write_many([src, dst].into_iter());
        let mut log = Vec::new();
        self.expire_if_needed(shards.get(src_index), src, now, &mut log);
        let result = if shards.get(src_index).get(src).is_none() {
            Err(RenameError::NoSuchKey)
        } else {
            if src != dst {
                if let Some(entry) = shards.get(src_index).remove(src) {
                    if let Some(replaced) = shards.get(dst_index).insert(dst.clone(), entry) {
                        shards.defer_drop(replaced);
                    }
                    log.push(vec![
                        Bytes::from_static(b"RENAME"),
                        src.clone(),
                        dst.clone(),
                    ]);
                }
            }
            Ok(())
        };
        let ticket = self.append(src_index, &log);
        drop(shards);
        result.map(|()| ticket)
    }

    // ---- Transactions ---------------------------------------------------------------

    /// The gate every client command enters, and `EXEC` holds exclusively.
    pub fn gate(&self) -> &Gate {
        &self.gate
    }

    /// `WATCH key`: from now on every change to `key` raises `flag`. Returns whether the
    /// key is live now (a key that was, and has expired by `EXEC`, spoils the transaction
    /// too, as in Redis).
    pub fn watch(&self, key: &Bytes, flag: &Arc<WatchFlag>) -> bool {
        let now = self.now();
        let map = read(&self.shards[self.shard_index(key)]);
        // Under the key's lock, which every change to it holds while it touches the key.
        self.watches.add(key, flag);
        map.entries
            .get(&key[..])
            .is_some_and(|entry| !entry.is_expired(now))
    }

    /// Ends `flag`'s watch of `keys` (`UNWATCH`, and after `EXEC` or `DISCARD`).
    pub fn unwatch<'k>(&self, keys: impl Iterator<Item = &'k Bytes>, flag: &Arc<WatchFlag>) {
        self.watches.remove(keys, flag);
    }

    /// The watch registry.
    pub fn watches(&self) -> &Watches {
        &self.watches
    }

    // ---- Expiry and snapshots -----------------------------------------------------

    /// Removes every expired key, logging a `DEL` per shard that had any: the background
    /// half of expiry. Returns how many keys it removed.
    ///
    /// Each shard is first scanned under its read lock, and write-locked only if it holds
    /// an expired key, so the sweep rarely stands in a writer's way; shards where no key
    /// has an expiry are skipped at once.
    pub fn sweep_expired(&self) -> usize {
        let Some(now) = self.now() else {
            return 0;
        };
        let mut swept = 0;
        for index in 0..NUM_SHARDS {
            let expired: Vec<Bytes> = {
                let map = read(&self.shards[index]);
                if map.volatile == 0 {
                    continue;
                }
                map.entries
                    .iter()
                    .filter(|(_, entry)| entry.is_expired(Some(now)))
                    .map(|(key, _)| key.clone())
                    .collect()
            };
            if expired.is_empty() {
                continue;
            }
            // Not in the middle of an `EXEC`, whose records the log must hold together.
            let _entered = self.gate.enter(index as u64);
            let mut shard = self.write(index);
            let mut logged = vec![Bytes::from_static(b"DEL")];
            let mut removed = Vec::new();
            for key in expired {
                // Checked again: a writer may have changed the key between the locks.
                if shard.get(&key).is_some_and(|e| e.is_expired(Some(now))) {
                    removed.extend(shard.remove(&key));
                    logged.push(key);
                }
            }
            if !removed.is_empty() {
                swept += removed.len();
                self.expired_keys
                    .fetch_add(removed.len() as u64, Ordering::Relaxed);
                self.append(index, &[logged]);
            }
            drop(shard);
        }
        swept
    }

    /// Starts a snapshot: with every shard read-locked (which excludes every writer, and
    /// only writers), asks the journal to start a new log generation and clones the live
    /// entries' `Arc`s. Write the entries with the returned writer, on a blocking thread.
    ///
    /// # Errors
    ///
    /// While loading (there is no journal yet), or if the journal cannot begin one.
    pub fn begin_snapshot(&self) -> io::Result<(Box<dyn SnapshotWriter>, Vec<SnapshotEntry>)> {
        let journal = self
            .journal
            .get()
            .ok_or_else(|| io::Error::other("the keyspace is still loading"))?;
        // Never between two commands of an `EXEC`: a transaction's records stay in one
        // log generation.
        let _entered = self.gate.enter(0);
        let maps: Vec<RwLockReadGuard<'_, ShardMap>> = self.shards.iter().map(read).collect();
        let writer = journal.begin_snapshot()?;
        let mut entries = Vec::with_capacity(maps.iter().map(|m| m.entries.len()).sum());
        for map in &maps {
            entries.extend(
                map.entries
                    .iter()
                    // Expired keys too: the snapshot is the map exactly as the log left it.
                    // Leaving them out would make the snapshot depend on the clock: if the
                    // wall clock stepped back, such a key could be live again, and a later
                    // logged command on it (RENAME, CF.DEL) would not replay. The key's
                    // expiry travels with it, and the first access after loading (or the
                    // sweep) removes it, logging the `DEL`.
                    .map(|(key, entry)| SnapshotEntry {
                        key: key.clone(),
                        expires_at_ms: entry.expires_at_ms,
                        value: Arc::clone(&entry.value),
                    }),
            );
        }
        for shard in self.shards.iter() {
            shard.dirty.store(0, Ordering::Relaxed);
        }
        drop(maps);
        Ok((writer, entries))
    }

    // ---- Memory, access and health -------------------------------------------------

    /// What `--maxmemory` limits, Redis's `used_memory`: the values and the clients'
    /// buffers.
    pub fn memory_in_use(&self) -> usize {
        self.used_memory().saturating_add(self.client_memory())
    }

    /// Bytes the clients' buffers hold (`mem_clients_normal` in `INFO memory`).
    pub fn client_memory(&self) -> usize {
        self.client_memory.load(Ordering::Relaxed)
    }

    /// Counts `grown` more bytes of client buffers and `shrunk` fewer.
    pub fn account_clients(&self, grown: usize, shrunk: usize) {
        if grown > shrunk {
            self.client_memory
                .fetch_add(grown - shrunk, Ordering::Relaxed);
        } else if shrunk > grown {
            self.client_memory
                .fetch_sub(shrunk - grown, Ordering::Relaxed);
        }
    }

    /// `MEMORY USAGE key`: the value's bytes plus what the key costs the map (its bytes,
    /// the entry, and the map's control byte); `None` for a missing key.
    pub fn memory_usage(&self, key: &[u8]) -> Option<usize> {
        let now = self.now();
        self.with_entry(key, now, |entry| {
            entry.map(|e| e.memory_bytes + key.len() + std::mem::size_of::<(Bytes, Entry)>() + 1)
        })
    }

    /// The access clock's time now, in tenths of a second (see [`AccessClock`]).
    pub fn clock_ticks(&self) -> u32 {
        self.access_clock.now()
    }

    /// The access clock's time now, in whole seconds: a clock for once-a-second tallies
    /// that costs an atomic load, not a system call.
    pub fn clock_seconds(&self) -> u64 {
        u64::from(self.clock_ticks() / access::TICKS_PER_SECOND)
    }

    /// The filters flagged past their capacity or target rate (see [`health`]): how many
    /// of each, and the worst with its key. Reads only the flagged entries.
    pub fn filter_health(&self) -> HealthSummary {
        let mut summary = HealthSummary::default();
        for shard in self.shards.iter() {
            let map = read(shard);
            for (key, health) in &map.flagged {
                summary.past_capacity += usize::from(health.past_capacity());
                summary.above_target_rate += usize::from(health.above_target_rate());
                let worse = summary
                    .worst
                    .as_ref()
                    .is_none_or(|(_, worst)| health.severity() > worst.severity());
                if worse {
                    summary.worst = Some((key.clone(), *health));
                }
            }
        }
        summary
    }

    // ---- Internals ----------------------------------------------------------------

    /// The shard that holds `key`: bloomkit's stable hash, masked. (The maps inside hash
    /// with std's randomly keyed SipHash, so crafted keys cannot degrade a shard's map.)
    fn shard_index(&self, key: &[u8]) -> usize {
        (bloomkit::hash_bytes(key) as usize) & (NUM_SHARDS - 1)
    }

    /// The clock expiry uses: `None` while loading, when nothing expires.
    fn now(&self) -> Option<u64> {
        (!self.is_loading()).then(now_ms)
    }

    /// Appends `log` for a change made under shard `index`'s lock (the first of several).
    fn append(&self, index: usize, log: &[Vec<Bytes>]) -> Option<Ticket> {
        self.journal_for(index, log.len())?.append(log)
    }

    /// [`append`](Self::append) for a filter command's records.
    fn append_records(&self, index: usize, records: &[Record<'_>]) -> Option<Ticket> {
        self.journal_for(index, records.len())?
            .append_records(records)
    }

    /// The journal to append `records` records to for a change under shard `index`'s lock,
    /// counted as that shard's unsaved changes; `None` if there is nothing to append or no
    /// journal.
    fn journal_for(&self, index: usize, records: usize) -> Option<&dyn Journal> {
        if records == 0 {
            return None;
        }
        let journal = self.journal.get()?;
        self.shards[index]
            .dirty
            .fetch_add(records as u64, Ordering::Relaxed);
        Some(&**journal)
    }

    /// Calls `f` with `key`'s live entry (`None` if missing or expired) under its shard's
    /// read lock.
    fn with_entry<T>(
        &self,
        key: &[u8],
        now: Option<u64>,
        f: impl FnOnce(Option<&Entry>) -> T,
    ) -> T {
        let map = read(&self.shards[self.shard_index(key)]);
        f(map.entries.get(key).filter(|entry| !entry.is_expired(now)))
    }

    /// Removes `key` if it has expired, logging `DEL key`: what a write does first, so that
    /// it acts on a missing key and replay sees why.
    fn expire_if_needed(
        &self,
        shard: &mut ShardWriter<'_>,
        key: &[u8],
        now: Option<u64>,
        log: &mut Vec<Vec<Bytes>>,
    ) {
        if shard.get(key).is_some_and(|entry| entry.is_expired(now)) {
            shard.remove(key);
            self.expired_keys.fetch_add(1, Ordering::Relaxed);
            log.push(vec![
                Bytes::from_static(b"DEL"),
                Bytes::copy_from_slice(key),
            ]);
        }
    }

    fn write(&self, index: usize) -> ShardWriter<'_> {
        let shard = &self.shards[index];
        ShardWriter {
            map: shard.map.write().unwrap_or_else(PoisonError::into_inner),
            memory_bytes: &shard.memory_bytes,
            watches: &self.watches,
        }
    }

    /// Write locks on the shards of `keys`, taken in index order (each once).
    fn write_many<'k>(&self, keys: impl Iterator<Item = &'k Bytes>) -> ShardSet<'_> {
        let mut indices: Vec<usize> = keys.map(|key| self.shard_index(key)).collect();
        indices.sort_unstable();
        indices.dedup();
        ShardSet {
            shards: indices.into_iter().map(|i| (i, self.write(i))).collect(),
            deferred: Vec::new(),
        }
    }

    /// Write locks on every shard, in index order.
    fn write_all(&self) -> Vec<ShardWriter<'_>> {
        (0..NUM_SHARDS).map(|i| self.write(i)).collect()
    }
}

impl Budget for Keyspace {
    fn within_maxmemory(&self, extra_bytes: usize) -> bool {
        let max = self.maxmemory();
        max == 0 || self.memory_in_use().saturating_add(extra_bytes) as u64 <= max
    }

    fn machine_available(&self) -> Option<usize> {
        memory::machine_available()
    }

    fn admits_reply(&self, bytes: usize) -> bool {
        // Called under a shard's lock: no eviction here (it would take shard locks).
        bytes <= memory::BIG_REPLY || self.within_maxmemory(bytes)
    }
}

/// What [`Keyspace::filter_health`] found.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HealthSummary {
    /// Filters holding more items than their capacity.
    pub past_capacity: usize,
    /// Filters whose estimated rate is above their target.
    pub above_target_rate: usize,
    /// The worst of them (by [`Health::severity`]) and its key.
    pub worst: Option<(Bytes, Health)>,
}

/// The keyspace's budget, remembering what it refused: the bytes a refused allocation
/// asked for, which eviction then makes room for.
struct RecordingBudget<'a> {
    keyspace: &'a Keyspace,
    /// `usize::MAX` until something is refused.
    refused: AtomicUsize,
}

impl<'a> RecordingBudget<'a> {
    fn new(keyspace: &'a Keyspace) -> RecordingBudget<'a> {
        RecordingBudget {
            keyspace,
            refused: AtomicUsize::new(usize::MAX),
        }
    }

    fn refused(&self) -> Option<usize> {
        let refused = self.refused.load(Ordering::Relaxed);
        (refused != usize::MAX).then_some(refused)
    }
}

impl Budget for RecordingBudget<'_> {
    fn within_maxmemory(&self, extra_bytes: usize) -> bool {
        let within = self.keyspace.within_maxmemory(extra_bytes);
        if !within {
            self.refused
                .store(extra_bytes.min(usize::MAX - 1), Ordering::Relaxed);
        }
        within
    }

    fn machine_available(&self) -> Option<usize> {
        self.keyspace.machine_available()
    }

    fn admits_reply(&self, bytes: usize) -> bool {
        self.keyspace.admits_reply(bytes)
    }
}

/// Several shards' write locks, in index order.
struct ShardSet<'a> {
    shards: Vec<(usize, ShardWriter<'a>)>,
    /// Entries to free once the locks are released.
    deferred: Vec<Entry>,
}

impl<'a> ShardSet<'a> {
    /// The lock of shard `index`, which must be one of those taken.
    fn get(&mut self, index: usize) -> &mut ShardWriter<'a> {
        // `write_many` locked the shard of every key its caller passes here; a miss would
        // be a bug in this file, never something a client can cause.
        let at = self
            .shards
            .binary_search_by_key(&index, |(i, _)| *i)
            .unwrap_or_else(|_| unreachable!("shard {index} was not locked"));
        &mut self.shards[at].1
    }

    /// The lowest shard index locked (0 if none), to count a log record against.
    fn first_index(&self) -> usize {
        self.shards.first().map_or(0, |(index, _)| *index)
    }

    fn defer_drop(&mut self, entry: Entry) {
        self.deferred.push(entry);
    }
}

impl Drop for ShardSet<'_> {
    fn drop(&mut self) {
        // Release the locks first, then free what was removed under them.
        self.shards.clear();
        self.deferred.clear();
    }
}

fn read(shard: &Shard) -> RwLockReadGuard<'_, ShardMap> {
    // A panic while a lock was held (there should be none) must not take every later
    // command on that shard down with it: the map itself is always consistent between
    // statements.
    shard.map.read().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests;
