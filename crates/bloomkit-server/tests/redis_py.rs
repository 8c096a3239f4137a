//! redis-py's pipelines, transactional (its default: `MULTI` ... `EXEC`) and not, in RESP2
//! and RESP3, against a server in this process: `scripts/redis_py_transactions.py` does the
//! checks, this test serves it and judges its exit status.
//!
//! Needs Python 3 and the `redis` package, looked for in `$BLOOMKIT_TEST_TOOLS/py`
//! (where scripts/test.sh installs it with `pip install --target`) and then wherever Python
//! finds it. Without them it skips, saying why, except under `BLOOMKIT_FULL_TESTS=1`,
//! where it fails.

mod common;

#[path = "../../bloomkit-wasm/tests/support/mod.rs"]
mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::TestServer;

const TEST: &str = "redis_py_pipelines_transactional_and_not";

/// Where scripts/test.sh installs Python packages.
fn python_tools() -> PathBuf {
    std::env::var_os("BLOOMKIT_TEST_TOOLS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/test-tools"))
        .join("py")
}

/// Regression: redis-py's default pipeline sends `MULTI` ... `EXEC`, which answered
/// `unknown command` while the queued writes ran anyway: the client raised an error
/// although everything was applied, and a retry applied it twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_py_pipelines_transactional_and_not() {
    let Some(python) = support::find_program("python3") else {
        support::missing(TEST, "Python 3 (`python3`)", "install Debian's python3");
        return;
    };
    let tools = python_tools();
    let has_redis_py = Command::new(&python)
        .args(["-c", "import redis"])
        .env("PYTHONPATH", &tools)
        .status()
        .is_ok_and(|s| s.success());
    if !has_redis_py {
        support::missing(
            TEST,
            &format!("redis-py (looked in {} and Python's path)", tools.display()),
            &format!("pip install --target {} redis", tools.display()),
        );
        return;
    }
    let server = TestServer::start().await;
    let port = server.addr.port().to_string();
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/redis_py_transactions.py");
    let scratch = tempfile::tempdir().unwrap();
    let scratch_path = scratch.path().to_path_buf();
    let ran = tokio::task::spawn_blocking(move || {
        let mut command = Command::new(python);
        command.arg(script).arg(port).env("PYTHONPATH", tools);
        support::run_bounded(&mut command, b"", &scratch_path, Duration::from_secs(60))
    })
    .await
    .unwrap();
    assert!(
        ran.status.success(),
        "scripts/redis_py_transactions.py failed ({}):\n{}{}",
        ran.status,
        ran.stdout,
        ran.stderr
    );
    assert!(
        ran.stdout
            .contains("all redis-py transaction checks passed"),
        "{}",
        ran.stdout
    );
    server.stop().await.unwrap();
}
