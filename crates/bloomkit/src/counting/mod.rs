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
//!
//! The files: this one has the type and its operations; `counters.rs` the counters' layout
//! in words (sixteen 4-bit counters to a `u64`) and the word-at-a-time arithmetic on them;
//! `builder.rs` [`CountingBuilder`], the plan (a classic filter's, counter for bit);
//! `batch.rs` the batched operations; `persist.rs` the file format (kind 3); `tests.rs` the
//! unit tests. The probe positions are the classic filter's
//! ([`ClassicProbes`](crate::ClassicProbes)), called, not repeated.

use std::fmt;

use crate::bits::try_vec;
use crate::classic::ClassicProbes;
use crate::error::{Error, Result};
use crate::format::FilterKind;
use crate::key::{Key, KeyHasher};
use crate::sizing;
use crate::{BloomFilter, Filter};

mod batch;
mod builder;
mod counters;
mod persist;
#[cfg(test)]
mod tests;

pub use self::builder::CountingBuilder;
use self::counters::{
    gather_counter_bits, nonzero_counters, saturated_counters, saturating_add_counters, slot,
    COUNTERS_PER_WORD, COUNTER_MAX,
};

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
/// assert_eq!(f.len(), 50_000);
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
    hasher: KeyHasher,
    item_count: u64,
    /// How the probes are derived: [`BloomFilter`]'s, and the same as its projection's.
    probes: ClassicProbes,
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
        Self::builder(items, fp_rate).build()
    }

    /// Starts from [`new`](Self::new)'s plan for `items` keys at `fp_rate` (a classic
    /// filter's, counter for bit), to change any of it before
    /// [`build`](CountingBuilder::build): the seed, the exact number of counters, the
    /// number of probes.
    ///
    /// # Examples
    ///
    /// ```
    /// use bloomkit::CountingBloomFilter;
    ///
    /// let mut f = CountingBloomFilter::builder(100, 0.01).seed(42).build()?;
    /// f.insert_hash(bloomkit::hash_with_seed("k", 42));
    /// assert!(f.contains("k") && f.seed() == 42);
    ///
    /// let f = CountingBloomFilter::builder(100, 0.01).num_counters(1000).num_hashes(5).build()?;
    /// assert_eq!((f.num_counters(), f.num_hashes()), (1024, 5));
    /// assert!(CountingBloomFilter::builder(100, 0.01).num_counters(0).build().is_err());
    /// assert!(CountingBloomFilter::builder(100, 0.01).num_hashes(0).build().is_err());
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn builder(items: u64, fp_rate: f64) -> CountingBuilder {
        CountingBuilder::new(items, fp_rate)
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
    /// Each key is inserted once for each time `keys` yields it, as
    /// [`insert`](Self::insert) counts copies.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut f = bloomkit::CountingBloomFilter::from_keys(["a", "b", "a"], 0.01)?;
    /// assert_eq!(f.len(), 3);
    /// assert!(f.remove("a") && f.contains("a")); // one copy of two left
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

    /// A filter of `num_counters` counters (rounded up to a multiple of 64) and `num_hashes`
    /// probes, hashing keys with `hasher`: what the builder builds.
    ///
    /// Errors: [`Error::InvalidParameter`] for zero counters; [`Error::InvalidNumHashes`]
    /// outside `1..=`[`sizing::MAX_NUM_HASHES`]; [`Error::TooLarge`] or
    /// [`Error::OutOfMemory`].
    pub(crate) fn with_params_and_hasher(
        num_counters: u64,
        num_hashes: u32,
        hasher: KeyHasher,
        probes: ClassicProbes,
    ) -> Result<Self> {
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
            hasher,
            item_count: 0,
            probes,
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
    #[inline(always)]
    pub fn insert<K: Key + ?Sized>(&mut self, key: &K) -> bool {
        self.insert_hash(self.hasher.hash(key))
    }

    /// [`insert`](Self::insert) by a precomputed hash (from this filter's
    /// [`key_hasher`](Self::key_hasher)).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut f = bloomkit::CountingBloomFilter::new(100, 0.01)?;
    /// f.insert_hash(bloomkit::hash("a"));
    /// assert!(f.contains("a"));
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    #[inline(always)]
    pub fn insert_hash(&mut self, hash: u64) -> bool {
        let mut was_absent = false;
        let counters = &mut self.counters;
        self.probes
            .for_each(hash, self.num_counters, self.num_hashes, |index| {
                let (w, shift) = slot(index);
                let word = &mut counters[w];
                let count = (*word >> shift) & COUNTER_MAX;
                was_absent |= count == 0;
                // Only below the maximum: 15 + 1 would carry into the next counter's bits.
                if count < COUNTER_MAX {
                    *word += 1 << shift;
                }
            });
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
    #[inline(always)]
    pub fn contains<K: Key + ?Sized>(&self, key: &K) -> bool {
        self.contains_hash(self.hasher.hash(key))
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
    #[inline(always)]
    pub fn contains_hash(&self, hash: u64) -> bool {
        self.probes
            .all(hash, self.num_counters, self.num_hashes, |index| {
                self.counter(index) != 0
            })
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
    /// assert_eq!(f.len(), 1);
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    #[inline]
    pub fn remove<K: Key + ?Sized>(&mut self, key: &K) -> bool {
        self.remove_hash(self.hasher.hash(key))
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
        let counters = &mut self.counters;
        self.probes
            .for_each(hash, self.num_counters, self.num_hashes, |index| {
                let (w, shift) = slot(index);
                let word = &mut counters[w];
                let count = (*word >> shift) & COUNTER_MAX;
                // A saturated counter no longer knows how many keys it holds: it stays, so
                // none of them can be forgotten. A zero can only be a probe this key repeats,
                // already taken down (from 1, so the key was never inserted); subtracting
                // would borrow from the next counter.
                if count != 0 && count != COUNTER_MAX {
                    *word -= 1 << shift;
                }
            });
        self.item_count = self.item_count.saturating_sub(1);
        true
    }

    #[inline]
    fn counter(&self, index: u64) -> u64 {
        let (w, shift) = slot(index);
        (self.counters[w] >> shift) & COUNTER_MAX
    }

    /// Forgets every key, keeping the memory: every counter zero and [`len`](Self::len) 0,
    /// the filter [`new`](Self::new) made.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut f = bloomkit::CountingBloomFilter::new(100, 0.01)?;
    /// f.insert("a");
    /// f.clear();
    /// assert!(!f.contains("a") && f.is_empty());
    /// assert_eq!(f, bloomkit::CountingBloomFilter::new(100, 0.01)?);
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn clear(&mut self) {
        self.counters.fill(0);
        self.item_count = 0;
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

    /// How the probes are derived from a key's hash ([`BloomFilter::probes`]'s meaning):
    /// [`ClassicProbes::Rotating`] for a new filter, what its file says for a loaded one.
    pub fn probes(&self) -> ClassicProbes {
        self.probes
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
    /// assert_eq!(f.len(), 2);
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn len(&self) -> u64 {
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
    /// let f = bloomkit::CountingBloomFilter::builder(0, 0.01).num_counters(1 << 20).num_hashes(7).build()?;
    /// assert_eq!(f.memory_bytes(), (1 << 19) + std::mem::size_of_val(&f));
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn memory_bytes(&self) -> usize {
        std::mem::size_of::<Self>() + self.counters.capacity() * std::mem::size_of::<u64>()
    }

    /// The classic [`BloomFilter`] with a bit set wherever this filter has a nonzero counter:
    /// it answers every query exactly as this filter does, in a quarter of the memory, but
    /// cannot remove. Its item count is this filter's [`len`](Self::len).
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
            self.hasher,
            self.item_count,
            self.probes,
        ))
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
    /// assert_eq!(a.len(), 3);
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
}

crate::bits::bit_array_methods!(
    CountingBloomFilter,
    same: [
        "number of counters" => num_counters,
        "number of hashes" => num_hashes,
        "probe derivation" => probes.code,
    ],
);

/// Inserts one copy of every key, as [`insert`](CountingBloomFilter::insert) one by one.
///
/// ```
/// let mut f = bloomkit::CountingBloomFilter::new(100, 0.01)?;
/// f.extend(["a", "a", "b"]);
/// assert_eq!(f.len(), 3);
/// # Ok::<(), bloomkit::Error>(())
/// ```
impl<K: Key> Extend<K> for CountingBloomFilter {
    fn extend<I: IntoIterator<Item = K>>(&mut self, keys: I) {
        for key in keys {
            self.insert(&key);
        }
    }
}

impl PartialEq for CountingBloomFilter {
    /// Equal when they have the same parameters and the same counters; the item count, a
    /// statistic, is not compared.
    fn eq(&self, other: &Self) -> bool {
        self.num_counters == other.num_counters
            && self.num_hashes == other.num_hashes
            && self.hasher == other.hasher
            && self.probes == other.probes
            && self.counters == other.counters
    }
}

impl Eq for CountingBloomFilter {}

impl fmt::Debug for CountingBloomFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CountingBloomFilter")
            .field("num_counters", &self.num_counters)
            .field("num_hashes", &self.num_hashes)
            .field("hasher", &self.hasher)
            .field("item_count", &self.item_count)
            .finish_non_exhaustive()
    }
}

impl Filter for CountingBloomFilter {
    fn contains_hash(&self, hash: u64) -> bool {
        CountingBloomFilter::contains_hash(self, hash)
    }
    fn key_hasher(&self) -> KeyHasher {
        self.hasher
    }
    fn kind(&self) -> FilterKind {
        FilterKind::Counting
    }
    fn memory_bytes(&self) -> usize {
        CountingBloomFilter::memory_bytes(self)
    }
    fn len(&self) -> u64 {
        CountingBloomFilter::len(self)
    }
    fn estimated_fp_rate(&self) -> f64 {
        CountingBloomFilter::estimated_fp_rate(self)
    }
}
