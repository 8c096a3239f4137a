//! Filters held in this process, at either end of a copy: a filter file's, a stopped
//! server's (read with the server's own loading code), and one being put together from a
//! server's chunks before it is written to a file.
//!
//! Chunks are cut and put together by the command layer itself, as the hosts do: a value's
//! `LOADCHUNK` commands come from [`Value::restore_commands`] (the code that answers
//! `SCANDUMP`), and chunks are loaded by running `BF.LOADCHUNK` (or `CF.`, `AF.`) on a local
//! slot, so a file and a key hold the same bytes and only one chunk format exists.

use std::io::{self, Read, Write};
use std::path::Path;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use bloomkit::{AnyFilter, FilterKind, ScalableBloomFilter};
use bloomkit_commands::{Ctx, Defaults, FilterCommand, Unlimited, Value};
use bloomkit_server::server::Server;

use crate::error::{Context, Error, Result};
use crate::files::{self, Encode};

use super::failure::{Failure, Sink};
use super::family::{Family, Info};
use super::remote::Listing;

/// The kinds of filter file a key can be made of, for messages.
const LOADABLE_KINDS: &str = "scalable, classic or blocked (a BF key; the last two as \
                              non-scaling), cuckoo (a CF key), or a RedisBloom kind";

/// Runs one command of the command layer on a local value, as a host would.
fn run_local(args: &[&[u8]], slot: &mut Option<Value>) -> bloomkit_commands::Reply {
    let defaults = Defaults::default();
    let now = || {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64)
    };
    let ctx = Ctx {
        defaults: &defaults,
        budget: &Unlimited,
        now_ms: &now,
    };
    match FilterCommand::parse(args) {
        None => bloomkit_commands::Reply::error("ERR unknown command"),
        Some(Err(reply)) => reply,
        Some(Ok(command)) => match command.access() {
            bloomkit_commands::Access::Read => command.read(slot.as_ref(), &ctx),
            bloomkit_commands::Access::Write => command.write(slot, &ctx).reply,
        },
    }
}

/// The checked `INFO` fields of a local value, from the command layer's own `INFO`.
///
/// # Errors
///
/// [`Failure::Key`] if `INFO` fails (a value still being restored).
pub fn info(value: &Value, family: Family) -> Result<Info, Failure> {
    // INFO only reads; the slot is a copy of nothing but the reference's target.
    let defaults = Defaults::default();
    let now = || 0;
    let ctx = Ctx {
        defaults: &defaults,
        budget: &Unlimited,
        now_ms: &now,
    };
    let reply = match FilterCommand::parse(&[family.info().as_bytes(), b"key"]) {
        Some(Ok(command)) => command.read(Some(value), &ctx),
        _ => return Err(Failure::Key(format!("{} is not a command", family.info()))),
    };
    family.info_from_reply(&reply).map_err(Failure::Key)
}

/// Whether a value is a whole filter (not one still arriving by `LOADCHUNK` or `RESTORE`).
pub fn is_complete(value: &Value) -> bool {
    !matches!(value, Value::Loading(_) | Value::Importing(_))
}

/// Hands `value`'s chunks, as `SCANDUMP` would answer them, to `sink` in order; returns the
/// bytes.
///
/// # Errors
///
/// What `sink` fails with (the rest of the chunks are then skipped).
pub fn dump(value: &Value, sink: &mut Sink<'_>) -> Result<u64, Failure> {
    let mut failed = None;
    let mut bytes = 0u64;
    value.restore_commands(b"key", &mut |command| {
        if failed.is_some() {
            return;
        }
        // [LOADCHUNK, key, iterator, data], as the command layer writes it.
        let iter = command
            .get(2)
            .and_then(|i| std::str::from_utf8(i).ok())
            .and_then(|i| i.parse::<i64>().ok());
        match (iter, command.get(3)) {
            (Some(iter), Some(data)) => match sink(iter, data) {
                Ok(()) => bytes += data.len() as u64,
                Err(e) => failed = Some(e),
            },
            _ => {
                failed = Some(Failure::Key(
                    "the command layer cut a chunk without an iterator".to_string(),
                ))
            }
        }
    });
    match failed {
        Some(e) => Err(e),
        None => Ok(bytes),
    }
}

/// Reads a filter file (standard input for `-`) as the value a key of its family holds.
///
/// # Errors
///
/// The file cannot be read or is damaged; or it holds a kind no key holds (the message
/// names the kinds that load).
pub fn read_file(path: &Path) -> Result<Value> {
    let doing = || format!("cannot read filter {}", files::describe_filter(path));
    let mut bytes = Vec::new();
    if files::is_dash(path) {
        io::stdin().lock().read_to_end(&mut bytes).context(doing)?;
    } else {
        std::fs::File::open(path)
            .and_then(|mut f| f.read_to_end(&mut bytes))
            .context(doing)?;
    }
    let kind = bloomkit::format::peek_header(&bytes)
        .context(doing)?
        .map(|info| info.kind);
    let value = match kind {
        Some(FilterKind::Scalable | FilterKind::Cuckoo)
        | Some(FilterKind::RedisBloomChain | FilterKind::RedisCuckoo) => {
            Value::from_bytes(&bytes).context(doing)?
        }
        // A BF key's chain holds classic and blocked layers: the filter becomes its one
        // layer, bit for bit, in a chain that does not grow.
        Some(FilterKind::Classic | FilterKind::Blocked) => {
            let chain = match AnyFilter::from_bytes(&bytes).context(doing)? {
                AnyFilter::Classic(f) => ScalableBloomFilter::from_classic(f),
                AnyFilter::Blocked(f) => ScalableBloomFilter::from_blocked(f),
                other => {
                    return Err(Error::Message(format!(
                        "{}: the header says {} but the file holds a {} filter",
                        doing(),
                        kind.map_or("?".to_string(), |k| k.to_string()),
                        other.kind()
                    )))
                }
            };
            Value::Bloom(chain.context(doing)?)
        }
        Some(kind) => {
            return Err(Error::Message(format!(
                "{}: it holds a {kind} filter, and a key can be made of a {LOADABLE_KINDS} \
                 filter only; rebuild it with `bloomkit build --kind scalable` (or blocked, \
                 classic, cuckoo)",
                doing()
            )))
        }
        // Not a filter file: the library's reader says why, byte by byte.
        None => {
            AnyFilter::from_bytes(&bytes).context(doing)?;
            return Err(Error::Message(format!("{}: not a filter file", doing())));
        }
    };
    Ok(value)
}

/// The filter keys of a stopped server's data directory (loaded as the server loads them,
/// changing nothing), those matching `pattern`, or the one `key`: their values, in the
/// order of the listing's keys.
///
/// # Errors
///
/// The directory is in use by a running server, or damaged (the server's message); a
/// named key is missing or holds no filter.
pub fn read_data_dir(
    dir: &Path,
    key: Option<&[u8]>,
    pattern: &[u8],
) -> Result<(Vec<Arc<Value>>, Listing)> {
    let (shared, warnings) = Server::load_stopped(dir)
        .context(|| format!("cannot read the data directory '{}'", dir.display()))?;
    for warning in warnings {
        eprintln!("bloomkit: warning: {warning}");
    }
    let keyspace = shared.keyspace();
    let names = match key {
        Some(key) => vec![bytes::Bytes::copy_from_slice(key)],
        None => keyspace.keys_matching(pattern),
    };
    let mut values = Vec::new();
    let mut listing = Listing::default();
    for name in names {
        let Some(value) = keyspace.value_of(&name) else {
            if key.is_some() {
                return Err(Error::Message(format!(
                    "copy {}: no such key in the data directory '{}'",
                    String::from_utf8_lossy(&name),
                    dir.display()
                )));
            }
            continue;
        };
        match Family::of(&value) {
            Some(family) => {
                listing.keys.push((name.to_vec(), family));
                values.push((name.to_vec(), value));
            }
            None => {
                *listing
                    .skipped
                    .entry(value.type_name().to_string())
                    .or_default() += 1
            }
        }
    }
    values.sort_by(|a, b| a.0.cmp(&b.0));
    listing.keys.sort();
    Ok((values.into_iter().map(|(_, v)| v).collect(), listing))
}

/// A key's value put together from its chunks, by running `LOADCHUNK` on a local slot.
pub struct Assembler {
    family: Family,
    slot: Option<Value>,
}

impl Assembler {
    /// An empty slot for a key of `family`.
    pub fn new(family: Family) -> Assembler {
        Assembler { family, slot: None }
    }

    /// Loads one chunk.
    ///
    /// # Errors
    ///
    /// [`Failure::Key`] with the command layer's refusal (bad data, out of order).
    pub fn push(&mut self, iter: i64, data: &[u8]) -> Result<(), Failure> {
        let reply = run_local(
            &[
                self.family.loadchunk().as_bytes(),
                b"key",
                iter.to_string().as_bytes(),
                data,
            ],
            &mut self.slot,
        );
        match reply {
            bloomkit_commands::Reply::Error(e) => Err(Failure::Key(format!(
                "the chunk at iterator {iter} was refused: {e}"
            ))),
            _ => Ok(()),
        }
    }

    /// The finished value.
    ///
    /// # Errors
    ///
    /// [`Failure::Key`] if the chunks ended before the filter did.
    pub fn finish(self) -> Result<Value, Failure> {
        match self.slot {
            Some(value) if is_complete(&value) => Ok(value),
            _ => Err(Failure::Key(
                "the dump ended before the filter was complete".to_string(),
            )),
        }
    }
}

/// A value written as a filter file: its own encoding, except an aging key's, whose filter
/// alone is a file (its rotation schedule stays with the key).
pub struct AsFile(pub Value);

impl Encode for AsFile {
    fn encode_to(&self, out: &mut dyn Write) -> bloomkit::Result<()> {
        match &self.0 {
            Value::Bloom(f) => f.write_to(out),
            Value::Cuckoo(f) => f.write_to(out),
            Value::Aging(k) => k.filter().write_to(out),
            Value::RedisBloom(f) => f.write_to(out),
            Value::RedisCuckoo(f) => f.write_to(out),
            Value::Loading(_) | Value::Importing(_) => Err(bloomkit::Error::Io(io::Error::other(
                "a filter still being restored has no file form",
            ))),
        }
    }
}
