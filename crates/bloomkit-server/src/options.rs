//! The run-time options beyond the filter defaults and `maxmemory`: the clients' buffer
//! limits, the slow log, the eviction policy and the log level, by Redis's names and with
//! its syntax. Each is one row of [`OPTIONS`], which `CONFIG GET`, `CONFIG SET`, the
//! `--config` file and `CONFIG REWRITE` all go through.
//!
//! Defaults are Redis's but one: `client-output-buffer-limit normal` is `64mb 32mb 60`
//! where Redis has `0 0 0` (no limit). A client that sends requests without reading the
//! replies is stopped from sending more once its unsent replies pass 64 KiB (it is no
//! longer read from), so its output holds at most that plus one reply; 64 MiB is four times
//! the largest reply a well-behaved client asks for (a 16 MiB `SCANDUMP` chunk), and a
//! client that leaves more than 32 MiB unread for a minute is not reading at all.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use crate::keyspace::{Keyspace, Policy};
use crate::log::{self, Level};

/// Parses a memory size as Redis does (`CONFIG SET maxmemory`, `--maxmemory`): a number of
/// bytes, optionally followed by `k`/`m`/`g` (powers of 1000) or `kb`/`mb`/`gb` (powers of
/// 1024), in any case. `None` for anything else, or an overflow.
pub fn parse_memory(text: &[u8]) -> Option<u64> {
    let text = std::str::from_utf8(text).ok()?.to_ascii_lowercase();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, unit) = text.split_at(split);
    let multiplier: u64 = match unit {
        "" | "b" => 1,
        "k" => 1_000,
        "kb" => 1 << 10,
        "m" => 1_000_000,
        "mb" => 1 << 20,
        "g" => 1_000_000_000,
        "gb" => 1 << 30,
        _ => return None,
    };
    if digits.is_empty() {
        return None;
    }
    digits.parse::<u64>().ok()?.checked_mul(multiplier)
}

/// A client class's `client-output-buffer-limit`: disconnect a client whose unsent replies
/// pass `hard_bytes`, or stay above `soft_bytes` for `soft_seconds` (0: no such limit).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutputLimit {
    /// Unsent bytes past which the client is disconnected at once.
    pub hard_bytes: u64,
    /// Unsent bytes past which, held for `soft_seconds`, the client is disconnected.
    pub soft_bytes: u64,
    /// How long a client may stay past `soft_bytes`.
    pub soft_seconds: u64,
}

/// The client classes of `client-output-buffer-limit`, in Redis's order: only `normal`
/// clients exist here; the others are kept so that a Redis configuration loads and reads
/// back the same.
const CLASSES: [&str; 3] = ["normal", "replica", "pubsub"];

/// Redis's defaults for each class (ours for `normal`: see the module documentation).
const DEFAULT_OUTPUT_LIMITS: [OutputLimit; 3] = [
    OutputLimit {
        hard_bytes: 64 << 20,
        soft_bytes: 32 << 20,
        soft_seconds: 60,
    },
    OutputLimit {
        hard_bytes: 256 << 20,
        soft_bytes: 64 << 20,
        soft_seconds: 60,
    },
    OutputLimit {
        hard_bytes: 32 << 20,
        soft_bytes: 8 << 20,
        soft_seconds: 60,
    },
];

/// One class's limit, as three atomics (a reader may see a half-applied `CONFIG SET`
/// for one command, which does no harm).
#[derive(Debug)]
struct OutputLimitCell([AtomicU64; 3]);

impl OutputLimitCell {
    fn new(limit: OutputLimit) -> OutputLimitCell {
        OutputLimitCell([
            AtomicU64::new(limit.hard_bytes),
            AtomicU64::new(limit.soft_bytes),
            AtomicU64::new(limit.soft_seconds),
        ])
    }

    fn get(&self) -> OutputLimit {
        OutputLimit {
            hard_bytes: self.0[0].load(Ordering::Relaxed),
            soft_bytes: self.0[1].load(Ordering::Relaxed),
            soft_seconds: self.0[2].load(Ordering::Relaxed),
        }
    }

    fn set(&self, limit: OutputLimit) {
        self.0[0].store(limit.hard_bytes, Ordering::Relaxed);
        self.0[1].store(limit.soft_bytes, Ordering::Relaxed);
        self.0[2].store(limit.soft_seconds, Ordering::Relaxed);
    }
}

/// The options' current values, read by the connections on every request (atomics, no
/// lock).
#[derive(Debug)]
pub struct Options {
    output_limits: [OutputLimitCell; 3],
    query_buffer_limit: AtomicU64,
    slowlog_log_slower_than: AtomicI64,
    slowlog_max_len: AtomicU64,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            output_limits: DEFAULT_OUTPUT_LIMITS.map(OutputLimitCell::new),
            query_buffer_limit: AtomicU64::new(DEFAULT_QUERY_BUFFER_LIMIT),
            slowlog_log_slower_than: AtomicI64::new(10_000),
            slowlog_max_len: AtomicU64::new(128),
        }
    }
}

/// Redis's `client-query-buffer-limit` default: 1 GiB.
pub const DEFAULT_QUERY_BUFFER_LIMIT: u64 = 1 << 30;

impl Options {
    /// `client-output-buffer-limit normal`.
    pub fn output_limit(&self) -> OutputLimit {
        self.output_limits[0].get()
    }

    /// `client-query-buffer-limit`: the largest request a client may send, in bytes.
    pub fn query_buffer_limit(&self) -> u64 {
        self.query_buffer_limit.load(Ordering::Relaxed)
    }

    /// `slowlog-log-slower-than` in microseconds: negative disables the slow log, 0 logs
    /// every command.
    pub fn slowlog_log_slower_than(&self) -> i64 {
        self.slowlog_log_slower_than.load(Ordering::Relaxed)
    }

    /// `slowlog-max-len`: the entries the slow log keeps.
    pub fn slowlog_max_len(&self) -> usize {
        usize::try_from(self.slowlog_max_len.load(Ordering::Relaxed)).unwrap_or(usize::MAX)
    }
}

/// Checks a new value of an option: the reason it is refused, if it is.
pub type Check = fn(&[u8]) -> Result<(), String>;

/// One option: its name, how to read it, and how to check and apply a new value (`None`
/// for an option fixed at start-up).
pub struct OptionRow {
    /// The name, as `CONFIG GET` and the config file spell it.
    pub name: &'static str,
    /// Its value until it is set, as `CONFIG GET` would answer it (`CONFIG REWRITE` writes
    /// only what differs from it, or what the file already names).
    pub default: &'static str,
    /// Its current value, as `CONFIG GET` answers it.
    pub get: fn(&Options, &Keyspace) -> String,
    /// Checks a new value: the reason it is refused, after `CONFIG SET failed ... - `.
    pub check: Option<Check>,
    /// Applies a checked value.
    pub apply: fn(&Options, &Keyspace, &[u8]),
}

impl std::fmt::Debug for OptionRow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OptionRow")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// The row of the option named `name` (any case).
pub fn option(name: &[u8]) -> Option<&'static OptionRow> {
    OPTIONS
        .iter()
        .find(|row| row.name.as_bytes().eq_ignore_ascii_case(name))
}

/// Every option of this module, in the order `CONFIG GET` lists them.
pub static OPTIONS: &[OptionRow] = &[
    OptionRow {
        name: "maxmemory-policy",
        default: "noeviction",
        get: |_, k| k.eviction().policy().name().to_string(),
        check: Some(|v| parse_policy(v).map(|_| ())),
        apply: |_, k, v| {
            if let Ok(policy) = parse_policy(v) {
                k.eviction().set_policy(policy);
            }
        },
    },
    OptionRow {
        name: "maxmemory-samples",
        default: "5",
        get: |_, k| k.eviction().samples().to_string(),
        check: Some(|v| parse_in(v, 1, 64).map(|_| ())),
        apply: |_, k, v| {
            if let Ok(n) = parse_in(v, 1, 64) {
                k.eviction().set_samples(n as u32);
            }
        },
    },
    OptionRow {
        name: "client-output-buffer-limit",
        default:
            "normal 67108864 33554432 60 slave 268435456 67108864 60 pubsub 33554432 8388608 60",
        get: |o, _| {
            let words: Vec<String> = CLASSES
                .iter()
                .zip(&o.output_limits)
                .map(|(class, cell)| {
                    let limit = cell.get();
                    // Redis still answers the replica class by its old name.
                    let class = if *class == "replica" { "slave" } else { class };
                    format!(
                        "{class} {} {} {}",
                        limit.hard_bytes, limit.soft_bytes, limit.soft_seconds
                    )
                })
                .collect();
            words.join(" ")
        },
        check: Some(|v| parse_output_limits(v).map(|_| ())),
        apply: |o, _, v| {
            for (class, limit) in parse_output_limits(v).unwrap_or_default() {
                o.output_limits[class].set(limit);
            }
        },
    },
    OptionRow {
        name: "client-query-buffer-limit",
        default: "1073741824",
        get: |o, _| o.query_buffer_limit().to_string(),
        check: Some(|v| parse_query_buffer_limit(v).map(|_| ())),
        apply: |o, _, v| {
            if let Ok(bytes) = parse_query_buffer_limit(v) {
                o.query_buffer_limit.store(bytes, Ordering::Relaxed);
            }
        },
    },
    OptionRow {
        name: "slowlog-log-slower-than",
        default: "10000",
        get: |o, _| o.slowlog_log_slower_than().to_string(),
        check: Some(|v| parse_in(v, i64::MIN, i64::MAX).map(|_| ())),
        apply: |o, _, v| {
            if let Ok(us) = parse_in(v, i64::MIN, i64::MAX) {
                o.slowlog_log_slower_than.store(us, Ordering::Relaxed);
            }
        },
    },
    OptionRow {
        name: "slowlog-max-len",
        default: "128",
        get: |o, _| o.slowlog_max_len().to_string(),
        check: Some(|v| parse_in(v, 0, i64::from(u32::MAX)).map(|_| ())),
        apply: |o, _, v| {
            if let Ok(n) = parse_in(v, 0, i64::from(u32::MAX)) {
                o.slowlog_max_len.store(n as u64, Ordering::Relaxed);
            }
        },
    },
    OptionRow {
        name: "loglevel",
        default: "notice",
        get: |_, _| log::level().name().to_string(),
        check: Some(|v| parse_level(v).map(|_| ())),
        apply: |_, _, v| {
            if let Ok(level) = parse_level(v) {
                log::set_level(level);
            }
        },
    },
    OptionRow {
        name: "logfile",
        default: "",
        get: |_, _| {
            log::file()
                .map(|p| p.display().to_string())
                .unwrap_or_default()
        },
        check: None,
        apply: |_, _, _| {},
    },
];

fn text(value: &[u8]) -> Result<&str, String> {
    std::str::from_utf8(value).map_err(|_| "argument must be text".to_string())
}

fn parse_in(value: &[u8], min: i64, max: i64) -> Result<i64, String> {
    let n: i64 = text(value)?
        .parse()
        .map_err(|_| "argument couldn't be parsed into an integer".to_string())?;
    if n < min || n > max {
        return Err(format!(
            "argument must be between {min} and {max} inclusive"
        ));
    }
    Ok(n)
}

fn parse_policy(value: &[u8]) -> Result<Policy, String> {
    Policy::parse(value).ok_or_else(|| {
        let names: Vec<&str> = Policy::ALL.iter().map(|p| p.name()).collect();
        format!(
            "argument(s) must be one of the following: {}",
            names.join(", ")
        )
    })
}

fn parse_level(value: &[u8]) -> Result<Level, String> {
    text(value)?.parse::<Level>().map_err(|_| {
        "argument(s) must be one of the following: debug, verbose, notice, warning, nothing"
            .to_string()
    })
}

/// Redis refuses a query buffer limit under 1 MiB.
fn parse_query_buffer_limit(value: &[u8]) -> Result<u64, String> {
    let bytes = parse_memory(value).ok_or_else(|| "argument must be a memory value".to_string())?;
    if bytes < 1 << 20 {
        return Err("argument must be between 1048576 and 9223372036854775807 inclusive".into());
    }
    Ok(bytes)
}

/// `class hard soft seconds [class hard soft seconds...]`, Redis's syntax (`slave` and
/// `master` are old names of `replica` and accepted as Redis accepts them).
fn parse_output_limits(value: &[u8]) -> Result<Vec<(usize, OutputLimit)>, String> {
    let invalid = || {
        "Wrong format of client-output-buffer-limit; use: class hard soft seconds (class: normal, replica or pubsub)".to_string()
    };
    let words: Vec<&str> = text(value)?.split_ascii_whitespace().collect();
    if words.is_empty() || !words.len().is_multiple_of(4) {
        return Err(invalid());
    }
    words
        .chunks(4)
        .map(|quad| {
            let class = match quad[0].to_ascii_lowercase().as_str() {
                "normal" => 0,
                "replica" | "slave" | "master" => 1,
                "pubsub" => 2,
                _ => return Err(invalid()),
            };
            let hard = parse_memory(quad[1].as_bytes()).ok_or_else(invalid)?;
            let soft = parse_memory(quad[2].as_bytes()).ok_or_else(invalid)?;
            let seconds: u64 = quad[3].parse().map_err(|_| invalid())?;
            Ok((
                class,
                OutputLimit {
                    hard_bytes: hard,
                    soft_bytes: soft,
                    soft_seconds: seconds,
                },
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(options: &Options, keyspace: &Keyspace, name: &str, value: &str) -> Result<(), String> {
        let row = option(name.as_bytes()).expect("an option");
        (row.check.expect("settable"))(value.as_bytes())?;
        (row.apply)(options, keyspace, value.as_bytes());
        Ok(())
    }

    fn get(options: &Options, keyspace: &Keyspace, name: &str) -> String {
        (option(name.as_bytes()).expect("an option").get)(options, keyspace)
    }

    #[test]
    fn every_default_is_what_a_fresh_server_answers() {
        let (options, keyspace) = (Options::default(), Keyspace::new(0));
        for row in OPTIONS {
            // The log's options read the process's log, which tests do not start.
            if row.name != "loglevel" && row.name != "logfile" {
                assert_eq!((row.get)(&options, &keyspace), row.default, "{}", row.name);
            }
        }
        assert_eq!(Level::Notice.name(), option(b"loglevel").unwrap().default);
    }

    #[test]
    fn output_limits_in_redis_syntax() {
        let (options, keyspace) = (Options::default(), Keyspace::new(0));
        assert_eq!(
            get(&options, &keyspace, "client-output-buffer-limit"),
            "normal 67108864 33554432 60 slave 268435456 67108864 60 pubsub 33554432 8388608 60"
        );
        set(
            &options,
            &keyspace,
            "client-output-buffer-limit",
            "normal 1mb 512kb 5 pubsub 0 0 0",
        )
        .unwrap();
        assert_eq!(
            options.output_limit(),
            OutputLimit {
                hard_bytes: 1 << 20,
                soft_bytes: 512 << 10,
                soft_seconds: 5
            }
        );
        assert!(get(&options, &keyspace, "client-output-buffer-limit").ends_with("pubsub 0 0 0"));
        for bad in ["normal 1mb", "clients 1 1 1", "normal lots 1 1", ""] {
            assert!(
                set(&options, &keyspace, "client-output-buffer-limit", bad).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn the_policy_the_query_limit_and_the_slow_log_by_name() {
        let (options, keyspace) = (Options::default(), Keyspace::new(0));
        assert_eq!(get(&options, &keyspace, "maxmemory-policy"), "noeviction");
        set(&options, &keyspace, "MAXMEMORY-POLICY", "allkeys-LRU").unwrap();
        assert_eq!(keyspace.eviction().policy(), Policy::AllKeysLru);
        assert!(set(&options, &keyspace, "maxmemory-policy", "lru")
            .unwrap_err()
            .starts_with("argument(s) must be one of the following: volatile-lru, allkeys-lru"));
        assert_eq!(
            get(&options, &keyspace, "client-query-buffer-limit"),
            "1073741824"
        );
        set(&options, &keyspace, "client-query-buffer-limit", "2mb").unwrap();
        assert_eq!(options.query_buffer_limit(), 2 << 20);
        assert!(set(&options, &keyspace, "client-query-buffer-limit", "1000").is_err());
        set(&options, &keyspace, "slowlog-log-slower-than", "-1").unwrap();
        assert_eq!(options.slowlog_log_slower_than(), -1);
        assert_eq!(get(&options, &keyspace, "slowlog-max-len"), "128");
        assert!(set(&options, &keyspace, "slowlog-max-len", "x").is_err());
        assert!(
            option(b"logfile").unwrap().check.is_none(),
            "fixed at start-up"
        );
    }
}
