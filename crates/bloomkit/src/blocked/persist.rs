//! [`BlockedBloomFilter`]'s file format (kind 2 in `docs/FORMAT.md`): the number of bits and
//! of hashes and the probe derivation as parameters, then the 512-bit lines in order.

use std::io::Read;

use super::BlockedBloomFilter;
use crate::bits::LINE_WORDS;
use crate::error::Result;
use crate::format::{self, FilterKind, FormatReader, Header, Persist, Run};
use crate::key::KeyHasher;
use crate::sizing::LINE_BITS;

format::format_methods!(
    BlockedBloomFilter,
    "blocked filter",
    to_bytes: [
        ///
        /// # Examples
        ///
        /// ```
        /// let mut f = bloomkit::BlockedBloomFilter::builder(0, 0.01).num_bits(1024).num_hashes(6).build()?;
        /// f.insert("a");
        /// let bytes = f.to_bytes();
        /// // Header, parameters (bits, hashes, probe derivation), lines, checksum.
        /// assert_eq!(bytes.len(), 44 + 16 + 1024 / 8 + 8);
        /// assert_eq!(bloomkit::BlockedBloomFilter::from_bytes(&bytes)?, f);
        /// // An atomic filter has the same bits and reads the same file.
        /// let a = bloomkit::AtomicBloomFilter::from_bytes(&bytes)?;
        /// assert!(a.contains("a"));
        /// # Ok::<(), bloomkit::Error>(())
        /// ```
    ],
    write_to: [],
    from_bytes: [],
    read_from: [],
);

impl Persist for BlockedBloomFilter {
    const KIND: FilterKind = FilterKind::Blocked;

    fn key_hasher(&self) -> KeyHasher {
        self.hasher
    }

    fn item_count(&self) -> u64 {
        self.item_count
    }

    fn params(&self) -> Vec<u8> {
        format::encode_derived_params(self.num_bits(), self.num_hashes, self.probes.code())
    }

    fn payload_words(&self) -> impl Iterator<Item = u64> + '_ {
        self.lines.words()
    }

    fn payload_runs(&self) -> impl Iterator<Item = Run<'_>> + '_ {
        self.lines.line_words().map(Run::Words)
    }

    fn payload_words_len(&self) -> u64 {
        self.lines.len() as u64 * LINE_WORDS as u64
    }

    fn decode<R: Read>(header: &Header, payload: &mut FormatReader<R>) -> Result<Self> {
        let (num_bits, num_hashes, probes) = format::decode_blocked_params(header)?;
        let lines = payload.read_line_array(num_bits / LINE_BITS)?;
        Ok(BlockedBloomFilter::from_parts(
            lines,
            num_hashes,
            probes,
            header.hasher,
            header.item_count,
        ))
    }
}
