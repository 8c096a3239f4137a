//! A server on an ephemeral port, clients for it (redis-rs and raw bytes), and seeding.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bloomkit::{CuckooFilter, ScalableBloomFilter};
use bloomkit_commands::Value;
use bloomkit_server::config::Config;
use bloomkit_server::server::Server;
use bloomkit_server::shared::Shared;
use bloomkit_testkit::wait::GENEROUS;
use bytes::Bytes;
use redis::aio::MultiplexedConnection;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// How long a test waits for any one reply or event before failing (instead of hanging).
pub const TIMEOUT: Duration = GENEROUS;

/// A server running in this process on 127.0.0.1, port 0.
pub struct TestServer {
    /// Where it listens.
    pub addr: SocketAddr,
    /// Its state, for seeding keys and reading counters.
    pub shared: Arc<Shared>,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<io::Result<()>>,
}

impl TestServer {
    /// A server with default options.
    pub async fn start() -> TestServer {
        TestServer::start_with(Config::default()).await
    }

    /// A server with `config`, on 127.0.0.1 and a free port whatever `config` says.
    pub async fn start_with(config: Config) -> TestServer {
        let config = Config {
            bind: "127.0.0.1".into(),
            port: 0,
            ..config
        };
        TestServer::run(Server::bind(config).await.expect("bind"))
    }

    /// Runs `server` (bound by the caller, with [`Server::bind_with`] or [`Server::open`])
    /// until [`TestServer::stop`] or `SHUTDOWN`.
    pub fn run(server: Server) -> TestServer {
        let addr = server.local_addr().expect("address");
        let shared = Arc::clone(server.shared());
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(server.run_until(async move {
            let _ = stopped.await;
        }));
        TestServer {
            addr,
            shared,
            stop: Some(stop),
            task,
        }
    }

    /// A redis-rs connection speaking RESP2.
    pub async fn client(&self) -> MultiplexedConnection {
        self.client_url(&format!("redis://{}", self.addr)).await
    }

    /// A redis-rs connection for `url`.
    pub async fn client_url(&self, url: &str) -> MultiplexedConnection {
        redis::Client::open(url)
            .expect("client")
            .get_multiplexed_async_connection()
            .await
            .expect("connect")
    }

    /// A raw TCP connection.
    pub async fn raw(&self) -> Raw {
        Raw {
            stream: TcpStream::connect(self.addr).await.expect("connect"),
        }
    }

    /// Puts a Bloom filter (capacity 100, 1%) at `key`, holding `items`.
    pub fn seed_bloom(&self, key: &str, items: &[&str]) {
        let mut filter = ScalableBloomFilter::new(100, 0.01).unwrap();
        for item in items {
            filter.insert(item.as_bytes()).unwrap();
        }
        self.shared
            .keyspace()
            .restore(Bytes::from(key.to_string()), None, Value::Bloom(filter));
    }

    /// Puts an empty cuckoo filter (capacity 1024) at `key`.
    pub fn seed_cuckoo(&self, key: &str) {
        let filter = CuckooFilter::redisbloom_builder(1024).build().unwrap();
        self.shared
            .keyspace()
            .restore(Bytes::from(key.to_string()), None, Value::Cuckoo(filter));
    }

    /// Stops the server as SIGTERM would, and returns what `run_until` returned.
    pub async fn stop(mut self) -> io::Result<()> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        self.finished().await
    }

    /// Waits for the server to finish on its own (after `SHUTDOWN`).
    pub async fn finished(self) -> io::Result<()> {
        tokio::time::timeout(TIMEOUT, self.task)
            .await
            .expect("server stops in time")
            .expect("server task")
    }
}

/// A raw client: bytes out, exact bytes back.
pub struct Raw {
    stream: TcpStream,
}

impl Raw {
    /// Writes `bytes` in one `write`.
    pub async fn send(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).await.expect("send");
    }

    /// Reads exactly `expected.len()` bytes and asserts they are `expected`.
    pub async fn expect(&mut self, expected: &[u8]) {
        let got = self.read_exact(expected.len()).await;
        assert_eq!(
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(expected)
        );
    }

    /// Sends `request` and expects `reply`.
    pub async fn roundtrip(&mut self, request: &[u8], reply: &[u8]) {
        self.send(request).await;
        self.expect(reply).await;
    }

    /// Reads exactly `len` bytes.
    pub async fn read_exact(&mut self, len: usize) -> Vec<u8> {
        let mut got = vec![0; len];
        tokio::time::timeout(TIMEOUT, self.stream.read_exact(&mut got))
            .await
            .expect("reply in time")
            .expect("read");
        got
    }

    /// Reads one CRLF-terminated line (without the CRLF).
    pub async fn read_line(&mut self) -> String {
        let mut line = Vec::new();
        while !line.ends_with(b"\r\n") {
            line.extend(self.read_exact(1).await);
        }
        line.truncate(line.len() - 2);
        String::from_utf8(line).expect("UTF-8 line")
    }

    /// Reads until the server closes the connection, and returns what came.
    pub async fn read_to_end(&mut self) -> Vec<u8> {
        let mut got = Vec::new();
        tokio::time::timeout(TIMEOUT, self.stream.read_to_end(&mut got))
            .await
            .expect("server closes in time")
            .expect("read");
        got
    }
}

/// A request as RESP: `*N\r\n$len\r\narg\r\n...`.
#[allow(unused_imports)] // each test file uses its own subset
pub use bloomkit_testkit::resp::request as resp;

/// `line` (space-separated words) as one command through redis-rs: its reply, or the
/// error it answered.
pub async fn query(c: &mut MultiplexedConnection, line: &str) -> redis::RedisResult<redis::Value> {
    let mut words = line.split(' ');
    let mut command = redis::cmd(words.next().unwrap());
    for w in words {
        command.arg(w);
    }
    command.query_async(c).await
}

/// `line`'s reply, failing the test on an error reply.
pub async fn ok(c: &mut MultiplexedConnection, line: &str) -> redis::Value {
    query(c, line)
        .await
        .unwrap_or_else(|e| panic!("{line}: {e}"))
}

/// Polls `check` every 10 ms, yielding to the server's tasks in between, until it holds or
/// [`GENEROUS`] passes; whether it held. A test waits for the event it needs this way, so
/// a loaded machine makes it slower, never wrong.
pub async fn until(mut check: impl AsyncFnMut() -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + GENEROUS;
    loop {
        if check().await {
            return true;
        }
        if tokio::time::Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A bulk string reply.
pub fn bulk(text: &str) -> String {
    format!("${}\r\n{text}\r\n", text.len())
}

/// A server listening on every address (`0.0.0.0`), on the port picked for it, and the
/// loopback address to reach it at.
pub async fn listening_everywhere(config: Config) -> (TestServer, SocketAddr) {
    let server = Server::bind(Config {
        bind: "0.0.0.0".into(),
        port: 0,
        ..config
    })
    .await
    .unwrap();
    let port = server.local_addr().unwrap().port();
    (
        TestServer::run(server),
        SocketAddr::from(([127, 0, 0, 1], port)),
    )
}

/// Connects to `to` from the address `from` (on the loopback interface: 127.0.0.2 is not
/// 127.0.0.1 to protected mode or to `enable-debug-command local`, as to Redis's).
pub async fn connect_from(from: [u8; 4], to: SocketAddr) -> TcpStream {
    let socket = TcpSocket::new_v4().unwrap();
    socket.bind(SocketAddr::from((from, 0))).unwrap();
    socket.connect(to).await.unwrap()
}

/// Options for a persistent server on `dir` (loopback, a free port, `appendfsync always`).
pub fn persistent(dir: &std::path::Path) -> Config {
    Config {
        bind: "127.0.0.1".into(),
        port: 0,
        dir: dir.to_path_buf(),
        appendfsync: bloomkit_server::config::AppendFsync::Always,
        ..Config::default()
    }
}
