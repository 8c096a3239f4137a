//! One parsed `BF.*`/`CF.*` command, and what running it against its key's value gives.
//!
//! The filter commands ([`bloom`](crate::bloom) for `BF.*`, [`cuckoo`](crate::cuckoo) for
//! `CF.*`) see one key's value and nothing else: no socket, no keyspace, no log file. A host
//! looks the key up, locks it, calls [`FilterCommand::read`] or [`FilterCommand::write`],
//! appends [`Outcome::log`] to its log (or replicates it) and sends the reply.

use bytes::Bytes;

use crate::budget::Budget;
use crate::params::Defaults;
use crate::reply::Reply;
use crate::value::Value;
use crate::{bloom, cuckoo, table};

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
    /// filter command (not in [`FILTER_COMMANDS`](crate::table::FILTER_COMMANDS));
    /// `Some(Err(reply))` for a wrong argument count or an argument that is invalid whatever
    /// the key holds, in RedisBloom's validation order. A host that has already looked the
    /// name up calls [`FilterSpec::parse`](crate::table::FilterSpec::parse).
    pub fn parse(args: &[Bytes]) -> Option<Result<FilterCommand, Reply>> {
        table::lookup(args.first()?).map(|row| row.parse(args))
    }

    /// Parses a command read back from [`Outcome::log`], as
    /// [`FilterSpec::parse_logged`](crate::table::FilterSpec::parse_logged) does.
    pub fn parse_logged(args: &[Bytes]) -> Option<Result<FilterCommand, Reply>> {
        table::lookup(args.first()?).map(|row| row.parse_logged(args))
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
