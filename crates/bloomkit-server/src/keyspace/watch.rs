//! `WATCH`'s bookkeeping: which clients watch which keys, and the flag that a change to one
//! of them raises (Redis's `CLIENT_DIRTY_CAS`), so that the client's `EXEC` answers nil.
//!
//! A client registers while holding its key's shard lock, and every change to a key
//! touches it while holding the same lock (through the shard's writer, or explicitly
//! for a filter changed in place), so a change either comes before the registration (and
//! the client's later reads see it) or raises the flag. The registry is a map behind a
//! mutex, as Redis's `watched_keys` dictionary; a change looks at it only while someone
//! watches at all, so a server where nobody watches pays one atomic load per change.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use super::shard::read;
use super::Keyspace;
use bytes::Bytes;

/// One client's "a watched key changed" flag, shared with the registry.
#[derive(Debug, Default)]
pub struct WatchFlag(AtomicBool);

impl WatchFlag {
    /// Whether a watched key changed since it was watched.
    pub fn is_raised(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }

    fn raise(&self) {
        self.0.store(true, Ordering::Release);
    }
}

/// Who watches which key.
#[derive(Default)]
pub struct Watches {
    /// Registrations (a key watched by two clients counts twice). Changed and read under
    /// the watched key's shard lock, which orders it with the changes to that key.
    count: AtomicUsize,
    keys: Mutex<HashMap<Bytes, Vec<Arc<WatchFlag>>>>,
}

impl Watches {
    /// Registers `flag` for `key`; call it with `key`'s shard locked.
    pub(super) fn add(&self, key: &Bytes, flag: &Arc<WatchFlag>) {
        let mut keys = self.keys.lock().unwrap_or_else(PoisonError::into_inner);
        // The registry owns its keys' bytes: a key that is a slice of a request's buffer
        // would keep the whole buffer alive for as long as the watch.
        if !keys.contains_key(&key[..]) {
            keys.insert(Bytes::copy_from_slice(key), Vec::new());
        }
        let Some(flags) = keys.get_mut(&key[..]) else {
            return;
        };
        if !flags.iter().any(|f| Arc::ptr_eq(f, flag)) {
            flags.push(Arc::clone(flag));
            self.count.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Removes `flag`'s registrations for `keys`.
    pub(super) fn remove<'k>(&self, keys: impl Iterator<Item = &'k Bytes>, flag: &Arc<WatchFlag>) {
        let mut map = self.keys.lock().unwrap_or_else(PoisonError::into_inner);
        for key in keys {
            let Some(flags) = map.get_mut(key) else {
                continue;
            };
            let before = flags.len();
            flags.retain(|f| !Arc::ptr_eq(f, flag));
            self.count
                .fetch_sub(before - flags.len(), Ordering::Relaxed);
            if flags.is_empty() {
                map.remove(key);
            }
        }
    }

    /// Raises the flag of every client watching `key`: called for every change, with the
    /// key's shard locked.
    #[inline]
    pub(super) fn touch(&self, key: &[u8]) {
        if self.count.load(Ordering::Relaxed) != 0 {
            self.touch_watched(key);
        }
    }

    #[cold]
    fn touch_watched(&self, key: &[u8]) {
        let keys = self.keys.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(flags) = keys.get(key) {
            flags.iter().for_each(|flag| flag.raise());
        }
    }

    /// Raises the flag of every client watching a key for which `changed` says true (for
    /// `FLUSHALL`, which touches every key that existed); called with the shards locked.
    pub(super) fn touch_if(&self, changed: impl Fn(&[u8]) -> bool) {
        if self.count.load(Ordering::Relaxed) == 0 {
            return;
        }
        let keys = self.keys.lock().unwrap_or_else(PoisonError::into_inner);
        for (key, flags) in keys.iter() {
            if changed(key) {
                flags.iter().for_each(|flag| flag.raise());
            }
        }
    }

    /// How many registrations there are (for tests and `INFO`).
    pub fn len(&self) -> usize {
        self.count.load(Ordering::Relaxed)
    }

    /// Whether nobody watches anything.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Keyspace {
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
}
