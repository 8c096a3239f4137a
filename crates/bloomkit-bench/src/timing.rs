//! Timing: wall-clock time around loops of many operations, and the median of repetitions.
//!
//! `std::time::Instant` reads a clock that costs tens of nanoseconds, so it is read around a
//! batch of thousands of operations, never around one. The median of several repetitions
//! keeps one unlucky repetition (a page fault, another process on the core) from moving the
//! figure.

use std::time::{Duration, Instant};

/// Runs `f` and returns how long it took, with its result.
#[inline]
pub fn timed<R>(f: impl FnOnce() -> R) -> (Duration, R) {
    let start = Instant::now();
    let result = f();
    (start.elapsed(), result)
}

/// Nanoseconds per operation.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// assert_eq!(bloomkit_bench::timing::ns_per_op(Duration::from_micros(5), 1000), 5.0);
/// ```
pub fn ns_per_op(elapsed: Duration, ops: u64) -> f64 {
    if ops == 0 {
        return 0.0;
    }
    elapsed.as_nanos() as f64 / ops as f64
}

/// The machine's load averages over 1, 5 and 15 minutes (`/proc/loadavg`), for the header
/// of a report: figures from a loaded machine are ratios of one run, not absolute speeds.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

/// The median of `values` (the mean of the middle two for an even count); 0 for none.
///
/// # Examples
///
/// ```
/// assert_eq!(bloomkit_bench::timing::median(vec![3.0, 1.0, 2.0]), 2.0);
/// assert_eq!(bloomkit_bench::timing::median(vec![4.0, 1.0, 2.0, 3.0]), 2.5);
/// ```
pub fn median(mut values: Vec<f64>) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    }
}
