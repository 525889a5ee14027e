//! What every Elasticsearch-compatible endpoint shares: errors and answers in Elasticsearch's
//! shape (with the product header the official clients check), the `{index}` of a path, `GET /`,
//! and URL parameters read strictly: a parameter an endpoint does not know is refused with a 400
//! that names it, never ignored (issue 27), and one that is not UTF-8 is refused too.

use crate::es_hits::HitView;
use crate::ApiError;
use axum::extract::Path as UrlPath;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Map, Value as JsonValue};

/// An error in Elasticsearch's shape: `{"error": {"type", "reason"}, "status"}`.
pub(crate) fn es_error(error: ApiError) -> (StatusCode, Json<JsonValue>) {
    let kind = error.es_kind.unwrap_or(match error.status {
        StatusCode::NOT_FOUND => "index_not_found_exception",
        StatusCode::UNAUTHORIZED => "security_exception",
        StatusCode::FORBIDDEN => "security_exception",
        StatusCode::CONFLICT => "resource_already_exists_exception",
        StatusCode::PAYLOAD_TOO_LARGE => "content_too_long_exception",
        StatusCode::TOO_MANY_REQUESTS => "es_rejected_execution_exception",
        s if s.is_client_error() => "illegal_argument_exception",
        _ => "exception",
    });
    let mut cause = json!({"type": kind, "reason": error.message});
    if let Some(index) = &error.index {
        cause["index"] = index.as_str().into();
        cause["resource.type"] = "index_or_alias".into();
        cause["resource.id"] = index.as_str().into();
        cause["index_uuid"] = "_na_".into();
    }
    let mut top = cause.clone();
    top["root_cause"] = json!([cause]);
    (
        error.status,
        Json(json!({"error": top, "status": error.status.as_u16()})),
    )
}

/// An Elasticsearch API's answer: its JSON text, or its error in Elasticsearch's shape, with
/// the product header the official clients check.
pub(crate) fn es_response(answer: Result<String, ApiError>) -> Response {
    let mut response = match answer {
        Ok(text) => ([(header::CONTENT_TYPE, "application/json")], text).into_response(),
        Err(error) => es_error(error).into_response(),
    };
    mark_elasticsearch(&mut response);
    response
}

/// The header the official clients check before they trust an answer.
pub(crate) fn mark_elasticsearch(response: &mut Response) {
    response.headers_mut().insert(
        "x-elastic-product",
        HeaderValue::from_static("Elasticsearch"),
    );
}

/// The `{index}` of an Elasticsearch path, or the `default` tenant's for a path without one.
pub(crate) fn index_or_default(path_index: Option<UrlPath<String>>) -> String {
    path_index
        .map(|UrlPath(index)| index)
        .unwrap_or_else(|| crate::DEFAULT_TENANT.to_owned())
}

/// The index expression of a path that reads indices: without one, every index the key may
/// read (`_all`), as in Elasticsearch (`GET /_search`, `GET /_mapping`).
pub(crate) fn all_or(path_index: Option<UrlPath<String>>) -> String {
    path_index.map_or_else(|| "_all".to_owned(), |UrlPath(index)| index)
}

/// `GET /` in Elasticsearch's shape, for shippers that check the version before sending.
pub(crate) async fn es_info() -> Response {
    let mut response = Json(json!({
        "name": "quarry",
        "cluster_name": "quarry",
        "cluster_uuid": "quarry",
        "version": {
            "number": "8.11.0",
            "build_flavor": "default",
            "build_type": "quarry",
            "lucene_version": "9.8.0",
            "minimum_wire_compatibility_version": "7.17.0",
            "minimum_index_compatibility_version": "7.0.0",
        },
        "tagline": "You Know, for Search",
        "quarry_version": env!("CARGO_PKG_VERSION"),
    }))
    .into_response();
    mark_elasticsearch(&mut response);
    response
}

/// A request body as a JSON object: an empty body is an empty object; `what` names the body
/// in the error when it is another JSON value.
pub(crate) fn body_object(body: &[u8], what: &str) -> Result<Map<String, JsonValue>, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Map::new());
    }
    match serde_json::from_slice(body) {
        Ok(JsonValue::Object(object)) => Ok(object),
        Ok(_) => Err(ApiError::bad_request(format!(
            "{what} must be a JSON object"
        ))),
        Err(e) => Err(ApiError::bad_request(format!(
            "request body is not JSON: {e}"
        ))),
    }
}

/// Parameters every Elasticsearch endpoint takes that change nothing in Quarry's answer:
/// `pretty` and `human` are formatting (the JSON is the same), `error_trace` adds a Java
/// stack trace Quarry does not have, and the timeouts of a cluster's master bound a wait a
/// single node never has.
pub const NO_OP_PARAMS: &[&str] = &[
    "pretty",
    "human",
    "error_trace",
    "master_timeout",
    "cluster_manager_timeout",
];

/// What closing and opening an index take alike.
const OPEN_CLOSE_PARAMS: &[&str] = &[
    "ignore_unavailable",
    "allow_no_indices",
    "expand_wildcards",
    "wait_for_active_shards",
    "timeout",
    "master_timeout",
    "cluster_manager_timeout",
];

/// Every Elasticsearch API's URL parameters besides those every endpoint takes
/// (`NO_OP_PARAMS`, `filter_path`), by the name its errors use. Each is honoured, or a no-op
/// or read only to be refused as `crates/quarry/tests/es_options/` walks them and says why;
/// any other parameter is a 400 naming it (`EsParams::check`). The same few recur: a
/// tenant's single index has no shards to wait for or route to (`wait_for_active_shards`,
/// `routing`, `preference`, `local`), and `ignore_unavailable`, `allow_no_indices` and
/// `expand_wildcards` pick the indices an expression names.
pub const API_PARAMS: &[(&str, &[&str])] = &[
    ("_search", crate::es_search::SEARCH_PARAMS),
    ("_count", crate::es_search::COUNT_PARAMS),
    ("_msearch", crate::es_search::MSEARCH_PARAMS),
    (
        "bulk",
        &[
            "durability",
            "refresh",
            "timeout",
            "routing",
            "wait_for_active_shards",
            "require_alias",
            "require_data_stream",
            "index",
            "_source",
            "_source_includes",
            "_source_excludes",
        ],
    ),
    (
        "write a document",
        &[
            "refresh",
            "timeout",
            "routing",
            "wait_for_active_shards",
            "require_alias",
            "op_type",
            "if_seq_no",
            "if_primary_term",
            "version",
            "version_type",
        ],
    ),
    (
        "update a document",
        &[
            "refresh",
            "timeout",
            "routing",
            "wait_for_active_shards",
            "require_alias",
            "if_seq_no",
            "if_primary_term",
            "_source",
            "_source_includes",
            "_source_excludes",
        ],
    ),
    (
        "get a document",
        &joined::<12>(
            &[
                "realtime",
                "refresh",
                "routing",
                "preference",
                "version_type",
            ],
            HitView::PARAMS,
        ),
    ),
    (
        "multi get",
        &joined::<11>(
            &["realtime", "refresh", "routing", "preference"],
            HitView::PARAMS,
        ),
    ),
    ("scroll", &["scroll", "scroll_id", "rest_total_hits_as_int"]),
    ("clear scroll", &["scroll_id"]),
    (
        "open point in time",
        &[
            "keep_alive",
            "ignore_unavailable",
            "expand_wildcards",
            "preference",
        ],
    ),
    (
        "field_caps",
        &[
            "fields",
            "ignore_unavailable",
            "allow_no_indices",
            "expand_wildcards",
            "include_unmapped",
        ],
    ),
    (
        "create index",
        &["wait_for_active_shards", "timeout", "include_type_name"],
    ),
    (
        "update settings",
        &[
            "ignore_unavailable",
            "allow_no_indices",
            "expand_wildcards",
            "flat_settings",
            "preserve_existing",
            "timeout",
            "master_timeout",
            "cluster_manager_timeout",
        ],
    ),
    (
        "delete index",
        &[
            "ignore_unavailable",
            "allow_no_indices",
            "expand_wildcards",
            "timeout",
        ],
    ),
    (
        "index exists",
        &[
            "ignore_unavailable",
            "allow_no_indices",
            "expand_wildcards",
            "local",
            "flat_settings",
            "include_defaults",
        ],
    ),
    (
        "get index",
        &[
            "ignore_unavailable",
            "allow_no_indices",
            "expand_wildcards",
            "local",
            "include_defaults",
        ],
    ),
    (
        "get settings",
        &[
            "ignore_unavailable",
            "allow_no_indices",
            "expand_wildcards",
            "local",
            "include_defaults",
            "flat_settings",
            "master_timeout",
            "cluster_manager_timeout",
        ],
    ),
    (
        "get mapping",
        &[
            "ignore_unavailable",
            "allow_no_indices",
            "expand_wildcards",
            "local",
        ],
    ),
    ("close index", OPEN_CLOSE_PARAMS),
    ("open index", OPEN_CLOSE_PARAMS),
    (
        "refresh",
        &["ignore_unavailable", "allow_no_indices", "expand_wildcards"],
    ),
    (
        "cluster health",
        &[
            "wait_for_status",
            "wait_for_nodes",
            "wait_for_events",
            "wait_for_active_shards",
            "wait_for_no_relocating_shards",
            "wait_for_no_initializing_shards",
            "timeout",
            "local",
            "level",
            "expand_wildcards",
        ],
    ),
    (
        "cat indices",
        &["format", "v", "h", "expand_wildcards", "local"],
    ),
    ("put alias", &["timeout"]),
    ("delete alias", &["timeout"]),
    ("update aliases", &["timeout"]),
    (
        "get alias",
        &[
            "ignore_unavailable",
            "allow_no_indices",
            "expand_wildcards",
            "local",
        ],
    ),
];

/// `a` then `b` as one list of `N` names, for a table built from others.
pub(crate) const fn joined<const N: usize>(
    a: &[&'static str],
    b: &[&'static str],
) -> [&'static str; N] {
    assert!(a.len() + b.len() == N, "N is the count of both lists");
    let mut all = [""; N];
    let mut i = 0;
    while i < N {
        all[i] = if i < a.len() { a[i] } else { b[i - a.len()] };
        i += 1;
    }
    all
}

/// The URL parameters API `api` takes (`API_PARAMS`); none for a name not there.
pub(crate) fn params_of(api: &str) -> &'static [&'static str] {
    API_PARAMS
        .iter()
        .find(|(name, _)| *name == api)
        .map_or(&[], |(_, params)| *params)
}

/// A request's URL parameters, percent-decoded, in order.
#[derive(Debug, Default, Clone)]
pub(crate) struct EsParams {
    pairs: Vec<(String, String)>,
}

impl EsParams {
    /// These parameters and `name=value` (over an earlier value of `name`).
    pub(crate) fn with(mut self, name: &str, value: String) -> EsParams {
        self.pairs.push((name.to_owned(), value));
        self
    }

    /// These parameters less `name`.
    pub(crate) fn without(&self, name: &str) -> EsParams {
        EsParams {
            pairs: self
                .pairs
                .iter()
                .filter(|(key, _)| key != name)
                .cloned()
                .collect(),
        }
    }

    /// Reads a query string; a name or value that is not UTF-8 once decoded is a 400 naming it.
    pub(crate) fn parse(query: Option<&str>) -> Result<EsParams, ApiError> {
        let mut pairs = Vec::new();
        for part in query.unwrap_or_default().split('&') {
            if part.is_empty() {
                continue;
            }
            let (name, value) = part.split_once('=').unwrap_or((part, ""));
            let name = decode(name).map_err(|_| {
                ApiError::bad_request(format!("a URL parameter's name is not UTF-8: {name:?}"))
            })?;
            let value = decode(value).map_err(|_| {
                ApiError::bad_request(format!("URL parameter {name:?} is not UTF-8"))
            })?;
            pairs.push((name, value));
        }
        Ok(EsParams { pairs })
    }

    /// 400 naming the first parameter that API `api` does not take (`API_PARAMS`), nor every
    /// endpoint (`NO_OP_PARAMS`, and `filter_path`, which a layer over the router answers:
    /// es_filter_path.rs).
    pub(crate) fn check(&self, api: &str) -> Result<(), ApiError> {
        let known = params_of(api);
        match self.pairs.iter().find(|(name, _)| {
            !known.contains(&name.as_str())
                && !NO_OP_PARAMS.contains(&name.as_str())
                && name != crate::es_filter_path::PARAM
        }) {
            Some((name, _)) => Err(ApiError::bad_request(format!(
                "unsupported: {api} URL parameter [{name}] (Quarry takes: {})",
                known.join(", ")
            ))),
            None => Ok(()),
        }
    }

    /// The last value given for `name`.
    pub(crate) fn get(&self, name: &str) -> Option<&str> {
        self.pairs
            .iter()
            .rev()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }

    /// A boolean parameter: absent is `default`; present with no value, `true` or `false`.
    pub(crate) fn flag(&self, name: &str, default: bool) -> Result<bool, ApiError> {
        match self.get(name) {
            None => Ok(default),
            Some("" | "true") => Ok(true),
            Some("false") => Ok(false),
            Some(other) => Err(ApiError::bad_request(format!(
                "URL parameter [{name}]: expected true or false, not {other:?}"
            ))),
        }
    }
}

/// Percent-decodes a part of a query string (`+` is a space).
fn decode(text: &str) -> Result<String, std::string::FromUtf8Error> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        let hex = |i: usize| bytes.get(i).and_then(|&b| (b as char).to_digit(16));
        match bytes[at] {
            b'+' => out.push(b' '),
            b'%' => match (hex(at + 1), hex(at + 2)) {
                (Some(high), Some(low)) => {
                    out.push((high * 16 + low) as u8);
                    at += 2;
                }
                _ => out.push(b'%'),
            },
            byte => out.push(byte),
        }
        at += 1;
    }
    String::from_utf8(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_decode_and_unknown_or_invalid_ones_are_refused() {
        let params = EsParams::parse(Some("q=level%3Aerror+x&size=5&pretty&q=%C3%A9")).unwrap();
        assert_eq!(params.get("q"), Some("é"));
        assert_eq!(params.get("size"), Some("5"));
        assert_eq!(params.pairs[0].1, "level:error x");
        assert!(params.flag("pretty", false).unwrap());
        assert!(params.check("_search").is_ok());
        let refused = params.check("_count").unwrap_err();
        assert!(refused.message.contains("[size]"), "{}", refused.message);
        let invalid = EsParams::parse(Some("q=%FF%FE")).unwrap_err();
        assert_eq!(invalid.status, StatusCode::BAD_REQUEST);
        assert!(invalid.message.contains("\"q\""), "{}", invalid.message);
        // A lone % stays itself.
        assert_eq!(
            EsParams::parse(Some("q=100%")).unwrap().get("q"),
            Some("100%")
        );
        assert!(EsParams::parse(Some("x=maybe"))
            .unwrap()
            .flag("x", false)
            .is_err());
    }
}
