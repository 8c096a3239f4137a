//! What an operator sees of the real `bloomkit serve`: its log (times, levels, start-up,
//! loading, shutdown, `--loglevel`, `--logfile`, repeated errors rate-limited) and its
//! configuration file (`--config`, `CONFIG REWRITE`).

use crate::common;

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use assert_cmd::cargo::cargo_bin_cmd;
use bloomkit_testkit::{Conn, Resp};
use common::served::{connect, log_line, problems, serve};

/// The messages of the notices in `stderr`, in order.
fn notices(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter_map(log_line)
        .filter(|(mark, _)| *mark == '*')
        .map(|(_, message)| message.to_string())
        .collect()
}

fn bulk_text(reply: Resp) -> String {
    match reply {
        Resp::Bulk(bytes) => String::from_utf8(bytes).unwrap(),
        other => panic!("not a bulk string: {other:?}"),
    }
}

#[test]
fn the_log_says_what_started_what_was_loaded_and_why_it_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), &[]);
    let mut client = server.client();
    assert_eq!(client.cmd(&["BF.ADD", "a", "x"]), Resp::Int(1));
    assert_eq!(client.cmd(&["CF.ADD", "b", "y"]), Resp::Int(1));
    drop(client);
    let first = server.shutdown(&[]);
    let snapshot = std::fs::metadata(dir.path().join("dump.bks"))
        .unwrap()
        .len();

    let server = serve(dir.path(), &[]);
    let addr = server.addr.clone();
    let second = server.shutdown(&["NOSAVE"]);
    for line in first.lines().chain(second.lines()) {
        assert!(log_line(line).is_some(), "not a log line: {line:?}");
    }
    let pid_of = |text: &str| text.split(':').next().unwrap().to_string();
    assert_ne!(pid_of(&first), pid_of(&second));

    let first = notices(&first);
    assert!(
        first.iter().any(|l| l.starts_with(&format!(
            "Final snapshot saved: 2 keys, {snapshot} bytes in dump.bks, in "
        ))),
        "{first:#?}"
    );
    let second = notices(&second);
    let version = env!("CARGO_PKG_VERSION");
    assert!(
        second[0].starts_with(&format!(
            "bloomkit {version} starting (Redis 8.0.0 behaviour), pid "
        )),
        "{second:#?}"
    );
    assert_eq!(
        second[1],
        format!(
            "data directory {}, appendfsync everysec; no maxmemory; maxclients 10000; no password",
            dir.path().display()
        )
    );
    assert!(
        second[2].starts_with(&format!("Loaded 2 keys from {} in ", dir.path().display()))
            && second[2].contains(&format!(": snapshot {snapshot} bytes, 1 log file of "))
            && second[2].ends_with("(0 commands replayed)"),
        "{}",
        second[2]
    );
    assert_eq!(second[3], format!("Ready to accept connections on {addr}"));
    assert!(
        second[4].starts_with("Shutting down: SHUTDOWN from a client; ")
            && second[4].ends_with(" clients connected, 2 keys; no final snapshot (NOSAVE)"),
        "{}",
        second[4]
    );
    assert_eq!(
        second.last().unwrap(),
        "bloomkit is now ready to exit, bye bye..."
    );
}

#[cfg(unix)]
#[test]
fn a_signal_is_logged_as_the_reason_to_stop() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), &[]);
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &server.child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let (status, stderr) = server.wait_exit();
    assert!(status.success(), "{status}");
    let notices = notices(&stderr);
    assert!(
        notices.contains(&"Received SIGTERM, scheduling shutdown".to_string()),
        "{notices:#?}"
    );
    assert!(notices
        .iter()
        .any(|l| l.starts_with("Shutting down: asked to stop (a signal);")));
}

#[test]
fn loglevel_and_logfile_choose_what_is_written_and_where() {
    let dir = tempfile::tempdir().unwrap();
    let quiet = serve(dir.path(), &["--loglevel", "warning"]);
    assert_eq!(quiet.shutdown(&["NOSAVE"]), "", "no warnings, no notices");

    let log = dir.path().join("server.log");
    let logged = serve(dir.path(), &["--logfile", log.to_str().unwrap()]);
    let mut client = logged.client();
    assert_eq!(
        client.cmd(&["CONFIG", "GET", "logfile"]),
        Resp::Array(vec![
            Resp::Bulk(b"logfile".to_vec()),
            Resp::Bulk(log.to_str().unwrap().as_bytes().to_vec()),
        ])
    );
    assert_eq!(
        client.cmd(&["CONFIG", "SET", "loglevel", "warning"]),
        Resp::ok()
    );
    drop(client);
    assert_eq!(
        logged.shutdown(&["NOSAVE"]),
        "",
        "nothing on standard error"
    );
    let text = std::fs::read_to_string(&log).unwrap();
    let written = notices(&text);
    assert!(written[0].starts_with("bloomkit "), "{text}");
    assert!(written
        .iter()
        .any(|l| l.starts_with("Ready to accept connections")));
    // Past CONFIG SET loglevel warning, the shutdown's notices are not written.
    assert!(
        !written.iter().any(|l| l.starts_with("Shutting down")),
        "{text}"
    );

    cargo_bin_cmd!("bloomkit")
        .args(["serve", "--port", "0", "--loglevel", "loud"])
        .assert()
        .failure();
}

#[test]
fn a_refusal_repeated_per_request_is_logged_once_per_window() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), &[]);
    let mut admin = server.client();
    assert_eq!(
        admin.cmd(&["CONFIG", "SET", "client-query-buffer-limit", "1mb"]),
        Resp::ok()
    );
    for _ in 0..40 {
        let mut stream = connect(&server.addr);
        stream
            .write_all(b"*2\r\n$4\r\nECHO\r\n$2000000\r\n")
            .unwrap();
        let mut reply = Vec::new();
        std::io::Read::read_to_end(&mut stream, &mut reply).unwrap();
        assert!(reply.starts_with(
            b"-ERR Protocol error: the request is larger than client-query-buffer-limit"
        ));
    }
    drop(admin);
    let stderr = problems(&server.shutdown(&["NOSAVE"]));
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("passes client-query-buffer-limit (1048576 bytes)"),
        "{stderr}"
    );
}

fn write(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
}

#[test]
fn a_config_file_sets_options_and_config_rewrite_writes_the_running_ones_back() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("bloomkit.conf");
    let data = dir.path().join("data");
    write(
        &conf,
        "# A server for the tests.\n\
         maxmemory 10mb\n\
         maxmemory-policy allkeys-lru\n\
         \n\
         # Kept as written: Redis options this server does not use.\n\
         save 900 1\n\
         slowlog-max-len 64\n\
         client-output-buffer-limit normal 0 0 0\n",
    );
    let server = serve(&data, &["--config", conf.to_str().unwrap()]);
    let mut client = server.client();
    let get = |client: &mut Conn, name: &str| match client.cmd(&["CONFIG", "GET", name]) {
        Resp::Array(pair) => match &pair[1] {
            Resp::Bulk(value) => String::from_utf8(value.clone()).unwrap(),
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    };
    assert_eq!(get(&mut client, "maxmemory"), "10485760");
    assert_eq!(get(&mut client, "maxmemory-policy"), "allkeys-lru");
    assert_eq!(get(&mut client, "slowlog-max-len"), "64");
    assert!(get(&mut client, "client-output-buffer-limit").starts_with("normal 0 0 0 "));
    assert_eq!(
        client.cmd(&["CONFIG", "SET", "slowlog-max-len", "32"]),
        Resp::ok()
    );
    assert_eq!(
        client.cmd(&["CONFIG", "SET", "bf-error-rate", "0.001"]),
        Resp::ok()
    );
    assert_eq!(client.cmd(&["CONFIG", "REWRITE"]), Resp::ok());
    let rewritten = std::fs::read_to_string(&conf).unwrap();
    assert_eq!(
        rewritten,
        format!(
            "# A server for the tests.\n\
             maxmemory 10485760\n\
             maxmemory-policy allkeys-lru\n\
             \n\
             # Kept as written: Redis options this server does not use.\n\
             save 900 1\n\
             slowlog-max-len 32\n\
             client-output-buffer-limit normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60\n\
             # Generated by CONFIG REWRITE\n\
             port 0\n\
             dir {}\n\
             bf-error-rate 0.001\n",
            data.display()
        )
    );
    drop(client);
    server.shutdown(&["NOSAVE"]);

    // The rewritten file starts the same server again.
    let server = serve(&data, &["--config", conf.to_str().unwrap()]);
    let mut client = server.client();
    assert_eq!(get(&mut client, "bf-error-rate"), "0.001");
    assert_eq!(get(&mut client, "slowlog-max-len"), "32");
    drop(client);
    let stderr = server.shutdown(&["NOSAVE"]);
    assert!(notices(&stderr).contains(&format!("Configuration loaded from {}", conf.display())));
}

#[test]
fn a_bad_config_file_stops_start_up_naming_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("bloomkit.conf");
    write(&conf, "port 0\n# fine so far\nmaxmemory-samples lots\n");
    let output = cargo_bin_cmd!("bloomkit")
        .args(["serve", "--config"])
        .arg(&conf)
        .args(["--dir"])
        .arg(dir.path())
        .timeout(Duration::from_secs(20))
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(
        stderr,
        format!(
            "bloomkit: {}: line 3 ('maxmemory-samples lots'): argument couldn't be parsed into an integer\n",
            conf.display()
        )
    );
    write(&conf, "nosuch-option 1\n");
    let output = cargo_bin_cmd!("bloomkit")
        .args(["serve", "--config"])
        .arg(&conf)
        .output()
        .unwrap();
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.contains("line 1 ('nosuch-option 1'): unknown option 'nosuch-option'"),
        "{stderr}"
    );
}

#[test]
fn client_list_and_info_through_the_binary() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), &[]);
    let mut client = server.client();
    let list = bulk_text(client.cmd(&["CLIENT", "LIST"]));
    assert!(
        list.starts_with("id=") && list.contains(" fd=") && list.ends_with('\n'),
        "{list}"
    );
    let info = bulk_text(client.cmd(&["INFO", "clients"]));
    assert!(info.contains("client_recent_max_input_buffer:"), "{info}");
    drop(client);
    server.shutdown(&["NOSAVE"]);
}
