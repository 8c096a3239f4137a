//! `ribbon_work`: one build and a run of absent-key queries of bloomkit's `RibbonFilter`, or
//! of xorf's `BinaryFuse8` for comparison, from the same `bloomkit::hash`es, for counting
//! instructions under callgrind (repeatable on a loaded machine, where timings are not), and
//! the build's peak memory:
//!
//! ```text
//! cargo build --release -p bloomkit-bench --features peers --bin ribbon_work
//! valgrind --tool=callgrind --toggle-collect='*ribbon_work::query_*' \
//!     target/release/ribbon_work ours 0.01 58000 1000000
//! valgrind --tool=callgrind --toggle-collect='*ribbon_work::build_*' \
//!     target/release/ribbon_work xorf 0.01 58000 1000000
//! target/release/ribbon_work ours 0.01 100000000 0     # peak memory of a large build
//! ```
//!
//! Arguments: `ours` or `xorf`, the ribbon's target rate (xorf's `BinaryFuse8` has none),
//! keys, absent queries. Prints the answers counted, so no work can be optimized away, and
//! the process's peak resident memory (`VmHWM`) before and after the build, where the system
//! reports it. The `build_*` and `query_*` functions are the measured parts; key generation
//! and hashing are outside them.

use std::hint::black_box;
use std::process::ExitCode;

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
            (Ok(p), Ok(n), Ok(q)) if who == "ours" || who == "xorf" => {
                Some((who.as_str(), p, n, q))
            }
            _ => None,
        },
        _ => None,
    };
    let Some((who, p, n, q)) = parsed else {
        eprintln!("usage: ribbon_work ours|xorf RATE KEYS ABSENT_QUERIES");
        return ExitCode::FAILURE;
    };
    let hashes: Vec<u64> = (0..n).map(|i| bloomkit::hash(&i)).collect();
    let probes: Vec<u64> = (n..n + q).map(|i| bloomkit::hash(&i)).collect();
    let before = peak_resident_bytes();
    let (bits_per_key, after, found) = if who == "ours" {
        let f = build_ours(&hashes, p);
        let after = peak_resident_bytes();
        (f.bits_per_key(), after, query_ours(&f, &probes))
    } else {
        let f = build_xorf8(&hashes);
        let after = peak_resident_bytes();
        let bits = f.fingerprints.len() as f64 * 8.0 / n.max(1) as f64;
        (bits, after, query_xorf8(&f, &probes))
    };
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
