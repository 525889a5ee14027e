//! Elasticsearch's single-document APIs: `PUT|POST /{index}/_doc/{id}` indexes one document
//! under that `_id` (replacing the one there: documents.rs), `/_create/{id}` only if there is
//! none; `POST /{index}/_doc` one with its content's id (quarry-query's doc_id.rs);
//! `DELETE /{index}/_doc/{id}` deletes one; `GET|HEAD /{index}/_doc/{id}` and
//! `/_source/{id}` read one back, `_mget` several. Writes go through the bulk path
//! (`ingest::bulk_one`), so a document is durable and searchable when answered, as an ingest
//! is. `POST /{index}/_update/{id}` (and a bulk `update`) merges a partial document into the
//! one there, or upserts (`update_document`); scripts are refused by name.

use crate::es_api::{es_response, EsParams};
use crate::es_hits::{HitView, QueryWords};
use crate::{ApiError, AppState};
use axum::body::Bytes;
use axum::extract::{Path as UrlPath, RawQuery, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use quarry_format::Value;
use quarry_query::parser::Ast;
use quarry_query::{SearchRequest, SortOrder};
use serde_json::{json, Value as JsonValue};
use std::sync::Arc;

/// Every key an update's body takes (`_update`, and a bulk `update`'s second line), walked
/// by `crates/quarry/tests/es_options/`: `script` and `scripted_upsert` are read only to be
/// refused (Quarry runs no scripts).
pub const UPDATE_BODY_KEYS: &[&str] = &[
    "doc",
    "upsert",
    "doc_as_upsert",
    "detect_noop",
    "_source",
    "script",
    "scripted_upsert",
];

/// The keys of a `_mget` body, and of each entry of its `docs` (`routing` changes nothing:
/// one shard per index).
pub const MGET_BODY_KEYS: &[&str] = &["docs", "ids"];
pub const MGET_DOC_KEYS: &[&str] = &["_index", "_id", "_source", "stored_fields", "routing"];

/// `POST /{index}/_update/{id}`: `doc` merged into the document, or an upsert
/// (`update_document`).
pub(crate) async fn update(
    State(state): State<Arc<AppState>>,
    UrlPath((index, id)): UrlPath<(String, String)>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    write_one(state, "update", index, Some(id), query, headers, Some(body)).await
}

/// `PUT|POST /{index}/_doc/{id}`.
pub(crate) async fn index_with_id(
    State(state): State<Arc<AppState>>,
    UrlPath((index, id)): UrlPath<(String, String)>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    write_one(state, "index", index, Some(id), query, headers, Some(body)).await
}

/// `PUT|POST /{index}/_create/{id}`.
pub(crate) async fn create_with_id(
    State(state): State<Arc<AppState>>,
    UrlPath((index, id)): UrlPath<(String, String)>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    write_one(state, "create", index, Some(id), query, headers, Some(body)).await
}

/// `POST /{index}/_doc`: the document's id is its content's.
pub(crate) async fn index_auto(
    State(state): State<Arc<AppState>>,
    UrlPath(index): UrlPath<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    write_one(state, "create", index, None, query, headers, Some(body)).await
}

/// `DELETE /{index}/_doc/{id}`.
pub(crate) async fn delete(
    State(state): State<Arc<AppState>>,
    UrlPath((index, id)): UrlPath<(String, String)>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    write_one(state, "delete", index, Some(id), query, headers, None).await
}

/// One write as a bulk request of one item; answers as Elasticsearch's single-document API.
async fn write_one(
    state: Arc<AppState>,
    action: &'static str,
    index: String,
    id: Option<String>,
    query: Option<String>,
    headers: HeaderMap,
    body: Option<Bytes>,
) -> Response {
    let answer = async {
        let params = EsParams::parse(query.as_deref())?;
        if action == "update" {
            params.check("update a document")?;
        } else {
            params.check("write a document")?;
        }
        let action = match params.get("op_type") {
            None if action == "update" => action,
            None | Some("index") if body.is_some() => action,
            Some("create") if body.is_some() => "create",
            Some(op) => {
                return Err(ApiError::bad_request(format!(
                    "op_type: {op:?} is not index or create"
                )))
            }
            None => action,
        };
        // `op_type=index` on `/_doc` without an id creates, as Elasticsearch's automatic ids.
        let action = if id.is_none() { "create" } else { action };
        if id.as_deref().is_some_and(str::is_empty) {
            return Err(ApiError::bad_request("a document id may not be empty"));
        }
        let document = match &body {
            Some(body) => Some(document_line(body)?),
            None => None,
        };
        let mut meta = json!({"_index": index});
        if let Some(id) = &id {
            meta["_id"] = id.clone().into();
        }
        if params.flag("require_alias", false)? {
            meta["require_alias"] = true.into();
        }
        for key in ["if_seq_no", "if_primary_term", "version"] {
            if let Some(value) = params.get(key) {
                let number: u64 = value.parse().map_err(|_| {
                    ApiError::bad_request(format!("{key}: [{value}] is not a non-negative number"))
                })?;
                meta[key] = number.into();
            }
        }
        if let Some(kind) = params.get("version_type") {
            meta["version_type"] = kind.into();
        }
        // What an update answers of its document, as its action line says it.
        let list = |key: &str| {
            params
                .get(key)
                .map(|list| json!(list.split(',').collect::<Vec<_>>()))
        };
        match params.get("_source") {
            Some("true" | "") => meta["_source"] = true.into(),
            Some("false") => meta["_source"] = false.into(),
            Some(_) => meta["_source"] = list("_source").unwrap_or_default(),
            None => {}
        }
        for (key, side) in [
            ("_source_includes", "includes"),
            ("_source_excludes", "excludes"),
        ] {
            if let Some(names) = list(key) {
                if !meta["_source"].is_object() {
                    meta["_source"] = json!({});
                }
                meta["_source"][side] = names;
            }
        }
        let mut bulk = json!({ action: meta }).to_string().into_bytes();
        bulk.push(b'\n');
        if let Some(document) = document {
            bulk.extend_from_slice(&document);
            bulk.push(b'\n');
        }
        let reply = crate::ingest::bulk_one(state, index.clone(), headers, bulk.into()).await?;
        let item = &reply["items"][0][action];
        let status = item["status"].as_u64().unwrap_or(500) as u16;
        let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        if let Some(error) = item.get("error") {
            let reason = error["reason"].as_str().unwrap_or("refused").to_owned();
            let kind = match error["type"].as_str() {
                Some("version_conflict_engine_exception") => "version_conflict_engine_exception",
                Some("index_not_found_exception") => "index_not_found_exception",
                Some("document_parsing_exception") => "document_parsing_exception",
                Some("action_request_validation_exception") => {
                    "action_request_validation_exception"
                }
                Some("document_missing_exception") => "document_missing_exception",
                _ => "illegal_argument_exception",
            };
            return Err(ApiError::new(status, reason).with_kind(kind));
        }
        let mut answer = json!({
            "_index": item["_index"],
            "_id": item["_id"],
            "_version": item["_version"],
            "result": item["result"],
            "_shards": {"total": 1, "successful": 1, "failed": 0},
            "_seq_no": item.get("_seq_no").cloned().unwrap_or(0.into()),
            "_primary_term": 1,
        });
        if let Some(got) = item.get("get") {
            answer["get"] = got.clone();
        }
        // `refresh=true` (or empty): Elasticsearch says it refreshed; every answered write
        // is searchable anyway.
        if matches!(params.get("refresh"), Some("true" | "")) {
            answer["forced_refresh"] = true.into();
        }
        Ok((status, answer))
    }
    .await;
    match answer {
        Ok((status, body)) => {
            let mut response = es_response(Ok(body.to_string()));
            *response.status_mut() = status;
            response
        }
        Err(error) => es_response(Err(error)),
    }
}

/// A document body as one bulk line: a JSON object, its raw line breaks gone (JSON has none
/// inside strings).
fn document_line(body: &[u8]) -> Result<Vec<u8>, ApiError> {
    let document: Vec<u8> = body
        .iter()
        .map(|&b| if b == b'\n' || b == b'\r' { b' ' } else { b })
        .collect();
    match serde_json::from_slice::<JsonValue>(&document) {
        Ok(JsonValue::Object(_)) => Ok(document),
        Ok(_) => Err(ApiError::bad_request("a document must be a JSON object")),
        Err(e) => Err(ApiError::bad_request(format!(
            "the document is not JSON: {e}"
        ))),
    }
}

/// `GET|HEAD /{index}/_doc/{id}`: the document, or `found: false` with 404.
pub(crate) async fn get(
    method: Method,
    State(state): State<Arc<AppState>>,
    UrlPath((index, id)): UrlPath<(String, String)>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    read_one(state, method, index, id, query, headers, false).await
}

/// `GET|HEAD /{index}/_source/{id}`: the document's source alone.
pub(crate) async fn source(
    method: Method,
    State(state): State<Arc<AppState>>,
    UrlPath((index, id)): UrlPath<(String, String)>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    read_one(state, method, index, id, query, headers, true).await
}

async fn read_one(
    state: Arc<AppState>,
    method: Method,
    index: String,
    id: String,
    query: Option<String>,
    headers: HeaderMap,
    source_only: bool,
) -> Response {
    let answer = async {
        let params = EsParams::parse(query.as_deref())?;
        params.check("get a document")?;
        // `version=N` asks for that version (409 otherwise); `version=true` shows it.
        let wanted_version = match params.get("version") {
            Some(text) if text.bytes().all(|b| b.is_ascii_digit()) && !text.is_empty() => {
                Some(text.parse::<u64>().map_err(|_| {
                    ApiError::bad_request(format!("version: [{text}] is out of range"))
                })?)
            }
            _ => None,
        };
        let params = if wanted_version.is_some() {
            params.without("version")
        } else {
            params
        };
        let mut view = HitView::default();
        view.read_params(&params)?;
        get_document(&state, &index, &id, &headers, view).await
        .and_then(|(index, found)| match (wanted_version, &found) {
            // Whatever `version_type` says, a read asks for that very version.
            (Some(wanted), Some(hit)) if hit["_version"] != wanted => Err(ApiError::new(
                StatusCode::CONFLICT,
                format!(
                    "[{id}]: version conflict, current version [{}] is different than the one provided [{wanted}]",
                    hit["_version"]
                ),
            )
            .with_kind("version_conflict_engine_exception")),
            _ => Ok((index, found)),
        })
    }
    .await;
    let (index, answer) = match answer {
        Ok((index, found)) => (index, Ok(found)),
        Err(error) => (index, Err(error)),
    };
    let (status, body) = match answer {
        Err(error) => return es_response(Err(error)),
        Ok(Some(hit)) if source_only => (StatusCode::OK, hit["_source"].clone()),
        Ok(Some(hit)) => (StatusCode::OK, found_body(&index, &id, &hit)),
        Ok(None) if source_only => {
            let error = ApiError::new(
                StatusCode::NOT_FOUND,
                format!("Document not found [{index}]/[{id}]"),
            )
            .with_kind("resource_not_found_exception");
            return es_response(Err(error));
        }
        Ok(None) => (
            StatusCode::NOT_FOUND,
            json!({"_index": index, "_id": id, "found": false}),
        ),
    };
    let mut response = if method == Method::HEAD {
        status.into_response()
    } else {
        let mut response = es_response(Ok(body.to_string()));
        *response.status_mut() = status;
        response
    };
    crate::es_api::mark_elasticsearch(&mut response);
    response
}

/// Reads document `id` of `index` (an alias of one index reads that index, which the answer
/// names) as `view` shows it: the index read, and the document as a hit (with `_version` and
/// `_seq_no`), if found.
async fn get_document(
    state: &Arc<AppState>,
    index: &str,
    id: &str,
    headers: &HeaderMap,
    view: HitView,
) -> Result<(String, Option<JsonValue>), ApiError> {
    let concrete = crate::es_aliases::single_index(state, index)?;
    let live = state.authorize(&concrete, headers)?.live.clone();
    let found = find_document(state, &concrete, live, id).await?;
    Ok((
        concrete,
        found.map(|(time, fields)| {
            let flat = crate::event_json(&fields);
            let mut hit = json!({});
            view.render(&mut hit, &flat, time, &QueryWords::default());
            let number =
                |name: &str, default: u64| flat.get(name).cloned().unwrap_or(default.into());
            hit["_version"] = number(crate::documents::VERSION_FIELD, 1);
            hit["_seq_no"] = number(crate::documents::SEQ_FIELD, 0);
            hit
        }),
    ))
}

/// A found document as the get API answers it.
fn found_body(index: &str, id: &str, hit: &JsonValue) -> JsonValue {
    let mut body = json!({
        "_index": index, "_id": id, "_version": hit["_version"],
        "_seq_no": hit["_seq_no"], "_primary_term": 1, "found": true,
    });
    for key in ["_source", "fields", "_ignored"] {
        if let Some(value) = hit.get(key).filter(|v| !v.is_null()) {
            body[key] = value.clone();
        }
    }
    body
}

/// `GET|POST /_mget`, `/{index}/_mget`: several documents, each as the get API reads it
/// (`docs: [{_index, _id, _source, stored_fields}]`, or `ids` of the path's index); a
/// document's error (its index missing, an alias of several) is its entry's, not the
/// request's.
pub(crate) async fn mget(
    State(state): State<Arc<AppState>>,
    index: Option<UrlPath<String>>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let answer = async {
        let params = EsParams::parse(query.as_deref())?;
        params.check("multi get")?;
        let body: JsonValue = if body.is_empty() {
            json!({})
        } else {
            serde_json::from_slice(&body)
                .map_err(|e| ApiError::bad_request(format!("the body is not JSON: {e}")))?
        };
        let object = body.as_object().ok_or_else(|| {
            ApiError::bad_request("expected {\"docs\": [...]} or {\"ids\": [...]}")
        })?;
        let path_index = index.map(|UrlPath(index)| index);
        let mut wanted: Vec<Wanted> = Vec::new();
        for (key, value) in object {
            if !MGET_BODY_KEYS.contains(&key.as_str()) {
                return Err(ApiError::bad_request(format!(
                    "unsupported: [{key}] in a multi get body (docs or ids)"
                )));
            }
            match (key.as_str(), value) {
                ("docs", JsonValue::Array(docs)) => {
                    for doc in docs {
                        let doc = doc.as_object().ok_or_else(|| {
                            ApiError::bad_request("docs: each entry must be an object")
                        })?;
                        for key in doc.keys() {
                            if !MGET_DOC_KEYS.contains(&key.as_str()) {
                                return Err(ApiError::bad_request(format!(
                                    "docs: unsupported key [{key}] (a document is asked for by _index, _id, _source, stored_fields)"
                                )));
                            }
                        }
                        let text = |key: &str| {
                            doc.get(key).map(|value| match value {
                                JsonValue::String(text) => text.clone(),
                                other => other.to_string(),
                            })
                        };
                        wanted.push((
                            text("_index").or_else(|| path_index.clone()),
                            text("_id"),
                            Some(doc),
                        ));
                    }
                }
                ("ids", JsonValue::Array(ids)) => {
                    for id in ids {
                        let id = match id {
                            JsonValue::String(text) => text.clone(),
                            other => other.to_string(),
                        };
                        wanted.push((path_index.clone(), Some(id), None));
                    }
                }
                (key, _) => {
                    return Err(ApiError::bad_request(format!("{key}: expected a list")))
                }
            }
        }
        let invalid = |why: String| {
            ApiError::bad_request(format!("Validation Failed: 1: {why};"))
                .with_kind("action_request_validation_exception")
        };
        if wanted.is_empty() {
            return Err(invalid("no documents to get".to_owned()));
        }
        for (n, (index, id, _)) in wanted.iter().enumerate() {
            if index.is_none() {
                return Err(invalid(format!("index is missing for doc {n}")));
            }
            if id.is_none() {
                return Err(invalid(format!("id is missing for doc {n}")));
            }
        }
        let mut docs = Vec::with_capacity(wanted.len());
        for (index, id, options) in wanted {
            let (index, id) = (index.unwrap_or_default(), id.unwrap_or_default());
            let mut view = HitView::default();
            view.read_params(&params)?;
            if let Some(options) = options {
                for key in ["_source", "stored_fields"] {
                    if let Some(value) = options.get(key) {
                        view.read_body_key(key, value)?;
                    }
                }
            }
            let doc = match get_document(&state, &index, &id, &headers, view).await {
                Ok((index, Some(hit))) => found_body(&index, &id, &hit),
                Ok((index, None)) => json!({"_index": index, "_id": id, "found": false}),
                Err(error) => {
                    let (_, body) = crate::es_api::es_error(error);
                    json!({"_index": index, "_id": id, "error": body.0["error"]})
                }
            };
            docs.push(doc);
        }
        Ok(json!({ "docs": docs }).to_string())
    }
    .await;
    es_response(answer)
}

/// A document `_mget` asks for: its index, its id, and the entry's own options.
type Wanted<'a> = (
    Option<String>,
    Option<String>,
    Option<&'a serde_json::Map<String, JsonValue>>,
);

/// An event's time and fields.
type Document = (i64, Vec<(String, Value)>);

/// The event with `id`: one whose client gave that `_id`, else one whose content id it is
/// (`Query::ContentId` reads the events of that nanosecond).
/// Document `id` of `tenant` (`live` on this node): from this node's snapshot, or with
/// `--peers` from every node's, where a node or a block that does not answer is an error
/// naming it, never "not found".
pub(crate) async fn find_document(
    state: &AppState,
    tenant: &str,
    live: Arc<crate::live::LiveIndex>,
    id: &str,
) -> Result<Option<Document>, ApiError> {
    let Some(root) = &state.root else {
        let wanted = id.to_owned();
        return state
            .search(move || find(&live.published_snapshot(), &wanted))
            .await;
    };
    let source = quarry_query::leaf::QuerySource::Dsl {
        query: json!({"ids": {"values": [id]}}),
        now: quarry_query::time::now_nanos(),
    };
    let response = crate::cluster_search_source(root, tenant, source, &by_id(id)).await?;
    if response.is_partial() {
        let lacking: Vec<String> = response.warnings.iter().map(ToString::to_string).collect();
        return Err(ApiError::unavailable(format!(
            "document [{id}] of [{tenant}] cannot be read whole: {}",
            lacking.join("; ")
        )));
    }
    Ok(response
        .hits
        .into_iter()
        .next()
        .map(|hit| (hit.time, hit.event)))
}

/// The search that finds document `id`: its first event (by time) with that id.
fn by_id(id: &str) -> SearchRequest {
    SearchRequest {
        ast: Some(Ast::Exact {
            field: quarry_query::doc_id::ID_FIELD.into(),
            value: id.to_owned(),
        }),
        sort: SortOrder::TimeAsc,
        limit: 1,
        ..SearchRequest::default()
    }
}

pub(crate) fn find(
    searcher: &quarry_query::Searcher,
    id: &str,
) -> Result<Option<Document>, ApiError> {
    let response = searcher.execute(&by_id(id)).map_err(ApiError::from_query)?;
    Ok(response
        .hits
        .into_iter()
        .next()
        .map(|hit| (hit.time, hit.event)))
}

/// An update's answer before its write: the document to index in place of the one there, or
/// the item's outcome when there is nothing to write (a no-op) or it is refused.
pub(crate) enum UpdatePlan {
    Write(Vec<u8>),
    Noop { version: u64, seq: u64 },
}

/// What an update refuses: (status, kind, reason), as a bulk item answers it.
type UpdateError = (u16, &'static str, String);

/// Reads a bulk `update` (or `_update`) body against document `id` of `live` as it stands:
/// `doc` is merged into the document there (objects key by key, anything else replaced), or
/// the document is created from `upsert` (or from `doc`, with `doc_as_upsert`) when there is
/// none; `detect_noop` (default true) writes nothing when the merge changes nothing. The
/// write is made conditional on the sequence number read (`conditions.if_seq_no`), so a
/// change in between is a 409 rather than lost. `view` (the URL's `_source` parameters, then
/// the action's and the body's `_source`) says what of the document the answer shows, in
/// `got`, when any of them asked.
pub(crate) fn update_document(
    live: &crate::live::LiveIndex,
    id: &str,
    body: &[u8],
    mut view: HitView,
    mut asked: bool,
    conditions: &mut crate::documents::Conditions,
    got: &mut Option<JsonValue>,
) -> Result<UpdatePlan, UpdateError> {
    let invalid = |reason: String| (400, "illegal_argument_exception", reason);
    let body: serde_json::Map<String, JsonValue> = serde_json::from_slice(body).map_err(|e| {
        (
            400,
            "x_content_parse_exception",
            format!("the update is not a JSON object: {e}"),
        )
    })?;
    let object = |key: &str, value: &JsonValue| match value {
        JsonValue::Object(object) => Ok(object.clone()),
        _ => Err(invalid(format!("[{key}]: expected a JSON object"))),
    };
    let flag = |key: &str, value: &JsonValue| {
        value
            .as_bool()
            .ok_or_else(|| invalid(format!("[{key}]: expected true or false")))
    };
    let (mut doc, mut upsert, mut doc_as_upsert, mut detect_noop) = (None, None, false, true);
    for (key, value) in &body {
        if !UPDATE_BODY_KEYS.contains(&key.as_str()) {
            return Err(invalid(format!("unsupported: [{key}] in an update")));
        }
        match key.as_str() {
            "doc" => doc = Some(object(key, value)?),
            "upsert" => upsert = Some(object(key, value)?),
            "doc_as_upsert" => doc_as_upsert = flag(key, value)?,
            "detect_noop" => detect_noop = flag(key, value)?,
            "_source" => {
                view.read_body_key("_source", value)
                    .map_err(|e| invalid(e.message))?;
                asked = true;
            }
            "script" | "scripted_upsert" => {
                return Err(invalid(format!(
                    "unsupported: [{key}] in an update (Quarry runs no scripts: send `doc`)"
                )))
            }
            other => return Err(invalid(format!("unsupported: [{other}] in an update"))),
        }
    }
    let Some(doc) = doc else {
        return Err((
            400,
            "action_request_validation_exception",
            "Validation Failed: 1: script or doc is missing;".to_owned(),
        ));
    };
    let found = find(&live.published_snapshot(), id).map_err(|e| (500, "exception", e.message))?;
    let (document, plan) = match found {
        Some((time, fields)) => {
            let flat = crate::event_json(&fields);
            let number = |name: &str| flat.get(name).and_then(JsonValue::as_u64);
            if !flat.contains_key(quarry_query::doc_id::ID_FIELD) {
                return Err(invalid(format!(
                    "[{id}] is the id of a document's content, not one a client gave: index \
                     the document again under an `_id` to update it"
                )));
            }
            let mut hit = json!({});
            HitView::default().render(&mut hit, &flat, time, &QueryWords::default());
            let source = match hit.get_mut("_source").map(JsonValue::take) {
                Some(JsonValue::Object(source)) => source,
                _ => serde_json::Map::new(),
            };
            let mut merged = source.clone();
            merge(&mut merged, doc);
            let seq = number(crate::documents::SEQ_FIELD).unwrap_or(0);
            if detect_noop && merged == source {
                let version = number(crate::documents::VERSION_FIELD).unwrap_or(1);
                (merged, UpdatePlan::Noop { version, seq })
            } else {
                // Written only over the document read.
                conditions.if_seq_no.get_or_insert(seq);
                conditions
                    .if_primary_term
                    .get_or_insert(crate::documents::PRIMARY_TERM);
                let bytes = serde_json::to_vec(&merged).unwrap_or_default();
                (merged, UpdatePlan::Write(bytes))
            }
        }
        None => match (upsert, doc_as_upsert) {
            (_, true) => (
                doc.clone(),
                UpdatePlan::Write(serde_json::to_vec(&doc).unwrap_or_default()),
            ),
            (Some(upsert), false) => {
                let bytes = serde_json::to_vec(&upsert).unwrap_or_default();
                (upsert, UpdatePlan::Write(bytes))
            }
            (None, false) => {
                return Err((
                    404,
                    "document_missing_exception",
                    format!("[{id}]: document missing"),
                ))
            }
        },
    };
    if asked {
        *got = view.filter_source(&document);
    }
    Ok(plan)
}

/// Merges `patch` into `document` as an update does: an object into an object key by key,
/// any other value in place of the one there.
fn merge(
    document: &mut serde_json::Map<String, JsonValue>,
    patch: serde_json::Map<String, JsonValue>,
) {
    for (key, value) in patch {
        match (document.get_mut(&key), value) {
            (Some(JsonValue::Object(inner)), JsonValue::Object(patch)) => merge(inner, patch),
            (_, value) => {
                document.insert(key, value);
            }
        }
    }
}
