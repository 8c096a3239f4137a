//! `bloomkit demo`: every filter kind side by side, measured on this machine.

use std::hint::black_box;
use std::time::{Duration, Instant};

use bloomkit::{
    AgingBloomFilter, AnyFilter, AtomicBloomFilter, BinaryFuseFilter, BlockedBloomFilter,
    BloomFilter, CountingBloomFilter, CuckooFilter, RibbonFilter, ScalableBloomFilter,
    SectorBloomFilter,
};

use crate::error::{Error, Result};
use crate::{human, output};

/// One row of the table.
struct Measured {
    kind: &'static str,
    memory_bytes: usize,
    predicted_rate: f64,
    false_positives: u64,
    insert_time: Duration,
    query_time: Duration,
}

/// The keys, made before any timing so the figures are the filters' alone. The prefixes
/// differ, so no absent key equals a present one: every "maybe" for an absent key is a
/// false positive.
struct Keys {
    present: Vec<String>,
    absent: Vec<String>,
}

/// Builds every kind of filter for `items` keys at `fp_rate`, times inserting `items`
/// present keys (building, for the static ribbon filter) and querying `items` absent ones,
/// and prints the sizes, the predicted and measured false-positive rates, and the time per
/// operation.
///
/// # Errors
///
/// A bad rate or size; and, were the library broken, a false negative.
pub fn run(items: u64, fp_rate: f64) -> Result<()> {
    // A bad rate fails before a second is spent on keys.
    BloomFilter::new(items, fp_rate)?;
    let keys = Keys {
        present: (0..items).map(|i| format!("user:{i:016x}")).collect(),
        absent: (0..items).map(|i| format!("miss:{i:016x}")).collect(),
    };
    let n = items;
    let rows = [
        measure("classic", &keys, BloomFilter::new(n, fp_rate)?, |f, k| {
            f.insert(k);
            Ok(())
        })?,
        measure(
            "blocked",
            &keys,
            BlockedBloomFilter::new(n, fp_rate)?,
            |f, k| {
                f.insert(k);
                Ok(())
            },
        )?,
        measure(
            "sector",
            &keys,
            SectorBloomFilter::new(n, fp_rate)?,
            |f, k| {
                f.insert(k);
                Ok(())
            },
        )?,
        measure_atomic(&keys, AtomicBloomFilter::new(n, fp_rate)?)?,
        measure(
            "counting",
            &keys,
            CountingBloomFilter::new(n, fp_rate)?,
            |f, k| {
                f.insert(k);
                Ok(())
            },
        )?,
        // Planned for a hundredth of the keys, so the table shows it after growing 100×.
        measure(
            "scalable",
            &keys,
            ScalableBloomFilter::new((n / 100).max(1), fp_rate)?,
            |f, k| f.insert(k).map(drop).map_err(Error::from),
        )?,
        measure("cuckoo", &keys, CuckooFilter::new(n, fp_rate)?, |f, k| {
            f.insert(k).map_err(Error::from)
        })?,
        measure_ribbon(&keys, fp_rate)?,
        measure_fuse(&keys, fp_rate)?,
        measure_aging(&keys, fp_rate)?,
    ];

    let table_rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.kind.to_string(),
                human::bytes(r.memory_bytes as u64),
                format!("{:.2}", r.memory_bytes as f64 * 8.0 / items as f64),
                human::percent(r.predicted_rate, 3),
                human::percent(r.false_positives as f64 / items as f64, 3),
                human::ns_per(r.insert_time, items),
                human::ns_per(r.query_time, items),
            ]
        })
        .collect();
    let table = human::table(
        &[
            "kind",
            "bytes",
            "bits/key",
            "predicted",
            "measured",
            "ns/insert",
            "ns/query",
        ],
        &table_rows,
    );
    let n = human::count(items);
    output::print(&format!(
        "{n} keys at a target false-positive rate of {}, on one thread:\n\n{table}\n\
         bits/key:  the memory the filter holds, per key\n\
         predicted: the rate the sizing math expects for this shape and count of keys\n\
         measured:  the share of {n} absent keys the filter answered \"maybe\" for\n\
         ns/insert, ns/query: mean time per key, hashing the 21-byte key included\n\n\
         sector:   blocked with the same bits in each word of the line: the cheapest inserts\n\
         atomic:   blocked with atomic words; many threads insert at once through &self\n\
         counting: removes keys; 4-bit counters cost about 4× the memory of classic\n\
         scalable: planned for a hundredth of the keys, grown 100× in layers\n\
         cuckoo:   removes and counts keys; rate fixed by fingerprint bits\n\
         ribbon:   static, solved from all keys at once (ns/insert is build time per key);\n\
         \x20         its rate is 2^-r, the power of two at or under the target\n\
         fuse:     static, built from all keys at once, the fastest queries; 8-bit\n\
         \x20         fingerprints (2^-8) for targets from 0.39%, 16-bit (2^-16) below\n\
         aging:    two generations of half the keys each, rotated once; rotate again and\n\
         \x20         the older half is forgotten\n",
        human::percent_sig(fp_rate),
    ))
}

/// Times inserting the present keys with `insert`, then queries.
fn measure<F: bloomkit::Filter + Into<AnyFilter>>(
    kind: &'static str,
    keys: &Keys,
    mut filter: F,
    insert: impl Fn(&mut F, &str) -> Result<()>,
) -> Result<Measured> {
    let start = Instant::now();
    for key in &keys.present {
        insert(&mut filter, black_box(key.as_str()))?;
    }
    let insert_time = start.elapsed();
    finish(kind, keys, filter.into(), insert_time)
}

/// The atomic filter inserts through `&self`, one thread here, so the times compare.
fn measure_atomic(keys: &Keys, filter: AtomicBloomFilter) -> Result<Measured> {
    let start = Instant::now();
    for key in &keys.present {
        filter.insert(black_box(key.as_str()));
    }
    let insert_time = start.elapsed();
    // Its queries are timed on its own type; the rest of the row on the identical blocked
    // filter it converts to.
    let (false_positives, query_time) = time_queries(keys, |k| filter.contains(k));
    let mut row = finish("atomic", keys, filter.to_blocked()?.into(), insert_time)?;
    row.false_positives = false_positives;
    row.query_time = query_time;
    row.memory_bytes = filter.memory_bytes();
    Ok(row)
}

/// The ribbon filter is built from all keys at once: the build is its "insert" time.
fn measure_ribbon(keys: &Keys, fp_rate: f64) -> Result<Measured> {
    let start = Instant::now();
    let filter = RibbonFilter::build(keys.present.iter().map(|k| k.as_str()), fp_rate)?;
    let insert_time = start.elapsed();
    finish("ribbon", keys, filter.into(), insert_time)
}

/// The binary fuse filter is built from all keys at once, as the ribbon filter is, with the
/// fewest fingerprint bits that meet the target (16 where even they do not).
fn measure_fuse(keys: &Keys, fp_rate: f64) -> Result<Measured> {
    let bits = BinaryFuseFilter::fingerprint_bits_for(fp_rate).unwrap_or(16);
    let start = Instant::now();
    let filter = BinaryFuseFilter::builder(fp_rate)
        .fingerprint_bits(bits)
        .build(keys.present.iter().map(|k| k.as_str()))?;
    let insert_time = start.elapsed();
    finish("fuse", keys, filter.into(), insert_time)
}

/// Half the keys into one generation, a rotation, the other half into the next: a full
/// window of two generations, as a CDN's filter is in its steady state.
fn measure_aging(keys: &Keys, fp_rate: f64) -> Result<Measured> {
    let half = keys.present.len() / 2;
    let mut filter = AgingBloomFilter::new((half as u64).max(1), fp_rate)?;
    let start = Instant::now();
    for (i, key) in keys.present.iter().enumerate() {
        if i == half {
            filter.rotate();
        }
        filter.insert(black_box(key.as_str()));
    }
    let insert_time = start.elapsed();
    finish("aging", keys, filter.into(), insert_time)
}

/// Times the absent-key queries, then checks that every present key is found.
fn finish(
    kind: &'static str,
    keys: &Keys,
    filter: AnyFilter,
    insert_time: Duration,
) -> Result<Measured> {
    let (false_positives, query_time) = match &filter {
        // Each kind's own `contains`, so the time is the kind's, not a dispatch's.
        AnyFilter::Classic(f) => time_queries(keys, |k| f.contains(k)),
        AnyFilter::Blocked(f) => time_queries(keys, |k| f.contains(k)),
        AnyFilter::Counting(f) => time_queries(keys, |k| f.contains(k)),
        AnyFilter::Scalable(f) => time_queries(keys, |k| f.contains(k)),
        AnyFilter::Cuckoo(f) => time_queries(keys, |k| f.contains(k)),
        AnyFilter::Ribbon(f) => time_queries(keys, |k| f.contains(k)),
        AnyFilter::Aging(f) => time_queries(keys, |k| f.contains(k)),
        AnyFilter::Fuse(f) => time_queries(keys, |k| f.contains(k)),
        _ => time_queries(keys, |k| filter.contains(k)),
    };
    // A filter must never miss a key it holds. Checked after the timing, outside it.
    if let Some(missed) = keys.present.iter().find(|k| !filter.contains(k.as_str())) {
        return Err(Error::Message(format!(
            "the {kind} filter says the inserted key '{missed}' is absent: a false negative, \
             which is a bug in bloomkit; please report it with this command line"
        )));
    }
    Ok(Measured {
        kind,
        memory_bytes: filter.memory_bytes(),
        predicted_rate: filter.predicted_fp_rate(),
        false_positives,
        insert_time,
        query_time,
    })
}

/// Queries every absent key; returns how many answered "maybe" and the time taken.
fn time_queries(keys: &Keys, contains: impl Fn(&str) -> bool) -> (u64, Duration) {
    let start = Instant::now();
    let mut false_positives = 0u64;
    for key in &keys.absent {
        // black_box on the key keeps the compiler from hoisting the hashing out of the timed
        // loop; the count uses every answer, so no query can be skipped.
        false_positives += u64::from(contains(black_box(key.as_str())));
    }
    (false_positives, start.elapsed())
}
