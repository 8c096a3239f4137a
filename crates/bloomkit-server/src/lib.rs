//! A RedisBloom-compatible server over bloomkit's filters.
//!
//! `bloomkit serve` speaks RESP2 and RESP3 and answers RedisBloom's `BF.*` and `CF.*`
//! commands with the same replies and errors, so redis-cli, redis-py and redis-rs work
//! unchanged.
//!
//! # Overview of modules
//!
//! * [`reply`]: what a command answers, and its RESP2/RESP3 encoding.
//! * [`value`]: what a key holds (a scalable Bloom filter or a cuckoo filter).
//! * [`cmd`]: the command layer. The filter commands see one key's value and return a
//!   reply plus what to log; they know nothing of sockets or storage, so the same code can
//!   run inside a Redis module.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod cmd;
pub mod config;
pub mod dispatch;
pub mod keyspace;
pub mod reply;
pub mod server;
pub mod value;
