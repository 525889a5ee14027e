//! Elasticsearch's search API: `GET|POST /{index}/_search`, `/_msearch` and `/_count`, where
//! `{index}` is an index expression over tenants (`logs-*`, `a,b`; none: every index the key
//! may read), answered from one snapshot (several indices: one `Searcher::union`).
//!
//! The request's `query` is compiled by `quarry_query::dsl` into the query language's tree,
//! `q` as Lucene's classic parser reads it. `size`, `from` (from + size ≤ 10,000,
//! Elasticsearch's `max_result_window`), one `sort` key (`_doc` alone is index order), and
//! `search_after` (a hit's `sort` values: its time in milliseconds or field value, and Quarry's
//! cursor); hits are shown as `es_hits` says; scrolls and points in time are `es_scroll`'s.
//! Aggregations (`parse_aggs`): `date_histogram`, `histogram`, `range`, `terms` and the
//! metrics, nested to any depth; each bucket below the first level is one more search over the
//! same snapshot. Every option of a body, URL or aggregation that Quarry does not honour is
//! refused by name (`check_agg_options`, `EsParams::check`).

use crate::es_api::{body_object, es_error, es_response, EsParams};
use crate::es_hits::{HitView, QueryWords};
use crate::es_indices;
use crate::es_scroll;
use crate::live::LiveIndex;
use crate::{event_json, ApiError, AppState};
use axum::body::Bytes;
use axum::extract::{Path as UrlPath, RawQuery, State};
use axum::http::HeaderMap;
use axum::response::Response;
use quarry_query::aggregation::AggSpec;
use quarry_query::dsl::{self, DslError};
use quarry_query::field_sort::{FieldSort, SortCursor, SortSpec};
use quarry_query::parser::{Ast, Occur};
use quarry_query::range::{Number, NumericRange};
use quarry_query::time::{now_nanos, parse_interval};
use quarry_query::Cursor;
use quarry_query::{HistogramInterval, SearchRequest, SearchResponse, Searcher, SortOrder};
use serde_json::{json, Map, Value as JsonValue};
use std::ops::Bound;
use std::sync::Arc;
use std::time::Instant;

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
        params.check("_search", &SearchPlan::params())?;
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
        params.check(
            "_count",
            &[
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
            ],
        )?;
        let now = now_nanos();
        let mut ast = q_param(&params, now)?;
        for (key, value) in &body_object(&body, "the _count body")? {
            match key.as_str() {
                "query" => ast = Some(dsl::compile(value, "query", now).map_err(dsl_error)?),
                other => {
                    return Err(ApiError::bad_request(format!(
                        "unsupported: [{other}] in the _count body (it takes query)"
                    )))
                }
            }
        }
        let (_, snapshots) = snapshots_of(&state, &index, &headers, &params)?;
        let request = SearchRequest {
            ast,
            limit: 0,
            count: true,
            ..SearchRequest::default()
        };
        let response = state
            .search(move || {
                searcher_over(&snapshots)
                    .execute(&request)
                    .map_err(ApiError::from_query)
            })
            .await?;
        Ok(json!({
            "count": response.count.unwrap_or(0),
            "_shards": {"total": 1, "successful": 1, "skipped": 0, "failed": 0},
        })
        .to_string())
    }
    .await;
    es_response(answer)
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
        // Every search of the body is run in turn on its tenant's single index; the rest
        // steer a cluster's fan-out.
        params.check(
            "_msearch",
            &[
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
            ],
        )?;
        // What each search takes from the URL.
        let mut shared = Vec::new();
        for name in [
            "rest_total_hits_as_int",
            "search_type",
            "typed_keys",
            "ignore_unavailable",
        ] {
            if let Some(value) = params.get(name) {
                shared.push(format!("{name}={value}"));
            }
        }
        let shared_text = shared;
        let text = std::str::from_utf8(&body)
            .map_err(|_| ApiError::bad_request("the _msearch body is not UTF-8"))?;
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        if !lines.len().is_multiple_of(2) {
            return Err(ApiError::bad_request(
                "the _msearch body must hold pairs of lines: a header, then a search",
            ));
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
                Ok((header, body)) => {
                    if let Some(key) = header.as_object().and_then(|h| {
                        h.keys().find(|k| {
                            !matches!(
                                k.as_str(),
                                "index"
                                    | "search_type"
                                    | "ignore_unavailable"
                                    | "allow_no_indices"
                                    | "expand_wildcards"
                                    | "preference"
                                    | "request_cache"
                            )
                        })
                    }) {
                        let error = ApiError::bad_request(format!(
                            "unsupported: [{key}] in the header of search {pair}"
                        ));
                        responses.push(error_item(error));
                        continue;
                    }
                    let index = match header.get("index") {
                        Some(JsonValue::String(index)) => index.clone(),
                        Some(JsonValue::Array(names)) if !names.is_empty() => names
                            .iter()
                            .filter_map(JsonValue::as_str)
                            .collect::<Vec<_>>()
                            .join(","),
                        _ => default_index.clone(),
                    };
                    // The header's own flags join the URL's.
                    let mut own = shared_text.clone();
                    if header.get("ignore_unavailable") == Some(&JsonValue::Bool(true)) {
                        own.push("ignore_unavailable=true".to_owned());
                    }
                    match EsParams::parse(Some(&own.join("&"))) {
                        Ok(params) => {
                            search_one(&state, &index, &params, &body, &headers, started).await
                        }
                        Err(error) => Err(error),
                    }
                }
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
    let answer = (|| {
        let params = EsParams::parse(query.as_deref())?;
        params.check(
            "get mapping",
            &[
                "ignore_unavailable",
                "allow_no_indices",
                "expand_wildcards",
                "local",
            ],
        )?;
        state.require_some_key(&headers)?;
        let expression = crate::es_api::all_or(index);
        let missing = es_indices::missing_rule(&params)?;
        let indices: Map<String, JsonValue> =
            es_indices::resolve(&state, &expression, &headers, missing)?
                .into_iter()
                .map(|(name, tenant)| (name, json!({"mappings": mapping_of(&tenant.live)})))
                .collect();
        Ok::<_, ApiError>(JsonValue::Object(indices).to_string())
    })();
    es_response(answer)
}

/// A tenant's fields as an Elasticsearch mapping (`{"properties": ...}`): mapped fields as
/// their mapping says, the others as Elasticsearch's dynamic mapping would type them (strings
/// as `text` with a `keyword` sub-field, as Quarry indexes both), dotted names as nested
/// `properties`, `_time` as `@timestamp`. Enough for clients and Grafana's field lists.
pub(crate) fn mapping_of(live: &LiveIndex) -> JsonValue {
    let searcher = live.published_snapshot();
    let schema = live.schema();
    let mut properties = Map::new();
    // Mapped names first (patterns are not field names: the fields they map show below).
    for (name, rules) in &schema.mapping().fields {
        if !name.contains('*') {
            insert_dotted(
                &mut properties,
                name.clone(),
                rules.to_es_json(),
                Some("properties"),
            );
        }
    }
    for (name, (types, _)) in crate::field_summary(&searcher) {
        let has = |ty: &str| types.get(ty).is_some_and(|&n| n > 0);
        let mapping = if let Some(rules) = schema.rules(&name) {
            rules.to_es_json()
        } else if name == quarry_format::TIME_FIELD || has("timestamp") && types.len() == 1 {
            json!({"type": "date"})
        } else if has("string") || has("json") {
            json!({"type": "text", "fields": {"keyword": {"type": "keyword", "ignore_above": quarry_format::limits::MAX_EXACT_TERM_LEN}}})
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
    json!({ "properties": properties })
}

fn dsl_error(error: DslError) -> ApiError {
    ApiError::bad_request(format!("[{}] {}", error.path, error.reason))
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
    let plan = SearchPlan::new(&object, params)?;
    if let Some(keep_alive) = params.get("scroll") {
        let keep_alive = es_scroll::keep_alive(keep_alive, "scroll")?;
        return es_scroll::start(state, index, plan, keep_alive, headers, started).await;
    }
    // A point in time: its snapshot and tenant; else the current snapshot of the indices the
    // path names (several: one searcher over all of them).
    let (indices, snapshots) = match &plan.pit {
        Some((id, keep_alive)) => {
            let (tenant, snapshot) = state.contexts.point_in_time(id, *keep_alive)?;
            state.authorize(&tenant, headers)?;
            (vec![tenant], vec![snapshot])
        }
        None => snapshots_of(state, index, headers, params)?,
    };
    let run = plan.clone();
    let (response, aggregations) = state
        .search(move || {
            // One snapshot for the main search and every bucket's: their counts agree.
            run.execute(&searcher_over(&snapshots))
        })
        .await?;
    let mut answer = plan.answer(&indices, &response, aggregations, started);
    if let Some((id, _)) = &plan.pit {
        answer["pit_id"] = id.clone().into();
    }
    Ok(answer)
}

/// The indices an index expression names and their current snapshots.
fn snapshots_of(
    state: &Arc<AppState>,
    index: &str,
    headers: &HeaderMap,
    params: &EsParams,
) -> Result<(Vec<String>, Vec<Arc<Searcher>>), ApiError> {
    let found = es_indices::resolve(state, index, headers, es_indices::missing_rule(params)?)?;
    if found.len() > quarry_query::searcher::MAX_UNION_PARTS {
        return Err(ApiError::bad_request(format!(
            "[{index}] names {} indices; one search reads at most {}",
            found.len(),
            quarry_query::searcher::MAX_UNION_PARTS
        )));
    }
    let indices = found.iter().map(|(name, _)| name.clone()).collect();
    let snapshots = found
        .iter()
        .map(|(_, tenant)| tenant.live.published_snapshot())
        .collect();
    Ok((indices, snapshots))
}

/// One searcher over `snapshots` (a union of several).
fn searcher_over(snapshots: &[Arc<Searcher>]) -> Arc<Searcher> {
    match snapshots {
        [one] => one.clone(),
        many => Arc::new(Searcher::union(many)),
    }
}

/// What one `_search` body asks for, as Quarry's request plus what the answer's shape needs.
#[derive(Clone)]
pub(crate) struct SearchPlan {
    pub(crate) request: SearchRequest,
    from: usize,
    /// `pit`: a point in time's id and its renewed keep-alive.
    pit: Option<(String, Option<std::time::Duration>)>,
    track_total_hits: bool,
    /// `rest_total_hits_as_int`: `hits.total` as a number, as before Elasticsearch 7.
    total_as_int: bool,
    /// `typed_keys`: each aggregation's name prefixed with its type (`sterms#by_host`), as
    /// the Java client asks.
    typed_keys: bool,
    view: HitView,
    aggs: Aggs,
}

/// The aggregations of one level. Metrics (and `terms` without sub-aggregations) and one
/// `date_histogram` with only metrics under it are answered by the level's own search (the
/// main search at the top); every other bucket aggregation (`terms`, `histogram`, `range`,
/// `date_histogram` with buckets under it) by one more search per bucket over the same
/// snapshot, its query ANDed with the bucket's filter, recursively.
#[derive(Clone, Default)]
struct Aggs {
    metrics: Vec<EsAgg>,
    histogram: Option<Histogram>,
    buckets: Vec<BucketAgg>,
}

#[derive(Clone)]
struct Histogram {
    name: String,
    interval: i64,
    min_doc_count: u64,
    /// `extended_bounds` (ns): with `min_doc_count` 0, empty buckets fill them.
    bounds: Option<(i64, i64)>,
    /// `format: epoch_millis`: `key_as_string` is the key's digits, else an ISO time.
    key_millis: bool,
    metrics: Vec<EsAgg>,
}

/// A bucket aggregation answered bucket by bucket.
#[derive(Clone)]
struct BucketAgg {
    name: String,
    kind: BucketKind,
    sub: Aggs,
}

#[derive(Clone)]
enum BucketKind {
    /// The buckets of a `terms` (ordered and cut as asked).
    Terms { terms: EsAgg, field: String },
    /// A `date_histogram` (its `metrics` are in `sub`).
    DateHistogram(Histogram),
    /// Numeric buckets `[key, key + interval)`, keys `offset + n * interval`.
    Histogram {
        field: String,
        interval: f64,
        offset: f64,
        min_doc_count: u64,
        /// `extended_bounds`: buckets from min to max even when empty.
        bounds: Option<(f64, f64)>,
    },
    /// `[from, to)` per range.
    Range {
        field: String,
        ranges: Vec<RangeBucket>,
        keyed: bool,
    },
}

#[derive(Clone)]
struct RangeBucket {
    key: String,
    from: Option<f64>,
    to: Option<f64>,
}

/// The most buckets one `histogram` may make (Elasticsearch's `search.max_buckets` is 65,536;
/// each bucket here is a search).
const MAX_HISTOGRAM_BUCKETS: f64 = 10_000.0;

/// One metric or terms aggregation: its name in the request, its kind, and Quarry's spec.
#[derive(Clone)]
struct EsAgg {
    name: String,
    kind: String,
    spec: AggSpec,
    /// `terms` ordered by key (`Some(descending)`), and the buckets asked for: all keys (up
    /// to `KEY_ORDER_LIMIT`) are counted, sorted by key and cut to `size`, as Elasticsearch
    /// picks them.
    key_order: Option<bool>,
    size: usize,
    /// `terms`' `min_doc_count` (1 unless asked).
    min_doc_count: u64,
    /// `percentiles`' `keyed` (true unless asked): values by percent, or a list.
    keyed: bool,
}

/// The most distinct keys a `terms` ordered by `_key` reads before sorting.
const KEY_ORDER_LIMIT: u64 = 10_000;

impl SearchPlan {
    /// The URL parameters `_search` takes. Those that only steer how a cluster of shards
    /// runs a search (`search_type`, `preference`, `max_concurrent_shard_requests`, ...)
    /// change nothing over a tenant's single index, and `ignore_unavailable`,
    /// `allow_no_indices` and `expand_wildcards` nothing for one concrete index.
    fn params() -> Vec<&'static str> {
        let mut known = vec![
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
        ];
        known.extend_from_slice(HitView::PARAMS);
        known
    }

    fn new(body: &Map<String, JsonValue>, params: &EsParams) -> Result<SearchPlan, ApiError> {
        let now = now_nanos();
        let mut request = SearchRequest {
            sort: SortOrder::Relevance,
            count: true,
            ..SearchRequest::default()
        };
        let mut size = 10usize;
        let mut from = 0usize;
        let mut track_total_hits = true;
        let mut aggs = Aggs::default();
        let mut view = HitView::default();
        let mut search_after = None;
        let mut pit = None;
        request.ast = q_param(params, now)?;
        if let Some(value) = params.get("size") {
            size = number_param("size", value)?;
        }
        if let Some(value) = params.get("from") {
            from = number_param("from", value)?;
        }
        if let Some(value) = params.get("track_total_hits") {
            track_total_hits = value != "false";
        }
        let total_as_int = params.flag("rest_total_hits_as_int", false)?;
        let typed_keys = params.flag("typed_keys", false)?;
        view.read_params(params)?;
        if let Some(kind) = params.get("search_type") {
            if !matches!(kind, "query_then_fetch" | "dfs_query_then_fetch") {
                return Err(ApiError::bad_request(format!(
                    "unsupported: search_type [{kind}] (query_then_fetch or dfs_query_then_fetch; with one index per tenant they are the same)"
                )));
            }
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
                "sort" => match sort_of(value)? {
                    SortSpec::Order(order) => request.sort = order,
                    SortSpec::Field(field) => request.sort_field = Some(field),
                },
                "search_after" => search_after = Some(value),
                "pit" => pit = Some(point_in_time(value)?),
                "track_total_hits" => track_total_hits = value.as_bool() != Some(false),
                "aggs" | "aggregations" => {
                    let object = value.as_object().ok_or_else(|| {
                        ApiError::bad_request(format!("{key}: expected an object of aggregations"))
                    })?;
                    aggs = parse_aggs(object, key)?;
                }
                // No-ops: Quarry's own request timeout bounds every search; a shard-level
                // timeout cannot give a different answer over one index.
                "timeout" => {}
                // Options at their default ask for nothing.
                "explain" | "profile" | "track_scores" | "seq_no_primary_term"
                    if value == &JsonValue::Bool(false) => {}
                "runtime_mappings" | "script_fields" | "stats" if is_empty(value) => {}
                other => {
                    return Err(ApiError::bad_request(format!(
                        "unsupported: [{other}] in the search body"
                    )))
                }
            }
        }
        if let Some(value) = search_after {
            // A hit's `sort` values: [time in ms or the field's value, Quarry's cursor].
            let text = value
                .as_array()
                .and_then(|values| values.get(1))
                .and_then(JsonValue::as_str);
            let bad = || {
                ApiError::bad_request(
                    "search_after: expected the `sort` values of a hit ([value, cursor])",
                )
            };
            if request.sort_field.is_some() {
                request.sort_after = Some(text.and_then(SortCursor::parse).ok_or_else(bad)?);
            } else {
                request.after = Some(text.and_then(Cursor::parse).ok_or_else(bad)?);
            }
        }
        if from + size > MAX_RESULT_WINDOW {
            return Err(ApiError::bad_request(format!(
                "Result window is too large, from + size must be less than or equal to: [{MAX_RESULT_WINDOW}] but was [{}]",
                from + size
            )));
        }
        request.limit = from + size;
        aggs.apply(&mut request);
        Ok(SearchPlan {
            request,
            from,
            pit,
            track_total_hits,
            total_as_int,
            typed_keys,
            view,
            aggs,
        })
    }

    /// Runs the search and its aggregations on one snapshot.
    pub(crate) fn execute(
        &self,
        searcher: &Searcher,
    ) -> Result<(SearchResponse, Map<String, JsonValue>), ApiError> {
        let response = searcher
            .execute(&self.request)
            .map_err(ApiError::from_query)?;
        let aggregations = self.aggs.evaluate(searcher, &self.request, &response)?;
        Ok((response, aggregations))
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
        plan.aggs = Aggs::default();
        plan.request.aggregations.clear();
        plan.request.histogram = None;
        plan
    }

    /// The answer in Elasticsearch's shape, with the aggregations `Aggs::evaluate` rendered;
    /// `indices` are the searched indices (several: the hits came from a `Searcher::union`
    /// of them, in that order).
    pub(crate) fn answer(
        &self,
        indices: &[String],
        response: &SearchResponse,
        aggregations: Map<String, JsonValue>,
        started: Instant,
    ) -> JsonValue {
        let words = QueryWords::of(self.request.ast.as_ref());
        let hits: Vec<JsonValue> = response
            .hits
            .iter()
            .skip(self.from)
            .map(|hit| {
                let flat = event_json(&hit.event);
                let id = crate::es_ids::id_of(hit.time, &hit.event);
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
                if let Some(cursor) = hit.cursor {
                    json["sort"] = json!([hit.time.div_euclid(1_000_000), cursor.to_string()]);
                }
                if let Some(cursor) = &hit.sort_cursor {
                    json["sort"] = json!([cursor.value.to_json(), cursor.to_string()]);
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
        if self.total_as_int {
            hits_json["total"] = total.into();
        } else if self.track_total_hits {
            hits_json["total"] = json!({"value": total, "relation": "eq"});
        }
        let mut body = json!({
            "took": started.elapsed().as_millis() as u64,
            "timed_out": false,
            "_shards": {"total": 1, "successful": 1, "skipped": 0, "failed": 0},
            "hits": hits_json,
        });
        if !aggregations.is_empty() {
            let mut aggregations = aggregations;
            if self.typed_keys {
                self.aggs.type_keys(&mut aggregations);
            }
            body["aggregations"] = aggregations.into();
        }
        body
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

fn parse_aggs(object: &Map<String, JsonValue>, path: &str) -> Result<Aggs, ApiError> {
    let mut aggs = Aggs::default();
    for (name, definition) in object {
        let path = format!("{path}.{name}");
        let (kind, body, sub) = agg_parts(definition, &path)?;
        check_agg_options(kind, body, &format!("{path}.{kind}"))?;
        let sub = match sub {
            Some(sub) => Some(parse_aggs(sub, &format!("{path}.aggs"))?),
            None => None,
        };
        let bucket = |kind: BucketKind, sub: Option<Aggs>| BucketAgg {
            name: name.clone(),
            kind,
            sub: sub.unwrap_or_default(),
        };
        match kind {
            "date_histogram" => {
                let (interval, min_doc_count, bounds) = date_histogram(body, &path)?;
                let only_metrics = sub
                    .as_ref()
                    .is_none_or(|s| s.histogram.is_none() && s.buckets.is_empty());
                let mut histogram = Histogram {
                    name: name.clone(),
                    interval,
                    min_doc_count,
                    bounds,
                    key_millis: body.get("format").and_then(JsonValue::as_str)
                        == Some("epoch_millis"),
                    metrics: Vec::new(),
                };
                if only_metrics && aggs.histogram.is_none() {
                    histogram.metrics = sub.map(|s| s.metrics).unwrap_or_default();
                    aggs.histogram = Some(histogram);
                } else {
                    aggs.buckets
                        .push(bucket(BucketKind::DateHistogram(histogram), sub));
                }
            }
            "terms" if sub.is_some() => {
                let terms = es_agg(name, kind, body, &path)?;
                let field = terms.spec.field.clone().unwrap_or_default();
                aggs.buckets
                    .push(bucket(BucketKind::Terms { terms, field }, sub));
            }
            "histogram" => aggs
                .buckets
                .push(bucket(numeric_histogram(body, &path)?, sub)),
            "range" => aggs.buckets.push(bucket(range_buckets(body, &path)?, sub)),
            _ if sub.is_some() => {
                return Err(ApiError::bad_request(format!(
                    "{path}: [{kind}] cannot have sub-aggregations"
                )))
            }
            _ => aggs.metrics.push(es_agg(name, kind, body, &path)?),
        }
    }
    Ok(aggs)
}

/// The options each aggregation type takes: those honoured, and those that cannot change
/// its answer here (`shard_size`, `execution_hint`, `collect_mode`: counts are exact over one
/// index). Some are honoured only at certain values (`option_value_supported`). Any other
/// option is a 400 naming it: ignored, it would give a different answer than asked for.
fn check_agg_options(kind: &str, body: &JsonValue, path: &str) -> Result<(), ApiError> {
    let known: &[&str] = match kind {
        "date_histogram" => &[
            "field",
            "fixed_interval",
            "calendar_interval",
            "interval",
            "min_doc_count",
            "extended_bounds",
            "format",
            "time_zone",
            "keyed",
        ],
        "terms" => &[
            "field",
            "size",
            "order",
            "min_doc_count",
            "shard_size",
            "execution_hint",
            "collect_mode",
            "show_term_doc_count_error",
        ],
        "histogram" => &[
            "field",
            "interval",
            "offset",
            "min_doc_count",
            "extended_bounds",
        ],
        "range" => &["field", "ranges", "keyed"],
        "avg" | "min" | "max" | "sum" | "stats" | "value_count" => &["field"],
        "cardinality" => &["field", "precision_threshold"],
        "percentiles" => &["field", "percents", "keyed"],
        // The type itself is refused where it is built.
        _ => return Ok(()),
    };
    let Some(options) = body.as_object() else {
        return Err(ApiError::bad_request(format!(
            "{path}: expected an object of options"
        )));
    };
    for (key, value) in options {
        if !known.contains(&key.as_str()) {
            return Err(ApiError::bad_request(format!(
                "unsupported: {path}.{key} (Quarry takes {} here)",
                known.join(", ")
            )));
        }
        if !option_value_supported(kind, key, value) {
            return Err(ApiError::bad_request(format!(
                "unsupported: {path}.{key} = {value}"
            )));
        }
    }
    Ok(())
}

/// Options honoured at some values only.
fn option_value_supported(kind: &str, key: &str, value: &JsonValue) -> bool {
    let text = value.as_str().unwrap_or_default();
    match (kind, key) {
        // Buckets are counted in UTC (time zones come with the one-pass aggregations).
        ("date_histogram", "time_zone") => {
            matches!(
                text,
                "UTC" | "utc" | "Z" | "z" | "Etc/UTC" | "GMT" | "+00:00" | "-00:00"
            )
        }
        ("date_histogram", "format") => {
            matches!(
                text,
                "epoch_millis" | "strict_date_optional_time" | "date_optional_time"
            )
        }
        ("date_histogram", "keyed") => value == &JsonValue::Bool(false),
        ("terms", "show_term_doc_count_error") => value.is_boolean(),
        // Empty buckets of terms would need every value of the field.
        ("terms", "min_doc_count") => value.as_u64().is_some_and(|n| n >= 1),
        _ => true,
    }
}

fn field_of(body: &JsonValue, path: &str) -> Result<String, ApiError> {
    body.get("field")
        .and_then(JsonValue::as_str)
        .map(|f| dsl::field_name(f.strip_suffix(".keyword").unwrap_or(f)).to_owned())
        .ok_or_else(|| ApiError::bad_request(format!("{path}: expected a field")))
}

/// `histogram`: `field`, `interval` (> 0), `offset`, `min_doc_count` (0 by default, as
/// Elasticsearch's) and `extended_bounds`.
fn numeric_histogram(body: &JsonValue, path: &str) -> Result<BucketKind, ApiError> {
    let number = |key: &str| body.get(key).and_then(JsonValue::as_f64);
    let interval = number("interval")
        .filter(|i| i.is_finite() && *i > 0.0)
        .ok_or_else(|| ApiError::bad_request(format!("{path}: expected an interval > 0")))?;
    let bounds = body
        .get("extended_bounds")
        .and_then(|b| Some((b.get("min")?.as_f64()?, b.get("max")?.as_f64()?)));
    Ok(BucketKind::Histogram {
        field: field_of(body, path)?,
        interval,
        offset: number("offset").unwrap_or(0.0),
        min_doc_count: body
            .get("min_doc_count")
            .and_then(JsonValue::as_u64)
            .unwrap_or(0),
        bounds,
    })
}

/// `range`: `field`, `ranges` of `{"from", "to", "key"}` (from inclusive, to exclusive),
/// `keyed`.
fn range_buckets(body: &JsonValue, path: &str) -> Result<BucketKind, ApiError> {
    let items = body
        .get("ranges")
        .and_then(JsonValue::as_array)
        .ok_or_else(|| ApiError::bad_request(format!("{path}: expected ranges")))?;
    let mut ranges = Vec::with_capacity(items.len());
    for item in items {
        let bound = |key: &str| -> Result<Option<f64>, ApiError> {
            match item.get(key) {
                None | Some(JsonValue::Null) => Ok(None),
                Some(value) => value
                    .as_f64()
                    .or_else(|| value.as_str().and_then(|s| s.parse().ok()))
                    .map(Some)
                    .ok_or_else(|| {
                        ApiError::bad_request(format!("{path}: {key} must be a number"))
                    }),
            }
        };
        let (from, to) = (bound("from")?, bound("to")?);
        let text = |v: Option<f64>| v.map_or("*".to_owned(), |v| format!("{v:?}"));
        let key = match item.get("key").and_then(JsonValue::as_str) {
            Some(key) => key.to_owned(),
            None => format!("{}-{}", text(from), text(to)),
        };
        ranges.push(RangeBucket { key, from, to });
    }
    Ok(BucketKind::Range {
        field: field_of(body, path)?,
        ranges,
        keyed: body
            .get("keyed")
            .and_then(JsonValue::as_bool)
            .unwrap_or(false),
    })
}

impl Aggs {
    /// Sets what `request` must compute for this level in its own search: the histogram (with
    /// its metrics), else the metrics.
    fn apply(&self, request: &mut SearchRequest) {
        if let Some(histogram) = &self.histogram {
            request.histogram = Some(HistogramInterval::Fixed(histogram.interval));
            request.aggregations = histogram.metrics.iter().map(|a| a.spec.clone()).collect();
        } else {
            request.aggregations = self.metrics.iter().map(|a| a.spec.clone()).collect();
        }
    }

    /// This level's aggregations, rendered: `response` is the answer to `request` (made with
    /// `apply`); what it does not hold is searched for, on `searcher`.
    /// Refuses number metrics over a field that holds other values: `value_count` counts
    /// numbers only so far, and the others have no answer for strings (Elasticsearch refuses
    /// them on text and keyword fields too).
    fn check_fields(&self, summary: &FieldSummary) -> Result<(), ApiError> {
        let metrics = self
            .metrics
            .iter()
            .chain(self.histogram.iter().flat_map(|h| h.metrics.iter()));
        for agg in metrics {
            let number_metric = matches!(
                agg.kind.as_str(),
                "value_count" | "avg" | "min" | "max" | "sum" | "stats" | "percentiles"
            );
            let Some(field) = agg.spec.field.as_deref() else {
                continue;
            };
            if !number_metric || field == quarry_format::TIME_FIELD {
                continue;
            }
            let Some((types, _)) = summary.get(field) else {
                continue;
            };
            let other = types
                .iter()
                .find(|(ty, count)| **count > 0 && !matches!(**ty, "i64" | "u64" | "f64"));
            if let Some((ty, _)) = other {
                let ty = if *ty == "json" { "string" } else { ty };
                return Err(ApiError::bad_request(if agg.kind == "value_count" {
                    format!(
                        "unsupported: value_count of [{field}], which holds {ty} values (it counts numbers only so far)"
                    )
                } else {
                    format!(
                        "field [{field}] holds {ty} values: [{}] needs numbers",
                        agg.kind
                    )
                }));
            }
        }
        for bucket in &self.buckets {
            bucket.sub.check_fields(summary)?;
        }
        Ok(())
    }

    fn evaluate(
        &self,
        searcher: &Searcher,
        request: &SearchRequest,
        response: &SearchResponse,
    ) -> Result<Map<String, JsonValue>, ApiError> {
        let summary = crate::field_summary(searcher);
        self.check_fields(&summary)?;
        let mut out = Map::new();
        if let Some(histogram) = &self.histogram {
            out.insert(histogram.name.clone(), histogram.render(response, &summary));
        }
        // Metrics beside a histogram were not in the level's search.
        let metrics_answer;
        let metrics_from = if self.histogram.is_some() && !self.metrics.is_empty() {
            let mut metrics = within(request, None);
            metrics.aggregations = self.metrics.iter().map(|a| a.spec.clone()).collect();
            metrics_answer = execute(searcher, &metrics)?;
            &metrics_answer
        } else {
            response
        };
        for agg in &self.metrics {
            let value = metrics_from
                .aggregations
                .as_ref()
                .and_then(|a| a.get(&agg.spec.name));
            out.insert(agg.name.clone(), rendered(agg, value, &summary));
        }
        for bucket in &self.buckets {
            out.insert(bucket.name.clone(), bucket.evaluate(searcher, request)?);
        }
        Ok(out)
    }
}

type FieldSummary =
    std::collections::BTreeMap<String, (std::collections::BTreeMap<&'static str, u64>, bool)>;

impl Aggs {
    /// Renames each aggregation of `out` (this level's answer) `TYPE#NAME`, with Elasticsearch's
    /// type names, and those in each bucket below.
    fn type_keys(&self, out: &mut Map<String, JsonValue>) {
        for metric in &self.metrics {
            let ty = match metric.kind.as_str() {
                "terms" => terms_type(out.get(&metric.name)),
                kind => metric_type(kind),
            };
            rename(out, &metric.name, ty);
        }
        if let Some(histogram) = &self.histogram {
            for bucket in buckets_of(out.get_mut(&histogram.name)) {
                for metric in &histogram.metrics {
                    rename(bucket, &metric.name, metric_type(&metric.kind));
                }
            }
            rename(out, &histogram.name, "date_histogram");
        }
        for agg in &self.buckets {
            let ty = match &agg.kind {
                BucketKind::Terms { .. } => terms_type(out.get(&agg.name)),
                BucketKind::DateHistogram(_) => "date_histogram",
                BucketKind::Histogram { .. } => "histogram",
                BucketKind::Range { .. } => "range",
            };
            for bucket in buckets_of(out.get_mut(&agg.name)) {
                agg.sub.type_keys(bucket);
            }
            rename(out, &agg.name, ty);
        }
    }
}

/// `terms`' type name by its keys: strings `sterms`, integers `lterms`, floats `dterms`.
fn terms_type(answer: Option<&JsonValue>) -> &'static str {
    match answer.and_then(|a| a["buckets"].get(0)).map(|b| &b["key"]) {
        Some(JsonValue::Number(n)) if n.is_f64() => "dterms",
        Some(JsonValue::Number(_)) => "lterms",
        _ => "sterms",
    }
}

/// Elasticsearch's type name of a metric aggregation.
fn metric_type(kind: &str) -> &str {
    match kind {
        "percentiles" => "tdigest_percentiles",
        other => other,
    }
}

fn rename(out: &mut Map<String, JsonValue>, name: &str, ty: &str) {
    if let Some(value) = out.remove(name) {
        out.insert(format!("{ty}#{name}"), value);
    }
}

/// The bucket objects of a bucket aggregation's answer (a list, or keyed by name).
fn buckets_of(answer: Option<&mut JsonValue>) -> Vec<&mut Map<String, JsonValue>> {
    match answer.and_then(|a| a.get_mut("buckets")) {
        Some(JsonValue::Array(list)) => list
            .iter_mut()
            .filter_map(JsonValue::as_object_mut)
            .collect(),
        Some(JsonValue::Object(keyed)) => keyed
            .values_mut()
            .filter_map(JsonValue::as_object_mut)
            .collect(),
        _ => Vec::new(),
    }
}

/// `request` without hits, histogram or aggregations, its query ANDed with `filter`.
fn within(request: &SearchRequest, filter: Option<Ast>) -> SearchRequest {
    let ast = match filter {
        Some(filter) => {
            let base = request.ast.clone().unwrap_or(Ast::All);
            Some(Ast::Bool(vec![(Occur::Must, base), (Occur::Must, filter)]))
        }
        None => request.ast.clone(),
    };
    SearchRequest {
        ast,
        limit: 0,
        count: true,
        sort: SortOrder::TimeDesc,
        sort_field: None,
        sort_after: None,
        after: None,
        histogram: None,
        aggregations: Vec::new(),
        ..request.clone()
    }
}

fn execute(searcher: &Searcher, request: &SearchRequest) -> Result<SearchResponse, ApiError> {
    searcher.execute(request).map_err(ApiError::from_query)
}

/// A numeric bound as the query tree takes it (whole numbers exactly).
fn bound_number(value: f64) -> Number {
    if value.fract() == 0.0 && value.abs() < 9.0e15 {
        Number::Int(value as i64)
    } else {
        Number::Float(value)
    }
}

/// `field` in `[from, to)`.
fn range_filter(field: &str, from: Option<f64>, to: Option<f64>) -> Ast {
    Ast::Range {
        field: field.to_owned(),
        range: NumericRange {
            lower: from.map_or(Bound::Unbounded, |v| Bound::Included(bound_number(v))),
            upper: to.map_or(Bound::Unbounded, |v| Bound::Excluded(bound_number(v))),
        },
    }
}

impl BucketAgg {
    /// The bucket matching `filter` within `request`: its count and sub-aggregations.
    fn bucket(
        &self,
        searcher: &Searcher,
        request: &SearchRequest,
        filter: Ast,
    ) -> Result<(u64, Map<String, JsonValue>), ApiError> {
        let mut bucket = within(request, Some(filter));
        self.sub.apply(&mut bucket);
        let answer = execute(searcher, &bucket)?;
        let sub = self.sub.evaluate(searcher, &bucket, &answer)?;
        Ok((answer.count.unwrap_or(0), sub))
    }

    fn evaluate(
        &self,
        searcher: &Searcher,
        request: &SearchRequest,
    ) -> Result<JsonValue, ApiError> {
        let with_sub = |mut json: JsonValue, sub: Map<String, JsonValue>| {
            for (name, value) in sub {
                json[&name] = value;
            }
            json
        };
        match &self.kind {
            BucketKind::Terms { terms, field } => {
                let mut keys = within(request, None);
                keys.aggregations = vec![terms.spec.clone()];
                let answer = execute(searcher, &keys)?;
                let value = answer
                    .aggregations
                    .as_ref()
                    .and_then(|a| a.get(&terms.spec.name));
                let summary = crate::field_summary(searcher);
                let mut rendered = rendered(terms, value, &summary);
                let mut buckets = Vec::new();
                for key in rendered["buckets"].as_array().cloned().unwrap_or_default() {
                    // A boolean's key is 1 or 0; its text is the value.
                    let value = key.get("key_as_string").unwrap_or(&key["key"]);
                    let Some(filter) = key_filter(field, value) else {
                        continue;
                    };
                    let (count, sub) = self.bucket(searcher, request, filter)?;
                    let mut bucket = json!({"key": key["key"], "doc_count": count});
                    if let Some(text) = key.get("key_as_string") {
                        bucket["key_as_string"] = text.clone();
                    }
                    buckets.push(with_sub(bucket, sub));
                }
                rendered["buckets"] = buckets.into();
                Ok(rendered)
            }
            BucketKind::DateHistogram(histogram) => {
                let mut counts = within(request, None);
                counts.histogram = Some(HistogramInterval::Fixed(histogram.interval));
                let mut rendered = histogram.render(
                    &execute(searcher, &counts)?,
                    &crate::field_summary(searcher),
                );
                let mut buckets = Vec::new();
                for bucket in rendered["buckets"].as_array().cloned().unwrap_or_default() {
                    let start = bucket["key"]
                        .as_i64()
                        .unwrap_or(0)
                        .saturating_mul(1_000_000);
                    let filter = Ast::Range {
                        field: quarry_format::TIME_FIELD.to_owned(),
                        range: NumericRange {
                            lower: Bound::Included(Number::Int(start)),
                            upper: Bound::Excluded(Number::Int(
                                start.saturating_add(histogram.interval),
                            )),
                        },
                    };
                    let (count, sub) = self.bucket(searcher, request, filter)?;
                    let mut json = with_sub(bucket, sub);
                    json["doc_count"] = count.into();
                    buckets.push(json);
                }
                rendered["buckets"] = buckets.into();
                Ok(rendered)
            }
            BucketKind::Histogram {
                field,
                interval,
                offset,
                min_doc_count,
                bounds,
            } => {
                let mut span = within(request, None);
                span.aggregations = vec![
                    AggSpec::parse(&format!("min({field})")).map_err(ApiError::bad_request)?,
                    AggSpec::parse(&format!("max({field})")).map_err(ApiError::bad_request)?,
                ];
                let answer = execute(searcher, &span)?;
                let get = |name: &str| {
                    answer
                        .aggregations
                        .as_ref()
                        .and_then(|a| a.get(name))
                        .and_then(JsonValue::as_f64)
                };
                let mut low = get(&format!("min({field})"));
                let mut high = get(&format!("max({field})"));
                if let (0, Some((min, max))) = (min_doc_count, bounds) {
                    low = Some(low.map_or(*min, |l| l.min(*min)));
                    high = Some(high.map_or(*max, |h| h.max(*max)));
                }
                let mut buckets = Vec::new();
                if let (Some(low), Some(high)) = (low, high) {
                    let first = ((low - offset) / interval).floor();
                    let last = ((high - offset) / interval).floor();
                    // Only a span known to be under the cap passes: NaN (from infinite bounds)
                    // is refused too.
                    if (last - first).partial_cmp(&MAX_HISTOGRAM_BUCKETS)
                        != Some(std::cmp::Ordering::Less)
                    {
                        return Err(ApiError::bad_request(format!(
                            "aggregation [{}]: more than {MAX_HISTOGRAM_BUCKETS} buckets; use a larger interval",
                            self.name
                        )));
                    }
                    let mut n = first;
                    while n <= last {
                        let key = offset + n * interval;
                        let filter = range_filter(field, Some(key), Some(key + interval));
                        let (count, sub) = self.bucket(searcher, request, filter)?;
                        if count >= *min_doc_count {
                            buckets.push(with_sub(json!({"key": key, "doc_count": count}), sub));
                        }
                        n += 1.0;
                    }
                }
                Ok(json!({ "buckets": buckets }))
            }
            BucketKind::Range {
                field,
                ranges,
                keyed,
            } => {
                let mut buckets = Vec::new();
                for range in ranges {
                    let filter = range_filter(field, range.from, range.to);
                    let (count, sub) = self.bucket(searcher, request, filter)?;
                    let mut json = json!({"key": range.key, "doc_count": count});
                    if let Some(from) = range.from {
                        json["from"] = from.into();
                    }
                    if let Some(to) = range.to {
                        json["to"] = to.into();
                    }
                    buckets.push(with_sub(json, sub));
                }
                if *keyed {
                    let object: Map<String, JsonValue> = buckets
                        .into_iter()
                        .map(|mut b| {
                            let key = b["key"].as_str().unwrap_or_default().to_owned();
                            b.as_object_mut().map(|o| o.remove("key"));
                            (key, b)
                        })
                        .collect();
                    Ok(json!({ "buckets": object }))
                } else {
                    Ok(json!({ "buckets": buckets }))
                }
            }
        }
    }
}

/// Histogram buckets by start: each one's doc count and sub-aggregations (`None` for the
/// empty buckets `min_doc_count: 0` adds).
type BucketsByStart<'a> =
    std::collections::BTreeMap<i64, (u64, Option<&'a Map<String, JsonValue>>)>;

impl Histogram {
    fn render(&self, response: &SearchResponse, summary: &FieldSummary) -> JsonValue {
        let mut counts: BucketsByStart<'_> = response
            .histogram
            .iter()
            .flatten()
            .map(|b| (b.start, (b.count, b.aggregations.as_ref())))
            .collect();
        if let (0, Some((min, max))) = (self.min_doc_count, self.bounds) {
            let mut start = min.div_euclid(self.interval) * self.interval;
            // Bounded: at most 10,000 empty buckets are added (Elasticsearch refuses more).
            let mut added = 0;
            while start <= max && added < MAX_RESULT_WINDOW {
                counts.entry(start).or_insert((0, None));
                start = start.saturating_add(self.interval);
                added += 1;
            }
        }
        let buckets: Vec<JsonValue> = counts
            .into_iter()
            .filter(|(_, (count, _))| *count >= self.min_doc_count)
            .map(|(start, (count, aggregations))| {
                let millis = start.div_euclid(1_000_000);
                let key_as_string = if self.key_millis {
                    millis.to_string()
                } else {
                    crate::format_time(start)
                };
                let mut json = json!({
                    "key_as_string": key_as_string,
                    "key": millis,
                    "doc_count": count,
                });
                for metric in &self.metrics {
                    let value = aggregations.and_then(|a| a.get(&metric.spec.name));
                    json[&metric.name] = rendered(metric, value, summary);
                }
                json
            })
            .collect();
        json!({ "buckets": buckets })
    }
}

/// Numbers by value, strings by their bytes (Elasticsearch's key order).
fn compare_keys(a: &JsonValue, b: &JsonValue) -> std::cmp::Ordering {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => x.total_cmp(&y),
        _ => a.as_str().unwrap_or("").cmp(b.as_str().unwrap_or("")),
    }
}

/// The filter for one `terms` bucket: the exact string, the number, or the bool.
fn key_filter(field: &str, key: &JsonValue) -> Option<Ast> {
    Some(match key {
        JsonValue::String(text) => Ast::Exact {
            field: field.to_owned(),
            value: text.clone(),
        },
        JsonValue::Number(n) => {
            let number = quarry_query::range::Number::parse(&n.to_string())?;
            Ast::Range {
                field: field.to_owned(),
                range: quarry_query::range::NumericRange {
                    lower: std::ops::Bound::Included(number),
                    upper: std::ops::Bound::Included(number),
                },
            }
        }
        JsonValue::Bool(b) => Ast::Word {
            field: Some(field.to_owned()),
            text: b.to_string(),
        },
        _ => return None,
    })
}

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
    dsl::query_string(false, &options, "q", now)
        .map(Some)
        .map_err(dsl_error)
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

fn number_param(key: &str, value: &str) -> Result<usize, ApiError> {
    value
        .parse()
        .map_err(|_| ApiError::bad_request(format!("{key}: expected a number, got {value:?}")))
}

fn as_usize(key: &str, value: &JsonValue) -> Result<usize, ApiError> {
    value
        .as_u64()
        .map(|v| v as usize)
        .ok_or_else(|| ApiError::bad_request(format!("{key}: expected a non-negative integer")))
}

/// `"@timestamp"`, `["_score"]`, `[{"@timestamp": "desc"}]`,
/// `[{"@timestamp": {"order": "asc"}}, {"_doc": ...}]`.
fn sort_of(value: &JsonValue) -> Result<SortSpec, ApiError> {
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
                            // `unmapped_type` changes nothing: a field no event has sorts
                            // nothing either way.
                            if let Some(option) = spec
                                .keys()
                                .find(|k| !matches!(k.as_str(), "order" | "unmapped_type"))
                            {
                                return Err(ApiError::bad_request(format!(
                                    "unsupported: sort.{field}.{option}"
                                )));
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
    // One key decides, with Quarry's own total tie-break; `_doc` keys (an unspecified order)
    // add nothing. A second real key would be a silent reorder of ties: it is refused.
    // `_doc` alone is index order, which for Quarry is time order, newest first (what
    // scrolls ask for: `helpers.scan` sorts by `_doc`).
    let doc_order_only = !keys.is_empty() && keys.iter().all(|(field, _)| field == "_doc");
    if doc_order_only {
        return Ok(SortSpec::Order(SortOrder::TimeDesc));
    }
    keys.retain(|(field, _)| field != "_doc");
    if let [(first, _), (second, _), ..] = keys.as_slice() {
        return Err(ApiError::bad_request(format!(
            "unsupported: sort by more than one key ([{first}], then [{second}])"
        )));
    }
    let mut sort = None;
    for (field, order) in keys {
        let descending = match order.as_str() {
            "desc" => true,
            "asc" => false,
            // Elasticsearch sorts dates ascending by default; logs want the newest first,
            // and every client that sorts on time names the order.
            "" => dsl::field_name(&field) == "_time",
            other => {
                return Err(ApiError::bad_request(format!(
                    "sort: unknown order {other:?}"
                )))
            }
        };
        let this = match dsl::field_name(&field) {
            "_score" => SortSpec::Order(SortOrder::Relevance),
            "_time" if descending => SortSpec::Order(SortOrder::TimeDesc),
            "_time" => SortSpec::Order(SortOrder::TimeAsc),
            other => SortSpec::Field(FieldSort {
                field: other.to_owned(),
                descending,
            }),
        };
        sort.get_or_insert(this);
    }
    Ok(sort.unwrap_or(SortSpec::Order(SortOrder::Relevance)))
}

/// An aggregation's type, its body and its sub-aggregations.
#[allow(clippy::type_complexity)]
fn agg_parts<'a>(
    definition: &'a JsonValue,
    path: &str,
) -> Result<(&'a str, &'a JsonValue, Option<&'a Map<String, JsonValue>>), ApiError> {
    let object = definition
        .as_object()
        .ok_or_else(|| ApiError::bad_request(format!("{path}: expected an aggregation object")))?;
    let mut kind = None;
    let mut sub = None;
    for (key, value) in object {
        match key.as_str() {
            "aggs" | "aggregations" => {
                sub = Some(value.as_object().ok_or_else(|| {
                    ApiError::bad_request(format!("{path}.{key}: expected an object"))
                })?)
            }
            "meta" => {}
            other if kind.is_none() => kind = Some((other, value)),
            other => {
                return Err(ApiError::bad_request(format!(
                    "{path}: two aggregation types ([{}] and [{other}])",
                    kind.map_or("", |(k, _)| k)
                )))
            }
        }
    }
    let (kind, body) =
        kind.ok_or_else(|| ApiError::bad_request(format!("{path}: no aggregation type")))?;
    Ok((kind, body, sub))
}

/// A date_histogram's interval (ns), min_doc_count and extended_bounds (ns).
#[allow(clippy::type_complexity)]
fn date_histogram(
    body: &JsonValue,
    path: &str,
) -> Result<(i64, u64, Option<(i64, i64)>), ApiError> {
    let field = body
        .get("field")
        .and_then(JsonValue::as_str)
        .unwrap_or("@timestamp");
    if dsl::field_name(field) != quarry_format::TIME_FIELD {
        return Err(ApiError::bad_request(format!(
            "{path}: date_histogram is supported on @timestamp only, not [{field}]"
        )));
    }
    let interval = ["fixed_interval", "calendar_interval", "interval"]
        .iter()
        .find_map(|key| body.get(*key).and_then(JsonValue::as_str))
        .ok_or_else(|| ApiError::bad_request(format!("{path}: expected fixed_interval")))?;
    // Calendar units of a fixed length in UTC. Weeks (which start on Monday, not on the
    // epoch's Thursday), months, quarters and years are refused until the one-pass
    // aggregations bucket by the calendar.
    let interval = match interval {
        "minute" | "1m" => "1m".to_owned(),
        "hour" | "1h" => "1h".to_owned(),
        "day" | "1d" => "1d".to_owned(),
        "second" | "1s" => "1s".to_owned(),
        "week" | "1w" | "month" | "1M" | "quarter" | "1q" | "year" | "1y" => {
            return Err(ApiError::bad_request(format!(
                "unsupported: {path}: calendar interval [{interval}] (fixed intervals and calendar minutes, hours and days are)"
            )))
        }
        other => other.to_owned(),
    };
    let nanos =
        parse_interval(&interval).map_err(|e| ApiError::bad_request(format!("{path}: {e}")))?;
    let min_doc_count = body
        .get("min_doc_count")
        .and_then(JsonValue::as_u64)
        .unwrap_or(0);
    // Epoch milliseconds (Grafana's), or times.
    let bound = |key: &str| -> Option<i64> {
        let value = body.get("extended_bounds")?.get(key)?;
        match value {
            JsonValue::Number(n) => n.as_i64().map(|ms| ms.saturating_mul(1_000_000)),
            JsonValue::String(text) => text
                .parse::<i64>()
                .map(|ms| ms.saturating_mul(1_000_000))
                .ok()
                .or_else(|| quarry_query::time::parse_time(text, now_nanos()).ok()),
            _ => None,
        }
    };
    let bounds = bound("min").zip(bound("max"));
    Ok((nanos, min_doc_count, bounds))
}

fn es_agg(name: &str, kind: &str, body: &JsonValue, path: &str) -> Result<EsAgg, ApiError> {
    let field = body
        .get("field")
        .and_then(JsonValue::as_str)
        .map(|f| dsl::field_name(f.strip_suffix(".keyword").unwrap_or(f)).to_owned())
        .ok_or_else(|| ApiError::bad_request(format!("{path}: expected a field")))?;
    let mut key_order = None;
    let mut requested = 0;
    let text = match kind {
        "avg" | "min" | "max" | "sum" | "stats" | "cardinality" => format!("{kind}({field})"),
        "value_count" => format!("stats({field})"),
        "terms" => {
            let size = body.get("size").and_then(JsonValue::as_u64).unwrap_or(10);
            requested = size as usize;
            let order = body.get("order").and_then(JsonValue::as_object);
            match order.and_then(|o| o.iter().next()) {
                None => {}
                Some((by, direction)) => {
                    let descending = match direction.as_str() {
                        Some("desc") => true,
                        Some("asc") => false,
                        _ => {
                            return Err(ApiError::bad_request(format!(
                                "{path}: order must be asc or desc"
                            )))
                        }
                    };
                    match (by.as_str(), descending) {
                        ("_count", true) => {}
                        ("_key", _) => key_order = Some(descending),
                        _ => {
                            return Err(ApiError::bad_request(format!(
                                "{path}: terms order by [{by}] {} is not supported yet (_count desc, _key asc or desc)",
                                if descending { "desc" } else { "asc" }
                            )))
                        }
                    }
                }
            }
            let read = if key_order.is_some() {
                KEY_ORDER_LIMIT
            } else {
                size
            };
            format!("terms({field}, {read})")
        }
        "percentiles" => {
            let percents: Vec<String> = match body.get("percents") {
                // Numbers, or their text (Grafana sends ["25", "50", ...]).
                Some(JsonValue::Array(values)) => values
                    .iter()
                    .map(|v| {
                        v.as_f64()
                            .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
                            .filter(|p| (0.0..=100.0).contains(p))
                            .map(|p| format!("{p:?}"))
                            .ok_or_else(|| {
                                ApiError::bad_request(format!(
                                    "{path}: percents are numbers from 0 to 100, not {v}"
                                ))
                            })
                    })
                    .collect::<Result<_, _>>()?,
                _ => ["1", "5", "25", "50", "75", "95", "99"]
                    .iter()
                    .map(|s| s.to_string())
                    .collect(),
            };
            format!("percentiles({field}, {})", percents.join(", "))
        }
        other => {
            return Err(ApiError::bad_request(format!(
                "{path}: aggregation type [{other}] is not supported yet"
            )))
        }
    };
    let spec = AggSpec::parse(&text).map_err(|e| ApiError::bad_request(format!("{path}: {e}")))?;
    Ok(EsAgg {
        name: name.to_owned(),
        kind: kind.to_owned(),
        spec,
        key_order,
        size: requested,
        min_doc_count: body
            .get("min_doc_count")
            .and_then(JsonValue::as_u64)
            .unwrap_or(1),
        keyed: body
            .get("keyed")
            .and_then(JsonValue::as_bool)
            .unwrap_or(true),
    })
}

/// `es_agg_value`, with `terms` keys typed as the field's values (`type_terms_keys`).
fn rendered(agg: &EsAgg, value: Option<&JsonValue>, summary: &FieldSummary) -> JsonValue {
    let mut out = es_agg_value(agg, value);
    if agg.kind == "terms" {
        if let Some(field) = &agg.spec.field {
            type_terms_keys(&mut out, field, summary);
        }
    }
    out
}

/// Quarry's terms come back as text; Elasticsearch gives a number field's keys as numbers and
/// a boolean field's as 1 or 0 with `key_as_string` `"true"` or `"false"`. A field that holds
/// strings too keeps text keys.
fn type_terms_keys(rendered: &mut JsonValue, field: &str, summary: &FieldSummary) {
    let Some((types, _)) = summary.get(field) else {
        return;
    };
    let present: Vec<&str> = types
        .iter()
        .filter(|(_, count)| **count > 0)
        .map(|(ty, _)| *ty)
        .collect();
    let numbers =
        !present.is_empty() && present.iter().all(|t| matches!(*t, "i64" | "u64" | "f64"));
    let booleans = present == ["bool"];
    if !numbers && !booleans {
        return;
    }
    let Some(buckets) = rendered
        .get_mut("buckets")
        .and_then(JsonValue::as_array_mut)
    else {
        return;
    };
    for bucket in buckets {
        let Some(text) = bucket["key"].as_str().map(str::to_owned) else {
            continue;
        };
        if booleans {
            bucket["key"] = u8::from(text == "true").into();
            bucket["key_as_string"] = text.into();
        } else if let Ok(integer) = text.parse::<i64>() {
            bucket["key"] = integer.into();
        } else if let Ok(unsigned) = text.parse::<u64>() {
            bucket["key"] = unsigned.into();
        } else if let Ok(float) = text.parse::<f64>() {
            bucket["key"] = float.into();
        }
    }
}

/// A metric of the event time as Elasticsearch gives a date's: milliseconds since the epoch,
/// with the time as text beside each (`value_as_string`, `min_as_string`, ...).
fn time_agg_value(agg: &EsAgg, value: &JsonValue) -> JsonValue {
    let millis = |v: &JsonValue| v.as_f64().map(|nanos| nanos / 1e6);
    let text = |v: &JsonValue| v.as_f64().map(|nanos| crate::format_time(nanos as i64));
    match agg.kind.as_str() {
        "avg" | "min" | "max" | "sum" => {
            let mut out = json!({ "value": millis(value) });
            if let Some(text) = text(value) {
                out["value_as_string"] = text.into();
            }
            out
        }
        "stats" => {
            let mut out = json!({"count": value.get("count").cloned().unwrap_or(0.into())});
            for key in ["min", "max", "avg", "sum"] {
                let v = value.get(key).unwrap_or(&JsonValue::Null);
                out[key] = millis(v).into();
                if let Some(text) = text(v) {
                    out[format!("{key}_as_string")] = text.into();
                }
            }
            out
        }
        "percentiles" => {
            let mut values = Map::new();
            for (p, v) in value.as_object().into_iter().flatten() {
                let key = p
                    .parse::<f64>()
                    .map_or_else(|_| p.clone(), |p| format!("{p:?}"));
                values.insert(key.clone(), millis(v).into());
                if let Some(text) = text(v) {
                    values.insert(format!("{key}_as_string"), text.into());
                }
            }
            json!({ "values": values })
        }
        "value_count" => json!({ "value": value.get("count").cloned().unwrap_or(0.into()) }),
        _ => json!({ "value": value }),
    }
}

/// Quarry's result of `agg` in Elasticsearch's shape.
fn es_agg_value(agg: &EsAgg, value: Option<&JsonValue>) -> JsonValue {
    let null = JsonValue::Null;
    let value = value.unwrap_or(&null);
    if agg.spec.field.as_deref() == Some(quarry_format::TIME_FIELD) {
        return time_agg_value(agg, value);
    }
    match agg.kind.as_str() {
        "avg" | "min" | "max" | "sum" | "cardinality" => json!({ "value": value }),
        "value_count" => json!({ "value": value.get("count").cloned().unwrap_or(0.into()) }),
        "stats" => {
            let get = |k: &str| value.get(k).cloned().unwrap_or(JsonValue::Null);
            json!({"count": value.get("count").cloned().unwrap_or(0.into()), "min": get("min"), "max": get("max"), "avg": get("avg"), "sum": value.get("sum").cloned().unwrap_or(0.into())})
        }
        "percentiles" => {
            let values: Map<String, JsonValue> = value
                .as_object()
                .map(|m| {
                    m.iter()
                        .map(|(p, v)| {
                            let key = p
                                .parse::<f64>()
                                .map_or_else(|_| p.clone(), |p| format!("{p:?}"));
                            (key, v.clone())
                        })
                        .collect()
                })
                .unwrap_or_default();
            if agg.keyed {
                json!({ "values": values })
            } else {
                let mut list: Vec<(f64, JsonValue)> = values
                    .into_iter()
                    .map(|(p, v)| (p.parse::<f64>().unwrap_or(0.0), v))
                    .collect();
                list.sort_by(|a, b| a.0.total_cmp(&b.0));
                let list: Vec<JsonValue> = list
                    .into_iter()
                    .map(|(p, v)| json!({"key": p, "value": v}))
                    .collect();
                json!({ "values": list })
            }
        }
        "terms" => {
            let mut buckets: Vec<JsonValue> = value
                .get("buckets")
                .and_then(JsonValue::as_array)
                .map(|buckets| {
                    buckets
                        .iter()
                        .map(|b| json!({"key": b.get("key"), "doc_count": b.get("count")}))
                        .collect()
                })
                .unwrap_or_default();
            let mut other = value
                .get("other_count")
                .and_then(JsonValue::as_u64)
                .unwrap_or(0);
            buckets.retain(|bucket| {
                let count = bucket["doc_count"].as_u64().unwrap_or(0);
                let kept = count >= agg.min_doc_count;
                if !kept {
                    other += count;
                }
                kept
            });
            if let Some(descending) = agg.key_order {
                buckets.sort_by(|a, b| {
                    let order = compare_keys(&a["key"], &b["key"]);
                    if descending {
                        order.reverse()
                    } else {
                        order
                    }
                });
                for dropped in buckets.drain(agg.size.min(buckets.len())..) {
                    other += dropped["doc_count"].as_u64().unwrap_or(0);
                }
            }
            json!({
                "doc_count_error_upper_bound": 0,
                "sum_other_doc_count": other,
                "buckets": buckets,
            })
        }
        _ => value.clone(),
    }
}
