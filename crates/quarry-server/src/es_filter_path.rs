//! Elasticsearch's `filter_path` URL parameter, for every Elasticsearch endpoint at once: a
//! layer over the router rewrites the JSON answer of any response marked as Elasticsearch's
//! (`es_api::mark_elasticsearch`) when the request names one.
//!
//! `filter_path` is a comma-separated list of dotted paths. A path keeps what it names and
//! everything under it; `*` in a name matches any run of characters, a `**` name any number
//! of levels (none too); a path that starts with `-` removes what it names instead. With
//! both, a value is kept when an inclusive path names it or one of its parents and no
//! exclusive path does. Lists are transparent (`hits.hits._id` is each hit's `_id`). An
//! object or list that keeps nothing of an inclusive filter goes; the top object stays, empty
//! if need be (`{}`).

use crate::es_api::EsParams;
use crate::ApiError;
use axum::body::Body;
use axum::extract::Request;
use axum::http::header;
use axum::middleware::Next;
use axum::response::Response;
use quarry_store::mapping::glob_matches;
use serde_json::{Map, Value as JsonValue};

/// The URL parameter this layer answers, taken by every Elasticsearch endpoint.
pub(crate) const PARAM: &str = "filter_path";

/// A parsed `filter_path`: inclusive and exclusive paths, each a list of name patterns.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct FilterPath {
    includes: Vec<Vec<String>>,
    excludes: Vec<Vec<String>>,
}

impl FilterPath {
    /// Reads the parameter's value; empty paths are skipped.
    pub(crate) fn parse(text: &str) -> FilterPath {
        let mut filter = FilterPath::default();
        for path in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (list, path) = match path.strip_prefix('-') {
                Some(path) => (&mut filter.excludes, path),
                None => (&mut filter.includes, path),
            };
            list.push(path.split('.').map(str::to_owned).collect());
        }
        filter
    }

    /// `value` filtered.
    pub(crate) fn apply(&self, value: JsonValue) -> JsonValue {
        let mut path = Vec::new();
        let included = self.includes.is_empty();
        self.filter(value, &mut path, included)
            .unwrap_or_else(|| JsonValue::Object(Map::new()))
    }

    /// `value` at `path` filtered, `None` if nothing of it is kept; `included`: an ancestor
    /// (or the absence of inclusive paths) already includes it.
    fn filter(
        &self,
        value: JsonValue,
        path: &mut Vec<String>,
        included: bool,
    ) -> Option<JsonValue> {
        if self.excludes.iter().any(|p| matches(p, path)) {
            return None;
        }
        let included = included || self.includes.iter().any(|p| matches(p, path));
        match value {
            JsonValue::Object(object) => {
                let mut kept = Map::new();
                for (name, child) in object {
                    path.push(name);
                    let child = self.filter(child, path, included);
                    let name = path.pop().unwrap_or_default();
                    if let Some(child) = child {
                        kept.insert(name, child);
                    }
                }
                (included || !kept.is_empty()).then_some(JsonValue::Object(kept))
            }
            JsonValue::Array(items) => {
                let kept: Vec<JsonValue> = items
                    .into_iter()
                    .filter_map(|item| self.filter(item, path, included))
                    .collect();
                (included || !kept.is_empty()).then_some(JsonValue::Array(kept))
            }
            leaf => included.then_some(leaf),
        }
    }
}

/// Whether `pattern` names exactly `path`.
fn matches(pattern: &[String], path: &[String]) -> bool {
    match pattern.split_first() {
        None => path.is_empty(),
        Some((first, rest)) if first == "**" => {
            matches(rest, path) || (!path.is_empty() && matches(pattern, &path[1..]))
        }
        Some((first, rest)) => match path.split_first() {
            Some((name, below)) => glob_matches(first, name) && matches(rest, below),
            None => false,
        },
    }
}

/// The layer: an Elasticsearch answer to a request with `filter_path`, filtered. An answer
/// that is not JSON cannot be filtered: it becomes a 400 naming the parameter.
pub(crate) async fn layer(request: Request, next: Next) -> Response {
    let filter = EsParams::parse(request.uri().query())
        .ok()
        .and_then(|params| params.get(PARAM).map(FilterPath::parse));
    let response = next.run(request).await;
    let Some(filter) = filter else {
        return response;
    };
    if !response.headers().contains_key("x-elastic-product") {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, usize::MAX).await else {
        return crate::es_api::es_response(Err(ApiError::internal(
            "filter_path: the answer could not be read",
        )));
    };
    if bytes.is_empty() {
        return Response::from_parts(parts, Body::from(bytes));
    }
    let Ok(json) = serde_json::from_slice::<JsonValue>(&bytes) else {
        return crate::es_api::es_response(Err(ApiError::bad_request(
            "unsupported: [filter_path] on an answer that is not JSON",
        )));
    };
    let filtered = serde_json::to_vec(&filter.apply(json)).unwrap_or_default();
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, Body::from(filtered))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    /// Every leaf (a value that is not an object or list) with its path, lists transparent.
    fn leaves(value: &JsonValue, path: &mut Vec<String>, out: &mut Vec<(Vec<String>, String)>) {
        match value {
            JsonValue::Object(object) => {
                for (name, child) in object {
                    path.push(name.clone());
                    leaves(child, path, out);
                    path.pop();
                }
            }
            JsonValue::Array(items) => items.iter().for_each(|item| leaves(item, path, out)),
            leaf => out.push((path.clone(), leaf.to_string())),
        }
    }

    /// The leaves the model keeps: those a prefix of whose path an inclusive pattern names
    /// (any, without inclusive patterns) and none an exclusive one names.
    fn model(filter: &FilterPath, value: &JsonValue) -> Vec<(Vec<String>, String)> {
        let mut all = Vec::new();
        leaves(value, &mut Vec::new(), &mut all);
        let named = |patterns: &[Vec<String>], path: &[String]| {
            (0..=path.len()).any(|n| patterns.iter().any(|p| matches(p, &path[..n])))
        };
        all.into_iter()
            .filter(|(path, _)| {
                (filter.includes.is_empty() || named(&filter.includes, path))
                    && !named(&filter.excludes, path)
            })
            .collect()
    }

    #[test]
    fn elasticsearch_examples() {
        let answer = json!({
            "took": 3,
            "_shards": {"total": 1, "failed": 0},
            "hits": {"total": 2, "hits": [
                {"_index": "a", "_id": "1", "_source": {"name": "x", "properties": {"size": 1, "meta": {"foo": "bar"}}}},
                {"_index": "a", "_id": "2", "_source": {"name": "y"}},
            ]},
        });
        let cases = [
            ("took", json!({"took": 3})),
            ("_shards.*", json!({"_shards": {"total": 1, "failed": 0}})),
            (
                "hits.**._i*,**.total",
                json!({"_shards": {"total": 1}, "hits": {"total": 2, "hits": [
                    {"_index": "a", "_id": "1"}, {"_index": "a", "_id": "2"},
                ]}}),
            ),
            (
                "-**._source.properties,**._source",
                json!({"hits": {"hits": [
                    {"_source": {"name": "x"}}, {"_source": {"name": "y"}},
                ]}}),
            ),
            (
                "**.properties,-hits.hits._source.properties.meta",
                json!({"hits": {"hits": [{"_source": {"properties": {"size": 1}}}]}}),
            ),
            ("-*", json!({})),
            ("nothing.here", json!({})),
        ];
        for (filter, expected) in cases {
            assert_eq!(
                FilterPath::parse(filter).apply(answer.clone()),
                expected,
                "{filter}"
            );
        }
    }

    fn json_strategy() -> impl Strategy<Value = JsonValue> {
        let name = prop::sample::select(&["a", "b", "ab", "hits", "c"][..]);
        let leaf = prop_oneof![
            (0..5i64).prop_map(JsonValue::from),
            Just(JsonValue::from("v")),
        ];
        leaf.prop_recursive(4, 40, 4, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..3).prop_map(JsonValue::Array),
                prop::collection::btree_map(name.clone(), inner, 0..4).prop_map(|m| {
                    JsonValue::Object(m.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
                }),
            ]
        })
    }

    fn filter_strategy() -> impl Strategy<Value = String> {
        let segment = prop::sample::select(&["a", "b", "*", "**", "a*", "hits", "x"][..]);
        let path = (any::<bool>(), prop::collection::vec(segment, 1..4)).prop_map(
            |(exclude, segments)| {
                format!("{}{}", if exclude { "-" } else { "" }, segments.join("."))
            },
        );
        prop::collection::vec(path, 1..4).prop_map(|paths| paths.join(","))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// The filtered answer holds exactly the leaves the model keeps, in order.
        #[test]
        fn filtering_keeps_the_leaves_brute_force_keeps(
            value in json_strategy(),
            text in filter_strategy(),
        ) {
            let filter = FilterPath::parse(&text);
            let mut got = Vec::new();
            leaves(&filter.apply(value.clone()), &mut Vec::new(), &mut got);
            prop_assert_eq!(got, model(&filter, &value), "{}", text);
        }
    }
}
