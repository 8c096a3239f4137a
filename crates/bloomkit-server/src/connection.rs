//! One client's byte stream: requests in, replies out.
//!
//! Replies are encoded into an output buffer and sent by [`Connection::flush`]. A client
//! that pipelines (writes many requests before reading) has all the requests already in
//! the read buffer answered before the first flush, so a batch of a thousand `BF.ADD`s
//! costs one `write` instead of a thousand. [`Connection::read_command`] flushes before
//! it waits for the network, so a client that sends one request and waits is never left
//! without its reply.
//!
//! With an idle timeout (`--timeout`), a client that takes longer than it to send one
//! request, or that stops reading its replies for longer than it, is closed. While reading,
//! the clock restarts when a request is complete, not at every byte, so a client that sends
//! a request a byte at a time (a slowloris) cannot hold its connection for ever, as it could
//! with Redis's `timeout`; while writing, every write that moves bytes restarts it, as in
//! Redis.

use std::io;
use std::time::Duration;

use bloomkit_commands::{Protocol, Reply};
use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::clients::Buffers;
use crate::resp::decode::{Admission, Frame, Parser, ProtocolError};
use crate::resp::encode;

/// Past this many bytes of encoded replies, the server should flush even while requests
/// remain buffered, so that a long pipeline does not grow the output without bound.
pub const FLUSH_THRESHOLD: usize = 64 * 1024;

/// Why a connection stopped.
#[derive(Debug)]
pub enum ConnError {
    /// The client broke the protocol; answer [`ProtocolError::message`] and close.
    Protocol(ProtocolError),
    /// The socket failed, or the client hung up in the middle of a request.
    Io(io::Error),
}

impl From<io::Error> for ConnError {
    fn from(e: io::Error) -> Self {
        ConnError::Io(e)
    }
}

impl From<ProtocolError> for ConnError {
    fn from(e: ProtocolError) -> Self {
        ConnError::Protocol(e)
    }
}

impl std::fmt::Display for ConnError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConnError::Protocol(e) => write!(f, "{e}"),
            ConnError::Io(e) => write!(f, "connection error: {e}"),
        }
    }
}

impl std::error::Error for ConnError {}

/// A client connection over any byte stream (a `TcpStream` in the server, an in-memory
/// duplex in tests).
#[derive(Debug)]
pub struct Connection<S> {
    stream: S,
    input: BytesMut,
    output: Vec<u8>,
    /// Bytes at the front of `output` already written by a flush that has not finished
    /// (it was cancelled, or is waiting for the socket).
    sent: usize,
    parser: Parser,
    protocol: Protocol,
    /// `--timeout`: `None` for never.
    idle_timeout: Option<Duration>,
    /// When the request being read must be complete (with an idle timeout).
    deadline: Option<tokio::time::Instant>,
    /// Whether a request was completed since the deadline was last set.
    progressed: bool,
}

impl<S: AsyncRead + AsyncWrite + Unpin> Connection<S> {
    /// Wraps a stream; the connection speaks RESP2 until told otherwise.
    pub fn new(stream: S) -> Self {
        Connection {
            stream,
            input: BytesMut::with_capacity(16 * 1024),
            output: Vec::with_capacity(16 * 1024),
            sent: 0,
            parser: Parser::new(),
            protocol: Protocol::Resp2,
            idle_timeout: None,
            deadline: None,
            progressed: true,
        }
    }

    /// Closes the connection (reads and flushes fail with [`io::ErrorKind::TimedOut`]) when
    /// the client takes longer than `timeout` to send a request or to read a flush's bytes;
    /// `None` for never.
    pub fn with_idle_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.idle_timeout = timeout;
        self
    }

    /// The next request, reading from the socket only when none is buffered (and flushing
    /// pending replies before it waits). `Ok(None)` is a clean end: the client closed
    /// between requests.
    ///
    /// # Errors
    ///
    /// [`ConnError::Protocol`] for a malformed request; [`ConnError::Io`] for a socket
    /// error or a client that hung up in the middle of a request.
    pub async fn read_command(&mut self) -> Result<Option<Vec<Bytes>>, ConnError> {
        loop {
            if let Some(request) = self.next_buffered()? {
                return Ok(Some(request));
            }
            self.flush().await?;
            if !self.fill().await? {
                return Ok(None);
            }
        }
    }

    /// The next request already in the read buffer, without touching the socket.
    ///
    /// # Errors
    ///
    /// [`ProtocolError`] for a malformed request.
    pub fn next_buffered(&mut self) -> Result<Option<Vec<Bytes>>, ProtocolError> {
        let request = self.parser.parse(&mut self.input)?;
        self.progressed |= request.is_some();
        Ok(request)
    }

    /// The next request already in the read buffer, asking `admission` before a request
    /// holds more of the buffer; a request it refused comes out as [`Frame::Refused`].
    ///
    /// # Errors
    ///
    /// [`ProtocolError`] for a malformed request, or one `admission` closes.
    pub fn next_frame(
        &mut self,
        admission: &mut dyn Admission,
    ) -> Result<Option<Frame>, ProtocolError> {
        let frame = self.parser.parse_admitted(&mut self.input, admission)?;
        self.progressed |= frame.is_some();
        Ok(frame)
    }

    /// Whether a request is half-read.
    pub fn in_request(&self) -> bool {
        !self.parser.is_idle()
    }

    /// The sizes of the buffers, for `CLIENT LIST` and the memory limits.
    pub fn buffers(&self) -> Buffers {
        Buffers {
            input_len: self.input.len(),
            input_capacity: self.input.capacity(),
            output_len: self.output_unsent(),
            output_capacity: self.output.capacity(),
        }
    }

    /// Reads more bytes into the buffer: `Ok(false)` on a clean end of stream.
    ///
    /// # Errors
    ///
    /// A socket error, or [`io::ErrorKind::UnexpectedEof`] when the client hangs up in the
    /// middle of a request.
    pub async fn fill(&mut self) -> io::Result<bool> {
        // A one-off huge request should not pin its buffer for the connection's lifetime
        // (Redis resizes an idle query buffer for the same reason): between requests, a
        // buffer past 1 MiB starts again small.
        if self.input.is_empty() && self.parser.is_idle() && self.input.capacity() > 1024 * 1024 {
            self.input = BytesMut::with_capacity(16 * 1024);
        }
        let read = match self.idle_timeout {
            None => self.stream.read_buf(&mut self.input).await?,
            Some(timeout) => {
                // The clock restarts only once a request was completed since it last did:
                // bytes alone do not keep a connection alive.
                if self.progressed || self.deadline.is_none() {
                    self.deadline = Some(tokio::time::Instant::now() + timeout);
                    self.progressed = false;
                }
                let deadline = self.deadline.unwrap_or_else(tokio::time::Instant::now);
                tokio::time::timeout_at(deadline, self.stream.read_buf(&mut self.input))
                    .await
                    .map_err(|_| timed_out(timeout, "send a request"))??
            }
        };
        if read == 0 {
            if self.input.is_empty() && self.parser.is_idle() {
                return Ok(false);
            }
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "client closed the connection in the middle of a request",
            ));
        }
        Ok(true)
    }

    /// Encodes a reply into the output buffer in the connection's protocol.
    pub fn write_reply(&mut self, reply: &Reply) {
        encode::reply(reply, self.protocol, &mut self.output);
    }

    /// Bytes of encoded replies not yet sent, counted from the last completed flush (the
    /// offsets [`Connection::replace_unsent`] takes).
    pub fn pending_output(&self) -> usize {
        self.output.len()
    }

    /// Bytes of encoded replies not yet written to the socket.
    pub fn output_unsent(&self) -> usize {
        self.output.len() - self.sent
    }

    /// Replaces some of the replies not yet sent. `starts` are where each unsent reply
    /// begins, in order, as [`Connection::pending_output`] said before each
    /// [`Connection::write_reply`] since the last flush; `replace(i)` gives the reply to send
    /// instead of the `i`th, or `None` to keep it as it is.
    pub fn replace_unsent(
        &mut self,
        starts: &[usize],
        mut replace: impl FnMut(usize) -> Option<Reply>,
    ) {
        let old = std::mem::take(&mut self.output);
        let first = starts.first().copied().unwrap_or(old.len()).min(old.len());
        let mut out = Vec::with_capacity(old.len());
        out.extend_from_slice(&old[..first]);
        for (i, &start) in starts.iter().enumerate() {
            let end = starts
                .get(i + 1)
                .copied()
                .unwrap_or(old.len())
                .min(old.len());
            match replace(i) {
                Some(reply) => encode::reply(&reply, self.protocol, &mut out),
                None => out.extend_from_slice(&old[start.min(end)..end]),
            }
        }
        self.output = out;
    }

    /// Sends every buffered reply. Cancel-safe: dropped before it completes, it has sent
    /// a part of the output and the next call sends the rest.
    ///
    /// # Errors
    ///
    /// A socket error.
    pub async fn flush(&mut self) -> io::Result<()> {
        if !self.output.is_empty() {
            while self.sent < self.output.len() {
                let write = self.stream.write(&self.output[self.sent..]);
                let written = match self.idle_timeout {
                    None => write.await?,
                    // As in Redis, every write that moves bytes restarts the clock: a client
                    // reading a long reply slowly but steadily stays, one that stopped does not.
                    Some(timeout) => tokio::time::timeout(timeout, write)
                        .await
                        .map_err(|_| timed_out(timeout, "read its replies"))??,
                };
                if written == 0 {
                    return Err(io::ErrorKind::WriteZero.into());
                }
                self.sent += written;
            }
            self.stream.flush().await?;
            self.output.clear();
            self.sent = 0;
            // A one-off huge reply should not pin its buffer for the connection's lifetime.
            if self.output.capacity() > 1024 * 1024 {
                self.output.shrink_to(16 * 1024);
            }
        }
        Ok(())
    }

    /// The protocol replies are encoded in.
    pub fn protocol(&self) -> Protocol {
        self.protocol
    }

    /// Holds the next requests to the limits of a client that has not authenticated, or
    /// lifts them (see [`Parser::set_unauthenticated`]).
    pub fn set_authenticated(&mut self, authenticated: bool) {
        self.parser.set_unauthenticated(!authenticated);
    }

    /// Switches the protocol (after `HELLO 2` or `HELLO 3`); later replies use it.
    pub fn set_protocol(&mut self, protocol: Protocol) {
        self.protocol = protocol;
    }

    /// Answers a protocol error and flushes, before the caller drops the connection.
    ///
    /// # Errors
    ///
    /// A socket error (the client may already be gone; the caller closes either way).
    pub async fn reject(&mut self, error: &ProtocolError) -> io::Result<()> {
        self.write_reply(&Reply::Error(error.message()));
        self.flush().await
    }
}

/// The error for a client that outlived `--timeout`.
fn timed_out(timeout: Duration, doing: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::TimedOut,
        format!("the client took longer than the timeout ({timeout:?}) to {doing}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn pipelined_requests_are_answered_in_one_flush() {
        let (client, server) = tokio::io::duplex(1024);
        let mut conn = Connection::new(server);
        let (mut client_read, mut client_write) = tokio::io::split(client);
        client_write
            .write_all(b"*1\r\n$4\r\nPING\r\nPING\r\n")
            .await
            .unwrap();
        // Half-close: the server sees the end of the requests, the replies still flow back.
        client_write.shutdown().await.unwrap();
        let mut answered = 0;
        while let Some(request) = conn.read_command().await.unwrap() {
            assert_eq!(request, vec![Bytes::from_static(b"PING")]);
            conn.write_reply(&Reply::Simple("PONG".into()));
            answered += 1;
        }
        assert_eq!(answered, 2);
        conn.flush().await.unwrap();
        drop(conn);
        let mut got = Vec::new();
        client_read.read_to_end(&mut got).await.unwrap();
        assert_eq!(got, b"+PONG\r\n+PONG\r\n");
    }

    #[tokio::test]
    async fn unsent_replies_can_be_replaced_one_by_one() {
        let (mut client, server) = tokio::io::duplex(1024);
        let mut conn = Connection::new(server);
        let mut starts = Vec::new();
        for reply in [Reply::Ok, Reply::Integer(7), Reply::Simple("PONG".into())] {
            starts.push(conn.pending_output());
            conn.write_reply(&reply);
        }
        conn.replace_unsent(&starts, |i| (i == 1).then(|| Reply::error("MISCONF no")));
        conn.flush().await.unwrap();
        let expected = b"+OK\r\n-MISCONF no\r\n+PONG\r\n";
        let mut got = vec![0u8; expected.len()];
        client.read_exact(&mut got).await.unwrap();
        assert_eq!(got, expected);
    }

    #[tokio::test]
    async fn hanging_up_mid_request_is_an_error_not_a_clean_end() {
        let (mut client, server) = tokio::io::duplex(1024);
        let mut conn = Connection::new(server);
        client.write_all(b"*2\r\n$4\r\nECHO\r\n").await.unwrap();
        drop(client);
        match conn.read_command().await {
            Err(ConnError::Io(e)) => assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof),
            other => panic!("expected an I/O error, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn resp3_switch_changes_the_encoding() {
        let (mut client, server) = tokio::io::duplex(1024);
        let mut conn = Connection::new(server);
        conn.write_reply(&Reply::Bool(true));
        conn.set_protocol(Protocol::Resp3);
        conn.write_reply(&Reply::Bool(true));
        conn.flush().await.unwrap();
        let mut got = [0u8; 8];
        client.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b":1\r\n#t\r\n");
    }
}
