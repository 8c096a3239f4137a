//! What the module's tests share beyond `bloomkit-testkit` (which starts the engines, with
//! this build's module or RedisBloom's, and speaks RESP to them): the module's own
//! arguments, and the engine commands its tests wait on (`DEBUG DIGEST-VALUE`, an AOF
//! rewrite, a replica's link).

use std::time::Duration;

pub use bloomkit_testkit::engine::{module, EngineServer as Server};
pub use bloomkit_testkit::{Conn, Engine, Resp};

use bloomkit_testkit::wait;

/// `DEBUG DIGEST-VALUE key`, as its hex text.
pub fn digest(conn: &mut Conn, key: &str) -> String {
    let reply = conn.cmd(&["DEBUG", "DIGEST-VALUE", key]);
    match reply {
        Resp::Array(items) if items.len() == 1 => items[0].text(),
        other => panic!("DEBUG DIGEST-VALUE {key}: {other:?}"),
    }
}

/// Other defaults than the table's, for restarts that must not change what was stored.
pub const OTHER_DEFAULTS: &[&str] = &[
    "ERROR_RATE",
    "0.2",
    "INITIAL_SIZE",
    "7",
    "bf-expansion-factor",
    "0",
    "cf-bucket-size",
    "4",
    "cf-initial-size",
    "64",
    "cf-max-iterations",
    "3",
];

/// The engine's arguments: the module with `module_args`, the debug command (for
/// `DEBUG DIGEST-VALUE`), then `extra`.
pub fn args_with(module_args: &[&str], extra: &[&str]) -> Vec<String> {
    let mut args = vec!["--loadmodule".to_string(), module().display().to_string()];
    args.extend(module_args.iter().map(|a| a.to_string()));
    args.extend(["--enable-debug-command", "yes"].map(String::from));
    args.extend(extra.iter().map(|a| a.to_string()));
    args
}

/// `BGREWRITEAOF`, and waits up to `within` for it to finish well.
pub fn rewrite_aof(c: &mut Conn, within: Duration) {
    assert!(!c.line("BGREWRITEAOF").is_error());
    assert!(
        wait::until(within, || {
            let info = c.line("INFO persistence").text();
            info.contains("aof_rewrite_in_progress:0")
                && info.contains("aof_rewrite_scheduled:0")
                && info.contains("aof_last_bgrewrite_status:ok")
        }),
        "the rewrite finished"
    );
}

/// Waits (up to a minute) for a replica's link to its master to be up.
pub fn replica_linked(replica: &mut Conn, what: &str) {
    assert!(
        wait::until(wait::GENEROUS, || {
            replica
                .line("INFO replication")
                .text()
                .contains("master_link_status:up")
        }),
        "{what}: the replica synced"
    );
}
