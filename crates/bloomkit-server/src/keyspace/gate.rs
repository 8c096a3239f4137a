//! The execution gate: what lets `EXEC` run its commands with no other client's command in
//! between, as Redis's single thread does, while every other command runs in parallel.
//!
//! Every command a client sends enters the gate shared ([`Gate::enter`]) for as long as it
//! runs; so do the keyspace's own background changes (the expiry sweep, a snapshot's cut).
//! `EXEC` takes it exclusively ([`Gate::exclusive`]): once it holds it, nothing else runs
//! on the keyspace until its last queued command has finished and the transaction's closing
//! record is in the log.
//!
//! Why stripes: a single `RwLock` taken shared by every command on every core would make
//! its one cache line bounce between the cores on every request. Each client enters one
//! stripe (by its ID), each stripe on its own cache lines, so clients on different cores
//! rarely touch the same line; `EXEC`, which is rare, closes the gate and waits until no
//! stripe counts a command. Holds block the thread, as the shards' locks do: none is ever
//! held across an `.await`. A command that finds the gate closed does not block its worker
//! thread: [`Gate::try_enter`] says so, and the connection awaits [`Gate::opened`].

use super::Keyspace;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

/// How many stripes the gate has: a power of two, more than the cores of most machines
/// that run the server.
const STRIPES: usize = 32;

/// The commands inside the gate through one stripe, alone on its two cache lines (as the
/// shards are, for the same reason).
#[repr(align(128))]
#[derive(Default)]
struct Stripe(AtomicUsize);

/// The execution gate: every command holds it shared while it runs ([`Gate::enter`]), `EXEC`
/// exclusively ([`Gate::exclusive`]), so that nothing runs between a transaction's commands.
/// Each client enters one of its stripes, so that clients on different cores rarely touch
/// the same cache line.
///
/// Why not a `std::sync::RwLock` per stripe: its read path (a compare-and-swap, the poison
/// flag's checks on the way in and out) measured 40 to 50 instructions per command under
/// callgrind; this one's is an atomic add and a load each way. The waiting, rare, is a
/// mutex and a condition variable.
#[derive(Default)]
pub struct Gate {
    stripes: [Stripe; STRIPES],
    /// Set while an `EXEC` holds, or waits for, the gate: commands stay out.
    closed: AtomicBool,
    /// Held by the one `EXEC` that may close the gate, for as long as it holds it.
    exec: Mutex<()>,
    /// What the waiting (commands for the gate to open, `EXEC` for them to leave) waits on.
    waiting: Mutex<()>,
    changed: Condvar,
    /// Wakes the connections awaiting [`Gate::opened`] when an exclusive hold ends.
    reopened: tokio::sync::Notify,
}

/// A command's shared hold on the gate (none, on the thread that holds it exclusively).
pub struct Entered<'a> {
    gate: &'a Gate,
    stripe: Option<&'a AtomicUsize>,
}

thread_local! {
    /// Whether this thread holds a gate exclusively: what it runs (`EXEC`'s queue) is inside
    /// the gate already, and entering it again would wait for itself.
    static EXCLUSIVE_HERE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// `EXEC`'s exclusive hold on the gate.
pub struct Exclusive<'a> {
    gate: &'a Gate,
    _exec: MutexGuard<'a, ()>,
}

impl Gate {
    /// Enters the gate shared, for client `client` (any number spreads the clients over
    /// the stripes; the same client always uses the same one). Waits while an `EXEC` runs.
    ///
    /// Never call it while already holding the gate on the same thread: a waiting `EXEC`
    /// would then wait for this thread, and this thread for it.
    #[inline]
    pub fn enter(&self, client: u64) -> Entered<'_> {
        if EXCLUSIVE_HERE.with(std::cell::Cell::get) {
            return Entered {
                gate: self,
                stripe: None,
            };
        }
        let stripe = &self.stripes[(client as usize) & (STRIPES - 1)].0;
        loop {
            // SeqCst, with `exclusive`'s store and loads: either `EXEC` sees this command
            // counted, or this command sees the gate closed (never neither).
            stripe.fetch_add(1, Ordering::SeqCst);
            if !self.closed.load(Ordering::SeqCst) {
                return Entered {
                    gate: self,
                    stripe: Some(stripe),
                };
            }
            self.leave(stripe);
            let mut waiting = self.lock_waiting();
            while self.closed.load(Ordering::SeqCst) {
                waiting = self
                    .changed
                    .wait(waiting)
                    .unwrap_or_else(PoisonError::into_inner);
            }
        }
    }

    /// Enters the gate shared if it is open; `None` while an `EXEC` (or a long command taking
    /// its key) holds it or waits for it: then await [`Gate::opened`] rather than block.
    #[inline]
    pub fn try_enter(&self, client: u64) -> Option<Entered<'_>> {
        let stripe = &self.stripes[(client as usize) & (STRIPES - 1)].0;
        // SeqCst, as in `enter`.
        stripe.fetch_add(1, Ordering::SeqCst);
        if !self.closed.load(Ordering::SeqCst) {
            return Some(Entered {
                gate: self,
                stripe: Some(stripe),
            });
        }
        self.leave(stripe);
        None
    }

    /// Completes once the gate is open (at once if it is), without blocking the thread.
    pub async fn opened(&self) {
        super::lease::until(&self.reopened, || !self.closed.load(Ordering::SeqCst)).await;
    }

    /// Takes the gate exclusively: waits for every command running now to finish, and
    /// keeps every other one out until the hold is dropped.
    pub fn exclusive(&self) -> Exclusive<'_> {
        let exec = self.exec.lock().unwrap_or_else(PoisonError::into_inner);
        self.closed.store(true, Ordering::SeqCst);
        let mut waiting = self.lock_waiting();
        while self.stripes.iter().any(|s| s.0.load(Ordering::SeqCst) != 0) {
            waiting = self
                .changed
                .wait(waiting)
                .unwrap_or_else(PoisonError::into_inner);
        }
        EXCLUSIVE_HERE.with(|here| here.set(true));
        Exclusive {
            gate: self,
            _exec: exec,
        }
    }

    fn leave(&self, stripe: &AtomicUsize) {
        stripe.fetch_sub(1, Ordering::SeqCst);
        if self.closed.load(Ordering::SeqCst) {
            // An `EXEC` may be waiting for this command: tell it, under the mutex it checks
            // the counts under, so that the news cannot fall between its check and its wait.
            drop(self.lock_waiting());
            self.changed.notify_all();
        }
    }

    fn lock_waiting(&self) -> MutexGuard<'_, ()> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for Entered<'_> {
    #[inline]
    fn drop(&mut self) {
        if let Some(stripe) = self.stripe {
            self.gate.leave(stripe);
        }
    }
}

impl Drop for Exclusive<'_> {
    fn drop(&mut self) {
        EXCLUSIVE_HERE.with(|here| here.set(false));
        {
            let _waiting = self.gate.lock_waiting();
            self.gate.closed.store(false, Ordering::SeqCst);
        }
        self.gate.changed.notify_all();
        self.gate.reopened.notify_waiters();
    }
}

impl Keyspace {
    /// The gate every client command enters, and `EXEC` holds exclusively.
    pub fn gate(&self) -> &Gate {
        &self.gate
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn an_exclusive_hold_waits_for_commands_and_keeps_new_ones_out() {
        let gate = Arc::new(Gate::default());
        let entered = gate.enter(7);
        let taken = Arc::new(AtomicBool::new(false));
        let released = Arc::new(AtomicBool::new(false));
        let exec = {
            let (gate, taken, released) =
                (Arc::clone(&gate), Arc::clone(&taken), Arc::clone(&released));
            std::thread::spawn(move || {
                let hold = gate.exclusive();
                taken.store(true, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(50));
                released.store(true, Ordering::SeqCst);
                drop(hold);
            })
        };
        std::thread::sleep(Duration::from_millis(50));
        assert!(
            !taken.load(Ordering::SeqCst),
            "a running command keeps EXEC out"
        );
        drop(entered);
        while !taken.load(Ordering::SeqCst) {
            std::thread::yield_now();
        }
        // Every stripe is held: a command of any client waits until EXEC is done.
        for client in 0..STRIPES as u64 {
            let _entered = gate.enter(client);
            assert!(
                released.load(Ordering::SeqCst),
                "entered while EXEC held the gate"
            );
        }
        exec.join().unwrap();
    }

    /// Commands and `EXEC`s from many threads at once: while an `EXEC` holds the gate, no
    /// command is inside it, and no two `EXEC`s hold it together.
    #[test]
    fn commands_and_execs_never_overlap_under_contention() {
        use std::sync::atomic::AtomicUsize;
        let gate = Arc::new(Gate::default());
        let inside = Arc::new(AtomicUsize::new(0));
        let execs = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..8u64)
            .map(|t| {
                let (gate, inside, execs) =
                    (Arc::clone(&gate), Arc::clone(&inside), Arc::clone(&execs));
                std::thread::spawn(move || {
                    for i in 0..2_000u64 {
                        if (t + i) % 50 == 0 {
                            let _hold = gate.exclusive();
                            assert_eq!(
                                execs.fetch_add(1, Ordering::SeqCst),
                                0,
                                "two EXECs at once"
                            );
                            assert_eq!(inside.load(Ordering::SeqCst), 0, "a command inside EXEC");
                            std::thread::yield_now();
                            assert_eq!(inside.load(Ordering::SeqCst), 0, "a command got in");
                            execs.fetch_sub(1, Ordering::SeqCst);
                        } else {
                            let _entered = gate.enter(t * 7 + i);
                            inside.fetch_add(1, Ordering::SeqCst);
                            assert_eq!(execs.load(Ordering::SeqCst), 0, "entered during EXEC");
                            inside.fetch_sub(1, Ordering::SeqCst);
                        }
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
    }
}
