//! The filter kinds as one list, for code that offers every kind: [`FilterKind::ALL`], each
//! kind's name and what it is for, and making or planning an [`AnyFilter`] of any kind from
//! a number of keys and a target rate.
//!
//! The `bloomkit` CLI (`--kind`, `size`, `demo`), the explorer page and the benchmark harness
//! read this list instead of keeping their own, so a kind added to the library (its
//! [`FilterKind`] variant, its arms here and in `any.rs`, its plan in
//! [`sizing::kind_plan`](crate::sizing::kind_plan)) appears in all of them. Its sizes come
//! from [`sizing`](crate::sizing), like every formula in the crate.
//!
//! [`AtomicBloomFilter`](crate::AtomicBloomFilter) is not in the list: it is a
//! [`BlockedBloomFilter`](crate::BlockedBloomFilter) that threads insert into through
//! `&self`, stored as one ([`FilterKind::Blocked`]), and code that shows it (the demo, the
//! benchmarks) adds it beside the blocked kind.

use crate::error::{Error, Result};
use crate::format::FilterKind;
use crate::sizing;
use crate::{
    AgingBloomFilter, AnyFilter, BinaryFuseFilter, BlockedBloomFilter, BloomFilter,
    CountingBloomFilter, CuckooFilter, RibbonFilter, ScalableBloomFilter, SectorBloomFilter,
};

/// What inserting a key a filter may already hold does, by kind ([`FilterKind::repeats`]):
/// what a tool sizing a filter for lines that repeat must know.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Repeats {
    /// Nothing changes: a set (the Bloom kinds, scalable, aging). Size for the distinct
    /// keys. (A static kind is built from distinct keys, so repeats do not reach it either.)
    Ignored,
    /// Each copy is counted in the counters the key already has, and takes a removal to go,
    /// but no room (counting): size for the distinct keys, insert every copy.
    Counted,
    /// Each copy is stored in a slot of its own and takes a removal to go (cuckoo): size for
    /// every copy.
    Stored,
}

impl FilterKind {
    /// Every kind, in the order tables list them: [`DEFAULT`](Self::DEFAULT) first, then the
    /// other Bloom layouts, the kinds that remove or grow, the static kinds, and aging.
    ///
    /// # Examples
    ///
    /// ```
    /// use bloomkit::FilterKind;
    ///
    /// assert_eq!(FilterKind::ALL[0], FilterKind::DEFAULT);
    /// for kind in FilterKind::ALL {
    ///     assert_eq!(FilterKind::from_code(kind.code()), Some(kind));
    ///     assert_eq!(FilterKind::from_name(kind.name()), Some(kind));
    /// }
    /// ```
    pub const ALL: [FilterKind; 9] = [
        FilterKind::Blocked,
        FilterKind::Sector,
        FilterKind::Classic,
        FilterKind::Counting,
        FilterKind::Scalable,
        FilterKind::Cuckoo,
        FilterKind::Ribbon,
        FilterKind::Fuse,
        FilterKind::Aging,
    ];

    /// The kinds bloomkit reads but never builds: RedisBloom's Bloom chain and cuckoo filter,
    /// imported from a RedisBloom `DUMP`, RDB value or `SCANDUMP`
    /// ([`crate::redisbloom`]). They hash a key's bytes by RedisBloom's rules, so
    /// [`AnyFilter`] does not hold them; with [`ALL`](Self::ALL) they are every kind a file
    /// header can name.
    pub const IMPORTED: [FilterKind; 2] = [FilterKind::RedisBloomChain, FilterKind::RedisCuckoo];

    /// The kind to choose when nothing argues for another: `bloomkit build`'s default and
    /// the first row of every table, the blocked filter. It answers a query with one cache
    /// miss, for 3% more memory than the classic layout at 1%. The sector layout is faster
    /// (inserts 1.5–2.7×, queries 1.2–1.5×) for 2% more memory at 1%, but sets at least eight
    /// bits a key, which costs 12% more memory than the blocked layout at 5% and 41% at 20%;
    /// and a blocked file is what the zero-copy view ([`crate::BlockedBloomFilterRef`]) and
    /// the [`crate::AtomicBloomFilter`] read. `BENCHMARKS.md` has the figures.
    pub const DEFAULT: FilterKind = FilterKind::Blocked;

    /// The kind whose [`name`](Self::name) is `name`, if there is one.
    pub fn from_name(name: &str) -> Option<FilterKind> {
        Self::ALL.into_iter().find(|kind| kind.name() == name)
    }

    /// The Rust type of the kind: `"BlockedBloomFilter"` for [`FilterKind::Blocked`].
    pub fn type_name(self) -> &'static str {
        match self {
            FilterKind::Classic => "BloomFilter",
            FilterKind::Blocked => "BlockedBloomFilter",
            FilterKind::Counting => "CountingBloomFilter",
            FilterKind::Scalable => "ScalableBloomFilter",
            FilterKind::Cuckoo => "CuckooFilter",
            FilterKind::Ribbon => "RibbonFilter",
            FilterKind::Aging => "AgingBloomFilter",
            FilterKind::Fuse => "BinaryFuseFilter",
            FilterKind::Sector => "SectorBloomFilter",
            FilterKind::RedisBloomChain => "RedisBloomChain",
            FilterKind::RedisCuckoo => "RedisCuckooFilter",
        }
    }

    /// What the kind is for, in one line (the CLI's `--kind` help, the explorer's list).
    pub fn summary(self) -> &'static str {
        match self {
            FilterKind::Classic => {
                "probes anywhere in the bit array: the smallest Bloom filter for its rate"
            }
            FilterKind::Blocked => {
                "all probes of a key in one 64-byte cache line: one cache miss per query"
            }
            FilterKind::Sector => {
                "blocked, with the same bits in each word of the line: the cheapest inserts"
            }
            FilterKind::Counting => {
                "4-bit counters instead of bits: keys can be removed (about 4× the memory)"
            }
            FilterKind::Scalable => {
                "a chain of growing blocked layers: no need to know the number of keys"
            }
            FilterKind::Cuckoo => {
                "fingerprints in buckets: removable and countable, smaller below about 3%"
            }
            FilterKind::Ribbon => {
                "static, solved from all keys at once: the smallest (≈7.3 bits/key for 0.78%)"
            }
            FilterKind::Fuse => {
                "static, built from all keys at once: the fastest queries (9 bits/key for 0.39%)"
            }
            FilterKind::Aging => {
                "generations of blocked filters that rotate out: \"seen recently\""
            }
            FilterKind::RedisBloomChain => {
                "RedisBloom's scalable Bloom filter, imported with its hashing (read, not built)"
            }
            FilterKind::RedisCuckoo => {
                "RedisBloom's cuckoo filter, imported with its hashing (read, not built)"
            }
        }
    }

    /// `true` for a kind built once from all its keys (ribbon, fuse): it has no empty state
    /// to insert into ([`AnyFilter::build_from_hashes`] makes one).
    pub fn is_static(self) -> bool {
        matches!(self, FilterKind::Ribbon | FilterKind::Fuse)
    }

    /// What inserting a key the filter may already hold does: see [`Repeats`] (and
    /// [`AnyFilter::insert`]'s table).
    pub fn repeats(self) -> Repeats {
        match self {
            FilterKind::Counting => Repeats::Counted,
            FilterKind::Cuckoo | FilterKind::RedisCuckoo => Repeats::Stored,
            _ => Repeats::Ignored,
        }
    }

    /// What [`AnyFilter::fill_ratio`] measures for the kind, in a few words.
    pub fn fill_meaning(self) -> &'static str {
        match self {
            FilterKind::Classic | FilterKind::Blocked | FilterKind::Sector => "bits set",
            FilterKind::Counting => "counters not zero",
            FilterKind::Scalable | FilterKind::RedisBloomChain => {
                "keys held / capacity of its layers"
            }
            FilterKind::Cuckoo | FilterKind::RedisCuckoo => "slots in use",
            FilterKind::Ribbon | FilterKind::Fuse => "keys / slots",
            FilterKind::Aging => "bits set in the newest generation",
        }
    }
}

impl AnyFilter {
    /// A filter of `kind` holding the keys with these `hashes` (from
    /// [`hash`](crate::hash) or [`hash_bytes`](crate::hash_bytes)), planned for exactly that
    /// many: a static kind solved from them all, any other kind made by
    /// [`new`](Self::new)`(kind, hashes.len(), fp_rate)` and given each in order, as its own
    /// insert takes it. Pass distinct hashes, except to a kind whose [`Repeats`] is
    /// [`Counted`](Repeats::Counted) or [`Stored`](Repeats::Stored) when copies are meant.
    ///
    /// # Errors
    ///
    /// The kind's own, as [`new`](Self::new), [`RibbonFilter::build_from_hashes`] and
    /// [`BinaryFuseFilter::build_from_hashes`]; [`Error::Full`] from a cuckoo filter given one
    /// key more often than its buckets hold.
    ///
    /// # Examples
    ///
    /// ```
    /// use bloomkit::{AnyFilter, FilterKind};
    ///
    /// let hashes: Vec<u64> = (0..1000u32).map(|i| bloomkit::hash(&i)).collect();
    /// for kind in FilterKind::ALL {
    ///     let f = AnyFilter::build_from_hashes(kind, &hashes, 0.01)?;
    ///     assert_eq!(f.kind(), kind);
    ///     assert!((0..1000u32).all(|i| f.contains(&i)), "{kind}");
    /// }
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn build_from_hashes(kind: FilterKind, hashes: &[u64], fp_rate: f64) -> Result<Self> {
        match kind {
            FilterKind::Ribbon => RibbonFilter::build_from_hashes(hashes, fp_rate).map(Into::into),
            FilterKind::Fuse => {
                BinaryFuseFilter::build_from_hashes(hashes, fp_rate).map(Into::into)
            }
            _ => {
                let mut filter = AnyFilter::new(kind, hashes.len() as u64, fp_rate)?;
                for &hash in hashes {
                    filter.insert_hash(hash)?;
                }
                Ok(filter)
            }
        }
    }

    /// The bytes [`new`](Self::new)`(kind, items, fp_rate)` would hold, computed without
    /// allocating: what its [`memory_bytes`](Self::memory_bytes) reports (for a static kind,
    /// what a filter built from `items` keys reports). For sizing a machine, a memory limit
    /// or a benchmark.
    ///
    /// # Errors
    ///
    /// As [`new`](Self::new) and the static kinds' builds, but for the allocation itself.
    ///
    /// # Examples
    ///
    /// ```
    /// use bloomkit::{AnyFilter, FilterKind};
    ///
    /// let planned = AnyFilter::planned_memory_bytes(FilterKind::Blocked, 1_000_000, 0.01)?;
    /// let built = AnyFilter::new(FilterKind::Blocked, 1_000_000, 0.01)?;
    /// assert_eq!(planned, built.memory_bytes());
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn planned_memory_bytes(kind: FilterKind, items: u64, fp_rate: f64) -> Result<usize> {
        use std::mem::size_of;
        let bytes = |struct_bytes: usize, bits: u64| -> Result<usize> {
            usize::try_from(bits / 8)
                .ok()
                .and_then(|b| b.checked_add(struct_bytes))
                .ok_or(Error::TooLarge { num_bits: bits })
        };
        let plan = sizing::kind_plan(kind, items, fp_rate)?;
        match kind {
            FilterKind::Classic => bytes(size_of::<BloomFilter>(), plan.num_bits),
            FilterKind::Blocked => bytes(size_of::<BlockedBloomFilter>(), plan.num_bits),
            FilterKind::Sector => bytes(size_of::<SectorBloomFilter>(), plan.num_bits),
            FilterKind::Counting => bytes(size_of::<CountingBloomFilter>(), plan.num_bits),
            FilterKind::Ribbon => bytes(size_of::<RibbonFilter>(), plan.num_bits),
            FilterKind::Fuse => bytes(size_of::<BinaryFuseFilter>(), plan.num_bits),
            FilterKind::Aging => {
                // The generations' structs, kept in a list of exactly their number.
                let structs = size_of::<AgingBloomFilter>()
                    + AgingBloomFilter::DEFAULT_GENERATIONS as usize
                        * size_of::<BlockedBloomFilter>();
                bytes(structs, plan.num_bits)
            }
            FilterKind::Scalable => {
                ScalableBloomFilter::builder(items, fp_rate).planned_memory_bytes()
            }
            FilterKind::Cuckoo => CuckooFilter::builder(items, fp_rate).planned_memory_bytes(),
            // kind_plan refuses them before this.
            FilterKind::RedisBloomChain | FilterKind::RedisCuckoo => Err(Error::Unsupported {
                kind,
                operation: "planning (it is imported from RedisBloom, never built here)",
            }),
        }
    }

    /// How full the filter is, as a fraction: what [`FilterKind::fill_meaning`] says it
    /// measures for the kind (bits set, counters not zero, slots in use...).
    ///
    /// # Examples
    ///
    /// ```
    /// use bloomkit::{AnyFilter, FilterKind};
    ///
    /// let mut f = AnyFilter::new(FilterKind::Classic, 1000, 0.01)?;
    /// assert_eq!(f.fill_ratio(), 0.0);
    /// for i in 0..1000u32 { f.insert(&i)?; }
    /// // A classic filter at its planned load has about half its bits set.
    /// assert!((0.45..0.55).contains(&f.fill_ratio()));
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn fill_ratio(&self) -> f64 {
        let share = |part: u64, whole: u64| part as f64 / whole.max(1) as f64;
        match self {
            AnyFilter::Classic(f) => f.fill_ratio(),
            AnyFilter::Blocked(f) => f.fill_ratio(),
            AnyFilter::Sector(f) => f.fill_ratio(),
            AnyFilter::Counting(f) => share(f.count_nonzero(), f.num_counters()),
            AnyFilter::Scalable(f) => share(f.len(), f.capacity()),
            AnyFilter::Cuckoo(f) => f.load_factor(),
            AnyFilter::Ribbon(f) => share(f.len(), f.num_slots()),
            AnyFilter::Fuse(f) => share(f.len(), f.num_slots()),
            AnyFilter::Aging(f) => f.generation(0).map_or(0.0, BlockedBloomFilter::fill_ratio),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_is_every_file_kind_once() {
        let listed: Vec<u16> = FilterKind::ALL
            .iter()
            .chain(&FilterKind::IMPORTED)
            .map(|k| k.code())
            .collect();
        for code in 0..=u16::MAX {
            if let Some(kind) = FilterKind::from_code(code) {
                assert_eq!(
                    listed.iter().filter(|&&c| c == code).count(),
                    1,
                    "{kind} is not listed once in FilterKind::ALL or IMPORTED"
                );
            }
        }
        assert_eq!(FilterKind::from_name("atomic"), None);
        assert_eq!(FilterKind::from_name("Blocked"), None);
        // Type names are the crate's own types.
        assert_eq!(
            FilterKind::Counting.type_name(),
            std::any::type_name::<CountingBloomFilter>()
                .rsplit("::")
                .next()
                .unwrap()
        );
    }

    #[test]
    fn planned_memory_is_what_new_or_build_holds() {
        for kind in FilterKind::ALL {
            for (items, p) in [(1, 0.01), (1000, 0.01), (52_000, 0.001), (100_000, 0.2)] {
                let planned = AnyFilter::planned_memory_bytes(kind, items, p).unwrap();
                let built = if kind.is_static() {
                    let hashes: Vec<u64> = (0..items).map(|i| crate::hash(&i)).collect();
                    AnyFilter::build_from_hashes(kind, &hashes, p).unwrap()
                } else {
                    AnyFilter::new(kind, items, p).unwrap()
                };
                assert_eq!(planned, built.memory_bytes(), "{kind} {items} {p}");
            }
        }
    }

    #[test]
    fn fills_are_fractions_and_grow_with_keys() {
        for kind in FilterKind::ALL {
            let hashes: Vec<u64> = (0..2000u32).map(|i| crate::hash(&i)).collect();
            let full = AnyFilter::build_from_hashes(kind, &hashes, 0.01).unwrap();
            let fill = full.fill_ratio();
            assert!(fill > 0.0 && fill <= 1.0, "{kind}: {fill}");
            if !kind.is_static() {
                assert_eq!(AnyFilter::new(kind, 2000, 0.01).unwrap().fill_ratio(), 0.0);
            }
        }
    }

    #[test]
    fn repeats_match_what_insert_does() {
        for kind in FilterKind::ALL.into_iter().filter(|k| !k.is_static()) {
            let mut f = AnyFilter::new(kind, 100, 0.01).unwrap();
            f.insert("k").unwrap();
            f.insert("k").unwrap();
            let copies = f.len();
            match kind.repeats() {
                Repeats::Ignored => assert_eq!(copies, 1, "{kind}"),
                Repeats::Counted | Repeats::Stored => assert_eq!(copies, 2, "{kind}"),
            }
        }
        // A stored copy takes a slot: a cuckoo filter's load rises with it.
        let mut f = CuckooFilter::new(100, 0.01).unwrap();
        f.insert("k").unwrap();
        let one = f.load_factor();
        f.insert("k").unwrap();
        assert_eq!(f.load_factor(), 2.0 * one);
        assert_eq!(FilterKind::Cuckoo.repeats(), Repeats::Stored);
    }
}
