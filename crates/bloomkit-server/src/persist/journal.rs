//! [`Persistence`] behind the keyspace's [`Journal`] seam.

use std::io;

use bloomkit_commands::Record;
use bytes::Bytes;

use super::{Persistence, Ticket as LogTicket};
use crate::keyspace::{Durable, Journal, SnapshotEntry, SnapshotWriter, Ticket};

/// The append-only log and snapshots of a data directory, as the keyspace's [`Journal`].
///
/// While the log cannot be written, [`Journal::refuses_writes`] answers Redis's `MISCONF`
/// line, which the dispatcher sends to every write command before it runs; reads go on.
/// Once the log stops for good (a failed fsync, a deleted file, a command it could not
/// encode), that lasts until the server restarts: the keyspace may hold a change the log
/// will never bring back, and a later command could acknowledge something that depends on
/// it.
#[derive(Debug)]
pub struct PersistentJournal {
    persistence: Persistence,
}

/// The ticket handed out when an append was refused: [`Journal::durable`] fails for it.
const FAILED: u64 = u64::MAX;

impl PersistentJournal {
    /// Wraps an open data directory.
    pub fn new(persistence: Persistence) -> Self {
        PersistentJournal { persistence }
    }

    /// The data directory, for `INFO persistence` and `SAVE`.
    pub fn persistence(&self) -> &Persistence {
        &self.persistence
    }
}

/// The keyspace's ticket for what the log answered an append.
fn ticket_of(appended: io::Result<LogTicket>) -> Ticket {
    match appended {
        Ok(ticket) => Ticket(ticket.sequence()),
        // The log has said why on standard error, once; the reply says it to the client.
        Err(_) => Ticket(FAILED),
    }
}

impl Journal for PersistentJournal {
    fn append(&self, commands: &[Vec<Bytes>]) -> Option<Ticket> {
        Some(ticket_of(self.persistence.append(commands)))
    }

    fn append_records(&self, records: &[Record<'_>]) -> Option<Ticket> {
        Some(ticket_of(self.persistence.append_records(records)))
    }

    fn durable(&self, ticket: Ticket) -> Durable<'_> {
        if ticket.0 == FAILED {
            let reason = self.persistence.held_back_reply().unwrap_or_else(|| {
                "MISCONF Errors writing to the AOF file: the log refused a write".to_string()
            });
            return Box::pin(std::future::ready(Err(io::Error::other(reason))));
        }
        Box::pin(self.persistence.durable(LogTicket::from_sequence(ticket.0)))
    }

    fn begin_transaction(&self) {
        self.persistence.begin_transaction();
    }

    fn end_transaction(&self) -> Option<Ticket> {
        match self.persistence.end_transaction() {
            Ok(ticket) => ticket.map(|t| Ticket(t.sequence())),
            Err(_) => Some(Ticket(FAILED)),
        }
    }

    fn refuses_writes(&self) -> Option<String> {
        self.persistence.write_refusal()
    }

    fn begin_snapshot(&self) -> io::Result<Box<dyn SnapshotWriter>> {
        let cut = self
            .persistence
            .begin_snapshot()
            .map_err(|e| io::Error::other(e.to_string()))?;
        Ok(Box::new(Cut(cut)))
    }

    fn position(&self) -> Option<Ticket> {
        // With `always`, what was appended must be fsynced; with the other policies it must
        // at least have left the buffer (a reply that reports another client's change must
        // not go out before that change reached the kernel).
        self.persistence
            .observed_position()
            .map(|ticket| Ticket(ticket.sequence()))
    }

    fn is_buffered(&self, ticket: Ticket) -> bool {
        ticket.0 != FAILED
            && self
                .persistence
                .is_buffered(LogTicket::from_sequence(ticket.0))
    }

    fn wants_snapshot(&self) -> bool {
        self.persistence.should_auto_snapshot()
    }

    fn sync(&self) -> io::Result<()> {
        self.persistence.sync()
    }

    fn close(&self) -> io::Result<()> {
        self.persistence.close()
    }

    fn enabled(&self) -> bool {
        true
    }

    /// The files' own figures. Snapshot status and progress stay the server's: it also
    /// sees a snapshot fail before the journal is asked to cut one.
    fn info_fields(&self) -> Vec<(&'static str, String)> {
        let stats = self.persistence.stats();
        let status = |ok: bool| if ok { "ok" } else { "err" }.to_string();
        vec![
            (
                "rdb_changes_since_last_save",
                stats.changes_since_last_save.to_string(),
            ),
            // The snapshot's own time after a restart, not the start-up time.
            ("rdb_last_save_time", stats.last_save_unix.to_string()),
            (
                "rdb_last_bgsave_time_sec",
                stats
                    .last_snapshot_duration_ms
                    .map_or(-1, |ms| i64::try_from(ms / 1000).unwrap_or(i64::MAX))
                    .to_string(),
            ),
            ("aof_last_write_status", status(stats.log_error.is_none())),
            // Ours: why, since Redis's status alone does not say (its log does).
            (
                "aof_last_write_error",
                stats
                    .log_error
                    .clone()
                    .unwrap_or_default()
                    .replace(['\r', '\n'], " "),
            ),
            (
                "aof_write_retrying",
                u8::from(!stats.log_halted && stats.log_error.is_some()).to_string(),
            ),
            ("aof_current_size", stats.log_bytes.to_string()),
            ("aof_base_size", stats.snapshot_bytes.to_string()),
            // Redis's name: log bytes not yet written (while a write fails, what the retry
            // will write).
            ("aof_buffer_length", stats.log_buffered_bytes.to_string()),
            // Ours: with group commit, far fewer than the writes acknowledged.
            ("aof_fsyncs", stats.log_fsyncs.to_string()),
        ]
    }
}

/// A snapshot begun under the keyspace's locks, written after they are released.
struct Cut(super::SnapshotCut);

impl SnapshotWriter for Cut {
    fn write(self: Box<Self>, entries: Vec<SnapshotEntry>) -> io::Result<()> {
        self.0
            .write(
                entries
                    .into_iter()
                    .map(|e| (e.key, e.expires_at_ms, e.value)),
            )
            .map_err(|e| io::Error::other(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::persist::FsyncPolicy;

    fn add(item: &str) -> Vec<Bytes> {
        ["BF.ADD", "k", item]
            .iter()
            .map(|s| Bytes::from(s.to_string()))
            .collect()
    }

    /// With `everysec`/`no`, a reply that observed another client's change waits until that
    /// change has left the log's buffer: sent earlier, a `kill -9` could take back what it
    /// reported.
    #[tokio::test]
    async fn observers_wait_for_what_is_appended_until_it_is_written_or_synced() {
        for policy in [FsyncPolicy::Always, FsyncPolicy::EverySec, FsyncPolicy::No] {
            let dir = tempfile::tempdir().unwrap();
            let (persistence, _) = Persistence::open(dir.path(), policy).unwrap();
            let journal = PersistentJournal::new(persistence);
            let ticket = journal.append(&[add("a"), add("b")]);
            // Buffered: every policy makes an observer wait for it.
            assert_eq!(journal.position(), ticket, "{policy}");
            assert_eq!(journal.position(), Some(Ticket(2)));
            assert!(journal.is_buffered(Ticket(2)), "{policy}");
            journal.durable(Ticket(2)).await.unwrap();
            assert!(!journal.is_buffered(Ticket(2)), "{policy}");
            // Written (and, with always, synced): only `always` still names a position,
            // which is already durable.
            if policy == FsyncPolicy::Always {
                assert_eq!(journal.position(), Some(Ticket(2)));
                journal.durable(Ticket(2)).await.unwrap();
            } else {
                assert_eq!(journal.position(), None, "{policy}");
            }
        }
    }
}
