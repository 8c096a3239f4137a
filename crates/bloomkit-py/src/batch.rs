//! Batches of keys: `add_many`, `contains_many` and the static filters' constructors take
//! any iterable, and go fast on the shapes big batches come in.
//!
//! Keys are hashed a chunk at a time, and each chunk's filter work (the part bound by memory,
//! which prefetches ahead when the filter is larger than the cache) runs with the GIL
//! released, so other Python threads run meanwhile. Reading keys out of Python objects
//! needs the GIL; keys in an immutable buffer are hashed without it too. The shapes:
//!
//! * a `list` or `tuple`: read by index, without an iterator;
//! * a one-dimensional NumPy array of integers (any width, signed or not, either byte
//!   order): read a slice of the array's bytes at a time, never an element at a time (NumPy
//!   is not imported here: an array can only arrive if its caller imported NumPy);
//! * a bytes-like buffer with `key_size=n`: fixed-width keys of `n` bytes each, back to back;
//! * any other iterable, through its iterator.

use bloomkit::KeyHasher;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyList, PyMemoryView, PySlice, PyString, PyTuple};

use crate::in_place;
use crate::keys::{hash_fast, hash_key, IntKey};

/// Keys hashed, and handed to the filter, at a time: enough that releasing the GIL and the
/// prefetching walk cost nothing per key, few enough that the hashes stay in cache.
const CHUNK: usize = 4096;

/// Elements of a NumPy array copied out at a time (512 KiB of 8-byte integers).
const ARRAY_CHUNK: usize = 1 << 16;

/// What a batch's input was, for the shape of its answers: NumPy in, NumPy out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Shape {
    /// Answers as a list of bools.
    List,
    /// Answers as a NumPy bool array.
    NumPy,
}

/// Why a batch stopped early: the filter refused a chunk (`work`'s error, with the keys
/// before the failing one done), or a key could not be read or hashed (the keys before it
/// done).
pub(crate) enum Stop {
    Filter(bloomkit::Error),
    Python(PyErr),
}

impl From<PyErr> for Stop {
    fn from(e: PyErr) -> Self {
        Stop::Python(e)
    }
}

/// Hashes the keys of `keys` under `hasher` and hands them to `work` in order, a chunk at a
/// time, with the GIL released while `work` runs. Returns the input's [`Shape`].
///
/// A key that cannot be hashed stops the batch after `work` has had the keys before it.
///
/// # Errors
///
/// `TypeError` for a `str` or bytes-like object given as the batch (one key, not many)
/// without `key_size`, or for input that is not iterable; `ValueError` for a bad
/// `key_size` or array shape; any key's error; `work`'s error.
pub(crate) fn for_each_chunk<W>(
    keys: &Bound<'_, PyAny>,
    key_size: Option<usize>,
    hasher: KeyHasher,
    mut work: W,
) -> Result<Shape, Stop>
where
    W: FnMut(&[u64]) -> bloomkit::Result<()> + Send,
{
    let py = keys.py();
    let mut run = |hashes: &[u64]| py.detach(|| work(hashes)).map_err(Stop::Filter);
    if let Some(size) = key_size {
        fixed_width(keys, size, hasher, &mut run)?;
        return Ok(Shape::List);
    }
    if let Ok(list) = keys.cast::<PyList>() {
        by_index(Items::List(list), hasher, &mut run)?;
        return Ok(Shape::List);
    }
    if let Ok(tuple) = keys.cast::<PyTuple>() {
        by_index(Items::Tuple(tuple), hasher, &mut run)?;
        return Ok(Shape::List);
    }
    if keys.is_instance_of::<PyString>()
        || keys.is_instance_of::<PyBytes>()
        || keys.is_instance_of::<PyByteArray>()
    {
        return Err(PyTypeError::new_err(
            "a str or bytes object is one key, not a batch: pass a list of keys, or give \
             key_size= to split a buffer into keys of that many bytes",
        )
        .into());
    }
    if let Some(array) = integer_array(keys)? {
        array.for_each_chunk(hasher, &mut run)?;
        return Ok(Shape::NumPy);
    }
    let mut iter = keys.try_iter().map_err(|_| {
        PyTypeError::new_err(format!(
            "keys must be an iterable of keys (a list, a generator, a NumPy array of \
             integers...), or a bytes-like buffer with key_size=; got {}",
            type_name(keys)
        ))
    })?;
    let mut hashes = Vec::with_capacity(CHUNK);
    loop {
        hashes.clear();
        let mut failed = None;
        for key in iter.by_ref().take(CHUNK) {
            match key.and_then(|key| hash_key(&key, hasher)) {
                Ok(h) => hashes.push(h),
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        let last = hashes.len() < CHUNK;
        run(&hashes)?;
        if let Some(e) = failed {
            return Err(e.into());
        }
        if last {
            return Ok(Shape::List);
        }
    }
}

/// A list's or tuple's items, read by index, as borrowed pointers.
#[derive(Clone, Copy)]
enum Items<'a, 'py> {
    List(&'a Bound<'py, PyList>),
    Tuple(&'a Bound<'py, PyTuple>),
}

impl Items<'_, '_> {
    /// The current length (a list's may change whenever Python code runs).
    fn len(self) -> usize {
        match self {
            Items::List(list) => list.len(),
            Items::Tuple(tuple) => tuple.len(),
        }
    }

    /// Item `i`, borrowed: no reference is taken, so the pointer is only good until Python
    /// code next runs (which may shrink a list and free the item). Null only if `i` is out
    /// of range, with an `IndexError` set.
    ///
    /// # Safety
    ///
    /// `i < self.len()`, as read since Python code last ran.
    #[inline(always)]
    unsafe fn borrow(self, i: usize) -> *mut ffi::PyObject {
        // SAFETY: a live list or tuple and an index in range: the list's item array (read
        // afresh: it moves when the list grows) holds `len` live items, and the calls
        // return a borrowed reference and set no error.
        unsafe {
            match self {
                Items::List(list) => match in_place::list_items(list.as_ptr()) {
                    Some(items) => items.add(i).read(),
                    None => ffi::PyList_GetItem(list.as_ptr(), i as ffi::Py_ssize_t),
                },
                Items::Tuple(tuple) => ffi::PyTuple_GetItem(tuple.as_ptr(), i as ffi::Py_ssize_t),
            }
        }
    }
}

/// The items of a list or tuple in order, until the end (re-read after any Python code
/// runs, and before each chunk: a list that a key's Python code, or another thread while
/// the GIL is released, shortens ends there).
///
/// The commonest keys (an exact `str`, `int` or `bytes`) are hashed from the borrowed item
/// without touching its reference count (`hash_fast` runs no Python code, so the list keeps
/// the item alive meanwhile); any other item is taken as an owned reference before its
/// slower path, which may run Python code.
fn by_index(
    items: Items<'_, '_>,
    hasher: KeyHasher,
    run: &mut impl FnMut(&[u64]) -> Result<(), Stop>,
) -> Result<(), Stop> {
    let py = match items {
        Items::List(list) => list.py(),
        Items::Tuple(tuple) => tuple.py(),
    };
    let mut hashes = Vec::with_capacity(CHUNK);
    let mut next = 0;
    loop {
        hashes.clear();
        let mut failed = None;
        let mut len = items.len();
        let end = len.min(next + CHUNK);
        while next < end.min(len) {
            // SAFETY: `next < len`, the length read since Python code last ran.
            let item = unsafe { items.borrow(next) };
            next += 1;
            // SAFETY: `item` is the container's live item; `hash_fast` runs no Python code.
            if let Some(h) = unsafe { hash_fast(item, hasher) } {
                hashes.push(h);
                continue;
            }
            // SAFETY: `item` is live (no Python code has run since it was borrowed); the new
            // reference keeps it so while its slower path runs Python code.
            let key = unsafe { Bound::from_borrowed_ptr(py, item) };
            match hash_key(&key, hasher) {
                Ok(h) => hashes.push(h),
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
            len = items.len();
        }
        let ended = next >= len;
        run(&hashes)?;
        if let Some(e) = failed {
            return Err(e.into());
        }
        if ended {
            return Ok(());
        }
    }
}

/// Keys of `size` bytes each, back to back in a bytes-like buffer: hashed and handed over
/// without the GIL (a `bytes` is read in place; any other buffer is copied once first, so
/// that no other thread can change it meanwhile).
fn fixed_width(
    keys: &Bound<'_, PyAny>,
    size: usize,
    hasher: KeyHasher,
    run: &mut impl FnMut(&[u64]) -> Result<(), Stop>,
) -> Result<(), Stop> {
    if size == 0 {
        return Err(PyValueError::new_err("key_size must be at least 1").into());
    }
    let bytes = buffer_bytes(keys).map_err(|_| {
        PyTypeError::new_err(format!(
            "key_size= splits a bytes-like buffer (bytes, bytearray, memoryview, a NumPy \
             array's data...) into keys; got {}",
            type_name(keys)
        ))
    })?;
    let data = bytes.as_bytes();
    if data.len() % size != 0 {
        return Err(PyValueError::new_err(format!(
            "the buffer holds {} bytes, not a whole number of {size}-byte keys",
            data.len()
        ))
        .into());
    }
    let mut hashes = Vec::with_capacity(CHUNK);
    for chunk in data.chunks(size * CHUNK) {
        hashes.clear();
        // Hashing long keys costs more than reading them: do it without the GIL too.
        keys.py().detach(|| {
            hashes.extend(chunk.chunks_exact(size).map(|key| hasher.hash_bytes(key)));
        });
        run(&hashes)?;
    }
    Ok(())
}

/// The bytes of a buffer (anything `memoryview` takes): a `bytes` itself, anything else
/// copied into one, so that no other thread can change them while they are read.
///
/// # Errors
///
/// `TypeError` for an object that is not a buffer.
pub(crate) fn buffer_bytes<'py>(buffer: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
    if let Ok(bytes) = buffer.cast::<PyBytes>() {
        return Ok(bytes.clone());
    }
    let copy = PyMemoryView::from(buffer)?.call_method0("tobytes")?;
    Ok(copy.cast_into::<PyBytes>()?)
}

/// A one-dimensional NumPy array of integers.
struct IntegerArray<'py> {
    array: Bound<'py, PyAny>,
    len: usize,
    layout: IntLayout,
}

/// How an array's integers are stored.
#[derive(Clone, Copy, Debug)]
struct IntLayout {
    /// Bytes per element: 1, 2, 4 or 8.
    width: usize,
    signed: bool,
    big_endian: bool,
}

/// `keys` as an [`IntegerArray`] if it is a NumPy array of integers; `None` for anything
/// else (an array of another dtype is iterated element by element, and its elements are
/// keys or not as they are).
///
/// # Errors
///
/// `ValueError` for an array of integers of more than one dimension.
fn integer_array<'py>(keys: &Bound<'py, PyAny>) -> PyResult<Option<IntegerArray<'py>>> {
    let py = keys.py();
    // Only a program that imported NumPy can hand us an array; otherwise NumPy stays
    // unimported.
    let modules = py.import("sys")?.getattr("modules")?;
    let Ok(numpy) = modules.get_item("numpy") else {
        return Ok(None);
    };
    if !keys.is_instance(&numpy.getattr("ndarray")?)? {
        return Ok(None);
    }
    let dtype = keys.getattr("dtype")?;
    let kind: String = dtype.getattr("kind")?.extract()?;
    let width: usize = dtype.getattr("itemsize")?.extract()?;
    if !(kind == "i" || kind == "u") || ![1, 2, 4, 8].contains(&width) {
        return Ok(None);
    }
    let ndim: usize = keys.getattr("ndim")?.extract()?;
    if ndim != 1 {
        return Err(PyValueError::new_err(format!(
            "the array of keys has {ndim} dimensions; pass a one-dimensional one, such as \
             arr.ravel()"
        )));
    }
    let order: String = dtype.getattr("byteorder")?.extract()?;
    let big_endian = order == ">" || (order == "=" && cfg!(target_endian = "big"));
    Ok(Some(IntegerArray {
        len: keys.len()?,
        array: keys.clone(),
        layout: IntLayout {
            width,
            signed: kind == "i",
            big_endian,
        },
    }))
}

impl IntegerArray<'_> {
    /// Hands the elements' hashes to `run` in order. Each slice of the array is copied out
    /// (contiguous, whatever the array's strides) with the GIL, then hashed without it.
    fn for_each_chunk(
        &self,
        hasher: KeyHasher,
        run: &mut impl FnMut(&[u64]) -> Result<(), Stop>,
    ) -> Result<(), Stop> {
        let py = self.array.py();
        let mut hashes = Vec::with_capacity(ARRAY_CHUNK);
        let mut start = 0;
        while start < self.len {
            let end = (start + ARRAY_CHUNK).min(self.len);
            let slice = PySlice::new(py, start as isize, end as isize, 1);
            let part = self.array.get_item(slice)?.call_method0("tobytes")?;
            let bytes = part.cast::<PyBytes>().map_err(PyErr::from)?.as_bytes();
            hashes.clear();
            let layout = self.layout;
            py.detach(|| {
                hashes.extend(
                    bytes
                        .chunks_exact(layout.width)
                        .map(|b| layout.value(b).hash(hasher)),
                )
            });
            for chunk in hashes.chunks(CHUNK) {
                run(chunk)?;
            }
            start = end;
        }
        Ok(())
    }
}

impl IntLayout {
    /// One element's value.
    #[inline]
    fn value(&self, bytes: &[u8]) -> IntKey {
        let mut word = [0u8; 8];
        if self.big_endian {
            word[8 - self.width..].copy_from_slice(bytes);
            word.reverse();
        } else {
            word[..self.width].copy_from_slice(bytes);
        }
        let raw = u64::from_le_bytes(word);
        if self.signed {
            // Sign-extend from the element's width.
            let shift = 64 - 8 * self.width as u32;
            IntKey::I64(((raw << shift) as i64) >> shift)
        } else {
            IntKey::U64(raw)
        }
    }
}

/// A value's type, for messages.
pub(crate) fn type_name(value: &Bound<'_, PyAny>) -> String {
    value
        .get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".to_string())
}

/// Answers as the caller's [`Shape`] asks: a list of bools, or a NumPy bool array.
pub(crate) fn answers<'py>(
    py: Python<'py>,
    answers: Vec<bool>,
    shape: Shape,
) -> PyResult<Bound<'py, PyAny>> {
    match shape {
        Shape::List => bool_list(py, &answers),
        Shape::NumPy => {
            let numpy = py.import("numpy")?;
            // A bool is one byte, 0 or 1: NumPy's bool array over those bytes, no copy.
            let bytes: Vec<u8> = answers.into_iter().map(u8::from).collect();
            let buffer = PyByteArray::new(py, &bytes);
            numpy.call_method1("frombuffer", (buffer, numpy.getattr("bool_")?))
        }
    }
}

/// A list of `True`/`False` for `answers`, made through the C API directly: PyO3's
/// `PyList::new` converts each bool through its generic iterator path and a call per
/// reference; where `in_place` knows the list's layout, the items are written into the new
/// list's array and the references to `True` and `False` added once each (callgrind,
/// 200,000 answers: 33 instructions an answer through `PyList_SetItem`, 4 this way).
fn bool_list<'py>(py: Python<'py>, answers: &[bool]) -> PyResult<Bound<'py, PyAny>> {
    // SAFETY: the length fits (a Vec's length is at most isize::MAX); the call returns a
    // new list of that many empty slots, or NULL with an error set.
    let list = unsafe {
        Bound::from_owned_ptr_or_err(py, ffi::PyList_New(answers.len() as ffi::Py_ssize_t))?
    };
    // SAFETY: `Py_True` and `Py_False` are live for the life of the interpreter.
    let (yes, no) = unsafe { (ffi::Py_True(), ffi::Py_False()) };
    // SAFETY: `list` is a live list.
    if let Some(items) = unsafe { in_place::list_items(list.as_ptr()) } {
        let trues = answers.iter().filter(|&&a| a).count();
        // SAFETY: `items` is the new list's array of `answers.len()` empty slots, which
        // nothing else has seen; each slot gets one of the references added just below.
        unsafe {
            for (i, &answer) in answers.iter().enumerate() {
                items.add(i).write(if answer { yes } else { no });
            }
            in_place::add_bool_refs(yes, trues);
            in_place::add_bool_refs(no, answers.len() - trues);
        }
        return Ok(list);
    }
    for (i, &answer) in answers.iter().enumerate() {
        let value = if answer { yes } else { no };
        // SAFETY: `list` is a new list with a slot at `i`; `PyList_SetItem` takes the new
        // reference made here (it steals it) and cannot fail for an index in range of a
        // list.
        unsafe {
            ffi::Py_IncRef(value);
            ffi::PyList_SetItem(list.as_ptr(), i as ffi::Py_ssize_t, value);
        }
    }
    Ok(list)
}
