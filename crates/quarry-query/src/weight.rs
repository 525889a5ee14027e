//! Weights: a query with its collection statistics folded in (idf, per-field norm caches),
//! computed once per search over all blocks, then turned into a scorer per block.

use crate::bm25::{self, Bm25Params, FieldStats};
use crate::filter::{self, DocRangeScorer, Optimizations, TimeLookup};
use crate::query::Query;
use crate::range::NumericRange;
use crate::scorer::*;
use crate::value_positions::{PositionSource, SharedValuePositions, ValuePositions};
use quarry_format::limits::EXACT_TERM_LEN;
use quarry_format::{BlockReader, Result, TermInfo, TermKind};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, OnceLock};

#[derive(Debug, Clone)]
pub enum Weight {
    Term {
        field: String,
        term: String,
        weight: f32,
        /// Whether its scores count: an unscored search reads no norms (a remote block would
        /// fetch them for nothing).
        scored: bool,
        cache: Arc<[f32; 256]>,
        /// The term in each block (by block position), looked up once while gathering stats.
        infos: BlockTermInfos,
    },
    Phrase {
        field: String,
        /// (relative position, term, the term in each block)
        terms: Vec<(u32, String, BlockTermInfos)>,
        slop: u32,
        weight: f32,
        /// As for `Term`.
        scored: bool,
        cache: Arc<[f32; 256]>,
    },
    Exact {
        field: String,
        value: String,
        /// See `Query::Exact`: non-empty only for values without an exact term.
        tokens: Vec<String>,
        /// What each match scores: the value's idf over the field (a keyword's `term` in
        /// Elasticsearch: one occurrence, no length norm, so BM25 is the idf), times any boost;
        /// 0 where the query is not scored.
        weight: f32,
    },
    Pattern {
        field: String,
        pattern: Arc<crate::pattern::Pattern>,
        /// Tokens or whole values (see `Query::Pattern`).
        terms: TermKind,
        /// The expansion cache and the trigram index are used where these allow them.
        optimizations: crate::filter::Optimizations,
    },
    /// `Query::WholeValues`.
    WholeValues {
        field: String,
        pattern: Arc<crate::pattern::Pattern>,
        max_chars: Option<u32>,
        long_values: bool,
        optimizations: Optimizations,
    },
    /// `Query::Intervals`, its scores times `boost`.
    Intervals {
        field: String,
        rule: Arc<crate::intervals::Rule<String>>,
        boost: f32,
        optimizations: Optimizations,
    },
    Any(Vec<Weight>),
    /// At least `minimum` of the clauses (`Query::AtLeast`).
    AtLeast {
        clauses: Vec<Weight>,
        minimum: usize,
    },
    /// The docs of `inner`, each scored `score` (`Query::Constant`).
    Constant {
        inner: Box<Weight>,
        score: f32,
    },
    /// Filters (score 0); they carry the optimizations their scorers may use.
    TimeRange {
        start: i64,
        end: i64,
        optimizations: Optimizations,
    },
    Range {
        field: String,
        range: NumericRange,
        optimizations: Optimizations,
        /// Check docs against the doc values as they are asked for, instead of finding all
        /// the block's matches first (`with_checked_ranges`: time-sorted searches).
        checked: bool,
    },
    /// A range of the field's number terms (`Query::IndexedRange`).
    IndexedRange {
        field: String,
        range: NumericRange,
    },
    Exists {
        field: String,
    },
    /// `Query::ContentId`.
    ContentId {
        time: i64,
        hash: u64,
    },
    Bool {
        must: Vec<Weight>,
        should: Vec<Weight>,
        must_not: Vec<Weight>,
    },
    /// Listed docs, a sorted list per block by position (a searcher's deleted docs, which
    /// every search excludes: `Searcher::with_deleted`).
    Docs(Arc<[Option<Arc<[u32]>>]>),
    All,
    Nothing,
}

/// Where a term is in one block: (field ordinal, term info), `None` where it is absent.
type TermInBlock = Option<(u16, TermInfo)>;

/// Where a term is in each block (by block position): (field ordinal, term info), `None`
/// where it is absent. Scored searches look every block up while gathering statistics (idf
/// needs them all); filters look a block up when it is first asked for, so a tail that stops
/// in its newest block reads no other block's term dictionary.
#[derive(Debug, Clone)]
pub struct BlockTermInfos(Arc<[OnceLock<TermInBlock>]>);

impl BlockTermInfos {
    fn unresolved(blocks: usize) -> BlockTermInfos {
        BlockTermInfos((0..blocks).map(|_| OnceLock::new()).collect())
    }

    fn resolved(infos: Vec<TermInBlock>) -> BlockTermInfos {
        BlockTermInfos(infos.into_iter().map(OnceLock::from).collect())
    }

    /// `term` of `field` in `block`, at position `index` among the blocks the weight was
    /// built for (`None` past them).
    pub fn get(
        &self,
        index: usize,
        block: &BlockReader,
        field: &str,
        term: &str,
    ) -> Result<TermInBlock> {
        let Some(slot) = self.0.get(index) else {
            return Ok(None);
        };
        if let Some(found) = slot.get() {
            return Ok(*found);
        }
        let found = look_up(block, field, term)?;
        // Another thread may have set it meanwhile, to the same value.
        let _ = slot.set(found);
        Ok(found)
    }
}

fn look_up(block: &BlockReader, field: &str, term: &str) -> Result<TermInBlock> {
    let Some(ordinal) = block.field_ordinal(field) else {
        return Ok(None);
    };
    Ok(block
        .term_info(ordinal, TermKind::Token, term.as_bytes())?
        .map(|info| (ordinal, info)))
}

/// Statistics over all blocks, gathered for the terms of one query, with each term's info
/// per block so scorers need no second term-dictionary lookup.
#[derive(Debug, Default)]
pub struct CollectionStats {
    pub fields: HashMap<String, FieldStats>,
    pub doc_freqs: HashMap<(String, String), u64>,
    pub term_infos: HashMap<(String, String), BlockTermInfos>,
    /// The docs holding each scored whole value (`Query::Exact`), and the docs holding a
    /// value of each such field: its idf.
    pub exact_freqs: HashMap<(String, String), u64>,
    pub exact_docs: HashMap<String, u64>,
    /// Gathered for a scored search (`gather`), not an unscored one (`unscored`).
    pub scored: bool,
}

/// The collection-wide part of [`CollectionStats`]: what BM25 needs beyond one block for one
/// query's terms. Leaves of a distributed search gather it over their blocks, the root sums it
/// ([`GlobalStats::merge`]) and every leaf scores with the sum (leaf.rs), so a hit scores the
/// same whichever leaf holds it.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct GlobalStats {
    /// Per field: docs with the field and tokens in it.
    pub fields: BTreeMap<String, FieldStats>,
    /// Per field, per term: the docs holding it.
    pub doc_freqs: BTreeMap<String, BTreeMap<String, u64>>,
    /// Per field, per scored whole value (`Query::Exact`): the docs holding it.
    pub exact_freqs: BTreeMap<String, BTreeMap<String, u64>>,
    /// Per such field: the docs holding a value.
    pub exact_docs: BTreeMap<String, u64>,
}

impl GlobalStats {
    /// Over `blocks`, for `query`'s scored terms and values.
    pub fn gather(query: &Query, blocks: &[Arc<BlockReader>]) -> Result<GlobalStats> {
        let stats = CollectionStats::gather(query, blocks)?;
        let mut global = GlobalStats {
            fields: stats.fields.into_iter().collect(),
            exact_docs: stats.exact_docs.into_iter().collect(),
            ..GlobalStats::default()
        };
        for ((field, term), docs) in stats.doc_freqs {
            global
                .doc_freqs
                .entry(field)
                .or_default()
                .insert(term, docs);
        }
        for ((field, value), docs) in stats.exact_freqs {
            global
                .exact_freqs
                .entry(field)
                .or_default()
                .insert(value, docs);
        }
        Ok(global)
    }

    /// Adds another leaf's statistics (over other blocks) to these.
    pub fn merge(&mut self, other: &GlobalStats) {
        for (field, stats) in &other.fields {
            let mine = self.fields.entry(field.clone()).or_default();
            mine.docs_with_field += stats.docs_with_field;
            mine.total_tokens += stats.total_tokens;
        }
        let add = |mine: &mut BTreeMap<String, BTreeMap<String, u64>>,
                   theirs: &BTreeMap<String, BTreeMap<String, u64>>| {
            for (field, terms) in theirs {
                let mine = mine.entry(field.clone()).or_default();
                for (term, docs) in terms {
                    *mine.entry(term.clone()).or_default() += docs;
                }
            }
        };
        add(&mut self.doc_freqs, &other.doc_freqs);
        add(&mut self.exact_freqs, &other.exact_freqs);
        for (field, docs) in &other.exact_docs {
            *self.exact_docs.entry(field.clone()).or_default() += docs;
        }
    }
}

impl CollectionStats {
    /// `gather`, the collection-wide figures taken from `global` when given (each that it
    /// holds; a term it lacks keeps this searcher's own).
    pub fn gather_with(
        query: &Query,
        blocks: &[Arc<BlockReader>],
        global: Option<&GlobalStats>,
    ) -> Result<CollectionStats> {
        let mut stats = CollectionStats::gather(query, blocks)?;
        let Some(global) = global else {
            return Ok(stats);
        };
        for (field, field_stats) in stats.fields.iter_mut() {
            if let Some(theirs) = global.fields.get(field) {
                *field_stats = *theirs;
            }
        }
        let of = |map: &BTreeMap<String, BTreeMap<String, u64>>, field: &str, term: &str| {
            map.get(field).and_then(|terms| terms.get(term)).copied()
        };
        for ((field, term), docs) in stats.doc_freqs.iter_mut() {
            if let Some(theirs) = of(&global.doc_freqs, field, term) {
                *docs = theirs;
            }
        }
        for ((field, value), docs) in stats.exact_freqs.iter_mut() {
            if let Some(theirs) = of(&global.exact_freqs, field, value) {
                *docs = theirs;
            }
        }
        for (field, docs) in stats.exact_docs.iter_mut() {
            if let Some(&theirs) = global.exact_docs.get(field) {
                *docs = theirs;
            }
        }
        Ok(stats)
    }

    pub fn gather(query: &Query, blocks: &[Arc<BlockReader>]) -> Result<CollectionStats> {
        let mut stats = CollectionStats {
            scored: true,
            ..CollectionStats::default()
        };
        let mut terms = Vec::new();
        query.for_each_term(&mut |field, term| terms.push((field.to_owned(), term.to_owned())));
        for (field, term) in terms {
            if stats.doc_freqs.contains_key(&(field.clone(), term.clone())) {
                continue;
            }
            let mut doc_freq = 0;
            let mut infos = Vec::with_capacity(blocks.len());
            for block in blocks {
                let found = look_up(block, &field, &term)?;
                if let Some((_, info)) = found {
                    doc_freq += u64::from(info.doc_freq);
                }
                infos.push(found);
            }
            stats.term_infos.insert(
                (field.clone(), term.clone()),
                BlockTermInfos::resolved(infos),
            );
            if !stats.fields.contains_key(&field) {
                let mut field_stats = FieldStats::default();
                for block in blocks {
                    let text = block
                        .field_ordinal(&field)
                        .and_then(|o| block.manifest().fields[o as usize].text.as_ref());
                    if let Some(text) = text {
                        field_stats.docs_with_field += u64::from(text.docs_with_field);
                        field_stats.total_tokens += text.total_tokens;
                    }
                }
                stats.fields.insert(field.clone(), field_stats);
            }
            stats.doc_freqs.insert((field, term), doc_freq);
        }
        let mut exact = Vec::new();
        query.for_each_scored_exact(&mut |field, value, tokens| {
            exact.push((field.to_owned(), value.to_owned(), tokens.to_vec()))
        });
        for (field, value, tokens) in exact {
            let key = (field.clone(), value.clone());
            if stats.exact_freqs.contains_key(&key) {
                continue;
            }
            let doc_freq = exact_doc_freq(blocks, &field, &value, &tokens)?;
            stats.exact_freqs.insert(key, doc_freq);
            stats
                .exact_docs
                .entry(field)
                .or_insert_with_key(|field| blocks.iter().map(|b| docs_with_value(b, field)).sum());
        }
        Ok(stats)
    }

    /// No statistics, for queries that are not scored (counts, time sorts, histograms,
    /// aggregations): each term is looked up in a block only when that block is searched.
    pub fn unscored(query: &Query, blocks: &[Arc<BlockReader>]) -> CollectionStats {
        let mut stats = CollectionStats::default();
        query.for_each_term(&mut |field, term| {
            stats
                .term_infos
                .entry((field.to_owned(), term.to_owned()))
                .or_insert_with(|| BlockTermInfos::unresolved(blocks.len()));
        });
        stats
    }
}

/// A token term's postings with a source of its positions: the block's, or, for a term of a
/// field that keeps its positions in its values (FORMAT.md), the doc's value, analysed once per
/// doc for every such term of the query (`values`, made on first need).
pub(crate) fn positioned_cursor<'a>(
    block: &'a BlockReader,
    ordinal: u16,
    info: &TermInfo,
    token: &[u8],
    values: &mut Option<SharedValuePositions<'a>>,
) -> Result<(quarry_format::PostingsCursor<'a>, PositionSource<'a>)> {
    if info.has_positions {
        return Ok((block.postings_with_positions(info)?, PositionSource::Stored));
    }
    let values = field_values(block, ordinal, values)?;
    let index = values.borrow_mut().want_token(token);
    Ok((block.postings(info)?, PositionSource::Token(values, index)))
}

/// The values of field `ordinal` as a source of positions (made once into `values`), for a
/// token term without positions; an error when the field keeps its positions (the term info
/// is then corrupt).
pub(crate) fn field_values<'a>(
    block: &'a BlockReader,
    ordinal: u16,
    values: &mut Option<SharedValuePositions<'a>>,
) -> Result<SharedValuePositions<'a>> {
    let from_values = block
        .manifest()
        .fields
        .get(ordinal as usize)
        .and_then(|field| field.text.as_ref())
        .is_some_and(|text| text.positions_from_values);
    if !from_values {
        return Err(block.corrupt(
            "term infos",
            quarry_format::DecodeError::new("a token term without positions"),
        ));
    }
    Ok(values
        .get_or_insert_with(|| ValuePositions::new(block, ordinal).shared())
        .clone())
}

/// The docs of `block` whose `field` holds the whole value `value` (`Query::Exact`).
fn exact_scorer<'a>(
    block: &'a BlockReader,
    field: &str,
    value: &'a str,
    tokens: &[String],
) -> Result<Option<BoxScorer<'a>>> {
    if value.len() > EXACT_TERM_LEN {
        // A field mapped `keyword` holds an exact term for a long value too; docs indexed
        // dynamically (before the field was mapped) are found through the value's tokens. A
        // block merged from both has both.
        let keyword = match block.field_ordinal(field) {
            Some(ordinal) => block.term_info(ordinal, TermKind::Exact, value.as_bytes())?,
            None => None,
        };
        let keyword = match keyword {
            Some(info) => Some(Box::new(ConstScorer {
                cursor: block.postings(&info)?,
            }) as BoxScorer),
            None => None,
        };
        let checked = filter::long_exact_scorer(block, field, value, tokens)?;
        return Ok(match (keyword, checked) {
            (Some(keyword), Some(checked)) => {
                Some(Box::new(UnionScorer::new(vec![keyword, checked])) as BoxScorer)
            }
            (keyword, checked) => keyword.or(checked),
        });
    }
    let Some(ordinal) = block.field_ordinal(field) else {
        return Ok(None);
    };
    let exact = match block.term_info(ordinal, TermKind::Exact, value.as_bytes())? {
        Some(info) => Some(Box::new(ConstScorer {
            cursor: block.postings(&info)?,
        }) as BoxScorer),
        None => None,
    };
    let boolean = match value {
        "true" => filter::boolean_scorer(block, field, true)?,
        "false" => filter::boolean_scorer(block, field, false)?,
        _ => None,
    };
    Ok(match (exact, boolean) {
        (Some(exact), Some(boolean)) => {
            Some(Box::new(UnionScorer::new(vec![exact, boolean])) as BoxScorer)
        }
        (exact, boolean) => exact.or(boolean),
    })
}

/// How many docs of `blocks` hold the whole value `value` of `field`: the exact term's doc
/// frequency where that is all there is, else the docs its filter finds (a long value, a
/// boolean).
fn exact_doc_freq(
    blocks: &[Arc<BlockReader>],
    field: &str,
    value: &str,
    tokens: &[String],
) -> Result<u64> {
    let mut doc_freq = 0;
    for block in blocks {
        let Some(ordinal) = block.field_ordinal(field) else {
            continue;
        };
        if value.len() <= EXACT_TERM_LEN && !filter::holds_booleans(block, field, value) {
            let info = block.term_info(ordinal, TermKind::Exact, value.as_bytes())?;
            doc_freq += info.map_or(0, |info| u64::from(info.doc_freq));
            continue;
        }
        if let Some(mut scorer) = exact_scorer(block, field, value, tokens)? {
            let mut doc = scorer.doc();
            while doc != quarry_format::TERMINATED {
                doc_freq += 1;
                doc = scorer.advance();
            }
            if let Some(error) = scorer.error() {
                return Err(block.corrupt("postings", error));
            }
        }
    }
    Ok(doc_freq)
}

/// The docs of `block` with a value of `field`: its text statistics' count where it has
/// them, else its columns' (a keyword field); a field kept in neither, every doc.
fn docs_with_value(block: &BlockReader, field: &str) -> u64 {
    let Some(ordinal) = block.field_ordinal(field) else {
        return 0;
    };
    let meta = &block.manifest().fields[ordinal as usize];
    let doc_count = u64::from(block.doc_count());
    if let Some(text) = &meta.text {
        return u64::from(text.docs_with_field);
    }
    match meta.columns.iter().map(|c| c.present_count).sum::<u64>() {
        0 => doc_count,
        present => present.min(doc_count),
    }
}

impl Weight {
    /// Multiplies every score under this weight by `boost` (BM25 is linear in a term's
    /// weight, so scaling the leaves scales the sums and the score bounds alike).
    fn boost(&mut self, boost: f32) {
        match self {
            Weight::Term { weight, .. }
            | Weight::Phrase { weight, .. }
            | Weight::Exact { weight, .. } => *weight *= boost,
            Weight::Any(clauses) | Weight::AtLeast { clauses, .. } => {
                clauses.iter_mut().for_each(|c| c.boost(boost))
            }
            Weight::Constant { score, .. } => *score *= boost,
            Weight::Intervals { boost: own, .. } => *own *= boost,
            Weight::Bool {
                must,
                should,
                must_not: _,
            } => must
                .iter_mut()
                .chain(should.iter_mut())
                .for_each(|c| c.boost(boost)),
            _ => {}
        }
    }

    pub fn new(
        query: &Query,
        stats: &CollectionStats,
        params: Bm25Params,
        optimizations: Optimizations,
    ) -> Weight {
        let mut caches: HashMap<String, Arc<[f32; 256]>> = HashMap::new();
        Self::build(query, stats, params, optimizations, &mut caches)
    }

    fn build(
        query: &Query,
        stats: &CollectionStats,
        params: Bm25Params,
        optimizations: Optimizations,
        caches: &mut HashMap<String, Arc<[f32; 256]>>,
    ) -> Weight {
        let field_stats = |field: &str| stats.fields.get(field).copied().unwrap_or_default();
        let mut cache_of = |field: &str| {
            caches
                .entry(field.to_owned())
                .or_insert_with(|| bm25::shared_norm_cache(params, field_stats(field)))
                .clone()
        };
        let infos_of = |field: &str, term: &str| -> BlockTermInfos {
            let key = (field.to_owned(), term.to_owned());
            stats
                .term_infos
                .get(&key)
                .cloned()
                .unwrap_or_else(|| BlockTermInfos::unresolved(0))
        };
        let idf = |field: &str, term: &str| {
            let df = stats
                .doc_freqs
                .get(&(field.to_owned(), term.to_owned()))
                .copied()
                .unwrap_or(0);
            bm25::idf(df, field_stats(field).docs_with_field)
        };
        let all = |clauses: &[Query], caches: &mut HashMap<String, Arc<[f32; 256]>>| {
            clauses
                .iter()
                .map(|c| Self::build(c, stats, params, optimizations, caches))
                .collect::<Vec<_>>()
        };
        match query {
            Query::Term { field, term } => Weight::Term {
                field: field.clone(),
                term: term.clone(),
                weight: idf(field, term),
                scored: stats.scored,
                cache: cache_of(field),
                infos: infos_of(field, term),
            },
            Query::Phrase { field, terms, slop } => Weight::Phrase {
                field: field.clone(),
                terms: terms
                    .iter()
                    .map(|(o, t)| (*o, t.clone(), infos_of(field, t)))
                    .collect(),
                slop: *slop,
                weight: terms.iter().map(|(_, t)| idf(field, t)).sum(),
                scored: stats.scored,
                cache: cache_of(field),
            },
            Query::Exact {
                field,
                value,
                tokens,
            } => Weight::Exact {
                field: field.clone(),
                value: value.clone(),
                tokens: tokens.clone(),
                weight: stats
                    .exact_freqs
                    .get(&(field.clone(), value.clone()))
                    .map_or(0.0, |&df| {
                        let docs = stats.exact_docs.get(field).copied().unwrap_or(0);
                        bm25::idf(df, docs)
                    }),
            },
            Query::Pattern {
                field,
                pattern,
                terms,
            } => Weight::Pattern {
                field: field.clone(),
                pattern: pattern.clone(),
                terms: *terms,
                optimizations,
            },
            Query::WholeValues {
                field,
                pattern,
                max_chars,
                long_values,
            } => Weight::WholeValues {
                field: field.clone(),
                pattern: pattern.clone(),
                max_chars: *max_chars,
                long_values: *long_values,
                optimizations,
            },
            Query::Intervals { field, rule } => Weight::Intervals {
                field: field.clone(),
                rule: rule.clone(),
                boost: 1.0,
                optimizations,
            },
            Query::Any(clauses) => Weight::Any(all(clauses, caches)),
            Query::AtLeast { clauses, minimum } => Weight::AtLeast {
                clauses: all(clauses, caches),
                minimum: *minimum,
            },
            Query::Constant { inner, score } => Weight::Constant {
                inner: Box::new(Self::build(inner, stats, params, optimizations, caches)),
                score: *score,
            },
            Query::Boost { inner, boost } => {
                let mut weight = Self::build(inner, stats, params, optimizations, caches);
                weight.boost(*boost);
                weight
            }
            Query::TimeRange { start, end } => Weight::TimeRange {
                start: *start,
                end: *end,
                optimizations,
            },
            Query::Range { field, range } => Weight::Range {
                field: field.clone(),
                range: range.clone(),
                optimizations,
                checked: false,
            },
            Query::IndexedRange { field, range } => Weight::IndexedRange {
                field: field.clone(),
                range: range.clone(),
            },
            Query::Exists { field } => Weight::Exists {
                field: field.clone(),
            },
            Query::ContentId { time, hash } => Weight::ContentId {
                time: *time,
                hash: *hash,
            },
            Query::Bool {
                must,
                should,
                must_not,
            } => Weight::Bool {
                must: all(must, caches),
                should: all(should, caches),
                must_not: all(must_not, caches),
            },
            Query::All => Weight::All,
            Query::Nothing => Weight::Nothing,
        }
    }

    /// The scorer of a `Term` weight in `block`, unboxed (collectors that take only terms
    /// inline its calls); `None` for other weights or when the block lacks the term.
    pub fn term_scorer<'a>(
        &'a self,
        index: usize,
        block: &'a BlockReader,
    ) -> Result<Option<TermScorer<'a>>> {
        let Weight::Term {
            field,
            term,
            weight,
            scored,
            cache,
            infos,
        } = self
        else {
            return Ok(None);
        };
        let Some((ordinal, info)) = infos.get(index, block, field, term)? else {
            return Ok(None);
        };
        // An unscored term (counts, tails, histograms) reads no norms: a remote block would
        // fetch them for nothing.
        let norms = if *scored {
            block.norms(ordinal)?.unwrap_or(&[])
        } else {
            &[]
        };
        let cursor = block.postings(&info)?;
        Ok(Some(TermScorer::new(
            cursor,
            norms,
            *weight,
            cache,
            info.max_tf,
            info.min_norm,
        )))
    }

    /// The postings that hold exactly this weight's matches in `block`, when there are such:
    /// a term, an exact value, or one of them ANDed only with time ranges (which callers
    /// apply as a doc range). `None`: not such a weight; `Some(None)`: none in this block.
    pub fn single_postings<'a>(
        &'a self,
        index: usize,
        block: &'a BlockReader,
    ) -> Result<Option<Option<quarry_format::PostingsCursor<'a>>>> {
        match self {
            Weight::Term {
                field, term, infos, ..
            } => match infos.get(index, block, field, term)? {
                Some((_, info)) => Ok(Some(Some(block.postings(&info)?))),
                None => Ok(Some(None)),
            },
            Weight::Exact { value, .. } if value.len() > EXACT_TERM_LEN => Ok(None),
            // `true` or `false` is also a boolean value, not in the exact term's postings.
            Weight::Exact { field, value, .. } if filter::holds_booleans(block, field, value) => {
                Ok(None)
            }
            Weight::Exact { field, value, .. } => {
                let info = match block.field_ordinal(field) {
                    Some(ordinal) => block.term_info(ordinal, TermKind::Exact, value.as_bytes())?,
                    None => None,
                };
                Ok(Some(match info {
                    Some(info) => Some(block.postings(&info)?),
                    None => None,
                }))
            }
            Weight::Bool {
                must,
                should,
                must_not,
            } if should.is_empty() && must_not.is_empty() => {
                let mut rest = must
                    .iter()
                    .filter(|w| !matches!(w, Weight::TimeRange { .. }));
                match (rest.next(), rest.next()) {
                    (Some(only), None) => only.single_postings(index, block),
                    _ => Ok(None),
                }
            }
            _ => Ok(None),
        }
    }

    /// The scorer of this weight in `block` (at position `index` among the blocks the
    /// statistics were gathered over), or `None` if nothing in the block can match.
    pub fn scorer<'a>(
        &'a self,
        index: usize,
        block: &'a BlockReader,
    ) -> Result<Option<BoxScorer<'a>>> {
        Ok(match self {
            Weight::Term { .. } => self
                .term_scorer(index, block)?
                .map(|s| Box::new(s) as BoxScorer),
            Weight::Phrase {
                field,
                terms,
                slop,
                weight,
                scored,
                cache,
            } => {
                let mut phrase_terms = Vec::with_capacity(terms.len());
                let mut max_tf = u32::MAX;
                let mut sum_tf = 0u32;
                let mut field_ordinal = None;
                let mut values = None;
                for (i, (offset, term, infos)) in terms.iter().enumerate() {
                    let Some((ordinal, info)) = infos.get(index, block, field, term)? else {
                        return Ok(None);
                    };
                    field_ordinal = Some(ordinal);
                    max_tf = max_tf.min(info.max_tf);
                    sum_tf = sum_tf.saturating_add(info.max_tf);
                    // The same token twice in a phrase needs two positions (its first index).
                    let group = terms.iter().position(|(_, t, _)| t == term).unwrap_or(i);
                    let (cursor, source) =
                        positioned_cursor(block, ordinal, &info, term.as_bytes(), &mut values)?;
                    phrase_terms.push(PhraseTerm {
                        offset: *offset,
                        group: group as u32,
                        cursor,
                        source,
                    });
                }
                let norms = match field_ordinal {
                    Some(ordinal) if *scored => block.norms(ordinal)?.unwrap_or(&[]),
                    _ => &[],
                };
                // A sloppy match counts at most once per position of any of its terms.
                let max_freq = if *slop == 0 { max_tf } else { sum_tf };
                Some(Box::new(PhraseScorer::new(
                    phrase_terms,
                    *slop,
                    norms,
                    *weight,
                    cache,
                    max_freq,
                )))
            }
            Weight::Exact {
                field,
                value,
                tokens,
                weight,
            } => match exact_scorer(block, field, value, tokens)? {
                Some(docs) if *weight > 0.0 => {
                    Some(Box::new(ConstantScorer::new(docs, *weight)) as BoxScorer)
                }
                docs => docs,
            },
            Weight::Pattern {
                field,
                pattern,
                terms,
                optimizations,
            } => pattern.scorer(block, field, *terms, optimizations)?,
            Weight::WholeValues {
                field,
                pattern,
                max_chars,
                long_values,
                optimizations,
            } => {
                // Exact terms past the view's limit: a keyword field's (all its values have
                // one), or a text field's under a limit below EXACT_TERM_LEN.
                let short = match max_chars {
                    Some(limit) if !long_values || (*limit as usize) < EXACT_TERM_LEN => {
                        pattern.scorer_up_to(block, field, *limit)?
                    }
                    _ => pattern.scorer(block, field, TermKind::Exact, optimizations)?,
                };
                let long = match long_values {
                    true => filter::long_values_scorer(block, field, pattern, *max_chars)?,
                    false => None,
                };
                match (short, long) {
                    (Some(short), Some(long)) => {
                        Some(Box::new(UnionScorer::new(vec![short, long])) as BoxScorer)
                    }
                    (short, long) => short.or(long),
                }
            }
            Weight::Intervals {
                field,
                rule,
                boost,
                optimizations,
            } => {
                let Some(ordinal) = block.field_ordinal(field) else {
                    return Ok(None);
                };
                let mut expand = |pattern: &Arc<crate::pattern::Pattern>| {
                    pattern.term_infos(block, field, TermKind::Token, optimizations)
                };
                let mut values = None;
                crate::intervals::Node::build(rule, block, ordinal, &mut expand, &mut values)?.map(
                    |(node, approximation)| {
                        Box::new(crate::intervals::IntervalsScorer::new(
                            node,
                            approximation,
                            *boost,
                        )) as BoxScorer
                    },
                )
            }
            Weight::TimeRange {
                start,
                end,
                optimizations,
            } => {
                let manifest = block.manifest();
                if optimizations.skipping
                    && !filter::time_overlaps(manifest.time_min, manifest.time_max, *start, *end)
                {
                    return Ok(None);
                }
                let (lo, hi) = TimeLookup::new(block, *optimizations)?.doc_range(*start, *end)?;
                (lo < hi).then(|| Box::new(DocRangeScorer::new(lo, hi)) as BoxScorer)
            }
            Weight::Range {
                field,
                range,
                optimizations,
                checked,
            } => filter::numeric_range_scorer(block, field, range, *optimizations, *checked)?,
            Weight::IndexedRange { field, range } => {
                filter::indexed_range_scorer(block, field, range)?
            }
            Weight::Exists { field } => filter::exists_scorer(block, field)?,
            Weight::ContentId { time, hash } => filter::content_id_scorer(block, *time, *hash)?,
            Weight::Any(clauses) => {
                let scorers = Self::scorers(clauses, index, block)?;
                match scorers.len() {
                    0 => None,
                    1 => scorers.into_iter().next(),
                    _ => Some(Box::new(UnionScorer::new(scorers))),
                }
            }
            Weight::AtLeast { clauses, minimum } => {
                let scorers = Self::scorers(clauses, index, block)?;
                (scorers.len() >= *minimum)
                    .then(|| Box::new(AtLeastScorer::new(scorers, *minimum)) as BoxScorer)
            }
            Weight::Constant { inner, score } => inner
                .scorer(index, block)?
                .map(|inner| Box::new(ConstantScorer::new(inner, *score)) as BoxScorer),
            Weight::Bool {
                must,
                should,
                must_not,
            } => {
                if should.is_empty()
                    && must.len() > 1
                    && must.iter().all(|c| matches!(c, Weight::Term { .. }))
                {
                    let mut terms = Vec::with_capacity(must.len());
                    for clause in must {
                        match clause.term_scorer(index, block)? {
                            Some(term) => terms.push(term),
                            None => return Ok(None),
                        }
                    }
                    let base = Box::new(TermConjunctionScorer::new(terms));
                    return Ok(Some(Self::exclude(base, must_not, index, block)?));
                }
                let mut required = Vec::with_capacity(must.len());
                for clause in must {
                    match clause.scorer(index, block)? {
                        Some(scorer) => required.push(scorer),
                        None => return Ok(None),
                    }
                }
                let optional = Self::scorers(should, index, block)?;
                let optional: Option<BoxScorer> = match optional.len() {
                    0 => None,
                    1 => optional.into_iter().next(),
                    _ => Some(Box::new(UnionScorer::new(optional))),
                };
                let base: BoxScorer = match (required.len(), optional) {
                    (0, None) => return Ok(None),
                    (0, Some(optional)) => optional,
                    (1, None) => required.pop().expect("one required scorer"),
                    (_, None) => Box::new(ConjunctionScorer::new(required)),
                    (n, Some(optional)) => {
                        let required: BoxScorer = if n == 1 {
                            required.pop().expect("one required scorer")
                        } else {
                            Box::new(ConjunctionScorer::new(required))
                        };
                        Box::new(OptionalScorer { required, optional })
                    }
                };
                Some(Self::exclude(base, must_not, index, block)?)
            }
            Weight::Docs(lists) => lists
                .get(index)
                .and_then(Option::as_ref)
                .filter(|docs| !docs.is_empty())
                .map(|docs| Box::new(filter::DocListScorer::new(docs.clone())) as BoxScorer),
            Weight::All => (block.doc_count() > 0)
                .then(|| Box::new(DocRangeScorer::new(0, block.doc_count())) as BoxScorer),
            Weight::Nothing => None,
        })
    }

    /// This weight with its numeric ranges checked doc by doc where the block has doc values:
    /// for tails and heads, whose windows ask for few docs (a range's eager answer is built
    /// over the whole block; counts and aggregations, which visit every match, keep it).
    pub fn with_checked_ranges(mut self) -> Weight {
        self.check_ranges();
        self
    }

    fn check_ranges(&mut self) {
        match self {
            Weight::Range { checked, .. } => *checked = true,
            Weight::Any(clauses) | Weight::AtLeast { clauses, .. } => {
                clauses.iter_mut().for_each(Weight::check_ranges)
            }
            Weight::Constant { inner, .. } => inner.check_ranges(),
            Weight::Bool {
                must,
                should,
                must_not,
            } => {
                for clause in must.iter_mut().chain(should).chain(must_not) {
                    clause.check_ranges();
                }
            }
            _ => {}
        }
    }

    /// The docs of any of `clauses` in `block`, or `None` when none of them is there.
    pub(crate) fn any_scorer<'a>(
        clauses: &'a [Weight],
        index: usize,
        block: &'a BlockReader,
    ) -> Result<Option<BoxScorer<'a>>> {
        let mut scorers = Self::scorers(clauses, index, block)?;
        Ok(match scorers.len() {
            0 => None,
            1 => scorers.pop(),
            _ => Some(Box::new(UnionScorer::new(scorers))),
        })
    }

    /// `base` without the docs of any of `must_not`.
    fn exclude<'a>(
        base: BoxScorer<'a>,
        must_not: &'a [Weight],
        index: usize,
        block: &'a BlockReader,
    ) -> Result<BoxScorer<'a>> {
        Ok(match Self::any_scorer(must_not, index, block)? {
            None => base,
            Some(excluded) => Box::new(ExclusionScorer::new(base, excluded)),
        })
    }

    fn scorers<'a>(
        clauses: &'a [Weight],
        index: usize,
        block: &'a BlockReader,
    ) -> Result<Vec<BoxScorer<'a>>> {
        let mut scorers = Vec::with_capacity(clauses.len());
        for clause in clauses {
            if let Some(scorer) = clause.scorer(index, block)? {
                scorers.push(scorer);
            }
        }
        Ok(scorers)
    }
}
