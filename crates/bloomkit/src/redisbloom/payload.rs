//! `DUMP` payloads of `MBbloom--`/`MBbloomCF` keys, whichever host wrote them: RedisBloom's
//! (its encoding versions 0 to 4), and bloomkit's own (version [`BLOOMKIT_ENCVER`]), which
//! the Redis/Valkey module and `bloomkit serve` both write, so that a payload from either
//! restores into the other; likewise the payloads of bloomkit's own module types (any other
//! type name, at the version its host gives).
//!
//! bloomkit's payload is a Redis module value as Redis's `DUMP` frames one: the RDB type 7,
//! the module id (the type name and its encoding version, [`BLOOMKIT_ENCVER`] for
//! `MBbloom--`/`MBbloomCF`), an unsigned field (the length `n`
//! of the value in bloomkit's file format), that encoding as string fields of at most
//! [`BLOOMKIT_CHUNK_BYTES`], the end-of-value opcode, then the RDB version (2 bytes) and
//! Redis's CRC-64 (8 bytes), little-endian.

use std::io::{self, Write};

use super::import::{
    crc64_redis, dump_value, module_name, Rdb, RedisBloomValue, MODULE_NAME_CHARS, OP_EOF,
    OP_STRING, OP_UINT, RDB_TYPE_MODULE_2,
};
use super::{BF_TYPE_NAME, CF_TYPE_NAME};
use crate::error::{Error, Result};

/// The module encoding version of bloomkit's values: the module registers its types with
/// it, and `bloomkit serve` writes it.
pub const BLOOMKIT_ENCVER: u64 = 1000;

/// The largest string field a bloomkit value is written in.
pub const BLOOMKIT_CHUNK_BYTES: usize = 1 << 20;

/// The RDB version bloomkit's hosts write in a payload: Redis 7.0's, the oldest engine the
/// module runs in; every later Redis and Valkey reads it.
pub const PAYLOAD_RDB_VERSION: u16 = 10;

/// What a `DUMP` payload of a `MBbloom--`/`MBbloomCF` key holds.
#[derive(Debug)]
#[non_exhaustive]
pub enum DumpValue {
    /// A RedisBloom value.
    RedisBloom(RedisBloomValue),
    /// A bloomkit value: its type name, encoding version and bytes in bloomkit's file
    /// format (decode with the host's reader, which checks the type and version).
    Bloomkit {
        /// `MBbloom--` or `MBbloomCF` (at [`BLOOMKIT_ENCVER`]), or another type of bloomkit's.
        type_name: String,
        /// The module encoding version the payload names.
        encver: u64,
        /// The value's encoding.
        bytes: Vec<u8>,
    },
}

/// Whether `payload` looks like a module value's `DUMP` (its first byte the RDB type 7).
pub fn is_module_payload(payload: &[u8]) -> bool {
    payload.first() == Some(&RDB_TYPE_MODULE_2)
}

/// Decodes a `DUMP` payload of either host's `MBbloom--`/`MBbloomCF` value, or of another
/// of bloomkit's module types (which the host then checks by name and version).
///
/// # Errors
///
/// [`Error::Truncated`] for a payload too short to have its footer,
/// [`Error::ChecksumMismatch`] for a wrong CRC-64 (the envelope's faults); [`Error::Corrupt`]
/// or [`Error::Truncated`] naming what is wrong inside a value whose checksum is right.
pub fn from_dump(payload: &[u8]) -> Result<DumpValue> {
    let value = dump_value(payload)?;
    let mut r = Rdb { rest: value };
    if r.byte()? != RDB_TYPE_MODULE_2 {
        return Err(Error::corrupt(
            "the payload is not a module value (RDB type 7)",
        ));
    }
    let (name, encver) = module_name(r.len()?);
    let redisbloom_type = name == BF_TYPE_NAME || name == CF_TYPE_NAME;
    if redisbloom_type && encver != BLOOMKIT_ENCVER {
        return RedisBloomValue::from_dump_value(value).map(DumpValue::RedisBloom);
    }
    r.opcode(OP_UINT, "the value's length")?;
    let declared = r.len()?;
    // Storage grows with the strings read (an LZF-compressed one as it decompresses), never
    // by the length declared.
    let mut bytes = Vec::new();
    while (bytes.len() as u64) < declared {
        r.opcode(OP_STRING, "a chunk of the value")?;
        let chunk = r.string()?.into_vec();
        if chunk.is_empty() || bytes.len() as u64 + chunk.len() as u64 > declared {
            return Err(Error::corrupt(format!(
                "a chunk of {} bytes after {} of the {declared} declared",
                chunk.len(),
                bytes.len()
            )));
        }
        bytes.extend_from_slice(&chunk);
    }
    r.finish()?;
    Ok(DumpValue::Bloomkit {
        type_name: name,
        encver,
        bytes,
    })
}

/// Writes the `DUMP` payload of a bloomkit value of `type_name` at module encoding version
/// `encver` whose encoding is `encoded_len` bytes, which `write` writes (in one or many
/// calls); the encoding is cut into string fields as it is written, never held twice.
///
/// # Errors
///
/// Whatever `write` returns, [`io::ErrorKind::InvalidData`] if it writes other than
/// `encoded_len` bytes, and [`io::ErrorKind::InvalidInput`] for a `type_name` that is not
/// nine of a module name's characters or an `encver` of more than 10 bits.
///
/// # Examples
///
/// ```
/// use bloomkit::redisbloom::payload::{from_dump, write_dump, DumpValue, BLOOMKIT_ENCVER};
/// use bloomkit::ScalableBloomFilter;
///
/// let mut f = ScalableBloomFilter::new(100, 0.01)?;
/// f.insert("a")?;
/// let mut payload = Vec::new();
/// write_dump(&mut payload, "MBbloom--", BLOOMKIT_ENCVER, f.encoded_len() as u64, |w| {
///     f.write_to(w).map_err(std::io::Error::other)
/// })?;
/// let DumpValue::Bloomkit { type_name, encver, bytes } = from_dump(&payload)? else {
///     panic!()
/// };
/// assert_eq!(type_name, "MBbloom--");
/// assert_eq!((encver, bytes), (BLOOMKIT_ENCVER, f.to_bytes()));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn write_dump(
    out: &mut Vec<u8>,
    type_name: &str,
    encver: u64,
    encoded_len: u64,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    let start = out.len();
    out.push(RDB_TYPE_MODULE_2);
    write_len(out, module_id(type_name, encver)?, true);
    write_len(out, OP_UINT, false);
    write_len(out, encoded_len, false);
    let mut strings = Strings {
        out,
        left: encoded_len,
        in_chunk: 0,
    };
    write(&mut strings)?;
    if strings.left != 0 || strings.in_chunk != 0 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "the value wrote fewer bytes than its length",
        ));
    }
    write_len(out, OP_EOF, false);
    out.extend_from_slice(&PAYLOAD_RDB_VERSION.to_le_bytes());
    let crc = crc64_redis(&out[start..]);
    out.extend_from_slice(&crc.to_le_bytes());
    Ok(())
}

/// A module id: the type name's nine 6-bit codes, then the 10-bit encoding version.
fn module_id(type_name: &str, encver: u64) -> io::Result<u64> {
    let bad = || io::Error::new(io::ErrorKind::InvalidInput, "not a module type name");
    if encver >= 1 << 10 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "a module encoding version has 10 bits",
        ));
    }
    if type_name.len() != 9 {
        return Err(bad());
    }
    type_name
        .bytes()
        .try_fold(0u64, |id, c| {
            let code = MODULE_NAME_CHARS
                .iter()
                .position(|&m| m == c)
                .ok_or_else(bad)?;
            Ok((id << 6) | code as u64)
        })
        .map(|id| (id << 10) | encver)
}

/// Redis's RDB length encoding (a module id always in the 8-byte form, as Redis writes it).
fn write_len(out: &mut Vec<u8>, n: u64, wide: bool) {
    if wide || n > u64::from(u32::MAX) {
        out.push(0x81);
        out.extend_from_slice(&n.to_be_bytes());
    } else if n < 1 << 6 {
        out.push(n as u8);
    } else if n < 1 << 14 {
        out.push(0x40 | (n >> 8) as u8);
        out.push(n as u8);
    } else {
        out.push(0x80);
        out.extend_from_slice(&(n as u32).to_be_bytes());
    }
}

/// Cuts what is written into string fields of at most [`BLOOMKIT_CHUNK_BYTES`].
struct Strings<'a> {
    out: &'a mut Vec<u8>,
    /// Bytes of the value not yet written.
    left: u64,
    /// Bytes still owed to the string field begun.
    in_chunk: usize,
}

impl Write for Strings<'_> {
    fn write(&mut self, mut buf: &[u8]) -> io::Result<usize> {
        let len = buf.len();
        if len as u64 > self.left + self.in_chunk as u64 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "the value wrote more bytes than its length",
            ));
        }
        while !buf.is_empty() {
            if self.in_chunk == 0 {
                let chunk = self.left.min(BLOOMKIT_CHUNK_BYTES as u64);
                write_len(self.out, OP_STRING, false);
                write_len(self.out, chunk, false);
                self.in_chunk = chunk as usize;
                self.left -= chunk;
            }
            let take = self.in_chunk.min(buf.len());
            self.out.extend_from_slice(&buf[..take]);
            self.in_chunk -= take;
            buf = &buf[take..];
        }
        Ok(len)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
