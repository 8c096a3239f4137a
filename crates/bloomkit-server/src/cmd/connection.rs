//! Connection commands: `PING`, `ECHO`, `HELLO`, `AUTH`, `SELECT`, `CLIENT ...` (`QUIT` is
//! the dispatcher's: it only closes).
//!
//! These change the [`Session`], never the keyspace. Replies and errors are Redis 7's,
//! since clients act on them: redis-py checks `HELLO`'s `proto`, and treats `WRONGPASS`
//! and `NOAUTH` as authentication errors by their first word.

use bloomkit_commands::args::{is_word, parse_i64};
use bloomkit_commands::errors::{not_an_integer, syntax_error, wrong_arity};
use bloomkit_commands::table::CommandSpec;
use bloomkit_commands::{Protocol, Reply};
use bytes::Bytes;

use super::help::help;
use crate::errors::{unknown_subcommand, DB_INDEX_OUT_OF_RANGE};
use crate::session::Session;
use crate::shared::Shared;

/// The Redis version the server reports (`HELLO`, `INFO`): the behaviour it follows.
/// Clients gate features on it (Lettuce reads it from `HELLO`), and RedisBloom's commands
/// here follow Redis 8.
pub const REDIS_VERSION: &str = "8.0.0";

/// `PING [message]`: `PONG`, or the message as a bulk string.
pub fn ping(args: &[Bytes]) -> Reply {
    match args {
        [_] => Reply::Simple("PONG".to_string()),
        [_, message] => Reply::Bulk(message.clone()),
        _ => wrong_arity("ping"),
    }
}

/// `ECHO message`.
pub fn echo(args: &[Bytes]) -> Reply {
    Reply::Bulk(args[1].clone())
}

/// `HELLO [protover [AUTH username password] [SETNAME clientname]]`: switches protocol,
/// optionally authenticates and names the client, and answers a map describing the server
/// (in the new protocol).
pub fn hello(shared: &Shared, session: &mut Session, args: &[Bytes]) -> Reply {
    let mut protocol = None;
    let mut rest = &args[1..];
    if let [version, tail @ ..] = rest {
        protocol = match parse_i64(version) {
            None => return Reply::error("ERR Protocol version is not an integer or out of range"),
            Some(2) => Some(Protocol::Resp2),
            Some(3) => Some(Protocol::Resp3),
            Some(_) => return Reply::error("NOPROTO unsupported protocol version"),
        };
        rest = tail;
    }
    let (mut credentials, mut name) = (None, None);
    loop {
        match rest {
            [] => break,
            [option, user, password, tail @ ..] if is_word(option, "AUTH") => {
                credentials = Some((user, password));
                rest = tail;
            }
            [option, new_name, tail @ ..] if is_word(option, "SETNAME") => {
                if let Err(reply) = validate_name(new_name) {
                    return reply;
                }
                name = Some(new_name);
                rest = tail;
            }
            [option, ..] => {
                return Reply::Error(format!(
                    "ERR Syntax error in HELLO option '{}'",
                    String::from_utf8_lossy(option)
                ))
            }
        }
    }
    if let Some((user, password)) = credentials {
        if let Err(reply) = authenticate(shared, session, user, password) {
            return reply;
        }
    }
    if !session.authenticated {
        return Reply::error(
            "NOAUTH HELLO must be called with the client already authenticated, otherwise the \
             HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and \
             select the RESP protocol version at the same time",
        );
    }
    if let Some(name) = name {
        session.name = (!name.is_empty()).then(|| Bytes::copy_from_slice(name));
    }
    if let Some(protocol) = protocol {
        session.protocol = protocol;
    }
    let proto = match session.protocol {
        Protocol::Resp2 => 2,
        Protocol::Resp3 => 3,
    };
    // "server" says "redis": a drop-in answers as what it replaces, and the version is
    // the Redis behaviour followed (see REDIS_VERSION). "modules" lists RedisBloom's "bf",
    // which tools check for before sending BF.* commands.
    Reply::Map(vec![
        (Reply::bulk("server"), Reply::bulk("redis")),
        (Reply::bulk("version"), Reply::bulk(REDIS_VERSION)),
        (Reply::bulk("proto"), Reply::Integer(proto)),
        (
            Reply::bulk("id"),
            Reply::Integer(i64::try_from(session.id).unwrap_or(i64::MAX)),
        ),
        (Reply::bulk("mode"), Reply::bulk("standalone")),
        (Reply::bulk("role"), Reply::bulk("master")),
        (
            Reply::bulk("modules"),
            Reply::Array(vec![super::module::bloom_module()]),
        ),
    ])
}

/// `AUTH [username] password`. Without `--requirepass`, the default user has no password
/// (any password is accepted for `default`), as in Redis.
pub fn auth(shared: &Shared, session: &mut Session, args: &[Bytes]) -> Reply {
    match args {
        [_, password] => {
            if shared.config().password().is_none() {
                return Reply::error(
                    "ERR AUTH <password> called without any password configured for the \
                     default user. Are you sure your configuration is correct?",
                );
            }
            match authenticate(shared, session, b"default", password) {
                Ok(()) => Reply::Ok,
                Err(reply) => reply,
            }
        }
        [_, user, password] => match authenticate(shared, session, user, password) {
            Ok(()) => Reply::Ok,
            Err(reply) => reply,
        },
        _ => syntax_error(),
    }
}

/// Checks a username and password: the only user is `default`, whose password is
/// `--requirepass` (or anything, without it). A failed attempt leaves the session as it
/// was, as in Redis.
fn authenticate(
    shared: &Shared,
    session: &mut Session,
    user: &[u8],
    password: &[u8],
) -> Result<(), Reply> {
    let password_ok = match shared.config().password() {
        None => true,
        Some(secret) => constant_time_eq(secret.as_bytes(), password),
    };
    if user == b"default" && password_ok {
        session.authenticated = true;
        Ok(())
    } else {
        Err(Reply::error(
            "WRONGPASS invalid username-password pair or user is disabled.",
        ))
    }
}

/// Compares without stopping at the first difference, so the time taken does not tell an
/// attacker how much of a guessed password was right.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |diff, (x, y)| diff | (x ^ y)) == 0
}

/// `SELECT index`: only database 0 exists.
pub fn select(args: &[Bytes]) -> Reply {
    match parse_i64(&args[1]) {
        None => not_an_integer(),
        Some(0) => Reply::Ok,
        Some(n) if i32::try_from(n).is_err() => not_an_integer(),
        Some(_) => Reply::error(DB_INDEX_OUT_OF_RANGE),
    }
}

/// `CLIENT ID|GETNAME|SETNAME|SETINFO|HELP`.
pub fn client(session: &mut Session, spec: &CommandSpec, args: &[Bytes]) -> Reply {
    let Some(sub) = spec.subcommand(&args[1]) else {
        return unknown_subcommand("client", &args[1]);
    };
    if !sub.accepts(args.len()) {
        return wrong_arity(sub.name);
    }
    match sub.name {
        "client|id" => Reply::Integer(i64::try_from(session.id).unwrap_or(i64::MAX)),
        "client|getname" => session.name.clone().map_or(Reply::Null, Reply::Bulk),
        "client|setname" => match validate_name(&args[2]) {
            Ok(()) => {
                session.name = (!args[2].is_empty()).then(|| Bytes::copy_from_slice(&args[2]));
                Reply::Ok
            }
            Err(reply) => reply,
        },
        "client|setinfo" => {
            let attribute = &args[2];
            let slot = if is_word(attribute, "LIB-NAME") {
                &mut session.lib_name
            } else if is_word(attribute, "LIB-VER") {
                &mut session.lib_ver
            } else {
                return Reply::Error(format!(
                    "ERR Unrecognized option '{}'",
                    String::from_utf8_lossy(attribute)
                ));
            };
            if !printable(&args[3]) {
                return Reply::Error(format!(
                    "ERR {} cannot contain spaces, newlines or special characters.",
                    String::from_utf8_lossy(attribute)
                ));
            }
            // Owned: the session outlives the request's buffer.
            *slot = (!args[3].is_empty()).then(|| Bytes::copy_from_slice(&args[3]));
            Reply::Ok
        }
        "client|help" => help(
            "CLIENT",
            &[
                "GETNAME",
                "    Return the name of the current connection.",
                "ID",
                "    Return the ID of the current connection.",
                "SETINFO <option> <value>",
                "    Set client meta attr. Options are:",
                "    * LIB-NAME: the client lib name.",
                "    * LIB-VER: the client lib version.",
                "SETNAME <name>",
                "    Assign the name <name> to the current connection.",
            ],
        ),
        _ => unknown_subcommand("client", &args[1]),
    }
}

/// A client name: printable ASCII without spaces (Redis's rule), or empty to clear it.
fn validate_name(name: &[u8]) -> Result<(), Reply> {
    if printable(name) {
        Ok(())
    } else {
        Err(Reply::error(
            "ERR Client names cannot contain spaces, newlines or special characters.",
        ))
    }
}

fn printable(text: &[u8]) -> bool {
    text.iter().all(|&b| (b'!'..=b'~').contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_compare_whole() {
        assert!(constant_time_eq(b"secret", b"secret"));
        assert!(!constant_time_eq(b"secret", b"secreT"));
        assert!(!constant_time_eq(b"secret", b"secret!"));
        assert!(constant_time_eq(b"", b""));
    }

    #[test]
    fn select_only_database_zero() {
        let args = |n: &str| vec![Bytes::from_static(b"SELECT"), Bytes::from(n.to_string())];
        assert_eq!(select(&args("0")), Reply::Ok);
        assert_eq!(
            select(&args("1")),
            Reply::error("ERR DB index is out of range")
        );
        assert_eq!(select(&args("x")), not_an_integer());
        assert_eq!(select(&args("99999999999")), not_an_integer());
    }
}
