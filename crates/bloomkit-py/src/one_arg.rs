//! `add` as a one-argument method (CPython's `METH_O`): the call per key that loops make.
//!
//! PyO3 gives a method of an abi3 module built for CPython 3.9 a tuple of its arguments and
//! a dictionary of keywords (`METH_VARARGS | METH_KEYWORDS`: the stable ABI has its faster
//! convention only from 3.10), which it then unpacks. A `METH_O` method gets its one
//! argument as it is: a loop of `f.add(key)` over 200,000 int keys into a
//! `BlockedBloomFilter` took 1,165 instructions a key this way against 1,729 as a
//! `#[pymethods]` method (callgrind; rbloom's `add` took 1,749), and measured 1.45x to 1.8x
//! rbloom's speed where the other way was 0.93x to 0.96x (`scripts/bench_python.py`). So
//! `add` is made here as a method descriptor of that convention, placed on each class that
//! adds keys (a `#[classattr]` of the `adding_methods!` macro), and calls the same
//! `PyFilter::add` as everything else.

use std::ffi::CStr;
use std::panic::{catch_unwind, AssertUnwindSafe};

use pyo3::ffi;
use pyo3::panic::PanicException;
use pyo3::prelude::*;
use pyo3::types::PyBool;

use crate::filter::PyFilter;

/// The method's docstring: its signature line (which `inspect.signature` reads), a blank
/// line, the text.
const ADD_DOC: &CStr = c"add($self, key, /)\n--\n\nAdds `key`. Returns ``True`` if it was definitely not in the filter before, \
``False`` if it may have been (a counting or cuckoo filter then holds one more copy). Raises \
``FilterFullError`` from a full cuckoo or non-scaling scalable filter, ``TypeError`` for a \
value that is not a key.";

/// A `METH_O` method descriptor named `add` for instances of `Filter` (each class that
/// adds keys holds one).
pub(crate) fn add_method(py: Python<'_>) -> PyResult<Py<PyAny>> {
    // The definition must outlive every descriptor made from it, so it lives as long as the
    // process: one small allocation per class.
    let def = Box::leak(Box::new(ffi::PyMethodDef {
        ml_name: c"add".as_ptr(),
        ml_meth: ffi::PyMethodDefPointer { PyCFunction: add },
        ml_flags: ffi::METH_O,
        ml_doc: ADD_DOC.as_ptr(),
    }));
    let base = py.get_type::<PyFilter>();
    // SAFETY: `base` is a live type object and `def` a valid definition that is never freed;
    // the call returns a new reference, or NULL with an exception set.
    let descriptor = unsafe { ffi::PyDescr_NewMethod(base.as_ptr().cast(), def) };
    // SAFETY: as above: an owned reference or NULL with the error set.
    Ok(unsafe { Bound::from_owned_ptr_or_err(py, descriptor) }?.unbind())
}

/// The `METH_O` function behind `add`: `PyFilter::add` with PyO3's borrow checking, errors
/// raised as Python exceptions and a panic turned into one rather than unwinding into C.
unsafe extern "C" fn add(this: *mut ffi::PyObject, key: *mut ffi::PyObject) -> *mut ffi::PyObject {
    // SAFETY: CPython calls a METH_O function with the thread attached to the interpreter
    // (holding the GIL), which is all `assume_attached` requires.
    let py = unsafe { Python::assume_attached() };
    let outcome = catch_unwind(AssertUnwindSafe(|| -> PyResult<*mut ffi::PyObject> {
        // SAFETY: CPython passes `this` (checked by the descriptor to be a `Filter`) and
        // `key` as references borrowed for the duration of the call.
        let (this, key) = unsafe { (Borrowed::from_ptr(py, this), Borrowed::from_ptr(py, key)) };
        let filter = this.cast::<PyFilter>()?;
        let added = filter.try_borrow_mut()?.add(&key)?;
        Ok(PyBool::new(py, added).to_owned().into_ptr())
    }));
    let error = match outcome {
        Ok(Ok(result)) => return result,
        Ok(Err(error)) => error,
        Err(_) => PanicException::new_err("bloomkit panicked in add; please report it"),
    };
    error.restore(py);
    std::ptr::null_mut()
}
