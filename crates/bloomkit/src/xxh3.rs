//! XXH3-64 of `bytes ++ [0xff]`, computed without copying the bytes.
//!
//! bloomkit's key hash of a string is XXH3-64 over the string's bytes followed by one `0xff`
//! byte (what `impl Hash for str` writes). Building that feed in a buffer costs more than the
//! hash itself: a variable-length copy, then XXH3 reading back bytes it just stored (a
//! store-forwarding stall). XXH3 only ever reads a short input at a few fixed places, from
//! the start and from the end, so this module reads those places straight from the caller's
//! bytes, supplying the final `0xff` in a register where a read covers it.
//!
//! It covers feeds of up to 240 bytes (XXH3's "short" and "mid-size" inputs, all of which use
//! the default secret with the seed mixed in); longer feeds go through the `xxhash-rust`
//! streaming state, where the copy is amortised. Tests compare every length from 0 to 300
//! against `xxhash-rust` under many seeds: the values are XXH3's, bit for bit.
//!
//! The constants are XXH3's, from its specification.

use xxhash_rust::xxh3::Xxh3;

const PRIME64_1: u64 = 0x9E37_79B1_85EB_CA87;
const PRIME64_2: u64 = 0xC2B2_AE3D_27D4_EB4F;
const PRIME64_3: u64 = 0x1656_67B1_9E37_79F9;
const PRIME_MX1: u64 = 0x1656_6791_9E37_79F9;
const PRIME_MX2: u64 = 0x9FB2_1C65_1E98_DF25;

/// XXH3's default secret.
const SECRET: [u8; 192] = [
    0xb8, 0xfe, 0x6c, 0x39, 0x23, 0xa4, 0x4b, 0xbe, 0x7c, 0x01, 0x81, 0x2c, 0xf7, 0x21, 0xad, 0x1c,
    0xde, 0xd4, 0x6d, 0xe9, 0x83, 0x90, 0x97, 0xdb, 0x72, 0x40, 0xa4, 0xa4, 0xb7, 0xb3, 0x67, 0x1f,
    0xcb, 0x79, 0xe6, 0x4e, 0xcc, 0xc0, 0xe5, 0x78, 0x82, 0x5a, 0xd0, 0x7d, 0xcc, 0xff, 0x72, 0x21,
    0xb8, 0x08, 0x46, 0x74, 0xf7, 0x43, 0x24, 0x8e, 0xe0, 0x35, 0x90, 0xe6, 0x81, 0x3a, 0x26, 0x4c,
    0x3c, 0x28, 0x52, 0xbb, 0x91, 0xc3, 0x00, 0xcb, 0x88, 0xd0, 0x65, 0x8b, 0x1b, 0x53, 0x2e, 0xa3,
    0x71, 0x64, 0x48, 0x97, 0xa2, 0x0d, 0xf9, 0x4e, 0x38, 0x19, 0xef, 0x46, 0xa9, 0xde, 0xac, 0xd8,
    0xa8, 0xfa, 0x76, 0x3f, 0xe3, 0x9c, 0x34, 0x3f, 0xf9, 0xdc, 0xbb, 0xc7, 0xc7, 0x0b, 0x4f, 0x1d,
    0x8a, 0x51, 0xe0, 0x4b, 0xcd, 0xb4, 0x59, 0x31, 0xc8, 0x9f, 0x7e, 0xc9, 0xd9, 0x78, 0x73, 0x64,
    0xea, 0xc5, 0xac, 0x83, 0x34, 0xd3, 0xeb, 0xc3, 0xc5, 0x81, 0xa0, 0xff, 0xfa, 0x13, 0x63, 0xeb,
    0x17, 0x0d, 0xdd, 0x51, 0xb7, 0xf0, 0xda, 0x49, 0xd3, 0x16, 0x55, 0x26, 0x29, 0xd4, 0x68, 0x9e,
    0x2b, 0x16, 0xbe, 0x58, 0x7d, 0x47, 0xa1, 0xfc, 0x8f, 0xf8, 0xb8, 0xd1, 0x7a, 0xd0, 0x31, 0xce,
    0x45, 0xcb, 0x3a, 0x8f, 0x95, 0x16, 0x04, 0x28, 0xaf, 0xd7, 0xfb, 0xca, 0xbb, 0x4b, 0x40, 0x7e,
];

#[inline(always)]
fn secret64(offset: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&SECRET[offset..offset + 8]);
    u64::from_le_bytes(b)
}

#[inline(always)]
fn secret32(offset: usize) -> u64 {
    let mut b = [0u8; 4];
    b.copy_from_slice(&SECRET[offset..offset + 4]);
    u32::from_le_bytes(b) as u64
}

/// The feed `bytes ++ [0xff]`, read where XXH3 reads it. `len` is the feed's length.
struct Feed<'a> {
    bytes: &'a [u8],
    len: usize,
}

impl Feed<'_> {
    #[inline(always)]
    fn byte(&self, i: usize) -> u64 {
        self.bytes.get(i).copied().unwrap_or(0xff) as u64
    }

    /// The little-endian u64 at `offset` (which XXH3 keeps within the feed).
    #[inline(always)]
    fn read64(&self, offset: usize) -> u64 {
        let n = self.bytes.len();
        if let Some(b) = self.bytes.get(offset..offset + 8) {
            let mut a = [0u8; 8];
            a.copy_from_slice(b);
            u64::from_le_bytes(a)
        } else if n >= 8 {
            // The only read that reaches the 0xff is the last word of the feed (offset n−7):
            // the word ending at n, shifted down one byte, with 0xff on top.
            let mut a = [0u8; 8];
            a.copy_from_slice(&self.bytes[n - 8..n]);
            (u64::from_le_bytes(a) >> 8) | (0xff << 56)
        } else {
            (0..8).fold(0, |acc, i| acc | self.byte(offset + i) << (8 * i))
        }
    }

    #[inline(always)]
    fn read32(&self, offset: usize) -> u64 {
        let n = self.bytes.len();
        if let Some(b) = self.bytes.get(offset..offset + 4) {
            let mut a = [0u8; 4];
            a.copy_from_slice(b);
            u32::from_le_bytes(a) as u64
        } else if n >= 4 {
            let mut a = [0u8; 4];
            a.copy_from_slice(&self.bytes[n - 4..n]);
            ((u32::from_le_bytes(a) >> 8) | (0xff << 24)) as u64
        } else {
            (0..4).fold(0, |acc, i| acc | self.byte(offset + i) << (8 * i))
        }
    }
}

#[inline(always)]
fn mul128_fold64(a: u64, b: u64) -> u64 {
    let product = a as u128 * b as u128;
    (product as u64) ^ ((product >> 64) as u64)
}

#[inline(always)]
fn avalanche(mut h: u64) -> u64 {
    h ^= h >> 37;
    h = h.wrapping_mul(PRIME_MX1);
    h ^ (h >> 32)
}

#[inline(always)]
fn xxh64_avalanche(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(PRIME64_2);
    h ^= h >> 29;
    h = h.wrapping_mul(PRIME64_3);
    h ^ (h >> 32)
}

#[inline(always)]
fn rrmxmx(mut h: u64, len: u64) -> u64 {
    h ^= h.rotate_left(49) ^ h.rotate_left(24);
    h = h.wrapping_mul(PRIME_MX2);
    h ^= (h >> 35).wrapping_add(len);
    h = h.wrapping_mul(PRIME_MX2);
    h ^ (h >> 28)
}

#[inline(always)]
fn mix16(feed: &Feed<'_>, at: usize, secret: usize, seed: u64) -> u64 {
    let lo = feed.read64(at) ^ secret64(secret).wrapping_add(seed);
    let hi = feed.read64(at + 8) ^ secret64(secret + 8).wrapping_sub(seed);
    mul128_fold64(lo, hi)
}

/// XXH3-64 with `seed` of `bytes` followed by one `0xff` byte.
///
/// Strings of 16 to 127 bytes (feeds of 17 to 128, XXH3's commonest key sizes) take an
/// inlined path that reads straight from `bytes`; the rest call [`str_feed_any`].
#[inline(always)]
pub(crate) fn xxh3_64_str_feed(bytes: &[u8], seed: u64) -> u64 {
    let n = bytes.len();
    if (16..128).contains(&n) {
        str_feed_17_to_128(bytes, seed)
    } else {
        str_feed_any(bytes, seed)
    }
}

/// XXH3-64 with `seed` of the eight little-endian bytes of `value`: the feed of an integer
/// key ([`crate::Key`]), in a few register operations.
#[inline(always)]
pub(crate) fn xxh3_64_u64(value: u64, seed: u64) -> u64 {
    // XXH3's 4-to-8-byte case at length 8: its two 32-bit reads are the value's halves, and
    // `low << 32 | high` is the value rotated by 32.
    let seed = seed ^ (((seed as u32).swap_bytes() as u64) << 32);
    let bitflip = (secret64(8) ^ secret64(16)).wrapping_sub(seed);
    rrmxmx(value.rotate_left(32) ^ bitflip, 8)
}

/// The little-endian u64 at `at` of `bytes`; `at + 8 <= bytes.len()`.
#[inline(always)]
fn le64(bytes: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(a)
}

/// XXH3's 17-to-128-byte case for the feed `bytes ++ [0xff]`, `16 <= bytes.len() < 128`.
///
/// XXH3 reads this feed in 16-byte pairs from the front and from the back. Every read lies
/// within `bytes` but the feed's last eight bytes, which are `bytes`' last eight shifted
/// down a byte with the 0xff on top.
#[inline(always)]
fn str_feed_17_to_128(bytes: &[u8], seed: u64) -> u64 {
    let n = bytes.len();
    let len = n + 1;
    let mix = |lo: u64, hi: u64, secret: usize| {
        mul128_fold64(
            lo ^ secret64(secret).wrapping_add(seed),
            hi ^ secret64(secret + 8).wrapping_sub(seed),
        )
    };
    let last = (le64(bytes, n - 8) >> 8) | (0xff << 56);
    let mut acc = (len as u64).wrapping_mul(PRIME64_1);
    if len > 32 {
        if len > 64 {
            if len > 96 {
                acc = acc.wrapping_add(mix(le64(bytes, 48), le64(bytes, 56), 96));
                acc = acc.wrapping_add(mix(le64(bytes, len - 64), le64(bytes, len - 56), 112));
            }
            acc = acc.wrapping_add(mix(le64(bytes, 32), le64(bytes, 40), 64));
            acc = acc.wrapping_add(mix(le64(bytes, len - 48), le64(bytes, len - 40), 80));
        }
        acc = acc.wrapping_add(mix(le64(bytes, 16), le64(bytes, 24), 32));
        acc = acc.wrapping_add(mix(le64(bytes, len - 32), le64(bytes, len - 24), 48));
    }
    acc = acc.wrapping_add(mix(le64(bytes, 0), le64(bytes, 8), 0));
    acc = acc.wrapping_add(mix(le64(bytes, len - 16), last, 16));
    avalanche(acc)
}

/// [`xxh3_64_str_feed`] for the lengths its direct path does not take, through the general
/// reader.
#[inline(never)]
fn str_feed_any(bytes: &[u8], seed: u64) -> u64 {
    let feed = Feed {
        bytes,
        len: bytes.len() + 1,
    };
    let len = feed.len;
    let len64 = len as u64;
    match len {
        1..=3 => {
            let c1 = feed.byte(0);
            let c2 = feed.byte(len >> 1);
            let c3 = feed.byte(len - 1);
            let combined = (c1 << 16) | (c2 << 24) | c3 | (len64 << 8);
            let bitflip = (secret32(0) ^ secret32(4)).wrapping_add(seed);
            xxh64_avalanche(combined ^ bitflip)
        }
        4..=8 => {
            let seed = seed ^ (((seed as u32).swap_bytes() as u64) << 32);
            let input1 = feed.read32(0);
            let input2 = feed.read32(len - 4);
            let bitflip = (secret64(8) ^ secret64(16)).wrapping_sub(seed);
            let input64 = input2.wrapping_add(input1 << 32);
            rrmxmx(input64 ^ bitflip, len64)
        }
        9..=16 => {
            let bitflip1 = (secret64(24) ^ secret64(32)).wrapping_add(seed);
            let bitflip2 = (secret64(40) ^ secret64(48)).wrapping_sub(seed);
            let lo = feed.read64(0) ^ bitflip1;
            let hi = feed.read64(len - 8) ^ bitflip2;
            let acc = len64
                .wrapping_add(lo.swap_bytes())
                .wrapping_add(hi)
                .wrapping_add(mul128_fold64(lo, hi));
            avalanche(acc)
        }
        // Not reached: `xxh3_64_str_feed` sends these lengths to the direct path. The arm keeps
        // the match total without a second copy of that case.
        17..=128 => str_feed_17_to_128(bytes, seed),
        129..=240 => {
            let mut acc = len64.wrapping_mul(PRIME64_1);
            for i in 0..8 {
                acc = acc.wrapping_add(mix16(&feed, 16 * i, 16 * i, seed));
            }
            acc = avalanche(acc);
            for i in 8..len / 16 {
                acc = acc.wrapping_add(mix16(&feed, 16 * i, 16 * (i - 8) + 3, seed));
            }
            acc = acc.wrapping_add(mix16(&feed, len - 16, 136 - 17, seed));
            avalanche(acc)
        }
        _ => {
            // Long feeds: the streaming state, where one extra byte of copying is noise.
            let mut state = Xxh3::with_seed(seed);
            state.update(bytes);
            state.update(&[0xff]);
            state.digest()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use xxhash_rust::xxh3::xxh3_64_with_seed;

    #[test]
    fn equals_xxh3_at_every_length_and_many_seeds() {
        let data: Vec<u8> = (0..400u32)
            .map(|i| (i.wrapping_mul(167) >> 3) as u8)
            .collect();
        let seeds = [
            0,
            1,
            crate::DEFAULT_SEED,
            u64::MAX,
            0x8000_0000_0000_0000,
            0x0123_4567_89ab_cdef,
        ];
        for len in 0..=300 {
            let mut feed = data[..len].to_vec();
            feed.push(0xff);
            for &seed in &seeds {
                assert_eq!(
                    xxh3_64_str_feed(&data[..len], seed),
                    xxh3_64_with_seed(&feed, seed),
                    "len {len}, seed {seed:#x}"
                );
            }
        }
    }

    #[test]
    fn integer_feed_equals_xxh3_of_its_bytes() {
        let mut v = 0x0123_4567_89ab_cdef_u64;
        for i in 0..2000u64 {
            for seed in [0, 1, crate::DEFAULT_SEED, u64::MAX, i.wrapping_mul(0x9e37)] {
                assert_eq!(
                    xxh3_64_u64(v, seed),
                    xxh3_64_with_seed(&v.to_le_bytes(), seed),
                    "{v:#x}, seed {seed:#x}"
                );
            }
            v = v.rotate_left(7).wrapping_mul(0x2545_f491_4f6c_dd1d) ^ i;
        }
        for v in [0, 1, u64::MAX, 1 << 63, u32::MAX as u64] {
            assert_eq!(xxh3_64_u64(v, 7), xxh3_64_with_seed(&v.to_le_bytes(), 7));
        }
    }

    #[test]
    fn high_bytes_and_all_ff_inputs() {
        for len in 0..=250 {
            for fill in [0x00u8, 0x80, 0xfe, 0xff] {
                let bytes = vec![fill; len];
                let mut feed = bytes.clone();
                feed.push(0xff);
                assert_eq!(
                    xxh3_64_str_feed(&bytes, 42),
                    xxh3_64_with_seed(&feed, 42),
                    "len {len}, fill {fill:#x}"
                );
            }
        }
    }
}
