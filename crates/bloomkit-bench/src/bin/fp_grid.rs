//! Runs the false-positive grid ([`bloomkit_bench::fp_grid`]) and prints it as markdown.
//!
//! ```text
//! cargo run --release -p bloomkit-bench --bin fp_grid -- \
//!     [--kinds classic,blocked,...] [--sizes 1,10,...] [--targets 0.5,0.1,...] \
//!     [--expected 1600] [--threads 2] [--seed 1]
//! ```
//!
//! Every cell's figures: filters and queries measured, the mean measured rate and its ratio
//! to the target, the mean predicted and estimated rates and their ratios to the measured one.
//! A last table gives each kind's worst ratio to the target.

use bloomkit_bench::fp_grid::{measure_cell, Effort, GridKind};

fn list<T>(value: &str, parse: impl Fn(&str) -> Option<T>) -> Vec<T> {
    value
        .split(',')
        .map(|s| parse(s.trim()).unwrap_or_else(|| panic!("cannot read {s:?}")))
        .collect()
}

fn main() {
    let mut kinds = GridKind::ALL.to_vec();
    let mut sizes: Vec<u64> = (0..=7).map(|e| 10u64.pow(e)).collect();
    let mut targets = vec![0.5, 0.1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7];
    let mut expected = 1600.0;
    let mut threads = 2;
    let mut seed = 1;
    let args: Vec<String> = std::env::args().skip(1).collect();
    for pair in args.chunks(2) {
        let value = pair.get(1).map(String::as_str).unwrap_or("");
        match pair[0].as_str() {
            "--kinds" => kinds = list(value, |s| GridKind::ALL.into_iter().find(|k| k.name() == s)),
            "--sizes" => sizes = list(value, |s| s.parse::<f64>().ok().map(|x| x as u64)),
            "--targets" => targets = list(value, |s| s.parse().ok()),
            "--expected" => expected = value.parse().expect("--expected takes a number"),
            "--threads" => threads = value.parse().expect("--threads takes a number"),
            "--seed" => seed = value.parse().expect("--seed takes a number"),
            other => {
                eprintln!("unknown argument {other}; see the source's doc comment for usage");
                std::process::exit(2);
            }
        }
    }
    println!("| kind | keys | target | filters | queries | measured | measured/target | predicted/measured | estimated/measured |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mut worst: Vec<(GridKind, f64, String)> = Vec::new();
    for &kind in &kinds {
        let mut kind_worst = (0.0, String::new());
        for &n in &sizes {
            for &target in &targets {
                let effort = Effort::for_cell(n, target, expected);
                match measure_cell(kind, n, target, effort, seed, threads) {
                    Ok(r) => {
                        let m = r.measured();
                        println!(
                            "| {} | {n} | {target:e} | {} | {} | {m:.3e} | {:.3} | {:.3} | {:.3} |",
                            kind.name(),
                            effort.filters,
                            r.queries,
                            r.ratio(),
                            r.predicted / m,
                            r.estimated / m,
                        );
                        assert_eq!(r.false_negatives, 0, "{kind:?} forgot keys");
                        if r.ratio() > kind_worst.0 {
                            kind_worst = (r.ratio(), format!("{n} keys at {target:e}"));
                        }
                    }
                    Err(e) => println!("| {} | {n} | {target:e} | refused: {e} |||||", kind.name()),
                }
            }
        }
        worst.push((kind, kind_worst.0, kind_worst.1));
    }
    println!();
    println!("| kind | worst measured/target | where |");
    println!("|---|---:|---|");
    for (kind, ratio, cell) in worst {
        println!("| {} | {ratio:.3} | {cell} |", kind.name());
    }
}
