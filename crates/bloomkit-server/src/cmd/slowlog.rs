//! `SLOWLOG GET [count] | LEN | RESET | HELP`, over the server's slow log
//! ([`crate::slowlog`]), with Redis's replies.

use bloomkit_commands::args::parse_i64;
use bloomkit_commands::errors::{not_an_integer, wrong_arity};
use bloomkit_commands::table::CommandSpec;
use bloomkit_commands::Reply;
use bytes::Bytes;

use super::help::help;
use crate::errors::unknown_subcommand;
use crate::shared::Shared;

/// `SLOWLOG GET` without a count: Redis's ten.
const DEFAULT_COUNT: usize = 10;

/// `SLOWLOG GET [count]`, `SLOWLOG LEN`, `SLOWLOG RESET`, `SLOWLOG HELP`.
pub fn slowlog(shared: &Shared, spec: &CommandSpec, args: &[Bytes]) -> Reply {
    let Some(sub) = spec.subcommand(&args[1]) else {
        return unknown_subcommand("slowlog", &args[1]);
    };
    if !sub.accepts(args.len()) {
        return wrong_arity(sub.name);
    }
    let log = shared.slowlog();
    match sub.name {
        "slowlog|get" => {
            let count = match args.get(2).map(|n| parse_i64(n)) {
                None => Some(DEFAULT_COUNT),
                Some(None) => return not_an_integer(),
                Some(Some(-1)) => None,
                Some(Some(n)) if n < -1 => {
                    return Reply::error("ERR count should be greater than or equal to -1")
                }
                Some(Some(n)) => Some(usize::try_from(n).unwrap_or(usize::MAX)),
            };
            Reply::Array(
                log.get(count)
                    .into_iter()
                    .map(|entry| {
                        Reply::Array(vec![
                            Reply::Integer(entry.id as i64),
                            Reply::Integer(entry.unix_time as i64),
                            Reply::Integer(entry.micros.min(i64::MAX as u64) as i64),
                            Reply::Array(entry.args.into_iter().map(Reply::Bulk).collect()),
                            Reply::bulk(entry.client_addr),
                            Reply::Bulk(entry.client_name),
                        ])
                    })
                    .collect(),
            )
        }
        "slowlog|len" => Reply::Integer(log.len() as i64),
        "slowlog|reset" => {
            log.reset();
            Reply::Ok
        }
        "slowlog|help" => help(
            "SLOWLOG",
            &[
                "GET [<count>]",
                "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
                "    Entries are made of:",
                "    id, timestamp, time in microseconds, arguments array, client IP and port,",
                "    client name",
                "LEN",
                "    Return the length of the slowlog.",
                "RESET",
                "    Reset the slowlog.",
            ],
        ),
        _ => unknown_subcommand("slowlog", &args[1]),
    }
}
