//! [`CountingBuilder`]: a [`CountingBloomFilter`]'s plan, and the settings that change it.

use super::CountingBloomFilter;
use crate::builder::bits_builder;
use crate::classic::ClassicProbes;
use crate::error::Result;
use crate::key::KeyHasher;
use crate::sizing;

bits_builder!(
    /// How to build a [`CountingBloomFilter`]: [`CountingBloomFilter::new`]'s plan (a classic
    /// filter's, a counter for each bit) for a number of keys and a rate, with any of its
    /// settings changed. Made by [`CountingBloomFilter::builder`]; see there for examples.
    CountingBuilder for CountingBloomFilter,
    num_counters: "counters",
    probes: ClassicProbes = ClassicProbes::Rotating,
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
        let (num_counters, num_hashes) = self.plan.resolve_with(
            |n, p| sizing::classic_plan_for(n, p, self.probes),
            sizing::optimal_num_hashes,
        )?;
        CountingBloomFilter::with_params_and_hasher(
            num_counters,
            num_hashes,
            KeyHasher::new(self.plan.seed),
            self.probes,
        )
    }

    /// Derive the probes by `probes` instead of [`ClassicProbes::Rotating`]: only to build a
    /// filter that must answer as one stored with [`ClassicProbes::DoubleHashing`] does.
    pub fn probes(mut self, probes: ClassicProbes) -> Self {
        self.probes = probes;
        self
    }
}
