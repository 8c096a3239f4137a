//! The dispatcher without a network: requests in, exact replies out.

use bloomkit::{CuckooFilter, ScalableBloomFilter};
use bloomkit_commands::{Protocol, Value};

use super::*;
use crate::config::Config;
use crate::keyspace::NoJournal;

fn shared_with(config: Config) -> Arc<Shared> {
    let shared = Arc::new(Shared::new(config, 6379));
    shared.keyspace().finish_loading(Arc::new(NoJournal));
    shared
}

fn shared() -> Arc<Shared> {
    shared_with(Config::default())
}

fn request(words: &[&str]) -> Vec<Bytes> {
    words.iter().map(|w| Bytes::from(w.to_string())).collect()
}

fn call(shared: &Arc<Shared>, session: &mut Session, words: &[&str]) -> Reply {
    run(shared, session, &request(words))
        .reply
        .expect("a reply")
}

fn err(text: &str) -> Reply {
    Reply::error(text)
}

fn int(n: i64) -> Reply {
    Reply::Integer(n)
}

fn bulk(text: &str) -> Reply {
    Reply::bulk(text.to_string())
}

fn simple(text: &str) -> Reply {
    Reply::Simple(text.to_string())
}

fn seed(shared: &Shared, name: &str, cuckoo: bool) {
    let value = if cuckoo {
        Value::Cuckoo(CuckooFilter::redisbloom_builder(1024).build().unwrap())
    } else {
        Value::Bloom(ScalableBloomFilter::new(100, 0.01).unwrap())
    };
    shared
        .keyspace()
        .restore(Bytes::from(name.to_string()), None, value);
}

#[test]
fn unknown_commands_in_redis_7_words() {
    let shared = shared();
    let mut s = Session::new(&shared);
    assert_eq!(
        call(&shared, &mut s, &["foo", "a", "b"]),
        err("ERR unknown command 'foo', with args beginning with: 'a' 'b' ")
    );
    assert_eq!(
        call(&shared, &mut s, &["FOO"]),
        err("ERR unknown command 'FOO', with args beginning with: ")
    );
    assert_eq!(
        call(&shared, &mut s, &["bf.nosuch", "k"]),
        err("ERR unknown command 'bf.nosuch', with args beginning with: 'k' ")
    );
    // At most 128 bytes of arguments are quoted; CR and LF become spaces.
    let long = "x".repeat(200);
    let Reply::Error(text) = call(&shared, &mut s, &["foo", &long, "next"]) else {
        panic!()
    };
    assert_eq!(
        text,
        format!(
            "ERR unknown command 'foo', with args beginning with: '{}' ",
            "x".repeat(128)
        )
    );
    assert_eq!(
        call(&shared, &mut s, &["a\r\nb"]),
        err("ERR unknown command 'a  b', with args beginning with: ")
    );
    assert_eq!(
        run(&shared, &mut s, &[]).reply,
        None,
        "an empty request is ignored"
    );
}

#[test]
fn arity_is_checked_before_the_command_runs() {
    let shared = shared();
    let mut s = Session::new(&shared);
    assert_eq!(
        call(&shared, &mut s, &["ECHO"]),
        err("ERR wrong number of arguments for 'echo' command")
    );
    assert_eq!(
        call(&shared, &mut s, &["ping", "a", "b"]),
        err("ERR wrong number of arguments for 'ping' command")
    );
    assert_eq!(
        call(&shared, &mut s, &["client"]),
        err("ERR wrong number of arguments for 'client' command")
    );
    assert_eq!(
        call(&shared, &mut s, &["client", "setname"]),
        err("ERR wrong number of arguments for 'client|setname' command")
    );
    assert_eq!(
        call(&shared, &mut s, &["client", "nope"]),
        err("ERR unknown subcommand 'nope'. Try CLIENT HELP.")
    );
    assert_eq!(
        call(&shared, &mut s, &["config", "set", "maxmemory"]),
        err("ERR wrong number of arguments for 'config|set' command")
    );
}

#[test]
fn ping_echo_select_quit() {
    let shared = shared();
    let mut s = Session::new(&shared);
    assert_eq!(call(&shared, &mut s, &["PING"]), simple("PONG"));
    assert_eq!(call(&shared, &mut s, &["ping", "hi"]), bulk("hi"));
    assert_eq!(call(&shared, &mut s, &["echo", "a b"]), bulk("a b"));
    assert_eq!(call(&shared, &mut s, &["select", "0"]), Reply::Ok);
    assert_eq!(
        call(&shared, &mut s, &["select", "1"]),
        err("ERR DB index is out of range")
    );
    assert_eq!(
        call(&shared, &mut s, &["select", "one"]),
        err("ERR value is not an integer or out of range")
    );
    let quit = run(&shared, &mut s, &request(&["QUIT"]));
    assert_eq!((quit.reply, quit.close), (Some(Reply::Ok), true));
}

#[test]
fn requirepass_gates_everything_but_auth_hello_quit() {
    let shared = shared_with(Config {
        requirepass: Some("s3cret".into()),
        ..Config::default()
    });
    let mut s = Session::new(&shared);
    let noauth = err("NOAUTH Authentication required.");
    assert_eq!(call(&shared, &mut s, &["PING"]), noauth);
    assert_eq!(call(&shared, &mut s, &["DEL", "k"]), noauth);
    assert_eq!(call(&shared, &mut s, &["CONFIG", "GET", "*"]), noauth);
    // Unknown commands and wrong arity are refused before authentication, as in Redis.
    assert_eq!(
        call(&shared, &mut s, &["nope"]),
        err("ERR unknown command 'nope', with args beginning with: ")
    );
    assert_eq!(
        call(&shared, &mut s, &["HELLO", "3"]),
        err("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time")
    );
    assert_eq!(
        s.protocol,
        Protocol::Resp2,
        "a refused HELLO changes nothing"
    );
    let wrongpass = err("WRONGPASS invalid username-password pair or user is disabled.");
    assert_eq!(call(&shared, &mut s, &["AUTH", "guess"]), wrongpass);
    assert_eq!(
        call(&shared, &mut s, &["AUTH", "admin", "s3cret"]),
        wrongpass
    );
    assert_eq!(call(&shared, &mut s, &["PING"]), noauth);
    assert_eq!(call(&shared, &mut s, &["AUTH", "s3cret"]), Reply::Ok);
    assert_eq!(call(&shared, &mut s, &["PING"]), simple("PONG"));

    let mut other = Session::new(&shared);
    assert_eq!(
        call(&shared, &mut other, &["AUTH", "default", "s3cret"]),
        Reply::Ok
    );
    let mut third = Session::new(&shared);
    let Reply::Map(fields) = call(
        &shared,
        &mut third,
        &["HELLO", "3", "AUTH", "default", "s3cret", "SETNAME", "app"],
    ) else {
        panic!("HELLO answers a map")
    };
    assert_eq!(fields[2], (bulk("proto"), int(3)));
    assert!(third.authenticated);
    assert_eq!(third.protocol, Protocol::Resp3);
    assert_eq!(
        call(&shared, &mut third, &["CLIENT", "GETNAME"]),
        bulk("app")
    );
    let quit = run(&shared, &mut Session::new(&shared), &request(&["QUIT"]));
    assert_eq!(quit.reply, Some(Reply::Ok));
}

#[test]
fn auth_without_requirepass() {
    let shared = shared();
    let mut s = Session::new(&shared);
    assert_eq!(
        call(&shared, &mut s, &["AUTH", "x"]),
        err("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?")
    );
    assert_eq!(
        call(&shared, &mut s, &["AUTH", "default", "anything"]),
        Reply::Ok
    );
    assert_eq!(
        call(&shared, &mut s, &["AUTH", "bob", "x"]),
        err("WRONGPASS invalid username-password pair or user is disabled.")
    );
    assert_eq!(
        call(&shared, &mut s, &["AUTH", "a", "b", "c"]),
        err("ERR syntax error")
    );
}

#[test]
fn hello_switches_protocol_and_describes_the_server() {
    let shared = shared();
    let mut s = Session::new(&shared);
    let id = s.id as i64;
    assert_eq!(
        call(&shared, &mut s, &["HELLO"]),
        Reply::Map(vec![
            (bulk("server"), bulk("redis")),
            (bulk("version"), bulk("8.0.0")),
            (bulk("proto"), int(2)),
            (bulk("id"), int(id)),
            (bulk("mode"), bulk("standalone")),
            (bulk("role"), bulk("master")),
            (
                bulk("modules"),
                Reply::Array(vec![Reply::Map(vec![
                    (bulk("name"), bulk("bf")),
                    (bulk("ver"), int(80000)),
                    (bulk("path"), bulk("")),
                    (bulk("args"), Reply::Array(vec![])),
                ])])
            ),
        ])
    );
    call(&shared, &mut s, &["hello", "3"]);
    assert_eq!(s.protocol, Protocol::Resp3);
    call(&shared, &mut s, &["hello", "2"]);
    assert_eq!(s.protocol, Protocol::Resp2);
    assert_eq!(
        call(&shared, &mut s, &["HELLO", "three"]),
        err("ERR Protocol version is not an integer or out of range")
    );
    assert_eq!(
        call(&shared, &mut s, &["HELLO", "4"]),
        err("NOPROTO unsupported protocol version")
    );
    assert_eq!(
        call(&shared, &mut s, &["HELLO", "3", "FOO"]),
        err("ERR Syntax error in HELLO option 'FOO'")
    );
    assert_eq!(
        call(&shared, &mut s, &["HELLO", "3", "AUTH", "default"]),
        err("ERR Syntax error in HELLO option 'AUTH'")
    );
    assert_eq!(
        call(&shared, &mut s, &["HELLO", "3", "SETNAME", "a b"]),
        err("ERR Client names cannot contain spaces, newlines or special characters.")
    );
    assert_eq!(s.protocol, Protocol::Resp2, "refused HELLOs change nothing");
}

#[test]
fn client_subcommands() {
    let shared = shared();
    let mut s = Session::new(&shared);
    assert_eq!(call(&shared, &mut s, &["CLIENT", "ID"]), int(s.id as i64));
    assert_eq!(call(&shared, &mut s, &["CLIENT", "GETNAME"]), Reply::Null);
    assert_eq!(
        call(&shared, &mut s, &["CLIENT", "SETNAME", "worker-1"]),
        Reply::Ok
    );
    assert_eq!(
        call(&shared, &mut s, &["client", "getname"]),
        bulk("worker-1")
    );
    assert_eq!(
        call(&shared, &mut s, &["CLIENT", "SETNAME", "has space"]),
        err("ERR Client names cannot contain spaces, newlines or special characters.")
    );
    assert_eq!(call(&shared, &mut s, &["CLIENT", "SETNAME", ""]), Reply::Ok);
    assert_eq!(call(&shared, &mut s, &["CLIENT", "GETNAME"]), Reply::Null);
    assert_eq!(
        call(
            &shared,
            &mut s,
            &["CLIENT", "SETINFO", "LIB-NAME", "redis-py"]
        ),
        Reply::Ok
    );
    assert_eq!(s.lib_name, Some(Bytes::from_static(b"redis-py")));
    assert_eq!(
        call(&shared, &mut s, &["CLIENT", "SETINFO", "lib-ver", "5 0"]),
        err("ERR lib-ver cannot contain spaces, newlines or special characters.")
    );
    assert_eq!(
        call(&shared, &mut s, &["CLIENT", "SETINFO", "color", "red"]),
        err("ERR Unrecognized option 'color'")
    );
    let other = Session::new(&shared);
    assert_ne!(other.id, s.id);
}

#[test]
fn key_commands_and_their_errors() {
    let shared = shared();
    let mut s = Session::new(&shared);
    seed(&shared, "bf", false);
    seed(&shared, "cf", true);
    seed(&shared, "other", false);
    assert_eq!(call(&shared, &mut s, &["DBSIZE"]), int(3));
    assert_eq!(call(&shared, &mut s, &["TYPE", "bf"]), simple("MBbloom--"));
    assert_eq!(call(&shared, &mut s, &["TYPE", "cf"]), simple("MBbloomCF"));
    assert_eq!(call(&shared, &mut s, &["TYPE", "nope"]), simple("none"));
    assert_eq!(
        call(&shared, &mut s, &["EXISTS", "bf", "cf", "nope", "bf"]),
        int(3)
    );
    assert_eq!(
        sorted(call(&shared, &mut s, &["KEYS", "?f"])),
        Reply::Array(vec![bulk("bf"), bulk("cf")])
    );

    assert_eq!(
        call(&shared, &mut s, &["SCAN", "x"]),
        err("ERR invalid cursor")
    );
    assert_eq!(
        call(&shared, &mut s, &["SCAN", "0", "COUNT", "0"]),
        err("ERR syntax error")
    );
    assert_eq!(
        call(&shared, &mut s, &["SCAN", "0", "COUNT", "x"]),
        err("ERR value is not an integer or out of range")
    );
    assert_eq!(
        call(&shared, &mut s, &["SCAN", "0", "MATCH"]),
        err("ERR syntax error")
    );
    assert_eq!(
        call(
            &shared,
            &mut s,
            &["SCAN", "0", "COUNT", "1000", "TYPE", "MBbloomCF"]
        ),
        Reply::Array(vec![bulk("0"), Reply::Array(vec![bulk("cf")])])
    );

    assert_eq!(
        call(&shared, &mut s, &["RENAME", "other", "moved"]),
        Reply::Ok
    );
    assert_eq!(
        call(&shared, &mut s, &["RENAME", "other", "moved"]),
        err("ERR no such key")
    );
    assert_eq!(call(&shared, &mut s, &["DEL", "moved", "nope"]), int(1));
    assert_eq!(call(&shared, &mut s, &["UNLINK", "moved"]), int(0));

    assert_eq!(call(&shared, &mut s, &["TTL", "bf"]), int(-1));
    assert_eq!(call(&shared, &mut s, &["PTTL", "nope"]), int(-2));
    assert_eq!(call(&shared, &mut s, &["EXPIRE", "bf", "100"]), int(1));
    assert_eq!(call(&shared, &mut s, &["TTL", "bf"]), int(100));
    let Reply::Integer(pttl) = call(&shared, &mut s, &["PTTL", "bf"]) else {
        panic!()
    };
    assert!((99_000..=100_000).contains(&pttl));
    assert_eq!(call(&shared, &mut s, &["EXPIRE", "bf", "50", "GT"]), int(0));
    assert_eq!(call(&shared, &mut s, &["EXPIRE", "bf", "50", "LT"]), int(1));
    assert_eq!(
        call(&shared, &mut s, &["EXPIRE", "bf", "500", "NX"]),
        int(0)
    );
    assert_eq!(call(&shared, &mut s, &["PERSIST", "bf"]), int(1));
    assert_eq!(call(&shared, &mut s, &["PERSIST", "bf"]), int(0));
    assert_eq!(call(&shared, &mut s, &["EXPIRE", "nope", "10"]), int(0));
    assert_eq!(
        call(&shared, &mut s, &["EXPIRE", "bf", "ten"]),
        err("ERR value is not an integer or out of range")
    );
    assert_eq!(
        call(&shared, &mut s, &["EXPIRE", "bf", "10", "SOON"]),
        err("ERR Unsupported option SOON")
    );
    assert_eq!(
        call(&shared, &mut s, &["EXPIRE", "bf", "10", "NX", "XX"]),
        err("ERR NX and XX, GT or LT options at the same time are not compatible")
    );
    assert_eq!(
        call(&shared, &mut s, &["PEXPIRE", "bf", "10", "GT", "LT"]),
        err("ERR GT and LT options at the same time are not compatible")
    );
    assert_eq!(
        call(&shared, &mut s, &["EXPIRE", "bf", &i64::MAX.to_string()]),
        err("ERR invalid expire time in 'expire' command")
    );
    let at = crate::keyspace::now_ms() / 1000 + 1000;
    assert_eq!(
        call(&shared, &mut s, &["EXPIREAT", "bf", &at.to_string()]),
        int(1)
    );
    assert!(matches!(
        call(&shared, &mut s, &["TTL", "bf"]),
        Reply::Integer(999 | 1000)
    ));
    // A time already past deletes the key.
    assert_eq!(call(&shared, &mut s, &["PEXPIREAT", "bf", "1"]), int(1));
    assert_eq!(call(&shared, &mut s, &["EXISTS", "bf"]), int(0));

    assert_eq!(
        call(&shared, &mut s, &["FLUSHALL", "LATER"]),
        err("ERR syntax error")
    );
    assert_eq!(call(&shared, &mut s, &["FLUSHDB", "ASYNC"]), Reply::Ok);
    assert_eq!(call(&shared, &mut s, &["DBSIZE"]), int(0));
    assert_eq!(call(&shared, &mut s, &["KEYS", "*"]), Reply::Array(vec![]));
}

/// `KEYS` answers in the maps' order: sorted, to compare.
fn sorted(reply: Reply) -> Reply {
    match reply {
        Reply::Array(mut items) => {
            items.sort_by_key(|item| format!("{item:?}"));
            Reply::Array(items)
        }
        other => other,
    }
}

#[test]
fn config_get_and_set_reach_the_defaults_and_maxmemory() {
    let shared = shared();
    let mut s = Session::new(&shared);
    assert_eq!(
        call(
            &shared,
            &mut s,
            &[
                "CONFIG",
                "SET",
                "bf-error-rate",
                "0.001",
                "maxmemory",
                "10mb"
            ]
        ),
        Reply::Ok
    );
    assert_eq!(shared.settings().defaults().bf_error_rate, 0.001);
    assert_eq!(
        call(
            &shared,
            &mut s,
            &["CONFIG", "GET", "bf-error-rate", "maxmemory"]
        ),
        Reply::Map(vec![
            (bulk("bf-error-rate"), bulk("0.001")),
            (bulk("maxmemory"), bulk("10485760")),
        ])
    );
    let Reply::Bulk(info) = call(&shared, &mut s, &["INFO", "memory"]) else {
        panic!()
    };
    assert!(String::from_utf8_lossy(&info).contains("maxmemory:10485760\r\n"));
    assert_eq!(
        call(&shared, &mut s, &["CONFIG", "SET", "bf-error-rate", "2"]),
        err("ERR CONFIG SET failed (possibly related to argument 'bf-error-rate') - argument must be between 0 and 1 exclusive")
    );
    assert_eq!(
        call(&shared, &mut s, &["CONFIG", "REWRITE"]),
        err("ERR The server is running without a config file")
    );
    assert_eq!(
        call(&shared, &mut s, &["CONFIG", "RESETALL"]),
        err("ERR unknown subcommand 'RESETALL'. Try CONFIG HELP.")
    );
}

#[test]
fn info_sections() {
    let shared = shared();
    let mut s = Session::new(&shared);
    seed(&shared, "k", false);
    let text = |reply: Reply| match reply {
        Reply::Bulk(bytes) => String::from_utf8(bytes.to_vec()).unwrap(),
        other => panic!("{other:?}"),
    };
    let all = text(call(&shared, &mut s, &["INFO"]));
    for header in [
        "# Server\r\n",
        "# Clients\r\n",
        "# Memory\r\n",
        "# Persistence\r\n",
        "# Stats\r\n",
        "# Keyspace\r\n",
    ] {
        assert!(all.contains(header), "{header:?} in {all}");
    }
    assert!(all.contains("redis_version:8.0.0\r\n"));
    assert!(all.contains("tcp_port:6379\r\n"));
    assert!(all.contains("db0:keys=1,expires=0,avg_ttl=0\r\n"));
    assert!(
        all.contains("\r\n\r\n# Clients\r\n"),
        "sections apart by a blank line"
    );
    let keyspace = text(call(&shared, &mut s, &["info", "KEYSPACE"]));
    assert_eq!(keyspace, "# Keyspace\r\ndb0:keys=1,expires=0,avg_ttl=0\r\n");
    let two = text(call(&shared, &mut s, &["info", "server", "clients"]));
    assert!(
        two.starts_with("# Server\r\n")
            && two.contains("# Clients\r\n")
            && !two.contains("# Memory")
    );
    assert_eq!(text(call(&shared, &mut s, &["info", "nosuch"])), "");
}

#[test]
fn command_describes_every_command() {
    let shared = shared();
    let mut s = Session::new(&shared);
    let count = table::all().count() as i64;
    assert_eq!(call(&shared, &mut s, &["COMMAND", "COUNT"]), int(count));
    let Reply::Array(all) = call(&shared, &mut s, &["COMMAND"]) else {
        panic!()
    };
    assert_eq!(all.len() as i64, count);
    let Reply::Array(infos) = call(
        &shared,
        &mut s,
        &["COMMAND", "INFO", "get", "del", "bf.add"],
    ) else {
        panic!()
    };
    assert_eq!(infos[0], Reply::NullArray, "unknown commands are nil");
    let Reply::Array(del) = &infos[1] else {
        panic!()
    };
    assert_eq!(del.len(), 10);
    assert_eq!(&del[..2], &[bulk("del"), int(-2)]);
    assert_eq!(&del[3..6], &[int(1), int(-1), int(1)]);
    let Reply::Array(bf_add) = &infos[2] else {
        panic!()
    };
    assert_eq!(&bf_add[..2], &[bulk("bf.add"), int(-1)]);
    let Reply::Map(docs) = call(&shared, &mut s, &["COMMAND", "DOCS", "ping", "nope"]) else {
        panic!()
    };
    assert_eq!(docs.len(), 1);
    assert_eq!(docs[0].0, bulk("ping"));
    let Reply::Array(names) = call(
        &shared,
        &mut s,
        &["COMMAND", "LIST", "FILTERBY", "PATTERN", "cf.*"],
    ) else {
        panic!()
    };
    assert_eq!(names.len(), 14);
    assert_eq!(
        call(&shared, &mut s, &["COMMAND", "GETKEYSANDFLAGS"]),
        err("ERR unknown subcommand 'GETKEYSANDFLAGS'. Try COMMAND HELP.")
    );
}

#[tokio::test]
async fn save_bgsave_and_shutdown() {
    let shared = shared();
    let mut s = Session::new(&shared);
    let saved = execute(&shared, &mut s, &request(&["SAVE"]), false).await;
    assert_eq!(saved.reply, Some(Reply::Ok));
    assert_eq!(
        call(&shared, &mut s, &["BGSAVE"]),
        simple("Background saving started")
    );
    assert_eq!(
        call(&shared, &mut s, &["BGSAVE", "NOW"]),
        err("ERR syntax error")
    );
    assert_eq!(
        call(&shared, &mut s, &["SHUTDOWN", "SAVE", "NOSAVE"]),
        err("ERR syntax error")
    );
    assert_eq!(
        call(&shared, &mut s, &["SHUTDOWN", "ABORT"]),
        err("ERR No shutdown in progress.")
    );
    let signal = shared.shutdown_signal();
    assert_eq!(*signal.borrow(), None);
    let down = run(&shared, &mut s, &request(&["SHUTDOWN", "NOSAVE"]));
    assert_eq!((down.reply, down.close), (None, true));
    assert_eq!(*signal.borrow(), Some(false));
}

#[test]
fn replay_runs_logged_commands_and_refuses_strangers() {
    let shared = Arc::new(Shared::new(Config::default(), 0));
    seed(&shared, "a", false);
    assert_eq!(replay(&shared, &request(&["PEXPIREAT", "a", "1"])), Ok(()));
    assert_eq!(
        shared.keyspace().type_of(b"a"),
        Some("MBbloom--"),
        "nothing expires during replay"
    );
    assert_eq!(replay(&shared, &request(&["RENAME", "a", "b"])), Ok(()));
    assert_eq!(replay(&shared, &request(&["DEL", "b"])), Ok(()));
    assert_eq!(shared.keyspace().len(), 0);
    assert_eq!(
        replay(&shared, &request(&["NOPE"])),
        Err("ERR unknown command 'NOPE', with args beginning with: ".to_string())
    );
}
