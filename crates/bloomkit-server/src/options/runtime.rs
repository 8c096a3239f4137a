//! The run-time options' current values beyond the filter defaults: the clients' buffer
//! limits and the slow log, read by the connections on every request (atomics, no lock).
//! Their rows, with their names and syntax, are in [`super::table`].
//!
//! Defaults are Redis's but one: `client-output-buffer-limit normal` is `64mb 32mb 60`
//! where Redis has `0 0 0` (no limit). A client that sends requests without reading the
//! replies is stopped from sending more once its unsent replies pass 64 KiB (it is no
//! longer read from), so its output holds at most that plus one reply; 64 MiB is four times
//! the largest reply a well-behaved client asks for (a 16 MiB `SCANDUMP` chunk), and a
//! client that leaves more than 32 MiB unread for a minute is not reading at all.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

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
pub(super) const CLASSES: [&str; 3] = ["normal", "replica", "pubsub"];

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
pub(super) struct OutputLimitCell([AtomicU64; 3]);

impl OutputLimitCell {
    fn new(limit: OutputLimit) -> OutputLimitCell {
        OutputLimitCell([
            AtomicU64::new(limit.hard_bytes),
            AtomicU64::new(limit.soft_bytes),
            AtomicU64::new(limit.soft_seconds),
        ])
    }

    pub(super) fn get(&self) -> OutputLimit {
        OutputLimit {
            hard_bytes: self.0[0].load(Ordering::Relaxed),
            soft_bytes: self.0[1].load(Ordering::Relaxed),
            soft_seconds: self.0[2].load(Ordering::Relaxed),
        }
    }

    pub(super) fn set(&self, limit: OutputLimit) {
        self.0[0].store(limit.hard_bytes, Ordering::Relaxed);
        self.0[1].store(limit.soft_bytes, Ordering::Relaxed);
        self.0[2].store(limit.soft_seconds, Ordering::Relaxed);
    }
}

/// The options' current values, read by the connections on every request (atomics, no
/// lock).
#[derive(Debug)]
pub struct Options {
    pub(super) output_limits: [OutputLimitCell; 3],
    pub(super) query_buffer_limit: AtomicU64,
    pub(super) slowlog_log_slower_than: AtomicI64,
    pub(super) slowlog_max_len: AtomicU64,
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
