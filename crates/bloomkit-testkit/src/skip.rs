//! The one "full tests" switch: what a test does when something it needs is missing.
//!
//! Without `BLOOMKIT_FULL_TESTS=1` (a developer's `cargo test`, on any machine) a test whose
//! outside program is missing prints one line saying what and passes without running;
//! under `BLOOMKIT_FULL_TESTS=1` (`scripts/test.sh` and CI, which install every program)
//! the same test fails, naming what to install, so a suite run there cannot pass by
//! skipping. Every early return of a test goes through [`require`] or [`holds`].
//!
//! ```no_run
//! use bloomkit_testkit::skip;
//!
//! let Some(redis) = skip::require(
//!     skip::which("redis-server"),
//!     "redis-server (Debian's redis-server package)",
//! ) else {
//!     return; // only without BLOOMKIT_FULL_TESTS=1: with it, `require` failed the test
//! };
//! # let _ = redis;
//! ```

use std::path::PathBuf;

/// Whether this run is a full one (`BLOOMKIT_FULL_TESTS=1`): a missing program fails the
/// test instead of skipping it.
pub fn full_tests() -> bool {
    std::env::var_os("BLOOMKIT_FULL_TESTS").is_some_and(|v| v == "1")
}

/// `found`, or `None` after saying that `what` is missing; under `BLOOMKIT_FULL_TESTS=1`
/// a missing `what` fails the test instead. `what` names the thing and how to get it
/// ("redis-server (Debian's redis-server package)").
///
/// # Panics
///
/// When `found` is `None` and [`full_tests`] is true: that is the failure it reports.
pub fn require<T>(found: Option<T>, what: &str) -> Option<T> {
    if found.is_none() {
        missing(what);
    }
    found
}

/// `condition`, after saying that `what` is missing when it is false; under
/// `BLOOMKIT_FULL_TESTS=1` a false `condition` fails the test instead.
///
/// # Panics
///
/// When `condition` is false and [`full_tests`] is true.
pub fn holds(condition: bool, what: &str) -> bool {
    if !condition {
        missing(what);
    }
    condition
}

/// Reports `what` missing: a failure under `BLOOMKIT_FULL_TESTS=1`, else a printed line
/// naming the test.
fn missing(what: &str) {
    let test = std::thread::current()
        .name()
        .unwrap_or("a test")
        .to_string();
    assert!(
        !full_tests(),
        "{test}: {what} is missing: scripts/test.sh installs it (BLOOMKIT_FULL_TESTS=1 is set)"
    );
    eprintln!("{test}: skipped: {what} is missing (scripts/test.sh installs it)");
}

/// Where scripts/test.sh puts the programs it fetches (`$BLOOMKIT_TEST_TOOLS`).
pub fn tools() -> Option<PathBuf> {
    std::env::var_os("BLOOMKIT_TEST_TOOLS").map(PathBuf::from)
}

/// `relative` under [`tools`], if it exists there.
pub fn tool(relative: &str) -> Option<PathBuf> {
    tools().map(|t| t.join(relative)).filter(|p| p.exists())
}

/// A program on `PATH`.
pub fn which(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join(program))
            .find(|p| p.is_file())
    })
}
