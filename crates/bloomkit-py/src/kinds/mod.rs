//! The kinds' classes: the table that ties each to its `FilterKind`, and the lists of kinds
//! that share a group of methods.
//!
//! Each class extends `Filter` (`filter.rs`) and adds its constructor and what only its kind
//! does: `bits.rs` has the Bloom filters made from a number of keys and a rate (classic,
//! blocked, sector, counting, aging), `growing.rs` the two that grow (scalable, cuckoo),
//! `built.rs` the static ones built from their keys (ribbon, binary fuse).

mod bits;
mod built;
mod growing;

use bloomkit::{AnyFilter, FilterKind};
use pyo3::prelude::*;
use pyo3::types::PyType;

use crate::filter::{adding_methods, merge_methods, removal_methods, shape_getters, PyFilter};

pub(crate) use bits::{
    PyAgingBloomFilter, PyBlockedBloomFilter, PyBloomFilter, PyCountingBloomFilter,
    PySectorBloomFilter,
};
pub(crate) use built::{PyBinaryFuseFilter, PyRibbonFilter};
pub(crate) use growing::{PyCuckooFilter, PyScalableBloomFilter};

/// Every kind: its `FilterKind` (and `AnyFilter`) variant, its class, its Python name. The
/// one list; `tests/test_golden.py` checks that the library's golden files, one kind or more
/// each, hold every kind and that each loads as its class.
macro_rules! each_kind {
    ($then:ident) => {
        $then! {
            Classic => PyBloomFilter, "BloomFilter";
            Blocked => PyBlockedBloomFilter, "BlockedBloomFilter";
            Sector => PySectorBloomFilter, "SectorBloomFilter";
            Counting => PyCountingBloomFilter, "CountingBloomFilter";
            Scalable => PyScalableBloomFilter, "ScalableBloomFilter";
            Cuckoo => PyCuckooFilter, "CuckooFilter";
            Aging => PyAgingBloomFilter, "AgingBloomFilter";
            Ribbon => PyRibbonFilter, "RibbonFilter";
            Fuse => PyBinaryFuseFilter, "BinaryFuseFilter";
        }
    };
}

macro_rules! table_functions {
    ($($kind:ident => $class:ident, $name:literal;)*) => {
        /// The Python class name of `kind`'s filters.
        pub(crate) fn class_name(kind: FilterKind) -> &'static str {
            match kind {
                $(FilterKind::$kind => $name,)*
                _ => "Filter",
            }
        }

        /// `filter` as an object of its kind's class.
        pub(crate) fn wrap(py: Python<'_>, filter: PyFilter) -> PyResult<Bound<'_, PyAny>> {
            match filter.inner.kind() {
                $(FilterKind::$kind => Ok(Bound::new(py, PyClassInitializer::from(filter).add_subclass($class))?.into_any()),)*
                other => Err(crate::errors::Class::Bloomkit.err(
                    py,
                    format!("this build of the Python package has no class for {other} filters"),
                )),
            }
        }

        /// The kind a class holds; `None` for `Filter` itself, which holds any.
        pub(crate) fn kind_of_class(class: &Bound<'_, PyType>) -> Option<FilterKind> {
            let py = class.py();
            $(if class.is(&py.get_type::<$class>()) {
                return Some(FilterKind::$kind);
            })*
            None
        }

        /// Adds every kind's class to the module.
        pub(crate) fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
            $(module.add_class::<$class>()?;)*
            Ok(())
        }
    };
}

each_kind!(table_functions);

/// Empties a filter that takes keys after it is made.
pub(crate) fn clear(filter: &mut AnyFilter) -> PyResult<()> {
    match filter {
        AnyFilter::Classic(f) => f.clear(),
        AnyFilter::Blocked(f) => f.clear(),
        AnyFilter::Sector(f) => f.clear(),
        AnyFilter::Counting(f) => f.clear(),
        AnyFilter::Scalable(f) => f.clear(),
        AnyFilter::Cuckoo(f) => f.clear(),
        AnyFilter::Aging(f) => f.clear(),
        other => return Err(crate::filter::no_such(other.kind(), "clear")),
    }
    Ok(())
}

// Which kinds have which group of methods: the library's abilities (`AnyFilter::insert`,
// `union`, `intersect`, and the kinds' own `remove`, `num_bits`, `num_hashes`).
adding_methods!(
    PyBloomFilter,
    PyBlockedBloomFilter,
    PySectorBloomFilter,
    PyCountingBloomFilter,
    PyScalableBloomFilter,
    PyCuckooFilter,
    PyAgingBloomFilter,
);
merge_methods!(
    Union: __or__ = "A new filter holding the keys of both (``ParameterError`` if they differ \
        in shape or seed).",
    __ior__ = "Adds the keys of `other`, in place.";
    PyBloomFilter, PyBlockedBloomFilter, PySectorBloomFilter, PyCountingBloomFilter,
);
merge_methods!(
    Intersection: __and__ = "A new filter with the bits both set: it holds the keys both hold, \
        and may answer \"maybe\" for more than their intersection (``ParameterError`` if \
        they differ in shape or seed).",
    __iand__ = "Keeps only the bits `other` sets too, in place.";
    PyBloomFilter, PyBlockedBloomFilter, PySectorBloomFilter,
);
removal_methods!(PyCountingBloomFilter, PyCuckooFilter);
shape_getters!(num_bits: PyBloomFilter, PyBlockedBloomFilter, PySectorBloomFilter, PyScalableBloomFilter, PyAgingBloomFilter, PyRibbonFilter, PyBinaryFuseFilter);
shape_getters!(num_hashes: PyBloomFilter, PyBlockedBloomFilter, PySectorBloomFilter, PyCountingBloomFilter, PyAgingBloomFilter);

/// Applies an optional builder setting: `builder` unchanged for `None`.
pub(crate) fn set<B, T>(builder: B, value: Option<T>, setter: fn(B, T) -> B) -> B {
    match value {
        Some(v) => setter(builder, v),
        None => builder,
    }
}

/// The filter a subclass's base holds, as its kind's type (`PyRef<Subclass>`, variant).
macro_rules! held {
    ($slf:expr, $variant:ident) => {
        match &$slf.as_super().inner {
            bloomkit::AnyFilter::$variant(f) => f,
            other => return Err($crate::filter::no_such(other.kind(), stringify!($variant))),
        }
    };
}
pub(crate) use held;

/// As [`held`], mutably (`PyRefMut<Subclass>`).
macro_rules! held_mut {
    ($slf:expr, $variant:ident) => {
        match &mut $slf.as_super().inner {
            bloomkit::AnyFilter::$variant(f) => f,
            other => return Err($crate::filter::no_such(other.kind(), stringify!($variant))),
        }
    };
}
pub(crate) use held_mut;
