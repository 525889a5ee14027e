//! `_search` itself: every body key (`SEARCH_BODY_OPTIONS`), URL parameter (`SEARCH_PARAMS`,
//! and `NO_OP_PARAMS`, which every endpoint takes), sort key option (`SORT_OPTIONS`),
//! `highlight` option (`HIGHLIGHT_OPTIONS`, `HIGHLIGHT_FIELD_OPTIONS`) and suggester option
//! (`SUGGEST_OPTIONS`).

use super::*;

/// A request: its target (path and query string) and body.
type Request = (String, Value);

/// The request with the option, the one without it, and what the option must do.
type Case = (Request, Request, Expect);

/// The five words the term and phrase suggesters choose from, each in this many events'
/// `t`: `quick` once, `quack` 3 times, ...
const WORDS: [(&str, usize); 5] = [
    ("quick", 1),
    ("quack", 3),
    ("quirk", 2),
    ("stick", 6),
    ("brick", 4),
];

/// A server with index `hits`: one event per word of `WORDS` (`"{word} brown fox"`), then
/// one with a long `t` holding `brown` three times far apart.
pub(super) fn hits_index() -> (tempfile::TempDir, Server) {
    let words = WORDS
        .iter()
        .flat_map(|(word, count)| std::iter::repeat_n(*word, *count));
    let mut events: Vec<Value> = words
        .enumerate()
        .map(|(i, word)| {
            let (k, c) = (
                ["a", "b", "c"][i % 3],
                ["quarry", "quarry", "quartz", "queue"][i % 4],
            );
            json!({
                "@timestamp": (T0 + i as i64 * 3600) * 1000,
                "t": format!("{word} brown fox"),
                "t2": if i % 2 == 0 { "brown bear" } else { "grizzly" },
                "k": k,
                "n": i * 10,
                "c": c,
                "c2": if i % 2 == 0 { "rock" } else { "stone" },
            })
        })
        .collect();
    let long = format!(
        "brown {} brown {} brown end",
        "lorem ".repeat(30),
        "ipsum ".repeat(30)
    );
    events.push(json!({"@timestamp": T0 * 1000 - 1000, "t": long, "k": "d", "n": 500}));
    let mapping = json!({
        "t": {"type": "text"}, "t2": {"type": "text"}, "k": {"type": "keyword"},
        "n": {"type": "long"}, "c": {"type": "completion"}, "c2": {"type": "completion"},
    });
    loaded("hits", mapping, events, "h")
}

/// `body` at `/hits/_search`.
fn at_hits(body: Value) -> Request {
    ("/hits/_search".to_owned(), body)
}

/// `{}` at `/hits/_search?{query}`.
fn with_params(query: &str) -> Request {
    (format!("/hits/_search?{query}"), json!({}))
}

fn brown() -> Value {
    json!({"match": {"t": "brown"}})
}

/// The two bodies, each at `/hits/_search`.
fn bodies(with: Value, without: Value, expect: Expect) -> Option<Case> {
    Some((at_hits(with), at_hits(without), expect))
}

fn body_case(server: &Server, key: &str) -> Option<Case> {
    let asks_nothing = "the value that asks for nothing; any other is refused (REFUSED_VALUES)";
    let max = json!({"m": {"max": {"field": "n"}}});
    match key {
        "query" => bodies(json!({"query": {"term": {"k": "a"}}}), json!({}), Differs),
        "size" => bodies(json!({"size": 2}), json!({}), Differs),
        "from" => bodies(json!({"from": 2}), json!({}), Differs),
        "sort" => bodies(json!({"sort": [{"n": "asc"}]}), json!({}), Differs),
        "search_after" => bodies(
            json!({"sort": [{"n": "asc"}], "search_after": [30]}),
            json!({"sort": [{"n": "asc"}]}),
            Differs,
        ),
        "indices_boost" => bodies(
            json!({"query": brown(), "indices_boost": [{"hits": 2.0}]}),
            json!({"query": brown()}),
            Differs,
        ),
        // A point in time keeps answering from its snapshot: an event written after it
        // was opened is not in its answer.
        "pit" => {
            let write = |id: &str| {
                let (status, answer) = server.request(
                    "PUT",
                    &format!("/later/_doc/{id}"),
                    Some(r#"{"@timestamp": 1767571200000, "t": "later"}"#),
                );
                assert!(status < 300, "{answer}");
            };
            write("l1");
            let (status, answer) = server.request("POST", "/later/_pit?keep_alive=1m", None);
            assert_eq!(status, 200, "{answer}");
            write("l2");
            let id = answer["id"].as_str().unwrap().to_owned();
            Some((
                ("/_search".to_owned(), json!({"pit": {"id": id}})),
                ("/later/_search".to_owned(), json!({})),
                Differs,
            ))
        }
        "track_total_hits" => bodies(json!({"track_total_hits": 3}), json!({}), Differs),
        "aggs" | "aggregations" => {
            bodies(json!({"size": 0, key: max}), json!({"size": 0}), Differs)
        }
        "collapse" => bodies(json!({"collapse": {"field": "k"}}), json!({}), Differs),
        "suggest" => bodies(
            json!({"suggest": {"s": {"text": "quicke", "term": {"field": "t"}}}}),
            json!({}),
            Differs,
        ),
        "slice" => Some((
            (
                "/hits/_search?scroll=1m".to_owned(),
                json!({"slice": {"id": 0, "max": 2}}),
            ),
            ("/hits/_search?scroll=1m".to_owned(), json!({})),
            Differs,
        )),
        "_source" => bodies(json!({"_source": false}), json!({}), Differs),
        "version" | "seq_no_primary_term" => bodies(json!({key: true}), json!({}), Differs),
        "fields" => bodies(json!({"fields": ["k"]}), json!({}), Differs),
        "docvalue_fields" => bodies(json!({"docvalue_fields": ["n"]}), json!({}), Differs),
        "stored_fields" => bodies(json!({"stored_fields": "_none_"}), json!({}), Differs),
        "highlight" => bodies(
            json!({"query": brown(), "highlight": {"fields": {"t": {}}}}),
            json!({"query": brown()}),
            Differs,
        ),
        "timeout" => bodies(
            json!({"timeout": "1s"}),
            json!({}),
            Same("Quarry's own request timeout bounds every search; a shard's cannot change an answer over one index"),
        ),
        "explain" | "profile" | "track_scores" => {
            bodies(json!({key: false}), json!({}), Same(asks_nothing))
        }
        "runtime_mappings" | "script_fields" => {
            bodies(json!({key: {}}), json!({}), Same(asks_nothing))
        }
        "stats" => bodies(json!({key: []}), json!({}), Same(asks_nothing)),
        "rescore" => bodies(
            json!({"rescore": {"window_size": 10, "query": {"rescore_query": {"match_all": {}}}}}),
            json!({}),
            Refused,
        ),
        _ => None,
    }
}

/// Values of keys taken only at the value that asks for nothing: each must be refused.
const REFUSED_VALUES: &[(&str, &str)] = &[
    ("explain", "true"),
    ("profile", "true"),
    ("track_scores", "true"),
    ("runtime_mappings", r#"{"x": {"type": "long"}}"#),
    ("script_fields", r#"{"x": {"script": "1"}}"#),
    ("stats", r#"["group"]"#),
];

fn param_case(param: &str) -> Option<Case> {
    let one_index = "one index is one shard: nothing to steer, nothing to merge";
    let params =
        |with: &str, without: &str, expect| Some((with_params(with), with_params(without), expect));
    let at = |with: &str, without: &str| {
        Some((
            (with.to_owned(), json!({})),
            (without.to_owned(), json!({})),
            Differs,
        ))
    };
    let same = |value: &str, why| {
        Some((
            with_params(&format!("{param}={value}")),
            with_params(""),
            Same(why),
        ))
    };
    match param {
        "q" => params("q=k:a", "", Differs),
        "df" => params("q=brown&df=t2", "q=brown&df=t", Differs),
        "default_operator" => params(
            "q=quack%20bear&default_operator=AND",
            "q=quack%20bear",
            Differs,
        ),
        "analyze_wildcard" => params(
            "q=t:QUA*&analyze_wildcard=true",
            "q=t:QUA*",
            Same("Quarry lowercases a wildcard's text as the analyzer would, either way"),
        ),
        "lenient" => params("q=n:abc&lenient=true", "q=n:abc", Differs),
        "size" => params("size=2", "", Differs),
        "from" => params("from=2", "", Differs),
        "track_total_hits" => params("track_total_hits=3", "", Differs),
        "rest_total_hits_as_int" => params("rest_total_hits_as_int=true", "", Differs),
        "search_type" => same(
            "dfs_query_then_fetch",
            "one index per tenant: every search scores with the whole index's statistics",
        ),
        "preference" => same("_local", "one copy of each index"),
        "request_cache" => same("false", "a cache never changes an answer"),
        "batched_reduce_size" | "max_concurrent_shard_requests" | "pre_filter_shard_size" => {
            same("2", one_index)
        }
        "ccs_minimize_roundtrips" => same("false", "no remote clusters"),
        "allow_partial_search_results" => same(
            "false",
            "with no damaged block the answer is whole (with one, the search is an error: \
             tests/es_api.rs)",
        ),
        "ignore_unavailable" => at(
            "/hits,nope/_search?ignore_unavailable=true",
            "/hits,nope/_search",
        ),
        "allow_no_indices" => at("/nope*/_search?allow_no_indices=false", "/nope*/_search"),
        "expand_wildcards" => at("/hit*/_search?expand_wildcards=none", "/hit*/_search"),
        "ignore_throttled" => same("false", "Quarry has no frozen indices"),
        "timeout" => same("1s", "Quarry's own request timeout bounds every search"),
        "scroll" => params("scroll=1m", "", Differs),
        "typed_keys" => Some((
            (
                "/hits/_search?typed_keys=true".to_owned(),
                json!({"size": 0, "aggs": {"m": {"max": {"field": "n"}}}}),
            ),
            at_hits(json!({"size": 0, "aggs": {"m": {"max": {"field": "n"}}}})),
            Differs,
        )),
        "sort" => params("sort=n:asc", "", Differs),
        "_source" => params("_source=false", "", Differs),
        "_source_includes" | "_source_excludes" => params(&format!("{param}=k"), "", Differs),
        "version" | "seq_no_primary_term" => params(&format!("{param}=true"), "", Differs),
        "stored_fields" => params("stored_fields=_none_", "", Differs),
        "docvalue_fields" => params("docvalue_fields=n", "", Differs),
        // Every endpoint's.
        "pretty" | "human" => same("true", "formatting: the same JSON"),
        "error_trace" => same(
            "true",
            "adds a Java stack trace to errors, which Quarry has not",
        ),
        "master_timeout" | "cluster_manager_timeout" => same(
            "1s",
            "bounds a wait for a cluster's manager that one node never has",
        ),
        _ => None,
    }
}

fn sort_case(option: &str) -> Option<Case> {
    let sorted = |keys: Value| at_hits(json!({"sort": keys}));
    match option {
        "order" => Some((
            sorted(json!([{"n": {"order": "asc"}}])),
            sorted(json!([{"n": {"order": "desc"}}])),
            Differs,
        )),
        "unmapped_type" => Some((
            sorted(json!([{"zz": {"unmapped_type": "long"}}, {"n": "asc"}])),
            sorted(json!([{"zz": {}}, {"n": "asc"}])),
            Same("a field no event has sorts nothing either way"),
        )),
        "missing" => Some((
            sorted(json!([{"n": {"missing": "_last"}}])),
            sorted(json!([{"n": {}}])),
            Same("events without the field sort last either way (`_first` is refused)"),
        )),
        _ => None,
    }
}

/// `highlight` options (`field` false) and a highlighted field's (`field` true).
fn highlight_case(option: &str, field: bool) -> Option<Case> {
    // Every hit, the long one too.
    let search =
        |highlight: Value| at_hits(json!({"size": 20, "query": brown(), "highlight": highlight}));
    let pair = |extra: Value, base: Value| {
        let mut with = base.clone();
        for (k, v) in extra.as_object().unwrap() {
            with[k] = v.clone();
        }
        match field {
            true => (
                search(json!({"fields": {"t": with}})),
                search(json!({"fields": {"t": base}})),
            ),
            false => {
                let (mut with, mut base) = (with, base);
                with["fields"] = json!({"t": {}});
                base["fields"] = json!({"t": {}});
                (search(with), search(base))
            }
        }
    };
    let differs = |(with, without)| Some((with, without, Differs));
    let bounded = json!({"max_analyzer_offset": 10});
    match (option, field) {
        ("fields", false) => Some((
            search(json!({"fields": {"t": {}}})),
            search(json!({"fields": {"t2": {}}})),
            Differs,
        )),
        ("type", _) => differs(pair(json!({"type": "plain"}), bounded)),
        ("max_analyzer_offset", _) => differs(pair(bounded, json!({}))),
        ("require_field_match", false) => Some((
            search(json!({"require_field_match": false, "fields": {"t": {}, "t2": {}}})),
            search(json!({"fields": {"t": {}, "t2": {}}})),
            Differs,
        )),
        ("pre_tags", false) => differs(pair(json!({"pre_tags": ["<b>"]}), json!({}))),
        ("post_tags", false) => differs(pair(json!({"post_tags": ["</b>"]}), json!({}))),
        ("fragment_size", false) => differs(pair(json!({"fragment_size": 20}), json!({}))),
        ("number_of_fragments", false) => {
            differs(pair(json!({"number_of_fragments": 1}), json!({})))
        }
        ("highlight_query", true) => differs(pair(
            json!({"highlight_query": {"match": {"t": "fox"}}}),
            json!({}),
        )),
        _ => None,
    }
}

/// A suggester option: `kind` is `term`, `phrase`, `completion`, or `direct_generator` (a
/// phrase suggester's).
fn suggest_case(kind: &str, option: &str) -> Option<Case> {
    let suggest = |suggestion: Value| at_hits(json!({"size": 0, "suggest": {"s": suggestion}}));
    // The suggestion of `text` with `options` added to `base`, and without.
    let pair = |text: &str, base: Value, extra: Value| {
        let mut with = base.clone();
        for (k, v) in extra.as_object().unwrap() {
            with[k] = v.clone();
        }
        let wrap = |options: Value| match kind {
            "completion" => json!({"prefix": text, "completion": options}),
            // A real word is corrected when a likelier one is near.
            "direct_generator" => json!({"text": text, "phrase": {"field": "t",
                "real_word_error_likelihood": 0.2, "direct_generator": [options]}}),
            _ => json!({"text": text, kind: options}),
        };
        (suggest(wrap(with)), suggest(wrap(base)))
    };
    let differs = |(with, without)| Some((with, without, Differs));
    let same = |(with, without), why| Some((with, without, Same(why)));
    let t = || json!({"field": "t"});
    let always = || json!({"field": "t", "suggest_mode": "always"});
    let one_shard = "one index is one shard, which has every term";
    match (kind, option) {
        // `field` of a direct generator must be the suggester's own.
        ("direct_generator", "field") => Some((
            suggest(json!({"text": "quicke brown fox",
                           "phrase": {"field": "t", "direct_generator": [{"field": "t"}]}})),
            suggest(json!({"text": "quicke brown fox", "phrase": {"field": "t"}})),
            Same("the generator's field is the suggester's own (another is refused)"),
        )),
        ("completion", "field") => {
            differs(pair("qu", json!({"field": "c2"}), json!({"field": "c"})))
        }
        ("completion", "size") => differs(pair("qu", json!({"field": "c"}), json!({"size": 1}))),
        ("completion", "skip_duplicates") => differs(pair(
            "qu",
            json!({"field": "c"}),
            json!({"skip_duplicates": true}),
        )),
        (_, "field") => differs(pair("quicke brown fox", json!({"field": "t2"}), t())),
        ("phrase", "size") => differs(pair("quicke brown fox", t(), json!({"size": 1}))),
        ("phrase", "shard_size") | ("term" | "direct_generator", "max_inspections") => same(
            pair("quicke brown fox", t(), json!({option: 10})),
            "candidates are every term within the edits, and one shard has every term",
        ),
        ("term", "shard_size") => same(pair("quicke", t(), json!({option: 10})), one_shard),
        ("phrase", "direct_generator") => differs(pair(
            "quicke brown fox",
            t(),
            json!({"direct_generator": [{"field": "t", "max_edits": 1}]}),
        )),
        ("phrase", "real_word_error_likelihood") => differs(pair(
            "quicke brown fox",
            t(),
            json!({"real_word_error_likelihood": 0.5}),
        )),
        ("phrase", "max_errors") => {
            differs(pair("quicke browm fox", t(), json!({"max_errors": 2})))
        }
        ("phrase", "confidence") => {
            differs(pair("quicke brown fox", t(), json!({"confidence": 10})))
        }
        ("phrase", "highlight") => differs(pair(
            "quicke brown fox",
            t(),
            json!({"highlight": {"pre_tag": "<b>", "post_tag": "</b>"}}),
        )),
        ("phrase", "gram_size" | "separator" | "force_unigrams") => {
            let value = match option {
                "gram_size" => json!(1),
                "separator" => json!(" "),
                _ => json!(true),
            };
            same(
                pair("quicke brown fox", t(), json!({option: value})),
                "Quarry's model is over single words: the only value taken (others are refused)",
            )
        }
        ("phrase", "token_limit") => same(
            pair("quicke brown fox", t(), json!({"token_limit": 10})),
            "the text's words are bounded anyway by the error budget's rewrites",
        ),
        // The term suggester's options, and a phrase's direct generator's.
        ("direct_generator", "size") => differs(pair("quicke brown fox", t(), json!({"size": 1}))),
        (_, "size") => differs(pair("quick", always(), json!({"size": 1}))),
        ("term", "suggest_mode") => differs(pair("quick", t(), json!({"suggest_mode": "always"}))),
        // A phrase generator suggests for every word unless told `missing`.
        ("direct_generator", "suggest_mode") => differs(pair(
            "quick brown fox",
            t(),
            json!({"suggest_mode": "missing"}),
        )),
        ("term", "sort") => differs(pair("quicke", t(), json!({"sort": "frequency"}))),
        (_, "max_edits") => differs(pair("quicke", t(), json!({"max_edits": 1}))),
        (_, "prefix_length" | "prefix_len") => differs(pair("qtick", always(), json!({option: 0}))),
        (_, "min_word_length" | "min_word_len") => {
            differs(pair("quicke", always(), json!({option: 7})))
        }
        (_, "min_doc_freq") => differs(pair("quicke", t(), json!({"min_doc_freq": 2}))),
        // A word in more than 1% of the events (the default) is not corrected.
        ("direct_generator", "max_term_freq") => {
            differs(pair("quirk", t(), json!({"max_term_freq": 5})))
        }
        (_, "max_term_freq") => differs(pair("quack", always(), json!({"max_term_freq": 5}))),
        ("term", "accuracy") => differs(pair("quicke", t(), json!({"accuracy": 0.9}))),
        ("term", "string_distance") => same(
            pair("quicke", t(), json!({"string_distance": "internal"})),
            "Quarry's only string distance (any other is refused)",
        ),
        _ => None,
    }
}

/// Sends `request`: its body as JSON, or a list of lines as NDJSON (`_msearch`).
fn run(server: &Server, (target, body): &Request) -> (u16, Value) {
    let text = match body {
        Value::Array(lines) => lines.iter().map(|line| format!("{line}\n")).collect(),
        one => one.to_string(),
    };
    let (status, answer) = server.request("POST", target, Some(&text));
    (status, normalized(answer))
}

#[test]
fn every_search_option_is_honoured_or_a_documented_no_op() {
    let (_dir, server) = hits_index();
    let mut cases: Vec<(String, Option<Case>)> = Vec::new();
    for key in quarry_server::SEARCH_BODY_OPTIONS {
        cases.push((format!("body {key}"), body_case(&server, key)));
    }
    for param in quarry_server::SEARCH_PARAMS
        .iter()
        .chain(quarry_server::NO_OP_PARAMS)
    {
        cases.push((format!("URL {param}"), param_case(param)));
    }
    for option in quarry_server::SORT_OPTIONS {
        cases.push((format!("sort {option}"), sort_case(option)));
    }
    for option in quarry_server::HIGHLIGHT_OPTIONS {
        cases.push((format!("highlight {option}"), highlight_case(option, false)));
    }
    for option in quarry_server::HIGHLIGHT_FIELD_OPTIONS {
        cases.push((
            format!("highlight.fields.t {option}"),
            highlight_case(option, true),
        ));
    }
    for (kind, options) in quarry_server::SUGGEST_OPTIONS {
        for option in options.iter() {
            cases.push((
                format!("suggest {kind} {option}"),
                suggest_case(kind, option),
            ));
        }
    }

    let checked = cases.len();
    let (missing, mut wrong) = walk(cases, |calls| run(&server, calls));
    for (key, value) in REFUSED_VALUES {
        let body = format!("{{\"{key}\": {value}}}");
        let (status, answer) = server.request("POST", "/hits/_search", Some(&body));
        if status != 400 || !answer.to_string().contains(key) {
            wrong.push(format!(
                "{body}: expected a 400 naming {key}, got {status} {answer}"
            ));
        }
    }
    let (status, answer) = run(
        &server,
        &at_hits(json!({"sort": [{"n": {"missing": "_first"}}]})),
    );
    if status != 400 || !answer.to_string().contains("missing") {
        wrong.push(format!(
            "sort missing _first: expected a 400, got {status} {answer}"
        ));
    }
    report(&missing, &wrong, checked);
    assert!(checked > 90, "{checked}");
}

/// `_count`'s URL parameters (`COUNT_PARAMS`).
fn count_case(param: &str) -> Option<Case> {
    let count = |target: &str| (target.to_owned(), json!({}));
    let differs = |with: &str, without: &str| Some((count(with), count(without), Differs));
    let same = |value: &str, why| {
        Some((
            count(&format!("/hits/_count?{param}={value}")),
            count("/hits/_count"),
            Same(why),
        ))
    };
    match param {
        "q" => differs("/hits/_count?q=k:a", "/hits/_count"),
        "df" => differs("/hits/_count?q=brown&df=t2", "/hits/_count?q=brown&df=t"),
        "default_operator" => differs(
            "/hits/_count?q=quack%20bear&default_operator=AND",
            "/hits/_count?q=quack%20bear",
        ),
        "analyze_wildcard" => Some((
            count("/hits/_count?q=t:QUA*&analyze_wildcard=true"),
            count("/hits/_count?q=t:QUA*"),
            Same("Quarry lowercases a wildcard's text as the analyzer would, either way"),
        )),
        "lenient" => differs("/hits/_count?q=n:abc&lenient=true", "/hits/_count?q=n:abc"),
        "ignore_unavailable" => differs(
            "/hits,nope/_count?ignore_unavailable=true",
            "/hits,nope/_count",
        ),
        "allow_no_indices" => differs("/nope*/_count?allow_no_indices=false", "/nope*/_count"),
        "expand_wildcards" => differs("/hit*/_count?expand_wildcards=none", "/hit*/_count"),
        "preference" => same("_local", "one copy of each index"),
        "ignore_throttled" => same("false", "Quarry has no frozen indices"),
        _ => None,
    }
}

/// `_msearch`'s URL parameters (`MSEARCH_PARAMS`, `header` false) and header keys
/// (`MSEARCH_HEADER_KEYS`, `header` true).
fn msearch_case(key: &str, header: bool) -> Option<Case> {
    let max = json!({"size": 0, "aggs": {"m": {"max": {"field": "n"}}}});
    // One search of `body` under `header`, at `/_msearch?{query}`.
    let one = |query: &str, header: Value, body: &Value| {
        (format!("/_msearch?{query}"), json!([header, body]))
    };
    let pair = |with: Request, without: Request, expect| Some((with, without, expect));
    let url = |value: &str, index: &str, body: &Value, expect| {
        let header = json!({"index": index});
        pair(
            one(&format!("{key}={value}"), header.clone(), body),
            one("", header, body),
            expect,
        )
    };
    let in_header = |value: Value, index: &str, expect| {
        let mut with = json!({"index": index});
        with[key] = value;
        pair(
            one("", with, &json!({})),
            one("", json!({"index": index}), &json!({})),
            expect,
        )
    };
    let one_index = "one index is one shard: nothing to steer";
    match (key, header) {
        ("rest_total_hits_as_int", false) => url("true", "hits", &json!({}), Differs),
        ("typed_keys", false) => url("true", "hits", &max, Differs),
        ("search_type", _) if !header => url(
            "dfs_query_then_fetch",
            "hits",
            &json!({}),
            Same("one index per tenant: every search scores with the whole index's statistics"),
        ),
        ("search_type", _) => in_header(
            json!("dfs_query_then_fetch"),
            "hits",
            Same("one index per tenant: every search scores with the whole index's statistics"),
        ),
        ("max_concurrent_searches", false) => url(
            "1",
            "hits",
            &json!({}),
            Same("the searches are run in turn"),
        ),
        ("max_concurrent_shard_requests" | "pre_filter_shard_size", false) => {
            url("1", "hits", &json!({}), Same(one_index))
        }
        ("ccs_minimize_roundtrips", false) => {
            url("false", "hits", &json!({}), Same("no remote clusters"))
        }
        ("ignore_unavailable", false) => url("true", "hits,nope", &json!({}), Differs),
        ("allow_no_indices", false) => url("false", "nope*", &json!({}), Differs),
        ("expand_wildcards", false) => url("none", "hit*", &json!({}), Differs),
        ("index", true) => pair(
            one("", json!({"index": "hits"}), &json!({})),
            one("", json!({"index": "nope"}), &json!({})),
            Differs,
        ),
        ("ignore_unavailable", true) => in_header(json!(true), "hits,nope", Differs),
        ("allow_no_indices", true) => in_header(json!(false), "nope*", Differs),
        ("expand_wildcards", true) => in_header(json!("none"), "hit*", Differs),
        ("preference", true) => in_header(json!("_local"), "hits", Same("one copy of each index")),
        ("request_cache", true) => {
            in_header(json!(true), "hits", Same("a cache never changes an answer"))
        }
        _ => None,
    }
}

#[test]
fn every_count_and_msearch_option_is_honoured_or_a_documented_no_op() {
    let (_dir, server) = hits_index();
    let mut cases: Vec<(String, Option<Case>)> = Vec::new();
    for param in quarry_server::COUNT_PARAMS {
        cases.push((format!("_count URL {param}"), count_case(param)));
    }
    for param in quarry_server::MSEARCH_PARAMS {
        cases.push((format!("_msearch URL {param}"), msearch_case(param, false)));
    }
    for key in quarry_server::MSEARCH_HEADER_KEYS {
        cases.push((format!("_msearch header {key}"), msearch_case(key, true)));
    }
    let checked = cases.len();
    let (missing, wrong) = walk(cases, |calls| run(&server, calls));
    report(&missing, &wrong, checked);
}

/// An `intervals` rule's option (`quarry_query::dsl::INTERVALS_RULE_OPTIONS`), over `t`'s
/// `"{word} brown fox"`.
fn intervals_case(kind: &str, option: &str) -> Option<Case> {
    let search =
        |rule: Value| at_hits(json!({"size": 20, "query": {"intervals": {"t": { kind: rule }}}}));
    let pair = |base: Value, extra: Value, expect| {
        let mut with = base.clone();
        for (k, v) in extra.as_object().unwrap() {
            with[k] = v.clone();
        }
        Some((search(with), search(base), expect))
    };
    let words = |text: &str| json!({"match": {"query": text}});
    let both = |a: &str, b: &str| json!({"intervals": [words(a), words(b)]});
    let not_brown = json!({"filter": {"not_containing": words("brown")}});
    match (kind, option) {
        ("match", "query") => Some((
            search(json!({"query": "quick fox"})),
            search(json!({"query": "quack fox"})),
            Differs,
        )),
        ("match", "max_gaps") => pair(
            json!({"query": "quick fox"}),
            json!({"max_gaps": 0}),
            Differs,
        ),
        ("match" | "all_of", "ordered") => {
            let base = match kind {
                "match" => json!({"query": "fox quick"}),
                _ => both("fox", "quick"),
            };
            pair(base, json!({"ordered": true}), Differs)
        }
        ("match" | "all_of", "mode") => {
            let base = match kind {
                "match" => json!({"query": "fox quick"}),
                _ => both("fox", "quick"),
            };
            pair(base, json!({"mode": "ordered"}), Differs)
        }
        // `the` is a stop word: the stop analyzer drops it, so only `fox` is looked for.
        ("match", "analyzer") => pair(
            json!({"query": "the fox"}),
            json!({"analyzer": "stop"}),
            Differs,
        ),
        ("match", "filter") => pair(json!({"query": "quick fox"}), not_brown, Differs),
        ("all_of", "intervals") => Some((
            search(both("quick", "fox")),
            search(both("quack", "fox")),
            Differs,
        )),
        ("all_of", "max_gaps") => pair(both("quick", "fox"), json!({"max_gaps": 0}), Differs),
        ("all_of", "filter") => pair(both("quick", "fox"), not_brown, Differs),
        // `quick` is before `brown`, never after it.
        ("any_of", "filter") => pair(
            json!({"intervals": [words("quick"), words("quack")]}),
            json!({"filter": {"after": words("brown")}}),
            Differs,
        ),
        ("any_of", "intervals") => Some((
            search(json!({"intervals": [words("quick")]})),
            search(json!({"intervals": [words("quack")]})),
            Differs,
        )),
        ("prefix", "prefix") => Some((
            search(json!({"prefix": "qui"})),
            search(json!({"prefix": "qua"})),
            Differs,
        )),
        ("wildcard" | "regexp", "pattern") => Some((
            search(json!({"pattern": if kind == "wildcard" { "qu?ck" } else { "qu.ck" }})),
            search(json!({"pattern": if kind == "wildcard" { "st*" } else { "st.*" }})),
            Differs,
        )),
        ("regexp", "case_insensitive") => pair(
            json!({"pattern": "QU.CK"}),
            json!({"case_insensitive": true}),
            Differs,
        ),
        ("regexp", "flags") => pair(
            json!({"pattern": "qu.ck"}),
            json!({"flags": "ALL"}),
            Same("ALL is the only flags value taken (others are refused)"),
        ),
        ("fuzzy", "term") => Some((
            search(json!({"term": "quikc"})),
            search(json!({"term": "zzzzz"})),
            Differs,
        )),
        ("fuzzy", "fuzziness") => pair(json!({"term": "quikc"}), json!({"fuzziness": 0}), Differs),
        ("fuzzy", "prefix_length") => pair(
            json!({"term": "wuick"}),
            json!({"prefix_length": 1}),
            Differs,
        ),
        ("fuzzy", "transpositions") => pair(
            json!({"term": "quikc"}),
            json!({"transpositions": true}),
            Same("true is the only value taken: a swap is one edit (false is refused)"),
        ),
        _ => None,
    }
}

#[test]
fn every_intervals_rule_option_is_honoured_or_a_documented_no_op() {
    let (_dir, server) = hits_index();
    let mut cases: Vec<(String, Option<Case>)> = Vec::new();
    for (kind, options) in quarry_query::dsl::INTERVALS_RULE_OPTIONS {
        for option in options.iter() {
            cases.push((
                format!("intervals {kind} {option}"),
                intervals_case(kind, option),
            ));
        }
    }
    let checked = cases.len();
    let (missing, wrong) = walk(cases, |calls| run(&server, calls));
    report(&missing, &wrong, checked);
}
