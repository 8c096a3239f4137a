//! [`AtomicBloomFilter`]: the blocked layout, shared between threads without a lock.
//!
//! This file has the type and its operations; `persist.rs` its file format (a blocked
//! filter's).

mod builder;
mod persist;

pub use self::builder::AtomicBuilder;

use std::fmt;
use std::sync::atomic::Ordering;

use crate::bits::{AtomicLine, AtomicLineArray};
use crate::blocked::probe::{line_mask, probes_set, BlockedProbes};
use crate::blocked::{
    blocked_params, for_each_hash_batch, for_each_line_prefetched, line_index,
    lines_estimated_count, lines_fp_rate,
};
use crate::error::Result;
use crate::format::FilterKind;
use crate::key::{Key, KeyHasher};
use crate::sizing::LINE_BITS;
use crate::{BlockedBloomFilter, Filter};

/// A blocked Bloom filter that many threads insert into at once, through `&self`.
///
/// The layout, sizing and probes are exactly [`BlockedBloomFilter`]'s: the two convert into
/// each other with identical bits ([`from_blocked`](Self::from_blocked),
/// [`to_blocked`](Self::to_blocked)), and share a
/// file format (an atomic filter is stored as a blocked one). Inserts set bits with atomic
/// `fetch_or`, skipping words whose bits are already set (no write, so no cache-line
/// contention, on the common path of a well-filled filter). There is no lock, and queries never
/// wait.
///
/// Unlike the others, it keeps no insert counter: one shared counter would be written by
/// every insert on every core, and serialise them. [`len`](Self::len) is the
/// fill-based estimate instead.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use bloomkit::AtomicBloomFilter;
///
/// let f = Arc::new(AtomicBloomFilter::new(100_000, 0.01)?);
/// let handles: Vec<_> = (0..4u64)
///     .map(|t| {
///         let f = Arc::clone(&f);
///         std::thread::spawn(move || {
///             for i in 0..1000u64 { f.insert(&(t * 1000 + i)); }
///         })
///     })
///     .collect();
/// for h in handles { h.join().unwrap(); }
/// assert!((0..4000u64).all(|i| f.contains(&i)));
/// # Ok::<(), bloomkit::Error>(())
/// ```
pub struct AtomicBloomFilter {
    lines: AtomicLineArray,
    num_hashes: u32,
    probes: BlockedProbes,
    hasher: KeyHasher,
}

impl AtomicBloomFilter {
    /// A filter sized as [`BlockedBloomFilter::new`] sizes one. `items = 0` is treated as 1.
    ///
    /// # Errors
    ///
    /// As [`BlockedBloomFilter::new`].
    pub fn new(items: u64, fp_rate: f64) -> Result<Self> {
        Self::builder(items, fp_rate).build()
    }

    /// Starts from [`new`](Self::new)'s plan for `items` keys at `fp_rate` (a blocked
    /// filter's), to change any of it before [`build`](AtomicBuilder::build): the seed, the
    /// exact number of bits, the number of probes, the probe derivation.
    ///
    /// # Examples
    ///
    /// ```
    /// use bloomkit::{AtomicBloomFilter, BlockedBloomFilter};
    ///
    /// let f = AtomicBloomFilter::builder(1000, 0.01).seed(7).build()?;
    /// let b = BlockedBloomFilter::builder(1000, 0.01).seed(7).build()?;
    /// assert_eq!((f.num_bits(), f.num_hashes(), f.seed()), (b.num_bits(), b.num_hashes(), 7));
    /// let f = AtomicBloomFilter::builder(1000, 0.01).num_bits(512).num_hashes(3).build()?;
    /// assert_eq!((f.num_bits(), f.num_hashes()), (512, 3));
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn builder(items: u64, fp_rate: f64) -> AtomicBuilder {
        AtomicBuilder::new(items, fp_rate)
    }

    /// A filter sized for the keys of `keys` at `fp_rate` ([`new`](Self::new) for as many
    /// keys as it yields, duplicates included) holding all of them. The keys are hashed first,
    /// eight bytes each, and only then is the filter made: for when the keys are at hand and
    /// their number is not.
    ///
    /// # Errors
    ///
    /// As [`new`](Self::new), and [`Error::OutOfMemory`](crate::Error::OutOfMemory) if the hashes do not fit.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = bloomkit::AtomicBloomFilter::from_keys(0..1000u32, 0.01)?;
    /// assert!((0..1000u32).all(|i| f.contains(&i)));
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn from_keys<I>(keys: I, fp_rate: f64) -> Result<Self>
    where
        I: IntoIterator,
        I::Item: Key,
    {
        let hashes = KeyHasher::default().hash_all(keys)?;
        let f = Self::new(hashes.len() as u64, fp_rate)?;
        f.insert_many_hashes(&hashes);
        Ok(f)
    }

    /// A filter of `num_bits` bits (rounded up to whole 512-bit lines) and `num_hashes`
    /// probes derived by `probes`, hashing keys with `hasher`. Errors as
    /// [`crate::BlockedBuilder::build`]'s for the shape.
    pub(crate) fn with_params_and_hasher(
        num_bits: u64,
        num_hashes: u32,
        hasher: KeyHasher,
        probes: BlockedProbes,
    ) -> Result<Self> {
        let num_lines = blocked_params(num_bits, num_hashes)?;
        Ok(AtomicBloomFilter {
            lines: AtomicLineArray::zeroed(num_lines)?,
            num_hashes,
            probes,
            hasher,
        })
    }

    /// Adds `key`; returns `true` if this call set any bit. Safe to call from many threads
    /// at once.
    #[inline]
    pub fn insert<K: Key + ?Sized>(&self, key: &K) -> bool {
        self.insert_hash(self.hasher.hash(key))
    }

    /// Adds a key by its precomputed hash.
    #[inline]
    pub fn insert_hash(&self, hash: u64) -> bool {
        self.insert_into_line(self.lines.line(line_index(hash, self.lines.len())), hash)
    }

    /// Sets the probes of `hash` in `line` (the hash's line); whether any bit was new.
    #[inline]
    fn insert_into_line(&self, line: &AtomicLine, hash: u64) -> bool {
        let mask = line_mask(self.probes.key(hash), self.num_hashes);
        let mut changed = false;
        for (word, m) in line.0.iter().zip(mask) {
            // Read first: most words of a loaded filter already hold their bits, and a plain
            // load leaves the cache line shared where a fetch_or would take it exclusive.
            if m != 0 && word.load(Ordering::Relaxed) & m != m {
                let before = word.fetch_or(m, Ordering::Relaxed);
                changed |= before & m != m;
            }
        }
        changed
    }

    /// `false` if `key` is definitely absent; `true` if it may be present. A key whose insert
    /// has returned, on any thread, is found.
    #[inline]
    pub fn contains<K: Key + ?Sized>(&self, key: &K) -> bool {
        self.contains_hash(self.hasher.hash(key))
    }

    /// [`contains`](Self::contains) by a precomputed hash.
    #[inline]
    pub fn contains_hash(&self, hash: u64) -> bool {
        let line = self.lines.line(line_index(hash, self.lines.len()));
        let key = self.probes.key(hash);
        probes_set(key, self.num_hashes, |w| line.0[w].load(Ordering::Relaxed))
    }

    /// Answers for many keys at once, appended to `answers` in order, with the lines of each
    /// batch of 32 prefetched before they are probed (see
    /// [`BlockedBloomFilter::contains_many`]).
    pub fn contains_many<K: Key>(&self, keys: &[K], answers: &mut Vec<bool>) {
        answers.reserve(keys.len());
        for_each_hash_batch(keys, self.hasher, |hashes| {
            self.contains_many_hashes(hashes, answers)
        });
    }

    /// [`contains_many`](Self::contains_many) by precomputed hashes.
    pub fn contains_many_hashes(&self, hashes: &[u64], answers: &mut Vec<bool>) {
        answers.reserve(hashes.len());
        for_each_line_prefetched(
            &self.lines,
            hashes,
            #[inline(always)]
            |line, hash| {
                answers.push(probes_set(self.probes.key(hash), self.num_hashes, |w| {
                    line.0[w].load(Ordering::Relaxed)
                }))
            },
        );
    }

    /// Adds many keys at once, prefetching their lines in batches; returns how many of them
    /// set a bit. Safe to call from many threads at once.
    pub fn insert_many<K: Key>(&self, keys: &[K]) -> u64 {
        let mut changed = 0;
        for_each_hash_batch(keys, self.hasher, |hashes| {
            changed += self.insert_many_hashes(hashes)
        });
        changed
    }

    /// [`insert_many`](Self::insert_many) by precomputed hashes.
    pub fn insert_many_hashes(&self, hashes: &[u64]) -> u64 {
        let mut changed = 0;
        for_each_line_prefetched(
            &self.lines,
            hashes,
            #[inline(always)]
            |line, hash| changed += self.insert_into_line(line, hash) as u64,
        );
        changed
    }

    /// Forgets every key, keeping the memory: every bit zero, the filter [`new`](Self::new)
    /// made. It takes `&mut self`, so no insert runs while it clears.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut f = bloomkit::AtomicBloomFilter::new(100, 0.01)?;
    /// f.insert("a");
    /// f.clear();
    /// assert!(!f.contains("a") && f.is_empty());
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn clear(&mut self) {
        self.lines.clear();
    }

    /// Bits in the filter (a multiple of 512).
    pub fn num_bits(&self) -> u64 {
        self.lines.len() as u64 * LINE_BITS
    }

    /// Probes per key.
    pub fn num_hashes(&self) -> u32 {
        self.num_hashes
    }

    /// How the probes are derived from a key's hash, as a blocked filter's
    /// ([`BlockedBloomFilter::probes`]).
    pub fn probes(&self) -> BlockedProbes {
        self.probes
    }

    /// The fill-based [`estimated_count`](Self::estimated_count) (see the type's docs for why
    /// there is no exact counter).
    pub fn len(&self) -> u64 {
        self.estimated_count()
    }

    /// Bits set to one (a snapshot while inserts run).
    pub fn count_ones(&self) -> u64 {
        self.lines.count_ones()
    }

    /// The fraction of bits set, from 0 to 1.
    pub fn fill_ratio(&self) -> f64 {
        self.count_ones() as f64 / self.num_bits() as f64
    }

    /// The number of distinct keys inserted, estimated from the fill of each line.
    pub fn estimated_count(&self) -> u64 {
        lines_estimated_count(
            (0..self.lines.len()).map(|i| self.lines.line(i).load()),
            self.num_hashes,
        )
    }

    /// The false-positive rate a query for an absent key risks now.
    pub fn estimated_fp_rate(&self) -> f64 {
        lines_fp_rate(
            (0..self.lines.len()).map(|i| self.lines.line(i).load()),
            self.num_hashes,
        )
    }

    /// Bytes of memory the filter holds.
    pub fn memory_bytes(&self) -> usize {
        std::mem::size_of::<Self>() + self.lines.memory_bytes()
    }

    /// Adds every key of `other` (bitwise OR, word by word atomically), while other threads
    /// may go on inserting into either.
    ///
    /// # Errors
    ///
    /// [`Error::Incompatible`](crate::Error::Incompatible) unless both have the same bits, probes and seed.
    pub fn union(&self, other: &Self) -> Result<()> {
        self.check_compatible(other)?;
        self.lines.combine_with(&other.lines, true);
        Ok(())
    }

    /// Keeps only the bits both filters set (bitwise AND, word by word atomically).
    ///
    /// # Errors
    ///
    /// [`Error::Incompatible`](crate::Error::Incompatible) as for [`union`](Self::union).
    pub fn intersect(&self, other: &Self) -> Result<()> {
        self.check_compatible(other)?;
        self.lines.combine_with(&other.lines, false);
        Ok(())
    }

    /// A [`BlockedBloomFilter`] with the same bits (a snapshot, if inserts are running).
    ///
    /// # Errors
    ///
    /// [`Error::OutOfMemory`](crate::Error::OutOfMemory) if the copy cannot be allocated.
    pub fn to_blocked(&self) -> Result<BlockedBloomFilter> {
        Ok(BlockedBloomFilter::from_parts(
            self.lines.to_line_array()?,
            self.num_hashes,
            self.probes,
            self.hasher,
            self.estimated_count(),
        ))
    }

    /// An atomic filter with the same bits as `filter`.
    ///
    /// # Errors
    ///
    /// [`Error::OutOfMemory`](crate::Error::OutOfMemory) if the copy cannot be allocated.
    pub fn from_blocked(filter: &BlockedBloomFilter) -> Result<Self> {
        Ok(AtomicBloomFilter {
            lines: AtomicLineArray::from_line_array(filter.lines())?,
            num_hashes: filter.num_hashes(),
            probes: filter.probes(),
            hasher: filter.key_hasher(),
        })
    }
}

crate::bits::bit_array_methods!(
    AtomicBloomFilter,
    same: [
        "number of bits" => num_bits,
        "number of hashes" => num_hashes,
        "probe derivation" => probes.code,
    ],
);

/// Inserts every key, as [`insert`](AtomicBloomFilter::insert) one by one (for many
/// threads at once, share the filter and call `insert` or `insert_many` from each).
///
/// ```
/// let mut f = bloomkit::AtomicBloomFilter::new(100, 0.01)?;
/// f.extend(["a", "b"]);
/// assert!(f.contains("a") && f.contains("b"));
/// # Ok::<(), bloomkit::Error>(())
/// ```
impl<K: Key> Extend<K> for AtomicBloomFilter {
    fn extend<I: IntoIterator<Item = K>>(&mut self, keys: I) {
        for key in keys {
            self.insert(&key);
        }
    }
}

impl Clone for AtomicBloomFilter {
    /// A snapshot of the bits (taken word by word while inserts may run).
    fn clone(&self) -> Self {
        AtomicBloomFilter {
            lines: self.lines.snapshot(),
            num_hashes: self.num_hashes,
            probes: self.probes,
            hasher: self.hasher,
        }
    }
}

impl PartialEq for AtomicBloomFilter {
    /// Equal when they have the same parameters and, at the moment of comparison, the same
    /// bits.
    fn eq(&self, other: &Self) -> bool {
        self.num_hashes == other.num_hashes
            && self.probes == other.probes
            && self.hasher == other.hasher
            && self.lines.len() == other.lines.len()
            && self.lines.words().eq(other.lines.words())
    }
}

impl fmt::Debug for AtomicBloomFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AtomicBloomFilter")
            .field("num_bits", &self.num_bits())
            .field("num_hashes", &self.num_hashes)
            .field("probes", &self.probes)
            .field("hasher", &self.hasher)
            .finish_non_exhaustive()
    }
}

impl Filter for AtomicBloomFilter {
    fn contains_hash(&self, hash: u64) -> bool {
        AtomicBloomFilter::contains_hash(self, hash)
    }
    fn key_hasher(&self) -> KeyHasher {
        self.hasher
    }
    fn kind(&self) -> FilterKind {
        FilterKind::Blocked
    }
    fn memory_bytes(&self) -> usize {
        AtomicBloomFilter::memory_bytes(self)
    }
    fn len(&self) -> u64 {
        AtomicBloomFilter::len(self)
    }
    fn estimated_fp_rate(&self) -> f64 {
        AtomicBloomFilter::estimated_fp_rate(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_bits_as_blocked() {
        let mut blocked = BlockedBloomFilter::new(10_000, 0.01).unwrap();
        let atomic = AtomicBloomFilter::new(10_000, 0.01).unwrap();
        for i in 0..5_000u32 {
            assert_eq!(blocked.insert(&i), atomic.insert(&i));
        }
        assert_eq!(atomic.to_blocked().unwrap(), blocked);
        assert_eq!(AtomicBloomFilter::from_blocked(&blocked).unwrap(), atomic);
        // And the same bytes on disk, but for the item count field (an estimate here).
        let a = atomic.to_bytes();
        let b = blocked.to_bytes();
        assert_eq!(a.len(), b.len());
        assert_eq!(a[..24], b[..24]);
        assert_eq!(a[32..a.len() - 8], b[32..b.len() - 8]);
    }

    #[test]
    fn send_and_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<AtomicBloomFilter>();
        assert_send_sync::<BlockedBloomFilter>();
        assert_send_sync::<crate::BloomFilter>();
    }

    #[test]
    fn union_and_intersect_through_shared_refs() {
        let a = AtomicBloomFilter::new(1000, 0.01).unwrap();
        let b = AtomicBloomFilter::new(1000, 0.01).unwrap();
        a.insert("a");
        b.insert("b");
        b.insert("both");
        a.insert("both");
        let c = a.clone();
        a.union(&b).unwrap();
        assert!(a.contains("a") && a.contains("b"));
        c.intersect(&b).unwrap();
        assert!(c.contains("both"));
        let other = AtomicBloomFilter::new(50_000, 0.01).unwrap();
        assert!(a.union(&other).is_err());
    }
}
