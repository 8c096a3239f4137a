//! End-to-end tests of the `bloomkit` binary: real processes, real files, exact output
//! where the output is a contract (query's `maybe<TAB>key` lines, error lines).

use crate::common;

use std::fs;

use common::{assert_one_line_error, bloomkit, keys, query_stdin, Scratch};
use predicates::prelude::*;

// ---- size ----

#[test]
fn size_prints_every_kind_and_the_textbook_classic_size() {
    let output = bloomkit()
        .args(["size", "--items", "1000000", "--fp-rate", "0.01"])
        .output()
        .expect("run size");
    assert!(output.status.success());
    let stdout = String::from_utf8(output.stdout).expect("utf-8");
    let row = |kind: &str| -> Vec<String> {
        stdout
            .lines()
            .find(|l| l.starts_with(&format!("{kind} ")))
            .unwrap_or_else(|| panic!("no {kind} row in\n{stdout}"))
            .split_whitespace()
            .map(str::to_string)
            .collect()
    };
    // kind, bits, bytes (number and unit), bits/key, hashes, predicted rate.
    let classic = row("classic");
    assert_eq!(classic[1], "9,585,088", "{stdout}"); // 9,585,059 rounded up to words
    assert_eq!(classic[2..4], ["1.14", "MiB"], "{stdout}");
    assert_eq!(classic[5], "7", "{stdout}");
    // Every kind, with the bits per key of the README's table.
    for (kind, bits_per_key) in [
        ("classic", "9.59"),
        ("blocked", "9.92"),
        ("sector", "10.10"),
        ("counting", "38.34"),
        ("scalable", "11.54"),
        ("cuckoo", "10.66"),
        ("ribbon", "7.33"),
        ("aging", "11.53"),
    ] {
        let cells = row(kind);
        assert_eq!(cells.len(), 7, "{kind}: {stdout}");
        assert_eq!(cells[4], bits_per_key, "{kind}: {stdout}");
        let rate: f64 = cells[6].trim_end_matches('%').parse().unwrap();
        assert!(rate > 0.0 && rate <= 1.0, "{kind}: {stdout}");
        let hashes_known = !matches!(kind, "cuckoo" | "ribbon");
        assert_eq!(cells[5] != "-", hashes_known, "{kind}: {stdout}");
    }
    // The rows that need a word have one.
    for note in ["blocked:", "scalable:", "cuckoo:", "ribbon:", "aging:"] {
        assert!(
            stdout.lines().any(|l| l.starts_with(note)),
            "{note} {stdout}"
        );
    }
}

#[test]
fn size_rejects_bad_rates_with_one_line() {
    for rate in ["0", "1", "1.5", "nan", "-0.1", "inf"] {
        let assert = bloomkit()
            .args(["size", "--items", "1000", "--fp-rate", rate])
            .assert();
        assert_one_line_error(assert, &["false-positive rate", "between 0 and 1"]);
    }
}

#[test]
fn size_of_a_trillion_keys_needs_no_memory() {
    bloomkit()
        .args(["size", "--items", "1000000000000", "--fp-rate", "0.001"])
        .timeout(std::time::Duration::from_secs(10))
        .assert()
        .success()
        .stdout(predicate::str::contains("TiB"));
}

#[test]
fn size_answers_for_the_largest_count() {
    // The help says any size answers, so the largest count does, in an instant: each kind's
    // figures, marked as past what a machine can address.
    let output = bloomkit()
        .args(["size", "--items", &u64::MAX.to_string()])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(
        stdout.starts_with("a filter for 18,446,744,073,709,551,615 keys"),
        "{stdout}"
    );
    let classic: Vec<&str> = stdout
        .lines()
        .find(|l| l.starts_with("classic "))
        .unwrap()
        .split_whitespace()
        .collect();
    // 9.585 bits per key, as at any size: 1.768e20 bits, 19.2 EiB.
    assert_eq!(
        classic[1..6],
        ["≈1.768e20", "≈19.2", "EiB", "9.59", "7"],
        "{stdout}"
    );
    assert!(stdout.contains("past the 2^64 bits"), "{stdout}");
    // A kind with a real limit on keys says so instead.
    assert!(
        stdout.contains("fuse:     invalid number of keys"),
        "{stdout}"
    );
}

#[test]
fn size_refuses_unreachable_rates_like_build_does() {
    let assert = bloomkit()
        .args(["size", "--items", "1000", "--fp-rate", "1e-30"])
        .assert();
    assert_one_line_error(assert, &["too small"]);
}

// ---- build and query ----

/// Builds 1000 keys at 1% with `flags`, from a file, and checks every present key says
/// maybe and few absent ones do.
fn check_build_from_file(flags: &[&str]) {
    let s = Scratch::new();
    let present = keys("user", 1000);
    let input = s.keys_file("keys.txt", &present);
    let filter = s.build("f.bkf", &input, flags);
    assert!(query_stdin(&filter, &present).iter().all(|&m| m));
    let absent = keys("nobody", 1000);
    let false_positives = query_stdin(&filter, &absent).iter().filter(|&&m| m).count();
    assert!(false_positives < 30, "{false_positives} of 1000");
}

#[test]
fn build_sized_to_distinct_keys_finds_every_key() {
    check_build_from_file(&[]);
}

#[test]
fn build_streaming_with_items_finds_every_key() {
    check_build_from_file(&["--items", "1000"]);
}

#[test]
fn build_classic_finds_every_key() {
    check_build_from_file(&["--kind", "classic"]);
    check_build_from_file(&["--kind", "classic", "--items", "1000"]);
}

#[test]
fn build_scalable_in_either_layout_finds_every_key() {
    check_build_from_file(&["--kind", "scalable", "--items", "100"]);
    check_build_from_file(&[
        "--kind", "scalable", "--items", "100", "--layout", "classic",
    ]);
    check_build_from_file(&["--kind", "scalable", "--layout", "blocked"]);
    // The layout is in the file, and `info` says which.
    let s = Scratch::new();
    let input = s.keys_file("keys.txt", &keys("k", 5000));
    for layout in ["classic", "blocked"] {
        let filter = s.build(
            &format!("{layout}.bkf"),
            &input,
            &["--kind", "scalable", "--items", "100", "--layout", layout],
        );
        bloomkit()
            .arg("info")
            .arg(&filter)
            .assert()
            .success()
            .stdout(predicate::str::is_match(format!("(?m)^layer layout: +{layout}$")).unwrap());
    }
}

#[test]
fn build_layout_is_for_scalable_filters_only() {
    let s = Scratch::new();
    let input = s.keys_file("keys.txt", &keys("k", 10));
    let assert = bloomkit()
        .args(["build", "--kind", "cuckoo", "--layout", "classic", "-o"])
        .arg(s.path("f.bkf"))
        .arg(&input)
        .assert();
    assert_one_line_error(assert, &["--layout applies to --kind scalable only"]);
    assert!(!s.path("f.bkf").exists());
}

#[test]
fn build_summary_counts_keys_and_distinct_keys() {
    let s = Scratch::new();
    let mut with_repeats = keys("k", 100);
    with_repeats.extend(keys("k", 50));
    let input = s.keys_file("keys.txt", &with_repeats);
    bloomkit()
        .args(["build", "-o"])
        .arg(s.path("f.bkf"))
        .arg(&input)
        .assert()
        .success()
        .stdout(predicate::str::contains("150 keys (100 distinct)"))
        .stdout(predicate::str::contains("blocked filter"))
        .stdout(predicate::str::contains("estimated false-positive rate"));
}

#[test]
fn build_from_stdin_without_inputs_and_with_dash() {
    let s = Scratch::new();
    let present = keys("in", 500);
    let mut text = present.join("\n");
    text.push('\n');
    for (name, dash) in [("a.bkf", false), ("b.bkf", true)] {
        let mut cmd = bloomkit();
        cmd.args(["build", "-o"]).arg(s.path(name));
        if dash {
            cmd.arg("-");
        }
        cmd.write_stdin(text.clone()).assert().success();
        assert!(query_stdin(&s.path(name), &present).iter().all(|&m| m));
    }
    // Both read the same keys, sized the same way: the same filter, byte for byte.
    assert_eq!(
        fs::read(s.path("a.bkf")).unwrap(),
        fs::read(s.path("b.bkf")).unwrap()
    );
}

#[test]
fn build_reads_several_inputs() {
    let s = Scratch::new();
    let a = s.keys_file("a.txt", &keys("a", 300));
    let b = s.keys_file("b.txt", &keys("b", 300));
    let out = s.path("ab.bkf");
    bloomkit()
        .args(["build", "-o"])
        .arg(&out)
        .arg(&a)
        .arg(&b)
        .assert()
        .success()
        .stdout(predicate::str::contains("600 keys (600 distinct)"));
    assert!(query_stdin(&out, &keys("a", 300)).iter().all(|&m| m));
    assert!(query_stdin(&out, &keys("b", 300)).iter().all(|&m| m));
}

#[test]
fn query_prints_answer_tab_key_in_order() {
    let s = Scratch::new();
    let input = s.keys_file("k.txt", &["apple".to_string(), "banana".to_string()]);
    let filter = s.build("f.bkf", &input, &[]);
    // A 2-key filter at 1% is a whole 512-bit line: "pear" would be a false positive with
    // odds far below one in a billion.
    bloomkit()
        .arg("query")
        .arg(&filter)
        .args(["banana", "pear", "apple"])
        .assert()
        .success()
        .stdout("maybe\tbanana\nno\tpear\nmaybe\tapple\n");
}

#[test]
fn query_from_stdin_keeps_key_bytes_and_empty_lines() {
    let s = Scratch::new();
    let input = s.path("k.txt");
    // A non-UTF-8 key, a Windows line ending, and an empty line (the empty key).
    fs::write(&input, b"caf\xe9\r\n\nplain\n").unwrap();
    let filter = s.build("f.bkf", &input, &[]);
    bloomkit()
        .arg("query")
        .arg(&filter)
        .write_stdin(&b"plain\r\ncaf\xe9\n\nnope\n"[..])
        .assert()
        .success()
        .stdout(&b"maybe\tplain\nmaybe\tcaf\xe9\nmaybe\t\nno\tnope\n"[..]);
}

#[test]
fn a_key_built_by_the_cli_is_found_by_the_library() {
    let s = Scratch::new();
    let input = s.path("k.txt");
    fs::write(&input, b"apple\nbytes\xff\n").unwrap();
    for kind in [
        "blocked", "classic", "counting", "scalable", "cuckoo", "ribbon", "aging", "fuse",
    ] {
        let filter = s.build("f.bkf", &input, &["--kind", kind]);
        let loaded = bloomkit::AnyFilter::from_bytes(&fs::read(&filter).unwrap()).unwrap();
        assert_eq!(loaded.kind().name(), kind);
        assert!(loaded.contains("apple"));
        assert!(loaded.contains_hash(bloomkit::hash_bytes(b"bytes\xff")));
        assert!(!loaded.contains("pear"));
    }
}

/// Every kind builds from the CLI, answers for its keys, and `info` describes it.
#[test]
fn every_kind_builds_queries_and_describes_itself() {
    let s = Scratch::new();
    let input = s.keys_file("k.txt", &keys("k", 2000));
    for kind in [
        "classic", "blocked", "counting", "scalable", "cuckoo", "ribbon", "aging", "fuse",
    ] {
        let filter = s.build("f.bkf", &input, &["--kind", kind]);
        let output = bloomkit().arg("info").arg(&filter).output().unwrap();
        assert!(output.status.success(), "{kind}");
        let stdout = String::from_utf8(output.stdout).unwrap();
        let kind_line = stdout.lines().find(|l| l.starts_with("kind:"));
        assert_eq!(kind_line.map(|l| l[5..].trim()), Some(kind), "{stdout}");
        assert!(
            stdout.contains("estimated false-positive rate:"),
            "{stdout}"
        );
        let query = bloomkit()
            .arg("query")
            .arg(&filter)
            .args(["k-0", "k-1999", "absent-key"])
            .output()
            .unwrap();
        let answers = String::from_utf8(query.stdout).unwrap();
        assert!(
            answers.starts_with("maybe\tk-0\nmaybe\tk-1999\n"),
            "{kind}: {answers}"
        );
    }
}

#[test]
fn ribbon_refuses_items_because_it_is_built_from_all_keys() {
    let s = Scratch::new();
    let input = s.keys_file("k.txt", &keys("k", 10));
    bloomkit()
        .args(["build", "--kind", "ribbon", "--items", "10", "-o"])
        .arg(s.path("r.bkf"))
        .arg(&input)
        .assert()
        .failure()
        .stderr(predicates::str::contains(
            "--items does not apply to --kind ribbon",
        ));
    assert!(!s.path("r.bkf").exists());
}

/// `--fingerprint-bits` picks a fuse filter's fingerprints; without it, `--fp-rate` does.
#[test]
fn fuse_fingerprint_bits_come_from_the_rate() {
    let s = Scratch::new();
    let input = s.keys_file("k.txt", &keys("k", 500));
    for (args, bits) in [
        (&["--kind", "fuse"][..], 8),
        (&["--kind", "fuse", "--fp-rate", "0.001"][..], 16),
        (&["--kind", "fuse", "--fp-rate", "0.004"][..], 8),
        (&["--kind", "fuse", "--fp-rate", "0.0039"][..], 16),
    ] {
        let filter = s.build("f.bkf", &input, args);
        let loaded = bloomkit::BinaryFuseFilter::from_bytes(&fs::read(&filter).unwrap()).unwrap();
        assert_eq!(loaded.fingerprint_bits(), bits, "{args:?}");
        assert_eq!(loaded.len(), 500);
    }
    for (args, message) in [
        (
            &["--kind", "fuse", "--fp-rate", "1e-9"][..],
            "a binary fuse filter has 8- or 16-bit fingerprints",
        ),
        (
            &["--kind", "fuse", "--items", "10"][..],
            "--items does not apply to --kind fuse",
        ),
    ] {
        bloomkit()
            .arg("build")
            .args(args)
            .arg("-o")
            .arg(s.path("bad.bkf"))
            .arg(&input)
            .assert()
            .failure()
            .stderr(predicates::str::contains(message));
        assert!(!s.path("bad.bkf").exists());
    }
}

#[test]
fn merging_kinds_that_cannot_merge_says_so() {
    let s = Scratch::new();
    let input = s.keys_file("k.txt", &keys("k", 10));
    let a = s.build("a.bkf", &input, &["--kind", "cuckoo"]);
    let b = s.build("b.bkf", &input, &["--kind", "cuckoo"]);
    bloomkit()
        .arg("merge")
        .arg(&a)
        .arg(&b)
        .arg("-o")
        .arg(s.path("ab.bkf"))
        .assert()
        .failure()
        .stderr(predicates::str::contains("does not support union"));
}

// ---- info ----

#[test]
fn info_shows_kind_hashes_and_counts() {
    let s = Scratch::new();
    let input = s.keys_file("k.txt", &keys("k", 1000));
    for kind in ["blocked", "classic"] {
        let filter = s.build("f.bkf", &input, &["--kind", kind]);
        let loaded = bloomkit::AnyFilter::from_bytes(&fs::read(&filter).unwrap()).unwrap();
        let output = bloomkit().arg("info").arg(&filter).output().unwrap();
        assert!(output.status.success());
        let stdout = String::from_utf8(output.stdout).unwrap();
        let field = |name: &str| -> String {
            stdout
                .lines()
                .find_map(|l| l.strip_prefix(&format!("{name}:")))
                .unwrap_or_else(|| panic!("no {name} in\n{stdout}"))
                .trim()
                .to_string()
        };
        assert_eq!(field("kind"), kind);
        let num_hashes = match &loaded {
            bloomkit::AnyFilter::Classic(f) => f.num_hashes(),
            bloomkit::AnyFilter::Blocked(f) => f.num_hashes(),
            other => panic!("built a {} filter", other.kind()),
        };
        assert_eq!(field("hashes"), num_hashes.to_string());
        assert!(field("format version").starts_with('1'), "{stdout}");
        assert!(field("hash").contains("XXH3-64"), "{stdout}");
        // Inserts that changed the filter: every key but the rare one already a false
        // positive when it arrived.
        let item_count: u64 = field("keys")
            .split_whitespace()
            .next()
            .unwrap()
            .replace(',', "")
            .parse()
            .unwrap();
        assert!((950..=1000).contains(&item_count), "{stdout}");
        assert!(field("fill").ends_with('%'));
    }
}

// ---- merge ----

#[test]
fn merge_holds_the_keys_of_every_input() {
    let s = Scratch::new();
    let a = s.build(
        "a.bkf",
        &s.keys_file("a.txt", &keys("a", 400)),
        &["--items", "1000"],
    );
    let b = s.build(
        "b.bkf",
        &s.keys_file("b.txt", &keys("b", 400)),
        &["--items", "1000"],
    );
    let c = s.build(
        "c.bkf",
        &s.keys_file("c.txt", &keys("c", 100)),
        &["--items", "1000"],
    );
    let out = s.path("abc.bkf");
    bloomkit()
        .arg("merge")
        .args([&a, &b, &c])
        .arg("-o")
        .arg(&out)
        .assert()
        .success()
        .stdout(predicate::str::contains("union of 3 filters"));
    for prefix in ["a", "b", "c"] {
        let n = if prefix == "c" { 100 } else { 400 };
        assert!(query_stdin(&out, &keys(prefix, n)).iter().all(|&m| m));
    }
}

#[test]
fn merge_of_different_sizes_names_both_files() {
    let s = Scratch::new();
    let input = s.keys_file("k.txt", &keys("k", 100));
    let a = s.build("small.bkf", &input, &["--items", "1000"]);
    let b = s.build("large.bkf", &input, &["--items", "2000"]);
    let assert = bloomkit()
        .arg("merge")
        .arg(&a)
        .arg(&b)
        .arg("-o")
        .arg(s.path("out.bkf"))
        .assert();
    assert_one_line_error(
        assert,
        &["cannot merge", "small.bkf", "large.bkf", "differ"],
    );
    assert!(!s.path("out.bkf").exists());
}

#[test]
fn merge_needs_two_inputs() {
    let s = Scratch::new();
    let a = s.build("a.bkf", &s.keys_file("k.txt", &keys("k", 10)), &[]);
    bloomkit()
        .arg("merge")
        .arg(&a)
        .arg("-o")
        .arg(s.path("out.bkf"))
        .assert()
        .code(2);
}

// ---- errors ----

#[test]
fn missing_input_names_the_path() {
    let s = Scratch::new();
    let missing = s.path("no-such-keys.txt");
    let assert = bloomkit()
        .args(["build", "-o"])
        .arg(s.path("f.bkf"))
        .arg(&missing)
        .assert();
    assert_one_line_error(assert, &["no-such-keys.txt"]);
    let assert = bloomkit()
        .arg("query")
        .arg(s.path("no-such-filter.bkf"))
        .arg("k")
        .assert();
    assert_one_line_error(assert, &["cannot read filter", "no-such-filter.bkf"]);
    assert!(s.listing().is_empty(), "{:?}", s.listing());
}

/// A valid 1000-key filter's bytes, for the corruption tests.
fn good_filter(s: &Scratch) -> Vec<u8> {
    let filter = s.build("good.bkf", &s.keys_file("k.txt", &keys("k", 1000)), &[]);
    fs::read(filter).unwrap()
}

#[test]
fn corrupt_filter_is_a_checksum_error() {
    let s = Scratch::new();
    let mut bytes = good_filter(&s);
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x40;
    let bad = s.path("corrupt.bkf");
    fs::write(&bad, bytes).unwrap();
    let assert = bloomkit().arg("query").arg(&bad).arg("k-1").assert();
    assert_one_line_error(assert, &["corrupt.bkf", "checksum"]);
    let assert = bloomkit().arg("info").arg(&bad).assert();
    assert_one_line_error(
        assert,
        &["cannot read filter '", "corrupt.bkf'", "checksum"],
    );
}

#[test]
fn truncated_filter_says_truncated() {
    let s = Scratch::new();
    let bytes = good_filter(&s);
    let bad = s.path("short.bkf");
    fs::write(&bad, &bytes[..bytes.len() / 2]).unwrap();
    let assert = bloomkit().arg("info").arg(&bad).assert();
    assert_one_line_error(assert, &["short.bkf", "truncated"]);
}

#[test]
fn trailing_bytes_after_a_filter_are_an_error() {
    let s = Scratch::new();
    let mut bytes = good_filter(&s);
    bytes.extend_from_slice(b"junk");
    let bytes_len = bytes.len();
    let bad = s.path("long.bkf");
    fs::write(&bad, bytes).unwrap();
    let filter_len = bytes_len - 4;
    let assert = bloomkit().arg("info").arg(&bad).assert();
    // Not called damage: a whole filter with more after it, and where it ends.
    let line = assert_one_line_error(
        assert,
        &[
            "long.bkf",
            &format!("a whole filter ends at byte {filter_len} and more bytes follow it"),
            "format::peek_header",
        ],
    );
    assert!(!line.contains("corrupt"), "{line}");
}

#[test]
fn text_file_is_not_a_filter() {
    let s = Scratch::new();
    let text = s.keys_file("keys.txt", &keys("k", 10));
    let assert = bloomkit().arg("query").arg(&text).arg("k-1").assert();
    assert_one_line_error(assert, &["keys.txt", "not a bloomkit filter"]);
    let empty = s.path("empty.bkf");
    fs::write(&empty, b"").unwrap();
    let assert = bloomkit().arg("info").arg(&empty).assert();
    assert_one_line_error(assert, &["empty.bkf", "not a bloomkit filter"]);
}

#[test]
fn bad_build_rates_are_errors_before_reading_input() {
    let s = Scratch::new();
    // No stdin is given: the rate must fail before build waits for keys (else this hangs
    // until the timeout when run from a terminal).
    for rate in ["0", "1.5", "nan", "-0.1"] {
        let assert = bloomkit()
            .args(["build", "--fp-rate", rate, "-o"])
            .arg(s.path("f.bkf"))
            .timeout(std::time::Duration::from_secs(10))
            .assert();
        assert_one_line_error(assert, &["false-positive rate"]);
    }
    assert!(s.listing().is_empty());
}

#[test]
fn unknown_kind_is_a_usage_error() {
    let s = Scratch::new();
    let input = s.keys_file("k.txt", &keys("k", 10));
    bloomkit()
        .args(["build", "--kind", "bogus", "-o"])
        .arg(s.path("f.bkf"))
        .arg(&input)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("bogus"));
}

#[test]
fn failed_build_leaves_no_output_and_keeps_the_old_one() {
    let s = Scratch::new();
    let input = s.keys_file("k.txt", &keys("k", 10));
    // A directory opens, but reading it fails: the build fails after it started.
    let unreadable = s.path("a-directory");
    fs::create_dir(&unreadable).unwrap();
    let assert = bloomkit()
        .args(["build", "-o"])
        .arg(s.path("new.bkf"))
        .arg(&input)
        .arg(&unreadable)
        .assert();
    assert_one_line_error(assert, &["cannot read keys", "a-directory"]);
    assert_eq!(s.listing(), ["a-directory", "k.txt"]);

    // An existing output survives a failed rebuild untouched.
    let old = s.build("old.bkf", &input, &[]);
    let before = fs::read(&old).unwrap();
    bloomkit()
        .args(["build", "-o"])
        .arg(&old)
        .arg(&unreadable)
        .assert()
        .code(2);
    assert_eq!(fs::read(&old).unwrap(), before);
    assert_eq!(s.listing(), ["a-directory", "k.txt", "old.bkf"]);
}

#[test]
fn output_into_a_missing_directory_is_an_error() {
    let s = Scratch::new();
    let input = s.keys_file("k.txt", &keys("k", 10));
    let assert = bloomkit()
        .args(["build", "-o"])
        .arg(s.path("no-such-dir/f.bkf"))
        .arg(&input)
        .assert();
    assert_one_line_error(assert, &["cannot write filter", "no-such-dir"]);
}

// ---- demo and global flags ----

#[test]
fn demo_prints_every_kind() {
    let output = bloomkit()
        .args(["demo", "--items", "20000"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8(output.stdout).unwrap();
    for kind in [
        "classic", "blocked", "atomic", "counting", "scalable", "cuckoo", "ribbon", "aging", "fuse",
    ] {
        let row = stdout
            .lines()
            .find(|l| l.starts_with(&format!("{kind} ")))
            .unwrap_or_else(|| panic!("no {kind} row in\n{stdout}"));
        // kind, bytes (number, unit), bits/key, predicted, measured, ns/insert, ns/query.
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(cells.len(), 8, "{row}");
        let predicted: f64 = cells[4].trim_end_matches('%').parse().unwrap();
        let measured: f64 = cells[5].trim_end_matches('%').parse().unwrap();
        // 20,000 probes at about 1%: 200 expected false positives, so ±40% is over five
        // standard deviations.
        assert!((measured - predicted).abs() < 0.4 * predicted, "{row}");
    }
}

#[test]
fn demo_rejects_bad_rates() {
    let assert = bloomkit()
        .args(["demo", "--items", "100", "--fp-rate", "2"])
        .assert();
    assert_one_line_error(assert, &["false-positive rate"]);
}

#[test]
fn version_and_help() {
    bloomkit()
        .arg("--version")
        .assert()
        .success()
        .stdout(predicate::str::starts_with("bloomkit "));
    for command in ["size", "build", "query", "info", "merge", "demo"] {
        bloomkit()
            .args([command, "--help"])
            .assert()
            .success()
            .stdout(predicate::str::contains("Examples:"));
    }
    bloomkit()
        .args(["build", "--help"])
        .assert()
        .stdout(predicate::str::contains("empty line is the empty key"))
        .stdout(predicate::str::contains("8 bytes"));
}

// ---- bench ----

/// A quick in-cache benchmark measures every bloomkit kind and prints its table.
#[test]
fn bench_quick_measures_every_kind() {
    let output = bloomkit()
        .args(["bench", "--quick", "--regime", "cache", "--keys", "int"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(stdout.contains("## in cache, int keys"), "{stdout}");
    for kind in [
        "BlockedBloomFilter",
        "BloomFilter",
        "AtomicBloomFilter",
        "CountingBloomFilter",
        "ScalableBloomFilter",
        "CuckooFilter",
        "RibbonFilter",
    ] {
        let row = stdout
            .lines()
            .find(|l| l.starts_with(&format!("| {kind}")))
            .unwrap_or_else(|| panic!("no {kind} row in\n{stdout}"));
        assert!(row.contains('%'), "{row}");
    }
    assert!(!stdout.contains("out of cache"), "{stdout}");
}

#[test]
fn bench_rejects_bad_rates() {
    let assert = bloomkit()
        .args(["bench", "--quick", "--fp-rate", "0"])
        .assert();
    assert_one_line_error(assert, &["false-positive rate"]);
}
