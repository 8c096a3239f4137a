//! The `BF.*`/`CF.*` commands on their key: under the shard's read lock for a read, under
//! its write lock for a write (the value changed where it lies), with eviction and a
//! second run under an evicting `maxmemory-policy`.

use std::cell::OnceCell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use bloomkit_commands::{
    Access, Budget, Ctx, Defaults, FilterCommand, Outcome, Record, Replay, Reply, Value,
};
use bytes::Bytes;

use super::shard::read;
use super::{memory, now_ms, Entered, Entry, Health, Keyspace, Policy, Ticket};

/// Puts the value a write command worked on back into its map entry when dropped: on the
/// normal path and on unwinding alike. An empty slot (the command removed the key) leaves
/// the entry's stand-in for the caller to remove.
pub(super) struct PutBack<'a> {
    pub(super) place: &'a mut Value,
    pub(super) slot: Option<Value>,
}

impl Drop for PutBack<'_> {
    fn drop(&mut self) {
        if let Some(value) = self.slot.take() {
            *self.place = value;
        }
    }
}

impl Keyspace {
    /// Runs a `BF.*`/`CF.*` command on its key: under the shard's read lock for
    /// [`Access::Read`], else under the write lock, logging what it changed before the
    /// lock is released. While loading, the budget is [`Replay`]: what was acknowledged
    /// once must load again.
    ///
    /// Past `maxmemory`, under an evicting `maxmemory-policy`, a write first evicts keys
    /// until memory is back under the limit; and a write the budget refuses before it
    /// changed anything is run again once eviction has made room for what it asked (a
    /// write that had changed something, a `BF.MADD` whose filter had to grow midway,
    /// answers as it did, and the next write finds the room).
    pub fn run_filter(
        &self,
        command: &FilterCommand,
        defaults: &Defaults,
    ) -> (Reply, Option<Ticket>) {
        if !command.sources().is_empty() {
            let budget: &dyn Budget = if self.is_loading() { &Replay } else { self };
            return self.run_with_sources(command, defaults, budget);
        }
        if self.is_loading() {
            return self.run_filter_once(command, defaults, &Replay).0;
        }
        if command.access() == Access::Read {
            return self.run_filter_once(command, defaults, self).0;
        }
        // The caller holds the gate: eviction's records go where this command's do.
        self.evicting(
            command.key(),
            || None,
            |budget| self.run_filter_once(command, defaults, budget),
        )
    }

    /// Runs a long write on `slot`, a value its write lease took out of the map (see
    /// [`super::lease`]), with the eviction [`Keyspace::run_filter`] does; `enter` enters
    /// the gate for eviction's records, which the caller does not hold. Returns the outcome
    /// and whether the command changed anything.
    pub fn write_evicting<'c, 'k>(
        &'k self,
        command: &'c FilterCommand,
        defaults: &Defaults,
        slot: &mut Option<Value>,
        enter: impl Fn() -> Entered<'k>,
    ) -> (Outcome<'c>, bool) {
        let outcome = self.evicting(
            command.key(),
            || Some(enter()),
            |budget| {
                let outcome = command.write(
                    slot,
                    &Ctx {
                        defaults,
                        budget,
                        now_ms: &now_ms,
                    },
                );
                let changed = !outcome.log.is_empty();
                (outcome, changed)
            },
        );
        let changed = !outcome.log.is_empty();
        (outcome, changed)
    }

    /// Past `maxmemory`, under an evicting `maxmemory-policy`: evicts until memory is back
    /// under the limit (never `key`), runs `attempt` with a budget that remembers what it
    /// refused, and runs it again once eviction has made room for that, up to three times,
    /// as long as the refused attempt changed nothing. `enter` gives a hold on the gate for
    /// eviction (`None` when the caller holds it). Without an evicting policy, one attempt
    /// with the keyspace's budget.
    fn evicting<'e, T>(
        &'e self,
        key: &[u8],
        enter: impl Fn() -> Option<Entered<'e>>,
        mut attempt: impl FnMut(&dyn Budget) -> (T, bool),
    ) -> T {
        if self.eviction.policy() == Policy::NoEviction {
            return attempt(self).0;
        }
        let make_room = |wanted| {
            let _entered = enter();
            self.make_room(wanted, key)
        };
        make_room(0);
        let mut attempts = 0;
        loop {
            let budget = RecordingBudget::new(self);
            let (result, changed) = attempt(&budget);
            let Some(wanted) = budget.refused() else {
                return result;
            };
            attempts += 1;
            let room = make_room(wanted);
            if changed || !room || attempts >= 3 {
                return result;
            }
        }
    }

    /// Calls `f` with `key`'s live value (`None` for a missing key) under its shard's read
    /// lock, without stamping it as used.
    pub fn peek<T>(&self, key: &[u8], f: impl FnOnce(Option<&Value>) -> T) -> T {
        let now = self.now();
        self.with_entry(key, now, |entry| f(entry.map(|e| &*e.value)))
    }

    /// One run of a filter command with `budget`; also says whether the command logged a
    /// change of its own.
    fn run_filter_once(
        &self,
        command: &FilterCommand,
        defaults: &Defaults,
        budget: &dyn Budget,
    ) -> ((Reply, Option<Ticket>), bool) {
        let ctx = Ctx {
            defaults,
            budget,
            now_ms: &now_ms,
        };
        let key = command.key();
        let index = self.shard_index(key);
        let ticks = self.clock_ticks();
        let lfu = self.eviction.policy().is_lfu();
        if command.access() == Access::Read {
            let map = read(&self.shards[index]);
            let entry = map
                .entries
                .get(key)
                .filter(|entry| !entry.is_expired_with(|| self.now()));
            if let Some(entry) = entry {
                entry.access.touch(ticks, lfu);
            }
            return ((command.read(entry.map(|e| &*e.value), &ctx), None), false);
        }
        let mut shard = self.write(index);
        let mut log = Vec::new();
        // Read at most once, so that the expiry check and the removal agree.
        let clock = OnceCell::new();
        let now = || *clock.get_or_init(|| self.now());
        // One lookup for the common case, a live key changed where it lies: no removal and
        // reinsertion, no new `Arc`, and the memory total touched only if the size changed.
        let live = shard
            .map
            .entries
            .get_mut(key)
            .filter(|entry| !entry.is_expired_with(now));
        // What the command left the filter's health at, applied once `live` is let go.
        let mut changed_health = None;
        let outcome = if let Some(entry) = live {
            entry.access.touch(ticks, lfu);
            // Free when no snapshot holds the value; otherwise this is the copy of
            // copy-on-write, and the snapshot keeps the original.
            let value = Arc::make_mut(&mut entry.value);
            // The command works on an `Option<Value>` it may empty; the stand-in holds the
            // entry's place meanwhile, allocating nothing. The guard puts back whatever the
            // command leaves in the slot, also if it panics (none should): the map must
            // not keep the stand-in, which a snapshot cannot store.
            let taken = std::mem::replace(value, Value::stand_in());
            let mut held = PutBack {
                place: value,
                slot: Some(taken),
            };
            let outcome = command.write(&mut held.slot, &ctx);
            let removed = held.slot.is_none();
            drop(held);
            // What it logged is what it changed: a `BF.ADD` of an item already there
            // changes nothing, and spoils no `WATCH`.
            if !outcome.log.is_empty() {
                self.watches.touch(key);
            }
            if removed {
                // The command removed the key (a restore whose last chunk did not decode).
                shard.remove(key);
            } else {
                changed_health = Some(Health::of(&entry.value));
                let (before, after) = (entry.memory_bytes, memory::value_cost(&entry.value));
                entry.memory_bytes = after;
                if after > before {
                    shard.add_memory(after - before);
                } else if after < before {
                    shard.sub_memory(before - after);
                }
            }
            outcome
        } else {
            // Missing, or expired (removed first, its `DEL` logged before the command's
            // records, so that replay sees why the command found no key).
            self.expire_if_needed(&mut shard, key, now(), &mut log);
            let mut slot = None;
            let outcome = command.write(&mut slot, &ctx);
            if let Some(value) = slot {
                shard.insert(key, Entry::new(Arc::new(value), None, ticks));
            }
            outcome
        };
        match changed_health {
            Some(Some(health)) => shard.flag(&Bytes::copy_from_slice(key), health),
            Some(None) => shard.unflag(key),
            None => {}
        }
        let changed = !outcome.log.is_empty();
        // The command's records as they lie (its own key and items, for the common add),
        // unless an expiry was logged first.
        let ticket = if log.is_empty() {
            self.append_records(index, &outcome.log)
        } else {
            log.extend(outcome.log.iter().map(Record::to_vec));
            self.append(index, &log)
        };
        drop(shard);
        ((outcome.reply, ticket), changed)
    }
}

/// The keyspace's budget, remembering what it refused: the bytes a refused allocation
/// asked for, which eviction then makes room for.
struct RecordingBudget<'a> {
    keyspace: &'a Keyspace,
    /// `usize::MAX` until something is refused.
    refused: AtomicUsize,
}

impl<'a> RecordingBudget<'a> {
    fn new(keyspace: &'a Keyspace) -> RecordingBudget<'a> {
        RecordingBudget {
            keyspace,
            refused: AtomicUsize::new(usize::MAX),
        }
    }

    fn refused(&self) -> Option<usize> {
        let refused = self.refused.load(Ordering::Relaxed);
        (refused != usize::MAX).then_some(refused)
    }
}

impl Budget for RecordingBudget<'_> {
    fn within_maxmemory(&self, extra_bytes: usize) -> bool {
        let within = self.keyspace.within_maxmemory(extra_bytes);
        if !within {
            self.refused
                .store(extra_bytes.min(usize::MAX - 1), Ordering::Relaxed);
        }
        within
    }

    fn machine_available(&self) -> Option<usize> {
        self.keyspace.machine_available()
    }

    fn admits_reply(&self, bytes: usize) -> bool {
        self.keyspace.admits_reply(bytes)
    }
}
