//! Every other API's URL parameters (`quarry_server::API_PARAMS`; `_search`, `_count` and
//! `_msearch` are search.rs's): documents, bulk, scrolls and points in time, field caps,
//! indices, settings, mappings, aliases, cluster health and `_cat/indices`.
//!
//! Each side of a case is a list of calls run in order (setting up what it needs, such as
//! a fresh index `w`), and the answer compared is the last call's.

use super::*;

/// One call: method, target and body.
pub(super) type Call = (&'static str, String, String);

/// The calls with the parameter, those without it, and what the parameter must do.
pub(super) type Case = (Vec<Call>, Vec<Call>, Expect);

pub(super) fn call(method: &'static str, target: &str, body: &str) -> Call {
    (method, target.to_owned(), body.to_owned())
}

/// Index `name` deleted if there, created anew and holding document `1` (`{"x": 1, "y": 2}`).
pub(super) fn fresh(name: &str) -> Vec<Call> {
    vec![
        call("DELETE", &format!("/{name}?ignore_unavailable=true"), ""),
        call("PUT", &format!("/{name}"), ""),
        call("PUT", &format!("/{name}/_doc/1"), r#"{"x": 1, "y": 2}"#),
    ]
}

/// `calls` after `before`.
pub(super) fn then(mut before: Vec<Call>, calls: &[Call]) -> Vec<Call> {
    before.extend_from_slice(calls);
    before
}

/// The case of one call `method target` with `?{param}` (or `&{param}`) added, and without.
fn one(method: &'static str, target: &str, body: &str, param: &str, expect: Expect) -> Case {
    with_setup(Vec::new(), method, target, body, param, expect)
}

/// As `one`, after the calls of `setup` on each side.
fn with_setup(
    setup: Vec<Call>,
    method: &'static str,
    target: &str,
    body: &str,
    param: &str,
    expect: Expect,
) -> Case {
    let joiner = if target.contains('?') { '&' } else { '?' };
    let with = format!("{target}{joiner}{param}");
    (
        then(setup.clone(), &[call(method, &with, body)]),
        then(setup, &[call(method, target, body)]),
        expect,
    )
}

/// Index-picking parameters on an API at `{expression}{suffix}`: `ignore_unavailable` over a
/// missing name, `allow_no_indices=false` over a pattern that matches nothing,
/// `expand_wildcards=none` over one that matches `hits`.
fn picking(method: &'static str, suffix: &str, body: &str, param: &str) -> Option<Case> {
    let (expression, value) = match param {
        "ignore_unavailable" => ("/hits,nope", "true"),
        "allow_no_indices" => ("/nope*", "false"),
        "expand_wildcards" => ("/hit*", "none"),
        _ => return None,
    };
    Some(one(
        method,
        &format!("{expression}{suffix}"),
        body,
        &format!("{param}={value}"),
        Differs,
    ))
}

/// What every API takes the same way: waits and timeouts a single node never needs.
fn common_no_op(param: &str) -> Option<(&'static str, &'static str)> {
    Some(match param {
        "timeout" | "master_timeout" | "cluster_manager_timeout" => (
            "1s",
            "a wait a single node never has: the request's own timeout bounds it",
        ),
        "wait_for_active_shards" => ("1", "one copy of each index, active once it exists"),
        "routing" => ("r", "one shard per index: nothing to route"),
        "preference" => ("_local", "one copy of each index"),
        "local" => ("true", "one node: its state is the cluster's"),
        "refresh" => ("true", "an acknowledged event is searchable at once"),
        "realtime" => (
            "false",
            "every write is visible at once, to a get as to a search",
        ),
        _ => return None,
    })
}

/// The API's case for `param`, built against `server` where it needs ids first.
fn api_case(server: &Server, api: &str, param: &str) -> Option<Case> {
    let same = |setup: Vec<Call>, method, target: &str, body: &str, value: &str, why| {
        Some(with_setup(
            setup,
            method,
            target,
            body,
            &format!("{param}={value}"),
            Same(why),
        ))
    };
    let update = r#"{"update": {"_index": "w", "_id": "1"}}
{"doc": {"z": 3}}
"#;
    match api {
        "bulk" => match param {
            "durability" => same(
                fresh("w"),
                "POST",
                "/_bulk",
                update,
                "async",
                "when the answer is sent (before the fsync), not what it says",
            ),
            "require_alias" => Some(with_setup(
                fresh("w"),
                "POST",
                "/_bulk",
                update,
                "require_alias=true",
                Differs,
            )),
            "require_data_stream" => same(
                fresh("w"),
                "POST",
                "/_bulk",
                update,
                "false",
                "taken only as false: Quarry has no data streams (true is refused)",
            ),
            "index" => Some(with_setup(
                fresh("w"),
                "POST",
                "/_bulk",
                "{\"index\": {}}\n{\"x\": 5}\n",
                "index=w",
                Differs,
            )),
            "_source" => Some(with_setup(
                fresh("w"),
                "POST",
                "/_bulk",
                update,
                "_source=true",
                Differs,
            )),
            "_source_includes" | "_source_excludes" => Some(with_setup(
                fresh("w"),
                "POST",
                "/_bulk?_source=true",
                update,
                &format!("{param}=x"),
                Differs,
            )),
            _ => common_no_op(param)
                .and_then(|(value, why)| same(fresh("w"), "POST", "/_bulk", update, value, why)),
        },
        "write a document" | "update a document" => {
            let (method, target, body) = match api {
                "write a document" => ("PUT", "/w/_doc/1", r#"{"x": 7}"#),
                _ => ("POST", "/w/_update/1", r#"{"doc": {"z": 3}}"#),
            };
            let differs = |param_text: &str| {
                Some(with_setup(
                    fresh("w"),
                    method,
                    target,
                    body,
                    param_text,
                    Differs,
                ))
            };
            match param {
                // The answer says it: `forced_refresh`.
                "refresh" => differs("refresh=true"),
                "require_alias" => differs("require_alias=true"),
                "op_type" => differs("op_type=create"),
                "if_seq_no" => differs("if_seq_no=99&if_primary_term=1"),
                "if_primary_term" => Some((
                    then(
                        fresh("w"),
                        &[call(
                            method,
                            &format!("{target}?if_seq_no=0&if_primary_term=99"),
                            body,
                        )],
                    ),
                    then(
                        fresh("w"),
                        &[call(
                            method,
                            &format!("{target}?if_seq_no=0&if_primary_term=1"),
                            body,
                        )],
                    ),
                    Differs,
                )),
                "version" => Some((
                    then(
                        fresh("w"),
                        &[call(
                            method,
                            &format!("{target}?version=5&version_type=external"),
                            body,
                        )],
                    ),
                    then(
                        fresh("w"),
                        &[call(
                            method,
                            &format!("{target}?version=6&version_type=external"),
                            body,
                        )],
                    ),
                    Differs,
                )),
                // The document is at version 1: `external` needs a greater one, `external_gte`
                // takes the same.
                "version_type" => Some((
                    then(
                        fresh("w"),
                        &[call(
                            method,
                            &format!("{target}?version=1&version_type=external_gte"),
                            body,
                        )],
                    ),
                    then(
                        fresh("w"),
                        &[call(
                            method,
                            &format!("{target}?version=1&version_type=external"),
                            body,
                        )],
                    ),
                    Differs,
                )),
                "_source" => differs("_source=true"),
                "_source_includes" | "_source_excludes" => Some((
                    then(
                        fresh("w"),
                        &[call(
                            method,
                            &format!("{target}?_source=true&{param}=x"),
                            body,
                        )],
                    ),
                    then(
                        fresh("w"),
                        &[call(method, &format!("{target}?_source=true"), body)],
                    ),
                    Differs,
                )),
                _ => common_no_op(param)
                    .and_then(|(value, why)| same(fresh("w"), method, target, body, value, why)),
            }
        }
        "get a document" | "multi get" => {
            let (method, target, body) = match api {
                "get a document" => ("GET", "/hits/_doc/h0", ""),
                _ => ("POST", "/hits/_mget", r#"{"ids": ["h0", "h1"]}"#),
            };
            let differs = |value: &str| {
                Some(one(
                    method,
                    target,
                    body,
                    &format!("{param}={value}"),
                    Differs,
                ))
            };
            match param {
                "_source" => differs("false"),
                "_source_includes" | "_source_excludes" => differs("k"),
                "stored_fields" => differs("_none_"),
                "docvalue_fields" => differs("n"),
                "version" if api == "get a document" => differs("2"),
                "version" | "seq_no_primary_term" => same(
                    Vec::new(),
                    method,
                    target,
                    body,
                    "true",
                    "a document read by id always shows its version, _seq_no and _primary_term",
                ),
                "version_type" => Some((
                    vec![call(
                        method,
                        &format!("{target}?version=1&version_type=external"),
                        body,
                    )],
                    vec![call(method, &format!("{target}?version=1"), body)],
                    Same("a read with `version` must match it exactly, whatever its type"),
                )),
                _ => common_no_op(param)
                    .and_then(|(value, why)| same(Vec::new(), method, target, body, value, why)),
            }
        }
        "scroll" | "clear scroll" => {
            // Two scrolls opened alike, one for each side: each reads its second page.
            let open = || {
                let (status, answer) =
                    server.request("POST", "/hits/_search?scroll=1m", Some(r#"{"size": 2}"#));
                assert_eq!(status, 200, "{answer}");
                answer["_scroll_id"].as_str().unwrap().to_owned()
            };
            let (first, second) = (open(), open());
            let (method, target) = match api {
                "scroll" => ("POST", "/_search/scroll"),
                _ => ("DELETE", "/_search/scroll"),
            };
            let by_body = |id: &str, extra: &str| {
                call(
                    method,
                    &format!("{target}{extra}"),
                    &json!({"scroll_id": id}).to_string(),
                )
            };
            match param {
                "scroll_id" => Some((
                    vec![call(method, &format!("{target}?scroll_id={first}"), "")],
                    vec![by_body(&second, "")],
                    Same("the id from the URL, as from the body"),
                )),
                "scroll" => Some((
                    vec![by_body(&first, "?scroll=2m")],
                    vec![by_body(&second, "")],
                    Same("how long the scroll is kept: the page is the same"),
                )),
                "rest_total_hits_as_int" => Some((
                    vec![by_body(&first, "?rest_total_hits_as_int=true")],
                    vec![by_body(&second, "")],
                    Differs,
                )),
                _ => None,
            }
        }
        "open point in time" => match param {
            "keep_alive" => Some((
                vec![call("POST", "/hits/_pit?keep_alive=1m", "")],
                vec![call("POST", "/hits/_pit", "")],
                Differs,
            )),
            "preference" => same(
                Vec::new(),
                "POST",
                "/hits/_pit?keep_alive=1m",
                "",
                "_local",
                "one copy of each index",
            ),
            _ => picking("POST", "/_pit?keep_alive=1m", "", param),
        },
        "field_caps" => match param {
            "fields" => Some((
                vec![call("GET", "/hits/_field_caps?fields=k", "")],
                vec![call("GET", "/hits/_field_caps?fields=*", "")],
                Differs,
            )),
            "include_unmapped" => Some(with_setup(
                fresh("w"),
                "GET",
                "/hits,w/_field_caps?fields=*",
                "",
                "include_unmapped=true",
                Differs,
            )),
            _ => picking("GET", "/_field_caps?fields=*", "", param),
        },
        "create index" => {
            let setup = vec![call("DELETE", "/c1?ignore_unavailable=true", "")];
            match param {
                "include_type_name" => same(
                    setup,
                    "PUT",
                    "/c1",
                    "",
                    "false",
                    "types are gone: false is the only reading (true is refused)",
                ),
                _ => common_no_op(param)
                    .and_then(|(value, why)| same(setup, "PUT", "/c1", "", value, why)),
            }
        }
        "update settings" => {
            let body = r#"{"index": {"max_result_window": 200}}"#;
            let setting = call("GET", "/w/_settings?flat_settings=true", "");
            match param {
                "preserve_existing" => Some((
                    then(
                        fresh("w"),
                        &[
                            call(
                                "PUT",
                                "/w/_settings",
                                r#"{"index": {"max_result_window": 100}}"#,
                            ),
                            call("PUT", "/w/_settings?preserve_existing=true", body),
                            setting.clone(),
                        ],
                    ),
                    then(
                        fresh("w"),
                        &[
                            call(
                                "PUT",
                                "/w/_settings",
                                r#"{"index": {"max_result_window": 100}}"#,
                            ),
                            call("PUT", "/w/_settings", body),
                            setting,
                        ],
                    ),
                    Differs,
                )),
                "flat_settings" => same(
                    fresh("w"),
                    "PUT",
                    "/w/_settings",
                    body,
                    "true",
                    "the answer to an update holds no settings to flatten",
                ),
                "ignore_unavailable" | "allow_no_indices" => {
                    let (expression, value) = match param {
                        "ignore_unavailable" => ("/w,nope", "true"),
                        _ => ("/nope*", "false"),
                    };
                    Some(with_setup(
                        fresh("w"),
                        "PUT",
                        &format!("{expression}/_settings"),
                        body,
                        &format!("{param}={value}"),
                        Differs,
                    ))
                }
                // What was changed tells.
                "expand_wildcards" => Some((
                    then(
                        fresh("w"),
                        &[
                            call("PUT", "/w*/_settings?expand_wildcards=none", body),
                            setting.clone(),
                        ],
                    ),
                    then(fresh("w"), &[call("PUT", "/w*/_settings", body), setting]),
                    Differs,
                )),
                _ => common_no_op(param).and_then(|(value, why)| {
                    same(fresh("w"), "PUT", "/w/_settings", body, value, why)
                }),
            }
        }
        "delete index" => match param {
            "ignore_unavailable" => Some(with_setup(
                fresh("w"),
                "DELETE",
                "/w,nope",
                "",
                "ignore_unavailable=true",
                Differs,
            )),
            "allow_no_indices" | "expand_wildcards" => same(
                fresh("w"),
                "DELETE",
                "/w",
                "",
                if param == "allow_no_indices" {
                    "false"
                } else {
                    "none"
                },
                "a deletion names each index (patterns are refused): nothing to expand",
            ),
            _ => common_no_op(param)
                .and_then(|(value, why)| same(fresh("w"), "DELETE", "/w", "", value, why)),
        },
        "index exists" | "get index" | "get settings" | "get mapping" | "refresh" => {
            let (method, suffix) = match api {
                "index exists" => ("HEAD", ""),
                "get index" => ("GET", ""),
                "get settings" => ("GET", "/_settings"),
                "get mapping" => ("GET", "/_mapping"),
                _ => ("POST", "/_refresh"),
            };
            let target = format!("/hits{suffix}");
            match param {
                // `HEAD` of an expression naming no index is 404 whatever it allows.
                "allow_no_indices" if api == "index exists" => same(
                    Vec::new(),
                    method,
                    "/hit*",
                    "",
                    "false",
                    "an expression naming no index is 404 either way",
                ),
                "flat_settings" if api == "get settings" => {
                    Some(one(method, &target, "", "flat_settings=true", Differs))
                }
                "flat_settings" | "include_defaults" => same(
                    Vec::new(),
                    method,
                    &target,
                    "",
                    "true",
                    "Quarry shows every setting an index has: none are defaults apart",
                ),
                "ignore_unavailable" | "allow_no_indices" | "expand_wildcards" => {
                    picking(method, suffix, "", param)
                }
                _ => common_no_op(param)
                    .and_then(|(value, why)| same(Vec::new(), method, &target, "", value, why)),
            }
        }
        "close index" | "open index" => {
            let verb = if api == "close index" {
                "_close"
            } else {
                "_open"
            };
            let before: Vec<Call> = match api {
                "close index" => fresh("w"),
                _ => then(fresh("w"), &[call("POST", "/w/_close", "")]),
            };
            // What the call did: whether `w` can be searched.
            let after = call("POST", "/w/_search", "{}");
            match param {
                "ignore_unavailable" | "allow_no_indices" => {
                    let (expression, value) = match param {
                        "ignore_unavailable" => ("/w,nope", "true"),
                        _ => ("/nope*", "false"),
                    };
                    // The answer of the call itself tells.
                    Some((
                        then(
                            before.clone(),
                            &[call(
                                "POST",
                                &format!("{expression}/{verb}?{param}={value}"),
                                "",
                            )],
                        ),
                        then(before, &[call("POST", &format!("{expression}/{verb}"), "")]),
                        Differs,
                    ))
                }
                "expand_wildcards" => Some((
                    then(
                        before.clone(),
                        &[
                            call("POST", &format!("/w*/{verb}?expand_wildcards=none"), ""),
                            after.clone(),
                        ],
                    ),
                    then(before, &[call("POST", &format!("/w*/{verb}"), ""), after]),
                    Differs,
                )),
                _ => common_no_op(param).and_then(|(value, why)| {
                    same(before, "POST", &format!("/w/{verb}"), "", value, why)
                }),
            }
        }
        "cluster health" => {
            let target = "/_cluster/health";
            match param {
                "level" => Some(one("GET", target, "", "level=indices", Differs)),
                "expand_wildcards" => Some(one(
                    "GET",
                    "/_cluster/health/hit*",
                    "",
                    "expand_wildcards=none",
                    Differs,
                )),
                "wait_for_status" => same(
                    Vec::new(),
                    "GET",
                    target,
                    "",
                    "green",
                    "a single node is green at once: nothing to wait for",
                ),
                "wait_for_nodes" => same(
                    Vec::new(),
                    "GET",
                    target,
                    "",
                    "1",
                    "one node, there at once",
                ),
                "wait_for_events" => same(
                    Vec::new(),
                    "GET",
                    target,
                    "",
                    "languid",
                    "no pending cluster tasks",
                ),
                "wait_for_active_shards" => same(
                    Vec::new(),
                    "GET",
                    target,
                    "",
                    "all",
                    "every index's one shard is active once it exists",
                ),
                "wait_for_no_relocating_shards" | "wait_for_no_initializing_shards" => same(
                    Vec::new(),
                    "GET",
                    target,
                    "",
                    "true",
                    "shards never move or start on one node",
                ),
                _ => common_no_op(param)
                    .and_then(|(value, why)| same(Vec::new(), "GET", target, "", value, why)),
            }
        }
        "cat indices" => match param {
            "format" => Some(one("GET", "/_cat/indices", "", "format=json", Differs)),
            "v" => Some(one("GET", "/_cat/indices", "", "v=true", Differs)),
            "h" => Some(one("GET", "/_cat/indices", "", "h=index", Differs)),
            "expand_wildcards" => Some(one(
                "GET",
                "/_cat/indices/hit*?format=json",
                "",
                "expand_wildcards=none",
                Differs,
            )),
            _ => common_no_op(param)
                .and_then(|(value, why)| same(Vec::new(), "GET", "/_cat/indices", "", value, why)),
        },
        "put alias" | "delete alias" | "update aliases" => {
            let (setup, method, target, body) = match api {
                "put alias" => (fresh("w"), "PUT", "/w/_alias/a1", ""),
                "delete alias" => (
                    then(fresh("w"), &[call("PUT", "/w/_alias/a1", "")]),
                    "DELETE",
                    "/w/_alias/a1",
                    "",
                ),
                _ => (
                    fresh("w"),
                    "POST",
                    "/_aliases",
                    r#"{"actions": [{"add": {"index": "w", "alias": "a1"}}]}"#,
                ),
            };
            common_no_op(param)
                .and_then(|(value, why)| same(setup, method, target, body, value, why))
        }
        "get alias" => {
            let setup = then(fresh("w"), &[call("PUT", "/w/_alias/a1", "")]);
            match param {
                "ignore_unavailable" | "allow_no_indices" | "expand_wildcards" => {
                    let (expression, value) = match param {
                        "ignore_unavailable" => ("/w,nope", "true"),
                        "allow_no_indices" => ("/nope*", "false"),
                        _ => ("/w*", "none"),
                    };
                    Some(with_setup(
                        setup,
                        "GET",
                        &format!("{expression}/_alias"),
                        "",
                        &format!("{param}={value}"),
                        Differs,
                    ))
                }
                _ => common_no_op(param)
                    .and_then(|(value, why)| same(setup, "GET", "/w/_alias", "", value, why)),
            }
        }
        _ => None,
    }
}

/// Runs the calls in order: the status and answer (JSON, or the text as a string) of the
/// last.
pub(super) fn run(server: &Server, calls: &[Call]) -> (u16, Value) {
    let mut last = (0, Value::Null);
    for (method, target, body) in calls {
        let answer = server.send(
            method,
            target,
            &[("Content-Type", "application/json")],
            body.as_bytes(),
        );
        let value = serde_json::from_slice(&answer.body)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&answer.body).into()));
        last = (answer.status, normalized(value));
    }
    last
}

#[test]
fn every_api_parameter_is_honoured_or_a_documented_no_op() {
    let (_dir, server) = super::search::hits_index();
    let walked_elsewhere = ["_search", "_count", "_msearch"];
    let mut cases: Vec<(String, Option<Case>)> = Vec::new();
    for (api, params) in quarry_server::API_PARAMS {
        if walked_elsewhere.contains(api) {
            continue;
        }
        for param in params.iter() {
            cases.push((format!("{api}: {param}"), api_case(&server, api, param)));
        }
    }
    let checked = cases.len();
    let (missing, wrong) = walk(cases, |calls| run(&server, calls));
    report(&missing, &wrong, checked);
    assert!(checked > 100, "{checked}");
}

/// A bulk action's key (`BULK_ACTION_KEYS`): one action line with `meta` on `w`'s document
/// `1` (a second line `source`), with `key` and without, each on a fresh `w`.
fn action_case(key: &str) -> Option<Case> {
    let bulk = |action: &str, meta: Value, source: &str| {
        let line = json!({ action: meta });
        then(
            fresh("w"),
            &[call("POST", "/_bulk", &format!("{line}\n{source}\n"))],
        )
    };
    let (doc, update) = (r#"{"x": 7}"#, r#"{"doc": {"z": 3}}"#);
    // Document `1` of `w` with these keys besides.
    let one = |extra: Value| {
        let mut meta = json!({"_index": "w", "_id": "1"});
        for (k, v) in extra.as_object().unwrap() {
            meta[k] = v.clone();
        }
        meta
    };
    let external = |version: u64, kind: &str| json!({"version": version, "version_type": kind});
    let (action, with, without, source, expect) = match key {
        "_index" => ("index", one(json!({})), json!({"_id": "1"}), doc, Differs),
        "_id" => (
            "index",
            one(json!({})),
            one(json!({"_id": "2"})),
            doc,
            Differs,
        ),
        "require_alias" => (
            "index",
            one(json!({key: true})),
            one(json!({})),
            doc,
            Differs,
        ),
        "if_seq_no" => (
            "index",
            one(json!({"if_seq_no": 99, "if_primary_term": 1})),
            one(json!({})),
            doc,
            Differs,
        ),
        "if_primary_term" => (
            "index",
            one(json!({"if_seq_no": 0, "if_primary_term": 99})),
            one(json!({"if_seq_no": 0, "if_primary_term": 1})),
            doc,
            Differs,
        ),
        "version" => (
            "index",
            one(external(5, "external")),
            one(external(6, "external")),
            doc,
            Differs,
        ),
        // At version 1: `external` needs a greater one, `external_gte` takes the same.
        "version_type" => (
            "index",
            one(external(1, "external_gte")),
            one(external(1, "external")),
            doc,
            Differs,
        ),
        "pipeline" => (
            "index",
            one(json!({key: "_none"})),
            one(json!({})),
            doc,
            Same("Quarry has no ingest pipelines: `_none` asks for none (any other is missing)"),
        ),
        "op_type" => (
            "index",
            one(json!({key: "create"})),
            one(json!({})),
            doc,
            Differs,
        ),
        "_source" => (
            "update",
            one(json!({key: true})),
            one(json!({})),
            update,
            Differs,
        ),
        "routing" => (
            "index",
            one(json!({key: "r"})),
            one(json!({})),
            doc,
            Same("one shard per index: nothing to route"),
        ),
        "_type" => (
            "index",
            one(json!({key: "_doc"})),
            one(json!({})),
            doc,
            Same("types are gone: `_doc` is every document's"),
        ),
        _ => return None,
    };
    Some((
        bulk(action, with, source),
        bulk(action, without, source),
        expect,
    ))
}

/// An update body's key (`UPDATE_BODY_KEYS`): `POST /w/_update/{id}` on a fresh `w`, then
/// the document as stored.
fn update_case(key: &str) -> Option<Case> {
    let side = |id: &str, body: Value| {
        then(
            fresh("w"),
            &[
                call("POST", &format!("/w/_update/{id}"), &body.to_string()),
                call("GET", &format!("/w/_doc/{id}"), ""),
            ],
        )
    };
    // The answer to the update itself.
    let answer = |id: &str, body: Value| {
        then(
            fresh("w"),
            &[call("POST", &format!("/w/_update/{id}"), &body.to_string())],
        )
    };
    let z = json!({"z": 3});
    match key {
        "doc" => Some((
            side("1", json!({"doc": z})),
            side("1", json!({"doc": {"z": 4}})),
            Differs,
        )),
        "upsert" => Some((
            side("2", json!({"doc": z, "upsert": {"u": 1}})),
            side("2", json!({"doc": z})),
            Differs,
        )),
        "doc_as_upsert" => Some((
            side("2", json!({"doc": z, "doc_as_upsert": true})),
            side("2", json!({"doc": z})),
            Differs,
        )),
        "detect_noop" => Some((
            answer("1", json!({"doc": {"x": 1}, "detect_noop": false})),
            answer("1", json!({"doc": {"x": 1}})),
            Differs,
        )),
        "_source" => Some((
            answer("1", json!({"doc": z, "_source": true})),
            answer("1", json!({"doc": z})),
            Differs,
        )),
        "script" | "scripted_upsert" => Some((
            answer("1", json!({"doc": z, key: "ctx._source.z = 5"})),
            answer("1", json!({"doc": z})),
            Refused,
        )),
        _ => None,
    }
}

/// A `_mget` body's key (`doc` false: `MGET_BODY_KEYS`) or a `docs` entry's (`MGET_DOC_KEYS`).
fn mget_case(key: &str, doc: bool) -> Option<Case> {
    let mget = |body: Value| vec![call("POST", "/_mget", &body.to_string())];
    let docs = |with: Value, without: Value, expect| {
        Some((
            mget(json!({"docs": [with]})),
            mget(json!({"docs": [without]})),
            expect,
        ))
    };
    match (key, doc) {
        ("docs", false) => Some((
            mget(json!({"docs": [{"_index": "hits", "_id": "h0"}]})),
            mget(json!({"docs": [{"_index": "hits", "_id": "h1"}]})),
            Differs,
        )),
        ("ids", false) => Some((
            vec![call("POST", "/hits/_mget", r#"{"ids": ["h0"]}"#)],
            vec![call("POST", "/hits/_mget", r#"{"ids": ["h1"]}"#)],
            Differs,
        )),
        ("_index", true) => docs(
            json!({"_index": "hits", "_id": "h0"}),
            json!({"_index": "nope", "_id": "h0"}),
            Differs,
        ),
        ("_id", true) => docs(
            json!({"_index": "hits", "_id": "h0"}),
            json!({"_index": "hits", "_id": "h1"}),
            Differs,
        ),
        ("_source", true) => docs(
            json!({"_index": "hits", "_id": "h0", "_source": false}),
            json!({"_index": "hits", "_id": "h0"}),
            Differs,
        ),
        ("stored_fields", true) => docs(
            json!({"_index": "hits", "_id": "h0", "stored_fields": ["k"]}),
            json!({"_index": "hits", "_id": "h0"}),
            Differs,
        ),
        ("routing", true) => docs(
            json!({"_index": "hits", "_id": "h0", "routing": "r"}),
            json!({"_index": "hits", "_id": "h0"}),
            Same("one shard per index: nothing to route"),
        ),
        _ => None,
    }
}

#[test]
fn every_document_body_key_is_honoured_or_a_documented_no_op() {
    let (_dir, server) = super::search::hits_index();
    let mut cases: Vec<(String, Option<Case>)> = Vec::new();
    for key in quarry_server::BULK_ACTION_KEYS {
        cases.push((format!("bulk action {key}"), action_case(key)));
    }
    for key in quarry_server::UPDATE_BODY_KEYS {
        cases.push((format!("update body {key}"), update_case(key)));
    }
    for key in quarry_server::MGET_BODY_KEYS {
        cases.push((format!("_mget body {key}"), mget_case(key, false)));
    }
    for key in quarry_server::MGET_DOC_KEYS {
        cases.push((format!("_mget docs[] {key}"), mget_case(key, true)));
    }
    for key in quarry_server::COUNT_BODY_KEYS {
        let count = |body: &str| vec![call("POST", "/hits/_count", body)];
        let case = (key == &"query").then(|| {
            (
                count(r#"{"query": {"term": {"k": "a"}}}"#),
                count("{}"),
                Differs,
            )
        });
        cases.push((format!("_count body {key}"), case));
    }
    let checked = cases.len();
    let (missing, wrong) = walk(cases, |calls| run(&server, calls));
    report(&missing, &wrong, checked);
}
