//! What the tests of `bloomkit serve` through the real binary share beyond
//! `bloomkit-testkit` (which starts the process and speaks RESP to it): which binary, its
//! memory, and reading its log.

use std::net::TcpStream;
use std::path::{Path, PathBuf};

use assert_cmd::cargo::cargo_bin;
use bloomkit_testkit::wait::GENEROUS;
use bloomkit_testkit::Served;

/// The binary under test: this build's, or the one `BLOOMKIT_BIN` names (to measure
/// another build the same way, such as the one before a change).
pub fn binary() -> PathBuf {
    std::env::var_os("BLOOMKIT_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| cargo_bin!("bloomkit").to_path_buf())
}

/// The resident memory of process `pid` now and at its peak (`VmRSS`, `VmHWM` from
/// `/proc/PID/status`), in bytes; `None` where there is no `/proc`.
pub fn rss(pid: u32) -> Option<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| {
        status.lines().find_map(|line| {
            let kib: u64 = line
                .strip_prefix(name)?
                .trim()
                .strip_suffix("kB")?
                .trim()
                .parse()
                .ok()?;
            Some(kib * 1024)
        })
    };
    Some((field("VmRSS:")?, field("VmHWM:")?))
}

/// A raw TCP connection to `addr` whose reads time out (failing, not hanging, a test whose
/// server never answers).
pub fn connect(addr: &str) -> TcpStream {
    let stream = TcpStream::connect(addr).expect("connect");
    stream.set_read_timeout(Some(GENEROUS)).unwrap();
    stream
}

/// `bloomkit serve --port 0 --dir DIR EXTRA...` of the binary under test, once it listens.
pub fn serve(dir: &Path, extra: &[&str]) -> Served {
    Served::start(&binary(), dir, extra)
}

/// The lines of a server's standard error that report a problem: its warnings (the
/// message after the log line's time and level) and every line not in the log's format
/// (the one-line error of a server that would not start). Notices are left out.
pub fn problems(stderr: &str) -> String {
    stderr
        .lines()
        .filter_map(|line| match log_line(line) {
            Some(('#', message)) => Some(message),
            Some(_) => None,
            None => Some(line),
        })
        .map(|line| format!("{line}\n"))
        .collect()
}

/// A log line's level mark and message: `pid:M dd Mon yyyy hh:mm:ss.mmm L message`.
pub fn log_line(line: &str) -> Option<(char, &str)> {
    let (pid, rest) = line.split_once(":M ")?;
    if pid.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut parts = rest.splitn(6, ' ');
    let (day, month, year, time) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    let digits = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_digit());
    let time_ok = time.len() == 12
        && time.bytes().enumerate().all(|(i, b)| match i {
            2 | 5 => b == b':',
            8 => b == b'.',
            _ => b.is_ascii_digit(),
        });
    if !(digits(day, 2) && month.len() == 3 && digits(year, 4) && time_ok) {
        return None;
    }
    let level = parts.next()?;
    let mark = level.chars().next().filter(|_| level.len() == 1)?;
    "#*-.".contains(mark).then_some(())?;
    Some((mark, parts.next().unwrap_or("")))
}
