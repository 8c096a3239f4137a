//! Who may connect, and for how long: `--timeout` (idle clients, slowloris clients and
//! clients that stop reading are closed) and protected mode (other machines refused
//! without a password).

use crate::common;

use std::time::{Duration, Instant};

use bloomkit_server::config::Config;
use bloomkit_testkit::wait::GENEROUS;
use common::{connect_from, listening_everywhere, resp, TestServer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Reads until the server closes the connection, returning what came and how long it
/// took; fails if it is still open after [`GENEROUS`] (a bound on a hang, not a speed).
async fn until_closed(stream: &mut TcpStream) -> (Vec<u8>, Duration) {
    let start = Instant::now();
    let mut got = Vec::new();
    let read = tokio::time::timeout(GENEROUS, stream.read_to_end(&mut got)).await;
    assert!(read.is_ok(), "still open after {GENEROUS:?}");
    (got, start.elapsed())
}

#[tokio::test]
async fn timeout_closes_idle_and_slowloris_clients_but_not_busy_ones() {
    let server = TestServer::start_with(Config {
        timeout_secs: 1,
        ..Config::default()
    })
    .await;
    // Idle after one request: closed about a second later.
    let mut idle = TcpStream::connect(server.addr).await.unwrap();
    idle.write_all(&resp(&["PING"])).await.unwrap();
    let (got, took) = until_closed(&mut idle).await;
    assert_eq!(got, b"+PONG\r\n");
    assert!(took >= Duration::from_millis(900), "{took:?}");

    // A byte every 200 ms of a request that would take 24 s to finish: activity, but no
    // request. Redis's timeout counts each byte; here only complete requests keep a
    // connection, so it is closed before the request ends (the loop is the check: a server
    // that counted bytes would take the whole request and answer it).
    let mut slow = TcpStream::connect(server.addr).await.unwrap();
    let start = Instant::now();
    let request = b"*2\r\n$4\r\nECHO\r\n$100\r\n"
        .iter()
        .chain([b'x'; 100].iter());
    let mut closed = false;
    for byte in request {
        if slow.write_all(&[*byte]).await.is_err() {
            closed = true;
            break;
        }
        let mut probe = [0u8; 1];
        if let Ok(Ok(0)) =
            tokio::time::timeout(Duration::from_millis(200), slow.read(&mut probe)).await
        {
            closed = true;
            break;
        }
    }
    assert!(closed, "the slowloris client is still served");
    assert!(
        start.elapsed() >= Duration::from_millis(900),
        "{:?}",
        start.elapsed()
    );

    // The timeout is fixed at start-up.
    let mut busy = server.raw().await;
    busy.roundtrip(
        &resp(&["CONFIG", "GET", "timeout"]),
        b"*2\r\n$7\r\ntimeout\r\n$1\r\n1\r\n",
    )
    .await;
    busy.roundtrip(
        &resp(&["CONFIG", "SET", "timeout", "5"]),
        b"-ERR CONFIG SET failed (possibly related to argument 'timeout') - can't set immutable \
          config\r\n",
    )
    .await;
}

/// A client that keeps sending requests, each well within the timeout, is served past it:
/// 8 requests 0.6 s apart outlast a 4 s timeout, and a gap would have to stretch to 4 s on
/// a loaded machine to close it.
#[tokio::test]
async fn timeout_keeps_a_client_that_keeps_sending_requests() {
    let server = TestServer::start_with(Config {
        timeout_secs: 4,
        ..Config::default()
    })
    .await;
    let mut busy = server.raw().await;
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(5) {
        busy.roundtrip(&resp(&["PING"]), b"+PONG\r\n").await;
        tokio::time::sleep(Duration::from_millis(600)).await;
    }
    busy.roundtrip(&resp(&["PING"]), b"+PONG\r\n").await;
}

#[tokio::test]
async fn no_timeout_by_default() {
    let server = TestServer::start().await;
    let mut c = server.raw().await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    c.roundtrip(&resp(&["PING"]), b"+PONG\r\n").await;
}

#[tokio::test]
async fn protected_mode_refuses_other_addresses_without_a_password() {
    let (_server, addr) = listening_everywhere(Config::default()).await;
    let mut outsider = connect_from([127, 0, 0, 2], addr).await;
    let _ = outsider.write_all(&resp(&["PING"])).await;
    let (got, _) = until_closed(&mut outsider).await;
    let text = String::from_utf8_lossy(&got);
    assert!(
        text.starts_with("-DENIED ") && text.ends_with("\r\n"),
        "{text}"
    );
    assert!(
        text.contains("--protected-mode no") && text.contains("--requirepass-file"),
        "{text}"
    );
    assert_eq!(text.matches("\r\n").count(), 1, "one line: {text}");
    // The loopback address itself is served.
    let mut local = connect_from([127, 0, 0, 1], addr).await;
    local.write_all(&resp(&["PING"])).await.unwrap();
    let mut pong = [0u8; 7];
    local.read_exact(&mut pong).await.unwrap();
    assert_eq!(&pong, b"+PONG\r\n");
}

#[tokio::test]
async fn a_password_or_protected_mode_no_lets_other_addresses_in() {
    for (config, reply) in [
        (
            Config {
                protected_mode: false,
                ..Config::default()
            },
            &b"+PONG\r\n"[..],
        ),
        (
            Config {
                requirepass: Some("pw".into()),
                ..Config::default()
            },
            b"-NOAUTH Authentication required.\r\n",
        ),
    ] {
        let (_server, addr) = listening_everywhere(config).await;
        let mut outsider = connect_from([127, 0, 0, 2], addr).await;
        outsider.write_all(&resp(&["PING"])).await.unwrap();
        let mut got = vec![0u8; reply.len()];
        outsider.read_exact(&mut got).await.unwrap();
        assert_eq!(
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(reply)
        );
    }
    // Bound to the loopback, protected mode has nothing to protect: 127.0.0.2 gets in.
    let server = TestServer::start().await;
    let mut outsider = connect_from([127, 0, 0, 2], server.addr).await;
    outsider.write_all(&resp(&["PING"])).await.unwrap();
    let mut pong = [0u8; 7];
    outsider.read_exact(&mut pong).await.unwrap();
    assert_eq!(&pong, b"+PONG\r\n");
}

#[tokio::test]
async fn timeout_closes_a_client_that_stops_reading_its_replies() {
    let server = TestServer::start_with(Config {
        timeout_secs: 1,
        ..Config::default()
    })
    .await;
    let stream = TcpStream::connect(server.addr).await.unwrap();
    let (_reader, mut writer) = stream.into_split();
    // 64 MiB of echoes, never read: far more than the sockets' buffers hold, so the server
    // soon cannot write, and stops reading.
    let argument = "x".repeat(1 << 20);
    let request = resp(&["ECHO", &argument]);
    let start = Instant::now();
    let writing = tokio::spawn(async move {
        for _ in 0..64 {
            writer.write_all(&request).await?;
        }
        std::io::Result::Ok(())
    });
    let written = tokio::time::timeout(GENEROUS, writing)
        .await
        .expect("the server still holds a client that reads nothing")
        .unwrap();
    // Closed by the server with requests unread: the client's writes fail.
    assert!(written.is_err(), "every request was taken");
    assert!(
        start.elapsed() >= Duration::from_millis(900),
        "{:?}",
        start.elapsed()
    );
}
