//! The reply to a container command's `HELP` subcommand (`CLIENT HELP`, `CONFIG HELP`,
//! `DEBUG HELP`...), in Redis's shape: every command group that has subcommands answers
//! through [`help`], so this module uses no other.

use bloomkit_commands::Reply;

/// The `HELP` subcommands' reply, in Redis's shape.
pub(crate) fn help(container: &str, lines: &[&str]) -> Reply {
    let mut reply = vec![Reply::Simple(format!(
        "{container} <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
    ))];
    reply.extend(lines.iter().map(|line| Reply::Simple(line.to_string())));
    reply.push(Reply::Simple("HELP".to_string()));
    reply.push(Reply::Simple("    Print this help.".to_string()));
    Reply::Array(reply)
}
