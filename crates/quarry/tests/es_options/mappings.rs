//! How an index is defined: every mapped field's options by type
//! (`quarry_store::mapping::FIELD_OPTIONS`), multi-fields' (`MULTI_FIELD_OPTIONS`), the
//! mapping's own keys (`MAPPING_KEYS`, `SOURCE_KEYS`), the create-index body
//! (`quarry_server::CREATE_INDEX_KEYS`) and every index setting (`INDEX_SETTINGS`).
//!
//! Each side creates index `m` anew with field `f` mapped one way, writes the same
//! documents, and asks one question whose answer is compared.

use super::apis::{call, run, Call, Case};
use super::*;

/// Index `m` created with `body`, then `docs` written to it (ids `d0`..), then `probe`.
fn side(body: Value, docs: &[Value], probe: Call) -> Vec<Call> {
    let mut bulk = String::new();
    for (i, doc) in docs.iter().enumerate() {
        bulk.push_str(&format!(
            "{{\"index\": {{\"_index\": \"m\", \"_id\": \"d{i}\"}}}}\n{doc}\n"
        ));
    }
    vec![
        call("DELETE", "/m?ignore_unavailable=true", ""),
        call("PUT", "/m", &body.to_string()),
        call("POST", "/_bulk", &bulk),
        probe,
    ]
}

/// Field `f` mapped as `field` (and `settings`).
fn mapped(field: &Value, settings: &Value) -> Value {
    json!({"settings": settings, "mappings": {"properties": {"f": field}}})
}

fn search(body: Value) -> Call {
    call("POST", "/m/_search", &body.to_string())
}

/// Each type's documents (`f` of each), and a question that reads `f`.
fn type_data(ty: &str) -> (Vec<Value>, Call) {
    let docs = |values: Vec<Value>| -> Vec<Value> {
        values
            .into_iter()
            .map(|f| json!({"f": f, "n": 1}))
            .collect()
    };
    match ty {
        "text" => (
            docs(vec![
                json!("Quick-Brown fox"),
                json!("the quick brown fox jumps over the lazy dog"),
                json!(["alpha beta", "gamma delta"]),
            ]),
            search(json!({"query": {"match": {"f": "quick"}}})),
        ),
        "keyword" => (
            docs(vec![json!("abc"), json!("Abc-Def"), json!("xyz")]),
            search(json!({"query": {"term": {"f": "Abc-Def"}}})),
        ),
        "long" => (
            docs(vec![json!(1), json!(25), json!("7"), json!("abc")]),
            search(json!({"query": {"range": {"f": {"gte": 5}}}})),
        ),
        "scaled_float" => (
            docs(vec![json!(1.26), json!(2.5), json!("abc")]),
            search(json!({"size": 0, "aggs": {"s": {"sum": {"field": "f"}}}})),
        ),
        "date" => (
            docs(vec![json!("2026-01-05"), json!("2026/01/06"), json!("bad")]),
            search(json!({"query": {"range": {"f": {"gte": "2026-01-01"}}}})),
        ),
        "ip" => (
            docs(vec![json!("10.0.0.1"), json!("192.168.0.1"), json!("bad")]),
            search(json!({"query": {"term": {"f": "10.0.0.0/8"}}})),
        ),
        "boolean" => (
            docs(vec![json!(true), json!(false), json!("bad")]),
            search(json!({"query": {"term": {"f": true}}})),
        ),
        "binary" => (
            docs(vec![json!("aGVsbG8=")]),
            search(json!({"query": {"term": {"f": "aGVsbG8="}}})),
        ),
        "geo_point" => (
            docs(vec![json!("1.5,2.5")]),
            search(json!({"query": {"term": {"f": "1.5,2.5"}}})),
        ),
        "completion" => (
            docs(vec![json!("quarry"), json!("quartz")]),
            search(json!({"suggest": {"s": {"prefix": "qua", "completion": {"field": "f"}}}})),
        ),
        "constant_keyword" => (
            docs(vec![json!({}), json!({})])
                .into_iter()
                .map(|_| json!({"n": 1}))
                .collect(),
            search(json!({"query": {"term": {"f": "fixed"}}})),
        ),
        _ => (
            docs(vec![json!({"a": "X Y", "b": 1})]),
            search(json!({"query": {"term": {"f.a": "X Y"}}})),
        ),
    }
}

/// A field type's base mapping.
fn base(ty: &str) -> Value {
    match ty {
        "scaled_float" => json!({"type": "scaled_float", "scaling_factor": 10}),
        "constant_keyword" => json!({"type": "constant_keyword", "value": "fixed"}),
        "object" => json!({"type": "object", "properties": {"a": {"type": "keyword"}}}),
        other => json!({ "type": other }),
    }
}

/// The question for an option whose effect the type's own question does not show.
fn probe_for(ty: &str, option: &str) -> Option<Call> {
    Some(match option {
        // What a hit shows, and which documents were taken.
        "stored" | "store" => search(json!({"query": {"match_all": {}}})),
        "type" if ty == "boolean" => search(json!({"query": {"match_all": {}}})),
        // A word of the value: a text field's token, never a keyword's whole value.
        "type" if ty == "keyword" => search(json!({"query": {"match": {"f": "abc"}}})),
        "properties" | "enabled" => search(json!({"query": {"match": {"f.a": "x"}}})),
        // What an aggregation over the values answers.
        "doc_values" => search(json!({"size": 0, "aggs": {"v": {"value_count": {"field": "f"}}}})),
        "meta" => call("GET", "/m/_mapping", ""),
        "norms" => search(json!({"query": {"match": {"f": "fox"}}})),
        "position_increment_gap" => search(json!({"query": {"match_phrase": {"f": "beta gamma"}}})),
        "term_vector" | "index_options" => search(json!({
            "query": {"match": {"f": "fox"}},
            "highlight": {"fields": {"f": {}}}
        })),
        "fields" if ty == "text" => {
            search(json!({"query": {"term": {"f.raw": "Quick-Brown fox"}}}))
        }
        "fields" => search(json!({"query": {"term": {"f.raw": "Abc-Def"}}})),
        "ignore_malformed" => search(json!({"query": {"match_all": {}}})),
        "dynamic" => search(json!({"query": {"match_all": {}}})),
        _ => return None,
    })
}

/// `option` of a field of type `ty`: the field mapped with it (or another value) and without.
fn field_case(ty: &str, option: &str) -> Option<Case> {
    let (docs, question) = type_data(ty);
    let probe = probe_for(ty, option).unwrap_or(question);
    // Highlights past this many bytes need offsets.
    let settings = match option {
        "term_vector" | "index_options" => json!({"index.highlight.max_analyzed_offset": 5}),
        _ => json!({}),
    };
    let base = base(ty);
    let pair = |with: Value, without: Value, expect| {
        Some((
            side(mapped(&with, &settings), &docs, probe.clone()),
            side(mapped(&without, &settings), &docs, probe.clone()),
            expect,
        ))
    };
    let plus = |extra: Value| {
        let mut with = base.clone();
        for (k, v) in extra.as_object().unwrap() {
            with[k] = v.clone();
        }
        with
    };
    let differs = |extra: Value| pair(plus(extra), base.clone(), Differs);
    let same = |extra: Value, why| pair(plus(extra), base.clone(), Same(why));
    match (ty, option) {
        ("object", "type") => pair(base.clone(), plus(json!({"type": "nested"})), Differs),
        ("constant_keyword", "type") => pair(base.clone(), json!({"type": "keyword"}), Differs),
        ("constant_keyword", "value") => differs(json!({"value": "other"})),
        (_, "type") => {
            let other = if ty == "keyword" { "text" } else { "keyword" };
            pair(base.clone(), json!({"type": other}), Differs)
        }
        (_, "index") => differs(json!({"index": false})),
        (_, "stored") => differs(json!({"stored": false})),
        (_, "doc_values") => same(
            json!({"doc_values": false}),
            "a storage choice: without the per-document lookup, sorts and aggregations read \
             the kept values and answer the same",
        ),
        (_, "store") => same(
            json!({"store": true}),
            "Elasticsearch's extra stored copy: Quarry returns every stored field anyway",
        ),
        (_, "meta") => differs(json!({"meta": {"unit": "ms"}})),
        (_, "norms") => differs(json!({"norms": false})),
        ("text", "analyzer") => differs(json!({"analyzer": "whitespace"})),
        ("text", "search_analyzer") => same(
            json!({"search_analyzer": "standard"}),
            "a field is searched with the analyzer it is indexed with: the only one taken",
        ),
        ("completion", "analyzer" | "search_analyzer") => same(
            json!({ option: "simple" }),
            "inputs match by a case-insensitive prefix, as `simple` reads them: the only one taken",
        ),
        (_, "position_increment_gap") => differs(json!({"position_increment_gap": 0})),
        (_, "index_phrases") => same(
            json!({"index_phrases": true}),
            "Lucene's extra index for phrases: Quarry answers them from positions",
        ),
        (_, "index_prefixes") => same(
            json!({"index_prefixes": {}}),
            "Lucene's extra index for prefixes: Quarry answers them from its term dictionary",
        ),
        (_, "term_vector") => differs(json!({"term_vector": "with_positions_offsets"})),
        (_, "index_options") => differs(json!({"index_options": "offsets"})),
        (_, "fields") => differs(json!({"fields": {"raw": {"type": "keyword"}}})),
        (_, "ignore_above") => differs(json!({"ignore_above": 3})),
        (_, "ignore_malformed") => differs(json!({"ignore_malformed": true})),
        (_, "coerce") => same(
            json!({"coerce": true}),
            "the only value taken: numbers written as strings are read (false is refused)",
        ),
        (_, "scaling_factor") => differs(json!({"scaling_factor": 100})),
        (_, "format") => differs(json!({"format": "yyyy/MM/dd"})),
        ("object", "properties") => pair(
            base.clone(),
            json!({"type": "object", "properties": {"a": {"type": "text"}}}),
            Differs,
        ),
        ("object", "dynamic") => differs(json!({"dynamic": "strict"})),
        ("object", "enabled") => pair(
            json!({"type": "object", "enabled": false}),
            json!({"type": "object"}),
            Differs,
        ),
        _ => None,
    }
}

/// A multi-field's option: `f` a text field whose multi-field `raw` is of type `ty`.
fn multi_field_case(ty: &str, option: &str) -> Option<Case> {
    let docs = vec![json!({"f": "Quick-Brown fox"}), json!({"f": "quick"})];
    let raw = |extra: Value| {
        let mut raw = json!({"type": ty});
        for (k, v) in extra.as_object().unwrap() {
            raw[k] = v.clone();
        }
        json!({"type": "text", "fields": {"raw": raw}})
    };
    let settings = json!({"index.highlight.max_analyzed_offset": 5});
    let pair = |extra: Value, probe: Value, expect| {
        Some((
            side(mapped(&raw(extra), &settings), &docs, search(probe.clone())),
            side(mapped(&raw(json!({})), &settings), &docs, search(probe)),
            expect,
        ))
    };
    let whole = json!({"query": {"term": {"f.raw": "Quick-Brown fox"}}});
    let highlighted =
        json!({"query": {"match": {"f.raw": "fox"}}, "highlight": {"fields": {"f.raw": {}}}});
    match (ty, option) {
        ("keyword", "type") => Some((
            side(
                mapped(&raw(json!({})), &settings),
                &docs,
                search(whole.clone()),
            ),
            side(
                mapped(&json!({"type": "text"}), &settings),
                &docs,
                search(whole),
            ),
            Differs,
        )),
        ("text", "type") => Some((
            side(
                mapped(&raw(json!({})), &settings),
                &docs,
                search(json!({"query": {"match": {"f.raw": "fox"}}})),
            ),
            side(
                mapped(&json!({"type": "text"}), &settings),
                &docs,
                search(json!({"query": {"match": {"f.raw": "fox"}}})),
            ),
            Differs,
        )),
        ("keyword", "ignore_above") => pair(json!({"ignore_above": 5}), whole, Differs),
        ("keyword", "doc_values" | "store" | "index") => pair(
            json!({ option: true }),
            whole,
            Same(
                "Elasticsearch's own storage choices: taken only as true, the answers are the same",
            ),
        ),
        ("text", "analyzer" | "search_analyzer") => pair(
            json!({ option: "standard" }),
            json!({"query": {"match": {"f.raw": "fox"}}}),
            Same("a text multi-field is analyzed as its parent is: the only analyzer taken"),
        ),
        ("text", "norms") => pair(
            json!({"norms": true}),
            json!({"query": {"match": {"f.raw": "fox"}}}),
            Same("norms as the parent's: the only value taken"),
        ),
        ("text", "index_options") => {
            pair(json!({"index_options": "offsets"}), highlighted, Differs)
        }
        ("text", "term_vector") => pair(
            json!({"term_vector": "with_positions_offsets"}),
            highlighted,
            Differs,
        ),
        _ => None,
    }
}

/// A key of the mapping itself, of the create-index body, or an index setting.
fn index_case(what: &str, key: &str) -> Option<Case> {
    let (docs, _) = type_data("text");
    let text = json!({"type": "text"});
    let mapping = |extra: Value| {
        let mut mappings = json!({"properties": {"f": text}});
        for (k, v) in extra.as_object().unwrap() {
            mappings[k] = v.clone();
        }
        json!({ "mappings": mappings })
    };
    let all = search(json!({"query": {"match_all": {}}}));
    let with_extra = |doc: Value| {
        let mut docs = docs.clone();
        docs.push(doc);
        docs
    };
    match (what, key) {
        ("mapping", "properties") => Some((
            side(
                mapping(json!({})),
                &docs,
                search(json!({"query": {"match": {"f": "quick"}}})),
            ),
            side(
                json!({"mappings": {"properties": {"f": {"type": "keyword"}}}}),
                &docs,
                search(json!({"query": {"match": {"f": "quick"}}})),
            ),
            Differs,
        )),
        ("mapping", "dynamic") => Some((
            side(
                mapping(json!({"dynamic": "strict"})),
                &with_extra(json!({"g": 1})),
                all.clone(),
            ),
            side(mapping(json!({})), &with_extra(json!({"g": 1})), all),
            Differs,
        )),
        // Bare words search these fields.
        ("mapping", "default_search_fields") => {
            let docs = vec![
                json!({"f": "apple", "g": "pear"}),
                json!({"f": "pear", "g": "apple"}),
            ];
            let bare = call("GET", "/m/_search?q=apple", "");
            let mappings = |extra: Value| {
                let mut mappings = json!({"properties": {"f": text, "g": text}});
                for (k, v) in extra.as_object().unwrap() {
                    mappings[k] = v.clone();
                }
                json!({ "mappings": mappings })
            };
            Some((
                side(
                    mappings(json!({"default_search_fields": ["f"]})),
                    &docs,
                    bare.clone(),
                ),
                side(mappings(json!({})), &docs, bare),
                Differs,
            ))
        }
        ("mapping", "_source") | ("source", "excludes") => Some((
            side(
                mapping(json!({"_source": {"excludes": ["f"]}})),
                &docs,
                all.clone(),
            ),
            side(mapping(json!({})), &docs, all),
            Differs,
        )),
        ("source", "enabled") => Some((
            side(
                mapping(json!({"_source": {"enabled": true}})),
                &docs,
                all.clone(),
            ),
            side(mapping(json!({})), &docs, all),
            Same("the only value taken: Quarry keeps every field sent (false is refused)"),
        )),
        ("create", "mappings") => Some((
            side(mapping(json!({})), &docs, call("GET", "/m/_mapping", "")),
            side(json!({}), &docs, call("GET", "/m/_mapping", "")),
            Differs,
        )),
        ("create", "settings") => Some((
            side(
                json!({"settings": {"index.max_result_window": 2}}),
                &docs,
                all.clone(),
            ),
            side(json!({}), &docs, all),
            Differs,
        )),
        ("create", "aliases") => Some((
            side(
                json!({"aliases": {"m-alias": {}}}),
                &docs,
                call("GET", "/m-alias/_search", ""),
            ),
            side(json!({}), &docs, call("GET", "/m-alias/_search", "")),
            Differs,
        )),
        ("setting", name) => setting_case(name, &docs),
        _ => None,
    }
}

/// An index setting: `m` created with it (a limit set low, so that a request over it is
/// refused) and without.
fn setting_case(name: &str, docs: &[Value]) -> Option<Case> {
    let created = |settings: Value, probe: Call| side(json!({"settings": settings}), docs, probe);
    let (value, probe, expect) = match name {
        "index.max_result_window" => (json!(2), search(json!({"size": 3})), Differs),
        "index.max_docvalue_fields_search" => (
            json!(1),
            search(json!({"docvalue_fields": ["f", "n"]})),
            Differs,
        ),
        "index.max_script_fields" => (
            json!(0),
            search(json!({"script_fields": {}})),
            Same("holds scripts Quarry refuses anyway: no request it takes is over any bound"),
        ),
        "index.max_terms_count" => (
            json!(1),
            search(json!({"query": {"terms": {"f": ["quick", "fox"]}}})),
            Differs,
        ),
        "index.highlight.max_analyzed_offset" => (
            json!(5),
            search(json!({"query": {"match": {"f": "fox"}}, "highlight": {"fields": {"f": {}}}})),
            Differs,
        ),
        "index.max_slices_per_scroll" => (
            json!(2),
            call(
                "POST",
                "/m/_search?scroll=1m",
                r#"{"slice": {"id": 0, "max": 3}}"#,
            ),
            Differs,
        ),
        "index.number_of_shards" | "index.number_of_routing_shards" => (
            json!(1),
            search(json!({})),
            Same("one index per tenant: no shards to route to or split"),
        ),
        "index.number_of_replicas" | "index.auto_expand_replicas" => (
            if name.ends_with("replicas") && !name.contains("auto") {
                json!(0)
            } else {
                json!("false")
            },
            search(json!({})),
            Same("no replicas of its own: durability is the WAL's"),
        ),
        "index.refresh_interval" => (
            json!("30s"),
            search(json!({})),
            Same("events are searchable once acknowledged, sooner than any refresh"),
        ),
        _ => return None,
    };
    let probe_without = probe.clone();
    Some((
        created(json!({ name: value }), probe),
        created(json!({}), probe_without),
        expect,
    ))
}

#[test]
fn every_mapping_and_setting_option_is_honoured_or_a_documented_no_op() {
    let (_dir, server) = super::search::hits_index();
    let mut cases: Vec<(String, Option<Case>)> = Vec::new();
    for (ty, options) in quarry_store::mapping::FIELD_OPTIONS {
        for option in options.iter() {
            cases.push((format!("{ty} field {option}"), field_case(ty, option)));
        }
    }
    for (ty, options) in quarry_store::mapping::MULTI_FIELD_OPTIONS {
        for option in options.iter() {
            cases.push((
                format!("{ty} multi-field {option}"),
                multi_field_case(ty, option),
            ));
        }
    }
    let tables: [(&str, &[&str]); 4] = [
        ("mapping", quarry_store::mapping::MAPPING_KEYS),
        ("source", quarry_store::mapping::SOURCE_KEYS),
        ("create", quarry_server::CREATE_INDEX_KEYS),
        ("setting", quarry_server::INDEX_SETTINGS),
    ];
    for (what, keys) in tables {
        for key in keys {
            cases.push((format!("{what} {key}"), index_case(what, key)));
        }
    }
    let checked = cases.len();
    let (missing, wrong) = walk(cases, |calls| run(&server, calls));
    report(&missing, &wrong, checked);
}
