//! RedisBloom's `BF.*` and `CF.*` commands over bloomkit's filters, for any host.
//!
//! This is the command layer between the library (`bloomkit`) and a host: arguments in,
//! filter operations, a reply and the deterministic form to log or replicate out. It knows
//! nothing of sockets, files, threads or async runtimes (no tokio): a host brings the key's
//! value, the memory budget and the current `bf-*`/`cf-*` defaults, and does the locking,
//! the storage and the wire. Two hosts use it: `bloomkit serve` (`bloomkit-server`) and a
//! Redis/Valkey module.
//!
//! # How a host runs a command
//!
//! 1. [`FilterCommand::parse`] the request's arguments (name first, as byte strings, each a
//!    slice of the host's own buffer: [`Args`], which [`with_args`] makes of a host's own
//!    argument type): the name picks a row of the
//!    [command table](table::FILTER_COMMANDS), which checks the argument count, then the
//!    command's parser checks what needs neither the key nor the defaults. An error here is
//!    the reply.
//! 2. Find the value at [`FilterCommand::key`]: `None` if the key is missing, else a
//!    [`Value`] (a Bloom filter, a cuckoo filter, an aging key, or a dump still being
//!    restored).
//! 3. For [`Access::Read`], [`FilterCommand::read`] the value; for [`Access::Write`],
//!    [`FilterCommand::write`] the key's slot (`&mut Option<Value>`, which the command may
//!    fill, change or empty), with a [`Ctx`] of the current [`Defaults`], a [`Budget`] and
//!    the host's clock.
//!    A command that reads other keys too ([`FilterCommand::sources`], not empty only for
//!    `BF.MERGE`) runs through [`FilterCommand::write_reading`], with their values, which
//!    the host holds unchanged meanwhile.
//! 4. Send the [`Reply`], a plain tree each host walks onto its own wire (the server
//!    encodes it as RESP2 or RESP3; a module maps it onto `RedisModule_ReplyWith*`),
//!    after appending [`Outcome::log`] to its log or
//!    replication stream. The log is deterministic: a key created from the defaults is
//!    logged with every parameter spelled out, so a replay or a replica under other
//!    defaults holds the same bits.
//!
//! # Overview of modules
//!
//! In the order data flows, each using only those above it (the exceptions are named):
//!
//! * [`args`]: reading arguments as Redis does (integers, floats, keywords).
//! * [`reply`]: [`Reply`] and [`Protocol`]: what a command answers, for any wire.
//! * [`errors`]: the error replies more than one command answers (`wrong_arity`,
//!   `WRONGTYPE`, RedisBloom's common ones), each written once.
//! * `limits`: the bounds on the commands' arguments (RedisBloom's, and the `AF.*` ones),
//!   where the parameters' ranges end too.
//! * [`Budget`], [`Unlimited`] and [`Replay`]: the memory a command may allocate, asked
//!   before it does, and whether it is replayed.
//! * [`params`]: the `bf-*`/`cf-*`/`af-*` parameters, one table ([`PARAMETERS`]) with each
//!   one's name, type, default and range, and the [`Defaults`] they set.
//! * [`Args`] and [`with_args`], [`Ctx`], [`Access`], [`Outcome`] (`run.rs`): a request's
//!   arguments as slices where the host holds them, what a command runs with and gives
//!   back, and the [`Record`]s of its [`Log`].
//! * [`value`]: what a key holds ([`Value`]), its storage encoding, and a dump still
//!   arriving ([`PartialDump`], and the header of a value's encoding). A value holds one of
//!   the types below it in this list: [`aging::AgingKey`] (`aging/key.rs`, which uses
//!   nothing of this crate) and an [`ImportingDump`] (`importing.rs`: a RedisBloom dump
//!   arriving, which becomes a [`Value`] when complete, so these two modules use each
//!   other; it tells a bloomkit aging dump by `aging/key.rs`'s magic).
//! * `shared.rs`: what the families' commands share (finding a key's filter, asking the
//!   budget, building what they log).
//! * `dump.rs`: `SCANDUMP`/`LOADCHUNK` for every family, and [`Value::restore_commands`]
//!   (the chunks as commands). It hands a RedisBloom dump to `importing.rs`, which refuses
//!   a chunk with `dump.rs`'s `LoadError`: the one pair here that use each other.
//! * [`bloom`] (`BF.*`, with `BF.MERGE` in `bloom/merge.rs`), [`cuckoo`] (`CF.*`) and
//!   [`aging`] (`AF.*`: aging filters, keys that forget a generation at a time): the
//!   commands, in RedisBloom's validation order and with its error strings.
//! * [`FilterCommand`] (`command.rs`): one parsed command of any family.
//! * [`table`]: every filter command once, with what a host registers it with (name, arity,
//!   flags, key positions, ACL categories, documentation) and the parser its name reaches.
//!
//! # Example
//!
//! A host's whole loop, with a map for a keyspace:
//!
//! ```
//! use std::collections::HashMap;
//!
//! use bloomkit_commands::{Access, Ctx, Defaults, FilterCommand, Record, Reply, Unlimited, Value};
//! use bytes::Bytes;
//!
//! let mut keys: HashMap<Bytes, Value> = HashMap::new();
//! let mut log: Vec<Vec<Bytes>> = Vec::new();
//! let defaults = Defaults::default();
//! let ctx = Ctx { defaults: &defaults, budget: &Unlimited, now_ms: &|| 0 };
//! let mut run = |line: &str| -> Reply {
//!     let args: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
//!     let command = match FilterCommand::parse(&args) {
//!         None => return Reply::error("ERR unknown command"),
//!         Some(Err(reply)) => return reply,
//!         Some(Ok(command)) => command,
//!     };
//!     match command.access() {
//!         Access::Read => command.read(keys.get(command.key()), &ctx),
//!         Access::Write => {
//!             let mut slot = keys.remove(command.key());
//!             let outcome = command.write(&mut slot, &ctx);
//!             if let Some(value) = slot {
//!                 keys.insert(Bytes::copy_from_slice(command.key()), value);
//!             }
//!             log.extend(outcome.log.iter().map(Record::to_vec));
//!             outcome.reply
//!         }
//!     }
//! };
//!
//! assert_eq!(run("BF.ADD fruit apple"), Reply::Bool(true));
//! assert_eq!(run("BF.EXISTS fruit apple"), Reply::Bool(true));
//! assert_eq!(run("BF.EXISTS fruit pear"), Reply::Bool(false));
//! assert_eq!(
//!     run("BF.ADD"),
//!     Reply::error("ERR wrong number of arguments for 'bf.add' command")
//! );
//! // The key was created from the defaults; the log names them.
//! let logged: Vec<String> = log
//!     .iter()
//!     .map(|c| c.iter().map(|a| String::from_utf8_lossy(a)).collect::<Vec<_>>().join(" "))
//!     .collect();
//! assert_eq!(
//!     logged,
//!     [
//!         "BF.RESERVE fruit 0.01 100 EXPANSION 2 LAYOUT CLASSIC2",
//!         "BF.MADD fruit apple",
//!     ]
//! );
//! ```
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod aging;
pub mod args;
pub mod bloom;
mod budget;
mod command;
pub mod cuckoo;
mod dump;
pub mod errors;
mod importing;
mod limits;
pub mod params;
pub mod reply;
mod run;
mod shared;
pub mod table;
pub mod value;

pub use budget::{Budget, Replay, Unlimited};
pub use command::FilterCommand;
pub use importing::ImportingDump;
pub use params::{Defaults, Parameter, PARAMETERS};
pub use reply::{Protocol, Reply};
pub use run::{with_args, Access, Args, Ctx, Log, Outcome, Record, Word};
pub use value::{PartialDump, Value};
