//! RedisBloom's `SCANDUMP` chunks, put back together: the header chunk first (its layout is
//! RedisBloom's packed C structs), then the data chunks in the iterator order `SCANDUMP`
//! gave them.
//!
//! [`ScandumpLoader`] takes one chunk at a time, as a host's `BF.LOADCHUNK`/`CF.LOADCHUNK`
//! receives them; `from_scandump` on either type runs it over a whole sequence. The header's
//! fields are all checked before any data arrives, and the filter's bits grow only as chunks
//! come, so a header that claims gigabytes costs nothing until they are sent.

use super::chain::{RedisBloomChain, RedisBloomLink, MAX_LINKS};
use super::cuckoo::{RedisCuckooFilter, SubFilter, MAX_FILTERS};
use super::import::{RedisBloomValue, BF_TYPE_NAME, CF_TYPE_NAME};
use crate::error::{Error, Result};

/// `BF.SCANDUMP`'s header: item count (u64), link count (u32), options (u32), expansion
/// (u32), then per link 53 bytes.
const BF_HEADER_LEN: usize = 20;
/// One link in the header: bytes, bits, items (u64 each), error, bits per entry (f64 each),
/// probes (u32), entries (u64), n2 (u8).
const BF_LINK_LEN: usize = 53;
/// `CF.SCANDUMP`'s header: items, buckets, deletes, sub-filters (u64 each), bucket size,
/// max iterations, expansion (u16 each).
const CF_HEADER_LEN: usize = 38;

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes(b[at..at + 2].try_into().expect("2 bytes"))
}

/// A RedisBloom filter arriving in `SCANDUMP` chunks.
///
/// # Examples
///
/// ```
/// use bloomkit::redisbloom::ScandumpLoader;
///
/// // A header that claims one link of 2^40 bytes is accepted (nothing is allocated for it)
/// // but can never complete without the data.
/// let mut header = [0u8; 20 + 53];
/// header[8] = 1; // one link
/// header[12] = 5; // options: not rounded, 64-bit hashing
/// header[16] = 2; // expansion
/// header[20..28].copy_from_slice(&(1u64 << 40).to_le_bytes()); // bytes
/// header[28..36].copy_from_slice(&(1u64 << 43).to_le_bytes()); // bits
/// header[44..52].copy_from_slice(&0.01f64.to_bits().to_le_bytes()); // error
/// let bpe = -(0.01f64.ln()) / 0.480453013918201;
/// header[52..60].copy_from_slice(&bpe.to_bits().to_le_bytes());
/// header[60..64].copy_from_slice(&7u32.to_le_bytes()); // probes
/// header[64..72].copy_from_slice(&100u64.to_le_bytes()); // entries
/// let loader = ScandumpLoader::bloom(&header)?;
/// assert_eq!(loader.expected_bytes(), 1 << 40);
/// assert_eq!(loader.received_bytes(), 0);
/// assert!(loader.finish().is_err());
/// # Ok::<(), bloomkit::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct ScandumpLoader {
    value: RedisBloomValue,
    /// Bytes each link or sub-filter must receive, in order.
    sizes: Vec<u64>,
    /// Bytes received so far, over all parts.
    received: u64,
    /// The part the next chunk goes to.
    part: usize,
}

impl ScandumpLoader {
    /// Starts a `MBbloom--` key from `BF.SCANDUMP`'s header chunk (iterator 1).
    ///
    /// # Errors
    ///
    /// [`Error::Corrupt`] for a header whose length is not 20 + 53 per link it claims, or any
    /// field RedisBloom's own loader would refuse (and 32-bit hashing, which bloomkit does not
    /// import).
    pub fn bloom(header: &[u8]) -> Result<Self> {
        if header.len() < BF_HEADER_LEN
            || !(header.len() - BF_HEADER_LEN).is_multiple_of(BF_LINK_LEN)
        {
            return Err(Error::corrupt(format!(
                "a {BF_TYPE_NAME} SCANDUMP header of {} bytes (20 + 53 per link expected)",
                header.len()
            )));
        }
        let room = (header.len() - BF_HEADER_LEN) / BF_LINK_LEN;
        let nfilters = u32_at(header, 8) as usize;
        if nfilters == 0 || nfilters != room || nfilters > MAX_LINKS {
            return Err(Error::corrupt(format!(
                "the SCANDUMP header claims {nfilters} links and has room for {room} (1 to \
                 {MAX_LINKS})"
            )));
        }
        let mut links = Vec::with_capacity(nfilters);
        let mut sizes = Vec::with_capacity(nfilters);
        for i in 0..nfilters {
            let l = &header[BF_HEADER_LEN + i * BF_LINK_LEN..][..BF_LINK_LEN];
            let bytes = u64_at(l, 0);
            let bits = u64_at(l, 8);
            if bytes.checked_mul(8) != Some(bits) {
                return Err(Error::corrupt(format!(
                    "SCANDUMP link {i} claims {bits} bits in {bytes} bytes"
                )));
            }
            sizes.push(bytes);
            links.push(RedisBloomLink {
                size: u64_at(l, 16),
                error: f64::from_bits(u64_at(l, 24)),
                bpe: f64::from_bits(u64_at(l, 32)),
                hashes: u32_at(l, 40),
                entries: u64_at(l, 44),
                n2: l[52],
                bytes: Vec::new(),
            });
        }
        let chain = RedisBloomChain {
            size: u64_at(header, 0),
            options: u32_at(header, 12),
            growth: u32_at(header, 16),
            links,
        };
        chain.validate_fields(&sizes)?;
        Ok(ScandumpLoader {
            value: RedisBloomValue::Bloom(chain),
            sizes,
            received: 0,
            part: 0,
        })
    }

    /// Starts a `MBbloomCF` key from `CF.SCANDUMP`'s header chunk (position 1; RedisBloom
    /// sends none for an empty filter).
    ///
    /// # Errors
    ///
    /// [`Error::Corrupt`] for a header other than 38 bytes, a bucket size outside 1 to 255,
    /// a bucket count that is not a power of two, a sub-filter count outside 1 to 65535, or
    /// sub-filter sizes that overflow.
    pub fn cuckoo(header: &[u8]) -> Result<Self> {
        if header.len() != CF_HEADER_LEN {
            return Err(Error::corrupt(format!(
                "a {CF_TYPE_NAME} SCANDUMP header is {CF_HEADER_LEN} bytes, not {}",
                header.len()
            )));
        }
        let num_filters = u64_at(header, 24);
        let mut cf = RedisCuckooFilter {
            num_items: u64_at(header, 0),
            num_buckets: u64_at(header, 8),
            num_deletes: u64_at(header, 16),
            bucket_size: u16_at(header, 32),
            max_iterations: u16_at(header, 34),
            expansion: u16_at(header, 36),
            filters: Vec::new(),
        };
        if cf.bucket_size == 0 || cf.bucket_size > 255 || !cf.num_buckets.is_power_of_two() {
            return Err(Error::corrupt(format!(
                "cuckoo bucket size {} (1 to 255) and {} buckets (a power of two) expected",
                cf.bucket_size, cf.num_buckets
            )));
        }
        if num_filters == 0 || num_filters > MAX_FILTERS {
            return Err(Error::corrupt(format!(
                "{num_filters} cuckoo sub-filters claimed (1 to {MAX_FILTERS})"
            )));
        }
        let mut sizes = Vec::new();
        for i in 0..num_filters {
            let n = RedisCuckooFilter::sub_filter_buckets(
                cf.num_buckets,
                cf.expansion,
                cf.bucket_size,
                i,
            )
            .ok_or_else(|| Error::corrupt(format!("cuckoo sub-filter {i}'s size overflows")))?;
            sizes.push(n * u64::from(cf.bucket_size));
            cf.filters.push(SubFilter {
                num_buckets: n,
                data: Vec::new(),
            });
        }
        Ok(ScandumpLoader {
            value: RedisBloomValue::Cuckoo(cf),
            sizes,
            received: 0,
            part: 0,
        })
    }

    /// Bytes of data chunks the header announces: what a host's memory budget should admit
    /// before taking them.
    pub fn expected_bytes(&self) -> u64 {
        self.sizes.iter().fold(0u64, |s, &n| s.saturating_add(n))
    }

    /// Bytes of data chunks received so far.
    pub fn received_bytes(&self) -> u64 {
        self.received
    }

    /// Whether a `MBbloomCF` key is arriving (else a `MBbloom--` key).
    pub fn is_cuckoo(&self) -> bool {
        matches!(self.value, RedisBloomValue::Cuckoo(_))
    }

    /// The data received so far, one slice per link or sub-filter begun, in order: pushed
    /// again one slice a chunk (each slice's iterator one past its last byte, counting
    /// from 1) into a loader started from the same header, they rebuild this one. What a
    /// host stores of a key still arriving.
    pub fn received_parts(&self) -> Vec<&[u8]> {
        let part = |i: usize| -> &[u8] {
            match &self.value {
                RedisBloomValue::Bloom(b) => &b.links[i].bytes,
                RedisBloomValue::Cuckoo(c) => &c.filters[i].data,
            }
        };
        (0..self.sizes.len())
            .map(part)
            .filter(|bytes| !bytes.is_empty())
            .collect()
    }

    /// Whether every byte has arrived.
    pub fn is_complete(&self) -> bool {
        self.received == self.expected_bytes()
    }

    fn buffer(&mut self, part: usize) -> &mut Vec<u8> {
        match &mut self.value {
            RedisBloomValue::Bloom(b) => &mut b.links[part].bytes,
            RedisBloomValue::Cuckoo(c) => &mut c.filters[part].data,
        }
    }

    /// Takes the data chunk `SCANDUMP` answered with `iter` (the iterator `LOADCHUNK` is
    /// given with it: one past the chunk's last byte, counting from 1).
    ///
    /// # Errors
    ///
    /// [`Error::Corrupt`] for an empty chunk, one that does not start where the previous one
    /// ended, or one that runs past the end of its link or sub-filter (RedisBloom never cuts
    /// across one).
    pub fn push(&mut self, iter: i64, chunk: &[u8]) -> Result<()> {
        let start = u64::try_from(iter)
            .ok()
            .and_then(|i| i.checked_sub(chunk.len() as u64 + 1))
            .ok_or_else(|| Error::corrupt(format!("chunk iterator {iter} is out of range")))?;
        if start != self.received || chunk.is_empty() {
            return Err(Error::corrupt(format!(
                "a chunk at offset {start} where offset {} was expected; feed SCANDUMP's \
                 chunks in its order",
                self.received
            )));
        }
        while self.part < self.sizes.len()
            && self.buffer(self.part).len() as u64 == self.sizes[self.part]
        {
            self.part += 1;
        }
        let part = self.part;
        let Some(&size) = self.sizes.get(part) else {
            return Err(Error::corrupt("a chunk beyond the filter's end"));
        };
        let buf = self.buffer(part);
        if buf.len() as u64 + chunk.len() as u64 > size {
            return Err(Error::corrupt(format!(
                "a chunk runs past the end of part {part} ({size} bytes)"
            )));
        }
        buf.extend_from_slice(chunk);
        self.received += chunk.len() as u64;
        Ok(())
    }

    /// The filter, once every chunk has arrived.
    ///
    /// # Errors
    ///
    /// [`Error::Corrupt`] if bytes are missing, or (cuckoo) the item count is not the
    /// number of occupied slots.
    pub fn finish(self) -> Result<RedisBloomValue> {
        if !self.is_complete() {
            return Err(Error::corrupt(format!(
                "the chunks end after {} of {} bytes",
                self.received,
                self.expected_bytes()
            )));
        }
        match &self.value {
            RedisBloomValue::Bloom(b) => b.validate()?,
            RedisBloomValue::Cuckoo(c) => c.validate()?,
        }
        Ok(self.value)
    }
}

/// Runs a loader over a whole `(iterator, chunk)` sequence whose first element is the header.
fn load<'c, I>(chunks: I, start: fn(&[u8]) -> Result<ScandumpLoader>) -> Result<RedisBloomValue>
where
    I: IntoIterator<Item = (i64, &'c [u8])>,
{
    let mut chunks = chunks.into_iter();
    let (iter, header) = chunks
        .next()
        .ok_or_else(|| Error::corrupt("a SCANDUMP sequence needs its header chunk"))?;
    if iter != 1 {
        return Err(Error::corrupt(format!(
            "the header chunk comes with iterator 1, not {iter}"
        )));
    }
    let mut loader = start(header)?;
    for (iter, chunk) in chunks {
        loader.push(iter, chunk)?;
    }
    loader.finish()
}

impl RedisBloomChain {
    /// Rebuilds a chain from `BF.SCANDUMP`'s replies, in its order: `(1, header)` first, then
    /// each `(iterator, chunk)` it returned, without the final `(0, "")`.
    ///
    /// # Errors
    ///
    /// As [`ScandumpLoader::bloom`], [`ScandumpLoader::push`] and [`ScandumpLoader::finish`];
    /// also a first element that is not the header (iterator 1).
    pub fn from_scandump<'c, I>(chunks: I) -> Result<Self>
    where
        I: IntoIterator<Item = (i64, &'c [u8])>,
    {
        match load(chunks, ScandumpLoader::bloom)? {
            RedisBloomValue::Bloom(b) => Ok(b),
            _ => unreachable!("a Bloom loader finishes with a Bloom value"),
        }
    }
}

impl RedisCuckooFilter {
    /// Rebuilds a filter from `CF.SCANDUMP`'s replies, in its order: `(1, header)`, then
    /// each `(position, chunk)` it returned, without the final `(0, nil)`.
    ///
    /// # Errors
    ///
    /// As [`RedisBloomChain::from_scandump`], with [`ScandumpLoader::cuckoo`].
    pub fn from_scandump<'c, I>(chunks: I) -> Result<Self>
    where
        I: IntoIterator<Item = (i64, &'c [u8])>,
    {
        match load(chunks, ScandumpLoader::cuckoo)? {
            RedisBloomValue::Cuckoo(c) => Ok(c),
            _ => unreachable!("a cuckoo loader finishes with a cuckoo value"),
        }
    }
}
