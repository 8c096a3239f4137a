//! bloomkit's own filters as [`Contender`]s: what `compare` sets beside the peers, and what
//! a `bloomkit bench` subcommand measures on a user's machine.
//!
//! # Adding a kind
//!
//! A filter kind takes three steps, a few lines each:
//!
//! 1. a [`Subject`] impl, through [`bloomkit_subject!`] for the usual shape (`insert`,
//!    `contains`, `contains_hash`, `memory_bytes`);
//! 2. a constructor and a memory formula, given to [`Ours::new`];
//! 3. a line in [`contenders`].
//!
//! The kinds being written on other branches slot in like this:
//!
//! ```text
//! // CountingBloomFilter::new(cap, p), insert(&T), contains(&T): same shape as classic.
//! bloomkit_subject!(bloomkit::CountingBloomFilter, |f, key| {
//!     bloomkit::CountingBloomFilter::insert(f, key);
//!     true
//! });
//! Ours::new("CountingBloomFilter", Family::Counting, bloomkit::CountingBloomFilter::new, None),
//!
//! // ScalableBloomFilter::new(cap, p), insert(&T) -> Result<bool, Error>. It allocates as it
//! // grows, so its memory formula is its first layer's size, or `None` to build and ask.
//! bloomkit_subject!(bloomkit::ScalableBloomFilter, |f, key| {
//!     bloomkit::ScalableBloomFilter::insert(f, key).is_ok()
//! });
//!
//! // CuckooFilter::new(cap, p), insert(&T) -> Result<(), Error>: a refused key is counted.
//! bloomkit_subject!(bloomkit::CuckooFilter, |f, key| {
//!     bloomkit::CuckooFilter::insert(f, key).is_ok()
//! });
//!
//! // RibbonFilter::build(items, p) is static: implement `StaticFilter` for it (build from
//! // the collected `bloomkit::hash`es) and list `Static::<K, BloomkitHash, RibbonFilter>`
//! // through a contender whose `memory_for` is the ribbon's size formula. (BinaryFuseFilter
//! // is listed the same way, once per fingerprint width.)
//!
//! // AgingBloomFilter: like the counting filter.
//! ```
//!
//! [`bloomkit_subject!`]: crate::bloomkit_subject

use std::marker::PhantomData;

use bloomkit::{
    sizing, AtomicBloomFilter, BinaryFuseFilter, BlockedBloomFilter, BloomFilter,
    CountingBloomFilter, CuckooFilter, RibbonFilter, ScalableBloomFilter, SectorBloomFilter,
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
/// during the insert phase, the case the issue compares.
pub const SCALABLE_GROWTH: u64 = 100;

/// A scalable filter planned for a hundredth of its keys (it grows 100× while they go in).
fn scalable_new(n: u64, p: f64) -> bloomkit::Result<ScalableBloomFilter> {
    ScalableBloomFilter::new((n / SCALABLE_GROWTH).max(1), p)
}

/// Bytes of a scalable filter after `n` keys, planned for n/100: RedisBloom's layers
/// (capacity ×2, rate ×0.5 from p/2), each a blocked filter, until they hold n.
fn scalable_memory(n: u64, p: f64) -> bloomkit::Result<u64> {
    let first = (n / SCALABLE_GROWTH).max(1);
    let mut bytes = std::mem::size_of::<ScalableBloomFilter>() as u64;
    // Each layer's entry in the chain: either layout's filter, its capacity and its rate.
    let entry = std::mem::size_of::<BlockedBloomFilter>()
        .max(std::mem::size_of::<bloomkit::BloomFilter>())
        + 16;
    let (mut held, mut capacity, mut rate) = (0u64, first, p * 0.5);
    while held < n.max(1) {
        bytes += sizing::blocked_plan(capacity, rate)?.num_bits / 8 + entry as u64;
        held += capacity;
        capacity *= 2;
        rate *= 0.5;
    }
    Ok(bytes)
}

/// The constructor of a bloomkit filter: `new(items, fp_rate)`.
pub type NewFn<F> = fn(u64, f64) -> bloomkit::Result<F>;

/// A memory formula: the bytes a filter for `items` at `fp_rate` takes, without building it.
pub type MemoryFn = fn(u64, f64) -> bloomkit::Result<u64>;

/// A bloomkit filter kind as a [`Contender`].
pub struct Ours<F> {
    name: &'static str,
    family: Family,
    new: NewFn<F>,
    memory: Option<MemoryFn>,
    _filter: PhantomData<fn() -> F>,
}

impl<F> Ours<F> {
    /// A contender named `name` (the type's name), built by `new`. `memory` is a formula for
    /// its size; `None` builds an empty filter and asks it (fine for filters that allocate
    /// everything up front and are cheap to build empty).
    pub fn new(
        name: &'static str,
        family: Family,
        new: NewFn<F>,
        memory: Option<MemoryFn>,
    ) -> Self {
        Ours {
            name,
            family,
            new,
            memory,
            _filter: PhantomData,
        }
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
        match self.memory {
            Some(memory) => memory(n, p).map_err(|e| e.to_string()),
            None => Ok(<Self as Contender<K>>::build(self, n, p)?.memory_bytes() as u64),
        }
    }
}

/// Bytes of a classic filter: its struct and its planned bits.
fn classic_memory(n: u64, p: f64) -> bloomkit::Result<u64> {
    Ok(std::mem::size_of::<BloomFilter>() as u64 + sizing::classic_plan(n, p)?.num_bits / 8)
}

/// Bytes of a blocked filter: its struct and its planned lines.
fn blocked_memory(n: u64, p: f64) -> bloomkit::Result<u64> {
    Ok(std::mem::size_of::<BlockedBloomFilter>() as u64 + sizing::blocked_plan(n, p)?.num_bits / 8)
}

/// Bytes of a sector filter: its struct and its planned lines.
fn sector_memory(n: u64, p: f64) -> bloomkit::Result<u64> {
    Ok(std::mem::size_of::<SectorBloomFilter>() as u64 + sizing::sector_plan(n, p)?.num_bits / 8)
}

/// Bytes of an atomic filter: its struct and its planned lines (the blocked plan).
fn atomic_memory(n: u64, p: f64) -> bloomkit::Result<u64> {
    Ok(std::mem::size_of::<AtomicBloomFilter>() as u64 + sizing::blocked_plan(n, p)?.num_bits / 8)
}

/// Bytes of a counting filter: its struct and 4 bits per counter (the classic plan's bits).
fn counting_memory(n: u64, p: f64) -> bloomkit::Result<u64> {
    Ok(
        std::mem::size_of::<CountingBloomFilter>() as u64
            + sizing::classic_plan(n, p)?.num_bits / 2,
    )
}

/// Bytes of a cuckoo filter before it grows, as its options plan it.
fn cuckoo_memory(n: u64, p: f64) -> bloomkit::Result<u64> {
    let options = bloomkit::CuckooFilter::builder(n, p);
    Ok(options.planned_memory_bytes()? as u64)
}

/// Every bloomkit filter kind this tree has, in report order.
///
/// # Examples
///
/// ```
/// use bloomkit_bench::ours;
/// let kinds = ours::contenders::<u64>();
/// assert!(kinds.iter().any(|c| c.info().name == "BlockedBloomFilter"));
/// ```
pub fn contenders<K: Key + ?Sized>() -> Vec<Box<dyn Contender<K>>> {
    vec![
        Box::new(Ours::new(
            "BlockedBloomFilter",
            Family::Blocked,
            BlockedBloomFilter::new,
            Some(blocked_memory),
        )),
        Box::new(Ours::new(
            "SectorBloomFilter",
            Family::Blocked,
            SectorBloomFilter::new,
            Some(sector_memory),
        )),
        Box::new(Ours::new(
            "BloomFilter",
            Family::Classic,
            BloomFilter::new,
            Some(classic_memory),
        )),
        Box::new(Ours::new(
            "AtomicBloomFilter",
            Family::Atomic,
            AtomicBloomFilter::new,
            Some(atomic_memory),
        )),
        Box::new(Ours::new(
            "BlockedBloomFilter, batched",
            Family::Blocked,
            |n, p| BlockedBloomFilter::new(n, p).map(Batched),
            Some(blocked_memory),
        )),
        Box::new(Ours::new(
            "CountingBloomFilter",
            Family::Counting,
            CountingBloomFilter::new,
            Some(counting_memory),
        )),
        Box::new(Ours::new(
            "ScalableBloomFilter, grown 100×",
            Family::Scalable,
            scalable_new,
            Some(scalable_memory),
        )),
        Box::new(Ours::new(
            "CuckooFilter",
            Family::Cuckoo,
            CuckooFilter::new,
            Some(cuckoo_memory),
        )),
        Box::new(Ribbon),
        Box::new(Fuse {
            fingerprint_bits: 8,
        }),
        Box::new(Fuse {
            fingerprint_bits: 16,
        }),
    ]
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
}
