//! The requests Grafana's Elasticsearch data source sends for its logs, raw data and metrics
//! panels (tests/fixtures/grafana), against the real server, each answer checked against a
//! brute-force count over the events the test ingested.

mod common;

use common::Server;
use serde_json::{json, Value};

/// 2026-11-23T10:00:00Z in milliseconds.
const T0: i64 = 1_795_428_000_000;
const EVENTS: i64 = 600;

/// Event `i`: every 500 ms from T0, three hosts, a level, a latency.
fn event(i: i64) -> (i64, String, &'static str, i64) {
    let levels = ["info", "warn", "error", "info", "debug"];
    (
        T0 + i * 500,
        format!("web-{}", i % 3),
        levels[(i % 5) as usize],
        (i * 37) % 1000,
    )
}

fn fixture(name: &str, from: i64, to: i64) -> String {
    let path = format!(
        "{}/tests/fixtures/grafana/{name}.ndjson",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(path)
        .unwrap()
        .replace("$FROM", &from.to_string())
        .replace("$TO", &to.to_string())
}

fn msearch(server: &Server, body: &str) -> Value {
    let answer = server.send(
        "POST",
        "/_msearch?max_concurrent_shard_requests=5",
        &[("Content-Type", "application/x-ndjson")],
        body.as_bytes(),
    );
    assert_eq!(
        answer.status,
        200,
        "{}",
        String::from_utf8_lossy(&answer.body)
    );
    let json = answer.json();
    let response = json["responses"][0].clone();
    assert_eq!(response["status"], 200, "{response}");
    response
}

#[test]
fn grafana_panels_get_elasticsearch_shaped_answers() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("d"));
    let mut body = String::new();
    for i in 0..EVENTS {
        let (time, host, level, latency) = event(i);
        body.push_str(
            &json!({"@timestamp": time, "message": format!("request {i} done"), "host": host, "level": level, "latency": latency})
                .to_string(),
        );
        body.push('\n');
    }
    let (status, answer) = server.request("POST", "/api/v1/default/ingest", Some(&body));
    assert_eq!(status, 200, "{answer}");
    // The field list Grafana's query editor reads.
    let (status, mapping) = server.get("/default/_mapping");
    assert_eq!(status, 200, "{mapping}");
    let properties = &mapping["default"]["mappings"]["properties"];
    assert_eq!(properties["@timestamp"]["type"], "date", "{mapping}");
    assert_eq!(properties["latency"]["type"], "long", "{mapping}");
    assert_eq!(properties["host"]["type"], "text", "{mapping}");
    assert_eq!(properties["host"]["fields"]["keyword"]["type"], "keyword");
    let (status, _) = server.get("/no-such-tenant/_mapping");
    assert_eq!(status, 404);

    let (from, to) = (T0 + 10_000, T0 + 250_000);
    let in_range: Vec<(i64, String, &str, i64)> = (0..EVENTS)
        .map(event)
        .filter(|e| e.0 >= from && e.0 <= to)
        .collect();

    // Logs: the newest 500 matching hits, newest first, and a 10 s histogram filled over the
    // whole range (extended_bounds, min_doc_count 0).
    let logs = msearch(&server, &fixture("logs", from, to));
    let matching: Vec<&(i64, String, &str, i64)> = in_range
        .iter()
        .filter(|e| e.2 == "error" || e.2 == "warn")
        .collect();
    assert_eq!(logs["hits"]["total"]["value"], matching.len() as u64);
    let hits = logs["hits"]["hits"].as_array().unwrap();
    assert_eq!(hits.len(), matching.len().min(500));
    // Each hit's `sort` values start with its time in milliseconds.
    let times: Vec<i64> = hits
        .iter()
        .map(|h| h["sort"][0].as_i64().unwrap())
        .collect();
    assert!(times.windows(2).all(|w| w[0] >= w[1]), "newest first");
    let buckets = logs["aggregations"]["1"]["buckets"].as_array().unwrap();
    let first = from / 10_000 * 10_000;
    assert_eq!(
        buckets.len() as i64,
        (to - first) / 10_000 + 1,
        "every 10 s bucket of the range"
    );
    for bucket in buckets {
        let start = bucket["key"].as_i64().unwrap();
        let expected = matching
            .iter()
            .filter(|e| e.0 >= start && e.0 < start + 10_000)
            .count();
        assert_eq!(bucket["doc_count"], expected as u64, "bucket {start}");
    }

    // Raw data: 500 hits, newest first, with their fields nested as sent.
    let raw = msearch(&server, &fixture("raw_data", from, to));
    assert_eq!(raw["hits"]["total"]["value"], in_range.len() as u64);
    let hits = raw["hits"]["hits"].as_array().unwrap();
    assert_eq!(hits.len(), in_range.len().min(500));
    let newest = in_range.last().unwrap();
    assert_eq!(hits[0]["_source"]["host"], newest.1.as_str());
    assert_eq!(hits[0]["_source"]["latency"], newest.3);

    // Count over time grouped by host: each host's doc_count and its per-minute counts.
    let grouped = msearch(&server, &fixture("metric_simple", from, to));
    let hosts = grouped["aggregations"]["3"]["buckets"].as_array().unwrap();
    assert_eq!(hosts.len(), 3, "{grouped}");
    let keys: Vec<&str> = hosts.iter().map(|h| h["key"].as_str().unwrap()).collect();
    assert_eq!(keys, ["web-2", "web-1", "web-0"], "ordered by _key desc");
    for host in hosts {
        let name = host["key"].as_str().unwrap();
        let events: Vec<_> = in_range.iter().filter(|e| e.1 == name).collect();
        assert_eq!(host["doc_count"], events.len() as u64, "{name}");
        for minute in host["2"]["buckets"].as_array().unwrap() {
            let start = minute["key"].as_i64().unwrap();
            let expected = events
                .iter()
                .filter(|e| e.0 >= start && e.0 < start + 60_000)
                .count();
            assert_eq!(minute["doc_count"], expected as u64, "{name} at {start}");
        }
    }

    // Ordered by key and cut to size: the first keys, the rest counted as others.
    let (status, answer) = server.request(
        "POST",
        "/default/_search",
        Some(&json!({"size": 0, "aggs": {"h": {"terms": {"field": "host", "size": 2, "order": {"_key": "asc"}}}}}).to_string()),
    );
    assert_eq!(status, 200, "{answer}");
    let terms = &answer["aggregations"]["h"];
    let count = |host: &str| (0..EVENTS).filter(|&i| event(i).1 == host).count() as u64;
    assert_eq!(
        terms["buckets"],
        json!([{"key": "web-0", "doc_count": count("web-0")}, {"key": "web-1", "doc_count": count("web-1")}])
    );
    assert_eq!(terms["sum_other_doc_count"], count("web-2"));

    // Max latency per second.
    let metric = msearch(&server, &fixture("metric_multi", from, to));
    let seconds = metric["aggregations"]["2"]["buckets"].as_array().unwrap();
    assert_eq!(seconds.len() as i64, (to - from) / 1000 + 1);
    for second in seconds {
        let start = second["key"].as_i64().unwrap();
        let max = in_range
            .iter()
            .filter(|e| e.0 >= start && e.0 < start + 1000)
            .map(|e| e.3)
            .max();
        match max {
            Some(max) => assert_eq!(second["1"]["value"].as_f64(), Some(max as f64), "{start}"),
            None => assert!(second["1"]["value"].is_null(), "{start}: {second}"),
        }
    }
}
