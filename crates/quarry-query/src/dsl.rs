//! Elasticsearch's query DSL, compiled to the same tree as the query language (`Ast`), so a
//! JSON query and its Lucene-syntax twin run the same plan.
//!
//! | DSL | becomes |
//! |---|---|
//! | `match_all` | every event |
//! | `match` (`operator` `or`/`and`) | each whitespace-separated word of the text, ORed or ANDed |
//! | `match_phrase` | a phrase |
//! | `multi_match` (`fields`, `type` `phrase` too) | `match` per field, ORed |
//! | `query_string`, `simple_query_string` | the query language itself (parser.rs) |
//! | `term`, `terms` | a string: the exact whole value (`field:="v"`; a `.keyword` suffix is dropped); a number: that number; a bool: its token |
//! | `range` (`gt`/`gte`/`lt`/`lte`, `format`) | a numeric range, or on `@timestamp`/`_time` a time range with date math (`now-15m`, `now/d`) and epoch milliseconds for numbers |
//! | `exists` | `_exists_:field` |
//! | `prefix`, `wildcard`, `regexp`, `fuzzy` | the pattern (pattern.rs) over the field's tokens |
//! | `bool` (`must`, `filter`, `should`, `must_not`, `minimum_should_match` 0 or 1) | the query language's `+`, `+`, ` `, `-` |
//!
//! `@timestamp` is a name for `_time` everywhere. An unknown query type, an unknown option or
//! a value of the wrong type is an error naming its JSON path (`query.bool.must[1].range`),
//! never a query silently read as something else.

use crate::parser::{parse_at, Ast, Occur, TIME_FIELD};
use crate::pattern::{Pattern, PatternKind};
use crate::range::{Number, NumericRange};
use crate::time::parse_time;
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
}

fn error(path: &str, reason: impl Into<String>) -> DslError {
    DslError {
        path: path.to_owned(),
        reason: reason.into(),
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
    let path = format!("{path}.{kind}");
    let path = path.as_str();
    match kind.as_str() {
        "match_all" => Ok(Ast::All),
        "match_none" => Ok(nothing()),
        "bool" => compile_bool(body, path, now),
        "match" => {
            let (field, options) = field_and_options(body, path, "query")?;
            let text = text_of(options.get("query"), path)?;
            let operator = operator_of(&options, path)?;
            check_keys(
                &options,
                &[
                    "query",
                    "operator",
                    "boost",
                    "analyzer",
                    "lenient",
                    "zero_terms_query",
                    "auto_generate_synonyms_phrase_query",
                    "fuzzy_transpositions",
                ],
                path,
            )?;
            Ok(words(Some(field_name(field)), &text, operator))
        }
        "match_phrase" => {
            let (field, options) = field_and_options(body, path, "query")?;
            check_keys(&options, &["query", "boost", "analyzer", "slop"], path)?;
            Ok(Ast::Phrase {
                field: Some(field_name(field).to_owned()),
                text: text_of(options.get("query"), path)?,
                slop: slop_of(&options, path)?,
            })
        }
        "multi_match" => {
            let options = body
                .as_object()
                .ok_or_else(|| error(path, "expected an object with query and fields"))?;
            check_keys(
                options,
                &[
                    "query", "fields", "type", "operator", "boost", "lenient", "slop",
                ],
                path,
            )?;
            let slop = slop_of(options, path)?;
            let text = text_of(options.get("query"), path)?;
            let phrase = match options.get("type").and_then(Value::as_str) {
                None | Some("best_fields") | Some("most_fields") | Some("cross_fields") => false,
                Some("phrase") => true,
                Some(other) => return Err(error(path, format!("type {other:?} is not supported"))),
            };
            let operator = operator_of(options, path)?;
            let fields: Vec<Option<String>> = match options.get("fields") {
                None => vec![None],
                Some(Value::Array(names)) => names
                    .iter()
                    .map(|n| {
                        let name = n
                            .as_str()
                            .ok_or_else(|| error(path, "fields must be strings"))?;
                        // `title^2` boosts are accepted and ignored (no boosts yet); `*` is
                        // every text field.
                        let name = name.split('^').next().unwrap_or(name);
                        Ok((name != "*").then(|| field_name(name).to_owned()))
                    })
                    .collect::<Result<_, DslError>>()?,
                Some(_) => return Err(error(path, "fields must be a list of names")),
            };
            let per_field = fields
                .into_iter()
                .map(|field| {
                    let ast = if phrase {
                        Ast::Phrase {
                            field,
                            text: text.clone(),
                            slop,
                        }
                    } else {
                        words(field.as_deref(), &text, operator)
                    };
                    (Occur::Should, ast)
                })
                .collect();
            Ok(Ast::Bool(per_field))
        }
        "query_string" | "simple_query_string" => {
            let options = body
                .as_object()
                .ok_or_else(|| error(path, "expected an object with a query"))?;
            let text = text_of(options.get("query"), path)?;
            parse_at(&text, now).map_err(|e| error(path, format!("query {text:?}: {e}")))
        }
        "term" => {
            let (field, options) = field_and_options(body, path, "value")?;
            check_keys(&options, &["value", "boost", "case_insensitive"], path)?;
            let value = options
                .get("value")
                .ok_or_else(|| error(path, "expected a value"))?;
            term(field, value, path)
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
                    clauses.push((Occur::Should, term(field, value, path)?));
                }
            }
            if clauses.is_empty() {
                return Ok(nothing());
            }
            Ok(Ast::Bool(clauses))
        }
        "range" => {
            let (field, options) = field_and_options(body, path, "")?;
            range(field, options, path, now)
        }
        "exists" => {
            let field = body
                .get("field")
                .and_then(Value::as_str)
                .ok_or_else(|| error(path, "expected {\"field\": \"name\"}"))?;
            Ok(Ast::Exists {
                field: field_name(field).to_owned(),
            })
        }
        "prefix" | "wildcard" | "regexp" | "fuzzy" => {
            let (field, options) = field_and_options(body, path, "value")?;
            let value = match options.get("value").or_else(|| options.get("wildcard")) {
                Some(Value::String(value)) => value.clone(),
                _ => return Err(error(path, "expected a string value")),
            };
            let kind = match kind.as_str() {
                "prefix" => PatternKind::Prefix(value.to_lowercase()),
                "wildcard" => PatternKind::wildcard(wildcard_chars(&value)),
                "regexp" => PatternKind::Regex(value),
                _ => {
                    let distance = match options.get("fuzziness") {
                        None => 2,
                        Some(Value::String(s)) if s.eq_ignore_ascii_case("auto") => {
                            // Elasticsearch's AUTO: 0 edits up to 2 chars, 1 up to 5, else 2.
                            match value.chars().count() {
                                0..=2 => 0,
                                3..=5 => 1,
                                _ => 2,
                            }
                        }
                        Some(v) => v
                            .as_u64()
                            .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
                            .and_then(|d| u8::try_from(d).ok())
                            .ok_or_else(|| error(path, "fuzziness must be 0, 1, 2 or AUTO"))?,
                    };
                    PatternKind::Fuzzy {
                        term: value.to_lowercase(),
                        distance,
                    }
                }
            };
            let pattern = Pattern::new(kind).map_err(|e| error(path, e.0))?;
            Ok(Ast::Pattern {
                field: Some(field_name(field).to_owned()),
                pattern: Arc::new(pattern),
            })
        }
        "constant_score" => {
            let filter = body
                .get("filter")
                .ok_or_else(|| error(path, "expected a filter"))?;
            compile(filter, &format!("{path}.filter"), now)
        }
        other => Err(error(
            path,
            format!("query type [{other}] is not supported"),
        )),
    }
}

fn compile_bool(body: &Value, path: &str, now: i64) -> Result<Ast, DslError> {
    let object = body
        .as_object()
        .ok_or_else(|| error(path, "expected an object of clauses"))?;
    let mut clauses = Vec::new();
    let mut has_required = false;
    for (occur_name, value) in object {
        let occur = match occur_name.as_str() {
            "must" | "filter" => Occur::Must,
            "should" => Occur::Should,
            "must_not" => Occur::MustNot,
            "minimum_should_match" | "boost" | "_name" => continue,
            other => return Err(error(path, format!("unknown bool clause [{other}]"))),
        };
        has_required |= occur == Occur::Must;
        let items: Vec<&Value> = match value {
            Value::Array(items) => items.iter().collect(),
            single => vec![single],
        };
        for (i, item) in items.into_iter().enumerate() {
            let item_path = format!("{path}.{occur_name}[{i}]");
            clauses.push((occur, compile(item, &item_path, now)?));
        }
    }
    // Elasticsearch: with a must or filter clause, should clauses are optional unless
    // minimum_should_match says otherwise; without one, at least one should must match
    // (the query language's rule too).
    let minimum_should_match = match object.get("minimum_should_match") {
        None => None,
        Some(v) if v.as_u64() == Some(0) || v.as_str() == Some("0") => Some(0),
        Some(v) if v.as_u64() == Some(1) || v.as_str() == Some("1") => Some(1),
        Some(other) => {
            return Err(error(
                path,
                format!("minimum_should_match {other} is not supported (0 or 1)"),
            ))
        }
    };
    match minimum_should_match {
        // 0 without a required clause: `should` may then all miss, they only score.
        Some(0) if !has_required => clauses.push((Occur::Must, Ast::All)),
        // 1 beside a required clause: at least one `should` must match too.
        Some(1) if has_required => {
            let should: Vec<(Occur, Ast)> = clauses
                .iter()
                .filter(|(o, _)| *o == Occur::Should)
                .cloned()
                .collect();
            clauses.retain(|(o, _)| *o != Occur::Should);
            if !should.is_empty() {
                clauses.push((Occur::Must, Ast::Bool(should)));
            }
        }
        _ => {}
    }
    if clauses.is_empty() {
        return Ok(Ast::All);
    }
    Ok(Ast::Bool(clauses))
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

fn check_keys(options: &Map<String, Value>, known: &[&str], path: &str) -> Result<(), DslError> {
    match options.keys().find(|k| !known.contains(&k.as_str())) {
        Some(unknown) => Err(error(path, format!("unknown option [{unknown}]"))),
        None => Ok(()),
    }
}

/// `match`'s `operator`: how the words join.
fn operator_of(options: &Map<String, Value>, path: &str) -> Result<Occur, DslError> {
    match options.get("operator").and_then(Value::as_str) {
        None | Some("or") | Some("OR") => Ok(Occur::Should),
        Some("and") | Some("AND") => Ok(Occur::Must),
        Some(other) => Err(error(path, format!("unknown operator {other:?}"))),
    }
}

/// `match_phrase`'s and `multi_match`'s `slop`: a whole number (Elasticsearch also takes its
/// string form).
fn slop_of(options: &Map<String, Value>, path: &str) -> Result<u32, DslError> {
    let slop = match options.get("slop") {
        None => return Ok(0),
        Some(Value::Number(n)) => n.as_u64(),
        Some(Value::String(s)) => s.parse::<u64>().ok(),
        Some(_) => None,
    };
    slop.and_then(|s| u32::try_from(s).ok())
        .ok_or_else(|| error(path, "slop: expected a whole number of positions"))
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

fn term(field: &str, value: &Value, path: &str) -> Result<Ast, DslError> {
    let field = field_name(field.strip_suffix(".keyword").unwrap_or(field));
    match value {
        Value::String(text) if field == TIME_FIELD => {
            let time = parse_time(text, 0).map_err(|e| error(path, e))?;
            Ok(point(field, Number::Int(time)))
        }
        Value::String(text) => Ok(Ast::Exact {
            field: field.to_owned(),
            value: text.clone(),
        }),
        Value::Number(n) if field == TIME_FIELD => {
            let millis = n
                .as_i64()
                .ok_or_else(|| error(path, "expected epoch milliseconds"))?;
            Ok(point(field, Number::Int(millis.saturating_mul(1_000_000))))
        }
        Value::Number(n) => {
            let number = Number::parse(&n.to_string())
                .ok_or_else(|| error(path, format!("{n} is not a finite number")))?;
            Ok(point(field, number))
        }
        Value::Bool(b) => Ok(Ast::Word {
            field: Some(field.to_owned()),
            text: b.to_string(),
        }),
        _ => Err(error(path, "expected a string, number or bool value")),
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
    check_keys(
        &options,
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
        path,
    )?;
    let field = field_name(field);
    let is_time = field == TIME_FIELD;
    let format = options.get("format").and_then(Value::as_str).unwrap_or("");
    let bound_value = |value: &Value| -> Result<Option<Number>, DslError> {
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
                    parse_time(text, now).map_err(|e| error(path, e))?
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
    let string_bound = options.iter().any(|(key, value)| {
        bound_keys.contains(&key.as_str())
            && matches!(value, Value::String(text) if Number::parse(text).is_none())
    });
    if string_bound && !is_time {
        return term_range(field, &options, path);
    }
    let (lower, upper) = range_bounds(&options, bound_value)?;
    Ok(Ast::Range {
        field: field.to_owned(),
        range: NumericRange { lower, upper },
    })
}

/// A `range`'s bounds from its keys (`gt`, `gte`, `lt`, `lte`, and `from`/`to` with
/// `include_lower`/`include_upper`), each value read by `read` (`None`: no bound).
fn range_bounds<T>(
    options: &Map<String, Value>,
    read: impl Fn(&Value) -> Result<Option<T>, DslError>,
) -> Result<(Bound<T>, Bound<T>), DslError> {
    let include = |key: &str| options.get(key).and_then(Value::as_bool).unwrap_or(true);
    let (include_lower, include_upper) = (include("include_lower"), include("include_upper"));
    let mut lower = Bound::Unbounded;
    let mut upper = Bound::Unbounded;
    for (key, value) in options {
        if !matches!(key.as_str(), "gt" | "gte" | "lt" | "lte" | "from" | "to") {
            continue;
        }
        let Some(bound) = read(value)? else { continue };
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
    let (lower, upper) = range_bounds(options, text)?;
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
        fails(
            json!({"match_phrase": {"message": {"query": "a b", "slop": -1}}}),
            "query.match_phrase: slop: expected a whole number of positions",
        );
        same(
            json!({"term": {"host.keyword": "web-1"}}),
            "host:=\"web-1\"",
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
                "filter": {"term": {"level": "error"}},
                "must_not": [{"exists": {"field": "test"}}],
                "should": [{"match": {"host": "a"}}]
            }}),
            "+(message:disk) +level:=\"error\" -_exists_:test (host:a)",
        );
        same(
            json!({"terms": {"level": ["warn", "error"]}}),
            "(level:=\"warn\" level:=\"error\")",
        );
    }

    #[test]
    fn date_math_rounds_down() {
        let day = 86_400_000_000_000;
        assert_eq!(parse_time("now/d", NOW).unwrap(), NOW / day * day);
        assert_eq!(
            parse_time("now-1d/d", NOW).unwrap(),
            (NOW - day) / day * day
        );
        assert!(parse_time("now/q", NOW).is_err());
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
}
