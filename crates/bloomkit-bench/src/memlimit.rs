//! What the memory system allows: random 64-byte reads over a buffer far larger than the
//! caches, on one thread.
//!
//! Three figures bound what an out-of-cache filter query can cost:
//!
//! * **dependent reads**: each read's address comes from the previous read (a random cycle
//!   through the lines), so nothing overlaps: the latency of one miss.
//! * **independent reads**: addresses from a counter, so the core overlaps as many misses as
//!   its out-of-order window allows: roughly one unbatched query per line.
//! * **batched, prefetched reads**: compute [`BATCH`] random line addresses, prefetch them
//!   all, then read them; the way a batched filter query (RocksDB's MultiGet) works. This is
//!   the ceiling batched queries are compared with.

use std::hint::black_box;
use std::time::Duration;

use crate::keys::mix64;
use crate::timing::{ns_per_op, timed};

/// Lines a batched read prefetches before it reads them: RocksDB's MultiGet batch.
pub const BATCH: usize = 32;

/// One 64-byte cache line.
#[derive(Clone, Copy, Default)]
#[repr(C, align(64))]
pub struct Line(pub [u64; 8]);

/// Asks the CPU to bring `line` into the caches, without waiting for it.
///
/// On x86_64 this is `prefetcht0`; elsewhere it reads one word of the line (a portable
/// stand-in that has the same effect on the caches, but waits).
#[cfg(all(target_arch = "x86_64", target_feature = "sse"))]
#[inline(always)]
pub fn prefetch(line: &Line) {
    use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
    // SAFETY: `_mm_prefetch` has no preconditions beyond the SSE target feature, which the
    // `cfg` above guarantees is enabled for this build (it is part of the x86_64 baseline).
    // A prefetch is a hint: it never faults and has no architectural effect, and the pointer
    // comes from a live reference anyway.
    unsafe { _mm_prefetch::<_MM_HINT_T0>((line as *const Line).cast::<i8>()) }
}

/// Asks the CPU to bring `line` into the caches (portable fallback: a read).
#[cfg(not(all(target_arch = "x86_64", target_feature = "sse")))]
#[inline(always)]
pub fn prefetch(line: &Line) {
    black_box(line.0[0]);
}

/// The figures of one run.
#[derive(Clone, Debug)]
pub struct MemoryLimits {
    /// Bytes of the buffer read.
    pub buffer_bytes: u64,
    /// Reads timed for each figure.
    pub reads: u64,
    /// Nanoseconds per dependent random read (latency).
    pub dependent_ns: f64,
    /// Nanoseconds per independent random read, no prefetch.
    pub independent_ns: f64,
    /// Nanoseconds per random read in prefetched batches of [`BATCH`].
    pub batched_ns: f64,
}

impl MemoryLimits {
    /// Reads per second, batched and prefetched: the ceiling.
    pub fn batched_reads_per_second(&self) -> f64 {
        1e9 / self.batched_ns
    }
}

/// A random line index in `0..lines` for read `i`.
#[inline(always)]
fn random_line(i: u64, lines: u64) -> usize {
    ((mix64(i) as u128 * lines as u128) >> 64) as usize
}

/// A buffer of `lines` lines whose first words form one random cycle through all of them
/// (Sattolo's shuffle), for the dependent reads.
fn cycle_buffer(lines: usize) -> Vec<Line> {
    let mut order: Vec<u32> = (0..lines as u32).collect();
    // Sattolo: swapping with a strictly earlier index yields a single cycle.
    for i in (1..lines).rev() {
        let j = (mix64(i as u64 ^ 0xc0ffee) % i as u64) as usize;
        order.swap(i, j);
    }
    let mut buffer = vec![Line::default(); lines];
    for i in 0..lines {
        let next = order[(i + 1) % lines];
        buffer[order[i] as usize].0[0] = u64::from(next);
    }
    buffer
}

/// Dependent reads: follow the cycle for `reads` steps.
fn dependent(buffer: &[Line], reads: u64) -> Duration {
    let (t, last) = timed(|| {
        let mut at = 0usize;
        for _ in 0..reads {
            at = buffer[at].0[0] as usize;
        }
        at
    });
    black_box(last);
    t
}

/// Independent reads at random lines, no prefetch.
fn independent(buffer: &[Line], reads: u64) -> Duration {
    let lines = buffer.len() as u64;
    let (t, sum) = timed(|| {
        let mut sum = 0u64;
        for i in 0..reads {
            sum = sum.wrapping_add(buffer[random_line(i, lines)].0[1]);
        }
        sum
    });
    black_box(sum);
    t
}

/// Batched reads: compute [`BATCH`] random lines, prefetch them all, then read them.
fn batched(buffer: &[Line], reads: u64) -> Duration {
    let lines = buffer.len() as u64;
    let (t, sum) = timed(|| {
        let mut sum = 0u64;
        let mut at = [0usize; BATCH];
        let mut i = 0u64;
        while i < reads {
            for (k, slot) in at.iter_mut().enumerate() {
                *slot = random_line(i + k as u64, lines);
                prefetch(&buffer[*slot]);
            }
            for &line in &at {
                sum = sum.wrapping_add(buffer[line].0[1]);
            }
            i += BATCH as u64;
        }
        sum
    });
    black_box(sum);
    t
}

/// Measures the three figures over a buffer of `buffer_bytes` (rounded down to whole lines)
/// with `reads` reads each.
///
/// # Panics
///
/// If the buffer holds fewer than two lines or more than 2^32.
pub fn measure(buffer_bytes: u64, reads: u64) -> MemoryLimits {
    let lines = (buffer_bytes / 64) as usize;
    assert!((2..=u32::MAX as usize).contains(&lines), "{lines} lines");
    let buffer = cycle_buffer(lines);
    let reads = reads.div_ceil(BATCH as u64) * BATCH as u64;
    // Warm the page tables once so the first figure does not pay for them alone.
    black_box(independent(&buffer, reads / 4));
    MemoryLimits {
        buffer_bytes: lines as u64 * 64,
        reads,
        dependent_ns: ns_per_op(dependent(&buffer, reads), reads),
        independent_ns: ns_per_op(independent(&buffer, reads), reads),
        batched_ns: ns_per_op(batched(&buffer, reads), reads),
    }
}

/// The figures as a markdown table.
pub fn table(limits: &MemoryLimits) -> String {
    let rows = [
        ("dependent random reads (latency)", limits.dependent_ns),
        (
            "independent random reads, no prefetch",
            limits.independent_ns,
        ),
        (
            "random reads, batches of 32 prefetched (the ceiling)",
            limits.batched_ns,
        ),
    ]
    .iter()
    .map(|(name, ns)| {
        vec![
            name.to_string(),
            crate::report::ns(*ns),
            format!("{:.1} M", 1e3 / ns),
        ]
    })
    .collect::<Vec<_>>();
    crate::report::markdown_table(&["64-byte reads, one thread", "ns/read", "reads/s"], &rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefetch_is_callable_and_harmless() {
        let lines = vec![Line([7; 8]); 4];
        for line in &lines {
            prefetch(line);
        }
        assert_eq!(lines[3].0[0], 7);
    }

    #[test]
    fn the_cycle_visits_every_line() {
        let buffer = cycle_buffer(1000);
        let mut seen = vec![false; 1000];
        let mut at = 0;
        for _ in 0..1000 {
            assert!(!seen[at]);
            seen[at] = true;
            at = buffer[at].0[0] as usize;
        }
        assert_eq!(at, 0, "back to the start after every line");
    }

    #[test]
    fn tiny_run_gives_positive_figures() {
        let limits = measure(1 << 20, 4096);
        assert!(limits.dependent_ns > 0.0 && limits.batched_ns > 0.0);
        assert!(table(&limits).contains("ceiling"));
    }
}
