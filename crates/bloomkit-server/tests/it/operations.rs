//! What an operator sees and what bounds the server's memory, through the network: `CLIENT
//! LIST`/`KILL`, `SLOWLOG`, `INFO commandstats`/`errorstats`/`filters`, `MEMORY USAGE`, the
//! clients' buffer limits, `maxmemory` counting the clients, and `maxmemory-policy`.

use crate::common;

use std::time::{Duration, Instant};

use bloomkit_server::config::Config;
use common::{bulk, resp, until, Raw, TestServer};

/// A bulk reply's text, read off a raw connection.
async fn read_bulk(c: &mut Raw) -> String {
    let header = c.read_line().await;
    let len: usize = header
        .strip_prefix('$')
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("not a bulk string: {header}"));
    let body = c.read_exact(len + 2).await;
    String::from_utf8(body[..len].to_vec()).unwrap()
}

/// Sends a request and returns its bulk reply's text.
async fn bulk_of(c: &mut Raw, args: &[&str]) -> String {
    c.send(&resp(args)).await;
    read_bulk(c).await
}

/// The next `n` lines of simple replies.
async fn simple_lines(c: &mut Raw, n: usize) -> Vec<String> {
    let mut lines = Vec::with_capacity(n);
    for _ in 0..n {
        lines.push(c.read_line().await);
    }
    lines
}

/// The `field=value` pairs of a `CLIENT LIST` line.
fn fields(line: &str) -> Vec<(String, String)> {
    line.split(' ')
        .filter_map(|pair| pair.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn field(line: &str, name: &str) -> String {
    fields(line)
        .into_iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v)
        .unwrap_or_else(|| panic!("no {name} in {line}"))
}

/// An `INFO` field's value.
fn info_field(info: &str, name: &str) -> Option<String> {
    info.lines()
        .find_map(|line| line.strip_prefix(&format!("{name}:")))
        .map(str::to_string)
}

/// Waits (boundedly) until `check` holds.
async fn eventually(what: &str, mut check: impl AsyncFnMut() -> bool) {
    let deadline = Instant::now() + bloomkit_testkit::wait::GENEROUS;
    while !check().await {
        assert!(Instant::now() < deadline, "timed out waiting: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn client_list_shows_every_client_and_client_kill_closes_the_chosen_one() {
    let server = TestServer::start().await;
    let mut one = server.raw().await;
    one.roundtrip(&resp(&["CLIENT", "SETNAME", "one"]), b"+OK\r\n")
        .await;
    one.send(&resp(&["CLIENT", "ID"])).await;
    let one_id: u64 = one.read_line().await[1..].parse().unwrap();
    let mut two = server.raw().await;
    two.roundtrip(&resp(&["CLIENT", "SETINFO", "LIB-NAME", "raw"]), b"+OK\r\n")
        .await;
    two.send(&resp(&["CLIENT", "ID"])).await;
    let two_id = two.read_line().await[1..].to_string();
    let list = bulk_of(&mut two, &["CLIENT", "LIST"]).await;
    let lines: Vec<&str> = list.lines().collect();
    assert_eq!(lines.len(), 2, "{list}");
    assert!(list.ends_with('\n'));
    let first = lines[0];
    // Redis 7.2's fields, in its order.
    let names: Vec<String> = fields(first).into_iter().map(|(k, _)| k).collect();
    assert_eq!(
        names,
        [
            "id",
            "addr",
            "laddr",
            "fd",
            "name",
            "age",
            "idle",
            "flags",
            "db",
            "sub",
            "psub",
            "ssub",
            "multi",
            "watch",
            "qbuf",
            "qbuf-free",
            "argv-mem",
            "multi-mem",
            "rbs",
            "rbp",
            "obl",
            "oll",
            "omem",
            "tot-mem",
            "events",
            "cmd",
            "user",
            "redir",
            "resp",
            "lib-name",
            "lib-ver"
        ]
    );
    assert_eq!(field(first, "id"), one_id.to_string());
    assert_eq!(field(first, "name"), "one");
    assert_eq!(field(first, "cmd"), "client|id");
    assert_eq!(field(first, "laddr"), server.addr.to_string());
    assert!(field(first, "addr").starts_with("127.0.0.1:"));
    assert!(field(first, "tot-mem").parse::<u64>().unwrap() > 0);
    assert_eq!(
        field(lines[1], "cmd"),
        "client|list",
        "the caller's running command"
    );
    assert_eq!(field(lines[1], "lib-name"), "raw");
    let info = bulk_of(&mut two, &["CLIENT", "INFO"]).await;
    assert_eq!(info.lines().count(), 1);
    assert_eq!(field(&info, "cmd"), "client|info");
    let only_one = bulk_of(&mut two, &["CLIENT", "LIST", "ID", &one_id.to_string()]).await;
    assert_eq!(field(&only_one, "name"), "one");
    assert_eq!(
        bulk_of(&mut two, &["CLIENT", "LIST", "TYPE", "pubsub"]).await,
        ""
    );

    // Errors, as Redis words them.
    for (request, error) in [
        (
            &["CLIENT", "KILL", "10.0.0.1:1"][..],
            "-ERR No such client\r\n",
        ),
        (
            &["CLIENT", "KILL", "ID", "0"],
            "-ERR client-id should be greater than 0\r\n",
        ),
        (
            &["CLIENT", "KILL", "USER", "bob"],
            "-ERR No such user 'bob'\r\n",
        ),
        (
            &["CLIENT", "KILL", "TYPE", "odd"],
            "-ERR Unknown client type 'odd'\r\n",
        ),
        (
            &["CLIENT", "KILL", "ID", "1", "SKIPME"],
            "-ERR syntax error\r\n",
        ),
    ] {
        two.roundtrip(&resp(request), error.as_bytes()).await;
    }
    // By id: the other client is closed, the caller goes on.
    two.roundtrip(
        &resp(&["CLIENT", "KILL", "ID", &one_id.to_string()]),
        b":1\r\n",
    )
    .await;
    assert_eq!(one.read_to_end().await, b"");
    eventually("the killed client leaves the list", async || {
        bulk_of(&mut two, &["CLIENT", "LIST"]).await.lines().count() == 1
    })
    .await;
    // The old form, by address; and SKIPME no: the caller gets its reply, then is closed.
    let mut three = server.raw().await;
    let list = bulk_of(&mut two, &["CLIENT", "LIST"]).await;
    let three_addr = list
        .lines()
        .find(|line| field(line, "id") != two_id)
        .map(|line| field(line, "addr"))
        .unwrap();
    two.roundtrip(&resp(&["CLIENT", "KILL", &three_addr]), b"+OK\r\n")
        .await;
    assert_eq!(three.read_to_end().await, b"");
    two.send(&resp(&[
        "CLIENT", "KILL", "USER", "default", "SKIPME", "no",
    ]))
    .await;
    assert_eq!(two.read_to_end().await, b":1\r\n");
}

#[tokio::test]
async fn slowlog_keeps_what_ran_longer_than_its_threshold() {
    let server = TestServer::start().await;
    let mut c = server.raw().await;
    c.roundtrip(&resp(&["SLOWLOG", "LEN"]), b":0\r\n").await;
    c.roundtrip(
        &resp(&["CONFIG", "SET", "slowlog-log-slower-than", "0"]),
        b"+OK\r\n",
    )
    .await;
    c.roundtrip(&resp(&["CLIENT", "SETNAME", "slow"]), b"+OK\r\n")
        .await;
    c.roundtrip(&resp(&["PING"]), b"+PONG\r\n").await;
    c.send(&resp(&["SLOWLOG", "GET", "1"])).await;
    assert_eq!(c.read_line().await, "*1");
    assert_eq!(c.read_line().await, "*6");
    let id: u64 = c.read_line().await[1..].parse().unwrap();
    let time: u64 = c.read_line().await[1..].parse().unwrap();
    let now = bloomkit_server::keyspace::now_ms() / 1000;
    assert!(time <= now && time + 10 >= now, "{time} vs {now}");
    let micros: i64 = c.read_line().await[1..].parse().unwrap();
    assert!(micros >= 0);
    assert_eq!(c.read_line().await, "*1");
    assert_eq!(read_bulk(&mut c).await, "PING");
    assert!(read_bulk(&mut c).await.starts_with("127.0.0.1:"));
    assert_eq!(read_bulk(&mut c).await, "slow");
    assert!(id >= 2, "CONFIG SET and CLIENT SETNAME came first");
    c.send(&resp(&["SLOWLOG", "LEN"])).await;
    let len: u64 = c.read_line().await[1..].parse().unwrap();
    assert_eq!(len, 4, "CONFIG SET, CLIENT SETNAME, PING, SLOWLOG GET");
    c.roundtrip(&resp(&["SLOWLOG", "RESET"]), b"+OK\r\n").await;
    // The reset itself is the one entry, as in Redis.
    c.roundtrip(&resp(&["SLOWLOG", "LEN"]), b":1\r\n").await;
    c.roundtrip(
        &resp(&["CONFIG", "SET", "slowlog-log-slower-than", "10000"]),
        b"+OK\r\n",
    )
    .await;
    c.roundtrip(&resp(&["SLOWLOG", "RESET"]), b"+OK\r\n").await;
    c.roundtrip(&resp(&["PING"]), b"+PONG\r\n").await;
    c.roundtrip(&resp(&["SLOWLOG", "LEN"]), b":0\r\n").await;
    c.roundtrip(
        &resp(&["SLOWLOG", "GET", "-2"]),
        b"-ERR count should be greater than or equal to -1\r\n",
    )
    .await;
    c.roundtrip(&resp(&["SLOWLOG", "GET", "-1"]), b"*0\r\n")
        .await;
}

#[tokio::test]
async fn info_counts_calls_rejections_failures_and_errors_by_code() {
    let server = TestServer::start().await;
    let mut c = server.raw().await;
    c.roundtrip(&resp(&["BF.ADD", "k", "a"]), b":1\r\n").await;
    c.roundtrip(&resp(&["BF.ADD", "k", "b"]), b":1\r\n").await;
    c.roundtrip(
        &resp(&["BF.ADD", "k"]),
        b"-ERR wrong number of arguments for 'bf.add' command\r\n",
    )
    .await;
    c.roundtrip(
        &resp(&["CF.ADD", "k", "x"]),
        b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    )
    .await;
    c.send(&resp(&["NOPE"])).await;
    c.read_line().await;
    let stats = bulk_of(&mut c, &["INFO", "commandstats"]).await;
    assert!(stats.starts_with("# Commandstats\r\n"), "{stats}");
    let bf_add = info_field(&stats, "cmdstat_bf.add").unwrap();
    assert!(bf_add.starts_with("calls=2,usec="), "{bf_add}");
    assert!(
        bf_add.ends_with(",rejected_calls=1,failed_calls=0"),
        "{bf_add}"
    );
    let cf_add = info_field(&stats, "cmdstat_cf.add").unwrap();
    assert!(cf_add.starts_with("calls=1,") && cf_add.ends_with(",rejected_calls=0,failed_calls=1"));
    let errors = bulk_of(&mut c, &["INFO", "errorstats"]).await;
    assert_eq!(
        errors,
        "# Errorstats\r\nerrorstat_ERR:count=2\r\nerrorstat_WRONGTYPE:count=1\r\n"
    );
    let all = bulk_of(&mut c, &["INFO", "stats"]).await;
    assert_eq!(
        info_field(&all, "total_error_replies").as_deref(),
        Some("3")
    );
    // Redis leaves commandstats out of the default INFO.
    let default = bulk_of(&mut c, &["INFO"]).await;
    assert!(!default.contains("# Commandstats") && default.contains("# Errorstats"));
    assert!(bulk_of(&mut c, &["INFO", "everything"])
        .await
        .contains("# Commandstats"));
}

#[tokio::test]
async fn memory_usage_and_the_filters_section() {
    let server = TestServer::start().await;
    let mut c = server.raw().await;
    c.roundtrip(&resp(&["BF.RESERVE", "bf", "0.01", "1000"]), b"+OK\r\n")
        .await;
    c.send(&resp(&["MEMORY", "USAGE", "bf"])).await;
    let usage: usize = c.read_line().await[1..].parse().unwrap();
    // The one key's value, name and table entry; the dataset counts the shard's whole
    // table (room for 3 keys) instead of the entry.
    let dataset = server.shared.keyspace().used_memory();
    let table = bloomkit_server::keyspace::memory::table_cost(3);
    let entry = std::mem::size_of::<(bytes::Bytes, bloomkit_server::keyspace::Entry)>() + 1;
    assert_eq!(usage, dataset - table + entry, "{usage} for {dataset}");
    c.roundtrip(&resp(&["MEMORY", "USAGE", "nope"]), b"$-1\r\n")
        .await;
    c.roundtrip(
        &resp(&["MEMORY", "USAGE", "bf", "SAMPLES", "x"]),
        b"-ERR syntax error\r\n",
    )
    .await;

    let filters = bulk_of(&mut c, &["INFO", "filters"]).await;
    assert_eq!(
        filters,
        "# Filters\r\nfilters_past_capacity:0\r\nfilters_above_target_rate:0\r\n"
    );
    // A cuckoo filter reserved for 600 items takes 700 before its buckets fill.
    c.roundtrip(&resp(&["CF.RESERVE", "cf", "600"]), b"+OK\r\n")
        .await;
    let mut pipeline = Vec::new();
    for i in 0..700 {
        pipeline.extend(resp(&["CF.ADD", "cf", &i.to_string()]));
    }
    c.send(&pipeline).await;
    c.expect(&b":1\r\n".repeat(700)).await;
    let filters = bulk_of(&mut c, &["INFO", "filters"]).await;
    for (name, expected) in [
        ("filters_past_capacity", "1"),
        ("filters_above_target_rate", "1"),
        ("worst_filter_key", "cf"),
        ("worst_filter_items", "700"),
        ("worst_filter_capacity", "600"),
    ] {
        assert_eq!(
            info_field(&filters, name).as_deref(),
            Some(expected),
            "{name}"
        );
    }
    // CF.INFO is RedisBloom's, unchanged, then bloomkit's two fields (doubles, bulk strings
    // in RESP2).
    c.send(&resp(&["CF.INFO", "cf"])).await;
    assert_eq!(c.read_line().await, "*20");
    let info: Vec<String> = simple_lines(&mut c, 16).await;
    assert_eq!(info[0], "+Size");
    assert_eq!(info[6], "+Number of items inserted");
    assert_eq!(info[7], ":700");
    let ours: Vec<String> = simple_lines(&mut c, 6).await;
    assert_eq!(
        (ours[0].as_str(), ours[3].as_str()),
        ("+Load factor", "+Estimated error rate")
    );
    c.roundtrip(&resp(&["DEL", "cf"]), b":1\r\n").await;
    let filters = bulk_of(&mut c, &["INFO", "filters"]).await;
    assert_eq!(
        info_field(&filters, "filters_past_capacity").as_deref(),
        Some("0")
    );
    assert_eq!(info_field(&filters, "worst_filter_key"), None);
}

/// `BF.RESERVE key 0.01 items`: about 1.4 bytes an item, which `BF.SCANDUMP key 1`
/// answers in one chunk.
async fn big_filter(c: &mut Raw, key: &str, items: u64) {
    c.roundtrip(
        &resp(&["BF.RESERVE", key, "0.01", &items.to_string()]),
        b"+OK\r\n",
    )
    .await;
}

#[tokio::test]
async fn a_client_over_the_hard_output_limit_is_disconnected() {
    let server = TestServer::start().await;
    let mut admin = server.raw().await;
    admin
        .roundtrip(
            &resp(&[
                "CONFIG",
                "SET",
                "client-output-buffer-limit",
                "normal 100kb 0 0",
            ]),
            b"+OK\r\n",
        )
        .await;
    admin
        .send(&resp(&["CONFIG", "GET", "client-output-buffer-limit"]))
        .await;
    assert_eq!(admin.read_line().await, "*2");
    read_bulk(&mut admin).await;
    assert!(read_bulk(&mut admin)
        .await
        .starts_with("normal 102400 0 0 slave "));
    big_filter(&mut admin, "big", 1_000_000).await;
    let mut reader = server.raw().await;
    reader.send(&resp(&["BF.SCANDUMP", "big", "1"])).await;
    // A 1.2 MB chunk passes 100 KB at once: closed, the reply never sent.
    assert_eq!(reader.read_to_end().await, b"");
    // Smaller replies are not affected.
    admin.roundtrip(&resp(&["PING"]), b"+PONG\r\n").await;
}

#[tokio::test]
async fn a_client_over_the_soft_output_limit_for_its_seconds_is_disconnected() {
    let server = TestServer::start().await;
    let mut admin = server.raw().await;
    admin
        .roundtrip(
            &resp(&[
                "CONFIG",
                "SET",
                "client-output-buffer-limit",
                "normal 0 100kb 1",
            ]),
            b"+OK\r\n",
        )
        .await;
    big_filter(&mut admin, "big", 10_000_000).await;
    let mut stalled = server.raw().await;
    stalled.send(&resp(&["BF.SCANDUMP", "big", "1"])).await;
    // It does not read: the 14 MB reply stays above 100 KB, and after a second the
    // client is closed. It is read from only once the server has closed it (reading
    // earlier would drain the buffer below the limit), and then gets the part the socket
    // took, then the end.
    assert!(
        until(async || {
            let info = bulk_of(&mut admin, &["INFO", "clients"]).await;
            info_field(&info, "connected_clients").as_deref() == Some("1")
        })
        .await,
        "the stalled client was closed"
    );
    let got = stalled.read_to_end().await;
    assert!(got.len() < 12_000_000, "{}", got.len());
}

#[tokio::test]
async fn a_client_that_pipelines_without_reading_is_not_read_from() {
    let server = TestServer::start().await;
    let mut admin = server.raw().await;
    big_filter(&mut admin, "big", 1_000_000).await;
    let chunk = 1_400_000; // about what BF.SCANDUMP big 1 answers
    let keyspace = server.shared.keyspace();
    let base = keyspace.client_memory();
    // A hundred thousand SCANDUMPs, 140 GB of replies, never read.
    let mut flood = server.raw().await;
    let mut requests = Vec::new();
    for _ in 0..100_000 {
        requests.extend(resp(&["BF.SCANDUMP", "big", "1"]));
    }
    let sender = tokio::spawn(async move {
        // Blocks once the server stops reading; dropped at the end of the test.
        flood.send(&requests).await;
        flood
    });
    // Once replies are held for it (the flood is being answered), a while more: whatever
    // the server would pile up, it has had the time to.
    assert!(until(async || keyspace.client_memory().saturating_sub(base) >= chunk).await);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let held = keyspace.client_memory() - base;
    assert!(
        held < 2 * chunk + (1 << 20),
        "{held} bytes held for a client that does not read"
    );
    let list = bulk_of(&mut admin, &["CLIENT", "LIST"]).await;
    let omem: usize = list
        .lines()
        .map(|l| field(l, "omem").parse::<usize>().unwrap())
        .max()
        .unwrap();
    assert!(omem < 2 * chunk, "omem={omem}");
    let info = bulk_of(&mut admin, &["INFO", "clients"]).await;
    let peak: usize = info_field(&info, "client_recent_max_output_buffer")
        .unwrap()
        .parse()
        .unwrap();
    assert!(peak > 0 && peak < 2 * chunk, "{peak}");
    sender.abort();
}

#[tokio::test]
async fn a_request_past_the_query_buffer_limit_is_refused_before_it_is_buffered() {
    let server = TestServer::start().await;
    let mut admin = server.raw().await;
    admin
        .roundtrip(
            &resp(&["CONFIG", "SET", "client-query-buffer-limit", "1mb"]),
            b"+OK\r\n",
        )
        .await;
    let mut big = server.raw().await;
    big.send(b"*2\r\n$4\r\nECHO\r\n$2000000\r\n").await;
    let reply = big.read_to_end().await;
    assert_eq!(
        String::from_utf8_lossy(&reply),
        "-ERR Protocol error: the request is larger than client-query-buffer-limit (1048576 bytes): send smaller requests, or raise the limit (CONFIG SET client-query-buffer-limit)\r\n"
    );
    assert!(server.shared.keyspace().client_memory() < 256 << 10);
    admin
        .roundtrip(
            &resp(&["CONFIG", "GET", "client-query-buffer-limit"]),
            format!(
                "*2\r\n{}{}",
                bulk("client-query-buffer-limit"),
                bulk("1048576")
            )
            .as_bytes(),
        )
        .await;
}

#[tokio::test]
async fn maxmemory_counts_the_clients_and_refuses_what_would_pass_it() {
    let server = TestServer::start_with(Config {
        maxmemory: 8 << 20,
        ..Config::default()
    })
    .await;
    let mut c = server.raw().await;
    let info = bulk_of(&mut c, &["INFO", "memory"]).await;
    let used: u64 = info_field(&info, "used_memory").unwrap().parse().unwrap();
    let dataset: u64 = info_field(&info, "used_memory_dataset")
        .unwrap()
        .parse()
        .unwrap();
    let clients: u64 = info_field(&info, "mem_clients_normal")
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(dataset, 0);
    assert!(clients > 0, "{info}");
    assert_eq!(used, dataset + clients);

    // A 20 MB argument does not fit: refused with OOM, its bytes dropped as they come, and
    // the connection goes on.
    let mut request = b"*2\r\n$4\r\nECHO\r\n$20000000\r\n".to_vec();
    request.extend(vec![b'x'; 20_000_000]);
    request.extend_from_slice(b"\r\n");
    c.send(&request).await;
    c.expect(b"-OOM command not allowed when used memory > 'maxmemory'.\r\n")
        .await;
    c.roundtrip(&resp(&["PING"]), b"+PONG\r\n").await;
    assert!(server.shared.keyspace().client_memory() < 1 << 20);

    // A 5 MB filter fits; its 5 MB dump chunk does not fit beside it.
    big_filter(&mut c, "big", 4_000_000).await;
    c.roundtrip(
        &resp(&["BF.SCANDUMP", "big", "1"]),
        b"-OOM command not allowed when used memory > 'maxmemory'.\r\n",
    )
    .await;
    let errors = bulk_of(&mut c, &["INFO", "errorstats"]).await;
    assert!(errors.contains("errorstat_OOM:count=2\r\n"), "{errors}");
    // With more room, the same chunk is sent.
    c.roundtrip(&resp(&["CONFIG", "SET", "maxmemory", "32mb"]), b"+OK\r\n")
        .await;
    c.send(&resp(&["BF.SCANDUMP", "big", "1"])).await;
    assert_eq!(c.read_line().await, "*2");
}

#[tokio::test]
async fn maxmemory_policy_evicts_instead_of_answering_oom() {
    let server = TestServer::start_with(Config {
        maxmemory: 3 << 20,
        ..Config::default()
    })
    .await;
    let mut c = server.raw().await;
    for key in ["a", "b"] {
        big_filter(&mut c, key, 1_000_000).await;
    }
    c.roundtrip(
        &resp(&["BF.RESERVE", "c", "0.01", "1000000"]),
        b"-OOM command not allowed when used memory > 'maxmemory'.\r\n",
    )
    .await;
    c.roundtrip(
        &resp(&["CONFIG", "SET", "maxmemory-policy", "lru"]),
        b"-ERR CONFIG SET failed (possibly related to argument 'maxmemory-policy') - argument(s) must be one of the following: volatile-lru, allkeys-lru, volatile-lfu, allkeys-lfu, volatile-random, allkeys-random, volatile-ttl, noeviction\r\n",
    )
    .await;
    c.roundtrip(
        &resp(&["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"]),
        b"+OK\r\n",
    )
    .await;
    // "a" is used after "b", on a later tick of the access clock (a tenth of a second,
    // waited for rather than slept): "b" is the one to go.
    let keyspace = server.shared.keyspace();
    let b_used = keyspace.clock_ticks();
    assert!(until(async || keyspace.clock_ticks() > b_used).await);
    c.roundtrip(&resp(&["BF.EXISTS", "a", "x"]), b":0\r\n")
        .await;
    c.roundtrip(&resp(&["BF.RESERVE", "c", "0.01", "1000000"]), b"+OK\r\n")
        .await;
    c.roundtrip(&resp(&["EXISTS", "a", "b", "c"]), b":2\r\n")
        .await;
    c.roundtrip(&resp(&["EXISTS", "b"]), b":0\r\n").await;
    let info = bulk_of(&mut c, &["INFO"]).await;
    assert_eq!(info_field(&info, "evicted_keys").as_deref(), Some("1"));
    assert_eq!(
        info_field(&info, "maxmemory_policy").as_deref(),
        Some("allkeys-lru")
    );
}

/// A slow log entry keeps at most 32 arguments (the 32nd says how many more there were) and
/// at most 128 bytes of each (with how many more it had), as Redis's does: a slow command of
/// huge arguments never makes the log hold them.
#[tokio::test]
async fn slowlog_keeps_32_arguments_of_128_bytes() {
    let server = TestServer::start().await;
    let mut c = server.raw().await;
    c.roundtrip(
        &resp(&["CONFIG", "SET", "slowlog-log-slower-than", "0"]),
        b"+OK\r\n",
    )
    .await;
    let long = "y".repeat(100_000);
    let mut args = vec!["BF.MADD", "k", &long];
    let items: Vec<String> = (0..50).map(|i| format!("i{i}")).collect();
    args.extend(items.iter().map(String::as_str));
    c.send(&resp(&args)).await;
    assert_eq!(c.read_line().await, "*51");
    for _ in 0..51 {
        assert_eq!(c.read_line().await, ":1");
    }
    c.send(&resp(&["SLOWLOG", "GET", "1"])).await;
    assert_eq!(c.read_line().await, "*1");
    assert_eq!(c.read_line().await, "*6");
    for _ in 0..3 {
        c.read_line().await;
    }
    assert_eq!(c.read_line().await, "*32");
    assert_eq!(read_bulk(&mut c).await, "BF.MADD");
    assert_eq!(read_bulk(&mut c).await, "k");
    assert_eq!(
        read_bulk(&mut c).await,
        format!("{}... (99872 more bytes)", "y".repeat(128))
    );
    for i in 0..28 {
        assert_eq!(read_bulk(&mut c).await, format!("i{i}"));
    }
    assert_eq!(read_bulk(&mut c).await, "... (22 more arguments)");
}
