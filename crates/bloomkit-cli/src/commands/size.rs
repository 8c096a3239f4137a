//! `bloomkit size`: how big a filter of each kind must be, without building one.

use crate::error::Result;
use crate::kinds::KINDS;
use crate::{human, output};

/// Prints, for each filter kind, the bits, bytes, bits per key, hashes and predicted
/// false-positive rate of a filter for `items` keys at `fp_rate`, and a note on each kind
/// whose row needs one.
///
/// Arithmetic from the library's sizing plans: nothing the size of the filter is allocated,
/// so a request for 10^12 keys answers at once.
///
/// A kind that cannot make such a filter (a rate its fingerprints cannot reach, a size past
/// what it can address) gets a row of dashes and its reason below the table.
///
/// # Errors
///
/// A rate outside (0, 1), or a filter that no kind can make: the first kind's reason.
pub fn run(items: u64, fp_rate: f64) -> Result<()> {
    let mut rows = Vec::new();
    let mut notes = String::new();
    let mut first_error = None;
    let width = KINDS.iter().map(|kind| kind.name.len()).max().unwrap_or(0) + 1;
    for kind in &KINDS {
        // The same plans the constructors build, so `size` never promises a filter that
        // `build` would make differently (or refuse).
        let size = match (kind.size)(items, fp_rate) {
            Ok(size) => size,
            Err(e) => {
                let mut row = vec![kind.name.to_string()];
                row.extend(std::iter::repeat_n("-".to_string(), 5));
                rows.push(row);
                notes.push_str(&format!("{:<width$} {e}\n", format!("{}:", kind.name)));
                first_error.get_or_insert(e);
                continue;
            }
        };
        rows.push(vec![
            kind.name.to_string(),
            human::count(size.num_bits),
            human::bytes(size.num_bits.div_ceil(8)),
            format!(
                "{:.2}",
                bloomkit::sizing::bits_per_key(size.num_bits, items)
            ),
            size.num_hashes
                .map_or_else(|| "-".to_string(), |k| k.to_string()),
            human::percent_sig(size.fp_rate),
        ]);
        if !kind.size_note.is_empty() {
            notes.push_str(&format!(
                "{:<width$} {}\n",
                format!("{}:", kind.name),
                kind.size_note
            ));
        }
    }
    if let Some(e) = first_error.filter(|_| rows.iter().all(|row| row[1] == "-")) {
        return Err(e.into());
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
