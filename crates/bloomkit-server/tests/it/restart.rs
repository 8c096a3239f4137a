//! Regression tests for restarts that a client could break: a data directory written by
//! one run must load in the next, into the same filters, whatever the clients sent.
//!
//! Each test serves a temporary directory with [`Server::open`], writes through redis-rs,
//! stops with `SHUTDOWN NOSAVE` (so the next start replays the log rather than loading a
//! snapshot), starts again on the same directory and checks what it holds.

use crate::common;

use std::path::Path;

use bloomkit_server::config::{AppendFsync, Config, DebugCommand};
use bloomkit_server::server::Server;
use redis::{cmd, Value};
use tokio::sync::oneshot;

/// A persistent server on `dir`: its address, the switch that stops it, and its task.
struct Running {
    url: String,
    stop: oneshot::Sender<()>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

async fn open(dir: &Path) -> std::io::Result<Running> {
    let config = Config {
        bind: "127.0.0.1".into(),
        port: 0,
        dir: dir.to_path_buf(),
        appendfsync: AppendFsync::Always,
        // `DEBUG RELOAD` below, as RedisBloom's test suite runs it.
        enable_debug_command: DebugCommand::Yes,
        ..Config::default()
    };
    let server = Server::open(config).await?;
    let url = format!("redis://{}", server.local_addr()?);
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(server.run_until(async move {
        let _ = stopped.await;
    }));
    Ok(Running { url, stop, task })
}

impl Running {
    async fn client(&self) -> redis::aio::MultiplexedConnection {
        redis::Client::open(self.url.as_str())
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap()
    }

    /// `SHUTDOWN NOSAVE`: the log alone holds the writes.
    async fn shutdown_nosave(self) {
        let mut c = self.client().await;
        let _: redis::RedisResult<Value> = cmd("SHUTDOWN").arg("NOSAVE").query_async(&mut c).await;
        drop(self.stop);
        tokio::time::timeout(common::TIMEOUT, self.task)
            .await
            .expect("server stops in time")
            .expect("server task")
            .expect("clean stop");
    }
}

async fn query(c: &mut redis::aio::MultiplexedConnection, words: &[&str]) -> Value {
    let mut command = cmd(words[0]);
    for w in &words[1..] {
        command.arg(*w);
    }
    command
        .query_async(c)
        .await
        .unwrap_or_else(|e| panic!("{words:?}: {e}"))
}

/// `BF.ADD expansion x` and `CF.ADD bucketsize x` used to log a creation
/// (`BF.RESERVE expansion 0.01 100 EXPANSION 2`) that RedisBloom's option search reads
/// with the key as the `EXPANSION` keyword: the server then refused to start. Keys named
/// `maxiterations` or `expansion` replayed into cuckoo filters of another shape.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_named_like_options_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let bf_keys = ["expansion", "NONSCALING", "Expansion"];
    let cf_keys = ["bucketsize", "maxiterations", "EXPANSION"];
    let mut infos = Vec::new();
    {
        let server = open(dir.path()).await.unwrap();
        let mut c = server.client().await;
        for key in bf_keys {
            for i in 0..300 {
                query(&mut c, &["BF.ADD", key, &i.to_string()]).await;
            }
            infos.push(query(&mut c, &["BF.INFO", key]).await);
        }
        for key in cf_keys {
            for i in 0..3000 {
                query(&mut c, &["CF.ADD", key, &i.to_string()]).await;
            }
            infos.push(query(&mut c, &["CF.INFO", key]).await);
        }
        server.shutdown_nosave().await;
    }
    let server = open(dir.path())
        .await
        .expect("the log written for these keys replays");
    let mut c = server.client().await;
    let mut again = Vec::new();
    for key in bf_keys {
        again.push(query(&mut c, &["BF.INFO", key]).await);
        assert_eq!(
            query(&mut c, &["BF.EXISTS", key, "299"]).await,
            Value::Int(1)
        );
    }
    for key in cf_keys {
        again.push(query(&mut c, &["CF.INFO", key]).await);
        assert_eq!(
            query(&mut c, &["CF.EXISTS", key, "2999"]).await,
            Value::Int(1)
        );
    }
    assert_eq!(again, infos, "every filter replays to the same shape");
    server.shutdown_nosave().await;
}

/// A `LOADCHUNK` whose last chunk does not decode removes the key being restored and
/// answers an error. It used to be logged verbatim, so its replay answered the same error
/// and start-up stopped on it: one bad restore made the data directory unloadable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corrupt_last_loadchunk_does_not_block_the_next_start() {
    let dir = tempfile::tempdir().unwrap();
    {
        let server = open(dir.path()).await.unwrap();
        let mut c = server.client().await;
        for family in ["BF", "CF"] {
            let src = format!("{family}-src");
            for i in 0..200 {
                query(&mut c, &[&format!("{family}.ADD"), &src, &i.to_string()]).await;
            }
            let mut chunks: Vec<(i64, Vec<u8>)> = Vec::new();
            let mut iter = 0i64;
            loop {
                let (next, data): (i64, Option<Vec<u8>>) = cmd(&format!("{family}.SCANDUMP"))
                    .arg(&src)
                    .arg(iter)
                    .query_async(&mut c)
                    .await
                    .unwrap();
                if next == 0 {
                    break;
                }
                chunks.push((next, data.unwrap_or_default()));
                iter = next;
            }
            // Damage the last byte (the checksum): only the last chunk can tell.
            if let Some((_, last)) = chunks.last_mut() {
                if let Some(byte) = last.last_mut() {
                    *byte ^= 0xff;
                }
            }
            let dst = format!("{family}-dst");
            let mut replies = Vec::new();
            for (iter, data) in &chunks {
                let reply: redis::RedisResult<Value> = cmd(&format!("{family}.LOADCHUNK"))
                    .arg(&dst)
                    .arg(*iter)
                    .arg(data.as_slice())
                    .query_async(&mut c)
                    .await;
                replies.push(reply.is_ok());
            }
            assert_eq!(
                replies.last(),
                Some(&false),
                "{family}: the last chunk fails"
            );
            assert_eq!(
                query(&mut c, &["EXISTS", &dst]).await,
                Value::Int(0),
                "{family}: the key being restored is gone"
            );
        }
        server.shutdown_nosave().await;
    }
    let server = open(dir.path())
        .await
        .expect("a refused restore does not stop start-up");
    let mut c = server.client().await;
    for family in ["BF", "CF"] {
        assert_eq!(
            query(&mut c, &["EXISTS", &format!("{family}-dst")]).await,
            Value::Int(0)
        );
        assert_eq!(
            query(
                &mut c,
                &[&format!("{family}.EXISTS"), &format!("{family}-src"), "7"]
            )
            .await,
            Value::Int(1)
        );
    }
    server.shutdown_nosave().await;
}

/// `RESTORE`, `COPY`, `CF.COMPACT` and `DEBUG RELOAD` change keys outside the filter
/// commands' usual paths: each must be logged so that the next start rebuilds exactly what
/// they left, expiries included.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restore_copy_compact_and_reload_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let checks: [&[&str]; 9] = [
        &["CF.DEBUG", "cf"],
        &["CF.DEBUG", "cf-copy"],
        &["BF.INFO", "restored"],
        &["BF.EXISTS", "restored", "77"],
        &["CF.COUNT", "cf", "item"],
        &["CF.COUNT", "cf-copy", "item"],
        &["EXISTS", "gone"],
        &["TYPE", "restored"],
        &["DBSIZE"],
    ];
    let mut before = Vec::new();
    let ttl;
    {
        let server = open(dir.path()).await.unwrap();
        let mut c = server.client().await;
        query(&mut c, &["CF.RESERVE", "cf", "2", "BUCKETSIZE", "1"]).await;
        let mut insert = cmd("CF.INSERT");
        insert.arg("cf").arg("ITEMS");
        for _ in 0..400 {
            insert.arg("item");
        }
        let _: Value = insert.query_async(&mut c).await.unwrap();
        query(&mut c, &["COPY", "cf", "cf-copy"]).await;
        // Fewer deletes than the 10% that compacts by itself, then an explicit compaction of
        // one of the two.
        for _ in 0..30 {
            query(&mut c, &["CF.DEL", "cf", "item"]).await;
            query(&mut c, &["CF.DEL", "cf-copy", "item"]).await;
        }
        query(&mut c, &["CF.COMPACT", "cf"]).await;
        for i in 0..100 {
            query(&mut c, &["BF.ADD", "source", &i.to_string()]).await;
        }
        let payload: Vec<u8> = cmd("DUMP").arg("source").query_async(&mut c).await.unwrap();
        let restore = |key: &str, ttl: u64, options: &[&str]| {
            let mut restore = cmd("RESTORE");
            restore
                .arg(key)
                .arg(ttl)
                .arg(payload.as_slice())
                .arg(options);
            restore
        };
        for restore in [
            restore("restored", 100_000_000, &[]),
            restore("gone", 0, &[]),
            // Replaced by a payload already expired: the key goes.
            restore("gone", 1, &["REPLACE", "ABSTTL"]),
        ] {
            let _: Value = restore.query_async(&mut c).await.unwrap();
        }
        assert_eq!(
            query(&mut c, &["DEBUG", "RELOAD", "NOSAVE"]).await,
            Value::Okay
        );
        for check in checks {
            before.push(query(&mut c, check).await);
        }
        ttl = query(&mut c, &["PTTL", "restored"]).await;
        server.shutdown_nosave().await;
    }
    let server = open(dir.path()).await.expect("the log replays");
    let mut c = server.client().await;
    let mut after = Vec::new();
    for check in checks {
        after.push(query(&mut c, check).await);
    }
    assert_eq!(after, before);
    assert_ne!(
        before[0], before[1],
        "the compaction is the original's alone"
    );
    // The same absolute expiry: what is left shrank only by the time the restart took.
    let (Value::Int(ttl), Value::Int(left)) = (ttl, query(&mut c, &["PTTL", "restored"]).await)
    else {
        panic!()
    };
    assert!(left <= ttl && ttl - left < 10_000, "{ttl} {left}");
    server.shutdown_nosave().await;
}

/// A client that waits up to a minute for a reply: each `BF.MADD` into a deep chain asks
/// hundreds of layers and waits for its fsync, which on a loaded machine can take longer than
/// redis-rs's default half second.
async fn patient(server: &Running) -> redis::aio::MultiplexedConnection {
    let mut c = server.client().await;
    c.set_response_timeout(std::time::Duration::from_secs(60));
    c
}

/// The items of the deep chain: `count` of them from `from`.
fn deep_items(from: usize, count: usize) -> Vec<String> {
    (from..from + count).map(|i| format!("item:{i}")).collect()
}

/// Every item of the deep chain answers 1, asked 1,000 at a time.
async fn all_found(c: &mut redis::aio::MultiplexedConnection, key: &str, items: usize) {
    for from in (0..items).step_by(1000) {
        let answers: Vec<i64> = cmd("BF.MEXISTS")
            .arg(key)
            .arg(deep_items(from, 1000))
            .query_async(c)
            .await
            .unwrap();
        assert!(
            answers.iter().all(|&a| a == 1),
            "{key}: an item from {from} is missing"
        );
    }
}

/// What a chain answers that must survive a restart: its layers and its bytes (`DUMP`).
async fn chain_state(c: &mut redis::aio::MultiplexedConnection, key: &str) -> (i64, Vec<u8>) {
    let layers: Vec<i64> = cmd("BF.INFO")
        .arg(key)
        .arg("FILTERS")
        .query_async(c)
        .await
        .unwrap();
    let dump: Vec<u8> = cmd("DUMP").arg(key).query_async(c).await.unwrap();
    (layers[0], dump)
}

/// `BF.RESERVE deep 0.01 100 EXPANSION 1` takes 30,000 items: the chain grows to about 300
/// layers (each halves the rate until the floor of 2^-64, where 64 probes stop), every item
/// is found, and the log, the snapshot and a `DUMP`/`RESTORE` each bring back the same chain,
/// byte for byte. (The module's differential test takes RedisBloom's case, capacity 1,000 and
/// 300,000 items, beside RedisBloom; the depth is the same at a tenth of the work, which a
/// log replay repeats: every insert asks each older layer first.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chain_of_hundreds_of_layers_survives_the_log_the_snapshot_and_dump() {
    const ITEMS: usize = 30_000;
    let dir = tempfile::tempdir().unwrap();
    let before = {
        let server = open(dir.path()).await.unwrap();
        let mut c = patient(&server).await;
        query(
            &mut c,
            &["BF.RESERVE", "deep", "0.01", "100", "EXPANSION", "1"],
        )
        .await;
        for from in (0..ITEMS).step_by(1000) {
            // An error would be the reply's last element, and fail the conversion.
            let added: Vec<i64> = cmd("BF.MADD")
                .arg("deep")
                .arg(deep_items(from, 1000))
                .query_async(&mut c)
                .await
                .unwrap_or_else(|e| panic!("BF.MADD of items from {from}: {e}"));
            assert_eq!(added.len(), 1000);
        }
        let state = chain_state(&mut c, "deep").await;
        assert!(
            (250..=ITEMS as i64 / 100).contains(&state.0),
            "{} layers",
            state.0
        );
        all_found(&mut c, "deep", ITEMS).await;
        // DUMP and RESTORE: the same bytes under another name.
        let _: () = cmd("RESTORE")
            .arg("copy")
            .arg(0)
            .arg(state.1.as_slice())
            .query_async(&mut c)
            .await
            .unwrap();
        all_found(&mut c, "copy", ITEMS).await;
        assert_eq!(chain_state(&mut c, "copy").await, state);
        server.shutdown_nosave().await;
        state
    };
    // The log alone.
    let server = open(dir.path()).await.expect("the log replays");
    let mut c = patient(&server).await;
    assert_eq!(
        chain_state(&mut c, "deep").await,
        before,
        "replayed from the log"
    );
    assert_eq!(
        chain_state(&mut c, "copy").await,
        before,
        "RESTORE replayed"
    );
    let _: () = cmd("SAVE").query_async(&mut c).await.unwrap();
    server.shutdown_nosave().await;
    // The snapshot.
    let server = open(dir.path()).await.expect("the snapshot loads");
    let mut c = patient(&server).await;
    assert_eq!(
        chain_state(&mut c, "deep").await,
        before,
        "from the snapshot"
    );
    all_found(&mut c, "deep", ITEMS).await;
    server.shutdown_nosave().await;
}
