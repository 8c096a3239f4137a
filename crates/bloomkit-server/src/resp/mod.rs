//! RESP, the Redis protocol, one module per direction.
//!
//! * [`decode`]: what comes in. The request parser (multibulk arrays and inline commands,
//!   with Redis's limits and the host's admission of large requests), and the decoder of one
//!   complete array, which the log's records are read back with.
//! * [`encode`]: what goes out. A [`Reply`](bloomkit_commands::Reply) tree as RESP2 or
//!   RESP3, an array of bulk strings (what the log's records hold), and the size a reply will
//!   take before it is encoded, which the memory limits weigh.
//!
//! The log's record format (`persist::log::format`) frames and checksums each record; the
//! command inside is a RESP array of bulk strings, written and read by these two modules, so
//! that a request and its logged form are one encoding.

pub mod decode;
pub mod encode;
