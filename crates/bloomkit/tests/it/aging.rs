//! `AgingBloomFilter` through its public API: an oracle that tracks the generation each key
//! was last inserted in, expiry after G rotations, the measured rate with every generation
//! full, the golden file, hostile input and bad parameters.

use crate::common;
use common::{as_key_feed, data_dir, golden_answers, reseal};

use std::collections::HashMap;

use bloomkit::sizing::blocked_fp_rate;
use bloomkit::{AgingBloomFilter, BlockedBloomFilter, Error, Filter, FilterKind};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    Insert(u16),
    CheckAndInsert(u16),
    Rotate,
}

const POOL: u16 = 300;

fn ops() -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(
        prop_oneof![
            6 => (0..POOL).prop_map(Op::Insert),
            3 => (0..POOL).prop_map(Op::CheckAndInsert),
            1 => Just(Op::Rotate),
        ],
        0..600,
    )
}

/// Which rotation each key was last inserted after; a key is in the window while fewer than
/// G rotations have happened since.
struct Oracle {
    last_insert: HashMap<u16, u64>,
    rotations: u64,
    generations: u64,
}

impl Oracle {
    /// How many rotations ago `k` was last inserted, if it is still in the window.
    fn age(&self, k: u16) -> Option<u64> {
        let at = *self.last_insert.get(&k)?;
        let age = self.rotations - at;
        (age < self.generations).then_some(age)
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn keys_stay_for_exactly_their_window(
        n in 0u64..400,
        p in prop::sample::select(vec![0.5, 0.1, 0.01, 1e-6]),
        generations in 1u32..=5,
        ops in ops(),
    ) {
        let mut f = AgingBloomFilter::builder(n, p).generations(generations).build().unwrap();
        let mut oracle = Oracle {
            last_insert: HashMap::new(),
            rotations: 0,
            generations: generations as u64,
        };
        for op in &ops {
            match *op {
                Op::Insert(k) => {
                    f.insert(&k);
                    oracle.last_insert.insert(k, oracle.rotations);
                }
                Op::CheckAndInsert(k) => {
                    let seen = f.check_and_insert(&k);
                    // Seen within the window: must say so (no false negatives).
                    prop_assert!(seen || oracle.age(k).is_none(), "{k} was in the window");
                    oracle.last_insert.insert(k, oracle.rotations);
                }
                Op::Rotate => {
                    f.rotate();
                    oracle.rotations += 1;
                }
            }
        }
        let mut live = 0;
        for k in 0..POOL {
            if let Some(age) = oracle.age(k) {
                live += 1;
                prop_assert!(f.contains(&k), "{k}, {age} rotations old, forgotten");
                prop_assert!(f.contains_hash(bloomkit::hash(&k)));
                // And it is in the generation of that age.
                prop_assert!(f.generation(age as usize).unwrap().contains(&k));
            }
        }
        if live == 0 {
            // Every generation has been recycled since its last insert: all empty, so
            // nothing at all is present, not even a false positive.
            prop_assert!((0..2 * POOL).all(|k| !f.contains(&k)));
            prop_assert_eq!(f.len(), 0);
        }
        let per_generation: u64 = (0..generations as usize)
            .map(|age| f.generation(age).unwrap().len())
            .sum();
        prop_assert_eq!(f.len(), per_generation);

        // Both round trips keep the filter, and it keeps aging the same way afterwards.
        let g = AgingBloomFilter::from_bytes(&f.to_bytes()).unwrap();
        let mut streamed = Vec::new();
        f.write_to(&mut streamed).unwrap();
        let h = AgingBloomFilter::read_from(&streamed[..]).unwrap();
        for mut loaded in [g, h] {
            prop_assert_eq!(&loaded, &f);
            prop_assert_eq!(loaded.len(), f.len());
            for k in 0..POOL {
                if oracle.age(k).is_some() {
                    prop_assert!(loaded.contains(&k));
                }
            }
            let mut original = f.clone();
            loaded.rotate();
            original.rotate();
            prop_assert_eq!(&loaded, &original);
            prop_assert_eq!(loaded.len(), original.len());
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Expiry and rates

fn assert_close(what: &str, measured: f64, predicted: f64) {
    let ratio = measured / predicted;
    eprintln!("{what}: measured {measured:.5}, predicted {predicted:.5}, ratio {ratio:.3}");
    assert!(
        (0.85..=1.15).contains(&ratio),
        "{what}: measured {measured:.5} vs predicted {predicted:.5} (ratio {ratio:.3})"
    );
}

/// The predicted rate of a filter whose generations hold `loads` keys: a query is a false
/// positive if any generation says "maybe".
fn predicted_rate(f: &AgingBloomFilter, loads: &[u64]) -> f64 {
    let all_miss: f64 = loads
        .iter()
        .map(|&n| 1.0 - blocked_fp_rate(n, f.num_bits_per_generation(), f.num_hashes()))
        .product();
    1.0 - all_miss
}

fn present_fraction(f: &AgingBloomFilter, keys: std::ops::Range<u64>) -> f64 {
    let len = keys.end - keys.start;
    keys.filter(|i| f.contains(i)).count() as f64 / len as f64
}

#[test]
fn keys_expire_after_exactly_g_rotations_into_an_empty_filter() {
    let g = 3;
    let n = 100_000u64;
    let mut f = AgingBloomFilter::builder(n, 0.01)
        .generations(g)
        .build()
        .unwrap();
    for i in 0..n {
        f.insert(&i);
    }
    for _ in 0..g - 1 {
        f.rotate();
        assert_eq!(present_fraction(&f, 0..n), 1.0);
    }
    f.rotate();
    // Every generation is fresh: not one key, not even a false positive.
    assert_eq!(present_fraction(&f, 0..n), 0.0);
    assert_eq!(f.len(), 0);
    assert_eq!(
        f,
        AgingBloomFilter::builder(n, 0.01)
            .generations(g)
            .build()
            .unwrap()
    );
}

#[test]
fn expired_keys_answer_at_the_false_positive_rate_of_the_full_generations() {
    let g = 3;
    let n = 100_000u64;
    let mut f = AgingBloomFilter::builder(n, 0.01)
        .generations(g)
        .build()
        .unwrap();
    // The old keys, then a full generation of other keys after each rotation.
    for i in 0..n {
        f.insert(&i);
    }
    let mut next = n;
    for _ in 0..g - 1 {
        f.rotate();
        for i in next..next + n {
            f.insert(&i);
        }
        next += n;
    }
    assert_eq!(present_fraction(&f, 0..n), 1.0);
    f.rotate();
    for i in next..next + n {
        f.insert(&i);
    }
    next += n;
    // The old keys are gone: what is left of them is exactly the rate of absent keys.
    let expired = present_fraction(&f, 0..n);
    let predicted = predicted_rate(&f, &[n, n, n]);
    assert_close("aging expired keys", expired, predicted);
    assert!(present_fraction(&f, n..next) == 1.0);
}

/// With every generation holding its planned keys, the filter meets its target rate: at most
/// p·1.1 and within ±15% of the prediction (15 standard deviations at 1%, 6.7 at 0.1%).
#[test]
fn rate_with_all_generations_full_meets_the_target() {
    for (g, n, p, probes) in [
        (2u32, 500_000u64, 0.01, 1_000_000u64),
        (4, 250_000, 0.001, 2_000_000),
        (1, 500_000, 0.01, 1_000_000),
    ] {
        let mut f = AgingBloomFilter::builder(n, p)
            .generations(g)
            .build()
            .unwrap();
        let mut next = 0;
        for generation in 0..g {
            if generation > 0 {
                f.rotate();
            }
            for i in next..next + n {
                f.insert(&i);
            }
            next += n;
        }
        assert_eq!(present_fraction(&f, 0..next), 1.0);
        let measured = present_fraction(&f, next..next + probes);
        let loads = vec![n; g as usize];
        let predicted = predicted_rate(&f, &loads);
        assert!(predicted <= p, "{predicted}");
        assert_close(&format!("aging G={g} p={p}"), measured, predicted);
        assert!(measured <= p * 1.1, "G={g}: {measured} > {p}·1.1");
        assert_close(
            &format!("aging G={g} p={p} estimate"),
            f.estimated_fp_rate(),
            measured,
        );
        eprintln!(
            "aging G={g} p={p}: {:.2} bits per key per generation, {} probes",
            f.num_bits_per_generation() as f64 / n as f64,
            f.num_hashes(),
        );
    }
}

#[test]
fn check_and_insert_admits_on_the_second_request_within_the_window() {
    let mut f = AgingBloomFilter::new(10_000, 0.001).unwrap();
    let mut admitted = 0;
    // Objects 0..5000 are requested once, objects 5000..10000 twice, one rotation apart.
    for i in 0..10_000u64 {
        admitted += f.check_and_insert(&i) as u32;
    }
    f.rotate();
    for i in 5_000..10_000u64 {
        assert!(f.check_and_insert(&i), "second request of {i}");
    }
    // The first pass admitted only false positives (a handful at 0.1%).
    assert!(admitted < 30, "{admitted}");
    // After a rotation the refresh is in the newest generation: still there after another.
    f.rotate();
    assert!((5_000..10_000u64).all(|i| f.contains(&i)));
    f.rotate();
    f.rotate();
    assert!(!f.check_and_insert(&7_000u64));
}

#[test]
fn one_generation_is_a_filter_that_clears_on_rotate() {
    let mut f = AgingBloomFilter::builder(1000, 0.01)
        .generations(1)
        .build()
        .unwrap();
    assert_eq!(
        f.generation(0).unwrap(),
        &BlockedBloomFilter::new(1000, 0.01).unwrap()
    );
    f.insert("a");
    assert!(f.contains("a"));
    f.rotate();
    assert!(!f.contains("a"));
}

// ---------------------------------------------------------------------------------------------
// Golden file

fn golden_key(i: u64) -> String {
    format!("golden:{i}")
}

/// The recipe: three generations, keys `0..400`, `400..700` and `700..1000` inserted one
/// rotation apart, so each generation holds different keys.
fn golden_build() -> AgingBloomFilter {
    let mut f = AgingBloomFilter::builder(400, 0.01)
        .generations(3)
        .probes(bloomkit::BlockedProbes::OneSeed)
        .build()
        .unwrap();
    for (from, to) in [(0, 400), (400, 700), (700, 1000)] {
        if from > 0 {
            f.rotate();
        }
        for i in from..to {
            f.insert(golden_key(i).as_str());
        }
    }
    f
}

/// `tests/data/aging-v1.bkf` was written once (`BLOOMKIT_WRITE_GOLDEN=1`); it must load,
/// answer as it did, and be what today's build writes. Never rewrite it.
#[test]
fn golden_file_loads_and_answers_as_written() {
    let bin = data_dir().join("aging-v1.bkf");
    let answers_path = data_dir().join("aging-v1.answers");
    if std::env::var_os("BLOOMKIT_WRITE_GOLDEN").is_some() && !bin.exists() {
        let f = golden_build();
        std::fs::write(&bin, f.to_bytes()).unwrap();
        std::fs::write(&answers_path, golden_answers(&f, golden_key)).unwrap();
    }
    let stored = std::fs::read(&bin).unwrap_or_else(|e| panic!("{}: {e}", bin.display()));
    let answers = std::fs::read_to_string(&answers_path).unwrap();

    let mut loaded = AgingBloomFilter::from_bytes(&stored).unwrap();
    assert_eq!(loaded.kind(), FilterKind::Aging);
    assert_eq!(loaded.num_generations(), 3);
    assert_eq!(
        golden_answers(&loaded, golden_key),
        answers,
        "answers changed"
    );
    assert!(answers.lines().take(1000).all(|l| l.ends_with("\tmaybe")));
    let maybes = answers.lines().filter(|l| l.ends_with("maybe")).count();
    assert!((1000..1200).contains(&maybes), "{maybes}");
    // Newest first: the newest generation holds the last keys.
    assert!(loaded
        .generation(0)
        .unwrap()
        .contains(golden_key(999).as_str()));
    assert!(loaded
        .generation(2)
        .unwrap()
        .contains(golden_key(0).as_str()));
    assert!(loaded.to_bytes() == stored, "re-serialization differs");
    // Today's build writes the current key feed (hash algorithm 2); with the header saying
    // so, the rest is the same bytes: the hash of the keys, the layout and the writer are
    // unchanged.
    assert!(
        golden_build().to_bytes() == as_key_feed(&stored),
        "a fresh build differs"
    );
    // One more rotation forgets the oldest generation's keys.
    loaded.rotate();
    let kept = (0..400)
        .filter(|&i| loaded.contains(golden_key(i).as_str()))
        .count();
    assert!(kept < 20, "{kept}");
}

// ---------------------------------------------------------------------------------------------
// Hostile input

fn sample_file() -> Vec<u8> {
    let mut f = AgingBloomFilter::builder(60, 0.01)
        .generations(3)
        .build()
        .unwrap();
    for i in 0..150u32 {
        if i % 50 == 0 && i > 0 {
            f.rotate();
        }
        f.insert(&i);
    }
    f.to_bytes()
}

// Offsets (docs/FORMAT.md): item count 24..32; parameters 36..56 (generations u32 36..40,
// bits per generation u64 40..48, hashes u32 48..52, probe derivation u32 52..56); payload
// length 56..64; payload from 64: G count words, then the lines.
const ITEM_COUNT: usize = 24;
const GENERATIONS: usize = 36;
const BITS: usize = 40;
const HASHES: usize = 48;
const DERIVATION: usize = 52;
const PAYLOAD_LEN: usize = 56;
const PAYLOAD: usize = 64;

fn put<const N: usize>(bytes: &mut [u8], at: usize, value: [u8; N]) {
    bytes[at..at + N].copy_from_slice(&value);
}

#[test]
fn every_truncation_is_an_error() {
    common::assert_every_truncation_fails(&sample_file(), AgingBloomFilter::from_bytes, |b| {
        AgingBloomFilter::read_from(b)
    });
}

#[test]
fn every_single_byte_corruption_is_an_error() {
    common::assert_every_byte_flip_fails(&sample_file(), AgingBloomFilter::from_bytes, |b| {
        AgingBloomFilter::read_from(b)
    });
}

#[test]
fn other_kinds_are_refused_both_ways() {
    let file = sample_file();
    assert!(matches!(
        BlockedBloomFilter::from_bytes(&file),
        Err(Error::WrongKind { .. })
    ));
    let blocked = BlockedBloomFilter::new(60, 0.01).unwrap().to_bytes();
    assert!(matches!(
        AgingBloomFilter::from_bytes(&blocked),
        Err(Error::WrongKind { .. })
    ));
}

#[test]
fn huge_claims_in_small_files_fail_before_allocating() {
    for (generations, bits) in [(64u32, 1u64 << 40), (2, 1 << 50), (64, 1 << 57)] {
        let mut f = AgingBloomFilter::builder(0, 0.01)
            .num_bits_per_generation(512)
            .num_hashes(3)
            .generations(1)
            .build()
            .unwrap()
            .to_bytes();
        put(&mut f, GENERATIONS, generations.to_le_bytes());
        put(&mut f, BITS, bits.to_le_bytes());
        let len = (bits / 64 + 1) * generations as u64 * 8;
        put(&mut f, PAYLOAD_LEN, len.to_le_bytes());
        reseal(&mut f);
        assert!(f.len() < 200);
        assert!(matches!(
            AgingBloomFilter::from_bytes(&f),
            Err(Error::Truncated)
        ));
        // A stream grows only as data arrives: reserving the claim up front would have been
        // refused as OutOfMemory instead.
        assert!(matches!(
            AgingBloomFilter::read_from(&f[..]),
            Err(Error::Truncated)
        ));
    }
}

fn assert_corrupt(bytes: &[u8], what: &str) {
    match AgingBloomFilter::from_bytes(bytes) {
        Err(Error::Corrupt { reason }) => eprintln!("{what}: {reason}"),
        other => panic!("{what}: {other:?}"),
    }
    assert!(AgingBloomFilter::read_from(bytes).is_err(), "{what}");
}

#[test]
fn inconsistent_headers_and_payloads_are_corrupt() {
    let good = sample_file();
    // Generations out of range (the payload length then disagrees too, but the count is
    // checked first).
    for g in [0u32, 65, u32::MAX] {
        let mut bad = good.clone();
        put(&mut bad, GENERATIONS, g.to_le_bytes());
        reseal(&mut bad);
        assert_corrupt(&bad, &format!("{g} generations"));
    }
    // Bits not a positive multiple of 512, and a size that overflows.
    for bits in [0u64, 64, 1000, u64::MAX - 511] {
        let mut bad = good.clone();
        put(&mut bad, BITS, bits.to_le_bytes());
        reseal(&mut bad);
        assert_corrupt(&bad, &format!("{bits} bits"));
    }
    for k in [0u32, 65] {
        let mut bad = good.clone();
        put(&mut bad, HASHES, k.to_le_bytes());
        reseal(&mut bad);
        assert_corrupt(&bad, &format!("{k} hashes"));
    }
    // A probe derivation this build does not know, or the first written with the field
    // (bloomkit writes it without): refused, naming the code.
    assert_eq!(good[DERIVATION..DERIVATION + 4], 2u32.to_le_bytes());
    for code in [0u32, 1, 3, u32::MAX] {
        let mut bad = good.clone();
        put(&mut bad, DERIVATION, code.to_le_bytes());
        reseal(&mut bad);
        match AgingBloomFilter::from_bytes(&bad) {
            Err(Error::Corrupt { reason }) => {
                assert!(
                    reason.contains(&format!("probe derivation {code} ")),
                    "{reason}"
                )
            }
            other => panic!("derivation {code}: {other:?}"),
        }
    }
    // A payload length that disagrees with the parameters (shorter, so the bytes are there).
    let mut bad = good.clone();
    put(&mut bad, PAYLOAD_LEN, 64u64.to_le_bytes());
    reseal(&mut bad);
    assert_corrupt(&bad, "payload length");
    // A generation that claims more items than it has bits set, with the header's total
    // agreeing.
    let mut bad = good.clone();
    let claimed = 1_000_000u64;
    let others: u64 = (1..3)
        .map(|g| {
            u64::from_le_bytes(
                good[PAYLOAD + 8 * g..PAYLOAD + 8 * g + 8]
                    .try_into()
                    .unwrap(),
            )
        })
        .sum();
    put(&mut bad, PAYLOAD, claimed.to_le_bytes());
    put(&mut bad, ITEM_COUNT, (claimed + others).to_le_bytes());
    reseal(&mut bad);
    assert_corrupt(&bad, "generation count above its bits");
    // A header total that is not the sum of the generations'.
    let mut bad = good.clone();
    let total = u64::from_le_bytes(good[ITEM_COUNT..ITEM_COUNT + 8].try_into().unwrap());
    put(&mut bad, ITEM_COUNT, (total + 1).to_le_bytes());
    reseal(&mut bad);
    assert_corrupt(&bad, "header total");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        let _ = AgingBloomFilter::from_bytes(&bytes);
        let _ = AgingBloomFilter::read_from(&bytes[..]);
    }

    #[test]
    fn arbitrary_bytes_behind_a_valid_header_never_panic(
        tail in prop::collection::vec(any::<u8>(), 0..300),
        cut in 0usize..80,
        resealed in any::<bool>(),
    ) {
        let mut bytes = sample_file()[..cut].to_vec();
        bytes.extend_from_slice(&tail);
        if resealed && bytes.len() >= 8 {
            reseal(&mut bytes);
        }
        let _ = AgingBloomFilter::from_bytes(&bytes);
        let _ = AgingBloomFilter::read_from(&bytes[..]);
    }
}

// ---------------------------------------------------------------------------------------------
// Bad parameters

#[test]
fn bad_parameters_are_errors_not_panics() {
    for g in [0u32, 65, 1000, u32::MAX] {
        let err = AgingBloomFilter::builder(1000, 0.01)
            .generations(g)
            .build()
            .unwrap_err();
        assert!(matches!(
            err,
            Error::InvalidParameter {
                name: "generations",
                ..
            }
        ));
        assert!(err.to_string().contains("1 to 64"), "{err}");
    }
    for p in [0.0, 1.0, 2.0, -0.1, f64::NAN, f64::NEG_INFINITY] {
        assert!(matches!(
            AgingBloomFilter::new(1000, p),
            Err(Error::InvalidFpRate { .. })
        ));
        assert!(AgingBloomFilter::generation_fp_rate(p, 2).is_err());
    }
    assert!(matches!(
        AgingBloomFilter::new(u64::MAX, 0.01),
        Err(Error::TooLarge { .. })
    ));
    assert!(matches!(
        AgingBloomFilter::builder(1 << 58, 0.01)
            .generations(64)
            .build(),
        Err(Error::TooLarge { .. }) | Err(Error::OutOfMemory { .. })
    ));
    assert!(matches!(
        AgingBloomFilter::builder(0, 0.01)
            .num_bits_per_generation(0)
            .num_hashes(6)
            .generations(2)
            .build(),
        Err(Error::ZeroBits)
    ));
    assert!(matches!(
        AgingBloomFilter::builder(0, 0.01)
            .num_bits_per_generation(512)
            .num_hashes(65)
            .generations(2)
            .build(),
        Err(Error::InvalidNumHashes { .. })
    ));
    // Zero items per generation is one.
    assert_eq!(
        AgingBloomFilter::new(0, 0.01).unwrap(),
        AgingBloomFilter::new(1, 0.01).unwrap()
    );
}
