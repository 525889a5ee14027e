//! The searcher: all blocks of a data directory, queried as one index.

use crate::bm25::Bm25Params;
use crate::collector::{collect_all, collect_all_counted, collect_max_score, ScoredDoc, TopK};
use crate::cursor::Cursor;
use crate::error::{QueryError, Result};
use crate::filter::Optimizations;
use crate::parser;
use crate::query::{plan, Query};
use crate::scorer::{BoxScorer, Scorer, TermConjunctionScorer};
use crate::weight::{CollectionStats, GlobalStats, Weight};
use quarry_format::block::DocumentFetcher;
use quarry_format::column::ChunkCache;
use quarry_format::{BlockReader, DecodeError, Value, TIME_FIELD};
use quarry_index::{Analyzer, Schema};
use quarry_store::{BlockStore, Catalog};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub enum SortOrder {
    /// BM25 score, best first.
    #[default]
    Relevance,
    /// Newest first (tail).
    TimeDesc,
    /// Oldest first (head).
    TimeAsc,
}

/// What a snapshot holds of one field (`Searcher::field_summary`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FieldSummary {
    /// Events holding a value of each column type (`string`, `i64`, ...).
    pub types: BTreeMap<String, u64>,
    /// Some block tokenizes it: bare words search it.
    pub full_text: bool,
}

impl FieldSummary {
    /// Adds `other`'s events (another share of the same tenant's blocks).
    pub fn merge(&mut self, other: &FieldSummary) {
        for (ty, events) in &other.types {
            *self.types.entry(ty.clone()).or_default() += events;
        }
        self.full_text |= other.full_text;
    }

    /// Events holding the field (a value of any type).
    pub fn events(&self) -> u64 {
        self.types.values().sum()
    }
}

#[derive(Debug, Clone, Default)]
pub struct HitsRequest {
    pub limit: usize,
    pub count: bool,
    pub sort: SortOrder,
    /// For time sorts: continue after this hit (`search_after`).
    pub after: Option<Cursor>,
}

/// One hit: where it is, its score (relevance sort only) and its time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    pub block: u32,
    pub doc: u32,
    pub score: Option<f32>,
    pub time: i64,
}

#[derive(Debug, Clone, Default)]
pub struct Hits {
    pub hits: Vec<Hit>,
    pub count: Option<u64>,
}

/// A block left out of every answer because it could not be opened or read: answers are
/// partial, and front ends must say so (the CLI on stderr and in its exit status).
#[derive(Debug, Clone, PartialEq)]
pub struct DamagedBlock {
    /// The block's id in its catalog (`None` for a block opened without one).
    pub block: Option<u64>,
    /// Where it is: what messages name it by.
    pub path: PathBuf,
    pub error: String,
    /// Not damage: the block could not be read (an i/o error, such as its object store not
    /// answering). It is left out of the answer that met the error, which says so, but is
    /// not set aside: a later answer reads it again.
    pub unreadable: bool,
}

impl DamagedBlock {
    /// Block `block` at `path`, left out because of `error`.
    pub fn of(
        block: Option<u64>,
        path: PathBuf,
        error: &quarry_format::FormatError,
    ) -> DamagedBlock {
        DamagedBlock {
            block,
            path,
            error: error.to_string(),
            unreadable: matches!(error, quarry_format::FormatError::Io { .. }),
        }
    }
}

/// Where `Searcher::union` puts a part's rank in a block id: ids of blocks (their file
/// numbers, and a server's in-memory blocks from 2^48 up) stay below 2^56.
const PART_SHIFT: u32 = 56;

/// The most searchers `Searcher::union` joins.
pub const MAX_UNION_PARTS: usize = 1 << (64 - PART_SHIFT);

/// Called with each block a search leaves out because reading it failed.
pub type DamageReport = Arc<dyn Fn(&DamagedBlock) + Send + Sync>;

/// An immutable snapshot of what is searchable: cheap to clone (the blocks are shared), so a
/// request that finds a damaged block answers from its own copy without it.
#[derive(Clone)]
pub struct Searcher {
    /// Sorted by (time_min, id, path).
    pub(crate) blocks: Vec<Arc<BlockReader>>,
    /// A stable id per block (the number in its file name), which orders events of equal
    /// `_time` across blocks: time order is (`_time`, block id, doc id), and cursors hold it.
    pub(crate) block_ids: Vec<u64>,
    schema: Arc<Schema>,
    text_fields: Vec<String>,
    params: Bm25Params,
    pub(crate) optimizations: Optimizations,
    damaged: Vec<DamagedBlock>,
    /// Told of each block a search finds damaged while reading it (a server takes the block
    /// out of its later snapshots and reports it in its health and metrics).
    damage_report: Option<DamageReport>,
    /// Decoded column chunks shared with other snapshots and requests (a server's); without
    /// one, each request decodes what it fetches.
    chunk_cache: Option<Arc<ChunkCache>>,
    /// Each part's score factor, by its rank in `union` (`with_part_boosts`).
    part_boosts: Option<Arc<[f32]>>,
    /// Docs no search sees (documents deleted or replaced by a newer version), a sorted list
    /// per block, keyed by `block_key` (`with_deleted`).
    deleted: Arc<HashMap<usize, Arc<[u32]>>>,
}

impl Searcher {
    /// Opens every block the catalog of `dir` lists. A block that fails to open is left out
    /// and listed in `damaged()`; one bad block never makes the rest unsearchable.
    pub fn open(dir: &Path) -> Result<Searcher> {
        Self::open_with(dir, &quarry_store::LocalDir::new(dir))
    }

    /// As [`Searcher::open`], reading the blocks from `store` (the catalog stays in `dir`).
    pub fn open_with(dir: &Path, store: &dyn BlockStore) -> Result<Searcher> {
        let (settings, entries) = Catalog::read_only(dir)?;
        Ok(Self::open_entries(&settings, &entries, store))
    }

    /// Opens the blocks `entries` of `store`, of a catalog with `settings` (from any
    /// metastore). A block that fails to open is left out and listed in `damaged()`.
    pub fn open_entries(
        settings: &quarry_store::Settings,
        entries: &[quarry_store::BlockEntry],
        store: &dyn BlockStore,
    ) -> Searcher {
        let mut blocks = Vec::with_capacity(entries.len());
        let mut damaged = Vec::new();
        let opened = quarry_store::block_store::open_all(store, entries);
        for (entry, opened) in entries.iter().zip(opened) {
            match opened {
                Ok(block) => blocks.push(block),
                Err(error) => damaged.push(DamagedBlock::of(
                    Some(entry.id),
                    store.location(entry.id),
                    &error,
                )),
            }
        }
        let blocks = blocks.into_iter().map(Arc::new).collect();
        let schema = Arc::new(Schema::from_settings(settings));
        let mut searcher = Searcher::from_shared_with(blocks, schema);
        searcher.damaged = damaged;
        searcher
    }

    /// Blocks left out of the answers (failed to open, or to read during a search run
    /// through `skip_damaged`).
    pub fn damaged(&self) -> &[DamagedBlock] {
        &self.damaged
    }

    /// Runs `work`; when it fails because a block is damaged, leaves that block out (it is
    /// added to `damaged()`) and runs `work` again over the rest. Statistics, hits and counts
    /// are then those of the remaining blocks, as if the damaged one were not there: a damaged
    /// part costs that part, never a different answer for the rest.
    pub fn skip_damaged<T>(&mut self, mut work: impl FnMut(&Searcher) -> Result<T>) -> Result<T> {
        loop {
            match work(self) {
                Err(error) if self.leave_out_block_of(&error) => continue,
                other => return other,
            }
        }
    }

    /// Leaves out the block an error is about; false if it names none of this searcher's.
    pub(crate) fn leave_out_block_of(&mut self, error: &QueryError) -> bool {
        let QueryError::Format(format_error) = error else {
            return false;
        };
        let Some(path) = format_error.path() else {
            return false;
        };
        let Some(index) = self.blocks.iter().position(|b| b.path() == path) else {
            return false;
        };
        let block = self.blocks.remove(index);
        self.block_ids.remove(index);
        self.text_fields = text_fields(&self.blocks, &self.schema);
        let damaged = DamagedBlock::of(block.id(), path.to_path_buf(), format_error);
        if let Some(report) = &self.damage_report {
            report(&damaged);
        }
        self.damaged.push(damaged);
        true
    }

    /// Field names the query uses that no block has (a typo, or `status: 200` with a space):
    /// the answer stands, but a front end should say so.
    pub fn unknown_fields(&self, query: &Query) -> Vec<String> {
        query
            .field_names()
            .into_iter()
            .filter(|name| {
                *name != TIME_FIELD && self.blocks.iter().all(|b| b.field_ordinal(name).is_none())
            })
            .map(str::to_owned)
            .collect()
    }

    /// A searcher over `blocks`, every field searched as dynamically indexed with `analyzer`
    /// (`with_schema` for a mapping).
    pub fn new(blocks: Vec<BlockReader>, analyzer: Analyzer) -> Searcher {
        Searcher::from_shared(blocks.into_iter().map(Arc::new).collect(), analyzer)
    }

    /// A searcher over blocks shared with other snapshots (a server keeps its open blocks
    /// and hands each snapshot the ones it holds).
    pub fn from_shared(blocks: Vec<Arc<BlockReader>>, analyzer: Analyzer) -> Searcher {
        Searcher::from_shared_with(blocks, Arc::new(Schema::dynamic(Arc::new(analyzer))))
    }

    /// `from_shared`, queries planned as `schema` says fields are indexed.
    pub fn from_shared_with(mut blocks: Vec<Arc<BlockReader>>, schema: Arc<Schema>) -> Searcher {
        blocks.sort_by(|a, b| {
            (a.manifest().time_min, a.id(), a.path()).cmp(&(
                b.manifest().time_min,
                b.id(),
                b.path(),
            ))
        });
        // A block opened without a catalog id (a file named on the command line, a block
        // in a test) is numbered by its place.
        let block_ids = blocks
            .iter()
            .enumerate()
            .map(|(position, block)| block.id().unwrap_or(position as u64))
            .collect();
        Searcher {
            text_fields: text_fields(&blocks, &schema),
            blocks,
            block_ids,
            schema,
            params: Bm25Params::default(),
            optimizations: Optimizations::default(),
            damaged: Vec::new(),
            damage_report: None,
            chunk_cache: None,
            part_boosts: None,
            deleted: Arc::default(),
        }
    }

    /// One searcher over several (a search over several tenants' indices, as an
    /// Elasticsearch index pattern asks): their blocks side by side, each block's id made
    /// unique by its part's rank in the top bits (`part_of` reads it back), so cursors stay
    /// total. Queries are planned with the parts' mappings merged (the first part's
    /// analyzers): a field that two parts map differently is an error, since one plan could
    /// not search both as they were indexed. A damaged block is reported to every part (each
    /// takes out only its own).
    pub fn union(parts: &[Arc<Searcher>]) -> Result<Searcher, quarry_store::MappingError> {
        assert!(parts.len() <= MAX_UNION_PARTS, "too many parts");
        let mut blocks: Vec<(Arc<BlockReader>, u64)> = Vec::new();
        let mut damaged = Vec::new();
        for (rank, part) in parts.iter().enumerate() {
            for (block, id) in part.blocks.iter().zip(&part.block_ids) {
                debug_assert!(*id < 1 << PART_SHIFT);
                blocks.push((block.clone(), ((rank as u64) << PART_SHIFT) | id));
            }
            damaged.extend(part.damaged.iter().cloned());
        }
        blocks.sort_by(|(a, _), (b, _)| {
            (a.manifest().time_min, a.path()).cmp(&(b.manifest().time_min, b.path()))
        });
        let reports: Vec<DamageReport> = parts
            .iter()
            .filter_map(|p| p.damage_report.clone())
            .collect();
        let first = parts.first();
        let mut mapping = quarry_store::Mapping::default();
        for part in parts {
            mapping = mapping.union(part.schema.mapping())?;
        }
        let schema = Arc::new(Schema::new(
            first.map_or_else(
                || Arc::new(Analyzer::default()),
                |p| p.schema.analyzer().clone(),
            ),
            mapping,
        ));
        let (blocks, block_ids): (Vec<_>, Vec<_>) = blocks.into_iter().unzip();
        let mut deleted = HashMap::new();
        for part in parts {
            deleted.extend(part.deleted.iter().map(|(k, docs)| (*k, docs.clone())));
        }
        Ok(Searcher {
            text_fields: text_fields(&blocks, &schema),
            blocks,
            block_ids,
            schema,
            params: first.map_or_else(Bm25Params::default, |p| p.params),
            optimizations: first.map_or_else(Optimizations::default, |p| p.optimizations),
            damaged,
            damage_report: (!reports.is_empty()).then(|| {
                Arc::new(move |block: &DamagedBlock| reports.iter().for_each(|r| r(block)))
                    as DamageReport
            }),
            chunk_cache: first.and_then(|p| p.chunk_cache.clone()),
            part_boosts: None,
            deleted: Arc::new(deleted),
        })
    }

    /// Which part of a `union` a block id (a hit's `location.block_id`) belongs to.
    pub fn part_of(block_id: u64) -> usize {
        (block_id >> PART_SHIFT) as usize
    }

    /// The same searcher with the scores of each part (by its rank in `union`; a searcher
    /// of one index is one part) multiplied by `boosts[rank]` (Elasticsearch's
    /// `indices_boost`); parts past the list keep theirs.
    pub fn with_part_boosts(mut self, boosts: Vec<f32>) -> Searcher {
        self.part_boosts = Some(boosts.into());
        self
    }

    /// Block `index`'s scorer of `weight`, scaled by its part's boost when there are boosts.
    fn boosted_scorer<'a>(
        &'a self,
        weight: &'a Weight,
        index: usize,
    ) -> Result<Option<BoxScorer<'a>>> {
        let scorer = weight.scorer(index, &self.blocks[index])?;
        let factor = self
            .part_boosts
            .as_ref()
            .and_then(|boosts| boosts.get(Self::part_of(self.block_ids[index])).copied());
        Ok(match (scorer, factor) {
            (Some(scorer), Some(factor)) => {
                Some(Box::new(crate::scorer::ScaledScorer::new(scorer, factor)))
            }
            (scorer, _) => scorer,
        })
    }

    /// The same searcher, its queries planned as `schema` says fields are indexed.
    pub fn with_schema(mut self, schema: Arc<Schema>) -> Searcher {
        self.text_fields = text_fields(&self.blocks, &schema);
        self.schema = schema;
        self
    }

    pub fn schema(&self) -> &Arc<Schema> {
        &self.schema
    }

    /// The same searcher, fetching events through `cache` (decoded chunks kept across
    /// requests, BENCHMARKS.md "Tails with their events").
    pub fn with_chunk_cache(mut self, cache: Option<Arc<ChunkCache>>) -> Searcher {
        self.chunk_cache = cache;
        self
    }

    /// The same searcher, listing `damaged` as blocks left out (a server that opened the
    /// blocks itself says which failed).
    pub fn with_damaged(mut self, damaged: Vec<DamagedBlock>) -> Searcher {
        self.damaged = damaged;
        self
    }

    /// The same searcher, telling `report` of each block a search finds damaged.
    pub fn with_damage_report(mut self, report: DamageReport) -> Searcher {
        self.damage_report = Some(report);
        self
    }

    /// Turns optimizations on or off (answers stay the same; for benchmarks and tests).
    pub fn set_optimizations(&mut self, optimizations: Optimizations) {
        self.optimizations = optimizations;
    }

    pub fn blocks(&self) -> &[Arc<BlockReader>] {
        &self.blocks
    }

    /// The number of documents searched (deleted ones left out).
    pub fn doc_count(&self) -> u64 {
        let all: u64 = self.blocks.iter().map(|b| u64::from(b.doc_count())).sum();
        let deleted: u64 = self
            .blocks
            .iter()
            .filter_map(|b| self.deleted.get(&block_key(b)))
            .map(|docs| docs.len() as u64)
            .sum();
        all - deleted
    }

    /// The same searcher with the docs `deleted` lists (sorted, per block by `block_key`)
    /// left out of every search: a weight of this searcher excludes them.
    pub fn with_deleted(mut self, deleted: HashMap<usize, Arc<[u32]>>) -> Searcher {
        self.deleted = Arc::new(deleted);
        self
    }

    /// The same snapshot over only the blocks whose catalog id `keep` accepts (a leaf's share
    /// of a distributed search: the blocks assigned to it, or its unpublished ones).
    pub fn only_blocks(&self, keep: impl Fn(u64) -> bool) -> Searcher {
        let mut searcher = self.clone();
        let (blocks, block_ids): (Vec<_>, Vec<_>) = self
            .blocks
            .iter()
            .zip(&self.block_ids)
            .filter(|(_, &id)| keep(id))
            .map(|(block, &id)| (block.clone(), id))
            .unzip();
        searcher.text_fields = text_fields(&blocks, &searcher.schema);
        searcher.blocks = blocks;
        searcher.block_ids = block_ids;
        // Damaged blocks of others' shares are theirs to report.
        searcher
            .damaged
            .retain(|damaged| damaged.block.is_none_or(&keep));
        searcher
    }

    /// The same snapshot with `more` blocks as well (blocks a plan dealt to this leaf that
    /// left its catalog since: merged or expired, still readable for a while).
    pub fn with_more_blocks(&self, more: Vec<Arc<BlockReader>>) -> Searcher {
        let mut blocks = self.blocks.clone();
        blocks.extend(more);
        let mut searcher = Searcher::from_shared_with(blocks, self.schema.clone());
        searcher.params = self.params;
        searcher.optimizations = self.optimizations;
        searcher.damaged = self.damaged.clone();
        searcher.damage_report = self.damage_report.clone();
        searcher.chunk_cache = self.chunk_cache.clone();
        searcher.deleted = self.deleted.clone();
        searcher.part_boosts = self.part_boosts.clone();
        searcher
    }

    /// The catalog ids of the blocks, in the searcher's order.
    pub fn block_ids(&self) -> &[u64] {
        &self.block_ids
    }

    /// Every block of the snapshot with its bytes: the searchable ones, then the damaged ones
    /// that have an id (0 bytes: they were not opened).
    pub fn block_sizes(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.block_ids
            .iter()
            .copied()
            .zip(self.blocks.iter().map(|block| block.file_len()))
            .chain(self.damaged.iter().filter_map(|d| Some((d.block?, 0))))
    }

    /// Every field of the snapshot: events per column type, and whether it is tokenized
    /// (the UI's field list; a cluster's root merges its leaves' with `FieldSummary::merge`).
    pub fn field_summary(&self) -> BTreeMap<String, FieldSummary> {
        let mut fields: BTreeMap<String, FieldSummary> = BTreeMap::new();
        for block in &self.blocks {
            for field in &block.manifest().fields {
                let summary = fields.entry(field.name.clone()).or_default();
                for column in &field.columns {
                    *summary
                        .types
                        .entry(column.ty.name().to_owned())
                        .or_default() += column.present_count;
                }
                summary.full_text |= field.text.is_some();
            }
        }
        fields
    }

    /// The same searcher seeing only the docs whose `_time` `keep` accepts; the others are
    /// left out as deleted docs are (a slice of a sliced scroll: quarry-server's es_scroll.rs).
    pub fn only_times(&self, keep: impl Fn(i64) -> bool) -> Result<Searcher> {
        self.keeping(|_, block| {
            let corrupt = |e| block.corrupt("_time column", e);
            let column = block
                .time_column()
                .ok_or_else(|| corrupt(DecodeError::new("missing")))?;
            let mut cursor = quarry_format::column::ChunkCursor::new(column);
            (0..block.doc_count())
                .map(|doc| {
                    let found = cursor.find(doc).map_err(corrupt)?;
                    Ok(found
                        .and_then(|(chunk, at)| chunk.raw(at))
                        .is_some_and(|raw| keep(raw as i64)))
                })
                .collect()
        })
    }

    /// The same searcher seeing only the docs `query` matches; the others are left out as
    /// deleted docs are (a filtered alias: quarry-server's es_aliases.rs).
    pub fn only_matching(&self, query: &Query) -> Result<Searcher> {
        let weight = self.filter_weight(query);
        self.keeping(|index, block| {
            let mut matched = vec![false; block.doc_count() as usize];
            if let Some(mut scorer) = weight.scorer(index, block)? {
                scorer.for_each_doc(&mut |doc| {
                    if let Some(seen) = matched.get_mut(doc as usize) {
                        *seen = true;
                    }
                });
                self.check_scorer(index, scorer.as_ref())?;
            }
            Ok(matched)
        })
    }

    /// The same searcher without the docs `kept` (by block index and block, one flag per
    /// doc) says no to, besides those already deleted.
    fn keeping(
        &self,
        mut kept: impl FnMut(usize, &BlockReader) -> Result<Vec<bool>>,
    ) -> Result<Searcher> {
        let mut deleted = (*self.deleted).clone();
        for (index, block) in self.blocks.iter().enumerate() {
            let keep = kept(index, block)?;
            let key = block_key(block);
            let before: &[u32] = deleted.get(&key).map_or(&[], |d| d);
            let left: Vec<u32> = (0..block.doc_count())
                .filter(|&doc| {
                    !keep.get(doc as usize).copied().unwrap_or(false)
                        || before.binary_search(&doc).is_ok()
                })
                .collect();
            if !left.is_empty() {
                deleted.insert(key, left.into());
            }
        }
        Ok(self.clone().with_deleted(deleted))
    }

    /// `weight` less the deleted docs, when some block has any.
    fn live_only(&self, weight: Weight) -> Weight {
        if self.deleted.is_empty() {
            return weight;
        }
        let lists: Vec<Option<Arc<[u32]>>> = self
            .blocks
            .iter()
            .map(|b| self.deleted.get(&block_key(b)).cloned())
            .collect();
        if lists.iter().all(Option::is_none) {
            return weight;
        }
        Weight::Bool {
            must: vec![weight],
            should: Vec::new(),
            must_not: vec![Weight::Docs(lists.into())],
        }
    }

    /// The fields bare words search.
    pub fn text_fields(&self) -> &[String] {
        &self.text_fields
    }

    pub fn parse(&self, text: &str) -> Result<Query> {
        let ast = parser::parse(text)?;
        self.plan(&ast)
    }

    /// A parsed query (or one compiled from Elasticsearch's DSL) analyzed for these blocks.
    pub fn plan(&self, ast: &parser::Ast) -> Result<Query> {
        let in_blocks = || {
            let fields = self.blocks.iter().flat_map(|b| &b.manifest().fields);
            fields.map(|f| f.name.clone()).collect()
        };
        match crate::field_names::resolve(ast, self.schema.mapping(), in_blocks) {
            Some(resolved) => plan(&resolved, &self.schema, &self.text_fields),
            None => plan(ast, &self.schema, &self.text_fields),
        }
    }

    /// The weight of a scored search: statistics (idf, norms) over every block.
    pub fn weight(&self, query: &Query) -> Result<Weight> {
        self.weight_with(query, None)
    }

    /// `weight`, with the collection-wide statistics `global` (summed over every leaf of a
    /// distributed search, leaf.rs) instead of this searcher's own.
    pub fn weight_with(&self, query: &Query, global: Option<&GlobalStats>) -> Result<Weight> {
        // Scorers read the norms of the fields they score.
        let mut scored = std::collections::BTreeSet::new();
        query.for_each_term(&mut |field, _| {
            scored.insert(field.to_owned());
        });
        query.for_each_scored_exact(&mut |field, _, _| {
            scored.insert(field.to_owned());
        });
        self.prefetch_with(query, &|block| {
            let fields = scored.iter().filter_map(|name| block.field_ordinal(name));
            block.on_demand_ranges(fields, false, true)
        })?;
        let stats = CollectionStats::gather_with(query, &self.blocks, global)?;
        Ok(self.live_only(Weight::new(query, &stats, self.params, self.optimizations)))
    }

    /// The weight of a search that is not scored: no statistics, and each block's terms are
    /// looked up only if that block is searched (a tail usually stops in the newest block).
    /// Fetches, in every remote block at once, the postings `query`'s scorers will read there
    /// (`Query::terms_in`): each block's as one batch of ranged reads, the blocks in parallel,
    /// so a query over object storage waits for about one round trip for them, not one per
    /// term per block. Searches that read every block call it (ranked ones, counts,
    /// histograms, aggregations); a tail, which usually stops in its newest block, fetches as
    /// it goes. Nothing to do for blocks in files or memory.
    pub fn prefetch(&self, query: &Query) -> Result<()> {
        self.prefetch_with(query, &|_| Vec::new())
    }

    /// `prefetch`, with the ranges `extra` names in each remote block in the same batch: the
    /// doc values or norms (read on demand by a remote block) the search will read.
    pub(crate) fn prefetch_with(
        &self,
        query: &Query,
        extra: &(dyn Fn(&BlockReader) -> Vec<std::ops::Range<u64>> + Sync),
    ) -> Result<()> {
        let remote: Vec<&Arc<BlockReader>> = self
            .blocks
            .iter()
            .filter(|block| block.is_remote())
            .collect();
        if remote.is_empty() {
            return Ok(());
        }
        // What each block's scorers will read, and which blocks lack some of it: a query
        // asked again (warm) finds everything at hand and starts no thread.
        let mut wanted = Vec::new();
        for block in remote {
            let mut terms = Vec::new();
            query.terms_in(block, &mut terms)?;
            let mut ranges =
                block.terms_ranges(terms.iter().map(|(info, positions)| (info, *positions)));
            ranges.extend(extra(block));
            if block.is_missing(&ranges) {
                wanted.push((block, ranges));
            }
        }
        // A block that cannot be read fails here, named, as it would in its scorer.
        parallel(&wanted, |(block, ranges)| Ok(block.prefetch(ranges)?))
    }

    /// `filter_weight` after `prefetch`: for searches that read every block.
    pub(crate) fn filter_weight_prefetched(&self, query: &Query) -> Result<Weight> {
        self.prefetch(query)?;
        Ok(self.filter_weight(query))
    }

    /// `filter_weight` after `prefetch`, with the doc values of `fields` in the same batch:
    /// for aggregations, which read them for every match.
    pub(crate) fn filter_weight_prefetched_with_values<'f>(
        &self,
        query: &Query,
        fields: impl Iterator<Item = &'f str> + Clone + Sync,
    ) -> Result<Weight> {
        self.prefetch_with(query, &|block| {
            let ordinals = fields.clone().filter_map(|name| block.field_ordinal(name));
            block.on_demand_ranges(ordinals, true, false)
        })?;
        Ok(self.filter_weight(query))
    }

    pub fn filter_weight(&self, query: &Query) -> Weight {
        let query = query.unscored();
        let stats = CollectionStats::unscored(&query, &self.blocks);
        self.live_only(Weight::new(&query, &stats, self.params, self.optimizations))
    }

    pub fn search(&self, query: &Query, request: &HitsRequest) -> Result<Hits> {
        self.search_with(query, request, None)
    }

    /// `search`, a ranked one scored with the collection-wide statistics `global` (leaf.rs).
    pub fn search_with(
        &self,
        query: &Query,
        request: &HitsRequest,
        global: Option<&GlobalStats>,
    ) -> Result<Hits> {
        // No hits asked for: nothing to score (a relevance search would gather statistics
        // and read every scored field's norms for nothing).
        if request.limit == 0 {
            return Ok(Hits {
                hits: Vec::new(),
                count: match request.count {
                    true => Some(self.count(query)?),
                    false => None,
                },
            });
        }
        let weight = match request.sort {
            SortOrder::Relevance => self.weight_with(query, global)?,
            SortOrder::TimeDesc | SortOrder::TimeAsc => {
                self.filter_weight(query).with_checked_ranges()
            }
        };
        let mut count = None;
        let hits = match request.sort {
            SortOrder::Relevance if request.count => {
                let (top, total) = self.top_k_count_weight(&weight, request.limit)?;
                count = Some(total);
                top
            }
            SortOrder::Relevance => self.top_k_weight(&weight, request.limit)?,
            order => {
                return Ok(Hits {
                    hits: self.by_time(query, &weight, request.limit, order, request.after)?,
                    count: match request.count {
                        true => Some(self.count_weight(&weight)?),
                        false => None,
                    },
                })
            }
        };
        let hits = hits
            .into_iter()
            .map(|hit| {
                Ok(Hit {
                    block: hit.block,
                    doc: hit.doc,
                    score: Some(hit.score),
                    time: self.time_of(hit.block, hit.doc)?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Hits { hits, count })
    }

    /// Whether each event at `at` (cursors of this searcher's hits) matches `query`.
    pub fn which_match(&self, query: &Query, at: &[Cursor]) -> Result<Vec<bool>> {
        let weight = self.filter_weight(query);
        let mut found = vec![false; at.len()];
        // By block, docs ascending: a scorer only moves forward.
        let mut order: Vec<usize> = (0..at.len()).collect();
        order.sort_by_key(|&i| (at[i].block_id, at[i].doc));
        let mut start = 0;
        while start < order.len() {
            let block_id = at[order[start]].block_id;
            let end = start
                + order[start..]
                    .iter()
                    .take_while(|&&i| at[i].block_id == block_id)
                    .count();
            if let Some(index) = self.block_ids.iter().position(|&id| id == block_id) {
                if let Some(mut scorer) = weight.scorer(index, &self.blocks[index])? {
                    for &i in &order[start..end] {
                        let doc = at[i].doc;
                        if scorer.doc() < doc {
                            scorer.seek(doc);
                        }
                        found[i] = scorer.doc() == doc;
                    }
                    self.check_scorer(index, scorer.as_ref())?;
                }
            }
            start = end;
        }
        Ok(found)
    }

    pub fn count(&self, query: &Query) -> Result<u64> {
        self.count_weight(&self.filter_weight_prefetched(query)?)
    }

    pub(crate) fn check_scorer(&self, block: usize, scorer: &dyn Scorer) -> Result<()> {
        match scorer.error() {
            None => Ok(()),
            Some(error) => Err(self.blocks[block].corrupt("postings", error).into()),
        }
    }

    fn count_weight(&self, weight: &Weight) -> Result<u64> {
        let mut total = 0u64;
        let disjunction = disjunction_clauses(weight).filter(|clauses| clauses.len() > 1);
        let mut bits: Vec<u64> = Vec::new();
        for (index, block) in self.blocks.iter().enumerate() {
            // A disjunction is counted clause by clause into a bitset of the block's docs:
            // each posting list is walked once on its own, with no per-doc merging of the
            // clauses (as a union scorer would do), then the bits are counted.
            if let Some(clauses) = &disjunction {
                bits.clear();
                bits.resize(block.doc_count() as usize / 64 + 1, 0);
                for clause in clauses {
                    let Some(mut scorer) = clause.scorer(index, block)? else {
                        continue;
                    };
                    scorer.for_each_doc(&mut |doc| {
                        // A doc id past the block (corrupt postings) is ignored, not a panic.
                        if let Some(word) = bits.get_mut(doc as usize / 64) {
                            *word |= 1 << (doc % 64);
                        }
                    });
                    self.check_scorer(index, scorer.as_ref())?;
                }
                total += bits.iter().map(|w| u64::from(w.count_ones())).sum::<u64>();
                continue;
            }
            // Fast paths: a single term's count is its doc frequency; `*` is the doc count;
            // `+a -b` counts `a`'s docs less those it shares with `b` (an intersection, which
            // runs block pair by block pair, where the exclusion seeks `b` doc by doc).
            match weight {
                Weight::Bool {
                    must,
                    should,
                    must_not,
                } if should.is_empty()
                    && matches!(must.as_slice(), [Weight::Term { .. }])
                    && matches!(must_not.as_slice(), [Weight::Term { .. }]) =>
                {
                    let Some(required) = must[0].term_scorer(index, block)? else {
                        continue;
                    };
                    let all = u64::from(required.doc_freq());
                    let shared = match must_not[0].term_scorer(index, block)? {
                        Some(excluded) => {
                            let mut both = TermConjunctionScorer::new(vec![required, excluded]);
                            let shared = both.count_rest();
                            self.check_scorer(index, &both)?;
                            shared
                        }
                        None => 0,
                    };
                    total += all - shared;
                    continue;
                }
                Weight::Term {
                    field, term, infos, ..
                } => {
                    if let Some((_, info)) = infos.get(index, block, field, term)? {
                        total += u64::from(info.doc_freq);
                    }
                    continue;
                }
                Weight::All => {
                    total += u64::from(block.doc_count());
                    continue;
                }
                _ => {}
            }
            if let Some(mut scorer) = weight.scorer(index, block)? {
                total += scorer.count_rest();
                self.check_scorer(index, scorer.as_ref())?;
            }
        }
        Ok(total)
    }

    pub fn top_k(&self, query: &Query, k: usize) -> Result<Vec<ScoredDoc>> {
        self.top_k_weight(&self.weight(query)?, k)
    }

    /// The top k and the number of matches (`TOP_k_COUNT`).
    pub fn top_k_count(&self, query: &Query, k: usize) -> Result<(Vec<ScoredDoc>, u64)> {
        self.top_k_count_weight(&self.weight(query)?, k)
    }

    /// A disjunction or a single term is counted on its own (a bitset of the clauses' docs,
    /// or the doc frequency), so its top k keeps its pruning. Anything else is one pass that
    /// scores and counts every match: a pruned top k and a separate count ran a phrase's
    /// position checks, or a conjunction's intersection, twice (`TOP_10_COUNT` of `"the
    /// who"` cost 26.5 ms against 13.4 ms for `TOP_10`, on Wikipedia).
    fn top_k_count_weight(&self, weight: &Weight, k: usize) -> Result<(Vec<ScoredDoc>, u64)> {
        let counted_apart = matches!(weight, Weight::Term { .. } | Weight::All)
            || disjunction_clauses(weight).is_some_and(|clauses| clauses.len() > 1);
        if (counted_apart && self.part_boosts.is_none()) || k == 0 {
            let top = self.top_k_weight(weight, k)?;
            return Ok((top, self.count_weight(weight)?));
        }
        let mut top = TopK::new(k);
        let mut total = 0;
        for index in 0..self.blocks.len() {
            if let Some(mut scorer) = self.boosted_scorer(weight, index)? {
                total += collect_all_counted(scorer.as_mut(), index as u32, &mut top);
                self.check_scorer(index, scorer.as_ref())?;
            }
        }
        Ok((top.into_sorted(), total))
    }

    fn top_k_weight(&self, weight: &Weight, k: usize) -> Result<Vec<ScoredDoc>> {
        let mut top = TopK::new(k);
        if k == 0 {
            return Ok(Vec::new());
        }
        if self.part_boosts.is_some() {
            // Every part's scores scaled: the plain walk (no per-clause pruning paths).
            for index in 0..self.blocks.len() {
                if let Some(mut scorer) = self.boosted_scorer(weight, index)? {
                    collect_all(scorer.as_mut(), index as u32, &mut top);
                    self.check_scorer(index, scorer.as_ref())?;
                }
            }
            return Ok(top.into_sorted());
        }
        let disjunction = disjunction_clauses(weight);
        let term_less = term_less_others(weight);
        for (index, block) in self.blocks.iter().enumerate() {
            match &disjunction {
                // The common ranked query, terms ORed (over fields), gets concrete scorers.
                Some(clauses)
                    if clauses.len() > 1
                        && clauses.iter().all(|c| matches!(c, Weight::Term { .. })) =>
                {
                    let mut scorers = Vec::with_capacity(clauses.len());
                    for clause in clauses {
                        scorers.extend(clause.term_scorer(index, block)?);
                    }
                    collect_max_score(&mut scorers, index as u32, &mut top);
                    for scorer in &scorers {
                        self.check_scorer(index, scorer)?;
                    }
                }
                Some(clauses) if clauses.len() > 1 => {
                    let mut scorers: Vec<BoxScorer> = Vec::with_capacity(clauses.len());
                    for clause in clauses {
                        scorers.extend(clause.scorer(index, block)?);
                    }
                    collect_max_score(&mut scorers, index as u32, &mut top);
                    for scorer in &scorers {
                        self.check_scorer(index, scorer.as_ref())?;
                    }
                }
                _ if matches!(weight, Weight::Term { .. }) => {
                    if let Some(mut scorer) = weight.term_scorer(index, block)? {
                        scorer.collect_top_k(index as u32, &mut top);
                        self.check_scorer(index, &scorer)?;
                    }
                }
                // `+a -b ...`: `a`'s blocks scored whole, the exclusions looked up only for
                // docs that would enter the top k.
                _ if term_less.is_some() => {
                    let (required, must_not) = term_less.expect("guarded by is_some");
                    if let Some(mut scorer) = required.term_scorer(index, block)? {
                        let mut excluded = Weight::any_scorer(must_not, index, block)?;
                        scorer.collect_top_k_excluding(
                            index as u32,
                            &mut top,
                            excluded.as_deref_mut().map(|e| e as &mut dyn Scorer),
                        );
                        self.check_scorer(index, &scorer)?;
                        if let Some(excluded) = &excluded {
                            self.check_scorer(index, excluded.as_ref())?;
                        }
                    }
                }
                _ => {
                    if let Some(mut scorer) = weight.scorer(index, block)? {
                        collect_all(scorer.as_mut(), index as u32, &mut top);
                        self.check_scorer(index, scorer.as_ref())?;
                    }
                }
            }
        }
        Ok(top.into_sorted())
    }

    fn time_of(&self, block: u32, doc: u32) -> Result<i64> {
        let reader = &self.blocks[block as usize];
        // From the resident time offsets when the block has them: no chunk to decode (or, for
        // a remote block, to fetch: a round trip per hit's chunk).
        if let Some(time) = reader.time_of_doc(doc) {
            return Ok(time);
        }
        let corrupt = |e: DecodeError| QueryError::from(reader.corrupt("_time column", e));
        let column = reader
            .time_column()
            .ok_or_else(|| corrupt(DecodeError::new("no _time column")))?;
        match column.get(doc).map_err(corrupt)? {
            Some(Value::Timestamp(t)) => Ok(t),
            _ => Err(corrupt(DecodeError::new("doc without _time"))),
        }
    }

    /// The stored event of a hit, as flattened fields (without `_time`).
    pub fn event(&self, hit: &Hit) -> Result<Vec<(String, Value)>> {
        let block = &self.blocks[hit.block as usize];
        let mut fetcher = DocumentFetcher::with_fields(block, |name| name != TIME_FIELD)
            .cached(self.chunk_cache.as_deref());
        Ok(fetcher.fetch(hit.doc)?)
    }

    /// The events of many hits, in the hits' order. Each block's hits are fetched in doc
    /// order through one fetcher, so each column chunk is decoded at most once per call
    /// (a tail of 1,000 hits from one block decoded the same chunks a thousand times when each
    /// hit had its own fetcher, issue 10 item 7).
    pub fn events(&self, hits: &[Hit]) -> Result<Vec<Vec<(String, Value)>>> {
        let mut order: Vec<usize> = (0..hits.len()).collect();
        order.sort_unstable_by_key(|&i| (hits[i].block, hits[i].doc));
        let mut events = vec![Vec::new(); hits.len()];
        self.prefetch_events(hits)?;
        let mut fetcher: Option<(u32, DocumentFetcher)> = None;
        for i in order {
            let hit = &hits[i];
            if fetcher.as_ref().map(|(block, _)| *block) != Some(hit.block) {
                let block = &self.blocks[hit.block as usize];
                let fields = DocumentFetcher::with_fields(block, |name| name != TIME_FIELD)
                    .cached(self.chunk_cache.as_deref());
                fetcher = Some((hit.block, fields));
            }
            let (_, fields) = fetcher.as_mut().expect("set just above");
            events[i] = fields.fetch(hit.doc)?;
        }
        Ok(events)
    }

    /// Fetches the column chunks the events of `hits` need from each remote block, as one
    /// batch per block, the blocks in parallel (one round trip for a page of hits).
    fn prefetch_events(&self, hits: &[Hit]) -> Result<()> {
        let mut docs: HashMap<u32, BTreeSet<u32>> = HashMap::new();
        for hit in hits {
            if self.blocks[hit.block as usize].is_remote() {
                docs.entry(hit.block).or_default().insert(hit.doc);
            }
        }
        let docs: Vec<(u32, Vec<u32>)> = docs
            .into_iter()
            .map(|(block, docs)| (block, docs.into_iter().collect()))
            .collect();
        let mut wanted = Vec::new();
        for (block, docs) in docs {
            let block = &self.blocks[block as usize];
            let ranges = DocumentFetcher::with_fields(block, |name| name != TIME_FIELD)
                .chunk_ranges(&docs)?;
            if block.is_missing(&ranges) {
                wanted.push((block, ranges));
            }
        }
        parallel(&wanted, |(block, ranges)| Ok(block.prefetch(ranges)?))
    }

    /// Only the named fields of a hit (e.g. `url` for the benchmark).
    pub fn fields(&self, hit: &Hit, names: &[&str]) -> Result<Vec<(String, Value)>> {
        let block = &self.blocks[hit.block as usize];
        let mut fetcher = DocumentFetcher::with_fields(block, |name| names.contains(&name))
            .cached(self.chunk_cache.as_deref());
        Ok(fetcher.fetch(hit.doc)?)
    }
}

/// A block's key in `Searcher::with_deleted`: its reader's address (a reader is shared by
/// every snapshot that holds the block).
pub fn block_key(block: &Arc<BlockReader>) -> usize {
    Arc::as_ptr(block) as usize
}

/// `+a -b -c ...`: a single required term less other clauses (no optional ones), as its term
/// and the excluded clauses.
fn term_less_others(weight: &Weight) -> Option<(&Weight, &[Weight])> {
    match weight {
        Weight::Bool {
            must,
            should,
            must_not,
        } if should.is_empty() && !must_not.is_empty() => match must.as_slice() {
            [term @ Weight::Term { .. }] => Some((term, must_not.as_slice())),
            _ => None,
        },
        _ => None,
    }
}

/// The clauses of a pure disjunction (score = sum of matching clauses), flattened through
/// nested `Any`s so MaxScore sees every term with its own bound.
fn disjunction_clauses(weight: &Weight) -> Option<Vec<&Weight>> {
    fn flatten<'w>(weight: &'w Weight, out: &mut Vec<&'w Weight>) {
        match weight {
            Weight::Any(clauses) => clauses.iter().for_each(|c| flatten(c, out)),
            Weight::Bool {
                must,
                should,
                must_not,
            } if must.is_empty() && must_not.is_empty() => {
                should.iter().for_each(|c| flatten(c, out))
            }
            other => out.push(other),
        }
    }
    match weight {
        Weight::Any(_) | Weight::Bool { .. } => {
            let mut out = Vec::new();
            flatten(weight, &mut out);
            let pure = match weight {
                Weight::Bool { must, must_not, .. } => must.is_empty() && must_not.is_empty(),
                _ => true,
            };
            pure.then_some(out)
        }
        _ => None,
    }
}

/// A value as JSON: arrays (kept as JSON text) are parsed back.
/// The fields bare words search: the mapping's `default_search_fields` when it names some,
/// else every tokenized field of any block that the mapping does not map otherwise, sorted.
fn text_fields(blocks: &[Arc<BlockReader>], schema: &Schema) -> Vec<String> {
    let named = &schema.mapping().default_search_fields;
    if !named.is_empty() {
        return named.clone();
    }
    let names: BTreeSet<String> = blocks
        .iter()
        .flat_map(|b| {
            b.manifest()
                .fields
                .iter()
                .filter(|f| f.text.is_some())
                .filter(|f| schema.mapping().nested_parent(&f.name).is_none())
                .filter(|f| {
                    schema.rules(&f.name).is_none_or(|rules| {
                        rules.index && rules.ty == quarry_store::FieldType::Text
                    })
                })
                .map(|f| f.name.clone())
        })
        .collect();
    names.into_iter().collect()
}

pub fn value_to_json(value: &Value) -> serde_json::Value {
    match value {
        Value::Str(s) => serde_json::Value::String(s.clone()),
        Value::I64(v) => (*v).into(),
        Value::U64(v) => (*v).into(),
        Value::F64(v) => serde_json::Number::from_f64(*v)
            .map_or(serde_json::Value::Null, serde_json::Value::Number),
        Value::Bool(v) => (*v).into(),
        Value::Timestamp(t) => serde_json::Value::String(quarry_index::event::format_time(*t)),
        Value::Json(text) => {
            serde_json::from_str(text).unwrap_or_else(|_| serde_json::Value::String(text.clone()))
        }
    }
}

/// Runs `work` on each item, on up to 16 threads at once: for fetches from remote blocks,
/// which wait on the network, not the CPU. The first error is returned (after all ran).
fn parallel<T: Sync>(items: &[T], work: impl Fn(&T) -> Result<()> + Sync) -> Result<()> {
    const PARALLEL: usize = 16;
    match items {
        [] => Ok(()),
        [one] => work(one),
        _ => {
            // The threads fetch for the search in scope on this one.
            let counts = quarry_format::FetchCounts::in_scope();
            for group in items.chunks(PARALLEL) {
                let results: Vec<Result<()>> = std::thread::scope(|scope| {
                    let handles: Vec<_> = group
                        .iter()
                        .map(|item| {
                            let counts = counts.as_ref();
                            let work = &work;
                            scope.spawn(move || {
                                quarry_format::FetchCounts::within(counts, || work(item))
                            })
                        })
                        .collect();
                    handles
                        .into_iter()
                        .map(|h| h.join().expect("a fetch thread does not panic"))
                        .collect()
                });
                results.into_iter().collect::<Result<Vec<()>>>()?;
            }
            Ok(())
        }
    }
}
