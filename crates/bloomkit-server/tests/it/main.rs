//! The server's integration tests, through the real protocol, as one test binary.
//!
//! One binary, not one per file: the test dependencies and the generic code of the crates
//! under test are compiled, and the whole linked, once instead of once per file, which is
//! most of the workspace's test build time. Each former file is a module here, so a
//! test's name starts with its file's (`cargo test -p bloomkit-server --test it <file>::`).

mod common;

mod aging;
mod connections;
mod data_dir;
#[cfg(unix)]
mod data_dir_files;
mod durability;
mod golden_dir;
mod import;
mod long_commands;
mod merge;
mod operations;
mod options;
mod persist;
mod rbcompat;
mod redis_py;
mod restart;
mod security;
mod server;
mod transactions;
