//! Decoders for what RedisBloom hands out: a `DUMP` payload, a module value as its RDB
//! holds it, and the chunks of `BF.SCANDUMP` / `CF.SCANDUMP`.
//!
//! All input is untrusted. Nothing is sized by a count the input merely claims: a string's
//! bytes are borrowed from the input (or, LZF-compressed, grow only as they decompress), and
//! the links and sub-filters of a `SCANDUMP` sequence are filled from the chunks as they
//! arrive, so memory follows the bytes actually received.

use super::chain::{RedisBloomChain, RedisBloomLink, MAX_LINKS};
use super::cuckoo::{RedisCuckooFilter, SubFilter, MAX_FILTERS};
use crate::error::{Error, Result};

/// The type name RedisBloom registers for Bloom keys (what `TYPE` answers).
pub const BF_TYPE_NAME: &str = "MBbloom--";
/// The type name RedisBloom registers for cuckoo keys.
pub const CF_TYPE_NAME: &str = "MBbloomCF";
/// The newest encoding version of each type (RedisBloom 2.8 and Redis 8 write 4).
const BF_MAX_ENCVER: u64 = 4;
const CF_MAX_ENCVER: u64 = 4;

/// RDB's object type of a module value with opcodes (`RDB_TYPE_MODULE_2`).
pub(super) const RDB_TYPE_MODULE_2: u8 = 7;
/// Module value opcodes.
pub(super) const OP_EOF: u64 = 0;
pub(super) const OP_UINT: u64 = 2;
const OP_DOUBLE: u64 = 4;
pub(super) const OP_STRING: u64 = 5;

/// The characters of a module type name, by their 6-bit code in a module id.
pub(super) const MODULE_NAME_CHARS: &[u8; 64] =
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// A RedisBloom value of either type.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum RedisBloomValue {
    /// A `MBbloom--` key.
    Bloom(RedisBloomChain),
    /// A `MBbloomCF` key.
    Cuckoo(RedisCuckooFilter),
}

/// Redis's CRC-64 (Jones polynomial, reflected, initial value 0), which ends every `DUMP`
/// payload.
///
/// ```
/// assert_eq!(bloomkit::redisbloom::crc64_redis(b"123456789"), 0xe9c6d914c4b8d9ca);
/// ```
pub fn crc64_redis(bytes: &[u8]) -> u64 {
    const POLY: u64 = 0x95ac_9329_ac4b_c9b5; // 0xad93d23594c935a9, bit-reversed
    static TABLE: std::sync::OnceLock<[u64; 256]> = std::sync::OnceLock::new();
    let table = TABLE.get_or_init(|| {
        let mut t = [0u64; 256];
        for (i, slot) in t.iter_mut().enumerate() {
            let mut c = i as u64;
            for _ in 0..8 {
                c = if c & 1 != 0 { (c >> 1) ^ POLY } else { c >> 1 };
            }
            *slot = c;
        }
        t
    });
    bytes.iter().fold(0u64, |crc, &b| {
        table[((crc ^ u64::from(b)) & 0xff) as usize] ^ (crc >> 8)
    })
}

/// Where a RedisBloom value's fields come from, in the order RedisBloom saved them: the
/// bytes of an RDB value ([`RedisBloomChain::from_rdb`]), or a host's own reader, such as a
/// Redis module's `rdb_load` callback with `RedisModule_LoadUnsigned`, `LoadDouble` and
/// `LoadStringBuffer` ([`RedisBloomChain::from_rdb_fields`]). `what` names the field, for
/// the error.
pub trait RdbFields {
    /// The next unsigned integer (`RedisModule_SaveUnsigned`).
    ///
    /// # Errors
    ///
    /// When the input holds no such field next.
    fn unsigned(&mut self, what: &str) -> Result<u64>;
    /// The next double (`RedisModule_SaveDouble`).
    ///
    /// # Errors
    ///
    /// As [`unsigned`](Self::unsigned).
    fn double(&mut self, what: &str) -> Result<f64>;
    /// The next string buffer (`RedisModule_SaveStringBuffer`). An implementation must not
    /// allocate more than its input holds.
    ///
    /// # Errors
    ///
    /// As [`unsigned`](Self::unsigned).
    fn buffer(&mut self, what: &str) -> Result<Vec<u8>>;
    /// Bytes left in the input, when known: claimed counts are checked against it before
    /// anything is sized by them (otherwise they are only bounded by RedisBloom's limits).
    fn remaining(&self) -> Option<usize> {
        None
    }
}

/// Refuses a value of `type_name` written at an encoding version newer than `newest`.
fn check_encver(type_name: &str, encver: u64, newest: u64) -> Result<()> {
    if encver > newest {
        return Err(Error::corrupt(format!(
            "{type_name} encoding version {encver} is newer than {newest}; import it with a \
             newer bloomkit"
        )));
    }
    Ok(())
}

/// A cursor over RDB bytes.
pub(super) struct Rdb<'a> {
    pub(super) rest: &'a [u8],
}

/// A string read from RDB: borrowed, or decompressed.
pub(super) enum RdbString<'a> {
    Raw(&'a [u8]),
    Owned(Vec<u8>),
}

impl RdbString<'_> {
    pub(super) fn into_vec(self) -> Vec<u8> {
        match self {
            RdbString::Raw(b) => b.to_vec(),
            RdbString::Owned(v) => v,
        }
    }
}

impl<'a> Rdb<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if n > self.rest.len() {
            return Err(Error::Truncated);
        }
        let (head, tail) = self.rest.split_at(n);
        self.rest = tail;
        Ok(head)
    }

    pub(super) fn byte(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }

    /// A length, or the code of a special string encoding (`Err` in `Ok(Err(code))`).
    fn len_or_encoding(&mut self) -> Result<std::result::Result<u64, u8>> {
        let first = self.byte()?;
        Ok(match first >> 6 {
            0 => Ok(u64::from(first & 0x3f)),
            1 => Ok((u64::from(first & 0x3f) << 8) | u64::from(self.byte()?)),
            2 => match first {
                0x80 => Ok(u64::from(u32::from_be_bytes(
                    self.take(4)?.try_into().expect("4 bytes"),
                ))),
                0x81 => Ok(u64::from_be_bytes(
                    self.take(8)?.try_into().expect("8 bytes"),
                )),
                other => {
                    return Err(Error::corrupt(format!(
                        "RDB length prefix {other:#04x} is not a known length encoding"
                    )))
                }
            },
            _ => Err(first & 0x3f),
        })
    }

    pub(super) fn len(&mut self) -> Result<u64> {
        self.len_or_encoding()?.map_err(|code| {
            Error::corrupt(format!(
                "an RDB length expected, found string encoding {code}"
            ))
        })
    }

    pub(super) fn string(&mut self) -> Result<RdbString<'a>> {
        match self.len_or_encoding()? {
            Ok(n) => {
                let n = usize::try_from(n).map_err(|_| Error::Truncated)?;
                Ok(RdbString::Raw(self.take(n)?))
            }
            // Integers stored as strings: their decimal text.
            Err(0) => Ok(RdbString::Owned(
                (self.byte()? as i8).to_string().into_bytes(),
            )),
            Err(1) => Ok(RdbString::Owned(
                i16::from_le_bytes(self.take(2)?.try_into().expect("2 bytes"))
                    .to_string()
                    .into_bytes(),
            )),
            Err(2) => Ok(RdbString::Owned(
                i32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes"))
                    .to_string()
                    .into_bytes(),
            )),
            Err(3) => {
                let compressed_len = self.len()?;
                let len = self.len()?;
                let compressed =
                    self.take(usize::try_from(compressed_len).map_err(|_| Error::Truncated)?)?;
                Ok(RdbString::Owned(lzf_decompress(compressed, len)?))
            }
            Err(code) => Err(Error::corrupt(format!(
                "RDB string encoding {code} is not known"
            ))),
        }
    }

    /// The next module opcode, which must be `want`.
    pub(super) fn opcode(&mut self, want: u64, what: &str) -> Result<()> {
        let found = self.len()?;
        if found != want {
            return Err(Error::corrupt(format!(
                "RedisBloom value: {what} expected (opcode {want}), found opcode {found}"
            )));
        }
        Ok(())
    }

    /// The end-of-value marker, then nothing.
    pub(super) fn finish(mut self) -> Result<()> {
        self.opcode(OP_EOF, "the end of the value")?;
        if !self.rest.is_empty() {
            return Err(Error::corrupt(format!(
                "{} unexpected bytes follow the RedisBloom value",
                self.rest.len()
            )));
        }
        Ok(())
    }
}

impl RdbFields for Rdb<'_> {
    fn unsigned(&mut self, what: &str) -> Result<u64> {
        self.opcode(OP_UINT, what)?;
        self.len()
    }

    fn double(&mut self, what: &str) -> Result<f64> {
        self.opcode(OP_DOUBLE, what)?;
        Ok(f64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }

    fn buffer(&mut self, what: &str) -> Result<Vec<u8>> {
        self.opcode(OP_STRING, what)?;
        Ok(self.string()?.into_vec())
    }

    fn remaining(&self) -> Option<usize> {
        Some(self.rest.len())
    }
}

/// LZF (as Redis's `lzf_d.c` reads it), into storage that grows only as output is made: a
/// claimed length never sizes an allocation.
fn lzf_decompress(input: &[u8], expected_len: u64) -> Result<Vec<u8>> {
    let bad = || Error::corrupt("an LZF-compressed RDB string is damaged");
    let mut out: Vec<u8> = Vec::new();
    let mut i = 0;
    while i < input.len() {
        let ctrl = usize::from(input[i]);
        i += 1;
        if ctrl < 32 {
            let run = input.get(i..i + ctrl + 1).ok_or_else(bad)?;
            out.extend_from_slice(run);
            i += ctrl + 1;
        } else {
            let mut len = ctrl >> 5;
            if len == 7 {
                len += usize::from(*input.get(i).ok_or_else(bad)?);
                i += 1;
            }
            let low = usize::from(*input.get(i).ok_or_else(bad)?);
            i += 1;
            let back = ((ctrl & 0x1f) << 8) + low + 1;
            let start = out.len().checked_sub(back).ok_or_else(bad)?;
            for k in 0..len + 2 {
                let b = out[start + k];
                out.push(b);
            }
        }
        if out.len() as u64 > expected_len {
            return Err(bad());
        }
    }
    if out.len() as u64 != expected_len {
        return Err(bad());
    }
    Ok(out)
}

/// A module id's type name and encoding version.
pub(super) fn module_name(id: u64) -> (String, u64) {
    let mut name = [0u8; 9];
    for (k, c) in name.iter_mut().enumerate() {
        *c = MODULE_NAME_CHARS[((id >> (10 + 6 * (8 - k))) & 63) as usize];
    }
    (String::from_utf8_lossy(&name).into_owned(), id & 1023)
}

impl RedisBloomValue {
    /// Decodes a `DUMP` payload of a RedisBloom key (as `DUMP` returns it from Redis 7 or 8
    /// with RedisBloom loaded): the RDB object type, the module id (type name and encoding
    /// version), the value, the 2-byte RDB version and the CRC-64.
    ///
    /// The RDB version is not checked against a newest one: the value's own encoding
    /// version says what matters here.
    ///
    /// # Errors
    ///
    /// [`Error::Truncated`] for a cut payload, [`Error::ChecksumMismatch`] for a wrong
    /// CRC-64, [`Error::Corrupt`] (naming the field) for anything else, including a type
    /// other than `MBbloom--`/`MBbloomCF` and an encoding version above 4.
    pub fn from_dump(payload: &[u8]) -> Result<Self> {
        Self::from_dump_value(dump_value(payload)?)
    }

    /// [`from_dump`](Self::from_dump) of the value inside a payload whose envelope
    /// ([`dump_value`]) was checked already.
    pub(crate) fn from_dump_value(value: &[u8]) -> Result<Self> {
        let mut r = Rdb { rest: value };
        let ty = r.byte()?;
        if ty != RDB_TYPE_MODULE_2 {
            return Err(Error::corrupt(format!(
                "RDB object type {ty} is not a module value (7); this DUMP is not of a \
                 RedisBloom key"
            )));
        }
        let (name, encver) = module_name(r.len()?);
        match name.as_str() {
            BF_TYPE_NAME => Ok(RedisBloomValue::Bloom(RedisBloomChain::from_rdb(
                encver, r.rest,
            )?)),
            CF_TYPE_NAME => Ok(RedisBloomValue::Cuckoo(RedisCuckooFilter::from_rdb(
                encver, r.rest,
            )?)),
            other => Err(Error::corrupt(format!(
                "module type {other:?} is neither {BF_TYPE_NAME} nor {CF_TYPE_NAME}"
            ))),
        }
    }
}

/// The value inside a `DUMP` payload, between the RDB object type it starts with and the
/// footer it ends with (the 2-byte RDB version and the CRC-64 of everything before it),
/// once the CRC-64 matches.
///
/// # Errors
///
/// [`Error::Truncated`] for a payload too short to have its footer,
/// [`Error::ChecksumMismatch`] for a wrong CRC-64.
pub(crate) fn dump_value(payload: &[u8]) -> Result<&[u8]> {
    if payload.len() < 11 {
        return Err(Error::Truncated);
    }
    let (body, crc) = payload.split_at(payload.len() - 8);
    let stored = u64::from_le_bytes(crc.try_into().expect("8 bytes"));
    let computed = crc64_redis(body);
    if computed != stored {
        return Err(Error::ChecksumMismatch { stored, computed });
    }
    Ok(&body[..body.len() - 2])
}

/// Whether `n` items of `each` bytes could be in `available` bytes (when that is known): a
/// claimed count is checked against the input before anything is sized by it.
fn fits(n: u64, each: u64, available: Option<usize>) -> bool {
    available.is_none_or(|a| n.checked_mul(each).is_some_and(|b| b <= a as u64))
}

impl RedisBloomChain {
    /// Decodes a `MBbloom--` value as RedisBloom writes it to the RDB at encoding version
    /// `encver` (0 to 4): the module opcodes after the module id, ending with the
    /// end-of-value opcode.
    ///
    /// # Errors
    ///
    /// As [`RedisBloomValue::from_dump`], without the checksum.
    pub fn from_rdb(encver: u64, value: &[u8]) -> Result<Self> {
        let mut r = Rdb { rest: value };
        let chain = Self::from_rdb_fields(encver, &mut r)?;
        r.finish()?;
        Ok(chain)
    }

    /// Decodes a `MBbloom--` value at encoding version `encver` from `r`, field by field:
    /// what a Redis module's `rdb_load` does with a RedisBloom value.
    ///
    /// # Errors
    ///
    /// As [`from_rdb`](Self::from_rdb), and `r`'s own.
    pub fn from_rdb_fields<R: RdbFields + ?Sized>(encver: u64, r: &mut R) -> Result<Self> {
        check_encver(BF_TYPE_NAME, encver, BF_MAX_ENCVER)?;
        let size = r.unsigned("the item count")?;
        let nfilters = r.unsigned("the link count")?;
        // Each link takes at least 30 bytes of opcodes and values.
        if nfilters == 0 || nfilters > MAX_LINKS as u64 || !fits(nfilters, 30, r.remaining()) {
            return Err(Error::corrupt(format!(
                "{nfilters} links claimed (1 to {MAX_LINKS}, and no more than the value holds)"
            )));
        }
        let options = if encver >= 2 {
            r.unsigned("the options")?
        } else {
            0
        };
        let growth = if encver >= 4 {
            r.unsigned("the expansion")?
        } else {
            2
        };
        let mut links = Vec::with_capacity(nfilters as usize);
        for i in 0..nfilters {
            let entries = r.unsigned("a link's entries")?;
            let error = r.double("a link's error rate")?;
            let hashes = r.unsigned("a link's probe count")?;
            let bpe = r.double("a link's bits per entry")?;
            let (bits, n2) = if encver == 0 {
                ((entries as f64 * bpe) as u64, 0)
            } else {
                (r.unsigned("a link's bits")?, r.unsigned("a link's n2")?)
            };
            let bytes = r.buffer("a link's bits")?;
            if bytes.len() as u64 * 8 != bits {
                return Err(Error::corrupt(format!(
                    "RedisBloom link {i} claims {bits} bits but holds {} bytes",
                    bytes.len()
                )));
            }
            let link_size = r.unsigned("a link's item count")?;
            links.push(RedisBloomLink {
                entries,
                error,
                bpe,
                hashes: u32::try_from(hashes).unwrap_or(u32::MAX),
                n2: u8::try_from(n2).unwrap_or(u8::MAX),
                size: link_size,
                bytes,
            });
        }
        let chain = RedisBloomChain {
            size,
            options: u32::try_from(options).unwrap_or(u32::MAX),
            growth: u32::try_from(growth).unwrap_or(u32::MAX),
            links,
        };
        chain.validate()?;
        Ok(chain)
    }
}

impl RedisCuckooFilter {
    /// Decodes a `MBbloomCF` value as RedisBloom writes it to the RDB at encoding version
    /// `encver` (0 to 4).
    ///
    /// # Errors
    ///
    /// As [`RedisBloomValue::from_dump`], without the checksum; also a sub-filter whose size
    /// is not the one its position implies, and an item count other than the occupied
    /// slots.
    pub fn from_rdb(encver: u64, value: &[u8]) -> Result<Self> {
        let mut r = Rdb { rest: value };
        let cf = Self::from_rdb_fields(encver, &mut r)?;
        r.finish()?;
        Ok(cf)
    }

    /// Decodes a `MBbloomCF` value at encoding version `encver` from `r`, field by field.
    ///
    /// # Errors
    ///
    /// As [`from_rdb`](Self::from_rdb), and `r`'s own.
    pub fn from_rdb_fields<R: RdbFields + ?Sized>(encver: u64, r: &mut R) -> Result<Self> {
        check_encver(CF_TYPE_NAME, encver, CF_MAX_ENCVER)?;
        let num_filters = r.unsigned("the sub-filter count")?;
        let num_buckets = r.unsigned("the bucket count")?;
        let num_items = r.unsigned("the item count")?;
        let (num_deletes, bucket_size, max_iterations, expansion) = if encver < 4 {
            (0, 2, 20, 1)
        } else {
            (
                r.unsigned("the delete count")?,
                r.unsigned("the bucket size")?,
                r.unsigned("the max iterations")?,
                r.unsigned("the expansion")?,
            )
        };
        let small = |v: u64, what: &str| {
            u16::try_from(v).map_err(|_| Error::corrupt(format!("{what} {v} exceeds 65535")))
        };
        let mut cf = RedisCuckooFilter {
            num_buckets,
            num_items,
            num_deletes,
            bucket_size: small(bucket_size, "bucket size")?,
            max_iterations: small(max_iterations, "max iterations")?,
            expansion: small(expansion, "expansion")?,
            filters: Vec::new(),
        };
        // Each sub-filter takes at least 4 bytes of opcodes and lengths.
        if num_filters == 0 || num_filters > MAX_FILTERS || !fits(num_filters, 4, r.remaining()) {
            return Err(Error::corrupt(format!(
                "{num_filters} cuckoo sub-filters claimed (1 to {MAX_FILTERS}, and no more \
                 than the value holds)"
            )));
        }
        for i in 0..num_filters {
            let n = if encver < 4 {
                num_buckets
            } else {
                r.unsigned("a sub-filter's bucket count")?
            };
            cf.check_sub_filter(i, n)?;
            let data = r.buffer("a sub-filter's buckets")?;
            if data.len() as u64 != n * u64::from(cf.bucket_size) {
                return Err(Error::corrupt(format!(
                    "cuckoo sub-filter {i} holds {} bytes, not {n} buckets of {}",
                    data.len(),
                    cf.bucket_size
                )));
            }
            cf.filters.push(SubFilter {
                num_buckets: n,
                data,
            });
        }
        cf.validate()?;
        Ok(cf)
    }

    /// Sub-filter `index` must have the buckets the first one's count and the expansion
    /// give it, or its answers would not be RedisBloom's.
    fn check_sub_filter(&self, index: u64, num_buckets: u64) -> Result<()> {
        let want =
            Self::sub_filter_buckets(self.num_buckets, self.expansion, self.bucket_size, index);
        if want != Some(num_buckets) || !self.num_buckets.is_power_of_two() {
            return Err(Error::corrupt(format!(
                "cuckoo sub-filter {index} has {num_buckets} buckets where {} buckets and \
                 expansion {} imply {want:?}",
                self.num_buckets, self.expansion
            )));
        }
        Ok(())
    }
}
