//! Server commands: `COMMAND`, `CONFIG GET/SET`, `INFO`, `SAVE`, `BGSAVE`, `SHUTDOWN`.

use std::fmt::Write as _;
use std::sync::Arc;

use bloomkit_commands::args::is_word;
use bloomkit_commands::errors::{syntax_error, wrong_arity};
use bloomkit_commands::table::{CommandSpec, Flag};
use bloomkit_commands::Reply;
use bytes::Bytes;

use super::connection::REDIS_VERSION;
use super::help::help;
use super::table;
use crate::errors::unknown_subcommand;
use crate::glob;
use crate::options;
use crate::shared::{Shared, SnapshotError};

// ---- COMMAND -------------------------------------------------------------------------

/// `COMMAND [COUNT | INFO [name...] | DOCS [name...] | LIST [FILTERBY ...] | HELP]`.
pub fn command(spec: &CommandSpec, args: &[Bytes]) -> Reply {
    let Some(sub_name) = args.get(1) else {
        return Reply::Array(table::all().map(info_of).collect());
    };
    let Some(sub) = spec.subcommand(sub_name) else {
        return unknown_subcommand("command", sub_name);
    };
    if !sub.accepts(args.len()) {
        return wrong_arity(sub.name);
    }
    let names = &args[2..];
    match sub.name {
        "command|count" => Reply::Integer(table::all().count() as i64),
        "command|info" if names.is_empty() => Reply::Array(table::all().map(info_of).collect()),
        "command|info" => Reply::Array(
            names
                .iter()
                .map(|name| find(name).map_or(Reply::NullArray, info_of))
                .collect(),
        ),
        "command|docs" if names.is_empty() => Reply::Map(table::all().map(docs_of).collect()),
        // Unknown names are left out of the map, as Redis does.
        "command|docs" => Reply::Map(names.iter().filter_map(|n| find(n)).map(docs_of).collect()),
        "command|list" => list(names),
        "command|help" => help(
            "COMMAND",
            &[
                "(no subcommand)",
                "    Return details about all commands.",
                "COUNT",
                "    Return the total number of commands in this server.",
                "LIST [FILTERBY (MODULE <module-name>|ACLCAT <category>|PATTERN <pattern>)]",
                "    Return a list of all commands in this server.",
                "INFO [<command-name> ...]",
                "    Return details about multiple commands.",
                "DOCS [<command-name> ...]",
                "    Return documentation details about multiple commands.",
            ],
        ),
        _ => unknown_subcommand("command", sub_name),
    }
}

/// A command by name, or a subcommand by its full name (`client|setname`).
fn find(name: &[u8]) -> Option<&'static CommandSpec> {
    match name.iter().position(|&b| b == b'|') {
        None => table::lookup_any(name),
        Some(bar) => table::lookup_any(&name[..bar])?.subcommand(&name[bar + 1..]),
    }
}

/// `COMMAND LIST [FILTERBY MODULE name | ACLCAT category | PATTERN pattern]`.
fn list(args: &[Bytes]) -> Reply {
    let filter: Box<dyn Fn(&CommandSpec) -> bool> = match args {
        [] => Box::new(|_| true),
        [by, kind, value] if is_word(by, "FILTERBY") => {
            let value = value.clone();
            if is_word(kind, "MODULE") {
                Box::new(move |spec| spec.has(Flag::Module) && is_word(&value, "bf"))
            } else if is_word(kind, "ACLCAT") {
                Box::new(move |spec| {
                    spec.acl.iter().any(|cat| {
                        value.eq_ignore_ascii_case(cat.trim_start_matches('@').as_bytes())
                    })
                })
            } else if is_word(kind, "PATTERN") {
                Box::new(move |spec| glob::matches(&value, spec.name.as_bytes(), true))
            } else {
                return syntax_error();
            }
        }
        _ => return syntax_error(),
    };
    Reply::Array(
        table::all()
            .flat_map(|spec| std::iter::once(spec).chain(spec.subcommands.iter()))
            .filter(|spec| filter(spec))
            .map(|spec| Reply::bulk(spec.name))
            .collect(),
    )
}

/// One command as `COMMAND INFO` describes it (Redis 7's ten fields).
fn info_of(spec: &CommandSpec) -> Reply {
    let words =
        |words: &[&str]| Reply::Array(words.iter().map(|w| Reply::Simple(w.to_string())).collect());
    let flags: Vec<&str> = spec.flags.iter().map(|f| f.info_name()).collect();
    Reply::Array(vec![
        Reply::bulk(spec.name),
        Reply::Integer(spec.info_arity()),
        words(&flags),
        Reply::Integer(spec.first_key),
        Reply::Integer(spec.last_key),
        Reply::Integer(spec.step),
        words(spec.acl),
        Reply::Array(Vec::new()), // tips
        Reply::Array(Vec::new()), // key specifications
        Reply::Array(spec.subcommands.iter().map(info_of).collect()),
    ])
}

/// One command's `COMMAND DOCS` entry: name, then a map of what redis-cli shows.
fn docs_of(spec: &CommandSpec) -> (Reply, Reply) {
    let mut doc = vec![
        (Reply::bulk("summary"), Reply::bulk(spec.summary)),
        (Reply::bulk("since"), Reply::bulk(spec.since)),
        (Reply::bulk("group"), Reply::bulk(spec.group)),
    ];
    if spec.has(Flag::Module) {
        doc.push((Reply::bulk("module"), Reply::bulk("bf")));
    }
    if !spec.subcommands.is_empty() {
        doc.push((
            Reply::bulk("subcommands"),
            Reply::Map(spec.subcommands.iter().map(docs_of).collect()),
        ));
    }
    (Reply::bulk(spec.name), Reply::Map(doc))
}

// ---- CONFIG --------------------------------------------------------------------------

/// `CONFIG GET pattern...`, `CONFIG SET name value...`, `CONFIG HELP`.
pub fn config(shared: &Shared, spec: &CommandSpec, args: &[Bytes]) -> Reply {
    let Some(sub) = spec.subcommand(&args[1]) else {
        return unknown_subcommand("config", &args[1]);
    };
    if !sub.accepts(args.len()) {
        return wrong_arity(sub.name);
    }
    match sub.name {
        "config|get" => shared
            .settings()
            .get(&args[2..], shared.config(), shared.keyspace()),
        "config|set" => match shared.settings().set(&args[2..], shared.keyspace()) {
            Ok(()) => Reply::Ok,
            Err(reply) => reply,
        },
        "config|rewrite" => crate::config_file::rewrite(&shared.view()),
        "config|help" => help(
            "CONFIG",
            &[
                "GET <pattern>",
                "    Return parameters matching the glob-like <pattern> and their values.",
                "SET <directive> <value>",
                "    Set the configuration <directive> to <value>.",
                "REWRITE",
                "    Rewrite the configuration file.",
            ],
        ),
        _ => unknown_subcommand("config", &args[1]),
    }
}

// ---- INFO ----------------------------------------------------------------------------

/// The sections `INFO` knows, in the order it prints them.
const SECTIONS: &[&str] = &[
    "server",
    "clients",
    "memory",
    "persistence",
    "stats",
    "modules",
    "commandstats",
    "errorstats",
    "filters",
    "cluster",
    "keyspace",
];

/// Sections only `INFO all`/`everything` (or their name) print, as Redis leaves
/// `commandstats` out of the default.
const NOT_DEFAULT: &[&str] = &["commandstats"];

/// `INFO [section...]`: `server`, `clients`, `memory`, `persistence`, `stats`, `modules`,
/// `commandstats`, `errorstats`, `filters`, `cluster`, `keyspace`; `default` (or none) for
/// all but `commandstats`, `all`/`everything` for all of them.
pub fn info(shared: &Shared, args: &[Bytes]) -> Reply {
    let wanted: Vec<&str> = if args[1..]
        .iter()
        .any(|a| is_word(a, "all") || is_word(a, "everything"))
    {
        SECTIONS.to_vec()
    } else if args.len() == 1 || args[1..].iter().any(|a| is_word(a, "default")) {
        SECTIONS
            .iter()
            .copied()
            .filter(|section| !NOT_DEFAULT.contains(section))
            .collect()
    } else {
        SECTIONS
            .iter()
            .copied()
            .filter(|section| args[1..].iter().any(|a| is_word(a, section)))
            .collect()
    };
    let text: Vec<String> = wanted
        .iter()
        .map(|section| info_section(shared, section))
        .collect();
    Reply::bulk(text.join("\r\n"))
}

fn info_section(shared: &Shared, section: &str) -> String {
    let keyspace = shared.keyspace();
    let stats = shared.stats();
    let view = shared.view();
    let mut out = String::new();
    let mut field = |name: &str, value: &dyn std::fmt::Display| {
        let _ = write!(out, "{name}:{value}\r\n");
    };
    let title = match section {
        "server" => {
            let uptime = shared.uptime().as_secs();
            field("redis_version", &REDIS_VERSION);
            field("bloomkit_version", &env!("CARGO_PKG_VERSION"));
            field("redis_mode", &"standalone");
            field(
                "os",
                &format!("{} {}", std::env::consts::OS, std::env::consts::ARCH),
            );
            field("arch_bits", &(usize::BITS));
            field("process_id", &std::process::id());
            field("tcp_port", &shared.port());
            field("server_time_usec", &(crate::keyspace::now_ms() * 1000));
            field("uptime_in_seconds", &uptime);
            field("uptime_in_days", &(uptime / 86_400));
            "Server"
        }
        "clients" => {
            field("connected_clients", &stats.connected_clients());
            let (input, output) = shared
                .clients()
                .recent_max(shared.keyspace().clock_seconds());
            field("client_recent_max_input_buffer", &input);
            field("client_recent_max_output_buffer", &output);
            for (name, value) in options::info_fields("clients", &view) {
                field(name, &value);
            }
            field("blocked_clients", &0);
            "Clients"
        }
        "memory" => {
            // Redis's used_memory counts the clients' buffers, and maxmemory limits it.
            let used = keyspace.memory_reported() as u64;
            let max = keyspace.maxmemory();
            field("used_memory", &used);
            field("used_memory_human", &human_bytes(used));
            field("used_memory_dataset", &keyspace.used_memory());
            field(
                "mem_clients_normal",
                &(keyspace.client_memory() + keyspace.unauthenticated_client_memory()),
            );
            for (name, value) in options::info_fields("memory", &view) {
                field(name, &value);
                if name == "maxmemory" {
                    field("maxmemory_human", &human_bytes(max));
                }
            }
            "Memory"
        }
        "persistence" => {
            let snapshots = shared.snapshot_status();
            let journal = keyspace.journal();
            let enabled = journal.is_some_and(|j| j.enabled());
            let mut fields: Vec<(&str, String)> = vec![
                ("loading", u8::from(keyspace.is_loading()).to_string()),
                ("async_loading", "0".into()),
                (
                    "rdb_changes_since_last_save",
                    keyspace.changes_since_snapshot().to_string(),
                ),
                (
                    "rdb_bgsave_in_progress",
                    u8::from(snapshots.in_progress).to_string(),
                ),
                ("rdb_last_save_time", snapshots.last_save_unix.to_string()),
                (
                    "rdb_last_bgsave_status",
                    if snapshots.last_ok { "ok" } else { "err" }.into(),
                ),
                ("aof_enabled", u8::from(enabled).to_string()),
                // Our snapshot is also the log's compaction (Redis's AOF rewrite).
                (
                    "aof_rewrite_in_progress",
                    u8::from(snapshots.in_progress).to_string(),
                ),
            ];
            fields.extend(options::info_fields("persistence", &view));
            // The journal's figures come from the files: they replace ours by name, so no
            // field appears twice.
            for (name, value) in journal.map(|j| j.info_fields()).unwrap_or_default() {
                match fields.iter_mut().find(|(n, _)| *n == name) {
                    Some(slot) => slot.1 = value,
                    None => fields.push((name, value)),
                }
            }
            for (name, value) in &fields {
                field(name, value);
            }
            "Persistence"
        }
        "stats" => {
            field("total_connections_received", &stats.connections_received());
            field("total_commands_processed", &stats.commands_processed());
            field("rejected_connections", &stats.rejected_connections());
            field("expired_keys", &keyspace.expired_keys());
            field("evicted_keys", &keyspace.eviction().evicted_keys());
            field(
                "total_error_replies",
                &shared.command_stats().total_error_replies(),
            );
            "Stats"
        }
        "modules" => {
            super::module::info_modules(&mut field);
            "Modules"
        }
        "cluster" => {
            super::module::info_cluster(&mut field);
            "Cluster"
        }
        "commandstats" => {
            return format!(
                "# Commandstats\r\n{}",
                shared.command_stats().commandstats()
            )
        }
        "errorstats" => return format!("# Errorstats\r\n{}", shared.command_stats().errorstats()),
        "filters" => {
            let health = keyspace.filter_health();
            field("filters_past_capacity", &health.past_capacity);
            field("filters_above_target_rate", &health.above_target_rate);
            if let Some((key, worst)) = &health.worst {
                field("worst_filter_key", &String::from_utf8_lossy(key));
                field("worst_filter_items", &worst.items);
                field("worst_filter_capacity", &worst.capacity);
                field(
                    "worst_filter_estimated_rate",
                    &format!("{:.6}", worst.estimated_rate),
                );
                field(
                    "worst_filter_target_rate",
                    &format!("{:.6}", worst.target_rate),
                );
            }
            "Filters"
        }
        _ => {
            let (keys, expires) = keyspace.counts();
            if keys > 0 {
                field("db0", &format!("keys={keys},expires={expires},avg_ttl=0"));
            }
            "Keyspace"
        }
    };
    format!("# {title}\r\n{out}")
}

/// Bytes as Redis prints them for `*_human` fields: `512B`, `1.50K`, `2.00M`, `1.00G`.
fn human_bytes(bytes: u64) -> String {
    const UNITS: &[(u64, &str)] = &[
        (1 << 40, "T"),
        (1 << 30, "G"),
        (1 << 20, "M"),
        (1 << 10, "K"),
    ];
    for &(size, unit) in UNITS {
        if bytes >= size {
            return format!("{:.2}{unit}", bytes as f64 / size as f64);
        }
    }
    format!("{bytes}B")
}

// ---- SAVE, BGSAVE, SHUTDOWN ----------------------------------------------------------

/// `SAVE`: takes a snapshot and answers when it is on disk. Unlike Redis, other clients
/// keep working meanwhile: writers copy a value a snapshot still holds.
pub async fn save(shared: &Arc<Shared>) -> Reply {
    match shared.snapshot().await {
        Ok(()) => Reply::Ok,
        Err(e) => e.into(),
    }
}

/// `BGSAVE [SCHEDULE]`: starts a snapshot and answers at once. With `SCHEDULE`, a
/// snapshot already running is followed by another instead of refusing.
pub fn bgsave(shared: &Arc<Shared>, args: &[Bytes]) -> Reply {
    let schedule = match args {
        [_] => false,
        [_, word] if is_word(word, "SCHEDULE") => true,
        _ => return syntax_error(),
    };
    if shared.start_background_snapshot() {
        Reply::Simple("Background saving started".to_string())
    } else if schedule {
        shared.schedule_snapshot();
        Reply::Simple("Background saving scheduled".to_string())
    } else {
        SnapshotError::InProgress.into()
    }
}

/// `SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE]`: stops the server gracefully. The connection
/// closes without a reply; the server finishes the commands in flight, syncs the log and
/// (unless `NOSAVE`) takes a final snapshot before exiting. `NOW` and `FORCE` are accepted
/// and change nothing: there are no replicas to wait for, and a failed final snapshot
/// loses nothing (the log still holds every write), so it never blocks the exit.
pub fn shutdown(shared: &Shared, args: &[Bytes]) -> Result<(), Reply> {
    let (mut save, mut nosave) = (false, false);
    for arg in &args[1..] {
        if is_word(arg, "NOSAVE") {
            nosave = true;
        } else if is_word(arg, "SAVE") {
            save = true;
        } else if is_word(arg, "ABORT") {
            return Err(Reply::error("ERR No shutdown in progress."));
        } else if !(is_word(arg, "NOW") || is_word(arg, "FORCE")) {
            return Err(syntax_error());
        }
    }
    if save && nosave {
        return Err(syntax_error());
    }
    shared.request_shutdown_because(!nosave, "SHUTDOWN from a client");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_sizes_as_redis_prints_them() {
        assert_eq!(human_bytes(0), "0B");
        assert_eq!(human_bytes(1023), "1023B");
        assert_eq!(human_bytes(1536), "1.50K");
        assert_eq!(human_bytes(3 << 20), "3.00M");
        assert_eq!(human_bytes(1 << 30), "1.00G");
    }

    #[test]
    fn subcommands_found_by_full_name() {
        assert_eq!(
            find(b"client|SETNAME").map(|s| s.name),
            Some("client|setname")
        );
        assert_eq!(find(b"BF.ADD").map(|s| s.name), Some("bf.add"));
        assert!(find(b"client|nope").is_none());
        assert!(find(b"nope").is_none());
    }
}
