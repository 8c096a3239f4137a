//! Raw bit arrays: the storage under the typed filters.
//!
//! * [`BitArray`]: a flat array of 64-bit words, for the classic filter.
//! * [`LineArray`]: 64-byte lines aligned to cache lines, for the blocked filter. A line of a
//!   plain `Vec<u64>` would start wherever the allocator put the buffer (glibc's large blocks
//!   start 16 bytes into a page), and most lines would straddle two cache lines: two misses
//!   per query instead of one.
//! * [`AtomicLineArray`]: the same lines with atomic words, for the concurrent filter.
//!
//! All three number their bits the same way (bit `b` is bit `b % 64` of word `b / 64`, and
//! word `w` of a line array is word `w % 8` of line `w / 8`), and all three serialize as that
//! word sequence, little-endian. That is what lets a blocked filter and an atomic one
//! convert into each other, and share a file format, bit for bit.
//!
//! Allocation goes through `try_reserve_exact`, so a request the allocator refuses is an
//! [`Error::OutOfMemory`], never an abort.
//!
//! `bit_array_methods!` writes the methods the kinds built on these arrays share (the seed,
//! `is_empty`, the compatibility check, `union` and `intersect`) once for all of them.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{Error, Result};

/// Words in one 512-bit line.
pub(crate) const LINE_WORDS: usize = 8;

/// Allocates a vector of `len` elements made by `make`, or reports how many bytes failed.
pub(crate) fn try_vec<T>(len: u64, mut make: impl FnMut() -> T) -> Result<Vec<T>> {
    let bytes = len.saturating_mul(std::mem::size_of::<T>() as u64);
    let too_large = || Error::TooLarge {
        num_bits: bytes.saturating_mul(8),
    };
    let len = usize::try_from(len).map_err(|_| too_large())?;
    if bytes > isize::MAX as u64 {
        return Err(too_large());
    }
    let mut v = Vec::new();
    v.try_reserve_exact(len)
        .map_err(|_| Error::OutOfMemory { bytes })?;
    v.resize_with(len, &mut make);
    Ok(v)
}

/// A flat bit array of 64-bit words.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct BitArray {
    words: Vec<u64>,
}

impl BitArray {
    /// An all-zero array of `num_words` words.
    pub(crate) fn zeroed(num_words: u64) -> Result<Self> {
        Ok(BitArray {
            words: try_vec(num_words, || 0)?,
        })
    }

    /// An array over existing words.
    pub(crate) fn from_words(words: Vec<u64>) -> Self {
        BitArray { words }
    }

    pub(crate) fn words(&self) -> &[u64] {
        &self.words
    }

    /// Sets bit `bit` and reports whether it was zero before.
    #[inline]
    pub(crate) fn set(&mut self, bit: u64) -> bool {
        let word = &mut self.words[(bit / 64) as usize];
        let mask = 1u64 << (bit % 64);
        let was_zero = *word & mask == 0;
        *word |= mask;
        was_zero
    }

    #[inline]
    pub(crate) fn get(&self, bit: u64) -> bool {
        self.words[(bit / 64) as usize] & (1u64 << (bit % 64)) != 0
    }

    pub(crate) fn count_ones(&self) -> u64 {
        self.words.iter().map(|w| w.count_ones() as u64).sum()
    }

    /// Sets every bit to zero, keeping the memory.
    pub(crate) fn clear(&mut self) {
        self.words.fill(0);
    }

    pub(crate) fn union_with(&mut self, other: &Self) {
        for (a, b) in self.words.iter_mut().zip(&other.words) {
            *a |= b;
        }
    }

    pub(crate) fn intersect_with(&mut self, other: &Self) {
        for (a, b) in self.words.iter_mut().zip(&other.words) {
            *a &= b;
        }
    }

    pub(crate) fn memory_bytes(&self) -> usize {
        self.words.capacity() * std::mem::size_of::<u64>()
    }
}

/// One 64-byte line, aligned to a cache line.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
#[repr(C, align(64))]
pub(crate) struct Line(pub(crate) [u64; LINE_WORDS]);

/// An array of cache-line-aligned 512-bit lines.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct LineArray {
    lines: Vec<Line>,
}

impl LineArray {
    /// An all-zero array of `num_lines` lines.
    pub(crate) fn zeroed(num_lines: u64) -> Result<Self> {
        Ok(LineArray {
            lines: try_vec(num_lines, Line::default)?,
        })
    }

    pub(crate) fn from_lines(lines: Vec<Line>) -> Self {
        LineArray { lines }
    }

    pub(crate) fn lines(&self) -> &[Line] {
        &self.lines
    }

    #[cfg(feature = "parallel")]
    pub(crate) fn lines_mut(&mut self) -> &mut [Line] {
        &mut self.lines
    }

    pub(crate) fn len(&self) -> usize {
        self.lines.len()
    }

    #[inline]
    pub(crate) fn line(&self, index: usize) -> &Line {
        &self.lines[index]
    }

    #[inline]
    pub(crate) fn line_mut(&mut self, index: usize) -> &mut Line {
        &mut self.lines[index]
    }

    /// The words in file order.
    pub(crate) fn words(&self) -> impl Iterator<Item = u64> + '_ {
        self.lines.iter().flat_map(|line| line.0)
    }

    /// The words in file order, a line at a time.
    pub(crate) fn line_words(&self) -> impl Iterator<Item = &[u64]> + '_ {
        self.lines.iter().map(|line| &line.0[..])
    }

    pub(crate) fn count_ones(&self) -> u64 {
        self.words().map(|w| w.count_ones() as u64).sum()
    }

    pub(crate) fn union_with(&mut self, other: &Self) {
        for (a, b) in self.lines.iter_mut().zip(&other.lines) {
            for (x, y) in a.0.iter_mut().zip(b.0) {
                *x |= y;
            }
        }
    }

    pub(crate) fn intersect_with(&mut self, other: &Self) {
        for (a, b) in self.lines.iter_mut().zip(&other.lines) {
            for (x, y) in a.0.iter_mut().zip(b.0) {
                *x &= y;
            }
        }
    }

    pub(crate) fn memory_bytes(&self) -> usize {
        self.lines.capacity() * std::mem::size_of::<Line>()
    }
}

/// One 64-byte line of atomic words, aligned to a cache line.
#[derive(Default)]
#[repr(C, align(64))]
pub(crate) struct AtomicLine(pub(crate) [AtomicU64; LINE_WORDS]);

impl AtomicLine {
    pub(crate) fn load(&self) -> Line {
        Line(std::array::from_fn(|i| self.0[i].load(Ordering::Relaxed)))
    }
}

/// An array of cache-line-aligned lines of atomic words.
///
/// Every access is `Relaxed`: a filter's bits only ever go from 0 to 1 during inserts, each
/// bit is independent, and no other memory is published through them, so there is nothing to
/// order. A reader racing an insert sees each bit either before or after it is set, and an
/// insert that returned is seen by every later query (a `Relaxed` read-modify-write is still
/// coherent per word).
pub(crate) struct AtomicLineArray {
    lines: Vec<AtomicLine>,
}

impl AtomicLineArray {
    pub(crate) fn zeroed(num_lines: u64) -> Result<Self> {
        Ok(AtomicLineArray {
            lines: try_vec(num_lines, AtomicLine::default)?,
        })
    }

    /// A copy of the bits of a plain line array.
    pub(crate) fn from_line_array(src: &LineArray) -> Result<Self> {
        let mut lines = src.lines().iter();
        let lines = try_vec(src.len() as u64, || {
            let line = lines.next().copied().unwrap_or_default();
            AtomicLine(line.0.map(AtomicU64::new))
        })?;
        Ok(AtomicLineArray { lines })
    }

    /// A copy of the bits as a plain line array.
    pub(crate) fn to_line_array(&self) -> Result<LineArray> {
        let mut lines = self.lines.iter();
        let lines = try_vec(self.lines.len() as u64, || {
            lines.next().map(AtomicLine::load).unwrap_or_default()
        })?;
        Ok(LineArray::from_lines(lines))
    }

    /// A copy of the current bits, for `Clone` (which, like every `Clone` of a buffer,
    /// aborts if the allocator refuses).
    pub(crate) fn snapshot(&self) -> Self {
        let lines = self
            .lines
            .iter()
            .map(|line| AtomicLine(line.load().0.map(AtomicU64::new)))
            .collect();
        AtomicLineArray { lines }
    }

    pub(crate) fn len(&self) -> usize {
        self.lines.len()
    }

    #[inline]
    pub(crate) fn line(&self, index: usize) -> &AtomicLine {
        &self.lines[index]
    }

    /// The words in file order.
    pub(crate) fn words(&self) -> impl Iterator<Item = u64> + '_ {
        self.lines.iter().flat_map(|line| line.load().0)
    }

    pub(crate) fn count_ones(&self) -> u64 {
        self.words().map(|w| w.count_ones() as u64).sum()
    }

    /// Sets every bit to zero; `&mut self`, so no insert can be racing it.
    pub(crate) fn clear(&mut self) {
        for line in &mut self.lines {
            for word in &mut line.0 {
                *word.get_mut() = 0;
            }
        }
    }

    /// Applies `op` word by word against `other`'s current bits, atomically per word.
    pub(crate) fn combine_with(&self, other: &Self, union: bool) {
        for (a, b) in self.lines.iter().zip(&other.lines) {
            for (x, y) in a.0.iter().zip(&b.0) {
                let y = y.load(Ordering::Relaxed);
                if union {
                    x.fetch_or(y, Ordering::Relaxed);
                } else {
                    x.fetch_and(y, Ordering::Relaxed);
                }
            }
        }
    }

    pub(crate) fn memory_bytes(&self) -> usize {
        self.lines.capacity() * std::mem::size_of::<AtomicLine>()
    }
}

/// The methods the kinds built on one array of bits or counters (classic, blocked, sector,
/// atomic, counting) have alike, written once, as [`format_methods!`](crate::format) writes
/// their format's: [`seed`], [`key_hasher`] and `is_empty` for each; `check_compatible`, the
/// test `union` and `intersect` make, from the parameters that must agree (each named for the
/// error, and read by a method of the kind), then the hash seed and the key feed; and, with
/// `set_ops: field`, `union` and `intersect` of a kind whose `field` is a [`BitArray`] or a
/// [`LineArray`], after which the count is the fill-based `estimated_count`.
///
/// [`seed`]: crate::KeyHasher::seed
/// [`key_hasher`]: crate::KeyHasher
macro_rules! bit_array_methods {
    (
        $ty:ty,
        same: [$($what:literal => $param:ident $(. $then:ident)*),* $(,)?]
        $(, set_ops: $array:ident)? $(,)?
    ) => {
        impl $ty {
            /// The hash seed keys are hashed with.
            pub fn seed(&self) -> u64 {
                self.hasher.seed()
            }

            /// How keys are hashed: the seed, and whether as today or as bloomkit 0.1 did (a
            /// filter read from a 0.1 file). Hash a key with it to probe by hash.
            pub fn key_hasher(&self) -> $crate::KeyHasher {
                self.hasher
            }

            /// Whether [`len`](Self::len) is zero.
            ///
            /// # Examples
            ///
            /// ```
            #[doc = concat!("let mut f = bloomkit::", stringify!($ty), "::new(100, 0.01)?;")]
            /// assert!(f.is_empty());
            /// f.insert("a");
            /// assert!(!f.is_empty());
            /// # Ok::<(), bloomkit::Error>(())
            /// ```
            pub fn is_empty(&self) -> bool {
                self.len() == 0
            }

            /// Whether `other` can be combined with this filter: the same parameters, seed
            /// and key feed; else [`Error::Incompatible`](crate::Error::Incompatible) naming
            /// the first that differs.
            pub(crate) fn check_compatible(&self, other: &Self) -> $crate::Result<()> {
                $($crate::Error::check_same(
                    $what,
                    self.$param()$(.$then())*,
                    other.$param()$(.$then())*,
                )?;)*
                $crate::Error::check_same("hash seed", self.hasher.seed(), other.hasher.seed())?;
                $crate::Error::check_same("key feed", self.hasher.feed(), other.hasher.feed())
            }
        }

        $(
        impl $ty {
            /// Adds every key of `other` (bitwise OR): afterwards this filter answers "maybe"
            /// for every key either filter held, and [`len`](Self::len) is the fill-based
            /// [`estimated_count`](Self::estimated_count).
            ///
            /// # Errors
            ///
            /// [`Error::Incompatible`](crate::Error::Incompatible) unless both have the same
            /// bits, probes and seed; this filter is then unchanged.
            pub fn union(&mut self, other: &Self) -> $crate::Result<()> {
                self.check_compatible(other)?;
                self.$array.union_with(&other.$array);
                self.item_count = self.estimated_count();
                Ok(())
            }

            /// Keeps only the bits both filters set (bitwise AND): afterwards this filter
            /// answers "maybe" for every key both held (and, as a Bloom filter of the
            /// intersection, a few more false positives than one built from it directly).
            ///
            /// # Errors
            ///
            /// [`Error::Incompatible`](crate::Error::Incompatible) as for
            /// [`union`](Self::union).
            pub fn intersect(&mut self, other: &Self) -> $crate::Result<()> {
                self.check_compatible(other)?;
                self.$array.intersect_with(&other.$array);
                self.item_count = self.estimated_count();
                Ok(())
            }
        }
        )?
    };
}
pub(crate) use bit_array_methods;

/// A blocked layout's lines as its batched queries walk them ([`LineArray`] or
/// [`AtomicLineArray`]), so that one walk serves both.
pub(crate) trait Lines {
    /// One 512-bit line.
    type Line;

    /// How many lines there are.
    fn num_lines(&self) -> usize;

    /// Line `index`, which is below [`num_lines`](Self::num_lines).
    fn line_at(&self, index: usize) -> &Self::Line;
}

impl Lines for LineArray {
    type Line = Line;

    #[inline(always)]
    fn num_lines(&self) -> usize {
        self.len()
    }

    #[inline(always)]
    fn line_at(&self, index: usize) -> &Line {
        self.line(index)
    }
}

impl Lines for AtomicLineArray {
    type Line = AtomicLine;

    #[inline(always)]
    fn num_lines(&self) -> usize {
        self.len()
    }

    #[inline(always)]
    fn line_at(&self, index: usize) -> &AtomicLine {
        self.line(index)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_cache_aligned() {
        assert_eq!(std::mem::size_of::<Line>(), 64);
        assert_eq!(std::mem::align_of::<Line>(), 64);
        assert_eq!(std::mem::size_of::<AtomicLine>(), 64);
        let a = LineArray::zeroed(3).unwrap();
        assert_eq!(a.lines().as_ptr() as usize % 64, 0);
        assert_eq!(a.memory_bytes(), 192);
    }

    #[test]
    fn impossible_sizes_are_errors() {
        assert!(matches!(
            BitArray::zeroed(u64::MAX),
            Err(Error::TooLarge { .. })
        ));
        assert!(matches!(
            LineArray::zeroed(u64::MAX / 64),
            Err(Error::TooLarge { .. })
        ));
        // Addressable but far beyond any machine's memory.
        assert!(matches!(
            BitArray::zeroed(1 << 58),
            Err(Error::OutOfMemory { .. })
        ));
    }

    #[test]
    fn set_get_count() {
        let mut a = BitArray::zeroed(2).unwrap();
        assert!(a.set(0));
        assert!(!a.set(0));
        assert!(a.set(127));
        assert!(a.get(127) && a.get(0) && !a.get(64));
        assert_eq!(a.count_ones(), 2);
    }

    #[test]
    fn atomic_round_trip_keeps_bits() {
        let mut plain = LineArray::zeroed(2).unwrap();
        plain.line_mut(1).0[7] = 0x8000_0000_0000_0001;
        plain.line_mut(0).0[0] = 5;
        let atomic = AtomicLineArray::from_line_array(&plain).unwrap();
        assert_eq!(
            atomic.words().collect::<Vec<_>>(),
            plain.words().collect::<Vec<_>>()
        );
        assert!(atomic.to_line_array().unwrap() == plain);
        assert_eq!(atomic.count_ones(), 4);
    }
}
