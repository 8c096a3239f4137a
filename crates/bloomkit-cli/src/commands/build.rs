//! `bloomkit build`: a filter from lines of keys.

use std::path::{Path, PathBuf};

use bloomkit::{AnyFilter, BlockedBloomFilter, BloomFilter, FilterKind};

use crate::error::{Context, Error, Result};
use crate::files::{self, Input};
use crate::keys::KeyReader;
use crate::progress::Progress;
use crate::{human, output};

/// What the build knows about how many distinct keys it saw.
enum Distinct {
    /// Counted exactly (all key hashes were sorted).
    Exact(u64),
    /// Estimated from the filter's fill (keys were streamed into a pre-sized filter).
    Estimated(u64),
}

/// Builds a filter of `kind` from the keys in `inputs` and writes it to `output`.
///
/// With `items`, the filter is sized for that many keys up front and keys stream into it;
/// without, every key's hash is held (8 bytes a key), sorted and deduplicated, and the filter
/// is sized for exactly the distinct keys.
///
/// # Errors
///
/// A bad rate, an unreadable input, a filter too large, or a failed write; nothing is left
/// at `output` unless the whole filter was written.
pub fn run(
    kind: FilterKind,
    items: Option<u64>,
    fp_rate: f64,
    output: &Path,
    inputs: &[PathBuf],
) -> Result<()> {
    // Fail on a bad rate before reading what may be gigabytes of keys.
    new_filter(kind, 1, fp_rate)?;
    let inputs = files::open_inputs(inputs)?;

    let (filter, keys, distinct) = match items {
        Some(items) => {
            let mut filter = new_filter(kind, items, fp_rate)?;
            let keys = read_hashes(inputs, |hash| {
                filter.insert_hash(hash);
                Ok(())
            })?;
            let distinct = Distinct::Estimated(filter.estimated_count());
            (filter, keys, distinct)
        }
        None => {
            let mut hashes: Vec<u64> = Vec::new();
            let keys = read_hashes(inputs, |hash| {
                if hashes.len() == hashes.capacity() {
                    // Ask rather than abort: a huge input should end with advice, not a crash.
                    hashes.try_reserve(hashes.len().max(1 << 16)).map_err(|_| {
                        Error::Message(format!(
                            "out of memory holding the hashes of {} keys (8 bytes each); \
                                 pass --items with the expected number of keys to stream them \
                                 instead",
                            human::count(hashes.len() as u64)
                        ))
                    })?;
                }
                hashes.push(hash);
                Ok(())
            })?;
            // Distinct 64-bit hashes are distinct keys, but for collisions at a rate of about
            // n²/2^65: far below any false-positive rate a filter is built for.
            hashes.sort_unstable();
            hashes.dedup();
            let mut filter = new_filter(kind, hashes.len() as u64, fp_rate)?;
            for &hash in &hashes {
                filter.insert_hash(hash);
            }
            (filter, keys, Distinct::Exact(hashes.len() as u64))
        }
    };

    let file_bytes = files::write_filter(output, &filter)?;

    let (distinct_count, distinct_text) = match distinct {
        Distinct::Exact(n) => (n, format!("{} distinct", human::count(n))),
        Distinct::Estimated(n) => (
            n,
            format!("about {} distinct, from the fill", human::count(n)),
        ),
    };
    output::print(&format!(
        "wrote {}: {} filter, {} ({}), {}, {:.1} bits/key, {}\n\
         fill {}, estimated false-positive rate {}\n",
        output.display(),
        filter.kind(),
        human::count_of(keys, "key", "keys"),
        distinct_text,
        human::bytes(file_bytes),
        bloomkit::sizing::bits_per_key(filter.num_bits(), distinct_count),
        human::count_of(filter.num_hashes().into(), "hash", "hashes"),
        human::percent_sig(filter.fill_ratio()),
        human::percent_sig(filter.estimated_fp_rate()),
    ))
}

/// A filter of `kind` sized for `items` keys at `fp_rate`, with the default seed (which
/// [`bloomkit::hash_bytes`] hashes with).
fn new_filter(kind: FilterKind, items: u64, fp_rate: f64) -> Result<AnyFilter> {
    match kind {
        FilterKind::Classic => Ok(BloomFilter::new(items, fp_rate)?.into()),
        FilterKind::Blocked => Ok(BlockedBloomFilter::new(items, fp_rate)?.into()),
        // FilterKind is non-exhaustive; the CLI only offers the kinds above.
        other => Err(Error::Message(format!(
            "cannot build a {other} filter; choose --kind classic or --kind blocked"
        ))),
    }
}

/// Reads every key of every input, in order, handing each key's hash to `sink`; returns the
/// number of keys read.
fn read_hashes(inputs: Vec<Input>, mut sink: impl FnMut(u64) -> Result<()>) -> Result<u64> {
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
            sink(bloomkit::hash_bytes(key))?;
            keys += 1;
            progress.update(keys, bytes_before + reader.bytes_read());
        }
        bytes_before += reader.bytes_read();
    }
    progress.finish();
    Ok(keys)
}
