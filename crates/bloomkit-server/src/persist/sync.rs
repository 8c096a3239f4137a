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
use std::time::Duration;

use tokio::sync::watch;

use super::{failed, Shared};

/// How often `everysec` fsyncs.
const EVERY_SEC: Duration = Duration::from_secs(1);

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

    /// Records that the log failed, waking every waiter with the reason.
    pub(crate) fn fail(&self, reason: String) {
        self.state.send_if_modified(|s| {
            let first = s.failure.is_none();
            if first {
                s.failure = Some(reason.into());
            }
            first
        });
    }

    /// Stops the fsync thread.
    pub(crate) fn shut_down(&self) {
        self.lock().shutdown = true;
        self.wake.notify_all();
    }

    /// The future behind [`super::Persistence::durable`].
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
                Some(Err(failed(reason)))
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
                Ok((false, reason)) => Err(failed(reason.as_deref().unwrap_or("fsync failed"))),
                Err(_) => Err(io::Error::other(
                    "the append-only log was closed before the write was synced",
                )),
            }
        }
    }
}

/// The fsync thread's body, until [`SyncControl::shut_down`] or a failure.
pub(crate) fn run(shared: &Shared) {
    let ctl = &shared.sync;
    match shared.policy {
        super::FsyncPolicy::Always => loop {
            {
                let mut r = ctl.lock();
                loop {
                    if r.shutdown {
                        return;
                    }
                    if r.wanted > ctl.state.borrow().upto {
                        break;
                    }
                    r = ctl.wake.wait(r).unwrap_or_else(|e| e.into_inner());
                }
            }
            if shared.fsync_log().is_err() {
                // Waiters were told; new ones see the failure before they ask.
                return;
            }
        },
        super::FsyncPolicy::EverySec => loop {
            {
                let r = ctl.lock();
                let (r, _) = ctl
                    .wake
                    .wait_timeout_while(r, EVERY_SEC, |r| !r.shutdown)
                    .unwrap_or_else(|e| e.into_inner());
                if r.shutdown {
                    return;
                }
            }
            let pending = shared.lock_log().written > ctl.state.borrow().upto;
            if pending && shared.fsync_log().is_err() {
                return;
            }
        },
        super::FsyncPolicy::No => {}
    }
}
