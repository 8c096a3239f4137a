//! [`CuckooFilter`]: fingerprints in buckets (Fan et al. 2014), with removal, counts and
//! growth into a chain of sub-filters, as RedisBloom's `CF.*` commands need. The design, the
//! two sets of defaults and the stored form are documented on the type.
//!
//! * `table.rs`: one sub-filter's packed slots, the bucket arithmetic, the kick chain.
//! * `builder.rs`: [`CuckooBuilder`], the library's defaults and RedisBloom's.
//! * `persist.rs`: the file format (kind 5).

mod batch;
mod builder;
mod persist;
mod table;

use std::collections::BTreeSet;
use std::fmt;

use crate::error::{Error, Result};
use crate::format::FilterKind;
use crate::key::{Key, KeyHasher};
use crate::Filter;

pub use self::builder::{CuckooBuilder, CuckooPlacement};
use self::table::{KeyParts, Layout, SubFilter};

/// Everything that fixes a filter's shape, checked by the caller.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Shape {
    pub(crate) capacity: u64,
    pub(crate) base_buckets: u64,
    pub(crate) bucket_size: u32,
    pub(crate) fp_bits: u32,
    pub(crate) max_kicks: u32,
    pub(crate) expansion: u32,
    pub(crate) max_filters: u32,
    pub(crate) hasher: KeyHasher,
    pub(crate) placement: CuckooPlacement,
}

impl Shape {
    /// Buckets of sub-filter `k`: `base_buckets · expansion^k`, or `None` past `u64`.
    pub(crate) fn buckets_of(&self, k: u32) -> Option<u64> {
        if k == 0 {
            return Some(self.base_buckets);
        }
        (self.expansion as u64)
            .checked_pow(k)
            .and_then(|g| g.checked_mul(self.base_buckets))
    }
}

/// A cuckoo filter: approximate membership with removal, duplicate counts and optional
/// growth, compatible in behaviour with RedisBloom's `CF.*` commands.
///
/// A Bloom filter cannot forget a key; a cuckoo filter stores a short fingerprint of each key
/// in one of two candidate buckets and can remove it again. Below a rate of about 0.25% it is
/// also smaller than a classic Bloom filter, and a query reads two buckets per sub-filter:
/// two cache misses at most. Measured at capacity (`tests/it/cuckoo.rs`): planned for 1%, 10.66
/// bits per key and a 0.73% rate (a Bloom filter needs 9.59 bits for 1%); planned for 0.1%,
/// 13.86 bits per key and 0.091% (Bloom: 14.38).
///
/// # How it is built, and why
///
/// * **Partial-key cuckoo hashing.** A key's fingerprint `fp` and its first bucket `i1` come
///   from its one 64-bit hash; its second bucket is `alt(i1) = (H(fp) − i1) mod M`. `alt` is
///   an involution for any bucket count `M`, so a fingerprint can be moved between its two
///   buckets without the key, and `M` need not be a power of two (which would waste up to
///   half the table). `H(fp)` is odd ([`CuckooPlacement::Distinct`]), so in a table of an
///   even number of buckets the two are never the same bucket. See `table.rs`.
/// * **Fingerprints** of f = ⌈log2(2·b/p)⌉ bits (4 to 32): a query compares 2·b slots, each
///   matching by chance with probability 1/(2^f − 1), so the rate at load α is
///   ≈ 2·b·α/(2^f − 1) ≤ p. Zero marks an empty slot; fingerprints take values 1 to 2^f − 1.
/// * **Slots packed in 64-bit words**, f bits each, so no bit is wasted and the payload is the
///   words; a bucket of up to 64 bits is searched with one load and a SWAR compare.
/// * **Inserts never lose a key.** When both buckets are full, an insert moves ("kicks")
///   fingerprints to their other buckets, at most `max_kicks` times. If that fails the chain
///   is undone step by step, so every key inserted before is still found, and the filter
///   either grows or returns [`Error::Full`] unchanged. The kick choices come from the key
///   hash and the step number, never a random generator: the same inserts build the same
///   bytes.
/// * **Duplicates are allowed** ([`insert`](CuckooFilter::insert), like `CF.ADD`); each copy
///   takes a slot, [`count`](CuckooFilter::count) tells how many match and
///   [`remove`](CuckooFilter::remove) takes one away. [`insert_unique`](CuckooFilter::insert_unique)
///   is `CF.ADDNX`.
/// * **Growth, RedisBloom's way.** With `expansion > 0`, an insert that finds no room adds a
///   sub-filter with `expansion^k` times the first one's buckets, up to `max_filters` (32).
///   Inserts try every sub-filter's buckets, newest first, before kicking in the newest
///   (skipping sub-filters known to have no room for the key, so that copies of one key,
///   which fill a sub-filter each few copies, still insert in constant time);
///   removals take the newest copy; and when deletions pass 10% of the items, fingerprints
///   are moved back into older sub-filters and emptied newest ones are freed, as RedisBloom's
///   compaction does. Bucket counts grow by whole factors, so a fingerprint's buckets in an
///   older sub-filter follow from its bucket in a newer one.
///
/// # The library's defaults and RedisBloom's
///
/// [`CuckooFilter::new`] uses 4-slot buckets sized for ≈94% load, fingerprints for the
/// requested rate, 500 kicks and no growth. A RedisBloom-compatible server builds filters
/// with [`CuckooFilter::redisbloom_builder`]: 2-slot buckets, a power-of-two bucket count, 8-bit
/// fingerprints, 20 kicks, expansion 1, at most 32 sub-filters. `CF.INFO`'s fields are
/// [`memory_bytes`](CuckooFilter::memory_bytes) (or RedisBloom's own formula, see
/// [`num_slots`](CuckooFilter::num_slots)), [`num_buckets`](CuckooFilter::num_buckets),
/// [`num_filters`](CuckooFilter::num_filters), [`len`](CuckooFilter::len),
/// [`num_deletes`](CuckooFilter::num_deletes), [`bucket_size`](CuckooFilter::bucket_size),
/// [`expansion`](CuckooFilter::expansion) and [`max_kicks`](CuckooFilter::max_kicks).
///
/// # Stored form (kind 5)
///
/// Parameters (`P` = 48, or 52), little-endian: capacity u64, first sub-filter's buckets u64,
/// bucket size u32, fingerprint bits u32, max kicks u32, expansion u32, max sub-filters u32,
/// sub-filters `n` u32, deletes since the last compaction u64, then, for the distinct
/// placement only, flags u32 = 1 (a file without them holds a [`CuckooPlacement::Original`]
/// filter). The header's item count is
/// [`len`](CuckooFilter::len), which must equal the occupied slots. Payload: `n` descriptor
/// words (sub-filter `k`'s bucket count, which must be `buckets · expansion^k`), then each
/// sub-filter's ⌈buckets·b·f/64⌉ slot words in order; bits past the last slot are zero.
/// Slot `s` of bucket `i` is the f bits at bit `(i·b + s)·f` of its sub-filter's words (least
/// significant first); 0 is an empty slot.
///
/// From the key hash `h`: the fingerprint is `1 + (((h >> 32) · (2^f − 1)) >> 32)`; the
/// bucket hash `x` is `h` through the murmur3 64-bit finalizer (`x ^= x >> 33;
/// x *= 0xff51afd7ed558ccd; x ^= x >> 33; x *= 0xc4ceb9fe1a85ec53; x ^= x >> 33`); in a
/// sub-filter of `M` buckets the key's buckets are `i1 = x mod M` and
/// `(H(fp) mod M − i1) mod M`, where `H(fp) = (m ^ (m >> 29)) | 1` with
/// `m = fp · 0x9e3779b97f4a7c15` (all wrapping, 64-bit; without the `| 1` in the original
/// placement).
///
/// # Examples
///
/// ```
/// use bloomkit::CuckooFilter;
///
/// let mut f = CuckooFilter::new(1_000_000, 0.01)?;
/// assert_eq!((f.bucket_size(), f.fingerprint_bits()), (4, 10));
/// // ≈10.6 bits per key at 1% (Fan et al.: (log2(1/ε) + 3)/α).
/// let bits_per_key = f.num_slots() as f64 * 10.0 / 1e6;
/// assert!(bits_per_key < 10.7, "{bits_per_key}");
///
/// f.insert("apple")?;
/// f.insert("apple")?; // duplicates are allowed, like CF.ADD
/// assert_eq!(f.count("apple"), 2);
/// assert!(!f.insert_unique("apple")?); // like CF.ADDNX
/// assert!(f.remove("apple"));
/// assert!(f.contains("apple"));
/// assert!(f.remove("apple"));
/// assert!(!f.contains("apple"));
/// assert_eq!(f.len(), 0);
/// # Ok::<(), bloomkit::Error>(())
/// ```
#[derive(Clone)]
pub struct CuckooFilter {
    filters: Vec<SubFilter>,
    layout: Layout,
    shape: Shape,
    len: u64,
    num_deletes: u64,
    /// Which sub-filters an insert need not look at; derived from the slots, so neither
    /// stored nor compared.
    skip: Skip,
}

/// What lets an insert skip sub-filters that cannot take its key, so that growth stays
/// linear however many sub-filters there are.
///
/// An insert looks for an empty slot in every sub-filter, newest first. When copies of one
/// key are inserted (duplicates are allowed), each new sub-filter takes only the few that
/// fit in the key's two buckets, and then the next copy would look through every older
/// sub-filter in vain before the filter grows again: N copies, N²/(4·b) bucket probes (20,000
/// copies into RedisBloom's `CF.RESERVE cf 2 BUCKETSIZE 1`: 10,000 sub-filters, 10⁸
/// probes). Both facts below only stop being true when a slot is freed (a removal, a
/// compaction); inserts and kick chains only ever fill slots. So skipping by them never
/// changes where a key goes, only how fast it is found.
#[derive(Clone, Copy, Debug, Default)]
struct Skip {
    /// Sub-filters `0..full_below` have no empty slot at all.
    full_below: usize,
    /// Keys that found no empty slot in their buckets of sub-filters `0..below`; the
    /// most recent first. Two, so that copies of two keys inserted in turn stay linear too.
    no_room: [NoRoom; 2],
}

/// A key that found no room in sub-filters `0..below` (`below` 0: no key).
#[derive(Clone, Copy, Debug, Default)]
struct NoRoom {
    fp: u32,
    x: u64,
    below: usize,
}

impl Skip {
    /// The skips for `filters` as they are, remembering no key.
    fn of(filters: &[SubFilter], layout: &Layout) -> Skip {
        let mut skip = Skip::default();
        skip.advance(filters, layout);
        skip
    }

    fn advance(&mut self, filters: &[SubFilter], layout: &Layout) {
        while filters
            .get(self.full_below)
            .is_some_and(|sub| sub.is_full(layout))
        {
            self.full_below += 1;
        }
    }

    /// The first sub-filter that may have room for `key`.
    #[inline]
    fn first_for(&self, key: &KeyParts) -> usize {
        // Both entries tested without a loop: an insert's most frequent question.
        let [a, b] = &self.no_room;
        let known = |n: &NoRoom| n.fp == key.fp && n.x == key.x;
        let below = if known(a) {
            a.below
        } else if known(b) {
            b.below
        } else {
            0
        };
        below.max(self.full_below)
    }

    /// `key` found no room in sub-filters `0..below`.
    fn no_room(&mut self, key: &KeyParts, below: usize) {
        let entry = NoRoom {
            fp: key.fp,
            x: key.x,
            below,
        };
        if let Some(same) = self
            .no_room
            .iter_mut()
            .find(|n| n.below > 0 && n.fp == key.fp && n.x == key.x)
        {
            *same = entry;
        } else {
            self.no_room = [entry, self.no_room[0]];
        }
    }

    /// A fingerprint was stored in sub-filter `j`.
    fn filled(&mut self, filters: &[SubFilter], layout: &Layout, j: usize) {
        if j == self.full_below {
            self.advance(filters, layout);
        }
    }

    /// A slot of sub-filter `j` was emptied: it may take any key again.
    fn freed(&mut self, j: usize) {
        self.full_below = self.full_below.min(j);
        self.no_room = Default::default();
    }
}

/// Stores the fingerprint of the key of `hash` in a free slot of any sub-filter, newest first
/// (where room is likeliest), skipping those `skip` knows have none for it: the key's parts,
/// and the sub-filter that took it. `layout` is the filter's own, or the same shape as a
/// constant ([`Layout::REDISBLOOM`]), for which this is compiled apart.
#[inline(always)]
fn put_anywhere(
    filters: &mut [SubFilter],
    skip: &Skip,
    layout: &Layout,
    hash: u64,
) -> (KeyParts, Option<usize>) {
    let key = KeyParts::new(hash, layout);
    // Loops, not iterator adapters: an adapter left as a call would take `layout` as a
    // pointer again, and with it the constants.
    let mut j = filters.len();
    let first = skip.first_for(&key);
    while j > first {
        j -= 1;
        if filters[j].try_put(layout, &key) {
            return (key, Some(j));
        }
    }
    (key, None)
}

/// Whether any sub-filter holds the fingerprint of the key of `hash` (`layout` as in
/// [`put_anywhere`]).
#[inline(always)]
fn contains_anywhere(filters: &[SubFilter], layout: &Layout, hash: u64) -> bool {
    let key = KeyParts::new(hash, layout);
    for sub in filters {
        if sub.contains(layout, &key) {
            return true;
        }
    }
    false
}

impl CuckooFilter {
    /// A filter for `capacity` keys (0 is treated as 1) at a false-positive rate of about
    /// `fp_rate` when full, with the library's defaults ([`CuckooFilter::builder`]): 4-slot
    /// buckets sized for ≈94% load, f = ⌈log2(8/p)⌉-bit fingerprints, 500 kicks, no growth.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidFpRate`] unless `0 < fp_rate < 1`; [`Error::InvalidParameter`] if the
    /// rate needs fingerprints over 32 bits (below ≈1.9e-9); [`Error::TooLarge`] or
    /// [`Error::OutOfMemory`] if the table does not fit.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut f = bloomkit::CuckooFilter::new(10_000, 0.001)?;
    /// assert_eq!(f.fingerprint_bits(), 13);
    /// for i in 0..10_000u32 { f.insert(&i)?; }
    /// let fp = (10_000..1_010_000u32).filter(|i| f.contains(i)).count() as f64 / 1e6;
    /// assert!(fp <= 0.001, "{fp}");
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn new(capacity: u64, fp_rate: f64) -> Result<Self> {
        Self::builder(capacity, fp_rate).build()
    }

    /// Starts from [`new`](Self::new)'s defaults for `capacity` keys at `fp_rate`, to change
    /// any of them before [`build`](CuckooBuilder::build): fingerprint bits, bucket size,
    /// kicks, expansion, sub-filters, seed.
    ///
    /// # Examples
    ///
    /// ```
    /// use bloomkit::CuckooFilter;
    ///
    /// let f = CuckooFilter::builder(1000, 0.01).seed(7).build()?;
    /// assert!(f.seed() == 7 && f.fingerprint_bits() == 10);
    /// let f = CuckooFilter::builder(1000, 0.01).bucket_size(2).fingerprint_bits(12).build()?;
    /// assert_eq!((f.bucket_size(), f.fingerprint_bits()), (2, 12));
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn builder(capacity: u64, fp_rate: f64) -> CuckooBuilder {
        CuckooBuilder::new(capacity, fp_rate)
    }

    /// Starts from RedisBloom's `CF.RESERVE key capacity` defaults instead of the library's:
    /// 2-slot buckets, 8-bit fingerprints, 20 kicks, expansion 1, at most 32 sub-filters,
    /// and the bucket count RedisBloom picks (the next power of two ≥ ⌊capacity / bucket
    /// size⌋, at least 1). Setting [`bucket_size`](CuckooBuilder::bucket_size) later changes
    /// that count as it does in RedisBloom, and [`expansion`](CuckooBuilder::expansion) is
    /// rounded up to a power of two (0 stays 0), as RedisBloom stores and reports it.
    ///
    /// The bucket layout is RedisBloom's; the key hash is bloomkit's (XXH3), so which keys
    /// collide differs, and a server answers like RedisBloom up to false positives.
    ///
    /// # Examples
    ///
    /// ```
    /// let cf = bloomkit::CuckooFilter::redisbloom_builder(1000).build()?;
    /// assert_eq!((cf.num_buckets(), cf.bucket_size(), cf.fingerprint_bits()), (512, 2, 8));
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn redisbloom_builder(capacity: u64) -> CuckooBuilder {
        CuckooBuilder::redisbloom(capacity)
    }

    pub(crate) fn from_shape(shape: Shape) -> Result<Self> {
        let layout = Layout::new(shape.bucket_size, shape.fp_bits, shape.placement);
        let first = SubFilter::new(&layout, shape.base_buckets)?;
        Ok(Self::from_parts(vec![first], layout, shape, 0))
    }

    /// A filter over sub-filters built or decoded elsewhere, its length their occupied
    /// slots.
    pub(crate) fn from_parts(
        filters: Vec<SubFilter>,
        layout: Layout,
        shape: Shape,
        num_deletes: u64,
    ) -> Self {
        let len = filters.iter().map(SubFilter::occupied).sum();
        let skip = Skip::of(&filters, &layout);
        CuckooFilter {
            filters,
            layout,
            shape,
            len,
            num_deletes,
            skip,
        }
    }

    /// Adds `key`, even if it is already there (like `CF.ADD`): each copy takes a slot.
    ///
    /// All copies of a key share its two buckets, so one sub-filter holds at most
    /// 2·[`bucket_size`](Self::bucket_size) of them; further copies fail with
    /// [`Error::Full`] or spill into a new sub-filter, as in RedisBloom.
    ///
    /// # Errors
    ///
    /// [`Error::Full`] if there is no room and the filter may not grow (expansion 0, or
    /// [`max_filters`](Self::max_filters) sub-filters already); [`Error::TooLarge`] or
    /// [`Error::OutOfMemory`] if growing fails. In every case the filter is unchanged: every
    /// key inserted before is still found.
    ///
    /// # Examples
    ///
    /// ```
    /// use bloomkit::{CuckooFilter, Error, FilterKind};
    ///
    /// // A fixed-size filter: fill it until it refuses.
    /// let mut f = CuckooFilter::builder(1000, 0.01).build()?;
    /// let mut stored = 0u32;
    /// while f.insert(&stored).is_ok() { stored += 1; }
    /// assert!(matches!(f.insert(&stored), Err(Error::Full { kind: FilterKind::Cuckoo })));
    /// assert!(stored >= 1000);
    /// assert!((0..stored).all(|i| f.contains(&i))); // nothing was lost
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    #[inline]
    pub fn insert<K: Key + ?Sized>(&mut self, key: &K) -> Result<()> {
        self.insert_hash(self.shape.hasher.hash(key))
    }

    /// [`insert`](Self::insert) by a precomputed hash (from this filter's
    /// [`key_hasher`](Self::key_hasher)).
    ///
    /// # Errors
    ///
    /// As [`insert`](Self::insert).
    pub fn insert_hash(&mut self, hash: u64) -> Result<()> {
        self.insert_hash_within(hash, |_| true)
    }

    /// [`insert_hash`](Self::insert_hash), asking `may_grow` before a sub-filter is added:
    /// it is given the bytes the new sub-filter would allocate, and answers whether they may
    /// be. Whether an insert needs to grow is only known once the kicks have failed, so a
    /// server passes its memory limit here rather than guessing beforehand.
    ///
    /// # Errors
    ///
    /// As [`insert`](Self::insert), and [`Error::OutOfMemory`] with the bytes asked for
    /// when `may_grow` refuses them. In every case the filter is unchanged.
    ///
    /// # Examples
    ///
    /// ```
    /// use bloomkit::{hash_bytes, CuckooFilter, Error};
    /// let mut f = CuckooFilter::redisbloom_builder(64).build()?;
    /// let mut i = 0u32;
    /// // Fill the first sub-filter while refusing any growth.
    /// loop {
    ///     match f.insert_hash_within(hash_bytes(&i.to_le_bytes()), |_| false) {
    ///         Ok(()) => i += 1,
    ///         Err(Error::OutOfMemory { bytes }) => { assert!(bytes > 0); break; }
    ///         Err(e) => return Err(e),
    ///     }
    /// }
    /// assert_eq!((f.num_filters(), f.len()), (1, i as u64));
    /// // Allowed, the same insert grows the filter.
    /// f.insert_hash_within(hash_bytes(&i.to_le_bytes()), |_| true)?;
    /// assert_eq!(f.num_filters(), 2);
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn insert_hash_within(
        &mut self,
        hash: u64,
        may_grow: impl FnOnce(usize) -> bool,
    ) -> Result<()> {
        // RedisBloom's shape gets the table's code with its shape as constants.
        let (key, stored) = if self.layout.is_redisbloom() {
            put_anywhere(&mut self.filters, &self.skip, &Layout::REDISBLOOM, hash)
        } else {
            put_anywhere(&mut self.filters, &self.skip, &self.layout, hash)
        };
        match stored {
            Some(j) => {
                self.stored(j);
                Ok(())
            }
            None => self.insert_by_kicks(&key, hash, may_grow),
        }
    }

    /// The rest of an insert once no bucket of the key has an empty slot: kicks, then
    /// growth. Out of line, so that the common insert (an empty slot found) saves and
    /// restores no more registers than it uses.
    #[cold]
    #[inline(never)]
    fn insert_by_kicks(
        &mut self,
        key: &KeyParts,
        hash: u64,
        may_grow: impl FnOnce(usize) -> bool,
    ) -> Result<()> {
        let layout = self.layout;
        let count = self.filters.len();
        self.skip.no_room(key, count);
        let newest = count - 1;
        // A chain through two buckets full of the key's own fingerprint only swaps copies of
        // it, and fails (and is undone): skipping it changes nothing but the time.
        if !self.filters[newest].holds_only(&layout, key)
            && self.filters[newest].kick_insert(&layout, key, hash, self.shape.max_kicks)
        {
            self.stored(newest);
            return Ok(());
        }
        self.grow(may_grow)?;
        let newest = self.filters.len() - 1;
        // A fresh sub-filter has an empty slot in every bucket.
        if self.filters[newest].try_put(&layout, key) {
            self.stored(newest);
            Ok(())
        } else {
            Err(Error::Full {
                kind: FilterKind::Cuckoo,
            })
        }
    }

    /// Counts a fingerprint just stored in sub-filter `j`.
    fn stored(&mut self, j: usize) {
        self.len += 1;
        self.skip.filled(&self.filters, &self.layout, j);
    }

    /// Adds one sub-filter if `may_grow` allows its bytes, or says why not (leaving the
    /// filter unchanged).
    fn grow(&mut self, may_grow: impl FnOnce(usize) -> bool) -> Result<()> {
        let full = Error::Full {
            kind: FilterKind::Cuckoo,
        };
        let k = self.filters.len() as u32;
        if self.shape.expansion == 0 || k >= self.shape.max_filters {
            return Err(full);
        }
        let too_large = Error::TooLarge { num_bits: u64::MAX };
        let buckets = self.shape.buckets_of(k).ok_or(too_large)?;
        // The slot words and the guard word, plus (at most) the growth of the list when it
        // is full.
        let list = if self.filters.len() == self.filters.capacity() {
            self.filters.capacity().max(4) * std::mem::size_of::<SubFilter>()
        } else {
            0
        };
        let bytes = self
            .layout
            .words_for(buckets)
            .and_then(|w| w.checked_add(1))
            .and_then(|w| w.checked_mul(8))
            .and_then(|b| usize::try_from(b).ok())
            .and_then(|b| b.checked_add(list))
            .ok_or(Error::TooLarge { num_bits: u64::MAX })?;
        if !may_grow(bytes) {
            return Err(Error::OutOfMemory {
                bytes: bytes as u64,
            });
        }
        let sub = SubFilter::new(&self.layout, buckets)?;
        self.filters
            .try_reserve(1)
            .map_err(|_| Error::OutOfMemory {
                bytes: std::mem::size_of::<SubFilter>() as u64,
            })?;
        self.filters.push(sub);
        Ok(())
    }

    /// Adds `key` unless it may already be there (like `CF.ADDNX`): `Ok(true)` if added,
    /// `Ok(false)` if [`contains`](Self::contains) already said "maybe" (a false positive
    /// also gives `false`, and the key is then not added).
    ///
    /// # Errors
    ///
    /// As [`insert`](Self::insert).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut f = bloomkit::CuckooFilter::new(100, 0.01)?;
    /// assert!(f.insert_unique("k")?);
    /// assert!(!f.insert_unique("k")?);
    /// assert_eq!(f.count("k"), 1);
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    #[inline]
    pub fn insert_unique<K: Key + ?Sized>(&mut self, key: &K) -> Result<bool> {
        self.insert_unique_hash(self.shape.hasher.hash(key))
    }

    /// [`insert_unique`](Self::insert_unique) by a precomputed hash.
    ///
    /// # Errors
    ///
    /// As [`insert`](Self::insert).
    pub fn insert_unique_hash(&mut self, hash: u64) -> Result<bool> {
        self.insert_unique_hash_within(hash, |_| true)
    }

    /// [`insert_unique_hash`](Self::insert_unique_hash), asking `may_grow` before a
    /// sub-filter is added, as [`insert_hash_within`](Self::insert_hash_within) does.
    ///
    /// # Errors
    ///
    /// As [`insert_hash_within`](Self::insert_hash_within).
    pub fn insert_unique_hash_within(
        &mut self,
        hash: u64,
        may_grow: impl FnOnce(usize) -> bool,
    ) -> Result<bool> {
        if self.contains_hash(hash) {
            return Ok(false);
        }
        self.insert_hash_within(hash, may_grow).map(|()| true)
    }

    /// `false` if `key` is definitely absent; `true` if it may be present.
    #[inline]
    pub fn contains<K: Key + ?Sized>(&self, key: &K) -> bool {
        self.contains_hash(self.shape.hasher.hash(key))
    }

    /// [`contains`](Self::contains) by a precomputed hash.
    #[inline]
    pub fn contains_hash(&self, hash: u64) -> bool {
        // As in `insert_hash_within`: RedisBloom's shape as constants.
        if self.layout.is_redisbloom() {
            contains_anywhere(&self.filters, &Layout::REDISBLOOM, hash)
        } else {
            contains_anywhere(&self.filters, &self.layout, hash)
        }
    }

    /// Removes one copy of `key`'s fingerprint, from the newest sub-filter holding one (like
    /// `CF.DEL`); `true` if one was found.
    ///
    /// Remove only keys you inserted: removing a key that was never added but matches by
    /// chance removes another key's fingerprint, and that key may then be reported absent.
    ///
    /// With several sub-filters, once the deletions since the last compaction exceed 10% of
    /// [`len`](Self::len), this compacts the filter (see [`compact`](Self::compact)), as
    /// RedisBloom does after `CF.DEL`.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut f = bloomkit::CuckooFilter::new(100, 0.01)?;
    /// f.insert("a")?;
    /// assert!(f.remove("a"));
    /// assert!(!f.remove("a"));
    /// assert_eq!((f.len(), f.num_deletes()), (0, 1));
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    #[inline]
    pub fn remove<K: Key + ?Sized>(&mut self, key: &K) -> bool {
        self.remove_hash(self.shape.hasher.hash(key))
    }

    /// [`remove`](Self::remove) by a precomputed hash.
    pub fn remove_hash(&mut self, hash: u64) -> bool {
        let layout = self.layout;
        let key = KeyParts::new(hash, &layout);
        let Some(j) = (0..self.filters.len())
            .rev()
            .find(|&j| self.filters[j].remove(&layout, &key))
        else {
            return false;
        };
        self.skip.freed(j);
        self.len -= 1;
        self.num_deletes += 1;
        if self.filters.len() > 1 && self.num_deletes as f64 > self.len as f64 * 0.10 {
            self.compact_from_top(false);
        }
        true
    }

    /// How many copies of `key`'s fingerprint the filter holds (like `CF.COUNT`): at least
    /// the number of times `key` was inserted and not removed, more if other keys share its
    /// fingerprint and buckets.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut f = bloomkit::CuckooFilter::new(100, 0.01)?;
    /// for _ in 0..3 { f.insert("x")?; }
    /// assert_eq!(f.count("x"), 3);
    /// assert_eq!(f.count("y"), 0);
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    #[inline]
    pub fn count<K: Key + ?Sized>(&self, key: &K) -> u32 {
        self.count_hash(self.shape.hasher.hash(key))
    }

    /// [`count`](Self::count) by a precomputed hash.
    pub fn count_hash(&self, hash: u64) -> u32 {
        let key = KeyParts::new(hash, &self.layout);
        self.filters
            .iter()
            .map(|sub| sub.count(&self.layout, &key))
            .fold(0u32, u32::saturating_add)
    }

    /// Forgets every key: back to the filter [`build`](CuckooBuilder::build) made, one empty
    /// sub-filter (its memory kept, every later one's freed), with
    /// [`len`](Self::len) and [`num_deletes`](Self::num_deletes) 0.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut f = bloomkit::CuckooFilter::builder(100, 0.01).expansion(2).build()?;
    /// for i in 0..1000u32 { f.insert(&i)?; }
    /// f.clear();
    /// assert_eq!((f.num_filters(), f.len()), (1, 0));
    /// assert!(!f.contains(&7u32));
    /// assert_eq!(f, bloomkit::CuckooFilter::builder(100, 0.01).expansion(2).build()?);
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn clear(&mut self) {
        self.filters.truncate(1);
        self.filters.shrink_to_fit();
        if let Some(first) = self.filters.first_mut() {
            first.clear();
        }
        self.len = 0;
        self.num_deletes = 0;
    }

    /// A filter sized for the keys of `keys` at `fp_rate` ([`new`](Self::new) for as many
    /// keys as it yields, duplicates included) holding all of them, each as often as `keys`
    /// yields it (as [`insert`](Self::insert) stores copies). The keys are hashed first, eight
    /// bytes each, and only then is the filter made.
    ///
    /// # Errors
    ///
    /// As [`new`](Self::new); [`Error::OutOfMemory`] if the hashes do not fit;
    /// [`Error::Full`] if a key comes more often than its two buckets hold
    /// (2·[`bucket_size`](Self::bucket_size) copies).
    ///
    /// # Examples
    ///
    /// ```
    /// let f = bloomkit::CuckooFilter::from_keys(0..10_000u32, 0.01)?;
    /// assert!((0..10_000u32).all(|i| f.contains(&i)));
    /// assert_eq!(f.len(), 10_000);
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn from_keys<I>(keys: I, fp_rate: f64) -> Result<Self>
    where
        I: IntoIterator,
        I::Item: Key,
    {
        let hashes = KeyHasher::default().hash_all(keys)?;
        let mut f = Self::new(hashes.len() as u64, fp_rate)?;
        for &hash in &hashes {
            f.insert_hash(hash)?;
        }
        Ok(f)
    }

    /// Moves fingerprints from newer sub-filters into older ones where they fit, and frees
    /// the newest sub-filters that end up empty (RedisBloom's `CF.COMPACT`). Answers do not
    /// change; [`num_filters`](Self::num_filters) and memory may shrink, and
    /// [`num_deletes`](Self::num_deletes) restarts from 0.
    ///
    /// # Examples
    ///
    /// ```
    /// use bloomkit::CuckooFilter;
    /// let mut f = CuckooFilter::builder(100, 0.01).expansion(1).build()?;
    /// for i in 0..300u32 { f.insert(&i)?; }
    /// assert!(f.num_filters() >= 3);
    /// // Remove most keys one by one; compaction keeps up with them.
    /// for i in 0..250u32 { assert!(f.remove(&i)); }
    /// f.compact();
    /// assert_eq!(f.num_filters(), 1);
    /// assert!((250..300u32).all(|i| f.contains(&i)));
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn compact(&mut self) {
        self.compact_from_top(true);
    }

    /// RedisBloom's `CuckooFilter_Compact`: from the newest sub-filter down to the second,
    /// move what fits into older ones; free a sub-filter emptied while it is the newest.
    /// Unless `keep_going`, stop at the first one that cannot be emptied (nothing below it
    /// could be freed anyway).
    fn compact_from_top(&mut self, keep_going: bool) {
        let layout = self.layout;
        // The sub-filters with an empty slot: the only ones a fingerprint can move into.
        let mut open: BTreeSet<usize> = (0..self.filters.len())
            .filter(|&k| !self.filters[k].is_full(&layout))
            .collect();
        for k in (1..self.filters.len()).rev() {
            let (older, rest) = self.filters.split_at_mut(k);
            let emptied = rest[0].relocate_into(&layout, older, &mut open);
            if emptied && k == self.filters.len() - 1 {
                self.filters.pop();
            } else if !emptied && !keep_going {
                break;
            }
        }
        self.num_deletes = 0;
        self.skip = Skip::of(&self.filters, &layout);
    }

    /// Fingerprints stored: inserts minus removals (`CF.INFO`'s "Number of items inserted").
    pub fn len(&self) -> u64 {
        self.len
    }

    /// `true` if no fingerprint is stored.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Removals since the last compaction (`CF.INFO`'s "Number of items deleted"; like
    /// RedisBloom's counter, it restarts from 0 whenever the filter compacts).
    pub fn num_deletes(&self) -> u64 {
        self.num_deletes
    }

    /// The keys the filter was planned for, summed over its sub-filters (the first planned
    /// for the requested capacity, sub-filter `k` for `expansion^k` times that; saturating).
    pub fn capacity(&self) -> u64 {
        (0..self.filters.len() as u32)
            .map(|k| {
                (self.shape.expansion as u64)
                    .saturating_pow(k)
                    .saturating_mul(self.shape.capacity)
            })
            .fold(0u64, u64::saturating_add)
    }

    /// Buckets of the first sub-filter (`CF.INFO`'s "Number of buckets").
    pub fn num_buckets(&self) -> u64 {
        self.shape.base_buckets
    }

    /// Slots in all sub-filters. RedisBloom's `CF.INFO` "Size" for its 8-bit slots is
    /// `40 + 16·num_filters + num_slots` bytes.
    pub fn num_slots(&self) -> u64 {
        self.filters
            .iter()
            .map(|sub| sub.num_buckets() * self.shape.bucket_size as u64)
            .sum()
    }

    /// Slots per bucket.
    pub fn bucket_size(&self) -> u32 {
        self.shape.bucket_size
    }

    /// Bits per fingerprint (and per slot).
    pub fn fingerprint_bits(&self) -> u32 {
        self.shape.fp_bits
    }

    /// Sub-filters in the chain, at least 1.
    pub fn num_filters(&self) -> usize {
        self.filters.len()
    }

    /// The most sub-filters the chain may grow to. (RedisBloom refuses every insert into a
    /// filter that already has `cf-max-expansions` sub-filters, even one that would fit; a
    /// server checks [`num_filters`](Self::num_filters) for that. This filter refuses only
    /// inserts that would need one more.)
    pub fn max_filters(&self) -> u32 {
        self.shape.max_filters
    }

    /// The growth factor of each new sub-filter's buckets; 0 if the filter never grows.
    pub fn expansion(&self) -> u32 {
        self.shape.expansion
    }

    /// The most fingerprints an insert moves before giving up (`MAXITERATIONS`).
    pub fn max_kicks(&self) -> u32 {
        self.shape.max_kicks
    }

    /// The hash seed keys are hashed with.
    pub fn seed(&self) -> u64 {
        self.shape.hasher.seed()
    }

    /// Where keys' second buckets lie: [`CuckooPlacement::Distinct`] for every filter built
    /// now, [`CuckooPlacement::Original`] for one read from a file written before it existed.
    pub fn placement(&self) -> CuckooPlacement {
        self.shape.placement
    }

    /// How keys are hashed: the seed, and whether as today or as bloomkit 0.1 did (a filter
    /// read from a 0.1 file). Hash a key with it to probe by hash.
    pub fn key_hasher(&self) -> KeyHasher {
        self.shape.hasher
    }

    /// The fraction of slots in use, 0 to 1.
    pub fn load_factor(&self) -> f64 {
        self.len as f64 / self.num_slots() as f64
    }

    /// The false-positive rate a query for an absent key risks now: for each sub-filter, two
    /// buckets of its current average occupancy, each slot matching with probability
    /// 1/(2^f − 1): 1 − Π (1 − 1/(2^f − 1))^(2·occupied/buckets).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut f = bloomkit::CuckooFilter::new(100_000, 0.01)?;
    /// assert_eq!(f.estimated_fp_rate(), 0.0);
    /// for i in 0..100_000u32 { f.insert(&i)?; }
    /// let predicted = f.estimated_fp_rate();
    /// assert!(predicted > 0.006 && predicted < 0.01, "{predicted}");
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn estimated_fp_rate(&self) -> f64 {
        // A query is a false positive if any sub-filter matches.
        let miss: f64 = self
            .filters
            .iter()
            .map(|sub| {
                let per_bucket = sub.occupied() as f64 / sub.num_buckets() as f64;
                1.0 - crate::sizing::cuckoo_fp_rate(self.shape.fp_bits, per_bucket)
            })
            .product();
        1.0 - miss
    }

    /// Bytes of memory the filter holds.
    pub fn memory_bytes(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.filters.capacity() * std::mem::size_of::<SubFilter>()
            + self
                .filters
                .iter()
                .map(SubFilter::memory_bytes)
                .sum::<usize>()
    }
}

impl PartialEq for CuckooFilter {
    /// Equal when the parameters and every slot are the same, so they answer every query and
    /// count alike and store the same fingerprints; the deletion counter, a statistic, is not
    /// compared.
    fn eq(&self, other: &Self) -> bool {
        let (a, b) = (&self.shape, &other.shape);
        a.capacity == b.capacity
            && a.base_buckets == b.base_buckets
            && a.bucket_size == b.bucket_size
            && a.fp_bits == b.fp_bits
            && a.max_kicks == b.max_kicks
            && a.expansion == b.expansion
            && a.max_filters == b.max_filters
            && a.hasher == b.hasher
            && a.placement == b.placement
            && self.filters == other.filters
    }
}

impl Eq for CuckooFilter {}

impl fmt::Debug for CuckooFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CuckooFilter")
            .field("len", &self.len)
            .field("num_buckets", &self.shape.base_buckets)
            .field("bucket_size", &self.shape.bucket_size)
            .field("fingerprint_bits", &self.shape.fp_bits)
            .field("num_filters", &self.filters.len())
            .field("expansion", &self.shape.expansion)
            .field("max_kicks", &self.shape.max_kicks)
            .field("hasher", &self.shape.hasher)
            .field("placement", &self.shape.placement)
            .finish_non_exhaustive()
    }
}

impl Filter for CuckooFilter {
    fn contains_hash(&self, hash: u64) -> bool {
        CuckooFilter::contains_hash(self, hash)
    }
    fn key_hasher(&self) -> KeyHasher {
        self.shape.hasher
    }
    fn kind(&self) -> FilterKind {
        FilterKind::Cuckoo
    }
    fn memory_bytes(&self) -> usize {
        CuckooFilter::memory_bytes(self)
    }
    fn len(&self) -> u64 {
        CuckooFilter::len(self)
    }
    fn estimated_fp_rate(&self) -> f64 {
        CuckooFilter::estimated_fp_rate(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_seed_is_the_crate_default() {
        let f = CuckooFilter::new(10, 0.01).unwrap();
        assert_eq!(f.seed(), crate::DEFAULT_SEED);
    }

    #[test]
    fn zero_capacity_is_one() {
        let f = CuckooFilter::new(0, 0.01).unwrap();
        assert_eq!(f.num_buckets(), 1);
        assert_eq!(f.capacity(), 1);
    }

    #[test]
    fn a_failed_kick_chain_restores_every_slot() {
        let mut f = CuckooFilter::builder(200, 0.01)
            .max_kicks(50)
            .build()
            .unwrap();
        let mut i = 0u32;
        while f.insert(&i).is_ok() {
            i += 1;
        }
        // Every further failure leaves the bytes exactly as they were.
        let mut failures = 0;
        for j in i..i + 300 {
            let before = f.to_bytes();
            match f.insert(&j) {
                Ok(()) => {}
                Err(e) => {
                    assert!(matches!(e, Error::Full { .. }), "{e}");
                    assert_eq!(f.to_bytes(), before);
                    failures += 1;
                }
            }
        }
        assert!(failures > 250, "{failures}");
        assert!((0..i).all(|k| f.contains(&k)));
    }

    /// An insert that looks in every sub-filter and always tries the kick chain: how
    /// inserts worked before [`Skip`], the reference the skips must agree with.
    fn insert_looking_everywhere(f: &mut CuckooFilter, hash: u64) -> Result<()> {
        let layout = f.layout;
        let key = KeyParts::new(hash, &layout);
        if f.filters
            .iter_mut()
            .rev()
            .any(|sub| sub.try_put(&layout, &key))
        {
            f.len += 1;
            return Ok(());
        }
        let newest = f.filters.len() - 1;
        if f.filters[newest].kick_insert(&layout, &key, hash, f.shape.max_kicks) {
            f.len += 1;
            return Ok(());
        }
        f.grow(|_| true)?;
        let newest = f.filters.len() - 1;
        assert!(f.filters[newest].try_put(&layout, &key));
        f.len += 1;
        Ok(())
    }

    /// The skips (full sub-filters, keys known to find no room, kick chains that cannot
    /// succeed) never change where a key goes: random inserts heavy with copies, removals
    /// and compactions build exactly the slots that inserts looking everywhere build.
    #[test]
    fn skipping_never_changes_where_keys_go() {
        let mut grown = 0;
        for seed in 1..=240u64 {
            let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15);
            let mut next = move || {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state
            };
            let s = seed as usize;
            let keys = [1u64, 2, 3, 7, 40, 1000][s % 6];
            let options = CuckooFilter::redisbloom_builder(2 << (s % 5))
                .bucket_size([1, 2, 4][s % 3])
                .max_kicks([1, 5, 20][(s / 3) % 3])
                .expansion([1, 2][(s / 6) % 2])
                // Doubling sub-filters stay small only for a few doublings.
                .max_filters(if (s / 6).is_multiple_of(2) { 60 } else { 10 })
                .placement(if s.is_multiple_of(7) {
                    CuckooPlacement::Original
                } else {
                    CuckooPlacement::Distinct
                });
            let mut fast = options.build().unwrap();
            let mut slow = fast.clone();
            for step in 0..700 {
                let hash = crate::hash(&(next() % keys));
                match next() % 20 {
                    0..=15 => {
                        let a = fast.insert_hash(hash).map_err(|e| e.to_string());
                        let b =
                            insert_looking_everywhere(&mut slow, hash).map_err(|e| e.to_string());
                        assert_eq!(a, b, "seed {seed} step {step}");
                    }
                    16..=18 => assert_eq!(fast.remove_hash(hash), slow.remove_hash(hash)),
                    _ => {
                        fast.compact();
                        slow.compact();
                    }
                }
                assert!(fast == slow, "seed {seed} step {step}");
                assert_eq!(fast.len(), slow.len());
            }
            grown += usize::from(fast.num_filters() >= 10);
        }
        // The cases reached many sub-filters, where the skips matter.
        assert!(grown > 50, "{grown}");
    }

    #[test]
    fn growth_past_u64_is_an_error_not_a_panic() {
        let shape = Shape {
            capacity: 1,
            base_buckets: 3,
            bucket_size: 4,
            fp_bits: 10,
            max_kicks: 1,
            expansion: 32_768,
            max_filters: 65_535,
            hasher: KeyHasher::new(0),
            placement: CuckooPlacement::Distinct,
        };
        assert_eq!(shape.buckets_of(2), Some(3 << 30));
        assert_eq!(shape.buckets_of(4), Some(3 << 60));
        assert_eq!(shape.buckets_of(5), None);
        let layout = Layout::new(4, 10, CuckooPlacement::Distinct);
        for buckets in [u64::MAX, 1 << 60, 1 << 50] {
            assert!(matches!(
                SubFilter::new(&layout, buckets),
                Err(Error::TooLarge { .. }) | Err(Error::OutOfMemory { .. })
            ));
        }
    }
}
