//! Helpers shared by the test files: the fixtures' folder, the format's checksum, and the
//! hostile-input checks every filter kind must pass.

#[macro_use]
pub mod typed;

use std::fmt::Write as _;
use std::path::PathBuf;

use bloomkit::{AnyFilter, Error, Filter, FilterExt, Result};
use xxhash_rust::xxh3::xxh3_64;

/// Where the golden fixtures live.
pub fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

/// A fixture's `.answers` text: for the keys `key(0..3000)` (the first 1,000 inserted), one
/// line each, `key<TAB>maybe` or `key<TAB>no`, as `filter` answers them.
pub fn golden_answers<F: Filter>(filter: &F, key: impl Fn(u64) -> String) -> String {
    let mut out = String::new();
    for i in 0..3000 {
        let k = key(i);
        let answer = if filter.contains(k.as_str()) {
            "maybe"
        } else {
            "no"
        };
        writeln!(out, "{k}\t{answer}").unwrap();
    }
    out
}

/// Rewrites the checksum (plain XXH3-64, seed 0, of everything before it: docs/FORMAT.md),
/// so that a deliberate change to a field reaches the field checks behind the checksum.
pub fn reseal(bytes: &mut [u8]) {
    let n = bytes.len() - 8;
    let sum = xxh3_64(&bytes[..n]);
    bytes[n..].copy_from_slice(&sum.to_le_bytes());
}

/// A bloomkit 0.1 file (hash algorithm 1, the `Hash` feed) as the same filter with the
/// current key feed (hash algorithm 2), resealed: what today's build writes for a filter of
/// string keys, whose feed is the same in both.
pub fn as_key_feed(v1: &[u8]) -> Vec<u8> {
    assert_eq!(v1[12..14], [1, 0], "not a file of the 0.1 feed");
    let mut out = v1.to_vec();
    out[12..14].copy_from_slice(&2u16.to_le_bytes());
    reseal(&mut out);
    out
}

/// `file` loads through both loaders, and no prefix of it does: `from_bytes` refuses every
/// prefix, and `read_from` calls each one truncated (or, when even the magic is incomplete
/// or missing, not a filter). `AnyFilter` refuses every prefix too.
pub fn assert_every_truncation_fails<T>(
    file: &[u8],
    from_bytes: impl Fn(&[u8]) -> Result<T>,
    read_from: impl Fn(&[u8]) -> Result<T>,
) {
    assert!(from_bytes(file).is_ok() && read_from(file).is_ok());
    for len in 0..file.len() {
        let cut = &file[..len];
        assert!(from_bytes(cut).is_err(), "a prefix of {len} bytes loaded");
        assert!(AnyFilter::from_bytes(cut).is_err(), "{len}");
        match read_from(cut) {
            Err(Error::Truncated | Error::BadMagic) => {}
            Err(other) => panic!("prefix of {len} bytes: {other}"),
            Ok(_) => panic!("a prefix of {len} bytes streamed in"),
        }
    }
}

/// Flipping one bit, the top bit, or every bit of any single byte of `file` makes it
/// unloadable through either loader (the checksum, if nothing before it, catches it).
pub fn assert_every_byte_flip_fails<T>(
    file: &[u8],
    from_bytes: impl Fn(&[u8]) -> Result<T>,
    read_from: impl Fn(&[u8]) -> Result<T>,
) {
    for pos in 0..file.len() {
        for flip in [0x01u8, 0x80, 0xff] {
            let mut bad = file.to_vec();
            bad[pos] ^= flip;
            assert!(from_bytes(&bad).is_err(), "flip {flip:#x} at {pos} loaded");
            assert!(
                read_from(&bad).is_err(),
                "flip {flip:#x} at {pos} streamed in"
            );
            assert!(
                AnyFilter::from_bytes(&bad).is_err(),
                "flip {flip:#x} at {pos}"
            );
        }
    }
}
