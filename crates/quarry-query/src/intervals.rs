//! Elasticsearch's `intervals` query: rules over the token positions of one text field.
//!
//! An interval is a span `[start, end]` of token positions in one field's value. Each rule
//! yields, per doc, its *minimal* intervals: no interval of the set holds another (the
//! minimal-interval semantics of Clarke, Cormack and Burkowski, "An algebra for structured
//! text search", and of Vigna's "Quasi-succinct indices" follow-up on efficient operators).
//! A set of minimal intervals sorted by start has strictly increasing starts and ends,
//! which every operator below relies on (`minimal` establishes it).
//!
//! | rule | intervals |
//! |---|---|
//! | a term | its positions, `[p, p]` |
//! | `prefix`, `wildcard`, `regexp`, `fuzzy` | the positions of every term of the field the pattern matches |
//! | `match` | its analyzed terms combined as `all_of` with its `mode` and `max_gaps` |
//! | `all_of` `ordered` | minimal spans of one interval per sub-rule, each starting after the previous one ends |
//! | `all_of` `unordered` | minimal spans of one interval per sub-rule, in any order, overlaps allowed |
//! | `all_of` `unordered_no_overlap` | sub-rules joined pairwise from the left: `(a, b)` is `a` before `b` or `b` before `a`, then that with `c`, and so on (Elasticsearch's nesting: `c` must lie outside the span of `a` and `b`) |
//! | `any_of` | the minimal intervals of the union |
//! | `max_gaps: n` | keeps the combined spans with at most `n` positions that no interval of a sub-rule lying inside the span covers (`-1`: no limit) |
//! | `filter` | keeps the intervals related to some interval of the filter rule (`containing`, `contained_by`, `overlapping`, `before`, `after`), or to none (`not_containing`, `not_contained_by`, `not_overlapping`) |
//!
//! A doc matches when the rule has an interval in it. Its score is a saturation of the
//! sloppy frequency `f`, the sum of `1 / (1 + end - start)` over its intervals:
//! `boost * f / (f + 1)`, always below the boost (narrower and more intervals score higher,
//! as Elasticsearch's do; its exact values may differ).
//!
//! Per block, a doc-level approximation (every term of an `all_of`, any of an `any_of`, as
//! conjunctions and unions of postings) proposes candidates; the rule is then evaluated
//! over the candidate's positions.

use crate::pattern::Pattern;
use crate::scorer::{inflate, BoxScorer, ConjunctionScorer, ConstScorer, Scorer, UnionScorer};
use crate::value_positions::{PositionSource, SharedValuePositions};
use crate::weight::{field_values, positioned_cursor};
use quarry_format::{BlockReader, DecodeError, PostingsCursor, TermKind, TERMINATED};
use quarry_store::mapping::AnalyzerName;
use std::fmt;
use std::sync::Arc;

/// `[start, end]`, token positions, both inclusive.
pub type Span = (u32, u32);

/// How `all_of` (and a `match` of several terms) combines its sub-rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Ordered,
    Unordered,
    UnorderedNoOverlap,
}

/// A `filter`'s relation between a rule's interval and the filter rule's intervals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Relation {
    Containing,
    ContainedBy,
    NotContaining,
    NotContainedBy,
    Overlapping,
    NotOverlapping,
    Before,
    After,
}

impl Relation {
    pub const ALL: [(&'static str, Relation); 8] = [
        ("containing", Relation::Containing),
        ("contained_by", Relation::ContainedBy),
        ("not_containing", Relation::NotContaining),
        ("not_contained_by", Relation::NotContainedBy),
        ("overlapping", Relation::Overlapping),
        ("not_overlapping", Relation::NotOverlapping),
        ("before", Relation::Before),
        ("after", Relation::After),
    ];

    /// Whether an interval is kept when some filter interval relates to it (a negated
    /// relation keeps it when none does).
    fn is_positive(self) -> bool {
        !matches!(
            self,
            Relation::NotContaining | Relation::NotContainedBy | Relation::NotOverlapping
        )
    }

    fn name(self) -> &'static str {
        Relation::ALL
            .iter()
            .find(|(_, r)| *r == self)
            .map_or("?", |(name, _)| name)
    }
}

/// An intervals rule whose leaves are `L`: `MatchText` as the DSL writes it, a term (a
/// `String`) once planned against the field's analyzer (query.rs).
#[derive(Debug, Clone, PartialEq)]
pub enum Rule<L> {
    Leaf(L),
    /// Terms of the field matched by a pattern (`prefix`, `wildcard`, `regexp`, `fuzzy`).
    Pattern(Arc<Pattern>),
    All {
        mode: Mode,
        /// `None`: any number of gaps.
        max_gaps: Option<u32>,
        rules: Vec<Rule<L>>,
    },
    /// No rule (an empty union) matches nothing.
    Any(Vec<Rule<L>>),
    Filtered {
        rule: Box<Rule<L>>,
        relation: Relation,
        filter: Box<Rule<L>>,
    },
}

/// A `match` rule's text and options, before analysis.
#[derive(Debug, Clone, PartialEq)]
pub struct MatchText {
    pub text: String,
    pub analyzer: Option<AnalyzerName>,
    pub mode: Mode,
    pub max_gaps: Option<u32>,
}

impl fmt::Display for MatchText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "match({:?}, {:?}, {:?})",
            self.text, self.mode, self.max_gaps
        )
    }
}

impl<L: fmt::Display> fmt::Display for Rule<L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let list = |f: &mut fmt::Formatter<'_>, rules: &[Rule<L>]| -> fmt::Result {
            for (i, rule) in rules.iter().enumerate() {
                if i > 0 {
                    write!(f, ", ")?;
                }
                write!(f, "{rule}")?;
            }
            Ok(())
        };
        match self {
            Rule::Leaf(leaf) => write!(f, "{leaf}"),
            Rule::Pattern(pattern) => write!(f, "{pattern}"),
            Rule::All {
                mode,
                max_gaps,
                rules,
            } => {
                write!(f, "all_of({mode:?}, {max_gaps:?}: ")?;
                list(f, rules)?;
                write!(f, ")")
            }
            Rule::Any(rules) => {
                write!(f, "any_of(")?;
                list(f, rules)?;
                write!(f, ")")
            }
            Rule::Filtered {
                rule,
                relation,
                filter,
            } => write!(f, "{rule} {} {filter}", relation.name()),
        }
    }
}

impl<L> Rule<L> {
    /// The same rule with each leaf replaced by `leaf(it)`.
    pub fn try_map<M, E>(
        &self,
        leaf: &mut impl FnMut(&L) -> Result<Rule<M>, E>,
    ) -> Result<Rule<M>, E> {
        let all = |rules: &[Rule<L>], leaf: &mut _| -> Result<Vec<Rule<M>>, E> {
            rules.iter().map(|r| r.try_map(leaf)).collect()
        };
        Ok(match self {
            Rule::Leaf(l) => leaf(l)?,
            Rule::Pattern(pattern) => Rule::Pattern(pattern.clone()),
            Rule::All {
                mode,
                max_gaps,
                rules,
            } => Rule::All {
                mode: *mode,
                max_gaps: *max_gaps,
                rules: all(rules, leaf)?,
            },
            Rule::Any(rules) => Rule::Any(all(rules, leaf)?),
            Rule::Filtered {
                rule,
                relation,
                filter,
            } => Rule::Filtered {
                rule: Box::new(rule.try_map(leaf)?),
                relation: *relation,
                filter: Box::new(filter.try_map(leaf)?),
            },
        })
    }

    /// Calls `leaf` and `pattern` for the leaves whose terms a match shows (not those of a
    /// negated filter), for highlighting.
    pub fn for_each_shown(
        &self,
        leaf: &mut impl FnMut(&L),
        pattern: &mut impl FnMut(&Arc<Pattern>),
    ) {
        match self {
            Rule::Leaf(l) => leaf(l),
            Rule::Pattern(p) => pattern(p),
            Rule::All { rules, .. } | Rule::Any(rules) => {
                rules.iter().for_each(|r| r.for_each_shown(leaf, pattern))
            }
            Rule::Filtered {
                rule,
                relation,
                filter,
            } => {
                rule.for_each_shown(leaf, pattern);
                if relation.is_positive() {
                    filter.for_each_shown(leaf, pattern);
                }
            }
        }
    }
}

/// The minimal spans of `spans`: sorted by start, with strictly increasing starts and ends,
/// none holding another.
pub fn minimal(mut spans: Vec<Span>) -> Vec<Span> {
    // By start descending, then end ascending: a span is minimal when its end is below every
    // end seen so far (spans starting later); of one start, only the first can be.
    spans.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut kept: Vec<Span> = Vec::with_capacity(spans.len());
    let mut least_end: Option<u32> = None;
    let mut i = 0;
    while i < spans.len() {
        let (start, end) = spans[i];
        if least_end.is_none_or(|least| end < least) {
            kept.push((start, end));
            least_end = Some(end);
        }
        while i < spans.len() && spans[i].0 == start {
            i += 1;
        }
    }
    kept.reverse();
    kept
}

/// Minimal spans of one interval per source, each starting after the previous one ends.
/// For each interval of the first source, the chain that ends earliest takes, from each
/// next source, the first interval starting after the chain's end (of minimal intervals,
/// that one also ends first); every other chain from that interval holds its span.
pub fn ordered(sources: &[&[Span]]) -> Vec<Span> {
    let Some((first, rest)) = sources.split_first() else {
        return Vec::new();
    };
    let mut spans = Vec::new();
    'starts: for &(start, end) in first.iter() {
        let mut last = end;
        for source in rest {
            let at = source.partition_point(|s| s.0 <= last);
            match source.get(at) {
                Some(&(_, end)) => last = end,
                // A later first interval ends later still: no chain from it either.
                None => break 'starts,
            }
        }
        spans.push((start, last));
    }
    minimal(spans)
}

/// Minimal spans of one interval per source, in any order, overlaps allowed. A minimal span
/// starts where some interval starts; from such a start `s`, the tightest choice takes from
/// each source the first interval starting at or after `s` (the one that ends first).
pub fn unordered(sources: &[&[Span]]) -> Vec<Span> {
    if sources.is_empty() || sources.iter().any(|s| s.is_empty()) {
        return Vec::new();
    }
    let mut starts: Vec<u32> = sources.iter().flat_map(|s| s.iter().map(|i| i.0)).collect();
    starts.sort_unstable();
    starts.dedup();
    let mut spans = Vec::new();
    'starts: for s in starts {
        let (mut low, mut high) = (u32::MAX, 0);
        for source in sources {
            let at = source.partition_point(|i| i.0 < s);
            match source.get(at) {
                Some(&(start, end)) => {
                    low = low.min(start);
                    high = high.max(end);
                }
                None => break 'starts,
            }
        }
        spans.push((low, high));
    }
    minimal(spans)
}

/// Sources joined pairwise from the left, each pair's intervals not overlapping (either
/// order), as Elasticsearch nests its `unordered_no_overlap`.
pub fn unordered_no_overlap(sources: &[&[Span]]) -> Vec<Span> {
    let Some((first, rest)) = sources.split_first() else {
        return Vec::new();
    };
    let mut joined = first.to_vec();
    for source in rest {
        let mut both = ordered(&[&joined, source]);
        both.extend(ordered(&[source, &joined]));
        joined = minimal(both);
    }
    joined
}

/// Positions of `span` that no interval of `sources` lying inside it covers.
pub fn gaps(span: Span, sources: &[&[Span]]) -> u64 {
    let mut inside: Vec<Span> = Vec::new();
    for source in sources {
        let at = source.partition_point(|i| i.0 < span.0);
        // Ends increase with starts: the intervals inside are a run from `at`.
        inside.extend(source[at..].iter().take_while(|i| i.1 <= span.1));
    }
    inside.sort_unstable();
    let mut covered = 0u64;
    let mut next = u64::from(span.0);
    for (start, end) in inside {
        let (start, end) = (u64::from(start), u64::from(end));
        if end >= next {
            covered += end - start.max(next) + 1;
            next = end + 1;
        }
    }
    u64::from(span.1) - u64::from(span.0) + 1 - covered
}

/// `sources` combined by `mode`, keeping spans with at most `max_gaps` gaps.
pub fn combine(mode: Mode, max_gaps: Option<u32>, sources: &[&[Span]]) -> Vec<Span> {
    let mut spans = match mode {
        Mode::Ordered => ordered(sources),
        Mode::Unordered => unordered(sources),
        Mode::UnorderedNoOverlap => unordered_no_overlap(sources),
    };
    if let Some(max_gaps) = max_gaps {
        spans.retain(|&span| gaps(span, sources) <= u64::from(max_gaps));
    }
    spans
}

/// The union of minimal interval sets, minimal.
pub fn any(sources: &[&[Span]]) -> Vec<Span> {
    minimal(sources.iter().flat_map(|s| s.iter().copied()).collect())
}

/// The spans of `spans` that `relation` keeps against the filter's spans (both minimal).
pub fn filtered(spans: &[Span], relation: Relation, filter: &[Span]) -> Vec<Span> {
    let related = |&(start, end): &Span| -> bool {
        match relation {
            // The first filter interval starting at or after `start` ends first.
            Relation::Containing | Relation::NotContaining => {
                let at = filter.partition_point(|f| f.0 < start);
                filter.get(at).is_some_and(|f| f.1 <= end)
            }
            // The last filter interval starting at or before `start` ends last.
            Relation::ContainedBy | Relation::NotContainedBy => {
                let at = filter.partition_point(|f| f.0 <= start);
                at > 0 && filter[at - 1].1 >= end
            }
            Relation::Overlapping | Relation::NotOverlapping => {
                let at = filter.partition_point(|f| f.0 <= end);
                at > 0 && filter[at - 1].1 >= start
            }
            Relation::Before => filter.last().is_some_and(|f| f.0 > end),
            Relation::After => filter.first().is_some_and(|f| f.1 < start),
        }
    };
    let keep = relation.is_positive();
    spans
        .iter()
        .copied()
        .filter(|s| related(s) == keep)
        .collect()
}

/// A planned rule in one block: cursors with positions at its leaves.
pub enum Node<'a> {
    /// The positions of any of these terms (one term, or a pattern's expansion), each from
    /// its source.
    Positions(Vec<(PostingsCursor<'a>, PositionSource<'a>)>),
    All {
        mode: Mode,
        max_gaps: Option<u32>,
        nodes: Vec<Node<'a>>,
    },
    Any(Vec<Node<'a>>),
    Filtered {
        node: Box<Node<'a>>,
        relation: Relation,
        /// `None`: the filter rule has no interval in this block.
        filter: Option<Box<Node<'a>>>,
    },
}

impl<'a> Node<'a> {
    /// The node of `rule` over `field` (ordinal `ordinal`) of `block` with the doc-level
    /// approximation of its matches, or `None` when nothing in the block can match.
    /// `expand` gives a pattern's terms in the block.
    pub fn build(
        rule: &'a Rule<String>,
        block: &'a BlockReader,
        ordinal: u16,
        expand: &mut impl FnMut(&'a Arc<Pattern>) -> quarry_format::Result<Vec<quarry_format::TermInfo>>,
        values: &mut Option<SharedValuePositions<'a>>,
    ) -> quarry_format::Result<Option<(Node<'a>, BoxScorer<'a>)>> {
        Ok(match rule {
            Rule::Leaf(term) => {
                match block.term_info(ordinal, TermKind::Token, term.as_bytes())? {
                    None => None,
                    Some(info) => Some((
                        Node::Positions(vec![positioned_cursor(
                            block,
                            ordinal,
                            &info,
                            term.as_bytes(),
                            values,
                        )?]),
                        Box::new(ConstScorer {
                            cursor: block.postings(&info)?,
                        }) as BoxScorer,
                    )),
                }
            }
            Rule::Pattern(pattern) => {
                let infos = expand(pattern)?;
                let Some(approximation) = crate::filter::postings_union(block, &infos)? else {
                    return Ok(None);
                };
                // Terms without positions (their field keeps them in its values) read the
                // positions of every token the pattern matches in the doc's value: the
                // expansion's terms are those tokens.
                let mut from_values: Option<(SharedValuePositions<'a>, usize)> = None;
                let mut cursors = Vec::with_capacity(infos.len());
                for info in &infos {
                    if info.has_positions {
                        cursors
                            .push((block.postings_with_positions(info)?, PositionSource::Stored));
                        continue;
                    }
                    let (shared, index) = match &from_values {
                        Some((shared, index)) => (shared.clone(), *index),
                        None => {
                            let shared = field_values(block, ordinal, values)?;
                            let index = shared.borrow_mut().want_pattern(pattern.clone());
                            from_values = Some((shared.clone(), index));
                            (shared, index)
                        }
                    };
                    let source = PositionSource::Pattern(shared, index);
                    cursors.push((block.postings(info)?, source));
                }
                Some((Node::Positions(cursors), approximation))
            }
            Rule::All {
                mode,
                max_gaps,
                rules,
            } => {
                let mut nodes = Vec::with_capacity(rules.len());
                let mut approximations = Vec::with_capacity(rules.len());
                for rule in rules {
                    let Some((node, approximation)) =
                        Node::build(rule, block, ordinal, expand, values)?
                    else {
                        return Ok(None);
                    };
                    nodes.push(node);
                    approximations.push(approximation);
                }
                let approximation: BoxScorer = match approximations.len() {
                    0 => return Ok(None),
                    1 => approximations.pop().expect("one approximation"),
                    _ => Box::new(ConjunctionScorer::new(approximations)),
                };
                Some((
                    Node::All {
                        mode: *mode,
                        max_gaps: *max_gaps,
                        nodes,
                    },
                    approximation,
                ))
            }
            Rule::Any(rules) => {
                let mut nodes = Vec::with_capacity(rules.len());
                let mut approximations = Vec::with_capacity(rules.len());
                for rule in rules {
                    if let Some((node, approximation)) =
                        Node::build(rule, block, ordinal, expand, values)?
                    {
                        nodes.push(node);
                        approximations.push(approximation);
                    }
                }
                let approximation: BoxScorer = match approximations.len() {
                    0 => return Ok(None),
                    1 => approximations.pop().expect("one approximation"),
                    _ => Box::new(UnionScorer::new(approximations)),
                };
                Some((Node::Any(nodes), approximation))
            }
            Rule::Filtered {
                rule,
                relation,
                filter,
            } => {
                let Some((node, approximation)) =
                    Node::build(rule, block, ordinal, expand, values)?
                else {
                    return Ok(None);
                };
                let filter = Node::build(filter, block, ordinal, expand, values)?;
                let (filter, approximation) = match filter {
                    None if relation.is_positive() => return Ok(None),
                    None => (None, approximation),
                    Some((filter, with)) if relation.is_positive() => (
                        Some(Box::new(filter)),
                        Box::new(ConjunctionScorer::new(vec![approximation, with])) as BoxScorer,
                    ),
                    Some((filter, _)) => (Some(Box::new(filter)), approximation),
                };
                Some((
                    Node::Filtered {
                        node: Box::new(node),
                        relation: *relation,
                        filter,
                    },
                    approximation,
                ))
            }
        })
    }

    /// The node's minimal intervals in `doc` (docs are asked for in increasing order).
    pub fn spans(&mut self, doc: u32, scratch: &mut Vec<u32>) -> Result<Vec<Span>, DecodeError> {
        Ok(match self {
            Node::Positions(cursors) => {
                let mut spans = Vec::new();
                for (cursor, source) in cursors.iter_mut() {
                    if cursor.doc() < doc {
                        cursor.seek(doc);
                    }
                    if cursor.doc() == doc {
                        source.read(cursor, scratch)?;
                        spans.extend(scratch.iter().map(|&p| (p, p)));
                    }
                }
                if cursors.len() > 1 {
                    spans.sort_unstable();
                    spans.dedup();
                }
                spans
            }
            Node::All {
                mode,
                max_gaps,
                nodes,
            } => {
                let mut sources = Vec::with_capacity(nodes.len());
                for node in nodes.iter_mut() {
                    let spans = node.spans(doc, scratch)?;
                    if spans.is_empty() {
                        return Ok(Vec::new());
                    }
                    sources.push(spans);
                }
                let sources: Vec<&[Span]> = sources.iter().map(Vec::as_slice).collect();
                combine(*mode, *max_gaps, &sources)
            }
            Node::Any(nodes) => {
                let mut sources = Vec::with_capacity(nodes.len());
                for node in nodes.iter_mut() {
                    sources.push(node.spans(doc, scratch)?);
                }
                let sources: Vec<&[Span]> = sources.iter().map(Vec::as_slice).collect();
                any(&sources)
            }
            Node::Filtered {
                node,
                relation,
                filter,
            } => {
                let spans = node.spans(doc, scratch)?;
                if spans.is_empty() {
                    return Ok(spans);
                }
                let filter = match filter {
                    Some(filter) => filter.spans(doc, scratch)?,
                    None => Vec::new(),
                };
                filtered(&spans, *relation, &filter)
            }
        })
    }

    fn error(&self) -> Option<DecodeError> {
        match self {
            Node::Positions(cursors) => cursors.iter().find_map(|(cursor, _)| cursor.error()),
            Node::All { nodes, .. } | Node::Any(nodes) => nodes.iter().find_map(Node::error),
            Node::Filtered { node, filter, .. } => node
                .error()
                .or_else(|| filter.as_ref().and_then(|f| f.error())),
        }
    }
}

/// The sloppy frequency of a doc's intervals (the module doc).
pub fn sloppy_freq(spans: &[Span]) -> f32 {
    spans
        .iter()
        .map(|&(start, end)| 1.0 / (1.0 + (end - start) as f32))
        .sum()
}

/// Docs where an intervals rule has an interval, scored by `boost * f / (f + 1)`.
pub struct IntervalsScorer<'a> {
    node: Node<'a>,
    approximation: BoxScorer<'a>,
    boost: f32,
    doc: u32,
    freq: f32,
    scratch: Vec<u32>,
    error: Option<DecodeError>,
}

impl<'a> IntervalsScorer<'a> {
    pub fn new(node: Node<'a>, approximation: BoxScorer<'a>, boost: f32) -> Self {
        let mut scorer = IntervalsScorer {
            node,
            approximation,
            boost,
            doc: 0,
            freq: 0.0,
            scratch: Vec::new(),
            error: None,
        };
        let first = scorer.approximation.doc();
        scorer.doc = scorer.next_match(first);
        scorer
    }

    /// The first match at or after the approximation's doc `doc`.
    fn next_match(&mut self, mut doc: u32) -> u32 {
        while doc != TERMINATED {
            match self.node.spans(doc, &mut self.scratch) {
                Ok(spans) if spans.is_empty() => doc = self.approximation.advance(),
                Ok(spans) => {
                    self.freq = sloppy_freq(&spans);
                    return doc;
                }
                Err(e) => {
                    self.error = Some(e);
                    return TERMINATED;
                }
            }
        }
        TERMINATED
    }
}

impl Scorer for IntervalsScorer<'_> {
    fn doc(&self) -> u32 {
        self.doc
    }
    fn advance(&mut self) -> u32 {
        if self.doc == TERMINATED {
            return TERMINATED;
        }
        let next = self.approximation.advance();
        self.doc = self.next_match(next);
        self.doc
    }
    fn seek(&mut self, target: u32) -> u32 {
        if self.doc >= target {
            return self.doc;
        }
        let next = self.approximation.seek(target);
        self.doc = self.next_match(next);
        self.doc
    }
    fn score(&mut self) -> f32 {
        self.boost * self.freq / (self.freq + 1.0)
    }
    fn max_score(&self) -> f32 {
        inflate(self.boost)
    }
    fn cost(&self) -> u64 {
        self.approximation.cost()
    }
    fn error(&self) -> Option<DecodeError> {
        self.error
            .or_else(|| self.approximation.error())
            .or_else(|| self.node.error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn positions(words: &str, word: &str) -> Vec<Span> {
        words
            .split(' ')
            .enumerate()
            .filter(|(_, w)| *w == word)
            .map(|(i, _)| (i as u32, i as u32))
            .collect()
    }

    #[test]
    fn minimal_drops_spans_holding_others() {
        assert_eq!(
            minimal(vec![(0, 5), (1, 3), (1, 4), (2, 3), (4, 6), (4, 6)]),
            vec![(2, 3), (4, 6)]
        );
    }

    #[test]
    fn modes_combine_terms() {
        let text = "outside it is cold and wet";
        let (cold, outside) = (positions(text, "cold"), positions(text, "outside"));
        assert_eq!(ordered(&[&cold, &outside]), vec![]);
        assert_eq!(unordered(&[&cold, &outside]), vec![(0, 3)]);
        assert_eq!(
            combine(Mode::Unordered, Some(1), &[&cold, &outside]),
            vec![]
        );
        assert_eq!(
            combine(Mode::Unordered, Some(2), &[&cold, &outside]),
            vec![(0, 3)]
        );
        // Elasticsearch's nesting: `it` must lie outside the span of `cold` and `wet`.
        let text = "cold rain makes it wet";
        let (cold, wet, it) = (
            positions(text, "cold"),
            positions(text, "wet"),
            positions(text, "it"),
        );
        assert_eq!(unordered(&[&cold, &wet, &it]), vec![(0, 4)]);
        assert_eq!(unordered_no_overlap(&[&cold, &wet, &it]), vec![]);
        assert_eq!(unordered_no_overlap(&[&cold, &it, &wet]), vec![(0, 4)]);
    }

    #[test]
    fn filters_relate_spans() {
        let spans = [(0, 3), (5, 6)];
        let table: &[(Relation, &[Span], &[Span])] = &[
            (Relation::Containing, &[(1, 1)], &[(0, 3)]),
            (Relation::NotContaining, &[(1, 1)], &[(5, 6)]),
            (Relation::ContainedBy, &[(4, 7)], &[(5, 6)]),
            (Relation::NotContainedBy, &[(4, 7)], &[(0, 3)]),
            (Relation::Overlapping, &[(3, 4)], &[(0, 3)]),
            (Relation::NotOverlapping, &[(3, 4)], &[(5, 6)]),
            (Relation::Before, &[(4, 4)], &[(0, 3)]),
            (Relation::After, &[(4, 4)], &[(5, 6)]),
            (Relation::NotContaining, &[], &[(0, 3), (5, 6)]),
        ];
        for (relation, filter, kept) in table {
            assert_eq!(filtered(&spans, *relation, filter), *kept, "{relation:?}");
        }
    }
}
