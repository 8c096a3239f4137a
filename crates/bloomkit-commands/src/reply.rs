//! What a command answers, independent of the wire.
//!
//! The command layer returns a [`Reply`], a plain tree; each host maps it onto its own wire.
//! `bloomkit serve` encodes it as RESP2 or RESP3 (after `HELLO 3`); inside a Redis module
//! the same tree maps onto `RedisModule_ReplyWith*`, which downgrades RESP3 types for RESP2
//! clients as a server must: booleans become integers, maps become flat arrays, doubles
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
}
