//! The library's answers in WebAssembly equal the native ones.
//!
//! Builds `bloomkit.wasm` with the recipe the CLI embeds it with, runs a list of requests
//! against it in Node.js through the page's own bridge (`page/bloomkit.js`), runs the same
//! requests natively on [`Explorer`], and compares every reply: the small filter's positions,
//! bits and verdicts, the curve, and for every kind of real filter its measurement and its
//! answer for each of tens of thousands of present and absent keys.
//!
//! Needs Node.js and the `wasm32-unknown-unknown` target; without them it skips, or fails
//! under `BLOOMKIT_FULL_TESTS=1` (scripts/test.sh, which installs both).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use bloomkit_lab::Kind;
use bloomkit_testkit::programs as support;
use bloomkit_wasm::api::Explorer;
use bloomkit_wasm_build as wasm_build;
use serde_json::{json, Value};

const TEST: &str = "bloomkit-wasm node test";

/// The requests, as `[method, ...arguments]` of the bridge's `Bloomkit` class.
fn requests() -> Vec<Value> {
    let mut r = vec![json!(["teachState"])];
    let long = "x".repeat(41);
    for word in [
        "kiwi",
        "naïve",
        "say \"hi\"",
        "🍋",
        "",
        long.as_str(),
        "kiwi",
    ] {
        r.push(json!(["teachAdd", word]));
    }
    for word in ["lime", "apple", "pear", "kiwi", "", "\u{1}"] {
        r.push(json!(["teachQuery", word]));
    }
    for i in 0..64 {
        r.push(json!(["teachQuery", format!("word{i}")]));
    }
    r.push(json!(["teachReset"]));
    r.push(json!(["teachQuery", "lime"]));
    for (m, n, k, max_k) in [
        (128, 20, 3, 16),
        (16, 3, 3, 10),
        (1000, 100, 7, 24),
        (0, 1, 1, 1),
    ] {
        r.push(json!(["curve", m, n, k, max_k]));
    }
    r.push(json!(["kinds"]));
    for kind in Kind::ALL {
        let name = kind.name();
        r.push(json!(["labBuild", name, 20_000, 0.01, 50_000]));
        r.push(json!(["labAnswers", 0, 20_000, false]));
        r.push(json!(["labAnswers", 0, 50_000, true]));
        r.push(json!(["labFill", 2.5, 50_000]));
        r.push(json!(["labAnswers", 0, 50_000, false]));
        r.push(json!(["labAnswers", 0, 50_000, true]));
    }
    r.push(json!(["labBuild", "blocked", 1000, 0.001, 10_000]));
    r.push(json!(["labBuild", "bloom", 1000, 0.01, 1000]));
    r.push(json!(["labBuild", "blocked", 1000, 1.5, 1000]));
    r.push(json!(["labFill", 2, 1000]));
    r
}

/// The same request, natively.
fn native(x: &mut Explorer, request: &Value) -> String {
    let a = request.as_array().expect("a request is an array");
    let s = |i: usize| a[i].as_str().expect("a string argument").to_string();
    let f = |i: usize| a[i].as_f64().expect("a number argument");
    let b = |i: usize| a[i].as_bool().expect("a boolean argument");
    match a[0].as_str().expect("a method name") {
        "teachState" => x.teach_state(),
        "teachReset" => x.teach_reset(),
        "teachAdd" => x.teach_add(&s(1)),
        "teachQuery" => x.teach_query(&s(1)),
        "curve" => x.curve(f(1), f(2), f(3), f(4)),
        "kinds" => x.kinds(),
        "labBuild" => x.lab_build(&s(1), f(2), f(3), f(4)),
        "labFill" => x.lab_fill(f(1), f(2)),
        "labAnswers" => x.lab_answers(f(1), f(2), b(3)),
        other => panic!("no native method for {other}"),
    }
}

/// Equal, numbers within a relative 1e-12: the math library under `exp` and `powf` is not
/// the same in the module as natively, and may differ in the last bit.
///
/// One figure is allowed to differ more: the bytes of memory a filter holds count its struct
/// as well as its bits, and the struct's pointers and lengths take 4 bytes in wasm32 and 8
/// natively (16 bytes of 24,880 for a blocked filter of 20,000 keys). Those fields, and the
/// bits per key made from them, are compared within 1%.
fn same_reply(a: &Value, b: &Value) -> bool {
    let (Value::Object(x), Value::Object(y)) = (a, b) else {
        return same(a, b);
    };
    let platform = ["memory_bytes", "bits_per_key"];
    let close = |k: &str| {
        let (p, q) = (
            x[k].as_f64().unwrap_or(f64::NAN),
            y[k].as_f64().unwrap_or(f64::NAN),
        );
        (p - q).abs() <= 0.01 * p.abs().max(q.abs())
    };
    x.len() == y.len()
        && x.iter().all(|(k, v)| {
            y.get(k).is_some_and(|w| {
                if platform.contains(&k.as_str()) {
                    close(k)
                } else {
                    same(v, w)
                }
            })
        })
}

fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_u64(), y.as_u64()) {
            (Some(x), Some(y)) => x == y,
            _ => {
                let (x, y) = (
                    x.as_f64().unwrap_or(f64::NAN),
                    y.as_f64().unwrap_or(f64::NAN),
                );
                x == y || (x - y).abs() <= 1e-12 * x.abs().max(y.abs())
            }
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn wasm_answers_equal_native_answers() {
    let Some(node) = support::find_program("node") else {
        return support::missing(TEST, "Node.js (`node`)", "install Debian's nodejs");
    };
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("bloomkit-wasm-node");
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let module = match wasm_build::build(
        Path::new(env!("CARGO")),
        Path::new(&rustc),
        &workspace(),
        &dir.join("target"),
    ) {
        Ok(wasm_build::Built::Module(path)) => path,
        Ok(wasm_build::Built::TargetMissing(why)) => {
            return support::missing(TEST, "the wasm32-unknown-unknown target", &why)
        }
        Err(e) => panic!("{e}"),
    };

    let requests = requests();
    let ran = support::run_bounded(
        Command::new(node)
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/node/run.mjs"))
            .arg(&module),
        serde_json::to_string(&requests).unwrap().as_bytes(),
        &dir.join("run"),
        Duration::from_secs(120),
    );
    assert!(
        ran.status.success(),
        "node failed ({}):\n{}",
        ran.status,
        ran.stderr
    );
    let replies: Vec<&str> = ran.stdout.lines().collect();
    assert_eq!(
        replies.len(),
        requests.len(),
        "one reply per request:\n{}",
        ran.stderr
    );

    let mut x = Explorer::new();
    let mut answers_compared = 0;
    for (request, wasm) in requests.iter().zip(replies) {
        let wasm: Value = serde_json::from_str(wasm).expect("the module replies JSON");
        let native: Value = serde_json::from_str(&native(&mut x, request)).unwrap();
        assert!(
            same_reply(&wasm, &native),
            "{request}:\n  wasm:   {wasm}\n  native: {native}"
        );
        answers_compared += native["answers"].as_str().map_or(0, str::len);
    }
    // The comparison covered real work: every kind's answers for its keys, and verdicts.
    assert!(answers_compared > 1_000_000, "{answers_compared}");
    let replies: Vec<Value> = ran
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(replies.iter().any(|r| r["false_positive"] == true));
    assert!(replies.iter().any(|r| r["stopped_at"].is_u64()));
    assert!(replies.iter().any(|r| r["error"].is_string()));
    eprintln!(
        "{TEST}: {} replies equal, {answers_compared} key answers among them ({} bytes of wasm)",
        requests.len(),
        std::fs::metadata(&module).map_or(0, |m| m.len())
    );
}

#[test]
fn a_missing_target_is_reported_not_failed() {
    // A rustc that cannot be run has no wasm32 standard library: the build is skipped with
    // how to install the target, as on a machine without it (the CLI then embeds no page).
    let outcome = wasm_build::build(
        Path::new(env!("CARGO")),
        Path::new("/nonexistent/rustc"),
        &workspace(),
        &Path::new(env!("CARGO_TARGET_TMPDIR")).join("bloomkit-wasm-missing"),
    );
    match outcome {
        Ok(wasm_build::Built::TargetMissing(why)) => {
            assert!(
                why.contains("rustup target add wasm32-unknown-unknown"),
                "{why}"
            )
        }
        Ok(wasm_build::Built::Module(path)) => panic!("built {} without a rustc", path.display()),
        Err(e) => panic!("{e}"),
    }
}
