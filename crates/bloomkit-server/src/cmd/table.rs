//! Every command the server answers: the generic commands' rows, each with its handler, and
//! the command layer's `BF.*`/`CF.*` rows ([`FILTER_COMMANDS`]), as `COMMAND` describes them
//! and as the dispatcher routes by ([`route`]).
//!
//! The dispatcher checks a generic command's argument count against its row (the way Redis
//! checks arity before a command runs), lets the ones flagged [`Flag::NoAuth`] through before
//! `AUTH`, and calls the row's handler. `COMMAND`, `COMMAND INFO` and `COMMAND DOCS` report
//! both tables, so redis-cli's hints and redis-py's cluster key lookup see what Redis 8
//! would show.

use bloomkit_commands::table::Flag::{
    self, Admin, AllowBusy, Fast, Loading, NoAsyncLoading, NoAuth, NoMulti, Noscript, Readonly,
    Stale, Write,
};
use bloomkit_commands::table::{
    container, keyed, plain, CommandSpec, FilterSpec, NameKey, FILTER_COMMANDS,
};
use bloomkit_commands::Reply;

use super::{
    client, connection, debug, dump, keys, memory, module, object, server, slowlog, transaction,
    Call, Executed, Pending,
};

/// What runs a generic command.
type Handler = fn(&mut Call<'_>) -> Executed;

/// One generic command: how it presents, and its handler.
pub struct GenericSpec {
    /// The name, arity, flags, key positions and documentation.
    pub spec: CommandSpec,
    /// Whether `--enable-debug-command` decides who may run it (Redis 7's protected
    /// commands: `DEBUG`).
    pub protected: bool,
    /// Whether it walks every key (`KEYS`): it runs off the worker thread, and enters the
    /// keyspace's gate a shard at a time rather than for the whole walk.
    pub walks_every_key: bool,
    run: Handler,
}

impl GenericSpec {
    /// Runs the command; the dispatcher has checked its arity and authentication.
    pub fn run(&self, call: &mut Call<'_>) -> Executed {
        (self.run)(call)
    }
}

impl std::fmt::Debug for GenericSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GenericSpec")
            .field("spec", &self.spec)
            .finish_non_exhaustive()
    }
}

/// Where a command's name leads.
#[derive(Clone, Copy, Debug)]
pub enum Route {
    /// A generic command, run by its handler.
    Generic(&'static GenericSpec),
    /// A `BF.*`/`CF.*` command, parsed by the command layer and run on its key.
    Filter(&'static FilterSpec),
}

/// Rows are compared by name, which the table holds once each.
impl PartialEq for Route {
    fn eq(&self, other: &Route) -> bool {
        match (self, other) {
            (Route::Generic(a), Route::Generic(b)) => a.spec.name == b.spec.name,
            (Route::Filter(a), Route::Filter(b)) => a.spec.name == b.spec.name,
            _ => false,
        }
    }
}

/// The row for the command named `name` (any case): the filter commands' first, since
/// they are most of the traffic.
pub fn route(name: &[u8]) -> Option<Route> {
    let key = NameKey::of_request(name)?;
    if let Some(row) = bloomkit_commands::table::find(key) {
        return Some(Route::Filter(row));
    }
    generic_by_key(key).map(Route::Generic)
}

/// The generic command named `name` (any case).
pub fn generic(name: &[u8]) -> Option<&'static GenericSpec> {
    NameKey::of_request(name).and_then(generic_by_key)
}

fn generic_by_key(key: NameKey) -> Option<&'static GenericSpec> {
    GENERIC.iter().find(|row| row.spec.key == key)
}

/// Any command named `name` (any case), generic or filter: for `COMMAND INFO`/`DOCS`.
pub fn lookup_any(name: &[u8]) -> Option<&'static CommandSpec> {
    all().find(|spec| spec.name.as_bytes().eq_ignore_ascii_case(name))
}

/// Every command, generic first.
pub fn all() -> impl Iterator<Item = &'static CommandSpec> {
    GENERIC
        .iter()
        .map(|row| &row.spec)
        .chain(FILTER_COMMANDS.iter().map(|row| &row.spec))
}

const fn generic_row(spec: CommandSpec, run: Handler) -> GenericSpec {
    GenericSpec {
        spec,
        protected: false,
        walks_every_key: false,
        run,
    }
}

/// A row that only clients `--enable-debug-command` allows may run.
const fn protected_row(spec: CommandSpec, run: Handler) -> GenericSpec {
    GenericSpec {
        protected: true,
        ..generic_row(spec, run)
    }
}

/// A row whose command walks every key.
const fn walking_row(spec: CommandSpec, run: Handler) -> GenericSpec {
    GenericSpec {
        walks_every_key: true,
        ..generic_row(spec, run)
    }
}

const CONN: &str = "connection";
const KEYSPACE: &str = "generic";
const SERVER: &str = "server";
const FAST_CONN: &[&str] = &["@fast", "@connection"];
const SLOW_CONN: &[&str] = &["@slow", "@connection"];
const NO_AUTH: &[Flag] = &[Noscript, Loading, Stale, Fast, NoAuth, AllowBusy];
const READ_FAST: &[&str] = &["@keyspace", "@read", "@fast"];
const WRITE_FAST: &[&str] = &["@keyspace", "@write", "@fast"];
const WRITE_SLOW: &[&str] = &["@keyspace", "@write", "@slow"];
const ADMIN: &[&str] = &["@admin", "@slow", "@dangerous"];

/// The generic commands the server answers (everything but `BF.*`/`CF.*`), in the order
/// `COMMAND` lists them.
#[rustfmt::skip]
pub static GENERIC: &[GenericSpec] = &[
    generic_row(plain("ping", -1, &[Fast], FAST_CONN, CONN, "Returns the server's liveliness response.", "1.0.0"), |c| Executed::reply(connection::ping(c.args))),
    generic_row(plain("echo", 2, &[Fast], FAST_CONN, CONN, "Returns the given string.", "1.0.0"), |c| Executed::reply(connection::echo(c.args))),
    generic_row(plain("hello", -1, NO_AUTH, FAST_CONN, CONN, "Handshakes with the server: protocol version, authentication, client name.", "6.0.0"), |c| Executed::reply(connection::hello(c.shared, c.session, c.args))),
    generic_row(plain("auth", -2, NO_AUTH, FAST_CONN, CONN, "Authenticates the connection.", "1.0.0"), |c| Executed::reply(connection::auth(c.shared, c.session, c.args))),
    generic_row(plain("select", 2, &[Loading, Stale, Fast], FAST_CONN, CONN, "Changes the selected database (only 0 exists).", "1.0.0"), |c| Executed::reply(connection::select(c.args))),
    generic_row(plain("quit", -1, &[AllowBusy, Noscript, Loading, Stale, Fast, NoAuth], FAST_CONN, CONN, "Closes the connection.", "1.0.0"), |_| Executed::closing(Some(Reply::Ok))),
    generic_row(container("client", -2, SLOW_CONN, CONN, "A container for client connection commands.", "2.4.0", &[
        plain("client|id", 2, &[Noscript, Loading, Stale], SLOW_CONN, CONN, "Returns the unique client ID of the connection.", "5.0.0"),
        plain("client|getname", 2, &[Noscript, Loading, Stale], SLOW_CONN, CONN, "Returns the name of the connection.", "2.6.9"),
        plain("client|setname", 3, &[Noscript, Loading, Stale], SLOW_CONN, CONN, "Sets the connection name.", "2.6.9"),
        plain("client|setinfo", 4, &[Noscript, Loading, Stale], SLOW_CONN, CONN, "Sets information specific to the client or connection.", "7.2.0"),
        plain("client|help", 2, &[Loading, Stale], SLOW_CONN, CONN, "Returns helpful text about the different subcommands.", "5.0.0"),
        plain("client|list", -2, &[Admin, Noscript, Loading, Stale], &["@admin", "@slow", "@dangerous", "@connection"], CONN, "Lists open connections.", "2.4.0"),
        plain("client|info", 2, &[Noscript, Loading, Stale], SLOW_CONN, CONN, "Returns information about the connection.", "6.2.0"),
        plain("client|kill", -3, &[Admin, Noscript, Loading, Stale], &["@admin", "@slow", "@dangerous", "@connection"], CONN, "Terminates open connections.", "2.4.0"),
    ]), client::client),
    generic_row(container("command", -1, SLOW_CONN, SERVER, "Returns detailed information about all commands.", "2.8.13", &[
        plain("command|count", 2, &[Loading, Stale], SLOW_CONN, SERVER, "Returns a count of commands.", "2.8.13"),
        plain("command|info", -2, &[Loading, Stale], SLOW_CONN, SERVER, "Returns information about one, multiple or all commands.", "2.8.13"),
        plain("command|docs", -2, &[Loading, Stale], SLOW_CONN, SERVER, "Returns documentary information about one, multiple or all commands.", "7.0.0"),
        plain("command|list", -2, &[Loading, Stale], SLOW_CONN, SERVER, "Returns a list of command names.", "7.0.0"),
        plain("command|help", 2, &[Loading, Stale], SLOW_CONN, SERVER, "Returns helpful text about the different subcommands.", "5.0.0"),
    ]), |c| Executed::reply(server::command(c.spec, c.args))),
    generic_row(container("config", -2, &["@slow"], SERVER, "A container for server configuration commands.", "2.0.0", &[
        plain("config|get", -3, &[Admin, Noscript, Loading, Stale], ADMIN, SERVER, "Returns the effective values of configuration parameters.", "2.0.0"),
        plain("config|set", -4, &[Admin, Noscript, Loading, Stale], ADMIN, SERVER, "Sets configuration parameters in-flight.", "2.0.0"),
        plain("config|help", 2, &[Loading, Stale], &["@slow"], SERVER, "Returns helpful text about the different subcommands.", "5.0.0"),
        plain("config|rewrite", 2, &[Admin, Noscript, Loading, Stale], ADMIN, SERVER, "Persists the effective configuration to file.", "2.8.0"),
    ]), |c| Executed::reply(server::config(c.shared, c.spec, c.args))),
    generic_row(plain("info", -1, &[Loading, Stale], &["@slow", "@dangerous"], SERVER, "Returns information and statistics about the server.", "1.0.0"), |c| Executed::reply(server::info(c.shared, c.args))),
    generic_row(plain("dbsize", 1, &[Readonly, Fast], READ_FAST, SERVER, "Returns the number of keys in the database.", "1.0.0"), |c| Executed::reply(keys::dbsize(c.shared.keyspace()))),
    generic_row(plain("flushdb", -1, &[Write], &["@keyspace", "@write", "@slow", "@dangerous"], SERVER, "Removes all keys from the current database.", "1.0.0"), |c| keys::flush(c.shared.keyspace(), c.args)),
    generic_row(plain("flushall", -1, &[Write], &["@keyspace", "@write", "@slow", "@dangerous"], SERVER, "Removes all keys from all databases.", "1.0.0"), |c| keys::flush(c.shared.keyspace(), c.args)),
    generic_row(plain("save", 1, &[Admin, Noscript, NoAsyncLoading, NoMulti], ADMIN, SERVER, "Synchronously saves the database to disk.", "1.0.0"), |_| Executed::pending(Pending::Save)),
    generic_row(plain("bgsave", -1, &[Admin, Noscript, NoAsyncLoading], ADMIN, SERVER, "Asynchronously saves the database to disk.", "1.0.0"), |c| Executed::reply(server::bgsave(c.shared, c.args))),
    generic_row(plain("shutdown", -1, &[Admin, Noscript, Loading, Stale, NoMulti, AllowBusy], ADMIN, SERVER, "Saves the database to disk and shuts down the server.", "1.0.0"), |c| match server::shutdown(c.shared, c.args) { Ok(()) => Executed::closing(None), Err(reply) => Executed::reply(reply) }),
    generic_row(keyed("del", -2, &[Write], (1, -1), WRITE_SLOW, KEYSPACE, "Deletes one or more keys.", "1.0.0"), |c| keys::del(c.shared.keyspace(), c.args)),
    generic_row(keyed("unlink", -2, &[Write, Fast], (1, -1), WRITE_FAST, KEYSPACE, "Asynchronously deletes one or more keys.", "4.0.0"), |c| keys::del(c.shared.keyspace(), c.args)),
    generic_row(keyed("exists", -2, &[Readonly, Fast], (1, -1), READ_FAST, KEYSPACE, "Determines whether one or more keys exist.", "1.0.0"), |c| Executed::reply(keys::exists(c.shared.keyspace(), c.args))),
    generic_row(keyed("type", 2, &[Readonly, Fast], (1, 1), READ_FAST, KEYSPACE, "Determines the type of value stored at a key.", "1.0.0"), |c| Executed::reply(keys::type_of(c.shared.keyspace(), c.args))),
    walking_row(plain("keys", 2, &[Readonly], &["@keyspace", "@read", "@slow", "@dangerous"], KEYSPACE, "Returns all key names that match a pattern.", "1.0.0"), |c| Executed::reply(keys::keys(c.shared.keyspace(), c.args))),
    generic_row(plain("scan", -2, &[Readonly], &["@keyspace", "@read", "@slow"], KEYSPACE, "Iterates over the key names in the database.", "2.8.0"), |c| Executed::reply(keys::scan(c.shared.keyspace(), c.args))),
    generic_row(keyed("expire", -3, &[Write, Fast], (1, 1), WRITE_FAST, KEYSPACE, "Sets the expiration time of a key in seconds.", "1.0.0"), |c| keys::expire(c.shared.keyspace(), c.spec.name, c.args)),
    generic_row(keyed("pexpire", -3, &[Write, Fast], (1, 1), WRITE_FAST, KEYSPACE, "Sets the expiration time of a key in milliseconds.", "2.6.0"), |c| keys::expire(c.shared.keyspace(), c.spec.name, c.args)),
    generic_row(keyed("expireat", -3, &[Write, Fast], (1, 1), WRITE_FAST, KEYSPACE, "Sets the expiration time of a key to a Unix timestamp.", "1.2.0"), |c| keys::expire(c.shared.keyspace(), c.spec.name, c.args)),
    generic_row(keyed("pexpireat", -3, &[Write, Fast], (1, 1), WRITE_FAST, KEYSPACE, "Sets the expiration time of a key to a Unix milliseconds timestamp.", "2.6.0"), |c| keys::expire(c.shared.keyspace(), c.spec.name, c.args)),
    generic_row(keyed("ttl", 2, &[Readonly, Fast], (1, 1), READ_FAST, KEYSPACE, "Returns the expiration time in seconds of a key.", "1.0.0"), |c| Executed::reply(keys::ttl(c.shared.keyspace(), c.args, false))),
    generic_row(keyed("pttl", 2, &[Readonly, Fast], (1, 1), READ_FAST, KEYSPACE, "Returns the expiration time in milliseconds of a key.", "2.6.0"), |c| Executed::reply(keys::ttl(c.shared.keyspace(), c.args, true))),
    generic_row(keyed("persist", 2, &[Write, Fast], (1, 1), WRITE_FAST, KEYSPACE, "Removes the expiration time of a key.", "2.2.0"), |c| keys::persist(c.shared.keyspace(), c.args)),
    generic_row(keyed("rename", 3, &[Write], (1, 2), WRITE_SLOW, KEYSPACE, "Renames a key and overwrites the destination.", "1.0.0"), |c| keys::rename(c.shared.keyspace(), c.args)),
    // ---- What an operator looks at: the slow log, a key's memory ----------------------
    generic_row(container("slowlog", -2, &["@slow"], SERVER, "A container for slow log commands.", "2.2.12", &[
        plain("slowlog|get", -2, &[Admin, Loading, Stale], ADMIN, SERVER, "Returns the slow log's entries.", "2.2.12"),
        plain("slowlog|len", 2, &[Admin, Loading, Stale], ADMIN, SERVER, "Returns the number of entries in the slow log.", "2.2.12"),
        plain("slowlog|reset", 2, &[Admin, Loading, Stale], ADMIN, SERVER, "Clears all entries from the slow log.", "2.2.12"),
        plain("slowlog|help", 2, &[Loading, Stale], &["@slow"], SERVER, "Show helpful text about the different subcommands.", "6.2.0"),
    ]), |c| Executed::reply(slowlog::slowlog(c.shared, c.spec, c.args))),
    generic_row(container("memory", -2, &["@slow"], SERVER, "A container for memory diagnostics commands.", "4.0.0", &[
        keyed("memory|usage", -3, &[Readonly], (2, 2), &["@read", "@slow"], SERVER, "Estimates the memory usage of a key.", "4.0.0"),
        plain("memory|help", 2, &[Loading, Stale], &["@slow"], SERVER, "Returns helpful text about the different subcommands.", "4.0.0"),
    ]), |c| Executed::reply(memory::memory(c.shared.keyspace(), c.spec, c.args))),
    // RedisBloom compatibility: the rest of what its clients and test suites send.
    generic_row(keyed("touch", -2, &[Readonly, Fast], (1, -1), READ_FAST, KEYSPACE, "Returns the number of existing keys out of those specified after updating the time they were last accessed.", "3.2.1"), |c| Executed::reply(object::touch(c.shared.keyspace(), c.args))),
    generic_row(plain("randomkey", 1, &[Readonly], &["@keyspace", "@read", "@slow"], KEYSPACE, "Returns a random key name from the database.", "1.0.0"), |c| Executed::reply(object::randomkey(c.shared.keyspace()))),
    generic_row(container("object", -2, &["@slow"], KEYSPACE, "A container for object introspection commands.", "2.2.3", &[
        keyed("object|encoding", 3, &[Readonly], (2, 2), &["@keyspace", "@read", "@slow"], KEYSPACE, "Returns the internal encoding of a Redis object.", "2.2.3"),
        keyed("object|freq", 3, &[Readonly], (2, 2), &["@keyspace", "@read", "@slow"], KEYSPACE, "Returns the logarithmic access frequency counter of a Redis object.", "4.0.0"),
        keyed("object|idletime", 3, &[Readonly], (2, 2), &["@keyspace", "@read", "@slow"], KEYSPACE, "Returns the time since the last access to a Redis object.", "2.2.3"),
        keyed("object|refcount", 3, &[Readonly], (2, 2), &["@keyspace", "@read", "@slow"], KEYSPACE, "Returns the reference count of a value of a key.", "2.2.3"),
        plain("object|help", 2, &[Loading, Stale], &["@keyspace", "@slow"], KEYSPACE, "Returns helpful text about the different subcommands.", "6.2.0"),
    ]), |c| Executed::reply(object::object(c.shared.keyspace(), c.spec, c.args))),
    generic_row(keyed("dump", 2, &[Readonly], (1, 1), &["@keyspace", "@read", "@slow"], KEYSPACE, "Returns a serialized representation of the value stored at a key.", "2.6.0"), |c| Executed::reply(dump::dump(c.shared.keyspace(), c.args))),
    generic_row(keyed("restore", -4, &[Write, Flag::DenyOom], (1, 1), &["@keyspace", "@write", "@slow", "@dangerous"], KEYSPACE, "Creates a key from the serialized representation of a value.", "2.6.0"), |c| dump::restore(c.shared.keyspace(), c.args)),
    generic_row(keyed("copy", -3, &[Write, Flag::DenyOom], (1, 2), WRITE_SLOW, KEYSPACE, "Copies the value of a key to a new key.", "6.2.0"), |c| dump::copy(c.shared.keyspace(), c.args)),
    generic_row(container("module", -2, &["@slow"], SERVER, "A container for module commands.", "4.0.0", &[
        plain("module|list", 2, &[Admin, Noscript], ADMIN, SERVER, "Returns all loaded modules.", "4.0.0"),
        plain("module|help", 2, &[Loading, Stale], &["@slow"], SERVER, "Returns helpful text about the different subcommands.", "5.0.0"),
    ]), |c| Executed::reply(module::module(c.spec, c.args))),
    protected_row(plain("debug", -2, &[Admin, Noscript, Loading, Stale], ADMIN, SERVER, "A container for debugging commands.", "1.0.0"), |c| debug::debug(c.args)),
    // Transactions (cmd/transaction.rs; EXEC's queue runs in dispatch/exec.rs).
    generic_row(plain("multi", 1, TXN_FLAGS, FAST_TXN, TXN, "Starts a transaction.", "1.2.0"), transaction::multi),
    generic_row(plain("exec", 1, &[Noscript, Loading, Stale], &["@slow", "@transaction"], TXN, "Executes all commands in a transaction.", "1.2.0"), transaction::exec),
    generic_row(plain("discard", 1, TXN_FLAGS, FAST_TXN, TXN, "Discards a transaction.", "2.0.0"), transaction::discard),
    generic_row(keyed("watch", -2, TXN_FLAGS, (1, -1), FAST_TXN, TXN, "Monitors changes to keys to determine the execution of a transaction.", "2.2.0"), transaction::watch),
    generic_row(plain("unwatch", 1, TXN_FLAGS, FAST_TXN, TXN, "Forgets about watched keys of a transaction.", "2.2.0"), transaction::unwatch),
];

const TXN: &str = "transactions";
const TXN_FLAGS: &[Flag] = &[Noscript, Loading, Stale, Fast, AllowBusy];
const FAST_TXN: &[&str] = &["@fast", "@transaction"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arity_as_redis_counts_it() {
        let echo = &generic(b"ECHO").unwrap().spec;
        assert!(echo.accepts(2) && !echo.accepts(1) && !echo.accepts(3));
        let del = &generic(b"del").unwrap().spec;
        assert!(!del.accepts(1) && del.accepts(2) && del.accepts(10));
    }

    #[test]
    fn subcommands_by_name() {
        let client = &generic(b"client").unwrap().spec;
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
            generic(b"bf.add").is_none(),
            "filter commands never route as generic"
        );
        assert!(matches!(route(b"BF.ADD"), Some(Route::Filter(row)) if row.spec.name == "bf.add"));
        assert!(matches!(route(b"Del"), Some(Route::Generic(row)) if row.spec.name == "del"));
        assert!(route(b"nope").is_none());
        assert!(lookup_any(b"BF.ADD").is_some());
    }
}
