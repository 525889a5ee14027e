//! Every option an aggregation accepts is honoured or a documented no-op (issue 27, item 0):
//! the test walks the parser's own tables (`quarry_server::AGG_OPTIONS`, `PIPELINE_OPTIONS`)
//! and, for each option, asks the same aggregation with it and without it (or with another
//! value). An honoured option must change the answer; a no-op must not, and says why here;
//! an option read only to be refused must be a 400 naming it. An option added to a table
//! without a case here fails the test.

mod common;

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
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("d"));
    let mapping = json!({"mappings": {"properties": {
        "k": {"type": "keyword"}, "k2": {"type": "keyword"}, "n": {"type": "long"},
        "f": {"type": "double"}, "g": {"type": "double"}, "d": {"type": "date"},
        "t": {"type": "text"}, "one": {"type": "long"}, "two": {"type": "long"}
    }}});
    let (status, answer) = server.request("PUT", &format!("/{index}"), Some(&mapping.to_string()));
    assert_eq!(status, 200, "{answer}");
    let mut bulk = String::new();
    for (i, event) in events().into_iter().enumerate() {
        bulk.push_str(&format!(
            "{{\"index\": {{\"_index\": \"{index}\", \"_id\": \"e{i}\"}}}}\n{event}\n"
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

/// The aggregation with the option, the one without it (or with another value), and what
/// the option must do.
fn agg_case(kind: &str, key: &str) -> Option<(Value, Value, Expect)> {
    let pair = |base: Value, extra: Value| {
        let mut with = base.clone();
        for (k, v) in extra.as_object().unwrap() {
            with[k] = v.clone();
        }
        (json!({ kind: with }), json!({ kind: base }))
    };
    let same = |(with, without): (Value, Value), why| Some((with, without, Same(why)));
    let time = json!({"field": "@timestamp", "calendar_interval": "day"});
    let daily = json!({"field": "@timestamp", "fixed_interval": "1d"});
    let terms = json!({"field": "k"});
    // c and d are in 4 events, e and the events without k in 5, `rare` in one.
    let rare = json!({"field": "k", "max_doc_count": 5});
    let multi = json!({"terms": [{"field": "k"}, {"field": "k2"}]});
    let numbers = json!({"field": "n", "interval": 10});
    let ranges = json!({"field": "n", "ranges": [{"to": 30}, {"from": 30}]});
    let dates =
        json!({"field": "@timestamp", "ranges": [{"to": "2026-01-15"}, {"from": "2026-01-15"}]});
    let metric = json!({"field": "n"});
    let filters = json!({"filters": {"a": {"term": {"k": "a"}}, "x": {"term": {"k2": "x"}}}});
    let one_shard = "one index is one shard: counts are exact and every term is seen";
    let (with, without) = match (kind, key) {
        ("date_histogram", "field") => pair(time.clone(), json!({"field": "d"})),
        ("date_histogram", "fixed_interval") => (
            json!({kind: daily}),
            json!({kind: {"field": "@timestamp", "fixed_interval": "12h"}}),
        ),
        ("date_histogram", "calendar_interval") => pair(time, json!({"calendar_interval": "week"})),
        ("date_histogram", "interval") => (
            json!({kind: {"field": "@timestamp", "interval": "1d"}}),
            json!({kind: {"field": "@timestamp", "interval": "2d"}}),
        ),
        ("date_histogram", "min_doc_count") => pair(time, json!({"min_doc_count": 1})),
        ("date_histogram", "extended_bounds") => pair(
            time,
            json!({"extended_bounds": {"min": "2026-01-01", "max": "2026-02-10"}}),
        ),
        ("date_histogram" | "histogram" | "date_range", "format") => match kind {
            "histogram" => pair(numbers, json!({"format": "0.0"})),
            "date_range" => pair(dates, json!({"format": "yyyy-MM-dd"})),
            _ => pair(time, json!({"format": "yyyy-MM-dd"})),
        },
        ("date_histogram", "time_zone") => pair(time, json!({"time_zone": "+05:00"})),
        ("date_histogram", "offset") => pair(time, json!({"offset": "+6h"})),
        (
            "date_histogram" | "histogram" | "range" | "date_range" | "percentiles" | "filters",
            "keyed",
        ) => {
            let base = match kind {
                "date_histogram" => time,
                "histogram" => numbers,
                "range" => ranges,
                "date_range" => dates,
                "filters" => filters,
                _ => metric,
            };
            // Keyed by default: percentiles and named filters; the others not.
            let value = !matches!(kind, "percentiles" | "filters");
            pair(base, json!({ "keyed": value }))
        }
        ("date_histogram" | "histogram", "order") => {
            let base = if kind == "histogram" { numbers } else { time };
            pair(base, json!({"order": {"_count": "asc"}}))
        }
        ("terms", "field") => pair(terms, json!({"field": "k2"})),
        ("rare_terms", "field") => pair(rare, json!({"field": "k2"})),
        ("terms" | "multi_terms", "size") => {
            let base = if kind == "terms" { terms } else { multi };
            pair(base, json!({"size": 2}))
        }
        ("terms" | "multi_terms", "order") => {
            let base = if kind == "terms" { terms } else { multi };
            pair(base, json!({"order": {"_key": "desc"}}))
        }
        ("terms" | "multi_terms", "min_doc_count") => {
            let base = if kind == "terms" { terms } else { multi };
            pair(base, json!({ "min_doc_count": 3 }))
        }
        // On one shard, a term under the shard's bound never reaches the answer.
        ("terms" | "multi_terms", "shard_min_doc_count") => {
            let base = if kind == "terms" { terms } else { multi };
            pair(base, json!({ "shard_min_doc_count": 3 }))
        }
        ("terms" | "rare_terms" | "cardinality" | "missing", "missing") => {
            let base = if kind == "rare_terms" {
                rare
            } else {
                json!({"field": "k"})
            };
            pair(base, json!({"missing": "none"}))
        }
        ("terms", "include") => pair(terms, json!({"include": "a|b"})),
        ("terms", "exclude") => pair(terms, json!({"exclude": "a"})),
        ("rare_terms", "include") => pair(rare, json!({"include": "rare"})),
        ("rare_terms", "exclude") => pair(rare, json!({"exclude": "rare"})),
        ("terms" | "rare_terms", "value_type") => {
            return same(pair(terms, json!({"value_type": "string"})), "the type of an unmapped field's or a script's values: a mapped field's own type wins, and scripts are refused");
        }
        ("terms" | "multi_terms", "shard_size") => {
            let base = if kind == "terms" { terms } else { multi };
            return same(pair(base, json!({"shard_size": 1})), one_shard);
        }
        ("terms", "execution_hint") => {
            return same(
                pair(terms, json!({"execution_hint": "map"})),
                "how a shard collects terms, not which",
            );
        }
        ("terms" | "multi_terms", "collect_mode") => {
            let base = if kind == "terms" { terms } else { multi };
            return same(
                pair(base, json!({"collect_mode": "breadth_first"})),
                "the order sub-aggregations are collected in, not their answer",
            );
        }
        ("terms" | "multi_terms", "show_term_doc_count_error") => {
            let base = if kind == "terms" { terms } else { multi };
            pair(base, json!({"show_term_doc_count_error": true}))
        }
        ("multi_terms", "terms") => (
            json!({kind: multi}),
            json!({kind: {"terms": [{"field": "k2"}, {"field": "k"}]}}),
        ),
        ("rare_terms", "max_doc_count") => pair(rare, json!({"max_doc_count": 1})),
        ("rare_terms", "precision") => {
            return same(
                pair(terms, json!({"precision": 0.01})),
                "tunes a sharded count's filter; one shard counts exactly",
            );
        }
        ("composite", "sources") => (
            json!({kind: {"sources": [{"k": {"terms": {"field": "k"}}}]}}),
            json!({kind: {"sources": [{"k2": {"terms": {"field": "k2"}}}]}}),
        ),
        ("composite", "size") => (
            json!({kind: {"sources": [{"k": {"terms": {"field": "k"}}}], "size": 2}}),
            json!({kind: {"sources": [{"k": {"terms": {"field": "k"}}}]}}),
        ),
        ("composite", "after") => (
            json!({kind: {"sources": [{"k": {"terms": {"field": "k"}}}], "after": {"k": "b"}}}),
            json!({kind: {"sources": [{"k": {"terms": {"field": "k"}}}]}}),
        ),
        ("histogram", "field") => pair(numbers, json!({"field": "f"})),
        ("histogram", "interval") => pair(numbers, json!({"interval": 25})),
        ("histogram", "offset") => pair(numbers, json!({"offset": 5})),
        ("histogram", "min_doc_count") => pair(numbers, json!({"min_doc_count": 4})),
        ("histogram", "extended_bounds") => pair(
            numbers,
            json!({"min_doc_count": 0, "extended_bounds": {"min": -50, "max": 300}}),
        ),
        ("range" | "date_range", "field") => {
            let (base, other) = if kind == "range" {
                (ranges, json!({"field": "f"}))
            } else {
                (dates, json!({"field": "d"}))
            };
            pair(base, other)
        }
        ("range", "ranges") => pair(ranges, json!({"ranges": [{"to": 10}]})),
        ("date_range", "ranges") => pair(dates, json!({"ranges": [{"to": "2026-01-10"}]})),
        ("date_range", "time_zone") => pair(dates, json!({"time_zone": "-10:00"})),
        (
            "avg"
            | "min"
            | "max"
            | "sum"
            | "stats"
            | "value_count"
            | "extended_stats"
            | "median_absolute_deviation"
            | "cardinality"
            | "percentiles",
            "field",
        ) => pair(metric, json!({"field": "f"})),
        (
            "avg"
            | "min"
            | "max"
            | "sum"
            | "stats"
            | "value_count"
            | "extended_stats"
            | "median_absolute_deviation"
            | "percentiles",
            "missing",
        ) => {
            // Below every value for `min`, above them for the rest.
            let missing = if kind == "min" { -5 } else { 1000 };
            pair(metric, json!({ "missing": missing }))
        }
        ("extended_stats", "sigma") => pair(metric, json!({"sigma": 1})),
        ("median_absolute_deviation", "compression") => {
            return same(
                pair(metric, json!({"compression": 10})),
                "the t-digest's size; Quarry's median is exact at these counts",
            );
        }
        ("weighted_avg", "value") => (
            json!({kind: {"value": {"field": "n"}, "weight": {"field": "f"}}}),
            json!({kind: {"value": {"field": "f"}, "weight": {"field": "f"}}}),
        ),
        ("weighted_avg", "weight") => (
            json!({kind: {"value": {"field": "n"}, "weight": {"field": "f"}}}),
            json!({kind: {"value": {"field": "n"}, "weight": {"field": "n"}}}),
        ),
        ("cardinality", "precision_threshold") => {
            return same(
                pair(metric, json!({"precision_threshold": 100})),
                "counts are exact below a few thousand values at any threshold",
            );
        }
        ("percentiles", "percents") => pair(metric, json!({"percents": [10, 90]})),
        ("percentiles", "hdr") => pair(
            metric,
            json!({"hdr": {"number_of_significant_value_digits": 1}}),
        ),
        ("percentiles", "tdigest") => {
            return same(
                pair(metric, json!({"tdigest": {"compression": 200}})),
                "the t-digest's size; exact at these counts",
            );
        }
        ("filters", "filters") => pair(filters, json!({"filters": {"b": {"term": {"k": "b"}}}})),
        ("filters", "other_bucket") => pair(filters, json!({"other_bucket": true})),
        ("filters", "other_bucket_key") => pair(filters, json!({"other_bucket_key": "rest"})),
        ("adjacency_matrix", "filters") => (
            json!({kind: {"filters": {"a": {"term": {"k": "a"}}, "x": {"term": {"k2": "x"}}}}}),
            json!({kind: {"filters": {"a": {"term": {"k": "a"}}, "y": {"term": {"k2": "y"}}}}}),
        ),
        ("adjacency_matrix", "separator") => (
            json!({kind: {"filters": {"a": {"term": {"k": "a"}}, "x": {"term": {"k2": "x"}}}, "separator": "+"}}),
            json!({kind: {"filters": {"a": {"term": {"k": "a"}}, "x": {"term": {"k2": "x"}}}}}),
        ),
        ("missing", "field") => pair(json!({"field": "k"}), json!({"field": "n"})),
        _ => return None,
    };
    Some((with, without, Differs))
}

/// A pipeline case: the pipeline under a daily histogram with gaps, with and without the
/// option.
fn pipeline_case(kind: &str, key: &str) -> Option<(Value, Value, Expect)> {
    let sibling = kind.ends_with("_bucket");
    // `s` (a max) has no value in an empty bucket, a gap; `m` (a sum) is 0 there.
    let path = match kind {
        // Zeros in the gaps lower a minimum of positive values (`t`), not of negative ones.
        "min_bucket" => "days>t",
        _ if sibling => "days>s",
        _ => "s",
    };
    let base = match kind {
        "bucket_script" => json!({"buckets_path": {"v": "s"}, "script": "params.v * 2"}),
        "moving_fn" => {
            json!({"buckets_path": path, "window": 4, "script": "MovingFunctions.max(values)"})
        }
        _ => json!({ "buckets_path": path }),
    };
    let merged = |extra: Value| {
        let mut body = base.clone();
        for (k, v) in extra.as_object().unwrap() {
            body[k] = v.clone();
        }
        body
    };
    // (the pipeline with the option, without it or with another value, expected)
    let (with, without, expect) = match key {
        "buckets_path" => {
            let other = match (sibling, kind) {
                (true, _) => json!({"buckets_path": "days>m"}),
                (false, "bucket_script") => json!({"buckets_path": {"v": "m"}}),
                (false, _) => json!({"buckets_path": "m"}),
            };
            (base.clone(), merged(other), Differs)
        }
        "gap_policy" if kind == "sum_bucket" => (
            merged(json!({"gap_policy": "insert_zeros"})),
            base.clone(),
            Same("zeros put in the gaps add nothing to a sum"),
        ),
        "gap_policy" => (
            merged(json!({"gap_policy": "insert_zeros"})),
            base.clone(),
            Differs,
        ),
        "format" => (merged(json!({"format": "0.0"})), base.clone(), Refused),
        "lag" => (merged(json!({"lag": 2})), base.clone(), Differs),
        "window" => (merged(json!({"window": 3})), base.clone(), Differs),
        "model" => (
            merged(json!({"model": "simple"})),
            base.clone(),
            Same("only `simple`, the default, is taken; another model is refused by name"),
        ),
        "shift" => (merged(json!({"shift": 1})), base.clone(), Differs),
        "script" if kind == "bucket_script" => (
            base.clone(),
            merged(json!({"script": "params.v * 3"})),
            Differs,
        ),
        "script" => (
            base.clone(),
            merged(json!({"script": "MovingFunctions.min(values)"})),
            Differs,
        ),
        _ => return None,
    };
    let wrap = |pipeline: Value| {
        let metrics = json!({
            "m": {"sum": {"field": "n"}},
            "s": {"max": {"field": "g"}},
            "t": {"max": {"field": "f"}},
        });
        let mut days = json!({"date_histogram": {"field": "@timestamp", "calendar_interval": "day"},
                              "aggs": metrics});
        if sibling {
            json!({"days": days, "p": { kind: pipeline }})
        } else {
            days["aggs"]["p"] = json!({ kind: pipeline });
            json!({ "days": days })
        }
    };
    Some((wrap(with), wrap(without), expect))
}

#[test]
fn every_aggregation_option_is_honoured_or_a_documented_no_op() {
    let (_dir, server) = indexed("opts");
    let aggregate = |aggs: &Value| {
        let body = json!({"size": 0, "aggs": aggs});
        let (status, answer) = server.request("POST", "/opts/_search", Some(&body.to_string()));
        (status, answer)
    };

    let mut missing = Vec::new();
    let mut wrong = Vec::new();
    let mut checked = 0;
    let cases = quarry_server::AGG_OPTIONS
        .iter()
        .map(|(kind, keys)| (kind, keys, false))
        .chain(
            quarry_server::PIPELINE_OPTIONS
                .iter()
                .map(|(kind, keys)| (kind, keys, true)),
        );
    for (kind, keys, pipeline) in cases {
        for key in keys.iter() {
            let case = match pipeline {
                false => agg_case(kind, key).map(|(w, o, e)| (json!({"a": w}), json!({"a": o}), e)),
                true => pipeline_case(kind, key),
            };
            let Some((with, without, expect)) = case else {
                missing.push(format!("{kind}.{key}"));
                continue;
            };
            checked += 1;
            let (status_with, answer_with) = aggregate(&with);
            let (status_without, answer_without) = aggregate(&without);
            let named = answer_with.to_string().contains(key);
            let verdict = match expect {
                Refused if status_with == 400 && named => None,
                Refused => Some(format!("expected a 400 naming {key}, got {status_with}")),
                _ if status_with != 200 || status_without != 200 => Some(format!(
                    "{status_with} {answer_with} / {status_without} {answer_without}"
                )),
                Differs if answer_with["aggregations"] != answer_without["aggregations"] => None,
                Differs => Some(format!(
                    "the answer is the same with and without: {}",
                    answer_with["aggregations"]
                )),
                Same(_) if answer_with["aggregations"] == answer_without["aggregations"] => None,
                Same(reason) => Some(format!(
                    "documented as a no-op ({reason}) but the answer changes: {} vs {}",
                    answer_with["aggregations"], answer_without["aggregations"]
                )),
            };
            if let Some(verdict) = verdict {
                wrong.push(format!(
                    "{kind}.{key}: {verdict}\n    with {with}\n    without {without}"
                ));
            }
        }
    }
    assert!(missing.is_empty(), "options with no case here: {missing:?}");
    assert!(
        wrong.is_empty(),
        "{} of {checked} options:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
    assert!(checked > 100, "{checked}");
}

/// A query's `boost` multiplies its scores, for every query type that takes one (some took
/// it and left the scores as they were): each hit scores `boost ×` its score without.
#[test]
fn every_query_boost_scales_the_scores() {
    let (_dir, server) = indexed("boosts");
    let scores = |query: &Value| {
        let body = json!({"size": 100, "query": query});
        let (status, answer) = server.request("POST", "/boosts/_search", Some(&body.to_string()));
        assert_eq!(status, 200, "{query}: {answer}");
        let mut hits: Vec<(String, f64)> = answer["hits"]["hits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| {
                (
                    h["_id"].as_str().unwrap().to_owned(),
                    h["_score"].as_f64().unwrap(),
                )
            })
            .collect();
        hits.sort_by(|a, b| a.0.cmp(&b.0));
        hits
    };
    let queries = [
        json!({"match": {"t": {"query": "beta gamma"}}}),
        json!({"match_phrase": {"t": {"query": "beta gamma"}}}),
        json!({"term": {"k": {"value": "a"}}}),
        json!({"terms": {"k": ["a", "b"]}}),
        json!({"range": {"n": {"gte": 30}}}),
        json!({"exists": {"field": "n"}}),
        json!({"prefix": {"k": {"value": "r"}}}),
        json!({"query_string": {"query": "beta OR k:a"}}),
        json!({"multi_match": {"query": "gamma", "fields": ["t"]}}),
        json!({"match_all": {}}),
        json!({"ids": {"values": ["no-such-id"]}}),
        json!({"constant_score": {"filter": {"term": {"k": "b"}}}}),
    ];
    for query in queries {
        let plain = scores(&query);
        let mut boosted = query.clone();
        let (kind, body) = boosted.as_object_mut().unwrap().iter_mut().next().unwrap();
        // Field-level options hold the boost where there is one field; else the body.
        let single_field =
            ["match", "match_phrase", "term", "range", "prefix"].contains(&kind.as_str());
        match single_field {
            true => {
                let options = body.as_object_mut().unwrap().values_mut().next().unwrap();
                options["boost"] = json!(2.0);
            }
            false => body["boost"] = json!(2.0),
        }
        let doubled = scores(&boosted);
        assert_eq!(doubled.len(), plain.len(), "{boosted}");
        for ((id, score), (same_id, twice)) in plain.iter().zip(&doubled) {
            assert_eq!(id, same_id);
            assert!(
                (twice - 2.0 * score).abs() <= 1e-4 * score.abs().max(1.0),
                "{boosted}: {id} scores {twice}, twice {score} expected"
            );
        }
        let any = if query.get("ids").is_some() { 0 } else { 1 };
        assert!(plain.len() >= any, "{query} finds events");
    }
}

/// A query of `kind` with `extra` added to `base` (at the field's options when `field` is
/// given), and the one without.
fn with_options(kind: &str, field: Option<&str>, base: Value, extra: Value) -> (Value, Value) {
    let mut with = base.clone();
    for (k, v) in extra.as_object().unwrap() {
        with[k] = v.clone();
    }
    let wrap = |options: Value| match field {
        Some(field) => json!({ kind: { field: options } }),
        None => json!({ kind: options }),
    };
    (wrap(with), wrap(base))
}

/// The query with the option, the one without it (or with another value), and what the
/// option must do.
fn query_case(kind: &str, key: &str) -> Option<(Value, Value, Expect)> {
    let differs = |(with, without): (Value, Value)| Some((with, without, Differs));
    let same =
        |(with, without): (Value, Value), why: &'static str| Some((with, without, Same(why)));
    let refused = |(with, without): (Value, Value)| Some((with, without, Refused));
    let term_a = json!({"term": {"k": "a"}});
    let term_x = json!({"term": {"k2": "x"}});
    let text = |q: &str| json!({ "query": q });
    let kind_only = kind.split('.').next().unwrap();
    match (kind, key) {
        (_, "boost") => {
            let (field, base) = match kind_only {
                "match_all" => (None, json!({})),
                "ids" => (None, json!({"values": ["e1", "e2"]})),
                "bool" => (None, json!({"should": [{"match": {"t": "beta"}}]})),
                "match" | "match_phrase" | "match_bool_prefix" => (Some("t"), text("beta")),
                "multi_match" if kind.ends_with("bool_prefix") => (
                    None,
                    json!({"query": "bet", "fields": ["t"], "type": "bool_prefix"}),
                ),
                "multi_match" => (None, json!({"query": "beta", "fields": ["t"]})),
                "query_string" | "simple_query_string" => (None, text("beta")),
                "term" => (Some("k"), json!({"value": "a"})),
                "terms" => (None, json!({"k": ["a", "b"]})),
                "range" => (Some("n"), json!({"gte": 30})),
                "terms_set" => (
                    Some("k"),
                    json!({"terms": ["a"], "minimum_should_match_field": "one"}),
                ),
                "exists" => (None, json!({"field": "n"})),
                "prefix" | "wildcard" | "regexp" | "fuzzy" => (Some("k"), json!({"value": "a"})),
                "constant_score" => (None, json!({"filter": term_a})),
                _ => return None,
            };
            differs(with_options(kind_only, field, base, json!({"boost": 3})))
        }
        ("ids", "values") => differs((
            json!({"ids": {"values": ["e1", "e2"]}}),
            json!({"ids": {"values": ["e3"]}}),
        )),
        ("bool", "must" | "filter" | "should" | "must_not") => differs(with_options(
            "bool",
            None,
            json!({}),
            json!({ key: [term_a] }),
        )),
        ("bool", "minimum_should_match") => differs(with_options(
            "bool",
            None,
            json!({"should": [term_a, term_x]}),
            json!({"minimum_should_match": 2}),
        )),
        ("match" | "match_phrase" | "match_bool_prefix", "query") => differs((
            json!({ kind: {"t": text("beta")} }),
            json!({ kind: {"t": text("delta")} }),
        )),
        ("match" | "match_bool_prefix", "operator") => differs(with_options(
            kind,
            Some("t"),
            text("beta gamma"),
            json!({"operator": "and"}),
        )),
        ("match_bool_prefix", "analyzer") => {
            // The whitespace analyzer keeps case: `Beta` is not the indexed `beta`.
            differs(with_options(
                kind,
                Some("t"),
                text("Beta"),
                json!({"analyzer": "whitespace"}),
            ))
        }
        ("match", "lenient") => differs(with_options(
            kind,
            Some("n"),
            text("abc"),
            json!({"lenient": true}),
        )),
        ("match", "zero_terms_query") => refused(with_options(
            kind,
            Some("t"),
            text("!!!"),
            json!({"zero_terms_query": "all"}),
        )),
        ("match", "auto_generate_synonyms_phrase_query") => same(
            with_options(kind, Some("t"), text("beta"), json!({ key: false })),
            "Quarry has no synonyms",
        ),
        ("match", "fuzzy_transpositions") => same(
            with_options(kind, Some("t"), text("beta"), json!({ key: false })),
            "a match without fuzziness makes no edits",
        ),
        ("match_phrase", "slop") => differs(with_options(
            kind,
            Some("t"),
            text("gamma beta"),
            json!({"slop": 2}),
        )),
        ("match_bool_prefix" | "multi_match.bool_prefix", _) => {
            let (field, base) = match kind {
                "match_bool_prefix" => (Some("t"), text("betta gam")),
                _ => (
                    None,
                    json!({"query": "betta gam", "fields": ["t"], "type": "bool_prefix"}),
                ),
            };
            let extra = match key {
                "minimum_should_match" => json!({ key: 2 }),
                "fuzziness" => json!({ key: 1 }),
                "prefix_length" => json!({"fuzziness": 1, "prefix_length": 3}),
                "fuzzy_transpositions" => {
                    let base = match kind {
                        "match_bool_prefix" => text("btea gam"),
                        _ => json!({"query": "btea gam", "fields": ["t"], "type": "bool_prefix"}),
                    };
                    let mut with = base.clone();
                    with["fuzziness"] = json!(1);
                    with["fuzzy_transpositions"] = json!(false);
                    let mut without = base;
                    without["fuzziness"] = json!(1);
                    let wrap = |o: Value| match field {
                        Some(f) => json!({ kind: { f: o } }),
                        None => json!({ "multi_match": o }),
                    };
                    return differs((wrap(with), wrap(without)));
                }
                "max_expansions" | "fuzzy_rewrite" => {
                    let value = if key == "max_expansions" {
                        json!(1)
                    } else {
                        json!("top_terms_1")
                    };
                    let (with, without) =
                        with_options(kind_only, field, base, json!({"fuzziness": 1, key: value}));
                    let _ = without;
                    let (without, _) = with_options(
                        kind_only,
                        field,
                        match kind {
                            "match_bool_prefix" => text("betta gam"),
                            _ => {
                                json!({"query": "betta gam", "fields": ["t"], "type": "bool_prefix"})
                            }
                        },
                        json!({"fuzziness": 1}),
                    );
                    return same(
                        (with, without),
                        "every term within the edits is expanded, scored as a filter",
                    );
                }
                "operator" => json!({"operator": "and"}),
                "analyzer" => {
                    // The whitespace analyzer keeps case: `Betta` is no indexed term.
                    let query =
                        json!({"query": "Beta gam", "fields": ["t"], "type": "bool_prefix"});
                    return differs(with_options(
                        "multi_match",
                        None,
                        query,
                        json!({"analyzer": "whitespace"}),
                    ));
                }
                "query" => json!({"query": "delta"}),
                "fields" => json!({"fields": ["k2"]}),
                "type" => {
                    return differs((
                        json!({"multi_match": {"query": "betta gam", "fields": ["t"], "type": "bool_prefix"}}),
                        json!({"multi_match": {"query": "betta gam", "fields": ["t"]}}),
                    ))
                }
                "lenient" => {
                    return differs(with_options(
                        "multi_match",
                        None,
                        json!({"query": "abc", "fields": ["n"], "type": "bool_prefix"}),
                        json!({"lenient": true}),
                    ))
                }
                _ => return None,
            };
            differs(with_options(kind_only, field, base, extra))
        }
        ("multi_match", _) => {
            let base = json!({"query": "beta gamma", "fields": ["t"]});
            match key {
                "query" => differs(with_options(kind, None, base, json!({"query": "delta"}))),
                "fields" => differs(with_options(kind, None, base, json!({"fields": ["k2"]}))),
                "type" => differs(with_options(kind, None, base, json!({"type": "phrase"}))),
                "operator" => differs(with_options(kind, None, base, json!({"operator": "and"}))),
                "lenient" => differs(with_options(
                    kind,
                    None,
                    json!({"query": "abc", "fields": ["n"]}),
                    json!({"lenient": true}),
                )),
                "slop" => differs(with_options(
                    kind,
                    None,
                    json!({"query": "gamma beta", "fields": ["t"], "type": "phrase"}),
                    json!({"slop": 2}),
                )),
                _ => None,
            }
        }
        ("query_string" | "simple_query_string", _) => {
            let base = text("beta gamma");
            let extra = match key {
                "query" => json!({"query": "delta"}),
                "default_operator" => json!({"default_operator": "AND"}),
                "default_field" => json!({"default_field": "k2"}),
                "fields" => json!({"fields": ["k2"]}),
                "phrase_slop" => {
                    return differs(with_options(
                        kind,
                        None,
                        text("\"gamma beta\""),
                        json!({ key: 2 }),
                    ))
                }
                "time_zone" => {
                    let query = if kind == "query_string" {
                        text("d:[2026-02-01 TO 2026-02-05]")
                    } else {
                        return same(
                            with_options(kind, None, base, json!({ key: "+05:00" })),
                            "the simple syntax has no ranges for a zone to read",
                        );
                    };
                    return differs(with_options(kind, None, query, json!({ key: "-12:00" })));
                }
                "minimum_should_match" => json!({ key: 2 }),
                "lenient" => {
                    let query = if kind == "query_string" {
                        text("n:abc")
                    } else {
                        text("abc")
                    };
                    let mut query = query;
                    if kind == "simple_query_string" {
                        query["fields"] = json!(["n"]);
                    }
                    return differs(with_options(kind, None, query, json!({"lenient": true})));
                }
                key => {
                    // Options at the one value Quarry takes (others are refused), or that
                    // cannot change an answer here: (value, query, why).
                    let no_ops = [
                        (
                            "flags",
                            json!("ALL"),
                            "beta gamma",
                            "only ALL, the default, is taken; others are refused",
                        ),
                        (
                            "type",
                            json!("best_fields"),
                            "beta gamma",
                            "only best_fields, the default, is taken; others are refused",
                        ),
                        (
                            "allow_leading_wildcard",
                            json!(true),
                            "beta gamma",
                            "only true, the default, is taken; false is refused",
                        ),
                        (
                            "analyze_wildcard",
                            json!(true),
                            "bet*",
                            "Quarry lowercases a wildcard's text as the analyzer would, either way",
                        ),
                        (
                            "auto_generate_synonyms_phrase_query",
                            json!(false),
                            "beta gamma",
                            "Quarry has no synonyms",
                        ),
                        (
                            "enable_position_increments",
                            json!(false),
                            "beta gamma",
                            "no analyzer of Quarry's removes tokens and leaves gaps",
                        ),
                        (
                            "max_determinized_states",
                            json!(5000),
                            "beta gamma",
                            "Quarry bounds a regex by its length and its DFA's size",
                        ),
                        (
                            "rewrite",
                            json!("constant_score"),
                            "bet*",
                            "constant_score, the default",
                        ),
                    ];
                    let (_, value, query, why) = no_ops.into_iter().find(|(k, ..)| *k == key)?;
                    return same(
                        with_options(kind, None, text(query), json!({ key: value })),
                        why,
                    );
                }
            };
            differs(with_options(kind, None, base, extra))
        }
        ("term", "value") => differs((
            json!({"term": {"k": {"value": "a"}}}),
            json!({"term": {"k": {"value": "b"}}}),
        )),
        ("term", "case_insensitive") => differs(with_options(
            kind,
            Some("k"),
            json!({"value": "A"}),
            json!({ key: true }),
        )),
        ("range", _) => {
            let (field, base, extra) = match key {
                "gt" | "gte" | "lt" | "lte" | "from" | "to" => ("n", json!({}), json!({ key: 30 })),
                "include_lower" => ("n", json!({"from": 30}), json!({ key: false })),
                "include_upper" => ("n", json!({"to": 30}), json!({ key: false })),
                "format" => (
                    "d",
                    json!({"gte": "05/02/2026"}),
                    json!({"format": "dd/MM/yyyy"}),
                ),
                "time_zone" => (
                    "d",
                    json!({"gte": "2026-02-05T00:00:00"}),
                    json!({ key: "-12:00" }),
                ),
                _ => return None,
            };
            if key == "format" {
                // The same number in seconds or in milliseconds: another instant.
                return differs((
                    json!({"range": {field: {"gte": "1770249600", "format": "epoch_second"}}}),
                    json!({"range": {field: {"gte": "1770249600", "format": "epoch_millis"}}}),
                ));
            }
            differs(with_options(kind, Some(field), base, extra))
        }
        ("terms_set", "terms") => differs((
            json!({"terms_set": {"k": {"terms": ["a"], "minimum_should_match_field": "one"}}}),
            json!({"terms_set": {"k": {"terms": ["b"], "minimum_should_match_field": "one"}}}),
        )),
        ("terms_set", "minimum_should_match_field") => differs((
            json!({"terms_set": {"k": {"terms": ["a"], "minimum_should_match_field": "one"}}}),
            json!({"terms_set": {"k": {"terms": ["a"], "minimum_should_match_field": "two"}}}),
        )),
        ("exists", "field") => differs((
            json!({"exists": {"field": "n"}}),
            json!({"exists": {"field": "k"}}),
        )),
        ("prefix" | "wildcard" | "regexp" | "fuzzy", _) => {
            let value = match kind {
                "prefix" => "a",
                "wildcard" => "a*",
                "regexp" => "a.*",
                _ => "rere",
            };
            let base = json!({ "value": value });
            match key {
                "value" => differs((
                    json!({ kind: {"k": {"value": value}} }),
                    json!({ kind: {"k": {"value": value.replace('a', "b").replace("rere", "c")}} }),
                )),
                "wildcard" => differs((
                    json!({ kind: {"k": {"wildcard": "a*"}} }),
                    json!({ kind: {"k": {"wildcard": "b*"}} }),
                )),
                "case_insensitive" => differs(with_options(
                    kind,
                    Some("k"),
                    json!({"value": value.to_uppercase()}),
                    json!({ key: true }),
                )),
                "rewrite" => same(
                    with_options(kind, Some("k"), base, json!({ key: "constant_score" })),
                    "constant_score, the default; other rewrites are refused",
                ),
                "flags" => same(
                    with_options(kind, Some("k"), base, json!({ key: "ALL" })),
                    "only ALL, the default, is taken; others are refused",
                ),
                "max_determinized_states" => same(
                    with_options(kind, Some("k"), base, json!({ key: 5000 })),
                    "Quarry bounds a regex by its length and its DFA's size",
                ),
                "fuzziness" => differs(with_options(kind, Some("k"), base, json!({ key: 0 }))),
                "prefix_length" => differs(with_options(kind, Some("k"), base, json!({ key: 2 }))),
                "max_expansions" => same(
                    with_options(kind, Some("k"), base, json!({ key: 1 })),
                    "every term within the edits is expanded, scored as a filter",
                ),
                "transpositions" => same(
                    with_options(kind, Some("k"), base, json!({ key: true })),
                    "only true, the default, is taken; false is refused",
                ),
                _ => None,
            }
        }
        ("constant_score", "filter") => differs((
            json!({"constant_score": {"filter": term_a}}),
            json!({"constant_score": {"filter": term_x}}),
        )),
        _ => None,
    }
}

/// Options the walk shows to be wrong today, each with why: the list only shrinks (a gap
/// that closes fails the test until it is taken off).
const KNOWN_QUERY_GAPS: &[(&str, &str, &str)] = &[
    (
        "term",
        "boost",
        "a whole value (an exact term) scores 0 where Elasticsearch scores its idf, so the \
         boost multiplies 0",
    ),
    (
        "terms_set",
        "boost",
        "its terms are whole values, scored 0 as above",
    ),
];

#[test]
fn every_query_option_is_honoured_or_a_documented_no_op() {
    let (_dir, server) = indexed("queries");
    let search = |query: &Value| {
        let body = json!({"size": 100, "query": query});
        let (status, answer) = server.request("POST", "/queries/_search", Some(&body.to_string()));
        let mut hits: Vec<(String, String)> = answer["hits"]["hits"]
            .as_array()
            .map(|hits| {
                hits.iter()
                    .map(|h| {
                        (
                            h["_id"].to_string(),
                            format!("{:.4}", h["_score"].as_f64().unwrap_or(0.0)),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        hits.sort();
        (status, hits, answer)
    };
    let mut missing = Vec::new();
    let mut wrong = Vec::new();
    let mut checked = 0;
    for (kind, keys) in quarry_query::dsl::QUERY_OPTIONS {
        for key in keys.iter() {
            let Some((with, without, expect)) = query_case(kind, key) else {
                missing.push(format!("{kind}.{key}"));
                continue;
            };
            checked += 1;
            let (status_with, hits_with, answer_with) = search(&with);
            let (status_without, hits_without, answer_without) = search(&without);
            let verdict = match expect {
                Refused if status_with == 400 && answer_with.to_string().contains(key) => None,
                Refused => Some(format!("expected a 400 naming {key}, got {status_with}")),
                Differs if (status_with, &hits_with) != (status_without, &hits_without) => {
                    (status_with != 200 && status_without != 200).then(|| {
                        format!("both refused: {answer_with} / {answer_without}")
                    })
                }
                Differs => Some(format!("the same answer with and without ({status_with}, {} hits)", hits_with.len())),
                Same(_) if status_with == 200 && hits_with == hits_without && status_without == 200 => None,
                Same(reason) => Some(format!(
                    "documented as a no-op ({reason}) but: {status_with} {answer_with} / {status_without} {answer_without}"
                )),
            };
            let known_gap = KNOWN_QUERY_GAPS
                .iter()
                .any(|(k, option, _)| k == kind && option == key);
            match (verdict, known_gap) {
                (Some(verdict), false) => wrong.push(format!(
                    "{kind}.{key}: {verdict}\n    with {with}\n    without {without}"
                )),
                (None, true) => wrong.push(format!(
                    "{kind}.{key} is right now: take it off KNOWN_QUERY_GAPS"
                )),
                _ => {}
            }
        }
    }
    assert!(missing.is_empty(), "options with no case here: {missing:?}");
    assert!(
        wrong.is_empty(),
        "{} of {checked} options:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}
