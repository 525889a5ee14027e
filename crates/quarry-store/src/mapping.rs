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
//!   for ranges and equality), `boolean`, `date` and `date_nanos` (values are strings in the
//!   field's `format`, `date.rs`, or epoch numbers read the same way; kept as sent, indexed as
//!   epoch milliseconds or nanoseconds, so terms and ranges in dates work), `ip` (IPv4 or
//!   IPv6 strings; kept as sent, IPv4 indexed as its u32 number so CIDR blocks and ranges
//!   work, IPv6 as its canonical text), `binary` and `geo_point` (kept, never indexed:
//!   `exists` works, other queries on them are errors), or `object` (`properties`, or none).
//! - A value that does not fit its type rejects its event at ingest (`Schema::check` in
//!   quarry-index), unless the field says `ignore_malformed: true` (numbers, booleans,
//!   dates, ips): then it is kept, not indexed, and the field named in the event's `_ignored`.
//! - `dynamic` (top level, or on an object for the fields under it): `true` (the default:
//!   unmapped fields are indexed by the dynamic defaults), `false` (kept and shown in hits,
//!   not indexed: queries on them match nothing) or `"strict"` (an event holding one is
//!   rejected at ingest, naming it). An object with `enabled: false` keeps everything under
//!   it unindexed. `strict_allow_templates` and `runtime` are refused.
//! - `keyword` fields take `ignore_above` (longer values are kept, not indexed); `text`
//!   fields take `fields: {"keyword": {"type": "keyword"}}`, the whole value Quarry answers as
//!   `X.keyword` anyway (with `ignore_above`, longer values are not found there); any other
//!   multi-field is refused.
//! - `type: nested` objects are taken and flattened like any object (there are no hidden
//!   sub-documents); a query, aggregation or sort on a field under one is refused
//!   (`Mapping::nested_parent`), as is the `nested` query itself.
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

pub use crate::date::DateFormats;
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

/// The longest value a `keyword` field indexes (Lucene's limit on one term, 32,766 bytes).
/// A longer value is rejected at ingest, with its line.
pub const MAX_KEYWORD_LEN: usize = 32_766;

/// The `ignore_above` of the `.keyword` view of a dynamically mapped string field
/// (Elasticsearch's dynamic mapping): a longer value is not one of its whole values.
pub const DYNAMIC_KEYWORD_IGNORE_ABOVE: u32 = 256;

/// How one field's values are indexed and kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FieldType {
    Text,
    Keyword,
    Number,
    Boolean,
    /// Indexed as epoch milliseconds (number terms), kept as sent.
    Date,
    /// Indexed as epoch nanoseconds (number terms), kept as sent.
    DateNanos,
    /// IPv4 indexed as a number (the address as a u32), IPv6 as its canonical text; kept as
    /// sent.
    Ip,
    /// Kept, never indexed (base64 bytes are not searched).
    Binary,
    /// Kept, never indexed: geo queries are refused.
    GeoPoint,
}

impl FieldType {
    /// Whether values are indexed at all (`binary` and `geo_point` are only kept).
    pub fn is_searchable(self) -> bool {
        !matches!(self, FieldType::Binary | FieldType::GeoPoint)
    }

    /// For a date type, nanoseconds per indexed unit (milliseconds or nanoseconds).
    pub fn date_unit_nanos(self) -> Option<i128> {
        match self {
            FieldType::Date => Some(1_000_000),
            FieldType::DateNanos => Some(1),
            _ => None,
        }
    }
}

/// Which number type a `Number` field was mapped as: the values it takes and how they are
/// indexed and aggregated, as Elasticsearch's doc values hold them. A value is read as a
/// number also from a string (`"403"`, Elasticsearch's `coerce`); the integer types truncate
/// a fraction and refuse what is out of their range; `float` and `half_float` keep their
/// own precision, `scaled_float` the nearest multiple of `1 / scaling_factor`. The value as
/// sent is what hits show.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NumberType {
    Long,
    Integer,
    Short,
    Byte,
    UnsignedLong,
    #[default]
    Double,
    Float,
    HalfFloat,
    ScaledFloat,
}

impl NumberType {
    pub const ALL: [NumberType; 9] = [
        NumberType::Long,
        NumberType::Integer,
        NumberType::Short,
        NumberType::Byte,
        NumberType::UnsignedLong,
        NumberType::Double,
        NumberType::Float,
        NumberType::HalfFloat,
        NumberType::ScaledFloat,
    ];

    pub fn name(self) -> &'static str {
        match self {
            NumberType::Long => "long",
            NumberType::Integer => "integer",
            NumberType::Short => "short",
            NumberType::Byte => "byte",
            NumberType::UnsignedLong => "unsigned_long",
            NumberType::Double => "double",
            NumberType::Float => "float",
            NumberType::HalfFloat => "half_float",
            NumberType::ScaledFloat => "scaled_float",
        }
    }

    /// The range of an integer type, `None` for the others.
    pub fn integer_range(self) -> Option<(i128, i128)> {
        Some(match self {
            NumberType::Long => (i64::MIN.into(), i64::MAX.into()),
            NumberType::Integer => (i32::MIN.into(), i32::MAX.into()),
            NumberType::Short => (i16::MIN.into(), i16::MAX.into()),
            NumberType::Byte => (i8::MIN.into(), i8::MAX.into()),
            NumberType::UnsignedLong => (0, u64::MAX.into()),
            _ => return None,
        })
    }
}

/// A `scaled_float`'s `scaling_factor`, kept as its f64 bits so mappings compare exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "f64", into = "f64")]
pub struct ScalingFactor(u64);

impl ScalingFactor {
    pub fn get(self) -> f64 {
        f64::from_bits(self.0)
    }
}

impl From<f64> for ScalingFactor {
    fn from(factor: f64) -> ScalingFactor {
        ScalingFactor(factor.to_bits())
    }
}

impl From<ScalingFactor> for f64 {
    fn from(factor: ScalingFactor) -> f64 {
        factor.get()
    }
}

/// What happens to a field no mapping names (Elasticsearch's `dynamic`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Dynamic {
    /// Indexed by the dynamic defaults.
    #[default]
    True,
    /// Kept (stored and shown in hits) but not indexed: queries on it match nothing.
    False,
    /// An event holding it is rejected at ingest.
    Strict,
}

impl Dynamic {
    fn parse(value: &Json, path: &str) -> Result<Dynamic, MappingError> {
        match value {
            Json::Bool(true) => Ok(Dynamic::True),
            Json::Bool(false) => Ok(Dynamic::False),
            Json::String(text) => match text.as_str() {
                "true" => Ok(Dynamic::True),
                "false" => Ok(Dynamic::False),
                "strict" => Ok(Dynamic::Strict),
                "strict_allow_templates" | "runtime" => Err(error(
                    path,
                    format!("dynamic {text:?} is not supported (Quarry has no dynamic templates or runtime fields)"),
                )),
                _ => Err(error(path, "expected true, false or \"strict\"")),
            },
            _ => Err(error(path, "expected true, false or \"strict\"")),
        }
    }

    fn to_es_json(self) -> Json {
        match self {
            Dynamic::True => Json::from("true"),
            Dynamic::False => Json::from("false"),
            Dynamic::Strict => Json::from("strict"),
        }
    }
}

/// An object field's own rules: `dynamic` for the fields under it, `enabled: false` (every
/// field under it kept, none indexed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectMapping {
    pub dynamic: Option<Dynamic>,
    pub enabled: bool,
    /// Mapped `type: nested`. Quarry keeps the object flattened like any other (there are
    /// no hidden sub-documents), so queries, aggregations and sorts on fields under it are
    /// refused (`Mapping::nested_parent`): Elasticsearch answers those only through `nested`
    /// queries and aggregations, and a plain query would match what it does not.
    #[serde(default)]
    pub nested: bool,
}

/// A text field's `fields: {"keyword": {"type": "keyword"}}` as mappings read before
/// `Mapping::multi_fields` stored it (on the field's own rules); still read from a tenant's
/// settings, never written by a new mapping.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeywordSubfield {
    pub ignore_above: Option<u32>,
}

/// A multi-field (`fields` in a field's mapping, like `title.raw`): another name for a view
/// of its parent's values that Quarry indexes anyway, so it costs no index of its own. A
/// query, aggregation, sort or highlight on the multi-field is answered from the parent
/// (quarry-query's `field_names.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum MultiField {
    /// `{"type": "keyword"}`: the parent's whole values, which Quarry answers as
    /// `parent.keyword`.
    Whole { ignore_above: Option<u32> },
    /// `{"type": "text"}` analyzed as the parent is: the parent's tokens. `offsets` is the
    /// multi-field's own `index_options: offsets` (or a `term_vector` with offsets), which
    /// frees its highlights from `index.highlight.max_analyzed_offset` as the parent's would.
    Tokens { offsets: bool },
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
    /// Date types: the formats string values are read in.
    #[serde(default)]
    pub format: DateFormats,
    /// Number, boolean, date and ip types: a value that does not fit is kept but not
    /// indexed (and its field named in `_ignored`) instead of rejecting the event.
    #[serde(default)]
    pub ignore_malformed: bool,
    /// Keyword: values longer than this many chars are kept but not indexed.
    #[serde(default)]
    pub ignore_above: Option<u32>,
    /// Text: the `keyword` multi-field it declares.
    #[serde(default)]
    pub keyword_subfield: Option<KeywordSubfield>,
    /// Number: the type it was mapped as.
    #[serde(default)]
    pub number_type: NumberType,
    /// `scaled_float`: values are indexed as the nearest multiple of `1 / factor`.
    #[serde(default)]
    pub scaling_factor: Option<ScalingFactor>,
    /// Text: positions between the items of an array (`None`: 100, Elasticsearch's default),
    /// so that a phrase does not match across two of them.
    #[serde(default)]
    pub position_increment_gap: Option<u32>,
    /// Text: mapped with offsets (`index_options: offsets`, or a `term_vector` with
    /// offsets), which Elasticsearch's highlighters read instead of analyzing the text: a
    /// highlight of such a field is not bound by `index.highlight.max_analyzed_offset`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub offsets: bool,
}

/// Positions between the items of a text array unless a mapping says otherwise (as in
/// Elasticsearch): a phrase with a slop under it never spans two items.
pub const POSITION_INCREMENT_GAP: u32 = 100;

impl FieldMapping {
    pub fn new(ty: FieldType) -> FieldMapping {
        FieldMapping {
            ty,
            index: ty.is_searchable(),
            stored: true,
            doc_values: true,
            norms: ty == FieldType::Text,
            analyzer: AnalyzerName::Standard,
            format: DateFormats::default(),
            ignore_malformed: false,
            ignore_above: None,
            keyword_subfield: None,
            number_type: NumberType::default(),
            scaling_factor: None,
            position_increment_gap: None,
            offsets: false,
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
    /// `dynamic` for fields no object says it for; `None`: true.
    #[serde(default)]
    pub dynamic: Option<Dynamic>,
    /// Object fields with rules of their own, by dotted name.
    #[serde(default)]
    pub objects: BTreeMap<String, ObjectMapping>,
    /// `constant_keyword` fields and their one value. Such a field is a keyword in `fields`;
    /// an event may hold only that value there, and a query on it matches every event or
    /// none, as the value answers it (quarry-query's `query.rs`), as in Elasticsearch.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub constants: BTreeMap<String, String>,
    /// `flat_object` fields (OpenSearch's): the object is kept as sent, and every value under
    /// it (arrays flattened, numbers and booleans as their JSON text) is a keyword, found under
    /// its dotted path and under the object's own name (`flat_root`, quarry-index's segment).
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub flat_objects: BTreeSet<String>,
    /// A mapped field's `meta`: strings about it for clients (a unit, a metric type), shown
    /// by `_mapping` and `_field_caps`, changing nothing in how it is indexed.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub meta: BTreeMap<String, BTreeMap<String, String>>,
    /// `completion` fields: keywords (a string or a list of them) that the completion
    /// suggester completes (quarry-server's `es_suggest.rs`).
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub completions: BTreeSet<String>,
    /// Multi-fields by their dotted name (`title.raw`); the parent is the name before the
    /// last dot.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub multi_fields: BTreeMap<String, MultiField>,
}

/// The field naming, per event, the fields whose values were kept but not indexed
/// (`ignore_malformed`, `ignore_above`), as Elasticsearch's `_ignored`.
pub const IGNORED_FIELD: &str = "_ignored";

/// A document's sequence number and version, where not 1 (quarry-server's documents.rs).
pub const SEQ_FIELD: &str = "_seq_no";
pub const VERSION_FIELD: &str = "_version";

/// How a document sent through the Elasticsearch API gave its time, where its `_source`
/// could not show it again from the event's time alone (quarry-server's live.rs).
pub const TIME_AS_SENT_FIELD: &str = "_time_as_sent";

/// Names every event may hold whatever `dynamic` says: `_id` is the document id Elasticsearch
/// clients send beside the document (quarry-server splices it in), found by its index, and
/// the bookkeeping fields above; `_ignored` is written by indexing.
const ALWAYS_DYNAMIC: [&str; 5] = [
    "_id",
    SEQ_FIELD,
    VERSION_FIELD,
    TIME_AS_SENT_FIELD,
    IGNORED_FIELD,
];

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

impl Mapping {
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
            && self.default_search_fields.is_empty()
            && self.dynamic.is_none()
            && self.objects.is_empty()
            && self.flat_objects.is_empty()
    }

    /// Whether every unmapped field is dynamic (true): no `dynamic` or object rules.
    pub fn all_dynamic(&self) -> bool {
        self.dynamic.is_none_or(|d| d == Dynamic::True) && self.objects.is_empty()
    }

    /// What `dynamic` says for the unmapped field `name`: that of the innermost object
    /// holding it that says (an object with `enabled: false` holds everything under it kept,
    /// not indexed), else the mapping's.
    pub fn dynamic_for(&self, name: &str) -> Dynamic {
        if self.all_dynamic() || ALWAYS_DYNAMIC.contains(&name) {
            return Dynamic::True;
        }
        if self.objects.get(name).is_some_and(|o| !o.enabled) {
            return Dynamic::False;
        }
        let mut prefix = name;
        while let Some(dot) = prefix.rfind('.') {
            prefix = &prefix[..dot];
            if let Some(object) = self.objects.get(prefix) {
                if !object.enabled {
                    return Dynamic::False;
                }
                if let Some(dynamic) = object.dynamic {
                    return dynamic;
                }
            }
        }
        self.dynamic.unwrap_or_default()
    }

    /// The `nested` object holding field `name` (the outermost), if any: queries and
    /// aggregations on such a field are refused (`ObjectMapping::nested`).
    pub fn nested_parent<'n>(&self, name: &'n str) -> Option<&'n str> {
        if self.objects.values().all(|o| !o.nested) {
            return None;
        }
        name.match_indices('.')
            .map(|(dot, _)| &name[..dot])
            .find(|prefix| self.objects.get(*prefix).is_some_and(|o| o.nested))
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
            if !MAPPING_KEYS.contains(&key.as_str()) {
                return Err(error(
                    &here,
                    format!("unknown key (expected {})", MAPPING_KEYS.join(", ")),
                ));
            }
            match key.as_str() {
                "default_search_fields" => {
                    mapping.default_search_fields = string_list(value, &here)?;
                }
                "_source" => {
                    for (key, value) in object(value, &here)? {
                        let here = join(&here, key);
                        if !SOURCE_KEYS.contains(&key.as_str()) {
                            return Err(error(&here, "unknown key (expected `excludes`)"));
                        }
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
                "properties" => read_properties(value, &here, "", &mut mapping)?,
                "dynamic" => mapping.dynamic = Some(Dynamic::parse(value, &here)?),
                _ => {
                    return Err(error(
                        &here,
                        "unknown key (expected `properties`, `dynamic`, `default_search_fields`, \
                         `_source`)",
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

    /// The rules for the field `name`: its exact entry, a keyword at or under a
    /// `flat_object`, else the longest matching pattern.
    pub fn rules(&self, name: &str) -> Option<&FieldMapping> {
        if let Some(rules) = self.fields.get(name) {
            return Some(rules);
        }
        if self.flat_root(name).is_some() {
            static FLAT_VALUE: OnceLock<FieldMapping> = OnceLock::new();
            return Some(FLAT_VALUE.get_or_init(|| FieldMapping::new(FieldType::Keyword)));
        }
        self.fields
            .iter()
            .filter(|(pattern, _)| pattern.contains('*') && glob_matches(pattern, name))
            // Longest first; equal lengths: the smallest pattern (the map's order) first.
            .max_by(|a, b| a.0.len().cmp(&b.0.len()).then(b.0.cmp(a.0)))
            .map(|(_, rules)| rules)
    }

    /// The parent of multi-field `name` and what `name` shows of it: one of
    /// `multi_fields`, or the `keyword` multi-field of a text field mapped before those.
    pub fn multi_field<'n>(&self, name: &'n str) -> Option<(&'n str, MultiField)> {
        let (parent, _) = name.rsplit_once('.')?;
        if let Some(&multi) = self.multi_fields.get(name) {
            return Some((parent, multi));
        }
        let legacy = self.fields.get(parent)?.keyword_subfield?;
        (name.ends_with(".keyword") && !self.fields.contains_key(name)).then_some((
            parent,
            MultiField::Whole {
                ignore_above: legacy.ignore_above,
            },
        ))
    }

    /// The field whose whole values `name` stands for, and the most characters a value it
    /// holds may have (a keyword's `ignore_above`): a keyword multi-field, or `X.keyword` where
    /// that is not mapped itself. `X.keyword` of a dynamic `X` holds values up to
    /// `DYNAMIC_KEYWORD_IGNORE_ABOVE` characters, as Elasticsearch's dynamic mapping (which
    /// `_mapping` shows); of a mapped `X` (Quarry's own reading, which Elasticsearch has
    /// not), every value.
    pub fn whole_values<'n>(&self, name: &'n str) -> Option<(&'n str, Option<u32>)> {
        if let Some((parent, multi)) = self.multi_field(name) {
            return match multi {
                MultiField::Whole { ignore_above } => Some((parent, ignore_above)),
                MultiField::Tokens { .. } => None,
            };
        }
        let parent = name.strip_suffix(".keyword").filter(|p| !p.is_empty())?;
        if self.rules(name).is_some() {
            return None;
        }
        let limit = match self.rules(parent) {
            Some(_) => None,
            None => Some(DYNAMIC_KEYWORD_IGNORE_ABOVE),
        };
        Some((parent, limit))
    }

    /// The field whose values answer `name` in sorts, aggregations and hits: a
    /// multi-field's parent, or `X` for `X.keyword` where that is not mapped itself (the
    /// whole values of `X`, which Quarry keeps as `X`'s values).
    pub fn values_field<'n>(&self, name: &'n str) -> &'n str {
        if let Some((parent, _)) = self.multi_field(name) {
            return parent;
        }
        match name.strip_suffix(".keyword") {
            Some(parent) if !parent.is_empty() && self.rules(name).is_none() => parent,
            _ => name,
        }
    }

    /// The `flat_object` field that `name` is or is under, if any.
    pub fn flat_root<'n>(&self, name: &'n str) -> Option<&'n str> {
        if self.flat_objects.is_empty() {
            return None;
        }
        if self.flat_objects.contains(name) {
            return Some(name);
        }
        name.match_indices('.')
            .map(|(dot, _)| &name[..dot])
            .find(|prefix| self.flat_objects.contains(*prefix))
    }

    /// The one value of a `constant_keyword` field.
    pub fn constant(&self, name: &str) -> Option<&str> {
        self.constants.get(name).map(String::as_str)
    }

    /// This mapping with `update`'s fields added. A field already mapped must be mapped the
    /// same way: blocks already written cannot change.
    pub fn merged(&self, update: &Mapping) -> Result<Mapping, MappingError> {
        let mut merged = self.clone();
        for (name, rules) in &update.fields {
            // A `keyword` multi-field read by an older Quarry sits on the rules themselves.
            let unlike = |old: &FieldMapping| {
                let legacy = old.keyword_subfield.is_some() && rules.keyword_subfield.is_none();
                let old = FieldMapping {
                    keyword_subfield: if legacy { None } else { old.keyword_subfield },
                    ..*old
                };
                old != *rules
            };
            match merged.fields.get(name) {
                Some(old) if unlike(old) => {
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
        // `dynamic` may change: it decides only about fields not seen yet.
        if update.dynamic.is_some() {
            merged.dynamic = update.dynamic;
        }
        for (name, object) in &update.objects {
            merged.objects.insert(name.clone(), *object);
        }
        for (name, value) in &update.constants {
            match merged.constants.get(name) {
                Some(old) if old != value => {
                    return Err(error(
                        &format!("properties.{name}.value"),
                        format!("the constant_keyword field already has the value {old:?}"),
                    ))
                }
                _ => {
                    merged.constants.insert(name.clone(), value.clone());
                }
            }
        }
        merged
            .flat_objects
            .extend(update.flat_objects.iter().cloned());
        merged
            .completions
            .extend(update.completions.iter().cloned());
        // Multi-fields are views of their parents' own index: they may be added or changed.
        for (name, multi) in &update.multi_fields {
            merged.multi_fields.insert(name.clone(), *multi);
        }
        // Metadata may change: it is about the field, not how it is indexed.
        for (name, meta) in &update.meta {
            merged.meta.insert(name.clone(), meta.clone());
        }
        Ok(merged)
    }

    /// The mapping a search over two indexes reads fields by: `merged`, except that a field
    /// both map as numbers of different types (`long` here, `double` there) is read as a
    /// `double`, its values as sent, as Elasticsearch widens such a field across indices.
    pub fn union(&self, other: &Mapping) -> Result<Mapping, MappingError> {
        let mut this = self.clone();
        let mut other = other.clone();
        for (name, theirs) in other.fields.iter_mut() {
            let Some(mine) = this.fields.get_mut(name) else {
                continue;
            };
            if mine.ty == FieldType::Number && theirs.ty == FieldType::Number && mine != theirs {
                for rules in [mine, theirs] {
                    rules.number_type = NumberType::Double;
                    rules.scaling_factor = None;
                }
            }
        }
        this.merged(&other)
    }

    /// The mapping as an Elasticsearch-style document (what `GET /{index}/_mapping` shows).
    pub fn to_es_json(&self) -> Json {
        let mut properties: serde_json::Map<String, Json> = self
            .fields
            .keys()
            .map(|name| (name.clone(), self.field_to_es_json(name)))
            .collect();
        for (name, object) in &self.objects {
            properties.insert(name.clone(), object.to_es_json());
        }
        for name in &self.flat_objects {
            properties.insert(name.clone(), serde_json::json!({"type": "flat_object"}));
        }
        let mut document = serde_json::Map::new();
        if let Some(dynamic) = self.dynamic.filter(|&d| d != Dynamic::True) {
            document.insert("dynamic".into(), dynamic.to_es_json());
        }
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

impl Mapping {
    /// Mapped field `name` as Elasticsearch shows it (a `constant_keyword` with its value).
    pub fn field_to_es_json(&self, name: &str) -> Json {
        let mut shown = match (self.constants.get(name), self.fields.get(name)) {
            (Some(value), _) => serde_json::json!({"type": "constant_keyword", "value": value}),
            (None, Some(_)) if self.completions.contains(name) => {
                serde_json::json!({"type": "completion", "analyzer": "simple"})
            }
            (None, Some(rules)) => rules.to_es_json(),
            (None, None) => return Json::Null,
        };
        if let Some(meta) = self.meta.get(name) {
            shown["meta"] = serde_json::json!(meta);
        }
        let prefix = format!("{name}.");
        for (full, multi) in self.multi_fields.range(prefix.clone()..) {
            let Some(own) = full.strip_prefix(&prefix) else {
                break;
            };
            if own.contains('.') {
                continue;
            }
            if !shown.get("fields").is_some_and(Json::is_object) {
                shown["fields"] = serde_json::json!({});
            }
            shown["fields"][own] = multi.to_es_json();
        }
        shown
    }
}

impl MultiField {
    /// The multi-field as Elasticsearch shows it under its parent's `fields`.
    pub fn to_es_json(self) -> Json {
        match self {
            MultiField::Whole { ignore_above } => {
                let mut shown = serde_json::json!({"type": "keyword"});
                if let Some(limit) = ignore_above {
                    shown["ignore_above"] = limit.into();
                }
                shown
            }
            MultiField::Tokens { offsets } => {
                let mut shown = serde_json::json!({"type": "text"});
                if offsets {
                    shown["index_options"] = "offsets".into();
                }
                shown
            }
        }
    }
}

impl ObjectMapping {
    /// The object's own rules as Elasticsearch shows them (its fields apart).
    pub fn to_es_json(&self) -> Json {
        let mut shown = serde_json::Map::new();
        let ty = if self.nested { "nested" } else { "object" };
        shown.insert("type".into(), ty.into());
        if let Some(dynamic) = self.dynamic {
            shown.insert("dynamic".into(), dynamic.to_es_json());
        }
        if !self.enabled {
            shown.insert("enabled".into(), false.into());
        }
        Json::Object(shown)
    }
}

impl FieldMapping {
    pub fn to_es_json(&self) -> Json {
        let mut out = serde_json::Map::new();
        let ty = match self.ty {
            FieldType::Text => "text",
            FieldType::Keyword => "keyword",
            FieldType::Number => self.number_type.name(),
            FieldType::Boolean => "boolean",
            FieldType::Date => "date",
            FieldType::DateNanos => "date_nanos",
            FieldType::Ip => "ip",
            FieldType::Binary => "binary",
            FieldType::GeoPoint => "geo_point",
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
        if self.format != defaults.format {
            out.insert("format".into(), self.format.name().into());
        }
        if self.ignore_malformed {
            out.insert("ignore_malformed".into(), true.into());
        }
        if let Some(limit) = self.ignore_above {
            out.insert("ignore_above".into(), limit.into());
        }
        if self.offsets {
            out.insert("index_options".into(), "offsets".into());
        }
        if let Some(gap) = self.position_increment_gap {
            out.insert("position_increment_gap".into(), gap.into());
        }
        if let Some(factor) = self.scaling_factor {
            out.insert("scaling_factor".into(), factor.get().into());
        }
        if let Some(subfield) = self.keyword_subfield {
            let mut keyword = serde_json::Map::new();
            keyword.insert("type".into(), "keyword".into());
            if let Some(limit) = subfield.ignore_above {
                keyword.insert("ignore_above".into(), limit.into());
            }
            out.insert(
                "fields".into(),
                serde_json::json!({ "keyword": Json::Object(keyword) }),
            );
        }
        Json::Object(out)
    }
}

fn read_properties(
    value: &Json,
    path: &str,
    prefix: &str,
    mapping: &mut Mapping,
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
        if keys.contains_key("properties")
            || keys
                .get("type")
                .is_some_and(|t| t == "object" || t == "nested")
        {
            let mut rules = ObjectMapping {
                dynamic: None,
                enabled: true,
                nested: false,
            };
            let known = options_in(FIELD_OPTIONS, "object");
            for (key, value) in keys {
                let at = join(&here, key);
                if !known.contains(&key.as_str()) {
                    return Err(unknown_key(&at, "an object field", known));
                }
                match key.as_str() {
                    "properties" => {}
                    "type" if value == "object" => {}
                    "type" if value == "nested" => rules.nested = true,
                    "type" => return Err(error(&at, "a field with `properties` is an object")),
                    "dynamic" => rules.dynamic = Some(Dynamic::parse(value, &at)?),
                    "enabled" => {
                        rules.enabled = value
                            .as_bool()
                            .ok_or_else(|| error(&at, "expected true or false"))?
                    }
                    _ => {
                        return Err(error(
                            &at,
                            "an object field holds only `properties`, `type`, `dynamic` and \
                             `enabled`",
                        ))
                    }
                }
            }
            let nested = keys.get("properties");
            if !rules.enabled && nested.is_some_and(|p| p.as_object().is_none_or(|p| !p.is_empty()))
            {
                return Err(error(
                    &join(&here, "enabled"),
                    "an object with `enabled: false` keeps everything under it unindexed; it \
                     cannot map fields",
                ));
            }
            if rules.dynamic.is_some() || !rules.enabled || rules.nested || nested.is_none() {
                mapping.objects.insert(full.clone(), rules);
            }
            if let Some(nested) = nested {
                read_properties(nested, &join(&here, "properties"), &full, mapping)?;
            }
            continue;
        }
        match keys.get("type").and_then(Json::as_str) {
            Some("flat_object") => {
                let unsupported: Vec<String> = keys
                    .iter()
                    .filter(|(key, _)| *key != "type")
                    .map(|(key, value)| match value {
                        Json::String(text) => format!("{key} : {text}"),
                        other => format!("{key} : {other}"),
                    })
                    .collect();
                if !unsupported.is_empty() {
                    return Err(error(
                        &here,
                        format!(
                            "Mapping definition for [{name}] has unsupported parameters:  [{}]",
                            unsupported.join(", ")
                        ),
                    ));
                }
                mapping.flat_objects.insert(full);
            }
            Some("completion") => {
                let known = options_in(FIELD_OPTIONS, "completion");
                for (key, given) in keys {
                    if !known.contains(&key.as_str()) {
                        return Err(unknown_key(&join(&here, key), "a completion field", known));
                    }
                    match (key.as_str(), given.as_str()) {
                        ("type", _) => {}
                        // Inputs are matched by a case-insensitive prefix of the whole value,
                        // as the `simple` analyzer (the default) reads them.
                        ("analyzer" | "search_analyzer", Some("simple")) => {}
                        _ => {
                            return Err(error(
                                &join(&here, key),
                                "unknown or unsupported key for a completion field (known: \
                                 type, analyzer: simple)",
                            ))
                        }
                    }
                }
                mapping.completions.insert(full.clone());
                mapping
                    .fields
                    .insert(full, FieldMapping::new(FieldType::Keyword));
            }
            Some("constant_keyword") => {
                let mut value = None;
                let known = options_in(FIELD_OPTIONS, "constant_keyword");
                for (key, given) in keys {
                    if !known.contains(&key.as_str()) {
                        return Err(unknown_key(
                            &join(&here, key),
                            "a constant_keyword field",
                            known,
                        ));
                    }
                    match (key.as_str(), given) {
                        ("type", _) => {}
                        ("value", Json::String(text)) => value = Some(text.clone()),
                        ("value", Json::Number(number)) => value = Some(number.to_string()),
                        ("value", _) => return Err(error(&join(&here, key), "expected a string")),
                        _ => {
                            return Err(error(
                                &join(&here, key),
                                "unknown or unsupported key for a constant_keyword field \
                                 (known: type, value)",
                            ))
                        }
                    }
                }
                let value = value
                    .ok_or_else(|| error(&here, "a constant_keyword field needs its `value`"))?;
                mapping.constants.insert(full.clone(), value);
                mapping
                    .fields
                    .insert(full, FieldMapping::new(FieldType::Keyword));
            }
            _ => {
                let mut keys = keys.clone();
                if let Some(meta) = keys.remove("meta") {
                    mapping
                        .meta
                        .insert(full.clone(), read_meta(&meta, &join(&here, "meta"))?);
                }
                let multi = keys.remove("fields");
                let rules = read_field(&keys, &here)?;
                if let Some(multi) = multi {
                    let at = join(&here, "fields");
                    for (name, multi) in read_multi_fields(&multi, &at, &rules)? {
                        mapping.multi_fields.insert(format!("{full}.{name}"), multi);
                    }
                }
                mapping.fields.insert(full, rules);
            }
        }
    }
    Ok(())
}

/// Every option a mapped field takes, by type (issue 27, item 0: walked by
/// `crates/quarry/tests/es_options/`, each honoured or a no-op with its reason); any other is
/// refused by name. `fields` (multi-fields) and `meta` are read beside the field's own.
pub const FIELD_OPTIONS: &[(&str, &[&str])] = &[
    (
        "text",
        &with_indexed::<15>(&[
            "norms",
            "analyzer",
            "search_analyzer",
            "position_increment_gap",
            "index_phrases",
            "index_prefixes",
            "term_vector",
            "index_options",
            "fields",
        ]),
    ),
    ("keyword", &with_indexed::<8>(&["ignore_above", "fields"])),
    ("long", &with_indexed::<8>(&["ignore_malformed", "coerce"])),
    (
        "scaled_float",
        &with_indexed::<9>(&["ignore_malformed", "coerce", "scaling_factor"]),
    ),
    ("date", &with_indexed::<8>(&["format", "ignore_malformed"])),
    ("ip", &with_indexed::<7>(&["ignore_malformed"])),
    ("boolean", &with_indexed::<7>(&["ignore_malformed"])),
    ("binary", &KEPT_OPTIONS),
    ("geo_point", &KEPT_OPTIONS),
    ("completion", &["type", "analyzer", "search_analyzer"]),
    ("constant_keyword", &["type", "value"]),
    ("object", &["type", "properties", "dynamic", "enabled"]),
];

/// The options of every field kept (`meta` too, read beside them).
const KEPT_OPTIONS: [&str; 5] = ["type", "stored", "doc_values", "store", "meta"];

/// `KEPT_OPTIONS`, `index` and `own`: the options of an indexed field type (`N` in all).
const fn with_indexed<const N: usize>(own: &[&'static str]) -> [&'static str; N] {
    let mut all = [""; N];
    let mut i = 0;
    while i < KEPT_OPTIONS.len() {
        all[i] = KEPT_OPTIONS[i];
        i += 1;
    }
    all[i] = "index";
    i += 1;
    let mut j = 0;
    while j < own.len() {
        all[i + j] = own[j];
        j += 1;
    }
    assert!(i + j == N, "N is the count of the options");
    all
}

/// Every option of a multi-field, by its type (`fields: {name: {...}}`).
pub const MULTI_FIELD_OPTIONS: &[(&str, &[&str])] = &[
    (
        "keyword",
        &["type", "ignore_above", "doc_values", "store", "index"],
    ),
    (
        "text",
        &[
            "type",
            "analyzer",
            "search_analyzer",
            "index_options",
            "term_vector",
            "norms",
        ],
    ),
];

/// The keys of a mapping itself (`mappings: {...}`), and of its `_source`.
pub const MAPPING_KEYS: &[&str] = &["properties", "dynamic", "default_search_fields", "_source"];
pub const SOURCE_KEYS: &[&str] = &["excludes", "enabled"];

/// The options of `table`'s entry `name`.
fn options_in(table: &'static [(&str, &[&'static str])], name: &str) -> &'static [&'static str] {
    table
        .iter()
        .find(|(n, _)| *n == name)
        .map_or(&[], |(_, keys)| *keys)
}

/// The options of a field of type `ty` (`FIELD_OPTIONS`, each number type as `long` but
/// `scaled_float`, `date_nanos` as `date`, `match_only_text` as `text`).
fn field_options(ty: FieldType, number: NumberType) -> &'static [&'static str] {
    let name = match ty {
        FieldType::Text => "text",
        FieldType::Keyword => "keyword",
        FieldType::Number if number == NumberType::ScaledFloat => "scaled_float",
        FieldType::Number => "long",
        FieldType::Date | FieldType::DateNanos => "date",
        FieldType::Ip => "ip",
        FieldType::Boolean => "boolean",
        FieldType::Binary => "binary",
        FieldType::GeoPoint => "geo_point",
    };
    options_in(FIELD_OPTIONS, name)
}

/// The error for a key at `at` that `what` (`a text field`) does not take.
fn unknown_key(at: &str, what: &str, known: &[&str]) -> MappingError {
    error(
        at,
        format!(
            "unknown or unsupported key for {what} (known: {})",
            known.join(", ")
        ),
    )
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
        "date" => FieldType::Date,
        "date_nanos" => FieldType::DateNanos,
        "ip" => FieldType::Ip,
        "binary" => FieldType::Binary,
        "geo_point" => FieldType::GeoPoint,
        number if NumberType::ALL.iter().any(|t| t.name() == number) => FieldType::Number,
        other => {
            return Err(error(
                &ty_path,
                format!(
                    "unsupported type {other:?} (supported: text, match_only_text, keyword, \
                     constant_keyword, completion, boolean, date, date_nanos, ip, binary, \
                     geo_point, object, nested, flat_object, {})",
                    NumberType::ALL.map(NumberType::name).join(", ")
                ),
            ))
        }
    };
    let is_date = ty.date_unit_nanos().is_some();
    let mut rules = FieldMapping::new(ty);
    if let Some(number) = NumberType::ALL.into_iter().find(|t| t.name() == ty_name) {
        rules.number_type = number;
    }
    let known = field_options(ty, rules.number_type);
    for (key, value) in keys {
        let here = join(path, key);
        if !known.contains(&key.as_str()) {
            return Err(unknown_key(&here, &format!("a {ty_name} field"), known));
        }
        let flag = || {
            value
                .as_bool()
                .ok_or_else(|| error(&here, "expected true or false"))
        };
        match key.as_str() {
            "type" => {}
            "index" if ty.is_searchable() => rules.index = flag()?,
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
            "format" if is_date => {
                let text = value
                    .as_str()
                    .ok_or_else(|| error(&here, "expected a string"))?;
                rules.format = DateFormats::parse(text).map_err(|e| error(&here, e))?;
            }
            "ignore_malformed"
                if is_date
                    || matches!(ty, FieldType::Ip | FieldType::Number | FieldType::Boolean) =>
            {
                rules.ignore_malformed = flag()?
            }
            "scaling_factor" if rules.number_type == NumberType::ScaledFloat => {
                let factor = value
                    .as_f64()
                    .filter(|f| f.is_finite() && *f > 0.0)
                    .ok_or_else(|| error(&here, "expected a positive number"))?;
                rules.scaling_factor = Some(factor.into());
            }
            "coerce" if ty == FieldType::Number => {
                if !flag()? {
                    return Err(error(
                        &here,
                        "only `coerce: true` (the default) is supported: number fields read \
                         numbers written as strings",
                    ));
                }
            }
            "ignore_above" if ty == FieldType::Keyword => {
                rules.ignore_above = Some(limit(value, &here)?)
            }
            // Lucene's extra index structures for faster prefix and phrase queries (and the
            // fast-vector highlighter): the answers are the same without them, which Quarry
            // gives from its term dictionary and positions.
            "position_increment_gap" if ty == FieldType::Text => {
                let gap = value.as_u64().and_then(|n| u32::try_from(n).ok());
                rules.position_increment_gap =
                    Some(gap.ok_or_else(|| error(&here, "expected a whole number of positions"))?)
            }
            "index_phrases" if ty == FieldType::Text => {
                flag()?;
            }
            "index_prefixes" if ty == FieldType::Text => {
                let options = value
                    .as_object()
                    .ok_or_else(|| error(&here, "expected an object (min_chars, max_chars)"))?;
                let chars = |name: &str, default: u64, most: u64| -> Result<u64, MappingError> {
                    match options.get(name) {
                        None => Ok(default),
                        Some(v) => v.as_u64().filter(|n| *n <= most).ok_or_else(|| {
                            error(&join(&here, name), format!("expected 0 to {most}"))
                        }),
                    }
                };
                let (min, max) = (chars("min_chars", 2, 19)?, chars("max_chars", 5, 20)?);
                if let Some(other) = options
                    .keys()
                    .find(|k| *k != "min_chars" && *k != "max_chars")
                {
                    return Err(error(
                        &join(&here, other),
                        "unknown key (known: min_chars, max_chars)",
                    ));
                }
                if min > max || min == 0 {
                    return Err(error(
                        &here,
                        "min_chars must be at least 1 and at most max_chars",
                    ));
                }
            }
            "term_vector" if ty == FieldType::Text => {
                const KINDS: [&str; 7] = [
                    "no",
                    "yes",
                    "with_positions",
                    "with_offsets",
                    "with_positions_offsets",
                    "with_positions_payloads",
                    "with_positions_offsets_payloads",
                ];
                if !value.as_str().is_some_and(|v| KINDS.contains(&v)) {
                    return Err(error(
                        &here,
                        format!("expected one of {}", KINDS.join(", ")),
                    ));
                }
                rules.offsets |= value.as_str().is_some_and(|v| v.contains("offsets"));
            }
            "index_options" if ty == FieldType::Text => {
                if value != "positions" && value != "offsets" {
                    return Err(error(
                        &here,
                        "only `positions` is supported: text fields keep positions for phrases",
                    ));
                }
                rules.offsets |= value == "offsets";
            }
            _ => return Err(unknown_key(&here, &format!("a {ty_name} field"), known)),
        }
    }
    if rules.number_type == NumberType::ScaledFloat && rules.scaling_factor.is_none() {
        return Err(error(path, "a scaled_float field needs `scaling_factor`"));
    }
    Ok(rules)
}

/// A field's `fields` (its multi-fields), each a view Quarry answers from `parent`'s own
/// index (`MultiField`): a keyword of a text or keyword field, a text of a text field
/// analyzed as the parent is. Anything that would need an index of its own is refused.
fn read_multi_fields(
    value: &Json,
    path: &str,
    parent: &FieldMapping,
) -> Result<Vec<(String, MultiField)>, MappingError> {
    let mut read = Vec::new();
    for (name, field) in object(value, path)? {
        let here = join(path, name);
        if name.is_empty() || name.contains('.') {
            return Err(error(
                &here,
                "a multi-field's name may not be empty or hold `.`",
            ));
        }
        let keys = object(field, &here)?;
        let ty = keys.get("type").and_then(Json::as_str);
        let multi = match (ty, parent.ty) {
            (Some("keyword"), FieldType::Text | FieldType::Keyword) => {
                let mut ignore_above = None;
                let known = options_in(MULTI_FIELD_OPTIONS, "keyword");
                for (key, value) in keys {
                    let at = join(&here, key);
                    if !known.contains(&key.as_str()) {
                        return Err(unknown_key(&at, "a keyword multi-field", known));
                    }
                    match key.as_str() {
                        "type" => {}
                        "ignore_above" => ignore_above = Some(limit(value, &at)?),
                        // Elasticsearch's own storage choices: the answers are the same.
                        "doc_values" | "store" | "index" if value == true => {}
                        _ => {
                            return Err(error(
                                &at,
                                "unknown or unsupported key for a keyword multi-field (known: \
                                 type, ignore_above)",
                            ))
                        }
                    }
                }
                MultiField::Whole { ignore_above }
            }
            (Some("text" | "match_only_text"), FieldType::Text) => {
                let mut offsets = false;
                let known = options_in(MULTI_FIELD_OPTIONS, "text");
                for (key, value) in keys {
                    let at = join(&here, key);
                    if !known.contains(&key.as_str()) {
                        return Err(unknown_key(&at, "a text multi-field", known));
                    }
                    match key.as_str() {
                        "type" => {}
                        "analyzer" | "search_analyzer"
                            if value.as_str() == Some(parent.analyzer.as_str()) => {}
                        "analyzer" | "search_analyzer" => {
                            return Err(error(
                                &at,
                                format!(
                                    "a text multi-field is analyzed as its parent is \
                                     ({:?}): Quarry answers it from the parent's tokens",
                                    parent.analyzer.as_str()
                                ),
                            ))
                        }
                        "index_options" => match value.as_str() {
                            Some("offsets") => offsets = true,
                            Some("docs" | "freqs" | "positions") => {}
                            _ => {
                                return Err(error(
                                    &at,
                                    "expected docs, freqs, positions or offsets",
                                ))
                            }
                        },
                        "term_vector" => match value.as_str() {
                            Some(v) if v.contains("offsets") => offsets = true,
                            Some("no" | "yes" | "with_positions") => {}
                            _ => return Err(error(&at, "expected a term_vector option")),
                        },
                        "norms" if value.as_bool() == Some(parent.norms) => {}
                        _ => {
                            return Err(error(
                                &at,
                                "unknown or unsupported key for a text multi-field (known: \
                                 type, analyzer, search_analyzer, index_options, term_vector, \
                                 norms as the parent's)",
                            ))
                        }
                    }
                }
                MultiField::Tokens { offsets }
            }
            _ => {
                return Err(error(
                    &join(&here, "type"),
                    format!(
                        "a multi-field of a {} field is not supported: Quarry answers a \
                         multi-field from its parent's index, a keyword of a text or keyword \
                         field or a text of a text field",
                        format!("{:?}", parent.ty).to_lowercase()
                    ),
                ))
            }
        };
        read.push((name.clone(), multi));
    }
    Ok(read)
}

/// A field's `meta`: at most 5 entries, each a string of at most 50 chars (Elasticsearch's
/// bounds).
fn read_meta(value: &Json, path: &str) -> Result<BTreeMap<String, String>, MappingError> {
    let entries = object(value, path)?;
    if entries.len() > 5 {
        return Err(error(path, "at most 5 entries"));
    }
    entries
        .iter()
        .map(|(key, value)| match value {
            Json::String(text) if text.chars().count() <= 50 && key.chars().count() <= 20 => {
                Ok((key.clone(), text.clone()))
            }
            _ => Err(error(
                &join(path, key),
                "expected a string of at most 50 chars (keys: at most 20)",
            )),
        })
        .collect()
}

/// A length limit: a whole number of chars.
fn limit(value: &Json, path: &str) -> Result<u32, MappingError> {
    value
        .as_u64()
        .and_then(|n| u32::try_from(n).ok())
        .ok_or_else(|| error(path, "expected a whole number of chars"))
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
    use serde_json::json;

    #[test]
    fn nested_objects_are_flattened_and_name_their_fields() {
        let mapping = Mapping::from_json(
            r#"{"properties": {"n": {"type": "nested", "properties": {"v": {"type": "long"},
                "inner": {"type": "nested"}}}, "o": {"properties": {"w": {"type": "long"}}}}}"#,
        )
        .unwrap();
        assert_eq!(mapping.nested_parent("n.v"), Some("n"));
        assert_eq!(mapping.nested_parent("n.inner.x"), Some("n"));
        assert_eq!(mapping.nested_parent("n"), None);
        assert_eq!(mapping.nested_parent("o.w"), None);
        assert_eq!(mapping.nested_parent("nv"), None);
        assert_eq!(mapping.rules("n.v").map(|r| r.ty), Some(FieldType::Number));
        let shown = mapping.to_es_json();
        assert_eq!(shown["properties"]["n"]["type"], "nested");
        assert_eq!(
            Mapping::from_value(&shown).unwrap().nested_parent("n.v"),
            Some("n")
        );
    }

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
    fn reads_dynamic_dates_ips_and_objects() {
        let mapping = Mapping::from_json(
            r#"{"dynamic": "false", "properties": {
                "d": {"type": "date", "format": "yyyy-MM-dd||epoch_second", "ignore_malformed": true},
                "n": {"type": "date_nanos"},
                "ip": {"type": "ip"},
                "b": {"type": "binary", "doc_values": true},
                "g": {"type": "geo_point"},
                "k": {"type": "keyword", "ignore_above": 10},
                "t": {"type": "text", "fields": {"keyword": {"type": "keyword", "ignore_above": 256}}},
                "o": {"type": "object", "dynamic": "strict", "properties": {"i": {"type": "keyword"}}},
                "free": {"type": "object", "dynamic": true},
                "off": {"type": "object", "enabled": false},
                "bare": {"type": "object"}
            }}"#,
        )
        .unwrap();
        let d = mapping.rules("d").unwrap();
        assert_eq!((d.ty, d.ignore_malformed), (FieldType::Date, true));
        assert_eq!(d.format.name(), "yyyy-MM-dd||epoch_second");
        assert_eq!(mapping.rules("n").unwrap().ty, FieldType::DateNanos);
        assert!(!mapping.rules("b").unwrap().index);
        assert_eq!(mapping.rules("k").unwrap().ignore_above, Some(10));
        assert_eq!(
            mapping.multi_field("t.keyword"),
            Some((
                "t",
                MultiField::Whole {
                    ignore_above: Some(256)
                }
            ))
        );
        let cases = [
            ("x", Dynamic::False),
            ("o.x", Dynamic::Strict),
            ("o.deeper.x", Dynamic::Strict),
            ("free.x", Dynamic::True),
            ("off", Dynamic::False),
            ("off.x.y", Dynamic::False),
            ("bare.x", Dynamic::False),
            ("_id", Dynamic::True),
            ("_ignored", Dynamic::True),
        ];
        for (name, dynamic) in cases {
            assert_eq!(mapping.dynamic_for(name), dynamic, "{name}");
        }
        assert_eq!(Mapping::default().dynamic_for("x"), Dynamic::True);
        // What GET shows reads back as the same mapping.
        let shown = mapping.to_es_json();
        assert_eq!(shown["dynamic"], "false");
        assert_eq!(Mapping::from_value(&shown).unwrap(), mapping);
        for (value, dynamic) in [
            ("true", Dynamic::True),
            ("false", Dynamic::False),
            ("\"strict\"", Dynamic::Strict),
            ("\"true\"", Dynamic::True),
        ] {
            let mapping = Mapping::from_json(&format!(r#"{{"dynamic": {value}}}"#)).unwrap();
            assert_eq!(mapping.dynamic, Some(dynamic), "{value}");
        }
    }

    #[test]
    fn reads_multi_fields_as_views_of_their_parents() {
        let mapping = Mapping::from_json(
            r#"{"properties": {
                "t": {"type": "text", "fields": {
                    "raw": {"type": "keyword", "ignore_above": 20},
                    "fvh": {"type": "text", "term_vector": "with_positions_offsets"},
                    "plain": {"type": "text", "analyzer": "standard"}
                }},
                "k": {"type": "keyword", "fields": {"also": {"type": "keyword"}}}
            }}"#,
        )
        .unwrap();
        let whole = |ignore_above| MultiField::Whole { ignore_above };
        assert_eq!(mapping.multi_field("t.raw"), Some(("t", whole(Some(20)))));
        assert_eq!(
            mapping.multi_field("t.fvh"),
            Some(("t", MultiField::Tokens { offsets: true }))
        );
        assert_eq!(
            mapping.multi_field("t.plain"),
            Some(("t", MultiField::Tokens { offsets: false }))
        );
        assert_eq!(mapping.multi_field("k.also"), Some(("k", whole(None))));
        assert_eq!(mapping.multi_field("t.keyword"), None);
        assert_eq!(mapping.multi_field("t"), None);
        assert_eq!(
            mapping.to_es_json()["properties"]["t"]["fields"],
            json!({
                "fvh": {"type": "text", "index_options": "offsets"},
                "plain": {"type": "text"},
                "raw": {"type": "keyword", "ignore_above": 20}
            })
        );
        // A mapping read before multi-fields were kept apart still answers `t.keyword`, and
        // the same mapping sent again is no change.
        let mut old = Mapping::from_json(r#"{"properties": {"t": {"type": "text"}}}"#).unwrap();
        if let Some(rules) = old.fields.get_mut("t") {
            rules.keyword_subfield = Some(KeywordSubfield { ignore_above: None });
        }
        assert_eq!(old.multi_field("t.keyword"), Some(("t", whole(None))));
        let again = Mapping::from_json(
            r#"{"properties": {"t": {"type": "text", "fields": {"keyword": {"type": "keyword"}}}}}"#,
        )
        .unwrap();
        let merged = old.merged(&again).unwrap();
        assert_eq!(merged.multi_field("t.keyword"), Some(("t", whole(None))));
    }

    #[test]
    fn reads_constants_flat_objects_and_meta() {
        let mapping = Mapping::from_json(
            r#"{"properties": {
                "genre": {"type": "constant_keyword", "value": 7},
                "labels": {"type": "flat_object"},
                "latency": {"type": "long", "meta": {"unit": "ms"}}
            }}"#,
        )
        .unwrap();
        assert_eq!(mapping.constant("genre"), Some("7"));
        assert_eq!(
            mapping.rules("genre").map(|r| r.ty),
            Some(FieldType::Keyword)
        );
        for (name, root) in [("labels", Some("labels")), ("labels.a.b", Some("labels"))] {
            assert_eq!(mapping.flat_root(name), root);
            assert_eq!(mapping.rules(name).map(|r| r.ty), Some(FieldType::Keyword));
        }
        assert_eq!(mapping.flat_root("labelsx.a"), None);
        let shown = mapping.to_es_json();
        assert_eq!(
            shown["properties"]["genre"],
            json!({"type": "constant_keyword", "value": "7"})
        );
        assert_eq!(
            shown["properties"]["labels"],
            json!({"type": "flat_object"})
        );
        assert_eq!(
            shown["properties"]["latency"]["meta"],
            json!({"unit": "ms"})
        );
        // Round trip through the settings file, and growth.
        let again: Mapping =
            serde_json::from_str(&serde_json::to_string(&mapping).unwrap()).unwrap();
        assert_eq!(again, mapping);
        let other = Mapping::from_json(
            r#"{"properties": {"genre": {"type": "constant_keyword", "value": "8"}}}"#,
        )
        .unwrap();
        assert!(mapping.merged(&other).is_err());
        for (text, message) in [
            (
                r#"{"properties": {"d": {"type": "flat_object", "analyzer": "standard"}}}"#,
                "Mapping definition for [d] has unsupported parameters:  [analyzer : standard]",
            ),
            (
                r#"{"properties": {"g": {"type": "constant_keyword"}}}"#,
                "needs its `value`",
            ),
            (
                r#"{"properties": {"l": {"type": "long", "meta": {"unit": 1}}}}"#,
                "at most 50 chars",
            ),
        ] {
            let error = Mapping::from_json(text).unwrap_err();
            assert!(error.message.contains(message), "{text}: {error}");
        }
    }

    #[test]
    fn refuses_what_it_cannot_honour_by_name() {
        let cases = [
            (
                r#"{"dynamic": "strict_allow_templates"}"#,
                "dynamic",
                "strict_allow_templates",
            ),
            (r#"{"dynamic": "runtime"}"#, "dynamic", "runtime"),
            (r#"{"dynamic": 1}"#, "dynamic", "strict"),
            (
                r#"{"properties": {"d": {"type": "date", "format": "dd/MM/yyyy"}}}"#,
                "properties.d.format",
                "dd/MM/yyyy",
            ),
            (
                r#"{"properties": {"d": {"type": "date", "locale": "fr"}}}"#,
                "properties.d.locale",
                "unknown",
            ),
            (
                r#"{"properties": {"k": {"type": "keyword", "null_value": "x"}}}"#,
                "properties.k.null_value",
                "unknown",
            ),
            (
                r#"{"properties": {"t": {"type": "text", "fields": {"raw": {"type": "keyword", "normalizer": "lower"}}}}}"#,
                "properties.t.fields.raw.normalizer",
                "unsupported",
            ),
            (
                r#"{"properties": {"t": {"type": "text", "fields": {"en": {"type": "text", "analyzer": "stop"}}}}}"#,
                "properties.t.fields.en.analyzer",
                "analyzed as its parent",
            ),
            (
                r#"{"properties": {"k": {"type": "keyword", "fields": {"t": {"type": "text"}}}}}"#,
                "properties.k.fields.t.type",
                "keyword field",
            ),
            (
                r#"{"properties": {"n": {"type": "long", "fields": {"k": {"type": "keyword"}}}}}"#,
                "properties.n.fields.k.type",
                "number field",
            ),
            (
                r#"{"properties": {"b": {"type": "binary", "index": true}}}"#,
                "properties.b.index",
                "unknown",
            ),
            (
                r#"{"properties": {"n": {"type": "nested", "include_in_parent": true}}}"#,
                "properties.n.include_in_parent",
                "object",
            ),
            (
                r#"{"properties": {"o": {"enabled": false, "properties": {"a": {"type": "long"}}}}}"#,
                "properties.o.enabled",
                "cannot map",
            ),
            (
                r#"{"properties": {"o": {"type": "object", "store": true}}}"#,
                "properties.o.store",
                "object",
            ),
        ];
        for (text, path, word) in cases {
            let e = Mapping::from_json(text).unwrap_err();
            assert_eq!(e.path, path, "{text}: {e}");
            assert!(e.message.contains(word), "{text}: {e}");
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
