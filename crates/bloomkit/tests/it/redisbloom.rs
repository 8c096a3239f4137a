//! RedisBloom's filters: the hash, probe and fingerprint rules, the decoders of its DUMP
//! payloads and SCANDUMP chunks, and bloomkit's own file format for them, all checked
//! against what a real RedisBloom 2.8 answered (`tests/data/redisbloom/`, written by
//! `scripts/redisbloom_vectors.py`; see that script for how each file was made).

use crate::common;

use std::collections::HashMap;

use bloomkit::redisbloom::{
    crc64_redis, RedisBloomChain, RedisBloomValue, RedisCuckooFilter, RedisCuckooInsert,
};
use bloomkit::Error;
use bloomkit_testkit::golden::{self, answers, chunks, read};

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// A `.info` file's fields by name.
fn info(name: &str) -> HashMap<String, Option<u64>> {
    golden::info(name).into_iter().collect()
}

fn borrowed(c: &[(i64, Vec<u8>)]) -> Vec<(i64, &[u8])> {
    c.iter().map(|(i, d)| (*i, d.as_slice())).collect()
}

fn bloom(name: &str) -> RedisBloomChain {
    match RedisBloomValue::from_dump(&read(&format!("{name}.dump"))).unwrap() {
        RedisBloomValue::Bloom(b) => b,
        other => panic!("{name}: {other:?}"),
    }
}

fn cuckoo(name: &str) -> RedisCuckooFilter {
    match RedisBloomValue::from_dump(&read(&format!("{name}.dump"))).unwrap() {
        RedisBloomValue::Cuckoo(c) => c,
        other => panic!("{name}: {other:?}"),
    }
}

#[test]
fn crc64_matches_redis_check_value() {
    // The check value Redis's crc64.c tests itself with.
    assert_eq!(crc64_redis(b"123456789"), 0xe9c6_d914_c4b8_d9ca);
}

/// One BF.ADD into a fresh one-link filter (BF.RESERVE p 0.001 1000) sets exactly the bits
/// RedisBloom set: its hash pair, its probe rule, its link size and probe count.
#[test]
fn bloom_probes_match_redisbloom() {
    let text = String::from_utf8(read("probes.tsv")).unwrap();
    let mut n = 0;
    for line in text.lines() {
        let f: Vec<&str> = line.split('\t').collect();
        let item = unhex(f[0]);
        let mut bf = RedisBloomChain::new(1000, 0.001, 2, false).unwrap();
        assert!(bf.insert(&item).unwrap());
        let link = &bf.links()[0];
        assert_eq!(link.bits(), f[1].parse::<u64>().unwrap(), "{line}");
        assert_eq!(link.num_hashes(), f[2].parse::<u32>().unwrap(), "{line}");
        let set: Vec<String> = (0..link.bits())
            .filter(|&x| link.as_bytes()[(x / 8) as usize] >> (x % 8) & 1 == 1)
            .map(|x| x.to_string())
            .collect();
        assert_eq!(set.join(","), f[3], "item {:?}", f[0]);
        n += 1;
    }
    assert!(n >= 50);
}

/// One CF.ADD into an empty filter of 65,536 one-slot buckets lands in the bucket and with
/// the fingerprint RedisBloom chose.
#[test]
fn cuckoo_placement_matches_redisbloom() {
    let text = String::from_utf8(read("cuckoo.tsv")).unwrap();
    for line in text.lines() {
        let f: Vec<&str> = line.split('\t').collect();
        let item = unhex(f[0]);
        let mut cf = RedisCuckooFilter::new(1 << 16, 1, 20, 1).unwrap();
        assert_eq!(cf.insert(&item).unwrap(), RedisCuckooInsert::Inserted);
        let bytes = cf.to_bytes();
        let back = RedisCuckooFilter::from_bytes(&bytes).unwrap();
        assert_eq!(back, cf);
        assert_eq!(cf.num_buckets(), f[1].parse::<u64>().unwrap());
        // The payload after the two counts is the buckets, one byte each.
        let data = &bytes[bytes.len() - 8 - (1 << 16)..bytes.len() - 8];
        let occupied: Vec<(usize, u8)> = data
            .iter()
            .enumerate()
            .filter(|(_, &b)| b != 0)
            .map(|(i, &b)| (i, b))
            .collect();
        assert_eq!(
            occupied,
            vec![(f[2].parse().unwrap(), f[3].parse().unwrap())],
            "item {:?}",
            f[0]
        );
    }
}

/// Every key's DUMP decodes; it answers every item (inserted or not) as RedisBloom did, and
/// shows the same BF.INFO.
#[test]
fn bloom_dumps_answer_as_redisbloom() {
    for name in ["bf-small", "bf-layers", "bf-nonscaling"] {
        let bf = bloom(name);
        for (item, found, _) in answers(&format!("{name}.answers")) {
            assert_eq!(bf.contains(item.as_bytes()), found, "{name}: {item}");
        }
        let i = info(&format!("{name}.info"));
        assert_eq!(Some(bf.capacity()), i["Capacity"], "{name}");
        assert_eq!(
            Some(bf.links().len() as u64),
            i["Number of filters"],
            "{name}"
        );
        assert_eq!(Some(bf.len()), i["Number of items inserted"], "{name}");
        let expansion = bf.is_scaling().then_some(u64::from(bf.expansion()));
        assert_eq!(expansion, i["Expansion rate"], "{name}");
    }
    assert!(bloom("bf-layers").links().len() >= 10);
}

#[test]
fn cuckoo_dumps_answer_and_count_as_redisbloom() {
    for name in ["cf-small", "cf-grown"] {
        let cf = cuckoo(name);
        for (item, found, count) in answers(&format!("{name}.answers")) {
            assert_eq!(cf.contains(item.as_bytes()), found, "{name}: {item}");
            assert_eq!(Some(cf.count(item.as_bytes())), count, "{name}: {item}");
        }
        let i = info(&format!("{name}.info"));
        assert_eq!(Some(cf.num_buckets()), i["Number of buckets"], "{name}");
        assert_eq!(
            Some(cf.num_filters() as u64),
            i["Number of filters"],
            "{name}"
        );
        assert_eq!(Some(cf.len()), i["Number of items inserted"], "{name}");
        assert_eq!(
            Some(cf.num_deletes()),
            i["Number of items deleted"],
            "{name}"
        );
        assert_eq!(
            Some(u64::from(cf.bucket_size())),
            i["Bucket size"],
            "{name}"
        );
        assert_eq!(
            Some(u64::from(cf.expansion())),
            i["Expansion rate"],
            "{name}"
        );
        assert_eq!(
            Some(u64::from(cf.max_iterations())),
            i["Max iterations"],
            "{name}"
        );
    }
    assert!(cuckoo("cf-grown").num_filters() > 1);
}

/// CF.DEL keeps its meaning after the import: each delete removes one copy.
#[test]
fn cuckoo_deletes_after_import() {
    let mut cf = cuckoo("cf-small");
    // d0..d19 were added twice by RedisBloom.
    assert_eq!(cf.count(b"d3"), 2);
    assert!(cf.delete(b"d3"));
    assert_eq!(cf.count(b"d3"), 1);
    assert!(cf.delete(b"d3"));
    assert_eq!(cf.count(b"d3"), 0);
    assert!(!cf.contains(b"d3"));
    assert_eq!(cf.len(), 98);
    assert_eq!(cf.num_deletes(), 22);
}

/// The same commands, run here from nothing, make the very filters RedisBloom made: its
/// sizing, growth and cuckoo relocation, not only its answers.
#[test]
fn same_commands_build_the_same_filters() {
    let mut bf = RedisBloomChain::new(10, 0.01, 1, false).unwrap();
    for i in 0..300 {
        bf.insert(format!("b{i}").as_bytes()).unwrap();
    }
    assert_eq!(bf, bloom("bf-layers"));

    let mut bf = RedisBloomChain::new(50, 0.001, 2, true).unwrap();
    for i in 0..40 {
        bf.insert(format!("c{i}").as_bytes()).unwrap();
    }
    assert_eq!(bf, bloom("bf-nonscaling"));

    let mut cf = RedisCuckooFilter::new(200, 4, 20, 1).unwrap();
    let d: Vec<String> = (0..100).map(|i| format!("d{i}")).collect();
    for x in d.iter().chain(&d[..20]) {
        cf.insert(x.as_bytes()).unwrap();
    }
    for x in &d[80..] {
        assert!(cf.delete(x.as_bytes()));
    }
    assert_eq!(cf, cuckoo("cf-small"));

    let mut cf = RedisCuckooFilter::new(64, 2, 20, 2).unwrap();
    for i in 0..400 {
        cf.insert(format!("e{i}").as_bytes()).unwrap();
    }
    assert_eq!(cf, cuckoo("cf-grown"));
}

/// SCANDUMP's chunks rebuild exactly what DUMP gives.
#[test]
fn scandump_sequences_decode_like_dumps() {
    for name in ["bf-small", "bf-layers", "bf-nonscaling"] {
        let c = chunks(&format!("{name}.scandump"));
        assert_eq!(
            RedisBloomChain::from_scandump(borrowed(&c)).unwrap(),
            bloom(name),
            "{name}"
        );
    }
    for name in ["cf-small", "cf-grown"] {
        let c = chunks(&format!("{name}.scandump"));
        assert_eq!(
            RedisCuckooFilter::from_scandump(borrowed(&c)).unwrap(),
            cuckoo(name),
            "{name}"
        );
    }
}

/// Imported filters survive bloomkit's file format and keep taking items as RedisBloom
/// would.
#[test]
fn imported_filters_round_trip_through_the_file_format() {
    for name in ["bf-small", "bf-layers", "bf-nonscaling"] {
        let bf = bloom(name);
        let bytes = bf.to_bytes();
        assert_eq!(bytes[12..14], [3, 0], "hash algorithm 3");
        let back = RedisBloomChain::from_bytes(&bytes).unwrap();
        assert_eq!(back, bf);
        assert_eq!(RedisBloomChain::read_from(&bytes[..]).unwrap(), bf);
        assert!(bloomkit::AnyFilter::from_bytes(&bytes).is_err());
    }
    for name in ["cf-small", "cf-grown"] {
        let cf = cuckoo(name);
        let back = RedisCuckooFilter::from_bytes(&cf.to_bytes()).unwrap();
        assert_eq!(back, cf);
    }
}

/// The golden files of kinds 10 and 11: written by `bloomkit`'s encoder from the decoded
/// dumps, they must keep loading to the same filters.
#[test]
fn golden_files_load() {
    for name in ["bf-layers", "bf-nonscaling"] {
        let bytes = read(&format!("{name}.bkf"));
        let f = RedisBloomChain::from_bytes(&bytes).unwrap();
        assert_eq!(f, bloom(name));
        assert_eq!(f.to_bytes(), bytes);
    }
    let bytes = read("cf-grown.bkf");
    let f = RedisCuckooFilter::from_bytes(&bytes).unwrap();
    assert_eq!(f, cuckoo("cf-grown"));
    assert_eq!(f.to_bytes(), bytes);
}

#[test]
fn every_truncation_and_flip_of_our_files_is_refused() {
    let bf = read("bf-nonscaling.bkf");
    common::assert_every_truncation_fails(&bf, RedisBloomChain::from_bytes, |b| {
        RedisBloomChain::read_from(b)
    });
    common::assert_every_byte_flip_fails(&bf, RedisBloomChain::from_bytes, |b| {
        RedisBloomChain::read_from(b)
    });
    let cf = read("cf-grown.bkf");
    common::assert_every_truncation_fails(&cf, RedisCuckooFilter::from_bytes, |b| {
        RedisCuckooFilter::read_from(b)
    });
}

/// A file of kind 10 or 11 under another hash algorithm, or another kind under algorithm
/// 3, is refused: no filter probes with a hash it was not built with.
#[test]
fn hash_algorithm_3_belongs_to_the_redisbloom_kinds() {
    let mut bf = read("bf-nonscaling.bkf");
    bf[12..14].copy_from_slice(&2u16.to_le_bytes());
    common::reseal(&mut bf);
    assert!(matches!(
        RedisBloomChain::from_bytes(&bf),
        Err(Error::UnknownHashAlgorithm { found: 2 })
    ));
    let mut classic = bloomkit::BloomFilter::new(100, 0.01).unwrap().to_bytes();
    classic[12..14].copy_from_slice(&3u16.to_le_bytes());
    common::reseal(&mut classic);
    assert!(matches!(
        bloomkit::BloomFilter::from_bytes(&classic),
        Err(Error::UnknownHashAlgorithm { found: 3 })
    ));
}

/// Hostile DUMP payloads: every truncation, every single-byte change (re-checksummed, so
/// the decoder itself must cope), and counts that claim more than the payload holds.
#[test]
fn hostile_dumps_are_refused_without_panicking() {
    for name in ["bf-small", "bf-layers", "cf-small", "cf-grown"] {
        let dump = read(&format!("{name}.dump"));
        for len in 0..dump.len() {
            assert!(
                RedisBloomValue::from_dump(&dump[..len]).is_err(),
                "{name} cut at {len}"
            );
        }
        let mut wrong_crc = dump.clone();
        *wrong_crc.last_mut().unwrap() ^= 1;
        assert!(matches!(
            RedisBloomValue::from_dump(&wrong_crc),
            Err(Error::ChecksumMismatch { .. })
        ));
        for pos in 0..dump.len() - 10 {
            for flip in [0x01u8, 0x40, 0x80, 0xff] {
                let mut bad = dump.clone();
                bad[pos] ^= flip;
                let n = bad.len() - 8;
                let crc = crc64_redis(&bad[..n]);
                bad[n..].copy_from_slice(&crc.to_le_bytes());
                // Either refused or a valid filter; never a panic.
                let _ = RedisBloomValue::from_dump(&bad);
            }
        }
    }
}

/// A value whose link count claims far more than its bytes could hold is refused before
/// anything is sized by the claim.
#[test]
fn claimed_counts_beyond_the_input_are_refused() {
    // size 0, 999 links, options 4 (64-bit), growth 2, then nothing.
    let value = [2, 0, 2, 0x43, 0xe7, 2, 4, 2, 2, 0];
    assert!(RedisBloomChain::from_rdb(4, &value).is_err());
    // A cuckoo value claiming 65,535 sub-filters of 2^40 buckets.
    let mut cf = vec![2, 0x80, 0, 0, 0xff, 0xff]; // 65,535 sub-filters
    cf.extend_from_slice(&[2, 0x81, 0, 0, 1, 0, 0, 0, 0, 0]); // 2^40 buckets
    cf.extend_from_slice(&[2, 0, 2, 0, 2, 2, 2, 20, 2, 1, 0]);
    assert!(RedisCuckooFilter::from_rdb(4, &cf).is_err());
    // A SCANDUMP header claiming one link of 2^60 bytes, then no chunks.
    let mut header = [0u8; 20 + 53];
    header[8] = 1;
    header[12] = 5;
    header[20..28].copy_from_slice(&(1u64 << 60).to_le_bytes());
    header[28..36].copy_from_slice(&(1u64 << 63).to_le_bytes());
    assert!(RedisBloomChain::from_scandump([(1, &header[..])]).is_err());
}

/// SCANDUMP chunks out of order, repeated, or missing are refused.
#[test]
fn scandump_chunks_must_come_in_order() {
    let c = chunks("bf-layers.scandump");
    let mut swapped = c.clone();
    swapped.swap(1, 2);
    assert!(RedisBloomChain::from_scandump(borrowed(&swapped)).is_err());
    let mut short = c.clone();
    short.pop();
    assert!(RedisBloomChain::from_scandump(borrowed(&short)).is_err());
    let mut twice = c.clone();
    twice.push(c[1].clone());
    assert!(RedisBloomChain::from_scandump(borrowed(&twice)).is_err());
    let cf = chunks("cf-grown.scandump");
    assert!(RedisCuckooFilter::from_scandump(borrowed(&cf[..cf.len() - 1])).is_err());
    assert!(RedisCuckooFilter::from_scandump(borrowed(&cf[1..])).is_err());
}

/// A host's LOADCHUNK: one chunk at a time, with the header's announced size known before
/// any data (for a memory budget) and memory growing only with what arrives.
#[test]
fn loader_takes_one_chunk_at_a_time() {
    use bloomkit::redisbloom::ScandumpLoader;
    for (name, start) in [
        (
            "bf-layers",
            ScandumpLoader::bloom as fn(&[u8]) -> bloomkit::Result<ScandumpLoader>,
        ),
        ("cf-grown", ScandumpLoader::cuckoo),
    ] {
        let c = chunks(&format!("{name}.scandump"));
        let mut loader = start(&c[0].1).unwrap();
        let total: u64 = c[1..].iter().map(|(_, d)| d.len() as u64).sum();
        assert_eq!(loader.expected_bytes(), total, "{name}");
        for (i, (it, data)) in c[1..].iter().enumerate() {
            assert!(!loader.is_complete());
            loader.push(*it, data).unwrap();
            let so_far: u64 = c[1..=i + 1].iter().map(|(_, d)| d.len() as u64).sum();
            assert_eq!(loader.received_bytes(), so_far);
        }
        assert!(loader.is_complete());
        let value = loader.finish().unwrap();
        assert_eq!(
            value,
            RedisBloomValue::from_dump(&read(&format!("{name}.dump"))).unwrap()
        );
    }
    // A Bloom header is not a cuckoo header, nor the reverse.
    assert!(ScandumpLoader::cuckoo(&chunks("bf-small.scandump")[0].1).is_err());
    assert!(ScandumpLoader::bloom(&chunks("cf-small.scandump")[0].1).is_err());
}

mod oracle {
    use std::collections::{HashMap, HashSet};

    use bloomkit::redisbloom::{RedisBloomChain, RedisCuckooFilter, RedisCuckooInsert};
    use proptest::prelude::*;

    #[derive(Clone, Debug)]
    enum Op {
        Add(u16),
        Del(u16),
    }

    fn ops() -> impl Strategy<Value = Vec<Op>> {
        prop::collection::vec(
            prop_oneof![3 => any::<u16>().prop_map(|k| Op::Add(k % 300)),
                        1 => any::<u16>().prop_map(|k| Op::Del(k % 300))],
            0..600,
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// A cuckoo filter never forgets an item it holds a copy of, never undercounts,
        /// and survives the file format, through any mix of adds (growing it) and deletes.
        #[test]
        fn cuckoo_never_forgets_or_undercounts(
            capacity in 4u64..64,
            bucket_size in 1u16..5,
            expansion in prop_oneof![Just(0u16), Just(1), Just(2), Just(4)],
            ops in ops(),
        ) {
            let mut cf = RedisCuckooFilter::new(capacity.max(u64::from(bucket_size)), bucket_size, 20, expansion).unwrap();
            let mut oracle: HashMap<u16, u64> = HashMap::new();
            for op in ops {
                match op {
                    Op::Add(k) => {
                        if cf.insert(k.to_string().as_bytes()).unwrap() == RedisCuckooInsert::Inserted {
                            *oracle.entry(k).or_default() += 1;
                        }
                    }
                    // Deleting only what was added, as CF.DEL's contract asks.
                    Op::Del(k) => {
                        if let Some(n) = oracle.get_mut(&k).filter(|n| **n > 0) {
                            prop_assert!(cf.delete(k.to_string().as_bytes()));
                            *n -= 1;
                        }
                    }
                }
            }
            for (k, &n) in &oracle {
                prop_assert!(cf.count(k.to_string().as_bytes()) >= n);
                if n > 0 {
                    prop_assert!(cf.contains(k.to_string().as_bytes()));
                }
            }
            prop_assert_eq!(cf.len(), oracle.values().sum::<u64>());
            prop_assert_eq!(RedisCuckooFilter::from_bytes(&cf.to_bytes()).unwrap(), cf);
        }

        /// A chain never forgets an item, grows as needed, and survives the file format.
        #[test]
        fn chain_never_forgets(
            capacity in 1u64..50,
            rate in prop_oneof![Just(0.1), Just(0.01), Just(0.001)],
            expansion in 1u32..4,
            keys in prop::collection::vec(any::<u16>(), 0..500),
        ) {
            let mut bf = RedisBloomChain::new(capacity, rate, expansion, false).unwrap();
            let mut seen = HashSet::new();
            for k in keys {
                bf.insert(k.to_string().as_bytes()).unwrap();
                seen.insert(k);
            }
            for k in &seen {
                prop_assert!(bf.contains(k.to_string().as_bytes()));
            }
            prop_assert!(bf.len() <= seen.len() as u64);
            prop_assert_eq!(RedisBloomChain::from_bytes(&bf.to_bytes()).unwrap(), bf);
        }
    }
}

/// A host's own field reader (a module's `rdb_load` reads RedisBloom's fields one by one
/// through Redis's API) decodes the same filter as the RDB bytes do.
#[test]
fn fields_from_a_host_reader_decode_alike() {
    use bloomkit::redisbloom::RdbFields;
    use std::collections::VecDeque;

    enum Field {
        U(u64),
        D(f64),
        S(Vec<u8>),
    }
    struct Fields(VecDeque<Field>);
    impl RdbFields for Fields {
        fn unsigned(&mut self, what: &str) -> bloomkit::Result<u64> {
            match self.0.pop_front() {
                Some(Field::U(v)) => Ok(v),
                _ => Err(Error::Corrupt {
                    reason: format!("{what}: unsigned expected"),
                }),
            }
        }
        fn double(&mut self, what: &str) -> bloomkit::Result<f64> {
            match self.0.pop_front() {
                Some(Field::D(v)) => Ok(v),
                _ => Err(Error::Corrupt {
                    reason: format!("{what}: double expected"),
                }),
            }
        }
        fn buffer(&mut self, what: &str) -> bloomkit::Result<Vec<u8>> {
            match self.0.pop_front() {
                Some(Field::S(v)) => Ok(v),
                _ => Err(Error::Corrupt {
                    reason: format!("{what}: string expected"),
                }),
            }
        }
    }

    let bf = bloom("bf-layers");
    let mut f = VecDeque::from([
        Field::U(bf.len()),
        Field::U(bf.links().len() as u64),
        Field::U(u64::from(bf.options())),
        Field::U(u64::from(bf.expansion())),
    ]);
    for l in bf.links() {
        f.extend([
            Field::U(l.entries()),
            Field::D(l.error()),
            Field::U(u64::from(l.num_hashes())),
            Field::D(l.bits_per_entry()),
            Field::U(l.bits()),
            Field::U(u64::from(l.n2())),
            Field::S(l.as_bytes().to_vec()),
            Field::U(l.len()),
        ]);
    }
    assert_eq!(
        RedisBloomChain::from_rdb_fields(4, &mut Fields(f)).unwrap(),
        bf
    );

    let cf = cuckoo("cf-grown");
    let bytes = cf.to_bytes();
    // The sub-filters' buckets, from our file's payload (after the two counts).
    let payload = &bytes[bytes.len() - 8 - cf.memory_bytes()..bytes.len() - 8];
    let mut f = VecDeque::from([
        Field::U(cf.num_filters() as u64),
        Field::U(cf.num_buckets()),
        Field::U(cf.len()),
        Field::U(cf.num_deletes()),
        Field::U(u64::from(cf.bucket_size())),
        Field::U(u64::from(cf.max_iterations())),
        Field::U(u64::from(cf.expansion())),
    ]);
    let mut at = 0;
    for j in 0..cf.num_filters() as u32 {
        let n = cf.num_buckets() * u64::from(cf.expansion()).pow(j);
        let len = (n * u64::from(cf.bucket_size())) as usize;
        f.extend([Field::U(n), Field::S(payload[at..at + len].to_vec())]);
        at += len;
    }
    assert_eq!(
        RedisCuckooFilter::from_rdb_fields(4, &mut Fields(f)).unwrap(),
        cf
    );
}
