//! Nested aggregations in one pass: a tree of bucket aggregations (terms, histograms, time
//! buckets, ranges, filters, missing) with metrics at any level, as Elasticsearch's `aggs`
//! nest them, evaluated over every match of a query in a single walk of the matching docs.
//!
//! Each block is walked once. A doc goes down the tree: each bucket node finds the doc's
//! buckets (a terms value, a histogram slot, the ranges or filters it falls in) and the doc
//! is counted in each and goes on to the node's children there; a metric node adds the doc's
//! value to its state. The readers (field cursors, time look-ups, filter scorers) belong to
//! the nodes, not to the buckets, and see docs in increasing order. A block's states are
//! partial results: string keys read as doc-value ordinals are turned into strings at the end
//! of the block, and the partial tree is merged into the total, bucket by bucket, the way a
//! search scattered over nodes will merge them.
//!
//! Time buckets over `_time` use the block's time order (the histogram's doc-id endpoints):
//! a doc's bucket is known from its doc id until the doc past the bucket's end, so `_time` is
//! read once per bucket and block, not once per doc.
//!
//! The tree computes buckets and metric values; choosing, ordering and cutting buckets
//! (`size`, `order`, `min_doc_count`, empty buckets) is the front end's, which has every
//! bucket with its sub-results to do it with.

use crate::aggregation::{format_number, FieldCursor, Hll, Percentiles, TypedValue};
use crate::error::{QueryError, Result};
use crate::filter::TimeLookup;
use crate::parser::Ast;
use crate::scorer::BoxScorer;
use crate::searcher::Searcher;
use crate::time::{next_unit, unit_start, Zone};
use crate::weight::Weight;
use crate::Query;
use hashbrown::HashMap;
use hyperloglogplus::{HyperLogLog, HyperLogLogPlus};
use quarry_format::docvalues::DocValues;
use quarry_format::{BlockReader, ColumnType, TERMINATED, TIME_FIELD};
use serde::{Deserialize, Serialize};
use sketches_ddsketch::DDSketch;

/// The most buckets one request may make over all its bucket nodes (Elasticsearch's
/// `search.max_buckets`).
pub const MAX_TREE_BUCKETS: usize = 65_536;

const NANOS_PER_SECOND: i64 = 1_000_000_000;

/// One aggregation of the tree. A tree travels to other nodes as JSON (serde): every part
/// as it is, filters as the DSL they were compiled from (`FilterQuery`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AggNode {
    pub kind: NodeKind,
    /// Evaluated in each bucket of this node (bucket kinds only).
    pub children: Vec<AggNode>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeKind {
    /// Statistics of a field's values; a doc without one counts as holding `missing` when
    /// it is given.
    Metric {
        field: String,
        metric: Metric,
        missing: Option<TermKey>,
    },
    /// A bucket per distinct value of `field`; docs without one go to `missing` when given.
    Terms {
        field: String,
        missing: Option<TermKey>,
    },
    /// A bucket per distinct combination of the fields' values (`TermKey::Tuple`); a doc
    /// without a value of a field (and no `missing` for it) is in none.
    MultiTerms {
        fields: Vec<(String, Option<TermKey>)>,
    },
    /// Elasticsearch's `composite`: a bucket per distinct combination of the sources' values
    /// (`TermKey::Tuple`, one part per source). A doc holding several values of a source's
    /// field is in every combination; a doc without one is in none, or with the source's
    /// `missing_bucket` in the combinations holding `TermKey::Missing` there.
    Composite { sources: Vec<CompositeSource> },
    /// Buckets `[offset + n * interval, offset + (n + 1) * interval)` of a number field
    /// (keys `BucketKey::Slot(n)`).
    Histogram {
        field: String,
        interval: f64,
        offset: f64,
    },
    /// Buckets of time (keys `BucketKey::Slot(start)`, in ns). Over `_time` or another field
    /// holding epoch milliseconds or ISO times.
    DateHistogram { field: String, buckets: TimeBuckets },
    /// A bucket per range `[from, to)` (keys `BucketKey::Slot(i)`); ranges may overlap.
    Range {
        field: String,
        ranges: Vec<(Option<f64>, Option<f64>)>,
    },
    /// A bucket per time range `[from, to)` in ns (keys `BucketKey::Slot(i)`): values read as
    /// times (a date field's, epoch milliseconds, or dates in text).
    DateRange {
        field: String,
        ranges: Vec<(Option<i64>, Option<i64>)>,
    },
    /// A bucket per filter (keys `BucketKey::Slot(i)`), and with `other` one more for docs
    /// matching none (`Slot(filters.len())`).
    Filters {
        filters: Vec<FilterQuery>,
        other: bool,
    },
    /// One bucket (`Slot(0)`) of the docs without a value of `field`.
    Missing { field: String },
}

/// A filter of a `Filters` node: its query, and the Elasticsearch DSL it was compiled from
/// with what `now` meant there, which is what travels to other nodes (each compiles it
/// again, as leaves compile a search's query).
#[derive(Debug, Clone, PartialEq)]
pub struct FilterQuery {
    pub ast: Ast,
    dsl: Option<(serde_json::Value, i64)>,
}

impl FilterQuery {
    /// The filter `query` (Elasticsearch's DSL, at `path` of the request) compiles to.
    pub fn from_dsl(
        query: &serde_json::Value,
        path: &str,
        now: i64,
    ) -> std::result::Result<FilterQuery, crate::dsl::DslError> {
        Ok(FilterQuery {
            ast: crate::dsl::compile(query, path, now)?,
            dsl: Some((query.clone(), now)),
        })
    }

    /// A filter made from a query tree alone: it cannot be sent to another node.
    pub fn local(ast: Ast) -> FilterQuery {
        FilterQuery { ast, dsl: None }
    }
}

impl Serialize for FilterQuery {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        match &self.dsl {
            Some(dsl) => dsl.serialize(serializer),
            None => Err(serde::ser::Error::custom(format!(
                "the filter {} was not written in the query DSL: it cannot be sent to another node",
                self.ast
            ))),
        }
    }
}

impl<'de> Deserialize<'de> for FilterQuery {
    fn deserialize<D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> std::result::Result<Self, D::Error> {
        let (query, now): (serde_json::Value, i64) = Deserialize::deserialize(deserializer)?;
        FilterQuery::from_dsl(&query, "filter", now).map_err(serde::de::Error::custom)
    }
}

/// One source of a `Composite` node: a field and how its values become key parts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompositeSource {
    pub field: String,
    pub kind: SourceKind,
    pub missing_bucket: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SourceKind {
    /// The value itself.
    Terms,
    /// The start of the value's bucket `[offset + n * interval, ...)`, a float.
    Histogram { interval: f64, offset: f64 },
    /// The start (ns) of the time bucket holding the value.
    DateHistogram(TimeBuckets),
}

impl SourceKind {
    /// `value`'s key part, or `None` when the value has none (not a number or a time).
    fn part(&self, value: TypedValue<'_, '_>) -> Option<TermKey> {
        match self {
            SourceKind::Terms => Some(TermKey::of(value)),
            SourceKind::Histogram { interval, offset } => {
                let v = match value {
                    TypedValue::Raw(..) => value.untyped().number()?,
                    _ => return None,
                };
                let start = ((v - offset) / interval).floor() * interval + offset;
                start.is_finite().then(|| TermKey::float(start))
            }
            SourceKind::DateHistogram(buckets) => {
                let time = value_time(value)?;
                buckets.start_of(time).ok().map(TermKey::Int)
            }
        }
    }
}

/// What a metric node keeps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Count, min, max, sum and sum of squares of the number values.
    Stats,
    /// The number of values of any type.
    ValueCount,
    /// Values at these percents (0 to 100), interpolated between ranks as Elasticsearch's
    /// t-digest does over few values (`Percentiles::interpolated`).
    Percentiles(Vec<f64>),
    /// Values at these percents as Elasticsearch's HDR histogram reports them with `digits`
    /// significant digits (`Percentiles::hdr`).
    HdrPercentiles { percents: Vec<f64>, digits: u32 },
    /// Distinct values, estimated (HyperLogLog++).
    Cardinality,
    /// The median of the values' distances from their median.
    MedianAbsoluteDeviation,
    /// The first `size` matches in time order (newest first unless `oldest_first`), to be
    /// fetched; the node's field is `_time`.
    TopHits { size: usize, oldest_first: bool },
    /// The mean of the node field's numbers, each weighted by the doc's one number in
    /// `weight` (or `weight_missing` when it has none; a doc without either is skipped, one
    /// with several weights is an error, as in Elasticsearch).
    WeightedAvg {
        weight: String,
        weight_missing: Option<TermKey>,
    },
}

/// A terms key: a value with its type.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum TermKey {
    Bool(bool),
    Int(i64),
    Uint(u64),
    /// An f64's bits (a float with a whole value in i64's range is an `Int`).
    Float(u64),
    Str(String),
    /// One value per field (`multi_terms`, `composite`).
    Tuple(Vec<TermKey>),
    /// No value (a `composite` source's `missing_bucket`).
    Missing,
}

impl TermKey {
    pub fn float(v: f64) -> TermKey {
        if v.fract() == 0.0 && v.abs() < 9.0e18 {
            TermKey::Int(v as i64)
        } else {
            TermKey::Float(v.to_bits())
        }
    }

    /// The key as a number (booleans 1 and 0), or `None` for strings.
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            TermKey::Bool(b) => Some(f64::from(u8::from(b))),
            TermKey::Int(v) => Some(v as f64),
            TermKey::Uint(v) => Some(v as f64),
            TermKey::Float(bits) => Some(f64::from_bits(bits)),
            TermKey::Str(_) | TermKey::Tuple(_) | TermKey::Missing => None,
        }
    }

    /// The key as a field value.
    fn as_value(&self) -> TypedValue<'_, 'static> {
        match self {
            TermKey::Bool(b) => TypedValue::Raw(ColumnType::Bool, u64::from(*b)),
            TermKey::Int(v) => TypedValue::Raw(ColumnType::I64, *v as u64),
            TermKey::Uint(v) => TypedValue::Raw(ColumnType::U64, *v),
            TermKey::Float(bits) => TypedValue::Raw(ColumnType::F64, *bits),
            TermKey::Str(s) => TypedValue::Str(s),
            // Not a field's value (`multi_terms`' and `composite`'s keys only).
            TermKey::Tuple(_) | TermKey::Missing => TypedValue::Str(""),
        }
    }

    fn of(value: TypedValue<'_, '_>) -> TermKey {
        match value {
            TypedValue::Str(s) => TermKey::Str(s.to_owned()),
            TypedValue::Ordinal(ordinal, dictionary) => {
                TermKey::Str(ordinal_text(ordinal, dictionary))
            }
            TypedValue::Raw(ty, raw) => match ty {
                ColumnType::Bool => TermKey::Bool(raw != 0),
                ColumnType::I64 | ColumnType::Timestamp => TermKey::Int(raw as i64),
                ColumnType::U64 => match i64::try_from(raw) {
                    Ok(v) => TermKey::Int(v),
                    Err(_) => TermKey::Uint(raw),
                },
                _ => TermKey::float(f64::from_bits(raw)),
            },
        }
    }
}

fn ordinal_text(ordinal: u32, dictionary: DocValues<'_>) -> String {
    String::from_utf8_lossy(dictionary.string(ordinal).unwrap_or_default()).into_owned()
}

/// How a time is put in its bucket.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimeBuckets {
    /// A fixed width (ns), counted from the epoch in `zone`'s wall-clock time, moved by
    /// `offset` (ns).
    Fixed {
        interval: i64,
        offset: i64,
        zone: Zone,
    },
    /// Calendar units (`y`, `q`, `M`, `w`, `d`, `h`, `m`, `s`) of `zone`, moved by `offset`.
    Calendar {
        unit: CalendarUnit,
        offset: i64,
        zone: Zone,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CalendarUnit {
    Year,
    Quarter,
    Month,
    Week,
    Day,
    Hour,
    Minute,
    Second,
}

impl CalendarUnit {
    fn code(self) -> &'static str {
        match self {
            CalendarUnit::Year => "y",
            CalendarUnit::Quarter => "q",
            CalendarUnit::Month => "M",
            CalendarUnit::Week => "w",
            CalendarUnit::Day => "d",
            CalendarUnit::Hour => "h",
            CalendarUnit::Minute => "m",
            CalendarUnit::Second => "s",
        }
    }
}

impl TimeBuckets {
    /// The start of the bucket holding `time`.
    pub fn start_of(&self, time: i64) -> Result<i64> {
        match *self {
            TimeBuckets::Fixed {
                interval,
                offset,
                zone,
            } => {
                // Counted in wall-clock time: shift into the zone, round, shift back by the
                // offset in force at the bucket's start.
                let shift = zone.offset_at(time).saturating_mul(NANOS_PER_SECOND);
                let local = time.saturating_add(shift).saturating_sub(offset);
                let start_local = local.div_euclid(interval) * interval + offset;
                let back = zone
                    .offset_at(start_local.saturating_sub(shift))
                    .saturating_mul(NANOS_PER_SECOND);
                Ok(start_local.saturating_sub(back))
            }
            TimeBuckets::Calendar { unit, offset, zone } => {
                let start = unit_start(time.saturating_sub(offset), unit.code(), zone)
                    .map_err(QueryError::Invalid)?;
                Ok(start.saturating_add(offset))
            }
        }
    }

    /// The start of the bucket after the one starting at `start`.
    pub fn next(&self, start: i64) -> Result<i64> {
        match *self {
            TimeBuckets::Fixed { interval, .. } => {
                // The next local multiple, which a zone's shift can move.
                let guess = start.saturating_add(interval);
                let next = self.start_of(guess)?;
                Ok(if next > start { next } else { guess })
            }
            TimeBuckets::Calendar { unit, offset, zone } => {
                let next = next_unit(start.saturating_sub(offset), unit.code(), zone)
                    .map_err(QueryError::Invalid)?;
                Ok(next.saturating_add(offset))
            }
        }
    }
}

/// A bucket's key.
#[derive(Debug, Clone, PartialEq)]
pub enum BucketKey {
    /// A terms value.
    Term(TermKey),
    /// A histogram's slot number, a time bucket's start (ns), or a range's or filter's index.
    Slot(i64),
}

/// The answer of one node.
#[derive(Debug, Clone, PartialEq)]
pub enum AggResult {
    Metric(MetricResult),
    /// Slots in increasing order; terms in no particular order.
    Buckets(Vec<BucketResult>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct BucketResult {
    pub key: BucketKey,
    pub count: u64,
    /// One per child node.
    pub children: Vec<AggResult>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum MetricResult {
    Stats {
        count: u64,
        /// Infinite when there are no values.
        min: f64,
        max: f64,
        sum: f64,
        sum_of_squares: f64,
    },
    ValueCount(u64),
    /// `(percent, value)`; no value without values.
    Percentiles(Vec<(f64, Option<f64>)>),
    Cardinality(u64),
    /// No value without values.
    MedianAbsoluteDeviation(Option<f64>),
    /// No value without weight.
    WeightedAvg(Option<f64>),
    /// The metric has no answer over these values, and says why (HDR percentiles of a
    /// negative value).
    Invalid(String),
    /// The first hits in the asked order (`Searcher::events` fetches them, or in a cluster
    /// the leaves that found them), of `total`.
    TopHits {
        hits: Vec<TopHit>,
        total: u64,
    },
}

/// A hit a `top_hits` or `top_metrics` aggregation keeps: its time, where it is (the block
/// id and doc a cursor names; ties in time are ordered by them, as a time sort orders them),
/// and which share of a distributed search found it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TopHit {
    pub time: i64,
    pub block: u64,
    pub doc: u32,
    /// The share of a distributed search that found it (`TreePartial::found_by`); 0 on one
    /// node.
    pub origin: u32,
}

impl TopHit {
    /// Where it is, as a leaf's fetch reads it (`Searcher::fetch_partial`).
    pub fn partial(&self) -> crate::leaf::PartialHit {
        crate::leaf::PartialHit {
            time: self.time,
            block: self.block,
            doc: self.doc,
            score: None,
            block_start: 0,
            sort_values: None,
        }
    }
}

/// The results of `nodes` over no docs (an empty bucket's sub-aggregations).
pub fn empty_results(nodes: &[AggNode]) -> Vec<AggResult> {
    nodes
        .iter()
        .map(|node| NodeState::new(node).into_result(node, &Terms::default()))
        .collect()
}

/// The states of a tree's nodes over some matches, before they become results: a leaf's
/// part of a distributed answer (leaf.rs), merged by the root with the other leaves' parts
/// bucket by bucket, as one searcher merges its blocks' parts. Terms keys are numbered per
/// partial (`Terms`); a merge renumbers the other's. They travel as bytes
/// ([`TreePartial::to_bytes`]): each bucket with its key as a value, metrics as their states
/// (the percentile and cardinality sketches included), top hits by block id and doc, tagged
/// by the root with the share that found them (`found_by`).
pub struct TreePartial {
    states: Vec<NodeState>,
    terms: Vec<Terms>,
}

impl std::fmt::Debug for TreePartial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TreePartial")
            .field("nodes", &self.states.len())
            .finish()
    }
}

impl TreePartial {
    /// No matches yet.
    pub fn empty(nodes: &[AggNode]) -> TreePartial {
        TreePartial {
            states: nodes.iter().map(NodeState::new).collect(),
            terms: Terms::tree(nodes),
        }
    }

    /// Adds `other`, the same nodes' states over other matches.
    pub fn merge(&mut self, other: TreePartial) {
        let TreePartial { states, terms } = self;
        for (((total, terms), state), from) in states
            .iter_mut()
            .zip(terms.iter_mut())
            .zip(other.states)
            .zip(&other.terms)
        {
            total.merge(state.renumbered(from, terms));
        }
    }

    /// Tags every top hit kept as found by share `origin` of a distributed search (the root,
    /// before it merges the shares' states, so that it fetches each hit from its share).
    pub fn found_by(&mut self, origin: u32) {
        self.each_top_hit(&mut |hit| hit.origin = origin);
    }

    fn each_top_hit(&mut self, visit: &mut impl FnMut(&mut TopHit)) {
        fn walk(state: &mut NodeState, visit: &mut impl FnMut(&mut TopHit)) {
            match state {
                NodeState::Metric(MetricState::TopHits(hits, _)) => hits.iter_mut().for_each(visit),
                NodeState::Metric(_) => {}
                NodeState::Buckets(buckets) => {
                    for (_, bucket) in &mut buckets.list {
                        for child in &mut bucket.children {
                            walk(child, visit);
                        }
                    }
                }
            }
        }
        for state in &mut self.states {
            walk(state, visit);
        }
    }

    /// The results of `nodes` (the nodes these are the states of).
    pub fn results(self, nodes: &[AggNode]) -> Vec<AggResult> {
        self.states
            .into_iter()
            .zip(nodes)
            .zip(&self.terms)
            .map(|((state, node), terms)| state.into_result(node, terms))
            .collect()
    }

    /// The states as bytes, to send to the root.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let wire = WireTree {
            shape: self.terms.iter().map(Terms::shape).collect(),
            nodes: self
                .states
                .iter()
                .zip(&self.terms)
                .map(|(state, terms)| state.to_wire(terms))
                .collect::<Result<_>>()?,
        };
        postcard::to_allocvec(&wire)
            .map_err(|e| QueryError::Invalid(format!("aggregation states: {e}")))
    }

    /// States sent by `to_bytes`, checked against `nodes` (a state per node, of its kind, in
    /// every bucket).
    pub fn from_bytes(bytes: &[u8], nodes: &[AggNode]) -> Result<TreePartial> {
        let partial = TreePartial::decode(bytes)?;
        partial.check(nodes)?;
        Ok(partial)
    }

    fn decode(bytes: &[u8]) -> Result<TreePartial> {
        let wire: WireTree = postcard::from_bytes(bytes)
            .map_err(|e| QueryError::Invalid(format!("bad aggregation states: {e}")))?;
        if wire.shape.len() != wire.nodes.len() {
            return Err(bad_states());
        }
        let mut terms: Vec<Terms> = wire.shape.iter().map(Terms::of_shape).collect();
        let states = wire
            .nodes
            .into_iter()
            .zip(&mut terms)
            .map(|(node, terms)| NodeState::from_wire(node, terms))
            .collect::<Result<_>>()?;
        Ok(TreePartial { states, terms })
    }

    /// Whether these are states of `nodes`: states that came from elsewhere are checked
    /// before they merge.
    pub fn check(&self, nodes: &[AggNode]) -> Result<()> {
        fn fits(state: &NodeState, terms: &Terms, node: &AggNode) -> bool {
            if terms.children.len() != node.children.len() {
                return false;
            }
            match (state, &node.kind) {
                (NodeState::Metric(metric), NodeKind::Metric { metric: kind, .. }) => {
                    metric.is_of(kind)
                }
                (NodeState::Metric(_), _) | (NodeState::Buckets(_), NodeKind::Metric { .. }) => {
                    false
                }
                (NodeState::Buckets(buckets), _) => buckets.list.iter().all(|(key, bucket)| {
                    let known = match key {
                        Key::Term(n) => (*n as usize) < terms.list.len(),
                        Key::Slot(_) => true,
                        Key::Ordinal(_) => false,
                    };
                    known
                        && bucket.children.len() == node.children.len()
                        && bucket
                            .children
                            .iter()
                            .zip(&terms.children)
                            .zip(&node.children)
                            .all(|((state, terms), node)| fits(state, terms, node))
                }),
            }
        }
        let whole = self.states.len() == nodes.len()
            && self.terms.len() == nodes.len()
            && self
                .states
                .iter()
                .zip(&self.terms)
                .zip(nodes)
                .all(|((state, terms), node)| fits(state, terms, node));
        match whole {
            true => Ok(()),
            false => Err(bad_states()),
        }
    }
}

fn bad_states() -> QueryError {
    QueryError::Invalid("bad aggregation states: they do not fit the aggregations asked".to_owned())
}

/// As bytes (`to_bytes`); deserialized states are not checked
/// against their nodes (`TreePartial::check`).
impl Serialize for TreePartial {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        let bytes = self.to_bytes().map_err(serde::ser::Error::custom)?;
        serializer.serialize_bytes(&bytes)
    }
}

impl<'de> Deserialize<'de> for TreePartial {
    fn deserialize<D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> std::result::Result<Self, D::Error> {
        let bytes: Vec<u8> = Deserialize::deserialize(deserializer)?;
        TreePartial::decode(&bytes).map_err(serde::de::Error::custom)
    }
}

/// A tree's states as they travel: the nodes' states and, for the terms numbering, how many
/// children each node has, down the tree.
#[derive(Serialize, Deserialize)]
struct WireTree {
    shape: Vec<Shape>,
    nodes: Vec<WireNode>,
}

#[derive(Serialize, Deserialize)]
struct Shape(Vec<Shape>);

#[derive(Serialize, Deserialize)]
enum WireNode {
    Metric(WireMetric),
    Buckets(Vec<WireBucket>),
}

#[derive(Serialize, Deserialize)]
struct WireBucket {
    key: WireKey,
    count: u64,
    children: Vec<WireNode>,
}

#[derive(Serialize, Deserialize)]
enum WireKey {
    Slot(i64),
    Term(TermKey),
}

/// A metric's state as it travels (postcard keeps every `f64` bit for bit, the infinities of
/// an empty min and max included).
#[derive(Serialize, Deserialize)]
enum WireMetric {
    Stats {
        count: u64,
        min: f64,
        max: f64,
        sum: f64,
        sum_of_squares: f64,
    },
    ValueCount(u64),
    Percentiles {
        counted: Vec<(f64, u64)>,
        sketch: Option<DDSketch>,
    },
    Distinct(Box<Hll>),
    Weighted {
        sum: f64,
        weights: f64,
    },
    /// (time, block id, doc) of each hit kept, and how many were seen.
    TopHits {
        hits: Vec<(i64, u64, u32)>,
        total: u64,
    },
}

impl Searcher {
    /// Every node of `nodes` over every match of `query`, in one pass over the matches.
    pub fn aggregate_tree(&self, query: &Query, nodes: &[AggNode]) -> Result<Vec<AggResult>> {
        Ok(self.aggregate_tree_counted(query, nodes)?.0)
    }

    /// `aggregate_tree`, and the number of matches (the walk counts them: a search that
    /// aggregates needs no second pass to count).
    pub fn aggregate_tree_counted(
        &self,
        query: &Query,
        nodes: &[AggNode],
    ) -> Result<(Vec<AggResult>, u64)> {
        let (partial, matches) = self.tree_partial(query, nodes)?;
        Ok((partial.results(nodes), matches))
    }

    /// The states of `nodes` over every match of `query`, and the number of matches.
    pub fn tree_partial(&self, query: &Query, nodes: &[AggNode]) -> Result<(TreePartial, u64)> {
        check_fields(self, nodes)?;
        let mut matches = 0u64;
        let mut fields = Vec::new();
        tree_fields(nodes, &mut fields);
        let weight = self.filter_weight_prefetched_with_values(query, fields.iter().copied())?;
        let plans: Vec<NodePlan> = nodes
            .iter()
            .map(|node| NodePlan::new(self, node))
            .collect::<Result<_>>()?;
        let mut total: Vec<NodeState> = nodes.iter().map(NodeState::new).collect();
        let mut terms = Terms::tree(nodes);
        let mut buckets = 0usize;
        for (index, block) in self.blocks.iter().enumerate() {
            let Some(mut scorer) = weight.scorer(index, block)? else {
                continue;
            };
            let mut readers: Vec<NodeReader> = nodes
                .iter()
                .zip(&plans)
                .map(|(node, plan)| NodeReader::new(node, plan, index, block, self))
                .collect::<Result<_>>()?;
            let mut states: Vec<NodeState> = nodes.iter().map(NodeState::new).collect();
            let mut walk = Walk {
                buckets: &mut buckets,
                block: self.block_ids[index],
            };
            let mut doc = scorer.doc();
            while doc != TERMINATED {
                matches += 1;
                walk.collect(nodes, &mut states, &mut readers, &mut terms, doc)?;
                doc = scorer.advance();
            }
            self.check_scorer(index, scorer.as_ref())?;
            for reader in &readers {
                reader.check(self, index)?;
            }
            for (((total, mut state), (node, reader)), terms) in total
                .iter_mut()
                .zip(states)
                .zip(nodes.iter().zip(&readers))
                .zip(&mut terms)
            {
                state.resolve(node, reader, terms);
                total.merge(state);
            }
        }
        Ok((
            TreePartial {
                states: total,
                terms,
            },
            matches,
        ))
    }
}

/// Refuses a tree reading a field under a `nested` object (`query::not_nested`).
fn check_fields(searcher: &Searcher, nodes: &[AggNode]) -> Result<()> {
    for node in nodes {
        for field in node_fields(node) {
            crate::query::not_nested(searcher.schema(), field)?;
        }
        check_fields(searcher, &node.children)?;
    }
    Ok(())
}

/// Every field the nodes and their children read values of.
fn tree_fields<'n>(nodes: &'n [AggNode], out: &mut Vec<&'n str>) {
    for node in nodes {
        out.extend(node_fields(node));
        tree_fields(&node.children, out);
    }
}

/// The fields node `node` reads values of (not its children's).
fn node_fields(node: &AggNode) -> Vec<&str> {
    match &node.kind {
        NodeKind::Metric {
            field,
            metric: Metric::WeightedAvg { weight, .. },
            ..
        } => vec![field, weight],
        NodeKind::Metric { field, .. }
        | NodeKind::Terms { field, .. }
        | NodeKind::Histogram { field, .. }
        | NodeKind::DateHistogram { field, .. }
        | NodeKind::Range { field, .. }
        | NodeKind::DateRange { field, .. }
        | NodeKind::Missing { field } => vec![field],
        NodeKind::MultiTerms { fields } => fields.iter().map(|(f, _)| f.as_str()).collect(),
        NodeKind::Composite { sources } => sources.iter().map(|s| s.field.as_str()).collect(),
        NodeKind::Filters { .. } => Vec::new(),
    }
}

/// A node's filters, planned once for every block.
struct NodePlan {
    filters: Vec<Weight>,
    children: Vec<NodePlan>,
}

impl NodePlan {
    fn new(searcher: &Searcher, node: &AggNode) -> Result<NodePlan> {
        let filters = match &node.kind {
            NodeKind::Filters { filters, .. } => filters
                .iter()
                .map(|filter| Ok(searcher.filter_weight(&searcher.plan(&filter.ast)?)))
                .collect::<Result<_>>()?,
            _ => Vec::new(),
        };
        Ok(NodePlan {
            filters,
            children: node
                .children
                .iter()
                .map(|child| NodePlan::new(searcher, child))
                .collect::<Result<_>>()?,
        })
    }
}

/// What a node reads docs with in one block.
struct NodeReader<'a> {
    source: Source<'a>,
    /// The block's doc-values dictionary of the field, once a string came as an ordinal.
    dictionary: Option<DocValues<'a>>,
    /// The current doc's bucket keys (reused).
    keys: Vec<Key>,
    children: Vec<NodeReader<'a>>,
}

enum Source<'a> {
    /// A field, read by its rules (`value_source`).
    Field(FieldCursor<'a>, ValueRules),
    /// `_time`, with the bucket of the last doc asked for: its docs `[lo, hi)` and start.
    Time {
        lookup: TimeLookup<'a>,
        current: Option<(u32, u32, i64)>,
    },
    Filters(Vec<Option<BoxScorer<'a>>>),
    /// `multi_terms`' fields.
    Fields(Vec<(FieldCursor<'a>, ValueRules)>),
}

impl<'a> NodeReader<'a> {
    fn new(
        node: &AggNode,
        plan: &'a NodePlan,
        index: usize,
        block: &'a BlockReader,
        searcher: &Searcher,
    ) -> Result<NodeReader<'a>> {
        let source = match &node.kind {
            NodeKind::DateHistogram { field, .. } if field == TIME_FIELD => Source::Time {
                lookup: TimeLookup::new(block, searcher.optimizations)?,
                current: None,
            },
            NodeKind::Filters { .. } => Source::Filters(
                plan.filters
                    .iter()
                    .map(|weight| weight.scorer(index, block).map_err(QueryError::from))
                    .collect::<Result<_>>()?,
            ),
            NodeKind::MultiTerms { fields } => Source::Fields(
                fields
                    .iter()
                    .map(|(field, _)| value_source(searcher, block, field))
                    .collect(),
            ),
            NodeKind::Composite { sources } => Source::Fields(
                sources
                    .iter()
                    .map(|source| {
                        let field = &source.field;
                        value_source(searcher, block, field)
                    })
                    .collect(),
            ),
            NodeKind::Metric {
                field,
                metric: Metric::WeightedAvg { weight, .. },
                ..
            } => Source::Fields(
                [field, weight]
                    .into_iter()
                    .map(|field| value_source(searcher, block, field))
                    .collect(),
            ),
            NodeKind::Metric { field, .. }
            | NodeKind::Terms { field, .. }
            | NodeKind::Histogram { field, .. }
            | NodeKind::DateHistogram { field, .. }
            | NodeKind::Range { field, .. }
            | NodeKind::DateRange { field, .. }
            | NodeKind::Missing { field } => {
                let (cursor, rules) = value_source(searcher, block, field);
                Source::Field(cursor, rules)
            }
        };
        Ok(NodeReader {
            source,
            dictionary: None,
            keys: Vec::new(),
            children: node
                .children
                .iter()
                .zip(&plan.children)
                .map(|(child, plan)| NodeReader::new(child, plan, index, block, searcher))
                .collect::<Result<_>>()?,
        })
    }

    /// Reports a filter scorer cut short by a decode error.
    fn check(&self, searcher: &Searcher, index: usize) -> Result<()> {
        if let Source::Filters(scorers) = &self.source {
            for scorer in scorers.iter().flatten() {
                searcher.check_scorer(index, scorer.as_ref())?;
            }
        }
        self.children
            .iter()
            .try_for_each(|child| child.check(searcher, index))
    }

    /// Sets `self.keys` to `doc`'s buckets of `node` (`terms`: the node's values).
    fn find_keys(&mut self, node: &NodeKind, doc: u32, terms: &mut Terms) -> Result<()> {
        self.keys.clear();
        let keys = &mut self.keys;
        match (&mut self.source, node) {
            (Source::Time { lookup, current }, NodeKind::DateHistogram { buckets, .. }) => {
                let start = match *current {
                    Some((lo, hi, start)) if lo <= doc && doc < hi => start,
                    _ => {
                        let start = buckets.start_of(lookup.time_of(doc)?)?;
                        let end = buckets.next(start)?;
                        let hi = lookup.first_at_or_after(end)?;
                        *current = Some((doc, hi.max(doc + 1), start));
                        start
                    }
                };
                keys.push(Key::Slot(start));
            }
            (Source::Filters(scorers), NodeKind::Filters { other, .. }) => {
                for (i, scorer) in scorers.iter_mut().enumerate() {
                    let Some(scorer) = scorer else { continue };
                    if scorer.doc() < doc {
                        scorer.seek(doc);
                    }
                    if scorer.doc() == doc {
                        keys.push(Key::Slot(i as i64));
                    }
                }
                if *other && keys.is_empty() {
                    keys.push(Key::Slot(scorers.len() as i64));
                }
            }
            (Source::Field(cursor, date), kind) => {
                let dictionary = &mut self.dictionary;
                let seen = read_value(cursor, date, doc, &mut |value| {
                    value_keys(kind, value, dictionary, terms, keys);
                })?;
                if keys.len() > 1 {
                    // An array holding a value twice puts the doc in its bucket once.
                    let mut at = 1;
                    while at < keys.len() {
                        if keys[..at].contains(&keys[at]) {
                            keys.remove(at);
                        } else {
                            at += 1;
                        }
                    }
                }
                match kind {
                    NodeKind::Missing { .. } if !seen => keys.push(Key::Slot(0)),
                    NodeKind::Terms {
                        missing: Some(missing),
                        ..
                    } if !seen => keys.push(Key::Term(terms.number(missing))),
                    _ => {}
                }
            }
            (Source::Fields(cursors), NodeKind::MultiTerms { fields }) => {
                let combinations = combinations(cursors, doc, |i, value| match value {
                    Some(value) => Some(TermKey::of(value)),
                    None => fields[i].1.clone(),
                })?;
                for combination in combinations {
                    keys.push(Key::Term(terms.number(&TermKey::Tuple(combination))));
                }
            }
            (Source::Fields(cursors), NodeKind::Composite { sources }) => {
                let combinations = combinations(cursors, doc, |i, value| match value {
                    Some(value) => sources[i].kind.part(value),
                    None => sources[i].missing_bucket.then_some(TermKey::Missing),
                })?;
                for combination in combinations {
                    keys.push(Key::Term(terms.number(&TermKey::Tuple(combination))));
                }
            }
            _ => unreachable!("a node's source is made for its kind"),
        }
        Ok(())
    }
}

/// The key tuples of `doc` over several fields (`multi_terms`, `composite`): one part per
/// field from `part(i, Some(value))` for each value of field `i` (an array gives several, so
/// the doc is in every combination), or `part(i, None)` when it has none there; a field
/// without a part leaves the doc in no bucket.
fn combinations<'a>(
    cursors: &mut [(FieldCursor<'a>, ValueRules)],
    doc: u32,
    part: impl Fn(usize, Option<TypedValue<'_, 'a>>) -> Option<TermKey>,
) -> Result<Vec<Vec<TermKey>>> {
    let mut combinations: Vec<Vec<TermKey>> = vec![Vec::with_capacity(cursors.len())];
    for (i, (cursor, rules)) in cursors.iter_mut().enumerate() {
        let mut parts: Vec<TermKey> = Vec::new();
        read_value(cursor, rules, doc, &mut |value| {
            if let Some(part) = part(i, Some(value)) {
                if !parts.contains(&part) {
                    parts.push(part);
                }
            }
        })?;
        if parts.is_empty() {
            match part(i, None) {
                Some(missing) => parts.push(missing),
                None => return Ok(Vec::new()),
            }
        }
        if combinations.len() * parts.len() > MAX_TREE_BUCKETS {
            return Err(QueryError::TooManyAggregationBuckets {
                limit: MAX_TREE_BUCKETS,
            });
        }
        combinations = combinations
            .iter()
            .flat_map(|prefix| {
                parts.iter().map(move |part| {
                    let mut combination = prefix.clone();
                    combination.push(part.clone());
                    combination
                })
            })
            .collect();
    }
    Ok(combinations)
}

/// How a node reads a field's values: in the field's type where it is a date field (kept as
/// sent, read in its formats) or a number field (strings coerced, rounded to the type), and
/// for a keyword view of a field (`X.keyword`, a keyword multi-field), only the strings up to
/// the view's `ignore_above` characters, as Elasticsearch's keyword doc values hold them.
#[derive(Debug, Clone, Default)]
struct ValueRules {
    typed: Option<quarry_store::FieldMapping>,
    max_chars: Option<u32>,
}

impl ValueRules {
    /// Whether a string value is one the field holds (the view's `ignore_above`).
    fn holds(&self, value: TypedValue<'_, '_>) -> bool {
        let Some(limit) = self.max_chars else {
            return true;
        };
        let text = match value {
            TypedValue::Str(s) => s.as_bytes(),
            TypedValue::Ordinal(o, dictionary) => dictionary.string(o).unwrap_or_default(),
            TypedValue::Raw(..) => return true,
        };
        // Only a value longer in bytes than the limit can be longer in chars.
        text.len() <= limit as usize
            || String::from_utf8_lossy(text).chars().count() <= limit as usize
    }
}

/// The cursor over the values a node aggregates under the name `name` in `block`, and how
/// to read them (`ValueRules`): a keyword view's parent's values, else the field's own.
fn value_source<'a>(
    searcher: &Searcher,
    block: &'a BlockReader,
    name: &str,
) -> (FieldCursor<'a>, ValueRules) {
    if let Some((field, max_chars)) = searcher.schema().mapping().whole_values(name) {
        let rules = ValueRules {
            typed: None,
            max_chars,
        };
        return (FieldCursor::with_arrays(block, field), rules);
    }
    let typed = searcher.schema().rules(name).filter(|rules| {
        rules.ty.date_unit_nanos().is_some() || rules.ty == quarry_store::FieldType::Number
    });
    let rules = ValueRules {
        typed: typed.cloned(),
        max_chars: None,
    };
    (FieldCursor::with_arrays(block, name), rules)
}

/// Calls `f` with `doc`'s value, if it has one (the answer). A date field's value, kept as
/// sent, is read in the field's formats as a time (ns); a number field's as its mapped type
/// holds it (`schema::number_value`). A value that is not of the type (kept under
/// `ignore_malformed`) counts as no value, as in Elasticsearch's doc values; so does a string
/// a keyword view does not hold.
fn read_value<'a>(
    cursor: &mut FieldCursor<'a>,
    rules: &ValueRules,
    doc: u32,
    f: &mut impl FnMut(TypedValue<'_, 'a>),
) -> Result<bool> {
    let mut seen = false;
    cursor.with_typed_values(doc, &mut |value| {
        if !rules.holds(value) {
            return;
        }
        let Some(rules) = &rules.typed else {
            seen = true;
            f(value);
            return;
        };
        if rules.ty == quarry_store::FieldType::Number {
            if let Some(number) = typed_number(rules, value) {
                seen = true;
                f(number);
            }
            return;
        }
        let text = match value {
            TypedValue::Str(s) => s.to_owned(),
            TypedValue::Ordinal(o, dictionary) => ordinal_text(o, dictionary),
            TypedValue::Raw(ty, raw) => match ty {
                ColumnType::I64 => (raw as i64).to_string(),
                ColumnType::U64 => raw.to_string(),
                ColumnType::F64 => format!("{}", f64::from_bits(raw)),
                _ => return,
            },
        };
        if let Some(nanos) = rules
            .format
            .read_utc(&text)
            .and_then(|n| i64::try_from(n).ok())
        {
            seen = true;
            f(TypedValue::Raw(ColumnType::Timestamp, nanos as u64));
        }
    })?;
    Ok(seen)
}

/// A number field's value as its mapped type holds it, or `None` when it is not one.
fn typed_number<'a>(
    rules: &quarry_store::FieldMapping,
    value: TypedValue<'_, 'a>,
) -> Option<TypedValue<'static, 'a>> {
    use quarry_format::Value;
    use quarry_store::NumberType;
    // The common cases pass through: numbers of a double or long field.
    match (rules.number_type, value) {
        (NumberType::Double, TypedValue::Raw(ty @ (ColumnType::I64 | ColumnType::F64), raw))
        | (NumberType::Long, TypedValue::Raw(ty @ ColumnType::I64, raw)) => {
            return Some(TypedValue::Raw(ty, raw))
        }
        _ => {}
    }
    let item = match value {
        TypedValue::Raw(ColumnType::I64, raw) => Value::I64(raw as i64),
        TypedValue::Raw(ColumnType::U64, raw) => Value::U64(raw),
        TypedValue::Raw(ColumnType::F64, raw) => Value::F64(f64::from_bits(raw)),
        TypedValue::Raw(..) => return None,
        TypedValue::Str(s) => Value::Str(s.to_owned()),
        TypedValue::Ordinal(o, dictionary) => Value::Str(ordinal_text(o, dictionary)),
    };
    Some(match quarry_index::schema::number_value(rules, &item)? {
        Value::I64(v) => TypedValue::Raw(ColumnType::I64, v as u64),
        Value::U64(v) => TypedValue::Raw(ColumnType::U64, v),
        Value::F64(v) => TypedValue::Raw(ColumnType::F64, v.to_bits()),
        _ => return None,
    })
}

/// A value as a time (ns): a time, epoch milliseconds, or a date in text.
fn value_time(value: TypedValue<'_, '_>) -> Option<i64> {
    match value {
        TypedValue::Raw(ColumnType::Timestamp, raw) => Some(raw as i64),
        TypedValue::Raw(..) => value.untyped().number().map(|ms| (ms * 1e6) as i64),
        TypedValue::Str(s) => crate::time::parse_time(s, 0).ok(),
        TypedValue::Ordinal(o, values) => crate::time::parse_time(&ordinal_text(o, values), 0).ok(),
    }
}

/// The buckets of `kind` that `value` falls in.
fn value_keys<'a>(
    kind: &NodeKind,
    value: TypedValue<'_, 'a>,
    dictionary: &mut Option<DocValues<'a>>,
    terms: &mut Terms,
    keys: &mut Vec<Key>,
) {
    let number = || match value {
        TypedValue::Raw(..) => value.untyped().number(),
        _ => None,
    };
    match kind {
        NodeKind::Terms { .. } => keys.push(match value {
            TypedValue::Ordinal(ordinal, values) => {
                *dictionary = Some(values);
                Key::Ordinal(ordinal)
            }
            TypedValue::Str(s) => Key::Term(terms.string(s)),
            other => Key::Term(terms.number(&TermKey::of(other))),
        }),
        NodeKind::Histogram {
            interval, offset, ..
        } => {
            if let Some(v) = number().filter(|v| v.is_finite()) {
                keys.push(Key::Slot(((v - offset) / interval).floor() as i64));
            }
        }
        NodeKind::DateHistogram { buckets, .. } => {
            if let Some(start) = value_time(value).and_then(|t| buckets.start_of(t).ok()) {
                keys.push(Key::Slot(start));
            }
        }
        NodeKind::DateRange { ranges, .. } => {
            if let Some(time) = value_time(value) {
                for (i, (from, to)) in ranges.iter().enumerate() {
                    if from.is_none_or(|f| time >= f) && to.is_none_or(|t| time < t) {
                        keys.push(Key::Slot(i as i64));
                    }
                }
            }
        }
        NodeKind::Range { ranges, .. } => {
            if let Some(v) = number() {
                for (i, (from, to)) in ranges.iter().enumerate() {
                    if from.is_none_or(|f| v >= f) && to.is_none_or(|t| v < t) {
                        keys.push(Key::Slot(i as i64));
                    }
                }
            }
        }
        NodeKind::Missing { .. }
        | NodeKind::Metric { .. }
        | NodeKind::Filters { .. }
        | NodeKind::MultiTerms { .. }
        | NodeKind::Composite { .. } => {}
    }
}

/// A bucket's key: a slot, a terms value (its number in the node's `Terms`), or while a
/// block is read a string as that block's doc-value ordinal. Small and `Copy`: a key made
/// per doc and node moved a whole `String`-holding enum in the profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Key {
    Ordinal(u32),
    Term(u32),
    Slot(i64),
}

/// One node's terms values, numbered in the order first seen (over every block), and the
/// same for the nodes below.
#[derive(Default)]
struct Terms {
    list: Vec<TermKey>,
    strings: HashMap<String, u32>,
    others: HashMap<TermKey, u32>,
    children: Vec<Terms>,
}

impl Terms {
    fn tree(nodes: &[AggNode]) -> Vec<Terms> {
        nodes
            .iter()
            .map(|node| Terms {
                children: Terms::tree(&node.children),
                ..Terms::default()
            })
            .collect()
    }

    /// How many children each node has, down the tree (what `of_shape` makes again).
    fn shape(&self) -> Shape {
        Shape(self.children.iter().map(Terms::shape).collect())
    }

    fn of_shape(shape: &Shape) -> Terms {
        Terms {
            children: shape.0.iter().map(Terms::of_shape).collect(),
            ..Terms::default()
        }
    }

    /// The number of the string `text` (allocates only when it is new).
    fn string(&mut self, text: &str) -> u32 {
        if let Some(&number) = self.strings.get(text) {
            return number;
        }
        let number = self.list.len() as u32;
        self.list.push(TermKey::Str(text.to_owned()));
        self.strings.insert(text.to_owned(), number);
        number
    }

    fn number(&mut self, key: &TermKey) -> u32 {
        if let TermKey::Str(text) = key {
            return self.string(text);
        }
        if let Some(&number) = self.others.get(key) {
            return number;
        }
        let number = self.list.len() as u32;
        self.list.push(key.clone());
        self.others.insert(key.clone(), number);
        number
    }
}

/// Counts the buckets made, against `MAX_TREE_BUCKETS`.
struct Walk<'c> {
    buckets: &'c mut usize,
    /// The id of the block being read (as a cursor names it), for top hits.
    block: u64,
}

impl Walk<'_> {
    fn collect(
        &mut self,
        nodes: &[AggNode],
        states: &mut [NodeState],
        readers: &mut [NodeReader],
        terms: &mut [Terms],
        doc: u32,
    ) -> Result<()> {
        for (((node, state), reader), terms) in nodes.iter().zip(states).zip(readers).zip(terms) {
            match state {
                NodeState::Metric(MetricState::Weighted { sum, weights }) => {
                    let (
                        Source::Fields(cursors),
                        NodeKind::Metric {
                            missing,
                            metric:
                                Metric::WeightedAvg {
                                    weight: weight_field,
                                    weight_missing,
                                },
                            ..
                        },
                    ) = (&mut reader.source, &node.kind)
                    else {
                        unreachable!("a weighted average reads its two fields")
                    };
                    let number = |value: TypedValue<'_, '_>| {
                        value.untyped().number().filter(|v| v.is_finite())
                    };
                    let mut found = Vec::new();
                    let (value_cursor, rest) = cursors.split_at_mut(1);
                    let (cursor, rules) = &mut rest[0];
                    // As for the other metrics, `missing` stands in for no value, not for a
                    // value that is not a number.
                    let seen = read_value(cursor, rules, doc, &mut |value| {
                        found.extend(number(value));
                    })?;
                    let weight = match found[..] {
                        [] => match weight_missing.as_ref().and_then(TermKey::as_f64) {
                            Some(w) if !seen => w,
                            _ => continue,
                        },
                        [w] => w,
                        _ => {
                            return Err(QueryError::Invalid(format!(
                                "field [{weight_field}] of a weighted_avg holds several values in \
                                 one event: the weight must be a single value"
                            )))
                        }
                    };
                    found.clear();
                    let (cursor, rules) = &mut value_cursor[0];
                    let seen = read_value(cursor, rules, doc, &mut |value| {
                        found.extend(number(value));
                    })?;
                    if !seen {
                        found.extend(missing.as_ref().and_then(TermKey::as_f64));
                    }
                    for v in found {
                        *sum += v * weight;
                        *weights += weight;
                    }
                }
                NodeState::Metric(metric) => {
                    let Source::Field(cursor, date) = &mut reader.source else {
                        unreachable!("a metric reads a field")
                    };
                    let block = self.block;
                    let seen = read_value(cursor, date, doc, &mut |value| {
                        if let (MetricState::TopHits(hits, total), TypedValue::Raw(_, time)) =
                            (&mut *metric, value)
                        {
                            *total += 1;
                            hits.push(TopHit {
                                time: time as i64,
                                block,
                                doc,
                                origin: 0,
                            });
                        } else {
                            metric.add(value);
                        }
                    })?;
                    if let (MetricState::TopHits(hits, _), NodeKind::Metric { metric: kind, .. }) =
                        (&mut *metric, &node.kind)
                    {
                        trim_hits(hits, kind, false);
                    }
                    if let (
                        false,
                        NodeKind::Metric {
                            missing: Some(missing),
                            ..
                        },
                    ) = (seen, &node.kind)
                    {
                        metric.add(missing.as_value());
                    }
                }
                NodeState::Buckets(buckets) => {
                    reader.find_keys(&node.kind, doc, terms)?;
                    let NodeReader { keys, children, .. } = reader;
                    for &key in keys.iter() {
                        let bucket = buckets.get_or_insert(key, &node.children, self.buckets)?;
                        bucket.count += 1;
                        self.collect(
                            &node.children,
                            &mut bucket.children,
                            children,
                            &mut terms.children,
                            doc,
                        )?;
                    }
                }
            }
        }
        Ok(())
    }
}

/// A node's running state over the docs seen so far.
enum NodeState {
    Metric(MetricState),
    Buckets(Buckets),
}

/// A bucket node's buckets, in the order made, found by key: small numbers (ordinals and
/// terms' numbers below `DENSE_KEYS`) through a vector, others through a map, and the last
/// slot found remembered: docs come in time order, so consecutive docs mostly share their
/// time bucket (hashing and comparing keys was a third of a terms > date_histogram > avg
/// request in the profile).
#[derive(Default)]
struct Buckets {
    list: Vec<(Key, Bucket)>,
    /// By ordinal, then by term number: position in `list` + 1 (0: none yet).
    dense_ordinals: Vec<u32>,
    dense_terms: Vec<u32>,
    sparse: HashMap<Key, usize>,
    last_slot: Option<(i64, usize)>,
}

/// Ordinals and terms' numbers found by indexing a vector (4 KiB at most per bucket node and
/// parent bucket).
const DENSE_KEYS: u32 = 1024;

impl Buckets {
    fn dense(&mut self, key: Key) -> Option<(&mut Vec<u32>, usize)> {
        match key {
            Key::Ordinal(n) if n < DENSE_KEYS => Some((&mut self.dense_ordinals, n as usize)),
            Key::Term(n) if n < DENSE_KEYS => Some((&mut self.dense_terms, n as usize)),
            _ => None,
        }
    }

    fn find(&mut self, key: Key) -> Option<usize> {
        if let Some((dense, n)) = self.dense(key) {
            return dense
                .get(n)
                .and_then(|at| at.checked_sub(1))
                .map(|at| at as usize);
        }
        if let Key::Slot(slot) = key {
            if let Some((last, at)) = self.last_slot {
                if last == slot {
                    return Some(at);
                }
            }
            let at = *self.sparse.get(&key)?;
            self.last_slot = Some((slot, at));
            return Some(at);
        }
        self.sparse.get(&key).copied()
    }

    fn insert(&mut self, key: Key, bucket: Bucket) -> usize {
        let at = self.list.len();
        match self.dense(key) {
            Some((dense, n)) => {
                if dense.len() <= n {
                    dense.resize(n + 1, 0);
                }
                dense[n] = at as u32 + 1;
            }
            None => {
                self.sparse.insert(key, at);
            }
        }
        self.list.push((key, bucket));
        at
    }

    /// The bucket of `key`, made (with states for `children`) if new; `made` counts the
    /// buckets made against `MAX_TREE_BUCKETS`.
    fn get_or_insert(
        &mut self,
        key: Key,
        children: &[AggNode],
        made: &mut usize,
    ) -> Result<&mut Bucket> {
        let at = match self.find(key) {
            Some(at) => at,
            None => {
                *made += 1;
                if *made > MAX_TREE_BUCKETS {
                    return Err(QueryError::TooManyAggregationBuckets {
                        limit: MAX_TREE_BUCKETS,
                    });
                }
                self.insert(key, Bucket::new(children))
            }
        };
        Ok(&mut self.list[at].1)
    }

    /// Adds `bucket` under `key`: merged into the bucket already there, if any.
    fn add(&mut self, key: Key, bucket: Bucket) {
        match self.find(key) {
            Some(at) => self.list[at].1.merge(bucket),
            None => {
                self.insert(key, bucket);
            }
        }
    }

    /// The buckets again with `rename` applied to their keys (equal new keys merged).
    fn rekeyed(self, mut rename: impl FnMut(Key) -> Key) -> Buckets {
        let mut out = Buckets::default();
        for (key, bucket) in self.list {
            out.add(rename(key), bucket);
        }
        out
    }
}

struct Bucket {
    count: u64,
    children: Vec<NodeState>,
}

impl Bucket {
    fn new(nodes: &[AggNode]) -> Bucket {
        Bucket {
            count: 0,
            children: nodes.iter().map(NodeState::new).collect(),
        }
    }
}

impl NodeState {
    fn new(node: &AggNode) -> NodeState {
        match &node.kind {
            NodeKind::Metric { metric, .. } => NodeState::Metric(MetricState::new(metric)),
            _ => NodeState::Buckets(Buckets::default()),
        }
    }

    /// Turns ordinal keys (of `reader`'s block) into terms' numbers, here and below.
    fn resolve(&mut self, node: &AggNode, reader: &NodeReader, terms: &mut Terms) {
        let NodeState::Buckets(buckets) = self else {
            return;
        };
        if let Some(dictionary) = reader.dictionary {
            *buckets = std::mem::take(buckets).rekeyed(|key| match key {
                Key::Ordinal(ordinal) => {
                    Key::Term(terms.string(&ordinal_text(ordinal, dictionary)))
                }
                other => other,
            });
        }
        for (_, bucket) in &mut buckets.list {
            for (((state, child), reader), terms) in bucket
                .children
                .iter_mut()
                .zip(&node.children)
                .zip(&reader.children)
                .zip(&mut terms.children)
            {
                state.resolve(child, reader, terms);
            }
        }
    }

    /// The state with its terms keys, numbered in `from`, numbered in `to` instead (here and
    /// below).
    fn renumbered(self, from: &Terms, to: &mut Terms) -> NodeState {
        let NodeState::Buckets(buckets) = self else {
            return self;
        };
        let mut out = Buckets::default();
        for (key, bucket) in buckets.list {
            let key = match key {
                Key::Term(n) => Key::Term(to.number(&from.list[n as usize])),
                other => other,
            };
            let children = bucket
                .children
                .into_iter()
                .zip(&from.children)
                .zip(to.children.iter_mut())
                .map(|((state, from), to)| state.renumbered(from, to))
                .collect();
            out.add(
                key,
                Bucket {
                    count: bucket.count,
                    children,
                },
            );
        }
        NodeState::Buckets(out)
    }

    fn to_wire(&self, terms: &Terms) -> Result<WireNode> {
        match self {
            NodeState::Metric(metric) => Ok(WireNode::Metric(metric.to_wire()?)),
            NodeState::Buckets(buckets) => Ok(WireNode::Buckets(
                buckets
                    .list
                    .iter()
                    .map(|(key, bucket)| {
                        Ok(WireBucket {
                            key: match *key {
                                Key::Slot(slot) => WireKey::Slot(slot),
                                Key::Term(n) => WireKey::Term(terms.list[n as usize].clone()),
                                // Resolved at the end of each block.
                                Key::Ordinal(_) => {
                                    return Err(QueryError::Invalid(
                                        "an unresolved terms key".to_owned(),
                                    ))
                                }
                            },
                            count: bucket.count,
                            children: bucket
                                .children
                                .iter()
                                .zip(&terms.children)
                                .map(|(state, terms)| state.to_wire(terms))
                                .collect::<Result<_>>()?,
                        })
                    })
                    .collect::<Result<_>>()?,
            )),
        }
    }

    fn from_wire(wire: WireNode, terms: &mut Terms) -> Result<NodeState> {
        match wire {
            WireNode::Metric(metric) => Ok(NodeState::Metric(MetricState::from_wire(metric))),
            WireNode::Buckets(list) => {
                let mut buckets = Buckets::default();
                for bucket in list {
                    if bucket.children.len() != terms.children.len() {
                        return Err(bad_states());
                    }
                    let key = match bucket.key {
                        WireKey::Slot(slot) => Key::Slot(slot),
                        WireKey::Term(term) => Key::Term(terms.number(&term)),
                    };
                    let children = bucket
                        .children
                        .into_iter()
                        .zip(terms.children.iter_mut())
                        .map(|(state, terms)| NodeState::from_wire(state, terms))
                        .collect::<Result<_>>()?;
                    buckets.add(
                        key,
                        Bucket {
                            count: bucket.count,
                            children,
                        },
                    );
                }
                Ok(NodeState::Buckets(buckets))
            }
        }
    }

    /// Adds `other`, the same node's state over other docs.
    fn merge(&mut self, other: NodeState) {
        match (self, other) {
            (NodeState::Metric(a), NodeState::Metric(b)) => a.merge(b),
            (NodeState::Buckets(a), NodeState::Buckets(mut b)) => {
                if b.list.len() > a.list.len() {
                    std::mem::swap(a, &mut b);
                }
                for (key, bucket) in b.list {
                    a.add(key, bucket);
                }
            }
            _ => unreachable!("partial states of one node are of one kind"),
        }
    }

    fn into_result(self, node: &AggNode, terms: &Terms) -> AggResult {
        match self {
            NodeState::Metric(metric) => {
                let NodeKind::Metric { metric: kind, .. } = &node.kind else {
                    unreachable!("a metric state is a metric node's")
                };
                AggResult::Metric(metric.result(kind))
            }
            NodeState::Buckets(buckets) => {
                let mut out: Vec<BucketResult> = buckets
                    .list
                    .into_iter()
                    .map(|(key, bucket)| BucketResult {
                        key: match key {
                            Key::Slot(slot) => BucketKey::Slot(slot),
                            Key::Term(n) => BucketKey::Term(terms.list[n as usize].clone()),
                            // Resolved at the end of each block.
                            Key::Ordinal(o) => BucketKey::Term(TermKey::Str(format!("#{o}"))),
                        },
                        count: bucket.count,
                        children: bucket
                            .children
                            .into_iter()
                            .zip(&node.children)
                            .zip(&terms.children)
                            .map(|((state, child), terms)| state.into_result(child, terms))
                            .collect(),
                    })
                    .collect();
                out.sort_by(|a, b| match (&a.key, &b.key) {
                    (BucketKey::Slot(x), BucketKey::Slot(y)) => x.cmp(y),
                    _ => std::cmp::Ordering::Equal,
                });
                AggResult::Buckets(out)
            }
        }
    }
}

impl Bucket {
    fn merge(&mut self, other: Bucket) {
        self.count += other.count;
        for (state, more) in self.children.iter_mut().zip(other.children) {
            state.merge(more);
        }
    }
}

enum MetricState {
    Stats {
        count: u64,
        min: f64,
        max: f64,
        sum: f64,
        sum_of_squares: f64,
    },
    ValueCount(u64),
    Percentiles(Box<Percentiles>),
    Distinct(Box<Hll>),
    /// The best hits so far, and how many were seen.
    TopHits(Vec<TopHit>, u64),
    /// A weighted average's sums (`Walk::collect`).
    Weighted {
        sum: f64,
        weights: f64,
    },
}

/// Keeps the first `size` hits of `hits` in `kind`'s order: sorted and cut once they are
/// twice as many (`done`: now, for the answer).
fn trim_hits(hits: &mut Vec<TopHit>, kind: &Metric, done: bool) {
    let Metric::TopHits { size, oldest_first } = *kind else {
        return;
    };
    if !done && hits.len() < 2 * size.max(16) {
        return;
    }
    let key = |h: &TopHit| (h.time, h.block, h.doc, h.origin);
    if oldest_first {
        hits.sort_unstable_by_key(key);
    } else {
        hits.sort_unstable_by_key(|h| std::cmp::Reverse(key(h)));
    }
    hits.truncate(size);
}

impl MetricState {
    fn new(metric: &Metric) -> MetricState {
        match metric {
            Metric::Stats => MetricState::Stats {
                count: 0,
                min: f64::INFINITY,
                max: f64::NEG_INFINITY,
                sum: 0.0,
                sum_of_squares: 0.0,
            },
            Metric::ValueCount => MetricState::ValueCount(0),
            Metric::Percentiles(_)
            | Metric::HdrPercentiles { .. }
            | Metric::MedianAbsoluteDeviation => {
                MetricState::Percentiles(Box::new(Percentiles::new(false)))
            }
            Metric::TopHits { .. } => MetricState::TopHits(Vec::new(), 0),
            Metric::WeightedAvg { .. } => MetricState::Weighted {
                sum: 0.0,
                weights: 0.0,
            },
            Metric::Cardinality => MetricState::Distinct(Box::new(
                // The precision is a valid constant.
                HyperLogLogPlus::new(
                    crate::aggregation::CARDINALITY_PRECISION,
                    crate::aggregation::FixedSipHash,
                )
                .expect("valid precision"),
            )),
        }
    }

    fn add(&mut self, value: TypedValue<'_, '_>) {
        match self {
            MetricState::Stats {
                count,
                min,
                max,
                sum,
                sum_of_squares,
            } => {
                if let Some(v) = value.untyped().number().filter(|v| !v.is_nan()) {
                    *count += 1;
                    *min = min.min(v);
                    *max = max.max(v);
                    *sum += v;
                    *sum_of_squares += v * v;
                }
            }
            MetricState::ValueCount(n) => *n += 1,
            // Collected with the doc (`Walk::collect`).
            MetricState::TopHits(..) | MetricState::Weighted { .. } => {}
            MetricState::Percentiles(state) => {
                if let Some(v) = value.untyped().number() {
                    state.add(v);
                }
            }
            MetricState::Distinct(hll) => match value {
                TypedValue::Str(s) => hll.insert(s.as_bytes()),
                TypedValue::Ordinal(o, dictionary) => {
                    hll.insert(dictionary.string(o).unwrap_or_default())
                }
                TypedValue::Raw(..) => {
                    let v = value.untyped().number().unwrap_or(f64::NAN);
                    hll.insert(format_number(v).as_bytes())
                }
            },
        }
    }

    fn to_wire(&self) -> Result<WireMetric> {
        Ok(match self {
            &MetricState::Stats {
                count,
                min,
                max,
                sum,
                sum_of_squares,
            } => WireMetric::Stats {
                count,
                min,
                max,
                sum,
                sum_of_squares,
            },
            &MetricState::ValueCount(n) => WireMetric::ValueCount(n),
            MetricState::Percentiles(state) => {
                let (counted, sketch) = state.to_wire();
                WireMetric::Percentiles { counted, sketch }
            }
            MetricState::Distinct(hll) => WireMetric::Distinct(hll.clone()),
            &MetricState::Weighted { sum, weights } => WireMetric::Weighted { sum, weights },
            MetricState::TopHits(hits, total) => WireMetric::TopHits {
                hits: hits.iter().map(|h| (h.time, h.block, h.doc)).collect(),
                total: *total,
            },
        })
    }

    fn from_wire(wire: WireMetric) -> MetricState {
        match wire {
            WireMetric::Stats {
                count,
                min,
                max,
                sum,
                sum_of_squares,
            } => MetricState::Stats {
                count,
                min,
                max,
                sum,
                sum_of_squares,
            },
            WireMetric::ValueCount(n) => MetricState::ValueCount(n),
            WireMetric::Percentiles { counted, sketch } => {
                MetricState::Percentiles(Box::new(Percentiles::from_wire(counted, sketch)))
            }
            WireMetric::Distinct(hll) => MetricState::Distinct(hll),
            WireMetric::Weighted { sum, weights } => MetricState::Weighted { sum, weights },
            WireMetric::TopHits { hits, total } => MetricState::TopHits(
                hits.into_iter()
                    .map(|(time, block, doc)| TopHit {
                        time,
                        block,
                        doc,
                        origin: 0,
                    })
                    .collect(),
                total,
            ),
        }
    }

    /// Whether this is a state of `metric` (`MetricState::new`'s kind).
    fn is_of(&self, metric: &Metric) -> bool {
        matches!(
            (self, metric),
            (MetricState::Stats { .. }, Metric::Stats)
                | (MetricState::ValueCount(_), Metric::ValueCount)
                | (
                    MetricState::Percentiles(_),
                    Metric::Percentiles(_)
                        | Metric::HdrPercentiles { .. }
                        | Metric::MedianAbsoluteDeviation
                )
                | (MetricState::Distinct(_), Metric::Cardinality)
                | (MetricState::TopHits(..), Metric::TopHits { .. })
                | (MetricState::Weighted { .. }, Metric::WeightedAvg { .. })
        )
    }

    fn merge(&mut self, other: MetricState) {
        match (self, other) {
            (
                MetricState::Stats {
                    count,
                    min,
                    max,
                    sum,
                    sum_of_squares,
                },
                MetricState::Stats {
                    count: count2,
                    min: min2,
                    max: max2,
                    sum: sum2,
                    sum_of_squares: squares2,
                },
            ) => {
                *count += count2;
                *min = min.min(min2);
                *max = max.max(max2);
                *sum += sum2;
                *sum_of_squares += squares2;
            }
            (MetricState::ValueCount(a), MetricState::ValueCount(b)) => *a += b,
            (
                MetricState::Weighted { sum, weights },
                MetricState::Weighted {
                    sum: more,
                    weights: more_weights,
                },
            ) => {
                *sum += more;
                *weights += more_weights;
            }
            (MetricState::TopHits(a, n), MetricState::TopHits(b, m)) => {
                a.extend(b);
                *n += m;
            }
            (MetricState::Percentiles(a), MetricState::Percentiles(b)) => a.merge(*b),
            (MetricState::Distinct(a), MetricState::Distinct(b)) => {
                // Same precision by construction, the only way a merge fails.
                a.merge(&*b).expect("cardinality sketches of one precision");
            }
            _ => unreachable!("partial states of one metric are of one kind"),
        }
    }

    fn result(self, metric: &Metric) -> MetricResult {
        match (self, metric) {
            (
                MetricState::Stats {
                    count,
                    min,
                    max,
                    sum,
                    sum_of_squares,
                },
                _,
            ) => MetricResult::Stats {
                count,
                min,
                max,
                sum,
                sum_of_squares,
            },
            (MetricState::ValueCount(n), _) => MetricResult::ValueCount(n),
            (MetricState::Weighted { sum, weights }, _) => {
                MetricResult::WeightedAvg((weights != 0.0).then(|| sum / weights))
            }
            (MetricState::TopHits(mut hits, total), kind) => {
                trim_hits(&mut hits, kind, true);
                MetricResult::TopHits { hits, total }
            }
            (MetricState::Percentiles(state), Metric::MedianAbsoluteDeviation) => {
                MetricResult::MedianAbsoluteDeviation(state.median_absolute_deviation())
            }
            (MetricState::Percentiles(state), Metric::Percentiles(percents)) => {
                MetricResult::Percentiles(
                    percents
                        .iter()
                        .map(|&p| (p, state.interpolated(p / 100.0)))
                        .collect(),
                )
            }
            (MetricState::Percentiles(state), Metric::HdrPercentiles { percents, digits }) => {
                let values: Result<Vec<(f64, Option<f64>)>> = percents
                    .iter()
                    .map(|&p| Ok((p, state.hdr(p / 100.0, *digits)?)))
                    .collect();
                match values {
                    Ok(values) => MetricResult::Percentiles(values),
                    Err(error) => MetricResult::Invalid(error.to_string()),
                }
            }
            (MetricState::Distinct(mut hll), _) => {
                MetricResult::Cardinality(hll.count().round() as u64)
            }
            (MetricState::Percentiles(_), _) => {
                unreachable!("percentile states are for percentiles")
            }
        }
    }
}
