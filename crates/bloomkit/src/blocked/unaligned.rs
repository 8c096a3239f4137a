//! The blocked query kernel over a line given as 64 bytes at any address: what a view of a
//! filter file (`view.rs`) queries, where a line is wherever the file put it.
//!
//! The file's lines are the owned filter's words, little-endian, so a line of bytes is the
//! same line: word `w` is bytes `8w..8w + 8`. Safe loads (`u64::from_le_bytes` of each
//! 8-byte chunk) read it; on x86-64 they compile to plain unaligned loads. The portable path
//! reads only the words its probes need; the AVX2 path reads the line into a `Line` (the
//! eight words in registers or on the stack, no allocation) and runs the owned filter's
//! kernel on it, so both kernels are the ones `kernel.rs` chooses between and tests, and
//! their answers cannot drift from the owned filter's.

use super::probe;
#[cfg(all(target_arch = "x86_64", not(miri)))]
use crate::bits::{Line, LINE_WORDS};
#[cfg(all(target_arch = "x86_64", not(miri)))]
use crate::cpu::avx2_in_use;

/// Word `w` (0 to 7) of a line given as bytes.
#[inline(always)]
fn word(line: &[u8; 64], w: usize) -> u64 {
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&line[(w & 7) * 8..(w & 7) * 8 + 8]);
    u64::from_le_bytes(bytes)
}

/// The line's eight words.
#[cfg(all(target_arch = "x86_64", not(miri)))]
#[inline(always)]
fn words(line: &[u8; 64]) -> [u64; LINE_WORDS] {
    std::array::from_fn(|w| word(line, w))
}

/// Whether every probe of the probe key `key` is set in `line`: the same answer as
/// `kernel::probes_set_in_line` on the line these bytes encode, by the AVX2 kernel where the
/// CPU has it, else the portable one.
#[inline]
pub(crate) fn probes_set_in_bytes(line: &[u8; 64], key: u64, num_hashes: u32) -> bool {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    {
        if avx2_in_use() {
            // SAFETY: `avx2::probes_set` is compiled for AVX2, and we have just checked at
            // run time that this CPU supports AVX2; that is its only requirement.
            #[allow(unsafe_code)]
            return unsafe { super::avx2::probes_set(&Line(words(line)), key, num_hashes) };
        }
    }
    probe::probes_set(key, num_hashes, |w| word(line, w))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bits::Line;

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

    /// The AVX2 path over bytes, called directly (not through the dispatch, which a
    /// benchmark may have switched to the portable kernel): `None` where it cannot run.
    fn avx2_bytes(line: &[u8; 64], hash: u64, k: u32) -> Option<bool> {
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        if crate::cpu::has_avx2() {
            // SAFETY: the kernel needs AVX2 and nothing else; the CPU has just said it has it.
            #[allow(unsafe_code)]
            return Some(unsafe { super::super::avx2::probes_set(&Line(words(line)), hash, k) });
        }
        let _ = (line, hash, k);
        None
    }

    /// Lines of every density, written at every offset of a buffer (so at every alignment
    /// to 8 and to 64), answer as the portable probes answer the owned line, through the
    /// dispatch, the portable path and (where the CPU has it) the AVX2 path.
    #[test]
    fn bytes_kernels_agree_with_the_probes_at_every_alignment() {
        let mut next = splitmix(0x05ee_d0fb_17e5);
        let avx2 = crate::cpu::avx2_for_test("bytes_kernels_agree_with_the_probes");
        let mut buffer = [0u8; 64 + 128];
        let mut checked = 0u64;
        for density in [0u32, 1, 2, 3, 4, 6, 8] {
            for _ in 0..60 {
                let mut line = Line::default();
                for w in &mut line.0 {
                    *w = match density {
                        0 => u64::MAX,
                        8 => 0,
                        d => (0..d).fold(u64::MAX, |acc, _| acc & next()),
                    };
                }
                for offset in 0..64 {
                    for (w, word) in line.0.iter().enumerate() {
                        buffer[offset + 8 * w..offset + 8 * w + 8]
                            .copy_from_slice(&word.to_le_bytes());
                    }
                    let bytes: &[u8; 64] = buffer[offset..offset + 64].try_into().unwrap();
                    for k in [1u32, 2, 5, 6, 7, 8, 9, 16, 17, 33, 64] {
                        let hash = next();
                        let want = probe::probes_set(hash, k, |w| line.0[w]);
                        assert_eq!(probes_set_in_bytes(bytes, hash, k), want, "k={k}");
                        let portable = probe::probes_set(hash, k, |w| word(bytes, w));
                        assert_eq!(portable, want, "k={k}");
                        if avx2 {
                            assert_eq!(avx2_bytes(bytes, hash, k), Some(want), "k={k}");
                        }
                        checked += 1;
                    }
                }
            }
        }
        assert!(checked > 200_000, "{checked}");
        eprintln!("the bytes kernels agree on {checked} queries (AVX2 path checked: {avx2})");
    }

    /// A line holding exactly a key's probes answers yes; clearing any one bit of them, no.
    #[test]
    fn each_probe_matters_in_bytes() {
        for hash in [1u64, 0xdead_beef, u64::MAX, 0x0123_4567_89ab_cdef] {
            for k in [1u32, 6, 8, 9, 20] {
                let mask = probe::line_mask(hash, k);
                let mut bytes = [0u8; 64];
                for (w, m) in mask.iter().enumerate() {
                    bytes[8 * w..8 * w + 8].copy_from_slice(&m.to_le_bytes());
                }
                assert!(probes_set_in_bytes(&bytes, hash, k));
                for byte in 0..64 {
                    for bit in 0..8 {
                        if (bytes[byte] >> bit) & 1 == 1 {
                            let mut cleared = bytes;
                            cleared[byte] &= !(1 << bit);
                            assert!(!probes_set_in_bytes(&cleared, hash, k), "k={k}");
                            assert_ne!(avx2_bytes(&cleared, hash, k), Some(true), "k={k}");
                        }
                    }
                }
            }
        }
    }
}
