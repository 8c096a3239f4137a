//! What the `BF.*` and `CF.*` commands share: finding a key's filter, asking the memory
//! budget, RedisBloom's argument search, and building what they log.

use bytes::Bytes;
use smallvec::SmallVec;

use crate::budget::Budget;
use crate::errors::{INSUFFICIENT_MEMORY, NOT_FOUND, OOM, WRONGTYPE};
use crate::reply::Reply;
use crate::run::Record;

/// Why a filter command cannot use a key, in RedisBloom's terms (`statusStrerror`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Lookup {
    /// No such key.
    Missing,
    /// A key of the other family.
    WrongType,
    /// A filter of this family still arriving in `LOADCHUNK` chunks.
    Loading,
}

impl Lookup {
    /// The error RedisBloom answers for this status; `loading` names the command that
    /// finishes a restore.
    pub(crate) fn error(self, loadchunk: &str) -> Reply {
        match self {
            Lookup::Missing => Reply::error(NOT_FOUND),
            Lookup::WrongType => Reply::error(WRONGTYPE),
            Lookup::Loading => Reply::Error(format!(
                "ERR the filter is still being restored: send the rest of its chunks with \
                 {loadchunk}"
            )),
        }
    }
}

/// Asks the budget for `bytes` of a new filter: `--maxmemory` first (Redis refuses a
/// deny-oom command before it runs), then what the machine has.
pub(crate) fn admit_new_filter(budget: &dyn Budget, bytes: usize) -> Result<(), Reply> {
    if !budget.within_maxmemory(bytes) {
        return Err(Reply::error(OOM));
    }
    if budget
        .machine_available()
        .is_some_and(|available| bytes > available)
    {
        return Err(Reply::error(INSUFFICIENT_MEMORY));
    }
    Ok(())
}

/// Who sent a command: a client, or the append-only log being replayed.
///
/// The one rule that differs is where [`arg_index`] looks for option keywords.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Origin {
    /// A client: RedisBloom's rules, quirks included.
    Client,
    /// A command this server logged. Creations are logged naming every option after the
    /// key, so options are searched after the key: a key spelled like an option
    /// (`BF.ADD expansion x` logs `BF.RESERVE expansion 0.01 100 EXPANSION 2`) must stay a
    /// key, or the replay builds another filter, or fails and stops start-up.
    Log,
}

/// Who sent a command, asked only by the parsers that need to know: a host may find out at a
/// cost (a module asks the engine for its context's flags), and most commands parse alike
/// either way.
pub(crate) type LazyOrigin<'a> = &'a dyn Fn() -> Origin;

/// RedisBloom's `RMUtil_ArgIndex`: the first argument equal to `word` (ignoring case).
/// For a client it searches from the command name on, as RedisBloom searches (so a key
/// spelled like an option is found as that option, exactly as there); for the log, after
/// the key (see [`Origin::Log`]).
pub(crate) fn arg_index(args: &[Bytes], word: &str, origin: Origin) -> Option<usize> {
    let first = match origin {
        Origin::Client => 0,
        Origin::Log => 2,
    };
    args.iter()
        .enumerate()
        .skip(first)
        .find(|(_, a)| crate::args::is_word(a, word))
        .map(|(at, _)| at)
}

/// `RedisModule_StringToLongLong` on an optional argument (`None` fails, where RedisBloom
/// would read past the end of its argument vector).
pub(crate) fn long_long(arg: Option<&Bytes>) -> Option<i64> {
    arg.and_then(|a| crate::args::parse_i64(a))
}

/// A command's items (`BF.ADD`'s one, `BF.MADD`'s many), as a slice. Most commands carry
/// exactly one, which is held without the allocation a vector would make per request.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Items {
    One(Bytes),
    Many(Vec<Bytes>),
}

impl Items {
    /// The items `args` name (usually the arguments after the key).
    pub(crate) fn of(args: &[Bytes]) -> Items {
        match args {
            [one] => Items::One(one.clone()),
            many => Items::Many(many.to_vec()),
        }
    }
}

impl std::ops::Deref for Items {
    type Target = [Bytes];

    fn deref(&self) -> &[Bytes] {
        match self {
            Items::One(item) => std::slice::from_ref(item),
            Items::Many(items) => items,
        }
    }
}

/// A command that changed its key, logged verbatim: the arguments as the client sent them.
pub(crate) fn verbatim(args: &[Bytes]) -> Vec<Bytes> {
    args.to_vec()
}

/// What an insert of `items` logs under `name` (`BF.MADD`, `CF.ADD`) once it answered
/// `answers` for the items it tried, in order (fewer than the items if it stopped early): the
/// items that were new, or nothing. When every item was new, the record is the command's
/// own key and items, copied nowhere.
pub(crate) fn added_record<'c>(
    name: &'static str,
    key: &'c Bytes,
    items: &'c [Bytes],
    answers: &[bool],
) -> Option<Record<'c>> {
    let added = answers.iter().filter(|&&new| new).count();
    if added == 0 {
        return None;
    }
    if added == items.len() {
        return Some(Record::Items { name, key, items });
    }
    let mut words = Vec::with_capacity(2 + added);
    words.push(word(name));
    words.push(key.clone());
    words.extend(
        items
            .iter()
            .zip(answers)
            .filter(|(_, &new)| new)
            .map(|(item, _)| item.clone()),
    );
    Some(Record::Words(words))
}

/// An argument list from string pieces (the name, then words) and byte strings.
pub(crate) fn command(name: &'static str, key: &Bytes, rest: Vec<Bytes>) -> Vec<Bytes> {
    let mut out = Vec::with_capacity(2 + rest.len());
    out.push(Bytes::from_static(name.as_bytes()));
    out.push(key.clone());
    out.extend(rest);
    out
}

/// A number as a log argument.
pub(crate) fn num(n: impl ToString) -> Bytes {
    Bytes::from(n.to_string())
}

/// A keyword as a log argument.
pub(crate) fn word(w: &'static str) -> Bytes {
    Bytes::from_static(w.as_bytes())
}

/// The hashes of `items` for a filter of hash seed `seed`, for its batched calls: items are
/// hashed as their raw bytes, as the one-key commands hash them. One item's hash is held
/// inline: inside Redis every allocation goes through the engine's accounting allocator, and
/// the buffers of a one-item command were a measurable share of its instructions.
pub(crate) fn item_hashes(items: &[Bytes], seed: u64) -> Hashes {
    items
        .iter()
        .map(|item| bloomkit::hash_bytes_with_seed(item, seed))
        .collect()
}

/// The items' hashes ([`item_hashes`]): inline for one.
pub(crate) type Hashes = SmallVec<[u64; 1]>;

/// What an insert answered for each item it tried, in order: inline for one.
pub(crate) type Answers = SmallVec<[bool; 1]>;
