//! What the `BF.*` and `CF.*` commands share: finding a key's filter, asking the memory
//! budget, RedisBloom's argument search, and building what they log.

use smallvec::SmallVec;

use crate::budget::Budget;
use crate::errors::{INSUFFICIENT_MEMORY, NOT_FOUND, OOM, WRONGTYPE};
use crate::reply::Reply;
use crate::run::{Args, Log, Outcome, Record, Word};

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
pub(crate) fn arg_index(args: &[&[u8]], word: &str, origin: Origin) -> Option<usize> {
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
pub(crate) fn long_long(arg: Option<&&[u8]>) -> Option<i64> {
    arg.and_then(|a| crate::args::parse_i64(a))
}

/// A command's items (`BF.ADD`'s one, `BF.MADD`'s many): a slice of its arguments.
pub(crate) type Items<'a> = Args<'a>;

/// A command that changed its key, logged verbatim under `name`: the key and the words after
/// it as the client sent them (`args`, name first), borrowed.
pub(crate) fn verbatim<'a>(name: &'static str, args: Args<'a>) -> Record<'a> {
    Record::Items {
        name,
        key: args.get(1).copied().unwrap_or_default(),
        items: args.get(2..).unwrap_or_default(),
    }
}

/// What an insert of `items` logs under `name` (`BF.MADD`, `CF.ADD`) once it answered
/// `answers` for the items it tried, in order (fewer than the items if it stopped early): the
/// items that were new, or nothing. When every item was new, the record is the command's
/// own key and items, copied nowhere.
pub(crate) fn added_record<'c>(
    name: &'static str,
    key: &'c [u8],
    items: Items<'c>,
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
    words.push(Word::Borrowed(key));
    words.extend(
        items
            .iter()
            .zip(answers)
            .filter(|(_, &new)| new)
            .map(|(item, _)| Word::Borrowed(*item)),
    );
    Some(Record::Words(words))
}

/// What a one-item add (`BF.ADD`, `CF.ADD`, `CF.ADDNX`) answers and logs after the creation
/// logged in `log`, once `result` says whether its item was new, or names the error to
/// answer: a new item is logged as the command's own key and item under `name`. The batch's
/// path for one item, without its buffers (inside Redis they were a sixth of a `CF.ADD`'s
/// instructions; the insert stays in the caller, where it inlines: passed in as a closure,
/// it cost 70 instructions more).
#[inline(always)]
pub(crate) fn one_added<'c>(
    name: &'static str,
    key: &'c [u8],
    items: Items<'c>,
    mut log: Log<'c>,
    result: Result<bool, &'static str>,
) -> Outcome<'c> {
    let reply = match result {
        Ok(new) => {
            if new {
                let record = Record::Items { name, key, items };
                // The common case, a key that existed, logs nothing before: the record
                // becomes the log's inline buffer where it is made. `push` is out of line
                // and read the record back with wider loads than the stores that had just
                // written it, a stall on forwarding them (1.4% of a pipelined `CF.ADD`'s
                // time inside Redis, by perf's clock samples).
                if log.is_empty() {
                    log = Log::from_buf([record]);
                } else {
                    log.push(record);
                }
            }
            Reply::Bool(new)
        }
        Err(error) => Reply::error(error),
    };
    Outcome { reply, log }
}

/// An argument list from string pieces (the name, then words) and byte strings.
pub(crate) fn command<'c>(name: &'static str, key: &'c [u8], rest: Vec<Word<'c>>) -> Vec<Word<'c>> {
    let mut out = Vec::with_capacity(2 + rest.len());
    out.push(word(name));
    out.push(Word::Borrowed(key));
    out.extend(rest);
    out
}

/// A number as a log argument.
pub(crate) fn num(n: impl ToString) -> Word<'static> {
    Word::Owned(n.to_string().into_bytes())
}

/// A keyword as a log argument.
pub(crate) fn word(w: &'static str) -> Word<'static> {
    Word::Borrowed(w.as_bytes())
}

/// The hashes of `items` for a filter of hash seed `seed`, for its batched calls: items are
/// hashed as their raw bytes, as the one-key commands hash them. One item's hash is held
/// inline: inside Redis every allocation goes through the engine's accounting allocator, and
/// the buffers of a one-item command were a measurable share of its instructions.
pub(crate) fn item_hashes(items: &[&[u8]], seed: u64) -> Hashes {
    let hash = |item: &&[u8]| bloomkit::hash_bytes_with_seed(item, seed);
    // Not `collect`: a `SmallVec`'s generic growth checks its room for every item, which
    // cost one item about as much as its hash; a `Vec` of the exact length does not.
    match items {
        [one] => smallvec::smallvec![hash(one)],
        many => {
            let mut hashes = Vec::with_capacity(many.len());
            hashes.extend(many.iter().map(hash));
            Hashes::from_vec(hashes)
        }
    }
}

/// The items' hashes ([`item_hashes`]): inline for one.
pub(crate) type Hashes = SmallVec<[u64; 1]>;

/// What an insert answered for each item it tried, in order: inline for one.
pub(crate) type Answers = SmallVec<[bool; 1]>;
