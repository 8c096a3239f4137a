//! A key opened for one command: what it holds, as the command layer sees it.
//!
//! `redis-module`'s key wrappers ask the engine for a key's kind and its module type again
//! for each type a command tries (`get_value` checks the type it is given), and build an
//! error value when the type differs: a filter command, which tries its own family's type
//! and then the other's, paid about 150 instructions for what three calls answer. This
//! asks once: the kind, the module type, and the value.

use std::ffi::{c_int, c_void};
use std::ptr::NonNull;

use bloomkit_commands::Value;
use redis_module::native_types::RedisType;
use redis_module::{raw, Context};

use crate::types::{type_of, Stored, BLOOM_TYPE, CUCKOO_TYPE};

/// A key's name as the engine holds it: one of the running command's arguments. Not a
/// `RedisString`: that wrapper retains the string and frees it again, 130 instructions a
/// command for nothing.
#[derive(Clone, Copy)]
pub struct KeyName(*mut raw::RedisModuleString);

impl KeyName {
    /// The name `name`.
    ///
    /// # Safety
    ///
    /// `name` must be one of the arguments Redis passed the running command: a valid string
    /// for as long as the command runs, and the name is used no longer.
    pub unsafe fn of_argument(name: *mut raw::RedisModuleString) -> KeyName {
        KeyName(name)
    }

    /// The engine's string.
    pub fn as_ptr(self) -> *mut raw::RedisModuleString {
        self.0
    }
}

/// What a key holds, as a command sees it.
pub enum Held<'a> {
    /// No such key.
    Missing,
    /// One of this module's values, in its slot (which a command may change in place, or
    /// empty), and its type.
    Ours(&'a mut Stored, &'static RedisType),
    /// A key of another kind (a string, a list, another module's type).
    Foreign,
}

/// A key opened for reading or writing, closed when dropped.
pub struct OpenKey {
    /// `None` for a missing key opened to read (the engine opens nothing then).
    key: Option<NonNull<raw::RedisModuleKey>>,
}

impl OpenKey {
    /// Opens `name` in the running command's context `ctx`, to write if `write`.
    pub fn open(ctx: &Context, name: KeyName, write: bool) -> OpenKey {
        let mode = if write {
            raw::REDISMODULE_READ | raw::REDISMODULE_WRITE
        } else {
            raw::REDISMODULE_READ
        };
        let key = api!(RedisModule_OpenKey).and_then(|open| {
            // SAFETY: `ctx` is the running command's context and `name` a string alive for
            // the call; the key is closed once, when this is dropped.
            let key = unsafe { open(ctx.ctx, name.as_ptr(), mode as c_int) };
            NonNull::new(key.cast::<raw::RedisModuleKey>())
        });
        OpenKey { key }
    }

    /// What the key holds.
    pub fn held(&mut self) -> Held<'_> {
        let Some(key) = self.key else {
            return Held::Missing;
        };
        let (Some(key_type), Some(module_type), Some(value_of)) = (
            api!(RedisModule_KeyType),
            api!(RedisModule_ModuleTypeGetType),
            api!(RedisModule_ModuleTypeGetValue),
        ) else {
            return Held::Foreign;
        };
        // SAFETY: `key` is open until `self` is dropped.
        let kind = unsafe { key_type(key.as_ptr()) };
        if kind == raw::REDISMODULE_KEYTYPE_EMPTY as c_int {
            return Held::Missing;
        }
        if kind != raw::REDISMODULE_KEYTYPE_MODULE as c_int {
            return Held::Foreign;
        }
        // SAFETY: as above; the key holds a module value.
        let ty = unsafe { module_type(key.as_ptr()) };
        let Some(ours) = [&BLOOM_TYPE, &CUCKOO_TYPE, &crate::aging_type::AGING_TYPE]
            .into_iter()
            .find(|t| *t.raw_type.borrow() == ty)
        else {
            return Held::Foreign;
        };
        // SAFETY: a value of one of this module's types is a `Box<Stored>` this module
        // gave the engine (`set`, or the types' `rdb_load` and `copy`); the borrow of
        // `self` keeps the key open, and no other reference to the value exists while a
        // command runs on Redis's main thread.
        match unsafe { value_of(key.as_ptr()).cast::<Stored>().as_mut() } {
            Some(value) => Held::Ours(value, ours),
            None => Held::Foreign,
        }
    }

    /// Stores `value` at the key (missing, or just emptied by [`delete`](Self::delete)),
    /// under its family's type. Whether the engine took it: a key opened to read cannot.
    pub fn set(&mut self, value: Value) -> bool {
        let (Some(key), Some(set)) = (self.key, api!(RedisModule_ModuleTypeSetValue)) else {
            return false;
        };
        let ty = *type_of(&value).raw_type.borrow();
        let boxed = Box::into_raw(Box::new(Some(value)));
        // SAFETY: `key` is open; the engine owns the box from here and frees it through
        // the type's `free` callback, which takes back a `Box<Stored>`.
        let status = unsafe { set(key.as_ptr(), ty, boxed.cast::<c_void>()) };
        if status != raw::REDISMODULE_OK as c_int {
            // SAFETY: the engine refused it, so the box is still this module's.
            drop(unsafe { Box::from_raw(boxed) });
            return false;
        }
        true
    }

    /// Deletes the key (its value is freed by the engine).
    pub fn delete(&mut self) {
        if let (Some(key), Some(delete)) = (self.key, api!(RedisModule_DeleteKey)) {
            // SAFETY: `key` is open.
            unsafe { delete(key.as_ptr()) };
        }
    }
}

impl Drop for OpenKey {
    fn drop(&mut self) {
        if let (Some(key), Some(close)) = (self.key, api!(RedisModule_CloseKey)) {
            // SAFETY: opened in `open`, closed once, here.
            unsafe { close(key.as_ptr()) };
        }
    }
}
