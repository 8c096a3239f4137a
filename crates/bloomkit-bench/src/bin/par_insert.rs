//! `par_insert_many` against `insert_many` on this machine: a fresh blocked filter planned
//! for the keys at 1%, the keys (8-byte integers) made before timing, hashing included.
//!
//! ```text
//! cargo run --release -p bloomkit-bench --bin par_insert -- [--repeat 7]
//! RAYON_NUM_THREADS=3 cargo run --release -p bloomkit-bench --bin par_insert
//! ```
//!
//! Each size is built `--repeat` times each way, alternating which goes first, in rayon's global pool (as
//! many threads as cores, unless `RAYON_NUM_THREADS` says otherwise: with 3 or more on as
//! many cores, `par_insert_many` takes its parallel path for large inputs); the medians are
//! printed as a markdown table, with the pool's size and the load average.

use std::time::Instant;

use bloomkit::BlockedBloomFilter;
use bloomkit_bench::keys::int_key;
use bloomkit_bench::timing::{load_average, median};

const SIZES: [u64; 5] = [10_000, 100_000, 1_000_000, 4_000_000, 16_000_000];

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let repeat: usize = args
        .iter()
        .position(|a| a == "--repeat")
        .and_then(|i| args.get(i + 1))
        .map_or(7, |v| v.parse().expect("--repeat N"));
    println!(
        "cores: {}, RAYON_NUM_THREADS: {}; {repeat} builds of each; load average {}",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        std::env::var("RAYON_NUM_THREADS").unwrap_or_else(|_| "unset (one a core)".into()),
        load_average()
    );
    println!();
    println!("| keys | insert_many (ms) | par_insert_many (ms) | ratio |");
    println!("|---|---|---|---|");
    for n in SIZES {
        let keys: Vec<u64> = (0..n).map(int_key).collect();
        let empty = BlockedBloomFilter::new(n, 0.01).expect("the filter fits");
        let (mut seq, mut par) = (Vec::new(), Vec::new());
        for rep in 0..repeat {
            // Alternate which goes first, so that neither is always the one that runs right
            // after the other (and, on a loaded machine, is the one the scheduler preempts).
            let mut f = empty.clone();
            let mut g = empty.clone();
            let mut time_seq = || {
                let start = Instant::now();
                let a = f.insert_many(&keys);
                seq.push(start.elapsed().as_secs_f64() * 1e3);
                a
            };
            let mut time_par = || {
                let start = Instant::now();
                let b = g.par_insert_many(&keys);
                par.push(start.elapsed().as_secs_f64() * 1e3);
                b
            };
            let (a, b) = if rep % 2 == 0 {
                let a = time_seq();
                (a, time_par())
            } else {
                let b = time_par();
                (time_seq(), b)
            };
            assert!(a == b && f == g, "the builds differ");
        }
        let (s, p) = (median(seq), median(par));
        println!("| {n} | {s:.2} | {p:.2} | {:.2} |", p / s);
    }
    println!("\nload average at end: {}", load_average());
}
