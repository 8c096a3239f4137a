//! [`BloomBuilder`]: a [`BloomFilter`]'s plan, and the settings that change it.

use super::{BloomFilter, ClassicProbes};
use crate::builder::bits_builder;
use crate::error::Result;
use crate::key::KeyHasher;
use crate::sizing;

bits_builder!(
    /// How to build a [`BloomFilter`]: [`BloomFilter::new`]'s plan for a number of keys and a
    /// rate, with any of its settings changed. Made by [`BloomFilter::builder`]; see there for
    /// examples.
    BloomBuilder for BloomFilter,
    num_bits: "bits",
    probes: ClassicProbes = ClassicProbes::Rotating,
);

impl BloomBuilder {
    /// The filter: bits and probes as set, the plan ([`sizing::classic_plan`]) for the rest.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidFpRate`](crate::Error::InvalidFpRate) unless `0 < fp_rate < 1`;
    /// [`Error::FpRateTooSmall`](crate::Error::FpRateTooSmall) if the planned rate needs more
    /// than 64 probes; [`Error::ZeroBits`](crate::Error::ZeroBits);
    /// [`Error::InvalidNumHashes`](crate::Error::InvalidNumHashes) outside
    /// `1..=`[`sizing::MAX_NUM_HASHES`]; [`Error::TooLarge`](crate::Error::TooLarge) or
    /// [`Error::OutOfMemory`](crate::Error::OutOfMemory) if the filter does not fit.
    pub fn build(&self) -> Result<BloomFilter> {
        let (num_bits, num_hashes) = self.plan.resolve_with(
            |n, p| sizing::classic_plan_for(n, p, self.probes),
            sizing::optimal_num_hashes,
        )?;
        BloomFilter::with_params_and_hasher(
            num_bits,
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
