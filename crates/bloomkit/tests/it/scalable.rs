//! `ScalableBloomFilter`: RedisBloom's scaling rules, the rate bound while growing, the
//! `HashSet` oracle, the golden file and hostile input.
//!
//! To write the golden files (once, for a new format version only):
//! `BLOOMKIT_WRITE_GOLDEN=1 cargo test -p bloomkit --release --test it scalable::`.

use crate::common;
use common::{as_key_feed, data_dir, golden_answers, reseal};

use std::collections::HashSet;

use bloomkit::sizing::{blocked_fp_rate, classic_fp_rate};
use bloomkit::{
    AnyFilter, BlockedBloomFilter, Error, Filter, FilterKind, LayerLayout, ScalableBloomFilter,
};
use proptest::prelude::*;

// ---------------------------------------------------------------------------------------
// RedisBloom's behaviour (its sb.c and test suite; summarized in docs/SERVER.md)
// ---------------------------------------------------------------------------------------

/// `BF.ADD`/`BF.INSERT` items "0".."n-1" as the server will: the raw bytes, hashed as a str.
fn add_numbers(f: &mut ScalableBloomFilter, n: u32) -> u64 {
    let mut added = 0;
    for i in 0..n {
        let key = i.to_string();
        added += f.insert_hash(bloomkit::hash_bytes(key.as_bytes())).unwrap() as u64;
    }
    added
}

fn shape(f: &ScalableBloomFilter) -> Vec<(u64, f64)> {
    f.layers().map(|l| (l.capacity, l.fp_rate)).collect()
}

/// `BF.RESERVE bf 0.01 10`, then "0".."99": layers of 10/20/40/80 at halving rates.
#[test]
fn redisbloom_reserve_10_then_100_items() {
    let mut f = ScalableBloomFilter::new(10, 0.01).unwrap();
    let added = add_numbers(&mut f, 100);
    assert_eq!(
        shape(&f),
        [(10, 0.005), (20, 0.0025), (40, 0.00125), (80, 0.000625)]
    );
    assert_eq!(f.capacity(), 150); // BF.INFO Capacity
    assert_eq!(f.num_layers(), 4); // BF.INFO Number of filters
    assert_eq!(f.len(), added); // BF.INFO Number of items inserted, BF.CARD
    assert_eq!(f.expansion(), 2); // BF.INFO Expansion rate
    assert!(f.is_scaling());
    let infos: Vec<_> = f.layers().collect();
    assert_eq!(
        infos[..3].iter().map(|l| l.inserted).collect::<Vec<_>>(),
        [10, 20, 40]
    );
    // The rates sum below the target.
    assert!(infos.iter().map(|l| l.fp_rate).sum::<f64>() < 0.01);
}

/// RedisBloom's test_overall.py: capacity 4, items "0".."99", EXPANSION 1, 2 and 4.
#[test]
fn redisbloom_layer_counts_for_expansions_1_2_4() {
    let mut counts = Vec::new();
    for expansion in [1u32, 2, 4] {
        let mut f = ScalableBloomFilter::builder(4, 0.01)
            .expansion(expansion)
            .build()
            .unwrap();
        let added = add_numbers(&mut f, 100);
        // The layer sequence is exactly the rule's, and every layer but the newest is full.
        let mut cap = 4u64;
        let mut rate = 0.005;
        for l in f.layers() {
            assert_eq!(
                (l.capacity, l.fp_rate),
                (cap, rate),
                "expansion {expansion}"
            );
            cap *= expansion as u64;
            rate *= 0.5;
        }
        let infos: Vec<_> = f.layers().collect();
        assert!(infos[..infos.len() - 1]
            .iter()
            .all(|l| l.inserted == l.capacity));
        eprintln!(
            "capacity 4, expansion {expansion}: {} layers, {added} of 100 items added \
             (RedisBloom: {})",
            f.num_layers(),
            [23, 5, 4][counts.len()]
        );
        counts.push((f.num_layers(), added));
    }
    // Expansion 2 and 4: 5 and 4 layers, as RedisBloom, whatever the few false positives.
    assert_eq!(counts[1].0, 5);
    assert_eq!(counts[2].0, 4);
    // Expansion 1: one layer per 4 added items. RedisBloom's test expects 23 because its
    // tiny 4-item layers (a few dozen bits each, MurmurHash) call ~9 of the 100 items false
    // positives; our smallest layer is a 512-bit line, where 4 items at 0.5% and below
    // almost never collide, so nearly every item is added. The rule is the same; only the
    // false positives differ, as they must with a different hash and layout.
    let (layers, added) = counts[0];
    assert_eq!(layers as u64, added.div_ceil(4));
    assert!(added >= 95, "{added}");
}

/// `BF.ADD` on a missing key creates rate 0.01, capacity 100, expansion 2.
#[test]
fn redisbloom_default_filter() {
    let f = ScalableBloomFilter::new(100, 0.01).unwrap();
    assert_eq!(shape(&f), [(100, 0.005)]);
    assert_eq!((f.expansion(), f.tightening()), (2, 0.5));
    assert_eq!(f.len(), 0);
    assert!(f.is_empty());
}

/// `BF.RESERVE k 0.01 50 NONSCALING`: one layer at the whole rate; once full, new keys are
/// refused ("ERR non scaling filter is full") and nothing changes; present keys answer 0.
#[test]
fn non_scaling_full_changes_nothing() {
    let mut f = ScalableBloomFilter::builder(50, 0.01)
        .non_scaling(true)
        .build()
        .unwrap();
    assert_eq!(shape(&f), [(50, 0.01)]);
    assert!(!f.is_scaling());
    let mut i = 0u32;
    while f.len() < 50 {
        f.insert(&i).unwrap();
        i += 1;
    }
    let before = f.clone();
    let bytes = f.to_bytes();
    let mut refused = 0;
    for j in i..i + 1000 {
        match f.insert(&j) {
            Err(Error::Full {
                kind: FilterKind::Scalable,
            }) => refused += 1,
            Ok(false) => {} // a false positive: "may already exist", not added
            other => panic!("key {j}: {other:?}"),
        }
    }
    assert!(refused > 950, "{refused}");
    assert_eq!(f.len(), 50);
    assert_eq!(f.num_layers(), 1);
    assert_eq!(f, before);
    assert_eq!(f.to_bytes(), bytes);
    // Keys already in: "may exist" (0), not an error.
    assert!(!f.insert(&0u32).unwrap());
}

#[test]
fn inserting_a_present_key_is_ok_false_and_not_counted() {
    let mut f = ScalableBloomFilter::new(10, 0.01).unwrap();
    for i in 0..100u32 {
        f.insert(&i).unwrap();
    }
    let len = f.len();
    let layers = f.num_layers();
    for i in 0..100u32 {
        assert!(!f.insert(&i).unwrap(), "{i}");
    }
    assert_eq!(f.len(), len);
    assert_eq!(f.num_layers(), layers);
    // A key counted once, however often it is added.
    let mut g = ScalableBloomFilter::new(10, 0.01).unwrap();
    assert!(g.insert("k").unwrap());
    assert!(!g.insert("k").unwrap());
    assert_eq!(g.len(), 1);
}

#[test]
fn bad_parameters_are_errors_not_panics() {
    assert!(matches!(
        ScalableBloomFilter::new(10, f64::NAN),
        Err(Error::InvalidFpRate { .. })
    ));
    assert!(matches!(
        ScalableBloomFilter::new(10, 0.0),
        Err(Error::InvalidFpRate { .. })
    ));
    assert!(matches!(
        ScalableBloomFilter::builder(10, 0.01).expansion(0).build(),
        Err(Error::InvalidParameter {
            name: "expansion",
            ..
        })
    ));
    assert!(matches!(
        ScalableBloomFilter::builder(10, 0.01)
            .expansion(32_769)
            .build(),
        Err(Error::InvalidParameter {
            name: "expansion",
            ..
        })
    ));
    for t in [0.0, 1.0, f64::NAN, -1.0] {
        assert!(matches!(
            ScalableBloomFilter::builder(10, 0.01).tightening(t).build(),
            Err(Error::InvalidParameter {
                name: "tightening",
                ..
            })
        ));
    }
    assert!(matches!(
        ScalableBloomFilter::new(u64::MAX, 0.01),
        Err(Error::TooLarge { .. })
    ));
    // 2^40 keys at 1% is about 1.4 TB: an error from the allocator, not an abort.
    assert!(matches!(
        ScalableBloomFilter::new(1 << 40, 0.01),
        Err(Error::OutOfMemory { .. } | Error::TooLarge { .. })
    ));
    // Capacity 0 is 1.
    assert_eq!(ScalableBloomFilter::new(0, 0.01).unwrap().capacity(), 1);
}

#[test]
fn is_a_filter_and_thread_safe() {
    fn assert_send_sync<T: Send + Sync + Clone + std::fmt::Debug + PartialEq>() {}
    assert_send_sync::<ScalableBloomFilter>();
    let mut f = ScalableBloomFilter::builder(10, 0.01)
        .seed(99)
        .build()
        .unwrap();
    f.insert("a").unwrap();
    let dynf: &dyn Filter = &f;
    assert_eq!(dynf.kind(), FilterKind::Scalable);
    assert_eq!(dynf.seed(), 99);
    assert!(dynf.contains_hash(bloomkit::hash_with_seed("a", 99)));
    assert!(f.contains("a"));
}

// ---------------------------------------------------------------------------------------
// The rate bound while growing
// ---------------------------------------------------------------------------------------

/// Grows a filter from `initial` to `n` keys, probes `probes` absent keys, and checks the
/// measured rate against `bound` and against the layers' predicted rates.
fn grow_and_measure(layout: LayerLayout, initial: u64, p: f64, n: u64, probes: u64, bound: f64) {
    let mut f = ScalableBloomFilter::builder(initial, p)
        .layout(layout)
        .build()
        .unwrap();
    for i in 0..n {
        f.insert(&i).unwrap();
    }
    for i in 0..n {
        assert!(f.contains(&i), "false negative for {i}");
    }
    let hits = (n..n + probes).filter(|i| f.contains(i)).count();
    let measured = hits as f64 / probes as f64;

    // Planned: the sum of the layers' planned rates (what each full layer is sized for).
    let planned: f64 = f.layers().map(|l| l.fp_rate).sum();
    // Predicted: each layer's rate with the keys it actually holds (the newest is partly
    // full), combined as independent events.
    let layer_rates: Vec<f64> = f
        .layers()
        .map(|l| match layout {
            LayerLayout::Blocked => blocked_fp_rate(l.inserted, l.num_bits, l.num_hashes),
            _ => classic_fp_rate(l.inserted, l.num_bits, l.num_hashes),
        })
        .collect();
    let predicted = 1.0 - layer_rates.iter().map(|r| 1.0 - r).product::<f64>();
    let estimated = f.estimated_fp_rate();
    let bits_per_key = f.num_bits() as f64 / f.len() as f64;
    eprintln!(
        "scalable ({layout:?}) {initial} -> {n} at {p}: {} layers, {bits_per_key:.2} bits/key; measured \
         {measured:.6}, predicted {predicted:.6} (ratio {:.3}), planned sum {planned:.6}, \
         estimated from fill {estimated:.6}",
        f.num_layers(),
        measured / predicted,
    );
    for (l, r) in f.layers().zip(&layer_rates) {
        eprintln!(
            "  layer: capacity {:>8}, items {:>8}, planned {:.3e}, predicted {r:.3e}, k {}",
            l.capacity, l.inserted, l.fp_rate, l.num_hashes
        );
    }
    // The promise: however far it grew, within the bound.
    assert!(measured <= bound, "measured {measured} above {bound}");
    assert!(planned <= p);
    // And the math is right: within ±15% of the prediction (at least 10 standard deviations
    // of the binomial count here, so a correct filter cannot miss it by chance).
    let ratio = measured / predicted;
    assert!((0.85..=1.15).contains(&ratio), "ratio {ratio:.3}");
    // The fill-based estimate has no sampling noise: it is what a query risks.
    assert!((estimated / measured - 1.0).abs() < 0.05, "{estimated}");
}

/// The test: 10,000 planned at 1%, grown to 1,000,000 (7 layers), 1,000,000 absent
/// probes: at most 1%. (Measured 0.979%, predicted 0.972%, planned sum 0.992%.)
#[test]
fn rate_stays_below_1_percent_growing_100_fold() {
    grow_and_measure(
        LayerLayout::Blocked,
        10_000,
        0.01,
        1_000_000,
        1_000_000,
        0.01,
    );
}

/// The same in classic layers (RedisBloom's layout). (Measured 0.993%, predicted 0.982%,
/// 23.5 bits per key against the blocked layers' 26.8.)
#[test]
fn classic_layers_stay_below_1_percent_growing_100_fold() {
    grow_and_measure(
        LayerLayout::Classic,
        10_000,
        0.01,
        1_000_000,
        1_000_000,
        0.01,
    );
}

/// What the server's memory benchmark does: 1,000,000 keys into a filter reserved for
/// 1,000,000 at 1%, in classic layers: one layer planned at 0.5%, about 11 bits per key.
/// (Measured 0.500%, predicted 0.500%, 11.04 bits per key.)
#[test]
fn classic_layer_filled_to_capacity() {
    grow_and_measure(
        LayerLayout::Classic,
        1_000_000,
        0.01,
        1_000_000,
        1_000_000,
        0.0055,
    );
}

/// The same at 0.1%: at most 0.1%. (Measured 0.0953%, predicted 0.0981%.) This once
/// measured 0.104%, when `sizing::blocked_fp_rate` ignored the spread of a 512-bit line's
/// fill and the layers came out slightly too small at 9+ probes; it is the regression test
/// for that.
#[test]
fn rate_stays_below_a_tenth_of_a_percent_growing_100_fold() {
    grow_and_measure(
        LayerLayout::Blocked,
        10_000,
        0.001,
        1_000_000,
        2_000_000,
        0.001,
    );
}

// ---------------------------------------------------------------------------------------
// The oracle
// ---------------------------------------------------------------------------------------

fn keys() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(".{0,40}", 0..300)
}

type Options = (u64, f64, u32, f64, bool, u64, LayerLayout);

fn options() -> impl Strategy<Value = Options> {
    (
        0u64..60,
        prop::sample::select(vec![0.25, 0.1, 0.01, 0.001]),
        1u32..5,
        prop::sample::select(vec![0.5, 0.8, 0.9]),
        prop::bool::weighted(0.2),
        prop::sample::select(vec![bloomkit::DEFAULT_SEED, 0, 7]),
        prop::sample::select(vec![LayerLayout::Blocked, LayerLayout::Classic]),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn no_false_negatives_through_growth_and_storage(
        (cap, p, expansion, t, non_scaling, seed, layout) in options(),
        keys in keys(),
    ) {
        let mut f = ScalableBloomFilter::builder(cap, p)
            .expansion(expansion)
            .tightening(t)
            .non_scaling(non_scaling)
            .seed(seed)
            .layout(layout)
            .build()
            .unwrap();
        let mut stored: HashSet<&String> = HashSet::new();
        let mut added = 0u64;
        for k in &keys {
            let before = f.clone();
            match f.insert(k) {
                Ok(new) => {
                    // "new" only for a key never stored; a stored key is always "not new".
                    if stored.contains(k) {
                        prop_assert!(!new);
                    }
                    added += new as u64;
                    stored.insert(k);
                }
                Err(Error::Full { .. }) => {
                    // Only when the newest layer is full, and nothing changed.
                    prop_assert_eq!(&f, &before);
                    prop_assert!(!stored.contains(k));
                }
                Err(e) => prop_assert!(false, "{}", e),
            }
        }
        prop_assert_eq!(f.len(), added);
        prop_assert!(f.len() <= stored.len() as u64);
        for k in &stored {
            prop_assert!(f.contains(*k));
            prop_assert!(f.contains_hash(bloomkit::hash_bytes_with_seed(k.as_bytes(), seed)));
        }
        // The chain follows the rules.
        let infos: Vec<_> = f.layers().collect();
        prop_assert!(infos.len() <= ScalableBloomFilter::MAX_LAYERS);
        prop_assert!(!non_scaling || infos.len() == 1);
        for w in infos.windows(2) {
            prop_assert_eq!(w[0].inserted, w[0].capacity);
            prop_assert_eq!(w[1].capacity, w[0].capacity * expansion as u64);
            // Tightened, or at the floor where tightening passes what 64 probes reach.
            prop_assert!(
                w[1].fp_rate == w[0].fp_rate * t
                    || w[1].fp_rate == ScalableBloomFilter::MIN_LAYER_FP_RATE
            );
        }
        prop_assert_eq!(infos.iter().map(|l| l.capacity).sum::<u64>(), f.capacity());

        // Storage keeps everything, including the counts that decide when it grows.
        let g = ScalableBloomFilter::from_bytes(&f.to_bytes()).unwrap();
        prop_assert_eq!(&g, &f);
        prop_assert_eq!(g.layout(), layout);
        let mut streamed = Vec::new();
        f.write_to(&mut streamed).unwrap();
        let h = ScalableBloomFilter::read_from(&streamed[..]).unwrap();
        prop_assert_eq!(&h, &f);
        prop_assert_eq!(h.len(), f.len());
        for k in &stored {
            prop_assert!(g.contains(*k) && h.contains(*k));
        }
        // A loaded filter grows on exactly as the original does.
        let (mut a, mut b) = (f.clone(), g);
        for i in 0..200u32 {
            prop_assert_eq!(a.insert(&i).ok(), b.insert(&i).ok());
        }
        prop_assert_eq!(&a, &b);
    }
}

// ---------------------------------------------------------------------------------------
// The golden file
// ---------------------------------------------------------------------------------------

fn golden_key(i: u64) -> String {
    format!("golden:{i}")
}

/// The recipe: RedisBloom's defaults at capacity 100, keys `0..1000` (four layers), in
/// `layout`.
fn golden_build(layout: LayerLayout) -> ScalableBloomFilter {
    let mut f = ScalableBloomFilter::builder(100, 0.01)
        .layout(layout)
        .classic_probes(bloomkit::ClassicProbes::DoubleHashing)
        .blocked_probes(bloomkit::BlockedProbes::OneSeed)
        .build()
        .unwrap();
    for i in 0..1000 {
        f.insert(golden_key(i).as_str()).unwrap();
    }
    f
}

fn check_golden(name: &str, layout: LayerLayout) {
    let bin_path = data_dir().join(format!("{name}.bkf"));
    let answers_path = data_dir().join(format!("{name}.answers"));
    if std::env::var_os("BLOOMKIT_WRITE_GOLDEN").is_some() && !bin_path.exists() {
        let f = golden_build(layout);
        std::fs::write(&bin_path, f.to_bytes()).unwrap();
        std::fs::write(&answers_path, golden_answers(&f, golden_key)).unwrap();
    }
    let stored = std::fs::read(&bin_path).unwrap_or_else(|e| panic!("{}: {e}", bin_path.display()));
    let stored_answers = std::fs::read_to_string(&answers_path)
        .unwrap_or_else(|e| panic!("{}: {e}", answers_path.display()));

    let loaded = ScalableBloomFilter::from_bytes(&stored).unwrap();
    assert_eq!(loaded.layout(), layout);
    assert_eq!(
        golden_answers(&loaded, golden_key),
        stored_answers,
        "answers changed"
    );
    assert_eq!(
        shape(&loaded),
        [(100, 0.005), (200, 0.0025), (400, 0.00125), (800, 0.000625)]
    );
    assert!(stored_answers
        .lines()
        .take(1000)
        .all(|l| l.ends_with("\tmaybe")));
    let maybes = stored_answers
        .lines()
        .filter(|l| l.ends_with("maybe"))
        .count();
    assert!((1000..1040).contains(&maybes), "{maybes}");
    // Byte for byte: it writes back as stored, and today's build of the recipe is identical.
    assert!(loaded.to_bytes() == stored, "re-serialization differs");
    assert!(
        golden_build(layout).to_bytes() == as_key_feed(&stored),
        "a fresh build differs"
    );
    let current = ScalableBloomFilter::from_bytes(&as_key_feed(&stored)).unwrap();
    assert_eq!(golden_build(layout), current);
}

#[test]
fn golden_file_loads_and_answers_as_written() {
    check_golden("scalable-v1", LayerLayout::Blocked);
}

/// Classic layers: written when the layout was added (flag bit 1); the blocked file above
/// predates it and must keep loading as blocked.
#[test]
fn golden_file_with_classic_layers_loads_and_answers_as_written() {
    check_golden("scalable-classic-v1", LayerLayout::Classic);
}

// ---------------------------------------------------------------------------------------
// Hostile input
// ---------------------------------------------------------------------------------------

/// Byte offsets in a scalable file (docs/FORMAT.md; 32 bytes of parameters).
const PARAMS: usize = 36;
const PAYLOAD_LEN: usize = 68;
const LAYER_COUNT: usize = 76;
/// Word `j` of layer `i`'s descriptor.
fn descriptor(i: usize, j: usize) -> usize {
    84 + (5 * i + j) * 8
}

/// Three layers (10/20/40), the newest part full: a few hundred bytes.
fn sample() -> Vec<u8> {
    sample_in(LayerLayout::Blocked)
}

fn sample_in(layout: LayerLayout) -> Vec<u8> {
    let mut f = ScalableBloomFilter::builder(10, 0.01)
        .layout(layout)
        .build()
        .unwrap();
    for i in 0..50u32 {
        f.insert(&i).unwrap();
    }
    assert_eq!(f.num_layers(), 3);
    f.to_bytes()
}

fn put_u64(bytes: &mut [u8], at: usize, v: u64) {
    bytes[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

fn get_u64(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap())
}

fn loads(bytes: &[u8]) -> bool {
    let a = ScalableBloomFilter::from_bytes(bytes).is_ok();
    let b = ScalableBloomFilter::read_from(bytes).is_ok();
    // Loaders of other kinds must refuse it too, without panicking.
    let _ = BlockedBloomFilter::from_bytes(bytes);
    let _ = AnyFilter::from_bytes(bytes);
    a || b
}

#[test]
fn the_layout_is_as_documented() {
    let bytes = sample();
    assert_eq!(u16::from_le_bytes([bytes[10], bytes[11]]), 4); // kind: scalable
    assert_eq!(u32::from_le_bytes(bytes[32..36].try_into().unwrap()), 32);
    assert_eq!(get_u64(&bytes, PARAMS), 10);
    assert_eq!(get_u64(&bytes, LAYER_COUNT), 3);
    assert_eq!(get_u64(&bytes, descriptor(0, 0)), 10);
    assert_eq!(get_u64(&bytes, descriptor(1, 0)), 20);
    assert_eq!(get_u64(&bytes, descriptor(2, 4)), 0.00125f64.to_bits());
    assert_eq!(
        get_u64(&bytes, PAYLOAD_LEN) as usize,
        bytes.len() - LAYER_COUNT - 8
    );
}

#[test]
fn every_truncation_is_an_error() {
    for layout in [LayerLayout::Blocked, LayerLayout::Classic] {
        common::assert_every_truncation_fails(
            &sample_in(layout),
            ScalableBloomFilter::from_bytes,
            |b| ScalableBloomFilter::read_from(b),
        );
    }
}

#[test]
fn every_single_byte_corruption_is_an_error() {
    for layout in [LayerLayout::Blocked, LayerLayout::Classic] {
        common::assert_every_byte_flip_fails(
            &sample_in(layout),
            ScalableBloomFilter::from_bytes,
            |b| ScalableBloomFilter::read_from(b),
        );
    }
}

/// Classic layers: the flag is bit 1, bits come in whole words, and a layer's bit count
/// must be a positive multiple of 64 that agrees with the payload.
#[test]
fn classic_layers_in_the_file() {
    let good = sample_in(LayerLayout::Classic);
    // Classic layers (bit 1) of the rotating derivation (bit 2).
    assert_eq!(good[PARAMS + 28], 2 | 4);
    let f = ScalableBloomFilter::from_bytes(&good).unwrap();
    assert_eq!(f.layout(), LayerLayout::Classic);
    let bits0 = get_u64(&good, descriptor(0, 2));
    assert_eq!(bits0 % 64, 0);
    assert_ne!(
        bits0 % 512,
        0,
        "the sample should exercise a size no blocked layer has"
    );
    for edit in [bits0 + 1, bits0 + 32, 0, bits0 + 64] {
        let mut bad = good.clone();
        put_u64(&mut bad, descriptor(0, 2), edit);
        reseal(&mut bad);
        assert!(matches!(
            ScalableBloomFilter::from_bytes(&bad),
            Err(Error::Corrupt { .. })
        ));
        assert!(ScalableBloomFilter::read_from(&bad[..]).is_err());
    }
    // Both flags together: a non-scaling filter in classic layers.
    let mut one = ScalableBloomFilter::builder(10, 0.01)
        .non_scaling(true)
        .layout(LayerLayout::Classic)
        .build()
        .unwrap();
    one.insert("a").unwrap();
    let bytes = one.to_bytes();
    assert_eq!(bytes[PARAMS + 28], 1 | 2 | 4);
    assert_eq!(ScalableBloomFilter::from_bytes(&bytes).unwrap(), one);
    // A claim of 2^60 bits in a small file fails before allocating, as for blocked layers.
    let mut huge = ScalableBloomFilter::builder(10, 0.01)
        .layout(LayerLayout::Classic)
        .build()
        .unwrap()
        .to_bytes();
    let bits = 1u64 << 60;
    put_u64(&mut huge, descriptor(0, 2), bits);
    put_u64(&mut huge, PAYLOAD_LEN, 8 * (1 + 5) + bits / 8);
    reseal(&mut huge);
    assert!(matches!(
        ScalableBloomFilter::from_bytes(&huge),
        Err(Error::Truncated)
    ));
    assert!(matches!(
        ScalableBloomFilter::read_from(&huge[..]),
        Err(Error::Truncated)
    ));
}

/// Deliberate, resealed changes to each field: each is `Corrupt` (or the specific error).
#[test]
fn inconsistent_fields_are_corrupt() {
    let good = sample();
    let corrupt = |edit: &dyn Fn(&mut Vec<u8>)| {
        let mut bad = good.clone();
        edit(&mut bad);
        reseal(&mut bad);
        let a = ScalableBloomFilter::from_bytes(&bad);
        let b = ScalableBloomFilter::read_from(&bad[..]);
        assert!(a.is_err() && b.is_err());
        a.unwrap_err()
    };
    let is_corrupt = |e: Error| assert!(matches!(e, Error::Corrupt { .. }), "{e}");

    // Parameters.
    is_corrupt(corrupt(&|b| put_u64(b, PARAMS, 0))); // initial capacity 0
    is_corrupt(corrupt(&|b| put_u64(b, PARAMS, 11))); // disagrees with layer 0
    is_corrupt(corrupt(&|b| put_u64(b, PARAMS + 8, 1.5f64.to_bits()))); // rate
    is_corrupt(corrupt(&|b| put_u64(b, PARAMS + 8, f64::NAN.to_bits())));
    is_corrupt(corrupt(&|b| put_u64(b, PARAMS + 8, 0.02f64.to_bits()))); // layer rates differ
    is_corrupt(corrupt(&|b| b[PARAMS + 16..PARAMS + 20].fill(0))); // growth 0
    is_corrupt(corrupt(&|b| b[PARAMS + 16] = 3)); // growth 3: capacities differ
    is_corrupt(corrupt(&|b| put_u64(b, PARAMS + 20, 1.0f64.to_bits()))); // tightening
    is_corrupt(corrupt(&|b| b[PARAMS + 28] = 1)); // non-scaling with 3 layers
    is_corrupt(corrupt(&|b| b[PARAMS + 28] = 4)); // unknown flag
    is_corrupt(corrupt(&|b| b[PARAMS + 28] = 16)); // unknown flag
    is_corrupt(corrupt(&|b| b[PARAMS + 28] = 2 | 8)); // two seeds in classic layers
                                                      // Header item count disagrees with the layers.
    is_corrupt(corrupt(&|b| {
        let n = get_u64(b, 24);
        put_u64(b, 24, n + 1)
    }));
    // Layer counts.
    for n in [0u64, 2, 4, 65, u64::MAX] {
        is_corrupt(corrupt(&|b| put_u64(b, LAYER_COUNT, n)));
    }
    // Descriptors.
    is_corrupt(corrupt(&|b| put_u64(b, descriptor(1, 0), 21))); // capacity
    is_corrupt(corrupt(&|b| put_u64(b, descriptor(0, 1), 9))); // older layer not full
    is_corrupt(corrupt(&|b| put_u64(b, descriptor(2, 1), 41))); // items > capacity
    is_corrupt(corrupt(&|b| {
        // More items than capacity, with the header's count kept consistent.
        let extra = 41 - get_u64(b, descriptor(2, 1));
        put_u64(b, descriptor(2, 1), 41);
        let n = get_u64(b, 24);
        put_u64(b, 24, n + extra);
    }));
    is_corrupt(corrupt(&|b| put_u64(b, descriptor(0, 2), 1000))); // bits not lines
    is_corrupt(corrupt(&|b| put_u64(b, descriptor(0, 2), 0)));
    is_corrupt(corrupt(&|b| put_u64(b, descriptor(0, 2), 1024))); // payload length differs
    for k in [0u64, 65, 1 << 32] {
        is_corrupt(corrupt(&|b| put_u64(b, descriptor(1, 3), k)));
    }
    is_corrupt(corrupt(&|b| {
        put_u64(b, descriptor(1, 4), 0.003f64.to_bits())
    })); // rate
         // Payload length not whole words, or shorter than its declared layers.
    is_corrupt(corrupt(&|b| {
        let n = get_u64(b, PAYLOAD_LEN);
        put_u64(b, PAYLOAD_LEN, n - 64)
    }));
    is_corrupt(corrupt(&|b| put_u64(b, PAYLOAD_LEN, 16)));
}

/// A tiny file whose descriptors claim 2^60 bits must fail before allocating them.
#[test]
fn huge_claims_in_small_files_fail_before_allocating() {
    let mut f = ScalableBloomFilter::new(10, 0.01).unwrap().to_bytes();
    let bits = 1u64 << 60;
    put_u64(&mut f, descriptor(0, 2), bits);
    let payload = 8 * (1 + 5) + bits / 8;
    put_u64(&mut f, PAYLOAD_LEN, payload);
    reseal(&mut f);
    assert!(f.len() < 200);
    assert!(matches!(
        ScalableBloomFilter::from_bytes(&f),
        Err(Error::Truncated)
    ));
    // A stream cannot be measured: storage must grow only as data arrives, so this is
    // truncation, not an allocation failure (or an abort).
    for bits in [1u64 << 60, 1 << 40] {
        put_u64(&mut f, descriptor(0, 2), bits);
        put_u64(&mut f, PAYLOAD_LEN, 8 * (1 + 5) + bits / 8);
        reseal(&mut f);
        assert!(matches!(
            ScalableBloomFilter::read_from(&f[..]),
            Err(Error::Truncated)
        ));
    }
    // A huge layer count is refused before its descriptors are read.
    let mut g = ScalableBloomFilter::new(10, 0.01).unwrap().to_bytes();
    put_u64(&mut g, LAYER_COUNT, 1 << 50);
    reseal(&mut g);
    assert!(matches!(
        ScalableBloomFilter::read_from(&g[..]),
        Err(Error::Corrupt { .. })
    ));
}

#[test]
fn other_kinds_are_refused_by_name() {
    let blocked = BlockedBloomFilter::new(10, 0.01).unwrap().to_bytes();
    assert!(matches!(
        ScalableBloomFilter::from_bytes(&blocked),
        Err(Error::WrongKind {
            expected: FilterKind::Scalable,
            found: 2
        })
    ));
    assert!(matches!(
        BlockedBloomFilter::from_bytes(&sample()),
        Err(Error::WrongKind { found: 4, .. })
    ));
    assert!(matches!(
        ScalableBloomFilter::from_bytes(b"not a filter"),
        Err(Error::BadMagic)
    ));
    let mut extra = sample();
    extra.push(0);
    assert!(matches!(
        ScalableBloomFilter::from_bytes(&extra),
        Err(Error::TrailingBytes { extra: 1 })
    ));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        loads(&bytes);
    }

    /// Behind a valid header (resealed, so the checks behind the checksum are reached).
    #[test]
    fn arbitrary_payloads_never_panic(
        tail in prop::collection::vec(any::<u64>(), 0..40),
        cut in LAYER_COUNT..LAYER_COUNT + 120,
    ) {
        let mut bytes = sample()[..cut].to_vec();
        for w in tail {
            bytes.extend_from_slice(&w.to_le_bytes());
        }
        bytes.extend_from_slice(&[0; 8]);
        let payload = (bytes.len() - LAYER_COUNT - 8) as u64;
        put_u64(&mut bytes, PAYLOAD_LEN, payload);
        reseal(&mut bytes);
        loads(&bytes);
    }
}

/// A layer that counts keys but has no bits set is corrupt (every counted insert sets a
/// bit), not a filter that forgets its keys. Found missing while documenting the format.
#[test]
fn a_layer_counting_more_keys_than_it_has_bits_is_corrupt() {
    let mut f = ScalableBloomFilter::new(100, 0.01).unwrap();
    for i in 0..10u32 {
        f.insert(&i).unwrap();
    }
    assert_eq!(f.num_layers(), 1);
    let mut bytes = f.to_bytes();
    // Header (36) + parameters (32) + payload length (8) + layer count (8) + one
    // descriptor (40): the lines follow, up to the checksum.
    let lines = 36 + 32 + 8 + 8 + 40;
    let end = bytes.len() - 8;
    bytes[lines..end].fill(0);
    reseal(&mut bytes);
    match ScalableBloomFilter::from_bytes(&bytes) {
        Err(Error::Corrupt { reason }) => assert!(reason.contains("bits set"), "{reason}"),
        other => panic!("{other:?}"),
    }
}

mod merge {
    use std::collections::HashSet;

    use bloomkit::{Error, LayerLayout, ScalableBloomFilter};
    use proptest::prelude::*;

    fn built(layout: LayerLayout, non_scaling: bool) -> ScalableBloomFilter {
        ScalableBloomFilter::builder(64, 0.01)
            .layout(layout)
            .non_scaling(non_scaling)
            .build()
            .unwrap()
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, rng_seed: proptest::test_runner::RngSeed::Fixed(29), ..ProptestConfig::default() })]

        /// A merge of filters grown alike holds every key either held (a `HashSet` of both
        /// is the oracle), and is the same whichever way round it is done.
        #[test]
        fn a_merge_holds_every_key_of_both(
            a in proptest::collection::vec(any::<u32>(), 0..150),
            b in proptest::collection::vec(any::<u32>(), 0..150),
            classic in any::<bool>(),
            non_scaling in any::<bool>(),
        ) {
            let layout = if classic { LayerLayout::Classic } else { LayerLayout::Blocked };
            let (mut fa, mut fb) = (built(layout, non_scaling), built(layout, non_scaling));
            // A full non-scaling filter refuses keys: the oracle holds those it took.
            let mut oracle = HashSet::new();
            for k in &a {
                if fa.insert(k).is_ok() {
                    oracle.insert(*k);
                }
            }
            for k in &b {
                if fb.insert(k).is_ok() {
                    oracle.insert(*k);
                }
            }
            if fa.num_layers() != fb.num_layers() {
                let before = fa.clone();
                let refused = matches!(fa.merge(&fb), Err(Error::Incompatible { parameter: "number of layers", .. }));
                prop_assert!(refused);
                prop_assert_eq!(&fa, &before);
                return Ok(());
            }
            let mut ab = fa.clone();
            ab.merge(&fb).unwrap();
            let mut ba = fb.clone();
            ba.merge(&fa).unwrap();
            prop_assert_eq!(&ab, &ba);
            for k in &oracle {
                prop_assert!(ab.contains(k));
            }
            prop_assert_eq!(ab.len(), ab.estimated_count());
        }
    }

    #[test]
    fn filters_built_differently_name_the_first_difference() {
        let a = built(LayerLayout::Classic, false);
        let cases = [
            (built(LayerLayout::Blocked, false), "layout"),
            (built(LayerLayout::Classic, true), "scaling"),
            (
                ScalableBloomFilter::builder(64, 0.01)
                    .layout(LayerLayout::Classic)
                    .seed(7)
                    .build()
                    .unwrap(),
                "hash seed",
            ),
            (
                ScalableBloomFilter::builder(64, 0.01)
                    .layout(LayerLayout::Classic)
                    .expansion(4)
                    .build()
                    .unwrap(),
                "expansion",
            ),
        ];
        for (b, parameter) in cases {
            match a.clone().merge(&b) {
                Err(Error::Incompatible { parameter: p, .. }) => assert_eq!(p, parameter),
                other => panic!("{parameter}: {other:?}"),
            }
        }
    }
}
