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
//! | [`BlockedBloomFilter`] | 9.92 | 0.997% | 21 | 20 | no | no | yes | no |
//! | [`SectorBloomFilter`] | 10.10 | 1.002% | 17 | 21 | no | no | yes | no |
//! | [`BloomFilter`] | 9.59 | 0.997% | 27 | 37 | no | no | yes | no |
//! | [`AtomicBloomFilter`] | 9.92 | 0.997% | 75 | 29 | no | no | yes | no |
//! | [`CountingBloomFilter`] | 38.3 | 0.997% | 93 | 51 | yes | no | yes | no |
//! | [`ScalableBloomFilter`] | 26.5 after growing 100× | 0.970% | 103 | 82 | no | yes | no | no |
//! | [`CuckooFilter`] | 10.7 | 0.738% | 83 | 35 | yes | optional | no | no |
//! | [`RibbonFilter`] | 7.32 | 0.772% | 115 (build) | 19 | no | no | no | yes |
//! | [`BinaryFuseFilter`] | 9.04 (8-bit) | 0.383% | 72 (build) | 19 | no | no | no | yes |
//! | [`AgingBloomFilter`] | 11.5 (2 generations) | 1.010% | 23 | 27 | by age | no | no | no |
//!
//! (One run on 2026-12-01; `BENCHMARKS.md` has the machine, the command and the peers
//! beside each figure, and the times are that machine's, so compare them with each other. The
//! fuse rate is 2^−8 with 8-bit fingerprints, 2^−16 with 16-bit ones at 18.1 bits per key.
//! Under callgrind a sector insert takes 62 instructions where a blocked one takes 146, see
//! `BENCHMARKS.md`.)
//!
//! * **Most uses:** [`BlockedBloomFilter`], the default ([`FilterKind::DEFAULT`]). Every
//!   probe of a key falls in one 64-byte cache line, so a query costs one cache miss, for 3%
//!   more memory than [`BloomFilter`] at 1% (8% at 0.1%). Its bits are also the
//!   [`AtomicBloomFilter`]'s, its files open in place as a [`BlockedBloomFilterRef`], it
//!   builds on all cores (`par_insert_many`), and the scalable and aging filters are made of
//!   it.
//! * **Speed matters most, at 2% or finer:** [`SectorBloomFilter`], the blocked layout with
//!   the same number of bits in every 64-bit word of the line, so a key's whole mask comes
//!   from one multiply and is set or tested at once: inserts 1.5–2.7× and queries 1.2–1.5×
//!   the blocked filter's speed (`BENCHMARKS.md`), for 2% more memory at 1% and 4% at 2%.
//!   It sets at least eight bits a key, too many at coarse rates: 12% more memory than the
//!   blocked filter at 5%, 41% at 20%.
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
//! * The filters, one folder each, the type in `mod.rs`, its file format in `persist.rs` and
//!   its configuration in `builder.rs`: [`BloomFilter`] (`classic/`), [`BlockedBloomFilter`]
//!   (`blocked/`), [`AtomicBloomFilter`] (`atomic/`), [`CountingBloomFilter`] (`counting/`),
//!   [`ScalableBloomFilter`] (`scalable/`), [`CuckooFilter`] (`cuckoo/`),
//!   [`RibbonFilter`] (`ribbon/`), [`BinaryFuseFilter`] (`fuse/`),
//!   [`AgingBloomFilter`] (`aging/`), [`SectorBloomFilter`] (`sector/`: `layout.rs`, its
//!   bits; `kernel.rs`, `avx2.rs` and `avx512.rs`, its kernels; it borrows the blocked line choice and
//!   batched walk). The blocked layout, which the atomic, scalable and
//!   aging filters also use, keeps its pieces apart: `blocked/probe.rs` (which line, which
//!   bits; the portable query and insert), `blocked/kernel.rs` (the dispatch to the portable
//!   or the AVX2 kernel, `blocked/avx2.rs`), `blocked/batch.rs` (the prefetching walk of the
//!   batched calls), `blocked/unaligned.rs` (the query kernel over a line at any address,
//!   for the view). Calls go one way: filter → kernel → probe.
//! * Configuration, the same for every kind: `Kind::new(items, fp_rate)` builds the planned
//!   filter; `Kind::builder(items, fp_rate)` starts from that plan and changes any setting
//!   (the seed, the exact bits and probes, the kind's own options) before `build()`; the
//!   static kinds take their keys last (`RibbonFilter::build(keys, fp_rate)`,
//!   `RibbonFilter::builder(fp_rate).seed(7).build(keys)`). The builders: [`BloomBuilder`],
//!   [`BlockedBuilder`], [`AtomicBuilder`], [`CountingBuilder`], [`ScalableBuilder`],
//!   [`CuckooBuilder`], [`AgingBuilder`], [`RibbonBuilder`], [`FuseBuilder`]; what the
//!   bit-array kinds' builders share is in `builder.rs`.
//! * Views: [`BlockedBloomFilterRef`] and [`BloomFilterRef`] (`blocked/view.rs`,
//!   `classic/view.rs`) query a filter in place, in the bytes of its file (an mmap'd file, a
//!   block of a storage engine's own file), without copying it.
//! * Batched calls, the same for every kind that has them: `contains_many(keys, &mut
//!   answers)` and `contains_many_hashes` (blocked, atomic, scalable, counting, cuckoo,
//!   ribbon, fuse, and the blocked view) give `contains`'s answers in order, with each key's
//!   memory prefetched a few keys ahead, so that the cache misses of a filter larger than
//!   the cache overlap (but for the counting filter, whose k lines a key measured faster
//!   without); `insert_many` likewise (blocked, atomic and counting return how many
//!   changed the filter; scalable and cuckoo, whose inserts can fail, append each key's
//!   answer and stop at the first error, and take a `may_grow` limit in
//!   `insert_many_hashes_within`). The shared walk is `batch.rs`; each kind's part is its
//!   `batch.rs` (the blocked filter's, specialised to its one line, `blocked/batch.rs`).
//! * [`Filter`]: the small object-safe trait they share; [`FilterExt`] asks any of them, or a
//!   `&dyn Filter`, by key.
//! * [`AnyFilter`] (`any.rs`): a filter of whatever kind a file holds (but the two
//!   RedisBloom kinds, which probe with two hashes of a key's bytes).
//! * [`redisbloom`]: RedisBloom's own Bloom chain and cuckoo filter, with its hashing, and
//!   decoders of its `DUMP` payloads, RDB values and `SCANDUMP` chunks: filters imported
//!   from RedisBloom keep answering as they did there.
//! * The kinds as one list (`kinds.rs`): [`FilterKind::ALL`] (the kinds bloomkit builds; [`FilterKind::IMPORTED`] the two it
//!   imports from RedisBloom) with each kind's name, summary
//!   and behaviour, and [`AnyFilter::build_from_hashes`], [`AnyFilter::planned_memory_bytes`]
//!   and [`AnyFilter::fill_ratio`], for tools that offer every kind (the CLI, the explorer,
//!   the benchmarks).
//! * [`key`]: what a key is. [`Key`] (a type's stable byte feed), [`KeySink`] (where a
//!   composite key writes its fields), [`KeyHasher`] (a filter's seed and feed), [`KeyFeed`]
//!   (today's, or bloomkit 0.1's for its files), [`StdHash`] (a key hashed by its `Hash`).
//! * [`hash`], [`hash_bytes`], [`hash_std`], [`StableHasher`] (`hash.rs`): the stable 64-bit
//!   key hash. Hash a key once and probe many filters with it (`contains_hash`), as a storage
//!   engine checking one key against many files does. Pinned by golden vectors: it never
//!   changes.
//! * [`sizing`]: the math, as public functions: bits and probes for a target rate, the
//!   predicted rate of a given size, estimates from the fill; and in `sizing/kinds.rs` the
//!   plan of any kind ([`sizing::kind_plan`]) with the cuckoo, aging and scalable formulas.
//!   Every formula lives here, and tools read it rather than derive it again.
//! * [`format`](mod@format): the versioned, checksummed file format every filter is stored in
//!   (`docs/FORMAT.md` has it byte by byte), and `format_methods!`, which writes every kind's
//!   `to_bytes`/`write_to`/`from_bytes`/`read_from` once. Reading never panics and never
//!   allocates more than the input can justify.
//! * [`Error`] (`error.rs`): the one error type; its messages say how to fix the problem.
//! * Private: the bit arrays (`bits.rs`), the in-place XXH3 (`xxh3.rs`), the CPU feature
//!   check that picks kernels (`cpu.rs`), the prefetch intrinsic (`prefetch.rs`, the one
//!   audited `unsafe` block outside the kernels), the static filters' integer mixer
//!   (`mix.rs`), and, with the default `parallel` feature, the rayon build
//!   (`parallel.rs`, [`BlockedBloomFilter::par_insert_many`]).
//!
//! Features: `parallel` (on by default) builds a blocked filter on all cores
//! (`BlockedBloomFilter::par_insert_many`, `parallel.rs`); `bytes` makes `bytes::Bytes` and
//! `BytesMut` keys; `serde` serializes every filter and view as the bytes of its file format
//! (`serde_format.rs`), so a filter inside your own serde types round-trips and stays
//! readable by `from_bytes`.
//!
//! # Adding a filter kind
//!
//! 1. `src/<kind>/mod.rs` (the type, with `insert`/`contains`/`contains_hash` over
//!    [`Key`]s and a [`KeyHasher`]) and `src/<kind>/persist.rs` (its [`format::FilterKind`]
//!    code, a `Persist` impl, and one `format_methods!` call, which also gives it the serde
//!    impls); `new`/`builder` as every kind has them (`src/<kind>/builder.rs`); `mod` and
//!    `pub use` here, a row in the tables above.
//! 2. [`FilterKind`]: a variant, its code and name (`format.rs`); its place in
//!    [`FilterKind::ALL`] and its arms in `kinds.rs` (type name, summary, what a repeated
//!    insert does, what its fill means; the compiler lists them); its plan in
//!    [`sizing::kind_plan`] (`sizing/kinds.rs`, where any formula of its own goes too); its
//!    bytes in `docs/FORMAT.md`; golden files in `tests/data/` and a test that loads them.
//! 3. [`AnyFilter`]: a variant and its arms (`any.rs`, and `kinds.rs`'s
//!    `build_from_hashes`, `planned_memory_bytes` and `fill_ratio`; the compiler lists them).
//! 4. Tests in `tests/<kind>.rs`: the `HashSet` oracle, statistical rates, hostile input
//!    (`tests/it/common`'s truncation and byte-flip checks).
//! 5. Outside the library, one place is required: the Python package's class for the kind
//!    (`crates/bloomkit-py/src/kinds/`, its stub in `bloomkit/__init__.pyi`). The CLI
//!    (`--kind`, `size`, `demo`), the explorer and the benchmark harness read
//!    [`FilterKind::ALL`] and build through [`AnyFilter`]. Where the kind has more to show,
//!    add it there: its own fields in the CLI's `info`
//!    (`crates/bloomkit-cli/src/commands/info.rs`, which shows the common ones meanwhile), a
//!    typed contender in `crates/bloomkit-bench/src/ours.rs` (measured through `AnyFilter`
//!    meanwhile), a `from_bytes` call in the fuzz target `fuzz_targets/from_bytes.rs` (which
//!    reaches it through `AnyFilter` meanwhile).
//!
//! # Names
//!
//! One word for each idea, on every kind:
//!
//! * `len()` / `is_empty()`: how many keys the filter holds by its own count (each kind's
//!   `len` says what it counts: inserts that changed a Bloom filter, copies in a counting or
//!   cuckoo filter, keys a static filter was built from).
//! * `fp_rate()`: the rate a filter was planned for and records: a scalable filter's target,
//!   which it keeps however far it grows; a ribbon or binary fuse filter's exact rate (2^−r,
//!   the target rounded to what the filter delivers). The bit-array kinds and the cuckoo
//!   filter store their shape, not a target, so they have none.
//! * `estimated_fp_rate()`: the rate a query risks now, from the filter's contents (on every
//!   kind, and on [`Filter`]). The rate a shape *should* give for a number of keys is
//!   [`sizing`]'s (`sizing::blocked_fp_rate`, [`AnyFilter::predicted_fp_rate`]).
//! * `expansion`: the factor a growing filter grows by, scalable and cuckoo alike
//!   (RedisBloom's `EXPANSION`); "grow" is what it does.
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
mod batch;
mod bits;
mod blocked;
mod builder;
mod classic;
mod counting;
mod cpu;
mod cuckoo;
mod error;
pub mod format;
mod fuse;
mod hash;
pub mod key;
mod kinds;
mod mix;
#[cfg(feature = "parallel")]
mod parallel;
mod prefetch;
pub mod redisbloom;
mod ribbon;
mod scalable;
mod sector;
#[cfg(feature = "serde")]
mod serde_format;
pub mod sizing;
mod xxh3;

pub use crate::aging::{AgingBloomFilter, AgingBuilder};
pub use crate::any::AnyFilter;
pub use crate::atomic::{AtomicBloomFilter, AtomicBuilder};
pub use crate::blocked::{
    BlockedBloomFilter, BlockedBloomFilterRef, BlockedBuilder, BlockedProbes,
};
pub use crate::classic::{BloomBuilder, BloomFilter, BloomFilterRef, ClassicProbes};
pub use crate::counting::{CountingBloomFilter, CountingBuilder};
pub use crate::cuckoo::{CuckooBuilder, CuckooFilter, CuckooPlacement};
pub use crate::error::{Error, Result};
pub use crate::format::FilterKind;
pub use crate::fuse::{BinaryFuseFilter, FuseBuilder};
pub use crate::hash::{
    hash, hash_bytes, hash_bytes_with_seed, hash_std, hash_std_with_seed, hash_with_seed,
    StableHasher, DEFAULT_SEED,
};
pub use crate::key::{Key, KeyFeed, KeyHasher, KeySink, StdHash};
pub use crate::kinds::Repeats;
pub use crate::ribbon::{RibbonBuilder, RibbonFilter, RibbonLayout};
pub use crate::scalable::{LayerInfo, LayerLayout, ScalableBloomFilter, ScalableBuilder};
pub use crate::sector::{SectorBloomFilter, SectorBuilder};

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
/// for checking a result on the portable path. It affects the whole process, and also the
/// sector and ribbon filters made while it is set (their AVX2 and AVX-512 kernels).
pub fn use_portable_kernel(portable: bool) {
    cpu::set_force_portable(portable);
}

// The README's example runs as a doctest, so it cannot drift from the API.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeDoctests;

/// What every filter answers: the query side, its count and its rate, shared by all kinds.
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
///
/// // What generic code reports about any filter: its count and its rate now.
/// let filters: [&dyn Filter; 2] = [&a, &b];
/// assert_eq!(filters.map(|f| f.len()), [1, 0]);
/// assert!(filters[0].estimated_fp_rate() > 0.0 && filters[1].is_empty());
/// assert_eq!(filters[1].estimated_fp_rate(), 0.0);
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

    /// How many keys the filter holds, by its own count: each kind's `len` (what it counts
    /// differs by kind, and each kind's `len` says how).
    fn len(&self) -> u64;

    /// Whether [`len`](Filter::len) is zero.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The false-positive rate a query for an absent key risks now, estimated from the
    /// filter's contents: each kind's `estimated_fp_rate` (from its fill or load; the exact
    /// rate of a static filter, 0 for one built from no keys).
    fn estimated_fp_rate(&self) -> f64;
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
