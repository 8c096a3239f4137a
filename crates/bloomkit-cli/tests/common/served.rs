//! `bloomkit serve` as a process, and a plain RESP client for it: what the server's tests
//! through the real binary share.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::JoinHandle;
use std::time::Duration;

use assert_cmd::cargo::cargo_bin;

/// The binary under test: this build's, or the one `BLOOMKIT_BIN` names (to measure
/// another build the same way, such as the one before a change).
pub fn binary() -> PathBuf {
    std::env::var_os("BLOOMKIT_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| cargo_bin!("bloomkit").to_path_buf())
}

/// The resident memory of process `pid` now and at its peak (`VmRSS`, `VmHWM` from
/// `/proc/PID/status`), in bytes; `None` where there is no `/proc`.
pub fn rss(pid: u32) -> Option<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| {
        status.lines().find_map(|line| {
            let kib: u64 = line
                .strip_prefix(name)?
                .trim()
                .strip_suffix("kB")?
                .trim()
                .parse()
                .ok()?;
            Some(kib * 1024)
        })
    };
    Some((field("VmRSS:")?, field("VmHWM:")?))
}

/// A TCP connection to `addr` whose reads time out after 10 s.
pub fn connect(addr: &str) -> TcpStream {
    let stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream
}

/// A RESP reply, as the tests below compare them.
#[derive(Clone, Debug, PartialEq)]
pub enum Resp {
    Simple(String),
    Error(String),
    Int(i64),
    Bulk(Option<Vec<u8>>),
    Array(Option<Vec<Resp>>),
}

impl Resp {
    /// `+OK`.
    pub fn ok() -> Resp {
        Resp::Simple("OK".into())
    }
}

/// Reads one reply; an error for EOF or a torn reply (the server died mid-reply).
pub fn read_reply(r: &mut impl BufRead) -> std::io::Result<Resp> {
    use std::io::{Error, ErrorKind};
    let mut line = Vec::new();
    r.read_until(b'\n', &mut line)?;
    if !line.ends_with(b"\r\n") {
        return Err(Error::new(ErrorKind::UnexpectedEof, "connection closed"));
    }
    line.truncate(line.len() - 2);
    let text = String::from_utf8(line[1..].to_vec()).map_err(Error::other)?;
    let number = || text.parse::<i64>().map_err(Error::other);
    Ok(match line[0] {
        b'+' => Resp::Simple(text.clone()),
        b'-' => Resp::Error(text.clone()),
        b':' => Resp::Int(number()?),
        b'$' => match number()? {
            -1 => Resp::Bulk(None),
            n => {
                let mut data = vec![0; usize::try_from(n).map_err(Error::other)? + 2];
                r.read_exact(&mut data)?;
                data.truncate(data.len() - 2);
                Resp::Bulk(Some(data))
            }
        },
        b'*' => match number()? {
            -1 => Resp::Array(None),
            n => Resp::Array(Some(
                (0..n).map(|_| read_reply(r)).collect::<Result<_, _>>()?,
            )),
        },
        other => return Err(Error::other(format!("unexpected reply type {other}"))),
    })
}

/// Appends `args` as a RESP request to `out`.
pub fn encode(out: &mut Vec<u8>, args: &[&str]) {
    out.extend(format!("*{}\r\n", args.len()).into_bytes());
    for arg in args {
        out.extend(format!("${}\r\n{arg}\r\n", arg.len()).into_bytes());
    }
}

/// A blocking RESP client over a plain `TcpStream`.
pub struct Client {
    /// Replies come in here.
    pub reader: BufReader<TcpStream>,
    /// Requests go out here.
    pub writer: TcpStream,
}

impl Client {
    /// Connects to `addr`.
    pub fn connect(addr: &str) -> Client {
        let stream = connect(addr);
        Client {
            reader: BufReader::new(stream.try_clone().unwrap()),
            writer: stream,
        }
    }

    /// Sends one command and reads its reply; an I/O error once the server is gone.
    pub fn try_call(&mut self, args: &[&str]) -> std::io::Result<Resp> {
        let mut request = Vec::new();
        encode(&mut request, args);
        self.writer.write_all(&request)?;
        read_reply(&mut self.reader)
    }

    /// Sends one command and reads its reply, failing the test on an I/O error.
    pub fn call(&mut self, args: &[&str]) -> Resp {
        self.try_call(args)
            .unwrap_or_else(|e| panic!("{args:?}: {e}"))
    }

    /// Sends `requests` pipelined, in batches (so neither side's socket buffer can fill
    /// while the other waits), and returns the replies in order.
    pub fn pipeline(&mut self, requests: &[Vec<String>]) -> Vec<Resp> {
        let mut replies = Vec::with_capacity(requests.len());
        for batch in requests.chunks(256) {
            let mut out = Vec::new();
            for request in batch {
                let args: Vec<&str> = request.iter().map(String::as_str).collect();
                encode(&mut out, &args);
            }
            self.writer.write_all(&out).unwrap();
            for _ in batch {
                replies.push(read_reply(&mut self.reader).unwrap());
            }
        }
        replies
    }
}

/// `bloomkit serve` on a data directory, with its standard error collected.
pub struct Served {
    /// The process.
    pub child: Child,
    /// Where it listens.
    pub addr: String,
    /// Its standard error, once it exits.
    pub stderr: Option<JoinHandle<String>>,
}

impl Served {
    /// Starts `bloomkit serve --port 0 --dir DIR EXTRA...` and waits until it listens
    /// (which it says only after recovering the directory).
    pub fn start(dir: &Path, extra: &[&str]) -> Served {
        let mut child = Command::new(binary())
            .args(["serve", "--port", "0", "--dir"])
            .arg(dir)
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start bloomkit serve");
        let mut stderr = child.stderr.take().expect("stderr");
        let stderr = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = stderr.read_to_string(&mut text);
            text
        });
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("read the first line");
        let Some(addr) = line.trim_end().strip_prefix("listening on ") else {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "unexpected first line {line:?}; stderr: {}",
                stderr.join().unwrap()
            );
        };
        Served {
            addr: addr.to_string(),
            child,
            stderr: Some(stderr),
        }
    }

    /// A new client of it.
    pub fn client(&self) -> Client {
        Client::connect(&self.addr)
    }

    /// Kills the process with SIGKILL (on unix) and returns its standard error.
    pub fn kill(mut self) -> String {
        self.child.kill().expect("kill");
        self.child.wait().expect("wait");
        self.stderr.take().unwrap().join().unwrap()
    }

    /// Sends `SHUTDOWN [args]`, expects a clean exit, and returns its standard error.
    pub fn shutdown(mut self, args: &[&str]) -> String {
        let mut client = self.client();
        let mut request = vec!["SHUTDOWN"];
        request.extend(args);
        let mut out = Vec::new();
        encode(&mut out, &request);
        client.writer.write_all(&out).unwrap();
        let mut rest = Vec::new();
        let _ = client.reader.read_to_end(&mut rest);
        let status = self.child.wait().expect("wait");
        let stderr = self.stderr.take().unwrap().join().unwrap();
        assert!(status.success(), "{status}; stderr: {stderr}");
        stderr
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        // A failed assertion must not leave a server running.
        if self.stderr.is_some() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The lines of a server's standard error that report a problem: its warnings (the
/// message after the log line's time and level) and every line not in the log's format
/// (the one-line error of a server that would not start). Notices are left out.
pub fn problems(stderr: &str) -> String {
    stderr
        .lines()
        .filter_map(|line| match log_line(line) {
            Some(('#', message)) => Some(message),
            Some(_) => None,
            None => Some(line),
        })
        .map(|line| format!("{line}\n"))
        .collect()
}

/// A log line's level mark and message: `pid:M dd Mon yyyy hh:mm:ss.mmm L message`.
pub fn log_line(line: &str) -> Option<(char, &str)> {
    let (pid, rest) = line.split_once(":M ")?;
    if pid.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut parts = rest.splitn(6, ' ');
    let (day, month, year, time) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    let digits = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_digit());
    let time_ok = time.len() == 12
        && time.bytes().enumerate().all(|(i, b)| match i {
            2 | 5 => b == b':',
            8 => b == b'.',
            _ => b.is_ascii_digit(),
        });
    if !(digits(day, 2) && month.len() == 3 && digits(year, 4) && time_ok) {
        return None;
    }
    let level = parts.next()?;
    let mark = level.chars().next().filter(|_| level.len() == 1)?;
    "#*-.".contains(mark).then_some(())?;
    Some((mark, parts.next().unwrap_or("")))
}
