//! `GET /api/v1/{tenant}/export`: every match of a query as NDJSON, one event a line, streamed
//! page by page (`EXPORT_PAGE` events) from one snapshot. The search API's `limit` is bounded
//! (`MAX_SEARCH_LIMIT`; issue 26: `limit=10000000` returned 662k hits in one 184 MB body and
//! took the server from 80 MB to 3.3 GB); an export of any size holds one page in memory, and
//! a client that reads slowly holds the next page back (the channel is two pages deep).
//!
//! Pages come from the snapshot taken when the request arrived, so an export never repeats or
//! misses an event while ingest, flushes and merges go on. A block known damaged before the
//! first line is named in the `X-Quarry-Partial` header; a block found damaged after the
//! stream began ends the stream without its final chunk, so the client sees an error, never a
//! silently shorter export.

use crate::{native_event_json, search_request, ApiError, AppState};
use axum::body::{Body, Bytes};
use axum::extract::{Path as UrlPath, RawQuery, State};
use axum::http::{header, HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};
use quarry_index::event::format_time;
use quarry_query::{SearchRequest, SearchResponse, Searcher, SortOrder, Warning};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// Events per page of an export: large enough that a page's fixed cost (a tail's search of
/// the newest blocks) is small per event, small enough that a page of big events stays a few
/// MB.
pub const EXPORT_PAGE: usize = 1_000;

pub(crate) async fn export(
    State(state): State<Arc<AppState>>,
    UrlPath(tenant): UrlPath<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let live = state.authorize(&tenant, &headers)?.live.clone();
    let params: Vec<(String, String)> =
        form_urlencoded::parse(query.unwrap_or_default().as_bytes())
            .into_owned()
            .collect();
    for (key, _) in &params {
        if !matches!(key.as_str(), "query" | "q" | "start" | "end" | "sort") {
            return Err(ApiError::bad_request(format!(
                "export: unknown parameter {key:?} (query, start, end, sort); an export has every match, in pages of its own"
            )));
        }
    }
    let mut request = search_request(&params)?;
    if !params.iter().any(|(key, _)| key == "sort") {
        // Newest first, as a tail reads.
        request.sort = SortOrder::TimeDesc;
    }
    if request.sort_field.is_none() && request.sort == SortOrder::Relevance {
        return Err(ApiError::bad_request(
            "export: sort=relevance has no cursor to page with; use time_desc, time_asc or FIELD:desc/asc",
        ));
    }
    request.limit = EXPORT_PAGE;
    let mut pages = match &state.root {
        Some(root) => Pages::Cluster {
            root: root.clone(),
            tenant,
            pin: None,
        },
        None => Pages::Local(live.published_snapshot()),
    };
    let first = pages.next(&state, request.clone()).await?;
    let partial: Vec<String> = left_out(&first);
    let (sender, receiver) = mpsc::channel::<Result<Bytes, std::io::Error>>(2);
    let known: std::collections::HashSet<String> = partial.iter().cloned().collect();
    let state = state.clone();
    tokio::spawn(async move {
        let mut page = first;
        loop {
            let full = page.hits.len() == EXPORT_PAGE;
            let next = next_page(&request, &page);
            if sender.send(Ok(lines(&page))).await.is_err() || !full {
                return;
            }
            let Some(next) = next else { return };
            page = match pages.next(&state, next).await {
                Ok(page) if left_out(&page).iter().any(|part| !known.contains(part)) => {
                    let parts = left_out(&page).join(", ");
                    tracing::error!(%parts, "export ended: a part was found damaged or unavailable while it streamed");
                    let _ = sender
                        .send(Err(std::io::Error::other(format!(
                            "left out while the export streamed: {parts}"
                        ))))
                        .await;
                    return;
                }
                Ok(page) => page,
                Err(error) => {
                    tracing::warn!(error = %error.message, "export ended by an error");
                    let _ = sender.send(Err(std::io::Error::other(error.message))).await;
                    return;
                }
            };
        }
    });
    let stream = futures_util::stream::unfold(receiver, |mut receiver| async move {
        receiver.recv().await.map(|item| (item, receiver))
    });
    let mut response = Body::from_stream(stream).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/x-ndjson"),
    );
    if !partial.is_empty() {
        if let Ok(value) = HeaderValue::from_str(&partial.join(", ")) {
            response.headers_mut().insert("x-quarry-partial", value);
        }
    }
    Ok(response)
}

/// Where an export's pages come from: one snapshot of this node's, or of the cluster's
/// (`--peers`: the first page's snapshots, pinned, read by every later page).
enum Pages {
    Local(Arc<Searcher>),
    Cluster {
        root: Arc<quarry_cluster::Root>,
        tenant: String,
        pin: Option<quarry_cluster::root::Pin>,
    },
}

impl Pages {
    async fn next(
        &mut self,
        state: &AppState,
        request: SearchRequest,
    ) -> Result<SearchResponse, ApiError> {
        match self {
            Pages::Local(snapshot) => {
                let snapshot = snapshot.clone();
                state
                    .search(move || snapshot.execute(&request).map_err(ApiError::from_query))
                    .await
            }
            Pages::Cluster { root, tenant, pin } => {
                let source = quarry_query::leaf::QuerySource::Text(request.query.clone());
                let (page, searched) = crate::cluster_page(
                    root,
                    tenant,
                    source,
                    &request,
                    pin.as_ref(),
                    Duration::ZERO,
                )
                .await?;
                if pin.is_none() {
                    *pin = searched;
                }
                Ok(page)
            }
        }
    }
}

/// The same request after the last hit of `page` (None when it has none).
fn next_page(request: &SearchRequest, page: &SearchResponse) -> Option<SearchRequest> {
    let last = page.hits.last()?;
    let mut next = request.clone();
    if next.sort_field.is_some() {
        next.sort_after = Some(last.sort_cursor.clone()?);
    } else {
        next.after = Some(last.cursor?);
    }
    Some(next)
}

/// A page's events as NDJSON lines: each event's fields and its `_time` (RFC 3339).
fn lines(page: &SearchResponse) -> Bytes {
    let mut out = Vec::with_capacity(page.hits.len() * 256);
    for hit in &page.hits {
        let mut event = native_event_json(&hit.event);
        event.insert("_time".to_owned(), format_time(hit.time).into());
        // Writing a JSON value into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut out, &event);
        out.push(b'\n');
    }
    Bytes::from(out)
}

/// What `page` lacks: blocks left out (damaged, or unreadable now) and nodes that did not
/// answer, each named.
fn left_out(page: &SearchResponse) -> Vec<String> {
    page.warnings
        .iter()
        .filter_map(|warning| match warning {
            Warning::DamagedBlock { path, .. } | Warning::BlockUnavailable { path, .. } => {
                Some(path.display().to_string())
            }
            Warning::LeafUnavailable { leaf, .. } => Some(format!("node {leaf}")),
            _ => None,
        })
        .collect()
}
