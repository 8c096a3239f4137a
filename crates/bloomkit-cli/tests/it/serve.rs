//! `bloomkit serve` as a real process: it prints where it listens, answers clients, and
//! exits cleanly on `SHUTDOWN` and on SIGTERM; its data directory survives a graceful
//! restart and SIGKILL in the middle of writes (nothing acknowledged is lost), and damage
//! to it stops start-up with one line naming the file and the offset.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::Duration;

use assert_cmd::cargo::cargo_bin_cmd;
use predicates::prelude::*;

use crate::common;
use bloomkit_testkit::resp::{encode, read_reply};
use bloomkit_testkit::{Conn, Resp};
use common::served::{connect, problems, serve};

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

#[test]
fn serve_prints_its_port_answers_and_stops_on_shutdown() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), &["--requirepass", "pw"]);
    let addr = server.addr.clone();
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
    assert!(server.wait_exit().0.success());
}

#[cfg(unix)]
#[test]
fn serve_stops_gracefully_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), &[]);
    let mut stream = connect(&server.addr);
    roundtrip(&mut stream, b"PING\r\n", b"+PONG\r\n");
    let killed = Command::new("kill")
        .args(["-TERM", &server.child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    assert!(server.wait_exit().0.success());
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
    let server = serve(dir.path(), &[]);
    let addr = server.addr.clone();
    let port = addr.rsplit(':').next().unwrap();
    let refused = cargo_bin_cmd!("bloomkit")
        .args(["serve", "--port", port])
        .output()
        .unwrap();
    assert!(!refused.status.success());
    let stderr = problems(&String::from_utf8_lossy(&refused.stderr));
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with(&format!("bloomkit: cannot listen on 127.0.0.1:{port}: ")),
        "{stderr}"
    );
    let mut stream = connect(&addr);
    stream.write_all(b"SHUTDOWN NOSAVE\r\n").unwrap();
    assert!(server.wait_exit().0.success());
}

#[test]
fn a_data_directory_that_is_a_regular_file_is_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("not-a-directory");
    std::fs::write(&file, b"x").unwrap();
    let output = cargo_bin_cmd!("bloomkit")
        .args(["serve", "--port", "0", "--dir"])
        .arg(&file)
        .timeout(Duration::from_secs(20))
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = problems(&String::from_utf8_lossy(&output.stderr));
    assert_eq!(
        stderr,
        format!(
            "bloomkit: {} is not a directory: give --dir a directory (it is created if missing)\n",
            file.display()
        )
    );
    assert_eq!(std::fs::read(&file).unwrap(), b"x");
}

// ---- Persistence through the real process: restart, crash, damage ----------------------

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

/// Runs `bloomkit serve` on `dir`, expecting it to refuse to start; returns what its
/// standard error reports as problems (see [`problems`]).
fn start_fails(dir: &Path) -> String {
    let output = cargo_bin_cmd!("bloomkit")
        .args(["serve", "--port", "0", "--dir"])
        .arg(dir)
        .timeout(Duration::from_secs(20))
        .output()
        .unwrap();
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        !output.status.success(),
        "started: {:?}; stderr: {stderr}",
        output.status
    );
    assert!(output.stdout.is_empty(), "{:?}", output.stdout);
    problems(&stderr)
}

fn log_file(dir: &Path, generation: u64) -> PathBuf {
    dir.join(format!("appendonly.{generation}.aof"))
}

fn int(n: i64) -> Resp {
    Resp::Int(n)
}

fn ints(values: &[i64]) -> Resp {
    Resp::Array(values.iter().copied().map(Resp::Int).collect())
}

/// splitmix64: the crash test's schedule is random-looking but the same on every run.
fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Something a client was told, which a restarted server must still say.
#[derive(Clone, Debug)]
enum Fact {
    /// `BF.EXISTS key item` is 1.
    Bloom(String, String),
    /// `CF.EXISTS key item` is 1.
    Cuckoo(String, String),
    /// `key` is a Bloom filter of capacity 500 (made by `BF.RESERVE key 0.001 500`).
    Reserved(String),
    /// `key` expires, far in the future (`EXPIRE key 100000`).
    Expiring(String),
}

/// How long the crash test's keys live: far beyond the test.
const CRASH_TTL: i64 = 100_000;

/// Whether a reply is what its command should answer.
type ReplyCheck = fn(&Resp) -> bool;

/// What one writer thread did: what was acknowledged, and what was sent but not answered.
struct Written {
    acked: Vec<Fact>,
    in_flight: Vec<Fact>,
}

/// Writes until the server dies: cycles through `BF.ADD`, `BF.MADD`, `CF.ADD`, `BF.RESERVE`
/// of a new key and `EXPIRE` of it, one command at a time, recording each command's facts as
/// acknowledged once its reply is in.
fn crash_writer(addr: &str, cycle: usize, thread: usize, acks: &AtomicUsize) -> Written {
    let mut client = Conn::open(addr);
    let bloom = format!("b:{cycle}:{thread}");
    let cuckoo = format!("c:{cycle}:{thread}");
    let mut acked = Vec::new();
    let mut reserved = None;
    // Odd writers pipeline 8 requests at a time (the server then batches their log records
    // with other clients' into one write), even ones send one at a time.
    let depth = if thread % 2 == 1 { 8 } else { 1 };
    let mut batch: Vec<(Vec<String>, Vec<Fact>, ReplyCheck)> = Vec::with_capacity(depth);
    for i in 0usize.. {
        let item = |n: usize| format!("item:{cycle}:{thread}:{i}:{n}");
        let (request, facts, check): (Vec<String>, Vec<Fact>, ReplyCheck) = match i % 5 {
            0 => (
                vec!["BF.ADD".into(), bloom.clone(), item(0)],
                vec![Fact::Bloom(bloom.clone(), item(0))],
                // 0 is a false positive of a new item: possible, and still "present".
                |r| matches!(r, Resp::Int(0 | 1)),
            ),
            1 => (
                vec!["BF.MADD".into(), bloom.clone(), item(0), item(1), item(2)],
                (0..3)
                    .map(|n| Fact::Bloom(bloom.clone(), item(n)))
                    .collect(),
                |r| matches!(r, Resp::Array(v) if v.len() == 3),
            ),
            2 => (
                vec!["CF.ADD".into(), cuckoo.clone(), item(0)],
                vec![Fact::Cuckoo(cuckoo.clone(), item(0))],
                |r| *r == Resp::Int(1),
            ),
            3 => {
                let key = format!("r:{cycle}:{thread}:{i}");
                reserved = Some(key.clone());
                (
                    vec![
                        "BF.RESERVE".into(),
                        key.clone(),
                        "0.001".into(),
                        "500".into(),
                    ],
                    vec![Fact::Reserved(key)],
                    |r| *r == Resp::ok(),
                )
            }
            _ => {
                let key = reserved.clone().expect("reserved just before");
                (
                    vec!["EXPIRE".into(), key.clone(), CRASH_TTL.to_string()],
                    vec![Fact::Expiring(key)],
                    |r| *r == Resp::Int(1),
                )
            }
        };
        batch.push((request, facts, check));
        if batch.len() < depth {
            continue;
        }
        let mut out = Vec::new();
        for (request, _, _) in &batch {
            let args: Vec<&str> = request.iter().map(String::as_str).collect();
            encode(&mut out, &args);
        }
        let mut answered = 0;
        if client.writer.write_all(&out).is_ok() {
            for (request, facts, check) in &batch {
                let Ok(reply) = read_reply(&mut client.reader) else {
                    break;
                };
                assert!(check(&reply), "{request:?} answered {reply:?}");
                acked.extend(facts.iter().cloned());
                acks.fetch_add(1, Ordering::Relaxed);
                answered += 1;
            }
        }
        if answered < batch.len() {
            // The server was killed: the unanswered commands may or may not have been
            // applied.
            return Written {
                acked,
                in_flight: batch.drain(answered..).flat_map(|(_, f, _)| f).collect(),
            };
        }
        batch.clear();
    }
    unreachable!("the loop ends when the server dies")
}

/// Asserts that the restarted server still says every fact, and that what was in flight
/// at the kill is either there whole or absent.
fn check_facts(client: &mut Conn, acked: &[Fact], in_flight: &[Fact]) {
    let request = |fact: &Fact| -> Vec<String> {
        match fact {
            Fact::Bloom(k, item) => vec!["BF.EXISTS".into(), k.clone(), item.clone()],
            Fact::Cuckoo(k, item) => vec!["CF.EXISTS".into(), k.clone(), item.clone()],
            Fact::Reserved(k) => vec!["BF.INFO".into(), k.clone(), "CAPACITY".into()],
            Fact::Expiring(k) => vec!["TTL".into(), k.clone()],
        }
    };
    let requests: Vec<Vec<String>> = acked.iter().map(request).collect();
    let replies = client.pipeline(&requests);
    for (fact, reply) in acked.iter().zip(&replies) {
        let ok = match fact {
            Fact::Bloom(..) | Fact::Cuckoo(..) => *reply == int(1),
            Fact::Reserved(_) => *reply == ints(&[500]),
            Fact::Expiring(_) => matches!(reply, Resp::Int(t) if (1..=CRASH_TTL).contains(t)),
        };
        assert!(
            ok,
            "acknowledged {fact:?} lost: the restarted server answers {reply:?}"
        );
    }
    let requests: Vec<Vec<String>> = in_flight.iter().map(request).collect();
    for (fact, reply) in in_flight.iter().zip(client.pipeline(&requests)) {
        let ok = match fact {
            Fact::Bloom(..) | Fact::Cuckoo(..) => matches!(reply, Resp::Int(0 | 1)),
            Fact::Reserved(_) => reply == ints(&[500]) || matches!(reply, Resp::Error(_)),
            Fact::Expiring(k) => {
                // A pipelined writer may have had the key's reservation in flight too: then
                // the key may be missing altogether.
                let reserved_in_flight = in_flight
                    .iter()
                    .any(|f| matches!(f, Fact::Reserved(r) if r == k));
                matches!(reply, Resp::Int(-1))
                    || matches!(reply, Resp::Int(t) if (1..=CRASH_TTL).contains(&t))
                    || (reserved_in_flight && reply == Resp::Int(-2))
            }
        };
        assert!(ok, "in-flight {fact:?} came back as {reply:?}");
    }
}

#[test]
fn sigkill_while_clients_write_with_always_loses_no_acknowledged_write() {
    sigkill_while_clients_write(&["--appendfsync", "always"]);
}

/// With `everysec` a write is handed to the kernel before its reply (batched with other
/// clients' records, but never after the reply), so a crash of the server process alone,
/// which leaves the kernel's page cache intact, loses nothing acknowledged either. (Power
/// loss can take the last second; no test here simulates it.)
#[test]
fn sigkill_while_clients_write_with_everysec_loses_no_acknowledged_write() {
    sigkill_while_clients_write(&["--appendfsync", "everysec"]);
}

fn sigkill_while_clients_write(policy: &[&str]) {
    const CYCLES: usize = 3;
    const WRITERS: usize = 8;
    let seed = std::env::var("BLOOMKIT_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_b10c_u64);
    eprintln!("crash test seed {seed} (set BLOOMKIT_CRASH_SEED to repeat another)");
    let mut rng = seed;
    let dir = tempfile::tempdir().unwrap();
    let mut acked: Vec<Fact> = Vec::new();
    let mut in_flight: Vec<Fact> = Vec::new();
    let mut ever_in_flight: Vec<Fact> = Vec::new();
    for cycle in 0..CYCLES {
        let server = serve(dir.path(), policy);
        // Everything acknowledged before every earlier kill is back.
        check_facts(&mut server.client(), &acked, &in_flight);
        let acks = Arc::new(AtomicUsize::new(0));
        let writers: Vec<JoinHandle<Written>> = (0..WRITERS)
            .map(|thread| {
                let (addr, acks) = (server.addr.clone(), Arc::clone(&acks));
                std::thread::spawn(move || crash_writer(&addr, cycle, thread, &acks))
            })
            .collect();
        // Kill at a random-looking moment while writes are in flight, but only once the
        // writers are under way, so that the kill cannot land before the first write.
        let deadline = Instant::now() + bloomkit_testkit::wait::GENEROUS;
        while acks.load(Ordering::Relaxed) < WRITERS * 4 {
            assert!(Instant::now() < deadline, "writers made no progress");
            std::thread::sleep(Duration::from_millis(5));
        }
        let delay = Duration::from_millis(300 + splitmix(&mut rng) % 500);
        std::thread::sleep(delay);
        let before_kill = acks.load(Ordering::Relaxed);
        let stderr = server.kill();
        let mut cycle_acked = 0;
        in_flight.clear();
        for writer in writers {
            let written = writer.join().expect("writer thread");
            cycle_acked += written.acked.len();
            acked.extend(written.acked);
            in_flight.extend(written.in_flight);
        }
        ever_in_flight.extend(in_flight.iter().cloned());
        eprintln!(
            "cycle {cycle}: killed after {delay:?}, {before_kill}+ commands acknowledged \
             ({cycle_acked} facts), {} in flight; stderr: {stderr:?}",
            in_flight.len()
        );
        assert!(cycle_acked > WRITERS * 4, "{cycle_acked}");
    }
    let server = serve(dir.path(), policy);
    let mut client = server.client();
    check_facts(&mut client, &acked, &in_flight);
    // Nothing else appeared: the keys are those acknowledged, plus perhaps some that were
    // being created at a kill.
    let key_of = |fact: &Fact| match fact {
        Fact::Bloom(k, _) | Fact::Cuckoo(k, _) | Fact::Reserved(k) | Fact::Expiring(k) => k.clone(),
    };
    let sure: std::collections::HashSet<String> = acked.iter().map(key_of).collect();
    let maybe = ever_in_flight
        .iter()
        .map(key_of)
        .filter(|k| !sure.contains(k))
        .collect::<std::collections::HashSet<_>>()
        .len();
    let Resp::Int(keys) = client.cmd(&["DBSIZE"]) else {
        panic!("DBSIZE")
    };
    let keys = usize::try_from(keys).unwrap();
    assert!(
        keys >= sure.len() && keys <= sure.len() + maybe,
        "{keys} keys; {} acknowledged, {maybe} in flight",
        sure.len()
    );
    assert_eq!(
        client.cmd(&["TYPE", "c:0:0"]),
        Resp::Simple("MBbloomCF".into())
    );
    assert_eq!(
        client.cmd(&["TYPE", "b:0:0"]),
        Resp::Simple("MBbloom--".into())
    );
    server.shutdown(&["NOSAVE"]);
}

// ---- SIGKILL in the middle of transactions ----------------------------------------------

/// How many keys each transaction of the crash test writes to.
const TXN_KEYS: usize = 6;

/// What one transactional writer did: how many of its transactions were acknowledged, and
/// whether one more was sent and not answered.
struct Transacted {
    acked: usize,
    in_flight: bool,
}

/// The item transaction `n` of `thread` adds to every one of its keys: `size` bytes, so
/// that the big writer's transactions pass the log's 1 MiB buffer and reach the file in
/// parts before their `EXEC` record.
fn txn_item(cycle: usize, thread: usize, n: usize, size: usize) -> String {
    let mut item = format!("txn:{cycle}:{thread}:{n}:");
    while item.len() < size {
        item.push((b'a' + (item.len() % 26) as u8) as char);
    }
    item
}

fn txn_key(cycle: usize, thread: usize, k: usize) -> String {
    format!("t:{cycle}:{thread}:{k}")
}

/// Runs `MULTI`, a `BF.ADD` to each of the thread's keys, `EXEC`, pipelined in one write,
/// until the server dies.
fn transaction_writer(
    addr: &str,
    cycle: usize,
    thread: usize,
    size: usize,
    acks: &AtomicUsize,
) -> Transacted {
    let mut client = Conn::open(addr);
    for n in 0usize.. {
        let item = txn_item(cycle, thread, n, size);
        let mut out = Vec::new();
        encode(&mut out, &["MULTI"]);
        for k in 0..TXN_KEYS {
            encode(&mut out, &["BF.ADD", &txn_key(cycle, thread, k), &item]);
        }
        encode(&mut out, &["EXEC"]);
        let sent = client.writer.write_all(&out).is_ok();
        let mut replies = Vec::new();
        while sent && replies.len() < TXN_KEYS + 2 {
            match read_reply(&mut client.reader) {
                Ok(reply) => replies.push(reply),
                Err(_) => break,
            }
        }
        if replies.len() < TXN_KEYS + 2 {
            return Transacted {
                acked: n,
                in_flight: true,
            };
        }
        assert_eq!(replies[0], Resp::ok());
        assert!(replies[1..=TXN_KEYS]
            .iter()
            .all(|r| *r == Resp::Simple("QUEUED".into())));
        match &replies[TXN_KEYS + 1] {
            Resp::Array(added) if added.len() == TXN_KEYS => {}
            other => panic!("EXEC answered {other:?}"),
        }
        acks.fetch_add(1, Ordering::Relaxed);
    }
    unreachable!("the loop ends when the server dies")
}

/// `kill -9` while clients run transactions: after each restart every acknowledged
/// transaction is there whole, and the one each client had in flight is there whole or
/// not at all, never in part (its records may have reached the log up to the `EXEC`).
#[test]
fn sigkill_in_the_middle_of_transactions_replays_each_whole_or_not_at_all() {
    const CYCLES: usize = 3;
    // Small transactions from most writers, 1.2 MiB ones from the last.
    const SIZES: [usize; 4] = [16, 16, 16, 200 * 1024];
    let mut rng = 0x7a11_5eed_u64;
    let dir = tempfile::tempdir().unwrap();
    let policy = ["--appendfsync", "always"];
    let mut history: Vec<(usize, Vec<Transacted>)> = Vec::new();
    let mut dropped_warnings = 0;
    for cycle in 0..=CYCLES {
        let server = serve(dir.path(), &policy);
        let mut client = server.client();
        // Every earlier cycle's transactions: whole or absent, per item, across the keys.
        for (past, writers) in &history {
            for (thread, written) in writers.iter().enumerate() {
                let size = SIZES[thread];
                let sent = written.acked + usize::from(written.in_flight);
                for n in 0..sent {
                    let item = txn_item(*past, thread, n, size);
                    let requests: Vec<Vec<String>> = (0..TXN_KEYS)
                        .map(|k| vec!["BF.EXISTS".into(), txn_key(*past, thread, k), item.clone()])
                        .collect();
                    let present = client
                        .pipeline(&requests)
                        .iter()
                        .filter(|r| **r == int(1))
                        .count();
                    if n < written.acked {
                        assert_eq!(
                            present, TXN_KEYS,
                            "acknowledged transaction {past}:{thread}:{n} lost"
                        );
                    } else {
                        assert!(
                            present == 0 || present == TXN_KEYS,
                            "unacknowledged transaction {past}:{thread}:{n} half there: {present} of {TXN_KEYS}"
                        );
                    }
                }
            }
        }
        if cycle == CYCLES {
            server.shutdown(&["NOSAVE"]);
            break;
        }
        for thread in 0..SIZES.len() {
            for k in 0..TXN_KEYS {
                let key = txn_key(cycle, thread, k);
                assert_eq!(
                    client.cmd(&["BF.RESERVE", &key, "0.000001", "10000"]),
                    Resp::ok()
                );
            }
        }
        let acks = Arc::new(AtomicUsize::new(0));
        let writers: Vec<JoinHandle<Transacted>> = SIZES
            .iter()
            .enumerate()
            .map(|(thread, &size)| {
                let (addr, acks) = (server.addr.clone(), Arc::clone(&acks));
                std::thread::spawn(move || transaction_writer(&addr, cycle, thread, size, &acks))
            })
            .collect();
        let deadline = Instant::now() + bloomkit_testkit::wait::GENEROUS;
        while acks.load(Ordering::Relaxed) < SIZES.len() * 4 {
            assert!(Instant::now() < deadline, "writers made no progress");
            std::thread::sleep(Duration::from_millis(5));
        }
        std::thread::sleep(Duration::from_millis(200 + splitmix(&mut rng) % 400));
        let stderr = server.kill();
        let written: Vec<Transacted> = writers.into_iter().map(|w| w.join().unwrap()).collect();
        eprintln!(
            "cycle {cycle}: {} transactions acknowledged, {} in flight at the kill; stderr: {stderr:?}",
            written.iter().map(|w| w.acked).sum::<usize>(),
            written.iter().filter(|w| w.in_flight).count()
        );
        history.push((cycle, written));
        // Read at the next start: what recovery said about the kill.
        let probe = serve(dir.path(), &policy);
        let said = probe.kill();
        dropped_warnings += usize::from(said.contains("of a transaction that a crash interrupted"));
    }
    eprintln!("{dropped_warnings} of {CYCLES} restarts dropped an unfinished transaction");
}

/// Builds a keyspace with filters of every shape: grown layers, non-scaling, defaults from
/// `CONFIG SET`, cuckoo deletions and duplicates, expiries, a rename and a deletion.
fn build_varied_keyspace(client: &mut Conn) {
    let mut requests: Vec<Vec<String>> = Vec::new();
    let mut req = |args: &[&str]| requests.push(args.iter().map(|s| s.to_string()).collect());
    req(&["BF.RESERVE", "grown", "0.01", "50", "EXPANSION", "4"]);
    for i in 0..400 {
        req(&["BF.ADD", "grown", &format!("g{i}")]);
    }
    req(&[
        "BF.INSERT",
        "fixed",
        "CAPACITY",
        "1000",
        "ERROR",
        "0.001",
        "NONSCALING",
        "ITEMS",
        "a",
        "b",
        "c",
    ]);
    req(&[
        "CONFIG",
        "SET",
        "bf-initial-size",
        "77",
        "bf-error-rate",
        "0.05",
    ]);
    req(&["BF.MADD", "implicit", "x", "y", "z"]);
    req(&[
        "CF.RESERVE",
        "cuckoo",
        "1000",
        "BUCKETSIZE",
        "4",
        "MAXITERATIONS",
        "50",
    ]);
    for i in 0..300 {
        req(&["CF.ADD", "cuckoo", &format!("c{}", i % 250)]);
    }
    for i in 0..40 {
        req(&["CF.DEL", "cuckoo", &format!("c{i}")]);
    }
    req(&["CF.ADDNX", "cuckoo", "c100"]);
    req(&["CF.INSERTNX", "cuckoo", "ITEMS", "n1", "n2"]);
    req(&["CF.ADD", "cimplicit", "one"]);
    req(&["EXPIRE", "grown", "1000"]);
    req(&["PEXPIRE", "cuckoo", "5000000"]);
    req(&["EXPIRE", "fixed", "50"]);
    req(&["PERSIST", "fixed"]);
    req(&["BF.ADD", "doomed", "x"]);
    req(&["DEL", "doomed"]);
    req(&["BF.ADD", "old-name", "kept"]);
    req(&["EXPIRE", "old-name", "3000"]);
    req(&["RENAME", "old-name", "new-name"]);
    for reply in client.pipeline(&requests) {
        assert!(!matches!(reply, Resp::Error(_)), "{reply:?}");
    }
}

/// Every answer the keyspace of [`build_varied_keyspace`] gives, TTLs aside: types,
/// `BF.INFO`/`CF.INFO`, cardinalities, and membership of every item added and of as many
/// that were not (so false positives must come back the same too).
fn observe(client: &mut Conn) -> Vec<(Vec<String>, Resp)> {
    let mut requests: Vec<Vec<String>> = Vec::new();
    let strings = |args: &[&str]| args.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    for key in ["grown", "fixed", "implicit", "new-name"] {
        requests.push(strings(&["TYPE", key]));
        requests.push(strings(&["BF.INFO", key]));
        requests.push(strings(&["BF.CARD", key]));
    }
    for key in ["cuckoo", "cimplicit"] {
        requests.push(strings(&["TYPE", key]));
        requests.push(strings(&["CF.INFO", key]));
    }
    for key in ["doomed", "old-name"] {
        requests.push(strings(&["EXISTS", key]));
    }
    let probes: Vec<String> = (0..500)
        .map(|i| format!("g{i}"))
        .chain((0..2000).map(|i| format!("absent{i}")))
        .chain(["a", "b", "c", "x", "y", "z", "kept"].map(String::from))
        .collect();
    for key in ["grown", "fixed", "implicit", "new-name"] {
        let mut mexists = strings(&["BF.MEXISTS", key]);
        mexists.extend(probes.iter().cloned());
        requests.push(mexists);
    }
    let cuckoo_probes: Vec<String> = (0..300)
        .map(|i| format!("c{i}"))
        .chain((0..2000).map(|i| format!("absent{i}")))
        .chain(["n1", "n2", "one"].map(String::from))
        .collect();
    for key in ["cuckoo", "cimplicit"] {
        let mut mexists = strings(&["CF.MEXISTS", key]);
        mexists.extend(cuckoo_probes.iter().cloned());
        requests.push(mexists);
        for probe in cuckoo_probes.iter().take(300) {
            requests.push(strings(&["CF.COUNT", key, probe]));
        }
    }
    requests.push(strings(&["DBSIZE"]));
    let replies = client.pipeline(&requests);
    requests.into_iter().zip(replies).collect()
}

/// The TTLs (in ms) of the keys of [`build_varied_keyspace`].
fn ttls(client: &mut Conn) -> Vec<i64> {
    ["grown", "cuckoo", "fixed", "new-name", "implicit"]
        .iter()
        .map(|key| match client.cmd(&["PTTL", key]) {
            Resp::Int(ms) => ms,
            other => panic!("PTTL {key}: {other:?}"),
        })
        .collect()
}

/// Asserts that `after` (a restart later) are `before` minus at most `elapsed`.
fn assert_ttls_kept(before: &[i64], after: &[i64], elapsed: Duration) {
    let elapsed = i64::try_from(elapsed.as_millis()).unwrap();
    for (b, a) in before.iter().zip(after) {
        if *b < 0 {
            assert_eq!(a, b, "a key without expiry gained one, or vanished");
        } else {
            // Both readings truncate the clock to whole milliseconds, and so does `elapsed`:
            // up to 2 ms of rounding (a regression: 999996 became 999957 38 ms later).
            assert!(
                *a <= *b && *a >= b - elapsed - 2,
                "TTL {b} ms became {a} ms ({elapsed} ms later)"
            );
        }
    }
}

/// Compares two observations request by request, so a failure names the first difference.
fn assert_same(before: &[(Vec<String>, Resp)], after: &[(Vec<String>, Resp)]) {
    assert_eq!(before.len(), after.len());
    for ((request, b), (_, a)) in before.iter().zip(after) {
        assert_eq!(
            a,
            b,
            "{:?} changed across the restart",
            &request[..2.min(request.len())]
        );
    }
}

#[test]
fn restart_after_shutdown_keeps_every_filter_answer_figure_and_ttl() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), &[]);
    let mut client = server.client();
    build_varied_keyspace(&mut client);
    let before = observe(&mut client);
    // Sanity: the observation is about real filters.
    assert!(before.iter().any(|(r, a)| r[0] == "BF.INFO"
        && r[1] == "grown"
        && matches!(a, Resp::Array(v) if v[5] == int(3))));
    // TTLs fall while the servers restart: measure from before they are first read.
    let stopped = Instant::now();
    let ttls_before = ttls(&mut client);
    assert_eq!(ttls_before[2], -1, "PERSIST removed the expiry");
    assert_eq!(ttls_before[4], -1);
    drop(client);
    let stderr = server.shutdown(&[]);
    assert_eq!(problems(&stderr), "", "{stderr}");
    assert!(dir.path().join("dump.bks").is_file(), "SHUTDOWN saves");

    // From the snapshot alone.
    let server = serve(dir.path(), &[]);
    let mut client = server.client();
    assert_same(&before, &observe(&mut client));
    assert_ttls_kept(&ttls_before, &ttls(&mut client), stopped.elapsed());

    // From the snapshot and the log: change things, stop without saving, restart.
    let mut more = Vec::new();
    for i in 400..500 {
        more.push(vec!["BF.ADD".to_string(), "grown".into(), format!("g{i}")]);
    }
    more.push(vec!["CF.DEL".into(), "cuckoo".into(), "c200".into()]);
    more.push(vec!["EXPIRE".into(), "implicit".into(), "777".into()]);
    assert!(client
        .pipeline(&more)
        .iter()
        .all(|r| matches!(r, Resp::Int(_))));
    let before = observe(&mut client);
    let stopped = Instant::now();
    let ttls_before = ttls(&mut client);
    assert!((1..=777_000).contains(&ttls_before[4]));
    drop(client);
    server.shutdown(&["NOSAVE"]);
    let server = serve(dir.path(), &[]);
    let mut client = server.client();
    assert_same(&before, &observe(&mut client));
    assert_ttls_kept(&ttls_before, &ttls(&mut client), stopped.elapsed());
    drop(client);
    server.shutdown(&["NOSAVE"]);
}

/// A small keyspace, written and stopped with `SHUTDOWN [args]`; returns its answers.
fn write_and_stop(dir: &Path, shutdown: &[&str]) -> Vec<(Vec<String>, Resp)> {
    let server = serve(dir, &[]);
    let mut client = server.client();
    build_varied_keyspace(&mut client);
    let answers = observe(&mut client);
    drop(client);
    server.shutdown(shutdown);
    answers
}

/// Asserts that `stderr` is one line naming `path` and the byte `offset`, and returns it.
fn assert_one_line_naming(stderr: &str, what: &str, path: &Path, offset: u64) {
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    let expected = format!(
        "bloomkit: corrupt {what} {} at byte {offset}:",
        path.display()
    );
    assert!(
        stderr.starts_with(&expected),
        "{stderr:?} is not {expected:?}..."
    );
}

#[test]
fn a_corrupt_snapshot_stops_start_up_naming_file_and_offset() {
    let dir = tempfile::tempdir().unwrap();
    write_and_stop(dir.path(), &[]);
    let snapshot = dir.path().join("dump.bks");
    let good = std::fs::read(&snapshot).unwrap();
    // A flip inside the first entry's key (past the 32-byte header, tag and key length) is
    // caught by the checksum at the end; one in the middle, inside a filter, by that
    // filter's own checks, or by the same checksum. Either way: one line, the file, an
    // offset in it, and nothing changed on disk.
    for flip in [40, good.len() / 2] {
        let mut bytes = good.clone();
        bytes[flip] ^= 0x10;
        std::fs::write(&snapshot, &bytes).unwrap();
        let stderr = start_fails(dir.path());
        let offset: u64 = stderr
            .split(" at byte ")
            .nth(1)
            .and_then(|rest| rest.split(':').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no offset in {stderr}"));
        assert!(
            (32..=good.len() as u64 - 8).contains(&offset),
            "flip at {flip}: {stderr}"
        );
        assert_one_line_naming(&stderr, "snapshot", &snapshot, offset);
        assert_eq!(std::fs::read(&snapshot).unwrap(), bytes, "left as it was");
    }
    // Repaired, it loads again.
    std::fs::write(&snapshot, &good).unwrap();
    let server = serve(dir.path(), &[]);
    assert_eq!(server.client().cmd(&["BF.EXISTS", "grown", "g1"]), int(1));
    server.shutdown(&["NOSAVE"]);
}

#[test]
fn a_corrupt_record_mid_log_stops_start_up_naming_file_and_offset() {
    let dir = tempfile::tempdir().unwrap();
    write_and_stop(dir.path(), &["NOSAVE"]);
    assert!(!dir.path().join("dump.bks").exists());
    let log = log_file(dir.path(), 1);
    let mut bytes = std::fs::read(&log).unwrap();
    // The first record starts after the 24-byte header; flip a byte of its payload, with
    // hundreds of good records after it.
    bytes[24 + 12] ^= 0x01;
    std::fs::write(&log, &bytes).unwrap();
    let stderr = start_fails(dir.path());
    assert_one_line_naming(&stderr, "append-only log", &log, 24);
    assert_eq!(std::fs::read(&log).unwrap(), bytes, "left as it was");
}

#[test]
fn a_torn_tail_is_cut_with_a_warning_and_everything_before_it_loads() {
    let dir = tempfile::tempdir().unwrap();
    let answers = write_and_stop(dir.path(), &["NOSAVE"]);
    let log = log_file(dir.path(), 1);
    let intact = std::fs::metadata(&log).unwrap().len();
    // Half a record, as a crash in the middle of a write leaves it: an intact length
    // header (100 bytes, and its complement), then only 10 of the 108 bytes that follow.
    let mut torn = Vec::new();
    torn.extend(100u32.to_le_bytes());
    torn.extend((!100u32).to_le_bytes());
    torn.extend(b"*3\r\n$6\r\nBF");
    let mut file = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
    file.write_all(&torn).unwrap();
    drop(file);

    let server = serve(dir.path(), &[]);
    let mut client = server.client();
    assert_same(&answers, &observe(&mut client));
    drop(client);
    let stderr = problems(&server.shutdown(&["NOSAVE"]));
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with(&format!(
            "{}: dropped {} bytes from byte {intact} on",
            log.display(),
            torn.len()
        )),
        "{stderr}"
    );
    assert_eq!(std::fs::metadata(&log).unwrap().len(), intact, "cut back");
}

#[test]
fn a_second_server_on_the_same_directory_refuses_to_start() {
    let dir = tempfile::tempdir().unwrap();
    let first = serve(dir.path(), &[]);
    let stderr = start_fails(dir.path());
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with(&format!(
            "bloomkit: the data directory {} is in use by another bloomkit server",
            dir.path().display()
        )),
        "{stderr}"
    );
    // The first is unharmed.
    let mut client = first.client();
    assert_eq!(client.cmd(&["BF.ADD", "k", "x"]), int(1));
    drop(client);
    first.shutdown(&[]);
    // And once it is gone, the directory is free again.
    let second = serve(dir.path(), &[]);
    assert_eq!(second.client().cmd(&["BF.EXISTS", "k", "x"]), int(1));
    second.shutdown(&["NOSAVE"]);
}

/// With the data directory removed while the server runs, a write would go to a log file
/// that no longer has a name and be lost: no write is acknowledged once the log file is
/// gone, reads still answer, and shutdown says what happened instead of claiming the log
/// holds every write.
#[test]
fn removing_the_data_directory_while_serving_stops_acknowledging_writes() {
    let parent = tempfile::tempdir().unwrap();
    let dir = parent.path().join("data");
    let server = serve(&dir, &["--appendfsync", "everysec"]);
    let mut client = server.client();
    for i in 0..50 {
        assert_eq!(client.cmd(&["BF.ADD", "k", &format!("before-{i}")]), int(1));
    }
    std::fs::remove_dir_all(&dir).unwrap();
    let mut acknowledged = 0;
    let mut refused = Vec::new();
    for i in 0..50 {
        match client.cmd(&["BF.ADD", "k", &format!("after-{i}")]) {
            Resp::Error(e) => refused.push(e),
            _ => acknowledged += 1,
        }
    }
    eprintln!("after the removal: {acknowledged} of 50 writes acknowledged");
    assert_eq!(acknowledged, 0);
    // The first write was running when the server found out; every later one was refused
    // before it ran.
    assert!(
        refused[0].starts_with("MISCONF Errors writing to the AOF file: the log file was deleted"),
        "{}",
        refused[0]
    );
    assert!(refused[1..]
        .iter()
        .all(|e| e == "MISCONF Errors writing to the AOF file: the log file was deleted"));
    // Reads and the server's own commands go on.
    assert_eq!(client.cmd(&["BF.EXISTS", "k", "before-7"]), int(1));
    assert_eq!(client.cmd(&["PING"]), Resp::Simple("PONG".into()));
    let Resp::Bulk(info) = client.cmd(&["INFO", "persistence"]) else {
        panic!("INFO")
    };
    let info = String::from_utf8(info).unwrap();
    assert!(info.contains("aof_last_write_status:err"), "{info}");
    assert!(info.contains("aof_write_retrying:0"), "{info}");
    drop(client);
    // Shutdown does not claim the log holds anything: it says it failed, and exits 1.
    let mut client = server.client();
    client.send(&["SHUTDOWN"]).unwrap();
    let (status, stderr) = server.wait_exit();
    assert!(!status.success(), "{stderr}");
    assert!(
        !stderr.contains("the log still holds every write"),
        "{stderr}"
    );
    assert!(
        stderr.contains("was deleted (or its data directory removed)"),
        "{stderr}"
    );
}
