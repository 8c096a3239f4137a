//! Decoding RESP: requests off the wire (multibulk arrays and inline commands), and the
//! arrays the log's records hold.
//!
//! A request is an array of bulk strings (`*2\r\n$4\r\nPING\r\n$2\r\nhi\r\n`), or, from
//! `telnet` and friends, one line of words (`PING hi\r\n`). The parser keeps its place
//! between reads, so a request that arrives in many pieces is scanned once, not re-parsed
//! from the start at every read, and each argument is split off the read buffer without a
//! copy.
//!
//! Nothing is allocated from what the client merely claims: a header announcing a 512 MiB
//! argument reserves nothing; the buffer grows only as bytes arrive, and a request in
//! progress costs the bytes it was sent in, nothing per argument. Limits follow Redis:
//! 512 MiB per argument, 1,048,576 arguments per request, 64 KiB for an inline request or
//! a length line. Breaking one is a [`ProtocolError`], after which the connection is closed,
//! since its byte stream can no longer be trusted to be in step. Before a request holds
//! more of the buffer, the host's [`Admission`] is asked (its memory limits): it may let
//! it grow, refuse it (its bytes are then dropped as they arrive, and the host answers an
//! error in its place), or close the connection.

use std::fmt;

use bytes::{Buf, Bytes, BytesMut};

/// The longest argument a client may send: Redis's `proto-max-bulk-len` default.
pub const MAX_BULK_LEN: usize = 512 * 1024 * 1024;

/// The most arguments one request may carry: Redis's limit.
pub const MAX_MULTIBULK_LEN: usize = 1024 * 1024;

/// The longest inline request or length line, as in Redis (`PROTO_INLINE_MAX_SIZE`).
pub const MAX_LINE_LEN: usize = 64 * 1024;

/// The most arguments a request of a client that has not authenticated may carry: Redis's
/// limit (its hardening for CVE-2021-32675), so that such a client cannot make the server
/// hold more than a few of [`UNAUTHENTICATED_MAX_BULK_LEN`] for it.
pub const UNAUTHENTICATED_MAX_ARGS: i64 = 10;

/// The longest argument a client that has not authenticated may send: Redis's limit.
pub const UNAUTHENTICATED_MAX_BULK_LEN: i64 = 16 * 1024;

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

/// What [`Parser::parse_admitted`] takes off the buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Frame {
    /// A complete request, name first.
    Request(Vec<Bytes>),
    /// A request its [`Admission`] refused: its bytes were read and dropped as they came,
    /// so the stream stays in step; answer the error text (`OOM ...`) in its place.
    Refused(String),
}

/// What the parser asks before a request may hold more of the buffer than it has so far
/// been allowed: a host's memory limits (`client-query-buffer-limit`, `--maxmemory`).
pub trait Admission {
    /// Whether the request in progress may hold `request_bytes` bytes of the buffer (the
    /// bytes of it read so far, plus the argument whose header was just read). Asked
    /// again only when the request outgrows what was last admitted.
    fn admit(&mut self, request_bytes: usize) -> Verdict;
}

/// An [`Admission`]'s answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Buffer it.
    Admit,
    /// Read the rest of the request and drop it, then answer this error in its place.
    Refuse(String),
    /// Stop: answer `ERR Protocol error: <reason>` and close the connection.
    Close(String),
}

/// An [`Admission`] that admits everything: the parser alone, with Redis's fixed limits.
#[derive(Clone, Copy, Debug, Default)]
pub struct AdmitAll;

impl Admission for AdmitAll {
    fn admit(&mut self, _request_bytes: usize) -> Verdict {
        Verdict::Admit
    }
}

/// Requests are admitted in steps of this many bytes, so that a request of a million small
/// arguments asks a few hundred times, not a million.
const ADMISSION_STEP: usize = 64 * 1024;

/// The buffer grows by at least this much at a time (and doubles when it is larger).
const MIN_GROWTH: usize = 64 * 1024;

/// Where a multibulk request stands between reads.
///
/// While it is kept, its bytes stay in the read buffer, from the buffer's start to
/// `scanned`, already checked; nothing is kept per argument, so a request costs the bytes
/// it was sent in (a million empty arguments are 6 MB on the wire and 6 MB here, where a
/// `Bytes` per argument would add 32 MB). Its arguments are cut out of the buffer, without
/// a copy, once the whole request has arrived.
#[derive(Debug)]
struct Pending {
    /// Arguments whose header has not been read yet.
    remaining: usize,
    /// Bytes of the request read and checked, from the buffer's start (0 once refused).
    scanned: usize,
    /// The announced length of the argument being read, once its `$` line is consumed.
    bulk_len: Option<usize>,
    /// Bytes of the buffer the request was last admitted to hold.
    admitted: usize,
    /// Set once the request is refused: the error to answer; its bytes are dropped.
    refused: Option<String>,
    /// While refused: bytes of the current argument (and its CRLF) still to drop.
    skip: usize,
}

/// An incremental request parser; one per connection.
#[derive(Debug, Default)]
pub struct Parser {
    pending: Option<Pending>,
    /// Whether the client has authenticated (or needs not): until then, its requests are
    /// held to [`UNAUTHENTICATED_MAX_ARGS`] and [`UNAUTHENTICATED_MAX_BULK_LEN`].
    unauthenticated: bool,
}

impl Parser {
    /// A parser at the start of a request.
    pub fn new() -> Self {
        Parser::default()
    }

    /// Holds the next requests to the limits of a client that has not authenticated
    /// (`true`), or lifts them (`false`, the default), as the session's authentication
    /// changes: before `AUTH`, a request of more than [`UNAUTHENTICATED_MAX_ARGS`]
    /// arguments, or with an argument over [`UNAUTHENTICATED_MAX_BULK_LEN`] bytes, is a
    /// protocol error (Redis's `unauthenticated multibulk length`/`bulk length`), which
    /// closes the connection before anything more of it is read.
    pub fn set_unauthenticated(&mut self, unauthenticated: bool) {
        self.unauthenticated = unauthenticated;
    }

    /// Whether the parser is between requests (nothing half-read).
    pub fn is_idle(&self) -> bool {
        self.pending.is_none()
    }

    /// Bytes at the front of the buffer that belong to the request in progress.
    pub fn pending_bytes(&self) -> usize {
        self.pending.as_ref().map_or(0, |p| p.scanned)
    }

    /// Takes the next complete request off the front of `buf`, admitting everything.
    ///
    /// `Ok(None)` means more bytes are needed: an expected state, not an error. Empty
    /// requests (`*0`, a blank line) are skipped, as Redis does.
    ///
    /// # Errors
    ///
    /// [`ProtocolError`] for a malformed or oversized request.
    pub fn parse(&mut self, buf: &mut BytesMut) -> Result<Option<Vec<Bytes>>, ProtocolError> {
        match self.parse_admitted(buf, &mut AdmitAll)? {
            None => Ok(None),
            Some(Frame::Request(args)) => Ok(Some(args)),
            // `AdmitAll` refuses nothing.
            Some(Frame::Refused(text)) => Err(ProtocolError::new(text)),
        }
    }

    /// [`Parser::parse`], asking `admission` before a request holds more of the buffer
    /// than it was last allowed.
    ///
    /// # Errors
    ///
    /// [`ProtocolError`] for a malformed or oversized request, or one `admission` closes.
    pub fn parse_admitted(
        &mut self,
        buf: &mut BytesMut,
        admission: &mut dyn Admission,
    ) -> Result<Option<Frame>, ProtocolError> {
        loop {
            if self.pending.is_none() {
                match buf.first() {
                    None => return Ok(None),
                    Some(b'*') => {
                        // The one-pass reader does not know the limits before `AUTH`.
                        if !self.unauthenticated {
                            if let Some(args) = take_whole_request(buf) {
                                return Ok(Some(Frame::Request(args)));
                            }
                        }
                        let Some((count, line)) = peek_length_line(buf, "mbulk")? else {
                            return Ok(None);
                        };
                        if count > MAX_MULTIBULK_LEN as i64 {
                            return Err(ProtocolError::new("invalid multibulk length"));
                        }
                        if self.unauthenticated && count > UNAUTHENTICATED_MAX_ARGS {
                            return Err(ProtocolError::new("unauthenticated multibulk length"));
                        }
                        if count <= 0 {
                            buf.advance(line);
                            continue;
                        }
                        self.pending = Some(Pending {
                            remaining: count as usize,
                            scanned: line,
                            bulk_len: None,
                            admitted: 0,
                            refused: None,
                            skip: 0,
                        });
                    }
                    Some(_) => match take_inline(buf)? {
                        None => return Ok(None),
                        Some(args) if args.is_empty() => continue,
                        Some(args) => return Ok(Some(Frame::Request(args))),
                    },
                }
            }
            let Some(pending) = self.pending.as_mut() else {
                continue;
            };
            if !pending.step(buf, admission, self.unauthenticated)? {
                return Ok(None);
            }
            let Some(done) = self.pending.take() else {
                continue;
            };
            if let Some(text) = done.refused {
                return Ok(Some(Frame::Refused(text)));
            }
            let frame = buf.split_to(done.scanned).freeze();
            return array(&frame)
                .map(|args| Some(Frame::Request(args)))
                .map_err(|_| ProtocolError::new("invalid multibulk request"));
        }
    }
}

impl Pending {
    /// Reads as much of the request as `buf` holds; true once all of it has been read.
    fn step(
        &mut self,
        buf: &mut BytesMut,
        admission: &mut dyn Admission,
        unauthenticated: bool,
    ) -> Result<bool, ProtocolError> {
        loop {
            if self.refused.is_some() {
                // Drop what arrives of a refused request, keeping only what is needed to
                // stay in step: the headers.
                let drop = self.skip.min(buf.len());
                buf.advance(drop);
                self.skip -= drop;
                if self.skip > 0 {
                    return Ok(false);
                }
            }
            let len = match self.bulk_len {
                Some(len) => len,
                None => {
                    if self.remaining == 0 {
                        return Ok(true);
                    }
                    let at = self.scanned;
                    match buf.get(at) {
                        None => return Ok(false),
                        Some(b'$') => {}
                        Some(&other) => {
                            return Err(ProtocolError::new(format!(
                                "expected '$', got '{}'",
                                char::from(other)
                            )))
                        }
                    }
                    let Some((len, line)) = peek_length_line(&buf[at..], "bulk")? else {
                        return Ok(false);
                    };
                    if len < 0 || len > MAX_BULK_LEN as i64 {
                        return Err(ProtocolError::new("invalid bulk length"));
                    }
                    if unauthenticated && len > UNAUTHENTICATED_MAX_BULK_LEN {
                        return Err(ProtocolError::new("unauthenticated bulk length"));
                    }
                    let len = len as usize;
                    self.remaining -= 1;
                    if self.refused.is_some() {
                        buf.advance(line);
                        self.skip = len + 2;
                        continue;
                    }
                    self.scanned += line;
                    self.bulk_len = Some(len);
                    let wanted = self.scanned + len + 2;
                    if wanted > self.admitted.max(buf.capacity()) {
                        let ask = wanted.next_multiple_of(ADMISSION_STEP).max(wanted);
                        match admission.admit(ask) {
                            Verdict::Admit => self.admitted = ask,
                            Verdict::Close(reason) => return Err(ProtocolError::new(reason)),
                            Verdict::Refuse(text) => {
                                // Forget the part kept so far; drop the rest as it comes.
                                buf.advance(self.scanned);
                                self.scanned = 0;
                                self.bulk_len = None;
                                self.skip = len + 2;
                                self.refused = Some(text);
                                continue;
                            }
                        }
                    }
                    len
                }
            };
            let end = self.scanned + len;
            if buf.len() < end + 2 {
                grow_for(buf, end + 2);
                return Ok(false);
            }
            if &buf[end..end + 2] != b"\r\n" {
                return Err(ProtocolError::new("expected CRLF after a bulk string"));
            }
            self.scanned = end + 2;
            self.bulk_len = None;
        }
    }
}

/// Makes room for a request that will end at byte `end` of `buf`: the buffer doubles (by
/// at least [`MIN_GROWTH`]) but never past that end, so a large argument leaves no spare
/// half-buffer behind, and nothing is reserved from what a header merely claims beyond
/// one doubling of what has arrived. Grown with `realloc`, which moves a large buffer's
/// pages rather than copying them.
fn grow_for(buf: &mut BytesMut, end: usize) {
    let capacity = buf.capacity();
    if capacity >= end {
        return;
    }
    let doubled = capacity.saturating_mul(2).max(capacity + MIN_GROWTH);
    let target = doubled.min(end.max(capacity + MIN_GROWTH));
    let mut bytes: Vec<u8> = std::mem::take(buf).into();
    bytes.reserve_exact(target.saturating_sub(bytes.len()));
    *buf = BytesMut::from(Bytes::from(bytes));
}

/// The most arguments a request may have for [`take_whole_request`] to read it.
const WHOLE_ARGS: usize = 8;

/// The common case, read in one pass: a short request (up to [`WHOLE_ARGS`] arguments, the
/// plain `*N`/`$N` form) all of whose bytes have arrived, as a pipelining client sends
/// them. Anything else, including every malformed request and one still arriving, is left
/// for the general path, which gives the same arguments for what this one takes: a request
/// all in the buffer is within its capacity, so the general path would not ask the
/// admission either.
fn take_whole_request(buf: &mut BytesMut) -> Option<Vec<Bytes>> {
    let (count, mut at) = plain_length_line(buf)?;
    let count = usize::try_from(count)
        .ok()
        .filter(|c| (1..=WHOLE_ARGS).contains(c))?;
    let mut spans = [(0, 0); WHOLE_ARGS];
    for span in &mut spans[..count] {
        let header = buf.get(at..)?;
        if header.first() != Some(&b'$') {
            return None;
        }
        let (len, line) = plain_length_line(header)?;
        let len = usize::try_from(len).ok().filter(|&l| l <= MAX_BULK_LEN)?;
        let start = at + line;
        let end = start + len;
        if buf.get(end..end + 2)? != b"\r\n" {
            return None;
        }
        *span = (start, end);
        at = end + 2;
    }
    let frame = buf.split_to(at).freeze();
    Some(
        spans[..count]
            .iter()
            .map(|&(start, end)| frame.slice(start..end))
            .collect(),
    )
}

/// Decodes `bytes`, which must be exactly one RESP array of bulk strings (`*N`, then `N`
/// times `$len`, the bytes and CRLF), into its elements, each a slice of `bytes` (no copy).
/// What the parser cuts a complete request into, and what the log's records hold.
///
/// The element count is believed only as far as the bytes present can hold that many
/// elements (the smallest, `$0\r\n\r\n`, is 6 bytes), so a hostile count allocates nothing.
///
/// # Errors
///
/// What is wrong and where, for anything else: an empty array, a malformed length, an
/// element running past the end, bytes after the array.
pub fn array(bytes: &Bytes) -> Result<Vec<Bytes>, String> {
    let (count, mut at) = match bytes.first() {
        Some(b'*') => read_length(bytes).ok_or("malformed length in the array header")?,
        _ => return Err("expected an array header ('*')".to_string()),
    };
    let count = usize::try_from(count)
        .ok()
        .filter(|&count| count > 0)
        .ok_or("the command has no name (an empty array)")?;
    let mut args = Vec::with_capacity(count.min((bytes.len() - at) / 6));
    for i in 1..=count {
        let header = bytes.get(at..).unwrap_or_default();
        if header.first() != Some(&b'$') {
            return Err(format!("argument {i}: expected a bulk string header ('$')"));
        }
        let (len, line) =
            read_length(header).ok_or_else(|| format!("argument {i}: malformed length"))?;
        let start = at + line;
        let end = usize::try_from(len)
            .ok()
            .and_then(|len| start.checked_add(len))
            .filter(|&end| end <= bytes.len())
            .ok_or_else(|| {
                format!(
                    "argument {i} claims {len} bytes but {} are left",
                    bytes.len() - start
                )
            })?;
        if bytes.get(end..end + 2) != Some(b"\r\n") {
            return Err(format!("argument {i} is not followed by CRLF"));
        }
        args.push(bytes.slice(start..end));
        at = end + 2;
    }
    if at != bytes.len() {
        return Err(format!(
            "{} unexpected bytes after the array",
            bytes.len() - at
        ));
    }
    Ok(args)
}

/// The value and length of the `*N`/`$N` line at the start of `bytes`; `None` if it is not
/// one (or not all there).
fn read_length(bytes: &[u8]) -> Option<(i64, usize)> {
    if let Some(found) = plain_length_line(bytes) {
        return Some(found);
    }
    let end = find_crlf(bytes)?;
    let value = parse_length(&bytes[1..end])?;
    Some((value, end + 2))
}

/// Reads the `*N\r\n` or `$N\r\n` line at the start of `buf` without consuming it: N and
/// the line's length; `Ok(None)` if the line is not all here yet. `what` names the line in
/// Redis's "too big ... count string" error.
fn peek_length_line(buf: &[u8], what: &str) -> Result<Option<(i64, usize)>, ProtocolError> {
    if let Some(found) = plain_length_line(buf) {
        return Ok(Some(found));
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
    Ok(Some((value, end + 2)))
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

/// The common case of [`peek_length_line`], in one pass and without UTF-8 or `str::parse`:
/// the prefix byte, 1 to 18 digits (no overflow possible), CRLF. Returns the value and the
/// line's length; `None` for anything else (a sign, more digits, a line not all here yet),
/// which the general path then reads, with the same result for this form.
fn plain_length_line(buf: &[u8]) -> Option<(i64, usize)> {
    let mut value: i64 = 0;
    let mut end = 1;
    // Digits at positions 1 to 18 only: 18 digits fit in an i64, a 19th might not (a 19th
    // character that is not the CR sends the line to the general path).
    while end <= 18 {
        let digit = buf.get(end)?.wrapping_sub(b'0');
        if digit > 9 {
            break;
        }
        value = value * 10 + i64::from(digit);
        end += 1;
    }
    // A leading zero (`04`) is Redis's protocol error: the general path says so.
    let plain = end > 1 && (end == 2 || buf[1] != b'0');
    (plain && buf.get(end..end + 2)? == b"\r\n").then_some((value, end + 2))
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
            let got = peek_length_line(&fast, "bulk").map(|found| {
                found.map(|(value, len)| {
                    fast.advance(len);
                    value
                })
            });
            // The general path alone: what `peek_length_line` does without the fast path.
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

    /// The first request (or error) of `input`, arriving whole or with its last byte late:
    /// the second way every request goes through the general path, never the one-pass read.
    fn first_request(input: &[u8], whole: bool) -> Result<Option<Vec<Bytes>>, ProtocolError> {
        let mut parser = Parser::new();
        let cut = if whole { input.len() } else { input.len() - 1 };
        let mut buf = BytesMut::from(&input[..cut]);
        if let Some(request) = parser.parse(&mut buf)? {
            return Ok(Some(request));
        }
        buf.extend_from_slice(&input[cut..]);
        parser.parse(&mut buf)
    }

    #[test]
    fn whole_requests_read_in_one_pass_as_the_general_path_reads_them() {
        let many = |n: usize| [format!("*{n}\r\n").into_bytes(), b"$1\r\na\r\n".repeat(n)].concat();
        let cases: Vec<Vec<u8>> = vec![
            b"*3\r\n$9\r\nBF.EXISTS\r\n$1\r\nk\r\n$0\r\n\r\n".to_vec(),
            b"*1\r\n$4\r\nPING\r\n".to_vec(),
            many(8),
            many(9),
            b"*2\r\n$04\r\nPING\r\n$1\r\na\r\n".to_vec(),
            b"*2\r\n$-1\r\n$1\r\na\r\n".to_vec(),
            b"*2\r\n$+1\r\na\r\n$1\r\na\r\n".to_vec(),
            b"*2\r\n+1\r\na\r\n$1\r\na\r\n".to_vec(),
            b"*1\r\n$4\r\nPINGxx".to_vec(),
            b"*1\r\n$536870913\r\nPING\r\n".to_vec(),
            b"*1\r\n$1234567890123456789\r\nPING\r\n".to_vec(),
            b"*01\r\n$4\r\nPING\r\n".to_vec(),
            b"*-1\r\n*1\r\n$4\r\nPING\r\n".to_vec(),
            b"*0\r\n*1\r\n$4\r\nPING\r\n".to_vec(),
        ];
        for case in &cases {
            let quick = first_request(case, true);
            let general = first_request(case, false);
            assert_eq!(quick, general, "{:?}", String::from_utf8_lossy(case));
        }
        // The cases cover both outcomes and the one-pass read's limit.
        assert_eq!(first_request(&cases[2], true).unwrap().unwrap().len(), 8);
        assert_eq!(first_request(&cases[3], true).unwrap().unwrap().len(), 9);
        assert!(first_request(&cases[4], true).is_err());
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
    fn before_auth_requests_are_held_to_redis_limits() {
        let parse = |input: &[u8], unauthenticated: bool| {
            let mut parser = Parser::new();
            parser.set_unauthenticated(unauthenticated);
            parser.parse(&mut BytesMut::from(input))
        };
        let ten = resp_request(&["a"; 10]);
        let eleven = resp_request(&["a"; 11]);
        assert_eq!(parse(&ten, true).unwrap().unwrap().len(), 10);
        assert_eq!(
            parse(b"*11\r\n", true).unwrap_err().message(),
            "ERR Protocol error: unauthenticated multibulk length"
        );
        assert_eq!(parse(&eleven, false).unwrap().unwrap().len(), 11);
        let arg = "x".repeat(16 * 1024);
        assert!(parse(&resp_request(&[&arg]), true).unwrap().is_some());
        let longer = format!("{arg}y");
        assert_eq!(
            parse(b"*1\r\n$16385\r\n", true).unwrap_err().message(),
            "ERR Protocol error: unauthenticated bulk length"
        );
        assert!(parse(&resp_request(&[&longer]), false).unwrap().is_some());
        // Inline requests are bounded by their line, as Redis leaves them.
        assert_eq!(
            parse(b"PING a b c d e f g h i j k\r\n", true)
                .unwrap()
                .unwrap()
                .len(),
            12
        );
    }

    fn resp_request(args: &[&str]) -> Vec<u8> {
        let mut out = format!("*{}\r\n", args.len()).into_bytes();
        for arg in args {
            out.extend(format!("${}\r\n{arg}\r\n", arg.len()).into_bytes());
        }
        out
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

    /// Admits requests of at most `limit` bytes, refusing (or closing on) the rest.
    struct Limit {
        limit: usize,
        close: bool,
        asked: Vec<usize>,
    }

    impl Admission for Limit {
        fn admit(&mut self, request_bytes: usize) -> Verdict {
            self.asked.push(request_bytes);
            match (request_bytes <= self.limit, self.close) {
                (true, _) => Verdict::Admit,
                (false, false) => Verdict::Refuse("OOM no room".into()),
                (false, true) => Verdict::Close("too big".into()),
            }
        }
    }

    /// Feeds `input` as a socket would, into the buffer's spare room only (a read never
    /// grows the buffer while the parser says how much room it needs), `step` bytes at a
    /// time, and returns the frames and the largest capacity the buffer reached.
    fn feed(input: &[u8], step: usize, admission: &mut dyn Admission) -> (Vec<Frame>, usize) {
        let mut parser = Parser::new();
        let mut buf = BytesMut::with_capacity(1024);
        let (mut frames, mut peak, mut at) = (Vec::new(), 0, 0);
        loop {
            while let Some(frame) = parser.parse_admitted(&mut buf, admission).unwrap() {
                frames.push(frame);
            }
            peak = peak.max(buf.capacity());
            if at == input.len() {
                return (frames, peak);
            }
            let room = (buf.capacity() - buf.len()).max(1);
            let take = room.min(step).min(input.len() - at);
            buf.extend_from_slice(&input[at..at + take]);
            at += take;
        }
    }

    #[test]
    fn a_refused_request_is_dropped_as_it_arrives_and_the_stream_stays_in_step() {
        let mut input = b"*3\r\n$4\r\nECHO\r\n$1\r\nx\r\n$500000\r\n".to_vec();
        input.extend(vec![b'y'; 500_000]);
        input.extend_from_slice(b"\r\n*1\r\n$4\r\nPING\r\n");
        let mut limit = Limit {
            limit: 100_000,
            close: false,
            asked: Vec::new(),
        };
        let (frames, peak) = feed(&input, 4096, &mut limit);
        assert_eq!(
            frames,
            vec![
                Frame::Refused("OOM no room".into()),
                Frame::Request(vec![Bytes::from_static(b"PING")])
            ]
        );
        assert!(peak < 70_000, "the refused argument was never held: {peak}");
        assert_eq!(
            limit.asked.len(),
            1,
            "asked once, at the big argument's header"
        );
    }

    #[test]
    fn an_admission_that_closes_is_a_protocol_error() {
        let mut parser = Parser::new();
        let mut buf = BytesMut::from(&b"*2\r\n$4\r\nECHO\r\n$2000000\r\n"[..]);
        let mut limit = Limit {
            limit: 1 << 20,
            close: true,
            asked: Vec::new(),
        };
        assert_eq!(
            parser
                .parse_admitted(&mut buf, &mut limit)
                .unwrap_err()
                .message(),
            "ERR Protocol error: too big"
        );
    }

    #[test]
    fn a_large_argument_leaves_the_buffer_its_exact_size() {
        let len = 3_000_000;
        let mut input = format!("*1\r\n${len}\r\n").into_bytes();
        let header = input.len();
        input.extend(vec![b'z'; len]);
        input.extend_from_slice(b"\r\n");
        let (frames, peak) = feed(&input, 1 << 20, &mut AdmitAll);
        assert_eq!(frames.len(), 1);
        assert_eq!(
            peak,
            header + len + 2,
            "no doubling past the argument's end"
        );
    }

    #[test]
    fn empty_arguments_in_progress_cost_their_bytes() {
        let count = 200_000;
        let mut input = format!("*{count}\r\n").into_bytes();
        for _ in 0..count {
            input.extend_from_slice(b"$0\r\n\r\n");
        }
        let mut parser = Parser::new();
        let mut buf = BytesMut::new();
        // All but the last argument's CRLF.
        buf.extend_from_slice(&input[..input.len() - 2]);
        assert_eq!(parser.parse(&mut buf).unwrap(), None);
        // What the request holds is the buffer, nothing per argument.
        assert_eq!(parser.pending_bytes(), input.len() - 2);
        assert!(std::mem::size_of::<Parser>() <= 128);
        buf.extend_from_slice(b"\r\n");
        let request = parser.parse(&mut buf).unwrap().unwrap();
        assert_eq!(request.len(), count);
        assert!(request.iter().all(|arg| arg.is_empty()));
        assert!(buf.is_empty() && parser.is_idle());
    }
}
