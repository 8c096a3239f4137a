//! The sectored filters' insert and query kernels: AVX-512 or AVX2 where the CPU has it,
//! portable elsewhere, chosen once per filter ([`Kernel::detect`]) so a call costs no feature
//! check.

use super::layout;
use crate::bits::Line;

/// Which kernel a filter runs. All set and test the same bits (tests check they agree).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Kernel {
    /// The CPU has AVX2 and the portable kernels were not forced when the filter was made
    /// (always false, and never read, where the AVX2 kernels are not compiled).
    #[cfg_attr(not(all(target_arch = "x86_64", not(miri))), allow(dead_code))]
    avx2: bool,
    /// `avx2` is set and the CPU also has the AVX-512 the kernels use
    /// (`cpu::has_avx512_popcount`; these need only AVX-512F): one 512-bit register for the
    /// line (always false where they are not compiled).
    #[cfg_attr(not(all(target_arch = "x86_64", not(miri))), allow(dead_code))]
    avx512: bool,
}

impl Kernel {
    /// The kernel for this CPU: AVX-512 or AVX2 where it has them and a benchmark has not
    /// forced the portable one.
    pub(crate) fn detect() -> Self {
        let avx2 = cfg!(all(target_arch = "x86_64", not(miri))) && crate::cpu::avx2_in_use();
        Kernel {
            avx2,
            avx512: avx2 && crate::cpu::has_avx512_popcount(),
        }
    }

    /// The kernel's name: `"avx512"`, `"avx2"` or `"portable"`.
    pub(crate) fn name(self) -> &'static str {
        match (self.avx512, self.avx2) {
            (true, _) => "avx512",
            (false, true) => "avx2",
            (false, false) => "portable",
        }
    }

    /// The portable kernel, whatever the CPU.
    #[cfg(test)]
    pub(crate) fn portable() -> Self {
        Kernel {
            avx2: false,
            avx512: false,
        }
    }

    /// Sets the bits of `hash` in `line`; returns whether any bit was new.
    ///
    /// Small enough to inline into every caller: where AVX2 is the rule (x86-64), the
    /// portable kernel is a call out of line, so that its eight words in registers do not
    /// make every caller save and restore registers around the AVX2 call.
    #[inline(always)]
    pub(crate) fn insert(self, line: &mut Line, hash: u64, per_word: u32) -> bool {
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        {
            if self.avx512 {
                // SAFETY: `avx512` is true only when `detect` found AVX-512F (and more) on
                // this CPU, or a test checked, the kernel's only requirement.
                #[allow(unsafe_code)]
                return unsafe { super::avx512::insert(line, hash, per_word) };
            }
            if self.avx2 {
                // SAFETY: `avx2` is true only when `detect` found AVX2 on this CPU, the
                // kernel's only requirement.
                #[allow(unsafe_code)]
                return unsafe { super::avx2::insert(line, hash, per_word) };
            }
            insert_portable(line, hash, per_word)
        }
        #[cfg(not(all(target_arch = "x86_64", not(miri))))]
        layout::insert_into(line, hash, per_word)
    }

    /// Whether every bit of `hash` is set in `line`.
    #[inline(always)]
    pub(crate) fn probes_set(self, line: &Line, hash: u64, per_word: u32) -> bool {
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        {
            if self.avx512 {
                // SAFETY: as in `insert`.
                #[allow(unsafe_code)]
                return unsafe { super::avx512::probes_set(line, hash, per_word) };
            }
            if self.avx2 {
                // SAFETY: as in `insert`.
                #[allow(unsafe_code)]
                return unsafe { super::avx2::probes_set(line, hash, per_word) };
            }
            probes_set_portable(line, hash, per_word)
        }
        #[cfg(not(all(target_arch = "x86_64", not(miri))))]
        layout::probes_set(hash, per_word, |w| line.0[w])
    }
}

/// The portable insert, out of line where the AVX2 kernel is the rule (see `Kernel::insert`).
#[cfg(all(target_arch = "x86_64", not(miri)))]
#[inline(never)]
fn insert_portable(line: &mut Line, hash: u64, per_word: u32) -> bool {
    layout::insert_into(line, hash, per_word)
}

/// The portable query, out of line as [`insert_portable`] is.
#[cfg(all(target_arch = "x86_64", not(miri)))]
#[inline(never)]
fn probes_set_portable(line: &Line, hash: u64, per_word: u32) -> bool {
    layout::probes_set(hash, per_word, |w| line.0[w])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blocked::kernel::tests::{random_line, splitmix};
    use crate::sector::layout::MAX_PER_WORD;

    /// The AVX2 kernel itself (not a filter's choice): `None` where it cannot run.
    fn avx2() -> Option<Kernel> {
        crate::cpu::avx2_for_test("sector kernels").then_some(Kernel {
            avx2: true,
            avx512: false,
        })
    }

    /// The AVX-512 kernel itself: `None` where it cannot run.
    fn avx512() -> Option<Kernel> {
        crate::cpu::avx512_for_test("sector kernels").then_some(Kernel {
            avx2: true,
            avx512: true,
        })
    }

    /// Both kernels set the same bits, report a change the same way, and answer queries the
    /// same way, on lines of every density and for every bits-per-word.
    #[test]
    fn kernels_agree() {
        let mut next = splitmix(0x5ec7_0a11_0000_0001);
        let fast: Vec<Kernel> = [avx2(), avx512()].into_iter().flatten().collect();
        let (mut checked, mut unchanged, mut present) = (0u64, 0u64, 0u64);
        for density in [0u32, 1, 2, 3, 4, 8] {
            for _ in 0..100 {
                let start = random_line(density, &mut next);
                for per_word in 1..=MAX_PER_WORD {
                    for _ in 0..10 {
                        let hash = next();
                        let answer = Kernel::portable().probes_set(&start, hash, per_word);
                        let mut portable = start;
                        let changed = Kernel::portable().insert(&mut portable, hash, per_word);
                        assert_eq!(changed, !answer, "a key is new exactly when it is absent");
                        let mask = layout::line_mask(hash, per_word);
                        for ((got, was), m) in portable.0.iter().zip(start.0).zip(mask) {
                            assert_eq!(*got, was | m);
                        }
                        for k in &fast {
                            assert_eq!(k.probes_set(&start, hash, per_word), answer);
                            let mut direct = start;
                            assert_eq!(k.insert(&mut direct, hash, per_word), changed);
                            assert_eq!(direct.0, portable.0);
                        }
                        checked += 1;
                        unchanged += u64::from(!changed);
                        present += u64::from(answer);
                    }
                }
            }
        }
        assert!(
            unchanged > 1000 && unchanged < checked,
            "{unchanged} of {checked}"
        );
        assert_eq!(unchanged, present);
        eprintln!("sector kernels agree on {checked} keys (checked: {fast:?})");
    }

    /// A line holding exactly a key's bits answers yes; clearing any one of them, no.
    #[test]
    fn each_bit_matters() {
        let kernels = [Some(Kernel::portable()), avx2(), avx512()];
        for hash in [1u64, 0xdead_beef, u64::MAX, 0x0123_4567_89ab_cdef] {
            for per_word in [1, 2, 5, MAX_PER_WORD] {
                let line = Line(layout::line_mask(hash, per_word));
                for k in kernels.iter().flatten() {
                    assert!(k.probes_set(&line, hash, per_word));
                    for w in 0..8 {
                        let mut bits = line.0[w];
                        while bits != 0 {
                            let low = bits & bits.wrapping_neg();
                            let mut cleared = line;
                            cleared.0[w] &= !low;
                            assert!(!k.probes_set(&cleared, hash, per_word));
                            bits &= !low;
                        }
                    }
                }
            }
        }
    }
}
