//! `AF.*`: aging filters, keys that forget, served by bloomkit's [`AgingBloomFilter`].
//!
//! An `AF` key holds G generations (at least 2), each a Bloom filter sized for `capacity`
//! items: adds go to the newest, queries ask every one, and a rotation drops the oldest and
//! starts an empty newest one. With a rotation every period T, an item is remembered for at
//! least (G − 1)·T and at most G·T after its last add. `error_rate` is the rate of the
//! whole window, each generation holding its `capacity`.
//!
//! * `AF.RESERVE key error_rate capacity [GENERATIONS g] [PERIOD seconds] [AT ms] [PROBES d]`:
//!   `PERIOD` has the host rotate the key every `seconds`; `AT` is when the schedule starts
//!   (milliseconds since the Unix epoch; the host's clock, [`Ctx::now_ms`], when left out);
//!   `PROBES` names the blocked probe derivation (`BlockedProbes::code`: 2, the default for
//!   a client, or 1, what a logged creation without it replays into).
//! * `AF.ADD key item`, `AF.MADD key item...`: 1 if the item was in no generation (a first
//!   sighting), 0 if it may have been seen within the window; either way it is put in the
//!   newest generation. A missing key is created from the `af-*` defaults.
//! * `AF.EXISTS`, `AF.MEXISTS`: whether an item may have been added within the window.
//! * `AF.ROTATE key [AT ms]`: one rotation, at `AT` (the host's clock when left out).
//! * `AF.INFO key`, `AF.CARD key`.
//! * `AF.SCANDUMP key iter`, `AF.LOADCHUNK key iter data`: as `BF.SCANDUMP`/`BF.LOADCHUNK`
//!   (the same chunks and refusals), over the key's whole encoding ([`AgingKey::write_to`]: the
//!   parameters, the schedule and every generation), whose header is the fixed fields and
//!   the filter's header. A host's append-only rewrite emits these `AF.LOADCHUNK`s
//!   ([`Value::restore_commands`]), which restore the key exactly, schedule included.
//!
//! # What is logged
//!
//! Every record replays the same bits and the same schedule under any defaults and any clock: a
//! creation is logged as `AF.RESERVE key rate capacity GENERATIONS g PERIOD p AT t PROBES 2`
//! (without `PROBES` for a key that probes by the first derivation, as every record before the
//! second existed: a build that does not know the word refuses the record rather than replay its
//! adds into other bits), adds as `AF.MADD` of the items that changed the newest generation, a
//! rotation as `AF.ROTATE key AT t`. A host rotates a key with a period by running that last
//! command itself, through its log ([`AgingKey::due_rotation`] says when), so a replica or a replay
//! never rotates on its own clock.

mod key;

use bloomkit::{
    hash_bytes_with_seed, AgingBloomFilter, AnyFilter, BlockedProbes, Error, FilterKind,
};
use smallvec::smallvec;

use crate::args::{is_word, parse_f64, parse_i64};
use crate::dump;
use crate::errors::{
    wrong_arity, INSUFFICIENT_MEMORY, ITEM_EXISTS, NOT_FOUND, SCANDUMP_ITER_NOT_NUMERIC, WRONGTYPE,
};
use crate::reply::Reply;
use crate::run::{Access, Args, Ctx, Log, Outcome, Record};
use crate::shared::{
    added_record, admit_new_filter, command, num, verbatim, word, Items, LazyOrigin, Lookup,
};
use crate::value::Value;

pub use self::key::{AgingKey, MAGIC};

use crate::limits::{
    AF_MAX_CAPACITY as MAX_CAPACITY, AF_MAX_GENERATIONS as MAX_GENERATIONS,
    AF_MAX_PERIOD_SECS as MAX_PERIOD_SECS, AF_MIN_GENERATIONS as MIN_GENERATIONS,
};

/// The fields `AF.INFO key` answers, in order.
pub const INFO_FIELDS: [&str; 11] = [
    "Capacity",
    "Error rate",
    "Generations",
    "Period",
    "Seconds to next rotation",
    "Items per generation",
    "Number of items inserted",
    "Size",
    "Fill",
    "Estimated items",
    "Estimated error rate",
];

/// The command a host runs (through its log) to rotate `key` at `at_ms`, as
/// [`AgingKey::due_rotation`] gives it.
pub fn rotate_command(key: &[u8], at_ms: u64) -> Vec<bytes::Bytes> {
    vec![
        bytes::Bytes::from_static(b"AF.ROTATE"),
        bytes::Bytes::copy_from_slice(key),
        bytes::Bytes::from_static(b"AT"),
        bytes::Bytes::from(at_ms.to_string()),
    ]
}

/// The parameters of a key to create; `None` takes the `af-*` default.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Params {
    error_rate: f64,
    capacity: u64,
    generations: Option<u32>,
    period_secs: Option<u64>,
    at_ms: Option<u64>,
    /// [`BlockedProbes::OneSeed`] only for a logged creation without `PROBES` (or with
    /// `PROBES 1`), else [`BlockedProbes::TwoSeeds`].
    probes: BlockedProbes,
}

#[derive(Clone, Debug, PartialEq)]
enum Op<'a> {
    Reserve(Params),
    Add {
        items: Items<'a>,
        multi: bool,
    },
    Exists {
        items: Items<'a>,
        multi: bool,
    },
    Rotate(Option<u64>),
    Info,
    Card,
    ScanDump(Option<i64>),
    LoadChunk {
        iter: i64,
        data: &'a [u8],
        args: Args<'a>,
    },
}

/// The command that finishes a restore, for the "still being restored" error.
const LOADCHUNK: &str = "AF.LOADCHUNK";

/// A parsed `AF.*` command.
#[derive(Clone, Debug, PartialEq)]
pub struct AgingCommand<'a> {
    key: &'a [u8],
    op: Op<'a>,
}

impl<'a> AgingCommand<'a> {
    /// The key.
    pub fn key(&self) -> &'a [u8] {
        self.key
    }

    /// Whether the command only reads its key: `AF.EXISTS`, `AF.MEXISTS`, `AF.INFO`,
    /// `AF.CARD`.
    pub fn access(&self) -> Access {
        match self.op {
            Op::Exists { .. } | Op::Info | Op::Card | Op::ScanDump(_) => Access::Read,
            _ => Access::Write,
        }
    }

    /// Runs the command against the key's value (`None`: no such key). A write command
    /// answers what it would answer, on a copy, leaving the key as it is.
    pub fn read(&self, value: Option<&Value>, ctx: &Ctx<'_>) -> Reply {
        match &self.op {
            Op::Exists { items, multi } => exists(value, items, *multi),
            Op::Info => match lookup(value) {
                Ok(Some(k)) => info(k, (ctx.now_ms)()),
                Ok(None) => Reply::error(NOT_FOUND),
                Err(reply) => reply,
            },
            Op::Card => match lookup(value) {
                Ok(k) => {
                    Reply::Integer(k.map_or(0, |k| k.filter.len().min(i64::MAX as u64) as i64))
                }
                Err(reply) => reply,
            },
            Op::ScanDump(iter) => scandump(value, *iter, ctx),
            _ => {
                let mut copy = value.cloned();
                self.write(&mut copy, ctx).reply
            }
        }
    }

    /// Runs the command against the key's slot, which it may fill or change.
    pub fn write(&self, slot: &mut Option<Value>, ctx: &Ctx<'_>) -> Outcome<'_> {
        match &self.op {
            Op::Reserve(params) => {
                if slot.is_some() {
                    let reply = match lookup(slot.as_ref()) {
                        Err(reply) => reply,
                        Ok(_) => Reply::error(ITEM_EXISTS),
                    };
                    return Outcome::unchanged(reply);
                }
                match create(self.key, params, ctx) {
                    Ok((key, record)) => {
                        *slot = Some(Value::Aging(key));
                        Outcome {
                            reply: Reply::Ok,
                            log: smallvec![record],
                        }
                    }
                    Err(reply) => Outcome::unchanged(reply),
                }
            }
            Op::Add { items, multi } => self.add(slot, items, *multi, ctx),
            Op::Rotate(at) => {
                let key = match slot {
                    Some(Value::Aging(k)) => k,
                    None => return Outcome::unchanged(Reply::error(NOT_FOUND)),
                    Some(_) => return Outcome::unchanged(Reply::error(WRONGTYPE)),
                };
                let at = at.unwrap_or_else(ctx.now_ms);
                key.filter.rotate();
                key.last_rotation_ms = at;
                Outcome {
                    reply: Reply::Ok,
                    log: smallvec![Record::Words(command(
                        "AF.ROTATE",
                        self.key,
                        vec![word("AT"), num(at)]
                    ))],
                }
            }
            Op::LoadChunk { iter, data, args } => loadchunk(slot, *iter, data, args, ctx),
            _ => Outcome::unchanged(self.read(slot.as_ref(), ctx)),
        }
    }

    fn add<'c>(
        &'c self,
        slot: &mut Option<Value>,
        items: Items<'c>,
        multi: bool,
        ctx: &Ctx<'_>,
    ) -> Outcome<'c> {
        let mut log = Log::new();
        match lookup(slot.as_ref()) {
            Ok(Some(_)) => {}
            Ok(None) => {
                let d = ctx.defaults;
                let params = Params {
                    error_rate: d.af_error_rate,
                    capacity: d.af_capacity,
                    generations: None,
                    period_secs: None,
                    at_ms: None,
                    probes: BlockedProbes::TwoSeeds,
                };
                match create(self.key, &params, ctx) {
                    Ok((key, record)) => {
                        *slot = Some(Value::Aging(key));
                        log.push(record);
                    }
                    Err(reply) => return Outcome::unchanged(reply),
                }
            }
            Err(reply) => return Outcome::unchanged(reply),
        }
        let Some(Value::Aging(key)) = slot.as_mut() else {
            return Outcome::unchanged(Reply::error(NOT_FOUND));
        };
        let f = &mut key.filter;
        let mut changed = crate::shared::Answers::new();
        let mut first_sightings = Vec::with_capacity(items.len());
        for item in items {
            let hash = hash_bytes_with_seed(item, f.seed());
            let new_in_newest = f.insert_hash(hash);
            // As the library's `check_and_insert`: an insert that changed nothing found the
            // item in the newest generation; otherwise an older one may hold it.
            let seen = !new_in_newest
                || (1..f.num_generations() as usize)
                    .filter_map(|age| f.generation(age))
                    .any(|g| g.contains_hash(hash));
            changed.push(new_in_newest);
            first_sightings.push(Reply::Bool(!seen));
        }
        if let Some(record) = added_record("AF.MADD", self.key, items, &changed) {
            log.push(record);
        }
        let reply = if multi {
            Reply::Array(first_sightings)
        } else {
            first_sightings.pop().unwrap_or(Reply::Bool(false))
        };
        Outcome { reply, log }
    }
}

/// The key's aging filter (`None`: no such key), or the error for another type.
fn lookup(value: Option<&Value>) -> Result<Option<&AgingKey>, Reply> {
    match value {
        Some(Value::Aging(k)) => Ok(Some(k)),
        None => Ok(None),
        Some(Value::Loading(d)) if d.kind() == FilterKind::Aging => {
            Err(Lookup::Loading.error(LOADCHUNK))
        }
        Some(_) => Err(Reply::error(WRONGTYPE)),
    }
}

/// `AF.SCANDUMP key iter`: the chunks of `BF.SCANDUMP`, `[0, ""]` past the end.
fn scandump(value: Option<&Value>, iter: Option<i64>, ctx: &Ctx<'_>) -> Reply {
    let value = match lookup(value) {
        Ok(Some(_)) => value,
        Ok(None) => return Reply::error(NOT_FOUND),
        Err(reply) => return reply,
    };
    let (Some(value), Some(iter)) = (value, iter) else {
        return Reply::error(SCANDUMP_ITER_NOT_NUMERIC);
    };
    dump::scandump(value, iter, ctx.budget).into_reply(dump::bloom_end)
}

/// `AF.LOADCHUNK key iter data`: the header (iterator 1) creates a key being restored, the
/// later chunks follow in order, and the last one decodes the whole (checksum included).
fn loadchunk<'c>(
    slot: &mut Option<Value>,
    iter: i64,
    data: &[u8],
    args: Args<'c>,
    ctx: &Ctx<'_>,
) -> Outcome<'c> {
    // Whether the key is an aging one, finished or being restored (`None`: no such key).
    let ours = slot.as_ref().map(|value| match value {
        Value::Aging(_) => true,
        Value::Loading(d) => d.kind() == FilterKind::Aging,
        _ => false,
    });
    match ours {
        None if iter == 1 => match dump::start(FilterKind::Aging, data, ctx.budget) {
            Ok(value) => {
                *slot = Some(value);
                Outcome {
                    reply: Reply::Ok,
                    log: smallvec![verbatim(LOADCHUNK, args)],
                }
            }
            Err(e) => Outcome::unchanged(load_reply(e)),
        },
        None => Outcome::unchanged(Reply::error(NOT_FOUND)),
        Some(false) => Outcome::unchanged(Reply::error(WRONGTYPE)),
        Some(true) => dump::load_outcome(slot, LOADCHUNK, iter, data, args, ctx.budget, load_reply),
    }
}

/// `AF.LOADCHUNK`'s refusals: `BF.LOADCHUNK`'s, but a header of another kind names the
/// command that loads it.
fn load_reply(e: dump::LoadError) -> Reply {
    match e {
        dump::LoadError::WrongKind { found } => Reply::Error(format!(
            "ERR received bad data: the chunk starts a {found} filter, and an AF key loads \
             aging keys only (what AF.SCANDUMP writes); BF.LOADCHUNK and CF.LOADCHUNK load \
             the others"
        )),
        e => e.bloom_reply(),
    }
}

/// Builds a key from `params` (the `af-*` defaults for what they leave out), and the record
/// that logs its creation with every parameter spelled out.
fn create<'c>(
    key: &'c [u8],
    params: &Params,
    ctx: &Ctx<'_>,
) -> Result<(AgingKey, Record<'c>), Reply> {
    let d = ctx.defaults;
    let generations = params.generations.unwrap_or(d.af_generations);
    let period_secs = params.period_secs.unwrap_or(d.af_period);
    let at = params.at_ms.unwrap_or_else(ctx.now_ms);
    let builder = AgingBloomFilter::builder(params.capacity, params.error_rate)
        .generations(generations)
        .probes(params.probes);
    let memory_error = |e: Error| match e {
        Error::TooLarge { .. } | Error::OutOfMemory { .. } => Reply::error(INSUFFICIENT_MEMORY),
        e => Reply::Error(format!("ERR could not create filter: {e}")),
    };
    // Each generation is the blocked filter for the per-generation rate.
    let planned = AgingBloomFilter::generation_fp_rate(params.error_rate, generations)
        .and_then(|q| AnyFilter::planned_memory_bytes(FilterKind::Blocked, params.capacity, q))
        .map(|bytes| bytes.saturating_mul(generations as usize))
        .map_err(memory_error)?;
    admit_new_filter(ctx.budget, planned)?;
    let filter = builder.build().map_err(memory_error)?;
    let mut words = vec![
        num(params.error_rate),
        num(params.capacity),
        word("GENERATIONS"),
        num(generations),
        word("PERIOD"),
        num(period_secs),
        word("AT"),
        num(at),
    ];
    if params.probes != BlockedProbes::OneSeed {
        words.extend([word("PROBES"), num(params.probes.code())]);
    }
    let record = Record::Words(command("AF.RESERVE", key, words));
    let key = AgingKey {
        filter,
        error_rate: params.error_rate,
        capacity: params.capacity,
        period_secs,
        last_rotation_ms: at,
    };
    Ok((key, record))
}

fn exists(value: Option<&Value>, items: &[&[u8]], multi: bool) -> Reply {
    let key = match lookup(value) {
        Ok(k) => k,
        Err(reply) => return reply,
    };
    let answer = |item: &&[u8]| {
        Reply::Bool(key.is_some_and(|k| {
            k.filter
                .contains_hash(hash_bytes_with_seed(item, k.filter.seed()))
        }))
    };
    if multi {
        Reply::Array(items.iter().map(answer).collect())
    } else {
        items.first().map(answer).unwrap_or(Reply::Bool(false))
    }
}

/// `AF.INFO key` at `now_ms`: [`INFO_FIELDS`], a map in RESP3, name/value pairs in RESP2.
fn info(k: &AgingKey, now_ms: u64) -> Reply {
    let f = &k.filter;
    let int = |n: u64| Reply::Integer(n.min(i64::MAX as u64) as i64);
    let generations: Vec<_> = (0..f.num_generations() as usize)
        .filter_map(|age| f.generation(age))
        .collect();
    let per_generation = generations.iter().map(|g| int(g.len())).collect();
    let bits = f.num_bits().max(1) as f64;
    // The fraction of all the window's bits that are set; each generation holds as many.
    let fill = generations
        .iter()
        .map(|g| g.fill_ratio() * g.num_bits() as f64)
        .sum::<f64>()
        / bits;
    let estimated = generations
        .iter()
        .fold(0u64, |sum, g| sum.saturating_add(g.estimated_count()));
    let to_next = match k.ms_to_next_rotation(now_ms) {
        Some(ms) => int(ms.div_ceil(1000)),
        None => Reply::Integer(-1),
    };
    let values = [
        int(k.capacity),
        Reply::Double(k.error_rate),
        int(f.num_generations().into()),
        int(k.period_secs),
        to_next,
        Reply::Array(per_generation),
        int(f.len()),
        int(k.memory_bytes() as u64),
        Reply::Double(fill),
        int(estimated),
        Reply::Double(f.estimated_fp_rate()),
    ];
    let names = INFO_FIELDS
        .iter()
        .map(|name| Reply::Simple(name.to_string()));
    Reply::Map(names.zip(values).collect())
}

/// The `AF.*` parsers, one per row of the [command table](crate::table), which calls each
/// once the arguments satisfy the row's arity.
pub(crate) mod parse {
    use super::*;

    fn aging<'a>(args: Args<'a>, op: Op<'a>) -> AgingCommand<'a> {
        AgingCommand { key: args[1], op }
    }

    /// `AT ms`'s value.
    fn at(arg: &[u8]) -> Result<u64, Reply> {
        parse_i64(arg)
            .and_then(|n| u64::try_from(n).ok())
            .ok_or_else(|| {
                Reply::error("ERR bad AT: expected milliseconds since the Unix epoch, 0 or more")
            })
    }

    pub(crate) fn reserve<'a>(
        args: Args<'a>,
        origin: LazyOrigin<'_>,
    ) -> Result<AgingCommand<'a>, Reply> {
        let error_rate = parse_f64(args[2])
            .filter(|r| *r > 0.0 && *r < 1.0)
            .ok_or_else(|| Reply::error("ERR (0 < error rate range < 1)"))?;
        let capacity = parse_i64(args[3])
            .and_then(|n| u64::try_from(n).ok())
            .filter(|n| (1..=MAX_CAPACITY).contains(n))
            .ok_or_else(|| {
                Reply::Error(format!(
                    "ERR bad capacity: expected items per generation, 1 to {MAX_CAPACITY}"
                ))
            })?;
        let mut params = Params {
            error_rate,
            capacity,
            generations: None,
            period_secs: None,
            at_ms: None,
            probes: BlockedProbes::TwoSeeds,
        };
        let mut probes = None;
        // Options after the capacity, each once, in any order.
        let mut rest = &args[4..];
        while let [name, value, tail @ ..] = rest {
            if is_word(name, "GENERATIONS") && params.generations.is_none() {
                let g = parse_i64(value)
                    .and_then(|n| u32::try_from(n).ok())
                    .filter(|g| (MIN_GENERATIONS..=MAX_GENERATIONS).contains(g))
                    .ok_or_else(|| {
                        Reply::Error(format!(
                            "ERR bad GENERATIONS: expected {MIN_GENERATIONS} to {MAX_GENERATIONS}"
                        ))
                    })?;
                params.generations = Some(g);
            } else if is_word(name, "PERIOD") && params.period_secs.is_none() {
                let p = parse_i64(value)
                    .and_then(|n| u64::try_from(n).ok())
                    .filter(|p| *p <= MAX_PERIOD_SECS)
                    .ok_or_else(|| {
                        Reply::Error(format!(
                            "ERR bad PERIOD: expected seconds, 0 (no timer) to {MAX_PERIOD_SECS}"
                        ))
                    })?;
                params.period_secs = Some(p);
            } else if is_word(name, "AT") && params.at_ms.is_none() {
                params.at_ms = Some(at(value)?);
            } else if is_word(name, "PROBES") && probes.is_none() {
                let p = parse_i64(value)
                    .and_then(|n| u32::try_from(n).ok())
                    .and_then(BlockedProbes::from_code)
                    .ok_or_else(|| Reply::error("ERR bad PROBES: expected 1 or 2"))?;
                probes = Some(p);
            } else {
                return Err(crate::errors::syntax_error());
            }
            rest = tail;
        }
        if !rest.is_empty() {
            return Err(crate::errors::syntax_error());
        }
        // A logged creation without `PROBES` was written before the second derivation.
        params.probes = probes.unwrap_or(if origin() == crate::shared::Origin::Log {
            BlockedProbes::OneSeed
        } else {
            BlockedProbes::TwoSeeds
        });
        Ok(aging(args, Op::Reserve(params)))
    }

    pub(crate) fn add<'a>(args: Args<'a>, _: LazyOrigin<'_>) -> Result<AgingCommand<'a>, Reply> {
        Ok(aging(
            args,
            Op::Add {
                items: &args[2..],
                multi: false,
            },
        ))
    }

    pub(crate) fn madd<'a>(args: Args<'a>, _: LazyOrigin<'_>) -> Result<AgingCommand<'a>, Reply> {
        Ok(aging(
            args,
            Op::Add {
                items: &args[2..],
                multi: true,
            },
        ))
    }

    pub(crate) fn exists<'a>(args: Args<'a>, _: LazyOrigin<'_>) -> Result<AgingCommand<'a>, Reply> {
        Ok(aging(
            args,
            Op::Exists {
                items: &args[2..],
                multi: false,
            },
        ))
    }

    pub(crate) fn mexists<'a>(
        args: Args<'a>,
        _: LazyOrigin<'_>,
    ) -> Result<AgingCommand<'a>, Reply> {
        Ok(aging(
            args,
            Op::Exists {
                items: &args[2..],
                multi: true,
            },
        ))
    }

    pub(crate) fn rotate<'a>(args: Args<'a>, _: LazyOrigin<'_>) -> Result<AgingCommand<'a>, Reply> {
        match &args[2..] {
            [] => Ok(aging(args, Op::Rotate(None))),
            [name, value] if is_word(name, "AT") => Ok(aging(args, Op::Rotate(Some(at(value)?)))),
            [_, _] => Err(crate::errors::syntax_error()),
            _ => Err(wrong_arity("af.rotate")),
        }
    }

    pub(crate) fn info<'a>(args: Args<'a>, _: LazyOrigin<'_>) -> Result<AgingCommand<'a>, Reply> {
        Ok(aging(args, Op::Info))
    }

    pub(crate) fn card<'a>(args: Args<'a>, _: LazyOrigin<'_>) -> Result<AgingCommand<'a>, Reply> {
        Ok(aging(args, Op::Card))
    }

    crate::dump::dump_parsers!(AgingCommand, aging);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_counts_seconds_to_the_next_rotation_from_the_last() {
        let mut filter = AgingBloomFilter::builder(100, 0.01)
            .generations(2)
            .build()
            .unwrap();
        filter.insert("a");
        let k = AgingKey {
            filter,
            error_rate: 0.01,
            capacity: 100,
            period_secs: 60,
            last_rotation_ms: 1_000_000,
        };
        let Reply::Map(fields) = info(&k, 1_000_000 + 59_001) else {
            panic!("a map");
        };
        let field = |name: &str| {
            fields
                .iter()
                .find(|(n, _)| *n == Reply::Simple(name.into()))
                .unwrap()
                .1
                .clone()
        };
        assert_eq!(field("Seconds to next rotation"), Reply::Integer(1));
        assert_eq!(
            field("Items per generation"),
            Reply::Array(vec![Reply::Integer(1), Reply::Integer(0)])
        );
        assert_eq!(field("Estimated items"), Reply::Integer(1));
        assert_eq!(field("Generations"), Reply::Integer(2));
    }
}
