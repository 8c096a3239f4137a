//! Building a blocked filter on all cores (the `parallel` feature, on by default).
//!
//! The line array is cut into one contiguous range per thread, each borrowed `&mut` on its
//! own (`par_chunks_mut`): no atomics, no locks, no `unsafe`. Every thread reads all of the
//! batch's hashes, keeps those whose line is in its range, and inserts them in input order
//! with the same rolling prefetch as the sequential `insert_many`. Bits are ORed, so the
//! result is the sequential filter bit for bit; and because each line sees its keys in the
//! same order as a sequential build would, even the count of inserts that changed the filter
//! is the same.
//!
//! Keys are hashed in parallel a block at a time into a bounded buffer, so a build needs no
//! copy of the keys and 8 bytes per key of a block, not of the whole input.
//!
//! Every thread reads every hash of a block, so the parallel build does more work in all than
//! the sequential one, and it is slower where it cannot spread that work over enough cores:
//! on this project's 2-core machine (shared, as most are) it took 1.2 to 3.1 times as long as
//! `insert_many` at every size measured (`BENCHMARKS.md`, "Parallel builds"). So it runs only
//! with at least [`PARALLEL_MIN_THREADS`] threads on as many cores and [`PARALLEL_MIN_KEYS`]
//! keys, and is the sequential build otherwise: never slower than `insert_many` by more than
//! the check.

use rayon::prelude::*;

use crate::bits::Line;
use crate::blocked::{for_each_prefetched, line_index, Step};
use crate::key::Key;
use crate::{BlockedBloomFilter, BlockedProbes};

/// Keys hashed per block: 8 MiB of hashes, enough to keep every thread busy between blocks.
const HASH_BLOCK: usize = 1 << 20;

/// The fewest threads (in the rayon pool the call runs in) with which the parallel build is
/// taken: with two, each thread's pass over every hash and the threads' contention for the
/// memory bus cost what the second thread saves, and more (`BENCHMARKS.md`).
pub(crate) const PARALLEL_MIN_THREADS: usize = 3;

/// The fewest keys for which the parallel build is taken: below, a build takes a few
/// milliseconds at most, and starting the threads' work cost up to 2.4 ms on its own here
/// (10,000 keys, `BENCHMARKS.md`). Chosen, not measured on a machine where the parallel
/// build pays: this one has 2 cores.
pub(crate) const PARALLEL_MIN_KEYS: usize = 1 << 18;

/// Whether a build of `n` keys runs in parallel, in the pool this call runs in: threads
/// beyond the machine's cores only take turns (three threads on two cores were slower still),
/// so both must reach [`PARALLEL_MIN_THREADS`].
fn parallel_pays(n: usize) -> bool {
    n >= PARALLEL_MIN_KEYS && usable_threads() >= PARALLEL_MIN_THREADS
}

/// The pool's threads, or the cores this process may run on if there are fewer.
fn usable_threads() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    rayon::current_num_threads().min(cores)
}

impl BlockedBloomFilter {
    /// Adds many keys using every core (rayon's pool: the global one, or the one the call is
    /// [`install`](rayon::ThreadPool::install)ed in); returns how many changed the filter.
    /// The result is exactly the filter [`insert_many`](Self::insert_many) builds, bit for
    /// bit and count for count.
    ///
    /// It is `insert_many` itself unless the pool has at least 3 threads on at least 3 cores
    /// and there are at least 2^18 keys: with fewer the parallel build costs more than it saves
    /// (measured on 2 cores: 1.2 to 3.1 times `insert_many`'s time, `BENCHMARKS.md`), so this
    /// is never slower than `insert_many` by more than that check. Available with the
    /// `parallel` feature (on by default).
    ///
    /// # Examples
    ///
    /// ```
    /// use bloomkit::BlockedBloomFilter;
    ///
    /// let keys: Vec<u64> = (0..100_000).collect();
    /// let mut parallel = BlockedBloomFilter::new(100_000, 0.01)?;
    /// let mut sequential = parallel.clone();
    /// assert_eq!(parallel.par_insert_many(&keys), sequential.insert_many(&keys));
    /// assert_eq!(parallel, sequential);
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn par_insert_many<K: Key + Sync>(&mut self, keys: &[K]) -> u64 {
        if !parallel_pays(keys.len()) {
            return self.insert_many(keys);
        }
        let hasher = self.key_hasher();
        let mut hashes = Vec::new();
        let mut changed = 0;
        for block in keys.chunks(HASH_BLOCK) {
            hashes.clear();
            hashes.resize(block.len(), 0);
            hashes
                .par_iter_mut()
                .zip(block.par_iter())
                .with_min_len(4096)
                .for_each(|(h, key)| *h = hasher.hash(key));
            changed += self.par_insert_hashes(&hashes);
        }
        changed
    }

    /// [`par_insert_many`](Self::par_insert_many) by precomputed hashes (in parallel under
    /// the same conditions).
    pub fn par_insert_many_hashes(&mut self, hashes: &[u64]) -> u64 {
        if !parallel_pays(hashes.len()) {
            return self.insert_many_hashes(hashes);
        }
        self.par_insert_hashes(hashes)
    }

    /// The parallel build itself, whatever the pool and the input.
    fn par_insert_hashes(&mut self, hashes: &[u64]) -> u64 {
        let (num_hashes, probes) = (self.num_hashes(), self.probes());
        let (lines, item_count) = self.lines_and_count_mut();
        let num_lines = lines.len();
        let threads = rayon::current_num_threads().max(1);
        let per_thread = num_lines.div_ceil(threads).max(1);
        let changed: u64 = lines
            .par_chunks_mut(per_thread)
            .enumerate()
            .map(|(i, range)| {
                let first = i * per_thread;
                insert_range(range, first, num_lines, hashes, probes, num_hashes)
            })
            .sum();
        *item_count += changed;
        changed
    }
}

/// Inserts, in order, the `hashes` whose line is among `range` (lines `first..` of a filter
/// of `num_lines`), probing by `probes`; returns how many set a new bit.
fn insert_range(
    range: &mut [Line],
    first: usize,
    num_lines: usize,
    hashes: &[u64],
    probes: BlockedProbes,
    num_hashes: u32,
) -> u64 {
    let end = first + range.len();
    let mine: Vec<u64> = hashes
        .iter()
        .copied()
        .filter(|&h| (first..end).contains(&line_index(h, num_lines)))
        .collect();
    let mut changed = 0;
    for_each_prefetched(
        &mine,
        num_lines,
        #[inline(always)]
        |step| match step {
            Step::Prefetch(line) => crate::prefetch::prefetch_read(&range[line - first]),
            Step::Visit(line, hash) => {
                changed += crate::blocked::kernel::insert_into_line(
                    &mut range[line - first],
                    probes.key(hash),
                    num_hashes,
                ) as u64
            }
        },
    );
    changed
}

#[cfg(test)]
mod tests {
    use super::*;

    /// More threads than lines, one line, empty input: still the sequential filter.
    #[test]
    fn odd_shapes_match_sequential() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(7)
            .build()
            .unwrap();
        for (bits, n) in [
            (512u64, 0usize),
            (512, 100),
            (512 * 3, 1000),
            (512 * 1000, 50_000),
        ] {
            let keys: Vec<u64> = (0..n as u64).collect();
            let mut seq = BlockedBloomFilter::builder(0, 0.01)
                .num_bits(bits)
                .num_hashes(6)
                .build()
                .unwrap();
            let mut par = seq.clone();
            let want = seq.insert_many(&keys);
            // The parallel path itself: these inputs are too small for par_insert_many to
            // take it.
            let hashes: Vec<u64> = keys.iter().map(|k| par.key_hasher().hash(k)).collect();
            let got = pool.install(|| par.par_insert_hashes(&hashes));
            assert_eq!(got, want, "bits {bits}, n {n}");
            assert_eq!(par, seq);
            assert_eq!(par.len(), seq.len());
        }
    }

    /// With enough threads and keys the parallel path is taken, and still builds the
    /// sequential filter; with two threads, or too few keys, it is `insert_many` itself.
    #[test]
    fn the_parallel_path_is_taken_only_where_it_pays() {
        let three = rayon::ThreadPoolBuilder::new()
            .num_threads(PARALLEL_MIN_THREADS)
            .build()
            .unwrap();
        let two = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        // Three threads take the parallel path where there are three cores to run them.
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert_eq!(
            three.install(|| parallel_pays(PARALLEL_MIN_KEYS)),
            cores >= PARALLEL_MIN_THREADS
        );
        assert!(!three.install(|| parallel_pays(PARALLEL_MIN_KEYS - 1)));
        assert!(!two.install(|| parallel_pays(usize::MAX)));
        let keys: Vec<u64> = (0..PARALLEL_MIN_KEYS as u64 + 1000).collect();
        let mut seq = BlockedBloomFilter::new(keys.len() as u64, 0.01).unwrap();
        let mut par = seq.clone();
        let want = seq.insert_many(&keys);
        assert_eq!(three.install(|| par.par_insert_many(&keys)), want);
        assert_eq!(par, seq);
        let mut by_two = BlockedBloomFilter::new(keys.len() as u64, 0.01).unwrap();
        assert_eq!(two.install(|| by_two.par_insert_many(&keys)), want);
        assert_eq!(by_two, seq);
    }
}
