//! Every option the Elasticsearch endpoints accept is honoured or a documented no-op (issue
//! 27, item 0): the tests walk the parsers' own tables and, for each option, ask the same
//! request with it and without it (or with another value). An honoured option must change
//! the answer; a no-op must not, and says why here; an option read only to be refused must
//! be a 400 naming it. An option added to a table without a case here fails the test.
//!
//! - aggs.rs: `quarry_server::AGG_OPTIONS`, `PIPELINE_OPTIONS`;
//! - queries.rs: `quarry_query::dsl::QUERY_OPTIONS`, and every query's `boost`;
//! - search.rs: `_search`'s body keys and URL parameters, sort keys, `highlight`, suggesters,
//!   `_count`'s parameters, `_msearch`'s parameters and header keys;
//! - apis.rs: every other API's URL parameters (`quarry_server::API_PARAMS`), bulk action
//!   keys, `_update`, `_mget` and `_count` bodies;
//! - mappings.rs: mapped fields' and multi-fields' options by type, the mapping's own keys,
//!   the create-index body and every index setting.

mod aggs;
mod apis;
#[path = "../common/mod.rs"]
mod common;
mod mappings;
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

/// What is wrong, if anything, with an option's answers (status and what is compared of the
/// answer) with it and without it, given what it must do; `option` is the name a refusal
/// must hold. `Same` holds only for answers that are not errors, so two refusals never pass
/// for a no-op.
fn verdict(
    expect: &Expect,
    option: &str,
    (status_with, with): (u16, &Value),
    (status_without, without): (u16, &Value),
) -> Option<String> {
    let same = (status_with, with) == (status_without, without);
    match expect {
        Refused if status_with == 400 && with.to_string().contains(option) => None,
        Refused => Some(format!("expected a 400 naming {option}, got {status_with} {with}")),
        Differs if !same => (status_with >= 400 && status_without >= 400)
            .then(|| format!("both refused: {with} / {without}")),
        Differs => Some(format!("the same answer with and without: {status_with} {with}")),
        Same(_) if status_with < 400 && same => None,
        Same(reason) => Some(format!(
            "documented as a no-op ({reason}) but: {status_with} {with} / {status_without} {without}"
        )),
    }
}

/// A case's name and, unless it has none, its sides with and without the option and what
/// the option must do.
type Named<R> = (String, Option<(R, R, Expect)>);

/// Runs every case, each side through `run` (its status and what is compared): the names
/// of the options with no case, and what is wrong with the others. A case's name ends with
/// its option.
fn walk<R: std::fmt::Debug>(
    cases: Vec<Named<R>>,
    run: impl Fn(&R) -> (u16, Value),
) -> (Vec<String>, Vec<String>) {
    let mut missing = Vec::new();
    let mut wrong = Vec::new();
    for (name, case) in cases {
        let Some((with, without, expect)) = case else {
            missing.push(name);
            continue;
        };
        let option = name.rsplit([' ', ':']).next().unwrap();
        let (status_with, answer_with) = run(&with);
        let (status_without, answer_without) = run(&without);
        let verdict = verdict(
            &expect,
            option,
            (status_with, &answer_with),
            (status_without, &answer_without),
        );
        if let Some(verdict) = verdict {
            wrong.push(format!(
                "{name}: {verdict}\n    with {with:?}\n    without {without:?}"
            ));
        }
    }
    (missing, wrong)
}

/// The answer, less what differs between two runs: times and the ids of scrolls and points
/// in time.
fn normalized(answer: Value) -> Value {
    match answer {
        Value::Object(object) => Value::Object(
            object
                .into_iter()
                .filter(|(key, _)| key != "took")
                .map(|(key, value)| match key.as_str() {
                    "_scroll_id" | "pit_id" | "id" if value.is_string() => (key, json!("*")),
                    _ => (key, normalized(value)),
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(normalized).collect()),
        other => other,
    }
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
