//! The AVX2 kernels of the blocked layout: the same answers as the portable probes in
//! `probe.rs`, eight probes at a time (see `kernel.rs` for how they work and are chosen).

use std::arch::x86_64::*;

use crate::bits::Line;

use super::probe::PROBE_POWERS;

/// C^8 for the probe multiplier C: the step from one group of eight probes to the next.
const POWER_8: u32 = PROBE_POWERS[8];

/// C^0 .. C^7: lane i of `seeds(key) · powers()` is the value of probe i for the probe key
/// `key`.
#[target_feature(enable = "avx2")]
#[inline]
fn powers() -> __m256i {
    let p = &PROBE_POWERS;
    _mm256_setr_epi32(
        p[0] as i32,
        p[1] as i32,
        p[2] as i32,
        p[3] as i32,
        p[4] as i32,
        p[5] as i32,
        p[6] as i32,
        p[7] as i32,
    )
}

/// The probe key broadcast as 64-bit lanes: its 32-bit lanes alternate between the low half
/// (the even probes' seed) and the high half (the odd probes'), as the probes' parities do.
#[target_feature(enable = "avx2")]
#[inline]
fn seeds(key: u64) -> __m256i {
    _mm256_set1_epi64x(key as i64)
}

/// The AVX2 query kernel: the same answer as the portable `probes_set`, for the probe key
/// `key` (`BlockedProbes::key`).
#[target_feature(enable = "avx2")]
pub(super) fn probes_set(line: &Line, key: u64, num_hashes: u32) -> bool {
    let w = &line.0;
    // The line as two halves of eight 32-bit words: words 0..8 and 8..16.
    let lo = _mm256_set_epi64x(w[3] as i64, w[2] as i64, w[1] as i64, w[0] as i64);
    let hi = _mm256_set_epi64x(w[7] as i64, w[6] as i64, w[5] as i64, w[4] as i64);
    let powers = powers();
    let lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    let one = _mm256_set1_epi32(1);
    let seven = _mm256_set1_epi32(7);

    let step = _mm256_set1_epi32(POWER_8 as i32);
    let mut seeds = seeds(key);
    let mut left = num_hashes as i32;
    let mut missing = _mm256_setzero_si256();
    while left > 0 {
        // Lane i: the top 9 bits of its seed times C^i, the probe's bit in the line.
        let bit = _mm256_srli_epi32::<23>(_mm256_mullo_epi32(seeds, powers));
        let word = _mm256_srli_epi32::<5>(bit);
        // permutevar uses the low 3 bits of each index: pick from both halves, then
        // keep the half the index's fourth bit names.
        let from_lo = _mm256_permutevar8x32_epi32(lo, word);
        let from_hi = _mm256_permutevar8x32_epi32(hi, word);
        let in_hi = _mm256_cmpgt_epi32(word, seven);
        let words = _mm256_blendv_epi8(from_lo, from_hi, in_hi);
        let bits = _mm256_and_si256(
            _mm256_srlv_epi32(words, _mm256_and_si256(bit, _mm256_set1_epi32(31))),
            one,
        );
        // Only the first `left` lanes are probes; the rest must not count.
        let live = _mm256_and_si256(_mm256_cmpgt_epi32(_mm256_set1_epi32(left), lane), one);
        missing = _mm256_or_si256(missing, _mm256_andnot_si256(bits, live));
        seeds = _mm256_mullo_epi32(seeds, step);
        left -= 8;
    }
    _mm256_testz_si256(missing, missing) == 1
}

/// The AVX2 insert kernel: sets the same bits as the portable `insert_into`, for the probe
/// key `key`.
///
/// The line is sixteen 32-bit words, held as two registers of eight. For probe bit `b`,
/// lane j of `1 << (b - 32·j)` (a variable shift, which gives 0 for counts of 32 and over,
/// negative counts included, as they read as large unsigned numbers) is the probe's bit
/// in word j and 0 in every other word: OR that over the probes and the mask is built
/// without touching memory.
#[target_feature(enable = "avx2")]
pub(super) fn insert(line: &mut Line, key: u64, num_hashes: u32) -> bool {
    let powers = powers();
    // Lane j's first bit: 32·j in the low half, 256 + 32·j in the high half.
    let base_lo = _mm256_setr_epi32(0, 32, 64, 96, 128, 160, 192, 224);
    let base_hi = _mm256_add_epi32(base_lo, _mm256_set1_epi32(256));
    let one = _mm256_set1_epi32(1);

    let mut mask_lo = _mm256_setzero_si256();
    let mut mask_hi = _mm256_setzero_si256();
    let step = _mm256_set1_epi32(POWER_8 as i32);
    let mut seeds = seeds(key);
    let mut left = num_hashes;
    while left > 0 {
        let bits = _mm256_srli_epi32::<23>(_mm256_mullo_epi32(seeds, powers));
        // Probe i of this group is lane i of `bits`: broadcast it, shift a one into place.
        for i in 0..left.min(8) {
            let b = _mm256_permutevar8x32_epi32(bits, _mm256_set1_epi32(i as i32));
            mask_lo = _mm256_or_si256(
                mask_lo,
                _mm256_sllv_epi32(one, _mm256_sub_epi32(b, base_lo)),
            );
            mask_hi = _mm256_or_si256(
                mask_hi,
                _mm256_sllv_epi32(one, _mm256_sub_epi32(b, base_hi)),
            );
        }
        seeds = _mm256_mullo_epi32(seeds, step);
        left = left.saturating_sub(8);
    }

    or_into_line(line, mask_lo, mask_hi)
}

/// ORs a 512-bit mask (words 0..4 in `mask_lo`, 4..8 in `mask_hi`) into `line`; returns
/// whether any bit was new. The write of every AVX2 insert kernel, the sector layout's too.
#[target_feature(enable = "avx2")]
#[inline]
pub(crate) fn or_into_line(line: &mut Line, mask_lo: __m256i, mask_hi: __m256i) -> bool {
    let words = line.0.as_mut_ptr() as *mut __m256i;
    // SAFETY: a `Line` is 64 bytes (eight u64s), so `words` and `words.add(1)` are the two
    // 32-byte halves of memory we hold `&mut` to; unaligned loads and stores have no
    // alignment requirement (a line is 64-byte aligned anyway).
    #[allow(unsafe_code)]
    unsafe {
        let lo = _mm256_loadu_si256(words);
        let hi = _mm256_loadu_si256(words.add(1));
        let new = _mm256_or_si256(
            _mm256_andnot_si256(lo, mask_lo),
            _mm256_andnot_si256(hi, mask_hi),
        );
        _mm256_storeu_si256(words, _mm256_or_si256(lo, mask_lo));
        _mm256_storeu_si256(words.add(1), _mm256_or_si256(hi, mask_hi));
        _mm256_testz_si256(new, new) == 0
    }
}
