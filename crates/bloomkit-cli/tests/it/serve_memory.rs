//! The memory clients can make the real `bloomkit serve` hold, measured as the process's resident memory (`VmRSS`/`VmHWM` in
//! `/proc/PID/status`), so nothing the server does not count escapes the figure.
//!
//! Each test prints what it measured. `BLOOMKIT_BIN=/path/to/bloomkit` runs them against
//! another build (the one before a change, to see them fail there). They need `/proc`
//! (Linux) and say so and pass elsewhere.

use crate::common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

use bloomkit_testkit::resp::{encode, read_reply};
use bloomkit_testkit::{skip, wait, Conn, Resp, Served};
use common::served::{connect, rss, serve};

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

/// `bloomkit serve` with `extra` flags, or `None` (after [`skip::holds`] says why) where
/// there is no `/proc` to read its memory from.
fn start(dir: &Path, extra: &[&str]) -> Option<Served> {
    let server = serve(dir, extra);
    skip::holds(
        memory(&server).is_some(),
        "/proc (Linux), to read the server's memory from",
    )
    .then_some(server)
}

fn bulk_len(reply: &Resp) -> usize {
    match reply {
        Resp::Bulk(bytes) => bytes.len(),
        other => panic!("not a bulk string: {other:?}"),
    }
}

/// 151 clients pipelining `BF.SCANDUMP` of a 12.9 MB filter without reading (3,730 MB of
/// replies if they were all built) stay under `--maxmemory 100mb`: a client that does not
/// read is not read from, and a read command's reply that does not fit under maxmemory is
/// answered OOM.
#[test]
fn clients_pipelining_scandump_without_reading_stay_under_maxmemory() {
    let dir = tempfile::tempdir().unwrap();
    let Some(server) = start(dir.path(), &["--maxmemory", "100mb", "--threads", "2"]) else {
        return;
    };
    let mut admin = server.client();
    assert_eq!(
        admin.cmd(&["BF.RESERVE", "big", "0.0001", "5000000"]),
        Resp::ok()
    );
    let Resp::Array(info) = admin.cmd(&["BF.INFO", "big", "SIZE"]) else {
        panic!("BF.INFO")
    };
    let Resp::Int(size) = info[0] else {
        panic!("{info:?}")
    };
    assert!((12_800_000..13_000_000).contains(&size), "{size}");
    let Resp::Array(chunk) = admin.cmd(&["BF.SCANDUMP", "big", "1"]) else {
        panic!("SCANDUMP")
    };
    assert!(bulk_len(&chunk[1]) > 12 * MB as usize);
    let before = memory(&server).unwrap().0;

    let mut request = Vec::new();
    for _ in 0..20 {
        encode(&mut request, &["BF.SCANDUMP", "big", "1"]);
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
    assert_eq!(admin.cmd(&["PING"]), Resp::Simple("PONG".into()));
    eprintln!("a PING during the flood answered in {:?}", asked.elapsed());
    drop(clients);
    drop(admin);
    server.shutdown(&["NOSAVE"]);
}

/// 4 connections each sending a 450 MiB argument (1,800 MiB pending) stay under
/// `--maxmemory 100mb`: a request that would take used memory past maxmemory is refused at
/// its header and its bytes dropped as they arrive.
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

/// A request of 1,048,575 empty arguments (6.3 MB on the wire) holds about the bytes it
/// was sent in while it arrives, not a 32-byte handle per argument (35 MB).
#[test]
fn a_million_empty_arguments_cost_what_was_sent_while_they_arrive() {
    let dir = tempfile::tempdir().unwrap();
    let Some(server) = start(dir.path(), &[]) else {
        return;
    };
    let mut client = Conn::open(&server.addr);
    assert_eq!(client.cmd(&["PING"]), Resp::Simple("PONG".into()));
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
    // Measured once the server has read all of it (the client's `qbuf` in `CLIENT LIST`).
    let mut admin = server.client();
    let arrived = wait::until(wait::GENEROUS, || {
        let list = admin.cmd(&["CLIENT", "LIST"]).text();
        list.lines().any(|line| {
            line.split(' ')
                .find_map(|field| field.strip_prefix("qbuf="))
                .and_then(|n| n.parse::<u64>().ok())
                .is_some_and(|n| n + 2 >= sent)
        })
    });
    assert!(arrived, "the server read the {sent}-byte request");
    let (pending, _) = memory(&server).unwrap();
    let held = pending.saturating_sub(before);
    client.writer.write_all(b"\r\n").unwrap();
    let reply = read_reply(&mut client.reader).unwrap();
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

/// A figure of `INFO memory` (`used_memory`, `mem_clients_normal`).
fn info_memory(client: &mut Conn, field: &str) -> u64 {
    let Resp::Bulk(text) = client.cmd(&["INFO", "memory"]) else {
        panic!("INFO answers a bulk string");
    };
    let prefix = format!("{field}:");
    String::from_utf8(text)
        .unwrap()
        .lines()
        .find_map(|line| line.strip_prefix(prefix.as_str()))
        .unwrap_or_else(|| panic!("no {field} in INFO memory"))
        .trim()
        .parse()
        .unwrap()
}

/// Appends `args` as a RESP request, bytes as they are.
fn encode_bytes(out: &mut Vec<u8>, args: &[&[u8]]) {
    out.extend(format!("*{}\r\n", args.len()).into_bytes());
    for arg in args {
        out.extend(format!("${}\r\n", arg.len()).into_bytes());
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
}

/// Sends `big` (a request of several MiB) and then `small`, in one write, so that they share
/// the server's read buffer; reads both replies and returns the second.
fn after_a_big_request(client: &mut Conn, big: &[&[u8]], small: &[&[u8]]) -> Resp {
    let mut out = Vec::new();
    encode_bytes(&mut out, big);
    encode_bytes(&mut out, small);
    client.writer.write_all(&out).unwrap();
    read_reply(&mut client.reader).unwrap();
    read_reply(&mut client.reader).unwrap()
}

/// Arguments are slices of the read buffer, so what outlives a request (a key made by
/// `COPY`, `RENAME` or `RESTORE`, a `WATCH`ed key, a slow log entry, a client's name) keeps
/// a copy of its own bytes: a slice would keep the whole buffer alive, uncounted (40 small
/// keys after 4 MiB requests would hold 162 MiB resident while `used_memory` said 44 KB).
#[test]
fn what_outlives_a_request_keeps_only_its_own_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let Some(server) = start(dir.path(), &[]) else {
        return;
    };
    let mut client = server.client();
    assert_eq!(client.cmd(&["BF.ADD", "src", "x"]), Resp::Int(1));
    let dump = match client.cmd(&["DUMP", "src"]) {
        Resp::Bulk(bytes) => bytes,
        other => panic!("{other:?}"),
    };
    let (before, _) = memory(&server).unwrap();
    let filler = vec![b'f'; 4 << 20];
    let big: [&[u8]; 2] = [b"ECHO", &filler];
    for i in 0..40 {
        let key = format!("copy{i}");
        let key = key.as_bytes();
        let reply = match i % 4 {
            0 => after_a_big_request(&mut client, &big, &[b"COPY", b"src", key]),
            1 => after_a_big_request(&mut client, &big, &[b"RESTORE", key, b"0", &dump]),
            2 => after_a_big_request(&mut client, &big, &[b"CLIENT", b"SETNAME", key]),
            _ => after_a_big_request(&mut client, &big, &[b"WATCH", key]),
        };
        assert!(!matches!(reply, Resp::Error(_)), "{reply:?}");
        if i % 4 == 0 {
            let renamed = format!("renamed{i}");
            let reply =
                after_a_big_request(&mut client, &big, &[b"RENAME", key, renamed.as_bytes()]);
            assert_eq!(reply, Resp::ok());
        }
    }
    // Five slow BF.MADDs of a million items (a 21 MB request each), in the slow log.
    let mut madd = vec!["BF.MADD".to_string(), "slow".to_string()];
    madd.extend((0..1_000_000).map(|i| format!("it{i:011}")));
    let madd: Vec<&str> = madd.iter().map(String::as_str).collect();
    for _ in 0..5 {
        assert!(matches!(client.cmd(&madd), Resp::Array(_)));
    }
    let Resp::Int(logged) = client.cmd(&["SLOWLOG", "LEN"]) else {
        panic!("SLOWLOG LEN answers an integer")
    };
    // What the server frees, it may free after the reply: the figure is the first one under
    // the bound, or the last one after a generous wait.
    let mut after = 0;
    wait::until(wait::GENEROUS, || {
        after = memory(&server).unwrap().0;
        after.saturating_sub(before) < 30 * MB
    });
    let used = info_memory(&mut client, "used_memory");
    let grown = after.saturating_sub(before);
    println!(
        "resident memory grew {:.1} MB over 50 requests of 4 MiB and 5 of 21 MB ({logged} slow log entries); used_memory {used}",
        grown as f64 / MB as f64
    );
    // The slow filter (5.8 MB) and one client's buffers (6.6 MB in all, measured): far
    // below the 288 MB that keeping the requests' buffers held.
    assert!(grown < 30 * MB, "resident memory grew {grown} bytes");
    assert!(logged >= 1, "the BF.MADDs were slow enough to log");
    drop(client);
    server.shutdown(&["NOSAVE"]);
}

/// `used_memory` counts what holding a key costs the process (its name, its place in the
/// table, the allocator's rounding), not only a filter's bits (which let tiny filters fill
/// 3.3× `maxmemory` before `OOM`), so resident memory stays within 1.25× of `maxmemory`
/// (plus the clients' buffers) at both ends: a great many tiny filters, and a few huge ones
/// filled until every page of their bits is touched.
#[test]
fn resident_memory_stays_within_a_quarter_of_maxmemory_for_tiny_and_huge_filters() {
    const MAXMEMORY: u64 = 64 << 20;
    let dir = tempfile::tempdir().unwrap();
    let Some(server) = start(dir.path(), &["--maxmemory", "64mb", "--appendfsync", "no"]) else {
        return;
    };
    let mut client = server.client();
    // Tiny filters (the defaults: capacity 100) until the first OOM.
    let mut keys = 0usize;
    'fill: loop {
        let batch: Vec<Vec<String>> = (keys..keys + 1000)
            .map(|i| vec!["BF.ADD".into(), format!("tiny:{i}"), "x".into()])
            .collect();
        for reply in client.pipeline(&batch) {
            match reply {
                Resp::Int(1) => keys += 1,
                Resp::Error(e) if e.starts_with("OOM") => break 'fill,
                other => panic!("{other:?}"),
            }
        }
    }
    within_a_quarter(
        &server,
        &mut client,
        &format!("{keys} tiny filters"),
        MAXMEMORY,
    );
    drop(client);
    server.shutdown(&["NOSAVE"]);

    // A few huge filters, each ~18 MB, reserved until OOM, then filled so that every page
    // of their bits is resident.
    let dir = tempfile::tempdir().unwrap();
    let Some(server) = start(dir.path(), &["--maxmemory", "64mb", "--appendfsync", "no"]) else {
        return;
    };
    let mut client = server.client();
    let mut huge = Vec::new();
    loop {
        let key = format!("huge:{}", huge.len());
        let reply = if huge.len() % 2 == 0 {
            client.cmd(&["BF.RESERVE", &key, "0.001", "10000000"])
        } else {
            client.cmd(&["CF.RESERVE", &key, "8000000"])
        };
        match reply {
            r if r == Resp::ok() => huge.push(key),
            Resp::Error(e) if e.starts_with("OOM") => break,
            other => panic!("{other:?}"),
        }
    }
    assert!(huge.len() >= 2, "{} huge filters", huge.len());
    for (n, key) in huge.iter().enumerate() {
        let add = if n % 2 == 0 { "BF.MADD" } else { "CF.INSERT" };
        for chunk in 0..40 {
            let mut request = vec![add.to_string(), key.clone()];
            if add == "CF.INSERT" {
                request.push("ITEMS".into());
            }
            request.extend((0..1000).map(|i| format!("item:{chunk}:{i}")));
            let args: Vec<&str> = request.iter().map(String::as_str).collect();
            assert!(matches!(client.cmd(&args), Resp::Array(_)));
        }
    }
    within_a_quarter(
        &server,
        &mut client,
        &format!("{} huge filters", huge.len()),
        MAXMEMORY,
    );
    drop(client);
    server.shutdown(&["NOSAVE"]);
}

/// Asserts that `server`'s resident memory is within 1.25× of `maxmemory` plus its clients'
/// buffers, printing the figures for `what`.
fn within_a_quarter(server: &Served, client: &mut Conn, what: &str, maxmemory: u64) {
    // The first figure under the bound, or the last one after a generous wait (what the
    // server frees, it may free after its reply).
    let (mut rss, mut clients) = (0, 0);
    wait::until(wait::GENEROUS, || {
        rss = memory(server).unwrap().0;
        clients = info_memory(client, "mem_clients_normal");
        rss <= maxmemory + maxmemory / 4 + clients
    });
    println!(
        "{what}: {:.1} MB resident for maxmemory {:.1} MB ({:.2}x), clients' buffers {:.1} MB",
        rss as f64 / MB as f64,
        maxmemory as f64 / MB as f64,
        rss as f64 / maxmemory as f64,
        clients as f64 / MB as f64
    );
    assert!(
        rss <= maxmemory + maxmemory / 4 + clients,
        "{rss} bytes resident for {what} under maxmemory {maxmemory}"
    );
}
