//! The library's integration, property and golden-file tests, as one test binary.
//!
//! One binary, not one per file: the test dependencies and the generic code of the crates
//! under test are compiled, and the whole linked, once instead of once per file, which is
//! most of the workspace's test build time. Each former file is a module here, so a
//! test's name starts with its file's (`cargo test -p bloomkit --test it <file>::`).

// `macro_use` (here and on `common::typed`): the modules below use `with_key!`.
#[macro_use]
mod common;

mod aging;
mod batch;
mod concurrency;
mod counting;
mod cuckoo;
mod fuse;
mod golden;
mod hostile;
mod keys;
mod oracle;
mod redisbloom;
mod redisbloom_live;
mod ribbon;
mod scalable;
mod sector;
#[cfg(feature = "serde")]
mod serde;
mod statistical;
mod views;
