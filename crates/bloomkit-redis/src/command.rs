//! The handler behind each `BF.*`/`CF.*` command (one per row of the command crate's
//! table, which they are registered from), and the path every command takes.
//!
//! A command runs as the command crate's host loop says (its `lib.rs`): parse (the row's
//! arity, then the command's own checks), find the key's value ([`OpenKey`]), read it or
//! write its slot, replicate what the command logged, reply. Here the keyspace is Redis's: a
//! write runs on the key's own slot ([`Stored`]), or its value is stored as a new key, or the
//! key is deleted.
//!
//! # What is replicated
//!
//! Not the command as the client sent it, but its logged form
//! ([`Outcome::log`](bloomkit_commands::Outcome::log)), with `RedisModule_Replicate`: a key
//! created from the defaults goes to replicas and the append-only file as a `BF.RESERVE` or
//! `CF.RESERVE` naming every parameter, then the items that changed the filter. A replica,
//! or a restart that replays the file, builds the same bits whatever its own defaults.
//! Commands arriving that way (from the master, or the file being loaded) are parsed as
//! logged commands ([`FilterSpec::parse_logged`]) and run without the memory budget: what
//! the master acknowledged is applied.

use std::cell::OnceCell;
use std::collections::HashMap;
use std::ffi::{c_int, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::LazyLock;

use bloomkit::{CuckooFilter, ScalableBloomFilter};
use bloomkit_commands::table::{FilterSpec, NameKey, FILTER_COMMANDS};
use bloomkit_commands::{
    with_args, Access, Args, Ctx, FilterCommand, Protocol, Record, Reply, Value,
};
use redis_module::native_types::RedisType;
use redis_module::{raw, Context, ContextFlags, RedisString};

use crate::budget::ModuleBudget;
use crate::config;
use crate::engine::{now_ms, replicate, signal_modified};
use crate::key::{Held, KeyName, OpenKey};
use crate::reply::send;
use crate::types::{type_of, Stored};

/// Registers every row of [`FILTER_COMMANDS`] with its own handler, its flags
/// ([`CommandSpec::module_flags`](bloomkit_commands::table::CommandSpec::module_flags):
/// `write deny-oom`, `readonly`) and key positions, which cluster routing, ACL key
/// patterns and `COMMAND GETKEYS` use.
///
/// # Errors
///
/// The name of a command the engine refused to register, or a table that has grown past
/// the handlers.
pub fn register(ctx: &Context) -> Result<(), String> {
    let create =
        api!(RedisModule_CreateCommand).ok_or("the engine has no RedisModule_CreateCommand")?;
    if HANDLERS.len() != module_rows().count() {
        return Err(format!(
            "the module has {} command handlers for {} commands: list one per row in HANDLERS",
            HANDLERS.len(),
            module_rows().count()
        ));
    }
    for (row, handler) in module_rows().zip(HANDLERS) {
        let spec = &row.spec;
        let name = CString::new(spec.name).map_err(|e| e.to_string())?;
        let flags = CString::new(spec.module_flags()).map_err(|e| e.to_string())?;
        // SAFETY: the context is the one Redis passed to the module's load; the name and
        // flags are NUL-terminated and live across the call (Redis copies them); the
        // handler has the signature the API declares.
        let status = unsafe {
            create(
                ctx.ctx,
                name.as_ptr(),
                Some(handler),
                flags.as_ptr(),
                spec.first_key as c_int,
                spec.last_key as c_int,
                spec.step as c_int,
            )
        };
        if status != raw::REDISMODULE_OK as c_int {
            return Err(format!("the engine refused to register {}", spec.name));
        }
    }
    Ok(())
}

/// The rows the module registers, in order: every row of the table (`AF.*` keys are stored
/// under their own type, [`AGING_TYPE`](crate::aging_type::AGING_TYPE)).
fn module_rows() -> impl Iterator<Item = &'static FilterSpec> {
    FILTER_COMMANDS.iter()
}

/// What Redis calls for a command.
type Handler =
    extern "C" fn(*mut raw::RedisModuleCtx, *mut *mut raw::RedisModuleString, c_int) -> c_int;

/// A handler for each row named, in order.
macro_rules! handlers {
    ($($row:literal)*) => { [$(handle::<$row> as Handler),*] };
}

/// One handler per row of [`FILTER_COMMANDS`], in order: Redis passes a handler nothing
/// but the arguments, and a handler of its own row need not look the command's name up.
const HANDLERS: [Handler; 36] = handlers![
    0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33
    34 35
];

/// The handler Redis calls for the command of row `ROW`.
extern "C" fn handle<const ROW: usize>(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    let argv: &[*mut raw::RedisModuleString] = match usize::try_from(argc) {
        // SAFETY: Redis passes `argc` valid argument strings at `argv`, alive for the
        // length of the call.
        Ok(n) if n > 0 && !argv.is_null() => unsafe { std::slice::from_raw_parts(argv, n) },
        _ => &[],
    };
    // A bug must not take the server down with it: the client gets an error instead (the
    // key keeps what the command left in its slot; an emptied slot reads as an empty
    // stand-in until the next write).
    let context = Context::new(ctx);
    if catch_unwind(AssertUnwindSafe(|| {
        run(&context, argv, FILTER_COMMANDS.get(ROW))
    }))
    .is_err()
    {
        raw::reply_with_error(
            ctx,
            c"ERR bloomkit: internal error running this command; see the server's log".as_ptr(),
        );
    }
    raw::REDISMODULE_OK as c_int
}

/// Runs one command of `row`: the host loop of the command crate's documentation.
fn run(ctx: &Context, argv: &[*mut raw::RedisModuleString], row: Option<&FilterSpec>) {
    // The command layer borrows its arguments where Redis holds them (alive for the call):
    // nothing is copied, and a short command allocates nothing for them (inside Redis
    // every allocation goes through the engine's accounting allocator).
    // The name is the row's (Redis called its handler for it; a parser reads the name only
    // where RedisBloom searches it for options, which no command's name spells): not asked
    // of the engine, one call fewer.
    let name = argv.as_ptr();
    let view = |a: &*mut raw::RedisModuleString| match row {
        Some(row) if std::ptr::eq(a, name) => row.spec.name.as_bytes(),
        _ => RedisString::string_as_slice(*a),
    };
    with_args(argv, view, |args| run_with(ctx, argv, args, row));
}

fn run_with(
    ctx: &Context,
    argv: &[*mut raw::RedisModuleString],
    args: Args<'_>,
    row: Option<&FilterSpec>,
) {
    // The context's flags cost the engine more than some commands do (it measures its
    // memory for them): asked only when needed, at most once. Most commands need them for
    // nothing: neither their parsing nor their budget depends on who sent them, and their
    // reply is the same for both protocols.
    let flags = OnceCell::new();
    let flags = || flags.get_or_init(|| ctx.get_flags());
    let protocol = || {
        if flags().contains(ContextFlags::FLAGS_RESP3) {
            Protocol::Resp3
        } else {
            Protocol::Resp2
        }
    };
    let Some(row) = row else {
        send(ctx, &Reply::error("ERR unknown command"), &protocol);
        return;
    };
    // Sent by the master or read back from the append-only file.
    let replayed = || flags().intersects(ContextFlags::REPLICATED | ContextFlags::LOADING);
    let command = match row.parse_from_either(args, &replayed) {
        Ok(command) => command,
        Err(reply) => return send(ctx, &reply, &protocol),
    };
    // Every parser needs the key (the row's arity admits no fewer than two arguments).
    let Some(&key_arg) = argv.get(1) else {
        return send(
            ctx,
            &bloomkit_commands::errors::wrong_arity(row.spec.name),
            &protocol,
        );
    };
    // SAFETY: `argv` holds the arguments Redis passed this command, and the name is used
    // only while it runs.
    let key_arg = unsafe { KeyName::of_argument(key_arg) };
    let defaults = config::defaults();
    let budget = ModuleBudget {
        replayed: &replayed,
    };
    let cctx = Ctx {
        defaults: &defaults,
        budget: &budget,
        now_ms: &now_ms,
    };
    match command.access() {
        Access::Read => send(ctx, &read(ctx, key_arg, &command, &cctx), &protocol),
        Access::Write => write(ctx, key_arg, &command, &cctx, args, argv, row, &protocol),
    }
}

/// What a command sees for a key that holds a value of another kind (a string, a list,
/// another module's type): a filter of the other family, which the command layer answers
/// as RedisBloom answers such a key (`BF.EXISTS` 0, `BF.ADD` `WRONGTYPE`...). Built once;
/// tiny.
static FOREIGN: LazyLock<(Value, Value)> = LazyLock::new(|| {
    let cuckoo = CuckooFilter::new(2, 0.5).map(Value::Cuckoo);
    let bloom = ScalableBloomFilter::new(1, 0.5).map(Value::Bloom);
    match (cuckoo, bloom) {
        (Ok(c), Ok(b)) => (c, b),
        // Neither can fail for these parameters; a stand-in answers the same way.
        _ => (Value::stand_in(), Value::stand_in()),
    }
});

/// The foreign value a command of this family sees for a key of another kind.
fn foreign(command: &FilterCommand<'_>) -> &'static Value {
    match command {
        // An aging command answers WRONGTYPE for a key of any other kind.
        FilterCommand::Bloom(_) | FilterCommand::Aging(_) => &FOREIGN.0,
        FilterCommand::Cuckoo(_) => &FOREIGN.1,
    }
}

fn read(ctx: &Context, name: KeyName, command: &FilterCommand<'_>, cctx: &Ctx<'_>) -> Reply {
    let mut key = OpenKey::open(ctx, name, false);
    match key.held() {
        Held::Missing => command.read(None, cctx),
        Held::Ours(slot, _) => command.read(slot.as_ref(), cctx),
        Held::Foreign => command.read(Some(foreign(command)), cctx),
    }
}

/// Runs a write command and sends its reply from where the outcome holds it: moved out to
/// the caller, the reply was read back with wider loads than the stores that had just
/// written it, a stall on forwarding them (0.3% of a pipelined `CF.ADD`'s time inside
/// Redis, by perf's clock samples).
#[allow(clippy::too_many_arguments)]
fn write(
    ctx: &Context,
    name: KeyName,
    command: &FilterCommand<'_>,
    cctx: &Ctx<'_>,
    args: Args<'_>,
    args_strings: &[*mut raw::RedisModuleString],
    row: &FilterSpec,
    protocol: &dyn Fn() -> Protocol,
) {
    let mut key = OpenKey::open(ctx, name, true);
    let argv = args_strings;
    // The command runs on the key's own slot, or on a slot of its own for a missing key or
    // one of another kind; anything but a change in place (the key emptied, a value of the
    // other family under it) is done once the slot is let go. One call for all three, so
    // that the outcome is made where it stays: moved out of a match arm, it was read back
    // with wider loads than the stores that had just written it, a stall on forwarding
    // them (1.1% of a pipelined `CF.ADD`'s time inside Redis, by perf's clock samples).
    let mut own = None;
    let (slot, before) = match key.held() {
        Held::Ours(slot, ty) => (slot, Before::Ours(ty)),
        Held::Missing => (&mut own, Before::Missing),
        Held::Foreign => {
            own = Some(foreign(command).clone());
            (&mut own, Before::Foreign)
        }
    };
    let outcome = if command.sources().is_empty() {
        command.write(slot, cctx)
    } else {
        let mut sources = match open_sources(ctx, command, argv) {
            Ok(sources) => sources,
            Err(reply) => return send(ctx, &reply, protocol),
        };
        let mut values: Vec<Option<&Value>> = Vec::with_capacity(sources.len());
        for source in sources.iter_mut() {
            let value = match source {
                Source::Own => None,
                Source::Repeat(earlier) => values.get(*earlier).copied().flatten(),
                Source::Open(key) => match key.held() {
                    Held::Missing => None,
                    Held::Ours(stored, _) => {
                        let stored: &Stored = stored;
                        stored.as_ref()
                    }
                    Held::Foreign => Some(foreign(command)),
                },
            };
            values.push(value);
        }
        command.write_reading(slot, &values, cctx)
    };
    // An aging key with a period, for the rotation timer.
    let periodic =
        matches!(command, FilterCommand::Aging(_)) && crate::aging_timer::has_period(slot.as_ref());
    let mut delete = false;
    let mut create = None;
    match (before, slot) {
        (Before::Ours(ty), Some(value)) if std::ptr::eq(type_of(value), ty) => {}
        // A value of the other family under the same key: stored as a new key.
        (Before::Ours(_), slot @ Some(_)) => (delete, create) = (true, slot.take()),
        (Before::Ours(_), None) => delete = true,
        (Before::Missing, slot) => create = slot.take(),
        // A key of another kind is never changed: every command refuses it.
        (Before::Foreign, _) => {}
    }
    if delete {
        key.delete();
    }
    if let Some(value) = create {
        key.set(value);
    }
    if periodic {
        crate::aging_timer::track(ctx, RedisString::string_as_slice(name.as_ptr()));
    }
    if !outcome.log.is_empty() {
        signal_modified(ctx, name);
        if replays_as_sent(&outcome.log, args, row) {
            // Redis replicates its own copy of the arguments: no strings to build.
            ctx.replicate_verbatim();
        } else {
            for entry in &outcome.log {
                replicate(ctx, entry);
            }
        }
    }
    send(ctx, &outcome.reply, protocol);
}

/// A key a command reads besides its own, opened at most once.
enum Source {
    /// The command's own key, which it reads from its slot.
    Own,
    /// The same key as the source at this position: not opened twice, so that no two
    /// references to one value are ever made.
    Repeat(usize),
    /// Opened to read.
    Open(OpenKey),
}

/// Opens, to read, the keys a command reads besides its own ([`FilterCommand::sources`]):
/// its last arguments, as the table's key positions say (every argument from the first is
/// a key).
fn open_sources(
    ctx: &Context,
    command: &FilterCommand<'_>,
    argv: &[*mut raw::RedisModuleString],
) -> Result<Vec<Source>, Reply> {
    let sources = command.sources();
    let misplaced = || Reply::error("ERR bloomkit: the sources are not the last arguments");
    let strings = argv
        .get(argv.len().saturating_sub(sources.len())..)
        .ok_or_else(misplaced)?;
    let mut keys = Vec::with_capacity(sources.len());
    // Where each key was first named: a map, as a client may name many.
    let mut first_at: HashMap<&[u8], usize> = HashMap::with_capacity(sources.len());
    for (i, (&source, &string)) in sources.iter().zip(strings).enumerate() {
        if RedisString::string_as_slice(string) != source {
            return Err(misplaced());
        }
        let key = if source == command.key() {
            Source::Own
        } else if let Some(&earlier) = first_at.get(source) {
            Source::Repeat(earlier)
        } else {
            first_at.insert(source, i);
            // SAFETY: `string` is one of the running command's arguments, used only while
            // it runs.
            let name = unsafe { KeyName::of_argument(string) };
            Source::Open(OpenKey::open(ctx, name, false))
        };
        keys.push(key);
    }
    Ok(keys)
}

/// What a key held before a write command, once its slot is lent to the command: [`Held`]
/// without the slot.
enum Before {
    /// One of this module's values, of this type.
    Ours(&'static RedisType),
    /// No such key.
    Missing,
    /// A key of another kind.
    Foreign,
}

/// Whether the command as the client sent it (`args`, of `row`) replays exactly as its
/// logged form `log`, so that it can be replicated verbatim: the log is that very command
/// (a `CF.ADD`, a `BF.MADD` whose items were all new), or one `BF.MADD` of the same key and
/// item as a `BF.ADD` (which then found its key, or a creation would have been logged first,
/// and adds the item as `BF.MADD` does; the replies differ, which a replica does not send),
/// and likewise one `AF.MADD` for an `AF.ADD`.
/// The name sent is the row's (Redis called this row's handler for it); a record's name is
/// always a command's own spelling, in capitals.
fn replays_as_sent(log: &[Record<'_>], args: Args<'_>, row: &FilterSpec) -> bool {
    const BF_ADD: NameKey = NameKey::of_row("bf.add");
    const AF_ADD: NameKey = NameKey::of_row("af.add");
    let ([entry], Some((_, sent_args))) = (log, args.split_first()) else {
        return false;
    };
    let name = entry.name();
    let single_add = sent_args.len() == 2
        && ((row.spec.key == BF_ADD && name == b"BF.MADD")
            || (row.spec.key == AF_ADD && name == b"AF.MADD"));
    let same_name = is_row_name(name, row.spec.name) || single_add;
    // The common record: the very key and items of the arguments (the same slices).
    let own = match entry {
        Record::Items { key, items, .. } => {
            sent_args.first().is_some_and(|k| std::ptr::eq(*k, *key))
                && std::ptr::eq(*items, &sent_args[1..])
        }
        Record::Words(_) => false,
    };
    same_name && (own || same_words(entry.args(), sent_args))
}

/// Whether `name`, in any case, is a row's lower-case `row_name`. Command names are ASCII
/// letters, digits and dots, where case is the 0x20 bit alone (set in digits and the dot):
/// one OR a byte, where `eq_ignore_ascii_case` cost a `CF.ADD` 78 instructions.
fn is_row_name(name: &[u8], row_name: &str) -> bool {
    name.len() == row_name.len()
        && name
            .iter()
            .zip(row_name.bytes())
            .all(|(a, b)| a | 0x20 == b)
}

/// Whether two lists of words are equal. A logged record's key and items are the
/// arguments' own slices, so most words compare by where they lie, without reading their
/// bytes (a 100-item `BF.MADD` compared its items byte by byte: 3,000 instructions).
fn same_words<'a>(a: impl ExactSizeIterator<Item = &'a [u8]>, b: Args<'_>) -> bool {
    a.len() == b.len()
        && a.zip(b)
            .all(|(x, y)| (x.as_ptr() == y.as_ptr() && x.len() == y.len()) || x == *y)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_names_its_row_in_any_case() {
        for row in FILTER_COMMANDS.iter() {
            let name = row.spec.name;
            assert!(
                is_row_name(name.to_ascii_uppercase().as_bytes(), name),
                "{name}"
            );
            assert!(is_row_name(name.as_bytes(), name), "{name}");
            assert!(!is_row_name(&name.as_bytes()[1..], name), "{name}");
            for other in FILTER_COMMANDS.iter().filter(|o| o.spec.name != name) {
                assert!(!is_row_name(
                    other.spec.name.to_ascii_uppercase().as_bytes(),
                    name
                ));
            }
        }
    }

    #[test]
    fn every_command_has_its_handler() {
        assert_eq!(HANDLERS.len(), module_rows().count());
        // A handler finds its row by index in the whole table: the module's rows must be
        // its first ones.
        assert!(module_rows()
            .map(|row| row.spec.name)
            .eq(FILTER_COMMANDS[..HANDLERS.len()]
                .iter()
                .map(|row| row.spec.name)));
        // Each row's handler is its own.
        for (i, a) in HANDLERS.iter().enumerate() {
            for b in &HANDLERS[i + 1..] {
                assert!(!std::ptr::fn_addr_eq(*a, *b));
            }
        }
    }
}
