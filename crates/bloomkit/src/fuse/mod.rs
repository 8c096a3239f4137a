//! [`BinaryFuseFilter`]: a static filter built once from all its keys, with the fastest
//! queries of any kind here.
//!
//! `mod.rs` holds the public type and its API; `slots.rs` turns a hash into the key's three
//! slots and fingerprint (the query kernel); `build.rs` sizes the array, peels, assigns and
//! re-seeds; `persist.rs` stores and loads it. The type's documentation explains the design.

mod batch;
mod build;
mod builder;
mod persist;
mod slots;

pub use self::builder::FuseBuilder;

use std::fmt;

use crate::error::{Error, Result};
use crate::format::FilterKind;
use crate::key::{Key, KeyHasher};
use crate::sizing;
use crate::Filter;

use self::build::{BuildPlan, Layout};
use self::slots::{probe, Shape};

/// A binary fuse filter: static, built once from all its keys; a query reads three bytes (or
/// three 16-bit words) and XORs them.
///
/// Build it from any iterator of hashable keys ([`build`](Self::build)) or from their
/// precomputed hashes ([`build_from_hashes`](Self::build_from_hashes)), with 8- or 16-bit
/// fingerprints, then query it with [`contains`](Self::contains). There is no insert: to add
/// keys, build a new filter from the full set. The false-positive rate is 2^−8 (0.39%) with
/// 8-bit fingerprints and 2^−16 (0.0015%) with 16-bit ones, at 9.0 and 18.0 bits per key
/// from about a million keys on (more for fewer keys: 9.6 and 19.2 at 10^5).
///
/// Binary fuse filters (Graf & Lemire, "Binary Fuse Filters: Fast and Smaller Than Xor
/// Filters", 2022) are the fastest static filters: a query is one remix at most, three loads
/// close together and two XORs, with no loop and no branch on the data. A
/// [`RibbonFilter`](crate::RibbonFilter) is smaller (7.3 bits per key for 0.78%, any rate
/// 2^−r), a blocked Bloom filter takes inserts; this one answers fastest, for files written
/// once and read many times.
///
/// # How it works
///
/// The filter is an array of fingerprints cut into segments of `L` slots (a power of two).
/// Each key's hash picks three slots, one in each of three consecutive segments, and an 8- or
/// 16-bit fingerprint; the array is filled so that, for every key, the XOR of its three slots
/// is its fingerprint. A key the filter was not built from matches by chance, with
/// probability 2^−bits.
///
/// Building is *peeling*: a slot that only one key uses can be set last, to whatever that key
/// needs, so that key is removed and the process repeats; if every key goes, the slots are
/// assigned in the reverse order. With three slots per key in consecutive segments (the
/// "fuse" structure) peeling succeeds with an array of only 1.125 slots per key for large
/// key sets. When it gets stuck (a few percent of attempts, and after any repeated key it did
/// not spot), the build draws fresh slots from the same hashes with another *fuse seed*
/// (stored in the file), up to 64 times.
///
/// # Choices
///
/// * **Fingerprint bits** 8 or 16 ([`fingerprint_bits_for`](Self::fingerprint_bits_for)
///   picks the fewer that meet a rate).
/// * **Sizing**: Graf & Lemire's rule (segment length about n^0.83, at most 2^18; 1.125
///   slots per key from 10^6 keys on, more below), the sizes `xorf` and the C reference
///   build, so the bits per key and the rate are theirs.
/// * **Seed 0 uses the key hash as it is**: bloomkit's hash is already uniform, so most
///   filters (those built at the first attempt) skip the remix on every query. Later seeds
///   remix with murmur3's finalizer.
/// * **Build memory**: the keys' hashes (8 bytes each, unless built from hashes), a sorted
///   copy and the peeling order (9 bytes a key), and 13 bytes per slot of counts, XORs and
///   queue: about 32 bytes per key, freed when the build returns.
/// * **Duplicates** are fine: a repeated key is spotted as it is counted and left out, and
///   if one slips through, the retry removes repeats first. [`len`](Self::len) counts them,
///   and the filter is sized for them.
/// * **No keys** builds a filter of no slots that answers "no" to everything.
///
/// # File format
///
/// Kind 8 in bloomkit's format (`docs/FORMAT.md`). Parameters, 16 bytes: fingerprint bits
/// (u32), segment length (u32), segment count (u32), fuse seed (u32). The header's item count
/// is [`len`](Self::len). Payload: the fingerprints, packed little-endian into words. The
/// slots are derived from the key hash exactly as `slots.rs` documents, and golden files pin
/// them.
///
/// # Examples
///
/// ```
/// use bloomkit::BinaryFuseFilter;
///
/// let keys: Vec<u64> = (0..1_000_000).collect();
/// let f = BinaryFuseFilter::build(&keys, 0.01)?;
/// assert!(keys.iter().all(|k| f.contains(k)));
/// assert!((f.bits_per_key() - 9.04).abs() < 0.01, "{}", f.bits_per_key());
///
/// // The measured rate is the promised one, 2^-8.
/// let hits = (1_000_000..2_000_000u64).filter(|k| f.contains(k)).count();
/// let rate = hits as f64 / 1e6;
/// assert!((rate - 1.0 / 256.0).abs() < 0.0004, "{rate}");
///
/// // Store and load.
/// let g = BinaryFuseFilter::from_bytes(&f.to_bytes())?;
/// assert_eq!(f, g);
/// # Ok::<(), bloomkit::Error>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct BinaryFuseFilter {
    fingerprints: Fingerprints,
    /// What turns a hash into slots; derived from the layout and the fuse seed.
    shape: Shape,
    layout: Layout,
    fuse_seed: u32,
    /// The seed and key feed keys are hashed with.
    hasher: KeyHasher,
    /// Keys the filter was built from, duplicates included.
    len: u64,
}

/// The fingerprint array, in its width.
#[derive(Clone, PartialEq, Eq)]
enum Fingerprints {
    Eight(Vec<u8>),
    Sixteen(Vec<u16>),
}

impl Fingerprints {
    fn bits(&self) -> u32 {
        match self {
            Fingerprints::Eight(_) => u8::BITS,
            Fingerprints::Sixteen(_) => u16::BITS,
        }
    }

    fn len(&self) -> usize {
        match self {
            Fingerprints::Eight(f) => f.len(),
            Fingerprints::Sixteen(f) => f.len(),
        }
    }

    fn capacity_bytes(&self) -> usize {
        match self {
            Fingerprints::Eight(f) => f.capacity(),
            Fingerprints::Sixteen(f) => f.capacity() * 2,
        }
    }
}

/// Fails unless `bits` is 8 or 16.
pub(crate) fn check_fingerprint_bits(bits: u32) -> Result<()> {
    if bits == 8 || bits == 16 {
        Ok(())
    } else {
        Err(Error::InvalidParameter {
            name: "fingerprint_bits",
            value: bits.to_string(),
            expected: "8 (a rate of 2^-8, 0.39%) or 16 (2^-16, 0.0015%)",
        })
    }
}

impl BinaryFuseFilter {
    /// Builds a filter holding every key of `items`, at a false-positive rate of at most
    /// `fp_rate`: 8-bit fingerprints (a rate of 2^−8, 0.39%) for rates from 2^−8, 16-bit ones
    /// (2^−16, 0.0015%) for rates from 2^−16 ([`fingerprint_bits_for`](Self::fingerprint_bits_for)).
    ///
    /// Keys are anything hashable, by value or by reference: a reference hashes like the
    /// value it points to, so `&[String]`, `Vec<u64>`, `keys.iter()` and `["a", "b"]` all
    /// work, and the filter answers [`contains`](Self::contains) for the same keys. Duplicate
    /// keys are harmless; each still counts in [`len`](Self::len) and in the size.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidFpRate`] unless `0 < fp_rate < 1`; [`Error::InvalidParameter`] for a
    /// rate below 2^−16, or past about 3.8·10^9 keys (2^32 slots); [`Error::OutOfMemory`] if
    /// the filter or its scratch space does not fit; [`Error::ConstructionFailed`] if 64 fuse
    /// seeds all fail, which does not happen with real hashes (an attempt fails a few percent
    /// of the time).
    ///
    /// # Examples
    ///
    /// ```
    /// use bloomkit::BinaryFuseFilter;
    ///
    /// let words = vec!["apple".to_string(), "pear".to_string(), "apple".to_string()];
    /// let f = BinaryFuseFilter::build(&words, 0.0001)?;
    /// assert_eq!(f.len(), 3); // the duplicate counts
    /// assert!(f.contains("apple") && f.contains("pear"));
    /// assert_eq!(f.fp_rate(), 1.0 / 65536.0);
    /// assert_eq!(BinaryFuseFilter::build(&words, 0.01)?.fingerprint_bits(), 8);
    ///
    /// // No keys: a filter that answers "no" to everything.
    /// let empty = BinaryFuseFilter::build(Vec::<u64>::new(), 0.01)?;
    /// assert!(!empty.contains(&7u64));
    /// assert!(BinaryFuseFilter::build([1, 2], 1e-6).is_err());
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn build<I>(items: I, fp_rate: f64) -> Result<Self>
    where
        I: IntoIterator,
        I::Item: Key,
    {
        Self::builder(fp_rate).build(items)
    }

    /// Builds a filter from the keys' precomputed hashes ([`crate::hash`], the hash under
    /// [`DEFAULT_SEED`](crate::DEFAULT_SEED)), at a false-positive rate of at most `fp_rate`.
    /// Equal hashes are fine (they are the same key as far as the filter can tell).
    ///
    /// # Errors
    ///
    /// As [`build`](Self::build).
    ///
    /// # Examples
    ///
    /// ```
    /// use bloomkit::BinaryFuseFilter;
    ///
    /// let hashes: Vec<u64> = ["a", "b", "c"].iter().map(bloomkit::hash).collect();
    /// let f = BinaryFuseFilter::build_from_hashes(&hashes, 0.01)?;
    /// assert!(f.contains("b") && f.contains_hash(hashes[2]));
    /// assert_eq!(f, BinaryFuseFilter::build(["a", "b", "c"], 0.01)?);
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn build_from_hashes(hashes: &[u64], fp_rate: f64) -> Result<Self> {
        Self::builder(fp_rate).build_from_hashes(hashes)
    }

    /// Starts from [`build`](Self::build)'s plan for a rate of at most `fp_rate`, to change
    /// the seed or the exact fingerprint bits (8 or 16) before
    /// [`build`](FuseBuilder::build) takes the keys (or
    /// [`build_from_hashes`](FuseBuilder::build_from_hashes) their hashes).
    ///
    /// # Examples
    ///
    /// ```
    /// use bloomkit::BinaryFuseFilter;
    ///
    /// let f = BinaryFuseFilter::builder(0.01).fingerprint_bits(16).seed(9).build(0..10u8)?;
    /// assert_eq!((f.fingerprint_bits(), f.seed()), (16, 9));
    /// assert!((0..10u8).all(|k| f.contains(&k)));
    ///
    /// // Hashes made with a seed build a filter that records it.
    /// let hashes: Vec<u64> = (0..10u8).map(|k| bloomkit::hash_with_seed(&k, 9)).collect();
    /// let g = BinaryFuseFilter::builder(0.01).seed(9).build_from_hashes(&hashes)?;
    /// assert!((0..10u8).all(|k| g.contains(&k)));
    /// assert!(BinaryFuseFilter::builder(0.01).fingerprint_bits(12).build([1, 2]).is_err());
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn builder(fp_rate: f64) -> FuseBuilder {
        FuseBuilder::new(fp_rate)
    }

    /// The build behind every constructor; `plan` overrides the layout and the number of
    /// attempts (tests use it to force failures and re-seeding).
    pub(crate) fn build_planned(
        hashes: &[u64],
        fingerprint_bits: u32,
        hasher: KeyHasher,
        plan: Option<BuildPlan>,
    ) -> Result<Self> {
        let len = hashes.len() as u64;
        let plan = match plan {
            Some(plan) => plan,
            None => BuildPlan::for_items(len)?,
        };
        let (layout, fuse_seed, fingerprints) = if fingerprint_bits == 8 {
            let solved = build::solve::<u8>(hashes, plan)?;
            (
                solved.layout,
                solved.fuse_seed,
                Fingerprints::Eight(solved.fingerprints),
            )
        } else {
            let solved = build::solve::<u16>(hashes, plan)?;
            let fingerprints = Fingerprints::Sixteen(solved.fingerprints);
            (solved.layout, solved.fuse_seed, fingerprints)
        };
        Ok(Self::from_parts(
            fingerprints,
            layout,
            fuse_seed,
            hasher,
            len,
        ))
    }

    /// Assembles a filter from checked parts.
    fn from_parts(
        fingerprints: Fingerprints,
        layout: Layout,
        fuse_seed: u32,
        hasher: KeyHasher,
        len: u64,
    ) -> Self {
        BinaryFuseFilter {
            fingerprints,
            shape: Shape::new(layout.segment_length, layout.segment_count, fuse_seed),
            layout,
            fuse_seed,
            hasher,
            len,
        }
    }

    /// The fewest fingerprint bits, 8 or 16, whose rate 2^−bits is at most `fp_rate`: 8 for
    /// rates from 2^−8 (0.39%), 16 for rates from 2^−16 (0.0015%).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidFpRate`] unless `0 < fp_rate < 1`; [`Error::InvalidParameter`] below
    /// 2^−16, which needs a [`RibbonFilter`](crate::RibbonFilter) (any rate down to 2^−32).
    ///
    /// # Examples
    ///
    /// ```
    /// use bloomkit::BinaryFuseFilter;
    /// assert_eq!(BinaryFuseFilter::fingerprint_bits_for(0.01)?, 8);
    /// assert_eq!(BinaryFuseFilter::fingerprint_bits_for(1.0 / 256.0)?, 8);
    /// assert_eq!(BinaryFuseFilter::fingerprint_bits_for(0.001)?, 16);
    /// assert!(BinaryFuseFilter::fingerprint_bits_for(1e-6).is_err());
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn fingerprint_bits_for(fp_rate: f64) -> Result<u32> {
        sizing::check_fp_rate(fp_rate)?;
        match fp_rate {
            p if p >= (-8f64).exp2() => Ok(8),
            p if p >= (-16f64).exp2() => Ok(16),
            _ => Err(Error::unreachable_fp_rate(
                fp_rate,
                "a rate of at least 2^-16 (about 1.53e-5): a binary fuse filter has \
                           8- or 16-bit fingerprints; a ribbon filter goes down to 2^-32",
            )),
        }
    }

    /// `false` if `key` is definitely not one the filter was built from; `true` if it may
    /// be (always, for the keys it was built from).
    ///
    /// # Examples
    ///
    /// ```
    /// let f = bloomkit::BinaryFuseFilter::builder(0.01).fingerprint_bits(16).build(["alice", "bob"])?;
    /// assert!(f.contains("alice"));
    /// assert!(f.contains(&"bob".to_string()));
    /// assert!(!f.contains("carol"));
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    #[inline]
    pub fn contains<K: Key + ?Sized>(&self, key: &K) -> bool {
        self.contains_hash(self.hasher.hash(key))
    }

    /// [`contains`](Self::contains) by a precomputed hash ([`crate::hash_with_seed`] with
    /// this filter's [`seed`](Self::seed)). No allocation; three loads.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = bloomkit::BinaryFuseFilter::build(["alice"], 0.01)?;
    /// assert!(f.contains_hash(bloomkit::hash("alice")));
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    #[inline]
    pub fn contains_hash(&self, hash: u64) -> bool {
        match &self.fingerprints {
            Fingerprints::Eight(f) => probe(f, &self.shape, hash),
            Fingerprints::Sixteen(f) => probe(f, &self.shape, hash),
        }
    }

    /// The number of keys the filter was built from, duplicates included.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = bloomkit::BinaryFuseFilter::build([1, 2, 2, 3], 0.01)?;
    /// assert_eq!(f.len(), 4);
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn len(&self) -> u64 {
        self.len
    }

    /// `true` if the filter was built from no keys (it then answers "no" to everything).
    ///
    /// # Examples
    ///
    /// ```
    /// let f = bloomkit::BinaryFuseFilter::build(Vec::<String>::new(), 0.01)?;
    /// assert!(f.is_empty() && f.num_slots() == 0);
    /// assert!(!f.contains("anything"));
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The bits a filter built from `items` keys with `fingerprint_bits`-bit fingerprints
    /// takes, planned before building (the array's size does not depend on the keys): for
    /// sizing a machine, or a benchmark, without the keys.
    ///
    /// # Errors
    ///
    /// As [`build`](Self::build) for the bits, and for counts past about 3.8·10^9 keys.
    ///
    /// # Examples
    ///
    /// ```
    /// use bloomkit::BinaryFuseFilter;
    /// let keys: Vec<u64> = (0..10_000).collect();
    /// let f = BinaryFuseFilter::builder(0.01).fingerprint_bits(16).build(&keys)?;
    /// assert_eq!(BinaryFuseFilter::planned_bits(10_000, 16)?, f.num_bits());
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn planned_bits(items: u64, fingerprint_bits: u32) -> Result<u64> {
        check_fingerprint_bits(fingerprint_bits)?;
        Ok(build::planned_layout(items)?.num_slots() * u64::from(fingerprint_bits))
    }

    /// Fingerprints in the array: `(segment_count + 2) · segment_length`, about 1.125 per
    /// key for large filters (0 for an empty filter).
    ///
    /// # Examples
    ///
    /// ```
    /// let f = bloomkit::BinaryFuseFilter::build(0..1_000_000u32, 0.01)?;
    /// assert_eq!(f.num_slots(), 1_125_000u64.next_multiple_of(f.segment_length() as u64));
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn num_slots(&self) -> u64 {
        self.fingerprints.len() as u64
    }

    /// Slots per segment: a power of two, at most 2^18. A key's three slots fall in three
    /// consecutive segments.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = bloomkit::BinaryFuseFilter::build(0..100_000u32, 0.01)?;
    /// assert!(f.segment_length().is_power_of_two());
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn segment_length(&self) -> u32 {
        self.layout.segment_length
    }

    /// Segments a key's first slot may fall in: the array holds two more (0 for an empty
    /// filter).
    ///
    /// # Examples
    ///
    /// ```
    /// let f = bloomkit::BinaryFuseFilter::build(0..100_000u32, 0.01)?;
    /// let segments = f.segment_count() as u64 + 2;
    /// assert_eq!(segments * f.segment_length() as u64, f.num_slots());
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn segment_count(&self) -> u32 {
        self.layout.segment_count
    }

    /// Bits per fingerprint: 8 or 16.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(bloomkit::BinaryFuseFilter::builder(0.01).fingerprint_bits(16).build([1])?.fingerprint_bits(), 16);
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn fingerprint_bits(&self) -> u32 {
        self.fingerprints.bits()
    }

    /// The false-positive rate: 2^−[`fingerprint_bits`](Self::fingerprint_bits) for a key
    /// the filter was not built from.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = bloomkit::BinaryFuseFilter::build([1u8], 0.01)?;
    /// assert_eq!(f.fp_rate(), 0.00390625);
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn fp_rate(&self) -> f64 {
        (-f64::from(self.fingerprint_bits())).exp2()
    }

    /// The false-positive rate a query for an absent key risks: [`fp_rate`](Self::fp_rate),
    /// which a static filter delivers from the start, or 0 for a filter built from no keys
    /// (it answers "no" to everything). For code that asks every kind the same question
    /// ([`Filter::estimated_fp_rate`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use bloomkit::BinaryFuseFilter;
    /// let f = BinaryFuseFilter::build(0..100u32, 0.01)?;
    /// assert_eq!(f.estimated_fp_rate(), f.fp_rate());
    /// assert_eq!(BinaryFuseFilter::build(Vec::<u32>::new(), 0.01)?.estimated_fp_rate(), 0.0);
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn estimated_fp_rate(&self) -> f64 {
        if self.is_empty() {
            0.0
        } else {
            self.fp_rate()
        }
    }

    /// Bits of fingerprints: [`num_slots`](Self::num_slots) ×
    /// [`fingerprint_bits`](Self::fingerprint_bits).
    ///
    /// # Examples
    ///
    /// ```
    /// let f = bloomkit::BinaryFuseFilter::build([1, 2, 3], 0.01)?;
    /// assert_eq!(f.num_bits(), f.num_slots() * 8);
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn num_bits(&self) -> u64 {
        self.num_slots() * u64::from(self.fingerprint_bits())
    }

    /// Bits of fingerprints per key built from (0 for an empty filter): 9.0 for 8-bit
    /// fingerprints and 18.0 for 16-bit ones from about a million keys on.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = bloomkit::BinaryFuseFilter::builder(0.01).fingerprint_bits(16).build(0..100_000u32)?;
    /// assert!(f.bits_per_key() < 19.5, "{}", f.bits_per_key());
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn bits_per_key(&self) -> f64 {
        sizing::bits_per_key(self.num_bits(), self.len)
    }

    /// The fuse seed the build settled on: the number of failed attempts before it. It is
    /// stored with the filter; most builds succeed at seed 0.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = bloomkit::BinaryFuseFilter::build(0..1000u32, 0.01)?;
    /// assert!(f.fuse_seed() < 64);
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn fuse_seed(&self) -> u32 {
        self.fuse_seed
    }

    /// The hash seed keys are hashed with ([`DEFAULT_SEED`](crate::DEFAULT_SEED) unless built
    /// with another).
    ///
    /// # Examples
    ///
    /// ```
    /// let f = bloomkit::BinaryFuseFilter::build(["k"], 0.01)?;
    /// assert_eq!(f.seed(), bloomkit::DEFAULT_SEED);
    /// assert!(f.contains_hash(bloomkit::hash_with_seed("k", f.seed())));
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn seed(&self) -> u64 {
        self.hasher.seed()
    }

    /// How keys are hashed: the seed, and the key feed (today's for every fuse filter:
    /// the kind is newer than bloomkit 0.1's feed).
    pub fn key_hasher(&self) -> KeyHasher {
        self.hasher
    }

    /// Bytes of memory the filter holds: the fingerprints and the struct itself. (A build
    /// needs about 32 bytes per key of scratch space while it runs.)
    ///
    /// # Examples
    ///
    /// ```
    /// let f = bloomkit::BinaryFuseFilter::build(0..1_000_000u32, 0.01)?;
    /// let per_key = f.memory_bytes() as f64 / 1e6;
    /// assert!(per_key < 1.131, "{per_key}"); // 9.04 bits
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn memory_bytes(&self) -> usize {
        std::mem::size_of::<Self>() + self.fingerprints.capacity_bytes()
    }
}

impl fmt::Debug for BinaryFuseFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BinaryFuseFilter")
            .field("len", &self.len)
            .field("fingerprint_bits", &self.fingerprint_bits())
            .field("num_slots", &self.num_slots())
            .field("segment_length", &self.layout.segment_length)
            .field("fuse_seed", &self.fuse_seed)
            .field("hasher", &self.hasher)
            .finish_non_exhaustive()
    }
}

impl Filter for BinaryFuseFilter {
    fn contains_hash(&self, hash: u64) -> bool {
        BinaryFuseFilter::contains_hash(self, hash)
    }
    fn key_hasher(&self) -> KeyHasher {
        self.hasher
    }
    fn kind(&self) -> FilterKind {
        FilterKind::Fuse
    }
    fn memory_bytes(&self) -> usize {
        BinaryFuseFilter::memory_bytes(self)
    }
    fn len(&self) -> u64 {
        BinaryFuseFilter::len(self)
    }
    fn estimated_fp_rate(&self) -> f64 {
        BinaryFuseFilter::estimated_fp_rate(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hashes(n: u64) -> Vec<u64> {
        (0..n).map(|i| crate::hash(&i)).collect()
    }

    #[test]
    fn duplicates_are_left_out() {
        for bits in [8, 16] {
            let mut hs = hashes(5000);
            hs.extend_from_within(..);
            hs.extend_from_within(..700);
            let f = BinaryFuseFilter::builder(0.01)
                .fingerprint_bits(bits)
                .build_from_hashes(&hs)
                .unwrap();
            assert_eq!(f.len(), 10_700);
            assert!(hs.iter().all(|&h| f.contains_hash(h)));
            // One key, a thousand times.
            let same = vec![crate::hash("k"); 1000];
            let f = BinaryFuseFilter::builder(0.01)
                .fingerprint_bits(bits)
                .build_from_hashes(&same)
                .unwrap();
            assert!(f.contains("k"));
            assert_eq!(f.len(), 1000);
        }
    }

    /// Runs of a repeated key longer than a slot can count (64) overflow the counts; the
    /// retry removes the repeats and builds.
    #[test]
    fn long_runs_of_one_key_are_removed_on_retry() {
        let mut hs = hashes(3000);
        for i in 0..3000 {
            if i % 30 == 0 {
                let h = hs[i];
                hs.extend(std::iter::repeat_n(h, 100));
            }
        }
        let f = BinaryFuseFilter::build_from_hashes(&hs, 0.01).unwrap();
        assert!(f.fuse_seed() >= 1, "a slot should have overflowed");
        assert!(hs.iter().all(|&h| f.contains_hash(h)));
    }

    /// A plan with far too few slots fails at every seed.
    #[test]
    fn hopeless_plans_end_in_construction_failed() {
        let hs = hashes(10_000);
        let plan = BuildPlan {
            layout: Layout {
                segment_length: 64,
                segment_count: 10,
            },
            attempts: 5,
            alternate: true,
        };
        assert!(matches!(
            BinaryFuseFilter::build_planned(&hs, 8, KeyHasher::default(), Some(plan)),
            Err(Error::ConstructionFailed { attempts: 5 })
        ));
    }

    /// A tight plan fails at its first seeds and succeeds at a later one, remixed; the filter
    /// keeps its fuse seed through a round trip.
    #[test]
    fn a_failed_seed_is_retried_with_a_remix() {
        // 37,400 keys: the planned layout peels about one time in twenty.
        let mut reseeded = 0;
        for salt in 0..6u64 {
            let hs: Vec<u64> = (0..37_400u64).map(|i| crate::hash(&(salt, i))).collect();
            let plan = BuildPlan {
                alternate: false,
                ..BuildPlan::for_items(37_400).unwrap()
            };
            let Ok(f) = BinaryFuseFilter::build_planned(&hs, 16, KeyHasher::default(), Some(plan))
            else {
                continue;
            };
            assert!(hs.iter().all(|&h| f.contains_hash(h)));
            if f.fuse_seed() > 0 {
                reseeded += 1;
                let g = BinaryFuseFilter::from_bytes(&f.to_bytes()).unwrap();
                assert_eq!(g.fuse_seed(), f.fuse_seed());
                assert!(hs.iter().all(|&h| g.contains_hash(h)));
            }
        }
        assert!(reseeded >= 3, "{reseeded}");
        // With the alternation, the halved layout at the second seed builds these at once.
        let hs: Vec<u64> = (0..37_400u64).map(|i| crate::hash(&(99u64, i))).collect();
        let f = BinaryFuseFilter::build_from_hashes(&hs, 0.01).unwrap();
        assert!(f.fuse_seed() < 4, "{}", f.fuse_seed());
        assert!(hs.iter().all(|&h| f.contains_hash(h)));
    }

    #[test]
    fn empty_says_no_and_is_small() {
        for bits in [8, 16] {
            let f = BinaryFuseFilter::builder(0.01)
                .fingerprint_bits(bits)
                .build_from_hashes(&[])
                .unwrap();
            assert_eq!((f.len(), f.num_slots(), f.num_bits()), (0, 0, 0));
            assert_eq!(f.bits_per_key(), 0.0);
            assert!((0..10_000u64).all(|h| !f.contains_hash(h)));
            assert_eq!(f.memory_bytes(), std::mem::size_of::<BinaryFuseFilter>());
            let g = BinaryFuseFilter::from_bytes(&f.to_bytes()).unwrap();
            assert_eq!(f, g);
            assert_eq!(g.fingerprint_bits(), bits);
        }
    }

    #[test]
    fn memory_is_the_fingerprints() {
        for bits in [8u32, 16] {
            let f = BinaryFuseFilter::builder(0.01)
                .fingerprint_bits(bits)
                .build_from_hashes(&hashes(10_000))
                .unwrap();
            assert_eq!(
                f.memory_bytes() as u64,
                std::mem::size_of::<BinaryFuseFilter>() as u64
                    + f.num_slots() * u64::from(bits) / 8
            );
        }
    }

    #[test]
    fn bad_fingerprint_bits_are_errors() {
        for bits in [0, 1, 7, 9, 15, 17, 32, u32::MAX] {
            let err = BinaryFuseFilter::builder(0.01)
                .fingerprint_bits(bits)
                .build_from_hashes(&hashes(10))
                .unwrap_err();
            assert!(
                matches!(
                    err,
                    Error::InvalidParameter {
                        name: "fingerprint_bits",
                        ..
                    }
                ),
                "{bits}: {err}"
            );
            assert!(BinaryFuseFilter::planned_bits(10, bits).is_err());
            assert!(BinaryFuseFilter::builder(0.01)
                .fingerprint_bits(bits)
                .build(["a"])
                .is_err());
        }
    }

    #[test]
    fn is_send_sync_and_clone() {
        fn assert_traits<T: Send + Sync + Clone + fmt::Debug + Eq>() {}
        assert_traits::<BinaryFuseFilter>();
    }

    #[test]
    fn debug_shows_the_shape() {
        let f = BinaryFuseFilter::builder(0.01)
            .fingerprint_bits(16)
            .build_from_hashes(&hashes(1000))
            .unwrap();
        let s = format!("{f:?}");
        assert!(
            s.starts_with("BinaryFuseFilter { len: 1000, fingerprint_bits: 16, num_slots: "),
            "{s}"
        );
        assert!(s.len() < 200);
    }
}
