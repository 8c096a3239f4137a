//! `compare`: bloomkit beside the peer crates, in one run on the same keys; markdown on
//! stdout, progress on stderr.
//!
//! ```text
//! cargo run --release -p bloomkit-bench --features peers --bin compare -- \
//!     [--quick] [--regime cache|memory|limit|all] [--keys int|string|all]
//! ```

use std::io::Write;
use std::process::ExitCode;
use std::time::Instant;

use bloomkit_bench::measure::{self, Config, Outcome, Regime};
use bloomkit_bench::peers::{self, targets, PeerKey};
use bloomkit_bench::timing::load_average;
use bloomkit_bench::{memlimit, ours, report};

const USAGE: &str = "usage: compare [--quick] [--regime cache|memory|limit|all] \
     [--keys int|string|all] [--only NAME,NAME...]";

/// What to run.
struct Args {
    quick: bool,
    regimes: Vec<Regime>,
    limit: bool,
    ints: bool,
    strings: bool,
    /// Measure only the contenders whose name starts with one of these (all when empty):
    /// `--only 'BlockedBloomFilter,SectorBloomFilter,fastbloom BloomFilter'` sets the two
    /// layouts beside fastbloom, for runs repeated in turns.
    only: Vec<String>,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        quick: false,
        regimes: vec![Regime::Cache, Regime::Memory],
        limit: true,
        ints: true,
        strings: true,
        only: Vec::new(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--quick" => args.quick = true,
            "--regime" => match it.next().as_deref() {
                Some("cache") => (args.regimes, args.limit) = (vec![Regime::Cache], false),
                Some("memory") => (args.regimes, args.limit) = (vec![Regime::Memory], false),
                Some("limit") => (args.regimes, args.limit) = (vec![], true),
                Some("all") => {
                    (args.regimes, args.limit) = (vec![Regime::Cache, Regime::Memory], true)
                }
                other => {
                    return Err(format!(
                        "--regime takes cache, memory, limit or all, not {other:?}"
                    ))
                }
            },
            "--keys" => match it.next().as_deref() {
                Some("int") => (args.ints, args.strings) = (true, false),
                Some("string") => (args.ints, args.strings) = (false, true),
                Some("all") => (args.ints, args.strings) = (true, true),
                other => return Err(format!("--keys takes int, string or all, not {other:?}")),
            },
            "--only" => match it.next() {
                Some(names) => args.only = names.split(',').map(str::to_string).collect(),
                None => return Err("--only takes names, separated by commas".to_string()),
            },
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(args)
}

/// Measures every contender, bloomkit's first, one at a time (so only one large filter is
/// ever alive), reporting progress on stderr.
fn run<K: PeerKey + ?Sized>(regime: Regime, config: &Config, only: &[String]) -> Vec<Outcome> {
    let mut contenders = ours::contenders::<K>();
    contenders.extend(peers::contenders::<K>());
    contenders
        .iter()
        .filter(|c| only.is_empty() || only.iter().any(|o| c.info().name.starts_with(o.as_str())))
        .map(|c| {
            let info = c.info();
            eprint!(
                "[{} / {} keys] {} ({}) ... ",
                regime.label(),
                K::NAME,
                info.name,
                info.hashing.label()
            );
            let _ = std::io::stderr().flush();
            let start = Instant::now();
            let outcome = measure::measure(c.as_ref(), regime, config);
            match &outcome {
                Outcome::Measured(r) => eprintln!(
                    "{:.1}s: n={} insert {:.1} ns, present {:.1} ns, absent {:.1} ns, fp {:.3}%",
                    start.elapsed().as_secs_f64(),
                    r.n,
                    r.insert_ns,
                    r.present_ns,
                    r.absent_ns,
                    r.fp_rate() * 100.0
                ),
                Outcome::Skipped { reason, .. } => eprintln!("skipped: {reason}"),
            }
            outcome
        })
        .collect()
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(args) => args,
        Err(message) => {
            if !message.is_empty() {
                eprintln!("compare: {message}");
            }
            eprintln!("{USAGE}");
            return if message.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(2)
            };
        }
    };
    let config = if args.quick {
        Config::quick()
    } else {
        Config::full()
    };

    println!("# bloomkit beside the peer crates\n");
    println!(
        "Every filter built for {}% false positives (or its closest knob); in cache: at most {} \
         each, {} absent keys; out of cache: at least {} each, samples of {} present and {} \
         absent keys. Times are ns per operation, hashing included, one thread; medians of \
         repetitions (see crates/bloomkit-bench/src/measure.rs).{}\n",
        config.fp_rate * 100.0,
        report::bytes(config.cache_bytes),
        report::count(config.cache_absent),
        report::bytes(config.memory_bytes),
        report::count(config.memory_sample),
        report::count(config.memory_sample),
        if args.quick {
            " **Quick run: sizes shrunk; the figures only show that it runs.**"
        } else {
            ""
        }
    );

    println!(
        "Load average at the start (1, 5, 15 min): {}.\n",
        load_average()
    );
    // Which kernels the CPU gave bloomkit's layouts, chosen at run time.
    let sector = bloomkit::SectorBloomFilter::new(1, 0.01).map_or("unknown", |f| f.kernel());
    println!(
        "Kernels: blocked filters {}, sector filters {sector}.\n",
        bloomkit::query_kernel()
    );

    let mut checks = Vec::new();
    for &regime in &args.regimes {
        let mut tables: Vec<(&str, Vec<Outcome>)> = Vec::new();
        if args.ints {
            tables.push(("int", run::<u64>(regime, &config, &args.only)));
        }
        if args.strings {
            tables.push(("string", run::<str>(regime, &config, &args.only)));
        }
        for (keys, outcomes) in &tables {
            let title = format!("{}, {} keys", regime.label(), keys);
            println!("## {title}\n");
            println!("{}", report::figures_table(outcomes));
            println!("Ratios: the peer's time over bloomkit's (above 1×: bloomkit is faster).\n");
            println!("{}", report::ratios_table(outcomes));
            checks.extend(targets::check(&title, outcomes, config.fp_rate));
        }
    }

    if args.limit {
        let (bytes, reads) = if args.quick {
            (64 << 20, 2_000_000)
        } else {
            (1 << 30, 20_000_000)
        };
        eprint!("[memory limit] {} buffer ... ", report::bytes(bytes));
        let start = Instant::now();
        let limits = memlimit::measure(bytes, reads);
        eprintln!("{:.1}s", start.elapsed().as_secs_f64());
        println!(
            "## The memory system's limit\n\nRandom 64-byte reads over a {} buffer, {} reads \
             each, one thread.\n",
            report::bytes(limits.buffer_bytes),
            report::count(limits.reads)
        );
        println!("{}", memlimit::table(&limits));
    }

    println!(
        "Load average at the end (1, 5, 15 min): {}.\n",
        load_average()
    );

    if !checks.is_empty() {
        println!("## Targets\n");
        println!("{}", targets::table(&checks));
    }
    ExitCode::SUCCESS
}
