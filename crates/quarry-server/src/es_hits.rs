//! How a `_search` hit is shown, as its request asks: `_source` filtering (`false`, a pattern or
//! a list, `includes`/`excludes`, and the `_source*` URL parameters), `fields` and
//! `docvalue_fields` (values as lists, `@timestamp` in the date format asked for),
//! `stored_fields` (`_none_`, `[]`, or names shown as `fields` are), `version`,
//! and `highlight` (the query's words wrapped in `pre_tags`/`post_tags`, Grafana's logs panel).
//! Every option of these is honoured or refused by name.

use crate::es_api::EsParams;
use crate::es_number_format::DecimalFormat;
use crate::ApiError;
use quarry_index::analysis::for_each_word;
use quarry_query::parser::{Ast, Occur};
use quarry_query::pattern::{Pattern, PatternKind};
use quarry_store::mapping::{glob_matches, IGNORED_FIELD};
use serde_json::{json, Map, Value as JsonValue};
use std::sync::Arc;

/// What a hit shows besides its `_id` and score.
#[derive(Clone, Debug, Default)]
pub(crate) struct HitView {
    source: SourceFilter,
    /// `fields` and `docvalue_fields`: patterns and their `format`.
    fields: Vec<(String, FieldFormat)>,
    highlight: Option<Highlight>,
    /// `index.highlight.max_analyzed_offset` of the searched indices, and the fields they
    /// map with offsets (`set_highlight_limit`).
    highlight_limit: Option<(usize, std::collections::HashSet<String>)>,
    /// The mapping's multi-fields (name, parent): `fields` and highlights show each with
    /// its parent's values (`set_multi_fields`).
    multi_fields: Vec<(String, String)>,
    version: bool,
    /// `seq_no_primary_term`: each hit's `_seq_no` and `_primary_term`.
    seq_no: bool,
    /// `stored_fields: "_none_"`: not even the hit's `_id`.
    no_stored_fields: bool,
    /// Entries of `docvalue_fields` (against `index.max_docvalue_fields_search`).
    docvalue_fields: usize,
}

#[derive(Clone, Debug)]
struct SourceFilter {
    enabled: bool,
    includes: Vec<String>,
    excludes: Vec<String>,
}

impl Default for SourceFilter {
    fn default() -> Self {
        SourceFilter {
            enabled: true,
            includes: Vec::new(),
            excludes: Vec::new(),
        }
    }
}

/// The `format` of a `fields` or `docvalue_fields` entry.
#[derive(Clone, Debug, PartialEq)]
enum FieldFormat {
    /// How `@timestamp` is shown (other values as they were sent).
    Date(DateFormat),
    /// Numbers in a decimal pattern (`#.0`), as text; `@timestamp` and other values as they
    /// are.
    Decimal(DecimalFormat),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum DateFormat {
    /// `strict_date_optional_time` (Elasticsearch's default): milliseconds.
    Millis,
    /// `strict_date_optional_time_nanos`.
    Nanos,
    /// `epoch_millis`: the number as a string.
    EpochMillis,
}

#[derive(Clone, Debug)]
struct Highlight {
    /// Field patterns, each with its own options.
    fields: Vec<(String, FieldHighlight)>,
    /// `type`: how a highlight bounded by `max_analyzer_offset` shows the text.
    kind: HighlighterKind,
    /// `max_analyzer_offset`: only this many bytes of a text are looked at.
    max_analyzer_offset: Option<usize>,
    /// `require_field_match`: a word is highlighted only in the field the query looked for
    /// it in (else in every highlighted field).
    require_field_match: bool,
    pre_tag: String,
    post_tag: String,
    /// Characters per fragment; `None` shows the whole value.
    fragment_size: Option<usize>,
    fragments: usize,
}

/// A highlighted field's own options.
#[derive(Clone, Debug, Default)]
struct FieldHighlight {
    /// `highlight_query`: the words it highlights instead of the search query's.
    words: Option<QueryWords>,
    kind: Option<HighlighterKind>,
    max_analyzer_offset: Option<usize>,
}

/// Elasticsearch's highlighter `type`s. Quarry has one highlighter, which marks whole words
/// as all three do; they differ here only where Elasticsearch's do in what Quarry answers:
/// past `max_analyzer_offset`, `plain` shows the text analyzed and no more, the others the
/// whole text; past `index.highlight.max_analyzed_offset`, `unified` and `fvh` read a
/// field's offsets where it has them, `plain` never.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum HighlighterKind {
    #[default]
    Unified,
    Plain,
    Fvh,
}

/// Names an event holds that are its hit's metadata (`_id`, `_ignored`, `_seq_no`, ...),
/// never a field of its `_source`, `fields` or mapping.
pub(crate) fn is_metadata(name: &str) -> bool {
    matches!(
        name,
        "_id"
            | crate::documents::SEQ_FIELD
            | crate::documents::VERSION_FIELD
            | crate::live::TIME_AS_SENT_FIELD
    ) || name == IGNORED_FIELD
}

fn unsupported(path: &str) -> ApiError {
    ApiError::bad_request(format!("unsupported: [{path}] in the search body"))
}

fn strings(value: &JsonValue, path: &str) -> Result<Vec<String>, ApiError> {
    match value {
        JsonValue::String(one) => Ok(vec![one.clone()]),
        JsonValue::Array(items) => items
            .iter()
            .map(|item| {
                item.as_str().map(str::to_owned).ok_or_else(|| {
                    ApiError::bad_request(format!("{path}: expected field names or patterns"))
                })
            })
            .collect(),
        _ => Err(ApiError::bad_request(format!(
            "{path}: expected a field name, a pattern or a list of them"
        ))),
    }
}

impl HitView {
    /// Bounds highlights by `index.highlight.max_analyzed_offset` (`limit`); fields in
    /// `offsets` are mapped with offsets.
    pub(crate) fn set_highlight_limit(
        &mut self,
        limit: Option<u64>,
        offsets: std::collections::HashSet<String>,
    ) {
        self.highlight_limit = limit.map(|limit| (limit as usize, offsets));
    }

    /// The searched indices' multi-fields, as (name, parent).
    pub(crate) fn set_multi_fields(&mut self, multi_fields: Vec<(String, String)>) {
        self.multi_fields = multi_fields;
    }

    /// The event's fields and, after them, its multi-fields, each with its parent's value.
    fn with_multi_fields<'a>(
        &'a self,
        flat: &'a Map<String, JsonValue>,
    ) -> impl Iterator<Item = (&'a String, &'a JsonValue)> {
        let views = self
            .multi_fields
            .iter()
            .filter_map(|(name, parent)| Some((name, flat.get(parent)?)));
        flat.iter().chain(views)
    }

    /// The field whose index answers `name`: a multi-field's parent, else `name`.
    fn answered_by<'a>(&'a self, name: &'a str) -> &'a str {
        self.multi_fields
            .iter()
            .find(|(multi, _)| multi == name)
            .map_or(name, |(_, parent)| parent)
    }

    /// Refuses a highlight that would analyze more of a value than
    /// `index.highlight.max_analyzed_offset` allows, as Elasticsearch does: a text longer
    /// than it, in a field without offsets or highlighted by `plain`, unless the request
    /// bounds the analysis itself (`max_analyzer_offset`).
    pub(crate) fn check_highlight(
        &self,
        flat: &Map<String, JsonValue>,
        index: &str,
    ) -> Result<(), ApiError> {
        let (Some(highlight), Some((limit, offsets))) = (&self.highlight, &self.highlight_limit)
        else {
            return Ok(());
        };
        for (name, value) in self.with_multi_fields(flat) {
            let Some(text) = value.as_str() else { continue };
            let Some((_, own)) = highlight.fields.iter().find(|(p, _)| glob_matches(p, name))
            else {
                continue;
            };
            let kind = own.kind.unwrap_or(highlight.kind);
            let bounded = own
                .max_analyzer_offset
                .or(highlight.max_analyzer_offset)
                .is_some();
            let reads_offsets = kind != HighlighterKind::Plain && offsets.contains(name);
            if text.len() > *limit && !bounded && !reads_offsets {
                return Err(ApiError::bad_request(format!(
                    "The length of [{name}] field of a document of [{index}] index has exceeded [{limit}] - maximum allowed to be analyzed for highlighting. This maximum can be set by changing the [index.highlight.max_analyzed_offset] index level setting. For large texts, indexing with offsets or term vectors is recommended!"
                )));
            }
        }
        Ok(())
    }

    /// Entries of `docvalue_fields` asked for.
    pub(crate) fn docvalue_fields(&self) -> usize {
        self.docvalue_fields
    }

    /// Reads one key of a search body if it is about hits; `Ok(false)` when it is not.
    pub(crate) fn read_body_key(&mut self, key: &str, value: &JsonValue) -> Result<bool, ApiError> {
        if !Self::BODY_KEYS.contains(&key) {
            return Ok(false);
        }
        match key {
            "_source" => self.source = source_filter(value)?,
            "version" => {
                self.version = value
                    .as_bool()
                    .ok_or_else(|| ApiError::bad_request("version: expected true or false"))?
            }
            "seq_no_primary_term" => {
                self.seq_no = value.as_bool().ok_or_else(|| {
                    ApiError::bad_request("seq_no_primary_term: expected true or false")
                })?
            }
            "fields" | "docvalue_fields" => {
                let items = match value {
                    JsonValue::Array(items) => items.clone(),
                    other => vec![other.clone()],
                };
                if key == "docvalue_fields" {
                    self.docvalue_fields += items.len();
                }
                for (at, item) in items.iter().enumerate() {
                    let path = format!("{key}[{at}]");
                    self.fields.push(match item {
                        JsonValue::String(name) => {
                            (name.clone(), FieldFormat::Date(DateFormat::Millis))
                        }
                        JsonValue::Object(object) => {
                            if let Some(other) = object.keys().find(|k| *k != "field" && *k != "format") {
                                return Err(unsupported(&format!("{path}.{other}")));
                            }
                            let name = object.get("field").and_then(JsonValue::as_str).ok_or_else(
                                || ApiError::bad_request(format!("{path}: expected a field")),
                            )?;
                            let format = match object.get("format").and_then(JsonValue::as_str) {
                                // `use_field_mapping`: the default, named (Elasticsearch 6's way).
                                None | Some("strict_date_optional_time" | "date_optional_time" | "use_field_mapping") => {
                                    FieldFormat::Date(DateFormat::Millis)
                                }
                                Some("strict_date_optional_time_nanos") => FieldFormat::Date(DateFormat::Nanos),
                                Some("epoch_millis") => FieldFormat::Date(DateFormat::EpochMillis),
                                Some(pattern) if pattern.contains(['#', '0']) => FieldFormat::Decimal(
                                    DecimalFormat::parse(pattern).map_err(|e| {
                                        ApiError::bad_request(format!("unsupported: {path}.format {e}"))
                                    })?,
                                ),
                                Some(other) => {
                                    return Err(ApiError::bad_request(format!(
                                        "unsupported: {path}.format {other:?} (strict_date_optional_time, strict_date_optional_time_nanos, epoch_millis)"
                                    )))
                                }
                            };
                            (name.to_owned(), format)
                        }
                        _ => return Err(ApiError::bad_request(format!("{path}: expected a field"))),
                    });
                }
            }
            // An empty object asks for nothing (Grafana sends one).
            "script_fields" if value.as_object().is_some_and(Map::is_empty) => {}
            "stored_fields" => self.stored_fields(&strings(value, key)?),
            "highlight" => self.highlight = Some(highlight(value)?),
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The body keys about hits (`read_body_key`), all in `SEARCH_BODY_OPTIONS`.
    pub(crate) const BODY_KEYS: &'static [&'static str] = &[
        "_source",
        "version",
        "seq_no_primary_term",
        "fields",
        "docvalue_fields",
        "script_fields",
        "stored_fields",
        "highlight",
    ];

    /// The URL parameters `read_params` reads: every API that shows hits takes them
    /// (`es_api::API_PARAMS`).
    pub(crate) const PARAMS: &'static [&'static str] = &[
        "_source",
        "_source_includes",
        "_source_excludes",
        "version",
        "seq_no_primary_term",
        "stored_fields",
        "docvalue_fields",
    ];

    /// `stored_fields`: `_none_` shows nothing of a hit but where it is from; a list shows
    /// `_source` only if it names it, and the values of the other fields it names under
    /// `fields`, as `fields` does: Quarry keeps every field (its mapping's `stored`), so every
    /// field is stored in Elasticsearch's sense (`store: true`).
    fn stored_fields(&mut self, names: &[String]) {
        if names.iter().any(|name| name == "_none_") {
            self.source.enabled = false;
            self.no_stored_fields = true;
            return;
        }
        if !names.iter().any(|name| name == "_source") {
            self.source.enabled = false;
        }
        for name in names.iter().filter(|name| *name != "_source") {
            self.fields
                .push((name.clone(), FieldFormat::Date(DateFormat::Millis)));
        }
    }

    pub(crate) fn read_params(&mut self, params: &EsParams) -> Result<(), ApiError> {
        // `stored_fields` first: an explicit `_source` shows the source beside them.
        if let Some(list) = params.get("stored_fields") {
            let names: Vec<String> = list.split(',').map(str::to_owned).collect();
            self.stored_fields(&names);
        }
        if let Some(value) = params.get("_source") {
            self.source = match value {
                "true" | "" => SourceFilter::default(),
                "false" => source_filter(&JsonValue::Bool(false))?,
                list => source_filter(&json!(list.split(',').collect::<Vec<_>>()))?,
            };
        }
        if let Some(list) = params.get("_source_includes") {
            self.source.includes = list.split(',').map(str::to_owned).collect();
        }
        if let Some(list) = params.get("_source_excludes") {
            self.source.excludes = list.split(',').map(str::to_owned).collect();
        }
        self.version |= params.flag("version", false)?;
        self.seq_no |= params.flag("seq_no_primary_term", false)?;
        if let Some(list) = params.get("docvalue_fields") {
            for name in list.split(',') {
                self.fields
                    .push((name.to_owned(), FieldFormat::Date(DateFormat::Millis)));
            }
        }
        Ok(())
    }

    /// What the view shows of a document's `_source` (`None`: `_source: false`).
    pub(crate) fn filter_source(&self, source: &Map<String, JsonValue>) -> Option<JsonValue> {
        if !self.source.enabled {
            return None;
        }
        let mut flat = Vec::new();
        crate::es_indices::flatten("", &JsonValue::Object(source.clone()), &mut flat);
        let kept: Map<String, JsonValue> = flat
            .into_iter()
            .filter(|(name, _)| !name.is_empty() && self.source.keeps(name))
            .collect();
        Some(crate::es_search::nested(kept).into())
    }

    /// Adds to `hit` what the view shows of the event `flat` (fields by dotted name) at `time`
    /// (ns): `_source`, `fields`, `_version`, `highlight`; `words` are the query's.
    pub(crate) fn render(
        &self,
        hit: &mut JsonValue,
        flat: &Map<String, JsonValue>,
        time: i64,
        words: &QueryWords,
    ) {
        if self.no_stored_fields {
            if let Some(hit) = hit.as_object_mut() {
                hit.remove("_id");
            }
        }
        // The fields whose values were kept but not indexed: the hit's, as its `_id`.
        if let Some(ignored) = flat.get(IGNORED_FIELD) {
            hit["_ignored"] = match ignored {
                JsonValue::Array(_) => ignored.clone(),
                one => json!([one]),
            };
        }
        if self.source.enabled {
            // `_id` and `_ignored` are the hit's, not fields of its source.
            let kept: Map<String, JsonValue> = flat
                .iter()
                .filter(|(name, _)| !is_metadata(name) && self.source.keeps(name))
                .map(|(name, value)| (name.clone(), value.clone()))
                .collect();
            let mut source = crate::es_search::nested(kept);
            // The time as the document gave it (live.rs's TIME_AS_SENT_FIELD), else its
            // `@timestamp`.
            let sent = flat
                .get(crate::live::TIME_AS_SENT_FIELD)
                .and_then(JsonValue::as_str)
                .and_then(|text| crate::live::sent_time(text, time));
            match sent {
                Some(sent) => {
                    for (key, value) in sent {
                        if self.source.keeps(&key) {
                            source.insert(key, value);
                        }
                    }
                }
                None if self.source.keeps("@timestamp") => {
                    source.insert("@timestamp".into(), crate::format_time(time).into());
                }
                None => {}
            }
            hit["_source"] = source.into();
        }
        if self.version {
            // A document's version is 1 unless it says otherwise (documents.rs).
            hit["_version"] = flat
                .get(crate::documents::VERSION_FIELD)
                .cloned()
                .unwrap_or(1.into());
        }
        if self.seq_no {
            hit["_seq_no"] = flat
                .get(crate::documents::SEQ_FIELD)
                .cloned()
                .unwrap_or(0.into());
            hit["_primary_term"] = crate::documents::PRIMARY_TERM.into();
        }
        if !self.fields.is_empty() {
            let mut fields = Map::new();
            for (pattern, format) in &self.fields {
                if glob_matches(pattern, "@timestamp") {
                    let ms = time.div_euclid(1_000_000);
                    let text = match format {
                        FieldFormat::Date(DateFormat::EpochMillis) => ms.to_string(),
                        FieldFormat::Date(DateFormat::Nanos) => crate::format_time(time),
                        _ => crate::format_time(ms * 1_000_000),
                    };
                    fields.insert("@timestamp".into(), json!([text]));
                }
                for (name, value) in self.with_multi_fields(flat) {
                    if !is_metadata(name) && glob_matches(pattern, name) {
                        let mut values = match value {
                            JsonValue::Array(items) => items.clone(),
                            one => vec![one.clone()],
                        };
                        if let FieldFormat::Decimal(decimal) = format {
                            for value in &mut values {
                                if let Some(number) = value.as_f64() {
                                    *value = decimal.format(number).into();
                                }
                            }
                        }
                        fields.insert(name.clone(), values.into());
                    }
                }
            }
            if !fields.is_empty() {
                hit["fields"] = fields.into();
            }
        }
        if let Some(highlight) = &self.highlight {
            let mut out = Map::new();
            // Values kept but not indexed (`ignore_above`) are not highlighted.
            let ignored = flat.get(IGNORED_FIELD);
            let is_ignored = |name: &str| match ignored {
                Some(JsonValue::String(one)) => one == name,
                Some(JsonValue::Array(names)) => names.iter().any(|n| n == name),
                _ => false,
            };
            for (name, value) in self.with_multi_fields(flat) {
                let Some(text) = value.as_str() else { continue };
                let Some((_, own)) = highlight.fields.iter().find(|(p, _)| glob_matches(p, name))
                else {
                    continue;
                };
                if is_ignored(self.answered_by(name)) {
                    continue;
                }
                let words = own.words.as_ref().unwrap_or(words);
                let any_field = !highlight.require_field_match;
                // Past `max_analyzer_offset`, nothing is looked at; `plain` shows no more.
                let analyzed = match own.max_analyzer_offset.or(highlight.max_analyzer_offset) {
                    Some(limit) if limit < text.len() => {
                        let mut end = limit;
                        while !text.is_char_boundary(end) {
                            end -= 1;
                        }
                        end
                    }
                    _ => text.len(),
                };
                let kind = own.kind.unwrap_or(highlight.kind);
                let shown = if kind == HighlighterKind::Plain {
                    &text[..analyzed]
                } else {
                    text
                };
                let fragments = highlight.mark(shown, analyzed, |token| {
                    if any_field {
                        words.matches_any(token)
                    } else {
                        words.matches(name, token)
                    }
                });
                if !fragments.is_empty() {
                    out.insert(name.clone(), fragments.into());
                }
            }
            if !out.is_empty() {
                hit["highlight"] = out.into();
            }
        }
    }
}

impl SourceFilter {
    /// Whether a field (dotted name) is shown: an include pattern matches it or an object
    /// above it, and no exclude pattern does.
    fn keeps(&self, name: &str) -> bool {
        let covers = |pattern: &String| {
            glob_matches(pattern, name)
                || name
                    .char_indices()
                    .filter(|&(_, c)| c == '.')
                    .any(|(at, _)| glob_matches(pattern, &name[..at]))
        };
        (self.includes.is_empty() || self.includes.iter().any(covers))
            && !self.excludes.iter().any(covers)
    }
}

fn source_filter(value: &JsonValue) -> Result<SourceFilter, ApiError> {
    let mut filter = SourceFilter::default();
    match value {
        JsonValue::Bool(enabled) => filter.enabled = *enabled,
        JsonValue::String(_) | JsonValue::Array(_) => filter.includes = strings(value, "_source")?,
        JsonValue::Object(object) => {
            for (key, value) in object {
                match key.as_str() {
                    "includes" | "include" => filter.includes = strings(value, "_source.includes")?,
                    "excludes" | "exclude" => filter.excludes = strings(value, "_source.excludes")?,
                    other => return Err(unsupported(&format!("_source.{other}"))),
                }
            }
        }
        _ => {
            return Err(ApiError::bad_request(
                "_source: expected true, false, patterns or {includes, excludes}",
            ))
        }
    }
    Ok(filter)
}

/// Every option `highlight` takes (issue 27, item 0, walked by `crates/quarry/tests/
/// es_options`); any other is a 400 naming it.
pub const HIGHLIGHT_OPTIONS: &[&str] = &[
    "fields",
    "type",
    "max_analyzer_offset",
    "require_field_match",
    "pre_tags",
    "post_tags",
    "fragment_size",
    "number_of_fragments",
];

/// Every option a highlighted field takes.
pub const HIGHLIGHT_FIELD_OPTIONS: &[&str] = &["type", "max_analyzer_offset", "highlight_query"];

fn highlight(value: &JsonValue) -> Result<Highlight, ApiError> {
    let object = value
        .as_object()
        .ok_or_else(|| ApiError::bad_request("highlight: expected an object"))?;
    let mut highlight = Highlight {
        fields: Vec::new(),
        kind: HighlighterKind::default(),
        max_analyzer_offset: None,
        require_field_match: true,
        pre_tag: "<em>".into(),
        post_tag: "</em>".into(),
        fragment_size: Some(100),
        fragments: 5,
    };
    let one_tag = |value: &JsonValue, path: &str| -> Result<String, ApiError> {
        match strings(value, path)?.as_slice() {
            [one] => Ok(one.clone()),
            _ => Err(unsupported(&format!("{path} with more than one tag"))),
        }
    };
    for (key, value) in object {
        let path = format!("highlight.{key}");
        if !HIGHLIGHT_OPTIONS.contains(&key.as_str()) {
            return Err(unsupported(&path));
        }
        match key.as_str() {
            "fields" => {
                let fields: Vec<(&String, &JsonValue)> = match value {
                    JsonValue::Object(fields) => fields.iter().collect(),
                    JsonValue::Array(list) => {
                        let mut fields = Vec::new();
                        for item in list {
                            let Some(field) = item.as_object().and_then(|o| o.iter().next()) else {
                                return Err(ApiError::bad_request(format!(
                                    "{path}: expected {{field: {{}}}}"
                                )));
                            };
                            fields.push(field);
                        }
                        fields
                    }
                    _ => return Err(ApiError::bad_request(format!("{path}: expected an object"))),
                };
                for (name, options) in fields {
                    let own = field_options(options, &format!("{path}.{name}"))?;
                    highlight.fields.push((name.clone(), own));
                }
            }
            "type" => highlight.kind = highlighter_type(value, &path)?,
            "max_analyzer_offset" => highlight.max_analyzer_offset = Some(offset(value, &path)?),
            "require_field_match" => {
                highlight.require_field_match = value
                    .as_bool()
                    .ok_or_else(|| ApiError::bad_request(format!("{path}: expected a boolean")))?
            }
            "pre_tags" => highlight.pre_tag = one_tag(value, &path)?,
            "post_tags" => highlight.post_tag = one_tag(value, &path)?,
            "fragment_size" => {
                let size = value
                    .as_u64()
                    .ok_or_else(|| ApiError::bad_request(format!("{path}: expected a number")))?;
                // Grafana asks for 2147483647: the whole value.
                highlight.fragment_size = (size < 1 << 20).then_some(size.max(1) as usize);
            }
            "number_of_fragments" => {
                let count = value
                    .as_u64()
                    .ok_or_else(|| ApiError::bad_request(format!("{path}: expected a number")))?;
                // 0: the whole value, highlighted.
                if count == 0 {
                    highlight.fragment_size = None;
                }
                highlight.fragments = count.max(1) as usize;
            }
            _ => return Err(unsupported(&path)),
        }
    }
    Ok(highlight)
}

/// `highlighter.type`: unified, plain or fvh (see `HighlighterKind`).
fn highlighter_type(value: &JsonValue, path: &str) -> Result<HighlighterKind, ApiError> {
    match value.as_str() {
        Some("unified") => Ok(HighlighterKind::Unified),
        Some("plain") => Ok(HighlighterKind::Plain),
        Some("fvh") => Ok(HighlighterKind::Fvh),
        _ => Err(ApiError::bad_request(format!(
            "{path}: expected unified, plain or fvh, got {value}"
        ))),
    }
}

fn offset(value: &JsonValue, path: &str) -> Result<usize, ApiError> {
    value
        .as_u64()
        .filter(|n| *n > 0)
        .map(|n| n as usize)
        .ok_or_else(|| ApiError::bad_request(format!("{path}: expected a positive number")))
}

/// A highlighted field's options: `type`, `highlight_query`, `max_analyzer_offset`.
fn field_options(options: &JsonValue, path: &str) -> Result<FieldHighlight, ApiError> {
    let Some(options) = options.as_object() else {
        return Err(ApiError::bad_request(format!("{path}: expected an object")));
    };
    let mut own = FieldHighlight::default();
    for (key, value) in options {
        let path = format!("{path}.{key}");
        if !HIGHLIGHT_FIELD_OPTIONS.contains(&key.as_str()) {
            return Err(unsupported(&path));
        }
        match key.as_str() {
            "type" => own.kind = Some(highlighter_type(value, &path)?),
            "max_analyzer_offset" => own.max_analyzer_offset = Some(offset(value, &path)?),
            "highlight_query" => {
                let now = quarry_query::time::now_nanos();
                let ast = quarry_query::dsl::compile(value, &path, now)
                    .map_err(crate::es_search::dsl_error)?;
                own.words = Some(QueryWords::of(Some(&ast)));
            }
            _ => return Err(unsupported(&path)),
        }
    }
    Ok(own)
}

impl Highlight {
    /// `text` with each token `hit` accepts wrapped in the tags, as whole or in fragments
    /// around the first matches; empty when no token matches.
    fn mark(&self, text: &str, analyzed: usize, hit: impl Fn(&str) -> bool) -> Vec<String> {
        let mut spans = Vec::new();
        for_each_word(text, &mut |word: &str| {
            let start = word.as_ptr() as usize - text.as_ptr() as usize;
            if start + word.len() <= analyzed && hit(&word.to_lowercase()) {
                spans.push(start..start + word.len());
            }
        });
        if spans.is_empty() {
            return Vec::new();
        }
        let wrap = |range: std::ops::Range<usize>| {
            let mut out = String::new();
            let mut at = range.start;
            for span in spans
                .iter()
                .filter(|s| s.start >= range.start && s.end <= range.end)
            {
                out.push_str(&text[at..span.start]);
                out.push_str(&self.pre_tag);
                out.push_str(&text[span.clone()]);
                out.push_str(&self.post_tag);
                at = span.end;
            }
            out.push_str(&text[at..range.end]);
            out
        };
        let Some(size) = self.fragment_size.filter(|&size| text.len() > size) else {
            return vec![wrap(0..text.len())];
        };
        // Fragments of about `size` bytes, each starting at a match and ending on a char
        // boundary, without overlaps.
        let mut fragments = Vec::new();
        let mut covered = 0;
        for span in &spans {
            if fragments.len() == self.fragments {
                break;
            }
            if span.start < covered {
                continue;
            }
            let mut end = (span.start + size).max(span.end).min(text.len());
            while !text.is_char_boundary(end) {
                end += 1;
            }
            fragments.push(wrap(span.start..end));
            covered = end;
        }
        fragments
    }
}

/// The words and patterns a query looks for (not those it excludes), each with its field
/// (`None`: any field), for highlighting.
#[derive(Clone, Debug, Default)]
pub(crate) struct QueryWords {
    words: Vec<(Option<String>, String)>,
    patterns: Vec<(Option<String>, Arc<Pattern>)>,
}

impl QueryWords {
    pub(crate) fn of(ast: Option<&Ast>) -> QueryWords {
        let mut words = QueryWords::default();
        if let Some(ast) = ast {
            words.collect(ast);
        }
        words
    }

    fn collect(&mut self, ast: &Ast) {
        let mut text_words = |field: &Option<String>, text: &str| {
            for_each_word(text, &mut |word: &str| {
                self.words.push((field.clone(), word.to_lowercase()));
            });
        };
        match ast {
            Ast::Word { field, text } | Ast::Phrase { field, text, .. } => text_words(field, text),
            Ast::Exact { field, value } | Ast::Token { field, value } => {
                text_words(&Some(field.clone()), value)
            }
            Ast::Pattern { field, pattern } => self.patterns.push((field.clone(), pattern.clone())),
            Ast::Boost { inner, .. }
            | Ast::Lenient(inner)
            | Ast::Named { inner, .. }
            | Ast::Constant { inner, .. }
            | Ast::Match { words: inner, .. } => self.collect(inner),
            Ast::AtLeast { clauses, .. } => clauses.iter().for_each(|c| self.collect(c)),
            Ast::Bool(clauses) => {
                for (occur, clause) in clauses {
                    if *occur != Occur::MustNot {
                        self.collect(clause);
                    }
                }
            }
            Ast::BoolPrefix(query) => {
                // Every word a term, the last also a prefix.
                let mut last = None;
                for_each_word(&query.text, &mut |word: &str| {
                    last = Some(word.to_lowercase());
                });
                text_words(&query.field, &query.text);
                if let Some(last) = last {
                    if let Ok(prefix) = Pattern::new(PatternKind::Prefix(last)) {
                        self.patterns.push((query.field.clone(), Arc::new(prefix)));
                    }
                }
            }
            Ast::Intervals { field, rule } => {
                let field = Some(field.clone());
                let mut texts = Vec::new();
                let mut patterns = Vec::new();
                rule.for_each_shown(
                    &mut |m: &quarry_query::intervals::MatchText| texts.push(m.text.clone()),
                    &mut |p: &Arc<Pattern>| patterns.push(p.clone()),
                );
                for text in texts {
                    text_words(&field, &text);
                }
                for pattern in patterns {
                    self.patterns.push((field.clone(), pattern));
                }
            }
            Ast::Range { .. } | Ast::TypedRange { .. } | Ast::Exists { .. } | Ast::All => {}
        }
    }

    /// Whether the query looks for `token` in any field.
    fn matches_any(&self, token: &str) -> bool {
        self.words.iter().any(|(_, word)| word == token)
            || self
                .patterns
                .iter()
                .any(|(_, pattern)| pattern.matches(token))
    }

    /// Whether the query looks for `token` in `field`, which it names as it is, by a pattern
    /// (`text*`), or as its `.keyword`.
    fn matches(&self, field: &str, token: &str) -> bool {
        let field_fits = |wanted: &Option<String>| {
            wanted.as_deref().is_none_or(|wanted| {
                glob_matches(wanted, field) || wanted.strip_suffix(".keyword") == Some(field)
            })
        };
        self.words
            .iter()
            .any(|(wanted, word)| word == token && field_fits(wanted))
            || self
                .patterns
                .iter()
                .any(|(wanted, pattern)| field_fits(wanted) && pattern.matches(token))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_search_tables_hold_every_key_about_hits() {
        use crate::es_search::SEARCH_BODY_OPTIONS;
        for key in HitView::BODY_KEYS {
            assert!(SEARCH_BODY_OPTIONS.contains(key), "{key}");
        }
        for api in ["_search", "get a document", "multi get"] {
            for param in HitView::PARAMS {
                let known = crate::es_api::params_of(api);
                assert!(known.contains(param), "{api}: {param}");
            }
        }
    }

    #[test]
    fn sources_keep_what_includes_name_and_excludes_do_not() {
        let filter = source_filter(
            &json!({"includes": ["client.*", "host"], "excludes": ["client.secret"]}),
        )
        .unwrap();
        assert!(filter.keeps("host"));
        assert!(filter.keeps("client.seq"));
        assert!(!filter.keeps("client.secret"));
        assert!(!filter.keeps("message"));
        // An object's name covers its fields.
        let filter = source_filter(&json!("client")).unwrap();
        assert!(filter.keeps("client.seq") && !filter.keeps("clientele"));
        assert!(!source_filter(&json!(false)).unwrap().enabled);
        assert!(source_filter(&json!({"fields": ["a"]})).is_err());
    }

    #[test]
    fn highlights_wrap_matching_words() {
        let mut view = HitView::default();
        view.read_body_key(
            "highlight",
            &json!({"fields": {"*": {}}, "pre_tags": ["@H@"], "post_tags": ["@/H@"], "fragment_size": 2147483647u64}),
        )
        .unwrap();
        let words = QueryWords::of(Some(
            &quarry_query::parser::parse("level:error OR timeout -debug").unwrap(),
        ));
        let flat =
            json!({"message": "Timeout: error while reading, debug on", "level": "error", "n": 5});
        let mut hit = json!({});
        view.render(&mut hit, flat.as_object().unwrap(), 0, &words);
        assert_eq!(
            hit["highlight"]["message"],
            json!(["@H@Timeout@/H@: error while reading, debug on"])
        );
        assert_eq!(hit["highlight"]["level"], json!(["@H@error@/H@"]));
        assert!(hit["highlight"].get("n").is_none());
        // Without require_field_match, a word is highlighted in every field; a field's own
        // highlight_query replaces the query's words; an ignored value is not highlighted.
        let mut view = HitView::default();
        view.read_body_key(
            "highlight",
            &json!({"require_field_match": false, "type": "plain", "fields": {
                "message": {"type": "unified"},
                "level": {"highlight_query": {"prefix": {"level": "wa"}}},
                "code": {},
            }}),
        )
        .unwrap();
        let flat = json!({"message": "an error", "level": "warn", "code": "error",
            "_ignored": ["code"]});
        let mut hit = json!({});
        view.render(&mut hit, flat.as_object().unwrap(), 0, &words);
        assert_eq!(
            hit["highlight"],
            json!({"message": ["an <em>error</em>"], "level": ["<em>warn</em>"]})
        );
        // `max_analyzer_offset`: only the first bytes are looked at; plain shows no more.
        let text = json!({"t": "The quick brown fox went to the forest and saw another fox."});
        let fox = QueryWords::of(Some(&quarry_query::parser::parse("quick fox").unwrap()));
        for (kind, shown) in [
            (
                "unified",
                "The <em>quick</em> brown fox went to the forest and saw another fox.",
            ),
            ("plain", "The <em>quick</em> "),
        ] {
            let mut view = HitView::default();
            view.read_body_key(
                "highlight",
                &json!({"type": kind, "fields": {"t": {"max_analyzer_offset": 10}}}),
            )
            .unwrap();
            let mut hit = json!({});
            view.render(&mut hit, text.as_object().unwrap(), 0, &fox);
            assert_eq!(hit["highlight"]["t"], json!([shown]), "{kind}");
        }
        // `index.highlight.max_analyzed_offset`: a longer text is refused unless its field
        // has offsets (and the highlighter reads them) or the request bounds the analysis.
        for (kind, offsets, options, refused) in [
            ("unified", false, json!({}), true),
            ("unified", true, json!({}), false),
            ("plain", true, json!({}), true),
            ("plain", false, json!({"max_analyzer_offset": 10}), false),
        ] {
            let mut view = HitView::default();
            view.read_body_key(
                "highlight",
                &json!({"type": kind, "fields": {"t": options}}),
            )
            .unwrap();
            let fields = if offsets {
                vec!["t".to_owned()]
            } else {
                vec![]
            };
            view.set_highlight_limit(Some(10), fields.into_iter().collect());
            let checked = view.check_highlight(text.as_object().unwrap(), "i");
            assert_eq!(checked.is_err(), refused, "{kind} {offsets} {options}");
        }
        assert!(view
            .read_body_key("highlight", &json!({"fields": {"*": {"type": "fancy"}}}))
            .is_err());
        assert!(view
            .read_body_key(
                "highlight",
                &json!({"fields": {"*": {"boundary_chars": "."}}})
            )
            .is_err());
        assert!(view
            .read_body_key("highlight", &json!({"order": "score"}))
            .is_err());
    }
}
