//! What bloomkit's integration tests share, written once: a dev-dependency of the library,
//! the CLI, the server and the module, never a dependency of anything shipped.
//!
//! # Overview of modules
//!
//! * [`skip`]: the one "full tests" switch. A test whose outside program (an engine, a
//!   tool, `/proc`) is missing skips with a printed line, except under
//!   `BLOOMKIT_FULL_TESTS=1` (set by `scripts/test.sh`, which installs every program), where
//!   it fails naming what to install. [`skip::require`] is the only way a test returns early.
//! * [`resp`]: RESP replies ([`Resp`], RESP2 and RESP3), requests ([`resp::request`]) and a
//!   blocking client ([`Conn`]) over a plain `TcpStream`.
//! * [`served`]: a `bloomkit serve` process on port 0 ([`Served`]), killed when dropped.
//! * [`engine`]: Redis and Valkey processes ([`Engine`], [`EngineServer`]) on free loopback
//!   ports, RedisBloom's module as an oracle, and [`engine::output_within`] for programs that
//!   must not hang a test.
//! * [`golden`]: readers of the data a real RedisBloom 2.8 wrote
//!   (`crates/bloomkit/tests/data/redisbloom/`).
//! * [`programs`]: finding and running the outside programs (Node.js, Chromium, Python)
//!   with a deadline that always cleans up.
//! * [`wait`]: [`wait::until`], polling for an event under a generous deadline, so a loaded
//!   machine makes a test slower, never wrong.
//!
//! It depends on `std` and `tempfile` only: it sits below the library and every host, so
//! any crate's tests may use it, and it knows nothing of theirs.

#![deny(missing_docs)]

pub mod engine;
pub mod golden;
pub mod programs;
pub mod resp;
pub mod served;
pub mod skip;
pub mod wait;

pub use crate::engine::{Engine, EngineServer};
pub use crate::resp::{Conn, Resp};
pub use crate::served::Served;
