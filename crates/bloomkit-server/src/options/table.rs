//! The server's own options, one row each: the `bloomkit serve` flag, the config file's
//! directive, what `CONFIG GET` answers and whether `CONFIG SET` changes it, the `INFO`
//! field, and the line of docs/SERVER.md's flag table. The `bf-*`/`cf-*` parameters are the
//! command layer's table ([`bloomkit_commands::PARAMETERS`]), which [`super::Directive`]
//! serves beside this one.

use std::path::PathBuf;

use super::parse::{self, DebugCommand};
use super::runtime::{Options, CLASSES};
use super::View;
use crate::config::{Config, PasswordSource};
use crate::keyspace::Keyspace;
use crate::log;

/// Checks a value: the reason it is refused, as `CONFIG SET` words it after `CONFIG SET
/// failed ... - `.
pub type Check = fn(&[u8]) -> Result<(), String>;

/// Reads an option's current value, as `CONFIG GET` answers it.
pub type Get = fn(&View<'_>) -> String;

/// Records a checked value in the start-up options.
pub type Startup = fn(&mut Config, &str);

/// Applies a checked value to the running server.
pub type Apply = fn(&Options, &Keyspace, &[u8]);

/// When an option takes effect, and what may change it.
#[derive(Clone, Copy)]
pub enum Role {
    /// Fixed at start-up: a flag or a config file line; `CONFIG SET` refuses it
    /// ("can't set immutable config").
    Startup(Startup),
    /// Also changed by `CONFIG SET`. At start-up, `startup` records it in the [`Config`]
    /// where the server needs it before it runs; without one, the value waits in
    /// [`Config::settings`] and is applied as `CONFIG SET` would, before the first client.
    Runtime {
        /// Where the start-up value goes, if the server needs it before it runs.
        startup: Option<Startup>,
        /// What `CONFIG SET` does.
        apply: Apply,
    },
    /// A flag of `bloomkit serve` only, not a directive (`--config`, `--threads`,
    /// `--requirepass-file`): read by [`Config::resolve`], refused in a config file and by
    /// `CONFIG SET`.
    FlagOnly,
    /// A Redis directive this server accepts and does not use (a Redis configuration that
    /// sets it loads); `CONFIG REWRITE` keeps its lines as written.
    Kept,
}

/// One option; see the [module documentation](self).
pub struct OptionRow {
    /// The directive's and the flag's name (`--maxmemory-policy`).
    pub name: &'static str,
    /// What the flag's value is called in `--help` and the docs (`POLICY`).
    pub value_name: &'static str,
    /// The value until it is set, as `CONFIG GET` answers it on a fresh server; empty for
    /// none. `CONFIG REWRITE` adds a line for an option only when its value differs.
    pub default: &'static str,
    /// What a valid value is, for a flag's error (`'x' is not <accepts>`).
    pub accepts: &'static str,
    /// One line of help, for `--help` and the docs' table.
    pub help: &'static str,
    /// When it takes effect.
    pub role: Role,
    /// Checks a value.
    pub check: Check,
    /// What `CONFIG GET` answers; `None`: not answered (the password).
    pub get: Option<Get>,
    /// The `INFO` section and field that show it, if any.
    pub info: Option<(&'static str, &'static str)>,
    /// An environment variable that gives the flag's value, if any.
    pub env: Option<&'static str>,
}

impl std::fmt::Debug for OptionRow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OptionRow")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

fn any(_: &[u8]) -> Result<(), String> {
    Ok(())
}

fn not_empty(value: &[u8]) -> Result<(), String> {
    if value.is_empty() {
        Err("argument must not be empty".to_string())
    } else {
        parse::text(value).map(|_| ())
    }
}

fn bind_address(value: &[u8]) -> Result<(), String> {
    let text = parse::text(value)?;
    if text.is_empty() {
        Err("argument must not be empty".to_string())
    } else if text.split_ascii_whitespace().count() > 1 {
        Err("bind takes one address here; run a server per address".to_string())
    } else {
        Ok(())
    }
}

fn yes_no(on: bool) -> String {
    if on { "yes" } else { "no" }.to_string()
}

/// A [`Role::Runtime`] whose `CONFIG SET` reads the value with `$parse` (the row's `check`
/// has accepted it already) and hands what it read to `$apply`: `runtime!(startup, |v|
/// parse(v), |options, keyspace, value| effect)`.
macro_rules! runtime {
    ($startup:expr, |$v:ident| $parse:expr, |$o:pat_param, $k:pat_param, $x:pat_param| $apply:expr) => {
        Role::Runtime {
            startup: $startup,
            apply: |$o, $k, $v| {
                if let Ok($x) = $parse {
                    $apply;
                }
            },
        }
    };
}

/// Every option of the server, in the order `--help`, the docs and `CONFIG GET` list them.
#[rustfmt::skip]
pub static OPTIONS: &[OptionRow] = &[
    OptionRow {
        name: "bind", value_name: "ADDR", default: "127.0.0.1",
        accepts: "one address of this machine",
        help: "address to listen on (loopback unless you say otherwise)",
        role: Role::Startup(|c, v| c.bind = v.to_string()),
        check: bind_address,
        get: Some(|v| v.config.bind.clone()),
        info: None, env: None,
    },
    OptionRow {
        name: "port", value_name: "N", default: "6379",
        accepts: "a port (0 to 65535)",
        help: "TCP port; `0` picks a free one (printed as `listening on ADDR`)",
        role: Role::Startup(|c, v| c.port = parse::port(v.as_bytes()).unwrap_or(c.port)),
        check: |v| parse::port(v).map(|_| ()),
        get: Some(|v| v.config.port.to_string()),
        info: None, env: None,
    },
    OptionRow {
        name: "dir", value_name: "PATH", default: "./bloomkit-data",
        accepts: "a directory",
        help: "data directory: snapshot, append-only log, lock file",
        role: Role::Startup(|c, v| c.dir = PathBuf::from(v)),
        check: not_empty,
        get: Some(|v| v.config.dir.display().to_string()),
        info: None, env: None,
    },
    OptionRow {
        name: "appendfsync", value_name: "always|everysec|no", default: "everysec",
        accepts: "one of always, everysec, no",
        help: "when the log is fsynced: before every reply (an acknowledged write survives `kill -9` and power loss), once a second, or when the OS decides",
        role: Role::Startup(|c, v| c.appendfsync = parse::fsync(v.as_bytes()).unwrap_or(c.appendfsync)),
        check: |v| parse::fsync(v).map(|_| ()),
        get: Some(|v| v.config.appendfsync.to_string()),
        info: Some(("persistence", "appendfsync")), env: None,
    },
    OptionRow {
        name: "requirepass", value_name: "SECRET", default: "",
        accepts: "a password (empty: none)",
        help: "clients must `AUTH` (or `HELLO 3 AUTH default SECRET`) first; empty means none, as in Redis; visible in `ps`, so prefer `--requirepass-file` or the environment",
        role: Role::Startup(|c, v| c.set_password(v, PasswordSource::Written)),
        check: |v| parse::text(v).map(|_| ()),
        get: None,
        info: None, env: Some("BLOOMKIT_REQUIREPASS"),
    },
    OptionRow {
        name: "requirepass-file", value_name: "PATH", default: "",
        accepts: "a file whose first line is the password",
        help: "the password is the file's first line (an empty or unreadable file stops start-up); `CONFIG REWRITE` never writes it",
        role: Role::FlagOnly,
        check: not_empty,
        get: None,
        info: None, env: None,
    },
    OptionRow {
        name: "protected-mode", value_name: "yes|no", default: "yes",
        accepts: "yes or no",
        help: "listening on a non-loopback address without a password, refuse other machines (see [Connections](#connections))",
        role: Role::Startup(|c, v| c.protected_mode = parse::yes_no(v.as_bytes()).unwrap_or(c.protected_mode)),
        check: |v| parse::yes_no(v).map(|_| ()),
        get: Some(|v| yes_no(v.config.protected_mode)),
        info: None, env: None,
    },
    OptionRow {
        name: "timeout", value_name: "SECONDS", default: "0",
        accepts: "a number of seconds (0 for never)",
        help: "close a client idle for longer (Redis's `timeout`); `0` never does",
        role: Role::Startup(|c, v| c.timeout_secs = v.parse().unwrap_or(c.timeout_secs)),
        check: |v| parse::integer_in(v, 0, i64::MAX).map(|_| ()),
        get: Some(|v| v.config.timeout_secs.to_string()),
        info: None, env: None,
    },
    OptionRow {
        name: "maxclients", value_name: "N", default: "10000",
        accepts: "a number of clients (1 or more)",
        help: "clients past it get `ERR max number of clients reached`; lowered at start-up to fit the open-file limit",
        role: Role::Startup(|c, v| c.maxclients = v.parse().unwrap_or(c.maxclients)),
        check: |v| parse::integer_in(v, 1, i64::MAX).map(|_| ()),
        get: Some(|v| v.config.maxclients.to_string()),
        info: Some(("clients", "maxclients")), env: None,
    },
    OptionRow {
        name: "maxmemory", value_name: "BYTES", default: "0",
        accepts: "a memory size: bytes, or a number with k, kb, m, mb, g or gb",
        help: "what `used_memory` may reach (see [Memory](#memory-a-ceiling-that-includes-the-clients)); `0` for no limit; accepts `100mb`, `2gb`",
        role: runtime!(Some(|c, v| c.maxmemory = parse::parse_memory(v.as_bytes()).unwrap_or(c.maxmemory)), |v| parse::memory(v), |_, k, bytes| k.set_maxmemory(bytes)),
        check: |v| parse::memory(v).map(|_| ()),
        get: Some(|v| v.keyspace.maxmemory().to_string()),
        info: Some(("memory", "maxmemory")), env: None,
    },
    OptionRow {
        name: "maxmemory-policy", value_name: "POLICY", default: "noeviction",
        accepts: "one of volatile-lru, allkeys-lru, volatile-lfu, allkeys-lfu, volatile-random, allkeys-random, volatile-ttl, noeviction",
        help: "which keys go past `maxmemory`: Redis's policies; `noeviction` answers `OOM` instead",
        role: runtime!(None, |v| parse::policy(v), |_, k, policy| k.eviction().set_policy(policy)),
        check: |v| parse::policy(v).map(|_| ()),
        get: Some(|v| v.keyspace.eviction().policy().name().to_string()),
        info: Some(("memory", "maxmemory_policy")), env: None,
    },
    OptionRow {
        name: "maxmemory-samples", value_name: "N", default: "5",
        accepts: "an integer from 1 to 64",
        help: "keys each eviction looks at, as in Redis",
        role: runtime!(None, |v| parse::integer_in(v, 1, 64), |_, k, n| k.eviction().set_samples(n as u32)),
        check: |v| parse::integer_in(v, 1, 64).map(|_| ()),
        get: Some(|v| v.keyspace.eviction().samples().to_string()),
        info: None, env: None,
    },
    OptionRow {
        name: "client-query-buffer-limit", value_name: "BYTES", default: "1073741824",
        accepts: "a memory size of at least 1mb",
        help: "the largest request a client may send; a larger one closes the connection",
        role: runtime!(None, |v| parse::query_buffer_limit(v), |o, _, bytes| o.query_buffer_limit.store(bytes, std::sync::atomic::Ordering::Relaxed)),
        check: |v| parse::query_buffer_limit(v).map(|_| ()),
        get: Some(|v| v.settings.options().query_buffer_limit().to_string()),
        info: None, env: None,
    },
    OptionRow {
        name: "client-output-buffer-limit", value_name: "'CLASS HARD SOFT SECONDS'",
        default: "normal 67108864 33554432 60 slave 268435456 67108864 60 pubsub 33554432 8388608 60",
        accepts: "'class hard soft seconds', for one or more of the classes normal, replica, pubsub",
        help: "close a client whose unsent replies pass `hard`, or stay above `soft` for `seconds` (our `normal` default: `64mb 32mb 60`)",
        role: Role::Runtime {
            startup: None,
            apply: |o, _, v| {
                for (class, limit) in parse::output_limits(v).unwrap_or_default() {
                    o.output_limits[class].set(limit);
                }
            },
        },
        check: |v| parse::output_limits(v).map(|_| ()),
        get: Some(|v| {
            let words: Vec<String> = CLASSES
                .iter()
                .zip(&v.settings.options().output_limits)
                .map(|(class, cell)| {
                    let limit = cell.get();
                    // Redis still answers the replica class by its old name.
                    let class = if *class == "replica" { "slave" } else { class };
                    format!("{class} {} {} {}", limit.hard_bytes, limit.soft_bytes, limit.soft_seconds)
                })
                .collect();
            words.join(" ")
        }),
        info: None, env: None,
    },
    OptionRow {
        name: "slowlog-log-slower-than", value_name: "MICROSECONDS", default: "10000",
        accepts: "an integer (negative: never; 0: every command)",
        help: "`SLOWLOG` keeps the commands that ran at least this long",
        role: runtime!(None, |v| parse::integer_in(v, i64::MIN, i64::MAX), |o, _, us| o.slowlog_log_slower_than.store(us, std::sync::atomic::Ordering::Relaxed)),
        check: |v| parse::integer_in(v, i64::MIN, i64::MAX).map(|_| ()),
        get: Some(|v| v.settings.options().slowlog_log_slower_than().to_string()),
        info: None, env: None,
    },
    OptionRow {
        name: "slowlog-max-len", value_name: "N", default: "128",
        accepts: "an integer from 0 to 4294967295",
        help: "the entries `SLOWLOG` keeps",
        role: runtime!(None, |v| parse::integer_in(v, 0, i64::from(u32::MAX)), |o, _, n| o.slowlog_max_len.store(n as u64, std::sync::atomic::Ordering::Relaxed)),
        check: |v| parse::integer_in(v, 0, i64::from(u32::MAX)).map(|_| ()),
        get: Some(|v| v.settings.options().slowlog_max_len().to_string()),
        info: None, env: None,
    },
    OptionRow {
        name: "loglevel", value_name: "LEVEL", default: "notice",
        accepts: "one of debug, verbose, notice, warning, nothing",
        help: "the least important messages logged (see [What an operator sees](#what-an-operator-sees))",
        role: runtime!(Some(|c, v| c.loglevel = parse::level(v.as_bytes()).unwrap_or(c.loglevel)), |v| parse::level(v), |_, _, level| log::set_level(level)),
        check: |v| parse::level(v).map(|_| ()),
        get: Some(|_| log::level().name().to_string()),
        info: None, env: None,
    },
    OptionRow {
        name: "logfile", value_name: "FILE", default: "",
        accepts: "a file (empty: standard error)",
        help: "append the log to `FILE` instead of standard error",
        role: Role::Startup(|c, v| c.logfile = (!v.is_empty()).then(|| PathBuf::from(v))),
        check: |v| parse::text(v).map(|_| ()),
        get: Some(|_| log::file().map(|p| p.display().to_string()).unwrap_or_default()),
        info: None, env: None,
    },
    OptionRow {
        name: "enable-debug-command", value_name: "no|yes|local", default: "no",
        accepts: "one of no, yes, local",
        help: "who may send `DEBUG`: nobody, every client, or clients on the loopback interface, as in Redis 7",
        role: Role::Startup(|c, v| c.enable_debug_command = parse::debug_command(v.as_bytes()).unwrap_or(DebugCommand::No)),
        check: |v| parse::debug_command(v).map(|_| ()),
        get: Some(|v| v.config.enable_debug_command.name().to_string()),
        info: None, env: None,
    },
    OptionRow {
        name: "threads", value_name: "N", default: "",
        accepts: "a number of threads (1 to 65535)",
        help: "worker threads serving clients (default: one per core); commands on different keys run in parallel (on a small machine shared with its clients, `1` can be faster)",
        role: Role::FlagOnly,
        check: |v| parse::integer_in(v, 1, 65_535).map(|_| ()),
        get: None,
        info: None, env: None,
    },
    OptionRow {
        name: "config", value_name: "FILE", default: "",
        accepts: "a configuration file",
        help: "a `redis.conf`-style file of these options; a flag given on the command line wins over the file; `CONFIG REWRITE` writes the running values back into it (see [Configuration file](#configuration-file))",
        role: Role::FlagOnly,
        check: not_empty,
        get: None,
        info: None, env: None,
    },
    OptionRow {
        name: "appendonly", value_name: "yes|no", default: "yes",
        accepts: "anything (not used)",
        help: "a Redis option, accepted and not used: every write is logged",
        role: Role::Kept,
        check: any,
        get: Some(|v| yes_no(v.keyspace.journal().is_some_and(|j| j.enabled()))),
        info: None, env: None,
    },
    OptionRow {
        name: "save", value_name: "POINTS", default: "",
        accepts: "anything (not used)",
        // Answered because tools such as redis-benchmark read it.
        help: "a Redis option, accepted and not used: snapshots follow the log's growth (and `SAVE`/`BGSAVE`)",
        role: Role::Kept,
        check: any,
        get: Some(|_| String::new()),
        info: None, env: None,
    },
    OptionRow {
        name: "databases", value_name: "N", default: "1",
        accepts: "anything (not used)",
        help: "a Redis option, accepted and not used: there is one database",
        role: Role::Kept,
        check: any,
        get: Some(|_| "1".to_string()),
        info: None, env: None,
    },
];
