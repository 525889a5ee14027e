//! Hits sorted by a field's value (`--sort latency:desc`, `sort=host:asc`, Elasticsearch's
//! `"sort": [{"latency": "desc"}]`), paged with a cursor (`search_after`).
//!
//! Every match is visited (no skipping by min/max yet) and the best `limit` are kept in a
//! heap. The order is total, so pages never repeat or skip a hit:
//! - numbers (any numeric column, compared as 64-bit floats) before strings (byte order),
//!   reversed for a descending sort;
//! - events without a value for the field last in both directions (Elasticsearch's
//!   `"missing": "_last"`);
//! - equal values in time order (`_time`, block id, doc id), reversed for a descending sort,
//!   so a descending sort shows the newest of equal values first.
//!
//! A field that holds both numbers and strings (in different events) sorts the numbers first.

use crate::aggregation::{FieldCursor, FieldValue};
use crate::error::{QueryError, Result};
use crate::searcher::{Hit, Searcher};
use crate::weight::Weight;
use quarry_format::column::ChunkCursor;
use quarry_format::{DecodeError, TERMINATED};
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// Sort hits by `field`.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldSort {
    pub field: String,
    pub descending: bool,
}

/// A hit's value for the sort.
#[derive(Debug, Clone, PartialEq)]
pub enum SortValue {
    Number(f64),
    Str(String),
    Missing,
}

impl SortValue {
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            // Whole numbers print as integers (an integer column's values, as sent).
            SortValue::Number(v) if v.fract() == 0.0 && v.abs() < 9.0e15 => (*v as i64).into(),
            SortValue::Number(v) => serde_json::Number::from_f64(*v)
                .map_or(serde_json::Value::Null, serde_json::Value::Number),
            SortValue::Str(s) => serde_json::Value::String(s.clone()),
            SortValue::Missing => serde_json::Value::Null,
        }
    }

    fn as_ref(&self) -> ValueRef<'_> {
        match self {
            SortValue::Number(v) => ValueRef::Number(*v),
            SortValue::Str(s) => ValueRef::Str(s),
            SortValue::Missing => ValueRef::Missing,
        }
    }
}

/// Where a page sorted by a field ends: its last hit's value and place in time order. Printed
/// as `time:block:doc:VALUE`, VALUE being `n` and a number's bits in hex, `s` and a JSON
/// string, or `m` for a missing value.
#[derive(Debug, Clone, PartialEq)]
pub struct SortCursor {
    pub value: SortValue,
    pub time: i64,
    pub block_id: u64,
    pub doc: u32,
}

impl SortCursor {
    pub fn parse(text: &str) -> Option<SortCursor> {
        let mut parts = text.splitn(4, ':');
        let time = parts.next()?.parse().ok()?;
        let block_id = parts.next()?.parse().ok()?;
        let doc = parts.next()?.parse().ok()?;
        let value = parts.next()?;
        let value = match value.split_at_checked(1)? {
            ("m", "") => SortValue::Missing,
            ("n", bits) => SortValue::Number(f64::from_bits(u64::from_str_radix(bits, 16).ok()?)),
            ("s", json) => SortValue::Str(serde_json::from_str(json).ok()?),
            _ => return None,
        };
        Some(SortCursor {
            value,
            time,
            block_id,
            doc,
        })
    }

    fn key(&self) -> Key<'_> {
        Key {
            value: self.value.as_ref(),
            time: self.time,
            block_id: self.block_id,
            doc: self.doc,
        }
    }
}

impl std::fmt::Display for SortCursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}:{}:", self.time, self.block_id, self.doc)?;
        match &self.value {
            // The bits, so that -0.0 and NaN page exactly.
            SortValue::Number(v) => write!(f, "n{:x}", v.to_bits()),
            SortValue::Str(s) => write!(f, "s{}", serde_json::Value::String(s.clone())),
            SortValue::Missing => f.write_str("m"),
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum ValueRef<'v> {
    Number(f64),
    Str(&'v str),
    Missing,
}

impl ValueRef<'_> {
    fn to_owned(self) -> SortValue {
        match self {
            ValueRef::Number(v) => SortValue::Number(v),
            ValueRef::Str(s) => SortValue::Str(s.to_owned()),
            ValueRef::Missing => SortValue::Missing,
        }
    }
}

/// A hit's place in the sort.
#[derive(Debug, Clone, Copy)]
struct Key<'v> {
    value: ValueRef<'v>,
    time: i64,
    block_id: u64,
    doc: u32,
}

/// `Less` when `a` comes first.
fn order(a: &Key<'_>, b: &Key<'_>, descending: bool) -> Ordering {
    let missing = |k: &Key<'_>| matches!(k.value, ValueRef::Missing);
    let last = missing(a).cmp(&missing(b));
    if last != Ordering::Equal {
        return last;
    }
    let by_value = match (a.value, b.value) {
        (ValueRef::Number(x), ValueRef::Number(y)) => x.total_cmp(&y),
        (ValueRef::Str(x), ValueRef::Str(y)) => x.as_bytes().cmp(y.as_bytes()),
        (ValueRef::Number(_), _) => Ordering::Less,
        (_, ValueRef::Number(_)) => Ordering::Greater,
        _ => Ordering::Equal,
    };
    let ordering = by_value.then((a.time, a.block_id, a.doc).cmp(&(b.time, b.block_id, b.doc)));
    if descending {
        ordering.reverse()
    } else {
        ordering
    }
}

/// A kept hit; the heap's greatest is the one that comes last.
struct Entry {
    cursor: SortCursor,
    block: u32,
    descending: bool,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        order(&self.cursor.key(), &other.cursor.key(), self.descending)
    }
}

impl Searcher {
    /// The first `limit` matches of `weight` in the order of `sort`, after `after`, each with
    /// its cursor.
    pub(crate) fn by_field(
        &self,
        weight: &Weight,
        sort: &FieldSort,
        limit: usize,
        after: Option<&SortCursor>,
    ) -> Result<Vec<(Hit, SortCursor)>> {
        crate::query::not_nested(self.schema(), &sort.field)?;
        let rules = self.schema().rules(&sort.field).cloned();
        // A cursor's value as the field sorts (a date given as text is its time).
        let after = after.map(|a| {
            let mut a = a.clone();
            if let Some(value) = typed(rules.as_ref(), a.value.as_ref()) {
                a.value = value;
            }
            a
        });
        let after = after.as_ref();
        let mut heap: BinaryHeap<Entry> = BinaryHeap::with_capacity(limit + 1);
        if limit == 0 {
            return Ok(Vec::new());
        }
        for (index, block) in self.blocks.iter().enumerate() {
            let Some(mut scorer) = weight.scorer(index, block)? else {
                continue;
            };
            let block_id = self.block_ids[index];
            let corrupt = |e: DecodeError| QueryError::from(block.corrupt("_time column", e));
            let mut times = ChunkCursor::new(
                block
                    .time_column()
                    .ok_or_else(|| corrupt(DecodeError::new("no _time column")))?,
            );
            let mut values = FieldCursor::new(block, &sort.field);
            let mut doc = scorer.doc();
            while doc != TERMINATED {
                let time = match times.find(doc).map_err(corrupt)? {
                    Some((chunk, position)) => chunk.raw(position).map(|raw| raw as i64),
                    None => None,
                }
                .ok_or_else(|| corrupt(DecodeError::new("doc without _time")))?;
                let mut offer = |value: ValueRef<'_>| {
                    let typed = typed(rules.as_ref(), value);
                    let value = typed.as_ref().map_or(value, SortValue::as_ref);
                    let key = Key {
                        value,
                        time,
                        block_id,
                        doc,
                    };
                    if after.is_some_and(|a| order(&key, &a.key(), sort.descending).is_le()) {
                        return;
                    }
                    let full = heap.len() == limit;
                    if full
                        && heap.peek().is_some_and(|worst| {
                            order(&key, &worst.cursor.key(), sort.descending).is_ge()
                        })
                    {
                        return;
                    }
                    if full {
                        heap.pop();
                    }
                    heap.push(Entry {
                        cursor: SortCursor {
                            value: value.to_owned(),
                            time,
                            block_id,
                            doc,
                        },
                        block: index as u32,
                        descending: sort.descending,
                    });
                };
                let mut offered = false;
                values.with_value(doc, &mut |value| {
                    offered = true;
                    match value {
                        FieldValue::Number(v) => offer(ValueRef::Number(v)),
                        FieldValue::Str(s) => offer(ValueRef::Str(s)),
                        FieldValue::Ordinal(ordinal, dictionary) => {
                            // Doc values hold the column's strings, which are UTF-8.
                            let bytes = dictionary.string(ordinal).unwrap_or_default();
                            offer(ValueRef::Str(&String::from_utf8_lossy(bytes)))
                        }
                    }
                })?;
                if !offered {
                    offer(ValueRef::Missing);
                }
                doc = scorer.advance();
            }
            self.check_scorer(index, scorer.as_ref())?;
        }
        Ok(heap
            .into_sorted_vec()
            .into_iter()
            .map(|entry| {
                let hit = Hit {
                    block: entry.block,
                    doc: entry.cursor.doc,
                    score: None,
                    time: entry.cursor.time,
                };
                (hit, entry.cursor)
            })
            .collect())
    }
}

/// `value` as a mapped field sorts it, when the mapping changes it: a date field's values as
/// its time (milliseconds, or nanoseconds for `date_nanos`, read in the field's formats), a
/// number field's as its type holds them (a `half_float` rounded, a string coerced).
fn typed(rules: Option<&quarry_store::FieldMapping>, value: ValueRef<'_>) -> Option<SortValue> {
    use quarry_format::Value;
    let rules = rules?;
    let sent = match value {
        ValueRef::Number(v) if v.fract() == 0.0 && v.abs() < 9.0e15 => Value::I64(v as i64),
        ValueRef::Number(v) => Value::F64(v),
        ValueRef::Str(s) => Value::Str(s.to_owned()),
        ValueRef::Missing => return None,
    };
    if rules.ty.date_unit_nanos().is_some() {
        let time = *quarry_index::schema::dates(rules, &sent)?.first()?;
        return Some(SortValue::Number(time as f64));
    }
    if rules.ty == quarry_store::FieldType::Number {
        return match quarry_index::schema::number_value(rules, &sent)? {
            Value::I64(v) => Some(SortValue::Number(v as f64)),
            Value::U64(v) => Some(SortValue::Number(v as f64)),
            Value::F64(v) => Some(SortValue::Number(v)),
            _ => None,
        };
    }
    None
}

/// A sort as front ends write it: `relevance`, `time_desc`/`time-desc`, `time_asc`, or
/// `FIELD`, `FIELD:asc`, `FIELD:desc` (`_time` and `@timestamp` name the time sorts).
#[derive(Debug, Clone, PartialEq)]
pub enum SortSpec {
    Order(crate::searcher::SortOrder),
    Field(FieldSort),
}

impl SortSpec {
    pub fn parse(text: &str) -> std::result::Result<SortSpec, String> {
        use crate::searcher::SortOrder;
        match text {
            "relevance" | "_score" => return Ok(SortSpec::Order(SortOrder::Relevance)),
            "time_desc" | "time-desc" => return Ok(SortSpec::Order(SortOrder::TimeDesc)),
            "time_asc" | "time-asc" => return Ok(SortSpec::Order(SortOrder::TimeAsc)),
            _ => {}
        }
        let (field, direction) = match text.rsplit_once(':') {
            Some((field, direction)) if matches!(direction, "asc" | "desc") => (field, direction),
            _ => (text, "asc"),
        };
        if field.is_empty() {
            return Err(format!(
                "sort: {text:?} is not relevance, time_desc, time_asc or FIELD[:asc|:desc]"
            ));
        }
        let descending = direction == "desc";
        Ok(match field {
            crate::parser::TIME_FIELD | "@timestamp" if descending => {
                SortSpec::Order(SortOrder::TimeDesc)
            }
            crate::parser::TIME_FIELD | "@timestamp" => SortSpec::Order(SortOrder::TimeAsc),
            field => SortSpec::Field(FieldSort {
                field: field.to_owned(),
                descending,
            }),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::searcher::SortOrder;

    #[test]
    fn cursors_print_and_parse() {
        for value in [
            SortValue::Number(1.5),
            SortValue::Number(-3.0),
            SortValue::Number(-0.0),
            SortValue::Str("a:b \"c\"".to_owned()),
            SortValue::Missing,
        ] {
            let cursor = SortCursor {
                value,
                time: -5,
                block_id: 7,
                doc: 3,
            };
            assert_eq!(SortCursor::parse(&cursor.to_string()), Some(cursor));
        }
        let nan = SortCursor::parse("1:2:3:n7ff8000000000000").unwrap();
        assert!(matches!(nan.value, SortValue::Number(v) if v.is_nan()));
        assert_eq!(SortCursor::parse("1:2:3"), None);
        assert_eq!(SortCursor::parse("1:2:3:[1]"), None);
        assert_eq!(SortCursor::parse("1:2:3:nzz"), None);
        assert_eq!(SortCursor::parse("1:2:3:"), None);
        assert_eq!(SortCursor::parse("x:2:3:1"), None);
    }

    #[test]
    fn specs() {
        let field = |f: &str, descending| {
            SortSpec::Field(FieldSort {
                field: f.to_owned(),
                descending,
            })
        };
        let cases = [
            ("relevance", SortSpec::Order(SortOrder::Relevance)),
            ("time-desc", SortSpec::Order(SortOrder::TimeDesc)),
            ("@timestamp:asc", SortSpec::Order(SortOrder::TimeAsc)),
            ("_time:desc", SortSpec::Order(SortOrder::TimeDesc)),
            ("latency:desc", field("latency", true)),
            ("latency", field("latency", false)),
            ("url:http://x", field("url:http://x", false)),
            ("a:b:asc", field("a:b", false)),
        ];
        for (text, want) in cases {
            assert_eq!(SortSpec::parse(text), Ok(want), "{text}");
        }
        assert!(SortSpec::parse(":desc").is_err());
    }

    #[test]
    fn missing_values_come_last_both_ways() {
        let key = |value, time| Key {
            value,
            time,
            block_id: 0,
            doc: 0,
        };
        let missing = key(ValueRef::Missing, 0);
        for descending in [false, true] {
            for present in [ValueRef::Number(-1e300), ValueRef::Str("")] {
                assert_eq!(
                    order(&key(present, 5), &missing, descending),
                    Ordering::Less
                );
            }
        }
        let (one, two) = (key(ValueRef::Number(1.0), 9), key(ValueRef::Number(2.0), 1));
        assert_eq!(order(&one, &two, false), Ordering::Less);
        assert_eq!(order(&one, &two, true), Ordering::Greater);
        let (a, b) = (key(ValueRef::Str("a"), 1), key(ValueRef::Str("a"), 2));
        assert_eq!(order(&a, &b, false), Ordering::Less, "ties in time order");
        assert_eq!(order(&a, &b, true), Ordering::Greater, "newest tie first");
        assert_eq!(
            order(&key(ValueRef::Number(9.0), 0), &a, false),
            Ordering::Less,
            "numbers before strings"
        );
    }
}
