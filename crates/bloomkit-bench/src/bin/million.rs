//! `million`: build, insert and query times of the cuckoo, binary fuse and ribbon filters at
//! 1,000,000 integer keys, one line per configuration, for the figures the docs quote
//! beside the side-by-side tables (`compare`), on one machine in one run:
//!
//! ```text
//! cargo run --release -p bloomkit-bench --bin million [cuckoo|fuse|ribbon]...
//! ```
//!
//! With no argument it measures all three. Each figure is one pass in nanoseconds per key
//! (not a median of repetitions: a quick look, not a table), and each line also checks
//! what it measured: every present key found, and the measured false-positive rate.

use std::hint::black_box;
use std::time::Instant;

use bloomkit::{BinaryFuseFilter, CuckooFilter, RibbonFilter};

const N: u64 = 1_000_000;

/// Nanoseconds per key of `n` keys since `t`.
fn per_key(t: Instant) -> f64 {
    t.elapsed().as_nanos() as f64 / N as f64
}

/// Cuckoo filters at 1% and 0.1% and RedisBloom's layout: inserts, queries of present and
/// absent keys by precomputed hash.
fn cuckoo() {
    let hashes: Vec<u64> = (0..N).map(|i| bloomkit::hash(&i)).collect();
    let absent: Vec<u64> = (N..2 * N).map(|i| bloomkit::hash(&i)).collect();
    for (name, builder) in [
        ("cuckoo 1%", CuckooFilter::builder(N, 0.01)),
        ("cuckoo 0.1%", CuckooFilter::builder(N, 0.001)),
        ("cuckoo redisbloom", CuckooFilter::redisbloom_builder(N)),
    ] {
        let mut f = builder.build().expect("a valid configuration");
        let t = Instant::now();
        for &h in &hashes {
            f.insert_hash(h).expect("room for every key");
        }
        let insert = per_key(t);
        let t = Instant::now();
        let hits = hashes
            .iter()
            .filter(|&&h| f.contains_hash(black_box(h)))
            .count();
        let present = per_key(t);
        let t = Instant::now();
        let fps = absent
            .iter()
            .filter(|&&h| f.contains_hash(black_box(h)))
            .count();
        let miss = per_key(t);
        assert_eq!(hits as u64, N, "{name}: a present key was not found");
        println!(
            "{name}: insert {insert:.1} ns, query present {present:.1} ns, absent {miss:.1} ns | \
             {} sub-filters, rate {:.5}",
            f.num_filters(),
            fps as f64 / N as f64
        );
    }
}

/// Times the queries of `contains` (by key, present and absent) and `contains_hash`.
fn queries(
    keys: &[u64],
    hashes: &[u64],
    contains: impl Fn(&u64) -> bool,
    contains_hash: impl Fn(u64) -> bool,
) -> (f64, f64, f64, f64) {
    let t = Instant::now();
    let present = keys.iter().filter(|k| contains(k)).count();
    let q_present = per_key(t);
    let t = Instant::now();
    let absent = (N..2 * N).filter(|k| contains(k)).count();
    let q_absent = per_key(t);
    let t = Instant::now();
    let by_hash = hashes
        .iter()
        .filter(|&&h| contains_hash(black_box(h)))
        .count();
    let q_hash = per_key(t);
    assert_eq!(present as u64, N, "a present key was not found");
    assert_eq!(by_hash as u64, N, "a present hash was not found");
    (q_present, q_absent, q_hash, absent as f64 / N as f64)
}

/// Binary fuse filters of 8- and 16-bit fingerprints built from hashes, and their queries.
fn fuse() {
    let keys: Vec<u64> = (0..N).collect();
    let hashes: Vec<u64> = keys.iter().map(bloomkit::hash).collect();
    for bits in [8, 16] {
        let t = Instant::now();
        let f = BinaryFuseFilter::builder(0.01)
            .fingerprint_bits(bits)
            .build_from_hashes(&hashes)
            .expect("a build");
        let build = per_key(t);
        let (present, absent, hash, rate) =
            queries(&keys, &hashes, |k| f.contains(k), |h| f.contains_hash(h));
        println!(
            "fuse{bits}: build {build:.0} ns/key from hashes | query present {present:.1} ns, \
             absent {absent:.1} ns, by hash {hash:.1} ns | {:.3} bits/key, rate {rate:.5}",
            f.bits_per_key()
        );
    }
}

/// Ribbon filters at 1% and 0.1% built from keys and from hashes, and their queries.
fn ribbon() {
    let keys: Vec<u64> = (0..N).collect();
    let hashes: Vec<u64> = keys.iter().map(bloomkit::hash).collect();
    for p in [0.01, 0.001] {
        let t = Instant::now();
        let f = RibbonFilter::build(&keys, p).expect("a build");
        let from_keys = per_key(t);
        let t = Instant::now();
        let g = RibbonFilter::build_from_hashes(&hashes, p).expect("a build");
        let from_hashes = per_key(t);
        assert_eq!(f, g, "the same filter from keys and from their hashes");
        let (present, absent, hash, rate) =
            queries(&keys, &hashes, |k| f.contains(k), |h| f.contains_hash(h));
        println!(
            "ribbon {p}: build {from_keys:.0} ns/key ({from_hashes:.0} from hashes) | query \
             present {present:.1} ns, absent {absent:.1} ns, by hash {hash:.1} ns | r {}, \
             {:.3} bits/key, rate {rate:.5}",
            f.result_bits(),
            f.bits_per_key()
        );
    }
}

fn main() {
    let mut asked: Vec<String> = std::env::args().skip(1).collect();
    if asked.is_empty() {
        asked = ["cuckoo", "fuse", "ribbon"].map(String::from).to_vec();
    }
    for kind in asked {
        match kind.as_str() {
            "cuckoo" => cuckoo(),
            "fuse" => fuse(),
            "ribbon" => ribbon(),
            other => {
                eprintln!("million: unknown kind {other:?}: expected cuckoo, fuse or ribbon");
                std::process::exit(2);
            }
        }
    }
}
