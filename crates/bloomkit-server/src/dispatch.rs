//! The dispatcher: one request (`Vec<Bytes>`, name first) in, one reply out.
//!
//! It knows nothing of sockets, which keeps it testable without a network and makes it
//! the one path for both clients and start-up replay ([`replay`]). The order of checks is
//! Redis's: an unknown command is refused first, then a wrong argument count, then a
//! client that has not authenticated (`NOAUTH`), and only then does the command run.
//! `BF.*`/`CF.*` go to [`FilterCommand`], which validates its own arguments (after the
//! `NOAUTH` check, as a module command's would be); everything else to `cmd::keys`,
//! `cmd::connection` and `cmd::server`.

use std::sync::Arc;

use bytes::Bytes;

use crate::cmd::{connection, keys, server, table, FilterCommand};
use crate::config::DefaultsCache;
use crate::keyspace::Ticket;
use crate::reply::{Protocol, Reply};
use crate::server::Shared;

/// One client's state: what it negotiated and who it is.
#[derive(Clone, Debug)]
pub struct Session {
    /// `CLIENT ID`: unique for the server's lifetime.
    pub id: u64,
    /// RESP2 until `HELLO 3`.
    pub protocol: Protocol,
    /// Whether the client may run commands: true from the start without
    /// `--requirepass`, after a successful `AUTH` or `HELLO ... AUTH` with it.
    pub authenticated: bool,
    /// `CLIENT SETNAME`.
    pub name: Option<Bytes>,
    /// `CLIENT SETINFO LIB-NAME`.
    pub lib_name: Option<Bytes>,
    /// `CLIENT SETINFO LIB-VER`.
    pub lib_ver: Option<Bytes>,
    /// This connection's copy of the filter defaults.
    pub defaults: DefaultsCache,
}

impl Session {
    /// A new client's session: RESP2, authenticated unless the server requires a password.
    pub fn new(shared: &Shared) -> Session {
        Session {
            id: shared.next_client_id(),
            protocol: Protocol::Resp2,
            authenticated: shared.config().requirepass.is_none(),
            name: None,
            lib_name: None,
            lib_ver: None,
            defaults: DefaultsCache::default(),
        }
    }
}

/// What running one request produced.
#[derive(Debug, PartialEq)]
pub struct Executed {
    /// The reply; `None` for the rare command that answers nothing (`SHUTDOWN`, which
    /// closes the connection instead) or an empty request.
    pub reply: Option<Reply>,
    /// What to await (see [`crate::keyspace::Journal::durable`]) before the reply may be
    /// sent: the command changed something and the journal wants it synced first, or (set
    /// by [`execute`]) it observed the keyspace, which may hold others' changes not yet
    /// durable ([`crate::keyspace::Journal::position`]).
    pub ticket: Option<Ticket>,
    /// Whether to close the connection once the reply is sent (`QUIT`, `SHUTDOWN`).
    pub close: bool,
    /// Work the synchronous core leaves to [`execute`] (a `SAVE` awaits the snapshot).
    pending: Option<Pending>,
}

#[derive(Debug, PartialEq, Eq)]
enum Pending {
    Save,
}

impl Executed {
    /// A reply that changed nothing durable.
    pub fn reply(reply: Reply) -> Executed {
        Executed {
            reply: Some(reply),
            ticket: None,
            close: false,
            pending: None,
        }
    }

    /// A reply to send once `ticket` is durable.
    pub fn logged(reply: Reply, ticket: Option<Ticket>) -> Executed {
        Executed {
            ticket,
            ..Executed::reply(reply)
        }
    }

    /// Closes the connection after `reply` (if any).
    pub fn closing(reply: Option<Reply>) -> Executed {
        Executed {
            reply,
            close: true,
            ..Executed::reply(Reply::Ok)
        }
    }

    fn pending(pending: Pending) -> Executed {
        Executed {
            pending: Some(pending),
            ..Executed::reply(Reply::Ok)
        }
    }
}

/// Runs one request for a client.
pub async fn execute(shared: &Arc<Shared>, session: &mut Session, args: &[Bytes]) -> Executed {
    let mut executed = run(shared, session, args);
    if let Some(Pending::Save) = executed.pending.take() {
        executed.reply = Some(server::save(shared).await);
    }
    if executed.ticket.is_none() {
        // Read after the command ran, so it covers every change the command could see.
        executed.ticket = shared.keyspace().journal().and_then(|j| j.position());
    }
    executed
}

/// Runs one logged command during start-up recovery, with every check a client's command
/// gets but authentication; the keyspace is loading, so it is neither logged again nor
/// limited by `--maxmemory`.
///
/// # Errors
///
/// The error reply's text, if the command was refused: a log that replays with errors
/// was not written by this server, or is damaged, and recovery should stop and say so.
pub fn replay(shared: &Arc<Shared>, args: &[Bytes]) -> Result<(), String> {
    let mut session = Session {
        authenticated: true,
        ..Session::new(shared)
    };
    match run_from(shared, &mut session, args, Origin::Log).reply {
        Some(Reply::Error(text)) => Err(text),
        _ => Ok(()),
    }
}

/// Where a request comes from: filter commands read back from the log are parsed with
/// [`FilterCommand::parse_logged`].
#[derive(Clone, Copy, PartialEq, Eq)]
enum Origin {
    Client,
    Log,
}

/// The synchronous core of [`execute`].
fn run(shared: &Arc<Shared>, session: &mut Session, args: &[Bytes]) -> Executed {
    run_from(shared, session, args, Origin::Client)
}

fn run_from(
    shared: &Arc<Shared>,
    session: &mut Session,
    args: &[Bytes],
    origin: Origin,
) -> Executed {
    let Some(name) = args.first() else {
        // An empty request (`*0`, or a blank inline line) is ignored, as Redis does.
        return Executed {
            reply: None,
            ..Executed::reply(Reply::Ok)
        };
    };

    // Filter commands first: their parser knows its own names, so whatever the filter
    // layer learns needs no change here.
    let parsed = match origin {
        Origin::Client => FilterCommand::parse(args),
        Origin::Log => FilterCommand::parse_logged(args),
    };
    if let Some(parsed) = parsed {
        if !session.authenticated {
            return Executed::reply(noauth());
        }
        if let Some(refused) = refused_write(shared, name) {
            return Executed::reply(refused);
        }
        return match parsed {
            Err(reply) => Executed::reply(reply),
            Ok(command) => {
                let defaults = shared.settings().cached(&mut session.defaults);
                let (reply, ticket) = shared.keyspace().run_filter(&command, defaults);
                Executed::logged(reply, ticket)
            }
        };
    }

    let Some(spec) = table::lookup(name) else {
        return Executed::reply(unknown_command(args));
    };
    if !spec.accepts(args.len()) {
        return Executed::reply(wrong_arity(spec.name));
    }
    if !session.authenticated && !spec.no_auth() {
        return Executed::reply(noauth());
    }
    if let Some(refused) = refused_write(shared, name) {
        return Executed::reply(refused);
    }

    let keyspace = shared.keyspace();
    match spec.name {
        "ping" => Executed::reply(connection::ping(args)),
        "echo" => Executed::reply(connection::echo(args)),
        "hello" => Executed::reply(connection::hello(shared, session, args)),
        "auth" => Executed::reply(connection::auth(shared, session, args)),
        "select" => Executed::reply(connection::select(args)),
        "quit" => Executed::closing(Some(Reply::Ok)),
        "client" => Executed::reply(connection::client(session, spec, args)),
        "command" => Executed::reply(server::command(spec, args)),
        "config" => Executed::reply(server::config(shared, spec, args)),
        "info" => Executed::reply(server::info(shared, args)),
        "save" => Executed::pending(Pending::Save),
        "bgsave" => Executed::reply(server::bgsave(shared, args)),
        "shutdown" => match server::shutdown(shared, args) {
            Ok(()) => Executed::closing(None),
            Err(reply) => Executed::reply(reply),
        },
        "dbsize" => Executed::reply(keys::dbsize(keyspace)),
        "flushdb" | "flushall" => keys::flush(keyspace, args),
        "del" | "unlink" => keys::del(keyspace, args),
        "exists" => Executed::reply(keys::exists(keyspace, args)),
        "type" => Executed::reply(keys::type_of(keyspace, args)),
        "keys" => Executed::reply(keys::keys(keyspace, args)),
        "scan" => Executed::reply(keys::scan(keyspace, args)),
        "expire" | "pexpire" | "expireat" | "pexpireat" => keys::expire(keyspace, spec.name, args),
        "ttl" => Executed::reply(keys::ttl(keyspace, args, false)),
        "pttl" => Executed::reply(keys::ttl(keyspace, args, true)),
        "persist" => keys::persist(keyspace, args),
        "rename" => keys::rename(keyspace, args),
        // Every name in the table has an arm above; a new one without an arm answers
        // like an unknown command instead of panicking.
        _ => Executed::reply(unknown_command(args)),
    }
}

/// Redis's `MISCONF` error for a write command while the log cannot be written, checked
/// (as Redis does) after arity and authentication and before the command runs, so that a
/// refused command changes nothing. Reads, `PING` and `INFO` go on (Redis refuses `PING`
/// too; see docs/SERVER.md). Costs one atomic load while the log is healthy.
fn refused_write(shared: &Shared, name: &[u8]) -> Option<Reply> {
    let refusal = shared.keyspace().journal()?.refuses_writes()?;
    let spec = table::lookup_any(name)?;
    spec.flags
        .contains(&"write")
        .then_some(Reply::Error(refusal))
}

/// `NOAUTH Authentication required.`
pub fn noauth() -> Reply {
    Reply::error("NOAUTH Authentication required.")
}

/// `ERR wrong number of arguments for 'name' command`, with Redis 7's full name
/// (`client|setname` for a subcommand).
pub fn wrong_arity(full_name: &str) -> Reply {
    Reply::Error(format!(
        "ERR wrong number of arguments for '{full_name}' command"
    ))
}

/// Redis 7's answer to an unknown command:
/// `ERR unknown command 'foo', with args beginning with: 'a' 'b' `.
///
/// Like Redis, it quotes at most 128 bytes of the name and of the arguments together,
/// stops each at a NUL byte (C strings), and turns CR and LF into spaces so the error
/// stays one line.
pub fn unknown_command(args: &[Bytes]) -> Reply {
    fn c_string(arg: &[u8], limit: usize) -> &[u8] {
        let arg = arg.split(|&b| b == 0).next().unwrap_or_default();
        &arg[..arg.len().min(limit)]
    }
    let name = args.first().map_or(&[][..], |name| c_string(name, 128));
    let mut quoted: Vec<u8> = Vec::new();
    for arg in args.iter().skip(1) {
        if quoted.len() >= 128 {
            break;
        }
        let room = 128 - quoted.len();
        quoted.push(b'\'');
        quoted.extend_from_slice(c_string(arg, room));
        quoted.extend_from_slice(b"' ");
    }
    let text = format!(
        "ERR unknown command '{}', with args beginning with: {}",
        String::from_utf8_lossy(name),
        String::from_utf8_lossy(&quoted)
    );
    Reply::Error(text.replace(['\r', '\n'], " "))
}

/// Redis 7's answer to an unknown subcommand: `ERR unknown subcommand 'foo'. Try CLIENT
/// HELP.`
pub fn unknown_subcommand(container: &str, sub: &[u8]) -> Reply {
    let sub = &sub[..sub.len().min(128)];
    let text = format!(
        "ERR unknown subcommand '{}'. Try {} HELP.",
        String::from_utf8_lossy(sub),
        container.to_ascii_uppercase()
    );
    Reply::Error(text.replace(['\r', '\n'], " "))
}

#[cfg(test)]
mod tests;
