//! The batched query of [`BinaryFuseFilter`]: a key's three fingerprints prefetched a few
//! keys ahead, then the one-key query.

use super::{BinaryFuseFilter, Fingerprints};
use crate::batch::{self, distance_for, Prefetch};
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
        batch::contains_many(self, keys, answers)
    }

    /// [`contains_many`](Self::contains_many) by precomputed hashes.
    pub fn contains_many_hashes(&self, hashes: &[u64], answers: &mut Vec<bool>) {
        batch::contains_many_hashes(self, hashes, answers)
    }
}

impl Prefetch for BinaryFuseFilter {
    /// About a batch of lines in flight, three per key (none for a filter small enough to be
    /// in cache).
    fn prefetch_distance(&self) -> usize {
        distance_for(3, self.memory_bytes())
    }

    /// The key's three fingerprints.
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
