//! `ribbon_work`: one build and a run of absent-key queries of bloomkit's `RibbonFilter`, or
//! of xorf's `BinaryFuse8` for comparison, from the same `bloomkit::hash`es, for counting
//! instructions under callgrind (repeatable on a loaded machine, where timings are not), and
//! the build's peak memory:
//!
//! ```text
//! cargo build --release -p bloomkit-bench --features peers --bin ribbon_work
//! valgrind --tool=callgrind --toggle-collect='*ribbon_work::query_*' \
//!     target/release/ribbon_work ours 0.01 58000 1000000
//! valgrind --tool=callgrind --toggle-collect='*ribbon_work::keyed_*' \
//!     target/release/ribbon_work ours 0.01 58000 1000000
//! valgrind --tool=callgrind --toggle-collect='*ribbon_work::build_*' \
//!     target/release/ribbon_work xorf 0.01 58000 1000000
//! target/release/ribbon_work ours 0.01 100000000 0     # peak memory of a large build
//! target/release/ribbon_work time 0.01 72282 1000000   # a timing sanity check, both
//! ```
//!
//! Arguments: `ours`, `xorf` or `time`, the ribbon's target rate (xorf's `BinaryFuse8` has
//! none), keys, absent queries. `time` builds both and times their absent-key queries in
//! turns (21 rounds each, integer keys hashed in the loop as the `compare` harness does, then
//! by precomputed hash), printing the medians and their ratio: on a loaded machine only a
//! sanity check beside the instruction counts. Prints the answers counted, so no work can be optimized away, and
//! the process's peak resident memory (`VmHWM`) before and after the build, where the system
//! reports it. The `build_*`, `query_*` (by precomputed hash) and `keyed_*` (integer keys,
//! hashed in the loop) functions are the measured parts; key generation is outside them.

use std::hint::black_box;
use std::process::ExitCode;
use std::time::Instant;

use bloomkit::RibbonFilter;
use xorf::{BinaryFuse8, Filter as _};

#[inline(never)]
fn build_ours(hashes: &[u64], p: f64) -> RibbonFilter {
    RibbonFilter::build_from_hashes(hashes, p).expect("build")
}

#[inline(never)]
fn build_xorf8(hashes: &[u64]) -> BinaryFuse8 {
    BinaryFuse8::try_from(hashes).expect("build")
}

#[inline(never)]
fn query_ours(f: &RibbonFilter, probes: &[u64]) -> usize {
    probes
        .iter()
        .filter(|&&h| f.contains_hash(black_box(h)))
        .count()
}

#[inline(never)]
fn query_xorf8(f: &BinaryFuse8, probes: &[u64]) -> usize {
    probes
        .iter()
        .filter(|&&h| f.contains(&black_box(h)))
        .count()
}

#[inline(never)]
fn keyed_ours(f: &RibbonFilter, keys: std::ops::Range<u64>) -> usize {
    keys.filter(|k| f.contains(&black_box(*k))).count()
}

#[inline(never)]
fn keyed_xorf8(f: &BinaryFuse8, keys: std::ops::Range<u64>) -> usize {
    keys.filter(|k| f.contains(&bloomkit::hash(&black_box(*k))))
        .count()
}

/// Nanoseconds per query of `run` over `q` queries: the median of 21 rounds, each of `run`
/// and `other` in turn so that both see the same load.
fn median_ns(
    q: u64,
    mut run: impl FnMut() -> usize,
    mut other: impl FnMut() -> usize,
) -> (f64, f64) {
    let mut a = Vec::new();
    let mut b = Vec::new();
    for _ in 0..21 {
        let t = Instant::now();
        black_box(run());
        a.push(t.elapsed().as_secs_f64() * 1e9 / q as f64);
        let t = Instant::now();
        black_box(other());
        b.push(t.elapsed().as_secs_f64() * 1e9 / q as f64);
    }
    a.sort_by(f64::total_cmp);
    b.sort_by(f64::total_cmp);
    (a[10], b[10])
}

/// `time`: both filters, timed in turns.
fn time_both(p: f64, n: u64, q: u64, hashes: &[u64], probes: &[u64]) {
    let ours = build_ours(hashes, p);
    let xorf = build_xorf8(hashes);
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("load average: {}", load.trim());
    let (o, x) = median_ns(
        q,
        || keyed_ours(&ours, n..n + q),
        || keyed_xorf8(&xorf, n..n + q),
    );
    println!(
        "absent int keys, hashed in the loop: ribbon {o:.2} ns, BinaryFuse8 {x:.2} ns, ratio {:.2}",
        o / x
    );
    let (o, x) = median_ns(
        q,
        || query_ours(&ours, probes),
        || query_xorf8(&xorf, probes),
    );
    println!(
        "absent keys by precomputed hash:     ribbon {o:.2} ns, BinaryFuse8 {x:.2} ns, ratio {:.2}",
        o / x
    );
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("load average: {}", load.trim());
}

/// The process's peak resident set so far, in bytes (`VmHWM`), where Linux reports it.
fn peak_resident_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let parsed = match args.as_slice() {
        [who, p, n, q] => match (p.parse::<f64>(), n.parse::<u64>(), q.parse::<u64>()) {
            (Ok(p), Ok(n), Ok(q)) if ["ours", "xorf", "time"].contains(&who.as_str()) => {
                Some((who.as_str(), p, n, q))
            }
            _ => None,
        },
        _ => None,
    };
    let Some((who, p, n, q)) = parsed else {
        eprintln!("usage: ribbon_work ours|xorf|time RATE KEYS ABSENT_QUERIES");
        return ExitCode::FAILURE;
    };
    let hashes: Vec<u64> = (0..n).map(|i| bloomkit::hash(&i)).collect();
    let probes: Vec<u64> = (n..n + q).map(|i| bloomkit::hash(&i)).collect();
    if who == "time" {
        time_both(p, n, q, &hashes, &probes);
        return ExitCode::SUCCESS;
    }
    let before = peak_resident_bytes();
    // The absent keys are queried twice: by precomputed hash (`query_*`), and as integer
    // keys hashed in the loop (`keyed_*`), as the `compare` harness does.
    let (bits_per_key, after, found, keyed) = if who == "ours" {
        let f = build_ours(&hashes, p);
        let after = peak_resident_bytes();
        let found = query_ours(&f, &probes);
        (f.bits_per_key(), after, found, keyed_ours(&f, n..n + q))
    } else {
        let f = build_xorf8(&hashes);
        let after = peak_resident_bytes();
        let bits = f.fingerprints.len() as f64 * 8.0 / n.max(1) as f64;
        let found = query_xorf8(&f, &probes);
        (bits, after, found, keyed_xorf8(&f, n..n + q))
    };
    assert_eq!(found, keyed, "the same keys, hashed alike");
    println!(
        "{who}: {n} keys, {bits_per_key:.3} bits/key, {found} of {q} absent keys answered maybe"
    );
    if let (Some(before), Some(after)) = (before, after) {
        println!(
            "peak resident: {before} bytes before the build, {after} after: {:.2} bytes per key \
             for the build (filter included)",
            (after.saturating_sub(before)) as f64 / n.max(1) as f64
        );
    }
    ExitCode::SUCCESS
}
