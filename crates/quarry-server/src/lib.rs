//! `quarry serve`: Quarry's HTTP API over a data directory.
//!
//! This first increment of issue 10 serves searches: `GET|POST /api/v1/{tenant}/search` and
//! `GET /api/v1/{tenant}/fields` over the blocks that `quarry index` writes, plus
//! `/health/live` and `/health/ready`. Ingest over HTTP (WAL, in-memory segment) comes next;
//! the paths already carry the tenant, and only `default` exists until tenants do (Step 4b).
//!
//! Every search answers from an immutable snapshot (`quarry_query::Searcher`): a request takes
//! the current one (an `Arc`) and holds it to the end. When the catalog changes (an index run,
//! a merge), the next request opens a new snapshot; requests under way keep theirs, so a merge
//! that deletes a block never pulls it from under a query (the old mmaps stay valid until the
//! last holder drops them). The search itself is the CLI's: `Searcher::execute` on a
//! `SearchRequest`, printed as JSON.

use axum::body::Bytes;
use axum::extract::{Path as UrlPath, RawQuery, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use quarry_index::event::format_time;
use quarry_query::aggregation::AggSpec;
use quarry_query::time::{now_nanos, parse_interval, parse_time};
use quarry_query::timeline::Cursor;
use quarry_query::{
    value_to_json, HistogramInterval, QueryError, SearchRequest, SearchResponse, Searcher,
    SortOrder, Warning,
};
use serde_json::{json, Value as JsonValue};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime};

/// The one tenant until Step 4b adds tenants.
pub const DEFAULT_TENANT: &str = "default";

#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// The data directory (`quarry index` writes it; the server reads it).
    pub data: PathBuf,
    pub listen: SocketAddr,
}

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServerError {
    #[error("listening on {addr}: {source}")]
    Listen {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("serving: {0}")]
    Serve(#[source] std::io::Error),
}

/// Serves until `shutdown` completes, then stops accepting and finishes the requests under way.
/// `on_listening` is told the bound address (the port, when the config asked for port 0).
pub async fn serve(
    config: ServerConfig,
    on_listening: impl FnOnce(SocketAddr),
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), ServerError> {
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .map_err(|source| ServerError::Listen {
            addr: config.listen,
            source,
        })?;
    let addr = listener
        .local_addr()
        .map_err(|source| ServerError::Listen {
            addr: config.listen,
            source,
        })?;
    on_listening(addr);
    tracing::info!(%addr, data = %config.data.display(), "listening");
    axum::serve(listener, router(config.data))
        .with_graceful_shutdown(shutdown)
        .await
        .map_err(ServerError::Serve)
}

/// The API's routes over the data directory `data`.
pub fn router(data: PathBuf) -> Router {
    let state = Arc::new(AppState {
        data,
        snapshot: Mutex::new(None),
    });
    Router::new()
        .route(
            "/health/live",
            get(|| async { Json(json!({"status": "ok"})) }),
        )
        .route("/health/ready", get(ready))
        .route("/api/v1/{tenant}/search", get(search_get).post(search_post))
        .route("/api/v1/{tenant}/fields", get(fields))
        .route("/api/v1/openapi.json", get(openapi))
        .with_state(state)
}

struct AppState {
    data: PathBuf,
    /// The snapshot and the catalog version it was opened from.
    snapshot: Mutex<Option<(CatalogStamp, Arc<Searcher>)>>,
}

/// What tells that the catalog changed: it is replaced by a rename on every commit.
type CatalogStamp = Option<(SystemTime, u64)>;

fn catalog_stamp(data: &Path) -> CatalogStamp {
    let meta = std::fs::metadata(data.join("catalog.json")).ok()?;
    Some((meta.modified().ok()?, meta.len()))
}

impl AppState {
    /// The current snapshot, opened again when the catalog changed since the last one.
    fn snapshot(&self) -> Result<Arc<Searcher>, ApiError> {
        let stamp = catalog_stamp(&self.data);
        let mut current = self.snapshot.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((seen, searcher)) = current.as_ref() {
            if *seen == stamp {
                return Ok(searcher.clone());
            }
        }
        let (mut stamp, mut searcher) = (stamp, open_snapshot(&self.data, stamp)?);
        // A merge that commits between reading the catalog and opening its blocks deletes
        // blocks the old catalog listed: they look damaged (missing) though nothing is. If the
        // catalog moved meanwhile, open again (bounded: a few commits in a row at most).
        for _ in 0..3 {
            let now = catalog_stamp(&self.data);
            if searcher.damaged().is_empty() || now == stamp {
                break;
            }
            stamp = now;
            searcher = open_snapshot(&self.data, stamp)?;
        }
        for block in searcher.damaged() {
            tracing::warn!(block = %block.path.display(), error = %block.error, "damaged block left out");
        }
        let searcher = Arc::new(searcher);
        *current = Some((stamp, searcher.clone()));
        Ok(searcher)
    }
}

fn open_snapshot(data: &Path, stamp: CatalogStamp) -> Result<Searcher, ApiError> {
    match stamp {
        // No catalog yet: nothing is searchable, which is not an error.
        None => Ok(Searcher::new(Vec::new(), Default::default())),
        Some(_) => Searcher::open(data).map_err(ApiError::internal),
    }
}

/// An error answer: a status and `{"error": ..., "position": ...}`.
#[derive(Debug)]
struct ApiError {
    status: StatusCode,
    message: String,
    position: Option<usize>,
}

impl ApiError {
    fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError {
            status: StatusCode::BAD_REQUEST,
            message: message.into(),
            position: None,
        }
    }

    fn internal(error: impl std::fmt::Display) -> ApiError {
        tracing::error!(%error, "request failed");
        ApiError {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            message: error.to_string(),
            position: None,
        }
    }

    /// The one mapping from a query error to a status.
    fn from_query(error: QueryError) -> ApiError {
        match error {
            QueryError::Parse(parse) => ApiError {
                status: StatusCode::BAD_REQUEST,
                message: format!("bad query: {parse}"),
                position: Some(parse.position),
            },
            QueryError::TooManyBuckets { .. } | QueryError::Invalid(_) => {
                ApiError::bad_request(error.to_string())
            }
            other => ApiError::internal(other),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut body = json!({ "error": self.message });
        if let Some(position) = self.position {
            body["position"] = position.into();
        }
        (self.status, Json(body)).into_response()
    }
}

fn check_tenant(tenant: &str) -> Result<(), ApiError> {
    if tenant == DEFAULT_TENANT {
        return Ok(());
    }
    Err(ApiError {
        status: StatusCode::NOT_FOUND,
        message: format!(
            "unknown tenant {tenant:?} (only {DEFAULT_TENANT:?} exists until tenants are added)"
        ),
        position: None,
    })
}

async fn ready(State(state): State<Arc<AppState>>) -> Result<Json<JsonValue>, ApiError> {
    let searcher = blocking(move || state.snapshot()).await?;
    Ok(Json(json!({
        "status": "ready",
        "blocks": searcher.blocks().len(),
        "events": searcher.doc_count(),
        "damaged_blocks": searcher.damaged().len(),
    })))
}

/// Runs searching (CPU and mmapped reads) off the async threads.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(ApiError::internal)?
}

async fn search_get(
    State(state): State<Arc<AppState>>,
    UrlPath(tenant): UrlPath<String>,
    RawQuery(query): RawQuery,
) -> Result<Json<JsonValue>, ApiError> {
    check_tenant(&tenant)?;
    let params: Vec<(String, String)> =
        form_urlencoded::parse(query.unwrap_or_default().as_bytes())
            .into_owned()
            .collect();
    let request = search_request(&params)?;
    run_search(state, request).await
}

/// `POST`: the same parameters as a JSON object (`aggs` a list) or as a form body.
async fn search_post(
    State(state): State<Arc<AppState>>,
    UrlPath(tenant): UrlPath<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<JsonValue>, ApiError> {
    check_tenant(&tenant)?;
    let is_form = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/x-www-form-urlencoded"));
    let params: Vec<(String, String)> = if is_form {
        form_urlencoded::parse(&body).into_owned().collect()
    } else {
        let object: serde_json::Map<String, JsonValue> = serde_json::from_slice(&body)
            .map_err(|e| ApiError::bad_request(format!("body is not a JSON object: {e}")))?;
        let mut params = Vec::new();
        for (key, value) in object {
            let items = match value {
                JsonValue::Array(items) => items,
                other => vec![other],
            };
            for item in items {
                let text = match item {
                    JsonValue::String(text) => text,
                    JsonValue::Null => continue,
                    other => other.to_string(),
                };
                params.push((key.clone(), text));
            }
        }
        params
    };
    let request = search_request(&params)?;
    run_search(state, request).await
}

async fn run_search(
    state: Arc<AppState>,
    request: SearchRequest,
) -> Result<Json<JsonValue>, ApiError> {
    let started = Instant::now();
    let response = blocking(move || {
        let searcher = state.snapshot()?;
        searcher.execute(&request).map_err(ApiError::from_query)
    })
    .await?;
    let mut body = response_json(&response);
    body["took_ms"] = (started.elapsed().as_secs_f64() * 1000.0).into();
    Ok(Json(body))
}

/// The request from its parameters (query string, form or JSON body): `query`, `start`,
/// `end`, `sort`, `limit`, `search_after`, `count`, `histogram`, `aggs` (repeatable).
fn search_request(params: &[(String, String)]) -> Result<SearchRequest, ApiError> {
    let now = now_nanos();
    let mut request = SearchRequest::default();
    for (key, value) in params {
        match key.as_str() {
            "query" | "q" => request.query = value.clone(),
            "start" => {
                request.start = parse_time(value, now)
                    .map_err(|message| ApiError::bad_request(format!("start: {message}")))?
            }
            "end" => {
                request.end = parse_time(value, now)
                    .map_err(|message| ApiError::bad_request(format!("end: {message}")))?
            }
            "sort" => {
                request.sort = match value.as_str() {
                    "relevance" => SortOrder::Relevance,
                    "time_desc" | "time-desc" => SortOrder::TimeDesc,
                    "time_asc" | "time-asc" => SortOrder::TimeAsc,
                    other => {
                        return Err(ApiError::bad_request(format!(
                            "sort: {other:?} is not relevance, time_desc or time_asc"
                        )))
                    }
                }
            }
            "limit" => {
                request.limit = value.parse().map_err(|_| {
                    ApiError::bad_request(format!("limit: {value:?} is not a count"))
                })?
            }
            "search_after" => {
                request.after = Some(Cursor::parse(value).ok_or_else(|| {
                    ApiError::bad_request(format!("search_after: bad cursor {value:?}"))
                })?)
            }
            "count" => {
                request.count = match value.as_str() {
                    "true" | "1" | "" => true,
                    "false" | "0" => false,
                    other => {
                        return Err(ApiError::bad_request(format!(
                            "count: {other:?} is not true or false"
                        )))
                    }
                }
            }
            "histogram" => {
                request.histogram = Some(match value.as_str() {
                    "auto" => HistogramInterval::Auto,
                    text => HistogramInterval::Fixed(
                        parse_interval(text)
                            .map_err(|m| ApiError::bad_request(format!("histogram: {m}")))?,
                    ),
                })
            }
            "aggs" | "agg" => request.aggregations.push(
                AggSpec::parse(value)
                    .map_err(|m| ApiError::bad_request(format!("aggs: {m}")))?,
            ),
            other => {
                return Err(ApiError::bad_request(format!(
                    "unknown parameter {other:?} (query, start, end, sort, limit, search_after, count, histogram, aggs)"
                )))
            }
        }
    }
    if request.after.is_some() && request.sort == SortOrder::Relevance {
        return Err(ApiError::bad_request(
            "search_after needs sort=time_desc or time_asc",
        ));
    }
    Ok(request)
}

/// The response body: the fields the CLI prints as lines, in one object.
pub fn response_json(response: &SearchResponse) -> JsonValue {
    let hits: Vec<JsonValue> = response
        .hits
        .iter()
        .map(|hit| {
            let event: serde_json::Map<String, JsonValue> = hit
                .event
                .iter()
                .map(|(name, value)| (name.clone(), value_to_json(value)))
                .collect();
            let mut json = json!({
                "_time": format_time(hit.time),
                "score": hit.score.map(f64::from),
                "event": event,
            });
            if let Some(cursor) = hit.cursor {
                json["_cursor"] = cursor.to_string().into();
            }
            json
        })
        .collect();
    let mut body = json!({ "hits": hits });
    if let Some(count) = response.count {
        body["count"] = count.into();
    }
    if let Some(buckets) = &response.histogram {
        let buckets: Vec<JsonValue> = buckets
            .iter()
            .map(|bucket| {
                let mut json = json!({"start": format_time(bucket.start), "count": bucket.count});
                if let Some(aggregations) = &bucket.aggregations {
                    json["aggregations"] = aggregations.clone().into();
                }
                json
            })
            .collect();
        body["histogram"] = buckets.into();
    }
    if let Some(aggregations) = &response.aggregations {
        body["aggregations"] = aggregations.clone().into();
    }
    let warnings: Vec<JsonValue> = response
        .warnings
        .iter()
        .map(|warning| match warning {
            Warning::UnknownFields { names } => {
                json!({"kind": "unknown_fields", "fields": names, "message": warning.to_string()})
            }
            Warning::DamagedBlock { path, .. } => json!({
                "kind": "damaged_block",
                "block": path.display().to_string(),
                "message": warning.to_string(),
            }),
            other => json!({"message": other.to_string()}),
        })
        .collect();
    body["warnings"] = warnings.into();
    body["partial"] = response.is_partial().into();
    body
}

/// `GET /api/v1/{tenant}/fields`: every field with its value types and how many events hold
/// each, and whether bare words search it.
async fn fields(
    State(state): State<Arc<AppState>>,
    UrlPath(tenant): UrlPath<String>,
) -> Result<Json<JsonValue>, ApiError> {
    check_tenant(&tenant)?;
    let searcher = blocking(move || state.snapshot()).await?;
    let mut fields: BTreeMap<&str, (BTreeMap<&'static str, u64>, bool)> = BTreeMap::new();
    for block in searcher.blocks() {
        for field in &block.manifest().fields {
            let entry = fields.entry(field.name.as_str()).or_default();
            for column in &field.columns {
                *entry.0.entry(column.ty.name()).or_default() += column.present_count;
            }
            entry.1 |= field.text.is_some();
        }
    }
    let fields: Vec<JsonValue> = fields
        .into_iter()
        .map(|(name, (types, text))| {
            json!({
                "name": name,
                "types": types,
                "events": types.values().sum::<u64>(),
                "full_text": text,
            })
        })
        .collect();
    Ok(Json(json!({ "fields": fields })))
}

/// The API, as an OpenAPI 3 document (`openapi.json` beside this crate's manifest; a test
/// calls every operation it lists and checks the answers against its schemas).
pub const OPENAPI: &str = include_str!("../openapi.json");

async fn openapi() -> Response {
    ([(header::CONTENT_TYPE, "application/json")], OPENAPI).into_response()
}
