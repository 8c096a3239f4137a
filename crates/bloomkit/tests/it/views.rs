//! The borrowed views (`BlockedBloomFilterRef`, `BloomFilterRef`): over the bytes the owned
//! filters write, at any alignment, they answer exactly as the owned filter, with the file's
//! own key hasher, and refuse exactly what `from_bytes` refuses.

use crate::common;
use common::typed::TypedKey;
use common::{data_dir, reseal};

use bloomkit::{
    AtomicBloomFilter, BlockedBloomFilter, BlockedBloomFilterRef, BloomFilter, BloomFilterRef,
    Error, Filter, FilterExt, FilterKind, Result,
};
use proptest::prelude::*;

/// `bytes` copied `offset` bytes into a fresh buffer: the view then reads them at that
/// alignment (the buffer itself is at least 8-aligned).
fn at_offset(bytes: &[u8], offset: usize) -> Vec<u8> {
    let mut out = vec![0xa5; offset];
    out.extend_from_slice(bytes);
    out
}

/// Every classic and blocked fixture (both key feeds, bloomkit 0.1's included) opens as a
/// view, verified or not and at any alignment, answers every recorded key as recorded, and
/// hashes as the owned filter read from the file does.
#[test]
fn every_bit_array_fixture_opens_as_a_view_and_answers_as_recorded() {
    let mut seen = 0;
    for entry in std::fs::read_dir(data_dir()).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_str().unwrap().to_string();
        let classic = name.starts_with("classic");
        if path.extension().and_then(|e| e.to_str()) != Some("bkf")
            || !(classic || name.starts_with("blocked"))
        {
            continue;
        }
        let stored = std::fs::read(&path).unwrap();
        let answers = std::fs::read_to_string(path.with_extension("answers")).unwrap();
        for offset in [0usize, 1, 3, 7, 56] {
            let buffer = at_offset(&stored, offset);
            let bytes = &buffer[offset..];
            let views: Vec<Box<dyn Filter + '_>> = if classic {
                let owned = BloomFilter::from_bytes(bytes).unwrap();
                let view = BloomFilterRef::from_bytes(bytes).unwrap();
                let unverified = BloomFilterRef::from_bytes_unverified(bytes).unwrap();
                assert_eq!(view.to_filter().unwrap(), owned, "{name}");
                assert_eq!(view.key_hasher(), owned.key_hasher(), "{name}");
                assert_eq!(
                    (view.len(), view.num_bits()),
                    (owned.len(), owned.num_bits())
                );
                assert_eq!(view.count_ones(), owned.count_ones(), "{name}");
                assert_eq!(
                    view.estimated_fp_rate(),
                    owned.estimated_fp_rate(),
                    "{name}"
                );
                vec![Box::new(view), Box::new(unverified), Box::new(owned)]
            } else {
                let owned = BlockedBloomFilter::from_bytes(bytes).unwrap();
                let view = BlockedBloomFilterRef::from_bytes(bytes).unwrap();
                let unverified = BlockedBloomFilterRef::from_bytes_unverified(bytes).unwrap();
                assert_eq!(view.to_filter().unwrap(), owned, "{name}");
                assert_eq!(view.key_hasher(), owned.key_hasher(), "{name}");
                assert_eq!(
                    (view.len(), view.num_bits()),
                    (owned.len(), owned.num_bits())
                );
                assert_eq!(view.estimated_count(), owned.estimated_count(), "{name}");
                assert_eq!(
                    view.estimated_fp_rate(),
                    owned.estimated_fp_rate(),
                    "{name}"
                );
                vec![Box::new(view), Box::new(unverified), Box::new(owned)]
            };
            for line in answers.lines() {
                let mut cols = line.split('\t');
                let (key, answer) = (cols.next().unwrap(), cols.next().unwrap());
                let key = TypedKey::parse(key);
                for (i, f) in views.iter().enumerate() {
                    let yes = with_key!(&key, |v| f.contains(v));
                    assert_eq!(
                        yes,
                        answer == "maybe",
                        "{name} at {offset}, reader {i}: {line}"
                    );
                }
            }
        }
        seen += 1;
    }
    // classic, classic-seeded, classic-keys, classic-std, blocked, blocked-keys, blocked-std.
    assert!(seen >= 7, "only {seen} fixtures");
}

/// The batched queries of the blocked view give the single-key answers, for keys and hashes.
#[test]
fn batched_view_queries_are_the_single_ones() {
    let mut f = BlockedBloomFilter::builder(5000, 0.02)
        .seed(99)
        .build()
        .unwrap();
    f.extend(0..5000u32);
    let buffer = at_offset(&f.to_bytes(), 5);
    let view = BlockedBloomFilterRef::from_bytes(&buffer[5..]).unwrap();
    let keys: Vec<u32> = (0..20_000).collect();
    let (mut by_view, mut by_owned) = (Vec::new(), Vec::new());
    view.contains_many(&keys, &mut by_view);
    f.contains_many(&keys, &mut by_owned);
    assert_eq!(by_view, by_owned);
    assert!(by_view[..5000].iter().all(|&a| a));
    let hashes: Vec<u64> = keys.iter().map(|k| view.key_hasher().hash(k)).collect();
    let mut by_hash = vec![true]; // answers are appended
    view.contains_many_hashes(&hashes, &mut by_hash);
    assert_eq!(by_hash[1..], by_owned[..]);
}

/// A file of the other kinds is refused with the kind it holds; an atomic filter's file (a
/// blocked filter's) opens as a blocked view.
#[test]
fn views_refuse_other_kinds() {
    let classic = BloomFilter::new(100, 0.01).unwrap().to_bytes();
    let blocked = BlockedBloomFilter::new(100, 0.01).unwrap().to_bytes();
    let counting = bloomkit::CountingBloomFilter::new(100, 0.01)
        .unwrap()
        .to_bytes();
    let wrong = |r: Result<()>, expected: FilterKind, found: u16| match r {
        Err(Error::WrongKind {
            expected: e,
            found: f,
        }) => assert_eq!((e, f), (expected, found)),
        other => panic!("{other:?}"),
    };
    wrong(
        BlockedBloomFilterRef::from_bytes(&classic).map(drop),
        FilterKind::Blocked,
        1,
    );
    wrong(
        BloomFilterRef::from_bytes(&blocked).map(drop),
        FilterKind::Classic,
        2,
    );
    wrong(
        BloomFilterRef::from_bytes_unverified(&counting).map(drop),
        FilterKind::Classic,
        3,
    );
    let atomic = AtomicBloomFilter::new(100, 0.01).unwrap();
    atomic.insert("a");
    let bytes = atomic.to_bytes();
    assert!(BlockedBloomFilterRef::from_bytes(&bytes)
        .unwrap()
        .contains("a"));
}

/// For every prefix, every byte flip (with the checksum left or rewritten to match), and
/// trailing bytes, a view opens exactly when `from_bytes` does, and fails with the same
/// error; without its checksum check it fails exactly where `from_bytes` fails on the
/// resealed bytes (a field out of range), never where only the checksum would.
#[test]
fn views_refuse_exactly_what_from_bytes_refuses() {
    fn check<T>(
        name: &str,
        file: &[u8],
        owned: impl Fn(&[u8]) -> Result<T>,
        view: impl Fn(&[u8]) -> Result<()>,
        unverified: impl Fn(&[u8]) -> Result<()>,
    ) {
        let same = |bytes: &[u8], what: &str| {
            let (o, v) = (owned(bytes), view(bytes));
            assert_eq!(
                o.as_ref().err().map(|e| e.to_string()),
                v.as_ref().err().map(|e| e.to_string()),
                "{name}: {what}"
            );
        };
        for len in 0..file.len() {
            same(&file[..len], &format!("prefix of {len}"));
            assert!(unverified(&file[..len]).is_err(), "{name}: prefix of {len}");
        }
        let mut longer = file.to_vec();
        longer.push(0);
        same(&longer, "a trailing byte");
        assert!(matches!(
            unverified(&longer),
            Err(Error::TrailingBytes { extra: 1 })
        ));
        for pos in 0..file.len() {
            for flip in [0x01u8, 0x80, 0xff] {
                let mut bad = file.to_vec();
                bad[pos] ^= flip;
                same(&bad, &format!("flip {flip:#x} at {pos}"));
                reseal(&mut bad);
                same(&bad, &format!("resealed flip {flip:#x} at {pos}"));
                assert_eq!(
                    owned(&bad).is_ok(),
                    unverified(&bad).is_ok(),
                    "{name}: resealed flip {flip:#x} at {pos}"
                );
            }
        }
    }
    let mut blocked = BlockedBloomFilter::builder(10, 0.01)
        .num_bits(1024)
        .build()
        .unwrap();
    blocked.extend(["a", "b", "c"]);
    check(
        "blocked",
        &blocked.to_bytes(),
        BlockedBloomFilter::from_bytes,
        |b| BlockedBloomFilterRef::from_bytes(b).map(drop),
        |b| BlockedBloomFilterRef::from_bytes_unverified(b).map(drop),
    );
    let mut classic = BloomFilter::builder(10, 0.01)
        .num_bits(640)
        .build()
        .unwrap();
    classic.extend(["a", "b", "c"]);
    check(
        "classic",
        &classic.to_bytes(),
        BloomFilter::from_bytes,
        |b| BloomFilterRef::from_bytes(b).map(drop),
        |b| BloomFilterRef::from_bytes_unverified(b).map(drop),
    );
    // An unknown key feed is named, as the owned readers name it.
    let mut bytes = classic.to_bytes();
    bytes[12] = 9;
    reseal(&mut bytes);
    assert!(matches!(
        BloomFilterRef::from_bytes(&bytes),
        Err(Error::UnknownHashAlgorithm { found: 9 })
    ));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Random shapes, seeds, keys and alignments: the views answer every query, by key and
    /// by hash, as the owned filters do, and copy back into them.
    #[test]
    fn views_answer_as_the_owned_filters(
        lines in 1u64..40,
        num_hashes in 1u32..20,
        seed in any::<u64>(),
        keys in prop::collection::vec(any::<u64>(), 0..600),
        offset in 0usize..64,
    ) {
        let mut blocked = BlockedBloomFilter::builder(0, 0.01)
            .num_bits(lines * 512)
            .num_hashes(num_hashes)
            .seed(seed)
            .build()
            .unwrap();
        blocked.extend(&keys);
        let mut classic = BloomFilter::builder(0, 0.01)
            .num_bits(lines * 512 + 64)
            .num_hashes(num_hashes)
            .seed(seed)
            .build()
            .unwrap();
        classic.extend(&keys);
        let blocked_bytes = at_offset(&blocked.to_bytes(), offset);
        let classic_bytes = at_offset(&classic.to_bytes(), offset);
        let bv = BlockedBloomFilterRef::from_bytes(&blocked_bytes[offset..]).unwrap();
        let cv = BloomFilterRef::from_bytes(&classic_bytes[offset..]).unwrap();
        prop_assert_eq!(bv.to_filter().unwrap(), blocked.clone());
        prop_assert_eq!(cv.to_filter().unwrap(), classic.clone());
        for probe in keys.iter().copied().chain(0..500u64) {
            prop_assert_eq!(bv.contains(&probe), blocked.contains(&probe));
            prop_assert_eq!(cv.contains(&probe), classic.contains(&probe));
            let h = probe.wrapping_mul(0x9e37_79b9_7f4a_7c15);
            prop_assert_eq!(bv.contains_hash(h), blocked.contains_hash(h));
            prop_assert_eq!(cv.contains_hash(h), classic.contains_hash(h));
        }
        prop_assert!(keys.iter().all(|k| bv.contains(k) && cv.contains(k)));
    }
}
