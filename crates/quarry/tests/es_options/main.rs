//! Every option the Elasticsearch endpoints accept is honoured or a documented no-op (issue
//! 27, item 0): the tests walk the parsers' own tables and, for each option, ask the same
//! request with it and without it (or with another value). An honoured option must change
//! the answer; a no-op must not, and says why here; an option read only to be refused must
//! be a 400 naming it. An option added to a table without a case here fails the test.
//!
//! - aggs.rs: `quarry_server::AGG_OPTIONS`, `PIPELINE_OPTIONS`;
//! - queries.rs: `quarry_query::dsl::QUERY_OPTIONS`, and every query's `boost`;
//! - search.rs: `_search`'s body keys and URL parameters, sort keys, `highlight`, suggesters.

mod aggs;
#[path = "../common/mod.rs"]
mod common;
mod queries;
mod search;

use common::Server;
use serde_json::{json, Value};

/// 2026-01-05T00:00:00Z (a Monday), in seconds.
const T0: i64 = 1_767_571_200;
const DAY: i64 = 86_400;

fn events() -> Vec<Value> {
    (0..40i64)
        .map(|i| {
            // Three events every other day: daily buckets with gaps between them.
            let time = T0 + (i / 3) * 2 * DAY + (i % 3) * 5 * 3600;
            let k2 = ["x", "y", "z"][(i % 3) as usize];
            let t = ["alpha beta", "beta gamma", "gamma delta"][(i % 3) as usize];
            let mut event = json!({
                "@timestamp": time * 1000,
                "k2": k2,
                "f": 1.0 + ((i * 13) % 40) as f64 * 0.5,
                "g": -1.0 - ((i * 7) % 40) as f64,
                "d": (T0 + (40 - i) * DAY) * 1000,
                "t": t,
                "one": 1,
                "two": 2,
            });
            // Uneven counts, one value held once (rare), some events without one.
            if i == 5 {
                event["k"] = "rare".into();
            } else if i % 9 != 0 {
                event["k"] = ["a", "b", "a", "c", "a", "d", "b", "e"][(i % 8) as usize].into();
            }
            if i % 7 != 0 {
                event["n"] = (i * 3).into();
            }
            event
        })
        .collect()
}

/// A server with index `index` holding `events()` (ids `e0`..), mapped.
fn indexed(index: &str) -> (tempfile::TempDir, Server) {
    let mapping = json!({
        "k": {"type": "keyword"}, "k2": {"type": "keyword"}, "n": {"type": "long"},
        "f": {"type": "double"}, "g": {"type": "double"}, "d": {"type": "date"},
        "t": {"type": "text"}, "one": {"type": "long"}, "two": {"type": "long"}
    });
    loaded(index, mapping, events(), "e")
}

/// A new server with index `index` mapped as `properties`, holding `events` (ids `{prefix}0`..).
fn loaded(
    index: &str,
    properties: Value,
    events: Vec<Value>,
    prefix: &str,
) -> (tempfile::TempDir, Server) {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("d"));
    let mapping = json!({"mappings": {"properties": properties}});
    let (status, answer) = server.request("PUT", &format!("/{index}"), Some(&mapping.to_string()));
    assert_eq!(status, 200, "{answer}");
    let mut bulk = String::new();
    for (i, event) in events.into_iter().enumerate() {
        bulk.push_str(&format!(
            "{{\"index\": {{\"_index\": \"{index}\", \"_id\": \"{prefix}{i}\"}}}}\n{event}\n"
        ));
    }
    let (status, answer) = server.request("POST", "/_bulk", Some(&bulk));
    assert_eq!(
        (status, &answer["errors"]),
        (200, &json!(false)),
        "{answer}"
    );
    (dir, server)
}

/// Fails with every option with no case (`missing`) and every wrong one, of `checked`.
fn report(missing: &[String], wrong: &[String], checked: usize) {
    assert!(missing.is_empty(), "options with no case here: {missing:?}");
    assert!(
        wrong.is_empty(),
        "{} of {checked} options:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

#[derive(Debug)]
enum Expect {
    /// The option changes the answer.
    Differs,
    /// The option cannot change the answer here, for this reason.
    Same(&'static str),
    /// The option is read only to be refused with a 400 naming it.
    Refused,
}
use Expect::*;
