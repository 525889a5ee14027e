//! Keyword values and coerced terms through the Elasticsearch API, as the official clients
//! send them: `prefix`, `wildcard`, `regexp` and `fuzzy` on `X.keyword` match whole values
//! case-sensitively (`web-0*` finds `web-01`, not `Web-07`), on a text field they match its
//! tokens; a `term` string `"500"` finds the number 500 and `"true"` the boolean; a range on
//! a keyword field compares whole values byte-wise, case kept. Every count
//! is checked against a brute-force filter over the generated events.

mod common;

use common::Server;
use serde_json::{json, Value};

const EVENTS: usize = 300;

struct Event {
    host: String,
    status: u64,
    flag: bool,
    note: &'static str,
}

fn event(i: usize) -> Event {
    let host = if i % 25 == 7 {
        "Web-07".to_owned()
    } else if i.is_multiple_of(17) {
        "db-1".to_owned()
    } else {
        format!("web-{:02}", i % 12 + 1)
    };
    Event {
        host,
        status: [200, 200, 200, 404, 500][i % 5],
        flag: i.is_multiple_of(4),
        note: ["true", "it is true", "false", "maybe"][i % 7 % 4],
    }
}

fn send_bulk(server: &Server, index: &str) {
    let body: String = (0..EVENTS)
        .map(|i| {
            let e = event(i);
            let source = json!({
                "@timestamp": format!("2026-03-01T00:{:02}:{:02}Z", i / 60, i % 60),
                "message": format!("request {i}"),
                "host": e.host,
                "status": e.status,
                "flag": e.flag,
                "note": e.note,
            });
            format!("{{\"index\":{{}}}}\n{source}\n")
        })
        .collect();
    let (status, answer) = server.request("POST", &format!("/{index}/_bulk"), Some(&body));
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["errors"], false, "{answer}");
    let (status, answer) = server.request("POST", &format!("/{index}/_refresh"), None);
    assert_eq!(status, 200, "{answer}");
}

fn expected(keep: impl Fn(&Event) -> bool) -> u64 {
    (0..EVENTS).map(event).filter(|e| keep(e)).count() as u64
}

/// The count of `query` in `index`, by `_count` and by `_search`'s total (they must agree).
fn count(server: &Server, index: &str, query: &Value) -> u64 {
    let body = json!({ "query": query }).to_string();
    let (status, answer) = server.request("POST", &format!("/{index}/_count"), Some(&body));
    assert_eq!(status, 200, "{query}: {answer}");
    let counted = answer["count"].as_u64().expect("a count");
    let body = json!({"query": query, "size": 0, "track_total_hits": true}).to_string();
    let (status, answer) = server.request("POST", &format!("/{index}/_search"), Some(&body));
    assert_eq!(status, 200, "{query}: {answer}");
    assert_eq!(answer["hits"]["total"]["value"], counted, "{query}");
    counted
}

/// Restricted Damerau-Levenshtein distance (a transposition is one edit, as Lucene's fuzzy
/// queries count it), in chars.
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            d[i][j] = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d[i][j] = d[i][j].min(d[i - 2][j - 2] + 1);
            }
        }
    }
    d[a.len()][b.len()]
}

#[test]
fn keyword_patterns_and_coerced_terms_match_a_brute_force_filter() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("d"));
    send_bulk(&server, "default");

    let host_tokens = |e: &Event| -> Vec<String> {
        e.host
            .to_lowercase()
            .split(|c: char| !c.is_alphanumeric())
            .map(str::to_owned)
            .collect()
    };
    type Case = (Value, Box<dyn Fn(&Event) -> bool>);
    let cases: Vec<Case> = vec![
        // Patterns on `.keyword`: the whole value, case-sensitively.
        (
            json!({"prefix": {"host.keyword": "web-0"}}),
            Box::new(|e| e.host.starts_with("web-0")),
        ),
        (
            json!({"prefix": {"host.keyword": {"value": "Web-0"}}}),
            Box::new(|e| e.host.starts_with("Web-0")),
        ),
        (
            json!({"wildcard": {"host.keyword": "web-0*"}}),
            Box::new(|e| e.host.starts_with("web-0")),
        ),
        (
            json!({"wildcard": {"host.keyword": {"value": "*-1?"}}}),
            Box::new(|e| e.host.len() >= 4 && e.host[e.host.len() - 3..].starts_with("-1")),
        ),
        (
            json!({"wildcard": {"host.keyword": {"wildcard": "W*"}}}),
            Box::new(|e| e.host.starts_with('W')),
        ),
        (
            json!({"regexp": {"host.keyword": "web-0[1-3]"}}),
            Box::new(|e| ["web-01", "web-02", "web-03"].contains(&e.host.as_str())),
        ),
        (
            json!({"fuzzy": {"host.keyword": {"value": "web-0l", "fuzziness": 1}}}),
            Box::new(|e| edit_distance(&e.host, "web-0l") <= 1),
        ),
        (
            json!({"fuzzy": {"host.keyword": {"value": "DB-1", "fuzziness": "AUTO"}}}),
            Box::new(|e| edit_distance(&e.host, "DB-1") <= 1),
        ),
        // `case_insensitive`.
        (
            json!({"prefix": {"host.keyword": {"value": "WEB-0", "case_insensitive": true}}}),
            Box::new(|e| e.host.to_lowercase().starts_with("web-0")),
        ),
        (
            json!({"wildcard": {"host.keyword": {"value": "wEb-*7", "case_insensitive": true}}}),
            Box::new(|e| e.host.to_lowercase().starts_with("web-") && e.host.ends_with('7')),
        ),
        (
            json!({"regexp": {"host.keyword": {"value": "web-0[5-7]", "case_insensitive": true}}}),
            Box::new(|e| ["web-05", "web-06", "web-07"].contains(&e.host.to_lowercase().as_str())),
        ),
        (
            json!({"term": {"host.keyword": {"value": "WEB-07", "case_insensitive": true}}}),
            Box::new(|e| e.host.eq_ignore_ascii_case("web-07")),
        ),
        (
            json!({"term": {"host.keyword": "Web-07"}}),
            Box::new(|e| e.host == "Web-07"),
        ),
        // On the text field, patterns match its tokens (`web-01` is `web`, `01`).
        (
            json!({"prefix": {"host": "We"}}),
            Box::new(move |e| host_tokens(e).iter().any(|t| t.starts_with("we"))),
        ),
        (
            json!({"wildcard": {"host": "0?"}}),
            Box::new(move |e| {
                host_tokens(e)
                    .iter()
                    .any(|t| t.len() == 2 && t.starts_with('0'))
            }),
        ),
        // A string term on a number field is that number.
        (
            json!({"term": {"status": "500"}}),
            Box::new(|e| e.status == 500),
        ),
        (
            json!({"term": {"status": {"value": "404"}}}),
            Box::new(|e| e.status == 404),
        ),
        (
            json!({"term": {"status": 500}}),
            Box::new(|e| e.status == 500),
        ),
        (
            json!({"terms": {"status": ["404", "500"]}}),
            Box::new(|e| e.status != 200),
        ),
        (
            json!({"terms": {"status": [200, "404"]}}),
            Box::new(|e| e.status != 500),
        ),
        // A string term on a boolean field is that boolean; a boolean on a string, its text.
        (json!({"term": {"flag": "true"}}), Box::new(|e| e.flag)),
        (json!({"term": {"flag": "false"}}), Box::new(|e| !e.flag)),
        (json!({"term": {"flag": true}}), Box::new(|e| e.flag)),
        (json!({"terms": {"flag": ["false"]}}), Box::new(|e| !e.flag)),
        (
            json!({"term": {"note.keyword": true}}),
            Box::new(|e| e.note == "true"),
        ),
        (
            json!({"term": {"note.keyword": "true"}}),
            Box::new(|e| e.note == "true"),
        ),
        // The query language's `field.keyword:value` is the whole value of the field.
        (
            json!({"query_string": {"query": "host.keyword:web-01"}}),
            Box::new(|e| e.host == "web-01"),
        ),
        (
            json!({"query_string": {"query": "host.keyword:\"Web-07\""}}),
            Box::new(|e| e.host == "Web-07"),
        ),
        (
            json!({"query_string": {"query": "host.keyword:web-1*"}}),
            Box::new(|e| e.host.starts_with("web-1")),
        ),
        (
            json!({"query_string": {"query": "note.keyword:true"}}),
            Box::new(|e| e.note == "true"),
        ),
    ];
    let mut wrong = Vec::new();
    for (query, keep) in &cases {
        let want = expected(keep);
        let got = count(&server, "default", query);
        if got != want {
            wrong.push(format!("{query}: {got} hits, expected {want}"));
        }
    }
    assert!(wrong.is_empty(), "wrong counts:\n{}", wrong.join("\n"));
}

/// A field mapped `keyword` is matched by patterns as whole values (case-sensitively), a field
/// mapped as a number takes a string term that is a number, a boolean field the string
/// `"true"`.
#[test]
fn mapped_keyword_and_number_fields() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("d"));
    let (status, answer) = server.request(
        "PUT",
        "/mapped",
        Some(
            r#"{"mappings": {"properties": {"host": {"type": "keyword"},
                 "status": {"type": "long"}, "flag": {"type": "boolean"}}}}"#,
        ),
    );
    assert_eq!(status, 200, "{answer}");
    send_bulk(&server, "mapped");
    type Case = (Value, Box<dyn Fn(&Event) -> bool>);
    let cases: Vec<Case> = vec![
        (
            json!({"prefix": {"host": "web-0"}}),
            Box::new(|e| e.host.starts_with("web-0")),
        ),
        (
            json!({"wildcard": {"host": "W*"}}),
            Box::new(|e| e.host.starts_with('W')),
        ),
        (
            json!({"regexp": {"host": "(web|db)-1"}}),
            Box::new(|e| e.host == "db-1"),
        ),
        (
            json!({"term": {"status": "500"}}),
            Box::new(|e| e.status == 500),
        ),
        (
            json!({"terms": {"status": ["200", 404]}}),
            Box::new(|e| e.status != 500),
        ),
        (json!({"term": {"flag": "true"}}), Box::new(|e| e.flag)),
        (json!({"term": {"flag": false}}), Box::new(|e| !e.flag)),
        (
            json!({"query_string": {"query": "host:web-0*"}}),
            Box::new(|e| e.host.starts_with("web-0")),
        ),
        // Ranges on a keyword field compare whole values byte-wise, case kept, whatever the
        // bounds look like.
        (
            json!({"range": {"host": {"gte": "Web", "lt": "web-05"}}}),
            Box::new(|e| e.host.as_str() >= "Web" && e.host.as_str() < "web-05"),
        ),
        (
            json!({"range": {"host": {"lt": 500}}}),
            Box::new(|e| e.host.as_str() < "500"),
        ),
        (
            json!({"query_string": {"query": "host:[db-1 TO web-02]"}}),
            Box::new(|e| e.host.as_str() >= "db-1" && e.host.as_str() <= "web-02"),
        ),
        (
            json!({"range": {"status": {"gt": "200", "lte": 500}}}),
            Box::new(|e| e.status > 200),
        ),
        // Every document has its metadata fields.
        (json!({"exists": {"field": "_index"}}), Box::new(|_| true)),
        (json!({"exists": {"field": "_id"}}), Box::new(|_| true)),
        (json!({"exists": {"field": "_seq_no"}}), Box::new(|_| true)),
    ];
    let mut wrong = Vec::new();
    for (query, keep) in &cases {
        let want = expected(keep);
        let got = count(&server, "mapped", query);
        if got != want {
            wrong.push(format!("{query}: {got} hits, expected {want}"));
        }
    }
    assert!(wrong.is_empty(), "wrong counts:\n{}", wrong.join("\n"));
}

/// A message of document `i`: short (an exact term), longer than 32 bytes (none: read from
/// the column), longer than 256 characters (past the dynamic `.keyword`'s `ignore_above`),
/// or an array holding such items.
fn message(i: usize) -> Value {
    let words = ["disk full", "Disk", "connection reset by peer", "timeout"];
    let word = words[i % words.len()];
    match i % 5 {
        0 => json!(format!("{word} {i}")),
        1 => json!(format!("{word} while writing block {i} to the store")),
        2 => json!(format!("{word} {}", "é".repeat(200 + i % 100))),
        3 => json!([
            format!("{word} {i}"),
            format!("{word} in a longer item number {i} here")
        ]),
        _ => json!(format!("{word} {}", "x".repeat(250 + i % 10))),
    }
}

/// The whole values of message `i` a keyword view holds: those of at most `limit` chars.
fn held(i: usize, limit: usize) -> Vec<String> {
    let value = message(i);
    let items: Vec<String> = match &value {
        Value::Array(items) => items
            .iter()
            .map(|v| v.as_str().unwrap().to_owned())
            .collect(),
        other => vec![other.as_str().unwrap().to_owned()],
    };
    items
        .into_iter()
        .filter(|v| v.chars().count() <= limit)
        .collect()
}

/// `X.keyword` (dynamic: up to 256 chars) and a keyword multi-field with a small
/// `ignore_above` see whole values of any length up to their limit, in queries, aggregations
/// and sorts, as Elasticsearch's keyword doc values and index do: values longer than 32 bytes
/// (which have no exact term) are found, values over the limit are not, by brute force.
#[test]
fn keyword_views_hold_every_whole_value_up_to_their_ignore_above() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("d"));
    let (status, answer) = server.request(
        "PUT",
        "/views",
        Some(
            r#"{"mappings": {"properties": {"title": {"type": "text",
                 "fields": {"raw": {"type": "keyword", "ignore_above": 40}}}}}}"#,
        ),
    );
    assert_eq!(status, 200, "{answer}");
    const DOCS: usize = 120;
    let body: String = (0..DOCS)
        .map(|i| {
            let source = json!({
                "@timestamp": format!("2026-03-01T00:{:02}:{:02}Z", i / 60, i % 60),
                "message": message(i),
                "title": message(i),
            });
            format!("{{\"index\":{{\"_index\":\"views\",\"_id\":\"{i}\"}}}}\n{source}\n")
        })
        .collect();
    let (status, answer) = server.request("POST", "/_bulk?refresh=true", Some(&body));
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["errors"], false, "{answer}");

    type Keep = Box<dyn Fn(&str) -> bool>;
    let patterns: Vec<(Value, Keep)> = vec![
        (
            json!({"prefix": {"F": "disk full while"}}),
            Box::new(|v| v.starts_with("disk full while")),
        ),
        (
            json!({"prefix": {"F": "Disk"}}),
            Box::new(|v| v.starts_with("Disk")),
        ),
        (
            json!({"wildcard": {"F": "*block 1? to*"}}),
            Box::new(|v| {
                v.find("block 1").is_some_and(|at| {
                    v[at + 8..].starts_with(" to")
                        && v[at + 7..]
                            .chars()
                            .next()
                            .is_some_and(|c| c.is_ascii_digit())
                })
            }),
        ),
        (
            json!({"regexp": {"F": "timeout (in|é).*"}}),
            Box::new(|v| v.starts_with("timeout in") || v.starts_with("timeout é")),
        ),
        (
            json!({"range": {"F": {"gte": "connection", "lt": "disk"}}}),
            Box::new(|v| ("connection".."disk").contains(&v)),
        ),
        (json!({"exists": {"field": "F"}}), Box::new(|_| true)),
    ];
    let mut wrong = Vec::new();
    for (field, limit) in [("message.keyword", 256), ("title.raw", 40)] {
        for (query, keep) in &patterns {
            let query: Value =
                serde_json::from_str(&query.to_string().replace("\"F\"", &format!("\"{field}\"")))
                    .unwrap();
            let want = (0..DOCS)
                .filter(|&i| held(i, limit).iter().any(|v| keep(v)))
                .count() as u64;
            let got = count(&server, "views", &query);
            if got != want {
                wrong.push(format!("{query}: {got} hits, expected {want}"));
            }
        }
        // A whole value the view holds is found by `term`; one past its limit is not.
        for i in [1, 2, 3, 4] {
            let value = match message(i) {
                Value::Array(items) => items[1].as_str().unwrap().to_owned(),
                other => other.as_str().unwrap().to_owned(),
            };
            let query = json!({"term": {field: value}});
            let want = (0..DOCS)
                .filter(|&d| held(d, limit).contains(&value))
                .count() as u64;
            let got = count(&server, "views", &query);
            if got != want {
                wrong.push(format!("term #{i} on {field}: {got} hits, expected {want}"));
            }
        }
        // Aggregations count the values the view holds.
        let body = json!({"size": 0, "aggs": {
            "t": {"terms": {"field": field, "size": 1000}},
            "n": {"value_count": {"field": field}},
            "m": {"missing": {"field": field}},
        }});
        let (status, answer) = server.request("POST", "/views/_search", Some(&body.to_string()));
        assert_eq!(status, 200, "{answer}");
        let mut want_terms = std::collections::BTreeMap::<String, u64>::new();
        for i in 0..DOCS {
            for value in held(i, limit) {
                *want_terms.entry(value).or_default() += 1;
            }
        }
        let got_terms: std::collections::BTreeMap<String, u64> = answer["aggregations"]["t"]
            ["buckets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| {
                (
                    b["key"].as_str().unwrap().to_owned(),
                    b["doc_count"].as_u64().unwrap(),
                )
            })
            .collect();
        if got_terms != want_terms {
            wrong.push(format!(
                "terms of {field}: {got_terms:?}, expected {want_terms:?}"
            ));
        }
        let values: u64 = (0..DOCS).map(|i| held(i, limit).len() as u64).sum();
        let without = (0..DOCS).filter(|&i| held(i, limit).is_empty()).count() as u64;
        if answer["aggregations"]["n"]["value"] != values
            || answer["aggregations"]["m"]["doc_count"] != without
        {
            wrong.push(format!(
                "value_count/missing of {field}: {answer}, expected {values}/{without}"
            ));
        }
        // A sort by the view puts a document without a value it holds last; an array sorts
        // by its least item ascending, its greatest descending.
        for descending in [false, true] {
            let order = if descending { "desc" } else { "asc" };
            let body = json!({"size": DOCS, "sort": [{field: order}, {"@timestamp": "asc"}]});
            let (status, answer) =
                server.request("POST", "/views/_search", Some(&body.to_string()));
            assert_eq!(status, 200, "{answer}");
            let got: Vec<Value> = answer["hits"]["hits"]
                .as_array()
                .unwrap()
                .iter()
                .map(|h| h["sort"][0].clone())
                .collect();
            let mut want: Vec<Option<String>> = (0..DOCS)
                .map(|i| match descending {
                    false => held(i, limit).into_iter().min(),
                    true => held(i, limit).into_iter().max(),
                })
                .collect();
            want.sort_by(|a, b| match (a, b) {
                (Some(a), Some(b)) if descending => b.cmp(a),
                (Some(a), Some(b)) => a.cmp(b),
                (a, b) => b.is_some().cmp(&a.is_some()),
            });
            let want: Vec<Value> = want
                .into_iter()
                .map(|v| v.map_or(Value::Null, Value::from))
                .collect();
            if got != want {
                wrong.push(format!(
                    "sort by {field} {order}: {got:?}, expected {want:?}"
                ));
            }
        }
    }
    let body = json!({"size": 0, "aggs": {"a": {"avg": {"field": "title.raw"}}}});
    let (status, answer) = server.request("POST", "/views/_search", Some(&body.to_string()));
    assert_eq!(status, 400, "a number metric over a keyword view: {answer}");
    assert!(wrong.is_empty(), "wrong answers:\n{}", wrong.join("\n"));
}

/// A whole value scores as Elasticsearch's BM25 scores one occurrence without length norms:
/// its idf over the docs with a value in the field, `ln(1 + (N - n + 0.5) / (n + 0.5))`, times
/// the boost; `terms` and a filter score their boost and 0; a `bool` sums its clauses'.
#[test]
fn whole_values_score_their_idf() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("d"));
    let (status, answer) = server.request(
        "PUT",
        "/scored",
        Some(r#"{"mappings": {"properties": {"host": {"type": "keyword"}, "flag": {"type": "boolean"}}}}"#),
    );
    assert_eq!(status, 200, "{answer}");
    send_bulk(&server, "scored");
    let idf = |n: u64| (1.0 + (EVENTS as f64 - n as f64 + 0.5) / (n as f64 + 0.5)).ln();
    let hosts = |host: &str| expected(|e| e.host == host);
    let cases: Vec<(Value, f64)> = vec![
        (json!({"term": {"host": "db-1"}}), idf(hosts("db-1"))),
        (
            json!({"term": {"host": {"value": "Web-07", "boost": 3}}}),
            3.0 * idf(hosts("Web-07")),
        ),
        (json!({"match": {"host": "web-03"}}), idf(hosts("web-03"))),
        (json!({"term": {"flag": true}}), idf(expected(|e| e.flag))),
        (json!({"terms": {"host": ["db-1"], "boost": 2}}), 2.0),
        (json!({"bool": {"filter": {"term": {"host": "db-1"}}}}), 0.0),
        // The best hit has both (event 0: db-1, flagged).
        (
            json!({"bool": {"should": [{"term": {"host": "db-1"}}, {"term": {"flag": true}}]}}),
            idf(hosts("db-1")) + idf(expected(|e| e.flag)),
        ),
    ];
    for (query, want) in cases {
        let body = json!({"query": query, "size": 1});
        let (status, answer) = server.request("POST", "/scored/_search", Some(&body.to_string()));
        assert_eq!(status, 200, "{query}: {answer}");
        let got = answer["hits"]["hits"][0]["_score"]
            .as_f64()
            .expect("a score");
        assert!(
            (got - want).abs() < 1e-4,
            "{query}: scored {got}, expected {want}"
        );
    }
}

/// A keyword multi-field of a keyword field holds its parent's values up to its own
/// `ignore_above`, though the parent indexes every value whole (here past 32 bytes too).
#[test]
fn a_keyword_multi_field_of_a_keyword_keeps_its_limit() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("d"));
    let (status, answer) = server.request(
        "PUT",
        "/codes",
        Some(
            r#"{"mappings": {"properties": {"code": {"type": "keyword",
                 "fields": {"short": {"type": "keyword", "ignore_above": 40}}}}}}"#,
        ),
    );
    assert_eq!(status, 200, "{answer}");
    let codes: Vec<String> = [2, 35, 40, 41, 60]
        .iter()
        .map(|&n| format!("ab{}", "c".repeat(n - 2)))
        .chain(["b".to_owned()])
        .collect();
    let body: String = codes
        .iter()
        .map(|code| format!("{{\"index\":{{}}}}\n{}\n", json!({ "code": code })))
        .collect();
    let (status, answer) = server.request("POST", "/codes/_bulk?refresh=true", Some(&body));
    assert_eq!(status, 200, "{answer}");
    let held = |keep: &dyn Fn(&str) -> bool| {
        codes.iter().filter(|c| c.len() <= 40 && keep(c)).count() as u64
    };
    for (query, want) in [
        (
            json!({"prefix": {"code.short": "ab"}}),
            held(&|c| c.starts_with("ab")),
        ),
        (json!({"wildcard": {"code.short": "*"}}), held(&|_| true)),
        (json!({"exists": {"field": "code.short"}}), held(&|_| true)),
        (json!({"prefix": {"code": "ab"}}), 5),
    ] {
        assert_eq!(count(&server, "codes", &query), want, "{query}");
    }
}
