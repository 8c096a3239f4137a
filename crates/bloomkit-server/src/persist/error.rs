//! What can stop persistence: each error names the file, the byte offset where it applies,
//! and what to do about it.

use std::fmt;
use std::io;
use std::path::PathBuf;

/// Why the data directory could not be opened, recovered or snapshotted.
///
/// Start-up stops on any of these: the server never runs on a state that silently lacks
/// acknowledged data.
#[derive(Debug)]
pub enum PersistError {
    /// A file system call failed.
    Io {
        /// What was being done ("create", "open", "read", "fsync", "rename"...).
        op: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The error.
        source: io::Error,
    },
    /// `--dir` names something that is not a directory (a regular file, say).
    NotADirectory {
        /// The path given.
        path: PathBuf,
    },
    /// A file of the data directory is not a regular file: a symbolic link (which could
    /// make the server write outside its directory), a FIFO (which would hang it), a
    /// directory, a device or a socket.
    NotAFile {
        /// The file.
        path: PathBuf,
        /// What it is instead ("a symbolic link", "a FIFO"...).
        found: &'static str,
    },
    /// Another process holds the data directory's lock.
    Locked {
        /// The data directory.
        dir: PathBuf,
    },
    /// A log file is damaged somewhere other than a torn tail, or is shorter than what the
    /// data directory's records say it held.
    CorruptLog {
        /// The log file.
        path: PathBuf,
        /// Where the damaged header or record starts (for a file that lost its end: where
        /// it ends now).
        offset: u64,
        /// What is wrong.
        reason: String,
        /// Whether the directory has a `MANIFEST`: the way to give up the damaged records
        /// differs.
        listed: bool,
    },
    /// The data directory's `MANIFEST` is damaged.
    CorruptManifest {
        /// The manifest.
        path: PathBuf,
        /// Where the problem is.
        offset: u64,
        /// What is wrong.
        reason: String,
    },
    /// The snapshot is damaged.
    CorruptSnapshot {
        /// The snapshot file.
        path: PathBuf,
        /// Where the problem is.
        offset: u64,
        /// What is wrong.
        reason: String,
    },
    /// The files present do not form a complete history (a log generation is missing).
    Inconsistent {
        /// The data directory.
        dir: PathBuf,
        /// What is missing, and how to fix it.
        reason: String,
    },
    /// The replay callback refused a logged command.
    Replay {
        /// The log file.
        path: PathBuf,
        /// Where the record starts.
        offset: u64,
        /// The command's name and argument count.
        command: String,
        /// The callback's message.
        message: String,
    },
    /// [`super::Persistence::begin_snapshot`] was called while a snapshot is being written.
    SnapshotInProgress,
    /// The log takes no writes now: a failed write being retried, or a failure that
    /// stops it until a restart (an fsync error, a deleted file).
    LogFailed {
        /// The first failure.
        reason: String,
    },
}

impl PersistError {
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        PersistError::Io {
            op,
            path: path.into(),
            source,
        }
    }
}

impl fmt::Display for PersistError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PersistError::Io { op, path, source } => {
                write!(f, "cannot {op} {}: {source}", path.display())
            }
            PersistError::NotADirectory { path } => write!(
                f,
                "{} is not a directory: give --dir a directory (it is created if missing)",
                path.display()
            ),
            PersistError::NotAFile { path, found } => write!(
                f,
                "{} is {found}, not a regular file: the server reads and writes only regular \
                 files in its data directory; move it away, or give the server another --dir",
                path.display()
            ),
            PersistError::Locked { dir } => write!(
                f,
                "the data directory {} is in use by another bloomkit server (it holds the \
                 directory's LOCK file); stop that server, or give this one another --dir",
                dir.display()
            ),
            PersistError::CorruptLog {
                path,
                offset,
                reason,
                listed,
            } => {
                write!(
                    f,
                    "corrupt append-only log {} at byte {offset}: {reason}. Start-up stopped so \
                     that no acknowledged write is dropped silently. Restore the file from a \
                     backup; or, ",
                    path.display()
                )?;
                if *listed {
                    write!(
                        f,
                        "to give up what it lost, remove {} and {} from its directory: start-up \
                         then checks the files by the rules for a directory without them \
                         (docs/PERSISTENCE.md) and says what to do next",
                        super::files::MANIFEST_FILE,
                        super::files::SYNCED_FILE,
                    )
                } else {
                    write!(
                        f,
                        "to keep only the records before byte {offset}, truncate it with \
                         `truncate -s {offset} {}` and move every later appendonly.*.aof away",
                        path.display()
                    )
                }
            }
            PersistError::CorruptManifest {
                path,
                offset,
                reason,
            } => write!(
                f,
                "corrupt manifest {} at byte {offset}: {reason}. Start-up stopped: the \
                 manifest says which files the directory must hold. Restore it from a backup; \
                 or remove it to start from the files as they are (start-up then checks them \
                 by the rules for a directory without one, and writes a new one)",
                path.display()
            ),
            PersistError::CorruptSnapshot {
                path,
                offset,
                reason,
            } => write!(
                f,
                "corrupt snapshot {} at byte {offset}: {reason}. Start-up stopped: the logs \
                 alone cannot rebuild what the snapshot held; restore it from a backup",
                path.display()
            ),
            PersistError::Inconsistent { dir, reason } => {
                write!(
                    f,
                    "the data directory {} is incomplete: {reason}",
                    dir.display()
                )
            }
            PersistError::Replay {
                path,
                offset,
                command,
                message,
            } => write!(
                f,
                "replaying the command at byte {offset} of {} ({command}) failed: {message}",
                path.display()
            ),
            PersistError::SnapshotInProgress => {
                write!(
                    f,
                    "a snapshot is already being written; wait for it to finish"
                )
            }
            PersistError::LogFailed { reason } => write!(
                f,
                "the append-only log takes no writes now ({reason}); INFO persistence says \
                 whether it is retried (aof_write_retrying:1) or stopped until a restart"
            ),
        }
    }
}

impl std::error::Error for PersistError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            PersistError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}
