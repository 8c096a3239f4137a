//! The AVX-512 kernels of the sectored layout: the same bits as the portable ones in
//! `layout.rs`, a line's whole mask in one 512-bit register.
//!
//! Each 64-bit lane holds one word's probe: the 64-bit product of the seed and the word's
//! power (`vpmuludq`, one micro-op where AVX2's 32-bit `vpmulld` takes two) has the 32-bit
//! product in its low half, so bits 26..32 of it are the probe's place, and one variable
//! shift makes the word's bit. Nothing needs widening or splitting into halves, and the line
//! is read, tested and written as one register: about half the AVX2 kernel's instructions.

use std::arch::x86_64::*;

use crate::bits::{Line, LINE_WORDS};
use crate::blocked::probe::PROBE_POWERS;

/// [`PROBE_POWERS`] widened to 64 bits, so that a group of eight is one 512-bit load.
static POWERS: [u64; PROBE_POWERS.len()] = {
    let mut p = [0u64; PROBE_POWERS.len()];
    let mut i = 0;
    while i < p.len() {
        p[i] = PROBE_POWERS[i] as u64;
        i += 1;
    }
    p
};

/// The mask of `hash` in the line. `per_word` is in `1..=MAX_PER_WORD`, so every group of
/// eight powers read is inside `POWERS`.
#[target_feature(enable = "avx512f")]
#[inline]
fn mask(hash: u64, per_word: u32) -> __m512i {
    // Only the low 32 bits of each lane take part in `vpmuludq`: the seed is the hash's low
    // 32 bits, as in the portable layout.
    let seed = _mm512_set1_epi64(hash as i64);
    let mut groups = POWERS.chunks_exact(LINE_WORDS);
    let mut mask = match groups.next() {
        Some(first) => group_mask(seed, first),
        None => _mm512_setzero_si512(),
    };
    // One bit per word, the plan at rates down to about 0.05%, needs no loop.
    if per_word > 1 {
        for group in groups.take(per_word as usize - 1) {
            mask = _mm512_or_si512(mask, group_mask(seed, group));
        }
    }
    mask
}

/// One bit in each word: word i's is bit `(seed·powers[i] mod 2^32) >> 26`. `powers` is eight
/// u64s, each below 2^32.
#[target_feature(enable = "avx512f")]
#[inline]
fn group_mask(seed: __m512i, powers: &[u64]) -> __m512i {
    assert!(powers.len() >= LINE_WORDS);
    // SAFETY: `powers` holds at least eight u64s (just checked; the callers pass slices of
    // exactly eight, so the check folds away), 64 bytes we may read; an unaligned load has
    // no alignment requirement.
    #[allow(unsafe_code)]
    let powers = unsafe { _mm512_loadu_si512(powers.as_ptr().cast()) };
    let product = _mm512_mul_epu32(seed, powers);
    let bits = _mm512_and_si512(_mm512_srli_epi64::<26>(product), _mm512_set1_epi64(63));
    _mm512_sllv_epi64(_mm512_set1_epi64(1), bits)
}

/// The AVX-512 insert kernel: sets the same bits as the portable `insert_into`.
#[target_feature(enable = "avx512f")]
pub(super) fn insert(line: &mut Line, hash: u64, per_word: u32) -> bool {
    let mask = mask(hash, per_word);
    let words = line.0.as_mut_ptr();
    // SAFETY: a `Line` is 64 bytes (eight u64s) that we hold `&mut` to; unaligned loads and
    // stores have no alignment requirement (a line is 64-byte aligned anyway).
    #[allow(unsafe_code)]
    unsafe {
        let old = _mm512_loadu_si512(words.cast());
        _mm512_storeu_si512(words.cast(), _mm512_or_si512(old, mask));
        _mm512_test_epi64_mask(_mm512_andnot_si512(old, mask), mask) != 0
    }
}

/// The AVX-512 query kernel: the same answer as the portable `probes_set`.
#[target_feature(enable = "avx512f")]
pub(super) fn probes_set(line: &Line, hash: u64, per_word: u32) -> bool {
    let mask = mask(hash, per_word);
    // SAFETY: as in `insert`, with the line only read.
    #[allow(unsafe_code)]
    let words = unsafe { _mm512_loadu_si512(line.0.as_ptr().cast()) };
    _mm512_test_epi64_mask(_mm512_andnot_si512(words, mask), mask) == 0
}
