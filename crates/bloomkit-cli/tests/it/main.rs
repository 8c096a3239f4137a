//! The CLI's integration tests, through the real `bloomkit` binary, as one test binary.
//!
//! One binary, not one per file: the test dependencies and the generic code of the crates
//! under test are compiled, and the whole linked, once instead of once per file, which is
//! most of the workspace's test build time. Each former file is a module here, so a
//! test's name starts with its file's (`cargo test -p bloomkit-cli --test it <file>::`).
//!
//! `serve_connections.rs` stays a binary of its own: it holds hundreds of sockets open
//! at once, and would share the open-file limit of this process with every other test.

mod common;

mod cli;
mod copy;
mod edit;
mod explore;
mod explorer;
mod newcomer;
mod plot;
mod safety;
mod serve;
mod serve_memory;
mod serve_ops;
mod usage;
mod writers;
