//! The `BF.*` and `CF.*` command layer without a network: `FilterCommand::parse`, then
//! `read`/`write` on a slot, with exact replies, error strings in RedisBloom's order, the
//! memory budget, the replay log, and dumps.

use std::sync::atomic::{AtomicUsize, Ordering};

use bloomkit::{BlockedProbes, ClassicProbes, LayerLayout};
use bloomkit_commands::Reply;
use bloomkit_commands::Value;
use bloomkit_commands::{
    Access, Budget, Ctx, Defaults, FilterCommand, Outcome, Record, Replay, Unlimited,
};
use bytes::Bytes;

/// A budget with a fixed allowance for `--maxmemory` and the machine.
struct TestBudget {
    maxmemory_extra: usize,
    machine: Option<usize>,
    /// The largest request seen, to prove nothing big was attempted unasked.
    largest_ask: AtomicUsize,
}

impl TestBudget {
    fn new(maxmemory_extra: usize, machine: Option<usize>) -> Self {
        TestBudget {
            maxmemory_extra,
            machine,
            largest_ask: AtomicUsize::new(0),
        }
    }
}

impl Budget for TestBudget {
    fn within_maxmemory(&self, extra_bytes: usize) -> bool {
        self.largest_ask.fetch_max(extra_bytes, Ordering::Relaxed);
        extra_bytes <= self.maxmemory_extra
    }
    fn machine_available(&self) -> Option<usize> {
        self.machine
    }
}

fn args(words: &[&[u8]]) -> Vec<Bytes> {
    words.iter().map(|w| Bytes::copy_from_slice(w)).collect()
}

/// The arguments as the command layer borrows them.
fn views(args: &[Bytes]) -> Vec<&[u8]> {
    args.iter().map(|a| &a[..]).collect()
}

fn words(line: &str) -> Vec<Bytes> {
    line.split(' ')
        .map(|w| Bytes::copy_from_slice(w.as_bytes()))
        .collect()
}

/// A slot and the context commands run in.
struct Slot {
    value: Option<Value>,
    defaults: Defaults,
    log: Vec<Vec<Bytes>>,
}

impl Slot {
    fn new() -> Self {
        Slot {
            value: None,
            defaults: Defaults::default(),
            log: Vec::new(),
        }
    }

    fn run_with(&mut self, args: Vec<Bytes>, budget: &dyn Budget) -> Reply {
        let views = views(&args);
        let cmd = match FilterCommand::parse(&views).expect("a filter command") {
            Ok(cmd) => cmd,
            Err(reply) => return reply,
        };
        let ctx = Ctx {
            defaults: &self.defaults,
            budget,
            now_ms: &|| 0,
        };
        match cmd.access() {
            Access::Read => cmd.read(self.value.as_ref(), &ctx),
            Access::Write => {
                let Outcome { reply, log } = cmd.write(&mut self.value, &ctx);
                self.log.extend(log.iter().map(Record::to_vec));
                reply
            }
        }
    }

    fn run(&mut self, line: &str) -> Reply {
        self.run_with(words(line), &Unlimited)
    }
}

/// `BF.INFO key FIELD`: a one-element array in RESP2, a one-entry map in RESP3.
fn info_field(name: &str, value: i64) -> Reply {
    Reply::PerProtocol {
        resp2: Box::new(Reply::Array(vec![Reply::Integer(value)])),
        resp3: Box::new(Reply::Map(vec![(
            Reply::Simple(name.to_string()),
            Reply::Integer(value),
        )])),
    }
}

fn err(text: &str) -> Reply {
    Reply::error(text)
}

fn bools(answers: &[bool]) -> Reply {
    Reply::Array(answers.iter().map(|&b| Reply::Bool(b)).collect())
}

/// The reply's first pair and its number of pairs, for a map reply.
fn map_head(reply: &Reply) -> Option<(&Reply, &Reply, usize)> {
    match reply {
        Reply::Map(pairs) => pairs.first().map(|(k, v)| (k, v, pairs.len())),
        _ => None,
    }
}

/// Replays `log` on an empty slot with other defaults and `Unlimited`, as start-up does:
/// parsed with `parse_logged`, every command must succeed, and `DEL` removes the key.
fn replay(log: &[Vec<Bytes>], defaults: Defaults) -> Option<Value> {
    let mut value = None;
    for entry in log {
        if entry[0].eq_ignore_ascii_case(b"DEL") {
            value = None;
            continue;
        }
        let entry_views = views(entry);
        let cmd = FilterCommand::parse_logged(&entry_views)
            .expect("a filter command")
            .unwrap_or_else(|reply| panic!("replaying {entry:?}: {reply:?}"));
        let ctx = Ctx {
            defaults: &defaults,
            budget: &Replay,
            now_ms: &|| 0,
        };
        let reply = cmd.write(&mut value, &ctx).reply;
        assert!(!reply.is_error(), "replaying {entry:?}: {reply:?}");
    }
    value
}

fn odd_defaults() -> Defaults {
    Defaults {
        bf_error_rate: 0.2,
        bf_initial_size: 7,
        bf_expansion_factor: 0,
        cf_bucket_size: 4,
        cf_initial_size: 64,
        cf_max_iterations: 3,
        cf_expansion_factor: 0,
        cf_max_expansions: 1,
        bf_layout: LayerLayout::Blocked,
        af_error_rate: 0.2,
        af_capacity: 7,
        af_generations: 5,
        af_period: 9,
    }
}

/// The common records, an add whose every item was new, are the command's own key and
/// items (nothing copied); the others are built, and all read as the same words.
#[test]
fn an_add_of_new_items_logs_the_commands_own_words() {
    let defaults = Defaults::default();
    let ctx = Ctx {
        defaults: &defaults,
        budget: &Unlimited,
        now_ms: &|| 0,
    };
    let mut bloom = None;
    let mut cuckoo = None;
    // (command, the records' words, whether the last is the command's own)
    let cases: [(&str, &[&str], bool); 10] = [
        (
            "BF.ADD k a",
            &[
                "BF.RESERVE k 0.01 100 EXPANSION 2 LAYOUT CLASSIC2",
                "BF.MADD k a",
            ],
            true,
        ),
        ("BF.ADD k b", &["BF.MADD k b"], true),
        ("BF.ADD k b", &[], false),
        ("BF.MADD k c d", &["BF.MADD k c d"], true),
        ("BF.MADD k c e", &["BF.MADD k e"], false),
        ("BF.INSERT k ITEMS f g", &["BF.MADD k f g"], true),
        (
            "CF.ADDNX c x",
            &[
                "CF.RESERVE c 1024 BUCKETSIZE 2 MAXITERATIONS 20 EXPANSION 1 DISTINCT",
                "CF.ADD c x",
            ],
            true,
        ),
        // Logged as sent: the key and the words after it are the command's own too.
        ("cf.del c x", &["CF.DEL c x"], true),
        ("CF.DEL c x", &[], false),
        ("CF.COMPACT c", &["CF.COMPACT c"], true),
    ];
    for (line, expected, own) in cases {
        let slot = if line.to_ascii_uppercase().starts_with("CF.") {
            &mut cuckoo
        } else {
            &mut bloom
        };
        let args = words(line);
        let args = views(&args);
        let command = FilterCommand::parse(&args).unwrap().unwrap();
        let outcome = command.write(slot, &ctx);
        let logged: Vec<Vec<Bytes>> = outcome.log.iter().map(Record::to_vec).collect();
        let expected: Vec<Vec<Bytes>> = expected.iter().map(|l| words(l)).collect();
        assert_eq!(logged, expected, "{line}");
        // The command's own: its key and every word after it the very slices it was given.
        let last_is_own = matches!(
            outcome.log.last(),
            Some(Record::Items { key, items, .. }) if std::ptr::eq(*key, command.key())
                && items.iter().all(|item| args.iter().any(|arg| std::ptr::eq(*arg, *item)))
        );
        assert_eq!(last_is_own, own, "{line}: {:?}", outcome.log.last());
    }
}

#[test]
fn names_outside_the_families_are_not_filter_commands() {
    assert!(FilterCommand::parse(&views(&words("GET k"))).is_none());
    assert!(FilterCommand::parse(&views(&words("BF.NOPE k"))).is_none());
    assert!(FilterCommand::parse(&views(&words("cf.nope k"))).is_none());
    assert!(FilterCommand::parse(&[]).is_none());
}

#[test]
fn bf_reserve_errors_in_redisbloom_order() {
    let mut s = Slot::new();
    let cases = [
        (
            "BF.RESERVE k 0.01",
            "ERR wrong number of arguments for 'bf.reserve' command",
        ),
        (
            "BF.RESERVE k 0.01 100 a b c d",
            "ERR wrong number of arguments for 'bf.reserve' command",
        ),
        ("BF.RESERVE k x 100", "ERR bad error rate"),
        ("BF.RESERVE k x y", "ERR bad error rate"),
        (
            "BF.RESERVE k 0 100",
            "ERR error rate must be in the range (0.000000, 1.000000)",
        ),
        (
            "BF.RESERVE k 1 x",
            "ERR error rate must be in the range (0.000000, 1.000000)",
        ),
        (
            "BF.RESERVE k -0.5 100",
            "ERR error rate must be in the range (0.000000, 1.000000)",
        ),
        ("BF.RESERVE k 0.01 x", "ERR bad capacity"),
        ("BF.RESERVE k 0.01 1.5", "ERR bad capacity"),
        (
            "BF.RESERVE k 0.01 0",
            "ERR capacity must be in the range [1, 1073741824]",
        ),
        (
            "BF.RESERVE k 0.01 1073741825",
            "ERR capacity must be in the range [1, 1073741824]",
        ),
        ("BF.RESERVE k 0.01 100 EXPANSION", "ERR no expansion"),
        ("BF.RESERVE k 0.01 100 EXPANSION x", "ERR bad expansion"),
        (
            "BF.RESERVE k 0.01 100 NONSCALING EXPANSION 2",
            "Nonscaling filters cannot expand",
        ),
        (
            "BF.RESERVE k 0.01 100 EXPANSION -1 NONSCALING",
            "Nonscaling filters cannot expand",
        ),
        (
            "BF.RESERVE k 0.01 100 EXPANSION 32769",
            "ERR expansion must be in the range [0, 32768]",
        ),
        (
            "BF.RESERVE k 0.01 100 EXPANSION -1",
            "ERR expansion must be in the range [0, 32768]",
        ),
        // RedisBloom finds options anywhere, even in the key's place.
        ("BF.RESERVE EXPANSION 0.01 100", "ERR bad expansion"),
    ];
    for (line, expected) in cases {
        assert_eq!(s.run(line), err(expected), "{line}");
    }
    assert!(s.value.is_none() && s.log.is_empty());

    assert_eq!(
        s.run("BF.RESERVE k 0.01 100 EXPANSION 0 NONSCALING"),
        Reply::Ok
    );
    assert_eq!(s.run("BF.RESERVE k 0.01 100"), err("ERR item exists"));
    // Unknown trailing words are ignored; rates above 0.25 are capped.
    let mut s = Slot::new();
    assert_eq!(s.run("bf.reserve k 0.9 100 whatever"), Reply::Ok);
    assert_eq!(
        s.log,
        vec![words("BF.RESERVE k 0.25 100 EXPANSION 2 LAYOUT CLASSIC2")]
    );
    let Some(Value::Bloom(f)) = &s.value else {
        panic!()
    };
    assert_eq!(f.fp_rate(), 0.25);
    // A key of the other family.
    let mut s = Slot::new();
    s.run("CF.RESERVE k 100");
    assert_eq!(
        s.run("BF.RESERVE k 0.01 100"),
        err("WRONGTYPE Operation against a key holding the wrong kind of value")
    );
}

#[test]
fn bf_add_exists_card_info_answer_as_redisbloom() {
    let mut s = Slot::new();
    assert_eq!(s.run("BF.EXISTS k a"), Reply::Bool(false));
    assert_eq!(s.run("BF.MEXISTS k a b"), bools(&[false, false]));
    assert_eq!(s.run("BF.CARD k"), Reply::Integer(0));
    assert_eq!(s.run("BF.INFO k"), err("ERR not found"));
    assert_eq!(s.run("BF.ADD k a"), Reply::Bool(true));
    assert_eq!(s.run("BF.ADD k a"), Reply::Bool(false));
    assert_eq!(s.run("BF.MADD k a b c"), bools(&[false, true, true]));
    assert_eq!(
        s.run("BF.MEXISTS k a b c d"),
        bools(&[true, true, true, false])
    );
    assert_eq!(s.run("BF.EXISTS k c"), Reply::Bool(true));
    assert_eq!(s.run("BF.CARD k"), Reply::Integer(3));
    let Reply::Map(info) = s.run("BF.INFO k") else {
        panic!()
    };
    let names: Vec<_> = info.iter().map(|(k, _)| k.clone()).collect();
    assert_eq!(
        names,
        bloomkit_commands::bloom::INFO_FIELDS.map(|n| Reply::Simple(n.into()))
    );
    assert_eq!(info[0].1, Reply::Integer(100));
    assert_eq!(info[2].1, Reply::Integer(1));
    assert_eq!(info[3].1, Reply::Integer(3));
    assert_eq!(info[4].1, Reply::Integer(2));
    // RedisBloom's Size for `BF.RESERVE k 0.01 100` (its structs and 144 bytes of bits), not
    // the memory this filter holds, which differs.
    let Some(Value::Bloom(f)) = &s.value else {
        panic!()
    };
    assert_eq!(info[1].1, Reply::Integer(240));
    // bloomkit's fields, after RedisBloom's: the library's own figures.
    assert_eq!(info[5].1, Reply::Double(f.fill_ratio()));
    assert_eq!(info[6].1, Reply::Integer(f.estimated_count() as i64));
    assert_eq!(info[7].1, Reply::Double(f.estimated_fp_rate()));
    assert!(f.fill_ratio() > 0.0 && f.estimated_count() == 3);
    assert_ne!(f.memory_bytes(), 240);
    assert_eq!(s.run("BF.INFO k capacity"), info_field("Capacity", 100));
    assert_eq!(
        s.run("BF.INFO k ITEMS"),
        info_field("Number of items inserted", 3)
    );
    assert_eq!(
        s.run("BF.INFO k Filters"),
        info_field("Number of filters", 1)
    );
    assert_eq!(
        s.run("BF.INFO k expansion"),
        info_field("Expansion rate", 2)
    );
    assert_eq!(s.run("BF.INFO k bogus"), err("Invalid information value"));
    assert_eq!(Slot::new().run("BF.INFO nokey bogus"), err("ERR not found"));
    // The log: an explicit creation, then the added items only.
    assert_eq!(
        s.log,
        vec![
            words("BF.RESERVE k 0.01 100 EXPANSION 2 LAYOUT CLASSIC2"),
            words("BF.MADD k a"),
            words("BF.MADD k b c"),
        ]
    );
    // Arity.
    for (line, name) in [
        ("BF.ADD k", "bf.add"),
        ("BF.ADD k a b", "bf.add"),
        ("BF.MADD k", "bf.madd"),
        ("BF.EXISTS k a b", "bf.exists"),
        ("BF.MEXISTS k", "bf.mexists"),
        ("BF.INFO", "bf.info"),
        ("BF.INFO k a b", "bf.info"),
        ("BF.CARD", "bf.card"),
        ("BF.SCANDUMP k", "bf.scandump"),
        ("BF.LOADCHUNK k 1", "bf.loadchunk"),
    ] {
        let expected = format!("ERR wrong number of arguments for '{name}' command");
        assert_eq!(s.run(line), err(&expected), "{line}");
    }
    // Another family's key: EXISTS answers 0, the rest WRONGTYPE.
    let mut c = Slot::new();
    c.run("CF.ADD k a");
    let wrongtype = err("WRONGTYPE Operation against a key holding the wrong kind of value");
    assert_eq!(c.run("BF.EXISTS k a"), Reply::Bool(false));
    assert_eq!(c.run("BF.MEXISTS k a"), bools(&[false]));
    assert_eq!(c.run("BF.ADD k a"), wrongtype);
    assert_eq!(c.run("BF.CARD k"), wrongtype);
    assert_eq!(c.run("BF.INFO k"), wrongtype);
    assert_eq!(c.run("BF.SCANDUMP k 0"), wrongtype);
}

#[test]
fn bf_resp3_and_resp2_shapes() {
    let mut s = Slot::new();
    // A boolean (RESP3 `#t`, RESP2 `:1`), a map (RESP3 `%5`, RESP2 a flat `*10`), a null
    // (`_`, `$-1`): the server's encoder turns each into both protocols' bytes
    // (bloomkit-server's resp::encode, whose tests hold these same replies' bytes).
    assert_eq!(s.run("BF.ADD k a"), Reply::Bool(true));
    let info = s.run("BF.INFO k");
    assert_eq!(
        map_head(&info),
        Some((&Reply::Simple("Capacity".into()), &Reply::Integer(100), 8))
    );
    let mut n = Slot::new();
    n.run("BF.RESERVE k 0.01 10 NONSCALING");
    let Reply::Map(pairs) = n.run("BF.INFO k") else {
        panic!("BF.INFO answers a map");
    };
    assert_eq!(
        pairs[4],
        (Reply::Simple("Expansion rate".into()), Reply::Null)
    );
    assert_eq!(
        n.run("BF.INFO k expansion"),
        Reply::PerProtocol {
            resp2: Box::new(Reply::Array(vec![Reply::Null])),
            resp3: Box::new(Reply::Map(vec![(
                Reply::Simple("Expansion rate".into()),
                Reply::Null
            )])),
        }
    );
}

#[test]
fn bf_insert_options_and_errors() {
    let mut s = Slot::new();
    let cases = [
        (
            "BF.INSERT k ITEMS",
            "ERR wrong number of arguments for 'bf.insert' command",
        ),
        (
            "BF.INSERT k CAPACITY 10",
            "ERR wrong number of arguments for 'bf.insert' command",
        ),
        (
            "BF.INSERT k NOCREATE ITEMS",
            "ERR wrong number of arguments for 'bf.insert' command",
        ),
        (
            "BF.INSERT k ERROR",
            "ERR wrong number of arguments for 'bf.insert' command",
        ),
        ("BF.INSERT k CAPACITY x ITEMS a", "Bad capacity"),
        ("BF.INSERT k CAPACITY 0 ITEMS a", "Bad capacity"),
        ("BF.INSERT k ERROR x ITEMS a", "Bad error rate"),
        ("BF.INSERT k ERROR 1 ITEMS a", "Bad error rate"),
        ("BF.INSERT k EXPANSION x ITEMS a", "Bad expansion"),
        ("BF.INSERT k EXPANSION 32769 ITEMS a", "Bad expansion"),
        ("BF.INSERT k WAT ITEMS a", "Unknown argument received"),
        ("BF.INSERT k CAPACITY 0 WAT", "Bad capacity"),
        ("BF.INSERT k NOCREATE ITEMS a", "ERR not found"),
    ];
    for (line, expected) in cases {
        assert_eq!(s.run(line), err(expected), "{line}");
    }
    assert!(s.value.is_none() && s.log.is_empty());
    assert_eq!(
        s.run("BF.INSERT k CAPACITY 5 ERROR 0.5 CAPACITY 20 EXPANSION 3 ITEMS a b a"),
        bools(&[true, true, false])
    );
    let Some(Value::Bloom(f)) = &s.value else {
        panic!()
    };
    // Repeated options: the last wins; 0.5 is capped at 0.25.
    assert_eq!((f.capacity(), f.fp_rate(), f.expansion()), (20, 0.25, 3));
    assert_eq!(
        s.log,
        vec![
            words("BF.RESERVE k 0.25 20 EXPANSION 3 LAYOUT CLASSIC2"),
            words("BF.MADD k a b")
        ]
    );
    // Options are ignored once the key exists.
    assert_eq!(
        s.run("BF.INSERT k CAPACITY 1 NONSCALING ITEMS c"),
        bools(&[true])
    );
    // EXPANSION 0 and NONSCALING both make a non-scaling filter; "ITEMS" ends the options.
    let mut n = Slot::new();
    n.run("BF.INSERT n EXPANSION 0 CAPACITY 2 ITEMS NONSCALING x");
    assert_eq!(
        n.log[0],
        words("BF.RESERVE n 0.01 2 EXPANSION 0 LAYOUT CLASSIC2")
    );
    assert_eq!(
        n.run("BF.INSERT n ITEMS y z"),
        Reply::Array(vec![err("ERR non scaling filter is full")])
    );
}

#[test]
fn bf_nonscaling_full_stops_madd_and_logs_what_replays() {
    let mut s = Slot::new();
    s.run("BF.RESERVE k 0.01 3 NONSCALING");
    s.log.clear();
    let Reply::Array(replies) = s.run("BF.MADD k a b a c d e f g h i j k l") else {
        panic!()
    };
    assert_eq!(
        replies[..4],
        [
            Reply::Bool(true),
            Reply::Bool(true),
            Reply::Bool(false),
            Reply::Bool(true)
        ]
    );
    // The filter holds 3; the next item that is not a false positive fails, and ends the
    // answers.
    let (last, between) = replies[4..].split_last().unwrap();
    assert_eq!(*last, err("ERR non scaling filter is full"));
    assert!(between.iter().all(|r| *r == Reply::Bool(false)));
    assert_eq!(s.log, vec![words("BF.MADD k a b c")]);
    assert_eq!(
        s.run("BF.INSERT k ITEMS l"),
        Reply::Array(vec![err("ERR non scaling filter is full")])
    );
    assert_eq!(s.run("BF.ADD k a"), Reply::Bool(false));
    assert_eq!(s.log.len(), 1);
}

#[test]
fn bf_scaling_follows_redisbloom_examples() {
    // BF.RESERVE bf 0.01 10, then "0".."99": layers of 10/20/40/80.
    let mut s = Slot::new();
    s.run("BF.RESERVE bf 0.01 10");
    for i in 0..100 {
        s.run(&format!("BF.ADD bf {i}"));
    }
    let Some(Value::Bloom(f)) = &s.value else {
        panic!()
    };
    let capacities: Vec<u64> = f.layers().map(|l| l.capacity).collect();
    assert_eq!(capacities, [10, 20, 40, 80]);
    assert_eq!(s.run("BF.INFO bf capacity"), info_field("Capacity", 150));

    // Capacity 4 and "0".."99": RedisBloom's tests expect 23, 5 and 4 layers for EXPANSION
    // 1, 2 and 4. With EXPANSION 1 the count is 25 minus the false positives (items that
    // answer 0 are not counted, so fewer layers fill); which items collide depends on the
    // hash, and bloomkit's (XXH3) collides on other items than RedisBloom's MurmurHash.
    let layers = |expansion: u32| {
        let mut s = Slot::new();
        s.run(&format!("BF.RESERVE k 0.01 4 EXPANSION {expansion}"));
        let mut added = 0;
        for i in 0..100 {
            if s.run(&format!("BF.ADD k {i}")) == Reply::Bool(true) {
                added += 1;
            }
        }
        let Some(Value::Bloom(f)) = &s.value else {
            panic!()
        };
        (f.num_layers(), added)
    };
    let (one, added) = layers(1);
    // Every layer holds 4; the last may be partly filled.
    assert_eq!(one, (added as usize).div_ceil(4));
    assert!((23..=25).contains(&one), "{one} layers for {added} added");
    // With bloomkit's stable hash none of "0".."99" is a false positive in these 64-bit
    // layers, so 100 are counted: 25 layers, where RedisBloom's hash makes some of them
    // false positives (23 layers).
    assert_eq!((one, added), (25, 100));
    assert_eq!(layers(2).0, 5); // 4+8+16+32+64 = 124 ≥ 100 > 60
    assert_eq!(layers(4).0, 4); // 4+16+64+256 ≥ 100 > 84
}

/// A logged `BF.RESERVE` names its layout; one without (written before `BF.*` made classic
/// layers) replays into blocked layers, the bits its items were acknowledged from: an item
/// that was a false positive then was never logged, and replayed into other bits it could
/// come back absent.
#[test]
fn bf_log_replays_each_filter_into_the_layout_it_was_written_with() {
    let layout = |value: &Option<Value>| match value {
        Some(Value::Bloom(f)) => (f.layout(), f.is_scaling()),
        other => panic!("{other:?}"),
    };
    let items: Vec<String> = (0..2000).map(|i| format!("item{i}")).collect();
    let mut madd = words("BF.MADD k");
    madd.extend(items.iter().map(|i| Bytes::from(i.clone())));
    for (reserve, expected) in [
        (
            "BF.RESERVE k 0.01 100 EXPANSION 2",
            (LayerLayout::Blocked, true),
        ),
        (
            "BF.RESERVE k 0.01 100 NONSCALING",
            (LayerLayout::Blocked, false),
        ),
        (
            "BF.RESERVE k 0.01 100 EXPANSION 2 LAYOUT BLOCKED",
            (LayerLayout::Blocked, true),
        ),
        (
            "BF.RESERVE k 0.01 100 EXPANSION 2 LAYOUT CLASSIC",
            (LayerLayout::Classic, true),
        ),
        (
            "BF.RESERVE k 0.01 100 EXPANSION 0 LAYOUT CLASSIC",
            (LayerLayout::Classic, false),
        ),
    ] {
        let log = if expected.1 {
            vec![words(reserve), madd.clone()]
        } else {
            vec![words(reserve)]
        };
        let value = replay(&log, Defaults::default());
        assert_eq!(layout(&value), expected, "{reserve}");
        if expected.1 {
            let Some(Value::Bloom(f)) = &value else {
                panic!()
            };
            assert!(items.iter().all(|i| f.contains(i.as_str())), "{reserve}");
        }
    }
    // A logged `LAYOUT CLASSIC` was written before the rotating probes: it replays into
    // the double hashing its items were acknowledged from; `CLASSIC2` into rotating probes.
    for (reserve, probes) in [
        (
            "BF.RESERVE k 0.01 100 EXPANSION 2 LAYOUT CLASSIC",
            ClassicProbes::DoubleHashing,
        ),
        (
            "BF.RESERVE k 0.01 100 EXPANSION 2 LAYOUT CLASSIC2",
            ClassicProbes::Rotating,
        ),
    ] {
        let Some(Value::Bloom(f)) = replay(&[words(reserve)], Defaults::default()) else {
            panic!("{reserve}")
        };
        assert_eq!(f.classic_probes(), probes, "{reserve}");
    }
    // A logged creation of blocked layers was written before their two-seed probes unless it
    // says `LAYOUT BLOCKED2`: it replays into the one-seed probes its items were
    // acknowledged from.
    for (reserve, probes) in [
        ("BF.RESERVE k 0.01 100 EXPANSION 2", BlockedProbes::OneSeed),
        ("BF.RESERVE k 0.01 100 NONSCALING", BlockedProbes::OneSeed),
        (
            "BF.RESERVE k 0.01 100 EXPANSION 2 LAYOUT BLOCKED",
            BlockedProbes::OneSeed,
        ),
        (
            "BF.RESERVE k 0.01 100 EXPANSION 0 LAYOUT BLOCKED2",
            BlockedProbes::TwoSeeds,
        ),
    ] {
        let Some(Value::Bloom(f)) = replay(&[words(reserve)], Defaults::default()) else {
            panic!("{reserve}")
        };
        assert_eq!(f.layout(), LayerLayout::Blocked, "{reserve}");
        assert_eq!(f.blocked_probes(), probes, "{reserve}");
    }
    let mut b = Slot::new();
    b.defaults.bf_layout = LayerLayout::Blocked;
    b.run("BF.RESERVE k 0.01 100 NONSCALING");
    b.run("BF.ADD k a");
    assert_eq!(
        b.log[0],
        words("BF.RESERVE k 0.01 100 EXPANSION 0 LAYOUT BLOCKED2")
    );
    assert_eq!(replay(&b.log[..2], Defaults::default()), b.value);
    // What this build logs replays into what it built, bit for bit.
    let mut s = Slot::new();
    s.run("BF.RESERVE k 0.01 100 NONSCALING");
    s.run("BF.ADD k a");
    s.run("BF.RESERVE g 0.001 50");
    assert_eq!(
        s.log[0],
        words("BF.RESERVE k 0.01 100 EXPANSION 0 LAYOUT CLASSIC2")
    );
    assert_eq!(replay(&s.log[..2], Defaults::default()), {
        let mut t = Slot::new();
        t.run("BF.RESERVE k 0.01 100 NONSCALING");
        t.run("BF.ADD k a");
        t.value
    });
    // A bad layout in the log stops the replay.
    let bad = words("BF.RESERVE k 0.01 100 EXPANSION 2 LAYOUT X");
    let bad = views(&bad);
    let bad = FilterCommand::parse_logged(&bad);
    let bad_layout = err("ERR bad layout: LAYOUT takes CLASSIC or BLOCKED");
    assert_eq!(bad, Some(Err(bad_layout.clone())));
}

/// `bf-layout` and `BF.RESERVE ... LAYOUT`: a client picks a filter's layers, which its log
/// records, and a key named `layout` is still a key.
#[test]
fn bf_layout_is_a_default_and_a_reservation_option() {
    let layout = |value: &Option<Value>| match value {
        Some(Value::Bloom(f)) => f.layout(),
        other => panic!("{other:?}"),
    };
    let mut c = Slot::new();
    assert_eq!(c.run("BF.RESERVE k 0.01 100 LAYOUT BLOCKED"), Reply::Ok);
    assert_eq!(layout(&c.value), LayerLayout::Blocked);
    assert_eq!(
        c.log[0],
        words("BF.RESERVE k 0.01 100 EXPANSION 2 LAYOUT BLOCKED2")
    );
    let mut c = Slot::new();
    assert_eq!(
        c.run("BF.RESERVE k 0.01 100 EXPANSION 4 LAYOUT classic"),
        Reply::Ok
    );
    assert_eq!(layout(&c.value), LayerLayout::Classic);
    let mut c = Slot::new();
    assert_eq!(
        c.run("BF.RESERVE k 0.01 100 LAYOUT"),
        err("ERR bad layout: LAYOUT takes CLASSIC or BLOCKED")
    );
    assert_eq!(
        c.run("BF.RESERVE k 0.01 100 EXPANSION 2 LAYOUT BLOCKED extra words"),
        err("ERR wrong number of arguments for 'bf.reserve' command")
    );
    assert_eq!(c.run("BF.RESERVE layout 0.01 100"), Reply::Ok);
    assert_eq!(layout(&c.value), LayerLayout::Classic);
    // The default: bf-layout, for every creation that names no layout.
    let mut d = Slot::new();
    d.defaults.bf_layout = LayerLayout::Blocked;
    d.run("BF.ADD a x");
    assert_eq!(layout(&d.value), LayerLayout::Blocked);
    d.value = None;
    d.run("BF.INSERT b ITEMS x");
    assert_eq!(layout(&d.value), LayerLayout::Blocked);
    // Replayed under the other default, each keeps its layout.
    assert_eq!(
        replay(&d.log[..2], Defaults::default()).map(|v| layout(&Some(v))),
        Some(LayerLayout::Blocked)
    );
}

#[test]
fn bf_memory_is_asked_before_it_is_allocated() {
    let mut s = Slot::new();
    // RedisBloom 2.8 allocates 5 GB for this without a word.
    let machine = TestBudget::new(usize::MAX, Some(1 << 30));
    assert_eq!(
        s.run_with(words("BF.RESERVE k 0.0000001 1073741824"), &machine),
        err("ERR Insufficient memory to create filter")
    );
    assert!(s.value.is_none());
    let limit = TestBudget::new(1 << 20, None);
    assert_eq!(
        s.run_with(words("BF.RESERVE k 0.0000001 1073741824"), &limit),
        err("OOM command not allowed when used memory > 'maxmemory'.")
    );
    assert!(limit.largest_ask.load(Ordering::Relaxed) > 4_000_000_000);
    // Implicit creation asks too.
    assert_eq!(
        s.run_with(words("BF.ADD k a"), &TestBudget::new(10, None)),
        err("OOM command not allowed when used memory > 'maxmemory'.")
    );
    assert!(s.value.is_none() && s.log.is_empty());

    // A growth past the limit stops MADD there; what was added is logged.
    let mut s = Slot::new();
    s.run("BF.RESERVE k 0.01 2");
    s.log.clear();
    // Less than the second layer's bits (4 items at 0.25%: one 64-bit word).
    let small = TestBudget::new(7, None);
    assert_eq!(
        s.run_with(words("BF.MADD k a b c d"), &small),
        Reply::Array(vec![
            Reply::Bool(true),
            Reply::Bool(true),
            err("OOM command not allowed when used memory > 'maxmemory'."),
        ])
    );
    assert_eq!(s.log, vec![words("BF.MADD k a b")]);
    assert_eq!(s.run_with(words("BF.MADD k c"), &Unlimited), bools(&[true]));
}

#[test]
fn cf_reserve_errors_in_redisbloom_order() {
    let mut s = Slot::new();
    let cases = [
        (
            "CF.RESERVE k",
            "ERR wrong number of arguments for 'cf.reserve' command",
        ),
        (
            "CF.RESERVE k 100 BUCKETSIZE",
            "ERR wrong number of arguments for 'cf.reserve' command",
        ),
        ("CF.RESERVE k x", "Bad capacity"),
        ("CF.RESERVE k x MAXITERATIONS x", "Bad capacity"),
        (
            "CF.RESERVE k 100 MAXITERATIONS x BUCKETSIZE x",
            "Couldn't parse MAXITERATIONS",
        ),
        (
            "CF.RESERVE k 100 MAXITERATIONS 0 BUCKETSIZE x",
            "MAXITERATIONS: value must be in the range [1, 65535]",
        ),
        (
            "CF.RESERVE k 100 MAXITERATIONS 65536",
            "MAXITERATIONS: value must be in the range [1, 65535]",
        ),
        (
            "CF.RESERVE k 100 BUCKETSIZE x EXPANSION x",
            "Couldn't parse BUCKETSIZE",
        ),
        (
            "CF.RESERVE k 100 BUCKETSIZE 0",
            "BUCKETSIZE: value must be in the range [1, 255]",
        ),
        (
            "CF.RESERVE k 100 BUCKETSIZE 256",
            "BUCKETSIZE: value must be in the range [1, 255]",
        ),
        ("CF.RESERVE k 100 EXPANSION x", "Couldn't parse EXPANSION"),
        (
            "CF.RESERVE k 100 EXPANSION 32769",
            "EXPANSION: value must be in the range [0, 32768]",
        ),
        (
            "CF.RESERVE k 3",
            "Capacity must be in the range [2 * BUCKETSIZE, 1073741824]",
        ),
        (
            "CF.RESERVE k 100 BUCKETSIZE 51",
            "Capacity must be in the range [2 * BUCKETSIZE, 1073741824]",
        ),
        (
            "CF.RESERVE k 1073741825",
            "Capacity must be in the range [2 * BUCKETSIZE, 1073741824]",
        ),
        (
            "CF.RESERVE k -5",
            "Capacity must be in the range [2 * BUCKETSIZE, 1073741824]",
        ),
    ];
    for (line, expected) in cases {
        assert_eq!(s.run(line), err(expected), "{line}");
    }
    assert!(s.value.is_none() && s.log.is_empty());
    assert_eq!(s.run("CF.RESERVE k 1000 EXPANSION 3 junk words"), Reply::Ok);
    assert_eq!(s.run("CF.RESERVE k 1000"), err("ERR item exists"));
    assert_eq!(
        s.log,
        vec![words(
            "CF.RESERVE k 1000 BUCKETSIZE 2 MAXITERATIONS 20 EXPANSION 3 DISTINCT"
        )]
    );
    // RedisBloom's CF.INFO for `CF.RESERVE cf 1000`, Size included; EXPANSION 3 is stored as 4.
    let Reply::Map(info) = s.run("CF.INFO k") else {
        panic!()
    };
    // bloomkit's fields after RedisBloom's: an empty filter's load factor and rate are 0.
    let (head, tail) = info.split_at(8);
    assert_eq!(
        tail,
        [
            (Reply::Simple("Load factor".into()), Reply::Double(0.0)),
            (
                Reply::Simple("Estimated error rate".into()),
                Reply::Double(0.0)
            ),
        ]
    );
    let values: Vec<(String, i64)> = head
        .iter()
        .cloned()
        .map(|(k, v)| match (k, v) {
            (Reply::Simple(k), Reply::Integer(v)) => (k, v),
            other => panic!("{other:?}"),
        })
        .collect();
    let expected = [
        ("Size", 1080),
        ("Number of buckets", 512),
        ("Number of filters", 1),
        ("Number of items inserted", 0),
        ("Number of items deleted", 0),
        ("Bucket size", 2),
        ("Expansion rate", 4),
        ("Max iterations", 20),
    ]
    .map(|(k, v)| (k.to_string(), v));
    assert_eq!(values, expected);
    // The lower bound of a capacity follows cf-bucket-size when BUCKETSIZE is not given.
    let mut s = Slot::new();
    s.defaults.cf_bucket_size = 8;
    assert_eq!(
        s.run("CF.RESERVE k 10"),
        err("Capacity must be in the range [2 * BUCKETSIZE, 1073741824]")
    );
    assert_eq!(s.run("CF.RESERVE k 10 BUCKETSIZE 4"), Reply::Ok);
}

#[test]
fn cf_commands_answer_as_redisbloom() {
    let mut s = Slot::new();
    assert_eq!(s.run("CF.EXISTS k a"), Reply::Bool(false));
    assert_eq!(s.run("CF.COUNT k a"), Reply::Integer(0));
    assert_eq!(s.run("CF.DEL k a"), err("Not found"));
    assert_eq!(s.run("CF.INFO k"), err("ERR not found"));
    assert_eq!(s.run("CF.ADD k a"), Reply::Bool(true));
    assert_eq!(s.run("CF.ADD k a"), Reply::Bool(true));
    assert_eq!(s.run("CF.COUNT k a"), Reply::Integer(2));
    assert_eq!(s.run("CF.ADDNX k a"), Reply::Bool(false));
    assert_eq!(s.run("CF.ADDNX k b"), Reply::Bool(true));
    assert_eq!(s.run("CF.INSERT k ITEMS c a"), bools(&[true, true]));
    assert_eq!(
        s.run("CF.INSERTNX k ITEMS c d"),
        Reply::Array(vec![Reply::Integer(0), Reply::Integer(1)])
    );
    assert_eq!(s.run("CF.MEXISTS k a b z"), bools(&[true, true, false]));
    assert_eq!(s.run("CF.DEL k a"), Reply::Bool(true));
    assert_eq!(s.run("CF.COUNT k a"), Reply::Integer(2));
    assert_eq!(s.run("CF.DEL k zz"), Reply::Bool(false));
    let Reply::Map(info) = s.run("CF.INFO k") else {
        panic!()
    };
    assert_eq!(info[1].1, Reply::Integer(512)); // cf-initial-size 1024 / 2
    assert_eq!(info[3].1, Reply::Integer(5));
    assert_eq!(info[4].1, Reply::Integer(1));
    assert_eq!(
        s.log,
        vec![
            words("CF.RESERVE k 1024 BUCKETSIZE 2 MAXITERATIONS 20 EXPANSION 1 DISTINCT"),
            words("CF.ADD k a"),
            words("CF.ADD k a"),
            words("CF.ADD k b"),
            words("CF.INSERT k MAXEXPANSIONS 32 ITEMS c a"),
            words("CF.ADD k d"),
            words("CF.DEL k a"),
        ]
    );
    // The records of logs written before one stored item was logged as `CF.ADD` replay
    // to the same filter as this build's records (both in the original placement, as such
    // old logs created it).
    let mut original = s.log.clone();
    let without_placement = original[0].len() - 1;
    original[0].truncate(without_placement);
    let old_log = [
        "CF.RESERVE k 1024 BUCKETSIZE 2 MAXITERATIONS 20 EXPANSION 1",
        "CF.INSERT k MAXEXPANSIONS 32 ITEMS a",
        "CF.INSERT k MAXEXPANSIONS 32 ITEMS a",
        "CF.INSERT k MAXEXPANSIONS 32 ITEMS b",
        "CF.INSERT k MAXEXPANSIONS 32 ITEMS c a",
        "CF.INSERT k MAXEXPANSIONS 32 ITEMS d",
        "CF.DEL k a",
    ]
    .map(words);
    assert_eq!(
        replay(&old_log, odd_defaults()),
        replay(&original, odd_defaults())
    );
    assert_eq!(replay(&s.log, odd_defaults()), s.value);
    // RESP3: booleans, but integers for CF.INSERTNX and CF.COUNT.
    assert_eq!(s.run("CF.ADDNX k b"), Reply::Bool(false));
    assert_eq!(
        s.run("CF.INSERTNX k ITEMS b"),
        Reply::Array(vec![Reply::Integer(0)])
    );
    assert_eq!(s.run("CF.COUNT k b"), Reply::Integer(1));
    // Another family's key.
    let mut b = Slot::new();
    b.run("BF.ADD k a");
    let wrongtype = err("WRONGTYPE Operation against a key holding the wrong kind of value");
    assert_eq!(b.run("CF.EXISTS k a"), Reply::Bool(false));
    assert_eq!(b.run("CF.COUNT k a"), Reply::Integer(0));
    assert_eq!(b.run("CF.DEL k a"), err("Not found"));
    assert_eq!(b.run("CF.ADD k a"), wrongtype);
    assert_eq!(b.run("CF.INFO k"), wrongtype);
    assert_eq!(b.run("CF.RESERVE k 100"), wrongtype);
}

#[test]
fn cf_insert_options_and_errors_in_order() {
    let mut s = Slot::new();
    let arity = "ERR wrong number of arguments for 'cf.insert' command";
    let range = "Capacity must be in the range [cf-bucket-size * 2, 1073741824]";
    let cases = [
        ("CF.INSERT k ITEMS", arity),
        ("CF.INSERT k CAPACITY 100", arity),
        ("CF.INSERT k NOCREATE ITEMS", arity),
        ("CF.INSERT k CAPACITY x ITEMS a", "Bad capacity"),
        ("CF.INSERT k CAPACITY 1 ITEMS a", range),
        ("CF.INSERT k WAT ITEMS a", "Unknown argument received"),
        ("CF.INSERT k NOCREATE ITEMS a", "ERR not found"),
        // A capacity checked against cf-bucket-size comes before a later error...
        ("CF.INSERT k CAPACITY 3 WAT", range),
        // ...and a valid one lets the later error through.
        ("CF.INSERT k CAPACITY 4 WAT", "Unknown argument received"),
        ("CF.INSERT k CAPACITY 4 CAPACITY", arity),
    ];
    for (line, expected) in cases {
        assert_eq!(s.run(line), err(expected), "{line}");
    }
    assert!(s.value.is_none() && s.log.is_empty());
    s.defaults.cf_bucket_size = 4;
    assert_eq!(s.run("CF.INSERT k CAPACITY 7 ITEMS a"), err(range));
    assert_eq!(s.run("CF.INSERT k CAPACITY 8 ITEMS a"), bools(&[true]));
    assert_eq!(
        s.log[0],
        words("CF.RESERVE k 8 BUCKETSIZE 4 MAXITERATIONS 20 EXPANSION 1 DISTINCT")
    );
}

#[test]
fn cf_full_and_maximum_expansions() {
    // EXPANSION 0: a full filter refuses inserts.
    let mut s = Slot::new();
    s.run("CF.RESERVE k 4 BUCKETSIZE 2 EXPANSION 0");
    let mut stored = 0;
    let mut last = Reply::Ok;
    for i in 0..64 {
        last = s.run(&format!("CF.ADD k {i}"));
        if last != Reply::Bool(true) {
            break;
        }
        stored += 1;
    }
    assert_eq!(last, err("Filter is full"));
    assert!(stored >= 2, "{stored}");
    let Reply::Array(answers) = s.run("CF.INSERT k ITEMS x y") else {
        panic!()
    };
    let full = Reply::PerProtocol {
        resp2: Box::new(Reply::Integer(-1)),
        resp3: Box::new(Reply::Bool(false)),
    };
    assert!(answers.contains(&full), "{answers:?}");

    // cf-max-expansions: once the filter has that many sub-filters, inserts are refused.
    let mut s = Slot::new();
    s.defaults.cf_max_expansions = 2;
    s.run("CF.RESERVE k 4");
    let mut i = 0;
    let reply = loop {
        let reply = s.run(&format!("CF.ADD k {i}"));
        if reply != Reply::Bool(true) {
            break reply;
        }
        i += 1;
    };
    assert_eq!(reply, err("Maximum expansions reached"));
    let Some(Value::Cuckoo(f)) = &s.value else {
        panic!()
    };
    assert_eq!(f.num_filters(), 2);
    assert_eq!(
        s.run("CF.INSERT k ITEMS z"),
        err("Maximum expansions reached")
    );
    // The limit in force is logged with the inserts, so replay passes it whatever the
    // configuration then.
    let back = replay(&s.log, odd_defaults());
    assert_eq!(back, s.value);
    // An implicit creation that is refused at once is still created (and logged).
    let mut s = Slot::new();
    s.defaults.cf_max_expansions = 1;
    assert_eq!(s.run("CF.ADD k a"), err("Maximum expansions reached"));
    assert!(s.value.is_some());
    assert_eq!(s.log.len(), 1);
}

/// A budget that says whether its command is replayed, and counts how often it was asked.
struct Replaying {
    replays: bool,
    asked: std::cell::Cell<usize>,
}

impl Budget for Replaying {
    fn within_maxmemory(&self, _extra_bytes: usize) -> bool {
        true
    }
    fn machine_available(&self) -> Option<usize> {
        None
    }
    fn replays(&self) -> bool {
        self.asked.set(self.asked.get() + 1);
        self.replays
    }
}

/// A replayed `CF.ADD` passes a `cf-max-expansions` it would not pass from a client (the
/// host that acknowledged it had another), and its budget is asked who sent it only then:
/// a module pays to find out.
#[test]
fn replayed_cf_adds_ask_only_when_refused() {
    let budget = |replays| Replaying {
        replays,
        asked: std::cell::Cell::new(0),
    };
    let mut s = Slot::new();
    s.defaults.cf_max_expansions = 2;
    s.run("CF.RESERVE k 4");
    let mut i = 0;
    // Below the limit nobody asks.
    loop {
        let asking = budget(false);
        let reply = s.run_with(words(&format!("CF.ADD k {i}")), &asking);
        if reply != Reply::Bool(true) {
            assert_eq!(reply, err("Maximum expansions reached"));
            assert_eq!(asking.asked.get(), 1, "asked once it mattered");
            break;
        }
        assert_eq!(asking.asked.get(), 0, "asked below the limit");
        i += 1;
    }
    let filters = |s: &Slot| match &s.value {
        Some(Value::Cuckoo(f)) => f.num_filters(),
        _ => panic!("{:?}", s.value),
    };
    assert_eq!(filters(&s), 2);
    // The same insert, replayed, is applied (and may grow the filter).
    for word in ["CF.ADD", "CF.ADDNX"] {
        let replay = budget(true);
        let reply = s.run_with(words(&format!("{word} k {i}")), &replay);
        assert!(!reply.is_error(), "{word}: {reply:?}");
        assert_eq!(replay.asked.get(), 1, "{word}");
        i += 1;
    }
    // Several items name their limit in the record, so they learn it at once.
    let replay = budget(true);
    let reply = s.run_with(words(&format!("CF.INSERT k ITEMS {i} x{i}")), &replay);
    assert!(!reply.is_error(), "{reply:?}");
    assert_eq!(replay.asked.get(), 1);
    assert_eq!(
        s.log
            .last()
            .map(|record| String::from_utf8_lossy(&record[3]).into_owned()),
        Some(u32::MAX.to_string())
    );
}

#[test]
fn cf_growth_past_maxmemory_is_refused() {
    let mut s = Slot::new();
    s.run("CF.RESERVE k 4");
    s.log.clear();
    let budget = TestBudget::new(0, None);
    let mut i = 0;
    let reply = loop {
        let reply = s.run_with(words(&format!("CF.ADD k {i}")), &budget);
        if reply != Reply::Bool(true) {
            break reply;
        }
        i += 1;
    };
    assert_eq!(
        reply,
        err("OOM command not allowed when used memory > 'maxmemory'.")
    );
    let Some(Value::Cuckoo(f)) = &s.value else {
        panic!()
    };
    assert_eq!(f.num_filters(), 1);
    assert_eq!(s.log.len(), i);
    // In CF.INSERT the item answers -1, as for RedisBloom's failed allocation.
    let Reply::Array(answers) = s.run_with(words(&format!("CF.INSERT k ITEMS {i}")), &budget)
    else {
        panic!()
    };
    assert_eq!(
        answers,
        [Reply::PerProtocol {
            resp2: Box::new(Reply::Integer(-1)),
            resp3: Box::new(Reply::Bool(false)),
        }]
    );
    let mut big = Slot::new();
    assert_eq!(
        big.run_with(
            words("CF.RESERVE big 1073741824"),
            &TestBudget::new(1 << 20, None)
        ),
        err("OOM command not allowed when used memory > 'maxmemory'.")
    );
    assert_eq!(
        big.run_with(
            words("CF.RESERVE big 1073741824"),
            &TestBudget::new(usize::MAX, Some(1 << 20))
        ),
        err("ERR Insufficient memory to create filter")
    );
}

/// Runs a mixed workload under the default configuration and replays its log under another.
#[test]
fn logs_replay_to_the_same_value_under_other_defaults() {
    let scripts: Vec<Vec<String>> = vec![
        (0..300).map(|i| format!("BF.ADD b {}", i % 250)).collect(),
        std::iter::once("BF.INSERT b CAPACITY 7 ERROR 0.001 EXPANSION 3 ITEMS x".to_string())
            .chain((0..100).map(|i| format!("BF.MADD b {i} {} {}", i * 7, i % 5)))
            .collect(),
        std::iter::once("BF.RESERVE b 0.02 5".to_string())
            .chain((0..60).map(|i| format!("BF.INSERT b NONSCALING ITEMS {i}")))
            .collect(),
        std::iter::once("BF.INSERT b EXPANSION 0 CAPACITY 3 ITEMS a b c d".to_string()).collect(),
        (0..400)
            .map(|i| match i % 5 {
                0 => format!("CF.ADD c {}", i % 37),
                1 => format!("CF.ADDNX c {}", i % 41),
                2 => format!("CF.DEL c {}", i % 13),
                3 => format!("CF.INSERT c ITEMS {i} {} {}", i + 1, i % 7),
                _ => format!("CF.INSERTNX c ITEMS {} {i}", i % 3),
            })
            .collect(),
        std::iter::once("CF.RESERVE c 8 BUCKETSIZE 1 MAXITERATIONS 5 EXPANSION 2".to_string())
            .chain((0..200).map(|i| format!("CF.ADD c {i}")))
            .collect(),
    ];
    for script in scripts {
        let mut s = Slot::new();
        for line in &script {
            s.run(line);
        }
        assert!(s.value.is_some(), "{script:?}");
        let back = replay(&s.log, odd_defaults());
        assert_eq!(back, s.value, "{}", script[0]);
        // Cuckoo equality leaves out the deletion counter; compare the bytes too.
        assert_eq!(
            back.map(|v| v.to_bytes()),
            s.value.as_ref().map(Value::to_bytes)
        );
    }
}

/// redis-py's loop: SCANDUMP from 0 until it answers 0, then LOADCHUNK every pair in order.
fn dump(s: &mut Slot, family: &str, key: &str) -> Vec<(i64, Bytes)> {
    let mut chunks = Vec::new();
    let mut iter = 0;
    loop {
        let reply = s.run(&format!("{family}.SCANDUMP {key} {iter}"));
        let Reply::Array(pair) = reply else {
            panic!("{reply:?}")
        };
        let [Reply::Integer(next), data] = &pair[..] else {
            panic!("{pair:?}")
        };
        if *next == 0 {
            let end = if family == "BF" {
                Reply::bulk(Bytes::new())
            } else {
                Reply::Null
            };
            assert_eq!(*data, end);
            break;
        }
        let Reply::Bulk(bytes) = data else { panic!() };
        chunks.push((*next, bytes.clone()));
        iter = *next;
    }
    chunks
}

fn load(s: &mut Slot, family: &str, key: &str, chunks: &[(i64, Bytes)]) -> Vec<Reply> {
    chunks
        .iter()
        .map(|(iter, data)| {
            let cmd = args(&[
                format!("{family}.LOADCHUNK").as_bytes(),
                key.as_bytes(),
                iter.to_string().as_bytes(),
                data,
            ]);
            s.run_with(cmd, &Unlimited)
        })
        .collect()
}

#[test]
fn dumps_round_trip_into_another_key() {
    for family in ["BF", "CF"] {
        let mut src = Slot::new();
        for i in 0..5000 {
            src.run(&format!("{family}.ADD k {i}"));
        }
        let chunks = dump(&mut src, family, "k");
        assert!(chunks.len() >= 2);
        assert_eq!(chunks[0].0, 1);
        let mut dst = Slot::new();
        let replies = load(&mut dst, family, "k2", &chunks);
        assert!(replies.iter().all(|r| *r == Reply::Ok), "{replies:?}");
        // The restored key is a finished filter, equal to the source, answering alike.
        assert_eq!(dst.value, src.value);
        for i in (0..10_000).step_by(7) {
            let q = format!("{family}.EXISTS k {i}");
            assert_eq!(dst.run(&q), src.run(&q));
        }
        // The log replays to the same value.
        assert_eq!(replay(&dst.log, odd_defaults()), dst.value);
        // A retried chunk is harmless; a header for an existing key is refused.
        let last = chunks.last().unwrap();
        assert_eq!(
            load(&mut dst, family, "k2", std::slice::from_ref(last)),
            [Reply::Ok]
        );
        let refused = load(&mut dst, family, "k2", &chunks[..1]);
        let expected = if family == "BF" {
            "ERR received bad data"
        } else {
            "ERR item exists"
        };
        assert_eq!(refused, [err(expected)]);
    }
    // An empty cuckoo filter dumps nothing, as RedisBloom's.
    let mut s = Slot::new();
    s.run("CF.RESERVE e 100");
    assert_eq!(
        s.run("CF.SCANDUMP e 0"),
        Reply::Array(vec![Reply::Integer(0), Reply::Null])
    );
    // An empty Bloom filter dumps its header and its (zero) bits.
    let mut s = Slot::new();
    s.run("BF.RESERVE b 0.01 100");
    let chunks = dump(&mut s, "BF", "b");
    let mut d = Slot::new();
    load(&mut d, "BF", "b", &chunks);
    assert_eq!(d.value, s.value);
}

/// `Value::restore_commands`, what a module writes for an append-only file's rewrite: the
/// chunks `SCANDUMP` would give, and a replay that rebuilds the value under any defaults,
/// whatever it holds (several layers, more than one 16 MiB chunk, an empty cuckoo filter,
/// which `SCANDUMP` cannot dump, a restore half done).
#[test]
fn restore_commands_rebuild_every_value() {
    let restore = |value: &Value| {
        let mut commands = Vec::new();
        value.restore_commands(&Bytes::from_static(b"k"), &mut |c| commands.push(c));
        commands
    };
    let mut cases = Vec::new();
    for (family, setup) in [
        ("BF", "BF.RESERVE k 0.01 10"),
        ("BF", "BF.RESERVE k 0.0001 10000000 NONSCALING"),
        ("CF", "CF.RESERVE k 1000 BUCKETSIZE 4"),
        ("CF", "CF.RESERVE k 64 EXPANSION 2"),
    ] {
        let mut s = Slot::new();
        assert_eq!(s.run(setup), Reply::Ok);
        cases.push((family, s.value.clone().unwrap(), true));
        for i in 0..300 {
            s.run(&format!("{family}.ADD k {i}"));
        }
        if family == "CF" {
            s.run("CF.DEL k 7");
        }
        cases.push((family, s.value.clone().unwrap(), false));
    }
    for (family, value, empty) in &cases {
        let commands = restore(value);
        assert_eq!(commands[0][0], format!("{family}.LOADCHUNK"));
        assert_eq!(commands[0][2], "1");
        // Where SCANDUMP can dump the value, its chunks are these.
        let mut s = Slot::new();
        s.value = Some(value.clone());
        if !(*empty && *family == "CF") {
            let chunks: Vec<(i64, Bytes)> = commands
                .iter()
                .map(|c| {
                    (
                        std::str::from_utf8(&c[2]).unwrap().parse().unwrap(),
                        c[3].clone(),
                    )
                })
                .collect();
            assert_eq!(chunks, dump(&mut s, family, "k"));
        }
        assert!(commands.iter().all(|c| c[3].len() <= 16 << 20));
        assert_eq!(replay(&commands, odd_defaults()).as_ref(), Some(value));
    }
    // The 24 MiB filter takes two chunks after its header.
    assert_eq!(restore(&cases[2].1).len(), 3);

    // A filter still being restored comes back with the bytes it had.
    let mut src = Slot::new();
    for i in 0..2000 {
        src.run(&format!("BF.ADD k {i}"));
    }
    let chunks = dump(&mut src, "BF", "k");
    let mut half = Slot::new();
    load(&mut half, "BF", "k", &chunks[..1]);
    let body = &chunks[1].1;
    let first = body.slice(..body.len() / 2);
    let iter = first.len() as i64 + 1;
    load(&mut half, "BF", "k", &[(iter, first)]);
    let loading = half.value.clone().unwrap();
    assert!(matches!(loading, Value::Loading(_)));
    let commands = restore(&loading);
    assert_eq!(commands.len(), 2);
    assert_eq!(replay(&commands, odd_defaults()), Some(loading));
}

#[test]
fn scandump_and_loadchunk_argument_errors() {
    let mut s = Slot::new();
    assert_eq!(s.run("BF.SCANDUMP k x"), err("ERR not found"));
    s.run("BF.ADD k a");
    assert_eq!(
        s.run("BF.SCANDUMP k x"),
        err("Second argument must be numeric")
    );
    assert_eq!(
        s.run("BF.SCANDUMP k -5"),
        Reply::Array(vec![Reply::Integer(0), Reply::bulk(Bytes::new())])
    );
    assert_eq!(
        s.run("BF.SCANDUMP k 99999999999"),
        s.run("BF.SCANDUMP k -5")
    );
    assert_eq!(
        s.run("BF.LOADCHUNK k x y"),
        err("ERR Second argument must be numeric")
    );
    assert_eq!(
        Slot::new().run("BF.LOADCHUNK nokey 5 y"),
        err("ERR not found")
    );
    assert_eq!(s.run("CF.SCANDUMP k x"), err("Invalid position"));
    assert_eq!(s.run("CF.SCANDUMP k -1"), err("Invalid position"));
    assert_eq!(Slot::new().run("CF.SCANDUMP nokey 0"), err("ERR not found"));
    assert_eq!(s.run("CF.LOADCHUNK k 0 x"), err("Invalid position"));
    assert_eq!(s.run("CF.LOADCHUNK k x x"), err("Invalid position"));
    assert_eq!(
        Slot::new().run("CF.LOADCHUNK nokey 5 x"),
        err("ERR not found")
    );
    assert_eq!(
        Slot::new().run("CF.LOADCHUNK nokey 1 x"),
        err("Invalid header")
    );
    assert_eq!(
        s.run("CF.LOADCHUNK k 1 x"),
        err("WRONGTYPE Operation against a key holding the wrong kind of value")
    );
    assert_eq!(
        Slot::new().run("BF.LOADCHUNK other 1 garbage"),
        err("ERR received bad data")
    );
    // A cuckoo header into BF, and the reverse, is bad data, in RedisBloom's words, and
    // then which kinds each family loads.
    let mut c = Slot::new();
    c.run("CF.ADD c a");
    let cf_chunks = dump(&mut c, "CF", "c");
    assert_eq!(
        load(&mut Slot::new(), "BF", "x", &cf_chunks[..1]),
        [err(
            "ERR received bad data: the chunk starts a cuckoo filter, and a BF key loads \
             scalable filters only (what BF.SCANDUMP of a BF key, or bloomkit build --kind \
             scalable, writes); CF.LOADCHUNK loads cuckoo filters"
        )]
    );
    let bf_chunks = dump(&mut s, "BF", "k");
    assert_eq!(
        load(&mut Slot::new(), "CF", "x", &bf_chunks[..1]),
        [err(
            "Invalid header: the chunk starts a scalable filter, and a CF key loads cuckoo \
             filters only (what CF.SCANDUMP writes); BF.LOADCHUNK loads scalable filters"
        )]
    );
}

/// A filter file of a kind no BF key holds (what `bloomkit build` writes by default), sent
/// as a BF dump, is refused with the kinds that load; a scalable file (`bloomkit build
/// --kind scalable`, blocked layers) loads, and answers for its keys.
#[test]
fn loadchunk_of_a_file_says_which_kinds_load() {
    for kind in bloomkit::FilterKind::ALL {
        let file = bloomkit::AnyFilter::build_from_hashes(kind, &[bloomkit::hash("a")], 0.01)
            .unwrap()
            .to_bytes();
        let reply = load(&mut Slot::new(), "BF", "x", &[(1, Bytes::from(file))]);
        if kind == bloomkit::FilterKind::Scalable {
            continue;
        }
        let Reply::Error(text) = &reply[0] else {
            panic!("{kind}: {reply:?}")
        };
        assert!(
            text.starts_with("ERR received bad data: the chunk starts"),
            "{text}"
        );
        assert!(text.contains(&format!(" {kind} filter, ")), "{text}");
        assert!(text.contains("loads scalable filters only"), "{text}");
    }
    let mut scalable = bloomkit::ScalableBloomFilter::new(100, 0.01).unwrap();
    scalable.insert("apple").unwrap();
    let file = Bytes::from(scalable.to_bytes());
    let header_len = bloomkit::format::peek_header(&file)
        .unwrap()
        .unwrap()
        .header_len;
    let chunks = [
        (1, file.slice(..header_len)),
        // A chunk's iterator is one past its last byte, counted after the header.
        (
            (file.len() - header_len + 1) as i64,
            file.slice(header_len..),
        ),
    ];
    let mut slot = Slot::new();
    assert_eq!(load(&mut slot, "BF", "x", &chunks), [Reply::Ok, Reply::Ok]);
    assert_eq!(slot.run("BF.EXISTS x apple"), Reply::Bool(true));
}

#[test]
fn a_key_being_restored_answers_only_loadchunk() {
    let mut src = Slot::new();
    for i in 0..100 {
        src.run(&format!("BF.ADD k {i}"));
    }
    let chunks = dump(&mut src, "BF", "k");
    let mut dst = Slot::new();
    load(&mut dst, "BF", "k", &chunks[..1]);
    assert_eq!(dst.value.as_ref().unwrap().type_name(), "MBbloom--");
    let restoring = err(
        "ERR the filter is still being restored: send the rest of its chunks with BF.LOADCHUNK",
    );
    for line in [
        "BF.ADD k a",
        "BF.EXISTS k a",
        "BF.INFO k",
        "BF.CARD k",
        "BF.SCANDUMP k 0",
    ] {
        assert_eq!(dst.run(line), restoring, "{line}");
    }
    assert_eq!(dst.run("BF.RESERVE k 0.01 10"), err("ERR item exists"));
    assert_eq!(
        dst.run("CF.ADD k a"),
        err("WRONGTYPE Operation against a key holding the wrong kind of value")
    );
    // A snapshot taken now restores the partial state, which then completes.
    let snapshot = Value::from_bytes(&dst.value.as_ref().unwrap().to_bytes()).unwrap();
    let mut later = Slot::new();
    later.value = Some(snapshot);
    assert!(load(&mut later, "BF", "k", &chunks[1..])
        .iter()
        .all(|r| *r == Reply::Ok));
    assert_eq!(later.value, src.value);
}

#[test]
fn hostile_chunks_are_refused_without_panicking() {
    for family in ["BF", "CF"] {
        let mut src = Slot::new();
        for i in 0..3000 {
            src.run(&format!("{family}.ADD k {i}"));
        }
        let chunks = dump(&mut src, family, "k");
        let header = &chunks[0].1;
        let body = &chunks[1].1;
        let header_len = header.len();

        // Every truncation of the header.
        for n in 0..header_len {
            let mut s = Slot::new();
            let r = load(&mut s, family, "x", &[(1, header.slice(..n))]);
            assert!(r[0].is_error(), "{family} header of {n} bytes: {r:?}");
            assert!(s.value.is_none());
        }
        // Flipped bytes anywhere: the load fails (at the header, or at the last chunk,
        // where the checksum is checked and the key is removed), never panics, and a key
        // is only left behind holding exactly the source filter.
        let total: Vec<u8> = chunks.iter().flat_map(|(_, d)| d.iter().copied()).collect();
        for at in (0..total.len())
            .step_by(total.len() / 97 + 1)
            .chain(0..header_len)
        {
            let mut flipped = chunks.clone();
            let mut offset = at;
            for (_, data) in flipped.iter_mut() {
                if offset < data.len() {
                    let mut bytes = data.to_vec();
                    bytes[offset] ^= 0x5a;
                    *data = Bytes::from(bytes);
                    break;
                }
                offset -= data.len();
            }
            let mut s = Slot::new();
            let replies = load(&mut s, family, "x", &flipped);
            // A flip in the header's payload length makes a header that waits for more
            // bytes than will come: the key stays "being restored", and says so.
            let waiting = matches!(s.value, Some(Value::Loading(_)));
            assert!(
                replies.iter().any(Reply::is_error) || waiting,
                "{family} flip at {at}"
            );
            assert!(
                s.value.is_none() || waiting || s.value == src.value,
                "{family} flip at {at}"
            );
        }
        // Chunks out of order, truncated, or past the end.
        let mut s = Slot::new();
        load(&mut s, family, "x", &chunks[..1]);
        let (iter, data) = &chunks[1];
        let cut = data.slice(..data.len() / 2);
        let bad_data = if family == "BF" {
            "ERR received bad data"
        } else {
            "Couldn't load chunk!"
        };
        let no_link = if family == "BF" {
            "ERR invalid offset - no link found"
        } else {
            "Couldn't load chunk!"
        };
        let too_big = if family == "BF" {
            "ERR invalid chunk - Too big for current filter"
        } else {
            "Couldn't load chunk!"
        };
        // A chunk after a missing one: RedisBloom's text for an offset with no place.
        let out_of_order = no_link;
        let total_len = total.len() as i64;
        let cases: Vec<((i64, Bytes), &str)> = vec![
            (
                (0, data.clone()),
                if family == "BF" {
                    bad_data
                } else {
                    "Invalid position"
                },
            ),
            ((-3, data.clone()), bad_data),
            ((5, data.clone()), bad_data),
            ((*iter, cut.clone()), out_of_order),
            (
                (
                    *iter - data.len() as i64 + 10 + cut.len() as i64,
                    cut.clone(),
                ),
                out_of_order,
            ),
            ((*iter + 10, data.clone()), too_big),
            ((total_len * 4, Bytes::from_static(b"x")), no_link),
            ((i64::MAX, Bytes::from_static(b"x")), no_link),
            (
                (
                    total_len - header_len as i64 + 2,
                    Bytes::from(vec![0u8; 20]),
                ),
                too_big,
            ),
        ];
        for ((iter, data), expected) in cases {
            let r = load(&mut s, family, "x", &[(iter, data)]);
            assert_eq!(r, [err(expected)], "{family} iter {iter}");
        }
        assert!(s.log.len() == 1, "only the header changed the key");
        // The body still loads after all that.
        let r = load(&mut s, family, "x", &chunks[1..]);
        assert!(r.iter().all(|r| *r == Reply::Ok), "{r:?}");
        assert_eq!(s.value, src.value);
        let _ = body;

        // A header claiming a huge filter: refused by the budget before anything is held,
        // and under no limit it holds only what arrives.
        let mut huge = header.to_vec();
        let at = header_len - 8;
        huge[at..].copy_from_slice(&(1u64 << 40).to_le_bytes());
        let huge = Bytes::from(huge);
        let mut s = Slot::new();
        let limited = TestBudget::new(1 << 20, None);
        let cmd = args(&[format!("{family}.LOADCHUNK").as_bytes(), b"x", b"1", &huge]);
        assert_eq!(
            s.run_with(cmd.clone(), &limited),
            err("OOM command not allowed when used memory > 'maxmemory'.")
        );
        assert_eq!(
            s.run_with(cmd.clone(), &TestBudget::new(usize::MAX, Some(1 << 30))),
            err("ERR Insufficient memory to create filter")
        );
        assert_eq!(s.run_with(cmd, &Unlimited), Reply::Ok);
        assert!(s.value.as_ref().unwrap().memory_bytes() < 4096);
        let r = load(
            &mut s,
            family,
            "x",
            &[(1 + 1000, Bytes::from(vec![7u8; 1000]))],
        );
        assert_eq!(r, [Reply::Ok]);
        assert!(s.value.as_ref().unwrap().memory_bytes() < 8192);
    }
}

#[test]
fn write_commands_through_read_change_nothing() {
    let mut s = Slot::new();
    s.run("BF.ADD k a");
    let before = s.value.clone();
    let add = words("BF.ADD k b");
    let add = views(&add);
    let cmd = FilterCommand::parse(&add).unwrap().unwrap();
    let ctx = Ctx {
        defaults: &s.defaults,
        budget: &Unlimited,
        now_ms: &|| 0,
    };
    assert_eq!(cmd.read(s.value.as_ref(), &ctx), Reply::Bool(true));
    assert_eq!(s.value, before);
    assert_eq!(cmd.key(), b"k");
    // And read commands through write log nothing.
    let exists = words("BF.EXISTS k a");
    let exists = views(&exists);
    let cmd = FilterCommand::parse(&exists).unwrap().unwrap();
    let out = cmd.write(&mut s.value, &ctx);
    assert_eq!((out.reply, out.log.len()), (Reply::Bool(true), 0));
}

/// `BF.ADD expansion x` logged `BF.RESERVE expansion 0.01 100 EXPANSION 2`, which
/// RedisBloom's option search (from the command name on) reads with the key as the
/// `EXPANSION` keyword: the replay failed and start-up stopped. `CF.ADD maxiterations x`
/// replayed into a filter with 1024 kicks. Logged commands search options after the key.
#[test]
fn keys_named_like_options_replay_to_the_same_filter() {
    let bf_keys = ["expansion", "NONSCALING", "Expansion"];
    let cf_keys = ["bucketsize", "maxiterations", "EXPANSION", "MaxIterations"];
    for key in bf_keys {
        for line in [
            format!("BF.ADD {key} a"),
            format!("BF.INSERT {key} ITEMS a b"),
        ] {
            let mut s = Slot::new();
            assert!(!s.run(&line).is_error(), "{line}");
            for i in 0..300 {
                s.run(&format!("BF.ADD {key} {i}"));
            }
            assert_eq!(replay(&s.log, odd_defaults()), s.value, "{line}");
        }
    }
    for key in cf_keys {
        for line in [
            format!("CF.ADD {key} a"),
            format!("CF.INSERT {key} ITEMS a b"),
        ] {
            let mut s = Slot::new();
            assert!(!s.run(&line).is_error(), "{line}");
            for i in 0..3000 {
                s.run(&format!("CF.ADD {key} {i}"));
            }
            let back = replay(&s.log, odd_defaults());
            assert_eq!(back, s.value, "{line}");
            assert_eq!(
                back.map(|v| v.to_bytes()),
                s.value.as_ref().map(Value::to_bytes)
            );
        }
    }
    // A client still gets RedisBloom's reading: the key is taken for the keyword.
    let mut s = Slot::new();
    assert_eq!(
        s.run("BF.RESERVE expansion 0.01 100"),
        err("ERR bad expansion")
    );
    assert_eq!(s.run("BF.RESERVE nonscaling 0.01 100"), Reply::Ok);
    let logged = s.log.clone();
    assert_eq!(replay(&logged, odd_defaults()), s.value);
}

/// A restore whose last chunk fails its checksum removes the key and answers an error. It
/// was logged verbatim, so its replay answered the same error, which stops start-up.
#[test]
fn a_corrupt_last_chunk_logs_the_removal_of_its_key() {
    for family in ["BF", "CF"] {
        let mut src = Slot::new();
        for i in 0..500 {
            src.run(&format!("{family}.ADD k {i}"));
        }
        let mut chunks = dump(&mut src, family, "k");
        let (_, last) = chunks.last_mut().expect("chunks");
        let mut bytes = last.to_vec();
        *bytes.last_mut().expect("a byte") ^= 0xff;
        *last = Bytes::from(bytes);
        let mut dst = Slot::new();
        let replies = load(&mut dst, family, "x", &chunks);
        assert!(replies.last().is_some_and(Reply::is_error), "{replies:?}");
        assert!(dst.value.is_none());
        assert_eq!(dst.log.last(), Some(&words("DEL x")), "{family}");
        assert_eq!(replay(&dst.log, odd_defaults()), None, "{family}");
    }
}

/// `BF.SCANDUMP key -9223372036854775808` computed `iter - 1`: an overflow (a panic in a
/// debug build). Every negative iterator answers the end, as in RedisBloom.
#[test]
fn bf_scandump_at_the_lowest_iterator_answers_the_end() {
    let mut s = Slot::new();
    s.run("BF.ADD k a");
    for iter in [i64::MIN, -1] {
        assert_eq!(
            s.run(&format!("BF.SCANDUMP k {iter}")),
            Reply::Array(vec![Reply::Integer(0), Reply::bulk(Bytes::new())])
        );
    }
}

/// A host that refuses replies larger than `max_reply` (the server, past `maxmemory`).
struct ReplyBudget {
    max_reply: usize,
}

impl Budget for ReplyBudget {
    fn within_maxmemory(&self, _extra_bytes: usize) -> bool {
        true
    }
    fn machine_available(&self) -> Option<usize> {
        None
    }
    fn admits_reply(&self, bytes: usize) -> bool {
        bytes <= self.max_reply
    }
}

#[test]
fn a_scandump_chunk_the_host_does_not_admit_is_oom_before_it_is_copied() {
    for family in ["BF", "CF"] {
        let mut slot = Slot::new();
        let reserve = if family == "BF" {
            "BF.RESERVE k 0.01 100000"
        } else {
            "CF.RESERVE k 100000"
        };
        assert_eq!(slot.run(reserve), Reply::Ok);
        slot.run(&format!("{family}.ADD k x"));
        let tight = ReplyBudget { max_reply: 1000 };
        let dump = |slot: &mut Slot, iter: &str, budget: &dyn Budget| {
            slot.run_with(words(&format!("{family}.SCANDUMP k {iter}")), budget)
        };
        // The header is small and always answered; the first chunk is 100 KB or more.
        assert!(matches!(dump(&mut slot, "0", &tight), Reply::Array(_)));
        assert_eq!(
            dump(&mut slot, "1", &tight),
            err("OOM command not allowed when used memory > 'maxmemory'.")
        );
        assert!(matches!(dump(&mut slot, "1", &Unlimited), Reply::Array(_)));
    }
}

/// `BF.DEBUG`: RedisBloom's lines with this filter's figures, for the chains RedisBloom 2.8
/// answered (`BF.RESERVE b 0.01 1000000`; `BF.RESERVE b 0.001 10 EXPANSION 3` and 100
/// items, where the items per layer depend on which adds were false positives); `BF.INFO`'s
/// Size is RedisBloom's figure for both (1,378,568 and 536).
#[test]
fn bf_debug_and_info_size_answer_as_redisbloom() {
    let mut s = Slot::new();
    assert_eq!(s.run("BF.DEBUG b"), err("ERR not found"));
    assert_eq!(s.run("BF.RESERVE b 0.01 1000000"), Reply::Ok);
    assert_eq!(
        s.run("BF.DEBUG b"),
        Reply::Array(vec![
            Reply::bulk("size:0"),
            Reply::bulk(
                "bytes:1378472 bits:11027776 hashes:8 hashwidth:64 capacity:1000000 size:0 \
                 ratio:0.005"
            ),
        ])
    );
    assert_eq!(s.run("BF.INFO b SIZE"), info_field("Size", 1_378_568));

    let mut s = Slot::new();
    s.run("BF.RESERVE b 0.001 10 EXPANSION 3");
    for i in 0..100 {
        s.run(&format!("BF.ADD b {i}"));
    }
    let Reply::Array(lines) = s.run("BF.DEBUG b") else {
        panic!()
    };
    let text: Vec<String> = lines
        .iter()
        .map(|l| match l {
            Reply::Bulk(b) => String::from_utf8(b.to_vec()).unwrap(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(text.len(), 4, "{text:?}");
    let Reply::Integer(items) = s.run("BF.CARD b") else {
        panic!()
    };
    assert_eq!(text[0], format!("size:{items}"));
    let layers = [
        (
            "bytes:24 bits:192 hashes:11 hashwidth:64 capacity:10 size:",
            "ratio:0.0005",
        ),
        (
            "bytes:72 bits:576 hashes:12 hashwidth:64 capacity:30 size:",
            "ratio:0.00025",
        ),
        (
            "bytes:216 bits:1728 hashes:13 hashwidth:64 capacity:90 size:",
            "ratio:0.000125",
        ),
    ];
    for (line, (start, end)) in text[1..].iter().zip(layers) {
        assert!(line.starts_with(start) && line.ends_with(end), "{line}");
    }
    assert_eq!(s.run("BF.INFO b SIZE"), info_field("Size", 536));
    // A filter of blocked layers (restored from an older log) reports the Size RedisBloom
    // would for the same capacities and rates.
    let blocked = replay(
        &[words("BF.RESERVE b 0.01 100 EXPANSION 2 LAYOUT BLOCKED")],
        Defaults::default(),
    );
    let mut t = Slot::new();
    t.value = blocked;
    assert_eq!(t.run("BF.INFO b SIZE"), info_field("Size", 240));
    // Errors: another type, a restore in progress, the arity.
    let mut c = Slot::new();
    c.run("CF.ADD b x");
    assert_eq!(
        c.run("BF.DEBUG b"),
        err("WRONGTYPE Operation against a key holding the wrong kind of value")
    );
    assert_eq!(
        s.run("BF.DEBUG"),
        err("ERR wrong number of arguments for 'bf.debug' command")
    );
    assert_eq!(
        s.run("BF.DEBUG b c"),
        err("ERR wrong number of arguments for 'bf.debug' command")
    );
}

/// `CF.DEBUG` and `CF.COMPACT`: RedisBloom's replies and errors; a compaction frees the
/// sub-filters deletes emptied, restarts the deletion count, and is logged so that the
/// replay holds the same filter.
#[test]
fn cf_debug_and_compact_answer_as_redisbloom_and_replay() {
    let mut s = Slot::new();
    assert_eq!(s.run("CF.COMPACT c"), err("Cuckoo filter was not found"));
    assert_eq!(s.run("CF.DEBUG c"), err("ERR not found"));
    assert_eq!(s.run("CF.ADD c a"), Reply::Bool(true));
    assert_eq!(
        s.run("CF.DEBUG c"),
        Reply::bulk(
            "bktsize:2 buckets:512 items:1 deletes:0 filters:1 max_iterations:20 expansion:1"
        )
    );
    s.run("CF.RESERVE g 2 BUCKETSIZE 1");
    let mut g = Slot::new();
    g.run("CF.RESERVE g 2 BUCKETSIZE 1");
    let mut insert = words("CF.INSERT g ITEMS");
    insert.extend((0..100).map(|_| Bytes::from_static(b"x")));
    g.run_with(insert, &Unlimited);
    let debug = |g: &mut Slot| match g.run("CF.DEBUG g") {
        Reply::Bulk(b) => String::from_utf8(b.to_vec()).unwrap(),
        other => panic!("{other:?}"),
    };
    assert_eq!(
        debug(&mut g),
        "bktsize:1 buckets:2 items:100 deletes:0 filters:50 max_iterations:20 expansion:1"
    );
    // Deleting 9 of 100 stays under RedisBloom's 10% that compacts by itself.
    for _ in 0..9 {
        assert_eq!(g.run("CF.DEL g x"), Reply::Bool(true));
    }
    // Deletes take the newest copies: the newest sub-filters are empty but still there.
    assert_eq!(
        debug(&mut g),
        "bktsize:1 buckets:2 items:91 deletes:9 filters:50 max_iterations:20 expansion:1"
    );
    assert_eq!(g.run("CF.COMPACT g"), Reply::Ok);
    assert_eq!(
        debug(&mut g),
        "bktsize:1 buckets:2 items:91 deletes:0 filters:46 max_iterations:20 expansion:1"
    );
    assert_eq!(g.log.last(), Some(&words("CF.COMPACT g")));
    assert_eq!(replay(&g.log, odd_defaults()), g.value);
    // Of another type: the same text as a missing key.
    let mut b = Slot::new();
    b.run("BF.ADD c a");
    assert_eq!(b.run("CF.COMPACT c"), err("Cuckoo filter was not found"));
    assert_eq!(
        b.run("CF.DEBUG c"),
        err("WRONGTYPE Operation against a key holding the wrong kind of value")
    );
    assert!(b.log.len() == 2, "nothing logged for the refusals");
    assert_eq!(
        s.run("CF.COMPACT"),
        err("ERR wrong number of arguments for 'cf.compact' command")
    );
}

/// A logged `CF.RESERVE` without `DISTINCT` (written before the distinct placement)
/// replays into the original placement, with the sub-filters its later inserts were
/// logged against; this build's creations end in `DISTINCT`, an argument count that a
/// parser without it (a client's here, every one in a build from before) refuses.
#[test]
fn cf_log_replays_each_filter_into_the_placement_it_was_written_with() {
    let placement = |v: &Option<Value>| match v {
        Some(Value::Cuckoo(f)) => f.placement(),
        other => panic!("{other:?}"),
    };
    let old = replay(
        &[words(
            "CF.RESERVE k 2 BUCKETSIZE 1 MAXITERATIONS 20 EXPANSION 1",
        )],
        Defaults::default(),
    );
    assert_eq!(placement(&old), bloomkit::CuckooPlacement::Original);
    let mut s = Slot::new();
    s.run("CF.RESERVE k 2 BUCKETSIZE 1");
    assert_eq!(placement(&s.value), bloomkit::CuckooPlacement::Distinct);
    assert_eq!(
        s.log,
        [words(
            "CF.RESERVE k 2 BUCKETSIZE 1 MAXITERATIONS 20 EXPANSION 1 DISTINCT"
        )]
    );
    assert_eq!(
        placement(&replay(&s.log, odd_defaults())),
        bloomkit::CuckooPlacement::Distinct
    );
    let arity = Some(Err(err(
        "ERR wrong number of arguments for 'cf.reserve' command",
    )));
    assert_eq!(FilterCommand::parse(&views(&s.log[0])), arity);
    assert_eq!(
        FilterCommand::parse(&views(&words("CF.RESERVE k 2 BUCKETSIZE 1 DISTINCT"))),
        arity
    );
    // Only a last word makes it distinct; elsewhere it is an unknown word, as a client's.
    let inner = replay(
        &[words("CF.RESERVE k 2 DISTINCT 1 BUCKETSIZE 1")],
        Defaults::default(),
    );
    assert_eq!(placement(&inner), bloomkit::CuckooPlacement::Original);
}

/// A chunk whose bytes differ from those already loaded belongs to another dump: RedisBloom's
/// "received bad data"; a chunk after a missing one: "invalid offset - no link found".
#[test]
fn chunks_of_another_dump_answer_redisbloom_texts() {
    let mut src = Slot::new();
    for i in 0..500 {
        src.run(&format!("BF.ADD a {i}"));
    }
    let chunks = dump(&mut src, "BF", "a");
    assert!(chunks.len() >= 2);
    let mut s = Slot::new();
    load(&mut s, "BF", "x", &chunks[..2]);
    // The same chunk again changes nothing; altered, it is refused.
    assert_eq!(load(&mut s, "BF", "x", &chunks[1..2]), [Reply::Ok]);
    let (iter, data) = &chunks[1];
    let mut other = data.to_vec();
    other[0] ^= 1;
    assert_eq!(
        load(&mut s, "BF", "x", &[(*iter, Bytes::from(other))]),
        [err("ERR received bad data")]
    );
}

/// The batched commands go through the filters' batched calls; they must answer item for
/// item as the one-key commands do: `BF.MADD`/`BF.INSERT` as `BF.ADD` (up to and including
/// the item that stops them), `CF.INSERT`/`CF.INSERTNX` as `CF.ADD`/`CF.ADDNX` (an item
/// that finds no room answers -1 and the batch goes on), `BF.MEXISTS`/`CF.MEXISTS` as
/// `BF.EXISTS`/`CF.EXISTS`; and leave the same filter.
#[test]
fn batches_answer_item_for_item_as_one_key_commands() {
    // Repeats, so some items are already there when they come again.
    let items: Vec<String> = (0..400).map(|i| format!("item-{}", i % 300)).collect();
    let asked: Vec<String> = (0..600).map(|i| format!("item-{i}")).collect();
    let line = |command: &str, items: &[String]| format!("{command} k {}", items.join(" "));
    let full_item = Reply::PerProtocol {
        resp2: Box::new(Reply::Integer(-1)),
        resp3: Box::new(Reply::Bool(false)),
    };
    let none = TestBudget::new(0, None);

    // Each case, and whether an item of the batch fails in it.
    let bf_cases: [(&str, &dyn Budget, bool); 3] = [
        // Grows the chain several layers within the batch.
        ("BF.RESERVE k 0.01 10", &Unlimited, false),
        // Full after 50: the batch ends at the first new item after that.
        ("BF.RESERVE k 0.01 50 NONSCALING", &Unlimited, true),
        // Growth refused by the memory limit.
        ("BF.RESERVE k 0.01 20", &none, true),
    ];
    for (reserve, budget, fails) in bf_cases {
        for batch in ["BF.MADD k", "BF.INSERT k ITEMS"] {
            let (mut one, mut many) = (Slot::new(), Slot::new());
            one.run(reserve);
            many.run(reserve);
            let want: Vec<Reply> = items
                .iter()
                .map(|i| one.run_with(words(&format!("BF.ADD k {i}")), budget))
                .collect();
            let stop = want
                .iter()
                .position(Reply::is_error)
                .map_or(want.len(), |i| i + 1);
            assert_eq!(stop < want.len(), fails, "{reserve}");
            let got = many.run_with(words(&format!("{batch} {}", items.join(" "))), budget);
            assert_eq!(
                got,
                Reply::Array(want[..stop].to_vec()),
                "{reserve}: {batch}"
            );
            assert_eq!(many.value, one.value, "{reserve}: {batch}");
            assert_eq!(replay(&many.log, Defaults::default()), many.value);

            let want: Vec<Reply> = asked
                .iter()
                .map(|i| one.run(&format!("BF.EXISTS k {i}")))
                .collect();
            assert_eq!(many.run(&line("BF.MEXISTS", &asked)), Reply::Array(want));
        }
    }
    // The cases must reach what they are for: growth, a full filter, a refusal.
    let mut s = Slot::new();
    s.run("BF.RESERVE k 0.01 10");
    s.run(&line("BF.MADD", &items));
    let Some(Value::Bloom(f)) = &s.value else {
        panic!()
    };
    assert!(f.num_layers() >= 4, "{}", f.num_layers());

    let cf_cases: [(&str, &dyn Budget, bool); 3] = [
        // Grows by sub-filters within the batch.
        ("CF.RESERVE k 16", &Unlimited, false),
        // Fixed size: items past its room answer -1 (CF.ADD: an error).
        ("CF.RESERVE k 64 BUCKETSIZE 2 EXPANSION 0", &Unlimited, true),
        // Growth refused by the memory limit.
        ("CF.RESERVE k 32", &none, true),
    ];
    for (reserve, budget, fails) in cf_cases {
        for (batch, single, integers) in [
            ("CF.INSERT k ITEMS", "CF.ADD", false),
            ("CF.INSERTNX k ITEMS", "CF.ADDNX", true),
        ] {
            let (mut one, mut many) = (Slot::new(), Slot::new());
            one.run(reserve);
            many.run(reserve);
            let want: Vec<Reply> = items
                .iter()
                .map(
                    |i| match one.run_with(words(&format!("{single} k {i}")), budget) {
                        reply if reply.is_error() && integers => Reply::Integer(-1),
                        reply if reply.is_error() => full_item.clone(),
                        Reply::Bool(b) if integers => Reply::Integer(b as i64),
                        reply => reply,
                    },
                )
                .collect();
            let failed = want
                .iter()
                .any(|r| *r == full_item || *r == Reply::Integer(-1));
            assert_eq!(failed, fails, "{reserve}");
            let got = many.run_with(words(&format!("{batch} {}", items.join(" "))), budget);
            assert_eq!(got, Reply::Array(want), "{reserve}: {batch}");
            assert_eq!(many.value, one.value, "{reserve}: {batch}");
            assert_eq!(replay(&many.log, Defaults::default()), many.value);
            let Some(Value::Cuckoo(f)) = &many.value else {
                panic!()
            };
            assert_eq!(f.num_filters() > 1, !fails, "{reserve}");

            let want: Vec<Reply> = asked
                .iter()
                .map(|i| one.run(&format!("CF.EXISTS k {i}")))
                .collect();
            assert_eq!(many.run(&line("CF.MEXISTS", &asked)), Reply::Array(want));
        }
    }
}

/// RedisBloom 2.8 takes 300,000 items into `BF.RESERVE cap 0.01 1000 EXPANSION 1` (297
/// layers): so do we, each layer past the probe limit's rate kept at the floor, every item
/// found. A rate below what a layer can be planned for is refused with the smallest accepted.
#[test]
fn bf_expansion_1_keeps_growing_and_a_tiny_rate_names_the_smallest() {
    let mut s = Slot::new();
    assert_eq!(s.run("BF.RESERVE cap 0.01 1000 EXPANSION 1"), Reply::Ok);
    for batch in 0..300u32 {
        let items: Vec<String> = (batch * 1000..(batch + 1) * 1000)
            .map(|i| i.to_string())
            .collect();
        let reply = s.run(&format!("BF.MADD cap {}", items.join(" ")));
        assert!(
            !format!("{reply:?}").contains("Error"),
            "batch {batch}: {reply:?}"
        );
    }
    let Some(Value::Bloom(f)) = &s.value else {
        panic!("a Bloom key")
    };
    assert!(f.num_layers() >= 290, "{}", f.num_layers());
    assert!((0..300_000u32).all(|i| f.contains(i.to_string().as_str())));
    let rates: f64 = f.layers().map(|l| l.fp_rate).sum();
    assert!(rates <= 0.01, "{rates}");

    let mut s = Slot::new();
    let reply = s.run("BF.RESERVE k 1e-20 100");
    assert_eq!(
        reply,
        err(
            "ERR error rate 1e-20 is below the smallest this server accepts, \
             1.0842021724855044e-19: every probe comes from one 64-bit hash, so no layer can \
             be planned below 2^-64, and a scaling filter's first layer gets half the rate"
        )
    );
    assert_eq!(s.run("BF.RESERVE k 1.1e-19 100"), Reply::Ok);
    let mut s = Slot::new();
    assert_eq!(s.run("BF.RESERVE k 6e-20 100 NONSCALING"), Reply::Ok);
}

/// `MAXEXPANSIONS` takes what `cf-max-expansions` takes: up to 65,535 sub-filters, a cuckoo
/// filter's most. A logged `MAXEXPANSIONS 65536`, which builds before that check accepted
/// and logged, still replays.
#[test]
fn maxexpansions_agrees_with_cf_max_expansions() {
    let most = bloomkit_commands::PARAMETERS
        .iter()
        .find(|p| p.name == "cf-max-expansions")
        .unwrap()
        .max
        .to_string();
    assert_eq!(most, "65535");
    let mut s = Slot::new();
    assert_eq!(
        s.run(&format!("CF.INSERT k MAXEXPANSIONS {most} ITEMS a")),
        Reply::Array(vec![Reply::Bool(true)])
    );
    assert_eq!(
        s.run("CF.INSERT k MAXEXPANSIONS 65536 ITEMS a"),
        err("ERR MAXEXPANSIONS must be an integer from 1 to 65535")
    );
    assert_eq!(
        s.run("CF.INSERT k MAXEXPANSIONS 0 ITEMS a"),
        err("ERR MAXEXPANSIONS must be an integer from 1 to 65535")
    );
    let logged = words("CF.INSERT k MAXEXPANSIONS 65536 ITEMS b c");
    let logged = views(&logged);
    assert!(bloomkit_commands::FilterCommand::parse_logged(&logged)
        .unwrap()
        .is_ok());
}
