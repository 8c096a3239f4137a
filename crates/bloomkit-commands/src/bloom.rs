//! `BF.*`: RedisBloom's scalable Bloom filter commands, served by
//! [`ScalableBloomFilter`].
//!
//! Arguments are checked in RedisBloom's order (its `rebloom.c`, Redis 8), with its error
//! strings. Parsing ([`FilterCommand::parse`](crate::FilterCommand::parse): the command table's arity, then the
//! command's parser) does every check that needs neither the key nor the [`Defaults`]; the
//! rest happens in `read`/`write`, before the key is looked at where RedisBloom does so.
//!
//! Items are hashed as their raw bytes with [`bloomkit::hash_bytes_with_seed`], so an item
//! sent as `apple` matches a key inserted as the text `"apple"` by the library or the CLI.
//!
//! # What is logged
//!
//! A command that changes its key returns the commands that replay the change under any
//! [`Defaults`]: a creation is logged as
//! `BF.RESERVE key rate capacity EXPANSION x LAYOUT CLASSIC2` with every parameter (`x` = 0
//! for a non-scaling filter), then the items actually added as one `BF.MADD`. A blocked
//! filter's creation is logged without `LAYOUT` (`... EXPANSION x`, or `... NONSCALING`), as
//! every creation was before `BF.*` had classic layers, and such a record replays into
//! blocked layers, the bits it was acknowledged from. Items that were already present changed
//! nothing and are left out; an item that failed (a full filter, `--maxmemory`) is left
//! out with everything after it, so the replay stops where the command stopped.
//!
//! # Layouts
//!
//! A filter's layers are classic (RedisBloom's, the default) or blocked (one cache line per
//! item and layer), as `bf-layout` says or, for one filter, bloomkit's extension
//! `BF.RESERVE key rate capacity [...] LAYOUT CLASSIC|BLOCKED`.

use bloomkit::{
    hash_bytes_with_seed, BlockedProbes, ClassicProbes, Error, LayerInfo, LayerLayout,
    ScalableBloomFilter,
};
use smallvec::smallvec;

use crate::args::{is_word, parse_f64, parse_i64};
use crate::dump;
use crate::errors::{
    wrong_arity, BAD_CAPACITY, INSUFFICIENT_MEMORY, ITEM_EXISTS, OOM, SCANDUMP_ITER_NOT_NUMERIC,
    UNKNOWN_ARGUMENT, WRONGTYPE,
};
use crate::limits::{BF_MAX_CAPACITY as MAX_CAPACITY, BF_MAX_EXPANSION as MAX_EXPANSION};
use crate::params::Defaults;
use crate::reply::Reply;
use crate::run::{Access, Args, Ctx, Log, Outcome, Record, Word};
use crate::shared::{
    added_record, admit_new_filter, arg_index, command, item_hashes, long_long, num, one_added,
    verbatim, word, Answers, Items, LazyOrigin, Lookup, Origin,
};
use crate::value::Value;

/// The fields `BF.INFO key` answers, in order: RedisBloom's five, then bloomkit's (after
/// them, so that a client reading RedisBloom's keeps working): the fraction of bits set
/// over all layers, the items the bits suggest, and the rate an absent item meets now.
pub const INFO_FIELDS: [&str; 8] = [
    "Capacity",
    "Size",
    "Number of filters",
    "Number of items inserted",
    "Expansion rate",
    "Fill",
    "Estimated items",
    "Estimated error rate",
];

mod merge;
mod redisbloom;

/// What `BF.INFO` reports of a key's filter, whatever its layout.
pub(crate) struct BloomFigures {
    capacity: u64,
    size: u64,
    filters: u64,
    items: u64,
    /// `None` for a non-scaling filter.
    expansion: Option<u32>,
    fill: f64,
    estimated_items: u64,
    estimated_fp_rate: f64,
}

/// RedisBloom caps error rates above this, silently.
const MAX_ERROR_RATE: f64 = 0.25;

/// How a new filter grows.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Growth {
    /// `EXPANSION x`, x ≥ 1.
    Scaling(u32),
    /// `NONSCALING` (or `EXPANSION 0`).
    NonScaling,
    /// Whatever `bf-expansion-factor` says when the filter is created.
    Default,
    /// `BF.INSERT`'s `EXPANSION x`, x ≥ 1: scaling unless `bf-expansion-factor` is 0.
    InsertExpansion(u32),
}

/// The parameters of a filter to create; `None` takes the default.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Params {
    error_rate: Option<f64>,
    capacity: Option<u64>,
    growth: Growth,
    /// The layers' layout: named by `LAYOUT` (a client's extension, or a logged creation),
    /// else `bf-layout`'s.
    layout: Option<LayerLayout>,
    /// How classic layers probe: [`ClassicProbes::DoubleHashing`] only for a logged
    /// `LAYOUT CLASSIC` (see [`reserve_layout`]), else [`ClassicProbes::Rotating`].
    probes: ClassicProbes,
    /// How blocked layers probe: [`BlockedProbes::OneSeed`] only for a logged creation of
    /// blocked layers without `LAYOUT BLOCKED2` (see [`reserve_layout`]), else
    /// [`BlockedProbes::TwoSeeds`].
    blocked_probes: BlockedProbes,
}

/// A `BF.INFO` field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum InfoField {
    Capacity,
    Size,
    Filters,
    Items,
    Expansion,
}

#[derive(Clone, Debug, PartialEq)]
enum Op<'a> {
    Reserve(Params),
    /// `BF.ADD` (`multi` false), `BF.MADD` and `BF.INSERT`: create if allowed, then add.
    Add {
        items: Items<'a>,
        multi: bool,
        create: Option<Params>,
    },
    Exists {
        items: Items<'a>,
        multi: bool,
    },
    /// The field as given: RedisBloom checks it only after finding the key.
    Info(Option<&'a [u8]>),
    Card,
    /// `BF.DEBUG`: the chain and each layer, as RedisBloom prints them.
    Debug,
    /// The iterator, if numeric: RedisBloom checks it only after finding the key.
    ScanDump(Option<i64>),
    LoadChunk {
        iter: i64,
        data: &'a [u8],
        args: Args<'a>,
    },
    /// `BF.MERGE dest src...`: the sources' keys, in order.
    Merge(Args<'a>),
}

/// A parsed `BF.*` command.
#[derive(Clone, Debug, PartialEq)]
pub struct BloomCommand<'a> {
    key: &'a [u8],
    op: Op<'a>,
}

impl<'a> BloomCommand<'a> {
    /// The key.
    pub fn key(&self) -> &'a [u8] {
        self.key
    }

    /// The keys the command reads besides [`key`](Self::key): `BF.MERGE`'s sources, in
    /// order (empty for every other command).
    pub fn sources(&self) -> Args<'a> {
        match self.op {
            Op::Merge(sources) => sources,
            _ => &[],
        }
    }

    /// Whether the command only reads its key: `BF.EXISTS`, `BF.MEXISTS`, `BF.INFO`,
    /// `BF.CARD`, `BF.DEBUG`, `BF.SCANDUMP`.
    pub fn access(&self) -> Access {
        match self.op {
            Op::Exists { .. } | Op::Info(_) | Op::Card | Op::Debug | Op::ScanDump(_) => {
                Access::Read
            }
            _ => Access::Write,
        }
    }

    /// Runs the command against the key's value (`None`: no such key). A write command
    /// answers what it would answer, on a copy, leaving the key as it is.
    pub fn read(&self, value: Option<&Value>, ctx: &Ctx<'_>) -> Reply {
        if let Some(Value::RedisBloom(chain)) = value {
            if let Some(reply) = self.read_imported(chain) {
                return reply;
            }
        }
        match &self.op {
            Op::Exists { items, multi } => exists(value, items, *multi),
            Op::Info(field) => info(value, *field),
            Op::Card => match lookup(value) {
                Ok(f) => Reply::Integer(f.len() as i64),
                Err(Lookup::Missing) => Reply::Integer(0),
                Err(status) => status.error(LOADCHUNK),
            },
            Op::Debug => match lookup(value) {
                Ok(f) => debug(f),
                Err(status) => status.error(LOADCHUNK),
            },
            Op::ScanDump(iter) => scandump(value, *iter, ctx),
            _ => {
                let mut copy = value.cloned();
                self.write(&mut copy, ctx).reply
            }
        }
    }

    /// Runs the command against the key's slot, which it may fill, change or empty.
    pub fn write(&self, slot: &mut Option<Value>, ctx: &Ctx<'_>) -> Outcome<'_> {
        self.write_reading(slot, &[], ctx)
    }

    /// [`write`](Self::write), with the values of [`sources`](Self::sources) in order
    /// (`None`: no such key), which only `BF.MERGE` reads.
    pub fn write_reading(
        &self,
        slot: &mut Option<Value>,
        sources: &[Option<&Value>],
        ctx: &Ctx<'_>,
    ) -> Outcome<'_> {
        if let Some(Value::RedisBloom(chain)) = slot {
            if let Some(outcome) = self.write_imported(chain, ctx) {
                return outcome;
            }
        }
        match &self.op {
            Op::Merge(keys) => merge::merge(self.key, slot, keys, sources, ctx),
            Op::Reserve(params) => self.reserve(slot, params, ctx),
            Op::Add {
                items,
                multi,
                create,
            } => self.add(slot, items, *multi, create.as_ref(), ctx),
            Op::LoadChunk { iter, data, args } => loadchunk(slot, *iter, data, args, ctx),
            _ => Outcome::unchanged(self.read(slot.as_ref(), ctx)),
        }
    }

    #[inline(never)]
    fn reserve(&self, slot: &mut Option<Value>, params: &Params, ctx: &Ctx<'_>) -> Outcome<'_> {
        if slot.is_some() {
            let status = match lookup(slot.as_ref()) {
                Err(Lookup::WrongType) => Reply::error(WRONGTYPE),
                _ => Reply::error(ITEM_EXISTS),
            };
            return Outcome::unchanged(status);
        }
        match create(self.key, params, ctx) {
            Ok((filter, log)) => {
                *slot = Some(Value::Bloom(filter));
                Outcome {
                    reply: Reply::Ok,
                    log: smallvec![Record::Words(log)],
                }
            }
            Err(reply) => Outcome::unchanged(reply),
        }
    }

    fn add<'c>(
        &'c self,
        slot: &mut Option<Value>,
        items: Items<'c>,
        multi: bool,
        create_with: Option<&Params>,
        ctx: &Ctx<'_>,
    ) -> Outcome<'c> {
        let mut log = Log::new();
        match (lookup(slot.as_ref()), create_with) {
            (Ok(_), _) => {}
            (Err(Lookup::Missing), Some(params)) => match create(self.key, params, ctx) {
                Ok((filter, creation)) => {
                    *slot = Some(Value::Bloom(filter));
                    log.push(Record::Words(creation));
                }
                Err(reply) => return Outcome::unchanged(reply),
            },
            (Err(status), _) => return Outcome::unchanged(status.error(LOADCHUNK)),
        }
        let Some(Value::Bloom(filter)) = slot.as_mut() else {
            return Outcome::unchanged(Lookup::Missing.error(LOADCHUNK));
        };
        if let (false, [item]) = (multi, items) {
            // Logged as the `BF.MADD` of its one item.
            let mut refused = false;
            let may_grow = |bytes: usize| {
                refused = !ctx.budget.within_maxmemory(bytes);
                !refused
            };
            let hash = hash_bytes_with_seed(item, filter.seed());
            let result = filter.insert_hash_within(hash, may_grow);
            let result = result.map_err(|_| add_error(refused, filter.is_scaling()));
            return one_added("BF.MADD", self.key, items, log, result);
        }
        self.add_several(filter, items, ctx, log)
    }

    /// [`add`](Self::add) of several items (`BF.MADD`, `BF.INSERT`) into `filter`, after the
    /// creation logged in `log`. Out of line, as `CF.INSERT`'s is.
    #[inline(never)]
    fn add_several<'c>(
        &'c self,
        filter: &mut ScalableBloomFilter,
        items: Items<'c>,
        ctx: &Ctx<'_>,
        mut log: Log<'c>,
    ) -> Outcome<'c> {
        let (answers, failure) = add_many(filter, items, ctx);
        let mut replies = Vec::with_capacity(items.len());
        replies.extend(answers.iter().map(|&added| Reply::Bool(added)));
        // The first item that failed ends the command, its error the last reply.
        replies.extend(failure);
        if let Some(record) = added_record("BF.MADD", self.key, items, &answers) {
            log.push(record);
        }
        Outcome {
            reply: Reply::Array(replies),
            log,
        }
    }
}

/// The `BF.*` parsers, one per row of the [command table](crate::table), which calls
/// each once the arguments satisfy the row's arity.
pub(crate) mod parse {
    use super::*;

    fn bloom<'a>(args: Args<'a>, op: Op<'a>) -> BloomCommand<'a> {
        BloomCommand { key: args[1], op }
    }

    /// What `BF.ADD`/`BF.MADD` create a missing key with: the defaults, when it runs. (A
    /// logged add never creates: its key's creation is logged before it.)
    const FROM_DEFAULTS: Params = Params {
        error_rate: None,
        capacity: None,
        growth: Growth::Default,
        layout: None,
        probes: ClassicProbes::Rotating,
        blocked_probes: BlockedProbes::TwoSeeds,
    };

    pub(crate) fn reserve<'a>(
        args: Args<'a>,
        origin: LazyOrigin<'_>,
    ) -> Result<BloomCommand<'a>, Reply> {
        let origin = origin();
        // RedisBloom's longest form has 7 arguments; `LAYOUT word` (a client's extension,
        // or what a logged creation names) may add two.
        let most = if origin == Origin::Log || layout_at(args).is_some() {
            9
        } else {
            7
        };
        if args.len() > most {
            return Err(wrong_arity("bf.reserve"));
        }
        parse_reserve(args, origin).map(|op| bloom(args, op))
    }

    pub(crate) fn add<'a>(args: Args<'a>, _: LazyOrigin<'_>) -> Result<BloomCommand<'a>, Reply> {
        let items = &args[2..];
        Ok(bloom(
            args,
            Op::Add {
                items,
                multi: false,
                create: Some(FROM_DEFAULTS),
            },
        ))
    }

    pub(crate) fn madd<'a>(args: Args<'a>, _: LazyOrigin<'_>) -> Result<BloomCommand<'a>, Reply> {
        let items = &args[2..];
        Ok(bloom(
            args,
            Op::Add {
                items,
                multi: true,
                create: Some(FROM_DEFAULTS),
            },
        ))
    }

    pub(crate) fn insert<'a>(args: Args<'a>, _: LazyOrigin<'_>) -> Result<BloomCommand<'a>, Reply> {
        parse_insert(args).map(|op| bloom(args, op))
    }

    pub(crate) fn exists<'a>(args: Args<'a>, _: LazyOrigin<'_>) -> Result<BloomCommand<'a>, Reply> {
        let items = &args[2..];
        Ok(bloom(
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
    ) -> Result<BloomCommand<'a>, Reply> {
        let items = &args[2..];
        Ok(bloom(args, Op::Exists { items, multi: true }))
    }

    pub(crate) fn info<'a>(args: Args<'a>, _: LazyOrigin<'_>) -> Result<BloomCommand<'a>, Reply> {
        if args.len() > 3 {
            return Err(wrong_arity("bf.info"));
        }
        Ok(bloom(args, Op::Info(args.get(2).copied())))
    }

    pub(crate) fn merge<'a>(args: Args<'a>, _: LazyOrigin<'_>) -> Result<BloomCommand<'a>, Reply> {
        Ok(bloom(args, Op::Merge(&args[2..])))
    }

    pub(crate) fn card<'a>(args: Args<'a>, _: LazyOrigin<'_>) -> Result<BloomCommand<'a>, Reply> {
        Ok(bloom(args, Op::Card))
    }

    pub(crate) fn debug<'a>(args: Args<'a>, _: LazyOrigin<'_>) -> Result<BloomCommand<'a>, Reply> {
        Ok(bloom(args, Op::Debug))
    }

    crate::dump::dump_parsers!(BloomCommand, bloom);
}

/// The command that finishes a restore, for the "still being restored" error.
pub(crate) const LOADCHUNK: &str = "BF.LOADCHUNK";

/// The key's filter, or RedisBloom's status for it.
pub(crate) fn lookup(value: Option<&Value>) -> Result<&ScalableBloomFilter, Lookup> {
    match value {
        Some(Value::Bloom(f)) => Ok(f),
        Some(Value::Loading(d)) if d.is_bloom() => Err(Lookup::Loading),
        Some(Value::Importing(d)) if !d.is_cuckoo() => Err(Lookup::Loading),
        Some(_) => Err(Lookup::WrongType),
        None => Err(Lookup::Missing),
    }
}

fn parse_reserve<'a>(args: Args<'a>, origin: Origin) -> Result<Op<'a>, Reply> {
    let error_rate = parse_f64(args[2]).ok_or_else(|| Reply::error("ERR bad error rate"))?;
    if !(error_rate > 0.0 && error_rate < 1.0) {
        return Err(Reply::error(
            "ERR error rate must be in the range (0.000000, 1.000000)",
        ));
    }
    let capacity = parse_i64(args[3]).ok_or_else(|| Reply::error("ERR bad capacity"))?;
    if !(1..=MAX_CAPACITY).contains(&capacity) {
        return Err(Reply::error(
            "ERR capacity must be in the range [1, 1073741824]",
        ));
    }
    let nonscaling = arg_index(args, "NONSCALING", origin).is_some();
    let expansion = arg_index(args, "EXPANSION", origin);
    if expansion == Some(args.len() - 1) {
        return Err(Reply::error("ERR no expansion"));
    }
    let growth = match expansion {
        Some(at) => {
            let x = long_long(args.get(at + 1)).ok_or_else(|| Reply::error("ERR bad expansion"))?;
            // RedisBloom also refuses an EXPANSION when `bf-expansion-factor` is 0; here only
            // the NONSCALING keyword conflicts, so that a logged RESERVE replays the same
            // under any configuration (see the README's list of differences).
            if x != 0 && nonscaling {
                return Err(Reply::error("Nonscaling filters cannot expand"));
            }
            if !(0..=MAX_EXPANSION).contains(&x) {
                return Err(Reply::error(
                    "ERR expansion must be in the range [0, 32768]",
                ));
            }
            if x == 0 {
                Growth::NonScaling
            } else {
                Growth::Scaling(x as u32)
            }
        }
        None if nonscaling => Growth::NonScaling,
        None => Growth::Default,
    };
    let (layout, probes, blocked_probes) = reserve_layout(args, origin)?;
    Ok(Op::Reserve(Params {
        error_rate: Some(error_rate.min(MAX_ERROR_RATE)),
        capacity: Some(capacity as u64),
        growth,
        layout,
        probes,
        blocked_probes,
    }))
}

/// Where `LAYOUT` stands in a `BF.RESERVE`: after the rate and the capacity (so that a key
/// named `layout` stays a key, for a client too: `LAYOUT` is bloomkit's, and RedisBloom's
/// search from the command name on need not be kept for it).
fn layout_at(args: &[&[u8]]) -> Option<usize> {
    (4..args.len()).find(|&at| is_word(args[at], "LAYOUT"))
}

/// The word a creation of classic layers probing by [`ClassicProbes::Rotating`] is logged
/// with (`LAYOUT CLASSIC2`): a logged `LAYOUT CLASSIC` was written before that derivation
/// existed and replays into [`ClassicProbes::DoubleHashing`], the bits it was acknowledged
/// from. A build that does not know the word refuses the record (`ERR bad layout`), and
/// with it the log, rather than replaying it into other probes. A client may send it too:
/// it names what `CLASSIC` names for a client.
const LOGGED_ROTATING_CLASSIC: &str = "CLASSIC2";

/// The word a creation of blocked layers probing by [`BlockedProbes::TwoSeeds`] is logged
/// with (`LAYOUT BLOCKED2`), for the same reason: a logged creation of blocked layers without
/// it was written before that derivation existed and replays into [`BlockedProbes::OneSeed`];
/// a build that does not know the word refuses the record. A client may send it too: it
/// names what `BLOCKED` names for a client.
const LOGGED_TWO_SEED_BLOCKED: &str = "BLOCKED2";

/// The layout a `BF.RESERVE` names with `LAYOUT CLASSIC|BLOCKED` (or `CLASSIC2`), or `None`
/// for `bf-layout`'s, and how its classic layers probe. A logged creation without it is
/// blocked: logs written before the server created classic layers hold blocked filters and
/// must replay into the same bits (items that were false positives then were never logged;
/// replayed into another layout, some would come back absent). For the same reason a logged
/// `LAYOUT CLASSIC` probes by [`ClassicProbes::DoubleHashing`], and a logged creation of
/// blocked layers but `LAYOUT BLOCKED2` by [`BlockedProbes::OneSeed`].
fn reserve_layout(
    args: &[&[u8]],
    origin: Origin,
) -> Result<(Option<LayerLayout>, ClassicProbes, BlockedProbes), Reply> {
    let logged = origin == Origin::Log;
    let blocked = if logged {
        BlockedProbes::OneSeed
    } else {
        BlockedProbes::TwoSeeds
    };
    let Some(at) = layout_at(args) else {
        let layout = logged.then_some(LayerLayout::Blocked);
        return Ok((layout, ClassicProbes::Rotating, blocked));
    };
    let word = args.get(at + 1).copied().unwrap_or_default();
    if is_word(word, LOGGED_ROTATING_CLASSIC) {
        let classic = Some(LayerLayout::Classic);
        return Ok((classic, ClassicProbes::Rotating, BlockedProbes::TwoSeeds));
    }
    if is_word(word, LOGGED_TWO_SEED_BLOCKED) {
        let layout = Some(LayerLayout::Blocked);
        return Ok((layout, ClassicProbes::Rotating, BlockedProbes::TwoSeeds));
    }
    let layout = crate::params::layout_named(word)
        .ok_or_else(|| Reply::error("ERR bad layout: LAYOUT takes CLASSIC or BLOCKED"))?;
    Ok(match layout {
        LayerLayout::Classic if logged => (
            Some(layout),
            ClassicProbes::DoubleHashing,
            BlockedProbes::TwoSeeds,
        ),
        LayerLayout::Classic => (
            Some(layout),
            ClassicProbes::Rotating,
            BlockedProbes::TwoSeeds,
        ),
        _ => (Some(layout), ClassicProbes::Rotating, blocked),
    })
}

/// `BF.INSERT key [CAPACITY c] [ERROR e] [EXPANSION x] [NOCREATE] [NONSCALING] ITEMS ...`,
/// scanned as RedisBloom scans it: by the first letter of each option (and the second of
/// `ERROR`, the third of `NOCREATE`), stopping at `ITEMS`.
fn parse_insert<'a>(args: Args<'a>) -> Result<Op<'a>, Reply> {
    let mut error_rate = None;
    let mut capacity = None;
    let mut expansion = None;
    let mut nonscaling = false;
    let mut nocreate = false;
    let mut items_at = None;
    let mut pos = 2;
    let lower = |arg: &[u8], i: usize| arg.get(i).map(u8::to_ascii_lowercase);
    while pos < args.len() && items_at.is_none() {
        let arg = args[pos];
        match lower(arg, 0) {
            Some(b'i') => {
                pos += 1;
                items_at = Some(pos);
            }
            Some(b'e') => {
                pos += 1;
                let value = args.get(pos).ok_or_else(|| wrong_arity("bf.insert"))?;
                if lower(arg, 1) == Some(b'r') {
                    let rate = parse_f64(value)
                        .filter(|r| *r > 0.0 && *r < 1.0)
                        .ok_or_else(|| Reply::error("Bad error rate"))?;
                    error_rate = Some(rate.min(MAX_ERROR_RATE));
                } else {
                    let x = parse_i64(value)
                        .filter(|x| (0..=MAX_EXPANSION).contains(x))
                        .ok_or_else(|| Reply::error("Bad expansion"))?;
                    expansion = Some(x as u32);
                }
                pos += 1;
            }
            Some(b'c') => {
                pos += 1;
                let value = args.get(pos).ok_or_else(|| wrong_arity("bf.insert"))?;
                let c = parse_i64(value)
                    .filter(|c| (1..=MAX_CAPACITY).contains(c))
                    .ok_or_else(|| Reply::error(BAD_CAPACITY))?;
                capacity = Some(c as u64);
                pos += 1;
            }
            Some(b'n') => {
                if lower(arg, 2) == Some(b'c') {
                    nocreate = true;
                } else {
                    nonscaling = true;
                }
                pos += 1;
            }
            _ => return Err(Reply::error(UNKNOWN_ARGUMENT)),
        }
    }
    let items_at = items_at
        .filter(|&at| at < args.len())
        .ok_or_else(|| wrong_arity("bf.insert"))?;
    // RedisBloom: EXPANSION 0 and NONSCALING make a non-scaling filter, and a
    // non-scaling default stays non-scaling whatever EXPANSION says (resolved in `create`).
    let growth = match expansion {
        _ if nonscaling => Growth::NonScaling,
        Some(0) => Growth::NonScaling,
        Some(x) => Growth::InsertExpansion(x),
        None => Growth::Default,
    };
    Ok(Op::Add {
        items: &args[items_at..],
        multi: true,
        create: (!nocreate).then_some(Params {
            error_rate,
            capacity,
            growth,
            layout: None,
            probes: ClassicProbes::Rotating,
            blocked_probes: BlockedProbes::TwoSeeds,
        }),
    })
}

/// Builds a filter after asking the budget, and the `BF.RESERVE` that replays it.
#[inline(never)]
fn create<'c>(
    key: &'c [u8],
    params: &Params,
    ctx: &Ctx<'_>,
) -> Result<(ScalableBloomFilter, Vec<Word<'c>>), Reply> {
    let d: &Defaults = ctx.defaults;
    let could_not = || Reply::error("ERR could not create filter");
    let error_rate = params
        .error_rate
        .unwrap_or(d.bf_error_rate.min(MAX_ERROR_RATE));
    let capacity = params.capacity.unwrap_or(d.bf_initial_size);
    let valid =
        error_rate > 0.0 && error_rate < 1.0 && (1..=MAX_CAPACITY as u64).contains(&capacity);
    if !valid {
        return Err(could_not());
    }
    let default_growth = match d.bf_expansion_factor {
        0 => Growth::NonScaling,
        x => Growth::Scaling(x),
    };
    let growth = match params.growth {
        Growth::Default => default_growth,
        // BF.INSERT keeps a non-scaling default whatever EXPANSION says, as RedisBloom does.
        Growth::InsertExpansion(_) if default_growth == Growth::NonScaling => Growth::NonScaling,
        Growth::InsertExpansion(x) => Growth::Scaling(x),
        g => g,
    };
    // The first layer gets the whole rate without scaling, half of it with (the tightening
    // RedisBloom fixes at 0.5), and no layer is planned below 2^-64.
    let first_share = match growth {
        Growth::NonScaling => 1.0,
        _ => 1.0 - ScalableBloomFilter::DEFAULT_TIGHTENING,
    };
    let smallest = ScalableBloomFilter::MIN_LAYER_FP_RATE / first_share;
    if error_rate < smallest {
        return Err(Reply::error(format!(
            "ERR error rate {error_rate:e} is below the smallest this server accepts, \
             {smallest:e}: every probe comes from one 64-bit hash, so no layer can be planned \
             below 2^-64{}",
            if first_share < 1.0 {
                ", and a scaling filter's first layer gets half the rate"
            } else {
                ""
            }
        )));
    }
    let layout = params.layout.unwrap_or(d.bf_layout);
    let builder = ScalableBloomFilter::builder(capacity, error_rate)
        .layout(layout)
        .classic_probes(params.probes)
        .blocked_probes(params.blocked_probes);
    // The layout word a record needs to replay into these probes, if any.
    let layout_word = match (layout, params.probes, params.blocked_probes) {
        (LayerLayout::Classic, ClassicProbes::DoubleHashing, _) => Some("CLASSIC"),
        (LayerLayout::Classic, ..) => Some(LOGGED_ROTATING_CLASSIC),
        (_, _, BlockedProbes::OneSeed) => None,
        _ => Some(LOGGED_TWO_SEED_BLOCKED),
    };
    let (builder, mut growth_words) = match growth {
        Growth::Scaling(x) if x as i64 <= MAX_EXPANSION => {
            (builder.expansion(x), vec![word("EXPANSION"), num(x)])
        }
        // Logged as `EXPANSION 0` with a layout, so that the record has 8 arguments (see
        // below); `NONSCALING` otherwise, as logs have always said.
        Growth::NonScaling if layout_word.is_some() => (
            builder.non_scaling(true),
            vec![word("EXPANSION"), num(0u32)],
        ),
        Growth::NonScaling => (builder.non_scaling(true), vec![word("NONSCALING")]),
        _ => return Err(could_not()),
    };
    if let Some(name) = layout_word {
        // Eight arguments: more than any client's `BF.RESERVE` may have, so a build from
        // before the layout existed refuses this record (and with it the log) instead of
        // replaying it into other layers; a build from before the word, likewise.
        growth_words.extend([word("LAYOUT"), word(name)]);
    }
    let memory_error = |e: Error| match e {
        Error::TooLarge { .. } | Error::OutOfMemory { .. } => Reply::error(INSUFFICIENT_MEMORY),
        _ => could_not(),
    };
    let planned = builder.planned_memory_bytes().map_err(memory_error)?;
    admit_new_filter(ctx.budget, planned)?;
    let filter = builder.build().map_err(memory_error)?;
    let mut rest = vec![num(error_rate), num(capacity)];
    rest.extend(growth_words);
    Ok((filter, command("BF.RESERVE", key, rest)))
}

/// Adds the items in order, as many as can be, through the filter's batched insert (which
/// asks the budget before each layer it grows): whether each was added, and the error reply
/// of the item that stopped the batch, if one did.
fn add_many(
    filter: &mut ScalableBloomFilter,
    items: &[&[u8]],
    ctx: &Ctx<'_>,
) -> (Answers, Option<Reply>) {
    let hashes = item_hashes(items, filter.seed());
    let mut added = Answers::new();
    let mut refused = false;
    let may_grow = |bytes: usize| {
        refused = !ctx.budget.within_maxmemory(bytes);
        !refused
    };
    // One item (`BF.ADD`) through the one-key call, which the batch would make for it after
    // a prefetch that cannot overlap anything: no answer buffer to allocate.
    let result = match hashes[..] {
        [hash] => filter
            .insert_hash_within(hash, may_grow)
            .map(|new| added.push(new)),
        _ => {
            let mut answers = Vec::with_capacity(items.len());
            let result = filter.insert_many_hashes_within(&hashes, may_grow, &mut answers);
            added = Answers::from_vec(answers);
            result
        }
    };
    let failure = result
        .err()
        .map(|_| Reply::error(add_error(refused, filter.is_scaling())));
    (added, failure)
}

/// What an add that failed answers: `refused` if the memory budget refused the layer it
/// needed, `scaling` if the filter may grow.
fn add_error(refused: bool, scaling: bool) -> &'static str {
    if refused {
        OOM
    } else if scaling {
        "ERR problem inserting into filter"
    } else {
        "ERR non scaling filter is full"
    }
}

fn exists(value: Option<&Value>, items: &[&[u8]], multi: bool) -> Reply {
    let answer = |item: &&[u8]| match value {
        Some(Value::Bloom(f)) => Reply::Bool(f.contains_hash(hash_bytes_with_seed(item, f.seed()))),
        _ => Reply::Bool(false),
    };
    // A filter still being restored cannot answer yet; any other key (or none) answers 0,
    // as RedisBloom does.
    if let Err(Lookup::Loading) = lookup(value) {
        return Lookup::Loading.error(LOADCHUNK);
    }
    if multi {
        let Some(Value::Bloom(f)) = value else {
            return Reply::Array(vec![Reply::Bool(false); items.len()]);
        };
        let hashes = item_hashes(items, f.seed());
        let mut answers = Vec::with_capacity(items.len());
        f.contains_many_hashes(&hashes, &mut answers);
        Reply::Array(answers.into_iter().map(Reply::Bool).collect())
    } else {
        items.first().map(answer).unwrap_or(Reply::Bool(false))
    }
}

fn info(value: Option<&Value>, field: Option<&[u8]>) -> Reply {
    match lookup(value) {
        Ok(f) => info_reply(&figures(f), field),
        Err(status) => status.error(LOADCHUNK),
    }
}

/// `BF.INFO`'s figures for a bloomkit chain.
fn figures(f: &ScalableBloomFilter) -> BloomFigures {
    BloomFigures {
        capacity: f.capacity(),
        size: redisbloom_size(f),
        filters: f.num_layers() as u64,
        items: f.len(),
        expansion: f.is_scaling().then(|| f.expansion()),
        fill: f.fill_ratio(),
        estimated_items: f.estimated_count(),
        estimated_fp_rate: f.estimated_fp_rate(),
    }
}

/// `BF.INFO`'s reply: every field, or the one `field` names.
fn info_reply(f: &BloomFigures, field: Option<&[u8]>) -> Reply {
    let int = |n: u64| Reply::Integer(n.min(i64::MAX as u64) as i64);
    let capacity = int(f.capacity);
    let size = int(f.size);
    let filters = int(f.filters);
    let items = int(f.items);
    let expansion = f
        .expansion
        .map_or(Reply::Null, |e| Reply::Integer(i64::from(e)));
    let Some(field) = field else {
        let values = [
            capacity,
            size,
            filters,
            items,
            expansion,
            Reply::Double(f.fill),
            int(f.estimated_items),
            Reply::Double(f.estimated_fp_rate),
        ];
        let names = INFO_FIELDS
            .iter()
            .map(|name| Reply::Simple(name.to_string()));
        return Reply::Map(names.zip(values).collect());
    };
    let field = [
        ("capacity", InfoField::Capacity),
        ("size", InfoField::Size),
        ("filters", InfoField::Filters),
        ("items", InfoField::Items),
        ("expansion", InfoField::Expansion),
    ]
    .into_iter()
    .find(|(name, _)| is_word(field, name))
    .map(|(_, f)| f);
    // One field: RedisBloom answers a one-element array in RESP2 and a one-entry map in
    // RESP3.
    let (name, value) = match field {
        Some(InfoField::Capacity) => ("Capacity", capacity),
        Some(InfoField::Size) => ("Size", size),
        Some(InfoField::Filters) => ("Number of filters", filters),
        Some(InfoField::Items) => ("Number of items inserted", items),
        Some(InfoField::Expansion) => ("Expansion rate", expansion),
        None => return Reply::error("Invalid information value"),
    };
    Reply::PerProtocol {
        resp2: Box::new(Reply::Array(vec![value.clone()])),
        resp3: Box::new(Reply::Map(vec![(Reply::Simple(name.to_string()), value)])),
    }
}

/// RedisBloom's size of a chain's struct (`SBChain`), and what it adds per layer (its link
/// and its `struct bloom`), in the `BF.INFO` "Size" of RedisBloom 2.8 on x86-64: 32 + 64·n
/// + the layers' bytes (measured: 240 for one layer of 144 bytes, 536 for three of 312).
const REDISBLOOM_CHAIN_BYTES: u64 = 32;
const REDISBLOOM_LAYER_BYTES: u64 = 64;

/// RedisBloom's `BF.INFO` "Size" for this filter: its structs and the bytes of the layers it
/// would have built with the same capacities and rates (RedisBloom's sizing, which a classic
/// layer's bits are to the word), so that the reply is RedisBloom's whatever this filter's
/// layout. The memory this server holds is [`ScalableBloomFilter::memory_bytes`] (`MEMORY
/// USAGE`, `INFO memory`).
fn redisbloom_size(f: &ScalableBloomFilter) -> u64 {
    f.layers()
        .map(|layer| REDISBLOOM_LAYER_BYTES.saturating_add(redisbloom_layer_bytes(&layer)))
        .fold(REDISBLOOM_CHAIN_BYTES, u64::saturating_add)
}

/// The bytes RedisBloom allocates for a layer of this capacity and rate: the layer's own
/// bits when it is classic (the same plan), the classic plan's otherwise.
fn redisbloom_layer_bytes(layer: &LayerInfo) -> u64 {
    let bits = bloomkit::sizing::classic_plan(layer.capacity, layer.fp_rate)
        .map_or(layer.num_bits, |plan| plan.num_bits);
    bits / 8
}

/// `BF.DEBUG key`: RedisBloom's lines, filled with this filter's figures: `size:` the items,
/// then per layer its bytes, bits, probes, the hash width (64), its capacity, its items and
/// its planned rate (printed as C's `%g`).
fn debug(f: &ScalableBloomFilter) -> Reply {
    let mut lines = Vec::with_capacity(1 + f.num_layers());
    lines.push(Reply::bulk(format!("size:{}", f.len())));
    for layer in f.layers() {
        lines.push(Reply::bulk(format!(
            "bytes:{} bits:{} hashes:{} hashwidth:64 capacity:{} size:{} ratio:{}",
            layer.num_bits / 8,
            layer.num_bits,
            layer.num_hashes,
            layer.capacity,
            layer.inserted,
            c_general(layer.fp_rate)
        )));
    }
    Reply::Array(lines)
}

/// `x` as C's `printf("%g")` prints it: six significant digits, trailing zeros dropped, in
/// exponent form (`6.25e-05`) below 10⁻⁴ or from 10⁶ on.
fn c_general(x: f64) -> String {
    const DIGITS: usize = 6;
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    // Rounded to six significant digits first: the exponent is that of the rounded value.
    let scientific = format!("{:.*e}", DIGITS - 1, x);
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let trim = |s: String| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    };
    if (-4..DIGITS as i32).contains(&exponent) {
        let decimals = (DIGITS as i32 - 1 - exponent).max(0) as usize;
        trim(format!("{x:.decimals$}"))
    } else {
        let sign = if exponent < 0 { '-' } else { '+' };
        format!(
            "{}e{sign}{:02}",
            trim(mantissa.to_string()),
            exponent.unsigned_abs()
        )
    }
}

fn scandump(value: Option<&Value>, iter: Option<i64>, ctx: &Ctx<'_>) -> Reply {
    let imported = matches!(value, Some(Value::RedisBloom(_)));
    let Some(value) = value.filter(|_| imported || lookup(value).is_ok()) else {
        return match lookup(value) {
            Err(status) => status.error(LOADCHUNK),
            Ok(_) => Lookup::Missing.error(LOADCHUNK),
        };
    };
    let Some(iter) = iter else {
        return Reply::error(SCANDUMP_ITER_NOT_NUMERIC);
    };
    dump::scandump(value, iter, ctx.budget).into_reply(dump::bloom_end)
}

fn loadchunk<'c>(
    slot: &mut Option<Value>,
    iter: i64,
    data: &[u8],
    args: Items<'c>,
    ctx: &Ctx<'_>,
) -> Outcome<'c> {
    let changed = || Outcome {
        reply: Reply::Ok,
        log: smallvec![verbatim(LOADCHUNK, args)],
    };
    match lookup(slot.as_ref()) {
        Err(Lookup::Missing) if iter == 1 => {
            match dump::start(bloomkit::FilterKind::Scalable, data, ctx.budget) {
                Ok(value) => {
                    *slot = Some(value);
                    changed()
                }
                Err(e) => Outcome::unchanged(e.bloom_reply()),
            }
        }
        Err(status @ (Lookup::Missing | Lookup::WrongType)) => {
            Outcome::unchanged(status.error(LOADCHUNK))
        }
        Ok(_) | Err(Lookup::Loading) => dump::load_outcome(
            slot,
            LOADCHUNK,
            iter,
            data,
            args,
            ctx.budget,
            dump::LoadError::bloom_reply,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::c_general;

    #[test]
    fn ratios_print_as_c_prints_them() {
        for (x, c) in [
            (0.005, "0.005"),
            (0.00025, "0.00025"),
            (0.000125, "0.000125"),
            (0.0000625, "6.25e-05"),
            (0.01, "0.01"),
            (0.25, "0.25"),
            (1.0 / 3.0, "0.333333"),
            (0.0001, "0.0001"),
            (0.00009999999, "0.0001"),
            (1e-10, "1e-10"),
            (123456.0, "123456"),
            (1234567.0, "1.23457e+06"),
            (0.5, "0.5"),
        ] {
            assert_eq!(c_general(x), c, "{x}");
        }
    }
}
