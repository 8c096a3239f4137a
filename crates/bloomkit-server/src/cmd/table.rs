//! The command table: every command the server answers, as `COMMAND` describes it.
//!
//! The dispatcher checks generic commands' argument counts against [`GENERIC`] (the way
//! Redis checks arity before a command runs) and lets the ones flagged `no_auth` through
//! before `AUTH`. `COMMAND`, `COMMAND INFO` and `COMMAND DOCS` report both tables, so
//! redis-cli's hints and redis-py's cluster key lookup see what Redis 8 would show.

/// One command (or subcommand) as Redis's command table describes it.
#[derive(Debug)]
pub struct CommandSpec {
    /// Lower-case name; subcommands are `container|sub` (`client|setname`), as Redis 7
    /// names them in errors.
    pub name: &'static str,
    /// Argument count including the name: `n` exactly, or `-n` for at least `n`.
    pub arity: i64,
    /// Redis's command flags (`write`, `readonly`, `fast`, `no_auth`...).
    pub flags: &'static [&'static str],
    /// Position of the first key (0: none).
    pub first_key: i64,
    /// Position of the last key (-1: the last argument).
    pub last_key: i64,
    /// Step between keys.
    pub step: i64,
    /// ACL categories (`@keyspace`, `@read`...).
    pub acl: &'static [&'static str],
    /// `COMMAND DOCS` group.
    pub group: &'static str,
    /// `COMMAND DOCS` summary.
    pub summary: &'static str,
    /// The Redis (or RedisBloom) version that introduced it.
    pub since: &'static str,
    /// Subcommands (`CLIENT SETNAME`...).
    pub subcommands: &'static [CommandSpec],
}

impl CommandSpec {
    /// Whether `argc` arguments (name included) satisfy the arity.
    pub fn accepts(&self, argc: usize) -> bool {
        let argc = i64::try_from(argc).unwrap_or(i64::MAX);
        if self.arity >= 0 {
            argc == self.arity
        } else {
            argc >= -self.arity
        }
    }

    /// Whether the command may run before `AUTH`.
    pub fn no_auth(&self) -> bool {
        self.flags.contains(&"no_auth")
    }

    /// The subcommand named `name` (any case).
    pub fn subcommand(&self, name: &[u8]) -> Option<&'static CommandSpec> {
        self.subcommands.iter().find(|sub| {
            sub.name
                .split_once('|')
                .is_some_and(|(_, sub)| sub.as_bytes().eq_ignore_ascii_case(name))
        })
    }
}

/// The generic command named `name` (any case).
pub fn lookup(name: &[u8]) -> Option<&'static CommandSpec> {
    GENERIC
        .iter()
        .find(|spec| spec.name.as_bytes().eq_ignore_ascii_case(name))
}

/// Any command named `name` (any case), generic or filter: for `COMMAND INFO`/`DOCS`.
pub fn lookup_any(name: &[u8]) -> Option<&'static CommandSpec> {
    all().find(|spec| spec.name.as_bytes().eq_ignore_ascii_case(name))
}

/// Every command, generic first.
pub fn all() -> impl Iterator<Item = &'static CommandSpec> {
    GENERIC.iter().chain(FILTER.iter())
}

/// A command without keys or subcommands: no key positions and a key step of 0, as
/// Redis reports them.
const fn plain(
    name: &'static str,
    arity: i64,
    flags: &'static [&'static str],
    acl: &'static [&'static str],
    group: &'static str,
    summary: &'static str,
    since: &'static str,
) -> CommandSpec {
    let mut spec = keyed(name, arity, flags, (0, 0), acl, group, summary, since);
    spec.step = 0;
    spec
}

/// A command whose keys are arguments `first..=last` (`last` -1: to the end).
#[allow(clippy::too_many_arguments)]
const fn keyed(
    name: &'static str,
    arity: i64,
    flags: &'static [&'static str],
    keys: (i64, i64),
    acl: &'static [&'static str],
    group: &'static str,
    summary: &'static str,
    since: &'static str,
) -> CommandSpec {
    CommandSpec {
        name,
        arity,
        flags,
        first_key: keys.0,
        last_key: keys.1,
        step: 1,
        acl,
        group,
        summary,
        since,
        subcommands: &[],
    }
}

/// A container of subcommands (`CLIENT`, `CONFIG`, `COMMAND`).
const fn container(
    name: &'static str,
    arity: i64,
    acl: &'static [&'static str],
    group: &'static str,
    summary: &'static str,
    since: &'static str,
    subcommands: &'static [CommandSpec],
) -> CommandSpec {
    CommandSpec {
        name,
        arity,
        flags: &[],
        first_key: 0,
        last_key: 0,
        step: 0,
        acl,
        group,
        summary,
        since,
        subcommands,
    }
}

const CONN: &str = "connection";
const KEYSPACE: &str = "generic";
const SERVER: &str = "server";
const FAST_CONN: &[&str] = &["@fast", "@connection"];
const SLOW_CONN: &[&str] = &["@slow", "@connection"];
const NO_AUTH: &[&str] = &[
    "noscript",
    "loading",
    "stale",
    "fast",
    "no_auth",
    "allow_busy",
];
const READ_FAST: &[&str] = &["@keyspace", "@read", "@fast"];
const WRITE_FAST: &[&str] = &["@keyspace", "@write", "@fast"];
const WRITE_SLOW: &[&str] = &["@keyspace", "@write", "@slow"];
const ADMIN: &[&str] = &["@admin", "@slow", "@dangerous"];

/// The generic commands the server answers (everything but `BF.*`/`CF.*`).
#[rustfmt::skip]
pub static GENERIC: &[CommandSpec] = &[
    plain("ping", -1, &["fast"], FAST_CONN, CONN, "Returns the server's liveliness response.", "1.0.0"),
    plain("echo", 2, &["fast"], FAST_CONN, CONN, "Returns the given string.", "1.0.0"),
    plain("hello", -1, NO_AUTH, FAST_CONN, CONN, "Handshakes with the server: protocol version, authentication, client name.", "6.0.0"),
    plain("auth", -2, NO_AUTH, FAST_CONN, CONN, "Authenticates the connection.", "1.0.0"),
    plain("select", 2, &["loading", "stale", "fast"], FAST_CONN, CONN, "Changes the selected database (only 0 exists).", "1.0.0"),
    plain("quit", -1, &["allow_busy", "noscript", "loading", "stale", "fast", "no_auth"], FAST_CONN, CONN, "Closes the connection.", "1.0.0"),
    container("client", -2, SLOW_CONN, CONN, "A container for client connection commands.", "2.4.0", &[
        plain("client|id", 2, &["noscript", "loading", "stale"], SLOW_CONN, CONN, "Returns the unique client ID of the connection.", "5.0.0"),
        plain("client|getname", 2, &["noscript", "loading", "stale"], SLOW_CONN, CONN, "Returns the name of the connection.", "2.6.9"),
        plain("client|setname", 3, &["noscript", "loading", "stale"], SLOW_CONN, CONN, "Sets the connection name.", "2.6.9"),
        plain("client|setinfo", 4, &["noscript", "loading", "stale"], SLOW_CONN, CONN, "Sets information specific to the client or connection.", "7.2.0"),
        plain("client|help", 2, &["loading", "stale"], SLOW_CONN, CONN, "Returns helpful text about the different subcommands.", "5.0.0"),
    ]),
    container("command", -1, SLOW_CONN, SERVER, "Returns detailed information about all commands.", "2.8.13", &[
        plain("command|count", 2, &["loading", "stale"], SLOW_CONN, SERVER, "Returns a count of commands.", "2.8.13"),
        plain("command|info", -2, &["loading", "stale"], SLOW_CONN, SERVER, "Returns information about one, multiple or all commands.", "2.8.13"),
        plain("command|docs", -2, &["loading", "stale"], SLOW_CONN, SERVER, "Returns documentary information about one, multiple or all commands.", "7.0.0"),
        plain("command|list", -2, &["loading", "stale"], SLOW_CONN, SERVER, "Returns a list of command names.", "7.0.0"),
        plain("command|help", 2, &["loading", "stale"], SLOW_CONN, SERVER, "Returns helpful text about the different subcommands.", "5.0.0"),
    ]),
    container("config", -2, &["@slow"], SERVER, "A container for server configuration commands.", "2.0.0", &[
        plain("config|get", -3, &["admin", "noscript", "loading", "stale"], ADMIN, SERVER, "Returns the effective values of configuration parameters.", "2.0.0"),
        plain("config|set", -4, &["admin", "noscript", "loading", "stale"], ADMIN, SERVER, "Sets configuration parameters in-flight.", "2.0.0"),
        plain("config|help", 2, &["loading", "stale"], &["@slow"], SERVER, "Returns helpful text about the different subcommands.", "5.0.0"),
    ]),
    plain("info", -1, &["loading", "stale"], &["@slow", "@dangerous"], SERVER, "Returns information and statistics about the server.", "1.0.0"),
    plain("dbsize", 1, &["readonly", "fast"], READ_FAST, SERVER, "Returns the number of keys in the database.", "1.0.0"),
    plain("flushdb", -1, &["write"], &["@keyspace", "@write", "@slow", "@dangerous"], SERVER, "Removes all keys from the current database.", "1.0.0"),
    plain("flushall", -1, &["write"], &["@keyspace", "@write", "@slow", "@dangerous"], SERVER, "Removes all keys from all databases.", "1.0.0"),
    plain("save", 1, &["admin", "noscript", "no_async_loading", "no_multi"], ADMIN, SERVER, "Synchronously saves the database to disk.", "1.0.0"),
    plain("bgsave", -1, &["admin", "noscript", "no_async_loading"], ADMIN, SERVER, "Asynchronously saves the database to disk.", "1.0.0"),
    plain("shutdown", -1, &["admin", "noscript", "loading", "stale", "no_multi", "allow_busy"], ADMIN, SERVER, "Saves the database to disk and shuts down the server.", "1.0.0"),
    keyed("del", -2, &["write"], (1, -1), WRITE_SLOW, KEYSPACE, "Deletes one or more keys.", "1.0.0"),
    keyed("unlink", -2, &["write", "fast"], (1, -1), WRITE_FAST, KEYSPACE, "Asynchronously deletes one or more keys.", "4.0.0"),
    keyed("exists", -2, &["readonly", "fast"], (1, -1), READ_FAST, KEYSPACE, "Determines whether one or more keys exist.", "1.0.0"),
    keyed("type", 2, &["readonly", "fast"], (1, 1), READ_FAST, KEYSPACE, "Determines the type of value stored at a key.", "1.0.0"),
    plain("keys", 2, &["readonly"], &["@keyspace", "@read", "@slow", "@dangerous"], KEYSPACE, "Returns all key names that match a pattern.", "1.0.0"),
    plain("scan", -2, &["readonly"], &["@keyspace", "@read", "@slow"], KEYSPACE, "Iterates over the key names in the database.", "2.8.0"),
    keyed("expire", -3, &["write", "fast"], (1, 1), WRITE_FAST, KEYSPACE, "Sets the expiration time of a key in seconds.", "1.0.0"),
    keyed("pexpire", -3, &["write", "fast"], (1, 1), WRITE_FAST, KEYSPACE, "Sets the expiration time of a key in milliseconds.", "2.6.0"),
    keyed("expireat", -3, &["write", "fast"], (1, 1), WRITE_FAST, KEYSPACE, "Sets the expiration time of a key to a Unix timestamp.", "1.2.0"),
    keyed("pexpireat", -3, &["write", "fast"], (1, 1), WRITE_FAST, KEYSPACE, "Sets the expiration time of a key to a Unix milliseconds timestamp.", "2.6.0"),
    keyed("ttl", 2, &["readonly", "fast"], (1, 1), READ_FAST, KEYSPACE, "Returns the expiration time in seconds of a key.", "1.0.0"),
    keyed("pttl", 2, &["readonly", "fast"], (1, 1), READ_FAST, KEYSPACE, "Returns the expiration time in milliseconds of a key.", "2.6.0"),
    keyed("persist", 2, &["write", "fast"], (1, 1), WRITE_FAST, KEYSPACE, "Removes the expiration time of a key.", "2.2.0"),
    keyed("rename", 3, &["write"], (1, 2), WRITE_SLOW, KEYSPACE, "Renames a key and overwrites the destination.", "1.0.0"),
];

const BF: &str = "bf";
const CF: &str = "cf";
const MODULE_WRITE: &[&str] = &["write", "denyoom", "module"];
const MODULE_READ: &[&str] = &["readonly", "module"];
const BLOOM_WRITE: &[&str] = &["@write", "@bloom"];
const BLOOM_READ: &[&str] = &["@read", "@bloom"];
const CUCKOO_WRITE: &[&str] = &["@write", "@cuckoo"];
const CUCKOO_READ: &[&str] = &["@read", "@cuckoo"];

/// The filter commands, for `COMMAND` only: the dispatcher routes `BF.*`/`CF.*` through
/// [`bloomkit_commands::FilterCommand::parse`], which checks their arguments itself (module
/// commands report arity -1, as RedisBloom's do).
#[rustfmt::skip]
pub static FILTER: &[CommandSpec] = &[
    keyed("bf.reserve", -1, MODULE_WRITE, (1, 1), BLOOM_WRITE, BF, "Creates a new Bloom Filter.", "1.0.0"),
    keyed("bf.add", -1, MODULE_WRITE, (1, 1), BLOOM_WRITE, BF, "Adds an item to a Bloom Filter.", "1.0.0"),
    keyed("bf.madd", -1, MODULE_WRITE, (1, 1), BLOOM_WRITE, BF, "Adds one or more items to a Bloom Filter. A filter will be created if it does not exist.", "1.0.0"),
    keyed("bf.insert", -1, MODULE_WRITE, (1, 1), BLOOM_WRITE, BF, "Adds one or more items to a Bloom Filter. A filter will be created if it does not exist.", "1.0.0"),
    keyed("bf.exists", -1, MODULE_READ, (1, 1), BLOOM_READ, BF, "Checks whether an item exists in a Bloom Filter.", "1.0.0"),
    keyed("bf.mexists", -1, MODULE_READ, (1, 1), BLOOM_READ, BF, "Checks whether one or more items exist in a Bloom Filter.", "1.0.0"),
    keyed("bf.info", -1, MODULE_READ, (1, 1), BLOOM_READ, BF, "Returns information about a Bloom Filter.", "1.0.0"),
    keyed("bf.card", -1, MODULE_READ, (1, 1), BLOOM_READ, BF, "Returns the cardinality of a Bloom filter.", "2.4.4"),
    keyed("bf.scandump", -1, MODULE_READ, (1, 1), BLOOM_READ, BF, "Begins an incremental save of the bloom filter.", "1.0.0"),
    keyed("bf.loadchunk", -1, MODULE_WRITE, (1, 1), BLOOM_WRITE, BF, "Restores a filter previously saved using SCANDUMP.", "1.0.0"),
    keyed("cf.reserve", -1, MODULE_WRITE, (1, 1), CUCKOO_WRITE, CF, "Creates a new Cuckoo Filter.", "1.0.0"),
    keyed("cf.add", -1, MODULE_WRITE, (1, 1), CUCKOO_WRITE, CF, "Adds an item to a Cuckoo Filter.", "1.0.0"),
    keyed("cf.addnx", -1, MODULE_WRITE, (1, 1), CUCKOO_WRITE, CF, "Adds an item to a Cuckoo Filter if the item did not exist previously.", "1.0.0"),
    keyed("cf.insert", -1, MODULE_WRITE, (1, 1), CUCKOO_WRITE, CF, "Adds one or more items to a Cuckoo Filter. A filter will be created if it does not exist.", "1.0.0"),
    keyed("cf.insertnx", -1, MODULE_WRITE, (1, 1), CUCKOO_WRITE, CF, "Adds one or more items to a Cuckoo Filter if the items did not exist previously.", "1.0.0"),
    keyed("cf.exists", -1, MODULE_READ, (1, 1), CUCKOO_READ, CF, "Checks if an item exists in a Cuckoo Filter.", "1.0.0"),
    keyed("cf.mexists", -1, MODULE_READ, (1, 1), CUCKOO_READ, CF, "Checks if one or more items exist in a Cuckoo Filter.", "1.0.0"),
    keyed("cf.del", -1, &["write", "module"], (1, 1), CUCKOO_WRITE, CF, "Deletes an item from a Cuckoo Filter.", "1.0.0"),
    keyed("cf.count", -1, MODULE_READ, (1, 1), CUCKOO_READ, CF, "Return the number of times an item might be in a Cuckoo Filter.", "1.0.0"),
    keyed("cf.info", -1, MODULE_READ, (1, 1), CUCKOO_READ, CF, "Returns information about a Cuckoo Filter.", "1.0.0"),
    keyed("cf.scandump", -1, MODULE_READ, (1, 1), CUCKOO_READ, CF, "Begins an incremental save of the bloom filter.", "1.0.0"),
    keyed("cf.loadchunk", -1, MODULE_WRITE, (1, 1), CUCKOO_WRITE, CF, "Restores a filter previously saved using SCANDUMP.", "1.0.0"),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arity_as_redis_counts_it() {
        let echo = lookup(b"ECHO").unwrap();
        assert!(echo.accepts(2) && !echo.accepts(1) && !echo.accepts(3));
        let del = lookup(b"del").unwrap();
        assert!(!del.accepts(1) && del.accepts(2) && del.accepts(10));
    }

    #[test]
    fn subcommands_by_name() {
        let client = lookup(b"client").unwrap();
        assert_eq!(
            client.subcommand(b"SETNAME").unwrap().name,
            "client|setname"
        );
        assert!(client.subcommand(b"nope").is_none());
    }

    #[test]
    fn names_are_unique_and_lower_case() {
        let mut names: Vec<&str> = all().map(|c| c.name).collect();
        assert!(names.iter().all(|n| *n == n.to_ascii_lowercase()));
        let count = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), count);
        assert!(
            lookup(b"bf.add").is_none(),
            "filter commands never route as generic"
        );
        assert!(lookup_any(b"BF.ADD").is_some());
    }
}
