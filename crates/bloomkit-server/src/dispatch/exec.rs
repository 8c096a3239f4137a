//! `EXEC`: the queued commands, run with no other client's command in between, their
//! replies in one array; in the log, between a `MULTI` and an `EXEC` record, so that a
//! crash never replays part of them.
//!
//! The checks are Redis 7's `execCommand`, in its order: a command refused while queuing
//! (`EXECABORT`), then a watched key that changed (a nil array); then, as Redis's
//! `processCommand` checks before `EXEC` runs, writes refused by the log (`MISCONF`) or
//! memory over `maxmemory` (`OOM`), for a queue that holds such commands. Every watch ends
//! with `EXEC`, whatever it answers.

use std::sync::Arc;

use bloomkit_commands::errors::OOM;
use bloomkit_commands::{Budget, Reply};

use super::{generic_blocking_lease, run_from, Origin};
use crate::cmd::table::{self, Route};
use crate::cmd::{Executed, Pending};
use crate::errors::{EXEC_WITHOUT_MULTI, NOT_IN_TRANSACTION};
use crate::keyspace::Lease;
use crate::session::Session;
use crate::shared::Shared;
use crate::transaction::Queue;

/// Runs the client's queue (the dispatcher calls it for `EXEC` inside `MULTI`, once `EXEC`
/// itself has left the gate).
#[cold]
pub(super) fn run_queue(shared: &Arc<Shared>, session: &mut Session) -> Executed {
    let keyspace = shared.keyspace();
    // From here until the reply, nothing else runs on the keyspace: the watched keys
    // cannot change between the check and the commands, and the log holds the
    // transaction's records together. A key a long command holds must be let go first:
    // the queue waits for it, the gate open meanwhile.
    let alone = keyspace.gate().exclusive();
    if let Some(lease) = session
        .transaction
        .queue()
        .filter(|queue| !queue.refused)
        .and_then(|queue| blocking_lease(shared, queue))
    {
        drop(alone);
        return Executed::pending(Pending::Leased(lease));
    }
    let Some(queue) = session.transaction.take() else {
        return Executed::reply(Reply::error(EXEC_WITHOUT_MULTI));
    };
    if queue.refused {
        session.transaction.unwatch();
        return Executed::reply(Reply::error(
            "EXECABORT Transaction discarded because of previous errors.",
        ));
    }
    let spoiled = session.transaction.spoiled(keyspace);
    session.transaction.unwatch();
    if spoiled {
        return Executed::reply(Reply::NullArray);
    }
    let journal = keyspace.journal();
    let refusal = queue
        .writes
        .then(|| journal.and_then(|j| j.refuses_writes()))
        .flatten()
        .or_else(|| (queue.deny_oom && !keyspace.within_maxmemory(0)).then(|| OOM.to_string()));
    if let Some(why) = refusal {
        return Executed::reply(Reply::Error(format!(
            "EXECABORT Transaction discarded because of: {why}"
        )));
    }
    if let Some(journal) = journal {
        journal.begin_transaction();
    }
    let mut replies = Vec::with_capacity(queue.commands.len());
    let mut ticket = None;
    for args in &queue.commands {
        let executed = run_from(shared, session, args, Origin::Queue);
        ticket = ticket.max(executed.ticket);
        replies.push(match executed.pending {
            // Only `SAVE` leaves work for later, and it is refused while queuing.
            Some(_) => Reply::error(NOT_IN_TRANSACTION),
            None => executed.reply.unwrap_or(Reply::Null),
        });
    }
    if let Some(journal) = journal {
        ticket = ticket.max(journal.end_transaction());
    }
    Executed::logged(Reply::Array(replies), ticket)
}

/// The lease that a queued command's key is held by, if any (or any lease at all, for a
/// command that changes every key).
fn blocking_lease(shared: &Shared, queue: &Queue) -> Option<Arc<Lease>> {
    queue
        .commands
        .iter()
        .find_map(|args| match table::route(args.first()?)? {
            Route::Filter(row) => shared.keyspace().blocking_lease(
                super::keys_of(&row.spec, args),
                row.spec.has(bloomkit_commands::table::Flag::Write),
            ),
            Route::Generic(row) => generic_blocking_lease(shared, &row.spec, args),
        })
}
