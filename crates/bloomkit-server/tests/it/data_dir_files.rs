//! Start-up on a data directory whose files are not what they should be: a symbolic link
//! in place of a file the server writes (which would make it write outside `--dir`), a FIFO
//! (which would hang it), `--dir` naming a regular file, a `SYNCED` that names a log
//! generation that is gone. Each stops start-up with a message naming the file, and writes
//! nothing anywhere.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use bloomkit_server::config::Config;
use bloomkit_server::persist::{
    log_file_name, LOCK_FILE, MANIFEST_FILE, SNAPSHOT_FILE, SYNCED_FILE,
};
use bloomkit_server::server::Server;
use common::{resp, TestServer};

fn config(dir: &Path) -> Config {
    common::persistent(dir)
}

/// Opens `dir`; the start-up error's text (it must fail, and within a few seconds: a FIFO
/// must not make it wait for ever).
async fn refused(dir: &Path) -> String {
    match tokio::time::timeout(Duration::from_secs(20), Server::open(config(dir))).await {
        Err(_) => panic!("start-up on {} hung", dir.display()),
        Ok(Ok(_)) => panic!("start-up on {} succeeded", dir.display()),
        Ok(Err(e)) => e.to_string(),
    }
}

/// A data directory that was served and stopped: a snapshot, a log, a manifest, `SYNCED`.
async fn served_dir(dir: &Path, keys: usize) {
    let server = TestServer::run(Server::open(config(dir)).await.unwrap());
    let mut c = server.raw().await;
    for i in 0..keys {
        c.roundtrip(&resp(&["BF.ADD", "k", &i.to_string()]), b":1\r\n")
            .await;
    }
    drop(c);
    server.stop().await.unwrap();
}

/// Makes a FIFO at `path` by a system call, not by running `mkfifo`: a child process holds
/// a copy of every descriptor until it execs, the data-directory locks of the tests running
/// beside this one included, and one of them then finds its own directory still locked.
fn mkfifo(path: &Path) {
    use rustix::fs::{mknodat, FileType, Mode, CWD};
    mknodat(CWD, path, FileType::Fifo, Mode::from_raw_mode(0o600), 0).unwrap();
}

/// A file outside the data directory, for a planted link to point at.
fn outside(root: &Path) -> PathBuf {
    let target = root.join("elsewhere");
    std::fs::write(&target, b"not the server's").unwrap();
    target
}

#[tokio::test]
async fn a_symbolic_link_in_place_of_a_file_the_server_writes_is_refused() {
    for name in [LOCK_FILE, SYNCED_FILE, MANIFEST_FILE, SNAPSHOT_FILE] {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("data");
        served_dir(&dir, 3).await;
        let target = outside(root.path());
        let planted = dir.join(name);
        std::fs::remove_file(&planted).unwrap();
        std::os::unix::fs::symlink(&target, &planted).unwrap();
        let error = refused(&dir).await;
        assert!(
            error.contains(&format!(
                "{} is a symbolic link, not a regular file",
                planted.display()
            )),
            "{name}: {error}"
        );
        assert_eq!(
            std::fs::read(&target).unwrap(),
            b"not the server's",
            "{name}: the link's target was written"
        );
    }
}

#[tokio::test]
async fn a_fifo_in_place_of_any_file_stops_start_up_instead_of_hanging_it() {
    let names = [
        LOCK_FILE.to_string(),
        SYNCED_FILE.to_string(),
        MANIFEST_FILE.to_string(),
        SNAPSHOT_FILE.to_string(),
        log_file_name(2),
    ];
    for name in &names {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("data");
        served_dir(&dir, 3).await;
        let planted = dir.join(name);
        assert!(planted.exists(), "{name} is one of the directory's files");
        std::fs::remove_file(&planted).unwrap();
        mkfifo(&planted);
        let error = refused(&dir).await;
        assert!(
            error.contains(&format!(
                "{} is a FIFO, not a regular file",
                planted.display()
            )),
            "{name}: {error}"
        );
    }
}

#[tokio::test]
async fn a_regular_file_as_the_data_directory_is_not_a_directory() {
    let root = tempfile::tempdir().unwrap();
    let file = root.path().join("file");
    std::fs::write(&file, b"x").unwrap();
    let error = refused(&file).await;
    assert_eq!(
        error,
        format!(
            "{} is not a directory: give --dir a directory (it is created if missing)",
            file.display()
        )
    );
    assert_eq!(std::fs::read(&file).unwrap(), b"x");
}

#[tokio::test]
async fn synced_naming_a_missing_generation_stops_start_up() {
    // Without the manifest and the newest log, the snapshot alone would load: half of the
    // keys, and not a word.
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("data");
    {
        let server = TestServer::run(Server::open(config(&dir)).await.unwrap());
        let mut c = server.raw().await;
        for i in 0..200 {
            c.roundtrip(&resp(&["BF.ADD", &format!("before:{i}"), "x"]), b":1\r\n")
                .await;
        }
        c.roundtrip(&resp(&["SAVE"]), b"+OK\r\n").await;
        for i in 0..200 {
            c.roundtrip(&resp(&["BF.ADD", &format!("after:{i}"), "x"]), b":1\r\n")
                .await;
        }
        drop(c);
        // As a crash leaves it: no final snapshot.
        c = server.raw().await;
        c.send(&resp(&["SHUTDOWN", "NOSAVE"])).await;
        server.finished().await.unwrap();
    }
    let logs: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("appendonly."))
        .collect();
    assert_eq!(
        logs,
        [log_file_name(2)],
        "the generation after the snapshot"
    );
    std::fs::remove_file(dir.join(MANIFEST_FILE)).unwrap();
    std::fs::remove_file(dir.join(log_file_name(2))).unwrap();
    let error = refused(&dir).await;
    assert!(
        error.contains(&format!(
            "{SYNCED_FILE} says {} was being written",
            log_file_name(2)
        )) && error.contains("that file is missing"),
        "{error}"
    );
}

#[tokio::test]
async fn a_planted_link_at_a_temporary_name_is_never_written_through() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("data");
    served_dir(&dir, 3).await;
    let target = outside(root.path());
    // Names a snapshot and a manifest are written under before they are renamed into place.
    let server = TestServer::run(Server::open(config(&dir)).await.unwrap());
    // The next snapshot's generation is a few past the one being written; plant a link
    // at each name it could take.
    for generation in 1..=20 {
        let temp = dir.join(format!("dump.{generation}.tmp"));
        std::os::unix::fs::symlink(&target, &temp).unwrap();
    }
    let mut c = server.raw().await;
    c.send(&resp(&["SAVE"])).await;
    let reply = c.read_line().await;
    assert!(
        reply.starts_with("-ERR snapshot failed") && reply.contains("symbolic link"),
        "{reply}"
    );
    drop(c);
    server.stop().await.unwrap();
    assert_eq!(std::fs::read(&target).unwrap(), b"not the server's");
}
