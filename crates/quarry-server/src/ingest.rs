//! Ingest over HTTP: `POST /api/v1/{tenant}/ingest` (NDJSON or plain text) and the
//! Elasticsearch bulk API (`POST /_bulk`, `POST /{index}/_bulk`, `POST /api/v1/{tenant}/_bulk`).
//!
//! Bodies may be compressed (`Content-Encoding: gzip`, `zstd` or `deflate`); the limit
//! (`max_body_bytes`) applies to the body as sent and as decompressed, and answers 413. Every
//! request is acknowledged after its WAL record is fsynced, unless it asks for
//! `?durability=async` (acknowledged once searchable, synced within a second; the reply says
//! `"durability": "async"`). A line that does not parse is reported with its line number and
//! the others are ingested.

use crate::admin::Tenant;
use crate::documents::{Conditions, Op, Refusal, State as DocState};
use crate::es_docs::UpdatePlan;
use crate::idempotency::Claim;
use crate::live::{Batch, Ingested, LiveError, LiveIndex};
use crate::{blocking, ApiError, AppState};
use axum::body::Bytes;
use axum::extract::{Path as UrlPath, RawQuery, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use quarry_index::textline::text_line_event;
use quarry_query::time::now_nanos;
use serde_json::{json, Value as JsonValue};
use std::borrow::Cow;
use std::io::Read;
use std::sync::Arc;
use std::time::Instant;

/// Heap an ingest request takes per byte of its body while it is read, parsed and added
/// (the body, its events parsed, the WAL record, the allocator's share): 11× measured by the
/// overload test (crates/quarry/tests/overload.rs: 16 MB of 1 MB bodies in flight held
/// ~185 MB), so the in-flight budget is charged 8× the body and a little slack is left to
/// `--memory-limit`'s own margin.
const MEMORY_PER_BODY_BYTE: usize = 8;

/// Middleware of the ingest routes: reserves what the request will take from the server's
/// in-flight budget before its body is read (`MEMORY_PER_BODY_BYTE` per byte), and holds it
/// until the answer (after the acknowledgement). A body without a length, or compressed,
/// counts as the largest allowed (what it may decompress to). Over the budget: 429 with
/// `Retry-After`, nothing read.
pub(crate) async fn reserve_body(
    State(state): State<Arc<AppState>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let headers = request.headers();
    let length = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    let encoded = headers
        .get(header::CONTENT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| !v.trim().is_empty() && !v.trim().eq_ignore_ascii_case("identity"));
    let bytes = match length {
        Some(length) if !encoded => length.min(state.max_body_bytes),
        _ => state.max_body_bytes,
    };
    // A body larger than the whole budget waits for all of it, rather than never passing.
    let kib = u32::try_from((bytes * MEMORY_PER_BODY_BYTE).div_ceil(1024).max(1))
        .unwrap_or(u32::MAX)
        .min(state.inflight_kib);
    let Ok(_permit) = state.inflight.try_acquire_many(kib) else {
        let error = ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "the server is taking in as much as it can hold: retry shortly",
        );
        state.metrics.count_overloaded();
        return error.into_response();
    };
    next.run(request).await
}

/// How many line errors a reply lists at most (the count is always exact).
const MAX_LISTED_ERRORS: usize = 1000;

/// `POST /api/v1/{tenant}/ingest`.
pub(crate) async fn ingest(
    State(state): State<Arc<AppState>>,
    UrlPath(tenant): UrlPath<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    let tenant = state.authorize(&tenant, &headers)?;
    let durable = durability(query.as_deref(), &[])?;
    let key = crate::idempotency::key_of(&headers).map_err(ApiError::bad_request)?;
    let claim = match &key {
        None => None,
        Some(key) => match tenant.idempotency.claim(key) {
            Claim::New(guard) => Some(guard),
            Claim::Done(answer) => {
                let mut response = Json(answer).into_response();
                response
                    .headers_mut()
                    .insert("idempotent-replayed", HeaderValue::from_static("true"));
                return Ok(response);
            }
            Claim::UnderWay => {
                return Err(ApiError::new(
                    StatusCode::CONFLICT,
                    format!("a request with Idempotency-Key {key:?} is under way: retry once it is answered"),
                ))
            }
        },
    };
    // Processed in a task of its own, which runs to its end even if the client goes away or
    // the request times out: a batch that was added is acknowledged (or refused) and its
    // idempotency key completed (or released) accordingly, never left in between.
    let task = tokio::spawn(ingest_batch(state, tenant, durable, headers, body, claim));
    let answer = task.await.map_err(ApiError::internal)??;
    Ok(Json(answer).into_response())
}

async fn ingest_batch(
    state: Arc<AppState>,
    tenant: Arc<Tenant>,
    durable: bool,
    headers: HeaderMap,
    body: Bytes,
    claim: Option<crate::idempotency::KeyGuard>,
) -> Result<JsonValue, ApiError> {
    let is_text = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().starts_with("text/plain"));
    let limit = state.max_body_bytes;
    let now = now_nanos();
    let work = tenant.clone();
    let done = blocking(move || {
        let body = decode_body(&headers, body, limit)?;
        let schema = work.live.schema();
        let (batch, errors) = if is_text {
            text_batch(now, &body, &schema)
        } else {
            Batch::parse(now, lines(&body), &schema)
        };
        let ingested = batch.len();
        work.admit(ingested, body.len())?;
        let live = work.live.clone();
        let done = live.ingest(batch, durable).map_err(from_live)?;
        Ok((ingested, body.len(), errors, (live, done)))
    })
    .await;
    let (ingested, bytes, errors, done) =
        done.inspect_err(|error| state.count_refused(&tenant, error))?;
    acknowledge(done).await?;
    state.count_ingested(&tenant, ingested, bytes, errors.len());
    let error_count = errors.len();
    let listed: Vec<JsonValue> = errors
        .into_iter()
        .take(MAX_LISTED_ERRORS)
        .map(|(line, reason)| json!({"line": line, "reason": reason}))
        .collect();
    let answer = json!({
        "ingested": ingested,
        "failed": error_count,
        "errors": listed,
        "durability": if durable { "fsync" } else { "async" },
    });
    if let Some(guard) = claim {
        guard.complete(&answer);
    }
    Ok(answer)
}

/// Waits until an ingest may be acknowledged: its events searchable (the seal round that
/// covers them) and, unless async, durable (the WAL fsync that covers them). Both proceed in
/// their own threads at once; the reply waits for the later.
async fn acknowledge((live, ingested): (Arc<LiveIndex>, Ingested)) -> Result<(), ApiError> {
    live.visible(ingested.visible_after).await;
    if let Some(wait) = ingested.durable {
        wait.await
            .map_err(|_| ApiError::unavailable("the write-ahead log closed (shutting down)"))?
            .map_err(ApiError::unavailable)?;
    }
    Ok(())
}

fn from_live(error: LiveError) -> ApiError {
    match error {
        LiveError::Full { .. } => ApiError::new(StatusCode::TOO_MANY_REQUESTS, error.to_string()),
        LiveError::Wal(_) => ApiError::unavailable(error.to_string()),
        other => ApiError::internal(other),
    }
}

/// `durability=fsync` (default) or `async`; `ignored` are other parameters accepted and not
/// used (the bulk API's).
fn durability(query: Option<&str>, ignored: &[&str]) -> Result<bool, ApiError> {
    let mut durable = true;
    for (key, value) in form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
        match &*key {
            "durability" => {
                durable = match &*value {
                    "fsync" | "" => true,
                    "async" => false,
                    other => {
                        return Err(ApiError::bad_request(format!(
                            "durability: {other:?} is not fsync or async"
                        )))
                    }
                }
            }
            key if ignored.contains(&key) => {}
            other => {
                return Err(ApiError::bad_request(format!(
                    "unsupported: URL parameter [{other}] (durability{})",
                    ignored.iter().map(|k| format!(", {k}")).collect::<String>()
                )))
            }
        }
    }
    Ok(durable)
}

/// The body, decompressed per `Content-Encoding`, at most `limit` bytes.
fn decode_body(headers: &HeaderMap, body: Bytes, limit: usize) -> Result<Bytes, ApiError> {
    let encoding = headers
        .get(header::CONTENT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("identity")
        .trim()
        .to_ascii_lowercase();
    let reader: Box<dyn Read + '_> = match encoding.as_str() {
        "identity" | "" => return Ok(body),
        "gzip" | "x-gzip" => Box::new(flate2::read::MultiGzDecoder::new(&body[..])),
        "deflate" => Box::new(flate2::read::ZlibDecoder::new(&body[..])),
        "zstd" => Box::new(
            zstd::stream::read::Decoder::new(&body[..])
                .map_err(|e| ApiError::bad_request(format!("body is not valid zstd: {e}")))?,
        ),
        other => {
            return Err(ApiError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                format!("Content-Encoding {other:?} is not supported (gzip, zstd, deflate)"),
            ))
        }
    };
    let mut out = Vec::new();
    reader
        .take(limit as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| ApiError::bad_request(format!("body is not valid {encoding}: {e}")))?;
    if out.len() > limit {
        return Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("decompressed body is over the limit of {limit} bytes"),
        ));
    }
    Ok(Bytes::from(out))
}

/// Non-blank lines with their numbers (from 1), a trailing `\r` removed.
fn lines(body: &[u8]) -> impl Iterator<Item = (usize, &[u8])> {
    body.split(|&b| b == b'\n')
        .enumerate()
        .map(|(i, line)| (i + 1, line.strip_suffix(b"\r").unwrap_or(line)))
        .filter(|(_, line)| !line.iter().all(u8::is_ascii_whitespace))
}

/// Plain text: each non-blank line an event `{"message": line}` with the time of a leading
/// timestamp (`quarry_index::textline`).
fn text_batch(
    now: i64,
    body: &[u8],
    schema: &quarry_index::Schema,
) -> (Batch, Vec<(usize, String)>) {
    let mut events = Vec::new();
    let mut errors = Vec::new();
    for (number, line) in lines(body) {
        match std::str::from_utf8(line) {
            Ok(text) => events.push((number, text_line_event(text, now))),
            Err(e) => errors.push((number, format!("line is not UTF-8 text: {e}"))),
        }
    }
    let (batch, mut parse_errors) = Batch::parse(
        now,
        events.iter().map(|(n, json)| (*n, json.as_bytes())),
        schema,
    );
    errors.append(&mut parse_errors);
    errors.sort();
    (batch, errors)
}

/// A tenant and the documents of a bulk request it receives: (item index, document).
type TenantDocs<'a> = (Arc<Tenant>, Vec<BulkDoc<'a>>);

/// A bulk document: its item's index in the request, and its line (`_id` spliced in).
type BulkDoc<'a> = (usize, Cow<'a, [u8]>);

/// Why a bulk item failed: (status, Elasticsearch's error type, reason).
type ItemError = (u16, &'static str, String);

/// One item of a bulk request, in request order.
struct BulkItem {
    action: &'static str,
    /// Shared by the items that name the same index one after the other (most bodies name
    /// one index throughout).
    index: Arc<str>,
    id: Option<String>,
    /// Set when the item failed before ingest.
    error: Option<ItemError>,
    /// The index must be an alias (`require_alias`), when the action says.
    require_alias: Option<bool>,
    /// The document's line number (for index and create).
    line: usize,
    /// How a write by id checks the document it replaces (`if_seq_no`, `version`).
    conditions: Conditions,
    /// What a write by id did (documents.rs); `None` for a document without an `_id`,
    /// created at version 1.
    outcome: Option<Outcome>,
    /// An update's `_source` in its action line (which of the document to answer with).
    update_source: Option<JsonValue>,
    /// An update's answer `get._source`, when the update asked for it.
    got: Option<JsonValue>,
}

/// What a write by id did.
#[derive(Debug, Clone, Copy)]
struct Outcome {
    version: u64,
    seq: Option<u64>,
    result: &'static str,
    status: u16,
}

/// `POST /_bulk`, `POST /{index}/_bulk`, `POST /api/v1/{tenant}/_bulk`: the Elasticsearch bulk
/// API: `index`, `create`, `delete` and `update` (es_docs.rs's `update_document`). `_index`
/// names the tenant (default: the path's, else `default`); `_id`, when given, is kept as the
/// event's `_id` field. A malformed action line fails the whole request with 400, as in
/// Elasticsearch (the pairing of the lines after it is unknown).
pub(crate) async fn bulk(
    State(state): State<Arc<AppState>>,
    path_index: Option<UrlPath<String>>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let started = Instant::now();
    let params = match crate::es_api::EsParams::parse(query.as_deref()) {
        Ok(params) => params,
        Err(error) => return crate::es_api::es_response(Err(error)),
    };
    // `?index=` names the default index when the path does not.
    let default_index = match (&path_index, params.get("index")) {
        (None, Some(index)) if !index.is_empty() => index.to_owned(),
        _ => crate::es_api::index_or_default(path_index),
    };
    if params
        .get("require_data_stream")
        .is_some_and(|value| value != "false")
    {
        return crate::es_api::es_response(Err(ApiError::bad_request(
            "unsupported: bulk URL parameter [require_data_stream]=true (Quarry has no data streams)",
        )));
    }
    if let Err(error) = params.flag("require_alias", false) {
        return crate::es_api::es_response(Err(error));
    }
    // A request without any key is refused whole; a key is checked against each item's tenant.
    let answer = match state.require_some_key(&headers) {
        // In a task of its own, as an ingest: a request whose client left still finishes, so
        // the `_id`s it claimed are released only once its events are visible.
        Ok(()) => tokio::spawn(bulk_inner(
            state,
            default_index,
            query,
            headers,
            body,
            started,
        ))
        .await
        .unwrap_or_else(|error| Err(ApiError::internal(error))),
        Err(error) => Err(error),
    };
    crate::es_api::es_response(answer)
}

/// One bulk request made by another API (es_docs.rs): its reply as JSON.
pub(crate) async fn bulk_one(
    state: Arc<AppState>,
    default_index: String,
    headers: HeaderMap,
    body: Bytes,
) -> Result<JsonValue, ApiError> {
    state.require_some_key(&headers)?;
    let started = Instant::now();
    let reply = tokio::spawn(bulk_inner(
        state,
        default_index,
        None,
        headers,
        body,
        started,
    ))
    .await
    .map_err(ApiError::internal)??;
    serde_json::from_str(&reply).map_err(ApiError::internal)
}

/// A write by `_id` on a node of a cluster (`--peers`, or a shared metastore), refused: its
/// node would decide it from its own documents table and snapshot (documents.rs), blind to
/// the document's events and deletes on the other nodes, so a replace could leave two live
/// copies and a delete be answered 404 or not be seen by the searchers. Writes without an
/// `_id` (each event its content's id) are taken.
fn refused_by_id(action: &str, id: &str) -> ItemError {
    (
        400,
        "illegal_argument_exception",
        format!(
            "[{action}] of document [{id}]: writes by _id (index or create with an _id, \
             update, delete) are not taken in a cluster yet (this node has --peers or a \
             shared metastore, and decides a document from its own data only); send the \
             document without an _id"
        ),
    )
}

/// Whether a bulk request may write to an index: its tenant, or the error for its items.
type TenantDecision = Result<Arc<Tenant>, ItemError>;

/// Where the items naming one index go.
struct WriteTarget {
    /// The index written: the one named, or an alias's write index.
    index: Arc<str>,
    /// The name is an alias (`require_alias`).
    alias: bool,
    /// Whether the request may write the index (`decide`), once an item asks; an alias
    /// without a write index is decided at once.
    decision: Option<TenantDecision>,
}

/// The index the index `name` of a bulk item writes: itself, or an alias's write index (or
/// why the alias has none).
fn write_target(state: &AppState, name: &Arc<str>) -> WriteTarget {
    let alias = state.open_tenant(name).is_none() && crate::es_aliases::is_alias(state, name);
    let (index, decision) = match crate::es_aliases::write_index(state, name) {
        Ok(index) if *index == **name => (name.clone(), None),
        Ok(index) => (Arc::from(index), None),
        Err(error) => (
            name.clone(),
            Some(Err((400, "illegal_argument_exception", error.message))),
        ),
    };
    WriteTarget {
        index,
        alias,
        decision,
    }
}

/// Whether the request may write `index`: its tenant if the key may write it, a new tenant for
/// those who may create indices (Elasticsearch's automatic index creation, es_indices.rs),
/// else the error for its items.
fn decide(state: &AppState, index: &str, headers: &HeaderMap) -> TenantDecision {
    match state.authorize(index, headers) {
        Ok(tenant) if tenant.is_closed() => Err((
            400,
            "index_closed_exception",
            format!("index [{index}] is closed: open it (POST /{index}/_open) to write"),
        )),
        Ok(tenant) => Ok(tenant),
        Err(error) if error.status == StatusCode::UNAUTHORIZED => {
            Err((401, "security_exception", error.message))
        }
        Err(_) if state.may_manage_indices(headers).is_ok() => {
            crate::es_indices::create_for_write(state, index).map_err(|error| {
                (
                    error.status.as_u16(),
                    "invalid_index_name_exception",
                    error.message,
                )
            })
        }
        Err(_) => Err((
            404,
            "index_not_found_exception",
            format!("no such index [{index}]"),
        )),
    }
}

async fn bulk_inner(
    state: Arc<AppState>,
    default_index: String,
    query: Option<String>,
    headers: HeaderMap,
    body: Bytes,
    started: Instant,
) -> Result<String, ApiError> {
    // Bulk's other parameters (es_api::API_PARAMS): an acknowledged event is searchable at once
    // (`refresh` of any kind is already satisfied), a tenant has one index (`routing`,
    // `wait_for_active_shards`), the request's own timeout bounds it; `require_alias`,
    // `require_data_stream` (only `false`), `index` and `_source*` are read by `bulk`.
    let durable = durability(query.as_deref(), crate::es_api::params_of("bulk"))?;
    let params = crate::es_api::EsParams::parse(query.as_deref())?;
    let require_alias = params.flag("require_alias", false)?;
    // What updates answer of their documents, unless their own lines say.
    let mut update_view = crate::es_hits::HitView::default();
    update_view.read_params(&params)?;
    let update_asks = ["_source", "_source_includes", "_source_excludes"]
        .iter()
        .any(|key| params.get(key).is_some());
    let limit = state.max_body_bytes;
    let now = now_nanos();
    let work_state = state.clone();
    let (mut items, batch_errors, waits, counts, written) = blocking(move || {
        let body = decode_body(&headers, body, limit)?;
        let (items, docs) = parse_bulk(&body, &default_index)?;
        // One tenant per batch: group the documents by the tenant they name.
        let mut by_tenant: Vec<TenantDocs> = Vec::new();
        let mut items = items;
        // Each index named is resolved and authorized once (a key check hashes the key).
        let mut decided: Vec<(Arc<str>, WriteTarget)> = Vec::new();
        // The documents this request writes, by index and id, so far (an update reads the
        // last acknowledged state of its document, which an earlier item would change).
        let mut written_ids: std::collections::HashSet<(Arc<str>, String)> = Default::default();
        for (item_index, doc) in docs {
            let item = &mut items[item_index];
            let position = match decided.iter().position(|(name, _)| *name == item.index) {
                Some(position) => position,
                None => {
                    decided.push((item.index.clone(), write_target(&work_state, &item.index)));
                    decided.len() - 1
                }
            };
            let target = &mut decided[position].1;
            if item.require_alias.unwrap_or(require_alias) && !target.alias {
                item.error = Some((
                    404,
                    "index_not_found_exception",
                    format!(
                        "no such index [{0}] and [require_alias] request flag is [true] and [{0}] is not an alias",
                        item.index
                    ),
                ));
                continue;
            }
            item.index = target.index.clone();
            // Decided once an item may write there: a refused item creates no index.
            let decision = target
                .decision
                .get_or_insert_with(|| decide(&work_state, &target.index, &headers));
            let tenant = match decision {
                Ok(tenant) => tenant.clone(),
                Err(error) => {
                    item.error = Some(error.clone());
                    continue;
                }
            };
            if let (Some(id), true) = (&item.id, work_state.clustered) {
                item.error = Some(refused_by_id(item.action, id));
                continue;
            }
            let earlier = match &item.id {
                Some(id) => !written_ids.insert((item.index.clone(), id.clone())),
                None => false,
            };
            let doc = if item.action != "update" {
                doc
            } else if earlier {
                item.error = Some((
                    400,
                    "illegal_argument_exception",
                    format!(
                        "[{}]: the document is written by an earlier item of this request; \
                         Quarry updates a document from its last acknowledged state: send \
                         the update in a later request",
                        item.id.as_deref().unwrap_or_default()
                    ),
                ));
                continue;
            } else {
                let mut view = update_view.clone();
                let mut asks = update_asks;
                if let Some(source) = &item.update_source {
                    if let Err(error) = view.read_body_key("_source", source) {
                        item.error = Some((400, "illegal_argument_exception", error.message));
                        continue;
                    }
                    asks = true;
                }
                let id = item.id.clone().unwrap_or_default();
                let plan = crate::es_docs::update_document(
                    &tenant.live,
                    &id,
                    &doc,
                    view,
                    asks,
                    &mut item.conditions,
                    &mut item.got,
                );
                match plan {
                    Ok(UpdatePlan::Write(bytes)) => Cow::Owned(splice_id(&bytes, &id).into_owned()),
                    Ok(UpdatePlan::Noop { version, seq }) => {
                        item.outcome = Some(Outcome {
                            version,
                            seq: Some(seq),
                            result: "noop",
                            status: 200,
                        });
                        continue;
                    }
                    Err(error) => {
                        item.error = Some(error);
                        continue;
                    }
                }
            };
            match by_tenant.iter_mut().find(|(t, _)| Arc::ptr_eq(t, &tenant)) {
                Some((_, lines)) => lines.push((item_index, doc)),
                None => by_tenant.push((tenant, vec![(item_index, doc)])),
            }
        }
        let mut errors = Vec::new();
        let mut waits = Vec::new();
        let mut counts = Vec::new();
        let mut written = Answered(Vec::new());
        for (tenant, docs) in by_tenant {
            // Deletes have no document; they are decided with the documents by id.
            let (deletes, docs): (Vec<BulkDoc>, Vec<BulkDoc>) = docs
                .into_iter()
                .partition(|(i, _)| items[*i].action == "delete");
            let deletes: Vec<usize> = deletes.into_iter().map(|(i, _)| i).collect();
            // `_seq_no` and `_version` are the document's own: a document may not set them.
            let docs: Vec<BulkDoc> = docs
                .into_iter()
                .filter(|(i, doc)| {
                    let set = [crate::documents::SEQ_FIELD, crate::documents::VERSION_FIELD]
                        .into_iter()
                        .find(|name| sets_metadata(doc, name));
                    if let Some(name) = set {
                        items[*i].error = Some((
                            400,
                            "mapper_parsing_exception",
                            format!("Field [{name}] is a metadata field and cannot be added inside a document. Use the index API request parameters."),
                        ));
                    }
                    set.is_none()
                })
                .collect();
            let bytes = docs.iter().map(|(_, doc)| doc.len()).sum();
            let docs = if docs.is_empty() {
                docs
            } else if let Err(refused) = tenant.admit(docs.len(), bytes) {
                work_state.count_refused(&tenant, &refused);
                // Over a quota: these items are refused, the other tenants' go on.
                for (item_index, _) in &docs {
                    items[*item_index].error = Some((
                        429,
                        "es_rejected_execution_exception",
                        refused.message.clone(),
                    ));
                }
                Vec::new()
            } else {
                docs
            };
            let schema = tenant.live.schema();
            let (mut batch, mut parse_errors, sent_times) = Batch::parse_documents(
                now,
                docs.iter().map(|(i, doc)| (items[*i].line, &doc[..])),
                &schema,
            );
            // Fields each event gets beside its document's: how it gave its time where its
            // `_source` needs that, its sequence number and version (documents.rs).
            let mut added: Vec<Vec<(&str, JsonValue)>> = sent_times
                .into_iter()
                .map(|sent| match sent {
                    Some(sent) => vec![(crate::live::TIME_AS_SENT_FIELD, JsonValue::from(sent))],
                    None => Vec::new(),
                })
                .collect();
            let mut keep = vec![true; batch.len()];
            // Documents without an `_id` are answered with their content's
            // (quarry-query's doc_id.rs), the id their hits will show.
            let failed_lines: std::collections::HashSet<usize> =
                parse_errors.iter().map(|(line, _)| *line).collect();
            let parsed: Vec<usize> = docs
                .iter()
                .map(|(i, _)| *i)
                .filter(|i| !failed_lines.contains(&items[*i].line))
                .collect();
            // Most mappings keep every field: then no field's rules need looking up.
            let all_stored = schema.mapping().fields.values().all(|rules| rules.stored);
            for (item_index, event) in parsed.iter().zip(batch.events()) {
                let item = &mut items[*item_index];
                if item.id.is_none() {
                    let stored = event
                        .fields
                        .iter()
                        .filter(|(name, _)| {
                            all_stored || schema.rules(name).is_none_or(|r| r.stored)
                        })
                        .map(|(name, value)| (name.as_str(), value));
                    item.id = Some(quarry_query::doc_id::content_id(event.time, stored));
                    item.outcome = Some(Outcome {
                        version: 1,
                        seq: None,
                        result: "created",
                        status: 201,
                    });
                }
            }
            if parsed.iter().any(|i| items[*i].outcome.is_none()) || !deletes.is_empty() {
                let writes = Writes {
                    parsed: &parsed,
                    deletes: &deletes,
                    keep: &mut keep,
                    added: &mut added,
                };
                let changes = decide_documents(&tenant, writes, &mut items)?;
                written.0.push((tenant.clone(), changes));
            }
            if added.iter().any(|fields| !fields.is_empty()) || keep.contains(&false) {
                batch.amend(&keep, &added);
            }
            let failed = parse_errors.len();
            errors.append(&mut parse_errors);
            if batch.is_empty() {
                continue;
            }
            let live = tenant.live.clone();
            let events = batch.len();
            let done = live
                .ingest(batch, durable)
                .map_err(from_live)
                .inspect_err(|error| work_state.count_refused(&tenant, error))?;
            waits.push((live, done));
            counts.push((tenant, events, bytes, failed));
        }
        Ok((items, errors, waits, counts, written))
    })
    .await?;
    for done in waits {
        acknowledge(done).await?;
    }
    drop(written);
    for (tenant, events, bytes, failed) in counts {
        state.count_ingested(&tenant, events, bytes, failed);
    }
    for (line, reason) in batch_errors {
        if let Some(item) = items.iter_mut().find(|item| item.line == line) {
            item.error = Some((400, "document_parsing_exception", reason));
        }
    }
    Ok(bulk_reply(
        &items,
        started.elapsed().as_millis() as u64,
        now,
    ))
}

/// Decides the writes by id of one tenant's items (documents.rs), in request order: the
/// documents `parsed` (item indexes of the batch's events; those without an outcome have an
/// `_id`) and `deletes`. A refused document is marked to leave the batch; an accepted one
/// gets its sequence number (and version) among its added fields. The changes are durable in the tenant's table when this returns; the
/// writes to pass to `DocTable::answered` are returned.
fn decide_documents(
    tenant: &Tenant,
    writes: Writes,
    items: &mut [BulkItem],
) -> Result<crate::documents::Written, ApiError> {
    let Writes {
        parsed,
        deletes,
        keep,
        added,
    } = writes;
    // (item index, its event in the batch)
    let mut ops: Vec<(usize, Option<usize>)> = parsed
        .iter()
        .enumerate()
        .filter(|(_, i)| items[**i].outcome.is_none())
        .map(|(event, i)| (*i, Some(event)))
        .chain(deletes.iter().map(|i| (*i, None)))
        .collect();
    ops.sort_unstable();
    let mut ids: Vec<String> = ops
        .iter()
        .filter_map(|(i, _)| items[*i].id.clone())
        .collect();
    ids.sort_unstable();
    ids.dedup();
    let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
    let mut writer = tenant.documents.writer();
    let snapshot = tenant.live.published_snapshot();
    let mut states = writer
        .states(&snapshot, &ids)
        .map_err(ApiError::from_query)?;
    for (i, event) in ops {
        let item = &mut items[i];
        let Some(id) = item.id.clone() else { continue };
        let op = match item.action {
            "create" => Op::Create,
            "delete" => Op::Delete,
            _ => Op::Index,
        };
        let state = states.get(&id).copied().unwrap_or(DocState::Missing);
        match crate::documents::decide(&id, op, &item.conditions, state) {
            Ok(decision) => {
                let seq = writer.next_seq().map_err(ApiError::internal)?;
                writer.record(&id, decision.version, seq, op == Op::Delete, state);
                let (result, status) = match op {
                    Op::Delete => ("deleted", 200),
                    _ if decision.existed => ("updated", 200),
                    _ => ("created", 201),
                };
                item.outcome = Some(Outcome {
                    version: decision.version,
                    seq: Some(seq),
                    result,
                    status,
                });
                let now = if op == Op::Delete {
                    DocState::Deleted {
                        version: decision.version,
                    }
                } else {
                    DocState::Live {
                        version: decision.version,
                        seq,
                    }
                };
                states.insert(id, now);
                if let Some(event) = event {
                    added[event].push((crate::documents::SEQ_FIELD, seq.into()));
                    if decision.version != 1 {
                        added[event]
                            .push((crate::documents::VERSION_FIELD, decision.version.into()));
                    }
                }
            }
            Err(Refusal::Conflict(reason)) => {
                item.error = Some((409, "version_conflict_engine_exception", reason));
                if let Some(event) = event {
                    keep[event] = false;
                }
            }
            Err(Refusal::NotFound) => {
                item.outcome = Some(Outcome {
                    version: match state {
                        DocState::Deleted { version } => version,
                        _ => 1,
                    },
                    seq: None,
                    result: "not_found",
                    status: 404,
                });
            }
        }
    }
    writer.commit(&tenant.live).map_err(ApiError::internal)
}

/// The writes by id a bulk request decided, per tenant: they leave their tables' recent
/// writes when this is dropped, once the request is answered (its events visible) or failed.
struct Answered(Vec<(Arc<Tenant>, crate::documents::Written)>);

impl Drop for Answered {
    fn drop(&mut self) {
        for (tenant, changes) in &self.0 {
            tenant.documents.answered(changes);
        }
    }
}

/// One tenant's writes by id in a bulk request, for `decide_documents`: the item indexes of
/// the batch's events (`parsed`) and of the deletes, and per event whether it stays and the
/// fields it gets.
struct Writes<'a, 'f> {
    parsed: &'a [usize],
    deletes: &'a [usize],
    keep: &'a mut [bool],
    added: &'a mut [Vec<(&'f str, JsonValue)>],
}

/// The bulk answer in Elasticsearch's shape, written directly (a JSON value per item cost
/// more than the rest of the request's bookkeeping).
fn bulk_reply(items: &[BulkItem], took_ms: u64, now: i64) -> String {
    use std::fmt::Write;
    let text = |s: &str| JsonValue::from(s).to_string();
    let errors = items.iter().any(|item| item.error.is_some());
    let mut out = String::with_capacity(64 + items.len() * 220);
    let _ = write!(out, r#"{{"took":{took_ms},"errors":{errors},"items":["#);
    let mut generated = 0u64;
    // The index as JSON, quoted once per run of items naming it.
    let mut quoted: Option<(&Arc<str>, String)> = None;
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        if !quoted
            .as_ref()
            .is_some_and(|(index, _)| Arc::ptr_eq(index, &item.index))
        {
            quoted = Some((&item.index, text(&item.index)));
        }
        let index = &quoted.as_ref().expect("just set").1;
        let action = item.action;
        let _ = match &item.error {
            Some((status, kind, reason)) => {
                let id = item.id.as_deref().map_or("null".to_owned(), text);
                write!(
                    out,
                    r#"{{"{action}":{{"_index":{index},"_id":{id},"status":{status},"error":{{"type":"{kind}","reason":{}}}}}}}"#,
                    text(reason)
                )
            }
            None => {
                let _ = write!(out, r#"{{"{action}":{{"_index":{index},"_id":"#);
                match &item.id {
                    Some(id) => out.push_str(&text(id)),
                    None => {
                        generated += 1;
                        let _ = write!(out, "\"{now:x}-{generated}\"");
                    }
                }
                let outcome = item.outcome.unwrap_or(Outcome {
                    version: 1,
                    seq: None,
                    result: "created",
                    status: 201,
                });
                let _ = write!(
                    out,
                    r#","_version":{},"result":"{}","_shards":{{"total":1,"successful":1,"failed":0}},"#,
                    outcome.version, outcome.result
                );
                if let Some(seq) = outcome.seq {
                    let _ = write!(out, r#""_seq_no":{seq},"_primary_term":1,"#);
                }
                if let Some(source) = &item.got {
                    let seq = outcome.seq.unwrap_or(0);
                    let _ = write!(
                        out,
                        r#""get":{{"_seq_no":{seq},"_primary_term":1,"found":true,"_source":{source}}},"#
                    );
                }
                let _ = write!(out, r#""status":{}}}}}"#, outcome.status);
                Ok(())
            }
        };
    }
    out.push_str("]}");
    out
}

/// The bulk body's items, and for each `index`/`create` its document (item index, line),
/// `_id` spliced in when the action names one.
#[allow(clippy::type_complexity)]
fn parse_bulk<'a>(
    body: &'a [u8],
    default_index: &str,
) -> Result<(Vec<BulkItem>, Vec<(usize, Cow<'a, [u8]>)>), ApiError> {
    let mut items = Vec::new();
    let mut docs = Vec::new();
    let mut lines = lines(body);
    let mut last_action: Option<(&[u8], BulkAction)> = None;
    while let Some((number, line)) = lines.next() {
        let malformed = |why: String| {
            ApiError::bad_request(format!("Malformed action/metadata line [{number}], {why}"))
        };
        // Shippers repeat one action line for every document: the same bytes read the same.
        let (name, index, id, options) = match &last_action {
            Some((bytes, action)) if *bytes == line => action.clone(),
            _ => {
                let (name, index_name, id, options) = read_action(line).map_err(malformed)?;
                let index_name = index_name.as_deref().unwrap_or(default_index);
                let index = match items.last() {
                    Some(BulkItem { index, .. }) if &**index == index_name => Arc::clone(index),
                    _ => Arc::from(index_name),
                };
                let action = (name, index, id, options);
                last_action = Some((line, action.clone()));
                action
            }
        };
        let item = |error: Option<ItemError>, line: usize| BulkItem {
            action: name,
            index: index.clone(),
            id: id.clone(),
            error,
            require_alias: options.require_alias,
            line,
            conditions: options.conditions,
            outcome: None,
            update_source: options.source.clone(),
            got: None,
        };
        let refused = options
            .refused
            .as_ref()
            .map(|key| {
                (
                    400,
                    "illegal_argument_exception",
                    format!("unsupported: [{key}] in a bulk action"),
                )
            })
            .or_else(|| {
                options.invalid.clone().map(|why| {
                    // Elasticsearch's own kind for an empty id or a missing pipeline.
                    let kind = if id.as_deref() == Some("") || why.starts_with("pipeline") {
                        "illegal_argument_exception"
                    } else {
                        "action_request_validation_exception"
                    };
                    (400, kind, why)
                })
            });
        match name {
            "index" | "create" | "update" if refused.is_some() => {
                lines.next();
                items.push(item(refused, number));
            }
            "update" if id.is_none() => {
                lines.next();
                items.push(item(
                    Some((
                        400,
                        "action_request_validation_exception",
                        "Validation Failed: 1: id is missing;".to_owned(),
                    )),
                    number,
                ));
            }
            // The update's body (`doc`, `upsert`, ...) becomes its document once the
            // document it changes is read (`update_document`).
            "update" => {
                let Some((doc_number, doc)) = lines.next() else {
                    return Err(malformed(format!("action [{name}] has no document line")));
                };
                docs.push((items.len(), Cow::Borrowed(doc)));
                items.push(item(None, doc_number));
            }
            "index" | "create" => {
                let Some((doc_number, doc)) = lines.next() else {
                    return Err(malformed(format!("action [{name}] has no document line")));
                };
                let doc = match &id {
                    Some(id) => splice_id(doc, id),
                    None => Cow::Borrowed(doc),
                };
                docs.push((items.len(), doc));
                items.push(item(None, doc_number));
            }
            "delete" if refused.is_some() => items.push(item(refused, number)),
            "delete" if id.is_none() => items.push(item(
                Some((
                    400,
                    "action_request_validation_exception",
                    "Validation Failed: 1: id is missing;".to_owned(),
                )),
                number,
            )),
            // A delete has no document: it goes with its index's documents, empty.
            "delete" => {
                docs.push((items.len(), Cow::Borrowed(&[][..])));
                items.push(item(None, number));
            }
            _ => unreachable!("read_action reads only index, create, update and delete"),
        }
    }
    Ok((items, docs))
}

/// An action line read: the action, its index, its id and its other options.
type BulkAction = (&'static str, Arc<str>, Option<String>, ActionOptions);

/// An action's metadata beside `_index` and `_id`.
#[derive(Debug, Clone, Default)]
struct ActionOptions {
    /// The index must be an alias (`None`: as the URL says).
    require_alias: Option<bool>,
    /// A key Quarry does not honour (`pipeline`, ...): the item is refused, naming it.
    refused: Option<String>,
    /// `if_seq_no`, `if_primary_term`, `version` and `version_type`.
    conditions: Conditions,
    /// Why those are invalid together, if they are.
    invalid: Option<String>,
    /// An update's `_source`: which of its document to answer with.
    source: Option<JsonValue>,
}

/// An action line as read: the action, `_index` and `_id` if named, and the options.
type ActionRead = (&'static str, Option<String>, Option<String>, ActionOptions);

/// Every key a bulk action takes (`{"index": {...}}`), walked by
/// `crates/quarry/tests/es_options/`; any other makes the item fail naming it.
pub const BULK_ACTION_KEYS: &[&str] = &[
    "_index",
    "_id",
    "require_alias",
    "if_seq_no",
    "if_primary_term",
    "version",
    "version_type",
    "pipeline",
    "op_type",
    // What an update answers of its document.
    "_source",
    // No-ops (`ACTION_NO_OPS`).
    "routing",
    "_type",
];

/// Action metadata that changes nothing: one index per tenant (`routing`), types are gone.
const ACTION_NO_OPS: &[&str] = &["routing", "_type"];

/// An action line's action, `_index` (if named), `_id` (if given) and options, or why it is
/// malformed.
fn read_action(line: &[u8]) -> Result<ActionRead, String> {
    let action: ActionLine = serde_json::from_slice(line).map_err(|e| e.to_string())?;
    let (mut name, meta) = match action {
        ActionLine {
            index: Some(meta),
            create: None,
            update: None,
            delete: None,
        } => ("index", meta),
        ActionLine {
            index: None,
            create: Some(meta),
            update: None,
            delete: None,
        } => ("create", meta),
        ActionLine {
            index: None,
            create: None,
            update: Some(meta),
            delete: None,
        } => ("update", meta),
        ActionLine {
            index: None,
            create: None,
            update: None,
            delete: Some(meta),
        } => ("delete", meta),
        ActionLine {
            index: None,
            create: None,
            update: None,
            delete: None,
        } => return Err("expected FIELD_NAME but found [END_OBJECT]".into()),
        _ => return Err("expected one action: index, create, update or delete".into()),
    };
    let id = meta.id.map(|id| match id {
        JsonValue::String(id) => id,
        other => other.to_string(),
    });
    let mut options = ActionOptions::default();
    match id.as_deref() {
        Some("") => options.invalid = Some("if _id is specified it must not be empty".to_owned()),
        // Elasticsearch's bound on an id (it is a term of its own).
        Some(long) if long.len() > MAX_ID_BYTES => {
            options.invalid = Some(format!(
                "id [{long}] is too long, must be no longer than {MAX_ID_BYTES} bytes but was: {}",
                long.len()
            ))
        }
        _ => {}
    }
    let mut version = None;
    let mut version_type = None;
    for (key, value) in meta.other {
        if !BULK_ACTION_KEYS.contains(&key.as_str()) {
            options.refused.get_or_insert_with(|| key.clone());
            continue;
        }
        let number = || match &value {
            JsonValue::Number(n) => n.as_u64(),
            JsonValue::String(text) => text.parse().ok(),
            _ => None,
        };
        match key.as_str() {
            "require_alias" => options.require_alias = value.as_bool(),
            "if_seq_no" => options.conditions.if_seq_no = number(),
            "if_primary_term" => options.conditions.if_primary_term = number(),
            "version" => version = number(),
            "version_type" => version_type = value.as_str().map(str::to_owned),
            // Quarry has no ingest pipelines: `_none` asks for none; any other is missing.
            "pipeline" if value == "_none" => {}
            "pipeline" => {
                options.invalid.get_or_insert_with(|| {
                    format!(
                        "pipeline with id [{}] does not exist",
                        value.as_str().unwrap_or_default()
                    )
                });
            }
            "op_type" if name == "index" => match value.as_str() {
                Some("create") => name = "create",
                Some("index") => {}
                _ => {
                    options
                        .invalid
                        .get_or_insert_with(|| format!("op_type: {value} is not index or create"));
                }
            },
            key if ACTION_NO_OPS.contains(&key) => {}
            "_source" if name == "update" => options.source = Some(value),
            key => {
                options.refused.get_or_insert_with(|| key.to_owned());
            }
        }
    }
    if let Err(why) = conditions_of(
        &mut options.conditions,
        version,
        version_type.as_deref(),
        name,
    ) {
        options.invalid.get_or_insert(why);
    }
    Ok((name, meta.index.map(Cow::into_owned), id, options))
}

/// Sets `conditions.external` from `version` and `version_type` (Elasticsearch's rules for
/// an action `name`), or says why they cannot go together.
pub(crate) fn conditions_of(
    conditions: &mut Conditions,
    version: Option<u64>,
    version_type: Option<&str>,
    name: &str,
) -> Result<(), String> {
    let gte = match version_type.unwrap_or("internal") {
        "internal" => {
            return match version {
                Some(_) => Err("Validation Failed: 1: internal versioning can not be used for optimistic concurrency control. Please use `if_seq_no` and `if_primary_term` instead;".to_owned()),
                None => Ok(()),
            };
        }
        "external" => false,
        "external_gte" => true,
        other => {
            return Err(format!(
                "version_type: [{other}] is not internal, external or external_gte"
            ))
        }
    };
    let Some(version) = version else {
        return Err("Validation Failed: 1: an external version is required;".to_owned());
    };
    if name == "create" {
        return Err("Validation Failed: 1: create operations only support internal versioning. use index instead;".to_owned());
    }
    if conditions.if_seq_no.is_some() || conditions.if_primary_term.is_some() {
        return Err(
            "Validation Failed: 1: compare and write operations can not be used with versioning;"
                .to_owned(),
        );
    }
    conditions.external = Some((version, gte));
    Ok(())
}

/// An action line, `{"index": {...}}` and the like: exactly one of the four is set. Other
/// metadata is read into `ActionOptions`.
#[derive(serde::Deserialize)]
struct ActionLine<'a> {
    #[serde(borrow, default)]
    index: Option<ActionMeta<'a>>,
    #[serde(borrow, default)]
    create: Option<ActionMeta<'a>>,
    #[serde(borrow, default)]
    update: Option<ActionMeta<'a>>,
    #[serde(borrow, default)]
    delete: Option<ActionMeta<'a>>,
}

#[derive(serde::Deserialize)]
struct ActionMeta<'a> {
    #[serde(borrow, default, rename = "_index")]
    index: Option<Cow<'a, str>>,
    #[serde(default, rename = "_id")]
    id: Option<JsonValue>,
    #[serde(flatten)]
    other: std::collections::BTreeMap<String, JsonValue>,
}

/// The longest `_id`, in bytes (Elasticsearch's).
const MAX_ID_BYTES: usize = 512;

/// Whether the JSON object `doc` has the top-level key `name` (looked for only where the
/// bytes hold it).
fn sets_metadata(doc: &[u8], name: &str) -> bool {
    let quoted = format!("\"{name}\"");
    doc.windows(quoted.len())
        .any(|window| window == quoted.as_bytes())
        && serde_json::from_slice::<serde_json::Map<String, JsonValue>>(doc)
            .is_ok_and(|object| object.contains_key(name))
}

/// `{"_id":"ID", …doc}`: the document with the action's `_id` as its first field (if the
/// document is not an object, it is left to fail parsing as it is).
fn splice_id<'a>(doc: &'a [u8], id: &str) -> Cow<'a, [u8]> {
    let trimmed = doc.trim_ascii_start();
    let Some(rest) = trimmed.strip_prefix(b"{") else {
        return Cow::Borrowed(doc);
    };
    let mut out = Vec::with_capacity(doc.len() + id.len() + 10);
    out.extend_from_slice(b"{\"_id\":");
    out.extend_from_slice(JsonValue::from(id).to_string().as_bytes());
    let empty = rest.trim_ascii_start().starts_with(b"}");
    if !empty {
        out.push(b',');
    }
    out.extend_from_slice(rest);
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bulk_lines_pair_actions_with_documents() {
        let body = b"{\"index\":{\"_index\":\"default\"}}\n{\"a\":1}\n\n{\"create\":{\"_id\":\"x\"}}\r\n{\"b\":2}\n{\"delete\":{\"_id\":\"y\"}}\n{\"update\":{\"_id\":\"z\"}}\n{\"doc\":{}}\n{\"index\":{}}\n{}\n";
        let (items, docs) = parse_bulk(body, "default").unwrap();
        let actions: Vec<&str> = items.iter().map(|i| i.action).collect();
        assert_eq!(actions, ["index", "create", "delete", "update", "index"]);
        // A delete goes with the documents, empty (its index decides it).
        let docs: Vec<(usize, &[u8])> = docs.iter().map(|(i, doc)| (*i, &doc[..])).collect();
        assert_eq!(
            docs,
            [
                (0, &b"{\"a\":1}"[..]),
                (1, b"{\"_id\":\"x\",\"b\":2}"),
                (2, b""),
                (3, b"{\"doc\":{}}"),
                (4, b"{}"),
            ]
        );
        assert_eq!(items[1].line, 5);
        assert!(items.iter().all(|item| item.error.is_none()));
    }

    #[test]
    fn a_malformed_action_names_its_line() {
        let error = parse_bulk(b"{\"index\":{}}\n{}\nnot json\n", "default")
            .err()
            .unwrap();
        assert!(error.message.contains("[3]"), "{}", error.message);
        let error = parse_bulk(b"{\"index\":{}}\n", "default").err().unwrap();
        assert!(
            error.message.contains("no document line"),
            "{}",
            error.message
        );
    }

    #[test]
    fn the_bulk_reply_is_elasticsearch_json() {
        let item = |action, id: Option<&str>, error| BulkItem {
            action,
            index: "default".into(),
            id: id.map(str::to_owned),
            error,
            require_alias: None,
            line: 2,
            conditions: Conditions::default(),
            outcome: None,
            update_source: None,
            got: None,
        };
        let items = [
            item("index", Some("a\"b"), None),
            item("create", None, None),
            item(
                "delete",
                None,
                Some((
                    400,
                    "action_request_validation_exception",
                    "no \"delete\"".into(),
                )),
            ),
        ];
        let reply: JsonValue = serde_json::from_str(&bulk_reply(&items, 3, 255)).unwrap();
        assert_eq!(reply["took"], 3);
        assert_eq!(reply["errors"], true);
        assert_eq!(reply["items"][0]["index"]["_id"], "a\"b");
        assert_eq!(reply["items"][0]["index"]["status"], 201);
        assert_eq!(reply["items"][1]["create"]["_id"], "ff-1");
        assert_eq!(reply["items"][1]["create"]["_shards"]["successful"], 1);
        assert_eq!(reply["items"][2]["delete"]["_id"], JsonValue::Null);
        assert_eq!(
            reply["items"][2]["delete"]["error"]["reason"],
            "no \"delete\""
        );
        let ok: JsonValue =
            serde_json::from_str(&bulk_reply(&[item("index", None, None)], 0, 1)).unwrap();
        assert_eq!(ok["errors"], false);
    }

    #[test]
    fn ids_are_spliced_into_objects_only() {
        assert_eq!(&splice_id(b"{}", "a")[..], b"{\"_id\":\"a\"}");
        assert_eq!(
            &splice_id(b" { \"x\":1}", "q\"")[..],
            b"{\"_id\":\"q\\\"\", \"x\":1}"
        );
        assert_eq!(&splice_id(b"[1]", "a")[..], b"[1]");
    }
}
