//! `bloomkit.open(path)`: a blocked or classic filter queried in place, in a memory-mapped
//! file, through the library's views (`BlockedBloomFilterRef`, `BloomFilterRef`).
//!
//! Nothing is copied: opening maps the file and checks its header (and, unless
//! `verify=False`, its checksum); each query touches only the bytes it probes, which the
//! operating system pages in. The map and the view that borrows it live together in a
//! `self_cell`, and closing drops both.

use std::fs::File;
use std::path::{Path, PathBuf};

use bloomkit::{BlockedBloomFilterRef, BloomFilterRef, Error, FilterKind};
use memmap2::Mmap;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::errors::{to_py, Source};
use crate::files::os_error;
use crate::filter::{query_many, PyFilter};
use crate::keys::hash_key;

/// The bytes a view reads: the mapped file, or nothing for an empty file (which cannot be
/// mapped, and is not a filter).
enum Mapping {
    File(Mmap),
    Empty,
}

impl Mapping {
    fn bytes(&self) -> &[u8] {
        match self {
            Mapping::File(map) => map,
            Mapping::Empty => &[],
        }
    }
}

/// A view of either kind that can be read in place.
enum View<'a> {
    Blocked(BlockedBloomFilterRef<'a>),
    Classic(BloomFilterRef<'a>),
}

self_cell::self_cell!(
    /// A mapped file and the view that reads it.
    struct MappedView {
        owner: Mapping,
        #[covariant]
        dependent: View,
    }
);

impl View<'_> {
    fn key_hasher(&self) -> bloomkit::KeyHasher {
        match self {
            View::Blocked(v) => v.key_hasher(),
            View::Classic(v) => v.key_hasher(),
        }
    }

    fn contains_hash(&self, hash: u64) -> bool {
        match self {
            View::Blocked(v) => v.contains_hash(hash),
            View::Classic(v) => v.contains_hash(hash),
        }
    }

    fn contains_many_hashes(&self, hashes: &[u64], answers: &mut Vec<bool>) {
        match self {
            View::Blocked(v) => v.contains_many_hashes(hashes, answers),
            View::Classic(v) => answers.extend(hashes.iter().map(|&h| v.contains_hash(h))),
        }
    }

    fn kind(&self) -> FilterKind {
        match self {
            View::Blocked(_) => FilterKind::Blocked,
            View::Classic(_) => FilterKind::Classic,
        }
    }
}

/// A blocked or classic filter in a memory-mapped file, queried in place: what
/// ``bloomkit.open(path)`` returns.
///
/// Read-only and set-like for queries (``in``, ``contains_many``, ``len``), with the
/// filter's own seed and key hashing. A context manager: ``with bloomkit.open(path) as f:``
/// closes the mapping at the end; after ``close()`` every query raises ``ValueError``.
/// While it is open, the file must not be truncated or rewritten in place (replacing it,
/// as ``save`` does, is fine: the mapping keeps the old file).
#[pyclass(module = "bloomkit", name = "MappedFilter")]
pub(crate) struct PyMappedFilter {
    view: Option<MappedView>,
    path: PathBuf,
}

impl PyMappedFilter {
    fn view(&self) -> PyResult<&View<'_>> {
        match &self.view {
            Some(mapped) => Ok(mapped.borrow_dependent()),
            None => Err(PyValueError::new_err(format!(
                "the filter mapped from '{}' is closed",
                self.path.display()
            ))),
        }
    }
}

/// Opens `path` as a [`PyMappedFilter`].
fn open_view(path: &Path, verify: bool) -> Result<MappedView, OpenError> {
    let file = File::open(path).map_err(OpenError::Io)?;
    let len = file.metadata().map_err(OpenError::Io)?.len();
    let mapping = if len == 0 {
        Mapping::Empty
    } else {
        // SAFETY: mapping a file is sound as long as no one truncates or rewrites it while
        // it is mapped (a read past a truncated end faults). `bloomkit.open` documents that
        // condition, as every mmap-based reader must; the view only ever reads.
        Mapping::File(unsafe { Mmap::map(&file) }.map_err(OpenError::Io)?)
    };
    MappedView::try_new(mapping, |mapping| {
        let bytes = mapping.bytes();
        // The header names the kind, and says what is wrong with a header that is wrong (a
        // header too short to tell is the view's to call truncated).
        let kind = match bloomkit::format::peek_header(bytes) {
            Ok(header) => header.map(|h| h.kind),
            Err(error) => {
                return Err(OpenError::Format {
                    offset: crate::files::error_offset(bytes),
                    error,
                })
            }
        };
        if let Some(kind) = kind.filter(|k| !matches!(k, FilterKind::Blocked | FilterKind::Classic))
        {
            return Err(OpenError::OtherKind(kind));
        }
        let view = if kind == Some(FilterKind::Classic) {
            let view = if verify {
                BloomFilterRef::from_bytes(bytes)
            } else {
                BloomFilterRef::from_bytes_unverified(bytes)
            };
            view.map(View::Classic)
        } else {
            let view = if verify {
                BlockedBloomFilterRef::from_bytes(bytes)
            } else {
                BlockedBloomFilterRef::from_bytes_unverified(bytes)
            };
            view.map(View::Blocked)
        };
        view.map_err(|error| OpenError::Format {
            offset: error_offset(bytes, &error),
            error,
        })
    })
}

/// Why [`open_view`] failed.
enum OpenError {
    Io(std::io::Error),
    /// The file holds a filter of a kind that is not read in place.
    OtherKind(FilterKind),
    /// The file is not a valid filter.
    Format {
        error: Error,
        offset: u64,
    },
}

/// Where in `bytes` a view found `error`: the end of the data if it is truncated, the
/// checksum's place for a mismatch, the end of the filter if bytes follow it; any other
/// error is in the header, and is found where the owned reader finds it (which stops there,
/// before the payload).
fn error_offset(bytes: &[u8], error: &Error) -> u64 {
    let header = bloomkit::format::peek_header(bytes).ok().flatten();
    match (error, header) {
        (Error::Truncated, _) => bytes.len() as u64,
        (Error::ChecksumMismatch { .. }, Some(h)) => h.encoded_len.saturating_sub(8),
        (Error::TrailingBytes { .. }, Some(h)) => h.encoded_len,
        _ => crate::files::error_offset(bytes),
    }
}

/// Maps the blocked or classic filter in the file `path` and queries it in place.
///
/// Opening reads the header and, unless ``verify=False``, every byte once for the checksum
/// (at memory speed); nothing is copied. With ``verify=False`` opening costs the header
/// only, whatever the filter's size, for a file already checked (a damaged payload then
/// gives wrong answers, false negatives included, where ``verify=True`` refuses it). Other
/// kinds are read into memory with ``bloomkit.load``.
#[pyfunction]
#[pyo3(signature = (path, *, verify = true))]
pub(crate) fn open(py: Python<'_>, path: PathBuf, verify: bool) -> PyResult<PyMappedFilter> {
    match py.detach(|| open_view(&path, verify)) {
        Ok(view) => Ok(PyMappedFilter {
            view: Some(view),
            path,
        }),
        Err(OpenError::Io(e)) => Err(os_error(e, &path, "cannot open filter")),
        Err(OpenError::OtherKind(kind)) => Err(PyValueError::new_err(format!(
            "file '{}' holds {} {kind} filter: open() maps blocked and classic filters, which \
             it can query in place; read this one with bloomkit.load",
            path.display(),
            crate::article(kind.name())
        ))),
        Err(OpenError::Format { error, offset }) => {
            let source = path.to_string_lossy();
            Err(crate::errors::read_error(
                py,
                Source::File(&source),
                offset,
                error,
            ))
        }
    }
}

#[pymethods]
impl PyMappedFilter {
    /// Whether `key` may be in the filter, as the filter read into memory answers.
    fn __contains__(&self, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let view = self.view()?;
        Ok(view.contains_hash(hash_key(key, view.key_hasher())?))
    }

    /// Answers for every key of `keys`, as ``Filter.contains_many``.
    #[pyo3(signature = (keys, *, key_size = None))]
    fn contains_many<'py>(
        slf: PyRef<'py, Self>,
        keys: &Bound<'py, PyAny>,
        key_size: Option<usize>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let view = slf.view()?;
        query_many(keys, key_size, view.key_hasher(), |hashes, found| {
            view.contains_many_hashes(hashes, found)
        })
    }

    /// The count the file records: the filter's ``len``.
    fn __len__(&self) -> PyResult<usize> {
        let count = match self.view()? {
            View::Blocked(v) => v.len(),
            View::Classic(v) => v.len(),
        };
        Ok(usize::try_from(count).unwrap_or(usize::MAX))
    }

    /// ``"blocked"`` or ``"classic"``.
    #[getter]
    fn kind(&self) -> PyResult<&'static str> {
        Ok(self.view()?.kind().name())
    }

    /// Bits in the filter.
    #[getter]
    fn num_bits(&self) -> PyResult<u64> {
        Ok(match self.view()? {
            View::Blocked(v) => v.num_bits(),
            View::Classic(v) => v.num_bits(),
        })
    }

    /// Probes per key.
    #[getter]
    fn num_hashes(&self) -> PyResult<u32> {
        Ok(match self.view()? {
            View::Blocked(v) => v.num_hashes(),
            View::Classic(v) => v.num_hashes(),
        })
    }

    /// The seed keys are hashed with: the file's.
    #[getter]
    fn seed(&self) -> PyResult<u64> {
        Ok(self.view()?.key_hasher().seed())
    }

    /// The false-positive rate a query risks, from the fill (reads every byte).
    #[getter]
    fn estimated_fp_rate(&self) -> PyResult<f64> {
        Ok(match self.view()? {
            View::Blocked(v) => v.estimated_fp_rate(),
            View::Classic(v) => v.estimated_fp_rate(),
        })
    }

    /// The size of the mapped file in bytes.
    #[getter]
    fn file_bytes(&self) -> PyResult<usize> {
        Ok(match self.view()? {
            View::Blocked(v) => v.as_bytes().len(),
            View::Classic(v) => v.as_bytes().len(),
        })
    }

    /// The path the filter was mapped from.
    #[getter]
    fn path(&self) -> String {
        self.path.to_string_lossy().into_owned()
    }

    /// Whether ``close()`` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.view.is_none()
    }

    /// A copy in memory: a ``BlockedBloomFilter`` or ``BloomFilter`` that can change.
    fn to_filter<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let owned = match self.view()? {
            View::Blocked(v) => v.to_filter().map(bloomkit::AnyFilter::from),
            View::Classic(v) => v.to_filter().map(bloomkit::AnyFilter::from),
        };
        PyFilter::wrap(py, owned.map_err(|e| to_py(py, e))?, None)
    }

    /// Unmaps the file. Queries afterwards raise ``ValueError``; closing again does
    /// nothing.
    fn close(&mut self) {
        self.view = None;
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __exit__(
        &mut self,
        _kind: &Bound<'_, PyAny>,
        _value: &Bound<'_, PyAny>,
        _traceback: &Bound<'_, PyAny>,
    ) {
        self.close();
    }

    fn __repr__(&self) -> String {
        match self.view() {
            Ok(view) => format!(
                "<bloomkit.MappedFilter {} '{}'>",
                view.kind().name(),
                self.path.display()
            ),
            Err(_) => format!("<bloomkit.MappedFilter closed '{}'>", self.path.display()),
        }
    }
}
