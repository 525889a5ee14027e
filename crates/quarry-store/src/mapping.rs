//! Field mappings: how the fields a user names are indexed and kept, instead of the dynamic
//! defaults (every string analyzed and stored, every number indexed as a number and as text).
//!
//! A mapping is read from JSON shaped like an Elasticsearch mapping, so that the body of a
//! `PUT /{index}/_mapping` (or of a create-index request, under `mappings`) is accepted as is
//! where it fits:
//!
//! ```json
//! {
//!   "properties": {
//!     "id":       { "type": "keyword", "index": false },
//!     "text":     { "type": "text", "stored": false },
//!     "title":    { "type": "text", "analyzer": "stop", "norms": false },
//!     "http":     { "properties": { "status": { "type": "long" } } },
//!     "labels.*": { "type": "keyword" }
//!   },
//!   "_source": { "excludes": ["body"] },
//!   "default_search_fields": ["text", "title"]
//! }
//! ```
//!
//! - A name under `properties` is a field name; nested `properties` give dotted names (as
//!   events are flattened). A name holding `*` is a pattern: `*` matches any run of
//!   characters, dots included. A field takes the rules of its exact name, else of the
//!   longest pattern it matches (ties: the smallest pattern); unmatched fields stay dynamic.
//! - `type`: `text` (analyzed), `keyword` (the whole value is one exact term, of any length up
//!   to `MAX_KEYWORD_LEN`), a number type (`long`, `integer`, `short`, `byte`,
//!   `unsigned_long`, `double`, `float`, `half_float`, `scaled_float`: indexed as a number,
//!   for ranges and equality) or `boolean`.
//! - `index` (default true): false keeps the value but indexes nothing; a query on the field
//!   is an error.
//! - `stored` (Quarry's; default true): false indexes the value but keeps no copy, so hits do
//!   not show it and aggregations cannot use it. Elasticsearch's `_source.excludes` says the
//!   same for the names it lists. (Elasticsearch's own `store` concerns a second copy beside
//!   `_source`; it is accepted and changes nothing.)
//! - `doc_values` (default true): false keeps the value without the per-doc lookup structure
//!   that speeds up sorting and aggregations on it.
//! - `norms` (text; default true): false scores a match the same whatever the value's length.
//! - `analyzer` (text; default `standard`): `standard` (Quarry's tokenizer, lowercased, the
//!   data directory's stop words), `stop` (the same with English stop words), `whitespace`
//!   (split at whitespace, case kept) or `keyword` (the whole value is one token, case kept).
//! - `default_search_fields` (Quarry's): the fields bare words search; when it is empty, bare
//!   words search every text field that is indexed.
//!
//! A mapping only grows: adding a field is fine, changing how a mapped field is indexed is an
//! error (blocks already written keep the old way; a new tenant or data directory is the way
//! to change it). Unknown keys are errors, so a typo is not silently ignored.

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;
use std::collections::BTreeMap;

/// The longest value a `keyword` field indexes (Lucene's limit on one term, 32,766 bytes).
/// A longer value is rejected at ingest, with its line.
pub const MAX_KEYWORD_LEN: usize = 32_766;

/// How one field's values are indexed and kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FieldType {
    Text,
    Keyword,
    Number,
    Boolean,
}

/// The analyzers a text field can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AnalyzerName {
    #[default]
    Standard,
    Stop,
    Whitespace,
    Keyword,
}

impl AnalyzerName {
    pub const ALL: [AnalyzerName; 4] = [
        AnalyzerName::Standard,
        AnalyzerName::Stop,
        AnalyzerName::Whitespace,
        AnalyzerName::Keyword,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            AnalyzerName::Standard => "standard",
            AnalyzerName::Stop => "stop",
            AnalyzerName::Whitespace => "whitespace",
            AnalyzerName::Keyword => "keyword",
        }
    }
}

/// The rules of one mapped field (or pattern).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldMapping {
    #[serde(rename = "type")]
    pub ty: FieldType,
    pub index: bool,
    pub stored: bool,
    pub doc_values: bool,
    pub norms: bool,
    pub analyzer: AnalyzerName,
}

impl FieldMapping {
    pub fn new(ty: FieldType) -> FieldMapping {
        FieldMapping {
            ty,
            index: true,
            stored: true,
            doc_values: true,
            norms: ty == FieldType::Text,
            analyzer: AnalyzerName::Standard,
        }
    }
}

/// A whole mapping: mapped names and patterns, and the fields bare words search.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Mapping {
    /// Exact names and `*` patterns.
    #[serde(default)]
    pub fields: BTreeMap<String, FieldMapping>,
    #[serde(default)]
    pub default_search_fields: Vec<String>,
}

#[derive(Debug, thiserror::Error, PartialEq)]
#[error("mapping: {path}: {message}")]
pub struct MappingError {
    /// Where in the mapping document, like `properties.http.properties.status.type`.
    pub path: String,
    pub message: String,
}

fn error(path: &str, message: impl Into<String>) -> MappingError {
    MappingError {
        path: if path.is_empty() {
            "(top level)".to_owned()
        } else {
            path.to_owned()
        },
        message: message.into(),
    }
}

const NUMBER_TYPES: [&str; 9] = [
    "long",
    "integer",
    "short",
    "byte",
    "unsigned_long",
    "double",
    "float",
    "half_float",
    "scaled_float",
];

impl Mapping {
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty() && self.default_search_fields.is_empty()
    }

    /// Reads a mapping document (module doc): `{"properties": ...}`, optionally wrapped in
    /// `{"mappings": ...}` as in a create-index body.
    pub fn from_json(text: &str) -> Result<Mapping, MappingError> {
        let document: Json =
            serde_json::from_str(text).map_err(|e| error("", format!("invalid JSON: {e}")))?;
        Mapping::from_value(&document)
    }

    pub fn from_value(document: &Json) -> Result<Mapping, MappingError> {
        let mut document = document;
        let mut path = String::new();
        if let Some(inner) = object(document, "")?.get("mappings") {
            if object(document, "")?.len() > 1 {
                return Err(error(
                    "",
                    "a body with `mappings` may hold nothing else (settings are not read here)",
                ));
            }
            document = inner;
            path = "mappings".to_owned();
        }
        let mut mapping = Mapping::default();
        let mut not_stored = Vec::new();
        for (key, value) in object(document, &path)? {
            let here = join(&path, key);
            match key.as_str() {
                "properties" => read_properties(value, &here, "", &mut mapping.fields)?,
                "default_search_fields" => {
                    mapping.default_search_fields = string_list(value, &here)?;
                }
                "_source" => {
                    for (key, value) in object(value, &here)? {
                        let here = join(&here, key);
                        match key.as_str() {
                            "excludes" => not_stored = string_list(value, &here)?,
                            "enabled" if value == &Json::Bool(true) => {}
                            "enabled" => {
                                return Err(error(
                                    &here,
                                    "Quarry keeps every field unless it is mapped `stored: false` \
                                     or listed in `_source.excludes`",
                                ))
                            }
                            _ => return Err(error(&here, "unknown key (expected `excludes`)")),
                        }
                    }
                }
                // Elasticsearch's default for unmapped fields; Quarry maps them dynamically.
                "dynamic" if value == &Json::Bool(true) || value == "true" => {}
                _ => {
                    return Err(error(
                        &here,
                        "unknown key (expected `properties`, `default_search_fields`, `_source`)",
                    ))
                }
            }
        }
        for name in not_stored {
            match mapping.fields.get_mut(&name) {
                Some(field) => field.stored = false,
                None => {
                    return Err(error(
                        &join(&path, "_source.excludes"),
                        format!("{name:?} is not a mapped field (map it under `properties`)"),
                    ))
                }
            }
        }
        for name in &mapping.default_search_fields {
            if let Some(field) = mapping.rules(name) {
                if field.ty != FieldType::Text || !field.index {
                    return Err(error(
                        &join(&path, "default_search_fields"),
                        format!("{name:?} is not an indexed text field"),
                    ));
                }
            }
        }
        Ok(mapping)
    }

    /// The rules for the field `name`: its exact entry, else the longest matching pattern.
    pub fn rules(&self, name: &str) -> Option<&FieldMapping> {
        if let Some(rules) = self.fields.get(name) {
            return Some(rules);
        }
        self.fields
            .iter()
            .filter(|(pattern, _)| pattern.contains('*') && glob_matches(pattern, name))
            // Longest first; equal lengths: the smallest pattern (the map's order) first.
            .max_by(|a, b| a.0.len().cmp(&b.0.len()).then(b.0.cmp(a.0)))
            .map(|(_, rules)| rules)
    }

    /// This mapping with `update`'s fields added. A field already mapped must be mapped the
    /// same way: blocks already written cannot change.
    pub fn merged(&self, update: &Mapping) -> Result<Mapping, MappingError> {
        let mut merged = self.clone();
        for (name, rules) in &update.fields {
            match merged.fields.get(name) {
                Some(old) if old != rules => {
                    return Err(error(
                        &format!("properties.{name}"),
                        format!(
                            "already mapped as {}; a mapped field cannot change (blocks already \
                             hold it that way): index into a new tenant or data directory",
                            serde_json::to_string(&old.to_es_json()).unwrap_or_default()
                        ),
                    ));
                }
                Some(_) => {}
                None => {
                    merged.fields.insert(name.clone(), *rules);
                }
            }
        }
        if !update.default_search_fields.is_empty() {
            merged.default_search_fields = update.default_search_fields.clone();
        }
        Ok(merged)
    }

    /// The mapping as an Elasticsearch-style document (what `GET /{index}/_mapping` shows).
    pub fn to_es_json(&self) -> Json {
        let properties: serde_json::Map<String, Json> = self
            .fields
            .iter()
            .map(|(name, rules)| (name.clone(), rules.to_es_json()))
            .collect();
        let mut document = serde_json::Map::new();
        document.insert("properties".into(), Json::Object(properties));
        if !self.default_search_fields.is_empty() {
            document.insert(
                "default_search_fields".into(),
                self.default_search_fields.clone().into(),
            );
        }
        Json::Object(document)
    }
}

impl FieldMapping {
    pub fn to_es_json(&self) -> Json {
        let mut out = serde_json::Map::new();
        let ty = match self.ty {
            FieldType::Text => "text",
            FieldType::Keyword => "keyword",
            FieldType::Number => "double",
            FieldType::Boolean => "boolean",
        };
        out.insert("type".into(), ty.into());
        let defaults = FieldMapping::new(self.ty);
        if self.index != defaults.index {
            out.insert("index".into(), self.index.into());
        }
        if self.stored != defaults.stored {
            out.insert("stored".into(), self.stored.into());
        }
        if self.doc_values != defaults.doc_values {
            out.insert("doc_values".into(), self.doc_values.into());
        }
        if self.norms != defaults.norms {
            out.insert("norms".into(), self.norms.into());
        }
        if self.analyzer != defaults.analyzer {
            out.insert("analyzer".into(), self.analyzer.as_str().into());
        }
        Json::Object(out)
    }
}

fn read_properties(
    value: &Json,
    path: &str,
    prefix: &str,
    out: &mut BTreeMap<String, FieldMapping>,
) -> Result<(), MappingError> {
    for (name, field) in object(value, path)? {
        let here = join(path, name);
        if name.is_empty() || name.starts_with('.') || name.ends_with('.') {
            return Err(error(
                &here,
                "a field name may not be empty or start or end with `.`",
            ));
        }
        let full = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}.{name}")
        };
        if full == "_time" {
            return Err(error(
                &here,
                "`_time` is Quarry's own field and cannot be mapped",
            ));
        }
        let keys = object(field, &here)?;
        if let Some(nested) = keys.get("properties") {
            if let Some(other) = keys
                .keys()
                .find(|k| !matches!(k.as_str(), "properties" | "type" | "dynamic"))
            {
                return Err(error(
                    &join(&here, other),
                    "an object field holds only `properties`",
                ));
            }
            if keys.get("type").is_some_and(|t| t != "object") {
                return Err(error(
                    &join(&here, "type"),
                    "a field with `properties` is an object",
                ));
            }
            read_properties(nested, &join(&here, "properties"), &full, out)?;
            continue;
        }
        out.insert(full, read_field(keys, &here)?);
    }
    Ok(())
}

fn read_field(
    keys: &serde_json::Map<String, Json>,
    path: &str,
) -> Result<FieldMapping, MappingError> {
    let ty_path = join(path, "type");
    let ty_name = match keys.get("type") {
        Some(Json::String(ty)) => ty.as_str(),
        Some(_) => return Err(error(&ty_path, "expected a string")),
        None => return Err(error(path, "missing `type`")),
    };
    let ty = match ty_name {
        // `match_only_text` is text that keeps no positions or scores by them: the answers
        // are text's (phrases are checked against the source there), so it is text here.
        "text" | "match_only_text" => FieldType::Text,
        "keyword" => FieldType::Keyword,
        "boolean" => FieldType::Boolean,
        number if NUMBER_TYPES.contains(&number) => FieldType::Number,
        other => {
            return Err(error(
                &ty_path,
                format!(
                    "unsupported type {other:?} (supported: text, match_only_text, keyword, boolean, {})",
                    NUMBER_TYPES.join(", ")
                ),
            ))
        }
    };
    let mut rules = FieldMapping::new(ty);
    for (key, value) in keys {
        let here = join(path, key);
        let flag = || {
            value
                .as_bool()
                .ok_or_else(|| error(&here, "expected true or false"))
        };
        match key.as_str() {
            "type" => {}
            "index" => rules.index = flag()?,
            "stored" => rules.stored = flag()?,
            "doc_values" => rules.doc_values = flag()?,
            // Elasticsearch's extra stored copy: Quarry returns every stored field anyway.
            "store" => {
                flag()?;
            }
            "norms" if ty == FieldType::Text => rules.norms = flag()?,
            "analyzer" | "search_analyzer" if ty == FieldType::Text => {
                let name = value
                    .as_str()
                    .ok_or_else(|| error(&here, "expected a string"))?;
                let analyzer = AnalyzerName::ALL
                    .into_iter()
                    .find(|a| a.as_str() == name)
                    .ok_or_else(|| {
                        error(
                            &here,
                            format!(
                                "unknown analyzer {name:?} (known: standard, stop, whitespace, \
                                 keyword)"
                            ),
                        )
                    })?;
                if key == "search_analyzer" && analyzer != rules.analyzer {
                    return Err(error(
                        &here,
                        "a field is searched with the analyzer it is indexed with",
                    ));
                }
                rules.analyzer = analyzer;
            }
            "index_options" if ty == FieldType::Text => {
                if value != "positions" && value != "offsets" {
                    return Err(error(
                        &here,
                        "only `positions` is supported: text fields keep positions for phrases",
                    ));
                }
            }
            _ => {
                return Err(error(
                    &here,
                    format!(
                        "unknown or unsupported key for a {ty_name} field (known: type, index, \
                         stored, doc_values{})",
                        if ty == FieldType::Text {
                            ", norms, analyzer, index_options"
                        } else {
                            ""
                        }
                    ),
                ))
            }
        }
    }
    Ok(rules)
}

fn object<'a>(
    value: &'a Json,
    path: &str,
) -> Result<&'a serde_json::Map<String, Json>, MappingError> {
    value
        .as_object()
        .ok_or_else(|| error(path, "expected a JSON object"))
}

fn string_list(value: &Json, path: &str) -> Result<Vec<String>, MappingError> {
    match value {
        Json::String(one) => Ok(vec![one.clone()]),
        Json::Array(items) => items
            .iter()
            .map(|item| {
                item.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| error(path, "expected a list of field names"))
            })
            .collect(),
        _ => Err(error(path, "expected a list of field names")),
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

/// Whether `name` matches `pattern`, where `*` matches any run of characters.
pub fn glob_matches(pattern: &str, name: &str) -> bool {
    let mut parts = pattern.split('*');
    // `split` yields at least one part.
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = name.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        // No `*`: the whole name.
        return rest.is_empty();
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_nested_properties_patterns_and_excludes() {
        let mapping = Mapping::from_json(
            r#"{"mappings": {
                "properties": {
                    "id": {"type": "keyword", "index": false},
                    "text": {"type": "text", "analyzer": "stop", "norms": false},
                    "http": {"properties": {"status": {"type": "long"}}},
                    "labels.*": {"type": "keyword"},
                    "body": {"type": "text", "store": true}
                },
                "_source": {"excludes": ["body"]},
                "default_search_fields": ["text"]
            }}"#,
        )
        .unwrap();
        let id = mapping.rules("id").unwrap();
        assert_eq!(
            (id.ty, id.index, id.stored),
            (FieldType::Keyword, false, true)
        );
        let text = mapping.rules("text").unwrap();
        assert_eq!((text.analyzer, text.norms), (AnalyzerName::Stop, false));
        assert_eq!(mapping.rules("http.status").unwrap().ty, FieldType::Number);
        assert_eq!(
            mapping.rules("labels.app.tier").unwrap().ty,
            FieldType::Keyword
        );
        assert!(!mapping.rules("body").unwrap().stored);
        assert!(mapping.rules("labels").is_none());
        assert!(mapping.rules("http").is_none());
        assert_eq!(mapping.default_search_fields, ["text"]);
        // What GET shows reads back as the same mapping.
        let shown = serde_json::to_string(&mapping.to_es_json()).unwrap();
        assert_eq!(Mapping::from_json(&shown).unwrap(), mapping);
    }

    #[test]
    fn errors_name_the_place() {
        let cases = [
            (
                r#"{"properties": {"a": {"type": "txt"}}}"#,
                "properties.a.type",
            ),
            (
                r#"{"properties": {"a": {"type": "text", "idnex": false}}}"#,
                "properties.a.idnex",
            ),
            (
                r#"{"properties": {"a": {"type": "long", "analyzer": "stop"}}}"#,
                "properties.a.analyzer",
            ),
            (
                r#"{"properties": {"a": {"type": "text", "analyzer": "french"}}}"#,
                "properties.a.analyzer",
            ),
            (r#"{"properties": {"a": {"index": false}}}"#, "properties.a"),
            (
                r#"{"properties": {"_time": {"type": "long"}}}"#,
                "properties._time",
            ),
            (r#"{"propertes": {}}"#, "propertes"),
            (
                r#"{"properties": {"a": {"type": "keyword"}}, "default_search_fields": ["a"]}"#,
                "default_search_fields",
            ),
            (
                r#"{"properties": {}, "_source": {"excludes": ["b"]}}"#,
                "_source.excludes",
            ),
            (
                r#"{"properties": {"a": {"type": "text", "index_options": "docs"}}}"#,
                "properties.a.index_options",
            ),
            (r#"[1]"#, "(top level)"),
        ];
        for (text, path) in cases {
            let e = Mapping::from_json(text).unwrap_err();
            assert_eq!(e.path, path, "{text}: {e}");
        }
    }

    #[test]
    fn longest_pattern_wins_and_exact_names_win_over_patterns() {
        let mapping = Mapping::from_json(
            r#"{"properties": {
                "*": {"type": "keyword"},
                "http.*": {"type": "long"},
                "http.path": {"type": "text"}
            }}"#,
        )
        .unwrap();
        assert_eq!(mapping.rules("host").unwrap().ty, FieldType::Keyword);
        assert_eq!(mapping.rules("http.status").unwrap().ty, FieldType::Number);
        assert_eq!(mapping.rules("http.path").unwrap().ty, FieldType::Text);
    }

    #[test]
    fn glob_matches_like_a_brute_force_matcher() {
        // Brute force: try every split of the name for the first `*`.
        fn model(pattern: &[u8], name: &[u8]) -> bool {
            match pattern.split_first() {
                None => name.is_empty(),
                Some((b'*', rest)) => (0..=name.len()).any(|i| model(rest, &name[i..])),
                Some((c, rest)) => name.first() == Some(c) && model(rest, &name[1..]),
            }
        }
        let alphabet = ["", "a", "b", "*", "ab", "a*", "*b", "**"];
        let names = ["", "a", "b", "ab", "ba", "aab", "abab", "bba"];
        for p1 in alphabet {
            for p2 in alphabet {
                let pattern = format!("{p1}{p2}");
                for name in names {
                    assert_eq!(
                        glob_matches(&pattern, name),
                        model(pattern.as_bytes(), name.as_bytes()),
                        "{pattern} {name}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_mapping_only_grows() {
        let old = Mapping::from_json(r#"{"properties": {"a": {"type": "keyword"}}}"#).unwrap();
        let more = Mapping::from_json(
            r#"{"properties": {"a": {"type": "keyword"}, "b": {"type": "text"}}}"#,
        )
        .unwrap();
        let merged = old.merged(&more).unwrap();
        assert_eq!(merged.fields.len(), 2);
        let changed = Mapping::from_json(r#"{"properties": {"a": {"type": "text"}}}"#).unwrap();
        let e = old.merged(&changed).unwrap_err();
        assert_eq!(e.path, "properties.a");
        assert!(e.message.contains("already mapped"), "{e}");
    }
}
