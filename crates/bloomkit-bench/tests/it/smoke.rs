//! The harness core on tiny sizes, for bloomkit's kinds (no peers): every figure is there
//! and sane. Fast: the sizes are a few KiB.

use bloomkit_bench::keys::Key;
use bloomkit_bench::measure::{measure, Config, Outcome, Regime};
use bloomkit_bench::subject::{BloomkitHash, Static, StaticFilter};
use bloomkit_bench::{ours, report, Contender, Family, Hashing, Info, Subject};

fn check_row(outcome: &Outcome, config: &Config, regime: Regime) {
    let row = match outcome {
        Outcome::Measured(row) => row,
        Outcome::Skipped { info, reason } => panic!("{} skipped: {reason}", info.name),
    };
    let name = &row.info.name;
    assert_eq!(row.regime, regime);
    assert_eq!(row.missed_present, 0, "{name}: false negatives");
    assert!(row.present_queries > 0 && row.absent_queries > 0, "{name}");
    // Built for 1%: the measured rate is close to it (a few thousand absent keys at least),
    // but for the binary fuse filters, whose rate is 2^-8 or 2^-16 whatever the target.
    let rate = row.fp_rate();
    let expected = match row.info.family {
        Family::Fuse8 => 0.002..0.006,
        Family::Fuse16 => 0.0..0.0005,
        _ => 0.004..0.016,
    };
    assert!(expected.contains(&rate), "{name}: rate {rate}");
    // Each kind's own size at 1%: a counting filter's 4-bit counters, a scalable filter's
    // layers after growing 100×, a ribbon filter's 7-bit results (a small one pays a little
    // slack), the Bloom and cuckoo filters' ~10 bits.
    let bits = row.bits_per_key();
    let expected = match row.info.family {
        Family::Counting => 36.0..41.0,
        Family::Scalable => 20.0..32.0,
        Family::Ribbon => 7.0..8.5,
        Family::Fuse16 => 18.0..25.0,
        _ => 9.0..12.5,
    };
    assert!(expected.contains(&bits), "{name}: {bits} bits/key");
    for (what, ns) in [
        ("insert", row.insert_ns),
        ("present", row.present_ns),
        ("absent", row.absent_ns),
    ] {
        assert!(ns > 0.0 && ns < 10_000.0, "{name}: {what} {ns} ns");
    }
    assert!(
        row.absent_hash_ns.is_some(),
        "{name}: bloomkit takes a hash"
    );
    match regime {
        Regime::Cache => assert!(row.memory_bytes <= config.cache_bytes, "{name}"),
        Regime::Memory => assert!(row.memory_bytes >= config.memory_bytes, "{name}"),
    }
}

fn smoke<K: Key + ?Sized>() {
    let config = Config::tiny();
    for regime in [Regime::Cache, Regime::Memory] {
        let outcomes: Vec<Outcome> = ours::contenders::<K>()
            .iter()
            .map(|c| measure(c.as_ref(), regime, &config))
            .collect();
        assert!(outcomes.len() >= 3);
        for outcome in &outcomes {
            check_row(outcome, &config, regime);
        }
        let table = report::figures_table(&outcomes);
        assert!(table.contains("BlockedBloomFilter"), "{table}");
        // No peers: the ratios table is empty but well formed.
        assert_eq!(report::ratios_table(&outcomes).lines().count(), 2);
    }
}

#[test]
fn bloomkit_kinds_on_int_keys() {
    smoke::<u64>();
}

#[test]
fn bloomkit_kinds_on_string_keys() {
    smoke::<str>();
}

/// An exact set of hashes: a stand-in static filter, to run the "built from all keys" path.
struct SortedHashes(Vec<u64>);

impl StaticFilter for SortedHashes {
    fn build(hashes: &[u64], _p: f64) -> Result<Self, String> {
        let mut v = hashes.to_vec();
        v.sort_unstable();
        Ok(SortedHashes(v))
    }

    fn contains_hash(&self, hash: u64) -> bool {
        self.0.binary_search(&hash).is_ok()
    }

    fn memory_bytes(&self) -> usize {
        self.0.len() * 8
    }
}

struct Exact;

impl Contender<u64> for Exact {
    fn info(&self) -> Info {
        Info {
            name: "exact".into(),
            crate_name: "test",
            family: Family::Ribbon,
            hashing: Hashing::Bloomkit,
            note: None,
        }
    }

    fn build(&self, n: u64, p: f64) -> Result<Box<dyn Subject<u64>>, String> {
        Ok(Box::new(Static::<u64, BloomkitHash, SortedHashes>::new(
            n, p,
        )?))
    }

    fn memory_for(&self, n: u64, _p: f64) -> Result<u64, String> {
        Ok(n * 8)
    }
}

#[test]
fn static_filters_are_built_from_all_keys() {
    let config = Config::tiny();
    let outcome = measure(&Exact, Regime::Cache, &config);
    let row = outcome.row().expect("it ran");
    assert_eq!(row.n, config.cache_bytes / 8);
    assert_eq!(row.memory_bytes, config.cache_bytes);
    assert_eq!(row.missed_present, 0);
    assert_eq!(row.false_positives, 0, "an exact set has none");
    assert!(row.absent_hash_ns.is_some());
}
