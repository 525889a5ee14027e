//! One search request and one response for every front end (the CLI now; the HTTP API and a
//! cluster leaf later): query text, time range, sort, limit, cursor, count, histogram and
//! aggregations in; hits with their events, count, buckets, aggregations and warnings out.
//! Front ends translate into a `SearchRequest` and print a `SearchResponse`; they assemble
//! nothing themselves (STYLE.md, "Requests and snapshots").

use crate::agg_tree::{AggNode, AggResult, TreePartial};
use crate::aggregation::AggPartial;
use crate::aggregation::AggSpec;
use crate::cursor::Cursor;
use crate::error::Result;
use crate::field_sort::{FieldSort, SortCursor};
use crate::leaf::{merge_answers, LeafRequest, PartialHit};
use crate::parser::Ast;
use crate::searcher::{Searcher, SortOrder};
use quarry_format::Value;
use std::path::PathBuf;

/// A histogram's bucket width.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HistogramInterval {
    /// Nanoseconds.
    Fixed(i64),
    /// About 100 buckets over the query's time range, or over its matches when it has none.
    Auto,
}

/// Buckets `auto` aims at.
pub const AUTO_BUCKETS: i64 = 100;

#[derive(Debug, Clone)]
pub struct SearchRequest {
    /// The query text (parser.rs).
    pub query: String,
    /// The query as a tree already (from Elasticsearch's DSL, dsl.rs); used instead of
    /// `query` when set.
    pub ast: Option<crate::parser::Ast>,
    /// Only events with `start <= _time < end` (ns; `i64::MIN` / `i64::MAX` for no bound).
    pub start: i64,
    pub end: i64,
    pub sort: SortOrder,
    /// Sort by this field's value instead (`sort` is then not used).
    pub sort_field: Option<FieldSort>,
    /// With `sort_field`: continue after this hit (`search_after`).
    pub sort_after: Option<SortCursor>,
    /// Hits to return, with their events.
    pub limit: usize,
    /// For time sorts: continue after this hit (`search_after`).
    pub after: Option<Cursor>,
    /// Also count every match.
    pub count: bool,
    pub histogram: Option<HistogramInterval>,
    /// Over every match, or per bucket with a histogram.
    pub aggregations: Vec<AggSpec>,
    /// Nested aggregations (agg_tree.rs), over every match, in one pass.
    pub tree: Vec<AggNode>,
}

impl Default for SearchRequest {
    fn default() -> Self {
        SearchRequest {
            query: "*".to_owned(),
            ast: None,
            start: i64::MIN,
            end: i64::MAX,
            sort: SortOrder::default(),
            sort_field: None,
            sort_after: None,
            limit: 10,
            after: None,
            count: false,
            histogram: None,
            aggregations: Vec::new(),
            tree: Vec::new(),
        }
    }
}

/// One hit with its event (every field but `_time`).
#[derive(Debug, Clone, PartialEq)]
pub struct HitEvent {
    pub time: i64,
    /// BM25 score, for relevance sorts.
    pub score: Option<f32>,
    /// For time sorts: where the next page starts (`after`).
    pub cursor: Option<Cursor>,
    /// For field sorts: the hit's value and where the next page starts (`sort_after`).
    pub sort_cursor: Option<SortCursor>,
    /// Where the event is, in any sort: its time, block id and doc (a searcher made by
    /// `Searcher::union` tells from the block id which part it came from).
    pub location: Cursor,
    pub event: Vec<(String, Value)>,
    /// The names of the query's named clauses (`Ast::Named`) the event matches, in the
    /// order the query names them.
    pub matched: Vec<String>,
}

/// One histogram bucket: its start (ns), its matches, and with aggregations their results.
#[derive(Debug, Clone, PartialEq)]
pub struct Bucket {
    pub start: i64,
    pub count: u64,
    pub aggregations: Option<serde_json::Map<String, serde_json::Value>>,
}

/// Something the answer stands despite, which the user should hear about.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Warning {
    /// Field names the query uses that no block has: those clauses match nothing.
    UnknownFields { names: Vec<String> },
    /// A block left out because it is damaged (a checksum, a decode): the answer is partial.
    DamagedBlock { path: PathBuf, error: String },
    /// A block left out because it could not be read now (its store did not answer, or a
    /// node did not find it): not damaged, and a later answer reads it again. Partial too.
    BlockUnavailable { path: PathBuf, error: String },
    /// A node of a distributed search that did not answer: the answer lacks its data.
    LeafUnavailable { leaf: String, error: String },
}

impl Warning {
    /// The warning for a block left out of an answer: damaged, or only unreadable now.
    pub fn left_out(block: crate::searcher::DamagedBlock) -> Warning {
        let (path, error) = (block.path, block.error);
        if block.unreadable {
            Warning::BlockUnavailable { path, error }
        } else {
            Warning::DamagedBlock { path, error }
        }
    }
}

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Warning::UnknownFields { names } => {
                let names: Vec<String> = names.iter().map(|n| format!("{n:?}")).collect();
                write!(
                    f,
                    "no block has the field{} {}; the query matches nothing there",
                    if names.len() == 1 { "" } else { "s" },
                    names.join(", ")
                )
            }
            Warning::DamagedBlock { error, .. } => write!(f, "skipped damaged block: {error}"),
            Warning::BlockUnavailable { error, .. } => {
                write!(f, "skipped a block that could not be read now: {error}")
            }
            Warning::LeafUnavailable { leaf, error } => {
                write!(f, "node {leaf} did not answer: {error}")
            }
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct SearchResponse {
    pub hits: Vec<HitEvent>,
    /// With `count`.
    pub count: Option<u64>,
    /// With a histogram: every bucket from the first match's to the last's.
    pub histogram: Option<Vec<Bucket>>,
    /// With aggregations and no histogram.
    pub aggregations: Option<serde_json::Map<String, serde_json::Value>>,
    /// With a `tree`: one result per node.
    pub tree: Option<Vec<AggResult>>,
    pub warnings: Vec<Warning>,
}

impl SearchResponse {
    /// Whether blocks were left out of the answer.
    pub fn is_partial(&self) -> bool {
        self.warnings.iter().any(|w| {
            matches!(
                w,
                Warning::DamagedBlock { .. }
                    | Warning::BlockUnavailable { .. }
                    | Warning::LeafUnavailable { .. }
            )
        })
    }
}

impl Searcher {
    /// Answers a request. A block that fails while read is left out and the whole answer is
    /// computed again without it, from a copy of this snapshot (`skip_damaged`), so every part
    /// of the response is over the same blocks; the response's warnings name each block left
    /// out (here or when the snapshot was opened).
    pub fn execute(&self, request: &SearchRequest) -> Result<SearchResponse> {
        let (mut response, damaged) = match self.answer(request) {
            Ok(response) => (response, self.damaged().to_vec()),
            Err(error) => {
                let mut snapshot = self.clone();
                if !snapshot.leave_out_block_of(&error) {
                    return Err(error);
                }
                let response = snapshot.skip_damaged(|searcher| searcher.answer(request))?;
                (response, snapshot.damaged().to_vec())
            }
        };
        response
            .warnings
            .extend(damaged.into_iter().map(Warning::left_out));
        Ok(response)
    }

    fn answer(&self, request: &SearchRequest) -> Result<SearchResponse> {
        let query = match &request.ast {
            Some(ast) => self.plan(ast)?,
            None => self.parse(&request.query)?,
        };
        let query = query.within(request.start, request.end);
        let mut response = SearchResponse::default();
        let unknown = self.unknown_fields(&query);
        if !unknown.is_empty() {
            response
                .warnings
                .push(Warning::UnknownFields { names: unknown });
        }
        let interval = match request.histogram {
            None => None,
            Some(HistogramInterval::Fixed(interval)) => Some(interval),
            Some(HistogramInterval::Auto) => Some(self.auto_interval(&query, AUTO_BUCKETS)?),
        };
        // One leaf and the root (leaf.rs): this searcher's partial answer, merged (here
        // alone), then fetched; a cluster runs the same steps over several leaves.
        let leaf = LeafRequest {
            limit: request.limit,
            sort: request.sort,
            after: request.after,
            sort_field: request.sort_field.clone(),
            sort_after: request.sort_after.clone(),
            count: request.count,
            histogram: interval,
            aggregations: request.aggregations.clone(),
            tree: request.tree.clone(),
        };
        let merged = merge_answers(&leaf, [self.leaf_answer(&query, &leaf, None)?]);
        let events = self.fetch_partial(&merged.hits)?;
        let (count, histogram, aggregations) =
            finish(&leaf, merged.count, merged.histogram, merged.aggregations)?;
        response.count = count;
        response.histogram = histogram;
        response.aggregations = aggregations;
        if !request.tree.is_empty() {
            let tree = merged
                .tree
                .unwrap_or_else(|| TreePartial::empty(&request.tree));
            response.tree = Some(tree.results(&request.tree));
        }
        response.hits = merged
            .hits
            .into_iter()
            .zip(events)
            .map(|(hit, event)| hit_event(request.sort, hit, event))
            .collect();
        if let Some(ast) = &request.ast {
            let mut named = Vec::new();
            named_clauses(ast, &mut named);
            let at: Vec<Cursor> = response.hits.iter().map(|h| h.location).collect();
            for (name, clause) in named {
                let query = self.plan(clause)?;
                for (hit, matches) in response.hits.iter_mut().zip(self.which_match(&query, &at)?) {
                    if matches && !hit.matched.iter().any(|m| m == name) {
                        hit.matched.push(name.clone());
                    }
                }
            }
        }
        Ok(response)
    }
}

/// A merged partial hit and its event as a response has them.
pub fn hit_event(sort: SortOrder, hit: PartialHit, event: Vec<(String, Value)>) -> HitEvent {
    let location = Cursor {
        time: hit.time,
        block_id: hit.block,
        doc: hit.doc,
    };
    let sort_cursor = hit.sort_cursor();
    HitEvent {
        time: hit.time,
        score: hit.score,
        cursor: (sort != SortOrder::Relevance && sort_cursor.is_none()).then_some(location),
        sort_cursor,
        location,
        event,
        matched: Vec::new(),
    }
}

/// The parts of a response a root makes from merged leaf answers to `leaf`: the count, the
/// histogram (from the aggregation states' groups when there are aggregations), and the
/// aggregations overall.
#[allow(clippy::type_complexity)]
pub fn finish(
    leaf: &LeafRequest,
    count: Option<u64>,
    histogram: Option<Vec<(i64, u64)>>,
    aggregations: Option<AggPartial>,
) -> Result<(
    Option<u64>,
    Option<Vec<Bucket>>,
    Option<serde_json::Map<String, serde_json::Value>>,
)> {
    let specs = &leaf.aggregations;
    let partial = || aggregations.unwrap_or_else(|| AggPartial::empty(leaf.histogram));
    let (histogram, aggregations) = match (leaf.histogram, specs.is_empty()) {
        (Some(_), true) => (
            Some(
                histogram
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(start, count)| Bucket {
                        start,
                        count,
                        aggregations: None,
                    })
                    .collect(),
            ),
            None,
        ),
        (Some(_), false) => (
            Some(
                partial()
                    .buckets(specs)?
                    .into_iter()
                    .map(|(start, count, aggregations)| Bucket {
                        start,
                        count,
                        aggregations: Some(aggregations),
                    })
                    .collect(),
            ),
            None,
        ),
        (None, false) => (None, Some(partial().overall(specs))),
        (None, true) => (None, None),
    };
    Ok((count, histogram, aggregations))
}

/// The query's named clauses (`Ast::Named`), outermost first, in the order written.
pub fn named_clauses<'a>(ast: &'a Ast, out: &mut Vec<(&'a String, &'a Ast)>) {
    match ast {
        Ast::Named { name, inner } => {
            out.push((name, inner));
            named_clauses(inner, out);
        }
        Ast::Bool(clauses) => clauses.iter().for_each(|(_, c)| named_clauses(c, out)),
        Ast::AtLeast { clauses, .. } => clauses.iter().for_each(|c| named_clauses(c, out)),
        Ast::Boost { inner, .. } | Ast::Lenient(inner) | Ast::Constant { inner, .. } => {
            named_clauses(inner, out)
        }
        Ast::TypedRange { otherwise, .. } => named_clauses(otherwise, out),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::searcher::DamagedBlock;

    /// A block left out is named as damaged only when it is: one that could not be read now
    /// (an i/o error, a block a node did not find) is `BlockUnavailable`; both make the
    /// answer partial.
    #[test]
    fn blocks_left_out_are_damaged_or_unavailable() {
        let io = quarry_format::FormatError::Io {
            path: "b/00000007.qb".into(),
            source: std::io::Error::other("connection refused"),
        };
        let unreadable = DamagedBlock::of(Some(7), "b/00000007.qb".into(), &io);
        let warning = Warning::left_out(unreadable);
        assert!(
            matches!(warning, Warning::BlockUnavailable { .. }),
            "{warning:?}"
        );
        assert!(
            warning.to_string().contains("could not be read now"),
            "{warning}"
        );
        let damaged = DamagedBlock {
            block: Some(8),
            path: "b/00000008.qb".into(),
            error: "checksum mismatch".into(),
            unreadable: false,
        };
        assert!(matches!(
            Warning::left_out(damaged),
            Warning::DamagedBlock { .. }
        ));
        for warning in [
            Warning::BlockUnavailable {
                path: "x".into(),
                error: "e".into(),
            },
            Warning::DamagedBlock {
                path: "x".into(),
                error: "e".into(),
            },
        ] {
            let response = SearchResponse {
                warnings: vec![warning],
                ..SearchResponse::default()
            };
            assert!(response.is_partial());
        }
        assert!(!SearchResponse::default().is_partial());
    }
}
