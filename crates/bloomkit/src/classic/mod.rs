//! [`BloomFilter`]: the classic layout, k probes anywhere in one bit array.
//!
//! This file has the type and its operations; `builder.rs` its configuration, `persist.rs` its
//! file format, `view.rs` the view of a file's bytes ([`BloomFilterRef`]).

mod builder;
mod persist;
mod view;

pub use self::builder::BloomBuilder;
pub use self::view::BloomFilterRef;

use std::fmt;

use crate::bits::BitArray;
use crate::error::{Error, Result};
use crate::format::FilterKind;
use crate::key::{Key, KeyHasher};
use crate::sizing;
use crate::Filter;

/// A classic Bloom filter: one bit array, k probes per key anywhere in it.
///
/// The most accurate Bloom layout for its size (9.59 bits per key at 1%), at the cost of up to
/// k cache misses per query on a large filter; [`crate::BlockedBloomFilter`] trades a little
/// memory for one miss.
///
/// The k probes come from the key's one 64-bit hash by enhanced double hashing, and each is
/// mapped to a bit with a multiply-high range reduction over all 64 bits, so filters far past
/// 2^32 bits reach every bit.
///
/// # Examples
///
/// ```
/// use bloomkit::BloomFilter;
///
/// let mut f = BloomFilter::new(1_000_000, 0.01)?;
/// assert_eq!(f.num_hashes(), 7);
/// assert_eq!(f.num_bits(), 9_585_088); // 9,585,059 rounded up to whole 64-bit words
/// assert!(f.insert("apple"));
/// assert!(f.contains("apple"));
/// assert!(!f.contains("pear"));
///
/// // Hash once, probe many filters.
/// let h = bloomkit::hash("apple");
/// assert!(f.contains_hash(h));
///
/// // Store and load.
/// let g = BloomFilter::from_bytes(&f.to_bytes())?;
/// assert_eq!(f, g);
/// # Ok::<(), bloomkit::Error>(())
/// ```
#[derive(Clone)]
pub struct BloomFilter {
    bits: BitArray,
    num_bits: u64,
    num_hashes: u32,
    hasher: KeyHasher,
    item_count: u64,
}

/// The k probe positions of a key: enhanced double hashing (Dillinger & Manolios) over the
/// 64-bit space, each value mapped to `[0, num_bits)` by multiply-high.
#[inline]
pub(crate) fn probes(hash: u64, num_bits: u64, num_hashes: u32) -> impl Iterator<Item = u64> {
    // The second hash must look independent of the first: remix the rotated hash (a
    // bijection, so no information is lost, but its top bits depend on all of `hash`).
    let mut h2 = hash.rotate_left(32) ^ 0x9e37_79b9_7f4a_7c15;
    h2 = (h2 ^ (h2 >> 29)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h2 ^= h2 >> 32;
    let mut h1 = hash;
    (0..num_hashes as u64).map(move |i| {
        let bit = ((h1 as u128 * num_bits as u128) >> 64) as u64;
        h1 = h1.wrapping_add(h2);
        // The "enhanced" term: without it, a key whose h2 is a small multiple of 2^64/m
        // would probe the same few bits over and over.
        h2 = h2.wrapping_add(i);
        bit
    })
}

impl BloomFilter {
    /// A filter sized to hold `items` keys at a false-positive rate of `fp_rate`: the textbook
    /// ⌈−n·ln p / (ln 2)²⌉ bits (rounded up to whole 64-bit words) and (m/n)·ln 2 probes
    /// ([`sizing::classic_plan`]). `items = 0` is treated as 1.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidFpRate`] unless `0 < fp_rate < 1`; [`Error::FpRateTooSmall`] if the
    /// rate needs more than [`sizing::MAX_NUM_HASHES`] probes; [`Error::TooLarge`] or
    /// [`Error::OutOfMemory`] if the filter does not fit.
    pub fn new(items: u64, fp_rate: f64) -> Result<Self> {
        Self::builder(items, fp_rate).build()
    }

    /// Starts from [`new`](Self::new)'s plan for `items` keys at `fp_rate`, to change any of
    /// it before [`build`](BloomBuilder::build): the seed, the exact number of bits, the
    /// number of probes.
    ///
    /// # Examples
    ///
    /// ```
    /// use bloomkit::BloomFilter;
    ///
    /// // The plan, with another seed.
    /// let f = BloomFilter::builder(1000, 0.01).seed(7).build()?;
    /// assert_eq!((f.num_bits(), f.seed()), (BloomFilter::new(1000, 0.01)?.num_bits(), 7));
    /// assert!(f.contains_hash(bloomkit::hash_with_seed("k", 7)) == f.contains("k"));
    ///
    /// // An exact shape: bits (rounded up to whole words) and probes.
    /// let f = BloomFilter::builder(1000, 0.01).num_bits(1000).num_hashes(5).build()?;
    /// assert_eq!((f.num_bits(), f.num_hashes()), (1024, 5));
    /// // Bits alone: the probes best for 1000 keys in them.
    /// assert_eq!(BloomFilter::builder(1000, 0.01).num_bits(20_000).build()?.num_hashes(), 14);
    /// assert!(BloomFilter::builder(1000, 0.01).num_bits(0).build().is_err());
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn builder(items: u64, fp_rate: f64) -> BloomBuilder {
        BloomBuilder::new(items, fp_rate)
    }

    /// A filter sized for the keys of `keys` at `fp_rate` ([`new`](Self::new) for as many
    /// keys as it yields, duplicates included) holding all of them. The keys are hashed first,
    /// eight bytes each, and only then is the filter made: for when the keys are at hand and
    /// their number is not.
    ///
    /// # Errors
    ///
    /// As [`new`](Self::new), and [`Error::OutOfMemory`] if the hashes do not fit.
    ///
    /// # Examples
    ///
    /// ```
    /// let words = ["apple", "pear", "plum"];
    /// let f = bloomkit::BloomFilter::from_keys(words, 0.01)?;
    /// assert!(words.iter().all(|w| f.contains(w)));
    /// assert_eq!(f.num_bits(), bloomkit::BloomFilter::new(3, 0.01)?.num_bits());
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn from_keys<I>(keys: I, fp_rate: f64) -> Result<Self>
    where
        I: IntoIterator,
        I::Item: Key,
    {
        let hashes = KeyHasher::default().hash_all(keys)?;
        let mut f = Self::new(hashes.len() as u64, fp_rate)?;
        for &hash in &hashes {
            f.insert_hash(hash);
        }
        Ok(f)
    }

    /// [`new`](Self::new) with a given key hasher, for the kinds built of these filters.
    pub(crate) fn new_with_hasher(items: u64, fp_rate: f64, hasher: KeyHasher) -> Result<Self> {
        let plan = sizing::classic_plan(items, fp_rate)?;
        Self::with_params_and_hasher(plan.num_bits, plan.num_hashes, hasher)
    }

    /// A filter of `num_bits` bits (rounded up to whole 64-bit words) and `num_hashes` probes,
    /// hashing keys with `hasher`: what the builder builds, and what the kinds built of
    /// classic filters make, with their own (perhaps bloomkit 0.1's) feed.
    ///
    /// Errors: [`Error::ZeroBits`]; [`Error::InvalidNumHashes`] outside
    /// `1..=`[`sizing::MAX_NUM_HASHES`]; [`Error::TooLarge`] or [`Error::OutOfMemory`].
    pub(crate) fn with_params_and_hasher(
        num_bits: u64,
        num_hashes: u32,
        hasher: KeyHasher,
    ) -> Result<Self> {
        if num_bits == 0 {
            return Err(Error::ZeroBits);
        }
        sizing::check_num_hashes(num_hashes)?;
        let num_words = num_bits.div_ceil(64);
        let bits = BitArray::zeroed(num_words)?;
        Ok(BloomFilter {
            bits,
            num_bits: num_words * 64,
            num_hashes,
            hasher,
            item_count: 0,
        })
    }

    /// A filter over existing words, for the kinds that project onto a classic filter (a
    /// counting filter's nonzero counters). `words` must hold exactly `num_bits / 64` words,
    /// and `num_hashes` must be valid: the callers derive both from a checked filter.
    pub(crate) fn from_words(
        words: Vec<u64>,
        num_bits: u64,
        num_hashes: u32,
        hasher: KeyHasher,
        item_count: u64,
    ) -> Self {
        debug_assert_eq!(words.len() as u64 * 64, num_bits);
        debug_assert!(sizing::check_num_hashes(num_hashes).is_ok());
        BloomFilter {
            bits: BitArray::from_words(words),
            num_bits,
            num_hashes,
            hasher,
            item_count,
        }
    }

    /// Adds `key`; returns `true` if any bit changed, that is, if the key was definitely not
    /// in the filter before.
    #[inline]
    pub fn insert<K: Key + ?Sized>(&mut self, key: &K) -> bool {
        self.insert_hash(self.hasher.hash(key))
    }

    /// Adds a key by its precomputed hash (from this filter's
    /// [`key_hasher`](Self::key_hasher)).
    #[inline]
    pub fn insert_hash(&mut self, hash: u64) -> bool {
        let mut changed = false;
        for bit in probes(hash, self.num_bits, self.num_hashes) {
            changed |= self.bits.set(bit);
        }
        self.item_count += changed as u64;
        changed
    }

    /// `false` if `key` is definitely absent; `true` if it may be present.
    #[inline]
    pub fn contains<K: Key + ?Sized>(&self, key: &K) -> bool {
        self.contains_hash(self.hasher.hash(key))
    }

    /// [`contains`](Self::contains) by a precomputed hash.
    #[inline]
    pub fn contains_hash(&self, hash: u64) -> bool {
        probes(hash, self.num_bits, self.num_hashes).all(|bit| self.bits.get(bit))
    }

    /// Forgets every key, keeping the memory: every bit zero and [`len`](Self::len) 0, the
    /// filter [`new`](Self::new) made.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut f = bloomkit::BloomFilter::new(100, 0.01)?;
    /// f.insert("a");
    /// f.clear();
    /// assert!(!f.contains("a") && f.is_empty());
    /// assert_eq!(f, bloomkit::BloomFilter::new(100, 0.01)?);
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn clear(&mut self) {
        self.bits.clear();
        self.item_count = 0;
    }

    /// Bits in the filter (a multiple of 64).
    pub fn num_bits(&self) -> u64 {
        self.num_bits
    }

    /// Probes per key.
    pub fn num_hashes(&self) -> u32 {
        self.num_hashes
    }

    /// The hash seed keys are hashed with.
    pub fn seed(&self) -> u64 {
        self.hasher.seed()
    }

    /// How keys are hashed: the seed, and whether as today or as bloomkit 0.1 did (a filter
    /// read from a 0.1 file). Hash a key with it to probe by hash.
    pub fn key_hasher(&self) -> KeyHasher {
        self.hasher
    }

    /// How many inserts changed the filter: keys seen for the first time, less the few that
    /// were already false positives. After [`union`](Self::union) or
    /// [`intersect`](Self::intersect), the fill-based [`estimated_count`](Self::estimated_count).
    pub fn len(&self) -> u64 {
        self.item_count
    }

    /// Whether [`len`](Self::len) is zero.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut f = bloomkit::BloomFilter::new(100, 0.01)?;
    /// assert!(f.is_empty());
    /// f.insert("a");
    /// assert!(!f.is_empty());
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bits set to one.
    pub fn count_ones(&self) -> u64 {
        self.bits.count_ones()
    }

    /// The fraction of bits set, from 0 to 1.
    pub fn fill_ratio(&self) -> f64 {
        self.count_ones() as f64 / self.num_bits as f64
    }

    /// The number of distinct keys inserted, estimated from the fill (Swamidass & Baldi).
    ///
    /// ```
    /// let mut f = bloomkit::BloomFilter::new(10_000, 0.01)?;
    /// for i in 0..5_000u32 { f.insert(&i); }
    /// let est = f.estimated_count();
    /// assert!(est.abs_diff(5_000) < 100, "{est}");
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn estimated_count(&self) -> u64 {
        sizing::estimated_count(self.count_ones(), self.num_bits, self.num_hashes)
    }

    /// The false-positive rate a query for an absent key risks now, from the fill: (X/m)^k.
    pub fn estimated_fp_rate(&self) -> f64 {
        sizing::estimated_fp_rate(self.count_ones(), self.num_bits, self.num_hashes)
    }

    /// Bytes of memory the filter holds.
    pub fn memory_bytes(&self) -> usize {
        std::mem::size_of::<Self>() + self.bits.memory_bytes()
    }

    /// The bits as 64-bit words, for the kinds that store classic filters inside their own
    /// format (a scalable filter's classic layers).
    pub(crate) fn words(&self) -> &[u64] {
        self.bits.words()
    }

    /// Heap bytes of the bits alone.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.bits.memory_bytes()
    }

    pub(crate) fn check_compatible(&self, other: &Self) -> Result<()> {
        Error::check_same("number of bits", self.num_bits, other.num_bits)?;
        Error::check_same("number of hashes", self.num_hashes, other.num_hashes)?;
        Error::check_same("hash seed", self.hasher.seed(), other.hasher.seed())?;
        Error::check_same("key feed", self.hasher.feed(), other.hasher.feed())
    }

    /// Adds every key of `other` (bitwise OR): afterwards this filter answers "maybe" for every
    /// key either filter held.
    ///
    /// # Errors
    ///
    /// [`Error::Incompatible`] unless both have the same bits, probes and seed; this filter is
    /// then unchanged.
    pub fn union(&mut self, other: &Self) -> Result<()> {
        self.check_compatible(other)?;
        self.bits.union_with(&other.bits);
        self.item_count = self.estimated_count();
        Ok(())
    }

    /// Keeps only the bits both filters set (bitwise AND): afterwards this filter answers
    /// "maybe" for every key both held (and, as a Bloom filter of the intersection, a few more
    /// false positives than one built from it directly).
    ///
    /// # Errors
    ///
    /// [`Error::Incompatible`] as for [`union`](Self::union).
    pub fn intersect(&mut self, other: &Self) -> Result<()> {
        self.check_compatible(other)?;
        self.bits.intersect_with(&other.bits);
        self.item_count = self.estimated_count();
        Ok(())
    }
}

/// Inserts every key, as [`insert`](BloomFilter::insert) one by one.
///
/// ```
/// let mut f = bloomkit::BloomFilter::new(100, 0.01)?;
/// f.extend(["a", "b"]);
/// f.extend(&[1u64, 2]);
/// assert!(f.contains("b") && f.contains(&2u8) && f.len() == 4);
/// # Ok::<(), bloomkit::Error>(())
/// ```
impl<K: Key> Extend<K> for BloomFilter {
    fn extend<I: IntoIterator<Item = K>>(&mut self, keys: I) {
        for key in keys {
            self.insert(&key);
        }
    }
}

impl PartialEq for BloomFilter {
    /// Equal when they have the same parameters and the same bits, so answer every query
    /// alike; the item count, a statistic, is not compared.
    fn eq(&self, other: &Self) -> bool {
        self.num_bits == other.num_bits
            && self.num_hashes == other.num_hashes
            && self.hasher == other.hasher
            && self.bits == other.bits
    }
}

impl Eq for BloomFilter {}

impl fmt::Debug for BloomFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Millions of words help nobody; show the shape.
        f.debug_struct("BloomFilter")
            .field("num_bits", &self.num_bits)
            .field("num_hashes", &self.num_hashes)
            .field("hasher", &self.hasher)
            .field("item_count", &self.item_count)
            .finish_non_exhaustive()
    }
}

impl Filter for BloomFilter {
    fn contains_hash(&self, hash: u64) -> bool {
        BloomFilter::contains_hash(self, hash)
    }
    fn key_hasher(&self) -> KeyHasher {
        self.hasher
    }
    fn kind(&self) -> FilterKind {
        FilterKind::Classic
    }
    fn memory_bytes(&self) -> usize {
        BloomFilter::memory_bytes(self)
    }
    fn len(&self) -> u64 {
        BloomFilter::len(self)
    }
    fn estimated_fp_rate(&self) -> f64 {
        BloomFilter::estimated_fp_rate(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn textbook_size() {
        let f = BloomFilter::new(1_000_000, 0.01).unwrap();
        assert_eq!(f.num_bits(), 9_585_059_u64.div_ceil(64) * 64);
        assert_eq!(f.num_hashes(), 7);
        let f = BloomFilter::new(0, 0.01).unwrap();
        assert_eq!(f.num_bits(), 64);
    }

    #[test]
    fn probes_stay_in_range_and_spread() {
        for &m in &[1u64, 63, 64, 1000, 1 << 40, u64::MAX] {
            for h in [0u64, 1, u64::MAX, 0x1234_5678_9abc_def0] {
                for bit in probes(h, m, 64) {
                    assert!(bit < m);
                }
            }
        }
        // Enough distinct positions, even for degenerate hashes.
        for h in [0u64, u64::MAX, 1 << 32] {
            let mut seen: Vec<u64> = probes(h, 1 << 20, 10).collect();
            seen.sort_unstable();
            seen.dedup();
            assert!(seen.len() >= 9, "{h:#x}: {seen:?}");
        }
    }

    #[test]
    fn reaches_bits_past_2_pow_32() {
        // The top probe range must be reachable in a filter over 2^32 bits; checked on the
        // probe function so the test needs no 1 GiB allocation.
        let m = 1u64 << 36;
        let high = (0..10_000u64)
            .flat_map(|i| probes(crate::hash(&i), m, 7))
            .filter(|&b| b >= 1 << 35)
            .count();
        assert!(high > 30_000, "{high}");
    }

    #[test]
    fn tiny_rates_are_refused_not_absurd() {
        assert!(matches!(
            BloomFilter::new(10, 1e-30),
            Err(Error::FpRateTooSmall { .. })
        ));
        assert!(BloomFilter::new(10, 1e-15).is_ok());
    }

    #[test]
    fn bad_params_are_errors() {
        assert!(matches!(
            BloomFilter::builder(0, 0.01)
                .num_bits(0)
                .num_hashes(3)
                .build(),
            Err(Error::ZeroBits)
        ));
        assert!(matches!(
            BloomFilter::builder(0, 0.01)
                .num_bits(64)
                .num_hashes(0)
                .build(),
            Err(Error::InvalidNumHashes { .. })
        ));
        assert!(matches!(
            BloomFilter::builder(0, 0.01)
                .num_bits(64)
                .num_hashes(65)
                .build(),
            Err(Error::InvalidNumHashes { .. })
        ));
        assert!(matches!(
            BloomFilter::builder(0, 0.01)
                .num_bits(u64::MAX)
                .num_hashes(3)
                .build(),
            Err(Error::TooLarge { .. }) | Err(Error::OutOfMemory { .. })
        ));
    }

    #[test]
    fn insert_reports_change_and_counts() {
        let mut f = BloomFilter::new(100, 0.01).unwrap();
        assert!(f.insert("a"));
        assert!(!f.insert("a"));
        assert_eq!(f.len(), 1);
        assert!(f.count_ones() > 0 && f.count_ones() <= 7);
    }

    #[test]
    fn union_and_intersect_check_parameters() {
        let mut a = BloomFilter::new(100, 0.01).unwrap();
        let b = BloomFilter::new(1000, 0.01).unwrap();
        let c = BloomFilter::builder(100, 0.01).seed(7).build().unwrap();
        a.insert("x");
        let before = a.clone();
        assert!(matches!(
            a.union(&b),
            Err(Error::Incompatible {
                parameter: "number of bits",
                ..
            })
        ));
        assert!(matches!(
            a.intersect(&c),
            Err(Error::Incompatible {
                parameter: "hash seed",
                ..
            })
        ));
        assert_eq!(a, before);
    }
}
