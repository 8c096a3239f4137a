//! A compact ASCII `str`'s bytes and a small `int`'s value read straight from the object, on
//! the CPython versions whose layout of the two is known (3.9 to 3.14, 64-bit, little
//! endian), instead of through a call into the interpreter per key.
//!
//! The stable ABI has no macro for either: `PyUnicode_AsUTF8AndSize` and
//! `PyLong_AsLongLongAndOverflow` are calls that check the type again and, for an int of
//! more than one 30-bit digit, loop with overflow checks. Reading in place pays where keys
//! come by the million (callgrind, `contains_many` of 200,000 keys, Python 3.11: the int
//! call took 65 instructions a key, the str call 26). The layouts:
//!
//! * `str` (`PyASCIIObject`): the length at byte 16, the `state` bit field at byte 32 (bit 5
//!   `compact`, bit 6 `ascii`); a compact ASCII string's characters, which are its UTF-8
//!   bytes, follow the header: at byte 48 on 3.9 to 3.11 (which still have the `wstr`
//!   pointer), 40 from 3.12.
//! * `int`: digits of 30 bits in `u32`s from byte 24. The count and sign are at byte 16: a
//!   signed digit count (`ob_size`) on 3.9 to 3.11, from 3.12 the `lv_tag` (digits << 3,
//!   sign in the low two bits: 0 positive, 1 zero, 2 negative).
//!
//! * `list`: the pointer to its item array at byte 24 (after the variable-size header), and
//!   the reference count of `True` and `False` at byte 0, a plain count before 3.12; from
//!   3.12 both are immortal and nothing counts references to them.
//!
//! Nothing is trusted on faith: [`init`] reads sample objects both ways and turns a layout
//! off if any answer differs, and on any other version, width or byte order both stay off
//! and every key goes through the calls. Callers check the exact type first.

use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString};

use crate::keys::IntKey;

/// Whether a list's item array is read in place, and how `True` and `False` are counted:
/// [`NO_LISTS`], [`COUNTED`] (3.9 to 3.11: their count is a plain number) or [`IMMORTAL`]
/// (3.12 on: they are immortal, and a new reference to them changes nothing).
static LISTS: AtomicU8 = AtomicU8::new(NO_LISTS);
const NO_LISTS: u8 = 0;
const COUNTED: u8 = 1;
const IMMORTAL: u8 = 2;

/// Where a compact ASCII string's characters start; 0 when strings are not read in place.
static ASCII_DATA: AtomicUsize = AtomicUsize::new(0);

/// How an int's digit count and sign are stored: [`NO_INTS`], [`OB_SIZE`] or [`LV_TAG`].
static INT_HEADER: AtomicU8 = AtomicU8::new(NO_INTS);
const NO_INTS: u8 = 0;
const OB_SIZE: u8 = 1;
const LV_TAG: u8 = 2;

const STATE_COMPACT: u32 = 1 << 5;
const STATE_ASCII: u32 = 1 << 6;

/// Chooses the layouts for the running interpreter (`enabled`: whether to read in place at
/// all; the tests turn it off to compare), then checks them on sample objects. Returns
/// whether both strings and ints are read in place.
pub(crate) fn init(py: Python<'_>, enabled: bool) -> bool {
    ASCII_DATA.store(0, Ordering::Relaxed);
    INT_HEADER.store(NO_INTS, Ordering::Relaxed);
    LISTS.store(NO_LISTS, Ordering::Relaxed);
    let known = enabled
        && cfg!(all(target_pointer_width = "64", target_endian = "little"))
        && py.version_info() >= (3, 9)
        && py.version_info() < (3, 15);
    if !known {
        return false;
    }
    let old = py.version_info() < (3, 12);
    ASCII_DATA.store(if old { 48 } else { 40 }, Ordering::Relaxed);
    if !strings_agree(py) {
        ASCII_DATA.store(0, Ordering::Relaxed);
    }
    if thirty_bit_digits(py) {
        INT_HEADER.store(if old { OB_SIZE } else { LV_TAG }, Ordering::Relaxed);
        if !ints_agree(py) {
            INT_HEADER.store(NO_INTS, Ordering::Relaxed);
        }
    }
    LISTS.store(if old { COUNTED } else { IMMORTAL }, Ordering::Relaxed);
    if !lists_agree(py) {
        LISTS.store(NO_LISTS, Ordering::Relaxed);
    }
    ASCII_DATA.load(Ordering::Relaxed) != 0
        && INT_HEADER.load(Ordering::Relaxed) != NO_INTS
        && LISTS.load(Ordering::Relaxed) != NO_LISTS
}

/// Whether [`list_items`] finds a sample list's items where `PyList_GetItem` does.
fn lists_agree(py: Python<'_>) -> bool {
    let values = [py.None(), py.Ellipsis(), py.NotImplemented()];
    let Ok(list) = PyList::new(py, &values) else {
        return false;
    };
    // SAFETY: `list` is a live list of 3 items, as `list_items` requires.
    let items = unsafe { list_items(list.as_ptr()) };
    items.is_some_and(|items| {
        (0..values.len()).all(|i| {
            // SAFETY: `items` is the array of the list's 3 items, unchanged since.
            let read = unsafe { *items.add(i) };
            read == values[i].as_ptr()
        })
    })
}

/// The array of a list's item pointers; `None` where lists are not read in place.
///
/// # Safety
///
/// `op` points to a live list; the array is only good until the list next changes.
#[inline]
pub(crate) unsafe fn list_items(op: *mut ffi::PyObject) -> Option<*mut *mut ffi::PyObject> {
    if LISTS.load(Ordering::Relaxed) == NO_LISTS {
        return None;
    }
    // SAFETY: on the versions `init` chose (and checked), a list's `ob_item` pointer is at
    // byte 24 of the object.
    Some(unsafe {
        op.cast::<u8>()
            .add(24)
            .cast::<*mut *mut ffi::PyObject>()
            .read()
    })
}

/// Adds `n` references to `True` or `False` at once, as `n` calls of `Py_IncRef` would;
/// only where [`list_items`] is in use.
///
/// # Safety
///
/// `op` is `Py_True` or `Py_False`, the thread holds the GIL, and [`list_items`] gave
/// `Some` (so the interpreter's layout is one `init` knows).
#[inline]
pub(crate) unsafe fn add_bool_refs(op: *mut ffi::PyObject, n: usize) {
    if LISTS.load(Ordering::Relaxed) == COUNTED {
        // SAFETY: before 3.12 an object's reference count is the plain `Py_ssize_t` at byte
        // 0, which only the thread holding the GIL changes.
        unsafe {
            let count = op.cast::<ffi::Py_ssize_t>();
            count.write(count.read() + n as ffi::Py_ssize_t);
        }
    }
    // From 3.12 `True` and `False` are immortal: `Py_IncRef` leaves them unchanged.
}

/// Whether the interpreter's ints have 30-bit digits in 4 bytes (`sys.int_info`), as
/// [`small_int`] reads them.
fn thirty_bit_digits(py: Python<'_>) -> bool {
    let info = || -> PyResult<(u32, u32)> {
        let info = py.import("sys")?.getattr("int_info")?;
        Ok((
            info.getattr("bits_per_digit")?.extract()?,
            info.getattr("sizeof_digit")?.extract()?,
        ))
    };
    matches!(info(), Ok((30, 4)))
}

/// Whether [`ascii`] reads sample strings as CPython's own calls do: the ASCII ones in
/// place, every other one not at all.
fn strings_agree(py: Python<'_>) -> bool {
    [
        "",
        "a",
        "bloomkit",
        "user:9e3779b97f4a7c16",
        &"x".repeat(300),
    ]
    .iter()
    .all(|text| {
        let s = PyString::new(py, text);
        // SAFETY: `s` is a live object of exactly type `str`, as `ascii` requires.
        let read = unsafe { ascii(s.as_ptr()) };
        read == Some(text.as_bytes())
    }) && ["é", "ab\u{20ac}", "\u{1f600}"].iter().all(|text| {
        let s = PyString::new(py, text);
        // SAFETY: as above.
        unsafe { ascii(s.as_ptr()) }.is_none()
    })
}

/// Whether [`small_int`] reads sample ints as `PyLong_AsLongLongAndOverflow` and PyO3's
/// conversions do, and declines those beyond 64 bits.
fn ints_agree(py: Python<'_>) -> bool {
    let mut samples: Vec<i128> = vec![0, 1, -1, 7, -7, u32::MAX as i128, -(u32::MAX as i128)];
    for bits in [29, 30, 31, 59, 60, 61, 62, 63, 64] {
        let p = 1i128 << bits;
        samples.extend([p - 1, p, p + 1, -(p - 1), -p, -(p + 1)]);
    }
    samples.extend([1 << 90, (1 << 90) - 1, -(1 << 90), 1 << 100]);
    samples.into_iter().all(|v| {
        let Ok(int) = v.into_pyobject(py);
        let expected = if let Ok(v) = i64::try_from(v) {
            Some(IntKey::I64(v))
        } else {
            u64::try_from(v).ok().map(IntKey::U64)
        };
        // SAFETY: `int` is a live object of exactly type `int`, as `small_int` requires.
        let read = unsafe { small_int(int.as_ptr()) };
        read == expected
    })
}

/// The UTF-8 bytes of a compact ASCII string, read in place; `None` for any other string,
/// or where strings are not read in place.
///
/// # Safety
///
/// `op` points to a live object of exactly type `str`; the slice must not outlive it (no
/// Python code may run while it is used).
#[inline(always)]
pub(crate) unsafe fn ascii<'a>(op: *mut ffi::PyObject) -> Option<&'a [u8]> {
    let data = ASCII_DATA.load(Ordering::Relaxed);
    if data == 0 {
        return None;
    }
    let base = op.cast::<u8>();
    // SAFETY: on the versions `init` chose `data` for (and checked), a `str` object starts
    // with the header described in the module's documentation: its `state` word at byte 32
    // and its length at byte 16 are inside the object.
    let state = unsafe { base.add(32).cast::<u32>().read() };
    if state & (STATE_COMPACT | STATE_ASCII) != STATE_COMPACT | STATE_ASCII {
        return None;
    }
    // SAFETY: as above; the length of a string is never negative.
    let len = unsafe { base.add(16).cast::<ffi::Py_ssize_t>().read() } as usize;
    // SAFETY: a compact ASCII string keeps its `len` characters, one byte each, right after
    // the header at byte `data`, for as long as it lives; the caller keeps it alive and
    // runs no Python code while the slice is used.
    Some(unsafe { std::slice::from_raw_parts(base.add(data), len) })
}

/// The value of an int of at most 64 bits, read in place from its digits; `None` beyond
/// 64 bits, or where ints are not read in place.
///
/// # Safety
///
/// `op` points to a live object of exactly type `int`.
#[inline(always)]
pub(crate) unsafe fn small_int(op: *mut ffi::PyObject) -> Option<IntKey> {
    let header = INT_HEADER.load(Ordering::Relaxed);
    if header == NO_INTS {
        return None;
    }
    let base = op.cast::<u8>();
    // SAFETY: on the versions `init` chose the header for (and checked), an int's count and
    // sign are the word at byte 16, as the module's documentation says.
    let word = unsafe { base.add(16).cast::<isize>().read() };
    let (negative, digits) = if header == OB_SIZE {
        (word < 0, word.unsigned_abs())
    } else {
        let tag = word as usize;
        (tag & 3 == 2, tag >> 3)
    };
    let digit = |i: usize| -> u64 {
        // SAFETY: the int has `digits` digits of 4 bytes from byte 24; `i < digits`.
        u64::from(unsafe { base.add(24 + 4 * i).cast::<u32>().read() })
    };
    let magnitude = match digits {
        0 => 0,
        1 => digit(0),
        2 => digit(0) | digit(1) << 30,
        // Three digits hold up to 90 bits: 64 fit when the top one is below 2**4.
        3 if digit(2) < 1 << 4 => digit(0) | digit(1) << 30 | digit(2) << 60,
        _ => return None,
    };
    Some(if negative {
        // -2**63 is the most negative i64; anything below is beyond 64 bits.
        if magnitude > 1 << 63 {
            return None;
        }
        IntKey::I64((magnitude as i64).wrapping_neg())
    } else if let Ok(v) = i64::try_from(magnitude) {
        IntKey::I64(v)
    } else {
        IntKey::U64(magnitude)
    })
}
