//! `BF.LOADCHUNK` and `CF.LOADCHUNK` through the command layer (`bloomkit-commands`):
//! whatever chunks arrive, the answer is `OK` or an error, never a panic, and memory stays
//! within what the budget admits or the chunks themselves carry. A key that ends up holding a finished filter
//! must answer every other command.
//!
//! Two kinds of input: raw chunks (iterator and bytes from the fuzzer), and a real dump
//! of a small filter with the fuzzer's byte flips, truncation and chunk boundaries, which
//! reaches the checks behind a well-formed header.
//!
//! Run: `cargo +nightly fuzz run loadchunk` from the repository root.
#![no_main]

use std::sync::OnceLock;

use bloomkit_commands::{Access, Budget, Ctx, Defaults, FilterCommand, Reply, Value};
use bytes::Bytes;
use libfuzzer_sys::fuzz_target;

/// `--maxmemory` of 64 MiB beyond what is used: a hostile header cannot make the target
/// hold more than that (and the chunks it is sent are far smaller).
struct Limit;

impl Budget for Limit {
    fn within_maxmemory(&self, extra_bytes: usize) -> bool {
        extra_bytes <= 64 << 20
    }
    fn machine_available(&self) -> Option<usize> {
        Some(256 << 20)
    }
}

fn run(slot: &mut Option<Value>, args: Vec<Bytes>) -> Reply {
    let defaults = Defaults::default();
    let ctx = Ctx {
        defaults: &defaults,
        budget: &Limit,
        now_ms: &|| 0,
    };
    let words: Vec<&[u8]> = args.iter().map(|a| &a[..]).collect();
    match FilterCommand::parse(&words) {
        None => panic!("not a filter command: {args:?}"),
        Some(Err(reply)) => reply,
        Some(Ok(cmd)) => match cmd.access() {
            Access::Read => cmd.read(slot.as_ref(), &ctx),
            Access::Write => cmd.write(slot, &ctx).reply,
        },
    }
}

fn cmd(words: &[&[u8]]) -> Vec<Bytes> {
    words.iter().map(|w| Bytes::copy_from_slice(w)).collect()
}

/// A real dump of a small filter of each family: its `SCANDUMP` chunks, joined.
fn real_dump(family: &str) -> &'static (Vec<u8>, usize) {
    static DUMPS: OnceLock<[(Vec<u8>, usize); 2]> = OnceLock::new();
    let dumps = DUMPS.get_or_init(|| {
        ["BF", "CF"].map(|family| {
            let mut slot = None;
            for i in 0..300 {
                let add = format!("{family}.ADD k {i}");
                run(&mut slot, cmd(&add.split(' ').map(str::as_bytes).collect::<Vec<_>>()));
            }
            let mut bytes = Vec::new();
            let mut header_len = 0;
            let mut iter = 0i64;
            loop {
                let scandump = format!("{family}.SCANDUMP k {iter}");
                let reply = run(&mut slot, cmd(&scandump.split(' ').map(str::as_bytes).collect::<Vec<_>>()));
                let Reply::Array(pair) = reply else { panic!("{reply:?}") };
                let (Reply::Integer(next), data) = (&pair[0], &pair[1]) else { panic!() };
                if *next == 0 {
                    break;
                }
                let Reply::Bulk(data) = data else { panic!() };
                if iter == 0 {
                    header_len = data.len();
                }
                bytes.extend_from_slice(data);
                iter = *next;
            }
            (bytes, header_len)
        })
    });
    &dumps[usize::from(family == "CF")]
}

fn load(slot: &mut Option<Value>, family: &str, iter: i64, data: &[u8]) -> Reply {
    let name = format!("{family}.LOADCHUNK");
    let iter = iter.to_string();
    run(slot, cmd(&[name.as_bytes(), b"x", iter.as_bytes(), data]))
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let family = if mode & 1 == 0 { "BF" } else { "CF" };
    let mut slot: Option<Value> = None;
    if mode & 2 == 0 {
        // Raw chunks: (iterator: i16, length: u8, bytes) records.
        let mut r = rest;
        while r.len() >= 3 {
            let iter = i16::from_le_bytes([r[0], r[1]]) as i64;
            let len = (r[2] as usize).min(r.len() - 3);
            let chunk = &r[3..3 + len];
            r = &r[3 + len..];
            let reply = load(&mut slot, family, iter, chunk);
            assert!(matches!(reply, Reply::Ok | Reply::Error(_)), "{reply:?}");
        }
    } else {
        // A real dump, flipped at (position: u16, xor: u8) triples, cut into pieces of a
        // size from the input, maybe truncated.
        let (dump, header_len) = real_dump(family);
        let mut bytes = dump.clone();
        let (params, flips) = rest.split_at(rest.len().min(2));
        for f in flips.chunks_exact(3) {
            let at = u16::from_le_bytes([f[0], f[1]]) as usize % bytes.len();
            bytes[at] ^= f[2];
        }
        let piece = 1 + params.first().copied().unwrap_or(0) as usize * 37;
        if let Some(&cut) = params.get(1) {
            if cut & 0x80 != 0 {
                bytes.truncate(bytes.len() * (cut & 0x7f) as usize / 128);
            }
        }
        let (header, body) = bytes.split_at((*header_len).min(bytes.len()));
        let _ = load(&mut slot, family, 1, header);
        let mut start = 0usize;
        for chunk in body.chunks(piece) {
            let iter = (start + chunk.len() + 1) as i64;
            let reply = load(&mut slot, family, iter, chunk);
            assert!(matches!(reply, Reply::Ok | Reply::Error(_)), "{reply:?}");
            start += chunk.len();
        }
    }
    // The key answers every command, whatever it holds now.
    for line in [
        "EXISTS x probe",
        "INFO x",
        "SCANDUMP x 0",
        "SCANDUMP x 1",
        "ADD x probe",
    ] {
        let full = format!("{family}.{line}");
        let _ = run(&mut slot, cmd(&full.split(' ').map(str::as_bytes).collect::<Vec<_>>()));
    }
    if let Some(value) = &slot {
        assert!(value.memory_bytes() < 128 << 20);
        // What a snapshot stores reads back to the same value.
        let back = Value::from_bytes(&value.to_bytes()).expect("a stored value reads back");
        assert_eq!(&back, value);
    }
});
