//! `CF.*` commands. PLACEHOLDER: being written on its own branch; recognises nothing yet.

use bytes::Bytes;

use super::{Access, Ctx, Outcome};
use crate::reply::Reply;
use crate::value::Value;

/// A parsed `CF.*` command.
#[derive(Clone, Debug, PartialEq)]
pub struct CuckooCommand {
    key: Bytes,
}

impl CuckooCommand {
    /// Parses `args`; `None` if the name is not a `CF.*` command this server knows.
    pub fn parse(_args: &[Bytes]) -> Option<Result<Self, Reply>> {
        None
    }

    /// The key.
    pub fn key(&self) -> &Bytes {
        &self.key
    }

    /// Read or write.
    pub fn access(&self) -> Access {
        Access::Write
    }

    /// See [`super::FilterCommand::read`].
    pub fn read(&self, _value: Option<&Value>, _ctx: &Ctx<'_>) -> Reply {
        Reply::error("ERR not implemented")
    }

    /// See [`super::FilterCommand::write`].
    pub fn write(&self, _slot: &mut Option<Value>, _ctx: &Ctx<'_>) -> Outcome {
        Outcome::unchanged(Reply::error("ERR not implemented"))
    }
}
