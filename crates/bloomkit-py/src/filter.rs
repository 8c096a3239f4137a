//! `bloomkit.Filter`: the base class of every kind, and what every kind answers.
//!
//! It holds an [`AnyFilter`]; each kind's class (`kinds/`) adds its constructor and what only
//! it does. The groups of methods some kinds share (adding, merging, removing) are written
//! once here and given to their kinds by the macros at the end of this file, each invoked
//! once with the list of kinds that have the capability.

use std::path::PathBuf;

use bloomkit::{AnyFilter, Error, FilterKind, KeyHasher};
use pyo3::exceptions::{PyOverflowError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyType};
use pyo3::PyTypeInfo;

use crate::batch::{answers, buffer_bytes, for_each_chunk, type_name, Stop};
use crate::errors::{to_py, Class, OrRaise, Source};
use crate::files;
use crate::keys::hash_key;
use crate::kinds;

/// A filter of any kind: what every bloomkit filter answers.
///
/// Not made directly: make one of its kinds (`BlockedBloomFilter`, `CuckooFilter`, ...), or
/// read one with `bloomkit.load` or `bloomkit.from_bytes`, which give the kind the data
/// holds. Useful in type hints for code that takes any filter.
#[pyclass(subclass, module = "bloomkit", name = "Filter")]
pub(crate) struct PyFilter {
    pub(crate) inner: AnyFilter,
    /// The rate the filter was made for, where it was made in this process (or unpickled):
    /// the file format stores a Bloom, counting, cuckoo or aging filter's shape, not its
    /// target.
    target: Option<f64>,
    /// `inner`'s key hasher (its seed and feed), which nothing changes: kept at hand, since
    /// every key asks for it.
    hasher: KeyHasher,
}

impl PyFilter {
    /// The base class's part of a filter made for `target`.
    pub(crate) fn new(inner: AnyFilter, target: Option<f64>) -> Self {
        PyFilter {
            hasher: inner.key_hasher(),
            inner,
            target,
        }
    }

    /// The base of a new filter made for `target`.
    pub(crate) fn made(inner: AnyFilter, target: Option<f64>) -> PyClassInitializer<Self> {
        PyClassInitializer::from(Self::new(inner, target))
    }

    /// A Python object of `inner`'s kind's class.
    pub(crate) fn wrap(
        py: Python<'_>,
        inner: AnyFilter,
        target: Option<f64>,
    ) -> PyResult<Bound<'_, PyAny>> {
        kinds::wrap(py, Self::new(inner, target))
    }

    /// `key`'s hash under this filter's seed and feed.
    #[inline]
    fn hash(&self, key: &Bound<'_, PyAny>) -> PyResult<u64> {
        hash_key(key, self.hasher)
    }

    /// The planned rate: the target the filter was made for, or the one its format stores.
    fn planned_rate(&self) -> Option<f64> {
        match &self.inner {
            AnyFilter::Scalable(f) => Some(f.fp_rate()),
            AnyFilter::Ribbon(f) => Some(f.fp_rate()),
            AnyFilter::Fuse(f) => Some(f.fp_rate()),
            _ => self.target,
        }
    }

    /// Bits in the filter, for the kinds whose size is counted in bits.
    pub(crate) fn num_bits(&self) -> PyResult<u64> {
        Ok(match &self.inner {
            AnyFilter::Classic(f) => f.num_bits(),
            AnyFilter::Blocked(f) => f.num_bits(),
            AnyFilter::Sector(f) => f.num_bits(),
            AnyFilter::Scalable(f) => f.num_bits(),
            AnyFilter::Aging(f) => f.num_bits(),
            AnyFilter::Ribbon(f) => f.num_bits(),
            AnyFilter::Fuse(f) => f.num_bits(),
            other => return Err(no_such(other.kind(), "num_bits")),
        })
    }

    /// Probes per key, for the kinds with a fixed number.
    pub(crate) fn num_hashes(&self) -> PyResult<u32> {
        Ok(match &self.inner {
            AnyFilter::Classic(f) => f.num_hashes(),
            AnyFilter::Blocked(f) => f.num_hashes(),
            AnyFilter::Sector(f) => f.num_hashes(),
            AnyFilter::Counting(f) => f.num_hashes(),
            AnyFilter::Aging(f) => f.num_hashes(),
            other => return Err(no_such(other.kind(), "num_hashes")),
        })
    }

    /// Adds `key` as the kind's `insert` does (`AnyFilter::insert`).
    pub(crate) fn add(&mut self, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let hash = self.hash(key)?;
        self.inner.insert_hash(hash).or_raise(key.py())
    }

    /// Adds every key of `keys` (see `batch`).
    pub(crate) fn add_many(
        &mut self,
        keys: &Bound<'_, PyAny>,
        key_size: Option<usize>,
    ) -> PyResult<()> {
        let py = keys.py();
        let hasher = self.hasher;
        let filter = &mut self.inner;
        let mut added: u64 = 0;
        let result = for_each_chunk(keys, key_size, hasher, |hashes| {
            let done = insert_hashes(filter, hashes);
            added += done.as_ref().map_or_else(|(n, _)| *n, |n| *n) as u64;
            done.map(|_| ()).map_err(|(_, e)| e)
        });
        match result {
            Ok(_) => Ok(()),
            Err(Stop::Python(e)) => Err(e),
            Err(Stop::Filter(Error::Full { kind })) => Err(Class::Full.err(
                py,
                format!(
                    "{}; the batch stopped there, after adding its first {added} keys",
                    Error::Full { kind }
                ),
            )),
            Err(Stop::Filter(e)) => Err(to_py(py, e)),
        }
    }

    /// Merges `other` into this filter with `op`, with the GIL released.
    ///
    /// # Errors
    ///
    /// `ParameterError` if the filters differ in shape or seed.
    fn merge(&mut self, other: &PyFilter, op: Merge, py: Python<'_>) -> PyResult<()> {
        let (a, b) = (&mut self.inner, &other.inner);
        py.detach(|| match op {
            Merge::Union => a.union(b),
            Merge::Intersection => a.intersect(b),
        })
        .or_raise(py)
    }

    /// A copy, as its kind's class, keeping the target.
    pub(crate) fn duplicate<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Self::wrap(py, self.inner.clone(), self.target)
    }

    /// Removes one copy of `key`, if the kind removes keys: whether one was there.
    pub(crate) fn remove_key(&mut self, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let hash = self.hash(key)?;
        match &mut self.inner {
            AnyFilter::Counting(f) => Ok(f.remove_hash(hash)),
            AnyFilter::Cuckoo(f) => Ok(f.remove_hash(hash)),
            other => Err(no_such(other.kind(), "remove")),
        }
    }
}

/// Which merge an operator asks for.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Merge {
    Union,
    Intersection,
}

/// The error for a kind asked what it does not have: a class's methods never ask it, so
/// this means the kinds table and a method's list of kinds disagree.
pub(crate) fn no_such(kind: FilterKind, what: &str) -> PyErr {
    PyTypeError::new_err(format!("a {kind} filter has no {what}"))
}

/// Inserts `hashes` in order; on an error, how many were inserted before it.
fn insert_hashes(filter: &mut AnyFilter, hashes: &[u64]) -> Result<usize, (usize, Error)> {
    let mut scratch = Vec::new();
    let batched = match filter {
        AnyFilter::Blocked(f) => {
            f.insert_many_hashes(hashes);
            Ok(())
        }
        AnyFilter::Sector(f) => {
            f.insert_many_hashes(hashes);
            Ok(())
        }
        AnyFilter::Counting(f) => {
            f.insert_many_hashes(hashes);
            Ok(())
        }
        AnyFilter::Scalable(f) => f.insert_many_hashes(hashes, &mut scratch),
        AnyFilter::Cuckoo(f) => f.insert_many_hashes(hashes, &mut scratch),
        other => {
            // The kinds without a batched insert: one at a time.
            for (i, &hash) in hashes.iter().enumerate() {
                other.insert_hash(hash).map_err(|e| (i, e))?;
            }
            Ok(())
        }
    };
    batched
        .map(|()| hashes.len())
        .map_err(|e| (scratch.len(), e))
}

/// Answers for `hashes`, appended in order.
pub(crate) fn contains_hashes(filter: &AnyFilter, hashes: &[u64], answers: &mut Vec<bool>) {
    match filter {
        AnyFilter::Blocked(f) => f.contains_many_hashes(hashes, answers),
        AnyFilter::Sector(f) => f.contains_many_hashes(hashes, answers),
        AnyFilter::Counting(f) => f.contains_many_hashes(hashes, answers),
        AnyFilter::Scalable(f) => f.contains_many_hashes(hashes, answers),
        AnyFilter::Cuckoo(f) => f.contains_many_hashes(hashes, answers),
        AnyFilter::Ribbon(f) => f.contains_many_hashes(hashes, answers),
        AnyFilter::Fuse(f) => f.contains_many_hashes(hashes, answers),
        other => answers.extend(hashes.iter().map(|&h| other.contains_hash(h))),
    }
}

/// Runs a batch of queries: answers for every key of `keys`, as a list, or as a NumPy bool
/// array for an array.
pub(crate) fn query_many<'py>(
    keys: &Bound<'py, PyAny>,
    key_size: Option<usize>,
    hasher: bloomkit::KeyHasher,
    mut contains: impl FnMut(&[u64], &mut Vec<bool>) + Send,
) -> PyResult<Bound<'py, PyAny>> {
    let mut found = Vec::new();
    let shape = for_each_chunk(keys, key_size, hasher, |hashes| {
        contains(hashes, &mut found);
        Ok(())
    });
    match shape {
        Ok(shape) => answers(keys.py(), found, shape),
        Err(Stop::Python(e)) => Err(e),
        Err(Stop::Filter(e)) => Err(to_py(keys.py(), e)),
    }
}

#[pymethods]
impl PyFilter {
    /// Whether `key` may be in the filter: ``False`` means it is definitely not; ``True``
    /// means it is, or is a false positive (at the filter's rate).
    fn __contains__(&self, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        Ok(self.inner.contains_hash(self.hash(key)?))
    }

    /// Answers ``key in self`` for every key of `keys`, in order, with the GIL released
    /// while the filter is probed.
    ///
    /// `keys` is any iterable of keys, fastest as a list; a NumPy array of integers gives a
    /// NumPy bool array back; a bytes-like buffer with `key_size` holds keys of that many
    /// bytes each, back to back.
    #[pyo3(signature = (keys, *, key_size = None))]
    fn contains_many<'py>(
        slf: PyRef<'py, Self>,
        keys: &Bound<'py, PyAny>,
        key_size: Option<usize>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let filter = &slf.inner;
        query_many(keys, key_size, slf.hasher, |hashes, found| {
            contains_hashes(filter, hashes, found)
        })
    }

    /// The filter's count of keys, as the Rust library's ``len`` counts them: inserts that
    /// changed a Bloom filter (a key already present, or a false positive, is not counted),
    /// copies held by a counting or cuckoo filter, keys added to a scalable filter, keys a
    /// static filter was built from, keys in an aging filter's live generations.
    fn __len__(&self) -> PyResult<usize> {
        usize::try_from(self.inner.len())
            .map_err(|_| PyOverflowError::new_err("the count does not fit in a Python length"))
    }

    /// The kind's name, as the CLI spells it: ``"classic"``, ``"blocked"``, ``"sector"``,
    /// ``"counting"``, ``"scalable"``, ``"cuckoo"``, ``"aging"``, ``"ribbon"`` or ``"fuse"``.
    #[getter]
    fn kind(&self) -> &'static str {
        self.inner.kind().name()
    }

    /// The seed keys are hashed with (``bloomkit.DEFAULT_SEED`` unless one was given).
    #[getter]
    fn seed(&self) -> u64 {
        self.inner.seed()
    }

    /// Bytes of memory the filter holds.
    #[getter]
    fn memory_bytes(&self) -> usize {
        self.inner.memory_bytes()
    }

    /// The rate the filter was planned for: the ``fp_rate`` it was made with, the target a
    /// scalable filter keeps as it grows, a static filter's exact rate. ``None`` for a
    /// Bloom, counting, cuckoo or aging filter read from bytes or a file, whose format
    /// stores its shape and not a target: see ``predicted_fp_rate``.
    #[getter]
    fn fp_rate(&self) -> Option<f64> {
        self.planned_rate()
    }

    /// The false-positive rate a query risks now, estimated from the filter's contents (its
    /// fill or load; a static filter's exact rate).
    #[getter]
    fn estimated_fp_rate(&self) -> f64 {
        self.inner.estimated_fp_rate()
    }

    /// The false-positive rate the sizing math predicts for the filter's shape holding
    /// ``len(self)`` keys: what a correct filter measures.
    #[getter]
    fn predicted_fp_rate(&self) -> f64 {
        self.inner.predicted_fp_rate()
    }

    /// The filter in bloomkit's file format (``docs/FORMAT.md``): what ``bloomkit build``
    /// writes and ``from_bytes`` reads back, on any platform.
    fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let filter = &self.inner;
        PyBytes::new_with(py, filter.encoded_len(), |buf| {
            py.detach(|| files::encode_into(filter, buf))
                .map_err(PyErr::from)
        })
    }

    /// Reads a filter from bytes in bloomkit's file format (``bytes``, ``bytearray``,
    /// ``memoryview``).
    ///
    /// On a kind's class it reads that kind only; ``bloomkit.from_bytes`` (``Filter``'s)
    /// reads any kind and returns it as its class. Raises ``InvalidFilterError``, naming the
    /// offset, for anything but exactly one valid filter.
    #[classmethod]
    fn from_bytes<'py>(
        cls: &Bound<'py, PyType>,
        data: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        read_bytes(cls, data, None)
    }

    /// Writes the filter to the file `path` (a ``str`` or ``os.PathLike``), in the format
    /// ``bloomkit info``, ``query`` and ``load`` read. The file is replaced atomically: a
    /// crash leaves the old file or the new one, never half a filter.
    fn save(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        let filter = &self.inner;
        py.detach(|| files::save(filter, &path))
            .map_err(|e| files::os_error(e, &path, "cannot write filter"))
    }

    /// Reads a filter from the file `path`, as ``from_bytes`` reads bytes (the file is
    /// streamed: memory holds the filter once). ``bloomkit build`` writes such files.
    #[classmethod]
    fn load<'py>(cls: &Bound<'py, PyType>, path: PathBuf) -> PyResult<Bound<'py, PyAny>> {
        let py = cls.py();
        let expected = kinds::kind_of_class(cls);
        let filter = py
            .detach(|| files::load(&path, expected))
            .map_err(|e| e.into_py(py, &path))?;
        PyFilter::wrap(py, filter, None)
    }

    /// A copy of the filter.
    fn copy<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.duplicate(py)
    }

    fn __copy__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.duplicate(py)
    }

    fn __deepcopy__<'py>(
        &self,
        py: Python<'py>,
        _memo: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.duplicate(py)
    }

    /// Two filters are equal when they are the same kind with the same shape, seed and
    /// contents (and so answer every key alike).
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let py = other.py();
        match other.cast::<PyFilter>() {
            Ok(other) => {
                let equal = match other.try_borrow() {
                    Ok(other) => other.inner == self.inner,
                    // Borrowed mutably: it can only be this very filter, in a batch.
                    Err(_) => false,
                };
                Ok(equal.into_pyobject(py)?.to_owned().into_any().unbind())
            }
            Err(_) => Ok(py.NotImplemented()),
        }
    }

    /// Pickles as the filter's bytes in bloomkit's format (and the target it was made for).
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Reduced<'py>> {
        let py = slf.py();
        let restore = py.import("bloomkit._native")?.getattr("_unpickle")?;
        let this = slf.borrow();
        Ok((restore, (this.to_bytes(py)?, this.target)))
    }

    fn __repr__(slf: &Bound<'_, Self>) -> PyResult<String> {
        let this = slf.borrow();
        Ok(format!(
            "<bloomkit.{} len={} memory_bytes={} seed={:#x}>",
            kinds::class_name(this.inner.kind()),
            this.inner.len(),
            this.inner.memory_bytes(),
            this.inner.seed()
        ))
    }
}

/// What `__reduce__` returns: the function that unpickles, and its arguments (the bytes and
/// the target).
type Reduced<'py> = (Bound<'py, PyAny>, (Bound<'py, PyBytes>, Option<f64>));

/// Reads `data` (bytes-like) as a filter: of `cls`'s kind, or any for `Filter` itself.
fn read_bytes<'py>(
    cls: &Bound<'py, PyType>,
    data: &Bound<'py, PyAny>,
    target: Option<f64>,
) -> PyResult<Bound<'py, PyAny>> {
    let py = cls.py();
    let expected = kinds::kind_of_class(cls);
    let bytes = buffer_bytes(data).map_err(|_| {
        PyTypeError::new_err(format!(
            "from_bytes takes bytes, bytearray or memoryview; got {}",
            type_name(data)
        ))
    })?;
    let slice = bytes.as_bytes();
    let filter = py
        .detach(|| files::from_bytes(slice, expected))
        .map_err(|e| e.into_py(py, Source::Bytes))?;
    PyFilter::wrap(py, filter, target)
}

/// Unpickles what `__reduce__` pickled.
#[pyfunction]
pub(crate) fn _unpickle<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    target: Option<f64>,
) -> PyResult<Bound<'py, PyAny>> {
    read_bytes(&py.get_type::<PyFilter>(), data, target)
}

/// Adding keys: `add`, `update`, `add_many` and `clear`, on the kinds that take keys after
/// they are made (every kind but the static ribbon and binary fuse filters).
macro_rules! adding_methods {
    ($($class:ident),* $(,)?) => {$(
        #[pymethods]
        impl $class {
            /// `add`: a one-argument method, made in `one_arg.rs` (its docs are there).
            #[classattr]
            fn add(py: Python<'_>) -> PyResult<Py<PyAny>> {
                $crate::one_arg::add_method(py)
            }

            /// Adds every key of each iterable, as ``set.update`` does.
            #[pyo3(signature = (*iterables))]
            fn update(mut slf: PyRefMut<'_, Self>, iterables: &Bound<'_, pyo3::types::PyTuple>) -> PyResult<()> {
                for keys in iterables.iter() {
                    slf.as_super().add_many(&keys, None)?;
                }
                Ok(())
            }

            /// Adds every key of `keys`, with the GIL released while the filter is written.
            ///
            /// `keys` is any iterable of keys, fastest as a list or a NumPy array of integers;
            /// a bytes-like buffer with `key_size` holds keys of that many bytes each, back to
            /// back. A key that cannot be added (not a key, or a full filter) raises after
            /// the keys before it were added. While the batch runs, another thread's call on
            /// the same filter raises ``RuntimeError`` (the filter is borrowed), never waits
            /// on half a write.
            #[pyo3(signature = (keys, *, key_size = None))]
            fn add_many(mut slf: PyRefMut<'_, Self>, keys: &Bound<'_, PyAny>, key_size: Option<usize>) -> PyResult<()> {
                slf.as_super().add_many(keys, key_size)
            }

            /// Removes every key: an empty filter of the same shape and seed.
            fn clear(mut slf: PyRefMut<'_, Self>) -> PyResult<()> {
                crate::kinds::clear(&mut slf.as_super().inner)
            }
        }
    )*};
}
pub(crate) use adding_methods;

/// A merge's operators (`|` and `|=`, or `&` and `&=`), on the kinds that merge that way
/// (same kind, shape and seed).
macro_rules! merge_methods {
    ($op:ident: $new:ident = $new_doc:literal, $in_place:ident = $in_place_doc:literal; $($class:ident),* $(,)?) => {$(
        #[pymethods]
        impl $class {
            #[doc = $new_doc]
            fn $new<'py>(slf: PyRef<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
                $crate::filter::merged::<$class>(slf.as_super(), other, $crate::filter::Merge::$op)
            }

            #[doc = $in_place_doc]
            fn $in_place(mut slf: PyRefMut<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<()> {
                let this = slf.as_ptr();
                $crate::filter::merge_in_place::<$class>(slf.as_super(), this, other, $crate::filter::Merge::$op)
            }
        }
    )*};
}
pub(crate) use merge_methods;

/// `remove` and `discard`, on the kinds that remove keys.
macro_rules! removal_methods {
    ($($class:ident),* $(,)?) => {$(
        #[pymethods]
        impl $class {
            /// Removes one copy of `key`; ``KeyError`` if it is definitely not there.
            ///
            /// Remove only keys that were added: removing a key that only looks present (a
            /// false positive) takes away what another key relies on, and that key may then
            /// read as absent.
            fn remove(mut slf: PyRefMut<'_, Self>, key: &Bound<'_, PyAny>) -> PyResult<()> {
                if slf.as_super().remove_key(key)? {
                    Ok(())
                } else {
                    Err(pyo3::exceptions::PyKeyError::new_err(key.clone().unbind()))
                }
            }

            /// Removes one copy of `key` if it may be there: returns whether one was removed.
            /// The same caution as ``remove`` applies.
            fn discard(mut slf: PyRefMut<'_, Self>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
                slf.as_super().remove_key(key)
            }
        }
    )*};
}
pub(crate) use removal_methods;

/// `num_bits` and `num_hashes`, on the kinds that have them.
macro_rules! shape_getters {
    (num_bits: $($class:ident),* $(,)?) => {$(
        #[pymethods]
        impl $class {
            /// Bits in the filter (all layers or generations).
            #[getter]
            fn num_bits(slf: PyRef<'_, Self>) -> PyResult<u64> {
                slf.as_super().num_bits()
            }
        }
    )*};
    (num_hashes: $($class:ident),* $(,)?) => {$(
        #[pymethods]
        impl $class {
            /// Probes per key.
            #[getter]
            fn num_hashes(slf: PyRef<'_, Self>) -> PyResult<u32> {
                slf.as_super().num_hashes()
            }
        }
    )*};
}
pub(crate) use shape_getters;

/// `a | b`, `a & b` for a filter `a` of class `C`: a new filter of `C`, or
/// `NotImplemented` if `b` is not of `C`.
pub(crate) fn merged<'py, C: PyTypeInfo>(
    this: &PyFilter,
    other: &Bound<'py, PyAny>,
    op: Merge,
) -> PyResult<Bound<'py, PyAny>> {
    let py = other.py();
    if !other.is_instance_of::<C>() {
        return Ok(py.NotImplemented().into_bound(py));
    }
    let mut result = PyFilter::new(this.inner.clone(), this.target);
    result.merge(&other.cast::<PyFilter>()?.borrow(), op, py)?;
    kinds::wrap(py, result)
}

/// `a |= b`, `a &= b` for a filter `a` of class `C` (the object `this_object`).
///
/// # Errors
///
/// `TypeError` if `b` is not of `C`; `ParameterError` if the filters differ in shape or
/// seed.
pub(crate) fn merge_in_place<C: pyo3::PyClass>(
    this: &mut PyFilter,
    this_object: *mut pyo3::ffi::PyObject,
    other: &Bound<'_, PyAny>,
    op: Merge,
) -> PyResult<()> {
    let py = other.py();
    if !other.is_instance_of::<C>() {
        return Err(PyTypeError::new_err(format!(
            "a {} merges only with another {}; got {}",
            C::NAME,
            C::NAME,
            type_name(other)
        )));
    }
    // `f |= f`, `f &= f`: the filter already is the result (and is borrowed here already).
    if other.as_ptr() == this_object {
        return Ok(());
    }
    this.merge(&other.cast::<PyFilter>()?.borrow(), op, py)
}
