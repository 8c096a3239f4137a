//! `bloomkit explore` in a real headless browser, used as a person would.
//!
//! Starts the server on a free port, drives the page in Debian's Chromium with Playwright
//! (`tests/explorer/e2e.mjs`, which only reports what the page showed), and checks it against
//! the library's own answers computed here:
//!
//! * the page loads with no console errors (nor failed requests, nor uncaught exceptions);
//! * adding kiwi (typed, with Enter) sets exactly the cells its badges name, and those are the
//!   positions the library's hash gives;
//! * querying words never added either stops at a 0 or is reported as a false positive,
//!   exactly as the library answers, at the same check;
//! * the real-filter panel's measured rate for blocked at 1% over 100,000 keys is within 15%
//!   of 1% (and is the very rate the native library measures for the same keys).
//!
//! It saves screenshots (desktop and phone width) under the target directory and prints
//! their paths, and the time the panel takes for a blocked filter of 1,000,000 keys (for
//! every kind with `BLOOMKIT_EXPLORER_TIMINGS=all`).
//!
//! Needs Node.js, `playwright-core` in `$BLOOMKIT_TEST_TOOLS/node_modules` and Chromium
//! (`/usr/bin/chromium`, or `BLOOMKIT_CHROMIUM`): scripts/test.sh installs them. Without them
//! it skips, saying why, except under `BLOOMKIT_FULL_TESTS=1`, where it fails.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::support;

use bloomkit_lab::{Experiment, Kind};
use bloomkit_wasm::teach::{self, TeachingFilter};
use serde_json::{json, Value};

const TEST: &str = "explorer browser test";

/// Words never added that the test queries: lime (a false positive on the starting state)
/// and others the library stops at a 0.
const NEVER_ADDED: [&str; 6] = ["lime", "pear", "grape", "mango", "plum", "fig"];

/// The browser's tools, or `None` (after saying why) when the test must skip.
struct Tools {
    node: PathBuf,
    playwright: PathBuf,
    chromium: PathBuf,
}

fn tools() -> Option<Tools> {
    let Some(node) = support::find_program("node") else {
        support::missing(TEST, "Node.js (`node`)", "install Debian's nodejs");
        return None;
    };
    let dir = std::env::var_os("BLOOMKIT_TEST_TOOLS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/test-tools"));
    let playwright = dir.join("node_modules/playwright-core");
    if !playwright.join("package.json").is_file() {
        support::missing(
            TEST,
            &format!(
                "the npm package playwright-core (looked in {})",
                playwright.display()
            ),
            "npm install --prefix target/test-tools playwright-core",
        );
        return None;
    }
    let chromium = std::env::var_os("BLOOMKIT_CHROMIUM")
        .map(PathBuf::from)
        .or_else(|| support::find_program("/usr/bin/chromium"))
        .or_else(|| support::find_program("chromium"));
    let Some(chromium) = chromium else {
        support::missing(
            TEST,
            "Chromium (`/usr/bin/chromium`)",
            "install Debian's chromium",
        );
        return None;
    };
    Some(Tools {
        node,
        playwright,
        chromium,
    })
}

#[test]
fn the_explorer_works_in_a_real_browser() {
    let Some(tools) = tools() else { return };
    let Some(server) = common::start_explorer(TEST) else {
        return;
    };
    let url = server.url.clone();
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("explorer");
    std::fs::create_dir_all(&dir).unwrap();
    let screenshot = dir.join("explorer.png");
    let phone_screenshot = dir.join("explorer-phone.png");
    let config = json!({
        "url": url,
        "playwright": tools.playwright.parent().unwrap(),
        "chromium": tools.chromium,
        "screenshot": screenshot,
        "phoneScreenshot": phone_screenshot,
        "queryWords": NEVER_ADDED,
        "timingKinds": timing_kinds(),
    });
    let ran = support::run_bounded(
        Command::new(&tools.node)
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/explorer/e2e.mjs")),
        config.to_string().as_bytes(),
        &dir.join("run"),
        Duration::from_secs(300),
    );
    assert!(
        ran.status.success(),
        "the browser script failed ({}):\n{}",
        ran.status,
        ran.stderr
    );
    let report: Value = serde_json::from_str(ran.stdout.trim()).unwrap_or_else(|e| {
        panic!(
            "the browser script's report is not JSON ({e}):\n{}\n{}",
            ran.stdout, ran.stderr
        )
    });

    // No console errors, no failed request, no uncaught exception; and the script itself ran.
    let problems = report["problems"].as_array().unwrap();
    assert!(problems.is_empty(), "the page had problems:\n{problems:#?}");

    // Adding kiwi: the badges name the library's positions, and exactly those cells are set.
    let kiwi = teach::positions("kiwi").map(|p| p as u64);
    let start = TeachingFilter::starting();
    let start_bits: Vec<u64> = (0..teach::NUM_BITS)
        .map(|p| u64::from(start.bit(p)))
        .collect();
    let before = numbers(&report["bitsBefore"]);
    let after = numbers(&report["bitsAfter"]);
    assert_eq!(
        before, start_bits,
        "the page starts with apple, banana and cherry's bits"
    );
    assert_eq!(
        numbers(&report["kiwiBadges"]),
        kiwi.to_vec(),
        "kiwi's badges"
    );
    for p in 0..teach::NUM_BITS {
        let expected = u64::from(before[p] == 1 || kiwi.contains(&(p as u64)));
        assert_eq!(after[p], expected, "cell {p} after adding kiwi");
    }
    assert_eq!(
        report["firstFocus"], "word",
        "Tab reaches the word box first"
    );
    assert_eq!(
        report["chips"],
        json!(["apple", "banana", "cherry", "kiwi"])
    );

    // Words never added: the page's verdict is the library's, check for check.
    let mut with_kiwi = TeachingFilter::starting();
    with_kiwi.add("kiwi").unwrap();
    let (mut stops, mut false_positives) = (0, 0);
    for (word, shown) in NEVER_ADDED
        .iter()
        .zip(report["queries"].as_array().unwrap())
    {
        let q = with_kiwi.query(word);
        assert_eq!(shown["word"], *word);
        assert_eq!(
            shown["answer"],
            if q.maybe() { "maybe" } else { "no" },
            "{word}: {shown:#}"
        );
        assert_eq!(shown["stoppedAt"], json!(q.stopped_at), "{word}: {shown:#}");
        assert_eq!(
            shown["falsePositive"],
            q.false_positive(),
            "{word}: {shown:#}"
        );
        assert_eq!(
            numbers(&shown["badges"]),
            teach::positions(word).map(|p| p as u64).to_vec()
        );
        // The steps shown are the checks made: up to the 0, or all three.
        let steps = shown["steps"].as_array().unwrap().len();
        assert_eq!(
            steps,
            q.stopped_at.map_or(3, |s| s + 1),
            "{word}: {shown:#}"
        );
        let text = shown["text"].as_str().unwrap();
        if q.false_positive() {
            false_positives += 1;
            assert!(text.contains("false positive"), "{word}: {text}");
        } else {
            stops += 1;
            assert!(text.contains("Definitely not"), "{word}: {text}");
        }
    }
    assert!(
        stops > 0 && false_positives > 0,
        "the words cover both verdicts"
    );
    assert_eq!(report["chipQuery"]["answer"], "maybe");
    assert_eq!(report["chipQuery"]["falsePositive"], false);

    // Play: back to the starting state, and the false positive the library names.
    let fp = teach::false_positive_word().unwrap();
    assert_eq!(report["play"]["word"], fp);
    assert_eq!(report["play"]["falsePositive"], true);
    assert_eq!(numbers(&report["bitsAfterPlay"]), start_bits);
    assert!(report["playLabel"].as_str().unwrap().contains(fp));

    // The curve's slider moved by keyboard, and the rate shown is the library's.
    assert_eq!(report["curveK"], "4");
    let expected = bloomkit::sizing::classic_fp_rate(3, 16, 4);
    assert!((report["curveRate"].as_f64().unwrap() - expected).abs() < 1e-12);

    // The real filter: blocked at 1% over 100,000 keys, within 15% of 1%, and exactly what
    // the library measures natively for the same keys.
    let real = &report["real"];
    assert_eq!(real["kind"], "blocked");
    assert_eq!(real["inserted"], 100_000);
    assert_eq!(real["falseNegatives"], 0);
    let measured = real["measured"].as_f64().unwrap();
    assert!(
        (measured - 0.01).abs() <= 0.15 * 0.01,
        "measured {measured}"
    );
    let mut native =
        Experiment::new(Kind::File(bloomkit::FilterKind::Blocked), 100_000, 0.01).unwrap();
    native.fill_to(100_000).unwrap();
    let native = native.measure(100_000).unwrap();
    assert_eq!(
        measured,
        native.measured_rate(),
        "the page measures what the library does"
    );
    // Overfilled to twice its keys, by keyboard: the rate climbs as predicted.
    let over = &report["overfilled"];
    let (m2, p2) = (
        over["measured"].as_f64().unwrap(),
        over["predicted"].as_f64().unwrap(),
    );
    assert!(
        m2 > 5.0 * measured && (m2 - p2).abs() < 0.15 * p2,
        "2×: measured {m2}, predicted {p2}"
    );

    // Readable at phone width: nothing wider than the screen.
    let phone = &report["phone"];
    assert!(
        phone["scrollWidth"].as_f64().unwrap() <= phone["innerWidth"].as_f64().unwrap(),
        "the page scrolls sideways at 390 px: {phone}"
    );

    for t in report["timings"].as_array().unwrap() {
        eprintln!(
            "{TEST}: real-filter panel, {} at 1% with {} keys: {:.0} ms to build, fill, probe {} absent keys and check every key",
            t["kind"].as_str().unwrap_or("?"),
            t["inserted"],
            t["ms"].as_f64().unwrap_or(f64::NAN),
            t["inserted"],
        );
    }
    eprintln!(
        "{TEST}: screenshots at {} and {}",
        screenshot.display(),
        phone_screenshot.display()
    );
}

/// The kinds timed at 1,000,000 keys: blocked, or every kind with
/// `BLOOMKIT_EXPLORER_TIMINGS=all` (a few seconds more; for the figures in the README).
fn timing_kinds() -> Vec<&'static str> {
    if std::env::var_os("BLOOMKIT_EXPLORER_TIMINGS").is_some_and(|v| v == "all") {
        Kind::ALL.iter().map(|k| k.name()).collect()
    } else {
        vec!["blocked"]
    }
}

fn numbers(v: &Value) -> Vec<u64> {
    v.as_array()
        .unwrap_or_else(|| panic!("not an array: {v}"))
        .iter()
        .map(|x| x.as_u64().unwrap_or_else(|| panic!("not a number: {x}")))
        .collect()
}
