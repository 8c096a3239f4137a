//! Keys moved between `bloomkit serve` and Redis/Valkey with this module by `DUMP` and
//! `RESTORE`, both ways, every kind of value: scaling, non-scaling and classic-layout Bloom
//! keys, cuckoo keys with deletions, aging keys, keys imported from RedisBloom, a key still
//! arriving by `LOADCHUNK`. Each arrives answering and reporting as it did, and goes back
//! into the same bytes.
//!
//! `bloomkit serve` is this build's CLI binary (`target/<profile>/bloomkit`), which `cargo
//! test --workspace` builds; run alone, `cargo build --release -p bloomkit-cli` first.

use crate::common;

use std::path::PathBuf;

use bloomkit_testkit::{golden, skip, Served};
use common::{Conn, Engine, Resp, Server};

fn bloomkit_binary() -> Option<PathBuf> {
    let exe = std::env::current_exe().expect("the test binary's path");
    let found = exe
        .parent()
        .and_then(|deps| deps.parent())
        .map(|profile| profile.join("bloomkit"))
        .filter(|p| p.exists());
    skip::require(
        found,
        "the bloomkit CLI (cargo build --release -p bloomkit-cli)",
    )
}

/// Keys of every kind, made the same way on `c`.
fn fill(c: &mut Conn) -> Vec<&'static str> {
    for i in 0..400 {
        c.line(&format!("BF.ADD scaling {i}"));
        c.line(&format!("CF.ADD cuckoo {i}"));
    }
    for i in 0..50 {
        c.line(&format!("CF.DEL cuckoo {i}"));
    }
    c.line("BF.RESERVE nonscaling 0.001 1000 NONSCALING");
    c.line("BF.MADD nonscaling a b c");
    // No timer (PERIOD 0), so that nothing rotates while the test compares.
    c.line("AF.RESERVE aging 0.01 300 GENERATIONS 3 PERIOD 0 AT 1000");
    for i in 0..200 {
        c.line(&format!("AF.ADD aging {i}"));
    }
    c.line("AF.ROTATE aging AT 2000");
    c.line("AF.MADD aging a b c");
    for (key, file) in [
        ("imported-bf", "bf-layers.dump"),
        ("imported-cf", "cf-grown.dump"),
    ] {
        let reply = c.cmd::<&[u8]>(&[b"RESTORE", key.as_bytes(), b"0", &golden::read(file)]);
        assert_eq!(reply, Resp::Simple("OK".into()), "{key}");
    }
    let chunks = golden::chunks("bf-small.scandump");
    let (iter, header) = &chunks[0];
    c.cmd::<&[u8]>(&[
        b"BF.LOADCHUNK",
        &b"arriving"[..],
        iter.to_string().as_bytes(),
        header,
    ]);
    vec![
        "scaling",
        "cuckoo",
        "nonscaling",
        "aging",
        "imported-bf",
        "imported-cf",
        "arriving",
    ]
}

/// A reply with its doubles as numbers: the hosts print them to different digits (the
/// engine's `%.17g`, the server's shortest form).
fn numbers(r: Resp) -> Resp {
    match r {
        Resp::Bulk(b) => match std::str::from_utf8(&b)
            .ok()
            .and_then(|t| t.parse::<f64>().ok())
        {
            Some(x) => Resp::Double(format!("{x}")),
            None => Resp::Bulk(b),
        },
        Resp::Array(items) => Resp::Array(items.into_iter().map(numbers).collect()),
        other => other,
    }
}

/// What a key answers: its type, `INFO` (an error while it is arriving), and some items.
fn state(c: &mut Conn, key: &str) -> Vec<Resp> {
    state_as_printed(c, key).into_iter().map(numbers).collect()
}

fn state_as_printed(c: &mut Conn, key: &str) -> Vec<Resp> {
    let ty = c.cmd(&["TYPE", key]);
    let family = match ty.text().as_str() {
        "MBbloomCF" => "CF",
        bloomkit_commands::value::AGING_TYPE_NAME => "AF",
        _ => "BF",
    };
    vec![
        ty,
        c.cmd(&[format!("{family}.INFO"), key.to_string()]),
        c.cmd(&[
            format!("{family}.MEXISTS"),
            key.to_string(),
            "1".into(),
            "60".into(),
            "399".into(),
            "a".into(),
            "b0".into(),
            "e1".into(),
            "nope".into(),
        ]),
    ]
}

#[test]
fn dumps_restore_between_the_server_and_the_module_both_ways() {
    let Some(binary) = bloomkit_binary() else {
        return;
    };
    for engine in Engine::available() {
        let dir = tempfile::tempdir().expect("a directory");
        let served = Served::start(&binary, &dir.path().join("serve"), &[]);
        let module = Server::start(engine, &dir.path().join("module"), &[], &[]);
        let (mut s, mut m) = (served.client(), module.conn());
        let keys = fill(&mut s);
        fill(&mut m);
        for key in keys {
            let context = format!("{} {key}", engine.name());
            let from_server = s.cmd(&["DUMP", key]).bytes();
            let from_module = m.cmd(&["DUMP", key]).bytes();
            // Server to module.
            let reply = m.cmd::<&[u8]>(&[b"RESTORE", &b"from-server"[..], b"0", &from_server]);
            assert_eq!(reply, Resp::Simple("OK".into()), "{context}");
            assert_eq!(
                state(&mut m, "from-server"),
                state(&mut s, key),
                "{context}"
            );
            // Module to server.
            let reply = s.cmd::<&[u8]>(&[b"RESTORE", &b"from-module"[..], b"0", &from_module]);
            assert_eq!(reply, Resp::Simple("OK".into()), "{context}");
            assert_eq!(
                state(&mut s, "from-module"),
                state(&mut m, key),
                "{context}"
            );
            // And back: the server's own bytes again.
            let back = m.cmd(&["DUMP", "from-server"]).bytes();
            s.cmd::<&[u8]>(&[b"RESTORE", &b"back"[..], b"0", &back]);
            assert_eq!(s.cmd(&["DUMP", "back"]).bytes(), from_server, "{context}");
            s.line("DEL from-module back");
            m.line("DEL from-server");
        }
    }
}
