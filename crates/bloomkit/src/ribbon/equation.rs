//! From a key's hash to its equation, and the query kernel over the interleaved solution.
//!
//! A key with hash `h` stands for one linear equation over GF(2): the r-bit values of the
//! slots `start .. start + 128` that the key's coefficient row selects, XORed together, must
//! equal the key's r-bit result. Everything is derived from one remixed value, so a failed
//! build can draw fresh equations for the same hashes by changing the ribbon seed. This is
//! part of the file format (golden files pin it); all arithmetic is wrapping, on u64:
//!
//! * `fmix64(v)`: `v ^= v >> 33; v *= 0xff51afd7ed558ccd; v ^= v >> 33;
//!   v *= 0xc4ceb9fe1a85ec53; v ^= v >> 33` (murmur3's finalizer, a bijection);
//! * `x = fmix64(h ^ fmix64(ribbon_seed ^ 0x5851f42d4c957f2d))`;
//! * with `w = min(slots, 128)`: `start = (x · (slots − w + 1)) >> 64`, a 128-bit product
//!   (multiply-high, so `start` rises with `x`: sorting keys by `x` sorts them by start);
//! * the coefficient row, bit `i` for slot `start + i`: high 64 bits `x · 0x9e3779b97f4a7c15`,
//!   low 64 bits `rotl(x, 32) · 0xc2b2ae3d27d4eb4f` with bit 0 set (the leading one sits at
//!   `start`: Dillinger & Walzer's standard ribbon), then only the low `w` bits kept;
//! * the result: `(x · 0xd6e8feb86659fd93) >> (64 − r)`.
//!
//! `fmix64` and multiplication by an odd constant are bijections, so in a filter of 128 slots
//! or more the row's high half determines `x`, and with it the result: keys with equal rows
//! have equal results. Equal hashes give equal equations (a duplicate reduces to 0 = 0), and
//! distinct hashes never give contradictory copies of one row, which no re-seeding could fix.
//! (A filter of 64 slots keeps only the low half; there a repeated row is as unlikely as any
//! other dependency, about 2^−8 per build thanks to the slack, and re-seeding handles it.)

use crate::mix::fmix64;

/// The width of a coefficient row, in slots.
pub(super) const WIDTH: u64 = 128;

/// Slots per block of the interleaved solution: one bit of each of a block's r words.
pub(super) const BLOCK_SLOTS: u64 = 64;

/// The most result bits a filter stores per slot (rate 2^−32 ≈ 2.3·10^−10).
pub(super) const MAX_RESULT_BITS: u32 = 32;

const C_HI: u64 = 0x9e37_79b9_7f4a_7c15;
const C_LO: u64 = 0xc2b2_ae3d_27d4_eb4f;
const C_RESULT: u64 = 0xd6e8_feb8_6659_fd93;

/// One key's equation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Equation {
    /// The first slot the row covers.
    pub(super) start: u64,
    /// Bit `i` is the coefficient of slot `start + i`; bit 0 is always one.
    pub(super) coeff: u128,
    /// The r-bit value the selected solution rows XOR to.
    pub(super) result: u32,
}

/// What turns hashes into equations for one filter: its size, result bits and ribbon seed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Shape {
    /// The XOR key of the remix, from the ribbon seed.
    remix_key: u64,
    /// `num_slots − width + 1`: the starts a row can have.
    num_starts: u64,
    /// Ones in the row's first `width` bits, where width is 128, or the number of slots if
    /// that is smaller (a filter of 64 slots is one dense block).
    coeff_mask: u128,
    /// Shift that leaves the top r bits of a 64-bit value.
    result_shift: u32,
}

impl Shape {
    /// The shape of a filter of `num_slots` slots (a positive multiple of 64) with `result_bits`
    /// result bits (1 to 32) and ribbon seed `ribbon_seed`.
    pub(super) fn new(num_slots: u64, result_bits: u32, ribbon_seed: u32) -> Self {
        debug_assert!(num_slots > 0 && num_slots.is_multiple_of(BLOCK_SLOTS));
        debug_assert!((1..=MAX_RESULT_BITS).contains(&result_bits));
        let width = num_slots.min(WIDTH);
        let coeff_mask = if width == WIDTH {
            u128::MAX
        } else {
            (1u128 << width) - 1
        };
        Shape {
            // Seed 0 and seed 1 must give unrelated equations: spread the seed over all bits.
            remix_key: fmix64(u64::from(ribbon_seed) ^ 0x5851_f42d_4c95_7f2d),
            num_starts: num_slots - width + 1,
            coeff_mask,
            result_shift: 64 - result_bits,
        }
    }

    /// The remixed hash `x`, from which the equation follows; equations sort by start as
    /// their `x` do.
    #[inline]
    pub(super) fn remix(&self, hash: u64) -> u64 {
        fmix64(hash ^ self.remix_key)
    }

    /// The equation of a remixed hash.
    #[inline]
    pub(super) fn equation_of_remixed(&self, x: u64) -> Equation {
        let start = ((x as u128 * self.num_starts as u128) >> 64) as u64;
        let hi = x.wrapping_mul(C_HI);
        let lo = x.rotate_left(32).wrapping_mul(C_LO) | 1;
        let coeff = ((hi as u128) << 64 | lo as u128) & self.coeff_mask;
        let result = (x.wrapping_mul(C_RESULT) >> self.result_shift) as u32;
        Equation {
            start,
            coeff,
            result,
        }
    }

    /// The equation of a key's hash.
    #[inline]
    pub(super) fn equation(&self, hash: u64) -> Equation {
        self.equation_of_remixed(self.remix(hash))
    }
}

/// [`evaluate_with`] with the kernel for this CPU: for tests, where no filter has chosen one.
#[cfg(test)]
pub(super) fn evaluate(solution: &[u64], result_bits: u32, eq: &Equation) -> u32 {
    evaluate_with(Kernel::detect(), solution, result_bits, eq)
}

/// Which kernel [`evaluate_with`] and the layout-2 query use: AVX2 or portable, and for
/// layout 2 at r ≤ 8 AVX-512 where the CPU has it; chosen once, when a filter is made, so
/// that a query does not look up the CPU's features (about a tenth of its instructions).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Kernel {
    /// True only if this CPU has AVX2: the field is private, and only [`Kernel::detect`]
    /// sets it. The AVX2 kernel's safety rests on this.
    avx2: bool,
    /// True only if `avx2` is and this CPU also has AVX-512F and AVX-512 VPOPCNTDQ (the
    /// 64-bit popcount of a whole register): set, like `avx2`, only by [`Kernel::detect`].
    avx512: bool,
}

impl Kernel {
    /// The portable kernel, on any machine.
    #[cfg(test)]
    pub(super) const PORTABLE: Kernel = Kernel {
        avx2: false,
        avx512: false,
    };

    /// Whether this is the AVX2 kernel: true only on a CPU that has AVX2 (or in a test that
    /// checked). The layout-2 query's choice of code rests on it (compiled only where the
    /// AVX2 kernels are).
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    pub(super) fn avx2(self) -> bool {
        self.avx2
    }

    /// Whether the layout-2 query may use its AVX-512 kernel: true only on a CPU that has
    /// AVX2, AVX-512F and AVX-512 VPOPCNTDQ (or in a test that checked).
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    pub(super) fn avx512(self) -> bool {
        self.avx512
    }

    /// The AVX2 kernel without AVX-512, for tests that compare the kernels: only for a
    /// filter queried on a CPU that has AVX2, which such a test checks first
    /// (`cpu::avx2_for_test`).
    #[cfg(test)]
    pub(super) const AVX2: Kernel = Kernel {
        avx2: true,
        avx512: false,
    };

    /// The AVX-512 kernel where layout 2 can use it, for tests: only on a CPU that has it,
    /// which such a test checks first (`cpu::avx512_for_test`).
    #[cfg(test)]
    pub(super) const AVX512: Kernel = Kernel {
        avx2: true,
        avx512: true,
    };

    /// The fastest kernels this CPU has (unless `use_portable_kernel` is on), the portable
    /// ones elsewhere.
    pub(super) fn detect() -> Self {
        let avx2 = crate::cpu::avx2_in_use();
        Kernel {
            avx2,
            avx512: avx2 && crate::cpu::has_avx512_popcount(),
        }
    }
}

/// What the solution gives for an equation's row: the XOR of the r-bit solution rows its
/// coefficients select, read from the interleaved layout.
///
/// The layout (RocksDB's "interleaved solution storage"): slots in blocks of 64; block `b`
/// is the `r` words `solution[b·r .. b·r + r]`, and bit `s mod 64` of word `j` is bit `j` of
/// slot `s`'s row. A row of 128 coefficients starting at `start` covers three consecutive
/// blocks at most, so the answer is, for each result bit, the parity of three ANDed words:
/// a few adjacent cache lines, with no branch on the coefficients. Three kernels compute it
/// (tests check they agree): an AVX2 one where the CPU has it, a portable one, and a
/// word-by-word one for the filter's last blocks; layout 2 also has an AVX-512 one for
/// r ≤ 8 ([`avx512`]).
///
/// `solution` must hold at least one block of `result_bits` words, and `eq` must come from a
/// [`Shape`] of the same size. `kernel` is chosen once per filter ([`Kernel::detect`]).
#[inline]
pub(super) fn evaluate_with(
    kernel: Kernel,
    solution: &[u64],
    result_bits: u32,
    eq: &Equation,
) -> u32 {
    with_kernel(
        kernel,
        solution,
        result_bits,
        eq,
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        avx2::evaluate_inside,
        evaluate_inside,
        |found| found,
    )
}

/// Runs the kernel that fits: away from the end of the solution, one checked slice holds
/// the row's three blocks, and the kernels read them without clamping block indices or
/// dividing by r (`avx2` where `kernel` says so, `portable` elsewhere); only the last block
/// or two of a filter take the clamped path, whose answer `clamped` converts.
///
/// The AVX2 kernels read each block's words in groups of eight, running up to seven words
/// past the third block's r (into the next block, for result bits they mask off): the slice
/// covers those too.
#[inline(always)]
fn with_kernel<T>(
    kernel: Kernel,
    solution: &[u64],
    result_bits: u32,
    eq: &Equation,
    #[cfg(all(target_arch = "x86_64", not(miri)))] avx2: unsafe fn(&[u64], usize, &Shifted) -> T,
    portable: fn(&[u64], usize, &Shifted) -> T,
    clamped: impl FnOnce(u32) -> T,
) -> T {
    let r = result_bits as usize;
    let block = (eq.start / BLOCK_SLOTS) as usize;
    let row = Shifted::new(eq);
    let span = 2 * r + group_words(r);
    #[cfg(not(all(target_arch = "x86_64", not(miri))))]
    let _ = kernel;
    if let Some(words) = solution.get(block * r..).and_then(|w| w.get(..span)) {
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        {
            if kernel.avx2 {
                // SAFETY: `avx2` is one of the `avx2` module's kernels, compiled for AVX2,
                // which this CPU supports since `kernel.avx2` is set (only `Kernel::detect`
                // sets it, after checking); their other requirement, `words` holding
                // `2·r + group_words(r)` words, is what `get` has just checked.
                #[allow(unsafe_code)]
                return unsafe { avx2(words, r, &row) };
            }
        }
        return portable(words, r, &row);
    }
    clamped(evaluate_clamped(solution, r, block, &row))
}

/// Words the AVX2 kernel reads per block: `r` rounded up to a multiple of eight.
#[inline]
pub(super) fn group_words(r: usize) -> usize {
    (r + 7) & !7
}

/// A row shifted into place against the blocks it covers: three words, one per block.
#[derive(Clone, Copy, Debug)]
pub(super) struct Shifted {
    c0: u64,
    c1: u64,
    c2: u64,
}

impl Shifted {
    #[inline]
    pub(super) fn new(eq: &Equation) -> Self {
        let shift = (eq.start % BLOCK_SLOTS) as u32;
        let lo = eq.coeff as u64;
        let hi = (eq.coeff >> 64) as u64;
        // The third word is the part that spills past the second block: `hi >> (64 −
        // shift)`, written `(hi >> 1) >> (63 − shift)` so that a shift of 0 gives 0 rather
        // than an overflowing shift; `63 − shift` is `!shift` in the six bits a 64-bit shift
        // uses, which lets the compiler drop a mask.
        Shifted {
            c0: lo << shift,
            c1: ((eq.coeff << shift) >> 64) as u64,
            c2: (hi >> 1).wrapping_shr(!shift),
        }
    }
}

/// The portable kernel for blocks away from the end: `words` starts at the first block the
/// row covers and holds its three blocks (and more), so no block index needs clamping.
///
/// On x86-64 it is out of line: there it runs only on CPUs without AVX2, and inlined into
/// the query it keeps constants in vector registers that the AVX2 call clobbers, which
/// then cost the AVX2 path reloads on every query.
#[cfg_attr(target_arch = "x86_64", inline(never))]
#[cfg_attr(not(target_arch = "x86_64"), inline)]
fn evaluate_inside(words: &[u64], r: usize, row: &Shifted) -> u32 {
    let (b0, rest) = words.split_at(r.min(words.len()));
    let (b1, b2) = rest.split_at(r.min(rest.len()));
    let mut found = 0u32;
    for (j, ((a, b), c)) in b0.iter().zip(b1).zip(b2).enumerate() {
        let x = (a & row.c0) ^ (b & row.c1) ^ (c & row.c2);
        found |= (x.count_ones() & 1) << j;
    }
    found
}

/// [`evaluate_inside`] for layout 2: whether all `r` parities are even.
#[inline]
pub(super) fn vanishes_inside(words: &[u64], r: usize, row: &Shifted) -> bool {
    let (b0, rest) = words.split_at(r.min(words.len()));
    let (b1, b2) = rest.split_at(r.min(rest.len()));
    let mut odd = 0u32;
    for ((a, b), c) in b0.iter().zip(b1).zip(b2) {
        odd |= ((a & row.c0) ^ (b & row.c1) ^ (c & row.c2)).count_ones();
    }
    odd & 1 == 0
}

/// The query kernels in AVX2 registers.
#[cfg(all(target_arch = "x86_64", not(miri)))]
#[allow(unsafe_code)]
pub(super) mod avx2 {
    use std::arch::x86_64::*;

    use super::{group_words, Shifted};

    /// [`super::evaluate_inside`] with eight words in two 256-bit registers: the same
    /// answer for the same words.
    ///
    /// Each group of eight result bits takes six loads, six ANDs and four XORs for the
    /// words, then the parities: each 64-bit lane folded to 32 bits, the eight 32-bit
    /// halves gathered into one register in word order, folded to their top bit, and read
    /// with one `movemask`. (AVX2 has no popcount; folding is fewer instructions than a
    /// nibble lookup here, since only the parity is wanted.)
    ///
    /// # Safety
    ///
    /// The CPU must support AVX2, and `words` must hold at least `2·r + group_words(r)`
    /// words (r from 1 to 32).
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn evaluate_inside(words: &[u64], r: usize, row: &Shifted) -> u32 {
        debug_assert!(words.len() >= 2 * r + group_words(r));
        let c = broadcast(row);
        let p = words.as_ptr();
        let found = if r <= 8 {
            // The common case (rates down to 2^−8) without the loop.
            // SAFETY: the CPU has AVX2, as we require of our caller; 0 is a multiple of 8
            // below r, and `p` points to the `2·r + group_words(r)` words our caller
            // guarantees `words` holds.
            unsafe { group(p, r, 0, c) }
        } else {
            let mut found = 0u32;
            let mut g = 0;
            while g < r {
                // SAFETY: as above; `g` is a multiple of 8 below r.
                found |= unsafe { group(p, r, g, c) } << g;
                g += 8;
            }
            found
        };
        // Bits past r come from the words after the block's r: not result bits.
        found & (u32::MAX >> (32 - r))
    }

    /// [`super::vanishes_inside`] in AVX2 registers: whether every one of the `r` parities
    /// is even. The same groups of eight as [`evaluate_inside`], but the parities are left
    /// in the order the registers hold them (words 0, 1, 4, 5, 2, 3, 6, 7: no reordering
    /// for a test that only asks whether all are zero), and only the words below r count.
    ///
    /// # Safety
    ///
    /// As [`evaluate_inside`].
    #[target_feature(enable = "avx2")]
    pub(in crate::ribbon) unsafe fn vanishes_inside(
        words: &[u64],
        r: usize,
        row: &Shifted,
    ) -> bool {
        debug_assert!(words.len() >= 2 * r + group_words(r));
        let c = broadcast(row);
        let p = words.as_ptr();
        let mut odd = 0u32;
        let mut g = 0;
        while g < r {
            // SAFETY: as in `evaluate_inside`; `g` is a multiple of 8 below r.
            odd |= unsafe { fold(packed(p, r, g, c)) } & UNORDERED_LANES[(r - g).min(8)];
            g += 8;
        }
        odd == 0
    }

    /// [`vanishes_inside`] for r ≤ 8: one group, no loop.
    ///
    /// # Safety
    ///
    /// As [`vanishes_inside`], and r is at most 8.
    #[target_feature(enable = "avx2")]
    #[inline]
    pub(in crate::ribbon) unsafe fn vanishes_one_group(
        words: &[u64],
        r: usize,
        row: &Shifted,
    ) -> bool {
        debug_assert!(r <= 8 && words.len() >= 2 * r + group_words(r));
        // SAFETY: r ≤ 8 is our caller's promise; telling the compiler spares the table
        // lookup below its bounds check.
        unsafe { std::hint::assert_unchecked(r <= 8) };
        // SAFETY: as in `evaluate_inside`, for the group at 0.
        let odd = unsafe { fold(packed(words.as_ptr(), r, 0, broadcast(row))) };
        odd & UNORDERED_LANES[r] == 0
    }

    /// The row's three words, each in every 64-bit lane of a register.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn broadcast(row: &Shifted) -> [__m256i; 3] {
        [
            _mm256_set1_epi64x(row.c0 as i64),
            _mm256_set1_epi64x(row.c1 as i64),
            _mm256_set1_epi64x(row.c2 as i64),
        ]
    }

    /// Bit `k` set for each of the first `n` words of a group, where [`packed`] leaves word
    /// `j`'s parity at bit `[0, 1, 4, 5, 2, 3, 6, 7][j]` of [`fold`]'s mask.
    const UNORDERED_LANES: [u32; 9] = {
        const BIT: [u32; 8] = [0, 1, 4, 5, 2, 3, 6, 7];
        let mut lanes = [0u32; 9];
        let mut n = 1;
        while n <= 8 {
            lanes[n] = lanes[n - 1] | 1 << BIT[n - 1];
            n += 1;
        }
        lanes
    };

    /// The parities of words `g .. g + 8` of the three blocks at `p` (each `r` words), ANDed
    /// with the row's three words `c` and XORed: bit `k` is result bit `g + k`.
    ///
    /// # Safety
    ///
    /// The CPU must support AVX2; `g` is a multiple of 8 below `r`, and `p` points to at
    /// least `2·r + group_words(r)` readable words.
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn group(p: *const u64, r: usize, g: usize, c: [__m256i; 3]) -> u32 {
        // SAFETY: passed on from our caller.
        let v = unsafe { packed(p, r, g, c) };
        // Reorder the 64-bit lanes to words 0 .. 8.
        fold(_mm256_permute4x64_epi64::<0b11_01_10_00>(v))
    }

    /// Words `g .. g + 8` of the three blocks at `p` (each `r` words), ANDed with the row's
    /// three words `c` and XORed, each folded to 32 bits with its parity: word `j`'s in
    /// 32-bit lane `[0, 1, 4, 5, 2, 3, 6, 7][j]`.
    ///
    /// # Safety
    ///
    /// As [`group`].
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn packed(p: *const u64, r: usize, g: usize, c: [__m256i; 3]) -> __m256i {
        // Words g + k .. g + k + 4 of each of the three blocks, ANDed with the row and
        // XORed. (A macro, not a closure: a closure would not be compiled for AVX2.)
        macro_rules! select {
            ($k:expr) => {{
                // SAFETY: `g + k + 4 <= group_words(r)` (g is a multiple of 8 below r, k is
                // 0 or 4), so the last word read, `2·r + g + k + 3`, is below
                // `2·r + group_words(r)`, which the caller guarantees `p` holds; unaligned
                // loads have no alignment requirement.
                let (a, b, d) = unsafe {
                    (
                        _mm256_loadu_si256(p.add(g + $k) as *const __m256i),
                        _mm256_loadu_si256(p.add(r + g + $k) as *const __m256i),
                        _mm256_loadu_si256(p.add(2 * r + g + $k) as *const __m256i),
                    )
                };
                _mm256_xor_si256(
                    _mm256_xor_si256(_mm256_and_si256(a, c[0]), _mm256_and_si256(b, c[1])),
                    _mm256_and_si256(d, c[2]),
                )
            }};
        }
        let lo = _mm256_castsi256_ps(select!(0));
        let hi = _mm256_castsi256_ps(select!(4));
        // A 64-bit word's parity is that of the XOR of its 32-bit halves: gather the low
        // halves and the high halves (per 128-bit lane: words 0, 1, 4, 5 | 2, 3, 6, 7) and
        // XOR them.
        _mm256_xor_si256(
            _mm256_castps_si256(_mm256_shuffle_ps::<0b10_00_10_00>(lo, hi)),
            _mm256_castps_si256(_mm256_shuffle_ps::<0b11_01_11_01>(lo, hi)),
        )
    }

    /// The parity of each 32-bit lane of `v`, lane `k` in bit `k`.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn fold(mut v: __m256i) -> u32 {
        // Each 32-bit lane's parity into its top bit, which `movemask_ps` reads: after two
        // folds bit 4i holds the parity of nibble i; the multiply adds those eight bits
        // (kept alone by the mask) into bit 31 and up, and the columns below it sum to
        // less than 2^31, so bit 31 is the count's low bit, the parity. Six instructions
        // where folding by 16, 8, 4, 2 and 1 takes ten.
        v = _mm256_xor_si256(v, _mm256_srli_epi32::<1>(v));
        v = _mm256_xor_si256(v, _mm256_srli_epi32::<2>(v));
        v = _mm256_and_si256(v, _mm256_set1_epi32(0x1111_1111));
        v = _mm256_mullo_epi32(v, _mm256_set1_epi32(0x8888_8888_u32 as i32));
        _mm256_movemask_ps(_mm256_castsi256_ps(v)) as u32
    }
}

/// The layout-2 query kernel for r ≤ 8 in AVX-512 registers: each block's words in one
/// 512-bit register, so the three blocks take three loads, one AND and two three-input
/// logic instructions (`vpternlogq`: `x ^ (y & c)` in one), then one popcount of all eight
/// words (`vpopcntq`) and one test of their low bits: about a third of the AVX2 kernel's
/// instructions, which has no popcount and folds each word's parity by hand.
#[cfg(all(target_arch = "x86_64", not(miri)))]
#[allow(unsafe_code)]
pub(super) mod avx512 {
    use std::arch::x86_64::*;

    use super::{group_words, Shifted};

    /// [`super::vanishes_inside`] for r ≤ 8: whether all `r` parities are even.
    ///
    /// # Safety
    ///
    /// The CPU must support AVX-512F and AVX-512 VPOPCNTDQ; r is from 1 to 8, and `words`
    /// holds at least `2·r + group_words(r)` (that is `2·r + 8`) words.
    #[target_feature(enable = "avx512f,avx512vpopcntdq")]
    #[inline]
    pub(in crate::ribbon) unsafe fn vanishes_one_group(
        words: &[u64],
        r: usize,
        row: &Shifted,
    ) -> bool {
        debug_assert!((1..=8).contains(&r) && words.len() >= 2 * r + group_words(r));
        let p = words.as_ptr();
        // SAFETY: each load reads eight words, the last ending at word `2·r + 8`, within
        // the `2·r + group_words(r)` words our caller guarantees; unaligned loads have no
        // alignment requirement. Words past a block's r belong to the next block or to
        // the spare words after the last: read, then masked out of the test below.
        let (a, b, d) = unsafe {
            (
                _mm512_loadu_si512(p.cast()),
                _mm512_loadu_si512(p.add(r).cast()),
                _mm512_loadu_si512(p.add(2 * r).cast()),
            )
        };
        // (a & c0) ^ (b & c1) ^ (d & c2), word by word: 0x78 is the truth table of
        // `x ^ (y & z)` for (x, y, z) = (first, second, third) operand.
        let x = _mm512_and_si512(a, _mm512_set1_epi64(row.c0 as i64));
        let x = _mm512_ternarylogic_epi64::<0x78>(x, b, _mm512_set1_epi64(row.c1 as i64));
        let x = _mm512_ternarylogic_epi64::<0x78>(x, d, _mm512_set1_epi64(row.c2 as i64));
        // Odd popcounts among the first r words: the key is absent.
        let lanes = (0xffu32 >> (8 - r)) as __mmask8;
        _mm512_mask_test_epi64_mask(lanes, _mm512_popcnt_epi64(x), _mm512_set1_epi64(1)) == 0
    }
}

/// The kernel for the last blocks, where the words read would run past the end:
/// word by word, clamping block indices into the solution.
pub(super) fn evaluate_clamped(solution: &[u64], r: usize, block: usize, row: &Shifted) -> u32 {
    let num_blocks = solution.len() / r;
    // A row never reaches past the last slot, so a block past the end is only ever paired
    // with zero coefficients: clamping the index keeps the reads in bounds.
    let last = num_blocks.saturating_sub(1);
    let words = |b: usize| solution.get(b.min(last) * r..).unwrap_or_default();
    let (w0, w1, w2) = (words(block), words(block + 1), words(block + 2));
    let mut found = 0u32;
    for (j, ((a, b), c)) in w0.iter().zip(w1).zip(w2).take(r).enumerate() {
        let x = (a & row.c0) ^ (b & row.c1) ^ (c & row.c2);
        found |= (x.count_ones() & 1) << j;
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_stay_inside_the_filter() {
        for num_slots in [64u64, 128, 192, 1024, 1 << 40] {
            let shape = Shape::new(num_slots, 7, 3);
            for h in (0..2000u64)
                .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15))
                .chain([0, u64::MAX])
            {
                let eq = shape.equation(h);
                assert_eq!(eq.coeff & 1, 1);
                let width = 128 - eq.coeff.leading_zeros() as u64;
                assert!(eq.start + width <= num_slots, "{num_slots} {eq:?}");
                assert!(eq.result < 1 << 7);
            }
        }
    }

    #[test]
    fn full_width_result_bits() {
        let shape = Shape::new(128, 32, 0);
        let ones = (0..1000u64)
            .map(|i| shape.equation(i).result.count_ones())
            .sum::<u32>();
        // About half of 32,000 bits: the top bits are not stuck.
        assert!((15_000..17_000).contains(&ones), "{ones}");
    }

    #[test]
    fn seeds_give_unrelated_equations() {
        let a = Shape::new(1 << 20, 7, 0);
        let b = Shape::new(1 << 20, 7, 1);
        let same = (0..1000u64)
            .filter(|&h| a.equation(h).start == b.equation(h).start)
            .count();
        assert!(same < 5, "{same}");
    }

    /// The interleaved kernel agrees with the definition: XOR of the selected rows.
    #[test]
    fn evaluate_matches_the_definition() {
        let r = 5u32;
        let num_slots = 320u64;
        let solution: Vec<u64> = (0..num_slots / 64 * r as u64)
            .map(|i| fmix64(i + 1))
            .collect();
        let row = |s: u64| -> u32 {
            let block = (s / 64) as usize;
            (0..r)
                .map(|j| {
                    (((solution[block * r as usize + j as usize] >> (s % 64)) & 1) as u32) << j
                })
                .sum()
        };
        let shape = Shape::new(num_slots, r, 9);
        for h in 0..3000u64 {
            let eq = shape.equation(h);
            let want = (0..128)
                .filter(|i| (eq.coeff >> i) & 1 == 1)
                .fold(0, |acc, i| acc ^ row(eq.start + i));
            assert_eq!(evaluate(&solution, r, &eq), want, "{eq:?}");
        }
        // And at the very ends, by hand.
        for start in [0, 64, 100, num_slots - 128] {
            let eq = Equation {
                start,
                coeff: u128::MAX,
                result: 0,
            };
            let want = (0..128).fold(0, |acc, i| acc ^ row(start + i));
            assert_eq!(evaluate(&solution, r, &eq), want);
        }
    }

    /// The kernels for blocks away from the end, portable and AVX2 (where the CPU has it),
    /// agree with the clamped one on random solutions and rows, for every result width; and
    /// `evaluate` agrees everywhere, including the ends of the filter, where it takes the
    /// clamped path. The layout-2 kernels (`vanishes_*`), each called directly, say 0
    /// exactly when the clamped one finds 0.
    #[test]
    fn kernels_agree() {
        let mut state = 0x5eed_0f72_6962_6f6eu64;
        let mut next = || {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            fmix64(state)
        };
        let avx2 = crate::cpu::avx2_for_test("ribbon kernels_agree");
        let avx512 = crate::cpu::avx512_for_test("ribbon kernels_agree");
        let (mut checked, mut zeros) = (0u64, 0u64);
        for r in 1..=MAX_RESULT_BITS as usize {
            // 16 blocks: r = 1 needs 2·r + 8 = 10 words away from the end.
            let num_blocks = 16usize;
            let solution: Vec<u64> = (0..num_blocks * r).map(|_| next()).collect();
            let num_slots = (num_blocks * 64) as u64;
            for _ in 0..300 {
                let start = next() % (num_slots - WIDTH + 1);
                let coeff = match next() % 4 {
                    0 => u128::MAX,
                    1 => 1,
                    _ => (u128::from(next()) << 64 | u128::from(next())) | 1,
                };
                let eq = Equation {
                    start,
                    coeff,
                    result: 0,
                };
                let block = (start / BLOCK_SLOTS) as usize;
                let row = Shifted::new(&eq);
                let want = evaluate_clamped(&solution, r, block, &row);
                assert_eq!(evaluate(&solution, r as u32, &eq), want, "r={r} {eq:?}");
                let span = 2 * r + group_words(r);
                if let Some(words) = solution.get(block * r..).and_then(|w| w.get(..span)) {
                    assert_eq!(evaluate_inside(words, r, &row), want, "r={r} {eq:?}");
                    assert_eq!(vanishes_inside(words, r, &row), want == 0, "r={r} {eq:?}");
                    #[cfg(all(target_arch = "x86_64", not(miri)))]
                    if avx2 {
                        // SAFETY: the CPU has AVX2 (checked above) and `words` holds `span`
                        // words.
                        #[allow(unsafe_code)]
                        let (got, vanishes) = unsafe {
                            (
                                avx2::evaluate_inside(words, r, &row),
                                avx2::vanishes_inside(words, r, &row),
                            )
                        };
                        assert_eq!(got, want, "r={r} {eq:?}");
                        assert_eq!(vanishes, want == 0, "r={r} {eq:?}");
                        if r <= 8 {
                            // SAFETY: as above, and r is at most 8.
                            #[allow(unsafe_code)]
                            let one = unsafe { avx2::vanishes_one_group(words, r, &row) };
                            assert_eq!(one, want == 0, "r={r} {eq:?}");
                        }
                    }
                    #[cfg(all(target_arch = "x86_64", not(miri)))]
                    if avx512 && r <= 8 {
                        // SAFETY: the CPU has AVX-512F and VPOPCNTDQ (checked above), r is
                        // at most 8 and `words` holds `span` words.
                        #[allow(unsafe_code)]
                        let one = unsafe { avx512::vanishes_one_group(words, r, &row) };
                        assert_eq!(one, want == 0, "r={r} {eq:?}");
                    }
                    zeros += u64::from(want == 0);
                    checked += 1;
                }
            }
        }
        assert!(checked > 5000, "{checked}");
        // The layout-2 test sees both answers: rows that give 0 (about 2^−r of them, so
        // mostly at small r; `kernels_answer_alike` checks many more, the rows of built keys)
        // and rows that do not.
        assert!(zeros > 50, "{zeros}");
        eprintln!(
            "ribbon kernels agree on {checked} rows (AVX2 kernel checked: {avx2}, AVX-512: \
             {avx512})"
        );
    }
}
