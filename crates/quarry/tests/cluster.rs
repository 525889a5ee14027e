//! Scatter-gather over real nodes (quarry-cluster): three `quarry serve` processes, each
//! holding a third of the events and serving the leaf API, searched by a root over gRPC; the
//! same search of one node holding every event must answer alike: counts, histograms, the
//! events in order (time sorts), the ranking to float rounding (relevance). A node that does
//! not answer makes the answer partial and is named; a wrong token is refused.

mod common;

use common::{free_port, url_encode, Server};
use quarry_cluster::{Root, RootAnswer};
use quarry_query::leaf::{LeafQuery, LeafRequest, QuerySource};
use quarry_query::SortOrder;
use serde_json::json;
use std::path::Path;

const TOKEN: &str = "cluster-test-token";
const WORDS: &[&str] = &["alpha", "beta", "gamma", "delta", "error", "timeout"];
const SECOND: i64 = 1_000_000_000;

/// A node serving the leaf API; returns it and its leaf endpoint.
fn node(data: &Path) -> (Server, String) {
    let port = free_port();
    let leaf = format!("127.0.0.1:{port}");
    let server = Server::spawn(
        &[
            "--data",
            data.to_str().unwrap(),
            "--listen",
            "127.0.0.1:0",
            "--flush-interval",
            "0.05",
            "--leaf-listen",
            &leaf,
        ],
        &[("QUARRY_CLUSTER_TOKEN", TOKEN)],
        Path::new("."),
    );
    (server, format!("http://{leaf}"))
}

/// Event `i`: a distinct second each (so time order has no ties across nodes), a few words.
fn event(i: usize) -> serde_json::Value {
    let words: Vec<&str> = (0..1 + i % 4)
        .map(|k| WORDS[(i * 7 + k * 3) % WORDS.len()])
        .collect();
    json!({
        "_time": format!("2026-11-20T{:02}:{:02}:{:02}Z", i / 3600, (i / 60) % 60, i % 60),
        "message": words.join(" "),
        "n": i,
    })
}

fn ingest(server: &Server, events: &[serde_json::Value]) {
    let body: String = events.iter().map(|e| format!("{e}\n")).collect();
    let answer = server.send(
        "POST",
        "/api/v1/default/ingest",
        &[("Content-Type", "application/x-ndjson")],
        body.as_bytes(),
    );
    assert_eq!(
        answer.status,
        200,
        "{}",
        String::from_utf8_lossy(&answer.body)
    );
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn close(a: Option<f32>, b: Option<f32>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => (a - b).abs() <= 1e-5 * a.abs().max(b.abs()).max(1.0),
        (a, b) => a == b,
    }
}

/// The events' `n` in answer order.
fn ns(answer: &RootAnswer) -> Vec<u64> {
    answer
        .hits
        .iter()
        .map(|hit| {
            let n = hit.event.iter().find(|(name, _)| name == "n").unwrap();
            match &n.1 {
                quarry_format::Value::I64(v) => *v as u64,
                quarry_format::Value::U64(v) => *v,
                other => panic!("n is {other:?}"),
            }
        })
        .collect()
}

#[test]
fn three_nodes_searched_by_a_root_answer_as_one_node() {
    let dir = tempfile::tempdir().unwrap();
    let events: Vec<serde_json::Value> = (0..900).map(event).collect();
    let mut nodes = Vec::new();
    for part in 0..3 {
        let (server, leaf) = node(&dir.path().join(format!("node-{part}")));
        let mine: Vec<_> = events.iter().skip(part).step_by(3).cloned().collect();
        // Two requests: the node has a flushed block and events in memory, or two blocks.
        ingest(&server, &mine[..150]);
        std::thread::sleep(std::time::Duration::from_millis(300));
        ingest(&server, &mine[150..]);
        nodes.push((server, leaf));
    }
    let (whole, whole_leaf) = node(&dir.path().join("whole"));
    ingest(&whole, &events);

    let runtime = runtime();
    let _inside = runtime.enter();
    let endpoints: Vec<String> = nodes.iter().map(|(_, leaf)| leaf.clone()).collect();
    let root = Root::new(&endpoints, TOKEN).unwrap();
    let one = Root::new(&[whole_leaf], TOKEN).unwrap();
    for text in [
        "alpha",
        "alpha beta",
        "error OR timeout",
        "\"gamma delta\"",
        "*",
        "NOT beta",
    ] {
        for sort in [
            SortOrder::TimeDesc,
            SortOrder::TimeAsc,
            SortOrder::Relevance,
        ] {
            for limit in [1, 25, 1000] {
                let query = LeafQuery {
                    source: QuerySource::Text(text.to_owned()),
                    start: i64::MIN,
                    end: i64::MAX,
                };
                let request = LeafRequest {
                    limit,
                    sort,
                    count: true,
                    histogram: Some(60 * SECOND),
                    ..LeafRequest::default()
                };
                let context = format!("{text:?} {sort:?} limit {limit}");
                let got = runtime
                    .block_on(root.search("default", &query, &request))
                    .unwrap();
                let want = runtime
                    .block_on(one.search("default", &query, &request))
                    .unwrap();
                assert!(!got.is_partial(), "{context}: {got:?}");
                assert_eq!(got.count, want.count, "{context}");
                assert_eq!(got.histogram, want.histogram, "{context}");
                assert_eq!(got.hits.len(), want.hits.len(), "{context}");
                if sort == SortOrder::Relevance {
                    for (g, w) in got.hits.iter().zip(&want.hits) {
                        assert!(close(g.hit.score, w.hit.score), "{context}");
                    }
                } else {
                    assert_eq!(ns(&got), ns(&want), "{context}");
                    // Whole events, each as the node that holds it stores it.
                    for (g, w) in got.hits.iter().zip(&want.hits) {
                        assert_eq!(g.event, w.event, "{context}");
                    }
                }
            }
        }
    }

    // A node that is gone: the answer is partial and names it.
    let (gone, gone_leaf) = nodes.remove(1);
    drop(gone);
    let query = LeafQuery {
        source: QuerySource::Text("*".into()),
        start: i64::MIN,
        end: i64::MAX,
    };
    let request = LeafRequest {
        limit: 5,
        sort: SortOrder::TimeDesc,
        count: true,
        ..LeafRequest::default()
    };
    let partial = runtime
        .block_on(root.search("default", &query, &request))
        .unwrap();
    assert!(partial.is_partial());
    assert_eq!(partial.failed_leaves.len(), 1, "{partial:?}");
    assert_eq!(partial.failed_leaves[0].0, gone_leaf);
    assert_eq!(partial.count, Some(600));

    // A root with the wrong token reads nothing.
    let intruder = Root::new(&endpoints[..1], "not-the-token").unwrap();
    let refused = runtime
        .block_on(intruder.search("default", &query, &request))
        .unwrap();
    assert_eq!(refused.failed_leaves.len(), 1);
    assert!(
        refused.failed_leaves[0].1.contains("cluster token"),
        "{refused:?}"
    );
    assert!(refused.hits.is_empty());
}

/// Pages searched over the snapshots a first search read (`Root::search_pinned`, an export's
/// pages) see the cluster as it was then: events ingested, flushed and merged since neither
/// show up nor move, and the pages are one node's whole sort; a fresh search sees them.
#[test]
fn pages_pinned_to_the_first_search_see_one_snapshot_of_the_cluster() {
    let dir = tempfile::tempdir().unwrap();
    let events: Vec<serde_json::Value> = (0..1300).map(event).collect();
    let mut nodes = Vec::new();
    for part in 0..2 {
        let (server, leaf) = node(&dir.path().join(format!("node-{part}")));
        let mine: Vec<_> = events[..1200]
            .iter()
            .skip(part)
            .step_by(2)
            .cloned()
            .collect();
        for chunk in mine.chunks(100) {
            ingest(&server, chunk);
        }
        nodes.push((server, leaf));
    }
    let runtime = runtime();
    let _inside = runtime.enter();
    let endpoints: Vec<String> = nodes.iter().map(|(_, leaf)| leaf.clone()).collect();
    let root = Root::new(&endpoints, TOKEN).unwrap();
    let query = LeafQuery {
        source: QuerySource::Text("*".into()),
        start: i64::MIN,
        end: i64::MAX,
    };
    let mut request = LeafRequest {
        limit: 500,
        sort: SortOrder::TimeAsc,
        count: true,
        ..LeafRequest::default()
    };
    let first = runtime
        .block_on(root.search("default", &query, &request))
        .unwrap();
    assert_eq!(ns(&first), (0..500).collect::<Vec<u64>>());
    let pin = first.pin.clone().expect("a search pins what it read");
    // Newer events on both nodes, and time for flushes and merges to replace blocks.
    for (part, (server, _)) in nodes.iter().enumerate() {
        let newer: Vec<_> = events[1200..]
            .iter()
            .skip(part)
            .step_by(2)
            .cloned()
            .collect();
        for chunk in newer.chunks(10) {
            ingest(server, chunk);
        }
    }
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let last = &first.hits.last().unwrap().hit;
    request.after = Some(quarry_query::Cursor {
        time: last.time,
        block_id: last.block,
        doc: last.doc,
    });
    request.limit = 2000;
    let pinned = runtime
        .block_on(root.search_pinned(&pin, "default", &query, &request))
        .unwrap();
    assert!(!pinned.is_partial(), "{pinned:?}");
    assert_eq!(pinned.count, Some(1200));
    assert_eq!(ns(&pinned), (500..1200).collect::<Vec<u64>>());
    let fresh = runtime
        .block_on(root.search("default", &query, &request))
        .unwrap();
    assert_eq!(fresh.count, Some(1300));
    assert_eq!(ns(&fresh), (500..1300).collect::<Vec<u64>>());
}

/// `--leaf-listen` without a token does not start: the leaf API reads every tenant.
#[test]
fn the_leaf_api_needs_a_token() {
    let dir = tempfile::tempdir().unwrap();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_quarry"))
        .args(["serve", "--data", dir.path().to_str().unwrap()])
        .args(["--listen", "127.0.0.1:0", "--leaf-listen", "127.0.0.1:0"])
        .env_remove("QUARRY_CLUSTER_TOKEN")
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--cluster-token"), "{stderr}");
}

/// `GET /api/v1/{tenant}/search` on any node of a cluster started with `--peers` answers for
/// every node, as a single node holding every event would; with a node gone the answer says
/// `partial` and names it; what the leaf API cannot carry yet is refused by name.
#[test]
fn a_search_on_any_node_with_peers_answers_for_the_cluster() {
    let dir = tempfile::tempdir().unwrap();
    let events: Vec<serde_json::Value> = (0..600).map(event).collect();
    let ports: Vec<u16> = (0..3).map(|_| free_port()).collect();
    let peers: Vec<String> = ports
        .iter()
        .map(|port| format!("http://127.0.0.1:{port}"))
        .collect();
    let peers = peers.join(",");
    let mut nodes = Vec::new();
    for (part, port) in ports.iter().enumerate() {
        let data = dir.path().join(format!("node-{part}"));
        let leaf = format!("127.0.0.1:{port}");
        let server = Server::spawn(
            &[
                "--data",
                data.to_str().unwrap(),
                "--listen",
                "127.0.0.1:0",
                "--leaf-listen",
                &leaf,
                "--peers",
                &peers,
            ],
            &[("QUARRY_CLUSTER_TOKEN", TOKEN)],
            Path::new("."),
        );
        let mine: Vec<_> = events.iter().skip(part).step_by(3).cloned().collect();
        ingest(&server, &mine);
        nodes.push(server);
    }
    let (whole, _) = node(&dir.path().join("whole"));
    ingest(&whole, &events);

    let ns_of = |body: &serde_json::Value| -> Vec<u64> {
        body["hits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|hit| hit["event"]["n"].as_u64().unwrap())
            .collect()
    };
    for target in [
        "/api/v1/default/search?query=alpha&sort=time-desc&limit=20&count=true&histogram=1m",
        "/api/v1/default/search?query=error%20OR%20timeout&sort=time-asc&limit=50&count=true",
        "/api/v1/default/search?query=*&limit=0&count=true&histogram=5m",
        // The width of `auto` from every node's matches.
        "/api/v1/default/search?query=beta&limit=0&count=true&histogram=auto",
        // Aggregations: states merged by the root.
        "/api/v1/default/search?query=alpha&limit=0&count=true&aggs=terms(message,5)\
         &aggs=stats(n)&aggs=percentiles(n,10,50,99)&aggs=cardinality(n)&aggs=count",
        "/api/v1/default/search?query=*&limit=0&histogram=1m&aggs=avg(n)&aggs=terms(message,3)",
        "/api/v1/default/search?query=gamma&limit=0&histogram=auto&aggs=max(n)",
        // Field sorts.
        "/api/v1/default/search?query=delta&sort=n:desc&limit=15&count=true",
        "/api/v1/default/search?query=*&sort=message:asc&limit=40",
    ] {
        let (status, want) = whole.get(target);
        assert_eq!(status, 200, "{want}");
        if target.contains("aggs=") {
            let results = match &want["histogram"] {
                serde_json::Value::Null => &want["aggregations"],
                buckets => &buckets[0]["aggregations"],
            };
            assert!(results.is_object(), "{target}: {want}");
        }
        for node in &nodes {
            let (status, got) = node.get(target);
            assert_eq!(status, 200, "{target}: {got}");
            assert_eq!(got["partial"], false, "{got}");
            assert_eq!(got["count"], want["count"], "{target}");
            assert_eq!(got["histogram"], want["histogram"], "{target}");
            assert_eq!(got["aggregations"], want["aggregations"], "{target}");
            assert_eq!(ns_of(&got), ns_of(&want), "{target}");
        }
    }
    // A field sort paged with search_after through the cluster: the pages are the whole
    // sort of one node.
    let (_, whole_sort) = whole.get("/api/v1/default/search?query=*&sort=message:desc&limit=600");
    let mut paged = Vec::new();
    let mut target = "/api/v1/default/search?query=*&sort=message:desc&limit=90".to_owned();
    loop {
        let (status, page) = nodes[1].get(&target);
        assert_eq!(status, 200, "{page}");
        let hits = ns_of(&page);
        if hits.is_empty() {
            break;
        }
        paged.extend(hits);
        let cursor = page["hits"].as_array().unwrap().last().unwrap()["_cursor"]
            .as_str()
            .unwrap()
            .to_owned();
        let cursor: String = url_encode(&cursor);
        target = format!(
            "/api/v1/default/search?query=*&sort=message:desc&limit=90&search_after={cursor}"
        );
    }
    assert_eq!(paged, ns_of(&whole_sort));
    assert_eq!(paged.len(), 600);
    // Ranked: the same events, scores to rounding.
    let target = "/api/v1/default/search?query=alpha%20beta&limit=10";
    let (_, want) = whole.get(target);
    let (_, got) = nodes[2].get(target);
    let scores = |body: &serde_json::Value| -> Vec<f64> {
        body["hits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|hit| hit["score"].as_f64().unwrap())
            .collect()
    };
    for (g, w) in scores(&got).iter().zip(scores(&want)) {
        assert!((g - w).abs() <= 1e-5 * w.abs().max(1.0), "{g} {w}");
    }
    assert_eq!(scores(&got).len(), scores(&want).len());

    // Elasticsearch's _count over the cluster: the query DSL and `q`, compiled by every
    // leaf, as one node counts them.
    for (target, body) in [
        (
            "/default/_count",
            json!({"query": {"match": {"message": "alpha"}}}),
        ),
        (
            "/default/_count",
            json!({"query": {"bool": {"must": [{"range": {"n": {"gte": 100}}}],
                                      "must_not": [{"term": {"message": "beta"}}]}}}),
        ),
        ("/default/_count?q=message:gamma%20OR%20delta", json!({})),
        ("/default/_count", json!({})),
    ] {
        let body = body.to_string();
        let (status, want) = whole.request("POST", target, Some(&body));
        assert_eq!(status, 200, "{want}");
        for node in &nodes {
            let (status, got) = node.request("POST", target, Some(&body));
            assert_eq!(status, 200, "{target}: {got}");
            assert_eq!(got["count"], want["count"], "{target} {body}: {got}");
            assert_eq!(got["_shards"]["failed"], 0, "{got}");
        }
    }
    let (status, bad) = nodes[0].request(
        "POST",
        "/default/_count",
        Some(r#"{"query": {"nope": {}}}"#),
    );
    assert_eq!(status, 400, "{bad}");

    // Elasticsearch's _search over the cluster: hits in every order, the total, nested
    // aggregations (their states merged bucket by bucket by the root), `q`, `_msearch`;
    // the same JSON as one node's.
    let aggs = json!({
        "words": {"terms": {"field": "message", "size": 3},
                  "aggs": {"mean": {"avg": {"field": "n"}},
                           "spread": {"percentiles": {"field": "n", "percents": [5, 50, 95]}}}},
        "over_time": {"date_histogram": {"field": "@timestamp", "fixed_interval": "1m"},
                      "aggs": {"top": {"max": {"field": "n"}},
                               "kinds": {"cardinality": {"field": "message"}}}},
        "ranges": {"range": {"field": "n", "ranges": [{"to": 100}, {"from": 100, "to": 450}, {"from": 450}]},
                   "aggs": {"stats": {"stats": {"field": "n"}}}},
        "slots": {"histogram": {"field": "n", "interval": 150},
                  "aggs": {"values": {"value_count": {"field": "n"}}}},
        "which": {"filters": {"filters": {"a": {"match": {"message": "alpha"}},
                                          "b": {"term": {"message": "beta"}}},
                              "other_bucket": true},
                  "aggs": {"total": {"sum": {"field": "n"}}}},
        "pairs": {"adjacency_matrix": {"filters": {"e": {"match": {"message": "error"}},
                                                   "t": {"match": {"message": "timeout"}}}}},
        "spread": {"median_absolute_deviation": {"field": "n"}},
        "one": {"filter": {"range": {"n": {"gte": 300}}},
                "aggs": {"words": {"terms": {"field": "message", "size": 2}}}},
    });
    let sources = |body: &serde_json::Value| -> Vec<serde_json::Value> {
        body["hits"]["hits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|hit| hit["_source"]["n"].clone())
            .collect()
    };
    for (target, body) in [
        (
            "/default/_search",
            json!({"size": 0, "track_total_hits": true, "aggs": aggs}),
        ),
        (
            "/default/_search",
            json!({"query": {"match": {"message": "gamma"}}, "size": 0, "aggs": aggs}),
        ),
        (
            "/default/_search",
            json!({"query": {"match": {"message": "alpha"}}, "size": 7,
                   "sort": [{"n": "desc"}], "track_total_hits": true}),
        ),
        (
            "/default/_search",
            json!({"query": {"bool": {"filter": [{"range": {"n": {"gte": 50, "lt": 400}}}]}},
                   "size": 12, "from": 5, "sort": [{"@timestamp": "asc"}]}),
        ),
        (
            "/default/_search?q=message:delta&size=4&sort=n:asc",
            json!({}),
        ),
        // Named queries: each hit's matched_queries, from the node that holds it.
        (
            "/default/_search",
            json!({"size": 20, "sort": [{"n": "asc"}],
                   "query": {"bool": {"should": [
                       {"match": {"message": {"query": "alpha", "_name": "a"}}},
                       {"range": {"n": {"lt": 10, "_name": "small"}}},
                       {"term": {"message": {"value": "beta", "_name": "b"}}}]}}}),
        ),
        // Collapsed: more hits asked of the same snapshots while too few groups show.
        (
            "/default/_search",
            json!({"collapse": {"field": "message"}, "size": 12, "sort": [{"n": "desc"}],
                   "query": {"match": {"message": "alpha"}}}),
        ),
        // Top hits: kept by each leaf by block id, merged, fetched from the leaf that holds
        // each one.
        (
            "/default/_search",
            json!({"size": 0, "aggs": {
                "t": {"terms": {"field": "message", "size": 4},
                      "aggs": {"h": {"top_hits": {"size": 2, "sort": [{"@timestamp": "desc"}]}},
                               "o": {"top_hits": {"size": 3, "sort": [{"@timestamp": "asc"}],
                                                  "_source": ["n"]}},
                               "by_n": {"top_hits": {"size": 2, "sort": [{"n": "desc"}]}}}},
                "last": {"top_metrics": {"metrics": [{"field": "n"}], "sort": {"@timestamp": "desc"}}},
                "slots": {"histogram": {"field": "n", "interval": 200},
                          "aggs": {"first": {"top_hits": {"size": 1, "sort": [{"@timestamp": "asc"}]}}}}}}),
        ),
    ] {
        let body = body.to_string();
        let (status, want) = whole.request("POST", target, Some(&body));
        assert_eq!(status, 200, "{want}");
        if body.contains("_name") {
            let first = &want["hits"]["hits"][0]["matched_queries"];
            assert_eq!(first, &json!(["a", "small"]), "{want}");
        }
        if body.contains("\"words\"") {
            let words = want["aggregations"]["words"]["buckets"].as_array();
            assert!(words.is_some_and(|w| w.len() == 3), "{want}");
        }
        for node in &nodes {
            let (status, got) = node.request("POST", target, Some(&body));
            assert_eq!(status, 200, "{target} {body}: {got}");
            assert_eq!(got["hits"]["total"], want["hits"]["total"], "{body}");
            assert_eq!(got["aggregations"], want["aggregations"], "{body}");
            assert_eq!(sources(&got), sources(&want), "{body}");
            let matched = |answer: &serde_json::Value| -> Vec<serde_json::Value> {
                answer["hits"]["hits"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|hit| hit["matched_queries"].clone())
                    .collect()
            };
            assert_eq!(matched(&got), matched(&want), "{body}");
            assert_eq!(got["_shards"]["failed"], 0, "{got}");
        }
    }
    // Ranked: the same events, scores to rounding.
    let body = json!({"query": {"match": {"message": "alpha beta"}}, "size": 10}).to_string();
    let (_, want) = whole.request("POST", "/default/_search", Some(&body));
    let (_, got) = nodes[1].request("POST", "/default/_search", Some(&body));
    let es_scores = |body: &serde_json::Value| -> Vec<f64> {
        body["hits"]["hits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|hit| hit["_score"].as_f64().unwrap())
            .collect()
    };
    assert_eq!(es_scores(&got).len(), 10, "{got}");
    for (g, w) in es_scores(&got).iter().zip(es_scores(&want)) {
        assert!((g - w).abs() <= 1e-5 * w.abs().max(1.0), "{g} {w}");
    }
    // Paged with search_after through the cluster: the pages are one node's whole sort.
    let mut paged = Vec::new();
    let mut after: Option<serde_json::Value> = None;
    loop {
        let mut body = json!({"size": 70, "sort": [{"message": "asc"}, {"n": "desc"}]});
        if let Some(after) = &after {
            body["search_after"] = after.clone();
        }
        let (status, page) = nodes[2].request("POST", "/default/_search", Some(&body.to_string()));
        assert_eq!(status, 200, "{page}");
        let hits = page["hits"]["hits"].as_array().unwrap().clone();
        let Some(last) = hits.last() else { break };
        after = Some(last["sort"].clone());
        paged.extend(sources(&page));
    }
    let body = json!({"size": 600, "sort": [{"message": "asc"}, {"n": "desc"}]}).to_string();
    let (_, want) = whole.request("POST", "/default/_search", Some(&body));
    assert_eq!(paged.len(), 600);
    assert_eq!(paged, sources(&want));
    // _msearch: each search over the cluster.
    let lines = format!(
        "{{}}\n{}\n{{\"index\": \"default\"}}\n{}\n",
        json!({"size": 0, "aggs": {"w": {"terms": {"field": "message"}}}}),
        json!({"query": {"match": {"message": "error"}}, "size": 3, "sort": [{"n": "asc"}]})
    );
    let (status, want) = whole.request("POST", "/default/_msearch", Some(&lines));
    assert_eq!(status, 200, "{want}");
    let (status, got) = nodes[0].request("POST", "/default/_msearch", Some(&lines));
    assert_eq!(status, 200, "{got}");
    for (got, want) in got["responses"]
        .as_array()
        .unwrap()
        .iter()
        .zip(want["responses"].as_array().unwrap())
    {
        assert_eq!(got["aggregations"], want["aggregations"]);
        assert_eq!(sources(got), sources(want));
        assert_eq!(got["hits"]["total"], want["hits"]["total"]);
    }

    // Not carried by the leaf API yet: refused by name, never answered from one node's data.
    for (target, body, named) in [
        (
            "/default/_search",
            json!({"suggest": {"s": {"text": "alpah", "term": {"field": "message"}}}}),
            "suggest",
        ),
        (
            "/default/_search",
            json!({"indices_boost": [{"default": 2.0}]}),
            "indices_boost",
        ),
        (
            "/default/_search?scroll=1m",
            json!({"slice": {"id": 0, "max": 2}}),
            "sliced scroll",
        ),
    ] {
        let (status, refused) = nodes[0].request("POST", target, Some(&body.to_string()));
        assert_eq!(status, 400, "{body}: {refused}");
        let text = refused.to_string();
        assert!(
            text.contains(named) && text.contains("across a cluster"),
            "{text}"
        );
    }

    // The UI's field list, and an export, over the cluster: one node's.
    let (status, want) = whole.get("/api/v1/default/fields");
    assert_eq!(status, 200, "{want}");
    let names: Vec<&str> = want["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["_time", "message", "n"], "{want}");
    let export = |server: &Server, target: &str| -> (Vec<serde_json::Value>, Option<String>) {
        let answer = server.send("GET", target, &[], b"");
        assert_eq!(answer.status, 200, "{target}");
        let lines = String::from_utf8(answer.body.clone()).unwrap();
        let events = lines
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        (events, answer.header("x-quarry-partial").map(str::to_owned))
    };
    for node in &nodes {
        let (status, got) = node.get("/api/v1/default/fields");
        assert_eq!(status, 200, "{got}");
        assert_eq!(got, want);
        for target in [
            "/api/v1/default/export?query=*",
            "/api/v1/default/export?query=alpha&sort=time_asc",
            "/api/v1/default/export?query=beta&sort=n:desc",
        ] {
            let (got, partial) = export(node, target);
            assert_eq!(partial, None, "{target}");
            assert_eq!(got, export(&whole, target).0, "{target}");
        }
    }
    let (all, _) = export(&nodes[2], "/api/v1/default/export?query=*");
    assert_eq!(all.len(), 600);
    // Elasticsearch's mapping and field capabilities: from every node's fields, a field only
    // one node holds included.
    let rare = json!({"_time": "2026-11-20T05:00:00Z", "message": "rare", "n": 600, "rare": true});
    ingest(&nodes[1], std::slice::from_ref(&rare));
    ingest(&whole, &[rare]);
    for target in [
        "/default/_mapping",
        "/default",
        "/default/_field_caps?fields=*",
        "/_field_caps?fields=m*,n,r*",
    ] {
        let (status, want) = whole.get(target);
        assert_eq!(status, 200, "{target}: {want}");
        assert!(want.to_string().contains("\"rare\""), "{target}: {want}");
        for node in &nodes {
            let (status, got) = node.get(target);
            assert_eq!(status, 200, "{target}: {got}");
            // The settings name when the index was made, on each node its own.
            let settings = |mut answer: serde_json::Value| {
                if let Some(index) = answer["default"]["settings"]["index"].as_object_mut() {
                    index.remove("creation_date");
                    index.remove("uuid");
                }
                answer
            };
            assert_eq!(settings(got), settings(want.clone()), "{target}");
        }
    }

    // _cat/indices: the events of every node, the bytes of every node's blocks.
    let cat = "/_cat/indices/default?format=json&h=index,docs.count,store.size";
    let (status, want) = whole.get(cat);
    assert_eq!(status, 200, "{want}");
    for node in &nodes {
        let (status, got) = node.get(cat);
        assert_eq!(status, 200, "{got}");
        assert_eq!(got[0]["docs.count"], want[0]["docs.count"], "{got}");
        let bytes: u64 = got[0]["store.size"].as_str().unwrap().parse().unwrap();
        assert!(bytes > 1000, "{got}");
    }

    // Documents by id over the cluster, whichever node holds them: get, _source, _mget, and
    // a terms lookup reading one.
    let body = json!({"size": 4, "sort": [{"n": "asc"}], "query": {"range": {"n": {"gte": 100}}}});
    let (_, found) = whole.request("POST", "/default/_search", Some(&body.to_string()));
    let ids: Vec<String> = found["hits"]["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|hit| hit["_id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids.len(), 4);
    let lookup = json!({"size": 0, "track_total_hits": true, "query": {"terms": {
        "n": {"index": "default", "id": ids[1], "path": "n"}}}})
    .to_string();
    let mget = json!({"ids": [ids[0], ids[3], "no-such-id"]}).to_string();
    for node in &nodes {
        for target in [
            format!("/default/_doc/{}", ids[0]),
            format!("/default/_source/{}", ids[1]),
            format!("/default/_doc/{}", ids[2]),
        ] {
            let (status, want) = whole.get(&target);
            assert_eq!(status, 200, "{target}: {want}");
            let (status, got) = node.get(&target);
            assert_eq!(status, 200, "{target}: {got}");
            assert_eq!(got, want, "{target}");
        }
        let (status, missing) = node.get("/default/_doc/no-such-id");
        assert_eq!(status, 404, "{missing}");
        assert_eq!(missing["found"], false, "{missing}");
        let (_, want) = whole.request("POST", "/default/_mget", Some(&mget));
        let (status, got) = node.request("POST", "/default/_mget", Some(&mget));
        assert_eq!(status, 200, "{got}");
        assert_eq!(got, want);
        let (status, got) = node.request("POST", "/default/_search", Some(&lookup));
        assert_eq!(status, 200, "{got}");
        assert_eq!(got["hits"]["total"]["value"], 1, "{got}");
    }

    // A scroll and a point in time over the cluster: each reads the snapshots its first
    // search read on every node, so an event ingested meanwhile is not seen; their pages are
    // one node's whole sort.
    let scroll_all = |server: &Server, add: Option<&Server>| -> Vec<serde_json::Value> {
        let body = json!({"size": 70, "sort": [{"n": "asc"}]}).to_string();
        let (status, mut page) = server.request("POST", "/default/_search?scroll=1m", Some(&body));
        assert_eq!(status, 200, "{page}");
        assert_eq!(page["_shards"]["failed"], 0, "{page}");
        if let Some(add) = add {
            let late = json!({"_time": "2026-11-20T06:00:00Z", "message": "late", "n": 700});
            ingest(add, &[late]);
        }
        let mut all = Vec::new();
        loop {
            let hits = sources(&page);
            if hits.is_empty() {
                return all;
            }
            all.extend(hits);
            let next = json!({"scroll": "1m", "scroll_id": page["_scroll_id"]}).to_string();
            let (status, next) = server.request("POST", "/_search/scroll", Some(&next));
            assert_eq!(status, 200, "{next}");
            assert_eq!(next["_shards"]["failed"], 0, "{next}");
            page = next;
        }
    };
    let want = scroll_all(&whole, None);
    assert_eq!(want.len(), 601);
    assert_eq!(scroll_all(&nodes[0], Some(&nodes[1])), want);
    let (status, opened) = nodes[2].request("POST", "/default/_pit?keep_alive=1m", None);
    assert_eq!(status, 200, "{opened}");
    let late = json!({"_time": "2026-11-20T06:00:01Z", "message": "late", "n": 701});
    ingest(&nodes[1], &[late]);
    let in_pit = json!({"pit": {"id": opened["id"], "keep_alive": "1m"}, "size": 3,
                        "sort": [{"n": "desc"}], "track_total_hits": true,
                        "query": {"range": {"n": {"gte": 500}}}})
    .to_string();
    let (status, pit) = nodes[2].request("POST", "/_search", Some(&in_pit));
    assert_eq!(status, 200, "{pit}");
    assert_eq!(pit["hits"]["total"]["value"], 102, "{pit}");
    assert_eq!(sources(&pit), [json!(700), json!(600), json!(599)], "{pit}");
    let now = json!({"size": 1, "sort": [{"n": "desc"}], "track_total_hits": true,
                     "query": {"range": {"n": {"gte": 500}}}})
    .to_string();
    let (_, now) = nodes[2].request("POST", "/default/_search", Some(&now));
    assert_eq!(now["hits"]["total"]["value"], 103, "{now}");

    // Writes by `_id` are refused on a node of a cluster (each node would decide them from its
    // own documents only); the items without one in the same request are taken.
    let bulk = [
        json!({"index": {"_index": "default", "_id": "by-id"}}),
        json!({"_time": "2026-11-20T05:00:00Z", "message": "with an id", "n": 900}),
        json!({"index": {"_index": "default"}}),
        json!({"_time": "2026-11-20T05:00:01Z", "message": "without an id", "n": 901}),
        json!({"delete": {"_index": "default", "_id": ids[0]}}),
        json!({"update": {"_index": "default", "_id": ids[1]}}),
        json!({"doc": {"n": 5}}),
    ]
    .iter()
    .map(|line| format!("{line}\n"))
    .collect::<String>();
    let (status, reply) = nodes[1].request("POST", "/_bulk", Some(&bulk));
    assert_eq!(status, 200, "{reply}");
    assert_eq!(reply["errors"], true, "{reply}");
    let statuses: Vec<u64> = reply["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| {
            item.as_object().unwrap().values().next().unwrap()["status"]
                .as_u64()
                .unwrap()
        })
        .collect();
    assert_eq!(statuses, [400, 201, 400, 400], "{reply}");
    assert!(
        reply["items"][2]["delete"]["error"]["reason"]
            .as_str()
            .unwrap()
            .contains("not taken in a cluster"),
        "{reply}"
    );
    for (method, target, body) in [
        ("PUT", "/default/_doc/one".to_owned(), Some("{\"n\": 1}")),
        ("PUT", "/default/_create/one".to_owned(), Some("{\"n\": 1}")),
        (
            "POST",
            format!("/default/_update/{}", ids[1]),
            Some("{\"doc\": {\"n\": 1}}"),
        ),
        ("DELETE", format!("/default/_doc/{}", ids[0]), None),
    ] {
        let (status, refused) = nodes[0].request(method, &target, body);
        assert_eq!(status, 400, "{method} {target}: {refused}");
        assert_eq!(
            refused["error"]["type"], "illegal_argument_exception",
            "{refused}"
        );
    }
    // Only the event without an id was written (on node 1, gone below); the documents named
    // are as they were, on every node.
    let count = json!({"query": {"range": {"n": {"gte": 900}}}}).to_string();
    let (status, counted) = nodes[0].request("POST", "/default/_count", Some(&count));
    assert_eq!(status, 200, "{counted}");
    assert_eq!(counted["count"], 1, "{counted}");
    for id in &ids[..2] {
        let target = format!("/default/_doc/{id}");
        assert_eq!(nodes[2].get(&target), whole.get(&target), "{target}");
    }

    // A node gone: partial, named.
    let gone = nodes.remove(1);
    drop(gone);
    let (status, fields) = nodes[0].get("/api/v1/default/fields");
    assert_eq!(status, 200, "{fields}");
    assert_eq!(fields["partial"], true, "{fields}");
    assert_eq!(fields["fields"][0]["events"], 400, "{fields}");
    let (status, refused) = nodes[0].get("/default/_mapping");
    assert_eq!(status, 503, "{refused}");
    let (status, refused) = nodes[0].get("/_cat/indices?format=json");
    assert_eq!(status, 503, "{refused}");
    // A document read with a node gone: unavailable, not "not found".
    let (status, refused) = nodes[0].get(&format!("/default/_doc/{}", ids[0]));
    assert_eq!(status, 503, "{refused}");
    assert!(
        refused
            .to_string()
            .contains(&format!("127.0.0.1:{}", ports[1])),
        "{refused}"
    );
    let (events, partial) = export(&nodes[0], "/api/v1/default/export?query=*");
    assert_eq!(events.len(), 400);
    let partial = partial.expect("an export lacking a node says so");
    assert!(
        partial.contains(&format!("127.0.0.1:{}", ports[1])),
        "{partial}"
    );
    let (status, partial) = nodes[0].get("/api/v1/default/search?query=*&limit=0&count=true");
    assert_eq!(status, 200, "{partial}");
    assert_eq!(partial["partial"], true, "{partial}");
    assert_eq!(partial["count"], 400);
    let warnings = partial["warnings"].to_string();
    assert!(
        warnings.contains(&format!("127.0.0.1:{}", ports[1])),
        "{warnings}"
    );
    let (status, partial) = nodes[0].request("POST", "/default/_count", Some("{}"));
    assert_eq!(status, 200, "{partial}");
    assert_eq!(partial["count"], 400);
    assert_eq!(partial["_shards"]["failed"], 1, "{partial}");
    assert!(
        partial["_shards"]["failures"][0]["node"]
            .as_str()
            .unwrap_or("")
            .contains(&format!("127.0.0.1:{}", ports[1])),
        "{partial}"
    );
}
