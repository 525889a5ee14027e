//! Tenants on the real binary: keys, isolation through every endpoint, names that could reach
//! a path, the admin API, deletion from disk and from answers, persistence across restarts,
//! quotas (429 with Retry-After and a reason) and retention.

mod common;

use common::{call, quarry, tenant_count as count, word_events as events, Server};
use serde_json::{json, Value};
use std::path::Path;

const ADMIN: &str = "test-admin-token";

fn start(data: &Path) -> Server {
    let mut server = Server::spawn(
        &["--data", data.to_str().unwrap(), "--listen", "127.0.0.1:0"],
        &[("QUARRY_ADMIN_TOKEN", ADMIN)],
        Path::new("."),
    );
    server.token = Some(ADMIN.into());
    server
}

/// The status of a GET with `key`.
fn get_status(server: &Server, target: &str, key: Option<&str>) -> u16 {
    call(server, "GET", target, key, "").0
}

fn create(server: &Server, body: Value) -> String {
    let (status, answer) = server.request("POST", "/api/v1/tenants", Some(&body.to_string()));
    assert_eq!(status, 201, "{answer}");
    answer["api_key"].as_str().unwrap().to_owned()
}

#[test]
fn a_tenants_key_reaches_its_own_data_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    let server = start(&data);
    let key_a = create(&server, json!({"name": "team-a"}));
    let key_b = create(&server, json!({"name": "team-b"}));
    assert_ne!(key_a, key_b);

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
        "/api/v1/team-b/ingest",
        Some(&key_b),
        &events("betaword", 30),
    );
    assert_eq!(status, 200, "{answer}");
    assert_eq!(count(&server, "team-a", &key_a, "alphaword"), 20);
    assert_eq!(count(&server, "team-b", &key_b, "betaword"), 30);
    // B's events are not in A's answers, nor A's in B's: not by word, not by match-all.
    assert_eq!(count(&server, "team-a", &key_a, "betaword"), 0);
    assert_eq!(count(&server, "team-b", &key_b, "alphaword"), 0);
    assert_eq!(count(&server, "team-a", &key_a, "*"), 20);

    // A's key on every endpoint of B, and no key, and a wrong key: 401, nothing read or written.
    let bulk_b = format!(
        "{}\n{}\n",
        json!({"index": {"_index": "team-b"}}),
        json!({"message": "intruder"})
    );
    let endpoints: Vec<(&str, String, String)> = vec![
        ("GET", "/api/v1/team-b/search?query=*".into(), String::new()),
        (
            "POST",
            "/api/v1/team-b/search".into(),
            json!({"query": "*"}).to_string(),
        ),
        ("GET", "/api/v1/team-b/fields".into(), String::new()),
        ("GET", "/api/v1/team-b/tail?query=*".into(), String::new()),
        (
            "POST",
            "/api/v1/team-b/ingest".into(),
            events("intruder", 1),
        ),
        ("POST", "/api/v1/team-b/_bulk".into(), bulk_b.clone()),
        ("GET", "/team-b/_search".into(), String::new()),
        (
            "POST",
            "/team-b/_search".into(),
            json!({"query": {"match_all": {}}}).to_string(),
        ),
    ];
    for (method, target, body) in &endpoints {
        for key in [Some(key_a.as_str()), None, Some("qk_wrong"), Some("")] {
            let (status, answer) = call(&server, method, target, key, body);
            assert_eq!(status, 401, "{method} {target} with {key:?}: {answer}");
            // Quarry's error shape, or Elasticsearch's for the bulk API.
            assert!(
                answer["error"].is_string() || answer["error"]["reason"].is_string(),
                "{answer}"
            );
        }
    }
    // Bulk through the shared paths: the item naming B fails with 401, A's own item goes in.
    let mixed = format!(
        "{}\n{}\n{}\n{}\n",
        json!({"index": {"_index": "team-b"}}),
        json!({"message": "intruder"}),
        json!({"index": {"_index": "team-a"}}),
        json!({"message": "alphaword via bulk"}),
    );
    for target in ["/_bulk", "/team-a/_bulk"] {
        let (status, answer) = call(&server, "POST", target, Some(&key_a), &mixed);
        assert_eq!(status, 200, "{answer}");
        assert_eq!(answer["errors"], true, "{answer}");
        assert_eq!(answer["items"][0]["index"]["status"], 401, "{answer}");
        assert_eq!(answer["items"][1]["index"]["status"], 201, "{answer}");
    }
    assert_eq!(count(&server, "team-b", &key_b, "intruder"), 0);
    assert_eq!(count(&server, "team-a", &key_a, "alphaword"), 22);
    // The admin token reaches both; the default tenant only through it.
    assert_eq!(count(&server, "team-b", ADMIN, "betaword"), 30);
    assert_eq!(
        get_status(&server, "/api/v1/default/search?query=*", Some(&key_a)),
        401
    );
    // An unknown tenant is 401 to a tenant's key (names cannot be probed), 404 to the admin.
    assert_eq!(
        get_status(&server, "/api/v1/nobody/search?query=*", Some(&key_a)),
        401
    );
    assert_eq!(
        get_status(&server, "/api/v1/nobody/search?query=*", Some(ADMIN)),
        404
    );
    // Tenant keys do not manage tenants.
    for (method, target) in [
        ("GET", "/api/v1/tenants"),
        ("GET", "/api/v1/tenants/team-b"),
        ("DELETE", "/api/v1/tenants/team-b"),
    ] {
        let (status, _) = call(&server, method, target, Some(&key_a), "");
        assert_eq!(status, 401, "{method} {target}");
    }
    let (status, _) = call(
        &server,
        "POST",
        "/api/v1/tenants",
        Some(&key_a),
        &json!({"name": "x"}).to_string(),
    );
    assert_eq!(status, 401);
    // The list shows the tenants, never a key or its hash.
    let (status, list) = server.get("/api/v1/tenants");
    assert_eq!(status, 200);
    let names: Vec<&str> = list["tenants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["default", "team-a", "team-b"]);
    let text = list.to_string();
    assert!(
        !text.contains(&key_a) && !text.contains("key_sha256"),
        "{text}"
    );
    let registry = std::fs::read_to_string(data.join("tenants.json")).unwrap();
    assert!(
        !registry.contains(&key_a) && !registry.contains(&key_b),
        "a key stored in clear"
    );
}

#[test]
fn names_that_could_reach_a_path_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    let server = start(&data);
    let long = "a".repeat(64);
    for name in [
        "../x",
        "%2e%2e",
        "..",
        "",
        &long,
        "Team",
        "a/b",
        "a b",
        "tenants",
        "-x",
        "É",
        "a\u{2215}b",
        "a\u{ff0f}b",
    ] {
        let (status, answer) = server.request(
            "POST",
            "/api/v1/tenants",
            Some(&json!({"name": name}).to_string()),
        );
        assert_eq!(status, 400, "{name:?}: {answer}");
    }
    // As path segments they name no tenant: never 200, never a server error.
    for target in [
        "/api/v1/%2e%2e/search?query=*",
        "/api/v1/..%2fx/search",
        "/api/v1/%ff/search",
        "/api/v1/%00/fields",
    ] {
        let (status, answer) = call(&server, "GET", target, Some(ADMIN), "");
        assert!(
            (400..500).contains(&status) && status != 401,
            "{target}: {status} {answer}"
        );
    }
    let (status, _) = server.request(
        "POST",
        "/api/v1/tenants",
        Some(&json!({"name": "default"}).to_string()),
    );
    assert_eq!(status, 400);
    create(&server, json!({"name": "ok-name_1"}));
    let (status, _) = server.request(
        "POST",
        "/api/v1/tenants",
        Some(&json!({"name": "ok-name_1"}).to_string()),
    );
    assert_eq!(status, 409);
    // Nothing was created outside the data directory.
    assert!(!dir.path().join("x").exists());
    let made: Vec<String> = std::fs::read_dir(data.join("tenants"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(made, ["ok-name_1"]);
}

#[test]
fn a_deleted_tenant_is_gone_from_disk_and_answers_and_tenants_survive_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    let server = start(&data);
    let key_a = create(&server, json!({"name": "keep"}));
    let key_b = create(&server, json!({"name": "gone"}));
    for (tenant, key, word) in [("keep", &key_a, "keptword"), ("gone", &key_b, "gonewordx")] {
        let (status, answer) = call(
            &server,
            "POST",
            &format!("/api/v1/{tenant}/ingest"),
            Some(key),
            &events(word, 10),
        );
        assert_eq!(status, 200, "{answer}");
    }
    // Flushed to block files by a clean stop, then a restart: both tenants still there.
    assert!(server.terminate());
    assert!(data
        .join("tenants/gone/blocks")
        .read_dir()
        .unwrap()
        .next()
        .is_some());
    let server = start(&data);
    assert_eq!(count(&server, "keep", &key_a, "keptword"), 10);
    assert_eq!(count(&server, "gone", &key_b, "gonewordx"), 10);
    // Events still in memory and the WAL when the tenant goes.
    let (status, _) = call(
        &server,
        "POST",
        "/api/v1/gone/ingest",
        Some(&key_b),
        &events("gonewordx", 5),
    );
    assert_eq!(status, 200);
    let (status, answer) = server.request("DELETE", "/api/v1/tenants/gone", None);
    assert_eq!(status, 200, "{answer}");
    assert!(!data.join("tenants/gone").exists());
    assert!(!data.join("wal/gone").exists());
    assert_eq!(
        get_status(&server, "/api/v1/gone/search?query=*", Some(&key_b)),
        401
    );
    assert_eq!(
        get_status(&server, "/api/v1/gone/search?query=*", Some(ADMIN)),
        404
    );
    let (status, _) = server.request("DELETE", "/api/v1/tenants/gone", None);
    assert_eq!(status, 404);
    // Through a crash and a restart it stays gone; a new tenant of the same name is empty.
    drop(server);
    let server = start(&data);
    assert_eq!(
        get_status(&server, "/api/v1/gone/search?query=*", Some(ADMIN)),
        404
    );
    let key_new = create(&server, json!({"name": "gone"}));
    assert_ne!(key_new, key_b);
    assert_eq!(count(&server, "gone", &key_new, "*"), 0);
    assert_eq!(
        get_status(&server, "/api/v1/gone/search?query=*", Some(&key_b)),
        401,
        "the old key must not open the new tenant"
    );
    assert_eq!(count(&server, "keep", &key_a, "keptword"), 10);
}

#[test]
fn without_an_admin_token_there_are_no_tenants_and_no_public_address() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    let server = Server::start(&data);
    let (status, answer) = server.request(
        "POST",
        "/api/v1/tenants",
        Some(&json!({"name": "a"}).to_string()),
    );
    assert_eq!(status, 403, "{answer}");
    assert!(
        answer["error"].as_str().unwrap().contains("--admin-token"),
        "{answer}"
    );
    drop(server);
    let refused = quarry(&[
        "serve",
        "--data",
        data.to_str().unwrap(),
        "--listen",
        "0.0.0.0:0",
    ]);
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("admin token"), "{stderr}");
}

#[test]
fn quotas_answer_429_with_a_reason_and_when_to_retry() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    let server = start(&data);
    let per_request = create(
        &server,
        json!({"name": "small", "quotas": {"events_per_request": 5}}),
    );
    let rated = create(
        &server,
        json!({"name": "rated", "quotas": {"ingest_bytes_per_second": 1000, "ingest_burst_bytes": 2000}}),
    );
    let stored = create(
        &server,
        json!({"name": "stored", "quotas": {"stored_bytes": 1}}),
    );
    let free = create(&server, json!({"name": "free"}));

    let refused = |tenant: &str, key: &str, body: &str| {
        let headers = [("Authorization", format!("Bearer {key}"))];
        let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
        let answer = server.send(
            "POST",
            &format!("/api/v1/{tenant}/ingest"),
            &headers,
            body.as_bytes(),
        );
        (
            answer.status,
            answer.header("retry-after").map(str::to_owned),
            answer.json(),
        )
    };
    let (status, _, _) = refused("small", &per_request, &events("w", 5));
    assert_eq!(status, 200);
    let (status, retry, answer) = refused("small", &per_request, &events("w", 6));
    assert_eq!(status, 429, "{answer}");
    assert!(retry.is_some());
    assert!(
        answer["error"].as_str().unwrap().contains("quota"),
        "{answer}"
    );

    // 2000 bytes of burst at 1000 bytes/s: ~1500 bytes pass, the next 1500 at once do not.
    let body = events("rate", 1).repeat(1500 / events("rate", 1).len());
    let (status, _, answer) = refused("rated", &rated, &body);
    assert_eq!(status, 200, "{answer}");
    let (status, retry, answer) = refused("rated", &rated, &body);
    assert_eq!(status, 429, "{answer}");
    let retry: u64 = retry.unwrap().parse().unwrap();
    assert!((1..=2).contains(&retry), "{retry}");

    // Stored bytes: the first ingest fits (nothing stored), then the tenant is over.
    let (status, _, _) = refused("stored", &stored, &events("s", 3));
    assert_eq!(status, 200);
    let (status, retry, answer) = refused("stored", &stored, &events("s", 3));
    assert_eq!(status, 429, "{answer}");
    assert!(retry.is_some());

    // Refused events are not stored; a tenant without quotas is not affected.
    assert_eq!(count(&server, "small", &per_request, "*"), 5);
    assert_eq!(count(&server, "stored", &stored, "*"), 3);
    let (status, _, _) = refused("free", &free, &events("f", 100));
    assert_eq!(status, 200);
}

#[test]
fn retention_deletes_blocks_past_their_age() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    let server = start(&data);
    let key = create(&server, json!({"name": "short", "retention": "1d"}));
    let old: String = (0..10)
        .map(|i| {
            format!(
                "{}\n",
                json!({"_time": format!("2020-01-01T00:00:{i:02}Z"), "message": "oldword"})
            )
        })
        .collect();
    let (status, _) = call(&server, "POST", "/api/v1/short/ingest", Some(&key), &old);
    assert_eq!(status, 200);
    // A clean stop flushes the old events into their own block.
    assert!(server.terminate());
    let server = start(&data);
    let (status, _) = call(
        &server,
        "POST",
        "/api/v1/short/ingest",
        Some(&key),
        &events("newword", 7),
    );
    assert_eq!(status, 200);
    assert!(server.terminate());
    // Retention runs when the tenant opens: the 2020 block goes, today's stays.
    let server = start(&data);
    let mut remaining = u64::MAX;
    for _ in 0..100 {
        remaining = count(&server, "short", &key, "oldword");
        if remaining == 0 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(remaining, 0);
    assert_eq!(count(&server, "short", &key, "newword"), 7);
    let blocks = std::fs::read_dir(data.join("tenants/short/blocks"))
        .unwrap()
        .count();
    assert_eq!(blocks, 1);
}

/// `GET /metrics` read by a Prometheus text-format parser: per-tenant ingest counts, refusals,
/// request latency histograms per endpoint, background work and WAL figures.
#[test]
fn metrics_parse_and_count_what_happened() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    let server = start(&data);
    let key = create(
        &server,
        json!({"name": "m1", "quotas": {"events_per_request": 50}}),
    );
    for _ in 0..3 {
        let (status, _) = call(
            &server,
            "POST",
            "/api/v1/m1/ingest",
            Some(&key),
            &events("metricword", 40),
        );
        assert_eq!(status, 200);
    }
    let (status, _) = call(
        &server,
        "POST",
        "/api/v1/m1/ingest",
        Some(&key),
        &events("metricword", 60),
    );
    assert_eq!(status, 429);
    assert_eq!(count(&server, "m1", &key, "metricword"), 120);
    // Only the admin token reads metrics (the series name tenants).
    let (status, _) = call(&server, "GET", "/metrics", Some(&key), "");
    assert_eq!(status, 401);
    let answer = server.send(
        "GET",
        "/metrics",
        &[("Authorization", &format!("Bearer {ADMIN}"))],
        b"",
    );
    assert_eq!(answer.status, 200);
    let text = String::from_utf8(answer.body).unwrap();
    let scrape = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_owned()))).unwrap();
    let value = |name: &str, labels: &[(&str, &str)]| -> Option<f64> {
        scrape
            .samples
            .iter()
            .find(|s| s.metric == name && labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
            .map(|s| match &s.value {
                prometheus_parse::Value::Counter(v)
                | prometheus_parse::Value::Gauge(v)
                | prometheus_parse::Value::Untyped(v) => *v,
                other => panic!("{name}: {other:?}"),
            })
    };
    let m1 = [("tenant", "m1")];
    assert_eq!(
        value("quarry_ingested_events_total", &m1),
        Some(120.0),
        "{text}"
    );
    assert!(value("quarry_ingested_bytes_total", &m1).unwrap() > 120.0 * 20.0);
    assert_eq!(
        value(
            "quarry_refused_requests_total",
            &[("tenant", "m1"), ("reason", "quota")]
        ),
        Some(1.0)
    );
    assert_eq!(value("quarry_events", &m1), Some(120.0));
    assert!(value("quarry_memory_events", &m1).is_some());
    assert!(value("quarry_wal_bytes", &m1).unwrap() > 0.0);
    assert!(value("quarry_seal_rounds_total", &m1).unwrap() >= 3.0);
    assert!(value("quarry_flushes_total", &m1).is_some());
    assert!(value("quarry_merge_seconds_total", &m1).is_some());
    // The latency histogram of the ingest endpoint counted all four requests, by status.
    let ingest_count = |status: &str| {
        scrape.samples.iter().find_map(|s| match &s.value {
            prometheus_parse::Value::Histogram(buckets)
                if s.metric == "quarry_http_request_duration_seconds"
                    && s.labels.get("endpoint") == Some("/api/v1/:tenant/ingest")
                    && s.labels.get("status") == Some(status) =>
            {
                Some(buckets.last().unwrap().count)
            }
            _ => None,
        })
    };
    assert_eq!(ingest_count("200"), Some(3.0), "{text}");
    assert_eq!(ingest_count("429"), Some(1.0), "{text}");
    // A deleted tenant's series go.
    let (status, _) = server.request("DELETE", "/api/v1/tenants/m1", None);
    assert_eq!(status, 200);
    let answer = server.send(
        "GET",
        "/metrics",
        &[("Authorization", &format!("Bearer {ADMIN}"))],
        b"",
    );
    let text = String::from_utf8(answer.body).unwrap();
    assert!(!text.contains("tenant=\"m1\""), "{text}");
}

/// Quotas and retention change without a restart (`PATCH`), durably, for the admin only.
#[test]
fn quotas_change_without_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    let server = start(&data);
    let key = create(
        &server,
        json!({"name": "live", "quotas": {"events_per_request": 5}}),
    );
    let ingest = |server: &Server, n: usize| {
        call(
            server,
            "POST",
            "/api/v1/live/ingest",
            Some(&key),
            &events("patchword", n),
        )
        .0
    };
    assert_eq!(ingest(&server, 6), 429);
    let (status, _) = call(
        &server,
        "PATCH",
        "/api/v1/tenants/live",
        Some(&key),
        &json!({"quotas": {}}).to_string(),
    );
    assert_eq!(status, 401, "a tenant's key does not change its quotas");
    let (status, answer) = server.request(
        "PATCH",
        "/api/v1/tenants/live",
        Some(&json!({"quotas": {"events_per_request": 10}, "retention": "2d"}).to_string()),
    );
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["quotas"]["events_per_request"], 10);
    assert_eq!(answer["retention_seconds"], 2 * 86_400);
    assert_eq!(ingest(&server, 6), 200);
    assert_eq!(ingest(&server, 11), 429);
    // Persisted: after a restart the new quota holds; then null removes it.
    assert!(server.terminate());
    let server = start(&data);
    assert_eq!(ingest(&server, 11), 429);
    let (status, answer) = server.request(
        "PATCH",
        "/api/v1/tenants/live",
        Some(&json!({"quotas": null, "retention": null}).to_string()),
    );
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["retention_seconds"], Value::Null);
    assert_eq!(ingest(&server, 11), 200);
    let (status, _) = server.request(
        "PATCH",
        "/api/v1/tenants/live",
        Some(&json!({"quotas": {"ingest_bytes_per_second": 0}}).to_string()),
    );
    assert_eq!(status, 400);
    let (status, _) = server.request("PATCH", "/api/v1/tenants/nobody", Some("{}"));
    assert_eq!(status, 404);
}
