//! One parsed `BF.*`/`CF.*` command: its key, whether it writes, and running it against
//! its key's value.
//!
//! The filter commands ([`bloom`](crate::bloom) for `BF.*`, [`cuckoo`](crate::cuckoo) for
//! `CF.*`) see one key's value and nothing else: no socket, no keyspace, no log file. A host
//! parses a request ([`FilterCommand::parse`], the command table's), looks the key up, locks
//! it, calls [`FilterCommand::read`] or [`FilterCommand::write`], appends
//! [`Outcome::log`] to its log (or replicates it) and sends the reply.

use crate::reply::Reply;
use crate::run::{Access, Args, Ctx, Outcome};
use crate::value::Value;
use crate::{aging, bloom, cuckoo};

/// One parsed `BF.*` or `CF.*` command.
#[derive(Clone, Debug, PartialEq)]
pub enum FilterCommand<'a> {
    /// A `BF.*` command.
    Bloom(bloom::BloomCommand<'a>),
    /// A `CF.*` command.
    Cuckoo(cuckoo::CuckooCommand<'a>),
    /// An `AF.*` command.
    Aging(aging::AgingCommand<'a>),
}

impl<'a> FilterCommand<'a> {
    /// The key the command reads or changes.
    pub fn key(&self) -> &'a [u8] {
        match self {
            FilterCommand::Bloom(c) => c.key(),
            FilterCommand::Cuckoo(c) => c.key(),
            FilterCommand::Aging(c) => c.key(),
        }
    }

    /// The keys the command reads besides [`key`](Self::key), in order: `BF.MERGE`'s
    /// sources; empty for every other command. A host runs a command with sources through
    /// [`write_reading`](Self::write_reading), holding their values unchanged meanwhile.
    pub fn sources(&self) -> Args<'a> {
        match self {
            FilterCommand::Bloom(c) => c.sources(),
            FilterCommand::Cuckoo(_) | FilterCommand::Aging(_) => &[],
        }
    }

    /// Whether the command only reads its key.
    pub fn access(&self) -> Access {
        match self {
            FilterCommand::Bloom(c) => c.access(),
            FilterCommand::Cuckoo(c) => c.access(),
            FilterCommand::Aging(c) => c.access(),
        }
    }

    /// Runs a [`Access::Read`] command against the key's value (`None`: no such key).
    /// Called for a write command, it answers as if the key could not be changed.
    pub fn read(&self, value: Option<&Value>, ctx: &Ctx<'_>) -> Reply {
        match self {
            FilterCommand::Bloom(c) => c.read(value, ctx),
            FilterCommand::Cuckoo(c) => c.read(value, ctx),
            FilterCommand::Aging(c) => c.read(value, ctx),
        }
    }

    /// Runs any command against the key's slot, which it may fill, change or empty.
    pub fn write(&self, slot: &mut Option<Value>, ctx: &Ctx<'_>) -> Outcome<'_> {
        match self {
            FilterCommand::Bloom(c) => c.write(slot, ctx),
            FilterCommand::Cuckoo(c) => c.write(slot, ctx),
            FilterCommand::Aging(c) => c.write(slot, ctx),
        }
    }

    /// [`write`](Self::write) for a command with [`sources`](Self::sources): `sources`
    /// holds each one's value in order (`None`: no such key; a source that is
    /// [`key`](Self::key) itself is read from the slot, whatever is passed for it).
    pub fn write_reading(
        &self,
        slot: &mut Option<Value>,
        sources: &[Option<&Value>],
        ctx: &Ctx<'_>,
    ) -> Outcome<'_> {
        match self {
            FilterCommand::Bloom(c) => c.write_reading(slot, sources, ctx),
            FilterCommand::Cuckoo(c) => c.write(slot, ctx),
            FilterCommand::Aging(c) => c.write(slot, ctx),
        }
    }
}
