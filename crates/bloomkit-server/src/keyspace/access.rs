//! When each key was last used, and how often: what the LRU and LFU eviction policies rank
//! keys by, kept as Redis keeps them.
//!
//! Every entry carries one [`AccessStamp`], a 64-bit atomic updated under the shard's read
//! lock (readers of one key share that lock, so the stamp is an atomic): the low 32 bits
//! are the last access in tenths of a second since the keyspace was created (13 years
//! before it wraps); bits 32 to 47 the LFU counter's last decay, in minutes; bits 48 to 55
//! the LFU counter, Redis's logarithmic one (`lfu-log-factor` 10: about a million accesses
//! to reach 255; starting at 5, and losing one per `lfu-decay-time`, a minute, of idleness).
//!
//! The time is updated only when it has changed, and the counter only under an LFU policy,
//! so a key read by every core does not have its cache line written by each read.

use std::cell::Cell;
use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};

/// Redis's starting value for a new key's LFU counter, so it is not evicted at once.
const LFU_INIT: u8 = 5;

/// Redis's default `lfu-log-factor`.
const LFU_LOG_FACTOR: f64 = 10.0;

/// Redis's default `lfu-decay-time`: minutes of idleness per point the counter loses.
const LFU_DECAY_MINUTES: u64 = 1;

/// Tenths of a second per minute, the LFU clock's unit.
const TICKS_PER_MINUTE: u32 = 600;

/// A key's last access time (tenths of a second since the keyspace was created) and its
/// access frequency (Redis's logarithmic LFU counter and the minute it last decayed), in
/// one atomic.
#[derive(Debug)]
pub struct AccessStamp(AtomicU64);

impl AccessStamp {
    /// A stamp for a key created at `now` (in clock ticks).
    pub fn new(now: u32) -> AccessStamp {
        AccessStamp(AtomicU64::new(pack(now, now / TICKS_PER_MINUTE, LFU_INIT)))
    }

    /// Records an access at `now`; `lfu`: also count it (an LFU policy is in force).
    pub fn touch(&self, now: u32, lfu: bool) {
        let old = self.0.load(Ordering::Relaxed);
        let (time, minutes, counter) = unpack(old);
        if !lfu {
            if time != now {
                self.0.store(pack(now, minutes, counter), Ordering::Relaxed);
            }
            return;
        }
        let now_minutes = now / TICKS_PER_MINUTE;
        let counter = log_increment(decayed(counter, minutes, now_minutes));
        let new = pack(now, now_minutes, counter);
        if new != old {
            // A lost update between two readers only loses one access's count, as in Redis.
            self.0.store(new, Ordering::Relaxed);
        }
    }

    /// Ticks since the last access (`OBJECT IDLETIME` is this over 10, in seconds).
    pub fn idle_ticks(&self, now: u32) -> u32 {
        let (time, _, _) = unpack(self.0.load(Ordering::Relaxed));
        now.wrapping_sub(time)
    }

    /// The LFU counter as of `now` (decayed for idleness), 0 to 255 (`OBJECT FREQ`).
    pub fn frequency(&self, now: u32) -> u8 {
        let (_, minutes, counter) = unpack(self.0.load(Ordering::Relaxed));
        decayed(counter, minutes, now / TICKS_PER_MINUTE)
    }
}

impl Clone for AccessStamp {
    fn clone(&self) -> AccessStamp {
        AccessStamp(AtomicU64::new(self.0.load(Ordering::Relaxed)))
    }
}

fn pack(time: u32, minutes: u32, counter: u8) -> u64 {
    u64::from(time) | u64::from(minutes & 0xffff) << 32 | u64::from(counter) << 48
}

fn unpack(stamp: u64) -> (u32, u32, u8) {
    (
        stamp as u32,
        (stamp >> 32) as u32 & 0xffff,
        (stamp >> 48) as u8,
    )
}

/// The counter less a point per decay period since `minutes` (16-bit minutes wrap, as in
/// Redis).
fn decayed(counter: u8, minutes: u32, now_minutes: u32) -> u8 {
    let elapsed = u64::from((now_minutes & 0xffff).wrapping_sub(minutes) & 0xffff);
    let periods = elapsed / LFU_DECAY_MINUTES;
    counter.saturating_sub(u8::try_from(periods).unwrap_or(u8::MAX))
}

/// Redis's logarithmic increment: by one with probability 1 / ((counter − 5) × 10 + 1).
fn log_increment(counter: u8) -> u8 {
    if counter == u8::MAX {
        return counter;
    }
    let base = f64::from(counter.saturating_sub(LFU_INIT));
    let p = 1.0 / (base * LFU_LOG_FACTOR + 1.0);
    if random_unit() < p {
        counter + 1
    } else {
        counter
    }
}

thread_local! {
    static RANDOM: Cell<u64> = Cell::new(RandomState::new().hash_one(0x5eed_u64) | 1);
}

/// Restarts this thread's generator from `seed`, for tests that need a fixed sequence.
#[cfg(test)]
pub(crate) fn seed_random(seed: u64) {
    RANDOM.with(|state| state.set(seed));
}

/// A pseudo-random `u64`: splitmix64 on a per-thread state seeded from the standard
/// library's random hasher keys. For sampling and LFU counting, not for secrets.
pub fn random_u64() -> u64 {
    RANDOM.with(|state| {
        let next = state.get().wrapping_add(0x9e37_79b9_7f4a_7c15);
        state.set(next);
        let mut z = next;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    })
}

/// A pseudo-random number in [0, 1).
fn random_unit() -> f64 {
    (random_u64() >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_time_counts_from_the_last_touch() {
        let stamp = AccessStamp::new(100);
        assert_eq!(stamp.idle_ticks(130), 30);
        stamp.touch(125, false);
        assert_eq!(stamp.idle_ticks(130), 5);
        assert_eq!(
            stamp.frequency(130),
            LFU_INIT,
            "LRU touches leave the counter"
        );
    }

    #[test]
    fn the_lfu_counter_grows_logarithmically_and_decays_with_idleness() {
        seed_random(7);
        let stamp = AccessStamp::new(0);
        for _ in 0..100 {
            stamp.touch(1, true);
        }
        let after_100 = stamp.frequency(1);
        for _ in 0..10_000 {
            stamp.touch(1, true);
        }
        let after_10_100 = stamp.frequency(1);
        // Redis's table for lfu-log-factor 10: 10 after 100 hits, 18 after 1,000, 142 after
        // 100,000; about 50 after 10,000 (each step from c takes (c - 5) * 10 + 1 hits on
        // average). The seed is fixed; the bounds are far wider than its spread.
        assert!((7..=14).contains(&after_100), "{after_100}");
        assert!((35..=65).contains(&after_10_100), "{after_10_100}");
        // Three minutes idle: three points fewer.
        assert_eq!(stamp.frequency(1 + 3 * TICKS_PER_MINUTE), after_10_100 - 3);
    }
}
