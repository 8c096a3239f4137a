//! Encoding RESP: a [`Reply`] tree as RESP2 or RESP3, an array of bulk strings (what the
//! log's records hold), and how large a reply will be before it is encoded.
//!
//! The command layer answers with a [`Reply`], a plain tree; this module is where the server
//! turns it into bytes, for the protocol the connection negotiated. RESP2 clients get RESP3's
//! types downgraded as Redis downgrades them: booleans become integers, maps become flat
//! arrays, doubles become bulk strings, both nulls `$-1`/`*-1`.

use bloomkit_commands::{Protocol, Reply};

/// Appends `reply`, encoded for `protocol`, to `out`.
pub fn reply(reply: &Reply, protocol: Protocol, out: &mut Vec<u8>) {
    let resp3 = protocol == Protocol::Resp3;
    match reply {
        Reply::Ok => out.extend_from_slice(b"+OK\r\n"),
        Reply::Simple(s) => one_line(out, b'+', s.as_bytes()),
        Reply::Error(s) => one_line(out, b'-', s.as_bytes()),
        Reply::Integer(n) => integer(out, *n),
        Reply::Bulk(b) => bulk(out, b),
        Reply::Null | Reply::NullArray if resp3 => out.extend_from_slice(b"_\r\n"),
        Reply::Null => out.extend_from_slice(b"$-1\r\n"),
        Reply::NullArray => out.extend_from_slice(b"*-1\r\n"),
        Reply::Array(items) => {
            length_line(out, b'*', items.len() as u64);
            for item in items {
                self::reply(item, protocol, out);
            }
        }
        Reply::Map(pairs) => {
            if resp3 {
                length_line(out, b'%', pairs.len() as u64);
            } else {
                length_line(out, b'*', pairs.len() as u64 * 2);
            }
            for (key, value) in pairs {
                self::reply(key, protocol, out);
                self::reply(value, protocol, out);
            }
        }
        Reply::Bool(b) if resp3 => out.extend_from_slice(if *b { b"#t\r\n" } else { b"#f\r\n" }),
        Reply::Bool(b) => out.extend_from_slice(if *b { b":1\r\n" } else { b":0\r\n" }),
        Reply::PerProtocol {
            resp2,
            resp3: for_resp3,
        } => {
            self::reply(if resp3 { for_resp3 } else { resp2 }, protocol, out);
        }
        Reply::Double(x) => {
            let text = format_double(*x);
            if resp3 {
                out.push(b',');
                out.extend_from_slice(text.as_bytes());
                out.extend_from_slice(b"\r\n");
            } else {
                bulk(out, text.as_bytes());
            }
        }
    }
}

/// Appends the array of bulk strings `*<count>`, then `$<len>` and the bytes of each word:
/// a request as a client sends it, and what each record of the log holds.
pub fn array<'a>(out: &mut Vec<u8>, count: usize, words: impl Iterator<Item = &'a [u8]>) {
    length_line(out, b'*', count as u64);
    for word in words {
        bulk(out, word);
    }
}

/// Bytes of framing an element costs beyond its payload, in [`encoded_size`].
const FRAMING: usize = 16;

/// About how many bytes `reply` takes encoded (its payloads, and a few bytes of framing for
/// each element): enough to weigh a large reply against `maxmemory` without encoding it.
pub fn encoded_size(reply: &Reply) -> usize {
    match reply {
        Reply::Bulk(bytes) => bytes.len() + FRAMING,
        Reply::Simple(text) | Reply::Error(text) => text.len() + FRAMING,
        Reply::Array(items) => items.iter().map(encoded_size).sum::<usize>() + FRAMING,
        Reply::Map(pairs) => {
            pairs
                .iter()
                .map(|(k, v)| encoded_size(k) + encoded_size(v))
                .sum::<usize>()
                + FRAMING
        }
        Reply::PerProtocol { resp2, resp3 } => encoded_size(resp2).max(encoded_size(resp3)),
        _ => FRAMING,
    }
}

/// Redis prints doubles with up to 17 significant digits and `inf`/`-inf`/`nan`.
fn format_double(x: f64) -> String {
    if x.is_nan() {
        "nan".to_string()
    } else if x.is_infinite() {
        if x > 0.0 { "inf" } else { "-inf" }.to_string()
    } else {
        // Rust's shortest round-trip form: what Redis 7+ prints for most values.
        format!("{x}")
    }
}

/// A simple string or an error, whose text may quote a client's argument (`CONFIG SET`'s
/// parameter name, `EXPIRE`'s flag): a CR or LF in it would end the reply early and put the
/// client out of step with every later reply, so each becomes a space, as Redis's
/// `addReplyErrorLength` does.
fn one_line(out: &mut Vec<u8>, tag: u8, body: &[u8]) {
    out.push(tag);
    out.extend(
        body.iter()
            .map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b }),
    );
    out.extend_from_slice(b"\r\n");
}

fn bulk(out: &mut Vec<u8>, body: &[u8]) {
    length_line(out, b'$', body.len() as u64);
    out.extend_from_slice(body);
    out.extend_from_slice(b"\r\n");
}

/// `:<n>\r\n`.
fn integer(out: &mut Vec<u8>, n: i64) {
    if n < 0 {
        out.extend_from_slice(b":-");
        digits(out, n.unsigned_abs());
        out.extend_from_slice(b"\r\n");
    } else {
        length_line(out, b':', n as u64);
    }
}

/// Writes `<tag><n in decimal>\r\n` without allocating (the log's encoding runs under the
/// keyspace's locks, once per argument; a reply's, once per element).
fn length_line(out: &mut Vec<u8>, tag: u8, n: u64) {
    // Most lengths (argument counts, keys, items, small integers) have one or two digits.
    if n < 10 {
        out.extend_from_slice(&[tag, b'0' + n as u8, b'\r', b'\n']);
    } else if n < 100 {
        let (tens, ones) = (b'0' + (n / 10) as u8, b'0' + (n % 10) as u8);
        out.extend_from_slice(&[tag, tens, ones, b'\r', b'\n']);
    } else {
        out.push(tag);
        digits(out, n);
        out.extend_from_slice(b"\r\n");
    }
}

/// `n` in decimal.
fn digits(out: &mut Vec<u8>, mut n: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&buf[i..]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn wire(r: &Reply, protocol: Protocol) -> String {
        let mut out = Vec::new();
        reply(r, protocol, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn resp2_downgrades_resp3_types() {
        let map = Reply::Map(vec![(
            Reply::Simple("Capacity".into()),
            Reply::Integer(100),
        )]);
        assert_eq!(wire(&map, Protocol::Resp2), "*2\r\n+Capacity\r\n:100\r\n");
        assert_eq!(wire(&map, Protocol::Resp3), "%1\r\n+Capacity\r\n:100\r\n");
        assert_eq!(wire(&Reply::Bool(true), Protocol::Resp2), ":1\r\n");
        assert_eq!(wire(&Reply::Bool(false), Protocol::Resp2), ":0\r\n");
        assert_eq!(wire(&Reply::Bool(true), Protocol::Resp3), "#t\r\n");
        assert_eq!(wire(&Reply::Bool(false), Protocol::Resp3), "#f\r\n");
        assert_eq!(wire(&Reply::Null, Protocol::Resp2), "$-1\r\n");
        assert_eq!(wire(&Reply::NullArray, Protocol::Resp2), "*-1\r\n");
        assert_eq!(wire(&Reply::Null, Protocol::Resp3), "_\r\n");
        assert_eq!(wire(&Reply::NullArray, Protocol::Resp3), "_\r\n");
        assert_eq!(wire(&Reply::Double(0.5), Protocol::Resp2), "$3\r\n0.5\r\n");
        assert_eq!(wire(&Reply::Double(0.5), Protocol::Resp3), ",0.5\r\n");
        assert_eq!(
            wire(&Reply::Double(f64::INFINITY), Protocol::Resp3),
            ",inf\r\n"
        );
        let split = Reply::PerProtocol {
            resp2: Box::new(Reply::Integer(-1)),
            resp3: Box::new(Reply::Bool(false)),
        };
        assert_eq!(wire(&split, Protocol::Resp2), ":-1\r\n");
        assert_eq!(wire(&split, Protocol::Resp3), "#f\r\n");
    }

    #[test]
    fn lengths_of_every_width_are_written_in_decimal() {
        for n in [0, 9, 10, 99, 100, 101, 999, 1000, 65_535, u64::MAX] {
            let mut out = Vec::new();
            length_line(&mut out, b'$', n);
            assert_eq!(out, format!("${n}\r\n").into_bytes());
        }
    }

    #[test]
    fn integers_of_every_width() {
        for n in [
            0,
            7,
            10,
            99,
            100,
            12_345,
            -1,
            -10,
            i64::MAX,
            i64::MIN,
            i64::MIN + 1,
        ] {
            assert_eq!(
                wire(&Reply::Integer(n), Protocol::Resp2),
                format!(":{n}\r\n")
            );
        }
    }

    #[test]
    fn line_breaks_in_an_error_or_simple_string_cannot_split_the_reply() {
        let error = Reply::Error("ERR Unsupported option a\r\n+OK".into());
        assert_eq!(
            wire(&error, Protocol::Resp2),
            "-ERR Unsupported option a  +OK\r\n"
        );
        let simple = Reply::Simple("a\nb".into());
        assert_eq!(wire(&simple, Protocol::Resp3), "+a b\r\n");
    }

    #[test]
    fn nested_arrays_and_errors() {
        let r = Reply::Array(vec![
            Reply::Integer(1),
            Reply::bulk(&b"a\r\nb"[..]),
            Reply::error("ERR non scaling filter is full"),
        ]);
        assert_eq!(
            wire(&r, Protocol::Resp2),
            "*3\r\n:1\r\n$4\r\na\r\nb\r\n-ERR non scaling filter is full\r\n"
        );
    }

    #[test]
    fn an_array_of_words_decodes_back_to_them() {
        let words: Vec<Bytes> = ["BF.MADD", "k", "", "x\r\ny"]
            .iter()
            .chain(std::iter::repeat_n(&"item", 120))
            .map(|w| Bytes::from(w.to_string()))
            .collect();
        let mut out = Vec::new();
        array(&mut out, words.len(), words.iter().map(|w| &w[..]));
        assert!(out.starts_with(b"*124\r\n$7\r\nBF.MADD\r\n$1\r\nk\r\n$0\r\n\r\n"));
        assert_eq!(super::super::decode::array(&Bytes::from(out)), Ok(words));
    }

    /// Runs filter commands on one key's slot, as a host does, for their replies.
    fn run(slot: &mut Option<bloomkit_commands::Value>, line: &str) -> Reply {
        use bloomkit_commands::{Access, Ctx, Defaults, FilterCommand, Unlimited};
        let words: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
        let command = FilterCommand::parse(&words).unwrap().unwrap();
        let defaults = Defaults::default();
        let ctx = Ctx {
            defaults: &defaults,
            budget: &Unlimited,
            now_ms: &|| 0,
        };
        match command.access() {
            Access::Read => command.read(slot.as_ref(), &ctx),
            Access::Write => command.write(slot, &ctx).reply,
        }
    }

    #[test]
    fn filter_replies_in_both_protocols_as_redisbloom_sends_them() {
        let mut bloom = None;
        let add = run(&mut bloom, "BF.ADD k a");
        assert_eq!(wire(&add, Protocol::Resp3), "#t\r\n");
        assert_eq!(wire(&add, Protocol::Resp2), ":1\r\n");
        let info = run(&mut bloom, "BF.INFO k");
        assert!(wire(&info, Protocol::Resp3).starts_with("%8\r\n+Capacity\r\n:100\r\n"));
        assert!(wire(&info, Protocol::Resp2).starts_with("*16\r\n+Capacity\r\n:100\r\n"));
        let mut fixed = None;
        run(&mut fixed, "BF.RESERVE k 0.01 10 NONSCALING");
        let info = run(&mut fixed, "BF.INFO k");
        // RedisBloom's fields, then bloomkit's: an empty filter's fill and rate are 0, a
        // double (a bulk string in RESP2).
        let empty = "+Fill\r\n{0}\r\n+Estimated items\r\n:0\r\n+Estimated error rate\r\n{0}\r\n";
        let tail = |null: &str, zero: &str| {
            format!(
                "+Expansion rate\r\n{null}\r\n{}",
                empty.replace("{0}", zero)
            )
        };
        assert!(wire(&info, Protocol::Resp2).ends_with(&tail("$-1", "$1\r\n0")));
        assert!(wire(&info, Protocol::Resp3).ends_with(&tail("_", ",0")));
        let field = run(&mut fixed, "BF.INFO k expansion");
        assert_eq!(wire(&field, Protocol::Resp2), "*1\r\n$-1\r\n");
        assert_eq!(
            wire(&field, Protocol::Resp3),
            "%1\r\n+Expansion rate\r\n_\r\n"
        );
        let mut cuckoo = None;
        run(&mut cuckoo, "CF.ADD k a");
        assert_eq!(
            wire(&run(&mut cuckoo, "CF.ADDNX k a"), Protocol::Resp3),
            "#f\r\n"
        );
        assert_eq!(
            wire(&run(&mut cuckoo, "CF.INSERTNX k ITEMS a"), Protocol::Resp3),
            "*1\r\n:0\r\n"
        );
        assert_eq!(
            wire(&run(&mut cuckoo, "CF.COUNT k a"), Protocol::Resp3),
            ":1\r\n"
        );
    }

    #[test]
    fn the_size_estimate_covers_the_encoding() {
        let big = Reply::Array(vec![Reply::bulk(vec![b'x'; 1000]); 50]);
        let mut out = Vec::new();
        reply(&big, Protocol::Resp2, &mut out);
        assert!(encoded_size(&big) >= out.len());
        assert!(encoded_size(&big) < out.len() + 50 * FRAMING + FRAMING);
    }
}
