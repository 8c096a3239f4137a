//! The options table ties every place an option appears: the flags, the config file,
//! `CONFIG GET|SET|REWRITE`, `INFO` and docs/SERVER.md's flag table all give and take the
//! same options with the same values.

use crate::common;

use std::path::Path;

use bloomkit_server::config::{Config, Given};
use bloomkit_server::options::{flag_table, Directive};
use bloomkit_server::server::Server;
use common::TestServer;

/// For every option, a value other than its default (the flag's and the file's), and what
/// `CONFIG GET` then answers (`None`: not answered, or not comparable in this process).
/// Checked below to name exactly the options of the table, so a new option must be added
/// here, and so be tested in every place.
fn samples(dir: &Path) -> Vec<(&'static str, String, Option<String>)> {
    let same = |v: &str| (v.to_string(), Some(v.to_string()));
    let dir = dir.display().to_string();
    let rows: Vec<(&str, (String, Option<String>))> = vec![
        // Loopback, as a test server must be, but not the default's words.
        ("bind", same("localhost")),
        ("port", same("0")),
        ("dir", (dir.clone(), Some(dir))),
        ("appendfsync", same("always")),
        ("requirepass", ("s3cret".into(), None)),
        ("requirepass-file", ("".into(), None)),
        ("protected-mode", same("no")),
        ("timeout", same("30")),
        ("maxclients", same("100")),
        ("maxmemory", ("10mb".into(), Some("10485760".into()))),
        ("maxmemory-policy", same("allkeys-lfu")),
        ("maxmemory-samples", same("7")),
        ("client-query-buffer-limit", ("2mb".into(), Some("2097152".into()))),
        (
            "client-output-buffer-limit",
            (
                "normal 1mb 512kb 10".into(),
                Some(
                    "normal 1048576 524288 10 slave 268435456 67108864 60 pubsub 33554432 8388608 60"
                        .into(),
                ),
            ),
        ),
        ("slowlog-log-slower-than", same("500")),
        ("slowlog-max-len", same("16")),
        ("loglevel", same("warning")),
        // The log file is the process's, which an in-process server does not open.
        ("logfile", ("".into(), None)),
        ("enable-debug-command", same("yes")),
        ("threads", ("2".into(), None)),
        ("config", ("".into(), None)),
        ("appendonly", ("no".into(), Some("yes".into()))),
        ("save", ("900 1".into(), Some(String::new()))),
        ("databases", ("16".into(), Some("1".into()))),
        ("bf-error-rate", same("0.001")),
        ("bf-initial-size", same("200")),
        ("bf-expansion-factor", same("4")),
        ("cf-bucket-size", same("4")),
        ("cf-initial-size", same("2048")),
        ("cf-max-iterations", same("30")),
        ("cf-expansion-factor", same("2")),
        ("cf-max-expansions", same("64")),
        ("bf-layout", same("blocked")),
        ("af-error-rate", same("0.02")),
        ("af-capacity", same("5000")),
        ("af-generations", same("4")),
        ("af-period", same("60")),
    ];
    rows.into_iter()
        .map(|(name, (value, get))| (name, value, get))
        .collect()
}

fn flags(samples: &[(&'static str, String, Option<String>)]) -> Vec<Given> {
    samples
        .iter()
        .filter(|(_, value, _)| !value.is_empty())
        .map(|(name, value, _)| Given {
            name: name.to_string(),
            value: value.clone(),
            from_env: false,
        })
        .collect()
}

/// A config file line: the name, then the value quoted.
fn line(name: &str, value: &str) -> String {
    format!("{name} \"{value}\"\n")
}

async fn config_get(client: &mut redis::aio::MultiplexedConnection, name: &str) -> Option<String> {
    let pairs: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg(name)
        .query_async(client)
        .await
        .unwrap();
    match pairs.as_slice() {
        [] => None,
        [got, value] if got == name => Some(value.clone()),
        other => panic!("CONFIG GET {name}: {other:?}"),
    }
}

#[test]
fn the_samples_name_every_option_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut sampled: Vec<&str> = samples(dir.path()).iter().map(|(n, _, _)| *n).collect();
    let mut table: Vec<&str> = Directive::all().map(Directive::name).collect();
    sampled.sort_unstable();
    table.sort_unstable();
    assert_eq!(sampled, table);
    for (name, value, _) in samples(dir.path()) {
        let directive = Directive::find(name.as_bytes()).unwrap();
        if !value.is_empty() {
            assert_eq!(directive.check(value.as_bytes()), Ok(()), "{name} {value}");
            assert_ne!(value, directive.default_value(), "{name}: not its default");
        }
    }
}

#[test]
fn flags_and_the_config_file_give_the_same_options() {
    let dir = tempfile::tempdir().unwrap();
    let samples = samples(dir.path());
    let from_flags = Config::resolve(&flags(&samples)).unwrap();
    let conf = dir.path().join("bloomkit.conf");
    let text: String = samples
        .iter()
        .filter(|(name, value, _)| {
            !value.is_empty() && Directive::find(name.as_bytes()).unwrap().is_directive()
        })
        .map(|(name, value, _)| line(name, value))
        .collect();
    std::fs::write(&conf, text).unwrap();
    let with_file = |extra: &[(&str, &str)]| {
        let mut given: Vec<Given> = extra
            .iter()
            .map(|(name, value)| Given {
                name: name.to_string(),
                value: value.to_string(),
                from_env: false,
            })
            .collect();
        given.push(Given {
            name: "config".into(),
            value: conf.display().to_string(),
            from_env: false,
        });
        Config::resolve(&given).unwrap()
    };
    let from_file = with_file(&[("threads", "2")]);
    assert_eq!(
        from_file,
        Config {
            config_file: Some(conf.clone()),
            ..from_flags.clone()
        }
    );
    // A flag wins over the file's line.
    assert_eq!(with_file(&[("port", "7000")]).port, 7000);
}

#[tokio::test]
async fn config_get_set_rewrite_and_info_follow_the_table() {
    let dir = tempfile::tempdir().unwrap();
    let samples = samples(dir.path());
    let conf = dir.path().join("bloomkit.conf");
    std::fs::write(&conf, "# the options come from flags\n").unwrap();
    let mut given = flags(&samples);
    given.push(Given {
        name: "config".into(),
        value: conf.display().to_string(),
        from_env: false,
    });
    let config = Config::resolve(&given).unwrap();
    let server = TestServer::run(Server::open(config.clone()).await.unwrap());
    let url = format!("redis://:s3cret@{}", server.addr);
    let mut client = server.client_url(&url).await;

    for (name, _, expected) in &samples {
        let got = config_get(&mut client, name).await;
        match expected {
            Some(expected) => assert_eq!(got.as_ref(), Some(expected), "CONFIG GET {name}"),
            // The password, the flag-only options and the process's log file.
            None => {
                let directive = Directive::find(name.as_bytes()).unwrap();
                assert!(
                    got.is_none() || *name == "logfile",
                    "CONFIG GET {name} answered {got:?}"
                );
                assert!(!directive.is_runtime(), "{name}");
            }
        }
    }

    // CONFIG SET: the run-time options take their default back; the others are immutable,
    // the flag-only ones unknown.
    for directive in Directive::all() {
        let name = directive.name();
        let default = directive.default_value();
        let set: redis::RedisResult<String> = redis::cmd("CONFIG")
            .arg("SET")
            .arg(name)
            .arg(&default)
            .query_async(&mut client)
            .await;
        if directive.is_runtime() {
            assert_eq!(set.as_deref(), Ok("OK"), "CONFIG SET {name}");
            if name != "loglevel" {
                assert_eq!(config_get(&mut client, name).await, Some(default), "{name}");
            }
        } else {
            let error = set.expect_err(name).to_string();
            let expected = if directive.is_directive() {
                "can't set immutable config"
            } else {
                "Unknown option"
            };
            assert!(error.contains(expected), "CONFIG SET {name}: {error}");
        }
    }
    // Back to the samples, for the rewrite.
    for (name, value, _) in &samples {
        if Directive::find(name.as_bytes()).unwrap().is_runtime() {
            let _: () = redis::cmd("CONFIG")
                .arg("SET")
                .arg(name)
                .arg(value)
                .query_async(&mut client)
                .await
                .unwrap();
        }
    }

    // INFO shows the options that name a field, with CONFIG GET's value.
    let text: String = redis::cmd("INFO")
        .arg("everything")
        .query_async(&mut client)
        .await
        .unwrap();
    for (section, field, value) in [
        ("clients", "maxclients", "100"),
        ("memory", "maxmemory", "10485760"),
        ("memory", "maxmemory_policy", "allkeys-lfu"),
        ("persistence", "appendfsync", "always"),
    ] {
        let row = bloomkit_server::options::OPTIONS
            .iter()
            .find(|row| row.info.is_some_and(|(s, f)| s == section && f == field))
            .unwrap_or_else(|| panic!("no row shows {section} {field}"));
        let get = config_get(&mut client, row.name).await.unwrap();
        assert_eq!(get, value, "{}", row.name);
        assert!(text.contains(&format!("{field}:{value}\r\n")), "{field}");
    }
    let shown = bloomkit_server::options::OPTIONS
        .iter()
        .filter(|row| row.info.is_some())
        .count();
    assert_eq!(shown, 4, "every INFO field of the table is checked above");

    // CONFIG REWRITE writes the running values; the file then starts the same server, and
    // never holds a password that came from elsewhere than a flag or the file.
    let ok: String = redis::cmd("CONFIG")
        .arg("REWRITE")
        .query_async(&mut client)
        .await
        .unwrap();
    assert_eq!(ok, "OK");
    drop(client);
    server.stop().await.unwrap();
    let again = Config::resolve(&[
        Given {
            name: "config".into(),
            value: conf.display().to_string(),
            from_env: false,
        },
        Given {
            name: "threads".into(),
            value: "2".into(),
            from_env: false,
        },
    ])
    .unwrap();
    assert_eq!(sorted(again), sorted(config));
}

/// `config` with its run-time settings as `CONFIG GET` reads them back once applied, in
/// name order: a rewritten file writes the running values (`2097152` for `2mb`) in the
/// table's order, the flags keep theirs.
fn sorted(mut config: Config) -> Config {
    use bloomkit_server::config::Settings;
    use bloomkit_server::keyspace::Keyspace;
    use bloomkit_server::options::View;
    let (settings, keyspace) = (Settings::default(), Keyspace::new(0));
    settings.apply_startup(&config, &keyspace).unwrap();
    let view = View {
        config: &config,
        settings: &settings,
        keyspace: &keyspace,
    };
    let mut read_back: Vec<(String, String)> = config
        .settings
        .iter()
        .map(|(name, _)| {
            let directive = Directive::find(name.as_bytes()).unwrap();
            (name.clone(), directive.get(&view).unwrap())
        })
        .collect();
    read_back.sort();
    read_back.dedup();
    config.settings = read_back;
    config
}

#[test]
fn the_docs_flag_table_is_the_options_table() {
    let page =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/SERVER.md"))
            .unwrap();
    let start = "<!-- The flag table: options::flag_table(), checked by tests/it/options.rs. -->\n";
    let end = "<!-- End of the flag table. -->";
    let from = page.find(start).expect("the table's start marker") + start.len();
    let to = from + page[from..].find(end).expect("the table's end marker");
    let expected = flag_table();
    assert!(
        page[from..to] == expected,
        "docs/SERVER.md's flag table differs from the options table; it should be:\n{expected}"
    );
}
