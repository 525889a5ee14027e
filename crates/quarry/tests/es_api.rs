//! The Elasticsearch surface around search (issue 27): indices as tenants (`PUT`, `HEAD`,
//! `GET`, `DELETE /{index}`, `_refresh`, `_cat/indices`, `_cluster/health`), `_count`,
//! `_mapping` over index expressions, hits shown as asked (`_source`, `fields`, `highlight`,
//! `version`, `rest_total_hits_as_int`), keys as Basic and ApiKey credentials, and the rule
//! that an option Quarry does not honour is a 400 naming it. Counts are checked against the
//! events sent.

mod common;

use common::Server;
use serde_json::json;

const EVENTS: usize = 300;

fn level(i: usize) -> &'static str {
    ["info", "warn", "error"][i % 3]
}

fn events() -> String {
    (0..EVENTS)
        .map(|i| {
            json!({
                "@timestamp": format!("2026-03-01T00:{:02}:{:02}Z", i / 60, i % 60),
                "message": format!("request {i} {}", if i % 5 == 0 { "timed out" } else { "done" }),
                "level": level(i),
                "client": {"seq": i, "secret": "s3cr3t"},
            })
            .to_string()
                + "\n"
        })
        .collect()
}

fn send_bulk(server: &Server, index: &str) {
    let body: String = events()
        .lines()
        .map(|line| format!("{{\"index\":{{}}}}\n{line}\n"))
        .collect();
    let (status, answer) = server.request("POST", &format!("/{index}/_bulk"), Some(&body));
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["errors"], false, "{answer}");
}

#[test]
fn indices_are_tenants_and_counts_match_the_events() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("d"));

    // Create with a mapping and settings that mean nothing for a tenant.
    let (status, answer) = server.request(
        "PUT",
        "/logs-a",
        Some(
            r#"{"settings": {"number_of_shards": 1, "number_of_replicas": 0},
                 "mappings": {"properties": {"level": {"type": "keyword"}}}}"#,
        ),
    );
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["acknowledged"], true);
    let (status, answer) = server.request("PUT", "/logs-a", None);
    assert_eq!(status, 400, "{answer}");
    assert_eq!(answer["error"]["type"], "resource_already_exists_exception");
    for (body, named) in [
        (r#"{"aliases": {"x": {"filter": {}}}}"#, "aliases.x.filter"),
        (
            r#"{"settings": {"analysis": {"analyzer": {"a": {"type": "standard"}}}}}"#,
            "index.analysis",
        ),
    ] {
        let (status, answer) = server.request("PUT", "/logs-b", Some(body));
        assert_eq!(status, 400, "{answer}");
        assert!(
            answer["error"]["reason"].as_str().unwrap().contains(named),
            "{answer}"
        );
    }
    // Nothing was created by a refused request.
    assert_eq!(server.send("HEAD", "/logs-b", &[], b"").status, 404);
    assert_eq!(server.send("HEAD", "/logs-a", &[], b"").status, 200);
    assert_eq!(server.send("HEAD", "/default", &[], b"").status, 200);

    send_bulk(&server, "logs-a");
    let (status, answer) = server.request("POST", "/logs-a/_refresh", None);
    assert_eq!(status, 200, "{answer}");

    // _count against the model.
    let errors = (0..EVENTS).filter(|&i| level(i) == "error").count();
    let (status, answer) = server.request(
        "POST",
        "/logs-a/_count",
        Some(r#"{"query": {"term": {"level": "error"}}}"#),
    );
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["count"], errors as u64);
    let (_, answer) = server.get("/logs-a/_count");
    assert_eq!(answer["count"], EVENTS as u64);
    let (_, answer) = server.get("/logs-a/_count?q=timed");
    assert_eq!(answer["count"], EVENTS.div_ceil(5) as u64);
    let (status, answer) = server.request("POST", "/logs-a/_count", Some(r#"{"size": 1}"#));
    assert_eq!(status, 400, "{answer}");
    assert!(answer["error"]["reason"]
        .as_str()
        .unwrap()
        .contains("[size]"));

    // GET, _mapping over patterns, _cat/indices, cluster health.
    let (status, answer) = server.get("/logs-a");
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        answer["logs-a"]["mappings"]["properties"]["level"]["type"],
        "keyword"
    );
    let (_, answer) = server.get("/logs-*/_mapping");
    assert_eq!(answer.as_object().unwrap().len(), 1, "{answer}");
    let (_, answer) = server.get("/_mapping");
    assert!(
        answer.get("default").is_some() && answer.get("logs-a").is_some(),
        "{answer}"
    );
    let (status, answer) = server.get("/nope/_mapping");
    assert_eq!(status, 404, "{answer}");
    let (_, answer) = server.get("/nope/_mapping?ignore_unavailable=true");
    assert_eq!(answer, json!({}));
    let (_, answer) = server.get("/_cat/indices?format=json&h=index,docs.count");
    let rows = answer.as_array().unwrap();
    let row = rows
        .iter()
        .find(|r| r["index"] == "logs-a")
        .expect("listed");
    assert_eq!(row["docs.count"], EVENTS.to_string());
    let (status, answer) = server.get("/_cluster/health");
    assert_eq!(status, 200);
    assert_eq!(answer["status"], "green");

    // Delete: named indices only.
    let (status, _) = server.request("DELETE", "/logs-*", None);
    assert_eq!(status, 400);
    let (status, _) = server.request("DELETE", "/default", None);
    assert_eq!(status, 400);
    let (status, answer) = server.request("DELETE", "/logs-a", None);
    assert_eq!(status, 200, "{answer}");
    assert_eq!(server.send("HEAD", "/logs-a", &[], b"").status, 404);
    let (status, _) = server.request("DELETE", "/logs-a", None);
    assert_eq!(status, 404);
    let (status, _) = server.request("DELETE", "/logs-a?ignore_unavailable=true", None);
    assert_eq!(status, 200);
}

#[test]
fn hits_show_what_the_request_asks_and_unsupported_options_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("d"));
    send_bulk(&server, "default");

    let search = |body: serde_json::Value| {
        let (status, answer) = server.request("POST", "/default/_search", Some(&body.to_string()));
        assert_eq!(status, 200, "{body}: {answer}");
        answer
    };
    // _source filtering: includes with an object's name, excludes, false.
    let answer = search(json!({
        "size": 1, "query": {"match": {"message": "timed"}},
        "_source": {"includes": ["client", "level"], "excludes": ["client.secret"]},
        "sort": [{"@timestamp": "desc"}],
    }));
    let hit = &answer["hits"]["hits"][0];
    assert_eq!(
        hit["_source"],
        json!({"client": {"seq": 295}, "level": level(295)}),
        "{hit}"
    );
    let answer = search(json!({"size": 1, "_source": false}));
    assert!(
        answer["hits"]["hits"][0].get("_source").is_none(),
        "{answer}"
    );

    // fields / docvalue_fields, version, highlight as Grafana asks for it.
    let answer = search(json!({
        "size": 1, "version": true,
        "query": {"query_string": {"query": "level:error AND timed"}},
        "sort": [{"@timestamp": "desc"}],
        "docvalue_fields": [{"field": "@timestamp", "format": "epoch_millis"}],
        "fields": ["client.seq"],
        "highlight": {"fields": {"*": {}}, "pre_tags": ["@HIGHLIGHT@"], "post_tags": ["@/HIGHLIGHT@"], "fragment_size": 2147483647u64},
    }));
    let hit = &answer["hits"]["hits"][0];
    // The newest error that timed out: i % 3 == 2 and i % 5 == 0.
    let newest = (0..EVENTS)
        .rev()
        .find(|i| i % 3 == 2 && i % 5 == 0)
        .unwrap();
    assert_eq!(hit["fields"]["client.seq"], json!([newest]), "{hit}");
    let millis = 1_772_323_200_000u64 + newest as u64 * 1000;
    assert_eq!(
        hit["fields"]["@timestamp"],
        json!([millis.to_string()]),
        "{hit}"
    );
    assert_eq!(hit["_version"], 1);
    assert_eq!(
        hit["highlight"]["message"],
        json!([format!("request {newest} @HIGHLIGHT@timed@/HIGHLIGHT@ out")]),
        "{hit}"
    );
    assert_eq!(
        hit["highlight"]["level"],
        json!(["@HIGHLIGHT@error@/HIGHLIGHT@"])
    );

    // Aggregation options honoured: min_doc_count on terms, string percents, dates of the
    // event time in milliseconds with their text.
    let answer = search(json!({"size": 0, "aggs": {
        "few": {"terms": {"field": "level", "min_doc_count": 101}},
        "all": {"terms": {"field": "level", "min_doc_count": 100}},
        "p": {"percentiles": {"field": "client.seq", "percents": ["50", "100"]}},
        "first": {"min": {"field": "@timestamp"}},
    }}));
    let aggs = &answer["aggregations"];
    assert_eq!(aggs["few"]["buckets"], json!([]), "{aggs}");
    assert_eq!(aggs["few"]["sum_other_doc_count"], EVENTS as u64);
    assert_eq!(aggs["all"]["buckets"].as_array().unwrap().len(), 3);
    assert_eq!(aggs["p"]["values"]["100.0"], (EVENTS - 1) as f64, "{aggs}");
    assert_eq!(aggs["first"]["value"], 1_772_323_200_000.0);
    assert_eq!(aggs["first"]["value_as_string"], "2026-03-01T00:00:00.000Z");

    // `_doc` alone is index order (newest first), `_doc` after a key adds nothing.
    let answer = search(json!({"size": 2, "sort": ["_doc"]}));
    assert_eq!(
        answer["hits"]["hits"][0]["_source"]["client"]["seq"],
        EVENTS - 1
    );
    let answer = search(json!({"size": 1, "sort": [{"client.seq": "asc"}, "_doc"]}));
    assert_eq!(answer["hits"]["hits"][0]["_source"]["client"]["seq"], 0);
    // `/_bulk?index=` names the default index.
    let body = "{\"index\":{}}\n{\"message\":\"via the index parameter\"}\n";
    let (status, answer) =
        server.request("POST", "/_bulk?index=default&refresh=wait_for", Some(body));
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["items"][0]["index"]["_index"], "default");
    // A metric's `missing`: events without the field count as holding it.
    let answer = search(json!({"size": 0, "aggs": {
        "with": {"avg": {"field": "client.seq", "missing": 1000}},
        "without": {"avg": {"field": "client.seq"}},
    }}));
    let aggs = &answer["aggregations"];
    let total = answer["hits"]["total"]["value"].as_u64().unwrap() as f64;
    let sum = (0..EVENTS).sum::<usize>() as f64;
    let absent = total - EVENTS as f64;
    assert_eq!(absent, 1.0);
    assert_eq!(aggs["without"]["value"], sum / EVENTS as f64, "{aggs}");
    assert_eq!(
        aggs["with"]["value"],
        (sum + 1000.0 * absent) / total,
        "{aggs}"
    );

    // typed_keys: each aggregation's name with its type, at every level.
    let (status, answer) = server.request(
        "POST",
        "/default/_search?typed_keys=true",
        Some(&json!({"size": 0, "aggs": {
            "levels": {"terms": {"field": "level"}, "aggs": {"top": {"max": {"field": "client.seq"}}}},
            "seqs": {"terms": {"field": "client.seq", "size": 1}},
            "nested": {"terms": {"field": "client.seq", "size": 2}, "aggs": {"lv": {"terms": {"field": "level"}}}},
            "p": {"percentiles": {"field": "client.seq"}},
        }}).to_string()),
    );
    assert_eq!(status, 200, "{answer}");
    let aggs = &answer["aggregations"];
    assert!(
        aggs["sterms#levels"]["buckets"][0]["max#top"]["value"].is_number(),
        "{aggs}"
    );
    // Number keys are numbers, and a bucket under one counts its events (a text key once
    // matched nothing on a number field).
    assert!(aggs["lterms#seqs"]["buckets"][0]["key"].is_u64(), "{aggs}");
    for bucket in aggs["lterms#nested"]["buckets"].as_array().unwrap() {
        assert_eq!(bucket["doc_count"], 1, "{bucket}");
        let seq = bucket["key"].as_u64().unwrap() as usize;
        assert_eq!(
            bucket["sterms#lv"]["buckets"][0]["key"],
            level(seq),
            "{bucket}"
        );
    }
    assert!(aggs["tdigest_percentiles#p"].is_object(), "{aggs}");

    // rest_total_hits_as_int.
    let (_, answer) = server.get("/default/_search?rest_total_hits_as_int=true&size=0");
    assert_eq!(answer["hits"]["total"], EVENTS as u64 + 1);

    // Each unsupported option: a 400 that names it, never a silent answer.
    for (target, body, named) in [
        (
            "/default/_search",
            json!({"collapse": {"field": "level", "inner_hits": {}}}),
            "collapse.inner_hits",
        ),
        ("/default/_search", json!({"explain": true}), "explain"),
        (
            "/default/_search",
            json!({"script_fields": {"x": {}}}),
            "script_fields",
        ),
        (
            "/default/_search",
            json!({"_source": {"fields": ["a"]}}),
            "_source.fields",
        ),
        (
            "/default/_search",
            json!({"highlight": {"fields": {"message": {"boundary_scanner": "word"}}}}),
            "highlight.fields.message.boundary_scanner",
        ),
        (
            "/default/_search",
            json!({"highlight": {"fields": {"*": {}}, "order": "score"}}),
            "highlight.order",
        ),
        (
            "/default/_search",
            json!({"sort": [{"level.keyword": "asc"}, "_score"]}),
            "sort by _score beside other keys",
        ),
        (
            "/default/_search",
            json!({"sort": [{"client.seq": {"order": "asc", "missing": "_first"}}]}),
            "sort.client.seq.missing",
        ),
        ("/default/_bulk?pipeline=geoip", json!({}), "pipeline"),
        (
            "/default/_bulk?require_data_stream=true",
            json!({}),
            "require_data_stream",
        ),
        (
            "/default/_search",
            json!({"aggs": {"t": {"terms": {"field": "level", "include": {"partition": 0, "num_partitions": 2, "seed": 7}}}}}),
            "aggs.t.terms.include.seed",
        ),
        (
            "/default/_search",
            json!({"aggs": {"a": {"avg": {"field": "message"}}}}),
            "[avg] needs numbers",
        ),
        (
            "/default/_search",
            json!({"aggs": {"h": {"date_histogram": {"field": "@timestamp", "fixed_interval": "1h", "time_zone": "Mars/Olympus"}}}}),
            "Mars/Olympus",
        ),
        (
            "/default/_search",
            json!({"aggs": {"h": {"date_histogram": {"field": "@timestamp", "calendar_interval": "2w"}}}}),
            "[2w]",
        ),
        (
            "/default/_search",
            json!({"aggs": {"h": {"date_histogram": {"field": "@timestamp", "fixed_interval": "1h", "format": "yyyy-MM-dd EEE"}}}}),
            "EEE",
        ),
        (
            "/default/_search",
            json!({"aggs": {"h": {"date_histogram": {"field": "@timestamp", "fixed_interval": "1m"},
                "aggs": {"m": {"moving_fn": {"buckets_path": "_count", "window": 2, "script": "values[0] * 2"}}}}}}),
            "aggs.h.aggs.m.moving_fn.script",
        ),
        (
            "/default/_search",
            json!({"aggs": {"t": {"terms": {"field": "level"},
                "aggs": {"d": {"derivative": {"buckets_path": "_count"}}}}}}),
            "histogram or date_histogram as its parent",
        ),
        (
            "/default/_search",
            json!({"aggs": {"t": {"terms": {"field": "level", "min_doc_count": 0}}}}),
            "aggs.t.terms.min_doc_count",
        ),
        (
            "/default/_search",
            json!({"aggs": {"a": {"avg": {"field": "client.seq", "script": {"source": "_value * 2"}}}}}),
            "aggs.a.avg.script",
        ),
        (
            "/default/_search?terminate_after=5",
            json!({}),
            "terminate_after",
        ),
        ("/default/_count?routing=a", json!({}), "routing"),
        ("/default/_count?q=a&default_operator=XOR", json!({}), "XOR"),
    ] {
        let (status, answer) = server.request("POST", target, Some(&body.to_string()));
        assert_eq!(status, 400, "{target} {body}: {answer}");
        let reason = answer["error"]["reason"].as_str().unwrap();
        assert!(reason.contains(named), "{target} {body}: {reason}");
    }
    // `q` and query_string as Lucene's classic parser reads them: `a OR b AND c` is `a +b +c`.
    let count = |target: &str| {
        let (status, answer) = server.get(target);
        assert_eq!(status, 200, "{target}: {answer}");
        answer["count"].as_u64().unwrap() as usize
    };
    let warn_timed = (0..EVENTS)
        .filter(|&i| level(i) == "warn" && i % 5 == 0)
        .count();
    assert_eq!(
        count("/default/_count?q=level:error%20OR%20level:warn%20AND%20message:timed"),
        warn_timed
    );
    let (_, answer) = server.request(
        "POST",
        "/default/_count",
        Some(r#"{"query": {"query_string": {"query": "level:error OR level:warn AND message:timed"}}}"#),
    );
    assert_eq!(answer["count"], warn_timed as u64);
    assert_eq!(count("/default/_count?q=timed%20done"), EVENTS);
    assert_eq!(
        count("/default/_count?q=timed%20request&default_operator=AND"),
        EVENTS.div_ceil(5)
    );
    assert_eq!(count("/default/_count?q=error&df=level"), EVENTS / 3);
    // A time range on @timestamp in Lucene syntax, its upper day included whole.
    assert_eq!(
        count("/default/_count?q=@timestamp:%5B2026-03-01%20TO%202026-03-01%5D"),
        EVENTS
    );
    assert_eq!(
        count("/default/_count?q=@timestamp:%5B*%20TO%202026-03-01T00:01%7D"),
        60
    );

    // A query string that is not UTF-8 once decoded.
    let (status, answer) = server.get("/default/_search?q=%FF");
    assert_eq!(status, 400, "{answer}");
}

#[test]
fn tenant_keys_are_accepted_as_basic_and_api_key_credentials() {
    use base64::Engine as _;
    let b64 = |text: &str| base64::engine::general_purpose::STANDARD.encode(text);
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start_with(&dir.path().join("d"), &["--admin-token", "admin-secret"]);
    server.token = Some("admin-secret".into());
    let (status, created) = server.request("POST", "/api/v1/tenants", Some(r#"{"name": "shop"}"#));
    assert_eq!(status, 201, "{created}");
    let key = created["api_key"].as_str().unwrap().to_owned();
    // An index created through the Elasticsearch API is reached by the admin token only.
    let (status, answer) = server.request("PUT", "/made-by-es", None);
    assert_eq!(status, 200, "{answer}");

    let body = "{\"index\":{}}\n{\"message\":\"hello\"}\n";
    for authorization in [
        format!("Bearer {key}"),
        format!("Basic {}", b64(&format!("shop:{key}"))),
        format!("ApiKey {}", b64(&format!("some-id:{key}"))),
    ] {
        let headers = [
            ("Authorization", authorization.as_str()),
            ("Content-Type", "application/x-ndjson"),
        ];
        let answer = server.send("POST", "/shop/_bulk", &headers, body.as_bytes());
        assert_eq!(answer.status, 200, "{authorization}: {}", answer.json());
        assert_eq!(answer.json()["errors"], false, "{authorization}");
        // The key reaches its own tenant only.
        let answer = server.send("GET", "/made-by-es/_count", &headers, b"");
        assert_eq!(answer.status, 401, "{authorization}");
    }
    let wrong = format!("Basic {}", b64("shop:wrong"));
    let answer = server.send("GET", "/shop/_count", &[("Authorization", &wrong)], b"");
    assert_eq!(answer.status, 401);
    let (_, answer) = server.get("/shop/_count");
    assert_eq!(answer["count"], 3);
}

#[test]
fn index_patterns_search_every_index_they_name() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("d"));
    for index in ["logs-a", "logs-b", "other"] {
        let (status, answer) = server.request("PUT", &format!("/{index}"), None);
        assert_eq!(status, 200, "{answer}");
    }
    // logs-a has the even seconds, logs-b the odd ones, other all of them.
    let bulk = |index: &str, keep: &dyn Fn(usize) -> bool| {
        let body: String = events()
            .lines()
            .enumerate()
            .filter(|(i, _)| keep(*i))
            .map(|(_, line)| format!("{{\"index\":{{}}}}\n{line}\n"))
            .collect();
        let (status, answer) = server.request("POST", &format!("/{index}/_bulk"), Some(&body));
        assert_eq!(status, 200, "{answer}");
    };
    bulk("logs-a", &|i| i % 2 == 0);
    bulk("logs-b", &|i| i % 2 == 1);
    bulk("other", &|_| true);

    let search = |target: &str, body: serde_json::Value| {
        let (status, answer) = server.request("POST", target, Some(&body.to_string()));
        assert_eq!(status, 200, "{target}: {answer}");
        answer
    };
    // Newest first across both: 299 (odd, logs-b), 298 (logs-a), ...
    for target in [
        "/logs-*/_search",
        "/logs-a,logs-b/_search",
        "/logs-*,-other/_search",
    ] {
        let answer = search(target, json!({"size": 4, "sort": [{"@timestamp": "desc"}]}));
        assert_eq!(answer["hits"]["total"]["value"], EVENTS as u64, "{target}");
        let hits = answer["hits"]["hits"].as_array().unwrap();
        let seen: Vec<(u64, &str)> = hits
            .iter()
            .map(|h| {
                (
                    h["_source"]["client"]["seq"].as_u64().unwrap(),
                    h["_index"].as_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            seen,
            [
                (299, "logs-b"),
                (298, "logs-a"),
                (297, "logs-b"),
                (296, "logs-a")
            ],
            "{target}"
        );
    }
    // Aggregations over the union count every event once.
    let answer = search(
        "/logs-*/_search",
        json!({"size": 0, "aggs": {"levels": {"terms": {"field": "level"}}}}),
    );
    for bucket in answer["aggregations"]["levels"]["buckets"]
        .as_array()
        .unwrap()
    {
        assert_eq!(bucket["doc_count"], (EVENTS / 3) as u64, "{bucket}");
    }
    let (_, answer) = server.get("/_all/_count");
    assert_eq!(answer["count"], 2 * EVENTS as u64);
    let (_, answer) = server.get("/logs-a,other/_count?q=level:error");
    assert_eq!(
        answer["count"],
        ((0..EVENTS)
            .filter(|i| i % 2 == 0 && level(*i) == "error")
            .count()
            + EVENTS / 3) as u64
    );
    // A pattern that matches nothing answers no hits; a missing name is a 404 unless ignored.
    let answer = search("/nothing-*/_search", json!({}));
    assert_eq!(answer["hits"]["total"]["value"], 0);
    let (status, _) = server.request("POST", "/logs-a,nope/_search", Some("{}"));
    assert_eq!(status, 404);
    let answer = search(
        "/logs-a,nope/_search?ignore_unavailable=true",
        json!({"size": 0}),
    );
    assert_eq!(answer["hits"]["total"]["value"], (EVENTS / 2) as u64);
}

#[test]
fn documents_have_one_stable_id_to_read_them_back_by() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("d"));

    // A document under a given id: created, read back, replaced, deleted (the model-based
    // checks of versions and sequence numbers are in es_documents.rs).
    let (status, answer) = server.request(
        "PUT",
        "/shop/_doc/order-1?refresh=true",
        Some("{\"item\": \"lamp\",\n \"price\": 12.5}"),
    );
    assert_eq!(status, 201, "{answer}");
    assert_eq!(answer["result"], "created");
    assert_eq!(answer["_id"], "order-1");
    assert_eq!(answer["forced_refresh"], true);
    let (status, answer) = server.get("/shop/_doc/order-1");
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["found"], true);
    let source = answer["_source"].as_object().unwrap();
    assert_eq!(source["item"], "lamp");
    assert_eq!(source["price"], 12.5);
    assert!(
        !source.contains_key("_id") && !source.contains_key("_seq_no"),
        "the id and sequence number are not fields of the source: {answer}"
    );
    let (status, answer) = server.request("PUT", "/shop/_create/order-1", Some("{}"));
    assert_eq!(status, 409, "{answer}");
    assert_eq!(answer["error"]["type"], "version_conflict_engine_exception");
    let (status, answer) =
        server.request("PUT", "/shop/_doc/order-1", Some(r#"{"item": "chair"}"#));
    assert_eq!(
        (status, &answer["result"]),
        (200, &json!("updated")),
        "{answer}"
    );
    assert_eq!(answer["_version"], 2);
    let (_, answer) = server.get("/shop/_source/order-1");
    assert_eq!(
        answer,
        json!({"item": "chair"}),
        "the second replaces the first"
    );
    let (_, answer) = server.get("/shop/_count?q=item:lamp");
    assert_eq!(answer["count"], 0, "the first is gone from searches too");
    assert_eq!(
        server.send("HEAD", "/shop/_doc/order-1", &[], b"").status,
        200
    );
    assert_eq!(
        server.send("HEAD", "/shop/_doc/order-2", &[], b"").status,
        404
    );
    let (status, answer) = server.get("/shop/_doc/order-2");
    assert_eq!((status, &answer["found"]), (404, &json!(false)));
    let (status, answer) = server.request("DELETE", "/shop/_doc/order-1", None);
    assert_eq!(
        (status, &answer["result"]),
        (200, &json!("deleted")),
        "{answer}"
    );
    let (status, _) = server.get("/shop/_doc/order-1");
    assert_eq!(status, 404);
    let (status, answer) = server.request("DELETE", "/shop/_doc/order-1", None);
    assert_eq!(
        (status, &answer["result"]),
        (404, &json!("not_found")),
        "{answer}"
    );
    // Internal versions are not for optimistic concurrency (if_seq_no is).
    let (status, answer) = server.request("PUT", "/shop/_doc/x?version=3", Some("{}"));
    assert_eq!(status, 400, "{answer}");
    let (status, _) = server.request("POST", "/shop/_update/x", Some("{}"));
    assert_eq!(status, 400);

    // Without an id, a document's id is its content's: what POST _doc and _bulk answer is
    // what its hits show and what reads it back, even for events with the same time.
    let (status, answer) = server.request(
        "POST",
        "/shop/_doc",
        Some(r#"{"@timestamp": "2026-03-01T00:00:00Z", "item": "desk"}"#),
    );
    assert_eq!(status, 201, "{answer}");
    let desk = answer["_id"].as_str().unwrap().to_owned();
    let body: String = (0..50)
        .map(|i| {
            format!(
                "{{\"index\":{{}}}}\n{{\"@timestamp\":\"2026-03-01T00:00:00Z\",\"item\":\"pen {i}\",\"n\":{i},\"ok\":true,\"tags\":[\"a\",{i}],\"x\":{{\"y\":1.5}}}}\n"
            )
        })
        .collect();
    let (status, answer) = server.request("POST", "/shop/_bulk", Some(&body));
    assert_eq!(status, 200, "{answer}");
    let mut given: Vec<String> = answer["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["index"]["_id"].as_str().unwrap().to_owned())
        .collect();
    given.push(desk.clone());
    let (_, answer) = server.request(
        "POST",
        "/shop/_search",
        Some(
            r#"{"size": 100, "query": {"range": {"@timestamp": {"lte": "2026-03-01T00:00:00Z"}}}}"#,
        ),
    );
    let mut shown: Vec<String> = answer["hits"]["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|hit| hit["_id"].as_str().unwrap().to_owned())
        .collect();
    given.sort();
    shown.sort();
    assert_eq!(shown, given, "the ids hits show are the ids given");
    let distinct: std::collections::HashSet<&String> = shown.iter().collect();
    assert_eq!(
        distinct.len(),
        51,
        "events of the same time have ids of their own"
    );
    for id in [&desk, &given[7]] {
        let (status, answer) = server.get(&format!("/shop/_doc/{id}"));
        assert_eq!(status, 200, "{id}: {answer}");
        assert_eq!(answer["_id"], id.as_str());
    }
    let (_, answer) = server.get(&format!("/shop/_doc/{desk}"));
    assert_eq!(answer["_source"]["item"], "desk");
    // `ids`, `term` and `terms` on `_id` find content ids and given ids alike, each exactly
    // its own event (51 events share one time).
    let (_, answer) = server.request("PUT", "/shop/_doc/order-9", Some(r#"{"item": "chair"}"#));
    assert_eq!(answer["_id"], "order-9", "{answer}");
    let found = |query: serde_json::Value| -> Vec<String> {
        let body = json!({"size": 100, "query": query});
        let (status, answer) = server.request("POST", "/shop/_search", Some(&body.to_string()));
        assert_eq!(status, 200, "{answer}");
        let mut ids: Vec<String> = answer["hits"]["hits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|hit| hit["_id"].as_str().unwrap().to_owned())
            .collect();
        ids.sort();
        ids
    };
    let mut want = vec![given[3].clone(), given[40].clone(), "order-9".to_owned()];
    want.sort();
    let values = json!([
        given[3],
        given[40],
        "order-9",
        "AAAAAAAAAAAAAAAAAAAAAA",
        "nope"
    ]);
    assert_eq!(found(json!({"ids": {"values": values}})), want);
    assert_eq!(found(json!({"terms": {"_id": values}})), want);
    assert_eq!(
        found(json!({"term": {"_id": given[3]}})),
        [given[3].clone()]
    );
    assert_eq!(found(json!({"term": {"_id": "order-9"}})), ["order-9"]);
    let q = format!("_id:\"{}\" OR _id:order-9", given[40]);
    let mut want = vec![given[40].clone(), "order-9".to_owned()];
    want.sort();
    assert_eq!(found(json!({"query_string": {"query": q}})), want);
    assert_eq!(found(json!({"bool": {"must_not": {"ids": {"values": [given[3]]}}, "filter": {"match": {"item": "pen"}}}})).len(), 49);
    // An id of the right shape that is no event's.
    let (status, _) = server.get("/shop/_doc/AAAAAAAAAAAAAAAAAAAAAA");
    assert_eq!(status, 404);

    // A field the mapping does not store is not part of the id: the hits cannot show it.
    let (status, answer) = server.request(
        "PUT",
        "/private",
        Some(r#"{"mappings": {"properties": {"secret": {"type": "keyword", "stored": false}}}}"#),
    );
    assert_eq!(status, 200, "{answer}");
    let body: String = (0..3)
        .map(|i| format!("{{\"index\":{{}}}}\n{{\"user\":\"u{i}\",\"secret\":\"s{i}\"}}\n"))
        .collect();
    let (_, answer) = server.request("POST", "/private/_bulk", Some(&body));
    let mut given: Vec<String> = answer["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["index"]["_id"].as_str().unwrap().to_owned())
        .collect();
    let (_, answer) = server.request("POST", "/private/_search", Some("{}"));
    let mut shown: Vec<String> = answer["hits"]["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|hit| hit["_id"].as_str().unwrap().to_owned())
        .collect();
    given.sort();
    shown.sort();
    assert_eq!(shown, given, "{answer}");
    let (status, answer) = server.get(&format!("/private/_doc/{}", given[0]));
    assert_eq!(status, 200, "{answer}");
    assert!(answer["_source"].get("secret").is_none(), "{answer}");

    // _bulk creates a missing index (the server is keyless: anyone on loopback may).
    let (status, answer) = server.request(
        "POST",
        "/_bulk",
        Some("{\"index\":{\"_index\":\"made-by-bulk\"}}\n{\"a\":1}\n"),
    );
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["errors"], false, "{answer}");
    let (_, answer) = server.get("/made-by-bulk/_count");
    assert_eq!(answer["count"], 1);
}

/// `match_bool_prefix` counted against the events sent; `track_total_hits` as a number,
/// `filter_path` on any answer, `stored_fields`, and Elasticsearch's words for a negative
/// `from` (issue 27's OpenSearch `search` cases).
#[test]
fn bool_prefix_total_hits_filter_path_and_stored_fields_answer_as_elasticsearch() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("d"));
    send_bulk(&server, "default");
    let search = |url: &str, body: serde_json::Value| {
        let (status, answer) = server.request("POST", url, Some(&body.to_string()));
        assert_eq!(status, 200, "{body}: {answer}");
        answer
    };
    // Each word a token; the last a prefix of one. `message` is "request {i} timed out" for
    // every fifth event, else "request {i} done".
    let tokens = |i: usize| -> Vec<String> {
        let words = if i.is_multiple_of(5) {
            "timed out"
        } else {
            "done"
        };
        format!("request {i} {words}")
            .split(' ')
            .map(str::to_owned)
            .collect()
    };
    for (text, minimum) in [
        ("timed o", 1),
        ("done 1", 2),
        ("request tim", 2),
        ("done tim", 2),
    ] {
        let words: Vec<&str> = text.split(' ').collect();
        let (last, rest) = words.split_last().unwrap();
        let expected = (0..EVENTS)
            .filter(|&i| {
                let toks = tokens(i);
                let terms = rest.iter().filter(|w| toks.iter().any(|t| t == *w)).count();
                let prefix = usize::from(toks.iter().any(|t| t.starts_with(last)));
                terms + prefix >= minimum
            })
            .count();
        let answer = search(
            "/default/_search?size=0",
            json!({"query": {"match_bool_prefix": {"message": {
                "query": text, "minimum_should_match": minimum,
            }}}}),
        );
        assert_eq!(
            answer["hits"]["total"]["value"], expected,
            "{text}: {answer}"
        );
    }

    // track_total_hits: a number is a lower bound past it; false with totals as numbers: -1.
    let answer = search("/default/_search?size=0&track_total_hits=10", json!({}));
    assert_eq!(
        answer["hits"]["total"],
        json!({"value": 10, "relation": "gte"})
    );
    let answer = search(
        "/default/_search?size=0",
        json!({"track_total_hits": EVENTS}),
    );
    assert_eq!(
        answer["hits"]["total"],
        json!({"value": EVENTS, "relation": "eq"})
    );
    let answer = search(
        "/default/_search?size=0&track_total_hits=false&rest_total_hits_as_int=true",
        json!({}),
    );
    assert_eq!(answer["hits"]["total"], -1);
    for (url, body) in [
        ("/default/_search?from=-5", json!({})),
        ("/default/_search", json!({"from": -5})),
    ] {
        let (status, answer) = server.request("POST", url, Some(&body.to_string()));
        assert_eq!(status, 400);
        assert_eq!(
            answer["error"]["reason"],
            "[from] parameter cannot be negative, found [-5]"
        );
    }

    // filter_path: only what it names, on a search and a count alike.
    let answer = search(
        "/default/_search?size=2&filter_path=hits.hits._id,-hits.hits._source",
        json!({"sort": [{"@timestamp": "desc"}]}),
    );
    let hits = answer["hits"]["hits"].as_array().unwrap();
    assert_eq!(answer.as_object().unwrap().len(), 1, "{answer}");
    assert_eq!(hits.len(), 2, "{answer}");
    assert!(
        hits.iter()
            .all(|hit| hit.as_object().unwrap().keys().eq(["_id"])),
        "{answer}"
    );
    let (status, answer) = server.request("GET", "/default/_count?filter_path=count", None);
    assert_eq!(status, 200);
    assert_eq!(answer, json!({"count": EVENTS}));

    // stored_fields: none of them hides `_source`; `_none_` the `_id` too; names are fields.
    let answer = search("/default/_search?size=1", json!({"stored_fields": []}));
    let hit = &answer["hits"]["hits"][0];
    assert!(
        hit.get("_source").is_none() && hit.get("_id").is_some(),
        "{hit}"
    );
    let answer = search(
        "/default/_search?size=1",
        json!({"stored_fields": "_none_"}),
    );
    let hit = &answer["hits"]["hits"][0];
    assert!(
        hit.get("_source").is_none() && hit.get("_id").is_none(),
        "{hit}"
    );
    let answer = search(
        "/default/_search?size=1&stored_fields=level,_source",
        json!({}),
    );
    let hit = &answer["hits"]["hits"][0];
    assert!(hit.get("_source").is_some(), "{hit}");
    assert_eq!(
        hit["fields"]["level"].as_array().map(Vec::len),
        Some(1),
        "{hit}"
    );
}

/// `_field_caps` over indices mapped differently, and a field mapped differently in two
/// indices: searched together it is refused by name, since one plan cannot search both as
/// they were indexed.
#[test]
fn field_caps_merge_the_indices_and_conflicting_mappings_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("d"));
    for (index, mapping) in [
        (
            "m-a",
            r#"{"mappings": {"properties": {"code": {"type": "long"}, "tag": {"type": "keyword", "index": false}}}}"#,
        ),
        (
            "m-b",
            r#"{"mappings": {"properties": {"code": {"type": "keyword"}, "tag": {"type": "keyword"}}}}"#,
        ),
    ] {
        let (status, answer) = server.request("PUT", &format!("/{index}"), Some(mapping));
        assert_eq!(status, 200, "{answer}");
    }
    let (status, answer) = server.request(
        "POST",
        "/m-a/_bulk",
        Some("{\"index\":{}}\n{\"code\": 5, \"tag\": \"x\", \"message\": \"hello\"}\n"),
    );
    assert_eq!(status, 200, "{answer}");
    let (status, answer) = server.request(
        "POST",
        "/m-b/_bulk",
        Some("{\"index\":{}}\n{\"code\": \"5\", \"tag\": \"y\"}\n"),
    );
    assert_eq!(status, 200, "{answer}");

    let (status, caps) = server.get("/m-*/_field_caps?fields=code,tag,mess*&include_unmapped=true");
    assert_eq!(status, 200, "{caps}");
    assert_eq!(caps["indices"], json!(["m-a", "m-b"]));
    let fields = &caps["fields"];
    assert_eq!(
        fields["code"],
        json!({
            "long": {"type": "long", "searchable": true, "aggregatable": true, "indices": ["m-a"]},
            "keyword": {"type": "keyword", "searchable": true, "aggregatable": true, "indices": ["m-b"]},
        })
    );
    assert_eq!(
        fields["tag"],
        json!({"keyword": {"type": "keyword", "searchable": false, "aggregatable": true,
                           "non_searchable_indices": ["m-a"]}})
    );
    // A dynamic string: text, with its keyword sub-field; m-b has neither.
    assert_eq!(fields["message"]["text"]["aggregatable"], false);
    assert_eq!(fields["message"]["unmapped"]["indices"], json!(["m-b"]));
    assert_eq!(fields["message.keyword"]["keyword"]["aggregatable"], true);
    let (status, answer) = server.get("/m-a/_field_caps");
    assert_eq!(status, 400, "{answer}");
    let (status, answer) = server.get("/m-a/_field_caps?fields=*&filters=-nested");
    assert_eq!(status, 400, "{answer}");
    assert!(answer["error"]["reason"]
        .as_str()
        .unwrap()
        .contains("filters"));

    // Searched together, `code` would be planned as one of the two: refused, naming it.
    let (status, answer) = server.request(
        "POST",
        "/m-*/_search",
        Some(r#"{"query": {"term": {"code": "5"}}}"#),
    );
    assert_eq!(status, 400, "{answer}");
    let reason = answer["error"]["reason"].as_str().unwrap();
    assert!(
        reason.contains("m-a,m-b") && reason.contains("code"),
        "{reason}"
    );
    // Each alone finds its event.
    for index in ["m-a", "m-b"] {
        let (status, answer) = server.request(
            "POST",
            &format!("/{index}/_count"),
            Some(r#"{"query": {"term": {"code": "5"}}}"#),
        );
        assert_eq!(status, 200, "{answer}");
        assert_eq!(answer["count"], 1, "{index}");
    }
}

/// An index's search limits (`settings` of `PUT /{index}`) are kept with the tenant, shown by
/// `GET /{index}`, survive a restart and bound its searches; other indices keep
/// Elasticsearch's defaults, and a window past Quarry's own most is refused at creation.
#[test]
fn index_search_limits_are_kept_and_enforced() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    let server = Server::start(&data);
    let settings = json!({"settings": {"index": {"max_result_window": 50},
        "index.max_docvalue_fields_search": "1", "max_script_fields": 4}});
    let (status, answer) = server.request("PUT", "/small", Some(&settings.to_string()));
    assert_eq!(status, 200, "{answer}");
    let (status, answer) = server.request(
        "PUT",
        "/huge",
        Some(r#"{"settings": {"index.max_result_window": 100000}}"#),
    );
    assert_eq!(status, 400, "{answer}");
    assert!(answer.to_string().contains("max_result_window"), "{answer}");
    let (status, answer) = server.request("POST", "/other/_doc", Some(r#"{"n": 1}"#));
    assert_eq!(status, 201, "{answer}");
    // The settings as given, beside the ones every index has.
    let (_, answer) = server.get("/small/_settings");
    let index = &answer["small"]["settings"]["index"];
    assert_eq!(
        (&index["max_result_window"], &index["number_of_shards"]),
        (&json!("50"), &json!("1")),
        "{answer}"
    );
    let (_, answer) = server.get("/small,other/_settings?flat_settings=true");
    assert_eq!(answer["small"]["settings"]["index.max_script_fields"], "4");
    assert!(answer["other"]["settings"]
        .get("index.max_result_window")
        .is_none());
    let check = |server: &Server| {
        let search = |index: &str, body: serde_json::Value| {
            server.request(
                "POST",
                &format!("/{index}/_search"),
                Some(&body.to_string()),
            )
        };
        let (status, answer) = search("small", json!({"size": 40, "from": 11}));
        assert_eq!(status, 400, "{answer}");
        assert!(
            answer["error"]["reason"]
                .as_str()
                .unwrap()
                .contains("[50] but was [51]"),
            "{answer}"
        );
        assert_eq!(search("small", json!({"size": 40, "from": 10})).0, 200);
        let two = json!({"docvalue_fields": ["a", "b"]});
        let (status, answer) = search("small", two.clone());
        assert_eq!(status, 400, "{answer}");
        assert!(answer.to_string().contains("[1] but was [2]"), "{answer}");
        assert_eq!(search("other", two.clone()).0, 200);
        // Both indices at once: the stricter limits.
        assert_eq!(search("small,other", two).0, 400);
        assert_eq!(search("other", json!({"size": 60})).0, 200);
        let (status, answer) = server.request(
            "POST",
            "/small/_search?scroll=1m",
            Some(&json!({"size": 60}).to_string()),
        );
        assert_eq!(status, 400, "{answer}");
        assert!(
            answer.to_string().contains("Batch size is too large"),
            "{answer}"
        );
        let (status, answer) = server.get("/small");
        assert_eq!(status, 200, "{answer}");
        let index = &answer["small"]["settings"]["index"];
        assert_eq!(index["max_result_window"], "50", "{answer}");
        assert_eq!(index["max_docvalue_fields_search"], "1", "{answer}");
        assert_eq!(index["max_script_fields"], "4", "{answer}");
    };
    check(&server);
    assert!(server.terminate());
    let server = Server::start(&data);
    check(&server);
}

/// `unsigned_long` values past i64 are found exactly by `term` (and by `n:V` in a query
/// string), though neighbours share the f64 a range reads.
#[test]
fn unsigned_longs_past_i64_are_found_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("d"));
    let (status, answer) = server.request(
        "PUT",
        "/u",
        Some(r#"{"mappings": {"properties": {"n": {"type": "unsigned_long"}}}}"#),
    );
    assert_eq!(status, 200, "{answer}");
    let values = [
        10223372036854775800u64,
        10223372036854775801,
        10223372036854775802,
        7,
    ];
    let mut bulk = String::new();
    for v in values {
        bulk.push_str(&format!("{{\"index\":{{}}}}\n{{\"n\": {v}}}\n"));
    }
    // One more as a string, which the mapping coerces.
    bulk.push_str("{\"index\":{}}\n{\"n\": \"10223372036854775801\"}\n");
    let (status, answer) = server.request("POST", "/u/_bulk", Some(&bulk));
    assert_eq!(status, 200, "{answer}");
    for (v, want) in [
        (values[0], 1),
        (values[1], 2),
        (values[2], 1),
        (7, 1),
        (10223372036854775803, 0),
    ] {
        let body = json!({"query": {"term": {"n": v}}});
        let (status, answer) = server.request("POST", "/u/_count", Some(&body.to_string()));
        assert_eq!(status, 200, "{answer}");
        assert_eq!(answer["count"], want, "term {v}");
        let body = json!({"query": {"query_string": {"query": format!("n:{v}")}}});
        let (_, answer) = server.request("POST", "/u/_count", Some(&body.to_string()));
        assert_eq!(answer["count"], want, "n:{v}");
    }
    // Ranges compare exactly too (the three big values are one f64), counted by hand over
    // the values sent (the string one included).
    let sent = [values.as_slice(), &[10223372036854775801]].concat();
    for (gte, lte) in [
        (10223372036854775801u64, 10223372036854775802u64),
        (10223372036854775800, 10223372036854775800),
        (8, 10223372036854775801),
        (10223372036854775802, u64::MAX),
        (0, u64::MAX),
    ] {
        let want = sent.iter().filter(|&&v| gte <= v && v <= lte).count();
        let body = json!({"query": {"range": {"n": {"gte": gte, "lte": lte}}}});
        let (status, answer) = server.request("POST", "/u/_count", Some(&body.to_string()));
        assert_eq!(status, 200, "{answer}");
        assert_eq!(answer["count"], want, "[{gte} TO {lte}]");
    }
}

/// A terms lookup reads its values from a document of another index (a missing document gives
/// none, a missing index is a 404), and `index.max_terms_count` bounds the values of one
/// `terms` query, a lookup's included; counts against the events sent.
#[test]
fn terms_lookups_read_a_document_and_count_against_max_terms() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("d"));
    let (status, answer) = server.request(
        "PUT",
        "/people",
        Some(r#"{"settings": {"index.max_terms_count": 3}, "mappings": {"properties": {"user": {"type": "keyword"}}}}"#),
    );
    assert_eq!(status, 200, "{answer}");
    let mut bulk = String::new();
    for (user, follows) in [
        ("u1", vec!["u2", "u3"]),
        ("u2", vec!["u1", "u3", "u4", "u5"]),
        ("u3", vec![]),
        ("u4", vec!["u1"]),
        ("u5", vec!["u2"]),
    ] {
        bulk.push_str(&format!(
            "{{\"index\":{{\"_id\":\"{user}\"}}}}\n{}\n",
            json!({"user": user, "follows": follows})
        ));
    }
    let (status, answer) = server.request("POST", "/people/_bulk", Some(&bulk));
    assert_eq!(status, 200, "{answer}");
    let count = |query: serde_json::Value| {
        let body = json!({"size": 0, "query": query});
        server.request("POST", "/people/_search", Some(&body.to_string()))
    };
    let lookup =
        |id: &str| json!({"terms": {"user": {"index": "people", "id": id, "path": "follows"}}});
    let (status, answer) = count(lookup("u1"));
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["hits"]["total"]["value"], 2, "u1 follows u2 and u3");
    let (_, answer) = count(lookup("u3"));
    assert_eq!(answer["hits"]["total"]["value"], 0, "u3 follows no one");
    let (_, answer) = count(lookup("nobody"));
    assert_eq!(answer["hits"]["total"]["value"], 0, "no such document");
    let (status, answer) = count(lookup("u2"));
    assert_eq!(status, 400, "four values past max_terms_count 3: {answer}");
    assert!(answer.to_string().contains("[4]"), "{answer}");
    let (status, _) = count(json!({"terms": {"user": ["u1", "u2", "u3", "u4"]}}));
    assert_eq!(status, 400);
    let (status, answer) =
        count(json!({"terms": {"user": {"index": "elsewhere", "id": "1", "path": "x"}}}));
    assert_eq!(status, 404, "{answer}");
    assert!(
        answer.to_string().contains("no such index [elsewhere]"),
        "{answer}"
    );
    // Inside an aggregation's filter too.
    let body = json!({"size": 0, "aggs": {"f": {"filter": lookup("u5")}}});
    let (status, answer) = server.request("POST", "/people/_search", Some(&body.to_string()));
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["aggregations"]["f"]["doc_count"], 1, "{answer}");
}

/// A hit's `sort` values are Elasticsearch's, one per key, and `search_after` pages by them
/// against the order by hand: values alone continue strictly after the value (ties with it
/// are skipped, as in Elasticsearch without a tiebreaker); with a `_doc` key the cursor pages
/// exactly, ties included. A date field sorts by its time in milliseconds whatever its
/// format, a `half_float` by its rounded value.
#[test]
fn sort_values_and_search_after_follow_elasticsearch() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("d"));
    let mapping = json!({"mappings": {"properties": {
        "day": {"type": "date", "format": "yyyy-MM-dd HH:mm:ss.SSS"},
        "h": {"type": "half_float"}, "g": {"type": "long"}}}});
    let (status, answer) = server.request("PUT", "/s", Some(&mapping.to_string()));
    assert_eq!(status, 200, "{answer}");
    // g repeats (ties); day is distinct.
    let docs: Vec<serde_json::Value> = (0..12)
        .map(|i| {
            json!({"i": i, "g": i % 4, "h": 100.1 + i as f64,
                "day": format!("2019-10-{:02} 08:30:04.828", 10 + i)})
        })
        .collect();
    let mut bulk = String::new();
    for doc in &docs {
        bulk.push_str(&format!("{{\"index\":{{}}}}\n{doc}\n"));
    }
    let (status, answer) = server.request("POST", "/s/_bulk", Some(&bulk));
    assert_eq!(status, 200, "{answer}");
    let search = |body: serde_json::Value| {
        let (status, answer) = server.request("POST", "/s/_search", Some(&body.to_string()));
        assert_eq!(status, 200, "{body}: {answer}");
        answer["hits"]["hits"].as_array().unwrap().clone()
    };
    let ids = |hits: &[serde_json::Value]| -> Vec<i64> {
        hits.iter()
            .map(|h| h["_source"]["i"].as_i64().unwrap())
            .collect()
    };
    // A date field: milliseconds, in time order; search_after by the value or the date.
    let hits = search(json!({"size": 3, "sort": [{"day": "desc"}]}));
    assert_eq!(ids(&hits), [11, 10, 9]);
    let ms = |i: i64| 1_570_696_204_828i64 + i * 86_400_000;
    assert_eq!(hits[0]["sort"], json!([ms(11)]), "{}", hits[0]);
    let after = search(json!({"size": 2, "sort": [{"day": "desc"}], "search_after": [ms(9)]}));
    assert_eq!(ids(&after), [8, 7]);
    let after = search(json!({"size": 2, "sort": [{"day": "desc"}],
        "search_after": ["2019-10-19 08:30:04.828"]}));
    assert_eq!(ids(&after), [8, 7]);
    // half_float: the value its type holds.
    let hits = search(json!({"size": 1, "sort": [{"h": "asc"}]}));
    assert_eq!(hits[0]["sort"], json!([100.125]), "{}", hits[0]);
    // Ties: values alone skip the rest of the tie; with `_doc` the cursor pages through it.
    let hits = search(json!({"size": 2, "sort": [{"g": "asc"}]}));
    assert_eq!(
        hits.iter().map(|h| h["sort"].clone()).collect::<Vec<_>>(),
        [json!([0]), json!([0])]
    );
    let after = search(json!({"size": 20, "sort": [{"g": "asc"}], "search_after": [0]}));
    assert!(ids(&after).iter().all(|i| i % 4 != 0), "{:?}", ids(&after));
    assert_eq!(after.len(), 9);
    let mut seen = Vec::new();
    let mut last: Option<serde_json::Value> = None;
    loop {
        let mut body = json!({"size": 5, "sort": [{"g": "asc"}, {"_doc": "asc"}]});
        if let Some(last) = &last {
            body["search_after"] = last.clone();
        }
        let page = search(body);
        if page.is_empty() {
            break;
        }
        for hit in &page {
            let values = hit["sort"].as_array().unwrap();
            assert_eq!(values.len(), 2, "{hit}");
            assert_eq!(values[0], hit["_source"]["g"], "{hit}");
        }
        seen.extend(ids(&page));
        last = Some(page.last().unwrap()["sort"].clone());
    }
    let mut want: Vec<i64> = (0..12).collect();
    want.sort_by_key(|i| i % 4);
    let mut got_groups: Vec<i64> = seen.iter().map(|i| i % 4).collect();
    got_groups.dedup();
    assert_eq!(got_groups, [0, 1, 2, 3], "{seen:?}");
    seen.sort_unstable();
    assert_eq!(seen, (0..12).collect::<Vec<_>>(), "every hit once");
    // Two keys: the second orders the first's ties; their values (one per key, unique
    // together) page through every hit in the order sorted by hand.
    let mut want: Vec<i64> = (0..12).collect();
    want.sort_by_key(|i| (i % 4, -i));
    let (mut seen, mut last) = (Vec::new(), None::<serde_json::Value>);
    loop {
        let mut body = json!({"size": 5, "sort": [{"g": "asc"}, {"i": {"order": "desc"}}]});
        if let Some(last) = &last {
            body["search_after"] = last.clone();
        }
        let page = search(body);
        if page.is_empty() {
            break;
        }
        for hit in &page {
            let source = &hit["_source"];
            assert_eq!(hit["sort"], json!([source["g"], source["i"]]), "{hit}");
        }
        seen.extend(ids(&page));
        last = Some(page.last().unwrap()["sort"].clone());
    }
    assert_eq!(seen, want);
    // A search_after that does not fit the sort is refused.
    let (status, answer) = server.request(
        "POST",
        "/s/_search",
        Some(&json!({"sort": [{"g": "asc"}], "search_after": [1, 2, 3]}).to_string()),
    );
    assert_eq!(status, 400, "{answer}");
}

/// `lenient` (a `query_string` option and the `q` parameter): a clause whose value does not
/// fit its field's type matches nothing instead of failing the search, and the other clauses
/// still count, against counts by hand.
#[test]
fn lenient_query_strings_drop_clauses_that_do_not_fit_their_field() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("d"));
    let (status, answer) = server.request(
        "PUT",
        "/l",
        Some(r#"{"mappings": {"properties": {"n": {"type": "long"}, "t": {"type": "keyword"}}}}"#),
    );
    assert_eq!(status, 200, "{answer}");
    let mut bulk = String::new();
    for i in 0..10 {
        bulk.push_str(&format!(
            "{{\"index\":{{}}}}\n{}\n",
            json!({"n": i, "t": if i % 2 == 0 { "even" } else { "odd" }})
        ));
    }
    let (status, answer) = server.request("POST", "/l/_bulk", Some(&bulk));
    assert_eq!(status, 200, "{answer}");
    let count = |query: &str, lenient: Option<bool>| {
        let mut options = json!({"query": query});
        if let Some(lenient) = lenient {
            options["lenient"] = lenient.into();
        }
        let body = json!({"query": {"query_string": options}});
        server.request("POST", "/l/_count", Some(&body.to_string()))
    };
    // Not lenient: a word on a number field is an error.
    assert_eq!(count("n:foo OR t:even", None).0, 400);
    assert_eq!(count("n:foo OR t:even", Some(false)).0, 400);
    for (query, want) in [
        ("n:foo OR t:even", 5),
        ("n:foo", 0),
        ("n:3 OR n:foo", 1),
        ("t:odd AND NOT n:bar", 5),
        ("n:[2 TO 4] OR n:baz", 3),
    ] {
        let (status, answer) = count(query, Some(true));
        assert_eq!(status, 200, "{query}: {answer}");
        assert_eq!(answer["count"], want, "{query}");
    }
    // `match` and `multi_match` take it too.
    for (query, status_want, want) in [
        (json!({"match": {"n": {"query": "foo"}}}), 400, None),
        (
            json!({"match": {"n": {"query": "foo", "lenient": true}}}),
            200,
            Some(0),
        ),
        (
            json!({"multi_match": {"query": "odd", "fields": ["n", "t"], "lenient": true}}),
            200,
            Some(5),
        ),
    ] {
        let body = json!({"query": query});
        let (status, answer) = server.request("POST", "/l/_count", Some(&body.to_string()));
        assert_eq!(status, status_want, "{body}: {answer}");
        if let Some(want) = want {
            assert_eq!(answer["count"], want, "{body}");
        }
    }
    let (status, answer) = server.request("GET", "/l/_search?q=n:foo&lenient=true", None);
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["hits"]["total"]["value"], 0);
}

/// Named queries (`_name`): each hit lists the named clauses it matches, in the order the
/// query names them, against a check by hand; `_name` beside a query's options and among a
/// field's are both read, and a clause that excludes a hit is never listed for it.
#[test]
fn named_queries_say_which_clauses_a_hit_matches() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("d"));
    let mut bulk = String::new();
    for i in 0..20 {
        bulk.push_str(&format!(
            "{{\"index\":{{}}}}\n{}\n",
            json!({"n": i, "word": if i % 3 == 0 { "fizz" } else { "plain" }, "i": i})
        ));
    }
    let (status, answer) = server.request("POST", "/named/_bulk", Some(&bulk));
    assert_eq!(status, 200, "{answer}");
    let body = json!({"size": 20, "query": {"bool": {
        "should": [
            {"match": {"word": {"query": "fizz", "_name": "fizz"}}},
            {"range": {"n": {"gte": 15, "_name": "high"}}},
            {"bool": {"_name": "low", "filter": [{"range": {"n": {"lt": 4}}}]}},
        ],
        "must_not": [{"term": {"n": {"value": 9, "_name": "nine"}}}],
    }}});
    let (status, answer) = server.request("POST", "/named/_search", Some(&body.to_string()));
    assert_eq!(status, 200, "{answer}");
    let hits = answer["hits"]["hits"].as_array().unwrap();
    let mut seen = Vec::new();
    for hit in hits {
        let i = hit["_source"]["i"].as_i64().unwrap();
        seen.push(i);
        let mut want: Vec<&str> = Vec::new();
        if i % 3 == 0 {
            want.push("fizz");
        }
        if i >= 15 {
            want.push("high");
        }
        if i < 4 {
            want.push("low");
        }
        let got: Vec<&str> = hit["matched_queries"]
            .as_array()
            .map(|names| names.iter().map(|n| n.as_str().unwrap()).collect())
            .unwrap_or_default();
        assert_eq!(got, want, "hit {i}: {hit}");
    }
    seen.sort_unstable();
    let want: Vec<i64> = (0..20)
        .filter(|i| (i % 3 == 0 || *i >= 15 || *i < 4) && *i != 9)
        .collect();
    assert_eq!(seen, want);
    // A query whose only option is its name.
    let body = json!({"size": 3, "query": {"match_all": {"_name": "all"}}});
    let (status, answer) = server.request("POST", "/named/_search", Some(&body.to_string()));
    assert_eq!(status, 200, "{answer}");
    for hit in answer["hits"]["hits"].as_array().unwrap() {
        assert_eq!(hit["matched_queries"], json!(["all"]), "{hit}");
    }
}

/// A value kept but not indexed (`ignore_malformed`) is named in its hit's `_ignored`, not in
/// its `_source`, and the event keeps the content id its `_bulk` reply gave; the names by hand.
#[test]
fn ignored_fields_are_named_in_their_hits() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("d"));
    let mapping = json!({"mappings": {"properties": {
        "d": {"type": "date", "ignore_malformed": true},
        "ip": {"type": "ip", "ignore_malformed": true}}}});
    let (status, answer) = server.request("PUT", "/m", Some(&mapping.to_string()));
    assert_eq!(status, 200, "{answer}");
    let docs = [
        (json!({"n": 0, "d": "2018-05-11", "ip": "::1"}), vec![]),
        (json!({"n": 1, "d": "bar", "ip": "10.0.0.1"}), vec!["d"]),
        (json!({"n": 2, "d": "bar", "ip": "quux"}), vec!["d", "ip"]),
    ];
    let mut bulk = String::new();
    for (doc, _) in &docs {
        bulk.push_str(&format!("{{\"index\":{{}}}}\n{doc}\n"));
    }
    let (status, answer) = server.request("POST", "/m/_bulk", Some(&bulk));
    assert_eq!(status, 200, "{answer}");
    let ids: Vec<String> = answer["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["index"]["_id"].as_str().unwrap().to_owned())
        .collect();
    for (i, (doc, ignored)) in docs.iter().enumerate() {
        let body = json!({"query": {"ids": {"values": [ids[i]]}}});
        let (status, answer) = server.request("POST", "/m/_search", Some(&body.to_string()));
        assert_eq!(status, 200, "{answer}");
        let hits = answer["hits"]["hits"].as_array().unwrap();
        assert_eq!(hits.len(), 1, "{answer}");
        let hit = &hits[0];
        assert_eq!(hit["_source"]["n"], doc["n"], "{hit}");
        assert!(hit["_source"].get("_ignored").is_none(), "{hit}");
        let mut shown: Vec<&str> = hit
            .get("_ignored")
            .map(|names| {
                names
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|n| n.as_str().unwrap())
                    .collect()
            })
            .unwrap_or_default();
        shown.sort_unstable();
        assert_eq!(shown, *ignored, "{hit}");
        let (status, answer) = server.get(&format!("/m/_doc/{}", ids[i]));
        assert_eq!(status, 200, "{answer}");
    }
}

/// A text array's items are 100 positions apart (or the mapping's `position_increment_gap`):
/// a phrase does not run from one item into the next unless its slop spans the gap, as in
/// Elasticsearch; a prefix scores 1 times its boost (Lucene's constant-score rewrite).
#[test]
fn array_items_are_apart_for_phrases_and_patterns_score_one() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("d"));
    let mapping = json!({"mappings": {"properties": {
        "tight": {"type": "text", "position_increment_gap": 0}}}});
    let (status, answer) = server.request("PUT", "/g", Some(&mapping.to_string()));
    assert_eq!(status, 200, "{answer}");
    let bulk = "{\"index\":{}}\n{\"text\": [\"foo\", \"b-12\"], \"tight\": [\"foo\", \"b-12\"]}\n";
    let (status, answer) = server.request("POST", "/g/_bulk", Some(bulk));
    assert_eq!(status, 200, "{answer}");
    let count = |query: serde_json::Value| {
        let body = json!({"query": query});
        let (status, answer) = server.request("POST", "/g/_count", Some(&body.to_string()));
        assert_eq!(status, 200, "{answer}");
        answer["count"].as_u64().unwrap()
    };
    let phrase = |field: &str, text: &str, slop: u32| {
        count(json!({"match_phrase": {field: {"query": text, "slop": slop}}}))
    };
    // foo at 0, b at 101, 12 at 102.
    assert_eq!(phrase("text", "foo b", 0), 0);
    assert_eq!(phrase("text", "foo b", 99), 0);
    assert_eq!(phrase("text", "foo b", 100), 1);
    assert_eq!(phrase("text", "b 12", 0), 1);
    assert_eq!(phrase("tight", "foo b", 0), 1);
    let (_, answer) = server.request("GET", "/g/_mapping", None);
    assert_eq!(
        answer["g"]["mappings"]["properties"]["tight"]["position_increment_gap"], 0,
        "{answer}"
    );
    for (boost, want) in [(None, 1.0), (Some(2.0), 2.0)] {
        let mut prefix = json!({"value": "fo"});
        if let Some(boost) = boost {
            prefix["boost"] = json!(boost);
        }
        let body = json!({"query": {"prefix": {"text": prefix}}});
        let (_, answer) = server.request("POST", "/g/_search", Some(&body.to_string()));
        assert_eq!(answer["hits"]["hits"][0]["_score"], json!(want), "{answer}");
    }
    // A filter clause adds nothing to the score; constant_score scores its boost; a bool's
    // boost multiplies its clauses' scores.
    let score = |query: serde_json::Value| {
        let body = json!({"query": query});
        let (status, answer) = server.request("POST", "/g/_search", Some(&body.to_string()));
        assert_eq!(status, 200, "{answer}");
        answer["hits"]["hits"][0]["_score"].as_f64().unwrap()
    };
    let alone = score(json!({"match": {"text": "foo"}}));
    assert!(alone > 0.0);
    let filtered = score(json!({"bool": {"must": {"match": {"text": "foo"}},
        "filter": {"match": {"tight": "foo"}}}}));
    assert_eq!(filtered, alone);
    assert_eq!(
        score(json!({"bool": {"filter": {"match": {"text": "foo"}}}})),
        0.0
    );
    assert_eq!(
        score(json!({"constant_score": {"filter": {"match": {"text": "foo"}}}})),
        1.0
    );
    assert_eq!(
        score(json!({"constant_score": {"filter": {"match": {"text": "foo"}}, "boost": 3}})),
        3.0
    );
    let boosted = score(json!({"bool": {"must": {"match": {"text": "foo"}}, "boost": 2}}));
    assert!((boosted - 2.0 * alone).abs() < 1e-5, "{boosted} {alone}");
}

/// Aliases: a search of an alias reads every index it names, a write goes to its write index
/// (refused, naming the alias, when it has none), `GET /_alias` lists them, a deletion removes
/// them; `indices_boost` scales each index's scores, by index, alias or pattern. Counts and
/// orders by hand over the documents sent.
#[test]
fn aliases_name_indices_for_searches_and_writes() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("d"));
    for index in ["a1", "a2"] {
        let (status, answer) = server.request("PUT", &format!("/{index}"), Some("{}"));
        assert_eq!(status, 200, "{answer}");
    }
    let (status, answer) = server.request(
        "PUT",
        "/a3",
        Some(r#"{"aliases": {"solo": {}, "both": {"is_write_index": true}}}"#),
    );
    assert_eq!(status, 200, "{answer}");
    for (index, alias) in [("a1", "both"), ("a2", "pair"), ("a1", "pair")] {
        let (status, answer) =
            server.request("PUT", &format!("/{index}/_alias/{alias}"), Some("{}"));
        assert_eq!(status, 200, "{answer}");
    }
    // An alias may not take an index's name, nor an index an alias's.
    let (status, _) = server.request("PUT", "/a1/_alias/a2", Some("{}"));
    assert_eq!(status, 400);
    let (status, _) = server.request("PUT", "/pair", Some("{}"));
    assert_eq!(status, 400);
    // A filter that is no query, and options Quarry does not take, are refused by name
    // (filtered aliases themselves: es_documents.rs).
    for (body, named) in [
        (r#"{"filter": {"no_such_query": {}}}"#, "no_such_query"),
        (r#"{"is_hidden": true}"#, "is_hidden"),
    ] {
        let (status, answer) = server.request("PUT", "/a1/_alias/f", Some(body));
        assert_eq!(status, 400, "{body}: {answer}");
        assert!(answer.to_string().contains(named), "{answer}");
    }

    // Writes: `solo` names one index, `both` has a write index, `pair` has none.
    let mut bulk = String::new();
    for (alias, n) in [("solo", 1), ("both", 2), ("a1", 3), ("a2", 4), ("pair", 5)] {
        bulk.push_str(&format!(
            "{{\"index\":{{\"_index\":\"{alias}\"}}}}\n{{\"n\":{n}}}\n"
        ));
    }
    let (status, answer) = server.request("POST", "/_bulk", Some(&bulk));
    assert_eq!(status, 200, "{answer}");
    let items = answer["items"].as_array().unwrap();
    let indices: Vec<&str> = items
        .iter()
        .map(|i| i["index"]["_index"].as_str().unwrap())
        .collect();
    assert_eq!(indices, ["a3", "a3", "a1", "a2", "pair"], "{answer}");
    assert_eq!(items[4]["index"]["status"], 400, "{answer}");
    assert!(items[4]["index"]["error"]["reason"]
        .as_str()
        .unwrap()
        .contains("no write index"));
    let (status, _) = server.request(
        "POST",
        "/pair/_bulk?require_alias=true",
        Some("{\"index\":{}}\n{\"n\":6}\n"),
    );
    assert_eq!(status, 200);
    let (_, answer) = server.request(
        "POST",
        "/a1/_bulk?require_alias=true",
        Some("{\"index\":{}}\n{\"n\":7}\n"),
    );
    assert_eq!(answer["items"][0]["index"]["status"], 404, "{answer}");

    // Searches: a1 holds 3, a2 holds 4, a3 holds 1 and 2.
    let ns = |path: &str| -> Vec<i64> {
        let (status, answer) = server.request("POST", path, Some(r#"{"size": 100}"#));
        assert_eq!(status, 200, "{answer}");
        let mut ns: Vec<i64> = answer["hits"]["hits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["_source"]["n"].as_i64().unwrap())
            .collect();
        ns.sort_unstable();
        ns
    };
    assert_eq!(ns("/solo/_search"), [1, 2]);
    assert_eq!(ns("/both/_search"), [1, 2, 3]);
    assert_eq!(ns("/pair/_search"), [3, 4]);
    assert_eq!(ns("/pa*/_search"), [3, 4]);
    assert_eq!(ns("/solo,a2/_search"), [1, 2, 4]);

    // Listing.
    let (status, answer) = server.request("GET", "/_alias/pair", None);
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        answer,
        json!({"a1": {"aliases": {"pair": {}}}, "a2": {"aliases": {"pair": {}}}})
    );
    let (_, answer) = server.request("GET", "/a3/_alias", None);
    assert_eq!(
        answer,
        json!({"a3": {"aliases": {"both": {"is_write_index": true}, "solo": {}}}})
    );
    let (status, answer) = server.request("GET", "/_alias/nope", None);
    assert_eq!(status, 404, "{answer}");
    assert_eq!(server.send("HEAD", "/_alias/solo", &[], b"").status, 200);
    assert_eq!(server.send("HEAD", "/_alias/nope", &[], b"").status, 404);

    // indices_boost: every hit of a match_all scores 1, times its index's factor.
    let body = json!({"size": 100, "indices_boost": [{"pair": 3.0}, {"a*": 2.0}]});
    let (status, answer) = server.request("POST", "/a1,a2,a3/_search", Some(&body.to_string()));
    assert_eq!(status, 200, "{answer}");
    for hit in answer["hits"]["hits"].as_array().unwrap() {
        let want = match hit["_index"].as_str().unwrap() {
            "a1" | "a2" => 3.0,
            _ => 2.0,
        };
        assert_eq!(hit["_score"], json!(want), "{hit}");
    }
    let body = json!({"indices_boost": [{"nope": 2.0}]});
    let (status, _) = server.request("POST", "/a1/_search", Some(&body.to_string()));
    assert_eq!(status, 404);

    // Removing: a named alias from an index; one it lacks is a 404; deleting an index takes
    // its aliases along; an alias is not an index to delete.
    let (status, _) = server.request("DELETE", "/a1/_alias/pair", None);
    assert_eq!(status, 200);
    assert_eq!(ns("/pair/_search"), [4]);
    let (status, _) = server.request("DELETE", "/a1/_alias/pair", None);
    assert_eq!(status, 404);
    let (status, _) = server.request("DELETE", "/solo", None);
    assert_eq!(status, 400);
    let (status, _) = server.request("DELETE", "/a3", None);
    assert_eq!(status, 200);
    let (status, _) = server.request("POST", "/solo/_search", Some("{}"));
    assert_eq!(status, 404);
    let body = json!({"actions": [{"add": {"index": "a2", "alias": "solo"}}, {"remove": {"index": "a2", "alias": "pair"}}]});
    let (status, answer) = server.request("POST", "/_aliases", Some(&body.to_string()));
    assert_eq!(status, 200, "{answer}");
    assert_eq!(ns("/solo/_search"), [4]);
    let (status, _) = server.request("POST", "/pair/_search", Some("{}"));
    assert_eq!(status, 404);
}

#[test]
fn collapse_shows_each_groups_best_hit_as_a_brute_force_grouping_does() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("d"));
    // 200 events over 23 groups (and some without a group), each with a distinct sort value
    // in a scrambled order.
    let events: Vec<(u64, Option<u64>)> = (0..200u64)
        .map(|i| ((i * 7919) % 1009, (i % 11 != 0).then_some((i * 31) % 23)))
        .collect();
    let mut bulk = String::new();
    for (sort, group) in &events {
        let doc = match group {
            Some(group) => json!({"sort": sort, "group": group}),
            None => json!({"sort": sort}),
        };
        bulk.push_str(&format!("{{\"index\":{{}}}}\n{doc}\n"));
    }
    let (status, answer) = server.request("POST", "/c/_bulk", Some(&bulk));
    assert_eq!(
        (status, &answer["errors"]),
        (200, &json!(false)),
        "{answer}"
    );
    // Brute force: by sort value, highest first; the first of each group.
    let mut ordered = events.clone();
    ordered.sort_by_key(|event| std::cmp::Reverse(event.0));
    let mut seen = std::collections::HashSet::new();
    let best: Vec<(u64, Option<u64>)> = ordered
        .into_iter()
        .filter(|(_, group)| seen.insert(*group))
        .collect();
    assert_eq!(best.len(), 24);
    for (from, size) in [(0, 10), (5, 3), (20, 10), (0, 100)] {
        let body = json!({
            "from": from, "size": size,
            "collapse": {"field": "group"},
            "sort": [{"sort": "desc"}],
        });
        let (status, answer) = server.request("POST", "/c/_search", Some(&body.to_string()));
        assert_eq!(status, 200, "{answer}");
        assert_eq!(answer["hits"]["total"]["value"], 200, "every match counts");
        let shown: Vec<(u64, Option<u64>)> = answer["hits"]["hits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|hit| {
                let group = hit["fields"]["group"].as_array().unwrap();
                let group = group.first().and_then(|g| g.as_u64());
                assert_eq!(hit["_source"]["group"].as_u64(), group, "{hit}");
                (hit["_source"]["sort"].as_u64().unwrap(), group)
            })
            .collect();
        let expected: Vec<(u64, Option<u64>)> =
            best.iter().skip(from).take(size).copied().collect();
        assert_eq!(shown, expected, "from {from}, size {size}");
    }
    for (body, message) in [
        (
            json!({"collapse": {"field": "group"}, "search_after": [1], "sort": [{"sort": "desc"}]}),
            "search_after",
        ),
        (
            json!({"collapse": {"field": "group", "inner_hits": {"name": "x"}}}),
            "collapse.inner_hits",
        ),
    ] {
        let (status, answer) = server.request("POST", "/c/_search", Some(&body.to_string()));
        assert_eq!(status, 400, "{answer}");
        assert!(
            answer["error"]["reason"]
                .as_str()
                .unwrap()
                .contains(message),
            "{answer}"
        );
    }
}

#[test]
fn closed_indices_are_kept_but_neither_searched_nor_written_until_opened() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    let server = Server::start(&data);
    send_bulk(&server, "logs-a");
    send_bulk(&server, "logs-b");
    let (status, answer) = server.request("POST", "/logs-b/_close", None);
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["indices"]["logs-b"]["closed"], true);
    let check_closed = |server: &Server| {
        let (status, answer) = server.request("POST", "/logs-b/_search", Some("{}"));
        assert_eq!(status, 400, "{answer}");
        assert_eq!(answer["error"]["type"], "index_closed_exception");
        let (_, answer) = server.get("/logs-b/_count?ignore_unavailable=true");
        assert_eq!(answer["count"], 0, "{answer}");
        // Patterns match open indices unless asked otherwise.
        let (_, answer) = server.get("/logs-*/_count");
        assert_eq!(answer["count"], EVENTS as u64, "{answer}");
        let (_, answer) = server.get("/logs-*/_mapping?expand_wildcards=closed");
        let names: Vec<&String> = answer.as_object().unwrap().keys().collect();
        assert_eq!(names, ["logs-b"], "{answer}");
        let (status, answer) = server.request(
            "POST",
            "/logs-b/_bulk",
            Some("{\"index\":{}}\n{\"message\":\"late\"}\n"),
        );
        assert_eq!(status, 200, "{answer}");
        assert_eq!(
            answer["items"][0]["index"]["error"]["type"], "index_closed_exception",
            "{answer}"
        );
    };
    check_closed(&server);
    // Closed stays closed across a restart.
    assert!(server.terminate());
    let server = Server::start(&data);
    check_closed(&server);
    let (status, answer) = server.request("POST", "/logs-b/_open", None);
    assert_eq!(status, 200, "{answer}");
    let (_, answer) = server.get("/logs-*/_count");
    assert_eq!(
        answer["count"],
        2 * EVENTS as u64,
        "every event is back: {answer}"
    );
}

/// A damaged block is never a silent gap in an Elasticsearch answer: `_shards.failed` counts
/// it and `_shards.failures` names its file, in `_search` and `_count`; with
/// `allow_partial_search_results=false` the search is an error naming it instead.
#[test]
fn a_damaged_block_is_a_failed_shard_named_in_the_answer() {
    let dir = tempfile::tempdir().unwrap();
    // Two blocks (two runs of `quarry index`), so a damaged one costs only itself.
    let data = dir.path().join("data");
    for (run, start) in ["2026-01-01T00:00:00Z", "2026-02-01T00:00:00Z"]
        .iter()
        .enumerate()
    {
        let file = dir.path().join(format!("events{run}.json"));
        let file = file.to_str().unwrap();
        let generated =
            common::quarry(&["gen-logs", "--events", "2000", "--start", start, "-o", file]);
        assert!(generated.status.success(), "{generated:?}");
        let indexed = common::quarry(&["index", "--data", data.to_str().unwrap(), file]);
        assert!(indexed.status.success(), "{indexed:?}");
    }
    let whole = {
        let server = Server::start(&data);
        let (status, answer) = server.request("POST", "/default/_count", None);
        assert_eq!(status, 200, "{answer}");
        assert_eq!(
            answer["_shards"],
            json!({"total": 1, "successful": 1, "skipped": 0, "failed": 0})
        );
        answer["count"].as_u64().unwrap()
    };
    let mut blocks: Vec<_> = std::fs::read_dir(data.join("blocks"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "qblk"))
        .collect();
    blocks.sort();
    assert!(blocks.len() >= 2, "{blocks:?}");
    let damaged = &blocks[0];
    let mut bytes = std::fs::read(damaged).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle..middle + 64].fill(0);
    std::fs::write(damaged, bytes).unwrap();
    let name = damaged.file_name().unwrap().to_str().unwrap();

    let server = Server::start(&data);
    let (status, answer) = server.request("POST", "/default/_search", Some(r#"{"size": 1}"#));
    assert_eq!(status, 200, "{answer}");
    let shards = &answer["_shards"];
    assert_eq!(
        (&shards["total"], &shards["successful"], &shards["failed"]),
        (&json!(2), &json!(1), &json!(1)),
        "{answer}"
    );
    let reason = shards["failures"][0]["reason"]["reason"].as_str().unwrap();
    assert!(reason.contains(name), "{reason}");
    let total = answer["hits"]["total"]["value"].as_u64().unwrap();
    assert!(0 < total && total < whole, "{total} of {whole}");

    let (status, answer) = server.request("POST", "/default/_count", None);
    assert_eq!(
        (status, answer["count"].as_u64()),
        (200, Some(total)),
        "{answer}"
    );
    assert_eq!(answer["_shards"]["failed"], 1, "{answer}");

    let (status, answer) = server.request(
        "POST",
        "/default/_search?allow_partial_search_results=false",
        Some("{}"),
    );
    assert_eq!(status, 500, "{answer}");
    assert!(answer.to_string().contains(name), "{answer}");
}
