//! `BF.MERGE` and the info fields inside real engines: replies and errors as the command
//! layer words them, nothing changed by a refused merge, the merge replicated (a replica's
//! digests equal the master's) and replayed from the append-only file, `CROSSSLOT` for
//! keys in different slots of a cluster, and `BF.INFO`/`CF.INFO` with bloomkit's fields
//! after RedisBloom's.

use crate::common;

use bloomkit_testkit::wait;
use common::{digest, Conn, Engine, Resp, Server};

fn err(text: &str) -> Resp {
    Resp::Error(text.into())
}

fn ok() -> Resp {
    Resp::Simple("OK".into())
}

fn madd(c: &mut Conn, key: &str, items: std::ops::Range<u32>) {
    let mut words = vec!["BF.MADD".to_string(), key.to_string()];
    words.extend(items.map(|i| i.to_string()));
    assert!(!c.cmd(&words).is_error());
}

#[test]
fn merges_and_refusals_answer_as_the_command_layer_words_them() {
    for engine in Engine::available() {
        let dir = tempfile::tempdir().expect("a directory");
        let debug = ["--enable-debug-command", "yes"];
        let server = Server::start(engine, dir.path(), &[], &debug);
        let mut c = server.conn();
        for shape in [
            "0.01 100",
            "0.01 100 LAYOUT BLOCKED",
            "0.01 1000 NONSCALING",
        ] {
            c.line("FLUSHALL");
            assert_eq!(c.line(&format!("BF.RESERVE a {shape}")), ok());
            assert_eq!(c.line(&format!("BF.RESERVE b {shape}")), ok());
            madd(&mut c, "a", 0..500);
            madd(&mut c, "b", 10_000..10_500);
            assert_eq!(c.line("BF.MERGE m a b"), ok(), "{shape}");
            assert_eq!(c.line("TYPE m"), Resp::Simple("MBbloom--".into()));
            let mut probe = vec!["BF.MEXISTS".to_string(), "m".to_string()];
            probe.extend((0..500).chain(10_000..10_500).map(|i| i.to_string()));
            assert!(
                c.cmd(&probe).array().iter().all(|r| *r == Resp::Int(1)),
                "{shape}: a false negative"
            );
            let card = c.line("BF.CARD m").int();
            assert!((card - 1000).abs() < 100, "{shape}: {card}");
        }
        c.line("FLUSHALL");
        c.line("BF.RESERVE a 0.01 100");
        c.line("BF.RESERVE b 0.01 200");
        c.line("BF.ADD a x");
        c.line("SET s v");
        let before = digest(&mut c, "a");
        assert_eq!(
            c.line("BF.MERGE a b"),
            err("ERR filters are not compatible: initial capacity is 100 in 'a' and 200 in 'b'")
        );
        assert_eq!(
            c.line("BF.MERGE a s"),
            err("WRONGTYPE Operation against a key holding the wrong kind of value")
        );
        assert_eq!(
            c.line("BF.MERGE s a"),
            err("WRONGTYPE Operation against a key holding the wrong kind of value")
        );
        assert_eq!(
            c.line("BF.MERGE a nosuch"),
            err("ERR not found: no filter at source key 'nosuch'")
        );
        assert_eq!(
            digest(&mut c, "a"),
            before,
            "a refused merge changes nothing"
        );
        assert_eq!(c.line("EXISTS new"), Resp::Int(0));
        // A source named twice, and the destination among the sources.
        assert_eq!(c.line("BF.MERGE a a a"), ok());
        assert_eq!(digest(&mut c, "a"), before);
        assert_eq!(c.line("BF.MERGE new a a"), ok());
        assert_eq!(c.line("BF.EXISTS new x"), Resp::Int(1));
        // Key positions: every argument from the first.
        let keys = c.line("COMMAND GETKEYS BF.MERGE d s1 s2").array();
        assert_eq!(
            keys.iter().map(Resp::text).collect::<Vec<_>>(),
            ["d", "s1", "s2"]
        );
    }
}

#[test]
fn merges_replicate_and_replay_from_the_append_only_file() {
    for engine in Engine::available() {
        let dir = tempfile::tempdir().expect("a directory");
        let aof = [
            "--appendonly",
            "yes",
            "--appendfsync",
            "always",
            "--enable-debug-command",
            "yes",
        ];
        let mut master = Server::start(engine, &dir.path().join("master"), &[], &aof);
        let replica_of = [
            "--replicaof".to_string(),
            "127.0.0.1".into(),
            master.port.to_string(),
        ];
        let mut replica_args: Vec<&str> = replica_of.iter().map(String::as_str).collect();
        replica_args.extend(["--enable-debug-command", "yes"]);
        let replica = Server::start(engine, &dir.path().join("replica"), &[], &replica_args);
        let mut m = master.conn();
        let mut r = replica.conn();
        assert!(wait::until(wait::GENEROUS, || {
            r.line("INFO replication")
                .text()
                .contains("master_link_status:up")
        }));
        m.line("BF.RESERVE a 0.01 50");
        m.line("BF.RESERVE b 0.01 50");
        madd(&mut m, "a", 0..200);
        madd(&mut m, "b", 500..700);
        assert_eq!(m.line("BF.MERGE m a b"), ok());
        assert_eq!(m.line("BF.MERGE a b"), ok());
        // Changed after the merge: a replay must merge what `b` held then.
        madd(&mut m, "b", 900..950);
        assert_eq!(m.line("WAIT 1 10000"), Resp::Int(1));
        let digests: Vec<String> = ["m", "a", "b"].iter().map(|k| digest(&mut m, k)).collect();
        for (key, d) in ["m", "a", "b"].iter().zip(&digests) {
            assert_eq!(
                &digest(&mut r, key),
                d,
                "{}: the replica's {key}",
                engine.name()
            );
        }
        drop(m);
        // Killed: the append-only file alone holds the writes.
        master.kill();
        master.restart();
        let mut m = master.conn();
        for (key, d) in ["m", "a", "b"].iter().zip(&digests) {
            assert_eq!(
                &digest(&mut m, key),
                d,
                "{}: {key} after the AOF",
                engine.name()
            );
        }
    }
}

#[test]
fn keys_in_different_slots_are_crossslot_in_a_cluster() {
    for engine in Engine::available() {
        let dir = tempfile::tempdir().expect("a directory");
        let server = Server::start(engine, dir.path(), &[], &["--cluster-enabled", "yes"]);
        let mut c = server.conn();
        assert_eq!(c.line("CLUSTER ADDSLOTSRANGE 0 16383"), ok());
        assert!(wait::until(wait::GENEROUS, || {
            c.line("CLUSTER INFO").text().contains("cluster_state:ok")
        }));
        c.line("BF.ADD {t}a x");
        c.line("BF.ADD {u}b y");
        let crossslot = c.line("BF.MERGE {t}m {t}a {u}b");
        assert!(
            matches!(&crossslot, Resp::Error(e) if e.starts_with("CROSSSLOT")),
            "{crossslot:?}"
        );
        assert_eq!(c.line("EXISTS {t}m"), Resp::Int(0));
        assert_eq!(c.line("BF.MERGE {t}m {t}a"), ok());
    }
}

#[test]
fn info_carries_bloomkits_fields_after_redisblooms() {
    for engine in Engine::available() {
        let dir = tempfile::tempdir().expect("a directory");
        let server = Server::start(engine, dir.path(), &[], &[]);
        let mut c = server.conn();
        c.line("BF.RESERVE k 0.01 1000");
        madd(&mut c, "k", 0..500);
        let info = c.line("BF.INFO k").array();
        let names: Vec<String> = info.iter().step_by(2).map(Resp::text).collect();
        assert_eq!(names, bloomkit_commands::bloom::INFO_FIELDS);
        let fill: f64 = info[11].text().parse().unwrap();
        let estimate = info[13].int();
        let rate: f64 = info[15].text().parse().unwrap();
        // Half the planned items at 0.5% for the first layer: a third of the bits or so.
        assert!(fill > 0.1 && fill < 0.4, "{fill}");
        assert!((estimate - 500).abs() < 25, "{estimate}");
        assert!(rate > 0.0 && rate < 0.005, "{rate}");
        let mut r3 = server.conn();
        r3.line("HELLO 3");
        let Resp::Map(pairs) = r3.line("CF.INFO k2") else {
            // Missing key: an error; make one and ask again.
            r3.line("CF.ADD k2 a");
            let Resp::Map(pairs) = r3.line("CF.INFO k2") else {
                panic!("CF.INFO is a map in RESP3")
            };
            assert_eq!(pairs.len(), 10);
            assert_eq!(pairs[8].0, Resp::Simple("Load factor".into()));
            let Resp::Double(load) = &pairs[8].1 else {
                panic!("{:?}", pairs[8])
            };
            assert!(load.parse::<f64>().unwrap() > 0.0, "{load}");
            continue;
        };
        panic!("CF.INFO of a missing key answered {pairs:?}");
    }
}
