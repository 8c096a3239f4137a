//! Where a key's bits are in the blocked layout (kind 2 in `docs/FORMAT.md`): its line, and
//! the k probes inside it, with the portable query and insert that the kernels
//! (`kernel.rs`) fall back on and are tested against.

use crate::bits::{Line, LINE_WORDS};
use crate::sizing;

/// Which line a key's probes fall in: multiply-high of the whole 64-bit hash, so filters of
/// more than 2^32 lines (256 GiB) still reach every line.
#[inline]
pub(crate) fn line_index(hash: u64, num_lines: usize) -> usize {
    ((hash as u128 * num_lines as u128) >> 64) as usize
}

/// The bits a key sets in its line, as eight words.
///
/// The probes come from the low 32 bits of the hash (the line came mostly from the high
/// bits): each probe is the top 9 bits of a 32-bit value that is multiplied by an odd
/// constant between probes, as RocksDB's FastLocalBloom does. Building the whole mask first
/// makes insert and query branch-free: eight ORs, or eight AND-NOTs.
#[inline]
pub(crate) fn line_mask(hash: u64, num_hashes: u32) -> [u64; LINE_WORDS] {
    let mut mask = [0u64; LINE_WORDS];
    for_each_probe(hash, num_hashes, |word, bit| mask[word] |= bit);
    mask
}

/// The probe multiplier: an odd constant (2^32 over the golden ratio), so successive probe
/// values run through a full cycle and their top bits look independent.
const PROBE_MULTIPLIER: u32 = 0x9e37_79b9;

/// `PROBE_MULTIPLIER^i mod 2^32` for every probe index: probe i's value is the seed times
/// `PROBE_POWERS[i]`, the same number as multiplying by the multiplier i times, but the
/// multiplies do not wait for one another (a chain of k dependent multiplies would be the
/// longest latency of an insert).
pub(crate) const PROBE_POWERS: [u32; sizing::MAX_NUM_HASHES as usize] = {
    let mut p = [1u32; sizing::MAX_NUM_HASHES as usize];
    let mut i = 1;
    while i < p.len() {
        p[i] = p[i - 1].wrapping_mul(PROBE_MULTIPLIER);
        i += 1;
    }
    p
};

/// The probe values of `hash`, `num_hashes` of them (at most [`sizing::MAX_NUM_HASHES`]).
#[inline(always)]
fn probe_values(hash: u64, num_hashes: u32) -> impl Iterator<Item = u32> {
    let seed = hash as u32;
    PROBE_POWERS
        .iter()
        .take(num_hashes as usize)
        .map(move |&power| seed.wrapping_mul(power))
}

/// Calls `visit(word, bit_mask)` for each of the `num_hashes` probes of `hash` in its line:
/// the same probes as [`line_mask`], one at a time.
#[inline(always)]
pub(crate) fn for_each_probe(hash: u64, num_hashes: u32, mut visit: impl FnMut(usize, u64)) {
    for a in probe_values(hash, num_hashes) {
        let bit = a >> 23;
        visit((bit >> 6) as usize & 7, 1u64 << (bit & 63));
    }
}

/// Whether every probe of `hash` is set, in a line whose word `w` reads as `word(w)`.
///
/// Each probe loads its own word and ANDs the bit into an accumulator: the loads are
/// independent and there is no branch on the data. (Building the whole mask first, as
/// inserts do, chains read-modify-writes through a stack array: twice as slow to query.)
#[inline(always)]
pub(crate) fn probes_set(hash: u64, num_hashes: u32, word: impl Fn(usize) -> u64) -> bool {
    let mut all = 1u64;
    for a in probe_values(hash, num_hashes) {
        let bit = a >> 23;
        all &= word((bit >> 6) as usize & 7) >> (bit & 63);
    }
    all & 1 == 1
}

/// Sets the probes of `hash` in `line`; returns whether any bit was new.
#[inline(always)]
pub(crate) fn insert_into(line: &mut Line, hash: u64, num_hashes: u32) -> bool {
    let mut new_bits = 0;
    for_each_probe(hash, num_hashes, |w, bit| {
        new_bits |= bit & !line.0[w];
        line.0[w] |= bit;
    });
    new_bits != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mask_has_at_most_k_bits_and_is_deterministic() {
        for h in [0u64, 1, u64::MAX, 0xdead_beef_0bad_f00d] {
            for k in 1..=64 {
                let m = line_mask(h, k);
                let ones: u32 = m.iter().map(|w| w.count_ones()).sum();
                assert!(ones >= 1 && ones <= k);
                assert_eq!(m, line_mask(h, k));
            }
        }
        // Distinct probes for a typical hash.
        let ones: u32 = line_mask(crate::hash("x"), 8)
            .iter()
            .map(|w| w.count_ones())
            .sum();
        assert!(ones >= 7);
    }

    #[test]
    fn line_index_in_range() {
        for n in [1usize, 2, 3, 1000, usize::MAX] {
            for h in [0u64, 1, u64::MAX, 1 << 63] {
                assert!(line_index(h, n) < n);
            }
        }
    }
}
