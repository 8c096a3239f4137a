//! The server as a Redis with RedisBloom loaded and cluster mode off: `MODULE LIST`, and
//! `INFO`'s `# Modules` and `# Cluster` sections.
//!
//! Clients and health checks look for these: redis-py's own test setup reads
//! `cluster_enabled` from `INFO` and stops without it; deployment checks gate on the `bf`
//! module's version in `MODULE LIST` or `INFO modules`. `HELLO` lists the same module
//! ([`bloom_module`]), so every place that names it agrees.

use bloomkit_commands::table::CommandSpec;
use bloomkit_commands::Reply;
use bytes::Bytes;

use super::help::help;
use crate::errors::unknown_subcommand;

/// The module the server presents as: RedisBloom's name, `bf`.
pub const MODULE_NAME: &str = "bf";

/// The version it reports: 80000, the `bf` module of Redis 8.0 (whose behaviour the
/// commands follow), as `MODULE LIST` encodes versions (major·10000 + minor·100 + patch).
pub const MODULE_VERSION: i64 = 80_000;

/// RedisBloom as `HELLO` and `MODULE LIST` describe a loaded module.
pub fn bloom_module() -> Reply {
    Reply::Map(vec![
        (Reply::bulk("name"), Reply::bulk(MODULE_NAME)),
        (Reply::bulk("ver"), Reply::Integer(MODULE_VERSION)),
        (Reply::bulk("path"), Reply::bulk("")),
        (Reply::bulk("args"), Reply::Array(Vec::new())),
    ])
}

/// `MODULE LIST` and `MODULE HELP`. Loading or unloading modules is refused: the filter
/// commands are built in.
pub fn module(spec: &CommandSpec, args: &[Bytes]) -> Reply {
    let Some(sub) = spec.subcommand(&args[1]) else {
        let name = &args[1];
        if ["LOAD", "LOADEX", "UNLOAD"]
            .iter()
            .any(|word| name.eq_ignore_ascii_case(word.as_bytes()))
        {
            return Reply::Error(format!(
                "ERR MODULE {} is not supported: bloomkit serve has RedisBloom's commands built \
                 in and loads no modules",
                String::from_utf8_lossy(name).to_ascii_uppercase()
            ));
        }
        return unknown_subcommand("module", name);
    };
    if !sub.accepts(args.len()) {
        return bloomkit_commands::errors::wrong_arity(sub.name);
    }
    match sub.name {
        "module|list" => Reply::Array(vec![bloom_module()]),
        _ => help("MODULE", &["LIST", "    Return a list of loaded modules."]),
    }
}

/// `INFO modules`' lines, as Redis prints a loaded module.
pub fn info_modules(field: &mut dyn FnMut(&str, &dyn std::fmt::Display)) {
    field(
        "module",
        &format!(
            "name={MODULE_NAME},ver={MODULE_VERSION},api=1,filters=0,usedby=[],using=[],options=[]"
        ),
    );
}

/// `INFO cluster`'s line: cluster mode is off (one node holds every key).
pub fn info_cluster(field: &mut dyn FnMut(&str, &dyn std::fmt::Display)) {
    field("cluster_enabled", &0);
}
