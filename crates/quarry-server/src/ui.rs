//! The web UI (issue 15): search, histogram, table, fields and live tail in the browser, served
//! by `quarry serve` itself.
//!
//! The page is built from `ui/` (TypeScript, Vite) into `ui/dist`, which is committed and
//! embedded at compile time by `build.rs`: `index.html` answers `GET /` for browsers, its
//! content-hashed assets `GET /ui/assets/NAME`. `GET /` keeps answering Elasticsearch's info
//! JSON to everything that does not ask for HTML (shippers and the official clients check it),
//! and `HEAD /` always does.
//!
//! Caching: an asset's name changes with its contents, so assets are cached for a year and
//! marked immutable; `index.html` (which names them) is `no-cache`, so a new build is seen on
//! the next load. Text assets are gzipped once, on first request, when the client takes gzip.

use axum::extract::Path as UrlPath;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use std::io::Write as _;
use std::sync::OnceLock;

include!(concat!(env!("OUT_DIR"), "/ui_assets.rs"));

/// Where Vite puts the page's assets (`base: '/ui/'` in `ui/vite.config.ts`).
const INDEX: &str = "index.html";

/// `GET /`: the page for a browser (its `Accept` names `text/html`), else Elasticsearch's info.
pub(crate) async fn root(headers: HeaderMap) -> Response {
    let wants_html = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|accept| accept.contains("text/html"));
    let mut response = if wants_html {
        index(headers).await
    } else {
        crate::es_api::es_info().await
    };
    // One URL, two representations: caches must key on Accept.
    response.headers_mut().insert(
        header::VARY,
        HeaderValue::from_static("Accept, Accept-Encoding"),
    );
    response
}

/// `GET /ui/`: the page, whatever the `Accept` header says.
pub(crate) async fn index(headers: HeaderMap) -> Response {
    match find(INDEX) {
        Some(at) => serve(at, &headers, "no-cache"),
        None => (
            StatusCode::NOT_FOUND,
            "the web UI is not built into this binary (cd ui && npm ci && npm run build, then cargo build)",
        )
            .into_response(),
    }
}

/// `GET /ui/assets/{name}`.
pub(crate) async fn asset(UrlPath(name): UrlPath<String>, headers: HeaderMap) -> Response {
    match find(&format!("assets/{name}")) {
        Some(at) => serve(at, &headers, "public, max-age=31536000, immutable"),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

fn find(path: &str) -> Option<usize> {
    ASSETS.iter().position(|(name, _)| *name == path)
}

fn content_type(path: &str) -> &'static str {
    match path.rsplit('.').next() {
        Some("html") => "text/html; charset=utf-8",
        Some("js" | "mjs") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("json") => "application/json",
        Some("woff2") => "font/woff2",
        _ => "application/octet-stream",
    }
}

fn serve(at: usize, headers: &HeaderMap, cache_control: &'static str) -> Response {
    let (path, bytes) = ASSETS[at];
    let kind = content_type(path);
    let takes_gzip = headers
        .get(header::ACCEPT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|e| e.trim().starts_with("gzip")));
    let gzipped = if takes_gzip { gzipped(at) } else { None };
    let mut response = match gzipped {
        Some(body) => {
            let mut response = body.into_response();
            response
                .headers_mut()
                .insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
            response
        }
        None => bytes.into_response(),
    };
    let out = response.headers_mut();
    out.insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
    out.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static(cache_control),
    );
    out.insert(header::VARY, HeaderValue::from_static("Accept-Encoding"));
    out.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    if path == INDEX {
        // The page loads only its own scripts; styles may be inline (uPlot and the table set
        // them), images may be data: URLs (the icon).
        out.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(
                "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; base-uri 'none'; frame-ancestors 'none'",
            ),
        );
    }
    response
}

/// The gzipped bytes of text asset `at`, made on first use; None for formats already compressed.
fn gzipped(at: usize) -> Option<&'static [u8]> {
    static GZIPPED: OnceLock<Vec<OnceLock<Option<Vec<u8>>>>> = OnceLock::new();
    let all = GZIPPED.get_or_init(|| ASSETS.iter().map(|_| OnceLock::new()).collect());
    all[at]
        .get_or_init(|| {
            let (path, bytes) = ASSETS[at];
            let text = matches!(
                path.rsplit('.').next(),
                Some("html" | "js" | "mjs" | "css" | "svg" | "json")
            );
            if !text {
                return None;
            }
            let mut encoder =
                flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
            // Writing to a Vec cannot fail.
            encoder.write_all(bytes).ok()?;
            encoder.finish().ok()
        })
        .as_deref()
}
