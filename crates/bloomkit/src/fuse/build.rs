//! Building: sizing the fingerprint array, peeling the keys' hypergraph, assigning the
//! fingerprints in reverse peeling order, and re-seeding when the peeling gets stuck.
//!
//! Each key is an edge joining its three slots. Peeling repeatedly takes a slot that only one
//! remaining key uses, and removes that key; when every key is removed this way, assigning
//! fingerprints in the reverse order satisfies every key, because each key's slot was free of
//! all the keys assigned before it.

use crate::bits::try_vec;
use crate::error::{Error, Result};

use super::slots::{Fingerprint, Shape, MAX_SEGMENT_LENGTH};

/// The fingerprint array's layout: `segment_count + 2` segments of `segment_length` slots
/// (none at all for a filter of no keys).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Layout {
    /// Slots per segment, a power of two.
    pub(crate) segment_length: u32,
    /// Segments a key's first slot may fall in; 0 only for a filter of no keys.
    pub(crate) segment_count: u32,
}

impl Layout {
    /// Slots in the array: `(segment_count + 2) · segment_length`, or 0 with no segments.
    pub(crate) fn num_slots(self) -> u64 {
        if self.segment_count == 0 {
            0
        } else {
            (u64::from(self.segment_count) + 2) * u64::from(self.segment_length)
        }
    }

    /// The same array cut into segments half as long (twice as many, plus two): the layout
    /// a build alternates with where the sizing rule's length is a step too long.
    fn halved(self) -> Option<Self> {
        let segment_count = self.segment_count.checked_mul(2)?.checked_add(2)?;
        (self.segment_length >= 2 && self.segment_count > 0).then_some(Layout {
            segment_length: self.segment_length / 2,
            segment_count,
        })
    }
}

/// The layout a filter of `items` keys starts with, by Graf & Lemire's sizing rule for
/// binary fuse filters of arity 3:
///
/// * segment length `L = 2^⌊ln n / ln 3.33 + 2.25⌋`, at most 2^18 (4 for n ≤ 1);
/// * capacity `⌈n · max(1.125, 0.875 + 0.25 · ln 10^6 / ln n)⌋` (rounded; 0 for n ≤ 1);
/// * `S = ⌈capacity / L⌉ − 2` segments, at least 1, and `(S + 2) · L` slots.
///
/// The array holds 1.125 slots per key from about 10^6 keys on (9.0 bits per key for 8-bit
/// fingerprints), more for fewer keys, where peeling needs more room. These are the sizes
/// `xorf` and the C reference build, so the bits per key are theirs.
///
/// # Errors
///
/// [`Error::InvalidParameter`] past 2^32 − 1 slots (about 3.8 billion keys).
pub(crate) fn planned_layout(items: u64) -> Result<Layout> {
    if items == 0 {
        return Ok(Layout {
            segment_length: 4,
            segment_count: 0,
        });
    }
    let n = items as f64;
    let log2_length = (n.ln() / 3.33f64.ln() + 2.25).floor() as u32;
    let segment_length = 1u32 << log2_length.min(MAX_SEGMENT_LENGTH.trailing_zeros());
    let capacity = if items > 1 {
        let factor = f64::max(1.125, 0.875 + 0.25 * 1e6f64.ln() / n.ln());
        // Float to integer casts saturate; the checks below catch what does not fit.
        (n * factor).round() as u64
    } else {
        0
    };
    let segments = capacity.div_ceil(u64::from(segment_length));
    let segment_count = segments.saturating_sub(2).max(1);
    // Slots are indexed by 32-bit numbers, as in the reference implementation: past that, no
    // layout exists (a larger set is sharded into several filters).
    let too_large = || Error::InvalidParameter {
        name: "number of keys",
        value: items.to_string(),
        expected: "at most about 3.8 billion keys in one binary fuse filter (2^32 - 1 slots); \
                   split larger sets into several filters",
    };
    let layout = Layout {
        segment_length,
        segment_count: u32::try_from(segment_count).map_err(|_| too_large())?,
    };
    if layout.num_slots() > u64::from(u32::MAX) {
        return Err(too_large());
    }
    Ok(layout)
}

/// How a build proceeds: the layout, how many fuse seeds to try, and whether every fourth
/// attempt (the second, sixth, ...) uses the halved layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BuildPlan {
    pub(crate) layout: Layout,
    pub(crate) attempts: u32,
    pub(crate) alternate: bool,
}

impl BuildPlan {
    /// The plan for `items` keys: [`planned_layout`], up to 64 fuse seeds, alternating
    /// layouts between 5 and 10^6 keys, where the sizing rule's segment length is sometimes
    /// one step too long for the peeling to succeed often (just after the length doubles).
    pub(crate) fn for_items(items: u64) -> Result<Self> {
        Ok(BuildPlan {
            layout: planned_layout(items)?,
            attempts: 64,
            alternate: items > 4 && items < 1_000_000,
        })
    }

    /// The layout of attempt `attempt` (0-based).
    fn layout_of(&self, attempt: u32) -> Layout {
        match self.layout.halved() {
            Some(halved) if self.alternate && attempt % 4 == 1 => halved,
            _ => self.layout,
        }
    }
}

/// A solved filter: the layout and fuse seed that worked, and the fingerprints.
#[derive(Debug)]
pub(super) struct Solved<F> {
    pub(super) layout: Layout,
    pub(super) fuse_seed: u32,
    pub(super) fingerprints: Vec<F>,
}

/// The build's working memory, allocated once and reused by every attempt.
struct Scratch {
    /// First the keys' remixed hashes sorted by their top bits (so the counting pass walks
    /// the slots front to back), then the peeled keys in peeling order.
    order: Vec<u64>,
    /// For each peeled key, which of its three slots (0, 1, 2) it was peeled from.
    peeled_from: Vec<u8>,
    /// Per slot: the number of keys using it, times 4, XOR the position (0, 1, 2) the slot
    /// has in each of those keys. With one key left, the low two bits name its position.
    count: Vec<u8>,
    /// Per slot: the XOR of the remixed hashes of the keys using it; with one key left, that
    /// key's.
    xor: Vec<u64>,
    /// Slots to peel.
    queue: Vec<u32>,
    /// Where each block of top bits starts in `order` (a counting sort).
    block_starts: Vec<usize>,
}

/// A key's slots twice over, so that its two slots after `position` (mod 3) are at
/// `position + 1` and `position + 2` (and `position`, at most 3, indexes it unchecked).
#[inline]
fn slots_around(shape: &Shape, x: u64) -> [usize; 6] {
    let [a, b, c] = shape.slots(x);
    [a, b, c, a, b, c]
}

/// `(position + 1) mod 3` and `(position + 2) mod 3`: the positions of a key's other two
/// slots.
#[inline]
fn others(position: usize) -> (u8, u8) {
    const NEXT: [u8; 6] = [1, 2, 0, 1, 2, 0];
    (NEXT[position], NEXT[position + 1])
}

/// The fewest top bits of `x` that tell `segment_count` segments apart (at least 1).
fn block_bits(segment_count: u32) -> u32 {
    segment_count.next_power_of_two().trailing_zeros().max(1)
}

impl Scratch {
    fn new(keys: usize, num_slots: u64, max_segment_count: u32) -> Result<Self> {
        let keys = keys as u64;
        Ok(Scratch {
            order: try_vec(keys, || 0)?,
            peeled_from: try_vec(keys, || 0)?,
            count: try_vec(num_slots, || 0)?,
            xor: try_vec(num_slots, || 0)?,
            queue: try_vec(num_slots, || 0)?,
            block_starts: try_vec((1u64 << block_bits(max_segment_count)) + 1, || 0)?,
        })
    }

    /// Sorts the remixed hashes into `order` by their top bits: a counting sort in two
    /// passes over `hashes`.
    fn sort_by_block(&mut self, hashes: &[u64], shape: &Shape, segment_count: u32) {
        let bits = block_bits(segment_count);
        let shift = 64 - bits;
        let starts = &mut self.block_starts[..(1 << bits) + 1];
        starts.fill(0);
        for &h in hashes {
            starts[(shape.remix(h) >> shift) as usize + 1] += 1;
        }
        for i in 1..starts.len() {
            starts[i] += starts[i - 1];
        }
        for &h in hashes {
            let x = shape.remix(h);
            let slot = &mut starts[(x >> shift) as usize];
            self.order[*slot] = x;
            *slot += 1;
        }
    }

    /// Adds every key to its three slots; returns the number of keys found to repeat one
    /// already added, or `None` if a slot came to hold 32 keys (its count overflows at 64,
    /// and random keys put 32 in one slot with probability below 10^−20).
    fn count_keys(&mut self, keys: usize, shape: &Shape, first: bool) -> Option<usize> {
        let (count, xor) = (&mut self.count, &mut self.xor);
        // Allocated zeroed; a retry clears what the last attempt left.
        if !first {
            count.fill(0);
            xor.fill(0);
        }
        let mut duplicates = 0;
        let mut seen = 0u8;
        for &x in &self.order[..keys] {
            let [a, b, c] = shape.slots(x);
            count[a] = count[a].wrapping_add(4);
            xor[a] ^= x;
            count[b] = count[b].wrapping_add(4) ^ 1;
            xor[b] ^= x;
            count[c] = count[c].wrapping_add(4) ^ 2;
            xor[c] ^= x;
            // A count passes 128 (32 keys) before it can wrap.
            seen |= count[a] | count[b] | count[c];
            // A key added twice cancels out of its slots' XORs: where a slot then holds just
            // the two copies (XOR 0, two keys), take the second copy back out. (A repeat
            // this misses makes the peeling fail, and the retry removes repeats first.)
            if xor[a] & xor[b] & xor[c] == 0
                && ((xor[a] == 0 && count[a] == 8)
                    || (xor[b] == 0 && count[b] == 8)
                    || (xor[c] == 0 && count[c] == 8))
            {
                duplicates += 1;
                count[a] = count[a].wrapping_sub(4);
                xor[a] ^= x;
                count[b] = count[b].wrapping_sub(4) ^ 1;
                xor[b] ^= x;
                count[c] = count[c].wrapping_sub(4) ^ 2;
                xor[c] ^= x;
            }
        }
        (seen < 128).then_some(duplicates)
    }

    /// Peels the counted keys into `order` and `peeled_from`; returns how many were peeled.
    fn peel(&mut self, shape: &Shape) -> usize {
        let (count, xor, queue) = (&mut self.count, &mut self.xor, &mut self.queue);
        let mut queued = 0;
        for (i, &c) in count.iter().enumerate() {
            queue[queued] = i as u32;
            queued += usize::from(c >> 2 == 1);
        }
        let mut peeled = 0;
        while queued > 0 {
            queued -= 1;
            let slot = queue[queued] as usize;
            // Emptied since it was queued: its last key was peeled from another slot.
            if count[slot] >> 2 != 1 {
                continue;
            }
            let x = xor[slot];
            let position = count[slot] & 3;
            self.order[peeled] = x;
            self.peeled_from[peeled] = position;
            peeled += 1;
            let slots = slots_around(shape, x);
            let (p1, p2) = others(usize::from(position));
            for (other, p) in [
                (slots[usize::from(position) + 1], p1),
                (slots[usize::from(position) + 2], p2),
            ] {
                queue[queued] = other as u32;
                queued += usize::from(count[other] >> 2 == 2);
                count[other] = count[other].wrapping_sub(4) ^ p;
                xor[other] ^= x;
            }
        }
        peeled
    }

    /// Assigns the fingerprints, last peeled key first.
    fn assign<F: Fingerprint>(
        &self,
        peeled: usize,
        shape: &Shape,
        num_slots: u64,
    ) -> Result<Vec<F>> {
        let mut fingerprints = try_vec(num_slots, F::default)?;
        for (&x, &position) in self.order[..peeled]
            .iter()
            .zip(&self.peeled_from[..peeled])
            .rev()
        {
            let slots = slots_around(shape, x);
            let p = usize::from(position & 3);
            fingerprints[slots[p]] =
                F::of(x) ^ fingerprints[slots[p + 1]] ^ fingerprints[slots[p + 2]];
        }
        Ok(fingerprints)
    }
}

/// `hashes` sorted with repeats removed, or `None` if none repeat.
fn without_repeats(hashes: &[u64]) -> Result<Option<Vec<u64>>> {
    let mut sorted = Vec::new();
    sorted
        .try_reserve_exact(hashes.len())
        .map_err(|_| Error::OutOfMemory {
            bytes: (hashes.len() as u64).saturating_mul(8),
        })?;
    sorted.extend_from_slice(hashes);
    sorted.sort_unstable();
    sorted.dedup();
    Ok((sorted.len() < hashes.len()).then_some(sorted))
}

/// Builds the fingerprints of `hashes` following `plan`: fuse seeds 0, 1, 2, ... in turn (the
/// seed is the attempt's number). After the first failure, repeated hashes are removed, in
/// case they were what stopped the peeling.
///
/// # Errors
///
/// [`Error::ConstructionFailed`] after `plan.attempts` failures; [`Error::InvalidParameter`]
/// past 2^32 − 1 slots; [`Error::OutOfMemory`] if the scratch space does not fit.
pub(super) fn solve<F: Fingerprint>(hashes: &[u64], plan: BuildPlan) -> Result<Solved<F>> {
    if hashes.is_empty() {
        return Ok(Solved {
            layout: plan.layout,
            fuse_seed: 0,
            fingerprints: Vec::new(),
        });
    }
    let num_slots = plan.layout.num_slots();
    let max_segment_count = (0..plan.attempts.min(4))
        .map(|a| plan.layout_of(a).segment_count)
        .max()
        .unwrap_or(plan.layout.segment_count);
    let mut scratch = Scratch::new(hashes.len(), num_slots, max_segment_count)?;
    let mut unique: Option<Vec<u64>> = None;
    for attempt in 0..plan.attempts {
        let layout = plan.layout_of(attempt);
        let shape = Shape::new(layout.segment_length, layout.segment_count, attempt);
        let keys = unique.as_deref().unwrap_or(hashes);
        scratch.sort_by_block(keys, &shape, layout.segment_count);
        if let Some(duplicates) = scratch.count_keys(keys.len(), &shape, attempt == 0) {
            let peeled = scratch.peel(&shape);
            if peeled + duplicates == keys.len() {
                return Ok(Solved {
                    layout,
                    fuse_seed: attempt,
                    fingerprints: scratch.assign(peeled, &shape, num_slots)?,
                });
            }
        }
        if attempt == 0 {
            unique = without_repeats(hashes)?;
        }
    }
    Err(Error::ConstructionFailed {
        attempts: plan.attempts,
    })
}

#[cfg(test)]
mod tests {
    use super::super::slots::probe;
    use super::*;

    fn hashes(n: u64, salt: u64) -> Vec<u64> {
        (0..n).map(|i| crate::hash(&(i, salt))).collect()
    }

    #[test]
    fn every_key_is_found_in_filters_of_every_size() {
        for n in [1u64, 2, 3, 4, 5, 10, 100, 1000, 5000, 65_000, 200_000] {
            let hs = hashes(n, 1);
            let plan = BuildPlan::for_items(n).unwrap();
            let solved = solve::<u8>(&hs, plan).unwrap();
            assert_eq!(solved.fingerprints.len() as u64, plan.layout.num_slots());
            let shape = Shape::new(
                solved.layout.segment_length,
                solved.layout.segment_count,
                solved.fuse_seed,
            );
            assert!(
                hs.iter().all(|&h| probe(&solved.fingerprints, &shape, h)),
                "{n}"
            );
        }
    }

    /// The sizes of the sizing rule, by hand: 1.125 slots per key from 10^6 keys on, more
    /// below; segment lengths a power of two up to 2^18.
    #[test]
    fn layouts_follow_the_sizing_rule() {
        let cases = [
            (0u64, 4u32, 0u32),
            (1, 4, 1),
            (2, 4, 1),
            (100, 64, 1),
            (10_000, 512, 23),
            (1_000_000, 8192, 136),
            (100_000_000, 131_072, 857),
            (1_000_000_000, 262_144, 4290),
        ];
        for (n, length, count) in cases {
            let layout = planned_layout(n).unwrap();
            assert_eq!(
                (layout.segment_length, layout.segment_count),
                (length, count),
                "{n}"
            );
        }
        let big = planned_layout(1_000_000_000).unwrap().num_slots() as f64 / 1e9;
        assert!((1.125..1.1253).contains(&big), "{big}");
        assert!(planned_layout(4_000_000_000).is_err());
        assert!(planned_layout(u64::MAX).is_err());
    }

    #[test]
    fn halving_keeps_the_array() {
        let layout = planned_layout(50_000).unwrap();
        let halved = layout.halved().unwrap();
        assert_eq!(halved.num_slots(), layout.num_slots());
        assert_eq!(halved.segment_length * 2, layout.segment_length);
    }

    /// How often the first seed peels `n` keys at the planned layout, and at the halved one,
    /// out of `trials` key sets.
    fn first_seed_successes(n: u64, trials: u64) -> (u64, u64) {
        let layout = planned_layout(n).unwrap();
        let mut planned = 0;
        let mut halved = 0;
        for t in 0..trials {
            let hs = hashes(n, t + 1000 * n);
            let one = |layout: Layout| {
                let plan = BuildPlan {
                    layout,
                    attempts: 1,
                    alternate: false,
                };
                u64::from(solve::<u8>(&hs, plan).is_ok())
            };
            planned += one(layout);
            halved += layout.halved().map_or(0, one);
        }
        (planned, halved)
    }

    /// Not a test: the data behind [`BuildPlan::for_items`]'s alternation. For each n
    /// (`FUSE_N`, comma-separated), how often a first seed succeeds at the planned layout and
    /// at the halved one, over `FUSE_TRIALS` key sets:
    /// `FUSE_N=1000,3000 FUSE_TRIALS=100 cargo test -p bloomkit --release --lib fuse_success_rates -- --ignored --nocapture`
    #[test]
    #[ignore]
    fn fuse_success_rates() {
        let sizes: Vec<u64> = std::env::var("FUSE_N")
            .unwrap_or_else(|_| "10,100,1000,2000,4000,10000,30000,100000,1000000".into())
            .split(',')
            .map(|s| s.trim().parse().unwrap())
            .collect();
        let trials: u64 = std::env::var("FUSE_TRIALS").map_or(50, |s| s.parse().unwrap());
        for n in sizes {
            let layout = planned_layout(n).unwrap();
            let (planned, halved) = first_seed_successes(n, trials);
            eprintln!(
                "n {n:>9} L {:>6} S {:>5}: planned {planned}/{trials}, halved {halved}/{trials}",
                layout.segment_length, layout.segment_count
            );
        }
    }
}
