//! One key model: the same bytes, or the same integer, are the same key whatever Rust type
//! carries them, in every filter kind and through every call; and filters read from files
//! that bloomkit 0.1 wrote (the `Hash` feed) answer every key exactly as they did.

use crate::common;

use std::borrow::Cow;
use std::rc::Rc;
use std::sync::Arc;

use bloomkit::{
    AgingBloomFilter, AnyFilter, AtomicBloomFilter, BlockedBloomFilter, BloomFilter,
    CountingBloomFilter, CuckooFilter, CuckooPlacement, FilterKind, KeyFeed, LayerLayout,
    RibbonFilter, RibbonLayout, ScalableBloomFilter,
};
use common::typed::{typed_key, TypedKey};
use common::{data_dir, reseal};
use proptest::prelude::*;

/// The reproduction of the bug report, on every kind that takes keys one at a time: a key
/// inserted as text is found as bytes of every kind of container, and an integer inserted as
/// a `u64` is found as any integer type of the same value (it used to answer "no" to all of
/// these but the `&str` and the `u64`).
macro_rules! reproduction {
    ($name:expr, $make:expr, |$f:ident, $k:ident| $insert:expr) => {{
        #[allow(unused_mut)]
        let mut $f = $make;
        {
            let $k = "alice";
            $insert;
        }
        {
            let $k = &42u64;
            $insert;
        }
        {
            let $k = &-7i8;
            $insert;
        }
        let name = $name;
        assert!($f.contains(b"alice".as_slice()), "{name}: &[u8]");
        assert!($f.contains(&b"alice".to_vec()), "{name}: Vec<u8>");
        assert!($f.contains(b"alice"), "{name}: [u8; 5]");
        assert!($f.contains(&String::from("alice")), "{name}: String");
        assert!($f.contains(&Box::<str>::from("alice")), "{name}: Box<str>");
        assert!($f.contains(&Cow::Borrowed("alice")), "{name}: Cow<str>");
        assert!(
            $f.contains(&Arc::<[u8]>::from(&b"alice"[..])),
            "{name}: Arc<[u8]>"
        );
        assert!($f.contains(&Rc::<str>::from("alice")), "{name}: Rc<str>");
        assert!($f.contains(&42), "{name}: i32 literal");
        assert!($f.contains(&42u8), "{name}: u8");
        assert!($f.contains(&42u32), "{name}: u32");
        assert!($f.contains(&42i64), "{name}: i64");
        assert!($f.contains(&42usize), "{name}: usize");
        assert!($f.contains(&42u128), "{name}: u128");
        assert!($f.contains(&-7i32), "{name}: -7 as i32");
        assert!($f.contains(&-7i64), "{name}: -7 as i64");
        assert!($f.contains(&-7i128), "{name}: -7 as i128");
        let mut answers = Vec::new();
        $f.contains_many(&[&b"alice"[..], b"alice".as_slice()], &mut answers);
        assert_eq!(answers, [true, true], "{name}: contains_many");
    }};
}

/// `contains_many` for the kinds that have no batched call: one key at a time.
trait ContainsMany {
    fn contains_many<K: bloomkit::Key>(&self, keys: &[K], answers: &mut Vec<bool>);
}

macro_rules! one_at_a_time {
    ($($ty:ty),*) => {$(
        impl ContainsMany for $ty {
            fn contains_many<K: bloomkit::Key>(&self, keys: &[K], answers: &mut Vec<bool>) {
                answers.extend(keys.iter().map(|k| self.contains(k)));
            }
        }
    )*};
}

one_at_a_time!(
    BloomFilter,
    CountingBloomFilter,
    ScalableBloomFilter,
    CuckooFilter,
    AgingBloomFilter,
    RibbonFilter,
    AnyFilter
);

#[test]
fn a_key_is_its_bytes_or_its_value_in_every_kind() {
    reproduction!("classic", BloomFilter::new(1000, 0.01).unwrap(), |f, k| f
        .insert(k));
    reproduction!(
        "blocked",
        BlockedBloomFilter::new(1000, 0.01).unwrap(),
        |f, k| f.insert(k)
    );
    reproduction!(
        "atomic",
        AtomicBloomFilter::new(1000, 0.01).unwrap(),
        |f, k| f.insert(k)
    );
    reproduction!(
        "counting",
        CountingBloomFilter::new(1000, 0.01).unwrap(),
        |f, k| f.insert(k)
    );
    reproduction!(
        "scalable",
        ScalableBloomFilter::new(1000, 0.01).unwrap(),
        |f, k| f.insert(k).unwrap()
    );
    reproduction!(
        "scalable, classic layers",
        ScalableBloomFilter::builder(1000, 0.01)
            .layout(LayerLayout::Classic)
            .build()
            .unwrap(),
        |f, k| f.insert(k).unwrap()
    );
    reproduction!("cuckoo", CuckooFilter::new(1000, 0.01).unwrap(), |f, k| f
        .insert(k)
        .unwrap());
    reproduction!(
        "aging",
        AgingBloomFilter::new(1000, 0.01).unwrap(),
        |f, k| f.insert(k)
    );
    reproduction!(
        "any (blocked)",
        AnyFilter::new(FilterKind::Blocked, 1000, 0.01).unwrap(),
        |f, k| f.insert(k).unwrap()
    );
    let hashes = [
        bloomkit::hash("alice"),
        bloomkit::hash(&42u64),
        bloomkit::hash(&-7i8),
    ];
    reproduction!(
        "ribbon",
        RibbonFilter::build_from_hashes(&hashes, 0.01).unwrap(),
        |f, k| {
            let _ = k;
            f.len()
        }
    );
    // A ribbon filter built from keys of mixed carriers.
    let r = RibbonFilter::build([&b"alice"[..], &b"bob"[..]], 0.01).unwrap();
    assert!(r.contains("alice") && r.contains(&String::from("bob")));
}

/// Removal and counting take any carrier too: a key added as text is removed as bytes.
#[test]
fn remove_and_count_take_any_carrier() {
    let mut c = CountingBloomFilter::new(1000, 0.01).unwrap();
    c.insert("alice");
    c.insert(&5u64);
    assert!(c.remove(b"alice".as_slice()));
    assert!(!c.contains("alice"));
    assert!(c.remove(&5i16));
    assert!(!c.contains(&5u64));

    let mut k = CuckooFilter::new(1000, 0.01).unwrap();
    k.insert("alice").unwrap();
    k.insert(&b"alice".to_vec()).unwrap();
    k.insert(&9u8).unwrap();
    assert_eq!(k.count(b"alice"), 2);
    assert_eq!(k.count(&9i64), 1);
    assert!(k.remove(&Cow::Borrowed(&b"alice"[..])));
    assert_eq!(k.count("alice"), 1);
    assert!(k.remove(&9u128));
    assert!(!k.contains(&9u32));
}

/// The hash functions agree with the filters and with each other.
#[test]
fn hash_functions_follow_the_key_model() {
    assert_eq!(bloomkit::hash("alice"), bloomkit::hash_bytes(b"alice"));
    assert_eq!(
        bloomkit::hash(&b"alice"[..]),
        bloomkit::hash_bytes(b"alice")
    );
    assert_eq!(bloomkit::hash(&42u8), bloomkit::hash(&42i64));
    let f = BlockedBloomFilter::builder(10, 0.01)
        .seed(99)
        .build()
        .unwrap();
    assert_eq!(
        f.key_hasher().hash("x"),
        bloomkit::hash_bytes_with_seed(b"x", 99)
    );
    assert_eq!(
        f.key_hasher().hash(&3u16),
        bloomkit::hash_with_seed(&3u64, 99)
    );
}

/// One way of asking a filter about a key.
type Ask<'a> = Box<dyn Fn(&AnyFilter) -> bool + 'a>;

/// Every kind, built of the same keys given through random carriers, gives the same answer
/// for a key whatever carrier asks: for the keys it holds (always "maybe") and for others.
fn carriers(bytes: &[u8]) -> Vec<Ask<'_>> {
    vec![
        Box::new(move |f| f.contains(bytes)),
        Box::new(move |f| f.contains(&bytes.to_vec())),
        Box::new(move |f| f.contains(&Box::<[u8]>::from(bytes))),
        Box::new(move |f| f.contains(&Cow::Borrowed(bytes))),
        Box::new(move |f| f.contains(&Arc::<[u8]>::from(bytes))),
        Box::new(move |f| match std::str::from_utf8(bytes) {
            Ok(text) => f.contains(text) && f.contains(&text.to_string()),
            // Not text: only the byte carriers can hold it; answer as they do.
            Err(_) => f.contains(bytes),
        }),
    ]
}

fn int_carriers(v: i64) -> Vec<Ask<'static>> {
    let mut out: Vec<Ask<'static>> = vec![
        Box::new(move |f| f.contains(&v)),
        Box::new(move |f| f.contains(&(v as i128))),
        Box::new(move |f| f.contains(&(v as isize))),
    ];
    if v >= 0 {
        out.push(Box::new(move |f| f.contains(&(v as u64))));
        out.push(Box::new(move |f| f.contains(&(v as u128))));
        out.push(Box::new(move |f| f.contains(&(v as usize))));
    }
    if let Ok(x) = i32::try_from(v) {
        out.push(Box::new(move |f| f.contains(&x)));
    }
    if let Ok(x) = u32::try_from(v) {
        out.push(Box::new(move |f| f.contains(&x)));
    }
    if let Ok(x) = i8::try_from(v) {
        out.push(Box::new(move |f| f.contains(&x)));
    }
    if let Ok(x) = u16::try_from(v) {
        out.push(Box::new(move |f| f.contains(&x)));
    }
    out
}

fn every_kind(n: u64, bytes: &[Vec<u8>], ints: &[i64]) -> Vec<AnyFilter> {
    let mut out = Vec::new();
    for kind in [
        FilterKind::Classic,
        FilterKind::Blocked,
        FilterKind::Counting,
        FilterKind::Scalable,
        FilterKind::Cuckoo,
        FilterKind::Aging,
    ] {
        let mut f = AnyFilter::new(kind, n, 0.01).unwrap();
        // Insert through alternating carriers.
        for (i, b) in bytes.iter().enumerate() {
            match i % 3 {
                0 => f.insert(&b[..]).unwrap(),
                1 => f.insert(b).unwrap(),
                _ => f.insert(&Cow::Borrowed(&b[..])).unwrap(),
            };
        }
        for (i, &v) in ints.iter().enumerate() {
            match (i % 3, i32::try_from(v)) {
                (0, _) => f.insert(&v).unwrap(),
                (1, Ok(x)) => f.insert(&x).unwrap(),
                _ => f.insert(&(v as i128)).unwrap(),
            };
        }
        out.push(f);
    }
    let mut hashes: Vec<u64> = bytes.iter().map(|b| bloomkit::hash(&b[..])).collect();
    hashes.extend(ints.iter().map(bloomkit::hash));
    out.push(AnyFilter::Ribbon(
        RibbonFilter::build_from_hashes(&hashes, 0.01).unwrap(),
    ));
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn every_carrier_gives_the_same_answer_in_every_kind(
        bytes in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..40), 0..60),
        text in prop::collection::vec("[a-z]{0,12}", 0..30),
        ints in prop::collection::vec(any::<i64>(), 0..60),
        small in prop::collection::vec(-300i64..300, 0..30),
        probes in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..12), 0..40),
        int_probes in prop::collection::vec(-1000i64..1000, 0..40),
    ) {
        // Distinct keys: a cuckoo filter stores each copy, and holds only so many of one.
        let mut all_bytes = bytes.clone();
        all_bytes.extend(text.iter().map(|t| t.as_bytes().to_vec()));
        all_bytes.sort();
        all_bytes.dedup();
        let mut all_ints = ints.clone();
        all_ints.extend(&small);
        all_ints.sort_unstable();
        all_ints.dedup();
        let n = (all_bytes.len() + all_ints.len()) as u64;
        for f in every_kind(n, &all_bytes, &all_ints) {
            for b in all_bytes.iter().chain(&probes) {
                let answers: Vec<bool> = carriers(b).iter().map(|c| c(&f)).collect();
                prop_assert!(answers.iter().all(|&a| a == answers[0]), "{:?}: {b:?} {answers:?}", f.kind());
                if all_bytes.contains(b) {
                    prop_assert!(answers[0], "{:?}: false negative for {b:?}", f.kind());
                }
            }
            for &v in all_ints.iter().chain(&int_probes) {
                let answers: Vec<bool> = int_carriers(v).iter().map(|c| c(&f)).collect();
                prop_assert!(answers.iter().all(|&a| a == answers[0]), "{:?}: {v} {answers:?}", f.kind());
                if all_ints.contains(&v) {
                    prop_assert!(answers[0], "{:?}: false negative for {v}", f.kind());
                }
            }
        }
    }
}

/// The `*-std-v1` fixtures were written by bloomkit 0.1 (the commit before the key model),
/// with keys given as `&[u8]`, `i32`, `(u32, &str)`, `u128`, `[u8; 4]` and `&str`: types
/// whose 0.1 feed differs from today's, but for text. Each loads as a filter of the `Hash`
/// feed and answers every one of its 3,000 keys, given as the same Rust type, as 0.1 did.
#[test]
fn filters_from_0_1_files_answer_as_0_1_did() {
    let fixtures = [
        ("classic-std-v1", FilterKind::Classic),
        ("blocked-std-v1", FilterKind::Blocked),
        ("counting-std-v1", FilterKind::Counting),
        ("scalable-std-v1", FilterKind::Scalable),
        ("scalable-classic-std-v1", FilterKind::Scalable),
        ("cuckoo-std-v1", FilterKind::Cuckoo),
        ("ribbon-std-v1", FilterKind::Ribbon),
        ("aging-std-v1", FilterKind::Aging),
    ];
    for (name, kind) in fixtures {
        let bytes = std::fs::read(data_dir().join(format!("{name}.bkf"))).unwrap();
        let answers = std::fs::read_to_string(data_dir().join(format!("{name}.answers"))).unwrap();
        let f = AnyFilter::from_bytes(&bytes).unwrap();
        assert_eq!(f.kind(), kind, "{name}");
        assert_eq!(f.key_hasher().feed(), KeyFeed::StdHash, "{name}");
        assert_eq!(bytes[12..14], [1, 0], "{name}: hash algorithm 1");
        let mut differs_from_today = 0;
        for (i, line) in answers.lines().enumerate() {
            let mut cols = line.split('\t');
            let (descriptor, answer) = (cols.next().unwrap(), cols.next().unwrap());
            let key = typed_key(i as u64);
            assert_eq!(key.describe(), descriptor, "{name}: line {i}");
            assert_eq!(TypedKey::parse(descriptor), key, "{name}: line {i}");
            let now = with_key!(&key, |v| f.contains(v));
            assert_eq!(now, answer == "maybe", "{name}: {line}");
            if let (AnyFilter::Cuckoo(c), Some(count)) = (&f, cols.next()) {
                let now = with_key!(&key, |v| c.count(v));
                assert_eq!(now.to_string(), count, "{name}: {line}");
            }
            // Today's feed would ask other bits for most non-text keys.
            let today = with_key!(&key, |v| f.contains_hash(bloomkit::hash(v)));
            differs_from_today += usize::from(today != now);
        }
        assert!(differs_from_today > 300, "{name}: {differs_from_today}");
        // It writes back as it was, still a 0.1 file.
        assert!(f.to_bytes() == bytes, "{name}: re-serialization differs");
    }
}

/// A filter from a 0.1 file keeps its feed as it changes: new keys go in as 0.1 hashed them,
/// it is saved as a 0.1 file, and it refuses to merge with a filter of today's feed.
#[test]
fn a_0_1_filter_keeps_its_feed() {
    let bytes = std::fs::read(data_dir().join("blocked-std-v1.bkf")).unwrap();
    let mut old = BlockedBloomFilter::from_bytes(&bytes).unwrap();
    old.insert(&b"new key"[..]);
    old.insert(&-99i32);
    assert!(old.contains_hash(bloomkit::hash_std(&b"new key"[..])));
    assert!(old.contains_hash(bloomkit::hash_std(&-99i32)));
    let saved = old.to_bytes();
    assert_eq!(saved[12..14], [1, 0]);
    let reloaded = BlockedBloomFilter::from_bytes(&saved).unwrap();
    assert!(reloaded.contains(&b"new key"[..]) && reloaded.contains(&-99i32));

    // The file's shape and probe derivation; only the feed differs.
    let mut today = BlockedBloomFilter::builder(0, 0.01)
        .num_bits(10240)
        .num_hashes(6)
        .probes(old.probes())
        .build()
        .unwrap();
    let err = today.union(&old).unwrap_err().to_string();
    assert!(err.contains("key feed"), "{err}");
    // Text and `hash_bytes` hash alike under both feeds, so a 0.1 file of text keys (every
    // file the CLI and the server wrote) answers them through either.
    assert_eq!(
        old.key_hasher().hash("golden:5"),
        today.key_hasher().hash("golden:5")
    );
}

/// A header naming a hash algorithm this build does not know is refused, not misread.
#[test]
fn an_unknown_hash_algorithm_is_refused() {
    let mut bytes = BlockedBloomFilter::new(10, 0.01).unwrap().to_bytes();
    assert_eq!(bytes[12..14], [2, 0], "today's files are hash algorithm 2");
    for code in [0u16, 3, 0xffff] {
        bytes[12..14].copy_from_slice(&code.to_le_bytes());
        reseal(&mut bytes);
        let err = BlockedBloomFilter::from_bytes(&bytes).unwrap_err();
        assert!(
            matches!(err, bloomkit::Error::UnknownHashAlgorithm { found } if found == code),
            "{err}"
        );
    }
}

/// The `*-keys-v1` fixtures pin today's feed of every key type, in every kind: written once
/// (`BLOOMKIT_WRITE_GOLDEN=1`), loaded, answered as recorded, and rebuilt byte for byte.
#[test]
fn golden_files_pin_the_key_feed() {
    let write = std::env::var_os("BLOOMKIT_WRITE_GOLDEN").is_some();
    type Recipe = (&'static str, fn() -> AnyFilter);
    let recipes: Vec<Recipe> = vec![
        ("classic-keys-v1", || {
            let mut f = BloomFilter::builder(0, 0.01)
                .num_bits(9600)
                .num_hashes(7)
                .probes(bloomkit::ClassicProbes::DoubleHashing)
                .build()
                .unwrap();
            for i in 0..1000 {
                with_key!(&typed_key(i), |v| f.insert(v));
            }
            f.into()
        }),
        ("blocked-keys-v1", || {
            let mut f = BlockedBloomFilter::builder(0, 0.01)
                .num_bits(10240)
                .num_hashes(6)
                .probes(bloomkit::BlockedProbes::OneSeed)
                .build()
                .unwrap();
            for i in 0..1000 {
                with_key!(&typed_key(i), |v| f.insert(v));
            }
            f.into()
        }),
        ("counting-keys-v1", || {
            let mut f = CountingBloomFilter::builder(1000, 0.01)
                .probes(bloomkit::ClassicProbes::DoubleHashing)
                .build()
                .unwrap();
            for i in 0..1100 {
                with_key!(&typed_key(i), |v| f.insert(v));
            }
            for i in 1000..1100 {
                assert!(with_key!(&typed_key(i), |v| f.remove(v)));
            }
            f.into()
        }),
        ("scalable-keys-v1", || {
            let mut f = ScalableBloomFilter::builder(100, 0.01)
                .blocked_probes(bloomkit::BlockedProbes::OneSeed)
                .build()
                .unwrap();
            for i in 0..1000 {
                with_key!(&typed_key(i), |v| f.insert(v).unwrap());
            }
            f.into()
        }),
        ("cuckoo-keys-v1", || {
            // Written before the distinct placement: the original one rebuilds it.
            let mut f = CuckooFilter::builder(600, 0.01)
                .expansion(2)
                .placement(CuckooPlacement::Original)
                .build()
                .unwrap();
            for i in (0..1000).chain(0..50) {
                with_key!(&typed_key(i), |v| f.insert(v).unwrap());
            }
            for i in 0..25 {
                assert!(with_key!(&typed_key(i), |v| f.remove(v)));
            }
            f.into()
        }),
        // Layout 1, which every ribbon build made when the file was written.
        ("ribbon-keys-v1", || {
            let hashes: Vec<u64> = (0..1000)
                .map(|i| with_key!(&typed_key(i), |v| bloomkit::hash(v)))
                .collect();
            RibbonFilter::builder(0.01)
                .layout(RibbonLayout::Standard)
                .build_from_hashes(&hashes)
                .unwrap()
                .into()
        }),
        ("aging-keys-v1", || {
            let mut f = AgingBloomFilter::builder(400, 0.01)
                .generations(3)
                .probes(bloomkit::BlockedProbes::OneSeed)
                .build()
                .unwrap();
            for (from, to) in [(0, 400), (400, 700), (700, 1000)] {
                if from > 0 {
                    f.rotate();
                }
                for i in from..to {
                    with_key!(&typed_key(i), |v| f.insert(v));
                }
            }
            f.into()
        }),
    ];
    for (name, build) in recipes {
        let bin = data_dir().join(format!("{name}.bkf"));
        let answers_path = data_dir().join(format!("{name}.answers"));
        if write && !bin.exists() {
            let f = build();
            std::fs::write(&bin, f.to_bytes()).unwrap();
            std::fs::write(&answers_path, typed_answers(&f)).unwrap();
        }
        let stored = std::fs::read(&bin).unwrap_or_else(|e| panic!("{}: {e}", bin.display()));
        let answers = std::fs::read_to_string(&answers_path).unwrap();
        let f = AnyFilter::from_bytes(&stored).unwrap();
        assert_eq!(f.key_hasher().feed(), KeyFeed::Key, "{name}");
        assert_eq!(typed_answers(&f), answers, "{name}: answers changed");
        assert!(
            answers.lines().take(1000).all(|l| l.contains("\tmaybe")),
            "{name}"
        );
        assert!(f.to_bytes() == stored, "{name}: re-serialization differs");
        assert!(
            build().to_bytes() == stored,
            "{name}: a fresh build differs"
        );
    }
}

fn typed_answers(f: &AnyFilter) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    for i in 0..3000 {
        let key = typed_key(i);
        let yes = with_key!(&key, |v| f.contains(v));
        let answer = if yes { "maybe" } else { "no" };
        write!(out, "{}\t{answer}", key.describe()).unwrap();
        // A cuckoo filter's answers also record each key's count.
        if let AnyFilter::Cuckoo(c) = f {
            write!(out, "\t{}", with_key!(&key, |v| c.count(v))).unwrap();
        }
        out.push('\n');
    }
    out
}

/// With the `bytes` feature, a network buffer is a key as its bytes.
#[cfg(feature = "bytes")]
#[test]
fn bytes_buffers_are_keys() {
    let mut f = BlockedBloomFilter::new(100, 0.01).unwrap();
    f.insert(&bytes::Bytes::from_static(b"alice"));
    assert!(f.contains("alice"));
    assert!(f.contains(&bytes::BytesMut::from(&b"alice"[..])));
}
