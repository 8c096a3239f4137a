//! What a key is and when it was used, without its value: `OBJECT ENCODING|REFCOUNT|IDLETIME|
//! FREQ|HELP`, `TOUCH`, `RANDOMKEY`.
//!
//! Replies and errors are Redis 7's for a module's value, which is what a RedisBloom key is
//! there: encoding `raw`, one reference, the idle time in seconds (see
//! [`crate::keyspace::AccessStamp`]), and no access frequency, which Redis tracks only under
//! an LFU `maxmemory-policy`.

use bloomkit_commands::table::CommandSpec;
use bloomkit_commands::Reply;
use bytes::Bytes;

use super::help::help;
use crate::errors::unknown_subcommand;
use crate::keyspace::Keyspace;

/// `TOUCH key...`: how many of the keys exist; each is stamped as just used.
pub fn touch(keyspace: &Keyspace, args: &[Bytes]) -> Reply {
    Reply::Integer(keyspace.touch(&args[1..]))
}

/// `RANDOMKEY`: a random key, or nil when there is none.
pub fn randomkey(keyspace: &Keyspace) -> Reply {
    keyspace.random_key().map_or(Reply::Null, Reply::Bulk)
}

/// `OBJECT ENCODING|REFCOUNT|IDLETIME|FREQ key` and `OBJECT HELP`. A missing key answers nil
/// (before the FREQ check, as Redis looks the key up first).
pub fn object(keyspace: &Keyspace, spec: &CommandSpec, args: &[Bytes]) -> Reply {
    let Some(sub) = spec.subcommand(&args[1]) else {
        return unknown_subcommand("object", &args[1]);
    };
    if !sub.accepts(args.len()) {
        return bloomkit_commands::errors::wrong_arity(sub.name);
    }
    if sub.name == "object|help" {
        return help(
            "OBJECT",
            &[
                "ENCODING <key>",
                "    Return the kind of internal representation used in order to store the value",
                "    associated with a <key>.",
                "FREQ <key>",
                "    Return the access frequency index of the <key>. The returned integer is",
                "    proportional to the logarithm of the recent access frequency of the key.",
                "IDLETIME <key>",
                "    Return the idle time of the <key>, that is the approximated number of",
                "    seconds elapsed since the last access to the key.",
                "REFCOUNT <key>",
                "    Return the number of references of the value associated with the specified",
                "    <key>.",
            ],
        );
    }
    let Some(info) = keyspace.object_info(&args[2]) else {
        return Reply::Null;
    };
    match sub.name {
        // A module's value is stored as one opaque object: Redis names its encoding "raw".
        "object|encoding" => Reply::bulk("raw"),
        // Each key owns its value, as each Redis key owns its module object (a COPY or a
        // snapshot in progress shares it only until a write makes it its own).
        "object|refcount" => Reply::Integer(1),
        // Redis keeps one of the two per key, by the `maxmemory-policy`, and answers only that
        // one; this server stamps both, and answers as Redis does.
        "object|idletime" if keyspace.eviction().policy().is_lfu() => Reply::error(
            "ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that \
             when switching between policies at runtime LRU and LFU data will take some time \
             to adjust.",
        ),
        "object|idletime" => Reply::Integer(i64::from(info.idle_seconds)),
        _ if keyspace.eviction().policy().is_lfu() => Reply::Integer(i64::from(info.frequency)),
        _ => Reply::error(
            "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please \
             note that when switching between policies at runtime LRU and LFU data will take \
             some time to adjust.",
        ),
    }
}
