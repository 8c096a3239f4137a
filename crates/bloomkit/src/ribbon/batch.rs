//! The batched query of [`RibbonFilter`]: the solution words a key's row reads prefetched
//! a few keys ahead, then the one-key query.

use super::equation::BLOCK_SLOTS;
use super::{Query, RibbonFilter};
use crate::batch::{self, distance_for, Prefetch};
use crate::key::Key;
use crate::prefetch::prefetch_read;

/// 64-bit words in a cache line.
const LINE_WORDS: usize = 8;

impl RibbonFilter {
    /// Answers for many keys at once, appended to `answers` in order: the same answers as
    /// [`contains`](Self::contains), faster on a filter larger than the cache.
    ///
    /// A query reads a few adjacent cache lines of the solution (its row spans up to three
    /// blocks of `result_bits` words); they are prefetched a few keys ahead of the key's
    /// turn, so the misses of several keys overlap (see
    /// [`BlockedBloomFilter::contains_many`](crate::BlockedBloomFilter::contains_many)).
    ///
    /// # Examples
    ///
    /// ```
    /// let f = bloomkit::RibbonFilter::build(["a", "b"], 0.01)?;
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

impl RibbonFilter {
    /// The solution words a row may read, at most: three blocks of `result_bits` words.
    fn row_words(&self) -> usize {
        3 * self.result_bits as usize
    }

    /// The first slot of the row of a key with this hash, in the filter's layout (`None`
    /// for a filter of no keys).
    #[inline]
    fn row_start(&self, hash: u64) -> Option<u64> {
        match &self.query {
            Query::Homogeneous(shards, _) => Some(shards.equation(hash).start),
            Query::Standard(shape) => Some(shape.equation(hash).start),
            Query::Empty => None,
        }
    }
}

impl Prefetch for RibbonFilter {
    /// About a batch of lines in flight, a row's lines per key (none for a filter small
    /// enough to be in cache).
    fn prefetch_distance(&self) -> usize {
        let lines = self.row_words().div_ceil(LINE_WORDS) + 1;
        distance_for(lines, self.solution.len() * 8)
    }

    /// Every cache line of the solution words the key's row may read.
    #[inline]
    fn prefetch(&self, hash: u64) {
        let Some(start) = self.row_start(hash) else {
            return;
        };
        if self.solution.is_empty() {
            return;
        }
        let r = self.result_bits as usize;
        let first = (start / BLOCK_SLOTS) as usize * r;
        let last = (first + self.row_words()).min(self.solution.len()) - 1;
        for w in (first..=last).step_by(LINE_WORDS).chain([last]) {
            if let Some(word) = self.solution.get(w) {
                prefetch_read(word);
            }
        }
    }
}
