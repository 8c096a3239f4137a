//! `bloomkit size`: how big a filter of each kind must be, without building one.

use bloomkit::sizing::{self, KindPlan};
use bloomkit::FilterKind;

use crate::error::Result;
use crate::{human, kinds, output};

/// The key count whose plan stands for a filter too large for any machine: past it, no
/// kind's bits per key, probes or rate change with the count (the plans' rounding to whole
/// words, lines and buckets is a few parts in a billion of it).
const REFERENCE_KEYS: u64 = 1 << 32;

/// Prints, for each filter kind, the bits, bytes, bits per key, hashes and predicted
/// false-positive rate of a filter for `items` keys at `fp_rate` (for aging, `items` keys in
/// each generation), and a note on each kind whose row needs one.
///
/// Arithmetic from the library's sizing plans ([`sizing::kind_plan`]): nothing the size of
/// the filter is allocated, so a request for 10^12 keys answers at once. A filter past the
/// 2^64 bits a machine can address still answers, marked `≈`: its kind's plan for 2^32
/// keys, scaled to `items`.
///
/// A kind that cannot make such a filter (a rate its fingerprints cannot reach, more keys
/// than it can index) gets a row of dashes and its reason below the table.
///
/// # Errors
///
/// A rate outside (0, 1), or a filter that no kind can make: the first kind's reason.
pub fn run(items: u64, fp_rate: f64) -> Result<()> {
    let mut rows = Vec::new();
    let mut notes = String::new();
    let mut first_error = None;
    let mut scaled_any = false;
    let mut note = |kind: FilterKind, text: &str| {
        notes.push_str(&format!("{}{text}\n", kinds::label(kind.name())));
    };
    for kind in FilterKind::ALL {
        // The plans the constructors build, so `size` never promises a filter that `build`
        // would make differently (or refuse).
        let (plan, scale) = match plan_at_any_size(kind, items, fp_rate) {
            Ok(planned) => planned,
            Err(e) => {
                let mut row = vec![kind.name().to_string()];
                row.extend(std::iter::repeat_n("-".to_string(), 5));
                rows.push(row);
                note(kind, &e.to_string());
                first_error.get_or_insert(e);
                continue;
            }
        };
        let (bits, bytes) = if scale == 1.0 {
            (
                human::count(plan.num_bits),
                human::bytes(plan.num_bits.div_ceil(8)),
            )
        } else {
            scaled_any = true;
            let bits = plan.num_bits as f64 * scale;
            (
                format!("≈{bits:.3e}"),
                format!("≈{}", human::bytes_f64(bits / 8.0)),
            )
        };
        rows.push(vec![
            kind.name().to_string(),
            bits,
            bytes,
            format!("{:.2}", sizing::bits_per_key(plan.num_bits, plan.keys)),
            plan.num_hashes
                .map_or_else(|| "-".to_string(), |k| k.to_string()),
            human::percent_sig(plan.fp_rate),
        ]);
        if !plan.note.is_empty() {
            note(kind, plan.note);
        }
    }
    if let Some(e) = first_error.filter(|_| rows.iter().all(|row| row[1] == "-")) {
        return Err(e.into());
    }
    if scaled_any {
        notes.push_str(
            "≈: past the 2^64 bits (2 EiB) a machine can address, so no such filter can be \
             built; the kind's plan for 2^32 keys, scaled\n",
        );
    }
    let table = human::table(
        &[
            "kind",
            "bits",
            "bytes",
            "bits/key",
            "hashes",
            "predicted rate",
        ],
        &rows,
    );
    output::print(&format!(
        "a filter for {} at a false-positive rate of at most {}:\n\n{table}\n{notes}",
        human::count_of(items, "key", "keys"),
        human::percent_sig(fp_rate),
    ))
}

/// `kind`'s plan for `items` keys and 1; or, for a filter larger than any machine addresses,
/// its plan for [`REFERENCE_KEYS`] and the factor that scales its bits to `items`.
fn plan_at_any_size(
    kind: FilterKind,
    items: u64,
    fp_rate: f64,
) -> bloomkit::Result<(KindPlan, f64)> {
    match sizing::kind_plan(kind, items, fp_rate) {
        Err(bloomkit::Error::TooLarge { .. }) if items > REFERENCE_KEYS => {
            let plan = sizing::kind_plan(kind, REFERENCE_KEYS, fp_rate)?;
            Ok((plan, items as f64 / REFERENCE_KEYS as f64))
        }
        planned => planned.map(|plan| (plan, 1.0)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference plan's bits per key is the one a large filter has, to a part in ten
    /// thousand (a cuckoo table's spare slots, 2·√n, are that share at 2^32 keys), for every
    /// kind that can be built that large.
    #[test]
    fn scaling_the_reference_plan_keeps_bits_per_key() {
        let large = 1u64 << 40;
        for kind in FilterKind::ALL {
            let (Ok(big), Ok(reference)) = (
                sizing::kind_plan(kind, large, 0.01),
                sizing::kind_plan(kind, REFERENCE_KEYS, 0.01),
            ) else {
                continue;
            };
            let per_key = |p: &KindPlan| p.num_bits as f64 / p.keys as f64;
            let drift = (per_key(&big) / per_key(&reference) - 1.0).abs();
            assert!(drift < 1e-4, "{kind}: {drift}");
            assert_eq!(big.num_hashes, reference.num_hashes, "{kind}");
        }
    }
}
