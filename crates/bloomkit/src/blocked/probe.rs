//! Where a key's bits are in the blocked layout (kind 2 in `docs/FORMAT.md`): its line, and
//! the k probes inside it, with the portable query and insert that the kernels
//! (`kernel.rs`) fall back on and are tested against.

use crate::bits::{Line, LINE_WORDS};
use crate::sizing;

/// Which line a key's probes fall in: multiply-high of the whole 64-bit hash, so filters of
/// more than 2^32 lines (256 GiB) still reach every line.
#[inline]
pub(crate) fn line_index(hash: u64, num_lines: usize) -> usize {
    ((hash as u128 * num_lines as u128) >> 64) as usize
}

/// How a blocked filter derives a key's k probes inside its line from the key's 64-bit hash:
/// the blocked filter's, the atomic filter's, a scalable filter's blocked layers' and an
/// aging filter's generations'.
///
/// Both take each probe as the top 9 bits of a 32-bit value `s · C^i` (C an odd constant,
/// i the probe's index), as RocksDB's FastLocalBloom does; the line is chosen from the whole
/// hash either way. They differ in the seeds `s`.
///
/// # Examples
///
/// ```
/// use bloomkit::{BlockedBloomFilter, BlockedProbes};
///
/// // New filters probe from two seeds.
/// assert_eq!(BlockedBloomFilter::new(100, 0.01)?.probes(), BlockedProbes::TwoSeeds);
/// // The first derivation, which files written before the second existed keep.
/// let old = BlockedBloomFilter::builder(100, 0.01).probes(BlockedProbes::OneSeed).build()?;
/// let back = BlockedBloomFilter::from_bytes(&old.to_bytes())?;
/// assert_eq!(back.probes(), BlockedProbes::OneSeed);
/// # Ok::<(), bloomkit::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BlockedProbes {
    /// Even probes from `s1`, the low 32 bits of the hash; odd probes from `s2`, the high 32
    /// bits of the hash times `0x9e3779b97f4a7c15`. The pair is a bijection of the 64-bit
    /// hash, so two keys share their probes only when they share their whole hash: in a
    /// simulation of lines at 76.6 bits a key and k = 21 (a scalable filter's deep layers),
    /// the false positives counted were 1.001 times the ideal `(ones/512)^k` of each line.
    /// What every new filter uses (stored as probe derivation 2, `docs/FORMAT.md`).
    #[default]
    TwoSeeds,
    /// Every probe from `a`, the low 32 bits of the hash. Two keys in one line with the
    /// same `a` share every probe, a floor of (keys in the line) / 2^32 under the rate; and
    /// seeds that differ by `j · 2^29` give the same probes shifted by `64j` bits (C ≡ 1
    /// mod 8), so nearby seeds' patterns overlap. In the simulation above this derivation
    /// counted 4.51 times the ideal (820 false positives against 181.7; the floor alone
    /// adds 313). Kept so that filters stored with it (every file of bloomkit 0.1 and 0.2,
    /// probe derivation 1) answer every key as they did; build it only to match such a
    /// filter.
    OneSeed,
}

impl BlockedProbes {
    /// The code stored in a file: 1 for [`OneSeed`](Self::OneSeed), 2 for
    /// [`TwoSeeds`](Self::TwoSeeds).
    pub fn code(self) -> u32 {
        match self {
            BlockedProbes::OneSeed => 1,
            BlockedProbes::TwoSeeds => 2,
        }
    }

    /// The derivation a code names, if any.
    pub fn from_code(code: u32) -> Option<BlockedProbes> {
        match code {
            1 => Some(BlockedProbes::OneSeed),
            2 => Some(BlockedProbes::TwoSeeds),
            _ => None,
        }
    }

    /// The probe key of `hash`: the even probes' seed in the low 32 bits, the odd probes'
    /// in the high 32 bits. The kernels take this, not the hash, so that they do not
    /// depend on the derivation; [`line_index`] still takes the hash.
    ///
    /// Both derivations take the odd seed as the high half of the hash times a multiplier:
    /// 2^32 moves the low half there (one seed), `0x9e3779b97f4a7c15` mixes the whole hash
    /// into it (two seeds). One multiply and no branch on the derivation.
    #[inline(always)]
    pub(crate) fn key(self, hash: u64) -> u64 {
        let multiplier = match self {
            BlockedProbes::OneSeed => 1 << 32,
            BlockedProbes::TwoSeeds => 0x9e37_79b9_7f4a_7c15,
        };
        (hash & 0xffff_ffff) | (hash.wrapping_mul(multiplier) & !0xffff_ffff)
    }
}

/// The bits a key sets in its line, as eight words, from its probe key
/// ([`BlockedProbes::key`]).
///
/// Each probe is the top 9 bits of a 32-bit value: the seed of its parity (the key's low
/// half for even probes, its high half for odd ones) times `C^i`. Building the whole mask
/// first makes insert and query branch-free: eight ORs, or eight AND-NOTs.
#[inline]
pub(crate) fn line_mask(key: u64, num_hashes: u32) -> [u64; LINE_WORDS] {
    let mut mask = [0u64; LINE_WORDS];
    for_each_probe(key, num_hashes, |word, bit| mask[word] |= bit);
    mask
}

/// The probe multiplier: an odd constant (2^32 over the golden ratio), so successive probe
/// values run through a full cycle and their top bits look independent.
const PROBE_MULTIPLIER: u32 = 0x9e37_79b9;

/// `PROBE_MULTIPLIER^i mod 2^32` for every probe index: probe i's value is its seed times
/// `PROBE_POWERS[i]`, the same number as multiplying by the multiplier i times, but the
/// multiplies do not wait for one another (a chain of k dependent multiplies would be the
/// longest latency of an insert).
pub(crate) const PROBE_POWERS: [u32; sizing::MAX_NUM_HASHES as usize] = {
    let mut p = [1u32; sizing::MAX_NUM_HASHES as usize];
    let mut i = 1;
    while i < p.len() {
        p[i] = p[i - 1].wrapping_mul(PROBE_MULTIPLIER);
        i += 1;
    }
    p
};

/// The probe values of the probe key `key`, `num_hashes` of them (at most
/// [`sizing::MAX_NUM_HASHES`]): probe i from the key's low half when i is even, its high
/// half when odd.
#[inline(always)]
fn probe_values(key: u64, num_hashes: u32) -> impl Iterator<Item = u32> {
    let seeds = [key as u32, (key >> 32) as u32];
    PROBE_POWERS
        .iter()
        .take(num_hashes as usize)
        .enumerate()
        .map(move |(i, &power)| seeds[i & 1].wrapping_mul(power))
}

/// Calls `visit(word, bit_mask)` for each of the `num_hashes` probes of the probe key `key`
/// in its line: the same probes as [`line_mask`], one at a time.
#[inline(always)]
pub(crate) fn for_each_probe(key: u64, num_hashes: u32, mut visit: impl FnMut(usize, u64)) {
    for a in probe_values(key, num_hashes) {
        let bit = a >> 23;
        visit((bit >> 6) as usize & 7, 1u64 << (bit & 63));
    }
}

/// Whether every probe of the probe key `key` is set, in a line whose word `w` reads as
/// `word(w)`.
///
/// Each probe loads its own word and ANDs the bit into an accumulator: the loads are
/// independent and there is no branch on the data. (Building the whole mask first, as
/// inserts do, chains read-modify-writes through a stack array: twice as slow to query.)
#[inline(always)]
pub(crate) fn probes_set(key: u64, num_hashes: u32, word: impl Fn(usize) -> u64) -> bool {
    let mut all = 1u64;
    for a in probe_values(key, num_hashes) {
        let bit = a >> 23;
        all &= word((bit >> 6) as usize & 7) >> (bit & 63);
    }
    all & 1 == 1
}

/// Sets the probes of the probe key `key` in `line`; returns whether any bit was new.
#[inline(always)]
pub(crate) fn insert_into(line: &mut Line, key: u64, num_hashes: u32) -> bool {
    let mut new_bits = 0;
    for_each_probe(key, num_hashes, |w, bit| {
        new_bits |= bit & !line.0[w];
        line.0[w] |= bit;
    });
    new_bits != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mask_has_at_most_k_bits_and_is_deterministic() {
        for h in [0u64, 1, u64::MAX, 0xdead_beef_0bad_f00d] {
            for k in 1..=64 {
                let m = line_mask(h, k);
                let ones: u32 = m.iter().map(|w| w.count_ones()).sum();
                assert!(ones >= 1 && ones <= k);
                assert_eq!(m, line_mask(h, k));
            }
        }
        // Distinct probes for a typical hash.
        let ones: u32 = line_mask(crate::hash("x"), 8)
            .iter()
            .map(|w| w.count_ones())
            .sum();
        assert!(ones >= 7);
    }

    /// The first derivation's key repeats the low 32 bits, so its probes are every probe
    /// from one seed; the second's halves are a bijection of the hash (distinct hashes,
    /// distinct keys), with the low half the hash's own.
    #[test]
    fn probe_keys() {
        let mut next = crate::blocked::kernel::tests::splitmix(7);
        let mut seen = std::collections::HashSet::new();
        for _ in 0..10_000 {
            let h = next();
            assert_eq!(
                BlockedProbes::OneSeed.key(h),
                (h & 0xffff_ffff) * 0x1_0000_0001
            );
            let key = BlockedProbes::TwoSeeds.key(h);
            assert_eq!(key as u32, h as u32);
            assert!(seen.insert(key));
            // Hashes that differ only in their high half get different odd seeds.
            let other = BlockedProbes::TwoSeeds.key(h ^ (1 << 40));
            assert_ne!(other >> 32, key >> 32);
        }
        for p in [BlockedProbes::OneSeed, BlockedProbes::TwoSeeds] {
            assert_eq!(BlockedProbes::from_code(p.code()), Some(p));
        }
        assert_eq!(BlockedProbes::from_code(0), None);
        assert_eq!(BlockedProbes::from_code(3), None);
    }

    /// The first derivation's probe i is `a·C^i` for the hash's low 32 bits `a`, one seed.
    #[test]
    fn one_seed_probes_are_powers_of_one_seed() {
        let h = 0x0123_4567_89ab_cdefu64;
        let mut a = h as u32;
        let mut want = [0u64; LINE_WORDS];
        for _ in 0..20 {
            let bit = a >> 23;
            want[(bit >> 6) as usize] |= 1 << (bit & 63);
            a = a.wrapping_mul(PROBE_MULTIPLIER);
        }
        assert_eq!(line_mask(BlockedProbes::OneSeed.key(h), 20), want);
        assert_ne!(line_mask(BlockedProbes::TwoSeeds.key(h), 20), want);
    }

    #[test]
    fn line_index_in_range() {
        for n in [1usize, 2, 3, 1000, usize::MAX] {
            for h in [0u64, 1, u64::MAX, 1 << 63] {
                assert!(line_index(h, n) < n);
            }
        }
    }
}
