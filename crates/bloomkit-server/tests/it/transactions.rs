//! `MULTI`/`EXEC`/`DISCARD`/`WATCH`/`UNWATCH` on the wire, with Redis 7's exact replies
//! (checked against Redis 7.0.15), through redis-rs's atomic pipelines, and isolated from
//! other clients' commands.

use crate::common;

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bloomkit_server::config::Config;
use bloomkit_server::keyspace::{Durable, Journal, NoJournal, SnapshotWriter, Ticket};
use bloomkit_server::server::Server;
use bytes::Bytes;
use common::{resp, TestServer};

/// `MULTI` queues, and `EXEC` runs the queue and answers in one array: redis-py's
/// transactional pipeline depends on it (a command run at once, with `EXEC` unknown, would
/// raise an error after applying the writes, and a retry would apply them twice).
#[tokio::test]
async fn queued_commands_run_at_exec_and_answer_in_one_array() {
    let server = TestServer::start().await;
    let mut c = server.raw().await;
    let mut other = server.raw().await;
    c.roundtrip(&resp(&["MULTI"]), b"+OK\r\n").await;
    c.roundtrip(&resp(&["CF.ADD", "cf", "a"]), b"+QUEUED\r\n")
        .await;
    c.roundtrip(&resp(&["CF.ADD", "cf", "a"]), b"+QUEUED\r\n")
        .await;
    c.roundtrip(&resp(&["CF.COUNT", "cf", "a"]), b"+QUEUED\r\n")
        .await;
    // Nothing ran yet.
    other.roundtrip(&resp(&["EXISTS", "cf"]), b":0\r\n").await;
    c.roundtrip(&resp(&["EXEC"]), b"*3\r\n:1\r\n:1\r\n:2\r\n")
        .await;
    other
        .roundtrip(&resp(&["CF.COUNT", "cf", "a"]), b":2\r\n")
        .await;
    // An empty transaction answers an empty array.
    c.roundtrip(&resp(&["MULTI"]), b"+OK\r\n").await;
    c.roundtrip(&resp(&["EXEC"]), b"*0\r\n").await;
}

#[tokio::test]
async fn misuse_answers_redis_errors() {
    let server = TestServer::start().await;
    let mut c = server.raw().await;
    c.roundtrip(&resp(&["EXEC"]), b"-ERR EXEC without MULTI\r\n")
        .await;
    c.roundtrip(&resp(&["DISCARD"]), b"-ERR DISCARD without MULTI\r\n")
        .await;
    c.roundtrip(&resp(&["MULTI"]), b"+OK\r\n").await;
    // These run at once inside MULTI, and do not spoil it.
    c.roundtrip(&resp(&["MULTI"]), b"-ERR MULTI calls can not be nested\r\n")
        .await;
    c.roundtrip(
        &resp(&["WATCH", "k"]),
        b"-ERR WATCH inside MULTI is not allowed\r\n",
    )
    .await;
    c.roundtrip(&resp(&["BF.ADD", "k", "x"]), b"+QUEUED\r\n")
        .await;
    // UNWATCH is queued, as in Redis.
    c.roundtrip(&resp(&["UNWATCH"]), b"+QUEUED\r\n").await;
    c.roundtrip(&resp(&["EXEC"]), b"*2\r\n:1\r\n+OK\r\n").await;
    c.roundtrip(
        &resp(&["WATCH"]),
        b"-ERR wrong number of arguments for 'watch' command\r\n",
    )
    .await;
    // DISCARD drops the queue.
    c.roundtrip(&resp(&["MULTI"]), b"+OK\r\n").await;
    c.roundtrip(&resp(&["BF.ADD", "k", "y"]), b"+QUEUED\r\n")
        .await;
    c.roundtrip(&resp(&["DISCARD"]), b"+OK\r\n").await;
    c.roundtrip(&resp(&["BF.EXISTS", "k", "y"]), b":0\r\n")
        .await;
    c.roundtrip(&resp(&["EXEC"]), b"-ERR EXEC without MULTI\r\n")
        .await;
}

/// A command refused while queuing (unknown, wrong arity, not allowed in a transaction)
/// makes `EXEC` run nothing; an error while running is that command's element, and the
/// others run.
#[tokio::test]
async fn queue_time_errors_abort_and_run_time_errors_do_not() {
    let server = TestServer::start().await;
    let mut c = server.raw().await;
    let aborted = b"-EXECABORT Transaction discarded because of previous errors.\r\n";
    for (bad, error) in [
        (
            resp(&["NOSUCH", "x"]),
            &b"-ERR unknown command 'NOSUCH', with args beginning with: 'x' \r\n"[..],
        ),
        (
            resp(&["DEL"]),
            b"-ERR wrong number of arguments for 'del' command\r\n",
        ),
        (
            resp(&["SAVE"]),
            b"-ERR Command not allowed inside a transaction\r\n",
        ),
    ] {
        c.roundtrip(&resp(&["MULTI"]), b"+OK\r\n").await;
        c.roundtrip(&resp(&["BF.ADD", "b", "x"]), b"+QUEUED\r\n")
            .await;
        c.roundtrip(&bad, error).await;
        c.roundtrip(&resp(&["EXEC"]), aborted).await;
        c.roundtrip(&resp(&["EXISTS", "b"]), b":0\r\n").await;
    }
    c.roundtrip(&resp(&["CF.ADD", "cf", "a"]), b":1\r\n").await;
    c.roundtrip(&resp(&["MULTI"]), b"+OK\r\n").await;
    c.roundtrip(&resp(&["BF.ADD", "b", "x"]), b"+QUEUED\r\n")
        .await;
    // A filter command checks its own arguments, as RedisBloom's do inside Redis: at EXEC.
    c.roundtrip(&resp(&["BF.ADD", "b"]), b"+QUEUED\r\n").await;
    c.roundtrip(&resp(&["BF.ADD", "cf", "x"]), b"+QUEUED\r\n")
        .await;
    c.roundtrip(&resp(&["BF.EXISTS", "b", "x"]), b"+QUEUED\r\n")
        .await;
    c.roundtrip(
        &resp(&["EXEC"]),
        b"*4\r\n:1\r\n-ERR wrong number of arguments for 'bf.add' command\r\n\
          -WRONGTYPE Operation against a key holding the wrong kind of value\r\n:1\r\n",
    )
    .await;
}

#[tokio::test]
async fn a_watched_key_changed_by_another_client_makes_exec_answer_nil() {
    let server = TestServer::start().await;
    let mut c = server.raw().await;
    let mut other = server.raw().await;
    for (protocol, nil) in [("2", &b"*-1\r\n"[..]), ("3", b"_\r\n")] {
        c.send(&resp(&["HELLO", protocol])).await;
        skip_hello(&mut c).await;
        other
            .roundtrip(&resp(&["BF.ADD", "w", "first"]), b":1\r\n")
            .await;
        c.roundtrip(&resp(&["WATCH", "w", "unrelated"]), b"+OK\r\n")
            .await;
        other
            .roundtrip(&resp(&["BF.ADD", "w", "second"]), b":1\r\n")
            .await;
        c.roundtrip(&resp(&["MULTI"]), b"+OK\r\n").await;
        c.roundtrip(&resp(&["BF.ADD", "w", "mine"]), b"+QUEUED\r\n")
            .await;
        c.roundtrip(&resp(&["EXEC"]), nil).await;
        other
            .roundtrip(&resp(&["BF.EXISTS", "w", "mine"]), b":0\r\n")
            .await;
        // EXEC ended the watch: the next transaction runs.
        c.roundtrip(&resp(&["MULTI"]), b"+OK\r\n").await;
        c.roundtrip(&resp(&["DEL", "w"]), b"+QUEUED\r\n").await;
        c.roundtrip(&resp(&["EXEC"]), b"*1\r\n:1\r\n").await;
    }
}

/// What spoils a watch: any change to the key by anyone (a delete, a rename onto it, an
/// expiry, `FLUSHALL` while it exists); not a read, not another key, not a write that
/// changed nothing, not `UNWATCH`ed keys.
#[tokio::test]
async fn what_spoils_a_watch() {
    let server = TestServer::start().await;
    let mut c = server.raw().await;
    let mut other = server.raw().await;
    other
        .roundtrip(&resp(&["BF.ADD", "k", "x"]), b":1\r\n")
        .await;
    other
        .roundtrip(&resp(&["BF.ADD", "src", "x"]), b":1\r\n")
        .await;
    let cases: [(&[&str], bool); 10] = [
        (&["BF.EXISTS", "k", "x"], false),
        (&["BF.ADD", "k", "x"], false),
        (&["BF.ADD", "other", "x"], false),
        (&["BF.ADD", "k", "new item"], true),
        (&["PEXPIRE", "k", "100000"], true),
        (&["PERSIST", "k"], true),
        (&["RENAME", "src", "k"], true),
        (&["DEL", "k"], true),
        // A key that does not exist is watched too: creating it spoils the watch.
        (&["BF.ADD", "k", "back"], true),
        (&["FLUSHALL"], true),
    ];
    for (command, spoils) in cases {
        c.roundtrip(&resp(&["WATCH", "k"]), b"+OK\r\n").await;
        other.send(&resp(command)).await;
        let _ = other.read_line().await;
        c.roundtrip(&resp(&["MULTI"]), b"+OK\r\n").await;
        c.roundtrip(&resp(&["PING"]), b"+QUEUED\r\n").await;
        let expected: &[u8] = if spoils {
            b"*-1\r\n"
        } else {
            b"*1\r\n+PONG\r\n"
        };
        c.send(&resp(&["EXEC"])).await;
        let got = c.read_exact(expected.len()).await;
        assert_eq!(
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(expected),
            "{command:?}"
        );
    }
    // FLUSHALL of a key that does not exist changes nothing watched.
    c.roundtrip(&resp(&["WATCH", "gone"]), b"+OK\r\n").await;
    other.roundtrip(&resp(&["FLUSHALL"]), b"+OK\r\n").await;
    c.roundtrip(&resp(&["MULTI"]), b"+OK\r\n").await;
    c.roundtrip(&resp(&["EXEC"]), b"*0\r\n").await;
    // UNWATCH forgets.
    c.roundtrip(&resp(&["WATCH", "k"]), b"+OK\r\n").await;
    c.roundtrip(&resp(&["UNWATCH"]), b"+OK\r\n").await;
    other
        .roundtrip(&resp(&["BF.ADD", "k", "z"]), b":1\r\n")
        .await;
    c.roundtrip(&resp(&["MULTI"]), b"+OK\r\n").await;
    c.roundtrip(&resp(&["EXEC"]), b"*0\r\n").await;
    // A watched key that expires between WATCH and EXEC spoils it too (Redis 6.0.9 and
    // later). It must still be there at WATCH (PTTL asked after WATCH says so; a machine
    // slow enough to let it expire first tries again with another key), and EXEC comes
    // after its time is up (sleeping past a point in time: load only makes it later).
    for attempt in 0.. {
        let key = format!("brief{attempt}");
        other
            .roundtrip(&resp(&["BF.ADD", &key, "x"]), b":1\r\n")
            .await;
        other
            .roundtrip(&resp(&["PEXPIRE", &key, "300"]), b":1\r\n")
            .await;
        let expired_by = tokio::time::Instant::now() + Duration::from_millis(350);
        c.roundtrip(&resp(&["WATCH", &key]), b"+OK\r\n").await;
        other.send(&resp(&["PTTL", &key])).await;
        if other.read_line().await.starts_with(":-") {
            c.roundtrip(&resp(&["UNWATCH"]), b"+OK\r\n").await;
            assert!(
                attempt < 20,
                "a key with 300 ms to live expired before WATCH 20 times"
            );
            continue;
        }
        tokio::time::sleep_until(expired_by).await;
        break;
    }
    c.roundtrip(&resp(&["MULTI"]), b"+OK\r\n").await;
    c.roundtrip(&resp(&["EXEC"]), b"*-1\r\n").await;
    // A client that leaves takes its watches with it.
    c.roundtrip(&resp(&["WATCH", "a", "b", "a"]), b"+OK\r\n")
        .await;
    assert_eq!(server.shared.keyspace().watches().len(), 2);
    drop(c);
    let deadline = tokio::time::Instant::now() + common::TIMEOUT;
    while !server.shared.keyspace().watches().is_empty() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "watches left behind"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Reads a `HELLO` reply (a map in RESP3, a flat array in RESP2): everything up to and
/// including its module's last field (`args`, an empty array).
async fn skip_hello(c: &mut common::Raw) {
    loop {
        if c.read_line().await == "args" {
            assert_eq!(c.read_line().await, "*0");
            return;
        }
    }
}

/// redis-rs's atomic pipeline (`MULTI` ... `EXEC`) gets every reply, typed.
#[tokio::test]
async fn redis_rs_atomic_pipelines() {
    let server = TestServer::start().await;
    let mut con = server.client().await;
    let (added, again, count): (bool, bool, i64) = redis::pipe()
        .atomic()
        .cmd("CF.ADD")
        .arg("cf")
        .arg("item")
        .cmd("CF.ADDNX")
        .arg("cf")
        .arg("item")
        .cmd("CF.COUNT")
        .arg("cf")
        .arg("item")
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!((added, again, count), (true, false, 1));
    // A run-time error inside the transaction is the query's error; the rest ran.
    let result: redis::RedisResult<(i64, i64)> = redis::pipe()
        .atomic()
        .cmd("BF.ADD")
        .arg("cf")
        .arg("x")
        .cmd("CF.ADD")
        .arg("cf")
        .arg("other")
        .query_async(&mut con)
        .await;
    let error = result.unwrap_err();
    assert!(error.to_string().contains("WRONGTYPE"), "{error}");
    let count: i64 = redis::cmd("CF.COUNT")
        .arg("cf")
        .arg("other")
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(count, 1);
    // WATCH with redis-rs's optimistic-locking helper shape: a nil EXEC is `None`.
    let mut other = server.client().await;
    let () = redis::cmd("WATCH")
        .arg("cf")
        .query_async(&mut con)
        .await
        .unwrap();
    let _: i64 = redis::cmd("CF.ADD")
        .arg("cf")
        .arg("meanwhile")
        .query_async(&mut other)
        .await
        .unwrap();
    let spoiled: Option<(i64,)> = redis::pipe()
        .atomic()
        .cmd("CF.ADD")
        .arg("cf")
        .arg("mine")
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(spoiled, None);
}

/// `EXEC` runs with no other client's command in between: a reader that runs its own
/// transaction never sees one transaction's two writes half done, while writers and
/// readers on other connections run all the while.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_other_command_runs_in_the_middle_of_an_exec() {
    let server = TestServer::start().await;
    const CHECKS: usize = 300;
    let stop = Arc::new(AtomicBool::new(false));
    let mut writers = Vec::new();
    let mut readers = Vec::new();
    let mut connections = Vec::new();
    for _ in 0..4 {
        connections.push(server.client().await);
    }
    for (writer, mut con) in connections.drain(..2).enumerate() {
        let stop = Arc::clone(&stop);
        writers.push(tokio::spawn(async move {
            let mut rounds = 0;
            while !stop.load(Ordering::Relaxed) {
                let item = format!("{writer}-{rounds}");
                // Commands in between, so that the window between the two writes is wide
                // enough for a reader to fall into, were it let in.
                let mut pipe = redis::pipe();
                pipe.atomic().cmd("CF.ADD").arg("left").arg(&item);
                for _ in 0..200 {
                    pipe.cmd("CF.EXISTS").arg("left").arg(&item).ignore();
                }
                pipe.cmd("CF.ADD").arg("right").arg(&item);
                let (a, b): (bool, bool) = pipe.query_async(&mut con).await.unwrap();
                assert!(a && b);
                rounds += 1;
            }
            rounds
        }));
    }
    for mut con in connections {
        readers.push(tokio::spawn(async move {
            let mut most = 0;
            for _ in 0..CHECKS {
                let (left, right): (Vec<redis::Value>, Vec<redis::Value>) = redis::pipe()
                    .atomic()
                    .cmd("CF.INFO")
                    .arg("left")
                    .cmd("CF.INFO")
                    .arg("right")
                    .query_async(&mut con)
                    .await
                    .unwrap_or_default();
                let seen = inserted(&left);
                assert_eq!(seen, inserted(&right), "a transaction seen half done");
                most = most.max(seen);
            }
            most
        }));
    }
    let mut most = 0;
    for reader in readers {
        most = most.max(reader.await.unwrap());
    }
    stop.store(true, Ordering::Relaxed);
    let mut rounds = 0;
    for writer in writers {
        rounds += writer.await.unwrap();
    }
    assert!(
        most > 0 && rounds > 0,
        "the readers saw writes: {most} of {rounds}"
    );
    let mut con = server.client().await;
    let count: i64 = redis::cmd("CF.COUNT")
        .arg("right")
        .arg("1-0")
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(count, 1);
}

/// `Number of items inserted` out of a `CF.INFO` reply (0 for a missing key's error).
fn inserted(info: &[redis::Value]) -> i64 {
    info.chunks(2)
        .find_map(|pair| match pair {
            [redis::Value::SimpleString(name), redis::Value::Int(n)]
                if name == "Number of items inserted" =>
            {
                Some(*n)
            }
            [redis::Value::BulkString(name), redis::Value::Int(n)]
                if name == b"Number of items inserted" =>
            {
                Some(*n)
            }
            _ => None,
        })
        .unwrap_or(0)
}

/// A journal whose writes can be refused at will, as a failing disk's are.
#[derive(Default)]
struct Refusing {
    refuse: AtomicBool,
}

impl Journal for Refusing {
    fn append(&self, commands: &[Vec<Bytes>]) -> Option<Ticket> {
        NoJournal.append(commands)
    }
    fn durable(&self, ticket: Ticket) -> Durable<'_> {
        NoJournal.durable(ticket)
    }
    fn refuses_writes(&self) -> Option<String> {
        self.refuse
            .load(Ordering::Relaxed)
            .then(|| "MISCONF Errors writing to the AOF file: No space left on device".to_string())
    }
    fn begin_snapshot(&self) -> io::Result<Box<dyn SnapshotWriter>> {
        NoJournal.begin_snapshot()
    }
    fn enabled(&self) -> bool {
        true
    }
}

/// While the log refuses writes, a write queued inside `MULTI` is refused (and spoils the
/// transaction), and an `EXEC` of queued writes is refused whole, as Redis's
/// `processCommand` does; reads go on. Past `maxmemory`, every command queued is refused.
#[tokio::test]
async fn misconf_and_oom_refuse_the_transaction_as_redis_does() {
    let journal = Arc::new(Refusing::default());
    let seam = Arc::clone(&journal);
    let server = Server::bind_with(
        Config {
            port: 0,
            ..Config::default()
        },
        move |_| Ok(seam as Arc<dyn Journal>),
    )
    .await
    .unwrap();
    let server = TestServer::run(server);
    let mut c = server.raw().await;
    let misconf = "MISCONF Errors writing to the AOF file: No space left on device";
    journal.refuse.store(true, Ordering::Relaxed);
    c.roundtrip(&resp(&["MULTI"]), b"+OK\r\n").await;
    c.roundtrip(&resp(&["BF.EXISTS", "k", "x"]), b"+QUEUED\r\n")
        .await;
    c.roundtrip(
        &resp(&["BF.ADD", "k", "x"]),
        format!("-{misconf}\r\n").as_bytes(),
    )
    .await;
    c.roundtrip(
        &resp(&["EXEC"]),
        b"-EXECABORT Transaction discarded because of previous errors.\r\n",
    )
    .await;
    // Reads only: they run.
    c.roundtrip(&resp(&["MULTI"]), b"+OK\r\n").await;
    c.roundtrip(&resp(&["BF.EXISTS", "k", "x"]), b"+QUEUED\r\n")
        .await;
    c.roundtrip(&resp(&["EXEC"]), b"*1\r\n:0\r\n").await;
    // Queued while the log was fine, refused at EXEC.
    journal.refuse.store(false, Ordering::Relaxed);
    c.roundtrip(&resp(&["MULTI"]), b"+OK\r\n").await;
    c.roundtrip(&resp(&["BF.ADD", "k", "x"]), b"+QUEUED\r\n")
        .await;
    journal.refuse.store(true, Ordering::Relaxed);
    c.roundtrip(
        &resp(&["EXEC"]),
        format!("-EXECABORT Transaction discarded because of: {misconf}\r\n").as_bytes(),
    )
    .await;
    journal.refuse.store(false, Ordering::Relaxed);
    c.roundtrip(&resp(&["BF.EXISTS", "k", "x"]), b":0\r\n")
        .await;

    // Over maxmemory (lowered below what the keys hold): nothing can be queued.
    c.roundtrip(&resp(&["BF.RESERVE", "big", "0.01", "10000"]), b"+OK\r\n")
        .await;
    c.roundtrip(&resp(&["CONFIG", "SET", "maxmemory", "1"]), b"+OK\r\n")
        .await;
    let oom = b"-OOM command not allowed when used memory > 'maxmemory'.\r\n";
    c.roundtrip(&resp(&["MULTI"]), b"+OK\r\n").await;
    c.roundtrip(&resp(&["PING"]), oom).await;
    c.roundtrip(
        &resp(&["EXEC"]),
        b"-EXECABORT Transaction discarded because of previous errors.\r\n",
    )
    .await;
    c.roundtrip(&resp(&["MULTI"]), b"+OK\r\n").await;
    c.roundtrip(&resp(&["CONFIG", "SET", "maxmemory", "0"]), oom)
        .await;
    c.roundtrip(&resp(&["DISCARD"]), b"+OK\r\n").await;
}

/// `EXEC`'s writes reach the log between `MULTI` and `EXEC` records and come back after a
/// restart; a transaction of reads leaves nothing in the log.
#[tokio::test]
async fn exec_logs_its_writes_as_one_transaction() {
    let dir = tempfile::tempdir().unwrap();
    let config = Config {
        port: 0,
        dir: dir.path().to_path_buf(),
        ..Config::default()
    };
    let server = TestServer::run(Server::open(config.clone()).await.unwrap());
    let mut c = server.raw().await;
    c.roundtrip(&resp(&["MULTI"]), b"+OK\r\n").await;
    c.roundtrip(&resp(&["BF.EXISTS", "a", "x"]), b"+QUEUED\r\n")
        .await;
    c.roundtrip(&resp(&["EXEC"]), b"*1\r\n:0\r\n").await;
    let log = dir.path().join(bloomkit_server::persist::log_file_name(1));
    let empty = std::fs::read(&log).unwrap();
    assert_eq!(empty.len(), 24, "a transaction of reads logs nothing");
    c.roundtrip(&resp(&["MULTI"]), b"+OK\r\n").await;
    c.roundtrip(&resp(&["BF.ADD", "a", "x"]), b"+QUEUED\r\n")
        .await;
    c.roundtrip(&resp(&["CF.ADD", "b", "y"]), b"+QUEUED\r\n")
        .await;
    c.roundtrip(&resp(&["EXEC"]), b"*2\r\n:1\r\n:1\r\n").await;
    let bytes = std::fs::read(&log).unwrap();
    let text = String::from_utf8_lossy(&bytes);
    let multi = text.find("MULTI").expect("a MULTI record");
    let exec = text.find("EXEC").expect("an EXEC record");
    // Logged in their replayable forms: a RESERVE for each key created, then the adds.
    let first = text.find("BF.RESERVE").expect("BF.RESERVE");
    let last = text.find("CF.ADD").expect("CF.ADD");
    assert!(multi < first && first < last && last < exec, "{text:?}");
    drop(c);
    server.stop().await.unwrap();
    let server = TestServer::run(Server::open(config).await.unwrap());
    let mut c = server.raw().await;
    c.roundtrip(&resp(&["BF.EXISTS", "a", "x"]), b":1\r\n")
        .await;
    c.roundtrip(&resp(&["CF.COUNT", "b", "y"]), b":1\r\n").await;
}
