//! The AVX2 kernels of the sectored layout: the same bits as the portable ones in
//! `layout.rs`, a line's whole mask built in two registers.
//!
//! One multiply gives eight probe values, one shift their places in their words, two
//! widenings and two variable 64-bit shifts the mask of all eight words: about a dozen
//! instructions for a key's eight bits, where the blocked layout needs that many per bit.

use std::arch::x86_64::*;

use crate::bits::{Line, LINE_WORDS};
use crate::blocked::avx2::or_into_line;
use crate::blocked::probe::PROBE_POWERS;

/// The mask of `hash` in the line: words 0..4 and 4..8. `per_word` is in
/// `1..=MAX_PER_WORD`, so every group of eight powers read is inside `PROBE_POWERS`.
#[target_feature(enable = "avx2")]
#[inline]
fn mask(hash: u64, per_word: u32) -> (__m256i, __m256i) {
    let seed = _mm256_set1_epi32(hash as u32 as i32);
    let mut groups = PROBE_POWERS.chunks_exact(LINE_WORDS);
    let (mut lo, mut hi) = match groups.next() {
        Some(first) => group_mask(seed, first),
        None => (_mm256_setzero_si256(), _mm256_setzero_si256()),
    };
    // One bit per word, the plan at rates down to about 0.05%, needs no loop.
    if per_word > 1 {
        for group in groups.take(per_word as usize - 1) {
            let (l, h) = group_mask(seed, group);
            lo = _mm256_or_si256(lo, l);
            hi = _mm256_or_si256(hi, h);
        }
    }
    (lo, hi)
}

/// One bit in each word: word i's is bit `(seed·powers[i]) >> 26`. `powers` is eight u32s.
#[target_feature(enable = "avx2")]
#[inline]
fn group_mask(seed: __m256i, powers: &[u32]) -> (__m256i, __m256i) {
    assert!(powers.len() >= LINE_WORDS);
    // SAFETY: `powers` holds at least eight u32s (just checked; the callers pass slices of
    // exactly eight, so the check folds away), 32 bytes we may read; an unaligned load has
    // no alignment requirement.
    #[allow(unsafe_code)]
    let powers = unsafe { _mm256_loadu_si256(powers.as_ptr() as *const __m256i) };
    // Lane i: the top 6 bits of seed·C^i, the bit of word i.
    let bits = _mm256_srli_epi32::<26>(_mm256_mullo_epi32(seed, powers));
    let one = _mm256_set1_epi64x(1);
    let bits_lo = _mm256_cvtepu32_epi64(_mm256_castsi256_si128(bits));
    let bits_hi = _mm256_cvtepu32_epi64(_mm256_extracti128_si256::<1>(bits));
    (
        _mm256_sllv_epi64(one, bits_lo),
        _mm256_sllv_epi64(one, bits_hi),
    )
}

/// The AVX2 insert kernel: sets the same bits as the portable `insert_into`.
#[target_feature(enable = "avx2")]
pub(super) fn insert(line: &mut Line, hash: u64, per_word: u32) -> bool {
    let (mask_lo, mask_hi) = mask(hash, per_word);
    or_into_line(line, mask_lo, mask_hi)
}

/// The AVX2 query kernel: the same answer as the portable `probes_set`.
#[target_feature(enable = "avx2")]
pub(super) fn probes_set(line: &Line, hash: u64, per_word: u32) -> bool {
    let (mask_lo, mask_hi) = mask(hash, per_word);
    let words = line.0.as_ptr() as *const __m256i;
    // SAFETY: as in `insert`, with the line only read.
    #[allow(unsafe_code)]
    let (lo, hi) = unsafe { (_mm256_loadu_si256(words), _mm256_loadu_si256(words.add(1))) };
    let missing = _mm256_or_si256(
        _mm256_andnot_si256(lo, mask_lo),
        _mm256_andnot_si256(hi, mask_hi),
    );
    _mm256_testz_si256(missing, missing) == 1
}
