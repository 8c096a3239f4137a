//! Files in and out: key inputs, loading filters, writing filters atomically, and the lock
//! that keeps two writers of one filter file from losing each other's changes.
//!
//! Every error here names the file it is about, since the library's messages cannot.

use std::fs::{self, File, OpenOptions, TryLockError};
use std::io::{self, BufRead, BufReader, BufWriter, IsTerminal, Read, Write};
use std::path::{Path, PathBuf};

use bloomkit::redisbloom::{RedisBloomChain, RedisCuckooFilter};
use bloomkit::{AnyFilter, FilterKind};

use crate::error::{Context, Error, Result};

/// What can be written as a filter file: a library filter, or (for `bloomkit copy`) a
/// server's value whose encoding is a filter file of a kind `AnyFilter` does not hold.
pub trait Encode {
    /// Writes the file's bytes.
    ///
    /// # Errors
    ///
    /// Whatever writing returns.
    fn encode_to(&self, out: &mut dyn Write) -> bloomkit::Result<()>;
}

impl Encode for AnyFilter {
    fn encode_to(&self, out: &mut dyn Write) -> bloomkit::Result<()> {
        self.write_to(out)
    }
}

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
        Input::Stdin => {
            crate::keys::tell_if_typed();
            Box::new(io::stdin().lock())
        }
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

/// Whether a path on the command line is `-`, standard input or output.
pub fn is_dash(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// How to name a filter path in a message: `'f.bkf'`, or `standard input` for `-`.
pub fn describe_filter(path: &Path) -> String {
    if is_dash(path) {
        "standard input".to_string()
    } else {
        format!("'{}'", path.display())
    }
}

/// A filter imported from RedisBloom ([`FilterKind::IMPORTED`]): it hashes an item's bytes
/// by RedisBloom's rules, so [`AnyFilter`] does not hold it; `bloomkit copy` writes such
/// files from RedisBloom's keys, and `query` and `info` read them.
pub enum Imported {
    /// A RedisBloom Bloom filter chain (`MBbloom--`).
    Chain(RedisBloomChain),
    /// A RedisBloom cuckoo filter (`MBbloomCF`).
    Cuckoo(RedisCuckooFilter),
}

impl Imported {
    /// Whether `item` may be in the filter.
    pub fn contains(&self, item: &[u8]) -> bool {
        match self {
            Imported::Chain(f) => f.contains(item),
            Imported::Cuckoo(f) => f.contains(item),
        }
    }

    /// Its kind.
    pub fn kind(&self) -> FilterKind {
        match self {
            Imported::Chain(_) => FilterKind::RedisBloomChain,
            Imported::Cuckoo(_) => FilterKind::RedisCuckoo,
        }
    }
}

/// What a filter file holds: a library filter, or one imported from RedisBloom.
pub enum Readable {
    /// One of the library's kinds.
    Library(LoadedFilter),
    /// A RedisBloom kind.
    Imported {
        /// The filter.
        filter: Imported,
        /// The format version in the file's header.
        format_version: u16,
        /// The file's size in bytes.
        file_bytes: u64,
    },
}

/// Reads the filter in `path` (standard input for `-`), which must hold exactly one, of a
/// kind the library's [`AnyFilter`] holds.
///
/// # Errors
///
/// The OS's or the library's reason (missing, truncated, corrupt, not a filter...), naming
/// `path`; a filter imported from RedisBloom, which only `query` and `info` read.
pub fn load_filter(path: &Path) -> Result<LoadedFilter> {
    library_only(path, load_readable(path)?)
}

/// The library filter `path` holds; an error naming the kind for an imported one.
fn library_only(path: &Path, readable: Readable) -> Result<LoadedFilter> {
    match readable {
        Readable::Library(loaded) => Ok(loaded),
        Readable::Imported { filter, .. } => Err(Error::Message(format!(
            "cannot use filter {}: it holds a {} filter imported from RedisBloom (hashed by \
             RedisBloom's rules), which `bloomkit query` and `bloomkit info` read but no other \
             subcommand; to change it, load it into a key (bloomkit copy FILE \
             redis://host:port/KEY) and use BF.* or CF.* there",
            describe_filter(path),
            filter.kind()
        ))),
    }
}

/// Reads the filter in `path` (standard input for `-`), which must hold exactly one, of any
/// kind a file can hold.
///
/// # Errors
///
/// The OS's or the library's reason (missing, truncated, corrupt, not a filter...), naming
/// `path`.
pub fn load_readable(path: &Path) -> Result<Readable> {
    let doing = || format!("cannot read filter {}", describe_filter(path));
    if is_dash(path) {
        return load_from(io::stdin().lock(), doing);
    }
    let file = File::open(path).context(doing)?;
    load_from(BufReader::with_capacity(READ_BUFFER_BYTES, file), doing)
}

/// Reads exactly one filter from `reader`; `doing` names the source in errors.
fn load_from(reader: impl BufRead, doing: impl Fn() -> String) -> Result<Readable> {
    let mut reader = CountingReader {
        inner: reader,
        count: 0,
    };
    // The library checks the version and the kind but does not hand them back, so read them
    // where docs/FORMAT.md puts them (offsets 8 and 10, u16 little-endian) and hand the
    // library the same bytes. The version is only shown once the library has accepted the
    // whole file; the kind picks the reader.
    let mut head = Vec::with_capacity(12);
    (&mut reader)
        .take(12)
        .read_to_end(&mut head)
        .context(&doing)?;
    let u16_at = |at: usize| {
        head.get(at..at + 2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
    };
    let format_version = u16_at(8).unwrap_or(0);
    let kind = u16_at(10).and_then(FilterKind::from_code);
    let whole = head.as_slice().chain(&mut reader);
    let read = match kind {
        Some(FilterKind::RedisBloomChain) => {
            RedisBloomChain::read_from(whole).map(|f| Err(Imported::Chain(f)))
        }
        Some(FilterKind::RedisCuckoo) => {
            RedisCuckooFilter::read_from(whole).map(|f| Err(Imported::Cuckoo(f)))
        }
        _ => AnyFilter::read_from(whole).map(Ok),
    };
    let filter = read.context(&doing)?;
    // `read_from` stops at the filter's end, as it must for streams holding more than one.
    // A whole filter with more after it is not damage (it may sit inside other data), but
    // it is not a filter file either: say where the filter ends.
    if !reader.inner.fill_buf().context(&doing)?.is_empty() {
        return Err(Error::Message(format!(
            "{}: a whole filter ends at byte {} and more bytes follow it, where a filter file \
             holds one filter and nothing else; if the filter sits inside other data, write \
             its bytes alone to a file (the library's format::peek_header gives their length \
             from the first ones)",
            doing(),
            reader.count
        )));
    }
    Ok(match filter {
        Ok(filter) => Readable::Library(LoadedFilter {
            filter,
            format_version,
            file_bytes: reader.count,
        }),
        Err(filter) => Readable::Imported {
            filter,
            format_version,
            file_bytes: reader.count,
        },
    })
}

/// Counts the bytes read through it.
struct CountingReader<R> {
    inner: R,
    count: u64,
}

impl<R: Read> Read for CountingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count += n as u64;
        Ok(n)
    }
}

/// Whether `a` and `b` name the same existing file (through links, `..` or another
/// spelling).
pub fn same_file(a: &Path, b: &Path) -> bool {
    let (Ok(a_meta), Ok(b_meta)) = (fs::metadata(a), fs::metadata(b)) else {
        return false;
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        a_meta.dev() == b_meta.dev() && a_meta.ino() == b_meta.ino()
    }
    #[cfg(not(unix))]
    {
        let _ = (a_meta, b_meta);
        matches!((fs::canonicalize(a), fs::canonicalize(b)), (Ok(x), Ok(y)) if x == y)
    }
}

/// Where a command writes the filter it made: a file, replaced atomically, or standard
/// output (`-`), for a pipe.
pub struct Output<'a> {
    path: &'a Path,
    /// What to do if another process is changing the file being replaced.
    on_busy: OnBusy,
}

impl<'a> Output<'a> {
    /// The output `path`, checked against the `inputs` it must not overwrite, before
    /// anything is read or written. A file already there is replaced under its lock
    /// ([`write_filter`]); `on_busy` says whether to wait for another writer holding it.
    ///
    /// # Errors
    ///
    /// `path` names one of `inputs` (writing it would replace what is being read), or is
    /// `-` while standard output is a terminal (a filter is binary).
    pub fn new(path: &'a Path, inputs: &[PathBuf], on_busy: OnBusy) -> Result<Self> {
        if is_dash(path) {
            if io::stdout().is_terminal() {
                return Err(Error::Message(
                    "-o - writes the filter to standard output, which is a terminal; \
                     redirect it to a file or a pipe, or name a file with -o"
                        .to_string(),
                ));
            }
        } else if let Some(input) = inputs
            .iter()
            .find(|input| !is_dash(input) && same_file(path, input))
        {
            return Err(Error::Message(format!(
                "the output '{}' is also the input '{}': writing it would replace what is \
                 being read; write to another file and rename it afterwards",
                path.display(),
                input.display()
            )));
        }
        Ok(Output { path, on_busy })
    }

    /// Writes `filter`; returns the bytes written.
    ///
    /// # Errors
    ///
    /// As [`write_filter`], or a failed write to standard output.
    pub fn write(&self, filter: &dyn Encode) -> Result<u64> {
        if !is_dash(self.path) {
            return write_filter(self.path, filter, self.on_busy);
        }
        let mut out = CountingWriter {
            inner: BufWriter::with_capacity(READ_BUFFER_BYTES, io::stdout().lock()),
            count: 0,
        };
        filter.encode_to(&mut out).context(crate::output::doing)?;
        out.inner.flush().context(crate::output::doing)?;
        Ok(out.count)
    }

    /// Prints the summary of what was written: on standard output, unless the filter went
    /// there.
    ///
    /// # Errors
    ///
    /// A failed write.
    pub fn summary(&self, text: &str) -> Result<()> {
        if is_dash(self.path) {
            let mut err = io::stderr().lock();
            err.write_all(text.as_bytes())
                .context(|| "cannot write to standard error".to_string())
        } else {
            crate::output::print(text)
        }
    }

    /// The output, as a summary names it.
    pub fn describe(&self) -> String {
        if is_dash(self.path) {
            "standard output".to_string()
        } else {
            self.path.display().to_string()
        }
    }
}

/// Counts the bytes written through it.
struct CountingWriter<W> {
    inner: W,
    count: u64,
}

impl<W: Write> Write for CountingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.count += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Writes `filter` to `path` atomically, and returns the bytes written; a file already at
/// `path` is locked first ([`lock`]), so that a command changing it in place finishes
/// before it is replaced (or, with [`OnBusy::Fail`], this fails at once).
///
/// # Errors
///
/// Another writer holds the file and `on_busy` is [`OnBusy::Fail`]; as [`replace_file`].
pub fn write_filter(path: &Path, filter: &dyn Encode, on_busy: OnBusy) -> Result<u64> {
    let _lock = lock(path, on_busy, Missing::Allowed)?;
    replace_file(path, filter)
}

/// Writes `filter` to `path` atomically, and returns the bytes written. The caller holds the
/// file's lock if it needs one.
///
/// The filter goes to a hidden temporary file in the same directory, which is synced to disk
/// and then renamed over `path`: a crash, a full disk or an error leaves either the old file
/// or the complete new one, never half a filter that a later `query` would reject (or, worse,
/// that an older reader would trust).
///
/// # Errors
///
/// Any I/O error, naming `path`; the temporary file is removed.
fn replace_file(path: &Path, filter: &dyn Encode) -> Result<u64> {
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
    // A replaced file keeps its permissions (best effort: the new one has the default).
    if let Ok(old) = fs::metadata(path) {
        let _ = file.set_permissions(old.permissions());
    }
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
fn write_synced(file: File, filter: &dyn Encode, doing: impl Fn() -> String) -> Result<u64> {
    let mut out = BufWriter::with_capacity(READ_BUFFER_BYTES, file);
    filter.encode_to(&mut out).context(&doing)?;
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

/// Loads the filter in `path`, lets `change` change it, and writes it back in place,
/// atomically (a temporary file renamed over the old one, as [`write_filter`] does); returns
/// the changed filter, what `change` returned, and the bytes written. `command` names the
/// subcommand in messages.
///
/// The file's lock ([`lock`]) is held from before the filter is read until after the new
/// file has replaced it, so a second command changing the same file waits for this one and
/// then reads what it wrote (or, with [`OnBusy::Fail`], fails at once): no change is lost.
/// Nothing is written if `change` fails: the file keeps its old contents.
///
/// # Errors
///
/// `path` is `-` (a change in place needs a file); another writer holds the file and
/// `on_busy` is [`OnBusy::Fail`]; or as [`load_filter`], `change` and [`write_filter`].
pub fn change_in_place<T>(
    path: &Path,
    command: &str,
    on_busy: OnBusy,
    change: impl FnOnce(&mut AnyFilter) -> Result<T>,
) -> Result<(AnyFilter, T, u64)> {
    if is_dash(path) {
        return Err(Error::Message(format!(
            "{command} changes a filter file in place, so it needs the file's name, not -"
        )));
    }
    // The rename replaces what it names: through a symbolic link, that is the link itself,
    // so resolve it first and replace the file it points to.
    let target =
        fs::canonicalize(path).context(|| format!("cannot read filter '{}'", path.display()))?;
    let doing = || format!("cannot read filter {}", describe_filter(path));
    // `Missing::Refused` makes a missing file an error, so there is always a lock here.
    let locked = lock(&target, on_busy, Missing::Refused)?
        .ok_or_else(|| Error::Message(format!("{}: the file is not there", doing())))?;
    // Read through the locked handle: the file the lock is on, which `lock` has checked is
    // the one the path names.
    let reader = BufReader::with_capacity(READ_BUFFER_BYTES, &locked.file);
    let mut filter = library_only(path, load_from(reader, doing)?)?.filter;
    let changed = change(&mut filter)?;
    let bytes = replace_file(&target, &filter)?;
    // The new file is in place: a writer waiting on the old one wakes, sees that the path
    // names another file now, and locks that.
    drop(locked);
    Ok((filter, changed, bytes))
}

/// What a writer does when another process holds the file it wants to change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnBusy {
    /// Wait until the other is done (the default).
    Wait,
    /// Fail at once, naming the file (`--no-wait`).
    Fail,
}

/// Whether a file that is not there (or cannot be opened for reading) is an error for
/// [`lock`], or means there is nothing to lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Missing {
    /// An output about to be created: nobody else can be changing it.
    Allowed,
    /// A filter to change in place: it must exist.
    Refused,
}

/// A filter file locked for writing: an exclusive advisory lock on the open file, released
/// when this is dropped (or the process ends, however it ends).
#[derive(Debug)]
pub struct Locked {
    file: File,
}

/// Locks the filter file at `path` for a writer: waits while another process holds it (or
/// fails at once, by `on_busy`), and returns the open file once this process holds the lock
/// on the file the path names. `Ok(None)` when there is no file to lock and `missing` allows
/// that.
///
/// The lock is on the file itself, and the path is checked again once it is held. A writer
/// replaces a filter by renaming a new file over the old one, so the path names a different
/// file afterwards: a second writer that opened the old file and waited for its lock would
/// wake holding a lock nobody else will ask for again, on contents already replaced, and
/// overwrite the first writer's changes with its own. So a writer that wakes on a file the
/// path no longer names lets it go and locks the one the path names now, until the two
/// agree; from then on no rename can happen without its lock. The alternatives were worse:
/// a lock on a separate file beside each filter (`.live.bkf.lock`) would be left behind
/// beside every filter ever changed, since removing it races with a writer about to lock
/// it; a lock on the directory would make writers of different files in it wait for each
/// other, and Windows cannot open a directory as a file. Readers take no lock: the rename
/// gives them the whole old filter or the whole new one.
///
/// The lock is advisory (`flock` on Unix): it binds bloomkit commands, and any other program
/// that asks for the same lock, not programs that write the file without asking.
///
/// # Errors
///
/// The file cannot be opened (unless `missing` allows it) or locked; another process holds
/// it and `on_busy` is [`OnBusy::Fail`].
fn lock(path: &Path, on_busy: OnBusy, missing: Missing) -> Result<Option<Locked>> {
    let doing = || format!("cannot lock filter '{}' for writing", path.display());
    let mut told = false;
    loop {
        let file = match File::open(path) {
            Ok(file) => file,
            // Nothing there to change, or nothing this user could have read to change.
            Err(e)
                if missing == Missing::Allowed
                    && matches!(
                        e.kind(),
                        io::ErrorKind::NotFound | io::ErrorKind::PermissionDenied
                    ) =>
            {
                return Ok(None)
            }
            Err(e) => return Err(e).context(doing),
        };
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                if on_busy == OnBusy::Fail {
                    return Err(Error::Message(format!(
                        "'{}' is being changed by another process, which holds its lock;                          run this again once that has finished, or leave out --no-wait to                          wait for it",
                        path.display()
                    )));
                }
                // Someone at a terminal should know why nothing happens.
                if !told && io::stderr().is_terminal() {
                    eprintln!(
                        "bloomkit: waiting for another process to finish changing '{}'",
                        path.display()
                    );
                    told = true;
                }
                file.lock().context(doing)?;
            }
            Err(TryLockError::Error(e)) => return Err(e).context(doing),
        }
        match is_current(&file, path) {
            Ok(true) => return Ok(Some(Locked { file })),
            // Replaced while we waited: this lock guards nothing now; take the new file's.
            Ok(false) => continue,
            // Removed while we waited.
            Err(e) if e.kind() == io::ErrorKind::NotFound && missing == Missing::Allowed => {
                return Ok(None)
            }
            Err(e) => return Err(e).context(doing),
        }
    }
}

/// Whether `path` still names the open `file`.
#[cfg(unix)]
fn is_current(file: &File, path: &Path) -> io::Result<bool> {
    use std::os::unix::fs::MetadataExt;
    let (held, named) = (file.metadata()?, fs::metadata(path)?);
    Ok(held.dev() == named.dev() && held.ino() == named.ino())
}

/// Whether `path` still names the open `file`. Without file identities in `std` here, the
/// size and modification time stand in for one: a rename of a newly written file over the
/// path changes at least the time.
#[cfg(not(unix))]
fn is_current(file: &File, path: &Path) -> io::Result<bool> {
    let (held, named) = (file.metadata()?, fs::metadata(path)?);
    Ok(held.len() == named.len() && held.modified()? == named.modified()?)
}
