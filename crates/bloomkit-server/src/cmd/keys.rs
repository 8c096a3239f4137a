//! Generic key commands: `DEL`, `UNLINK`, `EXISTS`, `TYPE`, `KEYS`, `SCAN`, `DBSIZE`,
//! `FLUSHDB`, `FLUSHALL`, the `EXPIRE` family, `TTL`, `PTTL`, `PERSIST`, `RENAME`.
//!
//! Each function parses its arguments with Redis's rules and errors, and leaves locking,
//! expiry and logging to the [`Keyspace`]. The dispatcher has already checked the argument
//! count against the command table.

use bloomkit_commands::args::{is_word, parse_i64};
use bloomkit_commands::errors::{not_an_integer, syntax_error};
use bloomkit_commands::Reply;
use bytes::Bytes;

use super::Executed;
use crate::keyspace::{now_ms, ExpireCondition, Keyspace, RenameError, Ttl};

/// `DEL key...` and `UNLINK key...`: how many of the keys existed.
pub fn del(keyspace: &Keyspace, args: &[Bytes]) -> Executed {
    let (count, ticket) = keyspace.delete(&args[1..]);
    Executed::logged(Reply::Integer(count), ticket)
}

/// `EXISTS key...`: how many of the keys exist (a key named twice counts twice).
pub fn exists(keyspace: &Keyspace, args: &[Bytes]) -> Reply {
    Reply::Integer(keyspace.count_existing(&args[1..]))
}

/// `TYPE key`: `MBbloom--`, `MBbloomCF`, or `none`.
pub fn type_of(keyspace: &Keyspace, args: &[Bytes]) -> Reply {
    Reply::Simple(keyspace.type_of(&args[1]).unwrap_or("none").to_string())
}

/// `KEYS pattern`.
pub fn keys(keyspace: &Keyspace, args: &[Bytes]) -> Reply {
    Reply::Array(
        keyspace
            .keys_matching(&args[1])
            .into_iter()
            .map(Reply::Bulk)
            .collect(),
    )
}

/// `SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]`: `[next cursor, [keys...]]`.
pub fn scan(keyspace: &Keyspace, args: &[Bytes]) -> Reply {
    let Some(cursor) = std::str::from_utf8(&args[1])
        .ok()
        .and_then(|text| text.parse::<u64>().ok())
    else {
        return Reply::error("ERR invalid cursor");
    };
    let (mut pattern, mut count, mut type_name) = (None, 10usize, None);
    let mut options = args[2..].chunks(2);
    for option in options.by_ref() {
        let [word, value] = option else {
            return syntax_error();
        };
        if is_word(word, "MATCH") {
            pattern = Some(&value[..]);
        } else if is_word(word, "COUNT") {
            count = match parse_i64(value) {
                None => return not_an_integer(),
                Some(n) if n < 1 => return syntax_error(),
                Some(n) => usize::try_from(n).unwrap_or(usize::MAX),
            };
        } else if is_word(word, "TYPE") {
            type_name = Some(&value[..]);
        } else {
            return syntax_error();
        }
    }
    let (next, keys) = keyspace.scan(cursor, count, pattern, type_name);
    Reply::Array(vec![
        Reply::bulk(next.to_string()),
        Reply::Array(keys.into_iter().map(Reply::Bulk).collect()),
    ])
}

/// `DBSIZE`.
pub fn dbsize(keyspace: &Keyspace) -> Reply {
    Reply::Integer(i64::try_from(keyspace.len()).unwrap_or(i64::MAX))
}

/// `FLUSHDB [ASYNC|SYNC]` and `FLUSHALL [ASYNC|SYNC]` (one database: the same thing).
/// Values are always freed after the keyspace's locks are released, so `ASYNC` and `SYNC`
/// differ only in name.
pub fn flush(keyspace: &Keyspace, args: &[Bytes]) -> Executed {
    match args {
        [_] => {}
        [_, mode] if is_word(mode, "ASYNC") || is_word(mode, "SYNC") => {}
        _ => return Executed::reply(syntax_error()),
    }
    Executed::logged(Reply::Ok, keyspace.flush())
}

/// `EXPIRE`/`PEXPIRE`/`EXPIREAT`/`PEXPIREAT key time [NX|XX|GT|LT]`: 1 if the expiry was
/// set (or the key deleted, for a time already past), 0 if the key is missing or the
/// condition unmet.
pub fn expire(keyspace: &Keyspace, name: &str, args: &[Bytes]) -> Executed {
    // Flags first, then the time, as Redis validates them.
    let mut condition = ExpireCondition::default();
    for flag in &args[3..] {
        let set = if is_word(flag, "NX") {
            &mut condition.nx
        } else if is_word(flag, "XX") {
            &mut condition.xx
        } else if is_word(flag, "GT") {
            &mut condition.gt
        } else if is_word(flag, "LT") {
            &mut condition.lt
        } else {
            return Executed::reply(Reply::Error(format!(
                "ERR Unsupported option {}",
                String::from_utf8_lossy(flag)
            )));
        };
        *set = true;
    }
    if condition.nx && (condition.xx || condition.gt || condition.lt) {
        return Executed::reply(Reply::error(
            "ERR NX and XX, GT or LT options at the same time are not compatible",
        ));
    }
    if condition.gt && condition.lt {
        return Executed::reply(Reply::error(
            "ERR GT and LT options at the same time are not compatible",
        ));
    }
    let Some(time) = parse_i64(&args[2]) else {
        return Executed::reply(not_an_integer());
    };
    let seconds = name == "expire" || name == "expireat";
    let relative = name == "expire" || name == "pexpire";
    let base = if relative {
        i64::try_from(now_ms()).unwrap_or(i64::MAX)
    } else {
        0
    };
    let at_ms = if seconds {
        time.checked_mul(1000)
    } else {
        Some(time)
    }
    .and_then(|ms| ms.checked_add(base));
    let Some(at_ms) = at_ms else {
        return Executed::reply(Reply::Error(format!(
            "ERR invalid expire time in '{name}' command"
        )));
    };
    let (set, ticket) = keyspace.expire_at(&args[1], at_ms, condition);
    Executed::logged(Reply::Integer(i64::from(set)), ticket)
}

/// `TTL key` (seconds, rounded) and `PTTL key` (milliseconds): -2 for a missing key, -1
/// for one without expiry.
pub fn ttl(keyspace: &Keyspace, args: &[Bytes], millis: bool) -> Reply {
    Reply::Integer(match keyspace.ttl(&args[1]) {
        Ttl::Missing => -2,
        Ttl::Persistent => -1,
        Ttl::Ms(ms) if millis => i64::try_from(ms).unwrap_or(i64::MAX),
        // Rounded to the nearest second, as Redis does.
        Ttl::Ms(ms) => i64::try_from(ms.saturating_add(500) / 1000).unwrap_or(i64::MAX),
    })
}

/// `PERSIST key`: 1 if an expiry was removed.
pub fn persist(keyspace: &Keyspace, args: &[Bytes]) -> Executed {
    let (removed, ticket) = keyspace.persist(&args[1]);
    Executed::logged(Reply::Integer(i64::from(removed)), ticket)
}

/// `RENAME key newkey`.
pub fn rename(keyspace: &Keyspace, args: &[Bytes]) -> Executed {
    match keyspace.rename(&args[1], &args[2]) {
        Ok(ticket) => Executed::logged(Reply::Ok, ticket),
        Err(RenameError::NoSuchKey) => Executed::reply(Reply::error("ERR no such key")),
    }
}
