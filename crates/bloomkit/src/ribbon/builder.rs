//! [`RibbonBuilder`]: a [`RibbonFilter`]'s plan, and the settings that change it.

use super::equation::MAX_RESULT_BITS;
use super::{result_bits_for, BuildPlan, RibbonFilter, RibbonLayout};
use crate::error::{Error, Result};
use crate::hash::DEFAULT_SEED;
use crate::key::{Key, KeyHasher};
use crate::sizing;

/// How to build a [`RibbonFilter`]: [`RibbonFilter::build`]'s plan for a rate, with the seed,
/// the exact result bits or the layout changed; the keys come last, in [`build`](Self::build). Made by
/// [`RibbonFilter::builder`]; see there for examples.
#[derive(Clone, Debug, PartialEq)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct RibbonBuilder {
    fp_rate: f64,
    result_bits: Option<u32>,
    seed: u64,
    layout: RibbonLayout,
}

impl RibbonBuilder {
    pub(crate) fn new(fp_rate: f64) -> Self {
        RibbonBuilder {
            fp_rate,
            result_bits: None,
            seed: DEFAULT_SEED,
            layout: RibbonLayout::Homogeneous,
        }
    }

    /// Hash keys with `seed` instead of [`DEFAULT_SEED`]; hashes given to
    /// [`build_from_hashes`](Self::build_from_hashes) must then come from
    /// [`hash_with_seed`](crate::hash_with_seed) and the same seed.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Exactly `result_bits` result bits per slot, 1 to 32 (a rate of 2^−`result_bits`),
    /// instead of ⌈log2(1/fp_rate)⌉.
    pub fn result_bits(mut self, result_bits: u32) -> Self {
        self.result_bits = Some(result_bits);
        self
    }

    /// Build in `layout` instead of [`RibbonLayout::Homogeneous`]: [`RibbonLayout::Standard`]
    /// for a file that bloomkit 0.1, or 0.2 before layout 2, must read (it takes about 37
    /// bytes of scratch a key to build, and may re-seed).
    pub fn layout(mut self, layout: RibbonLayout) -> Self {
        self.layout = layout;
        self
    }

    /// The result bits to build with, checked.
    fn planned_result_bits(&self) -> Result<u32> {
        sizing::check_fp_rate(self.fp_rate)?;
        match self.result_bits {
            None => result_bits_for(self.fp_rate),
            Some(bits) if (1..=MAX_RESULT_BITS).contains(&bits) => Ok(bits),
            Some(bits) => Err(Error::InvalidParameter {
                name: "result_bits",
                value: bits.to_string(),
                expected: "1 to 32 result bits (a rate of 2^-1 to 2^-32)",
            }),
        }
    }

    /// Builds the filter holding every key of `items` (see [`RibbonFilter::build`]).
    ///
    /// # Errors
    ///
    /// As [`RibbonFilter::build`], and [`Error::InvalidParameter`] for result bits outside
    /// 1 to 32.
    pub fn build<I>(&self, items: I) -> Result<RibbonFilter>
    where
        I: IntoIterator,
        I::Item: Key,
    {
        let hasher = KeyHasher::new(self.seed);
        let hashes = hasher.hash_all(items)?;
        self.build_hashed(&hashes, hasher)
    }

    /// Builds the filter from the keys' precomputed hashes, made with this builder's seed
    /// (see [`RibbonFilter::build_from_hashes`]).
    ///
    /// # Errors
    ///
    /// As [`build`](Self::build).
    pub fn build_from_hashes(&self, hashes: &[u64]) -> Result<RibbonFilter> {
        self.build_hashed(hashes, KeyHasher::new(self.seed))
    }

    fn build_hashed(&self, hashes: &[u64], hasher: KeyHasher) -> Result<RibbonFilter> {
        let result_bits = self.planned_result_bits()?;
        let plan = BuildPlan::for_items(self.layout, hashes.len() as u64, result_bits)?;
        RibbonFilter::build_planned(hashes, result_bits, hasher, Some(plan))
    }
}
