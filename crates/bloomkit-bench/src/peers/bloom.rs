//! Bloom-filter peers: fastbloom 0.17, bloomfilter 3, sbbf-rs 0.2, growable-bloom-filter 2.

use std::hash::BuildHasher;
use std::mem::size_of;

use crate::keys::Key;
use crate::subject::{Contender, Family, Hashing, Info, Subject};

use super::PeerKey;

/// A peer filter used with its own hasher: the key goes to the crate as it is.
pub struct OwnHash<F>(F);

/// A peer filter given [`bloomkit::hash`] of each key through its precomputed-hash API.
pub struct BloomkitHash<F>(F);

// ---------------------------------------------------------------------------------------
// fastbloom 0.17

/// The seed of the foldhash configuration: fixed, so runs are reproducible.
const FOLDHASH_SEED: u64 = 0x0f01_d4a5_4b10_0d00;

/// foldhash's fast hasher, as fastbloom's docs configure it for speed.
type Foldhash = foldhash::fast::FixedState;

/// Which hash a fastbloom filter is measured with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FastbloomHash {
    /// foldhash (fast): fastbloom's fastest configuration, `.hasher(..)` on its builder.
    Foldhash,
    /// Its default: SipHash-1-3 with a random key.
    Default,
    /// `bloomkit::hash`, through `insert_hash` / `contains_hash`.
    Bloomkit,
}

macro_rules! fastbloom_subjects {
    ($ty:ident) => {
        impl<K: Key + ?Sized, S: BuildHasher> Subject<K> for OwnHash<fastbloom::$ty<S>> {
            #[inline]
            fn insert(&mut self, key: &K) -> bool {
                self.0.insert(key);
                true
            }

            #[inline]
            fn contains(&self, key: &K) -> bool {
                self.0.contains(key)
            }

            fn memory_bytes(&self) -> usize {
                size_of::<fastbloom::$ty<S>>() + self.0.as_slice().len() * 8
            }
        }

        impl<K: Key + ?Sized, S: BuildHasher> Subject<K> for BloomkitHash<fastbloom::$ty<S>> {
            #[inline]
            fn insert(&mut self, key: &K) -> bool {
                self.0.insert_hash(bloomkit::hash(key));
                true
            }

            #[inline]
            fn contains(&self, key: &K) -> bool {
                self.0.contains_hash(bloomkit::hash(key))
            }

            fn supports_hash(&self) -> bool {
                true
            }

            #[inline]
            fn contains_hash(&self, hash: u64) -> bool {
                self.0.contains_hash(hash)
            }

            fn memory_bytes(&self) -> usize {
                size_of::<fastbloom::$ty<S>>() + self.0.as_slice().len() * 8
            }
        }
    };
}

fastbloom_subjects!(BloomFilter);
fastbloom_subjects!(AtomicBloomFilter);

/// fastbloom's `BloomFilter` or `AtomicBloomFilter`, built by
/// `with_false_pos(p).[hasher(h).]expected_items(n)`.
///
/// A classic Bloom filter (probes anywhere in the array, index by multiply-high of a 64-bit
/// hash), k from its own sizing; a query stops at the first unset bit.
pub struct Fastbloom {
    /// `AtomicBloomFilter` (insert through `&self`) rather than `BloomFilter`.
    pub atomic: bool,
    /// The hash used.
    pub hash: FastbloomHash,
}

impl Fastbloom {
    /// Bytes of the filter's struct, which holds its hasher.
    fn struct_bytes(&self) -> usize {
        use fastbloom::{AtomicBloomFilter as A, BloomFilter as B, DefaultHasher as D};
        match (self.atomic, self.hash) {
            (false, FastbloomHash::Foldhash) => size_of::<B<Foldhash>>(),
            (false, _) => size_of::<B<D>>(),
            (true, FastbloomHash::Foldhash) => size_of::<A<Foldhash>>(),
            (true, _) => size_of::<A<D>>(),
        }
    }
}

impl<K: Key + ?Sized> Contender<K> for Fastbloom {
    fn info(&self) -> Info {
        let name = if self.atomic {
            "fastbloom AtomicBloomFilter"
        } else {
            "fastbloom BloomFilter"
        };
        Info {
            name: name.to_string(),
            crate_name: "fastbloom 0.17",
            family: if self.atomic {
                Family::Atomic
            } else {
                Family::Classic
            },
            hashing: match self.hash {
                FastbloomHash::Foldhash => Hashing::Own("foldhash (fast)"),
                FastbloomHash::Default => Hashing::Own("SipHash-1-3 (default)"),
                FastbloomHash::Bloomkit => Hashing::Bloomkit,
            },
            note: None,
        }
    }

    fn build(&self, n: u64, p: f64) -> Result<Box<dyn Subject<K>>, String> {
        let n = usize::try_from(n).map_err(|e| e.to_string())?;
        let fold = || Foldhash::with_seed(FOLDHASH_SEED);
        Ok(match (self.atomic, self.hash) {
            (false, FastbloomHash::Foldhash) => Box::new(OwnHash(
                fastbloom::BloomFilter::with_false_pos(p)
                    .hasher(fold())
                    .expected_items(n),
            )),
            (false, FastbloomHash::Default) => Box::new(OwnHash(
                fastbloom::BloomFilter::with_false_pos(p).expected_items(n),
            )),
            (false, FastbloomHash::Bloomkit) => Box::new(BloomkitHash(
                fastbloom::BloomFilter::with_false_pos(p).expected_items(n),
            )),
            (true, FastbloomHash::Foldhash) => Box::new(OwnHash(
                fastbloom::AtomicBloomFilter::with_false_pos(p)
                    .hasher(fold())
                    .expected_items(n),
            )),
            (true, FastbloomHash::Default) => Box::new(OwnHash(
                fastbloom::AtomicBloomFilter::with_false_pos(p).expected_items(n),
            )),
            (true, FastbloomHash::Bloomkit) => Box::new(BloomkitHash(
                fastbloom::AtomicBloomFilter::with_false_pos(p).expected_items(n),
            )),
        })
    }

    fn memory_for(&self, n: u64, p: f64) -> Result<u64, String> {
        let n = usize::try_from(n).map_err(|e| e.to_string())?;
        let bits = fastbloom::optimal_size(n.max(1), p) as u64;
        Ok(self.struct_bytes() as u64 + bits.div_ceil(64) * 8)
    }
}

// ---------------------------------------------------------------------------------------
// bloomfilter 3

impl<K: Key + ?Sized> Subject<K> for OwnHash<bloomfilter::Bloom<K>> {
    #[inline]
    fn insert(&mut self, key: &K) -> bool {
        self.0.set(key);
        true
    }

    #[inline]
    fn contains(&self, key: &K) -> bool {
        self.0.check(key)
    }

    fn memory_bytes(&self) -> usize {
        // `as_slice` is its 45-byte header and its bits: all it allocates.
        size_of::<bloomfilter::Bloom<K>>() + self.0.as_slice().len()
    }
}

/// bloomfilter's `Bloom::new_for_fp_rate(n, p)`: a classic filter hashing every key twice
/// with SipHash-1-3 (random keys) and deriving k probes by `%`. No precomputed-hash API.
pub struct Bloomfilter;

/// The header `Bloom::as_slice` starts with: version, length, k, 32-byte seed.
const BLOOMFILTER_HEADER: u64 = 1 + 8 + 4 + 32;

impl<K: Key + ?Sized> Contender<K> for Bloomfilter {
    fn info(&self) -> Info {
        Info {
            name: "bloomfilter Bloom".to_string(),
            crate_name: "bloomfilter 3",
            family: Family::Classic,
            hashing: Hashing::Own("2× SipHash-1-3 (default)"),
            note: None,
        }
    }

    fn build(&self, n: u64, p: f64) -> Result<Box<dyn Subject<K>>, String> {
        let n = usize::try_from(n.max(1)).map_err(|e| e.to_string())?;
        let bloom = bloomfilter::Bloom::<K>::new_for_fp_rate(n, p)?;
        Ok(Box::new(OwnHash(bloom)))
    }

    fn memory_for(&self, n: u64, p: f64) -> Result<u64, String> {
        let n = usize::try_from(n.max(1)).map_err(|e| e.to_string())?;
        let bits_bytes = bloomfilter::Bloom::<K>::compute_bitmap_size(n, p) as u64;
        Ok(size_of::<bloomfilter::Bloom<K>>() as u64 + BLOOMFILTER_HEADER + bits_bytes)
    }
}

// ---------------------------------------------------------------------------------------
// sbbf-rs 0.2

/// Two 32-byte buckets, aligned as sbbf-rs requires ([`sbbf_rs::ALIGNMENT`] = 64).
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Chunk([u8; 64]);

/// A split-block Bloom filter over sbbf-rs's raw functions: the crate has only an unsafe
/// API over a caller's buffer, no constructor and no hasher, so this adapter owns the
/// buffer and sizes it by the Parquet spec's formula (the closest thing it has to a knob):
/// bits = −8·n / ln(1 − p^(1/8)).
pub struct SbbfFilter {
    chunks: Vec<Chunk>,
    num_buckets: usize,
    functions: sbbf_rs::FilterFn,
}

impl SbbfFilter {
    /// The buckets the Parquet formula gives for `n` keys at `p`, rounded up to whole
    /// 64-byte chunks.
    fn buckets_for(n: u64, p: f64) -> usize {
        let bits = -8.0 * n.max(1) as f64 / (1.0 - p.powf(1.0 / 8.0)).ln();
        let buckets = (bits / (sbbf_rs::BUCKET_SIZE * 8) as f64).ceil() as usize;
        buckets.max(1).next_multiple_of(2)
    }

    fn new(n: u64, p: f64) -> Self {
        let num_buckets = Self::buckets_for(n, p);
        SbbfFilter {
            chunks: vec![Chunk([0; 64]); num_buckets / 2],
            num_buckets,
            functions: sbbf_rs::FilterFn::new(),
        }
    }

    #[inline]
    fn insert_hash(&mut self, hash: u64) {
        // SAFETY: the buffer is `chunks`, 64-byte aligned (`Chunk`'s alignment is
        // `sbbf_rs::ALIGNMENT`), and holds `num_buckets` 32-byte buckets, two per chunk;
        // `num_buckets` is at least 2. Those are the function's documented requirements.
        unsafe {
            self.functions.insert(
                self.chunks.as_mut_ptr().cast::<u8>(),
                self.num_buckets,
                hash,
            );
        }
    }

    #[inline]
    fn contains_hash(&self, hash: u64) -> bool {
        // SAFETY: as in `insert_hash`: an aligned buffer of `num_buckets` (≥ 2) buckets.
        unsafe {
            self.functions
                .contains(self.chunks.as_ptr().cast::<u8>(), self.num_buckets, hash)
        }
    }
}

impl<K: Key + ?Sized> Subject<K> for SbbfFilter {
    #[inline]
    fn insert(&mut self, key: &K) -> bool {
        self.insert_hash(bloomkit::hash(key));
        true
    }

    #[inline]
    fn contains(&self, key: &K) -> bool {
        self.contains_hash(bloomkit::hash(key))
    }

    fn supports_hash(&self) -> bool {
        true
    }

    #[inline]
    fn contains_hash(&self, hash: u64) -> bool {
        SbbfFilter::contains_hash(self, hash)
    }

    fn memory_bytes(&self) -> usize {
        size_of::<Self>() + self.chunks.len() * size_of::<Chunk>()
    }
}

/// sbbf-rs, measured with `bloomkit::hash` (it has no hasher of its own).
pub struct Sbbf;

impl<K: Key + ?Sized> Contender<K> for Sbbf {
    fn info(&self) -> Info {
        Info {
            name: "sbbf-rs split block".to_string(),
            crate_name: "sbbf-rs 0.2",
            family: Family::SplitBlock,
            hashing: Hashing::Bloomkit,
            note: Some(format!(
                "no constructor or hasher: sized by the Parquet formula; {} kernel",
                sbbf_rs::FilterFn::new().which()
            )),
        }
    }

    fn build(&self, n: u64, p: f64) -> Result<Box<dyn Subject<K>>, String> {
        Ok(Box::new(SbbfFilter::new(n, p)))
    }

    fn memory_for(&self, n: u64, p: f64) -> Result<u64, String> {
        let buckets = SbbfFilter::buckets_for(n, p) as u64;
        Ok(size_of::<SbbfFilter>() as u64 + buckets * sbbf_rs::BUCKET_SIZE as u64)
    }
}

// ---------------------------------------------------------------------------------------
// growable-bloom-filter 2

/// growable-bloom-filter's defaults: each new layer has twice the capacity...
const GROWABLE_GROWTH: u64 = 2;
/// ...and this times the error ratio of the one before.
const GROWABLE_TIGHTENING: f64 = 0.8515625;

/// Bytes of a growable filter for `est` keys at `p` whose layers hold `capacity` keys in
/// all: the crate's own layer formula (k = ⌈log2(1/p)⌉ slices of ⌈cap/ln 2⌉ bits), since it
/// reports no memory figure of its own.
fn growable_bytes(est: u64, p: f64, capacity: u64) -> u64 {
    let mut bytes = size_of::<growable_bloom_filter::GrowableBloom>() as u64;
    let mut held = 0;
    let mut layer = 0;
    while held < capacity {
        let cap = est * GROWABLE_GROWTH.pow(layer);
        let error = p * GROWABLE_TIGHTENING.powi(layer as i32);
        let slices = (1.0 / error).log2().ceil() as u64;
        let slice_bits = (cap as f64 / std::f64::consts::LN_2).ceil() as u64;
        bytes += (slices * slice_bits).div_ceil(8);
        held += cap;
        layer += 1;
    }
    bytes
}

/// A growable filter and what it was built for (for its memory figure).
pub struct GrowableFilter {
    filter: growable_bloom_filter::GrowableBloom,
    est: u64,
    fp_rate: f64,
}

impl<K: Key + ?Sized> Subject<K> for GrowableFilter {
    #[inline]
    fn insert(&mut self, key: &K) -> bool {
        self.filter.insert(key);
        true
    }

    #[inline]
    fn contains(&self, key: &K) -> bool {
        self.filter.contains(key)
    }

    fn memory_bytes(&self) -> usize {
        growable_bytes(self.est, self.fp_rate, self.filter.capacity() as u64) as usize
    }
}

/// growable-bloom-filter's `GrowableBloom::new(p, n)`: a scalable filter of partitioned
/// Bloom layers, hashing with xxh3 (its stable hasher). Its insert queries first and skips
/// a key that looks present. No precomputed-hash API.
pub struct Growable;

impl<K: Key + ?Sized> Contender<K> for Growable {
    fn info(&self) -> Info {
        Info {
            name: "growable-bloom-filter GrowableBloom".to_string(),
            crate_name: "growable-bloom-filter 2",
            family: Family::Scalable,
            hashing: Hashing::Own("xxh3 (its stable hasher)"),
            note: Some(
                "planned for n/100 and grown 100×; memory from its layer formula (it reports \
                 none)"
                    .to_string(),
            ),
        }
    }

    fn build(&self, n: u64, p: f64) -> Result<Box<dyn Subject<K>>, String> {
        // Planned for a hundredth of its keys, as bloomkit's scalable filter is: both grow
        // 100× while the keys go in.
        let est = (n / crate::ours::SCALABLE_GROWTH).max(1);
        Ok(Box::new(GrowableFilter {
            filter: growable_bloom_filter::GrowableBloom::new(
                p,
                usize::try_from(est).map_err(|e| e.to_string())?,
            ),
            est,
            fp_rate: p,
        }))
    }

    fn memory_for(&self, n: u64, p: f64) -> Result<u64, String> {
        // Its layers after n keys, planned for n/100.
        let est = (n / crate::ours::SCALABLE_GROWTH).max(1);
        Ok(growable_bytes(est, p, n.max(1)))
    }
}

/// The Bloom-filter peers, in report order.
pub fn contenders<K: PeerKey + ?Sized>() -> Vec<Box<dyn Contender<K>>> {
    let mut all: Vec<Box<dyn Contender<K>>> = Vec::new();
    for atomic in [false, true] {
        for hash in [
            FastbloomHash::Foldhash,
            FastbloomHash::Default,
            FastbloomHash::Bloomkit,
        ] {
            all.push(Box::new(Fastbloom { atomic, hash }));
        }
    }
    all.push(Box::new(Bloomfilter));
    all.push(Box::new(Sbbf));
    all.push(Box::new(Growable));
    all
}
