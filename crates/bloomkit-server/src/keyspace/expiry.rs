//! The background half of expiry: the sweep that removes the expired keys nobody touches.

use std::sync::atomic::Ordering;

use bytes::Bytes;

use super::shard::read;
use super::{Keyspace, NUM_SHARDS};

impl Keyspace {
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
                    // A leased key is its long command's until the lease ends.
                    .filter(|(_, entry)| entry.is_expired(Some(now)) && entry.lease.is_none())
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
                if shard
                    .get(&key)
                    .is_some_and(|e| e.is_expired(Some(now)) && e.lease.is_none())
                {
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
}
