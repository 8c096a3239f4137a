//! [`AtomicBloomFilter`]'s file format: a blocked filter's (kind 2 in `docs/FORMAT.md`), so
//! either type reads the other's files.

use std::io::Read;

use super::AtomicBloomFilter;
use crate::bits::LINE_WORDS;
use crate::error::Result;
use crate::format::{self, FilterKind, FormatReader, Header, Persist};
use crate::key::KeyHasher;
use crate::BlockedBloomFilter;

format::format_methods!(
    AtomicBloomFilter,
    "atomic filter",
    to_bytes: [
        ///
        /// It is stored as a blocked filter with the same bits, its item count the
        /// fill-based estimate (it keeps no exact counter).
        ///
        /// # Examples
        ///
        /// ```
        /// let f = bloomkit::AtomicBloomFilter::new(1000, 0.01)?;
        /// f.insert("a");
        /// let b = bloomkit::BlockedBloomFilter::from_bytes(&f.to_bytes())?;
        /// assert!(b.contains("a"));
        /// # Ok::<(), bloomkit::Error>(())
        /// ```
    ],
    write_to: [],
    from_bytes: [
        ///
        /// It reads a blocked filter's file, as either type writes it.
    ],
    read_from: [],
);

impl Persist for AtomicBloomFilter {
    const KIND: FilterKind = FilterKind::Blocked;

    fn key_hasher(&self) -> KeyHasher {
        self.hasher
    }

    fn item_count(&self) -> u64 {
        self.estimated_count()
    }

    fn params(&self) -> Vec<u8> {
        format::encode_derived_params(self.num_bits(), self.num_hashes, self.probes.code())
    }

    fn payload_words(&self) -> impl Iterator<Item = u64> + '_ {
        self.lines.words()
    }

    fn payload_words_len(&self) -> u64 {
        self.lines.len() as u64 * LINE_WORDS as u64
    }

    fn decode<R: Read>(header: &Header, payload: &mut FormatReader<R>) -> Result<Self> {
        let blocked = BlockedBloomFilter::decode(header, payload)?;
        AtomicBloomFilter::from_blocked(&blocked)
    }
}
