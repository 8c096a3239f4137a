//! `BF.MERGE` through the command layer, on a keyspace of several keys as a host holds it:
//! every `BF` shape merged (non-scaling, grown to several layers, classic and blocked
//! layouts), against a `HashSet` oracle of what went in; incompatible filters refused with
//! the first difference and nothing changed; the log replayed to the same state.

use std::collections::{HashMap, HashSet};

use bloomkit_commands::{Access, Ctx, Defaults, FilterCommand, Record, Reply, Unlimited, Value};
use bytes::Bytes;

#[derive(Default)]
struct Host {
    keys: HashMap<Bytes, Value>,
    log: Vec<Vec<Bytes>>,
}

impl Host {
    /// Runs `words`, read back from a log when `logged`.
    fn run_words(&mut self, words: &[Bytes], logged: bool) -> Reply {
        let views: Vec<&[u8]> = words.iter().map(|w| &w[..]).collect();
        let parsed = if logged {
            FilterCommand::parse_logged(&views)
        } else {
            FilterCommand::parse(&views)
        };
        let command = match parsed.expect("a filter command") {
            Ok(command) => command,
            Err(reply) => return reply,
        };
        let defaults = Defaults::default();
        let ctx = Ctx {
            defaults: &defaults,
            budget: &Unlimited,
            now_ms: &|| 0,
        };
        if command.access() == Access::Read {
            return command.read(self.keys.get(command.key()), &ctx);
        }
        let mut slot = self.keys.remove(command.key());
        let sources: Vec<Option<&Value>> = command
            .sources()
            .iter()
            .map(|k| self.keys.get(*k))
            .collect();
        let outcome = command.write_reading(&mut slot, &sources, &ctx);
        self.log.extend(outcome.log.iter().map(Record::to_vec));
        if let Some(value) = slot {
            self.keys
                .insert(Bytes::copy_from_slice(command.key()), value);
        }
        outcome.reply
    }

    fn run(&mut self, line: &str) -> Reply {
        let words: Vec<Bytes> = line
            .split(' ')
            .map(|w| Bytes::copy_from_slice(w.as_bytes()))
            .collect();
        self.run_words(&words, false)
    }

    fn add(&mut self, key: &str, items: impl Iterator<Item = u32>) -> HashSet<u32> {
        let mut added = HashSet::new();
        for i in items {
            let reply = self.run(&format!("BF.ADD {key} {i}"));
            assert!(!reply.is_error(), "{reply:?}");
            added.insert(i);
        }
        added
    }

    fn filter(&self, key: &str) -> &bloomkit::ScalableBloomFilter {
        match self.keys.get(key.as_bytes()) {
            Some(Value::Bloom(f)) => f,
            other => panic!("{key}: {other:?}"),
        }
    }
}

fn err(text: &str) -> Reply {
    Reply::error(text)
}

/// Each shape: how to reserve it, and how many items grow it (several layers where it scales).
const SHAPES: &[(&str, u32)] = &[
    ("0.01 1000 NONSCALING", 900),
    ("0.01 100 EXPANSION 2", 700),
    ("0.01 100 EXPANSION 2 LAYOUT BLOCKED", 700),
    ("0.001 50 EXPANSION 4 LAYOUT CLASSIC", 900),
];

#[test]
fn every_shape_merges_into_a_new_key_and_into_an_existing_one() {
    for &(shape, n) in SHAPES {
        let mut h = Host::default();
        assert_eq!(h.run(&format!("BF.RESERVE a {shape}")), Reply::Ok);
        assert_eq!(h.run(&format!("BF.RESERVE b {shape}")), Reply::Ok);
        // Grown alike: the same number of layers, as merging requires.
        let mut oracle = h.add("a", 0..n);
        oracle.extend(h.add("b", 1_000_000..1_000_000 + n));
        assert_eq!(
            h.filter("a").num_layers(),
            h.filter("b").num_layers(),
            "{shape}"
        );
        // Into a missing key: a copy of the first source, then the rest.
        assert_eq!(h.run("BF.MERGE m a b"), Reply::Ok, "{shape}");
        // Into an existing key.
        assert_eq!(h.run("BF.MERGE a b"), Reply::Ok, "{shape}");
        for key in ["m", "a"] {
            let f = h.filter(key);
            // No false negatives.
            assert!(
                oracle.iter().all(|i| f.contains(&i.to_string().as_str())),
                "{shape}"
            );
            // The count is the estimate from the bits, close to what went in.
            let estimate = f.len();
            assert_eq!(estimate, f.estimated_count());
            let expected = oracle.len() as u64;
            assert!(
                estimate.abs_diff(expected) * 10 < expected,
                "{shape}: {estimate} vs {expected}"
            );
            assert_eq!(
                h.run(&format!("BF.CARD {key}")),
                Reply::Integer(estimate as i64)
            );
        }
        assert_eq!(h.filter("m"), h.filter("a"), "{shape}");
        // The log replays to the same keys.
        let mut replay = Host::default();
        for words in h.log.clone() {
            assert!(!replay.run_words(&words, true).is_error(), "{words:?}");
        }
        assert_eq!(replay.keys, h.keys, "{shape}");
    }
}

#[test]
fn incompatible_filters_name_the_first_difference_and_nothing_changes() {
    let mut h = Host::default();
    h.run("BF.RESERVE a 0.01 100");
    h.run("BF.RESERVE cap 0.01 200");
    h.run("BF.RESERVE rate 0.001 100");
    h.run("BF.RESERVE blocked 0.01 100 LAYOUT BLOCKED");
    h.run("BF.RESERVE fixed 0.01 100 NONSCALING");
    h.run("BF.RESERVE grown 0.01 100");
    h.add("a", 0..10);
    h.add("grown", 0..300);
    let cases = [
        ("cap", "initial capacity is 100 in 'a' and 200 in 'cap'"),
        ("rate", "error rate is 0.01 in 'a' and 0.001 in 'rate'"),
        (
            "blocked",
            "layout is Classic in 'a' and Blocked in 'blocked'",
        ),
        ("fixed", "scaling is true in 'a' and false in 'fixed'"),
        ("grown", "number of layers is 1 in 'a' and 2 in 'grown'"),
    ];
    for (other, difference) in cases {
        let before = h.keys.clone();
        let log = h.log.len();
        assert_eq!(
            h.run(&format!("BF.MERGE a {other}")),
            err(&format!("ERR filters are not compatible: {difference}"))
        );
        // The difference is found among sources too, and a new key is not made.
        assert!(h.run(&format!("BF.MERGE new a {other}")).is_error());
        assert_eq!(h.keys, before);
        assert_eq!(h.log.len(), log);
    }
}

#[test]
fn missing_sources_and_other_types_are_refused() {
    let mut h = Host::default();
    h.run("BF.ADD a x");
    h.run("CF.ADD c x");
    let wrongtype = "WRONGTYPE Operation against a key holding the wrong kind of value";
    assert_eq!(
        h.run("BF.MERGE a nosuch"),
        err("ERR not found: no filter at source key 'nosuch'")
    );
    assert_eq!(
        h.run("BF.MERGE d d"),
        err("ERR not found: no filter at source key 'd'")
    );
    assert_eq!(h.run("BF.MERGE a c"), err(wrongtype));
    assert_eq!(h.run("BF.MERGE c a"), err(wrongtype));
    assert_eq!(
        h.run("BF.MERGE a"),
        err("ERR wrong number of arguments for 'bf.merge' command")
    );
    assert!(!h.keys.contains_key(&b"d"[..]));
    // A key merged with itself is unchanged, and the one-source form copies.
    let before = h.filter("a").clone();
    assert_eq!(h.run("BF.MERGE a a"), Reply::Ok);
    assert_eq!(h.filter("a"), &before);
    assert_eq!(h.run("BF.MERGE copy a"), Reply::Ok);
    assert_eq!(h.filter("copy"), &before);
}
