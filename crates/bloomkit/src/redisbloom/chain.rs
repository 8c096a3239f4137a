//! RedisBloom's scalable Bloom filter (`MBbloom--`): a chain of links, each a classic Bloom
//! filter probed by [`super::bloom_hash_pair`].

use crate::error::{Error, Result};
use crate::format::FilterKind;

/// RedisBloom's option bit: size links without rounding their bits to a power of two.
pub(crate) const OPT_NOROUND: u32 = 1;
/// RedisBloom's option bit: the link's size was given as a power of two of bits.
pub(crate) const OPT_ENTS_IS_BITS: u32 = 2;
/// RedisBloom's option bit: hash with 64-bit MurmurHash64A (every filter RedisBloom 2.x makes).
pub(crate) const OPT_FORCE64: u32 = 4;
/// RedisBloom's option bit: the chain never grows.
pub(crate) const OPT_NO_SCALING: u32 = 8;
const KNOWN_OPTIONS: u32 = OPT_NOROUND | OPT_ENTS_IS_BITS | OPT_FORCE64 | OPT_NO_SCALING;

/// The most links a chain may have: RedisBloom itself refuses 1,000 or more when loading.
pub const MAX_LINKS: usize = 1000;
/// The most probes a link may have. A link halves its rate each time the chain grows, so
/// 1,000 links reach about 1,000 probes; a larger count is hostile (each query would loop
/// that many times).
pub const MAX_HASHES: u32 = 2048;

/// RedisBloom's ln 2 and (ln 2)², to the digits it uses: a new link's size and probe count
/// depend on them, and must come out as RedisBloom's do.
#[allow(clippy::approx_constant)] // RedisBloom's digits, not `LN_2`'s: the last one differs
const LN2: f64 = 0.693147180559945;
const LN2_SQUARED: f64 = 0.480453013918201;
/// Each new link's rate is its predecessor's times this.
const TIGHTENING: f64 = 0.5;

/// One link of a [`RedisBloomChain`]: a classic Bloom filter with RedisBloom's fields.
#[derive(Clone, Debug, PartialEq)]
pub struct RedisBloomLink {
    /// Items the link was sized for (RedisBloom's `entries`); the chain grows when the newest
    /// link's `size` reaches it.
    pub(crate) entries: u64,
    /// The link's planned false-positive rate.
    pub(crate) error: f64,
    /// Bits per entry, `−ln(error) / (ln 2)²`.
    pub(crate) bpe: f64,
    /// Probes per item.
    pub(crate) hashes: u32,
    /// Power-of-two exponent of the probe modulus, or 0 when probes are taken modulo `bits`.
    pub(crate) n2: u8,
    /// Items added to this link (inserts that set at least one bit).
    pub(crate) size: u64,
    /// The bit array: bit `x` is bit `x mod 8` of byte `x / 8`; its length in bits is the
    /// link's `bits`.
    pub(crate) bytes: Vec<u8>,
}

impl RedisBloomLink {
    /// Items the link was sized for; the chain grows when the newest link holds this many.
    pub fn entries(&self) -> u64 {
        self.entries
    }

    /// The link's planned false-positive rate.
    pub fn error(&self) -> f64 {
        self.error
    }

    /// Bits per entry, `−ln(error) / (ln 2)²`.
    pub fn bits_per_entry(&self) -> f64 {
        self.bpe
    }

    /// Probes per item.
    pub fn num_hashes(&self) -> u32 {
        self.hashes
    }

    /// Power-of-two exponent of the probe modulus, or 0 when probes are taken modulo
    /// [`bits`](Self::bits).
    pub fn n2(&self) -> u8 {
        self.n2
    }

    /// Items added to this link.
    pub fn len(&self) -> u64 {
        self.size
    }

    /// Whether no item was added to this link.
    pub fn is_empty(&self) -> bool {
        self.size == 0
    }

    /// Bits in the link (`8 ×` its bytes).
    pub fn bits(&self) -> u64 {
        self.bytes.len() as u64 * 8
    }

    /// The link's bit array.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    fn modulus(&self) -> u64 {
        if self.n2 > 0 {
            1u64 << self.n2
        } else {
            self.bits()
        }
    }

    fn contains_pair(&self, (a, b): (u64, u64)) -> bool {
        let m = self.modulus();
        (0..u64::from(self.hashes)).all(|i| {
            let x = a.wrapping_add(i.wrapping_mul(b)) % m;
            self.bytes[(x >> 3) as usize] & (1 << (x & 7)) != 0
        })
    }

    /// Sets the item's bits; whether any was unset.
    fn insert_pair(&mut self, (a, b): (u64, u64)) -> bool {
        let m = self.modulus();
        let mut changed = false;
        for i in 0..u64::from(self.hashes) {
            let x = a.wrapping_add(i.wrapping_mul(b)) % m;
            let byte = &mut self.bytes[(x >> 3) as usize];
            let mask = 1u8 << (x & 7);
            changed |= *byte & mask == 0;
            *byte |= mask;
        }
        changed
    }

    /// A new empty link as RedisBloom's `bloom_init` sizes it for `entries` at `error`
    /// with `options`.
    fn plan(entries: u64, error: f64, options: u32) -> Result<Self> {
        if entries == 0 || !(error > 0.0 && error < 1.0) {
            return Err(Error::corrupt(format!(
                "a RedisBloom link needs entries >= 1 and 0 < error < 1, not {entries} and {error}"
            )));
        }
        let bpe = (-(error.ln()) / LN2_SQUARED).abs();
        let mut entries_out = entries;
        let (bits, n2) = if options & OPT_ENTS_IS_BITS != 0 {
            // RedisBloom takes up to 64 here, but 2^64 bits is no size (and `1 << 64`
            // undefined in C); 63 is already far beyond any memory.
            if entries > 63 {
                return Err(Error::TooLarge { num_bits: u64::MAX });
            }
            let bits = 1u64 << entries;
            entries_out = (bits as f64 / bpe) as u64;
            (bits, entries as u8)
        } else if options & OPT_NOROUND != 0 {
            ((((entries as f64) * bpe) as u64).max(1), 0)
        } else {
            let want = entries as f64 * bpe;
            // C's `logb`: the binary exponent, exactly (not a rounded log2).
            let exponent = ((want.to_bits() >> 52) & 0x7ff) as i64 - 1023;
            if !want.is_normal() || !(-1..=62).contains(&exponent) {
                return Err(Error::TooLarge { num_bits: u64::MAX });
            }
            let n2 = (exponent + 1) as u8;
            let bits = 1u64 << n2;
            let extra_bits = (bits as f64 - want) as u64;
            entries_out += (extra_bits as f64 / bpe) as u64;
            (bits, n2)
        };
        let bytes = if bits % 64 != 0 {
            (bits / 64 + 1) * 8
        } else {
            bits / 8
        };
        let hashes = (LN2 * bpe).ceil();
        if !(hashes >= 1.0 && hashes <= f64::from(MAX_HASHES)) {
            return Err(Error::corrupt(format!(
                "a RedisBloom link at rate {error} would take {hashes} probes (at most {MAX_HASHES})"
            )));
        }
        let len = usize::try_from(bytes).map_err(|_| Error::TooLarge {
            num_bits: bytes.saturating_mul(8),
        })?;
        let mut v = Vec::new();
        v.try_reserve_exact(len)
            .map_err(|_| Error::OutOfMemory { bytes: len as u64 })?;
        v.resize(len, 0);
        Ok(RedisBloomLink {
            entries: entries_out,
            error,
            bpe,
            hashes: hashes as u32,
            n2,
            size: 0,
            bytes: v,
        })
    }

    /// Checks the fields as RedisBloom's `bloom_validate_integrity` does, and bloomkit's own
    /// bounds (the probe count, whole 64-bit words).
    pub(crate) fn validate(&self, index: usize, num_bytes: u64) -> Result<()> {
        let bits = num_bytes.saturating_mul(8);
        let bad = |what: String| Err(Error::corrupt(format!("RedisBloom link {index}: {what}")));
        if !(self.error > 0.0 && self.error < 1.0) {
            return bad(format!("error rate {} is outside (0, 1)", self.error));
        }
        if self.n2 > 63 || (self.n2 != 0 && bits < (1u64 << self.n2)) {
            return bad(format!("n2 = {} does not fit its {bits} bits", self.n2));
        }
        if bits == 0 || !num_bytes.is_multiple_of(8) {
            return bad(format!(
                "{num_bytes} bytes of bits (a positive multiple of 8 expected)"
            ));
        }
        if self.hashes == 0 || self.hashes > MAX_HASHES {
            return bad(format!(
                "{} probes (1 to {MAX_HASHES} expected)",
                self.hashes
            ));
        }
        if f64::from(self.hashes) != (LN2 * self.bpe).ceil() {
            return bad(format!(
                "{} probes do not match {} bits per entry",
                self.hashes, self.bpe
            ));
        }
        Ok(())
    }
}

/// RedisBloom's scalable Bloom filter (the value of a `MBbloom--` key), answering and growing
/// exactly as RedisBloom does.
///
/// Usually imported ([`from_dump`](crate::redisbloom::RedisBloomValue::from_dump),
/// [`from_rdb`](Self::from_rdb), [`from_scandump`](Self::from_scandump)), or made with
/// [`new`](Self::new) as `BF.RESERVE` would.
///
/// # Examples
///
/// ```
/// use bloomkit::redisbloom::RedisBloomChain;
///
/// // BF.RESERVE k 0.01 10 (expansion 2), then "0" to "99".
/// let mut bf = RedisBloomChain::new(10, 0.01, 2, false)?;
/// for i in 0..100 {
///     bf.insert(i.to_string().as_bytes())?;
/// }
/// assert!((0..100).all(|i| bf.contains(i.to_string().as_bytes())));
/// assert_eq!(bf.links().len(), 4); // 10 + 20 + 40 + 80
/// # Ok::<(), bloomkit::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct RedisBloomChain {
    /// Items added, the sum of the links' sizes.
    pub(crate) size: u64,
    pub(crate) options: u32,
    pub(crate) growth: u32,
    pub(crate) links: Vec<RedisBloomLink>,
}

impl RedisBloomChain {
    /// An empty chain as `BF.RESERVE key error_rate capacity [EXPANSION expansion]
    /// [NONSCALING]` makes it in RedisBloom 2.8 (64-bit hashing, links not rounded).
    ///
    /// # Errors
    ///
    /// [`Error::Corrupt`] for a capacity of 0 or a rate outside (0, 1);
    /// [`Error::TooLarge`] or [`Error::OutOfMemory`] when the link cannot be allocated.
    pub fn new(capacity: u64, error_rate: f64, expansion: u32, non_scaling: bool) -> Result<Self> {
        let options = OPT_FORCE64 | OPT_NOROUND | if non_scaling { OPT_NO_SCALING } else { 0 };
        let tightening = if non_scaling { 1.0 } else { TIGHTENING };
        let link = RedisBloomLink::plan(capacity, error_rate * tightening, options)?;
        Ok(RedisBloomChain {
            size: 0,
            options,
            growth: expansion,
            links: vec![link],
        })
    }

    /// Whether the chain may hold `item` (`BF.EXISTS`).
    pub fn contains(&self, item: &[u8]) -> bool {
        let pair = super::bloom_hash_pair(item);
        self.links.iter().rev().any(|l| l.contains_pair(pair))
    }

    /// Adds `item` (`BF.ADD`): `Ok(true)` if it was added, `Ok(false)` if some link already
    /// reported it (a false positive included, which is then not counted).
    ///
    /// # Errors
    ///
    /// [`Error::Full`] when the newest link is full and the chain does not scale (or has
    /// 1000 links, RedisBloom's limit); [`Error::TooLarge`] when the next link cannot be
    /// allocated.
    pub fn insert(&mut self, item: &[u8]) -> Result<bool> {
        let pair = super::bloom_hash_pair(item);
        if self.links.iter().rev().any(|l| l.contains_pair(pair)) {
            return Ok(false);
        }
        let newest = self.links.last().expect("a chain has at least one link");
        if newest.size >= newest.entries {
            if self.options & OPT_NO_SCALING != 0 || self.links.len() >= MAX_LINKS {
                return Err(Error::Full {
                    kind: FilterKind::RedisBloomChain,
                });
            }
            let entries = newest
                .entries
                .checked_mul(u64::from(self.growth))
                .ok_or(Error::TooLarge { num_bits: u64::MAX })?;
            let link = RedisBloomLink::plan(entries, newest.error * TIGHTENING, self.options)?;
            self.links.push(link);
        }
        let newest = self
            .links
            .last_mut()
            .expect("a chain has at least one link");
        let added = newest.insert_pair(pair);
        if added {
            newest.size += 1;
            self.size += 1;
        }
        Ok(added)
    }

    /// Items added (`BF.CARD`).
    pub fn len(&self) -> u64 {
        self.size
    }

    /// Whether nothing was added.
    pub fn is_empty(&self) -> bool {
        self.size == 0
    }

    /// The sum of the links' capacities (`BF.INFO`'s Capacity).
    pub fn capacity(&self) -> u64 {
        self.links
            .iter()
            .fold(0u64, |s, l| s.saturating_add(l.entries))
    }

    /// The expansion factor of new links.
    pub fn expansion(&self) -> u32 {
        self.growth
    }

    /// RedisBloom's option bits (1: not rounded, 2: sized in bits, 4: 64-bit hashing,
    /// 8: non-scaling).
    pub fn options(&self) -> u32 {
        self.options
    }

    /// Whether the chain grows when its newest link is full.
    pub fn is_scaling(&self) -> bool {
        self.options & OPT_NO_SCALING == 0
    }

    /// The links, oldest first.
    pub fn links(&self) -> &[RedisBloomLink] {
        &self.links
    }

    /// Bytes of bits in all links.
    pub fn memory_bytes(&self) -> usize {
        self.links.iter().map(|l| l.bytes.len()).sum()
    }

    /// Checks the whole chain as RedisBloom does on load, and the option bits bloomkit can
    /// answer for (64-bit hashing only).
    pub(crate) fn validate(&self) -> Result<()> {
        let lens: Vec<u64> = self.links.iter().map(|l| l.bytes.len() as u64).collect();
        self.validate_fields(&lens)
    }

    /// [`validate`](Self::validate) with the links' byte counts given, for a chain whose
    /// bits have not arrived yet.
    pub(crate) fn validate_fields(&self, link_bytes: &[u64]) -> Result<()> {
        if self.options & !KNOWN_OPTIONS != 0 {
            return Err(Error::corrupt(format!(
                "unknown RedisBloom option bits {:#x}",
                self.options & !KNOWN_OPTIONS
            )));
        }
        if self.options & OPT_FORCE64 == 0 {
            return Err(Error::corrupt(
                "this RedisBloom filter hashes with 32-bit MurmurHash2 (made before \
                 RedisBloom 2.0); only 64-bit filters can be imported, so rebuild it there",
            ));
        }
        if self.links.is_empty() || self.links.len() > MAX_LINKS {
            return Err(Error::corrupt(format!(
                "{} RedisBloom links (1 to {MAX_LINKS} expected)",
                self.links.len()
            )));
        }
        let mut total = 0u64;
        for (i, (link, &bytes)) in self.links.iter().zip(link_bytes).enumerate() {
            link.validate(i, bytes)?;
            total = total
                .checked_add(link.size)
                .ok_or_else(|| Error::corrupt("the RedisBloom links' sizes overflow"))?;
        }
        if total != self.size {
            return Err(Error::corrupt(format!(
                "the RedisBloom chain says {} items but its links hold {total}",
                self.size
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A chain sized in bits (RedisBloom's `ENTS_IS_BITS`, reachable only from an imported
    /// value) grows its links' exponent from their entries; past 2^63 bits it stops with an
    /// error, never a panic, and never forgets what it took.
    #[test]
    fn a_chain_sized_in_bits_stops_growing_without_panicking() {
        let options = OPT_FORCE64 | OPT_ENTS_IS_BITS;
        let link = RedisBloomLink::plan(6, 0.01, options).unwrap();
        assert_eq!((link.bits(), link.n2), (64, 6));
        let mut chain = RedisBloomChain {
            size: 0,
            options,
            growth: 2,
            links: vec![link],
        };
        chain.validate().unwrap();
        let mut taken = Vec::new();
        for i in 0..3000u32 {
            match chain.insert(&i.to_le_bytes()) {
                Ok(_) => taken.push(i),
                Err(Error::TooLarge { .. }) => break,
                Err(e) => panic!("{e}"),
            }
        }
        assert!(taken.iter().all(|i| chain.contains(&i.to_le_bytes())));
        chain.validate().unwrap();
    }

    /// The power-of-two rule: bits are the power of two above `entries · bpe`, and the spare
    /// bits' worth of entries is added.
    #[test]
    fn the_rounded_rule_rounds_up_to_a_power_of_two() {
        let link = RedisBloomLink::plan(100, 0.01, OPT_FORCE64).unwrap();
        // 100 · 9.585 = 958.5 bits → 1024 (n2 = 10); 65.5 spare bits are 6 more entries.
        assert_eq!((link.bits(), link.n2, link.entries), (1024, 10, 106));
        assert_eq!(link.hashes, 7);
    }
}
