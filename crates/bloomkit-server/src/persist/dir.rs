//! The data directory itself: listing what it holds, its lock, and directory fsyncs. The
//! files' names are in [`super::files`].

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use super::error::PersistError;
use super::files::{DataFile, LOCK_FILE};

/// What a listing of the directory found.
#[derive(Debug, Default)]
pub struct Listing {
    /// Log generations present, ascending.
    pub logs: Vec<u64>,
    /// Whether `dump.bks` exists.
    pub snapshot: bool,
    /// Leftover temporary snapshots.
    pub temps: Vec<PathBuf>,
    /// A leftover temporary manifest.
    pub manifest_temp: Option<PathBuf>,
}

/// Lists the files persistence cares about; others are left alone.
pub fn list(dir: &Path) -> Result<Listing, PersistError> {
    let mut listing = Listing::default();
    let entries = fs::read_dir(dir).map_err(|e| PersistError::io("list", dir, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| PersistError::io("list", dir, e))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        match DataFile::parse(name) {
            Some(DataFile::Snapshot) => listing.snapshot = true,
            Some(DataFile::Log(g)) => listing.logs.push(g),
            Some(DataFile::TempSnapshot(_)) => listing.temps.push(entry.path()),
            Some(DataFile::ManifestTemp) => listing.manifest_temp = Some(entry.path()),
            _ => {}
        }
    }
    listing.logs.sort_unstable();
    Ok(listing)
}

/// The `op` of the [`PersistError::Io`] a failed directory fsync reports: after a rename,
/// which of the two names a crash would leave is then unknown.
pub const DIR_FSYNC: &str = "fsync the directory";

/// Makes the directory's entries (files created, renamed or removed in it) durable.
pub fn sync_dir(dir: &Path) -> Result<(), PersistError> {
    // On Unix a directory opened read-only can be fsynced; elsewhere this is not possible
    // and not needed (Windows has no separate directory metadata to flush).
    #[cfg(unix)]
    {
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| PersistError::io(DIR_FSYNC, dir, e))?;
    }
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

/// Opens `path`, a file of the data directory, with `options`, refusing anything that is
/// not a regular file ([`PersistError::NotAFile`]): a symbolic link is not followed
/// (`O_NOFOLLOW`), so that nothing the server writes lands outside its directory; and a
/// FIFO is not waited on (`O_NONBLOCK`, which changes nothing for a regular file), so that
/// one put in a file's place cannot hang the server. `op` names the call in an error.
///
/// # Errors
///
/// [`PersistError::NotAFile`], or [`PersistError::Io`] for any other failure (a missing
/// file: its kind is `NotFound`).
pub fn open(
    path: &Path,
    options: &mut OpenOptions,
    op: &'static str,
) -> Result<File, PersistError> {
    #[cfg(unix)]
    {
        use rustix::fs::OFlags;
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags((OFlags::NOFOLLOW | OFlags::NONBLOCK).bits() as i32);
    }
    let file = match options.open(path) {
        Ok(file) => file,
        Err(e) => {
            // A link (`ELOOP`), a FIFO without a reader (`ENXIO`): say what is there.
            if let Some(found) = fs::symlink_metadata(path).ok().and_then(|m| not_a_file(&m)) {
                return Err(PersistError::NotAFile {
                    path: path.to_path_buf(),
                    found,
                });
            }
            return Err(PersistError::io(op, path, e));
        }
    };
    let meta = file
        .metadata()
        .map_err(|e| PersistError::io("stat", path, e))?;
    match not_a_file(&meta) {
        None => Ok(file),
        Some(found) => Err(PersistError::NotAFile {
            path: path.to_path_buf(),
            found,
        }),
    }
}

/// What a file that is not a regular file is, for a message; `None` for a regular file.
fn not_a_file(meta: &fs::Metadata) -> Option<&'static str> {
    let kind = meta.file_type();
    if kind.is_file() {
        return None;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return Some("a FIFO");
        }
        if kind.is_socket() {
            return Some("a socket");
        }
        if kind.is_block_device() || kind.is_char_device() {
            return Some("a device");
        }
    }
    Some(if kind.is_symlink() {
        "a symbolic link"
    } else if kind.is_dir() {
        "a directory"
    } else {
        "not a regular file"
    })
}

/// Opens a data directory file for reading (see [`open`]).
///
/// # Errors
///
/// As [`open`].
pub fn open_read(path: &Path) -> Result<File, PersistError> {
    open(path, OpenOptions::new().read(true), "open")
}

/// Checks that `dir` is a directory, or missing (it is then created): `--dir` naming a
/// regular file is refused with a message saying so.
///
/// # Errors
///
/// [`PersistError::NotADirectory`]; [`PersistError::Io`] if it cannot be created.
pub fn create(dir: &Path) -> Result<(), PersistError> {
    match fs::metadata(dir) {
        Ok(meta) if !meta.is_dir() => Err(PersistError::NotADirectory {
            path: dir.to_path_buf(),
        }),
        Ok(_) => Ok(()),
        Err(_) => fs::create_dir_all(dir).map_err(|e| PersistError::io("create", dir, e)),
    }
}

/// Checks that no server holds the directory's lock, and holds a shared lock on it until
/// the returned file is closed, so that no server starts on the directory meanwhile; nothing
/// in the directory is created or changed (a directory without a `LOCK` file was never
/// served, and gives `None`). For reading a stopped server's data.
///
/// # Errors
///
/// [`PersistError::Locked`] while a server holds the lock; [`PersistError::Io`] if the
/// lock file cannot be opened.
pub fn lock_shared(dir: &Path) -> Result<Option<File>, PersistError> {
    let path = dir.join(LOCK_FILE);
    if fs::symlink_metadata(&path).is_err() {
        return Ok(None);
    }
    let file = open_read(&path)?;
    flock(&file, dir, &path, true)?;
    Ok(Some(file))
}

/// Locks `file`, the lock file `path` of `dir`, without waiting: shared or exclusive.
fn flock(file: &File, dir: &Path, path: &Path, shared: bool) -> Result<(), PersistError> {
    #[cfg(unix)]
    {
        use rustix::fs::FlockOperation;
        let operation = if shared {
            FlockOperation::NonBlockingLockShared
        } else {
            FlockOperation::NonBlockingLockExclusive
        };
        match rustix::fs::flock(file, operation) {
            Ok(()) => {}
            Err(e) if e == rustix::io::Errno::WOULDBLOCK => {
                return Err(PersistError::Locked {
                    dir: dir.to_path_buf(),
                })
            }
            Err(e) => return Err(PersistError::io("lock", path, e.into())),
        }
    }
    #[cfg(not(unix))]
    let _ = (file, dir, path, shared);
    Ok(())
}

/// Takes the directory's lock, held until the returned file is closed (or the process dies:
/// the kernel drops an flock with its last descriptor, so a SIGKILL leaves no stale lock).
pub fn lock(dir: &Path) -> Result<File, PersistError> {
    let path = dir.join(LOCK_FILE);
    // Not truncated on open: the holder's pid stays readable until we hold the lock.
    let mut file = open(
        &path,
        OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true),
        "open",
    )?;
    flock(&file, dir, &path, false)?;
    // For a human wondering who holds it; nothing reads it back.
    let pid = format!("{}\n", std::process::id());
    file.set_len(0)
        .and_then(|()| file.write_all(pid.as_bytes()))
        .map_err(|e| PersistError::io("write", &path, e))?;
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listing_finds_logs_in_order_and_ignores_strangers() {
        let dir = tempfile::tempdir().unwrap();
        for name in [
            "appendonly.10.aof",
            "appendonly.2.aof",
            "appendonly.02.aof",
            "dump.bks",
            "dump.3.tmp",
            "notes.txt",
        ] {
            fs::write(dir.path().join(name), b"").unwrap();
        }
        let l = list(dir.path()).unwrap();
        assert_eq!(l.logs, vec![2, 10]);
        assert!(l.snapshot);
        assert_eq!(l.temps, vec![dir.path().join("dump.3.tmp")]);
    }

    #[cfg(unix)]
    #[test]
    fn a_second_lock_on_the_same_directory_fails_until_the_first_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let first = lock(dir.path()).unwrap();
        match lock(dir.path()) {
            Err(PersistError::Locked { dir: d }) => assert_eq!(d, dir.path()),
            other => panic!("{other:?}"),
        }
        drop(first);
        lock(dir.path()).unwrap();
    }
}
