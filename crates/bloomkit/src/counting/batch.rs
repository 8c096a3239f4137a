//! The batched operations of [`CountingBloomFilter`]: the keys hashed a batch at a time, then
//! the one-key query or insert for each. Nothing is prefetched (see
//! [`Prefetch::prefetch_distance`] below): on the machines measured it did not pay.

use super::CountingBloomFilter;
use crate::batch::{self, for_each_hash_batch, Prefetch};
use crate::key::Key;

impl CountingBloomFilter {
    /// Answers for many keys at once, appended to `answers` in order: the same answers as
    /// [`contains`](Self::contains), at about its speed.
    ///
    /// A key's k counters lie in up to k cache lines anywhere in the filter. Unlike
    /// [`BlockedBloomFilter::contains_many`](crate::BlockedBloomFilter::contains_many), which
    /// prefetches each key's one line ahead, this prefetches nothing: prefetching the first
    /// counters of keys ahead measured slower than the one-key loop (BENCHMARKS.md, batched
    /// operations). It is here so that code written for every kind's batches works on this one.
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

    /// Adds many keys at once, as [`contains_many`](Self::contains_many) reads them; returns
    /// how many of them [`insert`](Self::insert) would have answered `true` for (had a zero
    /// counter). The counters end as inserting the keys one by one leaves them.
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
        hashes
            .iter()
            .map(|&hash| u64::from(self.insert_hash(hash)))
            .sum()
    }
}

impl Prefetch for CountingBloomFilter {
    /// None: a key's counters lie in k lines, and prefetching them, whether the first one or
    /// two of each key, 4 or 16 keys ahead, made the batch slower than the one-key loop at
    /// every size measured (`batch_ops --only counting`: 0.81–0.85×
    /// at 8 MiB, 0.91–0.95× at 64 MiB, 0.80–0.91× at 512 MiB), where the core already
    /// overlaps the independent loads of consecutive keys. The batch is then the one-key
    /// loop over hashes computed a batch at a time.
    fn prefetch_distance(&self) -> usize {
        0
    }

    /// Never called, at a distance of 0.
    fn prefetch(&self, _hash: u64) {}
}
