//! Unit tests of the counters through the filter: carries, borrows, repeated probes, sizing.

use super::counters::*;
use super::*;
use crate::classic::rotating_probes as probes;

/// A filter of one word of counters, for poking at single counters.
fn one_word() -> CountingBloomFilter {
    let mut f = CountingBloomFilter::builder(0, 0.01)
        .num_counters(64)
        .num_hashes(1)
        .build()
        .unwrap();
    f.counters.truncate(1);
    f.num_counters = 16;
    f
}

fn bump(f: &mut CountingBloomFilter, index: u64, times: u32) {
    for _ in 0..times {
        let (w, shift) = slot(index);
        let count = (f.counters[w] >> shift) & COUNTER_MAX;
        if count < COUNTER_MAX {
            f.counters[w] += 1 << shift;
        }
    }
}

#[test]
fn a_full_counter_never_carries_into_its_neighbour() {
    // The classic bug: a naive `+= 1 << shift` at 15 turns counter i into 0 and adds one
    // to counter i + 1. Drive every counter of a word to saturation, one at a time, and
    // check no other counter moved.
    for i in 0..16 {
        let mut f = one_word();
        // Count each by the real insert path: a hash that probes counter i with k = 1
        // maps to i = (h * 16) >> 64, so take h = i << 60.
        let h = i << 60;
        for _ in 0..40 {
            f.insert_hash(h);
        }
        assert_eq!(f.counter(i), COUNTER_MAX, "counter {i}");
        for j in (0..16).filter(|&j| j != i) {
            assert_eq!(f.counter(j), 0, "counter {j} changed by {i}");
        }
        // And down again: saturated, it stays; its neighbours stay zero.
        for _ in 0..40 {
            assert!(f.remove_hash(h));
        }
        assert_eq!(f.counters[0], COUNTER_MAX << (4 * i));
    }
}

#[test]
fn a_zero_counter_never_borrows_from_its_neighbour() {
    let mut f = one_word();
    bump(&mut f, 3, 1);
    bump(&mut f, 4, 2);
    // Counter 2 is zero: a key probing it is definitely absent and nothing changes.
    assert!(!f.remove_hash(2 << 60));
    assert!(f.remove_hash(3 << 60));
    assert!(!f.remove_hash(3 << 60));
    assert_eq!(f.counters[0], 2 << 16);
}

#[test]
fn repeated_probes_of_one_key_count_twice_and_never_underflow() {
    // In a small filter some keys probe one counter twice: find one.
    let probe_counts = |h: u64| {
        let mut seen = std::collections::HashMap::new();
        for index in probes(h, 64, 16) {
            *seen.entry(index).or_insert(0u64) += 1;
        }
        seen
    };
    let h = (0..1000u64)
        .map(|i| crate::hash(&i))
        .find(|&h| probe_counts(h).values().any(|&n| n > 1))
        .expect("a key with a repeated probe");
    let mut f = CountingBloomFilter::builder(0, 0.01)
        .num_counters(64)
        .num_hashes(16)
        .build()
        .unwrap();
    f.insert_hash(h);
    for (&index, &n) in &probe_counts(h) {
        assert_eq!(f.counter(index), n);
    }
    assert!(f.remove_hash(h));
    assert_eq!(f.count_nonzero(), 0);
    // A key never inserted, whose repeated counter is 1 (set by another key): the second
    // decrement finds zero and must not borrow from the neighbour.
    let mut g = CountingBloomFilter::builder(0, 0.01)
        .num_counters(64)
        .num_hashes(16)
        .build()
        .unwrap();
    for &index in probe_counts(h).keys() {
        let (w, shift) = slot(index);
        g.counters[w] += 1 << shift;
    }
    assert!(g.remove_hash(h));
    assert_eq!(g.count_nonzero(), 0);
    assert!(g.counters.iter().all(|&w| w == 0));
}

#[test]
fn sized_like_the_classic_filter() {
    let c = CountingBloomFilter::new(1_000_000, 0.01).unwrap();
    let b = BloomFilter::new(1_000_000, 0.01).unwrap();
    assert_eq!(c.num_counters(), b.num_bits());
    assert_eq!(c.num_hashes(), b.num_hashes());
    assert_eq!(
        c.memory_bytes() - std::mem::size_of::<CountingBloomFilter>(),
        4 * (b.memory_bytes() - std::mem::size_of::<BloomFilter>())
    );
}

#[test]
fn is_send_sync_and_debug_shows_the_shape_only() {
    fn send_sync<T: Send + Sync + Clone + fmt::Debug + PartialEq>() {}
    send_sync::<CountingBloomFilter>();
    let f = CountingBloomFilter::new(1_000_000, 0.01).unwrap();
    assert!(format!("{f:?}").len() < 200);
}

#[test]
fn bad_params_are_errors() {
    assert!(matches!(
        CountingBloomFilter::builder(0, 0.01)
            .num_counters(0)
            .num_hashes(3)
            .build(),
        Err(Error::InvalidParameter {
            name: "num_counters",
            ..
        })
    ));
    assert!(matches!(
        CountingBloomFilter::builder(0, 0.01)
            .num_counters(64)
            .num_hashes(0)
            .build(),
        Err(Error::InvalidNumHashes { .. })
    ));
    assert!(matches!(
        CountingBloomFilter::builder(0, 0.01)
            .num_counters(64)
            .num_hashes(65)
            .build(),
        Err(Error::InvalidNumHashes { .. })
    ));
    for n in [u64::MAX, u64::MAX - 70, 1 << 62] {
        assert!(matches!(
            CountingBloomFilter::builder(0, 0.01)
                .num_counters(n)
                .num_hashes(3)
                .build(),
            Err(Error::TooLarge { .. }) | Err(Error::OutOfMemory { .. })
        ));
    }
    for p in [0.0, 1.0, -1.0, f64::NAN, f64::INFINITY] {
        assert!(matches!(
            CountingBloomFilter::new(10, p),
            Err(Error::InvalidFpRate { .. })
        ));
    }
    assert!(matches!(
        CountingBloomFilter::new(10, 1e-30),
        Err(Error::FpRateTooSmall { .. })
    ));
    assert_eq!(
        CountingBloomFilter::new(0, 0.01).unwrap(),
        CountingBloomFilter::new(1, 0.01).unwrap()
    );
}
