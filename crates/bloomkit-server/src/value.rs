//! The values the keyspace holds: one filter per key.

use bloomkit::{AnyFilter, CuckooFilter, ScalableBloomFilter};

/// A key's value: the filter behind a `BF.*` or `CF.*` key.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// A Bloom key (`TYPE` answers `MBbloom--`).
    Bloom(ScalableBloomFilter),
    /// A cuckoo key (`TYPE` answers `MBbloomCF`).
    Cuckoo(CuckooFilter),
}

impl Value {
    /// What `TYPE` answers for this key: RedisBloom's module type names.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Bloom(_) => "MBbloom--",
            Value::Cuckoo(_) => "MBbloomCF",
        }
    }

    /// Bytes this value holds on the heap and inline, for `INFO memory` and `--maxmemory`.
    pub fn memory_bytes(&self) -> usize {
        match self {
            Value::Bloom(f) => f.memory_bytes(),
            Value::Cuckoo(f) => f.memory_bytes(),
        }
    }

    /// The value in bloomkit's file format (self-describing and checksummed), as stored in
    /// snapshots.
    pub fn to_bytes(&self) -> Vec<u8> {
        match self {
            Value::Bloom(f) => f.to_bytes(),
            Value::Cuckoo(f) => f.to_bytes(),
        }
    }

    /// Reads a value written by [`Value::to_bytes`].
    ///
    /// # Errors
    ///
    /// Whatever the format reader finds wrong (truncation, checksum, corruption), and
    /// [`bloomkit::Error::WrongKind`] for a filter kind the server does not serve.
    pub fn from_bytes(bytes: &[u8]) -> bloomkit::Result<Value> {
        match AnyFilter::from_bytes(bytes)? {
            AnyFilter::Scalable(f) => Ok(Value::Bloom(f)),
            AnyFilter::Cuckoo(f) => Ok(Value::Cuckoo(f)),
            other => Err(bloomkit::Error::WrongKind {
                expected: bloomkit::FilterKind::Scalable,
                found: other.kind().code(),
            }),
        }
    }
}
