//! The module inside real engines (Debian's Redis 7.0 and Valkey 9): it loads, answers
//! RESP2 and RESP3, takes its defaults from its arguments and `CONFIG SET`, and behaves as a
//! data type of the engine (`TYPE`, `MEMORY USAGE`, `COPY`, `DUMP`/`RESTORE`, `WATCH`,
//! `MULTI`, ACLs, `maxmemory`, keys of other types).

use crate::common;

use common::{digest, Conn, Engine, Resp, Server};

fn ok() -> Resp {
    Resp::Simple("OK".into())
}

fn err(text: &str) -> Resp {
    Resp::Error(text.into())
}

/// Runs `test` on every engine here, each in its own directory, with the module loaded with
/// `module_args`.
fn on_each_engine(module_args: &[&str], extra: &[&str], test: impl Fn(&mut Server)) {
    for engine in Engine::available() {
        let dir = tempfile::tempdir().expect("a directory");
        let mut args = vec!["--enable-debug-command", "yes"];
        args.extend_from_slice(extra);
        let mut server = Server::start(engine, dir.path(), module_args, &args);
        eprintln!("{}: port {}", engine.name(), server.port);
        test(&mut server);
    }
}

#[test]
fn commands_answer_over_resp2_and_resp3() {
    on_each_engine(&[], &[], |server| {
        let mut c = server.conn();
        assert_eq!(c.line("BF.ADD fruit apple"), Resp::Int(1));
        assert_eq!(c.line("BF.ADD fruit apple"), Resp::Int(0));
        assert_eq!(
            c.line("BF.MEXISTS fruit apple pear"),
            Resp::Array(vec![Resp::Int(1), Resp::Int(0)])
        );
        assert_eq!(c.line("TYPE fruit"), Resp::Simple("MBbloom--".into()));
        assert_eq!(c.line("CF.ADD nuts pecan"), Resp::Int(1));
        assert_eq!(c.line("TYPE nuts"), Resp::Simple("MBbloomCF".into()));
        assert_eq!(c.line("CF.COUNT nuts pecan"), Resp::Int(1));
        assert_eq!(
            c.line("BF.INFO fruit CAPACITY"),
            Resp::Array(vec![Resp::Int(100)])
        );
        let info = c.line("BF.INFO fruit").array();
        assert_eq!(info[0], Resp::Simple("Capacity".into()));
        // RedisBloom's five fields, then bloomkit's three.
        assert_eq!(info.len(), 16);
        // Errors are RedisBloom's, prefixed or not as there.
        assert_eq!(
            c.line("BF.ADD fruit"),
            err("ERR wrong number of arguments for 'bf.add' command")
        );
        assert_eq!(c.line("CF.RESERVE n2 x"), err("Bad capacity"));
        assert_eq!(c.line("BF.RESERVE fruit 0.01 100"), err("ERR item exists"));
        assert_eq!(c.line("CF.DEL none a"), err("Not found"));
        // Binary items, NUL bytes included.
        assert_eq!(c.cmd(&[&b"BF.ADD"[..], b"bin", b"a\0b"]), Resp::Int(1));
        assert_eq!(c.cmd(&[&b"BF.EXISTS"[..], b"bin", b"a\0b"]), Resp::Int(1));
        assert_eq!(c.cmd(&[&b"BF.EXISTS"[..], b"bin", b"a"]), Resp::Int(0));

        // RESP3: booleans and maps where RedisBloom sends them.
        let mut r3 = server.conn();
        assert!(matches!(r3.line("HELLO 3"), Resp::Map(_)));
        assert_eq!(r3.line("BF.ADD fruit kiwi"), Resp::Bool(true));
        assert_eq!(r3.line("BF.EXISTS fruit kiwi"), Resp::Bool(true));
        assert_eq!(r3.line("CF.COUNT nuts pecan"), Resp::Int(1));
        assert_eq!(r3.line("BF.CARD fruit"), Resp::Int(2));
        let Resp::Map(pairs) = r3.line("BF.INFO fruit") else {
            panic!("BF.INFO is a map in RESP3")
        };
        assert_eq!(pairs[0], (Resp::Simple("Capacity".into()), Resp::Int(100)));
        assert_eq!(
            pairs[4],
            (Resp::Simple("Expansion rate".into()), Resp::Int(2))
        );
        assert_eq!(
            r3.line("BF.INFO fruit ITEMS"),
            Resp::Map(vec![(
                Resp::Simple("Number of items inserted".into()),
                Resp::Int(2)
            )])
        );
        assert_eq!(r3.line("BF.RESERVE ns 0.01 10 NONSCALING"), ok());
        assert_eq!(
            r3.line("BF.INFO ns EXPANSION"),
            Resp::Map(vec![(Resp::Simple("Expansion rate".into()), Resp::Nil)])
        );
        let Resp::Map(cf) = r3.line("CF.INFO nuts") else {
            panic!("CF.INFO is a map in RESP3")
        };
        // RedisBloom's eight fields, then bloomkit's two.
        assert_eq!(cf.len(), 10);
    });
}

#[test]
fn keys_of_other_types_answer_as_redisbloom_answers_them() {
    on_each_engine(&[], &[], |server| {
        let mut c = server.conn();
        assert_eq!(c.line("SET s x"), ok());
        assert_eq!(c.line("BF.EXISTS s a"), Resp::Int(0));
        assert_eq!(c.line("CF.EXISTS s a"), Resp::Int(0));
        let wrongtype = err("WRONGTYPE Operation against a key holding the wrong kind of value");
        for line in [
            "BF.ADD s a",
            "BF.CARD s",
            "CF.ADD s a",
            "BF.INFO s",
            "CF.INFO s",
        ] {
            assert_eq!(c.line(line), wrongtype, "{line}");
        }
        assert_eq!(
            c.line("GET s"),
            Resp::Bulk(b"x".to_vec()),
            "the string is untouched"
        );
        // The other family's key.
        assert_eq!(c.line("BF.ADD b a"), Resp::Int(1));
        assert_eq!(c.line("CF.ADD b a"), wrongtype);
        assert_eq!(c.line("CF.EXISTS b a"), Resp::Int(0));
        assert_eq!(c.line("BF.EXISTS b a"), Resp::Int(1));
    });
}

#[test]
fn module_arguments_and_config_set_the_defaults() {
    let args = [
        "ERROR_RATE",
        "0.001",
        "INITIAL_SIZE",
        "400",
        "CF_MAX_EXPANSIONS",
        "8",
        "cf-bucket-size",
        "4",
        "bf-layout",
        "blocked",
    ];
    on_each_engine(&args, &[], |server| {
        let mut c = server.conn();
        c.line("BF.ADD k a");
        assert_eq!(
            c.line("BF.INFO k CAPACITY"),
            Resp::Array(vec![Resp::Int(400)])
        );
        c.line("CF.ADD c a");
        let info = c.line("CF.INFO c").array();
        assert_eq!(info[10], Resp::Simple("Bucket size".into()));
        assert_eq!(info[11], Resp::Int(4));
        // Configuration names are prefixed with the module's on Redis 7 and Valkey.
        assert_eq!(
            c.line("CONFIG GET bf.bf-error-rate"),
            Resp::Array(vec![
                Resp::Bulk(b"bf.bf-error-rate".to_vec()),
                Resp::Bulk(b"0.001".to_vec())
            ])
        );
        assert_eq!(
            c.line("CONFIG GET bf.cf-max-expansions").array()[1].text(),
            "8"
        );
        assert_eq!(c.line("CONFIG SET bf.bf-initial-size 7"), ok());
        c.line("BF.ADD k2 a");
        assert_eq!(
            c.line("BF.INFO k2 CAPACITY"),
            Resp::Array(vec![Resp::Int(7)])
        );
        assert_eq!(
            c.line("BF.INFO k CAPACITY"),
            Resp::Array(vec![Resp::Int(400)])
        );
        let refused = c.line("CONFIG SET bf.cf-bucket-size 256");
        let Resp::Error(text) = refused else {
            panic!("{refused:?}")
        };
        assert!(
            text.contains("argument must be between 1 and 255 inclusive"),
            "{text}"
        );
        assert_eq!(
            c.line("CONFIG GET bf.cf-bucket-size").array()[1].text(),
            "4"
        );
        // bf-layout blocked: one cache line per item, a little more memory than classic
        // (`MEMORY USAGE`: `BF.INFO`'s Size is RedisBloom's formula, the same for both).
        let size = |c: &mut Conn, key: &str| c.line(&format!("MEMORY USAGE {key}")).int();
        assert_eq!(c.line("BF.RESERVE blocked 0.01 100000"), ok());
        assert_eq!(
            c.line("BF.RESERVE classic 0.01 100000 LAYOUT CLASSIC"),
            ok()
        );
        assert!(size(&mut c, "blocked") > size(&mut c, "classic"));
        assert_eq!(c.line("CONFIG SET bf.bf-layout classic"), ok());
        // A key name as long as "classic": `MEMORY USAGE` counts the name too.
        assert_eq!(c.line("BF.RESERVE current 0.01 100000"), ok());
        assert_eq!(size(&mut c, "current"), size(&mut c, "classic"));
        let all = c.line("CONFIG GET bf.*").array();
        assert_eq!(all.len(), 2 * bloomkit_commands::PARAMETERS.len());
    });
}

#[test]
fn bad_module_arguments_keep_the_module_out_with_a_reason() {
    for engine in Engine::available() {
        let dir = tempfile::tempdir().expect("a directory");
        for (args, expected) in [
            (
                &["EXPANSIONS", "2"][..],
                "bloomkit: not loaded: unknown module argument 'EXPANSIONS'",
            ),
            (
                &["ERROR_RATE", "2"][..],
                "bloomkit: not loaded: module argument ERROR_RATE 2: argument must be between 0 and 1 exclusive",
            ),
            (&["ERROR_RATE"][..], "NAME VALUE pairs"),
        ] {
            let mut all = vec![
                "--loadmodule".to_string(),
                common::module().display().to_string(),
            ];
            all.extend(args.iter().map(|a| a.to_string()));
            let mut server = Server::start_raw_unchecked(engine, dir.path(), all);
            assert!(
                server.wait_exit().is_some(),
                "{}: the engine starts without the module",
                engine.name()
            );
            let log = server.log();
            assert!(log.contains(expected), "{}: {log}", engine.name());
        }
    }
}

#[test]
fn the_engine_sees_the_filters_memory_and_flags() {
    on_each_engine(&[], &[], |server| {
        let mut c = server.conn();
        let used = |c: &mut Conn| -> i64 {
            let info = c.line("INFO memory").text();
            info.lines()
                .find_map(|l| l.strip_prefix("used_memory:"))
                .and_then(|n| n.trim().parse().ok())
                .expect("used_memory")
        };
        let before = used(&mut c);
        // 10,000,000 items at 1% (the first layer built at 0.5%, as RedisBloom's): 13.8 MB.
        assert_eq!(c.line("BF.RESERVE big 0.01 10000000"), ok());
        let size = c.line("BF.INFO big SIZE").array()[0].int();
        assert!(size > 13_000_000, "BF.INFO Size {size}");
        let grown = used(&mut c) - before;
        assert!(
            grown >= size,
            "used_memory grew by {grown}, the filter holds {size}"
        );
        let usage = c.line("MEMORY USAGE big").int();
        assert!(
            (size..size + 4096).contains(&usage),
            "MEMORY USAGE {usage}, Size {size}"
        );
        // COPY gives an equal, independent filter.
        assert_eq!(c.line("BF.ADD big a"), Resp::Int(1));
        assert_eq!(c.line("COPY big copy"), Resp::Int(1));
        assert_eq!(digest(&mut c, "big"), digest(&mut c, "copy"));
        assert_eq!(c.line("BF.ADD copy b"), Resp::Int(1));
        assert_ne!(digest(&mut c, "big"), digest(&mut c, "copy"));
        assert_eq!(c.line("BF.EXISTS big b"), Resp::Int(0));
        assert_eq!(c.line("DEL copy big"), Resp::Int(2));
        assert!(used(&mut c) - before < 1_000_000, "freed");

        // maxmemory: a filter that would pass it is refused before it is allocated.
        let now = used(&mut c);
        c.cmd(&[
            "CONFIG",
            "SET",
            "maxmemory",
            &(now + 50_000_000).to_string(),
        ]);
        assert_eq!(
            c.line("BF.RESERVE huge 0.01 100000000"),
            err("OOM command not allowed when used memory > 'maxmemory'.")
        );
        assert_eq!(c.line("EXISTS huge"), Resp::Int(0));
        assert_eq!(c.line("BF.RESERVE fits 0.01 1000000"), ok());
        c.line("CONFIG SET maxmemory 0");

        // What Redis knows of each command: flags and keys from the command table.
        let info = c.line("COMMAND INFO bf.add bf.exists cf.del").array();
        let flags = |entry: &Resp| -> Vec<String> {
            entry.array()[2].array().iter().map(|f| f.text()).collect()
        };
        assert_eq!(flags(&info[0]), ["write", "denyoom", "module"]);
        assert_eq!(flags(&info[1]), ["readonly", "module"]);
        assert_eq!(flags(&info[2]), ["write", "module"]);
        for entry in &info {
            let e = entry.array();
            assert_eq!((e[3].int(), e[4].int(), e[5].int()), (1, 1, 1));
        }
        assert_eq!(
            c.line("COMMAND GETKEYS BF.MADD users a b"),
            Resp::Array(vec![Resp::Bulk(b"users".to_vec())])
        );
        let registered = c.line("COMMAND LIST FILTERBY MODULE bf").array().len();
        assert_eq!(registered, bloomkit_commands::table::FILTER_COMMANDS.len());
    });
}

#[test]
fn transactions_watch_and_acls_work_on_filters() {
    on_each_engine(&[], &[], |server| {
        let mut c = server.conn();
        let mut other = server.conn();
        assert_eq!(c.line("MULTI"), ok());
        assert_eq!(c.line("BF.ADD t a"), Resp::Simple("QUEUED".into()));
        assert_eq!(c.line("BF.EXISTS t a"), Resp::Simple("QUEUED".into()));
        assert_eq!(c.line("CF.ADD t a"), Resp::Simple("QUEUED".into()));
        let results = c.line("EXEC").array();
        assert_eq!(results[..2], [Resp::Int(1), Resp::Int(1)]);
        assert!(results[2].is_error());

        // WATCH fires when the filter changes, not when a command leaves it as it was.
        assert_eq!(c.line("WATCH t"), ok());
        assert_eq!(other.line("BF.ADD t a"), Resp::Int(0));
        assert_eq!(other.line("BF.EXISTS t a"), Resp::Int(1));
        c.line("MULTI");
        c.line("BF.CARD t");
        assert_eq!(c.line("EXEC"), Resp::Array(vec![Resp::Int(1)]));
        c.line("WATCH t");
        assert_eq!(other.line("BF.ADD t b"), Resp::Int(1));
        c.line("MULTI");
        c.line("BF.CARD t");
        assert_eq!(c.line("EXEC"), Resp::Nil);

        // An ACL key pattern applies to filter commands through their key positions.
        assert_eq!(c.line("ACL SETUSER app on >secret ~bf:* +@all"), ok());
        let mut app = server.conn();
        assert_eq!(app.line("AUTH app secret"), ok());
        assert_eq!(app.line("BF.ADD bf:users alice"), Resp::Int(1));
        let denied = app.line("BF.ADD users alice");
        assert!(
            matches!(&denied, Resp::Error(e) if e.starts_with("NOPERM")),
            "{denied:?}"
        );
        assert_eq!(c.line("EXISTS users"), Resp::Int(0));
    });
}

/// DUMP payloads written by this module (encoding 1000, Redis 7.0's RDB 10) restore and
/// answer as they did: a format change that breaks stored data fails here.
#[test]
fn golden_dumps_restore() {
    let hex = |name: &str| -> Vec<u8> {
        let path = format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).expect(&path);
        (0..text.trim().len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&text[i..i + 2], 16).expect("hex"))
            .collect()
    };
    on_each_engine(&[], &[], |server| {
        let mut c = server.conn();
        let bloom = hex("dump-bloom-encoding-1000.hex");
        let cuckoo = hex("dump-cuckoo-encoding-1000.hex");
        assert_eq!(c.cmd(&[&b"RESTORE"[..], b"b", b"0", &bloom]), ok());
        assert_eq!(c.cmd(&[&b"RESTORE"[..], b"c", b"0", &cuckoo]), ok());
        assert_eq!(c.line("TYPE b"), Resp::Simple("MBbloom--".into()));
        assert_eq!(c.line("TYPE c"), Resp::Simple("MBbloomCF".into()));
        for family in ["BF", "CF"] {
            let key = if family == "BF" { "b" } else { "c" };
            for item in [&b"apple"[..], b"banana", b"a\0b"] {
                let exists = format!("{family}.EXISTS");
                assert_eq!(
                    c.cmd(&[exists.as_bytes(), key.as_bytes(), item]),
                    Resp::Int(1)
                );
            }
            assert_eq!(
                c.line(&format!("{family}.EXISTS {key} cherry")),
                Resp::Int(0)
            );
        }
        assert_eq!(c.line("BF.CARD b"), Resp::Int(3));
        assert_eq!(
            c.line("BF.INFO b CAPACITY"),
            Resp::Array(vec![Resp::Int(100)])
        );

        // A damaged payload is refused, and the log says why.
        let mut damaged = bloom.clone();
        let at = damaged.len() / 2;
        damaged[at] ^= 0x40;
        let reply = c.cmd(&[&b"RESTORE"[..], b"d", b"0", &damaged]);
        assert!(reply.is_error(), "{reply:?}");
        assert_eq!(c.line("EXISTS d"), Resp::Int(0));
    });
}

/// A restore whose last chunk does not decode removes its key (the command empties the
/// key's slot, which the module then deletes), in both families; a good restore answers
/// as its source does.
#[test]
fn a_restore_whose_last_chunk_is_damaged_removes_its_key() {
    on_each_engine(&[], &[], |server| {
        let mut c = server.conn();
        for family in ["BF", "CF"] {
            for i in 0..500 {
                c.line(&format!("{family}.ADD src {family}{i}"));
            }
            let mut chunks = Vec::new();
            let mut iter = 0;
            loop {
                let Resp::Array(reply) = c.line(&format!("{family}.SCANDUMP src {iter}")) else {
                    panic!("SCANDUMP answers an array");
                };
                iter = reply[0].int();
                if iter == 0 {
                    break;
                }
                chunks.push((iter, reply[1].bytes()));
            }
            assert!(chunks.len() >= 2, "{family}: a header and data");
            let loadchunk = format!("{family}.LOADCHUNK");
            for (dst, damaged) in [("good", false), ("bad", true)] {
                for (n, (iter, chunk)) in chunks.iter().enumerate() {
                    let mut chunk = chunk.clone();
                    let last = n + 1 == chunks.len();
                    if damaged && last {
                        *chunk.last_mut().expect("a byte") ^= 0xff;
                    }
                    let reply = c.cmd(&[
                        loadchunk.as_bytes(),
                        dst.as_bytes(),
                        iter.to_string().as_bytes(),
                        &chunk,
                    ]);
                    assert_eq!(
                        reply.is_error(),
                        damaged && last,
                        "{family} {dst}: {reply:?}"
                    );
                }
            }
            assert_eq!(
                c.line(&format!("{family}.EXISTS good {family}7")),
                Resp::Int(1)
            );
            assert_eq!(c.line("EXISTS bad"), Resp::Int(0), "{family}");
            c.line("DEL src good");
        }
    });
}

/// RedisBloom's values, under the same type names, are imported (`tests/it/import.rs`); one
/// that does not decode is refused, and the log names the key, RedisBloom's encoding and
/// the cause. RedisBloom refuses this module's values.
#[test]
fn a_redisbloom_value_that_does_not_import_is_named_in_the_log() {
    let dir = tempfile::tempdir().expect("a directory");
    let Some(theirs) = Server::redisbloom(&dir.path().join("redisbloom"), &[]) else {
        return;
    };
    let mut t = theirs.conn();
    t.line("BF.ADD k a");
    t.line("CF.ADD c a");
    let bloom = t.line("DUMP k").bytes();
    let cuckoo = t.line("DUMP c").bytes();
    let ours = Server::start(Engine::Redis, &dir.path().join("ours"), &[], &[]);
    let mut o = ours.conn();
    // And RedisBloom refuses this module's.
    o.line("BF.ADD mine a");
    let mine = o.line("DUMP mine").bytes();
    let refused = t.cmd(&[&b"RESTORE"[..], b"mine", b"0", &mine]);
    assert!(refused.is_error(), "{refused:?}");
    for (key, mut payload, type_name) in [("k", bloom, "MBbloom--"), ("c", cuckoo, "MBbloomCF")] {
        // The value's first field (the item count, or the number of links) made absurd,
        // under a right checksum.
        let n = payload.len();
        payload[11] = 0xff;
        let crc = bloomkit::redisbloom::crc64_redis(&payload[..n - 8]);
        payload[n - 8..].copy_from_slice(&crc.to_le_bytes());
        let reply = o.cmd(&[&b"RESTORE"[..], key.as_bytes(), b"0", &payload]);
        assert_eq!(reply, Resp::Error("ERR Bad data format".into()));
        let log = ours.log();
        let expected = format!(
            "bloomkit: cannot load the {type_name} value of key '{key}': this {type_name} value \
             in RedisBloom's encoding (version"
        );
        assert!(log.contains(&expected), "{log}");
    }
}

/// Client bytes the module writes to the engine's log (here a `RESTORE`'s key name, when
/// the value does not load) are quoted: a newline in them cannot start a line of the
/// client's choosing in the log, and a `%` is not a format.
#[test]
fn client_bytes_in_the_log_cannot_forge_a_line() {
    on_each_engine(&[], &[], |server| {
        let mut c = server.conn();
        for i in 0..200 {
            c.line(&format!("BF.ADD src {i}"));
        }
        let payload = c.cmd(&["DUMP", "src"]).bytes();
        // Damaged in the filter's bytes, past the engine's checksum (skipped below), so
        // that the module's load refuses it and logs why, naming the key.
        let mut damaged = payload.clone();
        let at = damaged.len() / 2;
        damaged[at] ^= 0x40;
        assert_eq!(c.line("DEBUG SET-SKIP-CHECKSUM-VALIDATION 1"), ok());
        let forged = "12345:M 01 Jan 2026 00:00:00.000 # forged by a client %s%n";
        let key = format!("k\n{forged}");
        let reply = c.cmd(&[&b"RESTORE"[..], key.as_bytes(), b"0", &damaged]);
        assert!(reply.is_error(), "{reply:?}");
        let log = server.log();
        assert!(
            log.contains(&format!("of key 'k\\n{forged}'")),
            "the key, quoted: {log}"
        );
        assert!(
            !log.lines().any(|line| line.starts_with("12345:M")),
            "a forged line: {log}"
        );
    });
}
