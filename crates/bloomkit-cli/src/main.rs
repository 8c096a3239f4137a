//! `bloomkit`: size, build, query, inspect and merge Bloom filters from the command line.
//!
//! This file holds the flags (clap derive) and the dispatch; each subcommand lives in
//! `commands/`, and every piece of filter logic in the `bloomkit` library. Errors print as
//! one line, `bloomkit: <message>`, and exit with status 1.

// One call into the C allocator needs `unsafe` (`malloc.rs`, which says why); nothing else
// may.
#![deny(unsafe_code)]

mod commands;
mod error;
mod files;
mod human;
mod keys;
mod malloc;
mod output;
mod progress;

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

use crate::error::Result;

/// Approximate membership filters: "definitely not" or "maybe" for a key, in a few bits per
/// key.
///
/// Keys are lines of text (or of any bytes); filters are files in bloomkit's checksummed
/// format, readable by the bloomkit Rust library (`AnyFilter::from_bytes`), where a line
/// `apple` is found by `contains("apple")`.
#[derive(Parser)]
#[command(name = "bloomkit", version, propagate_version = true)]
#[command(after_long_help = "\
Examples:
  bloomkit demo                                  # every kind, measured on this machine
  bloomkit size --items 1000000 --fp-rate 0.01   # how big, without building
  bloomkit build -o users.bkf users.txt          # one key per line
  bloomkit query users.bkf alice bob             # maybe<TAB>alice / no<TAB>bob")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The subcommands; each variant's doc comment is its help text.
#[derive(Subcommand)]
enum Command {
    /// Print how big a filter must be for N keys at a false-positive rate
    ///
    /// For each kind: bits, bytes, bits per key, hash probes per key, and the false-positive
    /// rate the sizing math predicts. Nothing is allocated, so any size answers at once.
    #[command(after_long_help = "\
Examples:
  bloomkit size --items 1000000 --fp-rate 0.01
  bloomkit size --items 1000000000000 --fp-rate 0.001")]
    Size {
        /// Number of distinct keys the filter will hold
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
        items: u64,
        /// Target false-positive rate, strictly between 0 and 1 (0.01 is 1%)
        #[arg(
            long,
            value_name = "P",
            default_value_t = 0.01,
            allow_negative_numbers = true
        )]
        fp_rate: f64,
    },

    /// Build a filter file from keys, one per line
    ///
    /// Each line of each INPUT is one key: its bytes without the trailing newline (and
    /// without a carriage return before it). Lines need not be UTF-8. An empty line is the
    /// empty key. With no INPUT, or with `-`, keys come from standard input.
    ///
    /// Without --items (the default), every key's 8-byte hash is held in memory, and the
    /// filter is sized for exactly the number of distinct keys: 8 bytes of temporary memory
    /// per key. With --items, keys stream into a filter sized for that many, using no
    /// memory beyond the filter; more keys than planned raise the false-positive rate.
    ///
    /// The file is written to a temporary file next to OUTPUT and renamed over it once
    /// complete, so a failed build never leaves half a filter.
    #[command(after_long_help = "\
Examples:
  bloomkit build -o users.bkf users.txt
  cut -d, -f1 orders.csv | bloomkit build --kind classic --fp-rate 0.001 -o orders.bkf
  bloomkit build --items 100000000 -o big.bkf part1.txt part2.txt")]
    Build {
        /// Filter kind: blocked is the fast default, classic a little smaller, ribbon the
        /// smallest (static); counting and cuckoo allow removal in the library; scalable grows
        /// past --items; aging rotates generations
        #[arg(long, value_enum, default_value_t = KindArg::Blocked)]
        kind: KindArg,
        /// With --kind scalable: blocked layers (the default, one cache line per layer per
        /// query) or classic ones (about 12% smaller once grown, as RedisBloom's)
        #[arg(long, value_enum, value_name = "LAYOUT")]
        layout: Option<LayoutArg>,
        /// Size for this many keys and stream them, instead of counting distinct keys first
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
        items: Option<u64>,
        /// Target false-positive rate, strictly between 0 and 1 (0.01 is 1%)
        #[arg(
            long,
            value_name = "P",
            default_value_t = 0.01,
            allow_negative_numbers = true
        )]
        fp_rate: f64,
        /// Where to write the filter
        #[arg(short, long, value_name = "FILE")]
        output: PathBuf,
        /// Files of keys, one per line; `-` or none for standard input
        #[arg(value_name = "INPUT")]
        inputs: Vec<PathBuf>,
    },

    /// Ask a filter whether keys may be in it
    ///
    /// Prints one line per key, in input order: `maybe`, a tab and the key if the key may be
    /// in the filter, or `no`, a tab and the key if it definitely is not. "maybe" is wrong
    /// at about the filter's false-positive rate; "no" is always right. The exit status is
    /// 0 whatever the answers.
    ///
    /// Keys come from the arguments or, when there are none, from standard input, one per
    /// line (as `build` reads them). Put `--` before keys that start with `-`.
    #[command(after_long_help = "\
Examples:
  bloomkit query users.bkf alice bob
  bloomkit query users.bkf < candidates.txt | grep ^maybe | cut -f2
  bloomkit query users.bkf -- -dash-key")]
    Query {
        /// The filter file
        file: PathBuf,
        /// Keys to look up; none to read them from standard input
        #[arg(value_name = "KEY")]
        keys: Vec<OsString>,
    },

    /// Show a filter file's parameters and how full it is
    ///
    /// Kind, format version, hash and seed, size on disk and in memory, hash probes per
    /// key, how many inserts changed it, its fill, and the key count and false-positive rate
    /// estimated from the fill. One `name: value` per line.
    #[command(after_long_help = "\
Examples:
  bloomkit info users.bkf
  bloomkit info users.bkf | grep '^fill'")]
    Info {
        /// The filter file
        file: PathBuf,
    },

    /// Combine filters into one holding every key of each
    ///
    /// The filters must have been built with the same kind, number of bits, hash probes and
    /// seed: build them with the same --kind and --fp-rate and with --items set to the same
    /// number. The result's false-positive rate is that of a filter holding all their keys.
    #[command(after_long_help = "\
Examples:
  bloomkit build --items 1000000 -o monday.bkf monday.txt
  bloomkit build --items 1000000 -o tuesday.bkf tuesday.txt
  bloomkit merge monday.bkf tuesday.bkf -o week.bkf")]
    Merge {
        /// The filters to combine (two or more)
        #[arg(value_name = "FILTER", num_args = 2.., required = true)]
        inputs: Vec<PathBuf>,
        /// Where to write the combined filter
        #[arg(short, long, value_name = "FILE")]
        output: PathBuf,
    },

    /// Benchmark bloomkit's kinds on this machine, to size hardware
    ///
    /// For each kind (blocked, classic, atomic, blocked with batched queries, counting,
    /// scalable grown 100×, cuckoo, ribbon): ns per insert (per key built, for ribbon), ns
    /// per query of present and absent keys (and by precomputed hash), bits per key and the
    /// measured false-positive rate, for filters in cache (about 64 KiB) and in main memory
    /// (at least 512 MiB, queries at random lines). The same harness as BENCHMARKS.md,
    /// without the peer crates. The full run takes many minutes and a few GiB of memory;
    /// --quick finishes in under a minute.
    #[command(after_long_help = "\
Examples:
  bloomkit bench --quick
  bloomkit bench --regime cache --keys string
  bloomkit bench --regime memory > my-machine.md")]
    Bench {
        /// Which filter sizes to measure
        #[arg(long, value_enum, default_value_t = RegimeArg::All)]
        regime: RegimeArg,
        /// Which keys to measure with
        #[arg(long, value_enum, default_value_t = KeysArg::All)]
        keys: KeysArg,
        /// Shrunk sizes (8 MiB "out of cache"): shows it runs, in under a minute
        #[arg(long)]
        quick: bool,
        /// Target false-positive rate, strictly between 0 and 1 (0.01 is 1%)
        #[arg(
            long,
            value_name = "P",
            default_value_t = 0.01,
            allow_negative_numbers = true
        )]
        fp_rate: f64,
    },

    /// Run a RedisBloom-compatible server (BF.* and CF.* over the Redis protocol)
    ///
    /// Speaks RESP2 and RESP3, so redis-cli, redis-py and redis-rs work unchanged. Prints
    /// `listening on ADDR` once it accepts clients (with the real port for `--port 0`), and
    /// runs until Ctrl-C, SIGTERM or a client's SHUTDOWN, finishing the commands in flight
    /// before it exits.
    #[command(after_long_help = "\
Examples:
  bloomkit serve
  bloomkit serve --port 7000 --requirepass s3cret --maxmemory 2gb
  redis-cli BF.ADD users alice")]
    Serve {
        /// Address to listen on (loopback by default: not reachable from the network)
        #[arg(long, value_name = "ADDR", default_value = "127.0.0.1")]
        bind: String,
        /// TCP port; 0 picks a free one
        #[arg(long, value_name = "N", default_value_t = 6379)]
        port: u16,
        /// Directory for snapshots and the append-only log
        #[arg(long, value_name = "PATH", default_value = "./bloomkit-data")]
        dir: PathBuf,
        /// When the log is synced to disk: always (before each reply), everysec, or no
        #[arg(long, value_name = "POLICY", default_value = "everysec",
              value_parser = ["always", "everysec", "no"])]
        appendfsync: String,
        /// Require clients to AUTH with this password
        #[arg(long, value_name = "SECRET")]
        requirepass: Option<String>,
        /// Most memory the filters may use (bytes, or 100mb, 2gb...); 0 for no limit
        #[arg(long, value_name = "BYTES", default_value = "0", value_parser = parse_memory)]
        maxmemory: u64,
        /// Most clients connected at once
        #[arg(long, value_name = "N", default_value_t = 10_000,
              value_parser = clap::value_parser!(u64).range(1..))]
        maxclients: u64,
        /// Worker threads serving clients (default: one per core). Commands on different
        /// keys run in parallel; on a machine shared with the clients, fewer can be faster
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
        threads: Option<u16>,
    },

    /// Measure every filter kind on this machine: size, accuracy and speed
    ///
    /// Builds a classic, a blocked and an atomic filter for N keys, inserts N present keys
    /// and queries N absent ones, timing both, and prints the predicted and measured
    /// false-positive rates side by side. Holds all 2N keys in memory as strings, about 80
    /// bytes a key.
    #[command(after_long_help = "\
Examples:
  bloomkit demo
  bloomkit demo --items 10000000 --fp-rate 0.001")]
    Demo {
        /// Keys to insert (and as many absent keys to query)
        #[arg(long, value_name = "N", default_value_t = 1_000_000,
              value_parser = clap::value_parser!(u64).range(1..))]
        items: u64,
        /// Target false-positive rate, strictly between 0 and 1 (0.01 is 1%)
        #[arg(
            long,
            value_name = "P",
            default_value_t = 0.01,
            allow_negative_numbers = true
        )]
        fp_rate: f64,
    },

    /// Serve the explorer: an interactive page of live filters, on 127.0.0.1
    ///
    /// A sixteen-bit filter to add words to and query step by step, the false-positive rate
    /// against the number of hashes, and real filters of every kind built and measured in
    /// the browser. The page and its WebAssembly module (bloomkit itself) are built into this
    /// binary and load nothing from elsewhere. Prints the URL; runs until Ctrl-C.
    #[command(after_long_help = "\
Examples:
  bloomkit explore                 # then open http://127.0.0.1:8765/
  bloomkit explore --port 0        # any free port")]
    Explore {
        /// TCP port on 127.0.0.1; 0 picks a free one
        #[arg(long, value_name = "N", default_value_t = 8765)]
        port: u16,
    },

    /// Draw measured false-positive rates beside their predictions, as an SVG or PNG chart
    ///
    /// For each KIND, real builds: one filter per target rate from 20% to 0.01%, each
    /// planned for and filled with --items distinct keys and probed with --probes keys never
    /// added, drawn as the rate against bits per key (log scale), with the rate the sizing
    /// math predicts beside it. With --fill, one filter per kind planned for --items keys at
    /// --fp-rate and filled from 1/4 to 4 times that, drawn as the rate against the fill.
    /// Prints the figures behind the chart. Needs a font for the chart's text: a system
    /// sans-serif font, or BLOOMKIT_FONT=/path/to/font.ttf.
    #[command(after_long_help = "\
Examples:
  bloomkit plot classic blocked cuckoo ribbon -o rates.svg
  bloomkit plot --fill classic blocked scalable -o overfill.png
  bloomkit plot blocked --items 1000000 --probes 10000000 -o blocked.svg")]
    Plot {
        /// Filter kinds to draw
        #[arg(value_name = "KIND", required = true, value_parser = clap::builder::PossibleValuesParser::new(bloomkit_wasm::lab::Kind::ALL.map(|k| k.name())))]
        kinds: Vec<String>,
        /// Where to write the chart: a name ending in .svg or .png
        #[arg(short, long, value_name = "FILE")]
        output: PathBuf,
        /// Keys each filter is planned for and filled with
        #[arg(long, value_name = "N", default_value_t = 100_000,
              value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
        items: u64,
        /// Absent keys probed for each point
        #[arg(long, value_name = "N", default_value_t = 1_000_000,
              value_parser = clap::value_parser!(u64).range(1..=1_000_000_000))]
        probes: u64,
        /// Draw the rate against the fill of one overfilled filter instead
        #[arg(long)]
        fill: bool,
        /// With --fill: the target rate the filter is planned for (0.01 is 1%)
        #[arg(
            long,
            value_name = "P",
            default_value_t = 0.01,
            allow_negative_numbers = true
        )]
        fp_rate: f64,
    },
}

/// `--maxmemory`: bytes, or a size with Redis's units (`100mb`, `2gb`, `1k`).
fn parse_memory(text: &str) -> std::result::Result<u64, String> {
    bloomkit_server::config::parse_memory(text.as_bytes()).ok_or_else(|| {
        format!("'{text}' is not a memory size: use bytes, or a number with k, kb, m, mb, g or gb")
    })
}

/// Which filter sizes `bench` measures.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum RegimeArg {
    /// Filters of about 64 KiB, in the core's caches
    Cache,
    /// Filters of at least 512 MiB, in main memory (minutes)
    Memory,
    /// Both
    All,
}

/// Which keys `bench` measures with.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum KeysArg {
    /// 8-byte integers
    Int,
    /// 16- to 32-byte strings
    String,
    /// Both
    All,
}

/// The filter kinds `build` offers.
#[derive(Clone, Copy, ValueEnum)]
enum KindArg {
    /// Probes anywhere in the bit array: the smallest Bloom filter for its rate
    Classic,
    /// All probes of a key in one 64-byte cache line: one cache miss per query
    Blocked,
    /// 4-bit counters instead of bits: keys can be removed (about 4× the memory)
    Counting,
    /// A chain of growing blocked layers: no need to know the number of keys
    Scalable,
    /// Fingerprints in buckets: removable and countable, smaller below about 3%
    Cuckoo,
    /// Static, solved from all keys at once: the smallest (≈7.3 bits/key for 0.78%)
    Ribbon,
    /// Two generations of blocked filters that rotate out: "seen recently"
    Aging,
}

impl From<KindArg> for bloomkit::FilterKind {
    fn from(kind: KindArg) -> Self {
        match kind {
            KindArg::Classic => bloomkit::FilterKind::Classic,
            KindArg::Blocked => bloomkit::FilterKind::Blocked,
            KindArg::Counting => bloomkit::FilterKind::Counting,
            KindArg::Scalable => bloomkit::FilterKind::Scalable,
            KindArg::Cuckoo => bloomkit::FilterKind::Cuckoo,
            KindArg::Ribbon => bloomkit::FilterKind::Ribbon,
            KindArg::Aging => bloomkit::FilterKind::Aging,
        }
    }
}

/// `--layout`: how a scalable filter lays out its layers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum LayoutArg {
    /// One cache line per layer per query
    Blocked,
    /// Textbook layers, fewest bits
    Classic,
}

impl From<LayoutArg> for bloomkit::LayerLayout {
    fn from(layout: LayoutArg) -> Self {
        match layout {
            LayoutArg::Blocked => bloomkit::LayerLayout::Blocked,
            LayoutArg::Classic => bloomkit::LayerLayout::Classic,
        }
    }
}

fn main() -> ExitCode {
    match run(Cli::parse().command) {
        Ok(()) => ExitCode::SUCCESS,
        // Whoever read our output closed it early (`| head`): they have what they wanted.
        Err(e) if e.is_broken_pipe() => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bloomkit: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Runs one subcommand.
fn run(command: Command) -> Result<()> {
    match command {
        Command::Size { items, fp_rate } => commands::size::run(items, fp_rate),
        Command::Build {
            kind,
            layout,
            items,
            fp_rate,
            output,
            inputs,
        } => commands::build::run(
            kind.into(),
            layout.map(Into::into),
            items,
            fp_rate,
            &output,
            &inputs,
        ),
        Command::Query { file, keys } => commands::query::run(&file, &keys),
        Command::Info { file } => commands::info::run(&file),
        Command::Merge { inputs, output } => commands::merge::run(&inputs, &output),
        Command::Demo { items, fp_rate } => commands::demo::run(items, fp_rate),
        Command::Serve {
            bind,
            port,
            dir,
            appendfsync,
            requirepass,
            maxmemory,
            maxclients,
            threads,
        } => commands::serve::run(
            bloomkit_server::config::Config {
                bind,
                port,
                dir,
                // Restricted to the three names by clap's value parser.
                appendfsync: appendfsync.parse().map_err(
                    |e: bloomkit_server::persist::ParsePolicyError| {
                        error::Error::Message(e.to_string())
                    },
                )?,
                requirepass,
                maxmemory,
                maxclients: usize::try_from(maxclients).unwrap_or(usize::MAX),
            },
            threads.map(usize::from),
        ),
        Command::Explore { port } => commands::explore::run(port),
        Command::Plot {
            kinds,
            output,
            items,
            probes,
            fill,
            fp_rate,
        } => commands::plot::run(&commands::plot::Options {
            kinds: commands::plot::kinds(&kinds),
            output,
            items,
            probes,
            fill,
            fp_rate,
        }),
        Command::Bench {
            regime,
            keys,
            quick,
            fp_rate,
        } => commands::bench::run(&commands::bench::Options {
            cache: regime != RegimeArg::Memory,
            memory: regime != RegimeArg::Cache,
            ints: keys != KeysArg::String,
            strings: keys != KeysArg::Int,
            quick,
            fp_rate,
        }),
    }
}
