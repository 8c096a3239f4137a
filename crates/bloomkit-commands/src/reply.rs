//! What a command answers, independent of the wire.
//!
//! The command layer returns a [`Reply`]; the connection encodes it as RESP2 or RESP3
//! (after `HELLO 3`). Inside a Redis module the same values would map onto
//! `RedisModule_ReplyWith*`, which downgrades RESP3 types for RESP2 clients exactly as
//! [`Reply::encode`] does: booleans become integers, maps become flat arrays, doubles
//! become bulk strings.

use bytes::Bytes;

/// The protocol a connection speaks: RESP2 until the client sends `HELLO 3`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Protocol {
    /// RESP2, every client's starting point.
    #[default]
    Resp2,
    /// RESP3, after `HELLO 3`.
    Resp3,
}

/// A reply value.
#[derive(Clone, Debug, PartialEq)]
pub enum Reply {
    /// `+OK`.
    Ok,
    /// A simple string (`+PONG`), without CR or LF.
    Simple(String),
    /// An error, the whole text after `-`: `"ERR not found"`, or RedisBloom's unprefixed
    /// `"Nonscaling filters cannot expand"`. A CR or LF in it is sent as a space.
    Error(String),
    /// An integer.
    Integer(i64),
    /// A binary-safe string.
    Bulk(Bytes),
    /// Nothing: `$-1` in RESP2, `_` in RESP3.
    Null,
    /// No array: `*-1` in RESP2, `_` in RESP3.
    NullArray,
    /// An array of replies.
    Array(Vec<Reply>),
    /// Key-value pairs: a RESP3 map, a flat array in RESP2.
    Map(Vec<(Reply, Reply)>),
    /// A boolean: RESP3 `#t`/`#f`, integer 1/0 in RESP2.
    Bool(bool),
    /// A floating-point number: RESP3 `,`, a bulk string in RESP2.
    Double(f64),
    /// Different replies by protocol, where RedisBloom's RESP3 answer is not the automatic
    /// upgrade of its RESP2 one (`BF.INFO key FIELD`: a one-element array in RESP2, a
    /// one-entry map in RESP3).
    PerProtocol {
        /// The RESP2 reply.
        resp2: Box<Reply>,
        /// The RESP3 reply.
        resp3: Box<Reply>,
    },
}

impl Reply {
    /// An error reply with the given full text.
    pub fn error(text: impl Into<String>) -> Reply {
        Reply::Error(text.into())
    }

    /// A bulk string from anything byte-like.
    pub fn bulk(bytes: impl Into<Bytes>) -> Reply {
        Reply::Bulk(bytes.into())
    }

    /// Whether this is an error reply.
    pub fn is_error(&self) -> bool {
        matches!(self, Reply::Error(_))
    }

    /// Appends the wire encoding of this reply for `protocol` to `out`.
    pub fn encode(&self, protocol: Protocol, out: &mut Vec<u8>) {
        let resp3 = protocol == Protocol::Resp3;
        match self {
            Reply::Ok => out.extend_from_slice(b"+OK\r\n"),
            Reply::Simple(s) => one_line(out, b'+', s.as_bytes()),
            Reply::Error(s) => one_line(out, b'-', s.as_bytes()),
            Reply::Integer(n) => line(out, b':', n.to_string().as_bytes()),
            Reply::Bulk(b) => bulk(out, b),
            Reply::Null if resp3 => out.extend_from_slice(b"_\r\n"),
            Reply::Null => out.extend_from_slice(b"$-1\r\n"),
            Reply::NullArray if resp3 => out.extend_from_slice(b"_\r\n"),
            Reply::NullArray => out.extend_from_slice(b"*-1\r\n"),
            Reply::Array(items) => {
                line(out, b'*', items.len().to_string().as_bytes());
                for item in items {
                    item.encode(protocol, out);
                }
            }
            Reply::Map(pairs) => {
                if resp3 {
                    line(out, b'%', pairs.len().to_string().as_bytes());
                } else {
                    line(out, b'*', (pairs.len() * 2).to_string().as_bytes());
                }
                for (k, v) in pairs {
                    k.encode(protocol, out);
                    v.encode(protocol, out);
                }
            }
            Reply::Bool(b) if resp3 => {
                out.extend_from_slice(if *b { b"#t\r\n" } else { b"#f\r\n" })
            }
            Reply::Bool(b) => line(out, b':', if *b { b"1" } else { b"0" }),
            Reply::PerProtocol {
                resp2: for_resp2,
                resp3: for_resp3,
            } => if resp3 { for_resp3 } else { for_resp2 }.encode(protocol, out),
            Reply::Double(x) => {
                let text = format_double(*x);
                if resp3 {
                    line(out, b',', text.as_bytes());
                } else {
                    bulk(out, text.as_bytes());
                }
            }
        }
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

fn line(out: &mut Vec<u8>, tag: u8, body: &[u8]) {
    out.push(tag);
    out.extend_from_slice(body);
    out.extend_from_slice(b"\r\n");
}

fn bulk(out: &mut Vec<u8>, body: &[u8]) {
    line(out, b'$', body.len().to_string().as_bytes());
    out.extend_from_slice(body);
    out.extend_from_slice(b"\r\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wire(reply: &Reply, protocol: Protocol) -> String {
        let mut out = Vec::new();
        reply.encode(protocol, &mut out);
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
        assert_eq!(wire(&Reply::Bool(false), Protocol::Resp3), "#f\r\n");
        assert_eq!(wire(&Reply::Null, Protocol::Resp2), "$-1\r\n");
        assert_eq!(wire(&Reply::NullArray, Protocol::Resp2), "*-1\r\n");
        assert_eq!(wire(&Reply::Null, Protocol::Resp3), "_\r\n");
        assert_eq!(wire(&Reply::Double(0.5), Protocol::Resp2), "$3\r\n0.5\r\n");
        assert_eq!(wire(&Reply::Double(0.5), Protocol::Resp3), ",0.5\r\n");
        let split = Reply::PerProtocol {
            resp2: Box::new(Reply::Integer(-1)),
            resp3: Box::new(Reply::Bool(false)),
        };
        assert_eq!(wire(&split, Protocol::Resp2), ":-1\r\n");
        assert_eq!(wire(&split, Protocol::Resp3), "#f\r\n");
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
        let reply = Reply::Array(vec![
            Reply::Integer(1),
            Reply::bulk(&b"a\r\nb"[..]),
            Reply::error("ERR non scaling filter is full"),
        ]);
        assert_eq!(
            wire(&reply, Protocol::Resp2),
            "*3\r\n:1\r\n$4\r\na\r\nb\r\n-ERR non scaling filter is full\r\n"
        );
    }
}
