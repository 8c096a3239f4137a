//! A command's [`Reply`] onto `RedisModule_ReplyWith*`.
//!
//! The engine encodes for each client's protocol: a map goes out as a flat array to a RESP2
//! client, a boolean as an integer, a double as a bulk string, exactly as `bloomkit serve`'s
//! encoder downgrades them. The one reply that is not the automatic downgrade,
//! [`Reply::PerProtocol`], is chosen here by the client's protocol.

use std::ffi::{c_long, CString};

use bloomkit_commands::{Protocol, Reply};
use redis_module::{raw, Context};

/// Sends `reply` to the client of `ctx`, which speaks `protocol()` (asked only for a
/// [`Reply::PerProtocol`]).
pub fn send(context: &Context, reply: &Reply, protocol: &dyn Fn() -> Protocol) {
    let ctx = context.ctx;
    match reply {
        Reply::Ok => {
            raw::reply_with_simple_string(ctx, c"OK".as_ptr());
        }
        Reply::Simple(text) => {
            raw::reply_with_simple_string(ctx, one_line(text).as_ptr());
        }
        Reply::Error(text) => {
            // Redis sends `-` and the text, adding no `ERR`: RedisBloom's unprefixed
            // errors ("Bad capacity") go out unprefixed, as RedisBloom sends them.
            raw::reply_with_error(ctx, one_line(text).as_ptr());
        }
        Reply::Integer(n) => {
            raw::reply_with_long_long(ctx, *n);
        }
        Reply::Bulk(bytes) => {
            raw::reply_with_string_buffer(ctx, bytes.as_ptr().cast(), bytes.len());
        }
        Reply::Null => {
            raw::reply_with_null(ctx);
        }
        Reply::NullArray => {
            if let Some(null_array) = api!(RedisModule_ReplyWithNullArray) {
                // SAFETY: `ctx` is the context of the command being answered.
                unsafe { null_array(ctx) };
            } else {
                raw::reply_with_null(ctx);
            }
        }
        Reply::Array(items) => {
            raw::reply_with_array(ctx, items.len() as c_long);
            for item in items {
                send(context, item, protocol);
            }
        }
        Reply::Map(pairs) => {
            raw::reply_with_map(ctx, pairs.len() as c_long);
            for (key, value) in pairs {
                send(context, key, protocol);
                send(context, value, protocol);
            }
        }
        Reply::Bool(b) => {
            raw::reply_with_bool(ctx, (*b).into());
        }
        Reply::Double(x) => {
            raw::reply_with_double(ctx, *x);
        }
        Reply::PerProtocol { resp2, resp3 } => {
            let chosen = match protocol() {
                Protocol::Resp2 => resp2,
                Protocol::Resp3 => resp3,
            };
            send(context, chosen, protocol);
        }
    }
}

/// A simple string or an error as one C line: CR and LF would end the reply early and NUL
/// the C string, so each becomes a space (what Redis does with CR and LF itself).
fn one_line(text: &str) -> CString {
    let bytes: Vec<u8> = text
        .bytes()
        .map(|b| {
            if matches!(b, b'\r' | b'\n' | 0) {
                b' '
            } else {
                b
            }
        })
        .collect();
    // No NUL is left.
    CString::new(bytes).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::one_line;

    #[test]
    fn a_line_cannot_break_a_reply() {
        assert_eq!(one_line("ERR a\r\nb\0c").as_bytes(), b"ERR a  b c");
        assert_eq!(one_line("Bad capacity").as_bytes(), b"Bad capacity");
    }
}
