//! Elasticsearch's query DSL, compiled to the same tree as the query language (`Ast`), so a
//! JSON query and its Lucene-syntax twin run the same plan.
//!
//! | DSL | becomes |
//! |---|---|
//! | `match_all` | every event |
//! | `match` (`operator` `or`/`and`) | each whitespace-separated word of the text, ORed or ANDed |
//! | `match_phrase` | a phrase |
//! | `multi_match` (`fields` with `^` boosts, `type` `phrase` and `bool_prefix` too) | `match` (or `match_phrase`, `match_bool_prefix`) per field, ORed |
//! | `match_bool_prefix` (`operator`, `minimum_should_match`, `analyzer`, `fuzziness`) | the text analyzed as the field is: each token a term, the last a prefix scored 1 (`Ast::BoolPrefix`, planned in query.rs) |
//! | `query_string`, `simple_query_string` | the query language itself (parser.rs) |
//! | `term`, `terms` | a string: the exact whole value (`field:="v"`; on `X.keyword`, as that view holds it: query.rs); a number: that number; a bool: its token |
//! | `range` (`gt`/`gte`/`lt`/`lte`, `format`, `time_zone`) | a numeric range, or on `@timestamp`/`_time` a time range with date math (`now-15m`, `now/d`) and epoch milliseconds for numbers; on a date or ip field the bounds are read in its type when planned (query.rs) |
//! | `exists` | `_exists_:field` |
//! | `prefix`, `wildcard`, `regexp`, `fuzzy` | the pattern (pattern.rs) over the field's tokens |
//! | `bool` (`must`, `filter`, `should`, `must_not`, `minimum_should_match`: a count or percentage) | the query language's `+`, `+`, ` `, `-`; at least N of the `should` clauses as `Ast::AtLeast` |
//! | `intervals` (`match`, `all_of`, `any_of` with `mode`/`ordered`, `max_gaps`, `filter`; `prefix`, `wildcard`, `regexp`, `fuzzy`) | `Ast::Intervals` (intervals.rs); `use_field` and `script` filters are refused |
//!
//! `lenient: true` (on `match`, `multi_match` and the query strings) wraps the query in
//! `Ast::Lenient`: a clause that cannot be asked of its field (a value that does not fit its
//! type, a field that is not searchable) matches nothing instead of being an error.
//!
//! `_name` (beside any query's options or among a field's) wraps the query in `Ast::Named`:
//! each hit lists the named clauses it matches (`HitEvent::matched`, `matched_queries`).
//!
//! `@timestamp` is a name for `_time` everywhere. An unknown query type, an unknown option or
//! a value of the wrong type is an error naming its JSON path (`query.bool.must[1].range`),
//! never a query silently read as something else.

use crate::parser::{parse_classic, Ast, ClassicOptions, Occur, TIME_FIELD};
use crate::pattern::{Pattern, PatternKind};
use crate::range::{Number, NumericRange};
use crate::time::{parse_time_in, Rounding, Zone};
use quarry_store::mapping::AnalyzerName;

/// The date formats a `range` on the time may name (`a||b` for several): what its bounds are
/// read as anyway (epoch numbers, ISO 8601 times and dates). Any other is refused: read as
/// these, its bounds could mean other times.
const DATE_FORMATS: &[&str] = &[
    "epoch_millis",
    "epoch_second",
    "strict_date_optional_time",
    "strict_date_optional_time_nanos",
    "date_optional_time",
    "strict_date_time",
    "date_time",
    "strict_date",
    "date",
    "yyyy-MM-dd",
    "strict_date_hour_minute_second",
    "yyyy-MM-dd'T'HH:mm:ss",
    "yyyy-MM-dd HH:mm:ss",
    "yyyy-MM-dd HH:mm:ss.SSS",
];
use serde_json::{Map, Value};
use std::ops::Bound;
use std::sync::Arc;

/// Elasticsearch's name for the event time.
pub const TIMESTAMP_ALIAS: &str = "@timestamp";

/// A DSL error: the JSON path of the part at fault and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {reason}")]
pub struct DslError {
    pub path: String,
    pub reason: String,
    /// Elasticsearch's type for the error when it is not a parse error
    /// (`query_shard_exception`: the query is well formed but the field cannot answer it).
    pub kind: Option<&'static str>,
}

/// `match_bool_prefix`: the text analyzed (as its field is, or by `analyzer`), each token a
/// term clause (within `fuzziness` edits) and the last a prefix scored a constant 1, joined by
/// `operator` or `minimum_should_match` (query.rs plans it, as only the field's mapping says
/// how to analyze the text).
#[derive(Debug, Clone, PartialEq)]
pub struct BoolPrefix {
    /// `None`: every text field, each on its own.
    pub field: Option<String>,
    pub text: String,
    /// The analyzer to use instead of the field's.
    pub analyzer: Option<AnalyzerName>,
    /// `Must`: every clause (`operator: and`); `Should`: any, or `minimum_should_match`.
    pub operator: Occur,
    pub minimum_should_match: Option<MinimumShouldMatch>,
    /// Edits allowed in the term clauses (not the prefix, as in Elasticsearch).
    pub fuzziness: Option<Fuzziness>,
    /// How many first characters of a fuzzy term must be as written.
    pub prefix_length: usize,
}

/// Elasticsearch's `minimum_should_match` of optional clauses: a count (`3`, or `-1`: all
/// but one) or a percentage of them (`75%`, `-25%`), truncated toward zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MinimumShouldMatch {
    Count(i64),
    Percent(i64),
}

impl MinimumShouldMatch {
    /// How many of `optional` clauses must match (possibly more than there are: then none
    /// matches, as in Elasticsearch).
    pub fn of(self, optional: usize) -> usize {
        let n = optional as i64;
        let required = match self {
            MinimumShouldMatch::Count(count) if count < 0 => n + count,
            MinimumShouldMatch::Count(count) => count,
            MinimumShouldMatch::Percent(percent) if percent < 0 => n + n * percent / 100,
            MinimumShouldMatch::Percent(percent) => n * percent / 100,
        };
        usize::try_from(required.max(0)).unwrap_or(usize::MAX)
    }
}

/// Elasticsearch's `fuzziness`: a number of edits, or `AUTO` (`AUTO:low,high`: none for
/// terms shorter than `low` characters, one below `high`, else two).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fuzziness {
    Edits(u8),
    Auto { low: usize, high: usize },
}

impl Fuzziness {
    /// The edits allowed for `term`.
    pub fn distance(self, term: &str) -> u8 {
        match self {
            Fuzziness::Edits(edits) => edits,
            Fuzziness::Auto { low, high } => match term.chars().count() {
                n if n < low => 0,
                n if n < high => 1,
                _ => 2,
            },
        }
    }
}

fn error(path: &str, reason: impl Into<String>) -> DslError {
    DslError {
        path: path.to_owned(),
        reason: reason.into(),
        kind: None,
    }
}

/// The field a DSL name stands for: `@timestamp` is `_time`.
pub fn field_name(name: &str) -> &str {
    if name == TIMESTAMP_ALIAS {
        TIME_FIELD
    } else {
        name
    }
}

/// The options each query type takes, every one honoured or a no-op that cannot change the
/// answer here; any other is refused by name. The compiler checks a body against its
/// type's list (`options_of`), and a test (crates/quarry/tests/es_options/) asks each with
/// and without it. `multi_match.bool_prefix` is `multi_match` of `type: bool_prefix`;
/// `terms` takes field lists besides its `boost`; `intervals` rules check their own.
pub const QUERY_OPTIONS: &[(&str, &[&str])] = &[
    ("match_all", &["boost"]),
    ("ids", &["values", "boost"]),
    (
        "bool",
        &[
            "must",
            "filter",
            "should",
            "must_not",
            "minimum_should_match",
            "boost",
        ],
    ),
    (
        "match",
        &[
            "query",
            "operator",
            "boost",
            "lenient",
            "zero_terms_query",
            "auto_generate_synonyms_phrase_query",
            "fuzzy_transpositions",
        ],
    ),
    // A match or match_phrase is analyzed as its field is: another `analyzer` is refused
    // (`match_bool_prefix` takes one).
    ("match_phrase", &["query", "boost", "slop"]),
    ("match_bool_prefix", BOOL_PREFIX_OPTIONS),
    (
        "multi_match",
        &[
            "query", "fields", "type", "operator", "boost", "lenient", "slop",
        ],
    ),
    (
        "multi_match.bool_prefix",
        &[
            "query",
            "fields",
            "type",
            "operator",
            "boost",
            "lenient",
            "analyzer",
            "minimum_should_match",
            "fuzziness",
            "prefix_length",
            "max_expansions",
            "fuzzy_transpositions",
            "fuzzy_rewrite",
        ],
    ),
    ("query_string", &QUERY_STRING_OPTIONS),
    ("simple_query_string", &SIMPLE_QUERY_STRING_OPTIONS),
    ("term", &["value", "boost", "case_insensitive"]),
    ("terms", &["boost"]),
    (
        "range",
        &[
            "gt",
            "gte",
            "lt",
            "lte",
            "from",
            "to",
            "include_lower",
            "include_upper",
            "format",
            "boost",
            "time_zone",
        ],
    ),
    (
        "terms_set",
        &["terms", "minimum_should_match_field", "boost"],
    ),
    ("exists", &["field", "boost"]),
    ("prefix", &["value", "boost", "rewrite", "case_insensitive"]),
    (
        "wildcard",
        &["value", "wildcard", "boost", "rewrite", "case_insensitive"],
    ),
    (
        "regexp",
        &[
            "value",
            "boost",
            "rewrite",
            "case_insensitive",
            "flags",
            "max_determinized_states",
        ],
    ),
    (
        "fuzzy",
        &[
            "value",
            "boost",
            "rewrite",
            "fuzziness",
            "max_expansions",
            "prefix_length",
            "transpositions",
        ],
    ),
    ("constant_score", &["filter", "boost"]),
];

const QUERY_STRING_OPTIONS: [&str; 16] = [
    "query",
    "default_operator",
    "default_field",
    "fields",
    "time_zone",
    "phrase_slop",
    "analyze_wildcard",
    "auto_generate_synonyms_phrase_query",
    "enable_position_increments",
    "boost",
    "max_determinized_states",
    "rewrite",
    "type",
    "allow_leading_wildcard",
    "lenient",
    "minimum_should_match",
];

/// `query_string`'s options and `flags` (only `ALL`).
const SIMPLE_QUERY_STRING_OPTIONS: [&str; 17] = {
    let mut all = [""; 17];
    let mut i = 0;
    while i < QUERY_STRING_OPTIONS.len() {
        all[i] = QUERY_STRING_OPTIONS[i];
        i += 1;
    }
    all[16] = "flags";
    all
};

/// The options query type `kind` takes (`QUERY_OPTIONS`).
fn options_of(kind: &str) -> &'static [&'static str] {
    QUERY_OPTIONS
        .iter()
        .find(|(k, _)| *k == kind)
        .map_or(&[], |(_, keys)| *keys)
}

/// The longest `regexp` value, in UTF-16 units (Elasticsearch's `index.max_regex_length`).
const MAX_REGEX_LENGTH: usize = 1000;

/// Compiles one DSL query object (the value of a request's `query`); `path` names it in
/// errors, `now` is what `now` means in date math (ns since the epoch).
pub fn compile(query: &Value, path: &str, now: i64) -> Result<Ast, DslError> {
    let object = query
        .as_object()
        .ok_or_else(|| error(path, "expected a query object like {\"match_all\": {}}"))?;
    let mut entries = object.iter();
    let (Some((kind, body)), None) = (entries.next(), entries.next()) else {
        return Err(error(path, "expected exactly one query type in the object"));
    };
    if let Some((name, body)) = without_name(body) {
        let mut query = Map::new();
        query.insert(kind.clone(), body);
        return Ok(Ast::Named {
            name,
            inner: Box::new(compile(&Value::Object(query), path, now)?),
        });
    }
    let path = format!("{path}.{kind}");
    let path = path.as_str();
    match kind.as_str() {
        // Every document, each scored 1 (times a boost), as in Elasticsearch.
        "match_all" => {
            if let Some(options) = body.as_object() {
                check_keys(options, options_of("match_all"), path)?;
            }
            Ok(Ast::Constant {
                inner: Box::new(Ast::All),
                score: boost_of(body.get("boost"), path)?,
            })
        }
        "ids" => {
            let options = body
                .as_object()
                .ok_or_else(|| error(path, "expected {\"values\": [ids]}"))?;
            check_keys(options, options_of("ids"), path)?;
            let values = options
                .get("values")
                .and_then(Value::as_array)
                .ok_or_else(|| error(path, "values: expected a list of ids"))?;
            let mut clauses = Vec::with_capacity(values.len());
            for value in values {
                let id = match value {
                    Value::String(id) => id.clone(),
                    Value::Number(n) => n.to_string(),
                    other => return Err(error(path, format!("values: {other} is not an id"))),
                };
                let exact = Ast::Exact {
                    field: crate::doc_id::ID_FIELD.to_owned(),
                    value: id,
                };
                clauses.push((Occur::Should, exact));
            }
            if clauses.is_empty() {
                return Ok(nothing());
            }
            // Each document found scores its boost, as Elasticsearch's ids query.
            Ok(Ast::Constant {
                inner: Box::new(Ast::Bool(clauses)),
                score: boost_of(options.get("boost"), path)?,
            })
        }
        "match_none" => Ok(nothing()),
        "bool" => boosted(compile_bool(body, path, now)?, body.get("boost"), path),
        "match" => {
            let (field, options) = field_and_options(body, path, "query")?;
            let text = text_of(options.get("query"), path)?;
            let operator = operator_of(&options, path, "operator")?;
            check_keys(&options, options_of("match"), path)?;
            // `all` would match every document when the text has no words; Quarry's match
            // matches none then (the default, `none`).
            if let Some(zero) = options.get("zero_terms_query").filter(|z| *z != "none") {
                return Err(error(
                    path,
                    format!("unsupported: zero_terms_query {zero} (only none)"),
                ));
            }
            let field = field_name(field);
            let words = Ast::Match {
                field: field.to_owned(),
                words: Box::new(words(Some(field), &text, operator)),
                text,
            };
            let words = boosted(words, options.get("boost"), path)?;
            with_lenient(words, &options, path)
        }
        "match_phrase" => {
            let (field, options) = field_and_options(body, path, "query")?;
            check_keys(&options, options_of("match_phrase"), path)?;
            let phrase = Ast::Phrase {
                field: Some(field_name(field).to_owned()),
                text: text_of(options.get("query"), path)?,
                slop: slop_of(&options, path, "slop")?,
            };
            boosted(phrase, options.get("boost"), path)
        }
        "match_bool_prefix" => {
            let (field, options) = field_and_options(body, path, "query")?;
            check_keys(&options, options_of("match_bool_prefix"), path)?;
            let text = text_of(options.get("query"), path)?;
            let query = bool_prefix(Some(field_name(field).to_owned()), text, &options, path)?;
            boosted(Ast::BoolPrefix(Box::new(query)), options.get("boost"), path)
        }
        "multi_match" => {
            let options = body
                .as_object()
                .ok_or_else(|| error(path, "expected an object with query and fields"))?;
            let kind = match options.get("type") {
                None => "best_fields",
                Some(Value::String(kind)) => kind.as_str(),
                Some(_) => return Err(error(path, "type: expected a string")),
            };
            let known: &[&str] = match kind {
                "best_fields" | "most_fields" | "cross_fields" | "phrase" => {
                    options_of("multi_match")
                }
                "bool_prefix" => {
                    // Elasticsearch's words for options a bool_prefix query has no use for.
                    for option in ["slop", "cutoff_frequency"] {
                        if options.contains_key(option) {
                            return Err(error(
                                path,
                                format!("[{option}] not allowed for type [bool_prefix]"),
                            ));
                        }
                    }
                    options_of("multi_match.bool_prefix")
                }
                other => return Err(error(path, format!("type {other:?} is not supported"))),
            };
            check_keys(options, known, path)?;
            let slop = slop_of(options, path, "slop")?;
            let text = text_of(options.get("query"), path)?;
            let operator = operator_of(options, path, "operator")?;
            // Each field with its `^` boost; `*` is every text field.
            let fields: Vec<(Option<String>, Option<f32>)> = match options.get("fields") {
                None => vec![(None, None)],
                Some(Value::Array(names)) => names
                    .iter()
                    .map(|n| {
                        let name = n
                            .as_str()
                            .ok_or_else(|| error(path, "fields must be strings"))?;
                        let (name, boost) = match name.split_once('^') {
                            Some((name, boost)) => {
                                let boost = boost
                                    .parse::<f32>()
                                    .ok()
                                    .filter(|b| b.is_finite() && *b >= 0.0);
                                let boost = boost.ok_or_else(|| {
                                    error(path, format!("fields: {n} has a bad boost"))
                                })?;
                                (name, Some(boost))
                            }
                            None => (name, None),
                        };
                        Ok(((name != "*").then(|| field_name(name).to_owned()), boost))
                    })
                    .collect::<Result<_, DslError>>()?,
                Some(_) => return Err(error(path, "fields must be a list of names")),
            };
            let mut per_field = Vec::with_capacity(fields.len());
            for (field, boost) in fields {
                let ast = match kind {
                    "phrase" => Ast::Phrase {
                        field,
                        text: text.clone(),
                        slop,
                    },
                    "bool_prefix" => {
                        Ast::BoolPrefix(Box::new(bool_prefix(field, text.clone(), options, path)?))
                    }
                    _ => words(field.as_deref(), &text, operator),
                };
                let ast = match boost {
                    Some(boost) if boost != 1.0 => Ast::Boost {
                        inner: Box::new(ast),
                        boost,
                    },
                    _ => ast,
                };
                per_field.push((Occur::Should, ast));
            }
            let ast = boosted(Ast::Bool(per_field), options.get("boost"), path)?;
            with_lenient(ast, options, path)
        }
        "query_string" | "simple_query_string" => {
            let options = body
                .as_object()
                .ok_or_else(|| error(path, "expected an object with a query"))?;
            query_string(kind == "simple_query_string", options, path, now)
        }
        "term" => {
            let (field, options) = field_and_options(body, path, "value")?;
            check_keys(&options, options_of("term"), path)?;
            let value = options
                .get("value")
                .ok_or_else(|| error(path, "expected a value"))?;
            let term = term(field, value, case_insensitive(&options, path)?, path)?;
            boosted(term, options.get("boost"), path)
        }
        "terms" => {
            let object = body
                .as_object()
                .ok_or_else(|| error(path, "expected {\"field\": [values]}"))?;
            let mut clauses = Vec::new();
            for (field, values) in object {
                if field == "boost" {
                    continue;
                }
                let values = values
                    .as_array()
                    .ok_or_else(|| error(path, format!("{field}: expected a list of values")))?;
                for value in values {
                    clauses.push((Occur::Should, term(field, value, false, path)?));
                }
            }
            if clauses.is_empty() {
                return Ok(nothing());
            }
            // A set of terms scores each match its boost, as Elasticsearch's terms query.
            Ok(Ast::Constant {
                inner: Box::new(Ast::Bool(clauses)),
                score: boost_of(object.get("boost"), path)?,
            })
        }
        "range" => {
            let (field, options) = field_and_options(body, path, "")?;
            // Each match scores its boost, as Elasticsearch's range query.
            let score = boost_of(options.get("boost"), path)?;
            Ok(Ast::Constant {
                inner: Box::new(range(field, options, path, now)?),
                score,
            })
        }
        "terms_set" => {
            let (field, options) = field_and_options(body, path, "terms")?;
            check_keys(&options, options_of("terms_set"), path)?;
            let terms = options
                .get("terms")
                .and_then(Value::as_array)
                .ok_or_else(|| error(path, "terms: expected a list of values"))?;
            let minimum = options
                .get("minimum_should_match_field")
                .and_then(Value::as_str)
                .ok_or_else(|| {
                    error(
                        path,
                        "minimum_should_match_field: expected a field name (Quarry runs no \
                         scripts)",
                    )
                })?;
            let clauses = terms
                .iter()
                .map(|value| term(field, value, false, path))
                .collect::<Result<Vec<Ast>, DslError>>()?;
            boosted(
                terms_set(clauses, field_name(minimum), path)?,
                options.get("boost"),
                path,
            )
        }
        "exists" => {
            if let Some(options) = body.as_object() {
                check_keys(options, options_of("exists"), path)?;
            }
            let field = body
                .get("field")
                .and_then(Value::as_str)
                .ok_or_else(|| error(path, "expected {\"field\": \"name\"}"))?;
            let exists = match field {
                // Every document has these metadata fields.
                "_index" | "_id" | "_seq_no" | "_version" | "_primary_term" => Ast::All,
                "_source" => {
                    return Err(DslError {
                        kind: Some("query_shard_exception"),
                        ..error(
                            path,
                            "field [_source] of type [_source] does not support exists queries",
                        )
                    })
                }
                field => Ast::Exists {
                    field: field_name(field).to_owned(),
                },
            };
            // Each match scores its boost, as Elasticsearch's exists query.
            Ok(Ast::Constant {
                inner: Box::new(exists),
                score: boost_of(body.get("boost"), path)?,
            })
        }
        "prefix" | "wildcard" | "regexp" | "fuzzy" => {
            let (field, options) = field_and_options(body, path, "value")?;
            let known = options_of(kind);
            check_keys(&options, known, path)?;
            // Options that would change what matches, honoured only at their defaults.
            for (option, default) in [
                ("flags", Value::from("ALL")),
                ("transpositions", Value::Bool(true)),
            ] {
                if options.get(option).is_some_and(|value| *value != default) {
                    return Err(error(
                        path,
                        format!("{option} other than {default} is not supported"),
                    ));
                }
            }
            if let Some(rewrite) = options.get("rewrite") {
                constant_rewrite(rewrite, path)?;
            }
            let value = match options.get("value").or_else(|| options.get("wildcard")) {
                Some(Value::String(value)) => value.clone(),
                _ => return Err(error(path, "expected a string value")),
            };
            // Elasticsearch's `index.max_regex_length` (its default; the setting is not taken).
            let length = value.encode_utf16().count();
            if kind == "regexp" && length > MAX_REGEX_LENGTH {
                return Err(error(
                    path,
                    format!(
                        "The length of regex [{length}] used in the Regexp Query request has exceeded the allowed maximum of [{MAX_REGEX_LENGTH}]. This maximum can be set by changing the [index.max_regex_length] index level setting."
                    ),
                ));
            }
            // As written: the pattern lowercases itself for tokens and keeps the case for
            // whole values (`X.keyword`, keyword fields), as Elasticsearch does.
            let kind = match kind.as_str() {
                "prefix" => PatternKind::Prefix(value),
                "wildcard" => PatternKind::wildcard_as_written(wildcard_chars(&value)),
                "regexp" => PatternKind::Regex(value),
                _ => {
                    let distance = match options.get("fuzziness") {
                        None => 2,
                        Some(fuzziness) => fuzziness_of(fuzziness, path)?.distance(&value),
                    };
                    PatternKind::Fuzzy {
                        term: value,
                        distance,
                        prefix_length: prefix_length_of(&options, path)?,
                    }
                }
            };
            let pattern = Pattern::as_written(kind, case_insensitive(&options, path)?)
                .map_err(|e| error(path, e.0))?;
            let pattern = Ast::Pattern {
                field: Some(field_name(field).to_owned()),
                pattern: Arc::new(pattern),
            };
            boosted(pattern, options.get("boost"), path)
        }
        "intervals" => intervals(body, path),
        "constant_score" => {
            let options = body
                .as_object()
                .ok_or_else(|| error(path, "expected {\"filter\": {...}}"))?;
            check_keys(options, options_of("constant_score"), path)?;
            let filter = options
                .get("filter")
                .ok_or_else(|| error(path, "expected a filter"))?;
            Ok(Ast::Constant {
                inner: Box::new(compile(filter, &format!("{path}.filter"), now)?),
                score: boost_of(options.get("boost"), path)?,
            })
        }
        other => Err(error(
            path,
            format!("query type [{other}] is not supported"),
        )),
    }
}

/// `intervals`: `{"field": {<rule>: {...}, "boost": n, "_name": s}}` (intervals.rs).
fn intervals(body: &Value, path: &str) -> Result<Ast, DslError> {
    let (field, options) = field_and_options(body, path, "")?;
    let mut rules = options
        .iter()
        .filter(|(k, _)| !matches!(k.as_str(), "boost" | "_name"));
    let (Some((kind, rule)), None) = (rules.next(), rules.next()) else {
        return Err(error(
            path,
            format!("{field}: expected exactly one rule (match, all_of, any_of, prefix, wildcard, regexp or fuzzy)"),
        ));
    };
    let rule = intervals_rule(kind, rule, &format!("{path}.{field}.{kind}"))?;
    let ast = Ast::Intervals {
        field: field_name(field).to_owned(),
        rule: Arc::new(rule),
    };
    boosted(ast, options.get("boost"), path)
}

/// Every option of each `intervals` rule, walked by `crates/quarry/tests/es_options/` as
/// `QUERY_OPTIONS` are; `use_field` and `script` (and any other) are refused by name.
pub const INTERVALS_RULE_OPTIONS: &[(&str, &[&str])] = &[
    (
        "match",
        &["query", "max_gaps", "ordered", "mode", "analyzer", "filter"],
    ),
    (
        "all_of",
        &["intervals", "max_gaps", "ordered", "mode", "filter"],
    ),
    ("any_of", &["intervals", "filter"]),
    ("prefix", &["prefix"]),
    ("wildcard", &["pattern"]),
    ("regexp", &["pattern", "case_insensitive", "flags"]),
    (
        "fuzzy",
        &["term", "fuzziness", "prefix_length", "transpositions"],
    ),
];

/// An intervals rule of type `kind` with options `body`; `path` names it in errors.
fn intervals_rule(kind: &str, body: &Value, path: &str) -> Result<IntervalsRule, DslError> {
    use crate::intervals::Rule;
    let options = body
        .as_object()
        .ok_or_else(|| error(path, "expected an object of options"))?;
    // Options Elasticsearch has that Quarry does not honour, refused by name.
    for option in ["use_field", "script"] {
        if options.contains_key(option) {
            return Err(error(path, format!("{option} is not supported")));
        }
    }
    let string = |key: &str| -> Result<String, DslError> {
        match options.get(key) {
            Some(Value::String(text)) => Ok(text.clone()),
            Some(_) => Err(error(path, format!("{key}: expected a string"))),
            None => Err(error(path, format!("expected {key}"))),
        }
    };
    let sub_rules = || -> Result<Vec<IntervalsRule>, DslError> {
        let list = options
            .get("intervals")
            .and_then(Value::as_array)
            .filter(|list| !list.is_empty())
            .ok_or_else(|| error(path, "intervals: expected a list of rules"))?;
        list.iter()
            .enumerate()
            .map(|(i, item)| {
                let item_path = format!("{path}.intervals[{i}]");
                let object = item
                    .as_object()
                    .filter(|o| o.len() == 1)
                    .ok_or_else(|| error(&item_path, "expected an object with one rule"))?;
                let (kind, body) = object.iter().next().expect("one rule, checked above");
                intervals_rule(kind, body, &format!("{item_path}.{kind}"))
            })
            .collect()
    };
    if let Some((_, known)) = INTERVALS_RULE_OPTIONS.iter().find(|(k, _)| *k == kind) {
        check_keys(options, known, path)?;
    }
    let rule = match kind {
        "match" => {
            let analyzer = analyzer_of(options, path)?;
            Rule::Leaf(crate::intervals::MatchText {
                text: string("query")?,
                analyzer,
                mode: intervals_mode(options, path)?,
                max_gaps: max_gaps_of(options, path)?,
            })
        }
        "all_of" => Rule::All {
            mode: intervals_mode(options, path)?,
            max_gaps: max_gaps_of(options, path)?,
            rules: sub_rules()?,
        },
        "any_of" => Rule::Any(sub_rules()?),
        "prefix" | "wildcard" | "regexp" | "fuzzy" => {
            let key = match kind {
                "prefix" => "prefix",
                "wildcard" | "regexp" => "pattern",
                _ => "term",
            };
            at_default(options, "flags", Value::from("ALL"), path)?;
            at_default(options, "transpositions", Value::Bool(true), path)?;
            let value = string(key)?;
            // As the `prefix`, `wildcard`, `regexp` and `fuzzy` queries read them: literals
            // lowercased as the field's tokens are, a regular expression as written.
            let kind = match kind {
                "prefix" => PatternKind::Prefix(value),
                "wildcard" => PatternKind::wildcard_as_written(wildcard_chars(&value)),
                "regexp" => PatternKind::Regex(value),
                _ => {
                    let fuzziness = match options.get("fuzziness") {
                        None => Fuzziness::Auto { low: 3, high: 6 },
                        Some(fuzziness) => fuzziness_of(fuzziness, path)?,
                    };
                    PatternKind::Fuzzy {
                        distance: fuzziness.distance(&value),
                        term: value,
                        prefix_length: prefix_length_of(options, path)?,
                    }
                }
            };
            let pattern = Pattern::as_written(kind, case_insensitive(options, path)?)
                .map_err(|e| error(path, e.0))?;
            return Ok(Rule::Pattern(Arc::new(pattern)));
        }
        other => {
            return Err(error(
                path,
                format!("intervals rule [{other}] is not supported"),
            ))
        }
    };
    let Some(filter) = options.get("filter") else {
        return Ok(rule);
    };
    let filter_path = format!("{path}.filter");
    let object = filter
        .as_object()
        .filter(|o| o.len() == 1)
        .ok_or_else(|| error(&filter_path, "expected an object with one relation"))?;
    let (name, filter_rule) = object.iter().next().expect("one relation, checked above");
    let relation_path = format!("{filter_path}.{name}");
    if name == "script" {
        return Err(error(&relation_path, "script filters are not supported"));
    }
    let relation = crate::intervals::Relation::ALL
        .iter()
        .find(|(known, _)| known == name)
        .map(|(_, relation)| *relation)
        .ok_or_else(|| error(&relation_path, format!("filter [{name}] is not supported")))?;
    let inner = filter_rule
        .as_object()
        .filter(|o| o.len() == 1)
        .ok_or_else(|| error(&relation_path, "expected an object with one rule"))?;
    let (inner_kind, inner_body) = inner.iter().next().expect("one rule, checked above");
    let filter = intervals_rule(
        inner_kind,
        inner_body,
        &format!("{relation_path}.{inner_kind}"),
    )?;
    Ok(Rule::Filtered {
        rule: Box::new(rule),
        relation,
        filter: Box::new(filter),
    })
}

type IntervalsRule = crate::intervals::Rule<crate::intervals::MatchText>;

/// `mode` (`ordered`, `unordered`, `unordered_no_overlap`) or the older `ordered` flag.
fn intervals_mode(
    options: &Map<String, Value>,
    path: &str,
) -> Result<crate::intervals::Mode, DslError> {
    use crate::intervals::Mode;
    let mode = match options.get("mode") {
        None => None,
        Some(Value::String(mode)) => Some(match mode.as_str() {
            "ordered" => Mode::Ordered,
            "unordered" => Mode::Unordered,
            "unordered_no_overlap" => Mode::UnorderedNoOverlap,
            other => {
                return Err(error(
                    path,
                    format!(
                    "mode [{other}] is not supported (ordered, unordered, unordered_no_overlap)"
                ),
                ))
            }
        }),
        Some(_) => return Err(error(path, "mode: expected a string")),
    };
    let ordered = match options.get("ordered") {
        None => None,
        Some(Value::Bool(true)) => Some(Mode::Ordered),
        Some(Value::Bool(false)) => Some(Mode::Unordered),
        Some(_) => return Err(error(path, "ordered: expected true or false")),
    };
    match (mode, ordered) {
        (Some(mode), Some(ordered)) if mode != ordered => {
            Err(error(path, "mode and ordered disagree; give mode only"))
        }
        (mode, ordered) => Ok(mode.or(ordered).unwrap_or(Mode::Unordered)),
    }
}

/// `max_gaps`: a whole number, or `-1` (the default) for no limit.
fn max_gaps_of(options: &Map<String, Value>, path: &str) -> Result<Option<u32>, DslError> {
    match options.get("max_gaps") {
        None => Ok(None),
        Some(value) => match value.as_i64() {
            Some(-1) => Ok(None),
            Some(n) => u32::try_from(n)
                .map(Some)
                .map_err(|_| error(path, "max_gaps: expected -1 or a whole number")),
            None => Err(error(path, "max_gaps: expected -1 or a whole number")),
        },
    }
}

/// `query_string` in Lucene's classic reading (`parser::ClassicOptions`), with its options:
/// `default_operator`, `default_field` or `fields` (bare words over several fields: each word
/// is ORed over them), `time_zone`, `phrase_slop`; those that only change scoring or analysis
/// Quarry does the same way are accepted (`analyze_wildcard`, `boost`, `type: best_fields`,
/// `auto_generate_synonyms_phrase_query`, `max_determinized_states`, `rewrite`,
/// `enable_position_increments`); every other option is refused by name.
///
/// `simple_query_string` has a syntax of its own (`simple_query`); `flags` other than `ALL`
/// are refused.
pub fn query_string(
    simple: bool,
    options: &Map<String, Value>,
    path: &str,
    now: i64,
) -> Result<Ast, DslError> {
    let mut classic = ClassicOptions::default();
    let mut fields: Vec<String> = Vec::new();
    let mut phrase_slop = 0;
    let mut minimum_should_match = None;
    let known = options_of(if simple {
        "simple_query_string"
    } else {
        "query_string"
    });
    for (key, value) in options {
        let bad = |what: &str| error(path, format!("{key}: expected {what}"));
        if !known.contains(&key.as_str()) {
            return Err(error(path, format!("unsupported: option [{key}]")));
        }
        match key.as_str() {
            "query" => {}
            "default_operator" => {
                classic.default_operator = operator_of(options, path, "default_operator")?
            }
            "default_field" => {
                let field = value.as_str().ok_or_else(|| bad("a field name"))?;
                classic.default_field = (field != "*").then(|| field_name(field).to_owned());
            }
            "fields" => {
                for name in value
                    .as_array()
                    .ok_or_else(|| bad("a list of field names"))?
                {
                    let name = name.as_str().ok_or_else(|| bad("field names"))?;
                    if name.contains('^') {
                        return Err(error(
                            path,
                            format!("unsupported: a boost in fields ({name:?})"),
                        ));
                    }
                    if name != "*" {
                        fields.push(field_name(name).to_owned());
                    }
                }
            }
            "time_zone" => {
                let zone = value.as_str().ok_or_else(|| bad("a zone"))?;
                classic.zone = Zone::parse(zone).map_err(|e| error(path, e))?;
            }
            "phrase_slop" => phrase_slop = slop_of(options, path, "phrase_slop")?,
            "analyze_wildcard"
            | "auto_generate_synonyms_phrase_query"
            | "enable_position_increments"
                if value.is_boolean() => {}
            // The boost is applied below; the automaton bound only limits regexes that
            // Quarry bounds by `MAX_REGEX_LENGTH` and its DFA size.
            "boost" | "max_determinized_states" if value.is_number() => {}
            "rewrite" => constant_rewrite(value, path)?,
            "type" if value.as_str() == Some("best_fields") => {}
            "allow_leading_wildcard" if value == &Value::Bool(true) => {}
            "lenient" => {}
            "flags" if simple && value.as_str() == Some("ALL") => {}
            "minimum_should_match" => {
                minimum_should_match = Some(minimum_should_match_of(value, path)?)
            }
            other => {
                return Err(error(path, format!("unsupported: option [{other}]")));
            }
        }
    }
    let text = text_of(options.get("query"), path)?;
    let mut ast = if simple {
        let ast = simple_query(&text, classic.default_operator, path)?;
        match classic.default_field.take() {
            Some(field) => over_fields(ast, &[field]),
            None => ast,
        }
    } else {
        parse_classic(&text, now, &classic)
            .map_err(|e| error(path, format!("query {text:?}: {e}")))?
    };
    if phrase_slop > 0 {
        ast = with_phrase_slop(ast, phrase_slop);
    }
    if classic.default_field.is_none() && !fields.is_empty() {
        ast = over_fields(ast, &fields);
    }
    // Of the top level's optional clauses, as Elasticsearch applies it.
    if let Some(minimum) = minimum_should_match {
        let clauses = match ast {
            Ast::Bool(clauses) => clauses,
            single => vec![(Occur::Should, single)],
        };
        ast = Ast::Bool(with_minimum_should_match(clauses, minimum));
    }
    let ast = boosted(ast, options.get("boost"), path)?;
    with_lenient(ast, options, path)
}

/// A query body's `_name` and the body without it: beside the query's options (`{"must":
/// [...], "_name": "n"}`, as Elasticsearch reads `_name` in every query) or among one field's
/// (`{"status": {"query": 1, "_name": "n"}}`). `None` when it has none.
fn without_name(body: &Value) -> Option<(String, Value)> {
    let object = body.as_object()?;
    if let Some(Value::String(name)) = object.get("_name") {
        let mut rest = object.clone();
        rest.remove("_name");
        return Some((name.clone(), Value::Object(rest)));
    }
    let mut fields = object.iter();
    let (Some((field, Value::Object(options))), None) = (fields.next(), fields.next()) else {
        return None;
    };
    let Some(Value::String(name)) = options.get("_name") else {
        return None;
    };
    let mut options = options.clone();
    options.remove("_name");
    let mut rest = Map::new();
    rest.insert(field.clone(), Value::Object(options));
    Some((name.clone(), Value::Object(rest)))
}

/// `ast` as `lenient: true` asks (`Ast::Lenient`), or as it is.
fn with_lenient(ast: Ast, options: &Map<String, Value>, path: &str) -> Result<Ast, DslError> {
    match options.get("lenient") {
        None | Some(Value::Bool(false)) => Ok(ast),
        Some(Value::Bool(true)) => Ok(Ast::Lenient(Box::new(ast))),
        Some(other) => Err(error(
            path,
            format!("lenient: expected true or false, got {other}"),
        )),
    }
}

/// `simple_query_string`'s syntax, as Lucene's simple query parser reads it: terms, `"phrases"`
/// (`~N` a slop), `prefix*`, `fuzzy~N`, `( )` groups, `-` before a clause for "not", and `+`
/// (AND) or `|` (OR) between clauses, the default operator where there is none. There is no
/// precedence: operators apply left to right, so `a + b | c` is `(a AND b) OR c`; a negated
/// clause is "every event but those", so with OR, `a -b` also matches events that have
/// neither. Like Elasticsearch it never fails on syntax: an unclosed quote or group ends at
/// the end of the text, a stray `)` is skipped.
fn simple_query(text: &str, default_operator: Occur, path: &str) -> Result<Ast, DslError> {
    let chars: Vec<char> = text.chars().collect();
    let mut at = 0;
    let ast = simple_clauses(&chars, &mut at, default_operator, 0, path)?;
    Ok(ast.unwrap_or_else(nothing))
}

fn simple_clauses(
    chars: &[char],
    at: &mut usize,
    default_operator: Occur,
    depth: usize,
    path: &str,
) -> Result<Option<Ast>, DslError> {
    if depth > 64 {
        return Err(error(path, "groups nested too deeply"));
    }
    let mut current: Option<Ast> = None;
    let mut operator: Option<Occur> = None;
    let mut negate = false;
    while *at < chars.len() {
        let c = chars[*at];
        match c {
            c if c.is_whitespace() => *at += 1,
            '|' => {
                operator = Some(Occur::Should);
                *at += 1;
            }
            '+' => {
                operator = Some(Occur::Must);
                *at += 1;
            }
            '-' => {
                negate = !negate;
                *at += 1;
            }
            ')' if depth > 0 => {
                *at += 1;
                break;
            }
            ')' => *at += 1,
            _ => {
                let clause = if c == '(' {
                    *at += 1;
                    simple_clauses(chars, at, default_operator, depth + 1, path)?
                } else {
                    Some(simple_leaf(chars, at, path)?)
                };
                let Some(mut clause) = clause else { continue };
                if std::mem::take(&mut negate) {
                    clause = Ast::Bool(vec![(Occur::Should, Ast::All), (Occur::MustNot, clause)]);
                }
                let occur = operator.take().unwrap_or(default_operator);
                current = Some(match current {
                    None => clause,
                    Some(before) => Ast::Bool(vec![(occur, before), (occur, clause)]),
                });
            }
        }
    }
    Ok(current)
}

/// A term, phrase, prefix or fuzzy term at `at`.
fn simple_leaf(chars: &[char], at: &mut usize, path: &str) -> Result<Ast, DslError> {
    let mut text = String::new();
    let phrase = chars[*at] == '"';
    if phrase {
        *at += 1;
        while *at < chars.len() && chars[*at] != '"' {
            if chars[*at] == '\\' && *at + 1 < chars.len() {
                *at += 1;
            }
            text.push(chars[*at]);
            *at += 1;
        }
        *at += 1;
    } else {
        while *at < chars.len() {
            let c = chars[*at];
            if c.is_whitespace() || matches!(c, '(' | ')' | '|' | '+' | '"') {
                break;
            }
            if c == '\\' && *at + 1 < chars.len() {
                *at += 1;
            } else if c == '~' || (c == '*' && !text.is_empty()) {
                break;
            }
            text.push(chars[*at]);
            *at += 1;
        }
    }
    let suffix = chars.get(*at).copied();
    if suffix == Some('*') && !phrase {
        *at += 1;
        let pattern =
            Pattern::new(PatternKind::Prefix(text.to_lowercase())).map_err(|e| error(path, e.0))?;
        return Ok(Ast::Pattern {
            field: None,
            pattern: Arc::new(pattern),
        });
    }
    if suffix == Some('~') {
        *at += 1;
        let digits: String = chars[*at..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .collect();
        *at += digits.len();
        let number: u32 = digits.parse().unwrap_or(2);
        if phrase {
            return Ok(Ast::Phrase {
                field: None,
                text,
                slop: number,
            });
        }
        let kind = PatternKind::Fuzzy {
            term: text.to_lowercase(),
            distance: number.min(2) as u8,
            prefix_length: 0,
        };
        let pattern = Pattern::new(kind).map_err(|e| error(path, e.0))?;
        return Ok(Ast::Pattern {
            field: None,
            pattern: Arc::new(pattern),
        });
    }
    Ok(if phrase {
        Ast::Phrase {
            field: None,
            text,
            slop: 0,
        }
    } else {
        Ast::Word { field: None, text }
    })
}

/// Phrases written without a slop get `slop`.
fn with_phrase_slop(ast: Ast, slop: u32) -> Ast {
    match ast {
        Ast::Phrase {
            field,
            text,
            slop: 0,
        } => Ast::Phrase { field, text, slop },
        Ast::Bool(clauses) => Ast::Bool(
            clauses
                .into_iter()
                .map(|(occur, clause)| (occur, with_phrase_slop(clause, slop)))
                .collect(),
        ),
        Ast::Boost { inner, boost } => Ast::Boost {
            inner: Box::new(with_phrase_slop(*inner, slop)),
            boost,
        },
        other => other,
    }
}

/// Each clause without a field, ORed over `fields` (Elasticsearch's `fields` for bare words).
fn over_fields(ast: Ast, fields: &[String]) -> Ast {
    let spread = |make: &dyn Fn(String) -> Ast| {
        Ast::Bool(
            fields
                .iter()
                .map(|f| (Occur::Should, make(f.clone())))
                .collect(),
        )
    };
    match ast {
        Ast::Word { field: None, text } => spread(&|f| Ast::Word {
            field: Some(f),
            text: text.clone(),
        }),
        Ast::Phrase {
            field: None,
            text,
            slop,
        } => spread(&|f| Ast::Phrase {
            field: Some(f),
            text: text.clone(),
            slop,
        }),
        Ast::Pattern {
            field: None,
            pattern,
        } => spread(&|f| Ast::Pattern {
            field: Some(f),
            pattern: pattern.clone(),
        }),
        Ast::Bool(clauses) => Ast::Bool(
            clauses
                .into_iter()
                .map(|(occur, clause)| (occur, over_fields(clause, fields)))
                .collect(),
        ),
        Ast::Boost { inner, boost } => Ast::Boost {
            inner: Box::new(over_fields(*inner, fields)),
            boost,
        },
        other => other,
    }
}

fn compile_bool(body: &Value, path: &str, now: i64) -> Result<Ast, DslError> {
    let object = body
        .as_object()
        .ok_or_else(|| error(path, "expected an object of clauses"))?;
    let mut clauses = Vec::new();
    for (occur_name, value) in object {
        let occur = match occur_name.as_str() {
            "must" | "filter" => Occur::Must,
            "should" => Occur::Should,
            "must_not" => Occur::MustNot,
            "_name" => continue,
            key if options_of("bool").contains(&key) => continue,
            other => return Err(error(path, format!("unknown bool clause [{other}]"))),
        };
        let items: Vec<&Value> = match value {
            Value::Array(items) => items.iter().collect(),
            single => vec![single],
        };
        for (i, item) in items.into_iter().enumerate() {
            let item_path = format!("{path}.{occur_name}[{i}]");
            let clause = compile(item, &item_path, now)?;
            // A filter clause only filters: it adds nothing to the score.
            let clause = match occur_name.as_str() {
                "filter" => Ast::Constant {
                    inner: Box::new(clause),
                    score: 0.0,
                },
                _ => clause,
            };
            clauses.push((occur, clause));
        }
    }
    // Elasticsearch: with a must or filter clause, should clauses are optional unless
    // minimum_should_match says otherwise; without one, at least one should must match
    // (the query language's rule too). A count or percentage of them (`2`, `-1`, `"75%"`).
    if let Some(value) = object.get("minimum_should_match") {
        let minimum = minimum_should_match_of(value, path)?;
        clauses = with_minimum_should_match(clauses, minimum);
    }
    if clauses.is_empty() {
        return Ok(Ast::All);
    }
    Ok(Ast::Bool(clauses))
}

/// `clauses` with `minimum` of their `should` clauses required: without a must or filter
/// clause at least one should matches anyway; beside one they are optional unless `minimum`
/// says otherwise (a count or percentage of them: `2`, `-1`, `"75%"`).
fn with_minimum_should_match(
    mut clauses: Vec<(Occur, Ast)>,
    minimum: MinimumShouldMatch,
) -> Vec<(Occur, Ast)> {
    let has_required = clauses.iter().any(|(o, _)| *o == Occur::Must);
    let optional = clauses.iter().filter(|(o, _)| *o == Occur::Should).count();
    match minimum.of(optional) {
        // Without a required clause at least one `should` matches whatever it says, as a
        // Lucene disjunction does (0 and 1 are the rule).
        0 | 1 if !has_required => {}
        0 => {}
        // At least `minimum` of the `should` clauses must match too; they still score.
        minimum => {
            let should: Vec<Ast> = clauses
                .iter()
                .filter(|(o, _)| *o == Occur::Should)
                .map(|(_, clause)| clause.clone())
                .collect();
            clauses.retain(|(o, _)| *o != Occur::Should);
            clauses.push((
                Occur::Must,
                Ast::AtLeast {
                    minimum,
                    clauses: should,
                },
            ));
        }
    }
    clauses
}

/// A leaf query's field name and its options: borrowed from the body when they are an
/// object there, owned when `field_and_options` built them around a bare value.
type FieldAndOptions<'a> = (&'a str, std::borrow::Cow<'a, Map<String, Value>>);

/// `{"field": "text"}` or `{"field": {"query": "text", ...}}`: the field and its options
/// (a bare value is put under `bare_key`).
fn field_and_options<'a>(
    body: &'a Value,
    path: &str,
    bare_key: &str,
) -> Result<FieldAndOptions<'a>, DslError> {
    let object = body
        .as_object()
        .ok_or_else(|| error(path, "expected {\"field\": ...}"))?;
    let mut fields = object
        .iter()
        .filter(|(k, _)| !matches!(k.as_str(), "boost" | "_name"));
    let (Some((field, value)), None) = (fields.next(), fields.next()) else {
        return Err(error(path, "expected exactly one field"));
    };
    match value {
        Value::Object(options) => Ok((field, std::borrow::Cow::Borrowed(options))),
        other if !bare_key.is_empty() => {
            let mut options = Map::new();
            options.insert(bare_key.to_owned(), other.clone());
            Ok((field, std::borrow::Cow::Owned(options)))
        }
        _ => Err(error(
            path,
            format!("{field}: expected an object of options"),
        )),
    }
}

/// Checks a multi-term query's `rewrite`: Quarry scores every expansion as a filter, which
/// the constant-score rewrites ask for (`constant_score`, Elasticsearch's default, and its
/// `_blended` and `_boolean` forms, which score alike); a scoring or top-terms rewrite would
/// score or match otherwise, and is refused by name.
fn constant_rewrite(value: &Value, path: &str) -> Result<(), DslError> {
    match value.as_str() {
        Some("constant_score" | "constant_score_blended" | "constant_score_boolean") => Ok(()),
        _ => Err(error(
            path,
            format!("unsupported: rewrite = {value} (multi-term queries score as constant_score)"),
        )),
    }
}

/// The options of `match_bool_prefix`. `max_expansions` and `fuzzy_rewrite` are accepted as
/// the `fuzzy` query accepts them: Quarry expands a fuzzy term to every term within its
/// edits, and scores the expansion as a filter.
const BOOL_PREFIX_OPTIONS: &[&str] = &[
    "query",
    "analyzer",
    "operator",
    "minimum_should_match",
    "fuzziness",
    "prefix_length",
    "max_expansions",
    "fuzzy_transpositions",
    "fuzzy_rewrite",
    "boost",
];

/// The `analyzer` option: one Quarry has, or none.
fn analyzer_of(options: &Map<String, Value>, path: &str) -> Result<Option<AnalyzerName>, DslError> {
    match options.get("analyzer") {
        None => Ok(None),
        Some(Value::String(name)) => AnalyzerName::ALL
            .into_iter()
            .find(|a| a.as_str() == name)
            .map(Some)
            .ok_or_else(|| {
                error(
                    path,
                    format!(
                        "analyzer [{name}] is not supported (standard, stop, whitespace, keyword)"
                    ),
                )
            }),
        Some(_) => Err(error(path, "analyzer: expected a name")),
    }
}

/// A `match_bool_prefix` of `text` on `field` with `options` (checked by the caller).
fn bool_prefix(
    field: Option<String>,
    text: String,
    options: &Map<String, Value>,
    path: &str,
) -> Result<BoolPrefix, DslError> {
    at_default(options, "fuzzy_transpositions", Value::Bool(true), path)?;
    let analyzer = analyzer_of(options, path)?;
    Ok(BoolPrefix {
        field,
        text,
        analyzer,
        operator: operator_of(options, path, "operator")?,
        minimum_should_match: options
            .get("minimum_should_match")
            .map(|value| minimum_should_match_of(value, path))
            .transpose()?,
        fuzziness: options
            .get("fuzziness")
            .map(|value| fuzziness_of(value, path))
            .transpose()?,
        prefix_length: prefix_length_of(options, path)?,
    })
}

/// `prefix_length` of a fuzzy term: how many of its first characters must be as written.
fn prefix_length_of(options: &Map<String, Value>, path: &str) -> Result<usize, DslError> {
    match options.get("prefix_length") {
        None => Ok(0),
        Some(value) => value
            .as_u64()
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| error(path, "prefix_length: expected a whole number")),
    }
}

/// Refuses `option` unless it is absent or `default` (an option that would change what
/// matches, honoured only at its default).
fn at_default(
    options: &Map<String, Value>,
    option: &str,
    default: Value,
    path: &str,
) -> Result<(), DslError> {
    match options.get(option) {
        Some(value) if *value != default => Err(error(
            path,
            format!("{option} other than {default} is not supported"),
        )),
        _ => Ok(()),
    }
}

/// `ast` times the `boost` option, when there is one other than 1.
/// The most terms a `terms_set` takes: it is planned as one clause per count of matches.
const TERMS_SET_MOST: usize = 64;

/// `terms_set`: the documents matching at least as many of `clauses` as their field `minimum`
/// says (a value under 1 asks for 1; a document without one matches nothing, as Lucene's
/// `CoveringQuery`), planned as "k of the clauses and `minimum` = k" for each k.
fn terms_set(clauses: Vec<Ast>, minimum: &str, path: &str) -> Result<Ast, DslError> {
    if clauses.len() > TERMS_SET_MOST {
        return Err(error(
            path,
            format!("unsupported: terms_set with more than {TERMS_SET_MOST} terms"),
        ));
    }
    let count = clauses.len();
    let mut any = Vec::new();
    for k in 1..=count {
        let enough = match k {
            1 => Ast::Bool(clauses.iter().map(|c| (Occur::Should, c.clone())).collect()),
            k => Ast::AtLeast {
                minimum: k,
                clauses: clauses.clone(),
            },
        };
        let lower = match k {
            1 => Bound::Unbounded,
            k => Bound::Included(Number::Int(k as i64)),
        };
        let asks = Ast::Range {
            field: minimum.to_owned(),
            range: NumericRange {
                lower,
                upper: Bound::Included(Number::Int(k as i64)),
            },
        };
        let asks = Ast::Constant {
            inner: Box::new(asks),
            score: 0.0,
        };
        any.push((
            Occur::Should,
            Ast::Bool(vec![(Occur::Must, enough), (Occur::Must, asks)]),
        ));
    }
    Ok(match any.len() {
        0 => nothing(),
        _ => Ast::Bool(any),
    })
}

fn boosted(ast: Ast, boost: Option<&Value>, path: &str) -> Result<Ast, DslError> {
    let boost = boost_of(boost, path)?;
    Ok(if boost == 1.0 {
        ast
    } else {
        Ast::Boost {
            inner: Box::new(ast),
            boost,
        }
    })
}

/// A `boost` option: a number, 0 or more (1 when absent).
fn boost_of(boost: Option<&Value>, path: &str) -> Result<f32, DslError> {
    match boost {
        None => Ok(1.0),
        Some(value) => value
            .as_f64()
            .filter(|b| b.is_finite() && *b >= 0.0)
            .map(|b| b as f32)
            .ok_or_else(|| error(path, "boost: expected a number, 0 or more")),
    }
}

/// `minimum_should_match`: `3`, `-1`, `"75%"`, `"-25%"`; combinations (`"3<90%"`) are refused.
fn minimum_should_match_of(value: &Value, path: &str) -> Result<MinimumShouldMatch, DslError> {
    let bad = || {
        error(
            path,
            format!(
                "minimum_should_match {value} is not supported (a count like 2 or -1, or a \
                 percentage like \"75%\")"
            ),
        )
    };
    match value {
        Value::Number(n) => n.as_i64().map(MinimumShouldMatch::Count).ok_or_else(bad),
        Value::String(text) => {
            let text = text.trim();
            match text.strip_suffix('%') {
                Some(percent) => percent
                    .parse()
                    .map(MinimumShouldMatch::Percent)
                    .map_err(|_| bad()),
                None => text
                    .parse()
                    .map(MinimumShouldMatch::Count)
                    .map_err(|_| bad()),
            }
        }
        _ => Err(bad()),
    }
}

/// `fuzziness`: 0, 1 or 2 (a number or its string), `AUTO` or `AUTO:low,high`.
fn fuzziness_of(value: &Value, path: &str) -> Result<Fuzziness, DslError> {
    let bad = || error(path, "fuzziness must be 0, 1, 2, AUTO or AUTO:low,high");
    let edits = |n: u64| {
        u8::try_from(n)
            .ok()
            .filter(|&n| n <= crate::pattern::MAX_FUZZY_DISTANCE)
            .map(Fuzziness::Edits)
    };
    match value {
        Value::Number(n) => n.as_u64().and_then(edits).ok_or_else(bad),
        Value::String(text) => {
            let upper = text.trim().to_ascii_uppercase();
            if upper == "AUTO" {
                return Ok(Fuzziness::Auto { low: 3, high: 6 });
            }
            if let Some(bounds) = upper.strip_prefix("AUTO:") {
                let (low, high) = bounds.split_once(',').ok_or_else(bad)?;
                let low: usize = low.trim().parse().map_err(|_| bad())?;
                let high: usize = high.trim().parse().map_err(|_| bad())?;
                return (low <= high)
                    .then_some(Fuzziness::Auto { low, high })
                    .ok_or_else(bad);
            }
            upper.parse().ok().and_then(edits).ok_or_else(bad)
        }
        _ => Err(bad()),
    }
}

fn check_keys(options: &Map<String, Value>, known: &[&str], path: &str) -> Result<(), DslError> {
    match options.keys().find(|k| !known.contains(&k.as_str())) {
        Some(unknown) => Err(error(path, format!("unknown option [{unknown}]"))),
        None => Ok(()),
    }
}

/// `match`'s `operator`: how the words join.
fn operator_of(options: &Map<String, Value>, path: &str, key: &str) -> Result<Occur, DslError> {
    match options.get(key).and_then(Value::as_str) {
        None | Some("or") | Some("OR") => Ok(Occur::Should),
        Some("and") | Some("AND") => Ok(Occur::Must),
        Some(other) => Err(error(path, format!("unknown operator {other:?}"))),
    }
}

/// `match_phrase`'s and `multi_match`'s `slop`: a whole number (Elasticsearch also takes its
/// string form).
fn slop_of(options: &Map<String, Value>, path: &str, key: &str) -> Result<u32, DslError> {
    let slop = match options.get(key) {
        None => return Ok(0),
        Some(Value::Number(n)) => n.as_u64(),
        Some(Value::String(s)) => s.parse::<u64>().ok(),
        Some(_) => None,
    };
    slop.and_then(|s| u32::try_from(s).ok())
        .ok_or_else(|| error(path, format!("{key}: expected a whole number of positions")))
}

/// A query that matches no event.
fn nothing() -> Ast {
    Ast::Bool(vec![(Occur::MustNot, Ast::All)])
}

fn text_of(value: Option<&Value>, path: &str) -> Result<String, DslError> {
    match value {
        Some(Value::String(text)) => Ok(text.clone()),
        Some(Value::Number(n)) => Ok(n.to_string()),
        Some(Value::Bool(b)) => Ok(b.to_string()),
        _ => Err(error(path, "expected a query text")),
    }
}

/// Each whitespace-separated word of `text` (each analyzed as the query language analyzes a
/// word), joined by `occur`.
fn words(field: Option<&str>, text: &str, occur: Occur) -> Ast {
    let mut clauses: Vec<(Occur, Ast)> = text
        .split_whitespace()
        .map(|word| {
            (
                occur,
                Ast::Word {
                    field: field.map(str::to_owned),
                    text: word.to_owned(),
                },
            )
        })
        .collect();
    match clauses.len() {
        // Elasticsearch's zero_terms_query default: none.
        0 => nothing(),
        1 => clauses.pop().map(|(_, ast)| ast).unwrap_or(Ast::All),
        _ => Ast::Bool(clauses),
    }
}

/// A `term`: a string is one token of a text field as indexed (`Ast::Token`; the whole value
/// of any other field, and of `X.keyword`), or the number it spells; a number that number;
/// a boolean the exact value `true` or `false` (a boolean, or that string: query.rs).
/// `case_insensitive` with a string that has cased letters: the whole value ignoring case, a
/// pattern over `X.keyword` (query.rs: the whole values of `X`).
fn term(field: &str, value: &Value, case_insensitive: bool, path: &str) -> Result<Ast, DslError> {
    let field_len = field.len();
    let base = field.strip_suffix(".keyword").unwrap_or(field);
    let field = field_name(base);
    match value {
        // An id is a string, whatever JSON spells it with (`{"term": {"_id": 1}}`).
        Value::String(_) | Value::Number(_) if field == crate::doc_id::ID_FIELD => Ok(Ast::Exact {
            field: field.to_owned(),
            value: match value {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            },
        }),
        Value::String(text)
            if case_insensitive
                && field != TIME_FIELD
                && text.to_lowercase() != text.to_uppercase() =>
        {
            let literal = PatternKind::wildcard_as_written(text.chars().map(|c| (c, false)));
            let pattern = Pattern::as_written(literal, true).map_err(|e| error(path, e.0))?;
            Ok(Ast::Pattern {
                field: Some(format!("{base}.keyword")),
                pattern: Arc::new(pattern),
            })
        }
        Value::String(text) if field == TIME_FIELD => {
            let time = crate::time::parse_time(text, 0).map_err(|e| error(path, e))?;
            Ok(point(field, Number::Int(time)))
        }
        Value::String(text) => {
            // `X.keyword`: the whole value, as that view holds it (up to its `ignore_above`);
            // `X`: one token where `X` is text (query.rs).
            let exact = match base.len() < field_len {
                true => Ast::Exact {
                    field: format!("{field}.keyword"),
                    value: text.clone(),
                },
                false => Ast::Token {
                    field: field.to_owned(),
                    value: text.clone(),
                },
            };
            // Elasticsearch reads the string as the field's type: on a number field, a
            // number. Quarry's fields are typed per value, so a string that spells a number
            // matches the string or the number.
            Ok(match Number::parse(text) {
                Some(number) => Ast::Bool(vec![
                    (Occur::Should, exact),
                    (Occur::Should, point(field, number)),
                ]),
                None => exact,
            })
        }
        Value::Number(n) if field == TIME_FIELD => {
            let millis = n
                .as_i64()
                .ok_or_else(|| error(path, "expected epoch milliseconds"))?;
            Ok(point(field, Number::Int(millis.saturating_mul(1_000_000))))
        }
        // An integer past i64 (an `unsigned_long`): the value exactly, not the f64 near it.
        Value::Number(n) if n.as_u64().is_some_and(|v| v > i64::MAX as u64) => Ok(Ast::Exact {
            field: field.to_owned(),
            value: n.to_string(),
        }),
        Value::Number(n) => {
            let number = Number::parse(&n.to_string())
                .ok_or_else(|| error(path, format!("{n} is not a finite number")))?;
            Ok(point(field, number))
        }
        Value::Bool(b) => Ok(Ast::Exact {
            field: field.to_owned(),
            value: b.to_string(),
        }),
        _ => Err(error(path, "expected a string, number or bool value")),
    }
}

/// The `case_insensitive` option of `term`, `prefix`, `wildcard` and `regexp`.
fn case_insensitive(options: &Map<String, Value>, path: &str) -> Result<bool, DslError> {
    match options.get("case_insensitive") {
        None => Ok(false),
        Some(Value::Bool(value)) => Ok(*value),
        Some(_) => Err(error(path, "case_insensitive: expected true or false")),
    }
}

fn point(field: &str, number: Number) -> Ast {
    Ast::Range {
        field: field.to_owned(),
        range: NumericRange {
            lower: Bound::Included(number),
            upper: Bound::Included(number),
        },
    }
}

fn range(
    field: &str,
    options: std::borrow::Cow<'_, Map<String, Value>>,
    path: &str,
    now: i64,
) -> Result<Ast, DslError> {
    check_keys(&options, options_of("range"), path)?;
    let field = field_name(field);
    let is_time = field == TIME_FIELD;
    let format = options.get("format").and_then(Value::as_str).unwrap_or("");
    for part in format.split("||").filter(|part| !part.is_empty()) {
        if !DATE_FORMATS.contains(&part) {
            return Err(error(
                path,
                format!(
                    "unsupported: date format {part:?} ({}); ISO 8601 times and dates are read without one",
                    DATE_FORMATS.join(", ")
                ),
            ));
        }
    }
    let given_zone = match options.get("time_zone") {
        None => None,
        Some(Value::String(text)) => Some(Zone::parse(text).map_err(|e| error(path, e))?),
        Some(_) => return Err(error(path, "time_zone: expected a zone name or offset")),
    };
    let zone = given_zone.unwrap_or_default();
    let (include_lower, include_upper) = range_includes(&options, path)?;
    let bound_value = |key: &str, value: &Value| -> Result<Option<Number>, DslError> {
        // Elasticsearch rounds `lte` and `gt` bounds up (`lte: now/d` is all of today).
        let rounding = match key {
            "lte" | "gt" => Rounding::Up,
            "to" if include_upper => Rounding::Up,
            "from" if !include_lower => Rounding::Up,
            _ => Rounding::Down,
        };
        match value {
            Value::Null => Ok(None),
            Value::Number(n) if is_time => {
                let raw = n
                    .as_i64()
                    .ok_or_else(|| error(path, format!("{n} is not an integer time")))?;
                // Elasticsearch reads a number on a date field as epoch milliseconds, or
                // seconds with format epoch_second.
                let nanos = if format.contains("epoch_second") {
                    raw.saturating_mul(1_000_000_000)
                } else {
                    raw.saturating_mul(1_000_000)
                };
                Ok(Some(Number::Int(nanos)))
            }
            Value::String(text) if is_time => {
                let nanos = if format.contains("epoch_millis") && text.parse::<i64>().is_ok() {
                    text.parse::<i64>().unwrap_or(0).saturating_mul(1_000_000)
                } else {
                    parse_time_in(text, now, zone, rounding).map_err(|e| error(path, e))?
                };
                Ok(Some(Number::Int(nanos)))
            }
            Value::Number(n) => Number::parse(&n.to_string())
                .map(Some)
                .ok_or_else(|| error(path, format!("{n} is not a finite number"))),
            // Reached only when every bound is a number (strings make a term range below).
            Value::String(text) => Number::parse(text)
                .map(Some)
                .ok_or_else(|| error(path, format!("{text:?} is not a number"))),
            _ => Err(error(path, "expected a number or a string bound")),
        }
    };
    let bound_keys = ["gt", "gte", "lt", "lte", "from", "to"];
    let bool_bound = options
        .iter()
        .any(|(key, value)| bound_keys.contains(&key.as_str()) && value.is_boolean());
    if bool_bound && !is_time {
        return boolean_range(field, &options, path);
    }
    let string_bound = options.iter().any(|(key, value)| {
        bound_keys.contains(&key.as_str())
            && matches!(value, Value::String(text) if Number::parse(text).is_none())
    });
    let otherwise = if string_bound && !is_time {
        term_range(field, &options, path)?
    } else {
        let (lower, upper) = range_bounds(&options, path, bound_value)?;
        Ast::Range {
            field: field.to_owned(),
            range: NumericRange { lower, upper },
        }
    };
    if is_time {
        return Ok(otherwise);
    }
    // The bounds as written, for a date or ip field to read in its type (query.rs).
    let as_written = |_: &str, value: &Value| match value {
        Value::String(text) => Ok(Some(text.clone())),
        Value::Number(n) => Ok(Some(n.to_string())),
        Value::Null => Ok(None),
        _ => Err(error(path, "expected a string or number bound")),
    };
    let (lower, upper) = range_bounds(&options, path, as_written)?;
    Ok(Ast::TypedRange {
        field: field.to_owned(),
        lower,
        upper,
        format: (!format.is_empty()).then(|| format.to_owned()),
        zone: given_zone,
        now,
        otherwise: Box::new(otherwise),
    })
}

/// A range over a boolean field (Elasticsearch orders `false` before `true`): the booleans
/// inside it, as exact terms.
fn boolean_range(field: &str, options: &Map<String, Value>, path: &str) -> Result<Ast, DslError> {
    let read = |_: &str, value: &Value| match value {
        Value::Bool(b) => Ok(Some(*b)),
        Value::Null => Ok(None),
        _ => Err(error(
            path,
            "a range with a boolean bound needs boolean bounds",
        )),
    };
    let (lower, upper) = range_bounds(options, path, read)?;
    let inside = |b: bool| {
        let above = match lower {
            Bound::Included(a) => b >= a,
            Bound::Excluded(a) => u8::from(b) > u8::from(a),
            Bound::Unbounded => true,
        };
        let below = match upper {
            Bound::Included(z) => b <= z,
            Bound::Excluded(z) => u8::from(b) < u8::from(z),
            Bound::Unbounded => true,
        };
        above && below
    };
    let mut clauses: Vec<_> = [false, true]
        .into_iter()
        .filter(|&b| inside(b))
        .map(|b| {
            let exact = Ast::Exact {
                field: field.to_owned(),
                value: b.to_string(),
            };
            (Occur::Should, exact)
        })
        .collect();
    Ok(match clauses.len() {
        0 => nothing(),
        1 => clauses
            .pop()
            .map(|(_, exact)| exact)
            .unwrap_or_else(nothing),
        _ => Ast::Bool(clauses),
    })
}

/// A `range`'s bounds from its keys (`gt`, `gte`, `lt`, `lte`, and `from`/`to` with
/// `include_lower`/`include_upper`), each value read by `read` (`None`: no bound).
/// A range's `include_lower` and `include_upper` (true unless given), booleans or strings
/// spelling them, as Elasticsearch reads them (`"include_lower": "false"`).
fn range_includes(options: &Map<String, Value>, path: &str) -> Result<(bool, bool), DslError> {
    let include = |key: &str| match options.get(key) {
        None | Some(Value::Null) => Ok(true),
        Some(Value::Bool(flag)) => Ok(*flag),
        Some(Value::String(text)) if text == "true" || text == "false" => Ok(text == "true"),
        Some(other) => Err(error(
            path,
            format!("{key}: expected true or false, got {other}"),
        )),
    };
    Ok((include("include_lower")?, include("include_upper")?))
}

fn range_bounds<T>(
    options: &Map<String, Value>,
    path: &str,
    read: impl Fn(&str, &Value) -> Result<Option<T>, DslError>,
) -> Result<(Bound<T>, Bound<T>), DslError> {
    let (include_lower, include_upper) = range_includes(options, path)?;
    let mut lower = Bound::Unbounded;
    let mut upper = Bound::Unbounded;
    for (key, value) in options {
        if !matches!(key.as_str(), "gt" | "gte" | "lt" | "lte" | "from" | "to") {
            continue;
        }
        let Some(bound) = read(key, value)? else {
            continue;
        };
        let (side, bound) = range_bound(key, bound, include_lower, include_upper);
        *if side { &mut upper } else { &mut lower } = bound;
    }
    Ok((lower, upper))
}

/// A `range` key (`gt`, `gte`, `lt`, `lte`, `from`, `to`) and its value: which side it
/// bounds (true: the upper) and how.
fn range_bound<T>(
    key: &str,
    value: T,
    include_lower: bool,
    include_upper: bool,
) -> (bool, Bound<T>) {
    match key {
        "gt" => (false, Bound::Excluded(value)),
        "gte" => (false, Bound::Included(value)),
        "from" if include_lower => (false, Bound::Included(value)),
        "from" => (false, Bound::Excluded(value)),
        "lt" => (true, Bound::Excluded(value)),
        "lte" => (true, Bound::Included(value)),
        "to" if include_upper => (true, Bound::Included(value)),
        _ => (true, Bound::Excluded(value)),
    }
}

/// A `range` with a string bound on a field other than the time: a range of the field's
/// tokens, as the query language's `field:[a TO m}` (bounds lowercased as tokens are).
fn term_range(field: &str, options: &Map<String, Value>, path: &str) -> Result<Ast, DslError> {
    let text = |value: &Value| match value {
        Value::String(text) => Ok(Some(text.to_lowercase())),
        Value::Number(n) => Ok(Some(n.to_string())),
        Value::Null => Ok(None),
        _ => Err(error(path, "expected a string or number bound")),
    };
    let (lower, upper) = range_bounds(options, path, |_, value| text(value))?;
    let pattern =
        Pattern::new(PatternKind::TermRange { lower, upper }).map_err(|e| error(path, e.0))?;
    Ok(Ast::Pattern {
        field: Some(field.to_owned()),
        pattern: Arc::new(pattern),
    })
}

/// An Elasticsearch wildcard value's chars, each with whether it is an operator: `*` and `?`
/// unless escaped with `\\`.
fn wildcard_chars(value: &str) -> Vec<(char, bool)> {
    let mut out = Vec::with_capacity(value.len());
    let mut chars = value.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.push((chars.next().unwrap_or('\\'), false)),
            c => out.push((c, c == '*' || c == '?')),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parser::parse_at;
    use serde_json::json;

    const NOW: i64 = 1_762_000_000_000_000_000;

    /// The DSL and the query language give the same tree (compared as the parser prints it).
    fn same(dsl: Value, text: &str) {
        let compiled = compile(&dsl, "query", NOW).unwrap();
        let parsed = parse_at(text, NOW).unwrap();
        assert_eq!(compiled.to_string(), parsed.to_string(), "{dsl}");
    }

    fn fails(dsl: Value, message: &str) {
        let error = compile(&dsl, "query", NOW).unwrap_err();
        assert_eq!(error.to_string(), message, "{dsl}");
    }

    #[test]
    fn queries_compile_to_the_query_language() {
        same(json!({"match_all": {}}), "*");
        same(
            json!({"match": {"message": "disk full"}}),
            "(message:disk message:full)",
        );
        same(
            json!({"match": {"message": {"query": "disk full", "operator": "and"}}}),
            "(+message:disk +message:full)",
        );
        same(
            json!({"match_phrase": {"message": "disk full"}}),
            "message:\"disk full\"",
        );
        same(
            json!({"match_phrase": {"message": {"query": "disk full", "slop": 2}}}),
            "message:\"disk full\"~2",
        );
        same(
            json!({"multi_match": {"query": "disk full", "type": "phrase", "slop": "1", "fields": ["a", "b"]}}),
            "a:\"disk full\"~1 b:\"disk full\"~1",
        );
        same(
            json!({"range": {"host": {"gte": "Web", "lt": "x"}}}),
            "host:[web TO x}",
        );
        same(json!({"range": {"host": {"gt": "m"}}}), "host:>m");
        same(json!({"range": {"n": {"gt": "5"}}}), "n:>5");
        same(json!({"range": {"ok": {"gte": true}}}), "ok:=true");
        same(
            json!({"range": {"ok": {"lte": true}}}),
            "ok:=false OR ok:=true",
        );
        same(json!({"range": {"ok": {"gt": false, "lt": true}}}), "NOT *");
        fails(
            json!({"match_phrase": {"message": {"query": "a b", "slop": -1}}}),
            "query.match_phrase: slop: expected a whole number of positions",
        );
        // A multi-term query scores as constant_score: a rewrite that scores or keeps the top
        // terms is refused, never ignored.
        same(
            json!({"prefix": {"host": {"value": "web", "rewrite": "constant_score_blended"}}}),
            "host:web*",
        );
        for (dsl, path) in [
            (
                json!({"prefix": {"host": {"value": "web", "rewrite": "scoring_boolean"}}}),
                "query.prefix",
            ),
            (
                json!({"wildcard": {"host": {"value": "w*", "rewrite": "top_terms_5"}}}),
                "query.wildcard",
            ),
            (
                json!({"query_string": {"query": "w*", "rewrite": "x"}}),
                "query.query_string",
            ),
        ] {
            let error = compile(&dsl, "query", NOW).unwrap_err().to_string();
            assert!(
                error.starts_with(path) && error.contains("unsupported: rewrite"),
                "{dsl}: {error}"
            );
        }
        same(
            json!({"term": {"host.keyword": "web-1"}}),
            "host.keyword:=\"web-1\"",
        );
        same(json!({"term": {"status": 500}}), "status:[500 TO 500]");
        same(
            json!({"range": {"latency": {"gte": 10, "lt": 20}}}),
            "latency:[10 TO 20}",
        );
        same(
            json!({"range": {"@timestamp": {"gte": 1762000000000_i64, "lte": 1762000060000_i64, "format": "epoch_millis"}}}),
            "_time:[1762000000000000000 TO 1762000060000000000]",
        );
        same(
            json!({"range": {"@timestamp": {"gte": "now-15m"}}}),
            "_time:>=now-15m",
        );
        same(json!({"exists": {"field": "user"}}), "_exists_:user");
        same(json!({"prefix": {"message": "Err"}}), "message:err*");
        same(
            json!({"wildcard": {"message": {"value": "*rr?r"}}}),
            "message:*rr?r",
        );
        same(json!({"regexp": {"message": "err.*"}}), "message:/err.*/");
        same(
            json!({"regexp": {"m": "a".repeat(1000)}}),
            &format!("m:/{}/", "a".repeat(1000)),
        );
        let long = "é".repeat(1001);
        assert!(compile(&json!({"regexp": {"m": long}}), "query", NOW)
            .unwrap_err()
            .to_string()
            .contains("The length of regex [1001] used in the Regexp Query request has exceeded the allowed maximum of [1000]"));
        same(
            json!({"fuzzy": {"message": {"value": "eror", "fuzziness": 1}}}),
            "message:eror~1",
        );
        same(
            json!({"query_string": {"query": "level:error AND -host:web"}}),
            "level:error AND -host:web",
        );
        same(
            json!({"bool": {
                "must": [{"match": {"message": "disk"}}],
                "filter": {"term": {"level.keyword": "error"}},
                "must_not": [{"exists": {"field": "test"}}],
                "should": [{"match": {"host": "a"}}]
            }}),
            "+(message:disk) +level.keyword:=\"error\" -_exists_:test (host:a)",
        );
        same(
            json!({"terms": {"level.keyword": ["warn", "error"]}}),
            "(level.keyword:=\"warn\" level.keyword:=\"error\")",
        );
        // On a bare field, a string is one token as indexed where the field is text
        // (query.rs), which no query string writes.
        let token = |value: &str| Ast::Token {
            field: "level".into(),
            value: value.into(),
        };
        let compiled = |dsl: Value| compile(&dsl, "query", NOW).unwrap().to_string();
        assert_eq!(
            compiled(json!({"term": {"level": "error"}})),
            token("error").to_string()
        );
        assert_eq!(
            compiled(json!({"terms": {"level": ["warn", "error"]}})),
            Ast::Constant {
                inner: Box::new(Ast::Bool(vec![
                    (Occur::Should, token("warn")),
                    (Occur::Should, token("error")),
                ])),
                score: 1.0,
            }
            .to_string()
        );
    }

    #[test]
    fn query_strings_read_as_elasticsearch_reads_them() {
        let qs = |options: Value| json!({"query_string": options});
        same(qs(json!({"query": "a OR b AND c"})), "(a +b +c)");
        same(
            qs(json!({"query": "a b", "default_operator": "AND"})),
            "(+a +b)",
        );
        same(
            qs(json!({"query": "a b", "default_operator": "and", "analyze_wildcard": true})),
            "(+a +b)",
        );
        same(
            qs(json!({"query": "disk AND level:error", "default_field": "message"})),
            "(+message:disk +level:error)",
        );
        same(
            qs(json!({"query": "disk -\"read only\"", "fields": ["message", "host"]})),
            "((message:disk host:disk) -(message:\"read only\" host:\"read only\"))",
        );
        // `lenient` wraps the query: planning drops clauses that do not fit their field.
        assert!(matches!(
            compile(&qs(json!({"query": "a", "lenient": true})), "query", NOW),
            Ok(Ast::Lenient(_))
        ));
        same(
            qs(json!({"query": "\"disk full\" x", "phrase_slop": 2})),
            "(\"disk full\"~2 x)",
        );
        same(
            qs(json!({"query": "@timestamp:[2026-01-01 TO 2026-01-01]"})),
            "_time:[1767225600000000000 TO 1767311999999999999]",
        );
        for option in [
            json!({"fuzziness": 1}),
            json!({"fuzzy_transpositions": false}),
            json!({"lenient": "yes"}),
            json!({"quote_field_suffix": ".exact"}),
            json!({"default_operator": "XOR"}),
            json!({"fields": ["message^2"]}),
        ] {
            let mut body = option.as_object().unwrap().clone();
            body.insert("query".into(), json!("a"));
            let error = compile(&qs(body.into()), "query", NOW).unwrap_err();
            assert!(
                error.to_string().starts_with("query.query_string: "),
                "{error}"
            );
        }
        // minimum_should_match: of the top level's optional clauses.
        let ast = compile(
            &qs(json!({"query": "a b c", "minimum_should_match": "2"})),
            "query",
            NOW,
        )
        .unwrap();
        assert_eq!(ast.to_string(), "(+at_least(2, a, b, c))");
    }

    #[test]
    fn simple_query_strings_apply_operators_left_to_right() {
        let sqs = |query: &str, operator: &str| json!({"simple_query_string": {"query": query, "default_operator": operator}});
        same(sqs("a + b | c", "or"), "((+a +b) c)");
        same(sqs("a b", "or"), "(a b)");
        same(sqs("a b", "and"), "(+a +b)");
        same(sqs("a -b", "or"), "(a (* -b))");
        same(sqs("a -b", "and"), "(+a +(* -b))");
        same(sqs("(a | b) + \"c d\"~1", "or"), "(+(a b) +\"c d\"~1)");
        same(sqs("err* warn~1", "or"), "(err* warn~1)");
        // Never a syntax error: an unclosed quote or group ends with the text.
        same(sqs("\"a b", "or"), "\"a b\"");
        same(sqs("(a | b", "or"), "(a b)");
        same(sqs("a) b", "or"), "(a b)");
    }

    #[test]
    fn date_math_rounds_as_elasticsearch_does() {
        let day = 86_400_000_000_000;
        let (today, tomorrow) = (NOW / day * day, NOW / day * day + day);
        let bounds = |options: Value| match compile(
            &json!({"range": {"@timestamp": options}}),
            "query",
            NOW,
        ) {
            // A range scores each match its boost (1): its bounds are inside.
            Ok(Ast::Constant { inner, score: 1.0 }) => match *inner {
                Ast::Range { range, .. } => (range.lower, range.upper),
                other => panic!("{other:?}"),
            },
            other => panic!("{other:?}"),
        };
        use Bound::{Excluded, Included, Unbounded};
        let t = Number::Int;
        // gte and lt round down, lte and gt up: `lte now/d` holds all of today.
        assert_eq!(
            bounds(json!({"gte": "now/d"})),
            (Included(t(today)), Unbounded)
        );
        assert_eq!(
            bounds(json!({"lt": "now/d"})),
            (Unbounded, Excluded(t(today)))
        );
        assert_eq!(
            bounds(json!({"lte": "now/d"})),
            (Unbounded, Included(t(tomorrow - 1)))
        );
        assert_eq!(
            bounds(json!({"gt": "now/d"})),
            (Excluded(t(tomorrow - 1)), Unbounded)
        );
        assert_eq!(
            bounds(json!({"from": "now/d", "to": "now/d", "include_lower": false})),
            (Excluded(t(tomorrow - 1)), Included(t(tomorrow - 1)))
        );
        // In a zone two hours ahead of UTC, its day starts two hours earlier.
        let hour = 3_600_000_000_000;
        assert_eq!(
            bounds(json!({"gte": "now/d", "time_zone": "+02:00"})).0,
            Included(t(today - 2 * hour))
        );
        assert_eq!(
            bounds(json!({"gte": "2026-01-01T00:00:00", "time_zone": "+02:00"})).0,
            Included(t(1_767_225_600_000_000_000 - 2 * hour))
        );
        for (options, message) in [
            (
                json!({"gte": "01/02/2026", "format": "dd/MM/yyyy"}),
                "query.range: unsupported: date format \"dd/MM/yyyy\"",
            ),
            (
                json!({"gte": "now", "time_zone": "Mars/Olympus"}),
                "query.range: unknown time zone",
            ),
        ] {
            let dsl = json!({"range": {"@timestamp": options}});
            let error = compile(&dsl, "query", NOW).unwrap_err().to_string();
            assert!(error.starts_with(message), "{error}");
        }
        assert!(compile(
            &json!({"range": {"@timestamp": {"gte": "now/q"}}}),
            "q",
            NOW
        )
        .is_err());
    }

    #[test]
    fn errors_name_the_path() {
        fails(
            json!({"nope": {}}),
            "query.nope: query type [nope] is not supported",
        );
        fails(
            json!({"bool": {"must": [{"match_all": {}}, {"range": {"a": {"gtx": 1}}}]}}),
            "query.bool.must[1].range: unknown option [gtx]",
        );
        fails(
            json!({"match": {"a": "x", "b": "y"}}),
            "query.match: expected exactly one field",
        );
        fails(
            json!({"query_string": {"query": "a AND"}}),
            "query.query_string: query \"a AND\": AND needs a clause after it at position 5",
        );
        fails(
            json!({"regexp": {"m": "a(b"}}),
            "query.regexp: invalid regular expression: unclosed group",
        );
        fails(
            json!([]),
            "query: expected a query object like {\"match_all\": {}}",
        );
    }

    #[test]
    fn intervals_options_are_read_or_refused() {
        let ok = json!({"intervals": {"text": {"all_of": {"intervals": [
            {"match": {"query": "a b", "mode": "unordered_no_overlap", "max_gaps": 2}},
            {"prefix": {"prefix": "ou"}}
        ], "ordered": true, "filter": {"not_overlapping": {"fuzzy": {"term": "x"}}}}, "boost": 2}}});
        assert!(compile(&ok, "query", NOW).is_ok());
        for (dsl, message) in [
            (
                json!({"intervals": {"text": {"match": {"query": "a", "use_field": "other"}}}}),
                "query.intervals.text.match: use_field is not supported",
            ),
            (
                json!({"intervals": {"text": {"match": {"query": "a", "filter": {"script": {}}}}}}),
                "query.intervals.text.match.filter.script: script filters are not supported",
            ),
            (
                json!({"intervals": {"text": {"prefix": {"prefix": "a", "max_expansions": 5}}}}),
                "query.intervals.text.prefix: unknown option [max_expansions]",
            ),
            (
                json!({"intervals": {"text": {"all_of": {"intervals": [{"span": {}}]}}}}),
                "query.intervals.text.all_of.intervals[0].span: intervals rule [span] is not supported",
            ),
            (
                json!({"intervals": {"text": {"match": {"query": "a", "mode": "ordered", "ordered": false}}}}),
                "query.intervals.text.match: mode and ordered disagree; give mode only",
            ),
            (
                json!({"intervals": {"text": {"match": {"query": "a", "max_gaps": -2}}}}),
                "query.intervals.text.match: max_gaps: expected -1 or a whole number",
            ),
        ] {
            fails(dsl, message);
        }
    }

    #[test]
    fn bool_prefix_options_are_read_or_refused() {
        let read = |dsl: Value| match compile(&dsl, "query", 0).unwrap() {
            Ast::BoolPrefix(query) => *query,
            Ast::Boost { inner, .. } => match *inner {
                Ast::BoolPrefix(query) => *query,
                other => panic!("{other:?}"),
            },
            other => panic!("{other:?}"),
        };
        let query = read(json!({"match_bool_prefix": {"m": {
            "query": "quick br", "operator": "AND", "analyzer": "whitespace",
            "fuzziness": "AUTO:2,4", "prefix_length": 1, "boost": 2,
        }}}));
        assert_eq!(query.field.as_deref(), Some("m"));
        assert_eq!(query.operator, Occur::Must);
        assert_eq!(query.analyzer, Some(AnalyzerName::Whitespace));
        assert_eq!(query.fuzziness, Some(Fuzziness::Auto { low: 2, high: 4 }));
        assert_eq!(query.prefix_length, 1);
        let cases = [
            ("2", 2),
            ("-1", 2),
            ("50%", 1),
            ("-50%", 2),
            ("75%", 2),
            ("-25%", 3),
        ];
        for (written, of_three) in cases {
            let query = read(json!({"match_bool_prefix": {"m": {
                "query": "a b c", "minimum_should_match": written,
            }}}));
            let minimum = query.minimum_should_match.unwrap();
            assert_eq!(minimum.of(3), of_three, "{written}");
        }
        for (fuzziness, term, distance) in
            [("AUTO", "ab", 0), ("AUTO", "abc", 1), ("AUTO", "abcdef", 2)]
        {
            let parsed = fuzziness_of(&json!(fuzziness), "q").unwrap();
            assert_eq!(parsed.distance(term), distance, "{fuzziness} {term}");
        }
        let multi = |extra: Value| {
            let mut body = json!({"query": "brown", "type": "bool_prefix", "fields": ["a", "b"]});
            body.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            json!({ "multi_match": body })
        };
        fails(
            multi(json!({"slop": 1})),
            "query.multi_match: [slop] not allowed for type [bool_prefix]",
        );
        fails(
            multi(json!({"cutoff_frequency": 0.001})),
            "query.multi_match: [cutoff_frequency] not allowed for type [bool_prefix]",
        );
        fails(
            multi(json!({"analyzer": "french"})),
            "query.multi_match: analyzer [french] is not supported (standard, stop, whitespace, keyword)",
        );
        fails(
            json!({"match_bool_prefix": {"m": {"query": "a", "minimum_should_match": "2<75%"}}}),
            "query.match_bool_prefix: minimum_should_match \"2<75%\" is not supported (a count like 2 or -1, or a percentage like \"75%\")",
        );
        fails(
            json!({"match_bool_prefix": {"m": {"query": "a", "fuzzy_transpositions": false}}}),
            "query.match_bool_prefix: fuzzy_transpositions other than true is not supported",
        );
        // Other multi_match types still refuse bool_prefix's options, and read `^` boosts.
        fails(
            json!({"multi_match": {"query": "a", "fuzziness": 1}}),
            "query.multi_match: unknown option [fuzziness]",
        );
        let boosted = compile(
            &json!({"multi_match": {"query": "a", "fields": ["x^3"]}}),
            "q",
            0,
        );
        assert_eq!(boosted.unwrap().to_string(), "(x:a^3)");
    }
}
