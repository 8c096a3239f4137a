//! [`SectorBuilder`]: a [`SectorBloomFilter`]'s plan, and the settings that change it.

use super::SectorBloomFilter;
use crate::builder::bits_builder;
use crate::error::Result;
use crate::key::KeyHasher;
use crate::sizing;

bits_builder!(
    /// How to build a [`SectorBloomFilter`]: [`SectorBloomFilter::new`]'s plan for a number
    /// of keys and a rate, with any of its settings changed. Made by
    /// [`SectorBloomFilter::builder`]; see there for examples.
    SectorBuilder for SectorBloomFilter,
    num_bits: "bits",
);

/// The probes for a given size: the bits per word the plan would pick for a filter of
/// exactly `num_bits` bits, the one with the lowest predicted rate.
fn best_num_hashes(items: u64, num_bits: u64) -> u32 {
    let items = items.max(1);
    let per_word = (1..=super::layout::MAX_PER_WORD)
        .min_by(|&a, &b| {
            sizing::sector_fp_rate(items, num_bits, a)
                .total_cmp(&sizing::sector_fp_rate(items, num_bits, b))
        })
        .unwrap_or(1);
    per_word * 8
}

impl SectorBuilder {
    /// The filter: bits and probes as set, the plan ([`sizing::sector_plan`]) for the rest.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidFpRate`](crate::Error::InvalidFpRate) unless `0 < fp_rate < 1`;
    /// [`Error::FpRateTooSmall`](crate::Error::FpRateTooSmall);
    /// [`Error::ZeroBits`](crate::Error::ZeroBits);
    /// [`Error::InvalidSectorNumHashes`](crate::Error::InvalidSectorNumHashes) unless the
    /// probes are 8, 16, .. or 64; [`Error::TooLarge`](crate::Error::TooLarge) or
    /// [`Error::OutOfMemory`](crate::Error::OutOfMemory) if the filter does not fit.
    pub fn build(&self) -> Result<SectorBloomFilter> {
        let (num_bits, num_hashes) = self.plan.resolve(sizing::sector_plan, best_num_hashes)?;
        SectorBloomFilter::with_params_and_hasher(
            num_bits,
            num_hashes,
            KeyHasher::new(self.plan.seed),
        )
    }
}
