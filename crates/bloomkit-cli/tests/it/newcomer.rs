//! What a new user met, one test each: counts spelled as people spell them, an aging filter's
//! size meaning the same in `size` and `build` as in the library, the help naming every kind
//! that merges, a full cuckoo filter that the tool can let grow, and a command that says
//! when it waits for keys typed at a terminal.

use crate::common;

use std::path::Path;
use std::process::Command;

use bloomkit::{AgingBloomFilter, AnyFilter, FilterKind};
use common::{assert_one_line_error, bloomkit, keys, query_stdin, Scratch};

fn stdout_of(args: &[&str]) -> String {
    let out = bloomkit().args(args).output().unwrap();
    assert!(out.status.success(), "{args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

fn load(path: &Path) -> AnyFilter {
    AnyFilter::from_bytes(&std::fs::read(path).unwrap()).unwrap()
}

#[test]
fn items_take_separators_exponents_and_suffixes() {
    let plain = stdout_of(&["size", "--items", "1000000"]);
    for spelling in [
        "1,000,000",
        "1_000_000",
        "1e6",
        "1M",
        "1m",
        "1000k",
        "0.001G",
    ] {
        assert_eq!(
            stdout_of(&["size", "--items", spelling]),
            plain,
            "{spelling}"
        );
    }
    assert!(stdout_of(&["size", "--items", "50M"]).starts_with("a filter for 50,000,000 keys"));
    // The same parser on every flag that counts keys: build streams into 2k.
    let s = Scratch::new();
    let input = s.keys_file("k.txt", &keys("k", 1500));
    let filter = s.build("f.bkf", &input, &["--items", "2k"]);
    let AnyFilter::Blocked(f) = load(&filter) else {
        panic!("not blocked")
    };
    assert_eq!(
        f.num_bits(),
        bloomkit::sizing::blocked_plan(2000, 0.01).unwrap().num_bits
    );
    // What is not a count says what is.
    for bad in ["1.5", "12x", "1,00,", "5 keys"] {
        assert_one_line_error(
            bloomkit().args(["size", "--items", bad]).assert(),
            &["--items", "such as 1000000, 1,000,000, 1e6 or 1M"],
        );
    }
    assert_one_line_error(
        bloomkit().args(["size", "--items", "1e20"]).assert(),
        &["larger than 18,446,744,073,709,551,615"],
    );
}

/// `--items` of an aging filter is each generation's, as `AgingBloomFilter::new` takes it:
/// `size` shows the filter `build` makes, and a build of twice as many keys fills both
/// generations.
#[test]
fn aging_items_are_each_generations_in_size_and_build() {
    let library = AgingBloomFilter::new(1000, 0.01).unwrap();
    let size = stdout_of(&["size", "--items", "1000"]);
    let row: Vec<&str> = size
        .lines()
        .find(|l| l.starts_with("aging "))
        .unwrap()
        .split_whitespace()
        .collect();
    let bits: u64 = row[1].replace(',', "").parse().unwrap();
    assert_eq!(bits, library.num_bits(), "{size}");
    assert!(
        size.contains("aging:    2 generations of these keys each"),
        "{size}"
    );

    let s = Scratch::new();
    let input = s.keys_file("k.txt", &keys("k", 2000));
    let filter = s.build("a.bkf", &input, &["--kind", "aging", "--items", "1000"]);
    let AnyFilter::Aging(built) = load(&filter) else {
        panic!("not aging")
    };
    assert_eq!(built.num_bits(), library.num_bits());
    let held: Vec<u64> = (0..2)
        .map(|age| built.generation(age).unwrap().len())
        .collect();
    // Each generation took its thousand lines (a Bloom filter's count skips the rare key
    // that was already a false positive).
    assert!(held.iter().all(|&n| (990..=1000).contains(&n)), "{held:?}");
    // Without --items, the lines split into the generations and size them the same way.
    let unsized_filter = s.build("b.bkf", &input, &["--kind", "aging"]);
    let AnyFilter::Aging(unsized_built) = load(&unsized_filter) else {
        panic!("not aging")
    };
    assert_eq!(unsized_built.num_bits(), library.num_bits());
}

#[test]
fn merge_help_names_every_kind_that_merges() {
    let help = stdout_of(&["merge", "--help"]);
    let merging: Vec<FilterKind> = FilterKind::ALL
        .into_iter()
        .filter(|&kind| {
            let hashes = [bloomkit::hash("a")];
            let mut a = AnyFilter::build_from_hashes(kind, &hashes, 0.01).unwrap();
            a.union(&a.clone()).is_ok()
        })
        .collect();
    assert_eq!(merging.len(), 4, "{merging:?}");
    let sentence = help
        .split(". ")
        .find(|s| s.contains("filters merge"))
        .unwrap_or_else(|| panic!("{help}"));
    for kind in merging {
        let name = kind.name();
        assert!(
            sentence.to_lowercase().contains(name),
            "{name} missing from {sentence:?}"
        );
    }
}

/// "Let it grow", as the library's message advises for a full cuckoo filter, is a flag of
/// `build`, and `insert` into a full one says which.
#[test]
fn a_full_cuckoo_filter_can_be_built_to_grow() {
    let s = Scratch::new();
    let few = s.keys_file("few.txt", &keys("k", 100));
    let many = keys("more", 2000);
    let fixed = s.build("fixed.bkf", &few, &["--kind", "cuckoo", "--items", "100"]);
    let mut input = many.join("\n");
    input.push('\n');
    let line = assert_one_line_error(
        bloomkit()
            .arg("insert")
            .arg(&fixed)
            .write_stdin(input.clone())
            .assert(),
        &["full", "bloomkit build --kind cuckoo --expansion 2"],
    );
    assert!(line.contains("the file is unchanged"), "{line}");

    let growing = s.build(
        "growing.bkf",
        &few,
        &[
            "--kind",
            "cuckoo",
            "--items",
            "100",
            "--expansion",
            "2",
            "--bucket-size",
            "2",
            "--max-kicks",
            "100",
        ],
    );
    bloomkit()
        .arg("insert")
        .arg(&growing)
        .write_stdin(input)
        .assert()
        .success();
    assert!(query_stdin(&growing, &many).iter().all(|&m| m));
    let AnyFilter::Cuckoo(f) = load(&growing) else {
        panic!("not cuckoo")
    };
    assert_eq!((f.expansion(), f.bucket_size(), f.max_kicks()), (2, 2, 100));
    assert!(f.num_filters() > 1, "{}", f.num_filters());

    // A scalable filter's expansion too.
    let scalable = s.build(
        "s.bkf",
        &few,
        &["--kind", "scalable", "--items", "10", "--expansion", "4"],
    );
    let AnyFilter::Scalable(f) = load(&scalable) else {
        panic!("not scalable")
    };
    assert_eq!(f.expansion(), 4);
    assert_eq!(
        f.layers().map(|l| l.capacity).collect::<Vec<_>>(),
        [10, 40, 160]
    );

    // Each setting is refused for a kind it does not apply to, and out of range by the
    // library's words.
    for (flag, value) in [
        ("--expansion", "2"),
        ("--bucket-size", "2"),
        ("--max-kicks", "9"),
    ] {
        assert_one_line_error(
            bloomkit()
                .args(["build", "--kind", "blocked", flag, value, "-o"])
                .arg(s.path("x.bkf"))
                .arg(&few)
                .assert(),
            &[flag, "applies to --kind"],
        );
    }
    assert_one_line_error(
        bloomkit()
            .args(["build", "--kind", "cuckoo", "--bucket-size", "0", "-o"])
            .arg(s.path("x.bkf"))
            .arg(&few)
            .assert(),
        &["bucket_size", "1 to 255"],
    );
    assert!(!s.path("x.bkf").exists());
}

/// Runs `bloomkit <args>` with a terminal for standard input (through `script`, which
/// every Debian has: util-linux's bsdutils is essential), typing `typed` into it; returns
/// all the terminal showed, or `None` where there is no `script` to run.
fn on_a_terminal(dir: &Path, args: &str, typed: &str) -> Option<String> {
    let command = format!("{} {args}", env!("CARGO_BIN_EXE_bloomkit"));
    let out = Command::new("script")
        .args(["-q", "-e", "-c", &command, "/dev/null"])
        .current_dir(dir)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            // Ctrl-D at the start of a line ends the keys, as a person would type it.
            let mut stdin = child.stdin.take().unwrap();
            stdin.write_all(format!("{typed}\x04").as_bytes())?;
            drop(stdin);
            child.wait_with_output()
        });
    match out {
        Ok(out) => {
            assert!(out.status.success(), "{out:?}");
            Some(String::from_utf8_lossy(&out.stdout).into_owned())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            bloomkit_testkit::skip::holds(
                false,
                "`script` (util-linux's bsdutils), to give bloomkit a terminal",
            );
            None
        }
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn keys_awaited_from_a_terminal_are_announced() {
    let s = Scratch::new();
    let notice = "bloomkit: reading keys from the terminal, one per line; Ctrl-D";
    let Some(built) = on_a_terminal(s.dir.path(), "build -o t.bkf", "alice\nbob\n") else {
        return;
    };
    assert!(built.contains(notice), "{built}");
    assert!(
        built.contains("wrote t.bkf: blocked filter, 2 keys"),
        "{built}"
    );
    let queried = on_a_terminal(s.dir.path(), "query t.bkf", "alice\ncarol\n").unwrap();
    assert!(queried.contains(notice), "{queried}");
    assert!(queried.contains("maybe\talice"), "{queried}");
    // Keys from a pipe or the arguments need no word: nothing is said.
    let piped = bloomkit()
        .arg("query")
        .arg(s.path("t.bkf"))
        .write_stdin("alice\n")
        .output()
        .unwrap();
    assert!(piped.status.success());
    assert_eq!(String::from_utf8_lossy(&piped.stderr), "");
    let argued = on_a_terminal(s.dir.path(), "query t.bkf alice", "").unwrap();
    assert!(!argued.contains(notice), "{argued}");
}
