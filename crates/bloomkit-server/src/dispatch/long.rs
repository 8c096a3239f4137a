//! Filter commands that may run for long, run with their key leased
//! ([`crate::keyspace::lease`]): off the worker threads, holding no lock that another key
//! needs, so that they park only the clients of their own key.
//!
//! Which are long: a request of many arguments or bytes ([`offload::is_long`]), the
//! commands whose cost is their filter's size rather than their arguments'
//! ([`LONG_BY_NATURE`]: `CF.COMPACT`, and the `LOADCHUNK`s, whose last chunk decodes a whole
//! dump), and a cuckoo insert whose items times its filter's `MAXITERATIONS` could mean that
//! many kicks ([`LONG_KICKS`]: an item into a full filter tries every one of them).
//!
//! [`offload::is_long`]: crate::offload::is_long

use std::sync::Arc;

use bloomkit_commands::table::{FilterSpec, Flag};
use bloomkit_commands::{with_args, Access, Ctx, Value};
use bytes::Bytes;

use crate::cmd::Executed;
use crate::keyspace::{Keyspace, LeaseWait};
use crate::session::Session;
use crate::shared::Shared;

/// Filter commands that are long whatever their arguments.
pub const LONG_BY_NATURE: &[&str] = &["cf.compact", "bf.loadchunk", "cf.loadchunk"];

/// Cuckoo inserts whose items times the filter's `MAXITERATIONS` reach this are long: as
/// many kicks take about a millisecond.
pub const LONG_KICKS: u64 = 1 << 17;

/// The cuckoo filter commands that insert items.
const CUCKOO_INSERTS: &[&str] = &["cf.add", "cf.addnx", "cf.insert", "cf.insertnx"];

/// Whether `row`'s request `args` is run as a long command.
pub fn is_long_filter(keyspace: &Keyspace, row: &FilterSpec, args: &[Bytes]) -> bool {
    let name = row.spec.name;
    if crate::offload::is_long(args) || LONG_BY_NATURE.contains(&name) {
        return true;
    }
    if !CUCKOO_INSERTS.contains(&name) {
        return false;
    }
    let Some(key) = args.get(1) else {
        return false;
    };
    let items = args.len().saturating_sub(2) as u64;
    let kicks = keyspace.peek(key, |value| match value {
        Some(Value::Cuckoo(filter)) => u64::from(filter.max_kicks()),
        _ => 0,
    });
    items.saturating_mul(kicks) >= LONG_KICKS
}

/// Runs `row`'s command `args` with its key leased: a read lease for a read, which shares
/// the value; a write lease for a write, which takes it out of the map until the command
/// is done. Blocks its thread while it waits for another lease on the key, or for a
/// snapshot's cut: call it off the worker threads ([`crate::offload::run`]).
pub(super) fn run(
    shared: &Arc<Shared>,
    session: &mut Session,
    args: &[Bytes],
    row: &'static FilterSpec,
) -> Executed {
    let keyspace = shared.keyspace();
    let Some(key) = args.get(1) else {
        // Short of a key, the command's own parser answers the arity error.
        return with_args(
            args,
            |a| &a[..],
            |words| match row.parse(words) {
                Err(reply) => Executed::reply(reply),
                Ok(_) => Executed::reply(bloomkit_commands::errors::wrong_arity(row.spec.name)),
            },
        );
    };
    let defaults = shared.settings().cached(&mut session.defaults).clone();
    with_args(
        args,
        |a| &a[..],
        |words| {
            // Parsed first: a malformed request never holds its key.
            let command = match row.parse(words) {
                Err(reply) => return Executed::reply(reply),
                Ok(command) => command,
            };
            if command.access() == Access::Read || !row.spec.has(Flag::Write) {
                let hold = lease(keyspace, |ks| ks.take_read(key));
                let ctx = Ctx {
                    defaults: &defaults,
                    budget: keyspace,
                    now_ms: &crate::keyspace::now_ms,
                };
                let reply = command.read(hold.value.as_deref(), &ctx);
                keyspace.finish_read(hold);
                return Executed::reply(reply);
            }
            let mut hold = lease(keyspace, |ks| ks.take_write(key));
            let (outcome, _) = keyspace.write_evicting(&command, &defaults, &mut hold.slot, || {
                keyspace.gate().enter(session.id)
            });
            // Logged inside the gate, as every write is: never inside an `EXEC`'s records.
            let _entered = keyspace.gate().enter(session.id);
            let ticket = hold.finish(&outcome.log);
            Executed::logged(outcome.reply, ticket)
        },
    )
}

/// Takes a lease with `take`, holding the gate exclusively for the moment it takes it (so
/// that no command is between checking the key and using it), and waiting, with the thread
/// blocked, for whatever holds the key first.
fn lease<'k, H>(keyspace: &'k Keyspace, take: impl Fn(&'k Keyspace) -> Result<H, LeaseWait>) -> H {
    loop {
        let wait = {
            let _alone = keyspace.gate().exclusive();
            match take(keyspace) {
                Ok(hold) => return hold,
                Err(wait) => wait,
            }
        };
        let runtime = tokio::runtime::Handle::try_current();
        match (wait, runtime) {
            (LeaseWait::Leased(lease), Ok(runtime)) => runtime.block_on(lease.released()),
            (LeaseWait::Cut, Ok(runtime)) => runtime.block_on(keyspace.cut_over()),
            // Outside a runtime nothing else runs to end a lease; a yield is enough.
            (_, Err(_)) => std::thread::yield_now(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_command_long_by_nature_is_a_filter_command() {
        for name in LONG_BY_NATURE.iter().chain(CUCKOO_INSERTS) {
            assert!(
                bloomkit_commands::table::FILTER_COMMANDS
                    .iter()
                    .any(|row| row.spec.name == *name),
                "{name}"
            );
        }
    }
}
