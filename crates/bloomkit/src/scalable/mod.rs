//! [`ScalableBloomFilter`]: a Bloom filter that grows as keys arrive, keeping its
//! false-positive rate bounded without knowing the final count in advance.
//!
//! A plain Bloom filter is sized once: past its planned capacity its rate climbs fast (twice
//! the keys, fifteen times the false positives). A scalable filter (Almeida, Baquero, Preguiça
//! & Hutchison, 2007) is a chain of layers instead. Keys go into the newest layer; when it holds
//! its capacity, a new layer is added with `growth` times the capacity and `tightening` times
//! the rate. The rates form a geometric series, so the chain's total rate stays below the
//! target however far it grows: with a first layer at p·(1 − t) the sum is at most p.
//!
//! The scaling rules are RedisBloom's, so that bloomkit's server can answer `BF.*` from this
//! type and report the same `BF.INFO`:
//!
//! * the first layer gets the requested capacity and rate p·0.5 (the default tightening 0.5;
//!   a non-scaling filter's only layer gets p itself, as in RedisBloom);
//! * an insert first asks every layer, newest first; a key that may be present is neither
//!   inserted nor counted (so a false positive is not counted either);
//! * a new layer is added only when an absent key arrives and the newest layer's item count has
//!   reached its capacity: capacity × growth, rate × tightening;
//! * the capacity reported is the sum of the layers' capacities.
//!
//! Each layer is a [`BlockedBloomFilter`]: one cache line per layer per query. A key is hashed
//! once and that hash probes every layer. Layers are asked newest first because the newest
//! layer is the largest and holds most of the keys, so a present key is usually found at once.
//!
//! The chain is bounded: at most [`ScalableBloomFilter::MAX_LAYERS`] layers, and only while the
//! next layer's rate is one a 64-bit hash can deliver (about 2^−64; with the defaults that is
//! about 57 layers). A chain that cannot grow refuses inserts with [`Error::Full`].

mod persist;

use std::fmt;
use std::hash::Hash;
use std::io::{Read, Write};

use crate::blocked::BlockedBloomFilter;
use crate::error::{Error, Result};
use crate::format::{self, FilterKind};
use crate::hash::{hash_with_seed, DEFAULT_SEED};
use crate::sizing;
use crate::Filter;

/// The parameters a chain is built from; every layer follows from them.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Params {
    /// The first layer's capacity (at least 1).
    initial_capacity: u64,
    /// The target rate of the whole chain.
    fp_rate: f64,
    growth: u32,
    tightening: f64,
    non_scaling: bool,
}

impl Params {
    /// Checks every parameter, in the order the errors are most useful: the rate, then the
    /// growth, then the tightening.
    fn validate(&self) -> Result<()> {
        sizing::check_fp_rate(self.fp_rate)?;
        if !(1..=ScalableBloomFilter::MAX_GROWTH).contains(&self.growth) {
            return Err(Error::InvalidParameter {
                name: "growth",
                value: self.growth.to_string(),
                expected: "an integer from 1 to 32768, as RedisBloom's EXPANSION (for \
                           EXPANSION 0, build a non-scaling filter)",
            });
        }
        // Written so that NaN fails too.
        if !(self.tightening > 0.0 && self.tightening < 1.0) {
            return Err(Error::InvalidParameter {
                name: "tightening",
                value: self.tightening.to_string(),
                expected: "a number strictly between 0 and 1, such as 0.5",
            });
        }
        if self.initial_capacity == 0 {
            return Err(Error::InvalidParameter {
                name: "initial_capacity",
                value: "0".into(),
                expected: "at least 1",
            });
        }
        Ok(())
    }

    /// The first layer's rate: p·(1 − t), so that the series p·(1 − t)·Σ tⁱ sums to p. At the
    /// default t = 0.5 this is RedisBloom's p·0.5 exactly (1 − 0.5 is exact in binary). A
    /// non-scaling chain has one layer, which may spend the whole budget, as RedisBloom's does.
    fn first_rate(&self) -> f64 {
        if self.non_scaling {
            self.fp_rate
        } else {
            self.fp_rate * (1.0 - self.tightening)
        }
    }
}

/// One layer of the chain: a blocked filter planned for `capacity` keys at `fp_rate`.
///
/// The layer's item count is its filter's: keys are inserted only when every layer says
/// absent, so every insert changes a bit of the newest layer and is counted there.
#[derive(Clone, PartialEq)]
struct Layer {
    filter: BlockedBloomFilter,
    capacity: u64,
    fp_rate: f64,
}

impl Layer {
    fn new(capacity: u64, fp_rate: f64, seed: u64) -> Result<Self> {
        Ok(Layer {
            filter: BlockedBloomFilter::new_with_seed(capacity, fp_rate, seed)?,
            capacity,
            fp_rate,
        })
    }

    fn items(&self) -> u64 {
        self.filter.item_count()
    }

    /// RedisBloom's test: a layer is full once its count reaches its capacity.
    fn is_full(&self) -> bool {
        self.items() >= self.capacity
    }

    /// Heap bytes of the layer's bits (the layer itself lives in the chain's vector).
    fn heap_bytes(&self) -> usize {
        self.filter.lines().memory_bytes()
    }

    fn info(&self) -> LayerInfo {
        LayerInfo {
            capacity: self.capacity,
            items: self.items(),
            fp_rate: self.fp_rate,
            num_bits: self.filter.num_bits(),
            num_hashes: self.filter.num_hashes(),
            memory_bytes: self.heap_bytes(),
        }
    }
}

/// What one layer of a [`ScalableBloomFilter`] holds, as [`ScalableBloomFilter::layers`]
/// reports it (what `BF.DEBUG` prints per link).
///
/// # Examples
///
/// ```
/// let f = bloomkit::ScalableBloomFilter::new(1000, 0.01)?;
/// let first = f.layers().next().unwrap();
/// assert_eq!((first.capacity, first.items, first.fp_rate), (1000, 0, 0.005));
/// # Ok::<(), bloomkit::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct LayerInfo {
    /// The keys the layer was planned for; it takes no more.
    pub capacity: u64,
    /// The keys inserted into it.
    pub items: u64,
    /// The rate the layer was planned for, with `capacity` keys.
    pub fp_rate: f64,
    /// Its bits (a multiple of 512).
    pub num_bits: u64,
    /// Its probes per key.
    pub num_hashes: u32,
    /// Heap bytes of its bits.
    pub memory_bytes: usize,
}

/// Options for a [`ScalableBloomFilter`], checked by [`build`](Self::build).
///
/// # Examples
///
/// ```
/// use bloomkit::ScalableBloomFilter;
///
/// // RedisBloom's `BF.RESERVE k 0.001 500 EXPANSION 4`.
/// let f = ScalableBloomFilter::builder(500, 0.001).growth(4).build()?;
/// assert_eq!(f.growth(), 4);
/// // Bad options are errors, not panics.
/// assert!(ScalableBloomFilter::builder(500, 0.001).growth(0).build().is_err());
/// assert!(ScalableBloomFilter::builder(500, 0.001).tightening(1.0).build().is_err());
/// # Ok::<(), bloomkit::Error>(())
/// ```
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct ScalableBuilder {
    params: Params,
    seed: u64,
}

impl ScalableBuilder {
    /// Each new layer's capacity is the previous one's times `growth` (RedisBloom's
    /// `EXPANSION`; default 2). 1 adds layers of equal size; larger values add fewer, bigger
    /// layers. Checked by [`build`](Self::build): 1 to [`ScalableBloomFilter::MAX_GROWTH`].
    pub fn growth(mut self, growth: u32) -> Self {
        self.params.growth = growth;
        self
    }

    /// Each new layer's rate is the previous one's times `tightening` (default 0.5, as
    /// RedisBloom). The first layer gets p·(1 − tightening), so the chain's rate stays below
    /// p. Values near 1 (Almeida et al. suggest 0.8–0.9) spend fewer bits on the first layers
    /// and more on later ones. Checked by [`build`](Self::build): strictly between 0 and 1.
    pub fn tightening(mut self, tightening: f64) -> Self {
        self.params.tightening = tightening;
        self
    }

    /// A non-scaling filter never adds a layer: its one layer gets the whole rate p, and once
    /// it holds its capacity, inserts of new keys fail with [`Error::Full`] (RedisBloom's
    /// `NONSCALING`).
    pub fn non_scaling(mut self, non_scaling: bool) -> Self {
        self.params.non_scaling = non_scaling;
        self
    }

    /// Hash keys with `seed` instead of [`DEFAULT_SEED`].
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Builds the filter, with its first layer allocated.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidFpRate`] unless `0 < fp_rate < 1`; [`Error::InvalidParameter`] for a
    /// growth outside 1 to [`ScalableBloomFilter::MAX_GROWTH`] or a tightening outside (0, 1);
    /// [`Error::FpRateTooSmall`] if the first layer's rate needs more than 64 probes;
    /// [`Error::TooLarge`] or [`Error::OutOfMemory`] if the first layer does not fit.
    pub fn build(self) -> Result<ScalableBloomFilter> {
        let params = self.params;
        params.validate()?;
        let first = Layer::new(params.initial_capacity, params.first_rate(), self.seed)?;
        let mut layers = Vec::new();
        layers
            .try_reserve_exact(1)
            .map_err(|_| Error::OutOfMemory {
                bytes: std::mem::size_of::<Layer>() as u64,
            })?;
        layers.push(first);
        Ok(ScalableBloomFilter {
            params,
            seed: self.seed,
            layers,
        })
    }
}

/// A scalable Bloom filter: a chain of blocked layers that grows as keys arrive, with
/// RedisBloom's scaling rules.
///
/// [`insert`](Self::insert) answers whether the key was new, as `BF.ADD` does; [`len`](Self::len)
/// counts those answers; [`capacity`](Self::capacity), [`num_layers`](Self::num_layers),
/// [`memory_bytes`](Self::memory_bytes) and [`layers`](Self::layers) are what `BF.INFO` and
/// `BF.DEBUG` report.
///
/// # Examples
///
/// ```
/// use bloomkit::ScalableBloomFilter;
///
/// // RedisBloom's `BF.RESERVE bf 0.01 10`, then `BF.ADD bf 0` .. `BF.ADD bf 99`.
/// let mut f = ScalableBloomFilter::new(10, 0.01)?;
/// for i in 0..100 {
///     f.insert(i.to_string().as_str())?;
/// }
/// let capacities: Vec<u64> = f.layers().map(|l| l.capacity).collect();
/// assert_eq!(capacities, [10, 20, 40, 80]);
/// assert_eq!(f.capacity(), 150);
/// assert!(f.contains("42"));
/// assert!(!f.insert("42")?); // already there: not added, not counted
///
/// // Grown to 100 times its plan, it still keeps its promise of 1%.
/// let mut f = ScalableBloomFilter::new(1_000, 0.01)?;
/// for i in 0..100_000u64 { f.insert(&i)?; }
/// let fp = (100_000..300_000u64).filter(|i| f.contains(i)).count() as f64 / 200_000.0;
/// assert!(fp <= 0.01, "{fp}");
/// # Ok::<(), bloomkit::Error>(())
/// ```
#[derive(Clone)]
pub struct ScalableBloomFilter {
    params: Params,
    seed: u64,
    /// Oldest first; never empty. The newest (last) layer takes the inserts.
    layers: Vec<Layer>,
}

impl ScalableBloomFilter {
    /// The most layers a chain grows to. With the default tightening the next layer's rate
    /// passes 2^−64 first (after about 57 layers), which no 64-bit hash can deliver; the bound
    /// matters for tightenings near 1, and keeps a query at no more than 64 cache lines.
    pub const MAX_LAYERS: usize = 64;

    /// The largest growth accepted: RedisBloom's limit on `EXPANSION`.
    pub const MAX_GROWTH: u32 = 32_768;

    /// The growth of [`new`](Self::new): RedisBloom's default `EXPANSION`.
    pub const DEFAULT_GROWTH: u32 = 2;

    /// The tightening of [`new`](Self::new): RedisBloom's (fixed) ratio.
    pub const DEFAULT_TIGHTENING: f64 = 0.5;

    /// A filter whose first layer holds `initial_capacity` keys, that grows by
    /// [`DEFAULT_GROWTH`](Self::DEFAULT_GROWTH) and [`DEFAULT_TIGHTENING`](Self::DEFAULT_TIGHTENING),
    /// and whose false-positive rate stays below `fp_rate` however many keys it takes.
    /// `initial_capacity = 0` is treated as 1.
    ///
    /// # Errors
    ///
    /// As [`ScalableBuilder::build`].
    ///
    /// # Examples
    ///
    /// ```
    /// let f = bloomkit::ScalableBloomFilter::new(100, 0.01)?;
    /// assert_eq!((f.capacity(), f.num_layers(), f.len()), (100, 1, 0));
    /// assert!(bloomkit::ScalableBloomFilter::new(100, 1.5).is_err());
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn new(initial_capacity: u64, fp_rate: f64) -> Result<Self> {
        Self::builder(initial_capacity, fp_rate).build()
    }

    /// [`new`](Self::new) with a hash seed other than the default.
    ///
    /// # Errors
    ///
    /// As [`ScalableBuilder::build`].
    ///
    /// # Examples
    ///
    /// ```
    /// let mut f = bloomkit::ScalableBloomFilter::new_with_seed(100, 0.01, 7)?;
    /// f.insert("k")?;
    /// assert!(f.contains_hash(bloomkit::hash_with_seed("k", 7)));
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn new_with_seed(initial_capacity: u64, fp_rate: f64, seed: u64) -> Result<Self> {
        Self::builder(initial_capacity, fp_rate).seed(seed).build()
    }

    /// Options beyond [`new`](Self::new): growth, tightening, non-scaling, seed. See
    /// [`ScalableBuilder`]. `initial_capacity = 0` is treated as 1.
    ///
    /// # Examples
    ///
    /// ```
    /// use bloomkit::{Error, FilterKind, ScalableBloomFilter};
    ///
    /// // RedisBloom's `BF.RESERVE k 0.01 2 NONSCALING`.
    /// let mut f = ScalableBloomFilter::builder(2, 0.01).non_scaling(true).build()?;
    /// assert!(f.insert("a")? && f.insert("b")?);
    /// assert!(matches!(f.insert("c"), Err(Error::Full { kind: FilterKind::Scalable })));
    /// assert_eq!(f.len(), 2);
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn builder(initial_capacity: u64, fp_rate: f64) -> ScalableBuilder {
        ScalableBuilder {
            params: Params {
                initial_capacity: initial_capacity.max(1),
                fp_rate,
                growth: Self::DEFAULT_GROWTH,
                tightening: Self::DEFAULT_TIGHTENING,
                non_scaling: false,
            },
            seed: DEFAULT_SEED,
        }
    }

    /// Adds `key` unless it may already be present; returns whether it was added, as
    /// `BF.ADD` answers 1 or 0. A key that may be present (including a false positive) is not
    /// inserted and not counted.
    ///
    /// # Errors
    ///
    /// When the newest layer holds its capacity and a new key arrives:
    /// [`Error::Full`] if the filter is non-scaling or cannot grow further (it has
    /// [`MAX_LAYERS`](Self::MAX_LAYERS) layers, or the next layer's rate is below what a
    /// 64-bit hash can deliver); [`Error::TooLarge`] or [`Error::OutOfMemory`] if the next
    /// layer does not fit. In every case the filter is unchanged.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut f = bloomkit::ScalableBloomFilter::new(100, 0.01)?;
    /// assert!(f.insert("apple")?);
    /// assert!(!f.insert("apple")?);
    /// assert_eq!(f.len(), 1);
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    #[inline]
    pub fn insert<T: Hash + ?Sized>(&mut self, key: &T) -> Result<bool> {
        self.insert_hash(hash_with_seed(key, self.seed))
    }

    /// [`insert`](Self::insert) by a precomputed hash ([`crate::hash`], or
    /// [`crate::hash_with_seed`] with this filter's [`seed`](Self::seed)).
    ///
    /// # Errors
    ///
    /// As [`insert`](Self::insert).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut f = bloomkit::ScalableBloomFilter::new(100, 0.01)?;
    /// let h = bloomkit::hash_bytes(b"apple");
    /// assert!(f.insert_hash(h)?);
    /// assert!(f.contains("apple"));
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn insert_hash(&mut self, hash: u64) -> Result<bool> {
        if self.contains_hash(hash) {
            return Ok(false);
        }
        if self.newest().is_full() {
            self.grow()?;
        }
        // The key is absent from the newest layer, so this sets a bit and counts it.
        let added = self.newest_mut().filter.insert_hash(hash);
        debug_assert!(added);
        Ok(added)
    }

    /// Adds a layer with capacity × growth and rate × tightening, or fails changing nothing.
    fn grow(&mut self) -> Result<()> {
        let full = Error::Full {
            kind: FilterKind::Scalable,
        };
        if self.params.non_scaling || self.layers.len() >= Self::MAX_LAYERS {
            return Err(full);
        }
        let newest = self.newest();
        let capacity = newest
            .capacity
            .checked_mul(self.params.growth as u64)
            .ok_or(Error::TooLarge { num_bits: u64::MAX })?;
        let fp_rate = newest.fp_rate * self.params.tightening;
        let layer = match Layer::new(capacity, fp_rate, self.seed) {
            Ok(layer) => layer,
            // The rate has shrunk past what the hash can deliver (or to zero): the chain has
            // reached its end.
            Err(Error::FpRateTooSmall { .. } | Error::InvalidFpRate { .. }) => return Err(full),
            Err(e) => return Err(e),
        };
        // Reserve before pushing, so that a refused allocation is an error, not an abort.
        self.layers.try_reserve(1).map_err(|_| Error::OutOfMemory {
            bytes: (std::mem::size_of::<Layer>() * (self.layers.len() + 1)) as u64,
        })?;
        self.layers.push(layer);
        Ok(())
    }

    fn newest(&self) -> &Layer {
        // The chain is never empty: built with one layer, and layers are only added.
        &self.layers[self.layers.len() - 1]
    }

    fn newest_mut(&mut self) -> &mut Layer {
        let last = self.layers.len() - 1;
        &mut self.layers[last]
    }

    /// `false` if `key` is definitely absent; `true` if it may be present.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut f = bloomkit::ScalableBloomFilter::new(10, 0.01)?;
    /// for i in 0..1000u32 { f.insert(&i)?; }
    /// assert!((0..1000u32).all(|i| f.contains(&i)));
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    #[inline]
    pub fn contains<T: Hash + ?Sized>(&self, key: &T) -> bool {
        self.contains_hash(hash_with_seed(key, self.seed))
    }

    /// [`contains`](Self::contains) by a precomputed hash: the one hash probes every layer,
    /// newest (largest) first.
    #[inline]
    pub fn contains_hash(&self, hash: u64) -> bool {
        self.layers
            .iter()
            .rev()
            .any(|layer| layer.filter.contains_hash(hash))
    }

    /// The number of keys added: inserts that answered `true` (`BF.CARD`, and `BF.INFO`'s
    /// "Number of items inserted").
    pub fn len(&self) -> u64 {
        self.layers.iter().map(Layer::items).sum()
    }

    /// Whether no key was added.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The sum of the layers' capacities, as `BF.INFO` reports "Capacity" (saturated at
    /// `u64::MAX`).
    ///
    /// ```
    /// let mut f = bloomkit::ScalableBloomFilter::new(100, 0.01)?;
    /// for i in 0..101u32 { f.insert(&i)?; }
    /// assert_eq!(f.capacity(), 300);
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn capacity(&self) -> u64 {
        self.layers
            .iter()
            .fold(0u64, |sum, layer| sum.saturating_add(layer.capacity))
    }

    /// The number of layers (`BF.INFO`'s "Number of filters").
    pub fn num_layers(&self) -> usize {
        self.layers.len()
    }

    /// The layers, oldest first: capacity, items, planned rate, bits, probes and bytes of
    /// each.
    ///
    /// ```
    /// let mut f = bloomkit::ScalableBloomFilter::new(100, 0.01)?;
    /// for i in 0..250u32 { f.insert(&i)?; }
    /// let rates: Vec<f64> = f.layers().map(|l| l.fp_rate).collect();
    /// assert_eq!(rates, [0.005, 0.0025]);
    /// assert_eq!(f.layers().map(|l| l.items).sum::<u64>(), f.len());
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn layers(&self) -> impl ExactSizeIterator<Item = LayerInfo> + '_ {
        self.layers.iter().map(Layer::info)
    }

    /// The capacity of the first layer.
    pub fn initial_capacity(&self) -> u64 {
        self.params.initial_capacity
    }

    /// The target rate of the whole chain, as given.
    pub fn fp_rate(&self) -> f64 {
        self.params.fp_rate
    }

    /// Capacity multiplier between layers (`BF.INFO`'s "Expansion rate", which it reports as
    /// nil for a non-scaling filter).
    pub fn growth(&self) -> u32 {
        self.params.growth
    }

    /// Rate multiplier between layers.
    pub fn tightening(&self) -> f64 {
        self.params.tightening
    }

    /// Whether the filter adds layers when full (`false` for RedisBloom's `NONSCALING`).
    pub fn is_scaling(&self) -> bool {
        !self.params.non_scaling
    }

    /// The hash seed keys are hashed with.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Bits in all layers.
    pub fn num_bits(&self) -> u64 {
        self.layers.iter().map(|l| l.filter.num_bits()).sum()
    }

    /// The false-positive rate a query for an absent key risks now: 1 − Π(1 − rᵢ) over the
    /// layers' rates estimated from their fill (an empty layer adds nothing). Below
    /// [`fp_rate`](Self::fp_rate) however far the chain has grown.
    ///
    /// ```
    /// let mut f = bloomkit::ScalableBloomFilter::new(1000, 0.01)?;
    /// assert_eq!(f.estimated_fp_rate(), 0.0);
    /// for i in 0..50_000u32 { f.insert(&i)?; }
    /// let rate = f.estimated_fp_rate();
    /// assert!(rate > 0.005 && rate <= 0.01, "{rate}");
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn estimated_fp_rate(&self) -> f64 {
        let miss: f64 = self
            .layers
            .iter()
            .map(|layer| 1.0 - layer.filter.estimated_fp_rate())
            .product();
        1.0 - miss
    }

    /// Bytes of memory the filter holds: itself, its layer list and every layer's bits
    /// (`BF.INFO`'s "Size").
    pub fn memory_bytes(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.layers.capacity() * std::mem::size_of::<Layer>()
            + self.layers.iter().map(Layer::heap_bytes).sum::<usize>()
    }

    /// The filter in bloomkit's file format (see `docs/FORMAT.md`): the parameters in the
    /// header, then the layer count, a descriptor per layer and every layer's bits.
    ///
    /// ```
    /// use bloomkit::ScalableBloomFilter;
    /// let mut f = ScalableBloomFilter::builder(10, 0.01).growth(3).seed(9).build()?;
    /// for i in 0..100u32 { f.insert(&i)?; }
    /// let g = ScalableBloomFilter::from_bytes(&f.to_bytes())?;
    /// assert_eq!(g, f);
    /// assert_eq!((g.num_layers(), g.len(), g.growth(), g.seed()), (f.num_layers(), f.len(), 3, 9));
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
    /// let f = bloomkit::ScalableBloomFilter::new(10, 0.01)?;
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
    /// An error, never a panic, for anything but a valid scalable filter: the shared format's
    /// errors ([`Error::BadMagic`], [`Error::Truncated`], [`Error::ChecksumMismatch`],
    /// [`Error::WrongKind`], ...), and [`Error::Corrupt`] for parameters or layers that do not
    /// follow the chain's rules. Nothing is allocated beyond what `bytes` can hold.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = bloomkit::ScalableBloomFilter::new(10, 0.01)?;
    /// let mut bytes = f.to_bytes();
    /// bytes.truncate(bytes.len() - 1);
    /// assert!(bloomkit::ScalableBloomFilter::from_bytes(&bytes).is_err());
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
    /// let f = bloomkit::ScalableBloomFilter::new(10, 0.01)?;
    /// let g = bloomkit::ScalableBloomFilter::read_from(&f.to_bytes()[..])?;
    /// assert_eq!(f, g);
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn read_from<R: Read>(reader: R) -> Result<Self> {
        format::read_from(reader)
    }
}

impl PartialEq for ScalableBloomFilter {
    /// Equal when they have the same parameters, seed and layers: each layer's capacity, rate,
    /// bits and item count. Unlike a plain filter's, the counts are compared: they decide
    /// when the chain grows, so two filters with the same bits but different counts answer
    /// later inserts differently.
    fn eq(&self, other: &Self) -> bool {
        self.params == other.params
            && self.seed == other.seed
            && self.layers.len() == other.layers.len()
            && self
                .layers
                .iter()
                .zip(&other.layers)
                .all(|(a, b)| a == b && a.items() == b.items())
    }
}

impl fmt::Debug for ScalableBloomFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The shape, not the bits.
        f.debug_struct("ScalableBloomFilter")
            .field("initial_capacity", &self.params.initial_capacity)
            .field("fp_rate", &self.params.fp_rate)
            .field("growth", &self.params.growth)
            .field("tightening", &self.params.tightening)
            .field("non_scaling", &self.params.non_scaling)
            .field("seed", &self.seed)
            .field("len", &self.len())
            .field("capacity", &self.capacity())
            .field("num_layers", &self.layers.len())
            .finish_non_exhaustive()
    }
}

impl Filter for ScalableBloomFilter {
    fn contains_hash(&self, hash: u64) -> bool {
        ScalableBloomFilter::contains_hash(self, hash)
    }
    fn seed(&self) -> u64 {
        self.seed
    }
    fn kind(&self) -> FilterKind {
        FilterKind::Scalable
    }
    fn memory_bytes(&self) -> usize {
        ScalableBloomFilter::memory_bytes(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layer_shape(f: &ScalableBloomFilter) -> Vec<(u64, f64)> {
        f.layers().map(|l| (l.capacity, l.fp_rate)).collect()
    }

    #[test]
    fn first_layer_is_redisbloom_s() {
        let f = ScalableBloomFilter::new(100, 0.01).unwrap();
        assert_eq!(layer_shape(&f), [(100, 0.005)]);
        let f = ScalableBloomFilter::builder(100, 0.01)
            .non_scaling(true)
            .build()
            .unwrap();
        assert_eq!(layer_shape(&f), [(100, 0.01)]);
        // Capacity 0 is 1.
        let f = ScalableBloomFilter::new(0, 0.01).unwrap();
        assert_eq!((f.initial_capacity(), f.capacity()), (1, 1));
    }

    #[test]
    fn layers_grow_by_growth_and_tighten() {
        let mut f = ScalableBloomFilter::builder(3, 0.02)
            .growth(3)
            .tightening(0.75)
            .build()
            .unwrap();
        for i in 0..200u32 {
            f.insert(&i).unwrap();
        }
        let shape = layer_shape(&f);
        let mut cap = 3;
        let mut rate = 0.02 * 0.25;
        for &(c, r) in &shape {
            assert_eq!((c, r), (cap, rate));
            cap *= 3;
            rate *= 0.75;
        }
        // Every layer but the newest is exactly full.
        let infos: Vec<LayerInfo> = f.layers().collect();
        for l in &infos[..infos.len() - 1] {
            assert_eq!(l.items, l.capacity);
        }
        assert!(infos.last().unwrap().items <= infos.last().unwrap().capacity);
    }

    #[test]
    fn the_chain_stops_before_an_unreachable_rate() {
        // Growth 1 keeps layers small; the rate halves per layer until no 64-bit hash can
        // deliver it. The chain then refuses, changing nothing.
        let mut f = ScalableBloomFilter::builder(1, 0.01)
            .growth(1)
            .build()
            .unwrap();
        let mut refused = None;
        for i in 0..1000u32 {
            match f.insert(&i) {
                Ok(_) => {}
                Err(e) => {
                    refused = Some((i, e));
                    break;
                }
            }
        }
        let (i, e) = refused.expect("the chain must stop");
        assert!(matches!(e, Error::Full { .. }), "{e}");
        let n = f.num_layers();
        assert!((50..=ScalableBloomFilter::MAX_LAYERS).contains(&n), "{n}");
        let before = f.clone();
        assert!(f.insert(&i).is_err());
        assert_eq!(f, before);
        // Keys already in still answer; the filter is usable for queries.
        assert!(f.contains(&0u32));
    }

    #[test]
    fn max_layers_bounds_a_slow_tightening() {
        let mut f = ScalableBloomFilter::builder(1, 0.01)
            .growth(1)
            .tightening(0.99)
            .build()
            .unwrap();
        let mut full = false;
        for i in 0..10_000u32 {
            if let Err(e) = f.insert(&i) {
                assert!(matches!(e, Error::Full { .. }), "{e}");
                full = true;
                break;
            }
        }
        assert!(full);
        assert_eq!(f.num_layers(), ScalableBloomFilter::MAX_LAYERS);
    }

    #[test]
    fn capacity_overflow_is_an_error_not_a_wrap() {
        let mut f = ScalableBloomFilter::new(1, 0.01).unwrap();
        // Pretend the newest layer is planned for more than u64::MAX / 2 keys; only the
        // arithmetic is exercised (nothing that size is allocated).
        f.layers[0].capacity = u64::MAX / 2 + 1;
        f.layers[0].filter = BlockedBloomFilter::from_parts(
            f.layers[0].filter.lines().clone(),
            f.layers[0].filter.num_hashes(),
            f.seed,
            u64::MAX / 2 + 1,
        );
        let before = f.clone();
        assert!(matches!(f.insert("x"), Err(Error::TooLarge { .. })));
        assert_eq!(f, before);
    }

    #[test]
    fn bad_options_are_errors() {
        let b = || ScalableBloomFilter::builder(10, 0.01);
        for g in [0, ScalableBloomFilter::MAX_GROWTH + 1, u32::MAX] {
            assert!(matches!(
                b().growth(g).build(),
                Err(Error::InvalidParameter { name: "growth", .. })
            ));
        }
        assert!(b().growth(ScalableBloomFilter::MAX_GROWTH).build().is_ok());
        for t in [0.0, 1.0, -0.5, 2.0, f64::NAN, f64::INFINITY] {
            assert!(matches!(
                b().tightening(t).build(),
                Err(Error::InvalidParameter {
                    name: "tightening",
                    ..
                })
            ));
        }
        for p in [0.0, 1.0, -1.0, f64::NAN] {
            assert!(matches!(
                ScalableBloomFilter::new(10, p),
                Err(Error::InvalidFpRate { .. })
            ));
        }
        assert!(matches!(
            ScalableBloomFilter::new(10, 1e-30),
            Err(Error::FpRateTooSmall { .. })
        ));
        assert!(matches!(
            ScalableBloomFilter::new(u64::MAX, 0.01),
            Err(Error::TooLarge { .. })
        ));
        let msg = b().growth(0).build().unwrap_err().to_string();
        assert!(msg.contains("1 to 32768"), "{msg}");
    }

    #[test]
    fn memory_counts_every_layer() {
        let mut f = ScalableBloomFilter::new(100, 0.01).unwrap();
        let one = f.memory_bytes();
        for i in 0..1000u32 {
            f.insert(&i).unwrap();
        }
        let bits_bytes: usize = f.layers().map(|l| l.memory_bytes).sum();
        assert_eq!(bits_bytes as u64, f.num_bits() / 8);
        assert!(f.memory_bytes() > one + bits_bytes / 2);
        assert!(f.memory_bytes() >= bits_bytes);
    }

    #[test]
    fn debug_shows_the_shape() {
        let f = ScalableBloomFilter::new(1_000_000, 0.01).unwrap();
        let s = format!("{f:?}");
        assert!(s.len() < 300 && s.contains("num_layers: 1"), "{s}");
    }
}
