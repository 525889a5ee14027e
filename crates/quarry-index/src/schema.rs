//! A data directory's (or tenant's) schema: the analyzers and the field mapping
//! (`quarry_store::mapping`) that decide how each field is indexed and kept. Indexing
//! (`SegmentBuilder`) and query planning read the same `Schema`, so a field is searched the
//! way it was indexed.

use crate::analysis::{Analyzer, Tokenizer, ENGLISH_STOP_WORDS};
use crate::event::{Event, EventError};
use quarry_format::Value;
use quarry_store::mapping::{AnalyzerName, FieldMapping, FieldType, Mapping, MAX_KEYWORD_LEN};
use quarry_store::Settings;
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
        let index = AnalyzerName::ALL
            .iter()
            .position(|&a| a == which)
            .unwrap_or(0);
        &self.analyzers[index]
    }

    /// Checks that `event`'s values fit their mapped types: a number field takes numbers, a
    /// boolean field booleans, a keyword at most `MAX_KEYWORD_LEN` bytes (arrays: each item).
    /// An event that does not fit is rejected at ingest, with its line, as Elasticsearch
    /// rejects it; nothing of it is stored.
    pub fn check(&self, event: &Event) -> Result<(), EventError> {
        if self.mapping.fields.is_empty() {
            return Ok(());
        }
        for (name, value) in &event.fields {
            let Some(rules) = self.rules(name) else {
                continue;
            };
            if !rules.index {
                continue;
            }
            let expected = match rules.ty {
                FieldType::Text => continue,
                FieldType::Keyword if keyword_items(value).all(|i| i.len() <= MAX_KEYWORD_LEN) => {
                    continue
                }
                FieldType::Number if numbers(value).is_some() => continue,
                FieldType::Boolean if booleans(value).is_some() => continue,
                FieldType::Keyword => format!("a keyword of at most {MAX_KEYWORD_LEN} bytes"),
                FieldType::Number => "a number".to_owned(),
                FieldType::Boolean => "true or false".to_owned(),
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
fn items(value: &Value) -> Vec<Value> {
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

/// A number field's values, or `None` if an item is not a number.
pub(crate) fn numbers(value: &Value) -> Option<Vec<Value>> {
    items(value)
        .into_iter()
        .map(|item| match item {
            Value::I64(_) | Value::U64(_) => Some(item),
            Value::F64(v) if !v.is_nan() => Some(item),
            _ => None,
        })
        .collect()
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
