//! Golden files: filters written by an earlier build must load and answer exactly as they did.
//!
//! `tests/data/` holds one small filter per kind (and a classic one with a non-default seed),
//! each with an `.answers` file listing, for 3,000 keys (1,000 inserted, 2,000 not), the answer
//! the filter gave when it was written. A change to the hash, the probe derivation or the
//! format fails here. Such a change needs a new format version or a new code in the file (as
//! the classic filters' second probe derivation has), with new golden files for the new code
//! beside the old ones, which keep loading as they did.
//!
//! This file checks the classic and blocked fixtures in depth and every fixture through
//! `AnyFilter`; each newer kind's test file (`counting.rs`, `scalable.rs`, ...) checks its own
//! fixture in depth and writes it when it is missing and `BLOOMKIT_WRITE_GOLDEN=1` is set.
//! Write a fixture once, when its kind first lands on main; never rewrite one that has landed.

use crate::common;
use common::typed::TypedKey;
use common::{as_key_feed, data_dir, golden_answers, reseal};

use bloomkit::{
    AgingBloomFilter, AnyFilter, AtomicBloomFilter, BlockedBloomFilter, BlockedProbes, BloomFilter,
    ClassicProbes, CountingBloomFilter, FilterKind, LayerLayout, ScalableBloomFilter,
};

struct Fixture {
    name: &'static str,
    kind: FilterKind,
    build: fn() -> AnyFilter,
    key: fn(u64) -> String,
}

fn text_key(i: u64) -> String {
    format!("golden:{i}")
}

fn number_key(i: u64) -> String {
    i.to_string()
}

/// The recipes. Keys `0..1000` are inserted; `1000..3000` are not.
///
/// Each names its parameters explicitly (they are what `new(1000, 0.01)` and
/// `builder(1000, 0.05).seed(0x5eed)` planned when the files were written): the files pin
/// what stored data depends on (the hash, the probes, the format), not the sizing policy for
/// new filters, which `sizing`'s own tests pin.
fn fixtures() -> Vec<Fixture> {
    vec![
        Fixture {
            name: "classic-v1",
            kind: FilterKind::Classic,
            build: || {
                fill(
                    BloomFilter::builder(0, 0.01)
                        .num_bits(9600)
                        .num_hashes(7)
                        .probes(ClassicProbes::DoubleHashing)
                        .build()
                        .unwrap()
                        .into(),
                    text_key,
                )
            },
            key: text_key,
        },
        Fixture {
            name: "blocked-v1",
            kind: FilterKind::Blocked,
            build: || {
                let f = BlockedBloomFilter::builder(0, 0.01)
                    .num_bits(10240)
                    .num_hashes(6)
                    .probes(BlockedProbes::OneSeed)
                    .build()
                    .unwrap();
                fill(f.into(), text_key)
            },
            key: text_key,
        },
        Fixture {
            name: "classic-seeded-v1",
            kind: FilterKind::Classic,
            build: || {
                let f = BloomFilter::builder(0, 0.01)
                    .num_bits(6272)
                    .num_hashes(4)
                    .seed(0x5eed)
                    .probes(ClassicProbes::DoubleHashing)
                    .build()
                    .unwrap();
                fill(f.into(), number_key)
            },
            key: number_key,
        },
        // The classic filters' second probe derivation (probe derivation 2 in their
        // parameters, flag bit 2 in a scalable filter's), in the recipes of the first's.
        Fixture {
            name: "classic-probes2-v1",
            kind: FilterKind::Classic,
            build: || {
                let f = BloomFilter::builder(0, 0.01)
                    .num_bits(9600)
                    .num_hashes(7)
                    .build()
                    .unwrap();
                fill(f.into(), text_key)
            },
            key: text_key,
        },
        Fixture {
            name: "counting-probes2-v1",
            kind: FilterKind::Counting,
            build: || {
                let f = CountingBloomFilter::builder(0, 0.01)
                    .num_counters(9600)
                    .num_hashes(7)
                    .build()
                    .unwrap();
                fill(f.into(), text_key)
            },
            key: text_key,
        },
        Fixture {
            name: "scalable-classic-probes2-v1",
            kind: FilterKind::Scalable,
            build: || {
                let f = ScalableBloomFilter::builder(100, 0.01)
                    .layout(LayerLayout::Classic)
                    .build()
                    .unwrap();
                fill(f.into(), text_key)
            },
            key: text_key,
        },
        // The blocked layout's second probe derivation (probe derivation 2 in the blocked
        // and aging parameters, flag bit 3 in a scalable filter's), in the recipes of the
        // first's: `blocked-v1`, `scalable-v1` and `aging-v1` (whose three generations
        // are filled one rotation apart).
        Fixture {
            name: "blocked-probes2-v1",
            kind: FilterKind::Blocked,
            build: || {
                let f = BlockedBloomFilter::builder(0, 0.01)
                    .num_bits(10240)
                    .num_hashes(6)
                    .build()
                    .unwrap();
                fill(f.into(), text_key)
            },
            key: text_key,
        },
        Fixture {
            name: "scalable-probes2-v1",
            kind: FilterKind::Scalable,
            build: || {
                fill(
                    ScalableBloomFilter::new(100, 0.01).unwrap().into(),
                    text_key,
                )
            },
            key: text_key,
        },
        Fixture {
            name: "aging-probes2-v1",
            kind: FilterKind::Aging,
            build: || {
                let mut f = AgingBloomFilter::builder(0, 0.01)
                    .num_bits_per_generation(5120)
                    .num_hashes(7)
                    .generations(3)
                    .build()
                    .unwrap();
                for (i, range) in [0..400u64, 400..700, 700..1000].into_iter().enumerate() {
                    if i > 0 {
                        f.rotate();
                    }
                    for k in range {
                        f.insert(text_key(k).as_str());
                    }
                }
                f.into()
            },
            key: text_key,
        },
    ]
}

fn fill(mut f: AnyFilter, key: fn(u64) -> String) -> AnyFilter {
    for i in 0..1000 {
        f.insert(key(i).as_str()).unwrap();
    }
    f
}

#[test]
fn golden_files_load_and_answer_as_written() {
    let write = std::env::var_os("BLOOMKIT_WRITE_GOLDEN").is_some();
    for fx in fixtures() {
        let bin_path = data_dir().join(format!("{}.bkf", fx.name));
        let answers_path = data_dir().join(format!("{}.answers", fx.name));
        if write && !bin_path.exists() {
            let f = (fx.build)();
            std::fs::write(&bin_path, f.to_bytes()).unwrap();
            std::fs::write(&answers_path, golden_answers(&f, fx.key)).unwrap();
        }
        let stored =
            std::fs::read(&bin_path).unwrap_or_else(|e| panic!("{}: {e}", bin_path.display()));
        let stored_answers = std::fs::read_to_string(&answers_path)
            .unwrap_or_else(|e| panic!("{}: {e}", answers_path.display()));

        // It loads, as its kind and as AnyFilter, and answers every key as it did.
        let loaded = AnyFilter::from_bytes(&stored).unwrap();
        assert_eq!(loaded.kind(), fx.kind, "{}", fx.name);
        assert_eq!(
            golden_answers(&loaded, fx.key),
            stored_answers,
            "{}: answers changed",
            fx.name
        );
        match fx.kind {
            FilterKind::Classic => {
                let f = BloomFilter::from_bytes(&stored).unwrap();
                assert_eq!(AnyFilter::from(f), loaded);
            }
            FilterKind::Blocked => {
                let f = BlockedBloomFilter::from_bytes(&stored).unwrap();
                assert_eq!(
                    f.probes() == BlockedProbes::TwoSeeds,
                    fx.name.contains("probes2")
                );
                assert_eq!(AnyFilter::from(f), loaded);
                let a = AtomicBloomFilter::from_bytes(&stored).unwrap();
                assert_eq!(AnyFilter::from(a.to_blocked().unwrap()), loaded);
            }
            FilterKind::Counting => {
                let f = CountingBloomFilter::from_bytes(&stored).unwrap();
                assert_eq!(f.probes(), ClassicProbes::Rotating, "{}", fx.name);
                assert_eq!(AnyFilter::from(f), loaded);
            }
            FilterKind::Scalable => {
                let f = ScalableBloomFilter::from_bytes(&stored).unwrap();
                assert_eq!(f.classic_probes(), ClassicProbes::Rotating, "{}", fx.name);
                assert_eq!(f.blocked_probes(), BlockedProbes::TwoSeeds, "{}", fx.name);
                assert_eq!(AnyFilter::from(f), loaded);
            }
            FilterKind::Aging => {
                let f = AgingBloomFilter::from_bytes(&stored).unwrap();
                assert_eq!(f.probes(), BlockedProbes::TwoSeeds, "{}", fx.name);
                assert_eq!(AnyFilter::from(f), loaded);
            }
            _ => unreachable!("no fixture of another kind"),
        }
        // Every inserted key is there; the absent ones are mostly not.
        let maybes = stored_answers
            .lines()
            .filter(|l| l.ends_with("maybe"))
            .count();
        assert!(stored_answers
            .lines()
            .take(1000)
            .all(|l| l.ends_with("\tmaybe")));
        assert!((1000..1200).contains(&maybes), "{}: {maybes}", fx.name);

        // It writes back byte for byte, and today's build with the same parameters is
        // identical: the hash, the probes and the writer are all unchanged. (assert! rather
        // than assert_eq!, so that a failure does not print two kilobyte arrays.)
        assert!(
            loaded.to_bytes() == stored,
            "{}: re-serialization differs",
            fx.name
        );
        // Today's build writes the current key feed (hash algorithm 2); the golden keys are
        // strings, whose feed did not change, so with the header saying so the rest is the
        // same bytes.
        let fresh = (fx.build)().to_bytes();
        let today = if stored[12..14] == [1, 0] {
            as_key_feed(&stored)
        } else {
            stored.clone()
        };
        assert!(fresh == today, "{}: a fresh build differs", fx.name);
    }
}

/// Every fixture of every kind in `tests/data` loads through `AnyFilter` as the kind its
/// name says, answers as its `.answers` file records, and writes back byte for byte. (Each
/// kind's own test file checks its fixture in depth; this catches a kind that `AnyFilter`
/// forgot.)
#[test]
fn every_fixture_loads_through_any_filter() {
    let mut seen = 0;
    for entry in std::fs::read_dir(data_dir()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("bkf") {
            continue;
        }
        let name = path.file_stem().unwrap().to_str().unwrap().to_string();
        let bytes = std::fs::read(&path).unwrap();
        let f = AnyFilter::from_bytes(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(
            name.starts_with(f.kind().name()),
            "{name} loaded as {}",
            f.kind()
        );
        assert!(f.to_bytes() == bytes, "{name}: re-serialization differs");
        assert_eq!(f.encoded_len(), bytes.len(), "{name}");
        let answers = std::fs::read_to_string(path.with_extension("answers")).unwrap();
        for line in answers.lines() {
            // "key<TAB>answer", where a cuckoo fixture may add a count column; a key is text
            // or, in the fixtures that pin how each key type is hashed, typed.
            let mut cols = line.split('\t');
            let (key, answer) = (cols.next().unwrap(), cols.next().unwrap());
            let key = TypedKey::parse(key);
            let yes = with_key!(&key, |v| f.contains(v));
            assert_eq!(yes, answer == "maybe", "{name}: {line}");
        }
        seen += 1;
    }
    assert!(seen >= 24, "only {seen} fixtures");
}

/// The blocked layout's probe derivation field (parameters 48..52 of a blocked filter, after
/// its bits and hashes): a code this build does not know, or the first derivation written
/// with the field (bloomkit writes it without), is refused as corrupt, naming the code, by
/// the owned filter, the atomic one and the view alike; a file without it is the first.
#[test]
fn blocked_probe_derivations_are_read_or_refused_by_name() {
    let mut f = BlockedBloomFilter::new(1000, 0.01).unwrap();
    f.insert("a");
    let good = f.to_bytes();
    const DERIVATION: usize = 48;
    assert_eq!(good[DERIVATION..DERIVATION + 4], 2u32.to_le_bytes());
    for code in [0u32, 1, 3, u32::MAX] {
        let mut bad = good.clone();
        bad[DERIVATION..DERIVATION + 4].copy_from_slice(&code.to_le_bytes());
        reseal(&mut bad);
        let errors = [
            BlockedBloomFilter::from_bytes(&bad).map(|_| ()),
            AtomicBloomFilter::from_bytes(&bad).map(|_| ()),
            bloomkit::BlockedBloomFilterRef::from_bytes(&bad).map(|_| ()),
            AnyFilter::from_bytes(&bad).map(|_| ()),
        ];
        for err in errors {
            match err {
                Err(bloomkit::Error::Corrupt { reason }) => assert!(
                    reason.contains(&format!(
                        "probe derivation {code} is not one this build knows"
                    )),
                    "{reason}"
                ),
                other => panic!("derivation {code}: {other:?}"),
            }
        }
    }
    let old = std::fs::read(data_dir().join("blocked-v1.bkf")).unwrap();
    let view = bloomkit::BlockedBloomFilterRef::from_bytes(&old).unwrap();
    assert_eq!(view.probes(), BlockedProbes::OneSeed);
    assert_eq!(
        BlockedBloomFilter::from_bytes(&old).unwrap().probes(),
        BlockedProbes::OneSeed
    );
}

/// Filters of the two derivations set different bits for a key: combining them is refused,
/// naming the derivations, as combining seeds is; a view and its owned copy keep the
/// derivation.
#[test]
fn derivations_do_not_mix() {
    let build = |probes| {
        let mut f = BlockedBloomFilter::builder(1000, 0.01)
            .probes(probes)
            .build()
            .unwrap();
        f.insert("a");
        f
    };
    let (mut one, two) = (
        build(BlockedProbes::OneSeed),
        build(BlockedProbes::TwoSeeds),
    );
    let err = one.union(&two).unwrap_err().to_string();
    assert!(err.contains("probe derivation (1 vs 2)"), "{err}");
    assert!(one.intersect(&two).is_err());
    let (a1, a2) = (
        AtomicBloomFilter::from_blocked(&one).unwrap(),
        AtomicBloomFilter::from_blocked(&two).unwrap(),
    );
    assert!(a1.union(&a2).is_err());
    assert_eq!(a1.to_blocked().unwrap().probes(), BlockedProbes::OneSeed);
    for f in [one, two] {
        let bytes = f.to_bytes();
        let view = bloomkit::BlockedBloomFilterRef::from_bytes(&bytes).unwrap();
        assert_eq!(view.probes(), f.probes());
        assert_eq!(view.to_filter().unwrap(), f);
        assert!(view.contains("a"));
        let chain = ScalableBloomFilter::from_blocked(f.clone()).unwrap();
        assert_eq!(chain.blocked_probes(), f.probes());
        assert!(chain.contains("a"));
    }
}
