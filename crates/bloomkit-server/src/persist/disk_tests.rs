//! A failing disk: writes refused with Redis's `MISCONF`, reads answered, the log retried
//! and taking writes again once there is room, nothing acknowledged lost, and a log whose
//! file disappeared never acknowledging anything again. The disk is the test's (`Faults`,
//! beneath the log's `write` and `ftruncate`); `scripts/disk_faults.py` does the same on a
//! real full tmpfs, an ext4 remounted read-only, and an immutable file.

use std::fs;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;

use super::log::format::{self as aof, Tail};
use super::{log_file_name, FsyncPolicy, Persistence, Recovery};

const ENOSPC: i32 = 28;

fn add(item: &str) -> Vec<Bytes> {
    ["BF.ADD", "k", item]
        .iter()
        .map(|s| Bytes::from(s.to_string()))
        .collect()
}

fn replayed(recovery: &Recovery) -> Vec<String> {
    let mut items = Vec::new();
    recovery
        .for_each_command(|c| {
            items.push(String::from_utf8_lossy(&c[2]).into_owned());
            Ok(())
        })
        .unwrap();
    items
}

/// Waits (up to 5 s: the retry runs once a second) until `condition` holds.
fn until(what: &str, condition: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The log file holds whole records only, and this many.
fn whole_records(dir: &Path, generation: u64) -> u64 {
    let bytes = fs::read(dir.join(log_file_name(generation))).unwrap();
    aof::scan_log(
        &bytes[..],
        bytes.len() as u64,
        generation,
        Tail::Strict,
        |_, _| Ok(()),
    )
    .unwrap()
    .records
}

#[tokio::test]
async fn a_full_disk_refuses_writes_keeps_reads_and_takes_writes_again_once_freed() {
    for policy in [FsyncPolicy::Always, FsyncPolicy::EverySec, FsyncPolicy::No] {
        let dir = tempfile::tempdir().unwrap();
        let (p, _) = Persistence::open(dir.path(), policy).unwrap();
        let before = p.append(&[add("a"), add("b")]).unwrap();
        p.durable(before).await.unwrap();
        assert_eq!(p.write_refusal(), None);

        // The disk takes 30 more bytes: half a record, then "no space".
        p.shared.faults.fill(30, ENOSPC);
        let held = p.append(&[add("c")]).unwrap();
        let err = p.durable(held).await.unwrap_err().to_string();
        assert!(
            err.starts_with(
                "MISCONF Errors writing to the AOF file: No space left on device (this command \
                 ran, but the log could not record what it changed or saw; that is written \
                 once the disk accepts writes again"
            ),
            "{policy}: {err}"
        );
        // Write commands are refused before they run, in Redis's words.
        assert_eq!(
            p.write_refusal().as_deref(),
            Some("MISCONF Errors writing to the AOF file: No space left on device"),
            "{policy}"
        );
        // The file was cut back to its last whole record: still a log a restart can read.
        assert_eq!(whole_records(dir.path(), 1), 2, "{policy}");
        // Readers wait for nothing that is held back.
        if let Some(position) = p.observed_position() {
            assert!(position <= before, "{policy}");
            p.durable(position).await.unwrap();
        }
        let stats = p.stats();
        assert!(
            stats
                .log_error
                .as_deref()
                .is_some_and(|e| e.contains("No space left")),
            "{policy}: {stats:?}"
        );
        assert!(
            !stats.log_halted && stats.log_buffered_bytes > 0,
            "{policy}"
        );
        // A command that was already running when the disk filled appends anyway: what it
        // changed is in memory and must reach the log with the rest.
        let late = p.append(&[add("d")]).unwrap();
        assert!(p.durable(late).await.is_err(), "{policy}");
        // A snapshot cannot start either (it would need the buffer written).
        assert!(p.begin_snapshot().is_err(), "{policy}");

        // Space again: within a second or so the retry writes the buffer.
        p.shared.faults.free();
        until("the retry", || p.write_refusal().is_none());
        assert_eq!(p.stats().log_error, None);
        let after = p.append(&[add("e")]).unwrap();
        p.durable(after).await.unwrap();
        drop(p);
        let (_p, recovery) = Persistence::open(dir.path(), policy).unwrap();
        assert!(recovery.warnings().is_empty(), "{:?}", recovery.warnings());
        // Every record, in order, the held-back ones too (their commands ran).
        assert_eq!(replayed(&recovery), ["a", "b", "c", "d", "e"], "{policy}");
    }
}

#[tokio::test]
async fn a_partial_write_that_cannot_be_taken_back_is_finished_by_the_retry() {
    let dir = tempfile::tempdir().unwrap();
    let (p, _) = Persistence::open(dir.path(), FsyncPolicy::EverySec).unwrap();
    let t = p.append(&[add("a")]).unwrap();
    p.durable(t).await.unwrap();
    let good = fs::metadata(dir.path().join(log_file_name(1)))
        .unwrap()
        .len();
    // 10 bytes of the next record reach the file, and the cut back fails too (a file
    // system gone read-only refuses `ftruncate` as well).
    p.shared.faults.fill(10, 30);
    p.shared.faults.set_undo_fails(true);
    let held = p.append(&[add("b")]).unwrap();
    let err = p.durable(held).await.unwrap_err().to_string();
    assert!(
        err.starts_with("MISCONF Errors writing to the AOF file: Read-only file system"),
        "{err}"
    );
    assert!(p
        .stats()
        .log_error
        .unwrap()
        .contains("could not be taken back"));
    let path = dir.path().join(log_file_name(1));
    assert_eq!(fs::metadata(&path).unwrap().len(), good + 10);
    // A crash now: the 10 bytes are a torn tail, cut with a warning, and nothing that was
    // acknowledged is in them.
    let crashed = tempfile::tempdir().unwrap();
    for name in [log_file_name(1), "MANIFEST".into(), "SYNCED".into()] {
        fs::copy(dir.path().join(&name), crashed.path().join(&name)).unwrap();
    }
    {
        let (_c, recovery) = Persistence::open(crashed.path(), FsyncPolicy::No).unwrap();
        assert_eq!(replayed(&recovery), ["a"]);
        assert!(
            recovery.warnings()[0].contains("dropped 10 bytes"),
            "{:?}",
            recovery.warnings()
        );
    }
    // No crash: the retry writes the rest of the record after its first 10 bytes.
    p.shared.faults.set_undo_fails(false);
    p.shared.faults.free();
    until("the retry", || p.write_refusal().is_none());
    let t = p.append(&[add("c")]).unwrap();
    p.durable(t).await.unwrap();
    drop(p);
    assert_eq!(whole_records(dir.path(), 1), 3);
    let (_p, recovery) = Persistence::open(dir.path(), FsyncPolicy::EverySec).unwrap();
    assert!(recovery.warnings().is_empty(), "{:?}", recovery.warnings());
    assert_eq!(replayed(&recovery), ["a", "b", "c"]);
}

/// A disk that stays full until shutdown: what the failed write held back is lost, and
/// `close` says so; nothing acknowledged is.
#[tokio::test]
async fn closing_with_a_write_still_failing_reports_what_is_lost() {
    let dir = tempfile::tempdir().unwrap();
    let (p, _) = Persistence::open(dir.path(), FsyncPolicy::Always).unwrap();
    let t = p.append(&[add("a")]).unwrap();
    p.durable(t).await.unwrap();
    p.shared.faults.fill(0, ENOSPC);
    let held = p.append(&[add("b"), add("c")]).unwrap();
    assert!(p.durable(held).await.is_err());
    let err = p.close().unwrap_err().to_string();
    assert!(
        err.contains("2 records") && err.contains("are lost"),
        "{err}"
    );
    drop(p);
    let (_p, recovery) = Persistence::open(dir.path(), FsyncPolicy::Always).unwrap();
    assert_eq!(replayed(&recovery), ["a"]);
}

/// With the data directory removed while the server runs, no later write is acknowledged:
/// each would go to a file that has no name any more, and be lost.
#[tokio::test]
async fn a_log_whose_directory_was_removed_acknowledges_nothing_more() {
    let parent = tempfile::tempdir().unwrap();
    let dir = parent.path().join("data");
    let (p, _) = Persistence::open(&dir, FsyncPolicy::EverySec).unwrap();
    let t = p.append(&[add("a")]).unwrap();
    p.durable(t).await.unwrap();
    fs::remove_dir_all(&dir).unwrap();
    let mut acknowledged = 0;
    for i in 0..50 {
        let t = p.append(&[add(&i.to_string())]);
        if let Ok(t) = t {
            if p.durable(t).await.is_ok() {
                acknowledged += 1;
            }
        }
    }
    assert_eq!(acknowledged, 0);
    let refusal = p.write_refusal().unwrap();
    assert_eq!(
        refusal,
        "MISCONF Errors writing to the AOF file: the log file was deleted"
    );
    let stats = p.stats();
    assert!(stats.log_halted);
    assert!(stats
        .log_error
        .unwrap()
        .contains("was deleted (or its data directory removed)"),);
    // Reads wait for nothing.
    assert_eq!(p.observed_position(), None);
    assert!(p.close().is_err());
}

/// Deleted while nobody writes: the fsync thread notices within a second or so, so that
/// `INFO` says so before the next write.
#[test]
fn a_deleted_log_is_noticed_without_a_write() {
    let dir = tempfile::tempdir().unwrap();
    let (p, _) = Persistence::open(dir.path(), FsyncPolicy::No).unwrap();
    fs::remove_file(dir.path().join(log_file_name(1))).unwrap();
    until("the check", || p.write_refusal().is_some());
    assert!(p.stats().log_halted);
}

/// A snapshot that keeps failing starts a new log file only once a minimum of log has been
/// written since the last, not at every attempt (every 5 s).
#[test]
fn a_snapshot_that_keeps_failing_adds_a_log_file_only_per_minimum_of_log_written() {
    let dir = tempfile::tempdir().unwrap();
    let (p, _) = Persistence::open(dir.path(), FsyncPolicy::No).unwrap();
    const MIN: u64 = 4096;
    p.set_auto_snapshot_min_bytes(MIN);
    // A directory where `dump.bks` should be: every snapshot fails at its rename.
    fs::create_dir(dir.path().join("dump.bks")).unwrap();
    let mut attempts = 0;
    let mut written = 0u64;
    for round in 0..400 {
        // As the server asks several times a second: the 5 s pause after a failure is made
        // to pass at once here.
        {
            let mut saves = p.shared.lock_saves();
            saves.last_failed_at = saves
                .last_failed_at
                .map(|t| t.checked_sub(Duration::from_secs(6)).unwrap_or(t));
        }
        if p.should_auto_snapshot() {
            attempts += 1;
            let cut = p.begin_snapshot().unwrap();
            assert!(cut
                .write(Vec::<(Bytes, Option<u64>, Arc<bloomkit_commands::Value>)>::new())
                .is_err());
        }
        let c = add(&format!("item-{round}"));
        let mut probe = Vec::new();
        aof::encode_record(&mut probe, &c).unwrap();
        written += probe.len() as u64;
        p.append(&[c]).unwrap();
    }
    let logs = fs::read_dir(dir.path())
        .unwrap()
        .filter(|e| {
            let name = e.as_ref().unwrap().file_name();
            name.to_string_lossy().starts_with("appendonly.")
        })
        .count() as u64;
    // One file per `MIN` bytes written (and the first), not one per attempt.
    assert!(attempts >= 2, "{attempts}");
    assert!(
        logs <= written / MIN + 2,
        "{logs} log files for {written} bytes"
    );
    eprintln!("{attempts} failed snapshots, {logs} log files, {written} bytes logged");
}

/// Through the protocol: a client whose write was running when the disk filled gets the
/// error instead of a reply (and the connection stays open), write commands are refused
/// with `MISCONF` before they run, reads, `PING`, `HELLO` and `INFO` answer, and once there
/// is room again writes are taken, nothing lost across a restart.
///
/// A full disk refuses writes with `MISCONF` and answers everything else; it does not close
/// every connection until a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_of_a_full_disk_hear_misconf_for_writes_and_answers_for_the_rest() {
    use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
    use tokio::net::TcpStream;

    use crate::config::Config;
    use crate::server::Server;

    type Running = tokio::task::JoinHandle<std::io::Result<()>>;

    async fn start(dir: &Path) -> (Arc<super::Shared>, String, Running) {
        let (tx, rx) = std::sync::mpsc::channel();
        let config = Config {
            port: 0,
            dir: dir.to_path_buf(),
            appendfsync: FsyncPolicy::Always,
            ..Config::default()
        };
        let server = Server::open_with(config, move |p| {
            tx.send(Arc::clone(&p.shared)).unwrap();
        })
        .await
        .unwrap();
        let addr = server.local_addr().unwrap().to_string();
        let task = tokio::spawn(server.run_until(std::future::pending::<()>()));
        (rx.recv().unwrap(), addr, task)
    }

    struct Client(BufReader<TcpStream>);

    impl Client {
        async fn connect(addr: &str) -> Client {
            Client(BufReader::new(TcpStream::connect(addr).await.unwrap()))
        }

        /// Sends an inline command and returns its reply's bytes (a bulk string whole).
        async fn call(&mut self, command: &str) -> String {
            self.0
                .get_mut()
                .write_all(format!("{command}\r\n").as_bytes())
                .await
                .unwrap();
            self.reply().await
        }

        async fn reply(&mut self) -> String {
            let read = async {
                let mut line = String::new();
                self.0.read_line(&mut line).await.unwrap();
                if let Some(len) = line.strip_prefix('$') {
                    let len: usize = len.trim_end().parse().unwrap();
                    let mut body = vec![0u8; len + 2];
                    self.0.read_exact(&mut body).await.unwrap();
                    line.push_str(&String::from_utf8_lossy(&body));
                }
                line
            };
            tokio::time::timeout(Duration::from_secs(10), read)
                .await
                .expect("a reply, not silence")
        }
    }

    let dir = tempfile::tempdir().unwrap();
    let misconf = "-MISCONF Errors writing to the AOF file: No space left on device";
    {
        let (shared, addr, task) = start(dir.path()).await;
        let mut c = Client::connect(&addr).await;
        assert_eq!(c.call("BF.ADD k a").await, ":1\r\n");

        shared.faults.fill(0, ENOSPC);
        // Running when the disk filled: it ran, its record is held back, and its reply
        // says so instead of acknowledging it.
        let held = c.call("BF.ADD k b").await;
        assert!(
            held.starts_with(&format!("{misconf} (this command ran")),
            "{held}"
        );
        // From now on write commands are refused before they run.
        assert_eq!(c.call("BF.ADD k c").await, format!("{misconf}\r\n"));
        assert_eq!(c.call("CF.ADD c x").await, format!("{misconf}\r\n"));
        assert_eq!(c.call("DEL k").await, format!("{misconf}\r\n"));
        // Everything else answers, on this connection and on new ones.
        assert_eq!(c.call("PING").await, "+PONG\r\n");
        assert_eq!(c.call("BF.EXISTS k a").await, ":1\r\n");
        assert_eq!(c.call("BF.EXISTS k b").await, ":1\r\n");
        assert_eq!(c.call("BF.EXISTS k c").await, ":0\r\n");
        assert_eq!(c.call("EXISTS c").await, ":0\r\n");
        let info = c.call("INFO persistence").await;
        assert!(info.contains("aof_last_write_status:err\r\n"), "{info}");
        assert!(info.contains("aof_write_retrying:1\r\n"), "{info}");
        assert!(
            info.contains("aof_last_write_error:a write to ")
                && info.contains("No space left on device"),
            "{info}"
        );
        // A client's handshake (its reply's first line is enough here).
        assert!(Client::connect(&addr)
            .await
            .call("HELLO 3")
            .await
            .starts_with('%'));
        let mut other = Client::connect(&addr).await;
        // A pipeline of reads and refused writes: every one answered, in order.
        other
            .0
            .get_mut()
            .write_all(b"BF.EXISTS k a\r\nBF.ADD k d\r\nPING\r\n")
            .await
            .unwrap();
        assert_eq!(other.reply().await, ":1\r\n");
        assert_eq!(other.reply().await, format!("{misconf}\r\n"));
        assert_eq!(other.reply().await, "+PONG\r\n");

        // Room again: the retry writes what was held back, and writes are taken.
        shared.faults.free();
        let deadline = Instant::now() + Duration::from_secs(5);
        while !c
            .call("INFO persistence")
            .await
            .contains("aof_last_write_status:ok")
        {
            assert!(Instant::now() < deadline, "the log never recovered");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(c.call("BF.ADD k c").await, ":1\r\n");
        c.call("SHUTDOWN NOSAVE").await;
        let stopped = tokio::time::timeout(Duration::from_secs(20), task).await;
        assert!(matches!(stopped, Ok(Ok(Ok(())))), "{stopped:?}");
    }
    let (_shared, addr, _task) = start(dir.path()).await;
    let mut c = Client::connect(&addr).await;
    for item in ["a", "b", "c"] {
        assert_eq!(
            c.call(&format!("BF.EXISTS k {item}")).await,
            ":1\r\n",
            "{item}"
        );
    }
    assert_eq!(c.call("BF.EXISTS k d").await, ":0\r\n");
}
