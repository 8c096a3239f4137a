//! Per-command and per-error counters: `INFO commandstats`, `INFO errorstats` and
//! `total_error_replies`, as Redis keeps them.
//!
//! A command's `calls` and `usec` count the times it ran and how long; `rejected_calls`
//! the times it was refused before running (wrong arity, `NOAUTH`, `OOM`, `MISCONF`);
//! `failed_calls` the times it ran and answered an error. Each error reply counts once
//! under its code, the first word of its text (`ERR`, `WRONGTYPE`, RedisBloom's
//! unprefixed ones under their first word, as Redis files them).
//!
//! A connection adds to a [`Tally`] of its own as it runs requests and hands it to the
//! shared [`CommandStats`] once per batch, so cores serving different clients take the
//! shared lock once per batch, not once per command.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use bloomkit_commands::Reply;

/// One command's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CommandCounters {
    /// Times it ran.
    pub calls: u64,
    /// Microseconds it ran for, in all.
    pub usec: u64,
    /// Times it was refused before running.
    pub rejected_calls: u64,
    /// Times it ran and answered an error.
    pub failed_calls: u64,
}

impl CommandCounters {
    fn add(&mut self, other: &CommandCounters) {
        self.calls += other.calls;
        self.usec += other.usec;
        self.rejected_calls += other.rejected_calls;
        self.failed_calls += other.failed_calls;
    }
}

/// Redis stops adding error codes past this many distinct ones (the ones already counted
/// go on counting), so that a client cannot grow the table without bound.
const MAX_ERROR_CODES: usize = 128;

/// The counters every connection adds to.
#[derive(Debug, Default)]
pub struct CommandStats {
    /// By name: a list, since there are a few hundred names at most and the ones in use
    /// come first, found by pointer (each connection merges its tally under this mutex
    /// after every batch, where a SipHash map cost 340 instructions a merge).
    commands: Mutex<Vec<(&'static str, CommandCounters)>>,
    errors: Mutex<HashMap<String, u64>>,
    total_errors: AtomicU64,
}

impl CommandStats {
    /// Adds a connection's tally and empties it.
    pub fn merge(&self, tally: &mut Tally) {
        if !tally.commands.is_empty() {
            let mut commands = self.commands.lock().unwrap_or_else(PoisonError::into_inner);
            for (name, counters) in tally.commands.drain(..) {
                counters_of(&mut commands, name).add(&counters);
            }
        }
        if !tally.errors.is_empty() {
            let mut errors = self.errors.lock().unwrap_or_else(PoisonError::into_inner);
            for (code, count) in tally.errors.drain(..) {
                self.total_errors.fetch_add(count, Ordering::Relaxed);
                if let Some(slot) = errors.get_mut(&code) {
                    *slot += count;
                } else if errors.len() < MAX_ERROR_CODES {
                    errors.insert(code, count);
                }
            }
        }
    }

    /// Error replies sent since start-up (`total_error_replies`).
    pub fn total_error_replies(&self) -> u64 {
        self.total_errors.load(Ordering::Relaxed)
    }

    /// `CONFIG RESETSTAT`: every counter back to zero.
    pub fn reset(&self) {
        self.commands
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
        self.errors
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
        self.total_errors.store(0, Ordering::Relaxed);
    }

    /// The `INFO commandstats` lines, by command name.
    pub fn commandstats(&self) -> String {
        let commands = self.commands.lock().unwrap_or_else(PoisonError::into_inner);
        let mut sorted: Vec<&(&str, CommandCounters)> = commands.iter().collect();
        sorted.sort_by_key(|(name, _)| *name);
        let mut out = String::new();
        for (name, c) in sorted {
            let per_call = if c.calls == 0 {
                0.0
            } else {
                c.usec as f64 / c.calls as f64
            };
            let _ = write!(
                out,
                "cmdstat_{name}:calls={},usec={},usec_per_call={per_call:.2},rejected_calls={},failed_calls={}\r\n",
                c.calls, c.usec, c.rejected_calls, c.failed_calls
            );
        }
        out
    }

    /// The `INFO errorstats` lines, by error code.
    pub fn errorstats(&self) -> String {
        let errors = self.errors.lock().unwrap_or_else(PoisonError::into_inner);
        let mut codes: Vec<&String> = errors.keys().collect();
        codes.sort();
        let mut out = String::new();
        for code in codes {
            let _ = write!(out, "errorstat_{code}:count={}\r\n", errors[code]);
        }
        out
    }

    /// One command's counters (for tests and tools).
    pub fn command(&self, name: &str) -> CommandCounters {
        self.commands
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, c)| *c)
            .unwrap_or_default()
    }
}

/// One connection's counts since it last handed them over.
#[derive(Debug, Default)]
pub struct Tally {
    commands: Vec<(&'static str, CommandCounters)>,
    errors: Vec<(String, u64)>,
}

impl Tally {
    /// Counts one request: `command` is the command's (or subcommand's) name, `None` when
    /// the name is unknown; `took` how long it ran; `reply` what it answered.
    pub fn record(&mut self, command: Option<&'static str>, took: Duration, reply: Option<&Reply>) {
        let mut errors = 0;
        if let Some(reply) = reply {
            for text in errors_in(reply) {
                errors += 1;
                self.count_error(code_of(text));
            }
        }
        let Some(name) = command else {
            return;
        };
        let slot = counters_of(&mut self.commands, name);
        let rejected = matches!(reply, Some(Reply::Error(text)) if is_rejection(text));
        if rejected {
            slot.rejected_calls += 1;
            return;
        }
        slot.calls += 1;
        slot.usec += took.as_micros() as u64;
        if errors > 0 {
            slot.failed_calls += 1;
        }
    }

    /// Counts an error reply sent without a command to count it under (a refused request).
    pub fn count_error(&mut self, code: &str) {
        match self.errors.iter_mut().find(|(c, _)| c == code) {
            Some((_, count)) => *count += 1,
            None => self.errors.push((code.to_string(), 1)),
        }
    }

    /// Whether there is anything to hand over.
    pub fn is_empty(&self) -> bool {
        self.commands.is_empty() && self.errors.is_empty()
    }
}

/// `name`'s counters in `list`, added if missing. The names are the command table's, so
/// the same name is nearly always the same pointer.
fn counters_of<'a>(
    list: &'a mut Vec<(&'static str, CommandCounters)>,
    name: &'static str,
) -> &'a mut CommandCounters {
    let at = match list
        .iter()
        .position(|(n, _)| std::ptr::eq(*n, name) || *n == name)
    {
        Some(at) => at,
        None => {
            list.push((name, CommandCounters::default()));
            list.len() - 1
        }
    };
    &mut list[at].1
}

/// The error texts of a reply: itself, or the elements of an array (`BF.MADD` ends with
/// its error).
fn errors_in(reply: &Reply) -> impl Iterator<Item = &str> {
    let items = match reply {
        Reply::Array(items) => &items[..],
        other => std::slice::from_ref(other),
    };
    items.iter().filter_map(|item| match item {
        Reply::Error(text) => Some(text.as_str()),
        _ => None,
    })
}

/// An error's code: its first word, as Redis files it.
pub fn code_of(text: &str) -> &str {
    text.split(' ').next().unwrap_or(text)
}

/// Whether an error refused the command before it ran, as Redis's `rejected_calls`
/// counts: argument counts, authentication, memory and a failing disk.
fn is_rejection(text: &str) -> bool {
    matches!(
        code_of(text),
        "NOAUTH" | "OOM" | "MISCONF" | "EXECABORT" | "LOADING" | "NOPERM"
    ) || text.starts_with("ERR wrong number of arguments")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_failures_rejections_and_error_codes() {
        let stats = CommandStats::default();
        let mut tally = Tally::default();
        let us = Duration::from_micros;
        tally.record(Some("bf.add"), us(10), Some(&Reply::Bool(true)));
        tally.record(
            Some("bf.add"),
            us(30),
            Some(&Reply::error(
                "WRONGTYPE Operation against a key holding the wrong kind of value",
            )),
        );
        tally.record(
            Some("bf.add"),
            us(5),
            Some(&Reply::error(
                "ERR wrong number of arguments for 'bf.add' command",
            )),
        );
        tally.record(
            Some("bf.madd"),
            us(2),
            Some(&Reply::Array(vec![
                Reply::Bool(true),
                Reply::error("ERR non scaling filter is full"),
            ])),
        );
        tally.record(
            None,
            us(1),
            Some(&Reply::error(
                "ERR unknown command 'x', with args beginning with: ",
            )),
        );
        stats.merge(&mut tally);
        assert!(tally.is_empty());
        assert_eq!(
            stats.command("bf.add"),
            CommandCounters {
                calls: 2,
                usec: 40,
                rejected_calls: 1,
                failed_calls: 1
            }
        );
        assert_eq!(stats.command("bf.madd").failed_calls, 1);
        assert_eq!(stats.total_error_replies(), 4);
        assert_eq!(
            stats.commandstats(),
            "cmdstat_bf.add:calls=2,usec=40,usec_per_call=20.00,rejected_calls=1,failed_calls=1\r\n\
             cmdstat_bf.madd:calls=1,usec=2,usec_per_call=2.00,rejected_calls=0,failed_calls=1\r\n"
        );
        assert_eq!(
            stats.errorstats(),
            "errorstat_ERR:count=3\r\nerrorstat_WRONGTYPE:count=1\r\n"
        );
        stats.reset();
        assert_eq!(stats.commandstats(), "");
        assert_eq!(stats.total_error_replies(), 0);
    }

    #[test]
    fn error_codes_stop_growing_at_redis_limit() {
        let stats = CommandStats::default();
        let mut tally = Tally::default();
        for i in 0..200 {
            tally.count_error(&format!("E{i}"));
        }
        tally.count_error("E0");
        stats.merge(&mut tally);
        assert_eq!(stats.errorstats().lines().count(), MAX_ERROR_CODES);
        assert!(stats.errorstats().contains("errorstat_E0:count=2\r\n"));
        assert_eq!(stats.total_error_replies(), 201);
    }
}
