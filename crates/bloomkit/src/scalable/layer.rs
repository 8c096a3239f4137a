//! One layer of the chain, the two ways its bits can be laid out, and what
//! [`crate::ScalableBloomFilter::layers`] reports of it.

use crate::blocked::{line_index, BlockedBloomFilter, BlockedProbes};
use crate::classic::{BloomFilter, ClassicProbes};
use crate::error::{Error, Result};
use crate::key::KeyHasher;
use crate::prefetch::prefetch_read;
use crate::sizing;

/// How a [`crate::ScalableBloomFilter`] lays out the bits of its layers: the choice between
/// one cache line per layer per query and the fewest bits for the rate.
///
/// Both keep the same scaling rules and the same bound on the chain's rate; they differ in
/// memory and speed. At a first-layer rate of 0.5% (the default for a 1% filter) a blocked
/// layer needs 11.5 bits per key and a classic one 11.0 (4.5% less), while a classic query
/// touches up to k cache lines per layer instead of one.
///
/// # Examples
///
/// ```
/// use bloomkit::{LayerLayout, ScalableBloomFilter};
///
/// let blocked = ScalableBloomFilter::new(1_000_000, 0.01)?;
/// let classic = ScalableBloomFilter::builder(1_000_000, 0.01)
///     .layout(LayerLayout::Classic)
///     .build()?;
/// assert_eq!(blocked.layout(), LayerLayout::Blocked);
/// assert!(classic.memory_bytes() < blocked.memory_bytes());
/// # Ok::<(), bloomkit::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LayerLayout {
    /// Each layer is a [`BlockedBloomFilter`](crate::BlockedBloomFilter): all of a key's
    /// probes in one 512-bit line, so a query costs one cache miss per layer. The default:
    /// the fastest layout, for a few percent more memory.
    #[default]
    Blocked,
    /// Each layer is a classic [`BloomFilter`](crate::BloomFilter): probes spread over the
    /// whole layer, the textbook −ln p / (ln 2)² bits per key and no more. RedisBloom's
    /// layout, and the smallest for a given rate; queries of large layers miss the cache
    /// once per probe.
    Classic,
}

/// A layer's bits in either layout.
#[derive(Clone, PartialEq)]
pub(super) enum LayerBits {
    Blocked(BlockedBloomFilter),
    Classic(BloomFilter),
}

impl LayerBits {
    /// Whether the layer may hold the key, for a layer expected to be blocked (as every
    /// layer of a blocked chain is): the blocked probe inline, any other out of line.
    #[inline]
    pub(super) fn blocked_contains_hash(&self, hash: u64) -> bool {
        match self {
            LayerBits::Blocked(f) => f.contains_hash(hash),
            other => other.contains_hash_cold(hash),
        }
    }

    /// Whether the layer may hold the key, for a layer expected to be classic.
    #[inline]
    pub(super) fn classic_contains_hash(&self, hash: u64) -> bool {
        match self {
            LayerBits::Classic(f) => f.contains_hash(hash),
            other => other.contains_hash_cold(hash),
        }
    }

    /// Either layout, out of line: no chain mixes layouts, but were one ever to, its
    /// answers must still be right (a wrong "absent" is a false negative).
    #[cold]
    #[inline(never)]
    fn contains_hash_cold(&self, hash: u64) -> bool {
        match self {
            LayerBits::Blocked(f) => f.contains_hash(hash),
            LayerBits::Classic(f) => f.contains_hash(hash),
        }
    }

    /// Prefetches the memory a query of `hash` reads in this layer: its one line in the
    /// blocked layout, the word of each probe in the classic one.
    #[inline]
    pub(super) fn prefetch(&self, hash: u64) {
        match self {
            LayerBits::Blocked(f) => {
                let lines = f.lines();
                prefetch_read(lines.line(line_index(hash, lines.len())));
            }
            LayerBits::Classic(f) => {
                let words = f.words();
                f.probes()
                    .for_each(hash, f.num_bits(), f.num_hashes(), |bit| {
                        if let Some(word) = words.get((bit / 64) as usize) {
                            prefetch_read(word);
                        }
                    });
            }
        }
    }

    /// The cache lines a query reads in this layer (at most), for the prefetch distance.
    pub(super) fn lines_per_query(&self) -> usize {
        match self {
            LayerBits::Blocked(_) => 1,
            LayerBits::Classic(f) => f.num_hashes() as usize,
        }
    }

    // Always inlined: the classic arm holds both probe derivations' loops, and a blocked
    // chain's insert paid for the call (5% of its instructions) when LLVM kept this out of line.
    #[inline(always)]
    pub(super) fn insert_hash(&mut self, hash: u64) -> bool {
        match self {
            LayerBits::Blocked(f) => f.insert_hash(hash),
            LayerBits::Classic(f) => f.insert_hash(hash),
        }
    }

    pub(super) fn len(&self) -> u64 {
        match self {
            LayerBits::Blocked(f) => f.len(),
            LayerBits::Classic(f) => f.len(),
        }
    }

    pub(super) fn clear(&mut self) {
        match self {
            LayerBits::Blocked(f) => f.clear(),
            LayerBits::Classic(f) => f.clear(),
        }
    }

    pub(super) fn num_bits(&self) -> u64 {
        match self {
            LayerBits::Blocked(f) => f.num_bits(),
            LayerBits::Classic(f) => f.num_bits(),
        }
    }

    pub(super) fn num_hashes(&self) -> u32 {
        match self {
            LayerBits::Blocked(f) => f.num_hashes(),
            LayerBits::Classic(f) => f.num_hashes(),
        }
    }

    pub(super) fn count_ones(&self) -> u64 {
        match self {
            LayerBits::Blocked(f) => f.count_ones(),
            LayerBits::Classic(f) => f.count_ones(),
        }
    }

    pub(super) fn estimated_fp_rate(&self) -> f64 {
        match self {
            LayerBits::Blocked(f) => f.estimated_fp_rate(),
            LayerBits::Classic(f) => f.estimated_fp_rate(),
        }
    }

    /// The bits as 64-bit words, in the order the file format stores them.
    pub(super) fn words(&self) -> impl Iterator<Item = u64> + '_ {
        // One of the two is empty: a static iterator either way, no per-word dispatch.
        let (lines, words) = match self {
            LayerBits::Blocked(f) => (Some(f.lines().words()), None),
            LayerBits::Classic(f) => (None, Some(f.words().iter().copied())),
        };
        lines
            .into_iter()
            .flatten()
            .chain(words.into_iter().flatten())
    }

    /// The same words as runs that lie in memory: a classic layer's all at once, a blocked
    /// layer's a line at a time.
    pub(super) fn word_runs(&self) -> impl Iterator<Item = &[u64]> + '_ {
        let (lines, words) = match self {
            LayerBits::Blocked(f) => (Some(f.lines().line_words()), None),
            LayerBits::Classic(f) => (None, Some(f.words())),
        };
        lines.into_iter().flatten().chain(words)
    }

    /// Heap bytes of the bits.
    pub(super) fn heap_bytes(&self) -> usize {
        match self {
            LayerBits::Blocked(f) => f.lines().memory_bytes(),
            LayerBits::Classic(f) => f.heap_bytes(),
        }
    }
}

/// One layer of the chain: a filter planned for `capacity` keys at `fp_rate`.
///
/// The layer's item count is its filter's: keys are inserted only when every layer says
/// absent, so every insert changes a bit of the newest layer and is counted there.
#[derive(Clone, PartialEq)]
pub(super) struct Layer {
    pub(super) filter: LayerBits,
    pub(super) capacity: u64,
    pub(super) fp_rate: f64,
}

impl Layer {
    pub(super) fn new(
        layout: LayerLayout,
        probes: ClassicProbes,
        blocked_probes: BlockedProbes,
        capacity: u64,
        fp_rate: f64,
        hasher: KeyHasher,
    ) -> Result<Self> {
        let filter = match layout {
            LayerLayout::Blocked => LayerBits::Blocked(BlockedBloomFilter::new_with_hasher(
                capacity,
                fp_rate,
                hasher,
                blocked_probes,
            )?),
            LayerLayout::Classic => LayerBits::Classic(BloomFilter::new_with_hasher(
                capacity, fp_rate, hasher, probes,
            )?),
        };
        Ok(Layer {
            filter,
            capacity,
            fp_rate,
        })
    }

    /// The heap bytes [`Layer::new`] would allocate for these parameters, without
    /// allocating them.
    pub(super) fn planned_heap_bytes(
        layout: LayerLayout,
        probes: ClassicProbes,
        capacity: u64,
        fp_rate: f64,
    ) -> Result<usize> {
        // Both plans round the bits as their filters allocate them: whole 512-bit lines or
        // whole 64-bit words.
        let num_bits = match layout {
            LayerLayout::Blocked => sizing::blocked_plan(capacity, fp_rate)?.num_bits,
            LayerLayout::Classic => sizing::classic_plan_for(capacity, fp_rate, probes)?.num_bits,
        };
        usize::try_from(num_bits / 8).map_err(|_| Error::TooLarge { num_bits })
    }

    pub(super) fn items(&self) -> u64 {
        self.filter.len()
    }

    /// RedisBloom's test: a layer is full once its count reaches its capacity.
    pub(super) fn is_full(&self) -> bool {
        self.items() >= self.capacity
    }

    /// Heap bytes of the layer's bits (the layer itself lives in the chain's vector).
    pub(super) fn heap_bytes(&self) -> usize {
        self.filter.heap_bytes()
    }

    pub(super) fn info(&self) -> LayerInfo {
        #[allow(deprecated)] // the old name is filled in for code that still reads it
        LayerInfo {
            capacity: self.capacity,
            inserted: self.items(),
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
/// assert_eq!((first.capacity, first.inserted, first.fp_rate), (1000, 0, 0.005));
/// # Ok::<(), bloomkit::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct LayerInfo {
    /// The keys the layer was planned for; it takes no more.
    pub capacity: u64,
    /// The keys inserted into it: the inserts that changed its bits (a key the chain already
    /// seemed to hold is not inserted again). The word `items` elsewhere (constructors,
    /// `capacity`) means keys planned for; here it is keys taken in.
    pub inserted: u64,
    /// [`inserted`](Self::inserted) under its old name.
    #[deprecated(
        since = "0.2.0",
        note = "renamed `inserted`: `items` means planned capacity elsewhere"
    )]
    pub items: u64,
    /// The rate the layer was planned for, with `capacity` keys.
    pub fp_rate: f64,
    /// Its bits (a multiple of 512 in the blocked layout, of 64 in the classic one).
    pub num_bits: u64,
    /// Its probes per key.
    pub num_hashes: u32,
    /// Heap bytes of its bits.
    pub memory_bytes: usize,
}
