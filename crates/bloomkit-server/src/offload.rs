//! Long commands give their worker thread up while they run, so that they delay the other
//! clients by what the operating system's scheduler does, not by their whole length.
//!
//! The server serves every client from a few worker threads (one per core). A command of a
//! million arguments runs for a large part of a second; run where it was read, it would hold
//! its worker for all that time, and with as many such commands as workers a client's `PING`
//! would wait for one to finish. [`run`] runs a long command with
//! [`tokio::task::block_in_place`]: the worker's other clients move to another thread first,
//! and the long command then shares the cores with them as any thread does. Short commands,
//! nearly all of them, run in place: handing off costs more than they take.
//!
//! A long filter command also holds no lock another key needs while it runs: it leases its
//! key ([`crate::keyspace::lease`]). What is not a command's run is bounded otherwise: a
//! request is parsed as its bytes arrive, between reads, a reply is sent in parts, and a
//! large value is freed on a blocking thread.

use bytes::Bytes;

/// A request with at least this many arguments is long.
pub const LONG_ARGUMENTS: usize = 1024;

/// A request of at least this many bytes of arguments is long.
pub const LONG_BYTES: usize = 1024 * 1024;

/// Whether `args` make a long request: [`LONG_ARGUMENTS`] arguments or [`LONG_BYTES`] bytes.
pub fn is_long(args: &[Bytes]) -> bool {
    args.len() >= LONG_ARGUMENTS || args.iter().map(Bytes::len).sum::<usize>() >= LONG_BYTES
}

/// Runs `work`, off the worker thread when `long` and the runtime has other workers to
/// take its clients (a current-thread runtime, as in tests, has none: it runs in place).
pub fn run<R>(long: bool, work: impl FnOnce() -> R) -> R {
    let multi_thread = long
        && tokio::runtime::Handle::try_current()
            .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
    if multi_thread {
        tokio::task::block_in_place(work)
    } else {
        work()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_by_count_or_by_bytes() {
        let short = vec![Bytes::from_static(b"PING")];
        assert!(!is_long(&short));
        assert!(is_long(&vec![Bytes::from_static(b"x"); LONG_ARGUMENTS]));
        assert!(!is_long(&vec![
            Bytes::from_static(b"x");
            LONG_ARGUMENTS - 1
        ]));
        let big = vec![
            Bytes::from_static(b"SET"),
            Bytes::from(vec![0u8; LONG_BYTES]),
        ];
        assert!(is_long(&big));
    }

    #[test]
    fn runs_in_place_without_a_multi_thread_runtime() {
        assert_eq!(run(true, || 7), 7);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        assert_eq!(runtime.block_on(async { run(true, || 8) }), 8);
    }

    #[test]
    fn runs_off_the_worker_on_a_multi_thread_runtime() {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .build()
            .unwrap();
        // Inside block_in_place, the thread is no longer a worker: spawned tasks still run
        // (on the thread that took the worker over) while `work` waits for them.
        let got = runtime.block_on(async {
            tokio::spawn(async {
                run(true, || {
                    let (tx, rx) = std::sync::mpsc::channel();
                    tokio::spawn(async move { tx.send(9).unwrap() });
                    rx.recv_timeout(std::time::Duration::from_secs(10))
                })
            })
            .await
            .unwrap()
        });
        assert_eq!(got, Ok(9));
    }
}
