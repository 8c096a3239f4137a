//! The sizing math: how many bits and probes a filter needs, and what false-positive rate a
//! given size delivers.
//!
//! Notation: `n` items, `m` bits, `k` hash probes, `p` the false-positive rate (the chance
//! that a query for an absent key answers "maybe").
//!
//! * Classic Bloom filter: a bit stays zero with probability e^(−kn/m), so
//!   p ≈ (1 − e^(−kn/m))^k, minimised at k = (m/n)·ln 2, which gives m = −n·ln p / (ln 2)²:
//!   1.44·log2(1/p) bits per key.
//! * Blocked Bloom filter: all k probes of a key fall in one 512-bit line, so a line's load
//!   varies (Poisson, mean L = 512·n/m) and the rate is the classic rate *inside a line*,
//!   averaged over that load. An overloaded line costs more than an underloaded one saves, so
//!   a blocked filter needs a little more memory than a classic one for the same rate, and its
//!   best k is lower.
//!
//! The anchors in this module's examples are the textbook figures: a change that moves them is
//! a bug.

use crate::error::{Error, Result};

mod kinds;

pub use self::kinds::{
    aging_plan, cuckoo_fingerprint_bits, cuckoo_fp_rate, kind_plan, scalable_layers, KindPlan,
    ScalableLayer, CUCKOO_MAX_FINGERPRINT_BITS, CUCKOO_MIN_FINGERPRINT_BITS,
};

/// The most hash probes any filter accepts.
///
/// Every probe of a key is derived from one 64-bit hash, and two keys whose hashes collide are
/// indistinguishable, which floors the false-positive rate near n/2^64 whatever k is. At 64
/// probes a classic filter's rate is already about 2^−64, so more buys nothing.
pub const MAX_NUM_HASHES: u32 = 64;

/// Bits in one line of a blocked filter: one 64-byte cache line.
pub const LINE_BITS: u64 = 512;

/// Checks that `fp_rate` is a usable target rate: a number strictly between 0 and 1.
pub(crate) fn check_fp_rate(fp_rate: f64) -> Result<()> {
    if fp_rate > 0.0 && fp_rate < 1.0 {
        Ok(())
    } else {
        // NaN fails both comparisons and lands here too.
        Err(Error::InvalidFpRate { fp_rate })
    }
}

/// A planned filter: what [`classic_plan`] and [`blocked_plan`] decide, and what the
/// filters' `new` constructors build.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Plan {
    /// Bits, rounded up as the filter rounds them (whole 64-bit words, or 512-bit lines).
    pub num_bits: u64,
    /// Probes per key.
    pub num_hashes: u32,
    /// The predicted false-positive rate with the planned number of items.
    pub fp_rate: f64,
}

/// The size [`crate::BloomFilter::new`] builds for `items` keys at `fp_rate`: the textbook
/// bits rounded up to whole 64-bit words, and the textbook probes for the unrounded bits.
/// `items = 0` is treated as 1.
///
/// # Errors
///
/// [`Error::InvalidFpRate`], [`Error::FpRateTooSmall`], [`Error::TooLarge`].
///
/// # Examples
///
/// ```
/// let plan = bloomkit::sizing::classic_plan(1_000_000, 0.01)?;
/// assert_eq!((plan.num_bits, plan.num_hashes), (9_585_088, 7));
/// assert!((plan.fp_rate - 0.01).abs() < 0.0001);
/// # Ok::<(), bloomkit::Error>(())
/// ```
pub fn classic_plan(items: u64, fp_rate: f64) -> Result<Plan> {
    check_reachable(items, fp_rate)?;
    let bits = optimal_num_bits(items, fp_rate)?;
    let num_hashes = optimal_num_hashes(items, bits);
    let n = items.max(1);
    // The textbook size misses the target where the fill's spread matters (a few hundred
    // bits): add words until the true rate meets it. Within 3%, what rounding k to a whole
    // number already costs the textbook plan (0.3% at 1%: 7 probes for 6.64), so that a
    // large filter keeps the textbook size.
    let meets = |words: u64| classic_fp_rate(n, words * 64, num_hashes) <= fp_rate * 1.03;
    let words = fewest_units(bits.div_ceil(64), u64::MAX / 64, meets)?;
    let num_bits = words * 64;
    Ok(Plan {
        num_bits,
        num_hashes,
        fp_rate: classic_fp_rate(n, num_bits, num_hashes),
    })
}

/// The plan of a classic filter probing by `probes`: [`classic_plan`] for
/// [`ClassicProbes::Rotating`](crate::ClassicProbes::Rotating); for
/// [`ClassicProbes::DoubleHashing`](crate::ClassicProbes::DoubleHashing), the textbook bits
/// rounded up to whole words, as every filter of that derivation was sized, so that a server
/// replaying an old log's `BF.RESERVE` rebuilds the very bits it logged items into.
pub(crate) fn classic_plan_for(
    items: u64,
    fp_rate: f64,
    probes: crate::ClassicProbes,
) -> Result<Plan> {
    if probes != crate::ClassicProbes::DoubleHashing {
        return classic_plan(items, fp_rate);
    }
    check_reachable(items, fp_rate)?;
    let bits = optimal_num_bits(items, fp_rate)?;
    let num_hashes = optimal_num_hashes(items, bits);
    let num_bits = bits
        .div_ceil(64)
        .checked_mul(64)
        .ok_or(Error::TooLarge { num_bits: u64::MAX })?;
    Ok(Plan {
        num_bits,
        num_hashes,
        fp_rate: classic_fp_rate(items.max(1), num_bits, num_hashes),
    })
}

/// The size [`crate::BlockedBloomFilter::new`] (and [`crate::AtomicBloomFilter::new`])
/// builds for `items` keys at `fp_rate`: the fewest lines that meet the rate
/// ([`blocked_num_bits`]), and the fewest probes that meet it there (at most
/// [`blocked_num_hashes`]; fewer when a tiny filter's one line leaves slack, so that a filter
/// of one key does not probe 34 times). `items = 0` is treated as 1.
///
/// # Errors
///
/// [`Error::InvalidFpRate`], [`Error::FpRateTooSmall`], [`Error::TooLarge`].
///
/// # Examples
///
/// ```
/// let plan = bloomkit::sizing::blocked_plan(1_000_000, 0.01)?;
/// assert_eq!(plan.num_hashes, 6);
/// assert!(plan.fp_rate <= 0.01);
/// let tiny = bloomkit::sizing::blocked_plan(1, 0.01)?;
/// assert_eq!(tiny.num_bits, 512);
/// assert!(tiny.num_hashes <= 2, "{}", tiny.num_hashes);
/// # Ok::<(), bloomkit::Error>(())
/// ```
pub fn blocked_plan(items: u64, fp_rate: f64) -> Result<Plan> {
    check_reachable(items, fp_rate)?;
    let items = items.max(1);
    let num_bits = blocked_num_bits(items, fp_rate)?;
    let best = blocked_num_hashes(items, num_bits);
    let num_hashes = (1..best)
        .find(|&k| blocked_plan_fp_rate(items, num_bits, k) <= fp_rate)
        .unwrap_or(best);
    Ok(Plan {
        num_bits,
        num_hashes,
        fp_rate: blocked_plan_fp_rate(items, num_bits, num_hashes),
    })
}

/// Checks that a rate is reachable with at most [`MAX_NUM_HASHES`] probes: the classic
/// optimum is log2(1/p) probes, so rates below about 2^−64 are refused, whatever the layout.
pub(crate) fn check_reachable(items: u64, fp_rate: f64) -> Result<()> {
    let num_bits = optimal_num_bits(items, fp_rate)?;
    let ideal = (num_bits as f64 / items.max(1) as f64 * std::f64::consts::LN_2).round();
    if ideal > MAX_NUM_HASHES as f64 {
        return Err(Error::FpRateTooSmall {
            fp_rate,
            num_hashes: ideal as u64,
        });
    }
    Ok(())
}

/// Checks a probe count against `1..=MAX_NUM_HASHES`.
pub(crate) fn check_num_hashes(num_hashes: u32) -> Result<()> {
    if (1..=MAX_NUM_HASHES).contains(&num_hashes) {
        Ok(())
    } else {
        Err(Error::InvalidNumHashes { num_hashes })
    }
}

/// The number of bits a classic Bloom filter needs to hold `items` keys at rate `fp_rate`:
/// ⌈−n·ln p / (ln 2)²⌉. `items = 0` is treated as 1.
///
/// # Errors
///
/// [`Error::InvalidFpRate`] unless `0 < fp_rate < 1`; [`Error::TooLarge`] if the answer does
/// not fit in a `u64`.
///
/// # Examples
///
/// ```
/// use bloomkit::sizing::optimal_num_bits;
/// assert_eq!(optimal_num_bits(1_000_000, 0.01)?, 9_585_059);
/// // 0.1% costs 14.4 bits per key; 10% costs 4.8.
/// assert_eq!((optimal_num_bits(1_000_000, 0.001)? as f64 / 1e6 * 10.0).round() / 10.0, 14.4);
/// assert_eq!((optimal_num_bits(1_000_000, 0.1)? as f64 / 1e6 * 10.0).round() / 10.0, 4.8);
/// # Ok::<(), bloomkit::Error>(())
/// ```
pub fn optimal_num_bits(items: u64, fp_rate: f64) -> Result<u64> {
    check_fp_rate(fp_rate)?;
    let n = items.max(1) as f64;
    let ln2 = std::f64::consts::LN_2;
    let bits = (-n * fp_rate.ln() / (ln2 * ln2)).ceil();
    // 2^64 is exactly representable; anything at or past it does not fit.
    if bits >= 18_446_744_073_709_551_616.0 {
        return Err(Error::TooLarge { num_bits: u64::MAX });
    }
    Ok((bits as u64).max(1))
}

/// The number of probes that minimises a classic filter's rate: (m/n)·ln 2, rounded, within
/// `1..=MAX_NUM_HASHES`. `items = 0` is treated as 1.
///
/// # Examples
///
/// ```
/// use bloomkit::sizing::{optimal_num_bits, optimal_num_hashes};
/// let n = 1_000_000;
/// assert_eq!(optimal_num_hashes(n, optimal_num_bits(n, 0.01)?), 7);
/// assert_eq!(optimal_num_hashes(n, optimal_num_bits(n, 0.001)?), 10);
/// assert_eq!(optimal_num_hashes(n, optimal_num_bits(n, 0.1)?), 3);
/// # Ok::<(), bloomkit::Error>(())
/// ```
pub fn optimal_num_hashes(items: u64, num_bits: u64) -> u32 {
    let k = (num_bits as f64 / items.max(1) as f64 * std::f64::consts::LN_2).round();
    k.clamp(1.0, MAX_NUM_HASHES as f64) as u32
}

/// The predicted false-positive rate of a classic filter of `num_bits` bits and `num_hashes`
/// probes holding `items` keys.
///
/// The textbook (1 − e^(−kn/m))^k is the rate at the mean fill. A query hits k set bits with
/// probability E[(X/m)^k] over the number X of set bits, which by Jensen's inequality is
/// higher, by a margin that grows with k²/m: negligible in a large filter, about 17% in one
/// of 192 bits and 13 probes (10 keys at 10^−4). So: exactly, from the occupancy
/// distribution (for each number of distinct query positions, the chance that the t = k·n
/// probes cover them, by inclusion–exclusion), in a filter of at most 2,048 bits holding at
/// most t·k² ≤ 4·10^6 probes; else the second-order
/// expansion E[f(X)] ≈ f(μ) + ½·f″(μ)·Var X that [`blocked_fp_rate`] uses inside a line,
/// which is within 0.03% of the exact rate from about 450 bits up (1% low at 256 bits and 18
/// probes, 6% at 64 bits and 15); and past 2^32 bits, where that correction is below
/// 10^−6 (and its terms would lose their precision), the fill at its mean. Probes are taken as
/// independent and uniform, which [`crate::ClassicProbes::Rotating`] delivers (the grid test
/// in `crates/bloomkit-bench` measures every size against this).
///
/// # Examples
///
/// ```
/// use bloomkit::sizing::classic_fp_rate;
/// let p = classic_fp_rate(1_000_000, 9_585_059, 7);
/// assert!((p - 0.01).abs() < 0.0005);
/// // Holding twice the planned keys, the same filter answers "maybe" 15% of the time.
/// let p2 = classic_fp_rate(2_000_000, 9_585_059, 7);
/// assert!((p2 - 0.15).abs() < 0.01, "{p2}");
/// // A small filter: above the textbook rate at its mean fill.
/// let textbook = (1.0 - (-13.0 * 10.0 / 192.0f64).exp()).powi(13);
/// let small = classic_fp_rate(10, 192, 13);
/// assert!(small > textbook * 1.1, "{small} vs {textbook}");
/// ```
pub fn classic_fp_rate(items: u64, num_bits: u64, num_hashes: u32) -> f64 {
    if num_bits == 0 {
        return 1.0;
    }
    if items == 0 {
        return 0.0;
    }
    let m = num_bits as f64;
    let k = num_hashes as f64;
    let t = k * items as f64;
    if num_bits <= 2048 && t * k * k <= 4e6 {
        return exact_occupancy_fp_rate(num_bits, t as u64, num_hashes);
    }
    let q1 = (t * (-1.0 / m).ln_1p()).exp();
    if num_bits > 1 << 32 {
        return (1.0 - q1).powf(k);
    }
    let q2 = (t * (-2.0 / m).ln_1p()).exp();
    occupancy_fp_rate(m, q1, q2, k)
}

/// The chance that `k` independent uniform positions among `m` all fall on bits that `t`
/// independent uniform positions set: the sum over the number d of distinct query positions
/// of P(d) times the chance that t probes cover d given positions ([`all_covered`]).
fn exact_occupancy_fp_rate(num_bits: u64, t: u64, k: u32) -> f64 {
    let m = num_bits as f64;
    let k = k as usize;
    let mut pd = vec![0.0; k + 1];
    pd[0] = 1.0;
    for _ in 0..k {
        let mut next = vec![0.0; k + 1];
        for d in 0..=k {
            next[d] += pd[d] * (d as f64 / m).min(1.0);
            if d < k {
                next[d + 1] += pd[d] * ((m - d as f64) / m).max(0.0);
            }
        }
        pd = next;
    }
    let mut total = 0.0;
    for (d, &p) in pd.iter().enumerate().skip(1) {
        if p != 0.0 {
            total += p * all_covered(m, t, d);
        }
    }
    total.min(1.0)
}

/// The chance that `t` independent uniform positions among `m` cover `d` given ones. By
/// inclusion–exclusion, Σ_j (−1)^j·C(d, j)·(1 − j/m)^t: O(d), and exact to about 10^−10
/// (relative) where the terms' magnitudes sum to at most 10^6 times the result, which holds
/// for every filter near its planned fill. Where they cancel more (a nearly empty filter,
/// whose few probes leave most of the d uncovered), a Markov chain over how many are covered
/// instead: O(t·d), and such a filter has few probes.
fn all_covered(m: f64, t: u64, d: usize) -> f64 {
    let (mut sum, mut magnitude, mut binomial) = (0.0, 0.0, 1.0);
    for j in 0..=d {
        let term = binomial * (t as f64 * (-(j as f64) / m).ln_1p()).exp();
        sum += if j % 2 == 0 { term } else { -term };
        magnitude += term;
        binomial = binomial * (d - j) as f64 / (j + 1) as f64;
    }
    if sum > 0.0 && magnitude <= 1e6 * sum {
        return sum;
    }
    all_covered_by_chain(m, t, d)
}

/// [`all_covered`] by the Markov chain over how many of the d are covered after each probe.
fn all_covered_by_chain(m: f64, t: u64, d: usize) -> f64 {
    let mut covered = vec![0.0; d + 1];
    covered[0] = 1.0;
    for _ in 0..t {
        for i in (0..d).rev() {
            let hit = covered[i] * (d - i) as f64 / m;
            covered[i] -= hit;
            covered[i + 1] += hit;
        }
    }
    covered[d]
}

/// The rate inside one 512-bit line holding `load` keys of `k` probes each.
///
/// With t = k·load probes in m = 512 bits, the number of set bits X has mean
/// μ = m·(1 − (1 − 1/m)^t), and a query for an absent key hits k set bits with probability
/// E[(X/m)^k]. The textbook form uses (μ/m)^k, which by Jensen's inequality is too low: in a
/// line this small X varies, and the error grows with k (1% at 6 probes, 3% at 10). A
/// second-order expansion, E[f(X)] ≈ f(μ) + ½·f″(μ)·Var X with the occupancy variance
/// Var X = m(m−1)(1 − 2/m)^t + m(1 − 1/m)^t − m²(1 − 1/m)^(2t), agrees with the exact
/// occupancy computation within 0.05% for 6 to 12 probes, and with what the filters measure.
fn line_fp_rate(load: f64, k: f64) -> f64 {
    let m = LINE_BITS as f64;
    let t = k * load;
    line_fp_rate_from((1.0 - 1.0 / m).powf(t), (1.0 - 2.0 / m).powf(t), k)
}

/// [`line_fp_rate_from`] for `m` bits of any number: the rate E[(X/m)^k] by the second-order
/// expansion, given q1 = (1 − 1/m)^t and q2 = (1 − 2/m)^t.
fn occupancy_fp_rate(m: f64, q1: f64, q2: f64, k: f64) -> f64 {
    let mean = m * (1.0 - q1);
    if mean <= 0.0 {
        return 0.0;
    }
    let variance = (m * (m - 1.0) * q2 + m * q1 - m * m * q1 * q1).max(0.0);
    let at_mean = (mean / m).powi(k as i32);
    (at_mean * (1.0 + k * (k - 1.0) * variance / (2.0 * mean * mean))).min(1.0)
}

/// [`line_fp_rate`] given q1 = (1 − 1/m)^t and q2 = (1 − 2/m)^t for the line's t probes, so
/// that a sum over loads can step them by one multiply each instead of two `powf`s.
#[inline]
fn line_fp_rate_from(q1: f64, q2: f64, k: f64) -> f64 {
    occupancy_fp_rate(LINE_BITS as f64, q1, q2, k)
}

/// ln(n!): exact below 20, Stirling's series above (error under 1e-12 there).
fn ln_factorial(n: u64) -> f64 {
    if n < 20 {
        return (2..=n).map(|i| (i as f64).ln()).sum();
    }
    let x = n as f64;
    x * x.ln() - x + 0.5 * (2.0 * std::f64::consts::PI * x).ln() + 1.0 / (12.0 * x)
        - 1.0 / (360.0 * x * x * x)
}

/// The predicted false-positive rate of a blocked filter (512-bit lines) of `num_bits` bits
/// and `num_hashes` probes holding `items` keys, probing by
/// [`BlockedProbes::TwoSeeds`](crate::BlockedProbes::TwoSeeds) (what every new filter does;
/// [`blocked_fp_rate_for`] adds the first derivation's floor).
///
/// Keys land on lines at random, so a line's load is binomial: `items` trials, each on this
/// line with probability 1/lines; the rate is the in-line rate (which
/// accounts for how a 512-bit line's fill varies) averaged over that distribution. This
/// refines the cache-local approximation ½·[F(512, L+√L, k) + F(512, L−√L, k)], which averages
/// the textbook in-line rate over one standard deviation of load either side: at 10 bits per
/// key and 6 probes that gives 0.954%, this gives 0.967%, and a filter of that shape measures
/// 0.97% (the statistical tests check every blocked filter against this prediction). The
/// sum also stays right where the approximation does not: fewer than one key per line, and
/// filters of one or a few lines, where the load is nearly fixed (in a one-line filter,
/// exactly `items`).
///
/// A blocked plan ([`blocked_plan`]) sizes with the Poisson load of the same mean: plans stay what
/// they were when filters and logs were written, since replaying a log rebuilds the layers a plan
/// sized. The Poisson rate is higher for filters of a few lines (twice or more at a few keys, where
/// the binomial load is nearly fixed) and within 0.1% of this one for others, so plans keep meeting
/// their targets.
///
/// # Examples
///
/// ```
/// use bloomkit::sizing::blocked_fp_rate;
/// // 10 bits/key and 6 probes (RocksDB's FastLocalBloom shape): about 0.967%.
/// let p = blocked_fp_rate(1_000_000, 10_000_000, 6);
/// assert!((p - 0.00967).abs() < 0.00005, "{p}");
/// ```
pub fn blocked_fp_rate(items: u64, num_bits: u64, num_hashes: u32) -> f64 {
    blocked_rate(items, num_bits, num_hashes, LineLoads::Exact)
}

/// [`blocked_fp_rate`] for a filter whose probes are derived by `probes`: the same for
/// [`BlockedProbes::TwoSeeds`](crate::BlockedProbes::TwoSeeds), whose probes depend on the
/// whole 64-bit hash, and for [`BlockedProbes::OneSeed`](crate::BlockedProbes::OneSeed) that
/// rate plus its floor: an absent key whose low 32 bits equal those of a key in its line
/// shares all that key's probes, so the expected keys of a line over 2^32 are false
/// positives whatever the bits.
///
/// The floor is not all the first derivation adds. Its probe patterns for nearby seeds
/// overlap too (seeds `j·2^29` apart give the same pattern shifted by `64j` bits), an excess
/// this model leaves out: in a simulation of lines at 76.6 bits a key and 21 probes (a
/// scalable filter's deep layers), one-seed lines counted 4.51 times the ideal rate of their
/// bits, of which the floor explained under half. At the rates filters are usually planned
/// for (10^−6 and above) both are negligible.
///
/// # Examples
///
/// ```
/// use bloomkit::sizing::{blocked_fp_rate, blocked_fp_rate_for};
/// use bloomkit::BlockedProbes;
///
/// let (n, m, k) = (10_000_000, 768_000_000, 21);
/// let two = blocked_fp_rate_for(n, m, k, BlockedProbes::TwoSeeds);
/// assert_eq!(two, blocked_fp_rate(n, m, k));
/// // About 7 keys a line: a floor of 7 / 2^32, some 1.6e-9, on top.
/// let one = blocked_fp_rate_for(n, m, k, BlockedProbes::OneSeed);
/// let floor = n as f64 / (m / 512) as f64 / 2f64.powi(32);
/// assert!((one - two - floor).abs() < 1e-20, "{one} {two} {floor}");
/// // At a rate this deep the floor alone is as large as the rate of the bits.
/// assert!(floor > 1.5e-9 && one > 1.9 * two, "{floor} {two}");
/// ```
pub fn blocked_fp_rate_for(
    items: u64,
    num_bits: u64,
    num_hashes: u32,
    probes: crate::BlockedProbes,
) -> f64 {
    let rate = blocked_fp_rate(items, num_bits, num_hashes);
    match probes {
        crate::BlockedProbes::OneSeed => {
            let lines = num_bits.div_ceil(LINE_BITS).max(1);
            let per_line = items as f64 / lines as f64;
            (rate + per_line / 2f64.powi(32)).min(1.0)
        }
        _ => rate,
    }
}

/// How the keys of a filter of 512-bit lines are taken to fall on one line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LineLoads {
    /// Binomial: `items` keys, each on the line with probability 1/lines. The truth.
    Exact,
    /// Poisson with the same mean: what blocked plans size with (see [`blocked_fp_rate`]).
    Poisson,
}

/// Calls `term(load, probability)` for the loads of one line worth summing (within 12
/// standard deviations of the mean; the rest weigh less than 1e-30), in increasing order.
///
/// This runs inside the sizing searches (a plan evaluates it hundreds of times), so each
/// term is a few multiplies: the first probability comes from log space (e^(−L) alone would
/// underflow for a large mean L), then each next one from the last. Past a few hundred
/// thousand keys per line the filter is saturated and the spread irrelevant: one term.
fn for_each_line_load(items: u64, lines: u64, loads: LineLoads, mut term: impl FnMut(u64, f64)) {
    let lines = lines.max(1);
    let mean = items as f64 / lines as f64;
    if mean > 100_000.0 || (loads == LineLoads::Exact && lines == 1) {
        // A one-line filter holds every key: its load is exactly `items`.
        let load = if lines == 1 { items } else { mean as u64 };
        term(load, 1.0);
        return;
    }
    let sd = mean.sqrt();
    let lo = (mean - 12.0 * sd - 10.0).max(0.0).floor() as u64;
    let mut hi = (mean + 12.0 * sd + 10.0).ceil() as u64;
    match loads {
        LineLoads::Poisson => {
            let mut pmf = (-mean + lo as f64 * mean.ln() - ln_factorial(lo)).exp();
            for j in lo..=hi {
                term(j, pmf);
                pmf *= mean / (j + 1) as f64;
            }
        }
        LineLoads::Exact => {
            hi = hi.min(items);
            let q = 1.0 / lines as f64;
            let (ln_q, ln_rest) = (q.ln(), (-q).ln_1p());
            let ln_choose = ln_factorial(items) - ln_factorial(lo) - ln_factorial(items - lo);
            let mut pmf = (ln_choose + lo as f64 * ln_q + (items - lo) as f64 * ln_rest).exp();
            let odds = q / (1.0 - q);
            for j in lo..=hi {
                term(j, pmf);
                pmf *= (items - j) as f64 / (j + 1) as f64 * odds;
            }
        }
    }
}

/// [`blocked_fp_rate`] with the load model given: the in-line powers step by (1 − 1/m)^k
/// and (1 − 2/m)^k per key.
fn blocked_rate(items: u64, num_bits: u64, num_hashes: u32, loads: LineLoads) -> f64 {
    if items == 0 {
        return 0.0;
    }
    let lines = (num_bits / LINE_BITS).max(1);
    let k = num_hashes as f64;
    let mean = items as f64 / lines as f64;
    if mean > 100_000.0 {
        return line_fp_rate(mean, k);
    }
    let m = LINE_BITS as f64;
    let (step1, step2) = ((1.0 - 1.0 / m).powf(k), (1.0 - 2.0 / m).powf(k));
    let mut state: Option<(u64, f64, f64)> = None;
    let mut total = 0.0;
    for_each_line_load(items, lines, loads, |load, pmf| {
        let (q1, q2) = match state {
            Some((last, q1, q2)) if last + 1 == load => (q1 * step1, q2 * step2),
            _ => (step1.powf(load as f64), step2.powf(load as f64)),
        };
        state = Some((load, q1, q2));
        total += pmf * line_fp_rate_from(q1, q2, k);
    });
    total.min(1.0)
}

/// The rate a blocked plan sizes with (see [`blocked_fp_rate`]).
fn blocked_plan_fp_rate(items: u64, num_bits: u64, num_hashes: u32) -> f64 {
    blocked_rate(items, num_bits, num_hashes, LineLoads::Poisson)
}

/// The number of probes a blocked filter of this many items and bits should use: the fewest
/// whose predicted rate is within 1% (relative) of the best any probe count achieves.
///
/// Near the optimum the rate is flat in k (at 10 bits per key, 6 and 7 probes differ by
/// 0.05%), while every probe costs time, so the fewest near-best probes is the better trade.
/// The result is lower than the classic (m/n)·ln 2 at high bits per key, because extra probes
/// pile into already loaded lines.
///
/// # Examples
///
/// ```
/// use bloomkit::sizing::blocked_num_hashes;
/// assert_eq!(blocked_num_hashes(1_000, 10_240), 6);   // 10 bits/key (the classic k is 7)
/// assert!(blocked_num_hashes(1_000, 16_384) <= 9);    // 16 bits/key (the classic k is 11)
/// ```
pub fn blocked_num_hashes(items: u64, num_bits: u64) -> u32 {
    // No items would make every k look perfect; plan for one, as everywhere else.
    let items = items.max(1);
    let rates: Vec<f64> = {
        let mut rates = vec![blocked_plan_fp_rate(items, num_bits, 1)];
        for k in 2..=MAX_NUM_HASHES {
            let rate = blocked_plan_fp_rate(items, num_bits, k);
            rates.push(rate);
            // The rate is unimodal in k: once it rises, it keeps rising.
            if rate > rates[rates.len() - 2] {
                break;
            }
        }
        rates
    };
    let best = rates.iter().copied().fold(f64::INFINITY, f64::min);
    let k = rates.iter().position(|&r| r <= best * 1.01).unwrap_or(0);
    k as u32 + 1
}

/// The number of bits (a whole number of 512-bit lines) a blocked filter needs so that its
/// predicted rate, with the best number of probes, is at most `fp_rate` for `items` keys.
/// `items = 0` is treated as 1.
///
/// # Errors
///
/// [`Error::InvalidFpRate`] unless `0 < fp_rate < 1`; [`Error::TooLarge`] if the answer does
/// not fit in a `u64`.
///
/// # Examples
///
/// ```
/// use bloomkit::sizing::{blocked_num_bits, optimal_num_bits};
/// let blocked = blocked_num_bits(1_000_000, 0.01)?;
/// assert_eq!(blocked % 512, 0);
/// // About 10 bits per key for 1%, a little more than the classic 9.59.
/// let bits_per_key = blocked as f64 / 1e6;
/// assert!(bits_per_key > 9.6 && bits_per_key < 10.2, "{bits_per_key}");
/// # Ok::<(), bloomkit::Error>(())
/// ```
pub fn blocked_num_bits(items: u64, fp_rate: f64) -> Result<u64> {
    check_fp_rate(fp_rate)?;
    let items = items.max(1);
    let meets = |lines: u64| {
        let bits = lines * LINE_BITS;
        blocked_plan_fp_rate(items, bits, blocked_num_hashes(items, bits)) <= fp_rate
    };
    // Start from the classic size (a lower bound: blocking only costs).
    let classic = optimal_num_bits(items, fp_rate)?;
    Ok(fewest_lines((classic / LINE_BITS).max(1), meets)? * LINE_BITS)
}

/// The fewest lines, `start` or more, that `meets` (which must hold for every count past the
/// first that does).
///
/// Errors: [`Error::TooLarge`] if no count of 512-bit lines that fits in a `u64` of bits
/// meets it.
fn fewest_lines(start: u64, meets: impl Fn(u64) -> bool) -> Result<u64> {
    fewest_units(start, u64::MAX / LINE_BITS, meets)
}

/// The fewest units (lines, words), from `start` up to `most`, that `meets` (which must hold
/// for every count past the first that does): doubling from `start` until met, then halving
/// the gap.
///
/// Errors: [`Error::TooLarge`] if no count up to `most` meets it.
fn fewest_units(start: u64, most: u64, meets: impl Fn(u64) -> bool) -> Result<u64> {
    let mut lo = start.clamp(1, most);
    if meets(lo) {
        // Most plans meet the target at the first size tried.
        return Ok(lo);
    }
    let mut hi = lo;
    loop {
        if hi >= most {
            return Err(Error::TooLarge { num_bits: u64::MAX });
        }
        hi = hi.saturating_mul(2).min(most);
        if meets(hi) {
            break;
        }
        lo = hi;
    }
    // Invariant: `lo` units miss the target, `hi` units meet it.
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if meets(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Ok(hi)
}

/// The predicted false-positive rate of a [`crate::SectorBloomFilter`] of `num_bits` bits
/// (512-bit lines) holding `items` keys, each setting `bits_per_word` bits in every 64-bit
/// word of its line.
///
/// A line's load n is binomial, as for the blocked layout ([`blocked_fp_rate`]); given
/// n, the eight words are independent (each key places its bits in each word from its own
/// probe values). A key's `p` bits in a word are `p` independent places, which may coincide
/// (the mask ORs them), so a query asks for d ≤ p distinct bits, d with the probability that
/// p draws from 64 places give d distinct ones: S(p, d)·64!/(64 − d)!/64^p, with S the
/// Stirling numbers of the second kind. Given d, the word holds those bits with probability
/// Σ_j (−1)^j·C(d, j)·(1 − j/64)^(n·p) (inclusion–exclusion over the bits left unset). The
/// line's rate is that to the eighth power, averaged over the load. The coinciding places
/// matter from two bits a word on: a query of two bits asks for one bit in 1/64 of its words,
/// which at 10^−7 raises the rate by about a fifth over a model of distinct bits.
///
/// # Examples
///
/// ```
/// use bloomkit::sizing::sector_fp_rate;
/// // 10.2 bits per key, one bit per word (8 probes): just under 1%.
/// let p = sector_fp_rate(1_000_000, 10_200_000, 1);
/// assert!((0.0094..0.0097).contains(&p), "{p}");
/// ```
pub fn sector_fp_rate(items: u64, num_bits: u64, bits_per_word: u32) -> f64 {
    if items == 0 {
        return 0.0;
    }
    let lines = (num_bits / LINE_BITS).max(1);
    let p = bits_per_word.clamp(1, MAX_NUM_HASHES / 8) as usize;
    let word_bits = 64.0;
    // unset[j]: (1 − j/64)^(n·p), the chance that j given bits of a word are all unset after
    // n keys, stepped by one multiply per key; weight[j]: its coefficient in the chance that
    // a query's bits are all set, Σ_d P(d distinct)·(−1)^j·C(d, j).
    let distinct = distinct_places(p, word_bits);
    let mut step = [1.0f64; 9];
    let mut weight = [0.0f64; 9];
    for j in 0..=p {
        step[j] = (1.0 - j as f64 / word_bits).powi(p as i32);
        let sign = if j % 2 == 0 { 1.0 } else { -1.0 };
        weight[j] = sign * (j..=p).map(|d| distinct[d] * binomial(d, j)).sum::<f64>();
    }
    let mut unset = [1.0f64; 9];
    let mut last: Option<u64> = None;
    let mut total = 0.0;
    for_each_line_load(items, lines, LineLoads::Exact, |load, pmf| {
        for j in 0..=p {
            unset[j] = match last {
                Some(n) if n + 1 == load => unset[j] * step[j],
                _ => step[j].powf(load as f64),
            };
        }
        last = Some(load);
        let word: f64 = (0..=p).map(|j| weight[j] * unset[j]).sum();
        total += pmf * word.clamp(0.0, 1.0).powi(8);
    });
    total.min(1.0)
}

/// `distinct[d]`: the probability that `draws` independent uniform places among `places`
/// are `d` distinct ones (`draws` ≤ 8), by the recurrence of the occupancy distribution: a
/// new draw lands on one of the d places seen with probability d/places.
fn distinct_places(draws: usize, places: f64) -> [f64; 9] {
    let mut distinct = [0.0f64; 9];
    distinct[0] = 1.0;
    for _ in 0..draws.min(8) {
        let mut next = [0.0f64; 9];
        for d in 0..8 {
            next[d] += distinct[d] * d as f64 / places;
            next[d + 1] += distinct[d] * (1.0 - d as f64 / places);
        }
        distinct = next;
    }
    distinct
}

/// C(n, k) as a float, for the small n of a word's probes.
fn binomial(n: usize, k: usize) -> f64 {
    if k > n {
        return 0.0;
    }
    (0..k).fold(1.0, |c, i| c * (n - i) as f64 / (i + 1) as f64)
}

/// The plan [`crate::SectorBloomFilter::new`] builds for `items` keys at `fp_rate`: the
/// fewest 512-bit lines whose predicted rate ([`sector_fp_rate`]) is at most `fp_rate`, with
/// the bits per word (1 to 8; `num_hashes` is eight times it) that needs the fewest lines,
/// the smallest of those on a tie. `items = 0` is treated as 1.
///
/// # Errors
///
/// [`Error::InvalidFpRate`] unless `0 < fp_rate < 1`; [`Error::FpRateTooSmall`] below what
/// 64 probes reach; [`Error::TooLarge`] if the filter does not fit in a `u64` of bits.
///
/// # Examples
///
/// ```
/// let plan = bloomkit::sizing::sector_plan(1_000_000, 0.01)?;
/// // One bit per word, about 10.1 bits per key at 1% (the blocked layout needs 9.93).
/// assert_eq!(plan.num_hashes, 8);
/// let bits_per_key = plan.num_bits as f64 / 1e6;
/// assert!((10.0..10.3).contains(&bits_per_key), "{bits_per_key}");
/// assert!(plan.fp_rate <= 0.01);
/// # Ok::<(), bloomkit::Error>(())
/// ```
pub fn sector_plan(items: u64, fp_rate: f64) -> Result<Plan> {
    check_fp_rate(fp_rate)?;
    check_reachable(items, fp_rate)?;
    let items = items.max(1);
    let start = (optimal_num_bits(items, fp_rate)? / LINE_BITS).max(1);
    let mut best: Option<(u64, u32)> = None;
    for per_word in 1..=MAX_NUM_HASHES / 8 {
        let meets = |lines: u64| sector_fp_rate(items, lines * LINE_BITS, per_word) <= fp_rate;
        let Ok(lines) = fewest_lines(start, meets) else {
            continue;
        };
        if best.is_none_or(|(fewest, _)| lines < fewest) {
            best = Some((lines, per_word));
        }
    }
    let (lines, per_word) = best.ok_or(Error::TooLarge { num_bits: u64::MAX })?;
    let num_bits = lines * LINE_BITS;
    Ok(Plan {
        num_bits,
        num_hashes: per_word * 8,
        fp_rate: sector_fp_rate(items, num_bits, per_word),
    })
}

/// Bits spent per key: `num_bits / items` (`items = 0` is treated as 1).
///
/// # Examples
///
/// ```
/// assert_eq!(bloomkit::sizing::bits_per_key(9_585_059, 1_000_000), 9.585059);
/// ```
pub fn bits_per_key(num_bits: u64, items: u64) -> f64 {
    num_bits as f64 / items.max(1) as f64
}

/// The number of distinct keys a filter holds, estimated from its fill (Swamidass & Baldi):
/// n* = −(m/k)·ln(1 − X/m) for X set bits.
///
/// A full filter (X = m) has no finite estimate; it is reported as if one bit were still
/// zero, the smallest count consistent with the fill.
///
/// # Examples
///
/// ```
/// use bloomkit::sizing::estimated_count;
/// // An empty filter holds nothing; half the bits set with k = 7 means about m·ln2/7 keys.
/// assert_eq!(estimated_count(0, 1000, 7), 0);
/// assert_eq!(estimated_count(500, 1000, 7), 99);
/// ```
pub fn estimated_count(set_bits: u64, num_bits: u64, num_hashes: u32) -> u64 {
    if num_bits == 0 || num_hashes == 0 {
        return 0;
    }
    let m = num_bits as f64;
    let x = set_bits.min(num_bits.saturating_sub(1)) as f64;
    let n = -(m / num_hashes as f64) * (1.0 - x / m).ln();
    n.round() as u64
}

/// The false-positive rate a classic filter risks now, from its fill: (X/m)^k.
///
/// # Examples
///
/// ```
/// assert_eq!(bloomkit::sizing::estimated_fp_rate(500, 1000, 2), 0.25);
/// ```
pub fn estimated_fp_rate(set_bits: u64, num_bits: u64, num_hashes: u32) -> f64 {
    if num_bits == 0 {
        return 1.0;
    }
    (set_bits as f64 / num_bits as f64).powi(num_hashes as i32)
}

/// The rate a Bloom filter's model predicts when the filter's count leaves out the inserts
/// that changed nothing, as the classic, blocked and sector filters (and a scalable filter's
/// layers) count: an insert whose every probe was already set is a false positive, or a repeat,
/// and adds nothing to the bits or to the count.
///
/// `rate(n)` is the model's rate with `n` keys inserted (for a classic filter,
/// `|n| classic_fp_rate(n, m, k)`). Of `n` distinct keys offered, the i-th (from 0) changes
/// nothing with probability `rate(i)`, so the count is expected to be Σ_{i<n} (1 − rate(i)):
/// where the rate is high the count falls short of the keys offered (by about 15% at a target
/// of 50%), and the rate read at the count alone is low (by about 20% there). This finds the
/// keys offered, n̂, whose expected count is `changed`, and answers the rate at n̂ (between
/// whole numbers, interpolated). Where the rate at the count is below 10^−3 the keys offered
/// exceed the count by less than 0.1%, and the rate at the count is the answer.
///
/// # Examples
///
/// ```
/// use bloomkit::sizing::{classic_fp_rate, fp_rate_from_changed_count};
/// // 10,000 bits and one probe: a filter that counted 6,000 changes was offered more keys.
/// let rate = |n| classic_fp_rate(n, 10_000, 1);
/// let at_count = rate(6_000);
/// let corrected = fp_rate_from_changed_count(6_000, rate);
/// assert!(corrected > at_count * 1.25, "{corrected} vs {at_count}");
/// // Where the rate is small, the count is the keys offered.
/// let rate = |n| classic_fp_rate(n, 1_000_000, 7);
/// assert_eq!(fp_rate_from_changed_count(10_000, rate), rate(10_000));
/// ```
pub fn fp_rate_from_changed_count(changed: u64, rate: impl Fn(u64) -> f64) -> f64 {
    let at_count = rate(changed);
    if changed == 0 || at_count.is_nan() || at_count < 1e-3 {
        return at_count;
    }
    let offered = offered_keys(changed, |n| 1.0 - rate(n).clamp(0.0, 1.0));
    let whole = offered.floor();
    let (below, above) = (rate(whole as u64), rate(whole as u64 + 1));
    below + (above - below) * (offered - whole)
}

/// The keys offered whose expected count of changes, Σ_{i<n} `changes(i)`, is `changed`:
/// summed key by key below 128 changes, by the trapezoid rule over panels of `changed / 64`
/// keys from there (its error, half a key at most, is below 1% of the count there).
/// A filter so full that an insert almost never changes it (`changes` below 10^−6) stops the
/// search where that begins.
fn offered_keys(changed: u64, changes: impl Fn(u64) -> f64) -> f64 {
    let target = changed as f64;
    let step = (changed / 64).max(1);
    let mut sum = 0.0;
    let mut x = 0u64;
    let mut at_x = changes(0);
    // Enough panels to walk far past any count a filter that still changes can reach.
    for _ in 0..64 * 1024 {
        if at_x < 1e-6 {
            break;
        }
        let (area, at_next) = if step == 1 {
            (at_x, changes(x + 1))
        } else {
            let at_next = changes(x + step);
            ((at_x + at_next) * 0.5 * step as f64, at_next)
        };
        if sum + area >= target {
            return x as f64 + step as f64 * (target - sum) / area;
        }
        sum += area;
        x += step;
        at_x = at_next;
    }
    x as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inclusion_exclusion_agrees_with_the_chain() {
        // Small filters, from nearly empty to overfull: both ways to the same rate.
        for m in [64.0, 192.0, 448.0, 960.0, 2048.0] {
            for d in [1, 2, 7, 13, 18, 30, 64] {
                for t in [1, 5, 20, 100, 300, 1000, 3000] {
                    let (fast, chain) = (all_covered(m, t, d), all_covered_by_chain(m, t, d));
                    let close = (fast - chain).abs() <= 1e-9 * chain.max(1e-300);
                    assert!(close, "m {m} t {t} d {d}: {fast:e} vs {chain:e}");
                }
            }
        }
    }

    #[test]
    fn distinct_places_of_a_words_draws() {
        for draws in 0..=8 {
            let d = distinct_places(draws, 64.0);
            let total: f64 = d.iter().sum();
            assert!((total - 1.0).abs() < 1e-12, "{draws}: {total}");
            assert!(d[draws + 1..].iter().all(|&p| p == 0.0), "{draws}: {d:?}");
        }
        // Two draws coincide one time in 64; three are three distinct ones with probability
        // 63·62/64², two with 3·63/64², one with 1/64².
        let two = distinct_places(2, 64.0);
        assert!((two[1] - 1.0 / 64.0).abs() < 1e-15 && (two[2] - 63.0 / 64.0).abs() < 1e-15);
        let three = distinct_places(3, 64.0);
        for (d, want) in [(1, 1.0), (2, 3.0 * 63.0), (3, 63.0 * 62.0)] {
            assert!(
                (three[d] - want / 4096.0).abs() < 1e-15,
                "{d}: {}",
                three[d]
            );
        }
        assert_eq!(
            (binomial(5, 2), binomial(2, 5), binomial(4, 0)),
            (10.0, 0.0, 1.0)
        );
    }

    /// One bit a word is the distinct-bit model itself; from two on, a query whose bits
    /// coincide in a word asks for fewer bits, so the rate is higher than with distinct bits.
    #[test]
    fn coinciding_bits_raise_the_sector_rate() {
        let distinct_model = |items: u64, num_bits: u64, p: usize| {
            // The word rate with distinct query bits, term by term over the line's load.
            let mut total = 0.0;
            for_each_line_load(items, num_bits / LINE_BITS, LineLoads::Exact, |n, pmf| {
                let word: f64 = (0..=p)
                    .map(|j| {
                        let sign = if j % 2 == 0 { 1.0 } else { -1.0 };
                        let unset = (1.0 - j as f64 / 64.0).powi((n as usize * p) as i32);
                        sign * binomial(p, j) * unset
                    })
                    .sum();
                total += pmf * word.clamp(0.0, 1.0).powi(8);
            });
            total
        };
        let (items, num_bits) = (1_000, 50 * 1_000 / 512 * 512);
        let one = sector_fp_rate(items, num_bits, 1);
        assert!(
            (one / distinct_model(items, num_bits, 1) - 1.0).abs() < 1e-9,
            "{one}"
        );
        let two = sector_fp_rate(items, num_bits, 2);
        let ratio = two / distinct_model(items, num_bits, 2);
        assert!((1.1..1.4).contains(&ratio), "{ratio}");
    }

    #[test]
    fn textbook_anchors() {
        assert_eq!(optimal_num_bits(1_000_000, 0.01).unwrap(), 9_585_059);
        assert_eq!(optimal_num_hashes(1_000_000, 9_585_059), 7);
        let m = optimal_num_bits(1_000_000, 0.001).unwrap();
        assert_eq!(optimal_num_hashes(1_000_000, m), 10);
        assert!((bits_per_key(m, 1_000_000) - 14.38).abs() < 0.01);
    }

    #[test]
    fn bad_rates_are_errors() {
        for p in [
            0.0,
            1.0,
            -0.5,
            1.5,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ] {
            assert!(matches!(
                optimal_num_bits(10, p),
                Err(Error::InvalidFpRate { .. })
            ));
            assert!(matches!(
                blocked_num_bits(10, p),
                Err(Error::InvalidFpRate { .. })
            ));
        }
    }

    #[test]
    fn huge_requests_are_errors_not_panics() {
        assert!(matches!(
            optimal_num_bits(u64::MAX, 0.01),
            Err(Error::TooLarge { .. })
        ));
        assert!(matches!(
            blocked_num_bits(u64::MAX, 0.01),
            Err(Error::TooLarge { .. })
        ));
        // Extreme but valid: still terminates with an answer.
        assert!(optimal_num_bits(0, f64::MIN_POSITIVE).is_ok());
    }

    #[test]
    fn zero_items_is_one() {
        assert_eq!(
            optimal_num_bits(0, 0.01).unwrap(),
            optimal_num_bits(1, 0.01).unwrap()
        );
        assert_eq!(
            blocked_num_bits(0, 0.01).unwrap(),
            blocked_num_bits(1, 0.01).unwrap()
        );
    }

    #[test]
    fn blocked_sizing_meets_its_target_at_many_rates() {
        for &p in &[0.5, 0.1, 0.03, 0.01, 0.001, 1e-4, 1e-6] {
            for &n in &[1u64, 10, 1000, 1_000_000] {
                let m = blocked_num_bits(n, p).unwrap();
                let k = blocked_num_hashes(n, m);
                let rate = blocked_plan_fp_rate(n, m, k);
                assert!(rate <= p, "n={n} p={p}: {rate}");
                // The prediction is at most the plan's rate: the plan errs on the safe side.
                // The truth is at most the plan's rate, but for a hair near 50% (where the
                // in-line rate bends the other way and the binomial's smaller spread counts).
                let truth = blocked_fp_rate(n, m, k);
                assert!(truth <= rate * 1.001, "n={n} p={p}: {truth} over {rate}");
                if m > LINE_BITS {
                    // One line fewer would miss: the size is the smallest that works.
                    let smaller = m - LINE_BITS;
                    let k2 = blocked_num_hashes(n, smaller);
                    assert!(blocked_plan_fp_rate(n, smaller, k2) > p, "n={n} p={p}");
                }
                // Blocking never beats the classic layout.
                assert!(m + LINE_BITS >= optimal_num_bits(n, p).unwrap());
            }
        }
    }

    #[test]
    fn blocked_rate_refines_the_sigma_approximation() {
        // The filters.md approximation: 0.954% at 10 bits/key and 6 probes.
        let f = |load: f64, k: f64| (1.0 - (-k * load / 512.0).exp()).powf(k);
        let l: f64 = 51.2;
        let approx = 0.5 * (f(l + l.sqrt(), 6.0) + f(l - l.sqrt(), 6.0));
        assert!((approx - 0.00954).abs() < 0.00001, "{approx}");
        // Ours adds the in-line fill variance: about 1.4% higher at 6 probes.
        let ours = blocked_fp_rate(1_000_000, 10_000_000, 6);
        assert!(
            (1.005..1.02).contains(&(ours / approx)),
            "{ours} vs {approx}"
        );
    }

    /// The in-line rate against an exact occupancy computation (the query's distinct
    /// positions must all be among the set bits; a Markov chain over how many are covered
    /// as the t probes land), for a line of 300 probes.
    #[test]
    fn line_rate_matches_exact_occupancy() {
        let m = LINE_BITS as usize;
        let exact = |t: usize, k: usize| {
            // P(the k query probes hit d distinct positions).
            let mut pd = vec![0.0; k + 1];
            pd[0] = 1.0;
            for _ in 0..k {
                let mut next = vec![0.0; k + 1];
                for d in 0..=k {
                    next[d] += pd[d] * d as f64 / m as f64;
                    if d < k {
                        next[d + 1] += pd[d] * (m - d) as f64 / m as f64;
                    }
                }
                pd = next;
            }
            // P(t random probes cover d given positions).
            (1..=k)
                .map(|d| {
                    let mut c = vec![0.0; d + 1];
                    c[0] = 1.0;
                    for _ in 0..t {
                        for i in (0..d).rev() {
                            let hit = c[i] * (d - i) as f64 / m as f64;
                            c[i] -= hit;
                            c[i + 1] += hit;
                        }
                    }
                    pd[d] * c[d]
                })
                .sum::<f64>()
        };
        for k in [6usize, 8, 10, 12] {
            let want = exact(300, k);
            let got = line_fp_rate(300.0 / k as f64, k as f64);
            assert!((got / want - 1.0).abs() < 0.001, "k={k}: {got} vs {want}");
        }
    }

    /// The binomial load sums to one and has the binomial's mean, from one line (where the
    /// load is every key) to many; the Poisson load agrees where lines are many.
    #[test]
    fn line_loads_are_distributions() {
        for (items, lines) in [
            (0u64, 1u64),
            (7, 1),
            (10, 3),
            (1_000, 20),
            (1_000_000, 100_000),
        ] {
            let (mut mass, mut mean) = (0.0, 0.0);
            for_each_line_load(items, lines, LineLoads::Exact, |load, pmf| {
                assert!(load <= items, "{items} {lines}: load {load}");
                mass += pmf;
                mean += pmf * load as f64;
            });
            let want = items as f64 / lines as f64;
            assert!((mass - 1.0).abs() < 1e-9, "{items} {lines}: mass {mass}");
            assert!(
                (mean - want).abs() < 1e-6 * want.max(1.0),
                "{items} {lines}: {mean}"
            );
        }
        // One line holds every key; the Poisson model spreads them and over-predicts.
        let one_line = blocked_fp_rate(10, 512, 6);
        assert!(
            (one_line - line_fp_rate(10.0, 6.0)).abs() < 1e-15,
            "{one_line}"
        );
        assert!(blocked_plan_fp_rate(10, 512, 6) > 1.5 * one_line);
        // Many lines: the two models meet.
        let (exact, poisson) = (
            blocked_fp_rate(1_000_000, 10_000_000, 6),
            blocked_plan_fp_rate(1_000_000, 10_000_000, 6),
        );
        assert!((exact / poisson - 1.0).abs() < 1e-4, "{exact} {poisson}");
    }

    /// The incremental sum equals the term-by-term definition (what the sizing used before
    /// it was made fast), across loads from a key per hundred lines to saturation.
    #[test]
    fn incremental_blocked_rate_equals_the_definition() {
        let definition = |items: u64, num_bits: u64, k: u32| {
            let mean = items as f64 / (num_bits / LINE_BITS) as f64;
            let sd = mean.sqrt();
            let lo = (mean - 12.0 * sd - 10.0).max(0.0).floor() as u64;
            let hi = (mean + 12.0 * sd + 10.0).ceil() as u64;
            let ln_fact: f64 = (2..=lo).map(|i| (i as f64).ln()).sum();
            let mut ln_pmf = -mean + lo as f64 * mean.ln() - ln_fact;
            let mut total = 0.0;
            for j in lo..=hi {
                total += ln_pmf.exp() * line_fp_rate(j as f64, k as f64);
                ln_pmf += mean.ln() - ((j + 1) as f64).ln();
            }
            total.min(1.0)
        };
        for (items, bits) in [
            (10, 512_000),
            (1_000, 10_240),
            (1_000_000, 9_918_464),
            (5_000, 512),
        ] {
            for k in [1, 6, 10, 20] {
                let fast = blocked_plan_fp_rate(items, bits, k);
                let slow = definition(items, bits, k);
                assert!(
                    (fast - slow).abs() <= 1e-9 * slow.max(1e-300),
                    "{items} {bits} {k}"
                );
            }
        }
        for n in [0u64, 1, 5, 19, 20, 21, 100, 100_000] {
            let exact: f64 = (2..=n).map(|i| (i as f64).ln()).sum();
            assert!(
                (ln_factorial(n) - exact).abs() < 1e-9 * exact.max(1.0),
                "{n}"
            );
        }
    }

    #[test]
    fn estimates_are_finite_at_the_edges() {
        assert!(estimated_count(1000, 1000, 7) > 0);
        assert_eq!(estimated_count(0, 0, 7), 0);
        assert_eq!(estimated_fp_rate(1000, 1000, 7), 1.0);
        assert_eq!(classic_fp_rate(10, 0, 7), 1.0);
    }
}
