//! Field mappings end to end on the real binary: `quarry index --mapping FILE` and a server's
//! `PUT /api/v1/{tenant}/mapping` / Elasticsearch `PUT /{index}/_mapping`. A keyword field
//! matches whole values only, a number field numbers, a field not indexed refuses queries, a
//! field not stored is searchable but not shown, bare words search the default fields, a line
//! that does not fit its mapping is reported by number while the rest is ingested, and a
//! mapped field cannot change.

mod common;

use common::{quarry, Server};
use serde_json::{json, Value};
use std::path::Path;

const MAPPING: &str = r#"{
  "properties": {
    "id":     {"type": "keyword", "index": false},
    "text":   {"type": "text", "stored": false},
    "host":   {"type": "keyword"},
    "status": {"type": "long"}
  },
  "default_search_fields": ["text"]
}"#;

fn events() -> Vec<Value> {
    vec![
        json!({"_time": "2026-11-20T10:00:00Z", "id": "doc-1", "text": "disk full on the primary", "host": "web-1", "status": 500, "note": "web"}),
        json!({"_time": "2026-11-20T10:00:01Z", "id": "doc-2", "text": "all good", "host": "Web-1", "status": 200}),
        json!({"_time": "2026-11-20T10:00:02Z", "id": "doc-3", "text": "web server restarted", "host": "db", "status": 503}),
    ]
}

fn ndjson(events: &[Value]) -> String {
    events.iter().map(|e| format!("{e}\n")).collect()
}

/// The events of `quarry search` (one JSON line per hit, then the count line).
fn search(data: &Path, query: &str) -> (Vec<Value>, String) {
    let out = quarry(&[
        "search",
        "--data",
        data.to_str().unwrap(),
        "--sort",
        "time-asc",
        "--limit",
        "100",
        query,
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let events = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| v.get("event").cloned())
        .collect();
    (
        events,
        if out.status.success() {
            String::new()
        } else {
            stderr
        },
    )
}

fn ids(events: &[Value], sent: &[Value]) -> Vec<usize> {
    // Hits do not show `text` (not stored); find each by its id.
    events
        .iter()
        .map(|e| sent.iter().position(|s| s["id"] == e["id"]).unwrap())
        .collect()
}

#[test]
fn index_with_a_mapping_then_search() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    let mapping = dir.path().join("mapping.json");
    std::fs::write(&mapping, MAPPING).unwrap();
    let input = dir.path().join("in.json");
    let mut lines = ndjson(&events());
    // Line 4 does not fit: `status` is a number field.
    lines.push_str(r#"{"_time": "2026-11-20T10:00:03Z", "id": "doc-4", "status": "five hundred"}"#);
    lines.push('\n');
    std::fs::write(&input, lines).unwrap();

    let out = quarry(&[
        "index",
        "--data",
        data.to_str().unwrap(),
        "--mapping",
        mapping.to_str().unwrap(),
        input.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains(":4:") && stderr.contains("\"status\" is mapped to take a number"),
        "{stderr}"
    );

    let sent = events();
    let d = data.as_path();
    // Keyword: whole value, case kept.
    assert_eq!(ids(&search(d, "host:web-1").0, &sent), [0]);
    assert_eq!(ids(&search(d, "host:Web-1").0, &sent), [1]);
    assert!(search(d, "host:web").0.is_empty());
    // Number: equality and ranges.
    assert_eq!(ids(&search(d, "status:503").0, &sent), [2]);
    assert_eq!(ids(&search(d, "status:>=500").0, &sent), [0, 2]);
    // Bare words search only `text` (not `note`, not `host`): `web` is in doc 3's text.
    assert_eq!(ids(&search(d, "web").0, &sent), [2]);
    assert_eq!(ids(&search(d, "note:web").0, &sent), [0]);
    // `text` is searchable but not shown; the other fields are shown as sent.
    let (hits, _) = search(d, "disk");
    let mut shown = sent[0].clone();
    let shown = shown.as_object_mut().unwrap();
    shown.remove("text");
    shown.remove("_time");
    assert_eq!(hits, [Value::Object(shown.clone())]);
    // `id` is not indexed: a query on it is an error naming it.
    let (hits, error) = search(d, "id:doc-1");
    assert!(hits.is_empty());
    assert!(error.contains("\"id\" is not indexed"), "{error}");

    // A mapping only grows: changing `host` is refused. A bad mapping file names the place
    // of the mistake. Either way the run stops before indexing anything.
    let refused = |mapping: &str| {
        let path = dir.path().join("other.json");
        std::fs::write(&path, mapping).unwrap();
        let out = quarry(&[
            "index",
            "--data",
            d.to_str().unwrap(),
            "--mapping",
            path.to_str().unwrap(),
            input.to_str().unwrap(),
        ]);
        assert_eq!(out.status.code(), Some(1));
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let stderr = refused(r#"{"properties": {"host": {"type": "text"}}}"#);
    assert!(
        stderr.contains("properties.host") && stderr.contains("already mapped"),
        "{stderr}"
    );
    let stderr = refused(r#"{"properties": {"x": {"type": "strng"}}}"#);
    assert!(
        stderr.contains("properties.x.type") && stderr.contains("unsupported type"),
        "{stderr}"
    );
}

#[test]
fn a_server_takes_a_mapping_over_its_api() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("d"));
    let put = |target: &str, body: &str| {
        server.send(
            "PUT",
            target,
            &[("content-type", "application/json")],
            body.as_bytes(),
        )
    };

    let answer = put("/api/v1/default/mapping", MAPPING);
    assert_eq!(
        answer.status,
        200,
        "{}",
        String::from_utf8_lossy(&answer.body)
    );
    assert_eq!(
        answer.json()["properties"]["host"],
        json!({"type": "keyword"})
    );
    // Elasticsearch's form adds a field.
    let answer = put(
        "/default/_mapping",
        r#"{"properties": {"labels": {"properties": {"app": {"type": "keyword"}}}}}"#,
    );
    assert_eq!(answer.status, 200);
    assert_eq!(answer.json(), json!({"acknowledged": true}));
    // Changing a mapped field is a 400 that names it.
    let answer = put(
        "/default/_mapping",
        r#"{"properties": {"status": {"type": "keyword"}}}"#,
    );
    assert_eq!(answer.status, 400);
    assert!(String::from_utf8_lossy(&answer.body).contains("properties.status"));
    let answer = put(
        "/api/v1/default/mapping",
        r#"{"properties": {"x": {"type": "text", "bogus": 1}}}"#,
    );
    assert_eq!(answer.status, 400);
    assert!(String::from_utf8_lossy(&answer.body).contains("properties.x.bogus"));

    let mut body = ndjson(&events());
    body.push_str(r#"{"_time": "2026-11-20T10:00:03Z", "id": "doc-4", "status": "five hundred", "labels": {"app": "pay"}}"#);
    body.push('\n');
    let answer = server.send("POST", "/api/v1/default/ingest", &[], body.as_bytes());
    assert_eq!(answer.status, 200);
    let answer = answer.json();
    assert_eq!(answer["ingested"], 3, "{answer}");
    assert_eq!(answer["errors"][0]["line"], 4, "{answer}");

    let search = |query: &str| {
        let (status, answer) = server.get(&format!(
            "/api/v1/default/search?sort=time_asc&count=true&query={}",
            query
                .replace(' ', "%20")
                .replace(':', "%3A")
                .replace('>', "%3E")
                .replace('=', "%3D")
        ));
        (status, answer)
    };
    let sent = events();
    let hit_ids = |answer: &Value| {
        let hits: Vec<Value> = answer["hits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["event"].clone())
            .collect();
        ids(&hits, &sent)
    };
    let (status, answer) = search("host:web-1");
    assert_eq!(status, 200, "{answer}");
    assert_eq!(hit_ids(&answer), [0]);
    let (_, answer) = search("status:>=500");
    assert_eq!(hit_ids(&answer), [0, 2]);
    let (_, answer) = search("web");
    assert_eq!(hit_ids(&answer), [2]);
    assert!(answer["hits"][0]["event"].get("text").is_none(), "{answer}");
    let (status, answer) = search("id:doc-1");
    assert_eq!(status, 400, "{answer}");

    // GET shows the mapping; Elasticsearch's GET shows mapped fields as mapped.
    let (status, answer) = server.get("/api/v1/default/mapping");
    assert_eq!(status, 200);
    assert_eq!(
        answer["properties"]["labels.app"],
        json!({"type": "keyword"})
    );
    let (_, answer) = server.get("/default/_mapping");
    let properties = &answer["default"]["mappings"]["properties"];
    assert_eq!(properties["host"], json!({"type": "keyword"}), "{answer}");
    assert_eq!(
        properties["labels"]["properties"]["app"],
        json!({"type": "keyword"}),
        "{answer}"
    );
    assert_eq!(
        properties["text"],
        json!({"type": "text", "stored": false}),
        "{answer}"
    );
    assert!(server.terminate());
}
