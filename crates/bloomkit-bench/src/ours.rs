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
//! // through a contender whose `memory_for` is the ribbon's size formula.
//!
//! // AgingBloomFilter: like the counting filter.
//! ```
//!
//! [`bloomkit_subject!`]: crate::bloomkit_subject

use std::marker::PhantomData;

use bloomkit::{sizing, AtomicBloomFilter, BlockedBloomFilter, BloomFilter};

use crate::keys::Key;
use crate::subject::{Contender, Family, Hashing, Info, Subject};

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
// Through `&self`, the way many threads would share it; one thread here, so its times
// compare with the others'.
bloomkit_subject!(AtomicBloomFilter, |f, key| {
    AtomicBloomFilter::insert(f, key);
    true
});

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

/// Bytes of an atomic filter: its struct and its planned lines (the blocked plan).
fn atomic_memory(n: u64, p: f64) -> bloomkit::Result<u64> {
    Ok(std::mem::size_of::<AtomicBloomFilter>() as u64 + sizing::blocked_plan(n, p)?.num_bits / 8)
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
        // The kinds being written on other branches go here, one entry each (see the
        // module docs): CountingBloomFilter, ScalableBloomFilter, CuckooFilter,
        // RibbonFilter, AgingBloomFilter.
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_formulas_match_what_is_built() {
        for c in contenders::<u64>() {
            for n in [1, 1000, 52_000, 1_000_000] {
                let built = c.build(n, 0.01).unwrap().memory_bytes() as u64;
                assert_eq!(
                    c.memory_for(n, 0.01).unwrap(),
                    built,
                    "{} n={n}",
                    c.info().name
                );
            }
        }
    }
}
