//! `bloomkit explore`: the explorer page, served on 127.0.0.1.
//!
//! The page (`crates/bloomkit-wasm/page/`: HTML, CSS, two scripts) and its WebAssembly module
//! (the `bloomkit-wasm` crate, built by this crate's `build.rs`) are compiled into the binary,
//! so the command needs no files and no network: the page loads nothing from anywhere else.
//!
//! The server is a few dozen lines of `std`: five fixed files, `GET` and `HEAD` only, one
//! short-lived thread per connection, every connection closed after its reply. It answers
//! only requests addressed to the loopback name it listens on, so a web page elsewhere cannot
//! reach it through a DNS name that points at 127.0.0.1.

use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::error::{Context, Error, Result};

/// The files of the page, by path.
const FILES: [(&str, &str, &[u8]); 5] = [
    (
        "/",
        "text/html; charset=utf-8",
        include_bytes!("../../../bloomkit-wasm/page/index.html"),
    ),
    (
        "/explorer.css",
        "text/css; charset=utf-8",
        include_bytes!("../../../bloomkit-wasm/page/explorer.css"),
    ),
    (
        "/explorer.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../../bloomkit-wasm/page/explorer.js"),
    ),
    (
        "/bloomkit.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../../bloomkit-wasm/page/bloomkit.js"),
    ),
    (
        "/bloomkit.wasm",
        "application/wasm",
        include_bytes!(concat!(env!("OUT_DIR"), "/bloomkit.wasm")),
    ),
];

/// What the page may load: itself, and nothing else (`wasm-unsafe-eval` is what compiling a
/// WebAssembly module needs; `data:` is the empty favicon).
const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; \
     img-src 'self' data:; style-src 'self'; base-uri 'none'; form-action 'none'; \
     frame-ancestors 'none'";

/// The longest request head read: a browser's is well under 2 KiB.
const MAX_REQUEST_BYTES: usize = 16 * 1024;

/// Connections served at once; more wait in the listen queue.
const MAX_CONNECTIONS: usize = 32;

/// How long a connection may take to send its request or read the reply.
const IO_TIMEOUT: Duration = Duration::from_secs(10);

/// The embedded WebAssembly module: empty when the build had no `wasm32-unknown-unknown`
/// target (`build.rs`).
fn module() -> &'static [u8] {
    FILES[4].2
}

/// Sizes of the embedded page: (HTML, CSS and scripts together, the module), in bytes.
fn page_sizes() -> (u64, u64) {
    let text = FILES[..4].iter().map(|f| f.2.len() as u64).sum();
    (text, module().len() as u64)
}

/// Serves the page on 127.0.0.1 at `port` (0 picks a free one), prints its URL, and runs
/// until the process is stopped (Ctrl-C).
///
/// # Errors
///
/// When this binary was built without the page's module, or the port cannot be bound.
pub fn run(port: u16) -> Result<()> {
    if module().is_empty() {
        return Err(Error::Message(
            "this bloomkit was built without the explorer page: the Rust target \
             wasm32-unknown-unknown was not installed when it was compiled. Install it with \
             `rustup target add wasm32-unknown-unknown` and build bloomkit again (for example \
             `cargo install --path crates/bloomkit-cli --force`)"
                .to_string(),
        ));
    }
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, port))
        .context(|| format!("cannot listen on 127.0.0.1:{port}"))?;
    let addr = listener
        .local_addr()
        .context(|| "reading the listening address".to_string())?;
    let (text, wasm) = page_sizes();
    let mut stdout = io::stdout();
    writeln!(
        stdout,
        "bloomkit explorer: http://{addr}/\n\
         (open it in a browser; Ctrl-C stops the server. The page: {} of HTML, CSS and \
         scripts, {} of WebAssembly.)",
        crate::human::bytes(text),
        crate::human::bytes(wasm),
    )
    .and_then(|()| stdout.flush())
    .context(crate::output::doing)?;
    serve(listener, addr.port());
    Ok(())
}

/// Accepts connections for ever, each on its own thread.
fn serve(listener: TcpListener, port: u16) {
    let active = Arc::new(AtomicUsize::new(0));
    for stream in listener.incoming() {
        let Ok(stream) = stream else {
            // A connection that failed before it was accepted: the next one may not.
            continue;
        };
        while active.load(Ordering::Acquire) >= MAX_CONNECTIONS {
            std::thread::sleep(Duration::from_millis(5));
        }
        active.fetch_add(1, Ordering::AcqRel);
        let active = Arc::clone(&active);
        let spawned = std::thread::Builder::new()
            .name("bloomkit-explore".to_string())
            .spawn(move || {
                // A visitor's browser closing early is no error of ours.
                let _ = handle(stream, port);
                active.fetch_sub(1, Ordering::AcqRel);
            });
        if spawned.is_err() {
            // Without a thread the stream was dropped (closed); the browser retries.
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Reads one request head and writes the reply.
fn handle(mut stream: TcpStream, port: u16) -> io::Result<()> {
    stream.set_read_timeout(Some(IO_TIMEOUT))?;
    stream.set_write_timeout(Some(IO_TIMEOUT))?;
    let mut head = Vec::with_capacity(1024);
    let mut buf = [0u8; 2048];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        if head.len() >= MAX_REQUEST_BYTES {
            return stream.write_all(&reply(
                431,
                "Request Header Fields Too Large",
                "text/plain",
                b"request too large\n",
                true,
            ));
        }
        let n = stream.read(&mut buf)?;
        if n == 0 {
            return Ok(());
        }
        head.extend_from_slice(&buf[..n]);
    }
    stream.write_all(&respond(&head, port))?;
    stream.flush()
}

/// The reply to a request whose head (request line and headers) is `head`, for a server on
/// 127.0.0.1 at `port`.
pub fn respond(head: &[u8], port: u16) -> Vec<u8> {
    let text = String::from_utf8_lossy(head);
    let mut lines = text.split("\r\n");
    let request_line = lines.next().unwrap_or_default();
    let mut parts = request_line.split(' ');
    let (method, target, version) = (parts.next(), parts.next(), parts.next());
    let (Some(method), Some(target), Some(version)) = (method, target, version) else {
        return reply(
            400,
            "Bad Request",
            "text/plain",
            b"malformed request line\n",
            true,
        );
    };
    if !version.starts_with("HTTP/1.") {
        return reply(
            505,
            "HTTP Version Not Supported",
            "text/plain",
            b"HTTP/1.x only\n",
            true,
        );
    }
    let host = lines
        .take_while(|l| !l.is_empty())
        .filter_map(|l| l.split_once(':'))
        .find(|(name, _)| name.trim().eq_ignore_ascii_case("host"))
        .map(|(_, value)| value.trim().to_ascii_lowercase());
    let allowed = [format!("127.0.0.1:{port}"), format!("localhost:{port}")];
    if !host.is_some_and(|h| allowed.contains(&h)) {
        return reply(
            421,
            "Misdirected Request",
            "text/plain",
            format!("this server answers only http://127.0.0.1:{port}/\n").as_bytes(),
            true,
        );
    }
    let with_body = match method {
        "GET" => true,
        "HEAD" => false,
        _ => {
            let mut r = reply(
                405,
                "Method Not Allowed",
                "text/plain",
                b"GET or HEAD only\n",
                true,
            );
            // The header goes before the blank line that ends the head.
            let at = r.windows(4).position(|w| w == b"\r\n\r\n").unwrap_or(0);
            r.splice(at..at, b"\r\nAllow: GET, HEAD".iter().copied());
            return r;
        }
    };
    let path = target.split(['?', '#']).next().unwrap_or_default();
    let path = if path == "/index.html" { "/" } else { path };
    match FILES.iter().find(|(p, _, _)| *p == path) {
        Some((_, content_type, body)) => reply(200, "OK", content_type, body, with_body),
        None => reply(
            404,
            "Not Found",
            "text/plain",
            b"not found: the page is at /\n",
            with_body,
        ),
    }
}

/// A whole reply: status line, headers, and the body unless `with_body` is false (`HEAD`).
fn reply(status: u16, reason: &str, content_type: &str, body: &[u8], with_body: bool) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {status} {reason}\r\n\
         Content-Type: {content_type}\r\n\
         Content-Length: {}\r\n\
         Cache-Control: no-cache\r\n\
         X-Content-Type-Options: nosniff\r\n\
         Referrer-Policy: no-referrer\r\n\
         Content-Security-Policy: {CONTENT_SECURITY_POLICY}\r\n\
         Connection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    if with_body {
        out.extend_from_slice(body);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(path: &str, host: &str) -> String {
        let head = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nAccept: */*\r\n\r\n");
        String::from_utf8_lossy(&respond(head.as_bytes(), 8765)).into_owned()
    }

    #[test]
    fn serves_each_file_with_its_type() {
        for (path, content_type, body) in FILES {
            let r = get(path, "127.0.0.1:8765");
            assert!(r.starts_with("HTTP/1.1 200 OK\r\n"), "{path}: {r:.80}");
            assert!(r.contains(&format!("Content-Type: {content_type}\r\n")));
            assert!(r.contains(&format!("Content-Length: {}\r\n", body.len())));
            let head = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1:8765\r\n\r\n");
            assert!(respond(head.as_bytes(), 8765).ends_with(body), "{path}");
        }
        assert!(get("/index.html?x=1", "localhost:8765").starts_with("HTTP/1.1 200"));
    }

    #[test]
    fn the_page_loads_nothing_from_elsewhere() {
        for (path, _, body) in &FILES[..4] {
            let text = String::from_utf8_lossy(body);
            for needle in ["http://", "https://", "//cdn", "@import", "url("] {
                // The SVG namespace is a name, not a request.
                let hits = text.matches(needle).count()
                    - text.matches("http://www.w3.org/2000/svg").count()
                        * usize::from(needle == "http://");
                assert_eq!(hits, 0, "{path} mentions {needle}");
            }
        }
        let r = get("/", "127.0.0.1:8765");
        assert!(r.contains("Content-Security-Policy: default-src 'self';"));
    }

    #[test]
    fn refuses_what_it_does_not_serve() {
        assert!(get("/etc/passwd", "127.0.0.1:8765").starts_with("HTTP/1.1 404"));
        assert!(get("/../Cargo.toml", "127.0.0.1:8765").starts_with("HTTP/1.1 404"));
        // Another name for this address: a rebinding attack, or a proxy; either way, no.
        assert!(get("/", "evil.example:8765").starts_with("HTTP/1.1 421"));
        assert!(get("/", "127.0.0.1:9999").starts_with("HTTP/1.1 421"));
        let no_host = respond(b"GET / HTTP/1.1\r\n\r\n", 8765);
        assert!(no_host.starts_with(b"HTTP/1.1 421"));
        let post = String::from_utf8_lossy(&respond(
            b"POST / HTTP/1.1\r\nHost: 127.0.0.1:8765\r\n\r\n",
            8765,
        ))
        .into_owned();
        assert!(
            post.starts_with("HTTP/1.1 405") && post.contains("\r\nAllow: GET, HEAD\r\n"),
            "{post}"
        );
        assert!(respond(b"GARBAGE\r\n\r\n", 8765).starts_with(b"HTTP/1.1 400"));
        assert!(respond(b"GET / SPDY/3\r\n\r\n", 8765).starts_with(b"HTTP/1.1 505"));
    }

    #[test]
    fn head_has_no_body() {
        let r = respond(b"HEAD / HTTP/1.1\r\nHost: 127.0.0.1:8765\r\n\r\n", 8765);
        let text = String::from_utf8_lossy(&r);
        assert!(text.starts_with("HTTP/1.1 200") && text.ends_with("\r\n\r\n"));
        assert!(text.contains(&format!("Content-Length: {}\r\n", FILES[0].2.len())));
    }
}
