//! The rest of what RedisBloom's clients and test suites send, through the network: `TOUCH`,
//! `RANDOMKEY`, `OBJECT`, `MODULE LIST`, `INFO modules|cluster`, `DEBUG RELOAD`, `DUMP`,
//! `RESTORE`, `COPY`, and cuckoo filters grown by copies of one item.

use crate::common;

use std::collections::HashSet;

use bloomkit_server::config::{Config, DebugCommand};
use common::{bulk, resp, TestServer};
use redis::{cmd, Value};

async fn query(c: &mut redis::aio::MultiplexedConnection, words: &[&[u8]]) -> Value {
    let mut command = cmd(std::str::from_utf8(words[0]).unwrap());
    for w in &words[1..] {
        command.arg(*w);
    }
    command
        .query_async(c)
        .await
        .unwrap_or_else(|e| panic!("{:?}: {e}", String::from_utf8_lossy(words[0])))
}

/// The error text of a command that must fail.
async fn error(c: &mut redis::aio::MultiplexedConnection, words: &[&[u8]]) -> String {
    let mut command = cmd(std::str::from_utf8(words[0]).unwrap());
    for w in &words[1..] {
        command.arg(*w);
    }
    let result: redis::RedisResult<Value> = command.query_async(c).await;
    let e = result.expect_err("an error");
    // redis-rs splits "ERR text" into a code and a detail; put them back together.
    match (e.code(), e.detail()) {
        (Some(code), Some(detail)) => format!("{code} {detail}"),
        (Some(code), None) => code.to_string(),
        _ => e.to_string(),
    }
}

fn int(n: i64) -> Value {
    Value::Int(n)
}

#[tokio::test]
async fn touch_randomkey_and_object_answer_as_redis() {
    let server = TestServer::start().await;
    let mut c = server.raw().await;
    c.roundtrip(&resp(&["RANDOMKEY"]), b"$-1\r\n").await;
    server.seed_bloom("a", &["x"]);
    server.seed_cuckoo("c");
    c.roundtrip(&resp(&["TOUCH", "a", "c", "nokey", "a"]), b":3\r\n")
        .await;
    c.roundtrip(
        &resp(&["TOUCH"]),
        b"-ERR wrong number of arguments for 'touch' command\r\n",
    )
    .await;
    let mut seen = HashSet::new();
    for _ in 0..200 {
        c.send(&resp(&["RANDOMKEY"])).await;
        c.read_line().await;
        seen.insert(c.read_line().await);
    }
    assert_eq!(seen, HashSet::from(["a".to_string(), "c".to_string()]));
    c.roundtrip(&resp(&["OBJECT", "ENCODING", "a"]), bulk("raw").as_bytes())
        .await;
    c.roundtrip(&resp(&["OBJECT", "encoding", "c"]), bulk("raw").as_bytes())
        .await;
    c.roundtrip(&resp(&["OBJECT", "REFCOUNT", "a"]), b":1\r\n")
        .await;
    c.roundtrip(&resp(&["OBJECT", "IDLETIME", "a"]), b":0\r\n")
        .await;
    c.roundtrip(&resp(&["OBJECT", "ENCODING", "nokey"]), b"$-1\r\n")
        .await;
    c.roundtrip(&resp(&["OBJECT", "IDLETIME", "nokey"]), b"$-1\r\n")
        .await;
    c.roundtrip(
        &resp(&["OBJECT", "FREQ", "a"]),
        b"-ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please \
          note that when switching between policies at runtime LRU and LFU data will take some \
          time to adjust.\r\n",
    )
    .await;
    c.roundtrip(
        &resp(&["OBJECT"]),
        b"-ERR wrong number of arguments for 'object' command\r\n",
    )
    .await;
    c.roundtrip(
        &resp(&["OBJECT", "ENCODING"]),
        b"-ERR wrong number of arguments for 'object|encoding' command\r\n",
    )
    .await;
    c.roundtrip(
        &resp(&["OBJECT", "FOO", "a"]),
        b"-ERR unknown subcommand 'FOO'. Try OBJECT HELP.\r\n",
    )
    .await;
    c.send(&resp(&["OBJECT", "HELP"])).await;
    assert_eq!(c.read_line().await, "*15");
    assert_eq!(
        c.read_line().await,
        "+OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
    );
    let lines: Vec<String> = {
        let mut lines = Vec::new();
        for _ in 0..14 {
            lines.push(c.read_line().await);
        }
        lines
    };
    assert_eq!(lines[0], "+ENCODING <key>");
    assert_eq!(lines[12], "+HELP");
    // A key expired but not yet swept is gone for all of these.
    server.seed_bloom("old", &[]);
    c.roundtrip(&resp(&["PEXPIRE", "old", "1"]), b":1\r\n")
        .await;
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    c.roundtrip(&resp(&["TOUCH", "old"]), b":0\r\n").await;
    c.roundtrip(&resp(&["OBJECT", "REFCOUNT", "old"]), b"$-1\r\n")
        .await;
}

/// The idle time grows while a key is left alone, and restarts when a command uses it
/// (`BF.EXISTS`, `TOUCH`, `DUMP`), not when one only looks at it (`TYPE`, `OBJECT`).
#[tokio::test]
async fn idle_time_counts_from_the_last_use() {
    let server = TestServer::start().await;
    server.seed_bloom("a", &["x"]);
    let mut c = server.client().await;
    let restore = query(&mut c, &[b"DUMP", b"a"]).await;
    let Value::BulkString(payload) = restore else {
        panic!("{restore:?}")
    };
    assert_eq!(
        query(
            &mut c,
            &[b"RESTORE", b"b", b"0", &payload, b"IDLETIME", b"1000"]
        )
        .await,
        Value::Okay
    );
    let idle = |v: Value| match v {
        Value::Int(n) => n,
        other => panic!("{other:?}"),
    };
    let before = idle(query(&mut c, &[b"OBJECT", b"IDLETIME", b"b"]).await);
    assert!((1000..1003).contains(&before), "{before}");
    query(&mut c, &[b"TYPE", b"b"]).await;
    query(&mut c, &[b"EXISTS", b"b"]).await;
    assert!(idle(query(&mut c, &[b"OBJECT", b"IDLETIME", b"b"]).await) >= 1000);
    for use_it in [
        &[b"BF.EXISTS" as &[u8], b"b", b"x"][..],
        &[b"TOUCH", b"b"],
        &[b"DUMP", b"b"],
    ] {
        query(
            &mut c,
            &[
                b"RESTORE",
                b"b",
                b"0",
                &payload,
                b"REPLACE",
                b"IDLETIME",
                b"500",
            ],
        )
        .await;
        assert!(idle(query(&mut c, &[b"OBJECT", b"IDLETIME", b"b"]).await) >= 500);
        query(&mut c, use_it).await;
        let after = idle(query(&mut c, &[b"OBJECT", b"IDLETIME", b"b"]).await);
        assert!(
            after <= 1,
            "{:?}: {after}",
            String::from_utf8_lossy(use_it[0])
        );
    }
}

/// Under an LFU `maxmemory-policy`, `OBJECT FREQ` answers the key's counter (which
/// `RESTORE ... FREQ` sets and uses raise) and `OBJECT IDLETIME` Redis's error; under the
/// others the reverse. Both come from the one stamp eviction ranks keys by.
#[tokio::test]
async fn object_freq_and_idletime_follow_the_maxmemory_policy() {
    let server = TestServer::start().await;
    server.seed_bloom("a", &["x"]);
    let mut c = server.client().await;
    let Value::BulkString(payload) = query(&mut c, &[b"DUMP", b"a"]).await else {
        panic!()
    };
    let set_policy =
        |policy: &'static [u8]| [b"CONFIG" as &[u8], b"SET", b"maxmemory-policy", policy];
    assert_eq!(
        query(&mut c, &set_policy(b"allkeys-lfu")).await,
        Value::Okay
    );
    let restore = [b"RESTORE" as &[u8], b"b", b"0", &payload, b"FREQ", b"100"];
    assert_eq!(query(&mut c, &restore).await, Value::Okay);
    assert_eq!(query(&mut c, &[b"OBJECT", b"FREQ", b"b"]).await, int(100));
    assert!(error(&mut c, &[b"OBJECT", b"IDLETIME", b"b"])
        .await
        .starts_with("ERR An LFU maxmemory policy is selected, idle time not tracked."));
    // A new key starts at Redis's 5, and a thousand uses raise it (each by chance).
    for _ in 0..1000 {
        query(&mut c, &[b"BF.EXISTS", b"a", b"x"]).await;
    }
    let Value::Int(freq) = query(&mut c, &[b"OBJECT", b"FREQ", b"a"]).await else {
        panic!()
    };
    assert!((10..=30).contains(&freq), "{freq}");
    assert_eq!(
        query(&mut c, &set_policy(b"volatile-lru")).await,
        Value::Okay
    );
    assert!(error(&mut c, &[b"OBJECT", b"FREQ", b"b"])
        .await
        .starts_with("ERR An LFU maxmemory policy is not selected"));
    assert!(matches!(
        query(&mut c, &[b"OBJECT", b"IDLETIME", b"b"]).await,
        Value::Int(0..=1)
    ));
}

/// `CLIENT LIST` shows a client's queued commands and watched keys, as Redis's `multi=` and
/// `watch=`.
#[tokio::test]
async fn client_list_shows_transactions_and_watches() {
    let server = TestServer::start().await;
    let mut t = server.raw().await;
    t.roundtrip(&resp(&["WATCH", "a", "b"]), b"+OK\r\n").await;
    t.roundtrip(&resp(&["MULTI"]), b"+OK\r\n").await;
    t.roundtrip(&resp(&["PING"]), b"+QUEUED\r\n").await;
    t.roundtrip(&resp(&["BF.ADD", "a", "x"]), b"+QUEUED\r\n")
        .await;
    let mut c = server.client().await;
    let Value::BulkString(list) = query(&mut c, &[b"CLIENT", b"LIST"]).await else {
        panic!()
    };
    let list = String::from_utf8(list).unwrap();
    let lines: Vec<&str> = list.lines().collect();
    assert_eq!(lines.len(), 2, "{list}");
    assert!(
        lines.iter().any(|l| l.contains(" multi=2 watch=2 ")),
        "{list}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains(" multi=-1 watch=0 ") && l.contains(" cmd=client|list ")),
        "{list}"
    );
}

#[tokio::test]
async fn module_list_info_and_hello_name_the_same_module() {
    let server = TestServer::start().await;
    let mut c = server.raw().await;
    let module = "*8\r\n$4\r\nname\r\n$2\r\nbf\r\n$3\r\nver\r\n:80000\r\n$4\r\npath\r\n$0\r\n\r\n\
                  $4\r\nargs\r\n*0\r\n";
    c.roundtrip(
        &resp(&["MODULE", "LIST"]),
        format!("*1\r\n{module}").as_bytes(),
    )
    .await;
    c.roundtrip(
        &resp(&["MODULE", "LOAD", "/x.so"]),
        b"-ERR MODULE LOAD is not supported: bloomkit serve has RedisBloom's commands built in \
          and loads no modules\r\n",
    )
    .await;
    c.roundtrip(
        &resp(&["MODULE", "NOPE"]),
        b"-ERR unknown subcommand 'NOPE'. Try MODULE HELP.\r\n",
    )
    .await;
    c.roundtrip(
        &resp(&["MODULE", "LIST", "x"]),
        b"-ERR wrong number of arguments for 'module|list' command\r\n",
    )
    .await;
    // HELLO's modules are MODULE LIST's.
    c.send(&resp(&["HELLO", "2"])).await;
    let mut hello = Vec::new();
    while !hello.ends_with(module.as_bytes()) {
        hello.extend(c.read_exact(1).await);
        assert!(hello.len() < 1000, "{}", String::from_utf8_lossy(&hello));
    }
    assert!(String::from_utf8_lossy(&hello).contains("$7\r\nmodules\r\n*1\r\n"));

    let mut r = server.client().await;
    let Value::BulkString(info) = query(&mut r, &[b"INFO"]).await else {
        panic!()
    };
    let info = String::from_utf8(info).unwrap();
    let sections: Vec<&str> = info.lines().filter(|l| l.starts_with('#')).collect();
    assert_eq!(
        sections,
        [
            "# Server",
            "# Clients",
            "# Memory",
            "# Persistence",
            "# Stats",
            "# Modules",
            "# Errorstats",
            "# Filters",
            "# Cluster",
            "# Keyspace"
        ]
    );
    assert!(info.contains(
        "# Modules\r\nmodule:name=bf,ver=80000,api=1,filters=0,usedby=[],using=[],options=[]\r\n"
    ));
    assert!(info.contains("# Cluster\r\ncluster_enabled:0\r\n"));
    let Value::BulkString(cluster) = query(&mut r, &[b"INFO", b"cluster"]).await else {
        panic!()
    };
    assert_eq!(cluster, b"# Cluster\r\ncluster_enabled:0\r\n");
}

/// `DEBUG RELOAD` saves, then puts every value through the snapshot's encoding and back:
/// every filter answers as before (and a dump mid-restore is still mid-restore).
#[tokio::test]
async fn debug_reload_keeps_every_filter() {
    // As RedisBloom's test suite runs Redis: DEBUG is refused without the option.
    let server = TestServer::start_with(Config {
        enable_debug_command: DebugCommand::Yes,
        ..Config::default()
    })
    .await;
    let mut c = server.client().await;
    for i in 0..500 {
        let i = i.to_string();
        query(&mut c, &[b"BF.ADD", b"b", i.as_bytes()]).await;
        query(&mut c, &[b"CF.ADD", b"c", i.as_bytes()]).await;
    }
    query(&mut c, &[b"CF.DEL", b"c", b"7"]).await;
    let header = query(&mut c, &[b"BF.SCANDUMP", b"b", b"0"]).await;
    let Value::Array(parts) = header else {
        panic!()
    };
    let Value::BulkString(header) = &parts[1] else {
        panic!()
    };
    query(&mut c, &[b"BF.LOADCHUNK", b"partial", b"1", header]).await;
    let state = |c: &mut redis::aio::MultiplexedConnection| {
        let mut c = c.clone();
        async move {
            let mut out = Vec::new();
            for command in [
                &[b"BF.INFO" as &[u8], b"b"][..],
                &[b"CF.INFO", b"c"],
                &[b"BF.DEBUG", b"b"],
                &[b"CF.DEBUG", b"c"],
                &[b"TYPE", b"partial"],
            ] {
                out.push(query(&mut c, command).await);
            }
            let items: Vec<String> = (0..1000).map(|i| i.to_string()).collect();
            let mut mexists: Vec<&[u8]> = vec![b"BF.MEXISTS", b"b"];
            mexists.extend(items.iter().map(|i| i.as_bytes()));
            out.push(query(&mut c, &mexists).await);
            mexists[0] = b"CF.MEXISTS";
            mexists[1] = b"c";
            out.push(query(&mut c, &mexists).await);
            out
        }
    };
    let before = state(&mut c).await;
    for options in [&[][..], &[b"NOSAVE" as &[u8]], &[b"MERGE", b"NOFLUSH"]] {
        let mut command: Vec<&[u8]> = vec![b"DEBUG", b"RELOAD"];
        command.extend_from_slice(options);
        assert_eq!(query(&mut c, &command).await, Value::Okay);
        assert_eq!(state(&mut c).await, before);
    }
    assert_eq!(
        error(&mut c, &[b"DEBUG", b"RELOAD", b"BOGUS"]).await,
        "ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options."
    );
    assert_eq!(
        error(&mut c, &[b"DEBUG", b"NOPE"]).await,
        "ERR unknown subcommand or wrong number of arguments for 'NOPE'. Try DEBUG HELP."
    );
    assert_eq!(
        error(&mut c, &[b"DEBUG"]).await,
        "ERR wrong number of arguments for 'debug' command"
    );
}

/// `DUMP` then `RESTORE` into another key gives the same filter; Redis's errors come in its
/// order; `BUSYKEY`, `REPLACE`, TTLs relative and absolute.
#[tokio::test]
async fn dump_and_restore_answer_as_redis() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    for i in 0..300 {
        let i = i.to_string();
        query(&mut c, &[b"BF.ADD", b"b", i.as_bytes()]).await;
        query(&mut c, &[b"CF.ADD", b"c", i.as_bytes()]).await;
    }
    assert_eq!(query(&mut c, &[b"DUMP", b"nokey"]).await, Value::Nil);
    for (key, copy, family) in [(&b"b"[..], &b"b2"[..], "BF"), (b"c", b"c2", "CF")] {
        let Value::BulkString(payload) = query(&mut c, &[b"DUMP", key]).await else {
            panic!()
        };
        // What Redis with the bloomkit module dumps: a module value (RDB type 7), the RDB
        // version (10) and a CRC-64.
        assert_eq!(payload[0], 7);
        assert_eq!(payload[payload.len() - 10..payload.len() - 8], [10, 0]);
        assert_eq!(
            query(&mut c, &[b"RESTORE", copy, b"0", &payload]).await,
            Value::Okay
        );
        assert_eq!(
            error(&mut c, &[b"RESTORE", copy, b"0", &payload]).await,
            "BUSYKEY Target key name already exists."
        );
        assert_eq!(
            query(&mut c, &[b"RESTORE", copy, b"0", &payload, b"REPLACE"]).await,
            Value::Okay
        );
        let info = format!("{family}.INFO");
        let i1 = query(&mut c, &[info.as_bytes(), key]).await;
        let i2 = query(&mut c, &[info.as_bytes(), copy]).await;
        assert_eq!(i1, i2);
        let exists = format!("{family}.EXISTS");
        for i in 0..300 {
            let i = i.to_string();
            assert_eq!(
                query(&mut c, &[exists.as_bytes(), copy, i.as_bytes()]).await,
                int(1)
            );
        }
        assert_eq!(
            query(&mut c, &[b"TYPE", copy]).await,
            query(&mut c, &[b"TYPE", key]).await
        );
        assert_eq!(query(&mut c, &[b"TTL", copy]).await, int(-1));
        // A relative TTL in milliseconds, and an absolute one.
        query(&mut c, &[b"RESTORE", copy, b"100000", &payload, b"REPLACE"]).await;
        let Value::Int(ttl) = query(&mut c, &[b"PTTL", copy]).await else {
            panic!()
        };
        assert!((99_000..=100_000).contains(&ttl), "{ttl}");
        let later = (std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis()
            + 50_000)
            .to_string();
        query(
            &mut c,
            &[
                b"RESTORE",
                copy,
                later.as_bytes(),
                &payload,
                b"REPLACE",
                b"ABSTTL",
            ],
        )
        .await;
        let Value::Int(ttl) = query(&mut c, &[b"PTTL", copy]).await else {
            panic!()
        };
        assert!((49_000..=50_000).contains(&ttl), "{ttl}");
        // An absolute time already past: nothing is created, and the old key goes.
        query(
            &mut c,
            &[b"RESTORE", copy, b"1", &payload, b"REPLACE", b"ABSTTL"],
        )
        .await;
        assert_eq!(query(&mut c, &[b"EXISTS", copy]).await, int(0));
    }
    let Value::BulkString(payload) = query(&mut c, &[b"DUMP", b"b"]).await else {
        panic!()
    };
    // Redis's checks, in its order: options, BUSYKEY, the TTL, the envelope, the content.
    let cases: Vec<(Vec<&[u8]>, &str)> = vec![
        (
            vec![b"RESTORE", b"b", b"0", &payload, b"BOGUS"],
            "ERR syntax error",
        ),
        (
            vec![b"RESTORE", b"n", b"0", &payload, b"IDLETIME"],
            "ERR syntax error",
        ),
        (
            vec![b"RESTORE", b"n", b"0", &payload, b"IDLETIME", b"-1"],
            "ERR Invalid IDLETIME value, must be >= 0",
        ),
        (
            vec![b"RESTORE", b"n", b"0", &payload, b"FREQ", b"256"],
            "ERR Invalid FREQ value, must be >= 0 and <= 255",
        ),
        (
            vec![
                b"RESTORE",
                b"n",
                b"0",
                &payload,
                b"IDLETIME",
                b"1",
                b"FREQ",
                b"1",
            ],
            "ERR syntax error",
        ),
        (
            vec![b"RESTORE", b"n", b"0", &payload, b"IDLETIME", b"x"],
            "ERR value is not an integer or out of range",
        ),
        (
            vec![b"RESTORE", b"b", b"x", b"junk"],
            "BUSYKEY Target key name already exists.",
        ),
        (
            vec![b"RESTORE", b"n", b"x", &payload],
            "ERR value is not an integer or out of range",
        ),
        (
            vec![b"RESTORE", b"n", b"-1", &payload],
            "ERR Invalid TTL value, must be >= 0",
        ),
        (
            vec![b"RESTORE", b"n", b"0", b"junk"],
            "ERR DUMP payload version or checksum are wrong",
        ),
        (
            vec![b"RESTORE", b"n", b"0"],
            "ERR wrong number of arguments for 'restore' command",
        ),
    ];
    for (command, expected) in cases {
        assert_eq!(error(&mut c, &command).await, expected, "{command:?}");
    }
    assert_eq!(query(&mut c, &[b"EXISTS", b"n"]).await, int(0));
}

/// A payload whose envelope checks out but whose value does not decode (a filter of another
/// kind, any damage inside, resealed with a valid CRC) is refused whole,
/// before any key is created.
#[tokio::test]
async fn restore_refuses_any_payload_it_cannot_fully_decode() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    for i in 0..50 {
        query(&mut c, &[b"CF.ADD", b"c", i.to_string().as_bytes()]).await;
    }
    let Value::BulkString(payload) = query(&mut c, &[b"DUMP", b"c"]).await else {
        panic!()
    };
    let seal = |body: &[u8]| {
        let mut out = body.to_vec();
        out.extend_from_slice(&10u16.to_le_bytes());
        let crc = bloomkit_server::cmd::dump::crc64(0, &out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    };
    let body = &payload[..payload.len() - 10];
    assert_eq!(seal(body), payload);
    // RedisBloom 2.8's DUMP of `BF.ADD k a` on Redis 7.0: imported (tests/it/import.rs).
    let redis_dump: &[u8] = include_bytes!("../data/redisbloom-2.8-dump-bf-add-k-a.bin");
    assert_eq!(
        query(&mut c, &[b"RESTORE", b"imported", b"0", redis_dump]).await,
        Value::Okay
    );
    assert_eq!(
        query(&mut c, &[b"BF.EXISTS", b"imported", b"a"]).await,
        int(1)
    );
    query(&mut c, &[b"DEL", b"imported"]).await;
    // Another kind of bloomkit filter.
    let classic = bloomkit::BloomFilter::new(100, 0.01).unwrap().to_bytes();
    assert_eq!(
        error(&mut c, &[b"RESTORE", b"n", b"0", &seal(&classic)]).await,
        "ERR Bad data format"
    );
    // Every byte of the value flipped, every prefix cut, each resealed.
    let mut refused = 0;
    for at in (0..body.len()).step_by(3) {
        let mut bad = body.to_vec();
        bad[at] ^= 0x41;
        let r: redis::RedisResult<Value> = cmd("RESTORE")
            .arg("n")
            .arg(0)
            .arg(seal(&bad))
            .query_async(&mut c)
            .await;
        assert!(r.is_err(), "flip at {at}");
        refused += 1;
    }
    for cut in (0..body.len()).step_by(7) {
        assert_eq!(
            error(&mut c, &[b"RESTORE", b"n", b"0", &seal(&body[..cut])]).await,
            "ERR Bad data format",
            "cut at {cut}"
        );
    }
    assert!(refused > 30);
    assert_eq!(query(&mut c, &[b"EXISTS", b"n"]).await, int(0));
    assert_eq!(query(&mut c, &[b"DBSIZE"]).await, int(1));
}

#[tokio::test]
async fn restore_and_copy_respect_maxmemory() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    query(&mut c, &[b"BF.RESERVE", b"b", b"0.01", b"100000"]).await;
    // Dumped before the ceiling: under it, the reply itself (as large as the filter) would
    // be refused, since maxmemory counts the clients' buffers.
    let Value::BulkString(payload) = query(&mut c, &[b"DUMP", b"b"]).await else {
        panic!()
    };
    assert_eq!(
        query(&mut c, &[b"CONFIG", b"SET", b"maxmemory", b"200000"]).await,
        Value::Okay
    );
    let oom = "OOM command not allowed when used memory > 'maxmemory'.";
    assert_eq!(
        error(&mut c, &[b"RESTORE", b"n", b"0", &payload]).await,
        oom
    );
    assert_eq!(error(&mut c, &[b"COPY", b"b", b"n"]).await, oom);
    assert_eq!(query(&mut c, &[b"DBSIZE"]).await, int(1));
}

#[tokio::test]
async fn copy_answers_as_redis() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    for i in 0..200 {
        query(&mut c, &[b"CF.ADD", b"c", i.to_string().as_bytes()]).await;
    }
    query(&mut c, &[b"PEXPIRE", b"c", b"100000"]).await;
    assert_eq!(query(&mut c, &[b"COPY", b"c", b"d"]).await, int(1));
    assert_eq!(query(&mut c, &[b"COPY", b"c", b"d"]).await, int(0));
    assert_eq!(query(&mut c, &[b"COPY", b"nokey", b"e"]).await, int(0));
    assert_eq!(
        query(&mut c, &[b"COPY", b"c", b"d", b"REPLACE", b"DB", b"0"]).await,
        int(1)
    );
    let Value::Int(ttl) = query(&mut c, &[b"PTTL", b"d"]).await else {
        panic!()
    };
    assert!(
        (99_000..=100_000).contains(&ttl),
        "the copy keeps the expiry: {ttl}"
    );
    // The copy is its own filter: changing one leaves the other.
    assert_eq!(query(&mut c, &[b"CF.DEL", b"d", b"5"]).await, int(1));
    assert_eq!(query(&mut c, &[b"CF.COUNT", b"c", b"5"]).await, int(1));
    assert_eq!(query(&mut c, &[b"CF.COUNT", b"d", b"5"]).await, int(0));
    assert_eq!(query(&mut c, &[b"CF.EXISTS", b"d", b"6"]).await, int(1));
    for (command, expected) in [
        (
            &[b"COPY" as &[u8], b"c", b"c"][..],
            "ERR source and destination objects are the same",
        ),
        (
            &[b"COPY", b"c", b"x", b"DB", b"1"],
            "ERR DB index is out of range",
        ),
        (
            &[b"COPY", b"c", b"x", b"DB", b"z"],
            "ERR value is not an integer or out of range",
        ),
        (&[b"COPY", b"c", b"x", b"DB"], "ERR syntax error"),
        (&[b"COPY", b"c", b"x", b"NOPE"], "ERR syntax error"),
        (
            &[b"COPY", b"c"],
            "ERR wrong number of arguments for 'copy' command",
        ),
    ] {
        assert_eq!(error(&mut c, command).await, expected, "{command:?}");
    }
}

/// RedisBloom's `CF.RESERVE cf 2 BUCKETSIZE 1 EXPANSION 1` and 20,000 copies of one item in
/// one `CF.INSERT`: two copies per sub-filter (10,000 of them, as RedisBloom makes for most
/// items), every copy counted; `CF.DEL` and `CF.COMPACT` take the filter back down.
#[tokio::test]
async fn copies_of_one_item_fill_two_slots_per_sub_filter() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    query(
        &mut c,
        &[
            b"CF.RESERVE",
            b"cf",
            b"2",
            b"BUCKETSIZE",
            b"1",
            b"EXPANSION",
            b"1",
        ],
    )
    .await;
    let mut insert: Vec<&[u8]> = vec![b"CF.INSERT", b"cf", b"ITEMS"];
    insert.extend(std::iter::repeat_n(&b"item"[..], 20_000));
    let Value::Array(replies) = query(&mut c, &insert).await else {
        panic!()
    };
    assert!(replies.iter().all(|r| *r == int(1)));
    let Value::BulkString(debug) = query(&mut c, &[b"CF.DEBUG", b"cf"]).await else {
        panic!()
    };
    assert_eq!(
        String::from_utf8(debug).unwrap(),
        "bktsize:1 buckets:2 items:20000 deletes:0 filters:10000 max_iterations:20 expansion:1"
    );
    assert_eq!(
        query(&mut c, &[b"CF.COUNT", b"cf", b"item"]).await,
        int(20_000)
    );
    // The 32-sub-filter limit is checked before a command, as RedisBloom checks it.
    assert_eq!(
        error(&mut c, &[b"CF.ADD", b"cf", b"item"]).await,
        "Maximum expansions reached"
    );
    for _ in 0..19_990 {
        query(&mut c, &[b"CF.DEL", b"cf", b"item"]).await;
    }
    query(&mut c, &[b"CF.COMPACT", b"cf"]).await;
    let Value::BulkString(debug) = query(&mut c, &[b"CF.DEBUG", b"cf"]).await else {
        panic!()
    };
    assert_eq!(
        String::from_utf8(debug).unwrap(),
        "bktsize:1 buckets:2 items:10 deletes:0 filters:5 max_iterations:20 expansion:1"
    );
}
