//! `PERIOD` rotations inside Redis: a timer on the primary runs each rotation that falls due
//! as the command layer's `AF.ROTATE key AT <time>` on the key's value, and replicates that
//! command (`RedisModule_Replicate`), so replicas and the append-only file get it as they
//! get a client's write. (Through `RedisModule_Call` the handler's own replication is lost
//! on Redis 7.0: a replica never saw the rotation.) A replica never
//! rotates by itself: it applies the primary's `AF.ROTATE`s, whatever its clock says, and
//! its timer starts rotating only once it is promoted.
//!
//! The timer visits the aging keys with a period that the module has seen ([`track`]):
//! created or restored by an `AF.*` command, loaded from an RDB file or a `RESTORE`
//! payload, or arriving under a new name (`RENAME`, `COPY`, `MOVE`, `RESTORE`, through
//! keyspace events). A name the timer finds without such a key is forgotten. Every
//! [`TICK_MS`] it runs the rotations due by the engine's clock
//! ([`AgingKey::due_rotation`](bloomkit_commands::aging::AgingKey::due_rotation): on the
//! key's fixed schedule, and for a key more periods overdue than it has generations, only the
//! last `generations` of them).

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::Mutex;

use bloomkit_commands::aging::rotate_command;
use bloomkit_commands::{with_args, Ctx, FilterCommand, Unlimited, Value};
use redis_module::{raw, Context, RedisString};

use crate::key::{Held, KeyName, OpenKey};

/// How often the timer looks for due rotations, in milliseconds: a rotation runs at most
/// this late (on an idle server).
pub const TICK_MS: i64 = 100;

/// The keys, by database, of every aging key with a period the module has seen. Touched
/// only on the engine's main thread; a mutex because statics must be `Sync`.
static PERIODIC: Mutex<BTreeMap<c_int, BTreeSet<Vec<u8>>>> = Mutex::new(BTreeMap::new());

fn periodic() -> std::sync::MutexGuard<'static, BTreeMap<c_int, BTreeSet<Vec<u8>>>> {
    PERIODIC
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Records `name` in database `db`; no allocation when it is already recorded (every
/// `AF.ADD` of a key with a period asks).
fn insert(db: c_int, name: &[u8]) {
    let mut keys = periodic();
    let names = keys.entry(db).or_default();
    if !names.contains(name) {
        names.insert(name.to_vec());
    }
}

/// Whether `value` is an aging key the timer must visit.
pub fn has_period(value: Option<&Value>) -> bool {
    matches!(value, Some(Value::Aging(k)) if k.period_secs() > 0)
}

/// Records `name`, an aging key with a period in the context's selected database, for the
/// timer.
pub fn track(ctx: &Context, name: &[u8]) {
    if let Some(db_of) = api!(RedisModule_GetSelectedDb) {
        // SAFETY: the context is the running command's or callback's.
        let db = unsafe { db_of(ctx.ctx) };
        insert(db, name);
    }
}

/// Records a key loaded from an RDB file or a `RESTORE` payload, named by the load.
///
/// # Safety
///
/// `rdb` must be the I/O context of a load that is running.
pub unsafe fn track_loaded(rdb: *mut raw::RedisModuleIO, value: &Value) {
    if !has_period(Some(value)) {
        return;
    }
    let (Some(name_of), Some(db_of)) = (
        api!(RedisModule_GetKeyNameFromIO),
        api!(RedisModule_GetDbIdFromIO),
    ) else {
        return;
    };
    // SAFETY: the caller's promise.
    let (name, db) = unsafe { (name_of(rdb), db_of(rdb)) };
    if name.is_null() {
        return;
    }
    insert(db, RedisString::string_as_slice(name));
}

/// Starts the timer and subscribes to the keyspace events that bring a key under a new
/// name.
///
/// # Errors
///
/// What the engine lacks or refuses.
pub fn start(ctx: &Context) -> Result<(), String> {
    let subscribe = api!(RedisModule_SubscribeToKeyspaceEvents)
        .ok_or("the engine has no RedisModule_SubscribeToKeyspaceEvents")?;
    // SAFETY: the context is the one Redis passed to the module's load; the callback has
    // the signature the API declares.
    let status = unsafe {
        subscribe(
            ctx.ctx,
            raw::REDISMODULE_NOTIFY_GENERIC,
            Some(on_generic_event),
        )
    };
    if status != raw::REDISMODULE_OK as c_int {
        return Err("the engine refused the keyspace events subscription".into());
    }
    arm(ctx.ctx)
}

fn arm(ctx: *mut raw::RedisModuleCtx) -> Result<(), String> {
    let create =
        api!(RedisModule_CreateTimer).ok_or("the engine has no RedisModule_CreateTimer")?;
    // SAFETY: `ctx` is a context Redis passed; the callback has the declared signature
    // and uses no data.
    unsafe { create(ctx, TICK_MS, Some(tick), std::ptr::null_mut()) };
    Ok(())
}

/// A generic keyspace event: a key arriving under a new name is tracked.
unsafe extern "C" fn on_generic_event(
    ctx: *mut raw::RedisModuleCtx,
    _type: c_int,
    event: *const c_char,
    key: *mut raw::RedisModuleString,
) -> c_int {
    if event.is_null() || key.is_null() {
        return raw::REDISMODULE_OK as c_int;
    }
    // SAFETY: Redis passes the event's NUL-terminated name.
    let event = unsafe { CStr::from_ptr(event) }.to_bytes();
    if matches!(event, b"rename_to" | b"copy_to" | b"move_to" | b"restore") {
        let context = Context::new(ctx);
        // SAFETY: the key's name is the event's, alive for the call.
        let mut open =
            OpenKey::open_untouched(&context, unsafe { KeyName::of_argument(key) }, false);
        if let Held::Ours(stored, _) = open.held() {
            if has_period(stored.as_ref()) {
                track(&context, RedisString::string_as_slice(key));
            }
        }
    }
    raw::REDISMODULE_OK as c_int
}

/// The timer: re-armed first, then, on a primary that is not loading, every due rotation.
unsafe extern "C" fn tick(ctx: *mut raw::RedisModuleCtx, _data: *mut c_void) {
    let _ = arm(ctx);
    let Some(flags_of) = api!(RedisModule_GetContextFlags) else {
        return;
    };
    // SAFETY: the timer's context.
    let flags = unsafe { flags_of(ctx) } as u32;
    if flags & raw::REDISMODULE_CTX_FLAGS_MASTER == 0
        || flags & raw::REDISMODULE_CTX_FLAGS_LOADING != 0
    {
        return;
    }
    let context = Context::new(ctx);
    let keys: Vec<(c_int, Vec<u8>)> = periodic()
        .iter()
        .flat_map(|(db, names)| names.iter().map(|name| (*db, name.clone())))
        .collect();
    for (db, name) in keys {
        if !rotate_due(&context, db, &name) {
            if let Some(names) = periodic().get_mut(&db) {
                names.remove(&name);
            }
        }
    }
}

/// Runs the rotations due on `name` in `db`; false if it is no aging key with a period.
fn rotate_due(ctx: &Context, db: c_int, name: &[u8]) -> bool {
    let (Some(select), Some(create), Some(free)) = (
        api!(RedisModule_SelectDb),
        api!(RedisModule_CreateString),
        api!(RedisModule_FreeString),
    ) else {
        return true;
    };
    // SAFETY: the timer's context; a database index the engine gave.
    if unsafe { select(ctx.ctx, db) } != raw::REDISMODULE_OK as c_int {
        return false;
    }
    // SAFETY: the buffer is valid for its length; the string is freed below.
    let key = unsafe { create(ctx.ctx, name.as_ptr().cast(), name.len()) };
    let mut alive = true;
    // A key more periods behind than it has generations runs that many rotations at most;
    // the bound stops a loop whatever happens.
    for _ in 0..=64 {
        let due = {
            // SAFETY: `key` was created above and lives until freed below.
            let mut open =
                OpenKey::open_untouched(ctx, unsafe { KeyName::of_argument(key) }, false);
            match open.held() {
                Held::Ours(stored, _) if has_period(stored.as_ref()) => match stored.as_ref() {
                    Some(Value::Aging(k)) => k.due_rotation(crate::engine::now_ms()),
                    _ => None,
                },
                _ => {
                    alive = false;
                    None
                }
            }
        };
        let Some(at) = due else { break };
        // SAFETY: as above.
        if !rotate(ctx, unsafe { KeyName::of_argument(key) }, name, at) {
            break;
        }
    }
    // SAFETY: created above with this context, freed once.
    unsafe { free(ctx.ctx, key) };
    alive
}

/// Runs `AF.ROTATE name AT at` on the key and replicates it; false if it did not run.
fn rotate(ctx: &Context, key: KeyName, name: &[u8], at: u64) -> bool {
    let words = rotate_command(name, at);
    let defaults = crate::config::defaults();
    let cctx = Ctx {
        defaults: &defaults,
        budget: &Unlimited,
        now_ms: &crate::engine::now_ms,
    };
    with_args(
        &words,
        |w| &w[..],
        |args| {
            let Some(Ok(command)) = FilterCommand::parse_logged(args) else {
                return false;
            };
            let mut open = OpenKey::open_untouched(ctx, key, true);
            let Held::Ours(slot, _) = open.held() else {
                return false;
            };
            let outcome = command.write(slot, &cctx);
            drop(open);
            if outcome.reply.is_error() {
                return false;
            }
            crate::engine::signal_modified(ctx, key);
            for entry in &outcome.log {
                crate::engine::replicate(ctx, entry);
            }
            true
        },
    )
}
