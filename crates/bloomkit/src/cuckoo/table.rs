//! The storage under [`super::CuckooFilter`]: one sub-filter's buckets of packed fingerprint
//! slots, the bucket-pair arithmetic, and the kick chain.
//!
//! # Slots
//!
//! A sub-filter of `M` buckets of `b` slots of `f` bits is one run of `M·b·f` bits in 64-bit
//! words: slot `s` of bucket `i` is bits `(i·b + s)·f ..` (least significant first), so the
//! payload is the words themselves and no bit is wasted between buckets. A slot holding 0 is
//! empty; fingerprints are never 0. One guard word after the last keeps every read of two
//! adjacent words in bounds without a branch (it is always zero and is not serialized).
//!
//! When a whole bucket fits in 64 bits (`b·f ≤ 64`: 4 slots of up to 16 bits, RedisBloom's 2
//! slots of 8), a bucket is read with one unaligned two-word load and searched with a SWAR
//! comparison of all its lanes at once; wider buckets fall back to a slot-by-slot loop.
//! Every fingerprint size shares this one packed path, byte-sized ones included: a query
//! measures ≈10–12 ns at f = 10 and at f = 13 on a filter of a million keys (the bench
//! crate's `million cuckoo`), where the two bucket loads dominate, so separate `u8`/`u16` slot
//! arrays would save a shift and a mask per bucket and were not worth a second layout.
//!
//! # Buckets
//!
//! A key with mixed hash `x` and fingerprint `fp` may live in bucket `i1 = x mod M` or in
//! `i2 = alt(i1) = ((H(fp) mod M) − i1) mod M` (exact integer arithmetic, not wrapping),
//! where `H` spreads the fingerprint over 64 bits (and, in the current placement, is odd: see
//! [`Layout::offset`]). `alt` is an involution for every `M` (`alt(alt(i)) = i`), so the
//! bucket count need not be a power
//! of two, and a fingerprint's other bucket is found from its bucket and itself alone, which
//! is what moving it during a kick needs. Both expressions reduce consistently modulo any
//! divisor of `M`: a fingerprint in bucket `i` of a sub-filter of `M` buckets belongs in
//! bucket `i mod M'` (or its alternate) of a sub-filter of `M'` buckets when `M'` divides
//! `M`. Sub-filters grow by whole factors, so compaction can move fingerprints into older
//! sub-filters without knowing the keys. Remainders use Lemire's exact "fastmod" (four
//! multiplies) rather than a hardware division: 2.6–3.8 ns against 3.3–6.4 ns per dependent
//! remainder on this project's AMD EPYC test machine, and a larger gain on CPUs with slower
//! 64-bit division.

use std::collections::BTreeSet;

use super::builder::CuckooPlacement;
use crate::bits::try_vec;
use crate::error::{Error, Result};

/// The widest fingerprint: slot values are read and compared as `u32`.
pub(crate) const MAX_FINGERPRINT_BITS: u32 = crate::sizing::CUCKOO_MAX_FINGERPRINT_BITS;

/// The narrowest fingerprint: below 4 bits a filter answers "maybe" to most queries.
pub(crate) const MIN_FINGERPRINT_BITS: u32 = crate::sizing::CUCKOO_MIN_FINGERPRINT_BITS;

/// Spreads a fingerprint over 64 bits for the alternate-bucket offset `H(fp)` (see
/// [`Layout::offset`] for the offset a filter uses).
#[inline(always)]
fn fp_offset(fp: u32) -> u64 {
    let m = (fp as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    m ^ (m >> 29)
}

/// The bucket-selection hash of a key: the key hash through the murmur3 finalizer, a
/// bijection whose every output bit depends on every input bit, so its remainder modulo any
/// bucket count is independent of the fingerprint (taken from the key hash's top 32 bits).
#[inline(always)]
pub(crate) fn bucket_hash(hash: u64) -> u64 {
    let mut x = hash;
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

/// The fingerprint of a key: its hash's top 32 bits mapped onto `1 ..= 2^f − 1` by
/// multiply-shift, so it is never 0 (the empty slot) and every value is equally likely.
#[inline(always)]
pub(crate) fn fingerprint(hash: u64, fp_bits: u32) -> u32 {
    let top = hash >> 32;
    let values = (1u64 << fp_bits) - 1;
    (1 + ((top * values) >> 32)) as u32
}

/// An exact remainder by a fixed divisor without a division (Lemire, Kaser & Kurz, "Faster
/// remainder by direct computation", 2019): with a 128-bit magic constant the result is
/// exact for every 64-bit dividend and divisor.
///
/// A power of two (every RedisBloom-shaped filter's bucket count) is reduced by its mask
/// instead: the same remainder, for one well-predicted branch (a `CF.ADD` inside Redis
/// measured 2,651 → 2,630 instructions, callgrind).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Modulus {
    divisor: u64,
    magic: u128,
    /// `divisor − 1` when the divisor is a power of two, else `NOT_A_POWER` (no power of
    /// two below 2^64 has this mask). A plain word: it fits where the 128-bit constant's
    /// alignment left padding, so a sub-filter is no larger.
    mask: u64,
}

/// [`Modulus::mask`] of a divisor that is not a power of two.
const NOT_A_POWER: u64 = u64::MAX;

impl Modulus {
    /// `divisor` must be at least 1.
    pub(crate) fn new(divisor: u64) -> Self {
        debug_assert!(divisor >= 1);
        // ⌈2^128 / d⌉; for d = 1 this wraps to 0, and the remainder is then always 0, as it
        // should be.
        let magic = (u128::MAX / divisor.max(1) as u128).wrapping_add(1);
        let divisor = divisor.max(1);
        Modulus {
            divisor,
            magic,
            mask: if divisor.is_power_of_two() {
                divisor - 1
            } else {
                NOT_A_POWER
            },
        }
    }

    #[inline(always)]
    pub(crate) fn rem(&self, a: u64) -> u64 {
        if self.mask != NOT_A_POWER {
            return a & self.mask;
        }
        let low = self.magic.wrapping_mul(a as u128);
        let d = self.divisor as u128;
        let bottom = ((low as u64) as u128 * d) >> 64;
        let top = (low >> 64) * d;
        ((bottom + top) >> 64) as u64
    }

    pub(crate) fn divisor(&self) -> u64 {
        self.divisor
    }
}

/// The shape shared by all sub-filters of a filter: slots per bucket, bits per slot, where a
/// key's second bucket lies, and the SWAR constants for buckets that fit in one 64-bit lane
/// group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Layout {
    pub(crate) bucket_size: u32,
    pub(crate) fp_bits: u32,
    /// 1 for [`CuckooPlacement::Distinct`] (every offset odd), 0 for
    /// [`CuckooPlacement::Original`].
    offset_low_bit: u64,
    bucket_bits: u32,
    /// `1` in the lowest bit of every lane.
    lanes_one: u64,
    /// `1` in the highest bit of every lane.
    lanes_high: u64,
    /// Every bit of every lane except its highest.
    lanes_low: u64,
    bucket_mask: u64,
    /// No bucket straddles two words (`b·f` divides 64: RedisBloom's 2 slots of 8 bits, 4
    /// of 16): a bucket is one shift of one word.
    word_buckets: bool,
    /// No slot straddles two words (`f` divides 64): a slot is written in one word.
    word_slots: bool,
    /// Bucket size (low 32 bits), fingerprint bits (the next 31) and placement (the top
    /// bit) in one word, which determine the rest: what [`Layout::is_redisbloom`] compares.
    /// (Exact for every width up to 2^31; the builder and the decoder allow 32.)
    shape: u64,
}

impl Layout {
    pub(crate) const fn new(bucket_size: u32, fp_bits: u32, placement: CuckooPlacement) -> Self {
        let bucket_bits = bucket_size * fp_bits;
        let (mut lanes_one, mut lanes_high, mut bucket_mask) = (0u64, 0u64, 0u64);
        if bucket_bits <= 64 {
            let mut s = 0;
            while s < bucket_size {
                lanes_one |= 1 << (s * fp_bits);
                lanes_high |= 1 << (s * fp_bits + fp_bits - 1);
                s += 1;
            }
            bucket_mask = if bucket_bits == 64 {
                u64::MAX
            } else {
                (1 << bucket_bits) - 1
            };
        }
        Layout {
            bucket_size,
            fp_bits,
            offset_low_bit: match placement {
                CuckooPlacement::Distinct => 1,
                CuckooPlacement::Original => 0,
            },
            bucket_bits,
            lanes_one,
            lanes_high,
            lanes_low: bucket_mask & !lanes_high,
            bucket_mask,
            word_buckets: bucket_bits != 0 && bucket_bits <= 64 && 64 % bucket_bits == 0,
            word_slots: fp_bits != 0 && 64 % fp_bits == 0,
            shape: bucket_size as u64
                | ((fp_bits & 0x7fff_ffff) as u64) << 32
                | match placement {
                    CuckooPlacement::Distinct => 1 << 63,
                    CuckooPlacement::Original => 0,
                },
        }
    }

    /// RedisBloom's buckets (two 8-bit slots) with the default placement: the layout of a
    /// `CF.RESERVE` or `CF.ADD` at RedisBloom's default bucket size, for which the table's
    /// code is compiled a second time with the shape as constants (see
    /// [`Layout::is_redisbloom`]).
    pub(crate) const REDISBLOOM: Layout = Layout::new(2, 8, CuckooPlacement::Distinct);

    /// Whether this is [`Layout::REDISBLOOM`]. A caller that then passes `&Layout::REDISBLOOM`
    /// to the table's always-inlined operations gets them with every mask, shift and
    /// branch on the shape folded: a `CF.ADD`'s insert inside Redis measured 173 → 142
    /// instructions (callgrind).
    #[inline(always)]
    pub(crate) fn is_redisbloom(&self) -> bool {
        self.shape == Self::REDISBLOOM.shape
    }

    /// The alternate-bucket offset of `fp`: the second bucket of a key in bucket `i` of `M`
    /// is `(offset mod M) − i` (mod M).
    ///
    /// With [`CuckooPlacement::Distinct`] the offset is odd, and then the two buckets differ
    /// whenever `M` is even: `2·i ≡ offset (mod M)` has no solution, since `M` even keeps
    /// the remainder odd. So in RedisBloom's power-of-two tables every key has two buckets
    /// (one even, one odd) in every sub-filter of two or more, and copies of a key take
    /// `2·b` slots per sub-filter, not `b`. (An odd `M`, possible only in the library's
    /// sizing, still has one bucket that is its own alternate, for one key in `M`.)
    #[inline(always)]
    pub(crate) fn offset(&self, fp: u32) -> u64 {
        fp_offset(fp) | self.offset_low_bit
    }

    #[inline(always)]
    fn swar(&self) -> bool {
        self.bucket_bits <= 64
    }

    #[inline(always)]
    fn fp_mask(&self) -> u64 {
        (1u64 << self.fp_bits) - 1
    }

    /// The highest bit of every lane of `v` that is zero, and no other bit. (Exact, unlike
    /// the shorter `(v − ones) & !v & high`, which may also flag lanes above a zero one.)
    #[inline(always)]
    fn zero_lanes(&self, v: u64) -> u64 {
        !(((v & self.lanes_low).wrapping_add(self.lanes_low)) | v | self.lanes_low)
            & self.lanes_high
    }

    /// Words (without the guard) for `num_buckets` buckets, or `None` on overflow.
    pub(crate) fn words_for(&self, num_buckets: u64) -> Option<u64> {
        let bits = num_buckets.checked_mul(self.bucket_bits as u64)?;
        Some(bits.div_ceil(64))
    }
}

/// Reads `mask`'s width of bits at bit offset `off` (the field may straddle two words; the
/// guard word keeps `w + 1` in bounds).
#[inline]
fn read_bits(words: &[u64], off: u64, mask: u64) -> u64 {
    let w = (off / 64) as usize;
    let pair = words[w] as u128 | (words[w + 1] as u128) << 64;
    ((pair >> (off % 64)) as u64) & mask
}

#[inline]
fn write_bits(words: &mut [u64], off: u64, mask: u64, value: u64) {
    let w = (off / 64) as usize;
    let shift = off % 64;
    let pair = words[w] as u128 | (words[w + 1] as u128) << 64;
    let m = (mask as u128) << shift;
    let pair = (pair & !m) | ((value as u128) << shift);
    words[w] = pair as u64;
    words[w + 1] = (pair >> 64) as u64;
}

/// One sub-filter: `num_buckets` buckets of the filter's [`Layout`].
#[derive(Clone, Debug)]
pub(crate) struct SubFilter {
    modulus: Modulus,
    /// Slot words, then one zero guard word.
    words: Vec<u64>,
    /// Non-empty slots.
    occupied: u64,
}

/// A key's fingerprint and the two values its buckets derive from in every sub-filter.
#[derive(Clone, Copy, Debug)]
pub(crate) struct KeyParts {
    pub(crate) fp: u32,
    /// The bucket-selection hash: bucket `x mod M`.
    pub(crate) x: u64,
    /// `H(fp)`: the alternate bucket is `(offset − i) mod M`.
    pub(crate) offset: u64,
}

impl KeyParts {
    #[inline(always)]
    pub(crate) fn new(hash: u64, layout: &Layout) -> Self {
        let fp = fingerprint(hash, layout.fp_bits);
        KeyParts {
            fp,
            x: bucket_hash(hash),
            offset: layout.offset(fp),
        }
    }
}

impl SubFilter {
    /// An empty sub-filter of `num_buckets ≥ 1` buckets.
    pub(crate) fn new(layout: &Layout, num_buckets: u64) -> Result<Self> {
        let words = layout
            .words_for(num_buckets)
            .and_then(|w| w.checked_add(1))
            .ok_or(Error::TooLarge { num_bits: u64::MAX })?;
        Ok(SubFilter {
            modulus: Modulus::new(num_buckets),
            words: try_vec(words, || 0)?,
            occupied: 0,
        })
    }

    /// A sub-filter over decoded words (without the guard), checking that padding bits past
    /// the last slot are zero and counting the occupied slots.
    pub(crate) fn from_words(
        layout: &Layout,
        num_buckets: u64,
        mut words: Vec<u64>,
    ) -> Result<Self> {
        let bits = num_buckets * layout.bucket_bits as u64;
        if let Some(&last) = words.last() {
            let used = bits % 64;
            if used != 0 && last >> used != 0 {
                return Err(Error::corrupt(
                    "bits past the last cuckoo slot are set (they must be zero)",
                ));
            }
        }
        words.try_reserve_exact(1).map_err(|_| Error::OutOfMemory {
            bytes: (words.len() as u64 + 1) * 8,
        })?;
        words.push(0);
        let mut sub = SubFilter {
            modulus: Modulus::new(num_buckets),
            words,
            occupied: 0,
        };
        sub.occupied = sub.count_occupied(layout);
        Ok(sub)
    }

    pub(crate) fn num_buckets(&self) -> u64 {
        self.modulus.divisor()
    }

    pub(crate) fn occupied(&self) -> u64 {
        self.occupied
    }

    /// The slot words, without the guard: the serialized payload.
    pub(crate) fn words(&self) -> &[u64] {
        &self.words[..self.words.len() - 1]
    }

    /// Empties every slot, keeping the memory.
    pub(crate) fn clear(&mut self) {
        self.words.fill(0);
        self.occupied = 0;
    }

    pub(crate) fn memory_bytes(&self) -> usize {
        self.words.capacity() * std::mem::size_of::<u64>()
    }

    fn count_occupied(&self, layout: &Layout) -> u64 {
        let b = layout.bucket_size as u64;
        let mut n = 0;
        for i in 0..self.num_buckets() {
            if layout.swar() {
                let v = self.read_bucket(layout, i);
                n += b - layout.zero_lanes(v).count_ones() as u64;
            } else {
                n += (0..layout.bucket_size)
                    .filter(|&s| self.get(layout, i, s) != 0)
                    .count() as u64;
            }
        }
        n
    }

    /// The key's first bucket here.
    #[inline(always)]
    pub(crate) fn first_bucket(&self, key: &KeyParts) -> u64 {
        self.modulus.rem(key.x)
    }

    /// The other bucket of a fingerprint with offset `offset` that sits in bucket `i`.
    #[inline(always)]
    pub(crate) fn alt_bucket(&self, i: u64, offset: u64) -> u64 {
        let h = self.modulus.rem(offset);
        if h >= i {
            h - i
        } else {
            h + self.num_buckets() - i
        }
    }

    /// The bits of bucket `i` (SWAR layouts only). A bucket that cannot straddle two words
    /// is one shift of one word rather than a two-word funnel shift. (With the always-inlined
    /// bucket search and the out-of-line kicks, this took the library's share of a `CF.ADD`
    /// in RedisBloom's layout from 268 to 173 instructions, callgrind.)
    #[inline(always)]
    fn read_bucket(&self, layout: &Layout, i: u64) -> u64 {
        let off = i * layout.bucket_bits as u64;
        if layout.word_buckets {
            (self.words[(off / 64) as usize] >> (off % 64)) & layout.bucket_mask
        } else {
            read_bits(&self.words, off, layout.bucket_mask)
        }
    }

    #[inline]
    pub(crate) fn get(&self, layout: &Layout, i: u64, s: u32) -> u32 {
        let off = (i * layout.bucket_size as u64 + s as u64) * layout.fp_bits as u64;
        read_bits(&self.words, off, layout.fp_mask()) as u32
    }

    #[inline(always)]
    fn set(&mut self, layout: &Layout, i: u64, s: u32, fp: u32) {
        let off = (i * layout.bucket_size as u64 + s as u64) * layout.fp_bits as u64;
        if layout.word_slots {
            let (w, shift) = ((off / 64) as usize, off % 64);
            let word = &mut self.words[w];
            *word = (*word & !(layout.fp_mask() << shift)) | (fp as u64) << shift;
        } else {
            write_bits(&mut self.words, off, layout.fp_mask(), fp as u64);
        }
    }

    /// The highest bit of each lane of bucket `i` that holds `fp` (SWAR layouts only).
    #[inline(always)]
    fn matches(&self, layout: &Layout, i: u64, fp: u32) -> u64 {
        let v = self.read_bucket(layout, i);
        layout.zero_lanes(v ^ (fp as u64).wrapping_mul(layout.lanes_one))
    }

    /// The first slot of bucket `i` holding `fp` (0 finds an empty slot). Always inlined:
    /// as a call it cost an insert a third of its instructions.
    #[inline(always)]
    fn find(&self, layout: &Layout, i: u64, fp: u32) -> Option<u32> {
        if layout.swar() {
            let m = self.matches(layout, i, fp);
            (m != 0).then(|| m.trailing_zeros() / layout.fp_bits)
        } else {
            self.find_slot_by_slot(layout, i, fp)
        }
    }

    /// [`find`](Self::find) for buckets wider than 64 bits: kept out of line, so that the
    /// SWAR path inlines into its callers.
    #[inline(never)]
    fn find_slot_by_slot(&self, layout: &Layout, i: u64, fp: u32) -> Option<u32> {
        (0..layout.bucket_size).find(|&s| self.get(layout, i, s) == fp)
    }

    #[inline]
    fn bucket_count(&self, layout: &Layout, i: u64, fp: u32) -> u32 {
        if layout.swar() {
            self.matches(layout, i, fp).count_ones()
        } else {
            self.count_slot_by_slot(layout, i, fp)
        }
    }

    /// [`bucket_count`](Self::bucket_count) for buckets wider than 64 bits, out of line as
    /// [`find_slot_by_slot`](Self::find_slot_by_slot) is.
    #[inline(never)]
    fn count_slot_by_slot(&self, layout: &Layout, i: u64, fp: u32) -> u32 {
        (0..layout.bucket_size)
            .filter(|&s| self.get(layout, i, s) == fp)
            .count() as u32
    }

    /// Both buckets of a key here (equal when the pair folds onto one bucket).
    #[inline(always)]
    pub(crate) fn buckets(&self, key: &KeyParts) -> (u64, u64) {
        let i1 = self.first_bucket(key);
        (i1, self.alt_bucket(i1, key.offset))
    }

    /// Prefetches the words of both of the key's buckets here, for a query or insert soon.
    #[inline]
    pub(crate) fn prefetch(&self, layout: &Layout, key: &KeyParts) {
        let (i1, i2) = self.buckets(key);
        for i in [i1, i2] {
            let w = (i * layout.bucket_bits as u64 / 64) as usize;
            if let Some(word) = self.words.get(w) {
                crate::prefetch::prefetch_read(word);
            }
        }
    }

    #[inline(always)]
    pub(crate) fn contains(&self, layout: &Layout, key: &KeyParts) -> bool {
        let (i1, i2) = self.buckets(key);
        if layout.swar() {
            (self.matches(layout, i1, key.fp) | self.matches(layout, i2, key.fp)) != 0
        } else {
            self.find(layout, i1, key.fp).is_some() || self.find(layout, i2, key.fp).is_some()
        }
    }

    /// Copies of the key's fingerprint in its buckets (a bucket counted once when the two
    /// coincide).
    pub(crate) fn count(&self, layout: &Layout, key: &KeyParts) -> u32 {
        let (i1, i2) = self.buckets(key);
        let c = self.bucket_count(layout, i1, key.fp);
        if i2 == i1 {
            c
        } else {
            c + self.bucket_count(layout, i2, key.fp)
        }
    }

    /// Puts `fp` in an empty slot of bucket `i1` or `i2`, if either has one.
    #[inline(always)]
    fn put_either(&mut self, layout: &Layout, i1: u64, i2: u64, fp: u32) -> bool {
        for i in [i1, i2] {
            if let Some(s) = self.find(layout, i, 0) {
                self.set(layout, i, s, fp);
                self.occupied += 1;
                return true;
            }
        }
        false
    }

    /// Whether every slot is occupied: no key fits here.
    #[inline]
    pub(crate) fn is_full(&self, layout: &Layout) -> bool {
        self.occupied == self.num_buckets() * u64::from(layout.bucket_size)
    }

    /// Whether every slot of both of the key's buckets holds the key's own fingerprint: a
    /// kick chain started there can only swap copies of it between those two buckets, and
    /// must fail.
    pub(crate) fn holds_only(&self, layout: &Layout, key: &KeyParts) -> bool {
        let (i1, i2) = self.buckets(key);
        let b = layout.bucket_size;
        self.bucket_count(layout, i1, key.fp) == b
            && (i2 == i1 || self.bucket_count(layout, i2, key.fp) == b)
    }

    /// Stores the key's fingerprint in an empty slot of one of its buckets, if there is one.
    #[inline(always)]
    pub(crate) fn try_put(&mut self, layout: &Layout, key: &KeyParts) -> bool {
        let (i1, i2) = self.buckets(key);
        self.put_either(layout, i1, i2, key.fp)
    }

    /// Removes one copy of the key's fingerprint; `false` if neither bucket holds it.
    pub(crate) fn remove(&mut self, layout: &Layout, key: &KeyParts) -> bool {
        let (i1, i2) = self.buckets(key);
        for i in [i1, i2] {
            if let Some(s) = self.find(layout, i, key.fp) {
                self.set(layout, i, s, 0);
                self.occupied -= 1;
                return true;
            }
        }
        false
    }

    /// Makes room for the key by moving fingerprints to their other buckets, at most
    /// `max_kicks` times; `false`, with every slot exactly as before, if that fails.
    ///
    /// Both buckets of the key are full when this is called. Which bucket the chain starts
    /// from and which slot each step evicts come from the key hash and the step number, not
    /// from a random generator: the same inserts always build the same table. Because the
    /// choices are recomputable and `alt` is an involution, a failed chain is undone by
    /// walking it backwards, swapping each displaced fingerprint back into its slot, without
    /// recording the path.
    pub(crate) fn kick_insert(
        &mut self,
        layout: &Layout,
        key: &KeyParts,
        hash: u64,
        max_kicks: u32,
    ) -> bool {
        let b = layout.bucket_size as u64;
        let victim = |t: u32| -> u32 {
            let r = hash
                .wrapping_add((t as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15))
                .wrapping_mul(0xbf58_476d_1ce4_e5b9);
            (((r >> 32) * b) >> 32) as u32
        };
        let (i1, i2) = self.buckets(key);
        let mut i = if hash & 1 == 0 { i1 } else { i2 };
        let mut fp = key.fp;
        for t in 0..max_kicks {
            let s = victim(t);
            let evicted = self.get(layout, i, s);
            self.set(layout, i, s, fp);
            fp = evicted;
            i = self.alt_bucket(i, layout.offset(fp));
            if let Some(e) = self.find(layout, i, 0) {
                self.set(layout, i, e, fp);
                self.occupied += 1;
                return true;
            }
        }
        // Undo: `fp` was evicted from the bucket `alt(i)`, at the last step's slot.
        for t in (0..max_kicks).rev() {
            i = self.alt_bucket(i, layout.offset(fp));
            let s = victim(t);
            let displaced = self.get(layout, i, s);
            self.set(layout, i, s, fp);
            fp = displaced;
        }
        debug_assert_eq!(
            fp, key.fp,
            "the undone kick chain must end with the new key"
        );
        false
    }

    /// Moves every fingerprint it can into the `older` sub-filters (whose bucket counts
    /// divide this one's), oldest first; `true` if this sub-filter is now empty.
    ///
    /// `open` holds the indices of the `older` sub-filters that have an empty slot (a full
    /// one can take nothing), and loses each that fills up: a fingerprint tries only those,
    /// in the same order, so the result is the one trying every sub-filter would give, and
    /// compacting a chain of full sub-filters costs time linear in it, not quadratic.
    pub(crate) fn relocate_into(
        &mut self,
        layout: &Layout,
        older: &mut [SubFilter],
        open: &mut BTreeSet<usize>,
    ) -> bool {
        let mut all_moved = true;
        for i in 0..self.num_buckets() {
            for s in 0..layout.bucket_size {
                let fp = self.get(layout, i, s);
                if fp == 0 {
                    continue;
                }
                let offset = layout.offset(fp);
                let moved = open.range(..older.len()).copied().find(|&d| {
                    let dst = &mut older[d];
                    let j1 = dst.modulus.rem(i);
                    let j2 = dst.alt_bucket(j1, offset);
                    dst.put_either(layout, j1, j2, fp)
                });
                match moved {
                    Some(d) => {
                        if older[d].is_full(layout) {
                            open.remove(&d);
                        }
                        self.set(layout, i, s, 0);
                        self.occupied -= 1;
                    }
                    None => all_moved = false,
                }
            }
        }
        all_moved && self.occupied == 0
    }
}

impl PartialEq for SubFilter {
    fn eq(&self, other: &Self) -> bool {
        self.num_buckets() == other.num_buckets() && self.words() == other.words()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fastmod_is_exact() {
        // Powers of two below take the mask, the others the multiplies. The mask fits in the
        // padding the 128-bit constant leaves: a sub-filter is no larger for it.
        assert_eq!(
            std::mem::size_of::<Modulus>(),
            std::mem::size_of::<(u128, u128)>()
        );
        let divisors = [
            1u64,
            2,
            3,
            7,
            10,
            255,
            256,
            1000,
            (1 << 32) - 1,
            1 << 32,
            (1 << 32) + 1,
            0x1234_5678_9abc,
            1 << 63,
            u64::MAX - 1,
            u64::MAX,
        ];
        let mut a = 0x0123_4567_89ab_cdefu64;
        for &d in &divisors {
            let m = Modulus::new(d);
            for x in [0u64, 1, d - 1, d, d.wrapping_add(1), u64::MAX, u64::MAX - 1] {
                assert_eq!(m.rem(x), x % d, "{x} mod {d}");
            }
            for _ in 0..10_000 {
                a = bucket_hash(a.wrapping_add(1));
                assert_eq!(m.rem(a), a % d, "{a} mod {d}");
                assert_eq!(m.rem(a >> 40), (a >> 40) % d);
            }
        }
    }

    /// RedisBloom's shape is recognised exactly, and the table's code compiled with it as
    /// constants fills and answers a sub-filter bit for bit as the code reading the same
    /// shape at run time does.
    #[test]
    fn the_redisbloom_shape_as_constants_matches_the_general_code() {
        use std::hint::black_box;
        assert!(Layout::new(2, 8, CuckooPlacement::Distinct).is_redisbloom());
        for (b, f, placement) in [
            (2, 8, CuckooPlacement::Original),
            (4, 8, CuckooPlacement::Distinct),
            (2, 16, CuckooPlacement::Distinct),
            (1, 8, CuckooPlacement::Distinct),
            (2, 9, CuckooPlacement::Distinct),
        ] {
            assert!(!Layout::new(b, f, placement).is_redisbloom(), "{b} {f}");
        }
        let runtime = black_box(Layout::new(2, 8, CuckooPlacement::Distinct));
        assert_eq!(runtime, Layout::REDISBLOOM);
        for m in [1u64, 2, 4096, 1000] {
            let mut fixed = SubFilter::new(&Layout::REDISBLOOM, m).unwrap();
            let mut general = SubFilter::new(&runtime, m).unwrap();
            for k in 0..(3 * m) {
                let h = bucket_hash(k ^ 0xfeed);
                let a = fixed.try_put(&Layout::REDISBLOOM, &KeyParts::new(h, &Layout::REDISBLOOM));
                let b = general.try_put(&runtime, &KeyParts::new(h, &runtime));
                assert_eq!(a, b, "m={m} k={k}");
            }
            assert_eq!(fixed, general, "m={m}");
            assert_eq!(fixed.occupied(), general.occupied());
            for k in 0..(6 * m) {
                let h = bucket_hash(k ^ 0xfeed);
                assert_eq!(
                    fixed.contains(&Layout::REDISBLOOM, &KeyParts::new(h, &Layout::REDISBLOOM)),
                    general.contains(&runtime, &KeyParts::new(h, &runtime)),
                );
            }
        }
    }

    /// Relocating with only the sub-filters that have an empty slot on offer moves every
    /// fingerprint exactly where offering all of them (each tried in turn, oldest first)
    /// does: a full one takes nothing.
    #[test]
    fn relocating_past_full_sub_filters_changes_nothing() {
        let layout = Layout::REDISBLOOM;
        // Older sub-filters of 4 buckets, some filled, some half full, some empty; the
        // newest of 8 buckets, full.
        let older = |fill: &dyn Fn(usize) -> u64| -> Vec<SubFilter> {
            (0..12)
                .map(|d| {
                    let mut sub = SubFilter::new(&layout, 4).unwrap();
                    for k in 0..fill(d) {
                        sub.try_put(
                            &layout,
                            &KeyParts::new(bucket_hash(k ^ (d as u64) << 20), &layout),
                        );
                    }
                    sub
                })
                .collect()
        };
        let fill = |d: usize| [100, 3, 100, 0, 100, 5, 100, 100, 1, 100, 7, 2][d];
        let newest = || {
            let mut sub = SubFilter::new(&layout, 8).unwrap();
            for k in 0..1000 {
                sub.try_put(&layout, &KeyParts::new(bucket_hash(k ^ 0xabc), &layout));
            }
            sub
        };
        let (mut a, mut b) = (older(&fill), older(&fill));
        assert!(a.iter().filter(|s| s.is_full(&layout)).count() >= 5);
        let (mut top_a, mut top_b) = (newest(), newest());
        let mut every: BTreeSet<usize> = (0..a.len()).collect();
        let mut open: BTreeSet<usize> = (0..b.len()).filter(|&d| !b[d].is_full(&layout)).collect();
        let emptied_a = top_a.relocate_into(&layout, &mut a, &mut every);
        let emptied_b = top_b.relocate_into(&layout, &mut b, &mut open);
        assert_eq!(emptied_a, emptied_b);
        assert_eq!(top_a, top_b);
        assert_eq!(a, b);
        assert!(open.iter().all(|&d| !b[d].is_full(&layout)));
        assert!(
            top_a.occupied() < newest().occupied(),
            "nothing moved: no test"
        );
    }

    /// `alt` is an involution for every bucket count, powers of two or not.
    #[test]
    fn alternate_bucket_is_an_involution() {
        for placement in [CuckooPlacement::Distinct, CuckooPlacement::Original] {
            let layout = Layout::new(4, 12, placement);
            for m in [1u64, 2, 3, 5, 64, 100, 1000, 1023, 4096, 1_000_003] {
                let sub = SubFilter::new(&layout, m).unwrap();
                for k in 0..2_000u64 {
                    let key = KeyParts::new(bucket_hash(k), &layout);
                    let (i1, i2) = sub.buckets(&key);
                    assert!(i1 < m && i2 < m);
                    assert_eq!(sub.alt_bucket(i2, key.offset), i1, "m={m}");
                    assert_eq!(sub.alt_bucket(i1, key.offset), i2, "m={m}");
                }
            }
        }
    }

    /// With odd offsets a key's two buckets differ in every table of an even number of
    /// buckets (so copies of a key fill both); the original offsets fold about one key in
    /// `M` onto a single bucket, as many as half of them when `M` is 2.
    #[test]
    fn distinct_placement_never_folds_a_pair_in_an_even_table() {
        for m in [2u64, 4, 6, 64, 100, 512, 1 << 20] {
            for (placement, folds_allowed) in [
                (CuckooPlacement::Distinct, false),
                (CuckooPlacement::Original, true),
            ] {
                let layout = Layout::new(2, 8, placement);
                let sub = SubFilter::new(&layout, m).unwrap();
                let folded = (0..20_000u64)
                    .map(|k| KeyParts::new(bucket_hash(k ^ 0x5eed), &layout))
                    .filter(|key| {
                        let (i1, i2) = sub.buckets(key);
                        i1 == i2
                    })
                    .count();
                if folds_allowed {
                    // About 20,000 / m for m up to 255 fingerprints' worth of offsets.
                    if m == 2 {
                        assert!((8_000..12_000).contains(&folded), "m={m}: {folded}");
                    }
                } else {
                    assert_eq!(folded, 0, "m={m}");
                }
            }
        }
    }

    /// A fingerprint's buckets reduce consistently into any sub-filter whose bucket count
    /// divides its own: what compaction relies on.
    #[test]
    fn buckets_reduce_modulo_divisors() {
        let layout = Layout::new(2, 8, CuckooPlacement::Distinct);
        let big = SubFilter::new(&layout, 12 * 9).unwrap();
        let small = SubFilter::new(&layout, 12).unwrap();
        for k in 0..5_000u64 {
            let key = KeyParts::new(bucket_hash(k ^ 0xabc), &layout);
            let (b1, b2) = big.buckets(&key);
            let (s1, s2) = small.buckets(&key);
            for i in [b1, b2] {
                let j = i % 12;
                assert!(j == s1 || j == s2);
                let mut pair = [j, small.alt_bucket(j, key.offset)];
                pair.sort_unstable();
                let mut want = [s1, s2];
                want.sort_unstable();
                assert_eq!(pair, want);
            }
        }
    }

    #[test]
    fn fingerprints_are_never_zero_and_cover_the_range() {
        for bits in MIN_FINGERPRINT_BITS..=MAX_FINGERPRINT_BITS {
            for h in [0u64, 1, u64::MAX, 1 << 32, u64::MAX << 32] {
                let fp = fingerprint(h, bits);
                assert!(
                    fp >= 1 && (fp as u64) < (1u64 << bits),
                    "{bits} {h:#x} {fp}"
                );
            }
        }
        assert_eq!(fingerprint(u64::MAX, 8), 255);
        assert_eq!(fingerprint(0, 8), 1);
    }

    #[test]
    fn zero_lanes_are_exact() {
        for (b, f) in [
            (4u32, 10u32),
            (2, 8),
            (4, 16),
            (8, 8),
            (3, 7),
            (1, 32),
            (16, 4),
        ] {
            let layout = Layout::new(b, f, CuckooPlacement::Distinct);
            let mut x = 99u64;
            for _ in 0..5_000 {
                x = bucket_hash(x);
                // Lanes of random values with some forced zeros.
                let mut v = 0u64;
                let mut want = 0u64;
                for s in 0..b {
                    let lane = if (x >> s) & 3 == 0 {
                        0
                    } else {
                        (x >> (s * 3)) & ((1 << f) - 1)
                    };
                    v |= lane << (s * f);
                    if lane == 0 {
                        want |= 1 << (s * f + f - 1);
                    }
                }
                assert_eq!(layout.zero_lanes(v), want, "b={b} f={f} v={v:#x}");
            }
        }
    }

    /// Every shape, whether its slots and buckets straddle words (the general funnel
    /// shifts) or cannot (RedisBloom's 2×8 bits and the other one-word fast paths).
    #[test]
    fn slots_round_trip_across_word_boundaries() {
        for (b, f) in [
            (4u32, 10u32),
            (3, 13),
            (2, 32),
            (5, 17),
            (255, 32),
            (2, 8),
            (4, 16),
            (8, 8),
            (16, 4),
            (1, 32),
            (3, 8),
        ] {
            let layout = Layout::new(b, f, CuckooPlacement::Distinct);
            let mut sub = SubFilter::new(&layout, 7).unwrap();
            let val = |i: u64, s: u32| ((i * 31 + s as u64 * 7 + 1) % ((1 << f) - 1) + 1) as u32;
            for i in 0..7 {
                for s in 0..b {
                    sub.set(&layout, i, s, val(i, s));
                }
            }
            for i in 0..7 {
                for s in 0..b {
                    assert_eq!(sub.get(&layout, i, s), val(i, s));
                }
                if layout.swar() {
                    // The one-word read, where it applies, sees the funnel shift's bits.
                    let off = i * layout.bucket_bits as u64;
                    let want = read_bits(&sub.words, off, layout.bucket_mask);
                    assert_eq!(sub.read_bucket(&layout, i), want, "b={b} f={f} i={i}");
                }
            }
            assert_eq!(*sub.words.last().unwrap(), 0, "guard word touched");
            assert_eq!(
                layout.word_buckets,
                b * f <= 64 && 64 % (b * f) == 0,
                "b={b} f={f}"
            );
        }
    }
}
