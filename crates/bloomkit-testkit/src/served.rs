//! `bloomkit serve` as a process: started on port 0, its address read from its first line,
//! its standard error collected, and killed when dropped (also when a test fails).
//!
//! The binary is the caller's to name (each crate finds this build's `bloomkit` its own
//! way); this module knows only the process's start-up line, `listening on ADDR`.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::thread::JoinHandle;

use crate::resp::{request, Conn};

/// A running `bloomkit serve`.
pub struct Served {
    /// The process.
    pub child: Child,
    /// Where it listens (`127.0.0.1:PORT`).
    pub addr: String,
    /// Its standard error, collected until it exits.
    stderr: Option<JoinHandle<String>>,
}

impl Served {
    /// Starts `BINARY serve --port 0 --dir DIR EXTRA...` and waits until it listens (which
    /// it says only after recovering the directory).
    pub fn start(binary: &Path, dir: &Path, extra: &[&str]) -> Served {
        Served::spawn(Served::command(binary, dir, extra))
    }

    /// The command [`start`](Self::start) runs, for a caller that adds to it (an
    /// environment variable, a wrapper) before [`spawn`](Self::spawn).
    pub fn command(binary: &Path, dir: &Path, extra: &[&str]) -> Command {
        let mut command = Command::new(binary);
        command
            .args(["serve", "--port", "0", "--dir"])
            .arg(dir)
            .args(extra);
        command
    }

    /// Runs `command` (which starts `bloomkit serve --port 0`, maybe through a wrapper) and
    /// waits for its `listening on ADDR` line.
    ///
    /// # Panics
    ///
    /// If the first line is anything else, with the process's standard error.
    pub fn spawn(mut command: Command) -> Served {
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start bloomkit serve");
        let mut stderr = child.stderr.take().expect("stderr");
        let stderr = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = stderr.read_to_string(&mut text);
            text
        });
        let mut line = String::new();
        let _ = BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut line);
        let Some(addr) = line.trim_end().strip_prefix("listening on ") else {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "unexpected first line {line:?}; stderr: {}",
                stderr.join().unwrap()
            );
        };
        Served {
            addr: addr.to_string(),
            child,
            stderr: Some(stderr),
        }
    }

    /// Its port.
    pub fn port(&self) -> u16 {
        let (_, port) = self.addr.rsplit_once(':').expect("HOST:PORT");
        port.parse().expect("a port number")
    }

    /// A new client of it.
    pub fn client(&self) -> Conn {
        Conn::open(self.addr.as_str())
    }

    /// Kills the process with SIGKILL (on unix) and returns its standard error.
    pub fn kill(mut self) -> String {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.stderr.take().unwrap().join().unwrap()
    }

    /// Waits for the process to exit by itself (after a signal, say), for its status and
    /// its standard error.
    pub fn wait_exit(mut self) -> (std::process::ExitStatus, String) {
        let status = self.child.wait().expect("wait");
        (status, self.stderr.take().unwrap().join().unwrap())
    }

    /// Sends `SHUTDOWN [args]`, expects a clean exit, and returns its standard error.
    ///
    /// # Panics
    ///
    /// If the process exits with a failure, with its standard error.
    pub fn shutdown(mut self, args: &[&str]) -> String {
        use std::io::Write;
        let mut client = self.client();
        let mut words = vec!["SHUTDOWN"];
        words.extend(args);
        client.writer.write_all(&request(&words)).unwrap();
        let mut rest = Vec::new();
        let _ = client.reader.read_to_end(&mut rest);
        let status = self.child.wait().expect("wait");
        let stderr = self.stderr.take().unwrap().join().unwrap();
        assert!(status.success(), "{status}; stderr: {stderr}");
        stderr
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        // A failed assertion must not leave a server running.
        if self.stderr.is_some() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
