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
//! those above it (one group, named, uses each other):
//!
//! * [`resp`]: the protocol, one module per direction: [`resp::decode`] (the request
//!   parser, RESP multibulk and inline, with Redis's limits) and [`resp::encode`] (replies
//!   as RESP2 or RESP3, and their sizes).
//! * [`glob`]: Redis's glob patterns (`KEYS`, `SCAN MATCH`, `CONFIG GET`, `COMMAND LIST`).
//! * [`errors`]: the error replies only a host answers (unknown command, `NOAUTH`, `EXEC`
//!   without `MULTI`...).
//! * [`log`]: the log (Redis's line format, levels, `--logfile`, repeated messages
//!   rate-limited).
//! * [`offload`]: long commands run off the worker thread that serves other clients.
//! * [`limits`]: the open-file limit, fitted to `--maxclients` at start-up.
//! * [`commandstats`]: `INFO commandstats`/`errorstats`.
//! * [`keyspace`]: every key's value, in 64 shards of `RwLock<HashMap>` so that different
//!   keys work in parallel; expiry, memory accounting for `--maxmemory` (the clients'
//!   memory beside the values'), `maxmemory-policy` eviction, per-key access stamps, the
//!   flagged filters of `INFO filters`, and the [`keyspace::Journal`] seam through which
//!   every change reaches persistence while its shard is still locked. It runs a filter
//!   command on its key's slot. Its gate lets `EXEC` run alone; its watch registry tells a
//!   `WATCH`ing client that a key changed.
//! * [`clients`]: every connected client as `CLIENT LIST/KILL` and `INFO clients` see it;
//!   [`slowlog`]: `SLOWLOG`.
//! * [`connection`]: one client's stream: requests in, buffered replies out.
//! * [`persist`]: the append-only log, snapshots, and the manifest that lists them, behind
//!   the journal; start-up recovery; what a failing disk does to writes.
//! * [`options`], [`config`] and [`config_file`], one group that uses each other: every
//!   option in one table ([`options`]: the `bloomkit serve` flags, the config file's
//!   directives, `CONFIG GET/SET/REWRITE`, the `INFO` fields that show them and the docs'
//!   flag table all come from it), the start-up options it fills ([`config::Config`],
//!   resolved from the flags and the config file) and the run-time settings `CONFIG
//!   GET/SET` reaches, and `--config FILE` read and rewritten (`CONFIG REWRITE`).
//! * [`protected`]: protected mode, which refuses other machines without a password.
//! * [`shared`]: the state every connection shares (the keyspace, the settings, counters,
//!   snapshots, the shutdown switch), mini-redis's `db.rs`.
//! * [`transaction`]: one client's `MULTI` queue and `WATCH`ed keys; [`session`]: one
//!   client's state (protocol, authentication, name, transaction).
//! * [`cmd`]: the generic commands (`cmd::keys`, `cmd::connection`, `cmd::server`,
//!   `cmd::transaction`...) and the command table ([`cmd::table`]): the generic rows with
//!   their handlers beside the command layer's filter rows, for `COMMAND` and for routing.
//! * [`dispatch`]: one request in, one reply out: the name routed through the table, in
//!   Redis's order of checks (unknown command, arity, `NOAUTH`), queued inside `MULTI`, and
//!   `EXEC`'s queue run alone; the same path replays the log at start-up.
//!   [`client_handle`]: one connection's registration, the admission of its requests
//!   (`client-query-buffer-limit`, `maxmemory`), its output limits and backpressure.
//!   [`lifecycle`]: what start-up and shutdown log.
//! * [`server`]: the accept loop, one task per client (pipelined requests answered in one
//!   flush, after their writes are durable), `--maxclients`, housekeeping and graceful
//!   shutdown.
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

pub mod client_handle;
pub mod clients;
pub mod cmd;
pub mod commandstats;
pub mod config;
pub mod config_file;
pub mod connection;
pub mod dispatch;
pub mod errors;
pub mod glob;
pub mod keyspace;
pub mod lifecycle;
pub mod limits;
pub mod log;
pub mod offload;
pub mod options;
pub mod persist;
pub mod protected;
pub mod resp;
pub mod server;
pub mod session;
pub mod shared;
pub mod slowlog;
pub mod transaction;
