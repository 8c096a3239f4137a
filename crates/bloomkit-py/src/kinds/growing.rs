//! The filters that grow: scalable (layers) and cuckoo (sub-filters, with `expansion`).

use bloomkit::{CuckooFilter, LayerLayout, ScalableBloomFilter};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use super::{held, set};
use crate::errors::OrRaise;
use crate::filter::PyFilter;

/// The scalable Bloom filter, for an unknown number of keys: it adds layers as it fills and
/// keeps the false-positive rate under `fp_rate` however far it grows (RedisBloom's ``BF.*``
/// scaling).
///
/// ``ScalableBloomFilter(initial_capacity, fp_rate, *, expansion=None, tightening=None,
/// non_scaling=None, layout=None, seed=None)``: each layer holds `expansion` times the
/// keys of the one before (2), at `tightening` times its rate (0.5); `layout` is
/// ``"blocked"`` (the default, fastest) or ``"classic"`` (about 12% fewer bits after growing
/// 100×). With ``non_scaling=True`` a full filter refuses keys (``FilterFullError``). A key
/// already present is not added again, so ``len`` counts distinct keys (up to false
/// positives).
#[pyclass(extends = PyFilter, module = "bloomkit", name = "ScalableBloomFilter")]
pub(crate) struct PyScalableBloomFilter;

#[pymethods]
impl PyScalableBloomFilter {
    #[new]
    // The builder's settings, each a keyword argument.
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (initial_capacity, fp_rate, *, expansion = None, tightening = None, non_scaling = None, layout = None, seed = None))]
    fn new(
        py: Python<'_>,
        initial_capacity: u64,
        fp_rate: f64,
        expansion: Option<u32>,
        tightening: Option<f64>,
        non_scaling: Option<bool>,
        layout: Option<&str>,
        seed: Option<u64>,
    ) -> PyResult<PyClassInitializer<Self>> {
        let layout = layout.map(|name| match name {
            "blocked" => Ok(LayerLayout::Blocked),
            "classic" => Ok(LayerLayout::Classic),
            other => Err(PyValueError::new_err(format!(
                "invalid layout {other:?}: expected \"blocked\" or \"classic\""
            ))),
        });
        let builder = ScalableBloomFilter::builder(initial_capacity, fp_rate);
        let builder = set(
            builder,
            layout.transpose()?,
            bloomkit::ScalableBuilder::layout,
        );
        let builder = set(builder, expansion, bloomkit::ScalableBuilder::expansion);
        let builder = set(builder, tightening, bloomkit::ScalableBuilder::tightening);
        let builder = set(builder, non_scaling, bloomkit::ScalableBuilder::non_scaling);
        let builder = set(builder, seed, bloomkit::ScalableBuilder::seed);
        let filter = py.detach(|| builder.build()).or_raise(py)?;
        Ok(PyFilter::made(filter.into(), Some(fp_rate)).add_subclass(PyScalableBloomFilter))
    }

    /// How many keys the layers made so far hold before another is added.
    #[getter]
    fn capacity(slf: PyRef<'_, Self>) -> PyResult<u64> {
        Ok(held!(slf, Scalable).capacity())
    }

    /// The number of layers.
    #[getter]
    fn num_layers(slf: PyRef<'_, Self>) -> PyResult<usize> {
        Ok(held!(slf, Scalable).num_layers())
    }

    /// The factor each layer's capacity grows by.
    #[getter]
    fn expansion(slf: PyRef<'_, Self>) -> PyResult<u32> {
        Ok(held!(slf, Scalable).expansion())
    }

    /// ``"blocked"`` or ``"classic"``: how each layer lays out its bits.
    #[getter]
    fn layout(slf: PyRef<'_, Self>) -> PyResult<&'static str> {
        Ok(match held!(slf, Scalable).layout() {
            LayerLayout::Classic => "classic",
            _ => "blocked",
        })
    }
}

/// The cuckoo filter: fingerprints in buckets, so keys can be removed (``remove``,
/// ``discard``) and their copies counted (``count``); the smallest filter below a rate of
/// about 3%.
///
/// ``CuckooFilter(capacity, fp_rate, *, expansion=None, fingerprint_bits=None,
/// bucket_size=None, max_kicks=None, max_filters=None, seed=None)``. Without `expansion` a
/// full filter refuses keys (``FilterFullError``); with it, a new sub-filter of
/// `expansion`^k times the buckets is added. A key added twice is held twice.
#[pyclass(extends = PyFilter, module = "bloomkit", name = "CuckooFilter")]
pub(crate) struct PyCuckooFilter;

#[pymethods]
impl PyCuckooFilter {
    #[new]
    // The builder's settings, each a keyword argument.
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (capacity, fp_rate, *, expansion = None, fingerprint_bits = None, bucket_size = None, max_kicks = None, max_filters = None, seed = None))]
    fn new(
        py: Python<'_>,
        capacity: u64,
        fp_rate: f64,
        expansion: Option<u32>,
        fingerprint_bits: Option<u32>,
        bucket_size: Option<u32>,
        max_kicks: Option<u32>,
        max_filters: Option<u32>,
        seed: Option<u64>,
    ) -> PyResult<PyClassInitializer<Self>> {
        let builder = CuckooFilter::builder(capacity, fp_rate);
        let builder = set(builder, expansion, bloomkit::CuckooBuilder::expansion);
        let builder = set(
            builder,
            fingerprint_bits,
            bloomkit::CuckooBuilder::fingerprint_bits,
        );
        let builder = set(builder, bucket_size, bloomkit::CuckooBuilder::bucket_size);
        let builder = set(builder, max_kicks, bloomkit::CuckooBuilder::max_kicks);
        let builder = set(builder, max_filters, bloomkit::CuckooBuilder::max_filters);
        let builder = set(builder, seed, bloomkit::CuckooBuilder::seed);
        let filter = py.detach(|| builder.build()).or_raise(py)?;
        Ok(PyFilter::made(filter.into(), Some(fp_rate)).add_subclass(PyCuckooFilter))
    }

    /// How many copies of `key` the filter holds (its fingerprint's copies in the key's
    /// buckets: a false positive counts too).
    fn count(slf: PyRef<'_, Self>, key: &Bound<'_, PyAny>) -> PyResult<u32> {
        let f = held!(slf, Cuckoo);
        Ok(f.count_hash(crate::keys::hash_key(key, f.key_hasher())?))
    }

    /// How many keys the sub-filters made so far hold at most.
    #[getter]
    fn capacity(slf: PyRef<'_, Self>) -> PyResult<u64> {
        Ok(held!(slf, Cuckoo).capacity())
    }

    /// Bits in each fingerprint.
    #[getter]
    fn fingerprint_bits(slf: PyRef<'_, Self>) -> PyResult<u32> {
        Ok(held!(slf, Cuckoo).fingerprint_bits())
    }

    /// Slots per bucket.
    #[getter]
    fn bucket_size(slf: PyRef<'_, Self>) -> PyResult<u32> {
        Ok(held!(slf, Cuckoo).bucket_size())
    }

    /// Buckets in all sub-filters.
    #[getter]
    fn num_buckets(slf: PyRef<'_, Self>) -> PyResult<u64> {
        Ok(held!(slf, Cuckoo).num_buckets())
    }

    /// The number of sub-filters.
    #[getter]
    fn num_filters(slf: PyRef<'_, Self>) -> PyResult<usize> {
        Ok(held!(slf, Cuckoo).num_filters())
    }

    /// The factor each new sub-filter grows by (0: the filter does not grow).
    #[getter]
    fn expansion(slf: PyRef<'_, Self>) -> PyResult<u32> {
        Ok(held!(slf, Cuckoo).expansion())
    }

    /// The fraction of slots in use, from 0 to 1.
    #[getter]
    fn load_factor(slf: PyRef<'_, Self>) -> PyResult<f64> {
        Ok(held!(slf, Cuckoo).load_factor())
    }
}
