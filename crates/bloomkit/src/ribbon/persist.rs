//! Storing and loading a [`RibbonFilter`] in bloomkit's file format.
//!
//! Parameters (20 bytes): number of slots (u64), width (u32, 128), result bits (u32), ribbon
//! seed (u32). The header's item count is [`RibbonFilter::len`]. Payload: the interleaved
//! solution, `num_slots / 64 · result_bits` words.

use std::io::Read;

use crate::error::{Error, Result};
use crate::format::{self, FilterKind, FormatReader, Header, Persist};
use crate::key::KeyHasher;

use super::equation::{BLOCK_SLOTS, MAX_RESULT_BITS, WIDTH};
use super::RibbonFilter;

format::format_methods!(
    RibbonFilter,
    "ribbon filter",
    to_bytes: [
        ///
        /// # Examples
        ///
        /// ```
        /// use bloomkit::RibbonFilter;
        /// let f = RibbonFilter::build(0..1000u32, 0.01)?;
        /// let bytes = f.to_bytes();
        /// // 64 bytes of header and parameters, 16 blocks of 7 words, an 8-byte checksum.
        /// assert_eq!(bytes.len(), 64 + 16 * 7 * 8 + 8);
        /// assert_eq!(RibbonFilter::from_bytes(&bytes)?, f);
        /// # Ok::<(), bloomkit::Error>(())
        /// ```
    ],
    write_to: [
        ///
        /// # Examples
        ///
        /// ```
        /// let f = bloomkit::RibbonFilter::build(["a", "b"], 0.01)?;
        /// let mut file = Vec::new();
        /// f.write_to(&mut file)?;
        /// assert_eq!(file, f.to_bytes());
        /// # Ok::<(), bloomkit::Error>(())
        /// ```
    ],
    from_bytes: [
        ///
        /// # Examples
        ///
        /// ```
        /// use bloomkit::{Error, RibbonFilter};
        /// let mut bytes = RibbonFilter::build(["a"], 0.01)?.to_bytes();
        /// assert!(RibbonFilter::from_bytes(&bytes)?.contains("a"));
        /// bytes[70] ^= 1;
        /// assert!(matches!(RibbonFilter::from_bytes(&bytes), Err(Error::ChecksumMismatch { .. })));
        /// assert!(matches!(RibbonFilter::from_bytes(&bytes[..40]), Err(Error::Truncated)));
        /// # Ok::<(), bloomkit::Error>(())
        /// ```
    ],
    read_from: [
        ///
        /// # Examples
        ///
        /// ```
        /// use bloomkit::RibbonFilter;
        /// // Two filters, one after the other, in one stream.
        /// let (a, b) = (RibbonFilter::build(["a"], 0.01)?, RibbonFilter::build(["b"], 0.001)?);
        /// let mut stream = a.to_bytes();
        /// stream.extend(b.to_bytes());
        /// let mut reader = &stream[..];
        /// assert_eq!(RibbonFilter::read_from(&mut reader)?, a);
        /// assert_eq!(RibbonFilter::read_from(&mut reader)?, b);
        /// assert!(reader.is_empty());
        /// # Ok::<(), bloomkit::Error>(())
        /// ```
    ],
);

impl Persist for RibbonFilter {
    const KIND: FilterKind = FilterKind::Ribbon;

    fn key_hasher(&self) -> KeyHasher {
        self.hasher
    }

    fn item_count(&self) -> u64 {
        self.len
    }

    fn params(&self) -> Vec<u8> {
        let mut params = Vec::with_capacity(20);
        params.extend_from_slice(&self.num_slots.to_le_bytes());
        params.extend_from_slice(&(WIDTH as u32).to_le_bytes());
        params.extend_from_slice(&self.result_bits.to_le_bytes());
        params.extend_from_slice(&self.ribbon_seed.to_le_bytes());
        params
    }

    fn payload_words(&self) -> impl Iterator<Item = u64> + '_ {
        self.solution.iter().copied()
    }

    fn payload_words_len(&self) -> u64 {
        self.solution.len() as u64
    }

    fn decode<R: Read>(header: &Header, payload: &mut FormatReader<R>) -> Result<Self> {
        let mut params = header.params();
        let num_slots = params.u64()?;
        let width = params.u32()?;
        let result_bits = params.u32()?;
        let ribbon_seed = params.u32()?;
        params.finish()?;
        let len = header.item_count;
        if u64::from(width) != WIDTH {
            return Err(Error::corrupt(format!(
                "the header's ribbon width {width} is not {WIDTH}"
            )));
        }
        if !(1..=MAX_RESULT_BITS).contains(&result_bits) {
            return Err(Error::corrupt(format!(
                "the header's result bits {result_bits} are not between 1 and {MAX_RESULT_BITS}"
            )));
        }
        if num_slots % BLOCK_SLOTS != 0 {
            return Err(Error::corrupt(format!(
                "the header's number of slots {num_slots} is not a multiple of {BLOCK_SLOTS}"
            )));
        }
        // A build sizes the filter from its keys: no keys, no slots; otherwise at least one
        // slot per key.
        if (len == 0) != (num_slots == 0) || len > num_slots {
            return Err(Error::corrupt(format!(
                "{len} keys cannot have built a ribbon filter of {num_slots} slots"
            )));
        }
        let num_words = num_slots / BLOCK_SLOTS * u64::from(result_bits);
        let payload_len = num_words.checked_mul(8).ok_or_else(|| {
            Error::corrupt(format!("a filter of {num_slots} slots is impossibly large"))
        })?;
        header.expect_payload_len(payload_len)?;
        let solution = payload.read_word_vec(num_words)?;
        Ok(Self::from_parts(
            solution,
            num_slots,
            result_bits,
            ribbon_seed,
            header.hasher,
            len,
        ))
    }
}
