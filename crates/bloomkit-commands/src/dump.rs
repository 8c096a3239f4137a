//! `SCANDUMP` and `LOADCHUNK`, shared by `BF.*`, `CF.*` and `AF.*`: a value's encoding (a
//! filter's bloomkit encoding; for an aging key, [`AgingKey`](crate::aging::AgingKey)'s,
//! whose header is its fixed fields and its filter's header) cut into chunks, and put back
//! together.
//!
//! Clients treat chunks as opaque (redis-py's loop: `SCANDUMP` from iterator 0 until it
//! answers 0, then `LOADCHUNK` every `(iterator, data)` pair in order, with no end message),
//! so the chunks are simply slices of the filter's file encoding (`docs/FORMAT.md`):
//!
//! * iterator 0 answers `[1, header]`: the encoding's header (magic, kind, parameters,
//!   payload length), which says how long the whole encoding is;
//! * iterator `i ≥ 1` answers the bytes from `header + i − 1`, at most 16 MiB, with the
//!   iterator `i + len` (RedisBloom's arithmetic: the iterator is one past the chunk's end,
//!   counted after the header);
//! * past the end: `[0, ""]` for `BF`, `[0, nil]` for `CF`.
//!
//! `LOADCHUNK` with iterator 1 and a header creates a [`Value::Loading`] key, once the
//! memory budget admits the encoding's length. Later chunks must follow in order; each is
//! appended as it arrives, so memory grows only with the data received. The chunk that
//! completes the encoding decodes it with bloomkit's reader, which checks every field and
//! the checksum: a damaged or hostile dump is refused and its key removed, never built.
//! A dump taken while the filter changed between `SCANDUMP` calls fails the same way, where
//! RedisBloom would silently load a mixture.

use std::io::{self, Write};

use bloomkit::redisbloom::CF_TYPE_NAME;
use bloomkit::FilterKind;
use bytes::Bytes;
use smallvec::smallvec;

use crate::args::parse_i64;
use crate::budget::Budget;
use crate::errors::{INSUFFICIENT_MEMORY, ITER_NOT_NUMERIC, OOM};
use crate::importing::ImportingDump;
use crate::reply::Reply;
use crate::run::{Args, Outcome, Record};
use crate::shared::verbatim;
use crate::value::{peek_header, Header, PartialDump, Value, AGING_TYPE_NAME, MAX_HEADER_BYTES};

/// The largest chunk `SCANDUMP` answers: RedisBloom's `MAX_SCANDUMP_SIZE`.
pub(crate) const MAX_CHUNK_BYTES: usize = 16 << 20;

/// `LOADCHUNK key iter data`'s iterator, as `BF.LOADCHUNK` and `AF.LOADCHUNK` read it
/// (`CF.LOADCHUNK` refuses more, in its own words): a number, else RedisBloom's refusal.
pub(crate) fn loadchunk_iter(args: Args<'_>) -> Result<i64, Reply> {
    parse_i64(args[2]).ok_or_else(|| Reply::error(ITER_NOT_NUMERIC))
}

/// The `SCANDUMP key iter` and `LOADCHUNK key iter data` parsers of `BF.*` and `AF.*`, written
/// once for both: `$build(args, op)` makes the family's `$command` from its `Op`, which has
/// `ScanDump(Option<i64>)` (an iterator that is not a number is refused when the command
/// runs, after the key's checks, in RedisBloom's order) and `LoadChunk { iter, data, args }`
/// (refused here: [`loadchunk_iter`]). Expanded inside each family's `parse` module, whose
/// names (`Args`, `LazyOrigin`, `Op`, `parse_i64`) it uses.
macro_rules! dump_parsers {
    ($command:ident, $build:ident) => {
        pub(crate) fn scandump<'a>(
            args: Args<'a>,
            _: LazyOrigin<'_>,
        ) -> Result<$command<'a>, Reply> {
            Ok($build(args, Op::ScanDump(parse_i64(args[2]))))
        }

        pub(crate) fn loadchunk<'a>(
            args: Args<'a>,
            _: LazyOrigin<'_>,
        ) -> Result<$command<'a>, Reply> {
            let iter = $crate::dump::loadchunk_iter(args)?;
            Ok($build(
                args,
                Op::LoadChunk {
                    iter,
                    data: args[3],
                    args,
                },
            ))
        }
    };
}
pub(crate) use dump_parsers;

/// A writer that keeps the bytes of `[start, end)` of what is written through it, and stops
/// the writing (with an error the caller ignores) once past `end`, so a window near the start
/// of a large filter costs little.
struct Window {
    start: u64,
    end: u64,
    pos: u64,
    out: Vec<u8>,
}

impl Write for Window {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.pos >= self.end && !buf.is_empty() {
            return Err(io::Error::other("window complete"));
        }
        let buf_start = self.pos;
        let buf_end = buf_start + buf.len() as u64;
        let lo = self.start.max(buf_start);
        let hi = self.end.min(buf_end);
        if lo < hi {
            self.out
                .extend_from_slice(&buf[(lo - buf_start) as usize..(hi - buf_start) as usize]);
        }
        self.pos = buf_end;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Bytes `[start, start + len)` of `value`'s encoding (fewer past its end).
fn window(value: &Value, start: u64, len: usize) -> Vec<u8> {
    let mut w = Window {
        start,
        end: start.saturating_add(len as u64),
        pos: 0,
        out: Vec::with_capacity(len),
    };
    // The only error is the window's own "complete", which ends the writing early.
    let _ = match value {
        Value::Bloom(f) => f.write_to(&mut w),
        Value::Cuckoo(f) => f.write_to(&mut w),
        Value::Aging(k) => k.write_to(&mut w),
        Value::Loading(d) => w.write_all(d.received()).map_err(bloomkit::Error::Io),
        Value::RedisBloom(f) => f.write_to(&mut w),
        Value::RedisCuckoo(f) => f.write_to(&mut w),
        // Not a bloomkit encoding; SCANDUMP refuses a key still arriving before this.
        Value::Importing(_) => Ok(()),
    };
    w.out
}

/// The header of `value`'s encoding, and what it says.
fn header(value: &Value) -> Option<(Vec<u8>, Header)> {
    let mut head = window(value, 0, MAX_HEADER_BYTES as usize);
    let info = peek_header(&head).ok()??;
    head.truncate(info.header_len);
    Some((head, info))
}

/// What `SCANDUMP` answers for one iterator.
#[derive(Debug, PartialEq)]
pub(crate) enum Chunk {
    /// Iterator 0: the header, to be loaded with iterator 1.
    Header(Vec<u8>),
    /// The bytes for an iterator, and the iterator to load them with (and to ask next).
    Data {
        /// The next iterator.
        next: i64,
        /// The bytes.
        bytes: Vec<u8>,
    },
    /// Past the end.
    End,
    /// A chunk the budget did not admit (answer `OOM`).
    Refused,
}

/// `BF.SCANDUMP`'s (and `AF.SCANDUMP`'s) answer past the end: `[0, ""]`.
pub(crate) fn bloom_end() -> Reply {
    Reply::Array(vec![Reply::Integer(0), Reply::bulk(Bytes::new())])
}

impl Chunk {
    /// The chunk as `SCANDUMP` answers it: `[iterator, bytes]`, `end` past the end (`BF`'s
    /// `[0, ""]`, `CF`'s `[0, nil]`), `OOM` for a refused chunk.
    pub(crate) fn into_reply(self, end: impl FnOnce() -> Reply) -> Reply {
        match self {
            Chunk::Header(bytes) => Reply::Array(vec![Reply::Integer(1), Reply::bulk(bytes)]),
            Chunk::Data { next, bytes } => {
                Reply::Array(vec![Reply::Integer(next), Reply::bulk(bytes)])
            }
            Chunk::End => end(),
            Chunk::Refused => Reply::error(OOM),
        }
    }
}

/// `SCANDUMP value iter` (a finished filter), built only if `budget` admits its size.
pub(crate) fn scandump(value: &Value, iter: i64, budget: &dyn Budget) -> Chunk {
    let Some((head, info)) = header(value) else {
        return Chunk::End;
    };
    if iter == 0 {
        return Chunk::Header(head);
    }
    // RedisBloom answers the end for negative iterators too (checked: `i64::MIN - 1`
    // would overflow).
    let Some(start) = iter
        .checked_sub(1)
        .and_then(|i| u64::try_from(i).ok())
        .and_then(|i| i.checked_add(info.header_len as u64))
        .filter(|&s| s < info.encoded_len)
    else {
        return Chunk::End;
    };
    let len = (info.encoded_len - start).min(MAX_CHUNK_BYTES as u64) as usize;
    if !budget.admits_reply(len) {
        return Chunk::Refused;
    }
    let bytes = window(value, start, len);
    Chunk::Data {
        next: iter + bytes.len() as i64,
        bytes,
    }
}

/// Cuts an encoding, as it is written through it, into the `LOADCHUNK` commands that restore
/// it: the header (iterator 1) first, then chunks of at most [`MAX_CHUNK_BYTES`], each with
/// the iterator `SCANDUMP` would have answered with it.
struct Restore<'a> {
    name: &'static str,
    key: &'a [u8],
    header_len: usize,
    /// Bytes of the encoding after the header already emitted.
    emitted_after_header: u64,
    /// Whether the header has been emitted.
    header_done: bool,
    pending: Vec<u8>,
    emit: &'a mut dyn FnMut(Vec<Bytes>),
}

impl Restore<'_> {
    fn flush(&mut self) {
        let iter = if self.header_done {
            self.emitted_after_header += self.pending.len() as u64;
            // One past the chunk's end, counted after the header.
            self.emitted_after_header + 1
        } else {
            self.header_done = true;
            1
        };
        let chunk = Bytes::from(std::mem::take(&mut self.pending));
        (self.emit)(vec![
            Bytes::from_static(self.name.as_bytes()),
            Bytes::copy_from_slice(self.key),
            Bytes::from(iter.to_string()),
            chunk,
        ]);
    }

    /// How many more bytes the pending command takes.
    fn room(&self) -> usize {
        let limit = if self.header_done {
            MAX_CHUNK_BYTES
        } else {
            self.header_len
        };
        limit - self.pending.len()
    }
}

impl Write for Restore<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut rest = buf;
        while !rest.is_empty() {
            if self.pending.capacity() == 0 {
                self.pending.reserve_exact(self.room());
            }
            let take = self.room().min(rest.len());
            self.pending.extend_from_slice(&rest[..take]);
            rest = &rest[take..];
            if self.room() == 0 {
                self.flush();
            }
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

// `SCANDUMP`'s other use: the commands that rebuild a value where its key is missing. Here
// rather than in value.rs, beside the chunking it shares with `SCANDUMP`.
impl Value {
    /// Hands `emit` the commands that rebuild this value under `key` where the key is
    /// missing, in order: `BF.LOADCHUNK`/`CF.LOADCHUNK` with the encoding's header, then with
    /// the rest of it in chunks of at most 16 MiB, each cut as the encoding is written (a
    /// large filter is never held twice). What a host writes for an append-only file's
    /// rewrite: parsed as logged commands
    /// ([`FilterCommand::parse_logged`](crate::FilterCommand::parse_logged)) and run on a
    /// missing key, they give a value equal to this one, a filter still being restored
    /// included (with the bytes it has received).
    ///
    /// # Examples
    ///
    /// ```
    /// use bloomkit::ScalableBloomFilter;
    /// use bloomkit_commands::{Ctx, Defaults, FilterCommand, Unlimited, Value};
    /// use bytes::Bytes;
    ///
    /// let mut filter = ScalableBloomFilter::new(100, 0.01).unwrap();
    /// filter.insert("apple").unwrap();
    /// let value = Value::Bloom(filter);
    /// let key = Bytes::from_static(b"fruit");
    /// let mut commands = Vec::new();
    /// value.restore_commands(&key, &mut |command| commands.push(command));
    /// assert_eq!(commands.len(), 2); // the header, then the rest
    /// assert_eq!(commands[0][0], "BF.LOADCHUNK");
    ///
    /// let defaults = Defaults::default();
    /// let ctx = Ctx { defaults: &defaults, budget: &Unlimited, now_ms: &|| 0 };
    /// let mut slot = None;
    /// for command in &commands {
    ///     let words: Vec<&[u8]> = command.iter().map(|w| &w[..]).collect();
    ///     let command = FilterCommand::parse_logged(&words).unwrap().unwrap();
    ///     assert!(!command.write(&mut slot, &ctx).reply.is_error());
    /// }
    /// assert_eq!(slot, Some(value));
    /// ```
    pub fn restore_commands(&self, key: &[u8], emit: &mut dyn FnMut(Vec<Bytes>)) {
        if let Value::Importing(importing) = self {
            return importing.restore_commands(key, emit);
        }
        let Some((_, info)) = header(self) else {
            return;
        };
        let name = match self.type_name() {
            CF_TYPE_NAME => "CF.LOADCHUNK",
            AGING_TYPE_NAME => "AF.LOADCHUNK",
            _ => "BF.LOADCHUNK",
        };
        let mut restore = Restore {
            name,
            key,
            header_len: info.header_len,
            emitted_after_header: 0,
            header_done: false,
            pending: Vec::new(),
            emit,
        };
        // Writing into `Restore` cannot fail.
        let _ = match self {
            Value::Bloom(f) => f.write_to(&mut restore).map_err(|_| ()),
            Value::Cuckoo(f) => f.write_to(&mut restore).map_err(|_| ()),
            Value::Aging(k) => k.write_to(&mut restore).map_err(|_| ()),
            Value::Loading(d) => restore.write_all(d.received()).map_err(|_| ()),
            Value::RedisBloom(f) => f.write_to(&mut restore).map_err(|_| ()),
            Value::RedisCuckoo(f) => f.write_to(&mut restore).map_err(|_| ()),
            Value::Importing(_) => Ok(()),
        };
        if !restore.pending.is_empty() {
            restore.flush();
        }
    }
}

/// Why a `LOADCHUNK` was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LoadError {
    /// Not a header, or an iterator that cannot hold the chunk.
    BadData,
    /// A header of a filter kind the key's family does not hold (a file of another kind).
    WrongKind {
        /// The kind the header names.
        found: FilterKind,
    },
    /// The chunk starts past the encoding's end.
    NoLink,
    /// The chunk runs past the encoding's end.
    TooBig,
    /// The chunk starts past the bytes received so far: one before it is missing.
    Gap,
    /// The chunk covers bytes already received (or a finished filter's) and differs from
    /// them: it belongs to another dump.
    Mismatch,
    /// Past `--maxmemory`.
    Oom,
    /// More than the machine has, or the allocator refused.
    Insufficient,
    /// The last chunk arrived and the whole does not decode: the key was removed.
    Corrupt,
}

impl LoadError {
    /// `BF.LOADCHUNK`'s answer: always one of RedisBloom's strings (docs/SERVER.md lists
    /// which case answers which). RedisBloom itself copies a chunk wherever its iterator
    /// points; the cases it cannot tell, a chunk after a missing one and one whose bytes
    /// are not the dump's, answer its texts for an offset with no place in the filter and
    /// for bytes that are not a filter's.
    pub(crate) fn bloom_reply(self) -> Reply {
        if let LoadError::WrongKind { found } = self {
            // RedisBloom's text first, for clients that match it; then which kinds load.
            return Reply::error(format!(
                "ERR received bad data: the chunk starts {} {found} filter, and a BF key \
                 loads scalable filters only (what BF.SCANDUMP of a BF key, or bloomkit build \
                 --kind scalable, writes); CF.LOADCHUNK loads cuckoo filters",
                article(found)
            ));
        }
        Reply::error(match self {
            LoadError::BadData
            | LoadError::WrongKind { .. }
            | LoadError::Mismatch
            | LoadError::Corrupt => "ERR received bad data",
            LoadError::NoLink | LoadError::Gap => "ERR invalid offset - no link found",
            LoadError::TooBig => "ERR invalid chunk - Too big for current filter",
            LoadError::Oom => OOM,
            LoadError::Insufficient => INSUFFICIENT_MEMORY,
        })
    }

    /// `CF.LOADCHUNK`'s answer for a header (iterator 1).
    pub(crate) fn cuckoo_header_reply(self) -> Reply {
        match self {
            LoadError::WrongKind { found } => Reply::error(format!(
                "Invalid header: the chunk starts {} {found} filter, and a CF key loads cuckoo \
                 filters only (what CF.SCANDUMP writes); BF.LOADCHUNK loads scalable filters",
                article(found)
            )),
            LoadError::Oom => Reply::error(OOM),
            LoadError::Insufficient => Reply::error(INSUFFICIENT_MEMORY),
            _ => Reply::error("Invalid header"),
        }
    }

    /// `CF.LOADCHUNK`'s answer for a later chunk: RedisBloom has one string for them all.
    pub(crate) fn cuckoo_chunk_reply(self) -> Reply {
        match self {
            LoadError::Oom => Reply::error(OOM),
            LoadError::Insufficient => Reply::error(INSUFFICIENT_MEMORY),
            _ => Reply::error("Couldn't load chunk!"),
        }
    }
}

/// "a" or "an" before a kind's name.
fn article(kind: FilterKind) -> &'static str {
    if kind.name().starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    }
}

/// The first chunk of a dump of `kind`, for a missing key: the value to store.
pub(crate) fn start(
    kind: FilterKind,
    header: &[u8],
    budget: &dyn Budget,
) -> Result<Value, LoadError> {
    // RedisBloom's own header chunk (not bloomkit's encoding): a key imported as it arrives.
    // An aging key has no RedisBloom counterpart to import.
    if kind != FilterKind::Aging && !ImportingDump::is_bloomkit(header) {
        let cuckoo = kind == FilterKind::Cuckoo;
        return ImportingDump::start(cuckoo, header, budget).map(|d| Value::Importing(Box::new(d)));
    }
    // A filter file of another kind says which it is before anything else is checked.
    if let Ok(Some(info)) = peek_header(header) {
        // An imported key's own dump (a RedisBloom kind) restores under its family's commands.
        let imported = match kind {
            FilterKind::Cuckoo => Some(FilterKind::RedisCuckoo),
            FilterKind::Aging => None,
            _ => Some(FilterKind::RedisBloomChain),
        };
        if info.kind != kind && Some(info.kind) != imported {
            return Err(LoadError::WrongKind { found: info.kind });
        }
    }
    let dump = PartialDump::new(header).map_err(|_| LoadError::BadData)?;
    // The whole encoding will be held, then decoded: ask for it now rather than fail half
    // way through a large restore.
    let total = usize::try_from(dump.encoded_len()).unwrap_or(usize::MAX);
    if !budget.within_maxmemory(total) {
        return Err(LoadError::Oom);
    }
    if budget.machine_available().is_some_and(|a| total > a) {
        return Err(LoadError::Insufficient);
    }
    Ok(Value::Loading(dump))
}

/// A chunk after the header ([`load`]) as its command's outcome, for either family (`reply`
/// words a [`LoadError`] as the family does): logged verbatim (under `name`, from `args`,
/// the command's arguments) when it changed the key.
pub(crate) fn load_outcome<'c>(
    slot: &mut Option<Value>,
    name: &'static str,
    iter: i64,
    data: &[u8],
    args: Args<'c>,
    budget: &dyn Budget,
    reply: fn(LoadError) -> Reply,
) -> Outcome<'c> {
    match load(slot, iter, data, budget) {
        Ok(Loaded::Changed) => Outcome {
            reply: Reply::Ok,
            log: smallvec![verbatim(name, args)],
        },
        Ok(Loaded::Unchanged) => Outcome::unchanged(Reply::Ok),
        // The key was removed. Logged as that removal, not as the chunk: replayed, the chunk
        // would answer the same error, and a log that replays with an error stops start-up.
        Err(e @ LoadError::Corrupt) => Outcome {
            reply: reply(e),
            log: smallvec![Record::Items {
                name: "DEL",
                key: args.get(1).copied().unwrap_or_default(),
                items: &[],
            }],
        },
        Err(e) => Outcome::unchanged(reply(e)),
    }
}

/// What a later chunk did.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Loaded {
    /// Nothing: a repeat of bytes already loaded (a retried command), or an empty chunk.
    Unchanged,
    /// The chunk was appended (and may have completed the filter).
    Changed,
}

/// A chunk after the header, for a key holding `value` of the same family (a filter being
/// restored, or a finished one: only repeats of its own bytes are accepted then).
fn load(
    slot: &mut Option<Value>,
    iter: i64,
    data: &[u8],
    budget: &dyn Budget,
) -> Result<Loaded, LoadError> {
    let len = data.len() as u64;
    // RedisBloom: `iter <= 0 || iter < len` is bad data; the chunk ends at `iter`, and
    // an iterator of 1 is the first byte after the header.
    if iter <= 0 || (iter as u64) < len {
        return Err(LoadError::BadData);
    }
    let relative = (iter as u64 - len)
        .checked_sub(1)
        .ok_or(LoadError::NoLink)?;
    let Some(value) = slot.as_mut() else {
        return Err(LoadError::BadData);
    };
    if let Value::Importing(importing) = value {
        if let Some(finished) = importing.push(iter, data)? {
            *value = finished;
        }
        return Ok(Loaded::Changed);
    }
    let (header_len, encoded_len, received) = match &*value {
        Value::Loading(d) => (
            d.header_len() as u64,
            d.encoded_len(),
            d.received().len() as u64,
        ),
        finished => {
            let (_, info) = header(finished).ok_or(LoadError::BadData)?;
            (info.header_len as u64, info.encoded_len, info.encoded_len)
        }
    };
    let start = header_len.checked_add(relative).ok_or(LoadError::NoLink)?;
    if start >= encoded_len {
        return Err(LoadError::NoLink);
    }
    if start + len > encoded_len {
        return Err(LoadError::TooBig);
    }
    if start < received || len == 0 {
        // Only a repeat of what is already there is harmless.
        let same = match &*value {
            Value::Loading(d) => {
                d.received().get(start as usize..(start + len) as usize) == Some(data)
            }
            finished => window(finished, start, data.len()) == data,
        };
        return if same && start + len <= received {
            Ok(Loaded::Unchanged)
        } else {
            Err(LoadError::Mismatch)
        };
    }
    let Value::Loading(dump) = value else {
        // A finished filter has received every byte: unreachable past the checks above.
        return Err(LoadError::Mismatch);
    };
    if start != received {
        return Err(LoadError::Gap);
    }
    // The last chunk is decoded into a filter about as large as the encoding, beside it.
    let completes = start + len == encoded_len;
    let extra = data
        .len()
        .saturating_add(if completes { encoded_len as usize } else { 0 });
    if !budget.within_maxmemory(extra) {
        return Err(LoadError::Oom);
    }
    dump.append(data).map_err(|_| LoadError::Insufficient)?;
    if completes {
        match dump.finish() {
            Ok(filter) => *value = filter,
            Err(_) => {
                *slot = None;
                return Err(LoadError::Corrupt);
            }
        }
    }
    Ok(Loaded::Changed)
}
