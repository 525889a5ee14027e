//! Documents by id through the Elasticsearch API (quarry-server's documents.rs): index,
//! create, delete, `if_seq_no`, external versions, `_bulk` and `_mget`, checked against a
//! model of Elasticsearch's rules after every step, through a crash (SIGKILL: the WAL is
//! replayed), a clean stop (every event flushed to block files) and a restart. Each check
//! compares every id's `GET`, `_mget`, the `_count`, a `terms` aggregation and a search with
//! the model, so a replaced or deleted document that a search, a count or an aggregation still
//! saw would fail it.

mod common;

use common::Server;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::Path;

/// A live document in the model.
#[derive(Debug, Clone)]
struct Doc {
    version: u64,
    seq: u64,
    n: u64,
    colour: &'static str,
}

/// Elasticsearch's rules for one index, as a map.
#[derive(Default)]
struct Model {
    live: BTreeMap<String, Doc>,
    /// The version of each deleted id (a later write continues from it).
    deleted: BTreeMap<String, u64>,
    last_seq: Option<u64>,
}

impl Model {
    fn version(&self, id: &str) -> Option<u64> {
        self.live
            .get(id)
            .map(|doc| doc.version)
            .or_else(|| self.deleted.get(id).copied())
    }
}

/// A small deterministic generator (xorshift), so a failure replays.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

const COLOURS: [&str; 3] = ["red", "green", "blue"];
const IDS: u64 = 12;

/// One random write, sent and checked against the model.
fn step(server: &Server, model: &mut Model, rng: &mut Rng, n: u64) {
    let id = format!("d{}", rng.below(IDS));
    let colour = COLOURS[rng.below(3) as usize];
    let body = json!({"n": n, "colour": colour}).to_string();
    let kind = rng.below(12);
    if kind >= 10 {
        return update(server, model, &id, colour, n, rng.below(2) == 0);
    }
    let (method, target, body, expected): (&str, String, Option<&str>, Result<u64, u16>) =
        match kind {
            0..=3 => {
                let version = model.version(&id).map_or(1, |v| v + 1);
                ("PUT", format!("/docs/_doc/{id}"), Some(&body), Ok(version))
            }
            4 => {
                let expected = match model.live.get(&id) {
                    Some(_) => Err(409),
                    None => Ok(model.version(&id).map_or(1, |v| v + 1)),
                };
                ("PUT", format!("/docs/_create/{id}"), Some(&body), expected)
            }
            5 | 6 => {
                let expected = match model.live.get(&id) {
                    Some(doc) => Ok(doc.version + 1),
                    None => Err(404),
                };
                ("DELETE", format!("/docs/_doc/{id}"), None, expected)
            }
            7 => {
                // Compare and swap, with the right sequence number or a stale one.
                let live = model.live.get(&id).cloned();
                let stale = rng.below(2) == 0;
                let seq = match (&live, stale) {
                    (Some(doc), false) => doc.seq,
                    (Some(doc), true) => doc.seq + 1_000,
                    (None, _) => 0,
                };
                let expected = match live {
                    Some(doc) if !stale => Ok(doc.version + 1),
                    _ => Err(409),
                };
                let target = format!("/docs/_doc/{id}?if_seq_no={seq}&if_primary_term=1");
                ("PUT", target, Some(&body), expected)
            }
            _ => {
                let current = model.version(&id);
                let given = current.unwrap_or(0) + rng.below(3);
                let gte = rng.below(2) == 0;
                let fine = current.is_none_or(|c| if gte { given >= c } else { given > c });
                let kind = if gte { "external_gte" } else { "external" };
                let target = format!("/docs/_doc/{id}?version={given}&version_type={kind}");
                let expected = if fine { Ok(given) } else { Err(409) };
                ("PUT", target, Some(&body), expected)
            }
        };
    let (status, answer) = server.request(method, &target, body);
    match expected {
        Err(code) => {
            assert_eq!(status, code, "{method} {target}: {answer}");
            if code == 409 {
                assert_eq!(answer["error"]["type"], "version_conflict_engine_exception");
            }
        }
        Ok(version) => {
            assert!(
                status == 200 || status == 201,
                "{method} {target}: {status} {answer}"
            );
            assert_eq!(answer["_version"], version, "{method} {target}: {answer}");
            let seq = answer["_seq_no"].as_u64().expect("a sequence number");
            assert!(
                model.last_seq.is_none_or(|last| seq > last),
                "sequence numbers grow: {seq} after {:?}",
                model.last_seq
            );
            model.last_seq = Some(seq);
            if method == "DELETE" {
                assert_eq!(answer["result"], "deleted");
                model.live.remove(&id);
                model.deleted.insert(id, version);
            } else {
                let existed = model.live.contains_key(&id);
                assert_eq!(
                    answer["result"],
                    if existed { "updated" } else { "created" },
                    "{answer}"
                );
                model.deleted.remove(&id);
                model.live.insert(
                    id,
                    Doc {
                        version,
                        seq,
                        n,
                        colour,
                    },
                );
            }
        }
    }
}

/// `_update` of the colour alone (`n` kept), with an upsert of the whole document or none,
/// checked against the model: a merge that changes nothing is a no-op (no new version or
/// sequence number), a missing document without an upsert a 404.
fn update(
    server: &Server,
    model: &mut Model,
    id: &str,
    colour: &'static str,
    n: u64,
    upsert: bool,
) {
    let mut body = json!({"doc": {"colour": colour}, "_source": ["colour"]});
    if upsert {
        body["upsert"] = json!({"n": n, "colour": colour});
    }
    let target = format!("/docs/_update/{id}");
    let (status, answer) = server.request("POST", &target, Some(&body.to_string()));
    let live = model.live.get(id).cloned();
    let Some(doc) = live else {
        if !upsert {
            assert_eq!(status, 404, "{target}: {answer}");
            assert_eq!(answer["error"]["type"], "document_missing_exception");
            return;
        }
        assert_eq!(status, 201, "{target}: {answer}");
        let version = model.version(id).map_or(1, |v| v + 1);
        assert_eq!(
            (&answer["result"], &answer["_version"]),
            (&json!("created"), &json!(version))
        );
        let seq = answer["_seq_no"].as_u64().expect("a sequence number");
        assert!(model.last_seq.is_none_or(|last| seq > last), "{answer}");
        model.last_seq = Some(seq);
        model.deleted.remove(id);
        model.live.insert(
            id.to_owned(),
            Doc {
                version,
                seq,
                n,
                colour,
            },
        );
        return;
    };
    assert_eq!(status, 200, "{target}: {answer}");
    assert_eq!(
        answer["get"]["_source"],
        json!({"colour": colour}),
        "{answer}"
    );
    if doc.colour == colour {
        assert_eq!(answer["result"], "noop", "{answer}");
        assert_eq!(
            (&answer["_version"], &answer["_seq_no"]),
            (&json!(doc.version), &json!(doc.seq))
        );
        return;
    }
    assert_eq!(answer["result"], "updated", "{answer}");
    assert_eq!(answer["_version"], doc.version + 1, "{answer}");
    let seq = answer["_seq_no"].as_u64().expect("a sequence number");
    assert!(model.last_seq.is_none_or(|last| seq > last), "{answer}");
    model.last_seq = Some(seq);
    model.live.insert(
        id.to_owned(),
        Doc {
            version: doc.version + 1,
            seq,
            colour,
            ..doc
        },
    );
}

/// Every id read back, counted, aggregated and searched as the model says.
fn check(server: &Server, model: &Model, when: &str) {
    for i in 0..IDS {
        let id = format!("d{i}");
        let (status, answer) = server.get(&format!("/docs/_doc/{id}"));
        match model.live.get(&id) {
            Some(doc) => {
                assert_eq!(status, 200, "{when}: {id}: {answer}");
                assert_eq!(answer["_version"], doc.version, "{when}: {answer}");
                assert_eq!(answer["_seq_no"], doc.seq, "{when}: {answer}");
                assert_eq!(answer["_source"]["n"], doc.n, "{when}: {answer}");
            }
            None => assert_eq!(
                (status, &answer["found"]),
                (404, &json!(false)),
                "{when}: {id} is not live: {answer}"
            ),
        }
    }
    let ids: Vec<String> = (0..IDS).map(|i| format!("d{i}")).collect();
    let (status, answer) = server.request(
        "POST",
        "/docs/_mget",
        Some(&json!({ "ids": ids }).to_string()),
    );
    assert_eq!(status, 200, "{answer}");
    for (i, doc) in answer["docs"].as_array().unwrap().iter().enumerate() {
        let live = model.live.get(&format!("d{i}"));
        assert_eq!(doc["found"], live.is_some(), "{when}: {doc}");
        if let Some(live) = live {
            assert_eq!(doc["_version"], live.version, "{when}: {doc}");
        }
    }
    let (_, answer) = server.get("/docs/_count");
    assert_eq!(answer["count"], model.live.len(), "{when}: {answer}");
    let (_, answer) = server.request(
        "POST",
        "/docs/_search",
        Some(
            &json!({
                "size": 100,
                "version": true,
                "seq_no_primary_term": true,
                "aggs": {"colours": {"terms": {"field": "colour.keyword"}}},
            })
            .to_string(),
        ),
    );
    let mut by_colour: BTreeMap<&str, u64> = BTreeMap::new();
    for doc in model.live.values() {
        *by_colour.entry(doc.colour).or_default() += 1;
    }
    let buckets: BTreeMap<&str, u64> = answer["aggregations"]["colours"]["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| (b["key"].as_str().unwrap(), b["doc_count"].as_u64().unwrap()))
        .collect();
    assert_eq!(buckets, by_colour, "{when}: {answer}");
    let hits = answer["hits"]["hits"].as_array().unwrap();
    assert_eq!(hits.len(), model.live.len(), "{when}: {answer}");
    for hit in hits {
        let doc = &model.live[hit["_id"].as_str().unwrap()];
        assert_eq!(hit["_version"], doc.version, "{when}: {hit}");
        assert_eq!(hit["_seq_no"], doc.seq, "{when}: {hit}");
        assert_eq!(hit["_source"]["n"], doc.n, "{when}: {hit}");
    }
    // A query on a value: an old version's value finds nothing.
    for (colour, count) in &by_colour {
        let (_, answer) = server.get(&format!("/docs/_count?q=colour:{colour}"));
        assert_eq!(answer["count"], *count, "{when}: {colour}");
    }
}

fn start(data: &Path) -> Server {
    Server::start_with(data, &["--flush-interval", "0.2"])
}

#[test]
fn documents_follow_elasticsearch_rules_through_crashes_flushes_and_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    let mut model = Model::default();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut n = 0;
    let mut run = |server: &Server, model: &mut Model, steps: usize, when: &str| {
        for _ in 0..steps {
            n += 1;
            step(server, model, &mut rng, n);
        }
        check(server, model, when);
    };
    let server = start(&data);
    run(&server, &mut model, 150, "first run");
    // Some writes land in blocks (flushed every 0.2 s), the rest are in the WAL.
    std::thread::sleep(std::time::Duration::from_millis(500));
    run(&server, &mut model, 100, "after a flush");
    drop(server); // SIGKILL
    let server = start(&data);
    check(&server, &model, "after a crash");
    run(&server, &mut model, 150, "after the crash");
    assert!(server.terminate(), "a clean stop");
    let server = start(&data);
    check(&server, &model, "after a restart");
    run(&server, &mut model, 100, "at the end");
}

#[test]
fn bulk_items_by_id_follow_one_another_in_request_order() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("d"));
    let body = [
        r#"{"index": {"_index": "b", "_id": "1"}}"#,
        r#"{"v": 1}"#,
        r#"{"index": {"_index": "b", "_id": "1"}}"#,
        r#"{"v": 2}"#,
        r#"{"create": {"_index": "b", "_id": "1"}}"#,
        r#"{"v": 3}"#,
        r#"{"delete": {"_index": "b", "_id": "1"}}"#,
        r#"{"delete": {"_index": "b", "_id": "1"}}"#,
        r#"{"index": {"_index": "b", "_id": "1", "op_type": "create"}}"#,
        r#"{"v": 4}"#,
        r#"{"index": {"_index": "b", "_id": ""}}"#,
        r#"{"v": 5}"#,
        r#"{"index": {"_index": "b", "_id": "2"}}"#,
        r#"{"v": 6, "_seq_no": 3}"#,
        r#"{"index": {"_index": "b", "_id": "3", "pipeline": "enrich"}}"#,
        r#"{"v": 7}"#,
    ]
    .join("\n")
        + "\n";
    let (status, answer) = server.request("POST", "/_bulk", Some(&body));
    assert_eq!(status, 200, "{answer}");
    let items: Vec<(String, Value, Value)> = answer["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| {
            let (action, item) = item.as_object().unwrap().iter().next().unwrap();
            // A delete of a missing document: its version is not checked.
            let version = match item["status"].as_u64() {
                Some(200 | 201) => item["_version"].clone(),
                _ => Value::Null,
            };
            (action.clone(), item["status"].clone(), version)
        })
        .collect();
    let expected = [
        ("index", json!(201), json!(1)),
        ("index", json!(200), json!(2)),
        ("create", json!(409), Value::Null),
        ("delete", json!(200), json!(3)),
        ("delete", json!(404), Value::Null),
        ("create", json!(201), json!(4)),
        ("index", json!(400), Value::Null),
        ("index", json!(400), Value::Null),
        // Quarry has no ingest pipelines: a named one does not exist.
        ("index", json!(400), Value::Null),
    ];
    let expected: Vec<(String, Value, Value)> = expected
        .into_iter()
        .map(|(a, s, v)| (a.to_owned(), s, v))
        .collect();
    assert_eq!(items, expected, "{answer}");
    let (_, answer) = server.get("/b/_doc/1");
    assert_eq!(answer["_source"]["v"], 4, "{answer}");
    assert_eq!(answer["_version"], 4, "{answer}");
    let (_, answer) = server.get("/b/_count");
    assert_eq!(answer["count"], 1, "{answer}");
}

/// A sliced scroll: the slices of one `max` hold every hit exactly once, whatever size the
/// pages are; `max` above `index.max_slices_per_scroll` is a 400 until `PUT _settings`
/// raises it.
#[test]
fn sliced_scrolls_partition_the_hits() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("d"));
    let mut body = String::new();
    for i in 0..300 {
        // Some events share a time: a slice holds all of a time's events or none.
        let time = 1_700_000_000_000u64 + (i % 250) * 1_000;
        body.push_str(&format!(
            "{{\"index\": {{\"_index\": \"s\", \"_id\": \"{i}\"}}}}\n"
        ));
        body.push_str(&format!("{{\"@timestamp\": {time}, \"i\": {i}}}\n"));
    }
    let (status, answer) = server.request("POST", "/_bulk", Some(&body));
    assert_eq!(
        (status, &answer["errors"]),
        (200, &json!(false)),
        "{answer}"
    );
    for max in [2u64, 3, 7] {
        let mut seen = std::collections::BTreeSet::new();
        for id in 0..max {
            let query = json!({"slice": {"id": id, "max": max}, "size": 17}).to_string();
            let (status, mut page) = server.request("POST", "/s/_search?scroll=1m", Some(&query));
            assert_eq!(status, 200, "{page}");
            let mut in_slice = 0;
            loop {
                let hits = page["hits"]["hits"].as_array().unwrap().clone();
                if hits.is_empty() {
                    break;
                }
                for hit in hits {
                    let doc = hit["_id"].as_str().unwrap().to_owned();
                    assert!(seen.insert(doc.clone()), "{doc} in two slices of {max}");
                    in_slice += 1;
                }
                let next = json!({"scroll": "1m", "scroll_id": page["_scroll_id"]});
                page = server
                    .request("POST", "/_search/scroll", Some(&next.to_string()))
                    .1;
            }
            assert!(in_slice > 0, "slice {id} of {max} is empty");
            assert_eq!(page["hits"]["total"]["value"], in_slice, "{page}");
        }
        assert_eq!(seen.len(), 300, "the slices of {max} hold every hit");
    }
    let query = json!({"slice": {"id": 0, "max": 1025}}).to_string();
    let (status, answer) = server.request("POST", "/s/_search?scroll=1m", Some(&query));
    assert_eq!(status, 400, "{answer}");
    let settings = json!({"index.max_slices_per_scroll": 1025}).to_string();
    let (status, answer) = server.request("PUT", "/s/_settings", Some(&settings));
    assert_eq!(status, 200, "{answer}");
    let (_, answer) = server.get("/s/_settings?flat_settings=true");
    assert_eq!(
        answer["s"]["settings"]["index.max_slices_per_scroll"], "1025",
        "{answer}"
    );
    let (status, answer) = server.request("POST", "/s/_search?scroll=1m", Some(&query));
    assert_eq!(status, 200, "{answer}");
    // Without a scroll, a slice means nothing: refused.
    let (status, _) = server.request("POST", "/s/_search", Some(&query));
    assert_eq!(status, 400);
}

/// An id, its document, and the key and day of February 2024 its time came from, if any.
type TimedDoc = (String, Value, Option<(&'static str, u32)>);

/// A document whose time came from `timestamp` or `time` keeps that key as a field: a range
/// on it finds the documents a model of the sent values says, before and after a crash (the
/// WAL replayed), and its `_source` is as sent (`_time` too).
#[test]
fn time_keys_stay_searchable_under_their_names() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    let docs: Vec<TimedDoc> = (0..40u32)
        .map(|i| {
            let day = 1 + i % 28;
            let (doc, key) = match i % 7 {
                0 => (json!({"timestamp": format!("2024-02-{day:02}T10:00:00Z"), "i": i}), Some(("timestamp", day))),
                // The same instant in other text: kept as sent, a value longer than an exact
                // term holds.
                4 => (json!({"timestamp": format!("2024-02-{day:02}T11:00:00+01:00"), "i": i}), Some(("timestamp", day))),
                // `@timestamp` in other text than Quarry writes: kept as sent too, under a
                // name that tokenizes as `timestamp` does, yet in no range on `timestamp`.
                5 => (json!({"@timestamp": format!("2024-02-{day:02}T10:00:00.000Z"), "i": i}), None),
                1 => (json!({"time": format!("2024-02-{day:02}"), "i": i}), Some(("time", day))),
                // Quarry's own time key, in the text Quarry writes times in (kept as the key's
                // name alone, live.rs): its `_source` is as sent too.
                3 => (json!({"_time": format!("2024-02-{day:02}T10:00:00.250Z"), "i": i}), None),
                // `@timestamp` is the time; `timestamp` here is an ordinary string.
                2 => (
                    json!({"@timestamp": "2023-01-01T00:00:00Z", "timestamp": "not a time", "i": i}),
                    None,
                ),
                _ => (json!({"i": i}), None),
            };
            (format!("t{i}"), doc, key)
        })
        .collect();
    let mut body = String::new();
    for (id, doc, _) in &docs {
        body.push_str(&format!(
            "{{\"index\": {{\"_index\": \"tk\", \"_id\": \"{id}\"}}}}\n{doc}\n"
        ));
    }
    let check = |server: &Server, when: &str| {
        for (key, from, to) in [("timestamp", 3, 9), ("time", 10, 28), ("timestamp", 1, 28)] {
            let query = json!({"size": 100, "query": {"range": {key: {
                "gte": format!("2024-02-{from:02}"), "lte": format!("2024-02-{to:02}")}}}});
            let (status, answer) = server.request("POST", "/tk/_search", Some(&query.to_string()));
            assert_eq!(status, 200, "{answer}");
            let mut got: Vec<&str> = answer["hits"]["hits"]
                .as_array()
                .unwrap()
                .iter()
                .map(|hit| hit["_id"].as_str().unwrap())
                .collect();
            got.sort_unstable();
            // An ordinary `timestamp` that is no time is in no range of dates.
            let mut want: Vec<&str> = docs
                .iter()
                .filter(|(_, _, sent)| {
                    sent.is_some_and(|(name, day)| name == key && (from..=to).contains(&day))
                })
                .map(|(id, _, _)| id.as_str())
                .collect();
            want.sort_unstable();
            assert_eq!(got, want, "{when}: {key} {from}..{to}");
        }
        for (id, doc, _) in &docs {
            let (_, answer) = server.get(&format!("/tk/_doc/{id}"));
            assert_eq!(answer["_source"], *doc, "{when}: {id}");
        }
        // The native API shows what was sent, not the field that keeps how the time was
        // given (which the `_source` above is made from).
        let (status, native) = server.get("/api/v1/tk/search?query=*&limit=100");
        assert_eq!(status, 200, "{native}");
        let hits = native["hits"].as_array().unwrap();
        assert_eq!(hits.len(), docs.len(), "{when}");
        for hit in hits {
            let event = hit["event"].as_object().unwrap();
            assert!(
                event.keys().all(|k| !k.starts_with("_time")),
                "{when}: {hit}"
            );
            assert!(event["i"].is_u64(), "{when}: {hit}");
        }
    };
    let server = start(&data);
    let (status, answer) = server.request("POST", "/_bulk", Some(&body));
    assert_eq!(
        (status, &answer["errors"]),
        (200, &json!(false)),
        "{answer}"
    );
    check(&server, "as written");
    drop(server); // SIGKILL: the WAL is replayed
    let server = start(&data);
    check(&server, "after a crash");
    assert!(server.terminate(), "a clean stop");
    let server = start(&data);
    check(&server, "after a restart");
}

/// A filtered alias: a search or count through it sees the documents its filter matches,
/// through two such aliases those either matches, and the index itself (or an alias without
/// a filter) everything, as a model of the documents says; `GET _alias` shows the filter and
/// the routing.
#[test]
fn filtered_aliases_search_what_their_filters_match() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("d"));
    let create = json!({
        "mappings": {"properties": {"colour": {"type": "keyword"}, "n": {"type": "long"}}},
        "aliases": {
            "reds": {"filter": {"term": {"colour": "red"}}, "routing": "r"},
            "big": {"filter": {"range": {"n": {"gte": 30}}}},
            "everything": {}
        }
    });
    let (status, answer) = server.request("PUT", "/paint", Some(&create.to_string()));
    assert_eq!(status, 200, "{answer}");
    let mut body = String::new();
    let docs: Vec<(u64, &str)> = (0..50)
        .map(|n| (n, COLOURS[(n * 7 % 3) as usize]))
        .collect();
    for (n, colour) in &docs {
        body.push_str(&format!(
            "{{\"index\": {{\"_index\": \"paint\"}}}}\n{{\"n\": {n}, \"colour\": \"{colour}\"}}\n"
        ));
    }
    let (status, answer) = server.request("POST", "/_bulk", Some(&body));
    assert_eq!(
        (status, &answer["errors"]),
        (200, &json!(false)),
        "{answer}"
    );
    let red = |d: &&(u64, &str)| d.1 == "red";
    let big = |d: &&(u64, &str)| d.0 >= 30;
    for (target, want) in [
        ("reds", docs.iter().filter(red).count()),
        ("big", docs.iter().filter(big).count()),
        ("reds,big", docs.iter().filter(|d| red(d) || big(d)).count()),
        ("reds,paint", docs.len()),
        ("everything", docs.len()),
        ("reds,everything", docs.len()),
    ] {
        let (_, answer) = server.get(&format!("/{target}/_count"));
        assert_eq!(answer["count"], want, "_count of {target}: {answer}");
        let query = json!({"size": 100, "query": {"range": {"n": {"lt": 40}}}});
        let (_, answer) = server.request(
            "POST",
            &format!("/{target}/_search"),
            Some(&query.to_string()),
        );
        let below = |d: &&(u64, &str)| d.0 < 40;
        let want = match target {
            "reds" => docs.iter().filter(red).filter(below).count(),
            "big" => docs.iter().filter(big).filter(below).count(),
            "reds,big" => docs
                .iter()
                .filter(|d| red(d) || big(d))
                .filter(below)
                .count(),
            _ => docs.iter().filter(below).count(),
        };
        assert_eq!(
            answer["hits"]["total"]["value"], want,
            "search of {target}: {answer}"
        );
    }
    let (_, answer) = server.get("/paint/_alias/reds");
    let shown = &answer["paint"]["aliases"]["reds"];
    assert_eq!(
        shown["filter"],
        json!({"term": {"colour": "red"}}),
        "{answer}"
    );
    assert_eq!(
        (&shown["index_routing"], &shown["search_routing"]),
        (&json!("r"), &json!("r"))
    );
    // A filter that is no query is refused when the alias is made.
    let bad =
        json!({"actions": [{"add": {"index": "paint", "alias": "bad", "filter": {"nope": {}}}}]});
    let (status, _) = server.request("POST", "/_aliases", Some(&bad.to_string()));
    assert_eq!(status, 400);
}

/// Multi-fields of any name answer as the views of their parents they are: a keyword
/// multi-field the whole values (term, terms aggregation, sort, `fields`), a text one the
/// parent's words (match, highlight), checked against the documents themselves.
#[test]
fn multi_fields_answer_from_their_parents() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("d"));
    let create = json!({"mappings": {"properties": {"title": {
        "type": "text",
        "fields": {"raw": {"type": "keyword"}, "words": {"type": "text", "index_options": "offsets"}}
    }}}});
    let (status, answer) = server.request("PUT", "/books", Some(&create.to_string()));
    assert_eq!(status, 200, "{answer}");
    let titles: Vec<String> = (0..40)
        .map(|n| format!("{} {} tale", COLOURS[n % 3], ["fox", "owl"][n % 2]))
        .collect();
    let mut body = String::new();
    for title in &titles {
        body.push_str(&format!(
            "{{\"index\": {{\"_index\": \"books\"}}}}\n{}\n",
            json!({ "title": title })
        ));
    }
    let (status, answer) = server.request("POST", "/_bulk", Some(&body));
    assert_eq!(
        (status, &answer["errors"]),
        (200, &json!(false)),
        "{answer}"
    );
    let search = |query: Value| {
        let (status, answer) = server.request("POST", "/books/_search", Some(&query.to_string()));
        assert_eq!(status, 200, "{query}: {answer}");
        answer
    };
    let count = |query: Value| search(json!({"query": query}))["hits"]["total"]["value"].clone();
    let with = |word: &str| {
        titles
            .iter()
            .filter(|t| t.split(' ').any(|w| w == word))
            .count()
    };
    let whole = |value: &str| titles.iter().filter(|t| *t == value).count();
    assert_eq!(
        count(json!({"term": {"title.raw": "red fox tale"}})),
        whole("red fox tale")
    );
    assert_eq!(count(json!({"term": {"title.raw": "red"}})), 0);
    assert_eq!(count(json!({"match": {"title.words": "owl"}})), with("owl"));
    assert_eq!(
        count(json!({"multi_match": {"query": "green", "fields": ["title*"]}})),
        with("green")
    );
    assert_eq!(
        count(json!({"exists": {"field": "title.raw"}})),
        titles.len()
    );

    // The terms of the keyword view are the whole titles, counted.
    let answer =
        search(json!({"size": 0, "aggs": {"t": {"terms": {"field": "title.raw", "size": 10}}}}));
    let mut want: BTreeMap<&str, u64> = BTreeMap::new();
    for title in &titles {
        *want.entry(title).or_default() += 1;
    }
    let got: BTreeMap<&str, u64> = answer["aggregations"]["t"]["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| (b["key"].as_str().unwrap(), b["doc_count"].as_u64().unwrap()))
        .collect();
    assert_eq!(got, want, "{answer}");

    // Sorted by the keyword view: the titles in order.
    let answer =
        search(json!({"size": 100, "sort": [{"title.raw": "asc"}], "fields": ["title.raw"]}));
    let hits = answer["hits"]["hits"].as_array().unwrap();
    let sorted: Vec<&str> = hits
        .iter()
        .map(|h| h["sort"][0].as_str().unwrap())
        .collect();
    let mut want: Vec<&str> = titles.iter().map(String::as_str).collect();
    want.sort();
    assert_eq!(sorted, want);
    for hit in hits {
        assert_eq!(
            hit["fields"]["title.raw"][0], hit["_source"]["title"],
            "{hit}"
        );
    }

    // A highlight of every field shows the text view too.
    let answer = search(json!({
        "query": {"match": {"title.words": "owl"}},
        "highlight": {"fields": {"*": {}}}
    }));
    let hit = &answer["hits"]["hits"][0];
    let shown = hit["highlight"]["title.words"][0]
        .as_str()
        .unwrap_or_default();
    assert!(shown.contains("<em>owl</em>"), "{hit}");

    // The mapping shows them; one needing an index of its own is refused by name.
    let (_, answer) = server.get("/books/_mapping");
    assert_eq!(
        answer["books"]["mappings"]["properties"]["title"]["fields"]["raw"],
        json!({"type": "keyword"})
    );
    let other =
        json!({"properties": {"n": {"type": "long", "fields": {"k": {"type": "keyword"}}}}});
    let (status, answer) = server.request("PUT", "/books/_mapping", Some(&other.to_string()));
    assert_eq!(status, 400, "{answer}");
    assert!(answer.to_string().contains("fields.k"), "{answer}");
}

/// Edits from `a` to `b` counting a swap of neighbours as one (the test's own model).
fn edits(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut d = vec![vec![0; b.len() + 1]; a.len() + 1];
    for i in 0..=a.len() {
        for j in 0..=b.len() {
            d[i][j] = if i == 0 || j == 0 {
                i + j
            } else {
                let mut best = (d[i - 1][j] + 1)
                    .min(d[i][j - 1] + 1)
                    .min(d[i - 1][j - 1] + usize::from(a[i - 1] != b[j - 1]));
                if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                    best = best.min(d[i - 2][j - 2] + 1);
                }
                best
            };
        }
    }
    d[a.len()][b.len()]
}

/// The term, phrase and completion suggesters, against brute force over the documents.
#[test]
fn suggesters_answer_from_the_fields_terms() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("d"));
    let create = json!({"mappings": {"properties": {
        "name": {"type": "keyword"}, "body": {"type": "text"}, "title": {"type": "completion"}
    }}});
    let (status, answer) = server.request("PUT", "/people", Some(&create.to_string()));
    assert_eq!(status, 200, "{answer}");
    let names = [
        "Ruth",
        "Ruby",
        "Rutherford",
        "Natalie",
        "Nathalie",
        "Stephanie",
        "Rut",
    ];
    let words = [
        "quick", "brown", "fox", "quack", "brawn", "box", "fix", "quiet",
    ];
    let titles = [
        "Doctor",
        "dog walker",
        "Docent",
        "commandant",
        "dolphin",
        "DOT",
        "dove",
    ];
    let mut docs = Vec::new();
    for n in 0..60usize {
        let body = (0..4)
            .map(|k| words[(n * 3 + k * 5) % words.len()])
            .collect::<Vec<_>>();
        docs.push((
            names[n % names.len()],
            body.join(" "),
            titles[n % titles.len()],
        ));
    }
    let mut bulk = String::new();
    for (name, body, title) in &docs {
        let doc = json!({"name": name, "body": body, "title": title});
        bulk.push_str(&format!(
            "{{\"index\": {{\"_index\": \"people\"}}}}\n{doc}\n"
        ));
    }
    let (status, answer) = server.request("POST", "/_bulk", Some(&bulk));
    assert_eq!(
        (status, &answer["errors"]),
        (200, &json!(false)),
        "{answer}"
    );
    let suggest = |body: Value| {
        let query = json!({"size": 0, "suggest": body});
        let (status, answer) = server.request(
            "POST",
            "/people/_search?typed_keys=true",
            Some(&query.to_string()),
        );
        assert_eq!(status, 200, "{query}: {answer}");
        answer["suggest"].clone()
    };

    // Term: every held value within two edits sharing the first char, as similar as half.
    for (text, field, terms) in [
        (
            "Nataly",
            "name",
            names.iter().map(|n| n.to_string()).collect::<Vec<_>>(),
        ),
        (
            "brwn",
            "body",
            words.iter().map(|w| w.to_string()).collect(),
        ),
        (
            "quikc",
            "body",
            words.iter().map(|w| w.to_string()).collect(),
        ),
    ] {
        let answer = suggest(json!({"s": {"text": text, "term": {"field": field, "size": 10}}}));
        let entry = &answer["term#s"][0];
        // A keyword's text is one word as written; a text field's words are lowercased.
        let word = match field {
            "name" => text.to_owned(),
            _ => text.to_lowercase(),
        };
        assert_eq!(entry["text"], word.as_str(), "{answer}");
        let word = word.as_str();
        let mut want: Vec<(String, f64)> = terms
            .iter()
            .filter(|t| t.as_str() != word && t.chars().next() == word.chars().next())
            .filter(|t| edits(word, t) <= 2)
            .map(|t| {
                let shorter = word.chars().count().min(t.chars().count()) as f64;
                (t.clone(), 1.0 - edits(word, t) as f64 / shorter)
            })
            .filter(|(_, score)| *score >= 0.5)
            .collect();
        want.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        let got: Vec<(String, f64)> = entry["options"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| {
                (
                    o["text"].as_str().unwrap().to_owned(),
                    o["score"].as_f64().unwrap(),
                )
            })
            .collect();
        // Equal scores are ordered by doc count first: compare as sets per score.
        let key = |v: &Vec<(String, f64)>| {
            let mut v: Vec<(String, u64)> = v
                .iter()
                .map(|(t, s)| (t.clone(), (s * 1e6) as u64))
                .collect();
            v.sort();
            v
        };
        assert_eq!(key(&got), key(&want), "{text} on {field}: {answer}");
        assert!(!want.is_empty(), "{text}: the model finds candidates");
    }

    // Phrase: one misspelt word corrected.
    let answer = suggest(
        json!({"p": {"text": "quick brwn fox", "phrase": {"field": "body",
        "highlight": {"pre_tag": "<b>", "post_tag": "</b>"}}}}),
    );
    let best = &answer["phrase#p"][0]["options"][0];
    assert_eq!(best["text"], "quick brown fox", "{answer}");
    assert_eq!(best["highlighted"], "quick <b>brown</b> fox", "{answer}");

    // Completion: inputs starting with the prefix, case aside, one per document, in order.
    for (prefix, size) in [("do", 5), ("DO", 3), ("com", 5), ("x", 5)] {
        let answer = suggest(
            json!({"c": {"prefix": prefix, "completion": {"field": "title", "size": size}}}),
        );
        let options = answer["completion#c"][0]["options"]
            .as_array()
            .unwrap()
            .clone();
        let mut want: Vec<&str> = docs
            .iter()
            .map(|d| d.2)
            .filter(|t| t.to_lowercase().starts_with(&prefix.to_lowercase()))
            .collect();
        want.sort_by_key(|t| (t.to_lowercase(), t.to_string()));
        want.truncate(size);
        let got: Vec<&str> = options
            .iter()
            .map(|o| o["text"].as_str().unwrap())
            .collect();
        assert_eq!(got, want, "{prefix}: {answer}");
        for option in &options {
            assert_eq!(option["_source"]["title"], option["text"], "{option}");
        }
    }

    // What Quarry cannot answer is refused by name.
    let (status, answer) = server.request(
        "POST",
        "/people/_search",
        Some(&json!({"suggest": {"c": {"prefix": "d", "completion": {"field": "title", "fuzzy": {}}}}}).to_string()),
    );
    assert_eq!(status, 400, "{answer}");
    assert!(
        answer.to_string().contains("suggest.c.completion.fuzzy"),
        "{answer}"
    );
    let weighted =
        "{\"index\": {\"_index\": \"people\"}}\n{\"title\": {\"input\": \"dog\", \"weight\": 3}}\n";
    let (_, answer) = server.request("POST", "/_bulk", Some(weighted));
    assert_eq!(answer["errors"], json!(true), "{answer}");
    assert!(answer.to_string().contains("completion"), "{answer}");
}
