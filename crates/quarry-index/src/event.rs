//! Events: one JSON object each, flattened to dotted field names, with a `_time`.
//!
//! - Nested objects flatten: `{"http": {"status": 200}}` becomes the field `http.status`.
//! - Strings are `Str`; integers `I64` (or `U64` above i64); other numbers `F64`; booleans
//!   `Bool`; arrays are kept as their JSON text (`Json`); `null` is no value.
//! - `_time` comes from the first of the top-level fields `_time`, `@timestamp`, `timestamp`,
//!   `time` that parses (RFC 3339 string, or epoch number/string in s, ms, µs or ns chosen by
//!   magnitude); that field becomes `_time` and is not kept under its own name. Without one,
//!   the event gets its ingestion time.

use chrono::DateTime;
use quarry_format::limits::MAX_FIELD_NAME_LEN;
use quarry_format::{Value, TIME_FIELD};
use serde_json::Value as Json;

pub const TIME_SOURCE_FIELDS: [&str; 4] = ["_time", "@timestamp", "timestamp", "time"];

/// One parsed event: its time and its flattened fields (in document order).
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
}

fn json_kind(value: &Json) -> &'static str {
    match value {
        Json::Null => "null",
        Json::Bool(_) => "a boolean",
        Json::Number(_) => "a number",
        Json::String(_) => "a string",
        Json::Array(_) => "an array",
        Json::Object(_) => "an object",
    }
}

/// Parses one JSON line into an event; `now` is the ingestion time used without a time field.
pub fn parse_event(line: &[u8], now: i64) -> Result<Event, EventError> {
    let json: Json = serde_json::from_slice(line).map_err(|e| EventError::Json(e.to_string()))?;
    let Json::Object(object) = json else {
        return Err(EventError::NotAnObject(json_kind(&json)));
    };
    let mut time = None;
    let mut time_key = None;
    for key in TIME_SOURCE_FIELDS {
        if let Some(t) = object.get(key).and_then(parse_time) {
            time = Some(t);
            time_key = Some(key);
            break;
        }
    }
    let mut fields = Vec::with_capacity(object.len());
    let mut name = String::new();
    for (key, value) in object {
        if Some(key.as_str()) == time_key {
            continue;
        }
        name.clear();
        name.push_str(&key);
        flatten(&mut name, value, &mut fields)?;
    }
    Ok(Event {
        time: time.unwrap_or(now),
        fields,
    })
}

fn flatten(
    name: &mut String,
    value: Json,
    out: &mut Vec<(String, Value)>,
) -> Result<(), EventError> {
    if name.len() > MAX_FIELD_NAME_LEN {
        return Err(EventError::FieldNameTooLong);
    }
    let value = match value {
        Json::Null => return Ok(()),
        Json::Bool(b) => Value::Bool(b),
        Json::Number(n) => {
            if let Some(i) = n.as_i64() {
                Value::I64(i)
            } else if let Some(u) = n.as_u64() {
                Value::U64(u)
            } else {
                Value::F64(n.as_f64().unwrap_or(f64::NAN))
            }
        }
        Json::String(s) => Value::Str(s),
        Json::Array(items) => Value::Json(Json::Array(items).to_string()),
        Json::Object(object) => {
            let base = name.len();
            for (key, value) in object {
                name.truncate(base);
                name.push('.');
                name.push_str(&key);
                flatten(name, value, out)?;
            }
            name.truncate(base);
            return Ok(());
        }
    };
    // A stray `_time` in a nested path cannot collide: only the top-level one is the time.
    if name == TIME_FIELD {
        name.insert(0, '_');
    }
    out.push((name.clone(), value));
    Ok(())
}

/// A time value as i64 nanoseconds since the epoch: RFC 3339 text, or an epoch number (or
/// numeric string) in seconds, milliseconds, microseconds or nanoseconds by magnitude.
pub fn parse_time(value: &Json) -> Option<i64> {
    match value {
        Json::String(s) => parse_time_str(s),
        Json::Number(n) => {
            if let Some(i) = n.as_i64() {
                Some(epoch_to_nanos(i as f64, Some(i)))
            } else {
                n.as_f64()
                    .filter(|f| f.is_finite())
                    .map(|f| epoch_to_nanos(f, None))
            }
        }
        _ => None,
    }
}

pub fn parse_time_str(s: &str) -> Option<i64> {
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return t.timestamp_nanos_opt();
    }
    if let Ok(i) = s.parse::<i64>() {
        return Some(epoch_to_nanos(i as f64, Some(i)));
    }
    s.parse::<f64>()
        .ok()
        .filter(|f| f.is_finite())
        .map(|f| epoch_to_nanos(f, None))
}

/// Epoch seconds are below 1e11 until the year 5138; ms below 1e14, µs below 1e17.
fn epoch_to_nanos(value: f64, exact: Option<i64>) -> i64 {
    let magnitude = value.abs();
    let scale: i64 = if magnitude < 1e11 {
        1_000_000_000
    } else if magnitude < 1e14 {
        1_000_000
    } else if magnitude < 1e17 {
        1_000
    } else {
        1
    };
    match exact {
        Some(i) => i.saturating_mul(scale),
        // Whole and fractional parts apart: `1704164645.25 * 1e9` is not exact in f64.
        None => {
            let whole = value.trunc();
            (whole as i64)
                .saturating_mul(scale)
                .saturating_add(((value - whole) * scale as f64).round() as i64)
        }
    }
}

/// RFC 3339 text of a nanosecond timestamp, in UTC with as many fraction digits as needed.
pub fn format_time(nanos: i64) -> String {
    DateTime::from_timestamp_nanos(nanos).to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)
}

#[cfg(test)]
mod tests {
    use super::*;

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
