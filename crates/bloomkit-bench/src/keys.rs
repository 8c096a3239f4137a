//! Deterministic keys: 8-byte integers and 16–32-byte strings, from a counter.
//!
//! Key `i` is a pure function of `i`, so every filter in a run (and every run) sees the same
//! keys, and a key can be regenerated instead of stored: the out-of-cache regime inserts
//! hundreds of millions of keys without holding them. Distinct counters give distinct keys
//! (the mix is a bijection), so a key from the absent range is never a present key and every
//! "maybe" for it is a false positive.
//!
//! Keys are written into a [`KeyPool`] before a timed loop starts; the loop then only reads
//! them, so the figures are the filters' alone.

use std::hash::Hash;

/// Counters at and above this mark the absent keys: far beyond any present range, and the
/// same for every filter, so every filter answers for exactly the same absent keys.
pub const ABSENT_BASE: u64 = 1 << 62;

/// The fixed seed of the key mix: an arbitrary constant, fixed so runs are reproducible.
const KEY_SEED: u64 = 0x5eed_b100_3c17_0001;

/// The odd constant splitmix64 steps its state by (2^64 / golden ratio).
const GOLDEN: u64 = 0x9e37_79b9_7f4a_7c15;

/// The splitmix64 finaliser: a bijection on `u64` that scatters nearby inputs across the range.
///
/// # Examples
///
/// ```
/// use bloomkit_bench::keys::mix64;
/// assert_ne!(mix64(1), mix64(2));
/// assert_eq!(mix64(7), mix64(7));
/// ```
#[inline]
pub fn mix64(x: u64) -> u64 {
    let mut z = x;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The integer key for counter `i`: the `i`-th output of a fixed-seed splitmix64 stream.
///
/// Injective in `i`: a multiply by an odd constant, an add and [`mix64`] are all bijections.
#[inline]
pub fn int_key(i: u64) -> u64 {
    mix64(i.wrapping_mul(GOLDEN).wrapping_add(KEY_SEED))
}

/// What string keys start with: key `i` takes the first 0–16 bytes of it.
const PREFIX: &[u8; 16] = b"user:session:id:";

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Writes the string key for counter `i` into `out` (cleared first): 0–16 bytes of the prefix
/// `user:session:id:` then the 16 hex digits of [`int_key`]`(i)`, 16–32 bytes in all.
///
/// Distinct counters give distinct keys: two keys of one length share the prefix and differ
/// in the hex digits; keys of two lengths differ in length.
///
/// # Examples
///
/// ```
/// let mut key = String::new();
/// bloomkit_bench::keys::string_key(5, &mut key);
/// assert!((16..=32).contains(&key.len()));
/// assert!(key.ends_with(&format!("{:016x}", bloomkit_bench::keys::int_key(5))));
/// ```
pub fn string_key(i: u64, out: &mut String) {
    out.clear();
    push_string_key(i, out);
}

/// Appends the string key for counter `i` to `out`.
fn push_string_key(i: u64, out: &mut String) {
    let h = int_key(i);
    // The length comes from the top bits (the hex digits show all of them anyway).
    let prefix_len = ((h >> 32) % (PREFIX.len() as u64 + 1)) as usize;
    let mut key = [0u8; 32];
    key[..prefix_len].copy_from_slice(&PREFIX[..prefix_len]);
    for (d, slot) in key[prefix_len..prefix_len + 16].iter_mut().enumerate() {
        *slot = HEX[((h >> (60 - 4 * d)) & 0xf) as usize];
    }
    // Only ASCII was written, so the bytes are valid UTF-8.
    out.push_str(std::str::from_utf8(&key[..prefix_len + 16]).expect("ASCII key"));
}

/// A uniformly random index in `0..n` for sample position `j` of stream `stream`: how the
/// out-of-cache regime picks present keys to query, so queries land on random lines.
#[inline]
pub fn sample_index(stream: u64, j: u64, n: u64) -> u64 {
    let r = mix64(j ^ mix64(stream ^ KEY_SEED));
    ((r as u128 * n as u128) >> 64) as u64
}

/// A key type the harness can generate, hold and hand to filters: `u64` or `str`.
pub trait Key: Hash + bloomkit::Key + 'static {
    /// Short name for reports: `"int"` or `"string"`.
    const NAME: &'static str;
    /// The buffer a batch of these keys is generated into.
    type Pool: KeyPool<Key = Self>;
}

impl Key for u64 {
    const NAME: &'static str = "int";
    type Pool = IntPool;
}

impl Key for str {
    const NAME: &'static str = "string";
    type Pool = StrPool;
}

/// A batch of keys held contiguously, refilled between timed loops.
pub trait KeyPool: Default + Send {
    /// The key type held.
    type Key: Key + ?Sized;

    /// Number of keys held.
    fn len(&self) -> usize;

    /// `true` when no key is held.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Drops every key, keeping the allocation for the next batch.
    fn clear(&mut self);

    /// Appends the key for counter `i`.
    fn push_counter(&mut self, i: u64);

    /// Calls `f` on every key, in order.
    fn for_each(&self, f: impl FnMut(&Self::Key));

    /// Replaces the contents with the keys for `counters`.
    fn fill(&mut self, counters: impl IntoIterator<Item = u64>) {
        self.clear();
        for i in counters {
            self.push_counter(i);
        }
    }
}

/// A batch of integer keys.
#[derive(Debug, Default, Clone)]
pub struct IntPool {
    keys: Vec<u64>,
}

impl IntPool {
    /// The keys, in order.
    pub fn keys(&self) -> &[u64] {
        &self.keys
    }
}

impl KeyPool for IntPool {
    type Key = u64;

    fn len(&self) -> usize {
        self.keys.len()
    }

    fn clear(&mut self) {
        self.keys.clear();
    }

    fn push_counter(&mut self, i: u64) {
        self.keys.push(int_key(i));
    }

    #[inline]
    fn for_each(&self, mut f: impl FnMut(&u64)) {
        for key in &self.keys {
            f(key);
        }
    }
}

/// A batch of string keys in one buffer, so a pass over them streams through memory instead
/// of chasing a pointer per key.
#[derive(Debug, Default, Clone)]
pub struct StrPool {
    text: String,
    /// `ends[i]` is where key `i` ends in `text`; it starts where key `i - 1` ended.
    ends: Vec<u32>,
}

impl KeyPool for StrPool {
    type Key = str;

    fn len(&self) -> usize {
        self.ends.len()
    }

    fn clear(&mut self) {
        self.text.clear();
        self.ends.clear();
    }

    fn push_counter(&mut self, i: u64) {
        push_string_key(i, &mut self.text);
        let end = u32::try_from(self.text.len()).expect("a string pool holds under 4 GiB");
        self.ends.push(end);
    }

    #[inline]
    fn for_each(&self, mut f: impl FnMut(&str)) {
        let mut start = 0;
        for &end in &self.ends {
            f(&self.text[start..end as usize]);
            start = end as usize;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn int_keys_are_distinct() {
        let keys: HashSet<u64> = (0..100_000).map(int_key).collect();
        assert_eq!(keys.len(), 100_000);
    }

    #[test]
    fn string_keys_are_distinct_and_16_to_32_bytes() {
        let mut pool = StrPool::default();
        pool.fill((0..50_000).chain(ABSENT_BASE..ABSENT_BASE + 50_000));
        let mut seen = HashSet::new();
        let mut lengths = HashSet::new();
        pool.for_each(|k| {
            assert!((16..=32).contains(&k.len()), "{k}");
            lengths.insert(k.len());
            assert!(seen.insert(k.to_string()), "duplicate {k}");
        });
        assert_eq!(lengths.len(), 17, "every length from 16 to 32 occurs");
    }

    #[test]
    fn string_key_matches_pool() {
        let mut pool = StrPool::default();
        pool.fill([3, 4]);
        let mut expected = String::new();
        let mut got = Vec::new();
        pool.for_each(|k| got.push(k.to_string()));
        string_key(4, &mut expected);
        assert_eq!(got[1], expected);
    }

    #[test]
    fn samples_stay_in_range_and_spread() {
        let n = 1000;
        let hits: HashSet<u64> = (0..10_000).map(|j| sample_index(1, j, n)).collect();
        assert!(hits.iter().all(|&i| i < n));
        assert!(hits.len() > 990, "{}", hits.len());
    }
}
