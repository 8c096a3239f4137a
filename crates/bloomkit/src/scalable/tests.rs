//! Unit tests of the chain's rules, bounds and errors.

use super::layer::LayerBits;
use super::*;
use crate::blocked::BlockedBloomFilter;
use crate::classic::BloomFilter;
use crate::{BlockedProbes, ClassicProbes};

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
fn layers_grow_by_expansion_and_tighten() {
    let mut f = ScalableBloomFilter::builder(3, 0.02)
        .expansion(3)
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
        assert_eq!(l.inserted, l.capacity);
    }
    assert!(infos.last().unwrap().inserted <= infos.last().unwrap().capacity);
}

/// Growth 1 keeps layers small while the rate halves per layer; past what 64 probes reach
/// (about 2^−64.5) the layers keep the floor rate and the chain keeps taking keys, in both
/// layouts, and the whole chain still meets its target.
#[test]
fn deep_layers_keep_the_floor_rate_and_the_chain_keeps_growing() {
    for layout in [LayerLayout::Blocked, LayerLayout::Classic] {
        let mut f = ScalableBloomFilter::builder(1, 0.01)
            .expansion(1)
            .layout(layout)
            .build()
            .unwrap();
        for i in 0..200u32 {
            f.insert(&i).unwrap();
        }
        assert!(f.num_layers() > 150, "{}", f.num_layers());
        let rates: Vec<f64> = f.layers().map(|l| l.fp_rate).collect();
        let floor = ScalableBloomFilter::MIN_LAYER_FP_RATE;
        let first_floor = rates
            .iter()
            .position(|&r| r == floor)
            .expect("a floored layer");
        assert!((55..70).contains(&first_floor), "{first_floor}");
        assert!(rates[first_floor..].iter().all(|&r| r == floor));
        assert!(rates[..first_floor].iter().all(|&r| r > floor / 2.0));
        // The floored layers plan 64 probes at most, and the file keeps the rule.
        assert!(f.layers().all(|l| l.num_hashes <= 64));
        let g = ScalableBloomFilter::from_bytes(&f.to_bytes()).unwrap();
        assert_eq!(g, f);
        assert!((0..200u32).all(|i| g.contains(&i)));
        let total: f64 = rates.iter().sum();
        assert!(total < 0.01, "{total}");
    }
}

#[test]
fn max_layers_bounds_a_slow_tightening() {
    let mut f = ScalableBloomFilter::builder(1, 0.01)
        .expansion(1)
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
    // The newest layer planned for more than u64::MAX / 2 keys: only the arithmetic is
    // exercised, nothing that size is allocated.
    pretend_full(&mut f, u64::MAX / 2 + 1);
    let before = f.clone();
    assert!(matches!(f.insert("x"), Err(Error::TooLarge { .. })));
    assert_eq!(f, before);
}

/// Makes the newest layer look full at `capacity` keys (only the counts change).
fn pretend_full(f: &mut ScalableBloomFilter, capacity: u64) {
    let hasher = f.hasher;
    let layer = f.newest_mut();
    layer.capacity = capacity;
    layer.filter = match &layer.filter {
        LayerBits::Blocked(b) => LayerBits::Blocked(BlockedBloomFilter::from_parts(
            b.lines().clone(),
            b.num_hashes(),
            b.probes(),
            hasher,
            capacity,
        )),
        LayerBits::Classic(c) => LayerBits::Classic(BloomFilter::from_words(
            c.words().to_vec(),
            c.num_bits(),
            c.num_hashes(),
            hasher,
            capacity,
            c.probes(),
        )),
    };
}

#[test]
fn growth_that_cannot_allocate_changes_nothing() {
    // The next layer would hold 2^51 keys: petabytes, past any address space.
    let mut f = ScalableBloomFilter::new(1, 0.01).unwrap();
    pretend_full(&mut f, 1 << 50);
    let before = f.clone();
    let err = f.insert("x").unwrap_err();
    assert!(
        matches!(err, Error::OutOfMemory { .. } | Error::TooLarge { .. }),
        "{err}"
    );
    assert_eq!(f, before);
    assert_eq!(f.num_layers(), 1);
}

#[test]
fn bad_options_are_errors() {
    let b = || ScalableBloomFilter::builder(10, 0.01);
    for g in [0, ScalableBloomFilter::MAX_EXPANSION + 1, u32::MAX] {
        assert!(matches!(
            b().expansion(g).build(),
            Err(Error::InvalidParameter {
                name: "expansion",
                ..
            })
        ));
    }
    assert!(b()
        .expansion(ScalableBloomFilter::MAX_EXPANSION)
        .build()
        .is_ok());
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
    let msg = b().expansion(0).build().unwrap_err().to_string();
    assert!(msg.contains("1 to 32768"), "{msg}");
}

#[test]
fn memory_counts_every_layer() {
    for layout in LAYOUTS {
        let mut f = ScalableBloomFilter::builder(100, 0.01)
            .layout(layout)
            .build()
            .unwrap();
        let one = f.memory_bytes();
        for i in 0..1000u32 {
            f.insert(&i).unwrap();
        }
        let bits_bytes: usize = f.layers().map(|l| l.memory_bytes).sum();
        assert_eq!(bits_bytes as u64, f.num_bits() / 8);
        assert!(f.memory_bytes() > one + bits_bytes / 2);
        assert!(f.memory_bytes() >= bits_bytes);
    }
}

const LAYOUTS: [LayerLayout; 2] = [LayerLayout::Blocked, LayerLayout::Classic];

#[test]
fn classic_layers_are_classic_plans() {
    let mut f = ScalableBloomFilter::builder(1000, 0.01)
        .layout(LayerLayout::Classic)
        .build()
        .unwrap();
    for i in 0..10_000u32 {
        f.insert(&i).unwrap();
    }
    assert_eq!(f.layout(), LayerLayout::Classic);
    assert_eq!(f.num_layers(), 4);
    for layer in f.layers() {
        let plan = crate::sizing::classic_plan(layer.capacity, layer.fp_rate).unwrap();
        assert_eq!(
            (layer.num_bits, layer.num_hashes),
            (plan.num_bits, plan.num_hashes)
        );
    }
    // The same chain in blocked layers: same capacities, rates and counting rules, more
    // bits.
    let mut b = ScalableBloomFilter::new(1000, 0.01).unwrap();
    for i in 0..10_000u32 {
        b.insert(&i).unwrap();
    }
    assert_eq!(layer_shape(&b), layer_shape(&f));
    assert!(b.num_bits() > f.num_bits());
    // No false negatives in either.
    assert!((0..10_000u32).all(|i| f.contains(&i) && b.contains(&i)));
}

#[test]
fn debug_shows_the_shape() {
    let f = ScalableBloomFilter::new(1_000_000, 0.01).unwrap();
    let s = format!("{f:?}");
    assert!(s.len() < 300 && s.contains("num_layers: 1"), "{s}");
}

#[test]
fn planned_memory_is_what_build_allocates() {
    for (cap, rate, expansion, non_scaling) in [
        (1, 0.01, 2, false),
        (100, 0.01, 2, true),
        (1000, 0.001, 4, false),
        (123_457, 0.25, 1, false),
        (10, 1e-9, 32_768, false),
    ] {
        for layout in LAYOUTS {
            let b = ScalableBloomFilter::builder(cap, rate)
                .expansion(expansion)
                .non_scaling(non_scaling)
                .layout(layout);
            let planned = b.planned_memory_bytes().unwrap();
            assert_eq!(planned, b.build().unwrap().memory_bytes(), "{cap} {rate}");
        }
    }
    // Bad parameters are the builder's errors, found without allocating.
    assert!(ScalableBloomFilter::builder(10, 0.0)
        .planned_memory_bytes()
        .is_err());
    assert!(ScalableBloomFilter::builder(10, 0.01)
        .expansion(0)
        .planned_memory_bytes()
        .is_err());
}

#[test]
fn growth_memory_is_the_next_layers_bits() {
    for layout in LAYOUTS {
        let mut f = ScalableBloomFilter::builder(10, 0.01)
            .expansion(3)
            .layout(layout)
            .build()
            .unwrap();
        let mut i = 0u32;
        while f.num_layers() < 4 {
            let planned = f.growth_memory_bytes().unwrap();
            let (layers, before) = (f.num_layers(), f.memory_bytes());
            f.insert(&i).unwrap();
            i += 1;
            if f.num_layers() > layers {
                let bits = f.layers().last().unwrap().memory_bytes;
                assert!(planned >= bits, "{planned} < {bits}");
                assert!(f.memory_bytes() - before <= planned);
                // At most the bits and the doubling of a short list.
                assert!(planned - bits <= 4 * std::mem::size_of::<Layer>());
            } else {
                assert_eq!(planned, 0);
            }
        }
    }
    // A chain at its end says so, as insert would.
    let mut f = ScalableBloomFilter::builder(1, 0.01)
        .non_scaling(true)
        .build()
        .unwrap();
    f.insert(&1u8).unwrap();
    assert!(matches!(f.growth_memory_bytes(), Err(Error::Full { .. })));
}

#[test]
fn memory_is_the_same_after_a_round_trip_or_a_clone() {
    // A server reports `memory_bytes` (BF.INFO Size): it must not change when the filter is
    // reloaded from a snapshot or copied on write.
    for layout in LAYOUTS {
        let mut f = ScalableBloomFilter::builder(10, 0.01)
            .expansion(2)
            .layout(layout)
            .build()
            .unwrap();
        for i in 0..2000u32 {
            f.insert(&i).unwrap();
            if i % 97 == 0 {
                let loaded = ScalableBloomFilter::from_bytes(&f.to_bytes()).unwrap();
                assert_eq!(loaded, f);
                assert_eq!(loaded.layout(), layout);
                assert_eq!(
                    loaded.memory_bytes(),
                    f.memory_bytes(),
                    "{} layers",
                    f.num_layers()
                );
                assert_eq!(f.clone().memory_bytes(), f.memory_bytes());
            }
        }
        assert!(f.num_layers() >= 5);
    }
}

#[test]
fn a_layer_of_the_other_layout_still_answers_right() {
    // No public path mixes layouts in one chain; were one to, the query's fast path for
    // the chain's layout must still ask the odd layer properly, not call it empty.
    for (chain, odd) in [
        (LayerLayout::Blocked, LayerLayout::Classic),
        (LayerLayout::Classic, LayerLayout::Blocked),
    ] {
        let mut f = ScalableBloomFilter::builder(100, 0.01)
            .layout(chain)
            .build()
            .unwrap();
        let mut layer = Layer::new(
            odd,
            ClassicProbes::Rotating,
            BlockedProbes::TwoSeeds,
            100,
            0.005,
            f.hasher,
        )
        .unwrap();
        let hash = f.hasher.hash("only in the odd layer");
        layer.filter.insert_hash(hash);
        f.layers.insert(0, layer);
        assert!(f.contains_hash(hash), "{chain:?} chain, {odd:?} layer");
    }
}
