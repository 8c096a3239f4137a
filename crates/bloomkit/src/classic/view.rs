//! [`BloomFilterRef`]: a classic filter queried in place, in the bytes of its file.

use std::fmt;

use super::{BloomFilter, ClassicProbes};
use crate::error::Result;
use crate::format::{self, FilterKind};
use crate::key::{Key, KeyHasher};
use crate::sizing;
use crate::Filter;

/// A [`BloomFilter`] read in place from the bytes [`BloomFilter::to_bytes`] writes: nothing
/// is copied, so opening one is a header check (and, unless skipped, the checksum), whatever
/// the filter's size.
///
/// For storage engines that keep filters inside their own files: hand it the filter's bytes,
/// at any address and alignment, and it answers [`contains`](Self::contains) and
/// [`contains_hash`](Self::contains_hash) exactly as the owned filter read from the same
/// bytes would, with the file's own key hasher (its seed and its key feed, bloomkit 0.1's
/// included). A probe reads one byte of the file: bit `b` of the filter is bit `b % 8` of
/// payload byte `b / 8`, since the words are stored little-endian.
///
/// # Examples
///
/// ```
/// use bloomkit::{BloomFilter, BloomFilterRef};
///
/// let mut f = BloomFilter::new(10_000, 0.01)?;
/// for i in 0..10_000u32 { f.insert(&i); }
/// let mut block = b"hdr".to_vec();
/// block.extend_from_slice(&f.to_bytes());
///
/// let view = BloomFilterRef::from_bytes(&block[3..])?;
/// assert!((0..10_000u32).all(|i| view.contains(&i)));
/// assert!((10_000..20_000u32).all(|i| view.contains(&i) == f.contains(&i)));
/// assert_eq!(view.to_filter()?, f);
/// # Ok::<(), bloomkit::Error>(())
/// ```
#[derive(Clone, Copy)]
pub struct BloomFilterRef<'a> {
    /// The whole encoding, header to checksum.
    bytes: &'a [u8],
    /// The bit array: `num_bits / 8` bytes, the words little-endian.
    bits: &'a [u8],
    num_bits: u64,
    num_hashes: u32,
    hasher: KeyHasher,
    item_count: u64,
    probes: ClassicProbes,
}

impl<'a> BloomFilterRef<'a> {
    /// A view of the classic filter `bytes` hold (exactly one, as
    /// [`to_bytes`](BloomFilter::to_bytes) writes it), after checking its header and its
    /// checksum. The checksum reads every byte once; nothing is copied or allocated.
    ///
    /// # Errors
    ///
    /// What [`BloomFilter::from_bytes`] answers for the same bytes:
    /// [`Error::BadMagic`](crate::Error::BadMagic),
    /// [`Error::Truncated`](crate::Error::Truncated),
    /// [`Error::ChecksumMismatch`](crate::Error::ChecksumMismatch),
    /// [`Error::WrongKind`](crate::Error::WrongKind) for a file of another kind,
    /// [`Error::UnsupportedVersion`](crate::Error::UnsupportedVersion),
    /// [`Error::UnknownHashAlgorithm`](crate::Error::UnknownHashAlgorithm) for a key feed
    /// this build does not know, and [`Error::Corrupt`](crate::Error::Corrupt) for fields
    /// out of range or bytes after the filter.
    pub fn from_bytes(bytes: &'a [u8]) -> Result<Self> {
        Self::open(bytes, true)
    }

    /// [`from_bytes`](Self::from_bytes) without the checksum: for a caller that has verified
    /// these bytes itself, so that opening costs only the header whatever the filter's size.
    ///
    /// Every header field is still checked, so a wrong or damaged header is an error, never
    /// a panic or a read out of bounds; but a payload damaged since it was verified gives
    /// wrong answers, false negatives included, where [`from_bytes`](Self::from_bytes) would
    /// have refused it.
    ///
    /// # Errors
    ///
    /// As [`from_bytes`](Self::from_bytes), but never
    /// [`Error::ChecksumMismatch`](crate::Error::ChecksumMismatch).
    ///
    /// # Examples
    ///
    /// ```
    /// use bloomkit::{BloomFilter, BloomFilterRef};
    ///
    /// let mut f = BloomFilter::new(1000, 0.01)?;
    /// f.insert("a");
    /// let mut bytes = f.to_bytes();
    /// let n = bytes.len();
    /// bytes[n - 1] ^= 0xff; // the checksum, damaged
    /// assert!(BloomFilterRef::from_bytes(&bytes).is_err());
    /// assert!(BloomFilterRef::from_bytes_unverified(&bytes)?.contains("a"));
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn from_bytes_unverified(bytes: &'a [u8]) -> Result<Self> {
        Self::open(bytes, false)
    }

    fn open(bytes: &'a [u8], verify: bool) -> Result<Self> {
        let parts = format::borrow_bits(bytes, FilterKind::Classic, verify)?;
        Ok(BloomFilterRef {
            bytes,
            bits: parts.payload,
            num_bits: parts.num_bits,
            num_hashes: parts.num_hashes,
            hasher: parts.hasher,
            item_count: parts.item_count,
            probes: parts.probes,
        })
    }

    /// `false` if `key` is definitely absent; `true` if it may be present: the owned
    /// filter's answer.
    #[inline]
    pub fn contains<K: Key + ?Sized>(&self, key: &K) -> bool {
        self.contains_hash(self.hasher.hash(key))
    }

    /// [`contains`](Self::contains) by a precomputed hash (from this view's
    /// [`key_hasher`](Self::key_hasher)).
    #[inline]
    pub fn contains_hash(&self, hash: u64) -> bool {
        // Every probe is below `num_bits`, and the payload holds `num_bits / 8` bytes; a byte
        // out of range (there is none) would read as set: "maybe", never a false negative.
        self.probes
            .all(hash, self.num_bits, self.num_hashes, |bit| {
                self.bits
                    .get((bit / 8) as usize)
                    .is_none_or(|byte| (byte >> (bit % 8)) & 1 == 1)
            })
    }

    /// Bits in the filter (a multiple of 64).
    pub fn num_bits(&self) -> u64 {
        self.num_bits
    }

    /// Probes per key.
    pub fn num_hashes(&self) -> u32 {
        self.num_hashes
    }

    /// How the probes are derived from a key's hash, as the file says.
    pub fn probes(&self) -> ClassicProbes {
        self.probes
    }

    /// The hash seed keys are hashed with: the file's.
    pub fn seed(&self) -> u64 {
        self.hasher.seed()
    }

    /// How keys are hashed: the file's seed and key feed. Hash a key with it to probe by
    /// hash.
    pub fn key_hasher(&self) -> KeyHasher {
        self.hasher
    }

    /// The count the file records: the owned filter's [`len`](BloomFilter::len).
    pub fn len(&self) -> u64 {
        self.item_count
    }

    /// Whether [`len`](Self::len) is zero.
    pub fn is_empty(&self) -> bool {
        self.item_count == 0
    }

    /// Bits set to one (reads every byte).
    pub fn count_ones(&self) -> u64 {
        self.bits.iter().map(|b| b.count_ones() as u64).sum()
    }

    /// The fraction of bits set, from 0 to 1 (reads every byte).
    pub fn fill_ratio(&self) -> f64 {
        self.count_ones() as f64 / self.num_bits as f64
    }

    /// The number of distinct keys inserted, estimated from the fill, as
    /// [`BloomFilter::estimated_count`] (reads every byte).
    pub fn estimated_count(&self) -> u64 {
        sizing::estimated_count(self.count_ones(), self.num_bits, self.num_hashes)
    }

    /// The false-positive rate a query for an absent key risks, as
    /// [`BloomFilter::estimated_fp_rate`] (reads every byte).
    pub fn estimated_fp_rate(&self) -> f64 {
        sizing::estimated_fp_rate(self.count_ones(), self.num_bits, self.num_hashes)
    }

    /// Bytes of memory the view itself holds: the borrowed bytes are the caller's
    /// ([`as_bytes`](Self::as_bytes)).
    pub fn memory_bytes(&self) -> usize {
        std::mem::size_of::<Self>()
    }

    /// The whole encoding the view reads, header to checksum: the bytes it was made from.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// An owned copy: the filter [`BloomFilter::from_bytes`] reads from these bytes.
    ///
    /// # Errors
    ///
    /// [`Error::TooLarge`](crate::Error::TooLarge) or
    /// [`Error::OutOfMemory`](crate::Error::OutOfMemory) if the copy does not fit.
    pub fn to_filter(&self) -> Result<BloomFilter> {
        let mut words = self.bits.chunks_exact(8).map(|chunk| {
            let mut b = [0u8; 8];
            b.copy_from_slice(chunk);
            u64::from_le_bytes(b)
        });
        let words = crate::bits::try_vec(self.num_bits / 64, || words.next().unwrap_or(0))?;
        Ok(BloomFilter::from_words(
            words,
            self.num_bits,
            self.num_hashes,
            self.hasher,
            self.item_count,
            self.probes,
        ))
    }
}

impl fmt::Debug for BloomFilterRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BloomFilterRef")
            .field("num_bits", &self.num_bits)
            .field("num_hashes", &self.num_hashes)
            .field("hasher", &self.hasher)
            .field("len", &self.item_count)
            .finish_non_exhaustive()
    }
}

impl Filter for BloomFilterRef<'_> {
    fn contains_hash(&self, hash: u64) -> bool {
        BloomFilterRef::contains_hash(self, hash)
    }
    fn key_hasher(&self) -> KeyHasher {
        self.hasher
    }
    fn kind(&self) -> FilterKind {
        FilterKind::Classic
    }
    fn memory_bytes(&self) -> usize {
        BloomFilterRef::memory_bytes(self)
    }
    fn len(&self) -> u64 {
        self.item_count
    }
    fn estimated_fp_rate(&self) -> f64 {
        BloomFilterRef::estimated_fp_rate(self)
    }
}
