//! RedisBloom's cuckoo filter (`MBbloomCF`): 8-bit fingerprints in buckets, in sub-filters
//! that grow by the expansion factor.

use crate::error::{Error, Result};

/// The most sub-filters (RedisBloom keeps the count in 16 bits).
pub const MAX_FILTERS: u64 = u16::MAX as u64;
/// The most buckets in one sub-filter (RedisBloom keeps the count in 56 bits).
pub const MAX_BUCKETS: u64 = 0x00ff_ffff_ffff_ffff;
/// An empty slot.
const EMPTY: u8 = 0;
/// The alternate bucket's multiplier.
const ALT_MULTIPLIER: u64 = 0x5bd1_e995;

/// What [`RedisCuckooFilter::insert`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RedisCuckooInsert {
    /// The fingerprint was stored.
    Inserted,
    /// Only for [`RedisCuckooFilter::insert_unique`]: the item may already be there.
    Exists,
    /// No room, and the filter may not grow (expansion 0, or the most sub-filters).
    NoSpace,
}

/// One sub-filter: `num_buckets` buckets of `bucket_size` one-byte slots.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct SubFilter {
    pub(crate) num_buckets: u64,
    pub(crate) data: Vec<u8>,
}

/// RedisBloom's cuckoo filter (the value of a `MBbloomCF` key), answering, counting,
/// deleting and growing as RedisBloom 2.8 does.
///
/// # Examples
///
/// ```
/// use bloomkit::redisbloom::RedisCuckooFilter;
///
/// let mut cf = RedisCuckooFilter::new(1000, 2, 20, 1)?; // CF.RESERVE k 1000
/// cf.insert(b"a");
/// cf.insert(b"a");
/// assert_eq!(cf.count(b"a"), 2);
/// assert!(cf.delete(b"a"));
/// assert!(cf.contains(b"a"));
/// # Ok::<(), bloomkit::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct RedisCuckooFilter {
    pub(crate) num_buckets: u64,
    pub(crate) num_items: u64,
    pub(crate) num_deletes: u64,
    pub(crate) bucket_size: u16,
    pub(crate) max_iterations: u16,
    pub(crate) expansion: u16,
    pub(crate) filters: Vec<SubFilter>,
}

/// Where an item lives: its fingerprint and its two hashes.
#[derive(Clone, Copy)]
struct Lookup {
    fp: u8,
    h1: u64,
    h2: u64,
}

impl Lookup {
    fn of(item: &[u8]) -> Self {
        let h = super::cuckoo_hash(item);
        let fp = (h % 255 + 1) as u8;
        Lookup {
            fp,
            h1: h,
            h2: alt_hash(fp, h),
        }
    }
}

fn alt_hash(fp: u8, index: u64) -> u64 {
    index ^ u64::from(fp).wrapping_mul(ALT_MULTIPLIER)
}

impl SubFilter {
    /// The first slot of the bucket `hash` falls in. RedisBloom computes this offset in 32
    /// bits, so beyond 2^32 slots it wraps; kept, so that its filters answer the same.
    fn bucket_start(&self, hash: u64, bucket_size: u16) -> usize {
        ((hash % self.num_buckets).wrapping_mul(u64::from(bucket_size)) as u32) as usize
    }

    fn bucket(&self, hash: u64, bucket_size: u16) -> &[u8] {
        let s = self.bucket_start(hash, bucket_size);
        &self.data[s..s + usize::from(bucket_size)]
    }

    fn bucket_mut(&mut self, hash: u64, bucket_size: u16) -> &mut [u8] {
        let s = self.bucket_start(hash, bucket_size);
        &mut self.data[s..s + usize::from(bucket_size)]
    }
}

impl RedisCuckooFilter {
    /// An empty filter as `CF.RESERVE key capacity BUCKETSIZE b MAXITERATIONS m EXPANSION e`
    /// makes it: `capacity / b` buckets rounded up to a power of two, the expansion rounded
    /// up to a power of two.
    ///
    /// # Errors
    ///
    /// [`Error::Corrupt`] for a bucket size of 0 or a capacity below it;
    /// [`Error::OutOfMemory`] when the buckets cannot be allocated.
    pub fn new(
        capacity: u64,
        bucket_size: u16,
        max_iterations: u16,
        expansion: u16,
    ) -> Result<Self> {
        if bucket_size == 0 || bucket_size > 255 || capacity == 0 {
            return Err(Error::corrupt(format!(
                "a RedisBloom cuckoo filter needs a bucket size of 1 to 255 and a capacity, \
                 not {bucket_size} and {capacity}"
            )));
        }
        let num_buckets = (capacity / u64::from(bucket_size))
            .max(1)
            .next_power_of_two();
        let expansion = if expansion == 0 {
            0
        } else {
            u32::from(expansion).next_power_of_two().min(1 << 15) as u16
        };
        let mut cf = RedisCuckooFilter {
            num_buckets,
            num_items: 0,
            num_deletes: 0,
            bucket_size,
            max_iterations,
            expansion,
            filters: Vec::new(),
        };
        if !cf.grow()? {
            return Err(Error::TooLarge {
                num_bits: num_buckets.saturating_mul(u64::from(bucket_size) * 8),
            });
        }
        Ok(cf)
    }

    /// Buckets of sub-filter `index`: the first one's times `expansion^index`, or `None`
    /// past RedisBloom's bounds.
    pub(crate) fn sub_filter_buckets(
        num_buckets: u64,
        expansion: u16,
        bucket_size: u16,
        index: u64,
    ) -> Option<u64> {
        let growth = u64::from(expansion).checked_pow(u32::try_from(index).ok()?)?;
        let n = num_buckets.checked_mul(growth)?;
        if n == 0 || n > MAX_BUCKETS {
            return None;
        }
        n.checked_mul(u64::from(bucket_size))?;
        Some(n)
    }

    /// Adds a sub-filter; `Ok(false)` when RedisBloom would refuse to.
    fn grow(&mut self) -> Result<bool> {
        let index = self.filters.len() as u64;
        if index >= MAX_FILTERS {
            return Ok(false);
        }
        let Some(n) =
            Self::sub_filter_buckets(self.num_buckets, self.expansion, self.bucket_size, index)
        else {
            return Ok(false);
        };
        let len = usize::try_from(n * u64::from(self.bucket_size))
            .map_err(|_| Error::TooLarge { num_bits: u64::MAX })?;
        let mut data = Vec::new();
        data.try_reserve_exact(len)
            .map_err(|_| Error::OutOfMemory { bytes: len as u64 })?;
        data.resize(len, EMPTY);
        self.filters.push(SubFilter {
            num_buckets: n,
            data,
        });
        Ok(true)
    }

    fn find(&self, l: &Lookup) -> bool {
        let b = self.bucket_size;
        self.filters
            .iter()
            .any(|f| f.bucket(l.h1, b).contains(&l.fp) || f.bucket(l.h2, b).contains(&l.fp))
    }

    /// Whether the filter may hold `item` (`CF.EXISTS`).
    pub fn contains(&self, item: &[u8]) -> bool {
        self.find(&Lookup::of(item))
    }

    /// How many of `item`'s fingerprints the filter holds (`CF.COUNT`; may overcount).
    pub fn count(&self, item: &[u8]) -> u64 {
        let l = Lookup::of(item);
        let b = self.bucket_size;
        let in_bucket = |bucket: &[u8]| bucket.iter().filter(|&&x| x == l.fp).count() as u64;
        self.filters
            .iter()
            .map(|f| in_bucket(f.bucket(l.h1, b)) + in_bucket(f.bucket(l.h2, b)))
            .sum()
    }

    /// Removes one of `item`'s fingerprints, newest sub-filter first (`CF.DEL`); whether one
    /// was found. (RedisBloom may then compact its sub-filters, which moves fingerprints but
    /// changes no answer; this filter does not.)
    pub fn delete(&mut self, item: &[u8]) -> bool {
        let l = Lookup::of(item);
        let b = self.bucket_size;
        for f in self.filters.iter_mut().rev() {
            for h in [l.h1, l.h2] {
                if let Some(slot) = f.bucket_mut(h, b).iter_mut().find(|x| **x == l.fp) {
                    *slot = EMPTY;
                    self.num_items = self.num_items.saturating_sub(1);
                    self.num_deletes = self.num_deletes.saturating_add(1);
                    return true;
                }
            }
        }
        false
    }

    /// Adds `item` (`CF.ADD`; duplicates allowed), growing as RedisBloom does.
    ///
    /// # Errors
    ///
    /// [`Error::OutOfMemory`] when a new sub-filter cannot be allocated.
    pub fn insert(&mut self, item: &[u8]) -> Result<RedisCuckooInsert> {
        self.insert_lookup(Lookup::of(item))
    }

    /// Adds `item` unless it may already be there (`CF.ADDNX`).
    ///
    /// # Errors
    ///
    /// As [`insert`](Self::insert).
    pub fn insert_unique(&mut self, item: &[u8]) -> Result<RedisCuckooInsert> {
        let l = Lookup::of(item);
        if self.find(&l) {
            return Ok(RedisCuckooInsert::Exists);
        }
        self.insert_lookup(l)
    }

    fn insert_lookup(&mut self, l: Lookup) -> Result<RedisCuckooInsert> {
        loop {
            let b = self.bucket_size;
            for f in self.filters.iter_mut().rev() {
                for h in [l.h1, l.h2] {
                    if let Some(slot) = f.bucket_mut(h, b).iter_mut().find(|x| **x == EMPTY) {
                        *slot = l.fp;
                        self.num_items += 1;
                        return Ok(RedisCuckooInsert::Inserted);
                    }
                }
            }
            if self.kick_out(l) {
                self.num_items += 1;
                return Ok(RedisCuckooInsert::Inserted);
            }
            if self.expansion == 0 || !self.grow()? {
                return Ok(RedisCuckooInsert::NoSpace);
            }
        }
    }

    /// RedisBloom's relocation in the newest sub-filter: up to `max_iterations` swaps, each
    /// evicting the next slot of the bucket; if no empty slot turns up, the swaps are undone
    /// in reverse, so the filter is as before.
    fn kick_out(&mut self, l: Lookup) -> bool {
        let b = usize::from(self.bucket_size);
        let iterations = self.max_iterations;
        let f = self.filters.last_mut().expect("at least one sub-filter");
        let n = f.num_buckets;
        let mut fp = l.fp;
        let mut victim = 0usize;
        let mut i = l.h1 % n;
        for _ in 0..iterations {
            let at = (i as usize) * b + victim;
            std::mem::swap(&mut f.data[at], &mut fp);
            i = alt_hash(fp, i) % n;
            let start = (i as usize) * b;
            if let Some(slot) = f.data[start..start + b].iter_mut().find(|x| **x == EMPTY) {
                *slot = fp;
                return true;
            }
            victim = (victim + 1) % b;
        }
        for _ in 0..iterations {
            victim = (victim + b - 1) % b;
            i = alt_hash(fp, i) % n;
            let at = (i as usize) * b + victim;
            std::mem::swap(&mut f.data[at], &mut fp);
        }
        false
    }

    /// Items in the filter (`CF.INFO`'s "Number of items inserted").
    pub fn len(&self) -> u64 {
        self.num_items
    }

    /// Whether the filter holds nothing.
    pub fn is_empty(&self) -> bool {
        self.num_items == 0
    }

    /// Deletes so far ("Number of items deleted").
    pub fn num_deletes(&self) -> u64 {
        self.num_deletes
    }

    /// Buckets of the first sub-filter.
    pub fn num_buckets(&self) -> u64 {
        self.num_buckets
    }

    /// Slots per bucket.
    pub fn bucket_size(&self) -> u16 {
        self.bucket_size
    }

    /// Relocations tried before growing.
    pub fn max_iterations(&self) -> u16 {
        self.max_iterations
    }

    /// Each new sub-filter's buckets are the previous one's times this (0: never grows).
    pub fn expansion(&self) -> u16 {
        self.expansion
    }

    /// Number of sub-filters.
    pub fn num_filters(&self) -> usize {
        self.filters.len()
    }

    /// Bytes of fingerprints in all sub-filters.
    pub fn memory_bytes(&self) -> usize {
        self.filters.iter().map(|f| f.data.len()).sum()
    }

    /// The item count against the occupied slots, and every sub-filter's size against
    /// what the header implies.
    pub(crate) fn validate(&self) -> Result<()> {
        if self.bucket_size == 0 || self.bucket_size > 255 {
            return Err(Error::corrupt(format!(
                "RedisBloom cuckoo bucket size {} (1 to 255 expected)",
                self.bucket_size
            )));
        }
        let occupied: u64 = self
            .filters
            .iter()
            .map(|f| f.data.iter().filter(|&&x| x != EMPTY).count() as u64)
            .sum();
        if occupied != self.num_items {
            return Err(Error::corrupt(format!(
                "the RedisBloom cuckoo filter says {} items but {occupied} slots are occupied",
                self.num_items
            )));
        }
        Ok(())
    }
}
