//! Redis engines for the copy tests, through `bloomkit-testkit`: Debian's `redis-server`
//! with RedisBloom 2.8's module (the oracle) or with this build's module, and Valkey 9 with
//! this build's module, each in a directory of its own. A test whose engine or module is
//! missing skips, saying why, unless `BLOOMKIT_FULL_TESTS=1`, where it fails naming what to
//! install (`bloomkit_testkit::skip`).

use std::path::PathBuf;

use bloomkit_testkit::engine::{Engine as Program, EngineServer};
use bloomkit_testkit::skip::require;
use bloomkit_testkit::Conn;

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

/// A running engine with its module, killed when dropped.
pub struct Engine {
    server: EngineServer,
    /// `127.0.0.1:PORT`.
    pub addr: String,
    _dir: tempfile::TempDir,
}

impl Engine {
    /// Starts the engine with its module; `None` (after a note) if either is missing.
    pub fn start(module: Module) -> Option<Engine> {
        let dir = tempfile::tempdir().expect("a directory for the engine");
        let server = match module {
            Module::RedisBloom => EngineServer::redisbloom(dir.path(), &[])?,
            Module::Bloomkit | Module::ValkeyBloomkit => {
                let program = match module {
                    Module::ValkeyBloomkit => Program::Valkey,
                    _ => Program::Redis,
                };
                program.binary()?;
                let so = bloomkit_module()?;
                let args = vec!["--loadmodule".to_string(), so.display().to_string()];
                EngineServer::start_raw(program, dir.path(), args)
            }
        };
        Some(Engine {
            addr: format!("127.0.0.1:{}", server.port),
            server,
            _dir: dir,
        })
    }

    /// A new connection.
    pub fn client(&self) -> Conn {
        self.server.conn()
    }
}

/// This build's module, `libbloomkit_redis.so`, beside the test binary in
/// `target/<profile>/deps` (where `cargo test --workspace` or `cargo build -p
/// bloomkit-redis` of the same profile puts it); `None` (after a note) when it is not.
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
