//! Layout 2, the homogeneous sharded ribbon: from a key's hash to its row.
//!
//! The slots are split into `S` shards of `M` slots each (`M` a multiple of 64), and every
//! key's row lies inside one shard, so that each shard is a system of its own: the build
//! solves them one after the other in bounded memory (`shard_build.rs`). A key's equation
//! is *homogeneous*: the values of the slots its row selects must XOR to zero. Such a system
//! always has solutions, so a build never fails and never re-seeds; the build picks a
//! pseudo-random one, and a key the filter was not built from then passes with probability
//! 2^−r, plus the small chance that its row is a combination of the built keys' rows (the
//! slack of `shard_build::planned_shard_slots` keeps that below about 1% of 2^−r).
//!
//! This is part of the file format (golden files pin it); all arithmetic is wrapping, on
//! u64, with 128-bit products where stated. From the key hash `h`, with `w = min(M, 128)`:
//!
//! * shard and fraction: the 128-bit product `h · S`; its high 64 bits are the shard `k`
//!   (below `S`), its low 64 bits the fraction `f`;
//! * start within the shard: `(f · (M − w + 1)) >> 64`, a 128-bit product, so the start
//!   slot is `k · M` plus that;
//! * the coefficient row, bit `i` for slot `start + i`: low 64 bits `h · 0xc2b2ae3d27d4eb4f`
//!   with bit 0 set, high 64 bits `h · 0x9e3779b97f4a7c15`, then only the low `w` bits
//!   kept.
//!
//! There is no remix: the shard and start come from the high bits of `h` (through
//! multiply-high), the coefficients from products whose low bits depend only on the low
//! bits of `h`, so keys that share a start do not share coefficient patterns. The hash must
//! be a good one ([`crate::hash`] is).

use std::fmt;

use super::equation::{
    evaluate_clamped, group_words, vanishes_inside, Equation, Kernel, Shifted, BLOCK_SLOTS, WIDTH,
};

const C_LO: u64 = 0xc2b2_ae3d_27d4_eb4f;
const C_HI: u64 = 0x9e37_79b9_7f4a_7c15;

/// The geometry of a layout-2 filter: how many shards, how many slots each, and what that
/// makes of a hash.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Shards {
    /// Shards `S`, at least 1.
    num_shards: u64,
    /// Slots per shard `M`: a positive multiple of 64.
    shard_slots: u64,
    /// `M − w + 1`: the starts a row can have within its shard.
    shard_starts: u64,
    /// Ones where the row's high word is kept: all of it, unless a shard is one block (then
    /// the row is the low word alone).
    hi_mask: u64,
}

impl Shards {
    /// The geometry of `num_shards` shards (at least 1) of `shard_slots` slots (a positive
    /// multiple of 64).
    pub(super) fn new(num_shards: u64, shard_slots: u64) -> Self {
        debug_assert!(num_shards > 0);
        debug_assert!(shard_slots > 0 && shard_slots.is_multiple_of(BLOCK_SLOTS));
        let width = shard_slots.min(WIDTH);
        Shards {
            num_shards,
            shard_slots,
            shard_starts: shard_slots - width + 1,
            hi_mask: if width == WIDTH { u64::MAX } else { 0 },
        }
    }

    pub(super) fn num_shards(&self) -> u64 {
        self.num_shards
    }

    pub(super) fn shard_slots(&self) -> u64 {
        self.shard_slots
    }

    /// The shard a hash falls in, and the fraction that places it inside.
    #[inline]
    fn split(&self, hash: u64) -> (u64, u64) {
        let product = hash as u128 * self.num_shards as u128;
        ((product >> 64) as u64, product as u64)
    }

    /// The shard a key with this hash belongs to. Within a shard, keys sort by start as their
    /// hashes sort: the fraction grows with the hash, and the start with the fraction.
    #[inline]
    pub(super) fn shard_of(&self, hash: u64) -> u64 {
        self.split(hash).0
    }

    /// The row of `hash` at `fraction` (from [`split`](Self::split)), its start counted from
    /// the start of its shard.
    #[inline]
    fn row(&self, hash: u64, fraction: u64) -> Equation {
        let start = ((fraction as u128 * self.shard_starts as u128) >> 64) as u64;
        let lo = hash.wrapping_mul(C_LO) | 1;
        let hi = hash.wrapping_mul(C_HI) & self.hi_mask;
        Equation {
            start,
            coeff: (hi as u128) << 64 | lo as u128,
            result: 0,
        }
    }

    /// The key's equation, with its start counted from the start of its shard; the result is
    /// always 0.
    #[inline]
    pub(super) fn local_equation(&self, hash: u64) -> Equation {
        self.row(hash, self.split(hash).1)
    }

    /// The key's equation over the whole solution.
    #[inline]
    pub(super) fn equation(&self, hash: u64) -> Equation {
        let (shard, fraction) = self.split(hash);
        let mut eq = self.row(hash, fraction);
        eq.start += shard * self.shard_slots;
        eq
    }
}

/// Layout 2's query, chosen once per filter for its kernel and result bits: the whole of
/// it, from the hash to the answer, as one function compiled for the kernel, so that a query
/// costs one call (and no branch on the CPU or on r) whether or not the caller inlines
/// [`crate::RibbonFilter::contains_hash`].
#[derive(Clone, Copy)]
pub(super) struct Probe {
    /// The query. An AVX2 one only if this CPU has AVX2 and BMI2, an AVX-512 one only if
    /// `Kernel::avx512` also says it has AVX-512F and VPOPCNTDQ, and a one-group one only
    /// for r ≤ 8: the field is private, and only [`Probe::new`] sets it.
    contains: unsafe fn(&Shards, &[u64], u32, u64) -> bool,
    /// The result bits `contains` was chosen for.
    result_bits: u32,
}

impl fmt::Debug for Probe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Probe")
            .field("result_bits", &self.result_bits)
            .finish_non_exhaustive()
    }
}

impl Probe {
    /// The query for `result_bits` (1 to 32) with `kernel`.
    pub(super) fn new(kernel: Kernel, result_bits: u32) -> Self {
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        if kernel.avx2() && std::arch::is_x86_feature_detected!("bmi2") {
            let contains = if result_bits <= 8 && kernel.avx512() {
                avx512_query(result_bits)
            } else if result_bits <= 8 {
                avx2::contains_one_group
            } else {
                avx2::contains_groups
            };
            return Probe {
                contains,
                result_bits,
            };
        }
        #[cfg(not(all(target_arch = "x86_64", not(miri))))]
        let _ = kernel;
        Probe {
            contains: contains_portable,
            result_bits,
        }
    }

    /// Whether the key of `hash` may be in the filter of `shards` and `solution` (whose
    /// result bits are this probe's).
    #[inline]
    pub(super) fn contains(&self, shards: &Shards, solution: &[u64], hash: u64) -> bool {
        // SAFETY: `contains` is an AVX2 query only on a CPU with AVX2 and BMI2, an AVX-512
        // one only on a CPU that also has AVX-512F and VPOPCNTDQ, and a one-group one only
        // for r ≤ 8 (only `Probe::new` sets it, and it checks); the result bits are the ones
        // it was chosen for. The queries check the solution's length themselves.
        #[allow(unsafe_code)]
        unsafe {
            (self.contains)(shards, solution, self.result_bits, hash)
        }
    }
}

/// The AVX-512 query for `result_bits` (1 to 8).
#[cfg(all(target_arch = "x86_64", not(miri)))]
#[allow(clippy::type_complexity)]
fn avx512_query(result_bits: u32) -> unsafe fn(&Shards, &[u64], u32, u64) -> bool {
    match result_bits {
        1 => avx2::contains_one_group_avx512::<1>,
        2 => avx2::contains_one_group_avx512::<2>,
        3 => avx2::contains_one_group_avx512::<3>,
        4 => avx2::contains_one_group_avx512::<4>,
        5 => avx2::contains_one_group_avx512::<5>,
        6 => avx2::contains_one_group_avx512::<6>,
        7 => avx2::contains_one_group_avx512::<7>,
        _ => avx2::contains_one_group_avx512::<8>,
    }
}

/// The query around a kernel for rows away from the end of the solution (`inside`, given
/// the words from the row's first block on: `2·r + group_words`, where `group_words` is
/// [`group_words`]`(r)`); the last block or two take the clamped path, out of line.
#[inline(always)]
fn contains_with(
    shards: &Shards,
    solution: &[u64],
    result_bits: u32,
    group_words: usize,
    hash: u64,
    inside: impl FnOnce(&[u64], usize, &Shifted) -> bool,
) -> bool {
    let r = result_bits as usize;
    let eq = shards.equation(hash);
    let block = (eq.start / BLOCK_SLOTS) as usize;
    match solution
        .get(block * r..)
        .and_then(|w| w.get(..2 * r + group_words))
    {
        Some(words) => inside(words, r, &Shifted::new(&eq)),
        None => contains_clamped(shards, solution, r, hash),
    }
}

/// The query of a row that reaches the last two blocks, where the kernels would read past
/// the end: rare, and kept apart so that the row of the common path stays in registers.
#[cold]
#[inline(never)]
fn contains_clamped(shards: &Shards, solution: &[u64], r: usize, hash: u64) -> bool {
    let eq = shards.equation(hash);
    let block = (eq.start / BLOCK_SLOTS) as usize;
    evaluate_clamped(solution, r, block, &Shifted::new(&eq)) == 0
}

/// The query with the portable kernel.
fn contains_portable(shards: &Shards, solution: &[u64], result_bits: u32, hash: u64) -> bool {
    let group = group_words(result_bits as usize);
    contains_with(shards, solution, result_bits, group, hash, vanishes_inside)
}

/// The query compiled for AVX2 (and BMI2, which every AVX2 CPU has: its shifts and
/// multiplies need fewer register moves).
#[cfg(all(target_arch = "x86_64", not(miri)))]
#[allow(unsafe_code)]
mod avx2 {
    use super::super::equation::avx2::{vanishes_inside, vanishes_one_group};
    use super::super::equation::{avx512, group_words};
    use super::{contains_with, Shards};

    /// The query for r ≤ 8: one group of eight words per block.
    ///
    /// # Safety
    ///
    /// The CPU must support AVX2 and BMI2, and `result_bits` must be at most 8.
    #[target_feature(enable = "avx2,bmi2")]
    pub(super) unsafe fn contains_one_group(
        shards: &Shards,
        solution: &[u64],
        result_bits: u32,
        hash: u64,
    ) -> bool {
        // One group: `group_words(r)` is 8.
        contains_with(shards, solution, result_bits, 8, hash, |words, r, row| {
            // SAFETY: the CPU has AVX2 and r ≤ 8, as our caller guarantees; `contains_with`
            // hands over `2·r + group_words(r)` words.
            unsafe { vanishes_one_group(words, r, row) }
        })
    }

    /// [`contains_one_group`] with the AVX-512 kernel, compiled for `R` result bits so
    /// that the block's offset and the lanes tested are constants.
    ///
    /// # Safety
    ///
    /// The CPU must support AVX2, BMI2, AVX-512F and AVX-512 VPOPCNTDQ; `R` is from 1 to 8
    /// and `result_bits` is `R`.
    #[target_feature(enable = "avx2,bmi2,avx512f,avx512vpopcntdq")]
    pub(super) unsafe fn contains_one_group_avx512<const R: u32>(
        shards: &Shards,
        solution: &[u64],
        result_bits: u32,
        hash: u64,
    ) -> bool {
        debug_assert_eq!(result_bits, R);
        contains_with(shards, solution, R, 8, hash, |words, r, row| {
            // SAFETY: the CPU has AVX-512F and VPOPCNTDQ and r ≤ 8, as our caller
            // guarantees; `contains_with` hands over `2·r + group_words(r)` words.
            unsafe { avx512::vanishes_one_group(words, r, row) }
        })
    }

    /// The query for any r.
    ///
    /// # Safety
    ///
    /// The CPU must support AVX2 and BMI2.
    #[target_feature(enable = "avx2,bmi2")]
    pub(super) unsafe fn contains_groups(
        shards: &Shards,
        solution: &[u64],
        result_bits: u32,
        hash: u64,
    ) -> bool {
        let group = group_words(result_bits as usize);
        contains_with(
            shards,
            solution,
            result_bits,
            group,
            hash,
            |words, r, row| {
                // SAFETY: the CPU has AVX2, as our caller guarantees; `contains_with` hands over
                // `2·r + group_words(r)` words.
                unsafe { vanishes_inside(words, r, row) }
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_stay_inside_their_shard() {
        for (shards, slots) in [(1u64, 64u64), (1, 128), (1, 192), (3, 1024), (7, 640)] {
            let s = Shards::new(shards, slots);
            for h in (0..5000u64)
                .map(crate::mix::fmix64)
                .chain([0, 1, u64::MAX, u64::MAX - 1])
            {
                let eq = s.equation(h);
                let local = s.local_equation(h);
                let shard = s.shard_of(h);
                assert!(shard < shards);
                assert_eq!(eq.start, shard * slots + local.start);
                assert_eq!((eq.coeff, eq.result), (local.coeff, 0));
                assert_eq!(eq.coeff & 1, 1);
                let width = 128 - eq.coeff.leading_zeros() as u64;
                assert!(local.start + width <= slots, "{shards} {slots} {eq:?}");
            }
        }
    }

    /// Sorting hashes sorts a shard's keys by start, which the build relies on to fill the
    /// band front to back.
    #[test]
    fn sorted_hashes_are_sorted_by_shard_and_start() {
        let s = Shards::new(5, 4096);
        let mut hashes: Vec<u64> = (0..20_000u64).map(crate::mix::fmix64).collect();
        hashes.sort_unstable();
        let keys: Vec<(u64, u64)> = hashes
            .iter()
            .map(|&h| (s.shard_of(h), s.local_equation(h).start))
            .collect();
        assert!(keys.windows(2).all(|w| w[0] <= w[1]));
        // And every shard gets its share.
        for k in 0..5 {
            let here = keys.iter().filter(|x| x.0 == k).count();
            assert!((3600..4400).contains(&here), "shard {k}: {here}");
        }
    }

    /// Keys that share a start do not share their leading coefficients: the start comes from
    /// the high bits of the hash, the low coefficient word from its low bits.
    #[test]
    fn a_start_does_not_fix_the_coefficients() {
        let s = Shards::new(1, 1 << 30);
        let base = 0x1234_5678_9abc_def0u64;
        // Hashes that differ only in their low 20 bits have (nearly) the same start.
        let eqs: Vec<Equation> = (0..1000u64).map(|i| s.equation(base ^ i)).collect();
        let starts: std::collections::HashSet<u64> = eqs.iter().map(|e| e.start).collect();
        assert!(starts.len() <= 2, "{}", starts.len());
        let low_bytes: std::collections::HashSet<u8> =
            eqs.iter().map(|e| (e.coeff >> 1) as u8).collect();
        assert!(low_bytes.len() > 100, "{}", low_bytes.len());
    }
}
