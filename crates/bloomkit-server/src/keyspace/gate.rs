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
//! rarely touch the same line; `EXEC`, which is rare, takes every stripe in order (two
//! `EXEC`s therefore never wait for each other in a cycle). Why a `std` lock: as with the
//! shards, it is never held across an `.await`.

use std::sync::{PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// How many stripes the gate has: a power of two, more than the cores of most machines
/// that run the server.
const STRIPES: usize = 32;

/// One stripe, alone on its two cache lines (as the shards are, for the same reason).
#[repr(align(128))]
#[derive(Default)]
struct Stripe(RwLock<()>);

/// The execution gate; see the [module documentation](self).
pub struct Gate {
    stripes: Box<[Stripe]>,
}

/// A command's shared hold on the gate.
pub struct Entered<'a> {
    _held: RwLockReadGuard<'a, ()>,
}

/// `EXEC`'s exclusive hold on the gate: every stripe.
pub struct Exclusive<'a> {
    _held: Vec<RwLockWriteGuard<'a, ()>>,
}

impl Default for Gate {
    fn default() -> Self {
        Gate {
            stripes: (0..STRIPES).map(|_| Stripe::default()).collect(),
        }
    }
}

impl Gate {
    /// Enters the gate shared, for client `client` (any number spreads the clients over
    /// the stripes; the same client always uses the same one). Waits while an `EXEC` runs.
    ///
    /// Never call it while already holding the gate on the same thread: a waiting `EXEC`
    /// would then wait for this thread, and this thread for it.
    pub fn enter(&self, client: u64) -> Entered<'_> {
        let stripe = &self.stripes[(client as usize) & (STRIPES - 1)];
        Entered {
            _held: stripe.0.read().unwrap_or_else(PoisonError::into_inner),
        }
    }

    /// Takes the gate exclusively: waits for every command running now to finish, and
    /// keeps every other one out until the hold is dropped.
    pub fn exclusive(&self) -> Exclusive<'_> {
        Exclusive {
            _held: self
                .stripes
                .iter()
                .map(|s| s.0.write().unwrap_or_else(PoisonError::into_inner))
                .collect(),
        }
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
}
