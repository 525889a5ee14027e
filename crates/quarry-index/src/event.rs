//! Events: one JSON object each, flattened to dotted field names, with a `_time`.
//!
//! - Nested objects flatten: `{"http": {"status": 200}}` becomes the field `http.status`.
//! - Strings are `Str`; integers `I64` (or `U64` above i64); other numbers `F64`, except a
//!   number an f64 cannot hold as written (an integer beyond u64, more than 17 significant
//!   digits), which is kept as the `Str` of its exact text rather than rounded; booleans
//!   `Bool`; arrays are kept as their JSON text (`Json`), searchable by its tokens; `null` and
//!   `{}` are no value.
//! - Repeated names: when several values flatten to the same name in one event (a dotted key
//!   beside a nested object, `{"a.b": "x", "a": {"b": "y"}}`, or a key repeated in one object),
//!   they are kept together as one multi-valued field: a JSON array of the values in document
//!   order, stored and searched exactly like an array in the input (`a.b = ["x","y"]`). A
//!   value that is itself an array has its items spliced in: `{"a.b": [1, 2], "a": {"b": 3}}`
//!   gives `a.b = [1,2,3]`. The field takes the place of the name's first value. So the fields
//!   of an `Event` have distinct names, which a block needs (one value per field per doc).
//! - An event has at most `MAX_SEGMENT_FIELDS` (65,534) distinct names: a block holds no more
//!   (field ordinals are u16 and `_time` takes one). A line with more is rejected, not cut.
//! - `_time` comes from the first of the top-level fields `_time`, `@timestamp`, `timestamp`,
//!   `time` that holds one value that parses (RFC 3339 string, the same without an offset
//!   (UTC) or a date alone, or epoch number/string in s, ms, µs or ns chosen by magnitude,
//!   within the i64 nanoseconds range: years 1677 to 2262); that field becomes `_time` and is
//!   not kept under its own name (documents sent through the Elasticsearch API keep
//!   `timestamp` and `time` under their names too: quarry-server's live.rs). Without one, the event
//!   gets its ingestion time. A top-level `_time` that is present (not null) but is not one
//!   valid time rejects the line: the user named the time and it cannot be honoured, and
//!   keeping it under another name would hide that. `@timestamp`, `timestamp` and `time` are
//!   common ordinary names, so when they do not parse they stay ordinary fields. A nested
//!   `x._time` is an ordinary name (`x._time`).
//!
//! serde_json's own `Value` keeps only the last value of a key repeated in one object, so
//! lines are parsed into `Node`, a JSON tree whose objects keep every entry in order.

use crate::segment::MAX_SEGMENT_FIELDS;
use chrono::DateTime;
use hashbrown::hash_map::Entry;
use hashbrown::HashMap;
use quarry_format::limits::MAX_FIELD_NAME_LEN;
use quarry_format::{Value, TIME_FIELD};
use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, Serializer};

pub const TIME_SOURCE_FIELDS: [&str; 4] = ["_time", "@timestamp", "timestamp", "time"];

/// One parsed event: its time and its flattened fields, names distinct and never `_time`, in
/// the order of each name's first value.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub time: i64,
    pub fields: Vec<(String, Value)>,
}

#[derive(Debug, thiserror::Error, PartialEq)]
#[non_exhaustive]
pub enum EventError {
    #[error("invalid JSON: {0}")]
    Json(String),
    #[error("expected a JSON object, got {0}")]
    NotAnObject(&'static str),
    #[error("field name longer than {MAX_FIELD_NAME_LEN} bytes")]
    FieldNameTooLong,
    /// A key made only of dots names no field (Elasticsearch's words).
    #[error("field name cannot contain only the character [.]")]
    OnlyDots,
    #[error("event has {count} fields; at most {limit} are allowed")]
    TooManyFields { count: usize, limit: usize },
    /// `value` is the JSON text of the `_time` value(s), cut to `MAX_ERROR_VALUE_LEN` bytes.
    #[error("{TIME_FIELD}: cannot parse {value} as a time (RFC 3339 or epoch s/ms/us/ns)")]
    BadTime { value: String },
    /// A value that does not fit its field's mapping (`Schema::check`).
    #[error("field {field:?} {message}")]
    Mapping { field: String, message: String },
    /// A field no mapping names, under `dynamic: strict` (Elasticsearch's words).
    #[error(
        "mapping set to strict, dynamic introduction of [{name}] within [{parent}] is not allowed"
    )]
    StrictDynamic {
        /// The field's last name part, and the object holding it (`_doc`: the top level).
        name: String,
        parent: String,
    },
}

/// An error message quotes at most this many bytes of a value: enough to recognise it, while
/// a multi-megabyte value does not flood the error output.
const MAX_ERROR_VALUE_LEN: usize = 100;

/// A JSON value as an event needs it: like `serde_json::Value`, but an object keeps every
/// entry in document order, a repeated key included.
#[derive(Debug, Clone, PartialEq)]
enum Node {
    Null,
    Bool(bool),
    I64(i64),
    U64(u64),
    F64(f64),
    Str(String),
    Array(Vec<Node>),
    Object(Vec<(String, Node)>),
}

impl Node {
    fn kind(&self) -> &'static str {
        match self {
            Node::Null => "null",
            Node::Bool(_) => "a boolean",
            Node::I64(_) | Node::U64(_) | Node::F64(_) => "a number",
            Node::Str(_) => "a string",
            Node::Array(_) => "an array",
            Node::Object(_) => "an object",
        }
    }

    /// Compact JSON text, as an array of the input is stored.
    fn to_json(&self) -> String {
        // Serializing to a String fails only for non-string map keys, which a Node has not.
        serde_json::to_string(self).expect("a Node serializes")
    }
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Node, D::Error> {
        deserializer.deserialize_any(NodeVisitor)
    }
}

struct NodeVisitor;

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Node, E> {
        Ok(Node::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Node, E> {
        Ok(Node::I64(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Node, E> {
        // Integers are I64 whenever they fit; U64 only above i64.
        Ok(i64::try_from(v).map_or(Node::U64(v), Node::I64))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Node, E> {
        Ok(Node::F64(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Node, E> {
        Ok(Node::Str(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Node, E> {
        Ok(Node::Str(v))
    }

    fn visit_unit<E>(self) -> Result<Node, E> {
        Ok(Node::Null)
    }

    fn visit_none<E>(self) -> Result<Node, E> {
        Ok(Node::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Node, D::Error> {
        Node::deserialize(deserializer)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Node::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let mut entries = Vec::with_capacity(map.size_hint().unwrap_or(0));
        while let Some(entry) = map.next_entry()? {
            entries.push(entry);
        }
        Ok(Node::Object(entries))
    }
}

impl Serialize for Node {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Node::Null => serializer.serialize_unit(),
            Node::Bool(v) => serializer.serialize_bool(*v),
            Node::I64(v) => serializer.serialize_i64(*v),
            Node::U64(v) => serializer.serialize_u64(*v),
            Node::F64(v) => serializer.serialize_f64(*v),
            Node::Str(v) => serializer.serialize_str(v),
            Node::Array(items) => serializer.collect_seq(items),
            Node::Object(entries) => serializer.collect_map(entries.iter().map(|(k, v)| (k, v))),
        }
    }
}

/// Parses one JSON line into an event; `now` is the ingestion time used without a time field.
pub fn parse_event(line: &[u8], now: i64) -> Result<Event, EventError> {
    parse_event_as_sent(line, now).map(|(event, _)| event)
}

/// The time field of a line as it was sent: its key and its value (as parsed; its JSON text
/// is made only when asked for).
#[derive(Debug)]
pub struct TimeAsSent {
    pub key: &'static str,
    value: Node,
}

impl TimeAsSent {
    /// The value as JSON text.
    pub fn value_json(&self) -> String {
        self.value.to_json()
    }

    /// The value as a field holds it.
    pub fn value(&self) -> Value {
        leaf_value(self.value.clone())
    }

    /// Whether the value is the string `text`.
    pub fn is_text(&self, text: &str) -> bool {
        matches!(&self.value, Node::Str(value) if value == text)
    }
}

/// `parse_event`, and how the line gave its time (`None`: it had none, so the event's time is
/// the ingestion time).
pub fn parse_event_as_sent(
    line: &[u8],
    now: i64,
) -> Result<(Event, Option<TimeAsSent>), EventError> {
    let mut root: Node =
        serde_json::from_slice(line).map_err(|e| EventError::Json(e.to_string()))?;
    keep_exact_numbers(&mut root, line);
    let Node::Object(mut entries) = root else {
        return Err(EventError::NotAnObject(root.kind()));
    };
    let mut time = None;
    let mut sent = None;
    for key in TIME_SOURCE_FIELDS {
        // Null is no value, as everywhere; a key repeated with two values is no single time.
        let mut present = entries
            .iter()
            .enumerate()
            .filter(|(_, (k, v))| k == key && !matches!(v, Node::Null));
        let (first, second) = (present.next(), present.next());
        let parsed = match (first, second) {
            (None, _) => continue,
            (Some((index, (_, value))), None) => parse_time_node(value).map(|t| (index, t)),
            (Some(_), Some(_)) => None,
        };
        match parsed {
            Some((index, t)) => {
                time = Some(t);
                let (_, value) = entries.remove(index);
                sent = Some(TimeAsSent { key, value });
                break;
            }
            None if key == TIME_FIELD => {
                let values: Vec<Node> = entries
                    .iter()
                    .filter(|(k, v)| k == key && !matches!(v, Node::Null))
                    .map(|(_, v)| v.clone())
                    .collect();
                let text = match <[Node; 1]>::try_from(values) {
                    Ok([value]) => value.to_json(),
                    Err(values) => Node::Array(values).to_json(),
                };
                return Err(EventError::BadTime {
                    value: cut_for_message(text),
                });
            }
            None => {}
        }
    }
    let mut leaves = Vec::with_capacity(entries.len());
    let mut name = String::new();
    for (key, value) in entries {
        if is_only_dots(&key) {
            return Err(EventError::OnlyDots);
        }
        name.clear();
        name.push_str(&key);
        flatten(&mut name, value, &mut leaves)?;
    }
    let leaves = merge_repeated_names(leaves);
    if leaves.len() > MAX_SEGMENT_FIELDS {
        return Err(EventError::TooManyFields {
            count: leaves.len(),
            limit: MAX_SEGMENT_FIELDS,
        });
    }
    let fields = leaves
        .into_iter()
        .map(|(name, node)| (name, leaf_value(node)))
        .collect();
    Ok((
        Event {
            time: time.unwrap_or(now),
            fields,
        },
        sent,
    ))
}

fn is_only_dots(key: &str) -> bool {
    !key.is_empty() && key.bytes().all(|b| b == b'.')
}

/// Appends the leaves under `name`: every value that is not an object (objects recurse with
/// dotted names) nor null.
fn flatten(name: &mut String, node: Node, out: &mut Vec<(String, Node)>) -> Result<(), EventError> {
    if name.len() > MAX_FIELD_NAME_LEN {
        return Err(EventError::FieldNameTooLong);
    }
    match node {
        Node::Null => {}
        Node::Object(entries) => {
            let base = name.len();
            for (key, value) in entries {
                if is_only_dots(&key) {
                    return Err(EventError::OnlyDots);
                }
                name.truncate(base);
                name.push('.');
                name.push_str(&key);
                flatten(name, value, out)?;
            }
            name.truncate(base);
        }
        leaf => out.push((name.clone(), leaf)),
    }
    Ok(())
}

/// Gathers the leaves that share a name into one array leaf at the name's first position,
/// splicing in the items of array values (see the module doc).
fn merge_repeated_names(leaves: Vec<(String, Node)>) -> Vec<(String, Node)> {
    if leaves.len() < 2 {
        return leaves;
    }
    // group[i]: the output position of leaf i's name; groups are numbered by first appearance.
    let mut group = Vec::with_capacity(leaves.len());
    let mut repeated = false;
    {
        let mut first: HashMap<&str, usize> = HashMap::with_capacity(leaves.len());
        for (name, _) in &leaves {
            let next = first.len();
            match first.entry(name.as_str()) {
                Entry::Occupied(entry) => {
                    repeated = true;
                    group.push(*entry.get());
                }
                Entry::Vacant(entry) => {
                    entry.insert(next);
                    group.push(next);
                }
            }
        }
    }
    if !repeated {
        return leaves;
    }
    let mut merged: Vec<(String, Vec<Node>)> = Vec::new();
    for ((name, node), group) in leaves.into_iter().zip(group) {
        if group == merged.len() {
            merged.push((name, Vec::new()));
        }
        merged[group].1.push(node);
    }
    merged
        .into_iter()
        .map(|(name, mut values)| {
            if values.len() == 1 {
                return (name, values.pop().expect("one value"));
            }
            let mut items = Vec::with_capacity(values.len());
            for value in values {
                match value {
                    Node::Array(inner) => items.extend(inner),
                    other => items.push(other),
                }
            }
            (name, Node::Array(items))
        })
        .collect()
}

/// The stored value of a leaf (never null or an object; see `flatten`).
fn leaf_value(node: Node) -> Value {
    match node {
        Node::Bool(v) => Value::Bool(v),
        Node::I64(v) => Value::I64(v),
        Node::U64(v) => Value::U64(v),
        Node::F64(v) => Value::F64(v),
        Node::Str(v) => Value::Str(v),
        other => Value::Json(other.to_json()),
    }
}

/// `text` cut to `MAX_ERROR_VALUE_LEN` bytes at a char boundary, marked `...` when cut.
pub(crate) fn cut_for_message(mut text: String) -> String {
    if text.len() > MAX_ERROR_VALUE_LEN {
        let mut end = MAX_ERROR_VALUE_LEN;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push_str("...");
    }
    text
}

/// A time value as i64 nanoseconds since the epoch: RFC 3339 text, or an epoch number (or
/// numeric string) in seconds, milliseconds, microseconds or nanoseconds by magnitude.
fn parse_time_node(node: &Node) -> Option<i64> {
    match node {
        Node::Str(s) => parse_time_str(s),
        Node::I64(i) => epoch_int_to_nanos(*i),
        // Above i64::MAX in any unit is past the i64 nanoseconds range.
        Node::U64(_) => None,
        Node::F64(f) => epoch_float_to_nanos(*f),
        _ => None,
    }
}

/// A time string as i64 nanoseconds since the epoch: RFC 3339, the same without an offset
/// (UTC) or a date alone (its midnight, UTC), as Elasticsearch's `strict_date_optional_time`
/// reads them, or an epoch number in s, ms, µs or ns by magnitude. `None` when it is none of
/// these, or outside the i64 nanoseconds range (years 1677 to 2262): an out-of-range time is
/// no time rather than a clamped one.
pub fn parse_time_str(s: &str) -> Option<i64> {
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return t.timestamp_nanos_opt();
    }
    if s.len() >= 10 && s.as_bytes()[4] == b'-' {
        let utc = if s.len() == 10 {
            chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d")
                .ok()
                .and_then(|day| day.and_hms_opt(0, 0, 0))
        } else {
            chrono::NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S%.f").ok()
        };
        if let Some(utc) = utc {
            return utc.and_utc().timestamp_nanos_opt();
        }
    }
    if let Ok(i) = s.parse::<i64>() {
        return epoch_int_to_nanos(i);
    }
    s.parse::<f64>().ok().and_then(epoch_float_to_nanos)
}

/// Nanoseconds per unit of an epoch number of this magnitude: epoch seconds are below 1e11
/// until the year 5138; ms below 1e14, µs below 1e17.
fn epoch_scale(magnitude: f64) -> i64 {
    if magnitude < 1e11 {
        1_000_000_000
    } else if magnitude < 1e14 {
        1_000_000
    } else if magnitude < 1e17 {
        1_000
    } else {
        1
    }
}

fn epoch_int_to_nanos(value: i64) -> Option<i64> {
    value.checked_mul(epoch_scale((value as f64).abs()))
}

fn epoch_float_to_nanos(value: f64) -> Option<i64> {
    if !value.is_finite() {
        return None;
    }
    let scale = epoch_scale(value.abs());
    // Whole and fractional parts apart: `1704164645.25 * 1e9` is not exact in f64.
    let whole = value.trunc();
    // `as i64` saturates: check the range first (2^63 is exact in f64).
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    if !(-LIMIT..LIMIT).contains(&whole) {
        return None;
    }
    let fraction = ((value - whole) * scale as f64).round() as i64;
    (whole as i64).checked_mul(scale)?.checked_add(fraction)
}

/// A value as the text it is analyzed from: a string or array as it is, a number as Rust
/// prints it, a boolean as `true`/`false`, a time in RFC 3339.
pub fn value_text(value: &Value) -> String {
    match value {
        Value::Str(s) | Value::Json(s) => s.clone(),
        Value::I64(v) => v.to_string(),
        Value::U64(v) => v.to_string(),
        Value::F64(v) => v.to_string(),
        Value::Bool(v) => v.to_string(),
        Value::Timestamp(t) => format_time(*t),
    }
}

/// RFC 3339 text of a nanosecond timestamp, in UTC with as many fraction digits as needed.
pub fn format_time(nanos: i64) -> String {
    DateTime::from_timestamp_nanos(nanos).to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)
}

/// Replaces each float that an f64 does not hold exactly as written (an integer beyond u64,
/// `0.12345678901234567890`) by its text, so no digit the user sent changes silently: such a
/// number is stored and searched as the string of its digits. serde_json hands numbers over as
/// f64 already rounded, so the line is scanned for its number literals, which come in the
/// same order as the tree's numbers.
fn keep_exact_numbers(root: &mut Node, line: &[u8]) {
    fn has_float(node: &Node) -> bool {
        match node {
            Node::F64(_) => true,
            Node::Array(items) => items.iter().any(has_float),
            Node::Object(entries) => entries.iter().any(|(_, v)| has_float(v)),
            _ => false,
        }
    }
    fn numbers<'n>(node: &'n mut Node, out: &mut Vec<&'n mut Node>) {
        match node {
            Node::I64(_) | Node::U64(_) | Node::F64(_) => out.push(node),
            Node::Array(items) => items.iter_mut().for_each(|item| numbers(item, out)),
            Node::Object(entries) => entries.iter_mut().for_each(|(_, v)| numbers(v, out)),
            _ => {}
        }
    }
    // Most events hold no float at all: nothing to scan.
    if !has_float(root) {
        return;
    }
    let literals = number_literals(line);
    let mut nodes = Vec::new();
    numbers(root, &mut nodes);
    if literals.len() != nodes.len() {
        // Cannot happen for a line serde_json parsed; leave the values as parsed.
        return;
    }
    for (node, literal) in nodes.into_iter().zip(literals) {
        if let Node::F64(value) = node {
            if !same_decimal(literal, &format!("{value:e}")) {
                *node = Node::Str(literal.to_owned());
            }
        }
    }
}

/// The number literals of a JSON text, in order (strings skipped).
fn number_literals(line: &[u8]) -> Vec<&str> {
    let mut literals = Vec::new();
    let mut i = 0;
    while i < line.len() {
        match line[i] {
            b'"' => {
                i += 1;
                while i < line.len() && line[i] != b'"' {
                    i += if line[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            }
            b'-' | b'0'..=b'9' => {
                let start = i;
                while i < line.len()
                    && matches!(line[i], b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E')
                {
                    i += 1;
                }
                // ASCII only, so always valid UTF-8.
                literals.push(std::str::from_utf8(&line[start..i]).unwrap_or(""));
            }
            _ => i += 1,
        }
    }
    literals
}

/// Whether two decimal texts (`-12.50e3`, `1.25e4`) name the same number: sign, significant
/// digits and power of ten compared after normalising.
fn same_decimal(a: &str, b: &str) -> bool {
    fn normal(text: &str) -> (bool, String, i64) {
        let (negative, text) = match text.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        let (mantissa, exponent) = match text.find(['e', 'E']) {
            Some(at) => (
                &text[..at],
                text[at + 1..].parse::<i64>().unwrap_or(i64::MAX),
            ),
            None => (text, 0),
        };
        let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        let digits = format!("{whole}{fraction}");
        let mut exponent = exponent.saturating_sub(fraction.len() as i64);
        let digits = digits.trim_start_matches('0');
        let trimmed = digits.trim_end_matches('0');
        exponent = exponent.saturating_add((digits.len() - trimmed.len()) as i64);
        if trimmed.is_empty() {
            return (negative, String::new(), 0);
        }
        (negative, trimmed.to_owned(), exponent)
    }
    normal(a) == normal(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_an_f64_cannot_hold_are_kept_as_their_text() {
        check(&[
            (
                r#"{"f":0.1,"g":1.0,"h":-2.5e-3}"#,
                Ok((
                    42,
                    vec![
                        ("f", Value::F64(0.1)),
                        ("g", Value::F64(1.0)),
                        ("h", Value::F64(-2.5e-3)),
                    ],
                )),
            ),
            (
                r#"{"big":123456789012345678901234567890}"#,
                Ok((42, vec![("big", s("123456789012345678901234567890"))])),
            ),
            (
                r#"{"d":0.12345678901234567890,"i":-9223372036854775808}"#,
                Ok((
                    42,
                    vec![
                        ("d", s("0.12345678901234567890")),
                        ("i", Value::I64(i64::MIN)),
                    ],
                )),
            ),
            (
                r#"{"m":1.7976931348623157e308,"s":"5.00000000000000000001"}"#,
                Ok((
                    42,
                    vec![
                        ("m", Value::F64(f64::MAX)),
                        ("s", s("5.00000000000000000001")),
                    ],
                )),
            ),
            (
                r#"{"k\"1":[1, 99999999999999999999, {"x":2.50}]}"#,
                Ok((
                    42,
                    vec![("k\"1", j(r#"[1,"99999999999999999999",{"x":2.5}]"#))],
                )),
            ),
        ]);
        assert!(same_decimal("-12.50e3", "-1.25e4") && same_decimal("0.000", "0e0"));
        assert!(!same_decimal("1e2", "1e3") && !same_decimal("-1", "1"));
    }

    #[test]
    fn keys_of_dots_alone_are_refused() {
        for line in [&br#"{".": 1}"#[..], br#"{"a": {"..": 1}}"#] {
            assert_eq!(parse_event(line, 0).unwrap_err(), EventError::OnlyDots);
        }
        let event = parse_event(br#"{"a.": 1, ".b": 2}"#, 0).unwrap();
        assert_eq!(event.fields.len(), 2);
    }

    #[test]
    fn flattens_and_types() {
        let e = parse_event(
            br#"{"a":{"b":1,"c":{"d":"x"}},"n":null,"f":1.5,"u":18446744073709551615,"t":true,"arr":[1,"a"]}"#,
            7,
        )
        .unwrap();
        assert_eq!(e.time, 7);
        assert_eq!(
            e.fields,
            vec![
                ("a.b".into(), Value::I64(1)),
                ("a.c.d".into(), Value::Str("x".into())),
                ("f".into(), Value::F64(1.5)),
                ("u".into(), Value::U64(u64::MAX)),
                ("t".into(), Value::Bool(true)),
                ("arr".into(), Value::Json(r#"[1,"a"]"#.into())),
            ]
        );
    }

    #[test]
    fn time_sources_and_units() {
        let cases: &[(&str, i64)] = &[
            (
                r#"{"_time":"2024-01-02T03:04:05Z"}"#,
                1_704_164_645_000_000_000,
            ),
            (
                r#"{"@timestamp":"2024-01-02T03:04:05.5+01:00"}"#,
                1_704_161_045_500_000_000,
            ),
            (r#"{"timestamp":1704164645}"#, 1_704_164_645_000_000_000),
            (r#"{"time":1704164645123}"#, 1_704_164_645_123_000_000),
            (r#"{"time":1704164645123456}"#, 1_704_164_645_123_456_000),
            (r#"{"time":1704164645123456789}"#, 1_704_164_645_123_456_789),
            (r#"{"time":"1704164645"}"#, 1_704_164_645_000_000_000),
            (r#"{"time":1704164645.25}"#, 1_704_164_645_250_000_000),
            (r#"{"time":"not a time","x":1}"#, 42),
            (r#"{"time":"2024-01-02"}"#, 1_704_153_600_000_000_000),
            (
                r#"{"time":"2024-01-02T03:04:05.5"}"#,
                1_704_164_645_500_000_000,
            ),
            (r#"{"time":"2024-01-02 03:04"}"#, 42),
            (r#"{"time":"2024-13-02"}"#, 42),
        ];
        for (line, expected) in cases {
            let e = parse_event(line.as_bytes(), 42).unwrap();
            assert_eq!(e.time, *expected, "{line}");
        }
        // The unparseable time field is kept as a plain field.
        let e = parse_event(br#"{"time":"soon"}"#, 1).unwrap();
        assert_eq!(e.fields, vec![("time".into(), Value::Str("soon".into()))]);
        assert_eq!(
            format_time(1_704_164_645_500_000_000),
            "2024-01-02T03:04:05.500Z"
        );
    }

    fn s(v: &str) -> Value {
        Value::Str(v.to_owned())
    }

    fn j(v: &str) -> Value {
        Value::Json(v.to_owned())
    }

    /// Each line's expected `(time, fields)` (time 42 is the ingestion time) or error.
    type Case<'a> = (&'a str, Result<(i64, Vec<(&'a str, Value)>), EventError>);

    fn check(cases: &[Case]) {
        for (line, expected) in cases {
            let got = parse_event(line.as_bytes(), 42);
            let got = got.as_ref().map(|e| {
                let fields: Vec<(&str, Value)> = e
                    .fields
                    .iter()
                    .map(|(name, value)| (name.as_str(), value.clone()))
                    .collect();
                (e.time, fields)
            });
            let expected = expected
                .as_ref()
                .map(|(time, fields)| (*time, fields.clone()));
            assert_eq!(got, expected, "{line}");
        }
    }

    #[test]
    fn repeated_names_become_one_multi_valued_field() {
        check(&[
            (
                r#"{"a.b":"x","a":{"b":"y"}}"#,
                Ok((42, vec![("a.b", j(r#"["x","y"]"#))])),
            ),
            (
                r#"{"a":{"b":"y"},"a.b":"x"}"#,
                Ok((42, vec![("a.b", j(r#"["y","x"]"#))])),
            ),
            // Array values are spliced in, one level deep.
            (
                r#"{"a.b":[1,2],"a":{"b":3}}"#,
                Ok((42, vec![("a.b", j("[1,2,3]"))])),
            ),
            (
                r#"{"a":[[1],2],"a":3}"#,
                Ok((42, vec![("a", j("[[1],2,3]"))])),
            ),
            (r#"{"a":[],"a":"x"}"#, Ok((42, vec![("a", j(r#"["x"]"#))]))),
            // A key repeated in one object (serde_json's map would keep only the last).
            (r#"{"a":1,"a":2}"#, Ok((42, vec![("a", j("[1,2]"))]))),
            (
                r#"{"n":1,"n":"one","n":1.5,"n":false,"n":18446744073709551615,"n":-0.0}"#,
                Ok((
                    42,
                    vec![("n", j(r#"[1,"one",1.5,false,18446744073709551615,-0.0]"#))],
                )),
            ),
            // The field keeps its first value's place; other names keep theirs.
            (
                r#"{"x":0,"a.b":"x","y":1,"a":{"b":{"c":1},"b":true}}"#,
                Ok((
                    42,
                    vec![
                        ("x", Value::I64(0)),
                        ("a.b", j(r#"["x",true]"#)),
                        ("y", Value::I64(1)),
                        ("a.b.c", Value::I64(1)),
                    ],
                )),
            ),
            // Null and `{}` are no value, so they repeat nothing.
            (
                r#"{"a.b":"x","a":{"b":null}}"#,
                Ok((42, vec![("a.b", s("x"))])),
            ),
            (r#"{"a":{},"a":"x","e":{}}"#, Ok((42, vec![("a", s("x"))]))),
            // Repeated keys inside an array's objects stay in its JSON text.
            (
                r#"{"k":[{"z":1,"z":2}]}"#,
                Ok((42, vec![("k", j(r#"[{"z":1,"z":2}]"#))])),
            ),
        ]);
    }

    #[test]
    fn time_field_rules() {
        let t = 1_704_164_645_000_000_000;
        let bad = |value: &str| {
            Err(EventError::BadTime {
                value: value.to_owned(),
            })
        };
        check(&[
            (r#"{"_time":"yesterday","x":1}"#, bad(r#""yesterday""#)),
            (r#"{"_time":{"a":1}}"#, bad(r#"{"a":1}"#)),
            (r#"{"_time":{}}"#, bad("{}")),
            (r#"{"_time":[1704164645]}"#, bad("[1704164645]")),
            (r#"{"_time":true}"#, bad("true")),
            (
                r#"{"_time":"1704164645","_time":1}"#,
                bad(r#"["1704164645",1]"#),
            ),
            // Past the i64 nanoseconds range (year 2262): an error, not a clamped time.
            (r#"{"_time":50000000000}"#, bad("50000000000")),
            (
                r#"{"_time":18446744073709551615}"#,
                bad("18446744073709551615"),
            ),
            (r#"{"_time":"1e30"}"#, bad(r#""1e30""#)),
            (
                r#"{"_time":"3000-01-01T00:00:00Z"}"#,
                bad(r#""3000-01-01T00:00:00Z""#),
            ),
            // `_time` wins over the other sources, which then stay ordinary fields.
            (
                r#"{"time":"x","_time":"1704164645","_time":null}"#,
                Ok((t, vec![("time", s("x"))])),
            ),
            (r#"{"_time":null,"time":1704164645}"#, Ok((t, vec![]))),
            (
                r#"{"@timestamp":"bad","timestamp":1704164645}"#,
                Ok((t, vec![("@timestamp", s("bad"))])),
            ),
            // Other sources that do not parse, or hold two values, stay ordinary fields.
            (
                r#"{"time":50000000000}"#,
                Ok((42, vec![("time", Value::I64(50_000_000_000))])),
            ),
            (
                r#"{"time":1704164645,"time":2}"#,
                Ok((42, vec![("time", j("[1704164645,2]"))])),
            ),
            (
                r#"{"timestamp":{"s":1704164645}}"#,
                Ok((42, vec![("timestamp.s", Value::I64(1_704_164_645))])),
            ),
            // A nested `_time` is an ordinary name, kept as it is.
            (
                r#"{"x":{"_time":"2024-01-02T03:04:05Z"},"y._time":1}"#,
                Ok((
                    42,
                    vec![
                        ("x._time", s("2024-01-02T03:04:05Z")),
                        ("y._time", Value::I64(1)),
                    ],
                )),
            ),
        ]);
        let error = parse_event(br#"{"_time":"yesterday"}"#, 0).unwrap_err();
        assert_eq!(
            error.to_string(),
            r#"_time: cannot parse "yesterday" as a time (RFC 3339 or epoch s/ms/us/ns)"#
        );
        // A long value is quoted in part, cut at a char boundary.
        let long = format!(r#"{{"_time":"{}"}}"#, "é".repeat(100));
        let Err(EventError::BadTime { value }) = parse_event(long.as_bytes(), 0) else {
            panic!("expected BadTime");
        };
        assert_eq!(value, format!("\"{}...", "é".repeat(49)));
    }

    #[test]
    fn at_most_max_segment_fields_distinct_names() {
        let line = |names: usize, repeated: usize| {
            let mut line = String::from("{");
            for i in 0..names {
                line.push_str(&format!("\"f{i}\":{i},"));
            }
            for i in 0..repeated {
                line.push_str(&format!("\"f{i}\":\"again\","));
            }
            line.pop();
            line.push('}');
            line
        };
        let limit = MAX_SEGMENT_FIELDS;
        let count = |line: String| parse_event(line.as_bytes(), 0).map(|e| e.fields.len());
        assert_eq!(count(line(limit, 0)), Ok(limit));
        // Repeated names count once.
        assert_eq!(count(line(limit, 3)), Ok(limit));
        assert_eq!(
            count(line(limit + 1, 0)),
            Err(EventError::TooManyFields {
                count: limit + 1,
                limit
            })
        );
        assert_eq!(
            EventError::TooManyFields {
                count: 70_000,
                limit
            }
            .to_string(),
            "event has 70000 fields; at most 65534 are allowed"
        );
    }

    #[test]
    fn rejects_non_objects_clearly() {
        assert_eq!(
            parse_event(b"[1]", 0),
            Err(EventError::NotAnObject("an array"))
        );
        assert!(matches!(
            parse_event(b"{\"a\":", 0),
            Err(EventError::Json(_))
        ));
    }
}
