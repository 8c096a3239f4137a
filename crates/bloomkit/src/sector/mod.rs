//! [`SectorBloomFilter`]: a key's bits in one 64-byte line, the same number in each of its
//! eight 64-bit words.
//!
//! This file has the type and its operations. The layout (which line, which bits) is in
//! `layout.rs`, the insert and query kernels in `kernel.rs` (portable, or `avx2.rs` or
//! `avx512.rs` where the CPU has it), the file format in `persist.rs`. Calls go one way: this
//! file → `kernel` → `layout`/`avx2`/`avx512`; the line's choice and the batched walk are the
//! blocked layout's.

#[cfg(all(target_arch = "x86_64", not(miri)))]
mod avx2;
#[cfg(all(target_arch = "x86_64", not(miri)))]
mod avx512;
mod builder;
mod kernel;
pub(crate) mod layout;
mod persist;

pub use self::builder::SectorBuilder;

use std::fmt;

use self::kernel::Kernel;
use crate::bits::{Line, LineArray, LINE_WORDS};
use crate::blocked::{
    blocked_params, for_each_hash_batch, for_each_key_batch, for_each_line_prefetched,
    for_each_line_prefetched_mut, line_index,
};
use crate::error::{Error, Result};
use crate::format::FilterKind;
use crate::key::{Key, KeyHasher};
use crate::sizing::{self, LINE_BITS};
use crate::Filter;

/// Checks a sector filter's probe count (a multiple of 8 up to
/// [`sizing::MAX_NUM_HASHES`]) and returns its bits per word.
pub(crate) fn bits_per_word(num_hashes: u32) -> Result<u32> {
    let words = LINE_WORDS as u32;
    if num_hashes == 0 || !num_hashes.is_multiple_of(words) || num_hashes > sizing::MAX_NUM_HASHES {
        return Err(Error::InvalidSectorNumHashes { num_hashes });
    }
    Ok(num_hashes / words)
}

/// A sectored blocked Bloom filter: the key's hash picks one 512-bit, cache-aligned line,
/// and sets one bit (or, for low rates, a few) in each of the line's eight 64-bit words.
///
/// The fastest filter to insert into: with the same number of bits in every word, a key's
/// whole 512-bit mask is built in registers from one multiply (eight probe values at once
/// with AVX2 or AVX-512) and ORed into the line, with no loop over probes. A query is the
/// same mask and one test. The price is accuracy per bit: eight probes, one per word, are a
/// little less even than the blocked filter's six anywhere in the line, so at 1% it needs
/// about 10.1 bits per key where [`crate::BlockedBloomFilter`] needs 9.93 (and a classic
/// filter 9.59). [`new`](Self::new) sizes it for its achieved rate
/// ([`sizing::sector_fp_rate`]), choosing how many bits per word (8 probes per key at 1%,
/// 16 from about 0.05% down).
///
/// Choose it where inserts dominate; [`crate::BlockedBloomFilter`] answers queries as
/// fast and is 2% smaller.
///
/// # Examples
///
/// ```
/// use bloomkit::SectorBloomFilter;
///
/// let mut f = SectorBloomFilter::new(1_000_000, 0.01)?;
/// assert_eq!(f.num_hashes(), 8);
/// let bits_per_key = f.num_bits() as f64 / 1e6;
/// assert!((10.0..10.3).contains(&bits_per_key), "{bits_per_key}");
/// f.insert("apple");
/// assert!(f.contains("apple"));
/// assert!(!f.contains("pear"));
/// # Ok::<(), bloomkit::Error>(())
/// ```
#[derive(Clone)]
pub struct SectorBloomFilter {
    lines: LineArray,
    /// Bits a key sets in each word: `num_hashes / 8`.
    per_word: u32,
    hasher: KeyHasher,
    item_count: u64,
    /// Chosen when the filter is made, so an insert does not ask the CPU again.
    kernel: Kernel,
}

impl SectorBloomFilter {
    /// A filter sized so that its predicted rate with `items` keys is at most `fp_rate`
    /// ([`sizing::sector_plan`]). `items = 0` is treated as 1.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidFpRate`] unless `0 < fp_rate < 1`; [`Error::FpRateTooSmall`];
    /// [`Error::TooLarge`] or [`Error::OutOfMemory`] if the filter does not fit.
    pub fn new(items: u64, fp_rate: f64) -> Result<Self> {
        Self::builder(items, fp_rate).build()
    }

    /// Starts from [`new`](Self::new)'s plan, to change any of it before
    /// [`build`](SectorBuilder::build): the seed, the exact number of bits, the number of
    /// probes (a multiple of 8).
    ///
    /// # Examples
    ///
    /// ```
    /// use bloomkit::SectorBloomFilter;
    ///
    /// let f = SectorBloomFilter::builder(1000, 0.01).num_bits(1000).num_hashes(16).build()?;
    /// assert_eq!((f.num_bits(), f.num_hashes()), (1024, 16));
    /// // Every word gets the same number of bits, so the probes come in eights.
    /// assert!(SectorBloomFilter::builder(1000, 0.01).num_hashes(6).build().is_err());
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn builder(items: u64, fp_rate: f64) -> SectorBuilder {
        SectorBuilder::new(items, fp_rate)
    }

    /// A filter of `num_bits` bits (rounded up to whole 512-bit lines) and `num_hashes`
    /// probes (a multiple of 8), hashing keys with `hasher`.
    ///
    /// Errors: [`Error::ZeroBits`]; [`Error::InvalidSectorNumHashes`];
    /// [`Error::TooLarge`] or [`Error::OutOfMemory`].
    pub(crate) fn with_params_and_hasher(
        num_bits: u64,
        num_hashes: u32,
        hasher: KeyHasher,
    ) -> Result<Self> {
        let per_word = bits_per_word(num_hashes)?;
        let num_lines = blocked_params(num_bits, num_hashes)?;
        Ok(Self::from_parts(
            LineArray::zeroed(num_lines)?,
            per_word,
            hasher,
            0,
        ))
    }

    pub(crate) fn from_parts(
        lines: LineArray,
        per_word: u32,
        hasher: KeyHasher,
        items: u64,
    ) -> Self {
        SectorBloomFilter {
            lines,
            per_word,
            hasher,
            item_count: items,
            kernel: Kernel::detect(),
        }
    }

    /// Forgets every key, keeping the memory.
    ///
    /// ```
    /// let mut f = bloomkit::SectorBloomFilter::new(100, 0.01)?;
    /// f.insert("a");
    /// f.clear();
    /// assert!(!f.contains("a") && f.is_empty());
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn clear(&mut self) {
        for index in 0..self.lines.len() {
            *self.lines.line_mut(index) = Line::default();
        }
        self.item_count = 0;
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
        let index = line_index(hash, self.lines.len());
        let changed = self
            .kernel
            .insert(self.lines.line_mut(index), hash, self.per_word);
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
        let line = self.lines.line(line_index(hash, self.lines.len()));
        self.kernel.probes_set(line, hash, self.per_word)
    }

    /// Answers for many keys at once, appended to `answers` in order: the same answers as
    /// [`contains`](Self::contains), with the keys' lines prefetched 32 ahead.
    ///
    /// ```
    /// let mut f = bloomkit::SectorBloomFilter::new(1000, 0.01)?;
    /// f.insert_many(&["a", "b"]);
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
        let (kernel, per_word) = (self.kernel, self.per_word);
        for_each_line_prefetched(
            &self.lines,
            hashes,
            #[inline(always)]
            |line, hash| answers.push(kernel.probes_set(line, hash, per_word)),
        );
    }

    /// Adds many keys at once, their lines prefetched 32 ahead; returns how many changed the
    /// filter. The result is the filter that inserting them one by one gives, bit for bit.
    pub fn insert_many<K: Key>(&mut self, keys: &[K]) -> u64 {
        let hasher = self.hasher;
        let mut changed = 0;
        for_each_hash_batch(keys, hasher, |hashes| {
            changed += self.insert_many_hashes(hashes)
        });
        changed
    }

    /// [`insert_many`](Self::insert_many) by precomputed hashes.
    pub fn insert_many_hashes(&mut self, hashes: &[u64]) -> u64 {
        let (kernel, per_word) = (self.kernel, self.per_word);
        let mut changed = 0u64;
        for_each_line_prefetched_mut(
            &mut self.lines,
            hashes,
            #[inline(always)]
            |line, hash| changed += kernel.insert(line, hash, per_word) as u64,
        );
        self.item_count += changed;
        changed
    }

    /// Bits in the filter (a multiple of 512).
    pub fn num_bits(&self) -> u64 {
        self.lines.len() as u64 * LINE_BITS
    }

    /// Probes per key: eight times [`bits_per_word`](Self::bits_per_word).
    pub fn num_hashes(&self) -> u32 {
        self.per_word * LINE_WORDS as u32
    }

    /// The kernel this filter's inserts and queries run, chosen when it was made:
    /// `"avx512"` where the CPU has AVX2, AVX-512F and AVX-512 VPOPCNTDQ, `"avx2"` where it
    /// has AVX2, else `"portable"` (or where [`crate::use_portable_kernel`] was set). All give
    /// the same answers; benchmarks say which ran.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = bloomkit::SectorBloomFilter::new(1000, 0.01)?;
    /// assert!(["avx512", "avx2", "portable"].contains(&f.kernel()));
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn kernel(&self) -> &'static str {
        self.kernel.name()
    }

    /// Bits a key sets in each 64-bit word of its line.
    pub fn bits_per_word(&self) -> u32 {
        self.per_word
    }

    /// How many inserts changed the filter (after [`union`](Self::union) or
    /// [`intersect`](Self::intersect), the fill-based
    /// [`estimated_count`](Self::estimated_count)).
    pub fn len(&self) -> u64 {
        self.item_count
    }

    /// Bits set to one.
    pub fn count_ones(&self) -> u64 {
        self.lines.count_ones()
    }

    /// The fraction of bits set, from 0 to 1.
    pub fn fill_ratio(&self) -> f64 {
        self.count_ones() as f64 / self.num_bits() as f64
    }

    /// The number of distinct keys inserted, estimated from the fill of each word (each key
    /// sets `bits_per_word` bits of every word of its line, so every word estimates the
    /// line's load; their mean is the line's estimate).
    ///
    /// ```
    /// let mut f = bloomkit::SectorBloomFilter::new(10_000, 0.01)?;
    /// for i in 0..5_000u32 { f.insert(&i); }
    /// let est = f.estimated_count();
    /// assert!(est.abs_diff(5_000) < 150, "{est}");
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn estimated_count(&self) -> u64 {
        let per_word = self.per_word as f64;
        let mut total = 0.0;
        for line in self.lines.lines() {
            for word in line.0 {
                // A full word says only "63 keys or more": count it as 63 ones.
                let ones = word.count_ones().min(63) as f64;
                total += -(64.0 / per_word) * (1.0 - ones / 64.0).ln();
            }
        }
        (total / LINE_WORDS as f64).round() as u64
    }

    /// The false-positive rate a query for an absent key risks now: the mean over lines of
    /// the product over words of (ones in the word / 64)^bits_per_word.
    pub fn estimated_fp_rate(&self) -> f64 {
        let n = self.lines.len();
        if n == 0 {
            return 1.0;
        }
        let per_word = self.per_word as i32;
        let sum: f64 = self
            .lines
            .lines()
            .iter()
            .map(|line| {
                line.0
                    .iter()
                    .map(|w| (w.count_ones() as f64 / 64.0).powi(per_word))
                    .product::<f64>()
            })
            .sum();
        sum / n as f64
    }

    /// Bytes of memory the filter holds.
    pub fn memory_bytes(&self) -> usize {
        std::mem::size_of::<Self>() + self.lines.memory_bytes()
    }
}

crate::bits::bit_array_methods!(
    SectorBloomFilter,
    same: [
        "number of bits" => num_bits,
        "number of hashes" => num_hashes,
    ],
    set_ops: lines,
);

/// Inserts every key, as [`insert`](SectorBloomFilter::insert) one by one would, a batch at
/// a time with the lines prefetched.
impl<K: Key> Extend<K> for SectorBloomFilter {
    fn extend<I: IntoIterator<Item = K>>(&mut self, keys: I) {
        for_each_key_batch(keys, self.hasher, |hashes| {
            self.insert_many_hashes(hashes);
        });
    }
}

impl PartialEq for SectorBloomFilter {
    /// Equal when they have the same parameters and the same bits; the item count, a
    /// statistic, and the kernel, a property of the machine, are not compared.
    fn eq(&self, other: &Self) -> bool {
        self.per_word == other.per_word && self.hasher == other.hasher && self.lines == other.lines
    }
}

impl Eq for SectorBloomFilter {}

impl fmt::Debug for SectorBloomFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SectorBloomFilter")
            .field("num_bits", &self.num_bits())
            .field("num_hashes", &self.num_hashes())
            .field("hasher", &self.hasher)
            .field("item_count", &self.item_count)
            .finish_non_exhaustive()
    }
}

impl Filter for SectorBloomFilter {
    fn contains_hash(&self, hash: u64) -> bool {
        SectorBloomFilter::contains_hash(self, hash)
    }
    fn key_hasher(&self) -> KeyHasher {
        self.hasher
    }
    fn kind(&self) -> FilterKind {
        FilterKind::Sector
    }
    fn memory_bytes(&self) -> usize {
        SectorBloomFilter::memory_bytes(self)
    }
    fn len(&self) -> u64 {
        SectorBloomFilter::len(self)
    }
    fn estimated_fp_rate(&self) -> f64 {
        SectorBloomFilter::estimated_fp_rate(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sized_for_its_achieved_rate() {
        let f = SectorBloomFilter::new(1_000_000, 0.01).unwrap();
        let predicted = sizing::sector_fp_rate(1_000_000, f.num_bits(), f.bits_per_word());
        assert!(predicted <= 0.01);
        let fewer = f.num_bits() - LINE_BITS;
        assert!(sizing::sector_fp_rate(1_000_000, fewer, f.bits_per_word()) > 0.01);
    }

    #[test]
    fn probe_counts_come_in_eights() {
        for k in [0u32, 1, 6, 7, 9, 63, 72] {
            assert!(matches!(
                SectorBloomFilter::builder(100, 0.01).num_hashes(k).build(),
                Err(Error::InvalidSectorNumHashes { num_hashes }) if num_hashes == k
            ));
        }
        for k in (8..=64).step_by(8) {
            let f = SectorBloomFilter::builder(100, 0.01)
                .num_hashes(k)
                .build()
                .unwrap();
            assert_eq!(f.num_hashes(), k);
        }
        assert!(matches!(
            SectorBloomFilter::builder(0, 0.01)
                .num_bits(0)
                .num_hashes(8)
                .build(),
            Err(Error::ZeroBits)
        ));
    }

    /// Every inserted key answers yes, `extend` and `insert_many` give the filter of
    /// inserting one by one, and the estimates follow the contents.
    #[test]
    fn inserts_agree_and_estimates_track() {
        let mut one = SectorBloomFilter::new(20_000, 0.01).unwrap();
        let mut many = one.clone();
        let mut extended = one.clone();
        let keys: Vec<u64> = (0..20_000).collect();
        for k in &keys {
            one.insert(k);
        }
        assert_eq!(many.insert_many(&keys), one.len());
        extended.extend(keys.iter().copied());
        assert_eq!(many, one);
        assert_eq!(extended, one);
        assert!(keys.iter().all(|k| one.contains(k)));
        let est = one.estimated_count();
        assert!(est.abs_diff(20_000) < 400, "{est}");
        let rate = one.estimated_fp_rate();
        assert!((0.007..0.012).contains(&rate), "{rate}");
    }
}
