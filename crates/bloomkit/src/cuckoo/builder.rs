//! [`CuckooBuilder`]: every setting of a [`CuckooFilter`], from the library's defaults or
//! RedisBloom's.

use crate::error::{Error, Result};
use crate::hash::DEFAULT_SEED;
use crate::key::KeyHasher;
use crate::sizing::check_fp_rate;

use super::table::{MAX_FINGERPRINT_BITS, MIN_FINGERPRINT_BITS};
use super::CuckooFilter;

/// The library's slots per bucket: 4 reaches ≈95% load (Fan et al.), the best space per key
/// for fingerprints of 8 to 16 bits, and a 4-slot bucket of up to 16-bit slots is searched in
/// one 64-bit word.
pub(crate) const DEFAULT_BUCKET_SIZE: u32 = 4;

/// The library's kick limit: Fan et al.'s 500, enough to reach the target load reliably.
pub(crate) const DEFAULT_MAX_KICKS: u32 = 500;

/// The most sub-filters a filter grows to by default: RedisBloom's `cf-max-expansions`.
pub(crate) const DEFAULT_MAX_FILTERS: u32 = 32;

/// RedisBloom's `CF.RESERVE` defaults: `BUCKETSIZE 2`, `MAXITERATIONS 20`, `EXPANSION 1`,
/// and its fixed 8-bit fingerprints.
const REDISBLOOM_BUCKET_SIZE: u32 = 2;
const REDISBLOOM_MAX_KICKS: u32 = 20;
const REDISBLOOM_EXPANSION: u32 = 1;
const REDISBLOOM_FINGERPRINT_BITS: u32 = 8;

/// The largest `EXPANSION` RedisBloom accepts, and so this crate.
pub(crate) const MAX_EXPANSION: u32 = 32_768;

/// The most slots a bucket may have (RedisBloom's `BUCKETSIZE` range).
pub(crate) const MAX_BUCKET_SIZE: u32 = 255;

/// The most kicks an insert may make (RedisBloom's `MAXITERATIONS` range).
pub(crate) const MAX_MAX_KICKS: u32 = 65_535;

/// The most sub-filters any filter may be allowed ([`CuckooBuilder::max_filters`]).
pub(crate) const MAX_MAX_FILTERS: u32 = 65_535;

/// The load a table of `bucket_size`-slot buckets is sized for, so that `capacity` keys fit
/// with the default kick limit: a little below the load at which inserts start to fail
/// (measured at 100,000 keys: ≈86% with 2 slots, 94% with 3, 97% with 4, 99% with 8, and
/// 85% and 96% for 2 and 4 at four million; Fan et al. give 84%, 95%, 98% for 2, 4, 8).
///
/// One-slot buckets are the exception: with short fingerprints a key's alternate bucket is
/// one of only 2^f − 1 offsets away, and the load at the first failure falls with the table
/// size (≈50% for 1,000 keys, 20% for a million at 8-bit fingerprints: Fan et al. §4 on
/// f ≥ log2(n)/b). Prefer 2 or more slots.
pub(crate) fn target_load(bucket_size: u32) -> f64 {
    match bucket_size {
        1 => 0.2,
        2 => 0.76,
        3 => 0.88,
        4 => 0.94,
        5..=7 => 0.95,
        _ => 0.97,
    }
}

/// Where a cuckoo filter puts a key's second bucket: the one rule besides the parameters that
/// the stored bytes depend on, so it is stored with them.
///
/// A key's buckets are `i1 = x mod M` and `i2 = (H(fp) mod M − i1) mod M` (see the
/// [`CuckooFilter`] documentation). The two coincide when `2·i1 ≡ H(fp) (mod M)`, and a key
/// whose buckets coincide has `b` slots per sub-filter instead of `2·b`: its copies
/// ([`insert`](CuckooFilter::insert) allows duplicates, like `CF.ADD`) fill a sub-filter
/// twice as fast, and a filter that grows gets twice as many sub-filters.
///
/// # Examples
///
/// ```
/// use bloomkit::{CuckooFilter, CuckooPlacement};
///
/// // `CF.RESERVE cf 2 BUCKETSIZE 1`: two buckets of one slot per sub-filter (and, as the
/// // server builds it, room for RedisBloom's 65,535 sub-filters).
/// let mut f = CuckooFilter::redisbloom_builder(2)
///     .bucket_size(1)
///     .max_filters(65_535)
///     .build()?;
/// assert_eq!(f.placement(), CuckooPlacement::Distinct);
/// for _ in 0..1000 {
///     f.insert("item")?;
/// }
/// // Two copies per sub-filter, whatever the item: one in each of its buckets.
/// assert_eq!((f.count("item"), f.num_filters()), (1000, 500));
/// # Ok::<(), bloomkit::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CuckooPlacement {
    /// `H(fp)` is odd, so a key's two buckets differ in every sub-filter with an even number
    /// of buckets, which includes every sub-filter of two or more that RedisBloom's sizing
    /// builds (powers of two): each sub-filter takes `2·b` copies of a key, as RedisBloom's
    /// take for most keys (its own rule folds the pair for keys whose fingerprint is a
    /// multiple of `M`, half of them at `M` = 2). The default, and what files store with
    /// flag bit 0.
    #[default]
    Distinct,
    /// Any `H(fp)`: about one key in `M` has a single bucket (half of them when `M` = 2).
    /// How bloomkit placed keys before [`Distinct`](Self::Distinct) existed: files without
    /// the flag hold such filters and keep it, and a log that created a filter before then
    /// replays into it.
    Original,
}

/// How the first sub-filter's bucket count is chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sizing {
    /// ⌈(capacity / target load + 2·√capacity) / bucket_size⌉: any count, no power-of-two
    /// waste.
    Load,
    /// RedisBloom's: the next power of two ≥ ⌊capacity / bucket_size⌋ (at least 1).
    RedisBloom,
}

/// How to build a [`CuckooFilter`]: capacity, fingerprint size (from the target rate, or
/// given), bucket size, kick limit, expansion, seed.
///
/// Two starting points, because the library and the RedisBloom-compatible server want
/// different defaults:
///
/// | | [`CuckooFilter::builder`] (and [`CuckooFilter::new`]) | [`CuckooFilter::redisbloom_builder`] |
/// |---|---|---|
/// | slots per bucket | 4 (≈95% load) | 2 (`BUCKETSIZE`) |
/// | fingerprint | ⌈log2(2·b/p)⌉ bits for the rate p: 10 bits at 1% | 8 bits |
/// | buckets | ⌈(capacity / target load + 2·√capacity) / b⌉ | next power of two ≥ ⌊capacity / b⌋ |
/// | max kicks | 500 | 20 (`MAXITERATIONS`) |
/// | expansion | 0: a full filter refuses inserts | 1 (`EXPANSION`, rounded up to a power of two) |
/// | sub-filters | at most 32 | at most 32 (`cf-max-expansions`) |
///
/// Every setter can be applied to either; [`fingerprint_bits`](Self::fingerprint_bits)
/// replaces the size the rate would give.
///
/// # Examples
///
/// ```
/// use bloomkit::CuckooFilter;
///
/// // What `CF.RESERVE k 1000` builds.
/// let cf = CuckooFilter::redisbloom_builder(1000).build()?;
/// assert_eq!((cf.bucket_size(), cf.max_kicks(), cf.expansion()), (2, 20, 1));
/// assert_eq!(cf.num_buckets(), 512);
/// assert_eq!(cf.fingerprint_bits(), 8);
///
/// // `CF.RESERVE k 1000 BUCKETSIZE 4 MAXITERATIONS 50 EXPANSION 3`: RedisBloom stores
/// // expansion 4.
/// let cf = CuckooFilter::redisbloom_builder(1000)
///     .bucket_size(4)
///     .max_kicks(50)
///     .expansion(3)
///     .build()?;
/// assert_eq!((cf.num_buckets(), cf.expansion()), (256, 4));
///
/// // A library filter that grows instead of refusing inserts.
/// let mut f = CuckooFilter::builder(1000, 0.001).expansion(2).build()?;
/// for i in 0..5000u32 { f.insert(&i)?; }
/// assert!(f.num_filters() > 1);
/// assert!((0..5000u32).all(|i| f.contains(&i)));
/// # Ok::<(), bloomkit::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct CuckooBuilder {
    capacity: u64,
    /// The target rate, which sizes the fingerprints unless they are given; RedisBloom's
    /// starting point has none (its fingerprints are 8 bits).
    fp_rate: Option<f64>,
    fingerprint_bits: Option<u32>,
    bucket_size: u32,
    max_kicks: u32,
    expansion: u32,
    max_filters: u32,
    seed: u64,
    sizing: Sizing,
    placement: CuckooPlacement,
}

impl CuckooBuilder {
    /// The library's defaults for `capacity` keys (0 is treated as 1) at `fp_rate`: 4-slot
    /// buckets, fingerprints for the rate, 500 kicks, no expansion, the default seed.
    pub(crate) fn new(capacity: u64, fp_rate: f64) -> Self {
        CuckooBuilder {
            capacity: capacity.max(1),
            fp_rate: Some(fp_rate),
            fingerprint_bits: None,
            bucket_size: DEFAULT_BUCKET_SIZE,
            max_kicks: DEFAULT_MAX_KICKS,
            expansion: 0,
            max_filters: DEFAULT_MAX_FILTERS,
            seed: DEFAULT_SEED,
            sizing: Sizing::Load,
            placement: CuckooPlacement::Distinct,
        }
    }

    /// RedisBloom's `CF.RESERVE key capacity` defaults (see
    /// [`CuckooFilter::redisbloom_builder`]).
    pub(crate) fn redisbloom(capacity: u64) -> Self {
        CuckooBuilder {
            fp_rate: None,
            fingerprint_bits: Some(REDISBLOOM_FINGERPRINT_BITS),
            bucket_size: REDISBLOOM_BUCKET_SIZE,
            max_kicks: REDISBLOOM_MAX_KICKS,
            expansion: REDISBLOOM_EXPANSION,
            sizing: Sizing::RedisBloom,
            ..CuckooBuilder::new(capacity, 0.01)
        }
    }

    /// Fingerprints of exactly `bits` bits, 4 to 32 (checked by [`build`](Self::build)).
    pub fn fingerprint_bits(mut self, bits: u32) -> Self {
        self.fingerprint_bits = Some(bits);
        self
    }

    /// Slots per bucket, 1 to 255. More slots reach a higher load but need longer
    /// fingerprints for the same rate (each query compares 2·b of them).
    pub fn bucket_size(mut self, slots: u32) -> Self {
        self.bucket_size = slots;
        self
    }

    /// How many fingerprints an insert may move before it gives up (or grows the filter),
    /// 1 to 65,535 (RedisBloom's `MAXITERATIONS`).
    pub fn max_kicks(mut self, kicks: u32) -> Self {
        self.max_kicks = kicks;
        self
    }

    /// The expansion, 0 to 32,768: when an insert finds no room, a new sub-filter of `expansion^k`
    /// times the first one's buckets is added (k sub-filters already exist), as RedisBloom's
    /// `EXPANSION` does. 0 means a full filter refuses inserts ([`Error::Full`]).
    ///
    /// Every sub-filter adds its own ≈2·b·load/2^f to the false-positive rate: a filter
    /// that grows is less accurate than one planned for its final size.
    pub fn expansion(mut self, expansion: u32) -> Self {
        self.expansion = expansion;
        self
    }

    /// The most sub-filters, 1 to 65,535 (RedisBloom's `cf-max-expansions`, default 32).
    /// An insert that needs one more fails with [`Error::Full`] and changes nothing.
    pub fn max_filters(mut self, max_filters: u32) -> Self {
        self.max_filters = max_filters;
        self
    }

    /// The hash seed (default [`DEFAULT_SEED`]); probe with [`crate::hash_with_seed`].
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Where keys' second buckets lie (default [`CuckooPlacement::Distinct`]).
    /// [`CuckooPlacement::Original`] rebuilds a filter exactly as bloomkit placed keys before
    /// the default changed: what replaying an old log of its inserts needs, so that it gets
    /// the same sub-filters as when the log was written.
    pub fn placement(mut self, placement: CuckooPlacement) -> Self {
        self.placement = placement;
        self
    }

    /// The filter: the settings as set, the starting point's defaults for the rest.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidFpRate`] unless `0 < fp_rate < 1`; [`Error::InvalidParameter`] for a
    /// rate needing fingerprints over 32 bits (below ≈2·b/2^32), and for any setting outside
    /// the range its setter documents; [`Error::TooLarge`] or [`Error::OutOfMemory`] if the
    /// table does not fit.
    ///
    /// # Examples
    ///
    /// ```
    /// use bloomkit::{CuckooFilter, Error};
    /// assert!(matches!(
    ///     CuckooFilter::builder(10, 0.01).bucket_size(0).build(),
    ///     Err(Error::InvalidParameter { name: "bucket_size", .. })
    /// ));
    /// assert!(matches!(CuckooFilter::builder(10, 1.5).build(), Err(Error::InvalidFpRate { .. })));
    /// // The rate is checked even where fingerprint bits are given.
    /// assert!(CuckooFilter::builder(10, 1.5).fingerprint_bits(8).build().is_err());
    /// ```
    pub fn build(&self) -> Result<CuckooFilter> {
        CuckooFilter::from_shape(self.shape()?)
    }

    /// The bytes [`build`](Self::build) would allocate (with one sub-filter, before any
    /// growth), computed without allocating: for sizing a machine, a server's memory limit,
    /// or a benchmark.
    ///
    /// # Errors
    ///
    /// As [`build`](Self::build), but for the allocation itself.
    ///
    /// # Examples
    ///
    /// ```
    /// use bloomkit::CuckooFilter;
    /// let builder = CuckooFilter::builder(100_000, 0.01);
    /// assert_eq!(builder.planned_memory_bytes()?, builder.build()?.memory_bytes());
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn planned_memory_bytes(&self) -> Result<usize> {
        let shape = self.shape()?;
        let layout = super::table::Layout::new(shape.bucket_size, shape.fp_bits, shape.placement);
        // The slot words, plus the guard word every sub-filter keeps.
        let words = layout
            .words_for(shape.base_buckets)
            .and_then(|w| w.checked_add(1))
            .and_then(|w| usize::try_from(w).ok())
            .and_then(|w| w.checked_mul(std::mem::size_of::<u64>()))
            .ok_or(Error::TooLarge { num_bits: u64::MAX })?;
        Ok(std::mem::size_of::<CuckooFilter>()
            + std::mem::size_of::<super::table::SubFilter>()
            + words)
    }

    /// Checks the settings and computes the filter's shape, allocating nothing.
    pub(crate) fn shape(&self) -> Result<super::Shape> {
        if let Some(fp_rate) = self.fp_rate {
            check_fp_rate(fp_rate)?;
        }
        let b = self.bucket_size;
        check_range(
            "bucket_size",
            b,
            1,
            MAX_BUCKET_SIZE,
            "1 to 255 slots per bucket",
        )?;
        check_range(
            "max_kicks",
            self.max_kicks,
            1,
            MAX_MAX_KICKS,
            "1 to 65535 kicks",
        )?;
        check_range(
            "expansion",
            self.expansion,
            0,
            MAX_EXPANSION,
            "0 (no growth) to 32768",
        )?;
        check_range(
            "max_filters",
            self.max_filters,
            1,
            MAX_MAX_FILTERS,
            "1 to 65535 sub-filters",
        )?;
        let fp_bits = match self.fingerprint_bits {
            Some(bits) => {
                check_range(
                    "fingerprint_bits",
                    bits,
                    MIN_FINGERPRINT_BITS,
                    MAX_FINGERPRINT_BITS,
                    "4 to 32 bits",
                )?;
                bits
            }
            // Only RedisBloom's starting point has no rate, and it gives the bits.
            None => crate::sizing::cuckoo_fingerprint_bits(b, self.fp_rate.unwrap_or(0.01))?,
        };
        let (num_buckets, expansion) = match self.sizing {
            Sizing::Load => {
                // Small tables vary more around the target load: 2·√n spare slots let even
                // they hold their capacity (0.2% of a million-key table).
                let cap = self.capacity as f64;
                let slots = (cap / target_load(b) + 2.0 * cap.sqrt()).ceil();
                let buckets = (slots / b as f64).ceil();
                if buckets >= u64::MAX as f64 {
                    return Err(Error::TooLarge { num_bits: u64::MAX });
                }
                ((buckets as u64).max(1), self.expansion)
            }
            Sizing::RedisBloom => {
                let buckets = (self.capacity / b as u64)
                    .max(1)
                    .checked_next_power_of_two()
                    .ok_or(Error::TooLarge { num_bits: u64::MAX })?;
                // RedisBloom keeps getNextN2(expansion): 0 stays 0, 3 becomes 4.
                let expansion = self.expansion.next_power_of_two();
                let expansion = if self.expansion == 0 { 0 } else { expansion };
                (buckets, expansion)
            }
        };
        Ok(super::Shape {
            capacity: self.capacity,
            base_buckets: num_buckets,
            bucket_size: b,
            fp_bits,
            max_kicks: self.max_kicks,
            expansion,
            max_filters: self.max_filters,
            hasher: KeyHasher::new(self.seed),
            placement: self.placement,
        })
    }
}

fn check_range(name: &'static str, v: u32, lo: u32, hi: u32, expected: &'static str) -> Result<()> {
    if (lo..=hi).contains(&v) {
        Ok(())
    } else {
        Err(Error::InvalidParameter {
            name,
            value: v.to_string(),
            expected,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redisbloom_bucket_counts() {
        let b = |cap: u64, size: u32| {
            CuckooBuilder::redisbloom(cap)
                .bucket_size(size)
                .build()
                .unwrap()
                .num_buckets()
        };
        assert_eq!(b(1024, 2), 512);
        assert_eq!(b(1000, 2), 512);
        assert_eq!(b(1025, 2), 512);
        assert_eq!(b(1026, 2), 1024);
        assert_eq!(b(4, 2), 2);
        assert_eq!(b(1, 2), 1);
        assert_eq!(b(100, 255), 1);
    }
}
