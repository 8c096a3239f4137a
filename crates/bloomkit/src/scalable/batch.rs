//! The batched operations of [`ScalableBloomFilter`]: every layer's memory for a key
//! prefetched a few keys ahead, then the one-key query or insert.

use super::ScalableBloomFilter;
use crate::batch::{self, distance_for, Prefetch};
use crate::error::Result;
use crate::key::Key;

impl ScalableBloomFilter {
    /// Answers for many keys at once, appended to `answers` in order: the same answers as
    /// [`contains`](Self::contains), faster on a chain larger than the cache.
    ///
    /// A query may read every layer, so each key's line in every layer (each probe's word in
    /// the classic layout) is prefetched a few keys ahead of its turn, and the cache misses
    /// of several keys overlap (see
    /// [`BlockedBloomFilter::contains_many`](crate::BlockedBloomFilter::contains_many)).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut f = bloomkit::ScalableBloomFilter::new(10, 0.01)?;
    /// let mut added = Vec::new();
    /// f.insert_many(&[1u32, 2, 3], &mut added)?;
    /// let mut answers = Vec::new();
    /// f.contains_many(&[3u32, 400, 1], &mut answers);
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

    /// Adds many keys in order, prefetching as [`contains_many`](Self::contains_many)
    /// does, and appends to `added` what [`insert`](Self::insert) answers for each: whether
    /// it was added. The filter ends as inserting them one by one leaves it, layer for layer.
    ///
    /// # Errors
    ///
    /// The first error [`insert`](Self::insert) meets, which ends the batch: the keys before
    /// the failing one are inserted and answered in `added`, the failing one and those after
    /// it are not (so the failing key is `keys[added.len() - before]`, where `before` is the
    /// length of `added` on entry).
    ///
    /// # Examples
    ///
    /// ```
    /// use bloomkit::{Error, ScalableBloomFilter};
    /// let mut f = ScalableBloomFilter::builder(2, 0.01).non_scaling(true).build()?;
    /// let mut added = Vec::new();
    /// let result = f.insert_many(&["a", "a", "b", "c", "d"], &mut added);
    /// assert!(matches!(result, Err(Error::Full { .. })));
    /// assert_eq!(added, [true, false, true]); // "c" found the filter full
    /// assert!(!f.contains("d"));
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn insert_many<K: Key>(&mut self, keys: &[K], added: &mut Vec<bool>) -> Result<()> {
        batch::insert_keys(self, keys, added, Self::insert_many_hashes)
    }

    /// [`insert_many`](Self::insert_many) by precomputed hashes.
    ///
    /// # Errors
    ///
    /// As [`insert_many`](Self::insert_many).
    pub fn insert_many_hashes(&mut self, hashes: &[u64], added: &mut Vec<bool>) -> Result<()> {
        self.insert_many_hashes_within(hashes, |_| true, added)
    }

    /// [`insert_many_hashes`](Self::insert_many_hashes), asking `may_grow` before each layer
    /// is added, as [`insert_hash_within`](Self::insert_hash_within) does.
    ///
    /// # Errors
    ///
    /// As [`insert_many`](Self::insert_many), and [`Error::OutOfMemory`](crate::Error) when
    /// `may_grow` refuses a layer.
    pub fn insert_many_hashes_within(
        &mut self,
        hashes: &[u64],
        mut may_grow: impl FnMut(usize) -> bool,
        added: &mut Vec<bool>,
    ) -> Result<()> {
        batch::insert_hashes(self, hashes, added, |f, hash| {
            f.insert_hash_within(hash, &mut may_grow)
        })
    }
}

impl Prefetch for ScalableBloomFilter {
    /// About a batch of lines in flight over all layers (none for a chain small enough to be
    /// in cache).
    fn prefetch_distance(&self) -> usize {
        distance_for(
            self.layers.iter().map(|l| l.filter.lines_per_query()).sum(),
            self.memory_bytes(),
        )
    }

    /// The key's memory in every layer, newest (largest) first.
    #[inline]
    fn prefetch(&self, hash: u64) {
        for layer in self.layers.iter().rev() {
            layer.filter.prefetch(hash);
        }
    }
}
