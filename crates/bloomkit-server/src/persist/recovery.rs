//! Start-up: find the snapshot and the log generations, check that they form a complete
//! history, validate every record, cut a torn tail, and hand the result to the keyspace.
//!
//! Everything is validated before anything in the directory is changed, so a start-up that
//! stops on an error leaves the files exactly as the crash left them, for a human to look at.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{BufReader, Read, Write};
use std::path::{Path, PathBuf};

use bytes::Bytes;

use super::aof::{self, log_header, LogScan, ScanError, Tail, LOG_HEADER_LEN};
use super::dir::{self, log_file_name, Listing, SNAPSHOT_FILE};
use super::error::PersistError;
use super::snapshot::{self, SnapshotEntry, SnapshotError};

/// What start-up found on disk: the snapshot's keys, the logged commands to replay after
/// them, and what had to be repaired.
///
/// Load [`Recovery::take_entries`] into the keyspace first, then replay
/// [`Recovery::for_each_command`] in order, then log [`Recovery::warnings`].
#[derive(Debug)]
pub struct Recovery {
    entries: Vec<SnapshotEntry>,
    logs: Vec<LogPart>,
    warnings: Vec<String>,
}

/// One log generation to replay, up to its last good record.
#[derive(Debug, Clone)]
struct LogPart {
    path: PathBuf,
    generation: u64,
    valid_len: u64,
    records: u64,
}

impl Recovery {
    /// The snapshot's keys (empty without a snapshot), leaving an empty list behind.
    pub fn take_entries(&mut self) -> Vec<SnapshotEntry> {
        std::mem::take(&mut self.entries)
    }

    /// The snapshot's keys not yet taken.
    pub fn entries(&self) -> &[SnapshotEntry] {
        &self.entries
    }

    /// How many logged commands [`Recovery::for_each_command`] replays.
    pub fn logged_commands(&self) -> u64 {
        self.logs.iter().map(|l| l.records).sum()
    }

    /// What start-up repaired, one line each, for the server to log: a torn tail cut from
    /// the last log, a temporary snapshot or an already-covered log removed. Nothing that
    /// was acknowledged is ever among them, except where the file system lost it.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// Replays every logged command after the snapshot, oldest first, through `apply`.
    ///
    /// The logs were validated by [`super::Persistence::open`]; this reads them again (from
    /// the page cache, usually) up to where each was found good, so records appended since
    /// `open` are not replayed twice. It may be called more than once.
    ///
    /// Returns how many commands were replayed.
    ///
    /// # Errors
    ///
    /// [`PersistError::Replay`] naming the file and the record's offset when `apply`
    /// returns an error (start-up should stop: the log holds a command the server cannot
    /// apply); [`PersistError::Io`] or [`PersistError::CorruptLog`] if a file changed or
    /// cannot be read since `open`.
    pub fn for_each_command(
        &self,
        mut apply: impl FnMut(Vec<Bytes>) -> Result<(), String>,
    ) -> Result<u64, PersistError> {
        let mut replayed = 0;
        for part in &self.logs {
            let file =
                File::open(&part.path).map_err(|e| PersistError::io("open", &part.path, e))?;
            // Only up to the last good record: the server may be appending after it already.
            let reader = BufReader::with_capacity(1 << 16, file).take(part.valid_len);
            let scan = aof::scan_log(
                reader,
                part.valid_len,
                part.generation,
                Tail::Strict,
                |_, command| apply(command),
            )
            .map_err(|e| scan_error(&part.path, e))?;
            replayed += scan.records;
        }
        Ok(replayed)
    }
}

/// Turns a scan error into one that names the file.
fn scan_error(path: &Path, e: ScanError) -> PersistError {
    match e {
        ScanError::Corrupt { offset, reason } => PersistError::CorruptLog {
            path: path.to_path_buf(),
            offset,
            reason,
        },
        ScanError::Rejected {
            offset,
            command,
            message,
        } => PersistError::Replay {
            path: path.to_path_buf(),
            offset,
            command,
            message,
        },
        ScanError::Io(e) => PersistError::io("read", path, e),
    }
}

/// What recovery leaves for [`super::Persistence`] to carry on with.
pub(crate) struct Recovered {
    pub recovery: Recovery,
    /// The generation to append to, opened for appending.
    pub generation: u64,
    pub file: File,
    pub file_len: u64,
    /// Older generations not covered by the snapshot: generation → bytes.
    pub closed: BTreeMap<u64, u64>,
    /// Records in the logs (what the snapshot lacks).
    pub records: u64,
    /// Size of the snapshot file, 0 without one.
    pub snapshot_bytes: u64,
    /// When the snapshot was cut, in Unix ms.
    pub snapshot_unix_ms: Option<u64>,
}

/// Creates log generation `generation` with its header, durably (file and directory).
pub(crate) fn create_log(dir: &Path, generation: u64) -> Result<File, PersistError> {
    let path = dir.join(log_file_name(generation));
    let mut file = OpenOptions::new()
        .append(true)
        .create_new(true)
        .open(&path)
        .map_err(|e| PersistError::io("create", &path, e))?;
    file.write_all(&log_header(generation))
        .map_err(|e| PersistError::io("write", &path, e))?;
    Ok(file)
}

pub(crate) fn recover(dir: &Path) -> Result<Recovered, PersistError> {
    let Listing {
        logs,
        snapshot: has_snapshot,
        temps,
    } = dir::list(dir)?;
    let mut warnings = Vec::new();

    // The snapshot, if any: fully checked before it is believed.
    let snap_path = dir.join(SNAPSHOT_FILE);
    let (snapshot, snapshot_bytes) = if has_snapshot {
        let file = File::open(&snap_path).map_err(|e| PersistError::io("open", &snap_path, e))?;
        let len = file
            .metadata()
            .map_err(|e| PersistError::io("stat", &snap_path, e))?
            .len();
        let snap =
            snapshot::read_snapshot(BufReader::with_capacity(1 << 16, file), len).map_err(|e| {
                match e {
                    SnapshotError::Corrupt { offset, reason } => PersistError::CorruptSnapshot {
                        path: snap_path.clone(),
                        offset,
                        reason,
                    },
                    SnapshotError::Io(e) => PersistError::io("read", &snap_path, e),
                }
            })?;
        (Some(snap), len)
    } else {
        (None, 0)
    };
    let (snapshot_header, entries) = match snapshot {
        Some(s) => (Some(s.header), s.entries),
        None => (None, Vec::new()),
    };
    let start = snapshot_header.map_or(1, |h| h.log_generation);

    // Generations before `start` are inside the snapshot: a crash came between its rename
    // and their removal. Those from `start` on must all be there, without a gap.
    let (covered, live): (Vec<u64>, Vec<u64>) = logs.iter().partition(|&&g| g < start);
    if let Some(&first) = live.first() {
        if first != start {
            let reason = if has_snapshot {
                format!(
                    "{SNAPSHOT_FILE} says replay starts at {} but the oldest later log is {}; \
                     the commands in between are missing. Restore the missing logs",
                    log_file_name(start),
                    log_file_name(first)
                )
            } else {
                format!(
                    "there is no {SNAPSHOT_FILE}, but the logs start at {} rather than {}: the \
                     snapshot that held the older generations is gone. Restore {SNAPSHOT_FILE} \
                     from a backup",
                    log_file_name(first),
                    log_file_name(1)
                )
            };
            return Err(PersistError::Inconsistent {
                dir: dir.to_path_buf(),
                reason,
            });
        }
    } else if !covered.is_empty() {
        // The snapshot's own generation is created (durably) before the snapshot is
        // written, so it can only be missing if a file was removed by hand.
        return Err(PersistError::Inconsistent {
            dir: dir.to_path_buf(),
            reason: format!(
                "{SNAPSHOT_FILE} says replay starts at {} but that file is missing while \
                 older logs are present. Restore it, or if you restored {SNAPSHOT_FILE} alone \
                 from a backup, remove the older appendonly.*.aof files",
                log_file_name(start)
            ),
        });
    }
    for pair in live.windows(2) {
        if pair[1] != pair[0] + 1 {
            return Err(PersistError::Inconsistent {
                dir: dir.to_path_buf(),
                reason: format!(
                    "{} is missing between {} and {}: restore it",
                    log_file_name(pair[0] + 1),
                    log_file_name(pair[0]),
                    log_file_name(pair[1])
                ),
            });
        }
    }

    // Every record of every live log, checked; only the last log may end torn.
    let mut parts = Vec::new();
    let mut last_torn: Option<(PathBuf, LogScan)> = None;
    for (i, &generation) in live.iter().enumerate() {
        let path = dir.join(log_file_name(generation));
        let file = File::open(&path).map_err(|e| PersistError::io("open", &path, e))?;
        let len = file
            .metadata()
            .map_err(|e| PersistError::io("stat", &path, e))?
            .len();
        let tail = if i + 1 == live.len() {
            Tail::MayBeTorn
        } else {
            Tail::Strict
        };
        let scan = aof::scan_log(
            BufReader::with_capacity(1 << 16, file),
            len,
            generation,
            tail,
            |_, _| Ok(()),
        )
        .map_err(|e| scan_error(&path, e))?;
        parts.push(LogPart {
            path: path.clone(),
            generation,
            valid_len: scan.valid_len,
            records: scan.records,
        });
        if scan.torn.is_some() || scan.valid_len < LOG_HEADER_LEN as u64 {
            last_torn = Some((path, scan));
        }
    }

    // Everything checks out: now repair.
    for temp in &temps {
        fs::remove_file(temp).map_err(|e| PersistError::io("remove", temp, e))?;
        warnings.push(format!(
            "removed {}, a snapshot that a crash interrupted before it was complete; the \
             previous snapshot and the logs hold everything",
            temp.display()
        ));
    }
    if let Some((path, scan)) = &last_torn {
        let file = OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(|e| PersistError::io("open", path, e))?;
        file.set_len(scan.valid_len)
            .map_err(|e| PersistError::io("truncate", path, e))?;
        if scan.valid_len < LOG_HEADER_LEN as u64 {
            // Even the header was torn: the file was created just before the crash.
            let mut f = &file;
            f.write_all(&log_header(live.last().copied().unwrap_or(start)))
                .map_err(|e| PersistError::io("write", path, e))?;
        }
        file.sync_all()
            .map_err(|e| PersistError::io("fsync", path, e))?;
        if let Some(torn) = &scan.torn {
            warnings.push(format!(
                "{}: dropped {} bytes from byte {} on ({}), the end of a write that a crash \
                 cut short; the log now ends at byte {}",
                path.display(),
                torn.bytes,
                torn.offset,
                torn.reason,
                scan.valid_len.max(LOG_HEADER_LEN as u64)
            ));
        }
        if let Some(part) = parts.last_mut() {
            part.valid_len = scan.valid_len.max(LOG_HEADER_LEN as u64);
        }
    }
    for &g in &covered {
        let path = dir.join(log_file_name(g));
        fs::remove_file(&path).map_err(|e| PersistError::io("remove", &path, e))?;
        warnings.push(format!(
            "removed {}: {SNAPSHOT_FILE} already holds its commands (a crash came before the \
             clean-up that follows a snapshot)",
            path.display()
        ));
    }

    // The generation to append to: the last one, or a new one.
    let (generation, file, file_len) = match parts.last() {
        Some(part) => {
            let file = OpenOptions::new()
                .append(true)
                .open(&part.path)
                .map_err(|e| PersistError::io("open", &part.path, e))?;
            // What was replayed must be on disk before anything built on it is acknowledged.
            file.sync_data()
                .map_err(|e| PersistError::io("fsync", &part.path, e))?;
            (part.generation, file, part.valid_len)
        }
        None => {
            let file = create_log(dir, start)?;
            let path = dir.join(log_file_name(start));
            file.sync_all()
                .map_err(|e| PersistError::io("fsync", &path, e))?;
            (start, file, LOG_HEADER_LEN as u64)
        }
    };
    dir::sync_dir(dir)?;

    let closed = parts
        .iter()
        .filter(|p| p.generation != generation)
        .map(|p| (p.generation, p.valid_len))
        .collect();
    let records = parts.iter().map(|p| p.records).sum();
    Ok(Recovered {
        recovery: Recovery {
            entries,
            logs: parts,
            warnings,
        },
        generation,
        file,
        file_len,
        closed,
        records,
        snapshot_bytes,
        snapshot_unix_ms: snapshot_header.map(|h| h.created_unix_ms),
    })
}
