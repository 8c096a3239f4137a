//! A RedisBloom-compatible server over bloomkit's filters.
//!
//! `bloomkit serve` speaks RESP2 and RESP3 and answers RedisBloom's `BF.*` and `CF.*`
//! commands with the same replies and errors, so redis-cli, redis-py and redis-rs work
//! unchanged.
//!
//! # Overview of modules
//!
//! The server is a host of the command layer, [`bloomkit_commands`]: the `BF.*`/`CF.*`
//! commands, their table, the `bf-*`/`cf-*` parameters, what a key holds ([`Value`]) and
//! what a command answers ([`Reply`]) are its. This crate adds the network, the keyspace,
//! persistence and the generic commands. In the order data flows, each module using only
//! those above it:
//!
//! * [`resp`]: the protocol, one module per direction: [`resp::decode`] (the request
//!   parser, RESP multibulk and inline, with Redis's limits) and [`resp::encode`] (replies
//!   as RESP2 or RESP3, and their sizes).
//! * [`connection`]: one client's stream: requests in, buffered replies out.
//! * [`glob`]: Redis's glob patterns (`KEYS`, `SCAN MATCH`, `CONFIG GET`, `COMMAND LIST`).
//! * [`errors`]: the error replies only a host answers (unknown command, `NOAUTH`).
//! * [`keyspace`]: every key's value, in 64 shards of `RwLock<HashMap>` so that different
//!   keys work in parallel; expiry, memory accounting for `--maxmemory`, and the
//!   [`keyspace::Journal`] seam through which every change reaches persistence while its
//!   shard is still locked. It runs a filter command on its key's slot. Its gate lets
//!   `EXEC` run alone; its watch registry tells a `WATCH`ing client that a key changed.
//! * [`persist`]: the append-only log, snapshots, and the manifest that lists them, behind
//!   the journal; start-up recovery; what a failing disk does to writes.
//! * [`offload`]: long commands run off the worker thread that serves other clients.
//! * [`config`]: the start-up options ([`config::Config`], resolved from the flags and the
//!   config file) and the run-time settings `CONFIG GET/SET` reaches.
//! * [`limits`]: the open-file limit, fitted to `--maxclients` at start-up.
//! * [`protected`]: protected mode, which refuses other machines without a password.
//! * [`shared`]: the state every connection shares (the keyspace, the settings, counters,
//!   snapshots, the shutdown switch), mini-redis's `db.rs`.
//! * [`transaction`]: one client's `MULTI` queue and `WATCH`ed keys.
//! * [`session`]: one client's state (protocol, authentication, name, transaction).
//! * [`cmd`]: the generic commands (`cmd::keys`, `cmd::connection`, `cmd::server`,
//!   `cmd::transaction`) and the command table ([`cmd::table`]): the generic rows with their
//!   handlers beside the command layer's filter rows, for `COMMAND` and for routing.
//! * [`dispatch`]: one request in, one reply out: the name routed through the table, in
//!   Redis's order of checks (unknown command, arity, `NOAUTH`), queued inside `MULTI`, and
//!   `EXEC`'s queue run alone; the same path replays the log at start-up.
//! * [`server`]: the accept loop, one task per client (pipelined requests answered in one
//!   flush, after their writes are durable), `--maxclients`, housekeeping and graceful
//!   shutdown.
//!
//! What an operator sees and what bounds memory, used by the modules above:
//!
//! * [`log`]: the log (Redis's line format, levels, `--logfile`, repeated messages
//!   rate-limited); [`lifecycle`]: what start-up and shutdown log.
//! * [`options`]: every option, one table: the `bloomkit serve` flags, the config file's
//!   directives, `CONFIG GET/SET/REWRITE`, the `INFO` fields that show them and the docs'
//!   flag table all come from it; [`config_file`]: `--config FILE` and `CONFIG REWRITE`.
//! * [`clients`]: every connected client as `CLIENT LIST/KILL` and `INFO clients` see it;
//!   [`client_handle`]: one connection's registration, the admission of its requests
//!   (`client-query-buffer-limit`, `maxmemory`), its output limits and backpressure.
//! * [`commandstats`]: `INFO commandstats`/`errorstats`; [`slowlog`]: `SLOWLOG`.
//! * In [`keyspace`]: the clients' memory beside the values', `maxmemory-policy` eviction,
//!   per-key access stamps, and the flagged filters of `INFO filters`.
//!
//! [`Value`]: bloomkit_commands::Value
//! [`Reply`]: bloomkit_commands::Reply
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
pub mod errors;
pub mod glob;
pub mod keyspace;
pub mod limits;
pub mod offload;
pub mod persist;
pub mod protected;
pub mod resp;
pub mod server;
pub mod session;
pub mod shared;
// The operator's view and the memory ceiling: logging, options, the
// client registry and what each connection does to stay within its limits.
pub mod client_handle;
pub mod clients;
pub mod commandstats;
pub mod config_file;
pub mod lifecycle;
pub mod log;
pub mod options;
pub mod slowlog;
pub mod transaction;
