//! The append-only log's format: a file header, then records; and the reader that tells a
//! torn tail (a crash in the middle of a write) from corruption.
//!
//! The byte-by-byte layout is in `docs/PERSISTENCE.md`. In short:
//!
//! ```text
//! file   = header record*
//! header = "BKITLOG\n" | version u32 (1, 2 or 3) | reserved u32 = 0 | generation u64 (24 bytes)
//! record = len u32 | !len u32 | payload (len bytes) | XXH3-64 of the bytes before it u64
//! payload = the command as a RESP array of bulk strings: *2\r\n$6\r\nBF.ADD\r\n...
//! ```
//!
//! From version 3 on, a transaction's records stand between a record of the one-word
//! command `MULTI` and one of `EXEC`, as in Redis's AOF: they are replayed together, and a
//! log that ends after a `MULTI` without its `EXEC` (a crash in the middle of an `EXEC`) is
//! cut back to before the `MULTI`, as a torn tail. Markers are not handed to the caller.
//!
//! Every integer is little-endian. The payload is plain RESP so that `strings` or `less` on a
//! log shows the commands, and so that a log can be fed to `redis-cli --pipe` by hand.
//!
//! # Why two checks per record
//!
//! The length's complement (`!len`) is checked before the length is believed. Without it, a
//! flipped bit in the length of a record in the *middle* of the log could make that record
//! appear to run past the end of the file, which is exactly what a torn tail looks like:
//! everything after it would be dropped as "torn". With it, a damaged length is recognised
//! as damage (an error naming the offset), and only a record whose length is intact but whose
//! bytes stop early is a torn tail. The XXH3-64 checksum then covers the whole record.

use std::io::{self, Read};

use bytes::Bytes;
use xxhash_rust::xxh3::{xxh3_64, Xxh3Default};

use crate::resp;

/// The first 8 bytes of every log file.
pub const LOG_MAGIC: [u8; 8] = *b"BKITLOG\n";

/// The log format version this build writes: 3, a log that may hold transactions (`MULTI`
/// and `EXEC` records around their commands). Its bytes are laid out exactly as version 2's;
/// the number makes a build that would replay part of a transaction, or stop at its `MULTI`
/// as an unknown command, refuse the file with a message instead.
pub const LOG_VERSION: u32 = 3;

/// The version of logs in a data directory with a `MANIFEST`, before transactions. Still
/// read; a generation of it being written at an upgrade is finished as it is, and the next
/// generation (version 3) takes the writes.
pub const LOG_VERSION_V2: u32 = 2;

/// The version of logs written before data directories had a manifest. Still read, and
/// still appended to when it is the generation being written at an upgrade.
pub const LOG_VERSION_V1: u32 = 1;

/// Bytes in a log file's header.
pub const LOG_HEADER_LEN: usize = 24;

/// Bytes a record adds around its payload: length, its complement, checksum.
pub const RECORD_OVERHEAD: usize = 16;

/// Bytes of a record's header (length and its complement), before the payload.
const RECORD_HEADER_LEN: usize = 8;

/// The records that bracket a transaction (log version 3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Marker {
    /// Before a transaction's first record: the command `MULTI`.
    Multi,
    /// After its last: the command `EXEC`.
    Exec,
}

impl Marker {
    /// The one-word command the marker's record holds.
    pub fn word(self) -> &'static [u8] {
        match self {
            Marker::Multi => b"MULTI",
            Marker::Exec => b"EXEC",
        }
    }

    /// The marker a logged command is, if it is one.
    fn of(command: &[Bytes]) -> Option<Marker> {
        match command {
            [word] if word[..] == *b"MULTI" => Some(Marker::Multi),
            [word] if word[..] == *b"EXEC" => Some(Marker::Exec),
            _ => None,
        }
    }
}

/// Appends `marker`'s record to `out`.
pub fn encode_marker(out: &mut Vec<u8>, marker: Marker) {
    // A one-word command always encodes: it is neither empty nor over 4 GiB.
    let _ = encode_record(out, &[Bytes::from_static(marker.word())]);
}

/// The header a log file of `generation` starts with, in the version this build writes.
pub fn log_header(generation: u64) -> [u8; LOG_HEADER_LEN] {
    log_header_version(generation, LOG_VERSION)
}

/// The header of a log file of `generation` in format `version` (for golden files and
/// tests of older versions).
pub fn log_header_version(generation: u64, version: u32) -> [u8; LOG_HEADER_LEN] {
    let mut h = [0u8; LOG_HEADER_LEN];
    h[0..8].copy_from_slice(&LOG_MAGIC);
    h[8..12].copy_from_slice(&version.to_le_bytes());
    // 12..16: reserved, zero.
    h[16..24].copy_from_slice(&generation.to_le_bytes());
    h
}

/// Appends `command` to `out` as one record.
///
/// # Errors
///
/// `InvalidInput` if the command is empty (a record always holds a command name) or if its
/// RESP form exceeds 4 GiB (a record's length is a `u32`); nothing is appended then.
pub fn encode_record(out: &mut Vec<u8>, command: &[Bytes]) -> io::Result<()> {
    encode_words(out, command.len(), command.iter().map(|word| &word[..]))
}

/// Appends the command of `count` words `words` (name first) to `out` as one record, as
/// [`encode_record`] does: for a command whose words are not one list (a command layer's
/// [`Record`](bloomkit_commands::Record)).
///
/// # Errors
///
/// As [`encode_record`]; `InvalidInput` also if `words` does not give `count` words.
pub fn encode_words<'a>(
    out: &mut Vec<u8>,
    count: usize,
    words: impl Iterator<Item = &'a [u8]> + Clone,
) -> io::Result<()> {
    if count == 0 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "cannot log an empty command",
        ));
    }
    // One reservation for the whole record (a `$<len>\r\n...\r\n` costs at most 25 bytes
    // beside its argument), so the pieces below are copies, never reallocations; counted in
    // the same pass, the words are checked against `count`.
    let (words_seen, payload_bound) = words
        .clone()
        .fold((0, 25), |(n, bound), word| (n + 1, bound + word.len() + 25));
    if words_seen != count {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "a command's word count is not its number of words",
        ));
    }
    let start = out.len();
    out.reserve(RECORD_OVERHEAD + payload_bound);
    out.extend_from_slice(&[0u8; RECORD_HEADER_LEN]);
    resp::encode::array(out, count, words);
    let payload_len = out.len() - start - RECORD_HEADER_LEN;
    let Ok(len) = u32::try_from(payload_len) else {
        out.truncate(start);
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("a command of {payload_len} bytes is too large to log (the limit is 4 GiB)"),
        ));
    };
    out[start..start + 4].copy_from_slice(&len.to_le_bytes());
    out[start + 4..start + 8].copy_from_slice(&(!len).to_le_bytes());
    let checksum = xxh3_64(&out[start..]);
    out.extend_from_slice(&checksum.to_le_bytes());
    Ok(())
}

/// Parses a record's payload: exactly one RESP array of bulk strings, nothing after it
/// ([`resp::decode::array`]). The arguments are slices of `payload` (no copies).
pub fn parse_command(payload: &Bytes) -> Result<Vec<Bytes>, String> {
    resp::decode::array(payload)
}

/// What a scan found in one log file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogScan {
    /// The header's format version ([`LOG_VERSION_V1`] to [`LOG_VERSION`]); 0 if even the
    /// header is torn.
    pub version: u32,
    /// Complete, checksummed records in the first [`LogScan::valid_len`] bytes, markers
    /// included: what the log's record count starts from.
    pub records: u64,
    /// The commands among them (records but `MULTI`/`EXEC` markers): those replayed.
    pub commands: u64,
    /// Bytes from the start of the file to the end of the last good record outside an
    /// unfinished transaction: where the file must be truncated if [`LogScan::torn`] is
    /// set. 0 if even the file header is torn.
    pub valid_len: u64,
    /// Bytes to the end of the last complete record, an unfinished transaction's included:
    /// what may have been on disk (fsynced) before a crash; at least `valid_len`.
    pub intact_len: u64,
    /// Set when the file ends in a torn record (only ever for the last log).
    pub torn: Option<TornTail>,
    /// XXH3-64 of the file's first [`LogScan::valid_len`] bytes: what a data directory's
    /// manifest records for a finished generation.
    pub checksum: u64,
}

/// A torn tail: what a crash in the middle of a write leaves at the end of the last log
/// (one record cut short), or in the middle of an `EXEC` (a transaction without its `EXEC`
/// record, and perhaps a record cut short after it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TornTail {
    /// Where the torn bytes start (= [`LogScan::valid_len`]).
    pub offset: u64,
    /// How many bytes follow the last good record.
    pub bytes: u64,
    /// Complete records dropped with them: an unfinished transaction's (its `MULTI`
    /// included); 0 for a lone torn record.
    pub records: u64,
    /// Whether the bytes end in a record cut short (or damaged).
    pub incomplete: bool,
    /// What was wrong with them.
    pub reason: String,
}

/// Why a scan stopped.
#[derive(Debug)]
pub enum ScanError {
    /// The file is damaged at `offset`: not a torn tail, so nothing may be dropped.
    Corrupt {
        /// Byte offset of the damaged header or record.
        offset: u64,
        /// What is wrong, for a human.
        reason: String,
    },
    /// The callback refused the command of the record at `offset`.
    Rejected {
        /// Byte offset of the record.
        offset: u64,
        /// The command, shortened for a message.
        command: String,
        /// The callback's message.
        message: String,
    },
    /// Reading failed.
    Io(io::Error),
}

impl From<io::Error> for ScanError {
    fn from(e: io::Error) -> Self {
        ScanError::Io(e)
    }
}

/// Whether the scanned file may end in a torn record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tail {
    /// The last log: a torn tail is reported in [`LogScan::torn`], not as an error.
    MayBeTorn,
    /// Any other log, or a replay of bytes already validated: everything must be intact.
    Strict,
}

/// Reads every record of a log file, calling `on_record(offset, command)` for each.
///
/// `file_len` is the file's size: no buffer larger than the bytes it leaves is ever
/// allocated, whatever a record claims. `generation` is the generation the file's name
/// gives, checked against its header.
///
/// # Torn tails
///
/// With [`Tail::MayBeTorn`], a failure at offset `o` is a torn tail, reported in
/// [`LogScan::torn`] with everything from `o` on to be truncated, when no complete record
/// can be hiding after `o`:
///
/// * fewer bytes remain than a record header; or
/// * the record's header is intact (`!len` matches) but the file ends before the record
///   does (the write was cut short); or
/// * the record is complete but fails its checksum, and every byte after it is zero (the
///   file's size reached the disk but its data did not); or
/// * the record's header is damaged, and every byte after the header is zero.
///
/// Anything else is [`ScanError::Corrupt`]: a record that follows a bad one proves that the
/// bad one was not the last write.
///
/// # Errors
///
/// [`ScanError::Corrupt`] with the offset of the first bad byte structure,
/// [`ScanError::Rejected`] if `on_record` returns an error, [`ScanError::Io`] if reading
/// fails.
pub fn scan_log<R: Read>(
    reader: R,
    file_len: u64,
    generation: u64,
    tail: Tail,
    on_record: impl FnMut(u64, Vec<Bytes>) -> Result<(), String>,
) -> Result<LogScan, ScanError> {
    scan_log_hashed(reader, file_len, generation, tail, on_record).map(|(scan, _)| scan)
}

/// [`scan_log`], also handing back the checksum's running state over the valid bytes, so
/// that appends to the file can carry it on.
pub(crate) fn scan_log_hashed<R: Read>(
    mut reader: R,
    file_len: u64,
    generation: u64,
    tail: Tail,
    mut on_record: impl FnMut(u64, Vec<Bytes>) -> Result<(), String>,
) -> Result<(LogScan, Xxh3Default), ScanError> {
    let may_be_torn = tail == Tail::MayBeTorn;
    let corrupt = |offset: u64, reason: String| Err(ScanError::Corrupt { offset, reason });
    let mut hasher = Xxh3Default::new();
    let empty = |torn: Option<TornTail>| {
        let hasher = Xxh3Default::new();
        let scan = LogScan {
            version: 0,
            records: 0,
            commands: 0,
            valid_len: 0,
            intact_len: 0,
            torn,
            checksum: hasher.digest(),
        };
        Ok((scan, hasher))
    };

    // The file header, in either version.
    let expected = [
        log_header_version(generation, LOG_VERSION_V1),
        log_header_version(generation, LOG_VERSION_V2),
        log_header_version(generation, LOG_VERSION),
    ];
    let mut header = [0u8; LOG_HEADER_LEN];
    let n = read_full(&mut reader, &mut header)?;
    let present = &header[..n];
    if n < LOG_HEADER_LEN {
        // A crash right after the file was created: a prefix of the header (or zeros).
        let prefix = expected.iter().any(|h| present == &h[..n]);
        if may_be_torn && (prefix || all_zero(present)) {
            return empty((n > 0).then(|| TornTail {
                offset: 0,
                bytes: n as u64,
                records: 0,
                incomplete: true,
                reason: "the file header is cut short".to_string(),
            }));
        }
        return corrupt(
            0,
            format!("the file is {n} bytes long, shorter than its {LOG_HEADER_LEN}-byte header"),
        );
    }
    let Some(version) = expected
        .iter()
        .find(|h| **h == header)
        .map(|h| u32::from_le_bytes([h[8], h[9], h[10], h[11]]))
    else {
        if may_be_torn && all_zero(&header) && rest_is_zero(&mut reader)? {
            return empty(Some(TornTail {
                offset: 0,
                bytes: file_len,
                records: 0,
                incomplete: true,
                reason: "the file holds only zero bytes".to_string(),
            }));
        }
        return corrupt(0, describe_bad_header(&header, generation));
    };
    hasher.update(&header);

    let mut offset = LOG_HEADER_LEN as u64;
    let mut records = 0u64;
    let mut commands = 0u64;
    // The transaction whose `EXEC` record has not come yet: where its `MULTI` starts, and
    // what the scan had counted and checksummed before it.
    let mut open: Option<(u64, u64, u64, Xxh3Default)> = None;
    let torn = |offset: u64, reason: &str| TornTail {
        offset,
        bytes: file_len.saturating_sub(offset),
        records: 0,
        incomplete: true,
        reason: reason.to_string(),
    };
    loop {
        let mut rh = [0u8; RECORD_HEADER_LEN];
        let n = read_full(&mut reader, &mut rh)?;
        let done = |t: Option<TornTail>, hasher: Xxh3Default| {
            let Some((start, before, commands_before, at_start)) = open.clone() else {
                let scan = LogScan {
                    version,
                    records,
                    commands,
                    valid_len: offset,
                    intact_len: offset,
                    torn: t,
                    checksum: hasher.digest(),
                };
                return Ok((scan, hasher));
            };
            if !may_be_torn {
                return Err(ScanError::Corrupt {
                    offset: start,
                    reason: "the file ends inside a transaction: the MULTI record here has no \
                             EXEC record after it"
                        .to_string(),
                });
            }
            // A crash in the middle of an `EXEC`: the whole transaction goes, as a torn
            // tail, so that none of it is replayed.
            let reason = match &t {
                None => "its EXEC record never reached the log".to_string(),
                Some(t) => format!("its EXEC record never reached the log; then {}", t.reason),
            };
            let tail = TornTail {
                offset: start,
                bytes: file_len.saturating_sub(start),
                records: records - before,
                incomplete: t.is_some(),
                reason,
            };
            let scan = LogScan {
                version,
                records: before,
                commands: commands_before,
                valid_len: start,
                intact_len: offset,
                torn: Some(tail),
                checksum: at_start.digest(),
            };
            Ok((scan, at_start))
        };
        if n == 0 {
            return done(None, hasher);
        }
        if n < RECORD_HEADER_LEN {
            if may_be_torn {
                return done(Some(torn(offset, "a record header is cut short")), hasher);
            }
            return corrupt(
                offset,
                format!("the file ends {n} bytes into a record header"),
            );
        }
        let len = u32::from_le_bytes([rh[0], rh[1], rh[2], rh[3]]);
        let check = u32::from_le_bytes([rh[4], rh[5], rh[6], rh[7]]);
        if check != !len || len == 0 {
            if may_be_torn && rest_is_zero(&mut reader)? {
                let t = torn(offset, "a record header is damaged, zeros follow");
                return done(Some(t), hasher);
            }
            return corrupt(
                offset,
                format!(
                    "damaged record header (length {len:#010x}, length check {check:#010x}, \
                     expected {:#010x})",
                    !len
                ),
            );
        }
        let left = file_len.saturating_sub(offset + RECORD_HEADER_LEN as u64);
        let body_len = u64::from(len) + 8;
        if body_len > left {
            if may_be_torn {
                return done(Some(torn(offset, "the last record is cut short")), hasher);
            }
            return corrupt(
                offset,
                format!(
                    "a record of {len} bytes runs past the end of the file ({left} bytes left)"
                ),
            );
        }
        // `body_len <= left <= file_len`: bounded by bytes that exist.
        let mut body = vec![0u8; body_len as usize];
        let got = read_full(&mut reader, &mut body)?;
        if got < body.len() {
            // The file shrank under us, or `file_len` was too large: same as cut short.
            if may_be_torn {
                return done(Some(torn(offset, "the last record is cut short")), hasher);
            }
            return corrupt(offset, "the file ends inside a record".to_string());
        }
        let (payload, stored) = body.split_at(len as usize);
        let stored = u64::from_le_bytes(stored.try_into().unwrap_or([0; 8]));
        let computed = {
            let mut h = Xxh3Default::new();
            h.update(&rh);
            h.update(payload);
            h.digest()
        };
        if stored != computed {
            if may_be_torn && rest_is_zero(&mut reader)? {
                let t = torn(offset, "the last record fails its checksum");
                return done(Some(t), hasher);
            }
            return corrupt(
                offset,
                format!(
                    "record checksum mismatch (stored {stored:#018x}, computed {computed:#018x})"
                ),
            );
        }
        body.truncate(len as usize);
        let payload = Bytes::from(body);
        let command = parse_command(&payload).map_err(|e| ScanError::Corrupt {
            offset,
            reason: format!("the record passes its checksum but is not a logged command: {e}"),
        })?;
        let marker = if version >= LOG_VERSION {
            Marker::of(&command)
        } else {
            None
        };
        match (marker, &open) {
            (Some(Marker::Multi), Some(_)) => {
                return corrupt(
                    offset,
                    "a MULTI record inside a transaction (the one before it has no EXEC record)"
                        .to_string(),
                )
            }
            (Some(Marker::Exec), None) => {
                return corrupt(
                    offset,
                    "an EXEC record without a MULTI record before it".to_string(),
                )
            }
            (Some(Marker::Multi), None) => open = Some((offset, records, commands, hasher.clone())),
            (Some(Marker::Exec), Some(_)) => open = None,
            (None, _) => {}
        }
        let summary = if let Some(name) = command.first() {
            format!(
                "{} ({} arguments)",
                String::from_utf8_lossy(&name[..name.len().min(64)]),
                command.len() - 1
            )
        } else {
            String::new()
        };
        if marker.is_none() {
            on_record(offset, command).map_err(|message| ScanError::Rejected {
                offset,
                command: summary,
                message,
            })?;
            commands += 1;
        }
        hasher.update(&rh);
        hasher.update(&payload);
        hasher.update(&stored.to_le_bytes());
        records += 1;
        offset += RECORD_HEADER_LEN as u64 + body_len;
    }
}

/// Says which field of a log header is wrong, and what to do about it.
fn describe_bad_header(header: &[u8; LOG_HEADER_LEN], generation: u64) -> String {
    if header[0..8] != LOG_MAGIC {
        return format!(
            "not a bloomkit append-only log (its first bytes are {:?}, expected {:?})",
            String::from_utf8_lossy(&header[0..8]),
            String::from_utf8_lossy(&LOG_MAGIC)
        );
    }
    let version = u32::from_le_bytes([header[8], header[9], header[10], header[11]]);
    if !(LOG_VERSION_V1..=LOG_VERSION).contains(&version) {
        return format!(
            "log format version {version}, but this build reads versions {LOG_VERSION_V1} to \
             {LOG_VERSION}: run the bloomkit release that wrote it"
        );
    }
    if header[12..16] != [0; 4] {
        return "the header's reserved bytes are not zero".to_string();
    }
    let found = u64::from_le_bytes(header[16..24].try_into().unwrap_or([0; 8]));
    format!(
        "the header says generation {found} but the file name says {generation}: \
         was the file renamed?"
    )
}

/// Fills `buf` as far as the reader has bytes; returns how many it read (less than
/// `buf.len()` only at end of file).
pub(crate) fn read_full<R: Read>(reader: &mut R, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match reader.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

fn all_zero(bytes: &[u8]) -> bool {
    bytes.iter().all(|&b| b == 0)
}

/// Whether every byte left in the reader is zero (consumes them).
fn rest_is_zero<R: Read>(reader: &mut R) -> io::Result<bool> {
    let mut buf = [0u8; 8192];
    loop {
        let n = read_full(reader, &mut buf)?;
        if !all_zero(&buf[..n]) {
            return Ok(false);
        }
        if n < buf.len() {
            return Ok(true);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmd(args: &[&str]) -> Vec<Bytes> {
        args.iter()
            .map(|a| Bytes::copy_from_slice(a.as_bytes()))
            .collect()
    }

    fn log_of(commands: &[Vec<Bytes>]) -> (Vec<u8>, Vec<u64>) {
        let mut out = log_header(7).to_vec();
        let mut starts = Vec::new();
        for c in commands {
            starts.push(out.len() as u64);
            encode_record(&mut out, c).unwrap();
        }
        (out, starts)
    }

    fn scan(bytes: &[u8], tail: Tail) -> Result<(LogScan, Vec<Vec<Bytes>>), ScanError> {
        let mut seen = Vec::new();
        let s = scan_log(bytes, bytes.len() as u64, 7, tail, |_, c| {
            seen.push(c);
            Ok(())
        })?;
        Ok((s, seen))
    }

    #[test]
    fn a_record_is_readable_resp_between_its_length_and_checksum() {
        let mut out = Vec::new();
        encode_record(&mut out, &cmd(&["BF.ADD", "k", "item"])).unwrap();
        let payload = b"*3\r\n$6\r\nBF.ADD\r\n$1\r\nk\r\n$4\r\nitem\r\n";
        assert_eq!(&out[0..4], &(payload.len() as u32).to_le_bytes());
        assert_eq!(&out[4..8], &(!(payload.len() as u32)).to_le_bytes());
        assert_eq!(&out[8..8 + payload.len()], payload);
        let sum = xxh3_64(&out[..8 + payload.len()]);
        assert_eq!(&out[8 + payload.len()..], &sum.to_le_bytes());
    }

    #[test]
    fn records_round_trip_including_binary_and_empty_arguments() {
        let commands = vec![
            cmd(&["BF.RESERVE", "k", "0.01", "100"]),
            vec![
                Bytes::from_static(b"BF.ADD"),
                Bytes::from_static(b"\r\n\0\xff"),
                Bytes::new(),
            ],
        ];
        let (bytes, _) = log_of(&commands);
        let (s, seen) = scan(&bytes, Tail::Strict).unwrap();
        assert_eq!(seen, commands);
        assert_eq!(s.records, 2);
        assert_eq!(s.valid_len, bytes.len() as u64);
        assert_eq!(s.torn, None);
    }

    #[test]
    fn the_scan_checksums_exactly_the_bytes_it_keeps() {
        let commands: Vec<_> = (0..3)
            .map(|i| cmd(&["BF.ADD", "k", &i.to_string()]))
            .collect();
        let (bytes, starts) = log_of(&commands);
        let (s, _) = scan(&bytes, Tail::Strict).unwrap();
        assert_eq!(s.checksum, xxh3_64(&bytes));
        // A torn tail is not part of it: the checksum is of what the file is cut back to.
        let cut = bytes.len() - 3;
        let (s, _) = scan(&bytes[..cut], Tail::MayBeTorn).unwrap();
        assert_eq!(s.valid_len, starts[2]);
        assert_eq!(s.checksum, xxh3_64(&bytes[..starts[2] as usize]));
    }

    #[test]
    fn empty_command_is_refused() {
        let mut out = Vec::new();
        assert!(encode_record(&mut out, &[]).is_err());
        assert!(out.is_empty());
    }

    /// A command's words encoded where they lie make the record their list makes; a count
    /// that is not the words' is refused, and nothing is appended.
    #[test]
    fn words_encode_as_their_list_does() {
        let words = cmd(&["BF.MADD", "k", "a\0b", ""]);
        let mut listed = Vec::new();
        encode_record(&mut listed, &words).unwrap();
        let mut lying = Vec::new();
        encode_words(&mut lying, 4, words.iter().map(|w| &w[..])).unwrap();
        assert_eq!(listed, lying);
        for wrong in [0, 3, 5] {
            let mut out = Vec::new();
            assert!(encode_words(&mut out, wrong, words.iter().map(|w| &w[..])).is_err());
            assert!(out.is_empty());
        }
    }

    #[test]
    fn payload_parser_rejects_malformed_resp() {
        for bad in [
            &b"*0\r\n"[..],
            b"*1\r\n$3\r\nab\r\n",
            b"*1\r\n$01\r\na\r\n",
            b"*1\r\n$1\r\na\r\nx",
            b"*2\r\n$1\r\na\r\n",
            b"*99999999999999999999\r\n",
            b"+OK\r\n",
            b"*1\r\n$-1\r\n",
        ] {
            assert!(
                parse_command(&Bytes::copy_from_slice(bad)).is_err(),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn huge_claimed_count_allocates_nothing() {
        let payload = Bytes::from_static(b"*9999999999999\r\n$1\r\na\r\n");
        assert!(parse_command(&payload).is_err());
    }

    #[test]
    fn truncation_anywhere_in_the_last_log_keeps_every_complete_record() {
        let commands: Vec<_> = (0..5)
            .map(|i| cmd(&["CF.ADD", "key", &format!("item-{i}")]))
            .collect();
        let (bytes, starts) = log_of(&commands);
        for cut in 0..bytes.len() {
            let (s, seen) = scan(&bytes[..cut], Tail::MayBeTorn).unwrap();
            let complete = starts
                .iter()
                .enumerate()
                .filter(|&(i, _)| {
                    let end = starts.get(i + 1).copied().unwrap_or(bytes.len() as u64);
                    end as usize <= cut
                })
                .count();
            assert_eq!(seen, commands[..complete], "cut at {cut}");
            let boundary = cut == 0 || cut == LOG_HEADER_LEN || starts.contains(&(cut as u64));
            assert_eq!(s.torn.is_none(), boundary, "cut at {cut}");
            // The same bytes as a non-last log are an error unless the cut is a boundary.
            let strict = scan(&bytes[..cut], Tail::Strict);
            assert_eq!(
                strict.is_ok(),
                cut >= LOG_HEADER_LEN && boundary,
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn zeroed_tail_after_good_records_is_torn() {
        let commands = vec![cmd(&["BF.ADD", "a", "1"]), cmd(&["BF.ADD", "a", "2"])];
        let (mut bytes, starts) = log_of(&commands);
        let second = starts[1] as usize;
        for b in &mut bytes[second..] {
            *b = 0;
        }
        bytes.extend_from_slice(&[0u8; 4096]);
        let (s, seen) = scan(&bytes, Tail::MayBeTorn).unwrap();
        assert_eq!(seen, commands[..1]);
        assert_eq!(s.valid_len, second as u64);
        assert!(s.torn.is_some());
    }

    #[test]
    fn a_flipped_length_in_the_middle_is_corruption_not_a_torn_tail() {
        let commands: Vec<_> = (0..3)
            .map(|i| cmd(&["BF.ADD", "k", &i.to_string()]))
            .collect();
        let (mut bytes, starts) = log_of(&commands);
        // Make the first record claim far more bytes than the file has.
        bytes[starts[0] as usize + 3] ^= 0x40;
        match scan(&bytes, Tail::MayBeTorn) {
            Err(ScanError::Corrupt { offset, .. }) => assert_eq!(offset, starts[0]),
            other => panic!("expected corruption, got {other:?}"),
        }
    }

    #[test]
    fn every_single_byte_flip_is_an_error_or_drops_only_the_last_record() {
        let commands: Vec<_> = (0..4)
            .map(|i| cmd(&["BF.MADD", "key", &format!("x{i}"), "y"]))
            .collect();
        let (bytes, starts) = log_of(&commands);
        let last = *starts.last().unwrap() as usize;
        for pos in 0..bytes.len() {
            for flip in [0x01u8, 0x80, 0xff] {
                let mut damaged = bytes.clone();
                damaged[pos] ^= flip;
                match scan(&damaged, Tail::MayBeTorn) {
                    Ok((s, seen)) if (8..12).contains(&pos) => {
                        // The version turned into another this build reads, all of which
                        // lay records out alike: every record reads back.
                        assert!((LOG_VERSION_V1..=LOG_VERSION).contains(&s.version));
                        assert_eq!(seen, commands, "flip at {pos}");
                    }
                    Ok((s, seen)) => {
                        // Only damage inside the last record can pass as a torn tail.
                        assert!(pos >= last, "flip at {pos} accepted");
                        assert_eq!(seen, commands[..commands.len() - 1]);
                        assert_eq!(s.valid_len, last as u64);
                    }
                    Err(ScanError::Corrupt { offset, .. }) => {
                        let record_start = starts.iter().rev().find(|&&s| s as usize <= pos);
                        let expected = if pos < LOG_HEADER_LEN {
                            0
                        } else {
                            *record_start.unwrap()
                        };
                        assert_eq!(offset, expected, "flip at {pos}");
                    }
                    Err(e) => panic!("flip at {pos}: {e:?}"),
                }
            }
        }
    }

    #[test]
    fn header_problems_are_named() {
        let (mut bytes, _) = log_of(&[cmd(&["PING"])]);
        let Err(ScanError::Corrupt { reason, .. }) = scan_log(
            &bytes[..],
            bytes.len() as u64,
            8,
            Tail::MayBeTorn,
            |_, _| Ok(()),
        ) else {
            panic!("a generation mismatch must be an error");
        };
        assert!(reason.contains("generation 7"), "{reason}");
        bytes[8] = 4;
        let Err(ScanError::Corrupt { reason, .. }) = scan(&bytes, Tail::MayBeTorn) else {
            panic!("a newer version must be an error");
        };
        assert!(reason.contains("version 4"), "{reason}");
        // Every version this build knows reads back, and says which it is.
        for version in [LOG_VERSION_V1, LOG_VERSION_V2, LOG_VERSION] {
            bytes[8] = version as u8;
            let (s, seen) = scan(&bytes, Tail::Strict).unwrap();
            assert_eq!((s.version, seen.len()), (version, 1));
        }
    }

    #[test]
    fn a_callback_error_names_the_record() {
        let (bytes, starts) = log_of(&[cmd(&["BF.ADD", "k", "1"]), cmd(&["CF.DEL", "k", "1"])]);
        let r = scan_log(&bytes[..], bytes.len() as u64, 7, Tail::Strict, |_, c| {
            if c[0] == "CF.DEL" {
                Err("WRONGTYPE".to_string())
            } else {
                Ok(())
            }
        });
        match r {
            Err(ScanError::Rejected {
                offset, command, ..
            }) => {
                assert_eq!(offset, starts[1]);
                assert_eq!(command, "CF.DEL (2 arguments)");
            }
            other => panic!("{other:?}"),
        }
    }
}
