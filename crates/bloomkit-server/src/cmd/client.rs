//! `CLIENT LIST`, `CLIENT INFO` and `CLIENT KILL`, from the client registry
//! ([`crate::clients`]), in Redis 7's formats; the other `CLIENT` subcommands are
//! [`super::connection`]'s.

use bloomkit_commands::args::{is_word, parse_i64};
use bloomkit_commands::errors::{syntax_error, wrong_arity};
use bloomkit_commands::Reply;
use bytes::Bytes;

use super::{connection, Call, Executed};
use crate::clients::ClientInfo;
use crate::errors::{unknown_client_type, unknown_subcommand};
use crate::session::Session;

/// `CLIENT LIST|INFO|KILL ...`, and the rest of `CLIENT` through
/// [`connection::client`].
pub fn client(call: &mut Call<'_>) -> Executed {
    let args = call.args;
    let Some(sub) = call.spec.subcommand(&args[1]) else {
        return Executed::reply(unknown_subcommand("client", &args[1]));
    };
    if !sub.accepts(args.len()) {
        return Executed::reply(wrong_arity(sub.name));
    }
    match sub.name {
        "client|list" => Executed::reply(list(call)),
        "client|info" => {
            let me = call.shared.clients().get(call.session.id);
            let line = me.map(|c| line(&c, Some(call.session), "client|info"));
            Executed::reply(Reply::bulk(line.unwrap_or_default()))
        }
        "client|kill" => kill(call),
        _ => Executed::reply(connection::client(call.session, call.spec, args)),
    }
}

/// `CLIENT LIST [TYPE normal|master|replica|pubsub] [ID id...]`.
fn list(call: &Call<'_>) -> Reply {
    let args = &call.args[2..];
    let mut ids: Option<Vec<u64>> = None;
    match args {
        [] => {}
        [word, kind] if is_word(word, "TYPE") => {
            if is_word(kind, "normal") {
            } else if ["master", "replica", "slave", "pubsub"]
                .iter()
                .any(|k| is_word(kind, k))
            {
                return Reply::bulk("");
            } else {
                return unknown_client_type(kind);
            }
        }
        [word, rest @ ..] if is_word(word, "ID") && !rest.is_empty() => {
            let mut wanted = Vec::with_capacity(rest.len());
            for id in rest {
                match parse_i64(id) {
                    Some(id) if id > 0 => wanted.push(id as u64),
                    _ => return Reply::error("ERR Invalid client ID"),
                }
            }
            ids = Some(wanted);
        }
        _ => return syntax_error(),
    }
    let mut out = String::new();
    for client in call.shared.clients().all() {
        if ids.as_ref().is_some_and(|ids| !ids.contains(&client.id)) {
            continue;
        }
        let me = (client.id == call.session.id).then_some(&*call.session);
        out.push_str(&line(&client, me, "client|list"));
    }
    Reply::bulk(out)
}

/// One client as `CLIENT LIST` shows it, Redis 7.2's fields in its order. For the client
/// asking (`me`), its session's name and protocol and the command running now.
fn line(client: &ClientInfo, me: Option<&Session>, running: &'static str) -> String {
    let mut meta = client.meta();
    if let Some(session) = me {
        meta.name.clone_from(&session.name);
        meta.lib_name.clone_from(&session.lib_name);
        meta.lib_ver.clone_from(&session.lib_ver);
        meta.resp = match session.protocol {
            bloomkit_commands::Protocol::Resp2 => 2,
            bloomkit_commands::Protocol::Resp3 => 3,
        };
        meta.last_command = running;
        (meta.multi, meta.watch) = session.transaction.client_list_fields();
    }
    let text =
        |b: &Option<Bytes>| String::from_utf8_lossy(b.as_deref().unwrap_or_default()).into_owned();
    let buffers = client.buffers();
    format!(
        "id={} addr={} laddr={} fd={} name={} age={} idle={} flags=N db=0 sub=0 psub=0 ssub=0 \
         multi={} watch={} qbuf={} qbuf-free={} argv-mem=0 multi-mem={} rbs={} rbp={} obl=0 oll=0 \
         omem={} tot-mem={} events=r cmd={} user=default redir=-1 resp={} lib-name={} lib-ver={}\n",
        client.id,
        client.addr,
        client.laddr,
        client.fd,
        text(&meta.name),
        client.age_secs(),
        if me.is_some() { 0 } else { client.idle_secs() },
        meta.multi,
        meta.watch,
        buffers.input_len,
        buffers.input_capacity.saturating_sub(buffers.input_len),
        client.multi_mem(),
        buffers.input_capacity,
        buffers.input_capacity,
        buffers.output_len,
        client.counted(),
        meta.last_command,
        meta.resp,
        text(&meta.lib_name),
        text(&meta.lib_ver),
    )
}

/// What `CLIENT KILL`'s filters select.
#[derive(Default)]
struct Filter {
    id: Option<u64>,
    addr: Option<Bytes>,
    laddr: Option<Bytes>,
    max_age: Option<u64>,
    /// `TYPE` other than `normal`, or a `USER` other than `default`: matches nobody.
    nobody: bool,
    skip_me: bool,
}

/// `CLIENT KILL addr:port` (the old form: `OK`, or `ERR No such client`) and `CLIENT KILL
/// [ID id] [ADDR ip:port] [LADDR ip:port] [TYPE type] [USER name] [MAXAGE secs] [SKIPME
/// yes|no]` (how many were killed). The client killing itself gets its reply first.
fn kill(call: &mut Call<'_>) -> Executed {
    let args = &call.args[2..];
    let old_form = args.len() == 1;
    let filter = if old_form {
        Filter {
            addr: Some(args[0].clone()),
            ..Filter::default()
        }
    } else {
        match parse_filter(args) {
            Ok(filter) => filter,
            Err(reply) => return Executed::reply(reply),
        }
    };
    let mut killed = 0;
    let mut me_too = false;
    for client in call.shared.clients().all() {
        let me = client.id == call.session.id;
        if filter.nobody || (me && filter.skip_me && !old_form) || !matches(&filter, &client) {
            continue;
        }
        killed += 1;
        if me {
            me_too = true;
        } else {
            client.kill();
        }
    }
    let reply = match (old_form, killed) {
        (true, 0) => Reply::error("ERR No such client"),
        (true, _) => Reply::Ok,
        (false, n) => Reply::Integer(n),
    };
    if me_too {
        Executed::closing(Some(reply))
    } else {
        Executed::reply(reply)
    }
}

fn parse_filter(args: &[Bytes]) -> Result<Filter, Reply> {
    let mut filter = Filter {
        skip_me: true,
        ..Filter::default()
    };
    if args.is_empty() || !args.len().is_multiple_of(2) {
        return Err(syntax_error());
    }
    for pair in args.chunks(2) {
        let (word, value) = (&pair[0], &pair[1]);
        if is_word(word, "ID") {
            match parse_i64(value) {
                Some(id) if id > 0 => filter.id = Some(id as u64),
                _ => return Err(Reply::error("ERR client-id should be greater than 0")),
            }
        } else if is_word(word, "ADDR") {
            filter.addr = Some(value.clone());
        } else if is_word(word, "LADDR") {
            filter.laddr = Some(value.clone());
        } else if is_word(word, "TYPE") {
            if is_word(value, "normal") {
            } else if ["master", "replica", "slave", "pubsub"]
                .iter()
                .any(|k| is_word(value, k))
            {
                filter.nobody = true;
            } else {
                return Err(unknown_client_type(value));
            }
        } else if is_word(word, "USER") {
            if !is_word(value, "default") {
                return Err(Reply::Error(format!(
                    "ERR No such user '{}'",
                    String::from_utf8_lossy(value)
                )));
            }
        } else if is_word(word, "SKIPME") {
            filter.skip_me = if is_word(value, "yes") {
                true
            } else if is_word(value, "no") {
                false
            } else {
                return Err(syntax_error());
            };
        } else if is_word(word, "MAXAGE") {
            match parse_i64(value) {
                Some(secs) if secs >= 0 => filter.max_age = Some(secs as u64),
                _ => return Err(syntax_error()),
            }
        } else {
            return Err(syntax_error());
        }
    }
    Ok(filter)
}

fn matches(filter: &Filter, client: &ClientInfo) -> bool {
    filter.id.is_none_or(|id| id == client.id)
        && filter
            .addr
            .as_ref()
            .is_none_or(|addr| addr[..] == *client.addr.as_bytes())
        && filter
            .laddr
            .as_ref()
            .is_none_or(|addr| addr[..] == *client.laddr.as_bytes())
        // Redis's MAXAGE kills the clients older than it.
        && filter.max_age.is_none_or(|age| client.age_secs() > age)
}
