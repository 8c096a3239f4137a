//! `bloomkit merge`: the union of filters built with the same parameters.

use std::path::{Path, PathBuf};

use crate::error::{Context, Error, Result};
use crate::{files, human, output};

/// Writes to `output` a filter holding every key of every filter in `inputs` (at least two,
/// all of the same kind, size, number of hashes and seed).
///
/// # Errors
///
/// An unreadable input, filters that differ (naming both files), or a failed write; nothing
/// is left at `output` unless the whole filter was written.
pub fn run(inputs: &[PathBuf], output: &Path) -> Result<()> {
    let Some((first, rest)) = inputs.split_first() else {
        return Err(Error::Message(
            "merge needs at least two filters; give their paths".to_string(),
        ));
    };
    if rest.is_empty() {
        return Err(Error::Message(
            "merge needs at least two filters; to copy one filter, copy its file".to_string(),
        ));
    }
    // One filter at a time besides the result, so memory is two filters however many merge.
    let mut merged = files::load_filter(first)?.filter;
    for path in rest {
        let other = files::load_filter(path)?.filter;
        merged.union(&other).context(|| {
            format!(
                "cannot merge '{}' into '{}'",
                path.display(),
                first.display()
            )
        })?;
    }
    let file_bytes = files::write_filter(output, &merged)?;
    output::print(&format!(
        "wrote {}: {} filter, union of {} filters, {}, about {} keys, estimated \
         false-positive rate {}\n",
        output.display(),
        merged.kind(),
        inputs.len(),
        human::bytes(file_bytes),
        human::count(merged.len()),
        human::percent_sig(merged.estimated_fp_rate()),
    ))
}
