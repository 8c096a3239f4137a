//! `AF.*` through the real protocol: the CDN's admission on second request across
//! rotations, `TYPE`/`DUMP`/`RESTORE`/`COPY`, `af-*` defaults, and `PERIOD` rotations run by
//! the server's timer that a restart from the log and from a snapshot agree on.

use crate::common;

use std::time::{Duration, Instant};

use bloomkit_server::server::Server;
use common::{ok, persistent, query, TestServer};
use redis::{cmd, Value};

async fn int(c: &mut redis::aio::MultiplexedConnection, line: &str) -> i64 {
    match ok(c, line).await {
        Value::Int(i) => i,
        other => panic!("{line}: {other:?}"),
    }
}

/// `AF.INFO key`'s field `name`, from the RESP2 reply's name/value pairs.
async fn info_field(c: &mut redis::aio::MultiplexedConnection, key: &str, name: &str) -> Value {
    let Value::Array(pairs) = ok(c, &format!("AF.INFO {key}")).await else {
        panic!("an array")
    };
    let at = pairs
        .iter()
        .position(|v| matches!(v, Value::SimpleString(s) if s == name))
        .unwrap_or_else(|| panic!("{name} in {pairs:?}"));
    pairs[at + 1].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cdn_admits_on_the_second_request_within_the_window() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    assert_eq!(
        ok(&mut c, "AF.RESERVE edge 0.001 100000").await,
        Value::Okay
    );
    assert_eq!(
        ok(&mut c, "TYPE edge").await,
        Value::SimpleString("BKaging--".into())
    );
    assert_eq!(int(&mut c, "AF.ADD edge /a.jpg").await, 1, "first request");
    assert_eq!(
        int(&mut c, "AF.ADD edge /a.jpg").await,
        0,
        "second, same period"
    );
    assert_eq!(int(&mut c, "AF.ADD edge /b.jpg").await, 1);
    ok(&mut c, "AF.ROTATE edge").await;
    assert_eq!(
        int(&mut c, "AF.ADD edge /b.jpg").await,
        0,
        "second, next period"
    );
    ok(&mut c, "AF.ROTATE edge").await;
    ok(&mut c, "AF.ROTATE edge").await;
    assert_eq!(int(&mut c, "AF.EXISTS edge /a.jpg").await, 0);
    assert_eq!(
        int(&mut c, "AF.ADD edge /a.jpg").await,
        1,
        "second, after the window"
    );
    // Created on first add from the af-* defaults.
    ok(&mut c, "CONFIG SET af-generations 3").await;
    assert_eq!(
        ok(&mut c, "CONFIG GET af-generations").await,
        Value::Array(vec![
            Value::BulkString(b"af-generations".to_vec()),
            Value::BulkString(b"3".to_vec())
        ])
    );
    int(&mut c, "AF.ADD fresh x").await;
    assert_eq!(
        info_field(&mut c, "fresh", "Generations").await,
        Value::Int(3)
    );
    // Whole values: DUMP/RESTORE and COPY keep the generations.
    let Value::BulkString(dump) = ok(&mut c, "DUMP edge").await else {
        panic!()
    };
    let restored: Value = cmd("RESTORE")
        .arg("back")
        .arg(0)
        .arg(dump)
        .query_async(&mut c)
        .await
        .unwrap();
    assert_eq!(restored, Value::Okay);
    ok(&mut c, "COPY edge copied").await;
    for key in ["back", "copied"] {
        assert_eq!(
            int(&mut c, &format!("AF.EXISTS {key} /a.jpg")).await,
            1,
            "{key}"
        );
        assert_eq!(
            int(&mut c, &format!("AF.EXISTS {key} /b.jpg")).await,
            0,
            "{key}"
        );
        assert_eq!(
            ok(&mut c, &format!("TYPE {key}")).await,
            Value::SimpleString("BKaging--".into())
        );
    }
    assert!(query(&mut c, "BF.ADD edge x")
        .await
        .unwrap_err()
        .to_string()
        .contains("WRONGTYPE"));
    server.stop().await.unwrap();
}

/// What a key answers that a restart must keep: its generations' item counts and its bytes.
async fn state(c: &mut redis::aio::MultiplexedConnection, key: &str) -> (Value, Value) {
    (
        info_field(c, key, "Items per generation").await,
        ok(c, &format!("DUMP {key}")).await,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn period_rotations_are_logged_and_a_restart_agrees() {
    let dir = tempfile::tempdir().unwrap();
    let before = {
        let server = TestServer::run(Server::open(persistent(dir.path())).await.unwrap());
        let mut c = server.client().await;
        ok(&mut c, "AF.RESERVE timed 0.01 1000 GENERATIONS 3 PERIOD 1").await;
        ok(&mut c, "AF.MADD timed a b c").await;
        // Wait for the timer's rotation: `a` moves to the second generation (generous
        // bound; the timer runs every 100 ms).
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let counts = info_field(&mut c, "timed", "Items per generation").await;
            if counts == Value::Array(vec![Value::Int(0), Value::Int(3), Value::Int(0)]) {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "no rotation within 30 s: {counts:?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        // Change the period, so that no more rotations run before the restart: a fresh key
        // is compared, where the timed one may rotate again meanwhile.
        ok(&mut c, "AF.RESERVE still 0.01 1000 GENERATIONS 3").await;
        ok(&mut c, "AF.MADD still x y").await;
        ok(&mut c, "AF.ROTATE still AT 5").await;
        ok(&mut c, "AF.ADD still z").await;
        let still = state(&mut c, "still").await;
        let Value::Int(to_next) = info_field(&mut c, "timed", "Seconds to next rotation").await
        else {
            panic!()
        };
        assert!((0..=1).contains(&to_next), "{to_next}");
        server.stop().await.unwrap();
        still
    };
    // From the log: the rotation the timer ran is replayed as logged.
    let server = TestServer::run(Server::open(persistent(dir.path())).await.unwrap());
    let mut c = server.client().await;
    assert_eq!(state(&mut c, "still").await, before);
    assert_eq!(int(&mut c, "AF.EXISTS timed a").await, 1);
    ok(&mut c, "SAVE").await;
    server.stop().await.unwrap();
    // From the snapshot.
    let server = TestServer::run(Server::open(persistent(dir.path())).await.unwrap());
    let mut c = server.client().await;
    assert_eq!(state(&mut c, "still").await, before);
    server.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scandump_and_loadchunk_move_an_aging_key_and_the_log_keeps_it() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::run(Server::open(persistent(dir.path())).await.unwrap());
    let mut c = server.client().await;
    ok(&mut c, "AF.RESERVE src 0.01 1000 GENERATIONS 3 PERIOD 3600").await;
    ok(&mut c, "AF.MADD src a b").await;
    ok(&mut c, "AF.ROTATE src").await;
    ok(&mut c, "AF.ADD src c").await;
    let mut iter = 0i64;
    loop {
        let Value::Array(pair) = ok(&mut c, &format!("AF.SCANDUMP src {iter}")).await else {
            panic!()
        };
        let (Value::Int(next), Value::BulkString(data)) = (&pair[0], &pair[1]) else {
            panic!("{pair:?}")
        };
        if *next == 0 {
            break;
        }
        let loaded: Value = cmd("AF.LOADCHUNK")
            .arg("dst")
            .arg(*next)
            .arg(data.as_slice())
            .query_async(&mut c)
            .await
            .unwrap();
        assert_eq!(loaded, Value::Okay);
        iter = *next;
    }
    let before = state(&mut c, "src").await;
    assert_eq!(ok(&mut c, "DUMP dst").await, before.1, "the same bytes");
    assert_eq!(
        ok(&mut c, "TYPE dst").await,
        Value::SimpleString("BKaging--".into())
    );
    server.stop().await.unwrap();
    // The log replays the chunks.
    let server = TestServer::run(Server::open(persistent(dir.path())).await.unwrap());
    let mut c = server.client().await;
    assert_eq!(state(&mut c, "dst").await, before);
    server.stop().await.unwrap();
}
