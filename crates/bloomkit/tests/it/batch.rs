//! The batched operations against the one-key ones: on random keys, present and absent,
//! `contains_many` gives `contains`'s answers in order and `insert_many` leaves the filter
//! (and answers, and stops at the error) that inserting one key at a time does, for every
//! kind that has them.

use bloomkit::{
    BinaryFuseFilter, CountingBloomFilter, CuckooFilter, LayerLayout, Result, RibbonFilter,
    RibbonLayout, ScalableBloomFilter,
};
use proptest::prelude::*;

/// Keys to insert: drawn from a small range, so batches repeat keys.
fn inserted() -> impl Strategy<Value = Vec<u64>> {
    prop::collection::vec(0u64..3000, 0..700)
}

/// Keys to ask for: half of them never inserted.
fn asked() -> impl Strategy<Value = Vec<u64>> {
    prop::collection::vec(0u64..6000, 0..700)
}

/// The one-key loop a batched insert must match: answers until the first error.
fn one_by_one(
    keys: &[u64],
    mut insert: impl FnMut(&u64) -> Result<bool>,
) -> (Vec<bool>, Option<String>) {
    let mut answers = Vec::new();
    for k in keys {
        match insert(k) {
            Ok(a) => answers.push(a),
            Err(e) => return (answers, Some(format!("{e:?}"))),
        }
    }
    (answers, None)
}

fn error_of(result: Result<()>) -> Option<String> {
    result.err().map(|e| format!("{e:?}"))
}

fn layout() -> impl Strategy<Value = LayerLayout> {
    prop::sample::select(vec![LayerLayout::Blocked, LayerLayout::Classic])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Small first layers, so that batches grow the chain (across several layers), and
    /// non-scaling chains, so that batches end at `Full`.
    #[test]
    fn scalable_batches_answer_as_one_key_calls(
        capacity in 1u64..200,
        expansion in 1u32..4,
        non_scaling in any::<bool>(),
        layout in layout(),
        keys in inserted(),
        queries in asked(),
        seed in any::<u64>(),
    ) {
        let builder = ScalableBloomFilter::builder(capacity, 0.01)
            .expansion(expansion)
            .non_scaling(non_scaling)
            .layout(layout)
            .seed(seed);
        let mut one = builder.build().unwrap();
        let mut many = builder.build().unwrap();
        let (want, want_error) = one_by_one(&keys, |k| one.insert(k));
        let mut added = vec![true]; // answers are appended
        let error = error_of(many.insert_many(&keys, &mut added));
        prop_assert_eq!(&added[1..], &want[..]);
        prop_assert_eq!(error, want_error);
        prop_assert!(one == many);

        let mut answers = vec![false];
        many.contains_many(&queries, &mut answers);
        let want: Vec<bool> = queries.iter().map(|k| one.contains(k)).collect();
        prop_assert_eq!(&answers[1..], &want[..]);
    }

    /// A memory limit refusing growth after a few layers ends a batch where the one-key
    /// calls meet it too.
    #[test]
    fn scalable_batches_stop_where_growth_is_refused(
        layers_allowed in 0usize..4,
        keys in inserted(),
    ) {
        let mut one = ScalableBloomFilter::new(16, 0.01).unwrap();
        let mut many = one.clone();
        let (mut grown_one, mut grown_many) = (0, 0);
        let (want, want_error) = one_by_one(&keys, |k| {
            let h = one.key_hasher().hash(k);
            one.insert_hash_within(h, |_| { grown_one += 1; grown_one <= layers_allowed })
        });
        let hashes: Vec<u64> = keys.iter().map(|k| many.key_hasher().hash(k)).collect();
        let mut added = Vec::new();
        let result = many.insert_many_hashes_within(
            &hashes,
            |_| { grown_many += 1; grown_many <= layers_allowed },
            &mut added,
        );
        prop_assert_eq!(added, want);
        prop_assert_eq!(error_of(result), want_error);
        prop_assert!(one == many);
    }

    #[test]
    fn counting_batches_answer_as_one_key_calls(
        capacity in 1u64..3000,
        keys in inserted(),
        queries in asked(),
    ) {
        let mut one = CountingBloomFilter::new(capacity, 0.01).unwrap();
        let mut many = one.clone();
        let want: u64 = keys.iter().map(|k| one.insert(k) as u64).sum();
        prop_assert_eq!(many.insert_many(&keys), want);
        prop_assert_eq!(&one, &many);

        let mut answers = Vec::new();
        many.contains_many(&queries, &mut answers);
        let want: Vec<bool> = queries.iter().map(|k| one.contains(k)).collect();
        prop_assert_eq!(answers, want);
    }

    /// Fixed-size filters (batches end at `Full`) and growing ones (batches add
    /// sub-filters), both with `insert_many` and `insert_unique_many`.
    #[test]
    fn cuckoo_batches_answer_as_one_key_calls(
        capacity in 1u64..600,
        expansion in 0u32..3,
        unique in any::<bool>(),
        keys in inserted(),
        queries in asked(),
    ) {
        let builder = CuckooFilter::builder(capacity, 0.01).expansion(expansion).max_filters(4);
        let mut one = builder.build().unwrap();
        let mut many = builder.build().unwrap();
        let mut answers = Vec::new();
        let (want, want_error, error) = if unique {
            let (want, e) = one_by_one(&keys, |k| one.insert_unique(k));
            (want, e, error_of(many.insert_unique_many(&keys, &mut answers)))
        } else {
            let (want, e) = one_by_one(&keys, |k| one.insert(k).map(|()| true));
            (want, e, error_of(many.insert_many(&keys, &mut answers)))
        };
        prop_assert_eq!(answers, want);
        prop_assert_eq!(error, want_error);
        prop_assert_eq!(&one, &many);

        let mut answers = Vec::new();
        many.contains_many(&queries, &mut answers);
        let want: Vec<bool> = queries.iter().map(|k| one.contains(k)).collect();
        prop_assert_eq!(answers, want);
    }

    #[test]
    fn ribbon_batches_answer_as_one_key_calls(
        keys in inserted(),
        queries in asked(),
        rate in prop::sample::select(vec![0.5, 0.01, 1e-4]),
        layout in prop::sample::select(vec![RibbonLayout::Homogeneous, RibbonLayout::Standard]),
    ) {
        let f = RibbonFilter::builder(rate).layout(layout).build(&keys).unwrap();
        let mut answers = Vec::new();
        f.contains_many(&queries, &mut answers);
        let want: Vec<bool> = queries.iter().map(|k| f.contains(k)).collect();
        prop_assert_eq!(answers, want);
        let mut present = Vec::new();
        f.contains_many(&keys, &mut present);
        prop_assert!(present.iter().all(|&p| p));
    }

    #[test]
    fn fuse_batches_answer_as_one_key_calls(
        keys in inserted(),
        queries in asked(),
        bits in prop::sample::select(vec![8u32, 16]),
    ) {
        let f = BinaryFuseFilter::builder(0.01).fingerprint_bits(bits).build(&keys).unwrap();
        let mut answers = Vec::new();
        f.contains_many(&queries, &mut answers);
        let want: Vec<bool> = queries.iter().map(|k| f.contains(k)).collect();
        prop_assert_eq!(answers, want);
        let mut present = Vec::new();
        f.contains_many(&keys, &mut present);
        prop_assert!(present.iter().all(|&p| p));
    }
}

/// String keys take the same path as integers: the batch hashes them with the filter's
/// hasher, as `contains` does.
#[test]
fn string_keys_batch_as_they_query() {
    let keys: Vec<String> = (0..5000).map(|i| format!("key-{i}")).collect();
    let asked: Vec<String> = (2500..7500).map(|i| format!("key-{i}")).collect();
    let mut scalable = ScalableBloomFilter::new(500, 0.01).unwrap();
    let mut added = Vec::new();
    scalable.insert_many(&keys, &mut added).unwrap();
    assert!(scalable.num_layers() > 2);
    let ribbon = RibbonFilter::build(&keys, 0.01).unwrap();
    let fuse = BinaryFuseFilter::build(&keys, 0.01).unwrap();
    let mut answers = Vec::new();
    scalable.contains_many(&asked, &mut answers);
    ribbon.contains_many(&asked, &mut answers);
    fuse.contains_many(&asked, &mut answers);
    let want: Vec<bool> = [
        asked
            .iter()
            .map(|k| scalable.contains(k))
            .collect::<Vec<_>>(),
        asked.iter().map(|k| ribbon.contains(k)).collect(),
        asked.iter().map(|k| fuse.contains(k)).collect(),
    ]
    .concat();
    assert_eq!(answers, want);
    // The present half is all there; the absent half mostly not.
    let absent = answers[2500..5000].iter().filter(|&&a| a).count();
    assert!(
        answers[..2500].iter().all(|&a| a) && absent < 100,
        "{absent}"
    );
}

/// Filters of 1 MiB and more prefetch (smaller ones are in cache, and their batches are the
/// one-key loop): the same answers and the same filter on that path too.
#[test]
fn large_filters_prefetch_and_answer_alike() {
    const PREFETCHING: usize = 1 << 20; // the library's threshold
    let n = 400_000u64;
    let keys: Vec<u64> = (0..n).collect();
    let asked: Vec<u64> = (n / 2..n / 2 + 200_000).collect();
    let check = |name: &str, bytes: usize, many: Vec<bool>, one: Vec<bool>| {
        assert!(bytes >= PREFETCHING, "{name}: {bytes} bytes");
        assert_eq!(many, one, "{name}");
    };

    // Scalable: grown to several layers, the batch crossing layer boundaries.
    let mut one = ScalableBloomFilter::new(n / 8, 0.01).unwrap();
    let mut many = one.clone();
    let want: Vec<bool> = keys.iter().map(|k| one.insert(k).unwrap()).collect();
    let mut added = Vec::new();
    many.insert_many(&keys, &mut added).unwrap();
    assert!(one == many && added == want && many.num_layers() >= 3);
    let mut got = Vec::new();
    many.contains_many(&asked, &mut got);
    let want = asked.iter().map(|k| one.contains(k)).collect();
    check("scalable", many.memory_bytes(), got, want);

    let mut one = CountingBloomFilter::new(n, 0.01).unwrap();
    let mut many = one.clone();
    let want: u64 = keys.iter().map(|k| one.insert(k) as u64).sum();
    assert_eq!(many.insert_many(&keys), want);
    assert_eq!(one, many);
    let mut got = Vec::new();
    many.contains_many(&asked, &mut got);
    let want = asked.iter().map(|k| one.contains(k)).collect();
    check("counting", many.memory_bytes(), got, want);

    // Cuckoo: a fixed size the keys overfill, so the batch ends at `Full`.
    let mut one = CuckooFilter::builder(n * 2, 0.01).build().unwrap();
    let mut many = one.clone();
    let big: Vec<u64> = (0..3 * n).collect();
    let (want, want_error) = one_by_one(&big, |k| one.insert(k).map(|()| true));
    let mut stored = Vec::new();
    let error = error_of(many.insert_many(&big, &mut stored));
    assert!(want_error.is_some() && error == want_error && stored == want);
    assert_eq!(one, many);
    let mut got = Vec::new();
    many.contains_many(&asked, &mut got);
    let want = asked.iter().map(|k| one.contains(k)).collect();
    check("cuckoo", many.memory_bytes(), got, want);

    let keys: Vec<u64> = (0..3 * n).collect();
    for layout in [RibbonLayout::Standard, RibbonLayout::Homogeneous] {
        let ribbon = RibbonFilter::builder(0.01)
            .layout(layout)
            .build(&keys)
            .unwrap();
        let mut got = Vec::new();
        ribbon.contains_many(&asked, &mut got);
        let want = asked.iter().map(|k| ribbon.contains(k)).collect();
        check(
            &format!("ribbon {layout:?}"),
            ribbon.memory_bytes(),
            got,
            want,
        );
    }
    let fuse = BinaryFuseFilter::build(&keys, 0.01).unwrap();
    let mut got = Vec::new();
    fuse.contains_many(&asked, &mut got);
    let want = asked.iter().map(|k| fuse.contains(k)).collect();
    check("fuse", fuse.memory_bytes(), got, want);
}
