//! The benchmark harness's integration tests, as one test binary.
//!
//! One binary, not one per file: the dependencies' generic code (tokio, the clients, the
//! crates under test) is compiled and linked once instead of once per file, which is
//! most of the workspace's test build time. Each former file is a module here, so a
//! test's name starts with its file's (`cargo test -p bloomkit-bench --test it <file>::`).

mod fp_grid;
mod smoke;
