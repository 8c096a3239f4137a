//! The command layer's integration tests, as one test binary.
//!
//! One binary, not one per file: the test dependencies and the generic code of the crates
//! under test are compiled, and the whole linked, once instead of once per file, which is
//! most of the workspace's test build time. Each former file is a module here, so a
//! test's name starts with its file's (`cargo test -p bloomkit-commands --test it <file>::`).

mod aging;
mod command_table;
mod filter_commands;
mod merge;
