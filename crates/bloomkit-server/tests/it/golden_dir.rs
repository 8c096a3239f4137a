//! A data directory written by an earlier build (the golden snapshot and log in `tests/data/`,
//! from before the key model and the manifest) is served as it was: a real server opens it and
//! answers every item the files hold over the protocol, as `BF.EXISTS`/`CF.EXISTS` always did.
//! (`tests/it/persist.rs` checks the same files byte by byte at the persistence layer.)

use crate::common;

use std::fs;
use std::path::Path;

use bloomkit_server::config::Config;
use bloomkit_server::persist::snapshot::{SnapshotHeader, SnapshotWriter};
use bloomkit_server::persist::{log_file_name, SNAPSHOT_FILE};
use bloomkit_server::server::Server;
use common::TestServer;

fn data(name: &str) -> Vec<u8> {
    fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data")
            .join(name),
    )
    .unwrap()
}

/// A server on a directory holding `files` (name, golden fixture).
async fn serve(dir: &Path, files: &[(String, &str)]) -> TestServer {
    for (name, fixture) in files {
        fs::write(dir.join(name), data(fixture)).unwrap();
    }
    let config = Config {
        dir: dir.to_path_buf(),
        bind: "127.0.0.1".into(),
        port: 0,
        ..Config::default()
    };
    TestServer::run(Server::open(config).await.expect("open the old directory"))
}

/// The golden snapshot alone: its two filters, every item.
#[tokio::test]
async fn an_old_snapshot_answers_every_item_as_before() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), &[(SNAPSHOT_FILE.to_string(), "dump-v1.bks")]).await;
    let mut c = server.client().await;

    // The snapshot's filters: `b0`..`b79` in "bloom", `c0`..`c29` in "cuckoo\0".
    for i in 0..80 {
        let found: bool = redis::cmd("BF.EXISTS")
            .arg("bloom")
            .arg(format!("b{i}"))
            .query_async(&mut c)
            .await
            .unwrap();
        assert!(found, "b{i}");
    }
    for i in 0..30 {
        let found: bool = redis::cmd("CF.EXISTS")
            .arg(&b"cuckoo\0"[..])
            .arg(format!("c{i}"))
            .query_async(&mut c)
            .await
            .unwrap();
        assert!(found, "c{i}");
    }
    // The snapshot's filter keeps the key feed it was written with (bloomkit 0.1's, hash
    // algorithm 1 in its header, which a dump carries), and a byte string hashes alike under
    // both feeds: that is why every item above is found.
    let (_, first): (i64, Vec<u8>) = redis::cmd("BF.SCANDUMP")
        .arg("bloom")
        .arg(0)
        .query_async(&mut c)
        .await
        .unwrap();
    assert_eq!(first[..8], bloomkit::format::MAGIC);
    assert_eq!(
        first[12..14],
        [1, 0],
        "hash algorithm 1: bloomkit 0.1's feed"
    );
    server.stop().await.unwrap();
}

/// The golden log (generation 3, as it was written), after a snapshot of the generations
/// before it that holds no key (the golden snapshot holds keys the log creates again):
/// every write it holds.
#[tokio::test]
async fn an_old_log_replays_every_item_as_before() {
    let dir = tempfile::tempdir().unwrap();
    let header = SnapshotHeader {
        log_generation: 3,
        created_unix_ms: 1_700_000_000_000,
    };
    let empty = SnapshotWriter::new(Vec::new(), header)
        .unwrap()
        .finish()
        .unwrap();
    fs::write(dir.path().join(SNAPSHOT_FILE), empty).unwrap();
    let server = serve(dir.path(), &[(log_file_name(3), "appendonly-v1.aof")]).await;
    let mut c = server.client().await;
    // Its writes, binary items included.
    let found: Vec<bool> = redis::cmd("BF.MEXISTS")
        .arg("bloom")
        .arg(&["apple", "pear", "plum", ""][..])
        .query_async(&mut c)
        .await
        .unwrap();
    assert_eq!(found, [true; 4]);
    let found: bool = redis::cmd("CF.EXISTS")
        .arg(&b"binary\x00key"[..])
        .arg(&b"\r\n\xff"[..])
        .query_async(&mut c)
        .await
        .unwrap();
    assert!(found);
    let ttl: i64 = redis::cmd("PTTL")
        .arg("bloom")
        .query_async(&mut c)
        .await
        .unwrap();
    assert!(ttl > 0, "the logged PEXPIREAT: {ttl}");

    server.stop().await.unwrap();
}

/// The items of `tests/data/bf-classic-v1/answers` that answer "maybe", by key: every other
/// item `{key}0` to `{key}19999` answers "no".
fn classic_v1_answers() -> std::collections::BTreeMap<String, std::collections::HashSet<String>> {
    let text = String::from_utf8(data("bf-classic-v1/answers")).unwrap();
    let mut answers = std::collections::BTreeMap::<_, std::collections::HashSet<_>>::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let (key, item) = line.split_once('\t').expect("key<TAB>item");
        answers
            .entry(key.to_string())
            .or_default()
            .insert(item.to_string());
    }
    answers
}

/// A directory written by the build whose classic layers had only the first probe derivation
/// (`scripts/make_bf_fixtures.py`: a snapshot of five keys, then a log that adds to them and
/// creates two more, every creation logged with `LAYOUT CLASSIC` but one blocked) answers
/// every item, its false positives included, exactly as that build did.
#[tokio::test]
async fn bf_keys_of_the_first_classic_derivation_answer_as_before() {
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<(String, String)> = ["MANIFEST", "SYNCED", "appendonly.2.aof", "dump.bks"]
        .iter()
        .map(|f| (f.to_string(), format!("bf-classic-v1/{f}")))
        .collect();
    let files: Vec<(String, &str)> = files.iter().map(|(n, f)| (n.clone(), f.as_str())).collect();
    let server = serve(dir.path(), &files).await;
    let mut c = server.client().await;
    let answers = classic_v1_answers();
    assert_eq!(answers.len(), 7);
    for (key, maybe) in &answers {
        let items: Vec<String> = (0..20_000).map(|i| format!("{key}{i}")).collect();
        let found: Vec<bool> = redis::cmd("BF.MEXISTS")
            .arg(key)
            .arg(&items)
            .query_async(&mut c)
            .await
            .unwrap();
        let differ: Vec<&String> = items
            .iter()
            .zip(&found)
            .filter(|(item, &found)| found != maybe.contains(*item))
            .map(|(item, _)| item)
            .collect();
        assert!(
            differ.is_empty(),
            "{key}: {} differ: {differ:?}",
            differ.len()
        );
    }
    server.stop().await.unwrap();
}
