//! [`BloomFilter`]'s file format (kind 1 in `docs/FORMAT.md`): the number of bits and of
//! hashes, and the probe derivation but for the first, as parameters, then the bit array's
//! words.

use std::io::Read;

use super::BloomFilter;
use crate::error::Result;
use crate::format::{self, FilterKind, FormatReader, Header, Persist, Run};
use crate::key::KeyHasher;

format::format_methods!(
    BloomFilter,
    "classic filter",
    to_bytes: [
        ///
        /// # Examples
        ///
        /// ```
        /// let mut f = bloomkit::BloomFilter::builder(0, 0.01).num_bits(1024).num_hashes(7).build()?;
        /// f.insert("a");
        /// let bytes = f.to_bytes();
        /// assert_eq!(bytes.len(), 44 + 16 + 1024 / 8 + 8);
        /// assert_eq!(bytes.len(), f.encoded_len());
        /// assert_eq!(bloomkit::BloomFilter::from_bytes(&bytes)?, f);
        /// # Ok::<(), bloomkit::Error>(())
        /// ```
    ],
    write_to: [],
    from_bytes: [],
    read_from: [],
);

impl Persist for BloomFilter {
    const KIND: FilterKind = FilterKind::Classic;

    fn key_hasher(&self) -> KeyHasher {
        self.hasher
    }

    fn item_count(&self) -> u64 {
        self.item_count
    }

    fn params(&self) -> Vec<u8> {
        format::encode_derived_params(self.num_bits, self.num_hashes, self.probes.code())
    }

    fn payload_words(&self) -> impl Iterator<Item = u64> + '_ {
        self.bits.words().iter().copied()
    }

    fn payload_runs(&self) -> impl Iterator<Item = Run<'_>> + '_ {
        std::iter::once(Run::Words(self.bits.words()))
    }

    fn payload_words_len(&self) -> u64 {
        self.num_bits / 64
    }

    fn decode<R: Read>(header: &Header, payload: &mut FormatReader<R>) -> Result<Self> {
        let (num_bits, num_hashes, probes) = format::decode_classic_params(header, "bits")?;
        header.expect_payload_len(num_bits / 8)?;
        let num_words = num_bits / 64;
        let words = payload.read_word_vec(num_words)?;
        Ok(BloomFilter::from_words(
            words,
            num_bits,
            num_hashes,
            header.hasher,
            header.item_count,
            probes,
        ))
    }
}
