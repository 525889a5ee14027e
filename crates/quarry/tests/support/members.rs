//! A cluster of real nodes for the end-to-end tests: a throwaway PostgreSQL metastore and
//! SeaweedFS store, nodes started with roles and flags, and what the tests ask of them.
#![allow(dead_code)] // each test binary uses its own part

use crate::common::{call, free_port, Server};
use crate::{postgresql, seaweedfs};
use quarry_store::postgres::Postgres;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

pub const ADMIN: &str = "pg-admin-token";

/// A server over `data` with `extra` flags (flushing every 50 ms unless they say otherwise).
pub fn start(data: &Path, extra: &[&str], env: &[(&str, String)]) -> Server {
    try_start(data, extra, env).unwrap_or_else(|why| panic!("{why}"))
}

/// As `start`; a node that exits before it listens is an error with its log.
pub fn try_start(data: &Path, extra: &[&str], env: &[(&str, String)]) -> Result<Server, String> {
    let mut args = vec!["--data", data.to_str().unwrap(), "--listen", "127.0.0.1:0"];
    if !extra.contains(&"--flush-interval") {
        args.extend(["--flush-interval", "0.05"]);
    }
    args.extend_from_slice(extra);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let mut server = Server::try_spawn_logged(&args, &env, Path::new("."), None)?;
    server.token = Some(ADMIN.to_owned());
    Ok(server)
}

/// Events per catalog that PostgreSQL lists in committed blocks.
pub fn committed_docs(pg: &Postgres) -> BTreeMap<String, i64> {
    committed_docs_by(pg, "catalog")
}

/// Events in committed blocks per value of their column `by` (`catalog`, `writer`).
pub fn committed_docs_by(pg: &Postgres, by: &'static str) -> BTreeMap<String, i64> {
    pg.run_idempotent(move |client| {
        let mut docs = BTreeMap::new();
        for row in client.query(
            &format!("SELECT {by}, sum(docs)::BIGINT FROM quarry_blocks GROUP BY {by}"),
            &[],
        )? {
            docs.insert(row.get::<_, String>(0), row.get::<_, i64>(1));
        }
        Ok(docs)
    })
    .unwrap()
}

/// Waits until PostgreSQL's blocks hold `expected` events per catalog.
pub fn wait_for_blocks(pg: &Postgres, expected: &BTreeMap<String, i64>) {
    let started = Instant::now();
    loop {
        let docs = committed_docs(pg);
        if &docs == expected {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "blocks in PostgreSQL {docs:?}, expected {expected:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits until `check` holds, for at most 30 s (a searcher refreshes every second).
pub fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let started = Instant::now();
    while !check() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "never happened: {what}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Members of a cluster over one PostgreSQL database and one object-store prefix: node `i`
/// has role `roles[i]`, a leaf API on a port of its own (a restarted node is the same member),
/// `--peers metastore`, a flush every second and `extra` flags.
pub struct Members {
    pub url: String,
    pub storage: String,
    pub env: Vec<(&'static str, String)>,
    pub dir: tempfile::TempDir,
    ports: std::sync::Mutex<Vec<u16>>,
    pub roles: Vec<&'static str>,
    pub extra: Vec<&'static str>,
}

impl Members {
    pub fn new(
        cluster: &postgresql::PostgreSql,
        weed: &seaweedfs::SeaweedFs,
        name: &str,
        roles: &[&'static str],
        extra: &[&'static str],
    ) -> Members {
        let mut env = weed.env();
        env.push(("QUARRY_CLUSTER_TOKEN", format!("{name}-token")));
        Members {
            url: cluster.database(name),
            storage: weed.url(&name.replace('_', "-")),
            env,
            dir: tempfile::tempdir().unwrap(),
            ports: std::sync::Mutex::new(roles.iter().map(|_| free_port()).collect()),
            roles: roles.to_vec(),
            extra: extra.to_vec(),
        }
    }

    /// Member `i`. Its leaf port was picked free when the members were made; another test
    /// running beside may have taken it since (the node then exits at once): it starts again
    /// on another free port, twice at most, and the last failure names the node's log.
    pub fn start(&self, i: usize) -> Server {
        let mut last = String::new();
        for _ in 0..3 {
            let port = self.ports.lock().unwrap()[i];
            match self.try_start_on(i, port) {
                Ok(server) => return server,
                Err(why) => {
                    eprintln!("member {i} did not start on leaf port {port}: {why}");
                    last = why;
                    self.ports.lock().unwrap()[i] = free_port();
                }
            }
        }
        panic!("member {i} did not start: {last}")
    }

    /// The leaf port of member `i` now.
    pub fn port(&self, i: usize) -> u16 {
        self.ports.lock().unwrap()[i]
    }

    fn try_start_on(&self, i: usize, port: u16) -> Result<Server, String> {
        let leaf = format!("127.0.0.1:{port}");
        let mut flags = vec![
            "--metastore",
            self.url.as_str(),
            "--storage",
            self.storage.as_str(),
            "--admin-token",
            ADMIN,
            "--leaf-listen",
            leaf.as_str(),
            "--peers",
            "metastore",
            "--role",
            self.roles[i],
            "--flush-interval",
            "1",
        ];
        flags.extend_from_slice(&self.extra);
        try_start(
            &self.dir.path().join(format!("node-{i}")),
            &flags,
            &self.env,
        )
    }

    /// Members that beat within 5 s.
    pub fn live(&self, pg: &Postgres) -> i64 {
        pg.run_idempotent(|client| {
            Ok(client
                .query_one(
                    "SELECT count(*) FROM quarry_nodes WHERE heartbeat > now() - interval '5 seconds'",
                    &[],
                )?
                .get(0))
        })
        .unwrap()
    }
}

/// Events `sent..sent + n` (`n` numbered) sent to `to`, and taken by it as a request traffic
/// control forwarded is: the test says which indexer writes them (left to the routes, the
/// tenant's home indexer would take them all).
pub fn ingest_here(to: &Server, sent: &mut u64, n: u64) {
    let batch: String = (*sent..*sent + n)
        .map(|n| {
            format!(
                "{}\n",
                json!({"message": format!("writer event {n}"), "n": n})
            )
        })
        .collect();
    let authorization = format!("Bearer {ADMIN}");
    let headers = [
        ("Content-Type", "application/x-ndjson"),
        ("Authorization", authorization.as_str()),
        ("x-quarry-forwarded", "1"),
    ];
    let answer = to.send("POST", "/api/v1/default/ingest", &headers, batch.as_bytes());
    assert_eq!(
        answer.status,
        200,
        "{}",
        String::from_utf8_lossy(&answer.body)
    );
    *sent += n;
}

/// How many events `node` counts and the sum of their `n`, with its answer.
pub fn count_and_sum(node: &Server) -> (u64, f64, Value) {
    let (status, answer) = call(
        node,
        "GET",
        "/api/v1/default/search?query=*&limit=0&count=true&aggs=sum(n)",
        Some(ADMIN),
        "",
    );
    assert_eq!(status, 200, "{answer}");
    let sum = answer["aggregations"]["sum(n)"].as_f64().unwrap_or(0.0);
    (answer["count"].as_u64().unwrap(), sum, answer)
}

/// The sum of `0..sent`.
pub fn sum_below(sent: u64) -> f64 {
    (sent * (sent.max(1) - 1) / 2) as f64
}
