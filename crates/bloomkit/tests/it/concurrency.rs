//! Many threads, one `AtomicBloomFilter`, no lock: nothing inserted is lost.

use std::sync::Barrier;

use bloomkit::{AtomicBloomFilter, BlockedBloomFilter};

#[test]
fn threads_inserting_disjoint_keys_lose_none() {
    const THREADS: u64 = 8;
    const PER_THREAD: u64 = 200_000;
    let f = AtomicBloomFilter::new(THREADS * PER_THREAD, 0.01).unwrap();
    // Start together so the inserts really overlap.
    let barrier = Barrier::new(THREADS as usize);
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (f, barrier) = (&f, &barrier);
            s.spawn(move || {
                barrier.wait();
                for i in 0..PER_THREAD {
                    f.insert(&(t * PER_THREAD + i));
                }
            });
        }
    });
    let missing = (0..THREADS * PER_THREAD).filter(|i| !f.contains(i)).count();
    assert_eq!(missing, 0);

    // Concurrent inserts give exactly the bits a sequential build gives: OR is order-free.
    let mut sequential = BlockedBloomFilter::new(THREADS * PER_THREAD, 0.01).unwrap();
    for i in 0..THREADS * PER_THREAD {
        sequential.insert(&i);
    }
    assert_eq!(f.to_blocked().unwrap(), sequential);
}

#[test]
fn readers_see_every_finished_insert_while_writers_run() {
    let f = AtomicBloomFilter::new(400_000, 0.01).unwrap();
    std::thread::scope(|s| {
        for t in 0..2u64 {
            let f = &f;
            s.spawn(move || {
                for i in 0..200_000u64 {
                    let key = t * 1_000_000 + i;
                    f.insert(&key);
                    // Our own finished insert is visible at once, whatever the other thread does.
                    assert!(f.contains(&key), "key {key} lost right after insert");
                }
            });
        }
    });
}
