//! The module's lines in the engine's log: every one goes through here, so that nothing a
//! client sent can forge a line or reach the engine's format string.
//!
//! A key name or an argument can hold any bytes. Written as they are, a newline in a
//! `RESTORE`'s key name would end the module's line and start a line of the client's
//! choosing in `redis.log`; and `RedisModule_Log` takes a printf format, which a `%` would
//! drive. So client bytes are quoted, escaped as Redis's `sdscatrepr` escapes them
//! (`'a\nb'`, `\xHH` for what is not printable), every line's control characters are
//! escaped, and the line is passed as the argument of a fixed `%s` format.

use std::ffi::CString;
use std::fmt::Write as _;

use redis_module::raw;

/// `bytes` in single quotes, escaped as Redis's `sdscatrepr` escapes: `\\`, `\'`, `\n`,
/// `\r`, `\t`, `\a`, `\b`, and every other byte that is not printable ASCII as `\xHH`.
pub fn quoted(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() + 2);
    out.push('\'');
    for &b in bytes {
        match b {
            b'\\' => out.push_str("\\\\"),
            b'\'' => out.push_str("\\'"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            0x07 => out.push_str("\\a"),
            0x08 => out.push_str("\\b"),
            b' '..=b'~' => out.push(char::from(b)),
            _ => {
                let _ = write!(out, "\\x{b:02x}");
            }
        }
    }
    out.push('\'');
    out
}

/// `text` with every control character (a line break above all) written as `\xHH`, so that
/// it stays one line whatever it quotes.
pub fn one_line(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_control() {
            let _ = write!(out, "\\x{:02x}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    out
}

/// Writes `message` to the engine's log at `level` (`"warning"`, `"notice"`...), as one
/// line, never as a format.
// Called as the module loads, which the unit tests do not build.
#[cfg_attr(test, allow(dead_code))]
pub(crate) fn write(ctx: *mut raw::RedisModuleCtx, level: &'static str, message: &str) {
    let (Ok(level), Ok(line)) = (CString::new(level), CString::new(one_line(message))) else {
        return;
    };
    if let Some(log) = api!(RedisModule_Log) {
        // SAFETY: `ctx` is the context Redis passed (or null, which RedisModule_Log takes for
        // "no context"); the level and the format are NUL-terminated, and the one argument
        // the format takes is the NUL-terminated line.
        unsafe { log(ctx, level.as_ptr(), c"%s".as_ptr(), line.as_ptr()) };
    }
}

/// Writes `message` to the engine's log about the I/O context `rdb` (a value being loaded
/// or saved), at `warning`, as one line, never as a format.
pub(crate) fn io_error(rdb: *mut raw::RedisModuleIO, message: &str) {
    let Ok(line) = CString::new(one_line(message)) else {
        return;
    };
    if let Some(log) = api!(RedisModule_LogIOError) {
        // SAFETY: `rdb` is the I/O context Redis passed to the callback; the level and the
        // format are NUL-terminated literals, and the one argument the format takes is the
        // NUL-terminated line.
        unsafe { log(rdb, c"warning".as_ptr(), c"%s".as_ptr(), line.as_ptr()) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_bytes_are_quoted_as_redis_quotes_them() {
        assert_eq!(quoted(b"plain key"), "'plain key'");
        assert_eq!(
            quoted(b"k\n12345:M 01 Jan 2026 00:00:00.000 # forged"),
            r"'k\n12345:M 01 Jan 2026 00:00:00.000 # forged'"
        );
        assert_eq!(
            quoted(b"'\"\\\r\t\x07\x08\x00\xff%s"),
            r#"'\'"\\\r\t\a\b\x00\xff%s'"#
        );
    }

    #[test]
    fn a_line_stays_one_line() {
        assert_eq!(one_line("a\nb\r\u{1b}c"), "a\\x0ab\\x0d\\x1bc");
        assert_eq!(one_line("un été"), "un été");
        assert!(!one_line("x\ny").contains('\n'));
    }
}
