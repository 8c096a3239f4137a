//! What the CLI's integration tests share: the binary, a scratch directory, key lists, and
//! the checks for query's answers and for one-line errors; for the explorer's tests, the
//! helpers for outside programs (`bloomkit-wasm-build`'s `programs`) and starting
//! `bloomkit explore`.

pub use bloomkit_testkit::programs as support;

pub mod engines;
mod explorer;
pub mod served;
pub use explorer::start_explorer;

use std::fs;
use std::path::{Path, PathBuf};

use assert_cmd::cargo::cargo_bin_cmd;
use assert_cmd::Command;
use tempfile::TempDir;

/// The binary under test.
pub fn bloomkit() -> Command {
    cargo_bin_cmd!("bloomkit")
}

/// A scratch directory with helpers for key files and filters.
pub struct Scratch {
    pub dir: TempDir,
}

impl Scratch {
    pub fn new() -> Self {
        Scratch {
            dir: tempfile::tempdir().expect("temporary directory"),
        }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Writes `keys` one per line to `name`.
    pub fn keys_file(&self, name: &str, keys: &[String]) -> PathBuf {
        let path = self.path(name);
        let mut text = keys.join("\n");
        text.push('\n');
        fs::write(&path, text).expect("write keys");
        path
    }

    /// Builds `name` from `input` with extra flags; panics unless the build succeeds.
    pub fn build(&self, name: &str, input: &Path, flags: &[&str]) -> PathBuf {
        let out = self.path(name);
        bloomkit()
            .arg("build")
            .args(flags)
            .arg("-o")
            .arg(&out)
            .arg(input)
            .assert()
            .success();
        out
    }

    /// Runs `merge` of `inputs` into `name`, with extra flags.
    pub fn merge(
        &self,
        inputs: &[&Path],
        name: &str,
        flags: &[&str],
    ) -> assert_cmd::assert::Assert {
        bloomkit()
            .arg("merge")
            .args(inputs)
            .args(flags)
            .arg("-o")
            .arg(self.path(name))
            .assert()
    }

    /// Every file name in the directory, sorted.
    pub fn listing(&self) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(self.dir.path())
            .expect("read dir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }
}

pub fn keys(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}-{i}")).collect()
}

/// Runs `query` on `filter` with `keys` on stdin; returns the answers, checking the line
/// format and order on the way.
pub fn query_stdin(filter: &Path, keys: &[String]) -> Vec<bool> {
    let mut input = keys.join("\n");
    input.push('\n');
    let output = bloomkit()
        .arg("query")
        .arg(filter)
        .write_stdin(input)
        .output()
        .expect("run query");
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8(output.stdout).expect("utf-8 output");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), keys.len());
    lines
        .iter()
        .zip(keys)
        .map(|(line, key)| match line.split_once('\t') {
            Some(("maybe", k)) if k == key => true,
            Some(("no", k)) if k == key => false,
            _ => panic!("bad answer line {line:?} for key {key:?}"),
        })
        .collect()
}

/// Asserts the process failed with status 2 (every error's) and exactly one stderr line,
/// `bloomkit: ...`, containing every one of `needles`; returns that line.
pub fn assert_one_line_error(assert: assert_cmd::assert::Assert, needles: &[&str]) -> String {
    let output = assert.code(2).get_output().clone();
    let stderr = String::from_utf8(output.stderr).expect("utf-8 stderr");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("bloomkit: "), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    for needle in needles {
        assert!(stderr.contains(needle), "{needle:?} not in {stderr}");
    }
    stderr
}
