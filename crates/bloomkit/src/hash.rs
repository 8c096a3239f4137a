//! The stable key hash.
//!
//! A filter that is written to disk is only useful if the same key hashes to the same value
//! when it is read back: on another machine, another Rust version, another bloomkit version.
//! `std`'s `DefaultHasher` promises none of that, so bloomkit pins its own:
//!
//! * **Algorithm:** XXH3-64 (`xxhash-rust`), fast on short keys and well studied.
//! * **Seed:** [`DEFAULT_SEED`] unless a filter is built with another one; the seed is stored
//!   in every filter file.
//! * **Feed:** the bytes [`Key`] defines for the key's type (see [`crate::key`]): a byte
//!   string's bytes, an integer's value, whatever Rust type carries them.
//!
//! One key therefore has one 64-bit hash, and that hash can be computed once and used to probe
//! many filters ([`crate::BloomFilter::contains_hash`] and friends), as a storage engine that
//! checks one key against many files wants to.
//!
//! [`hash_std`] and [`StableHasher`] keep bloomkit 0.1's feed, the key's `std::hash::Hash`
//! bytes with integers little-endian: filters read from 0.1's files hash keys that way.
//!
//! Golden vectors in this module's tests (0.1's feed) and in `key.rs`'s (the current one) pin
//! all of the above: a change that alters any hash fails them.

use std::hash::{Hash, Hasher};
use std::mem::MaybeUninit;

use xxhash_rust::xxh3::{xxh3_64_with_seed, Xxh3};

use crate::key::Key;

/// The seed every filter uses unless it is built with another one.
///
/// It is the ASCII bytes of "bloomkit" read as a little-endian integer: an arbitrary but
/// fixed choice, never to be changed (stored filters depend on it).
pub const DEFAULT_SEED: u64 = u64::from_le_bytes(*b"bloomkit");

/// The stable 64-bit hash of `key` under [`DEFAULT_SEED`]: what every filter with the
/// default seed derives its probes from.
///
/// # Examples
///
/// ```
/// let h = bloomkit::hash("apple");
/// assert_eq!(h, bloomkit::hash("apple"));
/// assert_ne!(h, bloomkit::hash("pear"));
/// // The same bytes are the same key, whatever carries them.
/// assert_eq!(h, bloomkit::hash(b"apple"));
/// assert_eq!(h, bloomkit::hash(&String::from("apple")));
/// assert_eq!(h, bloomkit::hash_bytes(b"apple"));
/// // An integer is its value, whatever its type.
/// assert_eq!(bloomkit::hash(&42u8), bloomkit::hash(&42i64));
/// ```
#[inline(always)]
pub fn hash<K: Key + ?Sized>(key: &K) -> u64 {
    key.hash_key(DEFAULT_SEED)
}

/// The stable 64-bit hash of `key` under `seed`.
///
/// A filter built with a seed other than the default must be probed with hashes made by this
/// function and that seed (or by the filter's own `key_hasher()`, which also knows whether
/// the filter came from a bloomkit 0.1 file).
#[inline(always)]
pub fn hash_with_seed<K: Key + ?Sized>(key: &K, seed: u64) -> u64 {
    key.hash_key(seed)
}

/// bloomkit 0.1's hash of `key` under [`DEFAULT_SEED`]: XXH3-64 over its `std::hash::Hash`
/// feed, through [`StableHasher`].
///
/// The same value as [`hash`] for a `str` and a `u64`; different for a `[u8]` (0.1 wrote its
/// length first), for other integer types (their own width) and for tuples. Filters read
/// from files that 0.1 wrote hash keys this way ([`crate::KeyFeed::StdHash`]).
///
/// ```
/// assert_eq!(bloomkit::hash_std("apple"), bloomkit::hash("apple"));
/// assert_ne!(bloomkit::hash_std(&b"apple"[..]), bloomkit::hash(&b"apple"[..]));
/// ```
#[inline]
pub fn hash_std<T: Hash + ?Sized>(key: &T) -> u64 {
    hash_std_with_seed(key, DEFAULT_SEED)
}

/// [`hash_std`] under `seed`.
#[inline(always)]
pub fn hash_std_with_seed<T: Hash + ?Sized>(key: &T, seed: u64) -> u64 {
    let mut hasher = StableHasher::with_seed(seed);
    key.hash(&mut hasher);
    hasher.finish()
}

/// The hash of a byte string, under [`DEFAULT_SEED`], exactly as [`hash`] hashes it (and any
/// `str` holding the same bytes).
///
/// The same under either [`crate::KeyFeed`]: bloomkit 0.1 hashed a `str` the same way, and
/// its CLI and server hashed raw bytes with this function, so it also probes filters read
/// from 0.1's files.
#[inline]
pub fn hash_bytes(bytes: &[u8]) -> u64 {
    hash_bytes_with_seed(bytes, DEFAULT_SEED)
}

/// [`hash_bytes`] under `seed`.
#[inline]
pub fn hash_bytes_with_seed(bytes: &[u8], seed: u64) -> u64 {
    // What `impl Hash for str` writes is the bytes, then a 0xff terminator (which no UTF-8
    // text contains, so "ab","c" and "a","bc" differ in a tuple). That feed is hashed in
    // place, without copying it into a buffer first: see `xxh3.rs`.
    crate::xxh3::xxh3_64_str_feed(bytes, seed)
}

/// Copies `src` into `dst` (of the same length) with fixed-size, possibly overlapping moves
/// rather than a call to `memcpy`, whose set-up costs more than copying a short key.
#[inline(always)]
fn copy_short(dst: &mut [MaybeUninit<u8>], src: &[u8]) {
    let n = src.len();
    if n > 32 {
        // Longer keys are rarer, and `memcpy` is then worth its set-up.
        write_all(dst, src);
    } else if n >= 16 {
        head_and_tail::<16>(dst, src);
    } else if n >= 8 {
        head_and_tail::<8>(dst, src);
    } else if n >= 4 {
        head_and_tail::<4>(dst, src);
    } else {
        write_all(dst, src);
    }
}

/// Copies `src` (`W` to `2·W` bytes) into `dst` as its first `W` bytes and its last `W`,
/// which overlap: two fixed-size moves that together write all of `dst`.
#[inline(always)]
fn head_and_tail<const W: usize>(dst: &mut [MaybeUninit<u8>], src: &[u8]) {
    let n = src.len();
    let mut head = [0u8; W];
    let mut tail = [0u8; W];
    head.copy_from_slice(&src[..W]);
    tail.copy_from_slice(&src[n - W..]);
    write_all(&mut dst[..W], &head);
    write_all(&mut dst[n - W..], &tail);
}

/// Writes `src` into `dst`, of the same length. (`<[MaybeUninit<u8>]>::write_copy_of_slice`
/// says it, but needs Rust 1.93; this loop compiles to the same moves: one store for a fixed
/// size, `memcpy` for a long one.)
#[inline(always)]
fn write_all(dst: &mut [MaybeUninit<u8>], src: &[u8]) {
    for (d, s) in dst.iter_mut().zip(src) {
        d.write(*s);
    }
}

/// Keys up to this many bytes are hashed in one call from a stack buffer; longer ones stream.
const INLINE_BYTES: usize = 128;

/// The [`Hasher`] behind [`hash_std`] and [`crate::StdHash`]: XXH3-64 over a platform-independent
/// version of the bytes a `std::hash::Hash` implementation writes.
///
/// Most keys are short, so the hasher collects the feed in a stack buffer and hashes it in one
/// call to XXH3's one-shot function at `finish`; only a feed longer than 128 bytes switches to
/// XXH3's streaming state (on the heap, since it is large). Both routes give the same value:
/// XXH3 streaming equals XXH3 one-shot over the same bytes.
///
/// The commonest keys are one integer, or a string (its bytes, then one `0xff`). For those
/// feeds the hasher also computes the hash straight from the caller's bytes at the first
/// write (for strings, `xxh3.rs`), and `finish` returns it when the feed turned out to be
/// exactly that: reading the bytes back from the buffer would stall on the stores that just
/// wrote them, and costs several times the hash.
///
/// # Examples
///
/// ```
/// use std::hash::{Hash, Hasher};
/// use bloomkit::{StableHasher, DEFAULT_SEED};
///
/// let mut h = StableHasher::with_seed(DEFAULT_SEED);
/// (42u32, "x").hash(&mut h);
/// assert_eq!(h.finish(), bloomkit::hash_std(&(42u32, "x")));
/// ```
#[derive(Clone)]
pub struct StableHasher {
    seed: u64,
    len: usize,
    /// The feed so far while it fits; only the first `len` bytes are written. Left
    /// uninitialised rather than zeroed: zeroing 128 bytes for every key cost 0.9 ns of a
    /// 5.4 ns string hash (16-32-byte keys). Miri checks the reads
    /// (`cargo +nightly miri test -p bloomkit --lib hash::tests`, run by `.ci/run`).
    buf: [MaybeUninit<u8>; INLINE_BYTES],
    stream: Option<Box<Xxh3>>,
    /// The hash of the feed as guessed at its first write, for `finish` to return if the
    /// guess came true.
    guess: Guess,
}

/// A hash computed at the first write, and whether the feed so far is what it was computed
/// for.
#[derive(Clone, Copy, Default)]
struct Guess {
    hash: u64,
    state: GuessState,
}

#[derive(Clone, Copy, Default, PartialEq, Eq)]
enum GuessState {
    /// No guess, or the feed has gone past it.
    #[default]
    Off,
    /// The feed is exactly the bytes the guess hashed.
    Holds,
    /// The feed is a string's bytes; the guess holds if one 0xff follows, and nothing else.
    NeedsFf,
}

impl std::fmt::Debug for StableHasher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StableHasher")
            .field("seed", &self.seed)
            .field("streaming", &self.stream.is_some())
            .finish_non_exhaustive()
    }
}

impl StableHasher {
    /// A hasher with the given seed.
    #[inline(always)]
    pub fn with_seed(seed: u64) -> Self {
        StableHasher {
            seed,
            len: 0,
            buf: [MaybeUninit::uninit(); INLINE_BYTES],
            stream: None,
            guess: Guess::default(),
        }
    }
}

impl Default for StableHasher {
    /// A hasher with [`DEFAULT_SEED`].
    fn default() -> Self {
        StableHasher::with_seed(DEFAULT_SEED)
    }
}

impl StableHasher {
    /// The feed so far, when it is in the buffer.
    #[inline]
    fn buffered(&self) -> &[u8] {
        let len = self.len.min(INLINE_BYTES);
        // SAFETY: every write that grows `len` first writes the bytes up to the new `len`
        // (`push_int`, `write`, `write_u8`, `push_slow`: each writes `buf[old_len..new_len]`
        // in full), so `buf[..len]` is initialised; `MaybeUninit<u8>` has `u8`'s layout;
        // and `len` is capped at the buffer's size. The slice borrows `self`, which cannot
        // change while it lives.
        #[allow(unsafe_code)]
        unsafe {
            std::slice::from_raw_parts(self.buf.as_ptr().cast::<u8>(), len)
        }
    }

    /// Whether nothing has been written yet.
    #[inline(always)]
    fn is_empty(&self) -> bool {
        self.len == 0 && self.stream.is_none()
    }

    /// Appends to a feed that is no longer one integer or one string: into the buffer while
    /// it fits, else into a streaming state.
    ///
    /// Out of line on purpose. The first write of a key, and a string's closing 0xff, are
    /// handled inline by the `write` methods in a few instructions; everything else comes
    /// here. Keeping the inlined part that small matters more than it looks: `std`'s
    /// `Hash` impls (`u64::hash` calls `write_u64`) are inlined into a caller only while
    /// they stay small, and once one was not, the hasher lived in memory and hashing an
    /// integer cost 40% more.
    #[inline(never)]
    fn push_slow(&mut self, bytes: &[u8]) {
        self.guess.state = GuessState::Off;
        let end = self.len + bytes.len();
        if self.stream.is_none() && end <= INLINE_BYTES {
            write_all(&mut self.buf[self.len..end], bytes);
            self.len = end;
        } else if let Some(stream) = self.stream.as_mut() {
            stream.update(bytes);
        } else {
            // The feed outgrew the buffer: move what we have into a streaming state.
            let mut stream = Box::new(Xxh3::with_seed(self.seed));
            stream.update(self.buffered());
            stream.update(bytes);
            self.stream = Some(stream);
        }
    }

    /// [`Hasher::finish`] for a feed that is not one integer or one string.
    #[inline(never)]
    fn finish_slow(&self) -> u64 {
        match &self.stream {
            Some(stream) => stream.digest(),
            None => xxh3_64_with_seed(self.buffered(), self.seed),
        }
    }

    /// Appends a whole integer's little-endian bytes. When it is all the feed so far, its
    /// hash is computed from the bytes in registers, for `finish` to return should nothing
    /// follow: the commonest integer key.
    #[inline(always)]
    fn push_int<const N: usize>(&mut self, le_bytes: [u8; N]) {
        if self.is_empty() {
            self.guess = Guess {
                hash: xxh3_64_with_seed(&le_bytes, self.seed),
                state: GuessState::Holds,
            };
            write_all(&mut self.buf[..N], &le_bytes);
            self.len = N;
        } else {
            self.push_slow(&le_bytes);
        }
    }
}

impl Hasher for StableHasher {
    #[inline(always)]
    fn write(&mut self, bytes: &[u8]) {
        let n = bytes.len();
        if self.is_empty() && n < INLINE_BYTES {
            // Perhaps a string: its hash, should a lone 0xff follow and nothing else.
            self.guess = Guess {
                hash: crate::xxh3::xxh3_64_str_feed(bytes, self.seed),
                state: GuessState::NeedsFf,
            };
            copy_short(&mut self.buf[..n], bytes);
            self.len = n;
        } else {
            self.push_slow(bytes);
        }
    }

    #[inline(always)]
    fn finish(&self) -> u64 {
        // The guess tracks the feed write by write, so the common keys need no look at the
        // buffer here.
        if self.guess.state == GuessState::Holds {
            self.guess.hash
        } else {
            self.finish_slow()
        }
    }

    // Integers are written little-endian whatever the platform (the defaults use native
    // order), and pointer-sized ones as 64 bits (the defaults use the platform's width).
    #[inline(always)]
    fn write_u8(&mut self, i: u8) {
        // Every string ends with one 0xff: when it completes a string's feed, a flag and a
        // single store.
        if self.guess.state == GuessState::NeedsFf && i == 0xff && self.len < INLINE_BYTES {
            self.guess.state = GuessState::Holds;
            self.buf[self.len].write(i);
            self.len += 1;
        } else {
            self.push_slow(&[i]);
        }
    }
    #[inline(always)]
    fn write_u16(&mut self, i: u16) {
        self.push_int(i.to_le_bytes());
    }
    #[inline(always)]
    fn write_u32(&mut self, i: u32) {
        self.push_int(i.to_le_bytes());
    }
    #[inline(always)]
    fn write_u64(&mut self, i: u64) {
        self.push_int(i.to_le_bytes());
    }
    #[inline(always)]
    fn write_u128(&mut self, i: u128) {
        self.push_int(i.to_le_bytes());
    }
    #[inline(always)]
    fn write_usize(&mut self, i: usize) {
        self.push_int((i as u64).to_le_bytes());
    }
    #[inline(always)]
    fn write_i8(&mut self, i: i8) {
        self.write_u8(i as u8);
    }
    #[inline(always)]
    fn write_i16(&mut self, i: i16) {
        self.push_int(i.to_le_bytes());
    }
    #[inline(always)]
    fn write_i32(&mut self, i: i32) {
        self.push_int(i.to_le_bytes());
    }
    #[inline(always)]
    fn write_i64(&mut self, i: i64) {
        self.push_int(i.to_le_bytes());
    }
    #[inline(always)]
    fn write_i128(&mut self, i: i128) {
        self.push_int(i.to_le_bytes());
    }
    #[inline(always)]
    fn write_isize(&mut self, i: isize) {
        self.push_int((i as i64).to_le_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Golden vectors: these values are stored in users' filter files. If this test fails,
    /// the change broke every stored filter; revert it rather than update the numbers.
    /// (The string and integer cases were checked against the reference C implementation of
    /// XXH3 when they were recorded.)
    #[test]
    fn golden_vectors() {
        assert_eq!(DEFAULT_SEED, 0x7469_6b6d_6f6f_6c62);
        let cases: &[(u64, u64)] = &[
            (hash_std(""), 0x716b_9aa7_5523_90db),
            (hash_std("apple"), 0xeaea_c75c_5b91_4c47),
            (
                hash_std("the quick brown fox jumps over the lazy dog"),
                0x4d01_10cd_1f0a_7a90,
            ),
            (hash_std(&0u64), 0x1b41_d1e5_cd11_1e5a),
            (hash_std(&42u64), 0x5f23_9f8b_6ee3_7ed4),
            (hash_std(&-1i32), 0xf18d_4395_c46d_1901),
            (hash_std(&7usize), 0x81a4_518c_62e2_d089),
            (hash_std(&(1u8, "a", [2u16, 3])), 0xfed6_50d0_f1e3_b3b8),
            (hash_std(&vec![1u32, 2, 3]), 0x101b_dcb2_852b_ec6a),
            (hash_std(&"x".repeat(1000)), 0x5727_a62e_5518_aa2f),
            (hash_std_with_seed("apple", 0), 0x4e34_6f37_4e35_6905),
            (hash_bytes(&[0xff, 0x00, 0x80]), 0xc5c9_5b84_d46a_e246),
        ];
        let got: Vec<String> = cases.iter().map(|(h, _)| format!("{h:#018x}")).collect();
        let want: Vec<String> = cases.iter().map(|(_, w)| format!("{w:#018x}")).collect();
        assert_eq!(got, want);
    }

    /// The feed is what the docs promise: integers little-endian, usize as u64, str as its
    /// bytes plus 0xff, all hashed by plain XXH3-64 with the seed.
    #[test]
    fn feed_is_the_documented_bytes() {
        let s = DEFAULT_SEED;
        assert_eq!(
            hash_std(&0x0102_0304u32),
            xxh3_64_with_seed(&[4, 3, 2, 1], s)
        );
        assert_eq!(hash_std(&5usize), xxh3_64_with_seed(&5u64.to_le_bytes(), s));
        assert_eq!(
            hash_std(&-2isize),
            xxh3_64_with_seed(&(-2i64).to_le_bytes(), s)
        );
        assert_eq!(hash_std("ab"), xxh3_64_with_seed(b"ab\xff", s));
        assert_eq!(hash_bytes(b"ab"), hash_std("ab"));
        // A slice writes its length (as u64) first.
        let mut feed = 2u64.to_le_bytes().to_vec();
        feed.extend_from_slice(&[9, 8]);
        assert_eq!(hash_std(&[9u8, 8][..]), xxh3_64_with_seed(&feed, s));
    }

    /// The string fast path gives XXH3 of the whole feed whatever follows the first write:
    /// a lone 0xff (the fast path), another byte, more writes, or nothing.
    #[test]
    fn string_fast_path_only_when_the_feed_is_a_string() {
        let reference = |feed: &[u8]| xxh3_64_with_seed(feed, DEFAULT_SEED);
        for len in [0usize, 1, 5, 20, 126, 127, 128, 200] {
            let bytes = vec![b'k'; len];
            let feeds: Vec<Vec<&[u8]>> = vec![
                vec![&bytes, &[0xff]],
                vec![&bytes, &[0xfe]],
                vec![&bytes],
                vec![&bytes, &[0xff], &[0xff]],
                vec![&bytes, &[0xff], b"tail"],
                vec![&[], &bytes, &[0xff]],
            ];
            for parts in feeds {
                let mut h = StableHasher::default();
                let mut whole = Vec::new();
                for p in &parts {
                    if p.len() == 1 {
                        h.write_u8(p[0]);
                    } else {
                        h.write(p);
                    }
                    whole.extend_from_slice(p);
                }
                assert_eq!(
                    h.finish(),
                    reference(&whole),
                    "len {len}, {} parts",
                    parts.len()
                );
            }
        }
        assert_eq!(hash_std("apple"), hash_bytes(b"apple"));
        assert_eq!(hash_std(&("a", "b")), reference(b"a\xffb\xff"));
    }

    /// Any sequence of writes, of every kind, hashes as XXH3 of the bytes they add up to:
    /// the first-write guesses (an integer, a string) never answer for a feed they do not
    /// describe. Sequences from a fixed generator, so a failure reproduces.
    #[test]
    fn any_sequence_of_writes_hashes_its_feed() {
        let mut state = 0x0bad_5eed_u64;
        let mut next = move |bound: u64| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (state >> 33) % bound
        };
        let text: Vec<u8> = (0..300u32).map(|i| (i * 37 % 256) as u8).collect();
        // Fewer under Miri, which checks the buffer's initialisation but runs slowly.
        let sequences = if cfg!(miri) { 500 } else { 20_000 };
        for _ in 0..sequences {
            let mut h = StableHasher::with_seed(7);
            let mut feed = Vec::new();
            for _ in 0..1 + next(4) {
                match next(6) {
                    0 => {
                        let len = next(200) as usize;
                        h.write(&text[..len]);
                        feed.extend_from_slice(&text[..len]);
                    }
                    1 => {
                        // A terminator, or another byte.
                        let b = if next(2) == 0 { 0xff } else { next(256) as u8 };
                        h.write_u8(b);
                        feed.push(b);
                    }
                    2 => {
                        let v = next(u64::MAX);
                        h.write_u64(v);
                        feed.extend_from_slice(&v.to_le_bytes());
                    }
                    3 => {
                        let v = next(u64::MAX) as u32;
                        h.write_u32(v);
                        feed.extend_from_slice(&v.to_le_bytes());
                    }
                    4 => {
                        h.write_i8(-1);
                        feed.push(0xff);
                    }
                    _ => {
                        let v = (next(u64::MAX) as u128) << 40;
                        h.write_u128(v);
                        feed.extend_from_slice(&v.to_le_bytes());
                    }
                }
            }
            assert_eq!(h.finish(), xxh3_64_with_seed(&feed, 7), "feed {feed:?}");
        }
    }

    /// The inline and streaming routes agree at every length around the switch-over.
    #[test]
    fn inline_and_streaming_agree() {
        let data: Vec<u8> = (0..700u32).map(|i| (i * 31 % 251) as u8).collect();
        // Under Miri, which checks the buffer's initialisation but interprets every byte of
        // XXH3 slowly: every length up to just past the inline buffer, then a sample.
        let lengths: Vec<usize> = if cfg!(miri) {
            (0..=INLINE_BYTES + 8)
                .chain((INLINE_BYTES + 9..data.len()).step_by(29))
                .collect()
        } else {
            (0..data.len()).collect()
        };
        for len in lengths {
            let want = xxh3_64_with_seed(&data[..len], 99);
            // One write.
            let mut h = StableHasher::with_seed(99);
            h.write(&data[..len]);
            assert_eq!(h.finish(), want, "len {len}");
            // Many small writes, crossing the buffer boundary mid-write.
            let mut h = StableHasher::with_seed(99);
            for chunk in data[..len].chunks(7) {
                h.write(chunk);
            }
            assert_eq!(h.finish(), want, "len {len} chunked");
        }
    }
}
