//! `bloomkit merge`: the union of filters built with the same parameters.

use std::path::{Path, PathBuf};

use crate::error::{Context, Error, Result};
use crate::files::{self, OnBusy, Output};
use crate::human;

/// What `merge` was asked for.
pub struct Options<'a> {
    /// The filters to combine (`-` for one read from standard input).
    pub inputs: &'a [PathBuf],
    /// Whether to wait for another process changing the output file.
    pub on_busy: OnBusy,
    /// Where to write the union (`-` for standard output).
    pub output: &'a Path,
    /// The rate the union must not exceed: the inputs' target.
    pub fp_rate: f64,
    /// Write the union even if it is empty or above the target rate.
    pub force: bool,
}

/// Writes a filter holding every key of every input (at least two, all of the same kind,
/// size, number of hashes and seed).
///
/// # Errors
///
/// An output that is also an input; `-` given twice; an unreadable input; filters that differ
/// (naming both files); a union that holds no keys, or whose estimated rate is above
/// `fp_rate`, unless `force`; a failed write. Nothing is left at the output unless the whole
/// filter was written.
pub fn run(options: &Options) -> Result<()> {
    let inputs = options.inputs;
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
    // A bad rate fails before any filter is read (the library checks it as any kind does).
    bloomkit::sizing::classic_plan(1, options.fp_rate)?;
    if inputs.iter().filter(|path| files::is_dash(path)).count() > 1 {
        return Err(Error::Message(
            "'-' (standard input) is given more than once; standard input holds one filter"
                .to_string(),
        ));
    }
    let output = Output::new(options.output, inputs, options.on_busy)?;
    // One filter at a time besides the result, so memory is two filters however many merge.
    let mut merged = files::load_filter(first)?.filter;
    for path in rest {
        let other = files::load_filter(path)?.filter;
        merged.union(&other).context(|| {
            format!(
                "cannot merge {} into {}",
                files::describe_filter(path),
                files::describe_filter(first)
            )
        })?;
    }
    let estimated = merged.estimated_fp_rate();
    if !options.force {
        if merged.is_empty() {
            return Err(Error::Message(format!(
                "the {} filters hold no keys, so their union would be empty; pass --force to \
                 write it anyway",
                inputs.len()
            )));
        }
        if estimated > options.fp_rate {
            return Err(Error::Message(format!(
                "the union of the {} filters holds about {} keys, more than they were sized \
                 for: its estimated false-positive rate is {}, above the target {}; rebuild \
                 the inputs with --items {} (or more), pass the rate they were built for with \
                 --fp-rate, or pass --force to write it anyway",
                inputs.len(),
                human::count(merged.len()),
                human::percent_sig(estimated),
                human::percent_sig(options.fp_rate),
                merged.len(),
            )));
        }
    }
    let file_bytes = output.write(&merged)?;
    output.summary(&format!(
        "wrote {}: {} filter, union of {} filters, {}, about {}, estimated false-positive \
         rate {} (target {})\n",
        output.describe(),
        merged.kind(),
        inputs.len(),
        human::bytes(file_bytes),
        human::count_of(merged.len(), "key", "keys"),
        human::percent_sig(estimated),
        human::percent_sig(options.fp_rate),
    ))
}
