//! Replication: a master and a replica with other defaults, through a full sync (the
//! module's RDB encoding) and the live stream (the logged form of each write): every key's
//! `DEBUG DIGEST-VALUE` is equal on both, and so is the whole data set's `DEBUG DIGEST`.

use crate::common;

use common::{digest, Conn, Engine, Resp, Server};

fn keys(c: &mut Conn) -> Vec<String> {
    let mut keys: Vec<String> = c.line("KEYS *").array().iter().map(Resp::text).collect();
    keys.sort();
    keys
}

/// Waits for the replica to have everything the master wrote.
fn synced(master: &mut Conn) {
    let reply = master.line("WAIT 1 10000");
    assert_eq!(reply, Resp::Int(1), "the replica acknowledged the stream");
}

fn same_everywhere(master: &mut Conn, replica: &mut Conn, what: &str) {
    let (mk, rk) = (keys(master), keys(replica));
    assert_eq!(mk, rk, "{what}: the same keys");
    for key in &mk {
        assert_eq!(
            digest(master, key),
            digest(replica, key),
            "{what}: the digest of {key}"
        );
    }
    assert_eq!(
        master.line("DEBUG DIGEST"),
        replica.line("DEBUG DIGEST"),
        "{what}: the data set's digest"
    );
}

#[test]
fn a_replica_with_other_defaults_holds_the_same_bits() {
    for engine in Engine::available() {
        let dir = tempfile::tempdir().expect("a directory");
        let master = Server::start_raw(
            engine,
            &dir.path().join("master"),
            common::args_with(&[], &[]),
        );
        let mut m = master.conn();
        // Before the replica: reaches it in the full sync.
        for i in 0..300 {
            m.line(&format!("BF.ADD synced {i}"));
            m.line(&format!("CF.ADD csynced {i}"));
        }
        m.line("CF.DEL csynced 5");
        m.line("BF.RESERVE explicit 0.001 1000 NONSCALING");

        let replica_args = common::args_with(
            common::OTHER_DEFAULTS,
            &["--replicaof", "127.0.0.1", &master.port.to_string()],
        );
        let replica = Server::start_raw(engine, &dir.path().join("replica"), replica_args);
        let mut r = replica.conn();
        common::replica_linked(&mut r, engine.name());
        synced(&mut m);
        same_everywhere(&mut m, &mut r, &format!("{} full sync", engine.name()));

        // The live stream: keys created from the master's defaults, which the replica's
        // differ from; inserts, deletes, a transaction, a restore, binary items.
        for i in 0..200 {
            m.line(&format!("BF.ADD live {i}"));
            m.line(&format!("CF.ADDNX clive {i}"));
        }
        m.line("BF.INSERT inserted EXPANSION 3 ITEMS a b c");
        m.line("CF.INSERT cinserted CAPACITY 500 ITEMS a b c");
        m.line("CF.INSERTNX cinserted ITEMS a d");
        m.line("CF.DEL clive 7");
        m.cmd(&[&b"BF.MADD"[..], b"binary", b"a\0b", b"\r\n"]);
        m.line("MULTI");
        m.line("BF.ADD tx 1");
        m.line("CF.ADD ctx 1");
        m.line("EXEC");
        let mut iter = 0;
        loop {
            let pair = m.cmd(&["BF.SCANDUMP", "live", &iter.to_string()]).array();
            iter = pair[0].int();
            if iter == 0 {
                break;
            }
            let data = pair[1].bytes();
            m.cmd(&[
                &b"BF.LOADCHUNK"[..],
                b"restored",
                iter.to_string().as_bytes(),
                &data,
            ]);
        }
        synced(&mut m);
        same_everywhere(&mut m, &mut r, &format!("{} live stream", engine.name()));
        // The replica holds the master's parameters (capacity 100, expansion 2: two layers
        // for 200 items), not its own defaults (7, non-scaling).
        assert_eq!(
            r.line("BF.INFO live CAPACITY"),
            Resp::Array(vec![Resp::Int(300)])
        );
        assert_eq!(r.line("BF.INFO live"), m.line("BF.INFO live"));
        assert_eq!(r.line("BF.EXISTS restored 150"), Resp::Int(1));
        // And refuses writes of its own, as any replica.
        assert!(r.line("BF.ADD live new").is_error());
    }
}
