//! Fingerprint-filter peers: xorf 0.13 (`BinaryFuse8`, `BinaryFuse16`, `Xor8`),
//! cuckoofilter 0.5, qfilter 0.3.

use std::marker::PhantomData;
use std::mem::size_of;

use xorf::Filter as _;

use crate::keys::Key;
use crate::subject::{
    BloomkitHash, Contender, Family, Hashing, Info, KeyHash, Static, StaticFilter, Subject, Target,
};

use super::PeerKey;

// ---------------------------------------------------------------------------------------
// xorf 0.13

/// xorf's own way to hash a key ([`PeerKey::xorf_hash`]), as a [`KeyHash`].
pub struct XorfHash;

impl<K: PeerKey + ?Sized> KeyHash<K> for XorfHash {
    const IS_BLOOMKIT: bool = false;

    #[inline]
    fn hash(key: &K) -> u64 {
        K::xorf_hash(key)
    }
}

impl StaticFilter for xorf::BinaryFuse8 {
    fn build(hashes: &[u64], _p: f64) -> Result<Self, String> {
        xorf::BinaryFuse8::try_from(hashes).map_err(str::to_string)
    }

    #[inline]
    fn contains_hash(&self, hash: u64) -> bool {
        self.contains(&hash)
    }

    fn memory_bytes(&self) -> usize {
        size_of::<Self>() + self.fingerprints.len()
    }
}

impl StaticFilter for xorf::BinaryFuse16 {
    fn build(hashes: &[u64], _p: f64) -> Result<Self, String> {
        xorf::BinaryFuse16::try_from(hashes).map_err(str::to_string)
    }

    #[inline]
    fn contains_hash(&self, hash: u64) -> bool {
        self.contains(&hash)
    }

    fn memory_bytes(&self) -> usize {
        size_of::<Self>() + self.fingerprints.len() * 2
    }
}

impl StaticFilter for xorf::Xor8 {
    fn build(hashes: &[u64], _p: f64) -> Result<Self, String> {
        // Xor8 retries until it succeeds, and never does with duplicate keys: fine here, as
        // integer keys and their bloomkit (XXH3) hashes are distinct (XXH3 is a bijection on
        // 8-byte inputs), and the string keys it is built from are few enough that a 64-bit
        // collision is improbable (it is not run out of cache).
        Ok(xorf::Xor8::from(hashes))
    }

    #[inline]
    fn contains_hash(&self, hash: u64) -> bool {
        self.contains(&hash)
    }

    fn memory_bytes(&self) -> usize {
        size_of::<Self>() + self.fingerprints.len()
    }
}

/// Which xorf filter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum XorfKind {
    /// `BinaryFuse8`.
    BinaryFuse8,
    /// `BinaryFuse16`.
    BinaryFuse16,
    /// `Xor8`.
    Xor8,
}

/// An xorf filter built from the hashes of all keys (`try_from(&[u64])` / `from(&[u64])`).
/// Its rate is fixed by its 8- or 16-bit fingerprints (≈0.39% or ≈0.0015%): there is no knob
/// for 1%.
pub struct Xorf<H> {
    /// Which filter.
    pub kind: XorfKind,
    _hash: PhantomData<H>,
}

impl<H> Xorf<H> {
    /// The filter `kind`, hashing keys with `H`.
    pub fn new(kind: XorfKind) -> Self {
        Xorf {
            kind,
            _hash: PhantomData,
        }
    }
}

/// `BinaryFuse8`'s (and `BinaryFuse16`'s) fingerprint count for `n` keys: its construction's sizing, step by step
/// (arity 3; segment length from `n`, capped at 2^18; `n` times a size factor, cut into
/// whole segments, plus two).
fn binary_fuse8_len(n: u64) -> u64 {
    let size = n as f64;
    let segment_length: u64 = if n == 0 {
        4
    } else {
        (1u64 << ((size.ln() / 3.33f64.ln() + 2.25).floor() as u32)).min(262_144)
    };
    let size_factor = f64::max(1.125, 0.875 + 0.25 * 1_000_000f64.ln() / size.ln());
    let capacity = if n > 1 {
        (size * size_factor).round() as u64
    } else {
        0
    };
    let init_segment_count = capacity.div_ceil(segment_length);
    let array_len = init_segment_count * segment_length;
    let proposed = array_len.div_ceil(segment_length);
    let segment_count = if proposed < 3 { 1 } else { proposed - 2 };
    (segment_count + 2) * segment_length
}

/// `Xor8`'s fingerprint count for `n` keys: 1.23·n + 32, cut to a multiple of three.
fn xor8_len(n: u64) -> u64 {
    ((1.23 * n as f64) as u64 + 32) / 3 * 3
}

impl<K, H> Contender<K> for Xorf<H>
where
    K: PeerKey + ?Sized,
    H: KeyHash<K> + 'static,
{
    fn info(&self) -> Info {
        let (name, family, bits) = match self.kind {
            XorfKind::BinaryFuse8 => ("xorf BinaryFuse8", Family::Fuse8, 8),
            XorfKind::BinaryFuse16 => ("xorf BinaryFuse16", Family::Fuse16, 16),
            XorfKind::Xor8 => ("xorf Xor8", Family::Xor, 8),
        };
        Info {
            name: name.to_string(),
            crate_name: "xorf 0.13",
            family,
            hashing: if H::IS_BLOOMKIT {
                Hashing::Bloomkit
            } else {
                Hashing::Own(K::XORF_HASH)
            },
            note: Some(format!(
                "static: built from all keys; {bits}-bit fingerprints, no 1% knob"
            )),
        }
    }

    fn build(&self, n: u64, p: f64) -> Result<Box<dyn Subject<K>>, String> {
        Ok(match self.kind {
            XorfKind::BinaryFuse8 => Box::new(Static::<K, H, xorf::BinaryFuse8>::new(n, p)?),
            XorfKind::BinaryFuse16 => Box::new(Static::<K, H, xorf::BinaryFuse16>::new(n, p)?),
            XorfKind::Xor8 => Box::new(Static::<K, H, xorf::Xor8>::new(n, p)?),
        })
    }

    fn memory_for(&self, n: u64, _p: f64) -> Result<u64, String> {
        Ok(match self.kind {
            XorfKind::BinaryFuse8 => size_of::<xorf::BinaryFuse8>() as u64 + binary_fuse8_len(n),
            XorfKind::BinaryFuse16 => {
                size_of::<xorf::BinaryFuse16>() as u64 + 2 * binary_fuse8_len(n)
            }
            XorfKind::Xor8 => size_of::<xorf::Xor8>() as u64 + xor8_len(n),
        })
    }

    fn build_peak_bytes(&self, n: u64, _p: f64) -> u64 {
        // The collected hashes (8 bytes a key), plus xorf's scratch arrays.
        let hashes = 8 * n;
        match self.kind {
            // Fingerprints, then per slot: alone (u32), t2count (u8), t2hash (u64); per key:
            // reverse_h (u8), reverse_order (u64).
            XorfKind::BinaryFuse8 => hashes + binary_fuse8_len(n) * (1 + 4 + 1 + 8) + n * 9,
            XorfKind::BinaryFuse16 => hashes + binary_fuse8_len(n) * (2 + 4 + 1 + 8) + n * 9,
            // Fingerprints, then three blocks of 16-byte sets and three of 16-byte queue
            // entries, each as long as the whole array, and a 16-byte stack entry per key.
            XorfKind::Xor8 => hashes + xor8_len(n) * (1 + 6 * 16) + n * 16,
        }
    }
}

// ---------------------------------------------------------------------------------------
// cuckoofilter 0.5

/// The share of its slots a cuckoofilter is filled to. Its `add` evicts a random stored
/// fingerprint when it gives up (a false negative for that key), which happens more and
/// more often past about 95%; 90% leaves it room.
const CUCKOO_LOAD: f64 = 0.9;

/// A cuckoofilter with hasher `H` (std's `DefaultHasher`, or bloomkit's `StableHasher`,
/// which makes its hash exactly `bloomkit::hash`).
pub struct CuckooSubject<H>(cuckoofilter::CuckooFilter<H>);

impl<K, H> Subject<K> for CuckooSubject<H>
where
    K: Key + ?Sized,
    H: std::hash::Hasher + Default,
{
    #[inline]
    fn insert(&mut self, key: &K) -> bool {
        self.0.add(key).is_ok()
    }

    #[inline]
    fn contains(&self, key: &K) -> bool {
        self.0.contains(key)
    }

    fn memory_bytes(&self) -> usize {
        self.0.memory_usage()
    }
}

/// cuckoofilter's `CuckooFilter::with_capacity(n)`: buckets of four 8-bit fingerprints,
/// a power of two of them. The fingerprint size is fixed, so its rate (≈3% when nearly
/// full) has no knob for 1%. It takes a `Hasher` type, not a precomputed hash; given
/// bloomkit's `StableHasher` it hashes keys exactly as `bloomkit::hash` does.
pub struct Cuckoofilter<H>(PhantomData<H>);

impl<H> Cuckoofilter<H> {
    /// With hasher `H`.
    pub fn new() -> Self {
        Cuckoofilter(PhantomData)
    }
}

impl<H> Default for Cuckoofilter<H> {
    fn default() -> Self {
        Self::new()
    }
}

/// The slots (bytes) a cuckoofilter built `with_capacity(n)` has.
fn cuckoo_slots(n: u64) -> u64 {
    (n.max(1).next_power_of_two() / 4).max(1) * 4
}

impl<K, H> Contender<K> for Cuckoofilter<H>
where
    K: Key + ?Sized,
    H: std::hash::Hasher + Default + 'static,
{
    fn info(&self) -> Info {
        let bloomkit = std::any::type_name::<H>().contains("bloomkit");
        Info {
            name: "cuckoofilter CuckooFilter".to_string(),
            crate_name: "cuckoofilter 0.5",
            family: Family::Cuckoo,
            hashing: if bloomkit {
                Hashing::Bloomkit
            } else {
                Hashing::Own("std DefaultHasher (SipHash-1-3)")
            },
            note: Some(format!(
                "filled to {:.0}% of its slots; 8-bit fingerprints, no 1% knob",
                CUCKOO_LOAD * 100.0
            )),
        }
    }

    fn build(&self, n: u64, _p: f64) -> Result<Box<dyn Subject<K>>, String> {
        let n = usize::try_from(n).map_err(|e| e.to_string())?;
        Ok(Box::new(CuckooSubject(
            cuckoofilter::CuckooFilter::<H>::with_capacity(n),
        )))
    }

    fn memory_for(&self, n: u64, _p: f64) -> Result<u64, String> {
        Ok(size_of::<cuckoofilter::CuckooFilter<H>>() as u64 + cuckoo_slots(n))
    }

    fn keys_for(&self, target: Target, _p: f64) -> Result<u64, String> {
        // Its size is a power of two of slots: pick the power, then fill it to the load. (Its
        // few bytes of struct are left out, or a 64 KiB target would give half of it.)
        let slots = match target {
            Target::AtMost(bytes) => 1u64 << (63 - bytes.max(4).leading_zeros()),
            Target::AtLeast(bytes) => bytes.next_power_of_two(),
        };
        Ok((slots as f64 * CUCKOO_LOAD) as u64)
    }
}

// ---------------------------------------------------------------------------------------
// qfilter 0.3

/// A qfilter used with its own hasher.
pub struct QfilterOwn(qfilter::Filter);

/// A qfilter given `bloomkit::hash` through its fingerprint API.
pub struct QfilterBloomkit(qfilter::Filter);

impl<K: Key + ?Sized> Subject<K> for QfilterOwn {
    #[inline]
    fn insert(&mut self, key: &K) -> bool {
        self.0.insert(key).is_ok()
    }

    #[inline]
    fn contains(&self, key: &K) -> bool {
        self.0.contains(key)
    }

    fn memory_bytes(&self) -> usize {
        size_of::<qfilter::Filter>() + self.0.memory_usage()
    }
}

impl<K: Key + ?Sized> Subject<K> for QfilterBloomkit {
    #[inline]
    fn insert(&mut self, key: &K) -> bool {
        self.0
            .insert_fingerprint(false, bloomkit::hash(key))
            .is_ok()
    }

    #[inline]
    fn contains(&self, key: &K) -> bool {
        self.0.contains_fingerprint(bloomkit::hash(key))
    }

    fn supports_hash(&self) -> bool {
        true
    }

    #[inline]
    fn contains_hash(&self, hash: u64) -> bool {
        self.0.contains_fingerprint(hash)
    }

    fn memory_bytes(&self) -> usize {
        size_of::<qfilter::Filter>() + self.0.memory_usage()
    }
}

/// qfilter's `Filter::new(n, p)`: a rank-select quotient filter, a power of two of slots
/// filled up to 95%, with ⌈log2(1/p)⌉ remainder bits (7 at 1%, so at most 0.78%).
pub struct Qfilter {
    /// Given `bloomkit::hash` (`insert_fingerprint` / `contains_fingerprint`) rather than
    /// its own hasher (foldhash-portable, quality, seed 0).
    pub bloomkit_hash: bool,
}

impl<K: Key + ?Sized> Contender<K> for Qfilter {
    fn info(&self) -> Info {
        Info {
            name: "qfilter Filter".to_string(),
            crate_name: "qfilter 0.3",
            family: Family::Quotient,
            hashing: if self.bloomkit_hash {
                Hashing::Bloomkit
            } else {
                Hashing::Own("foldhash-portable (its stable hasher)")
            },
            note: None,
        }
    }

    fn build(&self, n: u64, p: f64) -> Result<Box<dyn Subject<K>>, String> {
        let filter = qfilter::Filter::new(n.max(1), p).map_err(|e| e.to_string())?;
        Ok(if self.bloomkit_hash {
            Box::new(QfilterBloomkit(filter))
        } else {
            Box::new(QfilterOwn(filter))
        })
    }

    fn memory_for(&self, n: u64, p: f64) -> Result<u64, String> {
        let specs = qfilter::filter_specs(n.max(1), p).map_err(|e| e.to_string())?;
        Ok((size_of::<qfilter::Filter>() + specs.memory_bytes_max) as u64)
    }
}

/// The fingerprint-filter peers, in report order.
pub fn contenders<K: PeerKey + ?Sized>() -> Vec<Box<dyn Contender<K>>> {
    vec![
        Box::new(Xorf::<XorfHash>::new(XorfKind::BinaryFuse8)),
        Box::new(Xorf::<BloomkitHash>::new(XorfKind::BinaryFuse8)),
        Box::new(Xorf::<XorfHash>::new(XorfKind::BinaryFuse16)),
        Box::new(Xorf::<BloomkitHash>::new(XorfKind::BinaryFuse16)),
        Box::new(Xorf::<XorfHash>::new(XorfKind::Xor8)),
        Box::new(Xorf::<BloomkitHash>::new(XorfKind::Xor8)),
        Box::new(Cuckoofilter::<std::collections::hash_map::DefaultHasher>::new()),
        Box::new(Cuckoofilter::<bloomkit::StableHasher>::new()),
        Box::new(Qfilter {
            bloomkit_hash: false,
        }),
        Box::new(Qfilter {
            bloomkit_hash: true,
        }),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xorf_size_formulas_match_the_crate() {
        for n in [2u64, 100, 1000, 52_000, 300_000, 2_000_000] {
            let keys: Vec<u64> = (0..n).map(crate::keys::int_key).collect();
            let fuse = xorf::BinaryFuse8::try_from(&keys).unwrap();
            assert_eq!(fuse.len() as u64, binary_fuse8_len(n), "BinaryFuse8 n={n}");
            let fuse16 = xorf::BinaryFuse16::try_from(&keys).unwrap();
            assert_eq!(
                fuse16.len() as u64,
                binary_fuse8_len(n),
                "BinaryFuse16 n={n}"
            );
            // bloomkit's sizing is the same rule: the same array for the same keys.
            let ours = bloomkit::BinaryFuseFilter::planned_bits(n, 8).unwrap() / 8;
            assert_eq!(ours, binary_fuse8_len(n), "BinaryFuseFilter n={n}");
            if n >= 100 {
                let xor = xorf::Xor8::from(&keys);
                assert_eq!(xor.len() as u64, xor8_len(n), "Xor8 n={n}");
            }
        }
    }

    #[test]
    fn cuckoo_sizes_fill_a_power_of_two() {
        let c = Cuckoofilter::<std::collections::hash_map::DefaultHasher>::new();
        let n = Contender::<u64>::keys_for(&c, Target::AtMost(64 << 10), 0.01).unwrap();
        assert_eq!(cuckoo_slots(n), 64 << 10);
        let n = Contender::<u64>::keys_for(&c, Target::AtLeast(512 << 20), 0.01).unwrap();
        assert_eq!(cuckoo_slots(n), 512 << 20);
    }
}
