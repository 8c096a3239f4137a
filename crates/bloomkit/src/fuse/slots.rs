//! From a key hash to the key's three slots and its fingerprint: the part of the file format
//! that a query and a build share, and the query kernel.
//!
//! The fingerprint array is `S + 2` segments of `L` slots (`L` a power of two). From the key
//! hash `h` and the filter's fuse seed `s` (all arithmetic on u64, wrapping):
//!
//! * `x = h` when `s = 0`, else `x = fmix64(h ^ fmix64(s ^ 0x9e3779b97f4a7c15))`. The key
//!   hash is already a uniform 64-bit value, so the first attempt uses it as it is and a query
//!   skips the remix; a re-seeded build needs unrelated slots, hence the full mix;
//! * the first slot `a = (x · S·L) >> 64`, a 128-bit product: anywhere in the first `S`
//!   segments, rising with `x`;
//! * `b = (a + L) ^ ((x >> 18) & (L − 1))` and `c = (a + 2L) ^ (x & (L − 1))`: XOR with an
//!   offset below `L` stays inside the aligned segment, so `b` is in the segment after `a`'s
//!   and `c` in the one after that, and `a < b < c < (S + 2)·L`;
//! * the fingerprint: the low 8 or 16 bits of `x ^ (x >> 32)`.
//!
//! A key may be present when the XOR of the three slots' fingerprints equals its own.

use std::ops::BitXor;

use crate::mix::fmix64;

/// The longest segment a build makes: 2^18 slots, beyond which longer segments stop helping
/// the peeling and only spread a key's slots further apart.
pub(super) const MAX_SEGMENT_LENGTH: u32 = 1 << 18;

/// What turns a hash into a key's slots: the filter's layout and fuse seed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Shape {
    /// `false` for fuse seed 0, where `x` is the hash itself.
    remixed: bool,
    remix_key: u64,
    segment_length: u64,
    segment_mask: u64,
    /// `S · L`: the range of the first slot.
    first_range: u64,
}

impl Shape {
    /// The shape of a filter of `segment_count` segments (plus two) of `segment_length`
    /// slots, a power of two, built with `fuse_seed`.
    pub(super) fn new(segment_length: u32, segment_count: u32, fuse_seed: u32) -> Self {
        debug_assert!(segment_length.is_power_of_two());
        Shape {
            remixed: fuse_seed != 0,
            remix_key: fmix64(u64::from(fuse_seed) ^ 0x9e37_79b9_7f4a_7c15),
            segment_length: u64::from(segment_length),
            segment_mask: u64::from(segment_length) - 1,
            first_range: u64::from(segment_count) * u64::from(segment_length),
        }
    }

    /// The remixed hash `x` that the slots and the fingerprint come from.
    #[inline]
    pub(super) fn remix(&self, hash: u64) -> u64 {
        if self.remixed {
            fmix64(hash ^ self.remix_key)
        } else {
            hash
        }
    }

    /// The key's three slots, in increasing order; the first rises with `x`, so sorting keys
    /// by `x` sorts them by first slot.
    #[inline]
    pub(super) fn slots(&self, x: u64) -> [usize; 3] {
        let a = ((u128::from(x) * u128::from(self.first_range)) >> 64) as u64;
        let b = (a + self.segment_length) ^ ((x >> 18) & self.segment_mask);
        let c = (a + 2 * self.segment_length) ^ (x & self.segment_mask);
        [a as usize, b as usize, c as usize]
    }
}

/// A fingerprint width: `u8` or `u16`.
pub(super) trait Fingerprint:
    Copy + Default + Eq + BitXor<Output = Self> + std::fmt::Debug + Send + Sync + 'static
{
    /// Bits per fingerprint.
    const BITS: u32;

    /// The fingerprint of the remixed hash `x`.
    fn of(x: u64) -> Self;

    /// The fingerprint as a u64 (for packing into the payload's words).
    fn to_u64(self) -> u64;

    /// The low bits of `word` as a fingerprint.
    fn from_u64(word: u64) -> Self;
}

impl Fingerprint for u8 {
    const BITS: u32 = 8;

    #[inline]
    fn of(x: u64) -> Self {
        (x ^ (x >> 32)) as u8
    }

    fn to_u64(self) -> u64 {
        u64::from(self)
    }

    fn from_u64(word: u64) -> Self {
        word as u8
    }
}

impl Fingerprint for u16 {
    const BITS: u32 = 16;

    #[inline]
    fn of(x: u64) -> Self {
        (x ^ (x >> 32)) as u16
    }

    fn to_u64(self) -> u64 {
        u64::from(self)
    }

    fn from_u64(word: u64) -> Self {
        word as u16
    }
}

/// The query: `true` if the key with this hash may be among those `fingerprints` were built
/// from. An empty array answers `false` (its slots are all out of range).
#[inline]
pub(super) fn probe<F: Fingerprint>(fingerprints: &[F], shape: &Shape, hash: u64) -> bool {
    let x = shape.remix(hash);
    let [a, b, c] = shape.slots(x);
    match (
        fingerprints.get(a),
        fingerprints.get(b),
        fingerprints.get(c),
    ) {
        (Some(&fa), Some(&fb), Some(&fc)) => fa ^ fb ^ fc == F::of(x),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_fall_in_three_consecutive_segments() {
        for (length, count) in [(4u32, 1u32), (8, 5), (1024, 37), (MAX_SEGMENT_LENGTH, 3)] {
            for seed in [0u32, 1, 77] {
                let shape = Shape::new(length, count, seed);
                let l = length as usize;
                for i in 0..20_000u64 {
                    let x = shape.remix(crate::hash(&i));
                    let [a, b, c] = shape.slots(x);
                    assert!(a < count as usize * l, "{a}");
                    assert_eq!(b / l, a / l + 1);
                    assert_eq!(c / l, a / l + 2);
                    assert!(c < (count as usize + 2) * l);
                }
            }
        }
    }

    #[test]
    fn seed_zero_uses_the_hash_and_others_remix_it() {
        let zero = Shape::new(64, 10, 0);
        assert_eq!(zero.remix(12345), 12345);
        let one = Shape::new(64, 10, 1);
        let two = Shape::new(64, 10, 2);
        let same = (0..1000u64)
            .filter(|&h| one.slots(one.remix(h)) == two.slots(two.remix(h)))
            .count();
        assert!(same < 5, "{same}");
    }

    #[test]
    fn fingerprints_fold_the_halves() {
        let x = 0x1234_5678_9abc_def0u64;
        assert_eq!(u8::of(x), 0xf0 ^ 0x78);
        assert_eq!(u16::of(x), 0xdef0 ^ 0x5678);
    }

    #[test]
    fn an_empty_array_answers_no() {
        let shape = Shape::new(4, 0, 0);
        assert!((0..1000u64).all(|h| !probe::<u8>(&[], &shape, h)));
    }
}
