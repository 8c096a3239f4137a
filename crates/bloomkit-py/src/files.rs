//! Filters in and out of bytes and files, in bloomkit's format (`docs/FORMAT.md`), with
//! errors that say where the data went wrong.
//!
//! The library's errors say what is wrong with data but not where. Reading goes through
//! [`Tracked`], which remembers where each read the library asked for began, so that an
//! error names the offset of the header field, or the 8 KiB payload chunk, it was found in.

use std::fs::{self, File};
use std::io::{self, BufReader, BufWriter, Read};
use std::path::{Path, PathBuf};

use bloomkit::{AnyFilter, Error, FilterKind};
use pyo3::exceptions::PyOSError;
use pyo3::prelude::*;

use crate::errors::{invalid_filter, read_error, Source};

/// Read buffer for filter files: large enough that system calls are not the cost.
const READ_BUFFER_BYTES: usize = 1 << 20;

/// A reader that counts what it delivers and where the last read began.
struct Tracked<R> {
    inner: R,
    /// Bytes delivered so far.
    pos: u64,
    /// Where the last read began: the field, or payload chunk, being read.
    last: u64,
}

impl<R: Read> Read for Tracked<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.last = self.pos;
        let n = self.inner.read(buf)?;
        self.pos += n as u64;
        Ok(n)
    }

    // The library reads each field and chunk with one `read_exact`: record its start once,
    // and count what arrives even when the data ends partway.
    fn read_exact(&mut self, mut buf: &mut [u8]) -> io::Result<()> {
        self.last = self.pos;
        while !buf.is_empty() {
            match self.inner.read(buf) {
                Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                Ok(n) => {
                    self.pos += n as u64;
                    buf = &mut buf[n..];
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

/// Why reading failed, and where: what [`decode`] returns instead of a filter.
pub(crate) struct DecodeError {
    reason: Reason,
    offset: u64,
}

/// What was wrong with the data.
enum Reason {
    /// The library's error.
    Library(Error),
    /// A valid filter of another kind than the class reading it holds: in Python's words,
    /// since the library's name Rust's types.
    WrongKind {
        found: FilterKind,
        expected: FilterKind,
        /// The method that read it (`load`, `from_bytes`).
        reader: &'static str,
    },
}

impl DecodeError {
    fn wrong_kind(found: FilterKind, expected: FilterKind, reader: &'static str) -> Self {
        DecodeError {
            reason: Reason::WrongKind {
                found,
                expected,
                reader,
            },
            offset: KIND_OFFSET,
        }
    }

    /// The Python exception: an `InvalidFilterError` naming `source` and the offset for data
    /// that is not a filter, the usual class for anything else (an I/O or memory error).
    pub(crate) fn into_py(self, py: Python<'_>, source: Source<'_>) -> PyErr {
        match self.reason {
            Reason::Library(error) => read_error(py, source, self.offset, error),
            Reason::WrongKind {
                found,
                expected,
                reader,
            } => {
                let message = format!(
                    "the data holds {} {found} filter, not {} {expected} filter; read it with \
                     bloomkit.{}.{reader}, or with bloomkit.{reader}, which reads any kind",
                    crate::article(found.name()),
                    crate::article(expected.name()),
                    crate::kinds::class_name(found),
                );
                invalid_filter(py, source, self.offset, &message)
            }
        }
    }
}

/// The bytes a valid file starts with, up to and including its kind: the magic, the format
/// version and the kind code (`docs/FORMAT.md`).
const KIND_END: usize = 12;

/// Offset of the kind code in the header.
const KIND_OFFSET: u64 = 10;

/// The kind a header names, if `prefix` starts like a filter and names a kind this build
/// knows; anything else is left to the full read, which says what is wrong.
fn kind_in(prefix: &[u8]) -> Option<FilterKind> {
    let head = prefix.get(..KIND_END)?;
    if head[..8] != bloomkit::format::MAGIC {
        return None;
    }
    FilterKind::from_code(u16::from_le_bytes([head[10], head[11]]))
}

/// Reads exactly one filter from `reader`, which holds `total` bytes; with `expected`, a
/// filter of that kind only (`reader_name` is the Python call to suggest instead).
fn decode(
    reader: impl Read,
    total: u64,
    expected: Option<(FilterKind, &'static str)>,
) -> Result<AnyFilter, DecodeError> {
    let mut r = Tracked {
        inner: reader,
        pos: 0,
        last: 0,
    };
    let filter = match AnyFilter::read_from(&mut r) {
        Ok(filter) => filter,
        Err(error) => {
            let offset = match error {
                // The magic may arrive in several reads; it starts the data.
                Error::BadMagic => 0,
                // The kind is checked once the whole header is read.
                Error::UnknownKind { .. } | Error::WrongKind { .. } => KIND_OFFSET,
                // Where the data ends, however far the field that needed more began.
                Error::Truncated => r.pos,
                _ => r.last,
            };
            return Err(DecodeError {
                reason: Reason::Library(error),
                offset,
            });
        }
    };
    if let Some((kind, reader_name)) = expected {
        if filter.kind() != kind {
            return Err(DecodeError::wrong_kind(filter.kind(), kind, reader_name));
        }
    }
    // The same check, and message, as the library's from_bytes: one filter, nothing after.
    if total > r.pos {
        return Err(DecodeError {
            reason: Reason::Library(Error::TrailingBytes {
                extra: total - r.pos,
            }),
            offset: r.pos,
        });
    }
    Ok(filter)
}

/// The filter `bytes` hold: exactly one, of the `expected` kind if one is given.
///
/// A header of another kind is refused before the payload is read.
pub(crate) fn from_bytes(
    bytes: &[u8],
    expected: Option<FilterKind>,
) -> Result<AnyFilter, DecodeError> {
    let expected = expected.map(|kind| (kind, "from_bytes"));
    if let (Some((kind, name)), Some(found)) = (expected, kind_in(bytes)) {
        if found != kind {
            return Err(DecodeError::wrong_kind(found, kind, name));
        }
    }
    decode(bytes, bytes.len() as u64, expected)
}

/// Where reading `bytes` as a filter goes wrong (their length if it does not): the offset
/// a [`DecodeError`] for them names.
pub(crate) fn error_offset(bytes: &[u8]) -> u64 {
    match decode(bytes, bytes.len() as u64, None) {
        Ok(_) => bytes.len() as u64,
        Err(e) => e.offset,
    }
}

/// The filter in the file at `path`, as [`from_bytes`] reads bytes; streamed, so memory
/// holds the filter once.
pub(crate) fn load(path: &Path, expected: Option<FilterKind>) -> Result<AnyFilter, LoadError> {
    let file = File::open(path).map_err(LoadError::Io)?;
    let total = file.metadata().map_err(LoadError::Io)?.len();
    let mut reader = BufReader::with_capacity(READ_BUFFER_BYTES, file);
    let expected = expected.map(|kind| (kind, "load"));
    if let Some((kind, name)) = expected {
        let prefix = reader.fill_buf_prefix(KIND_END).map_err(LoadError::Io)?;
        if let Some(found) = kind_in(prefix).filter(|&found| found != kind) {
            return Err(LoadError::Decode(DecodeError::wrong_kind(
                found, kind, name,
            )));
        }
    }
    decode(reader, total, expected).map_err(LoadError::Decode)
}

/// Why [`load`] failed: the file could not be read, or did not hold a filter.
pub(crate) enum LoadError {
    Io(io::Error),
    Decode(DecodeError),
}

impl LoadError {
    /// The Python exception, naming `path`.
    pub(crate) fn into_py(self, py: Python<'_>, path: &Path) -> PyErr {
        match self {
            LoadError::Io(e) => os_error(e, path, "cannot read filter"),
            LoadError::Decode(e) => e.into_py(py, Source::File(&path.to_string_lossy())),
        }
    }
}

/// A look at the start of a buffered file without consuming it.
trait PeekPrefix {
    /// Up to `n` bytes from the current position (fewer only at the end of the file).
    fn fill_buf_prefix(&mut self, n: usize) -> io::Result<&[u8]>;
}

impl<R: Read> PeekPrefix for BufReader<R> {
    fn fill_buf_prefix(&mut self, n: usize) -> io::Result<&[u8]> {
        use std::io::BufRead;
        // A fresh BufReader's first fill holds the file's first READ_BUFFER_BYTES, or all
        // of a shorter file, in one read for a regular file.
        let buf = self.fill_buf()?;
        Ok(&buf[..buf.len().min(n)])
    }
}

/// An `OSError` of the class its errno gives (`FileNotFoundError`, `PermissionError`...),
/// its message saying what was being done, its `filename` the path.
pub(crate) fn os_error(e: io::Error, path: &Path, doing: &str) -> PyErr {
    let what = format!("{doing} '{}': {}", path.display(), strip_os_code(&e));
    match e.raw_os_error() {
        Some(errno) => PyOSError::new_err((errno, what, path.to_string_lossy().into_owned())),
        None => PyOSError::new_err(what),
    }
}

/// An I/O error's text without the "(os error N)" Rust appends (Python shows the errno).
fn strip_os_code(e: &io::Error) -> String {
    let text = e.to_string();
    match text.rfind(" (os error ") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

/// Writes `filter` to `path` atomically: into a temporary file beside it, synced, then
/// renamed over `path`, so a crash or an error leaves the old file or the whole new one,
/// never half a filter.
pub(crate) fn save(filter: &AnyFilter, path: &Path) -> io::Result<()> {
    let name = path.file_name().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "the path names no file; give a file name such as 'keys.bkf'",
        )
    })?;
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let mut temp_name = std::ffi::OsString::from(".");
    temp_name.push(name);
    temp_name.push(format!(".{}.tmp", std::process::id()));
    let temp = dir.join(temp_name);
    let written = (|| {
        let file = File::create(&temp)?;
        let mut out = BufWriter::with_capacity(READ_BUFFER_BYTES, file);
        filter.write_to(&mut out).map_err(into_io)?;
        let file = out.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        fs::rename(&temp, path)
    })();
    if written.is_err() {
        let _ = fs::remove_file(&temp);
    }
    written
}

/// Writes `filter`'s encoding into `buf`, which must be exactly
/// [`AnyFilter::encoded_len`] bytes long.
pub(crate) fn encode_into(filter: &AnyFilter, mut buf: &mut [u8]) -> io::Result<()> {
    filter.write_to(&mut buf).map_err(into_io)?;
    if buf.is_empty() {
        Ok(())
    } else {
        Err(io::Error::other(
            "the filter's encoding is shorter than its encoded_len",
        ))
    }
}

/// A writing error as the I/O error it is (writing fails only in the writer).
fn into_io(e: Error) -> io::Error {
    match e {
        Error::Io(e) => e,
        other => io::Error::other(other.to_string()),
    }
}
