//! A search in two halves, so that it can run over several nodes: *leaves* search their own
//! blocks and answer with partial results that say where each hit is, not what it holds; the
//! *root* merges the partial answers and then fetches the events of the hits it kept (as
//! Quickwit's leaf and root searches, and tantivy's `Collector::merge_fruits`, do). One node
//! is one leaf and the root; a cluster is N leaves and the same root.
//!
//! Three phases, each explicit and each carried by a serializable type:
//!
//! 1. **Statistics** (ranked searches only): each leaf gathers [`GlobalStats`] for the query's
//!    terms over its blocks; the root sums them ([`GlobalStats::merge`]) and sends the sum
//!    back, so every leaf scores with the idf and average lengths of the whole collection and
//!    a hit scores the same whichever leaf holds it.
//! 2. **Search**: each leaf answers a [`LeafRequest`] with a [`LeafAnswer`]: its best `limit`
//!    hits as [`PartialHit`]s (block id, doc, time, score or sort values), its count, its
//!    histogram, its aggregations' states ([`AggPartial`]), and the blocks it had to leave
//!    out. [`merge_answers`] keeps the best `limit` over all leaves in the request's order
//!    (time, block id, doc for time sorts; score, then block start, block id and doc, for
//!    relevance; the sort values, then time order, for field sorts), sums counts and buckets,
//!    merges the aggregation states, and lists every failed block: an answer that lacks
//!    blocks says so and names them. A histogram of width `auto` needs the span of the
//!    matches first ([`Searcher::leaf_span`], summed by [`TimeSpan::merge`]).
//! 3. **Fetch**: the root asks the leaf holding each kept hit for its event
//!    ([`Searcher::fetch_partial`]).
//!
//! Covered: hits by time, by relevance and by fields (with `search_after`), counts,
//! histograms, the flat aggregations (overall and per bucket), and the nested aggregations
//! of Elasticsearch's DSL (agg_tree.rs, as [`TreePartial`]s) but their top hits.

use crate::agg_tree::{AggNode, TreePartial};
use crate::aggregation::{AggPartial, AggSpec};
use crate::cursor::Cursor;
use crate::error::Result;
use crate::field_sort::{FieldSort, SortCursor, SortValue};
use crate::query::Query;
use crate::searcher::{DamagedBlock, Hit, HitsRequest, Searcher, SortOrder};
use crate::weight::GlobalStats;
use quarry_format::Value;
use serde::{Deserialize, Serialize};
use std::cmp::Ordering;

/// A query as it travels to leaves: its source, which each leaf compiles against its own
/// blocks and mapping ([`Searcher::leaf_plan`]), not a compiled plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QuerySource {
    /// The query language (parser.rs).
    Text(String),
    /// Elasticsearch's query DSL, with what `now` means in its date math (the root's clock,
    /// so that every leaf reads it alike).
    Dsl { query: serde_json::Value, now: i64 },
}

/// The query of a distributed search: its source and its time range.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LeafQuery {
    pub source: QuerySource,
    /// Only events with `start <= _time < end` (ns).
    pub start: i64,
    pub end: i64,
}

/// What a leaf is asked, besides the query.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct LeafRequest {
    /// Hits wanted (the root keeps this many of all leaves' hits).
    pub limit: usize,
    pub sort: SortOrder,
    /// For time sorts: continue after this hit.
    pub after: Option<Cursor>,
    /// Sort by these fields instead (`sort` is then not used).
    pub sort_field: Option<FieldSort>,
    /// With `sort_field`: continue after this hit.
    pub sort_after: Option<SortCursor>,
    /// Also count every match.
    pub count: bool,
    /// A histogram with buckets this wide (ns). The root resolves `auto` first: the width
    /// depends on the time span of every leaf's matches (`Searcher::leaf_span`).
    pub histogram: Option<i64>,
    /// Aggregations over every match, or per bucket with a histogram (whose counts then
    /// come with the states).
    pub aggregations: Vec<AggSpec>,
    /// Nested aggregations over every match (their walk counts the matches too).
    #[serde(default)]
    pub tree: Vec<AggNode>,
}

/// Where a hit is, and what orders it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartialHit {
    pub time: i64,
    /// The block's id in its catalog.
    pub block: u64,
    pub doc: u32,
    /// BM25 score, for relevance sorts.
    pub score: Option<f32>,
    /// The first time in the hit's block: relevance ties are broken by (block start, block
    /// id, doc), the order in which one searcher holds its blocks.
    pub block_start: i64,
    /// For field sorts: the hit's value for each key.
    pub sort_values: Option<Vec<SortValue>>,
}

impl PartialHit {
    /// Where the next page of a field sort starts, when this hit ends one.
    pub fn sort_cursor(&self) -> Option<SortCursor> {
        self.sort_values.as_ref().map(|values| SortCursor {
            values: values.clone(),
            time: self.time,
            block_id: self.block,
            doc: self.doc,
        })
    }
}

/// A block a leaf left out of its answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailedBlock {
    /// Its catalog id, when it has one.
    pub block: Option<u64>,
    /// Where it is, as messages name it.
    pub location: String,
    pub error: String,
    /// Only unreadable now (`DamagedBlock::unreadable`), not damaged.
    #[serde(default)]
    pub unreadable: bool,
}

impl From<&DamagedBlock> for FailedBlock {
    fn from(damaged: &DamagedBlock) -> FailedBlock {
        FailedBlock {
            block: damaged.block,
            location: damaged.path.display().to_string(),
            error: damaged.error.clone(),
            unreadable: damaged.unreadable,
        }
    }
}

/// A leaf's partial answer, or the root's merge of several.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct LeafAnswer {
    /// Best first, in the request's order.
    pub hits: Vec<PartialHit>,
    pub count: Option<u64>,
    /// `(bucket start, count)` ascending, empty buckets between the first and the last
    /// included.
    pub histogram: Option<Vec<(i64, u64)>>,
    /// With aggregations: their states (per bucket with a histogram, which is then not in
    /// `histogram`: the states' counts are its counts).
    pub aggregations: Option<AggPartial>,
    /// With a tree: its states.
    #[serde(default)]
    pub tree: Option<TreePartial>,
    /// Blocks left out: when not empty, the answer is partial.
    pub failed: Vec<FailedBlock>,
}

/// How wide a search's time range is, for a histogram of width `auto`: the query's own range
/// when it bounds both ends, else the span of the matches (oldest, newest).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum TimeSpan {
    Bounded(i64),
    Matches(Option<(i64, i64)>),
}

impl TimeSpan {
    /// The span over this leaf's and `other`'s matches.
    pub fn merge(self, other: TimeSpan) -> TimeSpan {
        match (self, other) {
            (TimeSpan::Bounded(span), _) | (_, TimeSpan::Bounded(span)) => TimeSpan::Bounded(span),
            (TimeSpan::Matches(a), TimeSpan::Matches(b)) => TimeSpan::Matches(match (a, b) {
                (Some(a), Some(b)) => Some((a.0.min(b.0), a.1.max(b.1))),
                (a, b) => a.or(b),
            }),
        }
    }

    /// Nanoseconds.
    pub fn width(self) -> i64 {
        match self {
            TimeSpan::Bounded(span) => span,
            TimeSpan::Matches(Some((oldest, newest))) => newest.saturating_sub(oldest),
            TimeSpan::Matches(None) => 0,
        }
    }
}

impl Searcher {
    /// `query` compiled for this leaf's blocks.
    pub fn leaf_plan(&self, query: &LeafQuery) -> Result<Query> {
        let planned = match &query.source {
            QuerySource::Text(text) => self.parse(text)?,
            QuerySource::Dsl { query, now } => {
                let ast = crate::dsl::compile(query, "query", *now)
                    .map_err(|e| crate::error::QueryError::Invalid(e.to_string()))?;
                self.plan(&ast)?
            }
        };
        Ok(planned.within(query.start, query.end))
    }

    /// The names of the named clauses (`_name` in the DSL) of `query` each of `hits` (this
    /// leaf's, from an earlier search) matches, in the order of `hits`: Elasticsearch's
    /// `matched_queries`, which the root asks with the fetch.
    pub fn leaf_matched(&self, query: &LeafQuery, hits: &[PartialHit]) -> Result<Vec<Vec<String>>> {
        let mut matched = vec![Vec::new(); hits.len()];
        let QuerySource::Dsl { query, now } = &query.source else {
            return Ok(matched);
        };
        let ast = crate::dsl::compile(query, "query", *now)
            .map_err(|e| crate::error::QueryError::Invalid(e.to_string()))?;
        let mut named = Vec::new();
        crate::request::named_clauses(&ast, &mut named);
        let at: Vec<Cursor> = hits
            .iter()
            .map(|hit| Cursor {
                time: hit.time,
                block_id: hit.block,
                doc: hit.doc,
            })
            .collect();
        for (name, clause) in named {
            let clause = self.plan(clause)?;
            for (names, matches) in matched.iter_mut().zip(self.which_match(&clause, &at)?) {
                if matches && !names.contains(name) {
                    names.push(name.clone());
                }
            }
        }
        Ok(matched)
    }

    /// Phase 1: the statistics a ranked search of `query` needs, over this leaf's blocks.
    pub fn leaf_stats(&self, query: &Query) -> Result<GlobalStats> {
        let mut snapshot = self.clone();
        snapshot.skip_damaged(|searcher| Ok(GlobalStats::gather(query, searcher.blocks())?))
    }

    /// Phase 2: this leaf's best hits, count and histogram for `query`, scored with `stats`
    /// (the sum over every leaf; this leaf's own when `None`). A block that fails to read is
    /// left out, the answer computed again without it, and named in `failed`.
    pub fn leaf_search(
        &self,
        query: &Query,
        request: &LeafRequest,
        stats: Option<&GlobalStats>,
    ) -> Result<LeafAnswer> {
        let mut snapshot = self.clone();
        let mut answer =
            snapshot.skip_damaged(|searcher| searcher.leaf_answer(query, request, stats))?;
        answer.failed = snapshot.damaged().iter().map(FailedBlock::from).collect();
        Ok(answer)
    }

    /// `leaf_search` without leaving out damaged blocks: an error names the block (the
    /// caller, `Searcher::execute`, leaves it out itself).
    pub(crate) fn leaf_answer(
        &self,
        query: &Query,
        request: &LeafRequest,
        stats: Option<&GlobalStats>,
    ) -> Result<LeafAnswer> {
        // The nested aggregations' walk counts the matches (not for field sorts, whose count
        // has always been their own).
        let walk_counts = !request.tree.is_empty() && request.sort_field.is_none();
        let (hits, mut count) = match &request.sort_field {
            Some(sort) => self.leaf_field_sort(query, request, sort)?,
            None => {
                let found = self.search_with(
                    query,
                    &HitsRequest {
                        limit: request.limit,
                        count: request.count && !walk_counts,
                        sort: request.sort,
                        after: request.after,
                    },
                    stats,
                )?;
                let hits = found
                    .hits
                    .iter()
                    .map(|hit| PartialHit {
                        time: hit.time,
                        block: self.block_ids[hit.block as usize],
                        doc: hit.doc,
                        score: hit.score,
                        block_start: self.blocks()[hit.block as usize].manifest().time_min,
                        sort_values: None,
                    })
                    .collect();
                (hits, found.count)
            }
        };
        let (histogram, aggregations) = match (request.histogram, request.aggregations.is_empty()) {
            (Some(interval), true) => (Some(self.histogram(query, interval)?), None),
            (interval, false) => (
                None,
                Some(self.aggregate_partial(query, &request.aggregations, interval)?),
            ),
            (None, true) => (None, None),
        };
        let tree = match request.tree.is_empty() {
            true => None,
            false => {
                let (partial, matches) = self.tree_partial(query, &request.tree)?;
                if request.count && walk_counts {
                    count = Some(matches);
                }
                Some(partial)
            }
        };
        Ok(LeafAnswer {
            hits,
            count,
            histogram,
            aggregations,
            tree,
            failed: Vec::new(),
        })
    }

    /// The hits of a field sort, and the count if asked.
    fn leaf_field_sort(
        &self,
        query: &Query,
        request: &LeafRequest,
        sort: &FieldSort,
    ) -> Result<(Vec<PartialHit>, Option<u64>)> {
        // A text multi-field sorts by its parent's values; a keyword view (`X.keyword`, a
        // keyword multi-field) is read as one by `by_field`.
        let mut sort = sort.clone();
        let mapping = self.schema().mapping();
        for key in &mut sort.keys {
            if mapping.whole_values(&key.field).is_none() {
                key.field = mapping.values_field(&key.field).to_owned();
            }
        }
        let weight = self.filter_weight(query).with_checked_ranges();
        let hits = self
            .by_field(&weight, &sort, request.limit, request.sort_after.as_ref())?
            .into_iter()
            .map(|(hit, cursor)| PartialHit {
                time: hit.time,
                block: cursor.block_id,
                doc: hit.doc,
                score: None,
                block_start: self.blocks()[hit.block as usize].manifest().time_min,
                sort_values: Some(cursor.values),
            })
            .collect();
        let count = if request.count {
            Some(self.count(query)?)
        } else {
            None
        };
        Ok((hits, count))
    }

    /// Before a histogram of width `auto`: how wide the search's time range is here.
    pub fn leaf_span(&self, query: &Query) -> Result<TimeSpan> {
        let ((start, end), _) = query.time_bounds();
        if start != i64::MIN && end != i64::MAX {
            return Ok(TimeSpan::Bounded(end.saturating_sub(start)));
        }
        let mut snapshot = self.clone();
        snapshot.skip_damaged(|searcher| Ok(TimeSpan::Matches(searcher.match_edges(query)?)))
    }

    /// Phase 3: the events of `hits` (each in one of this leaf's blocks), in their order. A
    /// hit in a block this leaf does not have is an error naming it.
    pub fn fetch_partial(&self, hits: &[PartialHit]) -> Result<Vec<Vec<(String, Value)>>> {
        let index_of: std::collections::HashMap<u64, usize> = self
            .block_ids
            .iter()
            .enumerate()
            .map(|(index, &id)| (id, index))
            .collect();
        let local = hits
            .iter()
            .map(|hit| {
                let index = index_of.get(&hit.block).copied().ok_or_else(|| {
                    crate::error::QueryError::Invalid(format!(
                        "block {} is not in this searcher",
                        hit.block
                    ))
                })?;
                Ok(Hit {
                    block: index as u32,
                    doc: hit.doc,
                    score: hit.score,
                    time: hit.time,
                })
            })
            .collect::<Result<Vec<Hit>>>()?;
        self.events(&local)
    }
}

/// Whether `a` comes before `b` in the request's order, as one searcher over all the blocks
/// orders them: time sorts by (time, block id, doc) (timeline.rs); relevance by score, ties by
/// the place of the hit in the searcher's blocks, (block start, block id, doc); field sorts
/// by the sort values, then time order (field_sort.rs).
pub fn compare_hits(request: &LeafRequest, a: &PartialHit, b: &PartialHit) -> Ordering {
    if let Some(sort) = &request.sort_field {
        let values = |hit: &PartialHit| hit.sort_values.clone().unwrap_or_default();
        return crate::field_sort::order(
            &values(a),
            (a.time, a.block, a.doc),
            &values(b),
            (b.time, b.block, b.doc),
            sort,
        );
    }
    let place = |hit: &PartialHit| (hit.block_start, hit.block, hit.doc);
    match request.sort {
        SortOrder::TimeDesc => (b.time, b.block, b.doc).cmp(&(a.time, a.block, a.doc)),
        SortOrder::TimeAsc => (a.time, a.block, a.doc).cmp(&(b.time, b.block, b.doc)),
        SortOrder::Relevance => {
            let score = |hit: &PartialHit| hit.score.unwrap_or(f32::NEG_INFINITY);
            score(b)
                .total_cmp(&score(a))
                .then_with(|| place(a).cmp(&place(b)))
        }
    }
}

/// The root's merge of the answers to `request`: the best `request.limit` hits of all
/// `answers` in its order, counts and histogram buckets summed (a count or a histogram is there
/// if every answer has one), aggregation states merged, and every failed block listed.
pub fn merge_answers(
    request: &LeafRequest,
    answers: impl IntoIterator<Item = LeafAnswer>,
) -> LeafAnswer {
    let mut merged = LeafAnswer::default();
    let mut count = Some(0u64);
    let mut histogram: Option<Vec<(i64, u64)>> = Some(Vec::new());
    let mut aggregations: Option<AggPartial> = None;
    let mut tree: Option<TreePartial> = None;
    let mut any = false;
    for answer in answers {
        any = true;
        merged.hits.extend(answer.hits);
        count = count.zip(answer.count).map(|(a, b)| a + b);
        histogram = histogram.zip(answer.histogram).map(|(mut all, buckets)| {
            all.extend(buckets);
            all
        });
        if let Some(partial) = answer.aggregations {
            match &mut aggregations {
                Some(total) => total.merge(partial),
                None => aggregations = Some(partial),
            }
        }
        if let Some(partial) = answer.tree {
            match &mut tree {
                Some(total) => total.merge(partial),
                None => tree = Some(partial),
            }
        }
        merged.failed.extend(answer.failed);
    }
    if !any {
        return merged;
    }
    merged.hits.sort_by(|a, b| compare_hits(request, a, b));
    merged.hits.truncate(request.limit);
    merged.count = count;
    merged.aggregations = aggregations;
    merged.tree = tree;
    merged.histogram = histogram
        .zip(request.histogram)
        .map(|(buckets, width)| sum_buckets(buckets, width));
    merged
}

/// Buckets of several leaves (each `width` wide, aligned alike) as one histogram: equal
/// starts summed, and the empty buckets between the first and the last filled in (leaves'
/// ranges may not overlap).
fn sum_buckets(mut buckets: Vec<(i64, u64)>, width: i64) -> Vec<(i64, u64)> {
    buckets.sort_unstable_by_key(|&(start, _)| start);
    let mut summed: Vec<(i64, u64)> = Vec::with_capacity(buckets.len());
    for (start, count) in buckets {
        match summed.last_mut() {
            Some(last) if last.0 == start => last.1 += count,
            _ => summed.push((start, count)),
        }
    }
    let (Some(first), Some(last)) = (summed.first(), summed.last()) else {
        return summed;
    };
    if width <= 0 {
        return summed;
    }
    let mut filled = Vec::with_capacity(((last.0 - first.0) / width + 1) as usize);
    let mut next = summed.iter().peekable();
    let mut start = first.0;
    while start <= last.0 {
        match next.peek() {
            Some(&&(at, count)) if at == start => {
                filled.push((start, count));
                next.next();
            }
            _ => filled.push((start, 0)),
        }
        start += width;
    }
    filled
}
