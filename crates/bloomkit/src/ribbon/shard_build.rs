//! Building a layout-2 filter (homogeneous and sharded, see `homogeneous.rs`) in bounded
//! memory.
//!
//! The keys' hashes are read in a few passes. The first counts each shard's keys; each of
//! the others copies the hashes of a run of consecutive shards into one buffer, grouped by
//! shard (a counting sort), and then solves those shards one by one: sort the shard's hashes
//! (which sorts its rows by start, so the band fills front to back and each elimination
//! touches slots already in cache), band them, back-substitute. A shard's system is
//! homogeneous, so it always has a solution: a row that reduces to zero is dropped, whatever
//! it was, and a slot left without a row gets pseudo-random bits, which makes the solution a
//! random one of the system's solutions. An absent key's row then passes with probability
//! 2^−r, unless it is a combination of built rows (the slack keeps that rare).
//!
//! Scratch memory beside the filter: the buffer (8 bytes for each key of a pass, and a pass
//! holds at most a third of the keys, or one shard's if that is more), one shard's band (16
//! bytes a slot, about 17 MiB for a full shard) and two words per shard. For 600 million
//! keys that is about 2.7 bytes a key; below a shard's worth of keys (2^20), at most about
//! 25 MiB in all.

use crate::bits::try_vec;
use crate::error::{Error, Result};
use crate::mix::fmix64;

use super::build::{back_substitute_into, reduce};
use super::equation::BLOCK_SLOTS;
use super::homogeneous::Shards;

/// The most keys a shard is planned for. Larger shards vary less in load (a shard of 2^20
/// keys is within 0.3% of its mean, three standard deviations), smaller ones need less
/// scratch; this one's band is about 17 MiB.
pub(super) const MAX_SHARD_KEYS: u64 = 1 << 20;

/// Keys in the buffer at once, at most, as a fraction of all keys: a third.
const PASS_DIVISOR: u64 = 3;

/// Mixed into slot numbers for the values of slots without a row.
const FILL_KEY: u64 = 0x5851_f42d_4c95_7f2d;

/// How a layout-2 build proceeds: the shards and their size, and how many keys a pass may
/// hold in memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ShardPlan {
    /// Shards `S`: 0 exactly for no keys.
    pub(crate) num_shards: u64,
    /// Slots per shard `M`: a multiple of 64.
    pub(crate) shard_slots: u64,
    /// The most keys a pass holds (raised to the largest shard's keys if that is more).
    pub(crate) pass_keys: u64,
}

impl ShardPlan {
    /// The plan for `items` keys and `result_bits` result bits: shards of at most
    /// [`MAX_SHARD_KEYS`] keys, each sized by [`planned_shard_slots`], and passes of a third
    /// of the keys.
    ///
    /// # Errors
    ///
    /// [`Error::TooLarge`] if the slots overflow, or the shards a 32-bit count.
    pub(crate) fn for_items(items: u64, result_bits: u32) -> Result<Self> {
        if items == 0 {
            return Ok(ShardPlan {
                num_shards: 0,
                shard_slots: 0,
                pass_keys: 0,
            });
        }
        let num_shards = items.div_ceil(MAX_SHARD_KEYS);
        let shard_slots = planned_shard_slots(items.div_ceil(num_shards), result_bits)?;
        let plan = ShardPlan {
            num_shards,
            shard_slots,
            pass_keys: items.div_ceil(PASS_DIVISOR),
        };
        plan.num_slots()?;
        Ok(plan)
    }

    /// All the slots: shards × slots per shard.
    ///
    /// # Errors
    ///
    /// [`Error::TooLarge`] if that overflows, or if there are more shards than a u32 counts
    /// (the file stores the count as one).
    pub(crate) fn num_slots(&self) -> Result<u64> {
        let too_large = Error::TooLarge { num_bits: u64::MAX };
        if self.num_shards > u64::from(u32::MAX) {
            return Err(too_large);
        }
        self.num_shards
            .checked_mul(self.shard_slots)
            .ok_or(too_large)
    }
}

/// The share of slack a shard of r result bits gets: ε(r) = the larger of
/// 0.047 + 0.0015 · (r − 7) and (r · ln 2 + ln 100) / 256; 4.7% at r = 7, 5.15% at r = 10,
/// 6.1% at r = 16, 10.5% at r = 32.
///
/// An absent key's row is a combination of the built rows about as often as the band has a
/// stretch where every slot holds a row and the queue of rows pushed past their start
/// reaches the width (128 slots); that grows rarer very fast with the slack. Measured (the
/// chance that an absent row is such a combination, over shards of 2^18 and 2^20 keys, with
/// `span_rates` in this module's tests): 6·10^−4 at 4% slack, 6·10^−5 to
/// 1.5·10^−4 at 4.5%, 7·10^−5 at 4.7%, 2.4·10^−6 at 5%, none in 10^8 rows at 5.5% and 6%.
/// The first term is fitted to those so that the excess stays near 1% of 2^−r (0.9% at
/// r = 7). The second is the queue's tail, e^(−2ε·128), set to 1% of 2^−r: it matches the
/// measurement at 5%, decays more slowly than the measurements do, and so is the safe side
/// for the rates too small to measure.
fn slack_fraction(result_bits: u32) -> f64 {
    let r = f64::from(result_bits);
    let fitted = 0.047 + 0.0015 * (r - 7.0).max(0.0);
    let tail = (r * std::f64::consts::LN_2 + 100f64.ln()) / 256.0;
    fitted.max(tail)
}

/// Slots for a shard of `keys` keys with `result_bits` result bits: `keys + slack`, rounded
/// up to a multiple of 64, where the slack is `⌈ε(r) · keys⌉` but at least `r + 8`. A shard
/// of at most 128 slots is one dense system, in which an absent row is a combination of `n`
/// built ones with probability about 2^(n − slots): `r + 8` spare slots keep that below
/// 2^−r / 256.
pub(super) fn planned_shard_slots(keys: u64, result_bits: u32) -> Result<u64> {
    let epsilon = slack_fraction(result_bits);
    // Float to integer casts saturate, and the checked additions catch the rest.
    let slack = ((keys as f64 * epsilon).ceil() as u64).max(u64::from(result_bits) + 8);
    keys.checked_add(slack)
        .and_then(|m| m.checked_next_multiple_of(BLOCK_SLOTS))
        .ok_or(Error::TooLarge { num_bits: u64::MAX })
}

/// The pseudo-random `r`-bit value of slot `slot` when no row claims it.
#[inline]
fn fill(slot: u64, result_bits: u32) -> u32 {
    (fmix64(slot.wrapping_add(FILL_KEY)) >> (64 - result_bits)) as u32
}

/// Solves the system of `hashes` following `plan`, into the interleaved solution of all
/// shards (`plan.num_shards · plan.shard_slots / 64 · r` words).
///
/// # Errors
///
/// [`Error::TooLarge`] or [`Error::OutOfMemory`] if the solution or the scratch space does
/// not fit.
pub(super) fn solve(hashes: &[u64], result_bits: u32, plan: ShardPlan) -> Result<Vec<u64>> {
    if hashes.is_empty() || plan.num_shards == 0 {
        return Ok(Vec::new());
    }
    let r = result_bits as usize;
    let shards = Shards::new(plan.num_shards, plan.shard_slots);
    let shard_words = plan.shard_slots / BLOCK_SLOTS * r as u64;
    let mut solution = try_vec(plan.num_slots()? / BLOCK_SLOTS * r as u64, || 0u64)?;
    let counts = count_per_shard(hashes, &shards)?;
    let largest = counts.iter().copied().max().unwrap_or(0);
    let pass_keys = plan.pass_keys.max(largest);
    let mut buffer = Vec::new();
    buffer
        .try_reserve_exact(pass_keys.min(hashes.len() as u64) as usize)
        .map_err(|_| Error::OutOfMemory {
            bytes: pass_keys.saturating_mul(8),
        })?;
    let mut cursors = try_vec(plan.num_shards, || 0usize)?;
    let mut band = try_vec(plan.shard_slots, || 0u128)?;
    let num_shards = plan.num_shards as usize;
    let mut first = 0;
    while first < num_shards {
        // The run of shards this pass holds: as many as fit (at least one, since no shard
        // has more keys than a pass may hold).
        let mut end = first;
        let mut keys = 0;
        while end < num_shards && keys + counts[end] <= pass_keys {
            keys += counts[end];
            end += 1;
        }
        gather(
            hashes,
            &shards,
            first..end,
            &counts,
            &mut cursors,
            &mut buffer,
        );
        let mut at = 0;
        for shard in first..end {
            let here = counts[shard] as usize;
            let out = &mut solution[shard * shard_words as usize..][..shard_words as usize];
            solve_shard(
                &mut buffer[at..at + here],
                &shards,
                shard as u64,
                result_bits,
                &mut band,
                out,
            );
            at += here;
        }
        first = end;
    }
    Ok(solution)
}

/// Keys per shard.
fn count_per_shard(hashes: &[u64], shards: &Shards) -> Result<Vec<u64>> {
    let mut counts = try_vec(shards.num_shards(), || 0u64)?;
    if let [only] = &mut counts[..] {
        *only = hashes.len() as u64;
    } else {
        for &h in hashes {
            counts[shards.shard_of(h) as usize] += 1;
        }
    }
    Ok(counts)
}

/// Fills `buffer` with the hashes of shards `run`, grouped by shard in shard order (within a
/// shard, in input order): a pass of a counting sort, `cursors` its scratch.
fn gather(
    hashes: &[u64],
    shards: &Shards,
    run: std::ops::Range<usize>,
    counts: &[u64],
    cursors: &mut [usize],
    buffer: &mut Vec<u64>,
) {
    buffer.clear();
    if run.len() == counts.len() && run.len() == 1 {
        buffer.extend_from_slice(hashes);
        return;
    }
    let mut at = 0;
    for (cursor, &count) in cursors[run.clone()].iter_mut().zip(&counts[run.clone()]) {
        *cursor = at;
        at += count as usize;
    }
    buffer.resize(at, 0);
    let (first, end) = (run.start as u64, run.end as u64);
    for &h in hashes {
        let shard = shards.shard_of(h);
        if (first..end).contains(&shard) {
            let cursor = &mut cursors[shard as usize];
            buffer[*cursor] = h;
            *cursor += 1;
        }
    }
}

/// Solves one shard from its keys' hashes into `out` (the shard's `M / 64 · r` words), with
/// `band` (`M` rows) as scratch.
fn solve_shard(
    keys: &mut [u64],
    shards: &Shards,
    shard: u64,
    result_bits: u32,
    band: &mut [u128],
    out: &mut [u64],
) {
    keys.sort_unstable();
    band.fill(0);
    for &h in keys.iter() {
        let eq = shards.local_equation(h);
        // A row that vanishes (a duplicate, or a combination of rows already there) adds no
        // constraint: the homogeneous system stays solvable whatever the keys.
        if let Some((slot, coeff)) = reduce(band, eq.start as usize, eq.coeff, |_| ()) {
            band[slot] = coeff;
        }
    }
    let base = shard * shards.shard_slots();
    back_substitute_into(
        band,
        result_bits as usize,
        |slot| {
            if band[slot] == 0 {
                fill(base + slot as u64, result_bits)
            } else {
                0
            }
        },
        out,
    );
}

#[cfg(test)]
mod tests {
    use super::super::equation::evaluate;
    use super::*;

    fn hashes(n: u64, salt: u64) -> Vec<u64> {
        (0..n).map(|i| crate::hash(&(i, salt))).collect()
    }

    /// Every key's row XORs to zero in the solution, whatever the plan: one shard or many,
    /// one pass or many.
    #[test]
    fn solution_satisfies_every_equation() {
        for (n, shards, slots, pass_keys) in [
            (1u64, 1u64, 64u64, 1u64),
            (50, 1, 128, 50),
            (1000, 1, 1088, 1000),
            (5000, 3, 1792, 5000),
            (5000, 3, 1792, 1),
            (20_000, 7, 3072, 4000),
        ] {
            let hs = hashes(n, 1);
            let plan = ShardPlan {
                num_shards: shards,
                shard_slots: slots,
                pass_keys,
            };
            let solution = solve(&hs, 7, plan).unwrap();
            assert_eq!(solution.len() as u64, shards * slots / 64 * 7);
            let geometry = Shards::new(shards, slots);
            for &h in &hs {
                let eq = geometry.equation(h);
                assert_eq!(evaluate(&solution, 7, &eq), 0, "n={n} S={shards}");
            }
        }
    }

    /// The number of passes changes nothing: the buffer holds a shard's keys in input order
    /// whatever the run, and each shard sorts them.
    #[test]
    fn passes_do_not_change_the_filter() {
        let hs = hashes(30_000, 2);
        let plan = |pass_keys| ShardPlan {
            num_shards: 6,
            shard_slots: 5312,
            pass_keys,
        };
        let one_pass = solve(&hs, 9, plan(30_000)).unwrap();
        for pass_keys in [1, 4_000, 10_000, 29_999] {
            assert!(
                solve(&hs, 9, plan(pass_keys)).unwrap() == one_pass,
                "{pass_keys}"
            );
        }
    }

    /// Overloaded beyond hope (more keys than slots), a shard still solves: rows that
    /// vanish are dropped, and every key still passes.
    #[test]
    fn an_overloaded_shard_still_holds_every_key() {
        let hs = hashes(3000, 3);
        let plan = ShardPlan {
            num_shards: 1,
            shard_slots: 1024,
            pass_keys: 3000,
        };
        let solution = solve(&hs, 5, plan).unwrap();
        let geometry = Shards::new(1, 1024);
        assert!(hs
            .iter()
            .all(|&h| evaluate(&solution, 5, &geometry.equation(h)) == 0));
    }

    #[test]
    fn plans_follow_the_key_count() {
        assert_eq!(ShardPlan::for_items(0, 7).unwrap().num_shards, 0);
        let one = ShardPlan::for_items(1, 7).unwrap();
        assert_eq!((one.num_shards, one.shard_slots), (1, 64));
        let full = ShardPlan::for_items(MAX_SHARD_KEYS, 7).unwrap();
        assert_eq!(full.num_shards, 1);
        let two = ShardPlan::for_items(MAX_SHARD_KEYS + 1, 7).unwrap();
        assert_eq!(two.num_shards, 2);
        assert!(two.shard_slots < full.shard_slots);
        let big = ShardPlan::for_items(600_000_000, 7).unwrap();
        assert_eq!(big.num_shards, 573);
        assert_eq!(big.pass_keys, 200_000_000);
        let over = big.num_slots().unwrap() as f64 / 6e8 - 1.0;
        assert!((0.047..0.049).contains(&over), "{over}");
        assert!(matches!(
            ShardPlan::for_items(u64::MAX, 32),
            Err(Error::TooLarge { .. })
        ));
        // Small shards get at least r + 8 spare slots.
        assert_eq!(planned_shard_slots(56, 7).unwrap(), 128);
        assert_eq!(planned_shard_slots(49, 7).unwrap(), 64);
        assert_eq!(planned_shard_slots(49, 8).unwrap(), 128);
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

    /// Not a test: the data behind [`slack_fraction`]. For shards of `RIBBON_N` keys with
    /// `RIBBON_PCT` percent slack, over `RIBBON_TRIALS` key sets, the share of
    /// `RIBBON_PROBES` absent rows per set that are combinations of the built rows (they
    /// vanish when banded), which is the excess of the rate over 2^−r:
    /// `RIBBON_N=1048576 RIBBON_TRIALS=16 cargo test -p bloomkit --release --lib span_rates -- --ignored --nocapture`
    #[test]
    #[ignore]
    fn span_rates() {
        let sizes = env_list("RIBBON_N", &[262_144u64]);
        let percents = env_list("RIBBON_PCT", &[4.0f64, 4.5, 4.7, 5.0]);
        let trials = env_list("RIBBON_TRIALS", &[20u64])[0];
        let probes = env_list("RIBBON_PROBES", &[300_000u64])[0];
        for n in sizes {
            for &pct in &percents {
                let slots = ((n as f64 * (1.0 + pct / 100.0)).ceil() as u64).next_multiple_of(64);
                let shards = Shards::new(1, slots);
                let mut band = vec![0u128; slots as usize];
                let (mut spanned, mut sets_with_any) = (0u64, 0u64);
                for t in 0..trials {
                    let mut keys = hashes(n, 7_000 + t);
                    keys.sort_unstable();
                    band.fill(0);
                    for &h in &keys {
                        let eq = shards.local_equation(h);
                        if let Some((slot, c)) = reduce(&band, eq.start as usize, eq.coeff, |_| ())
                        {
                            band[slot] = c;
                        }
                    }
                    let here = (0..probes)
                        .filter(|&i| {
                            let eq = shards.local_equation(crate::hash(&(i, t, "absent")));
                            reduce(&band, eq.start as usize, eq.coeff, |_| ()).is_none()
                        })
                        .count() as u64;
                    spanned += here;
                    sets_with_any += u64::from(here > 0);
                }
                eprintln!(
                    "n {n:>9} +{pct:>4}% ({slots} slots): absent rows in the span {:.3e}, \
                     key sets with any {sets_with_any}/{trials}",
                    spanned as f64 / (trials * probes) as f64
                );
            }
        }
    }
}
