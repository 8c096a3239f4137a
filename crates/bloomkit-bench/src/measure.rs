//! The two regimes, and how one contender is measured in each.
//!
//! **In cache.** Each filter is sized to about 64 KiB ([`Target::AtMost`]), so it lives in
//! the core's L2 (and mostly L1). Inserting all `n` keys into a fresh filter is repeated, and
//! so are passes of queries for the `n` present keys (about a million queries a pass) and
//! for a million absent keys; each figure is the median of the repetitions.
//!
//! **Out of cache.** Each filter takes at least 512 MiB ([`Target::AtLeast`]), far past the
//! last-level cache, so nearly every query misses. One pass inserts all `n` keys (hundreds of
//! millions: the figure is the mean over them all, so it includes the filter filling up).
//! Queries are a sample of random present keys and of absent keys; each sample is cut into
//! equal parts, each part is one repetition, and the figure is their median. The
//! false-positive rate counts the whole absent sample.
//!
//! In both, keys are generated from counters ([`crate::keys`]) into a small reusable pool of
//! [`Config::batch`] keys outside the timed region; only the filter's work on a full pool is
//! timed, and the times of the pools are summed. The pool is small enough to stay in L2 beside
//! a 64 KiB filter, so it does not push the filter out of cache, and no key is stored for the
//! out-of-cache regime. Hashing is inside the timed region: it is part of every insert and
//! query a user makes.
//!
//! A contender that panics, fails to build, or would need more memory to build than the
//! machine has is reported as skipped, with the reason, and the run goes on.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Duration;

use crate::keys::{sample_index, Key, KeyPool, ABSENT_BASE};
use crate::subject::{Contender, Info, Subject, Target};
use crate::timing::{median, ns_per_op, timed};

/// Where the filter lives while it is measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Regime {
    /// About 64 KiB: in the core's caches.
    Cache,
    /// At least 512 MiB: in main memory, queries at random lines.
    Memory,
}

impl Regime {
    /// How the report names it.
    pub fn label(self) -> &'static str {
        match self {
            Regime::Cache => "in cache",
            Regime::Memory => "out of cache",
        }
    }
}

/// Sizes and repetition counts for a run.
#[derive(Clone, Debug)]
pub struct Config {
    /// The target false-positive rate every filter is built for.
    pub fp_rate: f64,
    /// In cache: the most bytes a filter may take.
    pub cache_bytes: u64,
    /// In cache: repetitions of each measurement.
    pub cache_reps: usize,
    /// In cache: absent keys queried per repetition (the false-positive rate counts them).
    pub cache_absent: u64,
    /// In cache: present-key queries per repetition, at least (whole passes over the `n`).
    pub cache_present_queries: u64,
    /// Out of cache: the fewest bytes a filter may take.
    pub memory_bytes: u64,
    /// Out of cache: random present keys queried, and absent keys queried.
    pub memory_sample: u64,
    /// Out of cache: the parts each sample is cut into (the repetitions).
    pub memory_reps: usize,
    /// Keys per pool: generated untimed, then handed to the filter in one timed call.
    pub batch: usize,
    /// Bytes a build may take at its peak; a contender that needs more is skipped.
    pub memory_budget: u64,
}

impl Config {
    /// The full suite: 64 KiB in cache with a million absent keys; 512 MiB out of cache with
    /// samples of ten million.
    pub fn full() -> Self {
        Config {
            fp_rate: 0.01,
            cache_bytes: 64 << 10,
            cache_reps: 7,
            cache_absent: 1_000_000,
            cache_present_queries: 1_000_000,
            memory_bytes: 512 << 20,
            memory_sample: 10_000_000,
            memory_reps: 5,
            batch: 8192,
            memory_budget: default_memory_budget(),
        }
    }

    /// A smoke run: the same shape, shrunk to finish in well under a minute. Its
    /// "out of cache" filters (8 MiB) still fit in a large last-level cache, so its figures
    /// only show that everything runs.
    pub fn quick() -> Self {
        Config {
            cache_reps: 5,
            cache_absent: 200_000,
            cache_present_queries: 200_000,
            memory_bytes: 8 << 20,
            memory_sample: 500_000,
            ..Config::full()
        }
    }

    /// Tiny sizes for tests: a few KiB, a few thousand queries.
    pub fn tiny() -> Self {
        Config {
            cache_bytes: 16 << 10,
            cache_reps: 3,
            cache_absent: 200_000,
            cache_present_queries: 20_000,
            memory_bytes: 64 << 10,
            memory_sample: 20_000,
            memory_reps: 3,
            batch: 1024,
            ..Config::full()
        }
    }
}

/// Nine tenths of the memory the machine has available now (`MemAvailable` in
/// `/proc/meminfo`), or 8 GiB where that cannot be read.
pub fn default_memory_budget() -> u64 {
    let available = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| {
            text.lines()
                .find(|l| l.starts_with("MemAvailable:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kib| kib.parse::<u64>().ok())
                .map(|kib| kib * 1024)
        });
    available.map_or(8 << 30, |bytes| bytes / 10 * 9)
}

/// One contender's figures in one regime for one key type.
#[derive(Clone, Debug)]
pub struct Row {
    /// Who was measured.
    pub info: Info,
    /// Where.
    pub regime: Regime,
    /// `"int"` or `"string"`.
    pub key_type: &'static str,
    /// Keys the filter was built for, and holds.
    pub n: u64,
    /// Bytes the filter holds.
    pub memory_bytes: u64,
    /// Nanoseconds per insert (per key built, for a static filter), hashing included.
    pub insert_ns: f64,
    /// Nanoseconds per query of a present key.
    pub present_ns: f64,
    /// Nanoseconds per query of an absent key.
    pub absent_ns: f64,
    /// Nanoseconds per query of an absent key by its precomputed `bloomkit::hash`, where
    /// the filter accepts one: the data structure's cost alone.
    pub absent_hash_ns: Option<f64>,
    /// Absent keys answered "maybe".
    pub false_positives: u64,
    /// Absent keys queried.
    pub absent_queries: u64,
    /// Present keys answered "absent": false negatives, which a correct filter never gives.
    pub missed_present: u64,
    /// Present keys queried.
    pub present_queries: u64,
    /// Inserts the filter refused (full).
    pub refused: u64,
}

impl Row {
    /// Bits of memory per key held.
    pub fn bits_per_key(&self) -> f64 {
        self.memory_bytes as f64 * 8.0 / self.n as f64
    }

    /// The measured false-positive rate.
    pub fn fp_rate(&self) -> f64 {
        self.false_positives as f64 / self.absent_queries.max(1) as f64
    }
}

/// A contender's result: figures, or why there are none.
#[derive(Clone, Debug)]
pub enum Outcome {
    /// It ran.
    Measured(Row),
    /// It did not run, or failed; the reason is for the report.
    Skipped {
        /// Who.
        info: Info,
        /// Why, in a few words.
        reason: String,
    },
}

impl Outcome {
    /// The contender's description.
    pub fn info(&self) -> &Info {
        match self {
            Outcome::Measured(row) => &row.info,
            Outcome::Skipped { info, .. } => info,
        }
    }

    /// The figures, if it ran.
    pub fn row(&self) -> Option<&Row> {
        match self {
            Outcome::Measured(row) => Some(row),
            Outcome::Skipped { .. } => None,
        }
    }
}

/// Measures `contender` in `regime` with keys of type `K`. Panics inside the contender are
/// caught and reported as a skip.
pub fn measure<K: Key + ?Sized>(
    contender: &dyn Contender<K>,
    regime: Regime,
    config: &Config,
) -> Outcome {
    let info = contender.info();
    let result = catch_unwind(AssertUnwindSafe(|| match regime {
        Regime::Cache => measure_in_cache(contender, config),
        Regime::Memory => measure_out_of_cache(contender, config),
    }));
    let reason = match result {
        Ok(Ok(mut row)) => {
            row.info = info;
            return Outcome::Measured(row);
        }
        Ok(Err(reason)) => reason,
        Err(panic) => {
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "unknown panic".to_string());
            format!("panicked: {message}")
        }
    };
    Outcome::Skipped { info, reason }
}

/// Where the keys of a pass come from: pass position `j` → key counter.
type Counters<'a> = &'a dyn Fn(u64) -> u64;

/// Runs `op` over the keys for positions `range` (counters from `counter`), `batch` keys at
/// a time: each pool is generated untimed, then `op` on it is timed. Returns the summed time
/// and the sum of what `op` returned.
fn pass<K: Key + ?Sized>(
    pool: &mut K::Pool,
    batch: usize,
    range: std::ops::Range<u64>,
    counter: Counters<'_>,
    mut op: impl FnMut(&K::Pool) -> u64,
) -> (Duration, u64) {
    let mut elapsed = Duration::ZERO;
    let mut total = 0;
    let mut start = range.start;
    while start < range.end {
        let end = (start + batch as u64).min(range.end);
        pool.fill((start..end).map(counter));
        let (t, r) = timed(|| op(pool));
        elapsed += t;
        total += r;
        start = end;
    }
    (elapsed, total)
}

/// Like [`pass`], but hands `op` the pool's keys as precomputed `bloomkit::hash`es.
fn hash_pass<K: Key + ?Sized>(
    pool: &mut K::Pool,
    hashes: &mut Vec<u64>,
    batch: usize,
    range: std::ops::Range<u64>,
    counter: Counters<'_>,
    mut op: impl FnMut(&[u64]) -> u64,
) -> (Duration, u64) {
    let mut elapsed = Duration::ZERO;
    let mut total = 0;
    let mut start = range.start;
    while start < range.end {
        let end = (start + batch as u64).min(range.end);
        pool.fill((start..end).map(counter));
        hashes.clear();
        pool.for_each(|key| hashes.push(bloomkit::hash(key)));
        let (t, r) = timed(|| op(hashes));
        elapsed += t;
        total += r;
        start = end;
    }
    (elapsed, total)
}

fn present_counter(j: u64) -> u64 {
    j
}

fn absent_counter(j: u64) -> u64 {
    ABSENT_BASE + j
}

/// A blank row to fill in.
fn row(contender_info: Info, regime: Regime, key_type: &'static str, n: u64) -> Row {
    Row {
        info: contender_info,
        regime,
        key_type,
        n,
        memory_bytes: 0,
        insert_ns: 0.0,
        present_ns: 0.0,
        absent_ns: 0.0,
        absent_hash_ns: None,
        false_positives: 0,
        absent_queries: 0,
        missed_present: 0,
        present_queries: 0,
        refused: 0,
    }
}

/// A filter with its keys in, the time that took, and the keys it refused.
type Filled<K> = (Box<dyn Subject<K>>, Duration, u64);

/// Builds a filter for `n` keys and inserts keys `0..n`; returns it with the time taken
/// (inserts and `finish`) and the number of refused keys.
fn build_and_fill<K: Key + ?Sized>(
    contender: &dyn Contender<K>,
    n: u64,
    config: &Config,
    pool: &mut K::Pool,
) -> Result<Filled<K>, String> {
    let mut filter = contender.build(n, config.fp_rate)?;
    let (mut elapsed, refused) = pass::<K>(pool, config.batch, 0..n, &present_counter, |keys| {
        filter.insert_pool(keys)
    });
    let (t, built) = timed(|| filter.finish());
    built?;
    elapsed += t;
    Ok((filter, elapsed, refused))
}

fn measure_in_cache<K: Key + ?Sized>(
    contender: &dyn Contender<K>,
    config: &Config,
) -> Result<Row, String> {
    let p = config.fp_rate;
    let n = contender.keys_for(Target::AtMost(config.cache_bytes), p)?;
    let mut out = row(contender.info(), Regime::Cache, K::NAME, n);
    let mut pool = K::Pool::default();
    let reps = config.cache_reps.max(1);

    // Inserts: a fresh filter each repetition; the last one is kept for the queries.
    let mut insert_ns = Vec::with_capacity(reps);
    let mut kept = None;
    for _ in 0..reps {
        let (filter, elapsed, refused) = build_and_fill(contender, n, config, &mut pool)?;
        insert_ns.push(ns_per_op(elapsed, n));
        out.refused = refused;
        kept = Some(filter);
    }
    let filter = kept.expect("at least one repetition");
    out.insert_ns = median(insert_ns);
    out.memory_bytes = filter.memory_bytes() as u64;

    // Present keys: whole passes over the n keys, enough for the configured query count.
    let passes = config.cache_present_queries.div_ceil(n).max(1);
    let mut present_ns = Vec::with_capacity(reps);
    for _ in 0..reps {
        let mut elapsed = Duration::ZERO;
        let mut found = 0;
        for _ in 0..passes {
            let (t, f) = pass::<K>(&mut pool, config.batch, 0..n, &present_counter, |keys| {
                filter.count_pool(keys)
            });
            elapsed += t;
            found += f;
        }
        present_ns.push(ns_per_op(elapsed, passes * n));
        out.present_queries = passes * n;
        out.missed_present = passes * n - found;
    }
    out.present_ns = median(present_ns);

    // Absent keys: the same million each repetition, so every repetition counts the same
    // false positives.
    let absent = 0..config.cache_absent;
    let mut absent_ns = Vec::with_capacity(reps);
    for _ in 0..reps {
        let (t, fp) = pass::<K>(
            &mut pool,
            config.batch,
            absent.clone(),
            &absent_counter,
            |keys| filter.count_pool(keys),
        );
        absent_ns.push(ns_per_op(t, config.cache_absent));
        out.false_positives = fp;
        out.absent_queries = config.cache_absent;
    }
    out.absent_ns = median(absent_ns);

    if filter.supports_hash() {
        let mut hashes = Vec::with_capacity(config.batch);
        let mut hash_ns = Vec::with_capacity(reps);
        for _ in 0..reps {
            let (t, _) = hash_pass::<K>(
                &mut pool,
                &mut hashes,
                config.batch,
                absent.clone(),
                &absent_counter,
                |h| filter.count_hashes(h),
            );
            hash_ns.push(ns_per_op(t, config.cache_absent));
        }
        out.absent_hash_ns = Some(median(hash_ns));
    }
    Ok(out)
}

fn measure_out_of_cache<K: Key + ?Sized>(
    contender: &dyn Contender<K>,
    config: &Config,
) -> Result<Row, String> {
    let p = config.fp_rate;
    let n = contender.keys_for(Target::AtLeast(config.memory_bytes), p)?;
    let peak = contender.build_peak_bytes(n, p);
    if peak > config.memory_budget {
        return Err(format!(
            "building it for {n} keys needs about {} GiB at its peak; this machine has {} GiB \
             to spare",
            peak >> 30,
            config.memory_budget >> 30
        ));
    }
    let mut out = row(contender.info(), Regime::Memory, K::NAME, n);
    let mut pool = K::Pool::default();

    // One pass over all n keys: rebuilding a 512 MiB filter several times would take minutes
    // per contender, and hundreds of millions of inserts average out any one disturbance.
    let (filter, elapsed, refused) = build_and_fill(contender, n, config, &mut pool)?;
    out.insert_ns = ns_per_op(elapsed, n);
    out.refused = refused;
    out.memory_bytes = filter.memory_bytes() as u64;

    let reps = config.memory_reps.max(1) as u64;
    let part = (config.memory_sample / reps).max(1);
    // Random present keys: position j of the sample queries key sample_index(j) < n, so
    // every query lands on a random line.
    let random_present = move |j: u64| sample_index(1, j, n);
    let mut present_ns = Vec::new();
    let mut absent_ns = Vec::new();
    let mut hash_ns = Vec::new();
    let mut hashes = Vec::with_capacity(config.batch);
    for r in 0..reps {
        let range = r * part..(r + 1) * part;
        let (t, found) = pass::<K>(
            &mut pool,
            config.batch,
            range.clone(),
            &random_present,
            |keys| filter.count_pool(keys),
        );
        present_ns.push(ns_per_op(t, part));
        out.present_queries += part;
        out.missed_present += part - found;

        let (t, fp) = pass::<K>(
            &mut pool,
            config.batch,
            range.clone(),
            &absent_counter,
            |keys| filter.count_pool(keys),
        );
        absent_ns.push(ns_per_op(t, part));
        out.false_positives += fp;
        out.absent_queries += part;

        if filter.supports_hash() {
            let (t, _) = hash_pass::<K>(
                &mut pool,
                &mut hashes,
                config.batch,
                range,
                &absent_counter,
                |h| filter.count_hashes(h),
            );
            hash_ns.push(ns_per_op(t, part));
        }
    }
    out.present_ns = median(present_ns);
    out.absent_ns = median(absent_ns);
    if !hash_ns.is_empty() {
        out.absent_hash_ns = Some(median(hash_ns));
    }
    Ok(out)
}
