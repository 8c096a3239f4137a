//! `AgingKey::from_bytes`, the reader of an `AF.*` key's encoding (`\x89BKA`, version 1) in
//! snapshots, `RESTORE` payloads, the module's RDB and `AF.LOADCHUNK`'s last chunk: on any
//! bytes it returns a key or an error, never panics, never allocates what the input merely
//! claims; a key it accepts encodes back to bytes that decode to the same key, and answers
//! its schedule's questions at any time.
//!
//! Two kinds of input: the fuzzer's bytes as they are, and a real key's encoding with the
//! fuzzer's bytes as its fixed fields (version, rate, capacity, period, last rotation), which
//! reaches the checks behind the magic with a filter that passes its checksum.
//!
//! Run: `cargo +nightly fuzz run aging_from_bytes` from the repository root.
#![no_main]

use std::sync::OnceLock;

use bloomkit_commands::aging::{AgingKey, MAGIC};
use bloomkit_commands::{Ctx, Defaults, FilterCommand, Unlimited, Value};
use libfuzzer_sys::fuzz_target;

/// A small key with items in two generations, encoded.
fn real_key() -> &'static [u8] {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    BYTES.get_or_init(|| {
        let defaults = Defaults::default();
        let ctx = Ctx {
            defaults: &defaults,
            budget: &Unlimited,
            now_ms: &|| 0,
        };
        let mut slot = None;
        for line in [
            "AF.RESERVE k 0.01 50 GENERATIONS 3 PERIOD 60 AT 1000",
            "AF.MADD k a b c",
            "AF.ROTATE k AT 61000",
            "AF.MADD k d e",
        ] {
            let words: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
            let command = FilterCommand::parse(&words)
                .expect("a filter command")
                .expect("well formed");
            assert!(!command.write(&mut slot, &ctx).reply.is_error(), "{line}");
        }
        slot.expect("created").to_bytes()
    })
}

fn check(bytes: &[u8], now_ms: u64) {
    let Ok(key) = AgingKey::from_bytes(bytes) else {
        return;
    };
    let mut encoded = Vec::new();
    key.write_to(&mut encoded).expect("in memory");
    assert_eq!(encoded.len(), key.encoded_len());
    assert_eq!(AgingKey::from_bytes(&encoded).expect("re-encoded"), key);
    assert!(key.error_rate() > 0.0 && key.error_rate() < 1.0);
    if let Some(at) = key.due_rotation(now_ms) {
        assert!(at > key.last_rotation_ms() && at <= now_ms);
    }
    let _ = key.ms_to_next_rotation(now_ms);
    let _ = key.past_capacity();
    let _ = key.memory_bytes();
    // Through `Value`, as hosts read it.
    assert_eq!(Value::from_bytes(bytes).ok(), Some(Value::Aging(key)));
}

fuzz_target!(|data: &[u8]| {
    let now_ms = data
        .get(..8)
        .and_then(|b| b.try_into().ok())
        .map_or(0, u64::from_le_bytes);
    check(data, now_ms);
    // The fuzzer's bytes after the magic, as they are.
    let mut prefixed = MAGIC.to_vec();
    prefixed.extend_from_slice(data);
    check(&prefixed, now_ms);
    // A real key with the fuzzer's fixed fields (33 bytes after the magic).
    if let Some(fixed) = data.get(..33) {
        let mut real = real_key().to_vec();
        real[MAGIC.len()..MAGIC.len() + 33].copy_from_slice(fixed);
        check(&real, now_ms);
    }
});
