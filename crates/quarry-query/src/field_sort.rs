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
use serde::{Deserialize, Serialize};
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// One key of a sort: a field (`_time` for the time) and its direction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SortKey {
    pub field: String,
    pub descending: bool,
}

/// Sort hits by one or more keys, each ordering the hits the keys before it tie on
/// (Elasticsearch's `"sort": [{"age": "desc"}, {"id": "asc"}]`); hits equal on every key
/// come in time order, reversed when the first key is descending.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FieldSort {
    pub keys: Vec<SortKey>,
}

impl FieldSort {
    /// A sort by one field.
    pub fn by(field: impl Into<String>, descending: bool) -> FieldSort {
        FieldSort {
            keys: vec![SortKey {
                field: field.into(),
                descending,
            }],
        }
    }

    /// The tie-break's direction: the first key's.
    fn descending(&self) -> bool {
        self.keys.first().is_some_and(|k| k.descending)
    }
}

/// A hit's value for one sort key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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

/// Where a page sorted by fields ends: its last hit's values (one per key) and place in time
/// order. Printed as `time:block:doc:VALUE[,VALUE...]`, each VALUE being `n` and a number's
/// bits in hex, `s` and a JSON string, or `m` for a missing value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SortCursor {
    pub values: Vec<SortValue>,
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
        let mut rest = parts.next()?;
        let mut values = Vec::new();
        loop {
            let (tag, after_tag) = rest.split_at_checked(1)?;
            let (value, after) = match tag {
                "m" => (SortValue::Missing, after_tag),
                "n" => {
                    let end = after_tag.find(',').unwrap_or(after_tag.len());
                    let bits = u64::from_str_radix(&after_tag[..end], 16).ok()?;
                    (SortValue::Number(f64::from_bits(bits)), &after_tag[end..])
                }
                "s" => {
                    // A JSON string ends itself; commas inside it are its own.
                    let mut strings =
                        serde_json::Deserializer::from_str(after_tag).into_iter::<String>();
                    let string = strings.next()?.ok()?;
                    (SortValue::Str(string), &after_tag[strings.byte_offset()..])
                }
                _ => return None,
            };
            values.push(value);
            match after.strip_prefix(',') {
                Some(next) => rest = next,
                None if after.is_empty() => break,
                None => return None,
            }
        }
        Some(SortCursor {
            values,
            time,
            block_id,
            doc,
        })
    }

    fn place(&self) -> Place {
        (self.time, self.block_id, self.doc)
    }
}

impl std::fmt::Display for SortCursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}:{}:", self.time, self.block_id, self.doc)?;
        for (i, value) in self.values.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            match value {
                // The bits, so that -0.0 and NaN page exactly.
                SortValue::Number(v) => write!(f, "n{:x}", v.to_bits())?,
                SortValue::Str(s) => write!(f, "s{}", serde_json::Value::String(s.clone()))?,
                SortValue::Missing => f.write_str("m")?,
            }
        }
        Ok(())
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

/// A hit's place in time order: (`_time`, block id, doc).
pub(crate) type Place = (i64, u64, u32);

/// One key's order of two values, `Less` when `a` comes first: missing values last in both
/// directions, numbers before strings.
fn value_order(a: ValueRef<'_>, b: ValueRef<'_>, descending: bool) -> Ordering {
    let missing = |v: ValueRef<'_>| matches!(v, ValueRef::Missing);
    let last = missing(a).cmp(&missing(b));
    if last != Ordering::Equal {
        return last;
    }
    let by_value = match (a, b) {
        (ValueRef::Number(x), ValueRef::Number(y)) => x.total_cmp(&y),
        (ValueRef::Str(x), ValueRef::Str(y)) => x.as_bytes().cmp(y.as_bytes()),
        (ValueRef::Number(_), _) => Ordering::Less,
        (_, ValueRef::Number(_)) => Ordering::Greater,
        _ => Ordering::Equal,
    };
    if descending {
        by_value.reverse()
    } else {
        by_value
    }
}

/// The order of two hits (`Less` when `a` comes first): key by key, then time order.
pub(crate) fn order(
    a: &[SortValue],
    a_place: Place,
    b: &[SortValue],
    b_place: Place,
    sort: &FieldSort,
) -> Ordering {
    for ((x, y), key) in a.iter().zip(b).zip(&sort.keys) {
        let ordering = value_order(x.as_ref(), y.as_ref(), key.descending);
        if ordering != Ordering::Equal {
            return ordering;
        }
    }
    let ordering = a_place.cmp(&b_place);
    if sort.descending() {
        ordering.reverse()
    } else {
        ordering
    }
}

/// A kept hit; the heap's greatest is the one that comes last.
struct Entry<'s> {
    cursor: SortCursor,
    block: u32,
    sort: &'s FieldSort,
}

impl PartialEq for Entry<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Entry<'_> {}
impl PartialOrd for Entry<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry<'_> {
    fn cmp(&self, other: &Self) -> Ordering {
        let (a, b) = (&self.cursor, &other.cursor);
        order(&a.values, a.place(), &b.values, b.place(), self.sort)
    }
}

/// Where one key's values come from in a block.
enum KeySource<'a> {
    Time,
    Field(Box<FieldCursor<'a>>),
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
        if sort.keys.is_empty() {
            return Err(QueryError::Invalid("a field sort needs a key".into()));
        }
        let is_time = |field: &str| field == crate::parser::TIME_FIELD;
        // Each key's field, its mapping, and the longest string it sorts by: a keyword view
        // (`X.keyword`, a keyword multi-field) sorts by its parent's whole values, those up
        // to its `ignore_above` (a longer one is no value, as in Elasticsearch).
        let mut fields = Vec::with_capacity(sort.keys.len());
        let mut rules = Vec::with_capacity(sort.keys.len());
        let mut limits = Vec::with_capacity(sort.keys.len());
        for key in &sort.keys {
            if !is_time(&key.field) {
                crate::query::not_nested(self.schema(), &key.field)?;
            }
            match self.schema().mapping().whole_values(&key.field) {
                Some((field, max_chars)) => {
                    fields.push(field);
                    rules.push(None);
                    limits.push(max_chars);
                }
                None => {
                    fields.push(key.field.as_str());
                    rules.push(self.schema().rules(&key.field).cloned());
                    limits.push(None);
                }
            }
        }
        // A cursor's values as the fields sort them (a date given as text is its time).
        let after = match after {
            Some(a) if a.values.len() != sort.keys.len() => {
                return Err(QueryError::Invalid(format!(
                    "the cursor has {} sort values; the sort has {} keys",
                    a.values.len(),
                    sort.keys.len()
                )))
            }
            Some(a) => {
                let mut a = a.clone();
                for (value, rules) in a.values.iter_mut().zip(&rules) {
                    if let Some(typed) = typed(rules.as_ref(), value.as_ref()) {
                        *value = typed;
                    }
                }
                Some(a)
            }
            None => None,
        };
        let after = after.as_ref();
        let mut heap: BinaryHeap<Entry<'_>> = BinaryHeap::with_capacity(limit + 1);
        if limit == 0 {
            return Ok(Vec::new());
        }
        let first = &sort.keys[0];
        let mut values: Vec<SortValue> = Vec::with_capacity(sort.keys.len());
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
            let mut sources: Vec<KeySource<'_>> = fields
                .iter()
                .map(|&field| match is_time(field) {
                    true => KeySource::Time,
                    false => KeySource::Field(Box::new(FieldCursor::with_arrays(block, field))),
                })
                .collect();
            let mut doc = scorer.doc();
            while doc != TERMINATED {
                let time = match times.find(doc).map_err(corrupt)? {
                    Some((chunk, position)) => chunk.raw(position).map(|raw| raw as i64),
                    None => None,
                }
                .ok_or_else(|| corrupt(DecodeError::new("doc without _time")))?;
                let full = heap.len() == limit;
                // The first key decides most hits: one that comes after the worst kept (or
                // not after the cursor) on it alone is dropped before any value is copied.
                let mut dropped = false;
                values.clear();
                read_value(
                    &mut sources[0],
                    rules[0].as_ref(),
                    limits[0],
                    first.descending,
                    doc,
                    time,
                    &mut |value| {
                        let worse_than = |other: &SortCursor| {
                            value_order(value, other.values[0].as_ref(), first.descending)
                        };
                        dropped = after.is_some_and(|a| worse_than(a).is_lt())
                            || (full && heap.peek().is_some_and(|w| worse_than(&w.cursor).is_gt()));
                        if !dropped {
                            values.push(value.to_owned());
                        }
                    },
                )?;
                if !dropped {
                    let keys = sources.iter_mut().zip(&rules).zip(&limits).zip(&sort.keys);
                    for (((source, rules), &limit), key) in keys.skip(1) {
                        let descending = key.descending;
                        read_value(
                            source,
                            rules.as_ref(),
                            limit,
                            descending,
                            doc,
                            time,
                            &mut |v| values.push(v.to_owned()),
                        )?;
                    }
                    let place = (time, block_id, doc);
                    let comes_before = |other: &SortCursor| {
                        order(&values, place, &other.values, other.place(), sort)
                    };
                    let past_after = after.is_none_or(|a| comes_before(a).is_gt());
                    let kept =
                        !full || heap.peek().is_some_and(|w| comes_before(&w.cursor).is_lt());
                    if past_after && kept {
                        if full {
                            heap.pop();
                        }
                        heap.push(Entry {
                            cursor: SortCursor {
                                values: std::mem::take(&mut values),
                                time,
                                block_id,
                                doc,
                            },
                            block: index as u32,
                            sort,
                        });
                    }
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

/// Calls `f` with the doc's value for one key (as its mapping sorts it), `Missing` if it has
/// none; a string longer than `max_chars` characters is none (a keyword view's). Of an
/// array's items, the one that sorts first: the least ascending, the greatest descending
/// (Elasticsearch's default sort `mode`).
fn read_value(
    source: &mut KeySource<'_>,
    rules: Option<&quarry_store::FieldMapping>,
    max_chars: Option<u32>,
    descending: bool,
    doc: u32,
    time: i64,
    f: &mut dyn FnMut(ValueRef<'_>),
) -> Result<()> {
    let values = match source {
        KeySource::Time => {
            f(ValueRef::Number(time as f64));
            return Ok(());
        }
        KeySource::Field(values) => values,
    };
    let mut offer = |value: ValueRef<'_>| match typed(rules, value) {
        Some(typed) => f(typed.as_ref()),
        None => f(value),
    };
    let held = |text: &str| max_chars.is_none_or(|limit| text.chars().count() <= limit as usize);
    let mut offered = false;
    values.with_value(doc, &mut |value| match value {
        FieldValue::Number(v) => {
            offered = true;
            offer(ValueRef::Number(v))
        }
        FieldValue::Str(s) if held(s) => {
            offered = true;
            offer(ValueRef::Str(s))
        }
        FieldValue::Ordinal(ordinal, dictionary) => {
            // Doc values hold the column's strings, which are UTF-8.
            let bytes = dictionary.string(ordinal).unwrap_or_default();
            let text = String::from_utf8_lossy(bytes);
            if held(&text) {
                offered = true;
                offer(ValueRef::Str(&text))
            }
        }
        FieldValue::Str(_) => {}
    })?;
    if !offered {
        // (the item as its mapping sorts it, the item as sent)
        let mut first: Option<(SortValue, SortValue)> = None;
        values.with_array_items(doc, &mut |item| {
            let value = match item.untyped() {
                FieldValue::Number(v) => ValueRef::Number(v),
                FieldValue::Str(s) if held(s) => ValueRef::Str(s),
                _ => return,
            };
            let sorted = typed(rules, value).unwrap_or_else(|| value.to_owned());
            let sorts_first = first.as_ref().is_none_or(|(best, _)| {
                value_order(sorted.as_ref(), best.as_ref(), descending).is_lt()
            });
            if sorts_first {
                first = Some((sorted, value.to_owned()));
            }
        })?;
        if let Some((_, item)) = first {
            offered = true;
            offer(item.as_ref());
        }
    }
    if !offered {
        offer(ValueRef::Missing);
    }
    Ok(())
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
            field => SortSpec::Field(FieldSort::by(field, descending)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::searcher::SortOrder;

    #[test]
    fn cursors_print_and_parse() {
        let values = [
            SortValue::Number(1.5),
            SortValue::Number(-3.0),
            SortValue::Number(-0.0),
            SortValue::Str("a:b \"c\", d".to_owned()),
            SortValue::Str(String::new()),
            SortValue::Missing,
        ];
        for value in values.iter().cloned() {
            let cursor = SortCursor {
                values: vec![value],
                time: -5,
                block_id: 7,
                doc: 3,
            };
            assert_eq!(SortCursor::parse(&cursor.to_string()), Some(cursor));
        }
        // Several keys, in every pair of kinds.
        for a in &values {
            for b in &values {
                let cursor = SortCursor {
                    values: vec![a.clone(), b.clone(), a.clone()],
                    time: 1,
                    block_id: 2,
                    doc: 3,
                };
                assert_eq!(SortCursor::parse(&cursor.to_string()), Some(cursor));
            }
        }
        let nan = SortCursor::parse("1:2:3:n7ff8000000000000").unwrap();
        assert!(matches!(nan.values[..], [SortValue::Number(v)] if v.is_nan()));
        assert_eq!(SortCursor::parse("1:2:3"), None);
        assert_eq!(SortCursor::parse("1:2:3:[1]"), None);
        assert_eq!(SortCursor::parse("1:2:3:nzz"), None);
        assert_eq!(SortCursor::parse("1:2:3:"), None);
        assert_eq!(SortCursor::parse("1:2:3:m,"), None);
        assert_eq!(SortCursor::parse("1:2:3:s\"a\"x"), None);
        assert_eq!(SortCursor::parse("x:2:3:m"), None);
    }

    #[test]
    fn specs() {
        let field = |f: &str, descending| SortSpec::Field(FieldSort::by(f, descending));
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
        let sort = |descending| FieldSort::by("f", descending);
        let hit = |value: SortValue, time| (vec![value], (time, 0, 0));
        let cmp = |a: &(Vec<SortValue>, Place), b: &(Vec<SortValue>, Place), descending| {
            order(&a.0, a.1, &b.0, b.1, &sort(descending))
        };
        let missing = hit(SortValue::Missing, 0);
        for descending in [false, true] {
            for present in [SortValue::Number(-1e300), SortValue::Str(String::new())] {
                assert_eq!(cmp(&hit(present, 5), &missing, descending), Ordering::Less);
            }
        }
        let (one, two) = (
            hit(SortValue::Number(1.0), 9),
            hit(SortValue::Number(2.0), 1),
        );
        assert_eq!(cmp(&one, &two, false), Ordering::Less);
        assert_eq!(cmp(&one, &two, true), Ordering::Greater);
        let a = |time| hit(SortValue::Str("a".into()), time);
        assert_eq!(
            cmp(&a(1), &a(2), false),
            Ordering::Less,
            "ties in time order"
        );
        assert_eq!(
            cmp(&a(1), &a(2), true),
            Ordering::Greater,
            "newest tie first"
        );
        assert_eq!(
            cmp(&hit(SortValue::Number(9.0), 0), &a(1), false),
            Ordering::Less,
            "numbers before strings"
        );
    }

    #[test]
    fn later_keys_order_ties_of_earlier_ones() {
        let sort = FieldSort {
            keys: vec![
                SortKey {
                    field: "a".into(),
                    descending: true,
                },
                SortKey {
                    field: "b".into(),
                    descending: false,
                },
            ],
        };
        let n = SortValue::Number;
        let hit = |a: f64, b: SortValue, time| (vec![n(a), b], (time, 0, 0));
        let cmp = |x: &(Vec<SortValue>, Place), y: &(Vec<SortValue>, Place)| {
            order(&x.0, x.1, &y.0, y.1, &sort)
        };
        assert_eq!(
            cmp(&hit(2.0, n(9.0), 0), &hit(1.0, n(0.0), 0)),
            Ordering::Less
        );
        assert_eq!(
            cmp(&hit(1.0, n(0.0), 0), &hit(1.0, n(9.0), 0)),
            Ordering::Less
        );
        assert_eq!(
            cmp(&hit(1.0, n(9.0), 0), &hit(1.0, SortValue::Missing, 0)),
            Ordering::Less
        );
        // Equal on both keys: the first key's direction, newest first.
        assert_eq!(
            cmp(&hit(1.0, n(0.0), 5), &hit(1.0, n(0.0), 4)),
            Ordering::Less
        );
    }
}
