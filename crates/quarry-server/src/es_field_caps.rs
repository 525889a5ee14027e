//! Elasticsearch's field capabilities: `GET|POST /_field_caps` and `/{index}/_field_caps`,
//! what clients (Kibana's index patterns, field pickers) read to learn each field's type
//! and whether it can be searched and aggregated, merged over the indices an expression
//! names.
//!
//! Each index's fields are its mapping as `GET /{index}/_mapping` shows it (`mapping_of`):
//! mapped fields as mapped, the others as dynamic mapping types them, objects as `object`.
//! A field is searchable unless mapped `index: false` (or kept only: `binary`, objects), and
//! aggregatable when it has doc values and is not `text` (as Elasticsearch says; Quarry can
//! count whole text values, but a client offering them would differ from Elasticsearch).
//! `index_filter` (a query) keeps only the indices where it matches a document.

use crate::es_api::{body_object, es_response, EsParams};
use crate::es_indices;
use crate::{ApiError, AppState};
use axum::body::Bytes;
use axum::extract::{Path as UrlPath, RawQuery, State};
use axum::http::HeaderMap;
use axum::response::Response;
use quarry_store::mapping::glob_matches;
use serde_json::{json, Map, Value as JsonValue};
use std::collections::BTreeMap;
use std::sync::Arc;

pub(crate) async fn field_caps(
    State(state): State<Arc<AppState>>,
    index: Option<UrlPath<String>>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let answer = async {
        let params = EsParams::parse(query.as_deref())?;
        params.check("field_caps")?;
        let mut patterns: Vec<String> = params
            .get("fields")
            .map(|f| f.split(',').map(str::to_owned).collect())
            .unwrap_or_default();
        let mut filter = None;
        if !body.is_empty() {
            for (key, value) in body_object(&body, "the field_caps body")? {
                match key.as_str() {
                    "fields" => patterns.extend(string_list(&value)?),
                    "index_filter" => {
                        let now = quarry_query::time::now_nanos();
                        filter = Some(
                            quarry_query::dsl::compile(&value, "index_filter", now)
                                .map_err(crate::es_search::dsl_error)?,
                        );
                    }
                    "runtime_mappings" if value.as_object().is_some_and(Map::is_empty) => {}
                    other => {
                        return Err(ApiError::bad_request(format!(
                            "unsupported: [{other}] in the field_caps body (it takes fields \
                             and index_filter)"
                        )))
                    }
                }
            }
        }
        if patterns.is_empty() {
            return Err(ApiError::bad_request(
                "specify a field list with the [fields] parameter",
            ));
        }
        let include_unmapped = params.flag("include_unmapped", false)?;
        state.require_some_key(&headers)?;
        let expression = crate::es_api::all_or(index);
        let missing = es_indices::missing_rule(&params)?;
        let mut indices = es_indices::resolve(&state, &expression, &headers, missing)?;
        // `index_filter`: only the indices where it matches some document (Elasticsearch
        // leaves out those it can tell match none; Quarry counts, so it tells exactly).
        if let Some(filter) = filter {
            let mut kept = Vec::new();
            for (name, tenant) in indices {
                let live = tenant.live.clone();
                let filter = filter.clone();
                let matches = state
                    .search(move || {
                        let searcher = live.published_snapshot();
                        let query = searcher.plan(&filter).map_err(ApiError::from_query)?;
                        Ok(searcher.count(&query).map_err(ApiError::from_query)? > 0)
                    })
                    .await?;
                if matches {
                    kept.push((name, tenant));
                }
            }
            indices = kept;
        }
        let mut per_index: Vec<(String, BTreeMap<String, Capability>)> = Vec::new();
        for (name, tenant) in &indices {
            let mapping = crate::es_search::mapping_of(&state, tenant).await?;
            let mut fields = BTreeMap::new();
            flatten(&mapping["properties"], "", &mut fields);
            per_index.push((name.clone(), fields));
        }
        let names: Vec<String> = indices.iter().map(|(name, _)| name.clone()).collect();
        let fields = merge(&per_index, &patterns, include_unmapped);
        Ok(json!({"indices": names, "fields": fields}).to_string())
    }
    .await;
    es_response(answer)
}

fn string_list(value: &JsonValue) -> Result<Vec<String>, ApiError> {
    match value {
        JsonValue::String(one) => Ok(one.split(',').map(str::to_owned).collect()),
        JsonValue::Array(items) => items
            .iter()
            .map(|item| {
                item.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| ApiError::bad_request("fields: expected field names"))
            })
            .collect(),
        _ => Err(ApiError::bad_request("fields: expected field names")),
    }
}

/// One field's capabilities in one index.
#[derive(Clone, Debug, PartialEq)]
struct Capability {
    ty: String,
    searchable: bool,
    aggregatable: bool,
    /// The mapping's `meta` of the field.
    meta: BTreeMap<String, String>,
}

/// The fields of a mapping's `properties`, by dotted name; objects too, and `fields`
/// sub-fields (`host.keyword`).
fn flatten(properties: &JsonValue, prefix: &str, out: &mut BTreeMap<String, Capability>) {
    let Some(properties) = properties.as_object() else {
        return;
    };
    for (name, field) in properties {
        let full = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}.{name}")
        };
        if let Some(inner) = field.get("properties") {
            // `object`, or `nested` as mapped.
            let ty = field.get("type").and_then(JsonValue::as_str);
            out.insert(
                full.clone(),
                Capability {
                    ty: ty.unwrap_or("object").into(),
                    searchable: false,
                    aggregatable: false,
                    meta: BTreeMap::new(),
                },
            );
            flatten(inner, &full, out);
            continue;
        }
        let ty = field["type"].as_str().unwrap_or("object").to_owned();
        let indexed = field.get("index") != Some(&JsonValue::Bool(false));
        let doc_values = field.get("doc_values") != Some(&JsonValue::Bool(false));
        let kept_only = matches!(ty.as_str(), "binary" | "object");
        out.insert(
            full.clone(),
            Capability {
                searchable: indexed && !kept_only,
                aggregatable: doc_values && !kept_only && ty != "text",
                ty,
                meta: field
                    .get("meta")
                    .and_then(JsonValue::as_object)
                    .map(|meta| {
                        meta.iter()
                            .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                            .collect()
                    })
                    .unwrap_or_default(),
            },
        );
        if let Some(subfields) = field.get("fields").and_then(JsonValue::as_object) {
            for (sub, definition) in subfields {
                let ty = definition["type"].as_str().unwrap_or("keyword").to_owned();
                out.insert(
                    format!("{full}.{sub}"),
                    Capability {
                        searchable: true,
                        aggregatable: ty != "text",
                        ty,
                        meta: BTreeMap::new(),
                    },
                );
            }
        }
    }
}

/// Elasticsearch's merged answer: per field and type, whether it is searchable and
/// aggregatable in every index that has it, the indices of each type when a field has
/// several, those where it is not searchable or aggregatable when they differ, and with
/// `include_unmapped` an `unmapped` type for the indices without it.
fn merge(
    per_index: &[(String, BTreeMap<String, Capability>)],
    patterns: &[String],
    include_unmapped: bool,
) -> Map<String, JsonValue> {
    let wanted = |name: &str| {
        patterns
            .iter()
            .any(|p| glob_matches(p.trim(), name) || p.trim() == name)
    };
    let mut names: Vec<&String> = per_index
        .iter()
        .flat_map(|(_, fields)| fields.keys())
        .filter(|name| wanted(name))
        .collect();
    names.sort();
    names.dedup();
    let mut out = Map::new();
    for name in names {
        let mut by_type: BTreeMap<&str, Vec<(&str, &Capability)>> = BTreeMap::new();
        let mut unmapped = Vec::new();
        for (index, fields) in per_index {
            match fields.get(name) {
                Some(capability) => by_type
                    .entry(capability.ty.as_str())
                    .or_default()
                    .push((index.as_str(), capability)),
                None => unmapped.push(index.as_str()),
            }
        }
        let several = by_type.len() > 1 || (include_unmapped && !unmapped.is_empty());
        let mut types = Map::new();
        for (ty, found) in &by_type {
            let searchable = found.iter().all(|(_, c)| c.searchable);
            let aggregatable = found.iter().all(|(_, c)| c.aggregatable);
            let mut entry = json!({
                "type": ty,
                "searchable": searchable,
                "aggregatable": aggregatable,
            });
            if several {
                entry["indices"] = found.iter().map(|(i, _)| *i).collect::<Vec<_>>().into();
            }
            // Each `meta` key with the values the indices give it.
            let mut meta: BTreeMap<&str, std::collections::BTreeSet<&str>> = BTreeMap::new();
            for (_, capability) in found {
                for (key, value) in &capability.meta {
                    meta.entry(key).or_default().insert(value);
                }
            }
            if !meta.is_empty() {
                entry["meta"] = json!(meta);
            }
            let lacking = |keep: fn(&Capability) -> bool| -> Vec<&str> {
                found
                    .iter()
                    .filter(|(_, c)| !keep(c))
                    .map(|(i, _)| *i)
                    .collect()
            };
            if !searchable && found.iter().any(|(_, c)| c.searchable) {
                entry["non_searchable_indices"] = lacking(|c| c.searchable).into();
            }
            if !aggregatable && found.iter().any(|(_, c)| c.aggregatable) {
                entry["non_aggregatable_indices"] = lacking(|c| c.aggregatable).into();
            }
            types.insert((*ty).to_owned(), entry);
        }
        if include_unmapped && !unmapped.is_empty() {
            types.insert(
                "unmapped".into(),
                json!({"type": "unmapped", "searchable": false, "aggregatable": false,
                       "indices": unmapped}),
            );
        }
        out.insert(name.clone(), JsonValue::Object(types));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn capability(ty: &str, searchable: bool, aggregatable: bool) -> Capability {
        Capability {
            ty: ty.into(),
            searchable,
            aggregatable,
            meta: BTreeMap::new(),
        }
    }

    #[test]
    fn mappings_flatten_to_dotted_fields_with_their_capabilities() {
        let mapping = json!({
            "text": {"type": "text", "fields": {"keyword": {"type": "keyword"}}},
            "n": {"type": "long", "doc_values": false},
            "hidden": {"type": "keyword", "index": false},
            "blob": {"type": "binary"},
            "o": {"properties": {"x": {"type": "double"}}},
        });
        let mut fields = BTreeMap::new();
        flatten(&mapping, "", &mut fields);
        let want: BTreeMap<String, Capability> = [
            ("blob", capability("binary", false, false)),
            ("hidden", capability("keyword", false, true)),
            ("n", capability("long", true, false)),
            ("o", capability("object", false, false)),
            ("o.x", capability("double", true, true)),
            ("text", capability("text", true, false)),
            ("text.keyword", capability("keyword", true, true)),
        ]
        .into_iter()
        .map(|(n, c)| (n.to_owned(), c))
        .collect();
        assert_eq!(fields, want);
    }

    /// The merged answer against Elasticsearch's documented shape, and against a brute-force
    /// reading of the same per-index capabilities.
    #[test]
    fn indices_merge_as_elasticsearch_merges_them() {
        let index = |fields: &[(&str, Capability)]| -> BTreeMap<String, Capability> {
            fields
                .iter()
                .map(|(n, c)| ((*n).to_owned(), c.clone()))
                .collect()
        };
        let per_index = vec![
            (
                "a".to_owned(),
                index(&[
                    ("n", capability("double", true, true)),
                    ("k", capability("keyword", true, true)),
                ]),
            ),
            (
                "b".to_owned(),
                index(&[
                    ("n", capability("long", true, true)),
                    ("k", capability("keyword", false, true)),
                ]),
            ),
            (
                "c".to_owned(),
                index(&[("n", capability("long", true, false))]),
            ),
        ];
        let merged = merge(&per_index, &["*".into()], false);
        assert_eq!(
            merged["n"],
            json!({
                "double": {"type": "double", "searchable": true, "aggregatable": true, "indices": ["a"]},
                "long": {"type": "long", "searchable": true, "aggregatable": false,
                         "indices": ["b", "c"], "non_aggregatable_indices": ["c"]},
            })
        );
        assert_eq!(
            merged["k"],
            json!({"keyword": {"type": "keyword", "searchable": false, "aggregatable": true,
                               "non_searchable_indices": ["b"]}})
        );
        let merged = merge(&per_index, &["k".into()], true);
        assert_eq!(merged.len(), 1);
        assert_eq!(
            merged["k"]["unmapped"],
            json!({"type": "unmapped", "searchable": false, "aggregatable": false, "indices": ["c"]})
        );
        assert_eq!(merged["k"]["keyword"]["indices"], json!(["a", "b"]));
        // Every (field, type) pair of the input appears, and nothing else.
        let merged = merge(&per_index, &["*".into()], false);
        for (_, fields) in &per_index {
            for (name, c) in fields {
                assert!(merged[name][&c.ty].is_object(), "{name} {}", c.ty);
            }
        }
        let pairs: usize = merged.values().map(|t| t.as_object().unwrap().len()).sum();
        assert_eq!(pairs, 3);
    }
}
