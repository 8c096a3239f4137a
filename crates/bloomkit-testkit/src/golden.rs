//! Readers of the data a real RedisBloom 2.8 wrote (`crates/bloomkit/tests/data/redisbloom/`,
//! made by `scripts/redisbloom_vectors.py`): the library's decoder tests and the server's
//! and the module's import tests read the same files through these.
//!
//! Each key of [`KEYS`] has a `.dump` (its `DUMP` payload), a `.scandump` (its `SCANDUMP`
//! chunks), an `.answers` (RedisBloom's answer for each item asked) and an `.info` (its
//! `BF.INFO`/`CF.INFO`).

use std::path::PathBuf;

/// The keys RedisBloom wrote: three Bloom chains (small, many layers, non-scaling) and two
/// cuckoo filters (small, grown).
pub const KEYS: [&str; 5] = [
    "bf-small",
    "bf-layers",
    "bf-nonscaling",
    "cf-small",
    "cf-grown",
];

/// The directory of the data (`crates/bloomkit/tests/data/redisbloom`).
pub fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../bloomkit/tests/data/redisbloom")
}

/// A file's bytes.
///
/// # Panics
///
/// If the file cannot be read, naming it.
pub fn read(name: &str) -> Vec<u8> {
    let path = dir().join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A `.scandump` file: RedisBloom's (iterator, chunk) pairs in its order, each stored as
/// the iterator (8 bytes), the chunk's length (4 bytes), the chunk; little-endian.
pub fn chunks(name: &str) -> Vec<(i64, Vec<u8>)> {
    let bytes = read(name);
    let mut out = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let iter = i64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
        let len = u32::from_le_bytes(bytes[at + 8..at + 12].try_into().unwrap()) as usize;
        out.push((iter, bytes[at + 12..at + 12 + len].to_vec()));
        at += 12 + len;
    }
    out
}

/// A `.answers` file: item, RedisBloom's EXISTS answer, and for cuckoo keys its COUNT.
pub fn answers(name: &str) -> Vec<(String, bool, Option<u64>)> {
    String::from_utf8(read(name))
        .unwrap()
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            (
                f[0].to_string(),
                f[1] == "1",
                f.get(2).map(|c| c.parse().unwrap()),
            )
        })
        .collect()
}

/// A `.info` file: RedisBloom's BF.INFO / CF.INFO as Python printed the dict, its fields in
/// order (`None`: nil, the expansion of a non-scaling filter).
pub fn info(name: &str) -> Vec<(String, Option<u64>)> {
    let text = String::from_utf8(read(name)).unwrap();
    let body = text.trim().trim_start_matches('{').trim_end_matches('}');
    body.split(", b'")
        .map(|kv| {
            let (k, v) = kv.split_once("': ").unwrap();
            (k.trim_start_matches("b'").to_string(), v.parse().ok())
        })
        .collect()
}

/// The command family of a key of [`KEYS`]: `"CF"` for the cuckoo ones, else `"BF"`.
pub fn family(key: &str) -> &'static str {
    if key.starts_with("cf") {
        "CF"
    } else {
        "BF"
    }
}

/// The items of `key`'s data with RedisBloom's EXISTS answer and, for cuckoo keys, its
/// COUNT, as the integers a reply carries.
pub fn key_answers(key: &str) -> Vec<(String, bool, Option<i64>)> {
    answers(&format!("{key}.answers"))
        .into_iter()
        .map(|(item, exists, count)| (item, exists, count.map(|c| c as i64)))
        .collect()
}

/// RedisBloom's `INFO` of `key`, its fields in order, each an integer or nil (`None`).
pub fn key_info(key: &str) -> Vec<(String, Option<i64>)> {
    info(&format!("{key}.info"))
        .into_iter()
        .map(|(name, v)| (name, v.map(|v| v as i64)))
        .collect()
}
