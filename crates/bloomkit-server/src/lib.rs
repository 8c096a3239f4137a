//! A RedisBloom-compatible server over bloomkit's filters.
//!
//! `bloomkit serve` speaks RESP2 and RESP3 and answers RedisBloom's `BF.*` and `CF.*`
//! commands with the same replies and errors, so redis-cli, redis-py and redis-rs work
//! unchanged.
//!
//! # Overview of modules
//!
//! * [`frame`]: the request parser (RESP multibulk and inline), with Redis's limits.
//! * [`connection`]: one client's stream: requests in, buffered replies out.
//! * [`reply`]: what a command answers, and its RESP2/RESP3 encoding.
//! * [`value`]: what a key holds (a scalable Bloom filter or a cuckoo filter).
//! * [`cmd`]: the command layer. The filter commands see one key's value and return a
//!   reply plus what to log; they know nothing of sockets or storage, so the same code can
//!   run inside a Redis module. Beside them, the generic commands (`cmd::keys`,
//!   `cmd::connection`, `cmd::server`) and the command table `COMMAND` reports.
//! * [`keyspace`]: every key's value, in 64 shards of `RwLock<HashMap>` so that different
//!   keys work in parallel; expiry, memory accounting for `--maxmemory`, and the
//!   [`keyspace::Journal`] seam through which every change reaches persistence while its
//!   shard is still locked.
//! * [`dispatch`]: one request in, one reply out, in Redis's order of checks (unknown
//!   command, arity, `NOAUTH`); the same path replays the log at start-up.
//! * [`config`]: `bloomkit serve`'s options, and what `CONFIG GET/SET` reaches.
//! * [`server`]: the accept loop, one task per client (pipelined requests answered in one
//!   flush, after their writes are durable), `--maxclients`, and graceful shutdown.
//! * [`persist`]: the append-only log, snapshots, and the manifest that lists them; start-up
//!   recovery; what a failing disk does to writes.
//!
//! # Example
//!
//! ```no_run
//! use bloomkit_server::config::Config;
//! use bloomkit_server::server::Server;
//!
//! # async fn serve() -> std::io::Result<()> {
//! // Loads ./bloomkit-data (snapshot, then log) and logs every write from then on;
//! // `Server::bind` would run without persistence.
//! let server = Server::open(Config { port: 0, ..Config::default() }).await?;
//! println!("listening on {}", server.local_addr()?);
//! server.run_until(tokio::signal::ctrl_c()).await
//! # }
//! ```
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod cmd;
pub mod config;
pub mod connection;
pub mod dispatch;
pub mod frame;
pub mod keyspace;
pub mod persist;
pub mod reply;
pub mod server;
pub mod value;
