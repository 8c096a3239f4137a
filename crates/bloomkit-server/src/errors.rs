//! The server's own error replies: the ones only a host answers (an unknown command or
//! subcommand, `NOAUTH`).
//!
//! The replies that commands of both layers answer (`wrong_arity`, `syntax_error`,
//! `not_an_integer`, `WRONGTYPE`...) are the command layer's, in [`bloomkit_commands::errors`],
//! and nowhere else.

use bloomkit_commands::Reply;
use bytes::Bytes;

/// `NOAUTH Authentication required.`
pub fn noauth() -> Reply {
    Reply::error("NOAUTH Authentication required.")
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

/// `EXEC` without `MULTI`.
pub const EXEC_WITHOUT_MULTI: &str = "ERR EXEC without MULTI";

/// A command that cannot be queued in a transaction (its row has the `no-multi` flag).
pub const NOT_IN_TRANSACTION: &str = "ERR Command not allowed inside a transaction";

/// A database index other than 0 (`SELECT`, `MOVE`/`COPY ... DB`): the server has one.
pub const DB_INDEX_OUT_OF_RANGE: &str = "ERR DB index is out of range";

/// `CLIENT LIST TYPE`/`CLIENT KILL TYPE` with a type Redis does not know.
pub fn unknown_client_type(kind: &[u8]) -> Reply {
    Reply::Error(format!(
        "ERR Unknown client type '{}'",
        String::from_utf8_lossy(kind)
    ))
}
