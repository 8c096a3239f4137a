//! Merging scalable filters: [`ScalableBloomFilter::merge`], and what a merge reads of the
//! bits ([`fill_ratio`](ScalableBloomFilter::fill_ratio),
//! [`estimated_count`](ScalableBloomFilter::estimated_count)).

use super::layer::LayerBits;
use super::ScalableBloomFilter;
use crate::error::{Error, Result};

impl ScalableBloomFilter {
    /// `Ok` if [`merge`](Self::merge) would accept `other`; else the first parameter that
    /// differs, with both values ([`Error::Incompatible`]).
    ///
    /// Two filters merge when they were built alike (layout, rate, initial capacity,
    /// expansion, tightening, scaling, hash seed and key feed) and have the same layers,
    /// each with the same bits and probes: two filters reserved alike and grown to the same
    /// number of layers qualify.
    ///
    /// # Errors
    ///
    /// [`Error::Incompatible`] naming the first difference.
    pub fn check_mergeable(&self, other: &Self) -> Result<()> {
        let (a, b) = (&self.params, &other.params);
        Error::check_same(
            "layout",
            format!("{:?}", a.layout),
            format!("{:?}", b.layout),
        )?;
        Error::check_same("error rate", a.fp_rate, b.fp_rate)?;
        Error::check_same("initial capacity", a.initial_capacity, b.initial_capacity)?;
        Error::check_same("scaling", !a.non_scaling, !b.non_scaling)?;
        Error::check_same("expansion", a.expansion, b.expansion)?;
        Error::check_same("tightening", a.tightening, b.tightening)?;
        Error::check_same("hash seed", self.hasher.seed(), other.hasher.seed())?;
        Error::check_same(
            "key feed",
            format!("{:?}", self.hasher.feed()),
            format!("{:?}", other.hasher.feed()),
        )?;
        Error::check_same("number of layers", self.layers.len(), other.layers.len())?;
        for (a, b) in self.layers.iter().zip(&other.layers) {
            Error::check_same("layer capacity", a.capacity, b.capacity)?;
            match (&a.filter, &b.filter) {
                (LayerBits::Blocked(x), LayerBits::Blocked(y)) => x.check_compatible(y)?,
                (LayerBits::Classic(x), LayerBits::Classic(y)) => x.check_compatible(y)?,
                // A chain never mixes layouts, and the layouts were compared above.
                _ => Error::check_same("layer layout", "mixed", "uniform")?,
            }
        }
        Ok(())
    }

    /// Adds every key of `other` (each layer's bits ORed into the same layer of this one):
    /// afterwards this filter answers "maybe" for every key either held. Each layer's item
    /// count becomes the estimate from its bits
    /// ([`estimated_count`](Self::estimated_count) sums them), since keys both filters held
    /// would otherwise be counted twice; it decides when the chain grows, as before.
    ///
    /// # Errors
    ///
    /// [`Error::Incompatible`] as [`check_mergeable`](Self::check_mergeable) finds it; this
    /// filter is then unchanged.
    ///
    /// # Examples
    ///
    /// ```
    /// use bloomkit::ScalableBloomFilter;
    ///
    /// let mut a = ScalableBloomFilter::new(1000, 0.01)?;
    /// let mut b = ScalableBloomFilter::new(1000, 0.01)?;
    /// for i in 0..300u32 { a.insert(&i)?; }
    /// for i in 200..500u32 { b.insert(&i)?; }
    /// a.merge(&b)?;
    /// assert!((0..500u32).all(|i| a.contains(&i)));
    /// assert!(a.len().abs_diff(500) < 25, "{}", a.len());
    ///
    /// let other = ScalableBloomFilter::new(2000, 0.01)?;
    /// let err = a.merge(&other).unwrap_err();
    /// assert!(err.to_string().contains("initial capacity (1000 vs 2000)"), "{err}");
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn merge(&mut self, other: &Self) -> Result<()> {
        self.check_mergeable(other)?;
        for (a, b) in self.layers.iter_mut().zip(&other.layers) {
            match (&mut a.filter, &b.filter) {
                (LayerBits::Blocked(x), LayerBits::Blocked(y)) => x.union(y)?,
                (LayerBits::Classic(x), LayerBits::Classic(y)) => x.union(y)?,
                _ => {}
            }
        }
        Ok(())
    }

    /// The fraction of bits set, over all layers.
    ///
    /// ```
    /// let mut f = bloomkit::ScalableBloomFilter::new(1000, 0.01)?;
    /// assert_eq!(f.fill_ratio(), 0.0);
    /// for i in 0..1000u32 { f.insert(&i)?; }
    /// let fill = f.fill_ratio();
    /// assert!(fill > 0.3 && fill < 0.6, "{fill}");
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn fill_ratio(&self) -> f64 {
        let ones: u64 = self.layers.iter().map(|l| l.filter.count_ones()).sum();
        let bits = self.num_bits();
        if bits == 0 {
            0.0
        } else {
            ones as f64 / bits as f64
        }
    }

    /// The number of distinct keys the bits suggest, summed over the layers (the standard
    /// estimate −m/k·ln(1 − X/m) per layer): what `BF.INFO` reports as "Estimated items".
    ///
    /// ```
    /// let mut f = bloomkit::ScalableBloomFilter::new(100, 0.01)?;
    /// for i in 0..1000u32 { f.insert(&i)?; }
    /// assert!(f.estimated_count().abs_diff(1000) < 50, "{}", f.estimated_count());
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn estimated_count(&self) -> u64 {
        self.layers
            .iter()
            .map(|l| match &l.filter {
                LayerBits::Blocked(f) => f.estimated_count(),
                LayerBits::Classic(f) => f.estimated_count(),
            })
            .fold(0u64, u64::saturating_add)
    }
}
