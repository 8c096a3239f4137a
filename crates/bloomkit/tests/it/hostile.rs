//! Truncated, corrupted, foreign and hostile input: always an error, never a panic, never an
//! allocation the input cannot justify.

use crate::common;
use common::reseal;

use bloomkit::{AnyFilter, AtomicBloomFilter, BlockedBloomFilter, BloomFilter, Error};
use proptest::prelude::*;

fn sample_files() -> Vec<Vec<u8>> {
    let mut classic = BloomFilter::new(200, 0.01).unwrap();
    let mut blocked = BlockedBloomFilter::new(200, 0.01).unwrap();
    for i in 0..150u32 {
        classic.insert(&i);
        blocked.insert(&i);
    }
    vec![classic.to_bytes(), blocked.to_bytes()]
}

/// Every loader on the same bytes; each must return, not panic.
fn load_all(bytes: &[u8]) -> [bool; 4] {
    [
        BloomFilter::from_bytes(bytes).is_ok(),
        BlockedBloomFilter::from_bytes(bytes).is_ok(),
        AtomicBloomFilter::from_bytes(bytes).is_ok(),
        AnyFilter::from_bytes(bytes).is_ok() && AnyFilter::read_from(bytes).is_ok(),
    ]
}

#[test]
fn every_truncation_is_an_error() {
    for file in sample_files() {
        for len in 0..file.len() {
            let cut = &file[..len];
            assert_eq!(load_all(cut), [false; 4], "prefix of {len} bytes loaded");
            // Streaming a short file reports truncation (or a foreign file, if too short to
            // hold the magic).
            let err = AnyFilter::read_from(cut).unwrap_err();
            assert!(
                matches!(err, Error::Truncated | Error::BadMagic),
                "len {len}: {err}"
            );
        }
    }
}

#[test]
fn every_single_byte_corruption_is_an_error() {
    for file in sample_files() {
        for pos in 0..file.len() {
            for flip in [0x01u8, 0x80, 0xff] {
                let mut bad = file.clone();
                bad[pos] ^= flip;
                assert_eq!(load_all(&bad), [false; 4], "flip {flip:#x} at {pos} loaded");
            }
        }
    }
}

#[test]
fn trailing_bytes_are_refused_by_from_bytes_but_not_by_streams() {
    let mut file = sample_files().remove(0);
    let len = file.len();
    file.extend_from_slice(b"more");
    // Not damage: a whole filter with more after it, which the message says how to read.
    let err = BloomFilter::from_bytes(&file).unwrap_err();
    assert!(matches!(err, Error::TrailingBytes { extra: 4 }), "{err}");
    let message = err.to_string();
    assert!(!message.contains("corrupt"), "{message}");
    assert!(message.contains("format::peek_header"), "{message}");
    // A stream holds one filter after another: read_from takes exactly one.
    let mut rest = &file[..];
    BloomFilter::read_from(&mut rest).unwrap();
    assert_eq!(rest, b"more");
    assert_eq!(file.len() - rest.len(), len);
}

#[test]
fn wrong_kind_foreign_and_future_files_say_so() {
    let files = sample_files();
    assert!(matches!(
        BloomFilter::from_bytes(&files[1]),
        Err(Error::WrongKind { .. })
    ));
    assert!(matches!(
        BlockedBloomFilter::from_bytes(&files[0]),
        Err(Error::WrongKind { .. })
    ));
    assert!(matches!(
        AnyFilter::from_bytes(b"key1\nkey2\n"),
        Err(Error::BadMagic)
    ));
    let mut future = files[0].clone();
    future[8] = 2;
    reseal(&mut future);
    assert!(matches!(
        BloomFilter::from_bytes(&future),
        Err(Error::UnsupportedVersion {
            found: 2,
            supported: 1
        })
    ));
    let mut hash = files[0].clone();
    hash[12] = 9;
    reseal(&mut hash);
    assert!(matches!(
        BloomFilter::from_bytes(&hash),
        Err(Error::UnknownHashAlgorithm { found: 9 })
    ));
}

/// A 100-byte file whose header claims 2^60 bits must fail before allocating.
fn claims_huge(num_bits: u64) -> Vec<u8> {
    let mut f = BloomFilter::builder(0, 0.01)
        .num_bits(64)
        .num_hashes(3)
        .probes(bloomkit::ClassicProbes::DoubleHashing)
        .build()
        .unwrap()
        .to_bytes();
    f[36..44].copy_from_slice(&num_bits.to_le_bytes());
    f[48..56].copy_from_slice(&(num_bits / 8).to_le_bytes());
    reseal(&mut f);
    f
}

#[test]
fn huge_claims_in_small_files_fail_before_allocating() {
    let f = claims_huge(1 << 60);
    assert!(f.len() < 100);
    assert!(matches!(BloomFilter::from_bytes(&f), Err(Error::Truncated)));
    // A stream cannot be measured in advance: it must grow only as data arrives. Had the
    // reader reserved the claimed 128 PiB (or even the 2^40-bit claim's 128 GiB) up front,
    // the allocator's refusal would surface as OutOfMemory, not as truncation.
    for bits in [1u64 << 60, 1 << 40] {
        let f = claims_huge(bits);
        assert!(matches!(
            BloomFilter::read_from(&f[..]),
            Err(Error::Truncated)
        ));
        assert!(matches!(
            AnyFilter::read_from(&f[..]),
            Err(Error::Truncated)
        ));
    }
}

#[test]
fn inconsistent_headers_are_corrupt() {
    let good = BloomFilter::builder(0, 0.01)
        .num_bits(128)
        .num_hashes(3)
        .build()
        .unwrap()
        .to_bytes();
    // Payload length that disagrees with the bits (shorter than needed, so the bytes are
    // there and the disagreement itself is what fails).
    let mut bad = good.clone();
    bad[48..56].copy_from_slice(&8u64.to_le_bytes());
    reseal(&mut bad);
    assert!(matches!(
        BloomFilter::from_bytes(&bad),
        Err(Error::Corrupt { .. })
    ));
    // Zero hashes, and too many.
    for k in [0u32, 65, u32::MAX] {
        let mut bad = good.clone();
        bad[44..48].copy_from_slice(&k.to_le_bytes());
        reseal(&mut bad);
        assert!(matches!(
            BloomFilter::from_bytes(&bad),
            Err(Error::Corrupt { .. })
        ));
    }
    // A params length far beyond any kind's.
    let mut bad = good.clone();
    bad[32..36].copy_from_slice(&u32::MAX.to_le_bytes());
    reseal(&mut bad);
    assert!(matches!(
        BloomFilter::from_bytes(&bad),
        Err(Error::Corrupt { .. })
    ));
    // Reserved flags.
    let mut bad = good;
    bad[14] = 1;
    reseal(&mut bad);
    assert!(matches!(
        BloomFilter::from_bytes(&bad),
        Err(Error::Corrupt { .. })
    ));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        load_all(&bytes);
    }

    #[test]
    fn arbitrary_bytes_behind_a_valid_header_never_panic(
        tail in prop::collection::vec(any::<u8>(), 0..200),
        cut in 0usize..60,
    ) {
        let mut bytes = sample_files().remove(0)[..cut].to_vec();
        bytes.extend_from_slice(&tail);
        load_all(&bytes);
    }
}
