//! The batched query of [`BinaryFuseFilter`]: a key's three fingerprints prefetched a few
//! keys ahead, then the one-key query.

use super::{BinaryFuseFilter, Fingerprints};
use crate::batch::{distance_for, for_each_ahead, for_each_hash_batch, Ahead};
use crate::key::Key;
use crate::prefetch::prefetch_read;

impl BinaryFuseFilter {
    /// Answers for many keys at once, appended to `answers` in order: the same answers as
    /// [`contains`](Self::contains), faster on a filter larger than the cache.
    ///
    /// A query reads three fingerprints, one in each of three consecutive segments: three
    /// cache misses in a large filter. They are prefetched a few keys ahead of the key's
    /// turn, so the misses of several keys overlap (see
    /// [`BlockedBloomFilter::contains_many`](crate::BlockedBloomFilter::contains_many)).
    ///
    /// # Examples
    ///
    /// ```
    /// let f = bloomkit::BinaryFuseFilter::build(["a", "b"], 0.01)?;
    /// let mut answers = Vec::new();
    /// f.contains_many(&["a", "zzz", "b"], &mut answers);
    /// assert_eq!(answers, [true, false, true]);
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn contains_many<K: Key>(&self, keys: &[K], answers: &mut Vec<bool>) {
        answers.reserve(keys.len());
        for_each_hash_batch(keys, self.hasher, |hashes| {
            self.contains_many_hashes(hashes, answers)
        });
    }

    /// [`contains_many`](Self::contains_many) by precomputed hashes.
    pub fn contains_many_hashes(&self, hashes: &[u64], answers: &mut Vec<bool>) {
        answers.reserve(hashes.len());
        let distance = distance_for(3, self.memory_bytes());
        for_each_ahead(hashes, distance, |step| match step {
            Ahead::Prefetch(hash) => self.prefetch(hash),
            Ahead::Visit(hash) => answers.push(self.contains_hash(hash)),
        });
    }

    /// Prefetches the key's three fingerprints.
    #[inline]
    fn prefetch(&self, hash: u64) {
        let slots = self.shape.slots(self.shape.remix(hash));
        match &self.fingerprints {
            Fingerprints::Eight(f) => slots
                .iter()
                .filter_map(|&s| f.get(s))
                .for_each(prefetch_read),
            Fingerprints::Sixteen(f) => slots
                .iter()
                .filter_map(|&s| f.get(s))
                .for_each(prefetch_read),
        }
    }
}
