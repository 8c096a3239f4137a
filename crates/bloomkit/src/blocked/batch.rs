//! The batched operations' walk: keys hashed a batch at a time, lines prefetched a fixed
//! distance ahead of the key being probed.

use super::probe::line_index;
use crate::key::{Key, KeyHasher};

pub(crate) use crate::batch::{for_each_hash_batch, BATCH};

/// One step of [`for_each_prefetched`].
pub(crate) enum Step {
    /// Prefetch this line: its key's turn comes `BATCH` steps later.
    Prefetch(usize),
    /// Probe (or set) this key's line.
    Visit(usize, u64),
}

/// Walks `hashes` in order, calling `step(Visit(line, hash))` for each, after
/// `step(Prefetch(line))` for the hash `BATCH` places ahead: a rolling window, so misses stay
/// in flight all the time rather than in bursts. (One closure for both steps, so that a
/// caller can prefetch through the lines it then writes.)
#[inline]
pub(crate) fn for_each_prefetched(hashes: &[u64], num_lines: usize, mut step: impl FnMut(Step)) {
    for &hash in hashes.iter().take(BATCH) {
        step(Step::Prefetch(line_index(hash, num_lines)));
    }
    for (i, &hash) in hashes.iter().enumerate() {
        if let Some(&ahead) = hashes.get(i + BATCH) {
            step(Step::Prefetch(line_index(ahead, num_lines)));
        }
        step(Step::Visit(line_index(hash, num_lines), hash));
    }
}

/// Hashes the keys of an iterator of unknown length a batch at a time into a stack buffer
/// and hands each batch's hashes on (the last batch may be short or empty): `Extend` for the
/// blocked layouts, with the batched operations' prefetching and no heap memory.
#[inline]
pub(crate) fn for_each_key_batch<K: Key>(
    keys: impl IntoIterator<Item = K>,
    hasher: KeyHasher,
    mut batch: impl FnMut(&[u64]),
) {
    let mut hashes = [0u64; BATCH];
    let mut n = 0;
    for key in keys {
        hashes[n] = hasher.hash(&key);
        n += 1;
        if n == BATCH {
            batch(&hashes);
            n = 0;
        }
    }
    batch(&hashes[..n]);
}
