//! `fuse_work`: one build and a run of queries of bloomkit's `BinaryFuseFilter` or xorf's
//! `BinaryFuse8`/`BinaryFuse16`, from the same `bloomkit::hash`es, for counting instructions
//! under callgrind (repeatable on a loaded machine, where timings are not):
//!
//! ```text
//! cargo build --release -p bloomkit-bench --features peers --bin fuse_work
//! valgrind --tool=callgrind --toggle-collect='*fuse_work::build_*' \
//!     target/release/fuse_work ours 8 58000 1000000
//! valgrind --tool=callgrind --toggle-collect='*fuse_work::query_*' \
//!     target/release/fuse_work xorf 8 58000 1000000
//! ```
//!
//! Arguments: `ours` or `xorf`, fingerprint bits (8 or 16), keys, absent queries. Prints the
//! answers counted, so no work can be optimized away. The `build_*` and `query_*` functions
//! are the measured parts; key generation and hashing are outside them.

use std::hint::black_box;
use std::process::ExitCode;

use bloomkit::BinaryFuseFilter;
use xorf::{BinaryFuse16, BinaryFuse8, Filter as _};

#[inline(never)]
fn build_ours(hashes: &[u64], bits: u32) -> BinaryFuseFilter {
    BinaryFuseFilter::builder(0.01)
        .fingerprint_bits(bits)
        .build_from_hashes(hashes)
        .expect("build")
}

#[inline(never)]
fn build_xorf8(hashes: &[u64]) -> BinaryFuse8 {
    BinaryFuse8::try_from(hashes).expect("build")
}

#[inline(never)]
fn build_xorf16(hashes: &[u64]) -> BinaryFuse16 {
    BinaryFuse16::try_from(hashes).expect("build")
}

#[inline(never)]
fn query_ours(f: &BinaryFuseFilter, probes: &[u64]) -> usize {
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
fn query_xorf16(f: &BinaryFuse16, probes: &[u64]) -> usize {
    probes
        .iter()
        .filter(|&&h| f.contains(&black_box(h)))
        .count()
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let parsed = match args.as_slice() {
        [who, bits, n, q] => match (bits.parse::<u32>(), n.parse::<u64>(), q.parse::<u64>()) {
            (Ok(bits @ (8 | 16)), Ok(n), Ok(q)) if who == "ours" || who == "xorf" => {
                Some((who.as_str(), bits, n, q))
            }
            _ => None,
        },
        _ => None,
    };
    let Some((who, bits, n, q)) = parsed else {
        eprintln!("usage: fuse_work ours|xorf 8|16 KEYS ABSENT_QUERIES");
        return ExitCode::FAILURE;
    };
    let hashes: Vec<u64> = (0..n).map(|i| bloomkit::hash(&i)).collect();
    let probes: Vec<u64> = (n..n + q).map(|i| bloomkit::hash(&i)).collect();
    let (built, found) = match (who, bits) {
        ("ours", _) => {
            let f = build_ours(&hashes, bits);
            (f.num_slots() as usize, query_ours(&f, &probes))
        }
        (_, 8) => {
            let f = build_xorf8(&hashes);
            (f.len(), query_xorf8(&f, &probes))
        }
        _ => {
            let f = build_xorf16(&hashes);
            (f.len(), query_xorf16(&f, &probes))
        }
    };
    println!("{who} {bits}-bit: {built} slots, {found} of {q} absent keys answered maybe");
    ExitCode::SUCCESS
}
