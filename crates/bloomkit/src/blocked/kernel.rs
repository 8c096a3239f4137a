//! The blocked filters' query and insert kernels, portable and AVX2.
//!
//! A query tests k probes in one 512-bit line. The portable kernel
//! ([`probe::probes_set`]) walks the probes one by one: each is a 32-bit multiply, a
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
//! The AVX2 kernels (`avx2.rs`) are chosen at run time (`crate::cpu`, which asks the CPU
//! once) so one binary runs everywhere; the calls go one way, from the filter through this
//! dispatch to a kernel, and both kernels take their probe values from `probe.rs`.

use super::probe;
use crate::bits::Line;
#[cfg(all(target_arch = "x86_64", not(miri)))]
use crate::cpu::avx2_in_use;

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
            return unsafe { super::avx2::probes_set(line, hash, num_hashes) };
        }
    }
    probe::probes_set(hash, num_hashes, |w| line.0[w])
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
            return unsafe { super::avx2::insert(line, hash, num_hashes) };
        }
    }
    probe::insert_into(line, hash, num_hashes)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// splitmix64 from `state`: a fixed sequence, so a failure reproduces.
    pub(crate) fn splitmix(mut state: u64) -> impl FnMut() -> u64 {
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
    pub(crate) fn random_line(density: u32, next: &mut impl FnMut() -> u64) -> Line {
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

    /// The AVX2 query kernel itself, not the dispatch (which a benchmark may have switched to
    /// the portable one): `None` where it cannot run.
    fn avx2_query(line: &Line, hash: u64, k: u32) -> Option<bool> {
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        if crate::cpu::has_avx2() {
            // SAFETY: the kernel needs AVX2 and nothing else; the CPU has just said it has it.
            #[allow(unsafe_code)]
            return Some(unsafe { super::super::avx2::probes_set(line, hash, k) });
        }
        let _ = (line, hash, k);
        None
    }

    /// The AVX2 insert kernel itself: `None` where it cannot run.
    fn avx2_insert(line: &mut Line, hash: u64, k: u32) -> Option<bool> {
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        if crate::cpu::has_avx2() {
            // SAFETY: as in `avx2_query`.
            #[allow(unsafe_code)]
            return Some(unsafe { super::super::avx2::insert(line, hash, k) });
        }
        let _ = (line, hash, k);
        None
    }

    /// Both kernels give the same answer for every probe count, on lines of every density,
    /// including the all-zero and all-one lines. Each kernel is called directly; the AVX2 one
    /// where the CPU has it (a run with `BLOOMKIT_REQUIRE_AVX2` set fails without it).
    #[test]
    fn kernels_agree() {
        let mut next = splitmix(0x1234_5678_9abc_def0);
        let avx2 = crate::cpu::avx2_for_test("kernels_agree");
        let mut checked = 0u64;
        for density in [0u32, 1, 2, 3, 4, 6, 8] {
            for _ in 0..200 {
                let line = random_line(density, &mut next);
                for k in [1u32, 2, 5, 6, 7, 8, 9, 15, 16, 17, 33, 64] {
                    for _ in 0..20 {
                        let hash = next();
                        let portable = probe::probes_set(hash, k, |w| line.0[w]);
                        if avx2 {
                            assert_eq!(avx2_query(&line, hash, k), Some(portable), "k={k}");
                        }
                        assert_eq!(probes_set_in_line(&line, hash, k), portable, "k={k}");
                        checked += 1;
                    }
                }
            }
        }
        assert!(checked > 100_000);
        eprintln!("kernels agree on {checked} queries (AVX2 kernel checked: {avx2})");
    }

    /// Both insert kernels set the same bits and report a change the same way, for every
    /// probe count, into lines of every density (so some inserts change nothing).
    #[test]
    fn insert_kernels_agree() {
        let mut next = splitmix(0x0f0e_0d0c_0b0a_0908);
        let avx2 = crate::cpu::avx2_for_test("insert_kernels_agree");
        let (mut checked, mut unchanged) = (0u64, 0u64);
        for density in [0u32, 1, 2, 4, 8] {
            for _ in 0..100 {
                let start = random_line(density, &mut next);
                for k in [1u32, 2, 5, 6, 7, 8, 9, 15, 16, 17, 33, 64] {
                    for _ in 0..10 {
                        let hash = next();
                        let mut portable = start;
                        let changed = probe::insert_into(&mut portable, hash, k);
                        if avx2 {
                            let mut direct = start;
                            assert_eq!(avx2_insert(&mut direct, hash, k), Some(changed), "k={k}");
                            assert_eq!(direct.0, portable.0, "k={k}");
                        }
                        let mut chosen = start;
                        assert_eq!(insert_into_line(&mut chosen, hash, k), changed, "k={k}");
                        assert_eq!(chosen.0, portable.0, "k={k}");
                        // The bits set are the key's probes, and nothing else.
                        let mask = probe::line_mask(hash, k);
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
        eprintln!("insert kernels agree on {checked} inserts (AVX2 kernel checked: {avx2})");
    }

    /// A line holding exactly a key's probes answers yes; clearing any one of them, no.
    #[test]
    fn each_probe_matters() {
        for hash in [1u64, 0xdead_beef, u64::MAX, 0x0123_4567_89ab_cdef] {
            for k in [1u32, 6, 8, 9, 20] {
                let mask = probe::line_mask(hash, k);
                let line = Line(mask);
                assert!(probes_set_in_line(&line, hash, k));
                assert_ne!(avx2_query(&line, hash, k), Some(false));
                for (w, &word) in mask.iter().enumerate() {
                    let mut bits = word;
                    while bits != 0 {
                        let low = bits & bits.wrapping_neg();
                        let mut cleared = line;
                        cleared.0[w] &= !low;
                        assert!(!probes_set_in_line(&cleared, hash, k), "k={k}");
                        assert_ne!(avx2_query(&cleared, hash, k), Some(true), "k={k}");
                        bits &= !low;
                    }
                }
            }
        }
    }
}
