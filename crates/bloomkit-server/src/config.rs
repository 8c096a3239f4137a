//! The server's options (`bloomkit serve` flags) and the settings `CONFIG GET/SET` reach.
//!
//! [`Config`] is fixed at start-up; [`Config::resolve`] makes it from the flags and the
//! config file. [`Settings`] holds what may change at run time: the `bf-*`/`cf-*`
//! [`Defaults`] for implicitly created keys (by the names RedisBloom uses in Redis 8) and
//! the run-time [`Options`]; `maxmemory` and the eviction settings live in the keyspace,
//! because every allocation checks them. Every option is a row of [`crate::options`].

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{PoisonError, RwLock};

use bloomkit_commands::errors::wrong_arity;
use bloomkit_commands::{Defaults, Reply};
use bytes::Bytes;

use crate::config_file::ConfigFile;
use crate::glob;
use crate::keyspace::Keyspace;
use crate::log::Level;
use crate::options::{Directive, OptionRow, Options, Role, View};

pub use crate::options::{parse_memory, DebugCommand};

/// When the append-only log is synced to disk (`--appendfsync`): the persistence layer's
/// policy, under the name of the Redis option.
pub use crate::persist::FsyncPolicy as AppendFsync;

/// Where the password came from, which decides whether `CONFIG REWRITE` may write it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PasswordSource {
    /// The config file or `--requirepass` on the command line: the configuration as the
    /// operator wrote it, which `CONFIG REWRITE` writes back (as Redis does).
    #[default]
    Written,
    /// `--requirepass-file` or the environment: kept out of every file, so `CONFIG
    /// REWRITE` never writes it.
    Hidden,
}

/// The server's start-up options, one per `bloomkit serve` flag (each a row of
/// [`crate::options`]).
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
    /// The password clients must `AUTH` with (`--requirepass`); `None` for none. An empty
    /// one counts as none, as in Redis (see [`Config::password`]).
    pub requirepass: Option<String>,
    /// Where the password came from.
    pub requirepass_source: PasswordSource,
    /// Most bytes `used_memory` may reach (`--maxmemory`); 0 for no limit.
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
    /// Who may send `DEBUG` (`--enable-debug-command`): nobody by default, as in Redis 7.
    pub enable_debug_command: DebugCommand,
    /// The least important messages logged at start-up (`--loglevel`).
    pub loglevel: Level,
    /// The file the log is appended to (`--logfile`); standard error without one.
    pub logfile: Option<PathBuf>,
    /// Worker threads serving clients (`--threads`); one per core without it.
    pub threads: Option<usize>,
    /// The run-time options given at start-up (`--maxmemory-policy allkeys-lru`, a config
    /// file's `bf-error-rate 0.001`), name and value in order, applied as `CONFIG SET`
    /// would before the first client is served.
    pub settings: Vec<(String, String)>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            bind: "127.0.0.1".to_string(),
            port: 6379,
            dir: PathBuf::from("./bloomkit-data"),
            appendfsync: AppendFsync::EverySec,
            requirepass: None,
            requirepass_source: PasswordSource::Written,
            maxmemory: 0,
            maxclients: 10_000,
            config_file: None,
            timeout_secs: 0,
            protected_mode: true,
            enable_debug_command: DebugCommand::No,
            loglevel: Level::Notice,
            logfile: None,
            threads: None,
            settings: Vec::new(),
        }
    }
}

/// One option given to `bloomkit serve`: a flag, or its environment variable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Given {
    /// The option's name (the flag without `--`).
    pub name: String,
    /// Its value.
    pub value: String,
    /// Whether it came from the environment rather than the command line.
    pub from_env: bool,
}

impl Config {
    /// `--timeout` as a duration; `None` for never.
    pub fn idle_timeout(&self) -> Option<std::time::Duration> {
        (self.timeout_secs > 0).then(|| std::time::Duration::from_secs(self.timeout_secs))
    }

    /// The password clients must give, if there is one: an empty `requirepass` is none, as
    /// in Redis.
    pub fn password(&self) -> Option<&str> {
        self.requirepass.as_deref().filter(|p| !p.is_empty())
    }

    /// Sets the password from `value` (empty: none), remembering where it came from.
    pub fn set_password(&mut self, value: &str, source: PasswordSource) {
        self.requirepass = (!value.is_empty()).then(|| value.to_string());
        self.requirepass_source = source;
    }

    /// The start-up options from what `bloomkit serve` was given: the defaults, then the
    /// config file's directives (if `--config` names one), then the flags, each checked by
    /// its row of [`crate::options`]. A flag (or its environment variable) wins over the
    /// file's line of the same name; `--requirepass-file` counts as `requirepass`.
    ///
    /// # Errors
    ///
    /// One line saying what is wrong: an unknown flag, a value its option cannot take (`--port:
    /// '99999' is not a port (0 to 65535)`), a config file that cannot be read or has a bad
    /// line (naming the line), an empty or unreadable password file.
    pub fn resolve(given: &[Given]) -> Result<Config, String> {
        Config::check_flags(given)?;
        let file = match given.iter().rev().find(|g| g.name == "config") {
            Some(flag) => {
                Some(ConfigFile::read(Path::new(&flag.value)).map_err(|e| e.to_string())?)
            }
            None => None,
        };
        Config::resolve_with(given, file.as_ref())
    }

    /// [`Config::resolve`] with the config file already read (`file`, if there is one).
    ///
    /// # Errors
    ///
    /// As [`Config::resolve`].
    pub fn resolve_with(given: &[Given], file: Option<&ConfigFile>) -> Result<Config, String> {
        Config::check_flags(given)?;
        let mut config = Config::default();
        let named = |name: &str| given.iter().any(|g| g.name == name);
        if let Some(file) = file {
            for line in file.directives() {
                let overridden =
                    named(&line.name) || (line.name == "requirepass" && named("requirepass-file"));
                if !overridden {
                    config.put(&line.name, &line.value(), PasswordSource::Written);
                }
            }
            config.config_file = Some(file.path().to_path_buf());
        }
        for flag in given {
            match flag.name.as_str() {
                "config" => {}
                "threads" => config.threads = flag.value.parse().ok(),
                "requirepass-file" => {
                    let password = read_password(Path::new(&flag.value))?;
                    config.set_password(&password, PasswordSource::Hidden);
                }
                name => {
                    let source = if flag.from_env {
                        PasswordSource::Hidden
                    } else {
                        PasswordSource::Written
                    };
                    config.put(name, &flag.value, source);
                }
            }
        }
        Ok(config)
    }

    /// Checks every flag's name and value against its row.
    fn check_flags(given: &[Given]) -> Result<(), String> {
        let find = |name: &str| {
            Directive::find(name.as_bytes()).ok_or_else(|| format!("unknown option --{name}"))
        };
        for flag in given {
            let directive = find(&flag.name)?;
            directive.check(flag.value.as_bytes()).map_err(|_| {
                format!(
                    "--{}: '{}' is not {}",
                    flag.name,
                    flag.value,
                    directive.accepts()
                )
            })?;
        }
        Ok(())
    }

    /// Records the checked value of directive `name` (`source`: where a password came from).
    fn put(&mut self, name: &str, value: &str, source: PasswordSource) {
        match Directive::find(name.as_bytes()) {
            Some(Directive::Server(OptionRow {
                role: Role::Startup(_),
                name: "requirepass",
                ..
            })) => self.set_password(value, source),
            Some(Directive::Server(OptionRow {
                role: Role::Startup(set),
                ..
            }))
            | Some(Directive::Server(OptionRow {
                role: Role::Runtime {
                    startup: Some(set), ..
                },
                ..
            })) => set(self, value),
            Some(directive) if directive.is_runtime() => {
                self.settings
                    .push((directive.name().to_string(), value.to_string()));
            }
            // Kept and flag-only options change nothing here.
            _ => {}
        }
    }
}

/// The password in `path` (`--requirepass-file`): its first line, without the line break.
///
/// # Errors
///
/// When the file cannot be read, or its first line is empty.
pub fn read_password(path: &Path) -> Result<String, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("reading the password file {}: {e}", path.display()))?;
    let line = text.lines().next().unwrap_or_default();
    if line.is_empty() {
        return Err(format!(
            "the password file {} is empty: write the password on its first line",
            path.display()
        ));
    }
    Ok(line.to_string())
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

    /// `CONFIG GET pattern...`: every option whose name matches one of the glob patterns
    /// (without case) and that `CONFIG GET` answers, as name/value pairs, in
    /// [`Directive::all`]'s order.
    pub fn get(&self, patterns: &[Bytes], config: &Config, keyspace: &Keyspace) -> Reply {
        let view = View {
            config,
            settings: self,
            keyspace,
        };
        let pairs = Directive::all()
            .filter(|d| {
                patterns
                    .iter()
                    .any(|pattern| glob::matches(pattern, d.name().as_bytes(), true))
            })
            .filter_map(|d| d.get(&view).map(|value| (d.name(), value)))
            .map(|(name, value)| (Reply::bulk(name), Reply::bulk(value)))
            .collect();
        Reply::Map(pairs)
    }

    /// `CONFIG SET name value [name value...]`: all or nothing, as in Redis 7. Returns the
    /// error to answer if any name is unknown or immutable or any value invalid.
    pub fn set(&self, pairs: &[Bytes], keyspace: &Keyspace) -> Result<(), Reply> {
        // Validate every pair against a copy, then apply the copy at once.
        let mut defaults = self.defaults();
        let mut changes = Vec::new();
        for (i, pair) in pairs.chunks(2).enumerate() {
            let [name, value] = pair else {
                return Err(wrong_arity("config|set"));
            };
            let shown = String::from_utf8_lossy(name).to_ascii_lowercase();
            let Some(directive) = Directive::find(name).filter(|d| d.is_directive()) else {
                return Err(Reply::Error(format!(
                    "ERR Unknown option or number of arguments for CONFIG SET - '{shown}'"
                )));
            };
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
            if !directive.is_runtime() {
                return Err(failed("can't set immutable config"));
            }
            directive.check(value).map_err(|why| failed(&why))?;
            match directive {
                Directive::Filter(param) => param
                    .set(&mut defaults, value)
                    .map_err(|why| failed(&why.to_string()))?,
                Directive::Server(OptionRow {
                    role: Role::Runtime { apply, .. },
                    ..
                }) => changes.push((*apply, value)),
                Directive::Server(_) => return Err(failed("can't set immutable config")),
            }
        }
        *self
            .defaults
            .write()
            .unwrap_or_else(PoisonError::into_inner) = defaults;
        self.generation.fetch_add(1, Ordering::Release);
        for (apply, value) in changes {
            apply(&self.options, keyspace, value);
        }
        Ok(())
    }

    /// Applies the run-time options given at start-up ([`Config::settings`]), each as its
    /// own `CONFIG SET`, in order (so that `client-output-buffer-limit` lines for different
    /// classes add up, as in a Redis config file).
    ///
    /// # Errors
    ///
    /// The error `CONFIG SET` would answer; none in practice, every value was checked.
    pub fn apply_startup(&self, config: &Config, keyspace: &Keyspace) -> Result<(), String> {
        for (name, value) in &config.settings {
            let pair = [Bytes::from(name.clone()), Bytes::from(value.clone())];
            self.set(&pair, keyspace).map_err(|reply| match reply {
                Reply::Error(text) => format!("{name} {value}: {text}"),
                other => format!("{name} {value}: {other:?}"),
            })?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    fn flag(name: &str, value: &str) -> Given {
        Given {
            name: name.to_string(),
            value: value.to_string(),
            from_env: false,
        }
    }

    #[test]
    fn flags_set_start_up_and_run_time_options_alike() {
        let config = Config::resolve(&[
            flag("port", "7000"),
            flag("maxmemory", "2mb"),
            flag("maxmemory-policy", "allkeys-lru"),
            flag("bf-error-rate", "0.001"),
            flag("loglevel", "warning"),
            flag("enable-debug-command", "local"),
            flag("threads", "3"),
        ])
        .unwrap();
        assert_eq!(config.port, 7000);
        assert_eq!(config.maxmemory, 2 << 20);
        assert_eq!(config.loglevel, Level::Warning);
        assert_eq!(config.enable_debug_command, DebugCommand::Local);
        assert_eq!(config.threads, Some(3));
        let (settings, keyspace) = (Settings::default(), Keyspace::new(config.maxmemory));
        settings.apply_startup(&config, &keyspace).unwrap();
        assert_eq!(keyspace.eviction().policy().name(), "allkeys-lru");
        assert_eq!(settings.defaults().bf_error_rate, 0.001);
        assert_eq!(
            Config::resolve(&[flag("port", "99999")]).unwrap_err(),
            "--port: '99999' is not a port (0 to 65535)"
        );
        assert_eq!(
            Config::resolve(&[flag("maxmemory", "lots")]).unwrap_err(),
            "--maxmemory: 'lots' is not a memory size: bytes, or a number with k, kb, m, mb, g or gb"
        );
        assert!(Config::resolve(&[flag("nosuch", "1")]).is_err());
    }

    #[test]
    fn an_empty_password_is_no_password() {
        for source in [false, true] {
            let config = Config::resolve(&[Given {
                from_env: source,
                ..flag("requirepass", "")
            }])
            .unwrap();
            assert_eq!(
                (config.requirepass.as_deref(), config.password()),
                (None, None)
            );
        }
        let config = Config {
            requirepass: Some(String::new()),
            ..Config::default()
        };
        assert_eq!(config.password(), None, "even set directly");
        let config = Config::resolve(&[Given {
            from_env: true,
            ..flag("requirepass", "s3cret")
        }])
        .unwrap();
        assert_eq!(config.password(), Some("s3cret"));
        assert_eq!(config.requirepass_source, PasswordSource::Hidden);
    }
}
