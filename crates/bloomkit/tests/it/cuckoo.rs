//! The cuckoo filter through its public API: a multiset oracle, the measured false-positive
//! rate, filling to failure, growth to the sub-filter cap, RedisBloom's `CF.*` semantics,
//! the golden file, hostile input and bad parameters.

use crate::common;
use common::{as_key_feed, reseal};

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::PathBuf;

use bloomkit::{
    CuckooBuilder, CuckooFilter, CuckooPlacement, Error, Filter, FilterExt, FilterKind,
};
use proptest::prelude::*;

fn is_full(e: &Error) -> bool {
    matches!(
        e,
        Error::Full {
            kind: FilterKind::Cuckoo
        }
    )
}

// ---------------------------------------------------------------------------------------
// Property tests against a multiset oracle.

#[derive(Clone, Debug)]
enum Op {
    Insert(u16),
    InsertUnique(u16),
    /// Removes the key at this index (modulo) of the keys the oracle holds, if any.
    Remove(u16),
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    // A small key space, so that duplicates and re-inserts after removal are common.
    let op = prop_oneof![
        4 => (0u16..400).prop_map(Op::Insert),
        2 => (0u16..400).prop_map(Op::InsertUnique),
        3 => any::<u16>().prop_map(Op::Remove),
    ];
    prop::collection::vec(op, 0..1500)
}

/// Filter shapes from tiny (so they fill, kick, fail and grow) to roomy, library and
/// RedisBloom style.
fn options() -> impl Strategy<Value = CuckooBuilder> {
    (
        1u64..600,
        prop::sample::select(vec![1u32, 2, 3, 4, 8]),
        prop::sample::select(vec![4u32, 8, 12, 16, 17, 32]),
        prop::sample::select(vec![0u32, 1, 2, 3]),
        1u32..40,
        any::<bool>(),
    )
        .prop_map(|(cap, b, f, expansion, kicks, rb)| {
            let base = if rb {
                CuckooFilter::redisbloom_builder(cap)
            } else {
                CuckooFilter::builder(cap, 0.01)
            };
            base.bucket_size(b)
                .fingerprint_bits(f)
                .expansion(expansion)
                .max_kicks(kicks)
                .max_filters(6)
        })
}

fn check_against(f: &CuckooFilter, oracle: &HashMap<u16, u32>) -> Result<(), TestCaseError> {
    let total: u64 = oracle.values().map(|&c| c as u64).sum();
    prop_assert_eq!(f.len(), total);
    for (k, &c) in oracle {
        if c > 0 {
            prop_assert!(f.contains(k), "false negative for {}", k);
            prop_assert!(f.count(k) >= c, "count({}) = {} < {}", k, f.count(k), c);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn never_forgets_a_key_and_never_undercounts(opts in options(), ops in ops()) {
        let mut f = opts.build().unwrap();
        let mut oracle: HashMap<u16, u32> = HashMap::new();
        for op in ops {
            match op {
                Op::Insert(k) => match f.insert(&k) {
                    Ok(()) => *oracle.entry(k).or_default() += 1,
                    Err(e) => prop_assert!(is_full(&e), "{}", e),
                },
                Op::InsertUnique(k) => {
                    let was = f.contains(&k);
                    match f.insert_unique(&k) {
                        Ok(added) => {
                            prop_assert_eq!(added, !was);
                            if added {
                                *oracle.entry(k).or_default() += 1;
                            }
                        }
                        Err(e) => prop_assert!(is_full(&e), "{}", e),
                    }
                }
                Op::Remove(i) => {
                    let mut present: Vec<u16> =
                        oracle.iter().filter(|(_, &c)| c > 0).map(|(&k, _)| k).collect();
                    if present.is_empty() {
                        continue;
                    }
                    present.sort_unstable();
                    let k = present[i as usize % present.len()];
                    prop_assert!(f.remove(&k), "remove of present key {} failed", k);
                    *oracle.get_mut(&k).unwrap() -= 1;
                }
            }
            prop_assert!(f.num_filters() as u32 <= f.max_filters());
        }
        check_against(&f, &oracle)?;

        // Both round trips keep everything: slots, parameters, counters.
        let g = CuckooFilter::from_bytes(&f.to_bytes()).unwrap();
        prop_assert_eq!(&g, &f);
        prop_assert_eq!(g.num_deletes(), f.num_deletes());
        check_against(&g, &oracle)?;
        let mut streamed = Vec::new();
        f.write_to(&mut streamed).unwrap();
        prop_assert_eq!(&streamed, &f.to_bytes());
        let h = CuckooFilter::read_from(&streamed[..]).unwrap();
        prop_assert_eq!(&h, &f);
        check_against(&h, &oracle)?;

        // Compaction moves fingerprints but forgets none.
        let mut c = f.clone();
        c.compact();
        prop_assert_eq!(c.num_deletes(), 0);
        check_against(&c, &oracle)?;
    }

    #[test]
    fn hashes_and_keys_agree(keys in prop::collection::hash_set(".{0,40}", 0..200), seed in any::<u64>()) {
        let mut plain = CuckooFilter::new(300, 0.01).unwrap();
        let mut seeded = CuckooFilter::builder(300, 0.01).seed(seed).build().unwrap();
        for k in &keys {
            plain.insert_hash(bloomkit::hash(k)).unwrap();
            seeded.insert_hash(bloomkit::hash_with_seed(k, seed)).unwrap();
        }
        for k in &keys {
            prop_assert!(plain.contains(k) && seeded.contains(k));
            prop_assert!(plain.contains_hash(bloomkit::hash_bytes(k.as_bytes())));
            prop_assert!(FilterExt::contains(&seeded, k));
        }
    }
}

// ---------------------------------------------------------------------------------------
// Statistics: the measured rate at capacity, against p and the prediction.

/// Fills a filter planned for `n` keys at `p` to its capacity and measures the rate on
/// `probes` absent keys. The prediction is the filter's own
/// 1 − (1 − 1/(2^f − 1))^(2·b·load) ≈ 2·b·load/2^f; ±15% is more than 6 standard deviations
/// of the count at 0.1% with 2,000,000 probes.
fn measure_at_capacity(n: u64, p: f64, probes: u64) -> (f64, f64, CuckooFilter) {
    let mut f = CuckooFilter::new(n, p).unwrap();
    for i in 0..n {
        f.insert(&i).unwrap();
    }
    for i in 0..n {
        assert!(f.contains(&i), "false negative for {i}");
    }
    let hits = (n..n + probes).filter(|i| f.contains(i)).count();
    let measured = hits as f64 / probes as f64;
    let predicted = f.estimated_fp_rate();
    let bits_per_key = f.num_slots() as f64 * f.fingerprint_bits() as f64 / n as f64;
    let b = f.bucket_size() as f64;
    let bound = 2.0 * b * f.load_factor() / 2f64.powi(f.fingerprint_bits() as i32);
    eprintln!(
        "cuckoo p={p}: f={} b={} load {:.4}: measured {measured:.6}, predicted {predicted:.6} \
         (2·b·load/2^f = {bound:.6}), ratio {:.3}; {bits_per_key:.2} bits/key in slots, \
         {:.2} bits/key in memory",
        f.fingerprint_bits(),
        f.bucket_size(),
        f.load_factor(),
        measured / predicted,
        f.memory_bytes() as f64 * 8.0 / n as f64,
    );
    (measured, predicted, f)
}

#[test]
fn rate_at_1_percent_at_capacity() {
    let (measured, predicted, f) = measure_at_capacity(1_000_000, 0.01, 1_000_000);
    assert!(measured <= 0.01, "{measured}");
    assert!(
        (measured / predicted - 1.0).abs() < 0.15,
        "{measured} vs {predicted}"
    );
    // Fan et al.: (log2(1/ε) + 3)/α ≈ 10.5 bits per key at 1% and 95% load.
    let bits_per_key = f.num_slots() as f64 * 10.0 / 1e6;
    assert!(bits_per_key > 10.4 && bits_per_key < 10.7, "{bits_per_key}");
}

#[test]
fn rate_at_a_tenth_of_a_percent_at_capacity() {
    let (measured, predicted, f) = measure_at_capacity(1_000_000, 0.001, 2_000_000);
    assert!(measured <= 0.001, "{measured}");
    assert!(
        (measured / predicted - 1.0).abs() < 0.15,
        "{measured} vs {predicted}"
    );
    assert_eq!(f.fingerprint_bits(), 13);
}

/// A RedisBloom-style filter that grew: each sub-filter adds its own share, and the
/// prediction summed over sub-filters still matches.
#[test]
fn rate_of_a_grown_redisbloom_filter() {
    let mut f = CuckooFilter::redisbloom_builder(100_000).build().unwrap();
    for i in 0..400_000u64 {
        f.insert(&i).unwrap();
    }
    assert!(f.num_filters() > 1);
    let hits = (1u64 << 40..(1 << 40) + 1_000_000)
        .filter(|i| f.contains(i))
        .count();
    let measured = hits as f64 / 1e6;
    let predicted = f.estimated_fp_rate();
    eprintln!(
        "redisbloom-style, {} sub-filters, load {:.3}: measured {measured:.5}, predicted \
         {predicted:.5}",
        f.num_filters(),
        f.load_factor()
    );
    assert!(
        (measured / predicted - 1.0).abs() < 0.15,
        "{measured} vs {predicted}"
    );
}

// ---------------------------------------------------------------------------------------
// Full filters, growth, capacity.

/// Fills a non-growing filter to its first failure; every key stored before is found, and
/// failed inserts change no byte.
#[test]
fn a_full_filter_loses_nothing() {
    let configs = [
        CuckooFilter::builder(5_000, 0.01),
        CuckooFilter::builder(5_000, 0.01)
            .bucket_size(2)
            .max_kicks(10),
        CuckooFilter::redisbloom_builder(4_096).expansion(0),
        CuckooFilter::builder(3_000, 0.01)
            .bucket_size(8)
            .fingerprint_bits(32),
        CuckooFilter::builder(2_000, 0.01).bucket_size(1),
        CuckooFilter::builder(1_000, 0.01)
            .bucket_size(20)
            .fingerprint_bits(7),
    ];
    for opts in configs {
        let mut f = opts.build().unwrap();
        let mut stored = 0u64;
        let err = loop {
            match f.insert(&stored) {
                Ok(()) => stored += 1,
                Err(e) => break e,
            }
        };
        assert!(is_full(&err), "{err}");
        assert_eq!(f.len(), stored);
        assert!((0..stored).all(|i| f.contains(&i)), "{opts:?} lost a key");
        let before = f.to_bytes();
        let mut more = 0;
        for i in stored + 1..stored + 200 {
            match f.insert(&i) {
                Ok(()) => more += 1,
                Err(e) => {
                    assert!(is_full(&e));
                    assert_eq!(f.to_bytes().len(), before.len());
                }
            }
        }
        if more == 0 {
            assert_eq!(f.to_bytes(), before);
        }
        assert!((0..stored).all(|i| f.contains(&i)), "{opts:?} lost a key");
        eprintln!(
            "b={} f={} kicks={}: full at load {:.3}",
            f.bucket_size(),
            f.fingerprint_bits(),
            f.max_kicks(),
            f.load_factor()
        );
    }
}

/// With expansion, a full sub-filter gets a successor of `buckets · expansion^k` buckets, up
/// to the cap; then inserts fail with `Full` and change nothing.
#[test]
fn growth_stops_at_the_sub_filter_cap() {
    for (expansion, cap) in [(1u32, 32u32), (2, 6), (4, 4)] {
        let mut f = CuckooFilter::redisbloom_builder(64)
            .expansion(expansion)
            .max_filters(cap)
            .build()
            .unwrap();
        let base = f.num_buckets();
        assert_eq!(base, 32);
        let mut stored = 0u64;
        let mut filters_seen = vec![1usize];
        let err = loop {
            match f.insert(&stored) {
                Ok(()) => {
                    stored += 1;
                    if *filters_seen.last().unwrap() != f.num_filters() {
                        filters_seen.push(f.num_filters());
                    }
                }
                Err(e) => break e,
            }
        };
        assert!(is_full(&err), "{err}");
        // One new sub-filter at a time, up to the cap.
        assert_eq!(filters_seen, (1..=cap as usize).collect::<Vec<_>>());
        let slots: u64 = (0..cap).map(|k| base * (expansion as u64).pow(k) * 2).sum();
        assert_eq!(f.num_slots(), slots);
        assert_eq!(
            f.capacity(),
            (0..cap)
                .map(|k| 64 * (expansion as u64).pow(k))
                .sum::<u64>()
        );
        assert!((0..stored).all(|i| f.contains(&i)));
        let before = f.to_bytes();
        for i in stored + 1..stored + 100 {
            if let Err(e) = f.insert(&i) {
                assert!(is_full(&e));
            }
        }
        assert!(f.num_filters() == cap as usize);
        assert!((0..stored).all(|i| f.contains(&i)));
        let _ = before;
    }
}

/// `new(capacity, p)` always holds `capacity` keys, for small tables (where the load at the
/// first failure varies most) and across seeds.
#[test]
fn planned_capacity_always_fits() {
    for capacity in (1..=300u64).chain((400..=3000).step_by(100)) {
        for seed in 0..8 {
            let mut f = CuckooFilter::builder(capacity, 0.01)
                .seed(seed)
                .build()
                .unwrap();
            for i in 0..capacity {
                f.insert(&(i, seed))
                    .unwrap_or_else(|e| panic!("capacity {capacity} seed {seed} key {i}: {e}"));
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// RedisBloom's CF.* semantics.

#[test]
fn redisbloom_reserve_and_info_fields() {
    // CF.RESERVE cf 1000 → CF.INFO: Size 1080, Number of buckets 512, filters 1, items 0,
    // deleted 0, bucket size 2, expansion 1, max iterations 20.
    let f = CuckooFilter::redisbloom_builder(1000).build().unwrap();
    let redis_size = 40 + 16 * f.num_filters() as u64 + f.num_slots();
    assert_eq!(redis_size, 1080);
    assert_eq!(
        (
            f.num_buckets(),
            f.num_filters(),
            f.len(),
            f.num_deletes(),
            f.bucket_size(),
            f.expansion(),
            f.max_kicks()
        ),
        (512, 1, 0, 0, 2, 1, 20)
    );
    // Expansion is stored rounded up to a power of two; 0 stays 0.
    for (given, stored) in [(0u32, 0u32), (1, 1), (2, 2), (3, 4), (5, 8), (32768, 32768)] {
        let f = CuckooFilter::redisbloom_builder(1000)
            .expansion(given)
            .build()
            .unwrap();
        assert_eq!(f.expansion(), stored);
    }
}

#[test]
fn add_allows_duplicates_addnx_does_not_del_removes_one() {
    let mut f = CuckooFilter::redisbloom_builder(1024).build().unwrap();
    for _ in 0..3 {
        f.insert("item").unwrap(); // CF.ADD → 1 each time
    }
    assert_eq!(f.count("item"), 3); // CF.COUNT
    assert!(!f.insert_unique("item").unwrap()); // CF.ADDNX → 0
    assert!(f.insert_unique("other").unwrap()); // CF.ADDNX → 1
    assert_eq!(f.len(), 4);
    assert!(f.remove("item")); // CF.DEL → 1
    assert_eq!((f.count("item"), f.len(), f.num_deletes()), (2, 3, 1));
    assert!(f.remove("item") && f.remove("item"));
    assert!(!f.remove("item")); // CF.DEL → 0
    assert!(!f.contains("item"));
    assert!(f.contains("other"));
    assert_eq!((f.len(), f.num_deletes()), (1, 3));
}

/// RedisBloom's own suite (`test_cuckoo.py`: test_bucket_size, test_expansion,
/// test_max_expansions) adds "0".."999" and expects these sub-filter counts. Our key hash
/// differs, so which keys collide differs, but the same algorithm lands within one sub-filter.
#[test]
fn growth_matches_redisbloom_test_suite_within_one_sub_filter() {
    let cases = [
        (CuckooFilter::redisbloom_builder(64).bucket_size(1), 64, 18),
        (CuckooFilter::redisbloom_builder(64).bucket_size(2), 32, 17),
        (
            CuckooFilter::redisbloom_builder(256)
                .bucket_size(4)
                .max_kicks(500),
            64,
            4,
        ),
        (CuckooFilter::redisbloom_builder(64).expansion(2), 32, 5),
        (
            CuckooFilter::redisbloom_builder(64)
                .expansion(4)
                .max_kicks(500),
            32,
            3,
        ),
    ];
    for (opts, buckets, filters) in cases {
        let mut f = opts.build().unwrap();
        for i in 0..1000u32 {
            f.insert(i.to_string().as_str()).unwrap();
        }
        assert_eq!((f.num_buckets(), f.len()), (buckets, 1000));
        assert!((0..1000u32).all(|i| f.contains(i.to_string().as_str())));
        let got = f.num_filters() as i64;
        assert!((got - filters).abs() <= 1, "{opts:?}: {got} vs {filters}");
    }
    // CF.RESERVE cf 4: RedisBloom takes 124 adds before its 32 sub-filters are all in use.
    let mut f = CuckooFilter::redisbloom_builder(4).build().unwrap();
    let mut adds = 0;
    while f.num_filters() < 32 {
        f.insert(adds.to_string().as_str()).unwrap();
        adds += 1;
    }
    assert!((120..=128).contains(&adds), "{adds}");
}

/// Deleting more than 10% of the items of a multi-filter chain compacts it: fingerprints
/// move into older sub-filters, emptied newest ones are freed, the delete count restarts.
#[test]
fn deletes_compact_a_grown_filter() {
    let mut f = CuckooFilter::redisbloom_builder(1000).build().unwrap();
    for i in 0..3000u32 {
        f.insert(&i).unwrap();
    }
    let grown = f.num_filters();
    assert!(grown >= 3, "{grown}");
    let memory = f.memory_bytes();
    for i in 0..2500u32 {
        assert!(f.remove(&i), "{i}");
        assert!(f.num_deletes() as f64 <= f.len() as f64 * 0.10 + 1.0);
    }
    assert!(f.num_filters() < grown, "{} of {grown}", f.num_filters());
    assert!(f.memory_bytes() < memory);
    assert!((2500..3000u32).all(|i| f.contains(&i)));
    assert_eq!(f.len(), 500);
}

#[test]
fn same_inserts_same_bytes() {
    let build = || {
        let mut f = CuckooFilter::builder(2000, 0.01)
            .max_kicks(100)
            .build()
            .unwrap();
        let mut i = 0u32;
        while f.insert(&i).is_ok() {
            i += 1;
        }
        f
    };
    assert_eq!(build().to_bytes(), build().to_bytes());
}

#[test]
fn is_send_sync_and_debug_is_short() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<CuckooFilter>();
    let f = CuckooFilter::new(1_000_000, 0.01).unwrap();
    let debug = format!("{f:?}");
    assert!(debug.len() < 300, "{debug}");
    assert_eq!(Filter::kind(&f), FilterKind::Cuckoo);
    assert!(f.memory_bytes() >= 1_000_000 * 10 / 8);
    assert!(f.memory_bytes() < 1_000_000 * 11 / 8);
}

// ---------------------------------------------------------------------------------------
// The golden file.

fn golden_key(i: u64) -> String {
    format!("golden:{i}")
}

/// The recipe: a library filter for 600 keys that may double, holding keys 0..1000 (so it
/// grew), keys 0..50 a second time, and keys 0..25 removed once.
fn golden_build(placement: CuckooPlacement) -> CuckooFilter {
    let mut f = CuckooFilter::builder(600, 0.01)
        .expansion(2)
        .placement(placement)
        .build()
        .unwrap();
    for i in 0..1000 {
        f.insert(golden_key(i).as_str()).unwrap();
    }
    for i in 0..50 {
        f.insert(golden_key(i).as_str()).unwrap();
    }
    for i in 0..25 {
        assert!(f.remove(golden_key(i).as_str()));
    }
    f
}

fn golden_answers(f: &CuckooFilter) -> String {
    let mut out = String::new();
    for i in 0..3000 {
        let k = golden_key(i);
        let answer = if f.contains(k.as_str()) {
            "maybe"
        } else {
            "no"
        };
        writeln!(out, "{k}\t{answer}\t{}", f.count(k.as_str())).unwrap();
    }
    out
}

/// `cuckoo-v1` was written before the distinct placement (48 bytes of parameters, bloomkit
/// 0.1's key feed); `cuckoo-distinct-v1` with it (flag bit 0). Both load, answer and write
/// back as they did, and a fresh build of the same placement makes the same bytes.
#[test]
fn golden_files_load_and_answer_as_written() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    for (name, placement, params_len) in [
        ("cuckoo-v1", CuckooPlacement::Original, 48u32),
        ("cuckoo-distinct-v1", CuckooPlacement::Distinct, 52),
    ] {
        let bin_path = dir.join(format!("{name}.bkf"));
        let answers_path = dir.join(format!("{name}.answers"));
        if std::env::var_os("BLOOMKIT_WRITE_GOLDEN").is_some() && !bin_path.exists() {
            let f = golden_build(placement);
            std::fs::write(&bin_path, f.to_bytes()).unwrap();
            std::fs::write(&answers_path, golden_answers(&f)).unwrap();
        }
        let stored = std::fs::read(&bin_path).unwrap();
        let stored_answers = std::fs::read_to_string(&answers_path).unwrap();
        assert_eq!(stored[32..36], params_len.to_le_bytes(), "{name}");

        let loaded = CuckooFilter::from_bytes(&stored).unwrap();
        assert_eq!(loaded.placement(), placement, "{name}");
        assert_eq!(
            golden_answers(&loaded),
            stored_answers,
            "{name}: answers changed"
        );
        assert_eq!(
            (loaded.len(), loaded.num_deletes(), loaded.num_filters()),
            (1025, 25, 2),
            "{name}"
        );
        // Every inserted key is there, with at least its copies; absent ones mostly are not.
        for (i, line) in stored_answers.lines().enumerate() {
            let count: u32 = line.rsplit('\t').next().unwrap().parse().unwrap();
            if i < 1000 {
                assert!(line.contains("\tmaybe\t"), "{line}");
                let copies = if (25..50).contains(&i) { 2 } else { 1 };
                assert!(count >= copies, "{line}");
            }
        }
        let maybes = stored_answers
            .lines()
            .filter(|l| l.contains("maybe"))
            .count();
        assert!((1000..1060).contains(&maybes), "{name}: {maybes}");

        assert!(
            loaded.to_bytes() == stored,
            "{name}: re-serialization differs"
        );
        // The first file has bloomkit 0.1's hash algorithm code (1); with the header saying
        // the current one, the rest is the same bytes: the hash of the keys, the layout and
        // the writer are unchanged.
        let stored = if stored[12] == 1 {
            as_key_feed(&stored)
        } else {
            stored
        };
        assert!(
            golden_build(placement).to_bytes() == stored,
            "{name}: a fresh build differs"
        );
    }
}

// ---------------------------------------------------------------------------------------
// Copies of one key, as RedisBloom places them.

/// `CF.RESERVE cf 2 BUCKETSIZE 1 EXPANSION 1` and 1,000 copies of one item: every item's
/// two buckets differ, so each sub-filter takes two copies and the chain has 500, where
/// the original placement (like RedisBloom's own rule for about half the items in a
/// two-bucket table) folds some items' buckets into one, with 1,000.
#[test]
fn copies_take_both_buckets_of_every_sub_filter() {
    let mut folded = 0;
    for item in ["a", "b", "c", "x", "y", "z", "item", "foo", "1", "2"] {
        for placement in [CuckooPlacement::Distinct, CuckooPlacement::Original] {
            let mut f = CuckooFilter::redisbloom_builder(2)
                .bucket_size(1)
                .max_filters(65_535)
                .placement(placement)
                .build()
                .unwrap();
            for _ in 0..1000 {
                f.insert(item).unwrap();
            }
            assert_eq!((f.count(item), f.len()), (1000, 1000), "{item}");
            match (placement, f.num_filters()) {
                (CuckooPlacement::Distinct, n) => assert_eq!(n, 500, "{item}"),
                (_, 1000) => folded += 1,
                (_, n) => assert_eq!(n, 500, "{item}"),
            }
        }
        // Larger tables: 2·b copies per sub-filter.
        let mut f = CuckooFilter::redisbloom_builder(1000)
            .max_filters(65_535)
            .build()
            .unwrap();
        for _ in 0..2000 {
            f.insert(item).unwrap();
        }
        assert_eq!((f.num_filters(), f.count(item)), (500, 2000), "{item}");
        // Removing the copies leaves the filter as if they were never there: compaction
        // frees every sub-filter but the first.
        for _ in 0..2000 {
            assert!(f.remove(item));
        }
        assert_eq!((f.num_filters(), f.len(), f.contains(item)), (1, 0, false));
    }
    // The original placement folds some of these items, as the issue measured.
    assert!(folded > 0, "{folded}");
}

// ---------------------------------------------------------------------------------------
// Hostile input.

/// Offsets in a cuckoo file of the distinct placement (docs: the cuckoo module): header 36
/// bytes, then 52 bytes of parameters, the flags last.
const CAPACITY: usize = 36;
const BASE_BUCKETS: usize = 44;
const BUCKET_SIZE: usize = 52;
const FP_BITS: usize = 56;
const MAX_KICKS: usize = 60;
const EXPANSION: usize = 64;
const MAX_FILTERS: usize = 68;
const NUM_FILTERS: usize = 72;
const FLAGS: usize = 84;
const PAYLOAD_LEN: usize = 88;
const PAYLOAD: usize = 96;

fn put_u32(bytes: &mut [u8], at: usize, v: u32) {
    bytes[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

fn put_u64(bytes: &mut [u8], at: usize, v: u64) {
    bytes[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

/// A small filter with three sub-filters, duplicates and deletions.
fn sample() -> Vec<u8> {
    let mut f = CuckooFilter::redisbloom_builder(8)
        .max_kicks(5)
        .build()
        .unwrap();
    for i in 0..20u32 {
        f.insert(&i).unwrap();
    }
    f.insert(&3u32).unwrap();
    f.remove(&7u32);
    assert!(f.num_filters() >= 2);
    f.to_bytes()
}

fn loads(bytes: &[u8]) -> bool {
    let a = CuckooFilter::from_bytes(bytes).is_ok();
    let b = CuckooFilter::read_from(bytes).is_ok();
    a || b
}

#[test]
fn every_truncation_is_an_error() {
    common::assert_every_truncation_fails(&sample(), CuckooFilter::from_bytes, |b| {
        CuckooFilter::read_from(b)
    });
}

#[test]
fn every_single_byte_corruption_is_an_error() {
    common::assert_every_byte_flip_fails(&sample(), CuckooFilter::from_bytes, |b| {
        CuckooFilter::read_from(b)
    });
}

#[test]
fn resealed_field_changes_are_caught_by_the_field_checks() {
    let good = sample();
    let corrupt = |edit: &dyn Fn(&mut Vec<u8>)| {
        let mut bad = good.clone();
        edit(&mut bad);
        reseal(&mut bad);
        let err = CuckooFilter::from_bytes(&bad).unwrap_err();
        assert!(
            matches!(err, Error::Corrupt { .. } | Error::Truncated),
            "{err}"
        );
        let err = CuckooFilter::read_from(&bad[..]).unwrap_err();
        assert!(
            matches!(err, Error::Corrupt { .. } | Error::Truncated),
            "{err}"
        );
    };
    corrupt(&|b| put_u64(b, CAPACITY, 0));
    corrupt(&|b| put_u64(b, BASE_BUCKETS, 0));
    corrupt(&|b| put_u64(b, BASE_BUCKETS, 5)); // sizes disagree with the payload
    for v in [0u32, 256, u32::MAX] {
        corrupt(&|b| put_u32(b, BUCKET_SIZE, v));
    }
    for v in [0u32, 3, 33, u32::MAX] {
        corrupt(&|b| put_u32(b, FP_BITS, v));
    }
    corrupt(&|b| put_u32(b, FP_BITS, 9)); // in range, but not the payload's size
    for v in [0u32, 65_536] {
        corrupt(&|b| put_u32(b, MAX_KICKS, v));
    }
    corrupt(&|b| put_u32(b, EXPANSION, 32_769));
    corrupt(&|b| put_u32(b, EXPANSION, 0)); // no growth, yet several sub-filters
    corrupt(&|b| put_u32(b, EXPANSION, 2)); // sub-filter sizes then disagree
    corrupt(&|b| put_u32(b, MAX_FILTERS, 0));
    corrupt(&|b| put_u32(b, MAX_FILTERS, 1)); // fewer than it holds
    corrupt(&|b| put_u32(b, NUM_FILTERS, 0));
    corrupt(&|b| put_u32(b, NUM_FILTERS, 1));
    // The header's item count is not the occupied slots.
    corrupt(&|b| {
        let count = u64::from_le_bytes(b[24..32].try_into().unwrap());
        put_u64(b, 24, count + 1);
    });
    // A descriptor that disagrees with the parameters.
    corrupt(&|b| put_u64(b, PAYLOAD, 17));
    // Flags this build does not know, and an empty flag word (never written: a filter
    // without flags has 48 bytes of parameters).
    for v in [0u32, 2, 3, 1 << 31] {
        corrupt(&|b| put_u32(b, FLAGS, v));
    }
    // Padding past the last slot: 5 buckets of 4 ten-bit slots leave 56 bits of the last
    // word unused.
    let mut padded = CuckooFilter::builder(10, 0.01).build().unwrap();
    padded.insert("k").unwrap();
    assert_eq!(padded.num_slots() * 10 % 64, 8);
    let mut bad = padded.to_bytes();
    let last_word = bad.len() - 16;
    bad[last_word + 7] |= 0x80;
    reseal(&mut bad);
    assert!(matches!(
        CuckooFilter::from_bytes(&bad),
        Err(Error::Corrupt { .. })
    ));
    // Trailing bytes.
    let mut longer = good.clone();
    longer.extend_from_slice(b"x");
    assert!(matches!(
        CuckooFilter::from_bytes(&longer),
        Err(Error::TrailingBytes { extra: 1 })
    ));
}

/// Headers claiming huge tables in tiny inputs fail before allocating: a slice by its
/// length, a stream by running out of data.
#[test]
fn huge_claims_in_small_files_fail_before_allocating() {
    let small = CuckooFilter::redisbloom_builder(8)
        .build()
        .unwrap()
        .to_bytes();
    let claims: [(u64, u32, u32, u32); 3] = [
        // base buckets, expansion, max filters, sub-filters
        (1 << 40, 1, 32, 1),
        (1 << 20, 1, 65_535, 65_535),
        (4, 32_768, 65_535, 4),
    ];
    for (buckets, expansion, max_filters, filters) in claims {
        let mut f = small.clone();
        put_u64(&mut f, BASE_BUCKETS, buckets);
        put_u32(&mut f, EXPANSION, expansion);
        put_u32(&mut f, MAX_FILTERS, max_filters);
        put_u32(&mut f, NUM_FILTERS, filters);
        // A payload length consistent with the claim (2 slots of 8 bits per bucket).
        let mut words = filters as u64;
        for k in 0..filters {
            words += (buckets * (expansion as u64).pow(k) * 16).div_ceil(64);
        }
        put_u64(&mut f, PAYLOAD_LEN, words * 8);
        put_u64(&mut f, PAYLOAD, buckets);
        reseal(&mut f);
        assert!(f.len() < 200);
        assert!(matches!(
            CuckooFilter::from_bytes(&f),
            Err(Error::Truncated)
        ));
        // Had the stream reader reserved the claim up front, this would be OutOfMemory (or
        // worse) rather than truncation.
        let err = CuckooFilter::read_from(&f[..]).unwrap_err();
        assert!(
            matches!(err, Error::Truncated),
            "{buckets} {filters}: {err}"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        loads(&bytes);
    }

    #[test]
    fn arbitrary_bytes_behind_a_valid_header_never_panic(
        tail in prop::collection::vec(any::<u8>(), 0..200),
        cut in 0usize..PAYLOAD + 16,
        reseal_it in any::<bool>(),
    ) {
        let mut bytes = sample()[..cut].to_vec();
        bytes.extend_from_slice(&tail);
        if reseal_it && bytes.len() >= 8 {
            reseal(&mut bytes);
        }
        loads(&bytes);
    }
}

// ---------------------------------------------------------------------------------------
// Bad parameters.

#[test]
fn bad_parameters_are_errors() {
    for p in [0.0, 1.0, -0.1, 1.5, f64::NAN, f64::INFINITY] {
        assert!(matches!(
            CuckooFilter::new(100, p),
            Err(Error::InvalidFpRate { .. })
        ));
    }
    let invalid = |opts: CuckooBuilder, param: &str| match opts.build() {
        Err(Error::InvalidParameter { name, .. }) => assert_eq!(name, param),
        other => panic!("{param}: {other:?}"),
    };
    invalid(CuckooFilter::builder(100, 1e-12), "fp_rate");
    invalid(
        CuckooFilter::builder(100, 0.01).bucket_size(0),
        "bucket_size",
    );
    invalid(
        CuckooFilter::builder(100, 0.01).bucket_size(256),
        "bucket_size",
    );
    invalid(
        CuckooFilter::builder(100, 0.01).fingerprint_bits(3),
        "fingerprint_bits",
    );
    invalid(
        CuckooFilter::builder(100, 0.01).fingerprint_bits(33),
        "fingerprint_bits",
    );
    invalid(CuckooFilter::builder(100, 0.01).max_kicks(0), "max_kicks");
    invalid(
        CuckooFilter::builder(100, 0.01).max_kicks(65_536),
        "max_kicks",
    );
    invalid(
        CuckooFilter::builder(100, 0.01).expansion(32_769),
        "expansion",
    );
    invalid(
        CuckooFilter::builder(100, 0.01).max_filters(0),
        "max_filters",
    );
    invalid(
        CuckooFilter::redisbloom_builder(100).bucket_size(300),
        "bucket_size",
    );
    // The message says what is accepted.
    let msg = CuckooFilter::builder(1, 0.01)
        .bucket_size(0)
        .build()
        .unwrap_err()
        .to_string();
    assert!(msg.contains("1 to 255"), "{msg}");
    // Absurd sizes are errors, not aborts.
    for opts in [
        CuckooFilter::builder(u64::MAX, 0.01),
        CuckooFilter::builder(1 << 52, 0.01),
        CuckooFilter::redisbloom_builder(u64::MAX).bucket_size(1),
    ] {
        assert!(matches!(
            opts.build(),
            Err(Error::TooLarge { .. }) | Err(Error::OutOfMemory { .. })
        ));
    }
    // Capacity 0 is 1; extremes that are valid work.
    assert_eq!(CuckooFilter::new(0, 0.5).unwrap().capacity(), 1);
    let mut f = CuckooFilter::builder(10, 0.01)
        .bucket_size(255)
        .fingerprint_bits(32)
        .max_kicks(65_535)
        .build()
        .unwrap();
    f.insert("x").unwrap();
    assert!(f.contains("x"));
}
