//! Where a key's bits are in the sectored layout (kind 9 in `docs/FORMAT.md`): its line, as
//! in the blocked layout, and in that line `per_word` bits in each of the eight 64-bit words.
//!
//! Probe `i` (for `i` in `0..8·per_word`) lies in word `i mod 8`, at bit
//! `(a·C^i mod 2^32) >> 26`, where `a` is the low 32 bits of the hash and `C` the blocked
//! layout's probe multiplier: the blocked layout's probe values, with their top 6 bits as a
//! place in a word instead of their top 9 as a place in the line. Every word of the mask is
//! then known without looking at the others, so it is built in registers, and insert and
//! query touch each word once.

use crate::bits::{Line, LINE_WORDS};
use crate::blocked::probe::PROBE_POWERS;
use crate::sizing;

/// The most bits a key sets in one word: eight words of eight make the 64 probes that
/// [`sizing::MAX_NUM_HASHES`] allows.
pub(crate) const MAX_PER_WORD: u32 = sizing::MAX_NUM_HASHES / LINE_WORDS as u32;

/// The bits a key sets in its line, as eight words (at most `per_word` bits in each, fewer
/// where two of a word's probes coincide). `per_word` is in `1..=MAX_PER_WORD`.
#[inline(always)]
pub(crate) fn line_mask(hash: u64, per_word: u32) -> [u64; LINE_WORDS] {
    let seed = hash as u32;
    let mut mask = [0u64; LINE_WORDS];
    for group in PROBE_POWERS
        .chunks_exact(LINE_WORDS)
        .take(per_word as usize)
    {
        for (word, &power) in mask.iter_mut().zip(group) {
            *word |= 1u64 << (seed.wrapping_mul(power) >> 26);
        }
    }
    mask
}

/// Sets the bits of `hash` in `line`; returns whether any bit was new. Portable: each word is
/// read and written once, from a mask built in registers.
#[inline(always)]
pub(crate) fn insert_into(line: &mut Line, hash: u64, per_word: u32) -> bool {
    let mask = line_mask(hash, per_word);
    let mut new_bits = 0;
    for (word, m) in line.0.iter_mut().zip(mask) {
        new_bits |= m & !*word;
        *word |= m;
    }
    new_bits != 0
}

/// Whether every bit of `hash` is set in a line whose word `w` reads as `word(w)`. Portable.
#[inline(always)]
pub(crate) fn probes_set(hash: u64, per_word: u32, word: impl Fn(usize) -> u64) -> bool {
    let mask = line_mask(hash, per_word);
    let mut missing = 0;
    for (w, m) in mask.into_iter().enumerate() {
        missing |= m & !word(w);
    }
    missing == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_word_gets_between_one_and_per_word_bits() {
        for h in [0u64, 1, u64::MAX, 0xdead_beef_0bad_f00d, crate::hash("x")] {
            for per_word in 1..=MAX_PER_WORD {
                let m = line_mask(h, per_word);
                for word in m {
                    assert!((1..=per_word).contains(&word.count_ones()), "{per_word}");
                }
                assert_eq!(m, line_mask(h, per_word));
            }
        }
    }

    /// The bit of a word is the top 6 bits of the probe value: pinned for one hash, so a
    /// change of layout (which would misread every stored file) fails here.
    #[test]
    fn probe_places_are_pinned() {
        let seed = 0x1234_5678u32;
        let m = line_mask(0xffff_ffff_0000_0000 | seed as u64, 1);
        for (w, word) in m.into_iter().enumerate() {
            let bit = seed.wrapping_mul(PROBE_POWERS[w]) >> 26;
            assert_eq!(word, 1 << bit, "word {w}");
        }
        assert_eq!(m[0], 1 << (seed >> 26));
    }
}
