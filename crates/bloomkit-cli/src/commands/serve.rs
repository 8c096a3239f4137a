//! `bloomkit serve`: the RedisBloom-compatible server, in the foreground.

use std::io::Write;

use bloomkit_server::config::Config;
use bloomkit_server::server::Server;

use crate::error::{Context, Error, Result};

/// Starts a multi-threaded runtime, binds the server, prints `listening on ADDR` (the
/// real port when `--port 0`, so scripts and tests can find it) and serves until SIGINT
/// (Ctrl-C), SIGTERM or a client's `SHUTDOWN`, then shuts down gracefully.
///
/// # Errors
///
/// When the address cannot be bound, or the log cannot be synced at shutdown.
pub fn run(config: Config, threads: Option<usize>) -> Result<()> {
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

/// Completes on SIGINT or SIGTERM (on Windows, Ctrl-C).
async fn terminated() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
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
