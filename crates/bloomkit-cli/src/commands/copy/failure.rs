//! How copying one key can fail: that key alone, or everything after it too.

use crate::error::Error;

use super::resp::RespError;

/// Why a key was not copied.
#[derive(Debug)]
pub enum Failure {
    /// This key could not be copied (a server refused a chunk, the copy does not match):
    /// say why, and go on with the next key.
    Key(String),
    /// Nothing more can be copied (a connection broke, a file cannot be written): stop.
    Fatal(Error),
}

impl From<RespError> for Failure {
    fn from(e: RespError) -> Self {
        Failure::Fatal(Error::Message(e.to_string()))
    }
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure::Fatal(e)
    }
}

/// Where a dump's chunks go, one at a time: `(iterator, bytes)` as `SCANDUMP` answers them
/// and `LOADCHUNK` takes them.
pub type Sink<'a> = dyn FnMut(i64, &[u8]) -> Result<(), Failure> + 'a;
