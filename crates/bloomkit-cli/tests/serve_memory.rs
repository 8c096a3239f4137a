//! Issue 12 §4's reproductions against the real `bloomkit serve`: the memory its clients can
//! make it hold, measured as the process's resident memory (`VmRSS`/`VmHWM` in
//! `/proc/PID/status`), so nothing the server does not count escapes the figure.
//!
//! Each test prints what it measured. `BLOOMKIT_BIN=/path/to/bloomkit` runs them against
//! another build (the one before a change, to see them fail there). They need `/proc`
//! (Linux) and say so and pass elsewhere.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

use common::served::{connect, rss, Client, Resp, Served};

const MB: u64 = 1_000_000;

/// The server's resident memory now and at its peak, or `None` without `/proc`.
fn memory(server: &Served) -> Option<(u64, u64)> {
    rss(server.child.id())
}

/// Samples the server's resident memory every 50 ms for `period`, returning the largest.
fn peak_over(server: &Served, period: Duration) -> u64 {
    let until = Instant::now() + period;
    let mut peak = 0;
    while Instant::now() < until {
        if let Some((now, high)) = memory(server) {
            peak = peak.max(now).max(high);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    peak
}

fn start(dir: &Path, extra: &[&str]) -> Option<Served> {
    let server = Served::start(dir, extra);
    if memory(&server).is_none() {
        eprintln!("skipped: no /proc to read the server's memory from");
        server.kill();
        return None;
    }
    Some(server)
}

fn bulk_len(reply: &Resp) -> usize {
    match reply {
        Resp::Bulk(Some(bytes)) => bytes.len(),
        other => panic!("not a bulk string: {other:?}"),
    }
}

/// Regression: 151 clients pipelining `BF.SCANDUMP` of a 12.9 MB filter without reading
/// held 3,730 MB with `--maxmemory 100mb`. Now a client that does not read is not read
/// from, and a read command's reply that does not fit under maxmemory is answered OOM.
#[test]
fn clients_pipelining_scandump_without_reading_stay_under_maxmemory() {
    let dir = tempfile::tempdir().unwrap();
    let Some(server) = start(dir.path(), &["--maxmemory", "100mb", "--threads", "2"]) else {
        return;
    };
    let mut admin = server.client();
    assert_eq!(
        admin.call(&["BF.RESERVE", "big", "0.0001", "5000000"]),
        Resp::ok()
    );
    let Resp::Array(Some(info)) = admin.call(&["BF.INFO", "big", "SIZE"]) else {
        panic!("BF.INFO")
    };
    let Resp::Int(size) = info[0] else {
        panic!("{info:?}")
    };
    assert!((12_800_000..13_000_000).contains(&size), "{size}");
    let Resp::Array(Some(chunk)) = admin.call(&["BF.SCANDUMP", "big", "1"]) else {
        panic!("SCANDUMP")
    };
    assert!(bulk_len(&chunk[1]) > 12 * MB as usize);
    let before = memory(&server).unwrap().0;

    let mut request = Vec::new();
    for _ in 0..20 {
        common::served::encode(&mut request, &["BF.SCANDUMP", "big", "1"]);
    }
    let clients: Vec<TcpStream> = (0..151)
        .map(|_| {
            let mut stream = connect(&server.addr);
            stream.write_all(&request).unwrap();
            stream
        })
        .collect();
    let peak = peak_over(&server, Duration::from_secs(3));
    eprintln!(
        "151 clients x 20 pipelined SCANDUMPs of a {size}-byte filter, none read, --maxmemory 100mb: \
         {} MB resident before, {} MB at the peak",
        before / MB,
        peak / MB
    );
    // maxmemory, plus what the process holds besides (its code, the allocator's arenas,
    // one reply being built per worker thread).
    assert!(peak < 180 * MB, "{} MB", peak / MB);
    // Someone who reads still gets an answer: a chunk that does not fit is refused before
    // it is copied, so the flood costs the server little work.
    let asked = Instant::now();
    assert_eq!(admin.call(&["PING"]), Resp::Simple("PONG".into()));
    eprintln!("a PING during the flood answered in {:?}", asked.elapsed());
    drop(clients);
    drop(admin);
    server.shutdown(&["NOSAVE"]);
}

/// Regression: 4 connections each holding a pending 450 MiB argument made the server hold
/// 2,304 MB with `--maxmemory 100mb`. Now a request that would take used memory past
/// maxmemory is refused at its header and its bytes dropped as they arrive.
#[test]
fn pending_large_arguments_do_not_pass_maxmemory() {
    let dir = tempfile::tempdir().unwrap();
    let Some(server) = start(dir.path(), &["--maxmemory", "100mb"]) else {
        return;
    };
    const ARG: usize = 450 << 20;
    let writers: Vec<_> = (0..4)
        .map(|_| {
            let addr = server.addr.clone();
            std::thread::spawn(move || {
                let mut stream = connect(&addr);
                stream
                    .write_all(format!("*2\r\n$4\r\nECHO\r\n${ARG}\r\n").as_bytes())
                    .unwrap();
                let block = vec![b'x'; 1 << 20];
                // All of it but the last byte: the argument stays pending.
                for _ in 0..ARG / block.len() - 1 {
                    stream.write_all(&block).unwrap();
                }
                stream.write_all(&block[1..]).unwrap();
                stream
            })
        })
        .collect();
    let peak_while = {
        let mut peak = 0;
        while !writers.iter().all(|w| w.is_finished()) {
            peak = peak.max(peak_over(&server, Duration::from_millis(100)));
        }
        peak
    };
    let streams: Vec<TcpStream> = writers.into_iter().map(|w| w.join().unwrap()).collect();
    let peak = peak_while.max(peak_over(&server, Duration::from_millis(500)));
    eprintln!(
        "4 connections x a pending 450 MiB argument, --maxmemory 100mb: {} MB resident at the peak",
        peak / MB
    );
    assert!(peak < 150 * MB, "{} MB", peak / MB);
    // Completed, each is answered OOM, and the connection is still usable.
    for mut stream in streams {
        stream.write_all(b"x\r\n*1\r\n$4\r\nPING\r\n").unwrap();
        let expected = b"-OOM command not allowed when used memory > 'maxmemory'.\r\n+PONG\r\n";
        let mut got = vec![0; expected.len()];
        stream.read_exact(&mut got).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(expected)
        );
    }
    server.shutdown(&["NOSAVE"]);
}

/// Regression: a request of 1,048,575 empty arguments (6.3 MB on the wire) cost 35 MB of
/// server memory while it arrived: a 32-byte handle per argument. Now a request in
/// progress holds the bytes it was sent in.
#[test]
fn a_million_empty_arguments_cost_what_was_sent_while_they_arrive() {
    let dir = tempfile::tempdir().unwrap();
    let Some(server) = start(dir.path(), &[]) else {
        return;
    };
    let mut client = Client::connect(&server.addr);
    assert_eq!(client.call(&["PING"]), Resp::Simple("PONG".into()));
    std::thread::sleep(Duration::from_millis(200));
    let before = memory(&server).unwrap().0;
    // 1,048,576 arguments announced: the name and 1,048,575 empty ones; the last one's
    // header is sent, not its CRLF, so the request stays in progress.
    let count = 1 << 20;
    let mut request = format!("*{count}\r\n$5\r\nBF.BF\r\n").into_bytes();
    for _ in 1..count {
        request.extend_from_slice(b"$0\r\n\r\n");
    }
    let sent = request.len() as u64;
    client
        .writer
        .write_all(&request[..request.len() - 2])
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let (pending, _) = memory(&server).unwrap();
    let held = pending.saturating_sub(before);
    client.writer.write_all(b"\r\n").unwrap();
    let reply = common::served::read_reply(&mut client.reader).unwrap();
    assert!(
        matches!(&reply, Resp::Error(e) if e.starts_with("ERR unknown command 'BF.BF'")),
        "{reply:?}"
    );
    let (_, peak) = memory(&server).unwrap();
    eprintln!(
        "1,048,575 empty arguments ({sent} bytes sent): {held} bytes more resident while the \
         request arrived; {} MB at the peak, once it ran",
        peak / MB
    );
    assert!(held < 2 * sent, "{held} bytes held for {sent} sent");
    drop(client);
    server.shutdown(&["NOSAVE"]);
}
