//! The static filters, built once from all their keys: ribbon and binary fuse.

use bloomkit::{BinaryFuseFilter, KeyHasher, RibbonFilter, RibbonLayout, DEFAULT_SEED};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use super::{held, set};
use crate::batch::{for_each_chunk, Stop};
use crate::errors::OrRaise;
use crate::filter::PyFilter;

/// The hashes of every key of `keys` under `seed`, for a static filter's build.
fn hash_all(keys: &Bound<'_, PyAny>, key_size: Option<usize>, seed: u64) -> PyResult<Vec<u64>> {
    let mut hashes = Vec::new();
    let result = for_each_chunk(keys, key_size, KeyHasher::new(seed), |chunk| {
        hashes.extend_from_slice(chunk);
        Ok(())
    });
    match result {
        Ok(_) => Ok(hashes),
        Err(Stop::Python(e)) => Err(e),
        Err(Stop::Filter(e)) => Err(crate::errors::to_py(keys.py(), e)),
    }
}

/// The ribbon filter: built once from all its keys, within about 5% of the least memory
/// any filter can take for its rate; never changed afterwards.
///
/// ``RibbonFilter(keys, fp_rate, *, seed=None, result_bits=None, layout=None,
/// key_size=None)``: `keys` is any iterable of keys (or a buffer of `key_size`-byte keys);
/// the rate delivered is 2^−r, the largest not above `fp_rate` unless `result_bits` = r is
/// given. `layout` is ``"homogeneous"`` (the default: built in bounded memory) or
/// ``"standard"`` (which bloomkit 0.1 reads too).
#[pyclass(extends = PyFilter, module = "bloomkit", name = "RibbonFilter")]
pub(crate) struct PyRibbonFilter;

#[pymethods]
impl PyRibbonFilter {
    #[new]
    #[pyo3(signature = (keys, fp_rate, *, seed = None, result_bits = None, layout = None, key_size = None))]
    fn new(
        py: Python<'_>,
        keys: &Bound<'_, PyAny>,
        fp_rate: f64,
        seed: Option<u64>,
        result_bits: Option<u32>,
        layout: Option<&str>,
        key_size: Option<usize>,
    ) -> PyResult<PyClassInitializer<Self>> {
        let layout = layout.map(|name| match name {
            "homogeneous" => Ok(RibbonLayout::Homogeneous),
            "standard" => Ok(RibbonLayout::Standard),
            other => Err(PyValueError::new_err(format!(
                "invalid layout {other:?}: expected \"homogeneous\" or \"standard\""
            ))),
        });
        let builder = RibbonFilter::builder(fp_rate);
        let builder = set(
            builder,
            layout.transpose()?,
            bloomkit::RibbonBuilder::layout,
        );
        let builder = set(builder, result_bits, bloomkit::RibbonBuilder::result_bits);
        let builder = set(builder, seed, bloomkit::RibbonBuilder::seed);
        let hashes = hash_all(keys, key_size, seed.unwrap_or(DEFAULT_SEED))?;
        let filter = py
            .detach(|| builder.build_from_hashes(&hashes))
            .or_raise(py)?;
        Ok(PyFilter::made(filter.into(), None).add_subclass(PyRibbonFilter))
    }

    /// Result bits per slot, r: the rate is 2^−r.
    #[getter]
    fn result_bits(slf: PyRef<'_, Self>) -> PyResult<u32> {
        Ok(held!(slf, Ribbon).result_bits())
    }

    /// Bits per key the filter was built from.
    #[getter]
    fn bits_per_key(slf: PyRef<'_, Self>) -> PyResult<f64> {
        Ok(held!(slf, Ribbon).bits_per_key())
    }
}

/// The binary fuse filter: built once from all its keys, the fastest queries (three loads
/// and two XORs), at 9.0 bits per key for 2^−8 (8-bit fingerprints) or 18.0 for 2^−16.
///
/// ``BinaryFuseFilter(keys, fp_rate, *, seed=None, fingerprint_bits=None,
/// key_size=None)``: fingerprints of 8 bits unless `fp_rate` asks for fewer false
/// positives (16 bits) or `fingerprint_bits` is given.
#[pyclass(extends = PyFilter, module = "bloomkit", name = "BinaryFuseFilter")]
pub(crate) struct PyBinaryFuseFilter;

#[pymethods]
impl PyBinaryFuseFilter {
    #[new]
    #[pyo3(signature = (keys, fp_rate, *, seed = None, fingerprint_bits = None, key_size = None))]
    fn new(
        py: Python<'_>,
        keys: &Bound<'_, PyAny>,
        fp_rate: f64,
        seed: Option<u64>,
        fingerprint_bits: Option<u32>,
        key_size: Option<usize>,
    ) -> PyResult<PyClassInitializer<Self>> {
        let builder = BinaryFuseFilter::builder(fp_rate);
        let builder = set(
            builder,
            fingerprint_bits,
            bloomkit::FuseBuilder::fingerprint_bits,
        );
        let builder = set(builder, seed, bloomkit::FuseBuilder::seed);
        let hashes = hash_all(keys, key_size, seed.unwrap_or(DEFAULT_SEED))?;
        let filter = py
            .detach(|| builder.build_from_hashes(&hashes))
            .or_raise(py)?;
        Ok(PyFilter::made(filter.into(), None).add_subclass(PyBinaryFuseFilter))
    }

    /// Bits in each fingerprint: 8 or 16.
    #[getter]
    fn fingerprint_bits(slf: PyRef<'_, Self>) -> PyResult<u32> {
        Ok(held!(slf, Fuse).fingerprint_bits())
    }

    /// Bits per key the filter was built from.
    #[getter]
    fn bits_per_key(slf: PyRef<'_, Self>) -> PyResult<f64> {
        Ok(held!(slf, Fuse).bits_per_key())
    }
}
