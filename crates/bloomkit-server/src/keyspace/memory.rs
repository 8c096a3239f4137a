//! How much memory the machine can still give: the ceiling for a single `RESERVE`; and
//! how large a reply may be before it must fit under `maxmemory`.
//!
//! Linux's `MemAvailable` is the kernel's estimate of what can be allocated without
//! swapping. In a container the cgroup's limit is often far lower, and exceeding it gets
//! the process killed, so the smaller of the two counts.

use std::fs;
use std::sync::atomic::Ordering;

use bloomkit_commands::Budget;
use bytes::Bytes;

use super::{Entry, Keyspace};

/// A reply to a read command larger than this is refused (`OOM`) when it would take
/// `used_memory` past `maxmemory`; smaller ones are always sent, whatever the values hold.
pub const BIG_REPLY: usize = 64 << 10;

/// Bytes the machine (or this process's cgroup, if smaller) can still give, or `None`
/// where neither is known (not Linux, or `/proc` not mounted).
///
/// Read afresh on every call, never cached: it is asked only before a large allocation,
/// and a cached figure would let several reservations in a row each take "what is left".
pub fn machine_available() -> Option<usize> {
    let meminfo = fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| mem_available(&text));
    match (meminfo, cgroup_headroom()) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// `MemAvailable` from the text of `/proc/meminfo`, in bytes.
fn mem_available(meminfo: &str) -> Option<usize> {
    let line = meminfo
        .lines()
        .find_map(|line| line.strip_prefix("MemAvailable:"))?;
    let kib: usize = line.trim().strip_suffix("kB")?.trim().parse().ok()?;
    kib.checked_mul(1024)
}

/// `memory.max - memory.current` of this process's cgroup (v2), or `None` when there is
/// no limit or no cgroup v2.
fn cgroup_headroom() -> Option<usize> {
    let membership = fs::read_to_string("/proc/self/cgroup").ok()?;
    // cgroup v2 has one line, `0::/path/of/the/group`.
    let path = membership
        .lines()
        .find_map(|line| line.strip_prefix("0::"))?
        .trim();
    let dir = format!("/sys/fs/cgroup{path}");
    let max = fs::read_to_string(format!("{dir}/memory.max")).ok()?;
    let max: usize = max.trim().parse().ok()?; // "max" (no limit) does not parse: None.
    let current: usize = fs::read_to_string(format!("{dir}/memory.current"))
        .ok()?
        .trim()
        .parse()
        .ok()?;
    Some(max.saturating_sub(current))
}

impl Keyspace {
    /// What `--maxmemory` limits, Redis's `used_memory`: the values and the clients'
    /// buffers.
    pub fn memory_in_use(&self) -> usize {
        self.used_memory().saturating_add(self.client_memory())
    }

    /// Bytes the clients' buffers hold (`mem_clients_normal` in `INFO memory`).
    pub fn client_memory(&self) -> usize {
        self.client_memory.load(Ordering::Relaxed)
    }

    /// Counts `grown` more bytes of client buffers and `shrunk` fewer.
    pub fn account_clients(&self, grown: usize, shrunk: usize) {
        if grown > shrunk {
            self.client_memory
                .fetch_add(grown - shrunk, Ordering::Relaxed);
        } else if shrunk > grown {
            self.client_memory
                .fetch_sub(shrunk - grown, Ordering::Relaxed);
        }
    }

    /// `MEMORY USAGE key`: the value's bytes plus what the key costs the map (its bytes,
    /// the entry, and the map's control byte); `None` for a missing key.
    pub fn memory_usage(&self, key: &[u8]) -> Option<usize> {
        let now = self.now();
        self.with_entry(key, now, |entry| {
            entry.map(|e| e.memory_bytes + key.len() + std::mem::size_of::<(Bytes, Entry)>() + 1)
        })
    }
}

impl Budget for Keyspace {
    fn within_maxmemory(&self, extra_bytes: usize) -> bool {
        let max = self.maxmemory();
        max == 0 || self.memory_in_use().saturating_add(extra_bytes) as u64 <= max
    }

    fn machine_available(&self) -> Option<usize> {
        machine_available()
    }

    fn admits_reply(&self, bytes: usize) -> bool {
        // Called under a shard's lock: no eviction here (it would take shard locks).
        bytes <= BIG_REPLY || self.within_maxmemory(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_mem_available_in_bytes() {
        let text =
            "MemTotal:       16318412 kB\nMemFree:         1000 kB\nMemAvailable:    2048 kB\n";
        assert_eq!(mem_available(text), Some(2048 * 1024));
        assert_eq!(mem_available("MemTotal: 5 kB\n"), None);
        assert_eq!(mem_available("MemAvailable: lots kB\n"), None);
    }

    #[test]
    fn this_machine_has_some_memory() {
        if cfg!(target_os = "linux") {
            assert!(machine_available().is_some_and(|bytes| bytes > 0));
        }
    }
}
