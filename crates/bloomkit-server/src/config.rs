//! The server's options (`bloomkit serve` flags) and the settings `CONFIG GET/SET` reach.
//!
//! [`Config`] is fixed at start-up. [`Settings`] holds what may change at run time: the
//! `bf-*`/`cf-*` [`Defaults`] for implicitly created keys (by the names RedisBloom uses in
//! Redis 8) and `maxmemory`, which lives in the keyspace because every allocation checks it.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{PoisonError, RwLock};

use bloomkit_commands::errors::wrong_arity;
use bloomkit_commands::params::parameter;
use bloomkit_commands::{Defaults, Reply, PARAMETERS};
use bytes::Bytes;

use crate::glob;
use crate::keyspace::Keyspace;
use crate::options::{self, Options, OPTIONS};

pub use crate::options::parse_memory;

/// When the append-only log is synced to disk (`--appendfsync`): the persistence layer's
/// policy, under the name of the Redis option.
pub use crate::persist::FsyncPolicy as AppendFsync;

/// The server's start-up options, one per `bloomkit serve` flag.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// Address to listen on (`--bind`): loopback by default, so a server started without
    /// thought is not reachable from the network.
    pub bind: String,
    /// TCP port (`--port`); 0 picks a free one (see [`crate::server::Server::local_addr`]).
    pub port: u16,
    /// Where snapshots and the log live (`--dir`).
    pub dir: PathBuf,
    /// The log's fsync policy (`--appendfsync`).
    pub appendfsync: AppendFsync,
    /// The password clients must `AUTH` with (`--requirepass`); `None` for none.
    pub requirepass: Option<String>,
    /// Most bytes the values may hold (`--maxmemory`); 0 for no limit.
    pub maxmemory: u64,
    /// Most clients connected at once (`--maxclients`); lowered at start-up to what the
    /// open-file limit allows (see [`crate::limits`]).
    pub maxclients: usize,
    /// The configuration file the server was started with (`--config`), which `CONFIG
    /// REWRITE` writes back; `None` for none.
    pub config_file: Option<PathBuf>,
    /// Seconds a client may take to send a request, or to read what it was sent, before it
    /// is closed (`--timeout`, Redis's `timeout`); 0 for never.
    pub timeout_secs: u64,
    /// Whether clients from other addresses than the loopback are refused while the server
    /// listens on a non-loopback address without a password (`--protected-mode`).
    pub protected_mode: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            bind: "127.0.0.1".to_string(),
            port: 6379,
            dir: PathBuf::from("./bloomkit-data"),
            appendfsync: AppendFsync::EverySec,
            requirepass: None,
            maxmemory: 0,
            maxclients: 10_000,
            config_file: None,
            timeout_secs: 0,
            protected_mode: true,
        }
    }
}

impl Config {
    /// `--timeout` as a duration; `None` for never.
    pub fn idle_timeout(&self) -> Option<std::time::Duration> {
        (self.timeout_secs > 0).then(|| std::time::Duration::from_secs(self.timeout_secs))
    }
}

/// What `CONFIG SET` may change while the server runs.
#[derive(Debug)]
pub struct Settings {
    /// Why a `std::sync::RwLock`: readers copy the defaults out (a few words) and never
    /// hold the lock across an await; `CONFIG SET` is rare.
    defaults: RwLock<Defaults>,
    /// Bumped by every `CONFIG SET` of a default, so that connections keep their own copy
    /// ([`DefaultsCache`]) and check one never-written atomic per command instead of
    /// taking a lock every core contends for.
    generation: AtomicU64,
    /// The server's run-time options ([`crate::options`]).
    options: Options,
}

impl Default for Settings {
    fn default() -> Self {
        Settings::new(Defaults::default())
    }
}

/// A connection's copy of the [`Defaults`], refreshed by [`Settings::cached`] only when
/// `CONFIG SET` has changed them.
#[derive(Clone, Debug, Default)]
pub struct DefaultsCache {
    /// The [`Settings`] generation the copy was taken at; 0: never taken.
    generation: u64,
    defaults: Defaults,
}

impl Settings {
    /// Settings starting from `defaults`.
    pub fn new(defaults: Defaults) -> Settings {
        Settings {
            defaults: RwLock::new(defaults),
            generation: AtomicU64::new(1),
            options: Options::default(),
        }
    }

    /// The run-time options beyond the filter defaults and `maxmemory`.
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// The current defaults, through `cache`: a copy is taken only when they changed
    /// since `cache` was last refreshed.
    pub fn cached<'a>(&self, cache: &'a mut DefaultsCache) -> &'a Defaults {
        // Acquire pairs with the Release in `set`: seeing the new generation means seeing
        // the defaults written before it.
        let generation = self.generation.load(Ordering::Acquire);
        if cache.generation != generation {
            cache.defaults = self.defaults();
            cache.generation = generation;
        }
        &cache.defaults
    }

    /// A copy of the current defaults, for one command.
    pub fn defaults(&self) -> Defaults {
        self.defaults
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// `CONFIG GET pattern...`: every parameter whose name matches one of the glob
    /// patterns (without case), as name/value pairs: the `bf-*`/`cf-*` defaults (in their
    /// table's order), then the server's own.
    pub fn get(&self, patterns: &[Bytes], config: &Config, keyspace: &Keyspace) -> Reply {
        let defaults = self.defaults();
        let filters = PARAMETERS
            .iter()
            .map(|param| (param.name, param.get(&defaults).to_string()));
        let host = HOST_PARAMETERS
            .iter()
            .map(|param| (param.name, (param.get)(config, keyspace)));
        let ops = OPTIONS
            .iter()
            .map(|row| (row.name, (row.get)(&self.options, keyspace)));
        let pairs = filters
            .chain(host)
            .chain(ops)
            .filter(|(name, _)| {
                patterns
                    .iter()
                    .any(|pattern| glob::matches(pattern, name.as_bytes(), true))
            })
            .map(|(name, value)| (Reply::bulk(name), Reply::bulk(value)))
            .collect();
        Reply::Map(pairs)
    }

    /// `CONFIG SET name value [name value...]`: all or nothing, as in Redis 7. Returns the
    /// error to answer if any name is unknown or immutable or any value invalid.
    pub fn set(&self, pairs: &[Bytes], keyspace: &Keyspace) -> Result<(), Reply> {
        // Validate every pair against a copy, then apply the copy at once.
        let mut defaults = self.defaults();
        let mut maxmemory = None;
        let mut ops = Vec::new();
        for (i, pair) in pairs.chunks(2).enumerate() {
            let [name, value] = pair else {
                return Err(wrong_arity("config|set"));
            };
            let shown = String::from_utf8_lossy(name).to_ascii_lowercase();
            let filter = parameter(name);
            let host = HOST_PARAMETERS
                .iter()
                .find(|p| p.name.as_bytes().eq_ignore_ascii_case(name));
            let op = options::option(name);
            if filter.is_none() && host.is_none() && op.is_none() {
                return Err(Reply::Error(format!(
                    "ERR Unknown option or number of arguments for CONFIG SET - '{shown}'"
                )));
            }
            // A parameter named twice is refused, as Redis 7 does.
            if pairs
                .chunks(2)
                .take(i)
                .any(|earlier| earlier[0].eq_ignore_ascii_case(name))
            {
                return Err(Reply::Error(format!(
                    "ERR CONFIG SET failed (possibly related to argument '{shown}') - duplicate parameter"
                )));
            }
            let failed = |why: &str| {
                Reply::Error(format!(
                    "ERR CONFIG SET failed (possibly related to argument '{shown}') - {why}"
                ))
            };
            if let Some(row) = op {
                let check = row
                    .check
                    .ok_or_else(|| failed("can't set immutable config"))?;
                check(value).map_err(|why| failed(&why))?;
                ops.push((row, value));
                continue;
            }
            match (filter, host.map(|p| p.set)) {
                (Some(param), _) => param
                    .set(&mut defaults, value)
                    .map_err(|why| failed(&why.to_string()))?,
                (None, Some(Setter::Maxmemory)) => {
                    maxmemory = Some(
                        parse_memory(value)
                            .ok_or_else(|| failed("argument must be a memory value"))?,
                    );
                }
                (None, _) => return Err(failed("can't set immutable config")),
            }
        }
        *self
            .defaults
            .write()
            .unwrap_or_else(PoisonError::into_inner) = defaults;
        self.generation.fetch_add(1, Ordering::Release);
        if let Some(bytes) = maxmemory {
            keyspace.set_maxmemory(bytes);
        }
        for (row, value) in ops {
            (row.apply)(&self.options, keyspace, value);
        }
        Ok(())
    }
}

/// One of the server's own `CONFIG` parameters (the `bf-*`/`cf-*` ones are the command
/// layer's [`PARAMETERS`]).
struct HostParameter {
    name: &'static str,
    get: fn(&Config, &Keyspace) -> String,
    set: Setter,
}

#[derive(Clone, Copy)]
enum Setter {
    /// Fixed at start-up (a flag of `bloomkit serve`).
    Immutable,
    /// `maxmemory`, kept by the keyspace.
    Maxmemory,
}

/// The server's parameters, in the order `CONFIG GET` lists them after the filter defaults:
/// what clients and tools ask about (`redis-cli --bigkeys` reads `maxmemory`, benchmarks read
/// `appendonly`).
const HOST_PARAMETERS: &[HostParameter] = &[
    HostParameter {
        name: "maxmemory",
        get: |_, k| k.maxmemory().to_string(),
        set: Setter::Maxmemory,
    },
    HostParameter {
        name: "maxclients",
        get: |c, _| c.maxclients.to_string(),
        set: Setter::Immutable,
    },
    HostParameter {
        name: "bind",
        get: |c, _| c.bind.clone(),
        set: Setter::Immutable,
    },
    HostParameter {
        name: "port",
        get: |c, _| c.port.to_string(),
        set: Setter::Immutable,
    },
    HostParameter {
        name: "dir",
        get: |c, _| c.dir.display().to_string(),
        set: Setter::Immutable,
    },
    HostParameter {
        name: "appendonly",
        get: |_, k| {
            let enabled = k.journal().is_some_and(|j| j.enabled());
            if enabled { "yes" } else { "no" }.to_string()
        },
        set: Setter::Immutable,
    },
    HostParameter {
        // Redis's RDB save points. There are none: snapshots follow the log's growth (and
        // SAVE/BGSAVE). Answered because tools such as redis-benchmark read it.
        name: "save",
        get: |_, _| String::new(),
        set: Setter::Immutable,
    },
    HostParameter {
        name: "appendfsync",
        get: |c, _| c.appendfsync.to_string(),
        set: Setter::Immutable,
    },
    HostParameter {
        name: "timeout",
        get: |c, _| c.timeout_secs.to_string(),
        set: Setter::Immutable,
    },
    HostParameter {
        name: "protected-mode",
        get: |c, _| if c.protected_mode { "yes" } else { "no" }.to_string(),
        set: Setter::Immutable,
    },
    HostParameter {
        name: "databases",
        get: |_, _| "1".to_string(),
        set: Setter::Immutable,
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_sizes_as_redis_reads_them() {
        assert_eq!(parse_memory(b"0"), Some(0));
        assert_eq!(parse_memory(b"1024"), Some(1024));
        assert_eq!(parse_memory(b"1k"), Some(1000));
        assert_eq!(parse_memory(b"1KB"), Some(1024));
        assert_eq!(parse_memory(b"100mb"), Some(100 << 20));
        assert_eq!(parse_memory(b"2g"), Some(2_000_000_000));
        assert_eq!(parse_memory(b"2Gb"), Some(2 << 30));
        for bad in [
            &b""[..],
            b"mb",
            b"-1",
            b"1.5mb",
            b"1tb",
            b"99999999999999999999",
        ] {
            assert_eq!(parse_memory(bad), None);
        }
    }

    #[test]
    fn fsync_policies_parse_by_name() {
        assert_eq!("always".parse(), Ok(AppendFsync::Always));
        assert_eq!("EVERYSEC".parse(), Ok(AppendFsync::EverySec));
        assert_eq!("no".parse(), Ok(AppendFsync::No));
        assert!("sometimes".parse::<AppendFsync>().is_err());
    }

    fn args(words: &[&str]) -> Vec<Bytes> {
        words.iter().map(|w| Bytes::from(w.to_string())).collect()
    }

    #[test]
    fn config_set_is_all_or_nothing() {
        let settings = Settings::default();
        let keyspace = Keyspace::new(0);
        assert_eq!(
            settings.set(
                &args(&["bf-error-rate", "0.001", "maxmemory", "1mb"]),
                &keyspace
            ),
            Ok(())
        );
        assert_eq!(settings.defaults().bf_error_rate, 0.001);
        assert_eq!(keyspace.maxmemory(), 1 << 20);
        assert_eq!(
            settings.set(&args(&["bf-initial-size", "5", "cf-bucket-size", "256"]), &keyspace),
            Err(Reply::error(
                "ERR CONFIG SET failed (possibly related to argument 'cf-bucket-size') - argument must be between 1 and 255 inclusive"
            ))
        );
        assert_eq!(settings.defaults().bf_initial_size, 100, "nothing applied");
        assert_eq!(
            settings.set(&args(&["nosuch", "1"]), &keyspace),
            Err(Reply::error(
                "ERR Unknown option or number of arguments for CONFIG SET - 'nosuch'"
            ))
        );
        assert_eq!(
            settings.set(&args(&["port", "1"]), &keyspace),
            Err(Reply::error(
                "ERR CONFIG SET failed (possibly related to argument 'port') - can't set immutable config"
            ))
        );
        assert_eq!(
            settings.set(&args(&["maxmemory", "lots"]), &keyspace),
            Err(Reply::error(
                "ERR CONFIG SET failed (possibly related to argument 'maxmemory') - argument must be a memory value"
            ))
        );
    }

    #[test]
    fn cached_defaults_follow_config_set() {
        let settings = Settings::default();
        let keyspace = Keyspace::new(0);
        let mut cache = DefaultsCache::default();
        assert_eq!(settings.cached(&mut cache).bf_initial_size, 100);
        settings
            .set(&args(&["bf-initial-size", "7"]), &keyspace)
            .unwrap();
        assert_eq!(settings.cached(&mut cache).bf_initial_size, 7);
    }

    #[test]
    fn config_get_matches_globs_without_case() {
        let settings = Settings::default();
        let keyspace = Keyspace::new(0);
        let config = Config::default();
        let reply = settings.get(&args(&["CF-*SIZE"]), &config, &keyspace);
        assert_eq!(
            reply,
            Reply::Map(vec![
                (Reply::bulk("cf-bucket-size"), Reply::bulk("2")),
                (Reply::bulk("cf-initial-size"), Reply::bulk("1024")),
            ])
        );
        let reply = settings.get(&args(&["bf-error-rate", "maxmemory"]), &config, &keyspace);
        assert_eq!(
            reply,
            Reply::Map(vec![
                (Reply::bulk("bf-error-rate"), Reply::bulk("0.01")),
                (Reply::bulk("maxmemory"), Reply::bulk("0")),
            ])
        );
        assert_eq!(
            settings.get(&args(&["nothing*"]), &config, &keyspace),
            Reply::Map(vec![])
        );
    }
}
