//! Waiting for an event instead of sleeping for a time: a test polls for what it needs
//! under a deadline far above any real wait, so a loaded 2-core machine makes it slower,
//! never wrong.

use std::time::{Duration, Instant};

/// A deadline no event a test waits for should come near on any machine, however loaded:
/// it bounds a hang, not a speed.
pub const GENEROUS: Duration = Duration::from_secs(60);

/// Polls `check` every 10 ms until it holds or `timeout` passes; whether it held.
///
/// ```
/// use std::time::Duration;
/// let mut calls = 0;
/// assert!(bloomkit_testkit::wait::until(Duration::from_secs(5), || {
///     calls += 1;
///     calls == 3
/// }));
/// assert!(!bloomkit_testkit::wait::until(Duration::from_millis(30), || false));
/// ```
pub fn until(timeout: Duration, mut check: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if check() {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}
