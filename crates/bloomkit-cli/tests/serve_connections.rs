//! `bloomkit serve`'s connection options as a real process sees them: the password from a
//! file or the environment (never on the command line), and the open-file limit fitted to
//! `--maxclients` at start-up, so that no client is left hanging in the backlog.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Command;

use assert_cmd::cargo::cargo_bin;
use bloomkit_testkit::resp::request;
use bloomkit_testkit::wait::GENEROUS;
use bloomkit_testkit::{skip, Served};

/// `bloomkit serve --port 0 --dir DIR EXTRA...`, to add to before [`Served::spawn`].
fn serve(dir: &Path, extra: &[&str]) -> Command {
    Served::command(cargo_bin!("bloomkit"), dir, extra)
}

/// A raw connection (one file descriptor: hundreds are held at once below).
fn connect(served: &Served) -> TcpStream {
    let stream = TcpStream::connect(&served.addr).expect("connect");
    stream.set_read_timeout(Some(GENEROUS)).unwrap();
    stream
}

/// Sends `args` and reads one line of reply, as the wire has it.
fn call(stream: &mut TcpStream, args: &[&str]) -> String {
    stream.write_all(&request(args)).unwrap();
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    while !line.ends_with(b"\r\n") {
        match stream.read(&mut byte) {
            Ok(1) => line.push(byte[0]),
            Ok(_) => break,
            Err(e) => panic!("{args:?}: no reply ({e}); so far {line:?}"),
        }
    }
    String::from_utf8_lossy(&line).into_owned()
}

/// The password is asked for, and `AUTH password` lets the client in.
fn assert_requires(served: &Served, password: &str) {
    let mut client = connect(served);
    assert_eq!(
        call(&mut client, &["PING"]),
        "-NOAUTH Authentication required.\r\n"
    );
    assert!(call(&mut client, &["AUTH", "wrong"]).starts_with("-WRONGPASS"));
    assert_eq!(call(&mut client, &["AUTH", password]), "+OK\r\n");
    assert_eq!(call(&mut client, &["PING"]), "+PONG\r\n");
}

#[test]
fn the_password_comes_from_a_file_or_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("password");
    std::fs::write(&file, "s3cret word\n").unwrap();
    let data = dir.path().join("data");
    let mut command = serve(&data, &["--requirepass-file"]);
    command.arg(&file);
    let served = Served::spawn(command);
    assert_requires(&served, "s3cret word");
    drop(served);

    let mut command = serve(&data, &[]);
    command.env("BLOOMKIT_REQUIREPASS", "from env");
    let served = Served::spawn(command);
    assert_requires(&served, "from env");
}

#[test]
fn an_empty_password_from_a_flag_or_the_environment_is_none() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let no_password = "-ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?\r\n";
    for from_env in [false, true] {
        let command = if from_env {
            let mut command = serve(&data, &[]);
            command.env("BLOOMKIT_REQUIREPASS", "");
            command
        } else {
            let mut command = serve(&data, &["--requirepass", ""]);
            command.env_remove("BLOOMKIT_REQUIREPASS");
            command
        };
        let served = Served::spawn(command);
        let mut client = connect(&served);
        assert_eq!(call(&mut client, &["PING"]), "+PONG\r\n");
        assert_eq!(call(&mut client, &["AUTH", ""]), no_password);
        drop(client);
        drop(served);
    }
}

#[test]
fn a_bad_password_file_stops_start_up_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty");
    std::fs::write(&empty, "\n").unwrap();
    let missing = dir.path().join("missing");
    for (file, says) in [
        (&empty, "is empty"),
        (&missing, "reading the password file"),
    ] {
        let output = serve(&dir.path().join("data"), &["--requirepass-file"])
            .arg(file)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        assert!(output.stdout.is_empty());
        assert!(
            stderr.contains(says) && stderr.contains(&file.display().to_string()),
            "{stderr}"
        );
        assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    }
    // Both ways at once is a mistake, not a choice between them.
    let output = serve(&dir.path().join("data"), &["--requirepass", "a"])
        .arg("--requirepass-file")
        .arg(&empty)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("cannot be used with"));
}

/// `bloomkit serve --port 0 --dir DIR EXTRA...` under `sh -c 'ulimit LIMIT && exec ...'`.
fn serve_with_ulimit(dir: &Path, limit: &str, extra: &[&str]) -> Command {
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg(format!("ulimit {limit} && exec \"$0\" \"$@\""))
        .arg(cargo_bin!("bloomkit"))
        .args(["serve", "--port", "0", "--dir"])
        .arg(dir)
        .args(extra);
    command
}

/// Opens `clients` connections at once, each sending `PING`, and counts the `PONG`s and
/// the refusals; any other answer, or none within the read timeout, fails.
fn served_and_refused(served: &Served, clients: usize) -> (usize, usize) {
    let mut open = Vec::with_capacity(clients);
    let (mut pongs, mut refused) = (0, 0);
    for _ in 0..clients {
        let mut stream = connect(served);
        match call(&mut stream, &["PING"]).as_str() {
            "+PONG\r\n" => pongs += 1,
            "-ERR max number of clients reached\r\n" => refused += 1,
            other => panic!("client {}: {other:?}", open.len()),
        }
        // Kept open, so that each holds its slot.
        open.push(stream);
    }
    (pongs, refused)
}

#[cfg(unix)]
#[test]
fn a_low_open_file_limit_lowers_maxclients_and_every_client_gets_an_answer() {
    let dir = tempfile::tempdir().unwrap();
    // Soft and hard limit 256: nothing to raise, so maxclients comes down to 256 - 32.
    let served = Served::spawn(serve_with_ulimit(dir.path(), "-n 256", &[]));
    assert_eq!(served_and_refused(&served, 372), (224, 148));
    let stderr = served.kill();
    assert!(
        stderr.contains("maxclients has been reduced to 224")
            && stderr.contains("increase 'ulimit -n'"),
        "{stderr}"
    );
}

#[cfg(unix)]
#[test]
fn a_low_soft_open_file_limit_is_raised_to_fit_maxclients() {
    let dir = tempfile::tempdir().unwrap();
    let hard = String::from_utf8(
        Command::new("sh")
            .args(["-c", "ulimit -H -n"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let raisable = hard.trim() == "unlimited" || hard.trim().parse::<u64>().unwrap() >= 432;
    if !skip::holds(
        raisable,
        &format!(
            "a hard open-file limit of at least 432 (it is {}; raise `ulimit -H -n`)",
            hard.trim()
        ),
    ) {
        return;
    }
    let served = Served::spawn(serve_with_ulimit(
        dir.path(),
        "-S -n 256",
        &["--maxclients", "400"],
    ));
    assert_eq!(served_and_refused(&served, 372), (372, 0));
    let stderr = served.kill();
    assert!(
        stderr.contains(
            "increased maximum number of open files to 432 (it was originally set to 256)"
        ),
        "{stderr}"
    );
}
