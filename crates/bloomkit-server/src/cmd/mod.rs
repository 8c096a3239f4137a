//! Commands: arguments in, filter operations, reply values out.
//!
//! The filter commands ([`bloom`] for `BF.*`, [`cuckoo`] for `CF.*`) see one key's value
//! and nothing else: no socket, no keyspace, no log file. The server looks the key up,
//! locks it, calls [`FilterCommand::read`] or [`FilterCommand::write`], appends
//! [`Outcome::log`] to its append-only log and sends the reply. A Redis module would do the
//! same with Redis's own key and reply APIs, which is why this layer stays this narrow.

pub mod args;
pub mod bloom;
pub mod connection;
pub mod cuckoo;
mod dump;
pub mod glob;
pub mod keys;
pub mod server;
mod shared;
pub mod table;

use bytes::Bytes;

use crate::reply::Reply;
use crate::value::Value;

/// Defaults for keys that commands create implicitly (`BF.ADD` on a missing key), settable
/// with `CONFIG SET`. Names and values follow RedisBloom's Redis 8 configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct Defaults {
    /// `bf-error-rate`: 0.01.
    pub bf_error_rate: f64,
    /// `bf-initial-size`: 100, in [1, 2^30].
    pub bf_initial_size: u64,
    /// `bf-expansion-factor`: 2, in [0, 32768]; 0 means non-scaling.
    pub bf_expansion_factor: u32,
    /// `cf-bucket-size`: 2, in [1, 255].
    pub cf_bucket_size: u32,
    /// `cf-initial-size`: 1024.
    pub cf_initial_size: u64,
    /// `cf-max-iterations`: 20, in [1, 65535].
    pub cf_max_iterations: u32,
    /// `cf-expansion-factor`: 1, in [0, 32768].
    pub cf_expansion_factor: u32,
    /// `cf-max-expansions`: 32.
    pub cf_max_expansions: u32,
}

impl Default for Defaults {
    fn default() -> Self {
        Defaults {
            bf_error_rate: 0.01,
            bf_initial_size: 100,
            bf_expansion_factor: 2,
            cf_bucket_size: 2,
            cf_initial_size: 1024,
            cf_max_iterations: 20,
            cf_expansion_factor: 1,
            cf_max_expansions: 32,
        }
    }
}

/// How much memory a command may allocate, asked before it allocates.
///
/// The server answers from `--maxmemory` and its running total; replaying the log on start-up
/// uses [`Unlimited`], since what was acknowledged once must load again.
pub trait Budget: Send + Sync {
    /// Whether `extra_bytes` more may be allocated without exceeding `--maxmemory`.
    fn within_maxmemory(&self, extra_bytes: usize) -> bool;

    /// Bytes the machine can still give (Linux `MemAvailable`), or `None` if unknown. A
    /// `RESERVE` larger than this answers `ERR Insufficient memory to create filter`.
    fn machine_available(&self) -> Option<usize>;
}

/// A [`Budget`] that admits everything: for replay and for tests.
#[derive(Clone, Copy, Debug, Default)]
pub struct Unlimited;

impl Budget for Unlimited {
    fn within_maxmemory(&self, _extra_bytes: usize) -> bool {
        true
    }

    fn machine_available(&self) -> Option<usize> {
        None
    }
}

/// What a filter command may consult besides its key.
#[derive(Clone, Copy)]
pub struct Ctx<'a> {
    /// Defaults for implicitly created keys.
    pub defaults: &'a Defaults,
    /// The memory budget.
    pub budget: &'a dyn Budget,
}

/// Whether a command only reads its key (and may share it with other readers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Reads the key: `BF.EXISTS`, `CF.COUNT`, `BF.INFO`, `BF.SCANDUMP`...
    Read,
    /// May change or create the key: `BF.ADD`, `CF.DEL`, `BF.LOADCHUNK`...
    Write,
}

/// The result of a write command.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    /// What to answer.
    pub reply: Reply,
    /// Commands to append to the log, in order, before the reply is sent: empty when
    /// nothing changed. Replaying them (parsed with [`FilterCommand::parse_logged`], run
    /// through [`FilterCommand::write`]) on the state before this command, with any
    /// [`Defaults`], must give the state after it, without an error reply; so a command
    /// that created its key from [`Defaults`] logs a creation naming every parameter first.
    /// The one command logged that is not a filter command is `DEL key`, for a restore whose
    /// last chunk did not decode and removed its key.
    pub log: Vec<Vec<Bytes>>,
}

impl Outcome {
    /// An outcome that changed nothing.
    pub fn unchanged(reply: Reply) -> Outcome {
        Outcome {
            reply,
            log: Vec::new(),
        }
    }
}

/// One parsed `BF.*` or `CF.*` command.
#[derive(Clone, Debug, PartialEq)]
pub enum FilterCommand {
    /// A `BF.*` command.
    Bloom(bloom::BloomCommand),
    /// A `CF.*` command.
    Cuckoo(cuckoo::CuckooCommand),
}

impl FilterCommand {
    /// Parses `args` (the command name first, in any case): `None` if the name is not a
    /// filter command; `Some(Err(reply))` for a wrong argument count or an argument that is
    /// invalid whatever the key holds, in RedisBloom's validation order.
    pub fn parse(args: &[Bytes]) -> Option<Result<FilterCommand, Reply>> {
        let name = args.first()?;
        if name.len() > 3 && name[..3].eq_ignore_ascii_case(b"bf.") {
            bloom::BloomCommand::parse(args).map(|r| r.map(FilterCommand::Bloom))
        } else if name.len() > 3 && name[..3].eq_ignore_ascii_case(b"cf.") {
            cuckoo::CuckooCommand::parse(args).map(|r| r.map(FilterCommand::Cuckoo))
        } else {
            None
        }
    }

    /// Parses a command read back from [`Outcome::log`]: as [`FilterCommand::parse`], but
    /// option keywords (`EXPANSION`, `BUCKETSIZE`...) are looked for after the key only.
    /// RedisBloom searches from the command name on, so for a client a key spelled like an
    /// option is read as that option; the log names every option after the key, and must
    /// replay a key named `expansion` as the key it is.
    pub fn parse_logged(args: &[Bytes]) -> Option<Result<FilterCommand, Reply>> {
        let name = args.first()?;
        if name.len() > 3 && name[..3].eq_ignore_ascii_case(b"bf.") {
            bloom::BloomCommand::parse_logged(args).map(|r| r.map(FilterCommand::Bloom))
        } else if name.len() > 3 && name[..3].eq_ignore_ascii_case(b"cf.") {
            cuckoo::CuckooCommand::parse_logged(args).map(|r| r.map(FilterCommand::Cuckoo))
        } else {
            None
        }
    }

    /// The one key the command touches.
    pub fn key(&self) -> &Bytes {
        match self {
            FilterCommand::Bloom(c) => c.key(),
            FilterCommand::Cuckoo(c) => c.key(),
        }
    }

    /// Whether the command only reads its key.
    pub fn access(&self) -> Access {
        match self {
            FilterCommand::Bloom(c) => c.access(),
            FilterCommand::Cuckoo(c) => c.access(),
        }
    }

    /// Runs a [`Access::Read`] command against the key's value (`None`: no such key).
    /// Called for a write command, it answers as if the key could not be changed.
    pub fn read(&self, value: Option<&Value>, ctx: &Ctx<'_>) -> Reply {
        match self {
            FilterCommand::Bloom(c) => c.read(value, ctx),
            FilterCommand::Cuckoo(c) => c.read(value, ctx),
        }
    }

    /// Runs any command against the key's slot, which it may fill, change or empty.
    pub fn write(&self, slot: &mut Option<Value>, ctx: &Ctx<'_>) -> Outcome {
        match self {
            FilterCommand::Bloom(c) => c.write(slot, ctx),
            FilterCommand::Cuckoo(c) => c.write(slot, ctx),
        }
    }
}
