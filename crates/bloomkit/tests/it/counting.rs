//! `CountingBloomFilter` through its public API: a multiset oracle for interleaved inserts and
//! removes, the projection onto a classic filter, the measured rate, the golden file, hostile
//! input and bad parameters.

use crate::common;
use common::{as_key_feed, data_dir, golden_answers, reseal};

use std::collections::HashMap;

use bloomkit::sizing::classic_fp_rate;
use bloomkit::{BloomFilter, CountingBloomFilter, Error, Filter, FilterKind};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    Insert(u16),
    Remove(u16),
}

/// Keys from a small pool, so that keys repeat (inserted twice, removed once, removed again).
const POOL: u16 = 300;

fn ops() -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(
        prop_oneof![
            3 => (0..POOL).prop_map(Op::Insert),
            2 => (0..POOL).prop_map(Op::Remove),
        ],
        0..800,
    )
}

/// Capacities from tiny (counters saturate, the filter says "maybe" to everything) to
/// comfortable, and rates across the useful range.
fn plan() -> impl Strategy<Value = (u64, f64)> {
    (
        0u64..600,
        prop::sample::select(vec![0.5, 0.1, 0.01, 0.001, 1e-6]),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// Interleaved inserts and removes against a multiset: a key inserted twice and removed
    /// once is still there, and no key with a copy left is ever missing, as long as only
    /// inserted copies are removed.
    #[test]
    fn no_false_negatives_through_inserts_and_removes((n, p) in plan(), ops in ops()) {
        let mut f = CountingBloomFilter::new(n, p).unwrap();
        let mut copies: HashMap<u16, u32> = HashMap::new();
        for op in &ops {
            match *op {
                Op::Insert(k) => {
                    let was_absent = f.insert(&k);
                    // "Definitely absent" is never said of a key that has a copy.
                    prop_assert!(!(was_absent && copies.get(&k).copied().unwrap_or(0) > 0));
                    *copies.entry(k).or_default() += 1;
                }
                Op::Remove(k) => match copies.get_mut(&k) {
                    Some(c) if *c > 0 => {
                        prop_assert!(f.remove(&k), "removing an inserted copy of {k}");
                        *c -= 1;
                    }
                    // Never inserted, or every copy already removed: removing it could
                    // cause false negatives, so the oracle only tries the definitely-absent
                    // case, which must be refused and change nothing.
                    _ => {
                        if !f.contains(&k) {
                            let before = f.clone();
                            prop_assert!(!f.remove(&k));
                            prop_assert_eq!(&f, &before);
                        }
                    }
                },
            }
        }
        let present: Vec<u16> = copies.iter().filter(|(_, &c)| c > 0).map(|(&k, _)| k).collect();
        for k in &present {
            prop_assert!(f.contains(k), "false negative for {k}");
            prop_assert!(f.contains_hash(bloomkit::hash(k)));
        }
        prop_assert_eq!(f.len(), copies.values().map(|&c| c as u64).sum::<u64>());

        // The projection answers every key alike, present or not.
        let b = f.to_bloom().unwrap();
        prop_assert_eq!(b.count_ones(), f.count_nonzero());
        for k in 0..2 * POOL {
            prop_assert_eq!(b.contains(&k), f.contains(&k), "key {}", k);
        }

        // And all of it survives both round trips through the format.
        let g = CountingBloomFilter::from_bytes(&f.to_bytes()).unwrap();
        let mut streamed = Vec::new();
        f.write_to(&mut streamed).unwrap();
        let h = CountingBloomFilter::read_from(&streamed[..]).unwrap();
        for loaded in [&g, &h] {
            prop_assert_eq!(loaded, &f);
            prop_assert_eq!(loaded.len(), f.len());
            for k in &present {
                prop_assert!(loaded.contains(k));
            }
        }
    }

    /// A union holds both filters' copies: every key of either is present, and after removing
    /// one side's copies the other side's keys still are.
    #[test]
    fn union_sums_counters(
        a_keys in prop::collection::vec(0..POOL, 0..300),
        b_keys in prop::collection::vec(0..POOL, 0..300),
        n in 1u64..400,
    ) {
        let make = || CountingBloomFilter::new(n, 0.01).unwrap();
        let (mut a, mut b) = (make(), make());
        for k in &a_keys { a.insert(k); }
        for k in &b_keys { b.insert(k); }
        let mut u = a.clone();
        u.union(&b).unwrap();
        let mut u2 = b.clone();
        u2.union(&a).unwrap();
        prop_assert_eq!(&u, &u2);
        prop_assert_eq!(u.len(), (a_keys.len() + b_keys.len()) as u64);
        for k in a_keys.iter().chain(&b_keys) {
            prop_assert!(u.contains(k));
        }
        for k in &b_keys {
            prop_assert!(u.remove(k));
        }
        for k in &a_keys {
            prop_assert!(u.contains(k));
        }
    }
}

#[test]
fn union_refuses_other_shapes_and_changes_nothing() {
    let mut a = CountingBloomFilter::new(100, 0.01).unwrap();
    a.insert("x");
    let before = a.clone();
    for other in [
        CountingBloomFilter::new(1000, 0.01).unwrap(),
        CountingBloomFilter::builder(100, 0.01)
            .seed(1)
            .build()
            .unwrap(),
        CountingBloomFilter::builder(0, 0.01)
            .num_counters(a.num_counters())
            .num_hashes(a.num_hashes() + 1)
            .build()
            .unwrap(),
    ] {
        assert!(matches!(a.union(&other), Err(Error::Incompatible { .. })));
    }
    assert_eq!(a, before);
    assert_eq!(a.len(), 1);
}

/// The projection is the classic filter of the surviving keys, bit for bit: the sizing and the
/// probes are the classic ones, and removal is the exact inverse of insertion while nothing
/// saturates.
#[test]
fn projection_is_the_classic_filter_of_the_surviving_keys() {
    let n = 100_000u64;
    let mut c = CountingBloomFilter::new(n, 0.01).unwrap();
    let mut classic = BloomFilter::new(n, 0.01).unwrap();
    for i in 0..n {
        c.insert(&i);
    }
    for i in (0..n).filter(|i| i % 2 == 0) {
        assert!(c.remove(&i));
    }
    for i in (0..n).filter(|i| i % 2 == 1) {
        classic.insert(&i);
    }
    assert_eq!(c.count_saturated(), 0);
    let b = c.to_bloom().unwrap();
    assert_eq!(b, classic);
    assert_eq!(b.num_bits(), c.num_counters());
    assert_eq!(b.num_hashes(), c.num_hashes());
    assert_eq!(b.seed(), c.seed());
    assert_eq!(b.len(), n / 2);
    let mut differ = 0;
    for i in 0..1_000_000u64 {
        differ += (b.contains(&i) != c.contains(&i)) as u32;
    }
    assert_eq!(differ, 0);
    // A seeded filter projects to a seeded classic filter.
    let mut s = CountingBloomFilter::builder(1000, 0.01)
        .seed(99)
        .build()
        .unwrap();
    s.insert("k");
    let sb = s.to_bloom().unwrap();
    assert!(sb.contains("k") && sb.seed() == 99);
}

#[test]
fn saturated_counters_never_forget() {
    // Far past capacity: most counters saturate, and removing every inserted copy leaves the
    // keys that were inserted more often still present.
    let mut f = CountingBloomFilter::builder(0, 0.01)
        .num_counters(256)
        .num_hashes(4)
        .build()
        .unwrap();
    for round in 0..20u32 {
        for k in 0..200u32 {
            if k % 2 == 0 || round == 0 {
                f.insert(&k);
            }
        }
    }
    assert!(f.count_saturated() > 100, "{}", f.count_saturated());
    // Remove the single copy of each odd key.
    for k in (1..200u32).step_by(2) {
        assert!(f.remove(&k));
    }
    for k in (0..200u32).step_by(2) {
        assert!(f.contains(&k), "even key {k} lost");
    }
}

// ---------------------------------------------------------------------------------------------
// Statistics

fn assert_close(what: &str, measured: f64, predicted: f64) {
    let ratio = measured / predicted;
    eprintln!("{what}: measured {measured:.5}, predicted {predicted:.5}, ratio {ratio:.3}");
    assert!(
        (0.85..=1.15).contains(&ratio),
        "{what}: measured {measured:.5} vs predicted {predicted:.5} (ratio {ratio:.3})"
    );
}

fn fp_rate(f: &CountingBloomFilter, absent: std::ops::Range<u64>) -> f64 {
    let probes = absent.end - absent.start;
    absent.filter(|i| f.contains(i)).count() as f64 / probes as f64
}

/// The classic rate at 1% (tolerance ±15%, 15 standard deviations of the count at 1M probes),
/// and the same rate again after a million more keys were inserted and removed.
#[test]
fn rate_at_1_percent_and_after_inserting_and_removing_as_many_again() {
    let n = 1_000_000u64;
    let mut f = CountingBloomFilter::new(n, 0.01).unwrap();
    for i in 0..n {
        f.insert(&i);
    }
    let predicted = classic_fp_rate(n, f.num_counters(), f.num_hashes());
    let measured = fp_rate(&f, 3 * n..4 * n);
    assert_close("counting 1%", measured, predicted);
    assert!((0.008..=0.011).contains(&measured), "{measured}");
    assert_close("counting 1% estimate", f.estimated_fp_rate(), measured);
    eprintln!(
        "counting 1%: {:.2} bits per key, {} probes",
        f.num_counters() as f64 * 4.0 / n as f64,
        f.num_hashes()
    );

    let before = f.clone();
    for i in n..2 * n {
        f.insert(&i);
    }
    // Twice the planned load: the classic overfilled rate (about 15%).
    let overfilled = fp_rate(&f, 3 * n..3 * n + 200_000);
    assert_close(
        "counting overfilled",
        overfilled,
        classic_fp_rate(2 * n, f.num_counters(), f.num_hashes()),
    );
    for i in n..2 * n {
        assert!(f.remove(&i));
    }
    // Even at twice the load nothing saturated, so removal undid every insert exactly.
    assert_eq!(f.count_saturated(), 0);
    assert_eq!(f, before);
    assert!((0..n).all(|i| f.contains(&i)));
    assert_close(
        "counting 1% after removes",
        fp_rate(&f, 3 * n..4 * n),
        predicted,
    );
}

#[test]
fn rate_at_a_tenth_of_a_percent_with_string_keys() {
    let n = 1_000_000u64;
    let key = |i: u64| format!("user:{i:x}");
    let mut f = CountingBloomFilter::new(n, 0.001).unwrap();
    for i in 0..n {
        f.insert(&key(i));
    }
    assert!((0..n).all(|i| f.contains(&key(i))));
    let probes = 2_000_000;
    let hits = (n..n + probes).filter(|&i| f.contains(&key(i))).count();
    let measured = hits as f64 / probes as f64;
    assert_close(
        "counting 0.1%",
        measured,
        classic_fp_rate(n, f.num_counters(), f.num_hashes()),
    );
    eprintln!(
        "counting 0.1%: {:.2} bits per key, {} probes",
        f.num_counters() as f64 * 4.0 / n as f64,
        f.num_hashes()
    );
}

// ---------------------------------------------------------------------------------------------
// Golden file

fn golden_key(i: u64) -> String {
    format!("golden:{i}")
}

/// The recipe: 1,100 keys in, the last 100 removed again, so the file holds keys `0..1000`
/// and has been through removal.
fn golden_build() -> CountingBloomFilter {
    let mut f = CountingBloomFilter::builder(1000, 0.01)
        .probes(bloomkit::ClassicProbes::DoubleHashing)
        .build()
        .unwrap();
    for i in 0..1100 {
        f.insert(golden_key(i).as_str());
    }
    for i in 1000..1100 {
        assert!(f.remove(golden_key(i).as_str()));
    }
    f
}

/// `tests/data/counting-v1.bkf` was written once (`BLOOMKIT_WRITE_GOLDEN=1`); it must load,
/// answer as it did, and be what today's build writes. Never rewrite it.
#[test]
fn golden_file_loads_and_answers_as_written() {
    let bin = data_dir().join("counting-v1.bkf");
    let answers_path = data_dir().join("counting-v1.answers");
    if std::env::var_os("BLOOMKIT_WRITE_GOLDEN").is_some() && !bin.exists() {
        let f = golden_build();
        std::fs::write(&bin, f.to_bytes()).unwrap();
        std::fs::write(&answers_path, golden_answers(&f, golden_key)).unwrap();
    }
    let stored = std::fs::read(&bin).unwrap_or_else(|e| panic!("{}: {e}", bin.display()));
    let answers = std::fs::read_to_string(&answers_path).unwrap();

    let loaded = CountingBloomFilter::from_bytes(&stored).unwrap();
    assert_eq!(loaded.kind(), FilterKind::Counting);
    assert_eq!(loaded.len(), 1000);
    assert_eq!(
        golden_answers(&loaded, golden_key),
        answers,
        "answers changed"
    );
    // Same recipe as classic-v1 after the removals: its projection is that file, byte for byte.
    let projected = loaded.to_bloom().unwrap();
    assert_eq!(golden_answers(&projected, golden_key), answers);
    assert_eq!(
        projected.to_bytes(),
        std::fs::read(data_dir().join("classic-v1.bkf")).unwrap()
    );
    assert!(answers.lines().take(1000).all(|l| l.ends_with("\tmaybe")));
    let maybes = answers.lines().filter(|l| l.ends_with("maybe")).count();
    assert!((1000..1200).contains(&maybes), "{maybes}");
    assert!(loaded.to_bytes() == stored, "re-serialization differs");
    // Today's build writes the current key feed (hash algorithm 2); with the header saying
    // so, the rest is the same bytes: the hash of the keys, the layout and the writer are
    // unchanged.
    assert!(
        golden_build().to_bytes() == as_key_feed(&stored),
        "a fresh build differs"
    );
}

// ---------------------------------------------------------------------------------------------
// Hostile input

fn sample_file() -> Vec<u8> {
    let mut f = CountingBloomFilter::new(200, 0.01).unwrap();
    for i in 0..150u32 {
        f.insert(&i);
    }
    for _ in 0..20 {
        f.insert("hot"); // some saturated counters
    }
    f.remove(&3u32);
    f.to_bytes()
}

#[test]
fn every_truncation_is_an_error() {
    common::assert_every_truncation_fails(&sample_file(), CountingBloomFilter::from_bytes, |b| {
        CountingBloomFilter::read_from(b)
    });
}

#[test]
fn every_single_byte_corruption_is_an_error() {
    common::assert_every_byte_flip_fails(&sample_file(), CountingBloomFilter::from_bytes, |b| {
        CountingBloomFilter::read_from(b)
    });
}

#[test]
fn other_kinds_are_refused_both_ways() {
    let file = sample_file();
    assert!(matches!(
        BloomFilter::from_bytes(&file),
        Err(Error::WrongKind { .. })
    ));
    let classic = BloomFilter::new(200, 0.01).unwrap().to_bytes();
    assert!(matches!(
        CountingBloomFilter::from_bytes(&classic),
        Err(Error::WrongKind { .. })
    ));
}

/// A small file whose header claims `num_counters` counters, with the matching payload length.
fn claims(num_counters: u64, payload_len: u64) -> Vec<u8> {
    // Header (36) + parameters: counters at 36..44, hashes at 44..48 (the first probe
    // derivation, stored without a code); payload length 48..56.
    let mut f = CountingBloomFilter::builder(0, 0.01)
        .num_counters(64)
        .num_hashes(3)
        .probes(bloomkit::ClassicProbes::DoubleHashing)
        .build()
        .unwrap()
        .to_bytes();
    f[36..44].copy_from_slice(&num_counters.to_le_bytes());
    f[48..56].copy_from_slice(&payload_len.to_le_bytes());
    reseal(&mut f);
    f
}

#[test]
fn huge_claims_in_small_files_fail_before_allocating() {
    for counters in [1u64 << 62, 1 << 40] {
        let f = claims(counters, counters / 2);
        assert!(f.len() < 100);
        assert!(matches!(
            CountingBloomFilter::from_bytes(&f),
            Err(Error::Truncated)
        ));
        // A stream grows only as data arrives: reserving the claim up front would have been
        // refused as OutOfMemory instead.
        assert!(matches!(
            CountingBloomFilter::read_from(&f[..]),
            Err(Error::Truncated)
        ));
    }
}

#[test]
fn inconsistent_headers_are_corrupt() {
    // Counters not a positive multiple of 64 (payload lengths that fit the file, so the
    // disagreement itself is what fails).
    for (counters, len) in [(0u64, 0u64), (16, 8), (100, 32), (u64::MAX, 32)] {
        let bad = claims(counters, len);
        assert!(
            matches!(
                CountingBloomFilter::from_bytes(&bad),
                Err(Error::Corrupt { .. })
            ),
            "{counters}"
        );
    }
    // A payload length that disagrees with the counters.
    let bad = claims(64, 8);
    assert!(matches!(
        CountingBloomFilter::from_bytes(&bad),
        Err(Error::Corrupt { .. })
    ));
    // Zero hashes, and too many.
    for k in [0u32, 65, u32::MAX] {
        let mut bad = CountingBloomFilter::builder(0, 0.01)
            .num_counters(64)
            .num_hashes(3)
            .build()
            .unwrap()
            .to_bytes();
        bad[44..48].copy_from_slice(&k.to_le_bytes());
        reseal(&mut bad);
        assert!(matches!(
            CountingBloomFilter::from_bytes(&bad),
            Err(Error::Corrupt { .. })
        ));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        let _ = CountingBloomFilter::from_bytes(&bytes);
        let _ = CountingBloomFilter::read_from(&bytes[..]);
    }

    #[test]
    fn arbitrary_bytes_behind_a_valid_header_never_panic(
        tail in prop::collection::vec(any::<u8>(), 0..200),
        cut in 0usize..60,
        resealed in any::<bool>(),
    ) {
        let mut bytes = sample_file()[..cut].to_vec();
        bytes.extend_from_slice(&tail);
        if resealed && bytes.len() >= 8 {
            reseal(&mut bytes);
        }
        let _ = CountingBloomFilter::from_bytes(&bytes);
        let _ = CountingBloomFilter::read_from(&bytes[..]);
    }
}

// ---------------------------------------------------------------------------------------------
// Bad parameters

#[test]
fn bad_parameters_are_errors_not_panics() {
    for p in [0.0, 1.0, 2.0, -0.1, f64::NAN, f64::INFINITY] {
        assert!(matches!(
            CountingBloomFilter::new(1000, p),
            Err(Error::InvalidFpRate { .. })
        ));
    }
    assert!(matches!(
        CountingBloomFilter::new(u64::MAX, 0.01),
        Err(Error::TooLarge { .. })
    ));
    assert!(matches!(
        CountingBloomFilter::new(1 << 60, 0.01),
        Err(Error::TooLarge { .. }) | Err(Error::OutOfMemory { .. })
    ));
    assert!(matches!(
        CountingBloomFilter::builder(0, 0.01)
            .num_counters(0)
            .num_hashes(7)
            .build(),
        Err(Error::InvalidParameter { .. })
    ));
    assert!(matches!(
        CountingBloomFilter::builder(0, 0.01)
            .num_counters(64)
            .num_hashes(0)
            .build(),
        Err(Error::InvalidNumHashes { .. })
    ));
    let msg = CountingBloomFilter::builder(0, 0.01)
        .num_counters(0)
        .num_hashes(7)
        .build()
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("num_counters") && msg.contains("at least 1"),
        "{msg}"
    );
    // Zero items is one item.
    let f = CountingBloomFilter::new(0, 0.01).unwrap();
    assert_eq!(f.num_counters(), 64);
}
