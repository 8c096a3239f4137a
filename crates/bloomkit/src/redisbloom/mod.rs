//! RedisBloom's filters, bit for bit: its hashing, its scalable Bloom chain (`MBbloom--`) and
//! its cuckoo filter (`MBbloomCF`), and decoders for what RedisBloom hands out (a `DUMP`
//! payload, an RDB value, a `SCANDUMP` sequence).
//!
//! A filter imported from RedisBloom can only keep answering if its keys are hashed and
//! probed exactly as RedisBloom did, so these types carry RedisBloom's rules rather than
//! bloomkit's (file format: hash algorithm 3, kinds 10 and 11; `docs/FORMAT.md`):
//!
//! * the hash is MurmurHash64A ([`murmur64a`]);
//! * a Bloom link probes bits `(a + i·b) mod m` for `i` in `0..k`, with
//!   `a = murmur64a(item, 0xc6a4a7935bd1e995)` and `b = murmur64a(item, a)`
//!   ([`bloom_hash_pair`]); `m` is the link's bit count, or `2^n2` when the link was sized
//!   to a power of two;
//! * a cuckoo key is `h = murmur64a(item, 0)` ([`cuckoo_hash`]): fingerprint `h mod 255 + 1`,
//!   buckets `h mod n` and `(h ^ fp·0x5bd1e995) mod n` in each sub-filter of `n` buckets.
//!
//! Because a Bloom link needs two hashes of the item's bytes (the second is seeded by the
//! first), [`RedisBloomChain`] is asked by item, not by a precomputed 64-bit hash, and does
//! not implement [`crate::Filter`]. Items are byte strings, as Redis sees them.
//!
//! * [`RedisBloomChain`] (`chain.rs`): the `BF.*` chain; inserts grow it as RedisBloom does.
//! * [`RedisCuckooFilter`] (`cuckoo.rs`): the `CF.*` filter; add, add-unique, count, delete.
//! * `import.rs`: [`RedisBloomValue::from_dump`], [`RedisBloomChain::from_rdb`] and its
//!   cuckoo twin. Input is untrusted: every count is checked against the bytes that are
//!   actually there before anything is sized by it.
//! * `scandump.rs`: [`ScandumpLoader`], a filter arriving in `SCANDUMP` chunks one at a time
//!   (a host's `LOADCHUNK`), and `from_scandump` over a whole sequence.
//! * `persist.rs`: both types in bloomkit's own file format.

mod chain;
mod cuckoo;
mod import;
pub mod payload;
mod persist;
mod scandump;

pub use chain::{RedisBloomChain, RedisBloomLink};
pub use cuckoo::{RedisCuckooFilter, RedisCuckooInsert};
pub use import::{crc64_redis, RdbFields, RedisBloomValue, BF_TYPE_NAME, CF_TYPE_NAME};
pub use scandump::ScandumpLoader;

/// The hash algorithm code of RedisBloom's hashing in bloomkit's file header.
pub const REDISBLOOM_HASH_ALGORITHM: u16 = 3;

/// The seed of a Bloom item's first hash in RedisBloom (its 64-bit hashing mode).
pub const BLOOM_SEED: u64 = 0xc6a4_a793_5bd1_e995;

const MURMUR_M: u64 = 0xc6a4_a793_5bd1_e995;
const MURMUR_R: u32 = 47;

/// Austin Appleby's MurmurHash64A of `bytes` under `seed`, as RedisBloom computes it (the
/// 8-byte blocks read little-endian, as on the x86-64 and ARM64 machines Redis runs on).
///
/// # Examples
///
/// ```
/// use bloomkit::redisbloom::murmur64a;
/// assert_eq!(murmur64a(b"", 0), 0);
/// assert_ne!(murmur64a(b"a", 0), murmur64a(b"b", 0));
/// ```
pub fn murmur64a(bytes: &[u8], seed: u64) -> u64 {
    let mut h = seed ^ (bytes.len() as u64).wrapping_mul(MURMUR_M);
    let mut blocks = bytes.chunks_exact(8);
    for block in &mut blocks {
        let mut k = u64::from_le_bytes(block.try_into().expect("8-byte block"));
        k = k.wrapping_mul(MURMUR_M);
        k ^= k >> MURMUR_R;
        k = k.wrapping_mul(MURMUR_M);
        h ^= k;
        h = h.wrapping_mul(MURMUR_M);
    }
    let tail = blocks.remainder();
    if !tail.is_empty() {
        // The tail's bytes, the first lowest, XORed in, then one multiply.
        let mut t = 0u64;
        for (i, &b) in tail.iter().enumerate() {
            t |= u64::from(b) << (8 * i);
        }
        h ^= t;
        h = h.wrapping_mul(MURMUR_M);
    }
    h ^= h >> MURMUR_R;
    h = h.wrapping_mul(MURMUR_M);
    h ^= h >> MURMUR_R;
    h
}

/// The two hashes a RedisBloom Bloom link probes an item with: `(a, b)`, where
/// `a = murmur64a(item, BLOOM_SEED)` and `b = murmur64a(item, a)`.
pub fn bloom_hash_pair(item: &[u8]) -> (u64, u64) {
    let a = murmur64a(item, BLOOM_SEED);
    (a, murmur64a(item, a))
}

/// The hash a RedisBloom cuckoo filter places an item by: `murmur64a(item, 0)`.
pub fn cuckoo_hash(item: &[u8]) -> u64 {
    murmur64a(item, 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `tests/it/redisbloom.rs` checks hashes against values a real RedisBloom produced; these
    /// only check the shape.
    #[test]
    fn empty_input_with_zero_seed_hashes_to_zero() {
        assert_eq!(murmur64a(b"", 0), 0);
    }

    #[test]
    fn tail_bytes_and_blocks_all_matter() {
        let base = b"0123456789abcdef!".to_vec();
        let h = murmur64a(&base, 1);
        for i in 0..base.len() {
            let mut v = base.clone();
            v[i] ^= 1;
            assert_ne!(murmur64a(&v, 1), h, "byte {i}");
        }
    }
}

/// Writes the golden `.bkf` files of kinds 10 and 11 from the DUMP payloads a real
/// RedisBloom wrote (`cargo test -p bloomkit --lib redisbloom::write_golden -- --ignored`);
/// `tests/it/redisbloom.rs` then checks they keep loading.
#[cfg(test)]
#[test]
#[ignore]
fn write_golden() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/redisbloom");
    for name in ["bf-layers", "bf-nonscaling", "cf-grown"] {
        let dump = std::fs::read(dir.join(format!("{name}.dump"))).unwrap();
        let bytes = match RedisBloomValue::from_dump(&dump).unwrap() {
            RedisBloomValue::Bloom(b) => b.to_bytes(),
            RedisBloomValue::Cuckoo(c) => c.to_bytes(),
        };
        std::fs::write(dir.join(format!("{name}.bkf")), bytes).unwrap();
    }
}
