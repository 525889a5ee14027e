//! `quarry serve --metastore postgres://...`: the tenants' catalogs and the tenant registry in
//! a real (throwaway) PostgreSQL, the WAL still on local disk. Checked as a user would: over
//! HTTP and with the CLI, across a kill -9, a tenant's deletion and, with blocks in object
//! storage (a throwaway SeaweedFS), a restart on an empty data directory.

mod common;
#[path = "support/members.rs"]
mod members;
#[path = "../../quarry-store/tests/support/postgresql.rs"]
mod postgresql;
#[path = "../../quarry-store/tests/support/seaweedfs.rs"]
mod seaweedfs;

use common::{call, free_port, quarry, tenant_count as count, word_events as events, Server};
use members::{
    committed_docs, committed_docs_by, count_and_sum, eventually, ingest_here, start, sum_below,
    wait_for_blocks, Members, ADMIN,
};
use quarry_store::postgres::Postgres;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

#[test]
fn catalogs_and_tenants_live_in_postgres_across_kill_and_delete() {
    let Some(cluster) = postgresql::PostgreSql::start() else {
        return;
    };
    let url = cluster.database("serve");
    let pg = Postgres::connect(&url).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let flags = ["--metastore", url.as_str(), "--admin-token", ADMIN];
    let server = start(&data, &flags, &[]);

    let (status, created) = server.request(
        "POST",
        "/api/v1/tenants",
        Some(&json!({"name": "team-a", "retention": "30d"}).to_string()),
    );
    assert_eq!(status, 201, "{created}");
    let key_a = created["api_key"].as_str().unwrap().to_owned();
    let (status, answer) = call(
        &server,
        "POST",
        "/api/v1/team-a/ingest",
        Some(&key_a),
        &events("alphaword", 20),
    );
    assert_eq!(status, 200, "{answer}");
    let (status, answer) = call(
        &server,
        "POST",
        "/api/v1/default/ingest",
        Some(ADMIN),
        &events("defaultword", 30),
    );
    assert_eq!(status, 200, "{answer}");
    assert_eq!(count(&server, "team-a", &key_a, "alphaword"), 20);
    assert_eq!(count(&server, "default", ADMIN, "defaultword"), 30);
    // Flushed blocks are committed in PostgreSQL, and nothing is in local catalog files.
    let expected: BTreeMap<String, i64> = [("default".to_owned(), 30), ("team-a".to_owned(), 20)]
        .into_iter()
        .collect();
    wait_for_blocks(&pg, &expected);
    assert!(!data.join("tenants.json").exists());
    assert!(!data.join("catalog.json").exists());
    assert!(!data.join("tenants/team-a/catalog.json").exists());
    let registered: Vec<String> = pg
        .run(|client| {
            Ok(client
                .query("SELECT name FROM quarry_tenants", &[])?
                .iter()
                .map(|row| row.get(0))
                .collect())
        })
        .unwrap();
    assert_eq!(registered, ["team-a"]);

    // kill -9, then a restart: the tenant, its key, its retention and its events are back.
    drop(server);
    let server = start(&data, &flags, &[]);
    assert_eq!(count(&server, "team-a", &key_a, "alphaword"), 20);
    assert_eq!(count(&server, "default", ADMIN, "defaultword"), 30);
    let (status, shown) = server.get("/api/v1/tenants/team-a");
    assert_eq!(status, 200, "{shown}");
    assert_eq!(shown["retention_seconds"], 30 * 86_400, "{shown}");
    assert_eq!(
        call(
            &server,
            "GET",
            "/api/v1/team-a/search?query=*",
            Some("wrong-key"),
            ""
        )
        .0,
        401
    );

    // The CLI reads the same catalog, beside the running server.
    let output = quarry(&[
        "search",
        "--data",
        data.to_str().unwrap(),
        "--metastore",
        &url,
        "--count",
        "--limit",
        "0",
        "defaultword",
    ]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let answer: Value = serde_json::from_str(stdout.lines().next().unwrap()).unwrap();
    assert_eq!(answer["count"], 30, "{stdout}");
    // ... and refuses to write a local catalog the server does not read.
    let input = dir.path().join("more.json");
    std::fs::write(&input, events("cliword", 3)).unwrap();
    let output = quarry(&[
        "index",
        "--data",
        data.to_str().unwrap(),
        "--metastore",
        &url,
        input.to_str().unwrap(),
    ]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("PostgreSQL metastore"), "{stderr}");

    // Deleting a tenant deletes its catalog: a new tenant of the same name starts empty.
    let (status, answer) = server.request("DELETE", "/api/v1/tenants/team-a", None);
    assert_eq!(status, 200, "{answer}");
    let catalogs: Vec<String> = pg
        .run(|client| {
            Ok(client
                .query("SELECT name FROM quarry_catalogs ORDER BY name", &[])?
                .iter()
                .map(|row| row.get(0))
                .collect())
        })
        .unwrap();
    assert_eq!(catalogs, ["default"]);
    let (status, created) = server.request(
        "POST",
        "/api/v1/tenants",
        Some(&json!({"name": "team-a"}).to_string()),
    );
    assert_eq!(status, 201, "{created}");
    let key_new = created["api_key"].as_str().unwrap().to_owned();
    assert_eq!(count(&server, "team-a", &key_new, "*"), 0);
    assert_eq!(
        call(
            &server,
            "GET",
            "/api/v1/team-a/search?query=*",
            Some(&key_a),
            ""
        )
        .0,
        401
    );
    assert!(server.terminate());
}

/// A server that names a database it cannot reach does not start, and says which.
#[test]
fn an_unreachable_metastore_stops_the_start_with_its_name() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = tempfile::tempdir().unwrap();
    let url = format!("postgres://quarry:not-shown@127.0.0.1:{port}/quarry");
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_quarry"))
        .args(["serve", "--data", dir.path().to_str().unwrap()])
        .args(["--listen", "127.0.0.1:0", "--metastore", &url])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains(&format!("127.0.0.1:{port}")), "{stderr}");
    assert!(!stderr.contains("not-shown"), "{stderr}");
}

/// Blocks in object storage and the catalog in PostgreSQL: a node's data directory holds only
/// its WAL and caches, so after a clean stop a node started on an empty directory answers
/// every event.
#[test]
fn with_object_storage_a_node_starts_on_an_empty_data_directory() {
    let Some(cluster) = postgresql::PostgreSql::start() else {
        return;
    };
    let Some(weed) = seaweedfs::SeaweedFs::start() else {
        return;
    };
    let url = cluster.database("stateless");
    let pg = Postgres::connect(&url).unwrap();
    let storage = weed.url("stateless");
    let flags = [
        "--metastore",
        url.as_str(),
        "--storage",
        storage.as_str(),
        "--admin-token",
        ADMIN,
    ];
    let dir = tempfile::tempdir().unwrap();
    let first = start(&dir.path().join("node-1"), &flags, &weed.env());
    let (status, answer) = call(
        &first,
        "POST",
        "/api/v1/default/ingest",
        Some(ADMIN),
        &events("cloudword", 500),
    );
    assert_eq!(status, 200, "{answer}");
    assert_eq!(count(&first, "default", ADMIN, "cloudword"), 500);
    // A clean stop flushes memory to blocks (uploaded, then committed in PostgreSQL).
    assert!(first.terminate());
    let expected: BTreeMap<String, i64> = [("default".to_owned(), 500)].into_iter().collect();
    assert_eq!(committed_docs(&pg), expected);

    let second = start(&dir.path().join("node-2"), &flags, &weed.env());
    assert_eq!(count(&second, "default", ADMIN, "cloudword"), 500);

    // Deleting a tenant deletes its objects too.
    let (status, created) = second.request(
        "POST",
        "/api/v1/tenants",
        Some(&json!({"name": "team-s3"}).to_string()),
    );
    assert_eq!(status, 201, "{created}");
    let key = created["api_key"].as_str().unwrap().to_owned();
    let (status, answer) = call(
        &second,
        "POST",
        "/api/v1/team-s3/ingest",
        Some(&key),
        &events("s3word", 50),
    );
    assert_eq!(status, 200, "{answer}");
    let expected: BTreeMap<String, i64> = [("default".to_owned(), 500), ("team-s3".to_owned(), 50)]
        .into_iter()
        .collect();
    wait_for_blocks(&pg, &expected);
    let bucket = quarry_store::ObjectStorage::s3_with(
        &storage,
        &dir.path().join("check-cache"),
        &weed.settings(),
    )
    .unwrap();
    let objects = || {
        use quarry_store::BlockStore;
        bucket.tenant_blocks("team-s3").list().unwrap()
    };
    assert!(!objects().is_empty());
    let (status, answer) = second.request("DELETE", "/api/v1/tenants/team-s3", None);
    assert_eq!(status, 200, "{answer}");
    assert_eq!(objects(), Vec::<u64>::new());
    assert_eq!(count(&second, "default", ADMIN, "cloudword"), 500);
    assert_eq!(
        count(&second, "default", ADMIN, "%22cloudword%20event%20499%22"),
        1
    );
    assert!(second.terminate());
}

/// PostgreSQL going away stops only commits: ingest goes on (the WAL holds what is
/// acknowledged), searches answer, flushes fail and are retried; once it is back the events are
/// committed in blocks, and a kill -9 afterwards loses nothing and duplicates nothing.
#[test]
fn an_outage_of_postgres_delays_commits_and_loses_nothing() {
    let Some(cluster) = postgresql::PostgreSql::start() else {
        return;
    };
    let url = cluster.database("outage");
    let pg = Postgres::connect(&url).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let flags = ["--metastore", url.as_str(), "--admin-token", ADMIN];
    let server = start(&data, &flags, &[]);
    let ingest = |server: &Server, word: &str| {
        let (status, answer) = call(
            server,
            "POST",
            "/api/v1/default/ingest",
            Some(ADMIN),
            &events(word, 100),
        );
        assert_eq!(status, 200, "{answer}");
    };
    ingest(&server, "beforeword");
    wait_for_blocks(&pg, &[("default".to_owned(), 100)].into_iter().collect());

    cluster.stop();
    ingest(&server, "duringword");
    assert_eq!(count(&server, "default", ADMIN, "duringword"), 100);
    // Flushes meanwhile fail (and are retried).
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(count(&server, "default", ADMIN, "*"), 200);
    cluster.start_again();
    wait_for_blocks(&pg, &[("default".to_owned(), 200)].into_iter().collect());

    drop(server);
    let server = start(&data, &flags, &[]);
    assert_eq!(count(&server, "default", ADMIN, "*"), 200);
    assert_eq!(count(&server, "default", ADMIN, "duringword"), 100);
    assert!(server.terminate());
}

/// `--role searcher`: a node that follows the catalogs and the registry an indexer writes
/// in PostgreSQL and reads the blocks it publishes in object storage. It answers as the
/// indexer does once the blocks are published, follows tenants created and deleted there
/// (their keys too), and refuses every write, naming where to send it.
#[test]
fn a_searcher_answers_what_an_indexer_published() {
    let Some(cluster) = postgresql::PostgreSql::start() else {
        return;
    };
    let Some(weed) = seaweedfs::SeaweedFs::start() else {
        return;
    };
    let url = cluster.database("roles");
    let pg = Postgres::connect(&url).unwrap();
    let storage = weed.url("roles");
    let mut flags = vec![
        "--metastore",
        url.as_str(),
        "--storage",
        storage.as_str(),
        "--admin-token",
        ADMIN,
    ];
    let dir = tempfile::tempdir().unwrap();
    let indexer = start(&dir.path().join("indexer"), &flags, &weed.env());
    flags.extend(["--role", "searcher"]);
    let searcher = start(&dir.path().join("searcher"), &flags, &weed.env());

    let (status, answer) = call(
        &indexer,
        "POST",
        "/api/v1/default/ingest",
        Some(ADMIN),
        &events("rolesword", 400),
    );
    assert_eq!(status, 200, "{answer}");
    wait_for_blocks(&pg, &[("default".to_owned(), 400)].into_iter().collect());
    eventually("the searcher sees the published blocks", || {
        count(&searcher, "default", ADMIN, "rolesword") == 400
    });
    for target in [
        "/api/v1/default/search?query=rolesword&limit=7&count=true&sort=time_desc",
        "/api/v1/default/search?query=%22event%2042%22&limit=3&count=true",
        "/api/v1/default/search?query=*&limit=0&aggs=stats(n)&aggs=terms(message,3)&histogram=auto",
        "/api/v1/default/search?query=*&sort=n:desc&limit=5",
    ] {
        let (status, want) = call(&indexer, "GET", target, Some(ADMIN), "");
        assert_eq!(status, 200, "{want}");
        let (status, got) = call(&searcher, "GET", target, Some(ADMIN), "");
        assert_eq!(status, 200, "{got}");
        for part in ["hits", "count", "aggregations", "histogram"] {
            assert_eq!(got[part], want[part], "{target}: {part}");
        }
    }
    let body = json!({"query": {"match": {"message": "rolesword"}}, "size": 2}).to_string();
    let (status, want) = call(&indexer, "POST", "/default/_search", Some(ADMIN), &body);
    assert_eq!(status, 200, "{want}");
    let (status, got) = call(&searcher, "POST", "/default/_search", Some(ADMIN), &body);
    assert_eq!(status, 200, "{got}");
    assert_eq!(got["hits"]["total"], want["hits"]["total"]);

    // Writes are refused, with where to send them; nothing is written.
    let (status, refused) = call(
        &searcher,
        "POST",
        "/api/v1/default/ingest",
        Some(ADMIN),
        &events("lostword", 3),
    );
    assert_eq!(status, 400, "{refused}");
    assert!(refused.to_string().contains("searcher"), "{refused}");
    let (status, refused) = call(
        &searcher,
        "POST",
        "/api/v1/tenants",
        Some(ADMIN),
        &json!({"name": "nope"}).to_string(),
    );
    assert_eq!(status, 400, "{refused}");

    // A tenant created on the indexer: followed, with its key.
    let (status, created) = call(
        &indexer,
        "POST",
        "/api/v1/tenants",
        Some(ADMIN),
        &json!({"name": "team-r"}).to_string(),
    );
    assert_eq!(status, 201, "{created}");
    let key = created["api_key"].as_str().unwrap().to_owned();
    let (status, answer) = call(
        &indexer,
        "POST",
        "/api/v1/team-r/ingest",
        Some(&key),
        &events("teamword", 30),
    );
    assert_eq!(status, 200, "{answer}");
    eventually("the searcher follows the new tenant", || {
        let (status, answer) = call(
            &searcher,
            "GET",
            "/api/v1/team-r/search?count=true&limit=0&query=teamword",
            Some(&key),
            "",
        );
        status == 200 && answer["count"] == 30
    });
    // Its key reads only its own data there too.
    let (status, _) = call(
        &searcher,
        "GET",
        "/api/v1/default/search?query=*",
        Some(&key),
        "",
    );
    assert_eq!(status, 401);
    // Deleted on the indexer: gone on the searcher.
    let (status, answer) = call(
        &indexer,
        "DELETE",
        "/api/v1/tenants/team-r",
        Some(ADMIN),
        "",
    );
    assert_eq!(status, 200, "{answer}");
    eventually("the searcher drops the deleted tenant", || {
        let (status, _) = call(
            &searcher,
            "GET",
            "/api/v1/team-r/search?query=*",
            Some(ADMIN),
            "",
        );
        status == 404
    });
    assert_eq!(count(&searcher, "default", ADMIN, "lostword"), 0);
    assert!(searcher.terminate());
    assert!(indexer.terminate());

    // A searcher needs both shared parts.
    let alone = quarry(&[
        "serve",
        "--data",
        dir.path().join("alone").to_str().unwrap(),
        "--listen",
        "127.0.0.1:0",
        "--role",
        "searcher",
        "--metastore",
        url.as_str(),
    ]);
    assert!(!alone.status.success());
    let said = String::from_utf8_lossy(&alone.stderr);
    assert!(said.contains("--storage s3://"), "{said}");
}

/// An indexer and two searchers, each the root of searches over the cluster (the indexer's
/// `--peers` lists the three; the searchers find the members in the metastore): the indexer
/// answers for the events it holds in memory, the searchers for the published blocks dealt to
/// them. Every acknowledged event is counted exactly once on every node, while flushes
/// publish blocks under the searches; a searcher that joins later is dealt blocks; a searcher
/// killed has its blocks searched by the others, and the answer stays whole.
#[test]
fn indexer_and_searchers_answer_every_acknowledged_event_once() {
    let Some(cluster) = postgresql::PostgreSql::start() else {
        return;
    };
    let Some(weed) = seaweedfs::SeaweedFs::start() else {
        return;
    };
    let url = cluster.database("scatter");
    let storage = weed.url("scatter");
    let ports: Vec<u16> = (0..3).map(|_| free_port()).collect();
    let peers: Vec<String> = ports
        .iter()
        .map(|p| format!("http://127.0.0.1:{p}"))
        .collect();
    let peers = peers.join(",");
    let mut env = weed.env();
    env.push(("QUARRY_CLUSTER_TOKEN", "scatter-token".to_owned()));
    let dir = tempfile::tempdir().unwrap();
    let mut nodes = Vec::new();
    for (i, port) in ports.iter().enumerate() {
        let leaf = format!("127.0.0.1:{port}");
        let mut flags = vec![
            "--metastore",
            url.as_str(),
            "--storage",
            storage.as_str(),
            "--admin-token",
            ADMIN,
            "--leaf-listen",
            leaf.as_str(),
            "--peers",
            peers.as_str(),
        ];
        // The indexer flushes every second: searches meet events in memory and blocks
        // being published.
        if i == 0 {
            flags.extend(["--flush-interval", "1"]);
        } else {
            flags.extend(["--role", "searcher"]);
            let at = flags.iter().position(|f| *f == peers.as_str()).unwrap();
            flags[at] = "metastore";
        }
        nodes.push(start(&dir.path().join(format!("node-{i}")), &flags, &env));
    }
    let total_of = |node: &Server| -> (u64, f64, Value) {
        let (status, answer) = call(
            node,
            "GET",
            "/api/v1/default/search?query=*&limit=0&count=true&aggs=sum(n)",
            Some(ADMIN),
            "",
        );
        assert_eq!(status, 200, "{answer}");
        assert_eq!(answer["partial"], false, "{answer}");
        let sum = answer["aggregations"]["sum(n)"].as_f64().unwrap();
        (answer["count"].as_u64().unwrap(), sum, answer)
    };
    let mut sent = 0u64;
    let started = Instant::now();
    let mut round = 0;
    while started.elapsed() < Duration::from_secs(6) || round < 8 {
        let batch: String = (sent..sent + 37)
            .map(|n| {
                format!(
                    "{}\n",
                    json!({"message": format!("clusterword event {n}"), "n": n})
                )
            })
            .collect();
        let (status, answer) = call(
            &nodes[0],
            "POST",
            "/api/v1/default/ingest",
            Some(ADMIN),
            &batch,
        );
        assert_eq!(status, 200, "{answer}");
        sent += 37;
        let expected_sum = (sent * (sent - 1) / 2) as f64;
        for node in &nodes {
            let (count, sum, answer) = total_of(node);
            assert_eq!(
                (count, sum),
                (sent, expected_sum),
                "round {round}: {answer}"
            );
        }
        round += 1;
    }
    // Hits: the newest by n, fetched from whichever node holds them.
    let (status, top) = call(
        &nodes[2],
        "GET",
        "/api/v1/default/search?query=clusterword&sort=n:desc&limit=25",
        Some(ADMIN),
        "",
    );
    assert_eq!(status, 200, "{top}");
    let got: Vec<u64> = top["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["event"]["n"].as_u64().unwrap())
        .collect();
    let want: Vec<u64> = (sent - 25..sent).rev().collect();
    assert_eq!(got, want);

    // Everything published, then a searcher gone: the other searches its blocks too.
    let pg = Postgres::connect(&url).unwrap();
    wait_for_blocks(
        &pg,
        &[("default".to_owned(), sent as i64)].into_iter().collect(),
    );
    let gone = nodes.remove(1);
    drop(gone);
    for node in &nodes {
        let (count, _, answer) = total_of(node);
        assert_eq!(count, sent, "{answer}");
    }
}

/// Two indexers write one tenant side by side (each its own writer of the catalog, its own
/// WAL) and a searcher serves what they publish; every node is a root over the members the
/// metastore lists. Every acknowledged event is counted once on every node whichever indexer
/// took it. An indexer killed with -9: its published blocks are served by the searcher, and
/// every answer says it may lack the events the indexer held in memory (never silently
/// smaller); restarted on its data directory, it replays its WAL and answers are whole again.
#[test]
fn two_indexers_write_one_tenant_side_by_side() {
    writers_side_by_side(&["indexer", "indexer", "searcher"]);
}

/// The same with two nodes of role `all` and no searcher: each answers for its events in
/// memory, and the published blocks (its own, the other's, a dead one's) are dealt between
/// the nodes that answer, each of which can read any block in the object store.
#[test]
fn two_nodes_of_role_all_write_one_tenant_side_by_side() {
    writers_side_by_side(&["all", "all"]);
}

/// Nodes of `roles` (node 1 an indexer, killed and restarted) over one PostgreSQL and one
/// object store.
fn writers_side_by_side(roles: &[&'static str]) {
    let Some(cluster) = postgresql::PostgreSql::start() else {
        return;
    };
    let Some(weed) = seaweedfs::SeaweedFs::start() else {
        return;
    };
    let database = format!("writers_{}", roles.join("_"));
    let members = Members::new(&cluster, &weed, &database, roles, &[]);
    let node = |i: usize| members.start(i);
    let mut nodes: Vec<Option<Server>> = (0..roles.len()).map(|i| Some(node(i))).collect();
    let pg = Postgres::connect(&members.url).unwrap();
    let everyone = roles.len() as i64;
    let live_members = || members.live(&pg);
    eventually("every member", || live_members() == everyone);
    // Every root lists the members again each second.
    std::thread::sleep(Duration::from_millis(1500));

    let search = count_and_sum;
    let mut sent = 0u64;
    let ingest = |to: &Server, sent: &mut u64| ingest_here(to, sent, 29);
    let whole_everywhere = |nodes: &[Option<Server>], sent: u64, round: &str| {
        for node in nodes.iter().flatten() {
            let (count, sum, answer) = search(node);
            assert_eq!(answer["partial"], false, "{round}: {answer}");
            assert_eq!((count, sum), (sent, sum_below(sent)), "{round}: {answer}");
        }
    };

    let started = Instant::now();
    let mut round = 0;
    while started.elapsed() < Duration::from_secs(5) || round < 8 {
        ingest(nodes[round % 2].as_ref().unwrap(), &mut sent);
        whole_everywhere(&nodes, sent, &format!("round {round}"));
        round += 1;
    }
    wait_for_blocks(
        &pg,
        &[("default".to_owned(), sent as i64)].into_iter().collect(),
    );
    let writers: i64 = pg
        .run_idempotent(|client| {
            Ok(client
                .query_one("SELECT count(DISTINCT writer) FROM quarry_blocks", &[])?
                .get(0))
        })
        .unwrap();
    assert_eq!(writers, 2, "each indexer published blocks of its own");

    // Indexer 1 killed with everything published: its blocks come from the searcher, and
    // the answers say indexer 1 is missing (its memory could have held events).
    drop(nodes[1].take());
    let endpoint = format!("http://127.0.0.1:{}", members.port(1));
    for node in nodes.iter().flatten() {
        let (count, sum, answer) = search(node);
        assert_eq!((count, sum), (sent, sum_below(sent)), "{answer}");
        assert_eq!(answer["partial"], true, "{answer}");
        assert!(answer.to_string().contains(&endpoint), "{answer}");
    }
    // Still so once it has dropped out of the members (it never said it left).
    std::thread::sleep(Duration::from_secs(7));
    ingest(nodes[0].as_ref().unwrap(), &mut sent);
    for node in nodes.iter().flatten() {
        let (count, _, answer) = search(node);
        assert_eq!(count, sent, "{answer}");
        assert_eq!(answer["partial"], true, "{answer}");
        assert!(answer.to_string().contains("stopped beating"), "{answer}");
    }

    // Back on its data directory; then killed right after acknowledging (its events likely
    // only in its WAL), and back again: it replays them.
    nodes[1] = Some(node(1));
    eventually("indexer 1 back", || live_members() == everyone);
    std::thread::sleep(Duration::from_millis(1500));
    whole_everywhere(&nodes, sent, "indexer 1 back");
    ingest(nodes[1].as_ref().unwrap(), &mut sent);
    drop(nodes[1].take());
    for node in nodes.iter().flatten() {
        let (count, _, answer) = search(node);
        assert!(count <= sent, "{answer}");
        assert_eq!(answer["partial"], true, "{answer}");
    }
    nodes[1] = Some(node(1));
    eventually("indexer 1 back again", || live_members() == everyone);
    std::thread::sleep(Duration::from_millis(1500));
    whole_everywhere(&nodes, sent, "after the WAL replay");
    ingest(nodes[1].as_ref().unwrap(), &mut sent);
    ingest(nodes[0].as_ref().unwrap(), &mut sent);
    whole_everywhere(&nodes, sent, "ingest after the restart");
}

/// An indexer that falls silent has its published blocks taken over by the other, which then
/// merges and expires them with its own (`--adopt-after`): first one stopped (SIGSTOP) long
/// enough, then woken up with acknowledged events still in its memory: fenced off, it opens
/// the catalog again and publishes them as its own; then one killed for good. Every
/// acknowledged event is counted once throughout, and every block ends up with a live writer.
#[test]
fn a_silent_indexers_blocks_are_taken_over() {
    let Some(cluster) = postgresql::PostgreSql::start() else {
        return;
    };
    let Some(weed) = seaweedfs::SeaweedFs::start() else {
        return;
    };
    let roles = ["indexer", "indexer"];
    let members = Members::new(&cluster, &weed, "adoption", &roles, &["--adopt-after", "2"]);
    let mut nodes: Vec<Option<Server>> = (0..2).map(|i| Some(members.start(i))).collect();
    let pg = Postgres::connect(&members.url).unwrap();
    eventually("every member", || members.live(&pg) == 2);
    std::thread::sleep(Duration::from_millis(1500));
    let writer_of = |i: usize| {
        std::fs::read_to_string(members.dir.path().join(format!("node-{i}/writer")))
            .unwrap()
            .trim()
            .to_owned()
    };
    let block_writers = || committed_docs_by(&pg, "writer");
    let mut sent = 0u64;
    let ingest = |to: &Server, sent: &mut u64| ingest_here(to, sent, 31);
    let whole = |node: &Server, sent: u64, what: &str| {
        let (count, sum, answer) = count_and_sum(node);
        assert_eq!((count, sum), (sent, sum_below(sent)), "{what}: {answer}");
    };
    for round in 0..6 {
        ingest(nodes[round % 2].as_ref().unwrap(), &mut sent);
    }
    wait_for_blocks(
        &pg,
        &[("default".to_owned(), sent as i64)].into_iter().collect(),
    );
    let (w0, w1) = (writer_of(0), writer_of(1));
    assert_eq!(block_writers().keys().cloned().collect::<Vec<_>>().len(), 2);

    // Indexer 1 stopped, just after acknowledging events it has not published.
    ingest(nodes[1].as_ref().unwrap(), &mut sent);
    let pid = nodes[1].as_ref().unwrap().child.id().to_string();
    let signal = |name: &str| {
        let status = std::process::Command::new("kill")
            .args([name, &pid])
            .status()
            .unwrap();
        assert!(status.success());
    };
    signal("-STOP");
    eventually("indexer 0 takes over indexer 1's blocks", || {
        !block_writers().contains_key(&w1)
    });
    signal("-CONT");
    // Woken up: it finds itself fenced off, opens the catalog again, publishes what it held
    // (if it had not before it stopped), and what it takes from now on, as its own.
    wait_for_blocks(
        &pg,
        &[("default".to_owned(), sent as i64)].into_iter().collect(),
    );
    ingest(nodes[1].as_ref().unwrap(), &mut sent);
    wait_for_blocks(
        &pg,
        &[("default".to_owned(), sent as i64)].into_iter().collect(),
    );
    assert!(block_writers().contains_key(&w1), "{:?}", block_writers());
    eventually("both members again", || members.live(&pg) == 2);
    std::thread::sleep(Duration::from_millis(1500));
    for node in nodes.iter().flatten() {
        whole(node, sent, "after indexer 1 woke up");
    }
    ingest(nodes[1].as_ref().unwrap(), &mut sent);
    ingest(nodes[0].as_ref().unwrap(), &mut sent);
    for node in nodes.iter().flatten() {
        whole(node, sent, "ingest after waking up");
    }

    // Indexer 1 killed for good: its blocks become indexer 0's, every event still once.
    wait_for_blocks(
        &pg,
        &[("default".to_owned(), sent as i64)].into_iter().collect(),
    );
    drop(nodes[1].take());
    eventually("indexer 0 owns every block", || {
        block_writers().keys().cloned().collect::<Vec<_>>() == vec![w0.clone()]
    });
    whole(nodes[0].as_ref().unwrap(), sent, "after the takeover");
    ingest(nodes[0].as_ref().unwrap(), &mut sent);
    whole(
        nodes[0].as_ref().unwrap(),
        sent,
        "ingest after the takeover",
    );
}

/// Tenant traffic control: any node takes ingest and sends it to the indexers the routes name
/// (a searcher too). A tenant sending more than one indexer's planned share (85% of
/// `--ingest-capacity`) is split over both by the planner; with one indexer killed, ingest sent
/// anywhere goes on to the other; every acknowledged event is counted once.
#[test]
fn ingest_is_routed_to_the_indexers_from_any_node() {
    let Some(cluster) = postgresql::PostgreSql::start() else {
        return;
    };
    let Some(weed) = seaweedfs::SeaweedFs::start() else {
        return;
    };
    let members = Members::new(
        &cluster,
        &weed,
        "routing",
        &["indexer", "indexer", "searcher"],
        &["--ingest-capacity", "40KB"],
    );
    let node = |i: usize| members.start(i);
    let mut nodes: Vec<Option<Server>> = (0..3).map(|i| Some(node(i))).collect();
    let pg = Postgres::connect(&members.url).unwrap();
    let query_i64 = |sql: &'static str| -> i64 {
        pg.run_idempotent(move |client| Ok(client.query_one(sql, &[])?.get(0)))
            .unwrap()
    };
    eventually("three members with their HTTP URLs", || {
        query_i64("SELECT count(*) FROM quarry_nodes WHERE http <> '' AND heartbeat > now() - interval '5 seconds'") == 3
    });
    std::thread::sleep(Duration::from_millis(1500));

    // About 60 KB/s for 16 s, sent to the searcher: more than one indexer's 34 KB/s, less
    // than two's.
    let mut sent = 0u64;
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(16) {
        let batch: String = (sent..sent + 110)
            .map(|n| {
                format!(
                    "{}\n",
                    json!({"message": format!("routed event {n} {}", "x".repeat(400)), "n": n})
                )
            })
            .collect();
        let to = nodes[2].as_ref().unwrap();
        let (status, answer) = call(to, "POST", "/api/v1/default/ingest", Some(ADMIN), &batch);
        assert_eq!(status, 200, "{answer}");
        sent += 110;
        std::thread::sleep(Duration::from_millis(800));
    }
    let routes: String = pg
        .run_idempotent(|client| {
            Ok(client
                .query_opt("SELECT routes FROM quarry_routing", &[])?
                .map(|row| row.get(0))
                .unwrap_or_default())
        })
        .unwrap();
    let table: Value = serde_json::from_str(&routes).unwrap_or(Value::Null);
    assert_eq!(
        table["default"].as_array().map(Vec::len),
        Some(2),
        "the planner splits the tenant over both indexers: {routes}"
    );
    wait_for_blocks(
        &pg,
        &[("default".to_owned(), sent as i64)].into_iter().collect(),
    );
    // Both indexers acknowledged events (the blocks' writers do not tell: the tenant's one
    // merger re-owns the blocks it merges, all of the other's at times).
    for indexer in &nodes[..2] {
        let indexer = indexer.as_ref().unwrap();
        let answer = indexer.send(
            "GET",
            "/metrics",
            &[("Authorization", &format!("Bearer {ADMIN}"))],
            b"",
        );
        let text = String::from_utf8_lossy(&answer.body).into_owned();
        let taken: f64 = text
            .lines()
            .find(|line| line.starts_with("quarry_ingested_events_total{tenant=\"default\"}"))
            .and_then(|line| line.rsplit(' ').next()?.parse().ok())
            .unwrap_or(0.0);
        assert!(
            taken > 0.0,
            "indexer {} took no events:\n{text}",
            indexer.addr
        );
    }
    let count_on = |node: &Server| -> (u64, Value) {
        let (status, answer) = call(
            node,
            "GET",
            "/api/v1/default/search?query=routed&limit=0&count=true",
            Some(ADMIN),
            "",
        );
        assert_eq!(status, 200, "{answer}");
        (answer["count"].as_u64().unwrap(), answer)
    };
    for node in nodes.iter().flatten() {
        assert_eq!(count_on(node).0, sent);
    }

    // Indexer 1 down: ingest sent to the searcher or to indexer 0 is taken.
    drop(nodes[1].take());
    for round in 0..6 {
        let batch: String = (sent..sent + 10)
            .map(|n| {
                format!(
                    "{}\n",
                    json!({"message": format!("routed event {n}"), "n": n})
                )
            })
            .collect();
        let to = nodes[if round % 2 == 0 { 2 } else { 0 }].as_ref().unwrap();
        let (status, answer) = call(to, "POST", "/api/v1/default/ingest", Some(ADMIN), &batch);
        assert_eq!(status, 200, "round {round}: {answer}");
        sent += 10;
    }
    nodes[1] = Some(node(1));
    eventually("indexer 1 back", || {
        query_i64("SELECT count(*) FROM quarry_nodes WHERE http <> '' AND heartbeat > now() - interval '5 seconds'") == 3
    });
    std::thread::sleep(Duration::from_millis(1500));
    for node in nodes.iter().flatten() {
        let (count, answer) = count_on(node);
        assert_eq!(count, sent, "{answer}");
        assert_eq!(answer["partial"], false, "{answer}");
    }

    // Elasticsearch's _bulk, sent to the searcher: forwarded to an indexer, by the index in
    // the path or in the first action.
    for (round, target) in ["/default/_bulk", "/_bulk"].iter().enumerate() {
        let body: String = (sent..sent + 10)
            .map(|n| {
                format!(
                    "{}\n{}\n",
                    json!({"index": {"_index": "default"}}),
                    json!({"message": format!("routed event {n}"), "n": n})
                )
            })
            .collect();
        let (status, answer) = call(
            nodes[2].as_ref().unwrap(),
            "POST",
            target,
            Some(ADMIN),
            &body,
        );
        assert_eq!(status, 200, "round {round}: {answer}");
        assert_eq!(answer["errors"], false, "{answer}");
        sent += 10;
    }
    for node in nodes.iter().flatten() {
        let (count, answer) = count_on(node);
        assert_eq!(count, sent, "{answer}");
    }
}
