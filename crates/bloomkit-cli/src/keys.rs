//! Keys as lines of bytes: how `build` and `query` read their input.
//!
//! A key is a line's bytes without its trailing `\n` (and without a `\r` just before it, so
//! files written on Windows give the same keys). Lines need not be UTF-8: a key is hashed as
//! raw bytes with [`bloomkit::hash_bytes`], which equals [`bloomkit::hash`] of a `str` with
//! the same bytes, so `f.contains("apple")` in a program finds the line `apple`. An empty
//! line is the empty key; a final line without `\n` is still a key.

use std::io::{self, BufRead};

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
