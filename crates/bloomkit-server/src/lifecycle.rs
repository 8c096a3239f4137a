//! What the server logs as it starts and stops ([`crate::log`]): the version and the
//! process, the settings, the data directory and what was loaded from it, the address it
//! is ready on; and at the end, why it stops and what it saved.

use std::fs;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use crate::cmd::connection::REDIS_VERSION;
use crate::config::Config;
use crate::log;
use crate::persist::files::{DataFile, SNAPSHOT_FILE};
use crate::shared::Shared;

/// The version, the process, and the settings that shape what the server does.
pub fn starting(config: &Config, persistent: bool) {
    log::notice(format_args!(
        "bloomkit {} starting (Redis {REDIS_VERSION} behaviour), pid {}",
        env!("CARGO_PKG_VERSION"),
        std::process::id()
    ));
    if let Some(path) = &config.config_file {
        log::notice(format_args!("Configuration loaded from {}", path.display()));
    }
    let persistence = if persistent {
        format!(
            "data directory {}, appendfsync {}",
            config.dir.display(),
            config.appendfsync
        )
    } else {
        "no persistence (nothing is loaded or saved)".to_string()
    };
    let maxmemory = if config.maxmemory == 0 {
        "no maxmemory".to_string()
    } else {
        format!("maxmemory {} bytes", config.maxmemory)
    };
    log::notice(format_args!(
        "{persistence}; {maxmemory}; maxclients {}; {}",
        config.maxclients,
        if config.password().is_some() {
            "clients must AUTH"
        } else {
            "no password"
        }
    ));
}

/// The sizes of the data directory's snapshot and logs, before they are loaded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DataFiles {
    /// Bytes of `dump.bks` (0 if there is none).
    pub snapshot_bytes: u64,
    /// Log files.
    pub logs: usize,
    /// Bytes of the log files together.
    pub log_bytes: u64,
}

impl DataFiles {
    /// What `dir` holds now (nothing, if it cannot be listed: loading then says why).
    pub fn of(dir: &Path) -> DataFiles {
        let mut files = DataFiles {
            snapshot_bytes: fs::metadata(dir.join(SNAPSHOT_FILE)).map_or(0, |m| m.len()),
            ..DataFiles::default()
        };
        for entry in fs::read_dir(dir).into_iter().flatten().flatten() {
            let name = entry.file_name();
            if let Some(DataFile::Log(_)) = name.to_str().and_then(DataFile::parse) {
                files.logs += 1;
                files.log_bytes += entry.metadata().map_or(0, |m| m.len());
            }
        }
        files
    }
}

/// What was loaded, and how long it took.
pub fn loaded(dir: &Path, files: DataFiles, keys: usize, replayed: u64, took: Duration) {
    log::notice(format_args!(
        "Loaded {keys} keys from {} in {:.3} s: snapshot {} bytes, {} log file{} of {} bytes ({replayed} commands replayed)",
        dir.display(),
        took.as_secs_f64(),
        files.snapshot_bytes,
        files.logs,
        if files.logs == 1 { "" } else { "s" },
        files.log_bytes,
    ));
}

/// The server takes clients.
pub fn ready(addr: SocketAddr) {
    log::notice(format_args!("Ready to accept connections on {addr}"));
}

/// Shutdown begins.
pub fn stopping(shared: &Shared, save: bool) {
    let why = shared
        .shutdown_reason()
        .unwrap_or_else(|| "asked to stop (a signal)".to_string());
    log::notice(format_args!(
        "Shutting down: {why}; {} clients connected, {} keys; {}",
        shared.stats().connected_clients(),
        shared.keyspace().len(),
        if save {
            "taking a final snapshot"
        } else {
            "no final snapshot (NOSAVE)"
        }
    ));
}

/// The final snapshot is on disk.
pub fn saved(shared: &Shared, took: Duration) {
    let bytes = fs::metadata(shared.config().dir.join(SNAPSHOT_FILE)).map_or(0, |m| m.len());
    log::notice(format_args!(
        "Final snapshot saved: {} keys, {bytes} bytes in {}, in {:.3} s",
        shared.keyspace().len(),
        SNAPSHOT_FILE,
        took.as_secs_f64()
    ));
}

/// The last line.
pub fn stopped() {
    log::notice("bloomkit is now ready to exit, bye bye...");
}
