//! [`FuseBuilder`]: a [`BinaryFuseFilter`]'s plan, and the settings that change it.

use super::{check_fingerprint_bits, BinaryFuseFilter};
use crate::error::Result;
use crate::hash::DEFAULT_SEED;
use crate::key::{Key, KeyHasher};
use crate::sizing;

/// How to build a [`BinaryFuseFilter`]: [`BinaryFuseFilter::build`]'s plan for a rate, with
/// the seed or the exact fingerprint bits changed; the keys come last, in
/// [`build`](Self::build). Made by [`BinaryFuseFilter::builder`]; see there for examples.
#[derive(Clone, Debug, PartialEq)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct FuseBuilder {
    fp_rate: f64,
    fingerprint_bits: Option<u32>,
    seed: u64,
}

impl FuseBuilder {
    pub(crate) fn new(fp_rate: f64) -> Self {
        FuseBuilder {
            fp_rate,
            fingerprint_bits: None,
            seed: DEFAULT_SEED,
        }
    }

    /// Hash keys with `seed` instead of [`DEFAULT_SEED`]; hashes given to
    /// [`build_from_hashes`](Self::build_from_hashes) must then come from
    /// [`hash_with_seed`](crate::hash_with_seed) and the same seed.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Exactly `bits`-bit fingerprints, 8 or 16 (a rate of 2^−8 or 2^−16), instead of the
    /// fewest that meet the rate.
    pub fn fingerprint_bits(mut self, bits: u32) -> Self {
        self.fingerprint_bits = Some(bits);
        self
    }

    /// The fingerprint bits to build with, checked.
    fn planned_fingerprint_bits(&self) -> Result<u32> {
        match self.fingerprint_bits {
            None => BinaryFuseFilter::fingerprint_bits_for(self.fp_rate),
            Some(bits) => {
                sizing::check_fp_rate(self.fp_rate)?;
                check_fingerprint_bits(bits)?;
                Ok(bits)
            }
        }
    }

    /// Builds the filter holding every key of `items` (see [`BinaryFuseFilter::build`]).
    ///
    /// # Errors
    ///
    /// As [`BinaryFuseFilter::build`], and
    /// [`Error::InvalidParameter`](crate::Error::InvalidParameter) unless the fingerprint
    /// bits set are 8 or 16.
    pub fn build<I>(&self, items: I) -> Result<BinaryFuseFilter>
    where
        I: IntoIterator,
        I::Item: Key,
    {
        let bits = self.planned_fingerprint_bits()?;
        let hasher = KeyHasher::new(self.seed);
        let hashes = hasher.hash_all(items)?;
        BinaryFuseFilter::build_planned(&hashes, bits, hasher, None)
    }

    /// Builds the filter from the keys' precomputed hashes, made with this builder's seed
    /// (see [`BinaryFuseFilter::build_from_hashes`]).
    ///
    /// # Errors
    ///
    /// As [`build`](Self::build).
    pub fn build_from_hashes(&self, hashes: &[u64]) -> Result<BinaryFuseFilter> {
        let bits = self.planned_fingerprint_bits()?;
        BinaryFuseFilter::build_planned(hashes, bits, KeyHasher::new(self.seed), None)
    }
}
