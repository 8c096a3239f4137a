//! `bloomkit build`: a filter from lines of keys.

use std::path::{Path, PathBuf};

use bloomkit::{
    AgingBloomFilter, AnyFilter, CuckooFilter, FilterKind, LayerLayout, Repeats,
    ScalableBloomFilter,
};

use crate::error::{Context, Error, Result};
use crate::files::{self, Input, OnBusy, Output};
use crate::human;
use crate::keys::KeyReader;
use crate::progress::Progress;

/// What `build` was asked for.
pub struct Options<'a> {
    /// The kind to build.
    pub kind: FilterKind,
    /// A growing or cuckoo filter's own settings, where given.
    pub shape: Shape,
    /// The keys to size for, streaming them; `None` to size for the keys read. For an aging
    /// filter, the keys of each generation.
    pub items: Option<u64>,
    /// The target false-positive rate.
    pub fp_rate: f64,
    /// Write the filter even if it is empty or overfilled.
    pub force: bool,
    /// Whether to wait for another process changing the output file.
    pub on_busy: OnBusy,
    /// Where to write the filter (`-` for standard output).
    pub output: &'a Path,
    /// The key files (`-` for standard input; none for standard input).
    pub inputs: &'a [PathBuf],
}

/// The settings only some kinds have; `None` keeps the library's default.
#[derive(Clone, Copy, Debug, Default)]
pub struct Shape {
    /// A scalable filter's layer layout.
    pub layout: Option<LayerLayout>,
    /// How much a scalable or cuckoo filter grows by when full (cuckoo: 0 never grows).
    pub expansion: Option<u32>,
    /// A cuckoo filter's slots per bucket.
    pub bucket_size: Option<u32>,
    /// How many fingerprints a cuckoo insert may move before the filter is full.
    pub max_kicks: Option<u32>,
}

impl Shape {
    /// The flags given, by name, with the kinds each applies to.
    fn given(&self) -> impl Iterator<Item = (&'static str, &'static [FilterKind])> {
        const SCALABLE: &[FilterKind] = &[FilterKind::Scalable];
        const GROWING: &[FilterKind] = &[FilterKind::Scalable, FilterKind::Cuckoo];
        const CUCKOO: &[FilterKind] = &[FilterKind::Cuckoo];
        [
            ("--layout", self.layout.is_some(), SCALABLE),
            ("--expansion", self.expansion.is_some(), GROWING),
            ("--bucket-size", self.bucket_size.is_some(), CUCKOO),
            ("--max-kicks", self.max_kicks.is_some(), CUCKOO),
        ]
        .into_iter()
        .filter(|(_, given, _)| *given)
        .map(|(flag, _, kinds)| (flag, kinds))
    }

    /// Fails on a flag given for a kind it does not apply to.
    fn check(&self, kind: FilterKind) -> Result<()> {
        for (flag, kinds) in self.given() {
            if !kinds.contains(&kind) {
                let names: Vec<&str> = kinds.iter().map(|k| k.name()).collect();
                return Err(Error::Message(format!(
                    "{flag} applies to --kind {} only, not to {kind}; omit {flag}, or pass \
                     --kind {}",
                    names.join(" or --kind "),
                    names[0]
                )));
            }
        }
        Ok(())
    }
}

/// A filter built, and what the summary says about it.
struct Built {
    filter: AnyFilter,
    /// Lines read.
    keys: u64,
    /// Distinct keys, when they were counted.
    distinct: Option<u64>,
}

/// Builds a filter from the keys in the inputs and writes it.
///
/// Without `items`, every key's hash is held (8 bytes a key) and the filter is sized for
/// exactly the keys read: the distinct ones for a set, every line for a cuckoo filter, which
/// stores each copy. With `items`, the filter is sized for that many up front and keys stream
/// into it. A ribbon or fuse filter is always built the first way: it is solved from all its keys at
/// once. Counting and cuckoo filters take every line, repeats included, as their own
/// `insert` does, so that removing a key later never takes away a copy another key needs.
/// An aging filter's generations take the lines in order, oldest first.
///
/// # Errors
///
/// A bad rate or flag, an output that is also an input, an unreadable input, a filter too
/// large; an empty input, or more keys than `items` (an estimated rate over twice the
/// target), unless `force`; a failed write. Nothing is left at the output unless the whole
/// filter was written.
pub fn run(options: &Options) -> Result<()> {
    let kind = options.kind;
    if kind.is_static() && options.items.is_some() {
        return Err(Error::Message(format!(
            "--items does not apply to --kind {kind}: it is built from all its keys at once, \
             sized for exactly the distinct keys; omit --items",
        )));
    }
    options.shape.check(kind)?;
    // Fail on a bad rate or setting before reading what may be gigabytes of keys.
    if kind.is_static() {
        bloomkit::sizing::kind_plan(kind, 1, options.fp_rate)?;
    } else {
        new_filter(options, 1)?;
    }
    let output = Output::new(options.output, options.inputs, options.on_busy)?;
    let inputs = files::open_inputs(options.inputs)?;

    let built = match options.items {
        Some(items) => stream(options, items, inputs)?,
        None => from_all(options, inputs)?,
    };
    let filter = &built.filter;
    if built.keys == 0 && !options.force {
        return Err(Error::Message(format!(
            "no keys were read, so the filter would be empty; give files with one key per \
             line, or pass --force to write an empty {kind} filter",
        )));
    }
    if let Some(items) = options.items {
        check_not_overfilled(options, filter, items, built.keys)?;
    }

    let file_bytes = output.write(filter)?;
    let held = built.distinct.unwrap_or_else(|| filter.len());
    let held_text = match built.distinct {
        Some(n) => format!(" ({} distinct)", human::count(n)),
        None if filter.len() != built.keys => {
            format!(" ({} new to the filter)", human::count(filter.len()))
        }
        None => String::new(),
    };
    let bits_per_key = if held == 0 {
        String::new()
    } else {
        format!(
            ", {:.1} bits/key",
            bloomkit::sizing::bits_per_key(filter.memory_bytes() as u64 * 8, held)
        )
    };
    output.summary(&format!(
        "wrote {}: {} filter, {}{held_text}, {}{bits_per_key}\n\
         estimated false-positive rate {} (target {})\n",
        output.describe(),
        filter.kind(),
        human::count_of(built.keys, "key", "keys"),
        human::bytes(file_bytes),
        human::percent_sig(filter.estimated_fp_rate()),
        human::percent_sig(options.fp_rate),
    ))
}

/// An empty filter of the kind for `items` keys (for an aging filter, each generation's),
/// with the settings given.
fn new_filter(options: &Options, items: u64) -> Result<AnyFilter> {
    let (shape, p) = (&options.shape, options.fp_rate);
    let filter = match options.kind {
        FilterKind::Scalable => {
            let mut builder = ScalableBloomFilter::builder(items, p);
            if let Some(layout) = shape.layout {
                builder = builder.layout(layout);
            }
            if let Some(expansion) = shape.expansion {
                builder = builder.expansion(expansion);
            }
            builder.build().map(AnyFilter::Scalable)
        }
        FilterKind::Cuckoo => {
            let mut builder = CuckooFilter::builder(items, p);
            if let Some(slots) = shape.bucket_size {
                builder = builder.bucket_size(slots);
            }
            if let Some(kicks) = shape.max_kicks {
                builder = builder.max_kicks(kicks);
            }
            if let Some(expansion) = shape.expansion {
                builder = builder.expansion(expansion);
            }
            builder.build().map(AnyFilter::Cuckoo)
        }
        kind if kind.is_static() => AnyFilter::build_from_hashes(kind, &[], p),
        kind => AnyFilter::new(kind, items, p),
    };
    Ok(filter?)
}

/// Streams every key into a filter sized for `items`.
fn stream(options: &Options, items: u64, inputs: Vec<Input>) -> Result<Built> {
    let mut filter = new_filter(options, items)?;
    // An aging filter moves to its next generation each time one has taken its `items`,
    // and keeps the rest in the newest, where too many show as an overfilled filter.
    let rotations = match &filter {
        AnyFilter::Aging(aging) => u64::from(aging.num_generations() - 1),
        _ => 0,
    };
    let mut full_after = None;
    let keys = read_hashes(inputs, |keys_before, hash| {
        if full_after.is_some() {
            return Ok(());
        }
        if let AnyFilter::Aging(aging) = &mut filter {
            if keys_before > 0 && keys_before % items == 0 && keys_before / items <= rotations {
                aging.rotate();
            }
        }
        match filter.insert_hash(hash) {
            Ok(_) => Ok(()),
            // Counted to the end, so that the message can say how many keys there are.
            Err(bloomkit::Error::Full { .. }) => {
                full_after = Some(keys_before);
                Ok(())
            }
            Err(e) => Err(e).context(|| format!("cannot insert key {}", keys_before + 1)),
        }
    })?;
    if let Some(stored) = full_after {
        return Err(full_error(&filter, stored, keys, Some(items)));
    }
    Ok(Built {
        filter,
        keys,
        distinct: None,
    })
}

/// Reads every key's hash, then builds a filter sized for exactly the keys read.
fn from_all(options: &Options, inputs: Vec<Input>) -> Result<Built> {
    let mut hashes: Vec<u64> = Vec::new();
    let keys = read_hashes(inputs, |_, hash| {
        if hashes.len() == hashes.capacity() {
            // Ask rather than abort: a huge input should end with advice, not a crash.
            hashes.try_reserve(hashes.len().max(1 << 16)).map_err(|_| {
                Error::Message(format!(
                    "out of memory holding the hashes of {} keys (8 bytes each); pass --items \
                     with the expected number of keys to stream them instead",
                    human::count(hashes.len() as u64)
                ))
            })?;
        }
        hashes.push(hash);
        Ok(())
    })?;
    let kind = options.kind;
    if kind == FilterKind::Aging {
        return generations_in_order(options, hashes);
    }
    // Distinct 64-bit hashes are distinct keys, but for collisions at a rate of about
    // n²/2^65: far below any false-positive rate a filter is built for.
    hashes.sort_unstable();
    let distinct = count_distinct(&hashes);
    let filter = if kind.is_static() {
        hashes.dedup();
        AnyFilter::build_from_hashes(kind, &hashes, options.fp_rate)?
    } else {
        // What a repeated line does decides what the filter is sized for.
        let repeats = kind.repeats();
        let sized_for = match repeats {
            Repeats::Stored => keys,
            _ => distinct,
        };
        if repeats == Repeats::Ignored {
            hashes.dedup();
        }
        let mut filter = new_filter(options, sized_for)?;
        for (stored, &hash) in hashes.iter().enumerate() {
            match filter.insert_hash(hash) {
                Ok(_) => {}
                Err(bloomkit::Error::Full { .. }) => {
                    return Err(full_error(&filter, stored as u64, keys, None))
                }
                Err(e) => return Err(e.into()),
            }
        }
        filter
    };
    Ok(Built {
        filter,
        keys,
        distinct: Some(distinct),
    })
}

/// An aging filter from all its keys: the lines split into one equal run per generation,
/// in input order, the first run in the oldest generation; each generation sized for the
/// most distinct keys a run holds.
fn generations_in_order(options: &Options, mut hashes: Vec<u64>) -> Result<Built> {
    let keys = hashes.len() as u64;
    let generations = u64::from(AgingBloomFilter::DEFAULT_GENERATIONS);
    let run_len = keys.div_ceil(generations).max(1) as usize;
    // Sorting each run in place keeps it in its generation, and counts its distinct keys.
    let mut largest = 0;
    for run in hashes.chunks_mut(run_len) {
        run.sort_unstable();
        largest = largest.max(count_distinct(run));
    }
    let mut aging = AgingBloomFilter::new(largest, options.fp_rate)?;
    for (i, run) in hashes.chunks(run_len).enumerate() {
        if i > 0 {
            aging.rotate();
        }
        for &hash in run {
            aging.insert_hash(hash);
        }
    }
    Ok(Built {
        filter: aging.into(),
        keys,
        distinct: None,
    })
}

/// Distinct values in a sorted slice.
fn count_distinct(sorted: &[u64]) -> u64 {
    let repeats = sorted.windows(2).filter(|w| w[0] == w[1]).count();
    (sorted.len() - repeats) as u64
}

/// The message for a filter that filled up after `stored` of `keys` keys: too many keys
/// for `items`, or (a cuckoo filter sized for every line) one key repeated too often.
fn full_error(filter: &AnyFilter, stored: u64, keys: u64, items: Option<u64>) -> Error {
    let kind = filter.kind();
    match (items, filter) {
        (Some(items), _) if keys > items => Error::Message(format!(
            "{} keys do not fit a {kind} filter sized for --items {items}: it was full after \
             {}; rebuild with --items {keys}{}",
            human::count(keys),
            human::count(stored),
            if could_grow(filter) {
                format!(", or pass --expansion 2 to let it grow when full ({EXPANSION_COST})")
            } else {
                String::new()
            },
        )),
        (_, AnyFilter::Cuckoo(f)) => Error::Message(format!(
            "the {kind} filter was full after {} of {} keys: a key repeats too often, and a \
             {kind} filter holds at most {} copies of one key (its two buckets) in each of \
             its sub-filters; remove repeated lines (sort -u), use --kind counting, or let it \
             grow sub-filters with --expansion 1",
            human::count(stored),
            human::count(keys),
            2 * f.bucket_size(),
        )),
        _ => Error::Message(format!(
            "the {kind} filter was full after {} of {} keys; rebuild with --items {keys}",
            human::count(stored),
            human::count(keys),
        )),
    }
}

/// Whether `filter` could grow when full and does not: a cuckoo filter built without
/// `--expansion`. Messages about a full filter then say how to let it grow.
pub fn could_grow(filter: &AnyFilter) -> bool {
    matches!(filter, AnyFilter::Cuckoo(f) if f.expansion() == 0)
}

/// What `--expansion` costs, for the messages that suggest it.
pub const EXPANSION_COST: &str = "each sub-filter it adds raises its false-positive rate";

/// Refuses a filter streamed past its plan: an estimated rate over twice the target.
fn check_not_overfilled(
    options: &Options,
    filter: &AnyFilter,
    items: u64,
    keys: u64,
) -> Result<()> {
    let estimated = filter.estimated_fp_rate();
    if options.force || estimated <= 2.0 * options.fp_rate {
        return Ok(());
    }
    Err(Error::Message(format!(
        "{} keys overfill a filter sized for --items {items}: its estimated false-positive \
         rate is {}, more than twice the target {}; rebuild with --items {keys}, or pass \
         --force to write it anyway",
        human::count(keys),
        human::percent_sig(estimated),
        human::percent_sig(options.fp_rate),
    )))
}

/// Reads every key of every input, in order, handing `sink` the number of keys before it
/// and its hash; returns the number of keys read.
fn read_hashes(inputs: Vec<Input>, mut sink: impl FnMut(u64, u64) -> Result<()>) -> Result<u64> {
    let mut progress = Progress::new(&inputs);
    let mut keys = 0u64;
    let mut bytes_before = 0u64;
    for input in inputs {
        let doing = {
            let name = input.describe();
            move || format!("cannot read keys from {name}")
        };
        let mut reader = KeyReader::new(files::reader(input));
        while let Some(key) = reader.next_key().context(&doing)? {
            sink(keys, bloomkit::hash_bytes(key))?;
            keys += 1;
            progress.update(keys, bytes_before + reader.bytes_read());
        }
        bytes_before += reader.bytes_read();
    }
    progress.finish();
    Ok(keys)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distinct_values_of_a_sorted_slice() {
        assert_eq!(count_distinct(&[]), 0);
        assert_eq!(count_distinct(&[5]), 1);
        assert_eq!(count_distinct(&[1, 1, 2, 3, 3, 3]), 3);
    }
}
