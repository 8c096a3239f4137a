//! [`CountingBloomFilter`]: a Bloom filter that supports removal, with 4-bit counters.
//!
//! A plain Bloom filter cannot forget: a bit set by one key may be shared with others, so
//! clearing it could make them vanish. A counting filter (Fan, Cao, Almeida & Broder, "Summary
//! Cache", 2000) replaces each bit with a small counter: an insert adds one to the key's k
//! counters, a removal takes one off, and a query asks whether all k are nonzero. Use it for a
//! set that changes: the contents of a cache whose entries are evicted, open sessions, a
//! work queue.
//!
//! Why it is built this way:
//!
//! * **Four bits a counter.** With the optimal number of probes, the chance that any counter of
//!   a filter holding its planned keys reaches 16 is about 1.4·10⁻¹⁵ per counter (Fan et al.),
//!   so four bits are enough, at four times a classic filter's memory (38.3 bits per key at
//!   1%). For the rare counter that does get there, it *saturates* at 15 and is never
//!   decremented again: it has lost count of how many keys it holds, so it must keep saying
//!   "maybe" for all of them. That costs a little accuracy and never a false negative.
//! * **Sixteen counters a `u64` word.** The payload is words, like every other kind's, and one
//!   load reads sixteen neighbouring counters. Incrementing a counter is adding `1 << 4i` to
//!   its word, which would carry into the next counter from 15; adding only below 15 (and
//!   subtracting only above 0) is what keeps each counter in its own four bits.
//! * **The classic layout, counter for bit.** Sizing and probe positions are exactly
//!   [`BloomFilter`]'s, so counter i is nonzero exactly when bit i of the classic filter of the
//!   same keys would be set. [`to_bloom`](CountingBloomFilter::to_bloom) projects a counting
//!   filter onto a four times smaller, read-only `BloomFilter` with identical answers: keep the
//!   counting filter where keys come and go, ship the projection to readers.
//!
//! **Removing a key that was never added can cause false negatives for other keys.** A removal
//! cannot tell a key that was inserted from a false positive whose counters other keys happen
//! to have raised; taking those counters down can zero one that a real key needs. A removal
//! of a key that is *definitely* absent (one of its counters is zero) is refused and changes
//! nothing, but only the caller can make sure the keys it removes were inserted.

use std::fmt;
use std::hash::Hash;
use std::io::{Read, Write};

use crate::bits::try_vec;
use crate::classic::probes;
use crate::error::{Error, Result};
use crate::format::{self, FilterKind, FormatReader, Header, Persist};
use crate::hash::{hash_with_seed, DEFAULT_SEED};
use crate::sizing;
use crate::{BloomFilter, Filter};

/// Bits in one counter.
const COUNTER_BITS: u64 = 4;

/// Counters in one 64-bit word.
const COUNTERS_PER_WORD: u64 = 64 / COUNTER_BITS;

/// A counter's largest value, where it saturates; also the mask of one counter.
const COUNTER_MAX: u64 = 15;

/// The lowest bit of every counter of a word.
const COUNTER_LOW_BITS: u64 = 0x1111_1111_1111_1111;

/// The word holding counter `index`, and the shift of the counter inside it.
#[inline]
fn slot(index: u64) -> (usize, u64) {
    (
        (index / COUNTERS_PER_WORD) as usize,
        (index % COUNTERS_PER_WORD) * COUNTER_BITS,
    )
}

/// A word with the lowest bit of each nonzero counter of `word` set (and no other bit).
#[inline]
fn nonzero_counters(word: u64) -> u64 {
    // Fold each counter's four bits into its lowest one; the shifts bring in bits of the next
    // counter up only at positions the final mask discards.
    let x = word | (word >> 1);
    (x | (x >> 2)) & COUNTER_LOW_BITS
}

/// A word with the lowest bit of each saturated counter (all four bits set) of `word` set.
#[inline]
fn saturated_counters(word: u64) -> u64 {
    let x = word & (word >> 1);
    x & (x >> 2) & COUNTER_LOW_BITS
}

/// Moves the sixteen bits at positions 0, 4, 8, …, 60 of `x` (the rest zero) to positions
/// 0 to 15: one bit per counter, in counter order.
#[inline]
fn gather_counter_bits(x: u64) -> u64 {
    let x = (x | (x >> 3)) & 0x0303_0303_0303_0303;
    let x = (x | (x >> 6)) & 0x000f_000f_000f_000f;
    let x = (x | (x >> 12)) & 0x0000_00ff_0000_00ff;
    (x | (x >> 24)) & 0xffff
}

/// The counter-wise sum of two words of counters, each sum capped at 15.
fn saturating_add_counters(a: u64, b: u64) -> u64 {
    let mut sum = 0;
    for shift in (0..64).step_by(COUNTER_BITS as usize) {
        let s = ((a >> shift) & COUNTER_MAX) + ((b >> shift) & COUNTER_MAX);
        sum |= s.min(COUNTER_MAX) << shift;
    }
    sum
}

/// A counting Bloom filter: the classic layout with a 4-bit counter in place of each bit, so
/// keys can be removed.
///
/// Sized and probed exactly as a [`BloomFilter`] (9.59 counters per key at 1%, 7 probes), at
/// four times its memory (38.3 bits per key at 1%, 57.5 at 0.1%), so counter i is nonzero
/// exactly when bit i of the classic filter of the same keys would be set:
/// [`to_bloom`](Self::to_bloom) projects it onto that filter, a quarter of the size, with
/// identical answers.
///
/// Counters are four bits, sixteen to a `u64` word. They saturate at 15 and a saturated
/// counter is never decremented, so an overflow can never cause a false negative (it costs a
/// little accuracy instead; at the planned load a counter reaches 15 with probability about
/// 10⁻¹⁵).
///
/// **Removing a key that was never added can cause false negatives for other keys**: a false
/// positive's counters are other keys' counters, and taking them down can zero one those keys
/// need. A removal of a key that is definitely absent is refused and changes nothing, but only
/// the caller can make sure that what it removes was inserted. See [`remove`](Self::remove).
///
/// # Examples
///
/// ```
/// use bloomkit::CountingBloomFilter;
///
/// let mut f = CountingBloomFilter::new(100_000, 0.01)?;
/// assert_eq!(f.num_hashes(), 7);
/// // Four bits for each of the classic filter's 9.59 bits per key.
/// let bits_per_key = f.memory_bytes() as f64 * 8.0 / 100_000.0;
/// assert!((38.3..38.5).contains(&bits_per_key), "{bits_per_key}");
///
/// for i in 0..100_000u64 { f.insert(&i); }
/// // Remove the odd keys: the even ones stay, and most odd ones are gone.
/// for i in (1..100_000u64).step_by(2) { assert!(f.remove(&i)); }
/// assert!((0..100_000u64).step_by(2).all(|i| f.contains(&i)));
/// let left = (1..100_000u64).step_by(2).filter(|i| f.contains(i)).count();
/// assert!(left < 50, "{left}"); // half the planned load: far below 1%
/// assert_eq!(f.item_count(), 50_000);
/// # Ok::<(), bloomkit::Error>(())
/// ```
#[derive(Clone)]
pub struct CountingBloomFilter {
    /// Counter `i` is bits `4·(i % 16)` to `4·(i % 16) + 3` of word `i / 16`: the counters in
    /// order, least significant first, as the classic filter numbers its bits.
    counters: Vec<u64>,
    /// A multiple of 64, like a classic filter's bits, so the projection is whole words.
    num_counters: u64,
    num_hashes: u32,
    seed: u64,
    item_count: u64,
}

impl CountingBloomFilter {
    /// The value at which a counter saturates: it is never incremented past it, and never
    /// decremented from it.
    pub const COUNTER_MAX: u8 = COUNTER_MAX as u8;

    /// A filter sized to hold `items` keys at a false-positive rate of `fp_rate`, with the
    /// classic sizing: ⌈−n·ln p / (ln 2)²⌉ counters (rounded up to a multiple of 64) and
    /// (m/n)·ln 2 probes. `items = 0` is treated as 1.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidFpRate`] unless `0 < fp_rate < 1`; [`Error::FpRateTooSmall`] if the
    /// rate needs more than [`sizing::MAX_NUM_HASHES`] probes; [`Error::TooLarge`] or
    /// [`Error::OutOfMemory`] if the filter does not fit.
    ///
    /// # Examples
    ///
    /// ```
    /// use bloomkit::CountingBloomFilter;
    ///
    /// let f = CountingBloomFilter::new(1_000_000, 0.01)?;
    /// assert_eq!(f.num_counters(), 9_585_088); // as many as a classic filter's bits
    /// assert_eq!(f.memory_bytes() / 1_000_000, 4); // 4 bits each: 4.8 MB
    /// assert!(CountingBloomFilter::new(1_000, 1.5).is_err());
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn new(items: u64, fp_rate: f64) -> Result<Self> {
        Self::new_with_seed(items, fp_rate, DEFAULT_SEED)
    }

    /// [`CountingBloomFilter::new`] with a hash seed other than the default. Probe it with
    /// hashes from [`crate::hash_with_seed`] and the same seed.
    ///
    /// # Errors
    ///
    /// As [`new`](Self::new).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut f = bloomkit::CountingBloomFilter::new_with_seed(100, 0.01, 42)?;
    /// f.insert_hash(bloomkit::hash_with_seed("k", 42));
    /// assert!(f.contains("k") && f.seed() == 42);
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn new_with_seed(items: u64, fp_rate: f64, seed: u64) -> Result<Self> {
        let num_bits = sizing::optimal_num_bits(items, fp_rate)?;
        sizing::check_reachable(items, fp_rate)?;
        let num_hashes = sizing::optimal_num_hashes(items, num_bits);
        Self::with_params_and_seed(num_bits, num_hashes, seed)
    }

    /// A filter of `num_counters` counters (rounded up to a multiple of 64) and `num_hashes`
    /// probes.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] for zero counters; [`Error::InvalidNumHashes`] outside
    /// `1..=`[`sizing::MAX_NUM_HASHES`]; [`Error::TooLarge`] or [`Error::OutOfMemory`].
    ///
    /// # Examples
    ///
    /// ```
    /// use bloomkit::CountingBloomFilter;
    ///
    /// let f = CountingBloomFilter::with_params(1000, 5)?;
    /// assert_eq!(f.num_counters(), 1024);
    /// assert!(CountingBloomFilter::with_params(0, 5).is_err());
    /// assert!(CountingBloomFilter::with_params(1000, 0).is_err());
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn with_params(num_counters: u64, num_hashes: u32) -> Result<Self> {
        Self::with_params_and_seed(num_counters, num_hashes, DEFAULT_SEED)
    }

    /// [`CountingBloomFilter::with_params`] with a hash seed other than the default.
    ///
    /// # Errors
    ///
    /// As [`with_params`](Self::with_params).
    ///
    /// # Examples
    ///
    /// ```
    /// let f = bloomkit::CountingBloomFilter::with_params_and_seed(64, 3, 7)?;
    /// assert_eq!((f.num_counters(), f.num_hashes(), f.seed()), (64, 3, 7));
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn with_params_and_seed(num_counters: u64, num_hashes: u32, seed: u64) -> Result<Self> {
        if num_counters == 0 {
            return Err(Error::InvalidParameter {
                name: "num_counters",
                value: "0".into(),
                expected: "at least 1",
            });
        }
        sizing::check_num_hashes(num_hashes)?;
        let num_counters = num_counters
            .div_ceil(64)
            .checked_mul(64)
            .ok_or(Error::TooLarge { num_bits: u64::MAX })?;
        let counters = try_vec(num_counters / COUNTERS_PER_WORD, || 0)?;
        Ok(CountingBloomFilter {
            counters,
            num_counters,
            num_hashes,
            seed,
            item_count: 0,
        })
    }

    /// Adds one copy of `key`: its k counters go up by one (those at 15 stay there). Returns
    /// `true` if the key was definitely absent before (one of its counters was zero).
    ///
    /// Inserting a key twice holds it twice: it then takes two removals to go.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut f = bloomkit::CountingBloomFilter::new(100, 0.01)?;
    /// assert!(f.insert("a"));
    /// assert!(!f.insert("a"));
    /// assert!(f.remove("a") && f.contains("a"));
    /// assert!(f.remove("a") && !f.contains("a"));
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    #[inline]
    pub fn insert<T: Hash + ?Sized>(&mut self, key: &T) -> bool {
        self.insert_hash(hash_with_seed(key, self.seed))
    }

    /// [`insert`](Self::insert) by a precomputed hash ([`crate::hash`], or
    /// [`crate::hash_with_seed`] with this filter's [`seed`](Self::seed)).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut f = bloomkit::CountingBloomFilter::new(100, 0.01)?;
    /// f.insert_hash(bloomkit::hash("a"));
    /// assert!(f.contains("a"));
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    #[inline]
    pub fn insert_hash(&mut self, hash: u64) -> bool {
        let mut was_absent = false;
        for index in probes(hash, self.num_counters, self.num_hashes) {
            let (w, shift) = slot(index);
            let word = &mut self.counters[w];
            let count = (*word >> shift) & COUNTER_MAX;
            was_absent |= count == 0;
            // Only below the maximum: 15 + 1 would carry into the next counter's bits.
            if count < COUNTER_MAX {
                *word += 1 << shift;
            }
        }
        self.item_count = self.item_count.saturating_add(1);
        was_absent
    }

    /// `false` if `key` is definitely absent; `true` if it may be present.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut f = bloomkit::CountingBloomFilter::new(100, 0.01)?;
    /// f.insert(&7u32);
    /// assert!(f.contains(&7u32) && !f.contains(&8u32));
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    #[inline]
    pub fn contains<T: Hash + ?Sized>(&self, key: &T) -> bool {
        self.contains_hash(hash_with_seed(key, self.seed))
    }

    /// [`contains`](Self::contains) by a precomputed hash.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut f = bloomkit::CountingBloomFilter::new(100, 0.01)?;
    /// f.insert("a");
    /// assert!(f.contains_hash(bloomkit::hash("a")));
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    #[inline]
    pub fn contains_hash(&self, hash: u64) -> bool {
        probes(hash, self.num_counters, self.num_hashes).all(|index| self.counter(index) != 0)
    }

    /// Removes one copy of `key`: its k counters go down by one, except saturated ones (15),
    /// which stay. Returns `true` if it did; a key that is definitely absent (one of its
    /// counters is zero) changes nothing and returns `false`.
    ///
    /// **Remove only keys you inserted.** A key that was never added but collides with
    /// others (a false positive) is removed like a real one, and taking its counters down can
    /// make keys that share them look absent: false negatives. Removing each inserted copy
    /// once is always safe.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut f = bloomkit::CountingBloomFilter::new(1000, 0.01)?;
    /// f.insert("apple");
    /// f.insert("pear");
    /// assert!(!f.remove("plum")); // never added, definitely absent: nothing changes
    /// assert!(f.remove("apple"));
    /// assert!(!f.contains("apple") && f.contains("pear"));
    /// assert_eq!(f.item_count(), 1);
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    #[inline]
    pub fn remove<T: Hash + ?Sized>(&mut self, key: &T) -> bool {
        self.remove_hash(hash_with_seed(key, self.seed))
    }

    /// [`remove`](Self::remove) by a precomputed hash.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut f = bloomkit::CountingBloomFilter::new(100, 0.01)?;
    /// let h = bloomkit::hash("a");
    /// f.insert_hash(h);
    /// assert!(f.remove_hash(h) && !f.contains_hash(h));
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    #[inline]
    pub fn remove_hash(&mut self, hash: u64) -> bool {
        if !self.contains_hash(hash) {
            return false;
        }
        for index in probes(hash, self.num_counters, self.num_hashes) {
            let (w, shift) = slot(index);
            let word = &mut self.counters[w];
            let count = (*word >> shift) & COUNTER_MAX;
            // A saturated counter no longer knows how many keys it holds: it stays, so none of
            // them can be forgotten. A zero can only be a probe this key repeats, already taken
            // down (from 1, so the key was never inserted); subtracting would borrow from the
            // next counter.
            if count != 0 && count != COUNTER_MAX {
                *word -= 1 << shift;
            }
        }
        self.item_count = self.item_count.saturating_sub(1);
        true
    }

    #[inline]
    fn counter(&self, index: u64) -> u64 {
        let (w, shift) = slot(index);
        (self.counters[w] >> shift) & COUNTER_MAX
    }

    /// Counters in the filter (a multiple of 64): the classic filter's number of bits.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = bloomkit::CountingBloomFilter::new(1_000_000, 0.001)?;
    /// assert_eq!(f.num_counters(), 14_377_600); // 14.4 per key at 0.1%
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn num_counters(&self) -> u64 {
        self.num_counters
    }

    /// Probes per key.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(bloomkit::CountingBloomFilter::new(1000, 0.001)?.num_hashes(), 10);
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn num_hashes(&self) -> u32 {
        self.num_hashes
    }

    /// The hash seed keys are hashed with.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = bloomkit::CountingBloomFilter::new(10, 0.01)?;
    /// assert_eq!(f.seed(), bloomkit::DEFAULT_SEED);
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Inserts less successful removals: the number of copies the filter holds, if every
    /// removed key had been inserted. A key inserted twice counts twice. After
    /// [`union`](Self::union), the sum of both counts.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut f = bloomkit::CountingBloomFilter::new(100, 0.01)?;
    /// f.insert("a");
    /// f.insert("a");
    /// f.insert("b");
    /// f.remove("b");
    /// f.remove("zzz"); // definitely absent: refused, not counted
    /// assert_eq!(f.item_count(), 2);
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn item_count(&self) -> u64 {
        self.item_count
    }

    /// Counters above zero: the bits a classic filter of the same keys would set.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut f = bloomkit::CountingBloomFilter::new(100, 0.01)?;
    /// f.insert("a");
    /// assert!((1..=7).contains(&f.count_nonzero()));
    /// assert_eq!(f.count_nonzero(), f.to_bloom()?.count_ones());
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn count_nonzero(&self) -> u64 {
        self.counters
            .iter()
            .map(|&w| nonzero_counters(w).count_ones() as u64)
            .sum()
    }

    /// Counters stuck at [`COUNTER_MAX`](Self::COUNTER_MAX). Each is a small, permanent loss
    /// of accuracy (it will answer "maybe" forever); in a filter holding about its planned
    /// keys there are essentially none.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut f = bloomkit::CountingBloomFilter::new(100, 0.01)?;
    /// for _ in 0..20 { f.insert("hot"); }
    /// assert_eq!(f.count_saturated(), f.count_nonzero());
    /// for _ in 0..20 { f.remove("hot"); }
    /// assert!(f.contains("hot")); // saturated counters never come down
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn count_saturated(&self) -> u64 {
        self.counters
            .iter()
            .map(|&w| saturated_counters(w).count_ones() as u64)
            .sum()
    }

    /// The false-positive rate a query for an absent key risks now, from the fraction of
    /// nonzero counters: (nonzero / counters)^k, exactly the classic estimate.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut f = bloomkit::CountingBloomFilter::new(10_000, 0.01)?;
    /// assert_eq!(f.estimated_fp_rate(), 0.0);
    /// for i in 0..10_000u32 { f.insert(&i); }
    /// let rate = f.estimated_fp_rate();
    /// assert!((0.008..0.012).contains(&rate), "{rate}");
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn estimated_fp_rate(&self) -> f64 {
        sizing::estimated_fp_rate(self.count_nonzero(), self.num_counters, self.num_hashes)
    }

    /// Bytes of memory the filter holds: four bits a counter, and the struct.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = bloomkit::CountingBloomFilter::with_params(1 << 20, 7)?;
    /// assert_eq!(f.memory_bytes(), (1 << 19) + std::mem::size_of_val(&f));
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn memory_bytes(&self) -> usize {
        std::mem::size_of::<Self>() + self.counters.capacity() * std::mem::size_of::<u64>()
    }

    /// The classic [`BloomFilter`] with a bit set wherever this filter has a nonzero counter:
    /// it answers every query exactly as this filter does, in a quarter of the memory, but
    /// cannot remove. Its item count is this filter's [`item_count`](Self::item_count).
    ///
    /// # Errors
    ///
    /// [`Error::OutOfMemory`] if the projection's bits cannot be allocated.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut f = bloomkit::CountingBloomFilter::new(10_000, 0.01)?;
    /// for i in 0..10_000u32 { f.insert(&i); }
    /// for i in 0..5_000u32 { f.remove(&i); }
    /// let b = f.to_bloom()?;
    /// assert_eq!(b.num_bits(), f.num_counters());
    /// assert!((0..100_000u32).all(|i| b.contains(&i) == f.contains(&i)));
    /// let ratio = f.memory_bytes() as f64 / b.memory_bytes() as f64;
    /// assert!((3.9..=4.0).contains(&ratio), "{ratio}");
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn to_bloom(&self) -> Result<BloomFilter> {
        // Four counter words (64 counters) make one bit word.
        let mut groups = self.counters.chunks_exact(4);
        let words = try_vec(self.num_counters / 64, || {
            groups.next().map_or(0, |group| {
                group.iter().enumerate().fold(0, |bits, (i, &word)| {
                    bits | gather_counter_bits(nonzero_counters(word)) << (16 * i)
                })
            })
        })?;
        Ok(BloomFilter::from_words(
            words,
            self.num_counters,
            self.num_hashes,
            self.seed,
            self.item_count,
        ))
    }

    fn check_compatible(&self, other: &Self) -> Result<()> {
        Error::check_same("number of counters", self.num_counters, other.num_counters)?;
        Error::check_same("number of hashes", self.num_hashes, other.num_hashes)?;
        Error::check_same("hash seed", self.seed, other.seed)
    }

    /// Adds every key of `other`, counter by counter (sums above 15 saturate): afterwards
    /// this filter holds the copies of both, and removing any key that either held is safe.
    ///
    /// # Errors
    ///
    /// [`Error::Incompatible`] unless both have the same counters, probes and seed; this
    /// filter is then unchanged.
    ///
    /// # Examples
    ///
    /// ```
    /// use bloomkit::CountingBloomFilter;
    ///
    /// let mut a = CountingBloomFilter::new(1000, 0.01)?;
    /// let mut b = CountingBloomFilter::new(1000, 0.01)?;
    /// a.insert("x");
    /// b.insert("x");
    /// b.insert("y");
    /// a.union(&b)?;
    /// assert_eq!(a.item_count(), 3);
    /// assert!(a.remove("x") && a.contains("x")); // "x" was in both
    /// assert!(a.union(&CountingBloomFilter::new(10, 0.01)?).is_err());
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn union(&mut self, other: &Self) -> Result<()> {
        self.check_compatible(other)?;
        for (a, &b) in self.counters.iter_mut().zip(&other.counters) {
            *a = saturating_add_counters(*a, b);
        }
        self.item_count = self.item_count.saturating_add(other.item_count);
        Ok(())
    }

    /// The filter in bloomkit's file format (see `docs/FORMAT.md`), kind 3.
    ///
    /// Parameters (12 bytes): the number of counters `m` (u64, a positive multiple of 64),
    /// then of hashes `k` (u32, 1 to 64). Payload (`m / 2` bytes): `m / 16` little-endian u64
    /// words; counter `i` is bits `4·(i mod 16)` to `4·(i mod 16) + 3` of word `i / 16`.
    /// Probes are the classic filter's (kind 1) with `m` counters for its `m` bits. The
    /// header's item count is [`item_count`](Self::item_count).
    ///
    /// # Examples
    ///
    /// ```
    /// use bloomkit::CountingBloomFilter;
    ///
    /// let mut f = CountingBloomFilter::new(1000, 0.01)?;
    /// f.insert("a");
    /// let bytes = f.to_bytes();
    /// assert_eq!(bytes.len(), 44 + 12 + f.num_counters() as usize / 2 + 8);
    /// assert_eq!(CountingBloomFilter::from_bytes(&bytes)?, f);
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn to_bytes(&self) -> Vec<u8> {
        format::to_bytes(self)
    }

    /// Writes the filter in bloomkit's file format. Wrap a file in a `BufWriter`.
    ///
    /// # Errors
    ///
    /// [`Error::Io`] from the writer.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = bloomkit::CountingBloomFilter::new(1000, 0.01)?;
    /// let mut out = Vec::new();
    /// f.write_to(&mut out)?;
    /// assert_eq!(out, f.to_bytes());
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn write_to<W: Write>(&self, writer: W) -> Result<()> {
        format::write_to(self, writer)
    }

    /// Reads a filter written by [`to_bytes`](Self::to_bytes); `bytes` must hold exactly one.
    ///
    /// # Errors
    ///
    /// An error, never a panic, for anything but a valid counting filter; nothing is
    /// allocated beyond what `bytes` can hold. See [`BloomFilter::from_bytes`].
    ///
    /// # Examples
    ///
    /// ```
    /// use bloomkit::{CountingBloomFilter, Error};
    ///
    /// let mut bytes = CountingBloomFilter::new(100, 0.01)?.to_bytes();
    /// bytes[60] ^= 1;
    /// assert!(matches!(
    ///     CountingBloomFilter::from_bytes(&bytes),
    ///     Err(Error::ChecksumMismatch { .. })
    /// ));
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        format::from_bytes(bytes)
    }

    /// Reads one filter from `reader`, consuming exactly its bytes. Wrap a file in a
    /// `BufReader`.
    ///
    /// # Errors
    ///
    /// As [`from_bytes`](Self::from_bytes), plus [`Error::Io`] from the reader. Memory grows
    /// only as payload actually arrives.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut f = bloomkit::CountingBloomFilter::new(100, 0.01)?;
    /// f.insert("a");
    /// let bytes = f.to_bytes();
    /// let g = bloomkit::CountingBloomFilter::read_from(&bytes[..])?;
    /// assert!(g.contains("a") && g.item_count() == 1);
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn read_from<R: Read>(reader: R) -> Result<Self> {
        format::read_from(reader)
    }
}

impl PartialEq for CountingBloomFilter {
    /// Equal when they have the same parameters and the same counters; the item count, a
    /// statistic, is not compared.
    fn eq(&self, other: &Self) -> bool {
        self.num_counters == other.num_counters
            && self.num_hashes == other.num_hashes
            && self.seed == other.seed
            && self.counters == other.counters
    }
}

impl Eq for CountingBloomFilter {}

impl fmt::Debug for CountingBloomFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CountingBloomFilter")
            .field("num_counters", &self.num_counters)
            .field("num_hashes", &self.num_hashes)
            .field("seed", &self.seed)
            .field("item_count", &self.item_count)
            .finish_non_exhaustive()
    }
}

impl Filter for CountingBloomFilter {
    fn contains_hash(&self, hash: u64) -> bool {
        CountingBloomFilter::contains_hash(self, hash)
    }
    fn seed(&self) -> u64 {
        self.seed
    }
    fn kind(&self) -> FilterKind {
        FilterKind::Counting
    }
    fn memory_bytes(&self) -> usize {
        CountingBloomFilter::memory_bytes(self)
    }
}

impl Persist for CountingBloomFilter {
    const KIND: FilterKind = FilterKind::Counting;

    fn seed(&self) -> u64 {
        self.seed
    }

    fn item_count(&self) -> u64 {
        self.item_count
    }

    fn params(&self) -> Vec<u8> {
        // The Bloom kinds' shape, a u64 then a u32: here the number of counters.
        format::encode_bits_and_hashes(self.num_counters, self.num_hashes)
    }

    fn payload_words(&self) -> impl Iterator<Item = u64> + '_ {
        self.counters.iter().copied()
    }

    fn payload_words_len(&self) -> u64 {
        self.num_counters / COUNTERS_PER_WORD
    }

    fn decode<R: Read>(header: &Header, payload: &mut FormatReader<R>) -> Result<Self> {
        let mut params = header.params();
        let num_counters = params.u64()?;
        let num_hashes = params.u32()?;
        params.finish()?;
        if num_counters == 0 || num_counters % 64 != 0 {
            return Err(Error::corrupt(format!(
                "the header's number of counters {num_counters} is not a positive multiple of 64"
            )));
        }
        if sizing::check_num_hashes(num_hashes).is_err() {
            return Err(Error::corrupt(format!(
                "the header's number of hashes {num_hashes} is out of range"
            )));
        }
        let num_words = num_counters / COUNTERS_PER_WORD;
        header.expect_payload_len(num_words * 8)?;
        let mut counters: Vec<u64> = Vec::new();
        payload.read_words(num_words, |chunk| {
            format::grow_toward(&mut counters, chunk.len(), num_words)?;
            counters.extend_from_slice(chunk);
            Ok(())
        })?;
        Ok(CountingBloomFilter {
            counters,
            num_counters,
            num_hashes,
            seed: header.seed,
            item_count: header.item_count,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A filter of one word of counters, for poking at single counters.
    fn one_word() -> CountingBloomFilter {
        let mut f = CountingBloomFilter::with_params(64, 1).unwrap();
        f.counters.truncate(1);
        f.num_counters = 16;
        f
    }

    fn bump(f: &mut CountingBloomFilter, index: u64, times: u32) {
        for _ in 0..times {
            let (w, shift) = slot(index);
            let count = (f.counters[w] >> shift) & COUNTER_MAX;
            if count < COUNTER_MAX {
                f.counters[w] += 1 << shift;
            }
        }
    }

    #[test]
    fn a_full_counter_never_carries_into_its_neighbour() {
        // The classic bug: a naive `+= 1 << shift` at 15 turns counter i into 0 and adds one
        // to counter i + 1. Drive every counter of a word to saturation, one at a time, and
        // check no other counter moved.
        for i in 0..16 {
            let mut f = one_word();
            // Count each by the real insert path: a hash that probes counter i with k = 1
            // maps to i = (h * 16) >> 64, so take h = i << 60.
            let h = i << 60;
            for _ in 0..40 {
                f.insert_hash(h);
            }
            assert_eq!(f.counter(i), COUNTER_MAX, "counter {i}");
            for j in (0..16).filter(|&j| j != i) {
                assert_eq!(f.counter(j), 0, "counter {j} changed by {i}");
            }
            // And down again: saturated, it stays; its neighbours stay zero.
            for _ in 0..40 {
                assert!(f.remove_hash(h));
            }
            assert_eq!(f.counters[0], COUNTER_MAX << (4 * i));
        }
    }

    #[test]
    fn a_zero_counter_never_borrows_from_its_neighbour() {
        let mut f = one_word();
        bump(&mut f, 3, 1);
        bump(&mut f, 4, 2);
        // Counter 2 is zero: a key probing it is definitely absent and nothing changes.
        assert!(!f.remove_hash(2 << 60));
        assert!(f.remove_hash(3 << 60));
        assert!(!f.remove_hash(3 << 60));
        assert_eq!(f.counters[0], 2 << 16);
    }

    #[test]
    fn repeated_probes_of_one_key_count_twice_and_never_underflow() {
        // In a small filter some keys probe one counter twice: find one.
        let probe_counts = |h: u64| {
            let mut seen = std::collections::HashMap::new();
            for index in probes(h, 64, 16) {
                *seen.entry(index).or_insert(0u64) += 1;
            }
            seen
        };
        let h = (0..1000u64)
            .map(|i| crate::hash(&i))
            .find(|&h| probe_counts(h).values().any(|&n| n > 1))
            .expect("a key with a repeated probe");
        let mut f = CountingBloomFilter::with_params(64, 16).unwrap();
        f.insert_hash(h);
        for (&index, &n) in &probe_counts(h) {
            assert_eq!(f.counter(index), n);
        }
        assert!(f.remove_hash(h));
        assert_eq!(f.count_nonzero(), 0);
        // A key never inserted, whose repeated counter is 1 (set by another key): the second
        // decrement finds zero and must not borrow from the neighbour.
        let mut g = CountingBloomFilter::with_params(64, 16).unwrap();
        for &index in probe_counts(h).keys() {
            let (w, shift) = slot(index);
            g.counters[w] += 1 << shift;
        }
        assert!(g.remove_hash(h));
        assert_eq!(g.count_nonzero(), 0);
        assert!(g.counters.iter().all(|&w| w == 0));
    }

    #[test]
    fn word_helpers_agree_with_a_counter_by_counter_reading() {
        let words = [
            0u64,
            u64::MAX,
            0x0123_4567_89ab_cdef,
            0xf0f0_0f0f_1000_0001,
            0x8421_8421_8421_8421,
        ];
        for &w in &words {
            let mut nonzero = 0;
            let mut saturated = 0;
            for i in 0..16 {
                let c = (w >> (4 * i)) & 15;
                nonzero |= ((c != 0) as u64) << i;
                saturated |= ((c == 15) as u64) << i;
            }
            assert_eq!(gather_counter_bits(nonzero_counters(w)), nonzero, "{w:#x}");
            assert_eq!(
                gather_counter_bits(saturated_counters(w)),
                saturated,
                "{w:#x}"
            );
            for &v in &words {
                let sum = saturating_add_counters(w, v);
                for i in 0..16 {
                    let expected = (((w >> (4 * i)) & 15) + ((v >> (4 * i)) & 15)).min(15);
                    assert_eq!((sum >> (4 * i)) & 15, expected);
                }
            }
        }
    }

    #[test]
    fn sized_like_the_classic_filter() {
        let c = CountingBloomFilter::new(1_000_000, 0.01).unwrap();
        let b = BloomFilter::new(1_000_000, 0.01).unwrap();
        assert_eq!(c.num_counters(), b.num_bits());
        assert_eq!(c.num_hashes(), b.num_hashes());
        assert_eq!(
            c.memory_bytes() - std::mem::size_of::<CountingBloomFilter>(),
            4 * (b.memory_bytes() - std::mem::size_of::<BloomFilter>())
        );
    }

    #[test]
    fn is_send_sync_and_debug_shows_the_shape_only() {
        fn send_sync<T: Send + Sync + Clone + fmt::Debug + PartialEq>() {}
        send_sync::<CountingBloomFilter>();
        let f = CountingBloomFilter::new(1_000_000, 0.01).unwrap();
        assert!(format!("{f:?}").len() < 200);
    }

    #[test]
    fn bad_params_are_errors() {
        assert!(matches!(
            CountingBloomFilter::with_params(0, 3),
            Err(Error::InvalidParameter {
                name: "num_counters",
                ..
            })
        ));
        assert!(matches!(
            CountingBloomFilter::with_params(64, 0),
            Err(Error::InvalidNumHashes { .. })
        ));
        assert!(matches!(
            CountingBloomFilter::with_params(64, 65),
            Err(Error::InvalidNumHashes { .. })
        ));
        for n in [u64::MAX, u64::MAX - 70, 1 << 62] {
            assert!(matches!(
                CountingBloomFilter::with_params(n, 3),
                Err(Error::TooLarge { .. }) | Err(Error::OutOfMemory { .. })
            ));
        }
        for p in [0.0, 1.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(matches!(
                CountingBloomFilter::new(10, p),
                Err(Error::InvalidFpRate { .. })
            ));
        }
        assert!(matches!(
            CountingBloomFilter::new(10, 1e-30),
            Err(Error::FpRateTooSmall { .. })
        ));
        assert_eq!(
            CountingBloomFilter::new(0, 0.01).unwrap(),
            CountingBloomFilter::new(1, 0.01).unwrap()
        );
    }
}
