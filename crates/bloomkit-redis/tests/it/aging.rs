//! `AF.*` inside Redis 7.0 and Valkey: the CDN's admission on second request across
//! rotations, the `BKaging--` type through `DUMP`/`RESTORE`, `COPY` and
//! `AF.SCANDUMP`/`AF.LOADCHUNK`, and `PERIOD` rotations run by the primary's timer that a
//! replica (after `WAIT`), an append-only replay after `kill -9` and a rewritten file agree
//! on, digest for digest.

use crate::common;

use std::time::Duration;

use bloomkit_testkit::wait;
use common::{digest, Conn, Engine, Resp, Server};

/// `AF.INFO key`'s field `name`, from the RESP2 reply's name/value pairs.
fn info_field(c: &mut Conn, key: &str, name: &str) -> Resp {
    let pairs = c.line(&format!("AF.INFO {key}")).array();
    let at = pairs
        .iter()
        .position(|v| *v == Resp::Simple(name.into()))
        .unwrap_or_else(|| panic!("{name} in {pairs:?}"));
    pairs[at + 1].clone()
}

/// The server's clock, in milliseconds since the epoch.
fn server_ms(c: &mut Conn) -> i64 {
    let time = c.line("TIME").array();
    let seconds: i64 = time[0].text().parse().unwrap();
    let micros: i64 = time[1].text().parse().unwrap();
    seconds * 1000 + micros / 1000
}

fn counts(items: &[i64]) -> Resp {
    Resp::Array(items.iter().map(|&n| Resp::Int(n)).collect())
}

/// Creates `key` with a one-hour period whose first rotation falls due half a second from
/// now, adds `a b c`, and waits (generously) for the timer to run that rotation; the next
/// is an hour away, so the key stays still for the rest of a test.
fn key_rotated_once_by_the_timer(c: &mut Conn, key: &str) {
    let at = server_ms(c) - 3_600_000 + 500;
    assert_eq!(
        c.line(&format!(
            "AF.RESERVE {key} 0.01 1000 GENERATIONS 3 PERIOD 3600 AT {at}"
        )),
        Resp::Simple("OK".into())
    );
    c.line(&format!("AF.MADD {key} a b c"));
    assert_eq!(
        info_field(c, key, "Items per generation"),
        counts(&[3, 0, 0])
    );
    assert!(
        wait::until(wait::GENEROUS, || {
            info_field(c, key, "Items per generation") == counts(&[0, 3, 0])
        }),
        "the timer rotated {key} within 30 s"
    );
    let Resp::Int(to_next) = info_field(c, key, "Seconds to next rotation") else {
        panic!()
    };
    assert!((3500..=3600).contains(&to_next), "{to_next}");
}

#[test]
fn a_cdn_admits_on_the_second_request_and_the_type_travels_whole() {
    for engine in Engine::available() {
        let dir = tempfile::tempdir().expect("a directory");
        let server = Server::start_raw(engine, dir.path(), common::args_with(&[], &[]));
        let mut c = server.conn();
        let name = engine.name();
        c.line("AF.RESERVE edge 0.001 100000");
        assert_eq!(
            c.line("TYPE edge"),
            Resp::Simple("BKaging--".into()),
            "{name}"
        );
        assert_eq!(
            c.line("AF.ADD edge /a.jpg"),
            Resp::Int(1),
            "{name}: first request"
        );
        assert_eq!(c.line("AF.ADD edge /a.jpg"), Resp::Int(0), "{name}: second");
        assert_eq!(c.line("AF.ADD edge /b.jpg"), Resp::Int(1));
        c.line("AF.ROTATE edge");
        assert_eq!(
            c.line("AF.ADD edge /b.jpg"),
            Resp::Int(0),
            "{name}: next period"
        );
        c.line("AF.ROTATE edge");
        c.line("AF.ROTATE edge");
        assert_eq!(c.line("AF.EXISTS edge /a.jpg"), Resp::Int(0));
        assert_eq!(
            c.line("AF.ADD edge /a.jpg"),
            Resp::Int(1),
            "{name}: after the window"
        );
        assert!(matches!(c.line("BF.ADD edge x"), Resp::Error(e) if e.starts_with("WRONGTYPE")));
        c.line("SET plain x");
        assert!(matches!(c.line("AF.ADD plain x"), Resp::Error(e) if e.starts_with("WRONGTYPE")));

        let want = digest(&mut c, "edge");
        // DUMP/RESTORE (the type's RDB callbacks), COPY.
        let dump = c.line("DUMP edge").bytes();
        assert_eq!(
            c.cmd(&[&b"RESTORE"[..], b"restored", b"0", &dump]),
            Resp::Simple("OK".into())
        );
        assert_eq!(c.line("COPY edge copied"), Resp::Int(1));
        // AF.SCANDUMP / AF.LOADCHUNK.
        let mut iter = 0;
        loop {
            let pair = c.cmd(&["AF.SCANDUMP", "edge", &iter.to_string()]).array();
            iter = pair[0].int();
            if iter == 0 {
                break;
            }
            let reply = c.cmd(&[
                &b"AF.LOADCHUNK"[..],
                b"chunked",
                iter.to_string().as_bytes(),
                &pair[1].bytes(),
            ]);
            assert_eq!(reply, Resp::Simple("OK".into()), "{name}");
        }
        for key in ["restored", "copied", "chunked"] {
            assert_eq!(digest(&mut c, key), want, "{name}: {key}");
            assert_eq!(
                c.line(&format!("TYPE {key}")),
                Resp::Simple("BKaging--".into())
            );
            assert_eq!(c.line(&format!("AF.EXISTS {key} /a.jpg")), Resp::Int(1));
        }
    }
}

/// A primary and its replica (in `dir`), linked, with a connection to each.
fn primary_and_replica(engine: Engine, dir: &std::path::Path) -> (Server, Conn, Server, Conn) {
    let master = Server::start_raw(engine, &dir.join("master"), common::args_with(&[], &[]));
    let m = master.conn();
    let port = master.port.to_string();
    let replica = Server::start_raw(
        engine,
        &dir.join("replica"),
        common::args_with(&[], &["--replicaof", "127.0.0.1", &port]),
    );
    let mut r = replica.conn();
    common::replica_linked(&mut r, engine.name());
    (master, m, replica, r)
}

#[test]
fn a_replica_applies_the_primarys_period_rotation() {
    for engine in Engine::available() {
        let dir = tempfile::tempdir().expect("a directory");
        let (_master, mut m, _replica, mut r) = primary_and_replica(engine, dir.path());
        key_rotated_once_by_the_timer(&mut m, "timed");
        m.line("AF.ADD timed d");
        assert_eq!(m.line("WAIT 1 10000"), Resp::Int(1));
        assert_eq!(
            info_field(&mut r, "timed", "Items per generation"),
            counts(&[1, 3, 0]),
            "{}: the replica applied the rotation",
            engine.name()
        );
        assert_eq!(digest(&mut m, "timed"), digest(&mut r, "timed"));
        assert_eq!(m.line("DEBUG DIGEST"), r.line("DEBUG DIGEST"));
    }
}

#[test]
fn an_append_only_replay_after_kill_9_and_a_rewrite_agree_on_the_rotation() {
    for engine in Engine::available() {
        let dir = tempfile::tempdir().expect("a directory");
        let extra = ["--appendonly", "yes", "--appendfsync", "always"];
        let mut server = Server::start_raw(engine, dir.path(), common::args_with(&[], &extra));
        let mut c = server.conn();
        key_rotated_once_by_the_timer(&mut c, "timed");
        c.line("AF.ADD timed d");
        let want = digest(&mut c, "timed");
        server.kill();
        server.restart();
        let mut c = server.conn();
        assert_eq!(digest(&mut c, "timed"), want, "{}: replayed", engine.name());
        // Rewritten without the RDB preamble: AF.LOADCHUNK commands.
        c.line("CONFIG SET aof-use-rdb-preamble no");
        common::rewrite_aof(&mut c, Duration::from_secs(20));
        server.kill();
        server.restart();
        let mut c = server.conn();
        assert_eq!(
            digest(&mut c, "timed"),
            want,
            "{}: rewritten",
            engine.name()
        );
        assert_eq!(
            info_field(&mut c, "timed", "Items per generation"),
            counts(&[1, 3, 0])
        );
    }
}

#[test]
fn a_replica_rotates_nothing_by_itself_until_it_is_promoted() {
    for engine in Engine::available() {
        let name = engine.name();
        let dir = tempfile::tempdir().expect("a directory");
        let (mut master, mut m, _replica, mut r) = primary_and_replica(engine, dir.path());
        // Due eight seconds from now, an hour's period: far beyond the few milliseconds the
        // primary lives after it (checked below, so a stalled machine fails plainly).
        let due = server_ms(&mut m) + 8_000;
        let at = due - 3_600_000;
        m.line(&format!(
            "AF.RESERVE held 0.01 1000 GENERATIONS 3 PERIOD 3600 AT {at}"
        ));
        m.line("AF.MADD held a b c");
        assert_eq!(m.line("WAIT 1 10000"), Resp::Int(1));
        // The primary goes before the rotation falls due; the replica stays a replica.
        let primary_ms = server_ms(&mut m);
        assert!(
            primary_ms + 1_000 < due,
            "{name}: the primary reached the due time before the test could stop it"
        );
        master.kill();
        // Wait, by the replica's own clock, until a second (ten of its timer's ticks) past
        // the due time: it has not rotated.
        assert!(
            wait::until(wait::GENEROUS, || server_ms(&mut r) > due + 1_000),
            "{name}: the replica's clock passed the due time"
        );
        assert_eq!(
            info_field(&mut r, "held", "Items per generation"),
            counts(&[3, 0, 0]),
            "{name}: a replica rotated by itself"
        );
        // Promoted, it runs the overdue rotation.
        assert_eq!(r.line("REPLICAOF NO ONE"), Resp::Simple("OK".into()));
        assert!(
            wait::until(wait::GENEROUS, || {
                info_field(&mut r, "held", "Items per generation") == counts(&[0, 3, 0])
            }),
            "{name}: the promoted replica rotated within 30 s"
        );
    }
}

/// The timer's visits are the module's, not a client's: a key with a period that no client
/// touches grows idle (`OBJECT IDLETIME`), as LRU and LFU eviction must see it.
#[test]
fn the_timer_leaves_a_keys_idle_time_alone() {
    for engine in Engine::available() {
        let dir = tempfile::tempdir().expect("a directory");
        let server = Server::start_raw(engine, dir.path(), common::args_with(&[], &[]));
        let mut c = server.conn();
        let name = engine.name();
        assert_eq!(
            c.line("AF.RESERVE idle 0.01 1000 PERIOD 1"),
            Resp::Simple("OK".into()),
            "{name}"
        );
        // OBJECT IDLETIME itself does not touch the key; the timer visits it every tick.
        assert!(
            wait::until(wait::GENEROUS, || {
                matches!(c.line("OBJECT IDLETIME idle"), Resp::Int(n) if n >= 2)
            }),
            "{name}: the key stayed idle for 2 s within 30 s"
        );
    }
}
