//! `bloomkit serve`: the RedisBloom-compatible server, in the foreground.
//!
//! Its flags are the server's options table ([`bloomkit_server::options`]): one
//! `--name value` per option, as redis-server takes them, so this file only turns the table
//! into clap arguments and hands what was given to [`Config::resolve`].

use std::io::Write;

use bloomkit_server::config::{Config, Given};
use bloomkit_server::log;
use bloomkit_server::options::Directive;
use bloomkit_server::server::Server;
use clap::parser::ValueSource;
use clap::{Arg, ArgMatches, Args, Command, FromArgMatches};

use crate::error::{Context, Error, Result};

/// The flags given to `bloomkit serve`: each option named on the command line (or by its
/// environment variable), in the order of the options table.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Flags {
    /// What was given.
    pub given: Vec<Given>,
}

/// A help line for the terminal: the table's help without the docs' Markdown (backticks,
/// links to sections of docs/SERVER.md).
fn plain(help: &str) -> String {
    let mut out = String::with_capacity(help.len());
    let mut rest = help;
    while let Some(open) = rest.find('[') {
        let Some(close) = rest[open..].find("](").map(|at| open + at) else {
            break;
        };
        let Some(end) = rest[close..].find(')').map(|at| close + at) else {
            break;
        };
        out.push_str(&rest[..open]);
        out.push_str(&rest[open + 1..close]);
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    let out = out.replace('`', "");
    // Sentences in `--help` start with a capital, as every other flag's help does.
    let mut chars = out.chars();
    chars
        .next()
        .map(|first| first.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

impl Args for Flags {
    fn augment_args(mut cmd: Command) -> Command {
        for directive in Directive::flags() {
            // clap keeps value names and defaults as `&'static str`: these few, made once
            // per process from the table, live as long as it does.
            let value_name: &'static str = Box::leak(directive.value_name().into_boxed_str());
            let mut arg = Arg::new(directive.name())
                .long(directive.name())
                .value_name(value_name)
                .help(plain(&directive.help()))
                .allow_hyphen_values(true)
                .action(clap::ArgAction::Set);
            let default = directive.default_value();
            if !default.is_empty() {
                // Shown in `--help`; a value clap fills in is not one that was given (see
                // `from_arg_matches`), so the file's line still wins over it.
                let default: &'static str = Box::leak(default.into_boxed_str());
                arg = arg.default_value(default);
            }
            if let Some(env) = directive.env() {
                arg = arg.env(env).hide_env_values(true);
            }
            cmd = cmd.arg(arg);
        }
        cmd.mut_arg("requirepass-file", |arg| arg.conflicts_with("requirepass"))
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Flags::augment_args(cmd)
    }
}

impl FromArgMatches for Flags {
    fn from_arg_matches(matches: &ArgMatches) -> std::result::Result<Self, clap::Error> {
        let mut given = Vec::new();
        for directive in Directive::flags() {
            let name = directive.name();
            let Some(value) = matches.get_one::<String>(name) else {
                continue;
            };
            let from_env = match matches.value_source(name) {
                Some(ValueSource::CommandLine) => false,
                Some(ValueSource::EnvVariable) => true,
                _ => continue,
            };
            given.push(Given {
                name: name.to_string(),
                value: value.clone(),
                from_env,
            });
        }
        Ok(Flags { given })
    }

    fn update_from_arg_matches(
        &mut self,
        matches: &ArgMatches,
    ) -> std::result::Result<(), clap::Error> {
        *self = Flags::from_arg_matches(matches)?;
        Ok(())
    }
}

/// Reads the options (the flags, and the config file `--config` names), then starts a
/// multi-threaded runtime, binds the server, prints `listening on ADDR` (the real port when
/// `--port 0`, so scripts and tests can find it) and serves until SIGINT (Ctrl-C), SIGTERM
/// or a client's `SHUTDOWN`, then shuts down gracefully.
///
/// # Errors
///
/// A bad flag or config file line, an unreadable password file, an address that cannot be
/// bound, a data directory that cannot be used, or a log that cannot be synced at shutdown.
pub fn run(flags: &Flags) -> Result<()> {
    let config = Config::resolve(&flags.given).map_err(Error::Message)?;
    log::init(config.loglevel, config.logfile.as_deref())
        .map_err(|e| Error::Message(e.to_string()))?;
    // Before the first filter is allocated: a setting of the allocator only, so whether it
    // took changes nothing but memory use.
    crate::malloc::fix_mmap_threshold();
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if let Some(threads) = config.threads {
        builder.worker_threads(threads);
    }
    let runtime = builder
        .enable_all()
        .thread_name("bloomkit-server")
        .build()
        .context(|| "starting the server's runtime".to_string())?;
    runtime.block_on(async {
        let server = Server::open(config)
            .await
            .map_err(|e| Error::Message(e.to_string()))?;
        let addr = server
            .local_addr()
            .context(|| "reading the listening address".to_string())?;
        let stop = terminated();
        let mut stdout = std::io::stdout();
        writeln!(stdout, "listening on {addr}")
            .and_then(|()| stdout.flush())
            .context(|| "writing to standard output".to_string())?;
        server
            .run_until(stop)
            .await
            .context(|| "shutting down".to_string())
    })
}

/// Completes on SIGINT or SIGTERM (on Windows, Ctrl-C), logging which. The handlers are
/// registered when this is called, not when it is first polled: a supervisor may send
/// SIGTERM as soon as `listening on` is printed, and without a handler by then the signal's
/// default action would kill the process with no final snapshot.
fn terminated() -> impl std::future::Future<Output = ()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let handlers = signal(SignalKind::interrupt()).and_then(|interrupt| {
            signal(SignalKind::terminate()).map(|terminate| (interrupt, terminate))
        });
        async move {
            match handlers {
                Ok((mut interrupt, mut terminate)) => {
                    tokio::select! {
                        _ = interrupt.recv() => log::notice("Received SIGINT, scheduling shutdown"),
                        _ = terminate.recv() => log::notice("Received SIGTERM, scheduling shutdown"),
                    }
                }
                // Without the handlers, Ctrl-C (and SHUTDOWN) still stop the server.
                Err(_) => {
                    let _ = tokio::signal::ctrl_c().await;
                }
            }
        }
    }
    #[cfg(not(unix))]
    {
        async {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `bloomkit serve ARGS...` resolves to, without starting anything.
    fn resolve(args: &[&str]) -> std::result::Result<Config, String> {
        let cmd = Flags::augment_args(Command::new("serve").no_binary_name(true));
        let matches = cmd.try_get_matches_from(args).map_err(|e| e.to_string())?;
        let flags = Flags::from_arg_matches(&matches).map_err(|e| e.to_string())?;
        Config::resolve(&flags.given)
    }

    #[test]
    fn every_option_is_a_flag_that_takes_its_default() {
        for directive in Directive::flags() {
            let default = directive.default_value();
            if default.is_empty() || directive.name() == "config" {
                continue;
            }
            let flag = format!("--{}", directive.name());
            assert!(
                resolve(&[&flag, &default]).is_ok(),
                "{flag} {default}: {:?}",
                resolve(&[&flag, &default])
            );
        }
    }

    #[test]
    fn the_existing_flags_and_redis_names_resolve() {
        let config = resolve(&[
            "--bind",
            "0.0.0.0",
            "--port",
            "7000",
            "--dir",
            "/tmp/x",
            "--appendfsync",
            "always",
            "--maxmemory",
            "2gb",
            "--maxclients",
            "10",
            "--timeout",
            "5",
            "--protected-mode",
            "no",
            "--threads",
            "2",
            "--loglevel",
            "warning",
            "--logfile",
            "/tmp/log",
            "--maxmemory-policy",
            "allkeys-lru",
            "--enable-debug-command",
            "local",
        ])
        .unwrap();
        assert_eq!(
            (
                config.bind.as_str(),
                config.port,
                config.maxmemory,
                config.maxclients
            ),
            ("0.0.0.0", 7000, 2 << 30, 10)
        );
        assert_eq!(
            (config.timeout_secs, config.protected_mode, config.threads),
            (5, false, Some(2))
        );
        assert_eq!(
            config.settings,
            vec![("maxmemory-policy".to_string(), "allkeys-lru".to_string())]
        );
        assert!(resolve(&["--requirepass", "a", "--requirepass-file", "/x"])
            .unwrap_err()
            .contains("cannot be used with"));
        assert!(resolve(&["--maxmemory", "lots"])
            .unwrap_err()
            .contains("'lots' is not a memory size"));
    }

    #[test]
    fn help_lines_lose_the_docs_markdown() {
        assert_eq!(
            plain("refuse (see [Connections](#connections)); `0` never"),
            "Refuse (see Connections); 0 never"
        );
        assert_eq!(plain("no links"), "No links");
    }
}
