//! Group commit: the fsync thread, and how waiters learn that their record is on disk.
//!
//! Waiters publish the ticket they need in `request` and wake the thread; the thread
//! fsyncs the log (covering every record written before the fsync began) and publishes how
//! far that reaches on a `watch` channel, which wakes every waiter it covers at once. While
//! one fsync runs, new waiters pile up and the next round covers all of them: the number of
//! fsyncs follows the disk's speed, not the number of writes.

use std::future::Future;
use std::io;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::watch;

use crate::persist::{FsyncPolicy, Shared};

/// How often the thread wakes up on its own: `everysec`'s fsync, the retry of a failed
/// write (Redis retries once a second too), the check that the log file still exists.
const TICK: Duration = Duration::from_secs(1);

#[derive(Debug)]
pub(crate) struct SyncControl {
    request: Mutex<Request>,
    wake: Condvar,
    state: watch::Sender<Synced>,
}

#[derive(Debug, Default)]
struct Request {
    /// The highest ticket someone waits for.
    wanted: u64,
    shutdown: bool,
    /// Set with the failure in `Synced`: no fsync will cover anything more.
    failed: bool,
}

/// What has been made durable.
#[derive(Clone, Debug)]
struct Synced {
    /// Every ticket up to this one is on disk.
    upto: u64,
    /// Set when the log failed: waiters beyond `upto` get this error.
    failure: Option<Arc<str>>,
}

impl SyncControl {
    /// `upto`: tickets already durable (what recovery found and fsynced).
    pub(crate) fn new(upto: u64) -> Self {
        let (state, _) = watch::channel(Synced {
            upto,
            failure: None,
        });
        SyncControl {
            request: Mutex::new(Request {
                wanted: upto,
                shutdown: false,
                failed: false,
            }),
            wake: Condvar::new(),
            state,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Request> {
        self.request.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records that every ticket up to `upto` is durable, waking those who wait for them.
    pub(crate) fn synced(&self, upto: u64) {
        self.state.send_if_modified(|s| {
            let newer = upto > s.upto;
            if newer {
                s.upto = upto;
            }
            newer
        });
    }

    /// Every ticket known to be durable.
    pub(crate) fn upto(&self) -> u64 {
        self.state.borrow().upto
    }

    /// Records that the log failed for good, waking every waiter with `reason` (the error
    /// line their replies become).
    pub(crate) fn fail(&self, reason: String) {
        self.state.send_if_modified(|s| {
            let first = s.failure.is_none();
            if first {
                s.failure = Some(reason.into());
            }
            first
        });
        self.lock().failed = true;
    }

    /// Stops the fsync thread.
    pub(crate) fn shut_down(&self) {
        self.lock().shutdown = true;
        self.wake.notify_all();
    }

    /// The future behind [`crate::persist::Persistence::durable`].
    pub(crate) fn wait(
        &self,
        ticket: u64,
        needs_fsync: bool,
    ) -> impl Future<Output = io::Result<()>> + Send + 'static {
        let mut rx = self.state.subscribe();
        let now = {
            let s = rx.borrow_and_update();
            if s.upto >= ticket {
                Some(Ok(()))
            } else if let Some(reason) = &s.failure {
                Some(Err(io::Error::other(reason.to_string())))
            } else if !needs_fsync {
                Some(Ok(()))
            } else {
                None
            }
        };
        if now.is_none() {
            let mut r = self.lock();
            if r.wanted < ticket {
                r.wanted = ticket;
                // One waiter is enough to start a round; the others ride along.
                self.wake.notify_one();
            }
        }
        async move {
            if let Some(result) = now {
                return result;
            }
            let outcome = rx
                .wait_for(|s| s.upto >= ticket || s.failure.is_some())
                .await
                .map(|s| (s.upto >= ticket, s.failure.clone()));
            match outcome {
                Ok((true, _)) => Ok(()),
                Ok((false, reason)) => Err(io::Error::other(
                    reason.as_deref().unwrap_or("fsync failed").to_string(),
                )),
                Err(_) => Err(io::Error::other(
                    "the append-only log was closed before the write was synced",
                )),
            }
        }
    }
}

/// The fsync thread's body, until [`SyncControl::shut_down`]: with `always`, an fsync
/// whenever someone waits; with every policy, [`Shared::tick`] once a second.
pub(crate) fn run(shared: &Shared) {
    let ctl = &shared.sync;
    let always = shared.policy == FsyncPolicy::Always;
    let mut next_tick = Instant::now() + TICK;
    // Set when an fsync round left a waiter uncovered while a failed write holds records
    // back: the next round waits for the tick rather than spin.
    let mut stalled = false;
    loop {
        let fsync_now = {
            let mut r = ctl.lock();
            loop {
                if r.shutdown {
                    return;
                }
                if always && !stalled && !r.failed && r.wanted > ctl.state.borrow().upto {
                    break true;
                }
                let now = Instant::now();
                if now >= next_tick {
                    break false;
                }
                r = ctl
                    .wake
                    .wait_timeout(r, next_tick - now)
                    .map_or_else(|e| e.into_inner().0, |(r, _)| r);
            }
        };
        if fsync_now {
            let wanted = ctl.lock().wanted;
            let _ = shared.fsync_log();
            stalled = ctl.upto() < wanted && shared.lock_log().failure().is_some();
        } else {
            next_tick = Instant::now() + TICK;
            stalled = false;
            shared.tick();
        }
    }
}
