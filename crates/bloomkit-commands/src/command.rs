//! One parsed `BF.*`/`CF.*` command: its key, whether it writes, and running it against
//! its key's value.
//!
//! The filter commands ([`bloom`](crate::bloom) for `BF.*`, [`cuckoo`](crate::cuckoo) for
//! `CF.*`) see one key's value and nothing else: no socket, no keyspace, no log file. A host
//! parses a request ([`FilterCommand::parse`], the command table's), looks the key up, locks
//! it, calls [`FilterCommand::read`] or [`FilterCommand::write`], appends
//! [`Outcome::log`] to its log (or replicates it) and sends the reply.

use crate::reply::Reply;
use crate::run::{Access, Ctx, Outcome};
use crate::value::Value;
use crate::{bloom, cuckoo};

/// One parsed `BF.*` or `CF.*` command.
#[derive(Clone, Debug, PartialEq)]
pub enum FilterCommand<'a> {
    /// A `BF.*` command.
    Bloom(bloom::BloomCommand<'a>),
    /// A `CF.*` command.
    Cuckoo(cuckoo::CuckooCommand<'a>),
}

impl<'a> FilterCommand<'a> {
    /// The one key the command touches.
    pub fn key(&self) -> &'a [u8] {
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
    pub fn write(&self, slot: &mut Option<Value>, ctx: &Ctx<'_>) -> Outcome<'_> {
        match self {
            FilterCommand::Bloom(c) => c.write(slot, ctx),
            FilterCommand::Cuckoo(c) => c.write(slot, ctx),
        }
    }
}
