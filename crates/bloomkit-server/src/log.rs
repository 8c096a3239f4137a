//! The server's log: one line per event, with a time and a level, to standard error or to
//! `--logfile`, in Redis's format so that the tools operators point at Redis logs read it:
//!
//! ```text
//! 4242:M 05 Jun 2025 14:03:07.125 * Ready to accept connections on 127.0.0.1:6379
//! ```
//!
//! The process id, `M` (the role: always the primary), the time in UTC (Redis writes local
//! time; UTC needs no time-zone database and reads the same on every machine), then the
//! level as Redis marks it (`.` debug, `-` verbose, `*` notice, `#` warning), then the
//! message. `--loglevel` (and `CONFIG SET loglevel`) picks the lowest level written:
//! `debug`, `verbose`, `notice` (the default), `warning`, or `nothing`.
//!
//! A message that can repeat once per request (a refused client, a failing disk, `accept`
//! out of file descriptors) goes through [`warn_limited`]: the first in each
//! [`RATE_WINDOW`] is written, the others are counted and summed up in the next one
//! written, so a flood of refusals is a line every ten seconds, not a line each.
//!
//! Until [`init`] is called (by `bloomkit serve`), the log is the library's quiet default:
//! warnings only, through `eprintln!` (which a test harness captures).

use std::collections::HashMap;
use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// How important a message is; `--loglevel` writes the given level and those above it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// Much detail, for development (`.`).
    Debug = 0,
    /// Useful detail (`-`).
    Verbose = 1,
    /// What an operator wants in production (`*`): start-up, loading, shutdown.
    Notice = 2,
    /// Only what needs attention (`#`).
    Warning = 3,
    /// Nothing at all (`--loglevel nothing`); no message has this level.
    Nothing = 4,
}

impl Level {
    const ALL: [Level; 5] = [
        Level::Debug,
        Level::Verbose,
        Level::Notice,
        Level::Warning,
        Level::Nothing,
    ];

    /// The name `--loglevel` and `CONFIG SET loglevel` take.
    pub fn name(self) -> &'static str {
        match self {
            Level::Debug => "debug",
            Level::Verbose => "verbose",
            Level::Notice => "notice",
            Level::Warning => "warning",
            Level::Nothing => "nothing",
        }
    }

    /// Redis's mark for the level in a log line.
    fn mark(self) -> char {
        match self {
            Level::Debug => '.',
            Level::Verbose => '-',
            Level::Notice => '*',
            Level::Warning | Level::Nothing => '#',
        }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A `--loglevel` that names no level.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseLevelError(String);

impl fmt::Display for ParseLevelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "'{}' is not a log level: use debug, verbose, notice, warning or nothing",
            self.0
        )
    }
}

impl std::error::Error for ParseLevelError {}

impl FromStr for Level {
    type Err = ParseLevelError;

    fn from_str(text: &str) -> Result<Level, ParseLevelError> {
        Level::ALL
            .into_iter()
            .find(|level| level.name().eq_ignore_ascii_case(text))
            .ok_or_else(|| ParseLevelError(text.to_string()))
    }
}

/// Where the lines go once [`init`] has run.
enum Sink {
    Stderr,
    File(File),
}

/// The log's state: the level (read on every message, so an atomic), the sink, and the
/// rate limiter's counts.
struct Logger {
    level: AtomicU8,
    initialized: AtomicBool,
    sink: Mutex<Option<Sink>>,
    path: Mutex<Option<PathBuf>>,
    limited: Mutex<HashMap<&'static str, Window>>,
}

/// One rate-limited message's current window.
struct Window {
    opened: Instant,
    suppressed: u64,
}

/// How long [`warn_limited`] stays quiet after writing a message of a kind.
pub const RATE_WINDOW: Duration = Duration::from_secs(10);

impl Logger {
    /// Whether a `kind` message may be written at `now`: `Some(n)` with how many were left
    /// out since the last one, `None` to leave this one out.
    fn limit(&self, kind: &'static str, now: Instant) -> Option<u64> {
        let mut limited = self.limited.lock().unwrap_or_else(PoisonError::into_inner);
        match limited.get_mut(kind) {
            Some(window) if now.duration_since(window.opened) < RATE_WINDOW => {
                window.suppressed += 1;
                None
            }
            Some(window) => {
                let suppressed = window.suppressed;
                *window = Window {
                    opened: now,
                    suppressed: 0,
                };
                Some(suppressed)
            }
            None => {
                limited.insert(
                    kind,
                    Window {
                        opened: now,
                        suppressed: 0,
                    },
                );
                Some(0)
            }
        }
    }
}

fn new_logger() -> Logger {
    Logger {
        level: AtomicU8::new(Level::Warning as u8),
        initialized: AtomicBool::new(false),
        sink: Mutex::new(None),
        path: Mutex::new(None),
        limited: Mutex::new(HashMap::new()),
    }
}

fn logger() -> &'static Logger {
    static LOGGER: OnceLock<Logger> = OnceLock::new();
    LOGGER.get_or_init(new_logger)
}

/// Starts the log: `level` and above, to `file` (appended to, created if missing) or to
/// standard error. Called once by `bloomkit serve`, before anything is logged.
///
/// # Errors
///
/// When `file` cannot be opened for appending; the message names it.
pub fn init(level: Level, file: Option<&Path>) -> io::Result<()> {
    let sink = match file {
        None => Sink::Stderr,
        Some(path) => Sink::File(
            OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|e| {
                    io::Error::new(
                        e.kind(),
                        format!("cannot open the log file {}: {e}", path.display()),
                    )
                })?,
        ),
    };
    let logger = logger();
    *logger.sink.lock().unwrap_or_else(PoisonError::into_inner) = Some(sink);
    *logger.path.lock().unwrap_or_else(PoisonError::into_inner) = file.map(Path::to_path_buf);
    logger.level.store(level as u8, Ordering::Relaxed);
    logger.initialized.store(true, Ordering::Release);
    Ok(())
}

/// The lowest level written now.
pub fn level() -> Level {
    let value = logger().level.load(Ordering::Relaxed);
    Level::ALL
        .into_iter()
        .find(|level| *level as u8 == value)
        .unwrap_or(Level::Notice)
}

/// Changes the lowest level written (`CONFIG SET loglevel`).
pub fn set_level(level: Level) {
    logger().level.store(level as u8, Ordering::Relaxed);
}

/// The log file, or `None` for standard error (`CONFIG GET logfile` answers `""`).
pub fn file() -> Option<PathBuf> {
    logger()
        .path
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone()
}

/// Whether a message at `level` would be written: to skip building one that would not.
pub fn enabled(level: Level) -> bool {
    level != Level::Nothing && level as u8 >= logger().level.load(Ordering::Relaxed)
}

/// Writes `message` at `level`.
pub fn log(level: Level, message: impl fmt::Display) {
    if !enabled(level) {
        return;
    }
    let logger = logger();
    if !logger.initialized.load(Ordering::Acquire) {
        eprintln!("bloomkit serve: {message}");
        return;
    }
    let line = format!(
        "{}:M {} {} {message}\n",
        std::process::id(),
        timestamp(SystemTime::now()),
        level.mark()
    );
    let mut sink = logger.sink.lock().unwrap_or_else(PoisonError::into_inner);
    // A log that cannot be written must not take the server down with it.
    let _ = match sink.as_mut() {
        Some(Sink::File(file)) => file.write_all(line.as_bytes()),
        Some(Sink::Stderr) | None => io::stderr().lock().write_all(line.as_bytes()),
    };
}

/// A notice: what the server is doing (start-up, loading, shutdown).
pub fn notice(message: impl fmt::Display) {
    log(Level::Notice, message);
}

/// A warning: something needs attention.
pub fn warning(message: impl fmt::Display) {
    log(Level::Warning, message);
}

/// Detail an operator asks for with `--loglevel verbose`.
pub fn verbose(message: impl fmt::Display) {
    log(Level::Verbose, message);
}

/// A warning that may repeat once per request: written at most once per [`RATE_WINDOW`]
/// for each `kind`, with how many were left out since the last one written. `message` is
/// only called when the line is written.
pub fn warn_limited<M: fmt::Display>(kind: &'static str, message: impl FnOnce() -> M) {
    if !enabled(Level::Warning) {
        return;
    }
    let Some(suppressed) = logger().limit(kind, Instant::now()) else {
        return;
    };
    let message = message();
    if suppressed == 0 {
        warning(message);
    } else {
        warning(format_args!(
            "{message} ({suppressed} more like it in the last {}s not logged)",
            RATE_WINDOW.as_secs()
        ));
    }
}

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// `dd Mon yyyy hh:mm:ss.mmm`, Redis's log time, in UTC.
fn timestamp(time: SystemTime) -> String {
    let since = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let (year, month, day) = civil_from_days((secs / 86_400) as i64);
    let of_day = secs % 86_400;
    format!(
        "{day:02} {} {year} {:02}:{:02}:{:02}.{:03}",
        MONTHS[(month - 1) as usize],
        of_day / 3600,
        of_day / 60 % 60,
        of_day % 60,
        since.subsec_millis()
    )
}

/// The proleptic Gregorian date of a count of days since 1970-01-01 (Howard Hinnant's
/// `civil_from_days`): year, month 1 to 12, day 1 to 31.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * shifted_month + 2) / 5 + 1) as u32;
    let month = if shifted_month < 10 {
        shifted_month + 3
    } else {
        shifted_month - 9
    } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_as_redis_writes_them_in_utc() {
        let at = |secs: u64, millis: u64| {
            timestamp(UNIX_EPOCH + Duration::from_secs(secs) + Duration::from_millis(millis))
        };
        assert_eq!(at(0, 0), "01 Jan 1970 00:00:00.000");
        // 2000-02-29 (a leap day of a year divisible by 400) 23:59:59.999.
        assert_eq!(at(951_868_799, 999), "29 Feb 2000 23:59:59.999");
        // 2024-12-31 12:34:56.007.
        assert_eq!(at(1_735_648_496, 7), "31 Dec 2024 12:34:56.007");
        assert_eq!(at(4_107_542_400, 0), "01 Mar 2100 00:00:00.000");
    }

    #[test]
    fn a_repeated_warning_is_written_once_per_window_with_a_count() {
        let logger = new_logger();
        let start = Instant::now();
        assert_eq!(logger.limit("refused", start), Some(0));
        for i in 1..=500 {
            assert_eq!(
                logger.limit("refused", start + Duration::from_millis(i)),
                None
            );
        }
        // Another kind has its own window.
        assert_eq!(logger.limit("accept", start), Some(0));
        assert_eq!(logger.limit("refused", start + RATE_WINDOW), Some(500));
        assert_eq!(logger.limit("refused", start + RATE_WINDOW * 3), Some(0));
    }

    #[test]
    fn levels_by_name_in_order() {
        assert_eq!("NOTICE".parse(), Ok(Level::Notice));
        assert_eq!("nothing".parse(), Ok(Level::Nothing));
        assert_eq!(
            "loud".parse::<Level>().unwrap_err().to_string(),
            "'loud' is not a log level: use debug, verbose, notice, warning or nothing"
        );
        assert!(Level::Debug < Level::Verbose && Level::Notice < Level::Warning);
        assert_eq!(Level::Notice.mark(), '*');
        assert_eq!(Level::Warning.mark(), '#');
    }
}
