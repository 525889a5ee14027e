//! The HTTP side: axum routes over the [`Engine`]. Indexing and searching block (tantivy is
//! synchronous), so each request's work runs on tokio's blocking pool, never on the threads
//! that serve connections.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::json;

use crate::bulk::{self, Item};
use crate::engine::Engine;

/// Bulk bodies up to this size (axum's default limit is 2 MB; Elasticsearch's
/// `http.max_content_length` is 100 MB).
const MAX_BODY_BYTES: usize = 100 << 20;

pub async fn serve(
    engine: Arc<Engine>,
    listen: SocketAddr,
    on_listening: impl FnOnce(SocketAddr),
) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .with_context(|| format!("listening on {listen}"))?;
    on_listening(listener.local_addr()?);
    let app = Router::new()
        .route("/_bulk", post(bulk_handler))
        .route("/search", get(search_handler))
        .route("/health", get(|| async { Json(json!({"status": "ok"})) }))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(engine);
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown_signal())
        .await
        .context("serving")
}

async fn shutdown_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let mut terminate = signal(SignalKind::terminate()).expect("installing a SIGTERM handler");
    tokio::select! {
        _ = terminate.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
}

fn failure(status: StatusCode, error: impl std::fmt::Display) -> Response {
    (status, Json(json!({"error": error.to_string()}))).into_response()
}

/// Bulk requests answered and items acknowledged, for the items' `_id` and `_seq_no`.
static REQUESTS: AtomicU64 = AtomicU64::new(0);
static SEQ_NOS: AtomicU64 = AtomicU64::new(0);
/// When the server started (ns since the epoch), the first part of the ids it gives.
static STARTED: std::sync::LazyLock<u128> = std::sync::LazyLock::new(|| {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
});

async fn bulk_handler(State(engine): State<Arc<Engine>>, body: Bytes) -> Response {
    let started = Instant::now();
    let outcome = tokio::task::spawn_blocking(move || {
        let items = bulk::parse(&body, &engine.fields);
        let mut statuses = Vec::with_capacity(items.len());
        let mut documents = Vec::with_capacity(items.len());
        for item in items {
            match item {
                Item::Document(document) => {
                    documents.push(document);
                    statuses.push(Ok(()));
                }
                Item::Failed(reason) => statuses.push(Err(reason)),
            }
        }
        engine.add_durably(documents).map(|()| statuses)
    })
    .await;
    match outcome {
        Ok(Ok(statuses)) => {
            // Elasticsearch's item metadata: an id per item, sequence numbers in order.
            let request = REQUESTS.fetch_add(1, Ordering::Relaxed);
            let first_seq_no = SEQ_NOS.fetch_add(statuses.len() as u64, Ordering::Relaxed);
            let id_prefix = format!("{:x}-{request:x}", *STARTED);
            (
                [(header::CONTENT_TYPE, "application/json")],
                bulk::reply(
                    &statuses,
                    started.elapsed().as_millis(),
                    &id_prefix,
                    first_seq_no,
                ),
            )
                .into_response()
        }
        Ok(Err(error)) => failure(StatusCode::INTERNAL_SERVER_ERROR, format!("{error:#}")),
        Err(error) => failure(StatusCode::INTERNAL_SERVER_ERROR, error),
    }
}

#[derive(Deserialize)]
struct SearchParams {
    q: String,
}

/// `q` is `marker:VALUE`, the only query the benchmark sends.
async fn search_handler(
    State(engine): State<Arc<Engine>>,
    Query(params): Query<SearchParams>,
) -> Response {
    let Some(value) = params.q.strip_prefix("marker:") else {
        return failure(
            StatusCode::BAD_REQUEST,
            "only marker:VALUE queries are supported",
        );
    };
    let value = value.to_owned();
    match tokio::task::spawn_blocking(move || engine.count_marker(&value)).await {
        Ok(Ok(count)) => Json(json!({ "count": count })).into_response(),
        Ok(Err(error)) => failure(StatusCode::INTERNAL_SERVER_ERROR, format!("{error:#}")),
        Err(error) => failure(StatusCode::INTERNAL_SERVER_ERROR, error),
    }
}
