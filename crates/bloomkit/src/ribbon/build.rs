//! Building a layout-1 filter (the standard ribbon): choosing the size, banding (on-the-fly
//! Gaussian elimination), back-substitution, and re-seeding when a system happens to be
//! unsolvable. The elimination and the back-substitution are shared with layout 2
//! (`shard_build.rs`).

use crate::bits::try_vec;
use crate::error::{Error, Result};

use super::equation::{Equation, Shape, BLOCK_SLOTS};

/// A solved filter: its size, the ribbon seed that worked, and the interleaved solution.
#[derive(Debug)]
pub(super) struct Solved {
    pub(super) num_slots: u64,
    pub(super) ribbon_seed: u32,
    pub(super) solution: Vec<u64>,
}

/// The band under construction: for each slot, the row whose leading one is there (or zero)
/// and that row's result.
struct Band {
    coeffs: Vec<u128>,
    results: Vec<u32>,
}

impl Band {
    fn new(num_slots: u64) -> Result<Self> {
        Ok(Band {
            coeffs: try_vec(num_slots, || 0)?,
            results: try_vec(num_slots, || 0)?,
        })
    }

    fn clear(&mut self) {
        self.coeffs.fill(0);
        self.results.fill(0);
    }

    /// Adds one equation: eliminates the leading one against the rows already there until
    /// the row lands on an empty slot. `false` if it reduces to 0 = 1 (the system has no
    /// solution); a row that reduces to 0 = 0 (a duplicate) is simply dropped.
    #[inline]
    fn add(&mut self, eq: Equation) -> bool {
        let Band { coeffs, results } = self;
        let mut result = eq.result;
        match reduce(coeffs, eq.start as usize, eq.coeff, |slot| {
            result ^= results[slot]
        }) {
            Some((slot, coeff)) => {
                coeffs[slot] = coeff;
                results[slot] = result;
                true
            }
            None => result == 0,
        }
    }

    /// The solution, by back-substitution from the last slot to the first, in the
    /// interleaved layout of [`super::equation::evaluate_with`]. Slots without a row are free:
    /// they get zero.
    fn back_substitute(&self, result_bits: u32) -> Result<Vec<u64>> {
        let r = result_bits as usize;
        let num_blocks = self.coeffs.len() / BLOCK_SLOTS as usize;
        let mut solution = try_vec((num_blocks * r) as u64, || 0u64)?;
        back_substitute_into(&self.coeffs, r, |slot| self.results[slot], &mut solution);
        Ok(solution)
    }
}

/// Eliminates a row whose leading one is at `slot` against the band's rows (`coeffs[s]` is
/// the row whose leading one is at `s`, or 0), until it reaches a slot that has none:
/// `Some((slot, row))`, where the reduced row belongs, or `None` if it vanished (it was a
/// combination of rows already there). `xored(s)` is told of each band row it was XORed
/// with.
///
/// The band's rows never reach past its end, and neither does the reduced row: both rows had
/// their leading one at the same slot, so the XOR starts later, and it ends where the longer
/// of the two ended.
#[inline]
pub(super) fn reduce(
    coeffs: &[u128],
    mut slot: usize,
    mut coeff: u128,
    mut xored: impl FnMut(usize),
) -> Option<(usize, u128)> {
    loop {
        let there = coeffs[slot];
        if there == 0 {
            return Some((slot, coeff));
        }
        coeff ^= there;
        xored(slot);
        if coeff == 0 {
            return None;
        }
        let skip = coeff.trailing_zeros();
        slot += skip as usize;
        coeff >>= skip;
    }
}

/// Back-substitutes a band (`coeffs[s]` the row whose leading one is at slot `s`, or 0) from
/// its last slot to its first, into `out`: `coeffs.len() / 64` blocks of `r` words in the
/// interleaved layout of [`super::equation::evaluate_with`]. Slot `s` gets the value that
/// makes its row's selected values XOR to `value(s)`; a slot without a row simply gets
/// `value(s)`. Rows must not reach past the band's end.
///
/// Each of the r result bits keeps a 128-bit window of its solution column (bit `k` is the
/// value at slot `s + k`), so one slot costs r masked parities, and a whole word of the
/// column is ready every 64 slots.
pub(super) fn back_substitute_into(
    coeffs: &[u128],
    r: usize,
    mut value: impl FnMut(usize) -> u32,
    out: &mut [u64],
) {
    let num_blocks = coeffs.len() / BLOCK_SLOTS as usize;
    let mut window = [0u128; super::equation::MAX_RESULT_BITS as usize];
    let window = &mut window[..r];
    for block in (0..num_blocks).rev() {
        let base = block * BLOCK_SLOTS as usize;
        for slot in (base..base + BLOCK_SLOTS as usize).rev() {
            let coeff = coeffs[slot];
            let wanted = value(slot);
            for (j, w) in window.iter_mut().enumerate() {
                // After the shift, bit 0 (this slot) is zero, so the parity covers only the
                // later slots the row names.
                let shifted = *w << 1;
                let bit = ((shifted & coeff).count_ones() ^ (wanted >> j)) & 1;
                *w = shifted | bit as u128;
            }
        }
        for (word, w) in out[block * r..][..r].iter_mut().zip(window.iter()) {
            *word = *w as u64;
        }
    }
}

/// Bands every equation; `false` if the system has no solution.
fn band_all(band: &mut Band, remixed: &mut Vec<u64>, hashes: &[u64], shape: &Shape) -> bool {
    remixed.clear();
    remixed.extend(hashes.iter().map(|&h| shape.remix(h)));
    // Sorted by remixed hash is sorted by start: the band is then filled front to back, and
    // each elimination touches slots that are already in cache.
    remixed.sort_unstable();
    band.clear();
    remixed
        .iter()
        .all(|&x| band.add(shape.equation_of_remixed(x)))
}

/// How a layout-1 build proceeds: the first size tried, how many ribbon seeds per size, and how many
/// sizes (each about 3% larger than the one before) before giving up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct StandardPlan {
    /// Slots of the first size tried: a multiple of 64.
    pub(crate) num_slots: u64,
    /// Ribbon seeds tried at each size.
    pub(crate) seeds_per_size: u32,
    /// Sizes tried.
    pub(crate) sizes: u32,
}

impl StandardPlan {
    /// The plan for `items` keys: [`planned_num_slots`], then up to 4 seeds at each of 4
    /// sizes. At the planned size a first seed succeeds about 95% of the time or more, so
    /// four failures in a row (one build in about 10^5) is already rare, and the larger sizes
    /// are there so that no input can exhaust the seeds by bad luck alone.
    pub(crate) fn for_items(items: u64) -> Result<Self> {
        Ok(StandardPlan {
            num_slots: planned_num_slots(items)?,
            seeds_per_size: 4,
            sizes: 4,
        })
    }
}

/// The slots a filter of `items` keys starts with: `n + ⌈ε(n)·n⌉ + 8`, rounded up to a
/// multiple of 64 (0 for no keys), with ε(n) = max(0, 0.0032·log2 n − 0.0176).
///
/// A standard ribbon of width 128 fails when some stretch of the band holds more rows than
/// it has room for, and the larger n is, the more stretches there are to go wrong, so the
/// slack must grow (slowly) with n. ε(n) is fitted to measured first-seed success rates
/// (`success_rates` below): ε is 1.4% at 10^3, 2.5% at 10^4, 3.6% at 10^5, 4.6% at 10^6,
/// 5.7% at 10^7, and at those planned sizes a first seed succeeded in 194, 196 and 195 of
/// 200 key sets (10^3 to 10^5), 58 of 60 (10^6) and 9 of 10 (10^7). The 8 extra slots
/// matter for small n, where a filter of at most 128 slots is one dense system and fails
/// with probability about 2^−(slack).
pub(crate) fn planned_num_slots(items: u64) -> Result<u64> {
    if items == 0 {
        return Ok(0);
    }
    let n = items as f64;
    let epsilon = (0.0032 * n.log2() - 0.0176).max(0.0);
    // Float to integer casts saturate, and the checked additions catch the rest.
    let slack = ((n * epsilon).ceil() as u64).saturating_add(8);
    items
        .checked_add(slack)
        .and_then(|m| m.checked_next_multiple_of(BLOCK_SLOTS))
        .ok_or(Error::TooLarge { num_bits: u64::MAX })
}

/// About 3% more slots, and at least one more block.
fn grow(num_slots: u64) -> Result<u64> {
    num_slots
        .checked_add(num_slots / 32 + BLOCK_SLOTS)
        .and_then(|m| m.checked_next_multiple_of(BLOCK_SLOTS))
        .ok_or(Error::TooLarge { num_bits: u64::MAX })
}

/// Solves the system of `hashes` following `plan`: ribbon seeds 0, 1, 2, ... in turn (the
/// seed is the attempt's number), growing the filter after each `seeds_per_size` failures.
///
/// # Errors
///
/// [`Error::ConstructionFailed`] after `seeds_per_size · sizes` failures;
/// [`Error::TooLarge`] or [`Error::OutOfMemory`] if the scratch space does not fit.
pub(super) fn solve(hashes: &[u64], result_bits: u32, plan: StandardPlan) -> Result<Solved> {
    if hashes.is_empty() {
        return Ok(Solved {
            num_slots: 0,
            ribbon_seed: 0,
            solution: Vec::new(),
        });
    }
    let mut remixed = Vec::new();
    remixed
        .try_reserve_exact(hashes.len())
        .map_err(|_| Error::OutOfMemory {
            bytes: (hashes.len() as u64).saturating_mul(8),
        })?;
    let mut num_slots = plan.num_slots.max(BLOCK_SLOTS);
    let mut attempts = 0u32;
    for size in 0..plan.sizes {
        if size > 0 {
            num_slots = grow(num_slots)?;
        }
        let mut band = Band::new(num_slots)?;
        for _ in 0..plan.seeds_per_size {
            let ribbon_seed = attempts;
            attempts += 1;
            let shape = Shape::new(num_slots, result_bits, ribbon_seed);
            if band_all(&mut band, &mut remixed, hashes, &shape) {
                return Ok(Solved {
                    num_slots,
                    ribbon_seed,
                    solution: band.back_substitute(result_bits)?,
                });
            }
        }
    }
    Err(Error::ConstructionFailed { attempts })
}

#[cfg(test)]
mod tests {
    use super::super::equation::evaluate;
    use super::*;

    fn hashes(n: u64, salt: u64) -> Vec<u64> {
        (0..n).map(|i| crate::hash(&(i, salt))).collect()
    }

    #[test]
    fn solution_satisfies_every_equation() {
        for (n, m) in [
            (1u64, 64u64),
            (50, 64),
            (100, 128),
            (1000, 1088),
            (5000, 5312),
        ] {
            let hs = hashes(n, 1);
            let plan = StandardPlan {
                num_slots: m,
                seeds_per_size: 8,
                sizes: 1,
            };
            let solved = solve(&hs, 7, plan).unwrap();
            assert_eq!(solved.num_slots, m);
            let shape = Shape::new(m, 7, solved.ribbon_seed);
            for &h in &hs {
                let eq = shape.equation(h);
                assert_eq!(evaluate(&solved.solution, 7, &eq), eq.result);
            }
        }
    }

    /// A comma-separated list from the environment, or the default.
    fn env_list<T>(name: &str, default: &[T]) -> Vec<T>
    where
        T: std::str::FromStr + Clone,
        T::Err: std::fmt::Debug,
    {
        match std::env::var(name) {
            Ok(s) => s
                .split(',')
                .filter(|x| !x.trim().is_empty())
                .map(|x| x.trim().parse().unwrap())
                .collect(),
            Err(_) => default.to_vec(),
        }
    }

    /// How often the first seed bands `n` keys into `num_slots` slots, out of `trials` key
    /// sets. With 32 result bits a dependent row is almost surely a contradiction: the worst
    /// case, so rates at 7 or 10 bits are slightly better.
    fn first_seed_successes(n: u64, num_slots: u64, trials: u64) -> u64 {
        let mut band = Band::new(num_slots).unwrap();
        let mut remixed = Vec::new();
        let shape = Shape::new(num_slots, 32, 0);
        (0..trials)
            .filter(|&t| band_all(&mut band, &mut remixed, &hashes(n, t + 1000 * n), &shape))
            .count() as u64
    }

    /// Not a test: the data behind [`planned_num_slots`]. For each n (`RIBBON_N`), how often
    /// a first seed succeeds at the planned size and at `n·(1 + pct/100)` slots for each
    /// `RIBBON_PCT`, over `RIBBON_TRIALS` key sets:
    /// `RIBBON_N=1000000 RIBBON_TRIALS=40 cargo test -p bloomkit --release --lib success_rates -- --ignored --nocapture`
    #[test]
    #[ignore]
    fn success_rates() {
        let sizes = env_list("RIBBON_N", &[100u64, 1000, 10_000, 100_000, 1_000_000]);
        let percents = env_list("RIBBON_PCT", &[1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0]);
        let trials = env_list("RIBBON_TRIALS", &[20u64])[0];
        for n in sizes {
            let planned = planned_num_slots(n).unwrap();
            let ok = first_seed_successes(n, planned, trials);
            eprintln!(
                "n {n:>9} planned  m {planned:>10} ({:.4}) success {ok}/{trials}",
                planned as f64 / n as f64
            );
            for &pct in &percents {
                let m = ((n as f64 * (1.0 + pct / 100.0)).ceil() as u64).next_multiple_of(64);
                let ok = first_seed_successes(n, m, trials);
                eprintln!(
                    "n {n:>9} +{pct:>4}%   m {m:>10} ({:.4}) success {ok}/{trials}",
                    m as f64 / n as f64
                );
            }
        }
    }
}
