//! The generic commands: connection, keyspace and server commands, and the command table
//! `COMMAND` reports and the dispatcher routes by.

pub mod connection;
pub mod glob;
pub mod keys;
pub mod server;
pub mod table;
