//! `bloomkit build`: a filter from lines of keys.

use std::path::{Path, PathBuf};

use bloomkit::{
    AnyFilter, BinaryFuseFilter, FilterKind, LayerLayout, RibbonFilter, ScalableBloomFilter,
};

use crate::error::{Context, Error, Result};
use crate::files::{self, Input};
use crate::keys::KeyReader;
use crate::progress::Progress;
use crate::{human, output};

/// Builds a filter of `kind` from the keys in `inputs` and writes it to `output`; a
/// scalable filter's layers in `layout` when given, a binary fuse filter's fingerprints of
/// `fingerprint_bits` (by default the fewer that meet `fp_rate`).
///
/// With `items`, the filter is sized for that many keys up front and keys stream into it;
/// without, every key's hash is held (8 bytes a key), sorted and deduplicated, and the filter
/// is sized for exactly the distinct keys. A ribbon or binary fuse filter is always built the
/// second way: it is solved from all its keys at once.
///
/// # Errors
///
/// A bad rate, an unreadable input, a filter too large, or a failed write; nothing is left
/// at `output` unless the whole filter was written.
pub fn run(
    kind: FilterKind,
    layout: Option<LayerLayout>,
    fingerprint_bits: Option<u32>,
    items: Option<u64>,
    fp_rate: f64,
    output: &Path,
    inputs: &[PathBuf],
) -> Result<()> {
    let is_static = matches!(kind, FilterKind::Ribbon | FilterKind::Fuse);
    if is_static && items.is_some() {
        return Err(Error::Message(format!(
            "--items does not apply to --kind {kind}: a {kind} filter is built from all its \
             keys at once, sized for exactly the distinct keys; omit --items"
        )));
    }
    if fingerprint_bits.is_some() && kind != FilterKind::Fuse {
        return Err(Error::Message(format!(
            "--fingerprint-bits applies to --kind fuse only (a {kind} filter's rate is set \
             by --fp-rate); omit --fingerprint-bits, or pass --kind fuse"
        )));
    }
    if layout.is_some() && kind != FilterKind::Scalable {
        return Err(Error::Message(format!(
            "--layout applies to --kind scalable only (a {kind} filter has one layout); omit \
             --layout, or pass --kind scalable"
        )));
    }
    // Fail on a bad rate before reading what may be gigabytes of keys.
    let fingerprint_bits = match fingerprint_bits {
        Some(bits) => bits,
        None if kind == FilterKind::Fuse => BinaryFuseFilter::fingerprint_bits_for(fp_rate)?,
        None => 0,
    };
    check_rate(kind, fp_rate)?;
    let new_filter = |items: u64| -> bloomkit::Result<AnyFilter> {
        match layout {
            Some(layout) => ScalableBloomFilter::builder(items, fp_rate)
                .layout(layout)
                .build()
                .map(AnyFilter::Scalable),
            None => AnyFilter::new(kind, items, fp_rate),
        }
    };
    let inputs = files::open_inputs(inputs)?;

    let (filter, keys, distinct) = match items {
        Some(items) => {
            let mut filter = new_filter(items)?;
            let keys = read_hashes(inputs, |hash| {
                filter.insert_hash(hash)?;
                Ok(())
            })?;
            (filter, keys, None)
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
            let filter = if kind == FilterKind::Ribbon {
                RibbonFilter::build_from_hashes(&hashes, fp_rate)?.into()
            } else if kind == FilterKind::Fuse {
                BinaryFuseFilter::build_from_hashes(&hashes, fingerprint_bits)?.into()
            } else {
                let mut filter = new_filter(hashes.len() as u64)?;
                for &hash in &hashes {
                    filter.insert_hash(hash)?;
                }
                filter
            };
            (filter, keys, Some(hashes.len() as u64))
        }
    };

    let file_bytes = files::write_filter(output, &filter)?;

    // Without a count of distinct keys, the filter's own (keys it took as new) stands in.
    let (held, held_text) = match distinct {
        Some(n) => (n, format!("{} distinct", human::count(n))),
        None => (
            filter.len(),
            format!("{} new to the filter", human::count(filter.len())),
        ),
    };
    output::print(&format!(
        "wrote {}: {} filter, {} ({}), {}, {:.1} bits/key\n\
         estimated false-positive rate {}\n",
        output.display(),
        filter.kind(),
        human::count_of(keys, "key", "keys"),
        held_text,
        human::bytes(file_bytes),
        bloomkit::sizing::bits_per_key(filter.memory_bytes() as u64 * 8, held),
        human::percent_sig(filter.estimated_fp_rate()),
    ))
}

/// Refuses a rate the kind would refuse, before any key is read.
fn check_rate(kind: FilterKind, fp_rate: f64) -> Result<()> {
    match kind {
        FilterKind::Ribbon => {
            RibbonFilter::build_from_hashes(&[], fp_rate)?;
        }
        // A binary fuse filter's rate is its fingerprints', chosen (and checked) before.
        FilterKind::Fuse => {}
        _ => {
            AnyFilter::new(kind, 1, fp_rate)?;
        }
    }
    Ok(())
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
