//! The blocked filters' query and insert kernels, portable and AVX2.
//!
//! A query tests k probes in one 512-bit line. The portable kernel
//! ([`crate::blocked::probes_set`]) walks the probes one by one: each is a 32-bit multiply, a
//! shift, a load and an AND, and the multiplies form a chain. The AVX2 kernel computes eight
//! probes at once: it multiplies the probe seed by the first eight powers of the multiplier
//! in one instruction, picks each probe's 32-bit word of the line with two permutes and a
//! blend, and tests all eight bits with one shift and one `testz`. Both kernels read the same
//! bits: probe i is bit `(a·C^i mod 2^32) >> 23` of the line, and on a little-endian machine
//! bit `b` of the line is bit `b mod 32` of its 32-bit word `b / 32` (tests check the two
//! kernels agree on random lines).
//!
//! Inserts have a kernel of their own ([`insert_into_line`]): the AVX2 one builds a key's
//! 512-bit mask in registers and writes the line once, where the portable one sets probe by
//! probe in memory.
//!
//! The AVX2 kernels are chosen at run time (`is_x86_feature_detected!`, which caches its
//! answer) so one binary runs everywhere; [`set_force_portable`] lets tests and benchmarks
//! pick the portable one.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::bits::Line;

/// Set by tests and benchmarks to measure or check the portable kernel on AVX2 machines.
static FORCE_PORTABLE: AtomicBool = AtomicBool::new(false);

/// Makes [`probes_set_in_line`], [`insert_into_line`], and ribbon filters made while it is
/// set, use their portable kernels even where AVX2 is available (for tests and benchmarks
/// that compare the two). Both kernels give the same answers.
pub(crate) fn set_force_portable(portable: bool) {
    FORCE_PORTABLE.store(portable, Ordering::Relaxed);
}

/// Whether the AVX2 kernel is in use on this machine.
pub(crate) fn avx2_in_use() -> bool {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    {
        !FORCE_PORTABLE.load(Ordering::Relaxed) && std::arch::is_x86_feature_detected!("avx2")
    }
    #[cfg(not(all(target_arch = "x86_64", not(miri))))]
    {
        false
    }
}

/// Whether every probe of `hash` is set in `line`: the AVX2 kernel where the CPU has it, the
/// portable one elsewhere.
#[inline]
pub(crate) fn probes_set_in_line(line: &Line, hash: u64, num_hashes: u32) -> bool {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    {
        if avx2_in_use() {
            // SAFETY: `avx2::probes_set` is compiled for AVX2, and we have just checked at
            // run time that this CPU supports AVX2; that is its only requirement.
            #[allow(unsafe_code)]
            return unsafe { avx2::probes_set(line, hash, num_hashes) };
        }
    }
    crate::blocked::probes_set(hash, num_hashes, |w| line.0[w])
}

/// Sets every probe of `hash` in `line`; returns whether any bit was new. The AVX2 kernel
/// where the CPU has it, the portable one elsewhere; both set the same bits.
///
/// The AVX2 kernel builds the key's whole 512-bit mask in two registers and writes the line
/// once. The portable one sets the probes one by one in memory; when two probes of a key fall
/// in one word (nine keys in ten at k = 6), each read waits for the write before it, and
/// the core, having learnt that these reads depend on earlier writes, holds back the next
/// key's reads as well: inserts then run one after another instead of overlapping.
#[inline]
pub(crate) fn insert_into_line(line: &mut Line, hash: u64, num_hashes: u32) -> bool {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    {
        if avx2_in_use() {
            // SAFETY: `avx2::insert` is compiled for AVX2, and we have just checked at run
            // time that this CPU supports AVX2; that is its only requirement.
            #[allow(unsafe_code)]
            return unsafe { avx2::insert(line, hash, num_hashes) };
        }
    }
    crate::blocked::insert_into(line, hash, num_hashes)
}

#[cfg(all(target_arch = "x86_64", not(miri)))]
mod avx2 {
    use std::arch::x86_64::*;

    use crate::bits::Line;

    use crate::blocked::PROBE_POWERS;

    /// C^8 for the probe multiplier C: the step from one group of eight probes to the next.
    const POWER_8: u32 = PROBE_POWERS[8];

    /// C^0 .. C^7: lane i of `a · powers()` is the value of probe i for seed `a`.
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

    /// The AVX2 query kernel: the same answer as the portable `probes_set`.
    #[target_feature(enable = "avx2")]
    pub(super) fn probes_set(line: &Line, hash: u64, num_hashes: u32) -> bool {
        let w = &line.0;
        // The line as two halves of eight 32-bit words: words 0..8 and 8..16.
        let lo = _mm256_set_epi64x(w[3] as i64, w[2] as i64, w[1] as i64, w[0] as i64);
        let hi = _mm256_set_epi64x(w[7] as i64, w[6] as i64, w[5] as i64, w[4] as i64);
        let powers = powers();
        let lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        let one = _mm256_set1_epi32(1);
        let seven = _mm256_set1_epi32(7);

        let mut seed = hash as u32;
        let mut left = num_hashes as i32;
        let mut missing = _mm256_setzero_si256();
        while left > 0 {
            // Lane i: the top 9 bits of seed·C^i, the probe's bit in the line.
            let bit =
                _mm256_srli_epi32::<23>(_mm256_mullo_epi32(_mm256_set1_epi32(seed as i32), powers));
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
            seed = seed.wrapping_mul(POWER_8);
            left -= 8;
        }
        _mm256_testz_si256(missing, missing) == 1
    }

    /// The AVX2 insert kernel: sets the same bits as the portable `insert_into`.
    ///
    /// The line is sixteen 32-bit words, held as two registers of eight. For probe bit `b`,
    /// lane j of `1 << (b - 32·j)` (a variable shift, which gives 0 for counts of 32 and over,
    /// negative counts included, as they read as large unsigned numbers) is the probe's bit
    /// in word j and 0 in every other word: OR that over the probes and the mask is built
    /// without touching memory.
    #[target_feature(enable = "avx2")]
    pub(super) fn insert(line: &mut Line, hash: u64, num_hashes: u32) -> bool {
        let powers = powers();
        // Lane j's first bit: 32·j in the low half, 256 + 32·j in the high half.
        let base_lo = _mm256_setr_epi32(0, 32, 64, 96, 128, 160, 192, 224);
        let base_hi = _mm256_add_epi32(base_lo, _mm256_set1_epi32(256));
        let one = _mm256_set1_epi32(1);

        let mut mask_lo = _mm256_setzero_si256();
        let mut mask_hi = _mm256_setzero_si256();
        let mut seed = hash as u32;
        let mut left = num_hashes;
        while left > 0 {
            let bits =
                _mm256_srli_epi32::<23>(_mm256_mullo_epi32(_mm256_set1_epi32(seed as i32), powers));
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
            seed = seed.wrapping_mul(POWER_8);
            left = left.saturating_sub(8);
        }

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
}

#[cfg(test)]
mod tests {
    use super::*;

    /// splitmix64 from `state`: a fixed sequence, so a failure reproduces.
    fn splitmix(mut state: u64) -> impl FnMut() -> u64 {
        move || {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        }
    }

    /// A random line: each word the AND of `density` random words, so higher densities are
    /// sparser; density 0 is all ones, 8 all zeros.
    fn random_line(density: u32, next: &mut impl FnMut() -> u64) -> Line {
        let mut line = Line::default();
        for word in &mut line.0 {
            *word = match density {
                0 => u64::MAX,
                8 => 0,
                d => (0..d).fold(u64::MAX, |acc, _| acc & next()),
            };
        }
        line
    }

    /// Both kernels give the same answer for every probe count, on lines of every density,
    /// including the all-zero and all-one lines. Runs the AVX2 kernel only where the CPU has
    /// it (CI's x86_64 machines do), and says so.
    #[test]
    fn kernels_agree() {
        let mut next = splitmix(0x1234_5678_9abc_def0);
        let avx2 = avx2_in_use();
        let mut checked = 0u64;
        for density in [0u32, 1, 2, 3, 4, 6, 8] {
            for _ in 0..200 {
                let line = random_line(density, &mut next);
                for k in [1u32, 2, 5, 6, 7, 8, 9, 15, 16, 17, 33, 64] {
                    for _ in 0..20 {
                        let hash = next();
                        let portable = crate::blocked::probes_set(hash, k, |w| line.0[w]);
                        assert_eq!(probes_set_in_line(&line, hash, k), portable, "k={k}");
                        checked += 1;
                    }
                }
            }
        }
        assert!(checked > 100_000);
        eprintln!("kernels agree on {checked} queries (AVX2 in use: {avx2})");
    }

    /// Both insert kernels set the same bits and report a change the same way, for every
    /// probe count, into lines of every density (so some inserts change nothing).
    #[test]
    fn insert_kernels_agree() {
        let mut next = splitmix(0x0f0e_0d0c_0b0a_0908);
        let avx2 = avx2_in_use();
        let (mut checked, mut unchanged) = (0u64, 0u64);
        for density in [0u32, 1, 2, 4, 8] {
            for _ in 0..100 {
                let start = random_line(density, &mut next);
                for k in [1u32, 2, 5, 6, 7, 8, 9, 15, 16, 17, 33, 64] {
                    for _ in 0..10 {
                        let hash = next();
                        let mut portable = start;
                        let changed = crate::blocked::insert_into(&mut portable, hash, k);
                        let mut chosen = start;
                        assert_eq!(insert_into_line(&mut chosen, hash, k), changed, "k={k}");
                        assert_eq!(chosen.0, portable.0, "k={k}");
                        // The bits set are the key's probes, and nothing else.
                        let mask = crate::blocked::line_mask(hash, k);
                        let expected: Vec<u64> =
                            start.0.iter().zip(mask).map(|(s, m)| s | m).collect();
                        assert_eq!(chosen.0[..], expected[..], "k={k}");
                        checked += 1;
                        unchanged += u64::from(!changed);
                    }
                }
            }
        }
        assert!(
            unchanged > 1000 && unchanged < checked,
            "{unchanged} of {checked}"
        );
        eprintln!("insert kernels agree on {checked} inserts (AVX2 in use: {avx2})");
    }

    /// A line holding exactly a key's probes answers yes; clearing any one of them, no.
    #[test]
    fn each_probe_matters() {
        for hash in [1u64, 0xdead_beef, u64::MAX, 0x0123_4567_89ab_cdef] {
            for k in [1u32, 6, 8, 9, 20] {
                let mask = crate::blocked::line_mask(hash, k);
                let line = Line(mask);
                assert!(probes_set_in_line(&line, hash, k));
                for (w, &word) in mask.iter().enumerate() {
                    let mut bits = word;
                    while bits != 0 {
                        let low = bits & bits.wrapping_neg();
                        let mut cleared = line;
                        cleared.0[w] &= !low;
                        assert!(!probes_set_in_line(&cleared, hash, k), "k={k}");
                        bits &= !low;
                    }
                }
            }
        }
    }

    /// The switch to the portable kernel works (and is undone).
    #[test]
    fn portable_can_be_forced() {
        set_force_portable(true);
        assert!(!avx2_in_use());
        set_force_portable(false);
    }
}
