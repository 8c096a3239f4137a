//! The batched operations of [`CuckooFilter`]: both of a key's buckets, in every
//! sub-filter, prefetched a few keys ahead, then the one-key query or insert.

use super::table::KeyParts;
use super::CuckooFilter;
use crate::batch::{self, distance_for, Prefetch};
use crate::error::Result;
use crate::key::Key;

impl CuckooFilter {
    /// Answers for many keys at once, appended to `answers` in order: the same answers as
    /// [`contains`](Self::contains), faster on a filter larger than the cache.
    ///
    /// A key's fingerprint may sit in either of its two buckets, in any sub-filter: all of
    /// them are prefetched a few keys ahead of the key's turn, so the misses of several keys
    /// overlap (see
    /// [`BlockedBloomFilter::contains_many`](crate::BlockedBloomFilter::contains_many)).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut f = bloomkit::CuckooFilter::new(1000, 0.01)?;
    /// let mut stored = Vec::new();
    /// f.insert_many(&["a", "b"], &mut stored)?;
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

    /// Adds many keys in order, as [`insert`](Self::insert) adds each (a key may be held
    /// several times), prefetching as [`contains_many`](Self::contains_many) does; appends a
    /// `true` to `stored` for each key stored, so that after an error its length says where
    /// the batch stopped. The filter ends as inserting the keys one by one leaves it.
    ///
    /// # Errors
    ///
    /// The first error [`insert`](Self::insert) meets, which ends the batch: the keys before
    /// the failing one are stored, the failing one and those after it are not (the failing
    /// key is `keys[stored.len() - before]`, where `before` is the length of `stored` on
    /// entry).
    ///
    /// # Examples
    ///
    /// ```
    /// use bloomkit::{CuckooFilter, Error};
    /// let mut f = CuckooFilter::builder(100, 0.01).build()?; // fixed size
    /// let keys: Vec<u32> = (0..1000).collect();
    /// let mut stored = Vec::new();
    /// let result = f.insert_many(&keys, &mut stored);
    /// assert!(matches!(result, Err(Error::Full { .. })));
    /// assert!(stored.len() >= 100 && stored.iter().all(|&s| s));
    /// assert!(keys[..stored.len()].iter().all(|k| f.contains(k)));
    /// assert_eq!(f.len(), stored.len() as u64);
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn insert_many<K: Key>(&mut self, keys: &[K], stored: &mut Vec<bool>) -> Result<()> {
        batch::insert_keys(self, keys, stored, Self::insert_many_hashes)
    }

    /// [`insert_many`](Self::insert_many) by precomputed hashes.
    ///
    /// # Errors
    ///
    /// As [`insert_many`](Self::insert_many).
    pub fn insert_many_hashes(&mut self, hashes: &[u64], stored: &mut Vec<bool>) -> Result<()> {
        self.insert_many_hashes_within(hashes, |_| true, stored)
    }

    /// [`insert_many_hashes`](Self::insert_many_hashes), asking `may_grow` before each
    /// sub-filter is added, as [`insert_hash_within`](Self::insert_hash_within) does.
    ///
    /// # Errors
    ///
    /// As [`insert_many`](Self::insert_many), and [`Error::OutOfMemory`](crate::Error)
    /// when `may_grow` refuses a sub-filter.
    pub fn insert_many_hashes_within(
        &mut self,
        hashes: &[u64],
        mut may_grow: impl FnMut(usize) -> bool,
        stored: &mut Vec<bool>,
    ) -> Result<()> {
        batch::insert_hashes(self, hashes, stored, |f, hash| {
            f.insert_hash_within(hash, &mut may_grow).map(|()| true)
        })
    }

    /// Adds many keys in order, each unless it may already be there, as
    /// [`insert_unique`](Self::insert_unique) does (`CF.INSERTNX`), prefetching as
    /// [`contains_many`](Self::contains_many) does; appends to `added` what it answers for
    /// each. The filter ends as inserting the keys one by one leaves it.
    ///
    /// # Errors
    ///
    /// As [`insert_many`](Self::insert_many): the batch ends at the first error, with an
    /// answer in `added` for each key before the failing one.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut f = bloomkit::CuckooFilter::new(1000, 0.01)?;
    /// let mut added = Vec::new();
    /// f.insert_unique_many(&["a", "b", "a"], &mut added)?;
    /// assert_eq!(added, [true, true, false]);
    /// assert_eq!(f.count("a"), 1);
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn insert_unique_many<K: Key>(&mut self, keys: &[K], added: &mut Vec<bool>) -> Result<()> {
        batch::insert_keys(self, keys, added, Self::insert_unique_many_hashes)
    }

    /// [`insert_unique_many`](Self::insert_unique_many) by precomputed hashes.
    ///
    /// # Errors
    ///
    /// As [`insert_many`](Self::insert_many).
    pub fn insert_unique_many_hashes(
        &mut self,
        hashes: &[u64],
        added: &mut Vec<bool>,
    ) -> Result<()> {
        self.insert_unique_many_hashes_within(hashes, |_| true, added)
    }

    /// [`insert_unique_many_hashes`](Self::insert_unique_many_hashes), asking `may_grow`
    /// before each sub-filter is added, as [`insert_hash_within`](Self::insert_hash_within)
    /// does.
    ///
    /// # Errors
    ///
    /// As [`insert_many_hashes_within`](Self::insert_many_hashes_within).
    pub fn insert_unique_many_hashes_within(
        &mut self,
        hashes: &[u64],
        mut may_grow: impl FnMut(usize) -> bool,
        added: &mut Vec<bool>,
    ) -> Result<()> {
        batch::insert_hashes(self, hashes, added, |f, hash| {
            f.insert_unique_hash_within(hash, &mut may_grow)
        })
    }
}

/// The most sub-filters a key's prefetch covers, newest first. A filter can have thousands
/// (copies of one key fill a sub-filter every two copies, and the server allows 65,535): a
/// prefetch of every one would make each key of a batch cost time in proportion to them,
/// where an insert skips the full ones and takes constant time. The newest sub-filters are
/// the largest (each is `expansion` times the one before), so they hold most of the lines
/// that miss.
const PREFETCH_SUB_FILTERS: usize = crate::batch::BATCH / 2;

impl Prefetch for CuckooFilter {
    /// About a batch of lines in flight, two per prefetched sub-filter (none for a filter
    /// small enough to be in cache).
    fn prefetch_distance(&self) -> usize {
        let lines = 2 * self.filters.len().min(PREFETCH_SUB_FILTERS);
        distance_for(lines, self.memory_bytes())
    }

    /// Both of the key's buckets in the newest [`PREFETCH_SUB_FILTERS`] sub-filters, newest
    /// (largest) first.
    #[inline]
    fn prefetch(&self, hash: u64) {
        let key = KeyParts::new(hash, &self.layout);
        for sub in self.filters.iter().rev().take(PREFETCH_SUB_FILTERS) {
            sub.prefetch(&self.layout, &key);
        }
    }
}
