//! [`BlockedBloomFilterRef`]: a blocked filter queried in place, in the bytes of its file.

use std::fmt;

use super::batch::{answer_slots, for_each_hash_batch, for_each_prefetched, Step, LINE_BYTES};
use super::probe::{line_index, BlockedProbes};
use super::unaligned::probes_set_in_bytes;
use super::{lines_estimated_count, lines_fp_rate, BlockedBloomFilter};
use crate::bits::{Line, LineArray, LINE_WORDS};
use crate::error::Result;
use crate::format::{self, FilterKind};
use crate::key::{Key, KeyHasher};
use crate::sizing::LINE_BITS;
use crate::Filter;

/// A [`BlockedBloomFilter`] read in place from the bytes [`BlockedBloomFilter::to_bytes`]
/// writes: nothing is copied, so opening one is a header check (and, unless skipped, the
/// checksum), whatever the filter's size.
///
/// For storage engines that keep filters inside their own files (an SSTable's filter block, a
/// memory-mapped index): hand it the filter's bytes, at any address and alignment, and it
/// answers [`contains`](Self::contains), [`contains_hash`](Self::contains_hash) and the
/// batched [`contains_many`](Self::contains_many) exactly as the owned filter read from the
/// same bytes would, with the file's own key hasher (its seed and its key feed, bloomkit
/// 0.1's included). A file holding an [`AtomicBloomFilter`](crate::AtomicBloomFilter) is a
/// blocked filter's, and opens too.
///
/// `BENCHMARKS.md` compares opening a 1 GiB filter from a memory-mapped file this way with
/// reading it into an owned filter, and the queries through each.
///
/// # Examples
///
/// ```
/// use bloomkit::{BlockedBloomFilter, BlockedBloomFilterRef};
///
/// let mut f = BlockedBloomFilter::new(10_000, 0.01)?;
/// for i in 0..10_000u32 { f.insert(&i); }
/// // A storage engine's block: the filter after some bytes of its own, at an odd offset.
/// let mut block = b"hdr".to_vec();
/// block.extend_from_slice(&f.to_bytes());
///
/// let view = BlockedBloomFilterRef::from_bytes(&block[3..])?;
/// assert!((0..10_000u32).all(|i| view.contains(&i)));
/// assert!((10_000..20_000u32).all(|i| view.contains(&i) == f.contains(&i)));
/// assert_eq!((view.num_bits(), view.num_hashes(), view.len()), (f.num_bits(), f.num_hashes(), f.len()));
/// # Ok::<(), bloomkit::Error>(())
/// ```
#[derive(Clone, Copy)]
pub struct BlockedBloomFilterRef<'a> {
    /// The whole encoding, header to checksum.
    bytes: &'a [u8],
    /// The lines: `num_lines` runs of 64 bytes, each a line's eight words little-endian.
    lines: &'a [u8],
    num_lines: usize,
    num_hashes: u32,
    probes: BlockedProbes,
    hasher: KeyHasher,
    item_count: u64,
}

impl<'a> BlockedBloomFilterRef<'a> {
    /// A view of the blocked filter `bytes` hold (exactly one, as
    /// [`to_bytes`](BlockedBloomFilter::to_bytes) writes it), after checking its header and
    /// its checksum. The checksum reads every byte once (at memory speed); nothing is
    /// copied or allocated.
    ///
    /// # Errors
    ///
    /// What [`BlockedBloomFilter::from_bytes`] answers for the same bytes:
    /// [`Error::BadMagic`](crate::Error::BadMagic),
    /// [`Error::Truncated`](crate::Error::Truncated),
    /// [`Error::ChecksumMismatch`](crate::Error::ChecksumMismatch),
    /// [`Error::WrongKind`](crate::Error::WrongKind) for a file of another kind,
    /// [`Error::UnsupportedVersion`](crate::Error::UnsupportedVersion),
    /// [`Error::UnknownHashAlgorithm`](crate::Error::UnknownHashAlgorithm) for a key feed
    /// this build does not know, and [`Error::Corrupt`](crate::Error::Corrupt) for fields
    /// out of range or bytes after the filter.
    ///
    /// # Examples
    ///
    /// ```
    /// use bloomkit::{BlockedBloomFilterRef, BloomFilter, Error};
    ///
    /// let classic = BloomFilter::new(100, 0.01)?.to_bytes();
    /// assert!(matches!(BlockedBloomFilterRef::from_bytes(&classic), Err(Error::WrongKind { .. })));
    /// let mut bytes = bloomkit::BlockedBloomFilter::new(100, 0.01)?.to_bytes();
    /// bytes[60] ^= 1;
    /// assert!(matches!(BlockedBloomFilterRef::from_bytes(&bytes), Err(Error::ChecksumMismatch { .. })));
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn from_bytes(bytes: &'a [u8]) -> Result<Self> {
        Self::open(bytes, true)
    }

    /// [`from_bytes`](Self::from_bytes) without the checksum: for a caller that has verified
    /// these bytes itself (its own block checksum, a file it wrote and checked at open), so
    /// that opening costs only the header, whatever the filter's size, and the payload is
    /// read only where queries go.
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
    /// use bloomkit::{BlockedBloomFilter, BlockedBloomFilterRef};
    ///
    /// let mut f = BlockedBloomFilter::new(1000, 0.01)?;
    /// f.insert("a");
    /// let mut bytes = f.to_bytes();
    /// let n = bytes.len();
    /// bytes[n - 1] ^= 0xff; // the checksum, damaged
    /// assert!(BlockedBloomFilterRef::from_bytes(&bytes).is_err());
    /// let view = BlockedBloomFilterRef::from_bytes_unverified(&bytes)?;
    /// assert!(view.contains("a"));
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn from_bytes_unverified(bytes: &'a [u8]) -> Result<Self> {
        Self::open(bytes, false)
    }

    fn open(bytes: &'a [u8], verify: bool) -> Result<Self> {
        let parts = format::borrow_bits(bytes, FilterKind::Blocked, verify)?;
        Ok(BlockedBloomFilterRef {
            bytes,
            lines: parts.payload,
            num_lines: parts.payload.len() / LINE_BYTES,
            num_hashes: parts.num_hashes,
            probes: parts.blocked_probes,
            hasher: parts.hasher,
            item_count: parts.item_count,
        })
    }

    /// Line `index` as bytes. In range for every index `line_index` gives; were one not, the
    /// answer would be "maybe" (never a false negative, never a panic).
    #[inline]
    fn line(&self, index: usize) -> Option<&'a [u8; LINE_BYTES]> {
        self.lines
            .get(index * LINE_BYTES..)
            .and_then(|rest| rest.first_chunk::<LINE_BYTES>())
    }

    /// Line `index` as words.
    fn line_words(&self, index: usize) -> Line {
        let mut line = Line::default();
        if let Some(bytes) = self.line(index) {
            for (w, chunk) in line.0.iter_mut().zip(bytes.chunks_exact(8)) {
                let mut b = [0u8; 8];
                b.copy_from_slice(chunk);
                *w = u64::from_le_bytes(b);
            }
        }
        line
    }

    /// The lines in order, as words.
    fn all_lines(&self) -> impl Iterator<Item = Line> + '_ {
        (0..self.num_lines).map(|i| self.line_words(i))
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
        match self.line(line_index(hash, self.num_lines)) {
            Some(line) => probes_set_in_bytes(line, self.probes.key(hash), self.num_hashes),
            None => true,
        }
    }

    /// Answers for many keys at once, appended to `answers` in order, as
    /// [`BlockedBloomFilter::contains_many`] does: hashed and prefetched in batches, so the
    /// cache misses overlap.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut f = bloomkit::BlockedBloomFilter::new(1000, 0.01)?;
    /// f.insert_many(&["a", "b"]);
    /// let bytes = f.to_bytes();
    /// let view = bloomkit::BlockedBloomFilterRef::from_bytes(&bytes)?;
    /// let mut answers = Vec::new();
    /// view.contains_many(&["a", "zzz", "b"], &mut answers);
    /// assert_eq!(answers, [true, false, true]);
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn contains_many<K: Key>(&self, keys: &[K], answers: &mut Vec<bool>) {
        answers.reserve(keys.len());
        for_each_hash_batch(keys, self.hasher, |hashes| {
            self.contains_many_hashes(hashes, answers)
        });
    }

    /// [`contains_many`](Self::contains_many) by precomputed hashes.
    pub fn contains_many_hashes(&self, hashes: &[u64], answers: &mut Vec<bool>) {
        let mut slots = answer_slots(answers, hashes.len()).iter_mut();
        for_each_prefetched(
            hashes,
            self.num_lines,
            #[inline(always)]
            |step| match step {
                Step::Prefetch(index) => {
                    // A line of the file starts wherever the file put it, so it may straddle
                    // two cache lines: ask for both ends.
                    if let Some(line) = self.line(index) {
                        crate::prefetch::prefetch_read(&line[0]);
                        crate::prefetch::prefetch_read(&line[LINE_BYTES - 1]);
                    }
                }
                Step::Visit(index, hash) => {
                    if let Some(slot) = slots.next() {
                        *slot = match self.line(index) {
                            Some(line) => {
                                probes_set_in_bytes(line, self.probes.key(hash), self.num_hashes)
                            }
                            None => true,
                        };
                    }
                }
            },
        );
    }

    /// Bits in the filter (a multiple of 512).
    pub fn num_bits(&self) -> u64 {
        self.num_lines as u64 * LINE_BITS
    }

    /// How the probes are derived from a key's hash, as the owned filter's
    /// [`probes`](BlockedBloomFilter::probes).
    pub fn probes(&self) -> BlockedProbes {
        self.probes
    }

    /// Probes per key.
    pub fn num_hashes(&self) -> u32 {
        self.num_hashes
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

    /// The count the file records: the owned filter's [`len`](BlockedBloomFilter::len).
    pub fn len(&self) -> u64 {
        self.item_count
    }

    /// Whether [`len`](Self::len) is zero.
    pub fn is_empty(&self) -> bool {
        self.item_count == 0
    }

    /// Bits set to one (reads every line).
    pub fn count_ones(&self) -> u64 {
        self.all_lines()
            .map(|line| line.0.iter().map(|w| w.count_ones() as u64).sum::<u64>())
            .sum()
    }

    /// The fraction of bits set, from 0 to 1 (reads every line).
    pub fn fill_ratio(&self) -> f64 {
        self.count_ones() as f64 / self.num_bits() as f64
    }

    /// The number of distinct keys inserted, estimated from the fill of each line, as
    /// [`BlockedBloomFilter::estimated_count`] (reads every line).
    pub fn estimated_count(&self) -> u64 {
        lines_estimated_count(self.all_lines(), self.num_hashes)
    }

    /// The false-positive rate a query for an absent key risks, as
    /// [`BlockedBloomFilter::estimated_fp_rate`] (reads every line).
    pub fn estimated_fp_rate(&self) -> f64 {
        lines_fp_rate(self.all_lines(), self.num_hashes)
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

    /// An owned copy: the filter [`BlockedBloomFilter::from_bytes`] reads from these bytes.
    ///
    /// # Errors
    ///
    /// [`Error::TooLarge`](crate::Error::TooLarge) or
    /// [`Error::OutOfMemory`](crate::Error::OutOfMemory) if the copy does not fit.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut f = bloomkit::BlockedBloomFilter::new(1000, 0.01)?;
    /// f.insert("a");
    /// let bytes = f.to_bytes();
    /// let view = bloomkit::BlockedBloomFilterRef::from_bytes(&bytes)?;
    /// assert_eq!(view.to_filter()?, f);
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn to_filter(&self) -> Result<BlockedBloomFilter> {
        let mut lines = self.all_lines();
        let lines =
            crate::bits::try_vec(self.num_lines as u64, || lines.next().unwrap_or_default())?;
        Ok(BlockedBloomFilter::from_parts(
            LineArray::from_lines(lines),
            self.num_hashes,
            self.probes,
            self.hasher,
            self.item_count,
        ))
    }
}

impl fmt::Debug for BlockedBloomFilterRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BlockedBloomFilterRef")
            .field("num_bits", &self.num_bits())
            .field("num_hashes", &self.num_hashes)
            .field("probes", &self.probes)
            .field("hasher", &self.hasher)
            .field("len", &self.item_count)
            .finish_non_exhaustive()
    }
}

impl Filter for BlockedBloomFilterRef<'_> {
    fn contains_hash(&self, hash: u64) -> bool {
        BlockedBloomFilterRef::contains_hash(self, hash)
    }
    fn key_hasher(&self) -> KeyHasher {
        self.hasher
    }
    fn kind(&self) -> FilterKind {
        FilterKind::Blocked
    }
    fn memory_bytes(&self) -> usize {
        BlockedBloomFilterRef::memory_bytes(self)
    }
    fn len(&self) -> u64 {
        self.item_count
    }
    fn estimated_fp_rate(&self) -> f64 {
        BlockedBloomFilterRef::estimated_fp_rate(self)
    }
}

// Lines are read as their eight words; a line of the format is exactly that many bytes.
const _: () = assert!(LINE_WORDS * 8 == LINE_BYTES);
