//! `bloomkit demo`: every filter kind side by side, measured on this machine.

use std::hint::black_box;
use std::time::{Duration, Instant};

use bloomkit::{AnyFilter, AtomicBloomFilter, BloomFilter, FilterKind};

use crate::error::{Error, Result};
use crate::{human, kinds, output};

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

/// Builds a filter of every kind of the library's list ([`FilterKind::ALL`], and the atomic
/// filter beside the blocked one) for `items` keys at `fp_rate`, times inserting `items`
/// present keys (building, for a static kind) and querying `items` absent ones, and prints
/// the sizes, the predicted and measured false-positive rates, and the time per operation.
/// A kind that cannot make such a filter (a rate its fingerprints cannot reach) gets a row
/// of dashes and its reason.
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
    let mut table_rows = Vec::new();
    let mut refused = String::new();
    for kind in FilterKind::ALL {
        match measure_kind(kind, &keys, fp_rate) {
            Ok(measured) => table_rows.push(measured.row(items)),
            // What one kind cannot make (a rate past its fingerprints) is that kind's row.
            Err(Error::Plain(e)) => {
                let mut row = vec![kind.name().to_string()];
                row.extend(std::iter::repeat_n("-".to_string(), 6));
                table_rows.push(row);
                refused.push_str(&format!("{kind}: {e}\n"));
            }
            Err(e) => return Err(e),
        }
        // The atomic filter is the blocked one, inserted into through `&self`.
        if kind == FilterKind::Blocked {
            let atomic = measure_atomic(&keys, AtomicBloomFilter::new(items, fp_rate)?)?;
            table_rows.push(atomic.row(items));
        }
    }
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
        "{n} keys at a target false-positive rate of {}, on one thread:\n\n{table}\n{refused}\
         bits/key:  the memory the filter holds, per key\n\
         predicted: the rate the sizing math expects for this shape and count of keys\n\
         measured:  the share of {n} absent keys the filter answered \"maybe\" for\n\
         ns/insert, ns/query: mean time per key, hashing the 21-byte key included\n\n{}",
        human::percent_sig(fp_rate),
        kind_notes(),
    ))
}

/// A line on each kind: the library's summary, and how the demo sets it up where that
/// differs from the other kinds.
fn kind_notes() -> String {
    let mut notes = String::new();
    for kind in FilterKind::ALL {
        let setup = match kind {
            FilterKind::Scalable => "; planned here for a hundredth of the keys, grown 100×",
            FilterKind::Aging => "; here two generations of half the keys each",
            kind if kind.is_static() => "; ns/insert is its build per key",
            _ => "",
        };
        notes.push_str(&format!(
            "{}{}{setup}\n",
            kinds::label(kind.name()),
            kind.summary()
        ));
        if kind == FilterKind::Blocked {
            notes.push_str(&format!(
                "{}blocked with atomic words: many threads insert at once through &self\n",
                kinds::label("atomic")
            ));
        }
    }
    notes
}

impl Measured {
    /// The row of the table for a filter of `items` keys.
    fn row(&self, items: u64) -> Vec<String> {
        vec![
            self.kind.to_string(),
            human::bytes(self.memory_bytes as u64),
            format!("{:.2}", self.memory_bytes as f64 * 8.0 / items as f64),
            human::percent(self.predicted_rate, 3),
            human::percent(self.false_positives as f64 / items as f64, 3),
            human::ns_per(self.insert_time, items),
            human::ns_per(self.query_time, items),
        ]
    }
}

/// Builds a filter of `kind` from the present keys, timing the inserts (for a static kind,
/// hashing the keys and building from the hashes), and measures it. A scalable filter is
/// planned for a hundredth of the keys, so that it shows its growth; an aging filter takes
/// half the keys in each of its two generations, as a full window does.
fn measure_kind(kind: FilterKind, keys: &Keys, fp_rate: f64) -> Result<Measured> {
    let n = keys.present.len() as u64;
    if kind.is_static() {
        let start = Instant::now();
        let hashes: Vec<u64> = keys
            .present
            .iter()
            .map(|k| bloomkit::hash(black_box(k.as_str())))
            .collect();
        let filter = AnyFilter::build_from_hashes(kind, &hashes, fp_rate)?;
        let build_time = start.elapsed();
        return finish(kind.name(), keys, filter, build_time);
    }
    let planned = match kind {
        FilterKind::Scalable => (n / 100).max(1),
        FilterKind::Aging => n.div_ceil(2).max(1),
        _ => n,
    };
    let mut filter = AnyFilter::new(kind, planned, fp_rate)?;
    let insert_time = time_inserts(&mut filter, &keys.present)?;
    finish(kind.name(), keys, filter, insert_time)
}

/// Times inserting `present` into `filter` with the kind's own `insert`, so that the time
/// is the kind's and not a dispatch's (a kind not named here goes through
/// [`AnyFilter::insert`]). An aging filter rotates half way, into its second generation.
fn time_inserts(filter: &mut AnyFilter, present: &[String]) -> Result<Duration> {
    fn each<F>(present: &[String], mut insert: F) -> Result<()>
    where
        F: FnMut(&str) -> bloomkit::Result<()>,
    {
        for key in present {
            insert(black_box(key.as_str()))?;
        }
        Ok(())
    }
    let start = Instant::now();
    match filter {
        AnyFilter::Classic(f) => each(present, |k| {
            f.insert(k);
            Ok(())
        })?,
        AnyFilter::Blocked(f) => each(present, |k| {
            f.insert(k);
            Ok(())
        })?,
        AnyFilter::Sector(f) => each(present, |k| {
            f.insert(k);
            Ok(())
        })?,
        AnyFilter::Counting(f) => each(present, |k| {
            f.insert(k);
            Ok(())
        })?,
        AnyFilter::Scalable(f) => each(present, |k| f.insert(k).map(drop))?,
        AnyFilter::Cuckoo(f) => each(present, |k| f.insert(k))?,
        AnyFilter::Aging(f) => {
            let half = present.len() / 2;
            for (i, key) in present.iter().enumerate() {
                if i == half {
                    f.rotate();
                }
                f.insert(black_box(key.as_str()));
            }
        }
        other => each(present, |k| other.insert(k).map(drop))?,
    }
    Ok(start.elapsed())
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
