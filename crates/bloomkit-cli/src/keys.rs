//! Keys as lines of bytes, or as arguments: how `build`, `query`, `insert` and `remove`
//! read them.
//!
//! A key is a line's bytes without its trailing `\n` (and without a `\r` just before it, so
//! files written on Windows give the same keys). Lines need not be UTF-8: a key is hashed as
//! raw bytes with [`bloomkit::hash_bytes`], which equals [`bloomkit::hash`] of a `str` with
//! the same bytes, so `f.contains("apple")` in a program finds the line `apple`. An empty
//! line is the empty key; a final line without `\n` is still a key. A key given as an
//! argument is the argument's bytes, so it hashes as the same line would.

use std::ffi::OsString;
use std::io::{self, BufRead, IsTerminal};
use std::ops::ControlFlow;

use crate::error::{Context, Error, Result};

/// Reads keys one line at a time, reusing one buffer.
pub struct KeyReader<R> {
    reader: R,
    line: Vec<u8>,
    /// Bytes consumed from `reader`, newlines included: what a progress bar over a file's
    /// size needs.
    bytes_read: u64,
}

impl<R: BufRead> KeyReader<R> {
    /// Keys from `reader`.
    pub fn new(reader: R) -> Self {
        KeyReader {
            reader,
            line: Vec::new(),
            bytes_read: 0,
        }
    }

    /// The next key, or `None` at the end of the input.
    ///
    /// # Errors
    ///
    /// Any I/O error from the reader.
    pub fn next_key(&mut self) -> io::Result<Option<&[u8]>> {
        self.line.clear();
        let n = self.reader.read_until(b'\n', &mut self.line)?;
        if n == 0 {
            return Ok(None);
        }
        self.bytes_read += n as u64;
        let mut key = &self.line[..];
        if let Some(rest) = key.strip_suffix(b"\n") {
            key = rest.strip_suffix(b"\r").unwrap_or(rest);
        }
        Ok(Some(key))
    }

    /// Bytes consumed so far, newlines included.
    pub fn bytes_read(&self) -> u64 {
        self.bytes_read
    }
}

/// Keys given on the command line: each argument is a key, except `-`, which stands for the
/// lines of standard input; no arguments at all also mean standard input.
pub struct KeyArgs<'a> {
    args: &'a [OsString],
}

impl<'a> KeyArgs<'a> {
    /// The keys `args` name.
    ///
    /// # Errors
    ///
    /// `-` given more than once: standard input can be read only once.
    pub fn new(args: &'a [OsString]) -> Result<Self> {
        if args.iter().filter(|arg| *arg == "-").count() > 1 {
            return Err(Error::Message(
                "'-' (standard input) is given more than once; give it once, or put the key '-' \
                 itself on standard input"
                    .to_string(),
            ));
        }
        Ok(KeyArgs { args })
    }

    /// Whether some keys come from standard input.
    pub fn reads_stdin(&self) -> bool {
        self.args.is_empty() || self.args.iter().any(|arg| arg == "-")
    }

    /// Calls `each` with every key in order, until it breaks.
    ///
    /// # Errors
    ///
    /// A failed read of standard input, or `each`'s error.
    pub fn for_each(&self, mut each: impl FnMut(&[u8]) -> Result<ControlFlow<()>>) -> Result<()> {
        let stdin_only = [OsString::from("-")];
        let args = if self.args.is_empty() {
            &stdin_only[..]
        } else {
            self.args
        };
        for arg in args {
            if arg != "-" {
                if each(&os_bytes(arg))?.is_break() {
                    return Ok(());
                }
                continue;
            }
            tell_if_typed();
            let mut reader = KeyReader::new(io::stdin().lock());
            while let Some(key) = reader
                .next_key()
                .context(|| "cannot read keys from standard input".to_string())?
            {
                if each(key)?.is_break() {
                    return Ok(());
                }
            }
        }
        Ok(())
    }
}

/// Says on standard error that keys are awaited, when standard input is a terminal: a
/// command run without keys (or with `-`) would otherwise sit silent, waiting for them.
pub fn tell_if_typed() {
    if io::stdin().is_terminal() {
        eprintln!(
            "bloomkit: reading keys from the terminal, one per line; {END_OF_INPUT} on a line of \
             its own ends them"
        );
    }
}

/// The keys that end a terminal's input.
#[cfg(not(windows))]
const END_OF_INPUT: &str = "Ctrl-D";
/// The keys that end a terminal's input.
#[cfg(windows)]
const END_OF_INPUT: &str = "Ctrl-Z then Enter";

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

#[cfg(test)]
mod tests {
    use super::*;

    fn all_keys(input: &[u8]) -> Vec<Vec<u8>> {
        let mut reader = KeyReader::new(input);
        let mut keys = Vec::new();
        while let Some(key) = reader.next_key().unwrap() {
            keys.push(key.to_vec());
        }
        assert_eq!(reader.bytes_read(), input.len() as u64);
        keys
    }

    #[test]
    fn lines_without_their_endings() {
        assert_eq!(all_keys(b"a\nbb\r\nc"), [&b"a"[..], b"bb", b"c"]);
        assert_eq!(all_keys(b"a\n"), [b"a"]);
        assert!(all_keys(b"").is_empty());
    }

    #[test]
    fn empty_lines_are_empty_keys() {
        assert_eq!(all_keys(b"\n\r\nx\n"), [&b""[..], b"", b"x"]);
    }

    #[test]
    fn bytes_are_kept_as_they_are() {
        // Not UTF-8, a lone \r inside a line, and a \r at the very end without \n.
        assert_eq!(
            all_keys(b"\xff\x00\n a\rb \nz\r"),
            [&b"\xff\x00"[..], b" a\rb ", b"z\r"]
        );
    }

    #[test]
    fn line_keys_hash_like_library_strings() {
        let keys = all_keys(b"apple\r\n");
        assert_eq!(bloomkit::hash_bytes(&keys[0]), bloomkit::hash("apple"));
    }
}
