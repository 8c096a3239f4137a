//! The data type of `AF.*` keys: `BKaging--` (9 characters, as Redis requires), holding an
//! [`AgingKey`](bloomkit_commands::aging::AgingKey) in the same boxed
//! [`Stored`](crate::types::Stored) slot as the other types, with the same callbacks
//! ([`types`](crate::types)) but its own name and encoding version.
//!
//! # Encoding version 1
//!
//! The layout of [`encoding`](crate::encoding) (a length, then the value's bytes in string
//! buffers of at most 1 MiB), where the bytes are the aging key's encoding: `\x89BKA`, its
//! own version, the error rate, the capacity per generation, the period, the last rotation,
//! then the filter in bloomkit's checksummed format (`Value::to_bytes`). A key still being
//! restored by `AF.LOADCHUNK` is stored as its partial dump, as for the other types.
//!
//! # Append-only rewrite
//!
//! The shared rewrite emits `AF.LOADCHUNK key 1 <header>` then `AF.LOADCHUNK key <iter>
//! <chunk>`s ([`Value::restore_commands`](bloomkit_commands::Value::restore_commands)):
//! the key's whole encoding, so a replay restores its parameters, its schedule (the last
//! rotation's time) and every generation's bits exactly, whatever the replaying server's
//! defaults and clock.

use std::ffi::{c_int, c_void};

use bloomkit_commands::value::AGING_TYPE_NAME;
use redis_module::native_types::RedisType;
use redis_module::raw;

use crate::encoding::LoadError;
use crate::types::callbacks;

/// The version of the aging type's encoding in RDB files and `DUMP` payloads. A type of
/// bloomkit's own, so its versions start at 1 (the other types' start at 1000 to stay
/// apart from RedisBloom's).
pub const AGING_ENCODING_VERSION: i32 = bloomkit_commands::value::AGING_ENCVER as i32;

/// The type of an aging key.
pub static AGING_TYPE: RedisType = RedisType::new(
    AGING_TYPE_NAME,
    AGING_ENCODING_VERSION,
    crate::types::methods_loading_with(rdb_load),
);

/// Checks the version an aging value was stored with: this build writes and reads
/// [`AGING_ENCODING_VERSION`] only.
///
/// # Errors
///
/// [`LoadError::Newer`] for any other version (no build has written an older one).
pub fn check_version(version: i32) -> Result<(), LoadError> {
    if version == AGING_ENCODING_VERSION {
        Ok(())
    } else {
        Err(LoadError::Newer {
            version,
            newest: AGING_ENCODING_VERSION,
        })
    }
}

unsafe extern "C" fn rdb_load(rdb: *mut raw::RedisModuleIO, encver: c_int) -> *mut c_void {
    match check_version(encver).and_then(|()| callbacks::read_value(rdb, AGING_TYPE_NAME)) {
        Ok(value) => {
            // SAFETY: `rdb` is the I/O context Redis passed to this load.
            unsafe { crate::aging_timer::track_loaded(rdb, &value) };
            Box::into_raw(Box::new(Some(value))).cast()
        }
        Err(why) => {
            callbacks::log_io_error(rdb, AGING_TYPE_NAME, &why);
            std::ptr::null_mut()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_type_name_is_nine_characters_and_the_version_is_checked() {
        assert_eq!(AGING_TYPE_NAME.len(), 9);
        assert!(check_version(AGING_ENCODING_VERSION).is_ok());
        let e = check_version(2).unwrap_err();
        assert!(e.to_string().contains("upgrade the module"), "{e}");
    }
}
