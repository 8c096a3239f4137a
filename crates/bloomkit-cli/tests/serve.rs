//! `bloomkit serve` as a real process: it prints where it listens, answers clients, and
//! exits cleanly on `SHUTDOWN` and on SIGTERM.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use assert_cmd::cargo::cargo_bin;
use assert_cmd::cargo::cargo_bin_cmd;
use predicates::prelude::*;

/// Starts `bloomkit serve --port 0` in a scratch directory and returns the process and
/// the address from its `listening on ADDR` line.
fn serve(dir: &std::path::Path, extra: &[&str]) -> (Child, String) {
    let mut child = Command::new(cargo_bin!("bloomkit"))
        .args(["serve", "--port", "0", "--dir"])
        .arg(dir)
        .args(extra)
        .stdout(Stdio::piped())
        .spawn()
        .expect("start bloomkit serve");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("read the first line");
    let addr = line
        .trim_end()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_string();
    (child, addr)
}

/// Sends `request` and reads exactly `expected.len()` bytes.
fn roundtrip(stream: &mut TcpStream, request: &[u8], expected: &[u8]) {
    stream.write_all(request).unwrap();
    let mut got = vec![0; expected.len()];
    stream.read_exact(&mut got).unwrap();
    assert_eq!(
        String::from_utf8_lossy(&got),
        String::from_utf8_lossy(expected)
    );
}

fn connect(addr: &str) -> TcpStream {
    let stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream
}

#[test]
fn serve_prints_its_port_answers_and_stops_on_shutdown() {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, addr) = serve(dir.path(), &["--requirepass", "pw"]);
    assert!(addr.starts_with("127.0.0.1:"), "{addr}");
    let mut stream = connect(&addr);
    roundtrip(
        &mut stream,
        b"PING\r\n",
        b"-NOAUTH Authentication required.\r\n",
    );
    roundtrip(&mut stream, b"AUTH pw\r\n", b"+OK\r\n");
    roundtrip(&mut stream, b"PING\r\n", b"+PONG\r\n");
    stream.write_all(b"SHUTDOWN\r\n").unwrap();
    let mut rest = Vec::new();
    stream.read_to_end(&mut rest).unwrap();
    assert!(rest.is_empty(), "SHUTDOWN answers nothing");
    assert!(child.wait().unwrap().success());
}

#[cfg(unix)]
#[test]
fn serve_stops_gracefully_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, addr) = serve(dir.path(), &[]);
    let mut stream = connect(&addr);
    roundtrip(&mut stream, b"PING\r\n", b"+PONG\r\n");
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    assert!(child.wait().unwrap().success());
    let mut rest = Vec::new();
    stream.read_to_end(&mut rest).unwrap();
    assert!(rest.is_empty(), "an idle client is closed");
}

#[test]
fn serve_refuses_bad_flags_in_one_line() {
    cargo_bin_cmd!("bloomkit")
        .args(["serve", "--appendfsync", "sometimes"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("sometimes"));
    cargo_bin_cmd!("bloomkit")
        .args(["serve", "--maxmemory", "lots"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("'lots' is not a memory size"));
    let dir = tempfile::tempdir().unwrap();
    let (mut child, addr) = serve(dir.path(), &[]);
    let port = addr.rsplit(':').next().unwrap();
    cargo_bin_cmd!("bloomkit")
        .args(["serve", "--port", port])
        .assert()
        .failure()
        .stderr(predicate::str::starts_with(format!(
            "bloomkit: cannot listen on 127.0.0.1:{port}: "
        )));
    let mut stream = connect(&addr);
    stream.write_all(b"SHUTDOWN NOSAVE\r\n").unwrap();
    assert!(child.wait().unwrap().success());
}
