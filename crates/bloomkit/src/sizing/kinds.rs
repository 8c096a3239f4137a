//! The sizing math of the kinds beyond one Bloom layout: a cuckoo filter's fingerprints and
//! rate, an aging filter's generations, a scalable filter's chain of layers, and
//! [`kind_plan`], the plan of any kind, which `bloomkit size` prints.

use crate::error::{Error, Result};
use crate::format::FilterKind;
use crate::{AgingBloomFilter, BinaryFuseFilter, CuckooFilter, RibbonFilter, ScalableBloomFilter};

use super::{blocked_plan, check_fp_rate, classic_plan, sector_plan};

/// The fewest fingerprint bits a cuckoo filter of `bucket_size`-slot buckets needs for
/// `fp_rate`: a query compares its fingerprint with the 2·b slots of its two buckets, each a
/// match with probability about 1/2^f, so f = ⌈log2(2·b/p)⌉, at least 4 (coarser rates get
/// a better rate than asked).
///
/// # Errors
///
/// [`Error::InvalidFpRate`] unless `0 < fp_rate < 1`; [`Error::InvalidParameter`] for a rate
/// needing more than 32 bits (below ≈ 2·b/2^32).
///
/// # Examples
///
/// ```
/// use bloomkit::sizing::cuckoo_fingerprint_bits;
/// assert_eq!(cuckoo_fingerprint_bits(4, 0.01)?, 10);
/// assert_eq!(cuckoo_fingerprint_bits(2, 0.01)?, 9);
/// assert!(cuckoo_fingerprint_bits(4, 1e-12).is_err());
/// # Ok::<(), bloomkit::Error>(())
/// ```
pub fn cuckoo_fingerprint_bits(bucket_size: u32, fp_rate: f64) -> Result<u32> {
    check_fp_rate(fp_rate)?;
    // The small slack keeps an exact power of two (p = 2b/2^f) from rounding up a bit.
    let bits = ((2.0 * bucket_size as f64 / fp_rate).log2() - 1e-9).ceil();
    if bits > CUCKOO_MAX_FINGERPRINT_BITS as f64 {
        return Err(Error::unreachable_fp_rate(
            fp_rate,
            "a rate that 32-bit fingerprints reach: at least 2·bucket_size/2^32 \
             (about 1.9e-9 with 4-slot buckets)",
        ));
    }
    Ok((bits as u32).max(CUCKOO_MIN_FINGERPRINT_BITS))
}

/// The shortest fingerprints a cuckoo filter stores.
pub const CUCKOO_MIN_FINGERPRINT_BITS: u32 = 4;

/// The longest fingerprints a cuckoo filter stores.
pub const CUCKOO_MAX_FINGERPRINT_BITS: u32 = 32;

/// The false-positive rate of a cuckoo (sub-)filter with `fingerprint_bits`-bit
/// fingerprints holding `keys_per_bucket` keys per bucket on average: a query reads its two
/// buckets, and each stored fingerprint matches its own with probability 1/(2^f − 1) (a
/// fingerprint is never zero, which marks an empty slot), so the rate is
/// 1 − (1 − 1/(2^f − 1))^(2·load). A full table of `b`-slot buckets has load `b`: the most
/// it can reach.
///
/// # Examples
///
/// ```
/// use bloomkit::sizing::cuckoo_fp_rate;
/// // 10-bit fingerprints in full 4-slot buckets: just under 8/1023.
/// let full = cuckoo_fp_rate(10, 4.0);
/// assert!((full - 0.00779).abs() < 0.00001, "{full}");
/// assert_eq!(cuckoo_fp_rate(10, 0.0), 0.0);
/// ```
pub fn cuckoo_fp_rate(fingerprint_bits: u32, keys_per_bucket: f64) -> f64 {
    let bits = fingerprint_bits.clamp(1, 63);
    let match_one = 1.0 / ((1u64 << bits) - 1) as f64;
    1.0 - (1.0 - match_one).powf(2.0 * keys_per_bucket)
}

/// The plan of an [`AgingBloomFilter`] of `generations` generations, each a blocked filter
/// for `items_per_generation` keys at the rate
/// [`AgingBloomFilter::generation_fp_rate`] gives, so that a query, which asks every
/// generation, meets `fp_rate` while each holds its planned keys. `num_bits` counts every
/// generation's bits; `fp_rate` is the whole filter's, 1 − (1 − q)^G for each generation's
/// predicted q.
///
/// # Errors
///
/// As [`AgingBloomFilter::generation_fp_rate`] and [`blocked_plan`].
///
/// # Examples
///
/// ```
/// use bloomkit::{sizing, AgingBloomFilter};
///
/// let plan = sizing::aging_plan(100_000, 0.01, 2)?;
/// let f = AgingBloomFilter::new(100_000, 0.01)?;
/// assert_eq!((plan.num_bits, plan.num_hashes), (f.num_bits(), f.num_hashes()));
/// assert!(plan.fp_rate <= 0.01);
/// # Ok::<(), bloomkit::Error>(())
/// ```
pub fn aging_plan(
    items_per_generation: u64,
    fp_rate: f64,
    generations: u32,
) -> Result<super::Plan> {
    let q = AgingBloomFilter::generation_fp_rate(fp_rate, generations)?;
    let one = blocked_plan(items_per_generation, q)?;
    Ok(super::Plan {
        num_bits: one
            .num_bits
            .checked_mul(u64::from(generations))
            .ok_or(Error::TooLarge { num_bits: u64::MAX })?,
        num_hashes: one.num_hashes,
        fp_rate: 1.0 - (1.0 - one.fp_rate).powi(generations as i32),
    })
}

/// One layer of a scalable filter's chain, as [`scalable_layers`] plans it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ScalableLayer {
    /// The keys the layer takes before the next one is added.
    pub capacity: u64,
    /// The rate the layer is sized for.
    pub fp_rate: f64,
}

/// The layers a [`ScalableBloomFilter`] adds as it grows, first one first: the first holds
/// `initial_capacity` keys at p·(1 − t), and each next one `expansion` times the keys at `t`
/// times the rate (RedisBloom's doubling and halving at the defaults), so the rates sum to
/// less than p above the floor: a layer that 64 probes could not build at `t` times the rate
/// is planned at [`ScalableBloomFilter::MIN_LAYER_FP_RATE`] (2^−64) instead, and adds at most
/// that to the chain's rate. Ends where the next capacity no longer fits a `u64`, or at
/// [`ScalableBloomFilter::MAX_LAYERS`]; the bits of each layer are its layout's plan
/// ([`blocked_plan`] or [`classic_plan`]) for its capacity and rate.
///
/// # Examples
///
/// ```
/// use bloomkit::sizing::scalable_layers;
///
/// // RedisBloom's defaults: doubling capacity, halving rates, from p/2.
/// let layers: Vec<_> = scalable_layers(1000, 0.01, 2, 0.5).take(3).collect();
/// assert_eq!(layers.iter().map(|l| l.capacity).collect::<Vec<_>>(), [1000, 2000, 4000]);
/// assert_eq!(layers.iter().map(|l| l.fp_rate).collect::<Vec<_>>(), [0.005, 0.0025, 0.00125]);
/// // Growing 100×: 7 layers hold 127,000 keys.
/// let held: u64 = scalable_layers(1000, 0.01, 2, 0.5).take(7).map(|l| l.capacity).sum();
/// assert_eq!(held, 127_000);
/// ```
pub fn scalable_layers(
    initial_capacity: u64,
    fp_rate: f64,
    expansion: u32,
    tightening: f64,
) -> impl Iterator<Item = ScalableLayer> {
    let first = ScalableLayer {
        capacity: initial_capacity.max(1),
        fp_rate: fp_rate * (1.0 - tightening),
    };
    std::iter::successors(Some(first), move |layer| {
        let capacity = layer.capacity.checked_mul(u64::from(expansion))?;
        Some(ScalableLayer {
            capacity,
            fp_rate: crate::scalable::next_layer_rate(layer.fp_rate, tightening, capacity),
        })
    })
    .take(ScalableBloomFilter::MAX_LAYERS)
}

/// What a filter of a kind needs for a number of keys at a target rate, planned without
/// building it: what `bloomkit size` prints for each kind.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KindPlan {
    /// Bits of memory: the filter's table (for a cuckoo filter, with its few bytes of
    /// bookkeeping; for a counting filter, 4 per counter).
    pub num_bits: u64,
    /// Hash probes per key, for the Bloom kinds.
    pub num_hashes: Option<u32>,
    /// The keys the filter holds at its planned size: the `items` asked for, or for an
    /// aging filter (whose `items` are each generation's) every generation's.
    pub keys: u64,
    /// The false-positive rate predicted with `keys` keys (for a cuckoo filter, with its
    /// table full to the last slot: the most it can reach).
    pub fp_rate: f64,
    /// What the figures mean for this kind, where that needs saying; empty otherwise.
    pub note: &'static str,
}

/// The plan of a filter of `kind` for `items` keys at `fp_rate`, as
/// [`AnyFilter::new`](crate::AnyFilter::new) (or, for a static kind,
/// [`AnyFilter::build_from_hashes`](crate::AnyFilter::build_from_hashes) from `items` keys)
/// makes it, computed without allocating. For an aging filter, `items` are each
/// generation's, as [`AgingBloomFilter::new`] takes them; a scalable filter's plan is its
/// first layer.
///
/// # Errors
///
/// The kind's own: [`Error::InvalidFpRate`], [`Error::FpRateTooSmall`],
/// [`Error::InvalidParameter`] for a rate the kind's fingerprints cannot reach,
/// [`Error::TooLarge`].
///
/// # Examples
///
/// ```
/// use bloomkit::{sizing, FilterKind};
///
/// let blocked = sizing::kind_plan(FilterKind::Blocked, 1_000_000, 0.01)?;
/// assert_eq!(blocked.num_hashes, Some(6));
/// let aging = sizing::kind_plan(FilterKind::Aging, 1_000_000, 0.01)?;
/// assert_eq!(aging.keys, 2_000_000); // two generations of a million
/// let cuckoo = sizing::kind_plan(FilterKind::Cuckoo, 1_000_000, 0.01)?;
/// assert_eq!(cuckoo.num_hashes, None);
/// # Ok::<(), bloomkit::Error>(())
/// ```
pub fn kind_plan(kind: FilterKind, items: u64, fp_rate: f64) -> Result<KindPlan> {
    // Every kind's first word, before any kind's own rounding of the rate.
    check_fp_rate(fp_rate)?;
    let items = items.max(1);
    let bloom = |plan: super::Plan, note| KindPlan {
        num_bits: plan.num_bits,
        num_hashes: Some(plan.num_hashes),
        keys: items,
        fp_rate: plan.fp_rate,
        note,
    };
    Ok(match kind {
        FilterKind::RedisBloomChain | FilterKind::RedisCuckoo => {
            return Err(Error::Unsupported {
                kind,
                operation: "planning (it is imported from RedisBloom, never built here)",
            })
        }
        FilterKind::Classic => bloom(classic_plan(items, fp_rate)?, ""),
        FilterKind::Blocked => bloom(
            blocked_plan(items, fp_rate)?,
            "AtomicBloomFilter (library only: threads insert at once) has the same bits",
        ),
        FilterKind::Sector => bloom(sector_plan(items, fp_rate)?, ""),
        FilterKind::Counting => {
            let plan = classic_plan(items, fp_rate)?;
            KindPlan {
                num_bits: plan
                    .num_bits
                    .checked_mul(4)
                    .ok_or(Error::TooLarge { num_bits: u64::MAX })?,
                ..bloom(
                    plan,
                    "a 4-bit counter for each of classic's bits, so keys can be removed",
                )
            }
        }
        FilterKind::Scalable => {
            let first = scalable_layers(
                items,
                fp_rate,
                ScalableBloomFilter::DEFAULT_EXPANSION,
                ScalableBloomFilter::DEFAULT_TIGHTENING,
            )
            .next()
            .map_or(fp_rate, |layer| layer.fp_rate);
            bloom(
                blocked_plan(items, first)?,
                "its first layer, at half the rate; layers it adds are ever larger",
            )
        }
        FilterKind::Cuckoo => {
            let builder = CuckooFilter::builder(items, fp_rate);
            let bytes = builder.planned_memory_bytes()?;
            let shape = builder.shape()?;
            KindPlan {
                num_bits: (bytes as u64).saturating_mul(8),
                num_hashes: None,
                keys: items,
                fp_rate: cuckoo_fp_rate(shape.fp_bits, f64::from(shape.bucket_size)),
                note: "the rate is at most this (a table full to its last slot)",
            }
        }
        FilterKind::Ribbon => KindPlan {
            num_bits: RibbonFilter::planned_bits(items, fp_rate)?,
            num_hashes: None,
            keys: items,
            fp_rate: (-f64::from(crate::ribbon::result_bits_for(fp_rate)?)).exp2(),
            note: "static, built from all keys at once; its rate is a power of two",
        },
        FilterKind::Fuse => {
            let bits = BinaryFuseFilter::fingerprint_bits_for(fp_rate)?;
            KindPlan {
                num_bits: BinaryFuseFilter::planned_bits(items, bits)?,
                num_hashes: None,
                keys: items,
                fp_rate: (-f64::from(bits)).exp2(),
                note: "static, built from all keys; 8-bit fingerprints (2^-8) down to 0.39%, \
                       else 16",
            }
        }
        FilterKind::Aging => {
            let generations = AgingBloomFilter::DEFAULT_GENERATIONS;
            let plan = aging_plan(items, fp_rate, generations)?;
            KindPlan {
                keys: items.saturating_mul(u64::from(generations)),
                ..bloom(
                    plan,
                    "2 generations of these keys each, which it holds together; each \
                     rotation forgets the older",
                )
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::AnyFilter;

    #[test]
    fn fingerprint_sizes_follow_the_bound() {
        assert_eq!(cuckoo_fingerprint_bits(4, 0.01).unwrap(), 10);
        assert_eq!(cuckoo_fingerprint_bits(4, 0.001).unwrap(), 13);
        assert_eq!(cuckoo_fingerprint_bits(2, 0.01).unwrap(), 9);
        // An exact power of two needs no extra bit.
        assert_eq!(cuckoo_fingerprint_bits(4, 8.0 / 1024.0).unwrap(), 10);
        // Coarse rates get the smallest fingerprints.
        assert_eq!(cuckoo_fingerprint_bits(4, 0.9).unwrap(), 4);
        assert!(cuckoo_fingerprint_bits(4, 1e-12).is_err());
        assert_eq!(cuckoo_fingerprint_bits(1, 1e-9).unwrap(), 31);
    }

    /// Every kind's plan is what `AnyFilter` builds: its bits (the cuckoo filter's bytes
    /// with their bookkeeping), and a predicted rate within the target.
    #[test]
    fn plans_match_what_is_built() {
        for kind in FilterKind::ALL {
            for (items, p) in [(1, 0.01), (10_000, 0.01), (25_000, 0.001), (3_000, 0.2)] {
                let plan = kind_plan(kind, items, p).unwrap();
                // The classic plan rounds its probes, which may leave it a hair above the
                // target.
                assert!(
                    plan.fp_rate > 0.0 && plan.fp_rate <= p * 1.01,
                    "{kind} {items} {p}: {}",
                    plan.fp_rate
                );
                let filter = if kind.is_static() {
                    let hashes: Vec<u64> = (0..items).map(|i| crate::hash(&i)).collect();
                    AnyFilter::build_from_hashes(kind, &hashes, p).unwrap()
                } else {
                    AnyFilter::new(kind, items, p).unwrap()
                };
                let bits = match &filter {
                    AnyFilter::Classic(f) => f.num_bits(),
                    AnyFilter::Blocked(f) => f.num_bits(),
                    AnyFilter::Sector(f) => f.num_bits(),
                    AnyFilter::Counting(f) => f.num_counters() * 4,
                    AnyFilter::Scalable(f) => f.num_bits(),
                    AnyFilter::Cuckoo(f) => f.memory_bytes() as u64 * 8,
                    AnyFilter::Ribbon(f) => f.num_bits(),
                    AnyFilter::Fuse(f) => f.num_bits(),
                    AnyFilter::Aging(f) => f.num_bits(),
                };
                assert_eq!(plan.num_bits, bits, "{kind} {items} {p}");
                if let AnyFilter::Ribbon(f) = &filter {
                    assert_eq!(plan.fp_rate, f.fp_rate());
                }
            }
        }
    }

    /// The cuckoo model is the filter's own estimate: at a full table it is the plan's rate.
    #[test]
    fn the_cuckoo_rate_is_the_filters_estimate() {
        let mut f = CuckooFilter::new(1000, 0.01).unwrap();
        for i in 0..1000u32 {
            f.insert(&i).unwrap();
        }
        let per_bucket = f.len() as f64 / f.num_buckets() as f64;
        let model = cuckoo_fp_rate(f.fingerprint_bits(), per_bucket);
        assert!((model - f.estimated_fp_rate()).abs() < 1e-12);
    }

    /// The chain `scalable_layers` plans is the one a growing filter adds, layer by layer.
    #[test]
    fn scalable_layers_are_the_ones_a_filter_grows() {
        for (expansion, tightening) in [(2, 0.5), (1, 0.5), (4, 0.8)] {
            let mut f = ScalableBloomFilter::builder(100, 0.01)
                .expansion(expansion)
                .tightening(tightening)
                .build()
                .unwrap();
            for i in 0..5_000u32 {
                f.insert(&i).unwrap();
            }
            assert!(f.num_layers() > 3);
            let planned = scalable_layers(100, 0.01, expansion, tightening);
            for (built, plan) in f.layers().zip(planned) {
                assert_eq!(built.capacity, plan.capacity);
                assert!(
                    (built.fp_rate - plan.fp_rate).abs() <= 1e-15 * plan.fp_rate,
                    "{} vs {}",
                    built.fp_rate,
                    plan.fp_rate
                );
                assert_eq!(
                    built.num_bits,
                    blocked_plan(plan.capacity, plan.fp_rate).unwrap().num_bits
                );
            }
        }
        // Past the floor: expansion 1 adds a layer every ten keys, so 10,000 keys go
        // hundreds of layers deep, past the 57th, from which layers are planned at the floor;
        // every key is taken, and each layer is the one planned.
        let mut f = ScalableBloomFilter::builder(10, 0.01)
            .expansion(1)
            .build()
            .unwrap();
        for i in 0..10_000u32 {
            f.insert(&i).unwrap();
        }
        assert!(f.num_layers() > 300, "{}", f.num_layers());
        let mut at_floor = 0;
        for (built, plan) in f.layers().zip(scalable_layers(10, 0.01, 1, 0.5)) {
            assert_eq!(built.capacity, plan.capacity);
            assert!((built.fp_rate - plan.fp_rate).abs() <= 1e-15 * plan.fp_rate);
            at_floor += usize::from(plan.fp_rate == ScalableBloomFilter::MIN_LAYER_FP_RATE);
        }
        assert!(at_floor > 200, "{at_floor} layers at the floor");
        // Every kind refuses a rate outside (0, 1), the scalable one's halved first layer too.
        for kind in FilterKind::ALL {
            assert!(matches!(
                kind_plan(kind, 10, 1.0),
                Err(Error::InvalidFpRate { .. })
            ));
        }
        // Capacities that would overflow end the chain, as they end a filter's growth.
        assert_eq!(scalable_layers(u64::MAX / 2, 0.01, 4, 0.5).count(), 1);
        assert_eq!(
            scalable_layers(1, 0.01, 1, 0.5).count(),
            ScalableBloomFilter::MAX_LAYERS
        );
    }

    #[test]
    fn an_aging_plan_holds_every_generation() {
        let plan = kind_plan(FilterKind::Aging, 50_000, 0.01).unwrap();
        assert_eq!(plan.keys, 100_000);
        // With each generation full the whole filter meets the target.
        let mut f = AgingBloomFilter::new(50_000, 0.01).unwrap();
        for i in 0..100_000u64 {
            if i == 50_000 {
                f.rotate();
            }
            f.insert(&i);
        }
        let fp = (100_000..500_000u64).filter(|i| f.contains(i)).count() as f64 / 400_000.0;
        // About 4,000 false positives expected: 10% is over six standard deviations.
        assert!(
            (fp - plan.fp_rate).abs() < 0.1 * plan.fp_rate,
            "{fp} vs {}",
            plan.fp_rate
        );
    }
}
