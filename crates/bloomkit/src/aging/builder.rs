//! [`AgingBuilder`]: an [`AgingBloomFilter`]'s plan, and the settings that change it.

use super::AgingBloomFilter;
use crate::builder::{bits_builder, BitsPlan};
use crate::error::Result;
use crate::key::KeyHasher;
use crate::sizing;
use crate::{BlockedBloomFilter, BlockedProbes};

bits_builder!(
    /// How to build an [`AgingBloomFilter`]: [`AgingBloomFilter::new`]'s plan for a number of
    /// keys a generation and a rate for the whole filter, with any of its settings changed.
    /// Made by [`AgingBloomFilter::builder`]; see there for examples.
    AgingBuilder for AgingBloomFilter,
    num_bits_per_generation: "bits in each generation",
    generations: u32 = AgingBloomFilter::DEFAULT_GENERATIONS,
    probes: BlockedProbes = BlockedProbes::TwoSeeds,
);

impl AgingBuilder {
    /// `generations` generations, 1 to 64, instead of
    /// [`DEFAULT_GENERATIONS`](AgingBloomFilter::DEFAULT_GENERATIONS) (2): a key is then
    /// remembered for between G − 1 and G rotation periods, and each generation is planned
    /// for the tighter rate [`generation_fp_rate`](AgingBloomFilter::generation_fp_rate)
    /// that keeps the whole filter at the target.
    pub fn generations(mut self, generations: u32) -> Self {
        self.generations = generations;
        self
    }

    /// The filter: bits and probes as set, the plan for the rest (each generation a blocked
    /// filter for `items_per_generation` keys at the per-generation rate,
    /// [`sizing::blocked_plan`]).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`](crate::Error::InvalidParameter) unless `generations` is 1
    /// to 64; [`Error::InvalidFpRate`](crate::Error::InvalidFpRate) unless
    /// `0 < fp_rate < 1`; [`Error::FpRateTooSmall`](crate::Error::FpRateTooSmall);
    /// [`Error::ZeroBits`](crate::Error::ZeroBits);
    /// [`Error::InvalidNumHashes`](crate::Error::InvalidNumHashes) outside
    /// `1..=`[`sizing::MAX_NUM_HASHES`]; [`Error::TooLarge`](crate::Error::TooLarge) or
    /// [`Error::OutOfMemory`](crate::Error::OutOfMemory) if the generations do not fit.
    pub fn build(&self) -> Result<AgingBloomFilter> {
        let generation_rate =
            AgingBloomFilter::generation_fp_rate(self.plan.fp_rate, self.generations)?;
        // Zero keys is one here, as for every filter (the blocked sizing would pick its
        // probes for an empty filter otherwise).
        let per_generation = BitsPlan {
            items: self.plan.items.max(1),
            fp_rate: generation_rate,
            ..self.plan
        };
        let (num_bits, num_hashes) =
            per_generation.resolve(sizing::blocked_plan, sizing::blocked_num_hashes)?;
        let first = BlockedBloomFilter::with_params_and_hasher(
            num_bits,
            num_hashes,
            KeyHasher::new(self.plan.seed),
            self.probes,
        )?;
        AgingBloomFilter::from_first(first, self.generations)
    }

    /// Derive every generation's probes by `probes` instead of [`BlockedProbes::TwoSeeds`]:
    /// only to build a filter that must answer as one stored with [`BlockedProbes::OneSeed`]
    /// does.
    pub fn probes(mut self, probes: BlockedProbes) -> Self {
        self.probes = probes;
        self
    }
}
