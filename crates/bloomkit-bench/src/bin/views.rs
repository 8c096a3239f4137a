//! Opening a large blocked filter from a memory-mapped file: owned (`read_from`, or
//! `from_bytes` over the map) against the borrowed view (`BlockedBloomFilterRef`, with and
//! without its checksum check), in time and resident memory, and queries through each.
//!
//! ```text
//! cargo run --release -p bloomkit-bench --features mmap --bin views -- [--mib 1024] [--repeat 5]
//! ```
//!
//! The file (a blocked filter of `--mib` MiB at its planned load for 1%) is written once
//! under `target/bench-data/` and reused. Every measurement runs in a fresh child process,
//! so that one's resident memory does not carry into the next; the parent interleaves the
//! ways of opening, repeats them, and prints the medians as a markdown table. The file stays
//! in the page cache between runs (this does not drop caches, which would need root and slow
//! everyone else on the machine), so the figures are for a warm file.

use std::fs::File;
use std::hint::black_box;
use std::io::{BufReader, BufWriter};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use bloomkit::{BlockedBloomFilter, BlockedBloomFilterRef};
use bloomkit_bench::keys::int_key;
use bloomkit_bench::timing::{load_average, median};

/// The ways of opening the file, in the order the table shows them: the owned filter read
/// from the file or from the map, the view checked or not, and the view on the portable
/// kernel (which reads only the words a query's probes need).
const WAYS: [&str; 5] = [
    "owned-read",
    "owned-mmap",
    "view",
    "view-unverified",
    "view-portable",
];

/// Queries per measurement: half keys of the filter, half keys it never saw.
const QUERIES: u64 = 4_000_000;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flag = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
    };
    let mib: u64 = flag("--mib").map_or(1024, |v| v.parse().expect("--mib N"));
    let repeat: usize = flag("--repeat").map_or(5, |v| v.parse().expect("--repeat N"));
    let path = flag("--file").map_or_else(|| default_path(mib), PathBuf::from);
    if let Some(way) = flag("--child") {
        child(way, &path, mib);
        return;
    }
    let keys = ensure_file(&path, mib);
    let path = path.canonicalize().unwrap_or(path);
    println!(
        "blocked filter: {mib} MiB, {keys} keys, file {}; {repeat} runs of each way, \
         interleaved; load average at start: {}",
        path.display(),
        load_average()
    );
    let exe = std::env::current_exe().expect("own path");
    let mut runs: Vec<Vec<Sample>> = vec![Vec::new(); WAYS.len()];
    for _ in 0..repeat {
        for (i, way) in WAYS.iter().enumerate() {
            let out = Command::new(&exe)
                .args(["--child", way, "--mib", &mib.to_string(), "--file"])
                .arg(&path)
                .output()
                .expect("run a child");
            assert!(
                out.status.success(),
                "{way}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            runs[i].push(Sample::parse(&String::from_utf8_lossy(&out.stdout)));
        }
    }
    report(&runs);
    println!("\nload average at end: {}", load_average());
}

/// One child's figures.
#[derive(Clone, Copy, Debug, Default)]
struct Sample {
    open_ms: f64,
    rss_mib: f64,
    anon_mib: f64,
    file_mib: f64,
    first_ns: f64,
    query_ns: f64,
    batch_ns: f64,
    rss_after_mib: f64,
    maybes: u64,
}

impl Sample {
    fn parse(line: &str) -> Sample {
        let mut s = Sample::default();
        for field in line.split_whitespace() {
            let (name, value) = field.split_once('=').expect("name=value");
            let v: f64 = value.parse().expect("a number");
            match name {
                "open_ms" => s.open_ms = v,
                "rss_mib" => s.rss_mib = v,
                "anon_mib" => s.anon_mib = v,
                "file_mib" => s.file_mib = v,
                "first_ns" => s.first_ns = v,
                "query_ns" => s.query_ns = v,
                "batch_ns" => s.batch_ns = v,
                "rss_after_mib" => s.rss_after_mib = v,
                "maybes" => s.maybes = v as u64,
                _ => panic!("unknown field {name}"),
            }
        }
        s
    }
}

fn report(runs: &[Vec<Sample>]) {
    let med = |i: usize, f: fn(&Sample) -> f64| median(runs[i].iter().map(f).collect());
    println!();
    println!(
        "| way | open (ms) | RSS after open (MiB) | of it anonymous / file | first query pass (ns) \
         | queries (ns) | batched (ns) | RSS after queries (MiB) |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for (i, way) in WAYS.iter().enumerate() {
        println!(
            "| {way} | {:.3} | {:.1} | {:.1} / {:.1} | {:.1} | {:.1} | {:.1} | {:.1} |",
            med(i, |s| s.open_ms),
            med(i, |s| s.rss_mib),
            med(i, |s| s.anon_mib),
            med(i, |s| s.file_mib),
            med(i, |s| s.first_ns),
            med(i, |s| s.query_ns),
            med(i, |s| s.batch_ns),
            med(i, |s| s.rss_after_mib),
        );
    }
    // Every way answered the same queries: the same number of "maybe"s, in every run.
    let maybes = runs[0][0].maybes;
    assert!(
        runs.iter().flatten().all(|s| s.maybes == maybes),
        "the ways disagree on the answers"
    );
    let ratio = |a: usize, b: usize, f: fn(&Sample) -> f64| med(a, f) / med(b, f);
    println!(
        "\nratios (medians): open owned-mmap / view {:.1}×, owned-read / view {:.1}×, \
         view / view-unverified {:.0}×; queries view / owned-mmap {:.3}, batched {:.3}; \
         every run answered \"maybe\" {maybes} times",
        ratio(1, 2, |s| s.open_ms),
        ratio(0, 2, |s| s.open_ms),
        ratio(2, 3, |s| s.open_ms),
        ratio(2, 1, |s| s.query_ns),
        ratio(2, 1, |s| s.batch_ns),
    );
}

fn default_path(mib: u64) -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target"));
    target
        .join("bench-data")
        .join(format!("blocked-{mib}mib.bkf"))
}

/// Keys in a filter of `mib` MiB at its planned load for 1% (about 10 bits a key).
fn planned_keys(mib: u64) -> u64 {
    mib * 8 * 1024 * 1024 / 10
}

/// Writes the filter file unless it is there already; returns how many keys it holds.
fn ensure_file(path: &Path, mib: u64) -> u64 {
    let n = planned_keys(mib);
    let bits = mib * 8 * 1024 * 1024;
    let expected_len = 44 + 12 + bits / 8 + 8;
    if std::fs::metadata(path).is_ok_and(|m| m.len() == expected_len) {
        return n;
    }
    eprintln!("writing {} ({mib} MiB, {n} keys)...", path.display());
    std::fs::create_dir_all(path.parent().expect("a folder")).expect("create the folder");
    let mut f = BlockedBloomFilter::builder(n, 0.01)
        .num_bits(bits)
        .build()
        .expect("the filter fits");
    let mut start = 0;
    while start < n {
        let end = (start + (1 << 20)).min(n);
        let chunk: Vec<u64> = (start..end).map(int_key).collect();
        f.insert_many(&chunk);
        start = end;
    }
    let tmp = path.with_extension("tmp");
    f.write_to(BufWriter::new(File::create(&tmp).expect("create the file")))
        .expect("write the file");
    std::fs::rename(&tmp, path).expect("rename the file");
    n
}

/// The queries: keys 0, 2, 4, ... of the filter's and as many it never saw, mixed.
fn queries(n: u64) -> Vec<u64> {
    (0..QUERIES)
        .map(|i| {
            let j = bloomkit_bench::keys::mix64(i) % n;
            if i % 2 == 0 {
                int_key(j)
            } else {
                int_key(n + j)
            }
        })
        .collect()
}

/// What /proc/self/status says, in MiB: VmRSS, RssAnon, RssFile.
fn rss() -> (f64, f64, f64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|kib| kib.parse::<f64>().ok())
            .map_or(f64::NAN, |kib| kib / 1024.0)
    };
    (field("VmRSS:"), field("RssAnon:"), field("RssFile:"))
}

/// One way of opening the file, and the queries through what it opened.
fn child(way: &str, path: &Path, mib: u64) {
    let queries = queries(planned_keys(mib));
    let file = File::open(path).expect("open the file");
    // SAFETY: the map is read-only and nothing writes this file while it is mapped: the
    // benchmark made it, and rewrites it only through a temporary file and a rename.
    #[allow(unsafe_code)]
    let map = unsafe { memmap2::Mmap::map(&file) }.expect("map the file");
    let start = Instant::now();
    match way {
        "owned-read" => {
            let f = BlockedBloomFilter::read_from(BufReader::new(&file)).expect("read");
            let open = start.elapsed();
            measure(
                open,
                |k| f.contains(k),
                |k, out| f.contains_many(k, out),
                &queries,
            );
        }
        "owned-mmap" => {
            let f = BlockedBloomFilter::from_bytes(&map).expect("read");
            let open = start.elapsed();
            measure(
                open,
                |k| f.contains(k),
                |k, out| f.contains_many(k, out),
                &queries,
            );
        }
        "view" => {
            let f = BlockedBloomFilterRef::from_bytes(&map).expect("view");
            let open = start.elapsed();
            measure(
                open,
                |k| f.contains(k),
                |k, out| f.contains_many(k, out),
                &queries,
            );
        }
        "view-unverified" => {
            let f = BlockedBloomFilterRef::from_bytes_unverified(&map).expect("view");
            let open = start.elapsed();
            measure(
                open,
                |k| f.contains(k),
                |k, out| f.contains_many(k, out),
                &queries,
            );
        }
        "view-portable" => {
            bloomkit::use_portable_kernel(true);
            let f = BlockedBloomFilterRef::from_bytes(&map).expect("view");
            let open = start.elapsed();
            measure(
                open,
                |k| f.contains(k),
                |k, out| f.contains_many(k, out),
                &queries,
            );
        }
        other => panic!("unknown way {other}"),
    }
}

/// Prints the child's line: open time and memory, then a first and a second pass of
/// single-key queries, then the batched queries.
fn measure(
    open: std::time::Duration,
    contains: impl Fn(&u64) -> bool,
    contains_many: impl Fn(&[u64], &mut Vec<bool>),
    queries: &[u64],
) {
    let (rss_mib, anon_mib, file_mib) = rss();
    let pass = || {
        let start = Instant::now();
        let maybes = queries.iter().filter(|k| contains(black_box(k))).count();
        (
            start.elapsed().as_nanos() as f64 / queries.len() as f64,
            maybes,
        )
    };
    let (first_ns, maybes) = pass();
    let (query_ns, again) = pass();
    assert_eq!(maybes, again);
    let mut answers = Vec::with_capacity(1024);
    let start = Instant::now();
    let mut batch_maybes = 0;
    for chunk in queries.chunks(1024) {
        answers.clear();
        contains_many(chunk, &mut answers);
        batch_maybes += answers.iter().filter(|&&a| a).count();
    }
    let batch_ns = start.elapsed().as_nanos() as f64 / queries.len() as f64;
    assert_eq!(maybes, batch_maybes);
    let (rss_after_mib, _, _) = rss();
    println!(
        "open_ms={:.4} rss_mib={rss_mib:.1} anon_mib={anon_mib:.1} file_mib={file_mib:.1} \
         first_ns={first_ns:.2} query_ns={query_ns:.2} batch_ns={batch_ns:.2} \
         rss_after_mib={rss_after_mib:.1} maybes={maybes}",
        open.as_secs_f64() * 1e3
    );
}
