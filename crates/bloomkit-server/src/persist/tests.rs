//! Crash-point simulations: a snapshot interrupted at each step, and leftovers that a crash
//! leaves, must recover every item. (The formats' hostile-input tests are beside them, in
//! `log/format.rs` and `snapshot/mod.rs`; the public API's in `tests/it/persist.rs`.)

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::sync::Arc;

use bloomkit::{CuckooFilter, ScalableBloomFilter};
use bloomkit_commands::Value;
use bytes::Bytes;

use super::snapshot::save::CrashPoint;
use super::{log_file_name, FsyncPolicy, Persistence, Recovery, SNAPSHOT_FILE};

/// Keys to real filters, changed by `ADDB key item` / `ADDC key item` (creating the key with
/// fixed parameters when missing, logged as an explicit creation first, as the server does).
#[derive(Default, Debug, PartialEq)]
struct Model(BTreeMap<Bytes, Value>);

impl Model {
    fn apply(&mut self, c: &[Bytes]) -> Result<(), String> {
        let (name, key, item) = match c {
            [n, k, i] => (n, k, i),
            _ => return Err("bad arity".into()),
        };
        match &name[..] {
            b"NEWB" => {
                let f = ScalableBloomFilter::builder(20, 0.01)
                    .build()
                    .map_err(|e| e.to_string())?;
                self.0.insert(key.clone(), Value::Bloom(f));
            }
            b"NEWC" => {
                let f = CuckooFilter::redisbloom_builder(32)
                    .build()
                    .map_err(|e| e.to_string())?;
                self.0.insert(key.clone(), Value::Cuckoo(f));
            }
            b"ADD" => match self.0.get_mut(key) {
                Some(Value::Bloom(f)) => {
                    f.insert(&item[..]).map_err(|e| e.to_string())?;
                }
                Some(Value::Cuckoo(f)) => f.insert(&item[..]).map_err(|e| e.to_string())?,
                _ => return Err("no such key, or a key being restored".into()),
            },
            _ => return Err("unknown command".into()),
        }
        Ok(())
    }

    /// One write: create the key if needed, add the item, log both under "the key's lock".
    fn write(&mut self, p: &Persistence, key: &str, item: &str) {
        let mut log = Vec::new();
        if !self.0.contains_key(key.as_bytes()) {
            let kind = if key.starts_with('c') { "NEWC" } else { "NEWB" };
            log.push(args(&[kind, key, "-"]));
        }
        log.push(args(&["ADD", key, item]));
        for c in &log {
            self.apply(c).unwrap();
        }
        p.append(&log).unwrap();
    }

    fn entries(&self) -> Vec<(Bytes, Option<u64>, Arc<Value>)> {
        self.0
            .iter()
            .map(|(k, v)| (k.clone(), None, Arc::new(v.clone())))
            .collect()
    }

    fn recover(recovery: &mut Recovery) -> Model {
        let mut m = Model::default();
        for e in recovery.take_entries() {
            assert_eq!(e.expires_at_ms, None);
            m.0.insert(e.key, e.value);
        }
        recovery.for_each_command(|c| m.apply(&c)).unwrap();
        m
    }
}

fn args(a: &[&str]) -> Vec<Bytes> {
    a.iter()
        .map(|s| Bytes::copy_from_slice(s.as_bytes()))
        .collect()
}

fn writes(m: &mut Model, p: &Persistence, tag: &str, n: usize) {
    for i in 0..n {
        let key = ["b1", "b2", "c1"][i % 3];
        m.write(p, key, &format!("{tag}-{i}"));
    }
}

fn files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        // The directory's bookkeeping, always there.
        .filter(|n| !["LOCK", "MANIFEST", "SYNCED"].contains(&n.as_str()))
        .collect();
    names.sort();
    names
}

/// A first snapshot, more writes, then a second snapshot that "crashes" at `crash` while
/// writers carry on; then a restart must give back every item, whatever the crash point.
fn crash_during_second_snapshot(crash: CrashPoint) -> (Vec<String>, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let mut m = Model::default();
    {
        let (p, _) = Persistence::open(dir.path(), FsyncPolicy::EverySec).unwrap();
        writes(&mut m, &p, "before-first", 40);
        p.begin_snapshot().unwrap().write(m.entries()).unwrap();
        writes(&mut m, &p, "after-first", 40);
        // Two abandoned cuts: the second snapshot covers three generations (2, 3, 4).
        drop(p.begin_snapshot().unwrap());
        writes(&mut m, &p, "between", 10);
        drop(p.begin_snapshot().unwrap());
        writes(&mut m, &p, "between-again", 10);
        let cut = p.begin_snapshot().unwrap();
        let entries = m.entries();
        writes(&mut m, &p, "during", 25);
        cut.write_until(entries, Some(crash)).unwrap();
        // The process dies: whatever was written (with everysec, in the page cache) stays.
    }
    let (p, mut recovery) = Persistence::open(dir.path(), FsyncPolicy::EverySec).unwrap();
    let warnings = recovery.warnings().to_vec();
    let rebuilt = Model::recover(&mut recovery);
    assert_eq!(rebuilt, m, "{crash:?}: state differs after recovery");
    // Recovery leaves a clean directory: one snapshot, no temp file, no covered log.
    let after = files(dir.path());
    assert!(after.iter().all(|f| !f.ends_with(".tmp")), "{after:?}");
    assert!(after.contains(&SNAPSHOT_FILE.to_string()));
    // And the next snapshot still works from here.
    let mut m2 = rebuilt;
    writes(&mut m2, &p, "after-restart", 5);
    p.begin_snapshot().unwrap().write(m2.entries()).unwrap();
    drop(p);
    let (_p, mut recovery) = Persistence::open(dir.path(), FsyncPolicy::EverySec).unwrap();
    assert_eq!(Model::recover(&mut recovery), m2);
    (warnings, after)
}

#[test]
fn crash_while_writing_the_temp_file_keeps_the_old_snapshot_and_every_log() {
    let (warnings, after) = crash_during_second_snapshot(CrashPoint::MidTemp);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("dump.5.tmp"), "{warnings:?}");
    assert_eq!(
        after,
        [
            "appendonly.2.aof",
            "appendonly.3.aof",
            "appendonly.4.aof",
            "appendonly.5.aof",
            "dump.bks"
        ]
    );
}

#[test]
fn crash_before_the_rename_keeps_the_old_snapshot_and_every_log() {
    let (warnings, after) = crash_during_second_snapshot(CrashPoint::BeforeRename);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("dump.5.tmp"));
    assert_eq!(after.len(), 5, "{after:?}");
}

#[test]
fn crash_after_the_manifest_allows_the_new_snapshot_keeps_the_old_one_and_every_log() {
    let (warnings, after) = crash_during_second_snapshot(CrashPoint::BeforeSnapshotRename);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("dump.5.tmp"));
    assert_eq!(after.len(), 5, "{after:?}");
}

#[test]
fn crash_after_the_rename_uses_the_new_snapshot_and_drops_covered_logs() {
    let (warnings, after) = crash_during_second_snapshot(CrashPoint::AfterRename);
    // The manifest allowed the new snapshot as the one being installed: start-up takes it,
    // and generations 2, 3 and 4, which it covers, are removed.
    assert_eq!(warnings.len(), 4, "{warnings:?}");
    assert!(warnings[0].contains("being installed"), "{warnings:?}");
    assert!(warnings[1..]
        .iter()
        .all(|w| w.contains("already holds its commands")));
    assert_eq!(after, ["appendonly.5.aof", "dump.bks"]);
}

#[test]
fn crash_before_the_manifest_names_the_new_snapshot_completes_it() {
    let (warnings, after) = crash_during_second_snapshot(CrashPoint::BeforeManifest);
    assert_eq!(warnings.len(), 4, "{warnings:?}");
    assert!(warnings[0].contains("being installed"), "{warnings:?}");
    assert_eq!(after, ["appendonly.5.aof", "dump.bks"]);
}

#[test]
fn crash_in_the_middle_of_removing_covered_logs_finishes_the_removal() {
    let (warnings, after) = crash_during_second_snapshot(CrashPoint::MidRemoval);
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert_eq!(after, ["appendonly.5.aof", "dump.bks"]);
}

#[test]
fn an_old_generation_brought_back_after_a_snapshot_is_ignored_and_removed() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = Model::default();
    let old_log;
    {
        let (p, _) = Persistence::open(dir.path(), FsyncPolicy::No).unwrap();
        writes(&mut m, &p, "a", 20);
        old_log = fs::read(dir.path().join(log_file_name(1))).unwrap();
        p.begin_snapshot().unwrap().write(m.entries()).unwrap();
        writes(&mut m, &p, "b", 20);
    }
    // As if the removal never reached the disk.
    fs::write(dir.path().join(log_file_name(1)), &old_log).unwrap();
    let (_p, mut recovery) = Persistence::open(dir.path(), FsyncPolicy::No).unwrap();
    assert_eq!(recovery.warnings().len(), 1);
    // Replaying generation 1 on top of the snapshot would add its items twice to the cuckoo
    // filter: the state must be exactly the model's.
    assert_eq!(Model::recover(&mut recovery), m);
    assert!(!dir.path().join(log_file_name(1)).exists());
}

/// Without a manifest (a directory from before manifests existed), a generation created
/// just before a crash may have lost its header: it is the last, so it is rewritten.
#[test]
fn a_crash_right_after_a_rotation_leaves_an_empty_or_headerless_last_log() {
    for keep in [0usize, 10, 24] {
        let dir = tempfile::tempdir().unwrap();
        let mut m = Model::default();
        {
            let (p, _) = Persistence::open(dir.path(), FsyncPolicy::No).unwrap();
            writes(&mut m, &p, "x", 9);
            drop(p.begin_snapshot().unwrap());
        }
        fs::remove_file(dir.path().join(super::MANIFEST_FILE)).unwrap();
        fs::remove_file(dir.path().join(super::SYNCED_FILE)).unwrap();
        // The new generation's header never fully reached the disk.
        let path = dir.path().join(log_file_name(2));
        fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(keep as u64)
            .unwrap();
        let (p, mut recovery) = Persistence::open(dir.path(), FsyncPolicy::No).unwrap();
        // Plus the warning that the manifest was missing (generation 1 was written by this
        // build, so one existed).
        assert_eq!(
            recovery.warnings().len(),
            1 + usize::from(keep % 24 != 0),
            "{keep}: {:?}",
            recovery.warnings()
        );
        assert!(recovery.warnings()[0].contains("MANIFEST is missing"));
        assert_eq!(Model::recover(&mut recovery), m);
        writes(&mut m, &p, "y", 3);
        drop(p);
        let (_p, mut recovery) = Persistence::open(dir.path(), FsyncPolicy::No).unwrap();
        assert!(recovery.warnings().is_empty(), "{:?}", recovery.warnings());
        assert_eq!(Model::recover(&mut recovery), m, "{keep}");
    }
}

/// With a manifest, a rotation fsyncs the new generation's header before the manifest lists
/// it; a crash before that leaves a generation nothing lists, holding no record: removed.
/// One that the manifest lists but that lost its header was emptied by something else.
#[test]
fn a_rotation_interrupted_before_its_manifest_leaves_an_unlisted_empty_generation() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = Model::default();
    let manifest_before;
    {
        let (p, _) = Persistence::open(dir.path(), FsyncPolicy::No).unwrap();
        writes(&mut m, &p, "x", 9);
        manifest_before = fs::read(dir.path().join(super::MANIFEST_FILE)).unwrap();
        drop(p.begin_snapshot().unwrap());
        writes(&mut m, &p, "y", 2);
    }
    let listed = fs::read(dir.path().join(super::MANIFEST_FILE)).unwrap();
    // Generation 2 holds records: a manifest that does not list it is refused.
    fs::write(dir.path().join(super::MANIFEST_FILE), &manifest_before).unwrap();
    let err = Persistence::open(dir.path(), FsyncPolicy::No).unwrap_err();
    assert!(
        err.to_string()
            .contains("appendonly.2.aof is not listed in MANIFEST"),
        "{err}"
    );
    // Emptied to its header (as the crash would have left it), it is removed, and
    // generation 1, still the one being written, is all there is.
    let path = dir.path().join(log_file_name(2));
    let header = fs::read(&path).unwrap()[..24].to_vec();
    for keep in [24usize, 10, 0] {
        let mut m1 = Model::default();
        fs::write(&path, &header[..keep]).unwrap();
        fs::write(dir.path().join(super::MANIFEST_FILE), &manifest_before).unwrap();
        let (p1, recovery) = Persistence::open(dir.path(), FsyncPolicy::No).unwrap();
        assert_eq!(recovery.warnings().len(), 1, "{:?}", recovery.warnings());
        assert!(recovery.warnings()[0].contains("before MANIFEST listed it"));
        for c in logged(&recovery) {
            m1.apply(&c).unwrap();
        }
        assert!(!path.exists());
        assert_eq!(m1.0.len(), 3, "generation 1's keys");
        // Put generation 2 back for the next round.
        drop(p1);
        fs::write(&path, &header).unwrap();
    }
    // Listed but emptied: an error naming it.
    fs::write(dir.path().join(super::MANIFEST_FILE), &listed).unwrap();
    fs::write(&path, &header[..10]).unwrap();
    match Persistence::open(dir.path(), FsyncPolicy::No) {
        Err(super::PersistError::CorruptLog { path: p, .. }) => assert_eq!(p, path),
        other => panic!("{other:?}"),
    }
}

fn logged(recovery: &Recovery) -> Vec<Vec<Bytes>> {
    let mut commands = Vec::new();
    recovery
        .for_each_command(|c| {
            commands.push(c);
            Ok(())
        })
        .unwrap();
    commands
}

/// A snapshot cut taken before `close` is not written after it: written then, it would
/// rename over the next owner's snapshot and delete its log, and the directory would not
/// open again.
#[test]
fn a_snapshot_cut_before_close_is_not_written_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let (p1, _) = Persistence::open(dir.path(), FsyncPolicy::Always).unwrap();
    p1.append(&[args(&["ADD", "k", "x"])]).unwrap();
    let late = p1.begin_snapshot().unwrap();
    p1.close().unwrap();
    let (p2, _) = Persistence::open(dir.path(), FsyncPolicy::Always).unwrap();
    p2.append(&[args(&["ADD", "k", "y"])]).unwrap();
    p2.sync().unwrap();
    assert!(late
        .write(Vec::<(Bytes, Option<u64>, Arc<Value>)>::new())
        .is_err());
    drop((p1, p2));
    let (_p3, recovery) = Persistence::open(dir.path(), FsyncPolicy::Always).unwrap();
    assert_eq!(
        logged(&recovery),
        vec![args(&["ADD", "k", "x"]), args(&["ADD", "k", "y"])]
    );
}

/// `close` tells the fsync thread's waiters before it stops it, so no `durable` future
/// waits forever: `close` covers what was appended with its own fsync and fails anything
/// later.
#[tokio::test]
async fn durable_after_close_answers_instead_of_hanging() {
    let dir = tempfile::tempdir().unwrap();
    let (p, _) = Persistence::open(dir.path(), FsyncPolicy::Always).unwrap();
    let ticket = p.append(&[args(&["ADD", "k", "x"])]).unwrap();
    p.close().unwrap();
    let waited = tokio::time::timeout(std::time::Duration::from_secs(5), p.durable(ticket)).await;
    assert!(matches!(waited, Ok(Ok(()))), "{waited:?}");
    assert!(p.append(&[args(&["ADD", "k", "y"])]).is_err());
    let beyond = super::Ticket::from_sequence(ticket.sequence() + 1);
    let waited = tokio::time::timeout(std::time::Duration::from_secs(5), p.durable(beyond)).await;
    assert!(matches!(waited, Ok(Err(_))), "{waited:?}");
    // A second close changes nothing; Drop after it is quiet.
    p.close().unwrap();
    drop(p);
    let (_again, recovery) = Persistence::open(dir.path(), FsyncPolicy::Always).unwrap();
    assert_eq!(logged(&recovery), vec![args(&["ADD", "k", "x"])]);
}

/// Linux reports a writeback error to one fsync only, so once an fsync
/// of the log has failed, no later fsync (the fsync thread's, a snapshot cut's, close's)
/// may count as covering anything.
#[tokio::test]
async fn after_a_failed_fsync_no_later_fsync_releases_anyone() {
    use std::sync::atomic::Ordering;
    let dir = tempfile::tempdir().unwrap();
    let (p, _) = Persistence::open(dir.path(), FsyncPolicy::Always).unwrap();
    let ticket = p.append(&[args(&["ADD", "k", "x"])]).unwrap();
    // What `fsync_file` records when the kernel reports an error (which cannot be provoked
    // here without a failing disk).
    p.shared.fsync_failed.store(true, Ordering::Release);
    let waited = tokio::time::timeout(std::time::Duration::from_secs(5), p.durable(ticket)).await;
    assert!(matches!(waited, Ok(Err(_))), "{waited:?}");
    assert!(p.begin_snapshot().is_err());
    assert!(p.close().is_err());
}

/// Every file of `dir` with its bytes.
fn contents(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}

#[test]
fn inspecting_a_stopped_directory_reads_everything_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = Model::default();
    {
        let (p, _) = Persistence::open(dir.path(), FsyncPolicy::No).unwrap();
        writes(&mut m, &p, "before", 30);
        p.begin_snapshot().unwrap().write(m.entries()).unwrap();
        writes(&mut m, &p, "after", 30);
        // A running server's directory is refused.
        let e = Persistence::inspect(dir.path()).unwrap_err();
        assert!(matches!(e, super::PersistError::Locked { .. }), "{e}");
    }
    // A torn tail, as a crash in the middle of a write leaves.
    let last = files(dir.path())
        .into_iter()
        .rfind(|f| f.ends_with(".aof"))
        .unwrap();
    let mut log = fs::OpenOptions::new()
        .append(true)
        .open(dir.path().join(&last))
        .unwrap();
    std::io::Write::write_all(&mut log, b"\x01\x02torn").unwrap();
    drop(log);
    let before = contents(dir.path());
    let mut stopped = Persistence::inspect(dir.path()).unwrap();
    assert!(
        stopped.recovery.warnings()[0].contains("left out 6 bytes"),
        "{:?}",
        stopped.recovery.warnings()
    );
    assert_eq!(Model::recover(&mut stopped.recovery), m);
    // While it is read, no server starts on it.
    let e = Persistence::open(dir.path(), FsyncPolicy::No).unwrap_err();
    assert!(matches!(e, super::PersistError::Locked { .. }), "{e}");
    drop(stopped);
    assert_eq!(
        contents(dir.path()),
        before,
        "inspect changed the directory"
    );
    // A server then starts on it as it would have: the tail is cut, nothing is lost.
    let (_p, mut recovery) = Persistence::open(dir.path(), FsyncPolicy::No).unwrap();
    assert_eq!(Model::recover(&mut recovery), m);
    // A directory no server ever used, and something that is not a directory.
    let empty = tempfile::tempdir().unwrap();
    let mut stopped = Persistence::inspect(empty.path()).unwrap();
    assert!(stopped.recovery.take_entries().is_empty());
    assert!(fs::read_dir(empty.path()).unwrap().next().is_none());
    let file = empty.path().join("f");
    fs::write(&file, b"x").unwrap();
    assert!(matches!(
        Persistence::inspect(&file),
        Err(super::PersistError::NotADirectory { .. })
    ));
}
