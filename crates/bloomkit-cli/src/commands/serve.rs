//! `bloomkit serve`: the RedisBloom-compatible server, in the foreground.

use std::io::Write;
use std::path::PathBuf;

use bloomkit_server::config::Config;
use bloomkit_server::config_file::ConfigFile;
use bloomkit_server::log::{self, Level};
use bloomkit_server::server::Server;

use crate::error::{Context, Error, Result};

/// `--loglevel` and `--logfile`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogOptions {
    /// The least important level written.
    pub level: String,
    /// The file to log to; standard error without one.
    pub file: Option<PathBuf>,
}

/// Reads `--config FILE` (if given) into `config` and `log`, where `given` says the
/// command line did not set the option already (a flag wins over the file).
///
/// # Errors
///
/// When the file cannot be read or a line of it is wrong (the message names the line).
pub fn with_config_file(
    mut config: Config,
    mut log: LogOptions,
    path: Option<PathBuf>,
    given: impl Fn(&str) -> bool,
) -> Result<(Config, LogOptions)> {
    let Some(path) = path else {
        return Ok((config, log));
    };
    let file = ConfigFile::read(&path).map_err(|e| Error::Message(e.to_string()))?;
    file.apply_startup(&mut config, &given)
        .map_err(|e| Error::Message(e.to_string()))?;
    if let Some(level) = file.last("loglevel").filter(|_| !given("loglevel")) {
        log.level = level.value();
    }
    if let Some(logfile) = file.last("logfile").filter(|_| !given("logfile")) {
        let value = logfile.value();
        log.file = (!value.is_empty()).then(|| PathBuf::from(value));
    }
    config.config_file = Some(path);
    Ok((config, log))
}

/// Starts a multi-threaded runtime, binds the server, prints `listening on ADDR` (the
/// real port when `--port 0`, so scripts and tests can find it) and serves until SIGINT
/// (Ctrl-C), SIGTERM or a client's `SHUTDOWN`, then shuts down gracefully.
///
/// # Errors
///
/// When the address cannot be bound, or the log cannot be synced at shutdown.
pub fn run(config: Config, threads: Option<usize>, logging: &LogOptions) -> Result<()> {
    let level: Level = logging
        .level
        .parse()
        .map_err(|e: log::ParseLevelError| Error::Message(e.to_string()))?;
    log::init(level, logging.file.as_deref()).map_err(|e| Error::Message(e.to_string()))?;
    // Before the first filter is allocated: a setting of the allocator only, so whether it
    // took changes nothing but memory use.
    crate::malloc::fix_mmap_threshold();
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if let Some(threads) = threads {
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

/// The password in `path` (`--requirepass-file`): its first line, without the line break.
///
/// # Errors
///
/// When the file cannot be read, or its first line is empty.
pub fn read_password(path: &std::path::Path) -> Result<String> {
    let text = std::fs::read_to_string(path)
        .context(|| format!("reading the password file {}", path.display()))?;
    let line = text.lines().next().unwrap_or_default();
    if line.is_empty() {
        return Err(Error::Message(format!(
            "the password file {} is empty: write the password on its first line",
            path.display()
        )));
    }
    Ok(line.to_string())
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
