//! [`CuckooFilter`] in the shared file format (kind 5; layout in the module docs of
//! `cuckoo`).
//!
//! Decoding trusts nothing: every parameter that sizes or indexes anything is range-checked
//! (the removal counter, a statistic, is taken as stored), each sub-filter's size must be
//! the one the parameters imply, the declared payload length must be exactly the descriptors
//! plus those sub-filters' words (computed with checked arithmetic), storage grows only as
//! words arrive, padding bits must be zero, and the item count must equal the occupied slots.

use std::io::Read;

use crate::error::{Error, Result};
use crate::format::{self, FilterKind, FormatReader, Header, Persist, Run};
use crate::key::KeyHasher;

use super::builder::{
    CuckooPlacement, MAX_BUCKET_SIZE, MAX_EXPANSION, MAX_MAX_FILTERS, MAX_MAX_KICKS,
};
use super::table::{Layout, SubFilter, MAX_FINGERPRINT_BITS, MIN_FINGERPRINT_BITS};
use super::{CuckooFilter, Shape};

format::format_methods!(
    CuckooFilter,
    "cuckoo filter",
    to_bytes: [],
    write_to: [],
    from_bytes: [
        ///
        /// # Examples
        ///
        /// ```
        /// let mut f = bloomkit::CuckooFilter::new(1000, 0.01)?;
        /// f.insert("a")?;
        /// let g = bloomkit::CuckooFilter::from_bytes(&f.to_bytes())?;
        /// assert_eq!(f, g);
        /// assert!(g.contains("a"));
        /// # Ok::<(), bloomkit::Error>(())
        /// ```
    ],
    read_from: [],
);

/// Bytes of kind-specific parameters: 48, then the flags when there are any.
const PARAMS_LEN: usize = 48;

/// Flag bit 0: [`CuckooPlacement::Distinct`] (every alternate-bucket offset odd). Files
/// without flags (48 bytes of parameters) hold [`CuckooPlacement::Original`] filters, and are
/// written back the same way, byte for byte.
const FLAG_DISTINCT: u32 = 1;

impl Persist for CuckooFilter {
    const KIND: FilterKind = FilterKind::Cuckoo;

    fn key_hasher(&self) -> KeyHasher {
        self.shape.hasher
    }

    fn item_count(&self) -> u64 {
        self.len
    }

    fn params(&self) -> Vec<u8> {
        let s = &self.shape;
        let mut p = Vec::with_capacity(PARAMS_LEN);
        p.extend_from_slice(&s.capacity.to_le_bytes());
        p.extend_from_slice(&s.base_buckets.to_le_bytes());
        p.extend_from_slice(&s.bucket_size.to_le_bytes());
        p.extend_from_slice(&s.fp_bits.to_le_bytes());
        p.extend_from_slice(&s.max_kicks.to_le_bytes());
        p.extend_from_slice(&s.expansion.to_le_bytes());
        p.extend_from_slice(&s.max_filters.to_le_bytes());
        p.extend_from_slice(&(self.filters.len() as u32).to_le_bytes());
        p.extend_from_slice(&self.num_deletes.to_le_bytes());
        debug_assert_eq!(p.len(), PARAMS_LEN);
        if s.placement == CuckooPlacement::Distinct {
            p.extend_from_slice(&FLAG_DISTINCT.to_le_bytes());
        }
        p
    }

    fn payload_words(&self) -> impl Iterator<Item = u64> + '_ {
        let descriptors = self.filters.iter().map(SubFilter::num_buckets);
        let slots = self
            .filters
            .iter()
            .flat_map(|sub| sub.words().iter().copied());
        descriptors.chain(slots)
    }

    fn payload_runs(&self) -> impl Iterator<Item = Run<'_>> + '_ {
        let descriptors = self.filters.iter().map(|sub| Run::Word(sub.num_buckets()));
        descriptors.chain(self.filters.iter().map(|sub| Run::Words(sub.words())))
    }

    fn payload_words_len(&self) -> u64 {
        self.filters.len() as u64
            + self
                .filters
                .iter()
                .map(|sub| sub.words().len() as u64)
                .sum::<u64>()
    }

    fn decode<R: Read>(header: &Header, payload: &mut FormatReader<R>) -> Result<Self> {
        let mut p = header.params();
        let capacity = p.u64()?;
        let base_buckets = p.u64()?;
        let bucket_size = p.u32()?;
        let fp_bits = p.u32()?;
        let max_kicks = p.u32()?;
        let expansion = p.u32()?;
        let max_filters = p.u32()?;
        let num_filters = p.u32()?;
        let num_deletes = p.u64()?;
        // A 48-byte block (as every file written before the flags) places keys the
        // original way; a flag word must name a placement this build knows, and only a
        // non-default one is written, so each filter has one encoding.
        let placement = if p.is_empty() {
            CuckooPlacement::Original
        } else {
            match p.u32()? {
                FLAG_DISTINCT => CuckooPlacement::Distinct,
                flags => {
                    return Err(Error::corrupt(format!(
                        "unknown cuckoo filter flags {flags:#010x} (written by a newer \
                         bloomkit? upgrade to read it)"
                    )))
                }
            }
        };
        p.finish()?;

        let check = |name: &str, v: u64, lo: u64, hi: u64| {
            if (lo..=hi).contains(&v) {
                Ok(())
            } else {
                Err(Error::corrupt(format!(
                    "the cuckoo {name} {v} is outside {lo}..={hi}"
                )))
            }
        };
        check("capacity", capacity, 1, u64::MAX)?;
        check("bucket count", base_buckets, 1, u64::MAX)?;
        check("bucket size", bucket_size.into(), 1, MAX_BUCKET_SIZE.into())?;
        check(
            "fingerprint size",
            fp_bits.into(),
            MIN_FINGERPRINT_BITS.into(),
            MAX_FINGERPRINT_BITS.into(),
        )?;
        check("kick limit", max_kicks.into(), 1, MAX_MAX_KICKS.into())?;
        check("expansion", expansion.into(), 0, MAX_EXPANSION.into())?;
        check(
            "sub-filter limit",
            max_filters.into(),
            1,
            MAX_MAX_FILTERS.into(),
        )?;
        let most_filters = if expansion == 0 { 1 } else { max_filters };
        check(
            "sub-filter count",
            num_filters.into(),
            1,
            most_filters.into(),
        )?;

        let shape = Shape {
            capacity,
            base_buckets,
            bucket_size,
            fp_bits,
            max_kicks,
            expansion,
            max_filters,
            hasher: header.hasher,
            placement,
        };
        let layout = Layout::new(bucket_size, fp_bits, placement);
        // Each sub-filter's buckets and words, and the payload they add up to, before any
        // payload is read or anything sized by it is allocated.
        let too_big = || Error::corrupt("the cuckoo sub-filter sizes overflow");
        let mut total_words = num_filters as u64;
        for k in 0..num_filters {
            let words = shape
                .buckets_of(k)
                .and_then(|buckets| layout.words_for(buckets))
                .ok_or_else(too_big)?;
            total_words = total_words.checked_add(words).ok_or_else(too_big)?;
        }
        header.expect_payload_len(total_words.checked_mul(8).ok_or_else(too_big)?)?;

        let mut descriptors: Vec<u64> = Vec::new();
        payload.read_words(num_filters as u64, |chunk| {
            format::grow_toward(&mut descriptors, chunk.len(), num_filters as u64)?;
            descriptors.extend_from_slice(chunk);
            Ok(())
        })?;
        let mut filters: Vec<SubFilter> = Vec::new();
        for (k, &declared) in descriptors.iter().enumerate() {
            // Checked above: the shape's sizes do not overflow.
            let buckets = shape.buckets_of(k as u32).ok_or_else(too_big)?;
            if declared != buckets {
                return Err(Error::corrupt(format!(
                    "cuckoo sub-filter {k} declares {declared} buckets; the parameters give \
                     {buckets}"
                )));
            }
            let num_words = layout.words_for(buckets).ok_or_else(too_big)?;
            let mut words: Vec<u64> = Vec::new();
            payload.read_words(num_words, |chunk| {
                // One more than the slots: room for the guard word without reallocating.
                format::grow_toward(&mut words, chunk.len(), num_words + 1)?;
                words.extend_from_slice(chunk);
                Ok(())
            })?;
            format::grow_toward(&mut filters, 1, num_filters as u64)?;
            filters.push(SubFilter::from_words(&layout, buckets, words)?);
        }

        let occupied: u64 = filters.iter().map(SubFilter::occupied).sum();
        if occupied != header.item_count {
            return Err(Error::corrupt(format!(
                "the header counts {} cuckoo items but {occupied} slots are occupied",
                header.item_count
            )));
        }
        Ok(CuckooFilter::from_parts(
            filters,
            layout,
            shape,
            num_deletes,
        ))
    }
}
