//! What the tests that drive outside programs (Node.js, Chromium, Python) share: skipping or
//! failing when a program is missing, and running one with a deadline that always cleans up.
//!
//! Used by `bloomkit-wasm`'s Node.js test, the CLI's browser test and the server's redis-py
//! test, as a dev-dependency.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// `true` under `scripts/test.sh` (`BLOOMKIT_FULL_TESTS=1`): a missing program fails the test
/// instead of skipping it. The switch is [`crate::skip`]'s, the one every test reads.
pub fn full_tests() -> bool {
    crate::skip::full_tests()
}

/// Reports that `what` is missing, with `how` to get it: under `BLOOMKIT_FULL_TESTS=1` the
/// test fails; otherwise it prints why it skips, and the caller returns.
pub fn missing(test: &str, what: &str, how: &str) {
    crate::skip::holds(false, &format!("{what} ({how}) for {test}"));
}

/// The program `name` as found on `PATH` (or at `name` if it is a path).
pub fn find_program(name: &str) -> Option<PathBuf> {
    let path = Path::new(name);
    if path.components().count() > 1 {
        return path.is_file().then(|| path.to_path_buf());
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(name))
            .find(|p| p.is_file())
    })
}

/// A child process, in a process group of its own, killed with its whole group when dropped:
/// a browser started by the child dies with it even when a test fails half way.
pub struct Guard {
    child: Child,
}

impl Guard {
    /// Starts `command` in a new process group.
    pub fn spawn(command: &mut Command) -> std::io::Result<Guard> {
        #[cfg(unix)]
        {
            use std::os::unix::process::CommandExt;
            command.process_group(0);
        }
        Ok(Guard {
            child: command.spawn()?,
        })
    }

    /// The child's process id.
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// The child.
    pub fn child(&mut self) -> &mut Child {
        &mut self.child
    }

    /// Waits for the child to exit, for at most `timeout`; `None` if it did not.
    pub fn wait_timeout(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => return Some(status),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(25))
                }
                _ => return None,
            }
        }
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if let Ok(Some(_)) = self.child.try_wait() {
            return;
        }
        // The whole group: the child and anything it started (a browser and its helpers).
        #[cfg(unix)]
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.child.id())])
            .stderr(Stdio::null())
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What [`run_bounded`] collected.
pub struct Ran {
    /// How it exited.
    pub status: ExitStatus,
    /// Its standard output.
    pub stdout: String,
    /// Its standard error.
    pub stderr: String,
}

/// Runs `command` with `stdin` as its input and its output collected in files under `dir`
/// (no pipe to fill up), for at most `timeout`; panics, after killing it and its process
/// group, if it takes longer.
pub fn run_bounded(command: &mut Command, stdin: &[u8], dir: &Path, timeout: Duration) -> Ran {
    std::fs::create_dir_all(dir).expect("create the test's directory");
    let (input, out, err) = (dir.join("stdin"), dir.join("stdout"), dir.join("stderr"));
    std::fs::write(&input, stdin).expect("write the child's input");
    command
        .stdin(File::open(&input).expect("open the child's input"))
        .stdout(File::create(&out).expect("create the child's output"))
        .stderr(File::create(&err).expect("create the child's error output"));
    let mut guard =
        Guard::spawn(command).unwrap_or_else(|e| panic!("cannot start {command:?}: {e}"));
    let read =
        |p: &Path| String::from_utf8_lossy(&std::fs::read(p).unwrap_or_default()).into_owned();
    match guard.wait_timeout(timeout) {
        Some(status) => Ran {
            status,
            stdout: read(&out),
            stderr: read(&err),
        },
        None => {
            drop(guard);
            panic!(
                "{command:?} did not finish within {timeout:?}; its error output:\n{}",
                read(&err)
            )
        }
    }
}
