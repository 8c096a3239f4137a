//! The `bf-*`/`cf-*` defaults: set by the module's arguments when it loads, then read and
//! changed with `CONFIG GET`/`CONFIG SET`.
//!
//! # Module arguments
//!
//! `--loadmodule libbloomkit_redis.so NAME VALUE ...`, pairs in any case, where NAME is a
//! parameter of the command crate's table (`bf-error-rate`, `cf-max-expansions`...) or one of
//! RedisBloom's load-time names for them (`ERROR_RATE`, `INITIAL_SIZE`, `CF_MAX_EXPANSIONS`).
//! Each value is checked against the parameter's range; a bad one keeps the module from
//! loading, with a log line naming it.
//!
//! # `CONFIG GET`/`SET`
//!
//! Every parameter is a module configuration (Redis 7.0 and later, Valkey): its name is the
//! parameter's, unprefixed where the engine allows it (Redis 8, as RedisBloom's), else
//! prefixed with the module's name as Redis requires (`bf.bf-error-rate` on Redis 7 and
//! Valkey). A value set in the server's configuration file under that name overrides the
//! module's argument. A change applies to keys created afterwards; existing filters keep
//! the parameters they were created with, and replicas get every creation with its
//! parameters spelled out, whatever their own defaults.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::LazyLock;

use bloomkit::LayerLayout;
use bloomkit_commands::params::parameter;
use bloomkit_commands::{Defaults, Parameter, PARAMETERS};

/// RedisBloom's load-time argument names, and the parameter each sets.
const LEGACY_NAMES: &[(&str, &str)] = &[
    ("ERROR_RATE", "bf-error-rate"),
    ("INITIAL_SIZE", "bf-initial-size"),
    ("CF_MAX_EXPANSIONS", "cf-max-expansions"),
];

/// The defaults in force: what the module's arguments set, then `CONFIG SET`. Read by
/// every command.
static DEFAULTS: LazyLock<SharedDefaults> =
    LazyLock::new(|| SharedDefaults::new(&Defaults::default()));

/// [`Defaults`] with each field in an atomic of its own, read with plain loads. A lock
/// cost every command two atomic read-modify-writes (0.7% of a pipelined `CF.ADD`'s time
/// inside Redis, by perf's clock samples). Redis runs commands and `CONFIG SET` on one
/// thread, so no command sees a change half made; and each field alone is always one a
/// parameter allows.
struct SharedDefaults {
    bf_error_rate: AtomicU64,
    bf_initial_size: AtomicU64,
    bf_expansion_factor: AtomicU32,
    cf_bucket_size: AtomicU32,
    cf_initial_size: AtomicU64,
    cf_max_iterations: AtomicU32,
    cf_expansion_factor: AtomicU32,
    cf_max_expansions: AtomicU32,
    /// `bf-layout` is `classic` (else `blocked`, its one other choice; a test ties the two
    /// to the parameter's choices).
    bf_layout_classic: AtomicBool,
    af_error_rate: AtomicU64,
    af_capacity: AtomicU64,
    af_generations: AtomicU32,
    af_period: AtomicU64,
}

impl SharedDefaults {
    fn new(defaults: &Defaults) -> Self {
        let shared = SharedDefaults {
            bf_error_rate: AtomicU64::new(0),
            bf_initial_size: AtomicU64::new(0),
            bf_expansion_factor: AtomicU32::new(0),
            cf_bucket_size: AtomicU32::new(0),
            cf_initial_size: AtomicU64::new(0),
            cf_max_iterations: AtomicU32::new(0),
            cf_expansion_factor: AtomicU32::new(0),
            cf_max_expansions: AtomicU32::new(0),
            bf_layout_classic: AtomicBool::new(false),
            af_error_rate: AtomicU64::new(0),
            af_capacity: AtomicU64::new(0),
            af_generations: AtomicU32::new(0),
            af_period: AtomicU64::new(0),
        };
        shared.store(defaults);
        shared
    }

    /// The defaults held. (A struct literal: a field added to [`Defaults`] fails to
    /// compile here until it has its atomic.)
    fn load(&self) -> Defaults {
        Defaults {
            bf_error_rate: f64::from_bits(self.bf_error_rate.load(Relaxed)),
            bf_initial_size: self.bf_initial_size.load(Relaxed),
            bf_expansion_factor: self.bf_expansion_factor.load(Relaxed),
            cf_bucket_size: self.cf_bucket_size.load(Relaxed),
            cf_initial_size: self.cf_initial_size.load(Relaxed),
            cf_max_iterations: self.cf_max_iterations.load(Relaxed),
            cf_expansion_factor: self.cf_expansion_factor.load(Relaxed),
            cf_max_expansions: self.cf_max_expansions.load(Relaxed),
            bf_layout: if self.bf_layout_classic.load(Relaxed) {
                LayerLayout::Classic
            } else {
                LayerLayout::Blocked
            },
            af_error_rate: f64::from_bits(self.af_error_rate.load(Relaxed)),
            af_capacity: self.af_capacity.load(Relaxed),
            af_generations: self.af_generations.load(Relaxed),
            af_period: self.af_period.load(Relaxed),
        }
    }

    fn store(&self, d: &Defaults) {
        self.bf_error_rate.store(d.bf_error_rate.to_bits(), Relaxed);
        self.bf_initial_size.store(d.bf_initial_size, Relaxed);
        self.bf_expansion_factor
            .store(d.bf_expansion_factor, Relaxed);
        self.cf_bucket_size.store(d.cf_bucket_size, Relaxed);
        self.cf_initial_size.store(d.cf_initial_size, Relaxed);
        self.cf_max_iterations.store(d.cf_max_iterations, Relaxed);
        self.cf_expansion_factor
            .store(d.cf_expansion_factor, Relaxed);
        self.cf_max_expansions.store(d.cf_max_expansions, Relaxed);
        self.bf_layout_classic
            .store(d.bf_layout == LayerLayout::Classic, Relaxed);
        self.af_error_rate.store(d.af_error_rate.to_bits(), Relaxed);
        self.af_capacity.store(d.af_capacity, Relaxed);
        self.af_generations.store(d.af_generations, Relaxed);
        self.af_period.store(d.af_period, Relaxed);
    }
}

/// The defaults in force, for one command.
pub fn defaults() -> Defaults {
    DEFAULTS.load()
}

/// Makes `defaults` the ones in force.
pub fn install(defaults: Defaults) {
    DEFAULTS.store(&defaults);
}

/// Changes the defaults in force with `change`, and returns what it returns.
pub fn update<R>(change: impl FnOnce(&mut Defaults) -> R) -> R {
    let mut defaults = defaults();
    let result = change(&mut defaults);
    install(defaults);
    result
}

/// The parameter a module argument names: a parameter's own name or RedisBloom's
/// load-time name for it, in any case.
pub fn argument_parameter(name: &[u8]) -> Option<&'static Parameter> {
    parameter(name).or_else(|| {
        LEGACY_NAMES
            .iter()
            .find(|(legacy, _)| legacy.as_bytes().eq_ignore_ascii_case(name))
            .and_then(|(_, name)| parameter(name.as_bytes()))
    })
}

/// The defaults the module's arguments set, over the table's.
///
/// # Errors
///
/// A message for the log: an odd number of arguments, an unknown name (listing the names
/// accepted), or a value outside its parameter's range.
pub fn defaults_from_args(args: &[&[u8]]) -> Result<Defaults, String> {
    let mut defaults = Defaults::default();
    if !args.len().is_multiple_of(2) {
        return Err(format!(
            "the module's arguments are NAME VALUE pairs, and {} arguments were given",
            args.len()
        ));
    }
    for pair in args.chunks_exact(2) {
        let (name, value) = (pair[0], pair[1]);
        let shown = String::from_utf8_lossy(name);
        let param = argument_parameter(name).ok_or_else(|| {
            let names: Vec<&str> = PARAMETERS
                .iter()
                .map(|p| p.name)
                .chain(LEGACY_NAMES.iter().map(|(legacy, _)| *legacy))
                .collect();
            format!(
                "unknown module argument '{shown}': expected one of {}",
                names.join(", ")
            )
        })?;
        param.set(&mut defaults, value).map_err(|why| {
            format!(
                "module argument {shown} {}: {why} (the parameter {})",
                String::from_utf8_lossy(value),
                param.name
            )
        })?;
    }
    Ok(defaults)
}

#[cfg(not(test))]
pub use registration::register;

/// The module configurations, one per parameter: what only a running server can do.
#[cfg(not(test))]
mod registration {
    use std::ffi::{c_char, c_int, c_void, CString};
    use std::sync::atomic::{AtomicPtr, Ordering};

    use bloomkit_commands::PARAMETERS;
    use redis_module::{raw, Context};

    use super::{defaults, update};

    /// The text each configuration's `get` last returned: Redis reads it and does not free
    /// it, so the module keeps it until the next `get` of the same one.
    static LAST_GET: [AtomicPtr<raw::RedisModuleString>; SLOTS] =
        [const { AtomicPtr::new(std::ptr::null_mut()) }; SLOTS];

    /// Room for every parameter's last text (checked when the module registers them).
    const SLOTS: usize = 16;

    /// Registers every parameter as a string configuration (a float and integers alike, as
    /// RedisBloom does), unprefixed where the engine allows it, then loads the values the
    /// server's configuration file gives them. On an engine without module configuration
    /// (before Redis 7.0) only the module's arguments set the defaults.
    pub fn register(ctx: &Context) -> Result<(), String> {
        if PARAMETERS.len() > SLOTS {
            return Err(format!("{} parameters, room for {SLOTS}", PARAMETERS.len()));
        }
        let (Some(register), Some(load)) = (
            api!(RedisModule_RegisterStringConfig),
            api!(RedisModule_LoadConfigs),
        ) else {
            crate::log::write(ctx.ctx, "notice", "bloomkit: this engine has no module configuration; CONFIG GET/SET do not reach the bf-*/cf-* defaults");
            return Ok(());
        };
        // Redis added unprefixed names in 8.0 (and Redis 7 logs a warning for each name
        // it refuses); an engine reporting 8.0 or later is asked, and one that refuses
        // gets the prefixed name.
        let unprefixed = api!(RedisModule_GetServerVersion)
            // SAFETY: takes nothing, returns a number.
            .is_some_and(|version| unsafe { version() } >= 0x08_00_00);
        for (index, param) in PARAMETERS.iter().enumerate() {
            let name = CString::new(param.name).map_err(|e| e.to_string())?;
            let default =
                CString::new(param.get(&defaults()).to_string()).map_err(|e| e.to_string())?;
            let register_with = |flags: u32| {
                // SAFETY: the context is the one Redis passed to the module's load; the
                // strings live across the call (Redis copies them); the callbacks have
                // the signatures the API declares; the private data is an index, never
                // dereferenced.
                unsafe {
                    register(
                        ctx.ctx,
                        name.as_ptr(),
                        default.as_ptr(),
                        flags,
                        Some(get),
                        Some(set),
                        None,
                        index as *mut c_void,
                    )
                }
            };
            let ok = raw::REDISMODULE_OK as c_int;
            let unprefixed = unprefixed && register_with(raw::REDISMODULE_CONFIG_UNPREFIXED) == ok;
            if !unprefixed && register_with(raw::REDISMODULE_CONFIG_DEFAULT) != ok {
                return Err(format!(
                    "could not register the configuration {}",
                    param.name
                ));
            }
        }
        // SAFETY: as above; called once, after every configuration is registered.
        if unsafe { load(ctx.ctx) } != raw::REDISMODULE_OK as c_int {
            return Err(
                "the server's configuration gives a bf-*/cf-* parameter a value out of its range"
                    .to_string(),
            );
        }
        Ok(())
    }

    /// The parameter a configuration callback's private data names.
    fn param_of(privdata: *mut c_void) -> Option<&'static bloomkit_commands::Parameter> {
        PARAMETERS.get(privdata as usize)
    }

    extern "C" fn get(_name: *const c_char, privdata: *mut c_void) -> *mut raw::RedisModuleString {
        let Some(param) = param_of(privdata) else {
            return std::ptr::null_mut();
        };
        let text = param.get(&defaults()).to_string();
        let Some(create) = api!(RedisModule_CreateString) else {
            return std::ptr::null_mut();
        };
        // SAFETY: a string created without a context is the module's to free; the buffer
        // is valid for its length during the call.
        let fresh = unsafe { create(std::ptr::null_mut(), text.as_ptr().cast(), text.len()) };
        let old = LAST_GET[privdata as usize].swap(fresh, Ordering::AcqRel);
        if let (false, Some(free)) = (old.is_null(), api!(RedisModule_FreeString)) {
            // SAFETY: `old` was created above by an earlier `get`, and Redis has finished
            // with it: it copies a configuration's text before it calls `get` again.
            unsafe { free(std::ptr::null_mut(), old) };
        }
        fresh
    }

    extern "C" fn set(
        _name: *const c_char,
        value: *mut raw::RedisModuleString,
        privdata: *mut c_void,
        err: *mut *mut raw::RedisModuleString,
    ) -> c_int {
        let Some(param) = param_of(privdata) else {
            return raw::REDISMODULE_ERR as c_int;
        };
        let text = redis_module::RedisString::string_as_slice(value);
        match update(|d| param.set(d, text)) {
            Ok(()) => raw::REDISMODULE_OK as c_int,
            Err(why) => {
                let message = why.to_string();
                if let (false, Some(create)) = (err.is_null(), api!(RedisModule_CreateString)) {
                    // SAFETY: Redis passes a place for the error, which it then frees; the
                    // message is valid for its length during the call.
                    unsafe {
                        *err = create(std::ptr::null_mut(), message.as_ptr().cast(), message.len());
                    }
                }
                raw::REDISMODULE_ERR as c_int
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_set_the_defaults_by_either_name() {
        let d = defaults_from_args(&[
            b"ERROR_RATE",
            b"0.001",
            b"initial_size",
            b"400",
            b"CF_MAX_EXPANSIONS",
            b"8",
            b"bf-expansion-factor",
            b"0",
            b"CF-BUCKET-SIZE",
            b"4",
        ])
        .unwrap();
        assert_eq!(d.bf_error_rate, 0.001);
        assert_eq!(d.bf_initial_size, 400);
        assert_eq!(d.cf_max_expansions, 8);
        assert_eq!(d.bf_expansion_factor, 0);
        assert_eq!(d.cf_bucket_size, 4);
        assert_eq!(d.cf_initial_size, Defaults::default().cf_initial_size);
        assert_eq!(defaults_from_args(&[]).unwrap(), Defaults::default());
    }

    /// Every value each parameter takes, a word parameter's every choice included, comes
    /// back from the atomics as it went in.
    #[test]
    fn the_shared_defaults_hold_every_value() {
        let shared = SharedDefaults::new(&Defaults::default());
        assert_eq!(shared.load(), Defaults::default());
        for param in PARAMETERS.iter() {
            let texts: Vec<String> = if param.choices.is_empty() {
                [param.min, param.max, param.default]
                    .iter()
                    .map(|n| n.to_string())
                    .collect()
            } else {
                param.choices.iter().map(|c| c.to_string()).collect()
            };
            for text in texts {
                let mut d = Defaults::default();
                // A float's bounds are excluded: those two are refused, and skipped.
                if param.set(&mut d, text.as_bytes()).is_err() {
                    continue;
                }
                shared.store(&d);
                assert_eq!(shared.load(), d, "{} {text}", param.name);
                assert_eq!(
                    param.get(&shared.load()).to_string(),
                    param.get(&d).to_string()
                );
            }
        }
        // Each field on its own: a change to one leaves the others.
        let d = Defaults {
            bf_error_rate: 0.125,
            cf_max_expansions: 7,
            bf_layout: LayerLayout::Blocked,
            ..Defaults::default()
        };
        shared.store(&d);
        assert_eq!(shared.load(), d);
    }

    #[test]
    fn bad_arguments_say_what_is_wrong() {
        let odd = defaults_from_args(&[b"ERROR_RATE"]).unwrap_err();
        assert!(odd.contains("NAME VALUE pairs"), "{odd}");
        let unknown = defaults_from_args(&[b"EXPANSIONS", b"2"]).unwrap_err();
        assert!(
            unknown.contains("unknown module argument 'EXPANSIONS'"),
            "{unknown}"
        );
        assert!(unknown.contains("bf-error-rate") && unknown.contains("INITIAL_SIZE"));
        let range = defaults_from_args(&[b"ERROR_RATE", b"1.5"]).unwrap_err();
        assert_eq!(
            range,
            "module argument ERROR_RATE 1.5: argument must be between 0 and 1 exclusive \
             (the parameter bf-error-rate)"
        );
        let integer = defaults_from_args(&[b"cf-bucket-size", b"x"]).unwrap_err();
        assert!(
            integer.contains("couldn't be parsed into an integer"),
            "{integer}"
        );
    }
}
