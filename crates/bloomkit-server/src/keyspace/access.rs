//! When each key was last used, and how often: what the LRU and LFU eviction policies rank
//! keys by, what `OBJECT IDLETIME`/`OBJECT FREQ` answer and `RESTORE ... IDLETIME|FREQ`
//! sets, kept as Redis keeps its objects' LRU field.
//!
//! Every entry carries one [`AccessStamp`], a 64-bit atomic updated under the shard's read
//! lock (readers of one key share that lock, so the stamp is an atomic): the low 32 bits
//! are the last access in tenths of a second of the [`AccessClock`] (13 years before it
//! wraps, and differences are taken wrapping); bits 32 to 47 the LFU counter's last decay,
//! in minutes; bits 48 to 55 the LFU counter, Redis's logarithmic one (`lfu-log-factor` 10:
//! about a million accesses to reach 255; starting at 5, and losing one per
//! `lfu-decay-time`, a minute, of idleness).
//!
//! Every command that reads or writes a key's value stamps it, the way Redis stamps an
//! object on each lookup; `OBJECT`, `TYPE`, `EXISTS`, `TTL` and the other commands that only
//! look at a key leave the stamp alone, as Redis's `LOOKUP_NOTOUCH` lookups do.
//!
//! Why a clock the housekeeping task advances rather than a clock read per command: a read
//! of the system clock costs about as much as a pipelined `BF.EXISTS` spends in the filter,
//! and a stamp needs only tenths of a second. Why a stamp written only when it changes: a
//! hot key read by every core would otherwise have its cache line written by each read; the
//! time is written at most once a tick, and the counter only under an LFU policy.

use std::cell::Cell;
use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Instant;

use super::Keyspace;

/// Redis's starting value for a new key's LFU counter, so it is not evicted at once.
const LFU_INIT: u8 = 5;

/// Redis's default `lfu-log-factor`.
const LFU_LOG_FACTOR: f64 = 10.0;

/// Redis's default `lfu-decay-time`: minutes of idleness per point the counter loses.
const LFU_DECAY_MINUTES: u64 = 1;

/// Tenths of a second per minute, the LFU clock's unit.
const TICKS_PER_MINUTE: u32 = 600;

/// Ticks per second.
pub const TICKS_PER_SECOND: u32 = 10;

/// The coarse clock stamps are taken from: tenths of a second since it was created,
/// advanced by [`AccessClock::tick`] (the server's housekeeping calls it ten times a
/// second).
#[derive(Debug)]
pub struct AccessClock {
    created: Instant,
    ticks: AtomicU32,
}

impl Default for AccessClock {
    fn default() -> Self {
        AccessClock {
            created: Instant::now(),
            ticks: AtomicU32::new(0),
        }
    }
}

impl AccessClock {
    /// Reads the system clock into the coarse one.
    pub fn tick(&self) {
        // Wraps after 13 years, which the stamps' wrapping differences allow.
        let ticks = (self.created.elapsed().as_millis() / 100) as u32;
        self.ticks.store(ticks, Ordering::Relaxed);
    }

    /// The coarse time now, in ticks.
    pub fn now(&self) -> u32 {
        self.ticks.load(Ordering::Relaxed)
    }
}

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

    /// A stamp for a key restored at `now` (`RESTORE`): last used `idle_ticks` before, with
    /// the LFU counter `frequency` (the starting value without one).
    pub fn restored(now: u32, idle_ticks: u32, frequency: Option<u8>) -> AccessStamp {
        let time = now.wrapping_sub(idle_ticks);
        let counter = frequency.unwrap_or(LFU_INIT);
        AccessStamp(AtomicU64::new(pack(time, now / TICKS_PER_MINUTE, counter)))
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

    /// Whole seconds since the last access (`OBJECT IDLETIME`).
    pub fn idle_seconds(&self, now: u32) -> u32 {
        self.idle_ticks(now) / TICKS_PER_SECOND
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
impl Keyspace {
    /// The access clock's time now, in tenths of a second (see [`AccessClock`]).
    pub fn clock_ticks(&self) -> u32 {
        self.access_clock.now()
    }

    /// The access clock's time now, in whole seconds: a clock for once-a-second tallies
    /// that costs an atomic load, not a system call.
    pub fn clock_seconds(&self) -> u64 {
        u64::from(self.clock_ticks() / TICKS_PER_SECOND)
    }
}

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

    #[test]
    fn a_restored_stamp_reads_back_its_idle_time_and_counter() {
        let stamp = AccessStamp::restored(50, 1_000 * TICKS_PER_SECOND, Some(200));
        assert_eq!(stamp.idle_seconds(50), 1_000);
        assert_eq!(stamp.idle_seconds(50 + 2 * TICKS_PER_SECOND), 1_002);
        assert_eq!(stamp.frequency(50), 200);
        assert_eq!(AccessStamp::restored(7, 0, None).frequency(7), LFU_INIT);
        let clock = AccessClock::default();
        assert_eq!(clock.now(), 0);
        clock.tick();
        assert!(clock.now() < TICKS_PER_SECOND, "{}", clock.now());
    }
}
