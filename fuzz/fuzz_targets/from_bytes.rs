//! Every loader of untrusted bytes: must return (an error or a filter), never panic, never
//! allocate what the input merely claims. A filter that loads must survive a round trip.
//!
//! Run: `cargo +nightly fuzz run from_bytes` from the repository root.
#![no_main]

use bloomkit::{AnyFilter, AtomicBloomFilter, BinaryFuseFilter, BlockedBloomFilter, BloomFilter};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = BloomFilter::from_bytes(data);
    let _ = BlockedBloomFilter::from_bytes(data);
    let _ = AtomicBloomFilter::from_bytes(data);
    let _ = BloomFilter::read_from(data);
    if let Ok(f) = BinaryFuseFilter::from_bytes(data) {
        let _ = f.contains("probe");
    }
    let _ = BinaryFuseFilter::read_from(data);
    if let Ok(f) = AnyFilter::from_bytes(data) {
        // What loads is exactly what was stored: it writes back to the same bytes.
        assert_eq!(f.to_bytes(), data);
        let _ = f.estimated_fp_rate();
        let _ = f.contains("probe");
    }
    let _ = AnyFilter::read_from(data);
});
