//! A tenant's field mapping over HTTP: `GET`/`PUT /api/v1/{tenant}/mapping`, and
//! Elasticsearch's `PUT /{index}/_mapping` (`GET /{index}/_mapping` is `es_search::mapping`).
//! A `PUT` grows the mapping: new fields are added, a mapped field cannot change (400 naming
//! it). Events ingested from then on follow it; blocks already written keep how they were
//! indexed, and queries plan with the mapping at once.

use crate::{blocking, es_api::es_response, ApiError, AppState};
use axum::body::Bytes;
use axum::extract::{Path as UrlPath, State};
use axum::http::HeaderMap;
use axum::response::Response;
use axum::Json;
use quarry_store::Mapping;
use serde_json::{json, Value as JsonValue};
use std::sync::Arc;

/// `GET /api/v1/{tenant}/mapping`: the mapping in force, Elasticsearch-style.
pub(crate) async fn get(
    State(state): State<Arc<AppState>>,
    UrlPath(tenant): UrlPath<String>,
    headers: HeaderMap,
) -> Result<Json<JsonValue>, ApiError> {
    let live = state.authorize(&tenant, &headers)?.live.clone();
    Ok(Json(live.schema().mapping().to_es_json()))
}

/// `PUT /api/v1/{tenant}/mapping`: grows the mapping; answers the mapping now in force.
pub(crate) async fn put(
    State(state): State<Arc<AppState>>,
    UrlPath(tenant): UrlPath<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<JsonValue>, ApiError> {
    let mapping = apply(&state, &tenant, &headers, body).await?;
    Ok(Json(mapping.to_es_json()))
}

/// `PUT /{index}/_mapping` (Elasticsearch): `{"acknowledged": true}`.
pub(crate) async fn es_put(
    State(state): State<Arc<AppState>>,
    UrlPath(index): UrlPath<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let answer = apply(&state, &index, &headers, body)
        .await
        .map(|_| json!({"acknowledged": true}).to_string());
    es_response(answer)
}

async fn apply(
    state: &Arc<AppState>,
    tenant: &str,
    headers: &HeaderMap,
    body: Bytes,
) -> Result<Mapping, ApiError> {
    let live = state.authorize(tenant, headers)?.live.clone();
    let text = std::str::from_utf8(&body)
        .map_err(|e| ApiError::bad_request(format!("mapping is not UTF-8: {e}")))?;
    let update = Mapping::from_json(text).map_err(|e| ApiError::bad_request(e.to_string()))?;
    blocking(move || {
        live.set_mapping(&update).map_err(|error| match error {
            // A mapped field asked to change: the caller's mistake.
            crate::live::LiveError::Catalog(quarry_store::CatalogError::Mapping(e)) => {
                ApiError::bad_request(e.to_string())
            }
            other => ApiError::internal(other),
        })
    })
    .await
}
