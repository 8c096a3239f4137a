//! Files in and out: key inputs, loading filters, and writing filters atomically.
//!
//! Every error here names the file it is about, since the library's messages cannot.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufRead, BufReader, BufWriter};
use std::path::{Path, PathBuf};

use bloomkit::AnyFilter;

use crate::error::{Context, Error, Result};

/// Read buffer for key files and filters: large enough that system calls are not the cost.
const READ_BUFFER_BYTES: usize = 1 << 20;

/// One source of keys.
pub enum Input {
    /// Standard input, named `-` on the command line.
    Stdin,
    /// A file, opened before any work starts so that a typo fails fast.
    File {
        /// The path as given, for messages.
        path: PathBuf,
        /// The open file.
        file: File,
        /// Its size in bytes, for the progress bar.
        len: u64,
    },
}

impl Input {
    /// How to name this input in a message: `'keys.txt'`, or `standard input`.
    pub fn describe(&self) -> String {
        match self {
            Input::Stdin => "standard input".to_string(),
            Input::File { path, .. } => format!("'{}'", path.display()),
        }
    }
}

/// Opens every input; `-` is standard input, and no inputs at all means standard input.
///
/// # Errors
///
/// The first input that cannot be opened, by path.
pub fn open_inputs(paths: &[PathBuf]) -> Result<Vec<Input>> {
    if paths.is_empty() {
        return Ok(vec![Input::Stdin]);
    }
    paths
        .iter()
        .map(|path| {
            if path.as_os_str() == "-" {
                return Ok(Input::Stdin);
            }
            let doing = || format!("cannot open input '{}'", path.display());
            let file = File::open(path).context(doing)?;
            let len = file.metadata().context(doing)?.len();
            Ok(Input::File {
                path: path.clone(),
                file,
                len,
            })
        })
        .collect()
}

/// Turns an input into a buffered reader (standard input is locked for the duration).
pub fn reader(input: Input) -> Box<dyn BufRead> {
    match input {
        Input::Stdin => Box::new(io::stdin().lock()),
        Input::File { file, .. } => Box::new(BufReader::with_capacity(READ_BUFFER_BYTES, file)),
    }
}

/// A filter read from a file, with what the file says about it beyond the filter itself.
pub struct LoadedFilter {
    /// The filter.
    pub filter: AnyFilter,
    /// The format version in the file's header.
    pub format_version: u16,
    /// The file's size in bytes.
    pub file_bytes: u64,
}

/// Reads the filter in `path`, which must hold exactly one.
///
/// # Errors
///
/// The OS's or the library's reason (missing, truncated, corrupt, not a filter...), naming
/// `path`.
pub fn load_filter(path: &Path) -> Result<LoadedFilter> {
    let doing = || format!("cannot read filter '{}'", path.display());
    let file = File::open(path).context(doing)?;
    let file_bytes = file.metadata().context(doing)?.len();
    let mut reader = BufReader::with_capacity(READ_BUFFER_BYTES, file);
    // The library checks the version but does not hand it back, so peek at it where
    // docs/FORMAT.md puts it (offset 8, u16 little-endian) before the library reads the
    // header. It is only shown once the library has accepted the whole file.
    let head = reader.fill_buf().context(doing)?;
    let format_version = head
        .get(8..10)
        .map(|b| u16::from_le_bytes([b[0], b[1]]))
        .unwrap_or(0);
    let filter = AnyFilter::read_from(&mut reader).context(doing)?;
    // `read_from` stops at the filter's end, as it must for streams holding more than one;
    // a file handed to us as one filter with more after it is damaged, so say so.
    if !reader.fill_buf().context(doing)?.is_empty() {
        return Err(Error::Message(format!(
            "{}: unexpected bytes follow the filter; the file is corrupt or was appended to, \
             so restore it from a good copy or rebuild it",
            doing()
        )));
    }
    Ok(LoadedFilter {
        filter,
        format_version,
        file_bytes,
    })
}

/// Writes `filter` to `path` atomically, and returns the bytes written.
///
/// The filter goes to a hidden temporary file in the same directory, which is synced to disk
/// and then renamed over `path`: a crash, a full disk or an error leaves either the old file
/// or the complete new one, never half a filter that a later `query` would reject (or, worse,
/// that an older reader would trust).
///
/// # Errors
///
/// Any I/O error, naming `path`; the temporary file is removed.
pub fn write_filter(path: &Path, filter: &AnyFilter) -> Result<u64> {
    let doing = || format!("cannot write filter '{}'", path.display());
    let name = path.file_name().ok_or_else(|| {
        Error::Message(format!(
            "{}: the output path names no file; give a file name such as 'keys.bkf'",
            doing()
        ))
    })?;
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    // The process id keeps two concurrent runs from writing the same temporary file.
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".{}.tmp", std::process::id()));
    let tmp = dir.join(tmp_name);
    let file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .context(|| {
            format!(
                "{}: cannot create the temporary file '{}'",
                doing(),
                tmp.display()
            )
        })?;
    let written = write_synced(file, filter, doing).and_then(|bytes| {
        fs::rename(&tmp, path).context(doing)?;
        Ok(bytes)
    });
    if written.is_ok() {
        sync_dir(dir);
    } else {
        // Best effort: the error that matters is the one being returned.
        let _ = fs::remove_file(&tmp);
    }
    written
}

/// Writes the filter, flushes, and syncs the file to disk; returns its size.
fn write_synced(file: File, filter: &AnyFilter, doing: impl Fn() -> String) -> Result<u64> {
    let mut out = BufWriter::with_capacity(READ_BUFFER_BYTES, file);
    filter.write_to(&mut out).context(&doing)?;
    let file = out
        .into_inner()
        .map_err(|e| e.into_error())
        .context(&doing)?;
    file.sync_all().context(&doing)?;
    Ok(file.metadata().context(&doing)?.len())
}

/// Syncs a directory so that a rename in it survives a crash. Best effort: some platforms
/// and file systems cannot open or sync a directory, and the file itself is already synced.
fn sync_dir(dir: &Path) {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}
