//! The batched operations' walk: keys hashed a batch at a time, lines prefetched a fixed
//! distance ahead of the key being probed.

use super::probe::line_index;
use crate::bits::{Line, LineArray, Lines};
use crate::key::{Key, KeyHasher};

use crate::batch::PREFETCH_FROM_BYTES;
pub(crate) use crate::batch::{for_each_hash_batch, BATCH};

/// Bytes in one 512-bit line.
pub(crate) const LINE_BYTES: usize = (crate::sizing::LINE_BITS / 8) as usize;

/// One step of [`for_each_prefetched`].
pub(crate) enum Step {
    /// Prefetch this line: its key's turn comes `BATCH` steps later.
    Prefetch(usize),
    /// Probe (or set) this key's line.
    Visit(usize, u64),
}

/// Walks `hashes` in order, calling `step(Visit(line, hash))` for each, after
/// `step(Prefetch(line))` for the hash `BATCH` places ahead (for a filter of
/// `num_lines` lines of at least `PREFETCH_FROM_BYTES`: a smaller one is in cache, and its
/// walk prefetches nothing): a rolling window, so misses stay
/// in flight all the time rather than in bursts. (One closure for both steps, so that a
/// caller can prefetch through the lines it then writes.)
///
/// Each key's line is worked out once, when it is prefetched, and kept in a ring of `BATCH`
/// slots until its visit; the loop over the keys with one ahead has no other branch. (Working
/// the line out again at the visit, and asking at every key whether one is ahead, cost 104
/// instructions a key in cache against 66 for the one-key query; callgrind, `contains_many`
/// of 200,000 keys through the Python package.)
#[inline]
pub(crate) fn for_each_prefetched(hashes: &[u64], num_lines: usize, mut step: impl FnMut(Step)) {
    if num_lines.saturating_mul(LINE_BYTES) < PREFETCH_FROM_BYTES {
        for &hash in hashes {
            step(Step::Visit(line_index(hash, num_lines), hash));
        }
        return;
    }
    let mut ring = [0usize; BATCH];
    let ahead = hashes.len().min(BATCH);
    for (slot, &hash) in ring.iter_mut().zip(&hashes[..ahead]) {
        *slot = line_index(hash, num_lines);
        step(Step::Prefetch(*slot));
    }
    let (with_one_ahead, last) = hashes.split_at(hashes.len() - ahead);
    for (i, (&hash, &next)) in with_one_ahead.iter().zip(&hashes[ahead..]).enumerate() {
        let slot = &mut ring[i % BATCH];
        let line = *slot;
        *slot = line_index(next, num_lines);
        step(Step::Prefetch(*slot));
        step(Step::Visit(line, hash));
    }
    for (i, &hash) in last.iter().enumerate() {
        step(Step::Visit(ring[(with_one_ahead.len() + i) % BATCH], hash));
    }
}

/// [`for_each_prefetched`] for a query over `lines` held in memory: prefetches each hash's
/// line for reading ahead of its visit, then hands `visit` the line and the hash, in order.
/// The query walk of the blocked, sector and atomic filters, which differ only in their
/// line type and their probe.
#[inline(always)]
pub(crate) fn for_each_line_prefetched<'a, A: Lines>(
    lines: &'a A,
    hashes: &[u64],
    mut visit: impl FnMut(&'a A::Line, u64),
) {
    for_each_prefetched(
        hashes,
        lines.num_lines(),
        #[inline(always)]
        |step| match step {
            Step::Prefetch(index) => crate::prefetch::prefetch_read(lines.line_at(index)),
            Step::Visit(index, hash) => visit(lines.line_at(index), hash),
        },
    );
}

/// [`for_each_line_prefetched`] for an insert into `lines`: the same walk, handing `visit`
/// each hash's line to write. (One closure holds the lines for both steps, as it must to
/// read them for the prefetch and write them at the visit.)
#[inline(always)]
pub(crate) fn for_each_line_prefetched_mut(
    lines: &mut LineArray,
    hashes: &[u64],
    mut visit: impl FnMut(&mut Line, u64),
) {
    for_each_prefetched(
        hashes,
        lines.len(),
        #[inline(always)]
        |step| match step {
            Step::Prefetch(index) => crate::prefetch::prefetch_read(lines.line(index)),
            Step::Visit(index, hash) => visit(lines.line_mut(index), hash),
        },
    );
}

/// `n` new answers at the end of `answers` (`false` until written), to be written in order:
/// a store a key, where a push checks the capacity and the length at every key.
#[inline]
pub(crate) fn answer_slots(answers: &mut Vec<bool>, n: usize) -> &mut [bool] {
    let start = answers.len();
    answers.resize(start + n, false);
    &mut answers[start..]
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every hash's line is prefetched once, `BATCH` visits ahead of its own visit (or at the
    /// start), and every hash is visited once, in order, with its own line: for batches
    /// shorter than the ring, as long, and longer.
    #[test]
    fn the_ring_prefetches_each_line_ahead_and_visits_in_order() {
        // Large enough to prefetch: the smallest such filter.
        let num_lines = PREFETCH_FROM_BYTES / LINE_BYTES;
        for n in [0, 1, 5, BATCH - 1, BATCH, BATCH + 1, 3 * BATCH + 7, 200] {
            let hashes: Vec<u64> = (0..n as u64)
                .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15))
                .collect();
            let mut prefetched = Vec::new();
            let mut visited = Vec::new();
            for_each_prefetched(&hashes, num_lines, |step| match step {
                Step::Prefetch(line) => prefetched.push((line, visited.len())),
                Step::Visit(line, hash) => visited.push((line, hash)),
            });
            let want: Vec<(usize, u64)> = hashes
                .iter()
                .map(|&h| (line_index(h, num_lines), h))
                .collect();
            assert_eq!(visited, want, "{n}");
            assert_eq!(prefetched.len(), n);
            for (j, &(line, visits_before)) in prefetched.iter().enumerate() {
                assert_eq!(line, want[j].0);
                assert_eq!(visits_before, j.saturating_sub(BATCH), "{n} {j}");
            }
        }
    }

    /// A filter smaller than `PREFETCH_FROM_BYTES` is walked without prefetching, every hash
    /// visited in order with its line.
    #[test]
    fn a_filter_in_cache_is_walked_without_prefetching() {
        let num_lines = PREFETCH_FROM_BYTES / LINE_BYTES - 1;
        let hashes: Vec<u64> = (0..100u64)
            .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15))
            .collect();
        let mut visited = Vec::new();
        for_each_prefetched(&hashes, num_lines, |step| match step {
            Step::Prefetch(_) => panic!("prefetched"),
            Step::Visit(line, hash) => visited.push((line, hash)),
        });
        let want: Vec<(usize, u64)> = hashes
            .iter()
            .map(|&h| (line_index(h, num_lines), h))
            .collect();
        assert_eq!(visited, want);
    }
}
