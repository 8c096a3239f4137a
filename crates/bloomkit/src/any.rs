//! [`AnyFilter`]: a filter of whatever kind a file holds.

use std::hash::Hash;
use std::io::{Read, Write};

use crate::error::{Error, Result};
use crate::format::{self, FilterKind, FormatReader, Persist};
use crate::hash::hash_with_seed;
use crate::{BlockedBloomFilter, BloomFilter, Filter};

/// A filter of any kind, for code that opens files without knowing what they hold (the
/// `bloomkit` CLI, a storage engine reading filters written by several versions).
///
/// # Examples
///
/// ```
/// use bloomkit::{AnyFilter, BlockedBloomFilter, FilterKind};
///
/// let mut f = BlockedBloomFilter::new(1000, 0.01)?;
/// f.insert("apple");
/// let any = AnyFilter::from_bytes(&f.to_bytes())?;
/// assert_eq!(any.kind(), FilterKind::Blocked);
/// assert!(any.contains("apple"));
/// # Ok::<(), bloomkit::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum AnyFilter {
    /// A [`BloomFilter`].
    Classic(BloomFilter),
    /// A [`BlockedBloomFilter`] (also what an [`crate::AtomicBloomFilter`] is stored as).
    Blocked(BlockedBloomFilter),
}

/// Runs the same expression on whichever filter `self` holds.
macro_rules! each {
    ($self:expr, $f:ident => $e:expr) => {
        match $self {
            AnyFilter::Classic($f) => $e,
            AnyFilter::Blocked($f) => $e,
        }
    };
}

impl AnyFilter {
    /// Reads a filter of any kind from `bytes`, which must hold exactly one.
    ///
    /// # Errors
    ///
    /// As [`BloomFilter::from_bytes`], and [`Error::UnknownKind`] for a kind this build does
    /// not know.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let (filter, rest) = Self::decode(FormatReader::new(bytes, Some(bytes.len() as u64)))?;
        format::expect_end(rest)?;
        Ok(filter)
    }

    /// Reads one filter of any kind from `reader`, consuming exactly its bytes.
    ///
    /// # Errors
    ///
    /// As [`from_bytes`](Self::from_bytes), plus [`Error::Io`] from the reader.
    pub fn read_from<R: Read>(reader: R) -> Result<Self> {
        Self::decode(FormatReader::new(reader, None)).map(|(filter, _)| filter)
    }

    fn decode<R: Read>(mut r: FormatReader<R>) -> Result<(Self, Option<u64>)> {
        let header = r.header()?;
        let filter = match FilterKind::from_code(header.kind) {
            Some(FilterKind::Classic) => AnyFilter::Classic(BloomFilter::decode(&header, &mut r)?),
            Some(FilterKind::Blocked) => {
                AnyFilter::Blocked(BlockedBloomFilter::decode(&header, &mut r)?)
            }
            // Kinds this type does not (yet) carry are as unknown to it as future ones.
            _ => return Err(Error::UnknownKind { found: header.kind }),
        };
        let rest = r.finish()?;
        Ok((filter, rest))
    }

    /// The kind of filter held.
    pub fn kind(&self) -> FilterKind {
        match self {
            AnyFilter::Classic(_) => FilterKind::Classic,
            AnyFilter::Blocked(_) => FilterKind::Blocked,
        }
    }

    /// Adds `key`; returns `true` if any bit changed.
    pub fn insert<T: Hash + ?Sized>(&mut self, key: &T) -> bool {
        self.insert_hash(hash_with_seed(key, self.seed()))
    }

    /// Adds a key by its precomputed hash.
    pub fn insert_hash(&mut self, hash: u64) -> bool {
        each!(self, f => f.insert_hash(hash))
    }

    /// `false` if `key` is definitely absent; `true` if it may be present.
    pub fn contains<T: Hash + ?Sized>(&self, key: &T) -> bool {
        self.contains_hash(hash_with_seed(key, self.seed()))
    }

    /// [`contains`](Self::contains) by a precomputed hash.
    pub fn contains_hash(&self, hash: u64) -> bool {
        each!(self, f => f.contains_hash(hash))
    }

    /// Bits in the filter.
    pub fn num_bits(&self) -> u64 {
        each!(self, f => f.num_bits())
    }

    /// Probes per key.
    pub fn num_hashes(&self) -> u32 {
        each!(self, f => f.num_hashes())
    }

    /// The hash seed keys are hashed with.
    pub fn seed(&self) -> u64 {
        each!(self, f => f.seed())
    }

    /// How many inserts changed the filter (see [`BloomFilter::item_count`]).
    pub fn item_count(&self) -> u64 {
        each!(self, f => f.item_count())
    }

    /// Bits set to one.
    pub fn count_ones(&self) -> u64 {
        each!(self, f => f.count_ones())
    }

    /// The fraction of bits set, from 0 to 1.
    pub fn fill_ratio(&self) -> f64 {
        each!(self, f => f.fill_ratio())
    }

    /// The number of distinct keys inserted, estimated from the fill.
    pub fn estimated_count(&self) -> u64 {
        each!(self, f => f.estimated_count())
    }

    /// The false-positive rate a query for an absent key risks now, from the fill.
    pub fn estimated_fp_rate(&self) -> f64 {
        each!(self, f => f.estimated_fp_rate())
    }

    /// Bytes of memory the filter holds.
    pub fn memory_bytes(&self) -> usize {
        each!(self, f => f.memory_bytes())
    }

    /// Adds every key of `other`.
    ///
    /// # Errors
    ///
    /// [`Error::Incompatible`] if the kinds differ, or as the kind's own `union`.
    pub fn union(&mut self, other: &Self) -> Result<()> {
        match (self, other) {
            (AnyFilter::Classic(a), AnyFilter::Classic(b)) => a.union(b),
            (AnyFilter::Blocked(a), AnyFilter::Blocked(b)) => a.union(b),
            (a, b) => Error::check_same("kind", a.kind(), b.kind()),
        }
    }

    /// Keeps only the bits both filters set.
    ///
    /// # Errors
    ///
    /// As [`union`](Self::union).
    pub fn intersect(&mut self, other: &Self) -> Result<()> {
        match (self, other) {
            (AnyFilter::Classic(a), AnyFilter::Classic(b)) => a.intersect(b),
            (AnyFilter::Blocked(a), AnyFilter::Blocked(b)) => a.intersect(b),
            (a, b) => Error::check_same("kind", a.kind(), b.kind()),
        }
    }

    /// The filter in bloomkit's file format.
    pub fn to_bytes(&self) -> Vec<u8> {
        each!(self, f => f.to_bytes())
    }

    /// Writes the filter in bloomkit's file format.
    ///
    /// # Errors
    ///
    /// [`Error::Io`] from the writer.
    pub fn write_to<W: Write>(&self, writer: W) -> Result<()> {
        each!(self, f => f.write_to(writer))
    }
}

impl From<BloomFilter> for AnyFilter {
    fn from(f: BloomFilter) -> Self {
        AnyFilter::Classic(f)
    }
}

impl From<BlockedBloomFilter> for AnyFilter {
    fn from(f: BlockedBloomFilter) -> Self {
        AnyFilter::Blocked(f)
    }
}

impl Filter for AnyFilter {
    fn contains_hash(&self, hash: u64) -> bool {
        AnyFilter::contains_hash(self, hash)
    }
    fn seed(&self) -> u64 {
        AnyFilter::seed(self)
    }
    fn kind(&self) -> FilterKind {
        AnyFilter::kind(self)
    }
    fn memory_bytes(&self) -> usize {
        AnyFilter::memory_bytes(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_do_not_mix() {
        let mut a = AnyFilter::from(BloomFilter::new(100, 0.01).unwrap());
        let b = AnyFilter::from(BlockedBloomFilter::new(100, 0.01).unwrap());
        assert!(matches!(
            a.union(&b),
            Err(Error::Incompatible {
                parameter: "kind",
                ..
            })
        ));
        assert!(a.intersect(&b).is_err());
    }

    #[test]
    fn unknown_kind_is_named() {
        let mut bytes = BloomFilter::new(10, 0.1).unwrap().to_bytes();
        bytes[10] = 77;
        // Fix the checksum so the kind is what fails.
        let n = bytes.len() - 8;
        let sum = xxhash_rust::xxh3::xxh3_64(&bytes[..n]);
        bytes[n..].copy_from_slice(&sum.to_le_bytes());
        assert!(matches!(
            AnyFilter::from_bytes(&bytes),
            Err(Error::UnknownKind { found: 77 })
        ));
    }
}
