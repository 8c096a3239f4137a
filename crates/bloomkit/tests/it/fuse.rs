//! BinaryFuseFilter through its public API: no false negatives against a `HashSet` oracle, the
//! promised false-positive rate and space, golden files, hostile input and bad parameters.

use crate::common;
use common::{golden_answers, reseal};

use std::collections::HashSet;
use std::path::PathBuf;

use bloomkit::{AnyFilter, BinaryFuseFilter, BloomFilter, Error, Filter, FilterExt, FilterKind};
use proptest::prelude::*;

// ---------------------------------------------------------------------------------------------
// Property tests: whatever the keys, no key built in is ever forgotten.

/// Key sets of mixed shapes (empty, one key, long, non-ASCII), with some keys repeated.
fn keys() -> impl Strategy<Value = Vec<String>> {
    (
        prop::collection::vec(".{0,100}", 0..400),
        any::<prop::sample::Index>(),
    )
        .prop_map(|(mut keys, cut)| {
            // Repeat a prefix: duplicates must be left out, not fail the build.
            let repeat = if keys.is_empty() {
                0
            } else {
                cut.index(keys.len())
            };
            keys.extend_from_within(..repeat);
            keys
        })
}

fn bits() -> impl Strategy<Value = u32> {
    prop::sample::select(vec![8u32, 16])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn no_false_negatives_and_round_trips(keys in keys(), bits in bits()) {
        let f = BinaryFuseFilter::builder(0.01).fingerprint_bits(bits).build(&keys).unwrap();
        let oracle: HashSet<&String> = keys.iter().collect();
        prop_assert_eq!(f.len(), keys.len() as u64);
        prop_assert_eq!(f.fingerprint_bits(), bits);
        for k in &oracle {
            prop_assert!(f.contains(*k));
            prop_assert!(f.contains(k.as_str()));
            prop_assert!(f.contains_hash(bloomkit::hash_bytes(k.as_bytes())));
        }
        if keys.is_empty() {
            prop_assert!(!f.contains("") && !f.contains("x"));
        }

        let g = BinaryFuseFilter::from_bytes(&f.to_bytes()).unwrap();
        prop_assert_eq!(&g, &f);
        let mut streamed = Vec::new();
        f.write_to(&mut streamed).unwrap();
        prop_assert_eq!(&streamed, &f.to_bytes());
        let h = BinaryFuseFilter::read_from(&streamed[..]).unwrap();
        prop_assert_eq!(&h, &f);
        let any = AnyFilter::from_bytes(&streamed).unwrap();
        prop_assert_eq!(any.kind(), FilterKind::Fuse);
        for k in &oracle {
            prop_assert!(g.contains(*k) && h.contains(*k) && any.contains(*k));
        }
    }

    /// Hashes of any shape, with many repeats: every one is found.
    #[test]
    fn arbitrary_hashes_with_repeats(
        distinct in prop::collection::vec(any::<u64>(), 0..2000),
        repeats in prop::collection::vec(any::<prop::sample::Index>(), 0..500),
        bits in bits(),
    ) {
        let mut hashes = distinct.clone();
        if !distinct.is_empty() {
            hashes.extend(repeats.iter().map(|i| distinct[i.index(distinct.len())]));
        }
        let f = BinaryFuseFilter::builder(0.01).fingerprint_bits(bits).build_from_hashes(&hashes).unwrap();
        prop_assert_eq!(f.len(), hashes.len() as u64);
        for &h in &hashes {
            prop_assert!(f.contains_hash(h));
        }
    }

    #[test]
    fn hashes_and_keys_build_the_same_filter(
        keys in prop::collection::vec(any::<u64>(), 0..300),
        bits in bits(),
    ) {
        let hashes: Vec<u64> = keys.iter().map(bloomkit::hash).collect();
        let from_keys = BinaryFuseFilter::builder(0.01).fingerprint_bits(bits).build(keys.iter()).unwrap();
        let from_hashes = BinaryFuseFilter::builder(0.01).fingerprint_bits(bits).build_from_hashes(&hashes).unwrap();
        prop_assert_eq!(&from_keys, &from_hashes);
        for k in &keys {
            prop_assert!(from_keys.contains(k));
        }
        // By value and by reference alike.
        prop_assert_eq!(&BinaryFuseFilter::builder(0.01).fingerprint_bits(bits).build(keys.clone()).unwrap(), &from_keys);
    }
}

/// Sequential integers are not hashes, but a build given them as if they were still succeeds
/// (the first attempt takes them as they are and fails; the remix of the next one spreads
/// them).
#[test]
fn structured_hashes_still_build() {
    for bits in [8, 16] {
        let hashes: Vec<u64> = (0..100_000).collect();
        let f = BinaryFuseFilter::builder(0.01)
            .fingerprint_bits(bits)
            .build_from_hashes(&hashes)
            .unwrap();
        assert!(f.fuse_seed() >= 1);
        assert!(hashes.iter().all(|&h| f.contains_hash(h)));
    }
}

#[test]
fn one_key_many_times() {
    let f = BinaryFuseFilter::build(std::iter::repeat_n("same", 10_000), 0.01).unwrap();
    assert_eq!(f.len(), 10_000);
    assert!(f.contains("same"));
    // Sized for the 10,000 keys it was given (duplicates are not looked for when sizing).
    assert!(f.num_slots() >= 10_000);
}

#[test]
fn seeded_builds_hash_with_their_seed() {
    let hashes: Vec<u64> = (0..1000u32)
        .map(|k| bloomkit::hash_with_seed(&k, 77))
        .collect();
    let f = BinaryFuseFilter::builder(0.01)
        .fingerprint_bits(8)
        .seed(77)
        .build_from_hashes(&hashes)
        .unwrap();
    assert_eq!(f.seed(), 77);
    assert!((0..1000u32).all(|k| f.contains(&k)));
    let g = BinaryFuseFilter::from_bytes(&f.to_bytes()).unwrap();
    assert_eq!(g.seed(), 77);
    assert!((0..1000u32).all(|k| g.contains(&k)));
}

#[test]
fn works_through_the_filter_trait() {
    let f = BinaryFuseFilter::builder(0.01)
        .fingerprint_bits(16)
        .build(["a", "b"])
        .unwrap();
    let dynamic: &dyn Filter = &f;
    assert_eq!(dynamic.kind(), FilterKind::Fuse);
    assert_eq!(dynamic.seed(), bloomkit::DEFAULT_SEED);
    assert!(dynamic.contains_hash(bloomkit::hash("a")));
    assert_eq!(dynamic.memory_bytes(), f.memory_bytes());
    assert!(FilterExt::contains(&f, "b"));
}

#[test]
fn any_filter_refuses_inserts_and_empty_builds() {
    let mut any: AnyFilter = BinaryFuseFilter::build(0..100u32, 0.01).unwrap().into();
    assert!(matches!(
        any.insert("x"),
        Err(Error::Unsupported {
            kind: FilterKind::Fuse,
            ..
        })
    ));
    assert!(matches!(
        AnyFilter::new(FilterKind::Fuse, 100, 0.01),
        Err(Error::Unsupported { .. })
    ));
    assert_eq!(any.estimated_fp_rate(), 1.0 / 256.0);
    assert_eq!(any.predicted_fp_rate(), 1.0 / 256.0);
    let names: Vec<&str> = any.parameters().iter().map(|(n, _)| *n).collect();
    assert!(names.contains(&"fingerprint bits"), "{names:?}");
}

// ---------------------------------------------------------------------------------------------
// Statistical tests: the measured rate is 2^−bits, and the space is the sizing rule's.
//
// Keys are fixed integers, so each test is deterministic. For 8-bit fingerprints, ±10% around
// 2^−8 with 2,000,000 absent probes is 7 standard deviations of the binomial count; for
// 16-bit ones, ±30% around 2^−16 with 20,000,000 probes (305 expected) is 5.3. A correct
// filter cannot miss them by chance; a real defect (a fingerprint tied to its slots, a slot
// outside its segment) moves the rate far more.

/// Builds from `0..n`, checks no key is forgotten, and returns the filter and the fraction of
/// the `probes` absent keys `n..n + probes` it calls present.
fn measure(n: u64, probes: u64, bits: u32) -> (BinaryFuseFilter, f64) {
    let f = BinaryFuseFilter::builder(0.01)
        .fingerprint_bits(bits)
        .build(0..n)
        .unwrap();
    assert!((0..n).all(|k| f.contains(&k)), "a false negative");
    let hits = (n..n + probes).filter(|k| f.contains(k)).count();
    (f, hits as f64 / probes as f64)
}

fn check_rate(label: &str, f: &BinaryFuseFilter, measured: f64, tolerance: f64) {
    let predicted = f.fp_rate();
    let ratio = measured / predicted;
    eprintln!(
        "{label}: {} keys, measured {measured:.7}, predicted {predicted:.7} (ratio {ratio:.3}); \
         {:.4} bits/key; {} slots in segments of {}, fuse seed {}",
        f.len(),
        f.bits_per_key(),
        f.num_slots(),
        f.segment_length(),
        f.fuse_seed(),
    );
    assert!(
        (1.0 - tolerance..=1.0 + tolerance).contains(&ratio),
        "{label}: measured {measured:.7} vs predicted {predicted:.7}"
    );
}

#[test]
fn one_million_keys_with_8_bit_fingerprints() {
    let (f, measured) = measure(1_000_000, 2_000_000, 8);
    check_rate("fuse8", &f, measured, 0.10);
    // 1,130,496 slots: 9.04 bits per key.
    assert_eq!(f.num_slots(), 1_130_496);
    assert!(
        (f.bits_per_key() - 9.044).abs() < 0.001,
        "{}",
        f.bits_per_key()
    );
}

#[test]
fn one_million_keys_with_16_bit_fingerprints() {
    let (f, measured) = measure(1_000_000, 20_000_000, 16);
    check_rate("fuse16", &f, measured, 0.30);
    assert!(
        (f.bits_per_key() - 18.088).abs() < 0.001,
        "{}",
        f.bits_per_key()
    );
}

/// Small filters (one segment beyond the two extra, a few, many) keep the promised rate.
#[test]
fn small_filters_keep_the_promised_rate() {
    for n in [1u64, 3, 10, 100, 1000, 37_400, 60_000] {
        let (f, measured) = measure(n, 1_000_000, 8);
        check_rate(&format!("fuse8 n = {n}"), &f, measured, 0.12);
    }
}

// ---------------------------------------------------------------------------------------------
// Golden files: a filter written by an earlier build loads and answers exactly as it did.
// To write them (once, for a new format only): BLOOMKIT_WRITE_GOLDEN=1 cargo test -p bloomkit --test it fuse::

fn golden_key(i: u64) -> String {
    format!("golden:{i}")
}

/// The recipe: keys 0..1000 built in, with `bits`-bit fingerprints; 1000..3000 are not.
fn golden_build(bits: u32) -> BinaryFuseFilter {
    BinaryFuseFilter::builder(0.01)
        .fingerprint_bits(bits)
        .build((0..1000).map(golden_key))
        .unwrap()
}

#[test]
fn golden_files_load_and_answer_as_written() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    // 2,000 absent keys at 2^-8: about 8 false positives; at 2^-16, almost surely none.
    for (bits, most_maybes) in [(8u32, 1025usize), (16, 1002)] {
        let bin_path = dir.join(format!("fuse{bits}-v1.bkf"));
        let answers_path = dir.join(format!("fuse{bits}-v1.answers"));
        if std::env::var_os("BLOOMKIT_WRITE_GOLDEN").is_some() && !bin_path.exists() {
            let f = golden_build(bits);
            std::fs::write(&bin_path, f.to_bytes()).unwrap();
            std::fs::write(&answers_path, golden_answers(&f, golden_key)).unwrap();
        }
        let stored = std::fs::read(&bin_path).unwrap();
        let stored_answers = std::fs::read_to_string(&answers_path).unwrap();

        let loaded = BinaryFuseFilter::from_bytes(&stored).unwrap();
        assert_eq!(loaded.fingerprint_bits(), bits);
        assert_eq!(BinaryFuseFilter::read_from(&stored[..]).unwrap(), loaded);
        assert_eq!(
            golden_answers(&loaded, golden_key),
            stored_answers,
            "fuse{bits}: answers changed"
        );
        assert!(stored_answers
            .lines()
            .take(1000)
            .all(|l| l.ends_with("\tmaybe")));
        let maybes = stored_answers
            .lines()
            .filter(|l| l.ends_with("maybe"))
            .count();
        assert!((1000..most_maybes).contains(&maybes), "{maybes}");
        assert!(loaded.to_bytes() == stored, "re-serialization differs");
        assert!(
            golden_build(bits).to_bytes() == stored,
            "a fresh build differs"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Hostile input: always an error, never a panic, never an allocation the input cannot justify.

/// Byte offsets in a fuse file (docs/FORMAT.md): the header's item count, the parameters
/// (fingerprint bits, segment length, segment count, fuse seed) and the payload length.
const ITEM_COUNT: usize = 24;
const FINGERPRINT_BITS: usize = 36;
const SEGMENT_LENGTH: usize = 40;
const SEGMENT_COUNT: usize = 44;
const FUSE_SEED: usize = 48;
const PAYLOAD_LEN: usize = 52;
const PAYLOAD: usize = 60;

/// 240 keys: segments of 64 slots, 4 + 2 of them (384 slots: 48 words at 8 bits, 96 at 16),
/// built at fuse seed 0.
fn small_file(bits: u32) -> Vec<u8> {
    BinaryFuseFilter::builder(0.01)
        .fingerprint_bits(bits)
        .build(0..240u32)
        .unwrap()
        .to_bytes()
}

/// A filter whose slots do not fill its last word: 1 key, 12 slots, 1.5 words at 8 bits.
fn padded_file() -> Vec<u8> {
    BinaryFuseFilter::build([7u32], 0.01).unwrap().to_bytes()
}

fn with(file: &[u8], at: usize, value: &[u8]) -> Vec<u8> {
    let mut bad = file.to_vec();
    bad[at..at + value.len()].copy_from_slice(value);
    reseal(&mut bad);
    bad
}

fn loads(bytes: &[u8]) -> bool {
    let a = BinaryFuseFilter::from_bytes(bytes).is_ok();
    let b = BinaryFuseFilter::read_from(bytes).is_ok();
    a || b
}

fn u32_at(file: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(file[at..at + 4].try_into().unwrap())
}

fn u64_at(file: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(file[at..at + 8].try_into().unwrap())
}

#[test]
fn layout_is_as_documented() {
    for bits in [8u32, 16] {
        let file = small_file(bits);
        let f = BinaryFuseFilter::from_bytes(&file).unwrap();
        assert_eq!(u16::from_le_bytes([file[10], file[11]]), 8, "kind code");
        assert_eq!(u64_at(&file, ITEM_COUNT), 240);
        assert_eq!(u32_at(&file, 32), 16, "parameter length");
        assert_eq!(u32_at(&file, FINGERPRINT_BITS), bits);
        assert_eq!(u32_at(&file, SEGMENT_LENGTH), 64);
        assert_eq!(u32_at(&file, SEGMENT_COUNT), 4);
        assert_eq!(u32_at(&file, FUSE_SEED), f.fuse_seed());
        assert_eq!(f.num_slots(), 384);
        let payload = 384 * u64::from(bits) / 8;
        assert_eq!(u64_at(&file, PAYLOAD_LEN), payload);
        assert_eq!(file.len() as u64, PAYLOAD as u64 + payload + 8);
        // Slot i is byte (or little-endian u16) i of the payload: the query, by hand.
        let slot = |i: usize| -> u64 {
            match bits {
                8 => u64::from(file[PAYLOAD + i]),
                _ => u64::from(u16::from_le_bytes([
                    file[PAYLOAD + 2 * i],
                    file[PAYLOAD + 2 * i + 1],
                ])),
            }
        };
        assert_eq!(
            f.fuse_seed(),
            0,
            "the documented derivation below is seed 0's"
        );
        for k in 0..2000u32 {
            let x = bloomkit::hash(&k);
            let a = ((u128::from(x) * 4 * 64) >> 64) as u64;
            let b = (a + 64) ^ ((x >> 18) & 63);
            let c = (a + 128) ^ (x & 63);
            let fingerprint = (x ^ (x >> 32)) & ((1 << bits) - 1);
            let by_hand = slot(a as usize) ^ slot(b as usize) ^ slot(c as usize) == fingerprint;
            assert_eq!(by_hand, f.contains(&k), "key {k}");
        }
    }
}

#[test]
fn every_truncation_is_an_error() {
    for file in [small_file(8), small_file(16), padded_file()] {
        common::assert_every_truncation_fails(&file, BinaryFuseFilter::from_bytes, |b| {
            BinaryFuseFilter::read_from(b)
        });
    }
}

#[test]
fn every_single_byte_corruption_is_an_error() {
    for file in [small_file(8), small_file(16), padded_file()] {
        common::assert_every_byte_flip_fails(&file, BinaryFuseFilter::from_bytes, |b| {
            BinaryFuseFilter::read_from(b)
        });
    }
}

#[test]
fn huge_claims_in_small_files_fail_before_allocating() {
    let file = small_file(16);
    // The largest array the format allows, a little under 2^32 slots: 8 GiB claimed.
    let segments = (u32::MAX >> 18) - 2;
    let mut bad = with(&file, SEGMENT_LENGTH, &(1u32 << 18).to_le_bytes());
    bad[SEGMENT_COUNT..][..4].copy_from_slice(&segments.to_le_bytes());
    let slots = (u64::from(segments) + 2) << 18;
    bad[PAYLOAD_LEN..][..8].copy_from_slice(&(slots * 2).to_le_bytes());
    reseal(&mut bad);
    assert!(matches!(
        BinaryFuseFilter::from_bytes(&bad),
        Err(Error::Truncated)
    ));
    // A stream cannot be measured in advance: had the reader reserved the claim up front,
    // the allocator's refusal would surface as OutOfMemory, not as truncation.
    assert!(matches!(
        BinaryFuseFilter::read_from(&bad[..]),
        Err(Error::Truncated)
    ));
    // One segment more than 2^32 slots allow.
    let mut bad = with(&file, SEGMENT_LENGTH, &(1u32 << 18).to_le_bytes());
    bad[SEGMENT_COUNT..][..4].copy_from_slice(&(segments + 1).to_le_bytes());
    reseal(&mut bad);
    let err = BinaryFuseFilter::from_bytes(&bad).unwrap_err();
    assert!(err.to_string().contains("impossibly large"), "{err}");
}

#[test]
fn inconsistent_headers_are_corrupt() {
    for bits in [8u32, 16] {
        let file = small_file(bits);
        // Each must fail for its own reason: `reason` is part of the message.
        let corrupt = |bad: Vec<u8>, reason: &str| {
            let err = BinaryFuseFilter::from_bytes(&bad).unwrap_err();
            assert!(matches!(err, Error::Corrupt { .. }), "{reason}: {err}");
            assert!(err.to_string().contains(reason), "{reason}: {err}");
            assert!(AnyFilter::from_bytes(&bad).is_err());
        };
        for b in [0u32, 1, 4, 12, 32, u32::MAX] {
            corrupt(
                with(&file, FINGERPRINT_BITS, &b.to_le_bytes()),
                "fingerprint bits",
            );
        }
        for l in [0u32, 3, 48, 1 << 19, u32::MAX] {
            corrupt(
                with(&file, SEGMENT_LENGTH, &l.to_le_bytes()),
                "segment length",
            );
        }
        let payload = 384 * u64::from(bits) / 8;
        let fields: [(usize, u64, String); 4] = [
            (ITEM_COUNT, 0, "0 keys cannot have built".into()),
            (ITEM_COUNT, 385, "385 keys cannot have built".into()),
            (PAYLOAD_LEN, 8, format!("the parameters need {payload}")),
            (
                PAYLOAD_LEN,
                payload - 8,
                format!("the parameters need {payload}"),
            ),
        ];
        for (at, value, reason) in fields {
            corrupt(with(&file, at, &value.to_le_bytes()), &reason);
        }
        // Segments that do not match the payload, and none at all for 240 keys.
        corrupt(
            with(&file, SEGMENT_COUNT, &5u32.to_le_bytes()),
            &format!("the parameters need {}", 448 * u64::from(bits) / 8),
        );
        corrupt(
            with(&file, SEGMENT_COUNT, &0u32.to_le_bytes()),
            "240 keys cannot have built",
        );
        // Parameters of the wrong length (the fuse seed cut off).
        let mut short = file.clone();
        short[32..36].copy_from_slice(&12u32.to_le_bytes());
        short.drain(FUSE_SEED..FUSE_SEED + 4);
        reseal(&mut short);
        corrupt(short, "parameters are too short");
    }
    // Padding after the last fingerprint must be zero: 12 slots fill 1.5 words.
    let file = padded_file();
    let last_word = file.len() - 8 - 8;
    let mut bad = file.clone();
    bad[last_word + 7] = 1;
    reseal(&mut bad);
    let err = BinaryFuseFilter::from_bytes(&bad).unwrap_err();
    assert!(err.to_string().contains("padding"), "{err}");
    // The fuse seed is any value: a changed one loads (and answers differently).
    let changed = with(&small_file(8), FUSE_SEED, &9u32.to_le_bytes());
    assert_eq!(
        BinaryFuseFilter::from_bytes(&changed).unwrap().fuse_seed(),
        9
    );
}

#[test]
fn other_kinds_are_refused() {
    let classic = BloomFilter::new(100, 0.01).unwrap().to_bytes();
    assert!(matches!(
        BinaryFuseFilter::from_bytes(&classic),
        Err(Error::WrongKind {
            expected: FilterKind::Fuse,
            found: 1
        })
    ));
    assert!(matches!(
        BloomFilter::from_bytes(&small_file(8)),
        Err(Error::WrongKind {
            expected: FilterKind::Classic,
            found: 8
        })
    ));
    let mut trailing = small_file(8);
    trailing.extend_from_slice(b"more");
    assert!(matches!(
        BinaryFuseFilter::from_bytes(&trailing),
        Err(Error::TrailingBytes { extra: 4 })
    ));
    let mut rest = &trailing[..];
    BinaryFuseFilter::read_from(&mut rest).unwrap();
    assert_eq!(rest, b"more");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn arbitrary_bytes_behind_a_valid_header_never_panic(
        tail in prop::collection::vec(any::<u8>(), 0..400),
        cut in 0usize..80,
        bits in bits(),
    ) {
        let mut bytes = small_file(bits)[..cut].to_vec();
        bytes.extend_from_slice(&tail);
        loads(&bytes);
    }

    /// Any parameters, resealed so they reach the checks: an error or a filter that answers
    /// and writes back the same bytes, never a panic.
    #[test]
    fn arbitrary_parameters_never_panic(
        params in prop::collection::vec(any::<u32>(), 4),
        len in prop::sample::select(vec![0u64, 1, 240, 384, u64::MAX]),
    ) {
        let file = small_file(8);
        let mut bad = file.clone();
        for (i, p) in params.iter().enumerate() {
            bad[FINGERPRINT_BITS + 4 * i..][..4].copy_from_slice(&p.to_le_bytes());
        }
        bad[ITEM_COUNT..][..8].copy_from_slice(&len.to_le_bytes());
        reseal(&mut bad);
        if let Ok(f) = BinaryFuseFilter::from_bytes(&bad) {
            let _ = f.contains("probe");
            prop_assert_eq!(f.to_bytes(), bad);
        }
    }
}
