//! `bloomkit query`: ask a filter about keys.

use std::ffi::OsString;
use std::io::{self, BufWriter, IsTerminal, Write};
use std::ops::ControlFlow;
use std::path::Path;

use crate::error::{Context, Error, Result};
use crate::files;
use crate::keys::KeyArgs;
use crate::output;

/// What the answers were, for the exit status of `query -q`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answers {
    /// Every key may be in the filter.
    AllMaybe,
    /// Some key is definitely not in it.
    SomeAbsent,
}

/// Answers, for each key in `keys` (`-`, or no keys at all, for the lines of stdin), one
/// line: `maybe<TAB>key` or `no<TAB>key`, in input order. With `quiet`, prints nothing and
/// stops at the first key that is definitely absent.
///
/// # Errors
///
/// An unreadable filter, unreadable stdin, both the filter and the keys on stdin, or a
/// failed write to stdout.
pub fn run(path: &Path, keys: &[OsString], quiet: bool) -> Result<Answers> {
    let keys = KeyArgs::new(keys)?;
    if files::is_dash(path) && keys.reads_stdin() {
        return Err(Error::Message(
            "the filter and the keys cannot both come from standard input; give the keys as \
             arguments, or the filter as a file"
                .to_string(),
        ));
    }
    let filter = files::load_readable(path)?;
    let contains = |key: &[u8]| match &filter {
        // Files written by a library user may have a seed other than the default; keys must
        // be hashed with the filter's own.
        files::Readable::Library(loaded) => loaded
            .filter
            .contains_hash(bloomkit::hash_bytes_with_seed(key, loaded.filter.seed())),
        files::Readable::Imported { filter, .. } => filter.contains(key),
    };
    let mut answers = Answers::AllMaybe;

    if quiet {
        keys.for_each(|key| {
            if contains(key) {
                return Ok(ControlFlow::Continue(()));
            }
            answers = Answers::SomeAbsent;
            Ok(ControlFlow::Break(()))
        })?;
        return Ok(answers);
    }
    let mut out = BufWriter::new(io::stdout().lock());
    // Someone typing keys wants each answer at once, not when they press Ctrl-D.
    let flush_each = keys.reads_stdin() && io::stdin().is_terminal();
    keys.for_each(|key| {
        let hit = contains(key);
        if !hit {
            answers = Answers::SomeAbsent;
        }
        write_answer(&mut out, hit, key, flush_each).context(output::doing)?;
        Ok(ControlFlow::Continue(()))
    })?;
    out.flush().context(output::doing)?;
    Ok(answers)
}

/// Writes `maybe<TAB>key` or `no<TAB>key` for one key.
fn write_answer(out: &mut impl Write, hit: bool, key: &[u8], flush: bool) -> io::Result<()> {
    out.write_all(if hit { b"maybe\t" } else { b"no\t" })?;
    out.write_all(key)?;
    out.write_all(b"\n")?;
    if flush {
        out.flush()?;
    }
    Ok(())
}
