//! Keys moved from RedisBloom into Redis or Valkey with this module: `RESTORE` of the `DUMP`
//! payloads a real RedisBloom 2.8 wrote and `LOADCHUNK` of its `SCANDUMP` chunks (the
//! library's golden data, `crates/bloomkit/tests/data/redisbloom/`), every answer
//! RedisBloom gave given again and `BF.INFO`/`CF.INFO` as it reported them; the imported
//! keys kept through an RDB `SAVE`, the append-only file and its rewrite, a replica's sync
//! and `DUMP`/`RESTORE` again; damaged payloads refused with Redis's own errors. With a
//! RedisBloom module at hand, a key dumped live from it too.

use crate::common;

use std::time::Duration;

use bloomkit_testkit::golden::{self, family, key_answers, key_info, KEYS};
use common::{digest, Conn, Engine, Resp, Server};

/// `DEBUG DIGEST-VALUE` compares keys' bits.
const DEBUG: [&str; 2] = ["--enable-debug-command", "yes"];

fn restore(c: &mut Conn, key: &str, payload: &[u8]) -> Resp {
    c.cmd::<&[u8]>(&[b"RESTORE", key.as_bytes(), b"0", payload])
}

/// Every item's answer as RedisBloom gave it, and `INFO` as RedisBloom reported it.
fn answers_as_redisbloom(c: &mut Conn, key: &str, context: &str) {
    let family = family(key);
    let mut found = 0;
    for (item, exists, count) in key_answers(key) {
        let got = c.cmd(&[format!("{family}.EXISTS"), key.to_string(), item.clone()]);
        assert_eq!(got, Resp::Int(i64::from(exists)), "{context}: {key} {item}");
        found += usize::from(exists);
        if let Some(count) = count {
            let got = c.cmd(&["CF.COUNT", key, &item]);
            assert_eq!(got, Resp::Int(count), "{context}: {key} {item}");
        }
    }
    assert!(found > 0, "{context}: {key}'s items are found");
    let info = c.cmd(&[format!("{family}.INFO"), key.to_string()]).array();
    for (name, expected) in key_info(key) {
        let expected = expected.map_or(Resp::Nil, Resp::Int);
        let at = info
            .iter()
            .position(|r| *r == Resp::Simple(name.clone()))
            .unwrap_or_else(|| panic!("{context}: {key} INFO has no {name}"));
        assert_eq!(info[at + 1], expected, "{context}: {key} {name}");
    }
}

fn restore_all(c: &mut Conn) {
    for key in KEYS {
        let payload = golden::read(&format!("{key}.dump"));
        assert_eq!(
            restore(c, key, &payload),
            Resp::Simple("OK".into()),
            "{key}"
        );
    }
}

fn digests(c: &mut Conn) -> Vec<String> {
    KEYS.iter().map(|k| digest(c, k)).collect()
}

#[test]
fn redisbloom_dumps_restore_into_the_module_with_every_answer_kept() {
    for engine in Engine::available() {
        let dir = tempfile::tempdir().expect("a directory");
        let server = Server::start(engine, dir.path(), &[], &DEBUG);
        let mut c = server.conn();
        restore_all(&mut c);
        for key in KEYS {
            let ty = c.cmd(&["TYPE", key]).text();
            assert_eq!(
                ty,
                format!("MBbloom{}", if family(key) == "CF" { "CF" } else { "--" })
            );
            answers_as_redisbloom(&mut c, key, engine.name());
        }
        // Still working: adds, deletes.
        // (An add may answer 0 for a false positive, which is then not counted.)
        let card = c.line("BF.CARD bf-layers").int();
        let added: i64 = (0..20)
            .map(|i| c.line(&format!("BF.ADD bf-layers brand-new-{i}")).int())
            .sum();
        assert!(added >= 15, "{added} of 20 new items added");
        assert_eq!(c.line("BF.CARD bf-layers").int(), card + added);
        for i in 0..20 {
            let exists = c.line(&format!("BF.EXISTS bf-layers brand-new-{i}"));
            assert_eq!(exists, Resp::Int(1));
        }
        let (item, _, count) = key_answers("cf-grown").into_iter().find(|a| a.1).unwrap();
        assert_eq!(c.cmd(&["CF.DEL", "cf-grown", &item]), Resp::Int(1));
        assert_eq!(
            c.cmd(&["CF.COUNT", "cf-grown", &item]).int(),
            count.unwrap() - 1,
            "{item}"
        );
        assert_eq!(c.line("CF.ADD cf-grown fresh"), Resp::Int(1));
        assert_eq!(c.line("CF.EXISTS cf-grown fresh"), Resp::Int(1));
    }
}

#[test]
fn redisbloom_scandump_chunks_load_into_the_module() {
    for engine in Engine::available() {
        let dir = tempfile::tempdir().expect("a directory");
        let server = Server::start(engine, dir.path(), &[], &DEBUG);
        let mut c = server.conn();
        for key in KEYS {
            for (iter, chunk) in golden::chunks(&format!("{key}.scandump")) {
                let reply = c.cmd(&[
                    format!("{}.LOADCHUNK", family(key)).as_bytes(),
                    key.as_bytes(),
                    iter.to_string().as_bytes(),
                    &chunk,
                ]);
                assert_eq!(reply, Resp::Simple("OK".into()), "{key} {iter}");
            }
            answers_as_redisbloom(&mut c, key, engine.name());
            // The same bits as RESTORE of its DUMP gives.
            let payload = golden::read(&format!("{key}.dump"));
            assert_eq!(
                restore(&mut c, "again", &payload),
                Resp::Simple("OK".into())
            );
            assert_eq!(digest(&mut c, key), digest(&mut c, "again"), "{key}");
            c.line("DEL again");
        }
    }
}

#[test]
fn imported_keys_survive_the_rdb_the_aof_rewrite_and_dump_restore() {
    for engine in Engine::available() {
        let dir = tempfile::tempdir().expect("a directory");
        let extra = [
            "--appendonly",
            "yes",
            "--appendfsync",
            "always",
            "--aof-use-rdb-preamble",
            "no",
            "--dbfilename",
            "dump.rdb",
        ];
        let mut server = Server::start_raw(engine, dir.path(), common::args_with(&[], &extra));
        let mut c = server.conn();
        restore_all(&mut c);
        // Half a SCANDUMP load, which must survive too and finish.
        let chunks = golden::chunks("bf-layers.scandump");
        let half = chunks.len() / 2;
        for (iter, chunk) in &chunks[..half] {
            c.cmd::<&[u8]>(&[
                b"BF.LOADCHUNK",
                &b"partial"[..],
                iter.to_string().as_bytes(),
                chunk,
            ]);
        }
        let before = digests(&mut c);
        let name = engine.name();
        // The log as written (RESTORE and LOADCHUNK commands, replayed).
        server.kill();
        server.restart();
        let mut c = server.conn();
        assert_eq!(digests(&mut c), before, "{name} AOF replay");
        // Rewritten as LOADCHUNK commands of the module's encoding, replayed.
        common::rewrite_aof(&mut c, Duration::from_secs(20));
        server.kill();
        server.restart();
        let mut c = server.conn();
        assert_eq!(digests(&mut c), before, "{name} after BGREWRITEAOF");
        // An RDB file of the module's own encoding.
        assert_eq!(c.line("SAVE"), Resp::Simple("OK".into()));
        server.kill();
        std::fs::remove_dir_all(dir.path().join("appendonlydir")).ok();
        server.restart_with(common::args_with(&[], &["--dbfilename", "dump.rdb"]));
        let mut c = server.conn();
        assert_eq!(digests(&mut c), before, "{name} RDB");
        for key in KEYS {
            answers_as_redisbloom(&mut c, key, &format!("{name} RDB"));
        }
        for (iter, chunk) in &chunks[half..] {
            let reply = c.cmd::<&[u8]>(&[
                b"BF.LOADCHUNK",
                &b"partial"[..],
                iter.to_string().as_bytes(),
                chunk,
            ]);
            assert_eq!(reply, Resp::Simple("OK".into()));
        }
        assert_eq!(digest(&mut c, "partial"), digest(&mut c, "bf-layers"));
        // DUMP of an imported key (the module's encoding) restores into the same bits.
        for key in KEYS {
            let payload = c.cmd(&["DUMP", key]).bytes();
            assert_eq!(restore(&mut c, "copy", &payload), Resp::Simple("OK".into()));
            assert_eq!(digest(&mut c, "copy"), digest(&mut c, key), "{name} {key}");
            c.line("DEL copy");
        }
    }
}

#[test]
fn a_replica_holds_the_imported_keys() {
    for engine in Engine::available() {
        let dir = tempfile::tempdir().expect("a directory");
        let master = Server::start(engine, &dir.path().join("master"), &[], &DEBUG);
        let mut m = master.conn();
        // Before the replica (the full sync's RDB), and after it (the stream).
        restore(&mut m, "bf-small", &golden::read("bf-small.dump"));
        let replica = Server::start(
            engine,
            &dir.path().join("replica"),
            &[],
            &[
                "--replicaof",
                "127.0.0.1",
                &master.port.to_string(),
                DEBUG[0],
                DEBUG[1],
            ],
        );
        let mut r = replica.conn();
        common::replica_linked(&mut r, engine.name());
        for key in &KEYS[1..] {
            restore(&mut m, key, &golden::read(&format!("{key}.dump")));
        }
        m.line("BF.ADD bf-layers after");
        m.line(&format!("CF.DEL cf-grown {}", key_answers("cf-grown")[0].0));
        for (iter, chunk) in golden::chunks("cf-small.scandump") {
            m.cmd::<&[u8]>(&[
                b"CF.LOADCHUNK",
                &b"chunked"[..],
                iter.to_string().as_bytes(),
                &chunk,
            ]);
        }
        assert_eq!(m.line("WAIT 1 10000"), Resp::Int(1));
        for key in KEYS.iter().chain(&["chunked"]) {
            assert_eq!(
                digest(&mut m, key),
                digest(&mut r, key),
                "{} {key}",
                engine.name()
            );
        }
    }
}

#[test]
fn damaged_redisbloom_payloads_are_refused_with_redis_errors() {
    for engine in Engine::available() {
        let dir = tempfile::tempdir().expect("a directory");
        let server = Server::start(engine, dir.path(), &[], &DEBUG);
        let mut c = server.conn();
        let payload = golden::read("bf-layers.dump");
        let envelope = Resp::Error("ERR DUMP payload version or checksum are wrong".into());
        for cut in [2, payload.len() / 2, payload.len() - 1] {
            assert_eq!(restore(&mut c, "k", &payload[..cut]), envelope, "cut {cut}");
        }
        // A field changed under a right checksum: the module refuses the value, which Redis
        // answers as bad data (and the server stays up).
        let mut refused = 0;
        for at in (12..payload.len() - 10).step_by(97) {
            let mut p = payload.clone();
            p[at] = p[at].wrapping_add(0x41);
            let n = p.len();
            let crc = bloomkit::redisbloom::crc64_redis(&p[..n - 8]);
            p[n - 8..].copy_from_slice(&crc.to_le_bytes());
            match restore(&mut c, "k", &p) {
                Resp::Error(e) => {
                    assert_eq!(e, "ERR Bad data format", "{} at {at}", engine.name());
                    refused += 1;
                }
                _ => {
                    c.line("DEL k");
                }
            }
        }
        assert!(refused > 0);
        assert_eq!(c.line("PING"), Resp::Simple("PONG".into()));
    }
}

/// A chain of 12 links and a grown cuckoo filter built in a running RedisBloom, dumped live
/// and restored into the module: every item found.
#[test]
fn a_live_redisbloom_dump_restores_into_the_module() {
    let dir = tempfile::tempdir().expect("a directory");
    let Some(theirs) = Server::redisbloom(&dir.path().join("theirs"), &[]) else {
        return;
    };
    let ours = Server::start(Engine::Redis, &dir.path().join("ours"), &[], &[]);
    let (mut t, mut o) = (theirs.conn(), ours.conn());
    t.line("BF.RESERVE bf 0.01 10 EXPANSION 2");
    t.line("CF.RESERVE cf 100 EXPANSION 2");
    let items: Vec<String> = (0..30_000).map(|i| format!("item:{i}")).collect();
    for batch in items.chunks(1000) {
        let mut bf = vec!["BF.MADD".to_string(), "bf".into()];
        bf.extend(batch.iter().cloned());
        t.cmd(&bf);
        let mut cf = vec!["CF.INSERT".to_string(), "cf".into(), "ITEMS".into()];
        cf.extend(batch.iter().take(100).cloned());
        t.cmd(&cf);
    }
    let layers = t.line("BF.INFO bf FILTERS").array()[0].int();
    assert!(layers >= 10, "{layers} layers");
    for key in ["bf", "cf"] {
        let payload = t.cmd(&["DUMP", key]).bytes();
        assert_eq!(restore(&mut o, key, &payload), Resp::Simple("OK".into()));
        let info = |c: &mut Conn| c.cmd(&[format!("{}.INFO", key.to_uppercase()), key.into()]);
        let (theirs_info, ours_info) = (info(&mut t), info(&mut o));
        assert_eq!(
            ours_info.array()[..theirs_info.array().len()],
            theirs_info.array()[..],
            "{key}"
        );
    }
    for item in &items {
        assert_eq!(o.cmd(&["BF.EXISTS", "bf", item]), Resp::Int(1), "{item}");
    }
    for item in items.chunks(1000).flat_map(|b| b.iter().take(100)) {
        assert_eq!(o.cmd(&["CF.EXISTS", "cf", item]), Resp::Int(1), "{item}");
    }
}
