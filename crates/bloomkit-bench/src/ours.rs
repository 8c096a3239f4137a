//! bloomkit's own filters as [`Contender`]s: what `compare` sets beside the peers, and what
//! a `bloomkit bench` subcommand measures on a user's machine.
//!
//! The kinds are the library's list ([`FilterKind::ALL`]), each through its own type, so
//! that a timed loop is the kind's code and not a dispatch; a kind added to the library
//! and not yet given a typed contender here is measured all the same, through
//! [`AnyFilter`] ([`contenders`] says how). Sizes come from the library
//! ([`AnyFilter::planned_memory_bytes`], [`sizing::scalable_layers`]), never from a formula
//! of the harness's own.
//!
//! # Adding a kind
//!
//! A typed contender, where the kind's speed matters, takes two steps:
//!
//! 1. a [`Subject`] impl, through [`bloomkit_subject!`] for the usual shape (`insert`,
//!    `contains`, `contains_hash`, `memory_bytes`), or a [`StaticFilter`] impl for a kind
//!    built from all its keys;
//! 2. an arm in [`contenders`]' match on the kind.
//!
//! [`bloomkit_subject!`]: crate::bloomkit_subject

use std::marker::PhantomData;

use bloomkit::{
    sizing, AnyFilter, AtomicBloomFilter, BinaryFuseFilter, BlockedBloomFilter, BloomFilter,
    CountingBloomFilter, CuckooFilter, FilterKind, RibbonFilter, ScalableBloomFilter,
    SectorBloomFilter,
};

use crate::keys::{Key, KeyPool};
use crate::subject::{
    BloomkitHash, Contender, Family, Hashing, Info, Static, StaticFilter, Subject,
};

/// Implements [`Subject`] for a bloomkit filter type with the usual shape: `contains(&T)`,
/// `contains_hash(u64)`, `memory_bytes()`, and an insert given as a closure `|filter, key|`
/// that returns whether the key was accepted.
///
/// Call the filter's own insert by its path (`Type::insert(f, key)`): `f.insert(key)` would
/// find [`Subject::insert`] first and recurse.
#[macro_export]
macro_rules! bloomkit_subject {
    ($ty:ty, |$f:ident, $key:ident| $insert:expr) => {
        impl<K: $crate::keys::Key + ?Sized> $crate::subject::Subject<K> for $ty {
            #[inline]
            fn insert(&mut self, $key: &K) -> bool {
                let $f = self;
                $insert
            }

            #[inline]
            fn contains(&self, key: &K) -> bool {
                <$ty>::contains(self, key)
            }

            fn supports_hash(&self) -> bool {
                true
            }

            #[inline]
            fn contains_hash(&self, hash: u64) -> bool {
                <$ty>::contains_hash(self, hash)
            }

            fn memory_bytes(&self) -> usize {
                <$ty>::memory_bytes(self)
            }
        }
    };
}

bloomkit_subject!(BloomFilter, |f, key| {
    BloomFilter::insert(f, key);
    true
});
bloomkit_subject!(BlockedBloomFilter, |f, key| {
    BlockedBloomFilter::insert(f, key);
    true
});
bloomkit_subject!(SectorBloomFilter, |f, key| {
    SectorBloomFilter::insert(f, key);
    true
});
// Through `&self`, the way many threads would share it; one thread here, so its times
// compare with the others'.
bloomkit_subject!(AtomicBloomFilter, |f, key| {
    AtomicBloomFilter::insert(f, key);
    true
});

bloomkit_subject!(CountingBloomFilter, |f, key| {
    CountingBloomFilter::insert(f, key);
    true
});
bloomkit_subject!(CuckooFilter, |f, key| CuckooFilter::insert(f, key).is_ok());
bloomkit_subject!(ScalableBloomFilter, |f, key| {
    ScalableBloomFilter::insert(f, key).is_ok()
});

impl StaticFilter for RibbonFilter {
    fn build(hashes: &[u64], p: f64) -> Result<Self, String> {
        RibbonFilter::build_from_hashes(hashes, p).map_err(|e| e.to_string())
    }

    #[inline]
    fn contains_hash(&self, hash: u64) -> bool {
        RibbonFilter::contains_hash(self, hash)
    }

    fn memory_bytes(&self) -> usize {
        RibbonFilter::memory_bytes(self)
    }
}

/// A blocked filter driven through its batched operations (`insert_many_hashes`,
/// `contains_many_hashes`): keys are hashed as they come and handed over 1,024 at a time, so
/// the rolling prefetch runs over long stretches. The same filter and answers as
/// [`BlockedBloomFilter`] one by one; what differs is the time out of cache.
pub struct Batched(BlockedBloomFilter);

/// Keys handed to a batched call at once.
const BATCH_KEYS: usize = 1024;

impl Batched {
    /// Runs `op` over the hashes of `pool`'s keys, 1,024 at a time.
    fn over_pool<P: KeyPool>(pool: &P, mut op: impl FnMut(&[u64])) {
        let mut hashes = Vec::with_capacity(BATCH_KEYS);
        pool.for_each(|key| {
            hashes.push(bloomkit::hash(std::hint::black_box(key)));
            if hashes.len() == BATCH_KEYS {
                op(&hashes);
                hashes.clear();
            }
        });
        op(&hashes);
    }

    fn count(&self, hashes: &[u64], answers: &mut Vec<bool>) -> u64 {
        answers.clear();
        self.0.contains_many_hashes(hashes, answers);
        answers.iter().filter(|&&a| a).count() as u64
    }
}

impl<K: Key + ?Sized> Subject<K> for Batched {
    fn insert(&mut self, key: &K) -> bool {
        self.0.insert(key);
        true
    }

    fn contains(&self, key: &K) -> bool {
        self.0.contains(key)
    }

    fn supports_hash(&self) -> bool {
        true
    }

    fn contains_hash(&self, hash: u64) -> bool {
        self.0.contains_hash(hash)
    }

    fn memory_bytes(&self) -> usize {
        self.0.memory_bytes()
    }

    fn insert_pool(&mut self, pool: &K::Pool) -> u64 {
        Batched::over_pool(pool, |hashes| {
            self.0.insert_many_hashes(hashes);
        });
        0
    }

    fn count_pool(&self, pool: &K::Pool) -> u64 {
        let mut answers = Vec::with_capacity(BATCH_KEYS);
        let mut found = 0;
        Batched::over_pool(pool, |hashes| found += self.count(hashes, &mut answers));
        found
    }

    fn count_hashes(&self, hashes: &[u64]) -> u64 {
        let mut answers = Vec::with_capacity(BATCH_KEYS);
        hashes
            .chunks(BATCH_KEYS)
            .map(|chunk| self.count(chunk, &mut answers))
            .sum()
    }
}

/// A ribbon filter: static, built from the `bloomkit::hash`es of all its keys.
pub struct Ribbon;

impl<K: Key + ?Sized> Contender<K> for Ribbon {
    fn info(&self) -> Info {
        Info {
            name: "RibbonFilter".to_string(),
            crate_name: "bloomkit",
            family: Family::Ribbon,
            hashing: Hashing::Bloomkit,
            note: Some(
                "static: built from all keys (layout 2, in shards); rate 2^-7 for a 1% target"
                    .to_string(),
            ),
        }
    }

    fn build(&self, n: u64, p: f64) -> Result<Box<dyn Subject<K>>, String> {
        Ok(Box::new(Static::<K, BloomkitHash, RibbonFilter>::new(
            n, p,
        )?))
    }

    fn memory_for(&self, n: u64, p: f64) -> Result<u64, String> {
        let bits = RibbonFilter::planned_bits(n, p).map_err(|e| e.to_string())?;
        Ok(std::mem::size_of::<RibbonFilter>() as u64 + bits / 8)
    }

    fn build_peak_bytes(&self, n: u64, p: f64) -> u64 {
        // Beside the filter: the collected hashes (8 bytes a key) and the build's scratch, a
        // third of the hashes at a time grouped by shard, and one shard's band and keys
        // (under 32 MiB). Measured (`ribbon_work`, VmHWM): 2.84 bytes a key beyond the filter
        // at 100 million keys.
        let scratch = n.div_ceil(3).saturating_mul(8).saturating_add(32 << 20);
        <Self as Contender<K>>::memory_for(self, n, p)
            .unwrap_or(u64::MAX)
            .saturating_add(n.saturating_mul(8))
            .saturating_add(scratch)
    }
}

/// A binary fuse filter with `BITS`-bit fingerprints, built from the `bloomkit::hash`es of
/// all its keys.
pub struct FuseFilter<const BITS: u32>(BinaryFuseFilter);

impl<const BITS: u32> StaticFilter for FuseFilter<BITS> {
    fn build(hashes: &[u64], _p: f64) -> Result<Self, String> {
        BinaryFuseFilter::builder(0.01)
            .fingerprint_bits(BITS)
            .build_from_hashes(hashes)
            .map(FuseFilter)
            .map_err(|e| e.to_string())
    }

    #[inline]
    fn contains_hash(&self, hash: u64) -> bool {
        self.0.contains_hash(hash)
    }

    fn memory_bytes(&self) -> usize {
        self.0.memory_bytes()
    }
}

/// A binary fuse filter: static, built from the `bloomkit::hash`es of all its keys, with 8-
/// or 16-bit fingerprints (its rate is 2^-bits whatever the target).
pub struct Fuse {
    /// 8 or 16.
    pub fingerprint_bits: u32,
}

impl<K: Key + ?Sized> Contender<K> for Fuse {
    fn info(&self) -> Info {
        let bits = self.fingerprint_bits;
        Info {
            name: format!("BinaryFuseFilter, {bits}-bit"),
            crate_name: "bloomkit",
            family: if bits == 8 {
                Family::Fuse8
            } else {
                Family::Fuse16
            },
            hashing: Hashing::Bloomkit,
            note: Some(format!(
                "static: built from all keys; {bits}-bit fingerprints, rate 2^-{bits}"
            )),
        }
    }

    fn build(&self, n: u64, p: f64) -> Result<Box<dyn Subject<K>>, String> {
        Ok(if self.fingerprint_bits == 8 {
            Box::new(Static::<K, BloomkitHash, FuseFilter<8>>::new(n, p)?)
        } else {
            Box::new(Static::<K, BloomkitHash, FuseFilter<16>>::new(n, p)?)
        })
    }

    fn memory_for(&self, n: u64, _p: f64) -> Result<u64, String> {
        match BinaryFuseFilter::planned_bits(n, self.fingerprint_bits) {
            Ok(bits) => Ok(std::mem::size_of::<BinaryFuseFilter>() as u64 + bits / 8),
            // Past 2^32 slots: more than any memory, which keeps the harness's search for a
            // size monotone.
            Err(bloomkit::Error::InvalidParameter {
                name: "number of keys",
                ..
            }) => Ok(u64::MAX),
            Err(e) => Err(e.to_string()),
        }
    }

    fn build_peak_bytes(&self, n: u64, p: f64) -> u64 {
        // The collected hashes (8 bytes a key) and the build's scratch: the sorted hashes and
        // the peeling order (9 bytes a key) and 13 bytes a slot (about 1.125 slots a key),
        // beside the filter.
        let filter = <Self as Contender<K>>::memory_for(self, n, p).unwrap_or(u64::MAX);
        let slots =
            (filter.saturating_mul(8) / u64::from(self.fingerprint_bits)).saturating_mul(13);
        filter
            .saturating_add(n.saturating_mul(17))
            .saturating_add(slots)
    }
}

/// How much smaller than its final key count a scalable filter is planned: it grows 100×
/// during the insert phase, the case the targets (`peers::targets`) compare.
pub const SCALABLE_GROWTH: u64 = 100;

/// A scalable filter planned for a hundredth of its keys (it grows 100× while they go in).
fn scalable_new(n: u64, p: f64) -> bloomkit::Result<ScalableBloomFilter> {
    ScalableBloomFilter::new((n / SCALABLE_GROWTH).max(1), p)
}

/// Bytes of a scalable filter after `n` keys, planned for n/100: the layers the library
/// plans ([`sizing::scalable_layers`], each a blocked filter) until they hold n, and each
/// layer's entry in the chain.
fn scalable_memory(n: u64, p: f64) -> bloomkit::Result<u64> {
    let first = (n / SCALABLE_GROWTH).max(1);
    let mut bytes = std::mem::size_of::<ScalableBloomFilter>() as u64;
    // Each layer's entry in the chain: either layout's filter, its capacity and its rate.
    let entry = std::mem::size_of::<BlockedBloomFilter>()
        .max(std::mem::size_of::<bloomkit::BloomFilter>())
        + 16;
    let mut held = 0u64;
    let layers = sizing::scalable_layers(
        first,
        p,
        ScalableBloomFilter::DEFAULT_EXPANSION,
        ScalableBloomFilter::DEFAULT_TIGHTENING,
    );
    for layer in layers {
        if held >= n.max(1) {
            break;
        }
        bytes += sizing::blocked_plan(layer.capacity, layer.fp_rate)?.num_bits / 8 + entry as u64;
        held = held.saturating_add(layer.capacity);
    }
    Ok(bytes)
}

/// The constructor of a bloomkit filter: `new(items, fp_rate)`.
pub type NewFn<F> = fn(u64, f64) -> bloomkit::Result<F>;

/// A memory formula: the bytes a filter for `items` at `fp_rate` takes, without building it.
pub type MemoryFn = fn(u64, f64) -> bloomkit::Result<u64>;

/// Where a contender's size comes from.
#[derive(Clone, Copy)]
pub enum Memory {
    /// The library's plan for a filter of the kind: [`AnyFilter::planned_memory_bytes`].
    Planned(FilterKind),
    /// A formula, for a filter the library has no plan of (one grown past its plan, or a
    /// type outside [`AnyFilter`]).
    Formula(MemoryFn),
}

impl Memory {
    fn bytes(self, n: u64, p: f64) -> bloomkit::Result<u64> {
        match self {
            Memory::Planned(kind) => AnyFilter::planned_memory_bytes(kind, n, p).map(|b| b as u64),
            Memory::Formula(formula) => formula(n, p),
        }
    }
}

/// A bloomkit filter kind as a [`Contender`].
pub struct Ours<F> {
    name: &'static str,
    family: Family,
    new: NewFn<F>,
    memory: Memory,
    _filter: PhantomData<fn() -> F>,
}

impl<F> Ours<F> {
    /// A contender named `name` (the type's name), built by `new`, whose size is `memory`.
    pub fn new(name: &'static str, family: Family, new: NewFn<F>, memory: Memory) -> Self {
        Ours {
            name,
            family,
            new,
            memory,
            _filter: PhantomData,
        }
    }

    /// The contender for `kind` through its own type `F`, built by `new`: named and sized as
    /// the library names and plans the kind.
    pub fn of_kind(kind: FilterKind, family: Family, new: NewFn<F>) -> Self {
        Self::new(kind.type_name(), family, new, Memory::Planned(kind))
    }
}

impl<K, F> Contender<K> for Ours<F>
where
    K: Key + ?Sized,
    F: Subject<K> + 'static,
{
    fn info(&self) -> Info {
        Info {
            name: self.name.to_string(),
            crate_name: "bloomkit",
            family: self.family,
            hashing: Hashing::Bloomkit,
            note: None,
        }
    }

    fn build(&self, n: u64, p: f64) -> Result<Box<dyn Subject<K>>, String> {
        let filter = (self.new)(n, p).map_err(|e| e.to_string())?;
        Ok(Box::new(filter))
    }

    fn memory_for(&self, n: u64, p: f64) -> Result<u64, String> {
        self.memory.bytes(n, p).map_err(|e| e.to_string())
    }
}

/// Bytes of an atomic filter: a blocked filter's plan, in the atomic filter's struct.
fn atomic_memory(n: u64, p: f64) -> bloomkit::Result<u64> {
    let blocked = AnyFilter::planned_memory_bytes(FilterKind::Blocked, n, p)?;
    Ok((blocked - std::mem::size_of::<BlockedBloomFilter>()
        + std::mem::size_of::<AtomicBloomFilter>()) as u64)
}

/// An aging filter in its steady state: two generations of half the keys each, the first
/// half inserted before a rotation and the second after it, as `bloomkit demo` fills one.
pub struct Aging;

/// An [`AgingBloomFilter`](bloomkit::AgingBloomFilter) that rotates once, when its newest
/// generation holds its share.
pub struct AgingSubject {
    filter: bloomkit::AgingBloomFilter,
    share: u64,
    inserted: u64,
}

impl<K: Key + ?Sized> Subject<K> for AgingSubject {
    #[inline]
    fn insert(&mut self, key: &K) -> bool {
        if self.inserted == self.share {
            self.filter.rotate();
        }
        self.inserted += 1;
        self.filter.insert(key);
        true
    }

    fn contains(&self, key: &K) -> bool {
        self.filter.contains(key)
    }

    fn supports_hash(&self) -> bool {
        true
    }

    fn contains_hash(&self, hash: u64) -> bool {
        self.filter.contains_hash(hash)
    }

    fn memory_bytes(&self) -> usize {
        self.filter.memory_bytes()
    }
}

impl<K: Key + ?Sized> Contender<K> for Aging {
    fn info(&self) -> Info {
        Info {
            name: "AgingBloomFilter".to_string(),
            crate_name: "bloomkit",
            family: Family::Aging,
            hashing: Hashing::Bloomkit,
            note: Some("two generations of half the keys each, rotated once".to_string()),
        }
    }

    fn build(&self, n: u64, p: f64) -> Result<Box<dyn Subject<K>>, String> {
        let share = n.div_ceil(2).max(1);
        let filter = bloomkit::AgingBloomFilter::new(share, p).map_err(|e| e.to_string())?;
        Ok(Box::new(AgingSubject {
            filter,
            share,
            inserted: 0,
        }))
    }

    fn memory_for(&self, n: u64, p: f64) -> Result<u64, String> {
        Memory::Planned(FilterKind::Aging)
            .bytes(n.div_ceil(2).max(1), p)
            .map_err(|e| e.to_string())
    }
}

/// A kind without a typed contender here: built through [`AnyFilter`], planned for `n` keys
/// or, for a static kind, solved from the `n` keys' hashes; every call dispatched on the
/// kind.
pub struct AnyKind(pub FilterKind);

/// An [`AnyFilter`] under test; a static kind collects its hashes until `finish`.
pub struct AnySubject {
    kind: FilterKind,
    p: f64,
    filter: Option<AnyFilter>,
    hashes: Vec<u64>,
}

impl<K: Key + ?Sized> Subject<K> for AnySubject {
    fn insert(&mut self, key: &K) -> bool {
        let hash = bloomkit::hash(key);
        match &mut self.filter {
            Some(f) => f.insert_hash(hash).is_ok(),
            None => {
                self.hashes.push(hash);
                true
            }
        }
    }

    fn finish(&mut self) -> Result<(), String> {
        if self.filter.is_none() {
            let built = AnyFilter::build_from_hashes(self.kind, &self.hashes, self.p);
            self.filter = Some(built.map_err(|e| e.to_string())?);
            self.hashes = Vec::new();
        }
        Ok(())
    }

    fn contains(&self, key: &K) -> bool {
        self.filter.as_ref().is_some_and(|f| f.contains(key))
    }

    fn supports_hash(&self) -> bool {
        true
    }

    fn contains_hash(&self, hash: u64) -> bool {
        self.filter.as_ref().is_some_and(|f| f.contains_hash(hash))
    }

    fn memory_bytes(&self) -> usize {
        self.filter.as_ref().map_or(0, AnyFilter::memory_bytes)
    }
}

impl<K: Key + ?Sized> Contender<K> for AnyKind {
    fn info(&self) -> Info {
        Info {
            name: self.0.type_name().to_string(),
            crate_name: "bloomkit",
            family: family(self.0),
            hashing: Hashing::Bloomkit,
            note: Some("through AnyFilter, without a typed contender yet".to_string()),
        }
    }

    fn build(&self, n: u64, p: f64) -> Result<Box<dyn Subject<K>>, String> {
        let filter = if self.0.is_static() {
            None
        } else {
            Some(AnyFilter::new(self.0, n, p).map_err(|e| e.to_string())?)
        };
        Ok(Box::new(AnySubject {
            kind: self.0,
            p,
            filter,
            hashes: Vec::new(),
        }))
    }

    fn memory_for(&self, n: u64, p: f64) -> Result<u64, String> {
        Memory::Planned(self.0)
            .bytes(n, p)
            .map_err(|e| e.to_string())
    }
}

/// The family a kind's peers belong to.
fn family(kind: FilterKind) -> Family {
    match kind {
        FilterKind::Classic => Family::Classic,
        FilterKind::Counting => Family::Counting,
        FilterKind::Scalable => Family::Scalable,
        FilterKind::Cuckoo => Family::Cuckoo,
        FilterKind::Ribbon => Family::Ribbon,
        FilterKind::Fuse => Family::Fuse8,
        FilterKind::Aging => Family::Aging,
        // Blocked, sector, and a kind the harness does not know yet: compared with the
        // Bloom filters of one cache line.
        _ => Family::Blocked,
    }
}

/// Every bloomkit filter kind of the library's list ([`FilterKind::ALL`]), in its order,
/// each through its own type where it has a typed contender here (the blocked kind also as
/// an atomic filter and through its batched calls; the scalable one grown 100×; the fuse
/// one with 8- and 16-bit fingerprints), and through [`AnyKind`] otherwise.
///
/// # Examples
///
/// ```
/// use bloomkit_bench::ours;
/// let kinds = ours::contenders::<u64>();
/// assert!(kinds.iter().any(|c| c.info().name == "BlockedBloomFilter"));
/// ```
pub fn contenders<K: Key + ?Sized>() -> Vec<Box<dyn Contender<K>>> {
    let mut all: Vec<Box<dyn Contender<K>>> = Vec::new();
    for kind in FilterKind::ALL {
        let family = family(kind);
        match kind {
            FilterKind::Blocked => {
                all.push(Box::new(Ours::of_kind(
                    kind,
                    family,
                    BlockedBloomFilter::new,
                )));
                all.push(Box::new(Ours::new(
                    "AtomicBloomFilter",
                    Family::Atomic,
                    AtomicBloomFilter::new,
                    Memory::Formula(atomic_memory),
                )));
                all.push(Box::new(Ours::new(
                    "BlockedBloomFilter, batched",
                    family,
                    |n, p| BlockedBloomFilter::new(n, p).map(Batched),
                    Memory::Planned(kind),
                )));
            }
            FilterKind::Sector => all.push(Box::new(Ours::of_kind(
                kind,
                family,
                SectorBloomFilter::new,
            ))),
            FilterKind::Classic => {
                all.push(Box::new(Ours::of_kind(kind, family, BloomFilter::new)))
            }
            FilterKind::Counting => all.push(Box::new(Ours::of_kind(
                kind,
                family,
                CountingBloomFilter::new,
            ))),
            FilterKind::Scalable => all.push(Box::new(Ours::new(
                "ScalableBloomFilter, grown 100×",
                family,
                scalable_new,
                Memory::Formula(scalable_memory),
            ))),
            FilterKind::Cuckoo => {
                all.push(Box::new(Ours::of_kind(kind, family, CuckooFilter::new)))
            }
            FilterKind::Ribbon => all.push(Box::new(Ribbon)),
            FilterKind::Fuse => {
                all.push(Box::new(Fuse {
                    fingerprint_bits: 8,
                }));
                all.push(Box::new(Fuse {
                    fingerprint_bits: 16,
                }));
            }
            FilterKind::Aging => all.push(Box::new(Aging)),
            other => all.push(Box::new(AnyKind(other))),
        }
    }
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each size formula is what the filter holds once its keys are in (a scalable filter
    /// has grown, a static one is built): exactly, but for the scalable filter's list of
    /// layers, whose spare capacity the formula does not predict.
    #[test]
    fn memory_formulas_match_what_is_built() {
        for c in contenders::<u64>() {
            let name = c.info().name;
            for n in [1u64, 1000, 52_000, 1_000_000] {
                let mut filter = c.build(n, 0.01).unwrap();
                for key in 0..n {
                    filter.insert(&key);
                }
                filter.finish().unwrap();
                let built = filter.memory_bytes() as u64;
                let planned = c.memory_for(n, 0.01).unwrap();
                if name.starts_with("ScalableBloomFilter") {
                    let spare = built.abs_diff(planned);
                    assert!(spare <= 64 * 64, "{name} n={n}: {planned} vs {built}");
                } else {
                    assert_eq!(planned, built, "{name} n={n}");
                }
            }
        }
    }

    /// The library's list is the bench's: every kind has a contender named for its type.
    #[test]
    fn every_kind_of_the_library_is_measured() {
        let names: Vec<String> = contenders::<u64>().iter().map(|c| c.info().name).collect();
        for kind in FilterKind::ALL {
            assert!(
                names.iter().any(|n| n.starts_with(kind.type_name())),
                "{kind}: no contender in {names:?}"
            );
        }
    }

    /// The contender a kind gets before it has a typed one works for every kind: it holds
    /// its keys and is the size the library plans.
    #[test]
    fn any_kind_measures_every_kind() {
        for kind in FilterKind::ALL {
            let c: &dyn Contender<u64> = &AnyKind(kind);
            let n = 5_000;
            let mut filter = c.build(n, 0.01).unwrap();
            for key in 0..n {
                assert!(filter.insert(&key), "{kind}");
            }
            filter.finish().unwrap();
            assert!((0..n).all(|key| filter.contains(&key)), "{kind}");
            assert!(
                (0..n).all(|key| filter.contains_hash(bloomkit::hash(&key))),
                "{kind}"
            );
            assert_eq!(
                filter.memory_bytes() as u64,
                c.memory_for(n, 0.01).unwrap(),
                "{kind}"
            );
        }
    }
}
