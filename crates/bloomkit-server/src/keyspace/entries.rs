//! Whole entries: what the commands that handle a key's value as one piece need (`DUMP`,
//! `RESTORE`, `COPY`, `RANDOMKEY`, `TOUCH`, `OBJECT`, `DEBUG RELOAD`), and the access clock
//! they and the filter commands stamp keys with.
//!
//! As everywhere in the keyspace, a change is logged while its shards are locked, in a form
//! that replays to the same state: `RESTORE` with an absolute expiry and `REPLACE`, `COPY`
//! with `REPLACE`, each only once it has been checked, so a replay never meets an error.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use bloomkit_commands::{Budget, Value};
use bytes::Bytes;

use super::access::{random_u64, TICKS_PER_SECOND};
use super::{read, AccessStamp, Entry, Keyspace, Ticket, NUM_SHARDS};

/// What `OBJECT` reports of a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ObjectInfo {
    /// `TYPE`'s answer.
    pub type_name: &'static str,
    /// Seconds since a command last used the value.
    pub idle_seconds: u32,
    /// The value's LFU counter (counted only under an LFU `maxmemory-policy`).
    pub frequency: u8,
}

/// What `RESTORE` says of its key's use: `IDLETIME` and `FREQ`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RestoredAccess {
    /// Seconds since the key was last used.
    pub idle_seconds: u32,
    /// Its LFU counter; the starting value without one.
    pub frequency: Option<u8>,
}

/// Why `RESTORE` did not create its key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RestoreError {
    /// The key exists and `REPLACE` was not given (`BUSYKEY`).
    BusyKey,
    /// The value would take the memory past `--maxmemory`.
    Oom,
}

/// Why `COPY` did not copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CopyError {
    /// The copy would take the memory past `--maxmemory`.
    Oom,
}

/// A key that a `DEBUG RELOAD` could not put through the snapshot encoding and back: it keeps
/// its value, and the error says which and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReloadFailure {
    /// The key.
    pub key: Bytes,
    /// What the decoder said.
    pub reason: String,
}

impl Keyspace {
    /// Advances the access clock (the server's housekeeping calls it every tick).
    pub fn tick_access_clock(&self) {
        self.access_clock.tick();
    }

    /// `TOUCH key...`: how many of the keys exist (a key named twice counts twice); each is
    /// stamped as used.
    pub fn touch(&self, keys: &[Bytes]) -> i64 {
        let now = self.now();
        let clock = self.access_clock.now();
        let lfu = self.eviction().policy().is_lfu();
        let touched = keys
            .iter()
            .filter(|key| {
                self.with_entry(key, now, |entry| {
                    entry.inspect(|e| e.access.touch(clock, lfu)).is_some()
                })
            })
            .count();
        i64::try_from(touched).unwrap_or(i64::MAX)
    }

    /// `OBJECT ...`: the key's type, idle time and frequency, without stamping it as used.
    pub fn object_info(&self, key: &[u8]) -> Option<ObjectInfo> {
        let clock = self.access_clock.now();
        self.with_entry(key, self.now(), |entry| {
            entry.map(|e| ObjectInfo {
                type_name: e.value.type_name(),
                idle_seconds: e.access.idle_seconds(clock),
                frequency: e.access.frequency(clock),
            })
        })
    }

    /// The key's value (shared, not copied), stamped as used: what `DUMP` encodes, with the
    /// shard's lock released.
    pub fn value_of(&self, key: &[u8]) -> Option<Arc<Value>> {
        let clock = self.access_clock.now();
        let lfu = self.eviction().policy().is_lfu();
        self.with_entry(key, self.now(), |entry| {
            entry.map(|e| {
                e.access.touch(clock, lfu);
                Arc::clone(&e.value)
            })
        })
    }

    /// `RANDOMKEY`: a live key chosen at random, or `None` when there is none.
    ///
    /// A shard is chosen in proportion to its keys, then a key within it; a pick that has
    /// expired is tried again, up to 100 times, as Redis does (which then gives up on a
    /// keyspace of only expired keys).
    pub fn random_key(&self) -> Option<Bytes> {
        let now = self.now();
        for _ in 0..100 {
            let sizes: Vec<usize> = self
                .shards
                .iter()
                .map(|shard| read(shard).entries.len())
                .collect();
            let total: usize = sizes.iter().sum();
            if total == 0 {
                return None;
            }
            let mut pick = (random_u64() % total as u64) as usize;
            let index = sizes
                .iter()
                .position(|&size| {
                    if pick < size {
                        true
                    } else {
                        pick -= size;
                        false
                    }
                })
                .unwrap_or(NUM_SHARDS - 1);
            let map = read(&self.shards[index]);
            // The shard may have changed since it was counted.
            let len = map.entries.len();
            if len == 0 {
                continue;
            }
            if let Some((key, entry)) = map.entries.iter().nth(pick % len) {
                if !entry.is_expired(now) && !entry.is_placeholder() {
                    return Some(key.clone());
                }
            }
        }
        None
    }

    /// `RESTORE`: puts `value` at `key`, expiring at `expires_at_ms` (Unix milliseconds),
    /// and last used as `access` says. Without `replace`, an existing key is refused; an
    /// expiry already past creates nothing (and removes the key it would have replaced,
    /// logged as `DEL`). Otherwise the change is logged as `logged`, a `RESTORE` that
    /// replays it whatever the key then holds.
    ///
    /// # Errors
    ///
    /// [`RestoreError::BusyKey`], and [`RestoreError::Oom`] past `--maxmemory` (the value is
    /// decoded already; admitting its size before decoding is the caller's).
    pub fn restore_value(
        &self,
        key: &Bytes,
        value: Value,
        expires_at_ms: Option<u64>,
        replace: bool,
        access: RestoredAccess,
        logged: Vec<Bytes>,
    ) -> Result<Option<Ticket>, RestoreError> {
        let now = self.now();
        let index = self.shard_index(key);
        let mut shard = self.write(index);
        let mut log = Vec::new();
        self.expire_if_needed(&mut shard, key, now, &mut log);
        let exists = shard.get(key).is_some();
        let result = if exists && !replace {
            Err(RestoreError::BusyKey)
        } else if !self.is_loading() && !self.within_maxmemory(value.memory_bytes()) {
            Err(RestoreError::Oom)
        } else {
            let past = matches!((expires_at_ms, now), (Some(at), Some(now)) if at <= now);
            let old = shard.remove(key);
            if past {
                if old.is_some() {
                    log.push(vec![Bytes::from_static(b"DEL"), key.clone()]);
                }
            } else {
                let mut entry = Entry::new(Arc::new(value), expires_at_ms, 0);
                let idle_ticks = access.idle_seconds.saturating_mul(TICKS_PER_SECOND);
                // Differences of stamps wrap at 2^32 ticks: an idle time is kept below half.
                let idle_ticks = idle_ticks.min(u32::MAX / 2);
                entry.access =
                    AccessStamp::restored(self.access_clock.now(), idle_ticks, access.frequency);
                shard.insert(key, entry);
                log.push(logged);
            }
            let bytes = old.as_ref().map_or(0, |e| e.memory_bytes);
            super::memory::free(old, bytes);
            Ok(())
        };
        let ticket = self.append(index, &log);
        drop(shard);
        result.map(|()| ticket)
    }

    /// `COPY source destination [REPLACE]`: puts a copy of the source's value and expiry at
    /// the destination; `false` if the source is missing, or the destination exists without
    /// `replace`. Logged as `COPY source destination REPLACE`.
    ///
    /// The copy shares the value until either key is changed (a writer copies a value it
    /// shares, as it does one a snapshot holds), but `used_memory` counts it in full at once.
    ///
    /// # Errors
    ///
    /// [`CopyError::Oom`] if the copy would take the memory past `--maxmemory`.
    pub fn copy(
        &self,
        src: &Bytes,
        dst: &Bytes,
        replace: bool,
    ) -> Result<(bool, Option<Ticket>), CopyError> {
        let now = self.now();
        let (src_index, dst_index) = (self.shard_index(src), self.shard_index(dst));
        let mut shards = self.write_many([src, dst].into_iter());
        let mut log = Vec::new();
        self.expire_if_needed(shards.get(src_index), src, now, &mut log);
        self.expire_if_needed(shards.get(dst_index), dst, now, &mut log);
        let clock = self.access_clock.now();
        let lfu = self.eviction().policy().is_lfu();
        let source = shards.get(src_index).get(src).map(|entry| {
            entry.access.touch(clock, lfu);
            (
                Arc::clone(&entry.value),
                entry.expires_at_ms,
                entry.memory_bytes,
            )
        });
        let result = match source {
            None => Ok(false),
            Some(_) if !replace && shards.get(dst_index).get(dst).is_some() => Ok(false),
            Some((_, _, bytes)) if !self.is_loading() && !self.within_maxmemory(bytes) => {
                Err(CopyError::Oom)
            }
            Some((value, expires_at_ms, _)) => {
                let entry = Entry::new(value, expires_at_ms, clock);
                if let Some(replaced) = shards.get(dst_index).insert(dst, entry) {
                    shards.defer_drop(replaced);
                }
                log.push(vec![
                    Bytes::from_static(b"COPY"),
                    src.clone(),
                    dst.clone(),
                    Bytes::from_static(b"REPLACE"),
                ]);
                Ok(true)
            }
        };
        let ticket = self.append(shards.first_index(), &log);
        drop(shards);
        result.map(|copied| (copied, ticket))
    }

    /// `DEBUG RELOAD`'s load: with every writer held off, puts each value through the
    /// encoding a snapshot stores and back, and keeps what comes back, as Redis keeps what
    /// its RDB load gives. Access stamps restart from now, as a reload's do in Redis. Returns
    /// how many values were reloaded, and the keys whose encoding did not decode (they keep
    /// their values).
    pub fn reload_values(&self) -> (u64, Vec<ReloadFailure>) {
        let mut shards = self.write_all();
        let clock = self.access_clock.now();
        let (mut reloaded, mut failures) = (0u64, Vec::new());
        for shard in &mut shards {
            let memory = shard.memory_bytes;
            // A leased key is its long command's: it keeps its value.
            for (key, entry) in shard
                .map
                .entries
                .iter_mut()
                .filter(|(_, e)| e.lease.is_none())
            {
                match Value::from_bytes(&entry.value.to_bytes()) {
                    Ok(value) => {
                        let after = super::memory::value_cost(&value);
                        entry.value = Arc::new(value);
                        memory.fetch_add(after, Ordering::Relaxed);
                        memory.fetch_sub(entry.memory_bytes, Ordering::Relaxed);
                        entry.memory_bytes = after;
                        entry.access = AccessStamp::new(clock);
                        reloaded += 1;
                    }
                    Err(e) => failures.push(ReloadFailure {
                        key: key.clone(),
                        reason: e.to_string(),
                    }),
                }
            }
        }
        drop(shards);
        (reloaded, failures)
    }
}
