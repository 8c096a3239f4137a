//! [`BlockedBuilder`]: a [`BlockedBloomFilter`]'s plan, and the settings that change it.

use super::{BlockedBloomFilter, BlockedProbes};
use crate::builder::bits_builder;
use crate::error::Result;
use crate::key::KeyHasher;
use crate::sizing;

bits_builder!(
    /// How to build a [`BlockedBloomFilter`]: [`BlockedBloomFilter::new`]'s plan for a number
    /// of keys and a rate, with any of its settings changed. Made by
    /// [`BlockedBloomFilter::builder`]; see there for examples.
    BlockedBuilder for BlockedBloomFilter,
    num_bits: "bits",
    probes: BlockedProbes = BlockedProbes::TwoSeeds,
);

impl BlockedBuilder {
    /// The filter: bits and probes as set, the plan ([`sizing::blocked_plan`]) for the rest.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidFpRate`](crate::Error::InvalidFpRate) unless `0 < fp_rate < 1`;
    /// [`Error::FpRateTooSmall`](crate::Error::FpRateTooSmall);
    /// [`Error::ZeroBits`](crate::Error::ZeroBits);
    /// [`Error::InvalidNumHashes`](crate::Error::InvalidNumHashes) outside
    /// `1..=`[`sizing::MAX_NUM_HASHES`]; [`Error::TooLarge`](crate::Error::TooLarge) or
    /// [`Error::OutOfMemory`](crate::Error::OutOfMemory) if the filter does not fit.
    pub fn build(&self) -> Result<BlockedBloomFilter> {
        let (num_bits, num_hashes) = self
            .plan
            .resolve(sizing::blocked_plan, sizing::blocked_num_hashes)?;
        BlockedBloomFilter::with_params_and_hasher(
            num_bits,
            num_hashes,
            KeyHasher::new(self.plan.seed),
            self.probes,
        )
    }

    /// Derive the probes by `probes` instead of [`BlockedProbes::TwoSeeds`]: only to build a
    /// filter that must answer as one stored with [`BlockedProbes::OneSeed`] does.
    pub fn probes(mut self, probes: BlockedProbes) -> Self {
        self.probes = probes;
        self
    }
}
