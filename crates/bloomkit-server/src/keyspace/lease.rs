//! Leases: a long command's hold on its one key, so that it runs without a shard lock and
//! parks only the clients of that key.
//!
//! A filter command that may run for long (a million items, a full cuckoo filter's 65,535
//! kicks per item, a compaction) would hold its shard's lock for all that time, and with it
//! every other key of the shard, and every worker thread whose client touched one. Instead it
//! takes a lease on its key, with the gate held exclusively for the moment it takes it (so no
//! command is between checking a key and using it), and lets every lock go:
//!
//! * a **write lease** takes the value out of the map (the entry keeps a stand-in, marked
//!   with the lease: a key that did not exist gets a placeholder entry), the command runs on
//!   it off the worker threads, and [`WriteHold::finish`] puts it back, logging what
//!   the command did, under the shard's lock and inside the gate, as any write is logged;
//! * a **read lease** leaves the value in place and shares it: other reads go on, writes to
//!   the key wait.
//!
//! Every other command that names a leased key waits, awaiting [`Lease::released`] without
//! holding a worker: the dispatcher asks [`Keyspace::blocking_lease`] with the keys the
//! command table says a command names, inside the gate, before the command runs; leases are
//! only taken with the gate held exclusively, so the answer holds until the command leaves
//! the gate. What reads every key (`KEYS`, `SCAN`, `DBSIZE`, `RANDOMKEY`) lists a leased key
//! as the key it is and leaves placeholders out; what changes every key (`FLUSHALL`) waits
//! for every lease; the expiry sweep and eviction pass leased keys by; a snapshot's cut waits
//! for the write leases to end, and keeps new ones from starting meanwhile.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use bloomkit_commands::{Record, Value};
use bytes::Bytes;
use tokio::sync::Notify;

use super::{Entry, Keyspace, Ticket};

/// Completes once `done` holds, woken by `notify` (whose `notify_waiters` follows every
/// change that can make it hold): registered before each check, so that a change between
/// the check and the wait is never missed.
pub(super) async fn until(notify: &Notify, done: impl Fn() -> bool) {
    loop {
        let notified = notify.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        if done() {
            return;
        }
        notified.await;
    }
}

/// One long command's (or several long reads') hold on a key.
#[derive(Debug)]
pub struct Lease {
    /// Whether the key's value was taken out (a write) or is shared (reads).
    write: bool,
    /// Long reads holding a read lease.
    readers: AtomicUsize,
    /// Whether the key was missing when the lease was taken: its entry is a placeholder,
    /// which listings leave out.
    created: bool,
    /// The value's type, for `SCAN TYPE` while a write lease holds the value.
    type_name: &'static str,
    released: AtomicBool,
    notify: Notify,
}

impl Lease {
    fn new(write: bool, created: bool, type_name: &'static str) -> Lease {
        Lease {
            write,
            readers: AtomicUsize::new(usize::from(!write)),
            created,
            type_name,
            released: AtomicBool::new(false),
            notify: Notify::new(),
        }
    }

    /// Completes once the lease has ended.
    pub async fn released(&self) {
        until(&self.notify, || self.released.load(Ordering::Acquire)).await;
    }

    /// Whether the lease is a write's (a read's shares the value).
    pub fn is_write(&self) -> bool {
        self.write
    }

    /// Whether the key's entry is a placeholder for a key that did not exist.
    pub(super) fn is_placeholder(&self) -> bool {
        self.created
    }

    /// The leased value's type.
    pub(super) fn type_name(&self) -> &'static str {
        self.type_name
    }

    fn release(&self) {
        self.released.store(true, Ordering::Release);
        self.notify.notify_waiters();
    }
}

/// Why a lease could not be taken now: what to wait for before trying again.
#[derive(Debug)]
pub enum LeaseWait {
    /// Another long command holds the key.
    Leased(Arc<Lease>),
    /// A snapshot's cut waits for the write leases to end.
    Cut,
}

/// A write lease taken: the value (or `None` for a missing key), which the command changes
/// and [`WriteHold::finish`] puts back. Dropped unfinished (a command that panicked: none
/// should), it puts back what the slot holds, unlogged, and ends the lease, so that the
/// key's clients never wait for ever.
pub struct WriteHold<'k> {
    keyspace: &'k Keyspace,
    key: Bytes,
    lease: Arc<Lease>,
    /// The value, taken out of the map.
    pub slot: Option<Value>,
    /// The `DEL` of a key found expired when the lease was taken, logged then.
    ticket: Option<Ticket>,
    finished: bool,
}

impl std::fmt::Debug for WriteHold<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteHold")
            .field("key", &self.key)
            .field("slot", &self.slot)
            .finish_non_exhaustive()
    }
}

/// A read lease taken (or none needed, for a missing key): the value to read.
#[derive(Debug)]
pub struct ReadHold {
    key: Bytes,
    lease: Option<Arc<Lease>>,
    /// The value, shared with the map; `None` for a missing key.
    pub value: Option<Arc<Value>>,
}

impl Keyspace {
    /// The lease that a command naming `keys` must wait for, if any: any lease for a command
    /// that may write (`write`), a write lease for one that only reads. Call it inside the
    /// gate: leases are taken with the gate held exclusively, so the answer holds until the
    /// caller leaves it.
    pub fn blocking_lease<'k>(
        &self,
        keys: impl Iterator<Item = &'k [u8]>,
        write: bool,
    ) -> Option<Arc<Lease>> {
        if self.leases.load(Ordering::Acquire) == 0 {
            return None;
        }
        let now = self.now();
        for key in keys {
            let found = self.with_any_entry(key, |entry| {
                entry
                    .filter(|e| !e.is_expired(now) || e.lease.is_some())
                    .and_then(|e| e.lease.clone())
            });
            if let Some(lease) = found.filter(|lease| write || lease.write) {
                return Some(lease);
            }
        }
        None
    }

    /// Any lease at all, for a command that changes every key (`FLUSHALL`).
    pub fn any_lease(&self) -> Option<Arc<Lease>> {
        if self.leases.load(Ordering::Acquire) == 0 {
            return None;
        }
        self.shards.iter().find_map(|shard| {
            super::shard::read(shard)
                .entries
                .values()
                .find_map(|entry| entry.lease.clone())
        })
    }

    /// Takes a write lease on `key`. Call it with the gate held exclusively.
    ///
    /// # Errors
    ///
    /// What to wait for first: another lease on the key, or a snapshot's cut.
    pub fn take_write(&self, key: &[u8]) -> Result<WriteHold<'_>, LeaseWait> {
        if self.cut_wanted.load(Ordering::Acquire) {
            return Err(LeaseWait::Cut);
        }
        let now = self.now();
        let index = self.shard_index(key);
        let mut shard = self.write(index);
        if let Some(lease) = shard.get(key).and_then(|e| e.lease.clone()) {
            return Err(LeaseWait::Leased(lease));
        }
        let mut log = Vec::new();
        self.expire_if_needed(&mut shard, key, now, &mut log);
        let stand_in = || Arc::new(Value::stand_in());
        let (slot, lease) = match shard.map.entries.get_mut(key) {
            Some(entry) => {
                let lease = Arc::new(Lease::new(true, false, entry.value.type_name()));
                let held = std::mem::replace(&mut entry.value, stand_in());
                // Shared with a snapshot being written: the command works on a copy, as
                // any write does (copy-on-write).
                let value = Arc::try_unwrap(held).unwrap_or_else(|shared| (*shared).clone());
                entry.lease = Some(Arc::clone(&lease));
                (Some(value), lease)
            }
            None => {
                let lease = Arc::new(Lease::new(true, true, "none"));
                let mut entry = Entry::new(stand_in(), None, self.clock_ticks());
                entry.lease = Some(Arc::clone(&lease));
                shard.insert(key, entry);
                self.placeholders.fetch_add(1, Ordering::Relaxed);
                (None, lease)
            }
        };
        self.leases.fetch_add(1, Ordering::AcqRel);
        self.write_leases.fetch_add(1, Ordering::AcqRel);
        let ticket = self.append(index, &log);
        drop(shard);
        Ok(WriteHold {
            keyspace: self,
            key: Bytes::copy_from_slice(key),
            lease,
            slot,
            ticket,
            finished: false,
        })
    }

    /// Puts back what a long write left in `hold.slot`, logs `records` (what it changed),
    /// and ends the lease.
    fn put_back(&self, hold: &mut WriteHold<'_>, records: &[Record<'_>]) -> Option<Ticket> {
        hold.finished = true;
        let key = &hold.key;
        let index = self.shard_index(key);
        let mut shard = self.write(index);
        let placeholder = hold.lease.created;
        match (hold.slot.take(), shard.map.entries.get_mut(&key[..])) {
            (Some(value), Some(entry)) => {
                entry.value = Arc::new(value);
                entry.lease = None;
                let (before, after) = (entry.memory_bytes, super::memory::value_cost(&entry.value));
                entry.memory_bytes = after;
                let value = Arc::clone(&entry.value);
                if after > before {
                    shard.add_memory(after - before);
                } else if after < before {
                    shard.sub_memory(before - after);
                }
                shard.check_health(key, &value);
            }
            // The command removed the key, or left a missing one missing.
            (None, Some(_)) => {
                shard.remove(key);
            }
            // Nothing removes a leased entry; a missing one has nothing to put back.
            (_, None) => {}
        }
        if placeholder {
            self.placeholders.fetch_sub(1, Ordering::Relaxed);
        }
        if !records.is_empty() {
            self.watches.touch(key);
        }
        let ticket = self.append_records(index, records);
        drop(shard);
        self.end_lease(&hold.lease);
        ticket.max(hold.ticket)
    }

    /// Takes (or joins) a read lease on `key`: the value stays in place, shared. A missing
    /// key needs none. Call it with the gate held exclusively.
    ///
    /// # Errors
    ///
    /// A write lease to wait for.
    pub fn take_read(&self, key: &[u8]) -> Result<ReadHold, LeaseWait> {
        let now = self.now();
        let mut shard = self.write(self.shard_index(key));
        let Some(entry) = shard
            .map
            .entries
            .get_mut(key)
            .filter(|e| !e.is_expired(now) || e.lease.is_some())
        else {
            return Ok(ReadHold {
                key: Bytes::copy_from_slice(key),
                lease: None,
                value: None,
            });
        };
        let lease = match &entry.lease {
            Some(lease) if lease.write => return Err(LeaseWait::Leased(Arc::clone(lease))),
            Some(lease) => {
                lease.readers.fetch_add(1, Ordering::AcqRel);
                Arc::clone(lease)
            }
            None => {
                let lease = Arc::new(Lease::new(false, false, entry.value.type_name()));
                entry.lease = Some(Arc::clone(&lease));
                self.leases.fetch_add(1, Ordering::AcqRel);
                lease
            }
        };
        Ok(ReadHold {
            key: Bytes::copy_from_slice(key),
            lease: Some(lease),
            value: Some(Arc::clone(&entry.value)),
        })
    }

    /// Ends a long read: the last reader ends the lease.
    pub fn finish_read(&self, hold: ReadHold) {
        let Some(lease) = hold.lease else {
            return;
        };
        drop(hold.value);
        if lease.readers.fetch_sub(1, Ordering::AcqRel) != 1 {
            return;
        }
        let mut shard = self.write(self.shard_index(&hold.key));
        if let Some(entry) = shard.map.entries.get_mut(&hold.key[..]) {
            if entry.lease.as_ref().is_some_and(|l| Arc::ptr_eq(l, &lease)) {
                entry.lease = None;
            }
        }
        drop(shard);
        self.end_lease(&lease);
    }

    fn end_lease(&self, lease: &Lease) {
        self.leases.fetch_sub(1, Ordering::AcqRel);
        if lease.write && self.write_leases.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.no_write_leases.notify_waiters();
        }
        lease.release();
    }

    /// Asks that no write lease start until [`Keyspace::cut_done`]: a snapshot's cut waits
    /// for those held now to end.
    pub fn want_cut(&self) {
        self.cut_wanted.store(true, Ordering::Release);
    }

    /// Lets write leases start again after a snapshot's cut.
    pub fn cut_done(&self) {
        self.cut_wanted.store(false, Ordering::Release);
        self.cut_finished.notify_waiters();
    }

    /// Completes once no snapshot's cut is waiting (a lease taker waits for it).
    pub async fn cut_over(&self) {
        until(&self.cut_finished, || {
            !self.cut_wanted.load(Ordering::Acquire)
        })
        .await;
    }

    /// Completes once no write lease is held (a snapshot's cut waits for it).
    pub async fn write_leases_ended(&self) {
        until(&self.no_write_leases, || {
            self.write_leases.load(Ordering::Acquire) == 0
        })
        .await;
    }
}

impl WriteHold<'_> {
    /// Puts the value back, logs `records` (what the command changed) and ends the lease;
    /// returns what to await before replying. Call it inside the gate, as every write runs.
    pub fn finish(mut self, records: &[Record<'_>]) -> Option<Ticket> {
        let keyspace = self.keyspace;
        keyspace.put_back(&mut self, records)
    }
}

impl Drop for WriteHold<'_> {
    fn drop(&mut self) {
        if !self.finished {
            let keyspace = self.keyspace;
            keyspace.put_back(self, &[]);
        }
    }
}
