//! Builds and merges never quietly produce a useless or lossy filter: every line counts in
//! the kinds that remove, overfilled or empty results are refused with the figures and the
//! fix, and an output never overwrites an input.

use crate::common;

use std::fs;
use std::path::Path;

use bloomkit::AnyFilter;
use common::{assert_one_line_error, bloomkit, keys, query_stdin, Scratch};
use predicates::prelude::*;

fn load(path: &Path) -> AnyFilter {
    AnyFilter::from_bytes(&fs::read(path).expect("read filter")).expect("a filter")
}

/// Regression: a counting (or cuckoo) build skipped the keys that were already false
/// positives, so removing half of 1,000,000 keys in the library left 1,789 (cuckoo: 1,904)
/// false negatives among the other half. Every line must be inserted.
#[test]
fn removing_half_of_a_million_key_build_loses_no_other_key() {
    let s = Scratch::new();
    let all = keys("user", 1_000_000);
    let input = s.keys_file("keys.txt", &all);
    for kind in ["counting", "cuckoo"] {
        for sized in [&[][..], &["--items", "1000000"][..]] {
            let mut flags = vec!["--kind", kind];
            flags.extend_from_slice(sized);
            let mut filter = load(&s.build("f.bkf", &input, &flags));
            assert_eq!(filter.len(), 1_000_000, "{flags:?}: every line is held");
            for key in all.iter().step_by(2) {
                let removed = match &mut filter {
                    AnyFilter::Counting(f) => f.remove(key.as_str()),
                    AnyFilter::Cuckoo(f) => f.remove(key.as_str()),
                    other => panic!("built a {} filter", other.kind()),
                };
                assert!(removed, "{flags:?}: {key} was inserted");
            }
            let lost = all
                .iter()
                .skip(1)
                .step_by(2)
                .filter(|key| !filter.contains(key.as_str()))
                .count();
            assert_eq!(lost, 0, "{flags:?}: false negatives among the kept half");
        }
    }
}

/// A repeated line is a second copy in the kinds that count copies, as their own insert
/// makes it: it takes two removals to go.
#[test]
fn repeated_lines_are_copies_in_counting_and_cuckoo_builds() {
    let s = Scratch::new();
    let mut lines = keys("k", 100);
    lines.push("k-7".to_string());
    let input = s.keys_file("keys.txt", &lines);
    for kind in ["counting", "cuckoo"] {
        for sized in [&[][..], &["--items", "200"][..]] {
            let mut flags = vec!["--kind", kind];
            flags.extend_from_slice(sized);
            let filter = s.build("f.bkf", &input, &flags);
            assert_eq!(load(&filter).len(), 101, "{flags:?}");
            for expected in ["maybe", "no"] {
                bloomkit()
                    .arg("remove")
                    .arg(&filter)
                    .arg("k-7")
                    .assert()
                    .success()
                    .stdout(predicate::str::contains("removed 1 key;"));
                bloomkit()
                    .arg("query")
                    .arg(&filter)
                    .arg("k-7")
                    .assert()
                    .success()
                    .stdout(format!("{expected}\tk-7\n"));
            }
        }
    }
}

#[test]
fn a_key_repeated_past_what_a_cuckoo_filter_holds_is_explained() {
    let s = Scratch::new();
    let input = s.keys_file("same.txt", &vec!["same".to_string(); 20]);
    let assert = bloomkit()
        .args(["build", "--kind", "cuckoo", "-o"])
        .arg(s.path("f.bkf"))
        .arg(&input)
        .assert();
    assert_one_line_error(
        assert,
        &["full after 8 of 20 keys", "at most 8 copies", "sort -u"],
    );
    assert!(!s.path("f.bkf").exists());
}

#[test]
fn a_build_overfilled_past_its_items_is_refused_unless_forced() {
    let s = Scratch::new();
    let input = s.keys_file("keys.txt", &keys("k", 1000));
    for kind in ["blocked", "classic", "counting", "aging"] {
        let assert = bloomkit()
            .args(["build", "--kind", kind, "--items", "300", "-o"])
            .arg(s.path("f.bkf"))
            .arg(&input)
            .assert();
        let line = assert_one_line_error(
            assert,
            &[
                "1,000 keys overfill a filter sized for --items 300",
                "more than twice the target 1.00%",
                "--items 1000",
                "--force",
            ],
        );
        assert!(line.contains("estimated false-positive rate is"), "{line}");
        assert!(!s.path("f.bkf").exists(), "{kind}");
        bloomkit()
            .args(["build", "--force", "--kind", kind, "--items", "300", "-o"])
            .arg(s.path("f.bkf"))
            .arg(&input)
            .assert()
            .success();
        assert!(query_stdin(&s.path("f.bkf"), &keys("k", 1000))
            .iter()
            .all(|&m| m));
        fs::remove_file(s.path("f.bkf")).unwrap();
    }
    // A cuckoo filter cannot be overfilled: it is full, and says how many keys there are.
    let assert = bloomkit()
        .args(["build", "--kind", "cuckoo", "--items", "300", "-o"])
        .arg(s.path("f.bkf"))
        .arg(&input)
        .assert();
    assert_one_line_error(
        assert,
        &[
            "1,000 keys do not fit a cuckoo filter sized for --items 300",
            "--items 1000",
        ],
    );
    // A little over the plan, within twice the target, is still a filter worth having.
    let input = s.keys_file("more.txt", &keys("k", 1100));
    bloomkit()
        .args(["build", "--items", "1000", "-o"])
        .arg(s.path("g.bkf"))
        .arg(&input)
        .assert()
        .success()
        .stdout(predicate::str::contains("(target 1.00%)"));
    // A scalable filter grows instead.
    bloomkit()
        .args(["build", "--kind", "scalable", "--items", "10", "-o"])
        .arg(s.path("h.bkf"))
        .arg(&input)
        .assert()
        .success();
}

#[test]
fn an_empty_input_is_refused_unless_forced() {
    let s = Scratch::new();
    let empty = s.path("empty.txt");
    fs::write(&empty, b"").unwrap();
    for flags in [&[][..], &["--items", "100"], &["--kind", "ribbon"]] {
        let assert = bloomkit()
            .arg("build")
            .args(flags)
            .arg("-o")
            .arg(s.path("f.bkf"))
            .arg(&empty)
            .assert();
        assert_one_line_error(assert, &["no keys were read", "--force"]);
        assert!(!s.path("f.bkf").exists());
        bloomkit()
            .arg("build")
            .args(flags)
            .arg("--force")
            .arg("-o")
            .arg(s.path("f.bkf"))
            .arg(&empty)
            .assert()
            .success();
        assert!(load(&s.path("f.bkf")).is_empty());
        fs::remove_file(s.path("f.bkf")).unwrap();
    }
    // Merging empty filters makes nothing worth writing either.
    let a = s.build("a.bkf", &empty, &["--force", "--items", "100"]);
    let b = s.build("b.bkf", &empty, &["--force", "--items", "100"]);
    let assert = bloomkit()
        .arg("merge")
        .args([&a, &b])
        .arg("-o")
        .arg(s.path("ab.bkf"))
        .assert();
    assert_one_line_error(assert, &["hold no keys", "--force"]);
    assert!(!s.path("ab.bkf").exists());
    bloomkit()
        .arg("merge")
        .args([&a, &b])
        .args(["--force", "-o"])
        .arg(s.path("ab.bkf"))
        .assert()
        .success();
}

#[test]
fn a_merge_estimated_above_the_target_is_refused_unless_forced() {
    let s = Scratch::new();
    let a = s.build(
        "a.bkf",
        &s.keys_file("a.txt", &keys("a", 1000)),
        &["--items", "1000"],
    );
    let b = s.build(
        "b.bkf",
        &s.keys_file("b.txt", &keys("b", 1000)),
        &["--items", "1000"],
    );
    let merge = |flags: &[&str]| {
        let mut cmd = bloomkit();
        cmd.arg("merge")
            .args([&a, &b])
            .args(flags)
            .arg("-o")
            .arg(s.path("ab.bkf"));
        cmd.assert()
    };
    let line = assert_one_line_error(
        merge(&[]),
        &[
            "the union of the 2 filters holds about",
            "above the target 1.00%",
            "--items",
            "--force",
        ],
    );
    // The --items it names covers both inputs' keys.
    let items: u64 = line
        .split("--items ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{line}"));
    assert!((1900..=2100).contains(&items), "{line}");
    assert!(!s.path("ab.bkf").exists());
    // The rate the inputs were built for decides; a generous one lets the union through.
    merge(&["--fp-rate", "10%"]).success();
    merge(&["--force"]).success();
    assert!(query_stdin(&s.path("ab.bkf"), &keys("a", 1000))
        .iter()
        .all(|&m| m));
}

#[test]
fn an_output_that_is_an_input_is_refused_before_anything_is_written() {
    let s = Scratch::new();
    let input = s.keys_file("keys.txt", &keys("k", 100));
    let before = fs::read(&input).unwrap();
    let assert = bloomkit()
        .args(["build", "-o"])
        .arg(&input)
        .arg(&input)
        .assert();
    assert_one_line_error(assert, &["the output", "keys.txt", "is also the input"]);
    assert_eq!(fs::read(&input).unwrap(), before);
    // Another spelling of the same file is the same file.
    let dotted = s.dir.path().join(".").join("keys.txt");
    let assert = bloomkit()
        .args(["build", "-o"])
        .arg(&dotted)
        .arg("-")
        .arg(&input)
        .write_stdin("x\n")
        .assert();
    assert_one_line_error(assert, &["is also the input"]);
    assert_eq!(fs::read(&input).unwrap(), before);

    let a = s.build("a.bkf", &input, &["--items", "1000"]);
    let b = s.build("b.bkf", &input, &["--items", "1000"]);
    let a_before = fs::read(&a).unwrap();
    let assert = bloomkit()
        .arg("merge")
        .args([&a, &b])
        .arg("-o")
        .arg(&a)
        .assert();
    assert_one_line_error(assert, &["a.bkf", "is also the input"]);
    assert_eq!(fs::read(&a).unwrap(), a_before);
    assert_eq!(s.listing(), ["a.bkf", "b.bkf", "keys.txt"]);
}

/// The aging filter's size is the README's: two generations, `--items` keys each, holding
/// half the lines each (11.5 bits/key at 1%), filled in input order; a rotation forgets the
/// older half.
#[test]
fn an_aging_build_fills_its_generations_in_order() {
    let s = Scratch::new();
    let first = keys("old", 5000);
    let second = keys("new", 5000);
    let input = s.keys_file("keys.txt", &[first.clone(), second.clone()].concat());
    for sized in [&[][..], &["--items", "5000"][..]] {
        let mut flags = vec!["--kind", "aging"];
        flags.extend_from_slice(sized);
        let filter = s.build("f.bkf", &input, &flags);
        let AnyFilter::Aging(aging) = load(&filter) else {
            panic!("not an aging filter");
        };
        let bits_per_key = aging.num_bits() as f64 / 10_000.0;
        assert!(
            (11.0..12.0).contains(&bits_per_key),
            "{flags:?}: {bits_per_key}"
        );
        let older = aging.generation(1).unwrap();
        assert!(
            first.iter().all(|k| older.contains(k.as_str())),
            "{flags:?}"
        );
        assert!(query_stdin(&filter, &second).iter().all(|&m| m));
        let rate = aging.estimated_fp_rate();
        assert!(rate > 0.008 && rate < 0.012, "{flags:?}: {rate}");

        bloomkit().arg("rotate").arg(&filter).assert().success();
        assert!(query_stdin(&filter, &second).iter().all(|&m| m));
        let remembered = query_stdin(&filter, &first).iter().filter(|&&m| m).count();
        // Only false positives remain: about 0.5% of 5,000.
        assert!(remembered < 100, "{flags:?}: {remembered} of 5000");
    }
}
