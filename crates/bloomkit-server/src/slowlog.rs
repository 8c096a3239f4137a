//! The slow log: the commands that ran longer than `slowlog-log-slower-than`
//! microseconds (10,000 by default), the newest `slowlog-max-len` (128) of them, as
//! `SLOWLOG GET` reports them.
//!
//! As in Redis, an entry keeps at most 32 arguments (the 32nd says how many more there
//! were) and at most 128 bytes of each (with how many more bytes it had), so a slow
//! command with huge arguments does not make the log huge; `AUTH`'s arguments and
//! `HELLO`'s password are not kept.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;

use crate::keyspace::now_ms;

/// Arguments an entry keeps, the last of them standing for the rest.
const MAX_ARGS: usize = 32;

/// Bytes of each argument an entry keeps.
const MAX_ARG_BYTES: usize = 128;

/// One slow command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlowEntry {
    /// A unique, increasing id.
    pub id: u64,
    /// When it ran, in Unix seconds.
    pub unix_time: u64,
    /// How long it ran, in microseconds.
    pub micros: u64,
    /// Its arguments, shortened as the module documentation says.
    pub args: Vec<Bytes>,
    /// The client's address.
    pub client_addr: String,
    /// The client's name, empty if it has none.
    pub client_name: Bytes,
}

/// The slow log.
#[derive(Debug, Default)]
pub struct SlowLog {
    entries: Mutex<VecDeque<SlowEntry>>,
    next_id: AtomicU64,
}

impl SlowLog {
    /// Records `args` if `took` is at least `threshold_us` (negative: never), keeping the
    /// newest `max_len`. `who` gives the client's address and name, asked only for an entry.
    pub fn record(
        &self,
        threshold_us: i64,
        max_len: usize,
        took: Duration,
        args: &[Bytes],
        who: impl FnOnce() -> (String, Bytes),
    ) {
        let micros = took.as_micros() as u64;
        if threshold_us < 0 || micros < threshold_us as u64 || max_len == 0 {
            return;
        }
        let (client_addr, client_name) = who();
        let entry = SlowEntry {
            id: self.next_id.fetch_add(1, Ordering::Relaxed),
            unix_time: now_ms() / 1000,
            micros,
            args: shortened(args),
            client_addr,
            client_name,
        };
        let mut entries = self.lock();
        entries.push_front(entry);
        entries.truncate(max_len);
    }

    /// The newest `count` entries, newest first (all of them for `None`).
    pub fn get(&self, count: Option<usize>) -> Vec<SlowEntry> {
        let entries = self.lock();
        entries
            .iter()
            .take(count.unwrap_or(usize::MAX))
            .cloned()
            .collect()
    }

    /// How many entries it holds.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `SLOWLOG RESET`.
    pub fn reset(&self) {
        self.lock().clear();
    }

    /// Drops the oldest entries past `max_len` (`CONFIG SET slowlog-max-len` shrinks it at
    /// the next record, as in Redis, or here at once).
    pub fn trim(&self, max_len: usize) {
        self.lock().truncate(max_len);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<SlowEntry>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn shortened(args: &[Bytes]) -> Vec<Bytes> {
    let secret_from = secret_from(args);
    let kept = args.len().min(MAX_ARGS);
    let mut out = Vec::with_capacity(kept);
    for (i, arg) in args.iter().enumerate().take(kept) {
        if i == MAX_ARGS - 1 && args.len() > MAX_ARGS {
            out.push(Bytes::from(format!(
                "... ({} more arguments)",
                args.len() - MAX_ARGS + 1
            )));
            break;
        }
        if i >= secret_from {
            out.push(Bytes::from_static(b"(redacted)"));
        } else if arg.len() > MAX_ARG_BYTES {
            let mut short = arg[..MAX_ARG_BYTES].to_vec();
            short.extend_from_slice(
                format!("... ({} more bytes)", arg.len() - MAX_ARG_BYTES).as_bytes(),
            );
            out.push(Bytes::from(short));
        } else {
            // Owned: a slice of the request would keep its whole buffer alive.
            out.push(Bytes::copy_from_slice(arg));
        }
    }
    out
}

/// Where the arguments a log must not keep begin: all of `AUTH`'s, `HELLO`'s from its
/// `AUTH` on.
fn secret_from(args: &[Bytes]) -> usize {
    let is = |arg: &Bytes, word: &str| arg.eq_ignore_ascii_case(word.as_bytes());
    match args.first() {
        Some(name) if is(name, "auth") => 1,
        Some(name) if is(name, "hello") => args
            .iter()
            .position(|arg| is(arg, "auth"))
            .map_or(usize::MAX, |at| at + 1),
        _ => usize::MAX,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&str]) -> Vec<Bytes> {
        words.iter().map(|w| Bytes::from(w.to_string())).collect()
    }

    fn who() -> (String, Bytes) {
        ("127.0.0.1:1".to_string(), Bytes::new())
    }

    #[test]
    fn keeps_the_newest_slow_commands_only() {
        let log = SlowLog::default();
        let ms = Duration::from_millis;
        log.record(10_000, 2, ms(5), &args(&["fast"]), who);
        log.record(-1, 2, ms(50), &args(&["disabled"]), who);
        for name in ["a", "b", "c"] {
            log.record(10_000, 2, ms(20), &args(&[name]), who);
        }
        let got = log.get(None);
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].args, args(&["c"]));
        assert_eq!(got[1].args, args(&["b"]));
        assert!(got[0].id > got[1].id);
        assert_eq!(got[0].micros, 20_000);
        assert_eq!(log.get(Some(1)).len(), 1);
        log.record(0, 128, Duration::ZERO, &args(&["zero logs all"]), who);
        assert_eq!(log.len(), 3);
        log.reset();
        assert!(log.is_empty());
    }

    #[test]
    fn long_arguments_and_secrets_are_not_kept() {
        let log = SlowLog::default();
        let many: Vec<String> = (0..40).map(|i| i.to_string()).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        log.record(0, 10, Duration::ZERO, &args(&many), who);
        let long = "x".repeat(200);
        log.record(0, 10, Duration::ZERO, &args(&["echo", &long]), who);
        log.record(0, 10, Duration::ZERO, &args(&["AUTH", "user", "pw"]), who);
        log.record(
            0,
            10,
            Duration::ZERO,
            &args(&["HELLO", "3", "AUTH", "u", "pw"]),
            who,
        );
        let got = log.get(None);
        assert_eq!(
            got[0].args,
            args(&["HELLO", "3", "AUTH", "(redacted)", "(redacted)"])
        );
        assert_eq!(got[1].args, args(&["AUTH", "(redacted)", "(redacted)"]));
        assert_eq!(
            got[2].args[1],
            format!("{}... (72 more bytes)", "x".repeat(128))
        );
        assert_eq!(got[3].args.len(), 32);
        assert_eq!(got[3].args[31], "... (9 more arguments)");
        assert_eq!(got[3].args[30], "30");
    }
}
