//! The command line as a script sees it: exit statuses, one-line usage errors, `-` for
//! standard input and output, rates as percentages, `info --json`, and the wording of what
//! the tool prints.

use crate::common;

use std::fs;

use common::{assert_one_line_error, bloomkit, keys, Scratch};
use predicates::prelude::*;

// ---- exit statuses ----

#[test]
fn query_quiet_sets_the_exit_status_and_prints_nothing() {
    let s = Scratch::new();
    let filter = s.build("f.bkf", &s.keys_file("k.txt", &keys("k", 100)), &[]);
    bloomkit()
        .args(["query", "-q"])
        .arg(&filter)
        .args(["k-1", "k-2"])
        .assert()
        .code(0)
        .stdout("")
        .stderr("");
    // A 100-key filter at 1% answers "no" for this key with overwhelming odds (checked).
    assert!(
        !bloomkit::AnyFilter::from_bytes(&fs::read(&filter).unwrap())
            .unwrap()
            .contains("absent-key")
    );
    bloomkit()
        .args(["query", "--quiet"])
        .arg(&filter)
        .args(["k-1", "absent-key", "k-2"])
        .assert()
        .code(1)
        .stdout("")
        .stderr("");
    bloomkit()
        .args(["query", "-q"])
        .arg(&filter)
        .write_stdin("k-3\nabsent-key\n")
        .assert()
        .code(1);
    // Without -q the answers are the output, and the status is 0 whatever they are.
    bloomkit()
        .arg("query")
        .arg(&filter)
        .arg("absent-key")
        .assert()
        .code(0);
    // An error is 2, with or without -q: a script tells "absent" from "failed".
    let assert = bloomkit()
        .args(["query", "-q"])
        .arg(s.path("missing.bkf"))
        .arg("k")
        .assert();
    assert_one_line_error(assert, &["missing.bkf"]);
}

#[test]
fn clap_usage_errors_are_one_line_with_status_2() {
    let cases: [(&[&str], &[&str]); 7] = [
        (
            &["size", "--item", "5"],
            &["'--item'", "'--items'", "bloomkit size --help"],
        ),
        (&["build"], &["--output <FILE>", "bloomkit build --help"]),
        (&["size", "--items", "0"], &["'0'", "bloomkit size --help"]),
        (
            &["size", "--items", "9", "--fp-rate", "abc"],
            &["'abc'", "such as 1%"],
        ),
        (
            &["build", "--kind", "bogus", "-o", "f"],
            &["bogus", "possible values"],
        ),
        (&["bogus"], &["bogus", "bloomkit --help"]),
        (
            &[],
            &["give a subcommand", "build", "query", "bloomkit --help"],
        ),
    ];
    for (args, needles) in cases {
        let assert = bloomkit().args(args).assert();
        let line = assert_one_line_error(assert, needles);
        assert!(!line.contains("Usage:"), "{args:?}: {line}");
    }
    // Asking for help or the version is no error.
    bloomkit().arg("--help").assert().code(0);
    bloomkit().args(["query", "-h"]).assert().code(0);
    bloomkit().arg("-V").assert().code(0);
}

#[test]
fn help_documents_the_exit_statuses_and_every_kind() {
    bloomkit()
        .arg("--help")
        .assert()
        .success()
        .stdout(predicate::str::contains("Exit status:"))
        .stdout(predicate::str::contains("1  query -q only"))
        .stdout(predicate::str::contains("2  an error"));
    let demo = bloomkit().args(["demo", "--help"]).output().unwrap();
    let build = bloomkit().args(["build", "--help"]).output().unwrap();
    for kind in [
        "classic", "blocked", "sector", "atomic", "counting", "scalable", "cuckoo", "ribbon",
        "aging",
    ] {
        let text = String::from_utf8_lossy(&demo.stdout);
        assert!(text.contains(kind), "demo --help lacks {kind}:\n{text}");
        if kind != "atomic" {
            let text = String::from_utf8_lossy(&build.stdout);
            assert!(
                text.contains(&format!("- {kind}:")),
                "build --help lacks {kind}"
            );
        }
    }
    for command in ["insert", "remove", "rotate"] {
        bloomkit()
            .args([command, "--help"])
            .assert()
            .success()
            .stdout(predicate::str::contains("Examples:"));
    }
}

// ---- standard input and output ----

#[test]
fn dash_means_standard_input_and_output_everywhere() {
    let s = Scratch::new();
    let input = s.keys_file("k.txt", &keys("k", 500));
    let filter = s.build("f.bkf", &input, &["--items", "1000"]);
    let bytes = fs::read(&filter).unwrap();

    // query: the filter from stdin, keys as arguments; keys from stdin with `-`.
    bloomkit()
        .args(["query", "-", "k-1", "absent-key"])
        .write_stdin(bytes.clone())
        .assert()
        .success()
        .stdout("maybe\tk-1\nno\tabsent-key\n");
    bloomkit()
        .arg("query")
        .arg(&filter)
        .args(["k-2", "-", "k-3"])
        .write_stdin("k-4\n")
        .assert()
        .success()
        .stdout("maybe\tk-2\nmaybe\tk-4\nmaybe\tk-3\n");
    let assert = bloomkit()
        .args(["query", "-"])
        .write_stdin(bytes.clone())
        .assert();
    assert_one_line_error(assert, &["cannot both come from standard input"]);
    let assert = bloomkit()
        .arg("query")
        .arg(&filter)
        .args(["-", "-"])
        .assert();
    assert_one_line_error(assert, &["more than once"]);

    // info reads it from stdin too, and counts the bytes it read.
    bloomkit()
        .args(["info", "-"])
        .write_stdin(bytes.clone())
        .assert()
        .success()
        .stdout(predicate::str::is_match("(?m)^file: +- \\(standard input\\)$").unwrap());
    let output = bloomkit()
        .args(["info", "--json", "-"])
        .write_stdin(bytes.clone())
        .output()
        .unwrap();
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["bytes_on_disk"], bytes.len());

    // build -o - writes the filter to stdout and its summary to stderr: the same bytes.
    let output = bloomkit()
        .args(["build", "--items", "1000", "-o", "-"])
        .arg(&input)
        .output()
        .unwrap();
    assert!(output.status.success());
    assert_eq!(output.stdout, bytes);
    assert!(String::from_utf8_lossy(&output.stderr).starts_with("wrote standard output:"));

    // merge: one input from stdin, the union to stdout.
    let other = s.build(
        "g.bkf",
        &s.keys_file("g.txt", &keys("g", 400)),
        &["--items", "1000"],
    );
    let output = bloomkit()
        .args(["merge", "-"])
        .arg(&other)
        .args(["-o", "-"])
        .write_stdin(bytes.clone())
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let union = bloomkit::AnyFilter::from_bytes(&output.stdout).unwrap();
    assert!(keys("k", 500).iter().all(|k| union.contains(k.as_str())));
    assert!(keys("g", 400).iter().all(|k| union.contains(k.as_str())));
    let assert = bloomkit()
        .args(["merge", "-", "-", "-o"])
        .arg(s.path("x.bkf"))
        .assert();
    assert_one_line_error(assert, &["more than once"]);
}

// ---- rates ----

#[test]
fn rates_are_fractions_or_percentages() {
    let s = Scratch::new();
    let input = s.keys_file("k.txt", &keys("k", 1000));
    let fraction = s.build("a.bkf", &input, &["--fp-rate", "0.001"]);
    let percent = s.build("b.bkf", &input, &["--fp-rate", "0.1%"]);
    assert_eq!(fs::read(fraction).unwrap(), fs::read(percent).unwrap());
    let size = |rate: &str| {
        bloomkit()
            .args(["size", "--items", "1000", "--fp-rate", rate])
            .output()
            .unwrap()
            .stdout
    };
    assert_eq!(size("1%"), size("0.01"));
    bloomkit()
        .args(["size", "--items", "1000", "--fp-rate", "1%"])
        .assert()
        .stdout(predicate::str::contains("at most 1.00%"));
    let assert = bloomkit()
        .args(["size", "--items", "1000", "--fp-rate", "150%"])
        .assert();
    assert_one_line_error(
        assert,
        &["invalid false-positive rate 1.5", "between 0 and 1"],
    );
}

#[test]
fn rates_are_echoed_short() {
    for rate in ["1e-300", "1e300"] {
        let assert = bloomkit()
            .args(["size", "--items", "1000", "--fp-rate", rate])
            .assert();
        let line = assert_one_line_error(assert, &[rate]);
        assert!(line.len() < 250, "{line}");
    }
}

// ---- info ----

#[test]
fn info_json_is_one_object_with_the_texts_figures() {
    let s = Scratch::new();
    let input = s.keys_file("k.txt", &keys("k", 3000));
    for kind in [
        "classic", "blocked", "sector", "counting", "scalable", "cuckoo", "ribbon", "aging",
    ] {
        let filter = s.build("f.bkf", &input, &["--kind", kind]);
        let output = bloomkit()
            .args(["info", "--json"])
            .arg(&filter)
            .output()
            .unwrap();
        assert!(output.status.success(), "{kind}");
        let text = String::from_utf8(output.stdout).unwrap();
        assert_eq!(text.lines().count(), 1, "{kind}: {text}");
        let json: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
        let object = json.as_object().unwrap_or_else(|| panic!("{kind}: {text}"));
        let loaded = bloomkit::AnyFilter::from_bytes(&fs::read(&filter).unwrap()).unwrap();
        assert_eq!(object["kind"], kind);
        assert_eq!(object["keys"], loaded.len());
        assert_eq!(
            object["bytes_on_disk"],
            fs::metadata(&filter).unwrap().len()
        );
        // serde_json's default float parsing may miss the last bit of the shortest form.
        let rate = object["estimated_fp_rate"].as_f64().unwrap();
        assert!(
            (rate / loaded.estimated_fp_rate() - 1.0).abs() < 1e-12,
            "{kind}: {text}"
        );
        assert_eq!(object["seed"], format!("{:#018x}", bloomkit::DEFAULT_SEED));
        assert_eq!(object["format_version"], 1);
        assert!(
            object["bits_per_key"].as_f64().unwrap() > 5.0,
            "{kind}: {text}"
        );
        // As many members as the text has lines, less the rows folded into one array.
        let lines = bloomkit().arg("info").arg(&filter).output().unwrap().stdout;
        let lines = String::from_utf8(lines).unwrap();
        let rows = lines
            .lines()
            .filter(|l| l.starts_with("layer:") || l.starts_with("generation:"))
            .count();
        let arrays = object.values().filter(|v| v.is_array()).count();
        assert_eq!(
            object.len(),
            lines.lines().count() - rows + arrays,
            "{kind}"
        );
        match kind {
            "scalable" => assert!(object["layers"].is_array(), "{text}"),
            "aging" => assert_eq!(object["generations"].as_array().unwrap().len(), 2),
            _ => {}
        }
    }
}

#[test]
fn info_of_an_empty_filter_has_no_bits_per_key() {
    let s = Scratch::new();
    let empty = s.path("empty.txt");
    fs::write(&empty, b"").unwrap();
    let filter = s.build("e.bkf", &empty, &["--force"]);
    let output = bloomkit()
        .args(["info", "--json"])
        .arg(&filter)
        .output()
        .unwrap();
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert!(json["bits_per_key"].is_null());
    bloomkit()
        .arg("info")
        .arg(&filter)
        .assert()
        .stdout(predicate::str::contains("- (the filter is empty)"));
}

/// Review findings: ribbon printed "bits per key" twice, deep scalable layers "planned rate
/// 0.00%".
#[test]
fn info_names_each_field_once_and_shows_tiny_rates() {
    let s = Scratch::new();
    let input = s.keys_file("k.txt", &keys("k", 20_000));
    for kind in ["ribbon", "scalable", "aging", "cuckoo", "counting"] {
        // A scalable filter planned for 10 keys grows to many layers.
        let flags: &[&str] = if kind == "scalable" {
            &["--kind", kind, "--items", "10"]
        } else {
            &["--kind", kind]
        };
        let filter = s.build("f.bkf", &input, flags);
        let stdout =
            String::from_utf8(bloomkit().arg("info").arg(&filter).output().unwrap().stdout)
                .unwrap();
        let mut names: Vec<&str> = stdout
            .lines()
            .map(|l| l.split(':').next().unwrap())
            .filter(|name| !matches!(*name, "layer" | "generation"))
            .collect();
        let all = names.len();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), all, "{kind}: a field twice in\n{stdout}");
        if kind == "scalable" {
            let layers: Vec<&str> = stdout.lines().filter(|l| l.starts_with("layer:")).collect();
            assert!(layers.len() > 8, "{stdout}");
            for layer in layers {
                assert!(!layer.contains("rate 0.00%"), "{layer}");
            }
        }
    }
}

// ---- wording ----

#[test]
fn messages_say_an_aging_filter() {
    let s = Scratch::new();
    let input = s.keys_file("k.txt", &keys("k", 10));
    let a = s.build("a.bkf", &input, &["--kind", "aging"]);
    let b = s.build("b.bkf", &input, &["--kind", "aging"]);
    let assert = s.merge(&[&a, &b], "ab.bkf", &[]);
    assert_one_line_error(assert, &["an aging filter does not support union"]);
    let assert = bloomkit()
        .args(["build", "--kind", "aging", "--layout", "classic", "-o"])
        .arg(s.path("c.bkf"))
        .arg(&input)
        .assert();
    let line = assert_one_line_error(assert, &["--layout applies to --kind scalable only"]);
    assert!(!line.contains("a aging"), "{line}");
}
