//! Memory: what each key really costs the process (`used_memory`), what `--maxmemory`
//! limits, how much the machine can still give (the ceiling for a single `RESERVE`), and how
//! large a reply may be before it must fit under `maxmemory`.
//!
//! # What a key costs
//!
//! A key is counted at what holding it takes from the allocator, not only at its filter's
//! bits, so that resident memory follows `used_memory` for a million tiny filters as for a
//! few huge ones: the key's bytes (copied into an allocation of their own); the value's
//! block (its reference counts and the filter's struct); each of the filter's heap
//! allocations (its list of layers or sub-filters, and each layer's bits), every allocation
//! at the size glibc's malloc gives it ([`allocation`]); and the key's share of its shard's
//! hash table, counted per shard at the table's real size ([`table_cost`]). A filter that is
//! flagged for `INFO filters` costs its entry in that list too.
//!
//! Linux's `MemAvailable` is the kernel's estimate of what can be allocated without
//! swapping. In a container the cgroup's limit is often far lower, and exceeding it gets
//! the process killed, so the smaller of the two counts.

use std::fs;
use std::sync::atomic::Ordering;

use bloomkit::{CuckooFilter, ScalableBloomFilter};
use bloomkit_commands::{Budget, PartialDump, Value};
use bytes::Bytes;

use super::health::Health;
use super::{Entry, Keyspace};

/// glibc's malloc threshold past which an allocation gets pages of its own (`mmap`): its
/// default, which `bloomkit serve` fixes.
const MMAP_THRESHOLD: usize = 128 << 10;

/// The page size large allocations are rounded to.
const PAGE: usize = 4096;

/// Values at least this large are freed on a blocking thread, not where they were removed.
const FREE_ELSEWHERE: usize = 1 << 20;

/// Frees `removed` (values a command took out of the keyspace, `bytes` of them) where that
/// holds no worker thread: a gigabyte of filter is a gigabyte of pages to unmap, tens of
/// milliseconds, so large ones go to a blocking thread (Redis frees large values lazily for
/// the same reason); small ones, and any outside a runtime, are freed at once.
pub(super) fn free<T: Send + 'static>(removed: T, bytes: usize) {
    if bytes >= FREE_ELSEWHERE {
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn_blocking(move || drop(removed));
            return;
        }
    }
    drop(removed);
}

/// What the allocator takes for a request of `bytes` (0 for none): glibc's malloc gives a
/// chunk of the request and an 8-byte header, rounded up to 16 bytes, at least 32; from the
/// mmap threshold on, whole pages. Other allocators round alike (jemalloc's size classes
/// are within the same bounds).
pub fn allocation(bytes: usize) -> usize {
    if bytes == 0 {
        0
    } else if bytes >= MMAP_THRESHOLD {
        (bytes + 16).next_multiple_of(PAGE)
    } else {
        (bytes + 8).next_multiple_of(16).max(32)
    }
}

/// What holding a key's name costs: its bytes, in their own allocation.
pub fn key_cost(key_len: usize) -> usize {
    allocation(key_len)
}

/// What holding `value` costs: the block that holds it and its reference counts, then
/// each of its heap allocations (their bytes spread evenly over them, which is exact for
/// the one-layer filters most keys are, and within a rounding per allocation otherwise).
pub fn value_cost(value: &Value) -> usize {
    const ARC_COUNTS: usize = 2 * std::mem::size_of::<usize>();
    let (inline, allocations) = match value {
        Value::Bloom(f) => (
            std::mem::size_of::<ScalableBloomFilter>(),
            1 + f.num_layers(),
        ),
        Value::Cuckoo(f) => (std::mem::size_of::<CuckooFilter>(), 1 + f.num_filters()),
        // The list of generations, and each generation's bits.
        Value::Aging(k) => (
            std::mem::size_of::<bloomkit_commands::aging::AgingKey>(),
            1 + k.filter().num_generations() as usize,
        ),
        Value::Loading(_) => (std::mem::size_of::<PartialDump>(), 1),
        // Their memory_bytes counts only the bits and slots: one allocation each, and the
        // list of them.
        Value::RedisBloom(f) => (0, 1 + f.links().len()),
        Value::RedisCuckoo(f) => (0, 1 + f.num_filters()),
        Value::Importing(_) => (std::mem::size_of::<bloomkit_commands::ImportingDump>(), 2),
    };
    let heap = value.memory_bytes().saturating_sub(inline);
    let each = heap / allocations;
    allocation(ARC_COUNTS + std::mem::size_of::<Value>())
        + allocation(each) * allocations
        + (heap - each * allocations)
}

/// What a shard's hash table of `capacity` entries takes: hashbrown's buckets (the
/// capacity is 7/8 of them, or one fewer than them below 8), each an entry and a control
/// byte, and a group of control bytes more.
pub fn table_cost(capacity: usize) -> usize {
    if capacity == 0 {
        return 0;
    }
    let buckets = if capacity < 8 {
        (capacity + 1).next_power_of_two()
    } else {
        (capacity / 7 * 8).next_power_of_two()
    };
    allocation(buckets * (std::mem::size_of::<(Bytes, Entry)>() + 1) + 16)
}

/// What a filter's place among the flagged ones costs (`INFO filters`): its entry in the
/// list (a second handle to the key's bytes, which turns the first into a shared one, and
/// the health), in a table at most half empty.
pub fn flag_cost() -> usize {
    allocation(4 * std::mem::size_of::<usize>()) + 2 * (std::mem::size_of::<(Bytes, Health)>() + 1)
}

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
    /// Every shard's cost counted afresh from what it holds: what the running total
    /// ([`Keyspace::used_memory`]) must always equal.
    #[cfg(test)]
    pub(crate) fn recount_memory(&self) -> usize {
        self.shards
            .iter()
            .map(|shard| {
                let map = super::shard::read(shard);
                let entries: usize = map
                    .entries
                    .iter()
                    .map(|(key, entry)| value_cost(&entry.value) + key_cost(key.len()))
                    .sum();
                entries + table_cost(map.entries.capacity()) + map.flagged.len() * flag_cost()
            })
            .sum()
    }

    /// The keys' values and names alone, counted afresh (without the tables).
    #[cfg(test)]
    pub(crate) fn recount_memory_of_values(&self) -> usize {
        self.shards
            .iter()
            .map(|shard| {
                let map = super::shard::read(shard);
                map.entries
                    .iter()
                    .map(|(key, entry)| value_cost(&entry.value) + key_cost(key.len()))
                    .sum::<usize>()
                    + map.flagged.len() * flag_cost()
            })
            .sum()
    }

    /// What `--maxmemory` limits: the values and the buffers of the clients that have
    /// authenticated (or need not). The buffers of clients that have not are left out, as
    /// Redis leaves out the memory it does not count for eviction: what such a client sends
    /// is bounded per connection (10 arguments of 16 KiB), and may never evict a key or make
    /// another client's command fail.
    pub fn memory_in_use(&self) -> usize {
        self.used_memory().saturating_add(self.client_memory())
    }

    /// Redis's `used_memory` (`INFO memory`): [`Keyspace::memory_in_use`] and the buffers of
    /// the clients that have not authenticated.
    pub fn memory_reported(&self) -> usize {
        self.memory_in_use()
            .saturating_add(self.unauthenticated_client_memory())
    }

    /// Bytes the buffers of the clients that have authenticated (or need not) hold.
    pub fn client_memory(&self) -> usize {
        self.client_memory.load(Ordering::Relaxed)
    }

    /// Bytes the buffers of the clients that have not authenticated hold.
    pub fn unauthenticated_client_memory(&self) -> usize {
        self.unauthenticated_client_memory.load(Ordering::Relaxed)
    }

    /// Counts `grown` more bytes of client buffers and `shrunk` fewer, for clients that
    /// have authenticated (`authenticated`) or not.
    pub fn account_clients(&self, authenticated: bool, grown: usize, shrunk: usize) {
        let counter = if authenticated {
            &self.client_memory
        } else {
            &self.unauthenticated_client_memory
        };
        if grown > shrunk {
            counter.fetch_add(grown - shrunk, Ordering::Relaxed);
        } else if shrunk > grown {
            counter.fetch_sub(shrunk - grown, Ordering::Relaxed);
        }
    }

    /// `MEMORY USAGE key`: what the key costs (see the [module documentation](self)): its
    /// value, its name, and its place in the shard's table (an entry and a control byte);
    /// `None` for a missing key.
    pub fn memory_usage(&self, key: &[u8]) -> Option<usize> {
        let now = self.now();
        self.with_entry(key, now, |entry| {
            entry.map(|e| {
                e.memory_bytes + key_cost(key.len()) + std::mem::size_of::<(Bytes, Entry)>() + 1
            })
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
    fn allocations_as_glibc_rounds_them() {
        assert_eq!(allocation(0), 0);
        assert_eq!(allocation(1), 32);
        assert_eq!(allocation(24), 32);
        assert_eq!(allocation(25), 48);
        assert_eq!(allocation(120), 128);
        assert_eq!(allocation(MMAP_THRESHOLD), MMAP_THRESHOLD + PAGE);
        assert_eq!(allocation(1 << 30), (1 << 30) + PAGE);
        for bytes in [1usize, 100, 5000, 200_000, 50 << 20] {
            assert!(allocation(bytes) >= bytes && allocation(bytes) < bytes + PAGE + 32);
        }
    }

    #[test]
    fn a_value_costs_at_least_its_bytes_and_its_blocks() {
        let bloom = Value::Bloom(ScalableBloomFilter::new(100, 0.01).unwrap());
        let cost = value_cost(&bloom);
        assert!(
            cost > bloom.memory_bytes(),
            "{cost} {}",
            bloom.memory_bytes()
        );
        // The block (the reference counts, and room for the largest kind of value), the
        // list of layers and one layer's bits: three allocations, each within 48 bytes of
        // its request.
        let block = 16 + std::mem::size_of::<Value>() - std::mem::size_of::<ScalableBloomFilter>();
        assert!(cost < bloom.memory_bytes() + block + 3 * 48, "{cost}");
        let huge = Value::Bloom(ScalableBloomFilter::new(10_000_000, 0.01).unwrap());
        let ratio = value_cost(&huge) as f64 / huge.memory_bytes() as f64;
        assert!((1.0..1.001).contains(&ratio), "{ratio}");
    }

    #[test]
    fn a_table_costs_its_buckets() {
        let slot = std::mem::size_of::<(Bytes, Entry)>() + 1;
        assert_eq!(table_cost(0), 0);
        assert_eq!(table_cost(3), allocation(4 * slot + 16));
        assert_eq!(table_cost(7), allocation(8 * slot + 16));
        assert_eq!(table_cost(14), allocation(16 * slot + 16));
        assert_eq!(table_cost(3584), allocation(4096 * slot + 16));
        // What std's map reports as its capacity, for sizes it grows through.
        let mut map: std::collections::HashMap<Bytes, Entry> = std::collections::HashMap::new();
        for i in 0..5000u32 {
            map.insert(Bytes::from(i.to_string()), test_entry());
            let cap = map.capacity();
            assert!(table_cost(cap) >= cap * slot, "{cap}");
        }
    }

    fn test_entry() -> Entry {
        Entry::new(
            std::sync::Arc::new(Value::Bloom(ScalableBloomFilter::new(10, 0.1).unwrap())),
            None,
            0,
        )
    }

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
