//! A server at either end of a copy: its filter keys, their chunks (`SCANDUMP`), loading
//! chunks under a temporary name (`LOADCHUNK`), and putting the finished key in place.

use std::collections::{BTreeMap, HashSet};

use super::endpoint::ServerAddr;
use super::failure::{Failure, Sink};
use super::family::{Family, Info};
use super::resp::{Frame, RespClient, RespError};

/// Keys asked for per `SCAN` step (a hint to the server).
const SCAN_COUNT: &[u8] = b"1000";

/// The filter keys `SCAN` found, and how many keys of other types it passed over.
#[derive(Debug, Default)]
pub struct Listing {
    /// Filter keys and their families, sorted by key.
    pub keys: Vec<(Vec<u8>, Family)>,
    /// Keys of other types, by type name.
    pub skipped: BTreeMap<String, u64>,
}

/// A connected server.
pub struct Remote {
    client: RespClient,
}

impl Remote {
    /// Connects (and authenticates) to `addr`.
    ///
    /// # Errors
    ///
    /// As [`RespClient::connect`].
    pub fn connect(addr: &ServerAddr) -> Result<Remote, RespError> {
        Ok(Remote {
            client: RespClient::connect(addr)?,
        })
    }

    /// `host:port`, for messages.
    pub fn name(&self) -> &str {
        self.client.server()
    }

    /// Every key matching the glob `pattern`, walked with `SCAN MATCH`, each key's type
    /// asked with `TYPE` in one pipelined batch per step. (`SCAN ... TYPE` would skip the
    /// other types unseen, where the summary counts them.)
    ///
    /// # Errors
    ///
    /// The connection failed, or the server refused `SCAN` (the message says so).
    pub fn list(&mut self, pattern: &[u8]) -> Result<Listing, Failure> {
        let mut seen = HashSet::new();
        let mut listing = Listing::default();
        let mut cursor = b"0".to_vec();
        loop {
            let reply = self
                .client
                .command(&[b"SCAN", &cursor, b"MATCH", pattern, b"COUNT", SCAN_COUNT])?;
            let (next, keys) = match reply {
                Frame::Array(Some(mut parts)) if parts.len() == 2 => {
                    let keys = parts.pop();
                    let next = parts.pop();
                    match (next, keys) {
                        (Some(Frame::Bulk(Some(next))), Some(Frame::Array(Some(keys)))) => {
                            (next, keys)
                        }
                        _ => return Err(self.unexpected("SCAN", "[cursor, [keys...]]")),
                    }
                }
                Frame::Error(e) => {
                    return Err(Failure::Key(format!(
                        "{} refused SCAN: {e}",
                        self.client.server()
                    )))
                }
                _ => return Err(self.unexpected("SCAN", "[cursor, [keys...]]")),
            };
            // SCAN may return a key more than once.
            let keys: Vec<Vec<u8>> = keys
                .into_iter()
                .filter_map(|k| match k {
                    Frame::Bulk(Some(k)) => Some(k),
                    _ => None,
                })
                .filter(|k| seen.insert(k.clone()))
                .collect();
            for key in &keys {
                self.client.send(&[b"TYPE", key])?;
            }
            self.client.flush()?;
            for key in keys {
                let type_name = match self.client.read()? {
                    Frame::Simple(t) => t,
                    other => {
                        return Err(Failure::Key(format!(
                            "{} answered TYPE {} with {}",
                            self.client.server(),
                            String::from_utf8_lossy(&key),
                            other.describe()
                        )))
                    }
                };
                match Family::from_type_name(type_name.as_bytes()) {
                    Some(family) => listing.keys.push((key, family)),
                    // Deleted since SCAN saw it.
                    None if type_name == "none" => {}
                    None => *listing.skipped.entry(type_name).or_default() += 1,
                }
            }
            if next == b"0" {
                break;
            }
            cursor = next;
        }
        listing.keys.sort();
        Ok(listing)
    }

    /// The family of `key`, from `TYPE`.
    ///
    /// # Errors
    ///
    /// [`Failure::Key`] if the key is missing or holds no filter.
    pub fn family_of(&mut self, key: &[u8]) -> Result<Family, Failure> {
        match self.client.command(&[b"TYPE", key])? {
            Frame::Simple(t) if t == "none" => Err(Failure::Key(format!(
                "no such key at {}",
                self.client.server()
            ))),
            Frame::Simple(t) => Family::from_type_name(t.as_bytes()).ok_or_else(|| {
                Failure::Key(format!(
                    "it holds a {t}, not a filter (BF, CF or AF) at {}",
                    self.client.server()
                ))
            }),
            _ => Err(self.unexpected("TYPE", "a type name")),
        }
    }

    /// Whether the server knows the command `name` (`COMMAND INFO`): bloomkit's own `AF.*`
    /// are known only to `bloomkit serve` and the bloomkit module.
    ///
    /// # Errors
    ///
    /// The connection failed.
    pub fn knows(&mut self, name: &str) -> Result<bool, Failure> {
        Ok(matches!(
            self.client.command(&[b"COMMAND", b"INFO", name.as_bytes()])?,
            Frame::Array(Some(items)) if items.first().is_some_and(|i| matches!(i, Frame::Array(Some(_))))
        ))
    }

    /// The checked `INFO` fields of `key`.
    ///
    /// # Errors
    ///
    /// [`Failure::Key`] if the server refuses `INFO` or lacks a field.
    pub fn info(&mut self, key: &[u8], family: Family) -> Result<Info, Failure> {
        let reply = self.client.command(&[family.info().as_bytes(), key])?;
        if let Frame::Error(e) = &reply {
            return Err(Failure::Key(format!(
                "{} answered {} with '{e}'",
                self.client.server(),
                family.info()
            )));
        }
        family.info_from_frame(&reply).map_err(Failure::Key)
    }

    /// Dumps `key` chunk by chunk (`SCANDUMP` from iterator 0 until it answers 0), handing
    /// each `(iterator, bytes)` to `sink` before asking for the next, so only one chunk is
    /// held at a time; returns the bytes dumped.
    ///
    /// # Errors
    ///
    /// [`Failure::Key`] if the server refuses a chunk or answers out of order; whatever
    /// `sink` fails with.
    pub fn dump(
        &mut self,
        key: &[u8],
        family: Family,
        sink: &mut Sink<'_>,
    ) -> Result<u64, Failure> {
        let mut iter: i64 = 0;
        let mut bytes = 0u64;
        loop {
            let reply = self.client.command(&[
                family.scandump().as_bytes(),
                key,
                iter.to_string().as_bytes(),
            ])?;
            let (next, data) = match reply {
                Frame::Array(Some(mut parts)) if parts.len() == 2 => {
                    let data = parts.pop();
                    let next = parts.pop().and_then(|n| n.as_integer());
                    match (next, data) {
                        (Some(next), Some(Frame::Bulk(data))) => (next, data),
                        _ => return Err(self.unexpected(family.scandump(), "[iterator, data]")),
                    }
                }
                Frame::Error(e) => {
                    return Err(Failure::Key(format!(
                        "{} answered {} with '{e}'",
                        self.client.server(),
                        family.scandump()
                    )))
                }
                _ => return Err(self.unexpected(family.scandump(), "[iterator, data]")),
            };
            if next == 0 {
                return Ok(bytes);
            }
            // Iterators only grow: a server that answers otherwise would loop forever.
            let data = match data {
                Some(data) if next > iter => data,
                _ => {
                    return Err(Failure::Key(format!(
                        "{} answered {} {iter} with iterator {next}, which does not follow it",
                        self.client.server(),
                        family.scandump()
                    )))
                }
            };
            sink(next, &data)?;
            bytes += data.len() as u64;
            iter = next;
        }
    }

    /// `LOADCHUNK key iter data`.
    ///
    /// # Errors
    ///
    /// [`Failure::Key`] with the server's refusal.
    pub fn load(
        &mut self,
        key: &[u8],
        family: Family,
        iter: i64,
        data: &[u8],
    ) -> Result<(), Failure> {
        match self.client.command(&[
            family.loadchunk().as_bytes(),
            key,
            iter.to_string().as_bytes(),
            data,
        ])? {
            Frame::Error(e) => Err(Failure::Key(format!(
                "{} answered {} with '{e}'",
                self.client.server(),
                family.loadchunk()
            ))),
            _ => Ok(()),
        }
    }

    /// Whether `key` exists.
    ///
    /// # Errors
    ///
    /// The connection failed.
    pub fn exists(&mut self, key: &[u8]) -> Result<bool, Failure> {
        match self.client.command(&[b"EXISTS", key])? {
            Frame::Integer(n) => Ok(n > 0),
            _ => Err(self.unexpected("EXISTS", "an integer")),
        }
    }

    /// Deletes `key` (nothing if it is missing).
    ///
    /// # Errors
    ///
    /// The connection failed, or `DEL` was refused.
    pub fn delete(&mut self, key: &[u8]) -> Result<(), Failure> {
        match self.client.command(&[b"DEL", key])? {
            Frame::Integer(_) => Ok(()),
            Frame::Error(e) => Err(Failure::Key(format!(
                "{} refused DEL: {e}",
                self.client.server()
            ))),
            _ => Err(self.unexpected("DEL", "an integer")),
        }
    }

    /// Moves the finished copy at `temp` to `key`: over what `key` holds with `replace`
    /// (`RENAME`), else only if `key` is still missing (`RENAME` in a transaction that a
    /// `WATCH` on `key` cancels if it appears; Redis has `RENAMENX`, `bloomkit serve` does
    /// not). The temporary key is removed on failure.
    ///
    /// # Errors
    ///
    /// [`Failure::Key`] if `key` exists (without `replace`) or the rename is refused.
    pub fn put_in_place(&mut self, temp: &[u8], key: &[u8], replace: bool) -> Result<(), Failure> {
        let renamed = if replace {
            match self.client.command(&[b"RENAME", temp, key])? {
                Frame::Error(e) => Err(format!("RENAME was refused: {e}")),
                _ => Ok(()),
            }
        } else {
            self.rename_if_missing(temp, key)?
        };
        renamed.or_else(|why| {
            self.delete(temp)?;
            Err(Failure::Key(why))
        })
    }

    fn rename_if_missing(
        &mut self,
        temp: &[u8],
        key: &[u8],
    ) -> Result<Result<(), String>, Failure> {
        let exists_now = || {
            "it was created at the destination while the copy ran; give --replace to \
             overwrite it"
                .to_string()
        };
        if let Frame::Error(e) = self.client.command(&[b"WATCH", key])? {
            return Ok(Err(format!("WATCH was refused: {e}")));
        }
        if self.exists(key)? {
            self.client.command(&[b"UNWATCH"])?;
            return Ok(Err(exists_now()));
        }
        self.client.send(&[b"MULTI"])?;
        self.client.send(&[b"RENAME", temp, key])?;
        self.client.send(&[b"EXEC"])?;
        self.client.flush()?;
        let multi = self.client.read()?;
        let queued = self.client.read()?;
        let exec = self.client.read()?;
        Ok(match (multi, queued, exec) {
            (_, _, Frame::Array(None)) => Err(exists_now()),
            (_, _, Frame::Array(Some(results))) => match results.first() {
                Some(Frame::Error(e)) => Err(format!("RENAME was refused: {e}")),
                Some(_) => Ok(()),
                None => Err("the transaction that renames it ran nothing".to_string()),
            },
            (Frame::Error(e), _, _) | (_, Frame::Error(e), _) | (_, _, Frame::Error(e)) => {
                Err(format!("the transaction that renames it was refused: {e}"))
            }
            (_, _, other) => Err(format!("EXEC answered {}", other.describe())),
        })
    }

    fn unexpected(&self, command: &str, expected: &str) -> Failure {
        Failure::Fatal(crate::error::Error::Message(format!(
            "{} answered {command} with something other than {expected}; is it a Redis-protocol \
             server with RedisBloom's commands?",
            self.client.server()
        )))
    }
}
