//! `BF.MERGE` and the info fields through the real protocol: exact replies over raw RESP,
//! every `BF` shape merged, incompatible filters refused with nothing changed, the merge
//! replayed from the log after a restart into the same bits, and `BF.INFO`'s added fields
//! in RESP2 and RESP3.

use crate::common;

use bloomkit_server::server::Server;
use common::{ok, persistent, query, resp, TestServer};
use redis::{cmd, Value};

async fn fill(c: &mut redis::aio::MultiplexedConnection, key: &str, from: u32, n: u32) {
    let mut command = cmd("BF.MADD");
    command.arg(key);
    for i in from..from + n {
        command.arg(i);
    }
    let _: Value = command.query_async(c).await.unwrap();
}

fn int(v: &Value) -> i64 {
    match v {
        Value::Int(i) => *i,
        other => panic!("{other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn merges_of_every_shape_keep_every_item() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let shapes = [
        "0.01 1000 NONSCALING",
        "0.01 100 EXPANSION 2",
        "0.01 100 EXPANSION 2 LAYOUT BLOCKED",
        "0.001 50 EXPANSION 4 LAYOUT CLASSIC",
    ];
    for (n, shape) in shapes.iter().enumerate() {
        let (a, b, m) = (format!("a{n}"), format!("b{n}"), format!("m{n}"));
        ok(&mut c, &format!("BF.RESERVE {a} {shape}")).await;
        ok(&mut c, &format!("BF.RESERVE {b} {shape}")).await;
        fill(&mut c, &a, 0, 700).await;
        fill(&mut c, &b, 10_000, 700).await;
        let layers = |v: Value| int(&v);
        assert_eq!(
            layers(
                ok(&mut c, &format!("BF.INFO {a} FILTERS"))
                    .await
                    .as_sequence()
                    .unwrap()[0]
                    .clone()
            ),
            layers(
                ok(&mut c, &format!("BF.INFO {b} FILTERS"))
                    .await
                    .as_sequence()
                    .unwrap()[0]
                    .clone()
            ),
            "{shape}"
        );
        assert_eq!(
            ok(&mut c, &format!("BF.MERGE {m} {a} {b}")).await,
            Value::Okay,
            "{shape}"
        );
        let mut probe = cmd("BF.MEXISTS");
        probe.arg(&m);
        for i in (0..700).chain(10_000..10_700) {
            probe.arg(i);
        }
        let answers: Vec<i64> = probe.query_async(&mut c).await.unwrap();
        assert!(answers.iter().all(|&x| x == 1), "{shape}: a false negative");
        // The count is the estimate from the bits.
        let card = int(&ok(&mut c, &format!("BF.CARD {m}")).await);
        assert!((card - 1400).abs() < 140, "{shape}: {card}");
    }
    server.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exact_replies_over_raw_resp() {
    let server = TestServer::start().await;
    let mut raw = server.raw().await;
    raw.roundtrip(&resp(&["BF.RESERVE", "a", "0.01", "100"]), b"+OK\r\n")
        .await;
    raw.roundtrip(&resp(&["BF.RESERVE", "b", "0.01", "200"]), b"+OK\r\n")
        .await;
    raw.roundtrip(&resp(&["BF.ADD", "a", "x"]), b":1\r\n").await;
    raw.roundtrip(&resp(&["CF.ADD", "c", "x"]), b":1\r\n").await;
    raw.roundtrip(
        &resp(&["BF.MERGE", "a", "b"]),
        b"-ERR filters are not compatible: initial capacity is 100 in 'a' and 200 in 'b'\r\n",
    )
    .await;
    raw.roundtrip(
        &resp(&["BF.MERGE", "a", "c"]),
        b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    )
    .await;
    raw.roundtrip(
        &resp(&["BF.MERGE", "a", "nosuch"]),
        b"-ERR not found: no filter at source key 'nosuch'\r\n",
    )
    .await;
    raw.roundtrip(
        &resp(&["BF.MERGE", "a"]),
        b"-ERR wrong number of arguments for 'bf.merge' command\r\n",
    )
    .await;
    // Nothing changed: the refused merges created no key and added nothing.
    raw.roundtrip(&resp(&["EXISTS", "new"]), b":0\r\n").await;
    raw.roundtrip(&resp(&["BF.MERGE", "new", "a"]), b"+OK\r\n")
        .await;
    raw.roundtrip(&resp(&["BF.EXISTS", "new", "x"]), b":1\r\n")
        .await;
    raw.roundtrip(&resp(&["TYPE", "new"]), b"+MBbloom--\r\n")
        .await;
    // Key positions for cluster clients: every argument from the first is a key.
    let mut c = server.client().await;
    let Value::Array(rows) = ok(&mut c, "COMMAND INFO bf.merge").await else {
        panic!()
    };
    let Some(Value::Array(row)) = rows.first() else {
        panic!("{rows:?}")
    };
    assert_eq!((int(&row[3]), int(&row[4]), int(&row[5])), (1, -1, 1));
    server.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_merge_replays_from_the_log_into_the_same_bits() {
    let dir = tempfile::tempdir().unwrap();
    let before = {
        let server = TestServer::run(Server::open(persistent(dir.path())).await.unwrap());
        let mut c = server.client().await;
        ok(&mut c, "BF.RESERVE a 0.01 50").await;
        ok(&mut c, "BF.RESERVE b 0.01 50").await;
        fill(&mut c, "a", 0, 200).await;
        fill(&mut c, "b", 500, 200).await;
        ok(&mut c, "BF.MERGE m a b").await;
        ok(&mut c, "BF.MERGE a b").await;
        // Changed after the merge: a replay must merge what `b` held then.
        fill(&mut c, "b", 900, 50).await;
        let mut dumps = Vec::new();
        for key in ["m", "a", "b"] {
            dumps.push(ok(&mut c, &format!("DUMP {key}")).await);
        }
        let _ = query(&mut c, "SHUTDOWN NOSAVE").await;
        server.finished().await.unwrap();
        dumps
    };
    let server = TestServer::run(Server::open(persistent(dir.path())).await.unwrap());
    let mut c = server.client().await;
    for (key, dump) in ["m", "a", "b"].iter().zip(before) {
        assert_eq!(ok(&mut c, &format!("DUMP {key}")).await, dump, "{key}");
    }
    server.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn info_fields_follow_redisbloom_fields_in_both_protocols() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    ok(&mut c, "BF.RESERVE k 0.01 1000").await;
    fill(&mut c, "k", 0, 500).await;
    ok(&mut c, "CF.RESERVE cf 1000").await;
    ok(&mut c, "CF.ADD cf a").await;
    let Value::Array(info) = ok(&mut c, "BF.INFO k").await else {
        panic!("a flat array in RESP2")
    };
    let names: Vec<String> = info
        .iter()
        .step_by(2)
        .map(|v| redis::from_redis_value(v.clone()).unwrap())
        .collect();
    assert_eq!(names, bloomkit_commands::bloom::INFO_FIELDS);
    // The keyspace's own filter, for the library's figures.
    let value = server.shared.keyspace().value_of(b"k");
    let filter = match value.as_deref() {
        Some(bloomkit_commands::Value::Bloom(f)) => f,
        other => panic!("{other:?}"),
    };
    let fill: f64 = redis::from_redis_value::<String>(info[11].clone())
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(fill, filter.fill_ratio());
    assert_eq!(int(&info[13]), filter.estimated_count() as i64);
    let rate: f64 = redis::from_redis_value::<String>(info[15].clone())
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(rate, filter.estimated_fp_rate());
    assert!(rate > 0.0 && rate < 0.01, "{rate}");
    let Value::Array(cf) = ok(&mut c, "CF.INFO cf").await else {
        panic!()
    };
    assert_eq!(cf.len(), 20);
    assert_eq!(cf[16], Value::SimpleString("Load factor".into()));
    // RESP3: a map, the new fields doubles and an integer.
    let mut resp3 = server
        .client_url(&format!("redis://{}/?protocol=resp3", server.addr))
        .await;
    let Value::Map(pairs) = ok(&mut resp3, "BF.INFO k").await else {
        panic!("a map in RESP3")
    };
    assert_eq!(pairs.len(), 8);
    assert_eq!(pairs[5].1, Value::Double(filter.fill_ratio()));
    assert_eq!(pairs[7].1, Value::Double(filter.estimated_fp_rate()));
    server.stop().await.unwrap();
}
