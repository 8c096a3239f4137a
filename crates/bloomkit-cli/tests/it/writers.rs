//! Two writers of one filter file: `insert`, `remove`, `rotate`, and `build` or `merge` over
//! an existing output, take the file's lock for the whole read-modify-rename, so a second
//! writer waits for the first and then changes what it wrote, or with `--no-wait` fails at
//! once naming the file. Real processes, real files.

use crate::common;

use std::fs::{self, File};
use std::io::Write;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::Duration;

use common::{assert_one_line_error, bloomkit, keys, query_stdin, Scratch};

/// Keys each of the two concurrent inserts adds.
const BATCH: usize = 200_000;

/// `bloomkit insert <file> -`, started with its standard input open and nothing written to
/// it yet.
fn start_insert(filter: &Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_bloomkit"))
        .arg("insert")
        .arg(filter)
        .arg("-")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start bloomkit insert")
}

/// The filter's own count of keys, from `info --json`.
fn key_count(filter: &Path) -> u64 {
    let out = bloomkit()
        .arg("info")
        .arg("--json")
        .arg(filter)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let info: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    info["keys"].as_u64().unwrap_or_else(|| panic!("{info}"))
}

/// The regression this file exists for: two `insert`s of 200,000 keys each into one counting
/// file at once. Both used to print "inserted 200,000 keys" and exit 0 while the second
/// rename threw away the first one's batch.
#[test]
fn two_inserts_at_once_keep_both_batches() {
    let s = Scratch::new();
    let seed = s.keys_file("seed.txt", &keys("seed", 10));
    let filter = s.build(
        "live.bkf",
        &seed,
        &["--kind", "counting", "--items", "400k"],
    );
    let batches = [keys("a", BATCH), keys("b", BATCH)];
    // Both start, and both would read the file at once, before either has any keys.
    let mut children = [start_insert(&filter), start_insert(&filter)];
    // Each feeder writes its batch as fast as its process reads; the one waiting for the
    // lock reads nothing until the other is done, so each feeds on its own thread.
    let feeders: Vec<_> = children
        .iter_mut()
        .zip(&batches)
        .map(|(child, batch)| {
            let mut stdin = child.stdin.take().unwrap();
            let mut text = batch.join("\n");
            text.push('\n');
            thread::spawn(move || stdin.write_all(text.as_bytes()))
        })
        .collect();
    for feeder in feeders {
        feeder.join().unwrap().expect("feed the keys");
    }
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{out:?}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("inserted 200,000 keys"), "{stdout}");
    }
    for batch in &batches {
        let answers = query_stdin(&filter, batch);
        let lost = answers.iter().filter(|&&maybe| !maybe).count();
        assert_eq!(lost, 0, "{lost} keys of a batch answer \"no\"");
    }
    // A counting filter counts every insert: both batches and the seed.
    assert_eq!(key_count(&filter), 2 * BATCH as u64 + 10);
    // Nothing is left behind: no lock files, no temporary files.
    assert_eq!(s.listing(), ["live.bkf", "seed.txt"]);
}

/// Holds the lock on `path` as another bloomkit would, until dropped.
fn hold_lock(path: &Path) -> File {
    let file = File::open(path).unwrap();
    file.lock().unwrap();
    file
}

#[test]
fn no_wait_fails_at_once_naming_the_file_and_changes_nothing() {
    let s = Scratch::new();
    let input = s.keys_file("keys.txt", &keys("k", 100));
    let live = s.build("live.bkf", &input, &["--kind", "counting", "--items", "1k"]);
    let aging = s.build("aging.bkf", &input, &["--kind", "aging", "--items", "1k"]);
    let other = s.build(
        "other.bkf",
        &input,
        &["--kind", "counting", "--items", "1k"],
    );
    let before = fs::read(&live).unwrap();
    let aging_before = fs::read(&aging).unwrap();
    let _held = [hold_lock(&live), hold_lock(&aging)];
    let live_arg = live.to_str().unwrap();
    let runs: [&[&str]; 5] = [
        &["insert", "--no-wait", live_arg, "new"],
        &["remove", "--no-wait", live_arg, "k-1"],
        &["rotate", "--no-wait", aging.to_str().unwrap()],
        &[
            "build",
            "--no-wait",
            "-o",
            live_arg,
            input.to_str().unwrap(),
        ],
        &[
            "merge",
            "--no-wait",
            other.to_str().unwrap(),
            other.to_str().unwrap(),
            "-o",
            live_arg,
        ],
    ];
    for args in runs {
        let named = if args[0] == "rotate" {
            "aging.bkf"
        } else {
            "live.bkf"
        };
        assert_one_line_error(
            bloomkit().args(args).assert(),
            &[named, "being changed by another process", "--no-wait"],
        );
    }
    assert_eq!(fs::read(&live).unwrap(), before);
    assert_eq!(fs::read(&aging).unwrap(), aging_before);
}

/// Whether `child` is still running after a moment: it is waiting for the lock. (A correct
/// command waits as long as the lock is held, so this cannot fail by the machine being
/// slow; only a command that does not wait can make it fail.)
fn still_waiting(child: &mut Child) -> bool {
    thread::sleep(Duration::from_millis(300));
    child.try_wait().unwrap().is_none()
}

#[test]
fn a_second_writer_waits_for_the_lock_then_changes_the_new_file() {
    let s = Scratch::new();
    let input = s.keys_file("keys.txt", &keys("k", 100));
    let live = s.build("live.bkf", &input, &["--kind", "counting", "--items", "1k"]);
    let held = hold_lock(&live);
    let mut insert = Command::new(env!("CARGO_BIN_EXE_bloomkit"))
        .arg("insert")
        .arg(&live)
        .arg("waited")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    assert!(
        still_waiting(&mut insert),
        "insert did not wait for the lock"
    );
    // Meanwhile the holder replaces the file, as a writer does: the waiting insert must add
    // its key to the new file, not to the one it first opened.
    let replacement = s.keys_file("other.txt", &keys("replaced", 50));
    let new = s.build(
        "new.bkf",
        &replacement,
        &["--kind", "counting", "--items", "1k"],
    );
    fs::rename(&new, &live).unwrap();
    drop(held);
    let out = insert.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(query_stdin(&live, &["waited".to_string()])[0]);
    assert!(query_stdin(&live, &keys("replaced", 50)).iter().all(|&m| m));
    assert_eq!(key_count(&live), 51);

    // A build over an existing output waits too, then replaces it.
    let held = hold_lock(&live);
    let mut build = Command::new(env!("CARGO_BIN_EXE_bloomkit"))
        .args(["build", "--kind", "counting", "-o"])
        .arg(&live)
        .arg(&input)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    assert!(still_waiting(&mut build), "build did not wait for the lock");
    drop(held);
    assert!(build.wait().unwrap().success());
    assert_eq!(key_count(&live), 100);
}
