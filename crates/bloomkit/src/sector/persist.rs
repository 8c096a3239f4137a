//! [`SectorBloomFilter`]'s file format (kind 9 in `docs/FORMAT.md`): the number of bits and
//! of hashes as parameters, then the 512-bit lines in order, as for the blocked kind.

use std::io::Read;

use super::SectorBloomFilter;
use crate::bits::LINE_WORDS;
use crate::error::{Error, Result};
use crate::format::{self, FilterKind, FormatReader, Header, Persist, Run};
use crate::key::KeyHasher;
use crate::sizing::LINE_BITS;

format::format_methods!(
    SectorBloomFilter,
    "sector filter",
    to_bytes: [
        ///
        /// # Examples
        ///
        /// ```
        /// let mut f = bloomkit::SectorBloomFilter::builder(0, 0.01).num_bits(1024).num_hashes(8).build()?;
        /// f.insert("a");
        /// let bytes = f.to_bytes();
        /// assert_eq!(bytes.len(), 44 + 12 + 1024 / 8 + 8);
        /// assert_eq!(bloomkit::SectorBloomFilter::from_bytes(&bytes)?, f);
        /// # Ok::<(), bloomkit::Error>(())
        /// ```
    ],
    write_to: [],
    from_bytes: [],
    read_from: [],
);

impl Persist for SectorBloomFilter {
    const KIND: FilterKind = FilterKind::Sector;

    fn key_hasher(&self) -> KeyHasher {
        self.hasher
    }

    fn item_count(&self) -> u64 {
        self.item_count
    }

    fn params(&self) -> Vec<u8> {
        format::encode_bits_and_hashes(self.num_bits(), self.num_hashes())
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
        let (num_bits, num_hashes) = format::decode_bits_and_hashes(header, LINE_BITS)?;
        let per_word = super::bits_per_word(num_hashes).map_err(|_| {
            Error::corrupt(format!(
                "the header's number of hashes {num_hashes} is not a multiple of 8, as a \
                 sector filter's must be"
            ))
        })?;
        let lines = payload.read_line_array(num_bits / LINE_BITS)?;
        Ok(SectorBloomFilter::from_parts(
            lines,
            per_word,
            header.hasher,
            header.item_count,
        ))
    }
}
