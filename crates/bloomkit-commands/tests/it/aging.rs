//! `AF.*` through the command layer: the CDN's admission on second request across
//! rotations, replies and errors, the log replayed under other defaults, and no false
//! negative within the window against a `HashSet` oracle.

use std::collections::HashSet;

use bloomkit_commands::{Access, Ctx, Defaults, FilterCommand, Record, Reply, Unlimited, Value};
use bytes::Bytes;

/// A keyspace of one key, its log, and the defaults commands run with.
struct Host {
    slot: Option<Value>,
    log: Vec<Vec<Bytes>>,
    defaults: Defaults,
    /// The host's clock, in milliseconds since the epoch.
    now_ms: u64,
}

impl Host {
    fn new(defaults: Defaults) -> Host {
        Host {
            slot: None,
            log: Vec::new(),
            defaults,
            now_ms: 1_700_000_000_000,
        }
    }

    fn run_words(&mut self, words: &[&[u8]]) -> Reply {
        let now = self.now_ms;
        let ctx = Ctx {
            defaults: &self.defaults,
            budget: &Unlimited,
            now_ms: &|| now,
        };
        let command = match FilterCommand::parse(words) {
            None => panic!("not a filter command"),
            Some(Err(reply)) => return reply,
            Some(Ok(command)) => command,
        };
        match command.access() {
            Access::Read => command.read(self.slot.as_ref(), &ctx),
            Access::Write => {
                let outcome = command.write(&mut self.slot, &ctx);
                self.log.extend(outcome.log.iter().map(Record::to_vec));
                outcome.reply
            }
        }
    }

    fn run(&mut self, line: &str) -> Reply {
        let words: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
        self.run_words(&words)
    }

    /// A host that replays this one's log under `defaults`.
    fn replayed(&self, defaults: Defaults) -> Host {
        let mut replica = Host::new(defaults);
        // A replay asks no clock: every record carries its time.
        let ctx = Ctx {
            defaults: &replica.defaults,
            budget: &Unlimited,
            now_ms: &|| panic!("a replayed record asked the clock"),
        };
        for record in &self.log {
            let words: Vec<&[u8]> = record.iter().map(|w| &w[..]).collect();
            let command = FilterCommand::parse_logged(&words).unwrap().unwrap();
            let reply = command.write(&mut replica.slot, &ctx).reply;
            assert!(!reply.is_error(), "{record:?}: {reply:?}");
        }
        replica
    }
}

fn field(info: &Reply, name: &str) -> Reply {
    let Reply::Map(fields) = info else {
        panic!("{info:?}")
    };
    fields
        .iter()
        .find(|(n, _)| *n == Reply::Simple(name.into()))
        .unwrap_or_else(|| panic!("{name} in {info:?}"))
        .1
        .clone()
}

#[test]
fn a_cdn_admits_an_object_on_its_second_request_within_the_window() {
    let mut host = Host::new(Defaults::default());
    assert_eq!(
        host.run("AF.RESERVE seen 0.001 10000 GENERATIONS 2"),
        Reply::Ok
    );
    // First request: a first sighting, not admitted.
    assert_eq!(host.run("AF.ADD seen /index.html"), Reply::Bool(true));
    assert_eq!(host.run("AF.ADD seen /once.jpg"), Reply::Bool(true));
    // Second request within the same period: admitted.
    assert_eq!(host.run("AF.ADD seen /index.html"), Reply::Bool(false));
    assert_eq!(host.run("AF.ROTATE seen"), Reply::Ok);
    // One rotation later the window still holds it.
    assert_eq!(host.run("AF.EXISTS seen /once.jpg"), Reply::Bool(true));
    assert_eq!(host.run("AF.ADD seen /index.html"), Reply::Bool(false));
    assert_eq!(host.run("AF.ROTATE seen"), Reply::Ok);
    // Two rotations after its only request, /once.jpg is forgotten: a first sighting
    // again. /index.html, requested again a period ago, is still remembered.
    assert_eq!(host.run("AF.EXISTS seen /once.jpg"), Reply::Bool(false));
    assert_eq!(
        host.run("AF.MADD seen /once.jpg /index.html"),
        Reply::Array(vec![Reply::Bool(true), Reply::Bool(false)])
    );
    assert_eq!(
        host.run("AF.MEXISTS seen /once.jpg /never"),
        Reply::Array(vec![Reply::Bool(true), Reply::Bool(false)])
    );
}

#[test]
fn the_log_replays_the_same_bits_and_schedule_under_other_defaults() {
    let mut host = Host::new(Defaults::default());
    for i in 0..300 {
        host.run(&format!("AF.ADD k item{i}"));
        if i % 100 == 99 {
            host.run("AF.ROTATE k");
        }
    }
    // Created from the defaults: the log names every parameter, and the time.
    let first = String::from_utf8_lossy(&host.log[0].concat()).into_owned();
    assert!(
        first.starts_with("AF.RESERVEk0.01100GENERATIONS2PERIOD0AT"),
        "{first}"
    );
    // ... and the probe derivation: a new key probes by the second, and its record says so.
    assert!(first.ends_with("PROBES2"), "{first}");
    let Some(Value::Aging(k)) = &host.slot else {
        panic!()
    };
    assert_eq!(k.filter().probes(), bloomkit::BlockedProbes::TwoSeeds);
    // A logged creation without `PROBES` was written before the second derivation existed:
    // it replays into the first, which its logged adds were acknowledged from.
    let mut old = Host::new(Defaults::default());
    old.log.push(
        "AF.RESERVE k 0.01 100 GENERATIONS 2 PERIOD 0 AT 5"
            .split(' ')
            .map(|w| Bytes::copy_from_slice(w.as_bytes()))
            .collect(),
    );
    let Some(Value::Aging(k)) = old.replayed(Defaults::default()).slot else {
        panic!()
    };
    assert_eq!(k.filter().probes(), bloomkit::BlockedProbes::OneSeed);
    let odd = Defaults {
        af_error_rate: 0.2,
        af_capacity: 7,
        af_generations: 5,
        af_period: 9,
        ..Defaults::default()
    };
    assert_eq!(host.replayed(odd.clone()).slot, host.slot);
    // A key with a period (one slot per host: the key's name is not looked at).
    let mut timed = Host::new(Defaults::default());
    timed.run("AF.RESERVE timed 0.01 50 GENERATIONS 3 PERIOD 60");
    timed.run("AF.ADD timed x");
    timed.run("AF.ROTATE timed AT 1234");
    let replica = timed.replayed(odd);
    assert_eq!(replica.slot, timed.slot, "the value, schedule included");
    let Some(Value::Aging(k)) = &replica.slot else {
        panic!()
    };
    assert_eq!((k.period_secs(), k.last_rotation_ms()), (60, 1234));
    // Adds that changed nothing are not logged.
    host.run("AF.ADD k fresh");
    let before = host.log.len();
    host.run("AF.ADD k fresh");
    assert_eq!(host.log.len(), before);
}

#[test]
fn no_item_added_within_the_window_is_ever_forgotten() {
    // A HashSet per generation is the oracle: an item added since the last G − 1 rotations
    // must answer 1 to AF.EXISTS and 0 to AF.ADD.
    let mut host = Host::new(Defaults::default());
    host.run("AF.RESERVE k 0.01 500 GENERATIONS 3");
    let mut generations: Vec<HashSet<String>> = vec![HashSet::new()];
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    for step in 0..3000 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let item = format!("i{}", state % 2000);
        let remembered = generations.iter().any(|g| g.contains(&item));
        let reply = host.run(&format!("AF.ADD k {item}"));
        if remembered {
            assert_eq!(reply, Reply::Bool(false), "{item} at step {step}");
        }
        generations[0].insert(item);
        if step % 400 == 399 {
            host.run("AF.ROTATE k");
            generations.insert(0, HashSet::new());
            generations.truncate(3);
        }
    }
    for item in generations.iter().flatten() {
        assert_eq!(
            host.run(&format!("AF.EXISTS k {item}")),
            Reply::Bool(true),
            "{item}"
        );
    }
}

#[test]
fn info_reports_the_parameters_and_the_library_estimates() {
    let mut host = Host::new(Defaults::default());
    host.run("AF.RESERVE k 0.01 1000 GENERATIONS 4 PERIOD 3600");
    for i in 0..800 {
        host.run(&format!("AF.ADD k {i}"));
    }
    host.run("AF.ROTATE k");
    for i in 800..1000 {
        host.run(&format!("AF.ADD k {i}"));
    }
    let info = host.run("AF.INFO k");
    let card = host.run("AF.CARD k");
    let Some(Value::Aging(k)) = &host.slot else {
        panic!()
    };
    let f = k.filter();
    assert_eq!(field(&info, "Capacity"), Reply::Integer(1000));
    assert_eq!(field(&info, "Error rate"), Reply::Double(0.01));
    assert_eq!(field(&info, "Generations"), Reply::Integer(4));
    assert_eq!(field(&info, "Period"), Reply::Integer(3600));
    let Reply::Integer(to_next) = field(&info, "Seconds to next rotation") else {
        panic!()
    };
    assert!((3500..=3600).contains(&to_next), "{to_next}");
    let per_generation: Vec<Reply> = (0..4)
        .map(|age| Reply::Integer(f.generation(age).unwrap().len() as i64))
        .collect();
    assert_eq!(
        field(&info, "Items per generation"),
        Reply::Array(per_generation)
    );
    assert_eq!(
        field(&info, "Number of items inserted"),
        Reply::Integer(f.len() as i64)
    );
    assert_eq!(card, Reply::Integer(f.len() as i64));
    assert_eq!(
        field(&info, "Size"),
        Reply::Integer(k.memory_bytes() as i64)
    );
    assert_eq!(
        field(&info, "Estimated error rate"),
        Reply::Double(f.estimated_fp_rate())
    );
    let Reply::Integer(estimated) = field(&info, "Estimated items") else {
        panic!()
    };
    assert!((950..=1050).contains(&estimated), "{estimated}");
    let Reply::Double(fill) = field(&info, "Fill") else {
        panic!()
    };
    assert!(fill > 0.0 && fill < 0.5, "{fill}");
    assert!(!k.past_capacity());
    // Without a period: -1, as TTL answers for a key without one.
    host.slot = None;
    host.run("AF.ADD k a");
    assert_eq!(
        field(&host.run("AF.INFO k"), "Seconds to next rotation"),
        Reply::Integer(-1)
    );
}

#[test]
fn errors_name_what_was_expected() {
    let mut host = Host::new(Defaults::default());
    let error = |text: &str| Reply::error(text);
    assert_eq!(
        host.run("AF.RESERVE k 2 100"),
        error("ERR (0 < error rate range < 1)")
    );
    assert_eq!(
        host.run("AF.RESERVE k 0.01 0"),
        error("ERR bad capacity: expected items per generation, 1 to 1073741824")
    );
    assert_eq!(
        host.run("AF.RESERVE k 0.01 10 GENERATIONS 1"),
        error("ERR bad GENERATIONS: expected 2 to 64")
    );
    assert_eq!(
        host.run("AF.RESERVE k 0.01 10 PERIOD -1"),
        error("ERR bad PERIOD: expected seconds, 0 (no timer) to 315360000")
    );
    assert_eq!(
        host.run("AF.RESERVE k 0.01 10 PERIOD 1 PERIOD 2"),
        error("ERR syntax error")
    );
    assert_eq!(
        host.run("AF.RESERVE k 0.01 10 GENERATIONS"),
        error("ERR syntax error")
    );
    assert_eq!(host.run("AF.ROTATE k"), error("ERR not found"));
    assert_eq!(host.run("AF.ROTATE k AFTER 1"), error("ERR syntax error"));
    assert_eq!(host.run("AF.INFO k"), error("ERR not found"));
    assert_eq!(host.run("AF.CARD k"), Reply::Integer(0));
    assert_eq!(host.run("AF.EXISTS k a"), Reply::Bool(false));
    assert_eq!(host.run("AF.RESERVE k 0.01 10"), Reply::Ok);
    assert_eq!(host.run("AF.RESERVE k 0.01 10"), error("ERR item exists"));
    // Other types answer WRONGTYPE, and BF.* on an aging key too.
    let wrongtype = error("WRONGTYPE Operation against a key holding the wrong kind of value");
    assert_eq!(host.run("BF.ADD k a"), wrongtype);
    let mut bloom = Host::new(Defaults::default());
    bloom.run("BF.ADD k a");
    for line in [
        "AF.ADD k a",
        "AF.EXISTS k a",
        "AF.ROTATE k",
        "AF.INFO k",
        "AF.RESERVE k 0.1 10",
    ] {
        assert_eq!(bloom.run(line), wrongtype, "{line}");
    }
}

#[test]
fn an_aging_key_round_trips_through_its_encoding() {
    let mut host = Host::new(Defaults::default());
    host.run("AF.RESERVE k 0.01 100 GENERATIONS 3 PERIOD 5 AT 77");
    host.run("AF.MADD k a b c");
    host.run("AF.ROTATE k AT 5077");
    let value = host.slot.clone().unwrap();
    assert_eq!(value.type_name(), "BKaging--");
    let bytes = value.to_bytes();
    assert_eq!(bytes.len(), value.encoded_len());
    assert_eq!(Value::from_bytes(&bytes).unwrap(), value);
    let Value::Aging(k) = &value else { panic!() };
    assert_eq!(k.due_rotation(10_076), None);
    assert_eq!(k.due_rotation(10_077), Some(10_077));
}

/// Every chunk `AF.SCANDUMP` answers for `key`, from iterator 0 until it answers 0.
fn scandump(host: &mut Host, key: &str) -> Vec<(i64, Bytes)> {
    let mut chunks = Vec::new();
    let mut iter = 0;
    loop {
        let reply = host.run(&format!("AF.SCANDUMP {key} {iter}"));
        let Reply::Array(pair) = reply else {
            panic!("{reply:?}")
        };
        let [Reply::Integer(next), Reply::Bulk(data)] = &pair[..] else {
            panic!("{pair:?}")
        };
        if *next == 0 {
            return chunks;
        }
        chunks.push((*next, data.clone()));
        iter = *next;
    }
}

#[test]
fn scandump_and_loadchunk_restore_an_aging_key_exactly() {
    let mut source = Host::new(Defaults::default());
    source.run("AF.RESERVE k 0.01 100 GENERATIONS 3 PERIOD 60 AT 1000");
    source.run("AF.MADD k a b c");
    source.run("AF.ROTATE k AT 61000");
    source.run("AF.ADD k d");
    let chunks = scandump(&mut source, "k");
    assert!(chunks.len() >= 2, "a header, then the rest");

    let mut target = Host::new(Defaults::default());
    for (i, (iter, data)) in chunks.iter().enumerate() {
        let iter = iter.to_string();
        let words: [&[u8]; 4] = [b"AF.LOADCHUNK", b"k", iter.as_bytes(), data];
        assert_eq!(target.run_words(&words), Reply::Ok, "chunk {i}");
        if i + 1 < chunks.len() {
            // Half restored: a key of the type, which answers that it is still arriving,
            // and which a snapshot keeps.
            let value = target.slot.clone().unwrap();
            assert_eq!(value.type_name(), "BKaging--");
            assert_eq!(Value::from_bytes(&value.to_bytes()).unwrap(), value);
            let Reply::Error(e) = target.run("AF.EXISTS k a") else {
                panic!()
            };
            assert!(e.contains("AF.LOADCHUNK"), "{e}");
        }
    }
    assert_eq!(target.slot, source.slot, "parameters, schedule and bits");
    // The restore replays from its log, as an append-only file would.
    assert_eq!(target.replayed(Defaults::default()).slot, source.slot);
    // What an append-only rewrite emits restores it too.
    let mut emitted = Vec::new();
    let value = source.slot.clone().unwrap();
    value.restore_commands(b"k", &mut |command| emitted.push(command));
    assert!(emitted.iter().all(|c| c[0] == "AF.LOADCHUNK"));
    let rewritten = Host {
        log: emitted,
        ..Host::new(Defaults::default())
    };
    assert_eq!(rewritten.replayed(Defaults::default()).slot, source.slot);

    // Refusals: a BF key does not load an aging header, an AF key no Bloom one, and a
    // damaged last chunk is bad data. (A host here holds one key, whatever its name.)
    let header = &chunks[0].1;
    let mut other = Host::new(Defaults::default());
    let Reply::Error(e) = other.run_words(&[b"BF.LOADCHUNK", b"b", b"1", header]) else {
        panic!()
    };
    assert!(e.contains("an aging filter"), "{e}");
    other.run("BF.RESERVE bloom 0.01 100");
    let Reply::Array(bloom_header) = other.run("BF.SCANDUMP bloom 0") else {
        panic!()
    };
    let Reply::Bulk(bloom_header) = &bloom_header[1] else {
        panic!()
    };
    let mut empty = Host::new(Defaults::default());
    let Reply::Error(e) = empty.run_words(&[b"AF.LOADCHUNK", b"a", b"1", bloom_header]) else {
        panic!()
    };
    assert!(e.starts_with("ERR received bad data"), "{e}");
    let mut fresh = Host::new(Defaults::default());
    fresh.run_words(&[b"AF.LOADCHUNK", b"k", b"1", header]);
    let (iter, data) = &chunks[1];
    let mut flipped = data.to_vec();
    let middle = flipped.len() / 2;
    flipped[middle] ^= 1;
    let iter = iter.to_string();
    let reply = fresh.run_words(&[b"AF.LOADCHUNK", b"k", iter.as_bytes(), &flipped]);
    // A small key is its header and one chunk: the damaged chunk is the last, the checksum
    // refuses it and the key is removed.
    assert_eq!(chunks.len(), 2);
    assert_eq!(reply, Reply::Error("ERR received bad data".into()));
    assert_eq!(fresh.slot, None);
    assert_eq!(
        fresh.run("AF.SCANDUMP missing 0"),
        Reply::Error("ERR not found".into())
    );
}

/// The golden fixture: an aging key written by the first build of its encoding (`\x89BKA`
/// version 1), which must keep decoding to the same key and answering as it did. Written
/// when missing and `BLOOMKIT_WRITE_GOLDEN=1` is set; never rewritten once it has landed.
#[test]
fn the_golden_aging_key_decodes_and_answers_as_written() {
    let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let bin_path = data.join("aging-key-v1.bka");
    let answers_path = data.join("aging-key-v1.answers");
    let key = |i: u32| format!("golden:{i}");
    let answers = |host: &mut Host| -> String {
        (0..300)
            .map(|i| match host.run(&format!("AF.EXISTS k {}", key(i))) {
                Reply::Bool(true) => "1\n",
                Reply::Bool(false) => "0\n",
                other => panic!("{other:?}"),
            })
            .collect()
    };
    // The recipe: two generations' worth of items around a rotation, in the first probe
    // derivation, which every key had when the fixture was written.
    let mut built = Host::new(Defaults::default());
    built.run("AF.RESERVE k 0.01 100 GENERATIONS 3 PERIOD 60 AT 1700000000000 PROBES 1");
    for i in 0..100 {
        built.run(&format!("AF.ADD k {}", key(i)));
    }
    built.run("AF.ROTATE k AT 1700000060000");
    for i in 100..200 {
        built.run(&format!("AF.ADD k {}", key(i)));
    }
    let built_bytes = built.slot.clone().unwrap().to_bytes();
    if std::env::var_os("BLOOMKIT_WRITE_GOLDEN").is_some() && !bin_path.exists() {
        std::fs::create_dir_all(&data).unwrap();
        std::fs::write(&bin_path, &built_bytes).unwrap();
        std::fs::write(&answers_path, answers(&mut built)).unwrap();
    }
    let stored = std::fs::read(&bin_path).unwrap_or_else(|e| panic!("{}: {e}", bin_path.display()));
    let stored_answers = std::fs::read_to_string(&answers_path)
        .unwrap_or_else(|e| panic!("{}: {e}", answers_path.display()));
    assert!(stored.starts_with(b"\x89BKA\r\n\x1a\n\x01"));

    let value = Value::from_bytes(&stored).unwrap();
    let Value::Aging(k) = &value else {
        panic!("{}", value.type_name())
    };
    assert_eq!(
        (
            k.error_rate(),
            k.capacity(),
            k.period_secs(),
            k.last_rotation_ms()
        ),
        (0.01, 100, 60, 1_700_000_060_000)
    );
    assert_eq!(k.filter().num_generations(), 3);
    assert_eq!(k.filter().len(), 200);
    let mut loaded = Host::new(Defaults::default());
    loaded.slot = Some(value.clone());
    let loaded_answers = answers(&mut loaded);
    assert_eq!(loaded_answers, stored_answers, "answers changed");
    assert!(
        loaded_answers.lines().take(200).all(|a| a == "1"),
        "a false negative"
    );
    // This build writes the same bytes, for the stored key and for the recipe.
    assert_eq!(value.to_bytes(), stored);
    assert_eq!(
        built_bytes, stored,
        "the recipe no longer builds the fixture"
    );
}
