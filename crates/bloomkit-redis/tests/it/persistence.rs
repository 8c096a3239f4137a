//! Persistence through the engine: RDB snapshots (`SAVE`), the append-only file (as logged
//! and after `BGREWRITEAOF`), restarts under other module arguments, a `kill -9` with
//! `appendfsync always`, and a damaged RDB, which stops loading with a clear log line.

use crate::common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bloomkit_testkit::wait;
use common::{digest, Conn, Engine, Resp, Server};

/// Keys of every kind of value, created from the defaults and explicitly: several layers,
/// deletions, an empty cuckoo filter, binary items, a restore half done.
fn fill(c: &mut Conn) -> Vec<String> {
    for i in 0..500 {
        c.line(&format!("BF.ADD scaled {i}"));
        c.line(&format!("CF.ADD cuckoo {i}"));
    }
    for i in 0..100 {
        c.line(&format!("CF.DEL cuckoo {i}"));
    }
    c.line("BF.RESERVE nonscaling 0.001 1000 NONSCALING");
    c.line("BF.MADD nonscaling a b c");
    c.line("BF.INSERT inserted CAPACITY 50 ERROR 0.05 EXPANSION 4 ITEMS x y z");
    c.line("CF.RESERVE empty 100 BUCKETSIZE 3 MAXITERATIONS 7 EXPANSION 2");
    c.line("CF.INSERT cinserted CAPACITY 200 ITEMS p q r");
    c.cmd(&[&b"BF.ADD"[..], b"binary", b"a\0b\r\n"]);
    // Half a restore: the header and one chunk of a two-chunk dump.
    let mut iter = 0;
    let mut chunks = Vec::new();
    loop {
        let reply = c.cmd(&["BF.SCANDUMP", "scaled", &iter.to_string()]).array();
        iter = reply[0].int();
        if iter == 0 {
            break;
        }
        chunks.push((iter, reply[1].bytes()));
    }
    let (header_iter, header) = &chunks[0];
    c.cmd(&[
        &b"BF.LOADCHUNK"[..],
        b"partial",
        header_iter.to_string().as_bytes(),
        header,
    ]);
    let body = &chunks[1].1;
    let half = &body[..body.len() / 2];
    let at = (half.len() + 1).to_string();
    assert_eq!(
        c.cmd(&[&b"BF.LOADCHUNK"[..], b"partial", at.as_bytes(), half]),
        Resp::Simple("OK".into())
    );
    [
        "scaled",
        "cuckoo",
        "nonscaling",
        "inserted",
        "empty",
        "cinserted",
        "binary",
        "partial",
    ]
    .map(String::from)
    .to_vec()
}

/// Each key's digest, and answers for items in and out.
fn state(c: &mut Conn, keys: &[String]) -> Vec<(String, String, Resp)> {
    keys.iter()
        .map(|k| {
            let family = if c.line(&format!("TYPE {k}")).text() == "MBbloomCF" {
                "CF"
            } else {
                "BF"
            };
            let answers = if k == "partial" {
                c.line(&format!("{family}.EXISTS {k} 1"))
            } else {
                c.line(&format!("{family}.MEXISTS {k} 1 150 499 a x p nope"))
            };
            (k.clone(), digest(c, k), answers)
        })
        .collect()
}

#[test]
fn save_and_restart_under_other_defaults_keeps_every_filter() {
    for engine in Engine::available() {
        let dir = tempfile::tempdir().expect("a directory");
        let extra = ["--save", "", "--dbfilename", "dump.rdb"];
        let mut server = Server::start_raw(engine, dir.path(), common::args_with(&[], &extra));
        let mut c = server.conn();
        let keys = fill(&mut c);
        let before = state(&mut c, &keys);
        assert_eq!(c.line("SAVE"), Resp::Simple("OK".into()));
        server.kill();
        server.restart_with(common::args_with(common::OTHER_DEFAULTS, &extra));
        let mut c = server.conn();
        assert_eq!(state(&mut c, &keys), before, "{}", engine.name());
        // The half restore goes on where it stopped.
        assert!(c.line("BF.EXISTS partial 1").is_error());
    }
}

#[test]
fn the_append_only_file_replays_and_rewrites_to_the_same_bits() {
    for engine in Engine::available() {
        for preamble in ["no", "yes"] {
            let dir = tempfile::tempdir().expect("a directory");
            let extra = [
                "--appendonly",
                "yes",
                "--appendfsync",
                "always",
                "--aof-use-rdb-preamble",
                preamble,
            ];
            let mut server = Server::start_raw(engine, dir.path(), common::args_with(&[], &extra));
            let mut c = server.conn();
            let keys = fill(&mut c);
            let before = state(&mut c, &keys);
            // The log as written, replayed under other defaults: creations were logged with
            // their parameters.
            server.kill();
            server.restart_with(common::args_with(common::OTHER_DEFAULTS, &extra));
            let mut c = server.conn();
            assert_eq!(state(&mut c, &keys), before, "{} replay", engine.name());
            // Rewritten (as LOADCHUNK commands without the RDB preamble), replayed again.
            common::rewrite_aof(&mut c, Duration::from_secs(20));
            server.kill();
            server.restart_with(common::args_with(&[], &extra));
            let mut c = server.conn();
            assert_eq!(
                state(&mut c, &keys),
                before,
                "{} after BGREWRITEAOF, preamble {preamble}",
                engine.name()
            );
        }
    }
}

#[test]
fn kill_9_with_appendfsync_always_loses_no_acknowledged_write() {
    for engine in Engine::available() {
        let dir = tempfile::tempdir().expect("a directory");
        let extra = ["--appendonly", "yes", "--appendfsync", "always"];
        let mut server = Server::start_raw(engine, dir.path(), common::args_with(&[], &extra));
        let acknowledged: Arc<Mutex<Vec<(String, usize)>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let writers: Vec<_> = ["BF", "CF"]
            .into_iter()
            .map(|family| {
                let (acked, stop, port) =
                    (Arc::clone(&acknowledged), Arc::clone(&stop), server.port);
                std::thread::spawn(move || {
                    let mut c = Conn::open(("127.0.0.1", port));
                    for i in 0..200_000 {
                        if stop.load(Ordering::Relaxed) {
                            break;
                        }
                        let key = format!("{family}:{}", i % 8);
                        match c.try_cmd(&[format!("{family}.ADD"), key.clone(), i.to_string()]) {
                            Ok(Resp::Int(_)) => acked.lock().unwrap().push((key, i)),
                            _ => break,
                        }
                    }
                })
            })
            .collect();
        // Killed in the middle of the writes, once a few hundred are acknowledged.
        assert!(
            wait::until(wait::GENEROUS, || acknowledged.lock().unwrap().len() > 300),
            "{}: the writers got going",
            engine.name()
        );
        server.kill();
        stop.store(true, Ordering::Relaxed);
        for w in writers {
            w.join().expect("a writer");
        }
        let acked = acknowledged.lock().unwrap().clone();
        assert!(
            acked.len() > 100,
            "{}: {} writes acknowledged",
            engine.name(),
            acked.len()
        );
        server.restart();
        let mut c = server.conn();
        for (key, item) in &acked {
            let family = &key[..2];
            let reply = c.cmd(&[format!("{family}.EXISTS"), key.clone(), item.to_string()]);
            assert_eq!(
                reply,
                Resp::Int(1),
                "{}: {key} {item} was acknowledged",
                engine.name()
            );
        }
    }
}

#[test]
fn a_damaged_rdb_stops_loading_with_a_reason() {
    for engine in Engine::available() {
        let dir = tempfile::tempdir().expect("a directory");
        let extra = [
            "--save",
            "",
            "--dbfilename",
            "dump.rdb",
            "--rdbcompression",
            "no",
        ];
        let mut server = Server::start_raw(engine, dir.path(), common::args_with(&[], &extra));
        let mut c = server.conn();
        c.line("BF.RESERVE victim 0.01 10000");
        for i in 0..1000 {
            c.line(&format!("BF.ADD victim {i}"));
        }
        c.line("SAVE");
        server.kill();
        let path = dir.path().join("dump.rdb");
        let mut rdb = std::fs::read(&path).expect("the RDB");
        let magic = rdb
            .windows(4)
            .position(|w| w == b"\x89BKF")
            .expect("the filter's encoding in the RDB");
        rdb[magic + 2000] ^= 0x10;
        std::fs::write(&path, rdb).expect("write the RDB back");
        let mut broken =
            Server::start_raw_unchecked(engine, dir.path(), common::args_with(&[], &extra));
        assert!(
            broken.wait_exit().is_some(),
            "{} refused to start",
            engine.name()
        );
        let log = broken.log();
        assert!(
            log.contains("bloomkit: cannot load the MBbloom-- value of key 'victim': the filter does not decode"),
            "{}: {log}",
            engine.name()
        );
    }
}

/// `tests/data/bf-classic-v1/`, written by the module whose classic layers had only the first
/// probe derivation (`scripts/make_bf_fixtures.py`): its file `name`.
fn classic_v1(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/bf-classic-v1")
        .join(name)
}

/// Checks every item `{key}0` to `{key}19999` of the fixture's seven keys against its
/// `answers` (the items that answered "maybe"; every other one answered "no").
fn check_classic_v1_answers(c: &mut Conn, what: &str) {
    let text = std::fs::read_to_string(classic_v1("answers")).expect("the answers");
    let mut maybe = std::collections::BTreeMap::<&str, std::collections::HashSet<&str>>::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let (key, item) = line.split_once('\t').expect("key<TAB>item");
        maybe.entry(key).or_default().insert(item);
    }
    assert_eq!(maybe.len(), 7);
    for (key, maybe) in &maybe {
        let items: Vec<String> = (0..20_000).map(|i| format!("{key}{i}")).collect();
        let mut args = vec!["BF.MEXISTS".to_string(), key.to_string()];
        args.extend(items.iter().cloned());
        let Resp::Array(found) = c.cmd(&args) else {
            panic!("{what}: BF.MEXISTS {key} answers an array");
        };
        let differ: Vec<&String> = items
            .iter()
            .zip(&found)
            .filter(|(item, found)| (found.int() == 1) != maybe.contains(item.as_str()))
            .map(|(item, _)| item)
            .collect();
        assert!(
            differ.is_empty(),
            "{what}, {key}: {} differ: {differ:?}",
            differ.len()
        );
    }
}

/// The fixture's RDB file, its append-only directory and its `DUMP` payloads each give back
/// the seven keys answering every item, false positives included, as that module did.
#[test]
fn bf_keys_of_the_first_classic_derivation_answer_as_before() {
    for engine in Engine::available() {
        let dir = tempfile::tempdir().expect("a directory");
        std::fs::copy(classic_v1("dump.rdb"), dir.path().join("dump.rdb")).expect("copy");
        let server = Server::start_raw(engine, dir.path(), common::args_with(&[], &[]));
        check_classic_v1_answers(&mut server.conn(), &format!("{} rdb", engine.name()));
        drop(server);

        let dir = tempfile::tempdir().expect("a directory");
        let aof = dir.path().join("appendonlydir");
        std::fs::create_dir(&aof).expect("the append-only directory");
        for name in [
            "appendonly.aof.1.base.rdb",
            "appendonly.aof.1.incr.aof",
            "appendonly.aof.manifest",
        ] {
            std::fs::copy(classic_v1(&format!("appendonlydir/{name}")), aof.join(name))
                .expect("copy");
        }
        let extra = ["--appendonly", "yes"];
        let server = Server::start_raw(engine, dir.path(), common::args_with(&[], &extra));
        check_classic_v1_answers(&mut server.conn(), &format!("{} aof", engine.name()));
        drop(server);

        let dir = tempfile::tempdir().expect("a directory");
        let server = Server::start_raw(engine, dir.path(), common::args_with(&[], &[]));
        let mut c = server.conn();
        for key in ["a", "b", "c", "d", "e", "f", "g"] {
            let text = std::fs::read_to_string(classic_v1(&format!("dump-{key}.hex"))).unwrap();
            let text = text.trim();
            let payload: Vec<u8> = (0..text.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&text[i..i + 2], 16).expect("hex"))
                .collect();
            let restored = c.cmd(&[&b"RESTORE"[..], key.as_bytes(), b"0", &payload]);
            assert_eq!(restored, Resp::Simple("OK".into()), "{key}");
        }
        check_classic_v1_answers(&mut c, &format!("{} dumps", engine.name()));
    }
}

/// `BF.MADD key` of `count` items from `from`, as arguments.
fn deep_madd(command: &str, key: &str, from: usize, count: usize) -> Vec<String> {
    let mut args = vec![command.to_string(), key.to_string()];
    args.extend((from..from + count).map(|i| format!("item:{i}")));
    args
}

/// Every one of the deep chain's `items` answers 1.
fn deep_all_found(c: &mut Conn, key: &str, items: usize) {
    for from in (0..items).step_by(1000) {
        let answers = c.cmd(&deep_madd("BF.MEXISTS", key, from, 1000)).array();
        assert!(
            answers.iter().all(|a| *a == Resp::Int(1)),
            "{key}: an item from {from} is missing"
        );
    }
}

/// A chain's layers and digest.
fn deep_state(c: &mut Conn, key: &str) -> (i64, String) {
    let layers = c.line(&format!("BF.INFO {key} FILTERS")).array()[0].int();
    (layers, digest(c, key))
}

/// `BF.RESERVE deep 0.01 100 EXPANSION 1` takes 30,000 items: the chain grows to about 300
/// layers, finds every item, and comes back the same from `DUMP`/`RESTORE`, the RDB file, the
/// append-only file as logged and as rewritten. (The differential test takes RedisBloom's
/// case, capacity 1,000 and 300,000 items, beside RedisBloom; the depth is the same here at a
/// tenth of the work, which each replay of the log repeats: every insert asks each older layer
/// first, and the engine must load within the tests' 20 s.)
#[test]
fn a_chain_of_hundreds_of_layers_survives_rdb_aof_and_dump() {
    const ITEMS: usize = 30_000;
    for engine in Engine::available() {
        let dir = tempfile::tempdir().expect("a directory");
        let aof = [
            "--appendonly",
            "yes",
            "--aof-use-rdb-preamble",
            "no",
            "--save",
            "",
            "--dbfilename",
            "dump.rdb",
        ];
        let mut server = Server::start_raw(engine, dir.path(), common::args_with(&[], &aof));
        let mut c = server.conn();
        c.line("BF.RESERVE deep 0.01 100 EXPANSION 1");
        for from in (0..ITEMS).step_by(1000) {
            let added = c.cmd(&deep_madd("BF.MADD", "deep", from, 1000)).array();
            assert!(
                added.len() == 1000 && !added.iter().any(Resp::is_error),
                "{}: BF.MADD of items from {from}: {:?}",
                engine.name(),
                added.last()
            );
        }
        let before = deep_state(&mut c, "deep");
        assert!(
            (250..=ITEMS as i64 / 100).contains(&before.0),
            "{}: {} layers",
            engine.name(),
            before.0
        );
        deep_all_found(&mut c, "deep", ITEMS);
        let dump = c.line("DUMP deep").bytes();
        c.cmd(&[&b"RESTORE"[..], b"copy", b"0", &dump]);
        assert_eq!(
            deep_state(&mut c, "copy"),
            before,
            "{}: RESTORE",
            engine.name()
        );
        assert_eq!(c.line("SAVE"), Resp::Simple("OK".into()));
        // The append-only file as logged.
        server.kill();
        server.restart_with(common::args_with(&[], &aof));
        let mut c = server.conn();
        assert_eq!(deep_state(&mut c, "deep"), before, "{}: AOF", engine.name());
        assert_eq!(deep_state(&mut c, "copy"), before, "{}: AOF", engine.name());
        // Rewritten.
        common::rewrite_aof(&mut c, Duration::from_secs(60));
        server.kill();
        server.restart_with(common::args_with(&[], &aof));
        let mut c = server.conn();
        assert_eq!(
            deep_state(&mut c, "deep"),
            before,
            "{}: rewritten AOF",
            engine.name()
        );
        // The RDB file alone.
        server.kill();
        let rdb = [
            "--appendonly",
            "no",
            "--save",
            "",
            "--dbfilename",
            "dump.rdb",
        ];
        server.restart_with(common::args_with(&[], &rdb));
        let mut c = server.conn();
        assert_eq!(deep_state(&mut c, "deep"), before, "{}: RDB", engine.name());
        deep_all_found(&mut c, "deep", ITEMS);
    }
}
