//! Redis Cluster (and Valkey's): three masters and three replicas with the module, built by
//! `redis-cli --cluster create`; a cluster client (redis-rs's) writes hundreds of filters
//! over all slots; `redis-cli --cluster reshard` moves slots while writers go on (keys
//! travel by `MIGRATE`: `DUMP`, then `RESTORE`, the module's RDB callbacks); every filter
//! answers every acknowledged item; then a master is killed (SIGKILL), its replica takes
//! over, and every write acknowledged with `WAIT 1` before the kill is there.

use crate::common;

use std::collections::BTreeMap;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bloomkit_testkit::{engine, wait};
use common::{Engine, Resp, Server};
use redis::cluster::{ClusterClient, ClusterConnection};

/// How many filters the client writes.
const FILTERS: usize = 300;

/// The acknowledged items of each filter.
type Acked = Arc<Mutex<BTreeMap<String, Vec<String>>>>;

struct Cluster {
    nodes: Vec<Server>,
    cli: std::path::PathBuf,
}

impl Cluster {
    fn start(engine: Engine, dir: &std::path::Path, cli: std::path::PathBuf) -> Cluster {
        let nodes: Vec<Server> = (0..6)
            .map(|i| {
                let args: Vec<String> = [
                    "--loadmodule",
                    &common::module().display().to_string(),
                    "--cluster-enabled",
                    "yes",
                    "--cluster-config-file",
                    "nodes.conf",
                    "--cluster-node-timeout",
                    "2000",
                    "--enable-debug-command",
                    "yes",
                ]
                .map(String::from)
                .to_vec();
                Server::start_raw(engine, &dir.join(format!("node{i}")), args)
            })
            .collect();
        let cluster = Cluster { nodes, cli };
        let addresses: Vec<String> = cluster
            .nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port))
            .collect();
        let out = engine::output_within(
            Command::new(&cluster.cli)
                .arg("--cluster")
                .arg("create")
                .args(&addresses)
                .args(["--cluster-replicas", "1", "--cluster-yes"]),
            Duration::from_secs(120),
        );
        assert!(
            out.status.success(),
            "cluster create: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        cluster.wait_ok(&[]);
        // Every node's view: three masters, three replicas (gossip takes a moment).
        for node in &cluster.nodes {
            let mut c = node.conn();
            assert!(
                wait::until(wait::GENEROUS, || {
                    let text = c.line("CLUSTER NODES").text();
                    text.lines().filter(|l| l.contains("slave")).count() == 3
                        && text.lines().filter(|l| l.contains("master")).count() == 3
                }),
                "node {} sees three masters and three replicas",
                node.port
            );
        }
        cluster
    }

    /// Waits until every node still running (but `skip`'s) says the cluster is up.
    fn wait_ok(&self, skip: &[u16]) {
        for node in self.nodes.iter().filter(|n| !skip.contains(&n.port)) {
            let mut c = node.conn();
            assert!(
                wait::until(wait::GENEROUS, || {
                    c.line("CLUSTER INFO").text().contains("cluster_state:ok")
                }),
                "node {} sees the cluster up",
                node.port
            );
        }
    }

    fn client(&self, skip: &[u16]) -> ClusterConnection {
        let urls: Vec<String> = self
            .nodes
            .iter()
            .filter(|n| !skip.contains(&n.port))
            .map(|n| format!("redis://127.0.0.1:{}/", n.port))
            .collect();
        ClusterClient::builder(urls)
            .retries(30)
            .connection_timeout(Duration::from_secs(5))
            .response_timeout(Duration::from_secs(10))
            .build()
            .expect("a cluster client")
            .get_connection()
            .expect("a cluster connection")
    }

    /// The masters: (port, node id, slot count), from a live node's view.
    fn masters(&self, skip: &[u16]) -> Vec<(u16, String, usize)> {
        let live = self
            .nodes
            .iter()
            .find(|n| !skip.contains(&n.port))
            .expect("a live node");
        let text = live.conn().line("CLUSTER NODES").text();
        text.lines()
            .filter(|l| l.contains("master") && !l.contains("fail"))
            .map(|l| {
                let f: Vec<&str> = l.split(' ').collect();
                let port = f[1]
                    .split(['@', ':'])
                    .nth(1)
                    .and_then(|p| p.parse().ok())
                    .expect("a node's port");
                let slots = f[8..]
                    .iter()
                    .filter(|s| !s.starts_with('['))
                    .map(|range| match range.split_once('-') {
                        Some((a, b)) => {
                            b.parse::<usize>().unwrap_or(0) - a.parse::<usize>().unwrap_or(0) + 1
                        }
                        None => 1,
                    })
                    .sum();
                (port, f[0].to_string(), slots)
            })
            .collect()
    }

    fn node(&mut self, port: u16) -> &mut Server {
        self.nodes
            .iter_mut()
            .find(|n| n.port == port)
            .expect("a node on that port")
    }
}

/// Sets its flag when dropped, also while a panic unwinds.
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Notes `item` as acknowledged in `key`.
fn record(acked: &Acked, key: &str, item: String) {
    let mut acked = acked
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    acked.entry(key.to_string()).or_default().push(item);
}

fn family(key: &str) -> &'static str {
    if key.starts_with("cf:") {
        "CF"
    } else {
        "BF"
    }
}

/// Adds `item` to `key` through the cluster client; whether it was acknowledged.
fn add(conn: &mut ClusterConnection, key: &str, item: &str) -> bool {
    redis::cmd(&format!("{}.ADD", family(key)))
        .arg(key)
        .arg(item)
        .query::<i64>(conn)
        .is_ok()
}

/// Checks every acknowledged item of every filter through the cluster client.
fn check_all(conn: &mut ClusterConnection, acked: &BTreeMap<String, Vec<String>>, what: &str) {
    let mut checked = 0;
    for (key, items) in acked {
        let answers: Vec<i64> = redis::cmd(&format!("{}.MEXISTS", family(key)))
            .arg(key)
            .arg(items)
            .query(conn)
            .unwrap_or_else(|e| panic!("{what}: {key}: {e}"));
        for (item, answer) in items.iter().zip(answers) {
            assert_eq!(answer, 1, "{what}: {key} lost {item}");
            checked += 1;
        }
    }
    assert!(checked > FILTERS, "{what}: {checked} items checked");
}

#[test]
fn filters_survive_resharding_and_failover() {
    let Some(cli) = engine::redis_cli() else {
        return;
    };
    for engine in Engine::available() {
        let dir = tempfile::tempdir().expect("a directory");
        let mut cluster = Cluster::start(engine, dir.path(), cli.clone());
        let what = engine.name();

        // Hundreds of filters over all slots, both families, created from the defaults.
        let keys: Vec<String> = (0..FILTERS)
            .map(|i| format!("{}:{i}", if i % 3 == 0 { "cf" } else { "bf" }))
            .collect();
        let acked: Acked = Arc::default();
        let mut conn = cluster.client(&[]);
        for key in &keys {
            for j in 0..3 {
                let item = format!("first-{j}");
                assert!(add(&mut conn, key, &item), "{what}: {key} {item}");
                record(&acked, key, item);
            }
        }
        let masters = cluster.masters(&[]);
        assert_eq!(masters.len(), 3, "{what}: three masters");
        let mut spread = 0;
        for (port, _, _) in &masters {
            let count = cluster.node(*port).conn().line("DBSIZE").int();
            assert!(count > 0, "{what}: every master holds filters");
            spread += count;
        }
        assert_eq!(spread as usize, FILTERS, "{what}: each filter once");

        // Resharding while two writers go on.
        let stop = Arc::new(AtomicBool::new(false));
        // The writers stop when the resharding ends, or when the test fails before it does.
        let stop_guard = StopOnDrop(Arc::clone(&stop));
        let writers: Vec<_> = (0..2)
            .map(|w| {
                let (stop, acked, keys) = (Arc::clone(&stop), Arc::clone(&acked), keys.clone());
                let mut conn = cluster.client(&[]);
                std::thread::spawn(move || {
                    // Until the resharding ends (bounded, should it never).
                    let mut round = 0;
                    while !stop.load(Ordering::Relaxed) && round < 10_000 {
                        for key in keys.iter().skip(w).step_by(2) {
                            let item = format!("during-{round}");
                            if add(&mut conn, key, &item) {
                                record(&acked, key, item);
                            }
                        }
                        round += 1;
                        // Leave the machine to the resharding too (2 cores here).
                        std::thread::sleep(Duration::from_millis(20));
                    }
                })
            })
            .collect();
        let (from, to) = (&masters[0], &masters[1]);
        let out = engine::output_within(
            Command::new(&cluster.cli)
                .arg("--cluster")
                .arg("reshard")
                .arg(format!("127.0.0.1:{}", from.0))
                .args(["--cluster-from", &from.1, "--cluster-to", &to.1])
                .args(["--cluster-slots", "1000", "--cluster-yes"]),
            Duration::from_secs(300),
        );
        drop(stop_guard);
        for w in writers {
            w.join().expect("a writer");
        }
        assert!(
            out.status.success(),
            "{what}: reshard: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        cluster.wait_ok(&[]);
        let after = cluster.masters(&[]);
        let slots = |id: &str| after.iter().find(|m| m.1 == id).map_or(0, |m| m.2);
        assert_eq!(slots(&to.1), to.2 + 1000, "{what}: the slots moved");
        let moved_here = cluster.node(to.0).conn().line("DBSIZE").int();
        assert!(
            moved_here as usize > spread as usize / 3,
            "{what}: keys moved with their slots ({moved_here} on the target)"
        );
        let mut conn = cluster.client(&[]);
        let snapshot = acked.lock().unwrap().clone();
        let during: usize = snapshot
            .values()
            .map(|items| items.iter().filter(|i| i.starts_with("during")).count())
            .sum();
        assert!(
            during > FILTERS,
            "{what}: {during} writes acknowledged while resharding"
        );
        eprintln!("{what}: {during} writes acknowledged while resharding");
        check_all(&mut conn, &snapshot, &format!("{what} after resharding"));

        // Writes acknowledged by a replica (WAIT 1), then the master killed.
        let (victim, _, _) = after
            .iter()
            .find(|m| m.2 > 0)
            .cloned()
            .expect("a master with slots");
        let mut direct = cluster.node(victim).conn();
        let mut waited = 0;
        for key in &keys {
            let slot_owner = direct.cmd(&["BF.EXISTS", key, "x"]);
            if matches!(&slot_owner, Resp::Error(e) if e.starts_with("MOVED")) {
                continue;
            }
            let item = "before-the-kill".to_string();
            let reply = direct.cmd(&[&format!("{}.ADD", family(key)), key, &item]);
            if !matches!(reply, Resp::Int(_)) {
                continue;
            }
            if direct.line("WAIT 1 2000") == Resp::Int(1) {
                record(&acked, key, item);
                waited += 1;
            }
        }
        assert!(
            waited > 10,
            "{what}: {waited} writes acknowledged by a replica"
        );
        cluster.node(victim).kill();
        // Its replica takes over: three masters with slots again, the victim not among them.
        assert!(
            wait::until(wait::GENEROUS, || {
                let masters = cluster.masters(&[victim]);
                masters.iter().filter(|m| m.2 > 0).count() == 3
                    && masters.iter().all(|m| m.0 != victim)
            }),
            "{what}: a replica took over from {victim}"
        );
        cluster.wait_ok(&[victim]);
        let mut conn = cluster.client(&[victim]);
        let snapshot = acked.lock().unwrap().clone();
        check_all(&mut conn, &snapshot, &format!("{what} after failover"));
        // The promoted replica serves writes to the filters it took over.
        let some_key = snapshot.keys().next().expect("a key");
        assert!(add(&mut conn, some_key, "after-failover"));
    }
}
