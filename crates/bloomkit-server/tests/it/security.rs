//! What a client can do before `AUTH`, and what it cannot: Redis 7's limits on an
//! unauthenticated connection (10 arguments, 16 KiB each), memory that never counts against
//! other clients, an empty password that is no password, `DEBUG` refused unless
//! `--enable-debug-command` allows it, and `CONFIG REWRITE` that keeps a password out of the
//! file and never writes through a planted link. All through the real protocol.

use crate::common;

use bloomkit_server::config::{Config, DebugCommand, PasswordSource};
use common::{bulk, connect_from, listening_everywhere, resp, until, TestServer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn with_password() -> Config {
    Config {
        requirepass: Some("s3cret".into()),
        ..Config::default()
    }
}

/// Reads until the server closes the connection (or 10 s pass).
async fn until_closed(stream: &mut TcpStream) -> Vec<u8> {
    let mut got = Vec::new();
    let read = tokio::time::timeout(common::TIMEOUT, stream.read_to_end(&mut got)).await;
    assert!(read.is_ok(), "the server did not close the connection");
    got
}

#[tokio::test]
async fn before_auth_a_request_is_held_to_redis_limits() {
    let server = TestServer::start_with(with_password()).await;
    for (request, error) in [
        (
            b"*11\r\n".to_vec(),
            &b"-ERR Protocol error: unauthenticated multibulk length\r\n"[..],
        ),
        (
            b"*1\r\n$16385\r\n".to_vec(),
            b"-ERR Protocol error: unauthenticated bulk length\r\n",
        ),
        // The header alone is enough: nothing more of it is read.
        (
            b"*2\r\n$4\r\nECHO\r\n$104857600\r\n".to_vec(),
            b"-ERR Protocol error: unauthenticated bulk length\r\n",
        ),
    ] {
        let mut c = TcpStream::connect(server.addr).await.unwrap();
        c.write_all(&request).await.unwrap();
        assert_eq!(
            String::from_utf8_lossy(&until_closed(&mut c).await),
            String::from_utf8_lossy(error)
        );
    }
    // Within the limits: NOAUTH, and the connection stays.
    let mut c = server.raw().await;
    let ten = vec!["PING"; 10];
    c.roundtrip(&resp(&ten), b"-NOAUTH Authentication required.\r\n")
        .await;
    let arg = "x".repeat(16 * 1024);
    c.roundtrip(
        &resp(&["ECHO", &arg]),
        b"-NOAUTH Authentication required.\r\n",
    )
    .await;
    // Once authenticated, a client sends what it likes.
    c.roundtrip(&resp(&["AUTH", "s3cret"]), b"+OK\r\n").await;
    let big = "y".repeat(1 << 20);
    c.roundtrip(&resp(&["ECHO", &big]), bulk(&big).as_bytes())
        .await;
    let mut eleven = vec!["BF.MADD", "k"];
    eleven.extend(["a"; 9]);
    c.send(&resp(&eleven)).await;
    assert_eq!(c.read_line().await, "*9");
}

/// INFO memory's `used_memory`.
async fn used_memory(c: &mut common::Raw) -> u64 {
    c.send(&resp(&["INFO", "memory"])).await;
    let len: usize = c.read_line().await[1..].parse().unwrap();
    let text = String::from_utf8(c.read_exact(len + 2).await).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("used_memory:"))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

#[tokio::test]
async fn what_unauthenticated_clients_hold_never_evicts_a_key_or_fails_a_write() {
    for policy in ["allkeys-lru", "noeviction"] {
        let server = TestServer::start_with(Config {
            maxmemory: 4 << 20,
            ..with_password()
        })
        .await;
        let mut admin = server.raw().await;
        admin
            .roundtrip(&resp(&["AUTH", "s3cret"]), b"+OK\r\n")
            .await;
        admin
            .roundtrip(
                &resp(&["CONFIG", "SET", "maxmemory-policy", policy]),
                b"+OK\r\n",
            )
            .await;
        // Keys up to 0.3 MB under the limit.
        let mut keys = 0;
        while server.shared.keyspace().memory_in_use() < (4 << 20) - 300_000 {
            admin
                .roundtrip(
                    &resp(&["BF.RESERVE", &format!("k{keys}"), "0.01", "10000"]),
                    b"+OK\r\n",
                )
                .await;
            keys += 1;
        }
        // Forty strangers, each holding an unfinished request as large as Redis lets them
        // (10 arguments of 16 KiB): 6.5 MB, more than the room left, more than the limit.
        let arg = "z".repeat(16 * 1024);
        let mut strangers = Vec::new();
        for _ in 0..40 {
            let mut c = TcpStream::connect(server.addr).await.unwrap();
            let mut partial = b"*10\r\n".to_vec();
            for _ in 0..9 {
                partial.extend(format!("${}\r\n{arg}\r\n", arg.len()).into_bytes());
            }
            partial.extend(format!("${}\r\n", arg.len()).into_bytes());
            c.write_all(&partial).await.unwrap();
            strangers.push(c);
        }
        // Reported in used_memory once read (waited for), never counted against maxmemory.
        let before = used_memory(&mut admin).await;
        let mut reported = before;
        let read = until(async || {
            reported = used_memory(&mut admin).await;
            reported > (4 << 20) + 4_000_000
        })
        .await;
        assert!(
            read,
            "{policy}: {reported} reported (before the strangers' reads: {before})"
        );
        assert!(
            server.shared.keyspace().memory_in_use() < 4 << 20,
            "{policy}: counted against maxmemory"
        );
        admin
            .roundtrip(&resp(&["DBSIZE"]), format!(":{keys}\r\n").as_bytes())
            .await;
        // An authenticated write that fits still runs.
        admin
            .roundtrip(&resp(&["BF.ADD", "k0", "item"]), b":1\r\n")
            .await;
        assert_eq!(server.shared.keyspace().eviction().evicted_keys(), 0);
        drop(strangers);
    }
}

async fn roundtrip(stream: &mut TcpStream, request: &[u8], expected: &[u8]) {
    stream.write_all(request).await.unwrap();
    let mut got = vec![0u8; expected.len()];
    tokio::time::timeout(common::TIMEOUT, stream.read_exact(&mut got))
        .await
        .expect("a reply in time")
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&got),
        String::from_utf8_lossy(expected)
    );
}

#[tokio::test]
async fn an_empty_password_is_no_password() {
    let (server, addr) = listening_everywhere(Config {
        requirepass: Some(String::new()),
        ..Config::default()
    })
    .await;
    // Protected mode is on, as without a password: another address is refused.
    let mut outsider = connect_from([127, 0, 0, 2], addr).await;
    outsider.write_all(&resp(&["AUTH", ""])).await.unwrap();
    let refused = String::from_utf8(until_closed(&mut outsider).await).unwrap();
    assert!(refused.starts_with("-DENIED "), "{refused}");
    // The loopback needs no AUTH, and `AUTH ''` is told there is no password.
    let mut local = server.raw().await;
    local.roundtrip(&resp(&["PING"]), b"+PONG\r\n").await;
    local
        .roundtrip(
            &resp(&["AUTH", ""]),
            b"-ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?\r\n",
        )
        .await;
    // Resolved from flags, an empty --requirepass or environment variable is none too.
    for from_env in [false, true] {
        let config = Config::resolve(&[bloomkit_server::config::Given {
            name: "requirepass".into(),
            value: String::new(),
            from_env,
        }])
        .unwrap();
        assert_eq!(config.password(), None);
    }
}

const DEBUG_REFUSED: &[u8] = b"-ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server.\r\n";

#[tokio::test]
async fn debug_is_refused_unless_enable_debug_command_allows_it() {
    // The default, as in Redis 7: refused, before NOAUTH, and inside MULTI it spoils the
    // transaction.
    let server = TestServer::start_with(with_password()).await;
    let mut c = server.raw().await;
    c.roundtrip(&resp(&["DEBUG", "RELOAD"]), DEBUG_REFUSED)
        .await;
    c.roundtrip(&resp(&["AUTH", "s3cret"]), b"+OK\r\n").await;
    c.roundtrip(&resp(&["DEBUG", "HELP"]), DEBUG_REFUSED).await;
    c.roundtrip(&resp(&["MULTI"]), b"+OK\r\n").await;
    c.roundtrip(&resp(&["DEBUG", "RELOAD"]), DEBUG_REFUSED)
        .await;
    c.roundtrip(
        &resp(&["EXEC"]),
        b"-EXECABORT Transaction discarded because of previous errors.\r\n",
    )
    .await;
    drop(c);
    server.stop().await.unwrap();

    let (_server, addr) = listening_everywhere(Config {
        enable_debug_command: DebugCommand::Local,
        protected_mode: false,
        ..Config::default()
    })
    .await;
    let mut outsider = connect_from([127, 0, 0, 2], addr).await;
    roundtrip(&mut outsider, &resp(&["DEBUG", "RELOAD"]), DEBUG_REFUSED).await;
    let mut local = connect_from([127, 0, 0, 1], addr).await;
    roundtrip(
        &mut local,
        &resp(&["DEBUG", "RELOAD", "NOSAVE"]),
        b"+OK\r\n",
    )
    .await;

    let (_server, addr) = listening_everywhere(Config {
        enable_debug_command: DebugCommand::Yes,
        protected_mode: false,
        ..Config::default()
    })
    .await;
    let mut outsider = connect_from([127, 0, 0, 2], addr).await;
    roundtrip(
        &mut outsider,
        &resp(&["DEBUG", "RELOAD", "NOSAVE"]),
        b"+OK\r\n",
    )
    .await;
}

#[tokio::test]
async fn config_rewrite_keeps_a_hidden_password_out_and_follows_no_link() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("bloomkit.conf");
    std::fs::write(&conf, "# for the test\nmaxmemory 10mb\n").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&conf, std::fs::Permissions::from_mode(0o640)).unwrap();
    }
    // A link planted where a rewrite could write: none of the names it writes through may
    // follow it.
    let target = dir.path().join("target");
    std::fs::write(&target, b"untouched").unwrap();
    #[cfg(unix)]
    for name in ["bloomkit.conf.rewrite", "bloomkit.conf.tmp"] {
        std::os::unix::fs::symlink(&target, dir.path().join(name)).unwrap();
    }
    let server = TestServer::start_with(Config {
        config_file: Some(conf.clone()),
        requirepass: Some("from-the-environment".into()),
        requirepass_source: PasswordSource::Hidden,
        ..Config::default()
    })
    .await;
    let mut c = server.raw().await;
    c.roundtrip(&resp(&["AUTH", "from-the-environment"]), b"+OK\r\n")
        .await;
    c.roundtrip(&resp(&["CONFIG", "SET", "maxmemory", "20mb"]), b"+OK\r\n")
        .await;
    c.roundtrip(&resp(&["CONFIG", "REWRITE"]), b"+OK\r\n").await;
    let text = std::fs::read_to_string(&conf).unwrap();
    assert!(text.contains("maxmemory 20971520"), "{text}");
    assert!(
        !text.contains("requirepass") && !text.contains("from-the-environment"),
        "{text}"
    );
    assert_eq!(std::fs::read(&target).unwrap(), b"untouched");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&conf).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o640, "the file keeps its permissions");
    }
    // Nothing left beside it but what was there.
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "bloomkit.conf",
            "bloomkit.conf.rewrite",
            "bloomkit.conf.tmp",
            "target"
        ]
    );
    // A password from the file or the command line is written, as Redis writes it.
    drop(c);
    server.stop().await.unwrap();
    let server = TestServer::start_with(Config {
        config_file: Some(conf.clone()),
        requirepass: Some("written".into()),
        requirepass_source: PasswordSource::Written,
        ..Config::default()
    })
    .await;
    let mut c = server.raw().await;
    c.roundtrip(&resp(&["AUTH", "written"]), b"+OK\r\n").await;
    c.roundtrip(&resp(&["CONFIG", "REWRITE"]), b"+OK\r\n").await;
    assert!(std::fs::read_to_string(&conf)
        .unwrap()
        .contains("requirepass written"));
}

#[tokio::test]
async fn a_transaction_queue_counts_in_memory_and_is_refused_past_maxmemory() {
    let server = TestServer::start_with(Config {
        maxmemory: 50 << 20,
        ..Config::default()
    })
    .await;
    let mut c = server.raw().await;
    c.roundtrip(&resp(&["MULTI"]), b"+OK\r\n").await;
    let item = "q".repeat(4 << 20);
    let mut queued = 0;
    loop {
        c.send(&resp(&["BF.ADD", &format!("k{queued}"), &item]))
            .await;
        match c.read_line().await.as_str() {
            "+QUEUED" => queued += 1,
            "-OOM command not allowed when used memory > 'maxmemory'." => break,
            other => panic!("{other}"),
        }
        assert!(queued < 40, "40 × 4 MiB queued under a 50 MiB limit");
    }
    // Redis's rule: the queue takes memory, and queuing past maxmemory is refused.
    assert!((8..=12).contains(&queued), "{queued} queued");
    // From another client: inside MULTI, CLIENT INFO would be queued.
    let mut other = server.raw().await;
    other.send(&resp(&["CLIENT", "LIST"])).await;
    let len: usize = other.read_line().await[1..].parse().unwrap();
    let list = String::from_utf8(other.read_exact(len + 2).await).unwrap();
    let info = list
        .lines()
        .find(|line| !line.contains(" multi=-1 "))
        .expect("the client in MULTI")
        .to_string();
    let field = |name: &str| -> usize {
        info.split(' ')
            .find_map(|w| w.strip_prefix(&format!("{name}=")))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    };
    assert!(field("multi-mem") >= queued * (4 << 20), "{info}");
    assert!(field("tot-mem") >= field("multi-mem"), "{info}");
    assert!(server.shared.keyspace().client_memory() >= queued * (4 << 20));
    c.roundtrip(
        &resp(&["EXEC"]),
        b"-EXECABORT Transaction discarded because of previous errors.\r\n",
    )
    .await;
    c.roundtrip(&resp(&["PING"]), b"+PONG\r\n").await;
    assert!(
        server.shared.keyspace().client_memory() < 1 << 20,
        "the queue's memory goes with it"
    );
}
