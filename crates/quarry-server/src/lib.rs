//! `quarry serve`: Quarry's HTTP API over a data directory.
//!
//! Ingest (`POST /api/v1/{tenant}/ingest`, the Elasticsearch bulk API) goes through the write
//! path in [`live`]: WAL with group commit, searchable at once, flushed to block files and
//! merged in the background. Searches (`GET|POST /api/v1/{tenant}/search`,
//! `GET /api/v1/{tenant}/fields`) answer from an immutable snapshot (`quarry_query::Searcher`)
//! of block files and memory blocks: a request takes the current one (an `Arc`) and holds it
//! to the end, so a flush or merge never pulls a block from under it. The search itself is
//! the CLI's: `Searcher::execute` on a `SearchRequest`, printed as JSON. Paths carry the
//! tenant; only `default` exists until tenants do (Step 4b).
//!
//! The server holds the data directory's lock: `quarry index` refuses to write it meanwhile,
//! and `quarry search` reads what is in block files.

mod ingest;
pub mod live;
pub mod wal_writer;

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path as UrlPath, RawQuery, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use live::{IngestConfig, LiveIndex};
use quarry_index::event::format_time;
use quarry_query::aggregation::AggSpec;
use quarry_query::cursor::Cursor;
use quarry_query::time::{now_nanos, parse_interval, parse_time};
use quarry_query::{
    value_to_json, HistogramInterval, QueryError, SearchRequest, SearchResponse, SortOrder, Warning,
};
use quarry_store::{Catalog, Settings};
use serde_json::{json, Value as JsonValue};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The one tenant until Step 4b adds tenants.
pub const DEFAULT_TENANT: &str = "default";

#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// The data directory (created if missing).
    pub data: PathBuf,
    pub listen: SocketAddr,
    /// Largest request body, as sent and decompressed (413 beyond).
    pub max_body_bytes: usize,
    pub ingest: IngestConfig,
}

impl ServerConfig {
    pub const DEFAULT_MAX_BODY_BYTES: usize = 64 << 20;

    pub fn new(data: PathBuf, listen: SocketAddr) -> ServerConfig {
        ServerConfig {
            data,
            listen,
            max_body_bytes: Self::DEFAULT_MAX_BODY_BYTES,
            ingest: IngestConfig::default(),
        }
    }
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
    #[error("opening the data directory: {0}")]
    Catalog(#[from] quarry_store::CatalogError),
    #[error("recovering from the write-ahead log: {0}")]
    Recover(#[source] live::LiveError),
    #[error("final flush: {0}")]
    Flush(#[source] live::LiveError),
}

/// Serves until `shutdown` completes, then stops accepting, finishes the requests under way,
/// flushes memory to block files and syncs the WAL. `on_listening` is told the bound address
/// (the port, when the config asked for port 0).
pub async fn serve(
    config: ServerConfig,
    on_listening: impl FnOnce(SocketAddr),
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), ServerError> {
    let catalog = Catalog::open_or_create(&config.data, Settings::default())?;
    let wal_dir = config.data.join("wal").join(DEFAULT_TENANT);
    let (live, recovery) = LiveIndex::open(
        Box::new(catalog),
        DEFAULT_TENANT,
        &wal_dir,
        config.ingest.clone(),
    )
    .map_err(ServerError::Recover)?;
    if recovery.records > 0 || recovery.torn_bytes > 0 {
        tracing::info!(
            records = recovery.records,
            events = recovery.events,
            torn_bytes = recovery.torn_bytes,
            "replayed the write-ahead log"
        );
    }
    let live = Arc::new(live);
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
    let stop = Arc::new(AtomicBool::new(false));
    let background = spawn_background(live.clone(), stop.clone());
    let sealer = spawn_sealer(live.clone(), stop.clone());
    on_listening(addr);
    tracing::info!(%addr, data = %config.data.display(), "listening");
    let state = Arc::new(AppState {
        live: live.clone(),
        max_body_bytes: config.max_body_bytes,
    });
    let served = axum::serve(listener, router(state))
        .with_graceful_shutdown(shutdown)
        .await
        .map_err(ServerError::Serve);
    stop.store(true, Ordering::Relaxed);
    let _ = background.join();
    let _ = sealer.join();
    let flushed = live.flush().map_err(ServerError::Flush);
    live.close();
    served?;
    flushed
}

/// The background thread: flushes, memory compactions and merges, one step at a time, until
/// `stop`.
fn spawn_background(live: Arc<LiveIndex>, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
    std::thread::Builder::new()
        .name("quarry-background".into())
        .spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let pause = match live.background_step() {
                    Ok(true) => Duration::ZERO,
                    Ok(false) => Duration::from_millis(100),
                    Err(error) => {
                        tracing::error!(%error, "background work failed; retrying");
                        Duration::from_secs(1)
                    }
                };
                std::thread::sleep(pause);
            }
        })
        .expect("spawning the background thread")
}

/// The sealer thread: seal rounds for ingests waiting to be visible (`LiveIndex::run_sealer`).
fn spawn_sealer(live: Arc<LiveIndex>, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
    std::thread::Builder::new()
        .name("quarry-sealer".into())
        .spawn(move || live.run_sealer(&stop))
        .expect("spawning the sealer thread")
}

/// The API's routes.
fn router(state: Arc<AppState>) -> Router {
    let body_limit = state.max_body_bytes;
    Router::new()
        .route(
            "/health/live",
            get(|| async { Json(json!({"status": "ok"})) }),
        )
        .route("/health/ready", get(ready))
        .route("/api/v1/{tenant}/search", get(search_get).post(search_post))
        .route("/api/v1/{tenant}/fields", get(fields))
        .route("/api/v1/{tenant}/ingest", post(ingest::ingest))
        // Elasticsearch takes PUT as well as POST (its Python client sends PUT).
        .route("/api/v1/{tenant}/_bulk", post(tenant_bulk).put(tenant_bulk))
        .route("/_bulk", post(ingest::bulk).put(ingest::bulk))
        .route("/{index}/_bulk", post(ingest::bulk).put(ingest::bulk))
        .route("/", get(ingest::es_info).head(ingest::es_info))
        .route("/api/v1/openapi.json", get(openapi))
        .layer(DefaultBodyLimit::max(body_limit))
        // One span per request, its method, path, status and latency logged at debug
        // (RUST_LOG=tower_http=debug).
        .layer(tower_http::trace::TraceLayer::new_for_http())
        .with_state(state)
}

/// `/api/v1/{tenant}/_bulk` is `/{index}/_bulk` with the tenant as the default index.
async fn tenant_bulk(
    state: State<Arc<AppState>>,
    tenant: UrlPath<String>,
    query: RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    ingest::bulk(state, Some(tenant), query, headers, body).await
}

pub(crate) struct AppState {
    live: Arc<LiveIndex>,
    max_body_bytes: usize,
}

impl AppState {
    /// The tenant's live index, or 404.
    fn tenant(&self, tenant: &str) -> Result<&Arc<LiveIndex>, ApiError> {
        if tenant == self.live.tenant() {
            return Ok(&self.live);
        }
        Err(ApiError {
            status: StatusCode::NOT_FOUND,
            message: format!(
                "unknown tenant {tenant:?} (only {DEFAULT_TENANT:?} exists until tenants are added)"
            ),
            position: None,
        })
    }
}

/// An error answer: a status and `{"error": ..., "position": ...}`.
#[derive(Debug)]
pub(crate) struct ApiError {
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

    fn unavailable(message: impl Into<String>) -> ApiError {
        ApiError {
            status: StatusCode::SERVICE_UNAVAILABLE,
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
        let mut response = (self.status, Json(body)).into_response();
        if self.status == StatusCode::TOO_MANY_REQUESTS {
            // Memory is freed by the next flush; a second is a fair guess at it.
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, header::HeaderValue::from_static("1"));
        }
        response
    }
}

async fn ready(State(state): State<Arc<AppState>>) -> Result<Json<JsonValue>, ApiError> {
    if let Some(error) = state.live.wal_failure() {
        return Err(ApiError::unavailable(format!(
            "not ready: the write-ahead log failed: {error}"
        )));
    }
    let live = state.live.clone();
    let (searcher, (memory_events, memory_bytes)) = blocking(move || {
        let snapshot = live.published_snapshot();
        Ok((snapshot, live.memory_usage()))
    })
    .await?;
    Ok(Json(json!({
        "status": "ready",
        "blocks": searcher.blocks().len(),
        "events": searcher.doc_count(),
        "memory_events": memory_events,
        "memory_bytes": memory_bytes,
        "damaged_blocks": searcher.damaged().len(),
    })))
}

/// Runs searching (CPU and mmapped reads) off the async threads.
pub(crate) async fn blocking<T: Send + 'static>(
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
    let live = state.tenant(&tenant)?.clone();
    let params: Vec<(String, String)> =
        form_urlencoded::parse(query.unwrap_or_default().as_bytes())
            .into_owned()
            .collect();
    let request = search_request(&params)?;
    run_search(live, request).await
}

/// `POST`: the same parameters as a JSON object (`aggs` a list) or as a form body.
async fn search_post(
    State(state): State<Arc<AppState>>,
    UrlPath(tenant): UrlPath<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<JsonValue>, ApiError> {
    let live = state.tenant(&tenant)?.clone();
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
    run_search(live, request).await
}

async fn run_search(
    live: Arc<LiveIndex>,
    request: SearchRequest,
) -> Result<Json<JsonValue>, ApiError> {
    let started = Instant::now();
    let response = blocking(move || {
        let searcher = live.published_snapshot();
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
    let live = state.tenant(&tenant)?.clone();
    let searcher = live.published_snapshot();
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
