//! [`CountingBuilder`]: a [`CountingBloomFilter`]'s plan, and the settings that change it.

use super::CountingBloomFilter;
use crate::builder::bits_builder;
use crate::error::Result;
use crate::key::KeyHasher;
use crate::sizing;

bits_builder!(
    /// How to build a [`CountingBloomFilter`]: [`CountingBloomFilter::new`]'s plan (a classic
    /// filter's, a counter for each bit) for a number of keys and a rate, with any of its
    /// settings changed. Made by [`CountingBloomFilter::builder`]; see there for examples.
    CountingBuilder for CountingBloomFilter,
    num_counters: "counters",
);

impl CountingBuilder {
    /// The filter: counters and probes as set, the plan ([`sizing::classic_plan`]) for the
    /// rest.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidFpRate`](crate::Error::InvalidFpRate) unless `0 < fp_rate < 1`;
    /// [`Error::FpRateTooSmall`](crate::Error::FpRateTooSmall);
    /// [`Error::InvalidParameter`](crate::Error::InvalidParameter) for zero counters;
    /// [`Error::InvalidNumHashes`](crate::Error::InvalidNumHashes) outside
    /// `1..=`[`sizing::MAX_NUM_HASHES`]; [`Error::TooLarge`](crate::Error::TooLarge) or
    /// [`Error::OutOfMemory`](crate::Error::OutOfMemory) if the filter does not fit.
    pub fn build(&self) -> Result<CountingBloomFilter> {
        let (num_counters, num_hashes) = self
            .plan
            .resolve(sizing::classic_plan, sizing::optimal_num_hashes)?;
        CountingBloomFilter::with_params_and_hasher(
            num_counters,
            num_hashes,
            KeyHasher::new(self.plan.seed),
        )
    }
}
