//! A RedisBloom value in an RDB file or `DUMP` payload, loaded by this module: Redis hands a
//! `MBbloom--`/`MBbloomCF` value to the module registered under that name whatever wrote
//! it, with RedisBloom's encoding version (0 to 4). Its fields are read with the module API
//! (`RedisModule_LoadUnsigned`, `LoadDouble`, `LoadStringBuffer`) in RedisBloom's order and
//! decoded by [`bloomkit::redisbloom`], which checks every field before sizing anything by
//! it; the key then answers with RedisBloom's hashing, and is saved in the module's own
//! encoding from then on.

use bloomkit::redisbloom::{RdbFields, RedisBloomChain, RedisCuckooFilter, CF_TYPE_NAME};
use bloomkit::Error;
use bloomkit_commands::Value;
use redis_module::raw;

use crate::encoding::LoadError;

/// The fields of the value being loaded, through the engine's RDB reader.
struct ModuleFields(*mut raw::RedisModuleIO);

impl ModuleFields {
    fn missing(what: &str) -> Error {
        Error::Corrupt {
            reason: format!("the data ends (or could not be read) at the field {what}"),
        }
    }
}

impl RdbFields for ModuleFields {
    fn unsigned(&mut self, what: &str) -> bloomkit::Result<u64> {
        raw::load_unsigned(self.0).map_err(|_| Self::missing(what))
    }

    fn double(&mut self, what: &str) -> bloomkit::Result<f64> {
        raw::load_double(self.0).map_err(|_| Self::missing(what))
    }

    fn buffer(&mut self, what: &str) -> bloomkit::Result<Vec<u8>> {
        // The engine allocates what the stream's length says only as it reads the bytes.
        raw::load_string_buffer(self.0)
            .map(|b| b.as_ref().to_vec())
            .map_err(|_| Self::missing(what))
    }
}

/// The RedisBloom value of `type_name` at `version` that `rdb` holds next.
pub(crate) fn load(
    rdb: *mut raw::RedisModuleIO,
    type_name: &'static str,
    version: u64,
) -> Result<Value, LoadError> {
    let mut fields = ModuleFields(rdb);
    let value = if type_name == CF_TYPE_NAME {
        RedisCuckooFilter::from_rdb_fields(version, &mut fields).map(Value::RedisCuckoo)
    } else {
        RedisBloomChain::from_rdb_fields(version, &mut fields).map(Value::RedisBloom)
    };
    value.map_err(|cause| LoadError::RedisBloom {
        type_name,
        version: version as i32,
        cause,
    })
}
