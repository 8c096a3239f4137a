//! `bloomkit size`: how big a filter must be, without building one.

use bloomkit::sizing;

use crate::error::Result;
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
    // The same plans the filters' constructors build, so `size` never promises a filter that
    // `build` would make differently (or refuse).
    let classic = sizing::classic_plan(items, fp_rate)?;
    let blocked = sizing::blocked_plan(items, fp_rate)?;

    let row = |kind: &str, plan: sizing::Plan| {
        vec![
            kind.to_string(),
            human::count(plan.num_bits),
            human::bytes(plan.num_bits.div_ceil(8)),
            format!("{:.2}", sizing::bits_per_key(plan.num_bits, items)),
            plan.num_hashes.to_string(),
            human::percent_sig(plan.fp_rate),
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
        &[row("classic", classic), row("blocked", blocked)],
    );
    output::print(&format!(
        "a filter for {} at a false-positive rate of at most {}:\n\n{table}\n\
         atomic has the same layout, size and rate as blocked (it is a blocked filter whose\n\
         words are atomic, so threads can insert at once).\n",
        human::count_of(items, "key", "keys"),
        human::percent_sig(fp_rate),
    ))
}
