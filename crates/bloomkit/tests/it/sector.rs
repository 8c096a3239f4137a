//! `SectorBloomFilter` through its public API: against a `HashSet` oracle, the promised
//! false-positive rate and space, the golden file, and hostile input.

use crate::common;
use common::{golden_answers, reseal};

use std::collections::HashSet;

use bloomkit::sizing::{self, LINE_BITS};
use bloomkit::{AnyFilter, BloomFilter, Error, FilterKind, SectorBloomFilter};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Every inserted key answers yes, the count of changing inserts never exceeds the
    /// distinct keys, batched and one-by-one inserts agree, and the filter round-trips
    /// through both loaders and `AnyFilter`.
    #[test]
    fn no_false_negatives_and_round_trips(
        keys in prop::collection::vec(any::<u64>(), 0..2000),
        rate in prop::sample::select(vec![0.2, 0.01, 0.001, 1e-5]),
    ) {
        let mut f = SectorBloomFilter::new(keys.len() as u64, rate).unwrap();
        let mut batched = f.clone();
        let oracle: HashSet<u64> = keys.iter().copied().collect();
        for k in &keys {
            f.insert(k);
        }
        batched.insert_many(&keys);
        prop_assert_eq!(&batched, &f);
        prop_assert!(oracle.iter().all(|k| f.contains(k)));
        prop_assert!(f.len() <= oracle.len() as u64);
        let mut answers = Vec::new();
        f.contains_many(&keys, &mut answers);
        prop_assert!(answers.iter().all(|&a| a));
        let bytes = f.to_bytes();
        prop_assert_eq!(bytes.len(), f.encoded_len());
        let back = SectorBloomFilter::from_bytes(&bytes).unwrap();
        prop_assert_eq!(&back, &f);
        prop_assert_eq!(back.len(), f.len());
        prop_assert_eq!(&SectorBloomFilter::read_from(&bytes[..]).unwrap(), &f);
        let any = AnyFilter::from_bytes(&bytes).unwrap();
        prop_assert_eq!(any.kind(), FilterKind::Sector);
        prop_assert_eq!(any, AnyFilter::from(f));
    }

    /// A union holds both filters' keys, an intersection at least the common ones.
    #[test]
    fn union_and_intersection_keep_their_keys(
        a in prop::collection::vec(0u64..5000, 0..500),
        b in prop::collection::vec(0u64..5000, 0..500),
    ) {
        let mut fa = SectorBloomFilter::new(1000, 0.01).unwrap();
        let mut fb = fa.clone();
        fa.insert_many(&a);
        fb.insert_many(&b);
        let mut union = fa.clone();
        union.union(&fb).unwrap();
        prop_assert!(a.iter().chain(&b).all(|k| union.contains(k)));
        let mut both = fa.clone();
        both.intersect(&fb).unwrap();
        let sb: HashSet<u64> = b.iter().copied().collect();
        prop_assert!(a.iter().filter(|k| sb.contains(k)).all(|k| both.contains(k)));
    }
}

#[test]
fn differently_shaped_filters_do_not_merge() {
    let mut a = SectorBloomFilter::new(1000, 0.01).unwrap();
    let b = SectorBloomFilter::builder(1000, 0.01)
        .seed(1)
        .build()
        .unwrap();
    let c = SectorBloomFilter::builder(1000, 0.01)
        .num_hashes(16)
        .build()
        .unwrap();
    a.insert("x");
    for other in [b, c] {
        let before = a.clone();
        assert!(matches!(a.union(&other), Err(Error::Incompatible { .. })));
        assert!(matches!(
            a.intersect(&other),
            Err(Error::Incompatible { .. })
        ));
        assert_eq!(a, before);
    }
}

// ---- the promised rate and space ----

/// Fills `f` with `0..n`, and returns the fraction of `probes` absent keys it answers yes to.
fn measured_rate(f: &mut SectorBloomFilter, n: u64, probes: u64) -> f64 {
    for k in 0..n {
        f.insert(&k);
    }
    assert!((0..n).all(|k| f.contains(&k)), "a false negative");
    let hits = (n..n + probes).filter(|k| f.contains(k)).count();
    hits as f64 / probes as f64
}

/// At 1%, one bit per word: at most 1.1× a classic filter's bits (fastbloom's sizing), a
/// measured rate at most 1.1%, and within 5% of the model, with 1,000,000 keys and 2,000,000
/// absent ones (some 20,000 false positives are expected, so 5% is fourteen standard
/// deviations).
#[test]
fn one_million_keys_at_one_percent() {
    let n = 1_000_000;
    let mut f = SectorBloomFilter::new(n, 0.01).unwrap();
    assert_eq!(f.num_hashes(), 8);
    let classic = sizing::optimal_num_bits(n, 0.01).unwrap();
    let space = f.num_bits() as f64 / classic as f64;
    let measured = measured_rate(&mut f, n, 2_000_000);
    let predicted = sizing::sector_fp_rate(n, f.num_bits(), f.bits_per_word());
    eprintln!(
        "sector, 1M keys at 1%: {:.3} bits/key ({space:.3}× classic), measured {measured:.5}, \
         predicted {predicted:.5}",
        f.num_bits() as f64 / n as f64
    );
    assert!(space <= 1.1, "{space}");
    assert!(measured <= 0.011, "{measured}");
    assert!(
        (measured / predicted - 1.0).abs() < 0.05,
        "measured {measured} vs predicted {predicted}"
    );
    let estimated = f.estimated_fp_rate();
    assert!((estimated / predicted - 1.0).abs() < 0.05, "{estimated}");
    let count = f.estimated_count();
    assert!(count.abs_diff(n) < n / 50, "{count}");
}

/// Lower rates plan more bits per word, and still meet the model.
#[test]
fn lower_rates_meet_the_model() {
    for (rate, n, probes) in [
        (0.001, 200_000u64, 4_000_000u64),
        (0.0001, 200_000, 10_000_000),
    ] {
        let mut f = SectorBloomFilter::new(n, rate).unwrap();
        let measured = measured_rate(&mut f, n, probes);
        let predicted = sizing::sector_fp_rate(n, f.num_bits(), f.bits_per_word());
        eprintln!(
            "sector at {rate}: {} per word, {:.2} bits/key, measured {measured:.6}, predicted \
             {predicted:.6}",
            f.bits_per_word(),
            f.num_bits() as f64 / n as f64
        );
        assert!(predicted <= rate);
        // At least 800 false positives are expected: 15% is over four standard deviations.
        assert!(
            (measured / predicted - 1.0).abs() < 0.15,
            "{rate}: measured {measured} vs predicted {predicted}"
        );
    }
}

// ---- the golden file ----
// To write it (once, for a new format only): BLOOMKIT_WRITE_GOLDEN=1 cargo test -p bloomkit --test it sector::

fn golden_key(i: u64) -> String {
    format!("golden:{i}")
}

/// The fixture's recipe: 10,240 bits, 8 probes (one per word), keys `golden:0..1000`.
fn golden_build() -> SectorBloomFilter {
    let mut f = SectorBloomFilter::builder(0, 0.01)
        .num_bits(10_240)
        .num_hashes(8)
        .build()
        .unwrap();
    for i in 0..1000 {
        f.insert(golden_key(i).as_str());
    }
    f
}

#[test]
fn golden_file_loads_and_answers_as_written() {
    let bin_path = common::data_dir().join("sector-v1.bkf");
    let answers_path = common::data_dir().join("sector-v1.answers");
    if std::env::var_os("BLOOMKIT_WRITE_GOLDEN").is_some() && !bin_path.exists() {
        let f = golden_build();
        std::fs::write(&bin_path, f.to_bytes()).unwrap();
        std::fs::write(&answers_path, golden_answers(&f, golden_key)).unwrap();
    }
    let stored = std::fs::read(&bin_path).unwrap();
    let answers = std::fs::read_to_string(&answers_path).unwrap();
    let loaded = SectorBloomFilter::from_bytes(&stored).unwrap();
    assert_eq!(golden_answers(&loaded, golden_key), answers);
    assert_eq!(
        AnyFilter::from_bytes(&stored).unwrap(),
        AnyFilter::from(loaded.clone())
    );
    assert!(answers.lines().take(1000).all(|l| l.ends_with("\tmaybe")));
    let maybes = answers.lines().filter(|l| l.ends_with("maybe")).count();
    assert!((1000..1200).contains(&maybes), "{maybes}");
    assert!(loaded.to_bytes() == stored, "re-serialization differs");
    assert!(golden_build().to_bytes() == stored, "a fresh build differs");
}

// ---- hostile input ----

/// Field offsets of a sector file (docs/FORMAT.md): the header's, then the parameters'.
const KIND: usize = 10;
const NUM_BITS: usize = 36;
const NUM_HASHES: usize = 44;

fn small_file() -> Vec<u8> {
    let mut f = SectorBloomFilter::builder(0, 0.01)
        .num_bits(1024)
        .num_hashes(16)
        .build()
        .unwrap();
    f.insert_many(&[1u64, 2, 3]);
    f.to_bytes()
}

#[test]
fn layout_is_as_documented() {
    let file = small_file();
    assert_eq!(u16::from_le_bytes([file[KIND], file[KIND + 1]]), 9);
    assert_eq!(file[NUM_BITS..NUM_BITS + 8], 1024u64.to_le_bytes());
    assert_eq!(file[NUM_HASHES..NUM_HASHES + 4], 16u32.to_le_bytes());
    assert_eq!(file.len(), 44 + 12 + 1024 / 8 + 8);
    // The payload's words are the lines: key 1's bits are two in each word of its line.
    let f = SectorBloomFilter::from_bytes(&file).unwrap();
    let mut one = SectorBloomFilter::builder(0, 0.01)
        .num_bits(1024)
        .num_hashes(16)
        .build()
        .unwrap();
    one.insert(&1u64);
    let words = |b: &[u8]| -> Vec<u64> {
        b[56..56 + 128]
            .chunks(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
            .collect()
    };
    let key = words(&one.to_bytes());
    let line = (0..2).find(|l| key[l * 8] != 0).unwrap();
    for w in 0..8 {
        assert!(
            (1..=2).contains(&key[line * 8 + w].count_ones()),
            "word {w}"
        );
    }
    assert!(words(&file)
        .iter()
        .zip(&key)
        .all(|(all, one)| all & one == *one));
    assert_eq!(f.num_bits() / LINE_BITS, 2);
}

#[test]
fn every_truncation_is_an_error() {
    common::assert_every_truncation_fails(&small_file(), SectorBloomFilter::from_bytes, |b| {
        SectorBloomFilter::read_from(b)
    });
}

#[test]
fn every_single_byte_corruption_is_an_error() {
    common::assert_every_byte_flip_fails(&small_file(), SectorBloomFilter::from_bytes, |b| {
        SectorBloomFilter::read_from(b)
    });
}

#[test]
fn inconsistent_headers_are_corrupt() {
    let file = small_file();
    let corrupt = |at: usize, value: &[u8], reason: &str| {
        let mut bad = file.clone();
        bad[at..at + value.len()].copy_from_slice(value);
        reseal(&mut bad);
        let err = SectorBloomFilter::from_bytes(&bad).unwrap_err();
        assert!(matches!(err, Error::Corrupt { .. }), "{reason}: {err}");
        assert!(err.to_string().contains(reason), "{reason}: {err}");
        assert!(AnyFilter::from_bytes(&bad).is_err());
    };
    for k in [0u32, 6, 7, 12, 65, u32::MAX] {
        let reason = if k == 0 || k > 64 {
            "out of range"
        } else {
            "not a multiple of 8"
        };
        corrupt(NUM_HASHES, &k.to_le_bytes(), reason);
    }
    corrupt(
        NUM_BITS,
        &1000u64.to_le_bytes(),
        "not a positive multiple of 512",
    );
    // A claim of far more bits than the file holds fails on the length, before allocating.
    let mut huge = file.clone();
    huge[NUM_BITS..NUM_BITS + 8].copy_from_slice(&(1u64 << 60).to_le_bytes());
    reseal(&mut huge);
    assert!(SectorBloomFilter::from_bytes(&huge).is_err());
}

#[test]
fn other_kinds_are_refused() {
    let classic = BloomFilter::new(100, 0.01).unwrap().to_bytes();
    assert!(matches!(
        SectorBloomFilter::from_bytes(&classic),
        Err(Error::WrongKind {
            expected: FilterKind::Sector,
            found: 1
        })
    ));
    let blocked = bloomkit::BlockedBloomFilter::new(100, 0.01)
        .unwrap()
        .to_bytes();
    assert!(matches!(
        SectorBloomFilter::from_bytes(&blocked),
        Err(Error::WrongKind { found: 2, .. })
    ));
    assert!(matches!(
        bloomkit::BlockedBloomFilter::from_bytes(&small_file()),
        Err(Error::WrongKind { found: 9, .. })
    ));
}
