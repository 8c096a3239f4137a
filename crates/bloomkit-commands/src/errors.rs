//! Error replies answered by more than one command, each written once: Redis's generic ones
//! (which a host's own commands answer too) and RedisBloom's common ones.
//!
//! The texts are Redis's and RedisBloom's exactly: clients match on them (redis-py raises
//! `ResponseError` subclasses by the first word, test suites compare whole strings).

use crate::reply::Reply;

/// `ERR wrong number of arguments for 'name' command`, with the name as Redis 7 prints it:
/// lower-case, and `container|sub` for a subcommand (`client|setname`).
///
/// # Examples
///
/// ```
/// use bloomkit_commands::errors::wrong_arity;
/// use bloomkit_commands::Reply;
///
/// assert_eq!(
///     wrong_arity("bf.add"),
///     Reply::error("ERR wrong number of arguments for 'bf.add' command")
/// );
/// ```
pub fn wrong_arity(name: &str) -> Reply {
    Reply::Error(format!(
        "ERR wrong number of arguments for '{name}' command"
    ))
}

/// `ERR syntax error`.
pub fn syntax_error() -> Reply {
    Reply::error("ERR syntax error")
}

/// `ERR value is not an integer or out of range`.
pub fn not_an_integer() -> Reply {
    Reply::error("ERR value is not an integer or out of range")
}

/// A key of another type: Redis's text, which RedisBloom answers too.
pub const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";

/// An allocation past `maxmemory`: Redis's own text for deny-oom commands.
pub const OOM: &str = "OOM command not allowed when used memory > 'maxmemory'.";

/// A missing key where a filter command needs one (RedisBloom's `not found`).
pub const NOT_FOUND: &str = "ERR not found";

/// `RESERVE` (or a dump's header) for a key that exists.
pub const ITEM_EXISTS: &str = "ERR item exists";

/// A filter larger than the machine can give, or whose allocation failed.
pub const INSUFFICIENT_MEMORY: &str = "ERR Insufficient memory to create filter";

/// A capacity that is not a number in range (`BF.INSERT`/`CF.RESERVE`/`CF.INSERT`
/// `CAPACITY`): RedisBloom's text, without a prefix.
pub const BAD_CAPACITY: &str = "Bad capacity";

/// An option `BF.INSERT`/`CF.INSERT` does not know: RedisBloom's text, without a prefix.
pub const UNKNOWN_ARGUMENT: &str = "Unknown argument received";

/// A cuckoo filter that may not grow (`EXPANSION 0`) and has no room for an item.
pub const CF_FULL: &str = "Filter is full";

/// A cuckoo filter that has as many sub-filters as `MAXEXPANSIONS` (or `cf-max-expansions`)
/// allows and has no room for an item.
pub const CF_MAX_EXPANSIONS_REACHED: &str = "Maximum expansions reached";

/// A `CF.SCANDUMP`/`CF.LOADCHUNK` iterator that is not a number, or out of range.
pub const INVALID_POSITION: &str = "Invalid position";

/// A `BF.LOADCHUNK`/`AF.LOADCHUNK` iterator that is not a number, refused while parsing.
pub const ITER_NOT_NUMERIC: &str = "ERR Second argument must be numeric";

/// A `BF.SCANDUMP`/`AF.SCANDUMP` iterator that is not a number: RedisBloom refuses it only
/// once it has found the key, and without the `ERR` prefix `LOADCHUNK`'s refusal has.
pub const SCANDUMP_ITER_NOT_NUMERIC: &str = "Second argument must be numeric";
