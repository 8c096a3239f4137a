//! `insert_work`: one filter of bloomkit (`BlockedBloomFilter`, `SectorBloomFilter`,
//! `BloomFilter`, `CountingBloomFilter`, or a `ScalableBloomFilter` of classic or blocked
//! layers) or fastbloom 0.17 (`BloomFilter` with foldhash, its fastest configuration), sized
//! for the given keys at 1%, filled one key at a time, then queried one key at a time for the
//! present keys and for absent ones: for counting instructions under callgrind (repeatable on
//! a loaded machine, where timings are not), and for the false-positive rate each measures.
//!
//! ```text
//! cargo build --release -p bloomkit-bench --features peers --bin insert_work
//! valgrind --tool=callgrind --toggle-collect='*insert_work::insert_*' \
//!     target/release/insert_work sector int 54618 1000000
//! ```
//!
//! Arguments: the filter, `blocked`, `sector`, `classic`, `counting`, `scalable-classic`,
//! `scalable` (blocked layers) or `fastbloom` (a scalable filter starts at 1/100 of the keys
//! with expansion 2, so the keys fill about seven layers, like the `compare` binary's "grown
//! 100×"); `int` or `string` keys (the `compare` binary's keys); the number of keys (54,618
//! fill a 64 KiB filter at 1%, the in-cache case); the number of absent keys to query. Prints
//! bits per key and the false-positive rate. The `insert_*`, `query_present_*` and
//! `query_absent_*` functions are the measured parts (key generation is outside them), each
//! calling the filter's own one-key `insert`/`contains` with the key as stored, hashing
//! included; `new_filter` is bloomkit's construction (the plan and the allocation).

use std::hash::Hash;
use std::hint::black_box;
use std::process::ExitCode;

use bloomkit::{
    BlockedBloomFilter, BloomFilter, CountingBloomFilter, Key, LayerLayout, ScalableBloomFilter,
    SectorBloomFilter,
};
use bloomkit_bench::keys::{int_key, string_key, ABSENT_BASE};

/// The seed the `compare` binary gives foldhash, so the same configuration is measured.
const FOLDHASH_SEED: u64 = 0x0f01_d4a5_4b10_0d00;

type Fastbloom = fastbloom::BloomFilter<foldhash::fast::FixedState>;

/// The three filters, behind one small interface so each measured loop is a plain loop.
trait OneKey<K: ?Sized> {
    fn put(&mut self, key: &K);
    fn has(&self, key: &K) -> bool;
}

/// The filters whose one-key `insert` cannot fail, each with the trait its keys need.
macro_rules! one_key {
    ($($bound:ident: $filter:ty),* $(,)?) => {$(
        impl<K: $bound + ?Sized> OneKey<K> for $filter {
            #[inline(always)]
            fn put(&mut self, key: &K) {
                self.insert(key);
            }
            #[inline(always)]
            fn has(&self, key: &K) -> bool {
                self.contains(key)
            }
        }
    )*};
}

one_key!(
    Key: BlockedBloomFilter,
    Key: SectorBloomFilter,
    Key: BloomFilter,
    Key: CountingBloomFilter,
    Hash: Fastbloom,
);

impl<K: Key + ?Sized> OneKey<K> for ScalableBloomFilter {
    #[inline(always)]
    fn put(&mut self, key: &K) {
        self.insert(key).expect("a chain of seven layers grows");
    }
    #[inline(always)]
    fn has(&self, key: &K) -> bool {
        self.contains(key)
    }
}

/// Builds a filter: its plan (sizing) and its allocation, measured alone with
/// `--toggle-collect='*insert_work::new_filter*'`.
#[inline(never)]
fn new_filter<F>(make: impl FnOnce() -> bloomkit::Result<F>) -> F {
    make().expect("filter")
}

#[inline(never)]
fn insert_all<K: ?Sized, F: OneKey<K>, Q: AsRef<K>>(f: &mut F, keys: &[Q]) {
    for key in keys {
        f.put(black_box(key.as_ref()));
    }
}

#[inline(never)]
fn query_present_all<K: ?Sized, F: OneKey<K>, Q: AsRef<K>>(f: &F, keys: &[Q]) -> usize {
    keys.iter().filter(|k| f.has(black_box(k.as_ref()))).count()
}

/// Counts the "no" answers (where `query_present_all` counts the "maybe"s): a different body,
/// so the linker cannot fold the two into one function and mix their counts.
#[inline(never)]
fn query_absent_all<K: ?Sized, F: OneKey<K>, Q: AsRef<K>>(f: &F, keys: &[Q]) -> usize {
    keys.iter()
        .filter(|k| !f.has(black_box(k.as_ref())))
        .count()
}

/// An integer key that reads as a `&u64` (the `AsRef` the loops take).
struct Int(u64);

impl AsRef<u64> for Int {
    fn as_ref(&self) -> &u64 {
        &self.0
    }
}

fn run<K: ?Sized, F: OneKey<K>, Q: AsRef<K>>(
    mut f: F,
    bits: u64,
    present: &[Q],
    absent: &[Q],
) -> (f64, f64) {
    insert_all(&mut f, present);
    run_filled(f, bits, present, absent)
}

/// [`run`]'s queries, for a filter `present` was already inserted into.
fn run_filled<K: ?Sized, F: OneKey<K>, Q: AsRef<K>>(
    f: F,
    bits: u64,
    present: &[Q],
    absent: &[Q],
) -> (f64, f64) {
    let found = query_present_all(&f, present);
    assert_eq!(found, present.len(), "a false negative");
    let fp = absent.len() - query_absent_all(&f, absent);
    (
        bits as f64 / present.len() as f64,
        fp as f64 / absent.len() as f64,
    )
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [filter, keys, n, absent] = args.as_slice() else {
        eprintln!(
            "usage: insert_work blocked|sector|classic|counting|scalable-classic|scalable|fastbloom \
             int|string KEYS ABSENT"
        );
        return ExitCode::from(2);
    };
    let (Ok(n), Ok(absent)) = (n.parse::<u64>(), absent.parse::<u64>()) else {
        eprintln!("insert_work: KEYS and ABSENT must be whole numbers");
        return ExitCode::from(2);
    };
    let p = 0.01;
    let fold = || foldhash::fast::FixedState::with_seed(FOLDHASH_SEED);
    macro_rules! go {
        ($key:ty, $present:expr, $absent:expr) => {{
            let (present, absent) = ($present, $absent);
            match filter.as_str() {
                "blocked" => {
                    let f = new_filter(|| BlockedBloomFilter::new(n, p));
                    let bits = f.num_bits();
                    run::<$key, _, _>(f, bits, &present, &absent)
                }
                "sector" => {
                    let f = new_filter(|| SectorBloomFilter::new(n, p));
                    let bits = f.num_bits();
                    run::<$key, _, _>(f, bits, &present, &absent)
                }
                "classic" => {
                    let f = new_filter(|| BloomFilter::new(n, p));
                    let bits = f.num_bits();
                    run::<$key, _, _>(f, bits, &present, &absent)
                }
                "counting" => {
                    let f = new_filter(|| CountingBloomFilter::new(n, p));
                    let bits = f.num_counters() * 4;
                    run::<$key, _, _>(f, bits, &present, &absent)
                }
                "scalable-classic" | "scalable" => {
                    let layout = if filter == "scalable" {
                        LayerLayout::Blocked
                    } else {
                        LayerLayout::Classic
                    };
                    let mut f = new_filter(|| {
                        ScalableBloomFilter::builder((n / 100).max(1), p)
                            .layout(layout)
                            .build()
                    });
                    // Bits are those of the grown chain: insert first, then count.
                    insert_all::<$key, _, _>(&mut f, &present);
                    let bits = f.memory_bytes() as u64 * 8;
                    run_filled::<$key, _, _>(f, bits, &present, &absent)
                }
                "fastbloom" => {
                    let f: Fastbloom = fastbloom::BloomFilter::with_false_pos(p)
                        .hasher(fold())
                        .expected_items(n as usize);
                    let bits = f.num_bits() as u64;
                    run::<$key, _, _>(f, bits, &present, &absent)
                }
                other => {
                    eprintln!("insert_work: unknown filter {other:?}");
                    return ExitCode::from(2);
                }
            }
        }};
    }
    let (bits_per_key, rate) = match keys.as_str() {
        "int" => go!(
            u64,
            (0..n).map(|i| Int(int_key(i))).collect::<Vec<_>>(),
            (0..absent)
                .map(|i| Int(int_key(ABSENT_BASE + i)))
                .collect::<Vec<_>>()
        ),
        "string" => {
            let strings = |range: std::ops::Range<u64>| {
                range
                    .map(|i| {
                        let mut s = String::new();
                        string_key(i, &mut s);
                        s
                    })
                    .collect::<Vec<String>>()
            };
            go!(
                str,
                strings(0..n),
                strings(ABSENT_BASE..ABSENT_BASE + absent)
            )
        }
        other => {
            eprintln!("insert_work: unknown keys {other:?} (int or string)");
            return ExitCode::from(2);
        }
    };
    println!(
        "{filter} {keys}: {n} keys, {bits_per_key:.2} bits/key, false-positive rate {:.4}% over {absent} absent keys",
        rate * 100.0
    );
    ExitCode::SUCCESS
}
