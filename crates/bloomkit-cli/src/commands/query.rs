//! `bloomkit query`: ask a filter about keys.

use std::ffi::OsString;
use std::io::{self, BufWriter, IsTerminal, Write};
use std::path::Path;

use bloomkit::AnyFilter;

use crate::error::{Context, Result};
use crate::files;
use crate::keys::KeyReader;
use crate::output;

/// Answers, for each key in `keys` (or each line of stdin when there are none), one line:
/// `maybe<TAB>key` or `no<TAB>key`, in input order.
///
/// # Errors
///
/// An unreadable filter, unreadable stdin, or a failed write to stdout.
pub fn run(path: &Path, keys: &[OsString]) -> Result<()> {
    let filter = files::load_filter(path)?.filter;
    let mut out = Answers {
        filter: &filter,
        seed: filter.seed(),
        out: BufWriter::new(io::stdout().lock()),
        // Someone typing keys wants each answer at once, not when they press Ctrl-D.
        flush_each: keys.is_empty() && io::stdin().is_terminal(),
    };
    if keys.is_empty() {
        let mut reader = KeyReader::new(io::stdin().lock());
        while let Some(key) = reader
            .next_key()
            .context(|| "cannot read keys from standard input".to_string())?
        {
            out.answer(key).context(output::doing)?;
        }
    } else {
        for key in keys {
            out.answer(&os_bytes(key)).context(output::doing)?;
        }
    }
    out.out.flush().context(output::doing)
}

/// Writes answers for one filter.
struct Answers<'a, W> {
    filter: &'a AnyFilter,
    /// Files written by a library user may have a seed other than the default; keys must be
    /// hashed with the filter's own.
    seed: u64,
    out: W,
    flush_each: bool,
}

impl<W: Write> Answers<'_, W> {
    /// Writes `maybe<TAB>key` or `no<TAB>key` for one key.
    fn answer(&mut self, key: &[u8]) -> io::Result<()> {
        let hit = self
            .filter
            .contains_hash(bloomkit::hash_bytes_with_seed(key, self.seed));
        self.out.write_all(if hit { b"maybe\t" } else { b"no\t" })?;
        self.out.write_all(key)?;
        self.out.write_all(b"\n")?;
        if self.flush_each {
            self.out.flush()?;
        }
        Ok(())
    }
}

/// A command-line argument's bytes, exactly as given, so that a key argument and the same
/// key read as a line of a file hash alike even when they are not UTF-8.
#[cfg(unix)]
fn os_bytes(arg: &OsString) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    arg.as_os_str().as_bytes().to_vec()
}

/// A command-line argument's bytes. Outside Unix arguments are not byte strings; text ones
/// (all but broken UTF-16) convert exactly.
#[cfg(not(unix))]
fn os_bytes(arg: &OsString) -> Vec<u8> {
    arg.to_string_lossy().into_owned().into_bytes()
}
