//! Elasticsearch's search API: `GET|POST /{index}/_search`, `/_msearch` and `/_count`, where
//! `{index}` is an index expression over tenants (`logs-*`, `a,b`; none: every index the key
//! may read), answered from one snapshot (several indices: one `Searcher::union`).
//!
//! The request's `query` is compiled by `quarry_query::dsl` into the query language's tree,
//! `q` as Lucene's classic parser reads it. `size`, `from` (from + size ≤ 10,000,
//! Elasticsearch's `max_result_window`), one `sort` key (`_doc` alone is index order), and
//! `search_after`. A hit's `sort` values are Elasticsearch's, one per key: the time in
//! milliseconds or the field's value, and for a `_doc` or `_shard_doc` key (implied by a point
//! in time, as in Elasticsearch) Quarry's cursor, which pages exactly; `search_after` with
//! values alone continues strictly after them (ties with the last value are skipped, as in
//! Elasticsearch without a tiebreaker). Hits are shown as `es_hits` says; scrolls and points
//! in time are `es_scroll`'s.
//! Aggregations are `es_aggs`': translated into Quarry's aggregation tree and evaluated in
//! the same pass as the search. Every option of a body, URL or aggregation that Quarry does
//! not honour is refused by name (`EsParams::check`, `es_aggs::check_options`).

use crate::es_aggs;
use crate::es_api::{body_object, es_error, es_response, EsParams};
use crate::es_hits::{HitView, QueryWords};
use crate::es_indices;
use crate::es_scroll;
use crate::tenants::SearchLimits;
use crate::{event_json, ApiError, AppState};
use axum::body::Bytes;
use axum::extract::{Path as UrlPath, RawQuery, State};
use axum::http::HeaderMap;
use axum::response::Response;
use quarry_query::dsl::{self, DslError};
use quarry_query::field_sort::{FieldSort, SortCursor, SortKey, SortSpec, SortValue};
use quarry_query::parser::Ast;
use quarry_query::time::now_nanos;
use quarry_query::Cursor;
use quarry_query::{SearchRequest, SearchResponse, Searcher, SortOrder, Warning};
use quarry_store::mapping::MultiField;
use serde_json::{json, Map, Value as JsonValue};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Elasticsearch's `index.max_result_window`: the native API's bound too.
const MAX_RESULT_WINDOW: usize = crate::MAX_SEARCH_LIMIT;

pub(crate) async fn search(
    State(state): State<Arc<AppState>>,
    path_index: Option<UrlPath<String>>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let started = Instant::now();
    let index = crate::es_api::all_or(path_index);
    let answer = async {
        let params = EsParams::parse(query.as_deref())?;
        params.check("_search")?;
        let body = JsonValue::Object(body_object(&body, "the search body")?);
        search_one(&state, &index, &params, &body, &headers, started).await
    }
    .await;
    es_response(answer.map(|body| body.to_string()))
}

/// `GET|POST /{index}/_count` and `/_count`: how many events match the body's `query` (or the
/// `q` parameter); every event without one.
pub(crate) async fn count(
    State(state): State<Arc<AppState>>,
    path_index: Option<UrlPath<String>>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let index = crate::es_api::all_or(path_index);
    let answer = async {
        let params = EsParams::parse(query.as_deref())?;
        params.check("_count")?;
        let now = now_nanos();
        let mut ast = q_param(&params, now)?;
        let body = body_object(&body, "the _count body")?;
        if let Some(key) = body
            .keys()
            .find(|key| !COUNT_BODY_KEYS.contains(&key.as_str()))
        {
            return Err(ApiError::bad_request(format!(
                "unsupported: [{key}] in the _count body (it takes query)"
            )));
        }
        if let Some(query) = body.get("query") {
            ast = Some(dsl::compile(query, "query", now).map_err(dsl_error)?);
        }
        if let Some(root) = state.root.clone() {
            // Compiled above only to refuse a bad query here; the leaves compile it again.
            let query = query_source(&body, &params)?;
            return cluster_count(&state, &root, &index, &headers, &params, query, now).await;
        }
        let (indices, snapshots) = snapshots_of(&state, &index, &headers, &params).await?;
        let request = SearchRequest {
            ast,
            limit: 0,
            count: true,
            ..SearchRequest::default()
        };
        let searched = indices.clone();
        let response = state
            .search(move || {
                searcher_over(&searched, &snapshots)?
                    .execute(&request)
                    .map_err(ApiError::from_query)
            })
            .await?;
        Ok(json!({
            "count": response.count.unwrap_or(0),
            "_shards": shards(&response, &indices),
        })
        .to_string())
    }
    .await;
    es_response(answer)
}

/// The keys of a `_count` body.
pub const COUNT_BODY_KEYS: &[&str] = &["query"];

/// The URL parameters `_count` takes; those besides the query's pick the indices.
pub const COUNT_PARAMS: &[&str] = &[
    "q",
    "df",
    "default_operator",
    "analyze_wildcard",
    "lenient",
    "ignore_unavailable",
    "allow_no_indices",
    "expand_wildcards",
    "preference",
    "ignore_throttled",
];

/// The URL parameters `_msearch` takes: each but `max_concurrent_searches` (every search
/// is run in turn) is passed to every search of the body, as `_search` reads it.
pub const MSEARCH_PARAMS: &[&str] = &[
    "rest_total_hits_as_int",
    "typed_keys",
    "search_type",
    "max_concurrent_searches",
    "max_concurrent_shard_requests",
    "pre_filter_shard_size",
    "ccs_minimize_roundtrips",
    "ignore_unavailable",
    "allow_no_indices",
    "expand_wildcards",
];

/// The keys of an `_msearch` header: `index`, and URL parameters of `_search` that apply
/// to that search alone (over those of the URL).
pub const MSEARCH_HEADER_KEYS: &[&str] = &[
    "index",
    "search_type",
    "ignore_unavailable",
    "allow_no_indices",
    "expand_wildcards",
    "preference",
    "request_cache",
];

/// An `_msearch` header's index expression (`None`: the URL's) and the parameters of its
/// search: the URL's `shared` ones, then the header's own.
fn header_params(
    header: &JsonValue,
    pair: usize,
    shared: &EsParams,
) -> Result<(Option<String>, EsParams), ApiError> {
    let header = header.as_object().ok_or_else(|| {
        ApiError::bad_request(format!("the header of search {pair} is not an object"))
    })?;
    let mut params = shared.clone();
    let mut index = None;
    for (key, value) in header {
        if !MSEARCH_HEADER_KEYS.contains(&key.as_str()) {
            return Err(ApiError::bad_request(format!(
                "unsupported: [{key}] in the header of search {pair}"
            )));
        }
        let names = |value: &JsonValue| match value {
            JsonValue::String(one) => Some(one.clone()),
            JsonValue::Array(many) if !many.is_empty() => many
                .iter()
                .map(|name| name.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()
                .map(|names| names.join(",")),
            _ => None,
        };
        let text = match value {
            JsonValue::Bool(flag) => Some(flag.to_string()),
            JsonValue::Number(number) => Some(number.to_string()),
            other => names(other),
        }
        .ok_or_else(|| {
            ApiError::bad_request(format!(
                "[{key}] in the header of search {pair}: expected a name, a list of names or a flag, got {value}"
            ))
        })?;
        match key.as_str() {
            "index" => index = Some(text),
            _ => params = params.with(key, text),
        }
    }
    Ok((index, params))
}

/// `_msearch`: NDJSON pairs of a header (`{"index": ...}`, may be empty) and a search body;
/// each answered in `responses`, a failed one as its error with its status.
pub(crate) async fn msearch(
    State(state): State<Arc<AppState>>,
    path_index: Option<UrlPath<String>>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let started = Instant::now();
    let default_index = crate::es_api::all_or(path_index);
    let answer = async {
        let params = EsParams::parse(query.as_deref())?;
        params.check("_msearch")?;
        // What each search takes from the URL: all but `max_concurrent_searches`.
        let shared = MSEARCH_PARAMS
            .iter()
            .filter(|name| SEARCH_PARAMS.contains(name))
            .filter_map(|name| params.get(name).map(|value| (*name, value.to_owned())))
            .fold(EsParams::default(), |params, (name, value)| {
                params.with(name, value)
            });
        let text = std::str::from_utf8(&body)
            .map_err(|_| ApiError::bad_request("the _msearch body is not UTF-8"))?;
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        if !lines.len().is_multiple_of(2) {
            return Err(ApiError::bad_request(
                "the _msearch body must hold pairs of lines: a header, then a search",
            ));
        }
        // Totals as numbers need exact totals: the whole request is refused, as in
        // Elasticsearch, when a search tracks them only up to a bound.
        if params.flag("rest_total_hits_as_int", false)? {
            for line in lines.iter().skip(1).step_by(2) {
                let bound = serde_json::from_str::<JsonValue>(line)
                    .ok()
                    .and_then(|body| body.get("track_total_hits").and_then(JsonValue::as_i64));
                if let Some(bound) = bound {
                    return Err(ApiError::bad_request(format!(
                        "[rest_total_hits_as_int] cannot be used if the tracking of total hits is not accurate, got {bound}"
                    )));
                }
            }
        }
        let mut responses = Vec::new();
        for (pair, lines) in lines.chunks(2).enumerate() {
            let parsed = serde_json::from_str::<JsonValue>(lines[0]).and_then(|header| {
                serde_json::from_str::<JsonValue>(lines[1]).map(|body| (header, body))
            });
            let result = match parsed {
                Err(e) => Err(ApiError::bad_request(format!(
                    "search {pair} (lines {} and {}): not JSON: {e}",
                    2 * pair + 1,
                    2 * pair + 2
                ))),
                Ok((header, body)) => match header_params(&header, pair, &shared) {
                    Ok((index, params)) => {
                        let index = index.unwrap_or_else(|| default_index.clone());
                        search_one(&state, &index, &params, &body, &headers, started).await
                    }
                    Err(error) => Err(error),
                },
            };
            responses.push(match result {
                Ok(mut body) => {
                    body["status"] = 200.into();
                    body
                }
                Err(error) => error_item(error),
            });
        }
        let took = started.elapsed().as_millis() as u64;
        Ok(json!({"took": took, "responses": responses}).to_string())
    }
    .await;
    es_response(answer)
}

/// A failed search of an `_msearch`: its error with its status.
fn error_item(error: ApiError) -> JsonValue {
    let status = error.status.as_u16();
    let (_, axum::Json(mut body)) = es_error(error);
    body["status"] = status.into();
    body
}

/// `GET /{index}/_mapping` and `GET /_mapping` (every index the key may read).
pub(crate) async fn mapping(
    State(state): State<Arc<AppState>>,
    index: Option<UrlPath<String>>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    let answer = async {
        let params = EsParams::parse(query.as_deref())?;
        params.check("get mapping")?;
        state.require_some_key(&headers)?;
        let expression = crate::es_api::all_or(index);
        let missing = es_indices::missing_rule(&params)?;
        let mut indices = Map::new();
        for (name, tenant) in es_indices::resolve(&state, &expression, &headers, missing)? {
            let mapping = mapping_of(&state, &tenant).await?;
            indices.insert(name, json!({ "mappings": mapping }));
        }
        Ok::<_, ApiError>(JsonValue::Object(indices).to_string())
    }
    .await;
    es_response(answer)
}

/// A tenant's mapping (`mapping_from`) over this node's snapshot, or with `--peers` over the
/// cluster's (its fields summed over the leaves): a cluster that lacks a node answers an
/// error naming it, never a mapping without the fields only that node holds.
pub(crate) async fn mapping_of(
    state: &AppState,
    tenant: &crate::Tenant,
) -> Result<JsonValue, ApiError> {
    let schema = tenant.live.schema();
    let Some(root) = &state.root else {
        let searcher = tenant.live.published_snapshot();
        let timed = searcher
            .count(&untimed())
            .map_or(true, |n| n < searcher.doc_count());
        return Ok(mapping_from(&schema, searcher.field_summary(), timed));
    };
    let name = tenant.name();
    let fields = root
        .fields(&name)
        .await
        .map_err(|error| ApiError::bad_request(error.to_string()))?;
    let mut missing = crate::cluster_warnings(fields.failed_blocks, fields.failed_leaves);
    let count = |text: String| quarry_query::SearchRequest {
        query: text,
        limit: 0,
        count: true,
        ..quarry_query::SearchRequest::default()
    };
    let untimed = count(format!("{}:=\"{{}}\"", crate::live::TIME_AS_SENT_FIELD));
    let untimed = crate::cluster_search(root, &name, &untimed).await?;
    let all = crate::cluster_search(root, &name, &count("*".to_owned())).await?;
    let timed = untimed.count < all.count;
    missing.extend(untimed.warnings.into_iter().chain(all.warnings));
    if let Some(lacking) = missing.iter().find(|w| {
        matches!(
            w,
            Warning::DamagedBlock { .. }
                | Warning::BlockUnavailable { .. }
                | Warning::LeafUnavailable { .. }
        )
    }) {
        return Err(ApiError::unavailable(format!(
            "the mapping of [{}] would lack fields: {lacking}",
            tenant.name()
        )));
    }
    Ok(mapping_from(&schema, fields.fields, timed))
}

/// Events whose document sent no time (their time-as-sent mark is `{}`, live.rs).
fn untimed() -> quarry_query::Query {
    quarry_query::Query::Exact {
        field: crate::live::TIME_AS_SENT_FIELD.to_owned(),
        value: "{}".to_owned(),
        tokens: Vec::new(),
    }
}

/// A tenant's fields as an Elasticsearch mapping (`{"properties": ...}`): mapped fields as
/// their mapping says, the others as Elasticsearch's dynamic mapping would type them (strings
/// as `text` with a `keyword` sub-field, as Quarry indexes both), dotted names as nested
/// `properties`, `_time` as `@timestamp`. Enough for clients and Grafana's field lists.
/// `timed`: some document sent a time. `fields`: the tenant's, with their value types.
pub(crate) fn mapping_from(
    schema: &quarry_index::Schema,
    fields: std::collections::BTreeMap<String, quarry_query::FieldSummary>,
    timed: bool,
) -> JsonValue {
    let mut properties = Map::new();
    // Mapped objects (`nested`, or with rules of their own), then the mapped names (patterns
    // are not field names: the fields they map show below).
    let objects = &schema.mapping().objects;
    for (name, object) in objects {
        let mut shown = object.to_es_json();
        shown["properties"] = json!({});
        insert_dotted(&mut properties, name.clone(), shown, Some("properties"));
    }
    for name in schema.mapping().fields.keys() {
        if !name.contains('*') {
            insert_dotted(
                &mut properties,
                name.clone(),
                schema.mapping().field_to_es_json(name),
                Some("properties"),
            );
        }
    }
    // A flat object's fields are its own, not the mapping's.
    for name in &schema.mapping().flat_objects {
        let shown = json!({"type": "flat_object"});
        insert_dotted(&mut properties, name.clone(), shown, Some("properties"));
    }
    // `@timestamp` is every event's time, shown unless no document sent one (each then
    // holds the time-as-sent mark `{}`, live.rs): Elasticsearch lists only fields sent.
    for (name, quarry_query::FieldSummary { types, .. }) in fields {
        if name == quarry_format::TIME_FIELD && !timed {
            continue;
        }
        // Kept but not indexed (`dynamic: false`): Elasticsearch does not list them.
        // Metadata (`_id`, `_seq_no`, ...) is the document's, not a field of its mapping.
        if name != quarry_format::TIME_FIELD && schema.is_unindexed_unmapped(&name)
            || objects.contains_key(&name)
            || crate::es_hits::is_metadata(&name)
            || schema.mapping().flat_root(&name).is_some()
        {
            continue;
        }
        let has = |ty: &str| types.get(ty).is_some_and(|&n| n > 0);
        let mapping = if schema.mapping().fields.contains_key(&name) {
            schema.mapping().field_to_es_json(&name)
        } else if let Some(rules) = schema.rules(&name) {
            rules.to_es_json()
        } else if name == quarry_format::TIME_FIELD
            || has("timestamp") && types.len() == 1
            || quarry_query::query::TIME_KEYS.contains(&name.as_str()) && has("string")
        {
            // A time key kept beside `@timestamp` (live.rs) is searched as dates (query.rs).
            json!({"type": "date"})
        } else if has("string") || has("json") {
            json!({"type": "text", "fields": {"keyword": {"type": "keyword", "ignore_above": quarry_store::mapping::DYNAMIC_KEYWORD_IGNORE_ABOVE}}})
        } else if has("f64") {
            json!({"type": "double"})
        } else if has("i64") || has("u64") {
            json!({"type": "long"})
        } else if has("bool") {
            json!({"type": "boolean"})
        } else {
            continue;
        };
        let name = if name == quarry_format::TIME_FIELD {
            "@timestamp".to_owned()
        } else {
            name
        };
        insert_dotted(&mut properties, name, mapping, Some("properties"));
    }
    // An index without fields has empty mappings, as Elasticsearch shows them.
    let mut out = if properties.is_empty() {
        json!({})
    } else {
        json!({ "properties": properties })
    };
    if let Some(dynamic) = schema.mapping().to_es_json().get("dynamic") {
        out["dynamic"] = dynamic.clone();
    }
    out
}

pub(crate) fn dsl_error(error: DslError) -> ApiError {
    let answer = ApiError::bad_request(format!("[{}] {}", error.path, error.reason));
    match error.kind {
        Some(kind) => answer.with_kind(kind),
        None => answer,
    }
}

/// One search: the request from `body` (and URL `params`: `q`, `size`, `from`), run on
/// `index`'s snapshot, answered in Elasticsearch's shape.
pub(crate) async fn search_one(
    state: &Arc<AppState>,
    index: &str,
    params: &EsParams,
    body: &JsonValue,
    headers: &HeaderMap,
    started: Instant,
) -> Result<JsonValue, ApiError> {
    let object = match body {
        JsonValue::Object(object) => object.clone(),
        _ => {
            return Err(ApiError::bad_request(
                "the search body must be a JSON object",
            ))
        }
    };
    let mut object = object;
    resolve_terms_lookups(state, &mut object, headers).await?;
    let aggs_key = ["aggs", "aggregations"]
        .into_iter()
        .find(|key| object.contains_key(*key));
    if let Some(aggs) = aggs_key.and_then(|key| object.get_mut(key)) {
        // The search itself answers for indices that are missing or not the key's.
        let missing = crate::es_indices::Missing {
            skip: true,
            ..crate::es_indices::Missing::REFUSE
        };
        let tenants = crate::es_indices::resolve(state, index, headers, missing);
        for (_, tenant) in tenants.unwrap_or_default() {
            let schema = tenant.live.schema();
            crate::es_aggs::refuse_flat_object_fields(aggs, schema.mapping())?;
            crate::es_aggs::resolve_multi_fields(aggs, schema.mapping());
        }
    }
    let mut plan = SearchPlan::new(&object, params)?;
    let limits_of = |names: &[String]| {
        let specs: Vec<SearchLimits> = names
            .iter()
            .filter_map(|name| state.open_tenant(name))
            .map(|tenant| tenant.spec().search_limits)
            .collect();
        SearchLimits::strictest(&specs)
    };
    if let Some(root) = state.root.clone() {
        refused_in_a_cluster(&plan, params)?;
        let now = now_nanos();
        // A point in time: the snapshots its opening read on every node.
        if let Some((id, keep_alive)) = plan.pit.clone() {
            let (name, held) = state.contexts.point_in_time(&id, keep_alive)?;
            let tenant = state.authorize(&name, headers)?;
            let es_scroll::Held::Cluster(pin) = held else {
                return Err(ApiError::internal("a point in time of this node alone"));
            };
            let indices = vec![name.clone()];
            let limits = limits_of(&indices);
            plan.check_limits(&limits, false)?;
            prepare_view(state, &mut plan, &indices, &limits);
            let source = quarry_query::leaf::QuerySource::Dsl {
                query: query_source(&object, params)?,
                now,
            };
            let (response, extras, _) = run_in_cluster(
                state,
                &root,
                &tenant,
                &plan,
                source,
                Some(&pin),
                Duration::ZERO,
            )
            .await?;
            let mut answer = plan.answer(&indices, &response, extras, started);
            answer["pit_id"] = id.into();
            return Ok(answer);
        }
        let rules = es_indices::missing_rule(params)?.reading();
        let found = es_indices::resolve(state, index, headers, rules)?;
        match &found[..] {
            // None: the empty answer, as one node gives it.
            [] => {}
            [(name, tenant)] => {
                let indices = vec![name.clone()];
                let limits = limits_of(&indices);
                let scroll = params
                    .get("scroll")
                    .map(|text| es_scroll::keep_alive(text, "scroll"));
                let scroll = scroll.transpose()?;
                plan.check_limits(&limits, scroll.is_some())?;
                prepare_view(state, &mut plan, &indices, &limits);
                let filters = crate::es_aliases::filters_of(state, index);
                let query = with_alias_filters(query_source(&object, params)?, filters.get(name))?;
                let source = quarry_query::leaf::QuerySource::Dsl { query, now };
                if let Some(keep_alive) = scroll {
                    return es_scroll::start_in_cluster(
                        state, &root, tenant, name, plan, source, keep_alive, started,
                    )
                    .await;
                }
                let (response, extras, _) =
                    run_in_cluster(state, &root, tenant, &plan, source, None, Duration::ZERO)
                        .await?;
                return Ok(plan.answer(&indices, &response, extras, started));
            }
            many => {
                return Err(ApiError::bad_request(format!(
                    "[{index}] names {} indices: a search across a cluster reads one index \
                     yet (this node searches with --peers); search them one at a time",
                    many.len()
                )))
            }
        }
    }
    if let Some(keep_alive) = params.get("scroll") {
        let keep_alive = es_scroll::keep_alive(keep_alive, "scroll")?;
        plan.check_limits(&limits_of(&[index.to_owned()]), true)?;
        return es_scroll::start(state, index, plan, keep_alive, headers, started).await;
    }
    // A point in time: its snapshot and tenant; else the current snapshot of the indices the
    // path names (several: one searcher over all of them).
    let (indices, snapshots) = match &plan.pit {
        Some((id, keep_alive)) => {
            let (tenant, held) = state.contexts.point_in_time(id, *keep_alive)?;
            state.authorize(&tenant, headers)?;
            let es_scroll::Held::Local(snapshot) = held else {
                return Err(ApiError::internal(
                    "a cluster's point in time without --peers",
                ));
            };
            (vec![tenant], vec![snapshot])
        }
        None => snapshots_of(state, index, headers, params).await?,
    };
    let limits = limits_of(&indices);
    plan.check_limits(&limits, false)?;
    prepare_view(state, &mut plan, &indices, &limits);
    let boosts = match plan.indices_boost.is_empty() {
        true => None,
        false => Some(index_boosts(
            state,
            &plan.indices_boost,
            &indices,
            headers,
            es_indices::missing_rule(params)?,
        )?),
    };
    let run = plan.clone();
    let names = indices.clone();
    let (response, extras) = state
        .search(move || {
            let searcher = searcher_over(&names, &snapshots)?;
            match boosts {
                Some(boosts) => run.execute(&(*searcher).clone().with_part_boosts(boosts), &names),
                None => run.execute(&searcher, &names),
            }
        })
        .await?;
    let mut answer = plan.answer(&indices, &response, extras, started);
    if let Some((id, _)) = &plan.pit {
        answer["pit_id"] = id.clone().into();
    }
    Ok(answer)
}

/// Bounds highlights by the indices' `highlight.max_analyzed_offset`, except in fields mapped
/// with offsets, and tells the hits' view the indices' multi-fields.
fn prepare_view(
    state: &AppState,
    plan: &mut SearchPlan,
    indices: &[String],
    limits: &SearchLimits,
) {
    let mut offsets = std::collections::HashSet::new();
    let mut multi_fields = Vec::new();
    for tenant in indices.iter().filter_map(|name| state.open_tenant(name)) {
        let schema = tenant.live.schema();
        let mapping = schema.mapping();
        let with_offsets = mapping.fields.iter().filter(|(_, rules)| rules.offsets);
        offsets.extend(with_offsets.map(|(name, _)| name.clone()));
        for (name, multi) in &mapping.multi_fields {
            if matches!(multi, MultiField::Tokens { offsets: true }) {
                offsets.insert(name.clone());
            }
            if let Some((parent, _)) = name.rsplit_once('.') {
                multi_fields.push((name.clone(), parent.to_owned()));
            }
        }
    }
    multi_fields.sort();
    multi_fields.dedup();
    plan.view
        .set_highlight_limit(limits.max_analyzed_offset, offsets);
    plan.view.set_multi_fields(multi_fields);
}

/// On a node with `--peers`: what a search across the cluster does not answer yet is a 400
/// naming it, never an answer from this node's data alone.
fn refused_in_a_cluster(plan: &SearchPlan, params: &EsParams) -> Result<(), ApiError> {
    let refused = [
        (
            params.get("scroll").is_some() && plan.slice.is_some(),
            "a sliced scroll",
        ),
        (!plan.suggest.is_empty(), "suggest"),
        (!plan.indices_boost.is_empty(), "indices_boost"),
    ];
    match refused.into_iter().find(|(asked, _)| *asked) {
        Some((_, what)) => Err(ApiError::bad_request(format!(
            "unsupported: {what} is not answered across a cluster yet (this node searches \
             with --peers)"
        ))),
        None => Ok(()),
    }
}

/// `plan`'s search of `tenant` over a cluster (`--peers`): over `pin`'s snapshots when given
/// (a point in time's, a scroll's), else planned afresh with every leaf keeping what it read
/// at least `keep` after each use; the top hits of its aggregations fetched from the leaves
/// that found them, and rendered with this node's mapping. With the pin of what it read.
pub(crate) async fn run_in_cluster(
    state: &AppState,
    root: &quarry_cluster::Root,
    tenant: &crate::Tenant,
    plan: &SearchPlan,
    source: quarry_query::leaf::QuerySource,
    pin: Option<&quarry_cluster::root::Pin>,
    keep: Duration,
) -> Result<(SearchResponse, Extras, Option<quarry_cluster::root::Pin>), ApiError> {
    let name = tenant.name();
    let (mut response, searched) =
        crate::cluster_page(root, &name, source.clone(), &plan.request, pin, keep).await?;
    // `collapse`: searched again over the same snapshots for more hits while the first hold
    // too few groups (`finish` then finds them collapsed).
    if let Some(field) = &plan.collapse {
        let mut limit = plan.request.limit;
        let mut hits = std::mem::take(&mut response.hits);
        loop {
            match plan.collapse_step(field, hits, limit) {
                Collapse::Done(kept) => {
                    response.hits = kept;
                    break;
                }
                Collapse::More(request) => {
                    limit = request.limit;
                    let (more, _) = crate::cluster_page(
                        root,
                        &name,
                        source.clone(),
                        &request,
                        searched.as_ref(),
                        keep,
                    )
                    .await?;
                    for warning in more.warnings {
                        if !response.warnings.contains(&warning) {
                            response.warnings.push(warning);
                        }
                    }
                    hits = more.hits;
                }
            }
        }
    }
    let top_hits = response
        .tree
        .as_deref()
        .map(es_aggs::top_hits_of)
        .unwrap_or_default();
    let fetched = match (&searched, top_hits.is_empty()) {
        (Some(searched), false) => {
            let events = root
                .fetch_top_hits(searched, &name, &top_hits)
                .await
                .map_err(|error| ApiError::unavailable(error.to_string()))?;
            Some(top_hits.into_iter().zip(events).collect())
        }
        _ => None,
    };
    // This node's snapshot gives the mapping the answer is rendered with.
    let snapshot = tenant.live.published_snapshot();
    let (run, names) = (plan.clone(), vec![name]);
    let (response, extras) = state
        .search(move || run.finish(&snapshot, &names, response, fetched.as_ref()))
        .await?;
    Ok((response, extras, searched))
}

/// The query a search body or the `q` parameter asks, as the DSL the leaves compile (every
/// document without one, as Elasticsearch's `match_all`).
fn query_source(body: &Map<String, JsonValue>, params: &EsParams) -> Result<JsonValue, ApiError> {
    Ok(match body.get("query") {
        Some(query) => query.clone(),
        None => q_options(params)?
            .map_or_else(|| json!({"match_all": {}}), |q| json!({"query_string": q})),
    })
}

/// `query` within a filtered alias's `filters` (its stored DSL queries; a document matching
/// any of them is in the alias).
fn with_alias_filters(
    query: JsonValue,
    filters: Option<&Vec<String>>,
) -> Result<JsonValue, ApiError> {
    let Some(filters) = filters else {
        return Ok(query);
    };
    let should = filters
        .iter()
        .map(|filter| serde_json::from_str(filter).map_err(ApiError::internal))
        .collect::<Result<Vec<JsonValue>, ApiError>>()?;
    Ok(json!({"bool": {"must": [query], "filter": [{"bool": {"should": should}}]}}))
}

/// Replaces each terms lookup in a search body (`{"terms": {"user": {"index": "users", "id":
/// "1", "path": "followers"}}}`, in the query or an aggregation's filter) with the values the
/// document at `path` holds, read now from that index (which the caller must be allowed to
/// read). A document that does not exist gives no values, as in Elasticsearch.
async fn resolve_terms_lookups(
    state: &Arc<AppState>,
    body: &mut Map<String, JsonValue>,
    headers: &HeaderMap,
) -> Result<(), ApiError> {
    let mut lookups = Vec::new();
    for value in body.values_mut() {
        for_each_terms_lookup(value, &mut |spec| lookups.push(spec.clone()));
    }
    let mut resolved = Vec::with_capacity(lookups.len());
    for spec in lookups {
        let text = |key: &str| -> Result<String, ApiError> {
            match spec.get(key) {
                Some(JsonValue::String(s)) => Ok(s.clone()),
                Some(JsonValue::Number(n)) => Ok(n.to_string()),
                _ => Err(ApiError::bad_request(format!(
                    "terms lookup: [{key}] must be a string (index, id and path name the document and its field)"
                ))),
            }
        };
        if let Some(other) = spec.as_object().and_then(|o| {
            o.keys()
                .find(|k| !matches!(k.as_str(), "index" | "id" | "path" | "routing"))
        }) {
            return Err(ApiError::bad_request(format!(
                "unsupported: terms lookup option [{other}]"
            )));
        }
        let (index, id, path) = (text("index")?, text("id")?, text("path")?);
        if state.open_tenant(&index).is_none() {
            return Err(es_indices::no_such_index(&index));
        }
        let live = state.authorize(&index, headers)?.live.clone();
        let found = crate::es_docs::find_document(state, &index, live, &id).await?;
        let values = match found {
            None => Vec::new(),
            Some((_, fields)) => match crate::event_json(&fields).get(&path) {
                Some(JsonValue::Array(items)) => items.clone(),
                Some(JsonValue::Null) | None => Vec::new(),
                Some(one) => vec![one.clone()],
            },
        };
        resolved.push(JsonValue::Array(values));
    }
    // The same walk, in the same order, puts each lookup's values in its place.
    let mut resolved = resolved.into_iter();
    for value in body.values_mut() {
        for_each_terms_lookup(value, &mut |spec| {
            if let Some(values) = resolved.next() {
                *spec = values;
            }
        });
    }
    Ok(())
}

/// Calls `f` on each terms lookup spec (`{"index", "id", ...}` as a `terms` query's field)
/// in `value`, in document order.
fn for_each_terms_lookup(value: &mut JsonValue, f: &mut impl FnMut(&mut JsonValue)) {
    match value {
        JsonValue::Object(object) => {
            for (key, inner) in object.iter_mut() {
                if key == "terms" {
                    if let Some(fields) = inner.as_object_mut() {
                        for spec in fields.values_mut() {
                            let is_lookup = spec
                                .as_object()
                                .is_some_and(|o| o.contains_key("index") && o.contains_key("id"));
                            if is_lookup {
                                f(spec);
                            }
                        }
                    }
                }
                for_each_terms_lookup(inner, f);
            }
        }
        JsonValue::Array(items) => items
            .iter_mut()
            .for_each(|item| for_each_terms_lookup(item, f)),
        _ => {}
    }
}

/// The most values one `terms` query in `value` lists (a `terms` aggregation, which names a
/// `field`, is not one).
fn largest_terms_list(value: &JsonValue) -> usize {
    match value {
        JsonValue::Object(object) => object
            .iter()
            .map(|(key, inner)| {
                let here = match (key.as_str(), inner.as_object()) {
                    ("terms", Some(fields)) if !fields.contains_key("field") => fields
                        .values()
                        .filter_map(JsonValue::as_array)
                        .map(Vec::len)
                        .max()
                        .unwrap_or(0),
                    _ => 0,
                };
                here.max(largest_terms_list(inner))
            })
            .max()
            .unwrap_or(0),
        JsonValue::Array(items) => items.iter().map(largest_terms_list).max().unwrap_or(0),
        _ => 0,
    }
}

/// The indices an index expression names and their current snapshots.
async fn snapshots_of(
    state: &Arc<AppState>,
    index: &str,
    headers: &HeaderMap,
    params: &EsParams,
) -> Result<(Vec<String>, Vec<Arc<Searcher>>), ApiError> {
    let rules = es_indices::missing_rule(params)?.reading();
    let found = es_indices::resolve(state, index, headers, rules)?;
    if found.len() > quarry_query::searcher::MAX_UNION_PARTS {
        return Err(ApiError::bad_request(format!(
            "[{index}] names {} indices; one search reads at most {}",
            found.len(),
            quarry_query::searcher::MAX_UNION_PARTS
        )));
    }
    let indices = found.iter().map(|(name, _)| name.clone()).collect();
    let filters = crate::es_aliases::filters_of(state, index);
    let snapshots: Vec<(Arc<Searcher>, Option<Vec<String>>)> = found
        .iter()
        .map(|(name, tenant)| (tenant.live.published_snapshot(), filters.get(name).cloned()))
        .collect();
    if filters.is_empty() {
        return Ok((indices, snapshots.into_iter().map(|(s, _)| s).collect()));
    }
    // A filtered alias's filter is run over the snapshot, off the request's thread.
    let snapshots = state
        .search(move || {
            snapshots
                .into_iter()
                .map(|(snapshot, filters)| match filters {
                    Some(filters) => filtered(&snapshot, &filters).map(Arc::new),
                    None => Ok(snapshot),
                })
                .collect::<Result<Vec<_>, ApiError>>()
        })
        .await?;
    Ok((indices, snapshots))
}

/// `snapshot` seeing only the documents some of `filters` (filtered aliases' queries)
/// match.
fn filtered(snapshot: &Searcher, filters: &[String]) -> Result<Searcher, ApiError> {
    let now = now_nanos();
    let mut any = Vec::new();
    for filter in filters {
        let value: JsonValue = serde_json::from_str(filter).map_err(ApiError::internal)?;
        let ast = dsl::compile(&value, "alias.filter", now).map_err(dsl_error)?;
        any.push(snapshot.plan(&ast).map_err(ApiError::from_query)?);
    }
    let query = match any.len() {
        1 => any.remove(0),
        _ => quarry_query::Query::Any(any),
    };
    snapshot.only_matching(&query).map_err(ApiError::from_query)
}

/// One searcher over the snapshots of `indices` (a union of several). Indices that map a
/// field differently cannot be searched as one: a 400 names the field.
fn searcher_over(
    indices: &[String],
    snapshots: &[Arc<Searcher>],
) -> Result<Arc<Searcher>, ApiError> {
    match snapshots {
        [one] => Ok(one.clone()),
        many => Searcher::union(many).map(Arc::new).map_err(|e| {
            ApiError::bad_request(format!(
                "[{}] cannot be searched together: {e}; search them one at a time",
                indices.join(",")
            ))
        }),
    }
}

/// What one `_search` body asks for, as Quarry's request plus what the answer's shape needs.
#[derive(Clone)]
pub(crate) struct SearchPlan {
    pub(crate) request: SearchRequest,
    from: usize,
    /// `pit`: a point in time's id and its renewed keep-alive.
    pit: Option<(String, Option<std::time::Duration>)>,
    track_total_hits: TrackTotalHits,
    /// `rest_total_hits_as_int`: `hits.total` as a number, as before Elasticsearch 7.
    total_as_int: bool,
    /// `typed_keys`: each aggregation's name prefixed with its type (`sterms#by_host`), as
    /// the Java client asks.
    typed_keys: bool,
    view: HitView,
    aggs: es_aggs::Level,
    /// The most values one `terms` query of the body holds (against `index.max_terms_count`).
    largest_terms: usize,
    /// A hit's `sort` values: one per key that has one (the time or a field) and Quarry's
    /// cursor (a `_doc` key or a point in time).
    sort_values: usize,
    sort_tiebreak: bool,
    /// `indices_boost`: (index, alias or pattern, factor), the first that names an index
    /// scaling its hits' scores.
    indices_boost: Vec<(String, f32)>,
    /// `collapse`: the field whose value groups the hits; each group shows its best hit.
    collapse: Option<String>,
    /// `slice` of a scroll: which of how many parts (es_scroll.rs).
    pub(crate) slice: Option<Slice>,
    suggest: crate::es_suggest::Suggest,
    /// `allow_partial_search_results` (default true): false makes an answer with a damaged
    /// block left out an error instead.
    allow_partial: bool,
}

/// What a search answers besides its hits: aggregations and suggestions, rendered.
#[derive(Default)]
pub(crate) struct Extras {
    pub(crate) aggregations: Map<String, JsonValue>,
    pub(crate) suggest: Map<String, JsonValue>,
}

/// One part of a sliced scroll: `id` of `max` parts that, together, hold every hit once.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Slice {
    pub id: u64,
    pub max: u64,
}

impl Slice {
    /// Reads a `slice` body: `id` and `max` (more than 1, `id` under it); `field` only as
    /// Quarry slices, by each event's time (`_id`, the default, or `@timestamp`).
    fn read(value: &JsonValue) -> Result<Slice, ApiError> {
        let object = value
            .as_object()
            .ok_or_else(|| ApiError::bad_request("slice: expected {id, max}"))?;
        let number = |key: &str| {
            object.get(key).and_then(JsonValue::as_u64).ok_or_else(|| {
                ApiError::bad_request(format!("slice.{key}: expected a whole number"))
            })
        };
        for (key, value) in object {
            match key.as_str() {
                "id" | "max" => {}
                // Quarry's slices split by time, whatever field Elasticsearch would hash.
                "field" if value == "_id" || value == "@timestamp" => {}
                other => {
                    return Err(ApiError::bad_request(format!(
                        "unsupported: slice.{other} (Quarry slices by each event's time)"
                    )))
                }
            }
        }
        let (id, max) = (number("id")?, number("max")?);
        if max <= 1 {
            return Err(ApiError::bad_request("max must be greater than 1"));
        }
        if id >= max {
            return Err(ApiError::bad_request("id must be lower than max"));
        }
        Ok(Slice { id, max })
    }

    /// Whether the event at `time` (ns) is in this slice: a hash of the time, so each event
    /// is in exactly one slice whatever the snapshot each slice's scroll reads.
    pub(crate) fn holds(self, time: i64) -> bool {
        // SplitMix64's finalizer: neighbouring times land in unrelated slices.
        let mut x = time as u64;
        x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        x ^= x >> 31;
        x % self.max == self.id
    }
}

/// Every key a `_search` body takes (issue 27, item 0): each is honoured, or is a no-op or
/// read only to be refused, as `crates/quarry/tests/es_options` walks them and says why; any
/// other key is a 400 naming it.
pub const SEARCH_BODY_OPTIONS: &[&str] = &[
    "query",
    "size",
    "from",
    "sort",
    "search_after",
    "indices_boost",
    "pit",
    "track_total_hits",
    "aggs",
    "aggregations",
    "collapse",
    "suggest",
    "slice",
    // How hits are shown (es_hits.rs).
    "_source",
    "version",
    "seq_no_primary_term",
    "fields",
    "docvalue_fields",
    "stored_fields",
    "highlight",
    // Quarry's own request timeout bounds every search; a shard-level timeout cannot give
    // a different answer over one index.
    "timeout",
    // Taken at the value that asks for nothing (false, empty), else refused.
    "explain",
    "profile",
    "track_scores",
    "runtime_mappings",
    "script_fields",
    "stats",
    // Read only to be refused (a too large window is said first, as Elasticsearch does).
    "rescore",
];

/// Every URL parameter `_search` takes besides those every endpoint takes
/// (`es_api::NO_OP_PARAMS`, `filter_path`). Those that only steer how a cluster of shards
/// runs a search (`search_type`, `preference`, `max_concurrent_shard_requests`, ...) change
/// nothing over a tenant's single index, and `ignore_unavailable`, `allow_no_indices` and
/// `expand_wildcards` nothing for one concrete index.
pub const SEARCH_PARAMS: &[&str] = &crate::es_api::joined::<32>(
    &[
        "q",
        "df",
        "default_operator",
        "analyze_wildcard",
        "lenient",
        "size",
        "from",
        "track_total_hits",
        "rest_total_hits_as_int",
        "search_type",
        "preference",
        "request_cache",
        "batched_reduce_size",
        "max_concurrent_shard_requests",
        "pre_filter_shard_size",
        "ccs_minimize_roundtrips",
        "allow_partial_search_results",
        "ignore_unavailable",
        "allow_no_indices",
        "expand_wildcards",
        "ignore_throttled",
        "timeout",
        "scroll",
        "typed_keys",
        "sort",
    ],
    // How hits are shown.
    HitView::PARAMS,
);

impl SearchPlan {
    fn new(body: &Map<String, JsonValue>, params: &EsParams) -> Result<SearchPlan, ApiError> {
        let now = now_nanos();
        let mut request = SearchRequest {
            sort: SortOrder::Relevance,
            count: true,
            ..SearchRequest::default()
        };
        let mut size = 10usize;
        let mut from = 0usize;
        let mut track_total_hits = TrackTotalHits::Exact;
        let mut aggs = es_aggs::Level::default();
        let mut view = HitView::default();
        let mut search_after = None;
        let mut pit = None;
        // Whether the sort has a key with a value (time, a field) and a `_doc` tiebreaker.
        let mut sort_keys = (0, false);
        let mut indices_boost = Vec::new();
        // Without a query, every document, each scored 1 (Elasticsearch's match_all).
        request.ast = match q_param(params, now)? {
            Some(ast) => Some(ast),
            None => Some(Ast::Constant {
                inner: Box::new(Ast::All),
                score: 1.0,
            }),
        };
        if let Some(value) = params.get("size") {
            size = number_param("size", value)?;
        }
        if let Some(value) = params.get("from") {
            from = number_param("from", value)?;
        }
        if let Some(value) = params.get("track_total_hits") {
            track_total_hits = match value {
                "true" => TrackTotalHits::Exact,
                "false" => TrackTotalHits::Not,
                number => TrackTotalHits::up_to(number.parse().map_err(|_| {
                    ApiError::bad_request(format!(
                        "track_total_hits: expected true, false or a number, got {number:?}"
                    ))
                })?)?,
            };
        }
        let total_as_int = params.flag("rest_total_hits_as_int", false)?;
        let typed_keys = params.flag("typed_keys", false)?;
        if let Some(kind) = params.get("search_type") {
            if !matches!(kind, "query_then_fetch" | "dfs_query_then_fetch") {
                return Err(ApiError::bad_request(format!(
                    "unsupported: search_type [{kind}] (query_then_fetch or dfs_query_then_fetch; with one index per tenant they are the same)"
                )));
            }
        }
        let collapse = collapse_of(body, params)?;
        let mut slice = None;
        let mut suggest = crate::es_suggest::Suggest::default();
        if let Some(key) = body
            .keys()
            .find(|key| !SEARCH_BODY_OPTIONS.contains(&key.as_str()))
        {
            return Err(unknown_body_key(key));
        }
        for (key, value) in body {
            if view.read_body_key(key, value)? {
                continue;
            }
            match key.as_str() {
                "query" => {
                    request.ast = Some(dsl::compile(value, "query", now).map_err(dsl_error)?)
                }
                "size" => size = as_usize(key, value)?,
                "from" => from = as_usize(key, value)?,
                "sort" => {
                    let sort = sort_of(value)?;
                    sort_keys = (sort.value_keys, sort.doc_key);
                    match sort.spec {
                        SortSpec::Order(order) => request.sort = order,
                        SortSpec::Field(field) => request.sort_field = Some(field),
                    }
                }
                "search_after" => search_after = Some(value),
                "indices_boost" => indices_boost = indices_boost_of(value)?,
                "pit" => pit = Some(point_in_time(value)?),
                "track_total_hits" => {
                    track_total_hits = match value {
                        JsonValue::Bool(true) => TrackTotalHits::Exact,
                        JsonValue::Bool(false) => TrackTotalHits::Not,
                        number => TrackTotalHits::up_to(number.as_i64().ok_or_else(|| {
                            ApiError::bad_request(
                                "track_total_hits: expected true, false or a number",
                            )
                        })?)?,
                    }
                }
                "aggs" | "aggregations" => {
                    let object = value.as_object().ok_or_else(|| {
                        ApiError::bad_request(format!("{key}: expected an object of aggregations"))
                    })?;
                    aggs = es_aggs::parse(object, key, now)?;
                }
                // No-ops: Quarry's own request timeout bounds every search; a shard-level
                // timeout cannot give a different answer over one index.
                "timeout" => {}
                // Options at their default ask for nothing.
                "explain" | "profile" | "track_scores" if value == &JsonValue::Bool(false) => {}
                "runtime_mappings" | "script_fields" | "stats" if is_empty(value) => {}
                "collapse" => {}
                "suggest" => suggest = crate::es_suggest::Suggest::parse(value)?,
                "slice" => {
                    if params.get("scroll").is_none() {
                        return Err(ApiError::bad_request(
                            "[slice] can only be used with [scroll] requests (Quarry slices \
                             scrolls, not points in time)",
                        ));
                    }
                    slice = Some(Slice::read(value)?);
                }
                // Rescoring is not supported; a window past the result window is wrong in
                // any case, and said so first, as Elasticsearch words it.
                "rescore" => {
                    let items = match value {
                        JsonValue::Array(items) => items.iter().collect(),
                        one => vec![one],
                    };
                    for item in items {
                        if let Some(window) = item
                            .get("window_size")
                            .and_then(JsonValue::as_u64)
                            .filter(|w| *w > MAX_RESULT_WINDOW as u64)
                        {
                            return Err(ApiError::bad_request(format!(
                                "Rescore window [{window}] is too large. It must be less than [{MAX_RESULT_WINDOW}]."
                            )));
                        }
                    }
                    return Err(ApiError::bad_request(
                        "unsupported: [rescore] in the search body",
                    ));
                }
                other => return Err(unknown_body_key(other)),
            }
        }
        // `sort=field:order,...`, as the body's `sort` list of `field:order` strings.
        if let Some(sort) = params.get("sort") {
            if body.contains_key("sort") {
                return Err(ApiError::bad_request(
                    "sort: given both in the URL and in the body; give one",
                ));
            }
            let keys: Vec<JsonValue> = sort.split(',').map(JsonValue::from).collect();
            let sort = sort_of(&JsonValue::Array(keys))?;
            sort_keys = (sort.value_keys, sort.doc_key);
            match sort.spec {
                SortSpec::Order(order) => request.sort = order,
                SortSpec::Field(field) => request.sort_field = Some(field),
            }
        }
        // A point in time pages with a tiebreaker, as Elasticsearch adds `_shard_doc`.
        let (value_keys, tiebreak) = (sort_keys.0, sort_keys.1 || pit.is_some());
        // After the body: the URL's `_source*` parameters win over the body's `_source`, as
        // in Elasticsearch.
        view.read_params(params)?;
        if let Some(value) = search_after {
            search_after_of(value, &mut request, value_keys, tiebreak, now)?;
        }
        if let (true, TrackTotalHits::UpTo(limit)) = (total_as_int, track_total_hits) {
            return Err(ApiError::bad_request(format!(
                "[rest_total_hits_as_int] cannot be used if the tracking of total hits is not accurate, got {limit}"
            )));
        }
        if params.get("scroll").is_some() {
            // A scroll pages by its size, through every hit, once.
            if size == 0 {
                return Err(ApiError::bad_request(
                    "[size] cannot be [0] in a scroll context",
                ));
            }
            if params.get("request_cache") == Some("true") {
                return Err(ApiError::bad_request(
                    "[request_cache] cannot be used in a scroll context",
                ));
            }
        }
        window_check(
            from + size,
            MAX_RESULT_WINDOW,
            params.get("scroll").is_some(),
        )?;
        request.limit = from + size;
        request.tree = aggs.nodes().to_vec();
        Ok(SearchPlan {
            request,
            from,
            pit,
            track_total_hits,
            total_as_int,
            typed_keys,
            view,
            aggs,
            largest_terms: body.values().map(largest_terms_list).max().unwrap_or(0),
            sort_values: value_keys,
            sort_tiebreak: tiebreak,
            indices_boost,
            collapse,
            slice,
            suggest,
            allow_partial: params.flag("allow_partial_search_results", true)?,
        })
    }

    /// Runs the search and its aggregations on one snapshot.
    /// `indices`: those `searcher` reads (several: a `Searcher::union` of them, in order),
    /// named by the hits of `top_hits`.
    pub(crate) fn execute(
        &self,
        searcher: &Searcher,
        indices: &[String],
    ) -> Result<(SearchResponse, Extras), ApiError> {
        let response = searcher
            .execute(&self.request)
            .map_err(ApiError::from_query)?;
        self.finish(searcher, indices, response, None)
    }

    /// What follows the search's `response`: collapsing, the highlights' bounds, the
    /// aggregations rendered and the suggestions, with `searcher` (over `indices`) for the
    /// mapping; in a cluster, the aggregations' top hits `fetched` from the leaves.
    pub(crate) fn finish(
        &self,
        searcher: &Searcher,
        indices: &[String],
        mut response: SearchResponse,
        fetched: Option<&es_aggs::TopHitEvents>,
    ) -> Result<(SearchResponse, Extras), ApiError> {
        if !self.allow_partial && response.is_partial() {
            return Err(partial_refused(&response));
        }
        if let Some(field) = &self.collapse {
            response.hits = self.collapsed(searcher, field, response.hits)?;
        }
        for hit in response.hits.iter().skip(self.from) {
            let index = match indices {
                [one] => one.as_str(),
                many => many
                    .get(Searcher::part_of(hit.location.block_id))
                    .map_or("", String::as_str),
            };
            self.view.check_highlight(&event_json(&hit.event), index)?;
        }
        let aggregations = match &response.tree {
            Some(results) => {
                self.aggs.check_fields(searcher)?;
                let ctx = es_aggs::Ctx {
                    typed: self.typed_keys,
                    searcher,
                    indices,
                    fetched,
                };
                self.aggs.render(results, ctx)?
            }
            None => Map::new(),
        };
        let suggest = self.suggest.run(searcher, indices, self.typed_keys)?;
        Ok((
            response,
            Extras {
                aggregations,
                suggest,
            },
        ))
    }

    /// The best hit of each of the first `from + size` groups of hits by the value of `field`
    /// (a missing value is a group too), in the search's order: `hits` are the search's first
    /// `limit`; while they hold too few groups, the search runs again for four times as many.
    fn collapsed(
        &self,
        searcher: &Searcher,
        field: &str,
        mut hits: Vec<quarry_query::HitEvent>,
    ) -> Result<Vec<quarry_query::HitEvent>, ApiError> {
        let mut limit = self.request.limit;
        loop {
            match self.collapse_step(field, hits, limit) {
                Collapse::Done(kept) => return Ok(kept),
                Collapse::More(request) => {
                    limit = request.limit;
                    hits = searcher
                        .execute(&request)
                        .map_err(ApiError::from_query)?
                        .hits;
                }
            }
        }
    }

    /// One step of `collapsed`: the best hit of each of the first groups among `hits` (the
    /// search's first `limit`), or, while they hold too few groups, the search that asks for
    /// four times as many. Hits collapsed already come back as they are.
    pub(crate) fn collapse_step(
        &self,
        field: &str,
        hits: Vec<quarry_query::HitEvent>,
        limit: usize,
    ) -> Collapse {
        let want = self.request.limit;
        let mut seen = std::collections::HashSet::new();
        let fetched = hits.len();
        let kept: Vec<quarry_query::HitEvent> = hits
            .into_iter()
            .filter(|hit| seen.insert(group_of(hit, field)))
            .take(want)
            .collect();
        if kept.len() >= want || fetched < limit || limit >= crate::MAX_SEARCH_LIMIT {
            return Collapse::Done(kept);
        }
        let mut request = self.request.clone();
        request.limit = (limit * 4).clamp(64, crate::MAX_SEARCH_LIMIT);
        request.tree.clear();
        request.count = false;
        Collapse::More(Box::new(request))
    }

    /// Refuses what passes Elasticsearch's defaults but not the searched indices' own
    /// `limits` (`scroll`: a scroll's first page).
    pub(crate) fn check_limits(&self, limits: &SearchLimits, scroll: bool) -> Result<(), ApiError> {
        let most = limits.max_terms_count.unwrap_or(65_536);
        if self.largest_terms as u64 > most {
            return Err(ApiError::bad_request(format!(
                "The number of terms [{}] used in the Terms Query request has exceeded the allowed maximum of [{most}]. This maximum can be set by changing the [index.max_terms_count] index level setting.",
                self.largest_terms
            )));
        }
        if let Some(window) = limits.max_result_window {
            window_check(self.request.limit, window as usize, scroll)?;
        }
        if let Some(slice) = self.slice {
            let most = limits.max_slices_per_scroll.unwrap_or(1024);
            if slice.max > most {
                return Err(ApiError::bad_request(format!(
                    "The number of slices [{}] is too large. It must be less than [{most}]. This limit can be set by changing the [index.max_slices_per_scroll] index level setting.",
                    slice.max
                )));
            }
        }
        let docvalue_fields = self.view.docvalue_fields();
        let most = limits.max_docvalue_fields_search.unwrap_or(100);
        if docvalue_fields as u64 > most {
            return Err(ApiError::bad_request(format!(
                "Trying to retrieve too many docvalue_fields. Must be less than or equal to: [{most}] but was [{docvalue_fields}]. This limit can be set by changing the [index.max_docvalue_fields_search] index level setting."
            )));
        }
        Ok(())
    }

    /// Hits skipped before the first shown (`from`).
    pub(crate) fn from(&self) -> usize {
        self.from
    }

    pub(crate) fn set_from(&mut self, from: usize) {
        self.from = from;
    }

    pub(crate) fn set_total_as_int(&mut self, as_int: bool) {
        self.total_as_int = as_int;
    }

    /// The same search without its aggregations (a scroll's later pages).
    pub(crate) fn without_aggregations(&self) -> SearchPlan {
        let mut plan = self.clone();
        plan.aggs = es_aggs::Level::default();
        plan.request.tree.clear();
        plan
    }

    /// The answer in Elasticsearch's shape, with the aggregations `Aggs::evaluate` rendered;
    /// `indices` are the searched indices (several: the hits came from a `Searcher::union`
    /// of them, in that order).
    pub(crate) fn answer(
        &self,
        indices: &[String],
        response: &SearchResponse,
        extras: Extras,
        started: Instant,
    ) -> JsonValue {
        let words = QueryWords::of(self.request.ast.as_ref());
        let hits: Vec<JsonValue> = response
            .hits
            .iter()
            .skip(self.from)
            .map(|hit| {
                let flat = event_json(&hit.event);
                let id = quarry_query::doc_id::id_of(hit.time, &hit.event);
                let index = match indices {
                    [one] => one,
                    many => many
                        .get(Searcher::part_of(hit.location.block_id))
                        .map_or("", String::as_str),
                };
                let mut json = json!({
                    "_index": index,
                    "_id": id,
                    "_score": hit.score.map(f64::from),
                });
                self.view.render(&mut json, &flat, hit.time, &words);
                if let Some(field) = &self.collapse {
                    // A collapsed hit shows the value of its group.
                    let value = flat.get(field).cloned().unwrap_or(JsonValue::Null);
                    let values = match value {
                        JsonValue::Array(values) => values,
                        one => vec![one],
                    };
                    if json.get("fields").is_none() {
                        json["fields"] = json!({});
                    }
                    json["fields"][field.as_str()] = values.into();
                }
                if !hit.matched.is_empty() {
                    json["matched_queries"] = hit.matched.clone().into();
                }
                let values = |mut values: Vec<JsonValue>, cursor: String| {
                    if self.sort_tiebreak {
                        values.push(JsonValue::String(cursor));
                    }
                    JsonValue::Array(values)
                };
                let ms = hit.time.div_euclid(1_000_000);
                if let Some(cursor) = hit.cursor {
                    let value = if self.sort_values > 0 {
                        vec![ms.into()]
                    } else {
                        vec![]
                    };
                    json["sort"] = values(value, cursor.to_string());
                }
                if let (Some(cursor), Some(sort)) = (&hit.sort_cursor, &self.request.sort_field) {
                    let shown = sort
                        .keys
                        .iter()
                        .zip(&cursor.values)
                        .map(|(key, value)| match key.field.as_str() {
                            quarry_query::parser::TIME_FIELD => ms.into(),
                            field => exact_integer(&hit.event, field, value)
                                .unwrap_or_else(|| value.to_json()),
                        })
                        .collect();
                    json["sort"] = values(shown, cursor.to_string());
                }
                json
            })
            .collect();
        let max_score = response
            .hits
            .iter()
            .filter_map(|h| h.score)
            .fold(None, |max: Option<f32>, s| {
                Some(max.map_or(s, |m| m.max(s)))
            });
        let mut hits_json = json!({
            "max_score": max_score.map(f64::from),
            "hits": hits,
        });
        let total = response.count.unwrap_or(0);
        match (self.total_as_int, self.track_total_hits) {
            // Elasticsearch's -1: not counted.
            (true, TrackTotalHits::Not) => hits_json["total"] = (-1).into(),
            (true, _) => hits_json["total"] = total.into(),
            (false, TrackTotalHits::Not) => {}
            (false, TrackTotalHits::UpTo(limit)) if total > limit => {
                hits_json["total"] = json!({"value": limit, "relation": "gte"});
            }
            (false, _) => hits_json["total"] = json!({"value": total, "relation": "eq"}),
        }
        let mut body = json!({
            "took": started.elapsed().as_millis() as u64,
            "timed_out": false,
            "_shards": shards(response, indices),
            "hits": hits_json,
        });
        if !self.aggs.is_empty() {
            body["aggregations"] = extras.aggregations.into();
        }
        if !self.suggest.is_empty() {
            body["suggest"] = extras.suggest.into();
        }
        body
    }
}

/// A sort value as the event's own integer when it holds one the (64-bit float) sort value
/// stands for: a long above 2^53 prints as sent, not rounded, and so does a date's time in
/// nanoseconds.
fn exact_integer(
    event: &[(String, quarry_format::Value)],
    field: &str,
    value: &quarry_query::field_sort::SortValue,
) -> Option<JsonValue> {
    let quarry_query::field_sort::SortValue::Number(number) = value else {
        return None;
    };
    match event
        .iter()
        .find(|(name, _)| name == field)
        .map(|(_, v)| v)?
    {
        quarry_format::Value::I64(n) if *n as f64 == *number => Some((*n).into()),
        quarry_format::Value::U64(n) if *n as f64 == *number => Some((*n).into()),
        // A `date_nanos` field sorts by nanoseconds, which an f64 holds only to 256 ns: the
        // event's own date gives them exactly.
        quarry_format::Value::Str(text) if number.abs() >= 9.0e15 => {
            quarry_query::time::parse_time(text, 0)
                .ok()
                .filter(|nanos| *nanos as f64 == *number)
                .map(JsonValue::from)
        }
        _ => None,
    }
}

/// An event's flattened fields (`client.seq`) as the nested objects a client sent
/// (`{"client": {"seq": ...}}`), as Elasticsearch returns `_source`. A name that is both a
/// value and an object's prefix (`a` and `a.b`) keeps its dotted form.
pub(crate) fn nested(flat: Map<String, JsonValue>) -> Map<String, JsonValue> {
    let mut out = Map::new();
    let mut dotted = Vec::new();
    for (name, value) in flat {
        if name.contains('.') {
            dotted.push((name, value));
        } else {
            out.insert(name, value);
        }
    }
    for (name, value) in dotted {
        insert_dotted(&mut out, name, value, None);
    }
    out
}

/// Inserts `value` under the dotted `name` as nested objects (each object's children under
/// its `children` key, or in the object itself), or under `name` itself where a part of the
/// path is already a value.
fn insert_dotted(
    object: &mut Map<String, JsonValue>,
    name: String,
    value: JsonValue,
    children: Option<&str>,
) {
    let parts: Vec<&str> = name.split('.').collect();
    if parts.iter().any(|p| p.is_empty()) || !insert_path(object, &parts, value.clone(), children) {
        object.insert(name, value);
    }
}

/// Inserts `value` at `path` in nested objects; false (and nothing changed) when a part of
/// the path is already a non-object value or the leaf already exists.
fn insert_path(
    object: &mut Map<String, JsonValue>,
    path: &[&str],
    value: JsonValue,
    children: Option<&str>,
) -> bool {
    match path {
        [] => false,
        [leaf] => {
            if object.contains_key(*leaf) {
                return false;
            }
            object.insert((*leaf).to_owned(), value);
            true
        }
        [head, rest @ ..] => {
            let child = object
                .entry((*head).to_owned())
                .or_insert_with(|| match children {
                    Some(key) => json!({ key: {} }),
                    None => json!({}),
                });
            let child = match children {
                Some(key) => child.get_mut(key),
                None => Some(child),
            };
            match child.and_then(JsonValue::as_object_mut) {
                Some(child) => insert_path(child, rest, value, children),
                None => false,
            }
        }
    }
}

pub(crate) type FieldSummary = std::collections::BTreeMap<String, quarry_query::FieldSummary>;

/// A search body's `pit`: `{"id": ..., "keep_alive": "1m"}`.
fn point_in_time(value: &JsonValue) -> Result<(String, Option<std::time::Duration>), ApiError> {
    let object = value
        .as_object()
        .ok_or_else(|| ApiError::bad_request("pit: expected {\"id\": ..., \"keep_alive\": ...}"))?;
    let mut id = None;
    let mut keep_alive = None;
    for (key, value) in object {
        match (key.as_str(), value.as_str()) {
            ("id", Some(text)) => id = Some(text.to_owned()),
            ("keep_alive", Some(text)) => {
                keep_alive = Some(es_scroll::keep_alive(text, "pit.keep_alive")?)
            }
            _ => return Err(ApiError::bad_request(format!("unsupported: pit.{key}"))),
        }
    }
    let id = id.ok_or_else(|| ApiError::bad_request("pit: expected an id"))?;
    Ok((id, keep_alive))
}

/// The `q` URL parameter, read as Elasticsearch's `query_string` with the parameters that go
/// with it (`df`, `default_operator`, `analyze_wildcard`, `lenient`).
fn q_param(params: &EsParams, now: i64) -> Result<Option<Ast>, ApiError> {
    let Some(options) = q_options(params)? else {
        return Ok(None);
    };
    dsl::query_string(false, &options, "q", now)
        .map(Some)
        .map_err(dsl_error)
}

/// `q` and the URL parameters that shape it, as the options of a `query_string` query.
fn q_options(params: &EsParams) -> Result<Option<Map<String, JsonValue>>, ApiError> {
    let Some(q) = params.get("q") else {
        return Ok(None);
    };
    let mut options = Map::new();
    options.insert("query".into(), q.into());
    for (param, option) in [
        ("df", "default_field"),
        ("default_operator", "default_operator"),
    ] {
        if let Some(value) = params.get(param) {
            options.insert(option.into(), value.into());
        }
    }
    for flag in ["analyze_wildcard", "lenient"] {
        if params.get(flag).is_some() {
            options.insert(flag.into(), params.flag(flag, false)?.into());
        }
    }
    Ok(Some(options))
}

/// `_count` on a node with `--peers`: each index's tenant counted over the cluster (its query
/// compiled by every leaf, with a filtered alias's filters), the counts summed; a node or
/// block missing is a failed shard, as Elasticsearch reports one.
async fn cluster_count(
    state: &Arc<AppState>,
    root: &quarry_cluster::Root,
    index: &str,
    headers: &HeaderMap,
    params: &EsParams,
    query: JsonValue,
    now: i64,
) -> Result<String, ApiError> {
    let rules = es_indices::missing_rule(params)?.reading();
    let found = es_indices::resolve(state, index, headers, rules)?;
    let filters = crate::es_aliases::filters_of(state, index);
    let mut total = 0;
    let mut warnings = Vec::new();
    let mut indices = Vec::new();
    for (name, tenant) in &found {
        let query = with_alias_filters(query.clone(), filters.get(name))?;
        let request = SearchRequest {
            limit: 0,
            count: true,
            ..SearchRequest::default()
        };
        let source = quarry_query::leaf::QuerySource::Dsl { query, now };
        let response = crate::cluster_search_source(root, &tenant.name(), source, &request).await?;
        total += response.count.unwrap_or(0);
        warnings.extend(response.warnings);
        indices.push(name.clone());
    }
    let response = SearchResponse {
        warnings,
        ..SearchResponse::default()
    };
    Ok(json!({"count": total, "_shards": shards(&response, &indices)}).to_string())
}

/// A step of a collapse (`SearchPlan::collapse_step`): the hits shown, or the search for more.
pub(crate) enum Collapse {
    Done(Vec<quarry_query::HitEvent>),
    More(Box<SearchRequest>),
}

/// The group of a hit under `collapse` on `field`: its value as JSON text (`null` when it
/// has none).
fn group_of(hit: &quarry_query::HitEvent, field: &str) -> String {
    hit.event
        .iter()
        .find(|(name, _)| name == field)
        .map_or_else(
            || "null".to_owned(),
            |(_, value)| quarry_query::value_to_json(value).to_string(),
        )
}

/// The field of the body's `collapse` (`{"field": name}`), or why it cannot be honoured:
/// `inner_hits` is not supported; a collapse cannot page by `search_after` or a scroll, nor
/// be rescored, as in Elasticsearch.
fn collapse_of(
    body: &Map<String, JsonValue>,
    params: &EsParams,
) -> Result<Option<String>, ApiError> {
    let Some(collapse) = body.get("collapse") else {
        return Ok(None);
    };
    if params.get("scroll").is_some() {
        return Err(ApiError::bad_request(
            "cannot use `collapse` in a scroll context",
        ));
    }
    for (key, name) in [("search_after", "search_after"), ("rescore", "rescore")] {
        if body.contains_key(key) {
            return Err(ApiError::bad_request(format!(
                "cannot use `collapse` in conjunction with `{name}`"
            )));
        }
    }
    let object = collapse
        .as_object()
        .ok_or_else(|| ApiError::bad_request("collapse: expected {\"field\": name}"))?;
    for key in object.keys() {
        match key.as_str() {
            // How many groups' inner hits a cluster fetches at once: nothing here.
            "field" | "max_concurrent_group_searches" => {}
            other => {
                return Err(ApiError::bad_request(format!(
                    "unsupported: collapse.{other} (a collapse shows each group's best hit)"
                )))
            }
        }
    }
    let field = object
        .get("field")
        .and_then(JsonValue::as_str)
        .ok_or_else(|| ApiError::bad_request("collapse.field: expected a field name"))?;
    Ok(Some(field.to_owned()))
}

/// An answer's `_shards`: the searched indices as one shard that answered, and each damaged
/// block left out of the answer as one more that failed, named with its file and error.
/// Elasticsearch's clients and Kibana show "k of n shards failed" and each reason, so a
/// partial answer is never taken for a whole one.
pub(crate) fn shards(response: &SearchResponse, indices: &[String]) -> JsonValue {
    let index = match indices {
        [one] => JsonValue::from(one.as_str()),
        _ => JsonValue::Null,
    };
    let mut failures: Vec<JsonValue> = damaged_blocks(response)
        .map(|(path, error)| {
            json!({
                "shard": 0,
                "index": index,
                "node": "quarry",
                "reason": {
                    "type": "damaged_block_exception",
                    "reason": format!("block {} left out: {error}", path.display()),
                },
            })
        })
        .collect();
    // In a cluster, a node that did not answer is a failed shard too.
    failures.extend(
        response
            .warnings
            .iter()
            .filter_map(|warning| match warning {
                Warning::LeafUnavailable { leaf, error } => Some(json!({
                    "shard": 0,
                    "index": index,
                    "node": leaf,
                    "reason": {
                        "type": "node_unavailable_exception",
                        "reason": format!("node {leaf} did not answer: {error}"),
                    },
                })),
                _ => None,
            }),
    );
    let mut shards = json!({
        "total": 1 + failures.len(),
        "successful": 1,
        "skipped": 0,
        "failed": failures.len(),
    });
    if !failures.is_empty() {
        shards["failures"] = failures.into();
    }
    shards
}

/// The error for an answer with damaged blocks left out when the request does not take a
/// partial answer (`allow_partial_search_results=false`).
fn partial_refused(response: &SearchResponse) -> ApiError {
    let blocks: Vec<String> = damaged_blocks(response)
        .map(|(path, error)| format!("{}: {error}", path.display()))
        .collect();
    ApiError::internal(format!(
        "Partial shards failure: damaged blocks left out ({}), and allow_partial_search_results is false",
        blocks.join("; ")
    ))
    .with_kind("search_phase_execution_exception")
}

/// Each block left out of `response` as damaged: its file and why.
fn damaged_blocks(
    response: &SearchResponse,
) -> impl Iterator<Item = (&std::path::Path, &str)> + '_ {
    response
        .warnings
        .iter()
        .filter_map(|warning| match warning {
            Warning::DamagedBlock { path, error } | Warning::BlockUnavailable { path, error } => {
                Some((path.as_path(), error.as_str()))
            }
            _ => None,
        })
}

fn unknown_body_key(key: &str) -> ApiError {
    ApiError::bad_request(format!("unsupported: [{key}] in the search body"))
}

/// Whether a value asks for nothing: null, false, or an empty object or list.
fn is_empty(value: &JsonValue) -> bool {
    match value {
        JsonValue::Null | JsonValue::Bool(false) => true,
        JsonValue::Object(object) => object.is_empty(),
        JsonValue::Array(items) => items.is_empty(),
        _ => false,
    }
}

/// `track_total_hits`: count every match, none, or up to a number (more shows as that
/// number with relation `gte`, as in Elasticsearch; Quarry counts them all anyway).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TrackTotalHits {
    Exact,
    Not,
    UpTo(u64),
}

impl TrackTotalHits {
    /// A number: -1 is every match.
    fn up_to(number: i64) -> Result<TrackTotalHits, ApiError> {
        match number {
            -1 => Ok(TrackTotalHits::Exact),
            n if n >= 0 => Ok(TrackTotalHits::UpTo(n as u64)),
            n => Err(ApiError::bad_request(format!(
                "[track_total_hits] parameter must be positive or equals to -1, got {n}"
            ))),
        }
    }
}

/// `from` or `size` in the URL: a whole number, 0 or more (Elasticsearch's words for a
/// negative one).
fn number_param(key: &str, value: &str) -> Result<usize, ApiError> {
    match value.parse::<i64>() {
        Ok(n) if n < 0 => Err(negative(key, n)),
        Ok(n) => Ok(n as usize),
        Err(_) => Err(ApiError::bad_request(format!(
            "{key}: expected a number, got {value:?}"
        ))),
    }
}

/// `from` or `size` in the body.
fn as_usize(key: &str, value: &JsonValue) -> Result<usize, ApiError> {
    match value.as_i64() {
        Some(n) if n < 0 => Err(negative(key, n)),
        Some(n) => Ok(n as usize),
        None => Err(ApiError::bad_request(format!(
            "{key}: expected a non-negative integer"
        ))),
    }
}

/// `from + size` (a scroll's page size) against `index.max_result_window`, in Elasticsearch's
/// words.
fn window_check(window: usize, most: usize, scroll: bool) -> Result<(), ApiError> {
    if window <= most {
        return Ok(());
    }
    Err(ApiError::bad_request(if scroll {
        format!("Batch size is too large, size must be less than or equal to: [{most}] but was [{window}]. Scroll batch sizes cost as much memory as result windows so they are controlled by the [index.max_result_window] index level setting.")
    } else {
        format!("Result window is too large, from + size must be less than or equal to: [{most}] but was [{window}]. See the scroll api for a more efficient way to request large data sets.")
    }))
}

fn negative(key: &str, n: i64) -> ApiError {
    ApiError::bad_request(format!("[{key}] parameter cannot be negative, found [{n}]"))
}

/// `"@timestamp"`, `["_score"]`, `[{"@timestamp": "desc"}]`,
/// `[{"@timestamp": {"order": "asc"}}, {"_doc": ...}]`.
/// A request's sort: what Quarry runs, and which `sort` values a hit shows.
struct SortRequest {
    spec: SortSpec,
    /// The keys with a value: the time or a field (not `_score`, not `_doc` alone).
    value_keys: usize,
    /// A `_doc` or `_shard_doc` key: the hit's cursor as the last value.
    doc_key: bool,
}

/// Every option of a sort key (`{"field": {"order": "asc", ...}}`), walked by
/// `crates/quarry/tests/es_options`: `unmapped_type` changes nothing (a field no event has
/// sorts nothing either way), `missing` is taken only as `_last` (where Quarry sorts events
/// without the field, Elasticsearch's default).
pub const SORT_OPTIONS: &[&str] = &["order", "unmapped_type", "missing"];

fn sort_of(value: &JsonValue) -> Result<SortRequest, ApiError> {
    // A list of sorts, or one; an object may hold several fields in order (Grafana sends
    // `{"@timestamp": {...}, "_doc": {...}}`).
    let mut keys: Vec<(String, String)> = Vec::new();
    let items: Vec<&JsonValue> = match value {
        JsonValue::Array(items) => items.iter().collect(),
        single => vec![single],
    };
    for item in items {
        match item {
            JsonValue::String(field) => {
                let (field, order) = field.split_once(':').unwrap_or((field, ""));
                keys.push((field.to_owned(), order.to_owned()));
            }
            JsonValue::Object(object) => {
                for (field, spec) in object {
                    let order = match spec {
                        JsonValue::String(order) => order.clone(),
                        JsonValue::Object(spec) => {
                            if let Some(option) =
                                spec.keys().find(|k| !SORT_OPTIONS.contains(&k.as_str()))
                            {
                                return Err(ApiError::bad_request(format!(
                                    "unsupported: sort.{field}.{option}"
                                )));
                            }
                            match spec.get("missing") {
                                None => {}
                                Some(JsonValue::String(last)) if last == "_last" => {}
                                Some(other) => {
                                    return Err(ApiError::bad_request(format!(
                                        "unsupported: sort.{field}.missing = {other} (events without the field sort last)"
                                    )))
                                }
                            }
                            spec.get("order")
                                .and_then(JsonValue::as_str)
                                .unwrap_or("")
                                .to_owned()
                        }
                        _ => String::new(),
                    };
                    keys.push((field.clone(), order));
                }
            }
            _ => {
                return Err(ApiError::bad_request(
                    "sort: expected a field or {field: order}",
                ))
            }
        }
    }
    // `_doc` keys (an unspecified order) add nothing to Quarry's own total tie-break.
    // `_doc` alone is index order, which for Quarry is time order, newest first (what
    // scrolls ask for: `helpers.scan` sorts by `_doc`).
    let is_doc = |field: &str| matches!(field, "_doc" | "_shard_doc");
    let doc_key = keys.iter().any(|(field, _)| is_doc(field));
    let doc_order_only = !keys.is_empty() && keys.iter().all(|(field, _)| is_doc(field));
    if doc_order_only {
        return Ok(SortRequest {
            spec: SortSpec::Order(SortOrder::TimeDesc),
            value_keys: 0,
            doc_key,
        });
    }
    keys.retain(|(field, _)| !is_doc(field));
    let mut sort_keys = Vec::with_capacity(keys.len());
    for (field, order) in &keys {
        let descending = match order.as_str() {
            "desc" => true,
            "asc" => false,
            // Elasticsearch sorts dates ascending by default; logs want the newest first,
            // and every client that sorts on time names the order.
            "" => dsl::field_name(field) == "_time",
            other => {
                return Err(ApiError::bad_request(format!(
                    "sort: unknown order {other:?}"
                )))
            }
        };
        sort_keys.push(SortKey {
            field: dsl::field_name(field).to_owned(),
            descending,
        });
    }
    let spec = match sort_keys.as_slice() {
        [] => SortSpec::Order(SortOrder::Relevance),
        [only] => match only.field.as_str() {
            "_score" => SortSpec::Order(SortOrder::Relevance),
            "_time" if only.descending => SortSpec::Order(SortOrder::TimeDesc),
            "_time" => SortSpec::Order(SortOrder::TimeAsc),
            _ => SortSpec::Field(FieldSort { keys: sort_keys }),
        },
        many => {
            // A field sort computes no scores.
            if many.iter().any(|k| k.field == "_score") {
                return Err(ApiError::bad_request(format!(
                    "unsupported: sort by _score beside other keys ({})",
                    keys.iter()
                        .map(|(field, _)| format!("[{field}]"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            }
            SortSpec::Field(FieldSort { keys: sort_keys })
        }
    };
    let value_keys = match &spec {
        SortSpec::Order(SortOrder::Relevance) => 0,
        SortSpec::Order(_) => 1,
        SortSpec::Field(sort) => sort.keys.len(),
    };
    Ok(SortRequest {
        value_keys,
        spec,
        doc_key,
    })
}

/// `search_after`: a hit's `sort` values. With a tiebreaker (`_doc` key or a point in time)
/// the last is Quarry's cursor and paging is exact; values alone continue strictly after
/// the value (a time in milliseconds or as a date, or a field's value). The two values
/// Quarry gave before sort values were Elasticsearch's (`[value, cursor]`) are read too.
fn search_after_of(
    value: &JsonValue,
    request: &mut SearchRequest,
    value_keys: usize,
    tiebreak: bool,
    now: i64,
) -> Result<(), ApiError> {
    let values = value.as_array().ok_or_else(|| {
        ApiError::bad_request("search_after: expected the `sort` values of a hit")
    })?;
    let wanted = value_keys + usize::from(tiebreak);
    let cursor_text = match (tiebreak, values.len()) {
        (true, _) => values.last().and_then(JsonValue::as_str),
        (false, 2) if value_keys == 1 => values[1].as_str(),
        _ => None,
    };
    let exact_old = !tiebreak && values.len() == 2 && value_keys == 1 && cursor_text.is_some();
    if values.len() != wanted && !exact_old {
        return Err(ApiError::bad_request(format!(
            "search_after has {} values; the sort gives {wanted} (one per sort key, and the cursor of a `_doc` key or point in time)",
            values.len()
        )));
    }
    let field_sort = request.sort_field.clone();
    let bad_cursor = || {
        ApiError::bad_request(
            "search_after: the last value must be a hit's cursor, as its `sort` gave it",
        )
    };
    if let Some(sort) = field_sort {
        if let Some(text) = cursor_text {
            request.sort_after = Some(SortCursor::parse(text).ok_or_else(bad_cursor)?);
            return Ok(());
        }
        let mut after = Vec::with_capacity(sort.keys.len());
        for (key, value) in sort.keys.iter().zip(values) {
            after.push(match value {
                JsonValue::Null => SortValue::Missing,
                // The time as the hit showed it (milliseconds) or as a date.
                value if key.field == "_time" => {
                    SortValue::Number(time_after(value, now)?.saturating_mul(1_000_000) as f64)
                }
                JsonValue::String(text) => SortValue::Str(text.clone()),
                JsonValue::Bool(b) => SortValue::Str(b.to_string()),
                JsonValue::Number(n) => SortValue::Number(n.as_f64().unwrap_or(f64::NAN)),
                other => {
                    return Err(ApiError::bad_request(format!(
                        "search_after: {other} is not a sort value"
                    )))
                }
            });
        }
        // Past every hit holding those values: ties come in time order, reversed when the
        // first key is descending.
        let descending = sort.keys.first().is_some_and(|k| k.descending);
        let (time, block_id, doc) = if descending {
            (i64::MIN, 0, 0)
        } else {
            (i64::MAX, u64::MAX, u32::MAX)
        };
        request.sort_after = Some(SortCursor {
            values: after,
            time,
            block_id,
            doc,
        });
        return Ok(());
    }
    if request.sort == SortOrder::Relevance {
        return Err(ApiError::bad_request(
            "search_after needs a sort on @timestamp or a field",
        ));
    }
    if let Some(text) = cursor_text {
        request.after = Some(Cursor::parse(text).ok_or_else(bad_cursor)?);
        return Ok(());
    }
    let ms = time_after(&values[0], now)?;
    // Past every event of that millisecond, in the sort's direction.
    request.after = Some(if request.sort == SortOrder::TimeAsc {
        Cursor {
            time: ms
                .saturating_add(1)
                .saturating_mul(1_000_000)
                .saturating_sub(1),
            block_id: u64::MAX,
            doc: u32::MAX,
        }
    } else {
        Cursor {
            time: ms.saturating_mul(1_000_000),
            block_id: 0,
            doc: 0,
        }
    });
    Ok(())
}

/// `indices_boost`: `[{"index": factor}, ...]` (or, deprecated, one object), in order.
fn indices_boost_of(value: &JsonValue) -> Result<Vec<(String, f32)>, ApiError> {
    let entries: Vec<(&String, &JsonValue)> = match value {
        JsonValue::Object(object) => object.iter().collect(),
        JsonValue::Array(items) => items
            .iter()
            .map(|item| match item.as_object() {
                Some(object) if object.len() == 1 => Ok(object.iter().next().expect("one")),
                _ => Err(ApiError::bad_request(
                    "indices_boost: expected a list of {index: factor}",
                )),
            })
            .collect::<Result<_, _>>()?,
        _ => {
            return Err(ApiError::bad_request(
                "indices_boost: expected a list of {index: factor}",
            ))
        }
    };
    entries
        .into_iter()
        .map(|(name, factor)| {
            let factor = factor
                .as_f64()
                .filter(|f| f.is_finite() && *f >= 0.0)
                .ok_or_else(|| {
                    ApiError::bad_request(format!("indices_boost.{name}: expected a factor"))
                })?;
            Ok((name.clone(), factor as f32))
        })
        .collect()
}

/// Each of `indices`' score factor from `indices_boost` (the first entry naming the index,
/// its alias or a pattern matching it; 1 for none). An entry that names no index is a 404.
fn index_boosts(
    state: &Arc<AppState>,
    boosts: &[(String, f32)],
    indices: &[String],
    headers: &HeaderMap,
    missing: es_indices::Missing,
) -> Result<Vec<f32>, ApiError> {
    let mut named: Vec<(Vec<String>, f32)> = Vec::with_capacity(boosts.len());
    for (expression, factor) in boosts {
        let found = es_indices::resolve(state, expression, headers, missing)?;
        named.push((found.into_iter().map(|(name, _)| name).collect(), *factor));
    }
    Ok(indices
        .iter()
        .map(|index| {
            named
                .iter()
                .find(|(names, _)| names.contains(index))
                .map_or(1.0, |(_, factor)| *factor)
        })
        .collect())
}

/// A time `search_after` gives, in milliseconds: a number of them, or a date.
fn time_after(value: &JsonValue, now: i64) -> Result<i64, ApiError> {
    match value {
        JsonValue::Number(n) => n
            .as_i64()
            .or_else(|| n.as_f64().map(|v| v.floor() as i64))
            .ok_or_else(|| ApiError::bad_request("search_after: expected a time")),
        JsonValue::String(text) => Ok(quarry_query::time::parse_time(text, now)
            .map_err(|e| ApiError::bad_request(format!("search_after: {e}")))?
            .div_euclid(1_000_000)),
        other => Err(ApiError::bad_request(format!(
            "search_after: expected a time in milliseconds or a date, got {other}"
        ))),
    }
}
