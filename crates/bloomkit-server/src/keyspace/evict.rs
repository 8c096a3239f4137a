//! `maxmemory-policy`: which keys go when a write needs memory past `maxmemory`, with
//! Redis's policies and its way of choosing (sampling, not a global order).
//!
//! `noeviction` (the default) evicts nothing: the write answers `OOM`. The others remove
//! keys until the write fits: `allkeys-*` from every key, `volatile-*` only from keys with
//! an expiry; `lru` the least recently used, `lfu` the least frequently used (Redis's
//! logarithmic counter, see [`super::access`]), `random` any, `volatile-ttl` the nearest
//! expiry. Like Redis, each eviction looks at `maxmemory-samples` keys (5 by default; each
//! from another shard, at a random place in it) and removes the best candidate among them.
//!
//! What counts is `used_memory` as `INFO memory` reports it: the values and the clients'
//! buffers, as Redis counts them. Each eviction is logged as `DEL key`, as Redis propagates
//! it, so that replaying the log never depends on the policy or on memory.

use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering};

use bytes::Bytes;

use super::access::random_u64;
use super::{read, Keyspace, NUM_SHARDS};

/// A `maxmemory-policy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// Evict nothing; writes that need memory answer `OOM`.
    NoEviction,
    /// The least recently used of all keys.
    AllKeysLru,
    /// The least frequently used of all keys.
    AllKeysLfu,
    /// Any key.
    AllKeysRandom,
    /// The least recently used of the keys with an expiry.
    VolatileLru,
    /// The least frequently used of the keys with an expiry.
    VolatileLfu,
    /// Any key with an expiry.
    VolatileRandom,
    /// The key with the nearest expiry.
    VolatileTtl,
}

impl Policy {
    /// Every policy, in the order Redis's error message lists them.
    pub const ALL: [Policy; 8] = [
        Policy::VolatileLru,
        Policy::AllKeysLru,
        Policy::VolatileLfu,
        Policy::AllKeysLfu,
        Policy::VolatileRandom,
        Policy::AllKeysRandom,
        Policy::VolatileTtl,
        Policy::NoEviction,
    ];

    /// Its name in `CONFIG SET maxmemory-policy`.
    pub fn name(self) -> &'static str {
        match self {
            Policy::NoEviction => "noeviction",
            Policy::AllKeysLru => "allkeys-lru",
            Policy::AllKeysLfu => "allkeys-lfu",
            Policy::AllKeysRandom => "allkeys-random",
            Policy::VolatileLru => "volatile-lru",
            Policy::VolatileLfu => "volatile-lfu",
            Policy::VolatileRandom => "volatile-random",
            Policy::VolatileTtl => "volatile-ttl",
        }
    }

    /// The policy named `name` (any case).
    pub fn parse(name: &[u8]) -> Option<Policy> {
        Policy::ALL
            .into_iter()
            .find(|policy| policy.name().as_bytes().eq_ignore_ascii_case(name))
    }

    /// Whether accesses should count toward the LFU counter.
    pub fn is_lfu(self) -> bool {
        matches!(self, Policy::AllKeysLfu | Policy::VolatileLfu)
    }

    fn volatile_only(self) -> bool {
        matches!(
            self,
            Policy::VolatileLru
                | Policy::VolatileLfu
                | Policy::VolatileRandom
                | Policy::VolatileTtl
        )
    }
}

/// The eviction settings and counter, kept by the keyspace.
#[derive(Debug)]
pub struct Eviction {
    policy: AtomicU8,
    samples: AtomicU32,
    evicted_keys: AtomicU64,
}

impl Default for Eviction {
    fn default() -> Eviction {
        Eviction {
            policy: AtomicU8::new(0),
            samples: AtomicU32::new(Eviction::DEFAULT_SAMPLES),
            evicted_keys: AtomicU64::new(0),
        }
    }
}

impl Eviction {
    /// Redis's default `maxmemory-samples`.
    pub const DEFAULT_SAMPLES: u32 = 5;

    /// The policy in force.
    pub fn policy(&self) -> Policy {
        let at = usize::from(self.policy.load(Ordering::Relaxed));
        POLICY_CODES.get(at).copied().unwrap_or(Policy::NoEviction)
    }

    /// Sets the policy (`CONFIG SET maxmemory-policy`).
    pub fn set_policy(&self, policy: Policy) {
        let code = POLICY_CODES.iter().position(|p| *p == policy).unwrap_or(0);
        self.policy.store(code as u8, Ordering::Relaxed);
    }

    /// Keys looked at per eviction (`maxmemory-samples`).
    pub fn samples(&self) -> u32 {
        self.samples.load(Ordering::Relaxed)
    }

    /// Sets `maxmemory-samples` (at least 1).
    pub fn set_samples(&self, samples: u32) {
        self.samples.store(samples.max(1), Ordering::Relaxed);
    }

    /// Keys evicted since start-up (`evicted_keys` in `INFO stats`).
    pub fn evicted_keys(&self) -> u64 {
        self.evicted_keys.load(Ordering::Relaxed)
    }
}

/// The policies by the code [`Eviction`] stores: `noeviction` first, the default.
const POLICY_CODES: [Policy; 8] = [
    Policy::NoEviction,
    Policy::AllKeysLru,
    Policy::AllKeysLfu,
    Policy::AllKeysRandom,
    Policy::VolatileLru,
    Policy::VolatileLfu,
    Policy::VolatileRandom,
    Policy::VolatileTtl,
];

/// How many evictions one call may make before giving up: far more than any write needs,
/// few enough that a policy with nothing left to take cannot spin.
const MAX_EVICTIONS_PER_CALL: usize = 100_000;

impl Keyspace {
    /// The eviction settings and counter.
    pub fn eviction(&self) -> &Eviction {
        &self.eviction
    }

    /// Evicts keys by the policy until `wanted` more bytes fit under `maxmemory`, never
    /// `keep` (the key the write is for). Returns whether they fit: false under
    /// `noeviction`, while loading, or when no candidate is left. Takes one shard lock at a
    /// time, so the caller must hold none.
    pub fn make_room(&self, wanted: usize, keep: &[u8]) -> bool {
        let max = self.maxmemory();
        if max == 0 {
            return true;
        }
        let fits = |ks: &Keyspace| ks.memory_in_use().saturating_add(wanted) as u64 <= max;
        let policy = self.eviction.policy();
        if policy == Policy::NoEviction || self.is_loading() {
            return fits(self);
        }
        for _ in 0..MAX_EVICTIONS_PER_CALL {
            if fits(self) {
                return true;
            }
            let Some((index, key)) = self.pick_victim(policy, keep) else {
                return false;
            };
            self.evict(index, &key);
        }
        fits(self)
    }

    /// The best of `maxmemory-samples` candidates, each from another non-empty shard
    /// (starting at a random one), at a random place in it.
    fn pick_victim(&self, policy: Policy, keep: &[u8]) -> Option<(usize, Bytes)> {
        let samples = self.eviction.samples() as usize;
        let now = self.clock_ticks();
        let start = random_u64() as usize;
        let mut best: Option<(u64, usize, Bytes)> = None;
        let mut taken = 0;
        for step in 0..NUM_SHARDS {
            let index = start.wrapping_add(step) & (NUM_SHARDS - 1);
            let map = read(&self.shards[index]);
            let pool = if policy.volatile_only() {
                map.volatile
            } else {
                map.entries.len()
            };
            if pool == 0 {
                continue;
            }
            let at = (random_u64() % pool as u64) as usize;
            let mut candidates = map
                .entries
                .iter()
                .filter(|(_, entry)| !policy.volatile_only() || entry.expires_at_ms.is_some());
            let Some((key, entry)) = candidates.nth(at) else {
                continue;
            };
            // Never the key being written, nor one a long command holds.
            if key[..] == *keep || entry.lease.is_some() {
                continue;
            }
            // Higher is evicted first.
            let score = match policy {
                Policy::AllKeysLru | Policy::VolatileLru => u64::from(entry.access.idle_ticks(now)),
                Policy::AllKeysLfu | Policy::VolatileLfu => {
                    // Least frequent first; among equals, the longest idle.
                    (255 - u64::from(entry.access.frequency(now))) << 32
                        | u64::from(entry.access.idle_ticks(now))
                }
                Policy::VolatileTtl => u64::MAX - entry.expires_at_ms.unwrap_or(u64::MAX),
                Policy::AllKeysRandom | Policy::VolatileRandom | Policy::NoEviction => random_u64(),
            };
            if best.as_ref().is_none_or(|(s, _, _)| score > *s) {
                best = Some((score, index, key.clone()));
            }
            taken += 1;
            if taken == samples {
                break;
            }
        }
        best.map(|(_, index, key)| (index, key))
    }

    /// Removes `key` from shard `index` as an eviction, logging `DEL key`.
    fn evict(&self, index: usize, key: &Bytes) {
        let mut shard = self.write(index);
        // Leased since it was picked: its long command's.
        if shard.get(key).is_some_and(|e| e.lease.is_some()) {
            return;
        }
        let removed = shard.remove(key);
        if removed.is_some() {
            self.eviction.evicted_keys.fetch_add(1, Ordering::Relaxed);
            self.append(index, &[vec![Bytes::from_static(b"DEL"), key.clone()]]);
        }
        drop(shard);
        // The value is freed after the lock (a large one elsewhere).
        let bytes = removed.as_ref().map_or(0, |e| e.memory_bytes);
        super::memory::free(removed, bytes);
    }
}
