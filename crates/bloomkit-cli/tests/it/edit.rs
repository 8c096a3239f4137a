//! `insert`, `remove` and `rotate`: filter files changed in place, atomically, with keys
//! from arguments or standard input.

use crate::common;

use std::fs;
use std::path::Path;

use bloomkit::AnyFilter;
use common::{assert_one_line_error, bloomkit, keys, query_stdin, Scratch};
use predicates::prelude::*;

fn load(path: &Path) -> AnyFilter {
    AnyFilter::from_bytes(&fs::read(path).expect("read filter")).expect("a filter")
}

#[test]
fn insert_adds_keys_from_arguments_and_stdin_to_every_kind_that_takes_them() {
    let s = Scratch::new();
    let input = s.keys_file("keys.txt", &keys("k", 100));
    for kind in [
        "classic", "blocked", "sector", "counting", "scalable", "cuckoo", "aging",
    ] {
        let filter = s.build(
            &format!("{kind}.bkf"),
            &input,
            &["--kind", kind, "--items", "500"],
        );
        let before = load(&filter).len();
        bloomkit()
            .arg("insert")
            .arg(&filter)
            .args(["arg-1", "arg-2"])
            .assert()
            .success()
            .stdout(predicate::str::contains(format!(
                "inserted 2 keys; {kind} filter of"
            )));
        // `-` among the arguments reads standard input there; none at all reads it too.
        bloomkit()
            .arg("insert")
            .arg(&filter)
            .args(["arg-3", "-"])
            .write_stdin("line-1\nline-2\n")
            .assert()
            .success()
            .stdout(predicate::str::contains("inserted 3 keys"));
        bloomkit()
            .arg("insert")
            .arg(&filter)
            .write_stdin("line-3\n")
            .assert()
            .success()
            .stdout(predicate::str::contains("inserted 1 key;"));
        let added: Vec<String> = ["arg-1", "arg-2", "arg-3", "line-1", "line-2", "line-3"]
            .map(String::from)
            .to_vec();
        assert!(query_stdin(&filter, &added).iter().all(|&m| m), "{kind}");
        assert!(
            query_stdin(&filter, &keys("k", 100)).iter().all(|&m| m),
            "{kind}"
        );
        // Six new keys; a Bloom kind counts only those that changed it.
        let after = load(&filter).len();
        assert!(
            after <= before + 6 && after >= before + 5,
            "{kind}: {before} -> {after}"
        );
    }
    // Nothing but the filters is left behind: no temporary files.
    let mut expected: Vec<String> = ["aging", "blocked", "classic", "counting", "cuckoo"]
        .iter()
        .map(|k| format!("{k}.bkf"))
        .collect();
    expected.extend(["keys.txt", "scalable.bkf", "sector.bkf"].map(String::from));
    assert_eq!(s.listing(), expected);
}

#[test]
fn insert_refuses_a_static_filter_and_a_full_one_and_changes_nothing() {
    let s = Scratch::new();
    let input = s.keys_file("keys.txt", &keys("k", 100));
    let ribbon = s.build("r.bkf", &input, &["--kind", "ribbon"]);
    let before = fs::read(&ribbon).unwrap();
    let assert = bloomkit().arg("insert").arg(&ribbon).arg("x").assert();
    assert_one_line_error(assert, &["r.bkf", "the file is unchanged", "static"]);
    assert_eq!(fs::read(&ribbon).unwrap(), before);

    let cuckoo = s.build("c.bkf", &input, &["--kind", "cuckoo", "--items", "100"]);
    let before = fs::read(&cuckoo).unwrap();
    let more = keys("more", 1000).join("\n");
    let assert = bloomkit()
        .arg("insert")
        .arg(&cuckoo)
        .write_stdin(more)
        .assert();
    assert_one_line_error(assert, &["c.bkf", "the file is unchanged", "full"]);
    assert_eq!(fs::read(&cuckoo).unwrap(), before);
    assert_eq!(s.listing(), ["c.bkf", "keys.txt", "r.bkf"]);
}

#[test]
fn remove_takes_one_copy_and_counts_absent_keys() {
    let s = Scratch::new();
    let input = s.keys_file("keys.txt", &keys("k", 1000));
    for kind in ["counting", "cuckoo"] {
        let filter = s.build("f.bkf", &input, &["--kind", kind]);
        let removed: Vec<String> = keys("k", 1000).into_iter().step_by(2).collect();
        let mut stdin = removed.join("\n");
        stdin.push('\n');
        bloomkit()
            .arg("remove")
            .arg(&filter)
            .write_stdin(stdin)
            .assert()
            .success()
            .stdout(predicate::str::contains("removed 500 keys;"))
            .stdout(predicate::str::contains(format!(
                "{kind} filter of 500 keys"
            )));
        let kept: Vec<String> = keys("k", 1000).into_iter().skip(1).step_by(2).collect();
        assert!(query_stdin(&filter, &kept).iter().all(|&m| m), "{kind}");
        let left = query_stdin(&filter, &removed)
            .iter()
            .filter(|&&m| m)
            .count();
        assert!(
            left < 30,
            "{kind}: {left} of 500 removed keys still answer maybe"
        );
        // A key definitely not there changes nothing, and the summary says so.
        bloomkit()
            .arg("remove")
            .arg(&filter)
            .args(["k-1", "never-inserted-key-xyz"])
            .assert()
            .success()
            .stdout(predicate::str::contains(
                "removed 1 key (1 definitely not in the filter, unchanged)",
            ));
    }
}

#[test]
fn remove_refuses_kinds_that_cannot_forget() {
    let s = Scratch::new();
    let input = s.keys_file("keys.txt", &keys("k", 10));
    for kind in ["blocked", "classic", "scalable", "ribbon", "aging"] {
        let filter = s.build("f.bkf", &input, &["--kind", kind]);
        let before = fs::read(&filter).unwrap();
        let assert = bloomkit().arg("remove").arg(&filter).arg("k-1").assert();
        assert_one_line_error(
            assert,
            &["cannot remove keys", "only counting and cuckoo filters can"],
        );
        assert_eq!(fs::read(&filter).unwrap(), before, "{kind}");
    }
}

#[test]
fn rotate_forgets_the_oldest_generation() {
    let s = Scratch::new();
    let filter = s.build(
        "recent.bkf",
        &s.keys_file("keys.txt", &keys("day1", 2000)),
        &["--kind", "aging", "--items", "4000"],
    );
    // Day 1's keys fill the older generation's share, then the newest; rotating twice
    // forgets them.
    bloomkit()
        .arg("rotate")
        .arg(&filter)
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "rotated, forgetting the oldest generation (0 keys)",
        ));
    bloomkit()
        .arg("insert")
        .arg(&filter)
        .write_stdin(keys("day2", 2000).join("\n"))
        .assert()
        .success();
    assert!(query_stdin(&filter, &keys("day1", 2000)).iter().all(|&m| m));
    let output = bloomkit().arg("rotate").arg(&filter).output().unwrap();
    assert!(output.status.success());
    let stdout = String::from_utf8(output.stdout).unwrap();
    // The generation counts inserts that changed it: all but the odd false positive.
    let forgotten: u64 = stdout
        .split("oldest generation (")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .map(|n| n.replace(',', ""))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!((1950..=2000).contains(&forgotten), "{stdout}");
    assert!(query_stdin(&filter, &keys("day2", 2000)).iter().all(|&m| m));
    let remembered = query_stdin(&filter, &keys("day1", 2000))
        .iter()
        .filter(|&&m| m)
        .count();
    assert!(
        remembered < 50,
        "{remembered} of 2000 forgotten keys still maybe"
    );

    let blocked = s.build("b.bkf", &s.path("keys.txt"), &[]);
    let assert = bloomkit().arg("rotate").arg(&blocked).assert();
    assert_one_line_error(assert, &["cannot rotate", "a blocked filter", "only aging"]);
}

#[test]
fn changes_in_place_need_a_file_keep_its_mode_and_follow_links() {
    let s = Scratch::new();
    let filter = s.build(
        "f.bkf",
        &s.keys_file("keys.txt", &keys("k", 10)),
        &["--kind", "counting"],
    );
    for command in ["insert", "remove", "rotate"] {
        let assert = bloomkit().args([command, "-"]).write_stdin("").assert();
        assert_one_line_error(assert, &[command, "in place", "not -"]);
    }
    let assert = bloomkit()
        .arg("insert")
        .arg(s.path("missing.bkf"))
        .arg("k")
        .assert();
    assert_one_line_error(assert, &["missing.bkf"]);
    assert!(!s.path("missing.bkf").exists());

    #[cfg(unix)]
    {
        use std::os::unix::fs::{symlink, PermissionsExt};
        fs::set_permissions(&filter, fs::Permissions::from_mode(0o640)).unwrap();
        let link = s.path("link.bkf");
        symlink(&filter, &link).unwrap();
        bloomkit()
            .arg("insert")
            .arg(&link)
            .arg("via-link")
            .assert()
            .success();
        assert!(fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        let mode = fs::metadata(&filter).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o640);
        assert!(load(&filter).contains("via-link"));
    }
}
