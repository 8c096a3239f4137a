//! Keys moved from RedisBloom into `bloomkit serve` through the real protocol: `RESTORE` of
//! the `DUMP` payloads a real RedisBloom 2.8 wrote (the library's golden data,
//! `crates/bloomkit/tests/data/redisbloom/`), every item RedisBloom held found and every
//! answer RedisBloom gave given again, `BF.INFO`/`CF.INFO` as RedisBloom reported them, the
//! imported keys still working (adds, `CF.DEL`, `CF.COUNT`) and surviving a restart from the
//! log and from a snapshot; damaged payloads refused with Redis's errors.

use crate::common;

use bloomkit_server::server::Server;
use bloomkit_testkit::golden::{self, family, key_answers, key_info, KEYS};
use common::{persistent, TestServer};
use redis::aio::MultiplexedConnection;
use redis::{cmd, Value};

async fn restore(
    c: &mut MultiplexedConnection,
    key: &str,
    payload: &[u8],
) -> redis::RedisResult<Value> {
    cmd("RESTORE")
        .arg(key)
        .arg(0)
        .arg(payload)
        .query_async(c)
        .await
}

async fn info(c: &mut MultiplexedConnection, key: &str) -> Vec<(String, Value)> {
    let command = format!("{}.INFO", family(key));
    let Value::Array(flat) = cmd(&command).arg(key).query_async(c).await.unwrap() else {
        panic!("{command} {key}: a flat array in RESP2")
    };
    flat.chunks(2)
        .map(|p| (redis::from_redis_value(p[0].clone()).unwrap(), p[1].clone()))
        .collect()
}

/// `TYPE` answers RedisBloom's type name for the key's family.
async fn assert_type(c: &mut MultiplexedConnection, key: &str) {
    let ty: String = cmd("TYPE").arg(key).query_async(c).await.unwrap();
    let expected = if key.starts_with("cf") {
        "MBbloomCF"
    } else {
        "MBbloom--"
    };
    assert_eq!(ty, expected, "{key}");
}

/// Every item's answer as RedisBloom gave it, and `INFO` as RedisBloom reported it.
async fn answers_as_redisbloom(c: &mut MultiplexedConnection, key: &str) {
    let mut found = 0;
    for (item, exists, count) in key_answers(key) {
        let got: bool = cmd(&format!("{}.EXISTS", family(key)))
            .arg(key)
            .arg(&item)
            .query_async(c)
            .await
            .unwrap();
        assert_eq!(got, exists, "{key} {item}");
        found += usize::from(got);
        if let Some(count) = count {
            let got: i64 = cmd("CF.COUNT")
                .arg(key)
                .arg(&item)
                .query_async(c)
                .await
                .unwrap();
            assert_eq!(got, count, "{key} {item}");
        }
    }
    assert!(found > 0, "{key}: its items are found");
    let ours = info(c, key).await;
    for (name, expected) in key_info(key) {
        let expected = expected.map_or(Value::Nil, Value::Int);
        let got = ours
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.clone());
        assert_eq!(got, Some(expected), "{key} {name}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redisbloom_dumps_restore_with_every_answer_and_info_kept() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    for key in KEYS {
        let payload = golden::read(&format!("{key}.dump"));
        assert_eq!(
            restore(&mut c, key, &payload).await.unwrap(),
            Value::Okay,
            "{key}"
        );
        assert_type(&mut c, key).await;
        answers_as_redisbloom(&mut c, key).await;
    }
    // An existing key is BUSYKEY, as for any RESTORE.
    let busy = restore(&mut c, "bf-small", &golden::read("bf-small.dump"))
        .await
        .unwrap_err();
    assert_eq!(busy.code(), Some("BUSYKEY"));
    server.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn imported_keys_take_adds_and_deletes_with_redisbloom_hashing() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    restore(&mut c, "bf", &golden::read("bf-layers.dump"))
        .await
        .unwrap();
    restore(&mut c, "cf", &golden::read("cf-grown.dump"))
        .await
        .unwrap();
    let before: i64 = cmd("BF.CARD").arg("bf").query_async(&mut c).await.unwrap();
    let added: Vec<bool> = cmd("BF.MADD")
        .arg("bf")
        .arg(&["new-1", "new-2", "new-3"])
        .query_async(&mut c)
        .await
        .unwrap();
    let after: i64 = cmd("BF.CARD").arg("bf").query_async(&mut c).await.unwrap();
    assert_eq!(after - before, added.iter().filter(|&&a| a).count() as i64);
    let all: Vec<bool> = cmd("BF.MEXISTS")
        .arg("bf")
        .arg(&["new-1", "new-2", "new-3"])
        .query_async(&mut c)
        .await
        .unwrap();
    assert_eq!(all, [true; 3]);
    // A held item deleted once per copy, counted down to none.
    let (item, _, count) = key_answers("cf-grown").into_iter().find(|a| a.1).unwrap();
    let count = count.unwrap();
    for left in (0..count).rev() {
        let removed: bool = cmd("CF.DEL")
            .arg("cf")
            .arg(&item)
            .query_async(&mut c)
            .await
            .unwrap();
        assert!(removed);
        let now: i64 = cmd("CF.COUNT")
            .arg("cf")
            .arg(&item)
            .query_async(&mut c)
            .await
            .unwrap();
        assert!(
            now <= left.max(0) + 1,
            "{item}: {now} after deleting down to {left}"
        );
    }
    let added: bool = cmd("CF.ADD")
        .arg("cf")
        .arg("fresh")
        .query_async(&mut c)
        .await
        .unwrap();
    assert!(added);
    let there: bool = cmd("CF.EXISTS")
        .arg("cf")
        .arg("fresh")
        .query_async(&mut c)
        .await
        .unwrap();
    assert!(there);
    let deleted: i64 = match info(&mut c, "cf")
        .await
        .into_iter()
        .find(|(n, _)| n == "Number of items deleted")
    {
        Some((_, Value::Int(n))) => n,
        other => panic!("{other:?}"),
    };
    assert_eq!(deleted, count);
    // A reserve on an imported key is refused as on any existing key.
    let exists = cmd("BF.RESERVE")
        .arg("bf")
        .arg(0.01)
        .arg(100)
        .query_async::<Value>(&mut c)
        .await;
    assert_eq!(exists.unwrap_err().detail(), Some("item exists"));
    server.stop().await.unwrap();
}

async fn dumps(c: &mut MultiplexedConnection) -> Vec<Value> {
    let mut out = Vec::new();
    for key in KEYS {
        out.push(cmd("DUMP").arg(key).query_async(c).await.unwrap());
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn imported_keys_survive_a_restart_from_the_log_and_from_a_snapshot() {
    for snapshot in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let before = {
            let server = TestServer::run(Server::open(persistent(dir.path())).await.unwrap());
            let mut c = server.client().await;
            for key in KEYS {
                restore(&mut c, key, &golden::read(&format!("{key}.dump")))
                    .await
                    .unwrap();
            }
            let _: Value = cmd("BF.ADD")
                .arg("bf-small")
                .arg("later")
                .query_async(&mut c)
                .await
                .unwrap();
            let _: Value = cmd("CF.DEL")
                .arg("cf-small")
                .arg(&key_answers("cf-small")[0].0)
                .query_async(&mut c)
                .await
                .unwrap();
            if snapshot {
                let _: Value = cmd("SAVE").query_async(&mut c).await.unwrap();
            }
            let dumps = dumps(&mut c).await;
            let _ = cmd("SHUTDOWN")
                .arg("NOSAVE")
                .query_async::<Value>(&mut c)
                .await;
            server.finished().await.unwrap();
            dumps
        };
        let server = TestServer::run(Server::open(persistent(dir.path())).await.unwrap());
        let mut c = server.client().await;
        assert_eq!(dumps(&mut c).await, before, "snapshot: {snapshot}");
        let later: bool = cmd("BF.EXISTS")
            .arg("bf-small")
            .arg("later")
            .query_async(&mut c)
            .await
            .unwrap();
        assert!(later);
        answers_as_redisbloom(&mut c, "bf-layers").await;
        server.stop().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn damaged_redisbloom_payloads_are_refused_with_redis_errors() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let payload = golden::read("cf-grown.dump");
    let refused = |r: redis::RedisResult<Value>| {
        let e = r.unwrap_err();
        format!("{} {}", e.code().unwrap_or(""), e.detail().unwrap_or(""))
    };
    // Cut short, or a bit flipped anywhere: the envelope's error.
    for cut in [1, 2, 10, payload.len() / 2, payload.len() - 1] {
        let got = refused(restore(&mut c, "k", &payload[..cut]).await);
        assert_eq!(
            got, "ERR DUMP payload version or checksum are wrong",
            "cut {cut}"
        );
    }
    for at in [1, 12, payload.len() / 2, payload.len() - 11] {
        let mut p = payload.clone();
        p[at] ^= 0x10;
        let got = refused(restore(&mut c, "k", &p).await);
        assert_eq!(
            got, "ERR DUMP payload version or checksum are wrong",
            "at {at}"
        );
    }
    // A field changed and the CRC made to match: the value's own checks refuse it. The
    // number of sub-filters it claims is the value's first fields' business; any byte of
    // the value body changed makes the layout disagree.
    let body_len = payload.len() - 10;
    let mut refused_data = 0;
    for at in (12..body_len).step_by(7) {
        let mut p = payload.clone();
        p[at] = p[at].wrapping_add(0x41);
        let crc = bloomkit::redisbloom::crc64_redis(&p[..payload.len() - 8]);
        let n = p.len();
        p[n - 8..].copy_from_slice(&crc.to_le_bytes());
        if let Err(e) = restore(&mut c, "k", &p).await {
            assert_eq!(
                format!("{} {}", e.code().unwrap_or(""), e.detail().unwrap_or("")),
                "ERR Bad data format"
            );
            refused_data += 1;
        } else {
            // A changed slot is still a valid filter; it must hold what it claims.
            let _: Value = cmd("DEL").arg("k").query_async(&mut c).await.unwrap();
        }
    }
    assert!(refused_data > 0);
    let missing: i64 = cmd("EXISTS").arg("k").query_async(&mut c).await.unwrap();
    assert_eq!(missing, 0);
    server.stop().await.unwrap();
}

async fn loadchunk(
    c: &mut MultiplexedConnection,
    key: &str,
    iter: i64,
    chunk: &[u8],
) -> redis::RedisResult<Value> {
    cmd(&format!("{}.LOADCHUNK", family(key)))
        .arg(key)
        .arg(iter)
        .arg(chunk)
        .query_async(c)
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redisbloom_scandump_chunks_load_with_every_answer_and_info_kept() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    for key in KEYS {
        let chunks = golden::chunks(&format!("{key}.scandump"));
        assert!(chunks.len() >= 2, "{key}: a header and data");
        for (n, (iter, chunk)) in chunks.iter().enumerate() {
            assert_eq!(
                loadchunk(&mut c, key, *iter, chunk).await.unwrap(),
                Value::Okay,
                "{key}"
            );
            if n + 1 < chunks.len() {
                // Not answerable until the last chunk is in, but already of its type.
                assert_type(&mut c, key).await;
            }
        }
        answers_as_redisbloom(&mut c, key).await;
        // The same key as RESTORE makes it.
        restore(&mut c, "via-dump", &golden::read(&format!("{key}.dump")))
            .await
            .unwrap();
        let a: Vec<u8> = cmd("DUMP").arg(key).query_async(&mut c).await.unwrap();
        let b: Vec<u8> = cmd("DUMP")
            .arg("via-dump")
            .query_async(&mut c)
            .await
            .unwrap();
        assert_eq!(a, b, "{key}");
        let _: Value = cmd("DEL")
            .arg("via-dump")
            .query_async(&mut c)
            .await
            .unwrap();
    }
    server.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_half_loaded_redisbloom_key_survives_a_restart_and_finishes() {
    for snapshot in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let chunks = golden::chunks("bf-layers.scandump");
        let half = chunks.len() / 2;
        {
            let server = TestServer::run(Server::open(persistent(dir.path())).await.unwrap());
            let mut c = server.client().await;
            for (iter, chunk) in &chunks[..half] {
                loadchunk(&mut c, "bf-layers", *iter, chunk).await.unwrap();
            }
            let early = cmd("BF.EXISTS")
                .arg("bf-layers")
                .arg("b0")
                .query_async::<Value>(&mut c)
                .await;
            assert!(early
                .unwrap_err()
                .detail()
                .unwrap()
                .contains("still being restored"));
            if snapshot {
                let _: Value = cmd("SAVE").query_async(&mut c).await.unwrap();
            }
            let _ = cmd("SHUTDOWN")
                .arg("NOSAVE")
                .query_async::<Value>(&mut c)
                .await;
            server.finished().await.unwrap();
        }
        let server = TestServer::run(Server::open(persistent(dir.path())).await.unwrap());
        let mut c = server.client().await;
        for (iter, chunk) in &chunks[half..] {
            loadchunk(&mut c, "bf-layers", *iter, chunk).await.unwrap();
        }
        answers_as_redisbloom(&mut c, "bf-layers").await;
        server.stop().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_redisbloom_chunks_are_refused_with_redisbloom_errors() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let detail = |r: redis::RedisResult<Value>| {
        let e = r.unwrap_err();
        format!("{} {}", e.code().unwrap_or(""), e.detail().unwrap_or(""))
    };
    let bf = golden::chunks("bf-layers.scandump");
    let cf = golden::chunks("cf-grown.scandump");
    // A header cut short, or claiming another number of links than it has room for.
    let mut header = bf[0].1.clone();
    header[8] ^= 1;
    for bad in [&bf[0].1[..19], &bf[0].1[..bf[0].1.len() - 1], &header[..]] {
        assert_eq!(
            detail(loadchunk(&mut c, "bf", 1, bad).await),
            "ERR received bad data"
        );
        assert_eq!(
            detail(loadchunk(&mut c, "cf", 1, bad).await),
            "Invalid header"
        );
    }
    assert_eq!(cmd("DBSIZE").query_async::<i64>(&mut c).await.unwrap(), 0);
    // Chunks out of order, or past the end.
    loadchunk(&mut c, "bf", bf[0].0, &bf[0].1).await.unwrap();
    loadchunk(&mut c, "cf", cf[0].0, &cf[0].1).await.unwrap();
    let (iter, chunk) = &bf[1];
    assert_eq!(
        detail(loadchunk(&mut c, "bf", iter + 5, chunk).await),
        "ERR received bad data"
    );
    let (iter, chunk) = &cf[1];
    assert_eq!(
        detail(loadchunk(&mut c, "cf", iter + 5, chunk).await),
        "Couldn't load chunk!"
    );
    server.stop().await.unwrap();
}
