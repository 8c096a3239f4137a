//! The `BF.*`/`CF.*` command table: every filter command once, with what a host registers it
//! with (name, arity, flags, key positions, ACL categories, documentation) and the parser its
//! name reaches.
//!
//! Both hosts work from [`FILTER_COMMANDS`]: the server routes a request's name through
//! [`lookup`] and answers `COMMAND` from the rows; a Redis module registers each row
//! (`RedisModule_CreateCommand` with [`CommandSpec::module_flags`] and the key positions) and
//! hands the arguments to [`FilterSpec::parse`]. [`CommandSpec`] is the shape of every row,
//! so a host describes its own commands the same way (the server's generic commands).
//!
//! # Examples
//!
//! ```
//! use bloomkit_commands::table::{lookup, Flag};
//!
//! let add = lookup(b"BF.ADD").unwrap();
//! assert_eq!(add.spec.name, "bf.add");
//! assert_eq!(add.spec.arity, 3);
//! assert!(add.spec.has(Flag::Write));
//! assert_eq!(add.spec.module_flags(), "write deny-oom");
//! assert_eq!((add.spec.first_key, add.spec.last_key, add.spec.step), (1, 1, 1));
//! assert!(lookup(b"BF.NOSUCH").is_none());
//! ```

use crate::aging::{self, AgingCommand};
use crate::bloom::{self, BloomCommand};
use crate::command::FilterCommand;
use crate::cuckoo::{self, CuckooCommand};
use crate::errors::wrong_arity;
use crate::reply::Reply;
use crate::run::Args;
use crate::shared::{LazyOrigin, Origin};

/// A command flag: what Redis's `COMMAND INFO` lists, and what a module registers a command
/// with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flag {
    /// May change the data set.
    Write,
    /// Reads keys, never changes them.
    Readonly,
    /// May allocate: refused when used memory is over `maxmemory`.
    DenyOom,
    /// Administrative (`CONFIG`, `SAVE`).
    Admin,
    /// Not allowed in scripts.
    Noscript,
    /// Allowed while the data set loads.
    Loading,
    /// Allowed on a replica with stale data.
    Stale,
    /// Constant or logarithmic time.
    Fast,
    /// Allowed before `AUTH`.
    NoAuth,
    /// Allowed while a script or module blocks the server.
    AllowBusy,
    /// Refused during an asynchronous load.
    NoAsyncLoading,
    /// Refused inside `MULTI`.
    NoMulti,
    /// A module's command: Redis adds the flag to every command a module registers, and
    /// the server shows it for `BF.*`/`CF.*` as Redis does for RedisBloom's.
    Module,
}

impl Flag {
    /// The flag as `COMMAND INFO` lists it (`denyoom`, `no_auth`).
    pub fn info_name(self) -> &'static str {
        match self {
            Flag::Write => "write",
            Flag::Readonly => "readonly",
            Flag::DenyOom => "denyoom",
            Flag::Admin => "admin",
            Flag::Noscript => "noscript",
            Flag::Loading => "loading",
            Flag::Stale => "stale",
            Flag::Fast => "fast",
            Flag::NoAuth => "no_auth",
            Flag::AllowBusy => "allow_busy",
            Flag::NoAsyncLoading => "no_async_loading",
            Flag::NoMulti => "no_multi",
            Flag::Module => "module",
        }
    }

    /// The flag as `RedisModule_CreateCommand` takes it (`deny-oom`, `no-auth`), or `None`
    /// where a module does not pass it: [`Flag::Module`], which Redis adds itself, and the
    /// flags the module API has no word for (only the server's own commands carry them).
    pub fn module_name(self) -> Option<&'static str> {
        match self {
            Flag::Write => Some("write"),
            Flag::Readonly => Some("readonly"),
            Flag::DenyOom => Some("deny-oom"),
            Flag::Admin => Some("admin"),
            Flag::Noscript => Some("deny-script"),
            Flag::Loading => Some("allow-loading"),
            Flag::Stale => Some("allow-stale"),
            Flag::Fast => Some("fast"),
            Flag::NoAuth => Some("no-auth"),
            Flag::AllowBusy => Some("allow-busy"),
            Flag::NoAsyncLoading | Flag::NoMulti | Flag::Module => None,
        }
    }
}

/// A command name packed into one integer, lower-cased, with its length: what a lookup
/// compares, one number per row instead of a string.
///
/// Bytes 0 to 14 hold the name (zero past its end), byte 15 its length, so that a name and
/// the same name followed by NUL bytes differ. Names hold at most [`NameKey::MAX_LEN`]
/// bytes; a request's longer name names no command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NameKey(u128);

impl NameKey {
    /// The longest name a key holds: longer than every command's.
    pub const MAX_LEN: usize = 15;

    /// The key of a table row's name, at compile time. A name that is longer than
    /// [`MAX_LEN`](Self::MAX_LEN) or not lower-case stops the build, never a request.
    pub const fn of_row(name: &str) -> NameKey {
        let bytes = name.as_bytes();
        assert!(
            bytes.len() <= Self::MAX_LEN,
            "a command name longer than NameKey::MAX_LEN"
        );
        let mut key = (bytes.len() as u128) << 120;
        let mut i = 0;
        while i < bytes.len() {
            assert!(
                !bytes[i].is_ascii_uppercase(),
                "a command name not in lower case"
            );
            key |= (bytes[i] as u128) << (8 * i);
            i += 1;
        }
        NameKey(key)
    }

    /// The key of a request's name, in any case; `None` for a name too long to be any
    /// command's.
    pub fn of_request(name: &[u8]) -> Option<NameKey> {
        if name.len() > Self::MAX_LEN {
            return None;
        }
        let mut bytes = [0u8; 16];
        bytes[..name.len()].copy_from_slice(name);
        let packed = lower_ascii(u128::from_le_bytes(bytes));
        Some(NameKey(packed | (name.len() as u128) << 120))
    }
}

/// Every byte of `x` lower-cased as [`u8::to_ascii_lowercase`] would, 16 at a time: a lookup
/// runs once per request, and a byte loop over the name cost more than the table search.
fn lower_ascii(x: u128) -> u128 {
    const ONES: u128 = u128::from_le_bytes([1; 16]);
    const LOW7: u128 = ONES * 0x7f;
    const HIGH: u128 = ONES * 0x80;
    // Each lane's low seven bits plus less than 0x80 stays below 0x100, so no carry
    // crosses into the next byte; the lane's top bit then says how the comparison went.
    let low = x & LOW7;
    let at_least_a = low + ONES * u128::from(0x80 - b'A');
    let past_z = low + ONES * u128::from(0x80 - b'Z' - 1);
    // Upper case: at least `A`, not past `Z`, and ASCII (top bit clear in `x` itself).
    let upper = at_least_a & !past_z & !x & HIGH;
    // 0x80 >> 2 is 0x20, the bit that makes `A` into `a`.
    x | (upper >> 2)
}

/// How a command presents itself: what `COMMAND INFO`/`DOCS` report and what a module
/// registers it with.
#[derive(Clone, Copy, Debug)]
pub struct CommandSpec {
    /// Lower-case name; subcommands are `container|sub` (`client|setname`), as Redis 7
    /// names them in errors.
    pub name: &'static str,
    /// The name as lookups compare it.
    pub key: NameKey,
    /// Argument count including the name, in Redis's convention: `n` exactly, or `-n` for
    /// at least `n`. A command may refuse more arguments than this admits
    /// (`BF.RESERVE` takes at most 7), never fewer.
    pub arity: i64,
    /// The command's flags.
    pub flags: &'static [Flag],
    /// Position of the first key (0: none).
    pub first_key: i64,
    /// Position of the last key (-1: the last argument).
    pub last_key: i64,
    /// Step between keys.
    pub step: i64,
    /// ACL categories (`@keyspace`, `@read`, `@bloom`...).
    pub acl: &'static [&'static str],
    /// `COMMAND DOCS` group.
    pub group: &'static str,
    /// `COMMAND DOCS` summary.
    pub summary: &'static str,
    /// The Redis (or RedisBloom) version that introduced it.
    pub since: &'static str,
    /// Subcommands (`CLIENT SETNAME`...).
    pub subcommands: &'static [CommandSpec],
}

impl CommandSpec {
    /// Whether `argc` arguments (name included) satisfy the arity.
    pub fn accepts(&self, argc: usize) -> bool {
        let argc = i64::try_from(argc).unwrap_or(i64::MAX);
        if self.arity >= 0 {
            argc == self.arity
        } else {
            argc >= -self.arity
        }
    }

    /// Whether the command has `flag`.
    pub fn has(&self, flag: Flag) -> bool {
        self.flags.contains(&flag)
    }

    /// Whether the command may run before `AUTH`.
    pub fn no_auth(&self) -> bool {
        self.has(Flag::NoAuth)
    }

    /// The arity `COMMAND INFO` reports: -1 for a module's command, as Redis reports
    /// RedisBloom's (registered without command information, each checks its own
    /// arguments), else [`arity`](Self::arity).
    pub fn info_arity(&self) -> i64 {
        if self.has(Flag::Module) {
            -1
        } else {
            self.arity
        }
    }

    /// The flags as `RedisModule_CreateCommand` takes them: `"write deny-oom"`,
    /// `"readonly"`.
    pub fn module_flags(&self) -> String {
        let words: Vec<&str> = self.flags.iter().filter_map(|f| f.module_name()).collect();
        words.join(" ")
    }

    /// The subcommand named `name` (any case).
    pub fn subcommand(&self, name: &[u8]) -> Option<&'static CommandSpec> {
        self.subcommands.iter().find(|sub| {
            sub.name
                .split_once('|')
                .is_some_and(|(_, sub)| sub.as_bytes().eq_ignore_ascii_case(name))
        })
    }
}

/// A command without keys or subcommands: no key positions and a key step of 0, as
/// Redis reports them.
pub const fn plain(
    name: &'static str,
    arity: i64,
    flags: &'static [Flag],
    acl: &'static [&'static str],
    group: &'static str,
    summary: &'static str,
    since: &'static str,
) -> CommandSpec {
    let mut spec = keyed(name, arity, flags, (0, 0), acl, group, summary, since);
    spec.step = 0;
    spec
}

/// A command whose keys are arguments `first..=last` (`last` -1: to the end).
#[allow(clippy::too_many_arguments)]
pub const fn keyed(
    name: &'static str,
    arity: i64,
    flags: &'static [Flag],
    (first_key, last_key): (i64, i64),
    acl: &'static [&'static str],
    group: &'static str,
    summary: &'static str,
    since: &'static str,
) -> CommandSpec {
    CommandSpec {
        name,
        key: NameKey::of_row(name),
        arity,
        flags,
        first_key,
        last_key,
        step: 1,
        acl,
        group,
        summary,
        since,
        subcommands: &[],
    }
}

/// A container of subcommands (`CLIENT`, `CONFIG`, `COMMAND`).
pub const fn container(
    name: &'static str,
    arity: i64,
    acl: &'static [&'static str],
    group: &'static str,
    summary: &'static str,
    since: &'static str,
    subcommands: &'static [CommandSpec],
) -> CommandSpec {
    CommandSpec {
        name,
        key: NameKey::of_row(name),
        arity,
        flags: &[],
        first_key: 0,
        last_key: 0,
        step: 0,
        acl,
        group,
        summary,
        since,
        subcommands,
    }
}

/// The parser of one filter command's arguments, called once they satisfy its row's
/// arity: the arguments then hold at least that many, the name and the key first, which the
/// parser may index. The [`Origin`] says where option keywords are searched. Each parser
/// makes RedisBloom's checks, in its order, of what needs neither the key nor the defaults.
#[derive(Clone, Copy)]
enum Parser {
    Bloom(for<'a> fn(Args<'a>, LazyOrigin<'_>) -> Result<BloomCommand<'a>, Reply>),
    Cuckoo(for<'a> fn(Args<'a>, LazyOrigin<'_>) -> Result<CuckooCommand<'a>, Reply>),
    Aging(for<'a> fn(Args<'a>, LazyOrigin<'_>) -> Result<AgingCommand<'a>, Reply>),
}

/// One `BF.*`/`CF.*` command: how it presents, and the parser it reaches.
#[derive(Clone, Copy)]
pub struct FilterSpec {
    /// The name, arity, flags, key positions and documentation.
    pub spec: CommandSpec,
    parse: Parser,
}

impl std::fmt::Debug for FilterSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FilterSpec")
            .field("spec", &self.spec)
            .finish_non_exhaustive()
    }
}

impl FilterSpec {
    /// Parses a client's `args` (the name first, in any case) for this command: the arity
    /// first (`ERR wrong number of arguments`), then RedisBloom's checks that need neither
    /// the key nor the [`Defaults`](crate::Defaults), in its order.
    ///
    /// # Errors
    ///
    /// The reply RedisBloom answers before looking at the key.
    pub fn parse<'a>(&self, args: Args<'a>) -> Result<FilterCommand<'a>, Reply> {
        self.parse_from(args, &|| Origin::Client)
    }

    /// Parses a command read back from a log or a replication stream (what
    /// [`Outcome::log`](crate::Outcome::log) held): as [`parse`](Self::parse), but option
    /// keywords (`EXPANSION`, `BUCKETSIZE`...) are looked for after the key only. RedisBloom
    /// searches from the command name on, so for a client a key spelled like an option is
    /// read as that option; the log names every option after the key, and must replay a key
    /// named `expansion` as the key it is.
    ///
    /// # Errors
    ///
    /// As [`parse`](Self::parse).
    pub fn parse_logged<'a>(&self, args: Args<'a>) -> Result<FilterCommand<'a>, Reply> {
        self.parse_from(args, &|| Origin::Log)
    }

    /// Parses as [`parse_logged`](Self::parse_logged) if `logged()` says the command comes
    /// from a log or a replication stream, else as [`parse`](Self::parse); `logged` is
    /// called only if this command parses differently for the two, at most once. For a host
    /// that pays to find out (a module asks the engine for its context's flags).
    ///
    /// # Errors
    ///
    /// As [`parse`](Self::parse).
    pub fn parse_from_either<'a>(
        &self,
        args: Args<'a>,
        logged: &dyn Fn() -> bool,
    ) -> Result<FilterCommand<'a>, Reply> {
        self.parse_from(args, &|| {
            if logged() {
                Origin::Log
            } else {
                Origin::Client
            }
        })
    }

    fn parse_from<'a>(
        &self,
        args: Args<'a>,
        origin: LazyOrigin<'_>,
    ) -> Result<FilterCommand<'a>, Reply> {
        // Every parser indexes up to its row's arity: this check is what makes that safe.
        if !self.spec.accepts(args.len()) {
            return Err(wrong_arity(self.spec.name));
        }
        match self.parse {
            Parser::Bloom(parse) => parse(args, origin).map(FilterCommand::Bloom),
            Parser::Cuckoo(parse) => parse(args, origin).map(FilterCommand::Cuckoo),
            Parser::Aging(parse) => parse(args, origin).map(FilterCommand::Aging),
        }
    }
}

/// Parsing is the table's: a request's name picks its row, which checks the arity and
/// calls the command's parser.
impl FilterCommand<'_> {
    /// Parses `args` (the command name first, in any case): `None` if the name is not a
    /// filter command (not in [`FILTER_COMMANDS`](crate::table::FILTER_COMMANDS));
    /// `Some(Err(reply))` for a wrong argument count or an argument that is invalid whatever
    /// the key holds, in RedisBloom's validation order. A host that has already looked the
    /// name up calls [`FilterSpec::parse`](crate::table::FilterSpec::parse).
    pub fn parse(args: Args<'_>) -> Option<Result<FilterCommand<'_>, Reply>> {
        lookup(args.first()?).map(|row| row.parse(args))
    }

    /// Parses a command read back from [`Outcome::log`](crate::Outcome::log), as
    /// [`FilterSpec::parse_logged`](crate::table::FilterSpec::parse_logged) does.
    pub fn parse_logged(args: Args<'_>) -> Option<Result<FilterCommand<'_>, Reply>> {
        lookup(args.first()?).map(|row| row.parse_logged(args))
    }
}

/// The filter command named `name` (any case), or `None`.
pub fn lookup(name: &[u8]) -> Option<&'static FilterSpec> {
    NameKey::of_request(name).and_then(find)
}

/// The filter command whose name has `key`: for a host that looks a name up in its own
/// table too, and packs it once.
pub fn find(key: NameKey) -> Option<&'static FilterSpec> {
    FILTER_COMMANDS.iter().find(|row| row.spec.key == key)
}

const fn bf(
    spec: CommandSpec,
    parse: for<'a> fn(Args<'a>, LazyOrigin<'_>) -> Result<BloomCommand<'a>, Reply>,
) -> FilterSpec {
    FilterSpec {
        spec,
        parse: Parser::Bloom(parse),
    }
}

const fn cf(
    spec: CommandSpec,
    parse: for<'a> fn(Args<'a>, LazyOrigin<'_>) -> Result<CuckooCommand<'a>, Reply>,
) -> FilterSpec {
    FilterSpec {
        spec,
        parse: Parser::Cuckoo(parse),
    }
}

const fn af(
    spec: CommandSpec,
    parse: for<'a> fn(Args<'a>, LazyOrigin<'_>) -> Result<AgingCommand<'a>, Reply>,
) -> FilterSpec {
    FilterSpec {
        spec,
        parse: Parser::Aging(parse),
    }
}

const AF: &str = "af";
const AGING_WRITE: &[&str] = &["@write", "@bloom"];
const AGING_READ: &[&str] = &["@read", "@bloom"];
const BF: &str = "bf";
const CF: &str = "cf";
const MODULE_WRITE: &[Flag] = &[Flag::Write, Flag::DenyOom, Flag::Module];
const MODULE_READ: &[Flag] = &[Flag::Readonly, Flag::Module];
const BLOOM_WRITE: &[&str] = &["@write", "@bloom"];
const BLOOM_READ: &[&str] = &["@read", "@bloom"];
const CUCKOO_WRITE: &[&str] = &["@write", "@cuckoo"];
const CUCKOO_READ: &[&str] = &["@read", "@cuckoo"];

/// Every `BF.*`, `CF.*` and `AF.*` command, in the order `COMMAND` lists them. Flags, key
/// positions, ACL categories and summaries of `BF.*`/`CF.*` are RedisBloom's (`AF.*`, bloomkit's
/// own, are flagged as they are and in the `@bloom` category); arities are what the parsers accept (Redis
/// still reports -1 for them, see [`CommandSpec::info_arity`]).
#[rustfmt::skip]
pub static FILTER_COMMANDS: &[FilterSpec] = &[
    bf(keyed("bf.reserve", -4, MODULE_WRITE, (1, 1), BLOOM_WRITE, BF, "Creates a new Bloom Filter.", "1.0.0"), bloom::parse::reserve),
    bf(keyed("bf.add", 3, MODULE_WRITE, (1, 1), BLOOM_WRITE, BF, "Adds an item to a Bloom Filter.", "1.0.0"), bloom::parse::add),
    bf(keyed("bf.madd", -3, MODULE_WRITE, (1, 1), BLOOM_WRITE, BF, "Adds one or more items to a Bloom Filter. A filter will be created if it does not exist.", "1.0.0"), bloom::parse::madd),
    bf(keyed("bf.insert", -4, MODULE_WRITE, (1, 1), BLOOM_WRITE, BF, "Adds one or more items to a Bloom Filter. A filter will be created if it does not exist.", "1.0.0"), bloom::parse::insert),
    bf(keyed("bf.exists", 3, MODULE_READ, (1, 1), BLOOM_READ, BF, "Checks whether an item exists in a Bloom Filter.", "1.0.0"), bloom::parse::exists),
    bf(keyed("bf.mexists", -3, MODULE_READ, (1, 1), BLOOM_READ, BF, "Checks whether one or more items exist in a Bloom Filter.", "1.0.0"), bloom::parse::mexists),
    bf(keyed("bf.info", -2, MODULE_READ, (1, 1), BLOOM_READ, BF, "Returns information about a Bloom Filter.", "1.0.0"), bloom::parse::info),
    bf(keyed("bf.merge", -3, MODULE_WRITE, (1, -1), BLOOM_WRITE, BF, "Merges Bloom filters built alike into the first key, creating it as a copy of the first source when missing.", "1.0.0"), bloom::parse::merge),
    bf(keyed("bf.card", 2, MODULE_READ, (1, 1), BLOOM_READ, BF, "Returns the cardinality of a Bloom filter.", "2.4.4"), bloom::parse::card),
    bf(keyed("bf.debug", 2, MODULE_READ, (1, 1), BLOOM_READ, BF, "Returns the layers of a Bloom filter: bytes, bits, hashes, capacity, items and error rate of each.", "1.0.0"), bloom::parse::debug),
    bf(keyed("bf.scandump", 3, MODULE_READ, (1, 1), BLOOM_READ, BF, "Begins an incremental save of the bloom filter.", "1.0.0"), bloom::parse::scandump),
    bf(keyed("bf.loadchunk", 4, MODULE_WRITE, (1, 1), BLOOM_WRITE, BF, "Restores a filter previously saved using SCANDUMP.", "1.0.0"), bloom::parse::loadchunk),
    cf(keyed("cf.reserve", -3, MODULE_WRITE, (1, 1), CUCKOO_WRITE, CF, "Creates a new Cuckoo Filter.", "1.0.0"), cuckoo::parse::reserve),
    cf(keyed("cf.add", 3, MODULE_WRITE, (1, 1), CUCKOO_WRITE, CF, "Adds an item to a Cuckoo Filter.", "1.0.0"), cuckoo::parse::add),
    cf(keyed("cf.addnx", 3, MODULE_WRITE, (1, 1), CUCKOO_WRITE, CF, "Adds an item to a Cuckoo Filter if the item did not exist previously.", "1.0.0"), cuckoo::parse::addnx),
    cf(keyed("cf.insert", -4, MODULE_WRITE, (1, 1), CUCKOO_WRITE, CF, "Adds one or more items to a Cuckoo Filter. A filter will be created if it does not exist.", "1.0.0"), cuckoo::parse::insert),
    cf(keyed("cf.insertnx", -4, MODULE_WRITE, (1, 1), CUCKOO_WRITE, CF, "Adds one or more items to a Cuckoo Filter if the items did not exist previously.", "1.0.0"), cuckoo::parse::insertnx),
    cf(keyed("cf.exists", 3, MODULE_READ, (1, 1), CUCKOO_READ, CF, "Checks if an item exists in a Cuckoo Filter.", "1.0.0"), cuckoo::parse::exists),
    cf(keyed("cf.mexists", -3, MODULE_READ, (1, 1), CUCKOO_READ, CF, "Checks if one or more items exist in a Cuckoo Filter.", "1.0.0"), cuckoo::parse::mexists),
    cf(keyed("cf.del", 3, &[Flag::Write, Flag::Module], (1, 1), CUCKOO_WRITE, CF, "Deletes an item from a Cuckoo Filter.", "1.0.0"), cuckoo::parse::del),
    cf(keyed("cf.count", 3, MODULE_READ, (1, 1), CUCKOO_READ, CF, "Return the number of times an item might be in a Cuckoo Filter.", "1.0.0"), cuckoo::parse::count),
    cf(keyed("cf.info", 2, MODULE_READ, (1, 1), CUCKOO_READ, CF, "Returns information about a Cuckoo Filter.", "1.0.0"), cuckoo::parse::info),
    cf(keyed("cf.debug", 2, MODULE_READ, (1, 1), CUCKOO_READ, CF, "Returns the shape and counts of a Cuckoo Filter on one line.", "1.0.0"), cuckoo::parse::debug),
    // RedisBloom registers CF.COMPACT "readonly fast", though it rewrites the filter: here it
    // is a write, so that it is logged, replicated and refused while the log cannot be written.
    cf(keyed("cf.compact", 2, &[Flag::Write, Flag::Module], (1, 1), CUCKOO_WRITE, CF, "Moves items into older sub-filters and frees the emptied newest ones.", "1.0.0"), cuckoo::parse::compact),
    cf(keyed("cf.scandump", 3, MODULE_READ, (1, 1), CUCKOO_READ, CF, "Begins an incremental save of the bloom filter.", "1.0.0"), cuckoo::parse::scandump),
    cf(keyed("cf.loadchunk", 4, MODULE_WRITE, (1, 1), CUCKOO_WRITE, CF, "Restores a filter previously saved using SCANDUMP.", "1.0.0"), cuckoo::parse::loadchunk),
    af(keyed("af.reserve", -4, MODULE_WRITE, (1, 1), AGING_WRITE, AF, "Creates an aging filter: generations of a Bloom filter that rotate out, each for capacity items.", "0.2.0"), aging::parse::reserve),
    af(keyed("af.add", 3, MODULE_WRITE, (1, 1), AGING_WRITE, AF, "Adds an item to an aging filter; answers 1 for a first sighting within the window.", "0.2.0"), aging::parse::add),
    af(keyed("af.madd", -3, MODULE_WRITE, (1, 1), AGING_WRITE, AF, "Adds items to an aging filter; answers 1 for each first sighting within the window.", "0.2.0"), aging::parse::madd),
    af(keyed("af.exists", 3, MODULE_READ, (1, 1), AGING_READ, AF, "Checks whether an item may have been added to an aging filter within its window.", "0.2.0"), aging::parse::exists),
    af(keyed("af.mexists", -3, MODULE_READ, (1, 1), AGING_READ, AF, "Checks whether items may have been added to an aging filter within its window.", "0.2.0"), aging::parse::mexists),
    af(keyed("af.rotate", -2, &[Flag::Write, Flag::Module], (1, 1), AGING_WRITE, AF, "Rotates an aging filter: drops its oldest generation and starts an empty newest one.", "0.2.0"), aging::parse::rotate),
    af(keyed("af.info", 2, MODULE_READ, (1, 1), AGING_READ, AF, "Returns information about an aging filter.", "0.2.0"), aging::parse::info),
    af(keyed("af.card", 2, MODULE_READ, (1, 1), AGING_READ, AF, "Returns the items added to an aging filter's generations, summed.", "0.2.0"), aging::parse::card),
    af(keyed("af.scandump", 3, MODULE_READ, (1, 1), AGING_READ, AF, "Begins an incremental save of an aging filter.", "0.2.0"), aging::parse::scandump),
    af(keyed("af.loadchunk", 4, MODULE_WRITE, (1, 1), AGING_WRITE, AF, "Restores an aging filter previously saved using AF.SCANDUMP.", "0.2.0"), aging::parse::loadchunk),
];

#[cfg(test)]
mod tests {
    use super::NameKey;

    #[test]
    fn name_keys_match_names_in_any_case_and_nothing_else() {
        let add = NameKey::of_row("bf.add");
        assert_eq!(NameKey::of_request(b"BF.ADD"), Some(add));
        assert_eq!(NameKey::of_request(b"bF.aDd"), Some(add));
        for other in [&b"bf.add\0"[..], b"bf.ad", b"bf.addx", b"", b"\0bf.add"] {
            assert_ne!(NameKey::of_request(other), Some(add), "{other:?}");
        }
        assert_eq!(NameKey::of_request(b""), Some(NameKey::of_row("")));
        let longest = "a".repeat(NameKey::MAX_LEN);
        assert!(NameKey::of_request(longest.as_bytes()).is_some());
        assert_eq!(NameKey::of_request("a".repeat(16).as_bytes()), None);
        assert_eq!(NameKey::of_request(&[b'a'; 1000]), None);
    }

    #[test]
    fn lower_casing_sixteen_bytes_at_once_is_to_ascii_lowercase() {
        for byte in 0..=255u8 {
            for at in 0..16 {
                let mut bytes = *b"Ab0~zZ@[`{\x7f\x80\xc1\xdaMq";
                bytes[at] = byte;
                let expected = bytes.map(|b| b.to_ascii_lowercase());
                let lowered = super::lower_ascii(u128::from_le_bytes(bytes));
                assert_eq!(lowered.to_le_bytes(), expected, "{byte:#x} at {at}");
            }
        }
    }
}
