//! `CF.*`: RedisBloom's cuckoo filter commands, served by [`CuckooFilter`] built with
//! [`CuckooFilter::redisbloom_builder`] (2-slot buckets, 8-bit fingerprints, a power-of-two bucket
//! count, growth by `EXPANSION`).
//!
//! Arguments are checked in RedisBloom's order (its `rebloom.c`, Redis 8), with its error
//! strings. Parsing ([`FilterCommand::parse`](crate::FilterCommand::parse): the command table's arity, then the
//! command's parser) does every check that needs neither the key nor the
//! [`Defaults`](crate::Defaults); checks that depend on `cf-bucket-size` (the lower bound of
//! a capacity) happen in `read`/`write`, in the same order, before the key is looked at.
//!
//! `cf-max-expansions` is checked as RedisBloom checks it: an insert command into a filter
//! that already has that many sub-filters answers `Maximum expansions reached` and adds
//! nothing; a command that starts below the limit may grow past it. Filters are built to
//! allow 65,535 sub-filters, RedisBloom's own hard limit, so the configured limit is the
//! server's, not stored in the filter.
//!
//! # What is logged
//!
//! A creation is logged as
//! `CF.RESERVE key capacity BUCKETSIZE b MAXITERATIONS m EXPANSION x DISTINCT`
//! (`DISTINCT` is read only from the log, see `logged_placement`: a logged `CF.RESERVE`
//! without it, written before the distinct placement, replays into the original one);
//! one fingerprint actually stored as `CF.ADD key item`, several as
//! `CF.INSERT key MAXEXPANSIONS n ITEMS ...`, where `n` is the `cf-max-expansions` the
//! command ran under (so the replay passes the same check whatever the configuration then);
//! a removal as `CF.DEL key item`; `CF.COMPACT key` as itself. `MAXEXPANSIONS` is a bloomkit extension of
//! `CF.INSERT`/`CF.INSERTNX` (RedisBloom answers `Unknown argument received` to it): a
//! per-command `cf-max-expansions`.
//!
//! A replayed `CF.ADD` (one its [`Budget`](crate::Budget) says
//! [`replays`](crate::Budget::replays)) skips the `cf-max-expansions` check: an insert is
//! logged only once it passed that check, and replay rebuilds the same filter, so a check
//! could only refuse it when the configuration had changed. The budget is asked only when the
//! check would refuse the insert: a module pays to learn who sent a command. It is the form of
//! the commonest record, the shortest one, and plain RedisBloom. (Logs written before it still replay: they hold
//! `CF.INSERT ... MAXEXPANSIONS n` records only.)

use bloomkit::{hash_bytes_with_seed, CuckooFilter, CuckooPlacement, Error, FilterKind};
use smallvec::smallvec;

use crate::args::parse_i64;
use crate::dump;
use crate::errors::{
    wrong_arity, BAD_CAPACITY, CF_FULL, CF_MAX_EXPANSIONS_REACHED, INSUFFICIENT_MEMORY,
    INVALID_POSITION, ITEM_EXISTS, OOM, UNKNOWN_ARGUMENT, WRONGTYPE,
};
use crate::limits::{
    CF_MAX_BUCKET_SIZE as MAX_BUCKET_SIZE, CF_MAX_CAPACITY as MAX_CAPACITY,
    CF_MAX_EXPANSION as MAX_EXPANSION, CF_MAX_ITERATIONS as MAX_ITERATIONS,
    CF_MAX_SUB_FILTERS as MAX_SUB_FILTERS,
};
use crate::reply::Reply;
use crate::run::{Access, Args, Ctx, Log, Outcome, Record, Word};
use crate::shared::{
    admit_new_filter, arg_index, command, item_hashes, long_long, num, one_added, verbatim, word,
    Answers, Items, LazyOrigin, Lookup, Origin,
};
use crate::value::Value;

/// `CF.RESERVE`'s options; `None` takes the default.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Reserve {
    capacity: i64,
    bucket_size: Option<u32>,
    max_iterations: Option<u32>,
    expansion: Option<u32>,
    /// Named by a logged creation (see [`logged_placement`]); a client's filter gets
    /// [`CuckooPlacement::Distinct`].
    placement: CuckooPlacement,
}

/// A check `CF.INSERT` could not finish without the configuration: the smallest capacity
/// given whose validity depends on `cf-bucket-size`, and the error RedisBloom would answer
/// next if that capacity is valid.
#[derive(Clone, Debug, PartialEq)]
struct Deferred {
    min_capacity: u64,
    then: Option<Reply>,
}

#[derive(Clone, Debug, PartialEq)]
enum Op<'a> {
    Reserve(Reserve),
    /// `CF.ADD`, `CF.ADDNX`, `CF.INSERT`, `CF.INSERTNX`.
    Insert {
        items: Items<'a>,
        nx: bool,
        multi: bool,
        autocreate: bool,
        capacity: Option<u64>,
        max_expansions: Option<u32>,
        deferred: Option<Deferred>,
    },
    Exists {
        items: Items<'a>,
        multi: bool,
    },
    Count(&'a [u8]),
    Del(&'a [u8]),
    Info,
    /// `CF.DEBUG`: the filter's shape and counts on one line, as RedisBloom prints them.
    Debug,
    /// `CF.COMPACT`: move fingerprints into older sub-filters, free the emptied newest ones.
    Compact,
    /// The position, if valid.
    ScanDump(i64),
    LoadChunk {
        pos: i64,
        data: &'a [u8],
        args: Args<'a>,
    },
}

mod redisbloom;

/// The `cf-max-expansions` an insert runs under.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Limit {
    /// A number: the command's own (`MAXEXPANSIONS`), or the configured one, already read.
    Named(u32),
    /// The configured one, not applied to a replay (asked of the budget only if the limit
    /// would refuse the insert).
    Configured,
}

impl Limit {
    /// The number a record names (a several-item insert always has one).
    fn named(self) -> u32 {
        match self {
            Limit::Named(n) => n,
            Limit::Configured => u32::MAX,
        }
    }
}

/// A parsed `CF.*` command.
#[derive(Clone, Debug, PartialEq)]
pub struct CuckooCommand<'a> {
    key: &'a [u8],
    op: Op<'a>,
}

impl<'a> CuckooCommand<'a> {
    /// The key.
    pub fn key(&self) -> &'a [u8] {
        self.key
    }

    /// Whether the command only reads its key: `CF.EXISTS`, `CF.MEXISTS`, `CF.COUNT`,
    /// `CF.INFO`, `CF.DEBUG`, `CF.SCANDUMP`. (`CF.COMPACT` writes: RedisBloom registers it
    /// read-only, yet it moves fingerprints and resets the deletion count.)
    pub fn access(&self) -> Access {
        match self.op {
            Op::Exists { .. } | Op::Count(_) | Op::Info | Op::Debug | Op::ScanDump(_) => {
                Access::Read
            }
            _ => Access::Write,
        }
    }

    /// Runs the command against the key's value (`None`: no such key). A write command
    /// answers what it would answer, on a copy, leaving the key as it is.
    pub fn read(&self, value: Option<&Value>, ctx: &Ctx<'_>) -> Reply {
        if let Some(Value::RedisCuckoo(f)) = value {
            if let Some(reply) = self.read_imported(f) {
                return reply;
            }
        }
        match &self.op {
            Op::Exists { items, multi } => {
                let answer = |item: &&[u8]| {
                    Reply::Bool(lookup(value).is_ok_and(|f| f.contains_hash(hash(f, item))))
                };
                match lookup(value) {
                    Err(Lookup::Loading) => Lookup::Loading.error(LOADCHUNK),
                    Ok(f) if *multi => {
                        let hashes = item_hashes(items, f.seed());
                        let mut answers = Vec::with_capacity(items.len());
                        f.contains_many_hashes(&hashes, &mut answers);
                        Reply::Array(answers.into_iter().map(Reply::Bool).collect())
                    }
                    _ if *multi => Reply::Array(items.iter().map(answer).collect()),
                    _ => items.first().map(answer).unwrap_or(Reply::Bool(false)),
                }
            }
            Op::Count(item) => match lookup(value) {
                Ok(f) => Reply::Integer(f.count_hash(hash(f, item)) as i64),
                Err(Lookup::Loading) => Lookup::Loading.error(LOADCHUNK),
                Err(_) => Reply::Integer(0),
            },
            Op::Info => match lookup(value) {
                Ok(f) => info(f),
                Err(status) => status.error(LOADCHUNK),
            },
            Op::Debug => match lookup(value) {
                Ok(f) => debug(f),
                Err(status) => status.error(LOADCHUNK),
            },
            Op::ScanDump(pos) => scandump(value, *pos, ctx),
            _ => {
                let mut copy = value.cloned();
                self.write(&mut copy, ctx).reply
            }
        }
    }

    /// Runs the command against the key's slot, which it may fill, change or empty.
    pub fn write(&self, slot: &mut Option<Value>, ctx: &Ctx<'_>) -> Outcome<'_> {
        if let Some(Value::RedisCuckoo(f)) = slot {
            if let Some(outcome) = self.write_imported(f) {
                return outcome;
            }
        }
        match &self.op {
            Op::Reserve(r) => self.reserve(slot, r, ctx),
            Op::Insert {
                items,
                nx,
                multi,
                autocreate,
                capacity,
                max_expansions,
                deferred,
            } => {
                if let Some(d) = deferred {
                    if d.min_capacity < 2 * ctx.defaults.cf_bucket_size as u64 {
                        return Outcome::unchanged(Reply::error(INSERT_CAPACITY_RANGE));
                    }
                    if let Some(then) = &d.then {
                        return Outcome::unchanged(then.clone());
                    }
                }
                // A replay that names no limit is not held to this host's (see the module
                // documentation). Several items log the limit they ran under, so they need
                // it now; one item asks only if the configured limit would refuse it.
                let limit = match (max_expansions, *multi) {
                    (Some(n), _) => Limit::Named(*n),
                    (None, true) if ctx.budget.replays() => Limit::Named(u32::MAX),
                    (None, true) => Limit::Named(ctx.defaults.cf_max_expansions),
                    (None, false) => Limit::Configured,
                };
                let create = autocreate.then(|| capacity.unwrap_or(ctx.defaults.cf_initial_size));
                self.insert(slot, items, *nx, *multi, create, limit, ctx)
            }
            Op::Del(item) => {
                let removed = match slot.as_mut() {
                    Some(Value::Cuckoo(f)) => f.remove_hash(hash(f, item)),
                    Some(Value::Loading(d)) if d.is_cuckoo() => {
                        return Outcome::unchanged(Lookup::Loading.error(LOADCHUNK))
                    }
                    _ => return Outcome::unchanged(Reply::error("Not found")),
                };
                deleted(self.key, item, removed)
            }
            Op::LoadChunk { pos, data, args } => loadchunk(slot, *pos, data, args, ctx),
            Op::Compact => match slot.as_mut() {
                Some(Value::Cuckoo(f)) => {
                    f.compact();
                    // Logged even when nothing moved: the deletion count restarts at 0.
                    Outcome {
                        reply: Reply::Ok,
                        log: smallvec![Record::Items {
                            name: "CF.COMPACT",
                            key: self.key,
                            items: &[],
                        }],
                    }
                }
                Some(Value::Loading(d)) if d.is_cuckoo() => {
                    Outcome::unchanged(Lookup::Loading.error(LOADCHUNK))
                }
                // RedisBloom's one answer for a missing key and one of another type.
                _ => Outcome::unchanged(Reply::error("Cuckoo filter was not found")),
            },
            _ => Outcome::unchanged(self.read(slot.as_ref(), ctx)),
        }
    }

    #[inline(never)]
    fn reserve(&self, slot: &mut Option<Value>, r: &Reserve, ctx: &Ctx<'_>) -> Outcome<'_> {
        let d = ctx.defaults;
        let bucket_size = r.bucket_size.unwrap_or(d.cf_bucket_size);
        if (bucket_size as i64) * 2 > r.capacity || r.capacity > MAX_CAPACITY {
            return Outcome::unchanged(Reply::error(
                "Capacity must be in the range [2 * BUCKETSIZE, 1073741824]",
            ));
        }
        if slot.is_some() {
            return Outcome::unchanged(match lookup(slot.as_ref()) {
                Err(Lookup::WrongType) => Reply::error(WRONGTYPE),
                _ => Reply::error(ITEM_EXISTS),
            });
        }
        let shape = Shape {
            capacity: r.capacity as u64,
            bucket_size,
            max_iterations: r.max_iterations.unwrap_or(d.cf_max_iterations),
            expansion: r.expansion.unwrap_or(d.cf_expansion_factor),
            placement: r.placement,
        };
        match create(self.key, shape, ctx) {
            Ok((filter, log)) => {
                *slot = Some(Value::Cuckoo(filter));
                Outcome {
                    reply: Reply::Ok,
                    log: smallvec![Record::Words(log)],
                }
            }
            Err(reply) => Outcome::unchanged(reply),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn insert<'c>(
        &'c self,
        slot: &mut Option<Value>,
        items: Items<'c>,
        nx: bool,
        multi: bool,
        create_with: Option<u64>,
        max_expansions: Limit,
        ctx: &Ctx<'_>,
    ) -> Outcome<'c> {
        let mut log = Log::new();
        match (lookup(slot.as_ref()), create_with) {
            (Ok(_), _) => {}
            (Err(Lookup::Missing), Some(capacity)) => {
                let d = ctx.defaults;
                let shape = Shape {
                    capacity,
                    bucket_size: d.cf_bucket_size,
                    max_iterations: d.cf_max_iterations,
                    expansion: d.cf_expansion_factor,
                    placement: CuckooPlacement::Distinct,
                };
                match create(self.key, shape, ctx) {
                    Ok((filter, creation)) => {
                        *slot = Some(Value::Cuckoo(filter));
                        log.push(Record::Words(creation));
                    }
                    Err(reply) => return Outcome::unchanged(reply),
                }
            }
            (Err(status), _) => return Outcome::unchanged(status.error(LOADCHUNK)),
        }
        let Some(Value::Cuckoo(filter)) = slot.as_mut() else {
            return Outcome::unchanged(Lookup::Missing.error(LOADCHUNK));
        };
        // RedisBloom's guard against runaway growth: checked once, before any insert (the
        // creation above stays, and is logged).
        let reached = |limit: u32| filter.num_filters() as u64 >= limit as u64;
        let refused = match max_expansions {
            Limit::Named(n) => reached(n),
            Limit::Configured => reached(ctx.defaults.cf_max_expansions) && !ctx.budget.replays(),
        };
        if refused {
            return Outcome {
                reply: Reply::error(CF_MAX_EXPANSIONS_REACHED),
                log,
            };
        }
        if let (false, [item]) = (multi, items) {
            let mut refused = false;
            let may_grow = |bytes: usize| {
                refused = !ctx.budget.within_maxmemory(bytes);
                !refused
            };
            let hash = hash(filter, item);
            let result = if nx {
                filter.insert_unique_hash_within(hash, may_grow)
            } else {
                filter.insert_hash_within(hash, may_grow).map(|()| true)
            };
            let result = result.map_err(|_| insert_error(refused, filter.expansion()));
            return one_added("CF.ADD", self.key, items, log, result);
        }
        self.insert_several(filter, items, nx, max_expansions, ctx, log)
    }

    /// [`insert`](Self::insert) of several items (`CF.INSERT`, `CF.INSERTNX`) into `filter`,
    /// after the creation logged in `log`. Out of line: the one-item commands' path stays
    /// short, which inside Redis keeps more of the engine's own code in the instruction
    /// cache.
    #[inline(never)]
    fn insert_several<'c>(
        &'c self,
        filter: &mut CuckooFilter,
        items: Items<'c>,
        nx: bool,
        max_expansions: Limit,
        ctx: &Ctx<'_>,
        mut log: Log<'c>,
    ) -> Outcome<'c> {
        // Several items (`CF.INSERT`, `CF.INSERTNX`): an array of answers.
        let mut replies = Vec::with_capacity(items.len());
        // The log record, built as items are stored: the items that were new.
        let mut record: Vec<Word<'c>> = Vec::new();
        // CF.INSERTNX answers integers, CF.INSERT booleans (RESP3), as RedisBloom does.
        let integers = nx;
        let hashes = item_hashes(items, filter.seed());
        let mut answers = Answers::new();
        // The batch stops at an item that finds no room; the command answers for it and
        // goes on with the next.
        let mut start = 0;
        while start < items.len() {
            let mut refused = false;
            let may_grow = |bytes: usize| {
                refused = !ctx.budget.within_maxmemory(bytes);
                !refused
            };
            answers.clear();
            // The last item through the one-key call, which the batch would make for it:
            // no answer buffer to allocate.
            let result = match (&hashes[start..], nx) {
                (&[hash], true) => filter
                    .insert_unique_hash_within(hash, may_grow)
                    .map(|new| answers.push(new)),
                (&[hash], false) => filter
                    .insert_hash_within(hash, may_grow)
                    .map(|()| answers.push(true)),
                (rest, _) => {
                    let mut batch = Vec::with_capacity(rest.len());
                    let result = if nx {
                        filter.insert_unique_many_hashes_within(rest, may_grow, &mut batch)
                    } else {
                        filter.insert_many_hashes_within(rest, may_grow, &mut batch)
                    };
                    answers = Answers::from_vec(batch);
                    result
                }
            };
            for (item, &inserted) in items[start..].iter().zip(&answers) {
                if inserted {
                    if record.is_empty() {
                        record.reserve_exact(5 + items.len());
                        record.push(word("CF.ADD"));
                        record.push(Word::Borrowed(self.key));
                    }
                    record.push(Word::Borrowed(item));
                }
                replies.push(if integers {
                    Reply::Integer(inserted as i64)
                } else {
                    Reply::Bool(inserted)
                });
            }
            start += answers.len();
            if result.is_ok() {
                break;
            }
            // RedisBloom answers −1 for an item that found no room (in RESP3, false for
            // CF.INSERT and -1 for CF.INSERTNX), and goes on with the next.
            replies.push(if integers {
                Reply::Integer(-1)
            } else {
                Reply::PerProtocol {
                    resp2: Box::new(Reply::Integer(-1)),
                    resp3: Box::new(Reply::Bool(false)),
                }
            });
            start += 1;
        }
        if record.len() > 3 {
            // Several items new: `CF.ADD` takes one, so the record names the limit it ran
            // under (one new item stays a `CF.ADD`, which replays alike).
            record[0] = word("CF.INSERT");
            record.splice(
                2..2,
                [
                    word("MAXEXPANSIONS"),
                    num(max_expansions.named()),
                    word("ITEMS"),
                ],
            );
        }
        if !record.is_empty() {
            log.push(Record::Words(record));
        }
        Outcome {
            reply: Reply::Array(replies),
            log,
        }
    }
}

/// `CF.DEL`'s answer, logged when `item` was removed.
fn deleted<'c>(key: &'c [u8], item: &'c &'c [u8], removed: bool) -> Outcome<'c> {
    Outcome {
        reply: Reply::Bool(removed),
        log: if removed {
            smallvec![Record::Items {
                name: "CF.DEL",
                key,
                items: std::slice::from_ref(item),
            }]
        } else {
            Log::new()
        },
    }
}

/// What a one-item insert that failed answers: `refused` if the memory budget refused the
/// growth it needed; else a filter that may not grow (`expansion` 0) is full, and one that
/// may could not allocate its next sub-filter.
fn insert_error(refused: bool, expansion: u32) -> &'static str {
    if refused {
        OOM
    } else if expansion == 0 {
        CF_FULL
    } else {
        "ERR Insufficient memory"
    }
}

/// The `CF.*` parsers, one per row of the [command table](crate::table), which calls
/// each once the arguments satisfy the row's arity.
pub(crate) mod parse {
    use super::*;

    fn cuckoo<'a>(args: Args<'a>, op: Op<'a>) -> CuckooCommand<'a> {
        CuckooCommand { key: args[1], op }
    }

    pub(crate) fn reserve<'a>(
        args: Args<'a>,
        origin: LazyOrigin<'_>,
    ) -> Result<CuckooCommand<'a>, Reply> {
        let origin = origin();
        // Options come in pairs after the capacity; a logged creation may end in one word
        // more (see `logged_placement`).
        let paired = args.len() - usize::from(ends_distinct(args, origin));
        if paired.is_multiple_of(2) {
            return Err(wrong_arity("cf.reserve"));
        }
        parse_reserve(args, origin).map(|op| cuckoo(args, op))
    }

    fn add_one(args: Args<'_>, nx: bool) -> CuckooCommand<'_> {
        cuckoo(
            args,
            Op::Insert {
                items: &args[2..],
                nx,
                multi: false,
                autocreate: true,
                capacity: None,
                // The configured one; none for a replay (see the module documentation).
                max_expansions: None,
                deferred: None,
            },
        )
    }

    pub(crate) fn add<'a>(args: Args<'a>, _: LazyOrigin<'_>) -> Result<CuckooCommand<'a>, Reply> {
        Ok(add_one(args, false))
    }

    pub(crate) fn addnx<'a>(args: Args<'a>, _: LazyOrigin<'_>) -> Result<CuckooCommand<'a>, Reply> {
        Ok(add_one(args, true))
    }

    pub(crate) fn insert<'a>(
        args: Args<'a>,
        origin: LazyOrigin<'_>,
    ) -> Result<CuckooCommand<'a>, Reply> {
        parse_insert(args, false, origin).map(|op| cuckoo(args, op))
    }

    pub(crate) fn insertnx<'a>(
        args: Args<'a>,
        origin: LazyOrigin<'_>,
    ) -> Result<CuckooCommand<'a>, Reply> {
        parse_insert(args, true, origin).map(|op| cuckoo(args, op))
    }

    pub(crate) fn exists<'a>(
        args: Args<'a>,
        _: LazyOrigin<'_>,
    ) -> Result<CuckooCommand<'a>, Reply> {
        let items = &args[2..];
        Ok(cuckoo(
            args,
            Op::Exists {
                items,
                multi: false,
            },
        ))
    }

    pub(crate) fn mexists<'a>(
        args: Args<'a>,
        _: LazyOrigin<'_>,
    ) -> Result<CuckooCommand<'a>, Reply> {
        let items = &args[2..];
        Ok(cuckoo(args, Op::Exists { items, multi: true }))
    }

    pub(crate) fn count<'a>(args: Args<'a>, _: LazyOrigin<'_>) -> Result<CuckooCommand<'a>, Reply> {
        Ok(cuckoo(args, Op::Count(args[2])))
    }

    pub(crate) fn del<'a>(args: Args<'a>, _: LazyOrigin<'_>) -> Result<CuckooCommand<'a>, Reply> {
        Ok(cuckoo(args, Op::Del(args[2])))
    }

    pub(crate) fn info<'a>(args: Args<'a>, _: LazyOrigin<'_>) -> Result<CuckooCommand<'a>, Reply> {
        Ok(cuckoo(args, Op::Info))
    }

    pub(crate) fn debug<'a>(args: Args<'a>, _: LazyOrigin<'_>) -> Result<CuckooCommand<'a>, Reply> {
        Ok(cuckoo(args, Op::Debug))
    }

    pub(crate) fn compact<'a>(
        args: Args<'a>,
        _: LazyOrigin<'_>,
    ) -> Result<CuckooCommand<'a>, Reply> {
        Ok(cuckoo(args, Op::Compact))
    }

    pub(crate) fn scandump<'a>(
        args: Args<'a>,
        _: LazyOrigin<'_>,
    ) -> Result<CuckooCommand<'a>, Reply> {
        parse_i64(args[2])
            .filter(|&p| p >= 0)
            .map(|pos| cuckoo(args, Op::ScanDump(pos)))
            .ok_or_else(|| Reply::error(INVALID_POSITION))
    }

    pub(crate) fn loadchunk<'a>(
        args: Args<'a>,
        _: LazyOrigin<'_>,
    ) -> Result<CuckooCommand<'a>, Reply> {
        let pos = parse_i64(args[2])
            .filter(|&p| p != 0)
            .ok_or_else(|| Reply::error(INVALID_POSITION))?;
        Ok(cuckoo(
            args,
            Op::LoadChunk {
                pos,
                data: args[3],
                args,
            },
        ))
    }
}

/// The command that finishes a restore, for the "still being restored" error.
const LOADCHUNK: &str = "CF.LOADCHUNK";

/// `CF.INSERT`'s capacity range error (RedisBloom names the setting in it).
const INSERT_CAPACITY_RANGE: &str =
    "Capacity must be in the range [cf-bucket-size * 2, 1073741824]";

/// Items are hashed as their raw bytes, as everywhere in the server.
fn hash(f: &CuckooFilter, item: &[u8]) -> u64 {
    hash_bytes_with_seed(item, f.seed())
}

/// The key's filter, or RedisBloom's status for it.
fn lookup(value: Option<&Value>) -> Result<&CuckooFilter, Lookup> {
    match value {
        Some(Value::Cuckoo(f)) => Ok(f),
        Some(Value::Loading(d)) if d.is_cuckoo() => Err(Lookup::Loading),
        Some(Value::Importing(d)) if d.is_cuckoo() => Err(Lookup::Loading),
        Some(_) => Err(Lookup::WrongType),
        None => Err(Lookup::Missing),
    }
}

fn parse_reserve(args: &[&[u8]], origin: Origin) -> Result<Op<'static>, Reply> {
    let capacity = parse_i64(args[2]).ok_or_else(|| Reply::error(BAD_CAPACITY))?;
    // RedisBloom finds each option anywhere in the arguments and reads the one after it.
    let option = |name: &str, lo: i64, hi: i64| -> Result<Option<u32>, Reply> {
        let Some(at) = arg_index(args, name, origin) else {
            return Ok(None);
        };
        let x = long_long(args.get(at + 1))
            .ok_or_else(|| Reply::Error(format!("Couldn't parse {name}")))?;
        if !(lo..=hi).contains(&x) {
            return Err(Reply::Error(format!(
                "{name}: value must be in the range [{lo}, {hi}]"
            )));
        }
        Ok(Some(x as u32))
    };
    let max_iterations = option("MAXITERATIONS", 1, MAX_ITERATIONS)?;
    let bucket_size = option("BUCKETSIZE", 1, MAX_BUCKET_SIZE)?;
    let expansion = option("EXPANSION", 0, MAX_EXPANSION)?;
    Ok(Op::Reserve(Reserve {
        capacity,
        bucket_size,
        max_iterations,
        expansion,
        placement: logged_placement(args, origin),
    }))
}

/// The placement of a `CF.RESERVE`: a client's filter is always distinct; a logged creation
/// is distinct when it ends in the word `DISTINCT`, and original without it, since logs
/// written before the distinct placement hold filters built in the original one, and must
/// replay into the same sub-filters (a `CF.INSERT` logged with `MAXEXPANSIONS n` passed its
/// check with the sub-filters it had then).
///
/// One word, not a pair: it makes the argument count even, which a build from before the
/// placement refuses (`wrong number of arguments`, stopping its start-up) instead of
/// ignoring an unknown option and replaying the log into the original placement.
fn logged_placement(args: &[&[u8]], origin: Origin) -> CuckooPlacement {
    if origin != Origin::Log || ends_distinct(args, origin) {
        CuckooPlacement::Distinct
    } else {
        CuckooPlacement::Original
    }
}

/// Whether a logged `CF.RESERVE` ends in `DISTINCT` after its capacity and option pairs.
fn ends_distinct(args: &[&[u8]], origin: Origin) -> bool {
    origin == Origin::Log
        && args.len() >= 4
        && args.len().is_multiple_of(2)
        && args
            .last()
            .is_some_and(|w| crate::args::is_word(w, "DISTINCT"))
}

/// `CF.INSERT key [CAPACITY c] [NOCREATE] [MAXEXPANSIONS n] ITEMS ...`, scanned as
/// RedisBloom scans it: by each option's first letter, stopping at `ITEMS`. `MAXEXPANSIONS`
/// takes what `cf-max-expansions` takes (up to a filter's most sub-filters); a logged one
/// may also be the 65,536 that builds before that check accepted and logged, which allows
/// no more than 65,535 does.
fn parse_insert<'a>(args: Args<'a>, nx: bool, origin: LazyOrigin<'_>) -> Result<Op<'a>, Reply> {
    let name = if nx { "cf.insertnx" } else { "cf.insert" };
    let mut capacity = None;
    let mut max_expansions = None;
    let mut autocreate = true;
    let mut items_at = None;
    // The smallest capacity whose validity depends on `cf-bucket-size` (2 to 509).
    let mut ambiguous: Option<u64> = None;
    let mut pos = 2;
    let mut scan = |pos: &mut usize, items_at: &mut Option<usize>| -> Result<(), Reply> {
        while *pos < args.len() && items_at.is_none() {
            let arg = args[*pos];
            match arg.first().map(u8::to_ascii_lowercase) {
                Some(b'c') => {
                    *pos += 1;
                    let value = args.get(*pos).ok_or_else(|| wrong_arity(name))?;
                    let c = parse_i64(value).ok_or_else(|| Reply::error(BAD_CAPACITY))?;
                    if !(2..=MAX_CAPACITY).contains(&c) {
                        return Err(Reply::error(INSERT_CAPACITY_RANGE));
                    }
                    if c < 2 * MAX_BUCKET_SIZE {
                        ambiguous = Some(ambiguous.map_or(c as u64, |m| m.min(c as u64)));
                    }
                    capacity = Some(c as u64);
                    *pos += 1;
                }
                Some(b'i') => {
                    *pos += 1;
                    *items_at = Some(*pos);
                }
                Some(b'n') => {
                    autocreate = false;
                    *pos += 1;
                }
                // bloomkit's extension (RedisBloom has no option starting with 'm').
                Some(b'm') => {
                    *pos += 1;
                    let value = args.get(*pos).ok_or_else(|| wrong_arity(name))?;
                    let most = |n: i64| {
                        n <= i64::from(MAX_SUB_FILTERS)
                            || (n == i64::from(MAX_SUB_FILTERS) + 1 && origin() == Origin::Log)
                    };
                    let n = parse_i64(value)
                        .filter(|&n| n >= 1 && most(n))
                        .ok_or_else(|| {
                            Reply::Error(format!(
                                "ERR MAXEXPANSIONS must be an integer from 1 to {MAX_SUB_FILTERS}"
                            ))
                        })?;
                    max_expansions = Some(n as u32);
                    *pos += 1;
                }
                _ => return Err(Reply::error(UNKNOWN_ARGUMENT)),
            }
        }
        if items_at.is_none_or(|at| at == args.len()) {
            return Err(wrong_arity(name));
        }
        Ok(())
    };
    let error = scan(&mut pos, &mut items_at).err();
    let deferred = match (ambiguous, error) {
        (None, Some(e)) => return Err(e),
        (Some(min_capacity), then) => Some(Deferred { min_capacity, then }),
        (None, None) => None,
    };
    Ok(Op::Insert {
        items: items_at.map_or(&[][..], |at| &args[at..]),
        nx,
        multi: true,
        autocreate,
        capacity,
        max_expansions,
        deferred,
    })
}

/// A filter's shape as `CF.RESERVE` names it.
#[derive(Clone, Copy, Debug)]
struct Shape {
    capacity: u64,
    bucket_size: u32,
    max_iterations: u32,
    expansion: u32,
    placement: CuckooPlacement,
}

/// Builds a filter after asking the budget, and the `CF.RESERVE` that replays it.
#[inline(never)]
fn create<'c>(
    key: &'c [u8],
    s: Shape,
    ctx: &Ctx<'_>,
) -> Result<(CuckooFilter, Vec<Word<'c>>), Reply> {
    let could_not = || Reply::error("ERR Could not create filter");
    if s.capacity < 2 * s.bucket_size as u64 || s.capacity > MAX_CAPACITY as u64 {
        return Err(could_not());
    }
    let options = CuckooFilter::redisbloom_builder(s.capacity)
        .bucket_size(s.bucket_size)
        .max_kicks(s.max_iterations)
        .expansion(s.expansion)
        .max_filters(MAX_SUB_FILTERS)
        .placement(s.placement);
    let memory_error = |e: Error| match e {
        Error::TooLarge { .. } | Error::OutOfMemory { .. } => Reply::error(INSUFFICIENT_MEMORY),
        _ => could_not(),
    };
    let planned = options.planned_memory_bytes().map_err(memory_error)?;
    admit_new_filter(ctx.budget, planned)?;
    let filter = options.build().map_err(memory_error)?;
    let mut words = vec![
        num(s.capacity),
        word("BUCKETSIZE"),
        num(s.bucket_size),
        word("MAXITERATIONS"),
        num(s.max_iterations),
        word("EXPANSION"),
        num(s.expansion),
    ];
    if s.placement == CuckooPlacement::Distinct {
        words.push(word("DISTINCT"));
    }
    let log = command("CF.RESERVE", key, words);
    Ok((filter, log))
}

/// RedisBloom's `CF.INFO` "Size" for this filter: its struct (40 bytes), 16 bytes per
/// sub-filter and the slots (one byte each at RedisBloom's 8-bit fingerprints). Computed
/// from the shape, so it matches RedisBloom's figure for every filter it could have built;
/// the memory this server holds is [`CuckooFilter::memory_bytes`] (`INFO memory`).
fn redisbloom_size(f: &CuckooFilter) -> u64 {
    let slot_bytes = (f.num_slots() * f.fingerprint_bits() as u64).div_ceil(8);
    40 + 16 * f.num_filters() as u64 + slot_bytes
}

fn info(f: &CuckooFilter) -> Reply {
    let entry = |name: &str, value: u64| {
        (
            Reply::Simple(name.to_string()),
            Reply::Integer(value.min(i64::MAX as u64) as i64),
        )
    };
    Reply::Map(vec![
        entry("Size", redisbloom_size(f)),
        entry("Number of buckets", f.num_buckets()),
        entry("Number of filters", f.num_filters() as u64),
        entry("Number of items inserted", f.len()),
        entry("Number of items deleted", f.num_deletes()),
        entry("Bucket size", f.bucket_size() as u64),
        entry("Expansion rate", f.expansion() as u64),
        entry("Max iterations", f.max_kicks() as u64),
        // bloomkit's, after RedisBloom's fields so that its clients read theirs.
        (
            Reply::Simple("Load factor".to_string()),
            Reply::Double(f.load_factor()),
        ),
        (
            Reply::Simple("Estimated error rate".to_string()),
            Reply::Double(f.estimated_fp_rate()),
        ),
    ])
}

/// `CF.DEBUG key`: RedisBloom's line, with this filter's figures.
fn debug(f: &CuckooFilter) -> Reply {
    Reply::bulk(format!(
        "bktsize:{} buckets:{} items:{} deletes:{} filters:{} max_iterations:{} expansion:{}",
        f.bucket_size(),
        f.num_buckets(),
        f.len(),
        f.num_deletes(),
        f.num_filters(),
        f.max_kicks(),
        f.expansion()
    ))
}

fn scandump(value: Option<&Value>, pos: i64, ctx: &Ctx<'_>) -> Reply {
    let end = || Reply::Array(vec![Reply::Integer(0), Reply::Null]);
    let empty = match (value, lookup(value)) {
        (Some(Value::RedisCuckoo(f)), _) => f.is_empty(),
        (_, Ok(f)) => f.is_empty(),
        (_, Err(status)) => return status.error(LOADCHUNK),
    };
    // RedisBloom dumps nothing of an empty filter.
    if empty {
        return end();
    }
    let Some(value) = value else {
        return end();
    };
    dump::scandump(value, pos, ctx.budget).into_reply(end)
}

fn loadchunk<'c>(
    slot: &mut Option<Value>,
    pos: i64,
    data: &[u8],
    args: Args<'c>,
    ctx: &Ctx<'_>,
) -> Outcome<'c> {
    let changed = || Outcome {
        reply: Reply::Ok,
        log: smallvec![verbatim(LOADCHUNK, args)],
    };
    let status = lookup(slot.as_ref()).map(|_| ());
    if pos == 1 {
        return match status {
            Err(Lookup::Missing) => match dump::start(FilterKind::Cuckoo, data, ctx.budget) {
                Ok(value) => {
                    *slot = Some(value);
                    changed()
                }
                Err(e) => Outcome::unchanged(e.cuckoo_header_reply()),
            },
            Err(Lookup::WrongType) => Outcome::unchanged(Reply::error(WRONGTYPE)),
            Ok(()) | Err(Lookup::Loading) => Outcome::unchanged(Reply::error(ITEM_EXISTS)),
        };
    }
    match status {
        Err(status @ (Lookup::Missing | Lookup::WrongType)) => {
            Outcome::unchanged(status.error(LOADCHUNK))
        }
        Ok(()) | Err(Lookup::Loading) => dump::load_outcome(
            slot,
            LOADCHUNK,
            pos,
            data,
            args,
            ctx.budget,
            dump::LoadError::cuckoo_chunk_reply,
        ),
    }
}
