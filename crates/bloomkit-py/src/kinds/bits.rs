//! The Bloom filters planned from a number of keys and a rate: classic, blocked, sector,
//! counting and aging.

use bloomkit::{
    AgingBloomFilter, BlockedBloomFilter, BloomFilter, CountingBloomFilter, SectorBloomFilter,
};
use pyo3::prelude::*;

use super::{held, held_mut, set};
use crate::errors::OrRaise;
use crate::filter::PyFilter;

/// A Bloom filter class made as the Rust `Kind::new(items, fp_rate)` makes it, with the
/// builder's settings as keyword arguments: the seed, the bits (`$bits`), the probes.
macro_rules! bits_kind {
    ($(#[$doc:meta])* $class:ident = $name:literal: $filter:ident, $builder:ident, $bits:ident) => {
        $(#[$doc])*
        #[pyclass(extends = PyFilter, module = "bloomkit", name = $name)]
        pub(crate) struct $class;

        #[pymethods]
        impl $class {
            #[new]
            #[pyo3(signature = (expected_items, fp_rate, *, seed = None, $bits = None, num_hashes = None))]
            fn new(py: Python<'_>, expected_items: u64, fp_rate: f64, seed: Option<u64>, $bits: Option<u64>, num_hashes: Option<u32>) -> PyResult<PyClassInitializer<Self>> {
                let builder = $filter::builder(expected_items, fp_rate);
                let builder = set(builder, seed, bloomkit::$builder::seed);
                let builder = set(builder, $bits, bloomkit::$builder::$bits);
                let builder = set(builder, num_hashes, bloomkit::$builder::num_hashes);
                let filter = py.detach(|| builder.build()).or_raise(py)?;
                Ok(PyFilter::made(filter.into(), Some(fp_rate)).add_subclass($class))
            }
        }
    };
}

bits_kind! {
    /// The classic Bloom filter: k probes spread over the whole bit array, the textbook
    /// −ln p / (ln 2)² bits per key.
    ///
    /// ``BloomFilter(expected_items, fp_rate, *, seed=None, num_bits=None, num_hashes=None)``
    /// plans bits and probes for `expected_items` keys at `fp_rate`; `num_bits` and
    /// `num_hashes` override the plan. Set-like: ``add``, ``update``, ``in``, ``len``, ``|``,
    /// ``&``, ``copy``, ``clear``, ``==``. ``bloomkit.open`` queries one in place from a
    /// file.
    PyBloomFilter = "BloomFilter": BloomFilter, BloomBuilder, num_bits
}

bits_kind! {
    /// The blocked Bloom filter, the one to choose by default: all of a key's probes fall in
    /// one 64-byte cache line, so a query costs one cache miss, for about 3% more memory than
    /// ``BloomFilter``.
    ///
    /// ``BlockedBloomFilter(expected_items, fp_rate, *, seed=None, num_bits=None,
    /// num_hashes=None)``, as ``BloomFilter``. ``bloomkit.open`` queries one in place from a
    /// file.
    PyBlockedBloomFilter = "BlockedBloomFilter": BlockedBloomFilter, BlockedBuilder, num_bits
}

bits_kind! {
    /// The sector Bloom filter: the blocked layout with the same number of bits set in each
    /// of a line's eight words, the fewest instructions per insert; about 2% more memory
    /// than ``BlockedBloomFilter`` at 1%.
    ///
    /// ``SectorBloomFilter(expected_items, fp_rate, *, seed=None, num_bits=None,
    /// num_hashes=None)``, as ``BloomFilter`` (`num_hashes` a multiple of 8, up to 64).
    PySectorBloomFilter = "SectorBloomFilter": SectorBloomFilter, SectorBuilder, num_bits
}

bits_kind! {
    /// The counting Bloom filter: a 4-bit counter for each bit of a classic filter, so keys
    /// can be removed (``remove``, ``discard``), for four times the memory.
    ///
    /// ``CountingBloomFilter(expected_items, fp_rate, *, seed=None, num_counters=None,
    /// num_hashes=None)``. A key added twice is held twice, and takes two removals to go.
    /// Merges with ``|`` (counters added).
    PyCountingBloomFilter = "CountingBloomFilter": CountingBloomFilter, CountingBuilder, num_counters
}

#[pymethods]
impl PyCountingBloomFilter {
    /// Counters in the filter (4 bits each).
    #[getter]
    fn num_counters(slf: PyRef<'_, Self>) -> PyResult<u64> {
        Ok(held!(slf, Counting).num_counters())
    }
}

/// The aging Bloom filter: "seen recently". Keys go into the newest of several
/// generations; ``rotate()`` drops the oldest and starts a new one, so a key is remembered
/// for between G − 1 and G rotation periods.
///
/// ``AgingBloomFilter(items_per_generation, fp_rate, *, generations=None, seed=None,
/// num_bits_per_generation=None, num_hashes=None)``: `fp_rate` is the whole filter's, each
/// generation planned tighter to keep it (2 generations unless given).
#[pyclass(extends = PyFilter, module = "bloomkit", name = "AgingBloomFilter")]
pub(crate) struct PyAgingBloomFilter;

#[pymethods]
impl PyAgingBloomFilter {
    #[new]
    #[pyo3(signature = (items_per_generation, fp_rate, *, generations = None, seed = None, num_bits_per_generation = None, num_hashes = None))]
    fn new(
        py: Python<'_>,
        items_per_generation: u64,
        fp_rate: f64,
        generations: Option<u32>,
        seed: Option<u64>,
        num_bits_per_generation: Option<u64>,
        num_hashes: Option<u32>,
    ) -> PyResult<PyClassInitializer<Self>> {
        let builder = AgingBloomFilter::builder(items_per_generation, fp_rate);
        let builder = set(builder, generations, bloomkit::AgingBuilder::generations);
        let builder = set(builder, seed, bloomkit::AgingBuilder::seed);
        let builder = set(
            builder,
            num_bits_per_generation,
            bloomkit::AgingBuilder::num_bits_per_generation,
        );
        let builder = set(builder, num_hashes, bloomkit::AgingBuilder::num_hashes);
        let filter = py.detach(|| builder.build()).or_raise(py)?;
        Ok(PyFilter::made(filter.into(), Some(fp_rate)).add_subclass(PyAgingBloomFilter))
    }

    /// Drops the oldest generation and starts an empty newest one: keys added more than
    /// G − 1 rotations ago are forgotten.
    fn rotate(mut slf: PyRefMut<'_, Self>) -> PyResult<()> {
        held_mut!(slf, Aging).rotate();
        Ok(())
    }

    /// The number of generations, G.
    #[getter]
    fn num_generations(slf: PyRef<'_, Self>) -> PyResult<u32> {
        Ok(held!(slf, Aging).num_generations())
    }
}
