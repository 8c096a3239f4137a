//! The batched operations (`contains_many`, `insert_many`) against the one-key loop, kind by
//! kind, in cache and out: the ratio of the two on this machine, from one run.
//!
//! ```text
//! cargo run --release -p bloomkit-bench --bin batch_ops -- [--mib 512] [--static-mib 64] [--repeat 3] [--only blocked,counting,cuckoo]
//! ```
//!
//! Every filter is at 1% with integer keys (hashing included in every figure). The small
//! filters are about 256 KiB (in L2); the large ones about `--mib` MiB for the kinds that
//! take inserts and `--static-mib` MiB for ribbon and fuse, whose construction needs every
//! key and tens of bytes of scratch per key at once. The large mutable filters are reserved
//! for their size but filled only in part (the scalable one grown to four layers, the
//! counting one to a quarter of its plan, the cuckoo one to an eighth), to keep the set-up
//! short: a query still lands anywhere in their memory. The blocked filter, filled to its
//! plan, is measured at two sizes about a core's share of the cache besides (1.2 MiB, a million
//! keys, and 4.7 MiB). Queries are half keys of the filter,
//! half keys it never saw, in one shuffled order; the one-key loop and the batch answer the
//! same queries (checked), `--repeat` times each, interleaved, and the medians are printed.
//! Inserts put new keys into fresh copies of the filled filter, one key at a time and
//! batched, `--repeat` times each, and the two copies are checked equal after.

use std::hint::black_box;
use std::time::Instant;

use bloomkit::{
    BinaryFuseFilter, BlockedBloomFilter, CountingBloomFilter, CuckooFilter, RibbonFilter,
    ScalableBloomFilter,
};
use bloomkit_bench::keys::int_key;
use bloomkit_bench::timing::{load_average, median};

/// Queries per measurement.
const QUERIES: u64 = 2_000_000;
/// New keys per insert measurement.
const INSERTS: u64 = 2_000_000;

/// Keys `start..start + n`, as integers.
fn keys(start: u64, n: u64) -> Vec<u64> {
    (start..start + n).map(int_key).collect()
}

/// Half keys among the first `present` counters, half from far beyond them, interleaved in
/// a fixed pseudo-random order.
fn queries(present: u64) -> Vec<u64> {
    (0..QUERIES)
        .map(|j| {
            let r = int_key(j ^ 0x5bd1_e995);
            if j % 2 == 0 {
                int_key(r % present.max(1))
            } else {
                int_key((1 << 40) + r % (1 << 30))
            }
        })
        .collect()
}

/// ns per query of the one-key loop and of the batch, medians of `repeat` interleaved runs.
fn time_queries(
    repeat: usize,
    qs: &[u64],
    one: impl Fn(&u64) -> bool,
    many: impl Fn(&[u64], &mut Vec<bool>),
) -> (f64, f64) {
    let (mut a, mut b) = (Vec::new(), Vec::new());
    let mut answers = Vec::with_capacity(qs.len());
    for _ in 0..repeat {
        let start = Instant::now();
        let hits_one = qs.iter().filter(|k| one(black_box(k))).count();
        a.push(start.elapsed().as_secs_f64() * 1e9 / qs.len() as f64);
        answers.clear();
        let start = Instant::now();
        many(black_box(qs), &mut answers);
        b.push(start.elapsed().as_secs_f64() * 1e9 / qs.len() as f64);
        let hits_many = answers.iter().filter(|&&x| x).count();
        assert_eq!(hits_one, hits_many, "the batch answers differently");
    }
    (median(a), median(b))
}

/// ns per insert of the one-key loop and of the batch: new keys into fresh copies of
/// `filter`, `repeat` times each (alternating which goes first), medians.
fn time_inserts<F: PartialEq + Clone>(
    repeat: usize,
    filter: &F,
    new: &[u64],
    one: impl Fn(&mut F, &[u64]),
    many: impl Fn(&mut F, &[u64]),
) -> (f64, f64) {
    let (mut a, mut b) = (Vec::new(), Vec::new());
    let per_key = |start: Instant| start.elapsed().as_secs_f64() * 1e9 / new.len() as f64;
    for rep in 0..repeat {
        let (mut f, mut g) = (filter.clone(), filter.clone());
        for turn in [rep % 2, 1 - rep % 2] {
            let start = Instant::now();
            if turn == 0 {
                one(&mut f, new);
                a.push(per_key(start));
            } else {
                many(&mut g, new);
                b.push(per_key(start));
            }
        }
        assert!(f == g, "the batch inserted differently");
    }
    (median(a), median(b))
}

fn row(kind: &str, size: &str, what: &str, (one, many): (f64, f64)) {
    println!(
        "| {kind} | {size} | {what} | {one:.1} | {many:.1} | {:.2}× |",
        one / many
    );
}

fn mib(bytes: usize) -> String {
    format!("{:.1} MiB", bytes as f64 / (1 << 20) as f64)
}

fn blocked(repeat: usize, bytes: u64) {
    // About 9.9 bits a key at 1%; filled to its plan a million keys at a time.
    let n = (bytes * 8 * 10 / 99).max(1);
    let mut f = BlockedBloomFilter::new(n, 0.01).expect("fits");
    for start in (0..n).step_by(1 << 20) {
        f.insert_many(&keys(start, (n - start).min(1 << 20)));
    }
    let size = mib(f.memory_bytes());
    let qs = queries(n);
    let t = time_queries(repeat, &qs, |k| f.contains(k), |q, a| f.contains_many(q, a));
    row("blocked", &size, "contains", t);
    let new = keys(1 << 41, INSERTS.min(n));
    let t = time_inserts(
        repeat,
        &f,
        &new,
        |f, ks| {
            for k in ks {
                f.insert(k);
            }
        },
        |f, ks| {
            f.insert_many(ks);
        },
    );
    row("blocked", &size, "insert", t);
}

fn scalable(repeat: usize, bytes: u64) {
    // Four layers of capacities c, 2c, 4c, 8c at 11.5 to 14.5 bits per key: about 15c keys'
    // worth of memory, for 8c keys inserted (a few are false positives, not counted).
    let c = (bytes * 8 / 13 / 15).max(1);
    let mut f = ScalableBloomFilter::new(c, 0.01).expect("fits");
    let filled = 8 * c;
    let mut added = Vec::new();
    f.insert_many(&keys(0, filled), &mut added).expect("grows");
    let size = format!("{}, {} layers", mib(f.memory_bytes()), f.num_layers());
    let qs = queries(filled);
    let t = time_queries(repeat, &qs, |k| f.contains(k), |q, a| f.contains_many(q, a));
    row("scalable", &size, "contains", t);
    let new = keys(1 << 41, INSERTS.min(c));
    let t = time_inserts(
        repeat,
        &f,
        &new,
        |f, ks| {
            for k in ks {
                let _ = f.insert(k);
            }
        },
        |f, ks| {
            let mut added = Vec::new();
            f.insert_many(ks, &mut added).expect("room")
        },
    );
    row("scalable", &size, "insert", t);
}

fn counting(repeat: usize, bytes: u64) {
    let n = (bytes * 8 / 39).max(1);
    let mut f = CountingBloomFilter::new(n, 0.01).expect("fits");
    let filled = n / 4;
    f.insert_many(&keys(0, filled));
    let size = mib(f.memory_bytes());
    let qs = queries(filled);
    let t = time_queries(repeat, &qs, |k| f.contains(k), |q, a| f.contains_many(q, a));
    row("counting", &size, "contains", t);
    let new = keys(1 << 41, INSERTS.min(n / 4));
    let t = time_inserts(
        repeat,
        &f,
        &new,
        |f, ks| {
            for k in ks {
                let _ = f.insert(k);
            }
        },
        |f, ks| {
            f.insert_many(ks);
        },
    );
    row("counting", &size, "insert", t);
}

fn cuckoo(repeat: usize, bytes: u64) {
    let n = (bytes * 8 / 11).max(8);
    let mut f = CuckooFilter::new(n, 0.01).expect("fits");
    let filled = n / 8;
    let mut stored = Vec::new();
    f.insert_many(&keys(0, filled), &mut stored).expect("room");
    let size = mib(f.memory_bytes());
    let qs = queries(filled);
    let t = time_queries(repeat, &qs, |k| f.contains(k), |q, a| f.contains_many(q, a));
    row("cuckoo", &size, "contains", t);
    let new = keys(1 << 41, INSERTS.min(n / 8));
    let t = time_inserts(
        repeat,
        &f,
        &new,
        |f, ks| ks.iter().for_each(|k| f.insert(k).expect("room")),
        |f, ks| {
            let mut stored = Vec::new();
            f.insert_many(ks, &mut stored).expect("room")
        },
    );
    row("cuckoo", &size, "insert", t);
}

fn ribbon(repeat: usize, bytes: u64) {
    let n = (bytes * 8 / 7).max(1);
    let f = RibbonFilter::build(keys(0, n), 0.01).expect("builds");
    let qs = queries(n);
    let t = time_queries(repeat, &qs, |k| f.contains(k), |q, a| f.contains_many(q, a));
    row("ribbon", &mib(f.memory_bytes()), "contains", t);
}

fn fuse(repeat: usize, bytes: u64) {
    let n = (bytes * 8 / 9).max(1);
    let f = BinaryFuseFilter::build(keys(0, n), 0.01).expect("builds");
    let qs = queries(n);
    let t = time_queries(repeat, &qs, |k| f.contains(k), |q, a| f.contains_many(q, a));
    row("fuse (8-bit)", &mib(f.memory_bytes()), "contains", t);
}

/// One kind's measurements: `(repeat, bytes)`.
type Measure = fn(usize, u64);

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flag = |name: &str, default: u64| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .map_or(default, |v| v.parse().expect("a number"))
    };
    let large = flag("--mib", 512) << 20;
    let large_static = flag("--static-mib", 64) << 20;
    let repeat = flag("--repeat", 3) as usize;
    let small = 256 << 10;
    // `--only counting,cuckoo`: just those kinds.
    let only = args
        .iter()
        .position(|a| a == "--only")
        .and_then(|i| args.get(i + 1))
        .cloned();
    let wanted = |kind: &str| {
        only.as_ref()
            .is_none_or(|o| o.split(',').any(|k| k == kind))
    };
    println!(
        "one-key loop against batch, ns per key, medians of {repeat} interleaved runs; load \
         average at start: {}",
        load_average()
    );
    println!();
    println!("| kind | size | operation | one key (ns) | batched (ns) | one / batched |");
    println!("|---|---|---|---|---|---|");
    // The blocked filter at the sizes about the cache too: a million keys at 1% (1.2 MiB,
    // the Python package's benchmark) and four million.
    if wanted("blocked") {
        for bytes in [small, 1_239_864, 4_959_424, large] {
            blocked(repeat, bytes);
        }
    }
    let mutable: [(&str, Measure); 3] = [
        ("scalable", scalable),
        ("counting", counting),
        ("cuckoo", cuckoo),
    ];
    let fixed: [(&str, Measure); 2] = [("ribbon", ribbon), ("fuse", fuse)];
    for (kinds, sizes) in [
        (&mutable[..], [small, large]),
        (&fixed[..], [small, large_static]),
    ] {
        for bytes in sizes {
            for (name, run) in kinds {
                if wanted(name) {
                    run(repeat, bytes);
                }
            }
        }
    }
    println!("\nload average at end: {}", load_average());
}
