//! The persistence readers on untrusted bytes: any file may be handed to them as the last
//! log, an older log, the snapshot, the manifest or `SYNCED`. They must return (records, a torn tail, or an error),
//! never panic, never allocate what the input merely claims; what they accept must be
//! self-consistent.
//!
//! Run: `cargo +nightly fuzz run aof_replay` from the repository root.
#![no_main]

use bloomkit_server::persist::log::format::{self as aof, Tail, LOG_HEADER_LEN};
use bloomkit_server::persist::log::synced::SyncedMark;
use bloomkit_server::persist::manifest::Manifest;
use bloomkit_server::persist::snapshot::{self, SnapshotWriter};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // Take the generation from where the header keeps it, so the fuzzer can reach records.
    let generation = data
        .get(16..24)
        .and_then(|b| b.try_into().ok())
        .map_or(1, u64::from_le_bytes);
    let len = data.len() as u64;

    for tail in [Tail::MayBeTorn, Tail::Strict] {
        let mut commands = Vec::new();
        let scanned = aof::scan_log(data, len, generation, tail, |_, command| {
            assert!(!command.is_empty(), "a record always holds a command name");
            commands.push(command);
            Ok(())
        });
        let Ok(scan) = scanned else { continue };
        assert_eq!(scan.records, commands.len() as u64);
        assert!(scan.valid_len <= len);
        if tail == Tail::Strict {
            assert!(scan.torn.is_none());
            assert_eq!(scan.valid_len, len);
        }
        // What recovery keeps (the file cut to `valid_len`) reads back strictly, identically,
        // and re-encoding its commands gives back its bytes.
        if scan.valid_len >= LOG_HEADER_LEN as u64 {
            let kept = &data[..scan.valid_len as usize];
            let mut again = Vec::new();
            aof::scan_log(kept, scan.valid_len, generation, Tail::Strict, |_, c| {
                again.push(c);
                Ok(())
            })
            .expect("the kept prefix must read strictly");
            assert_eq!(again, commands);
            let mut encoded = aof::log_header_version(generation, scan.version).to_vec();
            for c in &commands {
                aof::encode_record(&mut encoded, c).expect("a read command re-encodes");
            }
            assert_eq!(encoded, kept);
        }
    }

    if let Ok(snap) = snapshot::read_snapshot(data, len) {
        // What loads is exactly what was stored: it writes back to the same bytes.
        let mut w = SnapshotWriter::new(Vec::new(), snap.header).expect("in memory");
        for e in &snap.entries {
            w.write_entry(&e.key, e.expires_at_ms, &e.value)
                .expect("in memory");
        }
        assert_eq!(w.finish().expect("in memory"), data);
    }

    // A manifest that parses is exactly what this build writes for what it says.
    if let Ok(manifest) = Manifest::decode(data) {
        assert_eq!(manifest.encode(), data);
        assert!(manifest.open_generation() >= manifest.first_log);
    }
    if let Some(mark) = SyncedMark::decode(data) {
        assert_eq!(mark.encode()[..], data[..]);
    }
});
