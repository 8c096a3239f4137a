//! `bloomkit`: size, build, query, inspect, change and merge membership filters from the
//! command line.
//!
//! This file holds the flags (clap derive), the dispatch and the exit statuses; each
//! subcommand lives in `commands/`, the library's list of kinds as `--kind` in `kinds.rs`,
//! counts of keys as people write them in `count.rs`, files and their locks in `files.rs`, and
//! every piece of filter logic in the `bloomkit` library. Errors, clap's own included, print as one line,
//! `bloomkit: <message>`, and exit with status 2 (see [`Status`]).

// One call into the C allocator needs `unsafe` (`malloc.rs`, which says why); nothing else
// may.
#![deny(unsafe_code)]

mod commands;
mod count;
mod error;
mod files;
mod human;
mod keys;
mod kinds;
mod malloc;
mod output;
mod progress;

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::builder::TypedValueParser;
use clap::error::ErrorKind;
use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};

use bloomkit::FilterKind;

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
  bloomkit size --items 1000000 --fp-rate 1%     # how big, without building
  bloomkit build -o users.bkf users.txt          # one key per line
  bloomkit query users.bkf alice bob             # maybe<TAB>alice / no<TAB>bob
  if bloomkit query -q users.bkf alice; then echo maybe; fi

Exit status:
  0  success (for query -q: every key may be in the filter)
  1  query -q only: some key is definitely not in the filter
  2  an error, usage errors included; one line on standard error says what and how to fix it")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The subcommands; each variant's doc comment is its help text.
#[derive(Subcommand)]
enum Command {
    /// Print how big a filter must be for N keys at a false-positive rate
    ///
    /// For every kind: bits, bytes, bits per key, hash probes per key (for the Bloom kinds),
    /// and the false-positive rate the sizing math predicts, then a note on the rows that need
    /// one. Nothing is allocated, so any size answers at once.
    #[command(after_long_help = "\
Examples:
  bloomkit size --items 1000000 --fp-rate 0.01
  bloomkit size --items 1000000000000 --fp-rate 0.1%")]
    Size {
        /// Number of distinct keys the filter will hold (1000000, 1,000,000, 1e6 and 1M are
        /// the same); for aging, the keys of one generation
        #[arg(long, value_name = "N", value_parser = count::count_in(1, u64::MAX))]
        items: u64,
        #[command(flatten)]
        rate: FpRate,
    },

    /// Build a filter file from keys, one per line
    ///
    /// Each line of each INPUT is one key: its bytes without the trailing newline (and
    /// without a carriage return before it). Lines need not be UTF-8. An empty line is the
    /// empty key. With no INPUT, or with `-`, keys come from standard input.
    ///
    /// Without --items (the default), every key's 8-byte hash is held in memory, and the
    /// filter is sized for exactly the keys read: 8 bytes of temporary memory per key. With
    /// --items, keys stream into a filter sized for that many, using no memory beyond the
    /// filter; a build whose keys push the estimated rate past twice the target fails,
    /// naming the --items it needs, unless --force is given. So does an empty input.
    ///
    /// Every line is inserted as the kind's own insert takes it: a counting or cuckoo filter
    /// holds each copy of a repeated line (a later removal takes one), the Bloom kinds hold
    /// a key once. An aging filter's generations take the lines in input order, oldest
    /// first: the first half of the lines goes to the older generation, which the next
    /// `bloomkit rotate` forgets.
    ///
    /// The file is written to a temporary file next to OUTPUT and renamed over it once
    /// complete, so a failed build never leaves half a filter; an OUTPUT that exists is
    /// replaced under its lock, after any `insert` (or other command) changing it has
    /// finished. `-o -` writes it to standard output instead, and the summary to standard
    /// error. OUTPUT may not be one of the INPUTs.
    #[command(after_long_help = "\
Examples:
  bloomkit build -o users.bkf users.txt
  cut -d, -f1 orders.csv | bloomkit build --kind classic --fp-rate 0.1% -o orders.bkf
  bloomkit build --items 100000000 -o big.bkf part1.txt part2.txt
  bloomkit build --kind counting -o live.bkf users.txt && bloomkit remove live.bkf alice")]
    Build {
        /// Filter kind: blocked is the default (sector is faster, for 2% more memory at 1%
        /// and much more at coarse rates), classic a little smaller, ribbon the smallest
        /// (static); counting and cuckoo take `bloomkit remove`; scalable grows past --items;
        /// aging rotates generations (`bloomkit rotate`)
        #[arg(long, value_name = "KIND", default_value = FilterKind::DEFAULT.name(),
              value_parser = kinds::kind_parser())]
        kind: FilterKind,
        /// Size for this many keys and stream them, instead of counting the keys first
        /// (1000000, 1,000,000, 1e6 and 1M are the same); for aging, the keys of each
        /// generation: the lines rotate into the next generation every N
        #[arg(long, value_name = "N", value_parser = count::count_in(1, u64::MAX))]
        items: Option<u64>,
        /// With --kind scalable: blocked layers (the default, one cache line per layer per
        /// query) or classic ones (about 12% smaller once grown, as RedisBloom's)
        #[arg(long, value_enum, value_name = "LAYOUT")]
        layout: Option<LayoutArg>,
        /// With --kind scalable: each layer it adds holds this many times the last one's keys
        /// (1 to 32768; default 2). With --kind cuckoo: let a full filter grow, each
        /// sub-filter it adds this many times the last one's size (1 to 32768; default 0, a
        /// full filter refuses keys); every sub-filter adds to its false-positive rate
        #[arg(long, value_name = "N", value_parser = count::count_in(0, u64::from(u32::MAX)).map(|n| n as u32))]
        expansion: Option<u32>,
        /// With --kind cuckoo: slots per bucket (1 to 255; default 4). More slots fill the
        /// table fuller but need longer fingerprints for the same rate
        #[arg(long, value_name = "N", value_parser = count::count_in(0, u64::from(u32::MAX)).map(|n| n as u32))]
        bucket_size: Option<u32>,
        /// With --kind cuckoo: fingerprints an insert may move to make room before the filter
        /// counts as full (1 to 65535; default 500)
        #[arg(long, value_name = "N", value_parser = count::count_in(0, u64::from(u32::MAX)).map(|n| n as u32))]
        max_kicks: Option<u32>,
        #[command(flatten)]
        rate: FpRate,
        /// Write the filter even if no keys were read, or more than --items overfilled it
        #[arg(long)]
        force: bool,
        #[command(flatten)]
        waiting: Waiting,
        /// Where to write the filter; `-` for standard output
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
    /// 0 whatever the answers; with -q nothing is printed, and the exit status is 0 if every
    /// key may be in the filter and 1 if some key definitely is not (it stops at the first).
    ///
    /// Keys come from the arguments; `-`, or no keys at all, reads them from standard input,
    /// one per line (as `build` reads them). Put `--` before keys that start with `-`; give
    /// the key `-` itself on standard input. FILE `-` reads the filter from standard input
    /// (then give the keys as arguments).
    #[command(after_long_help = "\
Examples:
  bloomkit query users.bkf alice bob
  bloomkit query users.bkf < candidates.txt | grep ^maybe | cut -f2
  bloomkit query users.bkf -- -dash-key
  if bloomkit query -q users.bkf alice; then echo 'alice may be a user'; fi")]
    Query {
        /// Print nothing; exit with 0 if every key may be in the filter, 1 if one is not
        #[arg(short, long)]
        quiet: bool,
        /// The filter file; `-` for standard input
        file: PathBuf,
        /// Keys to look up; `-` or none to read them from standard input
        #[arg(value_name = "KEY")]
        keys: Vec<OsString>,
    },

    /// Show a filter file's parameters and how full it is
    ///
    /// Kind, format version, hash and seed, size on disk and in memory, the keys it holds
    /// by its own count, bits per key and the false-positive rate estimated from its
    /// contents; then the kind's own: bits and hash probes, fill, layers, buckets and
    /// fingerprints, generations. One `name: value` per line, or with --json one JSON object
    /// on one line (rates and fills as fractions, sizes in bytes, the seed as a hex string).
    #[command(after_long_help = "\
Examples:
  bloomkit info users.bkf
  bloomkit info users.bkf | grep '^fill'
  bloomkit info --json users.bkf | jq .estimated_fp_rate")]
    Info {
        /// One JSON object instead of `name: value` lines
        #[arg(long)]
        json: bool,
        /// The filter file; `-` for standard input
        file: PathBuf,
    },

    /// Combine filters into one holding every key of each
    ///
    /// The filters must have been built with the same kind, number of bits, hash probes and
    /// seed: build them with the same --kind and --fp-rate and with --items set to the same
    /// number, large enough for all their keys together. The result's false-positive rate is
    /// that of a filter holding all their keys; a union estimated above --fp-rate (give the
    /// rate the inputs were built for) fails, naming the --items the inputs need, unless
    /// --force is given. So does a union of empty filters. Blocked, sector, classic and
    /// counting filters merge. An OUTPUT that exists is replaced under its lock, as `build`
    /// replaces it.
    #[command(after_long_help = "\
Examples:
  bloomkit build --items 2000000 -o monday.bkf monday.txt
  bloomkit build --items 2000000 -o tuesday.bkf tuesday.txt
  bloomkit merge monday.bkf tuesday.bkf -o week.bkf")]
    Merge {
        /// The filters to combine (two or more); `-` for one from standard input
        #[arg(value_name = "FILTER", num_args = 2.., required = true)]
        inputs: Vec<PathBuf>,
        /// Where to write the combined filter; `-` for standard output
        #[arg(short, long, value_name = "FILE")]
        output: PathBuf,
        #[command(flatten)]
        rate: FpRate,
        /// Write the union even if it holds no keys or is estimated above --fp-rate
        #[arg(long)]
        force: bool,
        #[command(flatten)]
        waiting: Waiting,
    },

    /// Add keys to a filter file, in place
    ///
    /// Each key goes in as the kind's own insert takes it: a counting or cuckoo filter holds
    /// every copy (remove one with `bloomkit remove`), the Bloom kinds hold a key once, an
    /// aging filter puts it in its newest generation. A ribbon filter is static: rebuild it.
    /// The file is rewritten atomically (a temporary file renamed over it), and is unchanged
    /// if anything fails, a full cuckoo filter included. The file is locked from before it is
    /// read until the new one is in place: another `insert`, `remove`, `rotate`, or a `build`
    /// or `merge` writing to it, waits until this one has finished and then works on what it
    /// wrote (with --no-wait, it fails at once instead), so no change is lost.
    #[command(after_long_help = "\
Examples:
  bloomkit insert users.bkf carol dave
  tail -n 100 new-users.txt | bloomkit insert users.bkf")]
    Insert {
        #[command(flatten)]
        waiting: Waiting,
        /// The filter file
        file: PathBuf,
        /// Keys to add; `-` or none to read them from standard input, one per line
        #[arg(value_name = "KEY")]
        keys: Vec<OsString>,
    },

    /// Remove keys from a counting or cuckoo filter file, in place
    ///
    /// Each key loses one copy; a key definitely not in the filter changes nothing and is
    /// counted in the summary. Remove only keys that were inserted: a key that was never
    /// inserted but looks present (a false positive) takes away what other keys need, and
    /// they may then read as absent. The file is rewritten atomically and locked, as `insert`
    /// does.
    #[command(after_long_help = "\
Examples:
  bloomkit build --kind counting -o sessions.bkf sessions.txt
  bloomkit remove sessions.bkf expired-session-id
  bloomkit remove sessions.bkf < expired.txt")]
    Remove {
        #[command(flatten)]
        waiting: Waiting,
        /// The counting or cuckoo filter file
        file: PathBuf,
        /// Keys to remove; `-` or none to read them from standard input, one per line
        #[arg(value_name = "KEY")]
        keys: Vec<OsString>,
    },

    /// Start the next generation of an aging filter file, in place
    ///
    /// The oldest generation is emptied and becomes the newest, which `insert` fills from
    /// now on: keys only it held are forgotten. Run it once per period (from cron, say) to
    /// remember keys seen in the last one to two periods. The file is rewritten atomically and
    /// locked, as `insert` does.
    #[command(after_long_help = "\
Examples:
  bloomkit build --kind aging --items 2000000 -o recent.bkf today.txt
  bloomkit rotate recent.bkf && bloomkit insert recent.bkf < new-keys.txt")]
    Rotate {
        #[command(flatten)]
        waiting: Waiting,
        /// The aging filter file
        file: PathBuf,
    },

    /// Benchmark bloomkit's kinds on this machine, to size hardware
    ///
    /// For each kind (every kind `build` offers, the atomic filter, and the blocked filter
    /// through its batched calls; scalable grown 100×, aging in two generations, fuse with
    /// 8- and 16-bit fingerprints): ns per insert (per key built, for the static kinds), ns
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
        #[command(flatten)]
        rate: FpRate,
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
  bloomkit serve --port 7000 --requirepass-file /etc/bloomkit/password --maxmemory 2gb
  bloomkit serve --maxmemory 100mb --maxmemory-policy allkeys-lru --bf-error-rate 0.001
  redis-cli BF.ADD users alice

Every option of the config file and of CONFIG SET is also a flag, as with redis-server.")]
    Serve(commands::serve::Flags),

    /// Copy filters between servers, filter files and a stopped server's data directory
    ///
    /// SOURCE and DEST are each a server or one of its keys (a redis:// URL), a filter file,
    /// or, as SOURCE only, a stopped server's data directory or one of its keys (the list
    /// below the options). A server is any of `bloomkit serve`, Redis or Valkey with the bloomkit module, and
    /// RedisBloom (Redis 8, Redis Stack): RedisBloom's keys copy into bloomkit and answer as
    /// they did there; bloomkit's keys copy into bloomkit (a RedisBloom destination takes
    /// only RedisBloom's own dumps). Aging keys (AF) copy only where the destination is
    /// bloomkit; elsewhere they are skipped and counted, as are keys of other types.
    ///
    /// Each key travels chunk by chunk (SCANDUMP, then LOADCHUNK at the destination), so
    /// memory holds one chunk (at most 16 MiB), however large the filter; a file at either
    /// end is read or written whole. The copy loads under the temporary key
    /// `{KEY}.bloomkit-copy`, and takes KEY's name only once BF.INFO (CF.INFO, AF.INFO)
    /// agrees at both ends: items, capacity, layers. So an interrupted copy leaves no
    /// half-loaded KEY, only the temporary key, which the next run removes before it copies
    /// KEY again. A key that exists at DEST is an error (naming it) unless --replace.
    ///
    /// A file DEST gets one key, as a filter file the library reads: every subcommand
    /// reads a bloomkit key's file, `query` and `info` a RedisBloom key's; a file SOURCE goes into one key: a scalable file into a BF key, a classic or
    /// blocked file into a non-scaling BF key of one layer (its bits as they are), a cuckoo
    /// file into a CF key (other kinds are refused, naming the ones that load). A data directory
    /// is read as `bloomkit serve` would load it, changing nothing in it, and only while no
    /// server runs on it.
    ///
    /// Each key that fails prints one line naming it and why, and the others are still
    /// copied; the exit status is then 2. A summary line (keys, bytes, seconds, keys
    /// skipped) ends on standard error, with a progress bar before it on a terminal.
    #[command(after_long_help = "\
SOURCE and DEST:
  redis://[USER:PASSWORD@]HOST[:PORT]       every BF, CF (and AF) key of a server
  redis://[USER:PASSWORD@]HOST[:PORT]/KEY   one key (percent-encoded: %2F for /)
  FILE                                      a filter file (.bkf); - is standard input
                                            or output
  DIR, DIR/KEY                              (SOURCE only) a stopped `bloomkit serve
                                            --dir DIR`: every key, or one

Examples:
  bloomkit copy redis://old-host:6379 redis://localhost:7000
  bloomkit copy --match 'users:*' --replace redis://a:6379 redis://b:6379
  bloomkit copy redis://localhost:6379/users users.bkf
  bloomkit copy users.bkf redis://:secret@localhost:7000/users
  bloomkit copy ./bloomkit-data/ redis://localhost:7000
  bloomkit copy ./bloomkit-data/users - | bloomkit info -")]
    Copy {
        /// Copy only the keys matching this glob (as SCAN MATCH and KEYS read it)
        #[arg(long = "match", value_name = "PATTERN")]
        pattern: Option<OsString>,
        /// Overwrite a key (or file) that exists at DEST, instead of failing on it
        #[arg(long)]
        replace: bool,
        #[command(flatten)]
        waiting: Waiting,
        /// Where the filters are: redis://HOST:PORT[/KEY], a filter file, or a data
        /// directory (DIR or DIR/KEY)
        #[arg(value_name = "SOURCE")]
        source: OsString,
        /// Where they go: redis://HOST:PORT[/KEY], or a filter file (- for standard output)
        #[arg(value_name = "DEST")]
        dest: OsString,
    },

    /// Measure every filter kind on this machine: size, accuracy and speed
    ///
    /// Builds a filter of every kind (classic, blocked, sector, atomic, counting, scalable
    /// grown 100×, cuckoo, ribbon, fuse, aging) for N keys, inserts N present keys and queries N absent
    /// ones, timing both, and prints the predicted and measured false-positive rates side by
    /// side. Holds all 2N keys in memory as strings, about 80 bytes a key.
    #[command(after_long_help = "\
Examples:
  bloomkit demo
  bloomkit demo --items 10000000 --fp-rate 0.001")]
    Demo {
        /// Keys to insert (and as many absent keys to query)
        #[arg(long, value_name = "N", default_value = "1000000",
              value_parser = count::count_in(1, u64::MAX))]
        items: u64,
        #[command(flatten)]
        rate: FpRate,
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
    /// filled with --items distinct keys (an aging filter holds them in two generations of
    /// half each) and asked about --absent-keys keys never added, drawn as the rate against
    /// bits per key (log scale), with the rate the sizing math predicts beside it. With
    /// --fill, one filter per kind planned for --items keys at --fp-rate and filled from 1/4
    /// to 4 times that, drawn as the rate against the fill.
    /// Prints the figures behind the chart. Needs a font for the chart's text: a system
    /// sans-serif font, or BLOOMKIT_FONT=/path/to/font.ttf.
    #[command(after_long_help = "\
Examples:
  bloomkit plot classic blocked cuckoo ribbon -o rates.svg
  bloomkit plot --fill classic blocked scalable -o overfill.png
  bloomkit plot blocked --items 1M --absent-keys 10M -o blocked.svg")]
    Plot {
        /// Filter kinds to draw
        #[arg(value_name = "KIND", required = true, value_parser = clap::builder::PossibleValuesParser::new(bloomkit_lab::Kind::ALL.map(|k| k.name())))]
        kinds: Vec<String>,
        /// Where to write the chart: a name ending in .svg or .png
        #[arg(short, long, value_name = "FILE")]
        output: PathBuf,
        /// Keys each filter is planned for and filled with (1000000, 1,000,000, 1e6 and 1M
        /// are the same)
        #[arg(long, value_name = "N", default_value = "100000",
              value_parser = count::count_in(1, 100_000_000))]
        items: u64,
        /// Keys never added to ask each filter about, for each point: the measured rate is the
        /// share it answers "maybe" for
        #[arg(long, value_name = "N", default_value = "1000000", alias = "probes",
              value_parser = count::count_in(1, 1_000_000_000))]
        absent_keys: u64,
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

/// `--no-wait`, as every subcommand that replaces a filter file spells it.
#[derive(Args)]
struct Waiting {
    /// If another command is changing the filter file, fail at once instead of waiting
    /// until it has finished
    #[arg(long)]
    no_wait: bool,
}

impl Waiting {
    fn on_busy(&self) -> files::OnBusy {
        if self.no_wait {
            files::OnBusy::Fail
        } else {
            files::OnBusy::Wait
        }
    }
}

/// `--fp-rate`, as every subcommand that takes a target rate spells it.
#[derive(Args)]
struct FpRate {
    /// Target false-positive rate: a fraction strictly between 0 and 1, or a percentage
    /// (0.01 and 1% are the same)
    #[arg(
        long = "fp-rate",
        value_name = "P",
        default_value = "0.01",
        value_parser = parse_rate,
        // So that `-0.1` reaches the library's check and its message.
        allow_negative_numbers = true
    )]
    fp_rate: f64,
}

/// `--fp-rate`: a fraction (`0.01`, `1e-3`) or a percentage (`1%`, `0.1%`). The range is
/// the library's to check, with its own message.
fn parse_rate(text: &str) -> std::result::Result<f64, String> {
    let bad = || "give a fraction such as 0.01, or a percentage such as 1%".to_string();
    let Some(percent) = text.trim().strip_suffix('%') else {
        return text.trim().parse().map_err(|_| bad());
    };
    let percent = percent.trim_end();
    // Moving the decimal point in the text rounds once: "0.1%" is exactly what "0.001" is,
    // which dividing the parsed 0.1 by 100 would not always be.
    let shifted = if percent.contains(['e', 'E']) {
        percent.parse::<f64>().map(|p| p / 100.0)
    } else {
        format!("{percent}e-2").parse()
    };
    match shifted {
        Ok(rate) if !percent.is_empty() => Ok(rate),
        _ => Err(bad()),
    }
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

/// The exit statuses, as `bloomkit --help` and the README list them: few, and grep's, so
/// that `query -q` works in `if` and a script can tell "absent" from "failed".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Status {
    /// 0: done; for `query -q`, every key may be in the filter.
    Success,
    /// 1: `query -q` only: some key is definitely not in the filter.
    KeyAbsent,
    /// 2: an error, clap's usage errors included, told in one line on stderr.
    Error,
}

impl From<Status> for ExitCode {
    fn from(status: Status) -> Self {
        ExitCode::from(match status {
            Status::Success => 0,
            Status::KeyAbsent => 1,
            Status::Error => 2,
        })
    }
}

fn main() -> ExitCode {
    let parsed = Cli::command()
        .try_get_matches()
        .and_then(|matches| Cli::from_arg_matches(&matches));
    let cli = match parsed {
        Ok(parsed) => parsed,
        Err(e) => return usage_error(&e).into(),
    };
    match run(cli.command) {
        Ok(status) => status.into(),
        // Whoever read our output closed it early (`| head`): they have what they wanted.
        Err(e) if e.is_broken_pipe() => Status::Success.into(),
        Err(e) => {
            eprintln!("bloomkit: {e}");
            Status::Error.into()
        }
    }
}

/// Prints what clap found wrong with the command line as one line, as our own errors are,
/// or the help or version that was asked for; returns the status to exit with.
fn usage_error(e: &clap::Error) -> Status {
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            // Printing to a closed stdout is no error worth a message.
            let _ = e.print();
            Status::Success
        }
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            eprintln!(
                "bloomkit: give a subcommand: {}; 'bloomkit --help' describes them",
                subcommand_names().join(", ")
            );
            Status::Error
        }
        _ => {
            // The subcommand whose flags were wrong, for where its help is.
            let names = subcommand_names();
            let help = match std::env::args_os()
                .skip(1)
                .find(|arg| names.iter().any(|name| arg == name.as_str()))
            {
                Some(name) => format!("bloomkit {} --help", name.to_string_lossy()),
                None => "bloomkit --help".to_string(),
            };
            eprintln!(
                "bloomkit: {}; see '{help}'",
                one_line(&e.render().to_string())
            );
            Status::Error
        }
    }
}

/// Every subcommand's name, in help order.
fn subcommand_names() -> Vec<String> {
    Cli::command()
        .get_subcommands()
        .map(|c| c.get_name().to_string())
        .collect()
}

/// Clap's multi-line error (`error: ...`, indented details, a tip, a usage line, a pointer
/// to help) as one line: the message and its details, then the tips.
fn one_line(rendered: &str) -> String {
    let mut message = Vec::new();
    let mut in_message = true;
    let mut tips = Vec::new();
    for line in rendered.lines().map(str::trim) {
        if line.is_empty() {
            in_message = false;
        } else if let Some(tip) = line.strip_prefix("tip: ") {
            tips.push(tip);
        } else if in_message {
            message.push(line.strip_prefix("error: ").unwrap_or(line));
        }
    }
    let mut text = message.join(" ");
    for tip in tips {
        text.push_str("; ");
        text.push_str(tip);
    }
    text
}

/// Runs one subcommand.
fn run(command: Command) -> Result<Status> {
    match command {
        Command::Size { items, rate } => commands::size::run(items, rate.fp_rate)?,
        Command::Build {
            kind,
            items,
            layout,
            expansion,
            bucket_size,
            max_kicks,
            rate,
            force,
            waiting,
            output,
            inputs,
        } => commands::build::run(&commands::build::Options {
            kind,
            shape: commands::build::Shape {
                layout: layout.map(Into::into),
                expansion,
                bucket_size,
                max_kicks,
            },
            items,
            fp_rate: rate.fp_rate,
            force,
            on_busy: waiting.on_busy(),
            output: &output,
            inputs: &inputs,
        })?,
        Command::Query { quiet, file, keys } => {
            let answers = commands::query::run(&file, &keys, quiet)?;
            if quiet && answers == commands::query::Answers::SomeAbsent {
                return Ok(Status::KeyAbsent);
            }
        }
        Command::Info { json, file } => commands::info::run(&file, json)?,
        Command::Merge {
            inputs,
            output,
            rate,
            force,
            waiting,
        } => commands::merge::run(&commands::merge::Options {
            inputs: &inputs,
            output: &output,
            fp_rate: rate.fp_rate,
            force,
            on_busy: waiting.on_busy(),
        })?,
        Command::Insert {
            waiting,
            file,
            keys,
        } => commands::insert::run(&file, &keys, waiting.on_busy())?,
        Command::Remove {
            waiting,
            file,
            keys,
        } => commands::remove::run(&file, &keys, waiting.on_busy())?,
        Command::Rotate { waiting, file } => commands::rotate::run(&file, waiting.on_busy())?,
        Command::Demo { items, rate } => commands::demo::run(items, rate.fp_rate)?,
        Command::Serve(flags) => commands::serve::run(&flags)?,
        Command::Copy {
            pattern,
            replace,
            waiting,
            source,
            dest,
        } => commands::copy::run(&commands::copy::Options {
            source: &source,
            dest: &dest,
            pattern: pattern.as_ref().map(|p| p.as_encoded_bytes()),
            replace,
            on_busy: waiting.on_busy(),
        })?,
        Command::Explore { port } => commands::explore::run(port)?,
        Command::Plot {
            kinds,
            output,
            items,
            absent_keys,
            fill,
            fp_rate,
        } => commands::plot::run(&commands::plot::Options {
            kinds: commands::plot::kinds(&kinds),
            output,
            items,
            absent_keys,
            fill,
            fp_rate,
        })?,
        Command::Bench {
            regime,
            keys,
            quick,
            rate,
        } => commands::bench::run(&commands::bench::Options {
            cache: regime != RegimeArg::Memory,
            memory: regime != RegimeArg::Cache,
            ints: keys != KeysArg::String,
            strings: keys != KeysArg::Int,
            quick,
            fp_rate: rate.fp_rate,
        })?,
    }
    Ok(Status::Success)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_as_fractions_and_percentages() {
        assert_eq!(parse_rate("0.01"), Ok(0.01));
        assert_eq!(parse_rate("1%"), Ok(0.01));
        assert_eq!(parse_rate(" 0.1 %"), Ok(0.001));
        assert_eq!(parse_rate("1e-3"), Ok(0.001));
        assert_eq!(parse_rate("1e-1%"), Ok(0.001));
        // Out of range is the library's to refuse, with its message.
        assert_eq!(parse_rate("150%"), Ok(1.5));
        assert_eq!(parse_rate("-0.1"), Ok(-0.1));
        for bad in ["", "%", "abc", "1%%", "one%", "0.01 percent"] {
            let message = parse_rate(bad).unwrap_err();
            assert!(message.contains("such as 1%"), "{bad}: {message}");
        }
    }

    #[test]
    fn clap_errors_become_one_line() {
        let rendered = "error: the following required arguments were not provided:\n  \
                        --output <FILE>\n\nUsage: bloomkit build --output <FILE> [INPUT]...\n\n\
                        For more information, try '--help'.\n";
        assert_eq!(
            one_line(rendered),
            "the following required arguments were not provided: --output <FILE>"
        );
        let rendered = "error: unexpected argument '--item' found\n\n  tip: a similar argument \
                        exists: '--items'\n\nUsage: bloomkit size --items <N>\n";
        assert_eq!(
            one_line(rendered),
            "unexpected argument '--item' found; a similar argument exists: '--items'"
        );
    }

    #[test]
    fn the_flags_are_consistent() {
        Cli::command().debug_assert();
    }
}
