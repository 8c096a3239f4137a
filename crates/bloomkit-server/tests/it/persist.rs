//! Persistence through its public API: what is appended comes back, in order, under every
//! fsync policy; damage is either a reported torn tail or an error naming file and offset;
//! snapshots plus logs rebuild real filters; group commit shares fsyncs.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bloomkit::{CuckooFilter, ScalableBloomFilter};
use bloomkit_commands::Value;
use bloomkit_server::persist::{
    log_file_name, FsyncPolicy, PersistError, Persistence, Recovery, MANIFEST_FILE, SNAPSHOT_FILE,
    SYNCED_FILE,
};
use bytes::Bytes;

fn cmd(args: &[&str]) -> Vec<Bytes> {
    args.iter()
        .map(|a| Bytes::copy_from_slice(a.as_bytes()))
        .collect()
}

fn replay(recovery: &Recovery) -> Vec<Vec<Bytes>> {
    let mut seen = Vec::new();
    recovery
        .for_each_command(|c| {
            seen.push(c);
            Ok(())
        })
        .unwrap();
    seen
}

fn open(dir: &Path, policy: FsyncPolicy) -> (Persistence, Recovery) {
    Persistence::open(dir, policy).unwrap_or_else(|e| panic!("open failed: {e}"))
}

fn log_path(dir: &Path, generation: u64) -> PathBuf {
    dir.join(log_file_name(generation))
}

/// What a `kill -9` of the server leaves: the files as the kernel holds them now (written,
/// not necessarily fsynced), copied into a fresh directory, without the lock.
fn crash_copy(dir: &Path) -> tempfile::TempDir {
    let copy = tempfile::tempdir().unwrap();
    for entry in fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        if entry.file_name() != "LOCK" {
            fs::copy(entry.path(), copy.path().join(entry.file_name())).unwrap();
        }
    }
    copy
}

/// Makes `dir` a directory as builds from before manifests left it: no `MANIFEST`, no
/// `SYNCED`.
fn without_manifest(dir: &Path) {
    for name in [MANIFEST_FILE, SYNCED_FILE] {
        let _ = fs::remove_file(dir.join(name));
    }
}

/// A tiny keyspace over real filters: enough commands to exercise every kind of value, an
/// expiry and a deletion, applied the same way live and on replay.
#[derive(Default, Debug, PartialEq)]
struct Model {
    keys: HashMap<Bytes, (Option<u64>, Value)>,
}

impl Model {
    fn apply(&mut self, c: &[Bytes]) -> Result<(), String> {
        let word = |i: usize| -> Result<&str, String> {
            c.get(i)
                .and_then(|b| std::str::from_utf8(b).ok())
                .ok_or_else(|| format!("argument {i} missing"))
        };
        let key = c.get(1).cloned().ok_or("no key")?;
        match word(0)? {
            "T.BRESERVE" => {
                let cap: u64 = word(2)?.parse().map_err(|_| "bad capacity")?;
                let f = ScalableBloomFilter::builder(cap, 0.01)
                    .expansion(2)
                    .build()
                    .map_err(|e| e.to_string())?;
                self.keys.insert(key, (None, Value::Bloom(f)));
            }
            "T.CRESERVE" => {
                let cap: u64 = word(2)?.parse().map_err(|_| "bad capacity")?;
                let f = CuckooFilter::redisbloom_builder(cap)
                    .build()
                    .map_err(|e| e.to_string())?;
                self.keys.insert(key, (None, Value::Cuckoo(f)));
            }
            "T.ADD" => match self.keys.get_mut(&key) {
                Some((_, Value::Bloom(f))) => {
                    f.insert(&c[2][..]).map_err(|e| e.to_string())?;
                }
                Some((_, Value::Cuckoo(f))) => f.insert(&c[2][..]).map_err(|e| e.to_string())?,
                _ => return Err("no such key, or a key being restored".into()),
            },
            "T.CDEL" => match self.keys.get_mut(&key) {
                Some((_, Value::Cuckoo(f))) => {
                    f.remove(&c[2][..]);
                }
                _ => return Err("WRONGTYPE".into()),
            },
            "PEXPIREAT" => {
                let at: u64 = word(2)?.parse().map_err(|_| "bad time")?;
                self.keys.get_mut(&key).ok_or("no such key")?.0 = Some(at);
            }
            "DEL" => {
                self.keys.remove(&key);
            }
            other => return Err(format!("unknown command {other}")),
        }
        Ok(())
    }

    /// Applies `c` and logs it, as the server does (append while the key is locked).
    fn run(&mut self, p: &Persistence, c: Vec<Bytes>) {
        self.apply(&c).unwrap();
        p.append(&[c]).unwrap();
    }

    fn entries(&self) -> Vec<(Bytes, Option<u64>, Arc<Value>)> {
        self.keys
            .iter()
            .map(|(k, (e, v))| (k.clone(), *e, Arc::new(v.clone())))
            .collect()
    }

    fn recover(recovery: &mut Recovery) -> Model {
        let mut m = Model::default();
        for e in recovery.take_entries() {
            m.keys.insert(e.key, (e.expires_at_ms, e.value));
        }
        recovery.for_each_command(|c| m.apply(&c)).unwrap();
        m
    }
}

/// A workload touching two Bloom keys, a cuckoo key with deletions, an expiry and a DEL.
fn workload(m: &mut Model, p: &Persistence, round: usize) {
    let b = format!("bloom{}", round % 2);
    if !m.keys.contains_key(b.as_bytes()) {
        m.run(p, cmd(&["T.BRESERVE", &b, "50"]));
    }
    if !m.keys.contains_key(&b"cuckoo"[..]) {
        m.run(p, cmd(&["T.CRESERVE", "cuckoo", "64"]));
    }
    for i in 0..30 {
        m.run(p, cmd(&["T.ADD", &b, &format!("r{round}-i{i}")]));
    }
    m.run(p, cmd(&["T.ADD", "cuckoo", &format!("c{round}")]));
    if round % 3 == 2 {
        m.run(p, cmd(&["T.CDEL", "cuckoo", &format!("c{}", round - 1)]));
    }
    if round == 4 {
        m.run(p, cmd(&["PEXPIREAT", "bloom0", "1900000000000"]));
    }
    if round == 6 {
        m.run(p, cmd(&["T.BRESERVE", "temp", "10"]));
        m.run(p, cmd(&["DEL", "temp"]));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_policy_replays_exactly_what_was_appended() {
    for policy in [FsyncPolicy::Always, FsyncPolicy::EverySec, FsyncPolicy::No] {
        let dir = tempfile::tempdir().unwrap();
        let mut appended = Vec::new();
        {
            let (p, recovery) = open(dir.path(), policy);
            assert_eq!(recovery.logged_commands(), 0);
            assert!(recovery.warnings().is_empty());
            for i in 0..50 {
                let batch = vec![
                    cmd(&["BF.RESERVE", &format!("k{i}"), "0.01", "100"]),
                    vec![
                        Bytes::from_static(b"BF.ADD"),
                        Bytes::from(format!("k{i}")),
                        Bytes::from(vec![0u8, 255, b'\r', b'\n', i as u8]),
                    ],
                ];
                let ticket = p.append(&batch).unwrap();
                p.durable(ticket).await.unwrap();
                appended.extend(batch);
            }
        }
        let (_p, recovery) = open(dir.path(), policy);
        assert_eq!(recovery.logged_commands(), 100, "{policy}");
        assert_eq!(replay(&recovery), appended, "{policy}");
        assert!(recovery.warnings().is_empty(), "{policy}");
    }
}

#[test]
fn policies_parse_from_their_redis_names() {
    assert_eq!("always".parse(), Ok(FsyncPolicy::Always));
    assert_eq!("EverySec".parse(), Ok(FsyncPolicy::EverySec));
    assert_eq!("no".parse(), Ok(FsyncPolicy::No));
    let err = "sometimes".parse::<FsyncPolicy>().unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid fsync policy \"sometimes\": expected always, everysec or no"
    );
    assert_eq!(FsyncPolicy::default(), FsyncPolicy::EverySec);
    assert_eq!(FsyncPolicy::Always.to_string(), "always");
}

#[tokio::test]
async fn a_torn_tail_is_truncated_and_reported_and_later_appends_follow_it() {
    let dir = tempfile::tempdir().unwrap();
    let commands: Vec<_> = (0..3)
        .map(|i| cmd(&["BF.ADD", "k", &i.to_string()]))
        .collect();
    let (p, _) = open(dir.path(), FsyncPolicy::No);
    let mut ticket = None;
    for c in &commands {
        ticket = Some(p.append(std::slice::from_ref(c)).unwrap());
    }
    p.durable(ticket.unwrap()).await.unwrap();
    // Written, never fsynced (`no`): a crash now, then the disk lost the last 5 bytes of the
    // last write.
    let crashed = crash_copy(dir.path());
    drop(p);
    let dir = crashed;
    let path = log_path(dir.path(), 1);
    let full = fs::metadata(&path).unwrap().len();
    fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(full - 5)
        .unwrap();
    let last_len = {
        let mut probe = Vec::new();
        bloomkit_server::persist::log::format::encode_record(&mut probe, &commands[2]).unwrap();
        probe.len() as u64
    };
    {
        let (p, recovery) = open(dir.path(), FsyncPolicy::No);
        assert_eq!(replay(&recovery), commands[..2]);
        let warnings = recovery.warnings();
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        let good = full - last_len;
        let expected = format!(
            "{}: dropped {} bytes from byte {good} on, 1 incomplete record (the last record is \
             cut short); the log now ends at byte {good} after 2 complete records; the bytes \
             dropped all came after byte 24, the end of the last fsync (SYNCED)",
            path.display(),
            last_len - 5
        );
        assert!(warnings[0].starts_with(&expected), "{}", warnings[0]);
        assert_eq!(fs::metadata(&path).unwrap().len(), good);
        p.append(&[cmd(&["BF.ADD", "k", "after"])]).unwrap();
    }
    let (_p, recovery) = open(dir.path(), FsyncPolicy::No);
    assert!(recovery.warnings().is_empty());
    let mut expected = commands[..2].to_vec();
    expected.push(cmd(&["BF.ADD", "k", "after"]));
    assert_eq!(replay(&recovery), expected);
}

// ---- Transactions in the log ------------------------------------------------------------

/// Logs `before`, then `inside` as one transaction (as `EXEC` does), then `after`, and
/// returns the file's bytes and where the transaction's records begin and end.
async fn log_with_a_transaction(
    p: &Persistence,
    dir: &Path,
    before: &[Vec<Bytes>],
    inside: &[Vec<Bytes>],
    after: &[Vec<Bytes>],
) -> (Vec<u8>, u64, u64) {
    let path = log_path(dir, p.stats().log_generation);
    let mut ticket = p.append(before).unwrap();
    let start = fs::metadata(&path).unwrap().len() + p.stats().log_buffered_bytes;
    p.begin_transaction();
    for c in inside {
        p.append(std::slice::from_ref(c)).unwrap();
    }
    ticket = ticket.max(
        p.end_transaction()
            .unwrap()
            .expect("the transaction logged"),
    );
    p.durable(ticket).await.unwrap();
    let end = fs::metadata(&path).unwrap().len();
    ticket = ticket.max(p.append(after).unwrap());
    p.durable(ticket).await.unwrap();
    (fs::read(&path).unwrap(), start, end)
}

/// A crash in the middle of an `EXEC` leaves its `MULTI` and some of its records: start-up
/// drops them all, whatever byte the log stops at, and says so; it never replays part of a
/// transaction.
#[tokio::test]
async fn a_transaction_cut_anywhere_is_replayed_whole_or_not_at_all() {
    let dir = tempfile::tempdir().unwrap();
    let (p, _) = open(dir.path(), FsyncPolicy::No);
    let before = vec![cmd(&["CF.ADD", "a", "0"])];
    let inside: Vec<_> = (1..4)
        .map(|i| cmd(&["CF.ADD", "a", &i.to_string()]))
        .collect();
    let after = vec![cmd(&["CF.ADD", "a", "4"])];
    let (bytes, start, end) =
        log_with_a_transaction(&p, dir.path(), &before, &inside, &after).await;
    let crashed = crash_copy(dir.path());
    drop(p);
    let path = log_path(crashed.path(), 1);
    let mut cuts_inside = 0;
    for cut in (24..=bytes.len() as u64).rev() {
        let copy = crash_copy(crashed.path());
        let log = log_path(copy.path(), 1);
        fs::write(&log, &bytes[..cut as usize]).unwrap();
        let (p, recovery) = open(copy.path(), FsyncPolicy::No);
        let seen = replay(&recovery);
        let mut whole = before.clone();
        if cut >= end {
            whole.extend(inside.iter().cloned());
        }
        if cut == bytes.len() as u64 {
            whole.extend(after.iter().cloned());
        }
        assert_eq!(seen, whole[..seen.len()], "cut at {cut}: a prefix");
        let has = |c: &Vec<Bytes>| seen.contains(c);
        assert!(
            inside.iter().all(has) || !inside.iter().any(has),
            "cut at {cut}: part of the transaction replayed: {seen:?}"
        );
        if cut > start && cut < end {
            cuts_inside += 1;
            assert_eq!(seen, before, "cut at {cut}");
            let warnings = recovery.warnings();
            assert_eq!(warnings.len(), 1, "cut at {cut}: {warnings:?}");
            // A cut inside the `MULTI` record itself is a lone torn record.
            let multi_len = 31;
            let what = if cut < start + multi_len {
                "1 incomplete record"
            } else {
                "of a transaction that a crash interrupted"
            };
            assert!(
                warnings[0].contains(&format!(
                    "dropped {} bytes from byte {start} on",
                    cut - start
                )) && warnings[0].contains(what),
                "cut at {cut}: {}",
                warnings[0]
            );
            // Cut back to before the `MULTI`: what is appended next is not inside it.
            assert_eq!(fs::metadata(&log).unwrap().len(), start, "cut at {cut}");
            p.append(&[cmd(&["CF.ADD", "a", "later"])]).unwrap();
            drop(p);
            let (_p, recovery) = open(copy.path(), FsyncPolicy::No);
            assert!(recovery.warnings().is_empty(), "cut at {cut}");
            let mut expected = before.clone();
            expected.push(cmd(&["CF.ADD", "a", "later"]));
            assert_eq!(replay(&recovery), expected, "cut at {cut}");
        }
    }
    assert!(cuts_inside > 100, "{cuts_inside}");
    assert!(path.exists());
}

/// A transaction whose records were fsynced (`SYNCED` says so) but whose `EXEC` record was
/// not written when the server died is dropped like a torn tail: its commands were never
/// acknowledged. It is not mistaken for records lost outside the server.
#[tokio::test]
async fn an_fsynced_transaction_without_its_exec_record_is_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let (p, _) = open(dir.path(), FsyncPolicy::Always);
    let ticket = p.append(&[cmd(&["BF.ADD", "k", "kept"])]).unwrap();
    p.durable(ticket).await.unwrap();
    p.begin_transaction();
    let ticket = p.append(&[cmd(&["BF.ADD", "k", "dropped"])]).unwrap();
    // The fsync thread syncs what the transaction wrote so far.
    p.durable(ticket).await.unwrap();
    let crashed = crash_copy(dir.path());
    drop(p);
    let (_p, recovery) = open(crashed.path(), FsyncPolicy::Always);
    assert_eq!(replay(&recovery), vec![cmd(&["BF.ADD", "k", "kept"])]);
    let warnings = recovery.warnings();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("the 2 complete records of a transaction"),
        "{}",
        warnings[0]
    );
}

/// Nothing but a damaged file can leave a transaction open at the end of a finished
/// generation (a snapshot's cut never falls inside one): that stops start-up.
#[test]
fn a_finished_generation_that_ends_inside_a_transaction_stops_start_up() {
    use bloomkit_server::persist::log::format as aof;
    let dir = tempfile::tempdir().unwrap();
    let mut first = aof::log_header(1).to_vec();
    aof::encode_marker(&mut first, aof::Marker::Multi);
    aof::encode_record(&mut first, &cmd(&["BF.ADD", "k", "x"])).unwrap();
    fs::write(log_path(dir.path(), 1), &first).unwrap();
    fs::write(log_path(dir.path(), 2), aof::log_header(2)).unwrap();
    match Persistence::open(dir.path(), FsyncPolicy::No) {
        Err(PersistError::CorruptLog {
            path,
            offset,
            reason,
            ..
        }) => {
            assert_eq!(path, log_path(dir.path(), 1));
            assert_eq!(offset, 24);
            assert!(reason.contains("ends inside a transaction"), "{reason}");
        }
        other => panic!("expected an error, got {:?}", other.map(|_| ())),
    }
    // Markers out of place anywhere are damage too.
    for markers in [
        &[aof::Marker::Exec][..],
        &[aof::Marker::Multi, aof::Marker::Multi, aof::Marker::Exec],
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut log = aof::log_header(1).to_vec();
        for &m in markers {
            aof::encode_marker(&mut log, m);
        }
        fs::write(log_path(dir.path(), 1), &log).unwrap();
        assert!(
            matches!(
                Persistence::open(dir.path(), FsyncPolicy::No),
                Err(PersistError::CorruptLog { .. })
            ),
            "{markers:?}"
        );
    }
}

/// A transaction that logs nothing (reads only) leaves nothing in the log; a snapshot
/// cannot cut one that is being logged.
#[test]
fn an_empty_transaction_writes_nothing_and_snapshots_wait_for_an_open_one() {
    let dir = tempfile::tempdir().unwrap();
    let (p, _) = open(dir.path(), FsyncPolicy::No);
    p.begin_transaction();
    assert_eq!(p.end_transaction().unwrap(), None);
    assert_eq!(p.stats().log_buffered_bytes, 0);
    p.begin_transaction();
    p.append(&[cmd(&["BF.ADD", "k", "x"])]).unwrap();
    assert!(matches!(
        p.begin_snapshot(),
        Err(PersistError::LogFailed { .. })
    ));
    assert!(p.end_transaction().unwrap().is_some());
    drop(p.begin_snapshot().unwrap());
}

/// Regression: the last generation cut short after the server had fsynced it (at a record
/// boundary, or far inside a record) was replayed as if a crash had torn its last write,
/// and every record after the cut was dropped with a warning that blamed a crash.
#[test]
fn a_last_log_shorter_than_what_was_fsynced_stops_start_up() {
    let dir = tempfile::tempdir().unwrap();
    let mut starts = Vec::new();
    {
        let (p, _) = open(dir.path(), FsyncPolicy::No);
        for i in 0..50 {
            starts.push(p.stats().log_bytes);
            p.append(&[cmd(&["CF.ADD", "k", &i.to_string()])]).unwrap();
        }
        // Closing fsyncs: SYNCED now covers every byte.
    }
    let path = log_path(dir.path(), 1);
    let full = fs::read(&path).unwrap();
    for (cut, what) in [
        (starts[25], "at a record boundary"),
        (starts[10] + 5, "inside a record"),
        (24, "to its bare header"),
    ] {
        fs::write(&path, &full[..cut as usize]).unwrap();
        let err = Persistence::open(dir.path(), FsyncPolicy::No).unwrap_err();
        let msg = err.to_string();
        let end = if cut == starts[10] + 5 {
            starts[10]
        } else {
            cut
        };
        assert!(
            msg.starts_with(&format!(
                "corrupt append-only log {} at byte {end}: ",
                path.display()
            )) && msg.contains(&format!("its first {} bytes had been fsynced", full.len()))
                && msg.contains("which no crash does"),
            "{what}: {msg}"
        );
        // Left as it was, for a human to look at.
        assert_eq!(fs::metadata(&path).unwrap().len(), cut, "{what}");
    }
    // The way out the message names: without SYNCED, the cut is taken for a torn tail.
    fs::write(&path, &full[..(starts[10] + 5) as usize]).unwrap();
    fs::remove_file(dir.path().join(SYNCED_FILE)).unwrap();
    let (_p, recovery) = open(dir.path(), FsyncPolicy::No);
    assert_eq!(recovery.logged_commands(), 10);
    assert!(recovery.warnings()[0].contains("1 incomplete record"));
}

#[test]
fn damage_in_the_middle_stops_start_up_naming_file_and_offset() {
    for listed in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let mut starts = Vec::new();
        {
            let (p, _) = open(dir.path(), FsyncPolicy::No);
            for i in 0..3 {
                starts.push(p.stats().log_bytes);
                p.append(&[cmd(&["CF.ADD", "k", &i.to_string()])]).unwrap();
            }
        }
        if !listed {
            without_manifest(dir.path());
        }
        let path = log_path(dir.path(), 1);
        let mut bytes = fs::read(&path).unwrap();
        bytes[starts[1] as usize + 12] ^= 0x04; // inside the second record's payload
        fs::write(&path, &bytes).unwrap();
        let err = Persistence::open(dir.path(), FsyncPolicy::No).unwrap_err();
        match &err {
            PersistError::CorruptLog {
                path: p, offset, ..
            } => {
                assert_eq!(p, &path);
                assert_eq!(*offset, starts[1]);
            }
            other => panic!("{other:?}"),
        }
        let msg = err.to_string();
        assert!(
            msg.starts_with(&format!(
                "corrupt append-only log {} at byte {}: record checksum mismatch",
                path.display(),
                starts[1]
            )),
            "{msg}"
        );
        if listed {
            assert!(msg.contains("remove MANIFEST and SYNCED"), "{msg}");
        } else {
            assert!(msg.contains(&format!("truncate -s {}", starts[1])), "{msg}");
        }
        // Nothing was repaired behind the user's back.
        assert_eq!(fs::read(&path).unwrap(), bytes);
    }
}

#[test]
fn a_torn_tail_in_an_older_generation_is_an_error() {
    for listed in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        {
            let (p, _) = open(dir.path(), FsyncPolicy::No);
            p.append(&[cmd(&["BF.ADD", "a", "1"]), cmd(&["BF.ADD", "a", "2"])])
                .unwrap();
            drop(p.begin_snapshot().unwrap()); // rotates, then abandons the snapshot
            p.append(&[cmd(&["BF.ADD", "a", "3"])]).unwrap();
        }
        if !listed {
            without_manifest(dir.path());
        }
        let old = log_path(dir.path(), 1);
        let len = fs::metadata(&old).unwrap().len();
        fs::OpenOptions::new()
            .write(true)
            .open(&old)
            .unwrap()
            .set_len(len - 1)
            .unwrap();
        match Persistence::open(dir.path(), FsyncPolicy::No) {
            Err(PersistError::CorruptLog { path, .. }) => assert_eq!(path, old),
            other => panic!("{other:?}"),
        }
    }
}

/// Regression: a finished (older) generation cut at a record boundary, or to its bare
/// header, was replayed without a word: 850 of 3,150 acknowledged items gone. Each finished
/// generation's length and checksum are in the manifest now.
#[test]
fn a_finished_generation_cut_at_a_record_boundary_or_to_its_header_stops_start_up() {
    let dir = tempfile::tempdir().unwrap();
    let mut starts = Vec::new();
    {
        let (p, _) = open(dir.path(), FsyncPolicy::No);
        for i in 0..20 {
            starts.push(p.stats().log_bytes);
            p.append(&[cmd(&["BF.ADD", "a", &i.to_string()])]).unwrap();
        }
        drop(p.begin_snapshot().unwrap());
        p.append(&[cmd(&["BF.ADD", "a", "later"])]).unwrap();
    }
    let old = log_path(dir.path(), 1);
    let full = fs::read(&old).unwrap();
    for cut in [starts[12], 24] {
        fs::write(&old, &full[..cut as usize]).unwrap();
        let err = Persistence::open(dir.path(), FsyncPolicy::No).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.starts_with(&format!(
                "corrupt append-only log {} at byte {cut}: the file is {cut} bytes long, but it \
                 was {} bytes when it was finished (MANIFEST): its last {} bytes are missing",
                old.display(),
                full.len(),
                full.len() as u64 - cut
            )),
            "{msg}"
        );
    }
    // The same length with other records (another generation's file put in its place) is
    // caught by the checksum.
    let mut swapped = full.clone();
    let (x, y) = (starts[4] as usize, starts[5] as usize);
    let (z, w) = (starts[5] as usize, starts[6] as usize);
    assert_eq!(y - x, w - z, "records 4 and 5 are the same size");
    swapped[x..y].copy_from_slice(&full[z..w]);
    swapped[z..w].copy_from_slice(&full[x..y]);
    fs::write(&old, &swapped).unwrap();
    let msg = Persistence::open(dir.path(), FsyncPolicy::No)
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("its records were changed or replaced"),
        "{msg}"
    );
    fs::write(&old, &full).unwrap();
    let (_p, recovery) = open(dir.path(), FsyncPolicy::No);
    assert_eq!(recovery.logged_commands(), 21);
}

/// Regression: with the newest generation deleted while older ones remained, or the
/// directory's files emptied or deleted, start-up ran on partial data without a word.
#[test]
fn files_the_manifest_lists_must_be_there_and_whole() {
    let build = || {
        let dir = tempfile::tempdir().unwrap();
        let mut m = Model::default();
        let (p, _) = open(dir.path(), FsyncPolicy::No);
        workload(&mut m, &p, 0);
        p.begin_snapshot().unwrap().write(m.entries()).unwrap();
        workload(&mut m, &p, 1);
        drop(p.begin_snapshot().unwrap());
        workload(&mut m, &p, 2);
        drop(p);
        // dump.bks (generation 2), appendonly.2.aof (finished), appendonly.3.aof (open).
        assert!(log_path(dir.path(), 2).exists() && log_path(dir.path(), 3).exists());
        dir
    };
    let fails = |dir: &Path, what: &str, expected: &str| {
        let msg = Persistence::open(dir, FsyncPolicy::No)
            .unwrap_err()
            .to_string();
        assert!(msg.contains(expected), "{what}: {msg}");
    };
    let dir = build();
    fs::remove_file(log_path(dir.path(), 3)).unwrap();
    fails(
        dir.path(),
        "the newest log deleted",
        "appendonly.3.aof is missing: MANIFEST lists it as the generation being written",
    );
    let dir = build();
    fs::remove_file(log_path(dir.path(), 2)).unwrap();
    fails(
        dir.path(),
        "a finished log deleted",
        "appendonly.2.aof is missing: MANIFEST lists it as a finished generation",
    );
    let dir = build();
    fs::remove_file(dir.path().join(SNAPSHOT_FILE)).unwrap();
    fails(
        dir.path(),
        "the snapshot deleted",
        "dump.bks is missing: MANIFEST lists it",
    );
    for name in [
        log_file_name(3),
        log_file_name(2),
        SNAPSHOT_FILE.to_string(),
    ] {
        let dir = build();
        fs::write(dir.path().join(&name), b"").unwrap();
        let msg = Persistence::open(dir.path(), FsyncPolicy::No)
            .unwrap_err()
            .to_string();
        assert!(
            msg.starts_with("corrupt ") && msg.contains(&name),
            "{name} emptied: {msg}"
        );
    }
    let dir = build();
    fs::write(dir.path().join(MANIFEST_FILE), b"").unwrap();
    fails(dir.path(), "MANIFEST emptied", "corrupt manifest");
    // Every file emptied: the manifest is the first to say so.
    let dir = build();
    for entry in fs::read_dir(dir.path()).unwrap() {
        fs::write(entry.unwrap().path(), b"").unwrap();
    }
    fails(dir.path(), "everything emptied", "corrupt manifest");
    // A snapshot from another time in place of the listed one.
    let dir = build();
    let other = build();
    fs::copy(
        other.path().join(SNAPSHOT_FILE),
        dir.path().join(SNAPSHOT_FILE),
    )
    .unwrap();
    fails(
        dir.path(),
        "another dump.bks",
        "dump.bks (starting replay at appendonly.2.aof",
    );
    // And the way out: without MANIFEST (and SYNCED), the old rules, with a warning.
    let dir = build();
    fs::remove_file(log_path(dir.path(), 3)).unwrap();
    without_manifest(dir.path());
    let (_p, recovery) = open(dir.path(), FsyncPolicy::No);
    assert!(recovery.warnings()[0].contains("MANIFEST is missing"));
}

/// How the last log's damage is judged: by what the directory knows of it.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Known {
    /// A manifest, and `SYNCED` saying only the header was fsynced (a crash with `no`).
    HeaderSynced,
    /// A manifest, and `SYNCED` saying every byte was (the server stopped cleanly).
    AllSynced,
    /// Neither: a directory from before manifests.
    Nothing,
}

#[tokio::test]
async fn every_truncation_and_byte_flip_of_the_last_log_recovers_a_prefix_or_fails_loudly() {
    for known in [Known::HeaderSynced, Known::AllSynced, Known::Nothing] {
        truncations_and_flips(known).await;
    }
}

async fn truncations_and_flips(known: Known) {
    let commands: Vec<_> = (0..3)
        .map(|i| cmd(&["BF.MADD", "key", &format!("item{i}")]))
        .collect();
    let mut starts = Vec::new();
    let first = tempfile::tempdir().unwrap();
    let (p, _) = open(first.path(), FsyncPolicy::No);
    let mut ticket = None;
    for c in &commands {
        starts.push(p.stats().log_bytes);
        ticket = Some(p.append(std::slice::from_ref(c)).unwrap());
    }
    p.durable(ticket.unwrap()).await.unwrap();
    let dir = if known == Known::HeaderSynced {
        crash_copy(first.path())
    } else {
        drop(p);
        let dir = crash_copy(first.path());
        if known == Known::Nothing {
            // As a build from before manifests wrote it: version 1, nothing beside it.
            without_manifest(dir.path());
            let path = log_path(dir.path(), 1);
            let mut bytes = fs::read(&path).unwrap();
            bytes[8] = 1;
            fs::write(&path, bytes).unwrap();
        }
        dir
    };
    let path = log_path(dir.path(), 1);
    let original = fs::read(&path).unwrap();
    let header = starts[0] as usize;
    let dir_files: Vec<(std::ffi::OsString, Vec<u8>)> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (e.file_name(), fs::read(e.path()).unwrap())
        })
        .collect();
    // `damage_at`: the first byte that differs from a prefix of the original.
    let check = |bytes: &[u8], what: String, damage_at: usize, is_cut: bool| {
        // Each case starts from the same directory (a recovery writes a manifest).
        for entry in fs::read_dir(dir.path()).unwrap() {
            let entry = entry.unwrap();
            if !dir_files.iter().any(|(name, _)| *name == entry.file_name()) {
                fs::remove_file(entry.path()).unwrap();
            }
        }
        for (name, content) in &dir_files {
            fs::write(dir.path().join(name), content).unwrap();
        }
        fs::write(&path, bytes).unwrap();
        // Which cuts must recover: any, without records of what was on disk; past the
        // header, when only the header was fsynced; none, when everything was.
        let must_recover = match known {
            Known::Nothing => is_cut,
            Known::HeaderSynced => is_cut && bytes.len() >= header,
            Known::AllSynced => is_cut && bytes.len() == original.len(),
        };
        match Persistence::open(dir.path(), FsyncPolicy::No) {
            Ok((_p, recovery)) => {
                let seen = replay(&recovery);
                assert!(commands.starts_with(&seen), "{known:?} {what}");
                // Only the record the damage is in may be lost, never one before it.
                let intact = starts
                    .iter()
                    .zip(starts.iter().skip(1).chain([&(original.len() as u64)]))
                    .filter(|&(_, &end)| end as usize <= damage_at)
                    .count();
                assert_eq!(seen.len(), intact, "{known:?} {what}");
                if !is_cut {
                    // A damaged record is only ever taken for a torn tail if it is the last:
                    // the records after a damaged one prove it was not a torn write.
                    assert_eq!(seen.len(), commands.len() - 1, "{known:?} {what}");
                }
                assert!(
                    known != Known::AllSynced || bytes == &original[..],
                    "{what}"
                );
                // Anything dropped is reported (an empty file or a cut at a record boundary
                // drops nothing).
                let dropped_bytes =
                    bytes.len() > starts.get(seen.len()).map_or(usize::MAX, |&s| s as usize);
                let torn_header = !bytes.is_empty() && bytes.len() < header;
                assert_eq!(
                    !recovery.warnings().is_empty(),
                    dropped_bytes || torn_header,
                    "{known:?} {what}: {:?}",
                    recovery.warnings()
                );
            }
            Err(PersistError::CorruptLog {
                path: p, offset, ..
            }) => {
                assert!(!must_recover, "{known:?} {what}: this cut must recover");
                assert_eq!(p, path, "{known:?} {what}");
                assert!(offset as usize <= damage_at, "{known:?} {what}");
            }
            Err(e) => panic!("{known:?} {what}: {e}"),
        }
    };
    for cut in 0..original.len() {
        check(&original[..cut], format!("cut at {cut}"), cut, true);
    }
    for pos in 0..original.len() {
        let mut damaged = original.clone();
        damaged[pos] ^= 0x10;
        check(&damaged, format!("flip at {pos}"), pos, false);
    }
}

#[test]
fn every_truncation_of_the_snapshot_stops_start_up_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (p, _) = open(dir.path(), FsyncPolicy::No);
        let mut m = Model::default();
        workload(&mut m, &p, 0);
        let cut = p.begin_snapshot().unwrap();
        cut.write(m.entries()).unwrap();
    }
    let path = dir.path().join(SNAPSHOT_FILE);
    let original = fs::read(&path).unwrap();
    for cut in (0..original.len()).step_by(7).chain([original.len() - 1]) {
        fs::write(&path, &original[..cut]).unwrap();
        match Persistence::open(dir.path(), FsyncPolicy::No) {
            Err(e @ PersistError::CorruptSnapshot { .. }) => {
                let msg = e.to_string();
                assert!(
                    msg.starts_with(&format!("corrupt snapshot {} at byte ", path.display())),
                    "{msg}"
                );
            }
            other => panic!("cut at {cut}: {other:?}"),
        }
    }
    fs::write(&path, &original).unwrap();
    open(dir.path(), FsyncPolicy::No);
}

#[test]
fn snapshot_and_log_together_rebuild_real_filters() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = Model::default();
    {
        let (p, _) = open(dir.path(), FsyncPolicy::EverySec);
        for round in 0..4 {
            workload(&mut m, &p, round);
        }
        let cut = p.begin_snapshot().unwrap();
        let entries = m.entries();
        // Writers carry on while the snapshot is written: their commands land after the cut.
        for round in 4..6 {
            workload(&mut m, &p, round);
        }
        p.write_snapshot(cut, entries).unwrap();
        for round in 6..8 {
            workload(&mut m, &p, round);
        }
        let stats = p.stats();
        assert_eq!(stats.log_generation, 2);
        assert!(stats.last_snapshot_ok);
        assert!(!stats.snapshot_in_progress);
        assert!(stats.snapshot_bytes > 0);
        assert!(stats.changes_since_last_save > 0);
    }
    // The covered generation is gone; replay starts at the cut.
    assert!(!log_path(dir.path(), 1).exists());
    let (p, mut recovery) = open(dir.path(), FsyncPolicy::EverySec);
    assert!(recovery.warnings().is_empty(), "{:?}", recovery.warnings());
    assert_eq!(recovery.entries().len(), 3);
    let rebuilt = Model::recover(&mut recovery);
    assert_eq!(rebuilt, m);
    assert_eq!(
        rebuilt.keys[&b"bloom0"[..]].0,
        Some(1_900_000_000_000),
        "the expiry survives"
    );
    // Changes since the save are the records after the cut, found again in the log.
    assert_eq!(
        p.stats().changes_since_last_save,
        recovery.logged_commands()
    );
}

#[test]
fn a_snapshot_restored_alone_into_an_empty_directory_loads() {
    let from = tempfile::tempdir().unwrap();
    let mut m = Model::default();
    {
        let (p, _) = open(from.path(), FsyncPolicy::No);
        workload(&mut m, &p, 0);
        p.begin_snapshot().unwrap().write(m.entries()).unwrap();
    }
    let to = tempfile::tempdir().unwrap();
    fs::copy(
        from.path().join(SNAPSHOT_FILE),
        to.path().join(SNAPSHOT_FILE),
    )
    .unwrap();
    let (p, mut recovery) = open(to.path(), FsyncPolicy::No);
    assert_eq!(Model::recover(&mut recovery), m);
    // Appends go to the generation the snapshot names.
    assert_eq!(p.stats().log_generation, 2);
}

#[test]
fn missing_generations_are_errors_that_say_what_to_restore() {
    let build = || {
        let dir = tempfile::tempdir().unwrap();
        let (p, _) = open(dir.path(), FsyncPolicy::No);
        for i in 0..3 {
            p.append(&[cmd(&["BF.ADD", "k", &i.to_string()])]).unwrap();
            drop(p.begin_snapshot().unwrap());
        }
        // Generations 1..=4 exist, no snapshot.
        dir
    };
    // With a manifest: it names what is missing.
    let dir = build();
    fs::remove_file(log_path(dir.path(), 2)).unwrap();
    let err = Persistence::open(dir.path(), FsyncPolicy::No).unwrap_err();
    assert!(matches!(err, PersistError::Inconsistent { .. }), "{err:?}");
    assert!(
        err.to_string()
            .contains("appendonly.2.aof is missing: MANIFEST lists it as a finished generation"),
        "{err}"
    );
    // Without (a directory from before manifests): the files say it of each other.
    let dir = build();
    without_manifest(dir.path());
    fs::remove_file(log_path(dir.path(), 2)).unwrap();
    let err = Persistence::open(dir.path(), FsyncPolicy::No).unwrap_err();
    assert!(matches!(err, PersistError::Inconsistent { .. }), "{err:?}");
    assert!(
        err.to_string()
            .contains("appendonly.2.aof is missing between appendonly.1.aof and appendonly.3.aof"),
        "{err}"
    );
    fs::remove_file(log_path(dir.path(), 1)).unwrap();
    let err = Persistence::open(dir.path(), FsyncPolicy::No).unwrap_err();
    assert!(
        err.to_string()
            .contains("there is no dump.bks, but the logs start at appendonly.3.aof"),
        "{err}"
    );
}

#[test]
fn two_servers_cannot_share_a_directory() {
    let dir = tempfile::tempdir().unwrap();
    let (first, _) = open(dir.path(), FsyncPolicy::No);
    let err = Persistence::open(dir.path(), FsyncPolicy::No).unwrap_err();
    assert!(matches!(err, PersistError::Locked { .. }), "{err:?}");
    assert!(err
        .to_string()
        .contains("in use by another bloomkit server"));
    drop(first);
    open(dir.path(), FsyncPolicy::No);
}

/// Regression: a server stopped in-process kept its directory locked until the last task
/// holding its state ended, so an immediate restart found the directory "in use".
#[test]
fn close_releases_the_directory_while_references_remain() {
    let dir = tempfile::tempdir().unwrap();
    let (first, _) = open(dir.path(), FsyncPolicy::Always);
    let ticket = first.append(&[cmd(&["T.NEWB", "k"])]).unwrap();
    first.close().unwrap();
    first.close().unwrap();
    // Still alive, yet released: the directory opens, with everything appended before.
    let (second, recovery) = open(dir.path(), FsyncPolicy::Always);
    assert_eq!(replay(&recovery), vec![cmd(&["T.NEWB", "k"])]);
    // The closed log takes nothing more.
    assert!(first.append(&[cmd(&["T.NEWB", "late"])]).is_err());
    drop((first, ticket));
    drop(second);
}

#[test]
fn open_creates_a_missing_directory() {
    let dir = tempfile::tempdir().unwrap();
    let nested = dir.path().join("a/b/data");
    let (p, recovery) = open(&nested, FsyncPolicy::No);
    assert_eq!(recovery.logged_commands(), 0);
    assert!(log_path(&nested, 1).exists());
    assert_eq!(p.dir(), nested);
}

#[test]
fn a_refused_command_on_replay_names_file_and_offset() {
    let dir = tempfile::tempdir().unwrap();
    let second_at;
    {
        let (p, _) = open(dir.path(), FsyncPolicy::No);
        p.append(&[cmd(&["T.BRESERVE", "k", "10"])]).unwrap();
        second_at = p.stats().log_bytes;
        p.append(&[cmd(&["T.CDEL", "k", "x"])]).unwrap();
    }
    let (_p, recovery) = open(dir.path(), FsyncPolicy::No);
    let mut m = Model::default();
    let err = recovery.for_each_command(|c| m.apply(&c)).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "replaying the command at byte {second_at} of {} (T.CDEL (2 arguments)) failed: \
             WRONGTYPE",
            log_path(dir.path(), 1).display()
        )
    );
}

#[test]
fn concurrent_appends_from_many_threads_keep_every_record_in_each_threads_order() {
    let dir = tempfile::tempdir().unwrap();
    const THREADS: usize = 16;
    const EACH: usize = 300;
    {
        let (p, _) = open(dir.path(), FsyncPolicy::No);
        std::thread::scope(|s| {
            for t in 0..THREADS {
                let p = &p;
                s.spawn(move || {
                    for i in 0..EACH {
                        // Batches of one and two, as commands that create their key log two.
                        let mut batch = vec![cmd(&["BF.ADD", &format!("t{t}"), &i.to_string()])];
                        if i % 5 == 0 {
                            batch.push(cmd(&["PEXPIREAT", &format!("t{t}"), &i.to_string()]));
                        }
                        p.append(&batch).unwrap();
                    }
                });
            }
        });
    }
    let (_p, recovery) = open(dir.path(), FsyncPolicy::No);
    let mut next = vec![0usize; THREADS];
    let mut total = 0;
    recovery
        .for_each_command(|c| {
            let t: usize = std::str::from_utf8(&c[1][1..]).unwrap().parse().unwrap();
            let i: usize = std::str::from_utf8(&c[2]).unwrap().parse().unwrap();
            if c[0] == "BF.ADD" {
                assert_eq!(i, next[t], "thread {t}'s records out of order");
                next[t] += 1;
            } else {
                // A batch is written as one: its second record follows its first.
                assert_eq!(i + 1, next[t]);
            }
            total += 1;
            Ok(())
        })
        .unwrap();
    assert_eq!(next, vec![EACH; THREADS]);
    assert_eq!(total, THREADS * (EACH + EACH / 5));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_fsync_covers_every_record_written_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let (p, _) = open(dir.path(), FsyncPolicy::Always);
    let p = Arc::new(p);
    // 50 clients' writes land in the log...
    let tickets: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..50)
            .map(|c| {
                let p = &p;
                s.spawn(move || p.append(&[cmd(&["BF.ADD", "k", &c.to_string()])]).unwrap())
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let before = p.stats().log_fsyncs;
    // ...then all 50 wait for durability at once: the first wakes the fsync thread, whose
    // one fsync covers all of them.
    let waits: Vec<_> = tickets
        .iter()
        .map(|&t| tokio::spawn(p.durable(t)))
        .collect();
    for w in waits {
        w.await.unwrap().unwrap();
    }
    assert_eq!(p.stats().log_fsyncs - before, 1);
    // Already durable: no further fsync.
    p.durable(tickets[0]).await.unwrap();
    assert_eq!(p.stats().log_fsyncs - before, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_clients_with_always_share_fsyncs_and_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    const CLIENTS: usize = 50;
    const EACH: usize = 20;
    {
        let (p, _) = open(dir.path(), FsyncPolicy::Always);
        let p = Arc::new(p);
        let tasks: Vec<_> = (0..CLIENTS)
            .map(|c| {
                let p = Arc::clone(&p);
                tokio::spawn(async move {
                    for i in 0..EACH {
                        let t = p
                            .append(&[cmd(&["CF.ADD", &format!("c{c}"), &i.to_string()])])
                            .unwrap();
                        p.durable(t).await.unwrap();
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
        let fsyncs = p.stats().log_fsyncs;
        eprintln!("{} acknowledged writes, {fsyncs} fsyncs", CLIENTS * EACH);
        assert!(fsyncs >= 1 && fsyncs <= (CLIENTS * EACH) as u64);
    }
    let (_p, recovery) = open(dir.path(), FsyncPolicy::Always);
    assert_eq!(recovery.logged_commands(), (CLIENTS * EACH) as u64);
}

#[test]
fn one_snapshot_at_a_time_and_an_abandoned_cut_frees_the_slot() {
    let dir = tempfile::tempdir().unwrap();
    let (p, _) = open(dir.path(), FsyncPolicy::No);
    p.append(&[cmd(&["BF.ADD", "k", "1"])]).unwrap();
    let cut = p.begin_snapshot().unwrap();
    assert!(p.stats().snapshot_in_progress);
    assert!(matches!(
        p.begin_snapshot(),
        Err(PersistError::SnapshotInProgress)
    ));
    assert!(!p.should_auto_snapshot());
    drop(cut);
    assert!(!p.stats().snapshot_in_progress);
    p.append(&[cmd(&["BF.ADD", "k", "2"])]).unwrap();
    let cut = p.begin_snapshot().unwrap();
    assert_eq!(cut.generation(), 3);
    cut.write(Vec::<(Bytes, Option<u64>, Arc<Value>)>::new())
        .unwrap();
    // Both abandoned generations are covered now.
    assert!(!log_path(dir.path(), 1).exists() && !log_path(dir.path(), 2).exists());
    // A cut of a generation that holds no record yet starts at it: no file is added, however
    // many snapshots are taken (or fail) while nothing is written.
    for _ in 0..3 {
        let cut = p.begin_snapshot().unwrap();
        assert_eq!(cut.generation(), 3);
        drop(cut);
    }
    assert!(!log_path(dir.path(), 4).exists());
}

#[test]
fn the_auto_snapshot_trigger_waits_for_the_log_to_outgrow_the_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let (p, _) = open(dir.path(), FsyncPolicy::No);
    p.set_auto_snapshot_min_bytes(4096);
    let mut m = Model::default();
    assert!(!p.should_auto_snapshot());
    while p.stats().log_bytes < 4096 {
        workload(&mut m, &p, 1);
    }
    assert!(p.should_auto_snapshot());
    let before = p.stats();
    assert_eq!(before.snapshot_bytes, 0);
    p.begin_snapshot().unwrap().write(m.entries()).unwrap();
    let after = p.stats();
    assert_eq!(after.changes_since_last_save, 0);
    assert!(after.log_bytes < 100, "only the new generation's header");
    assert!(after.snapshot_bytes > 0);
    assert!(after.last_save_unix >= before.last_save_unix);
    assert!(!p.should_auto_snapshot());
    // It fires again once the log holds as much as the snapshot.
    let target = after.snapshot_bytes.max(4096);
    while p.stats().log_bytes < target {
        assert!(!p.should_auto_snapshot());
        p.append(&[cmd(&["BF.ADD", "k", "some item of a fair length"])])
            .unwrap();
    }
    assert!(p.should_auto_snapshot());
}

/// Golden files: a log and a snapshot written by an earlier build must read back exactly,
/// and this build must write the same bytes. A change that breaks stored data fails here;
/// it needs a new format version, not new golden files. Written once, when missing and
/// `BLOOMKIT_WRITE_GOLDEN=1` is set; never rewritten after they landed.
mod golden {
    use super::*;
    use bloomkit_server::persist::log::format::{self as aof, Tail};
    use bloomkit_server::persist::manifest::{read as read_manifest, Manifest, Sealed, SnapshotId};
    use bloomkit_server::persist::snapshot::{
        read_snapshot, SnapshotEntry, SnapshotHeader, SnapshotWriter,
    };

    fn data(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data")
            .join(name)
    }

    const LOG: &str = "appendonly-v1.aof";
    const LOG_V2: &str = "appendonly-v2.aof";
    const LOG_V3: &str = "appendonly-v3.aof";
    const MANIFEST: &str = "MANIFEST-v1";
    const SNAPSHOT: &str = "dump-v1.bks";
    const GENERATION: u64 = 3;
    const HEADER: SnapshotHeader = SnapshotHeader {
        log_generation: GENERATION,
        created_unix_ms: 1_700_000_000_000,
    };

    fn log_recipe() -> Vec<Vec<Bytes>> {
        vec![
            cmd(&["BF.RESERVE", "bloom", "0.01", "100", "EXPANSION", "2"]),
            cmd(&["BF.ADD", "bloom", "apple"]),
            cmd(&["BF.MADD", "bloom", "pear", "plum", ""]),
            vec![
                Bytes::from_static(b"CF.ADD"),
                Bytes::from_static(b"binary\x00key"),
                Bytes::from_static(b"\r\n\xff"),
            ],
            cmd(&["PEXPIREAT", "bloom", "1900000000000"]),
            cmd(&["DEL", "gone"]),
        ]
    }

    fn snapshot_recipe() -> Vec<SnapshotEntry> {
        let mut bloom = ScalableBloomFilter::builder(50, 0.01)
            .expansion(2)
            .build()
            .unwrap();
        for i in 0..80 {
            bloom.insert(&format!("b{i}")[..]).unwrap();
        }
        let mut cuckoo = CuckooFilter::redisbloom_builder(64).build().unwrap();
        for i in 0..30 {
            cuckoo.insert(&format!("c{i}")[..]).unwrap();
        }
        vec![
            SnapshotEntry {
                key: Bytes::from_static(b"bloom"),
                expires_at_ms: Some(1_900_000_000_000),
                value: Value::Bloom(bloom),
            },
            SnapshotEntry {
                key: Bytes::from_static(b"cuckoo\x00"),
                expires_at_ms: None,
                value: Value::Cuckoo(cuckoo),
            },
        ]
    }

    fn encode_log(commands: &[Vec<Bytes>]) -> Vec<u8> {
        encode_log_version(commands, 1)
    }

    fn encode_log_version(commands: &[Vec<Bytes>], version: u32) -> Vec<u8> {
        let mut out = aof::log_header_version(GENERATION, version).to_vec();
        for c in commands {
            aof::encode_record(&mut out, c).unwrap();
        }
        out
    }

    fn encode_snapshot(entries: &[SnapshotEntry]) -> Vec<u8> {
        let mut w = SnapshotWriter::new(Vec::new(), HEADER).unwrap();
        for e in entries {
            w.write_entry(&e.key, e.expires_at_ms, &e.value).unwrap();
        }
        w.finish().unwrap()
    }

    fn fixture(name: &str, make: impl FnOnce() -> Vec<u8>) -> Vec<u8> {
        let path = data(name);
        if !path.exists() && std::env::var_os("BLOOMKIT_WRITE_GOLDEN").is_some() {
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(&path, make()).unwrap();
        }
        fs::read(&path).unwrap_or_else(|e| {
            panic!(
                "{}: {e} (write it once with BLOOMKIT_WRITE_GOLDEN=1)",
                path.display()
            )
        })
    }

    /// Every record of a golden log, read strictly.
    fn read_log(bytes: &[u8]) -> (aof::LogScan, Vec<Vec<Bytes>>) {
        let mut seen = Vec::new();
        let scan = aof::scan_log(
            bytes,
            bytes.len() as u64,
            GENERATION,
            Tail::Strict,
            |_, c| {
                seen.push(c);
                Ok(())
            },
        )
        .unwrap();
        (scan, seen)
    }

    #[test]
    fn the_version_1_log_reads_back_and_is_written_identically() {
        let bytes = fixture(LOG, || encode_log(&log_recipe()));
        let (scan, seen) = read_log(&bytes);
        assert_eq!((scan.version, seen), (1, log_recipe()));
        assert_eq!(scan.valid_len, bytes.len() as u64);
        assert_eq!(encode_log(&log_recipe()), bytes);
    }

    /// Version 2 is version 1's layout with another number: the file belongs to a directory
    /// with a manifest.
    #[test]
    fn the_version_2_log_reads_back() {
        let bytes = fixture(LOG_V2, || encode_log_version(&log_recipe(), 2));
        let v1 = fixture(LOG, || encode_log(&log_recipe()));
        assert_eq!(bytes[..8], v1[..8]);
        assert_eq!(bytes[8..12], 2u32.to_le_bytes());
        assert_eq!(bytes[12..], v1[12..], "the same layout, byte for byte");
        let (scan, seen) = read_log(&bytes);
        assert_eq!((scan.version, seen), (2, log_recipe()));
    }

    /// The recipe of the version 3 log: the same commands, the middle three as a transaction.
    fn transaction_recipe(out: &mut Vec<u8>) {
        let commands = log_recipe();
        aof::encode_record(out, &commands[0]).unwrap();
        aof::encode_marker(out, aof::Marker::Multi);
        for c in &commands[1..4] {
            aof::encode_record(out, c).unwrap();
        }
        aof::encode_marker(out, aof::Marker::Exec);
        for c in &commands[4..] {
            aof::encode_record(out, c).unwrap();
        }
    }

    /// Version 3 is version 2's layout, with transactions between `MULTI` and `EXEC`
    /// records, which are not replayed as commands. This build writes it.
    #[test]
    fn the_version_3_log_with_a_transaction_reads_back_and_is_written_identically() {
        let bytes = fixture(LOG_V3, || {
            let mut out = aof::log_header_version(GENERATION, 3).to_vec();
            transaction_recipe(&mut out);
            out
        });
        assert_eq!(bytes[8..12], 3u32.to_le_bytes());
        let (scan, seen) = read_log(&bytes);
        assert_eq!((scan.version, seen), (3, log_recipe()));
        assert_eq!((scan.records, scan.commands), (8, 6));
        // The markers are one-word commands, readable in the file.
        let multi = b"\x0f\x00\x00\x00\xf0\xff\xff\xff*1\r\n$5\r\nMULTI\r\n";
        assert!(bytes.windows(multi.len()).any(|w| w == multi));
        let mut written = aof::log_header(GENERATION).to_vec();
        transaction_recipe(&mut written);
        assert_eq!(written, bytes);
    }

    fn manifest_recipe() -> Manifest {
        Manifest {
            snapshot: Some(SnapshotId {
                generation: GENERATION,
                len: 1234,
                checksum: 0x0123_4567_89ab_cdef,
            }),
            pending: Some(SnapshotId {
                generation: GENERATION + 2,
                len: 99,
                checksum: 0xfedc_ba98_7654_3210,
            }),
            first_log: GENERATION,
            sealed: vec![
                Sealed {
                    len: 24,
                    checksum: 0x1111_2222_3333_4444,
                },
                Sealed {
                    len: 4096,
                    checksum: 0x5555_6666_7777_8888,
                },
            ],
        }
    }

    #[test]
    fn the_version_1_manifest_reads_back_and_is_written_identically() {
        let bytes = fixture(MANIFEST, || manifest_recipe().encode());
        assert_eq!(Manifest::decode(&bytes).unwrap(), manifest_recipe());
        assert_eq!(manifest_recipe().encode(), bytes);
        assert_eq!(bytes.len(), 80 + 2 * 16 + 8);
    }

    #[test]
    fn the_version_1_snapshot_loads_answers_and_is_written_identically() {
        let bytes = fixture(SNAPSHOT, || encode_snapshot(&snapshot_recipe()));
        let snap = read_snapshot(&bytes[..], bytes.len() as u64).unwrap();
        assert_eq!(snap.header, HEADER);
        assert_eq!(snap.entries.len(), 2);
        assert_eq!(snap.entries[0].key, "bloom");
        assert_eq!(snap.entries[0].expires_at_ms, Some(1_900_000_000_000));
        match &snap.entries[0].value {
            Value::Bloom(f) => {
                assert_eq!(f.len(), 80);
                assert!((0..80).all(|i| f.contains(&format!("b{i}")[..])));
            }
            other => panic!("{other:?}"),
        }
        match &snap.entries[1].value {
            Value::Cuckoo(f) => {
                assert_eq!(f.len(), 30);
                assert!((0..30).all(|i| f.contains(&format!("c{i}")[..])));
            }
            other => panic!("{other:?}"),
        }
        // What loads writes back to the same bytes.
        assert_eq!(encode_snapshot(&snap.entries), bytes);
    }

    #[test]
    fn a_directory_holding_the_golden_files_recovers() {
        let snapshot = fixture(SNAPSHOT, || encode_snapshot(&snapshot_recipe()));
        let log = fixture(LOG, || encode_log(&log_recipe()));
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(SNAPSHOT_FILE), &snapshot).unwrap();
        fs::write(log_path(dir.path(), GENERATION), &log).unwrap();
        let (p, mut recovery) = open(dir.path(), FsyncPolicy::No);
        assert!(recovery.warnings().is_empty());
        assert_eq!(recovery.take_entries().len(), 2);
        assert_eq!(replay(&recovery), log_recipe());
        // The directory now has a manifest naming exactly those files: the golden log,
        // version 1, is finished as it is, and a new generation in this build's version
        // takes the writes, so that no older build ever finds a transaction in a file it
        // reads.
        assert_eq!(p.stats().log_generation, GENERATION + 1);
        let m = read_manifest(dir.path()).unwrap().unwrap();
        assert_eq!(
            (m.first_log, m.open_generation()),
            (GENERATION, GENERATION + 1)
        );
        assert_eq!(m.snapshot.map(|s| s.generation), Some(GENERATION));
        assert_eq!(fs::read(log_path(dir.path(), GENERATION)).unwrap(), log);
        let next = fs::read(log_path(dir.path(), GENERATION + 1)).unwrap();
        assert_eq!(next, aof::log_header_version(GENERATION + 1, 3));
        p.append(&[cmd(&["BF.ADD", "bloom", "later"])]).unwrap();
        drop(p);
        // And it loads again, checked against the manifest, to the same answers.
        let (_p, mut recovery) = open(dir.path(), FsyncPolicy::No);
        assert!(recovery.warnings().is_empty(), "{:?}", recovery.warnings());
        let entries = recovery.take_entries();
        assert_eq!(entries.len(), 2);
        assert_eq!(
            entries,
            read_snapshot(&snapshot[..], snapshot.len() as u64)
                .unwrap()
                .entries
        );
        let mut expected = log_recipe();
        expected.push(cmd(&["BF.ADD", "bloom", "later"]));
        assert_eq!(replay(&recovery), expected);
    }
}
