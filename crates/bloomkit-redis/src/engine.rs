//! What a write asks of the engine once the command layer has run: its clock, telling it a
//! key changed, and replicating what the command logged. Used by the command handlers
//! ([`command`](crate::command)) and by the aging keys' timer
//! ([`aging_timer`](crate::aging_timer)), which runs `AF.ROTATE` as a command would.

use std::ffi::CString;

use bloomkit_commands::Record;
use redis_module::{raw, Context};

use crate::key::KeyName;

/// The engine's clock, in milliseconds since the Unix epoch: `RedisModule_Milliseconds`
/// (the system's clock on an engine without it).
pub fn now_ms() -> u64 {
    match api!(RedisModule_Milliseconds) {
        // SAFETY: the function takes nothing and only reads the engine's clock.
        Some(ms) => u64::try_from(unsafe { ms() }).unwrap_or(0),
        None => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
    }
}

/// Tells Redis the key changed (the module handles this itself, see
/// [`set_module_options`](crate::types::set_module_options)): `WATCH` and client-side
/// caching then see it.
pub(crate) fn signal_modified(ctx: &Context, name: KeyName) {
    if let Some(signal) = api!(RedisModule_SignalModifiedKey) {
        // SAFETY: `ctx` is the context of the running command and `name` one of its
        // arguments, alive for the call.
        unsafe { signal(ctx.ctx, name.as_ptr()) };
    }
}

/// Replicates one logged command to the replicas and the append-only file. Arguments are
/// binary-safe (an item may hold any bytes, NUL included).
pub(crate) fn replicate(ctx: &Context, entry: &Record<'_>) {
    let (Some(create), Some(free), Some(replicate)) = (
        api!(RedisModule_CreateString),
        api!(RedisModule_FreeString),
        api!(RedisModule_Replicate),
    ) else {
        return;
    };
    let Ok(command_name) = CString::new(entry.name()) else {
        return;
    };
    let strings: Vec<*mut raw::RedisModuleString> = entry
        .args()
        // SAFETY: each buffer is valid for its length during the call; a string created
        // without a context is the module's to free, below.
        .map(|a| unsafe { create(std::ptr::null_mut(), a.as_ptr().cast(), a.len()) })
        .collect();
    // SAFETY: `ctx` is the running command's context; the format "v" takes an array of
    // module strings and its length, which `strings` is; Redis takes its own references
    // to the strings it keeps.
    unsafe {
        replicate(
            ctx.ctx,
            command_name.as_ptr(),
            c"v".as_ptr(),
            strings.as_ptr(),
            strings.len(),
        );
    }
    for s in strings {
        // SAFETY: created above without a context, freed once.
        unsafe { free(std::ptr::null_mut(), s) };
    }
}
