//! A RedisBloom-compatible server over bloomkit's filters.
//!
//! `bloomkit serve` speaks RESP2 and RESP3 and answers RedisBloom's `BF.*` and `CF.*`
//! commands with the same replies and errors, so redis-cli, redis-py and redis-rs work
//! unchanged.
//!
//! # Overview of modules
//!
//! * [`frame`]: the request parser (RESP multibulk and inline), with Redis's limits.
//! * [`connection`]: one client's stream: requests in, buffered replies out.
//! * [`reply`]: what a command answers, and its RESP2/RESP3 encoding.
//! * [`value`]: what a key holds (a scalable Bloom filter or a cuckoo filter).
//! * [`cmd`]: the command layer. The filter commands see one key's value and return a
//!   reply plus what to log; they know nothing of sockets or storage, so the same code can
//!   run inside a Redis module.
//! * [`persist`]: the append-only log and snapshots; start-up recovery.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod cmd;
pub mod connection;
pub mod frame;
pub mod persist;
pub mod reply;
pub mod value;
