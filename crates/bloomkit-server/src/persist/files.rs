//! The names of the data directory's files: the one place they are written.
//!
//! | name | written by | what it holds |
//! |---|---|---|
//! | `LOCK` | `dir.rs` | the running server's pid; `flock`ed while it uses the directory |
//! | `MANIFEST` | `manifest.rs` | which of the files below must be there, and what each finished one holds |
//! | `MANIFEST.tmp` | `manifest.rs` | a manifest being written, renamed over `MANIFEST` |
//! | `SYNCED` | `log/synced.rs` | how much of the log generation being written was last fsynced |
//! | `appendonly.<g>.aof` | `log/` | log generation `g` (1, 2, 3... in decimal, no leading zero) |
//! | `dump.bks` | `snapshot/save.rs` | the snapshot, naming the generation replay starts at |
//! | `dump.<g>.tmp` | `snapshot/save.rs` | a snapshot being written, renamed over `dump.bks` |
//!
//! Anything else in the directory is not the server's and is left alone.

/// The lock file's name.
pub const LOCK_FILE: &str = "LOCK";

/// The manifest's file name.
pub const MANIFEST_FILE: &str = "MANIFEST";

/// The manifest being written, renamed over [`MANIFEST_FILE`] once complete.
pub const MANIFEST_TEMP_FILE: &str = "MANIFEST.tmp";

/// The name of the file that says how much of the log was last fsynced.
pub const SYNCED_FILE: &str = "SYNCED";

/// The snapshot's file name.
pub const SNAPSHOT_FILE: &str = "dump.bks";

const LOG_PREFIX: &str = "appendonly.";
const LOG_SUFFIX: &str = ".aof";
const TEMP_SNAPSHOT_PREFIX: &str = "dump.";
const TEMP_SNAPSHOT_SUFFIX: &str = ".tmp";

/// The file name of log generation `generation`.
pub fn log_file_name(generation: u64) -> String {
    format!("{LOG_PREFIX}{generation}{LOG_SUFFIX}")
}

/// The file name of a snapshot being written that will start replay at `generation`.
pub fn temp_snapshot_name(generation: u64) -> String {
    format!("{TEMP_SNAPSHOT_PREFIX}{generation}{TEMP_SNAPSHOT_SUFFIX}")
}

/// One of the data directory's files, known by its name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DataFile {
    /// [`LOCK_FILE`].
    Lock,
    /// [`MANIFEST_FILE`].
    Manifest,
    /// [`MANIFEST_TEMP_FILE`].
    ManifestTemp,
    /// [`SYNCED_FILE`].
    Synced,
    /// [`SNAPSHOT_FILE`].
    Snapshot,
    /// A log generation ([`log_file_name`]).
    Log(u64),
    /// A snapshot being written ([`temp_snapshot_name`]); `None` for a name of that shape
    /// whose generation is not canonical, which is still a leftover to remove.
    TempSnapshot(Option<u64>),
}

impl DataFile {
    /// The file a name in the directory is, or `None` for a name that is not the server's.
    pub fn parse(name: &str) -> Option<DataFile> {
        Some(match name {
            LOCK_FILE => DataFile::Lock,
            MANIFEST_FILE => DataFile::Manifest,
            MANIFEST_TEMP_FILE => DataFile::ManifestTemp,
            SYNCED_FILE => DataFile::Synced,
            SNAPSHOT_FILE => DataFile::Snapshot,
            _ => {
                if let Some(digits) = name
                    .strip_prefix(LOG_PREFIX)
                    .and_then(|rest| rest.strip_suffix(LOG_SUFFIX))
                {
                    return parse_generation(digits).map(DataFile::Log);
                }
                let digits = name
                    .strip_prefix(TEMP_SNAPSHOT_PREFIX)?
                    .strip_suffix(TEMP_SNAPSHOT_SUFFIX)?;
                DataFile::TempSnapshot(parse_generation(digits))
            }
        })
    }
}

/// A canonical decimal generation (no sign, no leading zero, at least 1).
fn parse_generation(digits: &str) -> Option<u64> {
    let g: u64 = digits.parse().ok()?;
    (g >= 1 && g.to_string() == digits).then_some(g)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generations_parse_only_in_canonical_form() {
        assert_eq!(parse_generation("1"), Some(1));
        assert_eq!(parse_generation("42"), Some(42));
        for bad in ["0", "01", "+1", "", "x", "18446744073709551616"] {
            assert_eq!(parse_generation(bad), None, "{bad}");
        }
    }

    #[test]
    fn every_name_parses_back_to_its_file() {
        for file in [
            DataFile::Lock,
            DataFile::Manifest,
            DataFile::ManifestTemp,
            DataFile::Synced,
            DataFile::Snapshot,
        ] {
            let name = match file {
                DataFile::Lock => LOCK_FILE,
                DataFile::Manifest => MANIFEST_FILE,
                DataFile::ManifestTemp => MANIFEST_TEMP_FILE,
                DataFile::Synced => SYNCED_FILE,
                _ => SNAPSHOT_FILE,
            };
            assert_eq!(DataFile::parse(name), Some(file));
        }
        assert_eq!(DataFile::parse(&log_file_name(12)), Some(DataFile::Log(12)));
        assert_eq!(
            DataFile::parse(&temp_snapshot_name(3)),
            Some(DataFile::TempSnapshot(Some(3)))
        );
        assert_eq!(
            DataFile::parse("dump.x.tmp"),
            Some(DataFile::TempSnapshot(None))
        );
        assert_eq!(DataFile::parse("appendonly.02.aof"), None);
        assert_eq!(DataFile::parse("notes.txt"), None);
    }
}
