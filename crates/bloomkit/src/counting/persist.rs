//! [`CountingBloomFilter`] in the shared file format (kind 3): the counters and probes as
//! parameters, the counter words as payload.

use std::io::Read;

use super::counters::COUNTERS_PER_WORD;
use super::CountingBloomFilter;
use crate::error::Result;
use crate::format::{self, FilterKind, FormatReader, Header, Persist};
use crate::key::KeyHasher;

format::format_methods!(
    CountingBloomFilter,
    "counting filter",
    to_bytes: [
        ///
        /// Parameters (12 bytes): the number of counters `m` (u64, a positive multiple of 64),
        /// then of hashes `k` (u32, 1 to 64). Payload (`m / 2` bytes): `m / 16` little-endian u64
        /// words; counter `i` is bits `4·(i mod 16)` to `4·(i mod 16) + 3` of word `i / 16`.
        /// Probes are the classic filter's (kind 1) with `m` counters for its `m` bits. The
        /// header's item count is [`len`](Self::len).
        ///
        /// # Examples
        ///
        /// ```
        /// use bloomkit::CountingBloomFilter;
        ///
        /// let mut f = CountingBloomFilter::new(1000, 0.01)?;
        /// f.insert("a");
        /// let bytes = f.to_bytes();
        /// assert_eq!(bytes.len(), 44 + 16 + f.num_counters() as usize / 2 + 8);
        /// assert_eq!(CountingBloomFilter::from_bytes(&bytes)?, f);
        /// # Ok::<(), bloomkit::Error>(())
        /// ```
    ],
    write_to: [
        ///
        /// # Examples
        ///
        /// ```
        /// let f = bloomkit::CountingBloomFilter::new(1000, 0.01)?;
        /// let mut out = Vec::new();
        /// f.write_to(&mut out)?;
        /// assert_eq!(out, f.to_bytes());
        /// # Ok::<(), bloomkit::Error>(())
        /// ```
    ],
    from_bytes: [
        ///
        /// # Examples
        ///
        /// ```
        /// use bloomkit::{CountingBloomFilter, Error};
        ///
        /// let mut bytes = CountingBloomFilter::new(100, 0.01)?.to_bytes();
        /// bytes[60] ^= 1;
        /// assert!(matches!(
        ///     CountingBloomFilter::from_bytes(&bytes),
        ///     Err(Error::ChecksumMismatch { .. })
        /// ));
        /// # Ok::<(), bloomkit::Error>(())
        /// ```
    ],
    read_from: [
        ///
        /// # Examples
        ///
        /// ```
        /// let mut f = bloomkit::CountingBloomFilter::new(100, 0.01)?;
        /// f.insert("a");
        /// let bytes = f.to_bytes();
        /// let g = bloomkit::CountingBloomFilter::read_from(&bytes[..])?;
        /// assert!(g.contains("a") && g.len() == 1);
        /// # Ok::<(), bloomkit::Error>(())
        /// ```
    ],
);

impl Persist for CountingBloomFilter {
    const KIND: FilterKind = FilterKind::Counting;

    fn key_hasher(&self) -> KeyHasher {
        self.hasher
    }

    fn item_count(&self) -> u64 {
        self.item_count
    }

    fn params(&self) -> Vec<u8> {
        // The classic filter's shape: here the number of counters.
        format::encode_derived_params(self.num_counters, self.num_hashes, self.probes.code())
    }

    fn payload_words(&self) -> impl Iterator<Item = u64> + '_ {
        self.counters.iter().copied()
    }

    fn payload_words_len(&self) -> u64 {
        self.num_counters / COUNTERS_PER_WORD
    }

    fn decode<R: Read>(header: &Header, payload: &mut FormatReader<R>) -> Result<Self> {
        let (num_counters, num_hashes, probes) = format::decode_classic_params(header, "counters")?;
        let num_words = num_counters / COUNTERS_PER_WORD;
        header.expect_payload_len(num_words * 8)?;
        let counters = payload.read_word_vec(num_words)?;
        Ok(CountingBloomFilter {
            counters,
            num_counters,
            num_hashes,
            hasher: header.hasher,
            item_count: header.item_count,
            probes,
        })
    }
}
