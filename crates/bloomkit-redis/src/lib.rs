//! bloomkit inside Redis and Valkey: RedisBloom's `BF.*` and `CF.*` commands as a module,
//! `libbloomkit_redis.so`.
//!
//! The same command layer as `bloomkit serve` (`bloomkit-commands`), hosted by the engine
//! the operator already runs: Redis owns the keys, so replication, Redis Cluster (slots,
//! `-MOVED`, resharding, failover), ACLs, TLS, `MULTI`/`EXEC`, persistence and every tool
//! that speaks to Redis work as they do for any other key.
//!
//! ```text
//! cargo build --release -p bloomkit-redis
//! redis-server --loadmodule target/release/libbloomkit_redis.so [ERROR_RATE 0.001] [bf-initial-size 1000]...
//! ```
//!
//! # What this crate does, and what it leaves to the command layer
//!
//! The module is thin: it registers the commands, moves a key's value in and out of the
//! command layer, encodes replies, and implements the data type's callbacks. Every command
//! (its arguments, validation order, error strings, replies, the form it replicates) is the
//! command crate's; every parameter (name, default, range) is its [`PARAMETERS`] table's.
//!
//! * [`command`]: the handlers the `BF.*`/`CF.*` commands are registered with, one per row
//!   of [`FILTER_COMMANDS`] (name, flags, key positions): arguments in, the key's value to
//!   the command layer, the value back, the reply out, and the logged form replicated.
//! * [`key`]: a key opened for one command, and what it holds.
//! * [`reply`]: a [`Reply`](bloomkit_commands::Reply) tree onto `RedisModule_ReplyWith*`.
//! * [`types`]: the data types `MBbloom--` and `MBbloomCF` (RedisBloom's names, which
//!   `TYPE` answers), with RDB save and load, AOF rewrite, `MEMORY USAGE`, `COPY`,
//!   `DEBUG DIGEST-VALUE` and free; [`encoding`] is their RDB encoding.
//! * [`aging_type`]: `BKaging--`, the type of `AF.*` keys (the same callbacks, its own
//!   encoding version); [`aging_timer`]: their `PERIOD` rotations, run on the primary as
//!   replicated `AF.ROTATE key AT <time>`.
//! * [`config`]: the `bf-*`/`cf-*` defaults, from the module's arguments (RedisBloom's
//!   `ERROR_RATE`, `INITIAL_SIZE`, `CF_MAX_EXPANSIONS`, or any parameter's name) and
//!   through `CONFIG GET`/`SET`.
//! * [`budget`]: the memory a command may allocate, from `maxmemory` and the machine.
//! * [`alloc`]: the global allocator, the engine's at any alignment.
//! * [`engine`]: what a write asks of the engine after the command layer has run (its
//!   clock, `RedisModule_SignalModifiedKey`, `RedisModule_Replicate`), for [`command`] and
//!   [`aging_timer`].
//!
//! Which uses which: [`command`] uses [`key`], [`reply`], [`types`], [`aging_timer`],
//! [`config`], [`budget`] and [`engine`]; [`aging_timer`] uses [`key`], [`config`] and
//! [`engine`]; [`engine`] uses [`key`] alone; [`config`] uses `log.rs`. The data types are
//! one group that uses each other: [`types`] and [`aging_type`] share the callbacks, [`key`]
//! asks them which type a value is stored under, and loading an aging key with a period
//! hands it to [`aging_timer`], which opens keys through [`key`].
//!
//! # Why `redis-module`
//!
//! Two maintained crates wrap the module API: `redis-module` (Redis's) and `valkey-module`
//! (Valkey's fork of it). Valkey keeps Redis's module API, names included
//! (`RedisModule_OnLoad`, `RedisModule_*` functions), so a module built against Redis's
//! header loads into both engines unchanged. `valkey-module` by default calls Valkey's
//! renamed `ValkeyModule_*` entry points, which Redis 7 lacks; built with its Redis-names
//! feature it is the same bindings under another name. So `redis-module` serves both engines
//! with one build, and its bindings follow Redis's header, where the functions this module
//! needs (data types, module configuration, `RedisModule_Replicate`) come from. Every
//! function the module calls is looked up when the module loads, and one an engine lacks
//! (ACL categories before Redis 7.2) is skipped.
//!
//! # Allocation
//!
//! The global allocator ([`alloc`]) sends every allocation, the filters' bits included,
//! through `RedisModule_Alloc`: `maxmemory`, eviction and `INFO memory` see the filters as
//! they see any other value.
//!
//! [`PARAMETERS`]: bloomkit_commands::PARAMETERS
//! [`FILTER_COMMANDS`]: bloomkit_commands::table::FILTER_COMMANDS

/// The module API function `$name` (`RedisModule_CreateCommand`...), or `None` where the
/// engine lacks it.
macro_rules! api {
    ($name:ident) => {
        // SAFETY: the API's function pointers are written once, by `RedisModule_Init` as the
        // module loads (before any command or callback can run), and only read afterwards,
        // on Redis's threads, which the load happens-before.
        unsafe { redis_module::raw::$name }
    };
}

pub mod aging_timer;
pub mod aging_type;
pub mod alloc;
pub mod budget;
pub mod command;
pub mod config;
pub mod encoding;
pub mod engine;
mod import;
pub mod key;
pub mod log;
pub mod reply;
pub mod types;

/// The module's name, as `MODULE LIST` shows it: RedisBloom's, so that tools looking for a
/// Bloom filter module by name find this one.
pub const MODULE_NAME: &str = "bf";

/// The module's version for `MODULE LIST`: major × 10,000 + minor × 100 + patch, as
/// RedisBloom numbers its own.
pub const MODULE_VERSION: i32 = {
    const fn number(text: &str) -> i32 {
        let bytes = text.as_bytes();
        let mut n = 0;
        let mut i = 0;
        while i < bytes.len() {
            n = n * 10 + (bytes[i] - b'0') as i32;
            i += 1;
        }
        n
    }
    number(env!("CARGO_PKG_VERSION_MAJOR")) * 10_000
        + number(env!("CARGO_PKG_VERSION_MINOR")) * 100
        + number(env!("CARGO_PKG_VERSION_PATCH"))
};

// The entry point and the global allocator. Left out of unit tests, which run without a
// server: there `RedisModule_Alloc` does not exist, and the tests use the system allocator.
#[cfg(not(test))]
use aging_type::AGING_TYPE;
#[cfg(not(test))]
use types::{BLOOM_TYPE, CUCKOO_TYPE};

#[cfg(not(test))]
redis_module::redis_module! {
    name: MODULE_NAME,
    version: MODULE_VERSION,
    allocator: (alloc::ModuleAlloc, alloc::AlignedAlloc(alloc::Engine)),
    data_types: [BLOOM_TYPE, CUCKOO_TYPE, AGING_TYPE],
    init: init,
}

/// Runs once the data types exist: the defaults from the module's arguments, the
/// configuration, the commands, then the module's options.
#[cfg(not(test))]
fn init(ctx: &redis_module::Context, args: &[redis_module::RedisString]) -> redis_module::Status {
    let args: Vec<&[u8]> = args.iter().map(|a| a.as_slice()).collect();
    let defaults = match config::defaults_from_args(&args) {
        Ok(defaults) => defaults,
        Err(why) => {
            log::write(ctx.ctx, "warning", &format!("bloomkit: not loaded: {why}"));
            return redis_module::Status::Err;
        }
    };
    config::install(defaults);
    if let Err(why) = config::register(ctx) {
        log::write(ctx.ctx, "warning", &format!("bloomkit: not loaded: {why}"));
        return redis_module::Status::Err;
    }
    if let Err(why) = command::register(ctx) {
        log::write(ctx.ctx, "warning", &format!("bloomkit: not loaded: {why}"));
        return redis_module::Status::Err;
    }
    if let Err(why) = aging_timer::start(ctx) {
        log::write(ctx.ctx, "warning", &format!("bloomkit: not loaded: {why}"));
        return redis_module::Status::Err;
    }
    types::set_module_options(ctx);
    redis_module::Status::Ok
}
