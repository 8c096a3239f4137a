//! One layer of the chain, and what [`crate::ScalableBloomFilter::layers`] reports of it.

use crate::blocked::BlockedBloomFilter;
use crate::error::{Error, Result};
use crate::sizing;

/// One layer of the chain: a blocked filter planned for `capacity` keys at `fp_rate`.
///
/// The layer's item count is its filter's: keys are inserted only when every layer says
/// absent, so every insert changes a bit of the newest layer and is counted there.
#[derive(Clone, PartialEq)]
pub(super) struct Layer {
    pub(super) filter: BlockedBloomFilter,
    pub(super) capacity: u64,
    pub(super) fp_rate: f64,
}

impl Layer {
    pub(super) fn new(capacity: u64, fp_rate: f64, seed: u64) -> Result<Self> {
        Ok(Layer {
            filter: BlockedBloomFilter::new_with_seed(capacity, fp_rate, seed)?,
            capacity,
            fp_rate,
        })
    }

    /// The heap bytes [`Layer::new`] would allocate for these parameters, without
    /// allocating them.
    pub(super) fn planned_heap_bytes(capacity: u64, fp_rate: f64) -> Result<usize> {
        let plan = sizing::blocked_plan(capacity, fp_rate)?;
        // Whole 512-bit lines, as the blocked filter allocates them.
        usize::try_from(plan.num_bits.div_ceil(sizing::LINE_BITS) * (sizing::LINE_BITS / 8))
            .map_err(|_| Error::TooLarge {
                num_bits: plan.num_bits,
            })
    }

    pub(super) fn items(&self) -> u64 {
        self.filter.item_count()
    }

    /// RedisBloom's test: a layer is full once its count reaches its capacity.
    pub(super) fn is_full(&self) -> bool {
        self.items() >= self.capacity
    }

    /// Heap bytes of the layer's bits (the layer itself lives in the chain's vector).
    pub(super) fn heap_bytes(&self) -> usize {
        self.filter.lines().memory_bytes()
    }

    pub(super) fn info(&self) -> LayerInfo {
        LayerInfo {
            capacity: self.capacity,
            items: self.items(),
            fp_rate: self.fp_rate,
            num_bits: self.filter.num_bits(),
            num_hashes: self.filter.num_hashes(),
            memory_bytes: self.heap_bytes(),
        }
    }
}

/// What one layer of a [`crate::ScalableBloomFilter`] holds, as
/// [`layers`](crate::ScalableBloomFilter::layers)
/// reports it (what `BF.DEBUG` prints per link).
///
/// # Examples
///
/// ```
/// let f = bloomkit::ScalableBloomFilter::new(1000, 0.01)?;
/// let first = f.layers().next().unwrap();
/// assert_eq!((first.capacity, first.items, first.fp_rate), (1000, 0, 0.005));
/// # Ok::<(), bloomkit::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct LayerInfo {
    /// The keys the layer was planned for; it takes no more.
    pub capacity: u64,
    /// The keys inserted into it.
    pub items: u64,
    /// The rate the layer was planned for, with `capacity` keys.
    pub fp_rate: f64,
    /// Its bits (a multiple of 512).
    pub num_bits: u64,
    /// Its probes per key.
    pub num_hashes: u32,
    /// Heap bytes of its bits.
    pub memory_bytes: usize,
}
