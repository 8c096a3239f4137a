//! `bloomkit copy` through real processes: between two `bloomkit serve`, from a real
//! RedisBloom 2.8 into `bloomkit serve` and into this build's module in `redis-server`,
//! key to file to key, every kind of filter file into a key, a stopped server's data
//! directory, a filter of several hundred MB (by copy and by RESTORE into both hosts), and a copy killed
//! in the middle of a filter.
//! Every item put in at the source is asked for at the destination.

use crate::common;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use bloomkit::FilterKind;
use bloomkit_testkit::{Conn, Resp};
use common::engines::{Engine, Module};
use common::served::serve;
use common::{bloomkit, Scratch};

/// Runs `bloomkit copy ARGS...`.
fn copy(args: &[&str]) -> Output {
    bloomkit()
        .arg("copy")
        .args(args)
        .output()
        .expect("run bloomkit copy")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Asserts a copy succeeded, and returns its stderr.
fn copied(args: &[&str]) -> String {
    let out = copy(args);
    let err = stderr(&out);
    assert!(out.status.success(), "copy {args:?}: {err}");
    err
}

/// Asserts a copy failed with status 2, and returns its stderr.
fn refused(args: &[&str]) -> String {
    let out = copy(args);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "copy {args:?}: {err}");
    err
}

fn url(addr: &str, key: &str) -> String {
    format!("redis://{addr}/{key}")
}

/// `n` items for `key`.
fn items(key: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{key}-item-{i}")).collect()
}

/// Adds `items` to `key` with `command` (`BF.MADD`, `AF.MADD`, or `CF.INSERT` with ITEMS),
/// in batches; every reply must be a success.
fn add(c: &mut Conn, command: &str, key: &str, items: &[String]) {
    let requests: Vec<Vec<String>> = items
        .chunks(500)
        .map(|batch| {
            let mut r = vec![command.to_string(), key.to_string()];
            if command == "CF.INSERT" {
                r.push("ITEMS".into());
            }
            r.extend(batch.iter().cloned());
            r
        })
        .collect();
    for reply in c.pipeline(&requests) {
        let Resp::Array(answers) = &reply else {
            panic!("{command} {key}: {reply:?}")
        };
        assert!(
            answers.iter().all(|a| matches!(a, Resp::Int(_))),
            "{command} {key}: {reply:?}"
        );
    }
}

/// Asserts every item is found in `key` (`BF.MEXISTS`, `CF.MEXISTS`, `AF.MEXISTS`).
fn all_found(c: &mut Conn, command: &str, key: &str, items: &[String]) {
    let requests: Vec<Vec<String>> = items
        .chunks(500)
        .map(|batch| {
            let mut r = vec![command.to_string(), key.to_string()];
            r.extend(batch.iter().cloned());
            r
        })
        .collect();
    for (reply, batch) in c.pipeline(&requests).iter().zip(items.chunks(500)) {
        let Resp::Array(answers) = reply else {
            panic!("{command} {key}: {reply:?}")
        };
        for (answer, item) in answers.iter().zip(batch) {
            assert_eq!(answer, &Resp::Int(1), "{command} {key} {item}: not found");
        }
        assert_eq!(answers.len(), batch.len());
    }
}

/// Asserts `bloomkit query -q FILE` answers "maybe" for every line of `keys`.
fn query_finds_all(file: &str, keys: &Path) {
    bloomkit()
        .args(["query", "-q", file])
        .pipe_stdin(keys)
        .unwrap()
        .assert()
        .success();
}

/// `INFO` as name → value.
fn info(c: &mut Conn, command: &str, key: &str) -> BTreeMap<String, Resp> {
    let Resp::Array(flat) = c.cmd(&[command, key]) else {
        panic!("{command} {key}")
    };
    flat.chunks(2)
        .map(|p| {
            let name = match &p[0] {
                Resp::Bulk(name) => String::from_utf8_lossy(name).into_owned(),
                Resp::Simple(name) => name.clone(),
                other => panic!("{command} {key}: a field named {other:?}"),
            };
            (name, p[1].clone())
        })
        .collect()
}

/// `info` with only the fields that describe what the filter holds (not its memory).
fn contents(c: &mut Conn, command: &str, key: &str) -> BTreeMap<String, Resp> {
    let mut fields = info(c, command, key);
    fields.retain(|name, _| {
        [
            "Capacity",
            "Number of filters",
            "Number of items inserted",
            "Expansion rate",
            "Number of buckets",
            "Number of items deleted",
            "Bucket size",
            "Max iterations",
        ]
        .contains(&name.as_str())
    });
    fields
}

fn keys(c: &mut Conn, pattern: &str) -> Vec<String> {
    let Resp::Array(keys) = c.cmd(&["KEYS", pattern]) else {
        panic!("KEYS")
    };
    let mut names: Vec<String> = keys
        .iter()
        .map(|k| match k {
            Resp::Bulk(k) => String::from_utf8_lossy(k).into_owned(),
            other => panic!("{other:?}"),
        })
        .collect();
    names.sort();
    names
}

#[test]
fn between_two_servers_every_family_with_match_and_replace() {
    let scratch = Scratch::new();
    let a = serve(&scratch.path("a"), &[]);
    let b = serve(&scratch.path("b"), &[]);
    let mut ca = a.client();
    let mut cb = b.client();
    let mut expected = Vec::new();
    for i in 0..40 {
        let key = format!("bf:{i}");
        if i % 2 == 0 {
            // Small first layers: grown to several.
            assert_eq!(ca.cmd(&["BF.RESERVE", &key, "0.01", "10"]), Resp::ok());
        }
        let it = items(&key, 40 + i);
        add(&mut ca, "BF.MADD", &key, &it);
        expected.push(("BF", key, it));
    }
    for i in 0..15 {
        let key = format!("cf:{i}");
        let it = items(&key, 30);
        add(&mut ca, "CF.INSERT", &key, &it);
        expected.push(("CF", key, it));
    }
    for i in 0..2 {
        let key = format!("af:{i}");
        let it = items(&key, 25);
        add(&mut ca, "AF.MADD", &key, &it);
        expected.push(("AF", key, it));
    }
    let summary = copied(&[
        &format!("redis://{}", a.addr),
        &format!("redis://{}", b.addr),
    ]);
    assert!(summary.contains("copied 57 keys"), "{summary}");
    for (family, key, it) in &expected {
        all_found(&mut cb, &format!("{family}.MEXISTS"), key, it);
        let command = format!("{family}.INFO");
        if *family != "AF" {
            assert_eq!(
                info(&mut ca, &command, key),
                info(&mut cb, &command, key),
                "{key}"
            );
        }
    }
    assert!(keys(&mut cb, "*bloomkit-copy*").is_empty());

    // Again: every key exists, and each is named.
    let err = refused(&[
        &format!("redis://{}", a.addr),
        &format!("redis://{}", b.addr),
    ]);
    assert!(
        err.contains("bloomkit: copy bf:0: the key bf:0 exists at") && err.contains("--replace"),
        "{err}"
    );
    assert!(err.contains("57 of 57 keys were not copied"), "{err}");

    // More items at the source's cuckoo keys; --replace --match takes only those.
    let more: Vec<String> = items("later", 20);
    for i in 0..15 {
        add(&mut ca, "CF.INSERT", &format!("cf:{i}"), &more);
    }
    let summary = copied(&[
        "--replace",
        "--match",
        "cf:*",
        &format!("redis://{}", a.addr),
        &format!("redis://{}", b.addr),
    ]);
    assert!(summary.contains("copied 15 keys"), "{summary}");
    for i in 0..15 {
        let key = format!("cf:{i}");
        all_found(&mut cb, "CF.MEXISTS", &key, &more);
        assert_eq!(
            info(&mut ca, "CF.INFO", &key),
            info(&mut cb, "CF.INFO", &key)
        );
    }
    assert_eq!(cb.cmd(&["DBSIZE"]), Resp::Int(57));
    // One key, under another name.
    copied(&[&url(&a.addr, "bf:3"), &url(&b.addr, "renamed")]);
    all_found(&mut cb, "BF.MEXISTS", "renamed", &expected[3].2);
    // Errors name what is wrong.
    let err = refused(&[&url(&a.addr, "nothing"), &url(&b.addr, "x")]);
    assert!(err.contains("copy nothing: no such key"), "{err}");
    let err = refused(&["--match", "x", &url(&a.addr, "bf:3"), &url(&b.addr, "y")]);
    assert!(err.contains("--match"), "{err}");
    let err = refused(&[&format!("redis://{}", a.addr), &url(&b.addr, "one")]);
    assert!(err.contains("DEST must be a server"), "{err}");
}

#[test]
fn key_to_file_to_key() {
    let scratch = Scratch::new();
    let a = serve(&scratch.path("a"), &[]);
    let b = serve(&scratch.path("b"), &[]);
    let mut ca = a.client();
    let mut cb = b.client();
    assert_eq!(ca.cmd(&["BF.RESERVE", "users", "0.01", "100"]), Resp::ok());
    let users = items("users", 3000);
    add(&mut ca, "BF.MADD", "users", &users);
    let carts = items("carts", 1000);
    add(&mut ca, "CF.INSERT", "carts", &carts);

    for (family, key, it) in [("BF", "users", &users), ("CF", "carts", &carts)] {
        let file = scratch.path(&format!("{key}.bkf"));
        let file = file.to_str().unwrap();
        copied(&[&url(&a.addr, key), file]);
        // The library's file: every subcommand reads it.
        let keys = scratch.keys_file(&format!("{key}.txt"), it);
        query_finds_all(file, &keys);
        let shown = bloomkit().args(["info", file]).output().unwrap();
        let kind = if family == "BF" { "scalable" } else { "cuckoo" };
        assert!(
            String::from_utf8_lossy(&shown.stdout)
                .contains(&format!("kind:                          {kind}")),
            "{}",
            String::from_utf8_lossy(&shown.stdout)
        );
        // And back into a key of another server.
        let copy_key = format!("{key}-again");
        copied(&[file, &url(&b.addr, &copy_key)]);
        all_found(&mut cb, &format!("{family}.MEXISTS"), &copy_key, it);
        let command = format!("{family}.INFO");
        assert_eq!(
            info(&mut ca, &command, key),
            info(&mut cb, &command, &copy_key)
        );
        // A file that exists is kept unless --replace.
        let err = refused(&[&url(&a.addr, key), file]);
        assert!(err.contains("exists; give --replace"), "{err}");
        copied(&["--replace", &url(&a.addr, key), file]);
    }
    // Standard output and input.
    let out = copy(&[&url(&a.addr, "users"), "-"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        out.stdout,
        std::fs::read(scratch.path("users.bkf")).unwrap()
    );
    bloomkit()
        .args(["copy", "-", &url(&b.addr, "from-stdin")])
        .write_stdin(out.stdout)
        .assert()
        .success();
    all_found(&mut cb, "BF.MEXISTS", "from-stdin", &users);
    // A file has no key name: DEST must give one.
    let err = refused(&[
        scratch.path("users.bkf").to_str().unwrap(),
        &format!("redis://{}", b.addr),
    ]);
    assert!(err.contains("name the key in DEST"), "{err}");
    // A server's every key cannot go into one file.
    let err = refused(&[
        &format!("redis://{}", a.addr),
        scratch.path("all.bkf").to_str().unwrap(),
    ]);
    assert!(err.contains("holds one filter"), "{err}");
}

#[test]
fn every_kind_of_filter_file_into_a_key() {
    let scratch = Scratch::new();
    let b = serve(&scratch.path("b"), &[]);
    let mut cb = b.client();
    let it = items("k", 500);
    let keys = scratch.keys_file("keys.txt", &it);
    for kind in FilterKind::ALL {
        let file = scratch.build(&format!("{kind}.bkf"), &keys, &["--kind", kind.name()]);
        let key = format!("from-{kind}");
        let out = copy(&[file.to_str().unwrap(), &url(&b.addr, &key)]);
        match kind {
            FilterKind::Scalable => all_found(&mut cb, "BF.MEXISTS", &key, &it),
            FilterKind::Classic | FilterKind::Blocked => {
                // One layer that does not grow: every key found, capacity as planned.
                all_found(&mut cb, "BF.MEXISTS", &key, &it);
                let fields = info(&mut cb, "BF.INFO", &key);
                assert_eq!(fields["Number of filters"], Resp::Int(1), "{kind}");
                assert_eq!(fields["Expansion rate"], Resp::Nil, "{kind}");
                // The keys the bits and hashes are planned for (a blocked filter's estimate
                // runs higher: ScalableBloomFilter::from_blocked says why).
                assert!(
                    matches!(fields["Capacity"], Resp::Int(c) if (450..=800).contains(&c)),
                    "{kind}: {fields:?}"
                );
                // And it answers like the file for keys never put in.
                let absent = items("absent", 2000);
                let requests = vec![std::iter::once("BF.MEXISTS".to_string())
                    .chain(std::iter::once(key.clone()))
                    .chain(absent.iter().cloned())
                    .collect::<Vec<_>>()];
                let Resp::Array(answers) = &cb.pipeline(&requests)[0] else {
                    panic!("BF.MEXISTS")
                };
                let absent_file = scratch.keys_file("absent.txt", &absent);
                let queried = bloomkit()
                    .args(["query", file.to_str().unwrap()])
                    .pipe_stdin(&absent_file)
                    .unwrap()
                    .output()
                    .unwrap();
                let from_file: Vec<Resp> = String::from_utf8_lossy(&queried.stdout)
                    .lines()
                    .map(|l| Resp::Int(i64::from(l.starts_with("maybe"))))
                    .collect();
                assert_eq!(answers, &from_file, "{kind}");
            }
            FilterKind::Cuckoo => all_found(&mut cb, "CF.MEXISTS", &key, &it),
            _ => {
                let err = stderr(&out);
                assert_eq!(out.status.code(), Some(2), "{kind}: {err}");
                assert_eq!(err.lines().count(), 1, "{kind}: {err}");
                assert!(
                    err.contains(&format!("a {kind} filter"))
                        && err.contains("scalable")
                        && err.contains("cuckoo"),
                    "{kind}: {err}"
                );
                assert_eq!(cb.cmd(&["EXISTS", &key]), Resp::Int(0));
                continue;
            }
        }
        assert!(out.status.success(), "{kind}: {}", stderr(&out));
    }
}

/// Every file of `dir` and its bytes.
fn dir_bytes(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}

#[test]
fn a_stopped_servers_data_directory_is_a_source() {
    let scratch = Scratch::new();
    let data = scratch.path("data");
    let served = serve(&data, &[]);
    let mut c = served.client();
    let bloom = items("bloom", 800);
    add(&mut c, "BF.MADD", "bloom", &bloom);
    c.cmd(&["SAVE"]);
    // After the snapshot: in the log only.
    let cuckoo = items("cuckoo", 300);
    add(&mut c, "CF.INSERT", "cuckoo", &cuckoo);
    let aging = items("aging", 100);
    add(&mut c, "AF.MADD", "aging", &aging);
    let data_arg = data.to_str().unwrap().to_string();
    let b = serve(&scratch.path("b"), &[]);
    let mut cb = b.client();
    // Not while a server runs on it.
    let err = refused(&[&data_arg, &format!("redis://{}", b.addr)]);
    assert!(err.contains("in use by another bloomkit server"), "{err}");
    served.shutdown(&["NOSAVE"]);

    let before = dir_bytes(&data);
    let summary = copied(&[&data_arg, &format!("redis://{}", b.addr)]);
    assert!(summary.contains("copied 3 keys"), "{summary}");
    all_found(&mut cb, "BF.MEXISTS", "bloom", &bloom);
    all_found(&mut cb, "CF.MEXISTS", "cuckoo", &cuckoo);
    all_found(&mut cb, "AF.MEXISTS", "aging", &aging);
    // One key to a file, one to a key of another name.
    let file = scratch.path("cuckoo.bkf");
    copied(&[&format!("{data_arg}/cuckoo"), file.to_str().unwrap()]);
    let keys = scratch.keys_file("cuckoo.txt", &cuckoo);
    query_finds_all(file.to_str().unwrap(), &keys);
    copied(&[&format!("{data_arg}/bloom"), &url(&b.addr, "bloom-2")]);
    all_found(&mut cb, "BF.MEXISTS", "bloom-2", &bloom);
    let err = refused(&[
        &format!("{data_arg}/missing"),
        scratch.path("m.bkf").to_str().unwrap(),
    ]);
    assert!(err.contains("copy missing: no such key"), "{err}");
    assert_eq!(dir_bytes(&data), before, "copy changed the data directory");
}

#[test]
fn from_redisbloom_into_both_hosts() {
    let Some(rb) = Engine::start(Module::RedisBloom) else {
        return;
    };
    let mut crb = rb.client();
    // One Bloom key of 10+ layers, one plain; a grown cuckoo key and a small one; and two
    // keys of other types.
    assert_eq!(
        crb.cmd(&["BF.RESERVE", "layered", "0.01", "10"]),
        Resp::ok()
    );
    let layered = items("layered", 20_000);
    add(&mut crb, "BF.MADD", "layered", &layered);
    let Resp::Array(layers) = crb.cmd(&["BF.INFO", "layered", "FILTERS"]) else {
        panic!("BF.INFO")
    };
    assert!(matches!(layers[0], Resp::Int(n) if n >= 10), "{layers:?}");
    let plain = items("plain", 300);
    add(&mut crb, "BF.MADD", "plain", &plain);
    assert_eq!(
        crb.cmd(&["CF.RESERVE", "grown", "64", "EXPANSION", "2"]),
        Resp::ok()
    );
    let grown = items("grown", 3000);
    add(&mut crb, "CF.INSERT", "grown", &grown);
    let small = items("small", 100);
    add(&mut crb, "CF.INSERT", "small", &small);
    assert_eq!(crb.cmd(&["SET", "text", "x"]), Resp::ok());
    assert_eq!(crb.cmd(&["LPUSH", "list", "x"]), Resp::Int(1));
    let source = format!("redis://{}", rb.addr);

    let scratch = Scratch::new();
    let served = serve(&scratch.path("b"), &[]);
    let module = Engine::start(Module::Bloomkit);
    let valkey = Engine::start(Module::ValkeyBloomkit);
    let mut dests = vec![("bloomkit serve", served.addr.clone())];
    if let Some(m) = &module {
        dests.push(("the module in Redis", m.addr.clone()));
    }
    if let Some(v) = &valkey {
        dests.push(("the module in Valkey", v.addr.clone()));
    }
    for (host, addr) in dests {
        let summary = copied(&[&source, &format!("redis://{addr}")]);
        assert!(
            summary.contains("copied 4 keys")
                && summary.contains("skipped 2 keys (list: 1, string: 1)"),
            "{host}: {summary}"
        );
        let mut c = Conn::open(addr.as_str());
        all_found(&mut c, "BF.MEXISTS", "layered", &layered);
        all_found(&mut c, "BF.MEXISTS", "plain", &plain);
        all_found(&mut c, "CF.MEXISTS", "grown", &grown);
        all_found(&mut c, "CF.MEXISTS", "small", &small);
        for (command, key) in [
            ("BF.INFO", "layered"),
            ("BF.INFO", "plain"),
            ("CF.INFO", "grown"),
            ("CF.INFO", "small"),
        ] {
            assert_eq!(
                contents(&mut crb, command, key),
                contents(&mut c, command, key),
                "{host}: {key}"
            );
        }
        // The imported cuckoo key keeps counting and deleting.
        assert_eq!(c.cmd(&["CF.COUNT", "small", &small[0]]), Resp::Int(1));
        assert_eq!(c.cmd(&["CF.DEL", "small", &small[0]]), Resp::Int(1));
        // Through a file and back.
        let file = scratch.path(&format!("layered-{}.bkf", addr.replace(':', "-")));
        let file = file.to_str().unwrap();
        copied(&[&url(&rb.addr, "layered"), file]);
        // A file of RedisBloom's kind: query and info read it, the others say why not.
        let keys = scratch.keys_file("layered.txt", &layered);
        query_finds_all(file, &keys);
        let shown = bloomkit().args(["info", file]).output().unwrap();
        let shown = String::from_utf8_lossy(&shown.stdout).into_owned();
        assert!(
            shown.contains("redisbloom-bf") && shown.contains("MurmurHash64A"),
            "{shown}"
        );
        assert!(shown.matches("layer:").count() >= 10, "{shown}");
        let err = bloomkit().args(["insert", file, "x"]).output().unwrap();
        assert!(
            String::from_utf8_lossy(&err.stderr).contains("imported from RedisBloom"),
            "{}",
            String::from_utf8_lossy(&err.stderr)
        );
        copied(&[file, &url(&addr, "layered-again")]);
        all_found(&mut c, "BF.MEXISTS", "layered-again", &layered);
        assert_eq!(
            contents(&mut crb, "BF.INFO", "layered"),
            contents(&mut c, "BF.INFO", "layered-again")
        );
        // From this host on to a fresh bloomkit serve: the imported keys dump as bloomkit's.
        let next = serve(
            &scratch.path(&format!("next-{}", addr.replace(':', "-"))),
            &[],
        );
        let summary = copied(&[
            &format!("redis://{addr}"),
            &format!("redis://{}", next.addr),
        ]);
        assert!(summary.contains("copied 5 keys"), "{host}: {summary}");
        let mut cn = next.client();
        all_found(&mut cn, "BF.MEXISTS", "layered", &layered);
        all_found(&mut cn, "CF.MEXISTS", "grown", &grown);
        assert_eq!(
            contents(&mut crb, "CF.INFO", "grown"),
            contents(&mut cn, "CF.INFO", "grown")
        );
    }
    // Aging keys go only where AF.* is: into RedisBloom they are skipped and counted.
    let aging = serve(&scratch.path("aging"), &[]);
    add(
        &mut aging.client(),
        "AF.MADD",
        "recent",
        &items("recent", 10),
    );
    let summary = copied(&[&format!("redis://{}", aging.addr), &source]);
    assert!(
        summary.contains("copied 0 keys") && summary.contains("skipped 1 key (aging keys"),
        "{summary}"
    );
    assert_eq!(crb.cmd(&["EXISTS", "recent"]), Resp::Int(0));
    // bloomkit's own keys do not go into RedisBloom, and the error says why.
    add(&mut aging.client(), "BF.MADD", "ours", &items("ours", 10));
    let err = refused(&[&url(&aging.addr, "ours"), &url(&rb.addr, "ours")]);
    assert!(
        err.contains("copy ours:") && err.contains("the destination is not bloomkit"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 3, "{err}");
    assert!(keys(&mut crb, "*bloomkit-copy*").is_empty());
}

/// A TCP proxy to `upstream` for one client, which forwards replies until `limit` bytes
/// have gone through, then says so on the returned channel and forwards nothing more (the
/// client waits for the rest of its reply).
fn stalling_proxy(upstream: &str, limit: u64) -> (String, mpsc::Receiver<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let upstream = upstream.to_string();
    let (stalled, on_stall) = mpsc::channel();
    std::thread::spawn(move || {
        let (client, _) = listener.accept().unwrap();
        let server = TcpStream::connect(&upstream).unwrap();
        let (mut c_in, mut s_out) = (client.try_clone().unwrap(), server.try_clone().unwrap());
        std::thread::spawn(move || {
            let _ = std::io::copy(&mut c_in, &mut s_out);
        });
        let (mut s_in, mut c_out) = (server, client);
        let mut buf = vec![0u8; 1 << 16];
        let mut sent = 0u64;
        while sent < limit {
            let Ok(n) = s_in.read(&mut buf) else { return };
            if n == 0 || c_out.write_all(&buf[..n]).is_err() {
                return;
            }
            sent += n as u64;
        }
        let _ = stalled.send(());
        // Hold both connections open, forwarding nothing, until the test ends.
        std::thread::park();
        drop((s_in, c_out));
    });
    (addr, on_stall)
}

#[test]
fn a_large_redisbloom_filter_by_every_route_and_a_copy_killed_half_way() {
    let Some(rb) = Engine::start(Module::RedisBloom) else {
        return;
    };
    let mut crb = rb.client();
    assert_eq!(
        crb.cmd(&["BF.RESERVE", "big", "0.001", "200000000"]),
        Resp::ok()
    );
    let Resp::Array(size) = crb.cmd(&["BF.INFO", "big", "SIZE"]) else {
        panic!("BF.INFO")
    };
    assert!(matches!(size[0], Resp::Int(n) if n > 300 << 20), "{size:?}");
    let big = items("big", 100_000);
    add(&mut crb, "BF.MADD", "big", &big);
    let scratch = Scratch::new();
    let b = serve(&scratch.path("b"), &[]);
    let mut cb = b.client();

    // Killed once 40 MB of its replies (the header and a few chunks) came through.
    let (proxy, stalled) = stalling_proxy(&rb.addr, 40 << 20);
    let mut child = std::process::Command::new(common::served::binary())
        .args(["copy", &url(&proxy, "big"), &url(&b.addr, "big")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    stalled
        .recv_timeout(Duration::from_secs(600))
        .expect("the copy's first chunks");
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(
        cb.cmd(&["EXISTS", "big"]),
        Resp::Int(0),
        "a half-loaded key"
    );
    assert!(
        keys(&mut cb, "*")
            .iter()
            .all(|k| k == "{big}.bloomkit-copy"),
        "{:?}",
        keys(&mut cb, "*")
    );

    // Again, to the end: it finishes the job.
    let summary = copied(&[&url(&rb.addr, "big"), &url(&b.addr, "big")]);
    assert!(summary.contains("copied 1 key ("), "{summary}");
    all_found(&mut cb, "BF.MEXISTS", "big", &big);
    assert_eq!(
        contents(&mut crb, "BF.INFO", "big"),
        contents(&mut cb, "BF.INFO", "big")
    );
    assert_eq!(keys(&mut cb, "*"), ["big"]);

    // The same filter by RESTORE of RedisBloom's DUMP into both hosts, and by copy into
    // the module: every item found, the same BF.INFO.
    // (Redis compresses the payload's strings: the filter's 377 MiB of mostly unset bits
    // come to a few MB.)
    let payload = crb.cmd(&["DUMP", "big"]).bytes();
    let mut restore = |c: &mut Conn, key: &str| {
        let reply = c.cmd(&[b"RESTORE".as_slice(), key.as_bytes(), b"0", &payload]);
        assert_eq!(reply, Resp::ok(), "RESTORE {key}");
        all_found(c, "BF.MEXISTS", key, &big);
        assert_eq!(
            contents(&mut crb, "BF.INFO", "big"),
            contents(c, "BF.INFO", key)
        );
    };
    restore(&mut cb, "restored");
    cb.cmd(&["DEL", "restored", "big"]);
    if let Some(module) = Engine::start(Module::Bloomkit) {
        let mut cm = module.client();
        restore(&mut cm, "restored");
        cm.cmd(&["DEL", "restored"]);
        let summary = copied(&[&url(&rb.addr, "big"), &url(&module.addr, "big")]);
        assert!(summary.contains("copied 1 key ("), "{summary}");
        all_found(&mut cm, "BF.MEXISTS", "big", &big);
        assert_eq!(
            contents(&mut crb, "BF.INFO", "big"),
            contents(&mut cm, "BF.INFO", "big")
        );
    }
}

#[test]
fn a_hostile_server_costs_an_error_line_not_its_claims() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            // Whatever is asked: a string claiming 60 MiB, then three bytes and the end.
            let mut buf = [0u8; 4096];
            let _ = conn.read(&mut buf);
            let _ = conn.write_all(b"$62914560\r\nabc");
        }
    });
    let scratch = Scratch::new();
    let out = copy(&[&url(&addr, "k"), scratch.path("k.bkf").to_str().unwrap()]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("closed the connection in the middle of a reply"),
        "{err}"
    );
}
