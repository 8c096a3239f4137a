//! What the keyspace asks of persistence: the seam between the two.
//!
//! The keyspace calls a [`Journal`] at three moments, and nowhere else (`EXEC` also brackets
//! its commands' appends with [`Journal::begin_transaction`] and
//! [`Journal::end_transaction`]):
//!
//! 1. [`Journal::append`] with the commands a write logs, while it still holds the lock of
//!    every shard it changed, so the log's order per key is the order in which changes were
//!    applied;
//! 2. [`Journal::durable`], awaited by the connection after the locks are released and
//!    before the reply is sent, so an acknowledged write is as durable as `--appendfsync`
//!    promises (and a slow disk never holds a shard lock);
//! 3. [`Journal::begin_snapshot`] with every shard locked, so that the log generation it
//!    starts holds exactly the changes the snapshot's values do not; the values (cheap `Arc`
//!    clones) are then written by [`SnapshotWriter::write`] on a blocking thread, with every
//!    lock released.
//!
//! Keeping the seam a trait lets the server run, and be tested, without any persistence
//! ([`NoJournal`]), and keeps the file formats out of the keyspace.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::{Arc, RwLockReadGuard};

use bloomkit_commands::{Record, Value};
use bytes::Bytes;

use super::shard::{read, ShardMap};
use super::Keyspace;

/// A position in the log: [`Journal::durable`] of a ticket waits for everything appended
/// up to and including it. Tickets from one journal are ordered, so a connection that ran
/// several pipelined writes waits once, for the last.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Ticket(pub u64);

/// A future the connection awaits before replying.
pub type Durable<'a> = Pin<Box<dyn Future<Output = io::Result<()>> + Send + 'a>>;

/// One key of a snapshot: cheap clones of what the keyspace held when the snapshot began.
#[derive(Clone, Debug)]
pub struct SnapshotEntry {
    /// The key.
    pub key: Bytes,
    /// When the key expires (Unix time, milliseconds), if ever.
    pub expires_at_ms: Option<u64>,
    /// The value, shared with the keyspace until a writer changes it (copy on write).
    pub value: Arc<Value>,
}

/// The append-only log and snapshots, as the keyspace uses them.
pub trait Journal: Send + Sync + 'static {
    /// Appends `commands` (each a request, name first, as replay will run it) to the log.
    ///
    /// Called with the shard locks of the keys they change held: it must not block on the
    /// disk (buffer, or hand the bytes to a writer thread). Returns what to await before
    /// replying, or `None` when there is nothing to wait for (no persistence). A buffering
    /// journal returns a ticket whatever its fsync policy: the reply must wait at least for
    /// the record to be written.
    fn append(&self, commands: &[Vec<Bytes>]) -> Option<Ticket>;

    /// [`Journal::append`] for a filter command's records, which may lie where the command
    /// holds its key and items. The default builds each record's words; a journal that
    /// encodes records as they lie overrides it.
    fn append_records(&self, records: &[Record<'_>]) -> Option<Ticket> {
        let words: Vec<Vec<Bytes>> = records.iter().map(Record::to_vec).collect();
        self.append(&words)
    }

    /// Completes when everything up to `ticket` is written and, as the fsync policy
    /// requires, synced. An error means the write may not survive a crash: the connection
    /// answers its text as the command's error instead of the reply.
    fn durable(&self, ticket: Ticket) -> Durable<'_>;

    /// Starts a transaction: the records appended until [`Journal::end_transaction`] are
    /// one unit, which recovery replays whole or not at all. Called by `EXEC` while it holds
    /// the keyspace's gate exclusively, so nothing else appends meanwhile. The default does
    /// nothing (nothing is persisted).
    fn begin_transaction(&self) {}

    /// Ends the transaction [`Journal::begin_transaction`] started, returning what to await
    /// before `EXEC`'s reply if it appended anything (its closing record), else `None`.
    fn end_transaction(&self) -> Option<Ticket> {
        None
    }

    /// Why write commands are refused now, as the error line to answer them with (Redis's
    /// `MISCONF Errors writing to the AOF file: ...`), or `None` (the default) while the
    /// journal takes writes. The dispatcher asks before a write command runs, so a refused
    /// command changes nothing; reads are never refused.
    fn refuses_writes(&self) -> Option<String> {
        None
    }

    /// Starts a snapshot: called with every shard locked (so no write is in flight), it
    /// starts a new log generation and returns the writer for the values, which runs after
    /// the locks are released.
    ///
    /// # Errors
    ///
    /// When the log cannot be rotated (the directory is not writable, say).
    fn begin_snapshot(&self) -> io::Result<Box<dyn SnapshotWriter>>;

    /// The ticket of everything appended so far, if replies that only *observe* the
    /// keyspace must wait for it too; `None` (the default) if they need not.
    ///
    /// A read, or a write that changed nothing (`BF.ADD` of an item already there answers
    /// 0 and logs nothing), may see another client's change that is applied but not yet
    /// durable. Answering before it is would acknowledge a state a crash can take back:
    /// "already there", then after a restart, not there. So such replies wait for the
    /// position read after the command ran: with `appendfsync always` until it is fsynced
    /// (Redis sends no reply before the fsync of every write that preceded it), with the
    /// other policies until it has left the journal's buffer (so a `kill -9` cannot take it
    /// back). With one fsync or `write` covering many records this costs little, and nothing
    /// when nothing is pending.
    fn position(&self) -> Option<Ticket> {
        None
    }

    /// Whether the record of `ticket` is still in the journal's buffer, not yet handed to
    /// the OS: [`Journal::durable`] would then make a `write` for it (and for everything
    /// buffered before it). The server uses this to let other clients' commands join that
    /// `write` first. False by default (nothing is buffered).
    fn is_buffered(&self, _ticket: Ticket) -> bool {
        false
    }

    /// Whether the log has grown enough that a snapshot should compact it. The server
    /// asks a few times a second and starts a background snapshot when this says so.
    fn wants_snapshot(&self) -> bool {
        false
    }

    /// Writes and syncs everything appended so far: called once at shutdown, whatever the
    /// fsync policy.
    ///
    /// # Errors
    ///
    /// When the log cannot be written or synced.
    fn sync(&self) -> io::Result<()> {
        Ok(())
    }

    /// Syncs and lets go of the storage (a data directory's lock) once the server has
    /// stopped, however many references to the journal remain; later appends fail.
    ///
    /// # Errors
    ///
    /// When the final sync fails.
    fn close(&self) -> io::Result<()> {
        self.sync()
    }

    /// Whether anything is persisted at all (`aof_enabled` in `INFO persistence`).
    fn enabled(&self) -> bool;

    /// Figures for `INFO persistence`, as `name`/value pairs, with Redis's field names
    /// where Redis has the field (`aof_current_size`, `rdb_changes_since_last_save`...). A
    /// field the server also reports from its own bookkeeping is replaced by this one: the
    /// journal knows the files. None by default.
    fn info_fields(&self) -> Vec<(&'static str, String)> {
        Vec::new()
    }
}

/// Writes one snapshot's values; see [`Journal::begin_snapshot`].
pub trait SnapshotWriter: Send {
    /// Writes `entries` to a temporary file, syncs it, renames it into place and drops the
    /// log generations it replaces. Runs on a blocking thread.
    ///
    /// # Errors
    ///
    /// Any I/O error; the previous snapshot and the logs stay in place, so nothing is lost.
    fn write(self: Box<Self>, entries: Vec<SnapshotEntry>) -> io::Result<()>;
}

/// No persistence: nothing is written, nothing needs waiting for, and a snapshot is a
/// no-op. What the server uses until a persistent journal is plugged in, and what tests
/// that do not exercise persistence use.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoJournal;

impl Journal for NoJournal {
    fn append(&self, _commands: &[Vec<Bytes>]) -> Option<Ticket> {
        None
    }

    fn append_records(&self, _records: &[Record<'_>]) -> Option<Ticket> {
        None
    }

    fn durable(&self, _ticket: Ticket) -> Durable<'_> {
        Box::pin(std::future::ready(Ok(())))
    }

    fn begin_snapshot(&self) -> io::Result<Box<dyn SnapshotWriter>> {
        Ok(Box::new(NoSnapshot))
    }

    fn enabled(&self) -> bool {
        false
    }
}

/// [`NoJournal`]'s snapshot: drops the entries.
struct NoSnapshot;

impl SnapshotWriter for NoSnapshot {
    fn write(self: Box<Self>, _entries: Vec<SnapshotEntry>) -> io::Result<()> {
        Ok(())
    }
}

impl Keyspace {
    /// Starts a snapshot: with every shard read-locked (which excludes every writer, and
    /// only writers), asks the journal to start a new log generation and clones the live
    /// entries' `Arc`s. Write the entries with the returned writer, on a blocking thread.
    ///
    /// A key that a long command holds for a write has its value out of the map: the cut
    /// waits until no write lease is held ([`Keyspace::want_cut`], then
    /// [`Keyspace::write_leases_ended`]), and does not wait for an `EXEC` (it never blocks its
    /// thread on the gate): `WouldBlock` says to wait for either and call again.
    ///
    /// # Errors
    ///
    /// While loading (there is no journal yet), or if the journal cannot begin one;
    /// `WouldBlock` as above.
    pub fn begin_snapshot(&self) -> io::Result<(Box<dyn SnapshotWriter>, Vec<SnapshotEntry>)> {
        let journal = self
            .journal
            .get()
            .ok_or_else(|| io::Error::other("the keyspace is still loading"))?;
        let would_block = || io::Error::new(io::ErrorKind::WouldBlock, "an EXEC or a long write");
        // Never between two commands of an `EXEC`: a transaction's records stay in one
        // log generation.
        let Some(_entered) = self.gate.try_enter(0) else {
            return Err(would_block());
        };
        let maps: Vec<RwLockReadGuard<'_, ShardMap>> = self.shards.iter().map(read).collect();
        // Leases are taken with the gate held exclusively, so none starts while this holds it.
        if self.write_leases.load(Ordering::Acquire) != 0 {
            return Err(would_block());
        }
        let writer = journal.begin_snapshot()?;
        let mut entries = Vec::with_capacity(maps.iter().map(|m| m.entries.len()).sum());
        for map in &maps {
            entries.extend(
                map.entries
                    .iter()
                    .filter(|(_, entry)| !entry.is_placeholder())
                    // Expired keys too: the snapshot is the map exactly as the log left it.
                    // Leaving them out would make the snapshot depend on the clock: if the
                    // wall clock stepped back, such a key could be live again, and a later
                    // logged command on it (RENAME, CF.DEL) would not replay. The key's
                    // expiry travels with it, and the first access after loading (or the
                    // sweep) removes it, logging the `DEL`.
                    .map(|(key, entry)| SnapshotEntry {
                        key: key.clone(),
                        expires_at_ms: entry.expires_at_ms,
                        value: Arc::clone(&entry.value),
                    }),
            );
        }
        for shard in self.shards.iter() {
            shard.dirty.store(0, Ordering::Relaxed);
        }
        drop(maps);
        Ok((writer, entries))
    }
}
