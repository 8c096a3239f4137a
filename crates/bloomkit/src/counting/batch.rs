//! The batched operations of [`CountingBloomFilter`]: the words of a key's first counters
//! prefetched a few keys ahead, then the one-key query or insert.

use super::counters::slot;
use super::CountingBloomFilter;
use crate::batch::{self, distance_for, for_each_ahead, for_each_hash_batch, Ahead, Prefetch};
use crate::classic::probes;
use crate::key::Key;
use crate::prefetch::prefetch_read;

impl CountingBloomFilter {
    /// Answers for many keys at once, appended to `answers` in order: the same answers as
    /// [`contains`](Self::contains), faster on a filter larger than the cache.
    ///
    /// A key's k counters lie in up to k cache lines anywhere in the filter; the words
    /// holding its first ones are prefetched a few keys ahead of the key's turn, so the
    /// misses of several keys overlap (see
    /// [`BlockedBloomFilter::contains_many`](crate::BlockedBloomFilter::contains_many)).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut f = bloomkit::CountingBloomFilter::new(1000, 0.01)?;
    /// assert_eq!(f.insert_many(&["a", "b", "a"]), 2);
    /// let mut answers = Vec::new();
    /// f.contains_many(&["a", "zzz", "b"], &mut answers);
    /// assert_eq!(answers, [true, false, true]);
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn contains_many<K: Key>(&self, keys: &[K], answers: &mut Vec<bool>) {
        batch::contains_many(self, keys, answers)
    }

    /// [`contains_many`](Self::contains_many) by precomputed hashes.
    pub fn contains_many_hashes(&self, hashes: &[u64], answers: &mut Vec<bool>) {
        batch::contains_many_hashes(self, hashes, answers)
    }

    /// Adds many keys at once, prefetching their counters as
    /// [`contains_many`](Self::contains_many) does; returns how many of them
    /// [`insert`](Self::insert) would have answered `true` for (had a zero counter). The
    /// counters end as inserting the keys one by one leaves them.
    pub fn insert_many<K: Key>(&mut self, keys: &[K]) -> u64 {
        let hasher = self.hasher;
        let mut was_absent = 0;
        for_each_hash_batch(keys, hasher, |hashes| {
            was_absent += self.insert_many_hashes(hashes)
        });
        was_absent
    }

    /// [`insert_many`](Self::insert_many) by precomputed hashes.
    pub fn insert_many_hashes(&mut self, hashes: &[u64]) -> u64 {
        let distance = self.prefetch_distance();
        let mut was_absent = 0;
        for_each_ahead(hashes, distance, |step| match step {
            Ahead::Prefetch(hash) => self.prefetch(hash),
            Ahead::Visit(hash) => was_absent += self.insert_hash(hash) as u64,
        });
        was_absent
    }
}

impl Prefetch for CountingBloomFilter {
    /// About a batch of lines in flight, [`PREFETCHED_PROBES`] per key (none for a filter
    /// small enough to be in cache).
    fn prefetch_distance(&self) -> usize {
        let lines = PREFETCHED_PROBES.min(self.num_hashes as usize);
        distance_for(lines, self.counters.len() * 8)
    }

    /// The words of the key's first [`PREFETCHED_PROBES`] counters.
    #[inline]
    fn prefetch(&self, hash: u64) {
        for index in probes(hash, self.num_counters, self.num_hashes).take(PREFETCHED_PROBES) {
            if let Some(word) = self.counters.get(slot(index).0) {
                prefetch_read(word);
            }
        }
    }
}

/// The counters of a key prefetched ahead: the first two, not all k. A query of an absent key
/// stops at its first zero counter, after about two probes at the planned load, so
/// prefetching all k lines would fetch several that no query reads (`batch_ops` measured
/// that slower than the one-key loop at 512 MiB); the later probes of a present key are
/// independent loads, which the core overlaps by itself.
const PREFETCHED_PROBES: usize = 2;
