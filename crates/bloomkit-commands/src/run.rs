//! What a filter command runs with ([`Ctx`]), whether it may change its key ([`Access`]),
//! and what running it gives ([`Outcome`]).

use std::borrow::Cow;

use bytes::Bytes;
use smallvec::SmallVec;

use crate::budget::Budget;
use crate::params::Defaults;
use crate::reply::Reply;

/// A request's arguments, name first, as the host holds them: each a slice of the host's own
/// buffer (a module's strings, a server's request frame). A parsed command borrows its key
/// and items from them, and so does the record it logs, so that nothing is copied into the
/// command layer's own buffers on the way in or on the way to the log.
pub type Args<'a> = &'a [&'a [u8]];

/// Runs `f` on `items` viewed as [`Args`] (`view` gives each one's bytes): for a host whose
/// arguments are its own type (a module's strings, a server's `Bytes`). Up to eight are held
/// on the stack, more in one allocation. Not a collected `SmallVec`, whose generic growth
/// cost a three-argument command inside Redis about 300 instructions.
pub fn with_args<'t, T, R>(
    items: &'t [T],
    view: impl Fn(&'t T) -> &'t [u8],
    f: impl FnOnce(Args<'_>) -> R,
) -> R {
    const INLINE: usize = 8;
    if items.len() <= INLINE {
        let mut inline: [&[u8]; INLINE] = [&[]; INLINE];
        for (arg, item) in inline.iter_mut().zip(items) {
            *arg = view(item);
        }
        f(&inline[..items.len()])
    } else {
        let all: Vec<&[u8]> = items.iter().map(view).collect();
        f(&all)
    }
}

/// What a filter command may consult besides its key.
#[derive(Clone, Copy)]
pub struct Ctx<'a> {
    /// Defaults for implicitly created keys.
    pub defaults: &'a Defaults,
    /// The memory budget.
    pub budget: &'a dyn Budget,
    /// The host's clock: milliseconds since the Unix epoch. Asked only by a command that
    /// needs the time (an `AF.*` creation or rotation without `AT`, `AF.INFO`), so a command
    /// that does not costs no clock read. The host owns the clock (the server's keyspace
    /// clock, the engine's `RedisModule_Milliseconds`); replayed records carry their time
    /// (`AT`), so a replay never asks it.
    pub now_ms: &'a dyn Fn() -> u64,
}

/// Whether a command only reads its key (and may share it with other readers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Reads the key: `BF.EXISTS`, `CF.COUNT`, `BF.INFO`, `BF.SCANDUMP`...
    Read,
    /// May change or create the key: `BF.ADD`, `CF.DEL`, `BF.LOADCHUNK`...
    Write,
}

/// The result of a write command, which may borrow from the command that ran.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome<'c> {
    /// What to answer.
    pub reply: Reply,
    /// Commands to append to the log, in order, before the reply is sent: empty when
    /// nothing changed. Replaying them (parsed with
    /// [`FilterCommand::parse_logged`](crate::FilterCommand::parse_logged), run through
    /// [`FilterCommand::write`](crate::FilterCommand::write)) on the state before this command, with any
    /// [`Defaults`], must give the state after it, without an error reply; so a command
    /// that created its key from [`Defaults`] logs a creation naming every parameter first.
    /// The one command logged that is not a filter command is `DEL key`, for a restore whose
    /// last chunk did not decode and removed its key.
    pub log: Log<'c>,
}

/// What a write command logs, in order: room inline for the one record a write to an
/// existing key logs, because inside Redis each allocation goes through the engine's
/// accounting allocator. (A key created from the defaults logs its creation first, once in
/// its life, and allocates then; two records inline made every outcome a `memcpy` call to
/// move, 43 of a `CF.ADD`'s instructions inside Redis.)
pub type Log<'c> = SmallVec<[Record<'c>; 1]>;

/// One command to log or replicate.
///
/// The common record, a `BF.ADD`'s or a `CF.ADD`'s item that was new, is the command's own
/// key and items under a name ([`Record::Items`]): nothing is copied or allocated to log
/// it, and a host that replicates the request as it came (a module's
/// `RedisModule_ReplicateVerbatim`) can see that it may, by comparing the words. A command
/// logged as it was sent (a `LOADCHUNK`, a `CF.DEL`) is such a record too.
#[derive(Clone, Debug, PartialEq)]
pub enum Record<'c> {
    /// The words, name first, built for the log: each the command's own (its key, its items)
    /// or made for the record (a parameter's value).
    Words(Vec<Word<'c>>),
    /// `name key items...`, the key and the items (or the other words after the key) those
    /// of the command that ran.
    Items {
        /// The command's name, as logged (`BF.MADD` for a `BF.ADD`).
        name: &'static str,
        /// The key.
        key: &'c [u8],
        /// The items, in order.
        items: Args<'c>,
    },
}

impl Record<'_> {
    /// The number of words, the name included.
    pub fn len(&self) -> usize {
        match self {
            Record::Words(words) => words.len(),
            Record::Items { items, .. } => 2 + items.len(),
        }
    }

    /// Whether the record has no words (never logged: a record always names its command).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The command's name (empty for an empty [`Record::Words`]).
    pub fn name(&self) -> &[u8] {
        match self {
            Record::Words(words) => words.first().map_or(&[][..], |w| &w[..]),
            Record::Items { name, .. } => name.as_bytes(),
        }
    }

    /// The words after the name, in order.
    pub fn args(&self) -> impl ExactSizeIterator<Item = &[u8]> + Clone {
        match self {
            Record::Words(words) => Words::Built(words.get(1..).unwrap_or_default().iter()),
            Record::Items { key, items, .. } => Words::Borrowed {
                key: Some(key),
                rest: items.iter(),
            },
        }
    }

    /// The words, name first, as a list of their own.
    pub fn to_vec(&self) -> Vec<Bytes> {
        match self {
            Record::Words(words) => words.iter().map(|w| Bytes::copy_from_slice(w)).collect(),
            Record::Items { name, .. } => {
                let mut words = Vec::with_capacity(self.len());
                words.push(Bytes::from_static(name.as_bytes()));
                words.extend(self.args().map(Bytes::copy_from_slice));
                words
            }
        }
    }
}

/// One word of a built record: borrowed from the command or the command layer, or made for
/// the record.
pub type Word<'c> = Cow<'c, [u8]>;

/// [`Record::args`]: the words of a built record after its name, or a borrowed key and
/// slice.
#[derive(Clone)]
enum Words<'a> {
    Built(std::slice::Iter<'a, Word<'a>>),
    Borrowed {
        key: Option<&'a [u8]>,
        rest: std::slice::Iter<'a, &'a [u8]>,
    },
}

impl<'a> Iterator for Words<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        match self {
            Words::Built(words) => words.next().map(|w| &w[..]),
            Words::Borrowed { key, rest } => key.take().or_else(|| rest.next().copied()),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = match self {
            Words::Built(words) => words.len(),
            Words::Borrowed { key, rest } => usize::from(key.is_some()) + rest.len(),
        };
        (n, Some(n))
    }
}

impl ExactSizeIterator for Words<'_> {}

impl<'c> Outcome<'c> {
    /// An outcome that changed nothing.
    pub fn unchanged(reply: Reply) -> Outcome<'c> {
        Outcome {
            reply,
            log: Log::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_viewed_in_order_however_many() {
        for n in [0usize, 1, 3, 8, 9, 100] {
            let items: Vec<Bytes> = (0..n).map(|i| Bytes::from(i.to_string())).collect();
            let seen = with_args(
                &items,
                |b| &b[..],
                |args| args.iter().map(|a| a.to_vec()).collect::<Vec<_>>(),
            );
            let expected: Vec<Vec<u8>> = items.iter().map(|b| b.to_vec()).collect();
            assert_eq!(seen, expected, "{n}");
        }
    }

    #[test]
    fn a_record_of_items_reads_as_its_words() {
        let items: [&[u8]; 2] = [b"a", b"b"];
        let record = Record::Items {
            name: "BF.MADD",
            key: b"k",
            items: &items,
        };
        let words: Vec<Bytes> = ["BF.MADD", "k", "a", "b"]
            .iter()
            .map(|w| Bytes::from_static(w.as_bytes()))
            .collect();
        assert_eq!(record.to_vec(), words);
        assert_eq!(record.len(), 4);
        assert_eq!(record.name(), b"BF.MADD");
        assert_eq!(record.args().len(), 3);
        assert!(record.args().eq(words[1..].iter().map(|w| &w[..])));
        let built = Record::Words(words.iter().map(|w| Word::from(&w[..])).collect());
        assert_eq!((built.len(), built.name()), (4, &b"BF.MADD"[..]));
        assert!(built.args().eq(words[1..].iter().map(|w| &w[..])));
        assert!(
            Record::Words(Vec::new()).is_empty() && Record::Words(Vec::new()).name().is_empty()
        );
    }
}
