//! Reading requests off the wire: RESP multibulk arrays and inline commands.
//!
//! A request is an array of bulk strings (`*2\r\n$4\r\nPING\r\n$2\r\nhi\r\n`), or, from
//! `telnet` and friends, one line of words (`PING hi\r\n`). The parser keeps its place
//! between reads, so a request that arrives in many pieces is scanned once, not re-parsed
//! from the start at every read, and each argument is split off the read buffer without a
//! copy.
//!
//! Nothing is allocated from what the client merely claims: a header announcing a 512 MiB
//! argument reserves nothing; the buffer grows only as bytes arrive. Limits follow Redis:
//! 512 MiB per argument, 1,048,576 arguments per request, 64 KiB for an inline request or
//! a length line. Breaking one is a [`ProtocolError`], after which the connection is closed,
//! since its byte stream can no longer be trusted to be in step.

use std::fmt;

use bytes::{Buf, Bytes, BytesMut};

/// The longest argument a client may send: Redis's `proto-max-bulk-len` default.
pub const MAX_BULK_LEN: usize = 512 * 1024 * 1024;

/// The most arguments one request may carry: Redis's limit.
pub const MAX_MULTIBULK_LEN: usize = 1024 * 1024;

/// The longest inline request or length line, as in Redis (`PROTO_INLINE_MAX_SIZE`).
pub const MAX_LINE_LEN: usize = 64 * 1024;

/// A malformed or oversized request. The connection answers with the message and closes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProtocolError {
    reason: String,
}

impl ProtocolError {
    fn new(reason: impl Into<String>) -> Self {
        ProtocolError {
            reason: reason.into(),
        }
    }

    /// The error reply's full text, as Redis words it: `ERR Protocol error: ...`.
    pub fn message(&self) -> String {
        format!("ERR Protocol error: {}", self.reason)
    }
}

impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message())
    }
}

impl std::error::Error for ProtocolError {}

/// Where a multibulk request stands between reads.
#[derive(Debug)]
struct Pending {
    /// Arguments still to come.
    remaining: usize,
    /// Arguments already read.
    args: Vec<Bytes>,
    /// The announced length of the argument being read, once its `$` line is consumed.
    bulk_len: Option<usize>,
}

/// An incremental request parser; one per connection.
#[derive(Debug, Default)]
pub struct Parser {
    pending: Option<Pending>,
}

impl Parser {
    /// A parser at the start of a request.
    pub fn new() -> Self {
        Parser::default()
    }

    /// Whether the parser is between requests (nothing half-read).
    pub fn is_idle(&self) -> bool {
        self.pending.is_none()
    }

    /// Takes the next complete request off the front of `buf`.
    ///
    /// `Ok(None)` means more bytes are needed: an expected state, not an error. Empty
    /// requests (`*0`, a blank line) are skipped, as Redis does.
    ///
    /// # Errors
    ///
    /// [`ProtocolError`] for a malformed or oversized request.
    pub fn parse(&mut self, buf: &mut BytesMut) -> Result<Option<Vec<Bytes>>, ProtocolError> {
        loop {
            if self.pending.is_none() {
                match buf.first() {
                    None => return Ok(None),
                    Some(b'*') => {
                        let Some(count) = take_length_line(buf, "mbulk")? else {
                            return Ok(None);
                        };
                        if count > MAX_MULTIBULK_LEN as i64 {
                            return Err(ProtocolError::new("invalid multibulk length"));
                        }
                        if count <= 0 {
                            continue;
                        }
                        let count = count as usize;
                        self.pending = Some(Pending {
                            remaining: count,
                            // Never trust the count for the allocation: grow as args arrive.
                            args: Vec::with_capacity(count.min(64)),
                            bulk_len: None,
                        });
                    }
                    Some(_) => match take_inline(buf)? {
                        None => return Ok(None),
                        Some(args) if args.is_empty() => continue,
                        Some(args) => return Ok(Some(args)),
                    },
                }
            }
            let Some(pending) = self.pending.as_mut() else {
                continue;
            };
            while pending.remaining > 0 {
                let len = match pending.bulk_len {
                    Some(len) => len,
                    None => {
                        match buf.first() {
                            None => return Ok(None),
                            Some(b'$') => {}
                            Some(&other) => {
                                return Err(ProtocolError::new(format!(
                                    "expected '$', got '{}'",
                                    char::from(other)
                                )))
                            }
                        }
                        let Some(len) = take_length_line(buf, "bulk")? else {
                            return Ok(None);
                        };
                        if len < 0 || len > MAX_BULK_LEN as i64 {
                            return Err(ProtocolError::new("invalid bulk length"));
                        }
                        pending.bulk_len = Some(len as usize);
                        len as usize
                    }
                };
                if buf.len() < len + 2 {
                    // Make room for what is certainly coming, a bounded step at a time.
                    let missing = len + 2 - buf.len();
                    buf.reserve(missing.min(1024 * 1024));
                    return Ok(None);
                }
                if &buf[len..len + 2] != b"\r\n" {
                    return Err(ProtocolError::new("expected CRLF after a bulk string"));
                }
                let arg = buf.split_to(len).freeze();
                buf.advance(2);
                pending.args.push(arg);
                pending.remaining -= 1;
                pending.bulk_len = None;
            }
            let done = self.pending.take().map(|p| p.args).unwrap_or_default();
            return Ok(Some(done));
        }
    }
}

/// Consumes a `*N\r\n` or `$N\r\n` line and returns N; `Ok(None)` if the line is not all
/// here yet. `what` names the line in Redis's "too big ... count string" error.
fn take_length_line(buf: &mut BytesMut, what: &str) -> Result<Option<i64>, ProtocolError> {
    if let Some((value, len)) = plain_length_line(buf) {
        buf.advance(len);
        return Ok(Some(value));
    }
    let Some(end) = find_crlf(buf) else {
        if buf.len() > MAX_LINE_LEN {
            return Err(ProtocolError::new(format!("too big {what} count string")));
        }
        return Ok(None);
    };
    let invalid = || {
        ProtocolError::new(if what == "mbulk" {
            "invalid multibulk length"
        } else {
            "invalid bulk length"
        })
    };
    let value = parse_length(&buf[1..end]).ok_or_else(invalid)?;
    buf.advance(end + 2);
    Ok(Some(value))
}

/// A length as Redis's `string2ll` reads it: an optional `-`, then `0` alone or digits
/// without a leading zero, within an `i64`. So `+4`, `04`, `-0`, ` 4` and `4 ` are refused,
/// where Rust's `str::parse` would take the first three.
fn parse_length(text: &[u8]) -> Option<i64> {
    let (negative, digits) = match text {
        [b'-', rest @ ..] => (true, rest),
        _ => (false, text),
    };
    match digits {
        [b'0'] if !negative => return Some(0),
        [b'1'..=b'9', rest @ ..] if rest.iter().all(u8::is_ascii_digit) => {}
        _ => return None,
    }
    let mut value: i64 = 0;
    for &d in digits {
        let d = i64::from(d - b'0');
        value = value.checked_mul(10)?;
        value = if negative {
            value.checked_sub(d)?
        } else {
            value.checked_add(d)?
        };
    }
    Some(value)
}

/// The common case of [`take_length_line`], in one pass and without UTF-8 or `str::parse`:
/// the prefix byte, 1 to 18 digits (no overflow possible), CRLF. Returns the value and the
/// line's length; `None` for anything else (a sign, more digits, a line not all here yet),
/// which the general path then reads, with the same result for this form.
fn plain_length_line(buf: &[u8]) -> Option<(i64, usize)> {
    let mut value: i64 = 0;
    for (at, &byte) in buf.iter().enumerate().skip(1).take(19) {
        match byte {
            // Digits at positions 1 to 18 only: 18 digits fit in an i64, a 19th might not
            // (a 19th character that is not the CR sends the line to the general path).
            // A leading zero (`04`) is Redis's protocol error: the general path says so.
            b'0' if at == 1 && buf.get(2) != Some(&b'\r') => return None,
            b'0'..=b'9' if at <= 18 => value = value * 10 + i64::from(byte - b'0'),
            b'\r' if at > 1 && buf.get(at + 1) == Some(&b'\n') => return Some((value, at + 2)),
            _ => return None,
        }
    }
    None
}

fn find_crlf(buf: &[u8]) -> Option<usize> {
    let limit = buf.len().min(MAX_LINE_LEN + 2);
    buf[..limit].windows(2).position(|w| w == b"\r\n")
}

/// Consumes one inline request line (ended by `\n`, optionally `\r\n`) and splits it into
/// words; `Ok(None)` if the line is not all here yet.
fn take_inline(buf: &mut BytesMut) -> Result<Option<Vec<Bytes>>, ProtocolError> {
    let limit = buf.len().min(MAX_LINE_LEN + 1);
    let Some(newline) = buf[..limit].iter().position(|&b| b == b'\n') else {
        if buf.len() > MAX_LINE_LEN {
            return Err(ProtocolError::new("too big inline request"));
        }
        return Ok(None);
    };
    let line = buf.split_to(newline + 1);
    let line = line.strip_suffix(b"\n").unwrap_or(&line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    split_inline(line).map(Some)
}

/// Splits an inline request into arguments the way Redis's `sdssplitargs` does: words
/// separated by whitespace; "double quotes" with `\n \r \t \b \a \\ \" \xHH` escapes;
/// 'single quotes' with `\'`. A closing quote must be followed by a space or the end.
pub fn split_inline(line: &[u8]) -> Result<Vec<Bytes>, ProtocolError> {
    let unbalanced = || ProtocolError::new("unbalanced quotes in request");
    let mut args = Vec::new();
    let mut i = 0;
    loop {
        while i < line.len() && line[i].is_ascii_whitespace() {
            i += 1;
        }
        if i == line.len() {
            return Ok(args);
        }
        let mut word = Vec::new();
        let mut in_double = false;
        let mut in_single = false;
        loop {
            let Some(&c) = line.get(i) else {
                if in_double || in_single {
                    return Err(unbalanced());
                }
                break;
            };
            if in_double {
                if c == b'\\' && line.get(i + 1) == Some(&b'x') {
                    let hex = line.get(i + 2..i + 4).and_then(|h| {
                        std::str::from_utf8(h)
                            .ok()
                            .and_then(|h| u8::from_str_radix(h, 16).ok())
                    });
                    if let Some(byte) = hex {
                        word.push(byte);
                        i += 4;
                        continue;
                    }
                }
                if c == b'\\' && i + 1 < line.len() {
                    let escaped = match line[i + 1] {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 0x08,
                        b'a' => 0x07,
                        other => other,
                    };
                    word.push(escaped);
                    i += 2;
                } else if c == b'"' {
                    if line.get(i + 1).is_some_and(|b| !b.is_ascii_whitespace()) {
                        return Err(unbalanced());
                    }
                    i += 1;
                    break;
                } else {
                    word.push(c);
                    i += 1;
                }
            } else if in_single {
                if c == b'\\' && line.get(i + 1) == Some(&b'\'') {
                    word.push(b'\'');
                    i += 2;
                } else if c == b'\'' {
                    if line.get(i + 1).is_some_and(|b| !b.is_ascii_whitespace()) {
                        return Err(unbalanced());
                    }
                    i += 1;
                    break;
                } else {
                    word.push(c);
                    i += 1;
                }
            } else if c.is_ascii_whitespace() {
                break;
            } else if c == b'"' {
                in_double = true;
                i += 1;
            } else if c == b'\'' {
                in_single = true;
                i += 1;
            } else {
                word.push(c);
                i += 1;
            }
        }
        args.push(Bytes::from(word));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_all(input: &[u8]) -> Result<Vec<Vec<Bytes>>, ProtocolError> {
        let mut parser = Parser::new();
        let mut buf = BytesMut::from(input);
        let mut out = Vec::new();
        while let Some(request) = parser.parse(&mut buf)? {
            out.push(request);
        }
        Ok(out)
    }

    fn words(request: &[Bytes]) -> Vec<&[u8]> {
        request.iter().map(|b| b.as_ref()).collect()
    }

    #[test]
    fn plain_length_lines_read_as_the_general_path_reads_them() {
        let lines: [&[u8]; 14] = [
            b"*0\r\n",
            b"$7\r\n",
            b"*007\r\n",
            b"$123456789012345678\r\n",
            b"$1234567890123456789\r\n",
            b"$9223372036854775808\r\n",
            b"*-1\r\n",
            b"*+5\r\n",
            b"*\r\n",
            b"*1 \r\n",
            b"*12\r",
            b"*12",
            b"$3\rx\r\n",
            b"$3\n\r\n",
        ];
        for line in lines {
            let mut fast = BytesMut::from(line);
            let mut general = BytesMut::from(line);
            let got = take_length_line(&mut fast, "bulk");
            // The general path alone: what `take_length_line` does without the fast path.
            let want = match find_crlf(&general) {
                None => Ok(None),
                Some(end) => parse_length(&general[1..end])
                    .map(|v| {
                        general.advance(end + 2);
                        Some(v)
                    })
                    .ok_or(()),
            };
            assert_eq!(
                got.map_err(|_| ()),
                want,
                "{}",
                String::from_utf8_lossy(line)
            );
            assert_eq!(fast, general, "{}", String::from_utf8_lossy(line));
        }
    }

    #[test]
    fn multibulk_requests_pipelined() {
        let got = parse_all(b"*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nECHO\r\n$5\r\na\r\nbc\r\n").unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(words(&got[0]), vec![&b"PING"[..]]);
        assert_eq!(words(&got[1]), vec![&b"ECHO"[..], &b"a\r\nbc"[..]]);
    }

    #[test]
    fn every_split_point_gives_the_same_requests() {
        let input: &[u8] = b"*3\r\n$6\r\nBF.ADD\r\n$1\r\nk\r\n$0\r\n\r\nPING  \"a b\"\r\n*0\r\n";
        let whole = parse_all(input).unwrap();
        assert_eq!(whole.len(), 2);
        for cut in 0..input.len() {
            let mut parser = Parser::new();
            let mut buf = BytesMut::from(&input[..cut]);
            let mut got = Vec::new();
            while let Some(r) = parser.parse(&mut buf).unwrap() {
                got.push(r);
            }
            buf.extend_from_slice(&input[cut..]);
            while let Some(r) = parser.parse(&mut buf).unwrap() {
                got.push(r);
            }
            assert_eq!(got, whole, "split at {cut}");
            assert!(parser.is_idle() && buf.is_empty());
        }
    }

    #[test]
    fn inline_commands_split_like_redis() {
        let got = parse_all(b"set \"a\\x41\\n\" 'it\\'s' plain\n\r\n   \r\nPING\r\n").unwrap();
        assert_eq!(
            words(&got[0]),
            vec![&b"set"[..], &b"aA\n"[..], &b"it's"[..], &b"plain"[..]]
        );
        assert_eq!(words(&got[1]), vec![&b"PING"[..]]);
        assert_eq!(got.len(), 2);
        for bad in [&b"get \"abc\r\n"[..], b"get 'a\r\n", b"get \"a\"b\r\n"] {
            assert_eq!(
                parse_all(bad).unwrap_err().message(),
                "ERR Protocol error: unbalanced quotes in request"
            );
        }
    }

    #[test]
    fn limits_and_malformed_headers_are_protocol_errors() {
        let msg = |input: &[u8]| parse_all(input).unwrap_err().message();
        assert_eq!(
            msg(b"*1048577\r\n"),
            "ERR Protocol error: invalid multibulk length"
        );
        assert_eq!(
            msg(b"*x\r\n"),
            "ERR Protocol error: invalid multibulk length"
        );
        assert_eq!(
            msg(b"*1\r\n+OK\r\n"),
            "ERR Protocol error: expected '$', got '+'"
        );
        assert_eq!(
            msg(b"*1\r\n$536870913\r\n"),
            "ERR Protocol error: invalid bulk length"
        );
        assert_eq!(
            msg(b"*1\r\n$-1\r\n"),
            "ERR Protocol error: invalid bulk length"
        );
        // Strict, as Redis's string2ll: no sign, no leading zero, no negative zero.
        for bad in [
            &b"*+1\r\n"[..],
            b"*01\r\n",
            b"*-0\r\n",
            b"* 1\r\n",
            b"*1 \r\n",
        ] {
            assert_eq!(
                msg(bad),
                "ERR Protocol error: invalid multibulk length",
                "{bad:?}"
            );
        }
        for bad in [
            &b"$+4\r\n"[..],
            b"$04\r\n",
            b"$-0\r\n",
            b"$00\r\n",
            b"$4a\r\n",
        ] {
            let mut request = b"*1\r\n".to_vec();
            request.extend_from_slice(bad);
            request.extend_from_slice(b"PING\r\n");
            assert_eq!(
                msg(&request),
                "ERR Protocol error: invalid bulk length",
                "{bad:?}"
            );
        }
        assert_eq!(parse_length(b"-9223372036854775808"), Some(i64::MIN));
        assert_eq!(parse_length(b"9223372036854775808"), None);
        assert_eq!(parse_length(b"-1"), Some(-1));
        assert_eq!(parse_length(b"0"), Some(0));
        assert_eq!(
            msg(b"*1\r\n$1\r\nabc"),
            "ERR Protocol error: expected CRLF after a bulk string"
        );
        let long_inline = vec![b'a'; MAX_LINE_LEN + 1];
        assert_eq!(
            msg(&long_inline),
            "ERR Protocol error: too big inline request"
        );
        let mut long_count = b"*".to_vec();
        long_count.extend(vec![b'1'; MAX_LINE_LEN + 1]);
        assert_eq!(
            msg(&long_count),
            "ERR Protocol error: too big mbulk count string"
        );
    }

    #[test]
    fn a_claimed_huge_argument_reserves_nothing_up_front() {
        let mut parser = Parser::new();
        let mut buf = BytesMut::from(&b"*1\r\n$536870912\r\nabc"[..]);
        assert_eq!(parser.parse(&mut buf).unwrap(), None);
        assert!(
            buf.capacity() <= 2 * 1024 * 1024,
            "capacity {}",
            buf.capacity()
        );
        assert!(!parser.is_idle());
    }

    #[test]
    fn maximum_sized_counts_are_accepted() {
        let mut input = b"*1048576\r\n".to_vec();
        for _ in 0..MAX_MULTIBULK_LEN {
            input.extend_from_slice(b"$1\r\nx\r\n");
        }
        let got = parse_all(&input).unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].len(), MAX_MULTIBULK_LEN);
    }
}
