//! bloomkit's errors as Python exceptions, with the library's messages.
//!
//! The exception classes are Python's (`python/bloomkit/_errors.py`), since an
//! `InvalidFilterError` is both a `BloomkitError` and a `ValueError` and PyO3's exception
//! types have one base. They are looked up once, on the first error.

use bloomkit::Error;
use pyo3::exceptions::{PyMemoryError, PyOSError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;

/// The Python exception classes, by name in `bloomkit._errors`.
#[derive(Clone, Copy)]
pub(crate) enum Class {
    /// The base: errors no other class names.
    Bloomkit,
    /// Bytes or a file that are not a valid filter.
    InvalidFilter,
    /// A parameter out of range, or filters that cannot be merged.
    Parameter,
    /// A full filter.
    Full,
}

impl Class {
    fn name(self) -> &'static str {
        match self {
            Class::Bloomkit => "BloomkitError",
            Class::InvalidFilter => "InvalidFilterError",
            Class::Parameter => "ParameterError",
            Class::Full => "FilterFullError",
        }
    }

    /// The class object.
    fn get(self, py: Python<'_>) -> PyResult<Bound<'_, PyType>> {
        static MODULE: PyOnceLock<Py<PyModule>> = PyOnceLock::new();
        let module = MODULE.get_or_try_init(py, || {
            PyModule::import(py, "bloomkit._errors").map(Bound::unbind)
        })?;
        Ok(module
            .bind(py)
            .getattr(self.name())?
            .cast_into::<PyType>()?)
    }

    /// An exception of this class with `message`.
    pub(crate) fn err(self, py: Python<'_>, message: impl Into<String>) -> PyErr {
        match self
            .get(py)
            .and_then(|class| class.call1((message.into(),)))
        {
            Ok(instance) => PyErr::from_value(instance),
            Err(failed) => failed,
        }
    }
}

/// Where bytes that failed to read as a filter came from, for the message.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Source<'a> {
    /// Bytes handed over in memory (`from_bytes`, unpickling).
    Bytes,
    /// A file, by the path as the caller gave it.
    File(&'a str),
}

impl Source<'_> {
    fn describe(&self) -> String {
        match self {
            Source::Bytes => "the bytes".to_string(),
            Source::File(path) => format!("file '{path}'"),
        }
    }

    fn path(&self) -> Option<&str> {
        match self {
            Source::Bytes => None,
            Source::File(path) => Some(path),
        }
    }
}

/// An `InvalidFilterError` for data from `source` found wrong at `offset`: the message
/// names both, then says what is wrong.
pub(crate) fn invalid_filter(
    py: Python<'_>,
    source: Source<'_>,
    offset: u64,
    reason: &str,
) -> PyErr {
    let message = format!("{}, offset {offset}: {reason}", source.describe());
    let made = Class::InvalidFilter
        .get(py)
        .and_then(|class| class.call1((message, source.path(), offset)));
    match made {
        Ok(instance) => PyErr::from_value(instance),
        Err(failed) => failed,
    }
}

/// A library error met reading data from `source`: an `InvalidFilterError` naming the
/// source and `offset` when the data is not a valid filter, the usual class for anything
/// else (an I/O or memory error).
pub(crate) fn read_error(py: Python<'_>, source: Source<'_>, offset: u64, error: Error) -> PyErr {
    match error {
        // The library's words point at its Rust readers; a Python caller has one reader.
        Error::TrailingBytes { extra } => invalid_filter(
            py,
            source,
            offset,
            &format!(
                "{extra} unexpected bytes follow the filter; pass only the filter's bytes, \
                 which the header's length gives"
            ),
        ),
        Error::BadMagic
        | Error::UnsupportedVersion { .. }
        | Error::WrongKind { .. }
        | Error::UnknownKind { .. }
        | Error::UnknownHashAlgorithm { .. }
        | Error::Truncated
        | Error::ChecksumMismatch { .. }
        | Error::Corrupt { .. } => invalid_filter(py, source, offset, &error.to_string()),
        _ => to_py(py, error),
    }
}

/// A library error that is not about data read (those go through [`invalid_filter`], which
/// knows where they came from), as the Python exception a caller expects for it.
pub(crate) fn to_py(py: Python<'_>, error: Error) -> PyErr {
    let message = error.to_string();
    match error {
        Error::InvalidFpRate { .. }
        | Error::FpRateTooSmall { .. }
        | Error::InvalidParameter { .. }
        | Error::ZeroBits
        | Error::InvalidNumHashes { .. }
        | Error::InvalidSectorNumHashes { .. }
        | Error::Incompatible { .. } => Class::Parameter.err(py, message),
        Error::Full { .. } => Class::Full.err(py, message),
        Error::TooLarge { .. } | Error::OutOfMemory { .. } => PyMemoryError::new_err(message),
        Error::Io(e) => PyOSError::new_err(format!("I/O error: {e}")),
        _ => Class::Bloomkit.err(py, message),
    }
}

/// Turns a library `Result` into a Python one ([`to_py`]).
pub(crate) trait OrRaise<T> {
    /// The value, or the error as a Python exception.
    fn or_raise(self, py: Python<'_>) -> PyResult<T>;
}

impl<T> OrRaise<T> for bloomkit::Result<T> {
    fn or_raise(self, py: Python<'_>) -> PyResult<T> {
        self.map_err(|e| to_py(py, e))
    }
}
