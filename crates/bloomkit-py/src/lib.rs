//! The Python package `bloomkit`: the library's filters for Python, with the same keys and
//! the same files as the Rust library, the CLI and the server.
//!
//! A host of the library only (`crates/bloomkit`), as the CLI and the server are: it imports
//! no other host. The Python side is `python/bloomkit/` (the package, its exceptions, the
//! type stubs `__init__.pyi`); this crate is its extension module, `bloomkit._native`.
//!
//! # Where things are
//!
//! * `filter.rs`: `bloomkit.Filter`, the base class every kind's class extends. It holds an
//!   `AnyFilter` and answers what every kind answers (`in`, `contains_many`, `len`, rates,
//!   bytes, files, pickling, copies, `==`), and defines the groups of methods some kinds
//!   share (adding, union, intersection, removal, `num_bits`/`num_hashes`) once each.
//! * `kinds/`: the kinds' classes. `mod.rs` holds the table tying each to its `FilterKind`
//!   and the lists of kinds that get each group of methods; `bits.rs`, `growing.rs` and
//!   `built.rs` the constructors (the Rust builders' settings as keyword arguments) and
//!   what only one kind does.
//! * `keys.rs`: Python values as keys, hashed exactly as the library hashes the same key;
//!   `in_place.rs` reads the commonest (ASCII `str`, small `int`) straight from the object
//!   on the CPython versions whose layout is known.
//! * `batch.rs`: many keys at once: lists, iterables, NumPy arrays, fixed-width buffers,
//!   hashed a chunk at a time, each chunk's filter work with the GIL released.
//! * `files.rs`: bytes and files in the library's format, errors with the offset.
//! * `mapped.rs`: `bloomkit.open`, a blocked or classic filter queried in a mapped file.
//! * `errors.rs`: the library's errors as the Python exceptions of `_errors.py`.
//! * `one_arg.rs`: `add` as a one-argument (`METH_O`) method, the call loops make per key.
//!
//! The tests are Python's: `tests/` beside this crate, run by pytest from `scripts/test.sh`.

use pyo3::prelude::*;

mod batch;
mod errors;
mod files;
mod filter;
mod in_place;
mod keys;
mod kinds;
mod mapped;
mod one_arg;

/// "a" or "an", for a kind's name in a sentence ("an aging filter").
fn article(word: &str) -> &'static str {
    match word.as_bytes().first() {
        Some(b'a' | b'e' | b'i' | b'o' | b'u') => "an",
        _ => "a",
    }
}

/// The stable 64-bit hash bloomkit gives `key` under `seed`: what every filter made with that
/// seed probes for it, in Python, in Rust (`bloomkit::hash_with_seed`), in the CLI and the
/// server.
#[pyfunction]
#[pyo3(signature = (key, seed = bloomkit::DEFAULT_SEED))]
fn hash(key: &Bound<'_, PyAny>, seed: u64) -> PyResult<u64> {
    keys::hash_key(key, bloomkit::KeyHasher::new(seed))
}

/// Reads keys in place (`True`: a str's UTF-8 where CPython keeps it, compact ASCII strings
/// and small ints straight from the object where the layout is known) or through calls that
/// copy (`False`): for the tests, which check that both give the same hashes. Returns the
/// previous setting.
#[pyfunction]
fn _set_in_place(py: Python<'_>, in_place: bool) -> bool {
    keys::read_in_place(py, in_place)
}

#[pymodule]
fn _native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    keys::read_in_place(module.py(), true);
    module.add_class::<filter::PyFilter>()?;
    kinds::register(module)?;
    module.add_class::<mapped::PyMappedFilter>()?;
    module.add_function(wrap_pyfunction!(mapped::open, module)?)?;
    module.add_function(wrap_pyfunction!(hash, module)?)?;
    module.add_function(wrap_pyfunction!(filter::_unpickle, module)?)?;
    module.add_function(wrap_pyfunction!(_set_in_place, module)?)?;
    module.add("DEFAULT_SEED", bloomkit::DEFAULT_SEED)?;
    module.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
