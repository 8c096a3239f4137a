//! RedisBloom's formats, as an untrusted peer sends them: a DUMP payload (RedisBloom's, or
//! the frame bloomkit's hosts write), an RDB value of
//! either type at any encoding version, a SCANDUMP chunk sequence, and bloomkit's own files
//! of the two RedisBloom kinds. Each must return (an error or a filter), never panic, never
//! allocate what the input merely claims; what loads must answer, take an item, and survive
//! bloomkit's file format.
//!
//! Run: `cargo +nightly fuzz run redisbloom_import` from the repository root. Seeds: the
//! `.dump` files in `crates/bloomkit/tests/data/redisbloom/` (with the checksum
//! re-computed by the target, so mutations reach the decoder).
#![no_main]

use bloomkit::redisbloom::payload::{self, DumpValue};
use bloomkit::redisbloom::{crc64_redis, RedisBloomChain, RedisBloomValue, RedisCuckooFilter};
use libfuzzer_sys::fuzz_target;

fn exercise(value: RedisBloomValue) {
    match value {
        RedisBloomValue::Bloom(mut b) => {
            let _ = b.contains(b"probe");
            let _ = b.insert(b"probe");
            assert_eq!(RedisBloomChain::from_bytes(&b.to_bytes()).unwrap(), b);
        }
        RedisBloomValue::Cuckoo(mut c) => {
            let _ = c.count(b"probe");
            let _ = c.insert(b"probe");
            let _ = c.delete(b"probe");
            assert_eq!(RedisCuckooFilter::from_bytes(&c.to_bytes()).unwrap(), c);
        }
        _ => {}
    }
}

/// Splits `data` into SCANDUMP-like (iterator, chunk) pairs: a 1-byte length, then bytes.
fn chunk_sequence(data: &[u8]) -> Vec<(i64, &[u8])> {
    let mut out = Vec::new();
    let (mut at, mut pos) = (0usize, 1i64);
    while at < data.len() {
        let len = usize::from(data[at]).min(data.len() - at - 1);
        let chunk = &data[at + 1..at + 1 + len];
        // The header's iterator is 1; a data chunk's is one past its last byte.
        let it = if out.is_empty() { 1 } else { pos + len as i64 };
        if !out.is_empty() {
            pos += len as i64;
        }
        out.push((it, chunk));
        at += 1 + len;
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    match selector % 5 {
        0 => {
            // A DUMP payload with its checksum made right.
            let mut payload = rest.to_vec();
            if payload.len() >= 10 {
                let n = payload.len() - 8;
                let crc = crc64_redis(&payload[..n]);
                payload[n..].copy_from_slice(&crc.to_le_bytes());
            }
            if let Ok(v) = RedisBloomValue::from_dump(&payload) {
                exercise(v);
            }
            // Either host's frame: a bloomkit value's bytes framed again read back alike.
            if let Ok(DumpValue::Bloomkit {
                type_name,
                encver,
                bytes,
            }) = payload::from_dump(&payload)
            {
                let mut again = Vec::new();
                payload::write_dump(&mut again, &type_name, encver, bytes.len() as u64, |w| {
                    w.write_all(&bytes)
                })
                .unwrap();
                match payload::from_dump(&again).unwrap() {
                    DumpValue::Bloomkit {
                        type_name: name_back,
                        encver: encver_back,
                        bytes: back,
                    } => assert_eq!((name_back, encver_back, back), (type_name, encver, bytes)),
                    other => panic!("{other:?}"),
                }
            }
        }
        1 => {
            let encver = u64::from(selector / 5 % 6);
            if let Ok(b) = RedisBloomChain::from_rdb(encver, rest) {
                exercise(RedisBloomValue::Bloom(b));
            }
            if let Ok(c) = RedisCuckooFilter::from_rdb(encver, rest) {
                exercise(RedisBloomValue::Cuckoo(c));
            }
        }
        2 => {
            if let Ok(b) = RedisBloomChain::from_scandump(chunk_sequence(rest)) {
                exercise(RedisBloomValue::Bloom(b));
            }
        }
        3 => {
            if let Ok(c) = RedisCuckooFilter::from_scandump(chunk_sequence(rest)) {
                exercise(RedisBloomValue::Cuckoo(c));
            }
        }
        _ => {
            if let Ok(b) = RedisBloomChain::from_bytes(rest) {
                assert_eq!(b.to_bytes(), rest);
            }
            if let Ok(c) = RedisCuckooFilter::from_bytes(rest) {
                assert_eq!(c.to_bytes(), rest);
            }
            let _ = RedisBloomChain::read_from(rest);
            let _ = RedisCuckooFilter::read_from(rest);
        }
    }
});
