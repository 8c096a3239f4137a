//! The batched operations of every kind (`contains_many`, `insert_many` and friends): keys
//! hashed a batch at a time, and each key's memory prefetched a fixed distance ahead of the
//! key being answered.
//!
//! One key's query of a filter larger than the cache waits for one or more cache misses.
//! A loop over keys issues them one after the other; walking a batch's hashes twice over, a
//! prefetch for the key some places ahead and then the answer for this one, keeps several
//! misses in flight at once. The answers are those of the one-key calls, in order: a prefetch
//! is only a hint, and each key is still answered (or inserted) by the one-key code.
//! The blocked filter's walk (`blocked/batch.rs`) is this one specialised to its single line.

use crate::error::Result;
use crate::key::{Key, KeyHasher};
use crate::Filter;

/// Keys per batch when hashing keys for the batched operations, and how far ahead of the
/// key being probed the blocked filter prefetches: enough misses in flight to cover memory
/// latency (a core tracks 10 to 20), near enough that a prefetched line is still in L1 when
/// its key's turn comes.
pub(crate) const BATCH: usize = 32;

/// Hashes `keys` a batch at a time into a stack buffer and hands each batch's hashes on, so
/// the batched operations need no heap memory for the hashes.
#[inline]
pub(crate) fn for_each_hash_batch<K: Key>(
    keys: &[K],
    hasher: KeyHasher,
    mut batch: impl FnMut(&[u64]),
) {
    for chunk in keys.chunks(BATCH) {
        let mut hashes = [0u64; BATCH];
        for (h, key) in hashes.iter_mut().zip(chunk) {
            *h = hasher.hash(key);
        }
        batch(&hashes[..chunk.len()]);
    }
}

/// The smallest filter whose batched operations prefetch: about a core's share of L2. A
/// smaller one is in cache already, where a prefetch only adds work (working out a key's
/// memory twice): there the batch is the one-key loop. (Measured with the `batch_ops`
/// benchmark: at 256 KiB prefetching made counting, cuckoo, ribbon and fuse batches
/// 0.6–0.8× the one-key loop; from 4 MiB on it made them faster.)
pub(crate) const PREFETCH_FROM_BYTES: usize = 1 << 20;

/// How many keys ahead [`for_each_ahead`] should prefetch for a filter of `memory_bytes`
/// that reads `lines_per_key` cache lines per key: about [`BATCH`] lines in flight, as the
/// blocked filter has with its one line, and at least one key ahead; 0 (no prefetching) for
/// a filter smaller than [`PREFETCH_FROM_BYTES`].
#[inline]
pub(crate) fn distance_for(lines_per_key: usize, memory_bytes: usize) -> usize {
    if memory_bytes < PREFETCH_FROM_BYTES {
        return 0;
    }
    (BATCH / lines_per_key.max(1)).max(1)
}

/// One step of [`for_each_ahead`].
pub(crate) enum Ahead {
    /// Prefetch what this hash's key will read: its turn comes a few steps later.
    Prefetch(u64),
    /// Answer (or insert) the key of this hash.
    Visit(u64),
}

/// Walks `hashes` in order, calling `step(Visit(hash))` for each, after
/// `step(Prefetch(hash))` for the hash `distance` places ahead: a rolling window, so misses
/// stay in flight all the time rather than in bursts. One closure for both steps, so that a
/// caller that writes the filter can prefetch through it too. A distance of 0 prefetches
/// nothing.
#[inline]
pub(crate) fn for_each_ahead(hashes: &[u64], distance: usize, mut step: impl FnMut(Ahead)) {
    if distance == 0 {
        hashes.iter().for_each(|&hash| step(Ahead::Visit(hash)));
        return;
    }
    for &hash in hashes.iter().take(distance) {
        step(Ahead::Prefetch(hash));
    }
    for (i, &hash) in hashes.iter().enumerate() {
        if let Some(&ahead) = hashes.get(i + distance) {
            step(Ahead::Prefetch(ahead));
        }
        step(Ahead::Visit(hash));
    }
}

/// What a kind tells the shared batched operations below: how far ahead to prefetch, and
/// what to prefetch for a key's hash. The answers come from its [`Filter::contains_hash`].
pub(crate) trait Prefetch: Filter {
    /// Keys ahead to prefetch (see [`distance_for`]); 0 for none.
    fn prefetch_distance(&self) -> usize;
    /// Prefetches the memory a query (or insert) of `hash` reads.
    fn prefetch(&self, hash: u64);
}

/// `contains_many` of every kind: `keys` hashed a batch at a time, answered as
/// [`contains_many_hashes`] answers.
#[inline]
pub(crate) fn contains_many<F: Prefetch, K: Key>(f: &F, keys: &[K], answers: &mut Vec<bool>) {
    answers.reserve(keys.len());
    for_each_hash_batch(keys, f.key_hasher(), |hashes| {
        contains_many_hashes(f, hashes, answers)
    });
}

/// `contains_many_hashes` of every kind: each key's memory prefetched ahead, then its
/// one-key answer appended.
#[inline]
pub(crate) fn contains_many_hashes<F: Prefetch>(f: &F, hashes: &[u64], answers: &mut Vec<bool>) {
    answers.reserve(hashes.len());
    for_each_ahead(hashes, f.prefetch_distance(), |step| match step {
        Ahead::Prefetch(hash) => f.prefetch(hash),
        Ahead::Visit(hash) => answers.push(f.contains_hash(hash)),
    });
}

/// The batched inserts of the kinds whose insert can fail: `keys` hashed a batch at a time
/// and each batch inserted by `by_hashes`, until one fails.
#[inline]
pub(crate) fn insert_keys<F: Prefetch, K: Key>(
    f: &mut F,
    keys: &[K],
    answers: &mut Vec<bool>,
    mut by_hashes: impl FnMut(&mut F, &[u64], &mut Vec<bool>) -> Result<()>,
) -> Result<()> {
    answers.reserve(keys.len());
    let hasher = f.key_hasher();
    let mut result = Ok(());
    for_each_hash_batch(keys, hasher, |hashes| {
        if result.is_ok() {
            result = by_hashes(f, hashes, answers);
        }
    });
    result
}

/// The prefetching walk of those inserts: `insert(f, hash)` for each hash in order, its
/// answer appended to `answers`, until one fails (whose error is returned; the hashes after
/// it are not inserted).
#[inline]
pub(crate) fn insert_hashes<F: Prefetch>(
    f: &mut F,
    hashes: &[u64],
    answers: &mut Vec<bool>,
    mut insert: impl FnMut(&mut F, u64) -> Result<bool>,
) -> Result<()> {
    answers.reserve(hashes.len());
    let mut result = Ok(());
    for_each_ahead(hashes, f.prefetch_distance(), |step| {
        if result.is_err() {
            return;
        }
        match step {
            Ahead::Prefetch(hash) => f.prefetch(hash),
            Ahead::Visit(hash) => match insert(f, hash) {
                Ok(answer) => answers.push(answer),
                Err(e) => result = Err(e),
            },
        }
    });
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every hash is prefetched once and visited once, in order, each prefetch `distance`
    /// visits ahead of its own (or at the start).
    #[test]
    fn the_walk_prefetches_each_hash_once_ahead_of_its_visit() {
        let hashes: Vec<u64> = (100..137).collect();
        for distance in [1, 3, 32, 100] {
            let mut prefetched = Vec::new();
            let mut visited = Vec::new();
            for_each_ahead(&hashes, distance, |step| match step {
                Ahead::Prefetch(h) => prefetched.push((h, visited.len())),
                Ahead::Visit(h) => visited.push(h),
            });
            assert_eq!(visited, hashes);
            assert_eq!(prefetched.len(), hashes.len());
            for (j, &(h, visits_before)) in prefetched.iter().enumerate() {
                assert_eq!(h, hashes[j]);
                assert_eq!(visits_before, j.saturating_sub(distance), "{distance} {j}");
            }
        }
    }

    #[test]
    fn batches_hash_every_key_in_order() {
        let keys: Vec<u64> = (0..70).collect();
        let hasher = KeyHasher::default();
        let mut seen = Vec::new();
        let mut sizes = Vec::new();
        for_each_hash_batch(&keys, hasher, |b| {
            sizes.push(b.len());
            seen.extend_from_slice(b)
        });
        assert_eq!(sizes, [32, 32, 6]);
        let want: Vec<u64> = keys.iter().map(|k| hasher.hash(k)).collect();
        assert_eq!(seen, want);
    }

    #[test]
    fn distance_keeps_about_a_batch_of_lines_in_flight() {
        let big = PREFETCH_FROM_BYTES;
        assert_eq!(distance_for(1, big), 32);
        assert_eq!(distance_for(0, big), 32);
        assert_eq!(distance_for(7, big), 4);
        assert_eq!(distance_for(64, big), 1);
        assert_eq!(distance_for(1, big - 1), 0);
    }

    #[test]
    fn distance_zero_visits_without_prefetching() {
        let hashes: Vec<u64> = (0..40).collect();
        let mut visited = Vec::new();
        for_each_ahead(&hashes, 0, |step| match step {
            Ahead::Prefetch(_) => panic!("prefetched"),
            Ahead::Visit(h) => visited.push(h),
        });
        assert_eq!(visited, hashes);
    }
}
