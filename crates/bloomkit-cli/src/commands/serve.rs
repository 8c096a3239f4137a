//! `bloomkit serve`: the RedisBloom-compatible server, in the foreground.

use std::io::Write;
use std::path::PathBuf;

use bloomkit_server::config::Config;
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
        let mut stdout = std::io::stdout();
        writeln!(stdout, "listening on {addr}")
            .and_then(|()| stdout.flush())
            .context(|| "writing to standard output".to_string())?;
        server
            .run_until(terminated())
            .await
            .context(|| "shutting down".to_string())
    })
}

/// Completes on SIGINT or SIGTERM (on Windows, Ctrl-C), logging which.
async fn terminated() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => log::notice("Received SIGINT, scheduling shutdown"),
                    _ = term.recv() => log::notice("Received SIGTERM, scheduling shutdown"),
                }
            }
            // Without a SIGTERM handler, Ctrl-C (and SHUTDOWN) still stop the server.
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
