//! Starting `bloomkit explore` for the explorer's tests, stopped when dropped.

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use super::support;

/// A running `bloomkit explore --port 0`, stopped when dropped.
pub struct Explorer {
    /// The server process, stopped when this is dropped (held for that, not read).
    #[allow(dead_code)]
    pub guard: support::Guard,
    /// The URL it printed, `http://127.0.0.1:PORT/`.
    pub url: String,
    /// Its port.
    pub port: u16,
    /// The rest of what it printed on starting.
    pub banner: String,
}

/// Starts `bloomkit explore --port 0`, or returns `None` (after saying why) when this build
/// embeds no page because the `wasm32-unknown-unknown` target was missing: a skip, or a
/// failure under `BLOOMKIT_FULL_TESTS=1`.
pub fn start_explorer(test: &str) -> Option<Explorer> {
    let mut guard = support::Guard::spawn(
        Command::new(env!("CARGO_BIN_EXE_bloomkit"))
            .args(["explore", "--port", "0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    )
    .expect("start bloomkit explore");
    let stdout = guard.child().stdout.take().expect("piped stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut lines = BufReader::new(stdout).lines();
        let first = lines.next().and_then(|l| l.ok()).unwrap_or_default();
        let second = lines.next().and_then(|l| l.ok()).unwrap_or_default();
        let _ = tx.send((first, second));
    });
    let (first, banner) = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("bloomkit explore prints its URL within 20 s");
    let Some(url) = first.strip_prefix("bloomkit explorer: ") else {
        let mut err = String::new();
        if let Some(mut e) = guard.child().stderr.take() {
            let _ = e.read_to_string(&mut err);
        }
        if err.contains("built without the explorer page") {
            support::missing(
                test,
                "the explorer page (this build had no wasm32-unknown-unknown target)",
                "rustup target add wasm32-unknown-unknown, then rebuild",
            );
            return None;
        }
        panic!("bloomkit explore printed no URL: {first:?}; its error output: {err}");
    };
    let url = url.to_string();
    let port = url
        .strip_prefix("http://127.0.0.1:")
        .and_then(|rest| rest.strip_suffix('/'))
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("not a loopback URL: {url}"));
    Some(Explorer {
        guard,
        url,
        port,
        banner,
    })
}
