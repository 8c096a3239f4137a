//! The generic commands, one file per group: [`connection`] (`PING`, `HELLO`, `AUTH`,
//! `CLIENT`...), [`keys`] (`DEL`, `EXPIRE`, `SCAN`...), [`server`] (`COMMAND`, `CONFIG`,
//! `INFO`, `SAVE`, `SHUTDOWN`), [`client`] (`CLIENT LIST|INFO|KILL`), [`slowlog`],
//! [`memory`] (`MEMORY USAGE`), [`transaction`] (`MULTI`, `EXEC`, `WATCH`...), [`object`]
//! (`OBJECT`, `TOUCH`, `RANDOMKEY`), [`dump`] (`DUMP`, `RESTORE`, `COPY`), [`module`]
//! (`MODULE LIST`, `INFO modules|cluster`) and [`debug`] (`DEBUG RELOAD`); and [`table`],
//! every command the server answers, generic rows with their handlers beside the command
//! layer's `BF.*`/`CF.*` rows.
//!
//! A generic command sees the server's [`Shared`] state and the client's [`Session`]; the
//! filter commands see one key's value and live in [`bloomkit_commands`].
//!
//! Which group uses which (no cycle among them): every group uses this module's [`Call`] and
//! [`Executed`]; `help.rs` (the `HELP` subcommands' reply) uses none and every group with
//! subcommands uses it; [`module`] uses only that; [`connection`] uses [`module`] (`HELLO`
//! lists the modules); [`client`] uses [`connection`] (`CLIENT`'s other subcommands);
//! [`server`] uses [`connection`] (the Redis version), [`module`] (`INFO modules`) and
//! [`table`] (`COMMAND`); [`table`] uses every group, for their handlers; this module uses
//! [`table`] only for the [`Route`] a dispatched request carries.

pub mod connection;
pub mod keys;
pub mod server;
pub mod table;
// What an operator reads and runs: clients, the slow log, memory.
pub mod client;
pub mod memory;
pub mod slowlog;
// RedisBloom compatibility: the rest of what its clients and tests send.
pub mod debug;
pub mod dump;
pub mod module;
pub mod object;
pub mod transaction;

mod help;

use std::sync::Arc;

use bloomkit_commands::table::{CommandSpec, FilterSpec};
use bloomkit_commands::Reply;
use bytes::Bytes;

use crate::cmd::table::Route;
use crate::keyspace::{Lease, Ticket};
use crate::session::Session;
use crate::shared::Shared;

/// What a generic command's handler is given: the request, the row it matched, and the
/// state it may use.
pub struct Call<'a> {
    /// The server's shared state.
    pub shared: &'a Arc<Shared>,
    /// The client's session.
    pub session: &'a mut Session,
    /// The command's row (for its name and subcommands).
    pub spec: &'static CommandSpec,
    /// The request, name first; its count satisfies the row's arity.
    pub args: &'a [Bytes],
}

/// What running one request produced.
#[derive(Debug, PartialEq)]
pub struct Executed {
    /// The reply; `None` for the rare command that answers nothing (`SHUTDOWN`, which
    /// closes the connection instead) or an empty request.
    pub reply: Option<Reply>,
    /// What to await (see [`Journal::durable`](crate::keyspace::Journal::durable)) before
    /// the reply may be sent: the command changed something and the journal wants it synced
    /// first, or (set by [`execute`](crate::dispatch::execute)) it observed the keyspace,
    /// which may hold others' changes not yet durable
    /// ([`Journal::position`](crate::keyspace::Journal::position)).
    pub ticket: Option<Ticket>,
    /// Whether to close the connection once the reply is sent (`QUIT`, `SHUTDOWN`).
    pub close: bool,
    /// Work the synchronous core leaves to [`execute`](crate::dispatch::execute) (a `SAVE`
    /// awaits the snapshot).
    pub(crate) pending: Option<Pending>,
    /// The table row the request's name led to (set by the dispatcher), so that the host
    /// counts the command under its name without looking the name up again.
    pub route: Option<Route>,
}

/// What a command leaves to the asynchronous part of the dispatcher.
#[derive(Debug)]
pub(crate) enum Pending {
    /// `SAVE`: await the snapshot, then answer.
    Save,
    /// `DEBUG RELOAD`: await the snapshot (if `save`), then reload every value.
    Reload {
        /// Whether to take the snapshot first (not `NOSAVE`).
        save: bool,
    },
    /// `EXEC` inside `MULTI`: run the queue, alone.
    Exec,
    /// The gate is closed (an `EXEC` runs): await its opening, then run the command again.
    GateClosed,
    /// A key the command names is held by a long command: await the lease's end, then run
    /// the command again.
    Leased(Arc<Lease>),
    /// A filter command that may run for long: run it with its key leased, off the worker.
    Long(&'static FilterSpec),
}

impl PartialEq for Pending {
    fn eq(&self, other: &Pending) -> bool {
        match (self, other) {
            (Pending::Save, Pending::Save)
            | (Pending::Exec, Pending::Exec)
            | (Pending::GateClosed, Pending::GateClosed) => true,
            (Pending::Reload { save: a }, Pending::Reload { save: b }) => a == b,
            (Pending::Leased(a), Pending::Leased(b)) => Arc::ptr_eq(a, b),
            (Pending::Long(a), Pending::Long(b)) => a.spec.name == b.spec.name,
            _ => false,
        }
    }
}

impl Executed {
    /// A reply that changed nothing durable.
    pub fn reply(reply: Reply) -> Executed {
        Executed {
            reply: Some(reply),
            ticket: None,
            close: false,
            pending: None,
            route: None,
        }
    }

    /// A reply to send once `ticket` is durable.
    pub fn logged(reply: Reply, ticket: Option<Ticket>) -> Executed {
        Executed {
            ticket,
            ..Executed::reply(reply)
        }
    }

    /// Closes the connection after `reply` (if any).
    pub fn closing(reply: Option<Reply>) -> Executed {
        Executed {
            reply,
            close: true,
            ..Executed::reply(Reply::Ok)
        }
    }

    pub(crate) fn pending(pending: Pending) -> Executed {
        Executed {
            pending: Some(pending),
            ..Executed::reply(Reply::Ok)
        }
    }
}
