//! `bloomkit copy SOURCE DEST`: filters from a server, a file or a stopped server's data
//! directory, to a server or a file.
//!
//! Every route moves a key the same way: its chunks, as `SCANDUMP` cuts them, are handed one
//! at a time from the source to the destination, which loads them with `LOADCHUNK` (a
//! server, under a temporary name) or with the command layer's own `LOADCHUNK` (a file); then
//! both ends' `INFO` must agree, and only then does the copy take the key's name (`RENAME`)
//! or the file's (an atomic rename). So memory holds one chunk, not the filter (except where
//! a file is one end: a file is read and written whole), and an interrupted copy leaves at
//! most the temporary key, which the next run removes before it starts that key again.
//!
//! * [`endpoint`]: reading SOURCE and DEST.
//! * [`resp`]: the blocking RESP2 client.
//! * [`remote`]: a server's side: listing keys, dumping, loading, renaming.
//! * [`local`]: a file's or a data directory's side, through the command layer.
//! * [`family`]: `BF`, `CF`, `AF`, and the `INFO` fields a copy must keep.
//! * [`tally`]: the progress bar and the summary.

mod endpoint;
mod failure;
mod family;
mod local;
mod remote;
mod resp;
mod tally;

use std::ffi::OsStr;
use std::path::PathBuf;
use std::sync::Arc;

use bloomkit_commands::Value;

use crate::error::{Error, Result};
use crate::files::{self, OnBusy, Output};

use endpoint::{Endpoint, Role};
use failure::{Failure, Sink};
use family::Family;
use remote::{Listing, Remote};
use tally::Tally;

/// What `bloomkit copy` was asked to do.
pub struct Options<'a> {
    /// SOURCE, as given.
    pub source: &'a OsStr,
    /// DEST, as given.
    pub dest: &'a OsStr,
    /// `--match`: a glob choosing the keys of a server or data directory.
    pub pattern: Option<&'a [u8]>,
    /// `--replace`: overwrite a key (or file) that exists at the destination.
    pub replace: bool,
    /// Whether to wait for another bloomkit command writing the destination file.
    pub on_busy: OnBusy,
}

/// The suffix of the temporary key a copy loads into before renaming it.
const TEMP_SUFFIX: &[u8] = b".bloomkit-copy";

/// Where the keys come from.
enum Origin {
    /// A server, read with `SCANDUMP`.
    Remote(Remote),
    /// Values held here (a file's, a data directory's), in the order of the key list.
    Local(Vec<Arc<Value>>),
}

/// Where they go.
enum Target {
    /// A server; `aging` caches whether it has `AF.LOADCHUNK`.
    Remote { remote: Remote, aging: Option<bool> },
    /// A filter file.
    File(PathBuf),
}

/// Runs `bloomkit copy`; the summary goes to stderr, each failed key's line as it fails.
///
/// # Errors
///
/// A bad SOURCE or DEST, an unreachable server, a file that cannot be read or written; and,
/// after the others were copied, any key that failed (each was named on stderr).
pub fn run(options: &Options<'_>) -> Result<()> {
    let source = Endpoint::parse(options.source, Role::Source).map_err(Error::Message)?;
    let dest = Endpoint::parse(options.dest, Role::Dest).map_err(Error::Message)?;
    let many = matches!(
        source,
        Endpoint::Server { key: None, .. } | Endpoint::DataDir { key: None, .. }
    );
    if options.pattern.is_some() && !many {
        return Err(Error::Message(format!(
            "--match chooses keys of a server or a data directory, and {} names one filter; \
             drop --match, or give the server's URL without a key",
            source.describe()
        )));
    }
    // The name each key takes at the destination.
    let dest_key: Option<Vec<u8>> = match (&dest, many) {
        (Endpoint::File(path), true) => {
            return Err(Error::Message(format!(
                "{} holds one filter, and {} names every key of {}; name one key in SOURCE \
                 (redis://host:port/KEY, or DIR/KEY for a data directory)",
                files::describe_filter(path),
                options.source.to_string_lossy(),
                source.describe()
            )))
        }
        (Endpoint::Server { key: Some(_), .. }, true) => {
            return Err(Error::Message(format!(
                "SOURCE names every key of {}, so DEST must be a server (redis://host:port) \
                 rather than one key; drop the key from DEST, or name one key in SOURCE",
                source.describe()
            )))
        }
        (Endpoint::File(_), false) => None,
        (Endpoint::Server { key, .. }, false) => {
            match key.clone().or(source.key().map(<[u8]>::to_vec)) {
                Some(key) => Some(key),
                None => {
                    return Err(Error::Message(format!(
                        "{} is a file, which has no key name: name the key in DEST \
                     (redis://host:port/KEY)",
                        source.describe()
                    )))
                }
            }
        }
        (_, true) => None,
        (Endpoint::DataDir { .. }, false) => return Err(data_dir_dest()),
    };
    let pattern = options.pattern.unwrap_or(b"*");

    // What to copy.
    let (mut origin, listing) = match &source {
        Endpoint::Server { addr, key } => {
            let mut remote = Remote::connect(addr).map_err(|e| Error::Message(e.to_string()))?;
            let listing = match key {
                None => remote.list(pattern).map_err(fatal)?,
                Some(key) => {
                    let family = remote.family_of(key).map_err(|f| named(key, f))?;
                    Listing {
                        keys: vec![(key.clone(), family)],
                        ..Listing::default()
                    }
                }
            };
            (Origin::Remote(remote), listing)
        }
        Endpoint::DataDir { dir, key } => {
            let (values, listing) = local::read_data_dir(dir, key.as_deref(), pattern)?;
            (Origin::Local(values), listing)
        }
        Endpoint::File(path) => {
            let value = local::read_file(path)?;
            let Some(family) = Family::of(&value) else {
                return Err(Error::Message(format!(
                    "{}: not a filter a key can hold",
                    files::describe_filter(path)
                )));
            };
            let key = dest_key.clone().unwrap_or_default();
            (
                Origin::Local(vec![Arc::new(value)]),
                Listing {
                    keys: vec![(key, family)],
                    ..Listing::default()
                },
            )
        }
    };
    let mut target = match &dest {
        Endpoint::Server { addr, .. } => Target::Remote {
            remote: Remote::connect(addr).map_err(|e| Error::Message(e.to_string()))?,
            aging: None,
        },
        Endpoint::File(path) => {
            if !files::is_dash(path) && path.exists() && !options.replace {
                return Err(Error::Message(format!(
                    "{} exists; give --replace to overwrite it",
                    files::describe_filter(path)
                )));
            }
            // Checks that standard output is not a terminal before anything is read.
            Output::new(path, &[], options.on_busy)?;
            Target::File(path.clone())
        }
        Endpoint::DataDir { .. } => return Err(data_dir_dest()),
    };

    let mut tally = Tally::new(listing.keys.len() as u64);
    for (why, n) in &listing.skipped {
        tally.skip(why, *n);
    }
    for (index, (key, family)) in listing.keys.iter().enumerate() {
        let to = dest_key.as_deref().unwrap_or(key);
        let copied = copy_key(
            &mut origin,
            index,
            key,
            *family,
            &mut target,
            to,
            options,
            &mut tally,
        );
        match copied {
            Ok(Copied::Yes) => tally.key_done(true),
            Ok(Copied::Skipped(why)) => tally.skip(why, 1),
            Err(Failure::Key(why)) => {
                tally.print(&format!(
                    "bloomkit: copy {}: {why}",
                    String::from_utf8_lossy(key)
                ));
                tally.key_done(false);
            }
            Err(Failure::Fatal(e)) => {
                let summary = tally.finish();
                eprintln!("bloomkit: {summary}");
                return Err(Error::Message(format!(
                    "copy {}: {e}",
                    String::from_utf8_lossy(key)
                )));
            }
        }
    }
    let failed = tally.failed;
    let keys = listing.keys.len();
    eprintln!("bloomkit: {}", tally.finish());
    if failed > 0 {
        return Err(Error::Message(format!(
            "{failed} of {keys} keys were not copied; each is named above with the reason"
        )));
    }
    Ok(())
}

/// A data directory as DEST ([`Endpoint::parse`] refuses it first, with the same advice).
fn data_dir_dest() -> Error {
    Error::Message(
        "a data directory is a SOURCE only; to fill one, start `bloomkit serve --dir` on it and \
         copy to its URL"
            .to_string(),
    )
}

/// A failure of the listing step, which concerns no key.
fn fatal(f: Failure) -> Error {
    match f {
        Failure::Key(why) | Failure::Fatal(Error::Message(why)) => Error::Message(why),
        Failure::Fatal(e) => e,
    }
}

/// A failure about the one named key, as one line.
fn named(key: &[u8], f: Failure) -> Error {
    Error::Message(format!(
        "copy {}: {}",
        String::from_utf8_lossy(key),
        fatal(f)
    ))
}

/// What became of one key.
enum Copied {
    Yes,
    /// Passed over, and why (for the summary).
    Skipped(&'static str),
}

/// The key a copy of `key` is loaded under before it takes `key`'s name: in the same
/// Redis Cluster hash slot as `key` (the hash tag `{key}`, or `key`'s own tag if it has
/// one), so that the final `RENAME` is allowed there. The name is fixed, so a run after an
/// interrupted one finds and removes what that one left.
fn temp_key(key: &[u8]) -> Vec<u8> {
    let has_tag = key.iter().position(|&b| b == b'{').is_some_and(|open| {
        key[open + 1..]
            .iter()
            .position(|&b| b == b'}')
            .is_some_and(|len| len > 0)
    });
    let mut temp = Vec::with_capacity(key.len() + TEMP_SUFFIX.len() + 2);
    if has_tag || key.contains(&b'{') || key.contains(&b'}') {
        // Braces without a tag cannot be wrapped in one that keeps the slot: the suffix
        // alone (the limit docs/SERVER.md states for Cluster).
        temp.extend_from_slice(key);
    } else {
        temp.push(b'{');
        temp.extend_from_slice(key);
        temp.push(b'}');
    }
    temp.extend_from_slice(TEMP_SUFFIX);
    temp
}

/// Copies one key.
#[allow(clippy::too_many_arguments)]
fn copy_key(
    origin: &mut Origin,
    index: usize,
    key: &[u8],
    family: Family,
    target: &mut Target,
    to: &[u8],
    options: &Options<'_>,
    tally: &mut Tally,
) -> Result<Copied, Failure> {
    // The source's INFO before and after the dump must agree: a key that changed in between
    // may have been dumped half old, half new.
    let source_info = |origin: &mut Origin| match origin {
        Origin::Remote(remote) => remote.info(key, family),
        Origin::Local(values) => {
            let value = &values[index];
            if !local::is_complete(value) {
                return Err(Failure::Key(
                    "it is still being restored (LOADCHUNK or RESTORE unfinished) in the \
                     source; finish or delete it there"
                        .to_string(),
                ));
            }
            local::info(value, family)
        }
    };
    let dump = |origin: &mut Origin, sink: &mut Sink<'_>| match origin {
        Origin::Remote(remote) => remote.dump(key, family, sink),
        Origin::Local(values) => local::dump(&values[index], sink),
    };
    match target {
        Target::Remote { remote, aging } => {
            if family == Family::Aging {
                let known = match aging {
                    Some(known) => *known,
                    None => *aging.insert(remote.knows(family.loadchunk())?),
                };
                if !known {
                    return Ok(Copied::Skipped(
                        "aging keys, which only bloomkit holds, for a destination without AF.*",
                    ));
                }
            }
            if !options.replace && remote.exists(to)? {
                return Err(Failure::Key(format!(
                    "the key {} exists at {}; give --replace to overwrite it",
                    String::from_utf8_lossy(to),
                    remote.name()
                )));
            }
            let temp = temp_key(to);
            // What an interrupted run left.
            remote.delete(&temp)?;
            let before = source_info(origin)?;
            let loaded = dump(origin, &mut |iter, data| {
                remote.load(&temp, family, iter, data)?;
                tally.chunk(data.len() as u64);
                Ok(())
            })
            .and_then(|_| check(&before, source_info(origin)?, remote.info(&temp, family)?));
            if let Err(e) = loaded {
                let Failure::Key(why) = e else {
                    return Err(e);
                };
                // Best effort: the failure to report is the copy's.
                let _ = remote.delete(&temp);
                // A server without bloomkit's own commands is RedisBloom, which loads only
                // its own dumps.
                let hint = match aging {
                    Some(true) => None,
                    Some(false) => Some(false),
                    None => remote.knows(Family::Aging.loadchunk()).ok(),
                };
                return Err(Failure::Key(if hint == Some(false) {
                    format!(
                        "{why} (the destination is not bloomkit, it has no AF.* commands: \
                         RedisBloom loads only RedisBloom's own dumps, and this key is in \
                         bloomkit's format; copy it to bloomkit serve or the bloomkit module)"
                    )
                } else {
                    why
                }));
            }
            remote.put_in_place(&temp, to, options.replace)?;
        }
        Target::File(path) => {
            let before = source_info(origin)?;
            let mut assembler = local::Assembler::new(family);
            dump(origin, &mut |iter, data| {
                assembler.push(iter, data)?;
                tally.chunk(data.len() as u64);
                Ok(())
            })?;
            let value = assembler.finish()?;
            check(&before, source_info(origin)?, local::info(&value, family)?)?;
            Output::new(path, &[], options.on_busy)?.write(&local::AsFile(value))?;
        }
    }
    Ok(Copied::Yes)
}

/// Checks the source's `INFO` after the dump against `before`, then the copy's against it.
fn check(before: &family::Info, after: family::Info, copy: family::Info) -> Result<(), Failure> {
    if let Some(diff) = before.difference(&after) {
        return Err(Failure::Key(format!(
            "it changed at the source while it was copied ({diff}); run the copy again"
        )));
    }
    if let Some(diff) = before.difference(&copy) {
        return Err(Failure::Key(format!(
            "the copy does not match the source ({diff}); it was not put in place"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temporary_keys_keep_the_hash_slot() {
        assert_eq!(temp_key(b"users"), b"{users}.bloomkit-copy");
        assert_eq!(temp_key(b"{app}:users"), b"{app}:users.bloomkit-copy");
        // Braces without a tag: the suffix alone.
        assert_eq!(temp_key(b"a{}b"), b"a{}b.bloomkit-copy");
        assert_eq!(temp_key(b"a}b"), b"a}b.bloomkit-copy");
        assert_eq!(temp_key(b""), b"{}.bloomkit-copy");
    }
}
