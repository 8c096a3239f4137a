//! [`AgingBloomFilter`]: "seen recently", a Bloom filter whose keys expire by generations.
//!
//! A Bloom filter remembers forever, and fills up: a service that asks "have I seen this key
//! lately?" over an endless stream needs one that forgets. The aging filter keeps G
//! generations, each a [`BlockedBloomFilter`]: inserts go to the newest, a query asks all of
//! them, and [`rotate`](AgingBloomFilter::rotate) (a server calls it on a timer, or every N
//! inserts) drops the oldest and starts an empty newest one. Keys therefore expire in
//! batches, a generation at a time: with a rotation every T seconds, a key is remembered for at
//! least (G − 1)·T and at most G·T after its last insert. More generations give a smoother
//! window for the same length, at G generations' memory.
//!
//! The use it was built for is a CDN's cache admission: most objects are requested once and
//! never again ("one-hit wonders"), and caching them evicts objects that would have been hit.
//! Admitting an object only on its *second* request within a window keeps them out
//! ([`check_and_insert`](AgingBloomFilter::check_and_insert) does the check and the insert
//! in one call). The same shape deduplicates events over a sliding window, or rate-limits
//! repeated work.
//!
//! Why it is built this way:
//!
//! * **Blocked generations.** Every query checks G filters, so each should cost one cache miss:
//!   the blocked layout, whose probing this type calls rather than repeats.
//! * **The target rate is the whole filter's.** A query for an absent key is a false positive
//!   if *any* generation says "maybe", so with each generation at rate q the filter's rate is
//!   1 − (1 − q)^G. Each generation is sized for q = 1 − (1 − p)^(1/G)
//!   ([`generation_fp_rate`](AgingBloomFilter::generation_fp_rate)), so that with every
//!   generation holding its planned keys the filter meets p.
//! * **Rotation recycles.** The dropped generation's memory is zeroed and becomes the new
//!   newest one: a rotation allocates nothing, cannot fail, and costs one generation's worth
//!   of zeroing.
//!
//! The files: this one has the type, its operations and rotation; `builder.rs`
//! [`AgingBuilder`], the plan (each generation's rate and size); `persist.rs` the file format
//! (kind 7); `tests.rs` the unit tests. Each generation is a [`BlockedBloomFilter`], whose
//! methods this type calls.

use crate::error::{Error, Result};
use crate::format::FilterKind;
use crate::key::{Key, KeyHasher};
use crate::{BlockedBloomFilter, Filter};
use std::fmt;

mod builder;
mod persist;
#[cfg(test)]
mod tests;

pub use self::builder::AgingBuilder;

/// The most generations a filter may have: a query checks every one, so past a few dozen a
/// finer window costs more in query time than it is worth.
const MAX_GENERATIONS: u32 = 64;

/// An aging Bloom filter: G generations of [`BlockedBloomFilter`]s, newest first, that rotate
/// out, so that it answers "seen within the last G rotation periods?".
///
/// Inserts go to the newest generation; queries check all; [`rotate`](Self::rotate) (on a
/// timer, or every so many inserts) drops the oldest and recycles its memory as an empty
/// newest one. With a rotation every T, a key is remembered for at least (G − 1)·T and at most
/// G·T after its last insert; more generations make that window smoother, for G generations'
/// memory.
///
/// Built for a CDN's cache admission: admit an object only on its second request within the
/// window, which keeps out the many objects requested once
/// ([`check_and_insert`](Self::check_and_insert) checks and records in one call). It also
/// deduplicates events over a sliding window.
///
/// The target rate is the whole filter's: a query is a false positive if any generation says
/// "maybe", so each generation is a blocked filter sized for
/// [`generation_fp_rate`](Self::generation_fp_rate) = 1 − (1 − p)^(1/G), and with every
/// generation holding its planned keys the filter meets p (at 1% with two generations, 11.5
/// bits per key per generation, 7 probes).
///
/// # Examples
///
/// ```
/// use bloomkit::AgingBloomFilter;
///
/// // Two generations of up to 100,000 keys each; 1% for the whole filter.
/// let mut recent = AgingBloomFilter::new(100_000, 0.01)?;
/// recent.insert("a");
/// recent.rotate();
/// assert!(recent.contains("a")); // one rotation ago: still remembered
/// recent.rotate();
/// assert!(!recent.contains("a")); // two: forgotten
///
/// // With both generations full, the rate meets the target.
/// for i in 0..100_000u64 { recent.insert(&i); }
/// recent.rotate();
/// for i in 100_000..200_000u64 { recent.insert(&i); }
/// assert!((0..200_000u64).all(|i| recent.contains(&i)));
/// let fp = (200_000..400_000u64).filter(|i| recent.contains(i)).count() as f64 / 200_000.0;
/// assert!(fp > 0.008 && fp <= 0.011, "{fp}");
/// # Ok::<(), bloomkit::Error>(())
/// ```
#[derive(Clone)]
pub struct AgingBloomFilter {
    /// Newest first: `generations[0]` takes the inserts, the last is the next to be recycled.
    /// Never empty, and all of the same bits, probes and seed.
    generations: Vec<BlockedBloomFilter>,
}

impl AgingBloomFilter {
    /// The number of generations to choose when nothing argues otherwise: a key is
    /// remembered for between one and two rotation periods.
    pub const DEFAULT_GENERATIONS: u32 = 2;

    /// A filter of [`DEFAULT_GENERATIONS`](Self::DEFAULT_GENERATIONS) (2) generations, each
    /// a [`BlockedBloomFilter`] sized for `items_per_generation` keys (the most one rotation
    /// period brings) at the rate
    /// [`generation_fp_rate`](Self::generation_fp_rate)`(fp_rate, 2)`, so that a query,
    /// which checks every generation, meets `fp_rate` while each holds its planned keys.
    /// `items_per_generation = 0` is treated as 1. Another number of generations:
    /// [`builder`](Self::builder)`(items, fp_rate).generations(g)`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidFpRate`] unless `0 < fp_rate < 1`; [`Error::FpRateTooSmall`];
    /// [`Error::TooLarge`] or [`Error::OutOfMemory`] if the generations do not fit.
    ///
    /// # Examples
    ///
    /// ```
    /// use bloomkit::{AgingBloomFilter, BlockedBloomFilter};
    ///
    /// let f = AgingBloomFilter::new(1_000_000, 0.01)?;
    /// assert_eq!(f.num_generations(), 2);
    /// // Each generation is the blocked filter for the tighter per-generation rate.
    /// let q = AgingBloomFilter::generation_fp_rate(0.01, 2)?;
    /// assert_eq!(f.generation(0), Some(&BlockedBloomFilter::new(1_000_000, q)?));
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn new(items_per_generation: u64, fp_rate: f64) -> Result<Self> {
        Self::builder(items_per_generation, fp_rate).build()
    }

    /// Starts from [`new`](Self::new)'s plan for `items_per_generation` keys a generation at
    /// `fp_rate` for the whole filter, to change any of it before
    /// [`build`](AgingBuilder::build): the number of generations, the seed, the exact bits of
    /// each generation, the number of probes.
    ///
    /// # Examples
    ///
    /// ```
    /// use bloomkit::{AgingBloomFilter, BlockedBloomFilter};
    ///
    /// let f = AgingBloomFilter::builder(1_000_000, 0.01).generations(4).build()?;
    /// assert_eq!(f.num_generations(), 4);
    /// let q = AgingBloomFilter::generation_fp_rate(0.01, 4)?;
    /// assert!((q - 0.002510).abs() < 1e-6, "{q}");
    /// assert_eq!(f.generation(0), Some(&BlockedBloomFilter::new(1_000_000, q)?));
    ///
    /// // An exact shape: bits per generation (whole 512-bit lines) and probes.
    /// let f = AgingBloomFilter::builder(1000, 0.01)
    ///     .num_bits_per_generation(1000)
    ///     .num_hashes(6)
    ///     .generations(3)
    ///     .build()?;
    /// assert_eq!((f.num_bits_per_generation(), f.num_bits()), (1024, 3 * 1024));
    /// assert!(AgingBloomFilter::builder(1000, 0.01).generations(0).build().is_err());
    /// assert!(AgingBloomFilter::builder(1000, 0.01).generations(65).build().is_err());
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn builder(items_per_generation: u64, fp_rate: f64) -> AgingBuilder {
        AgingBuilder::new(items_per_generation, fp_rate)
    }

    /// The filter of `generations` generations shaped like `first`.
    pub(crate) fn from_first(first: BlockedBloomFilter, generations: u32) -> Result<Self> {
        check_generations(generations)?;
        let mut all = Vec::new();
        all.try_reserve_exact(generations as usize)
            .map_err(|_| Error::OutOfMemory {
                bytes: generations as u64 * std::mem::size_of::<BlockedBloomFilter>() as u64,
            })?;
        let (num_bits, num_hashes, hasher, probes) = (
            first.num_bits(),
            first.num_hashes(),
            first.key_hasher(),
            first.probes(),
        );
        all.push(first);
        for _ in 1..generations {
            all.push(BlockedBloomFilter::with_params_and_hasher(
                num_bits, num_hashes, hasher, probes,
            )?);
        }
        Ok(AgingBloomFilter { generations: all })
    }

    /// The rate each of `generations` generations is sized for so that the whole filter
    /// meets `fp_rate`: a query is a false positive if any generation says "maybe", so
    /// 1 − (1 − q)^G = p, and q = 1 − (1 − p)^(1/G), slightly more than p / G.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] unless `generations` is 1 to 64; [`Error::InvalidFpRate`]
    /// unless `0 < fp_rate < 1`.
    ///
    /// # Examples
    ///
    /// ```
    /// use bloomkit::AgingBloomFilter;
    ///
    /// let q = AgingBloomFilter::generation_fp_rate(0.01, 2)?;
    /// assert!((q - 0.005013).abs() < 1e-6, "{q}");
    /// assert!((1.0 - (1.0 - q) * (1.0 - q) - 0.01).abs() < 1e-15);
    /// assert_eq!(AgingBloomFilter::generation_fp_rate(0.01, 1)?, 0.01);
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn generation_fp_rate(fp_rate: f64, generations: u32) -> Result<f64> {
        check_generations(generations)?;
        if !(fp_rate > 0.0 && fp_rate < 1.0) {
            return Err(Error::InvalidFpRate { fp_rate });
        }
        if generations == 1 {
            return Ok(fp_rate);
        }
        // In logarithms, so that tiny rates keep their precision: 1 − p rounds to 1 below
        // 1e-16, while ln(1 − p) and e^x − 1 computed directly do not.
        Ok(-((-fp_rate).ln_1p() / generations as f64).exp_m1())
    }

    /// Adds `key` to the newest generation; returns `true` if that generation changed (the
    /// key was definitely not in it before).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut f = bloomkit::AgingBloomFilter::new(100, 0.01)?;
    /// assert!(f.insert("a"));
    /// assert!(!f.insert("a"));
    /// f.rotate();
    /// assert!(f.insert("a")); // refreshed into the new generation
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    #[inline]
    pub fn insert<K: Key + ?Sized>(&mut self, key: &K) -> bool {
        self.insert_hash(self.key_hasher().hash(key))
    }

    /// [`insert`](Self::insert) by a precomputed hash (from this filter's
    /// [`key_hasher`](Self::key_hasher)).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut f = bloomkit::AgingBloomFilter::new(100, 0.01)?;
    /// f.insert_hash(bloomkit::hash("a"));
    /// assert!(f.contains("a"));
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    #[inline]
    pub fn insert_hash(&mut self, hash: u64) -> bool {
        self.generations[0].insert_hash(hash)
    }

    /// `false` if `key` was definitely not inserted within the last
    /// [`num_generations`](Self::num_generations) generations; `true` if it may have been.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut f = bloomkit::AgingBloomFilter::builder(100, 0.01).generations(3).build()?;
    /// f.insert(&1u8);
    /// f.rotate();
    /// f.rotate();
    /// assert!(f.contains(&1u8) && !f.contains(&2u8));
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    #[inline]
    pub fn contains<K: Key + ?Sized>(&self, key: &K) -> bool {
        self.contains_hash(self.key_hasher().hash(key))
    }

    /// [`contains`](Self::contains) by a precomputed hash. The newest generation is asked
    /// first: a recently seen key is most likely there.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut f = bloomkit::AgingBloomFilter::new(100, 0.01)?;
    /// f.insert("a");
    /// assert!(f.contains_hash(bloomkit::hash("a")));
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    #[inline]
    pub fn contains_hash(&self, hash: u64) -> bool {
        self.generations.iter().any(|g| g.contains_hash(hash))
    }

    /// Whether `key` was seen within the window before this call, and then records it: the
    /// "admit on second request" check of a CDN cache in one call. The key is inserted into
    /// the newest generation either way, so a key seen again stays in the window.
    ///
    /// # Examples
    ///
    /// A cache that admits an object only when it is requested a second time within two
    /// rotation periods, which keeps out the objects requested once:
    ///
    /// ```
    /// use bloomkit::AgingBloomFilter;
    ///
    /// let mut requested = AgingBloomFilter::new(10_000, 0.001)?;
    /// let mut cache = std::collections::HashSet::new();
    /// let mut serve = |url: &str, requested: &mut AgingBloomFilter| {
    ///     if requested.check_and_insert(url) {
    ///         cache.insert(url.to_string());
    ///     }
    /// };
    /// serve("/index.html", &mut requested); // first request: not admitted
    /// serve("/once.jpg", &mut requested);
    /// requested.rotate(); // the server's timer, every few minutes
    /// serve("/index.html", &mut requested); // second request within the window: admitted
    /// requested.rotate();
    /// requested.rotate();
    /// serve("/once.jpg", &mut requested); // too late: counts as a first request again
    /// assert!(cache.contains("/index.html") && !cache.contains("/once.jpg"));
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    #[inline]
    pub fn check_and_insert<K: Key + ?Sized>(&mut self, key: &K) -> bool {
        self.check_and_insert_hash(self.key_hasher().hash(key))
    }

    /// [`check_and_insert`](Self::check_and_insert) by a precomputed hash.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut f = bloomkit::AgingBloomFilter::new(100, 0.01)?;
    /// let h = bloomkit::hash("a");
    /// assert!(!f.check_and_insert_hash(h));
    /// assert!(f.check_and_insert_hash(h));
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    #[inline]
    pub fn check_and_insert_hash(&mut self, hash: u64) -> bool {
        let (newest, older) = self.generations.split_at_mut(1);
        // An insert that changes nothing in the newest generation found all its bits there:
        // the key was already in it. Otherwise it may be in an older one.
        !newest[0].insert_hash(hash) || older.iter().any(|g| g.contains_hash(hash))
    }

    /// Drops the oldest generation and starts an empty newest one: every key last inserted
    /// [`num_generations`](Self::num_generations) rotations ago is forgotten. Call it on a
    /// timer (every window / G) or every so many inserts.
    ///
    /// The dropped generation's memory is zeroed and reused, so a rotation never allocates
    /// and never fails; it costs one generation's worth of zeroing, at memory speed (under a
    /// millisecond for a 29 MB generation, planned for 20 million keys at 1%, on a current
    /// server).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut f = bloomkit::AgingBloomFilter::builder(1000, 0.01).generations(3).build()?;
    /// f.insert("a");
    /// let memory = f.memory_bytes();
    /// f.rotate();
    /// f.rotate();
    /// assert!(f.contains("a"));
    /// f.rotate();
    /// assert!(!f.contains("a"));
    /// assert_eq!(f.memory_bytes(), memory);
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn rotate(&mut self) {
        // Moves G small handles (no bits), bringing the oldest to the front.
        self.generations.rotate_right(1);
        self.generations[0].clear();
    }

    /// Forgets every key, keeping the memory: as [`rotate`](Self::rotate) G times.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut f = bloomkit::AgingBloomFilter::builder(1000, 0.01).generations(3).build()?;
    /// f.insert("a");
    /// f.clear();
    /// assert!(!f.contains("a") && f.len() == 0);
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn clear(&mut self) {
        for generation in &mut self.generations {
            generation.clear();
        }
    }

    /// The number of generations, G: a key stays for G rotations after its last insert.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = bloomkit::AgingBloomFilter::new(100, 0.01)?;
    /// assert_eq!(f.num_generations(), 2);
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn num_generations(&self) -> u32 {
        self.generations.len() as u32
    }

    /// The generation `age` rotations old: 0 is the newest, which takes the inserts; `None`
    /// past the oldest.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut f = bloomkit::AgingBloomFilter::new(100, 0.01)?;
    /// f.insert("a");
    /// f.rotate();
    /// assert!(f.generation(1).unwrap().contains("a"));
    /// assert!(!f.generation(0).unwrap().contains("a"));
    /// assert!(f.generation(2).is_none());
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn generation(&self, age: usize) -> Option<&BlockedBloomFilter> {
        self.generations.get(age)
    }

    /// Bits in each generation (a multiple of 512).
    ///
    /// # Examples
    ///
    /// ```
    /// let f = bloomkit::AgingBloomFilter::new(1_000_000, 0.01)?;
    /// // At 0.5% per generation: about 11.6 bits per key each.
    /// let bits_per_key = f.num_bits_per_generation() as f64 / 1e6;
    /// assert!((11.0..12.0).contains(&bits_per_key), "{bits_per_key}");
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn num_bits_per_generation(&self) -> u64 {
        self.generations[0].num_bits()
    }

    /// Bits in all generations together.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = bloomkit::AgingBloomFilter::builder(0, 0.01).num_bits_per_generation(512).num_hashes(6).generations(5).build()?;
    /// assert_eq!(f.num_bits(), 2560);
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn num_bits(&self) -> u64 {
        self.num_bits_per_generation() * self.num_generations() as u64
    }

    /// Probes per key, in each generation.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = bloomkit::AgingBloomFilter::new(1_000_000, 0.01)?;
    /// assert_eq!(f.num_hashes(), 7);
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn num_hashes(&self) -> u32 {
        self.generations[0].num_hashes()
    }

    /// How every generation derives its probes from a key's hash
    /// ([`BlockedBloomFilter::probes`]): [`BlockedProbes::TwoSeeds`](crate::BlockedProbes::TwoSeeds)
    /// for a new filter.
    ///
    /// ```
    /// let f = bloomkit::AgingBloomFilter::new(1000, 0.01)?;
    /// assert_eq!(f.probes(), bloomkit::BlockedProbes::TwoSeeds);
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn probes(&self) -> crate::BlockedProbes {
        self.generations[0].probes()
    }

    /// The hash seed keys are hashed with.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = bloomkit::AgingBloomFilter::new(10, 0.01)?;
    /// assert_eq!(f.seed(), bloomkit::DEFAULT_SEED);
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn seed(&self) -> u64 {
        self.generations[0].seed()
    }

    /// How keys are hashed: the seed, and whether as today or as bloomkit 0.1 did (a filter
    /// read from a 0.1 file). Hash a key with it to probe by hash.
    pub fn key_hasher(&self) -> KeyHasher {
        self.generations[0].key_hasher()
    }

    /// The inserts within the window that changed the generation they went to, summed over
    /// the generations: about the number of distinct keys seen per generation, so a key
    /// seen in two generations counts twice. Each generation's own count is
    /// [`generation`](Self::generation)`(age).len()`.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut f = bloomkit::AgingBloomFilter::new(100, 0.01)?;
    /// f.insert("a");
    /// f.insert("a");
    /// f.rotate();
    /// f.insert("a");
    /// f.insert("b");
    /// assert_eq!(f.len(), 3);
    /// f.rotate();
    /// assert_eq!(f.len(), 2);
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn len(&self) -> u64 {
        total_item_count(&self.generations)
    }

    /// Whether [`len`](Self::len) is zero.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut f = bloomkit::AgingBloomFilter::new(100, 0.01)?;
    /// assert!(f.is_empty());
    /// f.insert("a");
    /// f.rotate();
    /// assert!(!f.is_empty()); // still remembered
    /// f.rotate();
    /// assert!(f.is_empty());
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The false-positive rate a query for an absent key risks now: 1 − Π(1 − qᵢ) over the
    /// generations' estimated rates qᵢ.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut f = bloomkit::AgingBloomFilter::new(10_000, 0.01)?;
    /// assert_eq!(f.estimated_fp_rate(), 0.0);
    /// for i in 0..10_000u32 { f.insert(&i); }
    /// f.rotate();
    /// for i in 10_000..20_000u32 { f.insert(&i); }
    /// let rate = f.estimated_fp_rate();
    /// assert!((0.008..0.011).contains(&rate), "{rate}");
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn estimated_fp_rate(&self) -> f64 {
        let all_miss: f64 = self
            .generations
            .iter()
            .map(|g| 1.0 - g.estimated_fp_rate())
            .product();
        1.0 - all_miss
    }

    /// Bytes of memory the filter holds: every generation's bits, and the handles.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = bloomkit::AgingBloomFilter::builder(0, 0.01).num_bits_per_generation(1 << 20).num_hashes(6).generations(4).build()?;
    /// assert_eq!(f.memory_bytes() / 1000, 4 * (1 << 17) / 1000);
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn memory_bytes(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.generations.capacity() * std::mem::size_of::<BlockedBloomFilter>()
            + self
                .generations
                .iter()
                .map(|g| g.lines().memory_bytes())
                .sum::<usize>()
    }
}

/// `generations` must be 1 to [`MAX_GENERATIONS`].
fn check_generations(generations: u32) -> Result<()> {
    if (1..=MAX_GENERATIONS).contains(&generations) {
        Ok(())
    } else {
        Err(Error::InvalidParameter {
            name: "generations",
            value: generations.to_string(),
            expected: "1 to 64 (2 is the usual choice)",
        })
    }
}

/// The sum of the generations' item counts, saturating (the writer and the reader agree on it).
fn total_item_count(generations: &[BlockedBloomFilter]) -> u64 {
    generations
        .iter()
        .fold(0u64, |sum, g| sum.saturating_add(g.len()))
}

/// Inserts every key into the newest generation, as [`insert`](AgingBloomFilter::insert)
/// one by one.
///
/// ```
/// let mut f = bloomkit::AgingBloomFilter::new(100, 0.01)?;
/// f.extend(["a", "b"]);
/// f.rotate();
/// assert!(f.contains("a") && f.generation(1).unwrap().contains("b"));
/// # Ok::<(), bloomkit::Error>(())
/// ```
impl<K: Key> Extend<K> for AgingBloomFilter {
    fn extend<I: IntoIterator<Item = K>>(&mut self, keys: I) {
        for key in keys {
            self.insert(&key);
        }
    }
}

impl PartialEq for AgingBloomFilter {
    /// Equal when they have the same generations, in the same order, with the same bits (and
    /// so answer every query alike, now and after the same rotations); item counts, statistics,
    /// are not compared.
    fn eq(&self, other: &Self) -> bool {
        self.generations == other.generations
    }
}

impl Eq for AgingBloomFilter {}

impl fmt::Debug for AgingBloomFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgingBloomFilter")
            .field("num_generations", &self.num_generations())
            .field("num_bits_per_generation", &self.num_bits_per_generation())
            .field("num_hashes", &self.num_hashes())
            .field("hasher", &self.key_hasher())
            .field("item_count", &self.len())
            .finish_non_exhaustive()
    }
}

impl Filter for AgingBloomFilter {
    fn contains_hash(&self, hash: u64) -> bool {
        AgingBloomFilter::contains_hash(self, hash)
    }
    fn key_hasher(&self) -> KeyHasher {
        AgingBloomFilter::key_hasher(self)
    }
    fn kind(&self) -> FilterKind {
        FilterKind::Aging
    }
    fn memory_bytes(&self) -> usize {
        AgingBloomFilter::memory_bytes(self)
    }
    fn len(&self) -> u64 {
        AgingBloomFilter::len(self)
    }
    fn estimated_fp_rate(&self) -> f64 {
        AgingBloomFilter::estimated_fp_rate(self)
    }
}
