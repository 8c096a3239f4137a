//! A RedisBloom key arriving through `BF.LOADCHUNK`/`CF.LOADCHUNK` in the chunks RedisBloom's
//! own `BF.SCANDUMP`/`CF.SCANDUMP` gave: its header chunk (iterator 1, RedisBloom's packed
//! structs) and then its data chunks in iterator order. The header is checked whole before
//! anything is kept, and the key's bits grow only as chunks arrive
//! ([`bloomkit::redisbloom::ScandumpLoader`]); with the last one the key becomes a
//! [`Value::RedisBloom`] or [`Value::RedisCuckoo`], answering as it did in RedisBloom.

use std::io::{self, Write};

use bloomkit::redisbloom::{RedisBloomValue, ScandumpLoader};
use bloomkit::Error;
use bytes::Bytes;

use crate::budget::Budget;
use crate::dump::LoadError;
use crate::value::Value;

fn corrupt(reason: impl Into<String>) -> Error {
    Error::Corrupt {
        reason: reason.into(),
    }
}

/// A RedisBloom key whose `SCANDUMP` header has arrived, not yet all of its data.
#[derive(Clone, Debug, PartialEq)]
pub struct ImportingDump {
    /// The header chunk as it arrived, kept to store and replay the key.
    header: Vec<u8>,
    loader: ScandumpLoader,
}

impl ImportingDump {
    /// What a stored importing key starts with (neither bloomkit's filter magic nor a
    /// partial dump's).
    pub const MAGIC: [u8; 8] = *b"\x89BKR\r\n\x1a\n";

    /// Whether `chunk` is bloomkit's own encoding (a filter file, an aging key, or either's
    /// `SCANDUMP` from a bloomkit host) rather than RedisBloom's header chunk.
    pub(crate) fn is_bloomkit(chunk: &[u8]) -> bool {
        chunk.starts_with(&bloomkit::format::MAGIC[..4])
            || chunk.starts_with(&crate::aging::MAGIC[..4])
    }

    /// Starts a key from RedisBloom's header chunk, admitting the bytes it announces to the
    /// memory budget first.
    pub(crate) fn start(
        cuckoo: bool,
        header: &[u8],
        budget: &dyn Budget,
    ) -> Result<ImportingDump, LoadError> {
        let loader = Self::loader(cuckoo, header).map_err(|_| LoadError::BadData)?;
        let total = usize::try_from(loader.expected_bytes()).unwrap_or(usize::MAX);
        if !budget.within_maxmemory(total) {
            return Err(LoadError::Oom);
        }
        if budget.machine_available().is_some_and(|a| total > a) {
            return Err(LoadError::Insufficient);
        }
        Ok(ImportingDump {
            header: header.to_vec(),
            loader,
        })
    }

    fn loader(cuckoo: bool, header: &[u8]) -> bloomkit::Result<ScandumpLoader> {
        if cuckoo {
            ScandumpLoader::cuckoo(header)
        } else {
            ScandumpLoader::bloom(header)
        }
    }

    /// Whether a cuckoo key (`CF.*`) is arriving.
    pub fn is_cuckoo(&self) -> bool {
        self.loader.is_cuckoo()
    }

    /// Bytes held: the header and the data received.
    pub fn memory_bytes(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.header.capacity()
            + usize::try_from(self.loader.received_bytes()).unwrap_or(usize::MAX)
    }

    /// Takes the data chunk `SCANDUMP` gave with `iter`; the finished key once the last
    /// one is in.
    pub(crate) fn push(&mut self, iter: i64, chunk: &[u8]) -> Result<Option<Value>, LoadError> {
        self.loader
            .push(iter, chunk)
            .map_err(|_| LoadError::BadData)?;
        if !self.loader.is_complete() {
            return Ok(None);
        }
        match self.loader.clone().finish() {
            Ok(RedisBloomValue::Bloom(chain)) => Ok(Some(Value::RedisBloom(chain))),
            Ok(RedisBloomValue::Cuckoo(filter)) => Ok(Some(Value::RedisCuckoo(filter))),
            _ => Err(LoadError::Corrupt),
        }
    }

    /// The `LOADCHUNK` commands that rebuild this key where it is missing: the header with
    /// iterator 1, then the data received, one link or sub-filter a chunk.
    pub(crate) fn restore_commands(&self, key: &[u8], emit: &mut dyn FnMut(Vec<Bytes>)) {
        let name: &'static [u8] = if self.is_cuckoo() {
            b"CF.LOADCHUNK"
        } else {
            b"BF.LOADCHUNK"
        };
        let command = |iter: u64, data: &[u8]| {
            vec![
                Bytes::from_static(name),
                Bytes::copy_from_slice(key),
                Bytes::from(iter.to_string()),
                Bytes::copy_from_slice(data),
            ]
        };
        emit(command(1, &self.header));
        let mut end = 0u64;
        for part in self.loader.received_parts() {
            end += part.len() as u64;
            emit(command(end + 1, part));
        }
    }

    /// The length of what [`write_to`](Self::write_to) writes.
    pub(crate) fn stored_len(&self) -> usize {
        let parts = self.loader.received_parts();
        8 + 1 + 4 + self.header.len() + 4 + parts.iter().map(|p| 8 + p.len()).sum::<usize>()
    }

    /// The key as a snapshot stores it: [`MAGIC`](Self::MAGIC), 1 for cuckoo (else 0), the
    /// header's length (4 bytes) and the header, the number of parts received (4 bytes),
    /// then each part's length (8 bytes) and bytes; little-endian. (The snapshot file
    /// checksums its records; reading checks the header and parts as `LOADCHUNK` does.)
    pub(crate) fn write_to<W: Write>(&self, mut w: W) -> io::Result<()> {
        w.write_all(&Self::MAGIC)?;
        w.write_all(&[u8::from(self.is_cuckoo())])?;
        w.write_all(&(self.header.len() as u32).to_le_bytes())?;
        w.write_all(&self.header)?;
        let parts = self.loader.received_parts();
        w.write_all(&(parts.len() as u32).to_le_bytes())?;
        for part in parts {
            w.write_all(&(part.len() as u64).to_le_bytes())?;
            w.write_all(part)?;
        }
        Ok(())
    }

    /// Reads what its `write_to` wrote (a stored importing key).
    ///
    /// # Errors
    ///
    /// [`Error::BadMagic`] without the magic, [`Error::Truncated`] for a cut record,
    /// [`Error::Corrupt`] for a header or parts `LOADCHUNK` would refuse.
    pub fn from_bytes(bytes: &[u8]) -> bloomkit::Result<ImportingDump> {
        let mut rest = bytes.strip_prefix(&Self::MAGIC).ok_or(Error::BadMagic)?;
        let mut take = |n: usize| -> bloomkit::Result<&[u8]> {
            let (head, tail) = rest.split_at_checked(n).ok_or(Error::Truncated)?;
            rest = tail;
            Ok(head)
        };
        let cuckoo = match take(1)?[0] {
            0 => false,
            1 => true,
            other => return Err(corrupt(format!("importing key family {other}"))),
        };
        let header_len = u32::from_le_bytes(take(4)?.try_into().expect("4 bytes")) as usize;
        let header = take(header_len)?;
        let mut dump = ImportingDump {
            header: header.to_vec(),
            loader: Self::loader(cuckoo, header)?,
        };
        let parts = u32::from_le_bytes(take(4)?.try_into().expect("4 bytes"));
        let mut end = 0u64;
        for _ in 0..parts {
            let len = u64::from_le_bytes(take(8)?.try_into().expect("8 bytes"));
            let part = take(usize::try_from(len).map_err(|_| Error::Truncated)?)?;
            end = end.saturating_add(len);
            let iter = i64::try_from(end + 1).map_err(|_| corrupt("part too long"))?;
            dump.loader.push(iter, part)?;
        }
        if dump.loader.is_complete() || !rest.is_empty() {
            return Err(corrupt(
                "an importing key's record is complete or has bytes after its parts",
            ));
        }
        Ok(dump)
    }
}
