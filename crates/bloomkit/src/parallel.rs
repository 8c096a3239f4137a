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

use rayon::prelude::*;

use crate::bits::Line;
use crate::blocked::{for_each_prefetched, line_index, Step};
use crate::key::Key;
use crate::BlockedBloomFilter;

/// Keys hashed per block: 8 MiB of hashes, enough to keep every thread busy between blocks.
const HASH_BLOCK: usize = 1 << 20;

impl BlockedBloomFilter {
    /// Adds many keys using every core (rayon's global pool); returns how many changed the
    /// filter. The result is exactly the filter [`insert_many`](Self::insert_many) builds,
    /// bit for bit and count for count.
    ///
    /// Worth it for large inputs; for a few thousand keys the threads cost more than they
    /// save. Available with the `parallel` feature (on by default).
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
            changed += self.par_insert_many_hashes(&hashes);
        }
        changed
    }

    /// [`par_insert_many`](Self::par_insert_many) by precomputed hashes.
    pub fn par_insert_many_hashes(&mut self, hashes: &[u64]) -> u64 {
        let num_hashes = self.num_hashes();
        let (lines, item_count) = self.lines_and_count_mut();
        let num_lines = lines.len();
        let threads = rayon::current_num_threads().max(1);
        let per_thread = num_lines.div_ceil(threads).max(1);
        let changed: u64 = lines
            .par_chunks_mut(per_thread)
            .enumerate()
            .map(|(i, range)| insert_range(range, i * per_thread, num_lines, hashes, num_hashes))
            .sum();
        *item_count += changed;
        changed
    }
}

/// Inserts, in order, the `hashes` whose line is among `range` (lines `first..` of a filter
/// of `num_lines`); returns how many set a new bit.
fn insert_range(
    range: &mut [Line],
    first: usize,
    num_lines: usize,
    hashes: &[u64],
    num_hashes: u32,
) -> u64 {
    let end = first + range.len();
    let mine: Vec<u64> = hashes
        .iter()
        .copied()
        .filter(|&h| (first..end).contains(&line_index(h, num_lines)))
        .collect();
    let mut changed = 0;
    for_each_prefetched(&mine, num_lines, |step| match step {
        Step::Prefetch(line) => crate::prefetch::prefetch_read(&range[line - first]),
        Step::Visit(line, hash) => {
            changed +=
                crate::blocked::kernel::insert_into_line(&mut range[line - first], hash, num_hashes)
                    as u64
        }
    });
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
            let got = pool.install(|| par.par_insert_many(&keys));
            assert_eq!(got, want, "bits {bits}, n {n}");
            assert_eq!(par, seq);
            assert_eq!(par.len(), seq.len());
        }
    }
}
