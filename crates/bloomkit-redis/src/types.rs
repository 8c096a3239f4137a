//! The data types: `MBbloom--` for Bloom keys and `MBbloomCF` for cuckoo keys (RedisBloom's
//! names, which `TYPE` answers), each holding a boxed [`Stored`] value, with the callbacks
//! Redis calls to save, load, rewrite, measure, digest, copy and free it.
//!
//! Both types share one set of callbacks: the value says what it is. Their RDB encoding is
//! the module's own ([`encoding`](crate::encoding)); the append-only file's rewrite emits
//! the `LOADCHUNK` commands that rebuild the same bits
//! ([`Value::restore_commands`]).

use std::ffi::{c_int, c_void};

use bloomkit::redisbloom::{BF_TYPE_NAME, CF_TYPE_NAME};
use bloomkit_commands::value::AGING_TYPE_NAME;
use bloomkit_commands::Value;
use redis_module::native_types::RedisType;
use redis_module::raw;

use crate::encoding::ENCODING_VERSION;

/// What a key's value points at: a [`Value`], in the slot a write command runs on in place
/// (the command layer's `&mut Option<Value>`), so that a command moves no value out of its
/// key and back. `None` only between a command emptying the slot and the key's deletion
/// right after it (or, after a bug, until the next write); the callbacks see it as an empty
/// stand-in.
pub type Stored = Option<Value>;

/// The type of a Bloom key.
pub static BLOOM_TYPE: RedisType = RedisType::new(BF_TYPE_NAME, ENCODING_VERSION, methods(false));

/// The type of a cuckoo key.
pub static CUCKOO_TYPE: RedisType = RedisType::new(CF_TYPE_NAME, ENCODING_VERSION, methods(true));

/// The type a value is stored under, by the name its `TYPE` answers.
pub fn type_of(value: &Value) -> &'static RedisType {
    match value.type_name() {
        CF_TYPE_NAME => &CUCKOO_TYPE,
        AGING_TYPE_NAME => &crate::aging_type::AGING_TYPE,
        _ => &BLOOM_TYPE,
    }
}

const fn methods(cuckoo: bool) -> raw::RedisModuleTypeMethods {
    methods_loading_with(if cuckoo {
        callbacks::rdb_load::<true>
    } else {
        callbacks::rdb_load::<false>
    })
}

/// What an RDB load callback is.
pub(crate) type RdbLoad = unsafe extern "C" fn(*mut raw::RedisModuleIO, c_int) -> *mut c_void;

/// The shared callbacks, with `rdb_load` (which checks its type's encoding version).
pub(crate) const fn methods_loading_with(rdb_load: RdbLoad) -> raw::RedisModuleTypeMethods {
    raw::RedisModuleTypeMethods {
        version: raw::REDISMODULE_TYPE_METHOD_VERSION as u64,
        rdb_load: Some(rdb_load),
        rdb_save: Some(callbacks::rdb_save),
        aof_rewrite: Some(callbacks::aof_rewrite),
        mem_usage: Some(callbacks::mem_usage),
        digest: Some(callbacks::digest),
        free: Some(callbacks::free),
        aux_load: None,
        aux_save: None,
        aux_save2: None,
        aux_save_triggers: 0,
        free_effort: None,
        unlink: None,
        copy: Some(callbacks::copy),
        defrag: None,
        copy2: None,
        free_effort2: None,
        mem_usage2: None,
        unlink2: None,
    }
}

/// The module's options: it handles read errors while loading (a damaged RDB or `RESTORE`
/// payload is refused, not a crash), and it tells Redis itself when a key changed, so that
/// `WATCH` and client-side caching see a change only when a command made one (a `BF.ADD`
/// of an item already present changes nothing).
#[cfg(not(test))]
pub fn set_module_options(ctx: &redis_module::Context) {
    if let Some(set) = api!(RedisModule_SetModuleOptions) {
        let options = raw::REDISMODULE_OPTIONS_HANDLE_IO_ERRORS
            | raw::REDISMODULE_OPTION_NO_IMPLICIT_SIGNAL_MODIFIED;
        // SAFETY: the context is the one Redis passed to the module's load.
        unsafe { set(ctx.ctx, options as i32) };
    }
}

/// The callbacks, each a thin `extern "C"` layer over safe code; every type but the
/// loader's version check shares them ([`aging_type`](crate::aging_type) too).
pub(crate) mod callbacks {
    use std::ffi::{c_int, c_void, CString};
    use std::sync::LazyLock;

    use bloomkit_commands::Value;
    use redis_module::{raw, RedisString};

    use super::{Stored, BF_TYPE_NAME, CF_TYPE_NAME};
    use crate::encoding::{check_version, Assembler, ChunkWriter, Encoding, LoadError};

    /// The value behind a pointer Redis passes to a callback.
    ///
    /// # Safety
    ///
    /// `value` must be a pointer this module gave Redis as a key's value: from
    /// `Box::<Stored>::into_raw` (in `rdb_load`, `copy`, or [`OpenKey::set`]), not yet freed.
    ///
    /// [`OpenKey::set`]: crate::key::OpenKey::set
    unsafe fn value_ref<'a>(value: *const c_void) -> &'a Value {
        // SAFETY: the caller's promise.
        let stored = unsafe { &*value.cast::<Stored>() };
        stored.as_ref().unwrap_or_else(|| &EMPTY)
    }

    /// What a callback sees of an emptied slot.
    static EMPTY: LazyLock<Value> = LazyLock::new(Value::stand_in);

    pub(super) unsafe extern "C" fn rdb_load<const CUCKOO: bool>(
        rdb: *mut raw::RedisModuleIO,
        encver: c_int,
    ) -> *mut c_void {
        let type_name = if CUCKOO { CF_TYPE_NAME } else { BF_TYPE_NAME };
        match load(rdb, type_name, encver) {
            Ok(value) => Box::into_raw(Box::new(Some(value))).cast(),
            Err(why) => {
                log_io_error(rdb, type_name, &why);
                std::ptr::null_mut()
            }
        }
    }

    fn load(
        rdb: *mut raw::RedisModuleIO,
        type_name: &'static str,
        encver: c_int,
    ) -> Result<Value, LoadError> {
        if let Encoding::RedisBloom(version) = check_version(encver)? {
            return crate::import::load(rdb, type_name, version);
        }
        read_value(rdb, type_name)
    }

    /// Reads a value of `type_name` stored in the module's encoding, its version checked.
    pub(crate) fn read_value(
        rdb: *mut raw::RedisModuleIO,
        type_name: &'static str,
    ) -> Result<Value, LoadError> {
        let declared = raw::load_unsigned(rdb).map_err(|_| LoadError::Io)?;
        let mut assembler = Assembler::new(declared);
        while !assembler.is_complete() {
            let chunk = raw::load_string_buffer(rdb).map_err(|_| LoadError::Io)?;
            assembler.push(chunk.as_ref())?;
        }
        assembler.finish(type_name)
    }

    /// Says in the server's log why a value could not be loaded, naming its key.
    pub(crate) fn log_io_error(rdb: *mut raw::RedisModuleIO, type_name: &str, why: &LoadError) {
        let key = api!(RedisModule_GetKeyNameFromIO)
            // SAFETY: `rdb` is the I/O context Redis passed to this load.
            .map(|name_of| unsafe { name_of(rdb) })
            .filter(|name| !name.is_null())
            // The key's bytes are a client's: quoted, so that they cannot forge a line.
            .map(|name| crate::log::quoted(RedisString::string_as_slice(name)));
        let key = key.map_or_else(String::new, |k| format!(" of key {k}"));
        let message = format!("bloomkit: cannot load the {type_name} value{key}: {why}");
        crate::log::io_error(rdb, &message);
    }

    pub(crate) unsafe extern "C" fn rdb_save(rdb: *mut raw::RedisModuleIO, value: *mut c_void) {
        // SAFETY: Redis passes the value of the key being saved, which this module stored.
        let value = unsafe { value_ref(value) };
        raw::save_unsigned(rdb, value.encoded_len() as u64);
        ChunkWriter::new(|chunk: &[u8]| raw::save_slice(rdb, chunk)).write_value(value);
    }

    pub(crate) unsafe extern "C" fn aof_rewrite(
        aof: *mut raw::RedisModuleIO,
        key: *mut raw::RedisModuleString,
        value: *mut c_void,
    ) {
        // SAFETY: Redis passes the value of the key being rewritten, which this module
        // stored.
        let value = unsafe { value_ref(value) };
        let Some(emit_aof) = api!(RedisModule_EmitAOF) else {
            return;
        };
        let name = RedisString::string_as_slice(key);
        value.restore_commands(name, &mut |command| {
            // Every restore command is `LOADCHUNK key iterator chunk`.
            let [command_name, _key, iter, chunk] = &command[..] else {
                return;
            };
            let Ok(command_name) = CString::new(command_name.to_vec()) else {
                return;
            };
            // SAFETY: `aof` and `key` are what Redis passed to this rewrite; the format
            // "sbb" takes a module string and two (pointer, length) buffers, given in that
            // order, each valid for the call.
            unsafe {
                emit_aof(
                    aof,
                    command_name.as_ptr(),
                    c"sbb".as_ptr(),
                    key,
                    iter.as_ptr(),
                    iter.len(),
                    chunk.as_ptr(),
                    chunk.len(),
                );
            }
        });
    }

    pub(crate) unsafe extern "C" fn mem_usage(value: *const c_void) -> usize {
        // SAFETY: Redis passes a value this module stored.
        let value = unsafe { value_ref(value) };
        std::mem::size_of::<Stored>() + value.memory_bytes()
    }

    pub(crate) unsafe extern "C" fn digest(md: *mut raw::RedisModuleDigest, value: *mut c_void) {
        // SAFETY: Redis passes a value this module stored.
        let value = unsafe { value_ref(value) };
        let (Some(add), Some(end)) = (
            api!(RedisModule_DigestAddStringBuffer),
            api!(RedisModule_DigestEndSequence),
        ) else {
            return;
        };
        ChunkWriter::new(|chunk: &[u8]| {
            // SAFETY: `md` is the digest Redis passed; the chunk is valid for its length.
            unsafe { add(md, chunk.as_ptr().cast_mut().cast(), chunk.len()) };
        })
        .write_value(value);
        // SAFETY: as above.
        unsafe { end(md) };
    }

    pub(crate) unsafe extern "C" fn free(value: *mut c_void) {
        // SAFETY: Redis frees each value it was given once; this module gave it a
        // `Box<Stored>`.
        drop(unsafe { Box::from_raw(value.cast::<Stored>()) });
    }

    pub(crate) unsafe extern "C" fn copy(
        _from: *mut raw::RedisModuleString,
        _to: *mut raw::RedisModuleString,
        value: *const c_void,
    ) -> *mut c_void {
        // SAFETY: Redis passes the value of the key being copied, which this module stored.
        let value = unsafe { value_ref(value) };
        Box::into_raw(Box::new(Some(value.clone()))).cast()
    }
}
