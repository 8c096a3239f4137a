//! Writing results to standard output.
//!
//! `println!` panics when stdout is closed (`bloomkit info f | head -1`); these return the
//! error instead, which `main` treats as the reader having seen enough.

use std::io::{self, Write};

use crate::error::{Context, Result};

/// What we were doing when a write to stdout fails.
pub fn doing() -> String {
    "cannot write to standard output".to_string()
}

/// Writes `text` to stdout as it is (include the final newline).
///
/// # Errors
///
/// The I/O error, for example a closed pipe.
pub fn print(text: &str) -> Result<()> {
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes()).context(doing)?;
    out.flush().context(doing)
}
