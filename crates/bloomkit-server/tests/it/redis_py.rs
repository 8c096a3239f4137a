//! redis-py's pipelines, transactional (its default: `MULTI` ... `EXEC`) and not, in RESP2
//! and RESP3, against a server in this process: `scripts/redis_py_transactions.py` does the
//! checks, this test serves it and judges its exit status.
//!
//! Needs Python 3 and the `redis` package, looked for in `$BLOOMKIT_TEST_TOOLS/py`
//! (where scripts/test.sh installs it with `pip install --target`) and then wherever Python
//! finds it. Without them it skips, saying why, except under `BLOOMKIT_FULL_TESTS=1`,
//! where it fails.

use crate::common;

use bloomkit_testkit::programs as support;

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
    run_script(
        TEST,
        "redis_py_transactions.py",
        "all redis-py transaction checks passed",
    )
    .await;
}

/// redis-py's `bf().info()`/`cf().info()` read RedisBloom's fields from replies that carry
/// bloomkit's after them, in RESP2 and RESP3.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_py_reads_info_with_bloomkits_fields() {
    run_script(
        "redis_py_reads_info_with_bloomkits_fields",
        "redis_py_info.py",
        "all redis-py info checks passed",
    )
    .await;
}

/// The CDN example of the README (`scripts/cdn_admission.py`): admission on the second
/// request within an `AF.*` window, across rotations.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cdn_admission_script_runs() {
    run_script(
        "the_cdn_admission_script_runs",
        "cdn_admission.py",
        "all CDN admission checks passed",
    )
    .await;
}

/// Runs `scripts/<script> PORT` against a server in this process and expects `passed` in
/// its output; skips (or fails under `BLOOMKIT_FULL_TESTS=1`) without Python or redis-py.
async fn run_script(test: &str, script: &str, passed: &str) {
    let Some(python) = support::find_program("python3") else {
        support::missing(test, "Python 3 (`python3`)", "install Debian's python3");
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
            test,
            &format!("redis-py (looked in {} and Python's path)", tools.display()),
            &format!("pip install --target {} redis", tools.display()),
        );
        return;
    }
    let server = TestServer::start().await;
    let port = server.addr.port().to_string();
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scripts")
        .join(script);
    let scratch = tempfile::tempdir().unwrap();
    let scratch_path = scratch.path().to_path_buf();
    let shown = script.display().to_string();
    let ran = tokio::task::spawn_blocking(move || {
        let mut command = Command::new(python);
        command.arg(script).arg(port).env("PYTHONPATH", tools);
        support::run_bounded(&mut command, b"", &scratch_path, Duration::from_secs(60))
    })
    .await
    .unwrap();
    assert!(
        ran.status.success(),
        "{shown} failed ({}):\n{}{}",
        ran.status,
        ran.stdout,
        ran.stderr
    );
    assert!(ran.stdout.contains(passed), "{}", ran.stdout);
    server.stop().await.unwrap();
}
