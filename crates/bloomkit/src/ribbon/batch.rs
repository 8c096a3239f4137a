//! The batched query of [`RibbonFilter`]: the solution words a key's row reads prefetched
//! a few keys ahead, then the one-key query.

use super::equation::BLOCK_SLOTS;
use super::RibbonFilter;
use crate::batch::{distance_for, for_each_ahead, for_each_hash_batch, Ahead};
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
        answers.reserve(keys.len());
        for_each_hash_batch(keys, self.hasher, |hashes| {
            self.contains_many_hashes(hashes, answers)
        });
    }

    /// [`contains_many`](Self::contains_many) by precomputed hashes.
    pub fn contains_many_hashes(&self, hashes: &[u64], answers: &mut Vec<bool>) {
        answers.reserve(hashes.len());
        let lines = self.row_words().div_ceil(LINE_WORDS) + 1;
        let distance = distance_for(lines, self.solution.len() * 8);
        for_each_ahead(hashes, distance, |step| match step {
            Ahead::Prefetch(hash) => self.prefetch(hash),
            Ahead::Visit(hash) => answers.push(self.contains_hash(hash)),
        });
    }

    /// The solution words a row may read: three blocks of `result_bits` words.
    fn row_words(&self) -> usize {
        3 * self.result_bits as usize
    }

    /// Prefetches every cache line of the solution words the key's row may read.
    #[inline]
    fn prefetch(&self, hash: u64) {
        if self.solution.is_empty() {
            return;
        }
        let r = self.result_bits as usize;
        let first = (self.shape.equation(hash).start / BLOCK_SLOTS) as usize * r;
        let last = (first + self.row_words()).min(self.solution.len()) - 1;
        for w in (first..=last).step_by(LINE_WORDS).chain([last]) {
            if let Some(word) = self.solution.get(w) {
                prefetch_read(word);
            }
        }
    }
}
