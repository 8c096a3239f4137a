//! The shards: each a map of keys to entries behind a `std::sync::RwLock`, the writer
//! through which every change to a shard goes, several shards locked in index order, and
//! the keyspace's internal helpers that find a key's shard, lock it, and log a change made
//! under its lock.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use bloomkit_commands::{Record, Value};
use bytes::Bytes;

use super::{memory, now_ms, Entry, Health, Journal, Keyspace, Ticket, Watches, NUM_SHARDS};

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
pub(super) struct Shard {
    pub(super) map: RwLock<ShardMap>,
    /// Sum of the entries' `memory_bytes`; changed only under the write lock, read without
    /// it (`INFO`, `--maxmemory` checks).
    pub(super) memory_bytes: AtomicUsize,
    /// Log records appended by writes to this shard since the last snapshot began. Per
    /// shard, beside the lock writers already hold, so that counting never makes writers
    /// on different cores contend for one shared counter.
    pub(super) dirty: AtomicU64,
}

#[derive(Default)]
pub(super) struct ShardMap {
    pub(super) entries: HashMap<Bytes, Entry>,
    /// How many entries have an expiry: the sweep skips shards with none.
    pub(super) volatile: usize,
    /// The entries past their capacity or target rate (see [`health`]), for `INFO filters`.
    pub(super) flagged: HashMap<Bytes, Health>,
}

/// A shard's write lock, through which every change goes, so that the volatile count and
/// the memory total can never drift from the entries, and no change escapes a `WATCH`.
pub(super) struct ShardWriter<'a> {
    pub(super) map: RwLockWriteGuard<'a, ShardMap>,
    pub(super) memory_bytes: &'a AtomicUsize,
    pub(super) watches: &'a Watches,
}

impl ShardWriter<'_> {
    pub(super) fn get(&self, key: &[u8]) -> Option<&Entry> {
        self.map.entries.get(key)
    }

    /// Puts `entry` at `key`, which the map stores as a copy of its own: a key given as a
    /// slice of a request's buffer would otherwise keep the whole buffer alive (and
    /// uncounted) for as long as the key lives.
    pub(super) fn insert(&mut self, key: &[u8], entry: Entry) -> Option<Entry> {
        let key = Bytes::copy_from_slice(key);
        let key_len = key.len();
        self.watches.touch(&key);
        self.add_memory(entry.memory_bytes + memory::key_cost(key_len));
        self.map.volatile += usize::from(entry.expires_at_ms.is_some());
        self.check_health(&key, &entry.value);
        let capacity = self.map.entries.capacity();
        let old = self.map.entries.insert(key, entry);
        self.follow_table(capacity);
        if let Some(old) = &old {
            // The same key: its cost was counted when it was first inserted.
            self.forget(old, key_len);
        }
        old
    }

    pub(super) fn remove(&mut self, key: &[u8]) -> Option<Entry> {
        let old = self.map.entries.remove(key)?;
        self.watches.touch(key);
        self.forget(&old, key.len());
        self.unflag(key);
        self.shrink_table();
        Some(old)
    }

    /// Gives the allocator back a table that removals left mostly empty (as Redis resizes
    /// a dictionary under 10% full): an empty one whole, one under an eighth full down to
    /// twice its entries. A shrink rehashes the entries left, which the removals that
    /// emptied it paid for many times over.
    fn shrink_table(&mut self) {
        let (len, capacity) = (self.map.entries.len(), self.map.entries.capacity());
        if len == 0 && capacity > 0 {
            self.map.entries = HashMap::new();
        } else if capacity > 64 && len * 8 < capacity {
            self.map.entries.shrink_to(len * 2);
        } else {
            return;
        }
        self.follow_table(capacity);
    }

    /// Flags or unflags `key` for what `value` now holds.
    pub(super) fn check_health(&mut self, key: &Bytes, value: &Value) {
        match Health::of(value) {
            Some(health) => self.flag(key, health),
            None => self.unflag(key),
        }
    }

    /// Puts `key` among the flagged filters (or updates its health there).
    pub(super) fn flag(&mut self, key: &Bytes, health: Health) {
        if self.map.flagged.insert(key.clone(), health).is_none() {
            self.add_memory(memory::flag_cost());
        }
    }

    /// Takes `key` out of the flagged filters, if it is there.
    pub(super) fn unflag(&mut self, key: &[u8]) {
        if !self.map.flagged.is_empty() && self.map.flagged.remove(key).is_some() {
            self.sub_memory(memory::flag_cost());
        }
    }

    /// Counts the table's growth since it had `capacity` entries' room.
    fn follow_table(&mut self, capacity: usize) {
        let now = self.map.entries.capacity();
        if now != capacity {
            self.add_memory(memory::table_cost(now));
            self.sub_memory(memory::table_cost(capacity));
        }
    }

    /// Counts `bytes` more.
    pub(super) fn add_memory(&self, bytes: usize) {
        self.memory_bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Counts `bytes` fewer.
    pub(super) fn sub_memory(&self, bytes: usize) {
        self.memory_bytes.fetch_sub(bytes, Ordering::Relaxed);
    }

    pub(super) fn set_expiry(&mut self, key: &[u8], expires_at_ms: Option<u64>) {
        if let Some(entry) = self.map.entries.get_mut(key) {
            self.watches.touch(key);
            let before = usize::from(entry.expires_at_ms.is_some());
            entry.expires_at_ms = expires_at_ms;
            self.map.volatile = self.map.volatile - before + usize::from(expires_at_ms.is_some());
        }
    }

    /// Uncounts `old`, whose key was `key_len` bytes long.
    fn forget(&mut self, old: &Entry, key_len: usize) {
        self.sub_memory(old.memory_bytes + memory::key_cost(key_len));
        self.map.volatile -= usize::from(old.expires_at_ms.is_some());
    }
}

/// Several shards' write locks, in index order.
pub(super) struct ShardSet<'a> {
    pub(super) shards: Vec<(usize, ShardWriter<'a>)>,
    /// Entries to free once the locks are released.
    pub(super) deferred: Vec<Entry>,
}

impl<'a> ShardSet<'a> {
    /// The lock of shard `index`, which must be one of those taken.
    pub(super) fn get(&mut self, index: usize) -> &mut ShardWriter<'a> {
        // `write_many` locked the shard of every key its caller passes here; a miss would
        // be a bug in this file, never something a client can cause.
        let at = self
            .shards
            .binary_search_by_key(&index, |(i, _)| *i)
            .unwrap_or_else(|_| unreachable!("shard {index} was not locked"));
        &mut self.shards[at].1
    }

    /// The lowest shard index locked (0 if none), to count a log record against.
    pub(super) fn first_index(&self) -> usize {
        self.shards.first().map_or(0, |(index, _)| *index)
    }

    pub(super) fn defer_drop(&mut self, entry: Entry) {
        self.deferred.push(entry);
    }
}

impl Drop for ShardSet<'_> {
    fn drop(&mut self) {
        // Release the locks first, then free what was removed under them.
        self.shards.clear();
        let deferred = std::mem::take(&mut self.deferred);
        let bytes = deferred.iter().map(|e| e.memory_bytes).sum();
        memory::free(deferred, bytes);
    }
}

pub(super) fn read(shard: &Shard) -> RwLockReadGuard<'_, ShardMap> {
    // A panic while a lock was held (there should be none) must not take every later
    // command on that shard down with it: the map itself is always consistent between
    // statements.
    shard.map.read().unwrap_or_else(PoisonError::into_inner)
}

impl Keyspace {
    /// The shard that holds `key`: bloomkit's stable hash, masked. (The maps inside hash
    /// with std's randomly keyed SipHash, so crafted keys cannot degrade a shard's map.)
    pub(super) fn shard_index(&self, key: &[u8]) -> usize {
        (bloomkit::hash_bytes(key) as usize) & (NUM_SHARDS - 1)
    }

    /// The clock expiry uses: `None` while loading, when nothing expires.
    pub(super) fn now(&self) -> Option<u64> {
        (!self.is_loading()).then(now_ms)
    }

    /// Appends `log` for a change made under shard `index`'s lock (the first of several).
    pub(super) fn append(&self, index: usize, log: &[Vec<Bytes>]) -> Option<Ticket> {
        self.journal_for(index, log.len())?.append(log)
    }

    /// [`append`](Self::append) for a filter command's records.
    pub(super) fn append_records(&self, index: usize, records: &[Record<'_>]) -> Option<Ticket> {
        self.journal_for(index, records.len())?
            .append_records(records)
    }

    /// The journal to append `records` records to for a change under shard `index`'s lock,
    /// counted as that shard's unsaved changes; `None` if there is nothing to append or no
    /// journal.
    pub(super) fn journal_for(&self, index: usize, records: usize) -> Option<&dyn Journal> {
        if records == 0 {
            return None;
        }
        let journal = self.journal.get()?;
        self.shards[index]
            .dirty
            .fetch_add(records as u64, Ordering::Relaxed);
        Some(&**journal)
    }

    /// Calls `f` with `key`'s entry, live, expired or leased, under its shard's read lock.
    pub(super) fn with_any_entry<T>(&self, key: &[u8], f: impl FnOnce(Option<&Entry>) -> T) -> T {
        let map = read(&self.shards[self.shard_index(key)]);
        f(map.entries.get(key))
    }

    /// Calls `f` with `key`'s live entry (`None` if missing or expired) under its shard's
    /// read lock.
    pub(super) fn with_entry<T>(
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
    pub(super) fn expire_if_needed(
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

    pub(super) fn write(&self, index: usize) -> ShardWriter<'_> {
        let shard = &self.shards[index];
        ShardWriter {
            map: shard.map.write().unwrap_or_else(PoisonError::into_inner),
            memory_bytes: &shard.memory_bytes,
            watches: &self.watches,
        }
    }

    /// Write locks on the shards of `keys`, taken in index order (each once).
    pub(super) fn write_many<'k>(&self, keys: impl Iterator<Item = &'k Bytes>) -> ShardSet<'_> {
        let mut indices: Vec<usize> = keys.map(|key| self.shard_index(key)).collect();
        indices.sort_unstable();
        indices.dedup();
        ShardSet {
            shards: indices.into_iter().map(|i| (i, self.write(i))).collect(),
            deferred: Vec::new(),
        }
    }

    /// Write locks on every shard, in index order.
    pub(super) fn write_all(&self) -> Vec<ShardWriter<'_>> {
        (0..NUM_SHARDS).map(|i| self.write(i)).collect()
    }
}
