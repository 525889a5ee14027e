//! `quarry serve` end to end: the real binary on a loopback port, asked over plain HTTP/1.1.
//! Its search answers must be the CLI's (the same `SearchRequest` through the same code),
//! blocks indexed while it runs are searchable on the next request, bad input gets 400 with
//! the position, unknown tenants 404, and SIGTERM stops it cleanly.

mod common;

use common::{quarry, Server};
use std::path::Path;
use std::process::Command;

/// The CLI's lines for the same request, gathered into the API's shape.
fn cli_answer(data: &Path, args: &[&str]) -> serde_json::Value {
    let mut all = vec!["search", "--data", data.to_str().unwrap()];
    all.extend_from_slice(args);
    let output = quarry(&all);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let mut answer = serde_json::json!({ "hits": [] });
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let value: serde_json::Value = serde_json::from_str(line).unwrap();
        if value.get("event").is_some() {
            answer["hits"].as_array_mut().unwrap().push(value);
        } else {
            for (key, v) in value.as_object().unwrap() {
                answer[key] = v.clone();
            }
        }
    }
    answer
}

fn index(data: &Path, file: &Path) {
    let output = quarry(&[
        "index",
        "--data",
        data.to_str().unwrap(),
        file.to_str().unwrap(),
    ]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn the_api_answers_as_the_cli_does() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    let input = dir.path().join("g.json");
    let gen = quarry(&[
        "gen-logs",
        "--events",
        "20000",
        "--start",
        "2026-11-01T00:00:00Z",
        "-o",
        input.to_str().unwrap(),
    ]);
    assert!(gen.status.success());
    index(&data, &input);
    let server = Server::start(&data);
    let (status, ready) = server.get("/health/ready");
    assert_eq!((status, ready["events"].as_u64()), (200, Some(20000)));

    // (API query string, the same request as CLI arguments)
    let cases: &[(&str, &[&str])] = &[
        ("query=failed&limit=5&count=true", &["--limit", "5", "--count", "failed"]),
        (
            "query=level:error%20AND%20service:nginx&sort=time_desc&limit=20&count=true",
            &["--sort", "time-desc", "--limit", "20", "--count", "level:error AND service:nginx"],
        ),
        (
            "query=service:nginx&limit=0&histogram=1h&aggs=percentiles(latency_ms)&aggs=terms(host,%203)",
            &[
                "--limit", "0", "--histogram", "1h", "--agg", "percentiles(latency_ms)",
                "--agg", "terms(host, 3)", "service:nginx",
            ],
        ),
        (
            "query=block&sort=time_asc&limit=7&start=2026-11-01T05:00:00Z&end=2026-11-01T06:00:00Z&histogram=auto",
            &[
                "--sort", "time-asc", "--limit", "7", "--start", "2026-11-01T05:00:00Z", "--end",
                "2026-11-01T06:00:00Z", "--histogram", "auto", "block",
            ],
        ),
        ("query=status:%3E%3D500&limit=0&aggs=stats(latency_ms)", &["--limit", "0", "--agg", "stats(latency_ms)", "status:>=500"]),
    ];
    for (query, args) in cases {
        let (status, mut api) = server.get(&format!("/api/v1/default/search?{query}"));
        assert_eq!(status, 200, "{query}: {api}");
        assert!(api["took_ms"].as_f64().is_some());
        assert_eq!(api["warnings"], serde_json::json!([]));
        for key in ["took_ms", "warnings", "partial"] {
            api.as_object_mut().unwrap().remove(key);
        }
        let cli = cli_answer(&data, args);
        assert_eq!(api, cli, "{query}");
        assert!(
            !api["hits"].as_array().unwrap().is_empty()
                || api.get("aggregations").is_some()
                || api.get("histogram").is_some()
        );
    }

    // POST with a JSON body, and a page after the first one's cursor.
    let (status, first) = server.request(
        "POST",
        "/api/v1/default/search",
        Some(r#"{"query": "failed", "sort": "time_desc", "limit": 3}"#),
    );
    assert_eq!(status, 200);
    let cursor = first["hits"][2]["_cursor"].as_str().unwrap().to_owned();
    let (_, second) = server.get(&format!(
        "/api/v1/default/search?query=failed&sort=time_desc&limit=3&search_after={cursor}"
    ));
    let (_, both) = server.get("/api/v1/default/search?query=failed&sort=time_desc&limit=6");
    assert_eq!(both["hits"][3], second["hits"][0]);
    assert_eq!(both["hits"][5], second["hits"][2]);

    // Errors.
    let (status, error) = server.get("/api/v1/default/search?query=level:(error%20OR%20warn");
    assert_eq!(
        (status, error["position"].as_u64()),
        (400, Some(6)),
        "{error}"
    );
    let (status, _) = server.get("/api/v1/default/search?limit=many");
    assert_eq!(status, 400);
    let (status, _) = server.get("/api/v1/other/search?query=x");
    assert_eq!(status, 404);
    let (status, unknown) = server.get("/api/v1/default/search?query=levle:error&count=true");
    assert_eq!(status, 200);
    assert_eq!(
        unknown["warnings"][0]["fields"],
        serde_json::json!(["levle"])
    );

    // Fields.
    let (_, fields) = server.get("/api/v1/default/fields");
    let status_field = fields["fields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "status")
        .unwrap()
        .clone();
    assert!(
        status_field["types"]["i64"].as_u64().unwrap() > 0,
        "{status_field}"
    );

    // An event ingested while the server runs is searchable on the next request.
    let (_, before) = server.get("/api/v1/default/search?query=zebra&count=true");
    assert_eq!(before["count"], 0);
    let (status, ingested) = server.request(
        "POST",
        "/api/v1/default/ingest",
        Some("{\"_time\": \"2026-11-02T00:00:00Z\", \"message\": \"zebra crossing\"}\n"),
    );
    assert_eq!((status, ingested["ingested"].as_u64()), (200, Some(1)));
    let (_, after) = server.get("/api/v1/default/search?query=zebra&count=true");
    assert_eq!(after["count"], 1);

    // The server holds the data directory: `quarry index` says so and writes nothing.
    let more = dir.path().join("more.json");
    std::fs::write(&more, "{\"message\": \"okapi\"}\n").unwrap();
    let output = quarry(&[
        "index",
        "--data",
        data.to_str().unwrap(),
        more.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("quarry serve"), "{stderr}");
}

#[test]
fn sigterm_stops_the_server_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start(&dir.path().join("empty"));
    let (status, ready) = server.get("/health/ready");
    assert_eq!((status, ready["events"].as_u64()), (200, Some(0)));
    let (_, answer) = server.get("/api/v1/default/search?query=anything&count=true");
    assert_eq!(answer["count"], 0);
    let killed = Command::new("kill")
        .args(["-TERM", &server.child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = server.child.wait().unwrap();
    assert!(status.success(), "{status}");
}

#[test]
fn settings_come_from_flags_environment_and_config_file() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    let input = dir.path().join("e.json");
    std::fs::write(&input, "{\"message\": \"one\"}\n{\"message\": \"two\"}\n").unwrap();
    index(&data, &input);
    let config = dir.path().join("quarry.toml");
    std::fs::write(
        &config,
        format!(
            "data = {:?}\nlisten = \"127.0.0.1:0\"\n",
            data.to_str().unwrap()
        ),
    )
    .unwrap();
    let start = |args: &[&str], env: &[(&str, &str)]| Server::spawn(args, env, dir.path());
    let events = |server: &Server| server.get("/health/ready").1["events"].as_u64();
    // From the file.
    assert_eq!(
        events(&start(&["--config", config.to_str().unwrap()], &[])),
        Some(2)
    );
    // The environment overrides the file; a flag overrides the environment.
    let empty = dir.path().join("empty");
    let env = [("QUARRY_DATA", empty.to_str().unwrap())];
    assert_eq!(
        events(&start(&["--config", config.to_str().unwrap()], &env)),
        Some(0)
    );
    let flag = [
        "--config",
        config.to_str().unwrap(),
        "--data",
        data.to_str().unwrap(),
    ];
    assert_eq!(events(&start(&flag, &env)), Some(2));
    // A misspelt key is an error, not a silent default.
    std::fs::write(&config, "lisen = \"127.0.0.1:0\"\n").unwrap();
    let output = quarry(&["serve", "--config", config.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("lisen"), "{stderr}");
}

/// Checks `value` against an OpenAPI schema (the subset the document uses: `$ref`, `type`,
/// `nullable`, `required`, `properties`, `items`, `additionalProperties`, `enum`).
fn check_schema(
    doc: &serde_json::Value,
    schema: &serde_json::Value,
    value: &serde_json::Value,
    at: &str,
) {
    if let Some(reference) = schema.get("$ref").and_then(|r| r.as_str()) {
        let target = reference
            .trim_start_matches("#/")
            .split('/')
            .fold(doc, |node, key| &node[key]);
        return check_schema(doc, target, value, at);
    }
    if value.is_null() && schema["nullable"] == true {
        return;
    }
    let ok = match schema["type"].as_str() {
        None => true,
        Some("object") => value.is_object(),
        Some("array") => value.is_array(),
        Some("string") => value.is_string(),
        Some("integer") => value.is_u64() || value.is_i64(),
        Some("number") => value.is_number(),
        Some("boolean") => value.is_boolean(),
        Some(other) => panic!("{at}: schema type {other} not handled"),
    };
    assert!(ok, "{at}: {value} is not {}", schema["type"]);
    if let Some(required) = schema["required"].as_array() {
        for key in required {
            assert!(
                value.get(key.as_str().unwrap()).is_some(),
                "{at}: {key} missing in {value}"
            );
        }
    }
    if let (Some(properties), Some(object)) = (schema["properties"].as_object(), value.as_object())
    {
        for (key, item) in object {
            match properties.get(key) {
                Some(property) => check_schema(doc, property, item, &format!("{at}.{key}")),
                None if schema.get("additionalProperties").is_some() => check_schema(
                    doc,
                    &schema["additionalProperties"],
                    item,
                    &format!("{at}.{key}"),
                ),
                None => panic!("{at}: {key} is not in the schema"),
            }
        }
    }
    if let (Some(items), Some(values)) = (schema.get("items"), value.as_array()) {
        for (i, item) in values.iter().enumerate() {
            check_schema(doc, items, item, &format!("{at}[{i}]"));
        }
    }
}

#[test]
fn every_operation_of_the_openapi_document_answers_as_it_says() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    let input = dir.path().join("g.json");
    let gen = quarry(&[
        "gen-logs",
        "--events",
        "3000",
        "-o",
        input.to_str().unwrap(),
    ]);
    assert!(gen.status.success());
    index(&data, &input);
    // With an admin token, which reaches every tenant and the tenants API. The tenant paths
    // come last in the document: create, list, show, delete `openapi-test`.
    let data_arg = data.to_str().unwrap();
    let mut server = Server::spawn(
        &["--data", data_arg, "--listen", "127.0.0.1:0"],
        &[("QUARRY_ADMIN_TOKEN", "openapi-admin")],
        Path::new("."),
    );
    server.token = Some("openapi-admin".into());
    let (status, doc) = server.get("/api/v1/openapi.json");
    assert_eq!(status, 200);
    let mut operations = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            if operation["responses"]["200"]["content"]
                .get("text/event-stream")
                .is_some()
            {
                continue; // a stream, tested in tail.rs
            }
            let target = path
                .replace("{tenant}", "default")
                .replace("{name}", "openapi-test");
            if operation["responses"]["200"]["content"]
                .get("application/x-ndjson")
                .is_some()
            {
                // NDJSON: every line an object (the export, tested in serve_results.rs).
                let query = operation["x-quarry-example"].as_str().unwrap_or("");
                let lines = server.export(query);
                assert!(
                    !lines.is_empty() && lines.iter().all(|l| l.is_object()),
                    "{target}"
                );
                operations += 1;
                continue;
            }
            let example = operation["x-quarry-example"].as_str();
            let (status, answer) = match method.as_str() {
                "get" => match example {
                    Some(query) => server.get(&format!("{target}?{query}")),
                    None => server.get(&target),
                },
                "post" => server.request("POST", &target, Some(example.expect("a POST example"))),
                "patch" => {
                    server.request("PATCH", &target, Some(example.expect("a PATCH example")))
                }
                "put" => server.request("PUT", &target, Some(example.expect("a PUT example"))),
                "delete" => server.request("DELETE", &target, None),
                other => panic!("method {other}"),
            };
            // The documented success: the first 2xx response.
            let success = operation["responses"]
                .as_object()
                .unwrap()
                .keys()
                .find(|code| code.starts_with('2'))
                .unwrap()
                .clone();
            assert_eq!(status.to_string(), success, "{method} {target}: {answer}");
            let schema = &operation["responses"][&success];
            let schema = match schema.get("$ref") {
                Some(_) => {
                    let name = schema["$ref"].as_str().unwrap().rsplit('/').next().unwrap();
                    &doc["components"]["responses"][name]
                }
                None => schema,
            };
            check_schema(
                &doc,
                &schema["content"]["application/json"]["schema"],
                &answer,
                &target,
            );
            operations += 1;
        }
    }
    assert_eq!(operations, 17);
    // The documented search parameters are exactly the ones the server takes.
    let documented: Vec<&str> = doc["paths"]["/api/v1/{tenant}/search"]["get"]["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    let (status, error) = server.get("/api/v1/default/search?bogus=1");
    assert_eq!(status, 400);
    let message = error["error"].as_str().unwrap();
    for name in &documented {
        assert!(message.contains(name), "{name} not accepted: {message}");
    }
    let (status, error) = server.get("/api/v1/default/search?query=%22open");
    assert_eq!(status, 400);
    let error_schema =
        &doc["components"]["responses"]["error"]["content"]["application/json"]["schema"];
    check_schema(&doc, error_schema, &error, "error");
}
