//! [`RibbonFilter`]: a static filter built once from all its keys, close to the space lower
//! bound.
//!
//! `mod.rs` holds the public type and its API. A filter has one of two layouts: layout 2
//! (homogeneous and sharded, what builds make) and layout 1 (the standard ribbon bloomkit
//! 0.1 wrote, which still loads and answers as it did). `equation.rs` turns a hash into a
//! layout-1 equation and holds the query kernels both layouts share; `homogeneous.rs` turns a
//! hash into a layout-2 row; `build.rs` builds layout 1 (banding, back-substitution,
//! re-seeding) and `shard_build.rs` layout 2, shard by shard in bounded memory, with the
//! banding and back-substitution of `build.rs`; `persist.rs` stores and loads both. The
//! type's documentation explains the design.

mod batch;
mod build;
mod builder;
mod equation;
mod homogeneous;
mod persist;
mod shard_build;

pub use self::builder::RibbonBuilder;

use std::fmt;

use crate::error::{Error, Result};
use crate::format::FilterKind;
use crate::key::{Key, KeyHasher};
use crate::sizing;
use crate::Filter;

use self::build::StandardPlan;
use self::equation::{Kernel, Shape, MAX_RESULT_BITS};
use self::homogeneous::{Probe, Shards};
use self::shard_build::ShardPlan;

/// A ribbon filter: static, built once from all its keys, within a few percent of the
/// space lower bound.
///
/// Build it from any iterator of hashable keys ([`build`](Self::build)) or from their
/// precomputed hashes ([`build_from_hashes`](Self::build_from_hashes)), then query it with
/// [`contains`](Self::contains). There is no insert: to add keys, build a new filter from the
/// full set. The false-positive rate is [`fp_rate`](Self::fp_rate) = 2^−r, the largest power
/// of two at or below the rate asked for (a filter built today adds under 1% of that: see
/// below).
///
/// A Bloom filter spends 1.44·log2(1/p) bits per key; no filter can spend less than
/// log2(1/p). A ribbon filter (Dillinger & Walzer, "Ribbon filter: practically smaller than
/// Bloom and Xor", 2021) gets within a few percent of that bound: 7.33 bits per key for a
/// rate of 0.78%, at any number of keys, where a Bloom filter needs about 10.1. The price is
/// that it is *static*: it is built from the complete key set and cannot take more keys
/// afterwards. That suits files written once and read many times (an SST file's filter
/// block, a published deny-list, a shipped dictionary).
///
/// # How it works
///
/// Each key stands for one linear equation over GF(2): the key's hash gives a start slot and
/// a 128-bit coefficient row beginning there. The filter stores an r-bit value per slot such
/// that, for every key, the values of the slots its row selects XOR to zero. A query
/// recomputes the row and checks it; for a key that was not built in, the XOR is r bits that
/// look random, all zero with probability 2^−r.
///
/// The slots are cut into *shards* of about a million keys' worth, and a key's row lies in
/// one shard, so each shard is a system of its own. Building solves them one by one. Because
/// every row is confined to a band of 128 slots, Gaussian elimination is done on the fly as
/// a shard's rows arrive in order of start ("banding"), each row reduced against the rows
/// already placed until it lands on a free slot, in O(n) time with 128-bit XORs;
/// back-substitution from the shard's last slot to its first then yields a solution. The
/// system is *homogeneous* (every right-hand side is zero), so it always has solutions: a
/// build never fails and never starts over. Slots no row claims get pseudo-random values,
/// which makes the solution a random one among all solutions; an absent key then passes with
/// probability 2^−r, unless its row happens to be a combination of the built keys' rows
/// (then it always passes). The slack keeps that rare: measured, under 1% of 2^−r at r = 7.
///
/// Filters stored by bloomkit 0.1 (and 0.2 before layout 2) use *layout 1*, a standard ribbon (one system over
/// all slots, an r-bit result per key, exactly 2^−r, re-seeded when unsolvable); they load,
/// answer and store as they always did ([`RibbonLayout`]).
///
/// # Choices
///
/// * **Result bits** r = ⌈log2(1/p)⌉, 1 to 32, so the rate is 2^−r ≤ p: asking for 1% gives
///   r = 7 and a rate of 0.78%; asking for 0.1% gives r = 10 and 0.098%.
/// * **Width 128** (as RocksDB's Standard128Ribbon): wider rows need less slack than 64-bit
///   ones (at r = 7, about 4.7% against 9% for the same excess rate), and a u128 XOR is
///   cheap.
/// * **Slack**: a shard of n keys gets `n + max(⌈ε(r)·n⌉, r + 8)` slots, rounded up to a
///   multiple of 64, with ε(r) the larger of 0.047 + 0.0015·(r − 7) and
///   (r·ln 2 + ln 100) / 256: 4.7% at 1%, 5.15% at 0.1%, 6.1% at r = 16, whatever the
///   number of keys, since shards are solved apart. An absent row is a combination of built
///   ones about as often as the band holds a stretch of more than 128 occupied slots, which
///   grows rarer very fast with the slack (`shard_build.rs` has the measurements); a
///   smaller rate needs it rarer still, hence the growth with r. A filter of at most 128
///   slots is one dense system, where `r + 8` spare slots keep the excess under
///   2^−r / 256: up to 49 keys take 64 slots at 1%, up to 113 take 128.
/// * **Shards** of at most 2^20 keys (1,048,576; the keys are spread over
///   ⌈n / 2^20⌉ shards of equal size, within 0.3% of their mean load): the build's scratch
///   is bounded by a shard, and the slack need not grow with n.
/// * **Interleaved storage** (RocksDB's "interleaved solution storage"): slots in blocks of
///   64, each block r words, word j holding bit j of the block's 64 values. A query reads r
///   words from each of at most three adjacent blocks and takes r parities (eight at a time
///   in AVX2 registers where the CPU has them, all eight words of a block in one AVX-512
///   register for r ≤ 8 in layout 2); no loop over the 128 coefficients. No remix
///   of the hash: the start comes from its high bits, the coefficients from its low bits.
/// * **Build memory**: the keys' hashes (8 bytes each, unless built from hashes), and beside
///   them and the filter at most 2.7 bytes a key (a third of the hashes at a time, grouped by
///   shard) plus about 17 MiB (one shard's band and its keys, for the largest shards): about
///   25 MiB in all below a million keys, 1.6 GiB for 600 million. Hashes are read once per
///   third of the keys, and each shard's keys sorted by start, so the band fills front to
///   back and eliminations stay in cache.
/// * **Duplicates** are not looked for: an identical key gives an identical row, which
///   reduces to zero and is dropped. [`len`](Self::len) counts them, and the filter is sized
///   for them, so deduplicate first if many keys repeat.
/// * **No keys** builds a filter of no slots that answers "no" to everything.
///
/// # File format
///
/// Kind 6 in bloomkit's format (`docs/FORMAT.md`). Parameters, 28 bytes: number of slots
/// (u64), width (u32, always 128), result bits (u32), ribbon seed (u32, 0), layout (u32, 2),
/// number of shards (u32); layout 1 stops after the ribbon seed (20 bytes). The header's item
/// count is [`len`](Self::len). Payload: the interleaved solution, `slots / 64 × r` words,
/// block after block. The rows are derived from the key hash exactly as `homogeneous.rs`
/// (layout 1: `equation.rs`) documents, and golden files pin them.
///
/// # Examples
///
/// ```
/// use bloomkit::RibbonFilter;
///
/// let keys: Vec<u64> = (0..1_000_000).collect();
/// let f = RibbonFilter::build(&keys, 0.01)?;
/// assert_eq!(f.result_bits(), 7);
/// assert_eq!(f.fp_rate(), 0.0078125); // 2^-7: at most the 1% asked for
/// // Within 5% of the lower bound log2(1/0.0078125) = 7 bits per key.
/// assert!(f.bits_per_key() < 7.35, "{}", f.bits_per_key());
/// assert!(keys.iter().all(|k| f.contains(k)));
///
/// // The measured rate is the promised one (within the counting noise of a million
/// // queries, ±0.0003 at three standard deviations).
/// let hits = (1_000_000..2_000_000u64).filter(|k| f.contains(k)).count();
/// let rate = hits as f64 / 1e6;
/// assert!((rate - 0.0078125).abs() < 0.0006, "{rate}");
///
/// // Store and load.
/// let g = RibbonFilter::from_bytes(&f.to_bytes())?;
/// assert_eq!(f, g);
/// # Ok::<(), bloomkit::Error>(())
/// ```
#[derive(Clone)]
pub struct RibbonFilter {
    /// The interleaved solution: `num_slots / 64` blocks of `result_bits` words.
    solution: Vec<u64>,
    /// What turns a hash into an equation, by layout; derived from the fields below it.
    query: Query,
    layout: RibbonLayout,
    num_slots: u64,
    /// Layout 2's shards (0 for no keys); 0 in layout 1.
    num_shards: u64,
    result_bits: u32,
    ribbon_seed: u32,
    hasher: KeyHasher,
    len: u64,
    /// The query kernel for this CPU, chosen when the filter is made (not part of its
    /// value: equal filters may differ here; layout 2's `query` holds its choice too).
    kernel: Kernel,
}

/// How a filter lays out its slots and derives a key's equation: layout 2, the default, or
/// layout 1, which bloomkit 0.1 wrote.
///
/// Both answer [`RibbonFilter::contains`] with no false negatives at a rate of 2^−r. They
/// differ in how they are built and what they cost; a filter keeps the layout it was built
/// or stored with ([`RibbonFilter::layout`]).
///
/// | | [`Homogeneous`](Self::Homogeneous) (layout 2) | [`Standard`](Self::Standard) (layout 1) |
/// |---|---|---|
/// | equation | the selected slots XOR to 0 | they XOR to an r-bit result |
/// | rate | 2^−r, plus under 1% of it | exactly 2^−r |
/// | slack | ε(r) ≈ 4.7% at r = 7, at any n | ε(n) ≈ 4.6% at 10^6 keys, 7.8% at 10^9 |
/// | build | never fails; shard by shard | re-seeds when a system is unsolvable |
/// | build scratch | ≤ 2.7 bytes a key (plus 25 MiB) | about 29 bytes a key |
/// | query | about 1.4× fewer instructions | remixes the hash, computes a result |
///
/// # Examples
///
/// ```
/// use bloomkit::{RibbonFilter, RibbonLayout};
///
/// let hashes: Vec<u64> = (0..1000u32).map(|k| bloomkit::hash(&k)).collect();
/// let today = RibbonFilter::build_from_hashes(&hashes, 0.01)?;
/// assert_eq!(today.layout(), RibbonLayout::Homogeneous);
/// // A filter bloomkit 0.2 can read too.
/// let old = RibbonFilter::builder(0.01)
///     .layout(RibbonLayout::Standard)
///     .build_from_hashes(&hashes)?;
/// assert_eq!(old.layout(), RibbonLayout::Standard);
/// assert!((0..1000u32).all(|k| today.contains(&k) && old.contains(&k)));
/// # Ok::<(), bloomkit::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RibbonLayout {
    /// Layout 1: one standard ribbon (Dillinger & Walzer's), each key's equation with an r-bit
    /// result, exactly 2^−r; built in one piece, re-seeded when unsolvable.
    Standard,
    /// Layout 2: a homogeneous ribbon in shards of about a million keys, every key's equation
    /// equal to zero; built shard by shard in bounded memory, never re-seeded.
    Homogeneous,
}

/// A filter's equations, by layout, and (layout 2) the test its kernel makes of a row.
#[derive(Clone, Copy, Debug)]
enum Query {
    /// Layout 2 with at least one key.
    Homogeneous(Shards, Probe),
    /// Layout 1 with at least one key.
    Standard(Shape),
    /// No keys: every answer is "no".
    Empty,
}

/// A filter's size and layout, as built or stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Geometry {
    /// Layout 1: `num_slots` slots (0 for no keys), equations drawn with `ribbon_seed`.
    Standard { num_slots: u64, ribbon_seed: u32 },
    /// Layout 2: `num_shards` shards (0 for no keys) of `shard_slots` slots.
    Homogeneous { num_shards: u64, shard_slots: u64 },
}

/// How a build proceeds, by layout: tests use it to force re-seeding, many passes, or
/// sizes of their choosing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BuildPlan {
    Standard(StandardPlan),
    Homogeneous(ShardPlan),
}

impl BuildPlan {
    /// The plan a build of `items` keys with `result_bits` result bits follows in `layout`.
    fn for_items(layout: RibbonLayout, items: u64, result_bits: u32) -> Result<Self> {
        Ok(match layout {
            RibbonLayout::Standard => BuildPlan::Standard(StandardPlan::for_items(items)?),
            RibbonLayout::Homogeneous => {
                BuildPlan::Homogeneous(ShardPlan::for_items(items, result_bits)?)
            }
        })
    }
}

/// The result bits for a target rate: ⌈log2(1/p)⌉, at least 1.
pub(crate) fn result_bits_for(fp_rate: f64) -> Result<u32> {
    sizing::check_fp_rate(fp_rate)?;
    let bits = (-fp_rate.log2()).ceil().max(1.0);
    if bits > f64::from(MAX_RESULT_BITS) {
        return Err(Error::unreachable_fp_rate(
            fp_rate,
            "a rate of at least 2^-32 (about 2.33e-10): a ribbon filter stores at \
                       most 32 result bits per key",
        ));
    }
    Ok(bits as u32)
}

impl RibbonFilter {
    /// Builds a filter holding every key of `items`, at a false-positive rate of at most
    /// `fp_rate` (exactly 2^−⌈log2(1/fp_rate)⌉).
    ///
    /// Keys are anything hashable, by value or by reference: a reference hashes like the
    /// value it points to, so `&[String]`, `Vec<u64>`, `keys.iter()` and `["a", "b"]` all
    /// work, and the filter answers [`contains`](Self::contains) for the same keys. Duplicate
    /// keys are harmless; each still counts in [`len`](Self::len) and in the size.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidFpRate`] unless `0 < fp_rate < 1`; [`Error::InvalidParameter`] if
    /// `fp_rate` is below 2^−32; [`Error::TooLarge`] or [`Error::OutOfMemory`] if the
    /// filter or its scratch space does not fit; [`Error::ConstructionFailed`] if sixteen
    /// attempts at four sizes all fail, which does not happen with real hashes (each attempt
    /// fails with probability about 5% or less, independently).
    ///
    /// # Examples
    ///
    /// ```
    /// use bloomkit::RibbonFilter;
    ///
    /// let words = vec!["apple".to_string(), "pear".to_string(), "apple".to_string()];
    /// let f = RibbonFilter::build(&words, 0.001)?;
    /// assert_eq!(f.len(), 3); // the duplicate counts
    /// assert!(f.contains("apple") && f.contains("pear"));
    /// assert_eq!(f.fp_rate(), 1.0 / 1024.0);
    ///
    /// let f = RibbonFilter::build(["x", "y"].iter(), 0.5)?;
    /// assert!(f.contains("x") && f.contains("y"));
    ///
    /// // No keys: a filter that answers "no" to everything.
    /// let empty = RibbonFilter::build(Vec::<u64>::new(), 0.01)?;
    /// assert!(!empty.contains(&7u64));
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn build<I>(items: I, fp_rate: f64) -> Result<Self>
    where
        I: IntoIterator,
        I::Item: Key,
    {
        Self::builder(fp_rate).build(items)
    }

    /// Starts from [`build`](Self::build)'s plan for a rate of at most `fp_rate`, to change
    /// the seed, the exact result bits or the layout before [`build`](RibbonBuilder::build) takes the
    /// keys (or [`build_from_hashes`](RibbonBuilder::build_from_hashes) their hashes).
    ///
    /// # Examples
    ///
    /// ```
    /// use bloomkit::{RibbonFilter, RibbonLayout};
    ///
    /// let f = RibbonFilter::builder(0.01).seed(42).build(0..100u32)?;
    /// assert_eq!(f.seed(), 42);
    /// assert!((0..100u32).all(|k| f.contains(&k)));
    /// assert!(f.contains_hash(bloomkit::hash_with_seed(&5u32, 42)));
    ///
    /// // Hashes made with a seed build a filter that records it.
    /// let hashes: Vec<u64> = (0..10u8).map(|k| bloomkit::hash_with_seed(&k, 9)).collect();
    /// let f = RibbonFilter::builder(0.01).seed(9).build_from_hashes(&hashes)?;
    /// assert!((0..10u8).all(|k| f.contains(&k)));
    ///
    /// // Exactly 12 result bits: a rate of 2^-12.
    /// let f = RibbonFilter::builder(0.01).result_bits(12).build(0..100u32)?;
    /// assert_eq!(f.fp_rate(), 1.0 / 4096.0);
    ///
    /// // Layout 1, which bloomkit 0.1 reads too.
    /// let f = RibbonFilter::builder(0.01).layout(RibbonLayout::Standard).build(0..100u32)?;
    /// assert_eq!(f.layout(), RibbonLayout::Standard);
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn builder(fp_rate: f64) -> RibbonBuilder {
        RibbonBuilder::new(fp_rate)
    }

    /// Builds a filter from the keys' precomputed hashes ([`crate::hash`], the hash under
    /// [`DEFAULT_SEED`](crate::DEFAULT_SEED)), at a false-positive rate of at most `fp_rate`. Equal hashes are
    /// fine (they are the same key as far as the filter can tell).
    ///
    /// # Errors
    ///
    /// As [`build`](Self::build).
    ///
    /// # Examples
    ///
    /// ```
    /// use bloomkit::RibbonFilter;
    ///
    /// let hashes: Vec<u64> = ["a", "b", "c"].iter().map(bloomkit::hash).collect();
    /// let f = RibbonFilter::build_from_hashes(&hashes, 0.01)?;
    /// assert!(f.contains("b"));
    /// assert_eq!(f, RibbonFilter::build(["a", "b", "c"], 0.01)?);
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn build_from_hashes(hashes: &[u64], fp_rate: f64) -> Result<Self> {
        Self::builder(fp_rate).build_from_hashes(hashes)
    }

    /// The build behind every constructor: layout 2, planned for the number of keys, unless
    /// `plan` says otherwise (tests use it to force re-seeding and passes).
    pub(crate) fn build_planned(
        hashes: &[u64],
        result_bits: u32,
        hasher: KeyHasher,
        plan: Option<BuildPlan>,
    ) -> Result<Self> {
        let len = hashes.len() as u64;
        let plan = match plan {
            Some(plan) => plan,
            None => BuildPlan::for_items(RibbonLayout::Homogeneous, len, result_bits)?,
        };
        Ok(match plan {
            BuildPlan::Standard(plan) => {
                let solved = build::solve(hashes, result_bits, plan)?;
                Self::from_parts(
                    solved.solution,
                    Geometry::Standard {
                        num_slots: solved.num_slots,
                        ribbon_seed: solved.ribbon_seed,
                    },
                    result_bits,
                    hasher,
                    len,
                )
            }
            BuildPlan::Homogeneous(plan) => {
                let solution = shard_build::solve(hashes, result_bits, plan)?;
                let (num_shards, shard_slots) = if len == 0 {
                    (0, 0)
                } else {
                    (plan.num_shards, plan.shard_slots)
                };
                Self::from_parts(
                    solution,
                    Geometry::Homogeneous {
                        num_shards,
                        shard_slots,
                    },
                    result_bits,
                    hasher,
                    len,
                )
            }
        })
    }

    /// Assembles a filter from checked parts: `solution` holds `num_slots / 64 · r` words,
    /// and a geometry of no slots goes with no keys.
    fn from_parts(
        solution: Vec<u64>,
        geometry: Geometry,
        result_bits: u32,
        hasher: KeyHasher,
        len: u64,
    ) -> Self {
        let (layout, num_slots, num_shards, ribbon_seed, query) = match geometry {
            Geometry::Standard {
                num_slots,
                ribbon_seed,
            } => {
                let query = if num_slots == 0 {
                    Query::Empty
                } else {
                    Query::Standard(Shape::new(num_slots, result_bits, ribbon_seed))
                };
                (RibbonLayout::Standard, num_slots, 0, ribbon_seed, query)
            }
            Geometry::Homogeneous {
                num_shards,
                shard_slots,
            } => {
                let query = if num_shards == 0 {
                    Query::Empty
                } else {
                    let probe = Probe::new(Kernel::detect(), result_bits);
                    Query::Homogeneous(Shards::new(num_shards, shard_slots), probe)
                };
                let num_slots = num_shards * shard_slots;
                (RibbonLayout::Homogeneous, num_slots, num_shards, 0, query)
            }
        };
        RibbonFilter {
            solution,
            query,
            layout,
            num_slots,
            num_shards,
            result_bits,
            ribbon_seed,
            hasher,
            len,
            kernel: Kernel::detect(),
        }
    }

    /// `false` if `key` is definitely not one the filter was built from; `true` if it may
    /// be (always, for the keys it was built from).
    ///
    /// # Examples
    ///
    /// ```
    /// let f = bloomkit::RibbonFilter::build(["alice", "bob"], 0.01)?;
    /// assert!(f.contains("alice"));
    /// assert!(f.contains(&"bob".to_string()));
    /// assert!(!f.contains("carol"));
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    #[inline]
    pub fn contains<K: Key + ?Sized>(&self, key: &K) -> bool {
        self.contains_hash(self.hasher.hash(key))
    }

    /// [`contains`](Self::contains) by a precomputed hash (from this filter's
    /// [`key_hasher`](Self::key_hasher)). No allocation, no branch on the key beyond the
    /// empty-filter check.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = bloomkit::RibbonFilter::build(["alice"], 0.01)?;
    /// let h = bloomkit::hash("alice");
    /// assert!(f.contains_hash(h));
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    #[inline]
    pub fn contains_hash(&self, hash: u64) -> bool {
        match &self.query {
            Query::Homogeneous(shards, probe) => probe.contains(shards, &self.solution, hash),
            Query::Standard(shape) => self.contains_standard(shape, hash),
            Query::Empty => false,
        }
    }

    /// [`contains_hash`](Self::contains_hash) in layout 1. Out of line, so that the query of
    /// today's filters (one call into code compiled for the CPU) stays small enough to be
    /// inlined wherever it is asked.
    #[inline(never)]
    fn contains_standard(&self, shape: &Shape, hash: u64) -> bool {
        let eq = shape.equation(hash);
        equation::evaluate_with(self.kernel, &self.solution, self.result_bits, &eq) == eq.result
    }

    /// The number of keys the filter was built from, duplicates included (the build does not
    /// look for them; it only notices that their equations are redundant).
    ///
    /// # Examples
    ///
    /// ```
    /// let f = bloomkit::RibbonFilter::build([1, 2, 2, 3], 0.01)?;
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
    /// let f = bloomkit::RibbonFilter::build(Vec::<String>::new(), 0.01)?;
    /// assert!(f.is_empty() && f.num_slots() == 0);
    /// assert!(!f.contains("anything"));
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The bits a filter built from `items` keys at `fp_rate` takes (a build never re-seeds
    /// or grows, so this is exact): for sizing a machine, or a benchmark, without the keys.
    ///
    /// # Errors
    ///
    /// As [`build`](Self::build) for the rate; [`Error::TooLarge`] for absurd counts.
    ///
    /// # Examples
    ///
    /// ```
    /// use bloomkit::RibbonFilter;
    /// let keys: Vec<u64> = (0..10_000).collect();
    /// let f = RibbonFilter::build(&keys, 0.01)?;
    /// assert_eq!(RibbonFilter::planned_bits(10_000, 0.01)?, f.num_bits());
    /// // 600 million keys: a 512 MiB filter.
    /// let bits = RibbonFilter::planned_bits(600_000_000, 0.01)?;
    /// assert_eq!(bits / 8 >> 20, 524);
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn planned_bits(items: u64, fp_rate: f64) -> Result<u64> {
        let result_bits = result_bits_for(fp_rate)?;
        ShardPlan::for_items(items, result_bits)?
            .num_slots()?
            .checked_mul(u64::from(result_bits))
            .ok_or(Error::TooLarge { num_bits: u64::MAX })
    }

    /// The layout the filter was built or stored in: [`RibbonLayout::Homogeneous`] for every
    /// filter built today (unless asked otherwise, [`RibbonBuilder::layout`]),
    /// [`RibbonLayout::Standard`] for one read from a file bloomkit 0.1 wrote.
    ///
    /// # Examples
    ///
    /// ```
    /// use bloomkit::{RibbonFilter, RibbonLayout};
    /// let f = RibbonFilter::build(0..10u32, 0.01)?;
    /// assert_eq!(f.layout(), RibbonLayout::Homogeneous);
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn layout(&self) -> RibbonLayout {
        self.layout
    }

    /// Slots in the solution: a multiple of 64, a few percent more than [`len`](Self::len)
    /// (0 for an empty filter).
    ///
    /// # Examples
    ///
    /// ```
    /// let f = bloomkit::RibbonFilter::build(0..10_000u32, 0.01)?;
    /// // 10,000 keys + ⌈4.7%⌉ = 10,470, rounded up to whole blocks of 64.
    /// assert_eq!(f.num_slots(), 10_496);
    /// assert!(f.bits_per_key() < 7.35);
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn num_slots(&self) -> u64 {
        self.num_slots
    }

    /// Result bits r per slot: ⌈log2(1/p)⌉ for the rate p asked for.
    ///
    /// # Examples
    ///
    /// ```
    /// use bloomkit::RibbonFilter;
    /// assert_eq!(RibbonFilter::build([1], 0.01)?.result_bits(), 7); // 2^-7 ≤ 1% < 2^-6
    /// assert_eq!(RibbonFilter::build([1], 0.5)?.result_bits(), 1);
    /// assert_eq!(RibbonFilter::build([1], 1e-6)?.result_bits(), 20);
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn result_bits(&self) -> u32 {
        self.result_bits
    }

    /// The false-positive rate: 2^−r for a key the filter was not built from. In layout 2
    /// (every filter built today) an absent key whose row is a combination of the built
    /// rows always passes, which adds under 1% of 2^−r at r = 7 (measured over many shards;
    /// `tests/it/ribbon.rs` checks it); layout 1 gives exactly 2^−r. Keys are distinguished by
    /// their 64-bit hashes, so a key whose hash equals a built key's is always a false
    /// positive; with fewer than 2^32 keys that adds less than 2^−32.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = bloomkit::RibbonFilter::build([1u8], 0.001)?;
    /// assert_eq!(f.result_bits(), 10);
    /// assert_eq!(f.fp_rate(), 0.0009765625);
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn fp_rate(&self) -> f64 {
        (-f64::from(self.result_bits)).exp2()
    }

    /// The false-positive rate a query for an absent key risks: [`fp_rate`](Self::fp_rate),
    /// which a static filter delivers from the start, or 0 for a filter built from no keys
    /// (it answers "no" to everything). For code that asks every kind the same question
    /// ([`Filter::estimated_fp_rate`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use bloomkit::RibbonFilter;
    /// let f = RibbonFilter::build(0..100u32, 0.01)?;
    /// assert_eq!(f.estimated_fp_rate(), f.fp_rate());
    /// assert_eq!(RibbonFilter::build(Vec::<u32>::new(), 0.01)?.estimated_fp_rate(), 0.0);
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn estimated_fp_rate(&self) -> f64 {
        if self.is_empty() {
            0.0
        } else {
            self.fp_rate()
        }
    }

    /// Bits of solution: [`num_slots`](Self::num_slots) × [`result_bits`](Self::result_bits).
    ///
    /// # Examples
    ///
    /// ```
    /// let f = bloomkit::RibbonFilter::build(0..1000u32, 0.01)?;
    /// assert_eq!(f.num_bits(), 1088 * 7);
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn num_bits(&self) -> u64 {
        self.num_slots * u64::from(self.result_bits)
    }

    /// Bits of solution per key built from (0 for an empty filter); compare with the lower
    /// bound log2(1 / [`fp_rate`](Self::fp_rate)) = [`result_bits`](Self::result_bits).
    ///
    /// # Examples
    ///
    /// ```
    /// let f = bloomkit::RibbonFilter::build(0..100_000u32, 0.001)?;
    /// let over = f.bits_per_key() / f.result_bits() as f64 - 1.0;
    /// assert!(over < 0.055, "{over}"); // 10.52 bits per key for 2^-10
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn bits_per_key(&self) -> f64 {
        sizing::bits_per_key(self.num_bits(), self.len)
    }

    /// The ribbon seed the build settled on: in layout 1, the number of failed attempts
    /// before it (stored with the filter; most builds succeed at seed 0). Layout 2 never
    /// fails, so its seed is always 0.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = bloomkit::RibbonFilter::build(0..1000u32, 0.01)?;
    /// assert!(f.ribbon_seed() < 16);
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn ribbon_seed(&self) -> u32 {
        self.ribbon_seed
    }

    /// The hash seed keys are hashed with ([`DEFAULT_SEED`](crate::DEFAULT_SEED) unless built with another).
    ///
    /// # Examples
    ///
    /// ```
    /// let f = bloomkit::RibbonFilter::build(["k"], 0.01)?;
    /// assert_eq!(f.seed(), bloomkit::DEFAULT_SEED);
    /// assert!(f.contains_hash(bloomkit::hash_with_seed("k", f.seed())));
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn seed(&self) -> u64 {
        self.hasher.seed()
    }

    /// How keys are hashed: the seed, and whether as today or as bloomkit 0.1 did (a filter
    /// read from a 0.1 file). Hash a key with it to probe by hash.
    pub fn key_hasher(&self) -> KeyHasher {
        self.hasher
    }

    /// Bytes of memory the filter holds: the solution and the struct itself. (A build needs
    /// scratch space while it runs: the keys' hashes, 8 bytes a key unless it was given
    /// them, and beside those at most 2.7 bytes a key and about 25 MiB.)
    ///
    /// # Examples
    ///
    /// ```
    /// let f = bloomkit::RibbonFilter::build(0..1_000_000u32, 0.01)?;
    /// let per_key = f.memory_bytes() as f64 / 1e6;
    /// assert!(per_key < 0.92, "{per_key}"); // 7.3 bits
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn memory_bytes(&self) -> usize {
        std::mem::size_of::<Self>() + self.solution.capacity() * std::mem::size_of::<u64>()
    }
}

impl RibbonFilter {
    /// The filter with its query kernel set directly, not through the process-wide switch
    /// that benchmarks flip: for tests that compare the kernels. The AVX2 and AVX-512 ones
    /// only where this CPU has them (`cpu::avx2_for_test`, `cpu::avx512_for_test`).
    #[cfg(test)]
    fn with_kernel(mut self, kernel: Kernel) -> Self {
        self.kernel = kernel;
        if let Query::Homogeneous(_, probe) = &mut self.query {
            *probe = Probe::new(kernel, self.result_bits);
        }
        self
    }
}

impl PartialEq for RibbonFilter {
    /// Equal when built alike and holding the same solution, so they answer every query
    /// alike.
    fn eq(&self, other: &Self) -> bool {
        self.layout == other.layout
            && self.num_slots == other.num_slots
            && self.num_shards == other.num_shards
            && self.result_bits == other.result_bits
            && self.ribbon_seed == other.ribbon_seed
            && self.hasher == other.hasher
            && self.len == other.len
            && self.solution == other.solution
    }
}

impl Eq for RibbonFilter {}

impl fmt::Debug for RibbonFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RibbonFilter")
            .field("len", &self.len)
            .field("num_slots", &self.num_slots)
            .field("result_bits", &self.result_bits)
            .field("ribbon_seed", &self.ribbon_seed)
            .field("layout", &self.layout)
            .field("hasher", &self.hasher)
            .finish_non_exhaustive()
    }
}

impl Filter for RibbonFilter {
    fn contains_hash(&self, hash: u64) -> bool {
        RibbonFilter::contains_hash(self, hash)
    }
    fn key_hasher(&self) -> KeyHasher {
        self.hasher
    }
    fn kind(&self) -> FilterKind {
        FilterKind::Ribbon
    }
    fn memory_bytes(&self) -> usize {
        RibbonFilter::memory_bytes(self)
    }
    fn len(&self) -> u64 {
        RibbonFilter::len(self)
    }
    fn estimated_fp_rate(&self) -> f64 {
        RibbonFilter::estimated_fp_rate(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hashes(n: u64) -> Vec<u64> {
        (0..n).map(|i| crate::hash(&i)).collect()
    }

    const LAYOUTS: [RibbonLayout; 2] = [RibbonLayout::Homogeneous, RibbonLayout::Standard];

    fn build_in(layout: RibbonLayout, hashes: &[u64], p: f64) -> RibbonFilter {
        RibbonFilter::builder(p)
            .layout(layout)
            .build_from_hashes(hashes)
            .unwrap()
    }

    /// A layout-1 plan.
    fn standard(num_slots: u64, seeds_per_size: u32, sizes: u32) -> Option<BuildPlan> {
        Some(BuildPlan::Standard(StandardPlan {
            num_slots,
            seeds_per_size,
            sizes,
        }))
    }

    /// A filter answers alike with every query kernel (AVX2 and AVX-512 where the CPU has
    /// them), for keys in it and not, at rates whose r takes the AVX2 kernel's single group
    /// (every r the AVX-512 kernel masks differently: 1 to 8), several groups and one
    /// partial group, in filters large and small (where more rows reach the end), in both
    /// layouts.
    #[test]
    fn kernels_answer_alike() {
        for (layout, (n, p)) in LAYOUTS.into_iter().flat_map(|l| {
            [
                (10_000u64, 0.01),
                (3_000, 0.5),
                (3_000, 0.25),
                (3_000, 0.125),
                (3_000, 0.06),
                (3_000, 0.03),
                (3_000, 0.015),
                (3_000, 0.004),
                (2_000, 1e-3),
                (1_000, 1e-7),
                (500, 3e-10),
                (40, 0.01),
            ]
            .map(|c| (l, c))
        }) {
            let f = build_in(layout, &hashes(n), p);
            // Each kernel set directly: AVX2 and AVX-512 where this CPU has them.
            let portable = f.clone().with_kernel(Kernel::PORTABLE);
            let mut others = Vec::new();
            if crate::cpu::avx2_for_test("kernels_answer_alike") {
                others.push(f.clone().with_kernel(Kernel::AVX2));
            }
            if crate::cpu::avx512_for_test("kernels_answer_alike") {
                others.push(f.clone().with_kernel(Kernel::AVX512));
            }
            let probes = (0..100_000u64).map(|i| crate::hash(&(i + n / 2)));
            let mut hits = 0u64;
            for h in probes {
                let answer = portable.contains_hash(h);
                for other in &others {
                    assert_eq!(other.contains_hash(h), answer, "{layout:?} n={n} p={p}");
                }
                hits += u64::from(answer);
            }
            assert!(hits >= n / 2, "{layout:?} n={n} p={p} {hits}");
        }
        eprintln!("ribbon query kernels: {:?}", Kernel::detect());
    }

    #[test]
    fn result_bits_follow_the_rate() {
        for (p, r) in [
            (0.5, 1),
            (0.9, 1),
            (0.25, 2),
            (0.01, 7),
            (0.0078125, 7),
            (0.0078, 8),
            (0.001, 10),
            (1e-9, 30),
            (2.0f64.powi(-32), 32),
        ] {
            assert_eq!(result_bits_for(p).unwrap(), r, "{p}");
        }
        for p in [0.0, 1.0, -0.5, 2.0, f64::NAN, f64::INFINITY] {
            assert!(
                matches!(result_bits_for(p), Err(Error::InvalidFpRate { .. })),
                "{p}"
            );
        }
        for p in [1e-10, 1e-300, f64::MIN_POSITIVE] {
            assert!(
                matches!(
                    result_bits_for(p),
                    Err(Error::InvalidParameter {
                        name: "fp_rate",
                        ..
                    })
                ),
                "{p}"
            );
        }
    }

    #[test]
    fn duplicates_reduce_to_nothing() {
        for layout in LAYOUTS {
            let mut hs = hashes(500);
            hs.extend_from_within(..);
            hs.extend_from_within(..100);
            let f = build_in(layout, &hs, 0.01);
            assert_eq!(f.len(), 1100);
            assert!(hs.iter().all(|&h| f.contains_hash(h)));
            // One key, a thousand times: still one equation's worth of constraint, and
            // solvable at the first seed.
            let same = vec![crate::hash("k"); 1000];
            let f = build_in(layout, &same, 0.01);
            assert_eq!(f.ribbon_seed(), 0);
            assert!(f.contains("k"));
        }
    }

    /// A plan with far too little slack fails at its first size, re-seeds, grows, and still
    /// builds a correct filter.
    #[test]
    fn too_little_slack_forces_reseeding_and_growth() {
        let n = 100_000;
        let hs = hashes(n);
        let plan = standard(n.next_multiple_of(64), 4, 4);
        let f = RibbonFilter::build_planned(&hs, 7, KeyHasher::default(), plan).unwrap();
        assert!(f.ribbon_seed() >= 4, "the first size should not suffice");
        assert!(f.num_slots() > n.next_multiple_of(64));
        assert!(hs.iter().all(|&h| f.contains_hash(h)));
        // And it survives a round trip with its ribbon seed.
        let g = RibbonFilter::from_bytes(&f.to_bytes()).unwrap();
        assert_eq!(g.ribbon_seed(), f.ribbon_seed());
        assert!(hs.iter().all(|&h| g.contains_hash(h)));
    }

    /// A re-seed at the same size: in 704 slots, 700 keys fail at a first seed about 80% of
    /// the time; these keys need more than one.
    #[test]
    fn a_failed_seed_is_retried_at_the_same_size() {
        let plan = standard(704, 32, 1);
        let mut reseeded = 0;
        for salt in 0..20u64 {
            let hs: Vec<u64> = (0..700u64).map(|i| crate::hash(&(salt, i))).collect();
            let f = RibbonFilter::build_planned(&hs, 8, KeyHasher::default(), plan).unwrap();
            assert_eq!(f.num_slots(), 704);
            assert!(hs.iter().all(|&h| f.contains_hash(h)));
            reseeded += (f.ribbon_seed() > 0) as u32;
        }
        assert!(reseeded >= 10, "{reseeded}");
    }

    #[test]
    fn hopeless_plans_end_in_construction_failed() {
        let hs = hashes(100_000);
        // Far fewer slots than keys, even after growing twice: never solvable.
        let plan = standard(64, 3, 3);
        assert!(matches!(
            RibbonFilter::build_planned(&hs, 7, KeyHasher::default(), plan),
            Err(Error::ConstructionFailed { attempts: 9 })
        ));
    }

    #[test]
    fn empty_says_no_and_is_small() {
        for layout in LAYOUTS {
            let f = build_in(layout, &[], 0.01);
            assert_eq!((f.len(), f.num_slots(), f.num_bits()), (0, 0, 0));
            assert_eq!(f.bits_per_key(), 0.0);
            assert!((0..10_000u64).all(|h| !f.contains_hash(h)));
            assert_eq!(f.memory_bytes(), std::mem::size_of::<RibbonFilter>());
            let g = RibbonFilter::from_bytes(&f.to_bytes()).unwrap();
            assert_eq!(f, g);
            assert_eq!(g.layout(), layout);
            assert!(!g.contains_hash(0));
        }
    }

    /// Layout 2 gives a small filter at least r + 8 spare slots (a filter of up to 128 slots
    /// is one dense system), and whole blocks.
    #[test]
    fn small_homogeneous_filters_keep_spare_slots() {
        for (n, p, slots) in [
            (1u64, 0.01, 64u64),
            (40, 0.01, 64),
            (49, 0.01, 64),
            (50, 0.01, 128),
            (113, 0.01, 128),
            (114, 0.01, 192),
            (49, 0.001, 128),
            (1000, 0.01, 1088),
        ] {
            let hs = hashes(n);
            let f = RibbonFilter::build_from_hashes(&hs, p).unwrap();
            assert_eq!(f.num_slots(), slots, "{n} {p}");
            assert_eq!(RibbonFilter::planned_bits(n, p).unwrap(), f.num_bits());
            assert!(hs.iter().all(|&h| f.contains_hash(h)));
        }
    }

    /// Layout 1's sizes, as bloomkit 0.2 made them.
    #[test]
    fn small_filters_use_one_or_two_blocks() {
        for (n, slots) in [
            (1u64, 64u64),
            (40, 64),
            (55, 64),
            (56, 128),
            (100, 128),
            (121, 192),
        ] {
            let hs = hashes(n);
            let f = build_in(RibbonLayout::Standard, &hs, 0.01);
            assert_eq!(f.num_slots(), slots, "{n}");
            assert!(hs.iter().all(|&h| f.contains_hash(h)));
        }
    }

    #[test]
    fn memory_is_the_solution() {
        for layout in LAYOUTS {
            let f = build_in(layout, &hashes(10_000), 0.01);
            let words = f.num_slots() / 64 * 7;
            assert_eq!(
                f.memory_bytes(),
                std::mem::size_of::<RibbonFilter>() + words as usize * 8
            );
            assert_eq!(f.num_bits(), words * 64);
        }
    }

    #[test]
    fn is_send_sync_and_clone() {
        fn assert_traits<T: Send + Sync + Clone + fmt::Debug + Eq>() {}
        assert_traits::<RibbonFilter>();
    }

    #[test]
    fn debug_shows_the_shape() {
        let f = RibbonFilter::build_from_hashes(&hashes(1000), 0.01).unwrap();
        let s = format!("{f:?}");
        assert!(
            s.starts_with("RibbonFilter { len: 1000, num_slots: "),
            "{s}"
        );
        assert!(s.len() < 200);
    }
}
