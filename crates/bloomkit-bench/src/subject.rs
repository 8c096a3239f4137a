//! What the harness measures: a [`Contender`] (a filter kind, configured) builds a [`Subject`]
//! (one filter of it, for `n` keys at rate `p`).
//!
//! A dynamic filter takes keys one by one through [`Subject::insert`]. A static one (xor,
//! binary fuse, ribbon) is built from all keys at once: its `insert` only collects the key's
//! hash and [`Subject::finish`] builds; the harness times both together, so "ns per insert"
//! reads as "ns per key built" for it.
//!
//! The timed loops are [`Subject`]'s provided methods (`insert_pool`, `count_pool`,
//! `count_hashes`): they are compiled once per filter type, so the one dynamic call is per
//! batch of keys, never per key.

use std::hint::black_box;
use std::marker::PhantomData;

use crate::keys::{Key, KeyPool};

/// One filter under test, built for its keys.
pub trait Subject<K: Key + ?Sized> {
    /// Adds `key`; `false` if the filter refused it (a full cuckoo or quotient filter).
    fn insert(&mut self, key: &K) -> bool;

    /// Completes the filter after the last insert. Static filters build here; the harness
    /// times this together with the inserts.
    ///
    /// # Errors
    ///
    /// A message if the build failed (a static filter that found no solution).
    fn finish(&mut self) -> Result<(), String> {
        Ok(())
    }

    /// `false` if `key` is definitely absent.
    fn contains(&self, key: &K) -> bool;

    /// Whether [`contains_hash`](Self::contains_hash) is supported: the filter accepts a
    /// precomputed [`bloomkit::hash`], so a query can be timed without hashing.
    fn supports_hash(&self) -> bool {
        false
    }

    /// Queries by a precomputed [`bloomkit::hash`] of the key. Only called when
    /// [`supports_hash`](Self::supports_hash) is `true`.
    fn contains_hash(&self, _hash: u64) -> bool {
        unimplemented!("contains_hash is not supported by this subject")
    }

    /// Bytes the filter holds (its bits or fingerprints and its header).
    fn memory_bytes(&self) -> usize;

    /// Inserts every key of `pool`; returns how many were refused.
    fn insert_pool(&mut self, pool: &K::Pool) -> u64 {
        let mut refused = 0u64;
        pool.for_each(|key| {
            // black_box on the key keeps the hashing inside the loop.
            refused += u64::from(!self.insert(black_box(key)));
        });
        refused
    }

    /// Queries every key of `pool`; returns how many were answered "maybe".
    fn count_pool(&self, pool: &K::Pool) -> u64 {
        let mut found = 0u64;
        pool.for_each(|key| found += u64::from(self.contains(black_box(key))));
        found
    }

    /// Queries every hash of `hashes` ([`contains_hash`](Self::contains_hash)); returns how
    /// many were answered "maybe".
    fn count_hashes(&self, hashes: &[u64]) -> u64 {
        let mut found = 0u64;
        for &h in hashes {
            found += u64::from(self.contains_hash(black_box(h)));
        }
        found
    }
}

/// What kind of filter a contender is: which bloomkit kind its figures are compared with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Family {
    /// Probes anywhere in one bit array.
    Classic,
    /// All probes in one 64-byte line.
    Blocked,
    /// Probes in one 32-byte block, one bit per 32-bit word (Parquet's split-block filter).
    SplitBlock,
    /// A Bloom filter that many threads insert into through `&self`.
    Atomic,
    /// Counters instead of bits, so keys can be removed.
    Counting,
    /// A chain of filters that grows with its keys.
    Scalable,
    /// Cuckoo filter: fingerprints in buckets.
    Cuckoo,
    /// Quotient filter: fingerprints in a compact hash table.
    Quotient,
    /// Static, built from all keys: xor filters.
    Xor,
    /// Static, built from all keys: binary fuse filters with 8-bit fingerprints.
    Fuse8,
    /// Static, built from all keys: binary fuse filters with 16-bit fingerprints.
    Fuse16,
    /// Static, built from all keys: ribbon filters.
    Ribbon,
    /// A filter that forgets old keys.
    Aging,
}

impl Family {
    /// The bloomkit kinds a peer of this family is compared with, best match first; the
    /// first one that exists in the run is used. The blocked filter, bloomkit's default, is
    /// the last resort.
    pub fn counterparts(self) -> &'static [Family] {
        use Family::*;
        match self {
            Classic | Blocked | SplitBlock => &[Blocked],
            Atomic => &[Atomic],
            Counting => &[Counting, Blocked],
            Scalable => &[Scalable, Blocked],
            Cuckoo => &[Cuckoo, Blocked],
            Quotient => &[Cuckoo, Counting, Blocked],
            Xor | Ribbon => &[Ribbon, Blocked],
            Fuse8 => &[Fuse8, Ribbon, Blocked],
            Fuse16 => &[Fuse16, Ribbon, Blocked],
            Aging => &[Aging, Blocked],
        }
    }
}

/// Which hash function a contender uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Hashing {
    /// The crate's own default (what its users get), named, for example `"SipHash-1-3"`.
    Own(&'static str),
    /// [`bloomkit::hash`], given to the crate as a precomputed hash: what the data structure
    /// itself costs, beside bloomkit's on equal terms.
    Bloomkit,
}

impl Hashing {
    /// How the report names it.
    pub fn label(&self) -> String {
        match self {
            Hashing::Own(name) => format!("own: {name}"),
            Hashing::Bloomkit => "bloomkit::hash".to_string(),
        }
    }
}

/// A contender's description.
#[derive(Clone, Debug)]
pub struct Info {
    /// Row name, unique in a run, for example `"fastbloom BloomFilter"`.
    pub name: String,
    /// The crate and version, for example `"fastbloom 0.17"`, or `"bloomkit"`.
    pub crate_name: &'static str,
    /// The kind of filter.
    pub family: Family,
    /// The hash it uses.
    pub hashing: Hashing,
    /// What the report should know about how it was configured (its knob for 1%, a cap).
    pub note: Option<String>,
}

impl Info {
    /// `true` for bloomkit's own filters.
    pub fn is_bloomkit(&self) -> bool {
        self.crate_name == "bloomkit"
    }
}

/// How big a filter the regime wants.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// The most keys whose filter takes at most this many bytes (the in-cache regime).
    AtMost(u64),
    /// A filter of at least this many bytes, filled to its size class (the out-of-cache
    /// regime): for a filter whose size moves in steps (a power of two of slots), the keys
    /// that fill the first step at or above the target.
    AtLeast(u64),
}

/// A filter kind, configured: makes [`Subject`]s and knows their size.
pub trait Contender<K: Key + ?Sized> {
    /// Its name, crate, family and hashing.
    fn info(&self) -> Info;

    /// A new, empty filter planned for `n` keys at false-positive rate `p`.
    ///
    /// # Errors
    ///
    /// The filter's own error, as text.
    fn build(&self, n: u64, p: f64) -> Result<Box<dyn Subject<K>>, String>;

    /// Bytes a filter for `n` keys at `p` takes once its keys are in, without building it.
    /// Used to choose `n` for a regime, so it must be cheap and monotone in `n`.
    ///
    /// The default builds an empty filter and asks it, which suits dynamic filters that
    /// allocate everything up front; static filters and filters that allocate on insert
    /// override it.
    ///
    /// # Errors
    ///
    /// The filter's own error, as text.
    fn memory_for(&self, n: u64, p: f64) -> Result<u64, String> {
        Ok(self.build(n, p)?.memory_bytes() as u64)
    }

    /// Peak bytes building a filter for `n` keys takes (static filters need scratch space
    /// several times their size): the harness skips a contender whose build would not fit
    /// in the machine's memory, and says so.
    fn build_peak_bytes(&self, n: u64, p: f64) -> u64 {
        self.memory_for(n, p).unwrap_or(u64::MAX)
    }

    /// The number of keys to build this filter for so that it meets `target` at rate `p`.
    ///
    /// The default searches [`memory_for`](Self::memory_for); a filter whose size moves in
    /// powers of two lands on a full step, not on an empty one.
    ///
    /// # Errors
    ///
    /// From [`memory_for`](Self::memory_for), or no size meets the target.
    fn keys_for(&self, target: Target, p: f64) -> Result<u64, String> {
        let memory = |n| self.memory_for(n, p);
        match target {
            Target::AtMost(bytes) => largest_n_within(&memory, bytes),
            Target::AtLeast(bytes) => {
                let first = smallest_n_reaching(&memory, bytes)?;
                largest_n_within(&memory, memory(first)?)
            }
        }
    }
}

/// A hash function from keys to `u64`, as a type, so that a timed loop inlines it.
pub trait KeyHash<K: ?Sized> {
    /// `true` if this is [`bloomkit::hash`]: a filter built with it accepts
    /// [`Subject::contains_hash`].
    const IS_BLOOMKIT: bool;

    /// The key's hash.
    fn hash(key: &K) -> u64;
}

/// [`bloomkit::hash`] as a [`KeyHash`].
#[derive(Debug)]
pub struct BloomkitHash;

impl<K: bloomkit::Key + ?Sized> KeyHash<K> for BloomkitHash {
    const IS_BLOOMKIT: bool = true;

    #[inline]
    fn hash(key: &K) -> u64 {
        bloomkit::hash(key)
    }
}

/// A static filter: built once from the hashes of all its keys.
pub trait StaticFilter: Sized {
    /// Builds the filter from distinct key hashes, for rate `p` where it has a knob.
    ///
    /// # Errors
    ///
    /// The builder's own error, as text.
    fn build(hashes: &[u64], p: f64) -> Result<Self, String>;

    /// `false` if the key with this hash is definitely absent.
    fn contains_hash(&self, hash: u64) -> bool;

    /// Bytes the built filter holds.
    fn memory_bytes(&self) -> usize;
}

/// Marks the key type and hash of a [`Static`] without holding either.
type KeyAndHash<K, H> = PhantomData<(fn(&K), H)>;

/// A [`Subject`] over a [`StaticFilter`]: `insert` hashes the key (with `H`) into a list,
/// `finish` builds from the list and frees it.
pub struct Static<K: ?Sized, H, F> {
    hashes: Vec<u64>,
    fp_rate: f64,
    filter: Option<F>,
    _key: KeyAndHash<K, H>,
}

impl<K: ?Sized, H, F> Static<K, H, F> {
    /// An empty collector for `n` keys at rate `p`; room for the hashes is reserved now, so
    /// collecting never reallocates inside the timed loop.
    ///
    /// # Errors
    ///
    /// There is no room for `n` hashes.
    pub fn new(n: u64, p: f64) -> Result<Self, String> {
        let mut hashes = Vec::new();
        let n = usize::try_from(n).map_err(|e| e.to_string())?;
        hashes
            .try_reserve_exact(n)
            .map_err(|e| format!("room for {n} hashes: {e}"))?;
        Ok(Static {
            hashes,
            fp_rate: p,
            filter: None,
            _key: PhantomData,
        })
    }

    fn built(&self) -> &F {
        self.filter
            .as_ref()
            .expect("a static filter is queried only after finish")
    }
}

impl<K, H, F> Subject<K> for Static<K, H, F>
where
    K: Key + ?Sized,
    H: KeyHash<K>,
    F: StaticFilter,
{
    #[inline]
    fn insert(&mut self, key: &K) -> bool {
        self.hashes.push(H::hash(key));
        true
    }

    fn finish(&mut self) -> Result<(), String> {
        self.filter = Some(F::build(&self.hashes, self.fp_rate)?);
        self.hashes = Vec::new();
        Ok(())
    }

    #[inline]
    fn contains(&self, key: &K) -> bool {
        self.built().contains_hash(H::hash(key))
    }

    fn supports_hash(&self) -> bool {
        H::IS_BLOOMKIT
    }

    #[inline]
    fn contains_hash(&self, hash: u64) -> bool {
        self.built().contains_hash(hash)
    }

    fn memory_bytes(&self) -> usize {
        self.filter.as_ref().map_or(0, F::memory_bytes)
    }
}

/// The upper end of the search for `n`: 2^40 keys, far past any machine here.
const MAX_KEYS: u64 = 1 << 40;

/// The largest `n` whose memory is at most `bytes` (binary search; `memory` is monotone).
fn largest_n_within(
    memory: &dyn Fn(u64) -> Result<u64, String>,
    bytes: u64,
) -> Result<u64, String> {
    if memory(1)? > bytes {
        return Err(format!("even one key takes more than {bytes} bytes"));
    }
    let (mut lo, mut hi) = (1u64, MAX_KEYS);
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if memory(mid)? <= bytes {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    Ok(lo)
}

/// The smallest `n` whose memory is at least `bytes`.
fn smallest_n_reaching(
    memory: &dyn Fn(u64) -> Result<u64, String>,
    bytes: u64,
) -> Result<u64, String> {
    let (mut lo, mut hi) = (1u64, MAX_KEYS);
    if memory(hi)? < bytes {
        return Err(format!(
            "no size up to {MAX_KEYS} keys reaches {bytes} bytes"
        ));
    }
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if memory(mid)? >= bytes {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    Ok(lo)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn linear(n: u64) -> Result<u64, String> {
        Ok(100 + n.div_ceil(8) * 10 / 8)
    }

    fn stepped(n: u64) -> Result<u64, String> {
        // Slots: a power of two, at most 95% full.
        let mut slots = n.next_power_of_two().max(64);
        while slots * 19 / 20 < n {
            slots *= 2;
        }
        Ok(slots)
    }

    #[test]
    fn at_most_lands_just_under() {
        let n = largest_n_within(&linear, 65_536).unwrap();
        assert!(linear(n).unwrap() <= 65_536 && linear(n + 8).unwrap() > 65_536);
    }

    #[test]
    fn at_least_fills_the_step() {
        let first = smallest_n_reaching(&stepped, 1 << 20).unwrap();
        let n = largest_n_within(&stepped, stepped(first).unwrap()).unwrap();
        assert_eq!(stepped(n).unwrap(), 1 << 20);
        assert_eq!(n, (1 << 20) * 19 / 20);
    }
}
