//! The command table against the parsers: every name in the table parses and reaches its
//! own command's parser, with the table's arity and read/write flags; every command the
//! parsers implement has a row, and nothing else parses.
//!
//! The parsers are private functions reachable only through a row, so one without a row
//! would not compile under CI's `-D warnings` (dead code). What is left to check at run time
//! is that each row points at the right one: each command below runs on a key already holding
//! its family's filter, and answers what that command (and no other) answers there.

use bloomkit_commands::errors::wrong_arity;
use bloomkit_commands::table::{lookup, Flag, FILTER_COMMANDS};
use bloomkit_commands::{Access, Ctx, Defaults, FilterCommand, Outcome, Reply, Unlimited, Value};
use bytes::Bytes;

/// The arguments as the command layer borrows them.
fn views(args: &[Bytes]) -> Vec<&[u8]> {
    args.iter().map(|a| &a[..]).collect()
}

fn words(line: &str) -> Vec<Bytes> {
    line.split(' ')
        .map(|w| Bytes::copy_from_slice(w.as_bytes()))
        .collect()
}

fn bools(answers: &[bool]) -> Reply {
    Reply::Array(answers.iter().map(|&b| Reply::Bool(b)).collect())
}

/// Runs `line` on `slot` as a host would.
fn run(slot: &mut Option<Value>, line: &str) -> Reply {
    let defaults = Defaults::default();
    let ctx = Ctx {
        defaults: &defaults,
        budget: &Unlimited,
        now_ms: &|| 0,
    };
    match FilterCommand::parse(&views(&words(line))) {
        None => panic!("{line}: not a filter command"),
        Some(Err(reply)) => reply,
        Some(Ok(cmd)) => match cmd.access() {
            Access::Read => cmd.read(slot.as_ref(), &ctx),
            Access::Write => {
                // The one key there is: every source is this key (read from the slot).
                let sources = vec![None; cmd.sources().len()];
                let Outcome { reply, .. } = cmd.write_reading(slot, &sources, &ctx);
                reply
            }
        },
    }
}

/// A key holding its family's filter with the item `a` (capacity 100).
fn holding_a(family: &str) -> Option<Value> {
    let mut slot = None;
    let created = match family {
        "bf" => run(&mut slot, "BF.INSERT k CAPACITY 100 ITEMS a"),
        "af" => run(&mut slot, "AF.ADD k a"),
        _ => run(&mut slot, "CF.INSERT k CAPACITY 100 ITEMS a"),
    };
    assert!(!created.is_error(), "{created:?}");
    slot
}

/// One request per command the parsers implement, and what it answers on a key holding its
/// family's filter with `a`: each answer tells the command from its neighbours (`BF.MADD`
/// from `BF.INSERT`, `CF.ADD` from `CF.ADDNX`, `EXISTS` from `MEXISTS`). `None` where the
/// answer is long (a dump); it must then not be an error.
fn examples() -> Vec<(&'static str, Option<Reply>)> {
    let exists = || Some(Reply::error("ERR item exists"));
    vec![
        ("BF.RESERVE k 0.01 100", exists()),
        ("BF.ADD k a", Some(Reply::Bool(false))),
        ("BF.MADD k a b", Some(bools(&[false, true]))),
        // BF.MADD would add the words NOCREATE and ITEMS as items.
        ("BF.INSERT k NOCREATE ITEMS a", Some(bools(&[false]))),
        ("BF.EXISTS k a", Some(Reply::Bool(true))),
        ("BF.MEXISTS k a", Some(bools(&[true]))),
        ("BF.CARD k", Some(Reply::Integer(1))),
        // The key merged into itself: the one merge a single key can run.
        ("BF.MERGE k k", Some(Reply::Ok)),
        (
            "BF.INFO k ITEMS",
            Some(Reply::PerProtocol {
                resp2: Box::new(Reply::Array(vec![Reply::Integer(1)])),
                resp3: Box::new(Reply::Map(vec![(
                    Reply::Simple("Number of items inserted".into()),
                    Reply::Integer(1),
                )])),
            }),
        ),
        ("BF.DEBUG k", None),
        ("BF.SCANDUMP k 0", None),
        // A finished filter takes only repeats of its own bytes, and its first byte after
        // the header is not `x`.
        (
            "BF.LOADCHUNK k 2 x",
            Some(Reply::error("ERR received bad data")),
        ),
        ("CF.RESERVE k 100", exists()),
        // A cuckoo filter holds an item twice; CF.ADDNX refuses.
        ("CF.ADD k a", Some(Reply::Bool(true))),
        ("CF.ADDNX k a", Some(Reply::Bool(false))),
        ("CF.INSERT k NOCREATE ITEMS a", Some(bools(&[true]))),
        (
            "CF.INSERTNX k NOCREATE ITEMS a",
            Some(Reply::Array(vec![Reply::Integer(0)])),
        ),
        ("CF.EXISTS k a", Some(Reply::Bool(true))),
        ("CF.MEXISTS k a", Some(bools(&[true]))),
        ("CF.COUNT k a", Some(Reply::Integer(1))),
        ("CF.DEL k a", Some(Reply::Bool(true))),
        ("CF.INFO k", None),
        (
            "CF.DEBUG k",
            Some(Reply::bulk(
                "bktsize:2 buckets:64 items:1 deletes:0 filters:1 max_iterations:20 expansion:1",
            )),
        ),
        ("CF.COMPACT k", Some(Reply::Ok)),
        ("CF.SCANDUMP k 0", None),
        // CF.LOADCHUNK words every refusal of a chunk alike.
        (
            "CF.LOADCHUNK k 2 x",
            Some(Reply::error("Couldn't load chunk!")),
        ),
        ("AF.RESERVE k 0.01 100", exists()),
        // Seen within the window: 0, where BF.ADD of a new item answers 1.
        ("AF.ADD k a", Some(Reply::Bool(false))),
        ("AF.MADD k a b", Some(bools(&[false, true]))),
        ("AF.EXISTS k a", Some(Reply::Bool(true))),
        ("AF.MEXISTS k a", Some(bools(&[true]))),
        ("AF.ROTATE k", Some(Reply::Ok)),
        ("AF.INFO k", None),
        ("AF.CARD k", Some(Reply::Integer(1))),
        ("AF.SCANDUMP k 0", None),
        // A chunk after the header of a key that is not being restored: not one of its own.
        (
            "AF.LOADCHUNK k 2 x",
            Some(Reply::error("ERR received bad data")),
        ),
    ]
}

#[test]
fn every_row_has_one_example_and_every_example_a_row() {
    let examples = examples();
    for row in FILTER_COMMANDS {
        let named: Vec<_> = examples
            .iter()
            .filter(|(line, _)| {
                line.split(' ')
                    .next()
                    .unwrap()
                    .eq_ignore_ascii_case(row.spec.name)
            })
            .collect();
        assert_eq!(named.len(), 1, "{}: one example", row.spec.name);
    }
    assert_eq!(examples.len(), FILTER_COMMANDS.len());
}

#[test]
fn every_name_in_the_table_reaches_its_own_parser() {
    for (line, expected) in examples() {
        let name = line.split(' ').next().unwrap();
        let row = lookup(name.as_bytes()).unwrap_or_else(|| panic!("{name} has no row"));
        let args = words(line);
        let args = views(&args);
        let cmd = FilterCommand::parse(&args)
            .expect("a filter command")
            .unwrap_or_else(|reply| panic!("{line}: {reply:?}"));
        assert_eq!(
            cmd.access() == Access::Read,
            row.spec.has(Flag::Readonly),
            "{line}: the table's readonly flag is what the parser does"
        );
        assert_eq!(
            cmd.access() == Access::Write,
            row.spec.has(Flag::Write),
            "{line}: the table's write flag is what the parser does"
        );
        let mut slot = holding_a(&name[..2].to_ascii_lowercase());
        let reply = run(&mut slot, line);
        match expected {
            Some(expected) => assert_eq!(reply, expected, "{line}"),
            None => assert!(!reply.is_error(), "{line}: {reply:?}"),
        }
        // The same through the table's row, with the name in any case, and from the log.
        let mut lower = words(line);
        lower[0] = Bytes::from(name.to_ascii_lowercase());
        let lower = views(&lower);
        let through_row = row.parse(&lower);
        assert_eq!(through_row, FilterCommand::parse(&lower).unwrap(), "{line}");
        assert_eq!(through_row.map(|c| c.access()), Ok(cmd.access()), "{line}");
        assert!(
            row.parse_logged(&views(&words(line))).is_ok(),
            "{line} from the log"
        );
    }
}

#[test]
fn the_tables_arity_is_the_parsers() {
    for row in FILTER_COMMANDS {
        let least = row.spec.arity.unsigned_abs() as usize;
        // Numbers fill every position (keys, items, rates, iterators).
        let request = |argc: usize| -> Vec<Bytes> {
            let mut args = vec![Bytes::from(row.spec.name.to_ascii_uppercase())];
            args.extend((1..argc).map(|_| Bytes::from_static(b"1")));
            args
        };
        let arity_error = wrong_arity(row.spec.name);
        for argc in 1..least {
            assert_eq!(
                FilterCommand::parse(&views(&request(argc))),
                Some(Err(arity_error.clone())),
                "{} with {argc} arguments",
                row.spec.name
            );
        }
        let at_least = request(least);
        let at_least = views(&at_least);
        let at_least = FilterCommand::parse(&at_least).expect("a filter command");
        assert_ne!(
            at_least,
            Err(arity_error.clone()),
            "{} with {least}",
            row.spec.name
        );
        if row.spec.arity > 0 {
            assert_eq!(
                FilterCommand::parse(&views(&request(least + 1))),
                Some(Err(arity_error.clone())),
                "{} takes exactly {least}",
                row.spec.name
            );
        } else {
            // More arguments than the least never panic, whatever they are.
            for argc in least..least + 12 {
                let _ = FilterCommand::parse(&views(&request(argc)));
            }
        }
    }
}

#[test]
fn nothing_outside_the_table_parses() {
    for name in [
        "BF.NOSUCH",
        "bf.",
        "BF",
        "CF.ADDX",
        "CF.AD",
        "BF.ADD\0",
        "bf.add ",
        "GET",
        "",
        "BF.ADDBF.ADDBF.ADD",
    ] {
        assert!(lookup(name.as_bytes()).is_none(), "{name:?}");
        let args = vec![
            Bytes::from(name),
            Bytes::from_static(b"k"),
            Bytes::from_static(b"a"),
        ];
        assert!(FilterCommand::parse(&views(&args)).is_none(), "{name:?}");
    }
    assert!(FilterCommand::parse(&[]).is_none());
}

#[test]
fn rows_are_registrable() {
    let mut names: Vec<&str> = FILTER_COMMANDS.iter().map(|row| row.spec.name).collect();
    for row in FILTER_COMMANDS {
        let spec = &row.spec;
        assert!(
            ["bf.", "cf.", "af."]
                .iter()
                .any(|f| spec.name.starts_with(f)),
            "{}",
            spec.name
        );
        assert_eq!(spec.name, spec.name.to_ascii_lowercase());
        // One key, the first argument, or (`BF.MERGE`, which reads sources) every argument
        // from the first: cluster routing and ACL key patterns rely on it.
        let args = words(&format!("{} k k", spec.name));
        let reads_sources = match row.parse(&views(&args)) {
            Ok(command) => !command.sources().is_empty(),
            Err(_) => false,
        };
        let last_key = if reads_sources { -1 } else { 1 };
        assert_eq!(
            (spec.first_key, spec.last_key, spec.step),
            (1, last_key, 1),
            "{}",
            spec.name
        );
        assert!(
            spec.has(Flag::Write) != spec.has(Flag::Readonly),
            "{}",
            spec.name
        );
        assert!(spec.has(Flag::Module), "{}", spec.name);
        let module = spec.module_flags();
        assert!(
            module == "readonly" || module == "write deny-oom" || module == "write",
            "{}: {module}",
            spec.name
        );
        assert_eq!(
            spec.info_arity(),
            -1,
            "{}: reported as RedisBloom's are",
            spec.name
        );
    }
    let count = names.len();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), count, "names are unique");
}

/// A host that pays to learn who sent a command asks only when the command parses
/// differently for a client and for the log, at most once, and gets what the eager parsers
/// give; the commonest commands never ask.
#[test]
fn the_origin_is_asked_only_where_it_changes_the_parse() {
    let never_asked = [
        "BF.ADD",
        "BF.MADD",
        "BF.EXISTS",
        "BF.MEXISTS",
        "CF.ADD",
        "CF.ADDNX",
        "CF.EXISTS",
    ];
    let mut asked_somewhere = false;
    for (line, _) in examples() {
        let args = words(line);
        let args = views(&args);
        let row = lookup(args[0]).expect("a row");
        for logged in [false, true] {
            let asked = std::cell::Cell::new(0);
            let lazily = row.parse_from_either(&args, &|| {
                asked.set(asked.get() + 1);
                logged
            });
            let eagerly = if logged {
                row.parse_logged(&args)
            } else {
                row.parse(&args)
            };
            assert_eq!(lazily, eagerly, "{line} (logged: {logged})");
            assert!(asked.get() <= 1, "{line}: asked {} times", asked.get());
            asked_somewhere |= asked.get() == 1;
            if never_asked.contains(&row.spec.name.to_ascii_uppercase().as_str()) {
                assert_eq!(asked.get(), 0, "{line}");
            }
        }
    }
    // The RESERVEs parse differently from the log: they do ask. (A CF.ADD's replay is told
    // by its budget, and only when it matters: `replayed_cf_adds_ask_only_when_refused`.)
    assert!(asked_somewhere);
}
