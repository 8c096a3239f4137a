//! `BF.MERGE dest src [src ...]`: the union of Bloom filters built alike, into `dest`.
//!
//! `dest` is created as a copy of the first source when missing, else merged into. Every
//! filter involved must be mergeable with the first one
//! ([`ScalableBloomFilter::check_mergeable`]: the same layout, rate, capacity, growth, seed,
//! and the same layers); the first difference is the error, with both values and the two
//! keys, and nothing changes. After a merge each layer's item count is the estimate from its
//! bits (keys both filters held are not counted twice), so `BF.CARD` and `BF.INFO`'s
//! "Number of items inserted" report that estimate.
//!
//! The merge is logged as it was sent: replayed in order, its sources hold what they held
//! when it ran, so a replay or a replica reaches the same bits.

use bloomkit::{Error, ScalableBloomFilter};
use smallvec::smallvec;

use super::{lookup, LOADCHUNK};
use crate::errors::WRONGTYPE;
use crate::reply::Reply;
use crate::run::{Args, Ctx, Outcome, Record};
use crate::shared::{admit_new_filter, Lookup};
use crate::value::Value;

/// Runs `BF.MERGE key keys...` against `key`'s slot, `values` holding what each of `keys`
/// holds (a source named as the destination is read from the slot, whatever `values` says
/// of it).
pub(crate) fn merge<'c>(
    key: &'c [u8],
    slot: &mut Option<Value>,
    keys: Args<'c>,
    values: &[Option<&Value>],
    ctx: &Ctx<'_>,
) -> Outcome<'c> {
    match check(key, slot.as_ref(), keys, values, ctx) {
        Ok(()) => {}
        Err(reply) => return Outcome::unchanged(reply),
    }
    let mut sources = keys
        .iter()
        .zip(values)
        .filter(|(source, _)| **source != key)
        .filter_map(|(_, value)| match value {
            Some(Value::Bloom(f)) => Some(f),
            _ => None,
        });
    if slot.is_none() {
        // `check` found at least one source that is not the destination.
        let Some(first) = sources.next() else {
            return Outcome::unchanged(Reply::error(crate::errors::NOT_FOUND));
        };
        *slot = Some(Value::Bloom(first.clone()));
    }
    let Some(Value::Bloom(dest)) = slot.as_mut() else {
        return Outcome::unchanged(Reply::error(WRONGTYPE));
    };
    for source in sources {
        // Checked above: cannot fail, and would leave `dest` unchanged if it did.
        let _ = dest.merge(source);
    }
    Outcome {
        reply: Reply::Ok,
        log: smallvec![Record::Items {
            name: "BF.MERGE",
            key,
            items: keys,
        }],
    }
}

/// Every check `BF.MERGE` makes before it changes anything: the destination's type, each
/// source's existence and type, every filter mergeable with the first, and the memory of a
/// new destination.
fn check(
    key: &[u8],
    dest: Option<&Value>,
    keys: Args<'_>,
    values: &[Option<&Value>],
    ctx: &Ctx<'_>,
) -> Result<(), Reply> {
    if values.len() != keys.len() {
        return Err(Reply::Error(format!(
            "ERR BF.MERGE was given {} source values for {} source keys",
            values.len(),
            keys.len()
        )));
    }
    let dest = match lookup(dest) {
        Ok(f) => Some(f),
        Err(Lookup::Missing) => None,
        Err(status) => return Err(status.error(LOADCHUNK)),
    };
    let mut first: Option<(&[u8], &ScalableBloomFilter)> = dest.map(|f| (key, f));
    for (&source, value) in keys.iter().zip(values) {
        if source == key {
            // The destination itself: a union with itself changes nothing, but it must exist.
            if dest.is_none() {
                return Err(missing_source(source));
            }
            continue;
        }
        let filter = match lookup(*value) {
            Ok(f) => f,
            Err(Lookup::Missing) => return Err(missing_source(source)),
            Err(status) => return Err(status.error(LOADCHUNK)),
        };
        match first {
            None => first = Some((source, filter)),
            Some((first_key, first_filter)) => {
                if let Err(e) = first_filter.check_mergeable(filter) {
                    return Err(incompatible(first_key, source, e));
                }
            }
        }
    }
    if dest.is_none() {
        if let Some((_, f)) = first {
            admit_new_filter(ctx.budget, f.memory_bytes())?;
        }
    }
    Ok(())
}

fn missing_source(key: &[u8]) -> Reply {
    Reply::Error(format!(
        "ERR not found: no filter at source key '{}'",
        String::from_utf8_lossy(key)
    ))
}

/// `-ERR filters are not compatible: <what differs> is <a> in '<key a>' and <b> in '<key b>'`.
fn incompatible(left_key: &[u8], right_key: &[u8], error: Error) -> Reply {
    let lossy = String::from_utf8_lossy;
    match error {
        Error::Incompatible {
            parameter,
            left,
            right,
        } => Reply::Error(format!(
            "ERR filters are not compatible: {parameter} is {left} in '{}' and {right} in '{}'",
            lossy(left_key),
            lossy(right_key)
        )),
        other => Reply::Error(format!("ERR filters are not compatible: {other}")),
    }
}
