//! Elasticsearch's `composite` aggregation: every combination of its sources' values as a
//! bucket, in the sources' order, paged with `size` and `after`.
//!
//! The tree (`NodeKind::Composite`) makes a bucket per combination over every match; this
//! front end orders them by the sources (each `asc` or `desc`, a missing value first or last
//! as `missing_order` says), keeps those after `after`, and shows the first `size` with
//! `after_key`, the key of the last one shown, for the next page. A page therefore costs a
//! pass over every match, as a first page does in Elasticsearch; the buckets one request
//! may make are bounded by `MAX_TREE_BUCKETS`.

use crate::es_aggs::{
    bad, count_option, date_value, field_of, time_buckets, time_offset, zone_of, DateFormat, Level,
};
use crate::ApiError;
use quarry_query::agg_tree::{
    BucketKey, BucketResult, CompositeSource, NodeKind, SourceKind, TermKey, MAX_TREE_BUCKETS,
};
use quarry_query::time::{Rounding, Zone};
use serde_json::{Map, Value as JsonValue};
use std::cmp::Ordering;

#[derive(Clone, Debug)]
pub(crate) struct CompositeView {
    sources: Vec<SourceView>,
    size: usize,
    /// `after`, by source name, as sent (read per source when rendering, when the schema
    /// says which fields hold dates).
    after: Option<Map<String, JsonValue>>,
}

#[derive(Clone, Debug)]
struct SourceView {
    name: String,
    field: String,
    descending: bool,
    missing_first: bool,
    shown: Shown,
}

#[derive(Clone, Debug)]
enum Shown {
    Terms,
    Histogram,
    /// A time bucket's start: in `format` and `zone` when given, else epoch milliseconds.
    /// `after` values are read in `zone`, with `now` for date math.
    Date {
        format: Option<DateFormat>,
        zone: Zone,
        now: i64,
    },
}

/// The tree node and the view of `composite` from its body.
pub(crate) fn parse(
    body: &JsonValue,
    path: &str,
    now: i64,
) -> Result<(NodeKind, CompositeView), ApiError> {
    let list = match body.get("sources") {
        None | Some(JsonValue::Null) => {
            return Err(bad(format!("{path}: Required [sources]")));
        }
        Some(JsonValue::Array(list)) if list.is_empty() => {
            return Err(bad(format!(
                "{path}: Composite [sources] cannot be null or empty"
            )))
        }
        Some(JsonValue::Array(list)) => list,
        Some(other) => return Err(bad(format!("{path}.sources: expected a list, got {other}"))),
    };
    let size = count_option(body, "size", 10, path)? as usize;
    if size > MAX_TREE_BUCKETS {
        return Err(bad(format!(
            "Trying to create too many buckets. Must be less than or equal to: \
             [{MAX_TREE_BUCKETS}] but was [{size}]. This limit can be set by changing the \
             [search.max_buckets] cluster level setting."
        )));
    }
    let mut sources = Vec::new();
    let mut views: Vec<SourceView> = Vec::new();
    for (i, item) in list.iter().enumerate() {
        let here = format!("{path}.sources.{i}");
        let (name, definition) = match item.as_object() {
            Some(object) if object.len() == 1 => object.iter().next().expect("one entry"),
            _ => {
                return Err(bad(format!(
                    "{here}: expected one named source, like {{\"name\": {{\"terms\": {{\"field\": ...}}}}}}"
                )))
            }
        };
        if views.iter().any(|v| &v.name == name) {
            return Err(bad(format!(
                "Composite source names must be unique, found duplicates: [{name}]"
            )));
        }
        let here = format!("{here}.{name}");
        let (kind, options) = match definition.as_object() {
            Some(object) if object.len() == 1 => object.iter().next().expect("one entry"),
            _ => {
                return Err(bad(format!(
                    "{here}: expected one of terms, histogram, date_histogram"
                )))
            }
        };
        let here = format!("{here}.{kind}");
        let known: &[&str] = match kind.as_str() {
            "terms" => &["field", "missing_bucket", "missing_order", "order", "value_type"],
            "histogram" => &["field", "missing_bucket", "missing_order", "order", "interval", "offset"],
            "date_histogram" => &[
                "field",
                "missing_bucket",
                "missing_order",
                "order",
                "calendar_interval",
                "fixed_interval",
                "interval",
                "offset",
                "time_zone",
                "format",
            ],
            other => {
                return Err(bad(format!(
                    "unsupported: {here}: composite source type [{other}] (Quarry takes terms, histogram, date_histogram)"
                )))
            }
        };
        let object = options
            .as_object()
            .ok_or_else(|| bad(format!("{here}: expected an object of options")))?;
        if let Some(key) = object.keys().find(|k| !known.contains(&k.as_str())) {
            return Err(bad(format!(
                "unsupported: {here}.{key} (Quarry takes {} here)",
                known.join(", ")
            )));
        }
        let field = field_of(options, &here)?;
        let descending = match options.get("order") {
            None => false,
            Some(JsonValue::String(o)) if o == "asc" => false,
            Some(JsonValue::String(o)) if o == "desc" => true,
            Some(other) => {
                return Err(bad(format!(
                    "{here}.order: expected \"asc\" or \"desc\", got {other}"
                )))
            }
        };
        let missing_bucket = match options.get("missing_bucket") {
            None => false,
            Some(JsonValue::Bool(b)) => *b,
            Some(other) => {
                return Err(bad(format!(
                    "{here}.missing_bucket: expected true or false, got {other}"
                )))
            }
        };
        let missing_first = match options.get("missing_order").and_then(JsonValue::as_str) {
            None | Some("default") => !descending,
            Some("first") => true,
            Some("last") => false,
            Some(other) => {
                return Err(bad(format!(
                    "{here}.missing_order: expected first, last or default, got {other:?}"
                )))
            }
        };
        if options.get("missing_order").is_some() && !missing_bucket {
            return Err(bad(format!(
                "{here}.missing_order: missing_order can only be set if missing_bucket is true"
            )));
        }
        let (kind, shown) = match kind.as_str() {
            "terms" => (SourceKind::Terms, Shown::Terms),
            "histogram" => {
                let interval = crate::es_aggs::number(options, "interval", &here)?
                    .filter(|i| i.is_finite() && *i > 0.0)
                    .ok_or_else(|| bad(format!("{here}: expected an interval > 0")))?;
                let offset = crate::es_aggs::number(options, "offset", &here)?.unwrap_or(0.0);
                (SourceKind::Histogram { interval, offset }, Shown::Histogram)
            }
            _ => {
                let zone = zone_of(options, &here)?;
                let offset = time_offset(options, &here)?;
                let buckets = time_buckets(options, zone, offset, &here)?;
                let format = match options.get("format") {
                    None => None,
                    Some(JsonValue::String(text)) => Some(
                        DateFormat::parse(text)
                            .map_err(|e| bad(format!("unsupported: {here}.format: {e}")))?,
                    ),
                    Some(other) => {
                        return Err(bad(format!(
                            "{here}.format: expected a string, got {other}"
                        )))
                    }
                };
                (
                    SourceKind::DateHistogram(buckets),
                    Shown::Date { format, zone, now },
                )
            }
        };
        sources.push(CompositeSource {
            field: field.clone(),
            kind,
            missing_bucket,
        });
        views.push(SourceView {
            name: name.clone(),
            field,
            descending,
            missing_first,
            shown,
        });
    }
    let after = match body.get("after") {
        None => None,
        Some(JsonValue::Object(after)) => {
            if after.len() != views.len() || views.iter().any(|v| !after.contains_key(&v.name)) {
                return Err(bad(format!(
                    "{path}.after: [after] has {} value(s) but [sources] has {}: give one value per source, by name",
                    after.len(),
                    views.len()
                )));
            }
            Some(after.clone())
        }
        Some(other) => {
            return Err(bad(format!(
                "{path}.after: expected an object of source names and values, got {other}"
            )))
        }
    };
    Ok((
        NodeKind::Composite { sources },
        CompositeView {
            sources: views,
            size,
            after,
        },
    ))
}

impl CompositeView {
    /// The buckets after `after` in the sources' order, the first `size` of them, and the
    /// key of the last one shown.
    pub(crate) fn render(
        &self,
        buckets: &[BucketResult],
        sub: &Level,
        ctx: crate::es_aggs::Ctx<'_>,
        path: &str,
    ) -> Result<JsonValue, ApiError> {
        let after = match &self.after {
            None => None,
            Some(after) => Some(
                self.sources
                    .iter()
                    .map(|source| source.after_part(&after[&source.name], ctx, path))
                    .collect::<Result<Vec<TermKey>, ApiError>>()?,
            ),
        };
        let mut keyed: Vec<(&[TermKey], &BucketResult)> = buckets
            .iter()
            .filter_map(|bucket| match &bucket.key {
                BucketKey::Term(TermKey::Tuple(parts)) => Some((&parts[..], bucket)),
                _ => None,
            })
            .filter(|(parts, _)| {
                after
                    .as_ref()
                    .is_none_or(|after| self.compare(parts, after) == Ordering::Greater)
            })
            .collect();
        keyed.sort_by(|a, b| self.compare(a.0, b.0));
        keyed.truncate(self.size);
        let mut list = Vec::with_capacity(keyed.len());
        let mut after_key = None;
        for (parts, bucket) in keyed {
            let key: Map<String, JsonValue> = self
                .sources
                .iter()
                .zip(parts)
                .map(|(source, part)| (source.name.clone(), source.show(part, ctx)))
                .collect();
            after_key = Some(JsonValue::Object(key.clone()));
            let mut head = Map::new();
            head.insert("key".into(), JsonValue::Object(key));
            head.insert("doc_count".into(), bucket.count.into());
            list.push(JsonValue::Object(sub.bucket_json(
                head,
                &bucket.children,
                ctx,
            )?));
        }
        let mut out = Map::new();
        if let Some(after_key) = after_key {
            out.insert("after_key".into(), after_key);
        }
        out.insert("buckets".into(), list.into());
        Ok(JsonValue::Object(out))
    }

    fn compare(&self, a: &[TermKey], b: &[TermKey]) -> Ordering {
        self.sources
            .iter()
            .zip(a.iter().zip(b))
            .map(|(source, (a, b))| source.compare(a, b))
            .find(|o| o.is_ne())
            .unwrap_or(Ordering::Equal)
    }
}

impl SourceView {
    fn compare(&self, a: &TermKey, b: &TermKey) -> Ordering {
        let missing = if self.missing_first {
            Ordering::Less
        } else {
            Ordering::Greater
        };
        match (a, b) {
            (TermKey::Missing, TermKey::Missing) => Ordering::Equal,
            (TermKey::Missing, _) => missing,
            (_, TermKey::Missing) => missing.reverse(),
            _ => {
                let order = compare_values(a, b);
                if self.descending {
                    order.reverse()
                } else {
                    order
                }
            }
        }
    }

    /// A key part as Elasticsearch shows it.
    fn show(&self, part: &TermKey, ctx: crate::es_aggs::Ctx<'_>) -> JsonValue {
        match (part, &self.shown) {
            (TermKey::Missing, _) => JsonValue::Null,
            (TermKey::Int(nanos), Shown::Date { format, zone, .. }) => match format {
                Some(format) => format.format(*nanos, *zone).into(),
                None => nanos.div_euclid(1_000_000).into(),
            },
            (TermKey::Int(nanos), Shown::Terms) if ctx.is_date(&self.field) => {
                nanos.div_euclid(1_000_000).into()
            }
            (TermKey::Str(s), _) => s.clone().into(),
            (TermKey::Bool(b), _) => (*b).into(),
            (TermKey::Int(v), _) => (*v).into(),
            (TermKey::Uint(v), _) => (*v).into(),
            (TermKey::Float(bits), _) => serde_json::Number::from_f64(f64::from_bits(*bits))
                .map_or(JsonValue::Null, JsonValue::Number),
            (TermKey::Tuple(_), _) => JsonValue::Null,
        }
    }

    /// An `after` value as a key part of this source.
    fn after_part(
        &self,
        value: &JsonValue,
        ctx: crate::es_aggs::Ctx<'_>,
        path: &str,
    ) -> Result<TermKey, ApiError> {
        let here = format!("{path}.after.{}", self.name);
        if value.is_null() {
            return Ok(TermKey::Missing);
        }
        let date = match &self.shown {
            Shown::Date { zone, now, .. } => Some((*zone, *now)),
            Shown::Terms if ctx.is_date(&self.field) => Some((Zone::Utc, 0)),
            _ => None,
        };
        if let Some((zone, now)) = date {
            return Ok(TermKey::Int(date_value(
                value,
                zone,
                Rounding::Down,
                now,
                &here,
            )?));
        }
        Ok(match value {
            JsonValue::String(s) => TermKey::Str(s.clone()),
            JsonValue::Bool(b) => TermKey::Bool(*b),
            JsonValue::Number(n) => match (n.as_i64(), n.as_u64()) {
                (Some(v), _) => TermKey::Int(v),
                (None, Some(v)) => TermKey::Uint(v),
                _ => TermKey::float(n.as_f64().unwrap_or(f64::NAN)),
            },
            other => return Err(bad(format!("{here}: expected a value, got {other}"))),
        })
    }
}

/// Two values of a source: numbers (booleans as 0 and 1) by value, before strings, which
/// compare by their bytes.
fn compare_values(a: &TermKey, b: &TermKey) -> Ordering {
    match (a, b) {
        (TermKey::Int(x), TermKey::Int(y)) => x.cmp(y),
        (TermKey::Uint(x), TermKey::Uint(y)) => x.cmp(y),
        (TermKey::Str(x), TermKey::Str(y)) => x.cmp(y),
        (TermKey::Str(_), _) => Ordering::Greater,
        (_, TermKey::Str(_)) => Ordering::Less,
        _ => {
            let (x, y) = (
                a.as_f64().unwrap_or(f64::NAN),
                b.as_f64().unwrap_or(f64::NAN),
            );
            x.total_cmp(&y)
        }
    }
}
