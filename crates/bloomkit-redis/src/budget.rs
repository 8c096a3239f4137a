//! The memory a command may allocate inside Redis: `maxmemory` and the machine's.
//!
//! Redis refuses a `deny-oom` command when it is already past `maxmemory`; this budget
//! answers the command layer's finer question, asked before a filter is created or grows a
//! layer: would these bytes go past it? A `BF.RESERVE` of 4.7 GB on an empty server with a
//! 1 GB `maxmemory` is refused here, where Redis alone would let it allocate.

use bloomkit_commands::Budget;

/// The budget of one command: the engine's `maxmemory` and the machine's available memory,
/// both read only when a command asks (a filter's creation or growth, not every add).
#[derive(Clone, Copy)]
pub struct ModuleBudget<'a> {
    /// Whether the command is replayed from the master or the append-only file (asked only
    /// when the command asks the budget): what was acknowledged there is applied here,
    /// whatever this server's limits.
    pub replayed: &'a dyn Fn() -> bool,
}

impl Budget for ModuleBudget<'_> {
    fn within_maxmemory(&self, extra_bytes: usize) -> bool {
        if (self.replayed)() {
            return true;
        }
        match memory_info() {
            Some((used, max)) if max > 0 => used.saturating_add(extra_bytes as u64) <= max,
            _ => true,
        }
    }

    fn machine_available(&self) -> Option<usize> {
        if (self.replayed)() {
            return None;
        }
        let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
        mem_available(&meminfo)
    }

    fn replays(&self) -> bool {
        (self.replayed)()
    }
}

/// `MemAvailable` in bytes, from the text of `/proc/meminfo`.
fn mem_available(meminfo: &str) -> Option<usize> {
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// `used_memory` and `maxmemory` (0: no limit), from the engine's `INFO memory`.
#[cfg(not(test))]
fn memory_info() -> Option<(u64, u64)> {
    use std::ffi::c_int;

    let (get, field, free) = (
        api!(RedisModule_GetServerInfo)?,
        api!(RedisModule_ServerInfoGetFieldUnsigned)?,
        api!(RedisModule_FreeServerInfo)?,
    );
    // SAFETY: without a context the information is this module's to free, which it does
    // below; the section and field names are NUL-terminated literals; the error flag is a
    // local the call writes.
    unsafe {
        let info = get(std::ptr::null_mut(), c"memory".as_ptr());
        if info.is_null() {
            return None;
        }
        let mut failed: c_int = 0;
        let used = field(info, c"used_memory".as_ptr(), &mut failed);
        let used_failed = failed;
        let max = field(info, c"maxmemory".as_ptr(), &mut failed);
        free(std::ptr::null_mut(), info);
        (used_failed == 0 && failed == 0).then_some((used, max))
    }
}

/// Unit tests run without a server: no limit.
#[cfg(test)]
fn memory_info() -> Option<(u64, u64)> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mem_available_is_read_in_bytes() {
        let text = "MemTotal:       24000000 kB\nMemFree:  100 kB\nMemAvailable:   12345 kB\n";
        assert_eq!(mem_available(text), Some(12345 * 1024));
        assert_eq!(mem_available("MemTotal: 1 kB\n"), None);
        assert_eq!(mem_available("MemAvailable: lots kB\n"), None);
    }

    #[test]
    fn replays_are_never_refused() {
        let replay = ModuleBudget { replayed: &|| true };
        assert!(replay.within_maxmemory(usize::MAX));
        assert_eq!(replay.machine_available(), None);
        assert!(replay.replays());
        // On this machine, the budget reads what Linux says is available.
        let live = ModuleBudget {
            replayed: &|| false,
        };
        assert!(!live.replays());
        if std::path::Path::new("/proc/meminfo").exists() {
            assert!(live.machine_available().is_some_and(|bytes| bytes > 0));
        }
    }
}
