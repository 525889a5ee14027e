//! Aggregations over every match of a query, answered in the same request as the hits:
//! `count`, `terms(field, N)`, `min`/`max`/`sum`/`avg`/`stats(field)`,
//! `percentiles(field[, p...])` and `cardinality(field)`, overall or per time bucket.
//!
//! Values come from the columns: matches arrive in doc order, so each field keeps the one
//! decoded chunk the current doc is in. Percentiles use DDSketch (`sketches-ddsketch`, 1%
//! relative error on each returned value); cardinality uses HyperLogLog++ (`hyperloglogplus`,
//! precision 14: about 0.8% standard error, exact below a few thousand values).

use crate::error::{QueryError, Result};
use crate::filter::TimeLookup;
use crate::query::Query;
use crate::scorer::Scorer;
use crate::searcher::Searcher;
use crate::timeline::{bucket_ends, bucket_span, MAX_BUCKETS};
use crate::weight::Weight;
use hashbrown::HashMap;
use hyperloglogplus::{HyperLogLog, HyperLogLogPlus};
use quarry_format::column::{ChunkValues, ColumnReader, DecodedChunk};
use quarry_format::{BlockReader, ColumnType, DecodeError};
use serde_json::{json, Value as Json};
use sketches_ddsketch::{Config as SketchConfig, DDSketch};
use std::collections::BTreeMap;
use std::hash::BuildHasherDefault;

/// Relative accuracy of percentile estimates.
pub const PERCENTILE_RELATIVE_ERROR: f64 = 0.01;
/// HyperLogLog++ precision: 2^14 registers.
const CARDINALITY_PRECISION: u8 = 14;
const DEFAULT_PERCENTS: [f64; 3] = [50.0, 95.0, 99.0];

#[derive(Debug, Clone, PartialEq)]
pub enum AggKind {
    Count,
    Terms { size: usize },
    Min,
    Max,
    Sum,
    Avg,
    Stats,
    Percentiles(Vec<f64>),
    Cardinality,
}

/// One requested aggregation, as parsed from `name(field, args)`.
#[derive(Debug, Clone, PartialEq)]
pub struct AggSpec {
    /// The text it was written as, normalized (`terms(client_ip, 10)`): its key in results.
    pub name: String,
    pub kind: AggKind,
    pub field: Option<String>,
}

impl AggSpec {
    pub fn parse(text: &str) -> Result<AggSpec, String> {
        let text = text.trim();
        let usage = "expected count, terms(field, N), min|max|sum|avg|stats(field), \
                     percentiles(field[, p...]) or cardinality(field)";
        if text == "count" || text == "count()" {
            return Ok(AggSpec {
                name: "count".into(),
                kind: AggKind::Count,
                field: None,
            });
        }
        let (function, rest) = text
            .split_once('(')
            .ok_or_else(|| format!("bad aggregation {text:?}: {usage}"))?;
        let args = rest
            .strip_suffix(')')
            .ok_or_else(|| format!("bad aggregation {text:?}: missing ')'"))?;
        let args: Vec<&str> = args.split(',').map(str::trim).collect();
        let field = args
            .first()
            .filter(|f| !f.is_empty())
            .ok_or_else(|| format!("bad aggregation {text:?}: missing the field"))?
            .to_string();
        let function = function.trim();
        let extra = &args[1..];
        let number = |s: &str| {
            s.parse::<f64>()
                .map_err(|_| format!("bad aggregation {text:?}: {s:?} is not a number"))
        };
        let kind = match (function, extra) {
            ("terms", []) => AggKind::Terms { size: 10 },
            ("terms", [size]) => AggKind::Terms {
                size: size
                    .parse()
                    .ok()
                    .filter(|&n| n > 0)
                    .ok_or_else(|| format!("bad aggregation {text:?}: size must be > 0"))?,
            },
            ("min", []) => AggKind::Min,
            ("max", []) => AggKind::Max,
            ("sum", []) => AggKind::Sum,
            ("avg", []) => AggKind::Avg,
            ("stats", []) => AggKind::Stats,
            ("cardinality", []) => AggKind::Cardinality,
            ("percentiles", []) => AggKind::Percentiles(DEFAULT_PERCENTS.to_vec()),
            ("percentiles", percents) => {
                let percents = percents
                    .iter()
                    .map(|p| number(p))
                    .collect::<Result<Vec<_>, _>>()?;
                if percents.iter().any(|p| !(0.0..=100.0).contains(p)) {
                    return Err(format!("bad aggregation {text:?}: percents are 0 to 100"));
                }
                AggKind::Percentiles(percents)
            }
            _ => return Err(format!("bad aggregation {text:?}: {usage}")),
        };
        let name = if extra.is_empty() {
            format!("{function}({field})")
        } else {
            format!("{function}({field}, {})", extra.join(", "))
        };
        Ok(AggSpec {
            name,
            kind,
            field: Some(field),
        })
    }
}

type Hll = HyperLogLogPlus<[u8], BuildHasherDefault<std::collections::hash_map::DefaultHasher>>;

/// The running state of one aggregation.
enum AggState {
    Count(u64),
    Terms(HashMap<String, u64>),
    Numbers {
        count: u64,
        min: f64,
        max: f64,
        sum: f64,
    },
    Sketch(Box<DDSketch>),
    Distinct(Box<Hll>),
}

impl AggState {
    fn new(kind: &AggKind) -> AggState {
        match kind {
            AggKind::Count => AggState::Count(0),
            AggKind::Terms { .. } => AggState::Terms(HashMap::new()),
            AggKind::Percentiles(_) => {
                // alpha 1%, up to 2048 bins, values below 1e-9 in magnitude count as zero.
                let config = SketchConfig::new(PERCENTILE_RELATIVE_ERROR, 2048, 1e-9);
                AggState::Sketch(Box::new(DDSketch::new(config)))
            }
            AggKind::Cardinality => AggState::Distinct(Box::new(
                // The precision is a valid constant.
                HyperLogLogPlus::new(CARDINALITY_PRECISION, BuildHasherDefault::default())
                    .expect("valid precision"),
            )),
            _ => AggState::Numbers {
                count: 0,
                min: f64::INFINITY,
                max: f64::NEG_INFINITY,
                sum: 0.0,
            },
        }
    }

    fn add(&mut self, value: FieldValue<'_>) {
        match self {
            AggState::Count(n) => *n += 1,
            AggState::Terms(counts) => {
                let buffer;
                let key: &str = match value {
                    FieldValue::Str(s) => s,
                    FieldValue::Number(v) => {
                        buffer = format_number(v);
                        &buffer
                    }
                };
                match counts.get_mut(key) {
                    Some(n) => *n += 1,
                    None => {
                        counts.insert(key.to_owned(), 1);
                    }
                }
            }
            AggState::Numbers {
                count,
                min,
                max,
                sum,
            } => {
                if let FieldValue::Number(v) = value {
                    if !v.is_nan() {
                        *count += 1;
                        *min = min.min(v);
                        *max = max.max(v);
                        *sum += v;
                    }
                }
            }
            AggState::Sketch(sketch) => {
                if let FieldValue::Number(v) = value {
                    if v.is_finite() {
                        sketch.add(v);
                    }
                }
            }
            AggState::Distinct(hll) => match value {
                FieldValue::Str(s) => hll.insert(s.as_bytes()),
                FieldValue::Number(v) => hll.insert(&format_number(v).into_bytes()[..]),
            },
        }
    }

    fn result(&mut self, kind: &AggKind) -> Json {
        match (self, kind) {
            (AggState::Count(n), _) => json!(n),
            (AggState::Terms(counts), AggKind::Terms { size }) => {
                let mut top: Vec<(&String, &u64)> = counts.iter().collect();
                top.sort_by(|a, b| b.1.cmp(a.1).then_with(|| a.0.cmp(b.0)));
                let other: u64 = top.iter().skip(*size).map(|(_, n)| **n).sum();
                let buckets: Vec<Json> = top
                    .iter()
                    .take(*size)
                    .map(|(key, count)| json!({"key": key, "count": count}))
                    .collect();
                json!({"buckets": buckets, "other_count": other})
            }
            (
                AggState::Numbers {
                    count,
                    min,
                    max,
                    sum,
                },
                kind,
            ) => {
                let (count, min, max, sum) = (*count, *min, *max, *sum);
                let some = |v: f64| if count == 0 { Json::Null } else { json!(v) };
                let avg = if count == 0 {
                    Json::Null
                } else {
                    json!(sum / count as f64)
                };
                match kind {
                    AggKind::Min => some(min),
                    AggKind::Max => some(max),
                    AggKind::Sum => json!(sum),
                    AggKind::Avg => avg,
                    _ => json!({"count": count, "min": some(min), "max": some(max),
                                "sum": sum, "avg": avg}),
                }
            }
            (AggState::Sketch(sketch), AggKind::Percentiles(percents)) => {
                let mut out = serde_json::Map::new();
                for p in percents {
                    let value = sketch.quantile(p / 100.0).ok().flatten();
                    out.insert(format_number(*p), value.map_or(Json::Null, |v| json!(v)));
                }
                Json::Object(out)
            }
            (AggState::Distinct(hll), _) => json!(hll.count().round() as u64),
            _ => Json::Null,
        }
    }
}

fn format_number(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

#[derive(Clone, Copy)]
enum FieldValue<'a> {
    Str(&'a str),
    Number(f64),
}

/// One field's columns in one block, read in increasing doc order.
struct FieldCursor<'a> {
    /// Per column: its reader, the decoded chunk the last doc was in, and the position in
    /// that chunk's doc list to search on from (docs come in increasing order).
    columns: Vec<(ColumnReader<'a>, Option<DecodedChunk>, usize)>,
    block: &'a BlockReader,
}

/// The position of `doc` in a chunk's ascending doc list, searching from `*from` (docs are
/// asked for in increasing order, so the search moves forward: amortized O(1) per doc where a
/// binary search per doc cost 13 steps on an 8192-doc chunk).
fn position_from(docs: &[u32], doc: u32, from: &mut usize) -> Option<usize> {
    if *from > docs.len() || (*from > 0 && docs[*from - 1] >= doc) {
        *from = 0;
    }
    let rest = &docs[*from..];
    // Near: a short linear walk; far: a binary search of the rest.
    let step = if rest.len() > 8 && rest[7] < doc {
        rest.partition_point(|&d| d < doc)
    } else {
        rest.iter().position(|&d| d >= doc).unwrap_or(rest.len())
    };
    *from += step;
    (docs.get(*from) == Some(&doc)).then_some(*from)
}

impl<'a> FieldCursor<'a> {
    fn new(block: &'a BlockReader, field: &str) -> FieldCursor<'a> {
        let columns = block
            .field_ordinal(field)
            .map(|ordinal| {
                block.manifest().fields[ordinal as usize]
                    .columns
                    .iter()
                    .filter(|c| c.ty != ColumnType::Json && c.present_count > 0)
                    .filter_map(|c| block.column(ordinal, c.ty))
                    .map(|reader| (reader, None, 0))
                    .collect()
            })
            .unwrap_or_default();
        FieldCursor { columns, block }
    }

    /// Calls `f` with the doc's value (at most one per field: a field holds one type per doc).
    fn with_value(&mut self, doc: u32, f: &mut dyn FnMut(FieldValue<'_>)) -> Result<()> {
        for (reader, decoded, from) in &mut self.columns {
            let stale = decoded
                .as_ref()
                .is_none_or(|c| doc < c.first_doc || doc >= c.end_doc);
            if stale {
                let corrupt = |e: DecodeError| self.block.corrupt("column", e);
                let Some(index) = reader.chunk_of(doc).map_err(corrupt)? else {
                    continue;
                };
                *decoded = Some(reader.decode_chunk(index).map_err(corrupt)?);
                *from = 0;
            }
            let Some(chunk) = decoded.as_ref() else {
                continue;
            };
            let position = match &chunk.docs {
                None => Some((doc - chunk.first_doc) as usize),
                Some(docs) => position_from(docs, doc, from),
            };
            let Some(position) = position else {
                continue;
            };
            if let Some(value) = value_at(chunk, position) {
                f(value);
                return Ok(());
            }
        }
        Ok(())
    }

    /// Calls `f` with the value of every doc in `[lo, hi)` that has one, walking the chunks
    /// (a query that matches a whole doc range needs no per-doc look-up).
    fn for_each_in_range(
        &mut self,
        lo: u32,
        hi: u32,
        f: &mut dyn FnMut(FieldValue<'_>),
    ) -> Result<()> {
        for (reader, _, _) in &self.columns {
            let corrupt = |e: DecodeError| self.block.corrupt("column", e);
            let Some(mut index) = reader.chunk_of(lo).map_err(corrupt)? else {
                continue;
            };
            while index < reader.chunk_count() {
                if reader.chunk_meta(index).map_err(corrupt)?.first_doc >= hi {
                    break;
                }
                let chunk = reader.decode_chunk(index).map_err(corrupt)?;
                for position in 0..chunk.len() {
                    let doc = match &chunk.docs {
                        None => chunk.first_doc + position as u32,
                        Some(docs) => docs[position],
                    };
                    if doc >= hi {
                        break;
                    }
                    if doc >= lo {
                        if let Some(value) = value_at(&chunk, position) {
                            f(value);
                        }
                    }
                }
                index += 1;
            }
        }
        Ok(())
    }
}

fn value_at(chunk: &DecodedChunk, position: usize) -> Option<FieldValue<'_>> {
    match (&chunk.values, chunk.ty) {
        (ChunkValues::Bytes { .. }, _) => chunk.str_at(position).map(FieldValue::Str),
        (ChunkValues::Numbers(values), ty) => {
            let raw = *values.get(position)?;
            Some(FieldValue::Number(match ty {
                ColumnType::I64 | ColumnType::Timestamp => raw as i64 as f64,
                ColumnType::U64 | ColumnType::Bool => raw as f64,
                _ => f64::from_bits(raw),
            }))
        }
    }
}

/// The states of all requested aggregations for one group (the whole result or one bucket).
struct Group {
    count: u64,
    states: Vec<AggState>,
}

impl Group {
    fn new(specs: &[AggSpec]) -> Group {
        Group {
            count: 0,
            states: specs.iter().map(|s| AggState::new(&s.kind)).collect(),
        }
    }

    fn collect(&mut self, doc: u32, cursors: &mut [Option<FieldCursor<'_>>]) -> Result<()> {
        self.count += 1;
        for (state, cursor) in self.states.iter_mut().zip(cursors.iter_mut()) {
            match cursor {
                None => state.add(FieldValue::Number(0.0)),
                Some(cursor) => cursor.with_value(doc, &mut |value| state.add(value))?,
            }
        }
        Ok(())
    }

    /// Every doc of `[lo, hi)` matches.
    fn collect_range(
        &mut self,
        lo: u32,
        hi: u32,
        cursors: &mut [Option<FieldCursor<'_>>],
    ) -> Result<()> {
        self.count += u64::from(hi - lo);
        for (state, cursor) in self.states.iter_mut().zip(cursors.iter_mut()) {
            match (cursor, state) {
                (_, AggState::Count(n)) => *n += u64::from(hi - lo),
                (None, _) => {}
                (Some(cursor), state) => cursor.for_each_in_range(lo, hi, &mut |v| state.add(v))?,
            }
        }
        Ok(())
    }

    fn results(mut self, specs: &[AggSpec]) -> serde_json::Map<String, Json> {
        let mut out = serde_json::Map::new();
        for (state, spec) in self.states.iter_mut().zip(specs) {
            out.insert(spec.name.clone(), state.result(&spec.kind));
        }
        out
    }
}

/// Aggregation results per time bucket: `(bucket start ns, match count, results)`.
pub type BucketAggregations = Vec<(i64, u64, serde_json::Map<String, Json>)>;

impl Searcher {
    /// Every spec over every match of `query`, as `{name: result}`.
    pub fn aggregate(
        &self,
        query: &Query,
        specs: &[AggSpec],
    ) -> Result<serde_json::Map<String, Json>> {
        let mut groups = self.aggregate_groups(query, specs, None)?;
        Ok(groups
            .pop_first()
            .map(|(_, group)| group)
            .unwrap_or_else(|| Group::new(specs))
            .results(specs))
    }

    /// Every spec per `interval` bucket of `_time` (empty buckets between the first and last
    /// non-empty one included).
    pub fn aggregate_histogram(
        &self,
        query: &Query,
        interval: i64,
        specs: &[AggSpec],
    ) -> Result<BucketAggregations> {
        let mut groups = self.aggregate_groups(query, specs, Some(interval))?;
        let (Some(&first), Some(&last)) = (groups.keys().next(), groups.keys().next_back()) else {
            return Ok(Vec::new());
        };
        if last - first >= MAX_BUCKETS {
            return Err(QueryError::TooManyBuckets {
                buckets: last - first + 1,
                limit: MAX_BUCKETS,
            });
        }
        Ok((first..=last)
            .map(|bucket| {
                let group = groups.remove(&bucket).unwrap_or_else(|| Group::new(specs));
                (
                    bucket.saturating_mul(interval),
                    group.count,
                    group.results(specs),
                )
            })
            .collect())
    }

    fn aggregate_groups(
        &self,
        query: &Query,
        specs: &[AggSpec],
        interval: Option<i64>,
    ) -> Result<BTreeMap<i64, Group>> {
        let weight = self.filter_weight(query);
        let ((start, end), _) = query.time_bounds();
        let mut groups: BTreeMap<i64, Group> = BTreeMap::new();
        for (index, block) in self.blocks.iter().enumerate() {
            let Some(mut scorer) = weight.scorer(index, block)? else {
                continue;
            };
            let mut cursors: Vec<Option<FieldCursor>> = specs
                .iter()
                .map(|s| s.field.as_deref().map(|f| FieldCursor::new(block, f)))
                .collect();
            let mut lookup = TimeLookup::new(block, self.optimizations)?;
            // A query matching a whole doc range (`*`, a time range) reads the columns
            // straight through.
            let whole_range = match (&weight, interval) {
                (Weight::All, None) => Some((0, block.doc_count())),
                (Weight::TimeRange { start, end, .. }, None) => {
                    Some(lookup.doc_range(*start, *end)?)
                }
                _ => None,
            };
            if let Some((lo, hi)) = whole_range {
                if lo < hi {
                    groups
                        .entry(0)
                        .or_insert_with(|| Group::new(specs))
                        .collect_range(lo, hi, &mut cursors)?;
                }
                continue;
            }
            // Bucket endpoints as doc ids (the histogram's way): a match's bucket is found by
            // comparing doc ids, without reading its time.
            let (first, ends) = match interval {
                None => (0, vec![0, block.doc_count()]),
                Some(interval) => {
                    let span = bucket_span(block.manifest(), start, end, interval)?;
                    let whole = (0, block.doc_count());
                    (span.0, bucket_ends(&mut lookup, span, whole, interval)?)
                }
            };
            let mut k = 0usize;
            let mut doc = scorer.doc();
            // The group changes only at bucket ends: look it up then, not per doc (and only
            // for buckets with a match).
            let mut current: Option<(usize, &mut Group)> = None;
            while doc != quarry_format::TERMINATED {
                while k + 2 < ends.len() && doc >= ends[k + 1] {
                    k += 1;
                }
                let group = match current {
                    Some((bucket, group)) if bucket == k => group,
                    _ => groups
                        .entry(first + k as i64)
                        .or_insert_with(|| Group::new(specs)),
                };
                group.collect(doc, &mut cursors)?;
                current = Some((k, group));
                doc = scorer.advance();
            }
            self.check_scorer(index, scorer.as_ref())?;
        }
        Ok(groups)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_found_walking_forward() {
        let docs: Vec<u32> = (0..500).map(|i| i * 3).collect();
        let mut from = 0;
        for doc in 0..1500u32 {
            let expected = (doc % 3 == 0).then_some(doc as usize / 3);
            assert_eq!(position_from(&docs, doc, &mut from), expected, "{doc}");
        }
        // Asked out of order (a new group of matches), it starts over.
        assert_eq!(position_from(&docs, 3, &mut from), Some(1));
        let mut from = 0;
        assert_eq!(position_from(&docs, 1497, &mut from), Some(499));
        assert_eq!(position_from(&docs, 1498, &mut from), None);
        assert_eq!(position_from(&[], 7, &mut from), None);
    }

    #[test]
    fn parses_specs() {
        let ok = |text: &str, name: &str, kind: AggKind| {
            let spec = AggSpec::parse(text).unwrap();
            assert_eq!((spec.name.as_str(), spec.kind), (name, kind), "{text}");
        };
        ok("count", "count", AggKind::Count);
        ok("terms(ip,5)", "terms(ip, 5)", AggKind::Terms { size: 5 });
        ok(" avg( latency ) ", "avg(latency)", AggKind::Avg);
        ok(
            "percentiles(latency)",
            "percentiles(latency)",
            AggKind::Percentiles(vec![50.0, 95.0, 99.0]),
        );
        ok(
            "percentiles(latency, 90, 99.9)",
            "percentiles(latency, 90, 99.9)",
            AggKind::Percentiles(vec![90.0, 99.9]),
        );
        for bad in [
            "terms",
            "terms(ip, 0)",
            "avg()",
            "avg(x, 1)",
            "median(x)",
            "percentiles(x, 101)",
            "sum(x",
        ] {
            assert!(AggSpec::parse(bad).is_err(), "{bad}");
        }
    }
}
