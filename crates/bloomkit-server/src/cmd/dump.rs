//! `DUMP`, `RESTORE` and `COPY`: a key's value as one string, and back; a key's value at
//! another key.
//!
//! # The payload
//!
//! `DUMP` answers what Redis with the bloomkit module answers for the same value
//! ([`bloomkit::redisbloom::payload`]): a module value (RDB type 7, the module id of
//! `MBbloom--` or `MBbloomCF` at encoding version 1000, or of `BKaging--` at
//! [`AGING_ENCVER`](bloomkit_commands::value::AGING_ENCVER)), holding the value in bloomkit's file
//! format (docs/FORMAT.md; a dump still being restored in its partial form), then the RDB
//! version (10) and Redis's CRC-64. So a key moves between `bloomkit serve` and the module
//! both ways by `DUMP`/`RESTORE` (and a cluster's `MIGRATE`).
//!
//! `RESTORE` takes that payload; a RedisBloom key's (the same frame at RedisBloom's encoding
//! versions 0 to 4), decoded into a key that keeps RedisBloom's hashing ([`Value::RedisBloom`],
//! [`Value::RedisCuckoo`]) so every item it held is found; and the payload earlier servers
//! wrote (the file format itself, its magic `89 42 4B 46` where the RDB type would be, then
//! the RDB version up to [`RDB_VERSION`] and the CRC-64), which their logs hold.
//!
//! `RESTORE` checks in Redis's order (options, `BUSYKEY`, the TTL, the envelope) and then
//! decodes the whole value, with every check bloomkit's reader makes, before anything is
//! created: a payload that is damaged anywhere is refused whole.

mod crc64;

use bloomkit::redisbloom::payload::{self, DumpValue};
use bloomkit::redisbloom::RedisBloomValue;
use bloomkit_commands::args::{is_word, parse_i64};
use bloomkit_commands::errors::{not_an_integer, syntax_error, OOM};
use bloomkit_commands::{Budget, Reply, Value};
use bytes::Bytes;

use super::Executed;
use crate::errors::DB_INDEX_OUT_OF_RANGE;
use crate::keyspace::{now_ms, CopyError, Keyspace, RestoreError, RestoredAccess};

pub use self::crc64::crc64;

/// The RDB version a payload carries: Redis 8.0's. `RESTORE` accepts this and any earlier.
pub const RDB_VERSION: u16 = 12;

/// Bytes after the value: the RDB version and the CRC.
const FOOTER_LEN: usize = 10;

const BAD_ENVELOPE: &str = "ERR DUMP payload version or checksum are wrong";
const BAD_DATA: &str = "ERR Bad data format";

/// The `DUMP` payload of `value`: a module value as Redis frames it, the module's encoding
/// (see the module documentation above), so the Redis/Valkey module restores it too.
pub fn envelope(value: &Value) -> Vec<u8> {
    let mut out = Vec::with_capacity(value.encoded_len() + value.encoded_len() / 100_000 + 64);
    // Writing to a vector cannot fail, and the value writes exactly its length.
    let _ = payload::write_dump(
        &mut out,
        value.type_name(),
        value.module_encver(),
        value.encoded_len() as u64,
        |w| value.write_to(w),
    );
    out
}

/// The value inside a `DUMP` payload, once the version and the CRC are checked.
///
/// # Errors
///
/// Redis's `DUMP payload version or checksum are wrong`, then `Bad data format` for a
/// payload whose content is not a value this server holds (anything bloomkit's reader
/// refuses: another program's data, a truncated or damaged filter, another filter kind).
pub fn open_envelope(payload: &[u8]) -> Result<&[u8], Reply> {
    let Some(body_len) = payload.len().checked_sub(FOOTER_LEN) else {
        return Err(Reply::error(BAD_ENVELOPE));
    };
    let (body, footer) = payload.split_at(body_len);
    let version = u16::from_le_bytes([footer[0], footer[1]]);
    let mut crc = [0u8; 8];
    crc.copy_from_slice(&footer[2..]);
    if version > RDB_VERSION || crc64(0, &payload[..body_len + 2]) != u64::from_le_bytes(crc) {
        return Err(Reply::error(BAD_ENVELOPE));
    }
    Ok(body)
}

/// The value in a `DUMP` payload: bloomkit's own, or a RedisBloom key's (its first byte the
/// RDB type of a module value, 7), decoded with RedisBloom's hashing kept.
///
/// # Errors
///
/// As [`open_envelope`]; for a RedisBloom payload, `DUMP payload version or checksum are
/// wrong` when it is cut short or its CRC differs, `Bad data format` for any other fault.
pub fn decode_payload(payload: &[u8]) -> Result<Value, Reply> {
    if payload::is_module_payload(payload) {
        // The envelope first, as Redis checks it: a value cut short inside a payload whose
        // CRC is right is bad data, not a bad envelope.
        let Some(body_len) = payload.len().checked_sub(8).filter(|&n| n > FOOTER_LEN - 8) else {
            return Err(Reply::error(BAD_ENVELOPE));
        };
        let (body, crc) = payload.split_at(body_len);
        if crc64(0, body).to_le_bytes() != crc {
            return Err(Reply::error(BAD_ENVELOPE));
        }
        let bad_data = || Reply::error(BAD_DATA);
        return match payload::from_dump(payload).map_err(|_| bad_data())? {
            DumpValue::RedisBloom(RedisBloomValue::Bloom(chain)) => Ok(Value::RedisBloom(chain)),
            DumpValue::RedisBloom(RedisBloomValue::Cuckoo(filter)) => {
                Ok(Value::RedisCuckoo(filter))
            }
            DumpValue::Bloomkit {
                type_name,
                encver,
                bytes,
            } => {
                let value = Value::from_bytes(&bytes).map_err(|_| bad_data())?;
                if value.type_name() != type_name || value.module_encver() != encver {
                    return Err(bad_data());
                }
                Ok(value)
            }
            _ => Err(bad_data()),
        };
    }
    let body = open_envelope(payload)?;
    Value::from_bytes(body).map_err(|_| Reply::error(BAD_DATA))
}

/// `DUMP key`: the payload, or nil for a missing key.
pub fn dump(keyspace: &Keyspace, args: &[Bytes]) -> Reply {
    match keyspace.value_of(&args[1]) {
        // Encoded with the shard's lock released: the `Arc` keeps the value as it was.
        Some(value) => Reply::bulk(envelope(&value)),
        None => Reply::Null,
    }
}

/// `RESTORE key ttl payload [REPLACE] [ABSTTL] [IDLETIME seconds] [FREQ frequency]`.
///
/// Logged as `RESTORE key at payload REPLACE ABSTTL`, with the absolute expiry (0: none):
/// the key was free, or `REPLACE` was given, when it ran, so the replay must not refuse it.
pub fn restore(keyspace: &Keyspace, args: &[Bytes]) -> Executed {
    let (mut replace, mut absttl) = (false, false);
    let (mut idle, mut freq): (Option<i64>, Option<i64>) = (None, None);
    let mut at = 4;
    while at < args.len() {
        let option = &args[at];
        let has_value = at + 1 < args.len();
        if is_word(option, "REPLACE") {
            replace = true;
        } else if is_word(option, "ABSTTL") {
            absttl = true;
        } else if is_word(option, "IDLETIME") && has_value && freq.is_none() {
            match parse_i64(&args[at + 1]) {
                None => return Executed::reply(not_an_integer()),
                Some(v) if v < 0 => {
                    return Executed::reply(Reply::error(
                        "ERR Invalid IDLETIME value, must be >= 0",
                    ))
                }
                Some(v) => idle = Some(v),
            }
            at += 1;
        } else if is_word(option, "FREQ") && has_value && idle.is_none() {
            match parse_i64(&args[at + 1]) {
                None => return Executed::reply(not_an_integer()),
                Some(v) if !(0..=255).contains(&v) => {
                    return Executed::reply(Reply::error(
                        "ERR Invalid FREQ value, must be >= 0 and <= 255",
                    ))
                }
                // Counted from here on only under an LFU policy (see `OBJECT FREQ`).
                Some(v) => freq = Some(v),
            }
            at += 1;
        } else {
            return Executed::reply(syntax_error());
        }
        at += 1;
    }
    let key = &args[1];
    // Checked here in Redis's order, and again when the key is created.
    if !replace && keyspace.count_existing(std::slice::from_ref(key)) > 0 {
        return Executed::reply(busy_key());
    }
    let ttl = match parse_i64(&args[2]) {
        None => return Executed::reply(not_an_integer()),
        Some(ttl) if ttl < 0 => {
            return Executed::reply(Reply::error("ERR Invalid TTL value, must be >= 0"))
        }
        Some(ttl) => ttl as u64,
    };
    // Decoding holds about the payload's size again: ask before allocating it.
    if !keyspace.is_loading() && !keyspace.within_maxmemory(args[3].len()) {
        return Executed::reply(Reply::error(OOM));
    }
    let value = match decode_payload(&args[3]) {
        Ok(value) => value,
        Err(reply) => return Executed::reply(reply),
    };
    let expires_at_ms = match ttl {
        0 => None,
        ttl if absttl => Some(ttl),
        ttl => Some(now_ms().saturating_add(ttl)),
    };
    let logged = vec![
        Bytes::from_static(b"RESTORE"),
        key.clone(),
        Bytes::from(expires_at_ms.unwrap_or(0).to_string()),
        args[3].clone(),
        Bytes::from_static(b"REPLACE"),
        Bytes::from_static(b"ABSTTL"),
    ];
    let access = RestoredAccess {
        idle_seconds: idle.map_or(0, |s| u32::try_from(s).unwrap_or(u32::MAX)),
        frequency: freq.and_then(|f| u8::try_from(f).ok()),
    };
    match keyspace.restore_value(key, value, expires_at_ms, replace, access, logged) {
        Ok(ticket) => Executed::logged(Reply::Ok, ticket),
        Err(RestoreError::BusyKey) => Executed::reply(busy_key()),
        Err(RestoreError::Oom) => Executed::reply(Reply::error(OOM)),
    }
}

fn busy_key() -> Reply {
    Reply::error("BUSYKEY Target key name already exists.")
}

/// `COPY source destination [DB destination-db] [REPLACE]`: 1 if copied, 0 if the source is
/// missing or the destination exists (without `REPLACE`). Only database 0 exists.
pub fn copy(keyspace: &Keyspace, args: &[Bytes]) -> Executed {
    let mut replace = false;
    let mut at = 3;
    while at < args.len() {
        let option = &args[at];
        if is_word(option, "REPLACE") {
            replace = true;
        } else if is_word(option, "DB") && at + 1 < args.len() {
            match parse_i64(&args[at + 1]) {
                None => return Executed::reply(not_an_integer()),
                Some(0) => {}
                Some(_) => return Executed::reply(Reply::error(DB_INDEX_OUT_OF_RANGE)),
            }
            at += 1;
        } else {
            return Executed::reply(syntax_error());
        }
        at += 1;
    }
    let (src, dst) = (&args[1], &args[2]);
    if src == dst {
        return Executed::reply(Reply::error(
            "ERR source and destination objects are the same",
        ));
    }
    match keyspace.copy(src, dst, replace) {
        Ok((copied, ticket)) => Executed::logged(Reply::Integer(i64::from(copied)), ticket),
        Err(CopyError::Oom) => Executed::reply(Reply::error(OOM)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value() -> Value {
        let mut f = bloomkit::ScalableBloomFilter::new(100, 0.01).unwrap();
        f.insert("a").unwrap();
        Value::Bloom(f)
    }

    /// The payload servers before the module's frame wrote: the file format, the RDB
    /// version 12 and the CRC-64.
    fn earlier_payload(v: &Value) -> Vec<u8> {
        let mut out = v.to_bytes();
        out.extend_from_slice(&RDB_VERSION.to_le_bytes());
        let crc = crc64(0, &out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    #[test]
    fn a_payload_restores_to_the_value_it_wraps() {
        let v = value();
        let payload = envelope(&v);
        assert_eq!(payload[0], 7, "a module value");
        assert_eq!(payload[payload.len() - 10..payload.len() - 8], [10, 0]);
        assert_eq!(decode_payload(&payload).unwrap(), v);
        // A server's log holds earlier payloads: they restore as before.
        assert_eq!(decode_payload(&earlier_payload(&v)).unwrap(), v);
        // Every flipped bit of the new frame is refused.
        for at in 0..payload.len() {
            let mut p = payload.clone();
            p[at] ^= 0x10;
            assert!(decode_payload(&p).is_err(), "{at}");
        }
    }

    #[test]
    fn a_damaged_or_foreign_envelope_is_refused() {
        let payload = earlier_payload(&value());
        let bad = Err(Reply::error(BAD_ENVELOPE));
        // Every single flipped bit: the CRC catches it (or the version, if it grew).
        for at in 0..payload.len() {
            for bit in [0, 3, 7] {
                let mut p = payload.clone();
                p[at] ^= 1 << bit;
                assert_eq!(open_envelope(&p), bad, "{at} {bit}");
            }
        }
        for cut in 0..FOOTER_LEN {
            assert_eq!(open_envelope(&payload[..cut]), bad);
        }
        // A later RDB version, resealed, is still refused.
        let mut newer = payload.clone();
        let n = newer.len();
        newer[n - 10..n - 8].copy_from_slice(&13u16.to_le_bytes());
        let crc = crc64(0, &newer[..n - 8]);
        newer[n - 8..].copy_from_slice(&crc.to_le_bytes());
        assert_eq!(open_envelope(&newer), bad);
        // An older version, resealed, opens; its content decides.
        let mut older = payload.clone();
        older[n - 10..n - 8].copy_from_slice(&10u16.to_le_bytes());
        let crc = crc64(0, &older[..n - 8]);
        older[n - 8..].copy_from_slice(&crc.to_le_bytes());
        assert!(open_envelope(&older).is_ok());
    }
}
