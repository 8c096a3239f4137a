//! Start-up: find the snapshot and the log generations, check that they form a complete
//! history, validate every record, cut a torn tail, and hand the result to the keyspace.
//!
//! A directory with a `MANIFEST` is checked against it: every file it lists must be there,
//! each finished generation exactly as long and with the same checksum as when it was
//! finished, and the generation being written at least as long as `SYNCED` says was
//! fsynced. A directory without one (written by a build from before manifests, or whose
//! manifest was removed by hand) is checked by what the files say of each other, as those
//! builds did, and then given a manifest.
//!
//! Everything is validated before anything in the directory is changed, so a start-up that
//! stops on an error leaves the files exactly as the crash left them, for a human to look at.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{BufReader, Read, Write};
use std::path::{Path, PathBuf};

use bytes::Bytes;
use xxhash_rust::xxh3::Xxh3Default;

use super::dir::{self, Listing};
use super::error::PersistError;
use super::files::{log_file_name, MANIFEST_FILE, SNAPSHOT_FILE, SYNCED_FILE};
use super::log::format::{
    self as aof, log_header, LogScan, ScanError, Tail, TornTail, LOG_HEADER_LEN,
};
use super::log::synced::{self, SyncedFile, SyncedMark};
use super::manifest::{self, Manifest, Sealed, SnapshotId};
use super::snapshot::{self, Snapshot, SnapshotEntry, SnapshotError};

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
    /// The commands in it (its records but transaction markers).
    commands: u64,
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
        self.logs.iter().map(|l| l.commands).sum()
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
            let file = dir::open_read(&part.path)?;
            // Only up to the last good record: the server may be appending after it already.
            let reader = BufReader::with_capacity(1 << 16, file).take(part.valid_len);
            let scan = aof::scan_log(
                reader,
                part.valid_len,
                part.generation,
                Tail::Strict,
                |_, command| apply(command),
            )
            .map_err(|e| scan_error(&part.path, e, false))?;
            replayed += scan.commands;
        }
        Ok(replayed)
    }
}

/// Turns a scan error into one that names the file.
fn scan_error(path: &Path, e: ScanError, listed: bool) -> PersistError {
    match e {
        ScanError::Corrupt { offset, reason } => PersistError::CorruptLog {
            path: path.to_path_buf(),
            offset,
            reason,
            listed,
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
    /// The checksum's running state over the `file_len` bytes of `file`.
    pub hasher: Xxh3Default,
    /// Older generations not covered by the snapshot: generation → what it holds.
    pub closed: BTreeMap<u64, Sealed>,
    /// Records in the logs (what the snapshot lacks).
    pub records: u64,
    /// The snapshot file, exactly, if there is one.
    pub snapshot: Option<SnapshotId>,
    /// When the snapshot was cut, in Unix ms.
    pub snapshot_unix_ms: Option<u64>,
    /// `SYNCED`, saying that all of `file_len` is on disk.
    pub synced: SyncedFile,
}

/// Creates log generation `generation` with its header and fsyncs it. The caller fsyncs the
/// directory (or writes a manifest, which does) before relying on it.
pub(crate) fn create_log(dir: &Path, generation: u64) -> Result<File, PersistError> {
    let path = dir.join(log_file_name(generation));
    let mut file = dir::open(
        &path,
        OpenOptions::new().append(true).create_new(true),
        "create",
    )?;
    file.write_all(&log_header(generation))
        .map_err(|e| PersistError::io("write", &path, e))?;
    // A generation a manifest lists always holds at least its header: one shorter was
    // damaged, not cut by a crash.
    file.sync_all()
        .map_err(|e| PersistError::io("fsync", &path, e))?;
    Ok(file)
}

/// One log generation, found and checked.
struct Found {
    generation: u64,
    path: PathBuf,
    scan: LogScan,
    hasher: Xxh3Default,
}

/// What checking the directory decided, before anything is changed.
struct Plan {
    entries: Vec<SnapshotEntry>,
    snapshot: Option<SnapshotId>,
    snapshot_unix_ms: Option<u64>,
    /// The generation replay starts at.
    start: u64,
    /// Generations `start`, `start + 1`... that hold what the snapshot lacks; only the last
    /// may end torn.
    found: Vec<Found>,
    /// Files to remove, each with the warning that says why.
    remove: Vec<(PathBuf, String)>,
    warnings: Vec<String>,
    /// Whether the directory has a manifest.
    listed: bool,
    /// What `SYNCED` says of the last generation, if it speaks of it.
    mark: Option<SyncedMark>,
}

pub(crate) fn recover(dir: &Path) -> Result<Recovered, PersistError> {
    let (plan, listing, manifest) = plan(dir)?;
    apply(dir, plan, &listing, manifest.as_ref())
}

/// Reads and checks everything in `dir`, changing nothing: what to load, and what to
/// repair.
fn plan(dir: &Path) -> Result<(Plan, Listing, Option<Manifest>), PersistError> {
    let manifest = manifest::read(dir)?;
    let listing = dir::list(dir)?;
    let snapshot = if listing.snapshot {
        Some(read_snapshot(dir)?)
    } else {
        None
    };
    let plan = match &manifest {
        Some(m) => plan_listed(dir, m, &listing, snapshot)?,
        None => plan_unlisted(dir, &listing, snapshot)?,
    };
    Ok((plan, listing, manifest))
}

/// Checks the directory as [`recover`] does, and returns what start-up would load, without
/// changing anything: a torn tail is left in its file (replay stops before it, and a
/// warning says so), leftovers are left where they are, no manifest is written.
pub(crate) fn inspect(dir: &Path) -> Result<Recovery, PersistError> {
    let (plan, _, _) = plan(dir)?;
    let mut warnings = plan.warnings;
    let logs = plan
        .found
        .into_iter()
        // A generation whose header itself was torn holds nothing to replay.
        .filter(|f| f.scan.valid_len >= LOG_HEADER_LEN as u64)
        .map(|f| {
            if let Some(torn) = &f.scan.torn {
                warnings.push(format!(
                    "{}: left out {} bytes from byte {} on, a torn tail (a crash in the middle \
                     of a write); the server cuts it at its next start",
                    f.path.display(),
                    torn.bytes,
                    torn.offset
                ));
            }
            LogPart {
                path: f.path,
                generation: f.generation,
                valid_len: f.scan.valid_len,
                commands: f.scan.commands,
            }
        })
        .collect();
    Ok(Recovery {
        entries: plan.entries,
        logs,
        warnings,
    })
}

/// Reads and fully checks `dump.bks`.
fn read_snapshot(dir: &Path) -> Result<(Snapshot, SnapshotId), PersistError> {
    let path = dir.join(SNAPSHOT_FILE);
    let file = dir::open_read(&path)?;
    let len = file
        .metadata()
        .map_err(|e| PersistError::io("stat", &path, e))?
        .len();
    let snap = snapshot::read_snapshot(BufReader::with_capacity(1 << 16, file), len).map_err(
        |e| match e {
            SnapshotError::Corrupt { offset, reason } => PersistError::CorruptSnapshot {
                path: path.clone(),
                offset,
                reason,
            },
            SnapshotError::Io(e) => PersistError::io("read", &path, e),
        },
    )?;
    let id = SnapshotId {
        generation: snap.header.log_generation,
        len,
        checksum: snap.checksum,
    };
    Ok((snap, id))
}

/// Scans one log generation, every record checked.
fn scan_file(
    dir: &Path,
    generation: u64,
    tail: Tail,
    listed: bool,
) -> Result<(Found, u64), PersistError> {
    let path = dir.join(log_file_name(generation));
    let file = dir::open_read(&path)?;
    let len = file
        .metadata()
        .map_err(|e| PersistError::io("stat", &path, e))?
        .len();
    let (scan, hasher) = aof::scan_log_hashed(
        BufReader::with_capacity(1 << 16, file),
        len,
        generation,
        tail,
        |_, _| Ok(()),
    )
    .map_err(|e| scan_error(&path, e, listed))?;
    let found = Found {
        generation,
        path,
        scan,
        hasher,
    };
    Ok((found, len))
}

/// The rules for a directory without a manifest: the snapshot names where replay starts,
/// and the logs from there on must be consecutive.
fn plan_unlisted(
    dir: &Path,
    listing: &Listing,
    snapshot: Option<(Snapshot, SnapshotId)>,
) -> Result<Plan, PersistError> {
    let has_snapshot = snapshot.is_some();
    let (entries, header, id) = match snapshot {
        Some((s, id)) => (s.entries, Some(s.header), Some(id)),
        None => (Vec::new(), None, None),
    };
    let start = header.map_or(1, |h| h.log_generation);

    // Generations before `start` are inside the snapshot: a crash came between its rename
    // and their removal. Those from `start` on must all be there, without a gap.
    let (covered, live): (Vec<u64>, Vec<u64>) = listing.logs.iter().partition(|&&g| g < start);
    let inconsistent = |reason: String| PersistError::Inconsistent {
        dir: dir.to_path_buf(),
        reason,
    };
    if let Some(&first) = live.first() {
        if first != start {
            return Err(inconsistent(if has_snapshot {
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
            }));
        }
    } else if !covered.is_empty() {
        // The snapshot's own generation is created (durably) before the snapshot is
        // written, so it can only be missing if a file was removed by hand.
        return Err(inconsistent(format!(
            "{SNAPSHOT_FILE} says replay starts at {} but that file is missing while older \
             logs are present. Restore it, or if you restored {SNAPSHOT_FILE} alone from a \
             backup, remove the older appendonly.*.aof files",
            log_file_name(start)
        )));
    }
    for pair in live.windows(2) {
        if pair[1] != pair[0] + 1 {
            return Err(inconsistent(format!(
                "{} is missing between {} and {}: restore it",
                log_file_name(pair[0] + 1),
                log_file_name(pair[0]),
                log_file_name(pair[1])
            )));
        }
    }

    // `SYNCED` is written only once the generation it names is on disk (and, in a
    // directory that keeps a manifest, listed): one naming a generation from `start` on
    // that is not here says that a log was removed, not that a crash came. Without this,
    // a directory whose MANIFEST and newest log were removed would load without a word.
    if let Some(mark) = synced::read(dir)? {
        if mark.generation >= start && !live.contains(&mark.generation) {
            return Err(inconsistent(format!(
                "{SYNCED_FILE} says {} was being written, with its first {} bytes fsynced, but                  that file is missing: the commands it held are gone. Restore it; or, to start                  from the files as they are, remove {SYNCED_FILE}",
                log_file_name(mark.generation),
                mark.len
            )));
        }
    }

    // Every record of every live log, checked; only the last log may end torn.
    let mut found = Vec::new();
    for (i, &generation) in live.iter().enumerate() {
        let tail = if i + 1 == live.len() {
            Tail::MayBeTorn
        } else {
            Tail::Strict
        };
        found.push(scan_file(dir, generation, tail, false)?.0);
    }

    let mut warnings = Vec::new();
    if let Some(newer) = found.iter().find(|f| f.scan.version >= aof::LOG_VERSION_V2) {
        // Removed by hand, most likely to give up damaged files: say what that costs.
        warnings.push(format!(
            "{} is missing, yet {} was written by a build that keeps one: the files were \
             checked by the rules for a directory without it, which cannot tell whether the \
             newest generations are all there; a new {MANIFEST_FILE} was written",
            dir.join(MANIFEST_FILE).display(),
            newer.path.display()
        ));
    }
    let remove = covered
        .iter()
        .map(|&g| {
            let path = dir.join(log_file_name(g));
            let why = format!(
                "removed {}: {SNAPSHOT_FILE} already holds its commands (a crash came before the \
                 clean-up that follows a snapshot)",
                path.display()
            );
            (path, why)
        })
        .collect();
    Ok(Plan {
        entries,
        snapshot: id,
        snapshot_unix_ms: header.map(|h| h.created_unix_ms),
        start,
        found,
        remove,
        warnings,
        listed: false,
        mark: None,
    })
}

/// The rules for a directory with a manifest: every file it lists, exactly.
fn plan_listed(
    dir: &Path,
    m: &Manifest,
    listing: &Listing,
    snapshot: Option<(Snapshot, SnapshotId)>,
) -> Result<Plan, PersistError> {
    let inconsistent = |reason: String| PersistError::Inconsistent {
        dir: dir.to_path_buf(),
        reason,
    };
    let as_they_are = format!(
        "to start from the files as they are, remove {MANIFEST_FILE} and {SYNCED_FILE} \
         (start-up then checks them by the rules for a directory without them, see \
         docs/PERSISTENCE.md)"
    );
    let give_up = format!("Restore it from a backup; or, {as_they_are}");
    let mut warnings = Vec::new();
    let describe = |id: &SnapshotId| {
        format!(
            "starting replay at {}, {} bytes, checksum {:#018x}",
            log_file_name(id.generation),
            id.len,
            id.checksum
        )
    };

    // Which snapshot `dump.bks` is, and so where replay starts.
    let (entries, id, unix_ms, start) = match (snapshot, m.snapshot) {
        (Some((snap, found)), listed) if Some(found) == listed => (
            snap.entries,
            Some(found),
            Some(snap.header.created_unix_ms),
            m.first_log,
        ),
        (Some((snap, found)), _) if Some(found) == m.pending => {
            warnings.push(format!(
                "{} is the snapshot a crash interrupted while it was being installed; it is \
                 complete and checked, and replaces the previous one",
                dir.join(SNAPSHOT_FILE).display()
            ));
            let start = found.generation;
            (
                snap.entries,
                Some(found),
                Some(snap.header.created_unix_ms),
                start,
            )
        }
        (Some((_, found)), listed) => {
            let expected = match listed {
                Some(id) => format!("the one {MANIFEST_FILE} lists ({})", describe(&id)),
                None => format!("{MANIFEST_FILE} lists no snapshot"),
            };
            return Err(inconsistent(format!(
                "{SNAPSHOT_FILE} ({}) is not {expected}: it was replaced or restored from \
                 another time (or written by an older build that keeps no manifest). Put the \
                 listed one back; or, {as_they_are}",
                describe(&found)
            )));
        }
        (None, Some(listed)) => {
            return Err(inconsistent(format!(
                "{SNAPSHOT_FILE} is missing: {MANIFEST_FILE} lists it ({}). {give_up}",
                describe(&listed)
            )));
        }
        // No snapshot yet (one being installed when a crash came had not been renamed).
        (None, None) => (Vec::new(), None, None, m.first_log),
    };

    let open = m.open_generation();
    let mark = synced::read(dir)?.filter(|mark| mark.generation == open);
    let mut found = Vec::new();
    for generation in start..=open {
        let path = dir.join(log_file_name(generation));
        let sealed = m.sealed(generation);
        if !listing.logs.contains(&generation) {
            let what = match sealed {
                Some(s) => format!("a finished generation of {} bytes", s.len),
                None => "the generation being written".to_string(),
            };
            return Err(inconsistent(format!(
                "{} is missing: {MANIFEST_FILE} lists it as {what}. {give_up}",
                path.display()
            )));
        }
        let corrupt = |offset: u64, reason: String| PersistError::CorruptLog {
            path: path.clone(),
            offset,
            reason,
            listed: true,
        };
        match sealed {
            Some(s) => {
                let (f, len) = scan_file(dir, generation, Tail::Strict, true)?;
                if len != s.len {
                    let change = if len < s.len {
                        format!("its last {} bytes are missing", s.len - len)
                    } else {
                        format!("{} bytes were added to it since", len - s.len)
                    };
                    return Err(corrupt(
                        len.min(s.len),
                        format!(
                            "the file is {len} bytes long, but it was {} bytes when it was \
                             finished ({MANIFEST_FILE}): {change}",
                            s.len
                        ),
                    ));
                }
                if f.scan.checksum != s.checksum {
                    return Err(corrupt(
                        0,
                        format!(
                            "the file's checksum is {:#018x}, but it was {:#018x} when it was \
                             finished ({MANIFEST_FILE}): its records were changed or replaced",
                            f.scan.checksum, s.checksum
                        ),
                    ));
                }
                found.push(f);
            }
            None => {
                let (f, len) = scan_file(dir, generation, Tail::MayBeTorn, true)?;
                if f.scan.valid_len < LOG_HEADER_LEN as u64 {
                    // Its header was fsynced before the manifest listed it.
                    return Err(corrupt(
                        0,
                        format!(
                            "the file is {len} bytes long, without a whole header, although \
                             {MANIFEST_FILE} lists it (so its header was on disk): it was \
                             emptied or damaged"
                        ),
                    ));
                }
                // An unfinished transaction's records may have been fsynced: they count
                // as there, though they are dropped.
                if let Some(mark) = mark.filter(|mark| mark.len > f.scan.intact_len) {
                    let now = if f.scan.torn.is_some() {
                        format!(
                            "its whole records end at byte {} (the file is {len} bytes long)",
                            f.scan.intact_len
                        )
                    } else {
                        format!("it is {len} bytes long")
                    };
                    return Err(corrupt(
                        f.scan.intact_len,
                        format!(
                            "{now}, but its first {} bytes had been fsynced ({SYNCED_FILE}): \
                             records that were on disk are gone, which no crash does; the file \
                             was cut short or damaged outside the server",
                            mark.len
                        ),
                    ));
                }
                found.push(f);
            }
        }
    }

    // Files the manifest does not list.
    let mut remove = Vec::new();
    for &generation in &listing.logs {
        let path = dir.join(log_file_name(generation));
        if generation < start {
            let why = format!(
                "removed {}: {SNAPSHOT_FILE} already holds its commands (a crash came before \
                 the clean-up that follows a snapshot)",
                path.display()
            );
            remove.push((path, why));
        } else if generation > open {
            // A rotation writes the next generation's header, then the manifest that lists
            // it, and only then appends to it: unlisted, it can hold a header and nothing
            // more.
            let empty = generation == open + 1
                && scan_file(dir, generation, Tail::MayBeTorn, true)
                    .is_ok_and(|(f, _)| f.scan.records == 0);
            if !empty {
                return Err(inconsistent(format!(
                    "{} is not listed in {MANIFEST_FILE}, which ends at {}, yet it holds \
                     records (or is not an empty log): it does not belong to this directory's \
                     history as the manifest records it. Move it away; or, {as_they_are}",
                    path.display(),
                    log_file_name(open)
                )));
            }
            let why = format!(
                "removed {}: a new generation that a crash interrupted before {MANIFEST_FILE} \
                 listed it; it held no records",
                path.display()
            );
            remove.push((path, why));
        }
    }
    Ok(Plan {
        entries,
        snapshot: id,
        snapshot_unix_ms: unix_ms,
        start,
        found,
        remove,
        warnings,
        listed: true,
        mark,
    })
}

/// The warning for a torn tail cut from the last generation.
fn torn_warning(
    path: &Path,
    scan: &LogScan,
    torn: &TornTail,
    mark: Option<SyncedMark>,
    listed: bool,
) -> String {
    let why = match mark {
        Some(mark) => format!(
            "the bytes dropped all came after byte {}, the end of the last fsync \
             ({SYNCED_FILE}), which is where a crash in the middle of a write leaves such a tail",
            mark.len
        ),
        None if listed => "a crash in the middle of a write leaves such a tail".to_string(),
        None => format!(
            "a crash in the middle of a write leaves such a tail, and so does a file cut short \
             outside the server: without {MANIFEST_FILE} and {SYNCED_FILE} the two cannot be \
             told apart"
        ),
    };
    let what =
        match (torn.records, torn.incomplete) {
            (0, _) => "1 incomplete record".to_string(),
            (n, incomplete) => {
                format!(
            "the {n} complete records of a transaction that a crash interrupted in the middle \
             of its EXEC (its MULTI record and {} commands, none of them acknowledged){}",
            n - 1,
            if incomplete { " and 1 incomplete record" } else { "" }
        )
            }
        };
    format!(
        "{}: dropped {} bytes from byte {} on, {what} ({}); the log now ends at byte {} after \
         {} complete records; {why}",
        path.display(),
        torn.bytes,
        torn.offset,
        torn.reason,
        scan.valid_len.max(LOG_HEADER_LEN as u64),
        scan.records
    )
}

/// Carries out the plan: the repairs, the file to append to, the manifest.
fn apply(
    dir: &Path,
    plan: Plan,
    listing: &Listing,
    found_manifest: Option<&Manifest>,
) -> Result<Recovered, PersistError> {
    let Plan {
        entries,
        snapshot,
        snapshot_unix_ms,
        start,
        mut found,
        remove,
        mut warnings,
        listed,
        mark,
    } = plan;

    // Everything checks out: now repair.
    for temp in &listing.temps {
        fs::remove_file(temp).map_err(|e| PersistError::io("remove", temp, e))?;
        warnings.push(format!(
            "removed {}, a snapshot that a crash interrupted before it was complete; the \
             previous snapshot and the logs hold everything",
            temp.display()
        ));
    }
    if let Some(temp) = &listing.manifest_temp {
        fs::remove_file(temp).map_err(|e| PersistError::io("remove", temp, e))?;
        warnings.push(format!(
            "removed {}, a manifest that a crash interrupted before it replaced {MANIFEST_FILE}",
            temp.display()
        ));
    }
    if let Some(last) = found.last_mut() {
        let scan = &last.scan;
        if scan.torn.is_some() || scan.valid_len < LOG_HEADER_LEN as u64 {
            let path = &last.path;
            let file = dir::open(path, OpenOptions::new().write(true), "open")?;
            file.set_len(scan.valid_len)
                .map_err(|e| PersistError::io("truncate", path, e))?;
            if scan.valid_len < LOG_HEADER_LEN as u64 {
                // Even the header was torn (a directory without a manifest only): the file
                // was created just before the crash.
                let header = log_header(last.generation);
                let mut f = &file;
                f.write_all(&header)
                    .map_err(|e| PersistError::io("write", path, e))?;
                last.hasher = Xxh3Default::new();
                last.hasher.update(&header);
            }
            file.sync_all()
                .map_err(|e| PersistError::io("fsync", path, e))?;
            if let Some(torn) = &scan.torn {
                warnings.push(torn_warning(path, scan, torn, mark, listed));
            }
            let headerless = scan.valid_len < LOG_HEADER_LEN as u64;
            last.scan.valid_len = scan.valid_len.max(LOG_HEADER_LEN as u64);
            if headerless {
                // What the file holds now: a header in this build's version.
                last.scan.version = aof::LOG_VERSION;
                last.scan.checksum = last.hasher.digest();
            }
        }
    }
    for (path, why) in &remove {
        fs::remove_file(path).map_err(|e| PersistError::io("remove", path, e))?;
        warnings.push(why.clone());
    }

    // The generation to append to: the last one, or a new one (also after an upgrade: a
    // generation in an older format is finished as it is, so that a build that cannot read
    // transactions never finds one in a file it would read).
    let (generation, file, file_len, hasher) = match found.last() {
        Some(last) if last.scan.version < aof::LOG_VERSION => {
            let next = last.generation + 1;
            let file = create_log(dir, next)?;
            let mut hasher = Xxh3Default::new();
            hasher.update(&log_header(next));
            (next, file, LOG_HEADER_LEN as u64, hasher)
        }
        Some(last) => {
            let file = dir::open(&last.path, OpenOptions::new().append(true), "open")?;
            // What was replayed must be on disk before anything built on it is acknowledged.
            file.sync_data()
                .map_err(|e| PersistError::io("fsync", &last.path, e))?;
            (
                last.generation,
                file,
                last.scan.valid_len,
                last.hasher.clone(),
            )
        }
        None => {
            let file = create_log(dir, start)?;
            let mut hasher = Xxh3Default::new();
            hasher.update(&log_header(start));
            (start, file, LOG_HEADER_LEN as u64, hasher)
        }
    };
    let closed: BTreeMap<u64, Sealed> = found
        .iter()
        .filter(|f| f.generation != generation)
        .map(|f| {
            let sealed = Sealed {
                len: f.scan.valid_len,
                checksum: f.scan.checksum,
            };
            (f.generation, sealed)
        })
        .collect();
    // What the directory holds now, written down (unless the manifest says it already);
    // the directory fsync covers the repairs above too.
    let manifest = Manifest {
        snapshot,
        pending: None,
        first_log: start,
        sealed: closed.values().copied().collect(),
    };
    if found_manifest == Some(&manifest) {
        dir::sync_dir(dir)?;
    } else {
        manifest::write(dir, &manifest)?;
    }
    let synced = SyncedFile::open(
        dir,
        SyncedMark {
            generation,
            len: file_len,
        },
    )?;

    let records = found.iter().map(|f| f.scan.records).sum();
    let logs = found
        .into_iter()
        .map(|f| LogPart {
            path: f.path,
            generation: f.generation,
            valid_len: f.scan.valid_len,
            commands: f.scan.commands,
        })
        .collect();
    Ok(Recovered {
        recovery: Recovery {
            entries,
            logs,
            warnings,
        },
        generation,
        file,
        file_len,
        hasher,
        closed,
        records,
        snapshot,
        snapshot_unix_ms,
        synced,
    })
}
