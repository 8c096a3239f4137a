//! The dispatcher: one request (`Vec<Bytes>`, name first) in, one reply out.
//!
//! It knows nothing of sockets, which keeps it testable without a network and makes it
//! the one path for both clients and start-up replay ([`replay`]). The name is looked up in
//! the command table ([`table::route`]), and the order of checks is Redis's: an unknown
//! command is refused first, then a wrong argument count, then a client that has not
//! authenticated (`NOAUTH`), and only then does the command run. A `BF.*`/`CF.*` row's
//! parser checks the count itself, after `NOAUTH`, as a module command's would; a generic
//! row's handler runs once the dispatcher has checked it.
//!
//! Inside `MULTI`, a command that passes those checks is queued (`+QUEUED`) instead of run,
//! and one that fails them spoils the transaction, as Redis's `rejectCommand` does; `EXEC`
//! runs the queue alone (in the `exec` submodule). Every command a client runs holds the
//! keyspace's [`Gate`](crate::keyspace::Gate) shared while it runs, which `EXEC` holds
//! exclusively.

use std::sync::Arc;

use bloomkit_commands::errors::{wrong_arity, OOM};
use bloomkit_commands::table::{CommandSpec, Flag};
use bloomkit_commands::{with_args, Reply};
use bytes::Bytes;

use crate::cmd::table::{self, Route};
use crate::cmd::transaction::runs_inside_multi;
use crate::cmd::Executed;
use crate::cmd::{server, Call, Pending};
use crate::config::DebugCommand;
use crate::errors::{noauth, unknown_command, NOT_IN_TRANSACTION};
use crate::session::Session;
use crate::shared::Shared;

mod exec;
mod long;

/// Runs one request for a client; `long` is [`offload::is_long`](crate::offload::is_long)
/// of `args`, which the caller needs as well.
///
/// Nothing here blocks a worker thread for longer than a short command runs: a client whose
/// command finds the gate closed (an `EXEC` running) or its key held by a long command
/// ([`crate::keyspace::lease`]) awaits them, and a long command runs off the worker with its
/// key leased, holding no lock that another key needs.
pub async fn execute(
    shared: &Arc<Shared>,
    session: &mut Session,
    args: &[Bytes],
    long: bool,
) -> Executed {
    let keyspace = shared.keyspace();
    let mut executed = loop {
        let mut executed = crate::offload::run(long, || run(shared, session, args));
        match executed.pending.take() {
            Some(Pending::GateClosed) => keyspace.gate().opened().await,
            Some(Pending::Leased(lease)) => lease.released().await,
            other => {
                executed.pending = other;
                break executed;
            }
        }
    };
    let route = executed.route;
    match executed.pending.take() {
        Some(Pending::Save) => executed.reply = Some(server::save(shared).await),
        Some(Pending::Reload { save }) => {
            executed.reply = Some(crate::cmd::debug::reload(shared, save).await);
        }
        Some(Pending::Long(row)) => {
            executed = crate::offload::run(true, || long::run(shared, session, args, row));
            executed.route = route;
        }
        Some(Pending::Exec) => {
            executed = loop {
                let queue_long = session.transaction.has_long_command();
                let mut executed =
                    crate::offload::run(queue_long, || exec::run_queue(shared, session));
                match executed.pending.take() {
                    Some(Pending::GateClosed) => keyspace.gate().opened().await,
                    Some(Pending::Leased(lease)) => lease.released().await,
                    _ => break executed,
                }
            };
            executed.route = route;
        }
        Some(Pending::GateClosed | Pending::Leased(_)) | None => {}
    }
    if executed.ticket.is_none() {
        // Read after the command ran, so it covers every change the command could see.
        executed.ticket = keyspace.journal().and_then(|j| j.position());
    }
    executed
}

/// Whether `args` make a request that runs off the worker thread: a long one
/// ([`offload::is_long`](crate::offload::is_long)), or one that walks every key (`KEYS`).
pub fn is_long_request(args: &[Bytes]) -> bool {
    crate::offload::is_long(args)
        || args
            .first()
            .and_then(|name| table::generic(name))
            .is_some_and(|row| row.walks_every_key)
}

/// Runs one logged command during start-up recovery, with every check a client's command
/// gets but authentication; the keyspace is loading, so it is neither logged again nor
/// limited by `--maxmemory`.
///
/// # Errors
///
/// The error reply's text, if the command was refused: a log that replays with errors
/// was not written by this server, or is damaged, and recovery should stop and say so.
pub fn replay(shared: &Arc<Shared>, args: &[Bytes]) -> Result<(), String> {
    let mut session = Session {
        authenticated: true,
        ..Session::new(shared)
    };
    match run_from(shared, &mut session, args, Origin::Log).reply {
        Some(Reply::Error(text)) => Err(text),
        _ => Ok(()),
    }
}

/// Where a request comes from: filter commands read back from the log are parsed with
/// [`FilterSpec::parse_logged`](bloomkit_commands::table::FilterSpec::parse_logged); a
/// client's commands wait for a leased key and run long ones leased; `EXEC`'s queued ones
/// run at once, the gate held exclusively.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Origin {
    Client,
    Queue,
    Log,
}

/// The synchronous core of [`execute`]: the command runs inside the gate if it touches the
/// keyspace (`EXEC`'s queue runs afterwards, taking the gate exclusively).
#[inline]
fn run(shared: &Arc<Shared>, session: &mut Session, args: &[Bytes]) -> Executed {
    let gated = args
        .first()
        .and_then(|name| table::route(name))
        .is_some_and(uses_gate);
    if !gated {
        return run_from(shared, session, args, Origin::Client);
    }
    let Some(_entered) = shared.keyspace().gate().try_enter(session.id) else {
        return Executed::pending(Pending::GateClosed);
    };
    run_from(shared, session, args, Origin::Client)
}

/// Whether a command runs inside the gate: the filter commands, and the generic commands
/// that read or write keys (by the table's flags and key positions); not those that touch
/// no key (`PING`, `INFO`, `CONFIG`...), nor `EXEC` (it takes the gate itself, exclusively),
/// nor `KEYS` (it enters the gate a shard at a time).
fn uses_gate(route: Route) -> bool {
    match route {
        Route::Filter(_) => true,
        Route::Generic(row) => !row.walks_every_key && touches_keys(&row.spec),
    }
}

fn touches_keys(spec: &CommandSpec) -> bool {
    spec.has(Flag::Write)
        || spec.has(Flag::Readonly)
        || spec.first_key > 0
        || spec.subcommands.iter().any(touches_keys)
}

/// A command refused before it ran: inside `MULTI`, that spoils the transaction.
fn refused(session: &mut Session, reply: Reply) -> Executed {
    session.transaction.refuse();
    Executed::reply(reply)
}

/// Queues a command that passed every check, inside `MULTI` (the caller checks that one is
/// open, so that the common path pays one load); `None` for the commands that run at once
/// even inside it. A command not allowed inside a transaction, or one that the queue has no
/// room for (over `maxmemory`, Redis's rule: the queue itself takes memory; or past
/// `client-query-buffer-limit`), is refused instead.
#[cold]
fn queued(
    shared: &Shared,
    session: &mut Session,
    spec: &CommandSpec,
    args: &[Bytes],
) -> Option<Executed> {
    if runs_inside_multi(spec.name) {
        return None;
    }
    if spec.has(Flag::NoMulti) {
        return Some(refused(session, Reply::error(NOT_IN_TRANSACTION)));
    }
    // The queue holds what it queues, in the client's memory: past `maxmemory` it is
    // refused (after eviction, under an evicting policy), as Redis refuses queuing then; and
    // with the request buffer, it may not hold more than `client-query-buffer-limit`.
    let size = crate::transaction::queued_size(args);
    if !shared.keyspace().make_room(size, b"") {
        return Some(refused(session, Reply::error(OOM)));
    }
    let limit = shared.settings().options().query_buffer_limit();
    let queued = session.transaction.queue_memory().saturating_add(size);
    if queued as u64 > limit {
        return Some(refused(
            session,
            Reply::Error(format!(
                "ERR the transaction's queue would pass client-query-buffer-limit ({limit} bytes): send EXEC or DISCARD sooner, or raise the limit"
            )),
        ));
    }
    session.transaction.queue_mut()?.push(spec, args);
    Some(Executed::reply(Reply::Simple("QUEUED".to_string())))
}

fn run_from(
    shared: &Arc<Shared>,
    session: &mut Session,
    args: &[Bytes],
    origin: Origin,
) -> Executed {
    let Some(name) = args.first() else {
        // An empty request (`*0`, or a blank inline line) is ignored, as Redis does.
        return Executed {
            reply: None,
            ..Executed::reply(Reply::Ok)
        };
    };

    let Some(route) = table::route(name) else {
        return refused(session, unknown_command(args));
    };
    let mut executed = run_routed(shared, session, args, origin, route);
    executed.route = Some(route);
    executed
}

/// [`run_from`] once the name has led to `route`.
fn run_routed(
    shared: &Arc<Shared>,
    session: &mut Session,
    args: &[Bytes],
    origin: Origin,
    route: Route,
) -> Executed {
    match route {
        Route::Filter(row) => {
            // A filter command checks its own arguments after `NOAUTH`, as a module
            // command does inside Redis (RedisBloom's report an arity of -1): inside
            // `MULTI`, at `EXEC`.
            if !session.authenticated {
                return refused(session, noauth());
            }
            if let Some(reply) = refused_write(shared, &row.spec) {
                return refused(session, reply);
            }
            if session.transaction.is_open() {
                if let Some(queued) = queued(shared, session, &row.spec, args) {
                    return queued;
                }
            }
            if origin == Origin::Client {
                let keyspace = shared.keyspace();
                let write = row.spec.has(Flag::Write);
                // Every key it names: `BF.MERGE` reads its sources too.
                if let Some(lease) = keyspace.blocking_lease(keys_of(&row.spec, args), write) {
                    return Executed::pending(Pending::Leased(lease));
                }
                if long::is_long_filter(keyspace, row, args) {
                    return Executed::pending(Pending::Long(row));
                }
            }
            // The command borrows its key and items from the request's own buffers.
            with_args(
                args,
                |a| &a[..],
                |words| {
                    let parsed = match origin {
                        Origin::Client | Origin::Queue => row.parse(words),
                        Origin::Log => row.parse_logged(words),
                    };
                    match parsed {
                        Err(reply) => Executed::reply(reply),
                        Ok(command) => {
                            let defaults = shared.settings().cached(&mut session.defaults);
                            let (reply, ticket) = shared.keyspace().run_filter(&command, defaults);
                            Executed::logged(reply, ticket)
                        }
                    }
                },
            )
        }
        Route::Generic(row) => {
            if !row.spec.accepts(args.len()) {
                return refused(session, wrong_arity(row.spec.name));
            }
            // Before `NOAUTH`, as Redis 7 checks it.
            if row.protected && !allows_protected(shared, session) {
                return refused(session, protected_refusal(row.spec.name));
            }
            if !session.authenticated && !row.spec.no_auth() {
                return refused(session, noauth());
            }
            if let Some(reply) = refused_write(shared, &row.spec) {
                return refused(session, reply);
            }
            if session.transaction.is_open() {
                if let Some(queued) = queued(shared, session, &row.spec, args) {
                    return queued;
                }
            }
            if origin == Origin::Client {
                if let Some(lease) = generic_blocking_lease(shared, &row.spec, args) {
                    return Executed::pending(Pending::Leased(lease));
                }
            }
            row.run(&mut Call {
                shared,
                session,
                spec: &row.spec,
                args,
            })
        }
    }
}

/// The lease a generic command must wait for before it runs, if any: one on a key it names
/// (by the table's key positions, its subcommand's for a container), or any lease for a
/// write that names no key and so changes every key (`FLUSHALL`).
pub(crate) fn generic_blocking_lease(
    shared: &Shared,
    spec: &CommandSpec,
    args: &[Bytes],
) -> Option<Arc<crate::keyspace::Lease>> {
    let keyspace = shared.keyspace();
    let spec = match args.get(1) {
        Some(sub) if !spec.subcommands.is_empty() => spec.subcommand(sub).unwrap_or(spec),
        _ => spec,
    };
    if spec.first_key <= 0 {
        return spec
            .has(Flag::Write)
            .then(|| keyspace.any_lease())
            .flatten();
    }
    keyspace.blocking_lease(keys_of(spec, args), spec.has(Flag::Write))
}

/// The keys a command names, by its key positions (Redis's `firstkey`, `lastkey`, `step`).
pub(crate) fn keys_of<'a>(spec: &CommandSpec, args: &'a [Bytes]) -> impl Iterator<Item = &'a [u8]> {
    let first = usize::try_from(spec.first_key).unwrap_or(0);
    let last = if spec.last_key < 0 {
        args.len()
            .saturating_sub(spec.last_key.unsigned_abs() as usize)
    } else {
        usize::try_from(spec.last_key).unwrap_or(0)
    };
    let step = usize::try_from(spec.step).unwrap_or(1).max(1);
    let range = if first == 0 {
        0..0
    } else {
        first..last.saturating_add(1).min(args.len())
    };
    args[range].iter().step_by(step).map(|key| &key[..])
}

/// Whether `--enable-debug-command` lets this client run a protected command (`DEBUG`).
fn allows_protected(shared: &Shared, session: &Session) -> bool {
    match shared.config().enable_debug_command {
        DebugCommand::Yes => true,
        DebugCommand::Local => session.local,
        DebugCommand::No => false,
    }
}

/// Redis 7's refusal of a protected command.
fn protected_refusal(name: &str) -> Reply {
    Reply::Error(format!(
        "ERR {} command not allowed. If the enable-debug-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server.",
        name.to_ascii_uppercase()
    ))
}

/// Redis's `MISCONF` error for a write command while the log cannot be written, checked
/// (as Redis does) after arity and authentication and before the command runs, so that a
/// refused command changes nothing. Reads, `PING` and `INFO` go on (Redis refuses `PING`
/// too; see docs/SERVER.md). Costs one atomic load while the log is healthy.
fn refused_write(shared: &Shared, spec: &CommandSpec) -> Option<Reply> {
    let refusal = shared.keyspace().journal()?.refuses_writes()?;
    spec.has(Flag::Write).then_some(Reply::Error(refusal))
}

#[cfg(test)]
mod tests;
