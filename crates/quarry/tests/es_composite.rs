//! Aggregations over arrays and mapped number types, checked against a brute-force model of
//! the events sent: `composite` paged with `after_key` until the last page, `terms` and
//! `multi_terms` over array fields (a doc in the bucket of each distinct item, once), number
//! fields read as their mapped type (`"12"` coerced, a `scaled_float` rounded to its factor, a
//! `long` truncating a fraction), and fields under a `nested` object refused by name.

mod common;

use common::Server;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};

const EVENTS: u64 = 600;
const TAGS: [&str; 5] = ["alpha", "beta", "gamma", "delta", "eps"];

struct Event {
    /// Distinct tags (the document may repeat one).
    tags: BTreeSet<&'static str>,
    /// As sent: a string or a number, maybe with a fraction on the `long` field.
    n: Option<f64>,
    /// The `scaled_float` value as sent.
    size: f64,
}

/// A small deterministic generator (xorshift), so a failure names its seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn generate() -> (Vec<Event>, String) {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut events = Vec::new();
    let mut bulk = String::new();
    for i in 0..EVENTS {
        let count = rng.next() % 4;
        let mut sent: Vec<&str> = (0..count)
            .map(|_| TAGS[(rng.next() % TAGS.len() as u64) as usize])
            .collect();
        if count == 3 && rng.next().is_multiple_of(2) {
            sent.push(sent[0]);
        }
        let tags_json = match sent.len() {
            0 => None,
            1 if rng.next().is_multiple_of(2) => Some(json!(sent[0])),
            _ => Some(json!(sent)),
        };
        let has_n = !rng.next().is_multiple_of(5);
        let n = has_n.then(|| (rng.next() % 40) as f64 + [0.0, 0.75][(i % 2) as usize]);
        let n_json = n.map(|n| match rng.next() % 3 {
            0 => json!(n.to_string()),
            _ => json!(n),
        });
        let size = (rng.next() % 1000) as f64 / 100.0 + 0.004;
        let mut doc = json!({ "size": size, "items": [{"v": i}, {"v": i + 1}], "message": format!("event {i}") });
        if let Some(tags) = tags_json {
            doc["tags"] = tags;
        }
        if let Some(n) = n_json {
            doc["n"] = n;
        }
        bulk.push_str("{\"index\":{}}\n");
        bulk.push_str(&doc.to_string());
        bulk.push('\n');
        events.push(Event {
            tags: sent.into_iter().collect(),
            n,
            size,
        });
    }
    (events, bulk)
}

fn search(server: &Server, body: &Value) -> (u16, Value) {
    server.request("POST", "/arr/_search", Some(&body.to_string()))
}

fn aggs(server: &Server, body: Value) -> Value {
    let (status, answer) = search(server, &body);
    assert_eq!(status, 200, "{body}: {answer}");
    answer["aggregations"].clone()
}

fn start() -> (tempfile::TempDir, Server, Vec<Event>) {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("d"));
    let mapping = json!({"mappings": {"properties": {
        "tags": {"type": "keyword"},
        "n": {"type": "long"},
        "size": {"type": "scaled_float", "scaling_factor": 10},
        "items": {"type": "nested", "properties": {"v": {"type": "long"}}},
    }}});
    let (status, answer) = server.request("PUT", "/arr", Some(&mapping.to_string()));
    assert_eq!(status, 200, "{answer}");
    let (events, bulk) = generate();
    let (status, answer) = server.request("POST", "/arr/_bulk", Some(&bulk));
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["errors"], false, "{answer}");
    (dir, server, events)
}

/// A `long` field's value: the fraction truncated.
fn long(n: f64) -> i64 {
    n.trunc() as i64
}

#[test]
fn arrays_and_number_types_aggregate_as_the_model_says() {
    let (_dir, server, events) = start();

    // terms over an array field: each distinct item once per doc.
    let mut tag_counts: BTreeMap<&str, u64> = BTreeMap::new();
    for event in &events {
        for tag in &event.tags {
            *tag_counts.entry(tag).or_default() += 1;
        }
    }
    let answer = aggs(
        &server,
        json!({"size": 0, "aggs": {"t": {"terms": {"field": "tags", "size": 10, "order": {"_key": "asc"}}}}}),
    );
    let got: BTreeMap<String, u64> = answer["t"]["buckets"]
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
    let want: BTreeMap<String, u64> = tag_counts
        .iter()
        .map(|(k, v)| (k.to_string(), *v))
        .collect();
    assert_eq!(got, want);

    // Metrics of the mapped number types.
    let answer = aggs(
        &server,
        json!({"size": 0, "aggs": {
            "n_sum": {"sum": {"field": "n"}},
            "n_count": {"value_count": {"field": "n"}},
            "size_sum": {"sum": {"field": "size"}},
            "size_max": {"max": {"field": "size"}},
        }}),
    );
    let n_values: Vec<i64> = events.iter().filter_map(|e| e.n.map(long)).collect();
    assert_eq!(answer["n_count"]["value"], json!(n_values.len()));
    assert_eq!(
        answer["n_sum"]["value"].as_f64().unwrap(),
        n_values.iter().sum::<i64>() as f64
    );
    let scaled: Vec<f64> = events
        .iter()
        .map(|e| (e.size * 10.0).round() / 10.0)
        .collect();
    let sum: f64 = scaled.iter().sum();
    let got = answer["size_sum"]["value"].as_f64().unwrap();
    assert!((got - sum).abs() < 1e-6, "scaled sum {got} vs model {sum}");
    let max = scaled.iter().cloned().fold(f64::MIN, f64::max);
    assert_eq!(answer["size_max"]["value"].as_f64().unwrap(), max);

    // A range query on the coerced long field matches the model.
    let (status, answer) = search(
        &server,
        &json!({"size": 0, "track_total_hits": true, "query": {"range": {"n": {"gte": 10, "lt": 20}}}}),
    );
    assert_eq!(status, 200, "{answer}");
    let want = n_values.iter().filter(|n| (10..20).contains(*n)).count();
    assert_eq!(answer["hits"]["total"]["value"], json!(want));

    // multi_terms over an array and a number: every combination.
    let mut pairs: BTreeMap<(String, i64), u64> = BTreeMap::new();
    for event in &events {
        if let Some(n) = event.n {
            for tag in &event.tags {
                *pairs.entry((tag.to_string(), long(n))).or_default() += 1;
            }
        }
    }
    let answer = aggs(
        &server,
        json!({"size": 0, "aggs": {"m": {"multi_terms": {"terms": [{"field": "tags"}, {"field": "n"}], "size": 10000}}}}),
    );
    let got: BTreeMap<(String, i64), u64> = answer["m"]["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            let key = b["key"].as_array().unwrap();
            (
                (
                    key[0].as_str().unwrap().to_owned(),
                    key[1].as_i64().unwrap(),
                ),
                b["doc_count"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(got, pairs);
}

#[test]
fn composite_pages_through_every_combination_in_order() {
    let (_dir, server, events) = start();
    // The model: (tag or none, histogram of n by 5, descending) -> count.
    type Key = (Option<String>, i64);
    let mut model: BTreeMap<Key, u64> = BTreeMap::new();
    for event in &events {
        let Some(n) = event.n else { continue };
        let slot = long(n).div_euclid(5) * 5;
        if event.tags.is_empty() {
            *model.entry((None, slot)).or_default() += 1;
        }
        for tag in &event.tags {
            *model.entry((Some(tag.to_string()), slot)).or_default() += 1;
        }
    }
    // Missing tags first (ascending), tags ascending, slots descending.
    let mut want: Vec<(Key, u64)> = model.into_iter().collect();
    want.sort_by(|((ta, sa), _), ((tb, sb), _)| ta.cmp(tb).then(sb.cmp(sa)));

    let sources = json!([
        {"tag": {"terms": {"field": "tags", "missing_bucket": true}}},
        {"slot": {"histogram": {"field": "n", "interval": 5, "order": "desc"}}},
    ]);
    let mut got: Vec<(Key, u64)> = Vec::new();
    let mut after: Option<Value> = None;
    let mut pages = 0;
    loop {
        let mut composite = json!({"sources": sources, "size": 7});
        if let Some(after) = &after {
            composite["after"] = after.clone();
        }
        let answer = aggs(
            &server,
            json!({"size": 0, "aggs": {"c": {"composite": composite, "aggs": {"s": {"sum": {"field": "size"}}}}}}),
        );
        let buckets = answer["c"]["buckets"].as_array().unwrap().clone();
        if buckets.is_empty() {
            assert!(answer["c"].get("after_key").is_none(), "{answer}");
            break;
        }
        pages += 1;
        assert!(buckets.len() <= 7);
        for bucket in &buckets {
            let tag = bucket["key"]["tag"].as_str().map(str::to_owned);
            let slot = bucket["key"]["slot"].as_f64().unwrap() as i64;
            got.push(((tag, slot), bucket["doc_count"].as_u64().unwrap()));
        }
        assert_eq!(answer["c"]["after_key"], buckets.last().unwrap()["key"]);
        after = Some(answer["c"]["after_key"].clone());
    }
    assert_eq!(got, want);
    assert_eq!(pages, want.len().div_ceil(7));
}

#[test]
fn fields_under_nested_objects_are_refused_by_name() {
    let (_dir, server, _events) = start();
    for body in [
        json!({"query": {"term": {"items.v": 3}}}),
        json!({"query": {"exists": {"field": "items.v"}}}),
        json!({"size": 0, "aggs": {"v": {"terms": {"field": "items.v"}}}}),
        json!({"sort": [{"items.v": "asc"}]}),
    ] {
        let (status, answer) = search(&server, &body);
        assert_eq!(status, 400, "{body}: {answer}");
        let reason = answer["error"]["reason"].as_str().unwrap_or_default();
        assert!(
            reason.contains("items.v") && reason.contains("nested object \"items\""),
            "{body}: {reason}"
        );
    }
    // Bare words do not search inside it, and the rest of the event is found.
    let (status, answer) = search(
        &server,
        &json!({"query": {"match": {"message": "event 5"}}, "size": 1}),
    );
    assert_eq!(status, 200, "{answer}");
    let (status, mapping) = server.request("GET", "/arr/_mapping", None);
    assert_eq!(status, 200, "{mapping}");
    assert_eq!(
        mapping["arr"]["mappings"]["properties"]["items"]["type"],
        "nested"
    );
    assert_eq!(
        mapping["arr"]["mappings"]["properties"]["size"]["scaling_factor"],
        10.0
    );
    assert_eq!(
        mapping["arr"]["mappings"]["properties"]["n"]["type"],
        "long"
    );
}
