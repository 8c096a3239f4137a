//! When each key was last used: what `OBJECT IDLETIME` answers and `RESTORE ... IDLETIME`
//! sets, kept as Redis keeps its objects' LRU field.
//!
//! Every command that reads or writes a key's value stamps it with a coarse clock (whole
//! seconds), the way Redis stamps an object with `server.lruclock` on each lookup; `OBJECT`,
//! `TYPE`, `EXISTS`, `TTL` and the other commands that only look at a key leave the stamp
//! alone, as Redis's `LOOKUP_NOTOUCH` lookups do.
//!
//! Why a clock the housekeeping task advances rather than a clock read per command: a read
//! of the system clock costs about as much as a pipelined `BF.EXISTS` spends in the filter,
//! and a stamp needs only seconds. Why a stamp written only when it changes: a hot key read
//! by many cores would otherwise have its cache line written by each of them on every read;
//! this way it is written at most once a second.

use std::sync::atomic::{AtomicU32, Ordering};

use super::now_ms;

/// Seconds, as the stamps count them: Unix time, which a `u32` holds until 2106.
fn unix_seconds() -> u32 {
    u32::try_from(now_ms() / 1000).unwrap_or(u32::MAX)
}

/// The coarse clock stamps are taken from: Unix seconds, advanced by
/// [`AccessClock::tick`] (the server's housekeeping calls it ten times a second).
#[derive(Debug)]
pub struct AccessClock(AtomicU32);

impl Default for AccessClock {
    fn default() -> Self {
        AccessClock(AtomicU32::new(unix_seconds()))
    }
}

impl AccessClock {
    /// Reads the system clock into the coarse one.
    pub fn tick(&self) {
        self.0.store(unix_seconds(), Ordering::Relaxed);
    }

    /// The coarse time now.
    pub fn now(&self) -> u32 {
        self.0.load(Ordering::Relaxed)
    }
}

/// When a key was last used, in the clock's seconds.
#[derive(Debug, Default)]
pub struct AccessStamp(AtomicU32);

impl Clone for AccessStamp {
    fn clone(&self) -> Self {
        AccessStamp(AtomicU32::new(self.0.load(Ordering::Relaxed)))
    }
}

impl AccessStamp {
    /// A stamp of `seconds`.
    pub fn at(seconds: u32) -> AccessStamp {
        AccessStamp(AtomicU32::new(seconds))
    }

    /// Records a use at `now`. Called under the shard's read lock too (hence the atomic);
    /// writes only when the second changed (see the module documentation).
    #[inline]
    pub fn touch(&self, now: u32) {
        if self.0.load(Ordering::Relaxed) != now {
            self.0.store(now, Ordering::Relaxed);
        }
    }

    /// Seconds since the last use, at `now` (0 for a use stamped after `now`, which a tick
    /// between the two reads allows).
    pub fn idle_seconds(&self, now: u32) -> u32 {
        now.saturating_sub(self.0.load(Ordering::Relaxed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_time_counts_from_the_last_touch() {
        let stamp = AccessStamp::at(1_000);
        assert_eq!(stamp.idle_seconds(1_010), 10);
        stamp.touch(1_005);
        assert_eq!(stamp.idle_seconds(1_010), 5);
        assert_eq!(stamp.clone().idle_seconds(1_006), 1);
        // A stamp ahead of the clock reads as just used, never as a huge idle time.
        assert_eq!(stamp.idle_seconds(1_000), 0);
        let clock = AccessClock::default();
        let before = clock.now();
        clock.tick();
        assert!(clock.now() >= before && clock.now() > 1_600_000_000);
    }
}
