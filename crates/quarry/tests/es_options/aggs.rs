//! The aggregation options (`AGG_OPTIONS`, `PIPELINE_OPTIONS`).

use super::*;

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
    report(&missing, &wrong, checked);
    assert!(checked > 100, "{checked}");
}
