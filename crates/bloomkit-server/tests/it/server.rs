//! The server through the network: a real listener on an ephemeral port, real clients
//! (redis-rs, and raw bytes where the exact wire form is the contract).

use crate::common;

use std::collections::HashMap;
use std::time::Duration;

use bloomkit_server::config::Config;
use common::{bulk, resp, TestServer};

#[tokio::test]
async fn connection_commands_on_the_wire() {
    let server = TestServer::start().await;
    let mut c = server.raw().await;
    c.roundtrip(&resp(&["PING"]), b"+PONG\r\n").await;
    c.roundtrip(&resp(&["PING", "hi"]), b"$2\r\nhi\r\n").await;
    c.roundtrip(b"PING\r\n", b"+PONG\r\n").await; // inline, as telnet sends it
    c.roundtrip(&resp(&["ECHO", "a\r\nb"]), b"$4\r\na\r\nb\r\n")
        .await;
    c.roundtrip(&resp(&["SELECT", "0"]), b"+OK\r\n").await;
    c.roundtrip(
        &resp(&["SELECT", "1"]),
        b"-ERR DB index is out of range\r\n",
    )
    .await;
    c.send(&resp(&["CLIENT", "ID"])).await;
    let id = c.read_line().await;
    assert!(
        id.starts_with(':') && id[1..].parse::<u64>().is_ok(),
        "{id}"
    );
    c.roundtrip(&resp(&["CLIENT", "SETNAME", "tester"]), b"+OK\r\n")
        .await;
    c.roundtrip(&resp(&["CLIENT", "GETNAME"]), bulk("tester").as_bytes())
        .await;
    c.roundtrip(&resp(&["CLIENT", "SETINFO", "LIB-NAME", "raw"]), b"+OK\r\n")
        .await;
    c.roundtrip(
        &resp(&["ECHO"]),
        b"-ERR wrong number of arguments for 'echo' command\r\n",
    )
    .await;
    c.send(&resp(&["QUIT"])).await;
    assert_eq!(c.read_to_end().await, b"+OK\r\n");
}

#[tokio::test]
async fn key_commands_on_the_wire() {
    let server = TestServer::start().await;
    server.seed_bloom("a", &["x"]);
    server.seed_cuckoo("c");
    let mut c = server.raw().await;
    c.roundtrip(&resp(&["TYPE", "a"]), b"+MBbloom--\r\n").await;
    c.roundtrip(&resp(&["TYPE", "c"]), b"+MBbloomCF\r\n").await;
    c.roundtrip(&resp(&["TYPE", "x"]), b"+none\r\n").await;
    c.roundtrip(&resp(&["EXISTS", "a", "c", "x", "a"]), b":3\r\n")
        .await;
    c.roundtrip(&resp(&["DBSIZE"]), b":2\r\n").await;
    c.roundtrip(&resp(&["KEYS", "[ab]"]), b"*1\r\n$1\r\na\r\n")
        .await;
    c.roundtrip(
        &resp(&["SCAN", "0", "COUNT", "1000", "TYPE", "MBbloomCF"]),
        b"*2\r\n$1\r\n0\r\n*1\r\n$1\r\nc\r\n",
    )
    .await;
    c.roundtrip(&resp(&["SCAN", "x"]), b"-ERR invalid cursor\r\n")
        .await;
    c.roundtrip(&resp(&["EXPIRE", "a", "100"]), b":1\r\n").await;
    c.roundtrip(&resp(&["TTL", "a"]), b":100\r\n").await;
    c.roundtrip(&resp(&["EXPIRE", "a", "200", "NX"]), b":0\r\n")
        .await;
    c.roundtrip(&resp(&["PERSIST", "a"]), b":1\r\n").await;
    c.roundtrip(&resp(&["TTL", "a"]), b":-1\r\n").await;
    c.roundtrip(&resp(&["PTTL", "x"]), b":-2\r\n").await;
    c.roundtrip(
        &resp(&["EXPIRE", "a", "soon"]),
        b"-ERR value is not an integer or out of range\r\n",
    )
    .await;
    c.roundtrip(&resp(&["RENAME", "a", "b"]), b"+OK\r\n").await;
    c.roundtrip(&resp(&["RENAME", "a", "b"]), b"-ERR no such key\r\n")
        .await;
    c.roundtrip(&resp(&["TYPE", "b"]), b"+MBbloom--\r\n").await;
    c.roundtrip(&resp(&["DEL", "b", "x"]), b":1\r\n").await;
    c.roundtrip(&resp(&["UNLINK", "c"]), b":1\r\n").await;
    c.roundtrip(
        &resp(&["DEL"]),
        b"-ERR wrong number of arguments for 'del' command\r\n",
    )
    .await;
    server.seed_cuckoo("c");
    c.roundtrip(&resp(&["FLUSHALL"]), b"+OK\r\n").await;
    c.roundtrip(&resp(&["DBSIZE"]), b":0\r\n").await;
    c.roundtrip(&resp(&["KEYS", "*"]), b"*0\r\n").await;
}

#[tokio::test]
async fn redis_rs_works_unchanged() {
    let server = TestServer::start().await;
    server.seed_bloom("users", &["alice"]);
    let mut con = server.client().await;
    let pong: String = redis::cmd("PING").query_async(&mut con).await.unwrap();
    assert_eq!(pong, "PONG");
    let kind: String = redis::cmd("TYPE")
        .arg("users")
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(kind, "MBbloom--");
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg("*")
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(keys, ["users"]);
    let set: bool = redis::cmd("PEXPIRE")
        .arg("users")
        .arg(60_000)
        .query_async(&mut con)
        .await
        .unwrap();
    assert!(set);
    let pttl: i64 = redis::cmd("PTTL")
        .arg("users")
        .query_async(&mut con)
        .await
        .unwrap();
    assert!((59_000..=60_000).contains(&pttl), "{pttl}");

    let () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("bf-initial-size")
        .arg(1000)
        .query_async(&mut con)
        .await
        .unwrap();
    let config: HashMap<String, String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("bf-*")
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(
        config,
        HashMap::from([
            ("bf-error-rate".to_string(), "0.01".to_string()),
            ("bf-initial-size".to_string(), "1000".to_string()),
            ("bf-expansion-factor".to_string(), "2".to_string()),
            ("bf-layout".to_string(), "classic".to_string()),
        ])
    );
    let info: String = redis::cmd("INFO")
        .arg("keyspace")
        .query_async(&mut con)
        .await
        .unwrap();
    assert!(info.contains("db0:keys=1,expires=1"), "{info}");
    let count: i64 = redis::cmd("COMMAND")
        .arg("COUNT")
        .query_async(&mut con)
        .await
        .unwrap();
    assert!(count > 40);

    let err = redis::cmd("NOPE")
        .arg("x")
        .query_async::<()>(&mut con)
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some("ERR"));
    assert_eq!(
        err.detail(),
        Some("unknown command 'NOPE', with args beginning with: 'x' ")
    );
    let deleted: i64 = redis::cmd("DEL")
        .arg("users")
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(deleted, 1);

    // RESP3: redis-rs sends HELLO 3 first and reads CONFIG GET's map.
    let mut resp3 = server
        .client_url(&format!("redis://{}/?protocol=resp3", server.addr))
        .await;
    let config: HashMap<String, String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("maxmemory")
        .query_async(&mut resp3)
        .await
        .unwrap();
    assert_eq!(config["maxmemory"], "0");
    let name: Option<String> = redis::cmd("CLIENT")
        .arg("GETNAME")
        .query_async(&mut resp3)
        .await
        .unwrap();
    assert_eq!(name, None);
}

#[tokio::test]
async fn resp3_after_hello_3() {
    let server = TestServer::start().await;
    let mut c = server.raw().await;
    c.send(&resp(&["CLIENT", "ID"])).await;
    let id = c.read_line().await;
    let module = format!(
        "%4\r\n{}{}{}:80000\r\n{}{}{}*0\r\n",
        bulk("name"),
        bulk("bf"),
        bulk("ver"),
        bulk("path"),
        bulk(""),
        bulk("args")
    );
    let fields = [
        ("server", bulk("redis")),
        ("version", bulk("8.0.0")),
        ("proto", ":3\r\n".to_string()),
        ("id", format!("{id}\r\n")),
        ("mode", bulk("standalone")),
        ("role", bulk("master")),
        ("modules", format!("*1\r\n{module}")),
    ];
    let mut hello3 = "%7\r\n".to_string();
    for (name, value) in fields {
        hello3 += &bulk(name);
        hello3 += &value;
    }
    c.roundtrip(&resp(&["HELLO", "3"]), hello3.as_bytes()).await;
    c.roundtrip(
        &resp(&["CONFIG", "GET", "maxmemory"]),
        format!("%1\r\n{}{}", bulk("maxmemory"), bulk("0")).as_bytes(),
    )
    .await;
    // redis-benchmark reads `save` and `appendonly` and warns when either is missing.
    c.roundtrip(
        &resp(&["CONFIG", "GET", "save"]),
        format!("%1\r\n{}{}", bulk("save"), bulk("")).as_bytes(),
    )
    .await;
    c.roundtrip(&resp(&["CLIENT", "GETNAME"]), b"_\r\n").await;
    c.roundtrip(&resp(&["COMMAND", "INFO", "nope"]), b"*1\r\n_\r\n")
        .await;
    c.roundtrip(&resp(&["EXISTS", "x"]), b":0\r\n").await;
    // HELLO 2 goes back: its own reply is already RESP2 (a flat array).
    c.send(&resp(&["HELLO", "2"])).await;
    assert_eq!(c.read_line().await, "*14");
    c.send(&resp(&["PING"])).await;
    // Skip the rest of HELLO's reply up to PING's.
    let mut line = String::new();
    while line != "+PONG" {
        line = c.read_line().await;
    }
    c.roundtrip(&resp(&["CLIENT", "GETNAME"]), b"$-1\r\n").await;
    c.roundtrip(
        &resp(&["HELLO", "4"]),
        b"-NOPROTO unsupported protocol version\r\n",
    )
    .await;
}

// Several worker threads, so connections really run in parallel.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelining_answers_a_thousand_commands_sent_in_one_write() {
    let server = TestServer::start().await;
    server.seed_bloom("k", &[]);
    let mut c = server.raw().await;
    let (mut requests, mut replies) = (Vec::new(), Vec::new());
    for i in 0..1000 {
        if i % 2 == 0 {
            let text = format!("message {i}");
            requests.extend(resp(&["ECHO", &text]));
            replies.extend(bulk(&text).into_bytes());
        } else {
            requests.extend(resp(&["EXISTS", "k", "nope"]));
            replies.extend(b":1\r\n");
        }
    }
    c.send(&requests).await;
    c.expect(&replies).await;
    // Inline requests pipeline too.
    c.send(&b"PING\r\n".repeat(1000)).await;
    c.expect(&b"+PONG\r\n".repeat(1000)).await;
}

// Several worker threads, so connections really run in parallel.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_clients_at_once() {
    let server = TestServer::start().await;
    for i in 0..100 {
        server.seed_bloom(&format!("key:{i}"), &[]);
    }
    let mut tasks = Vec::new();
    for i in 0..100 {
        let mut con = server.client().await;
        tasks.push(tokio::spawn(async move {
            let key = format!("key:{i}");
            let spare = format!("spare:{i}");
            for round in 0..20 {
                let message = format!("client {i} round {round}");
                let echoed: String = redis::cmd("ECHO")
                    .arg(&message)
                    .query_async(&mut con)
                    .await
                    .unwrap();
                assert_eq!(echoed, message);
                let exists: i64 = redis::cmd("EXISTS")
                    .arg(&key)
                    .query_async(&mut con)
                    .await
                    .unwrap();
                assert_eq!(exists, 1);
                let () = redis::cmd("RENAME")
                    .arg(&key)
                    .arg(&spare)
                    .query_async(&mut con)
                    .await
                    .unwrap();
                let set: i64 = redis::cmd("EXPIRE")
                    .arg(&spare)
                    .arg(1000)
                    .query_async(&mut con)
                    .await
                    .unwrap();
                assert_eq!(set, 1);
                let () = redis::cmd("RENAME")
                    .arg(&spare)
                    .arg(&key)
                    .query_async(&mut con)
                    .await
                    .unwrap();
                let ttl: i64 = redis::cmd("TTL")
                    .arg(&key)
                    .query_async(&mut con)
                    .await
                    .unwrap();
                assert_eq!(ttl, 1000, "the expiry moves with the key");
                let persisted: i64 = redis::cmd("PERSIST")
                    .arg(&key)
                    .query_async(&mut con)
                    .await
                    .unwrap();
                assert_eq!(persisted, 1);
                // Every client adds to one shared filter, and finds its own items.
                let item = format!("item {i} {round}");
                let _: i64 = redis::cmd("BF.ADD")
                    .arg("shared")
                    .arg(&item)
                    .query_async(&mut con)
                    .await
                    .unwrap();
                let found: i64 = redis::cmd("BF.EXISTS")
                    .arg("shared")
                    .arg(&item)
                    .query_async(&mut con)
                    .await
                    .unwrap();
                assert_eq!(found, 1);
            }
            con
        }));
    }
    let mut connections = Vec::new();
    for task in tasks {
        connections.push(task.await.unwrap());
    }
    assert_eq!(server.shared.stats().connected_clients(), 100);
    assert_eq!(server.shared.keyspace().counts(), (101, 0));
    let mut con = server.client().await;
    let card: i64 = redis::cmd("BF.CARD")
        .arg("shared")
        .query_async(&mut con)
        .await
        .unwrap();
    // 2,000 distinct items; a false positive on add is not counted, so a few may be missing.
    assert!((1_950..=2_000).contains(&card), "{card}");
    drop(con);
    drop(connections);
    server.stop().await.unwrap();
}

#[tokio::test]
async fn requirepass_admits_only_authenticated_clients() {
    let server = TestServer::start_with(Config {
        requirepass: Some("s3cret".into()),
        ..Config::default()
    })
    .await;
    let mut c = server.raw().await;
    c.roundtrip(&resp(&["PING"]), b"-NOAUTH Authentication required.\r\n")
        .await;
    c.roundtrip(
        &resp(&["nope"]),
        b"-ERR unknown command 'nope', with args beginning with: \r\n",
    )
    .await;
    c.roundtrip(&resp(&["HELLO", "3"]), b"-NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time\r\n").await;
    let wrongpass = b"-WRONGPASS invalid username-password pair or user is disabled.\r\n";
    c.roundtrip(&resp(&["AUTH", "guess"]), wrongpass).await;
    c.roundtrip(&resp(&["AUTH", "root", "s3cret"]), wrongpass)
        .await;
    c.roundtrip(&resp(&["DBSIZE"]), b"-NOAUTH Authentication required.\r\n")
        .await;
    c.roundtrip(&resp(&["AUTH", "s3cret"]), b"+OK\r\n").await;
    c.roundtrip(&resp(&["DBSIZE"]), b":0\r\n").await;

    // redis-rs authenticates from the URL, in RESP2 (AUTH) and RESP3 (HELLO 3 AUTH).
    for url in [
        format!("redis://:s3cret@{}", server.addr),
        format!("redis://default:s3cret@{}/?protocol=resp3", server.addr),
    ] {
        let mut con = server.client_url(&url).await;
        let pong: String = redis::cmd("PING").query_async(&mut con).await.unwrap();
        assert_eq!(pong, "PONG");
    }
    let mut anonymous = server.client().await;
    let err = redis::cmd("PING")
        .query_async::<String>(&mut anonymous)
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some("NOAUTH"));
}

#[tokio::test]
async fn maxclients_refuses_the_client_over_the_limit() {
    let server = TestServer::start_with(Config {
        maxclients: 2,
        ..Config::default()
    })
    .await;
    let mut a = server.raw().await;
    let mut b = server.raw().await;
    a.roundtrip(&resp(&["PING"]), b"+PONG\r\n").await;
    b.roundtrip(&resp(&["PING"]), b"+PONG\r\n").await;
    let mut refused = server.raw().await;
    assert_eq!(
        refused.read_to_end().await,
        b"-ERR max number of clients reached\r\n"
    );
    assert_eq!(server.shared.stats().rejected_connections(), 1);
    // Once a client leaves, there is room again.
    drop(a);
    let deadline = tokio::time::Instant::now() + common::TIMEOUT;
    while server.shared.stats().connected_clients() > 1 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the client never left"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let mut c = server.raw().await;
    c.roundtrip(&resp(&["PING"]), b"+PONG\r\n").await;
    b.roundtrip(&resp(&["PING"]), b"+PONG\r\n").await;
}

#[tokio::test]
async fn keys_expire_on_access_and_in_the_background() {
    let server = TestServer::start().await;
    server.seed_bloom("touched", &[]);
    server.seed_bloom("untouched", &[]);
    let mut c = server.raw().await;
    c.roundtrip(&resp(&["PEXPIRE", "touched", "50"]), b":1\r\n")
        .await;
    c.roundtrip(&resp(&["PEXPIRE", "untouched", "50"]), b":1\r\n")
        .await;
    c.send(&resp(&["PTTL", "touched"])).await;
    let pttl: i64 = c.read_line().await[1..].parse().unwrap();
    assert!((0..=50).contains(&pttl), "{pttl}");
    tokio::time::sleep(Duration::from_millis(80)).await;
    c.roundtrip(&resp(&["EXISTS", "touched"]), b":0\r\n").await;
    c.roundtrip(&resp(&["TTL", "touched"]), b":-2\r\n").await;
    c.roundtrip(&resp(&["TYPE", "touched"]), b"+none\r\n").await;
    // Nobody touches the other: the sweep removes it within a few ticks.
    let deadline = tokio::time::Instant::now() + common::TIMEOUT;
    while !server.shared.keyspace().is_empty() {
        assert!(tokio::time::Instant::now() < deadline, "never swept");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    c.roundtrip(&resp(&["DBSIZE"]), b":0\r\n").await;
    assert_eq!(server.shared.keyspace().expired_keys(), 2);
}

#[tokio::test]
async fn unknown_commands_leave_the_connection_open() {
    let server = TestServer::start().await;
    let mut c = server.raw().await;
    c.roundtrip(
        &resp(&["foo", "a", "b"]),
        b"-ERR unknown command 'foo', with args beginning with: 'a' 'b' \r\n",
    )
    .await;
    c.roundtrip(
        &resp(&["BF.NOSUCH", "k"]),
        b"-ERR unknown command 'BF.NOSUCH', with args beginning with: 'k' \r\n",
    )
    .await;
    c.roundtrip(
        &resp(&["CLIENT", "NOSUCH"]),
        b"-ERR unknown subcommand 'NOSUCH'. Try CLIENT HELP.\r\n",
    )
    .await;
    c.roundtrip(&resp(&["PING"]), b"+PONG\r\n").await;
}

#[tokio::test]
async fn a_protocol_error_closes_only_that_connection() {
    let server = TestServer::start().await;
    let mut bystander = server.raw().await;
    bystander.roundtrip(&resp(&["PING"]), b"+PONG\r\n").await;

    let mut bad = server.raw().await;
    // The request before the bad one is answered, then the error, then the close.
    bad.send(b"PING\r\n*1\r\n$abc\r\n").await;
    let got = String::from_utf8(bad.read_to_end().await).unwrap();
    assert_eq!(got, "+PONG\r\n-ERR Protocol error: invalid bulk length\r\n");

    let mut huge = server.raw().await;
    huge.send(b"*1048577\r\n").await;
    let got = String::from_utf8(huge.read_to_end().await).unwrap();
    assert!(got.starts_with("-ERR Protocol error: "), "{got}");

    bystander.roundtrip(&resp(&["PING"]), b"+PONG\r\n").await;
}

#[tokio::test]
async fn shutdown_command_stops_the_server_gracefully() {
    let server = TestServer::start().await;
    let mut idle = server.raw().await;
    idle.roundtrip(&resp(&["PING"]), b"+PONG\r\n").await;
    let mut c = server.raw().await;
    c.roundtrip(
        &resp(&["SHUTDOWN", "SAVE", "NOSAVE"]),
        b"-ERR syntax error\r\n",
    )
    .await;
    c.send(&resp(&["SHUTDOWN", "NOSAVE"])).await;
    assert_eq!(
        c.read_to_end().await,
        b"",
        "SHUTDOWN closes without a reply"
    );
    assert_eq!(idle.read_to_end().await, b"", "idle clients are closed");
    let addr = server.addr;
    server.finished().await.unwrap();
    assert!(
        tokio::net::TcpStream::connect(addr).await.is_err(),
        "no longer listening"
    );
}

#[tokio::test]
async fn stopping_closes_idle_clients_and_returns() {
    let server = TestServer::start().await;
    let mut idle = server.raw().await;
    idle.roundtrip(&resp(&["PING"]), b"+PONG\r\n").await;
    let stopping = tokio::spawn(server.stop());
    assert_eq!(idle.read_to_end().await, b"");
    stopping.await.unwrap().unwrap();
}

#[tokio::test]
async fn save_bgsave_info_and_command_docs() {
    let server = TestServer::start().await;
    server.seed_bloom("k", &["a"]);
    let mut con = server.client().await;
    let () = redis::cmd("SAVE").query_async(&mut con).await.unwrap();
    let started: String = redis::cmd("BGSAVE").query_async(&mut con).await.unwrap();
    assert_eq!(started, "Background saving started");
    let info: String = redis::cmd("INFO").query_async(&mut con).await.unwrap();
    for field in [
        "redis_version:8.0.0\r\n",
        &format!("tcp_port:{}\r\n", server.addr.port()),
        "connected_clients:1\r\n",
        "aof_enabled:0\r\n",
        "db0:keys=1,expires=0,avg_ttl=0\r\n",
    ] {
        assert!(info.contains(field), "{field:?} not in {info}");
    }
    // What redis-cli asks for at start-up: a map of command name to its docs.
    let docs: HashMap<String, redis::Value> = redis::cmd("COMMAND")
        .arg("DOCS")
        .query_async(&mut con)
        .await
        .unwrap();
    assert!(docs.contains_key("bf.add") && docs.contains_key("ping"));
}

#[tokio::test]
async fn filter_commands_run_through_the_keyspace() {
    let server = TestServer::start_with(Config {
        requirepass: Some("pw".into()),
        ..Config::default()
    })
    .await;
    let mut c = server.raw().await;
    // Authentication comes before a filter command's own argument checks.
    c.roundtrip(&resp(&["BF.ADD"]), b"-NOAUTH Authentication required.\r\n")
        .await;
    c.roundtrip(&resp(&["AUTH", "pw"]), b"+OK\r\n").await;
    c.roundtrip(
        &resp(&["BF.ADD"]),
        b"-ERR wrong number of arguments for 'bf.add' command\r\n",
    )
    .await;
    c.roundtrip(&resp(&["BF.ADD", "b", "x"]), b":1\r\n").await;
    c.roundtrip(&resp(&["BF.ADD", "b", "x"]), b":0\r\n").await;
    c.roundtrip(&resp(&["CF.ADD", "c", "x"]), b":1\r\n").await;
    c.roundtrip(&resp(&["TYPE", "b"]), b"+MBbloom--\r\n").await;
    c.roundtrip(&resp(&["TYPE", "c"]), b"+MBbloomCF\r\n").await;
    c.roundtrip(
        &resp(&["CF.ADD", "b", "x"]),
        b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    )
    .await;
    let used = server.shared.keyspace().used_memory();
    assert!(used > 0);
    // Expiry applies to filters like any key, and RENAME carries it.
    c.roundtrip(&resp(&["EXPIRE", "b", "100"]), b":1\r\n").await;
    c.roundtrip(&resp(&["RENAME", "b", "b2"]), b"+OK\r\n").await;
    c.roundtrip(&resp(&["BF.EXISTS", "b2", "x"]), b":1\r\n")
        .await;
    c.roundtrip(&resp(&["TTL", "b2"]), b":100\r\n").await;
    c.roundtrip(&resp(&["DEL", "b2", "c"]), b":2\r\n").await;
    assert_eq!(server.shared.keyspace().used_memory(), 0);
    c.roundtrip(&resp(&["BF.EXISTS", "b2", "x"]), b":0\r\n")
        .await;
}

#[tokio::test]
async fn config_set_reaches_new_filters_and_maxmemory() {
    let server = TestServer::start().await;
    let mut c = server.raw().await;
    c.roundtrip(&resp(&["BF.ADD", "before", "a"]), b":1\r\n")
        .await;
    c.roundtrip(
        &resp(&["CONFIG", "SET", "bf-initial-size", "7"]),
        b"+OK\r\n",
    )
    .await;
    c.roundtrip(&resp(&["BF.ADD", "after", "a"]), b":1\r\n")
        .await;
    c.roundtrip(&resp(&["BF.INFO", "after", "CAPACITY"]), b"*1\r\n:7\r\n")
        .await;
    c.roundtrip(&resp(&["BF.INFO", "before", "CAPACITY"]), b"*1\r\n:100\r\n")
        .await;
    c.roundtrip(&resp(&["CONFIG", "SET", "maxmemory", "1"]), b"+OK\r\n")
        .await;
    c.roundtrip(
        &resp(&["BF.RESERVE", "big", "0.01", "1000"]),
        b"-OOM command not allowed when used memory > 'maxmemory'.\r\n",
    )
    .await;
    c.roundtrip(&resp(&["EXISTS", "big"]), b":0\r\n").await;
}

#[tokio::test]
async fn writers_are_not_blocked_by_a_snapshot_in_progress() {
    use bloomkit_commands::Value;
    let server = TestServer::start().await;
    let mut c = server.raw().await;
    c.roundtrip(&resp(&["BF.ADD", "k", "before"]), b":1\r\n")
        .await;
    // A snapshot has cloned the values and not yet written them: writers go on, on a copy.
    let (_writer, entries) = server.shared.keyspace().begin_snapshot().unwrap();
    c.roundtrip(&resp(&["BF.ADD", "k", "after"]), b":1\r\n")
        .await;
    c.roundtrip(&resp(&["BF.CARD", "k"]), b":2\r\n").await;
    let Value::Bloom(snapshotted) = &*entries[0].value else {
        panic!("a Bloom filter")
    };
    assert_eq!(
        snapshotted.len(),
        1,
        "the snapshot keeps the value as it was"
    );
}

/// Errors that quote a client's argument used to send its CR LF as is, ending the error
/// line early: the client then read the rest as the next reply, and every reply after it
/// answered the wrong request.
#[tokio::test]
async fn line_breaks_quoted_in_an_error_do_not_split_the_reply() {
    let server = TestServer::start().await;
    let mut c = server.raw().await;
    c.roundtrip(
        &resp(&["CONFIG", "SET", "x\r\n+OK", "1"]),
        b"-ERR Unknown option or number of arguments for CONFIG SET - 'x  +ok'\r\n",
    )
    .await;
    server.seed_bloom("k", &[]);
    c.roundtrip(
        &resp(&["EXPIRE", "k", "10", "NX\r\n:1"]),
        b"-ERR Unsupported option NX  :1\r\n",
    )
    .await;
    c.roundtrip(
        &resp(&["HELLO", "2", "x\r\n"]),
        b"-ERR Syntax error in HELLO option 'x  '\r\n",
    )
    .await;
    c.roundtrip(&resp(&["PING"]), b"+PONG\r\n").await;
}
