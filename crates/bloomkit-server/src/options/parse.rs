//! Reading the options' values, with Redis's syntax and its `CONFIG SET` error wording (the
//! reason after `CONFIG SET failed ... - `).

use super::runtime::OutputLimit;
use crate::keyspace::Policy;
use crate::log::Level;
use crate::persist::FsyncPolicy;

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

pub(super) fn text(value: &[u8]) -> Result<&str, String> {
    std::str::from_utf8(value).map_err(|_| "argument must be text".to_string())
}

/// An integer in `[min, max]`.
pub(super) fn integer_in(value: &[u8], min: i64, max: i64) -> Result<i64, String> {
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

pub(super) fn memory(value: &[u8]) -> Result<u64, String> {
    parse_memory(value).ok_or_else(|| "argument must be a memory value".to_string())
}

pub(super) fn yes_no(value: &[u8]) -> Result<bool, String> {
    let word = text(value)?;
    match word.to_ascii_lowercase().as_str() {
        "yes" => Ok(true),
        "no" => Ok(false),
        _ => Err(format!("'{word}' is not yes or no")),
    }
}

pub(super) fn port(value: &[u8]) -> Result<u16, String> {
    integer_in(value, 0, 65_535).map(|n| n as u16)
}

pub(super) fn policy(value: &[u8]) -> Result<Policy, String> {
    Policy::parse(value).ok_or_else(|| {
        let names: Vec<&str> = Policy::ALL.iter().map(|p| p.name()).collect();
        format!(
            "argument(s) must be one of the following: {}",
            names.join(", ")
        )
    })
}

pub(super) fn fsync(value: &[u8]) -> Result<FsyncPolicy, String> {
    text(value)?
        .parse::<FsyncPolicy>()
        .map_err(|_| "argument(s) must be one of the following: always, everysec, no".to_string())
}

pub(super) fn level(value: &[u8]) -> Result<Level, String> {
    text(value)?.parse::<Level>().map_err(|_| {
        "argument(s) must be one of the following: debug, verbose, notice, warning, nothing"
            .to_string()
    })
}

/// Who may send `DEBUG` (`enable-debug-command`), as in Redis 7.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DebugCommand {
    /// Nobody (the default): `DEBUG` is refused.
    #[default]
    No,
    /// Every client.
    Yes,
    /// Clients connected from the loopback interface.
    Local,
}

impl DebugCommand {
    /// The word `enable-debug-command` takes for it.
    pub fn name(self) -> &'static str {
        match self {
            DebugCommand::No => "no",
            DebugCommand::Yes => "yes",
            DebugCommand::Local => "local",
        }
    }
}

pub(super) fn debug_command(value: &[u8]) -> Result<DebugCommand, String> {
    match text(value)?.to_ascii_lowercase().as_str() {
        "no" => Ok(DebugCommand::No),
        "yes" => Ok(DebugCommand::Yes),
        "local" => Ok(DebugCommand::Local),
        _ => Err("argument(s) must be one of the following: no, yes, local".to_string()),
    }
}

/// Redis refuses a query buffer limit under 1 MiB.
pub(super) fn query_buffer_limit(value: &[u8]) -> Result<u64, String> {
    let bytes = memory(value)?;
    if bytes < 1 << 20 {
        return Err("argument must be between 1048576 and 9223372036854775807 inclusive".into());
    }
    Ok(bytes)
}

/// `class hard soft seconds [class hard soft seconds...]`, Redis's syntax (`slave` and
/// `master` are old names of `replica` and accepted as Redis accepts them).
pub(super) fn output_limits(value: &[u8]) -> Result<Vec<(usize, OutputLimit)>, String> {
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

    #[test]
    fn memory_sizes_as_redis_reads_them() {
        assert_eq!(parse_memory(b"0"), Some(0));
        assert_eq!(parse_memory(b"1024"), Some(1024));
        assert_eq!(parse_memory(b"1k"), Some(1000));
        assert_eq!(parse_memory(b"1KB"), Some(1024));
        assert_eq!(parse_memory(b"100mb"), Some(100 << 20));
        assert_eq!(parse_memory(b"2g"), Some(2_000_000_000));
        assert_eq!(parse_memory(b"2Gb"), Some(2 << 30));
        for bad in [
            &b""[..],
            b"mb",
            b"-1",
            b"1.5mb",
            b"1tb",
            b"99999999999999999999",
        ] {
            assert_eq!(parse_memory(bad), None);
        }
    }

    #[test]
    fn fsync_policies_parse_by_name() {
        assert_eq!(fsync(b"always"), Ok(FsyncPolicy::Always));
        assert_eq!(fsync(b"EVERYSEC"), Ok(FsyncPolicy::EverySec));
        assert_eq!(fsync(b"no"), Ok(FsyncPolicy::No));
        assert!(fsync(b"sometimes").is_err());
    }

    #[test]
    fn debug_command_words_as_redis_takes_them() {
        assert_eq!(debug_command(b"no"), Ok(DebugCommand::No));
        assert_eq!(debug_command(b"YES"), Ok(DebugCommand::Yes));
        assert_eq!(debug_command(b"local"), Ok(DebugCommand::Local));
        assert!(debug_command(b"maybe").is_err());
        for word in [DebugCommand::No, DebugCommand::Yes, DebugCommand::Local] {
            assert_eq!(debug_command(word.name().as_bytes()), Ok(word));
        }
    }
}
