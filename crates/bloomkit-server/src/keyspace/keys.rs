//! The generic key commands: `DEL`, `EXISTS`, `TYPE`, `KEYS`, `SCAN`, `FLUSHALL`, the
//! expiry commands and `RENAME`, each a change logged under its shards' locks in a form
//! that replays to the same state.

use std::sync::atomic::Ordering;

use bytes::Bytes;

use super::shard::read;
use super::{memory, Entry, Keyspace, Ticket, NUM_SHARDS};
use crate::glob;

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
    pub(super) fn allows(self, current: Option<u64>, at_ms: i64) -> bool {
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

impl Keyspace {
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
        let bytes = removed.iter().map(|e| e.memory_bytes).sum();
        memory::free(removed, bytes);
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
    ///
    /// It takes time linear in the keys, so it holds the gate a shard at a time, never for the
    /// whole walk: call it outside the gate. Each shard is seen whole, before or after an
    /// `EXEC`'s changes.
    pub fn keys_matching(&self, pattern: &[u8]) -> Vec<Bytes> {
        let match_all = pattern == b"*";
        let mut keys = Vec::new();
        for shard in self.shards.iter() {
            let _entered = self.gate.enter(0);
            let now = self.now();
            let map = read(shard);
            keys.extend(
                map.entries
                    .iter()
                    .filter(|(key, entry)| {
                        !entry.is_expired(now)
                            && !entry.is_placeholder()
                            && (match_all || glob::matches(pattern, key, false))
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
                            && !entry.is_placeholder()
                            && type_name.is_none_or(|t| {
                                t.eq_ignore_ascii_case(entry.type_name().as_bytes())
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
        let mut bytes = 0;
        for shard in &mut shards {
            removed.push(std::mem::take(&mut shard.map.entries));
            shard.map.volatile = 0;
            shard.map.flagged.clear();
            bytes += shard.memory_bytes.swap(0, Ordering::Relaxed);
        }
        let ticket = self.append(0, &[vec![Bytes::from_static(b"FLUSHALL")]]);
        drop(shards);
        memory::free(removed, bytes);
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
                    if let Some(replaced) = shards.get(dst_index).insert(dst, entry) {
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
}
