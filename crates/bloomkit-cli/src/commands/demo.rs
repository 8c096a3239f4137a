//! `bloomkit demo`: every filter kind side by side, measured on this machine.

use std::hint::black_box;
use std::time::{Duration, Instant};

use bloomkit::{sizing, AtomicBloomFilter, BlockedBloomFilter, BloomFilter, Filter};

use crate::error::{Error, Result};
use crate::{human, output};

/// A filter's size, as planned by the library, and the rate the sizing math predicts for it.
struct Plan {
    num_bits: u64,
    num_hashes: u32,
    predicted_rate: f64,
}

/// One row of the table.
struct Measured {
    kind: &'static str,
    plan: Plan,
    memory_bytes: usize,
    false_positives: u64,
    insert_time: Duration,
    query_time: Duration,
}

/// Builds a classic, a blocked and an atomic filter for `items` keys at `fp_rate`, times
/// inserting `items` present keys and querying `items` absent ones, and prints the sizes,
/// the predicted and measured false-positive rates, and the time per operation.
///
/// # Errors
///
/// A bad rate or size; and, were the library broken, a false negative.
pub fn run(items: u64, fp_rate: f64) -> Result<()> {
    // Build the filters first: a bad rate fails before a second is spent on keys.
    let classic = BloomFilter::new(items, fp_rate)?;
    let blocked = BlockedBloomFilter::new(items, fp_rate)?;
    let atomic = AtomicBloomFilter::new(items, fp_rate)?;

    // Keys are made before any timing, so the figures are the filters' alone. The prefixes
    // differ, so no absent key equals a present one: every "maybe" for an absent key is a
    // false positive.
    let present: Vec<String> = (0..items).map(|i| format!("user:{i:016x}")).collect();
    let absent: Vec<String> = (0..items).map(|i| format!("miss:{i:016x}")).collect();

    let plan = |bits: u64, hashes: u32, predict: fn(u64, u64, u32) -> f64| Plan {
        num_bits: bits,
        num_hashes: hashes,
        predicted_rate: predict(items, bits, hashes),
    };
    let rows = [
        measure(
            "classic",
            plan(
                classic.num_bits(),
                classic.num_hashes(),
                sizing::classic_fp_rate,
            ),
            classic,
            &present,
            &absent,
            |f, key| {
                f.insert(key);
            },
        )?,
        measure(
            "blocked",
            plan(
                blocked.num_bits(),
                blocked.num_hashes(),
                sizing::blocked_fp_rate,
            ),
            blocked,
            &present,
            &absent,
            |f, key| {
                f.insert(key);
            },
        )?,
        measure(
            "atomic",
            plan(
                atomic.num_bits(),
                atomic.num_hashes(),
                sizing::blocked_fp_rate,
            ),
            atomic,
            &present,
            &absent,
            // Through `&self`, the way many threads would share it; one thread here, so the
            // times compare with the others'.
            |f, key| {
                f.insert(key);
            },
        )?,
    ];

    let table_rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.kind.to_string(),
                human::bytes(r.memory_bytes as u64),
                format!("{:.2}", sizing::bits_per_key(r.plan.num_bits, items)),
                r.plan.num_hashes.to_string(),
                human::percent(r.plan.predicted_rate, 3),
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
            "hashes",
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
         predicted: the rate the sizing math expects for this size and number of hashes\n\
         measured:  the share of {n} absent keys the filter answered \"maybe\" for\n\
         ns/insert, ns/query: mean time per key, hashing the 21-byte key included\n\
         atomic is blocked with atomic words: it is Send + Sync, so many threads can insert\n\
         into one filter at once through &self, without a lock.\n",
        human::percent_sig(fp_rate),
    ))
}

/// Times inserting `present` and querying `absent`, then checks that every present key is
/// found.
fn measure<F: Filter>(
    kind: &'static str,
    plan: Plan,
    mut filter: F,
    present: &[String],
    absent: &[String],
    insert: impl Fn(&mut F, &str),
) -> Result<Measured> {
    let start = Instant::now();
    for key in present {
        insert(&mut filter, black_box(key.as_str()));
    }
    let insert_time = start.elapsed();

    let start = Instant::now();
    let mut false_positives = 0u64;
    for key in absent {
        // black_box on the key keeps the compiler from hoisting the hashing out of the timed
        // loop; the count uses every answer, so no query can be skipped.
        false_positives += u64::from(filter.contains(black_box(key.as_str())));
    }
    let query_time = start.elapsed();

    // A Bloom filter must never miss a key it holds. Checked after the timing, outside it.
    if let Some(missed) = present.iter().find(|key| !filter.contains(key.as_str())) {
        return Err(Error::Message(format!(
            "the {kind} filter says the inserted key '{missed}' is absent: a false negative, \
             which is a bug in bloomkit; please report it with this command line"
        )));
    }

    Ok(Measured {
        kind,
        plan,
        memory_bytes: filter.memory_bytes(),
        false_positives,
        insert_time,
        query_time,
    })
}
