//! The counters' word layout: sixteen 4-bit counters to a `u64`, counter `i` in bits
//! `4·(i % 16)` to `4·(i % 16) + 3` of word `i / 16`, and the word-at-a-time operations on them.

/// Bits in one counter.
pub(super) const COUNTER_BITS: u64 = 4;

/// Counters in one 64-bit word.
pub(super) const COUNTERS_PER_WORD: u64 = 64 / COUNTER_BITS;

/// A counter's largest value, where it saturates; also the mask of one counter.
pub(super) const COUNTER_MAX: u64 = 15;

/// The lowest bit of every counter of a word.
pub(super) const COUNTER_LOW_BITS: u64 = 0x1111_1111_1111_1111;

/// The word holding counter `index`, and the shift of the counter inside it.
#[inline]
pub(super) fn slot(index: u64) -> (usize, u64) {
    (
        (index / COUNTERS_PER_WORD) as usize,
        (index % COUNTERS_PER_WORD) * COUNTER_BITS,
    )
}

/// A word with the lowest bit of each nonzero counter of `word` set (and no other bit).
#[inline]
pub(super) fn nonzero_counters(word: u64) -> u64 {
    // Fold each counter's four bits into its lowest one; the shifts bring in bits of the next
    // counter up only at positions the final mask discards.
    let x = word | (word >> 1);
    (x | (x >> 2)) & COUNTER_LOW_BITS
}

/// A word with the lowest bit of each saturated counter (all four bits set) of `word` set.
#[inline]
pub(super) fn saturated_counters(word: u64) -> u64 {
    let x = word & (word >> 1);
    x & (x >> 2) & COUNTER_LOW_BITS
}

/// Moves the sixteen bits at positions 0, 4, 8, …, 60 of `x` (the rest zero) to positions
/// 0 to 15: one bit per counter, in counter order.
#[inline]
pub(super) fn gather_counter_bits(x: u64) -> u64 {
    let x = (x | (x >> 3)) & 0x0303_0303_0303_0303;
    let x = (x | (x >> 6)) & 0x000f_000f_000f_000f;
    let x = (x | (x >> 12)) & 0x0000_00ff_0000_00ff;
    (x | (x >> 24)) & 0xffff
}

/// The counter-wise sum of two words of counters, each sum capped at 15.
pub(super) fn saturating_add_counters(a: u64, b: u64) -> u64 {
    let mut sum = 0;
    for shift in (0..64).step_by(COUNTER_BITS as usize) {
        let s = ((a >> shift) & COUNTER_MAX) + ((b >> shift) & COUNTER_MAX);
        sum |= s.min(COUNTER_MAX) << shift;
    }
    sum
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn word_helpers_agree_with_a_counter_by_counter_reading() {
        let words = [
            0u64,
            u64::MAX,
            0x0123_4567_89ab_cdef,
            0xf0f0_0f0f_1000_0001,
            0x8421_8421_8421_8421,
        ];
        for &w in &words {
            let mut nonzero = 0;
            let mut saturated = 0;
            for i in 0..16 {
                let c = (w >> (4 * i)) & 15;
                nonzero |= ((c != 0) as u64) << i;
                saturated |= ((c == 15) as u64) << i;
            }
            assert_eq!(gather_counter_bits(nonzero_counters(w)), nonzero, "{w:#x}");
            assert_eq!(
                gather_counter_bits(saturated_counters(w)),
                saturated,
                "{w:#x}"
            );
            for &v in &words {
                let sum = saturating_add_counters(w, v);
                for i in 0..16 {
                    let expected = (((w >> (4 * i)) & 15) + ((v >> (4 * i)) & 15)).min(15);
                    assert_eq!((sum >> (4 * i)) & 15, expected);
                }
            }
        }
    }
}
