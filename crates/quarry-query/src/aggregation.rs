//! Aggregations over every match of a query, answered in the same request as the hits:
//! `count`, `terms(field, N)`, `min`/`max`/`sum`/`avg`/`stats(field)`,
//! `percentiles(field[, p...])` and `cardinality(field)`, overall or per time bucket.
//!
//! Values come from the doc values where a column has them (format version 3: read in place by
//! doc id; a terms aggregation counts dictionary ordinals and resolves only the distinct ones
//! it saw to strings), else from the column chunks: matches arrive in doc order, so each field
//! keeps the one decoded chunk the current doc is in. Percentiles are exact over up to 65,536
//! distinct integer values and otherwise use DDSketch (`sketches-ddsketch`, 1% relative error
//! on each returned value); cardinality uses HyperLogLog++ (`hyperloglogplus`, precision 14:
//! about 0.8% standard error, exact below a few thousand values).

use crate::error::{QueryError, Result};
use crate::filter::TimeLookup;
use crate::query::Query;
use crate::scorer::Scorer;
use crate::searcher::Searcher;
use crate::timeline::{bucket_ends, MAX_BUCKETS};
use crate::weight::Weight;
use hashbrown::HashMap;
use hyperloglogplus::{HyperLogLog, HyperLogLogPlus};
use quarry_format::column::{ChunkValues, ColumnReader, DecodedChunk};
use quarry_format::docvalues::{DocValues, DocValuesCursor};
use quarry_format::{BlockReader, ColumnType, DecodeError};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value as Json};
use sketches_ddsketch::{Config as SketchConfig, DDSketch};
use std::collections::BTreeMap;
use std::hash::BuildHasher;

/// Relative accuracy of percentile estimates.
pub const PERCENTILE_RELATIVE_ERROR: f64 = 0.01;
/// HyperLogLog++ precision: 2^14 registers.
pub(crate) const CARDINALITY_PRECISION: u8 = 14;
const DEFAULT_PERCENTS: [f64; 3] = [50.0, 95.0, 99.0];

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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

/// A cardinality sketch. Values are inserted as byte slices (the key type is `Vec<u8>` only
/// because the sketch's deserializer needs a sized one; a `[u8]` hashes the same).
pub(crate) type Hll = HyperLogLogPlus<Vec<u8>, FixedSipHash>;

/// The hash of cardinality sketches: std's SipHash-1-3 with fixed keys, so that sketches
/// built apart (per block, per node of one build) count a value alike and merge. A type of
/// our own because a sketch travels with its hasher's builder.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
pub(crate) struct FixedSipHash;

impl BuildHasher for FixedSipHash {
    type Hasher = std::collections::hash_map::DefaultHasher;

    fn build_hasher(&self) -> Self::Hasher {
        std::collections::hash_map::DefaultHasher::new()
    }
}

/// Counts by dictionary ordinal of one block's doc values, folded into the string counts when
/// values come from another block (or at the end).
struct OrdinalCounts<'a> {
    dictionary: DocValues<'a>,
    counts: OrdinalTally,
}

/// Counts by ordinal: a vector for a small dictionary (no hashing per value), a map for a
/// large one (per-bucket states would each hold the whole vector).
enum OrdinalTally {
    Dense(Vec<u64>),
    Sparse(HashMap<u32, u64>),
}

/// The most matches an aggregation buffers before adding them to their group.
const PENDING_DOCS: usize = 1024;

/// The largest dictionary counted in a vector.
const DENSE_ORDINALS_MAX: usize = 4096;

impl OrdinalTally {
    fn for_dictionary(len: usize) -> OrdinalTally {
        if len <= DENSE_ORDINALS_MAX {
            OrdinalTally::Dense(vec![0; len])
        } else {
            OrdinalTally::Sparse(HashMap::new())
        }
    }

    fn add(&mut self, ordinal: u32) {
        match self {
            OrdinalTally::Dense(counts) => {
                // An ordinal past the dictionary names no string (doc values checked at open
                // hold none); `fold_ordinals` would skip it from the map too.
                if let Some(n) = counts.get_mut(ordinal as usize) {
                    *n += 1;
                }
            }
            OrdinalTally::Sparse(counts) => *counts.entry(ordinal).or_default() += 1,
        }
    }

    /// The non-zero counts.
    fn into_counts(self) -> Vec<(u32, u64)> {
        match self {
            OrdinalTally::Dense(counts) => counts
                .into_iter()
                .enumerate()
                .filter(|&(_, n)| n > 0)
                .map(|(ordinal, n)| (ordinal as u32, n))
                .collect(),
            OrdinalTally::Sparse(counts) => counts.into_iter().collect(),
        }
    }
}

/// The running state of one aggregation.
enum AggState<'a> {
    Count(u64),
    Terms(HashMap<String, u64>, Option<OrdinalCounts<'a>>),
    Numbers {
        count: u64,
        min: f64,
        max: f64,
        sum: f64,
    },
    Percentiles(Box<Percentiles>),
    Distinct(Box<Hll>),
}

impl<'a> AggState<'a> {
    /// `single_group`: the state is the whole result's, not one of many per-bucket states.
    fn new(kind: &AggKind, single_group: bool) -> AggState<'a> {
        match kind {
            AggKind::Count => AggState::Count(0),
            AggKind::Terms { .. } => AggState::Terms(HashMap::new(), None),
            AggKind::Percentiles(_) => {
                AggState::Percentiles(Box::new(Percentiles::new(single_group)))
            }
            AggKind::Cardinality => AggState::Distinct(Box::new(
                // The precision is a valid constant.
                HyperLogLogPlus::new(CARDINALITY_PRECISION, FixedSipHash).expect("valid precision"),
            )),
            _ => AggState::Numbers {
                count: 0,
                min: f64::INFINITY,
                max: f64::NEG_INFINITY,
                sum: 0.0,
            },
        }
    }

    /// Counts the ordinals of `values` (a string column's doc values) over `[lo, hi)` a
    /// 128-doc group at a time, when this is a terms state and the dictionary is small
    /// enough to count densely; false (nothing done) otherwise. A terms aggregation over
    /// every event took 22 ms on 1M generated events through `add`, a call and a branch per
    /// doc.
    fn add_ordinals_in_range(&mut self, values: DocValues<'a>, lo: u32, hi: u32) -> bool {
        let Some(tally) = self.dense_tally(values) else {
            return false;
        };
        // Counted by slot (0: no value), then moved to the ordinals' tally.
        let mut by_slot = vec![0u64; values.dictionary_len() + 1];
        values.for_each_group_in_range(lo, hi, |_, _, _, slots| {
            for &slot in slots {
                // A slot past the dictionary names no string (see `OrdinalTally::add`).
                if let Some(n) = by_slot.get_mut(slot as usize) {
                    *n += 1;
                }
            }
        });
        for (total, n) in tally.iter_mut().zip(&by_slot[1..]) {
            *total += n;
        }
        true
    }

    /// `add_ordinals_in_range` for the matching `docs` (increasing) of `cursor`'s field.
    fn add_ordinals_of_docs(&mut self, cursor: &mut FieldCursor<'a>, docs: &[u32]) -> bool {
        let Some(values) = cursor.string_doc_values_cursor() else {
            return false;
        };
        let Some(tally) = self.dense_tally(values.values()) else {
            return false;
        };
        for &doc in docs {
            // An ordinal past the dictionary names no string (see `OrdinalTally::add`).
            if let Some(n) = values.ordinal(doc).and_then(|o| tally.get_mut(o as usize)) {
                *n += 1;
            }
        }
        true
    }

    /// Adds the values of the matching `docs` (increasing) of `cursor`'s field when it is
    /// read from integer doc values and this is a numbers or percentiles state; false
    /// (nothing done) otherwise.
    fn add_integers_of_docs(&mut self, cursor: &mut FieldCursor<'a>, docs: &[u32]) -> bool {
        let Some(columns) = cursor.integer_doc_values_cursors() else {
            return false;
        };
        // A doc's value is in the first column that has one (as in `with_typed_value`).
        let mut value = |doc: u32| {
            columns
                .iter_mut()
                .find_map(|(ty, values)| values.raw(doc).map(|raw| number(*ty, raw)))
        };
        match self {
            AggState::Numbers {
                count,
                min,
                max,
                sum,
            } => {
                for v in docs.iter().filter_map(|&doc| value(doc)) {
                    add_number((count, min, max, sum), v);
                }
            }
            AggState::Percentiles(percentiles) => {
                for v in docs.iter().filter_map(|&doc| value(doc)) {
                    percentiles.add(v);
                }
            }
            _ => return false,
        }
        true
    }

    /// A terms state's dense tally for the ordinals of `values` (switching to its
    /// dictionary, as `add` does); `None` if this is not a terms state or the dictionary is
    /// too large to count densely.
    fn dense_tally(&mut self, values: DocValues<'a>) -> Option<&mut Vec<u64>> {
        let AggState::Terms(counts, ordinals) = self else {
            return None;
        };
        if values.dictionary_len() > DENSE_ORDINALS_MAX {
            return None;
        }
        match &mut ordinal_counts(counts, ordinals, values).counts {
            OrdinalTally::Dense(tally) => Some(tally),
            OrdinalTally::Sparse(_) => None, // (for_dictionary gives a dense tally for this length)
        }
    }

    fn add(&mut self, value: FieldValue<'_, 'a>) {
        match self {
            AggState::Count(n) => *n += 1,
            AggState::Terms(counts, ordinals) => {
                let buffer;
                let key: &str = match value {
                    FieldValue::Str(s) => s,
                    FieldValue::Number(v) => {
                        buffer = format_number(v);
                        &buffer
                    }
                    FieldValue::Ordinal(ordinal, dictionary) => {
                        ordinal_counts(counts, ordinals, dictionary)
                            .counts
                            .add(ordinal);
                        return;
                    }
                };
                // Allocates the key only when it is new.
                *counts.entry_ref(key).or_insert(0) += 1;
            }
            AggState::Numbers {
                count,
                min,
                max,
                sum,
            } => {
                if let FieldValue::Number(v) = value {
                    if !v.is_nan() {
                        add_number((count, min, max, sum), v);
                    }
                }
            }
            AggState::Percentiles(percentiles) => {
                if let FieldValue::Number(v) = value {
                    percentiles.add(v);
                }
            }
            AggState::Distinct(hll) => match value {
                FieldValue::Str(s) => hll.insert(s.as_bytes()),
                FieldValue::Number(v) => hll.insert(&format_number(v).into_bytes()[..]),
                FieldValue::Ordinal(ordinal, dictionary) => {
                    hll.insert(dictionary.string(ordinal).unwrap_or_default())
                }
            },
        }
    }

    /// Adds `other`, the same aggregation's state over other docs: partial results merge
    /// (per block now, per node when searches scatter).
    fn merge(&mut self, other: AggState<'a>) {
        match (self, other) {
            (AggState::Count(n), AggState::Count(m)) => *n += m,
            (AggState::Terms(counts, ordinals), AggState::Terms(mut more, more_ordinals)) => {
                fold_ordinals(counts, ordinals.take());
                fold_ordinals(&mut more, more_ordinals);
                if more.len() > counts.len() {
                    std::mem::swap(counts, &mut more);
                }
                for (key, n) in more {
                    *counts.entry(key).or_insert(0) += n;
                }
            }
            (
                AggState::Numbers {
                    count,
                    min,
                    max,
                    sum,
                },
                AggState::Numbers {
                    count: count2,
                    min: min2,
                    max: max2,
                    sum: sum2,
                },
            ) => {
                *count += count2;
                *min = min.min(min2);
                *max = max.max(max2);
                *sum += sum2;
            }
            (AggState::Percentiles(a), AggState::Percentiles(b)) => a.merge(*b),
            (AggState::Distinct(a), AggState::Distinct(b)) => {
                // Same precision by construction, the only way a merge fails.
                a.merge(&*b).expect("cardinality sketches of one precision");
            }
            _ => unreachable!("partial states of one spec are of one kind"),
        }
    }

    fn result(&mut self, kind: &AggKind) -> Json {
        if let AggState::Terms(counts, ordinals) = self {
            fold_ordinals(counts, ordinals.take());
        }
        match (self, kind) {
            (AggState::Count(n), _) => json!(n),
            (AggState::Terms(counts, _), AggKind::Terms { size }) => {
                let mut top: Vec<(&String, &u64)> = counts.iter().collect();
                let order = |a: &(&String, &u64), b: &(&String, &u64)| {
                    b.1.cmp(a.1).then_with(|| a.0.cmp(b.0))
                };
                // Only the first `size` need sorting.
                if *size > 0 && top.len() > *size {
                    top.select_nth_unstable_by(*size - 1, order);
                    top[..*size].sort_by(order);
                } else {
                    top.sort_by(order);
                }
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
            (AggState::Percentiles(state), AggKind::Percentiles(percents)) => {
                let mut out = serde_json::Map::new();
                for p in percents {
                    let value = state.quantile(p / 100.0);
                    out.insert(format_number(*p), value.map_or(Json::Null, |v| json!(v)));
                }
                Json::Object(out)
            }
            (AggState::Distinct(hll), _) => json!(hll.count().round() as u64),
            _ => Json::Null,
        }
    }
}

/// Percentiles: exact while the values are integers in a narrow span (a dense count per
/// value, for a whole-result aggregation) or few distinct integers (a count per value in a
/// map; other values, fractions or past 9e18, in a map by their bits), else a DDSketch with 1%
/// relative error. Log fields such as latencies and sizes are
/// mostly small integers, and a count is cheaper than a sketch insert, which was half of a
/// percentiles request in the profile. Exact percentiles are the value at rank
/// `floor(q * (n - 1))`.
pub(crate) struct Percentiles {
    /// Counts of the integers `offset..offset + counts.len()`, while they span at most
    /// `dense_span_max` values (0: never, as for per-bucket states, which are many).
    dense: Option<(i64, Vec<u64>)>,
    dense_span_max: usize,
    /// Count per integer value, until there are more than `EXACT_VALUES_MAX` of them.
    exact: Option<HashMap<i64, u64>>,
    /// Count per other value (`f64` bits), within the same `EXACT_VALUES_MAX`, while `exact`
    /// is kept.
    floats: HashMap<u64, u64>,
    sketch: Option<DDSketch>,
}

const EXACT_VALUES_MAX: usize = 1 << 16;
/// 8 MiB of counts at most, for one whole-result percentiles aggregation.
const DENSE_SPAN_MAX: usize = 1 << 20;

impl Percentiles {
    pub(crate) fn new(single_group: bool) -> Percentiles {
        Percentiles {
            dense: None,
            dense_span_max: if single_group { DENSE_SPAN_MAX } else { 0 },
            exact: Some(HashMap::new()),
            floats: HashMap::new(),
            sketch: None,
        }
    }

    pub(crate) fn add(&mut self, v: f64) {
        if !v.is_finite() {
            return;
        }
        // (Not `fract`, a libm call per value in the profile.)
        let value = v as i64;
        let integer = value as f64 == v && value.unsigned_abs() < 9_000_000_000_000_000;
        if integer && self.sketch.is_none() {
            if self.dense_span_max > 0 && self.add_dense(value) {
                return;
            }
            if let Some(exact) = &mut self.exact {
                if exact.len() + self.floats.len() < EXACT_VALUES_MAX || exact.contains_key(&value)
                {
                    *exact.entry(value).or_default() += 1;
                    return;
                }
            }
        } else if let Some(exact) = &self.exact {
            // -0.0 is 0.0: one key.
            let bits = (v + 0.0).to_bits();
            if exact.len() + self.floats.len() < EXACT_VALUES_MAX || self.floats.contains_key(&bits)
            {
                *self.floats.entry(bits).or_default() += 1;
                return;
            }
        }
        if self.sketch.is_none() {
            self.spill();
        }
        if let Some(sketch) = &mut self.sketch {
            sketch.add(v);
        }
    }

    /// Counts `value` densely if its span allows (growing the window by doubling); once it
    /// does not, the dense counts move to the map for good.
    fn add_dense(&mut self, value: i64) -> bool {
        let (offset, counts) = self.dense.get_or_insert_with(|| (value, vec![0; 64]));
        if let Some(slot) = value
            .checked_sub(*offset)
            .and_then(|i| usize::try_from(i).ok())
            .and_then(|i| counts.get_mut(i))
        {
            *slot += 1;
            return true;
        }
        let (lo, hi) = (
            (*offset).min(value),
            (*offset + counts.len() as i64 - 1).max(value),
        );
        let span = (hi as i128 - lo as i128 + 1) as usize;
        if span <= self.dense_span_max {
            // Room to grow on the side the value came from.
            let len = (counts.len() * 2).max(span).min(self.dense_span_max);
            let new_offset = if value < *offset {
                hi - len as i64 + 1
            } else {
                lo
            };
            let mut grown = vec![0u64; len];
            let shift = (*offset - new_offset) as usize;
            grown[shift..shift + counts.len()].copy_from_slice(counts);
            grown[(value - new_offset) as usize] += 1;
            self.dense = Some((new_offset, grown));
            return true;
        }
        let (offset, counts) = self.dense.take().unwrap_or_default();
        self.dense_span_max = 0;
        let exact = self.exact.get_or_insert_with(HashMap::new);
        for (i, &n) in counts.iter().enumerate() {
            if n > 0 {
                *exact.entry(offset + i as i64).or_default() += n;
            }
        }
        false
    }

    /// Every counted value so far, ascending, with its count.
    fn counted(&self) -> Vec<(f64, u64)> {
        let mut values: Vec<(f64, u64)> = self
            .exact
            .iter()
            .flatten()
            .map(|(&v, &n)| (v as f64, n))
            .chain(
                self.floats
                    .iter()
                    .map(|(&bits, &n)| (f64::from_bits(bits), n)),
            )
            .collect();
        if let Some((offset, counts)) = &self.dense {
            values.extend(
                counts
                    .iter()
                    .enumerate()
                    .filter(|(_, &n)| n > 0)
                    .map(|(i, &n)| ((offset + i as i64) as f64, n)),
            );
        }
        values.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
        values
    }

    /// Adds `other`'s values: exact counts while both are exact and few enough, else the
    /// sketch.
    pub(crate) fn merge(&mut self, mut other: Percentiles) {
        if self.sketch.is_none() && other.sketch.is_none() {
            let mut exact = self.exact.take().unwrap_or_default();
            for (value, n) in self.dense_counts() {
                *exact.entry(value).or_default() += n;
            }
            for (&value, &n) in other.exact.iter().flatten() {
                *exact.entry(value).or_default() += n;
            }
            for (value, n) in other.dense_counts() {
                *exact.entry(value).or_default() += n;
            }
            for (bits, n) in other.floats {
                *self.floats.entry(bits).or_default() += n;
            }
            self.dense = None;
            self.dense_span_max = 0;
            let spill = exact.len() + self.floats.len() > EXACT_VALUES_MAX;
            self.exact = Some(exact);
            if spill {
                self.spill();
            }
            return;
        }
        if self.sketch.is_none() {
            self.spill();
        }
        if other.sketch.is_none() {
            other.spill();
        }
        if let (Some(sketch), Some(more)) = (&mut self.sketch, &other.sketch) {
            // Same configuration by construction, the only way a merge fails.
            sketch
                .merge(more)
                .expect("percentile sketches of one configuration");
        }
    }

    /// The state as it travels: its exact counts, or its sketch once it has one.
    pub(crate) fn to_wire(&self) -> (Vec<(f64, u64)>, Option<DDSketch>) {
        match &self.sketch {
            Some(sketch) => (Vec::new(), Some(sketch.clone())),
            None => (self.counted(), None),
        }
    }

    /// The state `Percentiles::counted` and the sketch describe (one or the other).
    pub(crate) fn from_wire(counted: Vec<(f64, u64)>, sketch: Option<DDSketch>) -> Percentiles {
        let mut state = Percentiles::new(false);
        if let Some(sketch) = sketch {
            state.exact = None;
            state.sketch = Some(sketch);
            return state;
        }
        let exact = state.exact.get_or_insert_with(HashMap::new);
        for (v, n) in counted {
            let value = v as i64;
            if value as f64 == v && value.unsigned_abs() < 9_000_000_000_000_000 {
                *exact.entry(value).or_default() += n;
            } else {
                *state.floats.entry((v + 0.0).to_bits()).or_default() += n;
            }
        }
        state
    }

    /// The dense counts as (value, count), leaving them empty.
    fn dense_counts(&mut self) -> Vec<(i64, u64)> {
        let Some((offset, counts)) = self.dense.take() else {
            return Vec::new();
        };
        counts
            .iter()
            .enumerate()
            .filter(|(_, &n)| n > 0)
            .map(|(i, &n)| (offset + i as i64, n))
            .collect()
    }

    /// From exact counts to the sketch, for good.
    fn spill(&mut self) {
        // alpha 1%, values below 1e-9 in magnitude count as zero, and up to 4096 bins (from
        // there on the lowest collapse): 4096 bins of 2% span a ratio of e^82, 1e-9 to 1e26.
        let config = SketchConfig::new(PERCENTILE_RELATIVE_ERROR, 4096, 1e-9);
        let mut sketch = DDSketch::new(config);
        for (value, count) in self.counted() {
            for _ in 0..count {
                sketch.add(value);
            }
        }
        self.dense = None;
        self.exact = None;
        self.floats = HashMap::new();
        self.sketch = Some(sketch);
    }

    pub(crate) fn quantile(&self, q: f64) -> Option<f64> {
        if let Some(sketch) = &self.sketch {
            return sketch.quantile(q).ok().flatten();
        }
        let values = self.counted();
        let total: u64 = values.iter().map(|&(_, n)| n).sum();
        if total == 0 {
            return None;
        }
        let rank = (q.clamp(0.0, 1.0) * (total - 1) as f64).floor() as u64;
        Some(at_rank(&values, rank))
    }

    /// The quantile `q` as Elasticsearch's t-digest gives it while every value is its own
    /// centroid (few values): each value sits at the middle of its unit of rank, and `q * n`
    /// is interpolated between the two values around it (below the first's middle: the
    /// minimum; past the last's: the maximum). The median of 1 and 3 is 2. Beyond exact
    /// counting, the sketch's estimate.
    pub(crate) fn interpolated(&self, q: f64) -> Option<f64> {
        if let Some(sketch) = &self.sketch {
            return sketch.quantile(q).ok().flatten();
        }
        interpolate(&self.counted(), q)
    }

    /// The quantile `q` as Elasticsearch's HDR percentiles report it (HdrHistogram's
    /// `DoubleHistogram` with `digits` significant digits): the value at rank
    /// `max(1, ceil(q * n))`, given as the highest value the histogram cannot tell from it.
    /// The histogram counts in integer units of `2^floor(log2(smallest positive value)) /
    /// 2^m`, where `2^m` is half of the sub-buckets that hold `2 * 10^digits` values; an
    /// integer `v` shares its bucket with `2^(max(msb(v), m) - m)` neighbours. With values 1,
    /// 51, 101 and 151 and 3 digits the median is 51.0302734375, as Elasticsearch says.
    /// Negative values are an error, as in Elasticsearch; beyond exact counting the sketch's
    /// value is reported the same way.
    pub(crate) fn hdr(&self, q: f64, digits: u32) -> Result<Option<f64>, crate::QueryError> {
        let negative = || {
            crate::QueryError::Invalid(
                "HDR percentiles take no negative values (the field holds one)".into(),
            )
        };
        let (value, smallest) = match &self.sketch {
            Some(sketch) => {
                if sketch.min().is_some_and(|m| m < 0.0) {
                    return Err(negative());
                }
                let Some(value) = sketch.quantile(q).ok().flatten() else {
                    return Ok(None);
                };
                (value, sketch.min().filter(|m| *m > 0.0))
            }
            None => {
                let values = self.counted();
                if values.first().is_some_and(|&(v, _)| v < 0.0) {
                    return Err(negative());
                }
                let total: u64 = values.iter().map(|&(_, n)| n).sum();
                if total == 0 {
                    return Ok(None);
                }
                let rank = ((q.clamp(0.0, 1.0) * total as f64).ceil() as u64).max(1);
                let mut seen = 0;
                let value = values
                    .iter()
                    .find(|&&(_, n)| {
                        seen += n;
                        seen >= rank
                    })
                    .map_or(0.0, |&(v, _)| v);
                (value, values.iter().map(|&(v, _)| v).find(|&v| v > 0.0))
            }
        };
        let Some(smallest) = smallest else {
            return Ok(Some(value));
        };
        // Sub-buckets: the power of two at or above 2 * 10^digits; half of them.
        let single_unit = 2.0 * 10f64.powi(digits as i32);
        let half_magnitude = (single_unit.log2().ceil() as i32 - 1).max(0);
        let unit = 2f64.powi(smallest.log2().floor() as i32 - half_magnitude);
        let integer = (value / unit).floor() as u64;
        let msb = 63 - i32::try_from(integer.max(1).leading_zeros()).unwrap_or(63);
        let size = 1u64 << (msb.max(half_magnitude) - half_magnitude);
        let highest = integer / size * size + size - 1;
        Ok(Some(highest as f64 * unit))
    }

    /// The median absolute deviation: the median (`interpolated`) of the values' distances
    /// from their median. Beyond exact counting, from a thousand of the sketch's quantiles.
    pub(crate) fn median_absolute_deviation(&self) -> Option<f64> {
        let values: Vec<(f64, u64)> = match &self.sketch {
            Some(sketch) => (0..1000)
                .filter_map(|i| {
                    sketch
                        .quantile((f64::from(i) + 0.5) / 1000.0)
                        .ok()
                        .flatten()
                })
                .map(|v| (v, 1))
                .collect(),
            None => self.counted(),
        };
        let median = interpolate(&values, 0.5)?;
        let mut distances: Vec<(f64, u64)> = values
            .iter()
            .map(|&(v, n)| ((v - median).abs(), n))
            .collect();
        distances.sort_by(|a, b| a.0.total_cmp(&b.0));
        interpolate(&distances, 0.5)
    }
}

/// The quantile `q` of `values` (ascending, with their counts), interpolated as
/// `Percentiles::interpolated` says.
fn interpolate(values: &[(f64, u64)], q: f64) -> Option<f64> {
    let total: u64 = values.iter().map(|&(_, n)| n).sum();
    if total == 0 {
        return None;
    }
    let at = |rank: u64| at_rank(values, rank);
    let index = q.clamp(0.0, 1.0) * total as f64;
    if index < 0.5 {
        return Some(at(0));
    }
    if index >= total as f64 - 0.5 {
        return Some(at(total - 1));
    }
    let below = (index - 0.5).floor();
    let fraction = index - 0.5 - below;
    let below = below as u64;
    let (low, high) = (at(below), at(below + 1));
    // As t-digest 3.2 weighs the two (`low + (high - low) * fraction` rounds differently
    // when the values are far apart, as 1101 and 1e19 are in the suite).
    Some(low * (1.0 - fraction) + high * fraction)
}

/// The value of rank `rank` (0-based) among `counted` values (ascending, with their counts);
/// the largest past the end.
fn at_rank(counted: &[(f64, u64)], rank: u64) -> f64 {
    let mut seen = 0u64;
    for &(value, n) in counted {
        seen += n;
        if seen > rank {
            return value;
        }
    }
    counted.last().map_or(0.0, |&(v, _)| v)
}

/// Adds one block's ordinal counts to the counts by string.
/// Adds `v` to a numbers state's count, min, max and sum.
fn add_number((count, min, max, sum): (&mut u64, &mut f64, &mut f64, &mut f64), v: f64) {
    *count += 1;
    *min = min.min(v);
    *max = max.max(v);
    *sum += v;
}

/// A terms state's ordinal counts for `dictionary`: the current ones if they count its
/// ordinals, else new ones, the old ones first folded into `counts` by string.
fn ordinal_counts<'o, 'a>(
    counts: &mut HashMap<String, u64>,
    ordinals: &'o mut Option<OrdinalCounts<'a>>,
    dictionary: DocValues<'a>,
) -> &'o mut OrdinalCounts<'a> {
    if !ordinals
        .as_ref()
        .is_some_and(|o| o.dictionary.same_as(&dictionary))
    {
        fold_ordinals(counts, ordinals.take());
    }
    ordinals.get_or_insert_with(|| OrdinalCounts {
        dictionary,
        counts: OrdinalTally::for_dictionary(dictionary.dictionary_len()),
    })
}

fn fold_ordinals(counts: &mut HashMap<String, u64>, ordinals: Option<OrdinalCounts<'_>>) {
    let Some(ordinals) = ordinals else {
        return;
    };
    for (ordinal, n) in ordinals.counts.into_counts() {
        let Some(bytes) = ordinals.dictionary.string(ordinal) else {
            continue;
        };
        // Doc values hold the column's strings, which are UTF-8.
        let key = match std::str::from_utf8(bytes) {
            Ok(key) => std::borrow::Cow::Borrowed(key),
            Err(_) => String::from_utf8_lossy(bytes),
        };
        *counts.entry_ref(key.as_ref()).or_insert(0) += n;
    }
}

pub(crate) fn format_number(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

/// One value of a field: `'v` is the life of a decoded chunk, `'a` the block's.
#[derive(Clone, Copy)]
pub(crate) enum FieldValue<'v, 'a> {
    Str(&'v str),
    Number(f64),
    /// A string as its ordinal in the block's doc-values dictionary.
    Ordinal(u32, DocValues<'a>),
}

impl FieldValue<'_, '_> {
    /// The value as a number, or `None` for strings.
    pub(crate) fn number(self) -> Option<f64> {
        match self {
            FieldValue::Number(v) => Some(v),
            _ => None,
        }
    }
}

/// One value of a field with its column type.
#[derive(Clone, Copy)]
pub(crate) enum TypedValue<'v, 'a> {
    Str(&'v str),
    /// A string as its ordinal in the block's doc-values dictionary.
    Ordinal(u32, DocValues<'a>),
    /// A number, boolean or time: its column's raw 64-bit pattern.
    Raw(ColumnType, u64),
}

impl<'v, 'a> TypedValue<'v, 'a> {
    pub(crate) fn untyped(self) -> FieldValue<'v, 'a> {
        match self {
            TypedValue::Str(s) => FieldValue::Str(s),
            TypedValue::Ordinal(o, dictionary) => FieldValue::Ordinal(o, dictionary),
            TypedValue::Raw(ty, raw) => FieldValue::Number(number(ty, raw)),
        }
    }
}

/// One field's columns in one block, read in increasing doc order.
pub(crate) struct FieldCursor<'a> {
    /// Per column: its reader, the decoded chunk the last doc was in, and the position in
    /// that chunk's doc list to search on from (docs come in increasing order).
    columns: Vec<(ColumnReader<'a>, Option<DecodedChunk>, usize)>,
    /// When every column of the field has doc values, they are read instead of the chunks.
    doc_values: Option<Vec<(ColumnType, DocValuesCursor<'a>)>>,
    /// The field's arrays (kept as JSON text), read by `with_typed_values` only.
    arrays: Option<(ColumnReader<'a>, Option<DecodedChunk>, usize)>,
    block: &'a BlockReader,
}

/// `doc`'s value in one column, decoding the chunk holding it when the last one does not.
fn chunk_value<'c, 'a>(
    block: &'a BlockReader,
    (reader, decoded, from): &'c mut (ColumnReader<'a>, Option<DecodedChunk>, usize),
    doc: u32,
) -> Result<Option<TypedValue<'c, 'a>>> {
    let stale = decoded
        .as_ref()
        .is_none_or(|c| doc < c.first_doc || doc >= c.end_doc);
    if stale {
        let corrupt = |e: DecodeError| block.corrupt("column", e);
        let Some(index) = reader.chunk_of(doc).map_err(corrupt)? else {
            return Ok(None);
        };
        *decoded = Some(reader.decode_chunk(index).map_err(corrupt)?);
        *from = 0;
    }
    let Some(chunk) = decoded.as_ref() else {
        return Ok(None);
    };
    let position = match &chunk.docs {
        None => Some((doc - chunk.first_doc) as usize),
        Some(docs) => position_from(docs, doc, from),
    };
    let Some(position) = position else {
        return Ok(None);
    };
    Ok(match &chunk.values {
        ChunkValues::Bytes { .. } => chunk.str_at(position).map(TypedValue::Str),
        ChunkValues::Numbers(values) => values
            .get(position)
            .map(|raw| TypedValue::Raw(chunk.ty, *raw)),
    })
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
    pub(crate) fn new(block: &'a BlockReader, field: &str) -> FieldCursor<'a> {
        let Some(ordinal) = block.field_ordinal(field) else {
            return FieldCursor {
                columns: Vec::new(),
                doc_values: None,
                arrays: None,
                block,
            };
        };
        let metas: Vec<_> = block.manifest().fields[ordinal as usize]
            .columns
            .iter()
            .filter(|c| c.ty != ColumnType::Json && c.present_count > 0)
            .collect();
        let columns = metas
            .iter()
            .filter_map(|c| block.column(ordinal, c.ty))
            .map(|reader| (reader, None, 0))
            .collect();
        let doc_values = crate::filter::doc_value_cursors(block, ordinal, &metas);
        FieldCursor {
            columns,
            doc_values,
            arrays: None,
            block,
        }
    }

    /// A cursor that also reads the field's arrays: `with_typed_values` calls back with each
    /// of an array's scalar items.
    pub(crate) fn with_arrays(block: &'a BlockReader, field: &str) -> FieldCursor<'a> {
        let mut cursor = FieldCursor::new(block, field);
        if let Some(ordinal) = block.field_ordinal(field) {
            let holds_arrays = block.manifest().fields[ordinal as usize]
                .columns
                .iter()
                .any(|c| c.ty == ColumnType::Json && c.present_count > 0);
            if holds_arrays {
                cursor.arrays = block
                    .column(ordinal, ColumnType::Json)
                    .map(|reader| (reader, None, 0));
            }
        }
        cursor
    }

    /// Calls `f` with each of the doc's values: its one value, or each scalar item of its
    /// array (a cursor made `with_arrays`; items that are objects or arrays are not values).
    pub(crate) fn with_typed_values(
        &mut self,
        doc: u32,
        f: &mut impl FnMut(TypedValue<'_, 'a>),
    ) -> Result<()> {
        let mut found = false;
        self.with_typed_value(doc, &mut |value| {
            found = true;
            f(value);
        })?;
        if found {
            return Ok(());
        }
        self.with_array_items(doc, f)
    }

    /// Calls `f` with each scalar item of the doc's array, if it has one (a cursor made
    /// `with_arrays`).
    pub(crate) fn with_array_items(
        &mut self,
        doc: u32,
        f: &mut impl FnMut(TypedValue<'_, 'a>),
    ) -> Result<()> {
        let block = self.block;
        let Some(entry) = &mut self.arrays else {
            return Ok(());
        };
        let Some(TypedValue::Str(text)) = chunk_value(block, entry, doc)? else {
            return Ok(());
        };
        let Ok(serde_json::Value::Array(items)) = serde_json::from_str(text) else {
            return Ok(());
        };
        for item in &items {
            match item {
                serde_json::Value::String(s) => f(TypedValue::Str(s)),
                serde_json::Value::Bool(b) => f(TypedValue::Raw(ColumnType::Bool, u64::from(*b))),
                serde_json::Value::Number(n) => {
                    if let Some(v) = n.as_i64() {
                        f(TypedValue::Raw(ColumnType::I64, v as u64));
                    } else if let Some(v) = n.as_u64() {
                        f(TypedValue::Raw(ColumnType::U64, v));
                    } else if let Some(v) = n.as_f64() {
                        f(TypedValue::Raw(ColumnType::F64, v.to_bits()));
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Calls `f` with the doc's value (at most one per field: a field holds one type per doc).
    pub(crate) fn with_value(
        &mut self,
        doc: u32,
        f: &mut impl FnMut(FieldValue<'_, 'a>),
    ) -> Result<()> {
        self.with_typed_value(doc, &mut |value| f(value.untyped()))
    }

    /// `with_value`, with a number's column type (integers, floats, booleans and times stay
    /// apart: a terms key keeps its type).
    pub(crate) fn with_typed_value(
        &mut self,
        doc: u32,
        f: &mut impl FnMut(TypedValue<'_, 'a>),
    ) -> Result<()> {
        if let Some(doc_values) = &mut self.doc_values {
            for (ty, values) in doc_values {
                let value = if *ty == ColumnType::Str {
                    let dictionary = values.values();
                    values
                        .ordinal(doc)
                        .map(|o| TypedValue::Ordinal(o, dictionary))
                } else {
                    values.raw(doc).map(|raw| TypedValue::Raw(*ty, raw))
                };
                if let Some(value) = value {
                    f(value);
                    return Ok(());
                }
            }
            return Ok(());
        }
        let block = self.block;
        for entry in &mut self.columns {
            if let Some(value) = chunk_value(block, entry, doc)? {
                f(value);
                return Ok(());
            }
        }
        Ok(())
    }

    /// The field's doc values when every column of it has integer ones.
    fn integer_doc_values_cursors(&mut self) -> Option<&mut [(ColumnType, DocValuesCursor<'a>)]> {
        if !self.reads_integer_doc_values() {
            return None;
        }
        self.doc_values.as_deref_mut()
    }

    /// The field's doc values when they are its only column and hold strings (ordinals).
    fn string_doc_values_cursor(&mut self) -> Option<&mut DocValuesCursor<'a>> {
        match self.doc_values.as_deref_mut() {
            Some([(ColumnType::Str, values)]) if values.values().dictionary_len() > 0 => {
                Some(values)
            }
            _ => None,
        }
    }

    /// Whether the field is read from doc values that are all integers (no string column).
    fn reads_integer_doc_values(&self) -> bool {
        self.doc_values.as_ref().is_some_and(|columns| {
            columns
                .iter()
                .all(|(ty, values)| *ty != ColumnType::Str && values.values().dictionary_len() == 0)
        })
    }

    /// Adds the count, min, max and sum of the field's values in `[lo, hi)` (integer doc
    /// values: `reads_integer_doc_values`) a 128-doc group at a time, with no branch per doc:
    /// a stats aggregation over every event took 17 ns a doc through `for_each_in_range`,
    /// most of it a mispredicted "has a value" branch (perf, 1M generated events). A group's
    /// sum is exact (i128) before it is added as f64, so it equals the per-value sum wherever
    /// that is exact (below 2^53).
    fn integer_stats_in_range(
        &self,
        lo: u32,
        hi: u32,
        count: &mut u64,
        min: &mut f64,
        max: &mut f64,
        sum: &mut f64,
    ) {
        let Some(columns) = &self.doc_values else {
            return;
        };
        for (ty, values) in columns {
            let ty = *ty;
            let signed = matches!(ty, ColumnType::I64 | ColumnType::Timestamp);
            values
                .values()
                .for_each_group_in_range(lo, hi, |_, base, divisor, slots| {
                    let (mut present, mut least, mut most, mut total) =
                        (0u64, u32::MAX, 0u32, 0u64);
                    for &slot in slots {
                        present += u64::from(slot != 0);
                        // Slot 0 (no value) wraps to the largest: never the least.
                        least = least.min(slot.wrapping_sub(1));
                        most = most.max(slot);
                        total += u64::from(slot);
                    }
                    if present == 0 {
                        return;
                    }
                    let value =
                        |v: u32| number(ty, base.wrapping_add(u64::from(v).wrapping_mul(divisor)));
                    *count += present;
                    *min = min.min(value(least));
                    *max = max.max(value(most - 1));
                    // Every value is base + (slot - 1) * divisor, the product below 2^64.
                    let base = if signed {
                        i128::from(base as i64)
                    } else {
                        i128::from(base)
                    };
                    let offsets = i128::from(total - present) * i128::from(divisor);
                    *sum += (base * i128::from(present) + offsets) as f64;
                });
        }
    }

    /// Calls `f` with the value of every doc in `[lo, hi)` that has one, walking the chunks
    /// (a query that matches a whole doc range needs no per-doc look-up).
    fn for_each_in_range(
        &mut self,
        lo: u32,
        hi: u32,
        mut f: impl FnMut(FieldValue<'_, 'a>),
    ) -> Result<()> {
        if let Some(doc_values) = &self.doc_values {
            for (ty, values) in doc_values {
                let (ty, values) = (*ty, values.values());
                values.for_each_in_range(lo, hi, |_, value| {
                    f(if ty == ColumnType::Str {
                        FieldValue::Ordinal(value as u32, values)
                    } else {
                        FieldValue::Number(number(ty, value))
                    })
                });
            }
            return Ok(());
        }
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

fn value_at<'v, 'a>(chunk: &'v DecodedChunk, position: usize) -> Option<FieldValue<'v, 'a>> {
    match (&chunk.values, chunk.ty) {
        (ChunkValues::Bytes { .. }, _) => chunk.str_at(position).map(FieldValue::Str),
        (ChunkValues::Numbers(values), ty) => {
            Some(FieldValue::Number(number(ty, *values.get(position)?)))
        }
    }
}

/// A numeric column's raw 64-bit pattern as a number.
fn number(ty: ColumnType, raw: u64) -> f64 {
    match ty {
        ColumnType::I64 | ColumnType::Timestamp => raw as i64 as f64,
        ColumnType::U64 | ColumnType::Bool => raw as f64,
        _ => f64::from_bits(raw),
    }
}

/// The states of all requested aggregations for one group (the whole result or one bucket).
struct Group<'a> {
    count: u64,
    states: Vec<AggState<'a>>,
}

impl<'a> Group<'a> {
    fn new(specs: &[AggSpec], single_group: bool) -> Group<'a> {
        Group {
            count: 0,
            states: specs
                .iter()
                .map(|s| AggState::new(&s.kind, single_group))
                .collect(),
        }
    }

    /// Adds the matching `docs` (increasing), a field at a time: a terms count over a small
    /// dictionary then costs a slot read and an increment per doc (per doc and per field
    /// through `with_value`, a terms aggregation over 500k matches took 20 ms).
    fn collect_docs(
        &mut self,
        docs: &[u32],
        cursors: &mut [Option<FieldCursor<'a>>],
    ) -> Result<()> {
        self.count += docs.len() as u64;
        for (state, cursor) in self.states.iter_mut().zip(cursors.iter_mut()) {
            match cursor {
                None => docs.iter().for_each(|_| state.add(FieldValue::Number(0.0))),
                Some(cursor) => {
                    if !state.add_ordinals_of_docs(cursor, docs)
                        && !state.add_integers_of_docs(cursor, docs)
                    {
                        for &doc in docs {
                            cursor.with_value(doc, &mut |value| state.add(value))?;
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// Every doc of `[lo, hi)` matches.
    fn collect_range(
        &mut self,
        lo: u32,
        hi: u32,
        cursors: &mut [Option<FieldCursor<'a>>],
    ) -> Result<()> {
        self.count += u64::from(hi - lo);
        for (state, cursor) in self.states.iter_mut().zip(cursors.iter_mut()) {
            match (cursor, state) {
                (_, AggState::Count(n)) => *n += u64::from(hi - lo),
                (None, _) => {}
                (
                    Some(cursor),
                    AggState::Numbers {
                        count,
                        min,
                        max,
                        sum,
                    },
                ) if cursor.reads_integer_doc_values() => {
                    cursor.integer_stats_in_range(lo, hi, count, min, max, sum)
                }
                (Some(cursor), state) => {
                    let counted = cursor
                        .string_doc_values_cursor()
                        .is_some_and(|values| state.add_ordinals_in_range(values.values(), lo, hi));
                    if !counted {
                        cursor.for_each_in_range(lo, hi, |v| state.add(v))?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Adds `other`, the same specs' group over other docs.
    fn merge(&mut self, other: Group<'a>) {
        self.count += other.count;
        for (state, more) in self.states.iter_mut().zip(other.states) {
            state.merge(more);
        }
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

/// The aggregations' states over some of the matches, not yet results: what a leaf of a
/// distributed search answers (leaf.rs). Partials of the same specs over other matches merge
/// ([`AggPartial::merge`]) into the state one searcher over all of them would reach, and only
/// then become results. They travel as bytes ([`AggPartial::to_bytes`]): terms as every
/// (value, count) seen, numbers as count/min/max/sum, percentiles as their exact counts or
/// their DDSketch, cardinality as its HyperLogLog++ sketch.
pub struct AggPartial {
    /// The bucket width (ns) when the states are per bucket.
    interval: Option<i64>,
    /// Per bucket index (`start / interval`); one group, at 0, without buckets.
    groups: BTreeMap<i64, Group<'static>>,
}

impl std::fmt::Debug for AggPartial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AggPartial")
            .field("interval", &self.interval)
            .field("groups", &self.groups.len())
            .finish()
    }
}

impl AggPartial {
    /// No matches yet.
    pub fn empty(interval: Option<i64>) -> AggPartial {
        AggPartial {
            interval,
            groups: BTreeMap::new(),
        }
    }

    /// Adds `other`, the same specs' states over other matches.
    pub fn merge(&mut self, other: AggPartial) {
        merge_groups(&mut self.groups, other.groups);
    }

    /// The results over every match, as `{name: result}` (`Searcher::aggregate`).
    pub fn overall(mut self, specs: &[AggSpec]) -> serde_json::Map<String, Json> {
        self.groups
            .pop_first()
            .map(|(_, group)| group)
            .unwrap_or_else(|| Group::new(specs, true))
            .results(specs)
    }

    /// The results per bucket, empty buckets between the first and the last non-empty one
    /// included (`Searcher::aggregate_histogram`).
    pub fn buckets(mut self, specs: &[AggSpec]) -> Result<BucketAggregations> {
        let interval = self.interval.unwrap_or(1);
        let (Some(&first), Some(&last)) =
            (self.groups.keys().next(), self.groups.keys().next_back())
        else {
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
                let group = self
                    .groups
                    .remove(&bucket)
                    .unwrap_or_else(|| Group::new(specs, false));
                (
                    bucket.saturating_mul(interval),
                    group.count,
                    group.results(specs),
                )
            })
            .collect())
    }

    /// The states as bytes, to send to the root.
    pub fn to_bytes(&self) -> Vec<u8> {
        let wire = WirePartial {
            interval: self.interval,
            groups: self
                .groups
                .iter()
                .map(|(&bucket, group)| WireGroup {
                    bucket,
                    count: group.count,
                    states: group.states.iter().map(AggState::to_wire).collect(),
                })
                .collect(),
        };
        // Serializing owned plain data into a vector cannot fail.
        postcard::to_allocvec(&wire).expect("aggregation states serialize")
    }

    /// States sent by `to_bytes`, checked against `specs` (one state per spec, of its kind).
    pub fn from_bytes(bytes: &[u8], specs: &[AggSpec]) -> Result<AggPartial> {
        let partial = AggPartial::decode(bytes)?;
        partial.check(specs)?;
        Ok(partial)
    }

    fn decode(bytes: &[u8]) -> Result<AggPartial> {
        let wire: WirePartial = postcard::from_bytes(bytes)
            .map_err(|e| QueryError::Invalid(format!("bad aggregation states: {e}")))?;
        Ok(AggPartial {
            interval: wire.interval,
            groups: wire
                .groups
                .into_iter()
                .map(|group| {
                    let states = group.states.into_iter().map(AggState::from_wire).collect();
                    (
                        group.bucket,
                        Group {
                            count: group.count,
                            states,
                        },
                    )
                })
                .collect(),
        })
    }

    /// Whether every group holds one state per spec, of its kind: states that came from
    /// elsewhere are checked before they merge.
    pub fn check(&self, specs: &[AggSpec]) -> Result<()> {
        for group in self.groups.values() {
            let fits = group.states.len() == specs.len()
                && group
                    .states
                    .iter()
                    .zip(specs)
                    .all(|(s, spec)| s.is_of(&spec.kind));
            if !fits {
                return Err(QueryError::Invalid(format!(
                    "bad aggregation states: they do not fit the {} aggregations asked",
                    specs.len()
                )));
            }
        }
        Ok(())
    }
}

/// As bytes (`to_bytes`); deserialized states are not checked against their specs
/// (`AggPartial::check`).
impl Serialize for AggPartial {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        serializer.serialize_bytes(&self.to_bytes())
    }
}

impl<'de> Deserialize<'de> for AggPartial {
    fn deserialize<D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> std::result::Result<Self, D::Error> {
        let bytes: Vec<u8> = Deserialize::deserialize(deserializer)?;
        AggPartial::decode(&bytes).map_err(serde::de::Error::custom)
    }
}

#[derive(Serialize, Deserialize)]
struct WirePartial {
    interval: Option<i64>,
    groups: Vec<WireGroup>,
}

#[derive(Serialize, Deserialize)]
struct WireGroup {
    bucket: i64,
    count: u64,
    states: Vec<WireState>,
}

/// One aggregation's state as it travels (postcard keeps every `f64` bit for bit, infinities
/// of an empty min/max included).
#[derive(Serialize, Deserialize)]
enum WireState {
    Count(u64),
    Terms(Vec<(String, u64)>),
    Numbers {
        count: u64,
        min: f64,
        max: f64,
        sum: f64,
    },
    Percentiles {
        counted: Vec<(f64, u64)>,
        sketch: Option<DDSketch>,
    },
    Distinct(Box<Hll>),
}

impl AggState<'_> {
    fn to_wire(&self) -> WireState {
        match self {
            AggState::Count(n) => WireState::Count(*n),
            AggState::Terms(counts, _) => {
                WireState::Terms(counts.iter().map(|(k, &n)| (k.clone(), n)).collect())
            }
            &AggState::Numbers {
                count,
                min,
                max,
                sum,
            } => WireState::Numbers {
                count,
                min,
                max,
                sum,
            },
            AggState::Percentiles(p) => {
                let (counted, sketch) = p.to_wire();
                WireState::Percentiles { counted, sketch }
            }
            AggState::Distinct(hll) => WireState::Distinct(hll.clone()),
        }
    }

    fn from_wire(wire: WireState) -> AggState<'static> {
        match wire {
            WireState::Count(n) => AggState::Count(n),
            WireState::Terms(counts) => AggState::Terms(counts.into_iter().collect(), None),
            WireState::Numbers {
                count,
                min,
                max,
                sum,
            } => AggState::Numbers {
                count,
                min,
                max,
                sum,
            },
            WireState::Percentiles { counted, sketch } => {
                AggState::Percentiles(Box::new(Percentiles::from_wire(counted, sketch)))
            }
            WireState::Distinct(hll) => AggState::Distinct(hll),
        }
    }

    /// Whether this is a state of `kind` (states from elsewhere are checked before they
    /// merge).
    fn is_of(&self, kind: &AggKind) -> bool {
        matches!(
            (self, kind),
            (AggState::Count(_), AggKind::Count)
                | (AggState::Terms(..), AggKind::Terms { .. })
                | (
                    AggState::Numbers { .. },
                    AggKind::Min | AggKind::Max | AggKind::Sum | AggKind::Avg | AggKind::Stats
                )
                | (AggState::Percentiles(_), AggKind::Percentiles(_))
                | (AggState::Distinct(_), AggKind::Cardinality)
        )
    }

    /// The state without borrowing its block: a terms count's ordinals become strings.
    fn detach(self) -> AggState<'static> {
        match self {
            AggState::Count(n) => AggState::Count(n),
            AggState::Terms(mut counts, ordinals) => {
                fold_ordinals(&mut counts, ordinals);
                AggState::Terms(counts, None)
            }
            AggState::Numbers {
                count,
                min,
                max,
                sum,
            } => AggState::Numbers {
                count,
                min,
                max,
                sum,
            },
            AggState::Percentiles(p) => AggState::Percentiles(p),
            AggState::Distinct(hll) => AggState::Distinct(hll),
        }
    }
}

impl Searcher {
    /// Every spec over every match of `query`, as `{name: result}`.
    pub fn aggregate(
        &self,
        query: &Query,
        specs: &[AggSpec],
    ) -> Result<serde_json::Map<String, Json>> {
        Ok(self.aggregate_partial(query, specs, None)?.overall(specs))
    }

    /// Every spec per `interval` bucket of `_time` (empty buckets between the first and last
    /// non-empty one included).
    pub fn aggregate_histogram(
        &self,
        query: &Query,
        interval: i64,
        specs: &[AggSpec],
    ) -> Result<BucketAggregations> {
        self.aggregate_partial(query, specs, Some(interval))?
            .buckets(specs)
    }

    /// The states of every spec over this searcher's matches of `query`, overall or per
    /// `interval` bucket: a leaf's part of the answer.
    pub fn aggregate_partial(
        &self,
        query: &Query,
        specs: &[AggSpec],
        interval: Option<i64>,
    ) -> Result<AggPartial> {
        let groups = self.aggregate_groups(query, specs, interval)?;
        Ok(AggPartial {
            interval,
            groups: groups
                .into_iter()
                .map(|(bucket, group)| {
                    let states = group.states.into_iter().map(AggState::detach).collect();
                    (
                        bucket,
                        Group {
                            count: group.count,
                            states,
                        },
                    )
                })
                .collect(),
        })
    }

    fn aggregate_groups(
        &self,
        query: &Query,
        specs: &[AggSpec],
        interval: Option<i64>,
    ) -> Result<BTreeMap<i64, Group<'_>>> {
        let fields = specs.iter().filter_map(|spec| spec.field.as_deref());
        let weight = self.filter_weight_prefetched_with_values(query, fields)?;
        let ((start, end), _) = query.time_bounds();
        // Each block's groups are collected on their own, a partial result, then merged into
        // the total: the shape a search scattered over nodes will have.
        let mut total: BTreeMap<i64, Group> = BTreeMap::new();
        for (index, block) in self.blocks.iter().enumerate() {
            let Some(mut scorer) = weight.scorer(index, block)? else {
                continue;
            };
            let mut groups: BTreeMap<i64, Group> = BTreeMap::new();
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
                        .or_insert_with(|| Group::new(specs, interval.is_none()))
                        .collect_range(lo, hi, &mut cursors)?;
                }
                merge_groups(&mut total, groups);
                continue;
            }
            // Bucket endpoints as doc ids (the histogram's way): a match's bucket is found by
            // comparing doc ids, without reading its time.
            let (buckets, ends) = match interval {
                None => (vec![0], vec![0, block.doc_count()]),
                Some(interval) => {
                    // Matches lie within the query's required time bounds.
                    let (lo, hi) = lookup.doc_range(start, end)?;
                    bucket_ends(&mut lookup, (lo, hi), interval)?
                }
            };
            if buckets.is_empty() {
                continue;
            }
            let mut k = 0usize;
            let mut doc = scorer.doc();
            // Matches are added a run at a time (`Group::collect_docs`), a run ending at a
            // bucket end or at `PENDING_DOCS`; the group is looked up once per run (and only
            // for buckets with a match).
            let mut pending: Vec<u32> = Vec::with_capacity(PENDING_DOCS);
            let mut pending_bucket = 0usize;
            let mut flush = |bucket: usize, pending: &mut Vec<u32>, cursors: &mut [_]| {
                if pending.is_empty() {
                    return Ok(());
                }
                groups
                    .entry(buckets[bucket])
                    .or_insert_with(|| Group::new(specs, interval.is_none()))
                    .collect_docs(pending, cursors)?;
                pending.clear();
                Ok::<(), QueryError>(())
            };
            while doc != quarry_format::TERMINATED {
                while k + 2 < ends.len() && doc >= ends[k + 1] {
                    k += 1;
                }
                if k != pending_bucket || pending.len() == PENDING_DOCS {
                    flush(pending_bucket, &mut pending, &mut cursors)?;
                    pending_bucket = k;
                }
                pending.push(doc);
                doc = scorer.advance();
            }
            flush(pending_bucket, &mut pending, &mut cursors)?;
            self.check_scorer(index, scorer.as_ref())?;
            merge_groups(&mut total, groups);
        }
        Ok(total)
    }
}

/// Adds one block's groups to the total, bucket by bucket.
fn merge_groups<'a>(total: &mut BTreeMap<i64, Group<'a>>, partial: BTreeMap<i64, Group<'a>>) {
    for (bucket, group) in partial {
        match total.entry(bucket) {
            std::collections::btree_map::Entry::Occupied(mut entry) => entry.get_mut().merge(group),
            std::collections::btree_map::Entry::Vacant(entry) => {
                entry.insert(group);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Elasticsearch's answers over few values (its REST suite's: 1, 51, 101, 151), and the
    /// interpolation against a sorted list, values repeated or not, whole-result and bucket
    /// states.
    #[test]
    fn interpolated_percentiles_follow_the_t_digest_over_few_values() {
        let state = |values: &[i64], single: bool| {
            let mut p = Percentiles::new(single);
            for &v in values {
                p.add(v as f64);
            }
            p
        };
        let p = state(&[151, 1, 101, 51], true);
        let got: Vec<f64> = [1.0, 5.0, 25.0, 50.0, 75.0, 95.0, 99.0]
            .iter()
            .map(|q| p.interpolated(q / 100.0).unwrap())
            .collect();
        assert_eq!(got, [1.0, 1.0, 26.0, 76.0, 126.0, 151.0, 151.0]);
        assert_eq!(state(&[1, 3], false).interpolated(0.5), Some(2.0));
        // Fractions and values past i64 are counted exactly too, not sketched (a sketch of
        // 1 to 1e19 had collapsed its low bins: p1 was 16.9); Elasticsearch's suite's numbers.
        let mut wide = Percentiles::new(true);
        for v in [1.0, 51.0, 1101.0, 10223372036854778000.0] {
            wide.add(v);
        }
        let got: Vec<f64> = [0.01, 0.25, 0.5, 0.75]
            .iter()
            .map(|&q| wide.interpolated(q).unwrap())
            .collect();
        assert_eq!(got, [1.0, 26.0, 576.0, 5111686018427390000.0]);
        // t-digest 3.2 (AVLTreeDigest and MergingDigest agree here) on small sets, run on
        // Java 17: quantiles 0.01, 0.25, 0.5, 0.75, 0.99.
        let oracle: &[(&[f64], [f64; 5])] = &[
            (&[51.0, 101.0, 151.0], [51.0, 63.5, 101.0, 138.5, 151.0]),
            (&[1.0, 2.0, 3.0, 4.0, 5.0], [1.0, 1.75, 3.0, 4.25, 5.0]),
            (&[5.0, 5.0, 5.0, 1.0, 9.0], [1.0, 4.0, 5.0, 6.0, 9.0]),
            (&[1.0, 1.0, 2.0], [1.0, 1.0, 1.0, 1.75, 2.0]),
        ];
        for (values, want) in oracle {
            let mut state = Percentiles::new(false);
            values.iter().for_each(|&v| state.add(v));
            let got: Vec<f64> = [0.01, 0.25, 0.5, 0.75, 0.99]
                .iter()
                .map(|&q| state.interpolated(q).unwrap())
                .collect();
            assert_eq!(got, want, "{values:?}");
        }
        let mut halves = Percentiles::new(false);
        [0.5, 2.5, -0.0, 0.0].iter().for_each(|&v| halves.add(v));
        assert_eq!(halves.quantile(0.0), Some(0.0));
        assert_eq!(halves.interpolated(0.5), Some(0.25));
        assert_eq!(halves.interpolated(1.0), Some(2.5));
        assert_eq!(state(&[], false).interpolated(0.5), None);
        for seed in 0..200u64 {
            let n = (seed % 17 + 1) as usize;
            let values: Vec<i64> = (0..n as u64)
                .map(|i| ((i * 7919 + seed * 31) % 23) as i64 - 5)
                .collect();
            let mut sorted = values.clone();
            sorted.sort_unstable();
            let p = state(&values, seed % 2 == 0);
            for percent in [
                0.0, 1.0, 10.0, 25.0, 33.0, 50.0, 66.6, 75.0, 90.0, 99.0, 100.0,
            ] {
                let index = percent / 100.0 * n as f64;
                let want = if index < 0.5 {
                    sorted[0] as f64
                } else if index >= n as f64 - 0.5 {
                    sorted[n - 1] as f64
                } else {
                    // Between the values whose middles (k + 0.5) are around `index`.
                    let k = (0..n - 1).rfind(|&k| k as f64 + 0.5 <= index).unwrap();
                    let f = index - (k as f64 + 0.5);
                    sorted[k] as f64 * (1.0 - f) + sorted[k + 1] as f64 * f
                };
                let got = p.interpolated(percent / 100.0).unwrap();
                assert!(
                    (got - want).abs() < 1e-9,
                    "{values:?} p{percent}: {got} vs {want}"
                );
            }
        }
    }

    /// The median absolute deviation: Elasticsearch's suite's case, and the definition over
    /// sorted lists (the median of the distances from the median, both interpolated).
    #[test]
    fn median_absolute_deviation_is_the_median_distance_from_the_median() {
        let state = |values: &[i64]| {
            let mut p = Percentiles::new(false);
            for &v in values {
                p.add(v as f64);
            }
            p
        };
        assert_eq!(
            state(&[100, 200, 300]).median_absolute_deviation(),
            Some(100.0)
        );
        assert_eq!(
            state(&[1, 2, 3, 4, 100]).median_absolute_deviation(),
            Some(1.0)
        );
        assert_eq!(state(&[]).median_absolute_deviation(), None);
        let median = |sorted: &[f64]| {
            let n = sorted.len();
            let index = 0.5 * n as f64;
            if index < 1.0 {
                sorted[0]
            } else if index >= n as f64 - 0.5 {
                sorted[n - 1]
            } else {
                let k = (index - 0.5).floor() as usize;
                let f = index - 0.5 - k as f64;
                sorted[k] * (1.0 - f) + sorted[k + 1] * f
            }
        };
        for seed in 0..100u64 {
            let values: Vec<i64> = (0..(seed % 13 + 1))
                .map(|i| ((i * 7919 + seed * 104_729) % 61) as i64 - 20)
                .collect();
            let mut sorted: Vec<f64> = values.iter().map(|&v| v as f64).collect();
            sorted.sort_by(f64::total_cmp);
            let m = median(&sorted);
            let mut distances: Vec<f64> = sorted.iter().map(|v| (v - m).abs()).collect();
            distances.sort_by(f64::total_cmp);
            let got = state(&values).median_absolute_deviation().unwrap();
            assert!((got - median(&distances)).abs() < 1e-9, "{values:?}: {got}");
        }
    }

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

    /// A state fed in parts and merged answers as one fed everything: for every kind, with
    /// the parts cut anywhere, percentiles exact on both sides, spilled to the sketch on one or
    /// both, and dense or not.
    #[test]
    fn partial_states_merge_into_the_whole() {
        let values: Vec<f64> = (0..5000)
            .map(|i| ((i * 7919) % 1013) as f64 + if i % 97 == 0 { 0.5 } else { 0.0 })
            .collect();
        let kinds = [
            AggKind::Count,
            AggKind::Terms { size: 5 },
            AggKind::Stats,
            AggKind::Percentiles(vec![1.0, 50.0, 99.0]),
            AggKind::Cardinality,
        ];
        for kind in &kinds {
            for single_group in [true, false] {
                let mut whole = AggState::new(kind, single_group);
                for &v in &values {
                    whole.add(FieldValue::Number(v));
                }
                let want = whole.result(kind);
                for cut in [0, 1, 96, 2500, 4999, 5000] {
                    let mut left = AggState::new(kind, single_group);
                    let mut right = AggState::new(kind, single_group);
                    for &v in &values[..cut] {
                        left.add(FieldValue::Number(v));
                    }
                    for &v in &values[cut..] {
                        right.add(FieldValue::Number(v));
                    }
                    left.merge(right);
                    let got = left.result(kind);
                    match kind {
                        // Sums of these values are exact in f64; the sketch (values with .5
                        // spill it) answers within its error either way.
                        AggKind::Percentiles(_) if cut != 0 && cut != 5000 => {
                            for (p, w) in want.as_object().unwrap() {
                                let (g, w) = (got[p].as_f64().unwrap(), w.as_f64().unwrap());
                                assert!(
                                    (g - w).abs() <= 0.02 * w.abs() + 1e-9,
                                    "{kind:?} {p} cut {cut}: {g} vs {w}"
                                );
                            }
                        }
                        _ => assert_eq!(got, want, "{kind:?} cut {cut} single {single_group}"),
                    }
                }
            }
        }
        // Exact integers stay exact through a merge.
        let mut left = AggState::new(&AggKind::Percentiles(vec![50.0]), true);
        let mut right = AggState::new(&AggKind::Percentiles(vec![50.0]), false);
        for v in [1.0, 2.0, 3.0] {
            left.add(FieldValue::Number(v));
        }
        for v in [4.0, 5.0] {
            right.add(FieldValue::Number(v));
        }
        left.merge(right);
        assert_eq!(left.result(&AggKind::Percentiles(vec![50.0]))["50"], 3.0);
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
