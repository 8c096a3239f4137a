use std::collections::HashSet;
use std::sync::Mutex;

use bloomkit::{CuckooFilter, ScalableBloomFilter};

use std::io;

use bloomkit_commands::{Budget, Defaults, FilterCommand, Reply};

use super::filter::PutBack;
use super::*;

/// A journal that remembers what was appended, to check what each change logs.
#[derive(Default)]
struct Recorder {
    log: Mutex<Vec<Vec<Bytes>>>,
    snapshots: AtomicUsize,
}

impl Recorder {
    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.log.lock().unwrap())
            .into_iter()
            .map(|command| {
                command
                    .iter()
                    .map(|arg| String::from_utf8_lossy(arg).into_owned())
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect()
    }
}

impl Journal for Recorder {
    fn append(&self, commands: &[Vec<Bytes>]) -> Option<Ticket> {
        let mut log = self.log.lock().unwrap();
        log.extend_from_slice(commands);
        Some(Ticket(log.len() as u64))
    }

    fn durable(&self, _ticket: Ticket) -> Durable<'_> {
        Box::pin(std::future::ready(Ok(())))
    }

    fn begin_snapshot(&self) -> io::Result<Box<dyn SnapshotWriter>> {
        self.snapshots.fetch_add(1, Ordering::Relaxed);
        NoJournal.begin_snapshot()
    }

    fn enabled(&self) -> bool {
        true
    }
}

fn bloom() -> Value {
    Value::Bloom(ScalableBloomFilter::new(100, 0.01).unwrap())
}

fn cuckoo() -> Value {
    Value::Cuckoo(CuckooFilter::redisbloom_builder(1024).build().unwrap())
}

fn key(name: &str) -> Bytes {
    Bytes::from(name.to_string())
}

/// A keyspace past loading, logging to a recorder.
fn recorded() -> (Keyspace, Arc<Recorder>) {
    let keyspace = Keyspace::new(0);
    let recorder = Arc::new(Recorder::default());
    keyspace.finish_loading(recorder.clone());
    (keyspace, recorder)
}

#[test]
fn memory_follows_every_change() {
    let (keyspace, _) = recorded();
    let (b, c) = (bloom(), cuckoo());
    let (b_cost, c_cost) = (memory::value_cost(&b), memory::value_cost(&c));
    keyspace.restore(key("b"), None, b);
    let one_key = keyspace.used_memory();
    keyspace.restore(key("c"), None, c);
    // Each key costs its value, its name and its place in a table.
    let table = memory::table_cost(3);
    let name = memory::key_cost(1);
    assert_eq!(one_key, b_cost + name + table);
    assert_eq!(keyspace.used_memory(), keyspace.recount_memory());
    assert!(keyspace.used_memory() >= b_cost + c_cost + 2 * name + table);

    // RENAME onto an existing key frees the destination's value.
    keyspace.rename(&key("b"), &key("c")).unwrap();
    assert_eq!(keyspace.used_memory(), keyspace.recount_memory());
    assert!(keyspace.used_memory() < b_cost + c_cost);
    assert_eq!(keyspace.type_of(b"c"), Some("MBbloom--"));

    // The last key of a shard gone, its table goes too.
    keyspace.delete(&[key("c")]);
    assert_eq!(keyspace.used_memory(), 0);
    assert_eq!(keyspace.recount_memory(), 0);

    keyspace.restore(key("x"), None, bloom());
    keyspace.restore(key("y"), Some(u64::MAX), bloom());
    keyspace.flush();
    assert_eq!(keyspace.used_memory(), 0);
    assert_eq!(keyspace.counts(), (0, 0));
}

#[test]
fn a_table_emptied_by_removals_shrinks() {
    let (keyspace, _) = recorded();
    let keys: Vec<Bytes> = (0..20_000).map(|i| key(&format!("k{i}"))).collect();
    for k in &keys {
        keyspace.restore(k.clone(), None, bloom());
    }
    let tables: usize = keyspace.used_memory() - keyspace.recount_memory_of_values();
    keyspace.delete(&keys[1_000..]);
    assert_eq!(keyspace.used_memory(), keyspace.recount_memory());
    // 1,000 keys of 20,000 left: the tables give back most of their room.
    let left = keyspace.used_memory() - keyspace.recount_memory_of_values();
    assert!(left < tables / 4, "{left} of {tables}");
    keyspace.delete(&keys[..1_000]);
    assert_eq!(keyspace.used_memory(), 0);
}

#[test]
fn maxmemory_budget_counts_values() {
    let (keyspace, _) = recorded();
    assert!(keyspace.within_maxmemory(usize::MAX), "0 means no limit");
    keyspace.restore(key("b"), None, bloom());
    let bytes = keyspace.used_memory();
    keyspace.set_maxmemory(bytes as u64 + 10);
    assert!(keyspace.within_maxmemory(10));
    assert!(!keyspace.within_maxmemory(11));
}

#[test]
fn every_change_is_logged_as_replay_needs_it() {
    let (keyspace, recorder) = recorded();
    keyspace.restore(key("a"), None, bloom());
    keyspace.restore(key("b"), None, cuckoo());

    assert_eq!(keyspace.delete(&[key("a"), key("missing")]).0, 1);
    assert_eq!(recorder.take(), ["DEL a"], "only the keys removed");
    assert_eq!(
        keyspace.delete(&[key("missing")]),
        (0, None),
        "nothing removed, nothing logged"
    );

    let at = now_ms() + 60_000;
    let (set, ticket) = keyspace.expire_at(&key("b"), at as i64, ExpireCondition::default());
    assert!(set && ticket.is_some());
    assert_eq!(recorder.take(), [format!("PEXPIREAT b {at}")]);

    assert!(keyspace.persist(&key("b")).0);
    assert!(!keyspace.persist(&key("b")).0, "already persistent");
    assert_eq!(recorder.take(), ["PERSIST b"]);

    keyspace.rename(&key("b"), &key("c")).unwrap();
    assert_eq!(
        keyspace.rename(&key("b"), &key("c")),
        Err(RenameError::NoSuchKey)
    );
    assert_eq!(
        keyspace.rename(&key("c"), &key("c")),
        Ok(None),
        "same key: nothing to log"
    );
    assert_eq!(recorder.take(), ["RENAME b c"]);

    keyspace.flush();
    assert_eq!(recorder.take(), ["FLUSHALL"]);
    assert_eq!(keyspace.changes_since_snapshot(), 5);
}

#[test]
fn a_past_expiry_deletes_and_logs_del() {
    let (keyspace, recorder) = recorded();
    keyspace.restore(key("k"), None, bloom());
    let (set, _) = keyspace.expire_at(&key("k"), 1, ExpireCondition::default());
    assert!(set);
    assert_eq!(keyspace.ttl(b"k"), Ttl::Missing);
    assert_eq!(recorder.take(), ["DEL k"]);
}

#[test]
fn expired_keys_vanish_lazily_and_are_swept() {
    let (keyspace, recorder) = recorded();
    let past = now_ms() - 1;
    keyspace.restore(key("gone"), Some(past), bloom());
    keyspace.restore(key("also"), Some(past), bloom());
    keyspace.restore(key("kept"), Some(now_ms() + 60_000), bloom());

    // Reads see nothing, but cannot remove under a read lock.
    assert_eq!(keyspace.type_of(b"gone"), None);
    assert_eq!(keyspace.count_existing(&[key("gone"), key("kept")]), 1);
    assert_eq!(keyspace.keys_matching(b"*"), [key("kept")]);
    assert_eq!(
        keyspace.len(),
        3,
        "DBSIZE counts unswept keys, as Redis's does"
    );

    // A write removes the expired key first, and says so in the log.
    let (had_expiry, ticket) = keyspace.persist(&key("gone"));
    assert!(!had_expiry, "an expired key is a missing key");
    assert!(ticket.is_some(), "its removal is logged");
    assert_eq!(recorder.take(), ["DEL gone"]);

    assert_eq!(keyspace.sweep_expired(), 1);
    assert_eq!(recorder.take(), ["DEL also"]);
    assert_eq!(keyspace.len(), 1);
    assert_eq!(keyspace.expired_keys(), 2);
    assert_eq!(keyspace.sweep_expired(), 0);
}

#[test]
fn nothing_expires_or_logs_while_loading() {
    let keyspace = Keyspace::new(0);
    keyspace.restore(key("k"), Some(1), bloom());
    assert_eq!(keyspace.type_of(b"k"), Some("MBbloom--"));
    // A replayed PEXPIREAT in the past sets the time instead of deleting.
    let (set, ticket) = keyspace.expire_at(&key("k"), 5, ExpireCondition::default());
    assert!(set);
    assert_eq!(ticket, None);
    assert_eq!(keyspace.sweep_expired(), 0);
    assert!(keyspace.begin_snapshot().is_err());

    let recorder = Arc::new(Recorder::default());
    keyspace.finish_loading(recorder.clone());
    assert_eq!(keyspace.type_of(b"k"), None);
    assert_eq!(keyspace.sweep_expired(), 1);
    assert_eq!(recorder.take(), ["DEL k"]);
}

#[test]
fn expire_conditions_as_redis_checks_them() {
    let none = ExpireCondition::default();
    let nx = ExpireCondition { nx: true, ..none };
    let xx = ExpireCondition { xx: true, ..none };
    let gt = ExpireCondition { gt: true, ..none };
    let lt = ExpireCondition { lt: true, ..none };
    let xx_lt = ExpireCondition {
        xx: true,
        lt: true,
        ..none
    };
    assert!(none.allows(None, 5) && none.allows(Some(10), 5));
    assert!(nx.allows(None, 5) && !nx.allows(Some(10), 5));
    assert!(!xx.allows(None, 5) && xx.allows(Some(10), 5));
    assert!(!gt.allows(None, 5), "no expiry is infinitely late");
    assert!(gt.allows(Some(10), 11) && !gt.allows(Some(10), 10));
    assert!(lt.allows(None, 5) && lt.allows(Some(10), 9) && !lt.allows(Some(10), 10));
    assert!(!xx_lt.allows(None, 5) && xx_lt.allows(Some(10), 9));
}

#[test]
fn ttl_reports_missing_persistent_and_remaining() {
    let (keyspace, _) = recorded();
    assert_eq!(keyspace.ttl(b"k"), Ttl::Missing);
    keyspace.restore(key("k"), None, bloom());
    assert_eq!(keyspace.ttl(b"k"), Ttl::Persistent);
    keyspace.expire_at(
        &key("k"),
        (now_ms() + 10_000) as i64,
        ExpireCondition::default(),
    );
    let Ttl::Ms(ms) = keyspace.ttl(b"k") else {
        panic!("no ttl")
    };
    assert!((9_000..=10_000).contains(&ms), "{ms}");
}

#[test]
fn scan_returns_every_key_once_whatever_the_count() {
    let (keyspace, _) = recorded();
    let names: HashSet<Bytes> = (0..300).map(|i| key(&format!("key:{i}"))).collect();
    for name in &names {
        keyspace.restore(name.clone(), None, bloom());
    }
    keyspace.restore(key("other"), None, cuckoo());
    for count in [1, 10, 1000] {
        let (mut cursor, mut seen, mut calls) = (0, Vec::new(), 0);
        loop {
            let (next, keys) = keyspace.scan(cursor, count, Some(b"key:*"), None);
            seen.extend(keys);
            calls += 1;
            if next == 0 {
                break;
            }
            cursor = next;
        }
        assert_eq!(seen.len(), 300, "no duplicates");
        assert_eq!(seen.into_iter().collect::<HashSet<_>>(), names);
        assert!(calls <= NUM_SHARDS);
    }
    let (_, cuckoos) = keyspace.scan(0, usize::MAX, None, Some(b"mbbloomcf"));
    assert_eq!(cuckoos, [key("other")]);
    assert_eq!(
        keyspace.scan(NUM_SHARDS as u64 + 5, 10, None, None),
        (0, vec![])
    );
}

#[test]
fn snapshots_share_values_and_keep_expired_keys_as_the_log_left_them() {
    let (keyspace, recorder) = recorded();
    keyspace.restore(key("live"), Some(now_ms() + 60_000), bloom());
    keyspace.restore(key("dead"), Some(1), bloom());
    keyspace.delete(&[key("nothing")]);
    keyspace.expire_at(
        &key("live"),
        (now_ms() + 70_000) as i64,
        ExpireCondition::default(),
    );
    assert_eq!(keyspace.changes_since_snapshot(), 1);

    let (_writer, mut entries) = keyspace.begin_snapshot().unwrap();
    assert_eq!(recorder.snapshots.load(Ordering::Relaxed), 1);
    assert_eq!(keyspace.changes_since_snapshot(), 0);
    entries.sort_by(|a, b| a.key.cmp(&b.key));
    // Expired keys are kept, so the snapshot does not depend on the clock (a wall clock
    // stepping back could revive a key the snapshot lacked, and a logged command on it
    // would then fail to replay).
    assert_eq!(entries.len(), 2);
    assert_eq!(entries[0].key, key("dead"));
    assert_eq!(entries[0].expires_at_ms, Some(1));
    assert_eq!(entries[1].key, key("live"));
    assert!(entries[1].expires_at_ms.is_some());
    // The snapshot holds the keyspace's own value, not a copy.
    assert_eq!(Arc::strong_count(&entries[1].value), 2);
}

#[test]
fn multi_key_commands_never_deadlock() {
    let (keyspace, _) = recorded();
    let keyspace = Arc::new(keyspace);
    let names: Vec<Bytes> = (0..8).map(|i| key(&format!("k{i}"))).collect();
    for name in &names {
        keyspace.restore(name.clone(), None, bloom());
    }
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let keyspace = Arc::clone(&keyspace);
            let names = names.clone();
            std::thread::spawn(move || {
                for i in 0..2_000 {
                    let a = &names[(i + t) % names.len()];
                    let b = &names[(i * 7 + 3 * t + 1) % names.len()];
                    let _ = keyspace.rename(a, b);
                    let _ = keyspace.rename(b, a);
                    keyspace.delete(&[b.clone(), a.clone()]);
                    keyspace.restore(a.clone(), None, bloom());
                    keyspace.count_existing(&[a.clone(), b.clone()]);
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    // Whatever survived, the memory total still equals what the keys cost.
    assert_eq!(keyspace.used_memory(), keyspace.recount_memory());
}

/// Filter writes change an unshared value in place; these pin what that must keep: a
/// snapshot's value is never changed under it (copy-on-write), the memory total follows
/// a value that grows, and the key keeps its expiry.
#[test]
fn writes_in_place_copy_what_a_snapshot_holds_and_track_growth() {
    let (keyspace, _) = recorded();
    let defaults = Defaults::default();
    let add = |item: &str| {
        let args: [&[u8]; 3] = [b"BF.ADD", b"k", item.as_bytes()];
        let command = FilterCommand::parse(&args).unwrap().unwrap();
        keyspace.run_filter(&command, &defaults).0
    };
    let at = now_ms() + 60_000;
    keyspace.restore(key("k"), Some(at), bloom());
    assert_eq!(add("a"), Reply::Bool(true));

    let (_writer, entries) = keyspace.begin_snapshot().unwrap();
    let held = Arc::clone(&entries[0].value);
    assert_eq!(add("b"), Reply::Bool(true));
    let Value::Bloom(before) = &*held else {
        panic!("a Bloom key")
    };
    assert_eq!(before.len(), 1, "the snapshot's value was changed");
    assert_eq!(Arc::strong_count(&held), 2, "the snapshot and this test");
    drop((entries, held));

    // 100 is the filter's capacity: past it, it grows a layer.
    for i in 0..1_000 {
        add(&format!("item{i}"));
    }
    let (_writer, entries) = keyspace.begin_snapshot().unwrap();
    assert!(entries[0].value.memory_bytes() > bloom().memory_bytes());
    assert_eq!(keyspace.used_memory(), keyspace.recount_memory());
    assert!(keyspace.used_memory() > memory::value_cost(&entries[0].value));
    assert_eq!(entries[0].expires_at_ms, Some(at));
}

#[test]
fn a_write_that_panics_leaves_its_value_in_place_not_the_stand_in() {
    let mut bloom = ScalableBloomFilter::new(100, 0.01).unwrap();
    bloom.insert("kept").unwrap();
    let mut place = Value::Bloom(bloom.clone());
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let taken = std::mem::replace(&mut place, Value::stand_in());
        let mut held = PutBack {
            place: &mut place,
            slot: Some(taken),
        };
        if let Some(Value::Bloom(f)) = held.slot.as_mut() {
            f.insert("added before the panic").unwrap();
        }
        panic!("a command that panics mid-write");
    }));
    assert!(result.is_err());
    let Value::Bloom(f) = &place else {
        panic!("the stand-in was left: {place:?}")
    };
    assert!(f.contains("kept") && f.contains("added before the panic"));
    // On the normal path an emptied slot leaves the stand-in for the caller to remove.
    {
        let taken = std::mem::replace(&mut place, Value::stand_in());
        let mut held = PutBack {
            place: &mut place,
            slot: Some(taken),
        };
        held.slot = None;
    }
    assert_eq!(place, Value::stand_in());
}

// ---- maxmemory-policy, client memory, filter health ------------------------------------

/// Runs one filter command (words split on spaces) with the default defaults.
fn filter_command(keyspace: &Keyspace, line: &str) -> Reply {
    let args: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
    let command = FilterCommand::parse(&args).unwrap().unwrap();
    keyspace.run_filter(&command, &Defaults::default()).0
}

/// Makes `name` look last used `ago` ticks before now.
fn last_used(keyspace: &Keyspace, name: &str, ago: u32) {
    let now = keyspace.clock_ticks();
    let map = read(&keyspace.shards[keyspace.shard_index(name.as_bytes())]);
    map.entries[name.as_bytes()]
        .access
        .touch(now.wrapping_sub(ago), false);
}

/// Three filters of about 120 KB, and maxmemory with room for half of another.
fn three_filters_and_little_room() -> (Keyspace, Arc<Recorder>) {
    let (keyspace, recorder) = recorded();
    for name in ["a", "b", "c"] {
        assert_eq!(
            filter_command(&keyspace, &format!("BF.RESERVE {name} 0.01 100000")),
            Reply::Ok
        );
    }
    let used = keyspace.used_memory();
    keyspace.set_maxmemory((used + used / 6) as u64);
    recorder.take();
    (keyspace, recorder)
}

fn live(keyspace: &Keyspace) -> Vec<String> {
    let mut keys: Vec<String> = keyspace
        .keys_matching(b"*")
        .iter()
        .map(|k| String::from_utf8_lossy(k).into_owned())
        .collect();
    keys.sort();
    keys
}

#[test]
fn noeviction_answers_oom_and_evicts_nothing() {
    let (keyspace, recorder) = three_filters_and_little_room();
    assert_eq!(
        filter_command(&keyspace, "BF.RESERVE d 0.01 100000"),
        Reply::error(bloomkit_commands::errors::OOM)
    );
    assert_eq!(live(&keyspace), ["a", "b", "c"]);
    assert!(recorder.take().is_empty());
    assert_eq!(keyspace.eviction().evicted_keys(), 0);
}

#[test]
fn allkeys_lru_evicts_the_least_recently_used_and_logs_its_del() {
    let (keyspace, recorder) = three_filters_and_little_room();
    keyspace.eviction().set_policy(Policy::AllKeysLru);
    last_used(&keyspace, "a", 0);
    last_used(&keyspace, "b", 1_000);
    last_used(&keyspace, "c", 10);
    assert_eq!(
        filter_command(&keyspace, "BF.RESERVE d 0.01 100000"),
        Reply::Ok
    );
    assert_eq!(live(&keyspace), ["a", "c", "d"]);
    assert_eq!(keyspace.eviction().evicted_keys(), 1);
    let log = recorder.take();
    assert_eq!(log[0], "DEL b", "{log:?}");
    assert!(log[1].starts_with("BF.RESERVE d "), "{log:?}");
    assert!(keyspace.memory_in_use() as u64 <= keyspace.maxmemory());
}

#[test]
fn allkeys_lfu_evicts_the_least_frequently_used() {
    let (keyspace, _) = three_filters_and_little_room();
    keyspace.eviction().set_policy(Policy::AllKeysLfu);
    // The first counted access always raises a new key's counter (5 to 6).
    for _ in 0..100 {
        filter_command(&keyspace, "BF.EXISTS a x");
    }
    filter_command(&keyspace, "BF.EXISTS c x");
    assert_eq!(filter_command(&keyspace, "BF.ADD d x"), Reply::Bool(true));
    filter_command(&keyspace, "BF.EXISTS d x");
    // BF.ADD d created a small filter; growing past the room then needs one eviction.
    assert_eq!(
        filter_command(&keyspace, "BF.RESERVE e 0.01 100000"),
        Reply::Ok
    );
    assert_eq!(live(&keyspace), ["a", "c", "d", "e"]);
}

#[test]
fn volatile_policies_evict_only_keys_with_an_expiry() {
    let (keyspace, _) = three_filters_and_little_room();
    keyspace.eviction().set_policy(Policy::VolatileLru);
    assert_eq!(
        filter_command(&keyspace, "BF.RESERVE d 0.01 100000"),
        Reply::error(bloomkit_commands::errors::OOM),
        "no key has an expiry: nothing to evict"
    );
    let now = now_ms() as i64;
    keyspace.expire_at(&key("a"), now + 100_000, ExpireCondition::default());
    keyspace.expire_at(&key("c"), now + 50_000, ExpireCondition::default());
    keyspace.eviction().set_policy(Policy::VolatileTtl);
    assert_eq!(
        filter_command(&keyspace, "BF.RESERVE d 0.01 100000"),
        Reply::Ok
    );
    assert_eq!(live(&keyspace), ["a", "b", "d"], "c expired soonest");
}

#[test]
fn client_buffers_count_toward_maxmemory_and_make_writes_evict() {
    let (keyspace, _) = three_filters_and_little_room();
    let max = keyspace.maxmemory() as usize;
    // Clients holding what is left: a new filter no longer fits.
    keyspace.account_clients(true, max - keyspace.used_memory(), 0);
    assert!(!keyspace.within_maxmemory(1));
    assert_eq!(
        filter_command(&keyspace, "BF.ADD new x"),
        Reply::error(bloomkit_commands::errors::OOM)
    );
    keyspace.eviction().set_policy(Policy::AllKeysRandom);
    assert_eq!(filter_command(&keyspace, "BF.ADD new x"), Reply::Bool(true));
    assert_eq!(keyspace.eviction().evicted_keys(), 1);
    assert!(
        live(&keyspace).contains(&"new".to_string()),
        "never the key written"
    );
}

#[test]
fn filter_health_follows_writes_renames_and_deletes() {
    let (keyspace, _) = recorded();
    assert_eq!(filter_command(&keyspace, "CF.RESERVE cf 600"), Reply::Ok);
    for i in 0..700 {
        filter_command(&keyspace, &format!("CF.ADD cf {i}"));
    }
    filter_command(&keyspace, "BF.ADD healthy x");
    let health = keyspace.filter_health();
    assert_eq!((health.past_capacity, health.above_target_rate), (1, 1));
    let (worst_key, worst) = health.worst.unwrap();
    assert_eq!(
        (&worst_key[..], worst.items, worst.capacity),
        (&b"cf"[..], 700, 600)
    );
    keyspace.rename(&key("cf"), &key("moved")).unwrap();
    assert_eq!(keyspace.filter_health().worst.unwrap().0, key("moved"));
    keyspace.delete(&[key("moved")]);
    assert_eq!(keyspace.filter_health(), HealthSummary::default());
    // Emptied by CF.DEL back under its capacity, it is healthy again.
    filter_command(&keyspace, "CF.RESERVE again 600");
    for i in 0..700 {
        filter_command(&keyspace, &format!("CF.ADD again {i}"));
    }
    for i in 0..200 {
        filter_command(&keyspace, &format!("CF.DEL again {i}"));
    }
    assert_eq!(keyspace.filter_health(), HealthSummary::default());
}

#[test]
fn memory_usage_is_the_value_and_the_key() {
    let (keyspace, _) = recorded();
    filter_command(&keyspace, "BF.RESERVE k 0.01 1000");
    let usage = keyspace.memory_usage(b"k").unwrap();
    // The value, the name, and a table entry with its control byte (what the table's
    // share of one key is; the shard's table is counted whole in used_memory).
    let value = keyspace.used_memory() - memory::table_cost(3) - memory::key_cost(1);
    assert_eq!(
        usage,
        value + memory::key_cost(1) + std::mem::size_of::<(Bytes, Entry)>() + 1
    );
    // What docs/SERVER.md says an entry costs.
    #[cfg(target_pointer_width = "64")]
    assert_eq!(std::mem::size_of::<(Bytes, Entry)>(), 80);
    assert_eq!(keyspace.memory_usage(b"nope"), None);
}
