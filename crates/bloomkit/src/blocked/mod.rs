//! [`BlockedBloomFilter`]: every probe of a key inside one 64-byte cache line.
//!
//! This file has the type and its operations. The layout itself is in `probe.rs` (which
//! line, which bits), its query and insert kernels in `kernel.rs` (portable, or `avx2.rs`
//! where the CPU has it), the batched operations' walk in `batch.rs`, and the file format in
//! `persist.rs`; the view of a file's bytes is `view.rs`, whose query kernel over a line
//! at any address is `unaligned.rs`. Calls go one way: this file (and `view.rs`) → `kernel`
//! (`unaligned`) → `probe`/`avx2`.

#[cfg(all(target_arch = "x86_64", not(miri)))]
pub(crate) mod avx2;
mod batch;
mod builder;
pub(crate) mod kernel;
mod persist;
pub(crate) mod probe;
mod unaligned;
mod view;

pub(crate) use self::batch::{
    answer_slots, for_each_hash_batch, for_each_key_batch, for_each_line_prefetched,
    for_each_line_prefetched_mut,
};
// The parallel build's walk (`parallel.rs`) prefetches lines of its own shard.
#[cfg(feature = "parallel")]
pub(crate) use self::batch::{for_each_prefetched, Step};
pub use self::builder::BlockedBuilder;
pub(crate) use self::probe::line_index;
pub use self::probe::BlockedProbes;
pub use self::view::BlockedBloomFilterRef;

use std::fmt;

use crate::bits::{Line, LineArray};
use crate::error::{Error, Result};
use crate::format::FilterKind;
use crate::key::{Key, KeyHasher};
use crate::sizing::{self, LINE_BITS};
use crate::Filter;

/// The rate a query for an absent key risks now: the mean over lines of (ones/512)^k, which
/// is exact for this filter's bits (a query picks a line at random, then k bits in it).
pub(crate) fn lines_fp_rate(lines: impl Iterator<Item = Line>, num_hashes: u32) -> f64 {
    let mut sum = 0.0;
    let mut n = 0u64;
    for line in lines {
        let ones: u32 = line.0.iter().map(|w| w.count_ones()).sum();
        sum += (ones as f64 / LINE_BITS as f64).powi(num_hashes as i32);
        n += 1;
    }
    if n == 0 {
        1.0
    } else {
        sum / n as f64
    }
}

/// Distinct keys, estimated line by line (Swamidass & Baldi per line, summed): loads differ
/// from line to line, so one global fill would undercount.
pub(crate) fn lines_estimated_count(lines: impl Iterator<Item = Line>, num_hashes: u32) -> u64 {
    let mut total = 0.0;
    for line in lines {
        let ones: u32 = line.0.iter().map(|w| w.count_ones()).sum();
        total += sizing::estimated_count(ones as u64, LINE_BITS, num_hashes) as f64;
    }
    total.round() as u64
}

/// Checked sizes for the blocked layouts: the number of lines and of probes.
pub(crate) fn blocked_params(num_bits: u64, num_hashes: u32) -> Result<u64> {
    if num_bits == 0 {
        return Err(Error::ZeroBits);
    }
    sizing::check_num_hashes(num_hashes)?;
    Ok(num_bits.div_ceil(LINE_BITS))
}

/// A blocked Bloom filter: the key's hash picks one 512-bit, cache-aligned line, and all k
/// probes fall inside it.
///
/// One cache miss per query instead of up to k, so on filters larger than the cache it is
/// several times faster than [`crate::BloomFilter`], for about 3% more memory at 1% (the
/// loads of lines vary, and overloaded lines cost more than underloaded ones save).
/// [`new`](Self::new) sizes it so that its *achieved* rate meets the target, with the probe
/// count that is best for a 512-bit line (6 at 1%, where the classic formula says 7).
///
/// This is RocksDB's FastLocalBloom layout, with a line chosen from all 64 bits of the hash.
///
/// # Examples
///
/// ```
/// use bloomkit::BlockedBloomFilter;
///
/// let mut f = BlockedBloomFilter::new(1_000_000, 0.01)?;
/// assert_eq!(f.num_hashes(), 6);
/// let bits_per_key = f.num_bits() as f64 / 1e6;
/// assert!((9.8..10.0).contains(&bits_per_key), "{bits_per_key}");
/// f.insert("apple");
/// assert!(f.contains("apple"));
/// assert!(!f.contains("pear"));
/// # Ok::<(), bloomkit::Error>(())
/// ```
#[derive(Clone)]
pub struct BlockedBloomFilter {
    lines: LineArray,
    num_hashes: u32,
    probes: BlockedProbes,
    hasher: KeyHasher,
    item_count: u64,
}

impl BlockedBloomFilter {
    /// A filter sized so that its predicted rate with `items` keys is at most `fp_rate`, with
    /// the probe count best for its lines ([`sizing::blocked_plan`]). `items = 0` is treated
    /// as 1.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidFpRate`] unless `0 < fp_rate < 1`; [`Error::FpRateTooSmall`];
    /// [`Error::TooLarge`] or [`Error::OutOfMemory`] if the filter does not fit.
    pub fn new(items: u64, fp_rate: f64) -> Result<Self> {
        Self::builder(items, fp_rate).build()
    }

    /// Starts from [`new`](Self::new)'s plan for `items` keys at `fp_rate`, to change any of
    /// it before [`build`](BlockedBuilder::build): the seed, the exact number of bits, the
    /// number of probes, the probe derivation.
    ///
    /// # Examples
    ///
    /// ```
    /// use bloomkit::BlockedBloomFilter;
    ///
    /// let f = BlockedBloomFilter::builder(1000, 0.01).seed(7).build()?;
    /// assert_eq!(f.seed(), 7);
    /// assert_eq!(f.num_bits(), BlockedBloomFilter::new(1000, 0.01)?.num_bits());
    ///
    /// // An exact shape: bits (rounded up to whole 512-bit lines) and probes.
    /// let f = BlockedBloomFilter::builder(1000, 0.01).num_bits(1000).num_hashes(6).build()?;
    /// assert_eq!((f.num_bits(), f.num_hashes()), (1024, 6));
    /// assert!(BlockedBloomFilter::builder(1000, 0.01).num_hashes(0).build().is_err());
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn builder(items: u64, fp_rate: f64) -> BlockedBuilder {
        BlockedBuilder::new(items, fp_rate)
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
    /// let keys: Vec<String> = (0..1000).map(|i| format!("user:{i}")).collect();
    /// let f = bloomkit::BlockedBloomFilter::from_keys(&keys, 0.01)?;
    /// assert!(keys.iter().all(|k| f.contains(k)));
    /// assert_eq!(f.num_bits(), bloomkit::BlockedBloomFilter::new(1000, 0.01)?.num_bits());
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn from_keys<I>(keys: I, fp_rate: f64) -> Result<Self>
    where
        I: IntoIterator,
        I::Item: Key,
    {
        let hashes = KeyHasher::default().hash_all(keys)?;
        let mut f = Self::new(hashes.len() as u64, fp_rate)?;
        f.insert_many_hashes(&hashes);
        Ok(f)
    }

    /// [`new`](Self::new) with a given key hasher, for the kinds built of these filters.
    pub(crate) fn new_with_hasher(
        items: u64,
        fp_rate: f64,
        hasher: KeyHasher,
        probes: BlockedProbes,
    ) -> Result<Self> {
        let plan = sizing::blocked_plan(items, fp_rate)?;
        Self::with_params_and_hasher(plan.num_bits, plan.num_hashes, hasher, probes)
    }

    /// A filter of `num_bits` bits (rounded up to whole 512-bit lines) and `num_hashes`
    /// probes derived by `probes`, hashing keys with `hasher`: what the builder builds, and
    /// what the kinds built of blocked filters make, with their own (perhaps bloomkit 0.1's)
    /// feed and derivation.
    ///
    /// Errors: [`Error::ZeroBits`]; [`Error::InvalidNumHashes`] outside
    /// `1..=`[`sizing::MAX_NUM_HASHES`]; [`Error::TooLarge`] or [`Error::OutOfMemory`].
    pub(crate) fn with_params_and_hasher(
        num_bits: u64,
        num_hashes: u32,
        hasher: KeyHasher,
        probes: BlockedProbes,
    ) -> Result<Self> {
        let num_lines = blocked_params(num_bits, num_hashes)?;
        Ok(BlockedBloomFilter {
            lines: LineArray::zeroed(num_lines)?,
            num_hashes,
            probes,
            hasher,
            item_count: 0,
        })
    }

    pub(crate) fn from_parts(
        lines: LineArray,
        num_hashes: u32,
        probes: BlockedProbes,
        hasher: KeyHasher,
        items: u64,
    ) -> Self {
        BlockedBloomFilter {
            lines,
            num_hashes,
            probes,
            hasher,
            item_count: items,
        }
    }

    pub(crate) fn lines(&self) -> &LineArray {
        &self.lines
    }

    /// The lines to write and the insert counter, borrowed together.
    #[cfg(feature = "parallel")]
    pub(crate) fn lines_and_count_mut(&mut self) -> (&mut [Line], &mut u64) {
        (self.lines.lines_mut(), &mut self.item_count)
    }

    /// Forgets every key, keeping the memory: every bit zero and [`len`](Self::len) 0, the
    /// filter [`new`](Self::new) made. (An aging filter recycles its oldest generation this
    /// way, so a rotation never allocates.)
    ///
    /// # Examples
    ///
    /// ```
    /// let mut f = bloomkit::BlockedBloomFilter::new(100, 0.01)?;
    /// f.insert("a");
    /// f.clear();
    /// assert!(!f.contains("a") && f.is_empty());
    /// assert_eq!(f, bloomkit::BlockedBloomFilter::new(100, 0.01)?);
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
        let key = self.probes.key(hash);
        let changed = kernel::insert_into_line(self.lines.line_mut(index), key, self.num_hashes);
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
        kernel::probes_set_in_line(line, self.probes.key(hash), self.num_hashes)
    }

    /// Answers for many keys at once, appended to `answers` in order: the same answers as
    /// [`contains`](Self::contains), several times faster on a filter larger than the cache.
    ///
    /// The keys are hashed and their lines prefetched 32 at a time, then probed, so the
    /// cache misses of a batch overlap instead of following one another (RocksDB's MultiGet
    /// does the same).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut f = bloomkit::BlockedBloomFilter::new(1000, 0.01)?;
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
        let slots = answer_slots(answers, hashes.len());
        kernel::contains_many(&self.lines, hashes, self.probes, self.num_hashes, slots);
    }

    /// Adds many keys at once, prefetching their lines in batches as
    /// [`contains_many`](Self::contains_many) does; returns how many changed the filter. The
    /// result is the filter that inserting them one by one gives, bit for bit.
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
        let changed = kernel::insert_many(&mut self.lines, hashes, self.probes, self.num_hashes);
        self.item_count += changed;
        changed
    }

    /// Bits in the filter (a multiple of 512).
    pub fn num_bits(&self) -> u64 {
        self.lines.len() as u64 * LINE_BITS
    }

    /// Probes per key.
    pub fn num_hashes(&self) -> u32 {
        self.num_hashes
    }

    /// How the probes are derived from a key's hash: [`BlockedProbes::TwoSeeds`] for a new
    /// filter, [`BlockedProbes::OneSeed`] for one read from a file written before it existed.
    pub fn probes(&self) -> BlockedProbes {
        self.probes
    }

    /// How many inserts changed the filter: keys seen for the first time, less the few that
    /// were already false positives. After [`union`](Self::union) or
    /// [`intersect`](Self::intersect), the fill-based [`estimated_count`](Self::estimated_count).
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

    /// The number of distinct keys inserted, estimated from the fill of each line.
    ///
    /// ```
    /// let mut f = bloomkit::BlockedBloomFilter::new(10_000, 0.01)?;
    /// for i in 0..5_000u32 { f.insert(&i); }
    /// let est = f.estimated_count();
    /// assert!(est.abs_diff(5_000) < 100, "{est}");
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn estimated_count(&self) -> u64 {
        lines_estimated_count(self.lines.lines().iter().copied(), self.num_hashes)
    }

    /// The false-positive rate a query for an absent key risks now: the mean over lines of
    /// (ones in the line / 512)^k.
    pub fn estimated_fp_rate(&self) -> f64 {
        lines_fp_rate(self.lines.lines().iter().copied(), self.num_hashes)
    }

    /// Bytes of memory the filter holds.
    pub fn memory_bytes(&self) -> usize {
        std::mem::size_of::<Self>() + self.lines.memory_bytes()
    }
}

crate::bits::bit_array_methods!(
    BlockedBloomFilter,
    same: [
        "number of bits" => num_bits,
        "number of hashes" => num_hashes,
        "probe derivation" => probes.code,
    ],
    set_ops: lines,
);

/// Inserts every key, as [`insert`](BlockedBloomFilter::insert) one by one would (the same
/// bits and count), hashing a batch at a time and inserting it as
/// [`insert_many`](BlockedBloomFilter::insert_many) does, with its lines prefetched.
///
/// ```
/// let mut f = bloomkit::BlockedBloomFilter::new(1000, 0.01)?;
/// f.extend((0..500u32).map(|i| i * 2));
/// assert!(f.contains(&998u32) && f.len() > 490);
/// # Ok::<(), bloomkit::Error>(())
/// ```
impl<K: Key> Extend<K> for BlockedBloomFilter {
    fn extend<I: IntoIterator<Item = K>>(&mut self, keys: I) {
        for_each_key_batch(keys, self.hasher, |hashes| {
            self.insert_many_hashes(hashes);
        });
    }
}

impl PartialEq for BlockedBloomFilter {
    /// Equal when they have the same parameters and the same bits; the item count, a
    /// statistic, is not compared.
    fn eq(&self, other: &Self) -> bool {
        self.num_hashes == other.num_hashes
            && self.probes == other.probes
            && self.hasher == other.hasher
            && self.lines == other.lines
    }
}

impl Eq for BlockedBloomFilter {}

impl fmt::Debug for BlockedBloomFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BlockedBloomFilter")
            .field("num_bits", &self.num_bits())
            .field("num_hashes", &self.num_hashes)
            .field("probes", &self.probes)
            .field("hasher", &self.hasher)
            .field("item_count", &self.item_count)
            .finish_non_exhaustive()
    }
}

impl Filter for BlockedBloomFilter {
    fn contains_hash(&self, hash: u64) -> bool {
        BlockedBloomFilter::contains_hash(self, hash)
    }
    fn key_hasher(&self) -> KeyHasher {
        self.hasher
    }
    fn kind(&self) -> FilterKind {
        FilterKind::Blocked
    }
    fn memory_bytes(&self) -> usize {
        BlockedBloomFilter::memory_bytes(self)
    }
    fn len(&self) -> u64 {
        BlockedBloomFilter::len(self)
    }
    fn estimated_fp_rate(&self) -> f64 {
        BlockedBloomFilter::estimated_fp_rate(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sized_for_its_achieved_rate() {
        let f = BlockedBloomFilter::new(1_000_000, 0.01).unwrap();
        let predicted = sizing::blocked_fp_rate(1_000_000, f.num_bits(), f.num_hashes());
        assert!(predicted <= 0.01);
        assert!(f.num_bits() > sizing::optimal_num_bits(1_000_000, 0.01).unwrap());
    }

    #[test]
    fn bad_params_are_errors() {
        assert!(matches!(
            BlockedBloomFilter::builder(0, 0.01)
                .num_bits(0)
                .num_hashes(3)
                .build(),
            Err(Error::ZeroBits)
        ));
        assert!(matches!(
            BlockedBloomFilter::builder(0, 0.01)
                .num_bits(512)
                .num_hashes(0)
                .build(),
            Err(Error::InvalidNumHashes { .. })
        ));
        assert!(BlockedBloomFilter::new(10, f64::NAN).is_err());
        let f = BlockedBloomFilter::builder(0, 0.01)
            .num_bits(1)
            .num_hashes(3)
            .build()
            .unwrap();
        assert_eq!(f.num_bits(), 512);
    }

    /// `extend` hashes and inserts a batch at a time; the filter and its count are those of
    /// inserting one by one, for lengths on both sides of a batch.
    #[test]
    fn extend_is_insert_one_by_one() {
        for n in [0u64, 1, 31, 32, 33, 1000] {
            let mut one_by_one = BlockedBloomFilter::new(500, 0.01).unwrap();
            let mut extended = one_by_one.clone();
            for i in 0..n {
                one_by_one.insert(&i);
            }
            extended.extend(0..n);
            assert_eq!(extended, one_by_one, "{n}");
            assert_eq!(extended.len(), one_by_one.len(), "{n}");
        }
    }

    #[test]
    fn estimates_track_the_contents() {
        let mut f = BlockedBloomFilter::new(100_000, 0.01).unwrap();
        assert_eq!(f.estimated_count(), 0);
        assert_eq!(f.estimated_fp_rate(), 0.0);
        for i in 0..100_000u64 {
            f.insert(&i);
        }
        let est = f.estimated_count();
        assert!(est.abs_diff(100_000) < 2_000, "{est}");
        let rate = f.estimated_fp_rate();
        assert!((0.007..0.012).contains(&rate), "{rate}");
    }
}
