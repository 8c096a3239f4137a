//! Property tests against a `HashSet` oracle: whatever the keys, a filter never forgets one,
//! through union, intersection, serialization and conversion.

use std::collections::HashSet;

use bloomkit::{AnyFilter, AtomicBloomFilter, BlockedBloomFilter, BloomFilter};
use proptest::prelude::*;

/// Keys of mixed shapes: short, long (past the hasher's inline buffer), empty, non-ASCII.
fn keys() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(".{0,200}", 0..300)
}

/// Planned capacities from tiny (so filters saturate) to comfortable, and rates across the
/// useful range.
fn plan() -> impl Strategy<Value = (u64, f64)> {
    (
        0u64..2000,
        prop::sample::select(vec![0.5, 0.1, 0.01, 0.001, 1e-6]),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn classic_has_no_false_negatives((n, p) in plan(), keys in keys()) {
        let mut f = BloomFilter::new(n, p).unwrap();
        let oracle: HashSet<&String> = keys.iter().collect();
        for k in &keys {
            f.insert(k);
        }
        for k in &oracle {
            prop_assert!(f.contains(*k));
            prop_assert!(f.contains(k.as_str()));
            prop_assert!(f.contains_hash(bloomkit::hash_bytes(k.as_bytes())));
        }
        let g = BloomFilter::from_bytes(&f.to_bytes()).unwrap();
        prop_assert_eq!(&g, &f);
        prop_assert_eq!(g.len(), f.len());
        for k in &oracle {
            prop_assert!(g.contains(*k));
        }
    }

    #[test]
    fn blocked_has_no_false_negatives((n, p) in plan(), keys in keys()) {
        let mut f = BlockedBloomFilter::new(n, p).unwrap();
        for k in &keys {
            f.insert(k);
        }
        let mut streamed = Vec::new();
        f.write_to(&mut streamed).unwrap();
        let g = BlockedBloomFilter::read_from(&streamed[..]).unwrap();
        prop_assert_eq!(&g, &f);
        for k in &keys {
            prop_assert!(f.contains(k));
            prop_assert!(g.contains(k));
        }
    }

    #[test]
    fn atomic_has_no_false_negatives_and_matches_blocked((n, p) in plan(), keys in keys()) {
        let atomic = AtomicBloomFilter::new(n, p).unwrap();
        let mut blocked = BlockedBloomFilter::new(n, p).unwrap();
        for k in &keys {
            prop_assert_eq!(atomic.insert(k), blocked.insert(k));
        }
        for k in &keys {
            prop_assert!(atomic.contains(k));
        }
        prop_assert_eq!(atomic.to_blocked().unwrap(), blocked.clone());
        let back = AtomicBloomFilter::from_bytes(&blocked.to_bytes()).unwrap();
        prop_assert_eq!(&back, &atomic);
    }

    #[test]
    fn union_holds_both_and_intersection_holds_the_common(
        a_keys in keys(), b_keys in keys(), blocked in any::<bool>(),
    ) {
        let make = || -> AnyFilter {
            if blocked {
                BlockedBloomFilter::new(500, 0.01).unwrap().into()
            } else {
                BloomFilter::new(500, 0.01).unwrap().into()
            }
        };
        let (mut a, mut b) = (make(), make());
        for k in &a_keys { a.insert(k).unwrap(); }
        for k in &b_keys { b.insert(k).unwrap(); }
        let a_set: HashSet<&String> = a_keys.iter().collect();
        let b_set: HashSet<&String> = b_keys.iter().collect();

        let mut union = a.clone();
        union.union(&b).unwrap();
        for k in a_set.union(&b_set) {
            prop_assert!(union.contains(*k));
        }
        let mut inter = a.clone();
        inter.intersect(&b).unwrap();
        for k in a_set.intersection(&b_set) {
            prop_assert!(inter.contains(*k));
        }
        // Set laws on the bits: union is commutative, intersection is within both.
        let mut union2 = b.clone();
        union2.union(&a).unwrap();
        prop_assert_eq!(&union2, &union);
        let ones = |f: &AnyFilter| match f {
            AnyFilter::Classic(f) => f.count_ones(),
            AnyFilter::Blocked(f) => f.count_ones(),
            other => unreachable!("a {} filter in a Bloom-only test", other.kind()),
        };
        prop_assert!(ones(&inter) <= ones(&a).min(ones(&b)));

        // And all of it survives a round trip through the format.
        let loaded = AnyFilter::from_bytes(&union.to_bytes()).unwrap();
        prop_assert_eq!(&loaded, &union);
    }

    #[test]
    fn precomputed_hashes_probe_many_filters(keys in keys(), seed in any::<u64>()) {
        let mut plain = BloomFilter::new(300, 0.01).unwrap();
        let mut blocked = BlockedBloomFilter::new(300, 0.01).unwrap();
        let mut seeded = BloomFilter::builder(300, 0.01).seed(seed).build().unwrap();
        for k in &keys {
            let h = bloomkit::hash(k);
            plain.insert_hash(h);
            blocked.insert_hash(h);
            seeded.insert_hash(bloomkit::hash_with_seed(k, seed));
        }
        for k in &keys {
            // insert_hash(hash(k)) and contains(k) agree, for the default and any seed.
            prop_assert!(plain.contains(k) && blocked.contains(k) && seeded.contains(k));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// The batched operations are the one-by-one ones, only faster: the same answers in
    /// the same order, the same bits, the same counts, for batches of every length (around
    /// the batch size of 32 too).
    #[test]
    fn batched_operations_match_one_by_one(
        keys in prop::collection::vec(any::<u64>(), 0..200),
        probes in prop::collection::vec(any::<u64>(), 0..200),
        (n, p) in plan(),
    ) {
        let mut one = BlockedBloomFilter::new(n, p).unwrap();
        let mut many = one.clone();
        let changed: u64 = keys.iter().map(|k| one.insert(k) as u64).sum();
        prop_assert_eq!(many.insert_many(&keys), changed);
        prop_assert_eq!(&many, &one);
        prop_assert_eq!(many.len(), one.len());

        let atomic = AtomicBloomFilter::new(n, p).unwrap();
        prop_assert_eq!(atomic.insert_many(&keys), changed);
        prop_assert_eq!(atomic.to_blocked().unwrap(), one.clone());

        let all: Vec<u64> = keys.iter().chain(&probes).copied().collect();
        let expected: Vec<bool> = all.iter().map(|k| one.contains(k)).collect();
        let mut got = Vec::new();
        many.contains_many(&all, &mut got);
        prop_assert_eq!(&got, &expected);
        let mut got_atomic = Vec::new();
        atomic.contains_many(&all, &mut got_atomic);
        prop_assert_eq!(&got_atomic, &expected);
        let hashes: Vec<u64> = all.iter().map(bloomkit::hash).collect();
        let mut by_hash = vec![true]; // appended to, not replaced
        many.contains_many_hashes(&hashes, &mut by_hash);
        prop_assert_eq!(&by_hash[1..], &expected[..]);
    }
}

#[cfg(feature = "parallel")]
proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// A parallel build is the sequential one, bit for bit and count for count, whatever
    /// the keys, the size and the number of threads.
    #[test]
    fn parallel_build_matches_sequential(
        keys in prop::collection::vec(any::<u64>(), 0..3000),
        (n, p) in plan(),
        threads in 1usize..9,
    ) {
        let mut seq = BlockedBloomFilter::new(n, p).unwrap();
        let mut par = seq.clone();
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        let want = seq.insert_many(&keys);
        prop_assert_eq!(pool.install(|| par.par_insert_many(&keys)), want);
        prop_assert_eq!(&par, &seq);
        prop_assert_eq!(par.len(), seq.len());
    }
}
