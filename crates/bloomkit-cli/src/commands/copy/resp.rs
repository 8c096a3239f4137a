//! A small blocking RESP2 client: one TCP connection, commands as arrays of byte strings,
//! replies read with a bound on every length, so a hostile or broken server can make the
//! client read only what it really sends, never allocate what a length prefix claims.

use std::fmt;
use std::io::{self, BufRead, BufReader, BufWriter, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use super::endpoint::ServerAddr;

/// The longest bulk string accepted: a `SCANDUMP` chunk is at most 16 MiB (RedisBloom's
/// limit, and bloomkit's), so four times that is room to spare, not a filter.
pub const MAX_BULK_BYTES: u64 = 64 << 20;

/// The most elements an array may claim: `SCAN` with its `COUNT` hint answers far fewer.
/// Elements are read one by one, so this bounds a reply's size, not an allocation.
const MAX_ARRAY_LEN: i64 = 1 << 24;

/// How deep arrays may nest: the replies used here nest two deep.
const MAX_DEPTH: usize = 8;

/// The longest line (a simple string, an error, a length): what servers send is short.
const MAX_LINE_BYTES: u64 = 64 << 10;

/// How long a connection attempt may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a reply may take: generous, since a server may encode a large filter for a
/// `SCANDUMP` chunk before answering.
const REPLY_TIMEOUT: Duration = Duration::from_secs(600);

/// One RESP2 reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Frame {
    /// `+OK`.
    Simple(String),
    /// `-ERR ...`: the text after the `-`.
    Error(String),
    /// `:42`.
    Integer(i64),
    /// `$3\r\nabc`, or `$-1` (nil).
    Bulk(Option<Vec<u8>>),
    /// `*2 ...`, or `*-1` (nil).
    Array(Option<Vec<Frame>>),
}

impl Frame {
    /// A short description, for a message about an unexpected reply.
    pub fn describe(&self) -> String {
        match self {
            Frame::Simple(s) => format!("+{s}"),
            Frame::Error(e) => format!("the error '{e}'"),
            Frame::Integer(n) => format!("the integer {n}"),
            Frame::Bulk(None) | Frame::Array(None) => "nil".to_string(),
            Frame::Bulk(Some(b)) => format!("a string of {} bytes", b.len()),
            Frame::Array(Some(a)) => format!("an array of {} elements", a.len()),
        }
    }

    /// The integer of an integer reply, or of a bulk string holding one.
    pub fn as_integer(&self) -> Option<i64> {
        match self {
            Frame::Integer(n) => Some(*n),
            Frame::Bulk(Some(b)) => std::str::from_utf8(b).ok()?.parse().ok(),
            _ => None,
        }
    }

    /// The bytes of a bulk or simple string.
    pub fn as_bytes(&self) -> Option<&[u8]> {
        match self {
            Frame::Bulk(Some(b)) => Some(b),
            Frame::Simple(s) => Some(s.as_bytes()),
            _ => None,
        }
    }
}

/// Why talking to a server failed.
#[derive(Debug)]
pub enum RespError {
    /// The connection failed or was closed.
    Io {
        /// The server, `host:port`.
        server: String,
        /// The OS's reason.
        source: io::Error,
    },
    /// The server sent something that is not RESP2, or past the limits above.
    Protocol {
        /// The server, `host:port`.
        server: String,
        /// What was wrong.
        what: String,
    },
    /// `AUTH` (or the first command, which needs it) was refused.
    Auth {
        /// The server, `host:port`.
        server: String,
        /// The server's error.
        reply: String,
    },
}

impl fmt::Display for RespError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RespError::Io { server, source } => write!(
                f,
                "connection to {server} failed: {source} (is the server running, and is the \
                 address right?)"
            ),
            RespError::Protocol { server, what } => write!(
                f,
                "{server} sent a reply that is not valid RESP: {what} (is it a Redis-protocol \
                 server?)"
            ),
            RespError::Auth { server, reply } => write!(
                f,
                "{server} refused the credentials: {reply} (give them in the URL: \
                 redis://user:password@host:port)"
            ),
        }
    }
}

impl std::error::Error for RespError {}

/// A connection to a Redis-protocol server.
pub struct RespClient {
    server: String,
    reader: BufReader<TcpStream>,
    writer: BufWriter<TcpStream>,
}

impl RespClient {
    /// Connects to `addr`, and authenticates with its user and password if it has them.
    ///
    /// # Errors
    ///
    /// [`RespError::Io`] if no address of the host answers; [`RespError::Auth`] if the
    /// credentials are refused.
    pub fn connect(addr: &ServerAddr) -> Result<RespClient, RespError> {
        let server = addr.display();
        let io_error = |source| RespError::Io {
            server: server.clone(),
            source,
        };
        let mut last = io::Error::new(io::ErrorKind::NotFound, "the host has no address");
        let mut stream = None;
        for socket in (addr.host.as_str(), addr.port)
            .to_socket_addrs()
            .map_err(io_error)?
        {
            match TcpStream::connect_timeout(&socket, CONNECT_TIMEOUT) {
                Ok(s) => {
                    stream = Some(s);
                    break;
                }
                Err(e) => last = e,
            }
        }
        let stream = stream.ok_or_else(|| io_error(last))?;
        stream
            .set_read_timeout(Some(REPLY_TIMEOUT))
            .map_err(io_error)?;
        stream
            .set_write_timeout(Some(REPLY_TIMEOUT))
            .map_err(io_error)?;
        // Chunks go out as soon as they are written; batching is done by the writer.
        stream.set_nodelay(true).map_err(io_error)?;
        let reader = BufReader::with_capacity(1 << 16, stream.try_clone().map_err(io_error)?);
        let mut client = RespClient {
            server: server.clone(),
            reader,
            writer: BufWriter::with_capacity(1 << 16, stream),
        };
        if let Some(password) = &addr.password {
            let mut args: Vec<&[u8]> = vec![b"AUTH"];
            if let Some(user) = &addr.user {
                args.push(user.as_bytes());
            }
            args.push(password.as_bytes());
            if let Frame::Error(reply) = client.command(&args)? {
                return Err(RespError::Auth { server, reply });
            }
        }
        Ok(client)
    }

    /// The server, `host:port`, for messages.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// Sends one command and reads its reply (an error reply is a [`Frame::Error`], not an
    /// `Err`).
    ///
    /// # Errors
    ///
    /// The connection failed, or the reply is not RESP2.
    pub fn command(&mut self, args: &[&[u8]]) -> Result<Frame, RespError> {
        self.send(args)?;
        self.flush()?;
        self.read()
    }

    /// Queues one command without waiting for its reply (read it with [`RespClient::read`]
    /// after [`RespClient::flush`]): a pipeline.
    ///
    /// # Errors
    ///
    /// The connection failed.
    pub fn send(&mut self, args: &[&[u8]]) -> Result<(), RespError> {
        let write = |w: &mut BufWriter<TcpStream>| -> io::Result<()> {
            write!(w, "*{}\r\n", args.len())?;
            for arg in args {
                write!(w, "${}\r\n", arg.len())?;
                w.write_all(arg)?;
                w.write_all(b"\r\n")?;
            }
            Ok(())
        };
        write(&mut self.writer).map_err(|source| self.io(source))
    }

    /// Sends what [`RespClient::send`] queued.
    ///
    /// # Errors
    ///
    /// The connection failed.
    pub fn flush(&mut self) -> Result<(), RespError> {
        self.writer.flush().map_err(|source| self.io(source))
    }

    /// Reads the next reply.
    ///
    /// # Errors
    ///
    /// The connection failed or was closed, or the reply is not RESP2.
    pub fn read(&mut self) -> Result<Frame, RespError> {
        match read_frame(&mut self.reader, 0) {
            Ok(frame) => Ok(frame),
            Err(ReadError::Io(source)) => Err(self.io(source)),
            Err(ReadError::Protocol(what)) => Err(RespError::Protocol {
                server: self.server.clone(),
                what,
            }),
        }
    }

    fn io(&self, source: io::Error) -> RespError {
        RespError::Io {
            server: self.server.clone(),
            source,
        }
    }
}

/// Why reading a frame failed.
#[derive(Debug)]
enum ReadError {
    Io(io::Error),
    Protocol(String),
}

impl From<io::Error> for ReadError {
    fn from(e: io::Error) -> Self {
        ReadError::Io(e)
    }
}

/// Reads one line, without its CRLF, of at most [`MAX_LINE_BYTES`].
fn read_line(reader: &mut impl BufRead) -> Result<Vec<u8>, ReadError> {
    let mut line = Vec::new();
    reader
        .take(MAX_LINE_BYTES + 2)
        .read_until(b'\n', &mut line)?;
    if line.is_empty() {
        return Err(ReadError::Io(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "the server closed the connection",
        )));
    }
    if !line.ends_with(b"\r\n") {
        return Err(ReadError::Protocol(if line.len() as u64 > MAX_LINE_BYTES {
            format!("a line longer than {MAX_LINE_BYTES} bytes")
        } else {
            "a line that does not end in CRLF".to_string()
        }));
    }
    line.truncate(line.len() - 2);
    Ok(line)
}

/// Reads a length (or an integer) line.
fn parse_integer(text: &[u8]) -> Result<i64, ReadError> {
    std::str::from_utf8(text)
        .ok()
        .and_then(|t| t.parse().ok())
        .ok_or_else(|| {
            ReadError::Protocol(format!(
                "'{}' where a number was expected",
                String::from_utf8_lossy(text)
            ))
        })
}

/// Reads one frame; `depth` is how many arrays enclose it.
fn read_frame(reader: &mut impl BufRead, depth: usize) -> Result<Frame, ReadError> {
    let line = read_line(reader)?;
    let (&kind, rest) = line
        .split_first()
        .ok_or_else(|| ReadError::Protocol("an empty line".to_string()))?;
    match kind {
        b'+' => Ok(Frame::Simple(String::from_utf8_lossy(rest).into_owned())),
        b'-' => Ok(Frame::Error(String::from_utf8_lossy(rest).into_owned())),
        b':' => Ok(Frame::Integer(parse_integer(rest)?)),
        b'$' => {
            let len = parse_integer(rest)?;
            if len == -1 {
                return Ok(Frame::Bulk(None));
            }
            let len = u64::try_from(len)
                .ok()
                .filter(|&l| l <= MAX_BULK_BYTES)
                .ok_or_else(|| {
                    ReadError::Protocol(format!(
                        "a string of {len} bytes, where at most {MAX_BULK_BYTES} are expected"
                    ))
                })?;
            // Read what arrives, growing as it does: a claimed length costs nothing until
            // the bytes are really sent.
            let mut bytes = Vec::new();
            reader.take(len).read_to_end(&mut bytes)?;
            if bytes.len() as u64 != len {
                return Err(ReadError::Io(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the server closed the connection in the middle of a reply",
                )));
            }
            let mut crlf = [0u8; 2];
            reader.read_exact(&mut crlf)?;
            if &crlf != b"\r\n" {
                return Err(ReadError::Protocol(
                    "a string not followed by CRLF".to_string(),
                ));
            }
            Ok(Frame::Bulk(Some(bytes)))
        }
        b'*' => {
            let len = parse_integer(rest)?;
            if len == -1 {
                return Ok(Frame::Array(None));
            }
            if !(0..=MAX_ARRAY_LEN).contains(&len) {
                return Err(ReadError::Protocol(format!(
                    "an array of {len} elements, where at most {MAX_ARRAY_LEN} are expected"
                )));
            }
            if depth >= MAX_DEPTH {
                return Err(ReadError::Protocol(format!(
                    "arrays nested more than {MAX_DEPTH} deep"
                )));
            }
            let mut items = Vec::with_capacity((len as usize).min(64));
            for _ in 0..len {
                items.push(read_frame(reader, depth + 1)?);
            }
            Ok(Frame::Array(Some(items)))
        }
        other => Err(ReadError::Protocol(format!(
            "a reply starting with byte {other:#04x}, which RESP2 has no type for"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(bytes: &[u8]) -> Result<Frame, ReadError> {
        read_frame(&mut io::Cursor::new(bytes), 0)
    }

    #[test]
    fn every_resp2_type() {
        assert_eq!(parse(b"+OK\r\n").unwrap(), Frame::Simple("OK".into()));
        assert_eq!(
            parse(b"-ERR not found\r\n").unwrap(),
            Frame::Error("ERR not found".into())
        );
        assert_eq!(parse(b":-7\r\n").unwrap(), Frame::Integer(-7));
        assert_eq!(parse(b"$-1\r\n").unwrap(), Frame::Bulk(None));
        assert_eq!(parse(b"$0\r\n\r\n").unwrap(), Frame::Bulk(Some(vec![])));
        assert_eq!(
            parse(b"$4\r\na\r\nb\r\n").unwrap(),
            Frame::Bulk(Some(b"a\r\nb".to_vec()))
        );
        assert_eq!(parse(b"*-1\r\n").unwrap(), Frame::Array(None));
        assert_eq!(
            parse(b"*2\r\n:1\r\n$1\r\nx\r\n").unwrap(),
            Frame::Array(Some(vec![
                Frame::Integer(1),
                Frame::Bulk(Some(b"x".to_vec()))
            ]))
        );
    }

    #[test]
    fn claimed_lengths_are_not_trusted() {
        // A string claiming 60 MiB with 3 bytes behind it: an EOF, not a 60 MiB buffer.
        assert!(matches!(
            parse(b"$62914560\r\nabc"),
            Err(ReadError::Io(e)) if e.kind() == io::ErrorKind::UnexpectedEof
        ));
        // Past the limits: refused before reading on.
        for hostile in [
            &b"$9223372036854775807\r\n"[..],
            b"$-2\r\n",
            b"*9223372036854775807\r\n",
            b"*-5\r\n",
            b"*100000000\r\n",
        ] {
            assert!(
                matches!(parse(hostile), Err(ReadError::Protocol(_))),
                "{}",
                String::from_utf8_lossy(hostile)
            );
        }
        // An array claiming a million elements and sending one: EOF after one element.
        assert!(matches!(
            parse(b"*1000000\r\n:1\r\n"),
            Err(ReadError::Io(_))
        ));
        let nested = b"*1\r\n".repeat(MAX_DEPTH + 1);
        assert!(matches!(parse(&nested), Err(ReadError::Protocol(_))));
    }

    /// Random bytes, and valid replies cut and flipped at random (a fixed seed): every
    /// one is a frame or an error, never a panic, and nothing is read past the input.
    #[test]
    fn arbitrary_bytes_never_panic() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let valid: &[&[u8]] = &[
            b"*2\r\n:1\r\n$5\r\nhello\r\n",
            b"*2\r\n$1\r\n0\r\n*3\r\n$1\r\na\r\n$1\r\nb\r\n$-1\r\n",
            b"-ERR not found\r\n",
            b"*-1\r\n",
        ];
        const ALPHABET: &[u8] = b"*$:+-\r\n0123456789-ab";
        for round in 0..20_000 {
            let mut bytes: Vec<u8> = if round % 2 == 0 {
                (0..next() % 64)
                    .map(|_| ALPHABET[(next() % ALPHABET.len() as u64) as usize])
                    .collect()
            } else {
                valid[(next() % valid.len() as u64) as usize].to_vec()
            };
            if !bytes.is_empty() && round % 3 == 0 {
                let at = (next() % bytes.len() as u64) as usize;
                bytes[at] = next() as u8;
            }
            if !bytes.is_empty() && round % 5 == 0 {
                bytes.truncate((next() % bytes.len() as u64) as usize);
            }
            let mut cursor = io::Cursor::new(&bytes[..]);
            let _ = read_frame(&mut cursor, 0);
            assert!(cursor.position() <= bytes.len() as u64);
        }
    }

    #[test]
    fn malformed_replies() {
        for bad in [
            &b""[..],
            b"+OK\n",
            b"?x\r\n",
            b":abc\r\n",
            b"$3\r\nabcde",
            b"\r\n",
        ] {
            assert!(parse(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
        let long = [
            b"+".as_slice(),
            &vec![b'a'; MAX_LINE_BYTES as usize + 10],
            b"\r\n",
        ]
        .concat();
        assert!(matches!(parse(&long), Err(ReadError::Protocol(_))));
    }
}
