//! RESP on the wire: replies as [`Resp`] (RESP2 and RESP3, every type kept), requests as
//! bytes ([`encode`], [`request`]), and [`Conn`], a blocking client over a plain
//! `TcpStream` that parses every reply exactly (no client library in between, so a test
//! sees what the server wrote).

use std::fmt::Debug;
use std::io::{BufRead, BufReader, Error, ErrorKind, Write};
use std::net::{TcpStream, ToSocketAddrs};

use crate::wait::GENEROUS;

/// A reply, as the wire has it.
#[derive(Clone, Debug, PartialEq)]
pub enum Resp {
    /// `+...`
    Simple(String),
    /// `-...`
    Error(String),
    /// `:n`
    Int(i64),
    /// `$n ...` (and RESP3's verbatim `=n ...`)
    Bulk(Vec<u8>),
    /// `$-1`, `*-1`, `_`
    Nil,
    /// `*n ...`, `~n ...`, `>n ...`
    Array(Vec<Resp>),
    /// `%n ...`
    Map(Vec<(Resp, Resp)>),
    /// `#t`/`#f`
    Bool(bool),
    /// `,x`
    Double(String),
}

impl Resp {
    /// `+OK`.
    pub fn ok() -> Resp {
        Resp::Simple("OK".into())
    }

    /// The integer of an `Int`.
    ///
    /// # Panics
    ///
    /// On any other reply, naming it.
    pub fn int(&self) -> i64 {
        match self {
            Resp::Int(n) => *n,
            other => panic!("expected an integer, got {other:?}"),
        }
    }

    /// The bytes of a bulk or simple string.
    ///
    /// # Panics
    ///
    /// On any other reply, naming it.
    pub fn bytes(&self) -> Vec<u8> {
        match self {
            Resp::Bulk(b) => b.clone(),
            Resp::Simple(s) => s.as_bytes().to_vec(),
            other => panic!("expected a string, got {other:?}"),
        }
    }

    /// The text of a bulk or simple string (invalid UTF-8 replaced).
    ///
    /// # Panics
    ///
    /// On any other reply, naming it.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes()).into_owned()
    }

    /// The elements of an array.
    ///
    /// # Panics
    ///
    /// On any other reply, naming it.
    pub fn array(&self) -> Vec<Resp> {
        match self {
            Resp::Array(items) => items.clone(),
            other => panic!("expected an array, got {other:?}"),
        }
    }

    /// Whether this is an error.
    pub fn is_error(&self) -> bool {
        matches!(self, Resp::Error(_))
    }
}

/// Appends `args` as one RESP request (`*N\r\n$len\r\narg\r\n...`) to `out`, bytes as
/// they are.
pub fn encode<A: AsRef<[u8]>>(out: &mut Vec<u8>, args: &[A]) {
    out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for arg in args {
        let arg = arg.as_ref();
        out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
}

/// `args` as one RESP request.
///
/// ```
/// assert_eq!(bloomkit_testkit::resp::request(&["GET", "k"]), b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n");
/// ```
pub fn request<A: AsRef<[u8]>>(args: &[A]) -> Vec<u8> {
    let mut out = Vec::new();
    encode(&mut out, args);
    out
}

/// Reads one reply; an `UnexpectedEof` error for a connection closed before or during it
/// (a server that died mid-reply).
///
/// ```
/// use bloomkit_testkit::resp::{read_reply, Resp};
/// let mut wire = &b"*2\r\n:1\r\n$-1\r\n"[..];
/// assert_eq!(read_reply(&mut wire).unwrap(), Resp::Array(vec![Resp::Int(1), Resp::Nil]));
/// assert!(read_reply(&mut &b"$5\r\nab"[..]).is_err());
/// ```
pub fn read_reply(r: &mut impl BufRead) -> std::io::Result<Resp> {
    let mut line = Vec::new();
    r.read_until(b'\n', &mut line)?;
    if line.len() < 3 || !line.ends_with(b"\r\n") {
        return Err(Error::new(ErrorKind::UnexpectedEof, "connection closed"));
    }
    line.truncate(line.len() - 2);
    let text = String::from_utf8_lossy(&line[1..]).into_owned();
    let count = || text.parse::<i64>().map_err(Error::other);
    Ok(match line[0] {
        b'+' => Resp::Simple(text),
        b'-' => Resp::Error(text),
        b':' => Resp::Int(count()?),
        b'_' => Resp::Nil,
        b'#' => Resp::Bool(text == "t"),
        b',' => Resp::Double(text),
        b'$' | b'=' => match usize::try_from(count()?) {
            Err(_) => Resp::Nil,
            Ok(n) => {
                let mut body = vec![0; n + 2];
                r.read_exact(&mut body)?;
                body.truncate(n);
                Resp::Bulk(body)
            }
        },
        b'*' | b'~' | b'>' => match usize::try_from(count()?) {
            Err(_) => Resp::Nil,
            Ok(n) => Resp::Array((0..n).map(|_| read_reply(r)).collect::<Result<_, _>>()?),
        },
        b'%' => {
            let mut pairs = Vec::new();
            for _ in 0..count()? {
                pairs.push((read_reply(r)?, read_reply(r)?));
            }
            Resp::Map(pairs)
        }
        other => {
            return Err(Error::other(format!(
                "unexpected reply type {:?}",
                other as char
            )))
        }
    })
}

/// A blocking RESP connection. Reads and writes time out after [`GENEROUS`], so a server
/// that never answers fails the test instead of hanging it.
pub struct Conn {
    /// Replies come in here (for tests that read raw bytes or replies by hand).
    pub reader: BufReader<TcpStream>,
    /// Requests go out here (for tests that write raw bytes).
    pub writer: TcpStream,
}

impl Conn {
    /// Connects to `addr`, or fails the test.
    pub fn open<A: ToSocketAddrs + Debug>(addr: A) -> Conn {
        Conn::try_open(&addr).unwrap_or_else(|e| panic!("connect to {addr:?}: {e}"))
    }

    /// Connects to `addr`.
    pub fn try_open<A: ToSocketAddrs>(addr: A) -> std::io::Result<Conn> {
        let stream = TcpStream::connect(addr)?;
        stream.set_read_timeout(Some(GENEROUS))?;
        stream.set_write_timeout(Some(GENEROUS))?;
        stream.set_nodelay(true)?;
        Ok(Conn {
            reader: BufReader::new(stream.try_clone()?),
            writer: stream,
        })
    }

    /// Sends a command (binary-safe arguments) without reading its reply.
    pub fn send<A: AsRef<[u8]>>(&mut self, args: &[A]) -> std::io::Result<()> {
        self.writer.write_all(&request(args))
    }

    /// Reads one reply.
    pub fn read(&mut self) -> std::io::Result<Resp> {
        read_reply(&mut self.reader)
    }

    /// Sends a command and reads its reply; an I/O error once the server is gone.
    pub fn try_cmd<A: AsRef<[u8]>>(&mut self, args: &[A]) -> std::io::Result<Resp> {
        self.send(args)?;
        self.read()
    }

    /// Sends a command and reads its reply, or fails the test naming the command.
    pub fn cmd<A: AsRef<[u8]>>(&mut self, args: &[A]) -> Resp {
        self.try_cmd(args).unwrap_or_else(|e| {
            let shown: Vec<String> = args
                .iter()
                .map(|a| String::from_utf8_lossy(a.as_ref()).into_owned())
                .collect();
            panic!("{}: {e}", shown.join(" "))
        })
    }

    /// A command given as one line of space-separated words.
    pub fn line(&mut self, line: &str) -> Resp {
        let words: Vec<&str> = line.split(' ').collect();
        self.cmd(&words)
    }

    /// Sends `requests` pipelined, in batches of 256 (so neither side's socket buffer can
    /// fill while the other waits), and returns the replies in order.
    pub fn pipeline<A: AsRef<[u8]>>(&mut self, requests: &[Vec<A>]) -> Vec<Resp> {
        let mut replies = Vec::with_capacity(requests.len());
        for batch in requests.chunks(256) {
            let mut out = Vec::new();
            for args in batch {
                encode(&mut out, args);
            }
            self.writer.write_all(&out).expect("send a pipeline");
            for _ in batch {
                replies.push(self.read().expect("a pipelined reply"));
            }
        }
        replies
    }
}
