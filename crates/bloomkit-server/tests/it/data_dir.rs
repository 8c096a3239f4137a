//! The server on a real data directory, in this process: what `INFO persistence` reports
//! about the files, and automatic snapshots that compact the log while clients write.

use crate::common;

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use bloomkit_server::config::Config;
use bloomkit_server::persist::Persistence;
use bloomkit_server::server::Server;
use bloomkit_server::shared::Shared;
use common::{resp, TestServer};

fn config(dir: &Path) -> Config {
    common::persistent(dir)
}

/// Serves `dir`, tuning its persistence with `tune` first.
async fn open(dir: &Path, tune: impl FnOnce(&Persistence) + Send + 'static) -> TestServer {
    TestServer::run(Server::open_with(config(dir), tune).await.expect("open"))
}

/// `INFO persistence` as name/value pairs, asserting that no name appears twice.
async fn info_persistence(con: &mut redis::aio::MultiplexedConnection) -> HashMap<String, String> {
    let text: String = redis::cmd("INFO")
        .arg("persistence")
        .query_async(con)
        .await
        .unwrap();
    let mut fields = HashMap::new();
    for line in text
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        let (name, value) = line.split_once(':').expect("name:value");
        let previous = fields.insert(name.to_string(), value.to_string());
        assert!(previous.is_none(), "{name} twice in {text}");
    }
    fields
}

fn figure(fields: &HashMap<String, String>, name: &str) -> u64 {
    fields
        .get(name)
        .unwrap_or_else(|| panic!("no {name} in {fields:?}"))
        .parse()
        .unwrap_or_else(|_| panic!("{name} is not a number: {fields:?}"))
}

/// The bytes in the directory's log files.
fn log_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_name().to_string_lossy().starts_with("appendonly."))
        .map(|e| e.metadata().unwrap().len())
        .sum()
}

/// Log generations present, sorted.
fn generations(dir: &Path) -> Vec<u64> {
    let mut found: Vec<u64> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().to_string_lossy().to_string();
            name.strip_prefix("appendonly.")?
                .strip_suffix(".aof")?
                .parse()
                .ok()
        })
        .collect();
    found.sort_unstable();
    found
}

/// Stops `server` with `SHUTDOWN NOSAVE` (so only what is already on disk counts) and
/// waits until its state is gone and the directory's lock with it.
async fn stop_without_saving(server: TestServer) {
    let shared: Weak<Shared> = Arc::downgrade(&server.shared);
    let mut c = server.raw().await;
    c.send(&resp(&["SHUTDOWN", "NOSAVE"])).await;
    server.finished().await.unwrap();
    let deadline = Instant::now() + common::TIMEOUT;
    while shared.strong_count() > 0 {
        assert!(Instant::now() < deadline, "the server's state outlived it");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

async fn poll_until(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + common::TIMEOUT;
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test]
async fn info_persistence_reports_the_files_own_figures() {
    let dir = tempfile::tempdir().unwrap();
    let server = open(dir.path(), |_| {}).await;
    let mut con = server.client().await;
    let fields = info_persistence(&mut con).await;
    assert_eq!(fields["aof_enabled"], "1");
    assert_eq!(fields["appendfsync"], "always");
    assert_eq!(fields["aof_last_write_status"], "ok");
    assert_eq!(fields["rdb_last_bgsave_time_sec"], "-1", "no snapshot yet");
    assert_eq!(figure(&fields, "aof_base_size"), 0);
    assert_eq!(figure(&fields, "aof_current_size"), log_bytes(dir.path()));
    assert_eq!(figure(&fields, "rdb_changes_since_last_save"), 0);

    // 1 creation + 50 items, and 10 no-ops that log nothing.
    for i in 0..60 {
        let _: bool = redis::cmd("BF.ADD")
            .arg("k")
            .arg(i % 50)
            .query_async(&mut con)
            .await
            .unwrap();
    }
    let fields = info_persistence(&mut con).await;
    assert_eq!(figure(&fields, "rdb_changes_since_last_save"), 51);
    let current = figure(&fields, "aof_current_size");
    assert_eq!(current, log_bytes(dir.path()));
    assert!(current > 50 * 30, "{current}");
    let fsyncs = figure(&fields, "aof_fsyncs");
    assert!((1..=51).contains(&fsyncs), "{fsyncs} fsyncs for 51 records");

    let () = redis::cmd("SAVE").query_async(&mut con).await.unwrap();
    let fields = info_persistence(&mut con).await;
    assert_eq!(figure(&fields, "rdb_changes_since_last_save"), 0);
    assert_eq!(
        figure(&fields, "aof_base_size"),
        std::fs::metadata(dir.path().join("dump.bks"))
            .unwrap()
            .len()
    );
    assert_eq!(figure(&fields, "aof_current_size"), log_bytes(dir.path()));
    assert!(
        figure(&fields, "aof_current_size") < current,
        "the log was compacted"
    );
    assert_eq!(fields["rdb_last_bgsave_status"], "ok");
    assert_eq!(fields["rdb_bgsave_in_progress"], "0");
    assert_ne!(fields["rdb_last_bgsave_time_sec"], "-1");
    drop(con);
    server.stop().await.unwrap();
}

#[tokio::test]
async fn the_log_is_compacted_into_a_snapshot_automatically_and_restart_finds_everything() {
    const ITEMS: usize = 3000;
    let dir = tempfile::tempdir().unwrap();
    // 16 KiB instead of 64 MiB: a few hundred commands.
    let server = open(dir.path(), |p| p.set_auto_snapshot_min_bytes(16 << 10)).await;
    let mut con = server.client().await;
    for chunk in (0..ITEMS).collect::<Vec<_>>().chunks(100) {
        let mut pipe = redis::pipe();
        for i in chunk {
            pipe.cmd("BF.ADD").arg("bloom").arg(format!("item{i}"));
            pipe.cmd("CF.ADD").arg("cuckoo").arg(format!("item{i}"));
        }
        let _: Vec<bool> = pipe.query_async(&mut con).await.unwrap();
    }
    // The server takes the snapshot on its own, a tick later: the first generation goes,
    // and the snapshot covers it.
    let path = dir.path().to_path_buf();
    poll_until("an automatic snapshot", || {
        path.join("dump.bks").is_file() && generations(&path).first() > Some(&1)
    })
    .await;
    let fields = info_persistence(&mut con).await;
    assert!(figure(&fields, "aof_base_size") > 0);
    assert!(
        figure(&fields, "rdb_changes_since_last_save") < 2 * ITEMS as u64,
        "{fields:?}"
    );
    // And the writes after it go to the log.
    let _: bool = redis::cmd("BF.ADD")
        .arg("bloom")
        .arg("after")
        .query_async(&mut con)
        .await
        .unwrap();
    let card_before: i64 = redis::cmd("BF.CARD")
        .arg("bloom")
        .query_async(&mut con)
        .await
        .unwrap();
    drop(con);
    stop_without_saving(server).await;

    // The snapshot plus the log after it hold everything.
    let server = open(dir.path(), |_| {}).await;
    let mut con = server.client().await;
    let items: Vec<String> = (0..ITEMS).map(|i| format!("item{i}")).collect();
    let found: Vec<bool> = redis::cmd("BF.MEXISTS")
        .arg("bloom")
        .arg(&items)
        .arg("after")
        .query_async(&mut con)
        .await
        .unwrap();
    assert!(found.iter().all(|&f| f), "a Bloom item was lost");
    let found: Vec<bool> = redis::cmd("CF.MEXISTS")
        .arg("cuckoo")
        .arg(&items)
        .query_async(&mut con)
        .await
        .unwrap();
    assert!(found.iter().all(|&f| f), "a cuckoo item was lost");
    let card: i64 = redis::cmd("BF.CARD")
        .arg("bloom")
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(card, card_before);
    // BF.ADD counts only items that were new to the filter: false positives are not.
    assert!(
        card > ITEMS as i64 * 95 / 100 && card <= ITEMS as i64 + 1,
        "{card}"
    );
    drop(con);
    server.stop().await.unwrap();
}
