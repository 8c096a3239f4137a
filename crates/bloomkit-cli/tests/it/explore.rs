//! `bloomkit explore` over real HTTP, without a browser: it prints its URL, serves the page
//! and its module, refuses what it does not serve, and a bad port is one clear line.

use crate::common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::Duration;

const TEST: &str = "explore test";

/// Sends `request` and returns the whole reply (the server closes after it).
fn send(port: u16, request: &str) -> Vec<u8> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut reply = Vec::new();
    s.read_to_end(&mut reply).unwrap();
    reply
}

fn get(port: u16, path: &str) -> Vec<u8> {
    send(
        port,
        &format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n"),
    )
}

fn body(reply: &[u8]) -> &[u8] {
    let at = reply
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a head");
    &reply[at + 4..]
}

#[test]
fn serves_the_page_and_its_module() {
    let Some(server) = common::start_explorer(TEST) else {
        return;
    };
    assert!(
        server.banner.contains("KiB of WebAssembly"),
        "{}",
        server.banner
    );
    let port = server.port;
    let page = get(port, "/");
    assert!(page.starts_with(b"HTTP/1.1 200 OK\r\n"));
    assert!(String::from_utf8_lossy(body(&page)).contains("<title>bloomkit explorer</title>"));
    let wasm = get(port, "/bloomkit.wasm");
    let head = String::from_utf8_lossy(&wasm[..wasm.len().min(400)]).into_owned();
    assert!(
        head.contains("Content-Type: application/wasm\r\n"),
        "{head}"
    );
    // The module the build embedded: WebAssembly's magic number and version 1.
    assert!(body(&wasm).starts_with(b"\0asm\x01\0\0\0"));
    for path in ["/explorer.js", "/bloomkit.js", "/explorer.css"] {
        assert!(
            get(port, path).starts_with(b"HTTP/1.1 200 OK\r\n"),
            "{path}"
        );
    }
    assert!(get(port, "/secret").starts_with(b"HTTP/1.1 404"));
    let other_host = send(port, "GET / HTTP/1.1\r\nHost: attacker.example\r\n\r\n");
    assert!(other_host.starts_with(b"HTTP/1.1 421"));
    // A client that connects and says nothing does not stop the others.
    let _idle = TcpStream::connect(("127.0.0.1", port)).unwrap();
    assert!(get(port, "/").starts_with(b"HTTP/1.1 200"));
}

#[test]
fn a_port_in_use_is_one_clear_line() {
    let Some(server) = common::start_explorer(TEST) else {
        return;
    };
    let port = server.port;
    let out = Command::new(env!("CARGO_BIN_EXE_bloomkit"))
        .args(["explore", "--port", &port.to_string()])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with(&format!("bloomkit: cannot listen on 127.0.0.1:{port}: ")),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
}

/// The README's sizes of the page, "N KiB of HTML, CSS and JavaScript and a M KiB
/// WebAssembly module", in KiB.
fn readme_page_sizes() -> (f64, f64) {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md"))
        .expect("read README.md");
    let flat = readme.split_whitespace().collect::<Vec<_>>().join(" ");
    let after = flat
        .split_once("The page is built into the binary: ")
        .expect("the README states the page's size")
        .1;
    let number_before = |text: &str, unit: &str| -> f64 {
        let at = text
            .find(unit)
            .unwrap_or_else(|| panic!("no {unit:?} in {text:.120}"));
        let words: Vec<&str> = text[..at].split_whitespace().collect();
        words.last().unwrap().parse().unwrap()
    };
    let text = number_before(after, " KiB of HTML, CSS and JavaScript");
    let (_, rest) = after
        .split_once(" KiB of HTML, CSS and JavaScript")
        .unwrap();
    let module = number_before(rest, " KiB WebAssembly module");
    (text, module)
}

/// The README says how large the page built into the binary is: what this binary serves,
/// within 5% (the README rounds to whole KiB, and a change that moves the module by more
/// than that must say so there).
#[test]
fn the_readme_states_the_page_size_this_binary_serves() {
    let Some(server) = common::start_explorer(TEST) else {
        return;
    };
    let kib = |paths: &[&str]| -> f64 {
        let bytes: usize = paths
            .iter()
            .map(|path| body(&get(server.port, path)).len())
            .sum();
        bytes as f64 / 1024.0
    };
    let text = kib(&["/", "/explorer.css", "/explorer.js", "/bloomkit.js"]);
    let module = kib(&["/bloomkit.wasm"]);
    let (readme_text, readme_module) = readme_page_sizes();
    for (what, served, stated) in [
        ("HTML, CSS and JavaScript", text, readme_text),
        ("WebAssembly module", module, readme_module),
    ] {
        assert!(
            (served - stated).abs() <= 0.05 * served,
            "README.md says {stated} KiB of {what}; this binary serves {served:.1} KiB"
        );
    }
}
