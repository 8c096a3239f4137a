//! [`rate_curve`]: a classic Bloom filter's false-positive rate against its number of hashes,
//! from the library's sizing math.

use bloomkit::sizing;

/// The rate of an m-bit filter holding n keys for k = 1, 2, …, and where it is lowest.
#[derive(Clone, Debug, PartialEq)]
pub struct RateCurve {
    /// m, the filter's bits.
    pub num_bits: u64,
    /// n, the keys it holds.
    pub items: u64,
    /// `(k, rate)` for k = 1 to the largest asked for: (1 − e^(−kn/m))^k, by
    /// [`sizing::classic_fp_rate`].
    pub points: Vec<(u32, f64)>,
    /// The k that minimises the rate if k could be any real number: (m/n)·ln 2.
    pub optimum_k: f64,
    /// The rate there: half the bits are set, so it is 2^(−k).
    pub optimum_rate: f64,
    /// The whole number of hashes the library would choose, [`sizing::optimal_num_hashes`].
    pub best_k: u32,
}

/// The curve for `num_bits` bits and `items` keys, k from 1 to `max_k`.
///
/// # Examples
///
/// ```
/// let c = bloomkit_wasm::curve::rate_curve(9_585_059, 1_000_000, 12);
/// assert_eq!(c.best_k, 7);
/// assert!((c.optimum_k - 6.64).abs() < 0.01);
/// let at_7 = c.points[6];
/// assert_eq!(at_7.0, 7);
/// assert!((at_7.1 - 0.01).abs() < 0.0005);
/// // Every whole k is at least the optimum's rate.
/// assert!(c.points.iter().all(|&(_, rate)| rate >= c.optimum_rate));
/// ```
pub fn rate_curve(num_bits: u64, items: u64, max_k: u32) -> RateCurve {
    let (num_bits, items) = (num_bits.max(1), items.max(1));
    let optimum_k = num_bits as f64 / items as f64 * std::f64::consts::LN_2;
    RateCurve {
        num_bits,
        items,
        points: (1..=max_k.max(1))
            .map(|k| (k, sizing::classic_fp_rate(items, num_bits, k)))
            .collect(),
        optimum_k,
        optimum_rate: 0.5f64.powf(optimum_k),
        best_k: sizing::optimal_num_hashes(items, num_bits),
    }
}
