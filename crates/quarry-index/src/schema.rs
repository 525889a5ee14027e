//! A data directory's (or tenant's) schema: the analyzers and the field mapping
//! (`quarry_store::mapping`) that decide how each field is indexed and kept. Indexing
//! (`SegmentBuilder`) and query planning read the same `Schema`, so a field is searched the
//! way it was indexed.

use crate::analysis::{Analyzer, Tokenizer, ENGLISH_STOP_WORDS};
use crate::event::{Event, EventError};
use quarry_format::Value;
use quarry_store::mapping::{
    AnalyzerName, Dynamic, FieldMapping, FieldType, Mapping, NumberType, MAX_KEYWORD_LEN,
};
use quarry_store::Settings;
use std::net::IpAddr;
use std::sync::Arc;

#[derive(Debug, Clone)]
pub struct Schema {
    mapping: Mapping,
    /// By `AnalyzerName` (its index in `AnalyzerName::ALL`); `standard` first.
    analyzers: [Arc<Analyzer>; 4],
}

impl Default for Schema {
    fn default() -> Self {
        Schema::dynamic(Arc::new(Analyzer::default()))
    }
}

impl Schema {
    /// Every field dynamic, analyzed by `analyzer`.
    pub fn dynamic(analyzer: Arc<Analyzer>) -> Schema {
        Schema::new(analyzer, Mapping::default())
    }

    /// `analyzer` is the `standard` one (with the data directory's stop words).
    pub fn new(analyzer: Arc<Analyzer>, mapping: Mapping) -> Schema {
        let stop = Analyzer::new(
            analyzer
                .stop_words()
                .map(str::to_owned)
                .chain(ENGLISH_STOP_WORDS.map(str::to_owned)),
        );
        let whitespace = Analyzer::default().with_tokenizer(Tokenizer::Whitespace);
        let keyword = Analyzer::default().with_tokenizer(Tokenizer::Keyword);
        Schema {
            mapping,
            analyzers: [
                analyzer,
                Arc::new(stop),
                Arc::new(whitespace),
                Arc::new(keyword),
            ],
        }
    }

    /// The schema a data directory's settings describe.
    pub fn from_settings(settings: &Settings) -> Schema {
        let analyzer = Analyzer::new(settings.stop_words.iter().cloned());
        Schema::new(Arc::new(analyzer), settings.mapping.clone())
    }

    pub fn mapping(&self) -> &Mapping {
        &self.mapping
    }

    /// The analyzer of unmapped fields (`standard`).
    pub fn analyzer(&self) -> &Arc<Analyzer> {
        &self.analyzers[0]
    }

    /// The rules of field `name`, or `None` when it is dynamic.
    pub fn rules(&self, name: &str) -> Option<&FieldMapping> {
        self.mapping.rules(name)
    }

    /// The analyzer that indexes (and searches) field `name`.
    pub fn analyzer_for(&self, name: &str) -> &Arc<Analyzer> {
        let which = self
            .rules(name)
            .map_or(AnalyzerName::Standard, |r| r.analyzer);
        self.analyzer_named(which)
    }

    /// The analyzer a mapping (or a query's `analyzer` option) names.
    pub fn analyzer_named(&self, which: AnalyzerName) -> &Arc<Analyzer> {
        let index = AnalyzerName::ALL
            .iter()
            .position(|&a| a == which)
            .unwrap_or(0);
        &self.analyzers[index]
    }

    /// The rules a segment indexes field `name` by: its mapping's; for an unmapped field
    /// that `dynamic` does not let in (false, or strict on a WAL replayed after the mapping
    /// changed), kept and not indexed; `None`: dynamic.
    pub fn index_rules(&self, name: &str) -> Option<FieldMapping> {
        if let Some(rules) = self.rules(name) {
            return Some(*rules);
        }
        match self.mapping.dynamic_for(name) {
            Dynamic::True => None,
            Dynamic::False | Dynamic::Strict => Some(FieldMapping::new(FieldType::Binary)),
        }
    }

    /// Whether a block's field `name` keeps its token positions in its values (FORMAT.md,
    /// "Positions from values"): an unmapped field, tokenized by the standard analyzer, whose
    /// every value is kept in its columns (`segment::value_tokens` reads them back).
    pub fn positions_from_values(&self, name: &str) -> bool {
        self.index_rules(name).is_none()
            && self.mapping.flat_root(name).is_none()
            && self.analyzer_for(name).tokenizer() == Tokenizer::Standard
    }

    /// Whether field `name` is unmapped and kept without being indexed (`dynamic: false`):
    /// every query on it matches nothing, as in Elasticsearch.
    pub fn is_unindexed_unmapped(&self, name: &str) -> bool {
        self.rules(name).is_none() && self.mapping.dynamic_for(name) != Dynamic::True
    }

    /// Checks that `event`'s values fit their mapped types: a number field takes numbers, a
    /// boolean field booleans, a keyword at most `MAX_KEYWORD_LEN` bytes, a date field dates
    /// in its formats, an ip field addresses (arrays: each item); and that under `dynamic:
    /// strict` it holds no unmapped field. An event that does not fit is rejected at ingest,
    /// with its line, as Elasticsearch rejects it; nothing of it is stored. Fields mapped
    /// `ignore_malformed` take any value (one that does not fit is kept, not indexed).
    pub fn check(&self, event: &Event) -> Result<(), EventError> {
        if self.mapping.fields.is_empty()
            && self.mapping.all_dynamic()
            && self.mapping.flat_objects.is_empty()
        {
            return Ok(());
        }
        for (name, value) in &event.fields {
            if let Some(root) = self.mapping.flat_root(name) {
                // Under a flat object any value goes; the object itself is an object.
                if root == name.as_str() && !is_flat_object_value(value) {
                    return Err(EventError::Mapping {
                        field: name.clone(),
                        message: format!(
                            "is mapped as a flat_object: it takes a JSON object; got {}",
                            crate::event::cut_for_message(crate::event::value_text(value))
                        ),
                    });
                }
                continue;
            }
            if let Some(constant) = self.mapping.constant(name) {
                if let Some(other) = keyword_items(value).find(|item| item != constant) {
                    return Err(EventError::Mapping {
                        field: name.clone(),
                        message: format!(
                            "is a constant_keyword field holding only {constant:?}; got {}",
                            crate::event::cut_for_message(other)
                        ),
                    });
                }
            }
            // A field mapped with a type holds values: an object there (`{"k": {"a": 1}}`,
            // flattened to `k.a`) is refused, as Elasticsearch refuses it.
            let mapped_above = name
                .match_indices('.')
                .map(|(dot, _)| &name[..dot])
                .find(|above| self.mapping.fields.contains_key(*above));
            if let Some(above) = mapped_above {
                let message = match self.mapping.completions.contains(above) {
                    true => "is a completion field: it takes input strings (inputs with weights, \
                             {input, weight}, are not supported)"
                        .to_owned(),
                    false => format!(
                        "is mapped as a {} field: it takes values, not an object",
                        format!("{:?}", self.mapping.fields[above].ty).to_lowercase()
                    ),
                };
                return Err(EventError::Mapping {
                    field: above.to_owned(),
                    message,
                });
            }
            let Some(rules) = self.rules(name) else {
                if self.mapping.dynamic_for(name) == Dynamic::Strict {
                    let (parent, name) = name.rsplit_once('.').unwrap_or(("_doc", name));
                    return Err(EventError::StrictDynamic {
                        name: name.to_owned(),
                        parent: parent.to_owned(),
                    });
                }
                continue;
            };
            if !rules.index || rules.ignore_malformed {
                continue;
            }
            let expected = match rules.ty {
                FieldType::Text | FieldType::Binary | FieldType::GeoPoint => continue,
                FieldType::Keyword if keyword_items(value).all(|i| i.len() <= MAX_KEYWORD_LEN) => {
                    continue
                }
                FieldType::Number if numbers(rules, value).is_some() => continue,
                FieldType::Boolean if booleans(value).is_some() => continue,
                FieldType::Date | FieldType::DateNanos if dates(rules, value).is_some() => continue,
                FieldType::Ip if ip_addresses(value).is_some() => continue,
                FieldType::Keyword => format!("a keyword of at most {MAX_KEYWORD_LEN} bytes"),
                FieldType::Number => match rules.number_type.integer_range() {
                    Some((lo, hi)) => {
                        format!("a number ({}: {lo} to {hi})", rules.number_type.name())
                    }
                    None => "a number".to_owned(),
                },
                FieldType::Boolean => "true or false".to_owned(),
                FieldType::Date | FieldType::DateNanos => {
                    format!("a date in the format [{}]", rules.format.name())
                }
                FieldType::Ip => "an IP address".to_owned(),
            };
            let got = match value {
                Value::Str(s) => serde_json::to_string(s).unwrap_or_default(),
                other => crate::event::value_text(other),
            };
            return Err(EventError::Mapping {
                field: name.clone(),
                message: format!(
                    "is mapped to take {expected}; got {}",
                    crate::event::cut_for_message(got)
                ),
            });
        }
        Ok(())
    }
}

/// The items of a value: an array's (kept as JSON text) or the value itself.
pub(crate) fn items(value: &Value) -> Vec<Value> {
    match value {
        Value::Json(text) => match serde_json::from_str::<serde_json::Value>(text) {
            Ok(serde_json::Value::Array(items)) => items
                .into_iter()
                .filter(|item| !item.is_null())
                .map(|item| match item {
                    serde_json::Value::String(s) => Value::Str(s),
                    serde_json::Value::Bool(b) => Value::Bool(b),
                    serde_json::Value::Number(n) => n
                        .as_i64()
                        .map(Value::I64)
                        .or_else(|| n.as_u64().map(Value::U64))
                        .unwrap_or_else(|| Value::F64(n.as_f64().unwrap_or(f64::NAN))),
                    other => Value::Json(other.to_string()),
                })
                .collect(),
            _ => vec![value.clone()],
        },
        other => vec![other.clone()],
    }
}

/// A keyword field's terms: strings as they are, numbers and booleans as their JSON text.
pub(crate) fn keyword_items(value: &Value) -> impl Iterator<Item = String> {
    items(value).into_iter().map(|item| match item {
        Value::Str(s) | Value::Json(s) => s,
        other => crate::event::value_text(&other),
    })
}

/// The whole part of a plain decimal (`-12.75` → -12), exactly; `None` for anything else
/// (an exponent, no digits, past i128).
fn whole_part(text: &str) -> Option<i128> {
    let (whole, fraction) = text.split_once('.')?;
    let digits = whole.strip_prefix(['-', '+']).unwrap_or(whole);
    let plain = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if digits.is_empty() || !plain(digits) || !plain(fraction) {
        return None;
    }
    whole.parse::<i128>().ok()
}

/// A `flat_object` value's keywords, each with the path under the value it sits at (`""`
/// for the value itself): every string, number and boolean, arrays flattened into their
/// field, numbers as JSON writes them (`80.0`, the token OpenSearch keeps).
pub(crate) fn flat_items(value: &Value) -> Vec<(String, String)> {
    fn walk(value: &serde_json::Value, path: &str, out: &mut Vec<(String, String)>) {
        match value {
            serde_json::Value::Null => {}
            serde_json::Value::String(text) => out.push((path.to_owned(), text.clone())),
            serde_json::Value::Array(items) => items.iter().for_each(|item| walk(item, path, out)),
            serde_json::Value::Object(entries) => {
                for (key, item) in entries {
                    let inner = if path.is_empty() {
                        key.clone()
                    } else {
                        format!("{path}.{key}")
                    };
                    walk(item, &inner, out);
                }
            }
            other => out.push((path.to_owned(), other.to_string())),
        }
    }
    let mut out = Vec::new();
    match value {
        Value::Json(text) => match serde_json::from_str(text) {
            Ok(tree) => walk(&tree, "", &mut out),
            Err(_) => out.push((String::new(), text.clone())),
        },
        Value::F64(v) => out.push((
            String::new(),
            serde_json::Number::from_f64(*v).map_or_else(|| v.to_string(), |n| n.to_string()),
        )),
        other => out.push((String::new(), crate::event::value_text(other))),
    }
    out
}

/// Whether a `flat_object`'s own value is one: an object (flattened, so no value of its own)
/// or an array of objects.
fn is_flat_object_value(value: &Value) -> bool {
    let Value::Json(text) = value else {
        return false;
    };
    matches!(
        serde_json::from_str::<serde_json::Value>(text),
        Ok(serde_json::Value::Array(items))
            if !items.is_empty() && items.iter().all(serde_json::Value::is_object)
    )
}

/// A number field's values as its mapped type indexes them (`number_value`), or `None` if
/// an item is not a number of that type.
pub(crate) fn numbers(rules: &FieldMapping, value: &Value) -> Option<Vec<Value>> {
    items(value)
        .into_iter()
        .map(|item| number_value(rules, &item))
        .collect()
}

/// One value of a number field as its mapped type (`NumberType`) indexes and aggregates it:
/// a number, or a string holding one (Elasticsearch's `coerce`); an integer type truncates a
/// fraction and refuses a value out of its range; `float` and `half_float` round to their
/// precision, `scaled_float` to the nearest multiple of `1 / scaling_factor`. `None`: not a
/// number of the type.
pub fn number_value(rules: &FieldMapping, item: &Value) -> Option<Value> {
    let number = match item {
        Value::I64(_) | Value::U64(_) => item.clone(),
        Value::F64(v) if v.is_finite() => item.clone(),
        Value::Str(text) => {
            let text = text.trim();
            if let Ok(v) = text.parse::<i64>() {
                Value::I64(v)
            } else if let Ok(v) = text.parse::<u64>() {
                Value::U64(v)
            } else {
                Value::F64(text.parse::<f64>().ok().filter(|v| v.is_finite())?)
            }
        }
        _ => return None,
    };
    let float = match number {
        Value::I64(v) => v as f64,
        Value::U64(v) => v as f64,
        Value::F64(v) => v,
        _ => return None,
    };
    if let Some((lo, hi)) = rules.number_type.integer_range() {
        // A decimal written as a string is truncated from its digits, not through an f64
        // that would round a large whole part (`"10223372036854775807.23"`).
        let exact_whole = match item {
            Value::Str(text) => whole_part(text.trim()),
            _ => None,
        };
        let whole: i128 = match (exact_whole, number) {
            (Some(whole), _) => whole,
            (None, number) => match number {
                Value::I64(v) => v.into(),
                Value::U64(v) => v.into(),
                // Truncated toward zero, as Elasticsearch coerces; `as` saturates, and the range
                // check below refuses what saturated.
                _ => float.trunc() as i128,
            },
        };
        if whole < lo || whole > hi {
            return None;
        }
        return Some(match i64::try_from(whole) {
            Ok(v) => Value::I64(v),
            Err(_) => Value::U64(u64::try_from(whole).ok()?),
        });
    }
    let rounded = match rules.number_type {
        NumberType::Float => f64::from(float as f32),
        NumberType::HalfFloat => half::f16::from_f64(float).to_f64(),
        NumberType::ScaledFloat => {
            let factor = rules.scaling_factor.map_or(1.0, |f| f.get());
            (float * factor).round() / factor
        }
        _ => return Some(number),
    };
    rounded.is_finite().then_some(Value::F64(rounded))
}

/// A boolean field's values, or `None` if an item is not a boolean.
pub(crate) fn booleans(value: &Value) -> Option<Vec<bool>> {
    items(value)
        .into_iter()
        .map(|item| match item {
            Value::Bool(b) => Some(b),
            _ => None,
        })
        .collect()
}

/// A date field's values as its indexed numbers (epoch milliseconds, or nanoseconds for
/// `date_nanos`), or `None` if an item is not a date in the field's formats. A number is read
/// as its text, as Elasticsearch reads it (`epoch_millis` in the default formats).
pub fn dates(rules: &FieldMapping, value: &Value) -> Option<Vec<i64>> {
    let unit = rules.ty.date_unit_nanos()?;
    items(value)
        .into_iter()
        .map(|item| {
            let text = match item {
                Value::Str(s) => s,
                Value::I64(_) | Value::U64(_) => crate::event::value_text(&item),
                // Display never writes an exponent: 1.5e12 is `1500000000000`.
                Value::F64(v) if v.is_finite() => format!("{v}"),
                _ => return None,
            };
            let nanos = rules.format.read_utc(&text)?;
            // `date_nanos` holds 1970 to 2262 (non-negative i64 nanoseconds), as in
            // Elasticsearch.
            if rules.ty == FieldType::DateNanos && nanos < 0 {
                return None;
            }
            i64::try_from(nanos.div_euclid(unit)).ok()
        })
        .collect()
}

/// An address as an ip field indexes it: an IPv4 address (also written as IPv4-mapped IPv6,
/// `::ffff:1.2.3.4`) as `IpAddr::V4`, any other IPv6 one as `IpAddr::V6`.
pub fn ip_address(text: &str) -> Option<IpAddr> {
    match text.parse::<IpAddr>().ok()? {
        IpAddr::V6(v6) => Some(v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4)),
        v4 => Some(v4),
    }
}

/// An ip field's values, or `None` if an item is not an address string.
pub fn ip_addresses(value: &Value) -> Option<Vec<IpAddr>> {
    items(value)
        .into_iter()
        .map(|item| match item {
            Value::Str(s) => ip_address(&s),
            _ => None,
        })
        .collect()
}
