//! `bloomkit size`: how big a filter must be, without building one.

use bloomkit::sizing::{self, MAX_NUM_HASHES};

use crate::error::{Error, Result};
use crate::{human, output};

/// Prints, for each filter kind, the bits, bytes, bits per key, hashes and predicted
/// false-positive rate of a filter for `items` keys at `fp_rate`.
///
/// Pure arithmetic from [`bloomkit::sizing`]: nothing is allocated, so a request for 10^12
/// keys answers at once.
///
/// # Errors
///
/// A rate outside (0, 1) or too small to reach, or a filter too large to address.
pub fn run(items: u64, fp_rate: f64) -> Result<()> {
    let classic_bits = sizing::optimal_num_bits(items, fp_rate)?;
    check_reachable(items, fp_rate, classic_bits)?;
    // `BloomFilter` rounds its bits up to whole 64-bit words.
    let classic_bits = classic_bits
        .div_ceil(64)
        .checked_mul(64)
        .ok_or(bloomkit::Error::TooLarge { num_bits: u64::MAX })?;
    let classic_hashes = sizing::optimal_num_hashes(items, classic_bits);
    let classic_rate = sizing::classic_fp_rate(items, classic_bits, classic_hashes);

    let blocked_bits = sizing::blocked_num_bits(items, fp_rate)?;
    let blocked_hashes = sizing::blocked_num_hashes(items, blocked_bits);
    let blocked_rate = sizing::blocked_fp_rate(items, blocked_bits, blocked_hashes);

    let row = |kind: &str, bits: u64, hashes: u32, rate: f64| {
        vec![
            kind.to_string(),
            human::count(bits),
            human::bytes(bits.div_ceil(8)),
            format!("{:.2}", sizing::bits_per_key(bits, items)),
            hashes.to_string(),
            human::percent_sig(rate),
        ]
    };
    let table = human::table(
        &[
            "kind",
            "bits",
            "bytes",
            "bits/key",
            "hashes",
            "predicted rate",
        ],
        &[
            row("classic", classic_bits, classic_hashes, classic_rate),
            row("blocked", blocked_bits, blocked_hashes, blocked_rate),
        ],
    );
    output::print(&format!(
        "a filter for {} at a false-positive rate of at most {}:\n\n{table}\n\
         atomic has the same layout, size and rate as blocked (it is a blocked filter whose\n\
         words are atomic, so threads can insert at once).\n",
        human::count_of(items, "key", "keys"),
        human::percent_sig(fp_rate),
    ))
}

/// Refuses a rate that needs more than [`MAX_NUM_HASHES`] probes, as building the filter
/// would, so that `size` never plans a filter `build` rejects.
///
/// This repeats the library's own check (`sizing::check_reachable`, which is crate-private):
/// the optimal probe count (m/n)·ln 2 of the classic size, before clamping.
fn check_reachable(items: u64, fp_rate: f64, classic_bits: u64) -> Result<()> {
    let ideal = (sizing::bits_per_key(classic_bits, items) * std::f64::consts::LN_2).round();
    if ideal > f64::from(MAX_NUM_HASHES) {
        return Err(Error::Plain(bloomkit::Error::FpRateTooSmall {
            fp_rate,
            num_hashes: ideal as u64,
        }));
    }
    Ok(())
}
