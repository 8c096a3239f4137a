//! `DEBUG RELOAD [MERGE] [NOFLUSH] [NOSAVE]` and `DEBUG HELP`: the part of Redis's `DEBUG`
//! that RedisBloom's own test suite uses (its `dumpAndReload`), to check that every filter
//! survives being saved and loaded.
//!
//! Redis saves its RDB file, empties the data set and loads the file back. Here the save is
//! a snapshot, exactly as `SAVE` takes it (unless `NOSAVE`); then, with every writer held
//! off, each value goes through the encoding the snapshot stores and back, and the key keeps
//! what comes back. So a filter that would not survive a restart does not survive the
//! reload either, and the answers after it are those a restart would give. The in-memory
//! round trip, rather than reading the file back, keeps the state and the log in step while
//! other clients write (in Redis nothing runs meanwhile): the log already holds every write,
//! and what a restart loads is the snapshot and the log after it. `MERGE` and `NOFLUSH`
//! are accepted and change nothing: each key is replaced by its own reloaded value.

use std::sync::Arc;

use bloomkit_commands::args::is_word;
use bloomkit_commands::Reply;
use bytes::Bytes;

use super::help::help;
use super::{Executed, Pending};
use crate::shared::Shared;

/// `DEBUG subcommand ...`: `RELOAD` is left to [`reload`] (it awaits the snapshot).
pub fn debug(args: &[Bytes]) -> Executed {
    let sub = &args[1];
    if is_word(sub, "RELOAD") {
        let mut save = true;
        for option in &args[2..] {
            if is_word(option, "NOSAVE") {
                save = false;
            } else if !(is_word(option, "MERGE") || is_word(option, "NOFLUSH")) {
                return Executed::reply(Reply::error(
                    "ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options.",
                ));
            }
        }
        return Executed::pending(Pending::Reload { save });
    }
    if is_word(sub, "HELP") && args.len() == 2 {
        return Executed::reply(help(
            "DEBUG",
            &[
                "RELOAD [option ...]",
                "    Save the RDB on disk and reload it back to memory. Available options:",
                "    * MERGE: Merge the content of the RDB instead of flushing.",
                "    * NOFLUSH: Do not flush the data set before loading the RDB.",
                "    * NOSAVE: Do not save the data set.",
            ],
        ));
    }
    // Redis's DEBUG parses its subcommands itself, and answers this for any it does not
    // know (or knows with the wrong arguments).
    Executed::reply(Reply::Error(
        format!(
            "ERR unknown subcommand or wrong number of arguments for '{}'. Try DEBUG HELP.",
            String::from_utf8_lossy(&sub[..sub.len().min(128)])
        )
        .replace(['\r', '\n'], " "),
    ))
}

/// Runs `DEBUG RELOAD`: the snapshot (if `save`), then the reload of every value.
pub async fn reload(shared: &Arc<Shared>, save: bool) -> Reply {
    if save {
        if let Err(e) = shared.snapshot().await {
            return e.into();
        }
    }
    let keyspace = Arc::clone(shared);
    // Every shard is locked while the values are re-encoded: off the async workers.
    let outcome = tokio::task::spawn_blocking(move || keyspace.keyspace().reload_values()).await;
    match outcome {
        Ok((_, failures)) if failures.is_empty() => Reply::Ok,
        Ok((_, failures)) => {
            for failure in &failures {
                eprintln!(
                    "bloomkit: DEBUG RELOAD: the value of key {:?} did not decode ({}); it \
                     keeps its value",
                    String::from_utf8_lossy(&failure.key),
                    failure.reason
                );
            }
            Reply::error("ERR Error trying to load the RDB dump, check server logs.")
        }
        Err(e) => Reply::Error(format!("ERR DEBUG RELOAD failed: {e}")),
    }
}
