//! What a key is: [`Key`], the byte feed every filter hashes, and [`KeyHasher`], a filter's
//! seed and feed.
//!
//! A key is its bytes or its integer value, whatever Rust type carries it: `"alice"`,
//! `String::from("alice")`, `b"alice"`, `&b"alice"[..]` and `b"alice".to_vec()` are one key,
//! and so are `42`, `42u8`, `42u32`, `42u64` and `42i64`. A filter hashes the key's *feed*,
//! a byte string bloomkit defines for each type, with XXH3-64 and the filter's seed; the feed
//! is pinned by golden vectors (this module's tests) and never changes.
//!
//! # The feeds
//!
//! * **A byte string** (`str`, `[u8]`, `[u8; N]`, `String`, `Vec<u8>`, and anything that
//!   derefs or borrows to one: `Box<str>`, `Cow<str>`, `Arc<[u8]>`, `bytes::Bytes` with the
//!   `bytes` feature): its bytes, then one `0xff` byte. This is what [`crate::hash_bytes`],
//!   the CLI (a line's bytes) and the server (a RESP bulk string) hash, and what bloomkit 0.1
//!   hashed for a `str`.
//! * **An integer** of any primitive type (`u8` to `u128`, `i8` to `i128`, `usize`, `isize`):
//!   its value. A value from 0 to `u64::MAX` is its eight little-endian bytes as a `u64`,
//!   whatever the type (so bloomkit 0.1's `u64` keys hash as they did). Any other value, a
//!   negative one or a 128-bit one above `u64::MAX`, is 17 bytes: the value's 128-bit
//!   two's-complement little-endian bytes, then a sign byte (`0xff` if negative, else `0`).
//!   So `-1i8` and `-1i64` are one key, and neither is `u64::MAX` nor `u128::MAX`.
//! * **A composite key** (a tuple, or a type of yours implementing [`Key`]): the feeds of its
//!   fields, written one after another into a [`KeySink`], each delimited so that no two
//!   different sequences of fields give the same bytes: a byte string field is its length
//!   (a little-endian `u64`) then its bytes; an integer field is its integer feed preceded by
//!   that feed's length as one byte (8 or 17). A one-field tuple `(k,)` is therefore a
//!   different key from `k`.
//!
//! All of these are written by this crate's own code, so they are the same on every
//! platform, in every Rust release and every bloomkit version. Keys of different types may
//! share a feed (the 8-byte feed of an integer is also that of a 7-byte string followed by
//! its `0xff`): like two keys whose hashes collide, that costs at most a false positive,
//! never a false negative.
//!
//! # Other types
//!
//! Implement [`Key`] by writing the fields that identify a value into the sink, as Guava's
//! `Funnel` does: the feed is then yours, explicit and stable. Or wrap a value whose
//! `std::hash::Hash` you want to reuse in [`StdHash`]: its feed is whatever that `Hash`
//! implementation writes, integers little-endian (through [`crate::StableHasher`]). The
//! standard library's own implementations (tuples, slices, `#[derive(Hash)]`) are not
//! promised to stay the same across Rust releases, so a filter stored with `StdHash` keys may
//! answer differently after a compiler upgrade: prefer a `Key` implementation for anything
//! that is stored.
//!
//! # Files written by bloomkit 0.1
//!
//! bloomkit 0.1 hashed every key through its `Hash` implementation ([`KeyFeed::StdHash`]):
//! the same bytes as today for a `str` and a `u64`, but a `[u8]` wrote its length first, an
//! `i32` four bytes, a tuple what `std` writes. Its files say so in their header (hash
//! algorithm 1; bloomkit 0.2 and later write 2), and a filter read from one keeps hashing keys that
//! way ([`Key::hash_key_std`]), so it answers every key exactly as it did. [`KeyHasher`]
//! carries the choice, and [`hash_bytes`](KeyHasher::hash_bytes) is the same under both.

use std::borrow::Cow;
use std::hash::{Hash, Hasher};
use std::rc::Rc;
use std::sync::Arc;

use crate::hash::{hash_std_with_seed, StableHasher, DEFAULT_SEED};
use crate::xxh3::{xxh3_64_str_feed, xxh3_64_u64};

/// A value a filter can take as a key: it writes a stable byte feed, which the filter hashes.
///
/// Implemented for byte strings, every primitive integer, references, boxes and `Cow`s of
/// keys, and tuples of up to six keys; see the [module docs](crate::key) for each feed.
/// Implement it for your own types by writing their identifying fields into the sink:
///
/// ```
/// use bloomkit::{BlockedBloomFilter, Key, KeySink};
///
/// struct User { tenant: u32, name: String }
///
/// impl Key for User {
///     fn feed(&self, sink: &mut KeySink) {
///         sink.write_u64(self.tenant.into());
///         sink.write_bytes(self.name.as_bytes());
///     }
/// }
///
/// let mut f = BlockedBloomFilter::new(1000, 0.01)?;
/// f.insert(&User { tenant: 7, name: "alice".into() });
/// assert!(f.contains(&User { tenant: 7, name: "alice".into() }));
/// // The same fields as a tuple give the same feed, hence the same key.
/// assert!(f.contains(&(7u32, "alice")));
/// assert!(!f.contains(&User { tenant: 8, name: "alice".into() }));
/// # Ok::<(), bloomkit::Error>(())
/// ```
pub trait Key {
    /// Writes this key's feed into `sink`, as one field of a composite key (and, unless
    /// [`hash_key`](Key::hash_key) is overridden, as the whole key).
    fn feed(&self, sink: &mut KeySink);

    /// The key's 64-bit hash under `seed`: XXH3-64 of its feed.
    ///
    /// The provided method hashes what [`feed`](Key::feed) writes. Byte strings and integers
    /// override it with their own top-level feed (see the [module docs](crate::key)) and a
    /// faster route to the same value; an implementation of yours should not.
    #[inline]
    fn hash_key(&self, seed: u64) -> u64 {
        let mut sink = KeySink::with_seed(seed);
        self.feed(&mut sink);
        sink.finish()
    }

    /// The hash bloomkit 0.1 gave this key: its `std::hash::Hash` feed through
    /// [`StableHasher`] ([`KeyFeed::StdHash`]), for filters read from files that 0.1 wrote.
    ///
    /// The implementations in this crate return exactly what 0.1 computed for the same type.
    /// The provided method returns [`hash_key`](Key::hash_key): a type that 0.1 could not
    /// take has no older feed to keep.
    #[inline]
    fn hash_key_std(&self, seed: u64) -> u64 {
        self.hash_key(seed)
    }
}

/// Where a composite key writes its fields: the bytes its hash is computed from.
///
/// Each write is delimited (a byte string by its length, an integer by its feed's length), so
/// different sequences of fields never give the same feed. Integers of every type with the
/// same value write the same bytes.
///
/// # Examples
///
/// ```
/// use bloomkit::{Key, KeySink};
///
/// struct Point { x: i32, y: i32 }
/// impl Key for Point {
///     fn feed(&self, sink: &mut KeySink) {
///         sink.write_i64(self.x.into());
///         sink.write_i64(self.y.into());
///     }
/// }
/// assert_eq!(bloomkit::hash(&Point { x: 1, y: -2 }), bloomkit::hash(&(1u8, -2i64)));
/// assert_ne!(bloomkit::hash(&Point { x: 1, y: -2 }), bloomkit::hash(&Point { x: -2, y: 1 }));
/// ```
#[derive(Debug, Clone)]
pub struct KeySink {
    hasher: StableHasher,
}

impl KeySink {
    /// An empty feed, to be hashed with `seed`.
    #[inline]
    pub fn with_seed(seed: u64) -> Self {
        KeySink {
            hasher: StableHasher::with_seed(seed),
        }
    }

    /// Writes a byte string field: its length as a little-endian `u64`, then its bytes.
    #[inline]
    pub fn write_bytes(&mut self, bytes: &[u8]) {
        self.hasher.write(&(bytes.len() as u64).to_le_bytes());
        self.hasher.write(bytes);
    }

    /// Writes a text field, as [`write_bytes`](Self::write_bytes) of its UTF-8 bytes.
    #[inline]
    pub fn write_str(&mut self, text: &str) {
        self.write_bytes(text.as_bytes());
    }

    /// Writes an unsigned integer field (any narrower unsigned type converts losslessly).
    #[inline]
    pub fn write_u64(&mut self, value: u64) {
        self.write_int(IntFeed::of_u128(value.into()));
    }

    /// Writes a signed integer field: the same bytes as [`write_u64`](Self::write_u64) for a
    /// non-negative value.
    #[inline]
    pub fn write_i64(&mut self, value: i64) {
        self.write_int(IntFeed::of_i128(value.into()));
    }

    /// Writes a 128-bit unsigned integer field: the same bytes as
    /// [`write_u64`](Self::write_u64) for a value that fits in a `u64`.
    #[inline]
    pub fn write_u128(&mut self, value: u128) {
        self.write_int(IntFeed::of_u128(value));
    }

    /// Writes a 128-bit signed integer field, the same bytes as any narrower type's for the
    /// same value.
    #[inline]
    pub fn write_i128(&mut self, value: i128) {
        self.write_int(IntFeed::of_i128(value));
    }

    /// Writes another key as a field: its [`Key::feed`].
    #[inline]
    pub fn write_key<K: Key + ?Sized>(&mut self, key: &K) {
        key.feed(self);
    }

    #[inline]
    fn write_int(&mut self, feed: IntFeed) {
        let bytes = feed.bytes();
        self.hasher.write_u8(bytes.len() as u8);
        self.hasher.write(bytes);
    }

    /// The hash of everything written so far.
    #[inline]
    pub fn finish(&self) -> u64 {
        self.hasher.finish()
    }
}

/// An integer's feed: 8 bytes for a value in `0..=u64::MAX`, else 17.
struct IntFeed {
    bytes: [u8; 17],
    len: usize,
}

impl IntFeed {
    #[inline]
    fn of_u128(value: u128) -> Self {
        let mut bytes = [0u8; 17];
        bytes[..16].copy_from_slice(&value.to_le_bytes());
        let len = if value <= u64::MAX as u128 { 8 } else { 17 };
        IntFeed { bytes, len }
    }

    #[inline]
    fn of_i128(value: i128) -> Self {
        if value >= 0 {
            return Self::of_u128(value as u128);
        }
        let mut bytes = [0xffu8; 17];
        bytes[..16].copy_from_slice(&value.to_le_bytes());
        IntFeed { bytes, len: 17 }
    }

    #[inline]
    fn bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }

    /// The hash of this feed as a whole key.
    #[inline]
    fn hash(&self, seed: u64) -> u64 {
        xxhash_rust::xxh3::xxh3_64_with_seed(self.bytes(), seed)
    }
}

/// The hash of a whole key that is a negative or wide integer: out of line, since the
/// common integer keys take [`xxh3_64_u64`].
#[inline(never)]
fn wide_int_hash(feed: IntFeed, seed: u64) -> u64 {
    feed.hash(seed)
}

/// How a filter turns a key into the bytes it hashes: with bloomkit's own pinned feeds
/// ([`Key`]), or as bloomkit 0.1 did, through `std::hash::Hash`.
///
/// Every filter made by this version uses [`KeyFeed::Key`]. A filter read from a file that
/// bloomkit 0.1 wrote uses [`KeyFeed::StdHash`], so it keeps answering every key as it did.
/// The feed is stored in the file header as its hash algorithm code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum KeyFeed {
    /// [`Key::hash_key`]: the same bytes are the same key, and an integer is its value,
    /// whatever the type. Hash algorithm 2 in the file header.
    #[default]
    Key,
    /// [`Key::hash_key_std`]: what bloomkit 0.1 hashed, the key's `std::hash::Hash` feed
    /// through [`StableHasher`]. Hash algorithm 1 in the file header.
    StdHash,
}

impl KeyFeed {
    /// The hash algorithm code stored in the file header.
    pub fn code(self) -> u16 {
        match self {
            KeyFeed::StdHash => 1,
            KeyFeed::Key => 2,
        }
    }

    /// The feed with this hash algorithm code, if there is one.
    pub fn from_code(code: u16) -> Option<Self> {
        match code {
            1 => Some(KeyFeed::StdHash),
            2 => Some(KeyFeed::Key),
            _ => None,
        }
    }

    /// A short name for messages: `"key"` or `"std-hash"`.
    pub fn name(self) -> &'static str {
        match self {
            KeyFeed::Key => "key",
            KeyFeed::StdHash => "std-hash",
        }
    }
}

impl std::fmt::Display for KeyFeed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A filter's way of hashing keys: its seed and its [`KeyFeed`].
///
/// Hash a key once with a filter's hasher and probe every filter that shares it with the
/// hash (`contains_hash`), as a storage engine checking one key against many files does.
///
/// # Examples
///
/// ```
/// use bloomkit::{BloomFilter, BlockedBloomFilter, Filter};
///
/// let mut a = BloomFilter::new(100, 0.01)?;
/// let mut b = BlockedBloomFilter::new(100, 0.01)?;
/// a.insert("k");
/// b.insert("k");
/// assert_eq!(a.key_hasher(), b.key_hasher());
/// let h = a.key_hasher().hash("k");
/// assert!(a.contains_hash(h) && b.contains_hash(h));
/// assert_eq!(h, bloomkit::hash("k"));
/// # Ok::<(), bloomkit::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KeyHasher {
    seed: u64,
    feed: KeyFeed,
}

impl Default for KeyHasher {
    /// [`DEFAULT_SEED`] with the current feed.
    fn default() -> Self {
        KeyHasher::new(DEFAULT_SEED)
    }
}

impl KeyHasher {
    /// The current feed ([`KeyFeed::Key`]) with `seed`.
    #[inline]
    pub const fn new(seed: u64) -> Self {
        KeyHasher {
            seed,
            feed: KeyFeed::Key,
        }
    }

    /// `seed` with a chosen feed: [`KeyFeed::StdHash`] makes filters that bloomkit 0.1 can
    /// read and that hash keys as it did.
    #[inline]
    pub const fn with_feed(seed: u64, feed: KeyFeed) -> Self {
        KeyHasher { seed, feed }
    }

    /// The seed.
    #[inline]
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The feed.
    #[inline]
    pub fn feed(&self) -> KeyFeed {
        self.feed
    }

    /// The hash of `key`: what a filter with this hasher probes for it.
    #[inline(always)]
    pub fn hash<K: Key + ?Sized>(&self, key: &K) -> u64 {
        if self.feed == KeyFeed::Key {
            key.hash_key(self.seed)
        } else {
            std_feed_hash(key, self.seed)
        }
    }

    /// The hashes of `items`, in order: for the static kinds, built from every key at once.
    ///
    /// # Errors
    ///
    /// [`Error::OutOfMemory`](crate::Error::OutOfMemory) if the hashes do not fit; a lying
    /// size hint is never trusted beyond what the allocator grants.
    pub(crate) fn hash_all<I>(&self, items: I) -> crate::Result<Vec<u64>>
    where
        I: IntoIterator,
        I::Item: Key,
    {
        let items = items.into_iter();
        let mut hashes: Vec<u64> = Vec::new();
        // A lying size hint may claim anything: saturate rather than overflow.
        let oom = |len: usize| crate::Error::OutOfMemory {
            bytes: (len as u64).saturating_mul(8),
        };
        let hint = items.size_hint().0;
        hashes.try_reserve_exact(hint).map_err(|_| oom(hint))?;
        for item in items {
            if hashes.len() == hashes.capacity() {
                hashes.try_reserve(1).map_err(|_| oom(hashes.len() + 1))?;
            }
            hashes.push(self.hash(&item));
        }
        Ok(hashes)
    }

    /// The hash of a byte string key, the same under either feed (bloomkit 0.1 hashed a
    /// `str` as its bytes and a `0xff`, and [`crate::hash_bytes`] did the same for bytes).
    #[inline(always)]
    pub fn hash_bytes(&self, bytes: &[u8]) -> u64 {
        xxh3_64_str_feed(bytes, self.seed)
    }
}

/// [`Key::hash_key_std`], out of line: only filters from old files take it, and keeping it
/// out of every caller keeps the current feed's inlined path small.
#[cold]
#[inline(never)]
fn std_feed_hash<K: Key + ?Sized>(key: &K, seed: u64) -> u64 {
    key.hash_key_std(seed)
}

/// A key hashed through its `std::hash::Hash` implementation, with bloomkit's
/// platform-independent [`StableHasher`]: for types that have a `Hash` but no [`Key`].
///
/// Its feed is what the `Hash` implementation writes, so it is only as stable as that
/// implementation: a `#[derive(Hash)]` of yours stays the same while the type does, but the
/// standard library does not promise that its own implementations (tuples, slices, `Option`,
/// ...) write the same bytes in every Rust release. For keys that are stored, write a
/// [`Key`] implementation instead. Under either [`KeyFeed`] it hashes the same, so it also
/// reproduces bloomkit 0.1's hash of any `Hash` type.
///
/// # Examples
///
/// ```
/// use bloomkit::{BlockedBloomFilter, StdHash};
///
/// #[derive(Hash)]
/// struct Session { user: u64, device: [u8; 4] }
///
/// let mut f = BlockedBloomFilter::new(1000, 0.01)?;
/// f.insert(&StdHash(Session { user: 1, device: *b"ios1" }));
/// assert!(f.contains(&StdHash(Session { user: 1, device: *b"ios1" })));
/// # Ok::<(), bloomkit::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct StdHash<T: ?Sized>(pub T);

impl<T: Hash + ?Sized> Key for StdHash<T> {
    #[inline]
    fn feed(&self, sink: &mut KeySink) {
        self.0.hash(&mut sink.hasher);
    }
    #[inline]
    fn hash_key(&self, seed: u64) -> u64 {
        hash_std_with_seed(&self.0, seed)
    }
    #[inline]
    fn hash_key_std(&self, seed: u64) -> u64 {
        hash_std_with_seed(&self.0, seed)
    }
}

/// The byte-string keys: the feed of the bytes, a `0xff`; 0.1's feed was their `Hash`.
macro_rules! byte_string_key {
    ($( [$($generics:tt)*] $ty:ty => |$s:ident| $bytes:expr; )*) => {$(
        impl<$($generics)*> Key for $ty {
            #[inline]
            fn feed(&self, sink: &mut KeySink) {
                let $s = self;
                sink.write_bytes($bytes);
            }
            #[inline(always)]
            fn hash_key(&self, seed: u64) -> u64 {
                let $s = self;
                xxh3_64_str_feed($bytes, seed)
            }
            #[inline]
            fn hash_key_std(&self, seed: u64) -> u64 {
                hash_std_with_seed(self, seed)
            }
        }
    )*};
}

byte_string_key! {
    [] str => |s| s.as_bytes();
    [] String => |s| s.as_bytes();
    [] [u8] => |s| s;
    [] Vec<u8> => |s| s.as_slice();
    [const N: usize] [u8; N] => |s| s.as_slice();
}

#[cfg(feature = "bytes")]
byte_string_key! {
    [] bytes::Bytes => |s| s.as_ref();
    [] bytes::BytesMut => |s| s.as_ref();
}

/// The unsigned integers of at most 64 bits: their value as a `u64`.
macro_rules! unsigned_key {
    ($($ty:ty),*) => {$(
        impl Key for $ty {
            #[inline]
            fn feed(&self, sink: &mut KeySink) {
                sink.write_u64(*self as u64);
            }
            #[inline(always)]
            fn hash_key(&self, seed: u64) -> u64 {
                xxh3_64_u64(*self as u64, seed)
            }
            #[inline]
            fn hash_key_std(&self, seed: u64) -> u64 {
                hash_std_with_seed(self, seed)
            }
        }
    )*};
}

/// The signed integers of at most 64 bits: a `u64` when not negative, else the wide feed.
macro_rules! signed_key {
    ($($ty:ty),*) => {$(
        impl Key for $ty {
            #[inline]
            fn feed(&self, sink: &mut KeySink) {
                sink.write_i64(*self as i64);
            }
            #[inline(always)]
            fn hash_key(&self, seed: u64) -> u64 {
                if *self >= 0 {
                    xxh3_64_u64(*self as u64, seed)
                } else {
                    wide_int_hash(IntFeed::of_i128(*self as i128), seed)
                }
            }
            #[inline]
            fn hash_key_std(&self, seed: u64) -> u64 {
                hash_std_with_seed(self, seed)
            }
        }
    )*};
}

unsigned_key!(u8, u16, u32, u64, usize);
signed_key!(i8, i16, i32, i64, isize);

impl Key for u128 {
    #[inline]
    fn feed(&self, sink: &mut KeySink) {
        sink.write_u128(*self);
    }
    #[inline]
    fn hash_key(&self, seed: u64) -> u64 {
        match u64::try_from(*self) {
            Ok(v) => xxh3_64_u64(v, seed),
            Err(_) => wide_int_hash(IntFeed::of_u128(*self), seed),
        }
    }
    #[inline]
    fn hash_key_std(&self, seed: u64) -> u64 {
        hash_std_with_seed(self, seed)
    }
}

impl Key for i128 {
    #[inline]
    fn feed(&self, sink: &mut KeySink) {
        sink.write_i128(*self);
    }
    #[inline]
    fn hash_key(&self, seed: u64) -> u64 {
        match u64::try_from(*self) {
            Ok(v) => xxh3_64_u64(v, seed),
            Err(_) => wide_int_hash(IntFeed::of_i128(*self), seed),
        }
    }
    #[inline]
    fn hash_key_std(&self, seed: u64) -> u64 {
        hash_std_with_seed(self, seed)
    }
}

/// Pointers to a key are that key (0.1's feed too: `Hash` for them hashes the target).
macro_rules! pointer_key {
    ($([$($generics:tt)*] $ty:ty;)*) => {$(
        impl<$($generics)*> Key for $ty {
            #[inline(always)]
            fn feed(&self, sink: &mut KeySink) {
                K::feed(self, sink)
            }
            #[inline(always)]
            fn hash_key(&self, seed: u64) -> u64 {
                K::hash_key(self, seed)
            }
            #[inline]
            fn hash_key_std(&self, seed: u64) -> u64 {
                K::hash_key_std(self, seed)
            }
        }
    )*};
}

pointer_key! {
    ['a, K: Key + ?Sized] &'a K;
    ['a, K: Key + ?Sized] &'a mut K;
    [K: Key + ?Sized] Box<K>;
    [K: Key + ?Sized] Rc<K>;
    [K: Key + ?Sized] Arc<K>;
}

impl<K: Key + ToOwned + ?Sized> Key for Cow<'_, K> {
    #[inline(always)]
    fn feed(&self, sink: &mut KeySink) {
        K::feed(self, sink)
    }
    #[inline(always)]
    fn hash_key(&self, seed: u64) -> u64 {
        K::hash_key(self, seed)
    }
    #[inline]
    fn hash_key_std(&self, seed: u64) -> u64 {
        K::hash_key_std(self, seed)
    }
}

/// Tuples: their fields' feeds in order. Their 0.1 feed was `std`'s tuple `Hash`, hence the
/// `Hash` bound on the fields (every key type of this crate has one).
macro_rules! tuple_key {
    ($(($($name:ident),+);)*) => {$(
        impl<$($name: Key + Hash),+> Key for ($($name,)+) {
            #[inline]
            #[allow(non_snake_case)]
            fn feed(&self, sink: &mut KeySink) {
                let ($($name,)+) = self;
                $($name.feed(sink);)+
            }
            #[inline]
            fn hash_key_std(&self, seed: u64) -> u64 {
                hash_std_with_seed(self, seed)
            }
        }
    )*};
}

tuple_key! {
    (A);
    (A, B);
    (A, B, C);
    (A, B, C, D);
    (A, B, C, D, E);
    (A, B, C, D, E, F);
}

#[cfg(test)]
mod tests {
    use super::*;
    use xxhash_rust::xxh3::xxh3_64_with_seed;

    const S: u64 = DEFAULT_SEED;

    /// Golden vectors of the pinned feeds: stored filters depend on them. If this fails, the
    /// change broke every filter written since 0.2; revert it. (Checked against the reference
    /// C implementation of XXH3, through Python's `xxhash`, when they were recorded.)
    #[test]
    fn golden_vectors() {
        let cases: &[(u64, u64)] = &[
            (hash_key(""), 0x716b_9aa7_5523_90db),
            (hash_key("apple"), 0xeaea_c75c_5b91_4c47),
            (hash_key(&b"apple"[..]), 0xeaea_c75c_5b91_4c47),
            (hash_key(&0u64), 0x1b41_d1e5_cd11_1e5a),
            (hash_key(&42u64), 0x5f23_9f8b_6ee3_7ed4),
            (hash_key(&42i32), 0x5f23_9f8b_6ee3_7ed4),
            (hash_key(&-1i32), 0xcea2_2914_f3ee_931a),
            (hash_key(&u128::MAX), 0xbccf_d888_6a16_053f),
            (hash_key(&(1u8, "a")), 0x524e_ce58_865c_2b77),
        ];
        let got: Vec<String> = cases.iter().map(|(h, _)| format!("{h:#018x}")).collect();
        let want: Vec<String> = cases.iter().map(|(_, w)| format!("{w:#018x}")).collect();
        assert_eq!(got, want);
    }

    fn hash_key<K: Key + ?Sized>(k: &K) -> u64 {
        k.hash_key(S)
    }

    /// The feeds are the bytes the module docs describe, hashed by plain XXH3-64.
    #[test]
    fn feeds_are_the_documented_bytes() {
        let x = |feed: &[u8]| xxh3_64_with_seed(feed, S);
        assert_eq!(hash_key("ab"), x(b"ab\xff"));
        assert_eq!(hash_key(&[0xffu8, 0][..]), x(&[0xff, 0, 0xff]));
        assert_eq!(hash_key(&7u8), x(&7u64.to_le_bytes()));
        assert_eq!(hash_key(&usize::MAX), x(&u64::MAX.to_le_bytes()));
        let mut neg = (-2i128).to_le_bytes().to_vec();
        neg.push(0xff);
        assert_eq!(hash_key(&-2i8), x(&neg));
        assert_eq!(hash_key(&-2i128), x(&neg));
        let mut wide = (u64::MAX as u128 + 1).to_le_bytes().to_vec();
        wide.push(0);
        assert_eq!(hash_key(&(u64::MAX as u128 + 1)), x(&wide));
        // A tuple: each field delimited.
        let mut feed = vec![8u8];
        feed.extend_from_slice(&1u64.to_le_bytes());
        feed.extend_from_slice(&2u64.to_le_bytes());
        feed.extend_from_slice(b"hi");
        assert_eq!(hash_key(&(1u16, "hi")), x(&feed));
        assert_eq!(hash_key(&(1u16, "hi".to_string())), x(&feed));
        // `StdHash` is the `Hash` feed.
        assert_eq!(
            hash_key(&StdHash(&[9u8, 8][..])),
            crate::hash::hash_std_with_seed(&[9u8, 8][..], S)
        );
    }

    /// Every integer type with the same value is the same key; values differ from each other.
    #[test]
    fn integers_are_their_values() {
        for v in [
            0i128,
            1,
            42,
            127,
            255,
            65_535,
            u32::MAX as i128,
            i64::MAX as i128,
        ] {
            let h = hash_key(&(v as u64));
            if v <= u8::MAX as i128 {
                assert_eq!(hash_key(&(v as u8)), h);
            }
            if v <= i8::MAX as i128 {
                assert_eq!(hash_key(&(v as i8)), h);
            }
            if v <= u16::MAX as i128 {
                assert_eq!(hash_key(&(v as u16)), h);
            }
            if v <= i32::MAX as i128 {
                assert_eq!(hash_key(&(v as i32)), h);
            }
            if v <= u32::MAX as i128 {
                assert_eq!(hash_key(&(v as u32)), h);
            }
            assert_eq!(hash_key(&(v as i64)), h);
            assert_eq!(hash_key(&(v as usize)), h);
            assert_eq!(hash_key(&(v as isize)), h);
            assert_eq!(hash_key(&v), h);
            assert_eq!(hash_key(&(v as u128)), h);
        }
        for v in [-1i64, -2, i8::MIN as i64, i32::MIN as i64, i64::MIN] {
            let h = hash_key(&v);
            assert_eq!(hash_key(&(v as i128)), h);
            assert_eq!(hash_key(&(v as isize)), h);
            if v >= i8::MIN as i64 {
                assert_eq!(hash_key(&(v as i8)), h);
            }
            if v >= i32::MIN as i64 {
                assert_eq!(hash_key(&(v as i32)), h);
            }
            // Not the unsigned value with the same bits.
            assert_ne!(h, hash_key(&(v as u64)));
        }
        assert_ne!(hash_key(&-1i128), hash_key(&u128::MAX));
        assert_ne!(hash_key(&(1u128 << 64)), hash_key(&0u64));
    }

    /// The same bytes are the same key whatever carries them.
    #[test]
    fn byte_carriers_agree() {
        let h = hash_key("alice");
        let owned = String::from("alice");
        assert_eq!(hash_key(&owned), h);
        assert_eq!(hash_key(b"alice"), h);
        assert_eq!(hash_key(&b"alice"[..]), h);
        assert_eq!(hash_key(&b"alice".to_vec()), h);
        assert_eq!(hash_key(&Box::<str>::from("alice")), h);
        assert_eq!(hash_key(&Box::<[u8]>::from(&b"alice"[..])), h);
        assert_eq!(hash_key(&Cow::Borrowed("alice")), h);
        assert_eq!(hash_key(&Cow::<str>::Owned(owned.clone())), h);
        assert_eq!(hash_key(&Cow::Borrowed(&b"alice"[..])), h);
        assert_eq!(hash_key(&Arc::<str>::from("alice")), h);
        assert_eq!(hash_key(&Rc::<[u8]>::from(&b"alice"[..])), h);
        assert_eq!(hash_key(&&&"alice"), h);
        assert_eq!(h, crate::hash_bytes(b"alice"));
    }

    /// Composite feeds are delimited: rearranging the same bytes across fields changes them.
    #[test]
    fn composite_fields_are_delimited() {
        assert_ne!(hash_key(&("ab", "c")), hash_key(&("a", "bc")));
        assert_ne!(
            hash_key(&(&b"a\xff"[..], &b""[..])),
            hash_key(&(&b"a"[..], &b"\xff"[..]))
        );
        assert_ne!(hash_key(&(-1i64, u64::MAX)), hash_key(&(u64::MAX, -1i64)));
        assert_ne!(hash_key(&("a",)), hash_key("a"));
        assert_eq!(hash_key(&(5u8, "x")), hash_key(&(5i64, b"x")));
    }

    /// `hash_key_std` is exactly 0.1's hash of the same value.
    #[test]
    fn std_feed_is_what_0_1_hashed() {
        fn check<K: Key + Hash + ?Sized>(k: &K) {
            assert_eq!(k.hash_key_std(S), hash_std_with_seed(k, S));
        }
        check("apple");
        check(&b"apple"[..]);
        check(&b"apple".to_vec());
        check(b"apple");
        check(&-1i32);
        check(&42u16);
        check(&(1u8, "a", 3u64));
        check(&Box::<str>::from("x"));
        // Where 0.1 and today agree, and where they differ.
        assert_eq!("apple".hash_key_std(S), "apple".hash_key(S));
        assert_eq!(42u64.hash_key_std(S), 42u64.hash_key(S));
        assert_ne!(b"apple"[..].hash_key_std(S), b"apple"[..].hash_key(S));
        assert_ne!(42u32.hash_key_std(S), 42u32.hash_key(S));
        // A hasher of each feed picks the matching method.
        let old = KeyHasher::with_feed(S, KeyFeed::StdHash);
        assert_eq!(
            old.hash(&b"apple"[..]),
            hash_std_with_seed(&b"apple"[..], S)
        );
        assert_eq!(
            old.hash_bytes(b"apple"),
            KeyHasher::new(S).hash(&b"apple"[..])
        );
    }

    #[test]
    fn feed_codes_round_trip() {
        for feed in [KeyFeed::Key, KeyFeed::StdHash] {
            assert_eq!(KeyFeed::from_code(feed.code()), Some(feed));
        }
        assert_eq!(KeyFeed::from_code(0), None);
        assert_eq!(KeyFeed::from_code(3), None);
    }
}
