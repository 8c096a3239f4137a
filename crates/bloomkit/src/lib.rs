//! Approximate membership filters: structures that answer "definitely not" or "maybe" for a
//! key in a few bits per key, whatever the key's size.
//!
//! Put one in front of something expensive (a disk read, a database query, a network hop):
//! a "no" is always right and costs a few nanoseconds; a "maybe" is wrong at a rate you
//! choose, 1% for under 10 bits per key.
//!
//! # Choosing a filter
//!
//! Measured by `bloomkit demo` (1,000,000 21-byte keys at a 1% target, one thread, hashing
//! included; the times are from a shared 2-core VM, so compare them with each other;
//! `BENCHMARKS.md` has filters in and out of cache beside the other Rust crates):
//!
//! | type | bits/key at 1% | measured rate | insert ns | query ns | deletes | grows | merges | static |
//! |---|---|---|---|---|---|---|---|---|
//! | [`BlockedBloomFilter`] | 9.92 | 0.997% | 10 | 9 | no | no | yes | no |
//! | [`BloomFilter`] | 9.59 | 0.997% | 18 | 23 | no | no | yes | no |
//! | [`AtomicBloomFilter`] | 9.92 | 0.997% | 44 | 10 | no | no | yes | no |
//! | [`CountingBloomFilter`] | 38.3 | 0.997% | 21 | 27 | yes | no | yes | no |
//! | [`ScalableBloomFilter`] | 26.5 after growing 100× | 0.970% | 42 | 38 | no | yes | no | no |
//! | [`CuckooFilter`] | 10.7 | 0.729% | 38 | 15 | yes | optional | no | no |
//! | [`RibbonFilter`] | 7.32 | 0.775% | 69 (build) | 15 | no | no | no | yes |
//! | [`BinaryFuseFilter`] | 9.04 (8-bit) | 0.383% | – (build) | – | no | no | no | yes |
//! | [`AgingBloomFilter`] | 11.5 (2 generations) | 1.010% | 10 | 14 | by age | no | no | no |
//!
//! (The binary fuse row's times await a quiet run of `bloomkit demo`; its rate is 2^−8 with
//! 8-bit fingerprints, 2^−16 with 16-bit ones at 18.1 bits per key.)
//!
//! * **Most uses:** [`BlockedBloomFilter`]. Every probe of a key falls in one 64-byte cache
//!   line, so a query costs one cache miss, for 3% more memory than [`BloomFilter`].
//! * **Many threads inserting at once:** [`AtomicBloomFilter`], the same bits through
//!   `&self`.
//! * **Keys known up front, memory tight:** [`RibbonFilter`], within 5% of the
//!   information-theoretic bound; built once, never changed.
//! * **Keys known up front, queries fastest:** [`BinaryFuseFilter`], three loads and two XORs
//!   a query, at 9.0 bits per key for 0.39% (8-bit fingerprints) or 18.0 for 0.0015%
//!   (16-bit); built once, never changed.
//! * **Keys must be removed:** [`CuckooFilter`] (also counts copies, smallest below about
//!   3%) or [`CountingBloomFilter`] (any rate, 4× a Bloom filter's memory).
//! * **Unknown number of keys:** [`ScalableBloomFilter`], which adds layers and keeps the
//!   rate under the target (RedisBloom's `BF.*` scaling); blocked layers by default, or
//!   classic ones ([`LayerLayout::Classic`], about 12% fewer bits after growing 100×) where
//!   memory matters more than a query's cache misses.
//! * **"Seen recently":** [`AgingBloomFilter`], generations that rotate out (a CDN admitting
//!   an object on its second request).
//!
//! All of them share the key hash ([`hash`]: hash once, probe any filter with
//! `contains_hash`), the file format, and the small [`Filter`] trait; [`AnyFilter`] holds
//! whichever kind a file contains.
//!
//! # Keys
//!
//! A key is its bytes or its integer value, whatever Rust type carries it: `"alice"`,
//! `b"alice"`, `String::from("alice")` and `b"alice".to_vec()` are one key, and `42`, `42u8`
//! and `42u64` are another. Other types implement [`Key`] by writing their fields into a
//! [`KeySink`] (a stable feed of your choosing, as Guava's `Funnel`), or are wrapped in
//! [`StdHash`] to use their `std::hash::Hash`; [`key`] has every feed byte by byte, and what
//! happens with negative and 128-bit integers.
//!
//! # Overview of types and modules
//!
//! * The filters, one per file or folder: [`BloomFilter`] (`classic.rs`),
//!   [`BlockedBloomFilter`] (`blocked.rs`), [`AtomicBloomFilter`] (`atomic.rs`),
//!   [`CountingBloomFilter`] (`counting.rs`, `counting/`), [`ScalableBloomFilter`]
//!   (`scalable/`), [`CuckooFilter`] (`cuckoo/`), [`RibbonFilter`] (`ribbon/`),
//!   [`AgingBloomFilter`] (`aging.rs`, `aging/`), [`BinaryFuseFilter`] (`fuse/`).
//! * [`Filter`]: the small trait they share, for code generic over the kind.
//! * [`AnyFilter`]: a filter of whatever kind a file holds.
//! * [`hash`], [`hash_bytes`], [`StableHasher`]: the stable 64-bit key hash. Hash a key once and
//!   probe many filters with it (`contains_hash`), as a storage engine checking one key
//!   against many files does. Pinned by golden vectors: it never changes.
//! * [`sizing`]: the math, as public functions: bits and probes for a target rate, the
//!   predicted rate of a given size, estimates from the fill.
//! * [`format`](mod@format): the versioned, checksummed file format every filter is stored in
//!   (`docs/FORMAT.md` has it byte by byte). Reading never panics and never allocates more than
//!   the input can justify.
//! * [`Error`]: the one error type; its messages say how to fix the problem.
//!
//! The raw bit arrays (`bits.rs`), the in-place XXH3 (`xxh3.rs`) and the static filters'
//! integer mixer (`mix.rs`) are private: the filters own their bits.
//!
//! # Examples
//!
//! ```
//! use bloomkit::{BlockedBloomFilter, BloomFilter};
//!
//! // Plan for a million keys at 1%.
//! let mut seen = BlockedBloomFilter::new(1_000_000, 0.01)?;
//! seen.insert("alice");
//! seen.insert(&42u64);
//! assert!(seen.contains("alice"));
//! assert!(seen.contains(b"alice"));  // the same bytes
//! assert!(seen.contains(&42u8));     // the same value
//! assert!(!seen.contains("bob"));
//!
//! // One hash, many filters: compute it once.
//! let mut today = BloomFilter::new(1_000, 0.01)?;
//! let h = bloomkit::hash("alice");
//! today.insert_hash(h);
//! assert!(today.contains_hash(h) && seen.contains_hash(h));
//!
//! // Store and load; the file format is stable across versions and platforms.
//! let bytes = seen.to_bytes();
//! let loaded = BlockedBloomFilter::from_bytes(&bytes)?;
//! assert!(loaded.contains("alice"));
//! # Ok::<(), bloomkit::Error>(())
//! ```
//!
//! The measured rate matches the prediction (this runs as a test):
//!
//! ```
//! use bloomkit::BlockedBloomFilter;
//!
//! let mut f = BlockedBloomFilter::new(100_000, 0.01)?;
//! for i in 0..100_000u64 { f.insert(&i); }
//! let false_positives = (100_000..1_100_000u64).filter(|i| f.contains(i)).count();
//! let rate = false_positives as f64 / 1e6;
//! assert!(rate > 0.008 && rate <= 0.011, "{rate}");
//! # Ok::<(), bloomkit::Error>(())
//! ```

#![deny(missing_docs)]
// Denied everywhere but the one audited prefetch intrinsic (prefetch.rs).
#![deny(unsafe_code)]

mod aging;
mod any;
mod atomic;
mod bits;
mod blocked;
mod classic;
mod counting;
mod cpu;
mod cuckoo;
mod error;
pub mod format;
mod fuse;
mod hash;
pub mod key;
mod mix;
#[cfg(feature = "parallel")]
mod parallel;
mod prefetch;
mod ribbon;
mod scalable;
pub mod sizing;
mod xxh3;

pub use crate::aging::AgingBloomFilter;
pub use crate::any::AnyFilter;
pub use crate::atomic::AtomicBloomFilter;
pub use crate::blocked::BlockedBloomFilter;
pub use crate::classic::BloomFilter;
pub use crate::counting::CountingBloomFilter;
pub use crate::cuckoo::{CuckooFilter, CuckooOptions, CuckooPlacement};
pub use crate::error::{Error, Result};
pub use crate::format::FilterKind;
pub use crate::fuse::BinaryFuseFilter;
pub use crate::hash::{
    hash, hash_bytes, hash_bytes_with_seed, hash_std, hash_std_with_seed, hash_with_seed,
    StableHasher, DEFAULT_SEED,
};
pub use crate::key::{Key, KeyFeed, KeyHasher, KeySink, StdHash};
pub use crate::ribbon::RibbonFilter;
pub use crate::scalable::{LayerInfo, LayerLayout, ScalableBloomFilter, ScalableBuilder};

/// The query kernel the blocked filters use on this machine: `"avx2"` where the CPU has AVX2
/// (detected at run time), else `"portable"`. Both give the same answers.
pub fn query_kernel() -> &'static str {
    if cpu::avx2_in_use() {
        "avx2"
    } else {
        "portable"
    }
}

/// Makes the blocked filters use the portable query kernel even where AVX2 is available
/// (`true`), or go back to the best one (`false`): for benchmarks that compare the two, and
/// for checking a result on the portable path. It affects the whole process.
pub fn use_portable_kernel(portable: bool) {
    cpu::set_force_portable(portable);
}

// The README's example runs as a doctest, so it cannot drift from the API.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeDoctests;

/// What every filter answers: the query side, shared by all kinds.
///
/// Inserting differs by kind (`&mut self` for most, `&self` for [`AtomicBloomFilter`], a
/// `Result` where a filter can fill up, nothing for the static ones), so it stays on the
/// types. The trait is object-safe, so filters of different kinds fit in one
/// `Vec<Box<dyn Filter>>`; asking by key, which is generic over the key's type, is
/// [`FilterExt::contains`], implemented for every `Filter` and `dyn Filter`.
///
/// # Examples
///
/// ```
/// use bloomkit::{BloomFilter, BlockedBloomFilter, Filter, FilterExt};
///
/// fn in_all(filters: &[&dyn Filter], key: &str) -> bool {
///     filters.iter().all(|f| f.contains(key))
/// }
/// let mut a = BloomFilter::new(100, 0.01)?;
/// let b = BlockedBloomFilter::new(100, 0.01)?;
/// a.insert("k");
/// assert!(!in_all(&[&a, &b], "k"));
/// assert!(in_all(&[&a], "k"));
/// # Ok::<(), bloomkit::Error>(())
/// ```
pub trait Filter {
    /// `false` if the key with this hash is definitely absent; `true` if it may be present.
    /// The hash must come from this filter's [`key_hasher`](Filter::key_hasher).
    fn contains_hash(&self, hash: u64) -> bool;

    /// How the filter hashes keys: its seed and its key feed.
    fn key_hasher(&self) -> KeyHasher;

    /// The hash seed keys are hashed with.
    fn seed(&self) -> u64 {
        self.key_hasher().seed()
    }

    /// The filter's kind, as stored in its file header.
    fn kind(&self) -> FilterKind;

    /// Bytes of memory the filter holds.
    fn memory_bytes(&self) -> usize;
}

/// Asking a [`Filter`] by key: for generic code (`F: Filter`) and trait objects
/// (`&dyn Filter`). Each filter type also has its own `contains`, which needs no import.
///
/// (Its method is generic over the key type, which a trait object cannot call through
/// `Filter` itself; the blanket implementation covers every filter, sized or not, as
/// `rand::Rng` does for `RngCore`.)
pub trait FilterExt: Filter {
    /// `false` if `key` is definitely absent; `true` if it may be present.
    #[inline]
    fn contains<K: Key + ?Sized>(&self, key: &K) -> bool {
        self.contains_hash(self.key_hasher().hash(key))
    }
}

impl<F: Filter + ?Sized> FilterExt for F {}
