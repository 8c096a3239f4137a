//! The CLI's error: what we were doing, and why it failed.
//!
//! `main` prints it as one line, `bloomkit: <what we were doing>: <why>`, and exits 2. The
//! "why" is the library's or the OS's own message, which already says how to fix the problem;
//! the "what" adds the file name, which only the CLI knows.

use std::fmt;
use std::io;

/// A specialised `Result` whose error is [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything a subcommand can fail with.
#[derive(Debug)]
pub enum Error {
    /// The library refused something (a bad rate, a corrupt file, incompatible filters).
    Filter {
        /// What we were doing, naming the file if there is one.
        doing: String,
        /// The library's reason.
        source: bloomkit::Error,
    },
    /// The OS refused something (a missing file, a full disk, a closed pipe).
    Io {
        /// What we were doing, naming the file if there is one.
        doing: String,
        /// The OS's reason.
        source: io::Error,
    },
    /// The library's reason alone says it all (an invalid `--fp-rate`, say).
    Plain(bloomkit::Error),
    /// Anything else, already worded as a whole message.
    Message(String),
}

impl Error {
    /// `true` if standard output was closed under us (`bloomkit query f | head`): the reader
    /// has all it wants, so this is not a failure worth reporting.
    pub fn is_broken_pipe(&self) -> bool {
        let io = match self {
            Error::Io { source, .. } => Some(source),
            Error::Filter {
                source: bloomkit::Error::Io(source),
                ..
            } => Some(source),
            _ => None,
        };
        io.is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Filter { doing, source } => write!(f, "{doing}: {source}"),
            Error::Io { doing, source } => write!(f, "{doing}: {source}"),
            Error::Plain(source) => write!(f, "{source}"),
            Error::Message(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for Error {}

impl From<bloomkit::Error> for Error {
    fn from(source: bloomkit::Error) -> Self {
        Error::Plain(source)
    }
}

/// Adds what we were doing to a library or I/O error.
pub trait Context<T> {
    /// Wraps the error with `doing()`, computed only on failure.
    fn context(self, doing: impl FnOnce() -> String) -> Result<T>;
}

impl<T> Context<T> for io::Result<T> {
    fn context(self, doing: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|source| Error::Io {
            doing: doing(),
            source,
        })
    }
}

impl<T> Context<T> for bloomkit::Result<T> {
    fn context(self, doing: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|source| Error::Filter {
            doing: doing(),
            source,
        })
    }
}
