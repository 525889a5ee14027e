//! Elasticsearch's single-document APIs: `PUT|POST /{index}/_doc/{id}` and `/_create/{id}`
//! index one document under that `_id`; `POST /{index}/_doc` one with its content's id
//! (quarry-query's doc_id.rs); `GET|HEAD /{index}/_doc/{id}` and `/_source/{id}` read one back. They go
//! through the bulk path (`ingest::bulk_one`), so a document is durable and searchable when
//! answered, as an ingest is.
//!
//! Events never change: indexing an `_id` that exists is refused with 409 (Elasticsearch
//! would replace the document; Quarry keeps the first and says so), and `DELETE` and
//! `_update` are refused by name.

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

/// URL parameters of a single-document index: those a bulk request takes (`refresh` and the
/// rest change nothing, ingest.rs), and `op_type` (`index` or `create`: both create).
const INDEX_PARAMS: &[&str] = &[
    "refresh",
    "timeout",
    "routing",
    "wait_for_active_shards",
    "require_alias",
    "op_type",
];

/// `PUT|POST /{index}/_doc/{id}`, `PUT|POST /{index}/_create/{id}`.
pub(crate) async fn index_with_id(
    State(state): State<Arc<AppState>>,
    UrlPath((index, id)): UrlPath<(String, String)>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    index_one(state, index, Some(id), query, headers, body).await
}

/// `POST /{index}/_doc`: the document's id is its content's.
pub(crate) async fn index_auto(
    State(state): State<Arc<AppState>>,
    UrlPath(index): UrlPath<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    index_one(state, index, None, query, headers, body).await
}

async fn index_one(
    state: Arc<AppState>,
    index: String,
    id: Option<String>,
    query: Option<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let answer = async {
        let params = EsParams::parse(query.as_deref())?;
        params.check("index a document", INDEX_PARAMS)?;
        if let Some(op) = params
            .get("op_type")
            .filter(|op| !matches!(*op, "index" | "create"))
        {
            return Err(ApiError::bad_request(format!(
                "op_type: {op:?} is not index or create"
            )));
        }
        if id.as_deref().is_some_and(str::is_empty) {
            return Err(ApiError::bad_request("a document id may not be empty"));
        }
        // One line: JSON has no raw line breaks inside strings, so they can go.
        let document: Vec<u8> = body
            .iter()
            .map(|&b| if b == b'\n' || b == b'\r' { b' ' } else { b })
            .collect();
        match serde_json::from_slice::<JsonValue>(&document) {
            Ok(JsonValue::Object(_)) => {}
            Ok(_) => return Err(ApiError::bad_request("a document must be a JSON object")),
            Err(e) => {
                return Err(ApiError::bad_request(format!(
                    "the document is not JSON: {e}"
                )))
            }
        }
        let mut action = match &id {
            Some(id) => json!({"create": {"_index": index, "_id": id}}),
            None => json!({"create": {"_index": index}}),
        };
        if params.flag("require_alias", false)? {
            action["create"]["require_alias"] = true.into();
        }
        let mut bulk = action.to_string().into_bytes();
        bulk.push(b'\n');
        bulk.extend_from_slice(&document);
        bulk.push(b'\n');
        let reply = crate::ingest::bulk_one(state, index.clone(), headers, bulk.into()).await?;
        let item = &reply["items"][0]["create"];
        let status = item["status"].as_u64().unwrap_or(500) as u16;
        if let Some(error) = item.get("error") {
            let reason = error["reason"].as_str().unwrap_or("refused").to_owned();
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let kind = match error["type"].as_str() {
                Some("version_conflict_engine_exception") => "version_conflict_engine_exception",
                Some("index_not_found_exception") => "index_not_found_exception",
                Some("document_parsing_exception") => "document_parsing_exception",
                _ => "illegal_argument_exception",
            };
            let reason = if status == StatusCode::CONFLICT {
                format!("{reason}; Quarry's events never change, so it keeps the first")
            } else {
                reason
            };
            return Err(ApiError::new(status, reason).with_kind(kind));
        }
        Ok((
            StatusCode::CREATED,
            json!({
                "_index": item["_index"],
                "_id": item["_id"],
                "_version": 1,
                "result": "created",
                "_shards": {"total": 1, "successful": 1, "failed": 0},
                "_seq_no": 0,
                "_primary_term": 1,
            }),
        ))
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
        let mut known = vec!["realtime", "refresh", "routing", "preference"];
        known.extend_from_slice(HitView::PARAMS);
        params.check("get a document", &known)?;
        let mut view = HitView::default();
        view.read_params(&params)?;
        // An alias of one index reads that index, which the answer names.
        let concrete = crate::es_aliases::single_index(&state, &index)?;
        let live = state.authorize(&concrete, &headers)?.live.clone();
        let wanted = id.clone();
        let found = state
            .search(move || find(&live.published_snapshot(), &wanted))
            .await?;
        Ok((
            concrete,
            found.map(|(time, fields)| {
                let flat = crate::event_json(&fields);
                let mut hit = json!({});
                view.render(&mut hit, &flat, time, &QueryWords::default());
                hit.get("_source").cloned().unwrap_or(JsonValue::Null)
            }),
        ))
    }
    .await;
    let (index, answer) = match answer {
        Ok((index, found)) => (index, Ok(found)),
        Err(error) => (index, Err(error)),
    };
    let (status, body) = match answer {
        Err(error) => return es_response(Err(error)),
        Ok(Some(source)) if source_only => (StatusCode::OK, source),
        Ok(Some(source)) => {
            let mut body = json!({
                "_index": index, "_id": id, "_version": 1, "_seq_no": 0, "_primary_term": 1,
                "found": true,
            });
            if !source.is_null() {
                body["_source"] = source;
            }
            (StatusCode::OK, body)
        }
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

/// An event's time and fields.
type Document = (i64, Vec<(String, Value)>);

/// The event with `id`: one whose client gave that `_id`, else one whose content id it is
/// (`Query::ContentId` reads the events of that nanosecond).
pub(crate) fn find(
    searcher: &quarry_query::Searcher,
    id: &str,
) -> Result<Option<Document>, ApiError> {
    let by_id = SearchRequest {
        ast: Some(Ast::Exact {
            field: quarry_query::doc_id::ID_FIELD.into(),
            value: id.to_owned(),
        }),
        sort: SortOrder::TimeAsc,
        limit: 1,
        ..SearchRequest::default()
    };
    let response = searcher.execute(&by_id).map_err(ApiError::from_query)?;
    Ok(response
        .hits
        .into_iter()
        .next()
        .map(|hit| (hit.time, hit.event)))
}

/// `DELETE /{index}/_doc/{id}`, `POST /{index}/_update/{id}`: refused, events never change.
pub(crate) async fn refuse_change(method: Method) -> Response {
    let what = if method == Method::DELETE {
        "delete"
    } else {
        "update"
    };
    es_response(Err(ApiError::bad_request(format!(
        "unsupported: {what} of a document (Quarry's events never change; retention removes old ones)"
    ))))
}
