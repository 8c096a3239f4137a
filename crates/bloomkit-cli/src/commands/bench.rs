//! `bloomkit bench`: bloomkit's own kinds measured on this machine, to size hardware.
//!
//! The timing loops, key generators and tables are the benchmark harness's core
//! (`bloomkit-bench`, without its peer crates): the same code `BENCHMARKS.md` comes from, so
//! a user's figures compare with the published ones.

use std::io::Write as _;
use std::time::Instant;

use bloomkit_bench::keys::Key;
use bloomkit_bench::measure::{self, Config, Outcome, Regime};
use bloomkit_bench::{ours, report};

use crate::error::Result;
use crate::output;

/// What `bench` measures.
pub struct Options {
    /// Filters of about 64 KiB (in the core's caches).
    pub cache: bool,
    /// Filters of at least 512 MiB (in main memory), or 8 MiB with `quick`.
    pub memory: bool,
    /// 8-byte integer keys.
    pub ints: bool,
    /// 16- to 32-byte string keys.
    pub strings: bool,
    /// Shrunk sizes: finishes in well under a minute.
    pub quick: bool,
    /// The target false-positive rate.
    pub fp_rate: f64,
}

/// Measures every bloomkit kind in the chosen regimes and prints one table per regime and
/// key type.
///
/// # Errors
///
/// A bad rate (checked before anything is measured), or a failed write to stdout.
pub fn run(options: &Options) -> Result<()> {
    bloomkit::BloomFilter::new(1, options.fp_rate)?;
    let mut config = if options.quick {
        Config::quick()
    } else {
        Config::full()
    };
    config.fp_rate = options.fp_rate;

    output::print(&format!(
        "bloomkit {} on this machine: one thread, hashing included, medians of repetitions; \
         query kernel: {}.\n\n",
        env!("CARGO_PKG_VERSION"),
        bloomkit::query_kernel()
    ))?;
    let regimes = [
        (options.cache, Regime::Cache),
        (options.memory, Regime::Memory),
    ];
    for regime in regimes.iter().filter(|(on, _)| *on).map(|&(_, r)| r) {
        if options.ints {
            table::<u64>(regime, &config)?;
        }
        if options.strings {
            table::<str>(regime, &config)?;
        }
    }
    Ok(())
}

/// Measures every kind for one regime and key type, reporting progress on stderr, and
/// prints the table.
fn table<K: Key + ?Sized>(regime: Regime, config: &Config) -> Result<()> {
    let outcomes: Vec<Outcome> = ours::contenders::<K>()
        .iter()
        .map(|c| {
            eprint!(
                "[{} / {} keys] {} ... ",
                regime.label(),
                K::NAME,
                c.info().name
            );
            let _ = std::io::stderr().flush();
            let start = Instant::now();
            let outcome = measure::measure(c.as_ref(), regime, config);
            match &outcome {
                Outcome::Measured(_) => eprintln!("{:.1}s", start.elapsed().as_secs_f64()),
                Outcome::Skipped { reason, .. } => eprintln!("skipped: {reason}"),
            }
            outcome
        })
        .collect();
    output::print(&format!(
        "## {}, {} keys\n\n{}\n",
        regime.label(),
        K::NAME,
        report::figures_table(&outcomes)
    ))
}
