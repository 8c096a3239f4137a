//! [`RedisBloomChain`] (kind 10) and [`RedisCuckooFilter`] (kind 11) in bloomkit's file
//! format, hash algorithm 3 (`docs/FORMAT.md`).
//!
//! Decoding trusts nothing: the link or sub-filter count is bounded and checked against the
//! payload length before the descriptors are read, every field is checked as RedisBloom's
//! own loader checks it, the payload length must be exactly what the descriptors imply, and
//! storage grows only as words arrive.

use std::io::Read;

use super::chain::{RedisBloomChain, RedisBloomLink, MAX_LINKS};
use super::cuckoo::{RedisCuckooFilter, SubFilter, MAX_FILTERS};
use super::REDISBLOOM_HASH_ALGORITHM;
use crate::error::{Error, Result};
use crate::format::{self, FilterKind, FormatReader, Header, Persist};
use crate::key::KeyHasher;

format::format_methods!(
    RedisBloomChain,
    "RedisBloom Bloom chain",
    to_bytes: [],
    write_to: [],
    from_bytes: [
        ///
        /// # Examples
        ///
        /// ```
        /// use bloomkit::redisbloom::RedisBloomChain;
        /// let mut f = RedisBloomChain::new(100, 0.01, 2, false)?;
        /// f.insert(b"a")?;
        /// let g = RedisBloomChain::from_bytes(&f.to_bytes())?;
        /// assert_eq!(f, g);
        /// assert!(g.contains(b"a"));
        /// # Ok::<(), bloomkit::Error>(())
        /// ```
    ],
    read_from: [],
);

format::format_methods!(
    RedisCuckooFilter,
    "RedisBloom cuckoo filter",
    to_bytes: [],
    write_to: [],
    from_bytes: [],
    read_from: [],
);

/// Words of one link's descriptor: entries, error, bits per entry, probes, n2, items, bytes.
const LINK_WORDS: u64 = 7;

/// The seed field of these kinds: RedisBloom's seeds are part of its algorithm.
fn fixed_hasher() -> KeyHasher {
    KeyHasher::new(0)
}

fn words_of(bytes: &[u8]) -> impl Iterator<Item = u64> + '_ {
    bytes.chunks(8).map(|c| {
        let mut w = [0u8; 8];
        w[..c.len()].copy_from_slice(c);
        u64::from_le_bytes(w)
    })
}

/// Reads `num_bytes` bytes of payload (whole words; the bytes after `num_bytes` in the last
/// word must be zero), growing storage only as words arrive.
fn read_bytes<R: Read>(r: &mut FormatReader<R>, num_bytes: u64) -> Result<Vec<u8>> {
    let words = r.read_word_vec(num_bytes.div_ceil(8))?;
    let mut out = Vec::with_capacity(words.len() * 8);
    for w in &words {
        out.extend_from_slice(&w.to_le_bytes());
    }
    if out[num_bytes as usize..].iter().any(|&b| b != 0) {
        return Err(Error::corrupt(
            "padding bytes after a sub-filter are not zero",
        ));
    }
    out.truncate(num_bytes as usize);
    Ok(out)
}

fn check_algorithm(header: &Header) -> Result<()> {
    // `format` pairs code 3 with these kinds only; the seed is always written as 0.
    if header.hasher.seed() != 0 {
        return Err(Error::corrupt(format!(
            "a RedisBloom filter's seed field is 0, not {:#x}",
            header.hasher.seed()
        )));
    }
    Ok(())
}

impl Persist for RedisBloomChain {
    const KIND: FilterKind = FilterKind::RedisBloomChain;

    fn key_hasher(&self) -> KeyHasher {
        fixed_hasher()
    }

    fn hash_algorithm(&self) -> u16 {
        REDISBLOOM_HASH_ALGORITHM
    }

    fn item_count(&self) -> u64 {
        self.size
    }

    fn params(&self) -> Vec<u8> {
        let mut p = self.options.to_le_bytes().to_vec();
        p.extend_from_slice(&self.growth.to_le_bytes());
        p
    }

    fn payload_words(&self) -> impl Iterator<Item = u64> + '_ {
        let descriptors = self.links.iter().flat_map(|l| {
            [
                l.entries,
                l.error.to_bits(),
                l.bpe.to_bits(),
                u64::from(l.hashes),
                u64::from(l.n2),
                l.size,
                l.bytes.len() as u64,
            ]
        });
        std::iter::once(self.links.len() as u64)
            .chain(descriptors)
            .chain(self.links.iter().flat_map(|l| words_of(&l.bytes)))
    }

    fn payload_words_len(&self) -> u64 {
        1 + LINK_WORDS * self.links.len() as u64
            + self
                .links
                .iter()
                .map(|l| (l.bytes.len() as u64).div_ceil(8))
                .sum::<u64>()
    }

    fn decode<R: Read>(header: &Header, r: &mut FormatReader<R>) -> Result<Self> {
        check_algorithm(header)?;
        let mut p = header.params();
        let options = p.u32()?;
        let growth = p.u32()?;
        p.finish()?;
        let len = header.payload_len;
        if len == 0 || !len.is_multiple_of(8) {
            return Err(Error::corrupt(format!(
                "a payload of {len} bytes (a positive multiple of 8 expected)"
            )));
        }
        let n = r.read_word_vec(1)?[0];
        if n == 0 || n > MAX_LINKS as u64 || 8 * (1 + LINK_WORDS * n) > len {
            return Err(Error::corrupt(format!(
                "{n} links (1 to {MAX_LINKS}, whose descriptors fit the payload, expected)"
            )));
        }
        let d = r.read_word_vec(LINK_WORDS * n)?;
        let mut links = Vec::with_capacity(n as usize);
        let mut lens = Vec::with_capacity(n as usize);
        let mut total = 1 + LINK_WORDS * n;
        for w in d.chunks_exact(LINK_WORDS as usize) {
            lens.push(w[6]);
            total = total
                .checked_add(w[6] / 8)
                .ok_or_else(|| Error::corrupt("the links' sizes overflow"))?;
            links.push(RedisBloomLink {
                entries: w[0],
                error: f64::from_bits(w[1]),
                bpe: f64::from_bits(w[2]),
                hashes: u32::try_from(w[3]).unwrap_or(u32::MAX),
                n2: u8::try_from(w[4]).unwrap_or(u8::MAX),
                size: w[5],
                bytes: Vec::new(),
            });
        }
        let mut chain = RedisBloomChain {
            size: header.item_count,
            options,
            growth,
            links,
        };
        chain.validate_fields(&lens)?;
        header.expect_payload_len(
            total
                .checked_mul(8)
                .ok_or_else(|| Error::corrupt("the links' sizes overflow"))?,
        )?;
        for (link, &bytes) in chain.links.iter_mut().zip(&lens) {
            link.bytes = read_bytes(r, bytes)?;
        }
        Ok(chain)
    }
}

impl Persist for RedisCuckooFilter {
    const KIND: FilterKind = FilterKind::RedisCuckoo;

    fn key_hasher(&self) -> KeyHasher {
        fixed_hasher()
    }

    fn hash_algorithm(&self) -> u16 {
        REDISBLOOM_HASH_ALGORITHM
    }

    fn item_count(&self) -> u64 {
        self.num_items
    }

    fn params(&self) -> Vec<u8> {
        let mut p = self.num_buckets.to_le_bytes().to_vec();
        for v in [self.bucket_size, self.max_iterations, self.expansion, 0] {
            p.extend_from_slice(&v.to_le_bytes());
        }
        p
    }

    fn payload_words(&self) -> impl Iterator<Item = u64> + '_ {
        [self.filters.len() as u64, self.num_deletes]
            .into_iter()
            .chain(self.filters.iter().flat_map(|f| words_of(&f.data)))
    }

    fn payload_words_len(&self) -> u64 {
        2 + self
            .filters
            .iter()
            .map(|f| (f.data.len() as u64).div_ceil(8))
            .sum::<u64>()
    }

    fn decode<R: Read>(header: &Header, r: &mut FormatReader<R>) -> Result<Self> {
        check_algorithm(header)?;
        let mut p = header.params();
        let num_buckets = p.u64()?;
        let bucket_size = p.u16()?;
        let max_iterations = p.u16()?;
        let expansion = p.u16()?;
        if p.u16()? != 0 {
            return Err(Error::corrupt("reserved cuckoo parameter bits are set"));
        }
        p.finish()?;
        if bucket_size == 0 || bucket_size > 255 || !num_buckets.is_power_of_two() {
            return Err(Error::corrupt(format!(
                "bucket size {bucket_size} (1 to 255) and {num_buckets} buckets (a power of \
                 two) expected"
            )));
        }
        if header.payload_len < 16 {
            return Err(Error::corrupt("the payload is shorter than its two counts"));
        }
        let head = r.read_word_vec(2)?;
        let (num_filters, num_deletes) = (head[0], head[1]);
        if num_filters == 0 || num_filters > MAX_FILTERS {
            return Err(Error::corrupt(format!(
                "{num_filters} sub-filters (1 to {MAX_FILTERS} expected)"
            )));
        }
        let mut sizes = Vec::new();
        let mut total = 2u64;
        for i in 0..num_filters {
            let n = RedisCuckooFilter::sub_filter_buckets(num_buckets, expansion, bucket_size, i)
                .ok_or_else(|| Error::corrupt(format!("sub-filter {i}'s size overflows")))?;
            let bytes = n * u64::from(bucket_size);
            total = total
                .checked_add(bytes.div_ceil(8))
                .ok_or_else(|| Error::corrupt("the sub-filters' sizes overflow"))?;
            if total.saturating_mul(8) > header.payload_len {
                break;
            }
            sizes.push((n, bytes));
        }
        header.expect_payload_len(total.saturating_mul(8))?;
        let mut filters = Vec::with_capacity(sizes.len());
        for (n, bytes) in sizes {
            filters.push(SubFilter {
                num_buckets: n,
                data: read_bytes(r, bytes)?,
            });
        }
        let cf = RedisCuckooFilter {
            num_buckets,
            num_items: header.item_count,
            num_deletes,
            bucket_size,
            max_iterations,
            expansion,
            filters,
        };
        cf.validate()?;
        Ok(cf)
    }
}
