//! `MEMORY USAGE key [SAMPLES count]` and `MEMORY HELP`.
//!
//! The usage of a key is its value's bytes (the filter's bits and bookkeeping, what
//! `used_memory_dataset` sums) plus what the key costs the keyspace's map: the key's own
//! bytes, the map entry (the key handle, the value's handle, its expiry, its size and its
//! access stamp) and the map's control byte. `SAMPLES` is accepted and changes nothing:
//! the figure is exact, not sampled.

use bloomkit_commands::args::{is_word, parse_i64};
use bloomkit_commands::errors::{syntax_error, wrong_arity};
use bloomkit_commands::table::CommandSpec;
use bloomkit_commands::Reply;
use bytes::Bytes;

use super::help::help;
use crate::errors::unknown_subcommand;
use crate::keyspace::Keyspace;

/// `MEMORY USAGE key [SAMPLES count]`, `MEMORY HELP`.
pub fn memory(keyspace: &Keyspace, spec: &CommandSpec, args: &[Bytes]) -> Reply {
    let Some(sub) = spec.subcommand(&args[1]) else {
        return unknown_subcommand("memory", &args[1]);
    };
    if !sub.accepts(args.len()) {
        return wrong_arity(sub.name);
    }
    match sub.name {
        "memory|usage" => {
            match &args[3..] {
                [] => {}
                [word, count] if is_word(word, "SAMPLES") => {
                    if parse_i64(count).is_none_or(|n| n < 0) {
                        return syntax_error();
                    }
                }
                _ => return syntax_error(),
            }
            keyspace
                .memory_usage(&args[2])
                .map_or(Reply::Null, |bytes| Reply::Integer(bytes as i64))
        }
        "memory|help" => help(
            "MEMORY",
            &[
                "USAGE <key> [SAMPLES <count>]",
                "    Return memory in bytes used by <key> and its value. Nested values are",
                "    counted exactly: SAMPLES is accepted and changes nothing.",
            ],
        ),
        _ => unknown_subcommand("memory", &args[1]),
    }
}
