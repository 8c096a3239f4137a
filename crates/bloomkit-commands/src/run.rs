//! What a filter command runs with ([`Ctx`]), whether it may change its key ([`Access`]),
//! and what running it gives ([`Outcome`]).

use bytes::Bytes;
use smallvec::SmallVec;

use crate::budget::Budget;
use crate::params::Defaults;
use crate::reply::Reply;

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
    /// nothing changed. Replaying them (parsed with
    /// [`FilterCommand::parse_logged`](crate::FilterCommand::parse_logged), run through
    /// [`FilterCommand::write`](crate::FilterCommand::write)) on the state before this command, with any
    /// [`Defaults`], must give the state after it, without an error reply; so a command
    /// that created its key from [`Defaults`] logs a creation naming every parameter first.
    /// The one command logged that is not a filter command is `DEL key`, for a restore whose
    /// last chunk did not decode and removed its key.
    pub log: Log,
}

/// What a write command logs, in order: room inline for the two records a command most
/// often logs (a creation from the defaults, then the items it added), because inside Redis
/// each allocation goes through the engine's accounting allocator. A host that keeps a log of
/// its own takes it with `into_vec` or `extend`.
pub type Log = SmallVec<[Vec<Bytes>; 2]>;

impl Outcome {
    /// An outcome that changed nothing.
    pub fn unchanged(reply: Reply) -> Outcome {
        Outcome {
            reply,
            log: Log::new(),
        }
    }
}
