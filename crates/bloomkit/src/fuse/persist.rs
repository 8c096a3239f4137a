//! Storing and loading a [`BinaryFuseFilter`] in bloomkit's file format.
//!
//! Parameters (16 bytes): fingerprint bits (u32, 8 or 16), segment length (u32), segment
//! count (u32), fuse seed (u32). The header's item count is [`BinaryFuseFilter::len`].
//! Payload: the fingerprints, slot 0 first, packed little-endian into u64 words (8 or 4 a
//! word), the last word padded with zero bits.

use std::io::Read;

use crate::error::{Error, Result};
use crate::format::{self, grow_toward, FilterKind, FormatReader, Header, Persist};
use crate::key::KeyHasher;

use super::build::Layout;
use super::slots::{Fingerprint, MAX_SEGMENT_LENGTH};
use super::{BinaryFuseFilter, Fingerprints};

format::format_methods!(
    BinaryFuseFilter,
    "binary fuse filter",
    to_bytes: [
        ///
        /// # Examples
        ///
        /// ```
        /// use bloomkit::BinaryFuseFilter;
        /// let f = BinaryFuseFilter::build(0..1000u32, 0.01)?;
        /// let bytes = f.to_bytes();
        /// // 60 bytes of header and parameters, the fingerprints in whole words, a checksum.
        /// assert_eq!(bytes.len() as u64, 60 + f.num_slots().div_ceil(8) * 8 + 8);
        /// assert_eq!(BinaryFuseFilter::from_bytes(&bytes)?, f);
        /// # Ok::<(), bloomkit::Error>(())
        /// ```
    ],
    write_to: [
        ///
        /// # Examples
        ///
        /// ```
        /// let f = bloomkit::BinaryFuseFilter::builder(0.01).fingerprint_bits(16).build(["a", "b"])?;
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
        /// use bloomkit::{BinaryFuseFilter, Error};
        /// let mut bytes = BinaryFuseFilter::build(["a"], 0.01)?.to_bytes();
        /// assert!(BinaryFuseFilter::from_bytes(&bytes)?.contains("a"));
        /// bytes[62] ^= 1;
        /// assert!(matches!(
        ///     BinaryFuseFilter::from_bytes(&bytes),
        ///     Err(Error::ChecksumMismatch { .. })
        /// ));
        /// assert!(matches!(BinaryFuseFilter::from_bytes(&bytes[..40]), Err(Error::Truncated)));
        /// # Ok::<(), bloomkit::Error>(())
        /// ```
    ],
    read_from: [
        ///
        /// # Examples
        ///
        /// ```
        /// use bloomkit::BinaryFuseFilter;
        /// // Two filters, one after the other, in one stream.
        /// let a = BinaryFuseFilter::build(["a"], 0.01)?;
        /// let b = BinaryFuseFilter::builder(0.01).fingerprint_bits(16).build(["b"])?;
        /// let mut stream = a.to_bytes();
        /// stream.extend(b.to_bytes());
        /// let mut reader = &stream[..];
        /// assert_eq!(BinaryFuseFilter::read_from(&mut reader)?, a);
        /// assert_eq!(BinaryFuseFilter::read_from(&mut reader)?, b);
        /// assert!(reader.is_empty());
        /// # Ok::<(), bloomkit::Error>(())
        /// ```
    ],
);

/// `fingerprints` packed into little-endian words, `64 / F::BITS` a word.
fn pack<F: Fingerprint>(fingerprints: &[F]) -> impl Iterator<Item = u64> + '_ {
    let per_word = (64 / F::BITS) as usize;
    fingerprints.chunks(per_word).map(|chunk| {
        chunk
            .iter()
            .enumerate()
            .fold(0, |word, (i, f)| word | f.to_u64() << (i as u32 * F::BITS))
    })
}

/// Reads `num_slots` fingerprints packed as [`pack`] packs them, into a vector that grows only
/// as the words arrive; refuses padding bits that are not zero.
fn unpack<F: Fingerprint, R: Read>(
    payload: &mut FormatReader<R>,
    num_slots: u64,
    num_words: u64,
) -> Result<Vec<F>> {
    let per_word = u64::from(64 / F::BITS);
    let mask = (1u64 << F::BITS) - 1;
    let mut fingerprints: Vec<F> = Vec::new();
    payload.read_words(num_words, |words| {
        grow_toward(
            &mut fingerprints,
            words.len() * per_word as usize,
            num_slots,
        )?;
        for &word in words {
            let take = (num_slots - fingerprints.len() as u64).min(per_word);
            for i in 0..take {
                fingerprints.push(F::from_u64(word >> (i as u32 * F::BITS) & mask));
            }
            if take < per_word && word >> (take as u32 * F::BITS) != 0 {
                return Err(Error::corrupt(
                    "the padding bits after the last fingerprint are not zero",
                ));
            }
        }
        Ok(())
    })?;
    Ok(fingerprints)
}

impl Persist for BinaryFuseFilter {
    const KIND: FilterKind = FilterKind::Fuse;

    fn key_hasher(&self) -> KeyHasher {
        self.hasher
    }

    fn item_count(&self) -> u64 {
        self.len
    }

    fn params(&self) -> Vec<u8> {
        let mut params = Vec::with_capacity(16);
        params.extend_from_slice(&self.fingerprint_bits().to_le_bytes());
        params.extend_from_slice(&self.layout.segment_length.to_le_bytes());
        params.extend_from_slice(&self.layout.segment_count.to_le_bytes());
        params.extend_from_slice(&self.fuse_seed.to_le_bytes());
        params
    }

    fn payload_words(&self) -> impl Iterator<Item = u64> + '_ {
        let words: Box<dyn Iterator<Item = u64> + '_> = match &self.fingerprints {
            Fingerprints::Eight(f) => Box::new(pack(f)),
            Fingerprints::Sixteen(f) => Box::new(pack(f)),
        };
        words
    }

    fn payload_words_len(&self) -> u64 {
        (self.num_slots() * u64::from(self.fingerprint_bits())).div_ceil(64)
    }

    fn decode<R: Read>(header: &Header, payload: &mut FormatReader<R>) -> Result<Self> {
        let mut params = header.params();
        let fingerprint_bits = params.u32()?;
        let segment_length = params.u32()?;
        let segment_count = params.u32()?;
        let fuse_seed = params.u32()?;
        params.finish()?;
        let len = header.item_count;
        if fingerprint_bits != 8 && fingerprint_bits != 16 {
            return Err(Error::corrupt(format!(
                "the header's fingerprint bits {fingerprint_bits} are not 8 or 16"
            )));
        }
        if !segment_length.is_power_of_two() || segment_length > MAX_SEGMENT_LENGTH {
            return Err(Error::corrupt(format!(
                "the header's segment length {segment_length} is not a power of two up to \
                 {MAX_SEGMENT_LENGTH}"
            )));
        }
        let layout = Layout {
            segment_length,
            segment_count,
        };
        let num_slots = layout.num_slots();
        if num_slots > u64::from(u32::MAX) {
            return Err(Error::corrupt(format!(
                "a filter of {segment_count} segments of {segment_length} slots is impossibly \
                 large"
            )));
        }
        // A build sizes the array from its keys: no keys, no segments; otherwise at least
        // one slot per key.
        if (len == 0) != (segment_count == 0) || len > num_slots {
            return Err(Error::corrupt(format!(
                "{len} keys cannot have built a binary fuse filter of {num_slots} slots"
            )));
        }
        let num_words = (num_slots * u64::from(fingerprint_bits)).div_ceil(64);
        header.expect_payload_len(num_words * 8)?;
        let fingerprints = if fingerprint_bits == 8 {
            Fingerprints::Eight(unpack(payload, num_slots, num_words)?)
        } else {
            Fingerprints::Sixteen(unpack(payload, num_slots, num_words)?)
        };
        Ok(Self::from_parts(
            fingerprints,
            layout,
            fuse_seed,
            header.hasher,
            len,
        ))
    }
}
