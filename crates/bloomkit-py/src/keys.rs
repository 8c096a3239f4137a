//! Python values as bloomkit keys, hashed exactly as the Rust library hashes the same key.
//!
//! * `str`, `bytes`, `bytearray`, `memoryview` (and their subclasses, NumPy's `bytes_` and
//!   `str_` among them): a byte string, UTF-8 for `str`, so `"alice"` and `b"alice"` are one
//!   key, the key the CLI reads from the line `alice` and the server from the bulk string.
//! * `int` (and `bool`, and anything with `__index__`, such as NumPy's integers): its value,
//!   as any Rust integer type of that value is (`42` is `42u64` and `42u8`; `-1` is `-1i64`;
//!   values up to `u128::MAX` and down to `i128::MIN`).
//! * `tuple` of these: the fields' feeds in order, each delimited (`docs/FORMAT.md`, "The
//!   key hash"), as Rust's tuples and `KeySink` write them; a nested tuple's fields follow
//!   on, as in Rust.
//!
//! Anything else is a `TypeError` that says how to make bytes of it: Python's own `hash()`
//! is randomised per process, so a filter keyed by it would not survive a save.
//!
//! A filter read from a file bloomkit 0.1 wrote hashes keys as 0.1 did
//! (`bloomkit::KeyFeed::StdHash`): byte strings as the CLI hashes them (the same bytes under
//! both feeds), an integer as the narrowest of `i64`, `u64`, `i128`, `u128` that holds it
//! (0.1 hashed an integer by its Rust type). Tuple keys are refused there: 0.1 hashed each
//! field by its Rust type, which a Python tuple does not carry.

use std::sync::atomic::{AtomicBool, Ordering};

use bloomkit::{KeyFeed, KeyHasher, KeySink};
use pyo3::exceptions::{PyOverflowError, PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyByteArray, PyBytes, PyInt, PyMemoryView, PyString, PyTuple};
use pyo3::PyTypeInfo;

use crate::in_place;

/// Tuples nest at most this deep: deeper is a mistake, or an attempt to exhaust the stack.
const MAX_DEPTH: u32 = 32;

/// The hash of `key` under `hasher`: what the Rust library computes for the same key.
///
/// # Errors
///
/// `TypeError` for a value that is not a key, `OverflowError` for an integer outside 128
/// bits, `ValueError` for tuples nested too deep, `UnicodeEncodeError` for a `str` with a
/// lone surrogate (it has no UTF-8 bytes).
#[inline]
pub(crate) fn hash_key(key: &Bound<'_, PyAny>, hasher: KeyHasher) -> PyResult<u64> {
    // SAFETY: `key` is a live object, kept alive by the caller for the call.
    match unsafe { hash_fast(key.as_ptr(), hasher) } {
        Some(hash) => Ok(hash),
        None => hash_slow(key, hasher),
    }
}

/// [`hash_key`] of the commonest keys, without a `PyResult` or a reference count: an exact
/// `str`, `int` of at most 64 bits or `bytes`, read in place where the layout is known
/// (`in_place`). `None` for anything else, and for a key whose reading fails (a `str`
/// with a lone surrogate): [`hash_slow`] then reads it again and raises the error.
///
/// # Safety
///
/// `key` points to a live object, which stays alive for the call. The call runs no Python
/// code, so a caller may pass an object it only borrows (a list's item).
#[inline(always)]
pub(crate) unsafe fn hash_fast(key: *mut ffi::PyObject, hasher: KeyHasher) -> Option<u64> {
    // SAFETY: `key` is live (the caller's promise), so its type can be read.
    let ty = unsafe { ffi::Py_TYPE(key) };
    if ty == &raw mut ffi::PyUnicode_Type {
        // SAFETY: `key` is exactly a `str`, and live for as long as the bytes are hashed.
        if let Some(bytes) = unsafe { in_place::ascii(key) } {
            return Some(hasher.hash_bytes(bytes));
        }
        // SAFETY: as above.
        return match unsafe { cached_utf8(key) } {
            Some(Ok(bytes)) => Some(hasher.hash_bytes(bytes)),
            Some(Err(())) => {
                // SAFETY: the call failed and set an error, which is dropped: `hash_slow`
                // reads the string again and raises it.
                unsafe { ffi::PyErr_Clear() };
                None
            }
            None => None,
        };
    }
    if ty == &raw mut ffi::PyLong_Type {
        // SAFETY: `key` is exactly an `int`.
        return unsafe { in_place::small_int(key) }.map(|v| v.hash(hasher));
    }
    if ty == &raw mut ffi::PyBytes_Type {
        // SAFETY: `key` is a live `bytes`: the calls cannot fail, and its bytes live as long
        // as it does.
        let bytes = unsafe {
            let data = ffi::PyBytes_AsString(key);
            let len = ffi::PyBytes_Size(key);
            std::slice::from_raw_parts(data.cast::<u8>(), len as usize)
        };
        return Some(hasher.hash_bytes(bytes));
    }
    None
}

/// [`hash_key`] through PyO3's checked calls: what [`hash_fast`] declines.
#[inline(never)]
pub(crate) fn hash_slow(key: &Bound<'_, PyAny>, hasher: KeyHasher) -> PyResult<u64> {
    match hash_builtin(key, hasher, true) {
        Some(hash) => hash,
        None => hash_other(key, hasher),
    }
}

/// [`hash_key`] for a `str`, `int` or `bytes` (exactly of that type, or of a subclass too),
/// `None` for anything else.
#[inline(always)]
fn hash_builtin(key: &Bound<'_, PyAny>, hasher: KeyHasher, exact: bool) -> Option<PyResult<u64>> {
    if let Some(text) = cast::<PyString>(key, exact) {
        return Some(with_utf8(text, |bytes| hasher.hash_bytes(bytes)));
    }
    if let Some(int) = cast::<PyInt>(key, exact) {
        return Some(int_value(int).map(|v| v.hash(hasher)));
    }
    if let Some(bytes) = cast::<PyBytes>(key, exact) {
        return Some(Ok(hasher.hash_bytes(bytes.as_bytes())));
    }
    None
}

/// `key` as a `T`: of exactly that type, or also of a subclass.
#[inline(always)]
fn cast<'a, 'py, T: PyTypeInfo>(
    key: &'a Bound<'py, PyAny>,
    exact: bool,
) -> Option<&'a Bound<'py, T>> {
    if exact {
        key.cast_exact::<T>().ok()
    } else {
        key.cast::<T>().ok()
    }
}

/// [`hash_key`] for the rarer kinds of key (subclasses included), out of the inlined path.
#[inline(never)]
fn hash_other(key: &Bound<'_, PyAny>, hasher: KeyHasher) -> PyResult<u64> {
    if let Some(hash) = hash_builtin(key, hasher, false) {
        return hash;
    }
    if let Ok(tuple) = key.cast::<PyTuple>() {
        if hasher.feed() != KeyFeed::Key {
            return Err(PyTypeError::new_err(
                "this filter was read from a file bloomkit 0.1 wrote, which hashed a tuple key \
                 through Rust's std::hash::Hash of its fields' Rust types (a u32 as 4 bytes, \
                 an i64 as 8...), types a Python tuple does not have; query it with byte \
                 string or int keys, or rebuild it with this version",
            ));
        }
        let mut sink = KeySink::with_seed(hasher.seed());
        feed_tuple(tuple, &mut sink, 1)?;
        return Ok(sink.finish());
    }
    if let Some(bytes) = byte_string(key)? {
        return Ok(hasher.hash_bytes(&bytes));
    }
    if let Some(int) = index_value(key)? {
        return Ok(int.hash(hasher));
    }
    Err(not_a_key(key, None))
}

/// The bytes of a `bytearray`, `memoryview` or other non-`bytes` byte string, copied (so no
/// other thread can change them while they are hashed); `None` for anything else.
fn byte_string(key: &Bound<'_, PyAny>) -> PyResult<Option<Vec<u8>>> {
    if let Ok(array) = key.cast::<PyByteArray>() {
        return Ok(Some(array.to_vec()));
    }
    if key.is_instance_of::<PyMemoryView>() {
        return Ok(Some(crate::batch::buffer_bytes(key)?.as_bytes().to_vec()));
    }
    Ok(None)
}

/// Calls `f` with the UTF-8 bytes of `text`.
///
/// On CPython 3.10 and later the bytes are the string's own UTF-8 form, which CPython keeps
/// with the string (for ASCII it is the string's data): nothing is copied or allocated. On
/// 3.9, where that call is not in the stable ABI, the string is encoded into a new `bytes`.
#[inline]
pub(crate) fn with_utf8<R>(text: &Bound<'_, PyString>, f: impl FnOnce(&[u8]) -> R) -> PyResult<R> {
    // SAFETY: `text` is a live str, which it keeps alive past `f`; no Python code runs
    // between.
    match unsafe { cached_utf8(text.as_ptr()) } {
        Some(Ok(bytes)) => return Ok(f(bytes)),
        Some(Err(())) => return Err(PyErr::fetch(text.py())),
        None => {}
    }
    let encoded = text.encode_utf8()?;
    Ok(f(encoded.as_bytes()))
}

/// A string's UTF-8 form as CPython keeps it with the string (3.10+): `None` where that
/// call is not used, `Some(Err(()))` if it fails (a lone surrogate), with the error set.
///
/// # Safety
///
/// `text` points to a live `str`; the slice must not outlive it, and no Python code may run
/// while it is used.
#[inline(always)]
unsafe fn cached_utf8<'a>(text: *mut ffi::PyObject) -> Option<Result<&'a [u8], ()>> {
    #[cfg(not(windows))]
    if UTF8_IN_PLACE.load(Ordering::Relaxed) {
        let mut len: ffi::Py_ssize_t = 0;
        // SAFETY: `text` is a live str, and the call only runs on interpreters whose stable
        // ABI has it (3.10+, chosen at import by `read_in_place`; 3.9 exports the same
        // function, but it is not called there). The buffer it returns belongs to the
        // string and lives as long as the string. (It pays: `contains_many` of 200,000 short
        // str keys took 341 instructions a key this way, 554 encoding each into a new
        // bytes; callgrind.)
        let data = unsafe { PyUnicode_AsUTF8AndSize(text, &mut len) };
        if data.is_null() {
            return Some(Err(()));
        }
        // SAFETY: CPython guarantees `len` bytes at `data`, and `len` is not negative.
        return Some(Ok(unsafe {
            std::slice::from_raw_parts(data.cast::<u8>(), len as usize)
        }));
    }
    let _ = text;
    None
}

// Declared here because PyO3 declares it only when building for 3.10+ (or without abi3).
// Not on Windows, where an abi3 module links to python3.dll and 3.9's lacks the symbol.
#[cfg(not(windows))]
extern "C" {
    fn PyUnicode_AsUTF8AndSize(
        unicode: *mut ffi::PyObject,
        size: *mut ffi::Py_ssize_t,
    ) -> *const std::os::raw::c_char;
}

/// Whether [`with_utf8`] may read a string's UTF-8 in place (the interpreter is 3.10+).
static UTF8_IN_PLACE: AtomicBool = AtomicBool::new(false);

/// Chooses how keys are read, for the interpreter the module was imported into: in place
/// (`true`: strings' UTF-8 where CPython keeps it, on 3.10+; compact ASCII strings and small
/// ints straight from the object where `in_place` knows the layout) or through calls that
/// copy (`false`: the tests compare both). Returns the previous setting.
pub(crate) fn read_in_place(py: Python<'_>, in_place: bool) -> bool {
    let before = UTF8_IN_PLACE.load(Ordering::Relaxed);
    let utf8 = in_place && py.version_info() >= (3, 10) && cfg!(not(windows));
    UTF8_IN_PLACE.store(utf8, Ordering::Relaxed);
    in_place::init(py, in_place);
    before
}

/// A Python integer as the narrowest Rust integer type that holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum IntKey {
    I64(i64),
    U64(u64),
    I128(i128),
    U128(u128),
}

impl IntKey {
    /// The key's hash: by value under the current feed, by type under 0.1's.
    #[inline(always)]
    pub(crate) fn hash(self, hasher: KeyHasher) -> u64 {
        match self {
            // 0 to i64::MAX is the same key as any unsigned type of the value.
            IntKey::I64(v) if v >= 0 => hasher.hash(&(v as u64)),
            IntKey::I64(v) => hasher.hash(&v),
            IntKey::U64(v) => hasher.hash(&v),
            IntKey::I128(v) => hasher.hash(&v),
            IntKey::U128(v) => hasher.hash(&v),
        }
    }
}

/// The value of an `int` (or `bool`).
///
/// # Errors
///
/// `OverflowError` outside `i128::MIN ..= u128::MAX`.
#[inline]
pub(crate) fn int_value(int: &Bound<'_, PyInt>) -> PyResult<IntKey> {
    let mut overflow: std::os::raw::c_int = 0;
    // SAFETY: `int` is a live int; the call reports a value beyond 64 bits in `overflow`
    // rather than as an error, and sets no error for an int.
    let v = unsafe { ffi::PyLong_AsLongLongAndOverflow(int.as_ptr(), &mut overflow) };
    if overflow == 0 {
        return Ok(IntKey::I64(v));
    }
    wide_int(int)
}

/// An integer beyond `i64`: `u64`, `i128` or `u128`.
#[inline(never)]
fn wide_int(int: &Bound<'_, PyInt>) -> PyResult<IntKey> {
    if let Ok(v) = int.extract::<u64>() {
        return Ok(IntKey::U64(v));
    }
    if let Ok(v) = int.extract::<i128>() {
        return Ok(IntKey::I128(v));
    }
    if let Ok(v) = int.extract::<u128>() {
        return Ok(IntKey::U128(v));
    }
    Err(PyOverflowError::new_err(
        "int key outside the 128-bit range Rust integers have (-2**127 to 2**128 - 1); \
         make bytes of it, for example n.to_bytes((n.bit_length() + 8) // 8, 'little', \
         signed=True)",
    ))
}

/// The value of an object with `__index__` that is not an `int` (a NumPy integer), or
/// `None` for an object without one.
fn index_value(key: &Bound<'_, PyAny>) -> PyResult<Option<IntKey>> {
    let py = key.py();
    if !key.get_type().hasattr(pyo3::intern!(py, "__index__"))? {
        return Ok(None);
    }
    static INDEX: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    let index = INDEX.import(py, "operator", "index")?;
    let value = index.call1((key,))?;
    Ok(Some(int_value(value.cast::<PyInt>()?)?))
}

/// The error for a value that is not a key (`position`: its place in a tuple key).
pub(crate) fn not_a_key(key: &Bound<'_, PyAny>, position: Option<usize>) -> PyErr {
    let type_name = key
        .get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".to_string());
    let place = match position {
        Some(i) => format!(" (field {i} of a tuple key)"),
        None => String::new(),
    };
    PyTypeError::new_err(format!(
        "a key must be str, bytes, bytearray, memoryview, int, or a tuple of these; got \
         {type_name}{place}. Make bytes of it first, for example str(key).encode(), \
         struct.pack('<d', x) for a float, or uuid.bytes: bloomkit never uses Python's hash(), \
         which changes from one process to the next"
    ))
}

/// Writes an integer field into `sink`.
fn write_int(sink: &mut KeySink, value: IntKey) {
    match value {
        IntKey::I64(v) => sink.write_i64(v),
        IntKey::U64(v) => sink.write_u64(v),
        IntKey::I128(v) => sink.write_i128(v),
        IntKey::U128(v) => sink.write_u128(v),
    }
}

/// Writes a tuple key's fields into `sink`.
fn feed_tuple(tuple: &Bound<'_, PyTuple>, sink: &mut KeySink, depth: u32) -> PyResult<()> {
    if depth > MAX_DEPTH {
        return Err(PyValueError::new_err(format!(
            "a tuple key nests more than {MAX_DEPTH} tuples deep; flatten it"
        )));
    }
    for (i, field) in tuple.iter().enumerate() {
        if let Ok(text) = field.cast::<PyString>() {
            with_utf8(text, |bytes| sink.write_bytes(bytes))?;
        } else if let Ok(bytes) = field.cast::<PyBytes>() {
            sink.write_bytes(bytes.as_bytes());
        } else if let Ok(int) = field.cast::<PyInt>() {
            write_int(sink, int_value(int)?);
        } else if let Ok(inner) = field.cast::<PyTuple>() {
            feed_tuple(inner, sink, depth + 1)?;
        } else if let Some(bytes) = byte_string(&field)? {
            sink.write_bytes(&bytes);
        } else if let Some(int) = index_value(&field)? {
            write_int(sink, int);
        } else {
            return Err(not_a_key(&field, Some(i)));
        }
    }
    Ok(())
}
