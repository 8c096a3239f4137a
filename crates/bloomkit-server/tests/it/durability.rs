//! What a reply promises about durability, through the network: no reply, not even a read's
//! or a no-op write's, reports a change before that change is as durable as the journal
//! requires.

use crate::common;

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bloomkit_server::config::Config;
use bloomkit_server::keyspace::{Durable, Journal, SnapshotEntry, SnapshotWriter, Ticket};
use bloomkit_server::server::Server;
use bytes::Bytes;
use common::{resp, TestServer};
use tokio::sync::watch;

/// A journal whose writes become durable only when the test opens the gate: it stands for
/// an fsync that has not completed yet.
struct Gated {
    appended: AtomicU64,
    open: watch::Sender<bool>,
}

impl Gated {
    fn new() -> Gated {
        Gated {
            appended: AtomicU64::new(0),
            open: watch::channel(false).0,
        }
    }
}

impl Journal for Gated {
    fn append(&self, commands: &[Vec<Bytes>]) -> Option<Ticket> {
        let n = commands.len() as u64;
        Some(Ticket(self.appended.fetch_add(n, Ordering::SeqCst) + n))
    }

    fn durable(&self, _ticket: Ticket) -> Durable<'_> {
        let mut open = self.open.subscribe();
        Box::pin(async move {
            open.wait_for(|open| *open)
                .await
                .map(|_| ())
                .map_err(io::Error::other)
        })
    }

    fn position(&self) -> Option<Ticket> {
        Some(Ticket(self.appended.load(Ordering::SeqCst)))
    }

    fn begin_snapshot(&self) -> io::Result<Box<dyn SnapshotWriter>> {
        Ok(Box::new(Discard))
    }

    fn enabled(&self) -> bool {
        true
    }
}

struct Discard;

impl SnapshotWriter for Discard {
    fn write(self: Box<Self>, _entries: Vec<SnapshotEntry>) -> io::Result<()> {
        Ok(())
    }
}

/// Polls `condition` until it holds, failing after a few seconds.
async fn until(what: &str, condition: impl Fn() -> bool) {
    let deadline = Instant::now() + common::TIMEOUT;
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

#[tokio::test]
async fn nothing_reports_a_change_before_it_is_durable() {
    let journal = Arc::new(Gated::new());
    let config = Config {
        bind: "127.0.0.1".into(),
        port: 0,
        ..Config::default()
    };
    let handed = Arc::clone(&journal);
    let server = Server::bind_with(config, move |_| Ok(handed as Arc<dyn Journal>))
        .await
        .unwrap();
    let server = TestServer::run(server);

    // A's write is applied and logged, but not durable: no reply yet.
    let mut a = server.raw().await;
    a.send(&resp(&["BF.ADD", "k", "x"])).await;
    until("A's write to be logged", || {
        journal.appended.load(Ordering::SeqCst) == 2 // the creation, then the item
    })
    .await;

    // B adds the same item (a no-op: "0, may exist", nothing logged) and C asks whether it
    // is there. Answering either now would report a state that a crash can still undo.
    let mut b = server.raw().await;
    b.send(&resp(&["BF.ADD", "k", "x"])).await;
    let mut c = server.raw().await;
    c.send(&resp(&["BF.EXISTS", "k", "x"])).await;
    c.send(&resp(&["TYPE", "k"])).await;
    for client in [&mut a, &mut b, &mut c] {
        assert!(
            tokio::time::timeout(Duration::from_millis(200), client.read_exact(1))
                .await
                .is_err(),
            "a reply went out before the write it reports was durable"
        );
    }

    // Durable: every reply goes out, in order.
    journal.open.send_replace(true);
    a.expect(b":1\r\n").await;
    b.expect(b":0\r\n").await;
    c.expect(b":1\r\n+MBbloom--\r\n").await;
    assert_eq!(
        journal.appended.load(Ordering::SeqCst),
        2,
        "B logged nothing"
    );
    server.stop().await.unwrap();
}
