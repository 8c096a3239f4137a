//! [`AtomicBuilder`]: an [`AtomicBloomFilter`]'s plan, and the settings that change it.

use super::AtomicBloomFilter;
use crate::blocked::BlockedProbes;
use crate::builder::bits_builder;
use crate::error::Result;
use crate::key::KeyHasher;
use crate::sizing;

bits_builder!(
    /// How to build an [`AtomicBloomFilter`]: [`AtomicBloomFilter::new`]'s plan (a blocked
    /// filter's) for a number of keys and a rate, with any of its settings changed. Made by
    /// [`AtomicBloomFilter::builder`]; see there for examples.
    AtomicBuilder for AtomicBloomFilter,
    num_bits: "bits",
    probes: BlockedProbes = BlockedProbes::TwoSeeds,
);

impl AtomicBuilder {
    /// The filter: bits and probes as set, the plan ([`sizing::blocked_plan`]) for the rest.
    ///
    /// # Errors
    ///
    /// As [`BlockedBuilder::build`](crate::BlockedBuilder::build).
    pub fn build(&self) -> Result<AtomicBloomFilter> {
        let (num_bits, num_hashes) = self
            .plan
            .resolve(sizing::blocked_plan, sizing::blocked_num_hashes)?;
        AtomicBloomFilter::with_params_and_hasher(
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
