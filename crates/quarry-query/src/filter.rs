//! Filters that score nothing: time ranges, numeric ranges, `_exists_`, long exact values and
//! dynamic booleans, each turned into a doc set per block with whatever structure answers it
//! cheapest.
//!
//! - A time range is a doc range, because docs are in `_time` order: its two ends are found
//!   through the sparse time index (one binary search, then one decoded 1024-doc `_time`
//!   chunk), seed 000's endpoint idea.
//! - A numeric range reads the numeric terms (one term per distinct value, keys in numeric
//!   order, see `TermKind::I64`): a range of FST keys, whose postings are ORed into a bit set.
//!   When that would touch more terms than a column scan would touch values, or the block has
//!   no numeric terms, the column is scanned instead, skipping chunks by their min/max.
//! - Every structure can be switched off (`Optimizations`) so the benchmark can measure what
//!   each one buys and the tests can check that answers do not change.

use crate::pattern::Pattern;
use crate::range::NumericRange;
use crate::scorer::{BoxScorer, ConjunctionScorer, ConstScorer, Scorer};
use quarry_format::block::ColumnMeta;
use quarry_format::column::{ChunkCursor, ChunkValues, ColumnReader, DecodedChunk};
use quarry_format::docvalues::{DocValues, DocValuesCursor};
use quarry_format::limits::EXACT_TERM_LEN;
use quarry_format::{
    BlockReader, ColumnType, DecodeError, FormatError, Result, TermKind, TERMINATED,
};
use std::sync::Arc;

/// The doc count of one sparse time index entry (FORMAT.md, "Docs and time").
const TIME_INDEX_INTERVAL: u32 = 128;

/// Switches for each optimization of the log queries (seed 000's Table 2: O1 time index,
/// O2 reverse search, O3 endpoint histogram; plus data skipping and the numeric index).
/// All on by default; answers are the same with any of them off, only slower.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Optimizations {
    /// Find time bounds through the sparse time index (off: decode `_time` chunks in order).
    pub time_index: bool,
    /// Tail queries search backwards in growing windows (off: visit every match).
    pub reverse_search: bool,
    /// Histograms count docs between bucket endpoint doc ids (off: read each match's time).
    pub endpoint_histogram: bool,
    /// Skip blocks and column chunks by their time range and min/max (off: visit all).
    pub skipping: bool,
    /// Answer numeric ranges from the numeric terms (off: scan the column).
    pub range_index: bool,
    /// Keep a pattern's term expansions per block across queries (off: walk the term
    /// dictionary every time, as the benchmarks' peers do with their caches off).
    pub expansion_cache: bool,
    /// Find the terms of a wildcard that starts with `*` through a trigram index over the
    /// term dictionary (`ngram.rs`; off: walk every key of the field).
    pub ngram_index: bool,
}

impl Default for Optimizations {
    fn default() -> Self {
        Optimizations::ALL
    }
}

impl Optimizations {
    pub const ALL: Optimizations = Optimizations {
        time_index: true,
        reverse_search: true,
        endpoint_histogram: true,
        skipping: true,
        range_index: true,
        expansion_cache: true,
        ngram_index: true,
    };
    pub const NONE: Optimizations = Optimizations {
        time_index: false,
        reverse_search: false,
        endpoint_histogram: false,
        skipping: false,
        range_index: false,
        expansion_cache: false,
        ngram_index: false,
    };
    pub const NAMES: [&'static str; 7] = [
        "time-index",
        "reverse-search",
        "endpoint-histogram",
        "skipping",
        "range-index",
        "expansion-cache",
        "ngram-index",
    ];

    /// All on except the named ones (each one of `NAMES`, or `all`).
    pub fn without<S: AsRef<str>>(names: &[S]) -> Result<Optimizations, String> {
        let mut optimizations = Optimizations::ALL;
        for name in names {
            optimizations.disable(name.as_ref())?;
        }
        Ok(optimizations)
    }

    /// Turns off the named optimization (one of `NAMES`).
    pub fn disable(&mut self, name: &str) -> Result<(), String> {
        match name {
            "time-index" => self.time_index = false,
            "reverse-search" => self.reverse_search = false,
            "endpoint-histogram" => self.endpoint_histogram = false,
            "skipping" => self.skipping = false,
            "range-index" => self.range_index = false,
            "expansion-cache" => self.expansion_cache = false,
            "ngram-index" => self.ngram_index = false,
            "all" => *self = Optimizations::NONE,
            _ => {
                return Err(format!(
                    "unknown optimization {name:?} (one of: {}, all)",
                    Optimizations::NAMES.join(", ")
                ))
            }
        }
        Ok(())
    }
}

/// Time ranges are `[start, end)` in nanoseconds, except that `end == i64::MAX` means no
/// upper bound (so an event at `i64::MAX` itself is in it). The last time a range holds.
pub fn inclusive_end(end: i64) -> i64 {
    if end == i64::MAX {
        i64::MAX
    } else {
        end - 1
    }
}

/// Whether `[time_min, time_max]` meets the range `[start, end)` (see `inclusive_end`).
pub fn time_overlaps(time_min: i64, time_max: i64, start: i64, end: i64) -> bool {
    start < end && time_max >= start && time_min <= inclusive_end(end)
}

/// Finds, in one block, the first doc whose `_time` is at or after a given time. Look-ups
/// for increasing times reuse the last decoded chunk (histogram endpoints come in order).
pub struct TimeLookup<'a> {
    block: &'a BlockReader,
    column: ColumnReader<'a>,
    optimizations: Optimizations,
    decoded: Option<(usize, DecodedChunk)>,
    /// The last sparse-index search: (time, number of groups starting before it).
    last_search: Option<(i64, usize)>,
    /// How many `_time` chunks were decoded (the benchmark reports it).
    pub chunks_decoded: u64,
}

impl<'a> TimeLookup<'a> {
    pub fn new(block: &'a BlockReader, optimizations: Optimizations) -> Result<TimeLookup<'a>> {
        let column = block
            .time_column()
            .ok_or_else(|| block.corrupt("_time column", DecodeError::new("missing")))?;
        Ok(TimeLookup {
            block,
            column,
            optimizations,
            decoded: None,
            last_search: None,
            chunks_decoded: 0,
        })
    }

    fn corrupt(&self, error: DecodeError) -> FormatError {
        self.block.corrupt("_time column", error)
    }

    fn chunk(&mut self, index: usize) -> Result<&DecodedChunk> {
        if self.decoded.as_ref().is_none_or(|(i, _)| *i != index) {
            let chunk = self
                .column
                .decode_chunk(index)
                .map_err(|e| self.corrupt(e))?;
            self.chunks_decoded += 1;
            self.decoded = Some((index, chunk));
        }
        // Just stored above.
        Ok(&self.decoded.as_ref().expect("decoded chunk").1)
    }

    /// The time of `doc` (every doc has one).
    pub fn time_of(&mut self, doc: u32) -> Result<i64> {
        if self.optimizations.time_index {
            if let Some(time) = self.block.time_of_doc(doc) {
                return Ok(time);
            }
        }
        let index = self
            .column
            .chunk_of(doc)
            .map_err(|e| self.corrupt(e))?
            .ok_or_else(|| self.corrupt(DecodeError::new("doc past the last chunk")))?;
        let chunk = self.chunk(index)?;
        match chunk.position(doc).and_then(|p| chunk.raw(p)) {
            Some(raw) => Ok(raw as i64),
            None => Err(self.corrupt(DecodeError::new("doc without _time"))),
        }
    }

    /// The first doc with `_time >= time` (`doc_count` if none).
    pub fn first_at_or_after(&mut self, time: i64) -> Result<u32> {
        let manifest = self.block.manifest();
        let doc_count = manifest.doc_count;
        if doc_count == 0 || time <= manifest.time_min {
            return Ok(0);
        }
        if time > manifest.time_max {
            return Ok(doc_count);
        }
        let first_chunk = if self.optimizations.time_index {
            // Groups whose first doc is before `time`: the answer is past the first doc of the
            // last of them and at most the first doc of the next.
            let groups = self.block.sparse_time_len();
            let (mut lo, mut hi) = (0usize, groups);
            // Histogram endpoints come in increasing order: gallop forward from the last
            // answer instead of searching the whole index again (fewer cache misses).
            if let Some((last_time, last_lo)) = self.last_search {
                if time >= last_time {
                    lo = last_lo;
                    let mut step = 1usize;
                    while lo + step - 1 < groups {
                        match self.block.sparse_time(lo + step - 1) {
                            Some(t) if t < time => {
                                lo += step;
                                step *= 2;
                            }
                            _ => {
                                hi = lo + step - 1;
                                break;
                            }
                        }
                    }
                }
            }
            while lo < hi {
                let mid = (lo + hi) / 2;
                match self.block.sparse_time(mid) {
                    Some(t) if t < time => lo = mid + 1,
                    _ => hi = mid,
                }
            }
            self.last_search = Some((time, lo));
            if lo == 0 {
                return Ok(0);
            }
            // The bit-packed offsets answer within the group without decoding a chunk; a rank
            // of the whole group is the next group's first doc (or the block's doc count).
            if let Some(at) = self.block.time_group_rank(lo - 1, time) {
                return Ok(((lo as u32 - 1) * TIME_INDEX_INTERVAL + at as u32).min(doc_count));
            }
            let doc = (lo as u32 - 1) * TIME_INDEX_INTERVAL;
            self.column
                .chunk_of(doc)
                .map_err(|e| self.corrupt(e))?
                .unwrap_or(0)
        } else {
            0
        };
        // Walk chunks from there; with the index this is one chunk (rarely two).
        for index in first_chunk..self.column.chunk_count() {
            if !self.optimizations.time_index && self.optimizations.skipping {
                // Without the time index, the chunk directory's max still skips whole chunks.
                let meta = self.column.chunk_meta(index).map_err(|e| self.corrupt(e))?;
                if (meta.max as i64) < time {
                    continue;
                }
            }
            let chunk = self.chunk(index)?;
            if let ChunkValues::Numbers(values) = &chunk.values {
                let at = values.partition_point(|&raw| (raw as i64) < time);
                if at < values.len() {
                    return Ok(match &chunk.docs {
                        None => chunk.first_doc + at as u32,
                        Some(docs) => docs[at],
                    });
                }
            }
        }
        Ok(doc_count)
    }

    /// The docs with `_time` in `[start, end)`, as a doc range.
    pub fn doc_range(&mut self, start: i64, end: i64) -> Result<(u32, u32)> {
        if start >= end {
            return Ok((0, 0));
        }
        let lo = self.first_at_or_after(start)?;
        let hi = if end == i64::MAX {
            self.block.doc_count()
        } else {
            self.first_at_or_after(end)?
        };
        Ok((lo, hi.max(lo)))
    }
}

/// Every doc in `[doc, end)`.
pub struct DocRangeScorer {
    pub doc: u32,
    pub end: u32,
}

impl DocRangeScorer {
    pub fn new(start: u32, end: u32) -> DocRangeScorer {
        DocRangeScorer {
            doc: if start < end { start } else { TERMINATED },
            end,
        }
    }
}

impl Scorer for DocRangeScorer {
    fn doc(&self) -> u32 {
        self.doc
    }
    fn advance(&mut self) -> u32 {
        self.seek(self.doc.saturating_add(1))
    }
    fn seek(&mut self, target: u32) -> u32 {
        if self.doc != TERMINATED {
            let next = target.max(self.doc);
            self.doc = if next >= self.end { TERMINATED } else { next };
        }
        self.doc
    }
    fn score(&mut self) -> f32 {
        0.0
    }
    fn max_score(&self) -> f32 {
        0.0
    }
    fn cost(&self) -> u64 {
        u64::from(self.end.saturating_sub(self.doc))
    }
}

/// The docs of a bit set (one bit per doc of the block).
pub struct BitSetScorer {
    words: Vec<u64>,
    doc: u32,
    count: u64,
}

impl BitSetScorer {
    pub fn new(words: Vec<u64>) -> BitSetScorer {
        let count = words.iter().map(|w| u64::from(w.count_ones())).sum();
        let mut scorer = BitSetScorer {
            words,
            doc: 0,
            count,
        };
        scorer.doc = scorer.next_set(0);
        scorer
    }

    fn next_set(&self, from: u32) -> u32 {
        let mut index = from as usize / 64;
        let Some(&first) = self.words.get(index) else {
            return TERMINATED;
        };
        let mut word = first & (u64::MAX << (from % 64));
        loop {
            if word != 0 {
                return (index * 64) as u32 + word.trailing_zeros();
            }
            index += 1;
            match self.words.get(index) {
                Some(&w) => word = w,
                None => return TERMINATED,
            }
        }
    }
}

impl Scorer for BitSetScorer {
    fn doc(&self) -> u32 {
        self.doc
    }
    fn advance(&mut self) -> u32 {
        self.seek(self.doc.saturating_add(1))
    }
    fn seek(&mut self, target: u32) -> u32 {
        if self.doc != TERMINATED && target > self.doc {
            self.doc = self.next_set(target);
        }
        self.doc
    }
    fn score(&mut self) -> f32 {
        0.0
    }
    fn max_score(&self) -> f32 {
        0.0
    }
    fn cost(&self) -> u64 {
        self.count
    }
}

/// The docs of a sorted list (a block's deleted docs: `Searcher::with_deleted`).
pub struct DocListScorer {
    docs: Arc<[u32]>,
    next: usize,
}

impl DocListScorer {
    pub fn new(docs: Arc<[u32]>) -> DocListScorer {
        DocListScorer { docs, next: 0 }
    }
}

impl Scorer for DocListScorer {
    fn doc(&self) -> u32 {
        self.docs.get(self.next).copied().unwrap_or(TERMINATED)
    }
    fn advance(&mut self) -> u32 {
        self.next = (self.next + 1).min(self.docs.len());
        self.doc()
    }
    fn seek(&mut self, target: u32) -> u32 {
        if self.doc() < target {
            self.next += self.docs[self.next..].partition_point(|&doc| doc < target);
        }
        self.doc()
    }
    fn score(&mut self) -> f32 {
        0.0
    }
    fn max_score(&self) -> f32 {
        0.0
    }
    fn cost(&self) -> u64 {
        (self.docs.len() - self.next) as u64
    }
}

fn bit_set(words: &mut [u64], doc: u32) {
    if let Some(word) = words.get_mut(doc as usize / 64) {
        *word |= 1 << (doc % 64);
    }
}

/// Sets the bits `[start, end)`, a word at a time; bits past the set are ignored (a corrupt
/// chunk directory may claim docs up to u32::MAX).
/// The scorer of `Query::ContentId` in one block: the docs at `time` (few: one nanosecond)
/// without a client-given `_id`, whose stored fields hash to `hash`.
pub fn content_id_scorer(
    block: &BlockReader,
    time: i64,
    hash: u64,
) -> Result<Option<BoxScorer<'_>>> {
    use crate::doc_id::{fields_hash, ID_FIELD};
    let manifest = block.manifest();
    if !time_overlaps(
        manifest.time_min,
        manifest.time_max,
        time,
        time.saturating_add(1),
    ) {
        return Ok(None);
    }
    let (lo, hi) = TimeLookup::new(block, Optimizations::default())?
        .doc_range(time, time.saturating_add(1))?;
    let mut fetcher = quarry_format::block::DocumentFetcher::with_fields(block, |name| {
        name != crate::parser::TIME_FIELD
    });
    let mut words = empty_bits(block);
    let mut any = false;
    for doc in lo..hi {
        let fields = fetcher.fetch(doc)?;
        let given_id = fields.iter().any(|(name, _)| name == ID_FIELD);
        if !given_id && fields_hash(fields.iter().map(|(n, v)| (n.as_str(), v))) == hash {
            bit_set(&mut words, doc);
            any = true;
        }
    }
    Ok(any.then(|| Box::new(BitSetScorer::new(words)) as BoxScorer))
}

fn bit_clear(words: &mut [u64], doc: u32) {
    if let Some(word) = words.get_mut(doc as usize / 64) {
        *word &= !(1u64 << (doc % 64));
    }
}

fn bit_set_range(words: &mut [u64], start: u32, end: u32) {
    let end = u64::from(end).min(words.len() as u64 * 64);
    let mut doc = u64::from(start);
    while doc < end {
        let (word, bit) = ((doc / 64) as usize, doc % 64);
        let bits = (end - doc).min(64 - bit);
        let mask = if bits == 64 {
            u64::MAX
        } else {
            ((1u64 << bits) - 1) << bit
        };
        words[word] |= mask;
        doc += bits;
    }
}

fn empty_bits(block: &BlockReader) -> Vec<u64> {
    vec![0u64; block.doc_count() as usize / 64 + 1]
}

/// The numeric column types a range applies to.
const NUMERIC_COLUMNS: [ColumnType; 3] = [ColumnType::I64, ColumnType::U64, ColumnType::F64];

fn raw_in_range(range: &NumericRange, ty: ColumnType, raw: u64) -> bool {
    match ty {
        ColumnType::I64 => range.contains_i64(raw as i64),
        ColumnType::U64 => range.contains_u64(raw),
        ColumnType::F64 => range.contains_f64(f64::from_bits(raw)),
        _ => false,
    }
}

/// Whether a column (or chunk) with values in `[min, max]` may hold a value in the range,
/// and whether every value it holds is in it (the range is convex).
fn min_max_test(range: &NumericRange, ty: ColumnType, min: u64, max: u64) -> (bool, bool) {
    let (lo, hi) = (raw_in_range(range, ty, min), raw_in_range(range, ty, max));
    if lo || hi {
        return (true, lo && hi);
    }
    // Neither end is inside: the range may still lie strictly between them.
    let between = match ty {
        ColumnType::I64 => range
            .i64_bounds()
            .is_some_and(|(a, b)| (min as i64) < a && b < (max as i64)),
        ColumnType::U64 => match (i64::try_from(min), i64::try_from(max)) {
            (Ok(min), Ok(max)) => range.i64_bounds().is_some_and(|(a, b)| min < a && b < max),
            // Values above i64::MAX: do not skip (rare; the scan decides).
            _ => true,
        },
        ColumnType::F64 => {
            let key = |v: u64| u64::from_be_bytes(quarry_format::f64_term(f64::from_bits(v)));
            range
                .f64_key_bounds()
                .is_some_and(|(a, b)| key(min) < u64::from_be_bytes(a) && u64::from_be_bytes(b) < key(max))
                // A column of only NaN has NaN min and max: decide by scanning.
                || f64::from_bits(min).is_nan()
        }
        _ => false,
    };
    (between, false)
}

/// The scorer of `field in range` in one block, or `None` if nothing in the block can match.
pub fn numeric_range_scorer<'a>(
    block: &'a BlockReader,
    field: &str,
    range: &NumericRange,
    optimizations: Optimizations,
    checked: bool,
) -> Result<Option<BoxScorer<'a>>> {
    let Some(ordinal) = block.field_ordinal(field) else {
        return Ok(None);
    };
    let columns = numeric_columns(block, ordinal);
    if columns.is_empty() {
        // A number field mapped `stored: false` keeps only its terms.
        return terms_range_scorer(block, ordinal, range);
    }
    if optimizations.skipping {
        let any = columns.iter().any(|c| {
            c.min_max
                .is_none_or(|m| min_max_test(range, c.ty, m.min, m.max).0)
        });
        if !any {
            return Ok(None);
        }
    }
    // With doc values for every column, a time-sorted search checks docs one by one: its
    // windows ask for few docs, and building the whole block's answer first (below) was most
    // of a range tail's time. Asked for many, the scorer builds it after all.
    if checked && optimizations.range_index {
        if let Some(doc_values) = doc_value_cursors(block, ordinal, &columns) {
            return Ok(Some(Box::new(CheckedRangeScorer::new(
                block,
                ordinal,
                range.clone(),
                optimizations,
                doc_values,
            ))));
        }
    }
    eager_range_scorer(block, ordinal, &columns, range, optimizations)
}

/// The field's numeric columns that hold values.
fn numeric_columns(block: &BlockReader, ordinal: u16) -> Vec<&ColumnMeta> {
    block.manifest().fields[ordinal as usize]
        .columns
        .iter()
        .filter(|c| NUMERIC_COLUMNS.contains(&c.ty) && c.present_count > 0)
        .collect()
}

/// A doc-values cursor for each of `columns`, or `None` if one of them has no doc values.
pub(crate) fn doc_value_cursors<'a>(
    block: &'a BlockReader,
    ordinal: u16,
    columns: &[&ColumnMeta],
) -> Option<Vec<(ColumnType, DocValuesCursor<'a>)>> {
    columns
        .iter()
        .map(|c| Some((c.ty, block.doc_values(ordinal, c.ty)?.cursor())))
        .collect()
}

/// The scorer of a range over the whole block at once: the union of the numeric terms' postings,
/// or a column scan with chunk min/max skipping, whichever is cheaper.
fn eager_range_scorer<'a>(
    block: &'a BlockReader,
    ordinal: u16,
    columns: &[&ColumnMeta],
    range: &NumericRange,
    optimizations: Optimizations,
) -> Result<Option<BoxScorer<'a>>> {
    // u64 values above i64::MAX have only rounded (f64) terms: such columns are scanned.
    let wide_u64 = columns
        .iter()
        .any(|c| c.ty == ColumnType::U64 && c.min_max.is_none_or(|m| m.max > i64::MAX as u64));
    if optimizations.range_index
        && !wide_u64
        && (block.has_terms_of_kind(ordinal, TermKind::I64)
            || block.has_terms_of_kind(ordinal, TermKind::F64))
    {
        let mut infos = Vec::new();
        if let Some((lo, hi)) = range.i64_key_bounds() {
            infos.extend(block.term_range(ordinal, TermKind::I64, &lo, &hi)?);
        }
        if let Some((lo, hi)) = range.f64_key_bounds() {
            infos.extend(block.term_range(ordinal, TermKind::F64, &lo, &hi)?);
        }
        let matches: u64 = infos.iter().map(|i| u64::from(i.doc_freq)).sum();
        let present: u64 = columns.iter().map(|c| c.present_count).sum();
        // Each term costs a dictionary read and a cursor; each scanned value a decode and a
        // compare. Prefer the terms unless they are many and the matches near all values.
        // (A scan of doc values costs about as much: `service:nginx AND latency_ms:[1000 TO
        // 30000]` over 1M generated events, 5,178 terms and 15,841 matches, took 5.2-6.0 ms
        // scanned against 5.2-5.5 ms from the terms; BENCHMARKS.md, session 24.)
        let term_cost = matches + 64 * infos.len() as u64;
        let scan_cost = 2 * present;
        if term_cost <= scan_cost {
            return postings_union(block, &infos);
        }
    }
    scan_columns(block, ordinal, range, optimizations)
}

/// The scorer of `field in range` over the field's number terms only (`Query::IndexedRange`).
pub fn indexed_range_scorer<'a>(
    block: &'a BlockReader,
    field: &str,
    range: &NumericRange,
) -> Result<Option<BoxScorer<'a>>> {
    match block.field_ordinal(field) {
        Some(ordinal) => terms_range_scorer(block, ordinal, range),
        None => Ok(None),
    }
}

/// The union of the numeric terms in `range`: the whole answer for a field without columns.
fn terms_range_scorer<'a>(
    block: &'a BlockReader,
    ordinal: u16,
    range: &NumericRange,
) -> Result<Option<BoxScorer<'a>>> {
    let mut infos = Vec::new();
    if let Some((lo, hi)) = range.i64_key_bounds() {
        infos.extend(block.term_range(ordinal, TermKind::I64, &lo, &hi)?);
    }
    let Some((lo, hi)) = range.f64_key_bounds() else {
        return postings_union(block, &infos);
    };
    // From 2^63 up, integers (`unsigned_long` values past i64) share f64 terms with their
    // neighbours; their exact terms decide instead. Floats there keep their f64 terms.
    let wide_start = quarry_format::f64_term(9_223_372_036_854_775_808.0);
    let wide = if hi >= wide_start {
        block.wide_integer_terms(ordinal)?
    } else {
        Vec::new()
    };
    if wide.is_empty() {
        infos.extend(block.term_range(ordinal, TermKind::F64, &lo, &hi)?);
        return postings_union(block, &infos);
    }
    if lo < wide_start {
        let below = u64::from_be_bytes(wide_start) - 1;
        infos.extend(block.term_range(ordinal, TermKind::F64, &lo, &below.to_be_bytes())?);
    }
    let floats = block.term_range(ordinal, TermKind::F64, &lo.max(wide_start), &hi)?;
    let mut words = empty_bits(block);
    let or_postings = |words: &mut Vec<u64>, info: &quarry_format::TermInfo, set: bool| {
        let mut cursor = block.postings(info)?;
        cursor.for_each_remaining(|doc| {
            if set {
                bit_set(words, doc)
            } else {
                bit_clear(words, doc)
            }
        });
        match cursor.error() {
            Some(error) => Err(block.corrupt("postings", error)),
            None => Ok(()),
        }
    };
    for info in &floats {
        or_postings(&mut words, info, true)?;
    }
    // A wide integer's rounded f64 term says nothing: its exact term alone counts.
    for (_, info) in &wide {
        or_postings(&mut words, info, false)?;
    }
    let inside = wide.iter().filter(|(value, _)| range.contains_u64(*value));
    for info in infos.iter().chain(inside.map(|(_, info)| info)) {
        or_postings(&mut words, info, true)?;
    }
    Ok(Some(Box::new(BitSetScorer::new(words))))
}

/// A numeric range that checks docs against the doc values as they are asked for, and after
/// checking an eighth of the block's docs (a wide window) switches to the eager scorer for
/// the rest (at 10M events, a tail of `nginx AND latency_ms:[1000 TO 30000]` went from 783 to
/// 143 µs).
struct CheckedRangeScorer<'a> {
    block: &'a BlockReader,
    ordinal: u16,
    range: NumericRange,
    optimizations: Optimizations,
    doc_values: Vec<(ColumnType, DocValuesCursor<'a>)>,
    /// Estimated matches in the block (from a sample), the cost reported before switching:
    /// conjunctions pick their leading clause by cost, so it must not be the field's whole
    /// doc count when the range is narrow.
    estimate: u64,
    /// The range as inclusive i64 bounds (`None`: it holds no integer), for the common check.
    bounds: Option<(i64, i64)>,
    doc: u32,
    checked: u32,
    budget: u32,
    eager: Option<Option<BoxScorer<'a>>>,
    error: Option<DecodeError>,
}

impl<'a> CheckedRangeScorer<'a> {
    fn new(
        block: &'a BlockReader,
        ordinal: u16,
        range: NumericRange,
        optimizations: Optimizations,
        doc_values: Vec<(ColumnType, DocValuesCursor<'a>)>,
    ) -> Self {
        let bounds = range.i64_bounds();
        let mut scorer = CheckedRangeScorer {
            block,
            ordinal,
            range,
            optimizations,
            doc_values,
            estimate: 0,
            bounds,
            doc: 0,
            checked: 0,
            budget: (block.doc_count() / 8).max(16),
            eager: None,
            error: None,
        };
        scorer.estimate = scorer.sample_estimate();
        scorer.doc = scorer.find(0);
        scorer
    }

    /// Matches in the block estimated from `SAMPLES` docs spread evenly over it, each read in
    /// place (every sample is in another group: unpacking whole groups would be wasted).
    fn sample_estimate(&self) -> u64 {
        const SAMPLES: u32 = 128;
        let doc_count = self.block.doc_count();
        let step = (doc_count / SAMPLES).max(1);
        let (mut samples, mut hits) = (0u64, 0u64);
        for doc in (0..doc_count).step_by(step as usize) {
            samples += 1;
            let inside = self.doc_values.iter().any(|(ty, values)| {
                let raw = values.values().raw(doc);
                raw.is_some_and(|raw| in_range(&self.range, self.bounds, *ty, raw))
            });
            hits += u64::from(inside);
        }
        // At least one: a sample that missed a rare value does not make the range free.
        (hits * u64::from(doc_count) / samples.max(1)).max(1)
    }

    fn matches(&mut self, doc: u32) -> bool {
        let (range, bounds) = (&self.range, self.bounds);
        self.doc_values.iter_mut().any(|(ty, values)| {
            let raw = values.raw(doc);
            raw.is_some_and(|raw| in_range(range, bounds, *ty, raw))
        })
    }

    /// The first doc `>= from` in the range.
    fn find(&mut self, from: u32) -> u32 {
        if let Some(eager) = &mut self.eager {
            return eager.as_mut().map_or(TERMINATED, |s| s.seek(from));
        }
        let doc_count = self.block.doc_count();
        let mut doc = from;
        while doc < doc_count {
            if self.checked >= self.budget {
                return self.switch(doc);
            }
            self.checked += 1;
            if self.matches(doc) {
                return doc;
            }
            doc += 1;
        }
        TERMINATED
    }

    fn switch(&mut self, from: u32) -> u32 {
        let columns = numeric_columns(self.block, self.ordinal);
        let eager = eager_range_scorer(
            self.block,
            self.ordinal,
            &columns,
            &self.range,
            self.optimizations,
        );
        let eager = match eager {
            Ok(eager) => eager,
            Err(error) => {
                // Reported through `error()`; the scorer ends.
                self.error = Some(match error {
                    FormatError::Corrupt { reason, .. } => DecodeError::new(reason),
                    _ => DecodeError::new("range postings or column unreadable"),
                });
                None
            }
        };
        self.eager = Some(eager);
        self.find(from)
    }
}

impl Scorer for CheckedRangeScorer<'_> {
    fn doc(&self) -> u32 {
        self.doc
    }
    fn advance(&mut self) -> u32 {
        self.seek(self.doc.saturating_add(1))
    }
    fn seek(&mut self, target: u32) -> u32 {
        if self.doc != TERMINATED && target > self.doc {
            self.doc = self.find(target);
        }
        self.doc
    }
    fn score(&mut self) -> f32 {
        0.0
    }
    fn max_score(&self) -> f32 {
        0.0
    }
    fn cost(&self) -> u64 {
        match &self.eager {
            Some(Some(eager)) => eager.cost(),
            Some(None) => 0,
            None => self.estimate,
        }
    }
    fn error(&self) -> Option<DecodeError> {
        self.error.or_else(|| {
            self.eager
                .as_ref()
                .and_then(|e| e.as_ref().and_then(|s| s.error()))
        })
    }
}

/// `raw` of a column of type `ty` in `range`; `bounds` is `range.i64_bounds()`, computed once
/// by the caller for the common i64 case.
fn in_range(range: &NumericRange, bounds: Option<(i64, i64)>, ty: ColumnType, raw: u64) -> bool {
    match (ty, bounds) {
        (ColumnType::I64, Some((lo, hi))) => (lo..=hi).contains(&(raw as i64)),
        (ColumnType::I64, None) => false,
        _ => raw_in_range(range, ty, raw),
    }
}

pub(crate) fn postings_union<'a>(
    block: &'a BlockReader,
    infos: &[quarry_format::TermInfo],
) -> Result<Option<BoxScorer<'a>>> {
    match infos {
        [] => Ok(None),
        [only] => Ok(Some(Box::new(ConstScorer {
            cursor: block.postings(only)?,
        }))),
        many => {
            let mut words = empty_bits(block);
            for info in many {
                let mut cursor = block.postings(info)?;
                cursor.for_each_remaining(|doc| bit_set(&mut words, doc));
                if let Some(error) = cursor.error() {
                    return Err(block.corrupt("postings", error));
                }
            }
            Ok(Some(Box::new(BitSetScorer::new(words))))
        }
    }
}

fn scan_columns<'a>(
    block: &'a BlockReader,
    ordinal: u16,
    range: &NumericRange,
    optimizations: Optimizations,
) -> Result<Option<BoxScorer<'a>>> {
    let mut words = empty_bits(block);
    for ty in NUMERIC_COLUMNS {
        let Some(column) = block.column(ordinal, ty) else {
            continue;
        };
        let doc_values = block.doc_values(ordinal, ty);
        let corrupt = |e: DecodeError| block.corrupt(format!("column {ty:?}"), e);
        for index in 0..column.chunk_count() {
            let meta = column.chunk_meta(index).map_err(corrupt)?;
            if meta.present_count == 0 {
                continue;
            }
            if optimizations.skipping {
                let (overlaps, covered) = min_max_test(range, ty, meta.min, meta.max);
                if !overlaps {
                    continue;
                }
                let end = column.chunk_end(index).map_err(corrupt)?;
                // Not for f64: min/max leave NaN out, and a NaN is in no range. (Saturating:
                // a corrupt directory may start a chunk after its end; decoding it says so.)
                if covered
                    && ty != ColumnType::F64
                    && meta.present_count == end.saturating_sub(meta.first_doc)
                {
                    bit_set_range(&mut words, meta.first_doc, end);
                    continue;
                }
            }
            if let Some(values) = &doc_values {
                // The chunk's docs from the doc values (integers), a 128-doc group at a
                // time: no chunk rebuilt (its docs and values in two vectors) to be read once.
                let end = column.chunk_end(index).map_err(corrupt)?;
                if meta.first_doc > end {
                    return Err(corrupt(DecodeError::new("chunk starts after its end")));
                }
                scan_doc_values(values, (meta.first_doc, end), range, ty, &mut words);
                continue;
            }
            let chunk = column.decode_chunk(index).map_err(corrupt)?;
            if let ChunkValues::Numbers(values) = &chunk.values {
                for (position, &raw) in values.iter().enumerate() {
                    if raw_in_range(range, ty, raw) {
                        let doc = match &chunk.docs {
                            None => chunk.first_doc + position as u32,
                            Some(docs) => docs[position],
                        };
                        bit_set(&mut words, doc);
                    }
                }
            }
        }
    }
    let scorer = BitSetScorer::new(words);
    Ok((scorer.doc() != TERMINATED).then(|| Box::new(scorer) as BoxScorer))
}

/// Sets the bit of each doc of `docs` whose integer doc value (of type `ty`) is in `range`.
fn scan_doc_values(
    values: &DocValues,
    (lo, hi): (u32, u32),
    range: &NumericRange,
    ty: ColumnType,
    words: &mut [u64],
) {
    let bounds = if ty == ColumnType::I64 {
        range.i64_bounds()
    } else {
        None
    };
    values.for_each_group_in_range(lo, hi, |first, base, divisor, slots| {
        match bounds.and_then(|(lo, hi)| i64_slot_bounds(lo, hi, base, divisor)) {
            // Branch-free: half the docs may lack the field, in no order, and a branch on
            // that was mispredicted every other doc (a 1M-doc scan took 15 ms with it).
            // Each bitset word is built in a register and stored once (a read-modify-write
            // per doc waited on the store before it).
            Some((low, high)) if low <= high => {
                let width = high - low;
                let (mut doc, mut rest) = (first, slots);
                while !rest.is_empty() {
                    let shift = doc % 64;
                    let take = rest.len().min(64 - shift as usize);
                    let mut bits = 0u64;
                    for (i, &slot) in rest[..take].iter().enumerate() {
                        bits |= u64::from(slot.wrapping_sub(low) <= width) << (shift as usize + i);
                    }
                    if let Some(word) = words.get_mut(doc as usize / 64) {
                        *word |= bits;
                    }
                    doc += take as u32;
                    rest = &rest[take..];
                }
            }
            Some(_) => {} // no value of the group is in the range
            None => {
                for (doc, &slot) in (first..).zip(slots) {
                    if slot != 0 {
                        let raw = base.wrapping_add(u64::from(slot - 1).wrapping_mul(divisor));
                        if raw_in_range(range, ty, raw) {
                            bit_set(words, doc);
                        }
                    }
                }
            }
        }
    });
}

/// The slots `[low, high]` (empty when `low > high`) of an i64 doc-values group with `base`
/// and `divisor` whose values lie in `[lo, hi]`, or `None` when the group's values may wrap
/// (then each value is read and compared): slot `s > 0` holds `base + (s - 1) * divisor`.
fn i64_slot_bounds(lo: i64, hi: i64, base: u64, divisor: u64) -> Option<(u32, u32)> {
    let (lo, hi) = (i128::from(lo), i128::from(hi));
    let (base, divisor) = (i128::from(base as i64), i128::from(divisor));
    if divisor == 0 || base + i128::from(u32::MAX) * divisor > i128::from(i64::MAX) {
        return None;
    }
    let low = if lo <= base {
        1
    } else {
        1 + (lo - base + divisor - 1) / divisor
    };
    let high = if hi < base {
        0
    } else {
        1 + (hi - base) / divisor
    };
    let clamp = |s: i128| s.clamp(0, i128::from(u32::MAX)) as u32;
    Some((clamp(low), clamp(high)))
}

/// Whether `field` in `block` holds boolean values and `value` is one written out: a
/// `Query::Exact` of it then matches them too (`boolean_scorer`).
pub fn holds_booleans(block: &BlockReader, field: &str, value: &str) -> bool {
    matches!(value, "true" | "false")
        && block
            .field_ordinal(field)
            .is_some_and(|ordinal| block.column(ordinal, ColumnType::Bool).is_some())
}

/// The docs whose `field` holds the boolean `value`. A dynamic field indexes a boolean only as
/// the token `true` or `false`, which a string holds too (`"it is true"`): the token's docs
/// are checked against the field's boolean column. (A field mapped `boolean` holds exact terms
/// instead, which `Query::Exact` finds.)
pub fn boolean_scorer<'a>(
    block: &'a BlockReader,
    field: &str,
    value: bool,
) -> Result<Option<BoxScorer<'a>>> {
    let Some(ordinal) = block.field_ordinal(field) else {
        return Ok(None);
    };
    let Some(column) = block.column(ordinal, ColumnType::Bool) else {
        return Ok(None);
    };
    let token: &[u8] = if value { b"true" } else { b"false" };
    let Some(info) = block.term_info(ordinal, TermKind::Token, token)? else {
        return Ok(None);
    };
    let candidates = Box::new(ConstScorer {
        cursor: block.postings(&info)?,
    });
    Ok(checked_scorer(candidates, column, Expected::Bool(value)))
}

/// The scorer of `field:="value"` for a value longer than `EXACT_TERM_LEN`, which has no exact
/// term: the docs holding every one of the value's `tokens` (all docs with a string value
/// when it has none), each checked against the field's string column, or its JSON column for
/// an array that holds the value as an item.
pub fn long_exact_scorer<'a>(
    block: &'a BlockReader,
    field: &str,
    value: &'a str,
    tokens: &[String],
) -> Result<Option<BoxScorer<'a>>> {
    let Some(ordinal) = block.field_ordinal(field) else {
        return Ok(None);
    };
    let candidates = || -> Result<Option<BoxScorer<'a>>> {
        let mut candidates: Vec<BoxScorer<'a>> = Vec::with_capacity(tokens.len());
        for token in tokens {
            let Some(info) = block.term_info(ordinal, TermKind::Token, token.as_bytes())? else {
                return Ok(None);
            };
            candidates.push(Box::new(ConstScorer {
                cursor: block.postings(&info)?,
            }));
        }
        Ok(Some(match candidates.len() {
            0 => Box::new(DocRangeScorer::new(0, block.doc_count())),
            1 => candidates.pop().expect("one candidate scorer"),
            _ => Box::new(ConjunctionScorer::new(candidates)),
        }))
    };
    let mut scorers = Vec::new();
    for (ty, expected) in [
        (ColumnType::Str, Expected::Str(value)),
        (ColumnType::Json, Expected::Item(value)),
    ] {
        if let Some(column) = block.column(ordinal, ty) {
            let Some(candidates) = candidates()? else {
                return Ok(None);
            };
            scorers.extend(checked_scorer(candidates, column, expected));
        }
    }
    Ok(match scorers.len() {
        0 => None,
        1 => scorers.pop(),
        _ => Some(Box::new(crate::scorer::UnionScorer::new(scorers))),
    })
}

/// The `candidates` whose value in `column` is `expected`, or `None` if there is none.
fn checked_scorer<'a>(
    candidates: BoxScorer<'a>,
    column: ColumnReader<'a>,
    expected: Expected<'a>,
) -> Option<BoxScorer<'a>> {
    let mut scorer = CheckedExactScorer {
        candidates,
        column: ChunkCursor::new(column),
        expected,
        doc: TERMINATED,
        error: None,
    };
    let first = scorer.candidates.doc();
    scorer.doc = scorer.first_match(first);
    (scorer.doc != TERMINATED).then(|| Box::new(scorer) as BoxScorer)
}

/// The docs of `block` whose `field` holds a string longer than `EXACT_TERM_LEN` bytes (it has
/// no exact term) of at most `max_chars` characters that `pattern` matches: a keyword view's
/// longer values (`Query::WholeValues`), as a string value or an array's string item. A
/// string column with a dictionary (every value up to `MAX_EXACT_TERM_LEN` bytes) is answered
/// from its distinct values and doc values; any other column is read chunk by chunk.
pub fn long_values_scorer<'a>(
    block: &'a BlockReader,
    field: &str,
    pattern: &Pattern,
    max_chars: Option<u32>,
) -> Result<Option<BoxScorer<'a>>> {
    let Some(ordinal) = block.field_ordinal(field) else {
        return Ok(None);
    };
    let wanted = |value: &str| {
        value.len() > EXACT_TERM_LEN
            && max_chars.is_none_or(|limit| value.chars().count() <= limit as usize)
            && pattern.matches(value)
    };
    let mut words = empty_bits(block);
    let mut found = false;
    for ty in [ColumnType::Str, ColumnType::Json] {
        let Some(column) = block.column(ordinal, ty) else {
            continue;
        };
        let dictionary = block
            .doc_values(ordinal, ty)
            .filter(|values| ty == ColumnType::Str && values.dictionary_len() > 0);
        if let Some(values) = dictionary {
            let matched: Vec<bool> = (0..values.dictionary_len() as u32)
                .map(|i| {
                    let value = values.string(i).and_then(|v| std::str::from_utf8(v).ok());
                    value.is_some_and(wanted)
                })
                .collect();
            if matched.contains(&true) {
                values.for_each_in_range(0, block.doc_count(), |doc, ordinal| {
                    if matched.get(ordinal as usize) == Some(&true) {
                        bit_set(&mut words, doc);
                        found = true;
                    }
                });
            }
            continue;
        }
        let corrupt = |e: DecodeError| block.corrupt(format!("column {ty:?}"), e);
        for index in 0..column.chunk_count() {
            let chunk = column.decode_chunk(index).map_err(corrupt)?;
            for position in 0..chunk.len() {
                let Some(text) = chunk.str_at(position) else {
                    continue;
                };
                let holds = match ty {
                    ColumnType::Str => wanted(text),
                    _ => serde_json::from_str::<Vec<serde_json::Value>>(text).is_ok_and(|items| {
                        items.iter().filter_map(|item| item.as_str()).any(wanted)
                    }),
                };
                if holds {
                    let doc = match &chunk.docs {
                        Some(docs) => docs[position],
                        None => chunk.first_doc + position as u32,
                    };
                    bit_set(&mut words, doc);
                    found = true;
                }
            }
        }
    }
    Ok(found.then(|| Box::new(BitSetScorer::new(words)) as BoxScorer))
}

/// The value a `CheckedExactScorer` checks its candidates against.
#[derive(Debug, Clone, Copy)]
enum Expected<'a> {
    /// In a string column.
    Str(&'a str),
    /// A string item of an array in a JSON column.
    Item(&'a str),
    /// In a boolean column.
    Bool(bool),
}

/// Candidate docs whose value is checked to be `expected` (`long_exact_scorer`,
/// `boolean_scorer`).
struct CheckedExactScorer<'a> {
    candidates: BoxScorer<'a>,
    column: ChunkCursor<'a>,
    expected: Expected<'a>,
    doc: u32,
    error: Option<DecodeError>,
}

impl CheckedExactScorer<'_> {
    fn holds(&mut self, doc: u32) -> std::result::Result<bool, DecodeError> {
        let Some((chunk, position)) = self.column.find(doc)? else {
            return Ok(false);
        };
        Ok(match self.expected {
            Expected::Str(value) => chunk.str_at(position) == Some(value),
            Expected::Item(value) => chunk.str_at(position).is_some_and(|json| {
                serde_json::from_str::<Vec<serde_json::Value>>(json)
                    .is_ok_and(|items| items.iter().any(|item| item.as_str() == Some(value)))
            }),
            Expected::Bool(value) => chunk.raw(position).map(|raw| raw != 0) == Some(value),
        })
    }

    /// The first candidate from `doc` (the candidates' current doc) on whose value matches.
    fn first_match(&mut self, mut doc: u32) -> u32 {
        while doc != TERMINATED {
            match self.holds(doc) {
                Ok(true) => return doc,
                Ok(false) => doc = self.candidates.advance(),
                Err(error) => {
                    self.error = Some(error);
                    return TERMINATED;
                }
            }
        }
        TERMINATED
    }
}

impl Scorer for CheckedExactScorer<'_> {
    fn doc(&self) -> u32 {
        self.doc
    }
    fn advance(&mut self) -> u32 {
        if self.doc != TERMINATED {
            let next = self.candidates.advance();
            self.doc = self.first_match(next);
        }
        self.doc
    }
    fn seek(&mut self, target: u32) -> u32 {
        if self.doc < target {
            let next = self.candidates.seek(target);
            self.doc = self.first_match(next);
        }
        self.doc
    }
    fn score(&mut self) -> f32 {
        0.0
    }
    fn max_score(&self) -> f32 {
        0.0
    }
    fn cost(&self) -> u64 {
        self.candidates.cost()
    }
    fn error(&self) -> Option<DecodeError> {
        self.error.or_else(|| self.candidates.error())
    }
}

/// The scorer of `_exists_:field` in one block.
pub fn exists_scorer<'a>(block: &'a BlockReader, field: &str) -> Result<Option<BoxScorer<'a>>> {
    let Some(ordinal) = block.field_ordinal(field) else {
        return Ok(None);
    };
    let meta = &block.manifest().fields[ordinal as usize];
    if meta.columns.is_empty() {
        return indexed_exists_scorer(block, ordinal);
    }
    let doc_count = block.doc_count();
    if meta
        .columns
        .iter()
        .any(|c| c.present_count == u64::from(doc_count))
    {
        return Ok(Some(Box::new(DocRangeScorer::new(0, doc_count))));
    }
    let mut words = empty_bits(block);
    for column_meta in &meta.columns {
        let Some(column) = block.column(ordinal, column_meta.ty) else {
            continue;
        };
        let corrupt = |e: DecodeError| block.corrupt(format!("column {:?}", column_meta.ty), e);
        for index in 0..column.chunk_count() {
            let meta = column.chunk_meta(index).map_err(corrupt)?;
            let end = column.chunk_end(index).map_err(corrupt)?;
            if meta.present_count == 0 {
                continue;
            }
            if meta.present_count == end.saturating_sub(meta.first_doc) {
                bit_set_range(&mut words, meta.first_doc, end);
                continue;
            }
            let chunk = column.decode_chunk(index).map_err(corrupt)?;
            match &chunk.docs {
                None => bit_set_range(&mut words, chunk.first_doc, chunk.end_doc),
                Some(docs) => docs.iter().for_each(|&doc| bit_set(&mut words, doc)),
            }
        }
    }
    let scorer = BitSetScorer::new(words);
    Ok((scorer.doc() != TERMINATED).then(|| Box::new(scorer) as BoxScorer))
}

/// `_exists_` of a field kept only in the index (mapped `stored: false`, so it has no
/// column): the docs with a token in it (a non-zero norm, or without norms its tokens'
/// postings) and those with an exact or numeric term. A value that left neither (a string
/// longer than `EXACT_TERM_LEN` with no token in it) cannot be found.
fn indexed_exists_scorer(block: &BlockReader, ordinal: u16) -> Result<Option<BoxScorer<'_>>> {
    let mut words = empty_bits(block);
    let norms = block.norms(ordinal)?;
    if let Some(norms) = norms {
        for (doc, _) in norms.iter().enumerate().filter(|(_, &id)| id != 0) {
            bit_set(&mut words, doc as u32);
        }
    }
    for kind in [
        TermKind::Token,
        TermKind::Exact,
        TermKind::I64,
        TermKind::F64,
    ] {
        if kind == TermKind::Token && norms.is_some() {
            continue;
        }
        for info in block.field_terms(ordinal, kind)? {
            let mut cursor = block.postings(&info)?;
            cursor.for_each_remaining(|doc| bit_set(&mut words, doc));
            if let Some(error) = cursor.error() {
                return Err(block.corrupt("postings", error));
            }
        }
    }
    let scorer = BitSetScorer::new(words);
    Ok((scorer.doc() != TERMINATED).then(|| Box::new(scorer) as BoxScorer))
}

#[cfg(test)]
mod bit_tests {
    #[test]
    fn ranges_set_the_bits_one_by_one_would() {
        for (start, end) in [
            (0, 0),
            (0, 1),
            (3, 64),
            (60, 70),
            (64, 128),
            (5, 190),
            (120, u32::MAX),
        ] {
            let mut words = vec![0u64; 3];
            super::bit_set_range(&mut words, start, end);
            let mut expected = vec![0u64; 3];
            for doc in start..end.min(192) {
                super::bit_set(&mut expected, doc);
            }
            assert_eq!(words, expected, "{start}..{end}");
        }
    }

    /// The slot interval holds exactly the slots whose values a per-value compare finds in
    /// the range (brute force over small groups, negative bases and divisors above 1).
    #[test]
    fn i64_slot_bounds_match_each_value() {
        let points = [-20i64, -7, -1, 0, 1, 2, 5, 9, 13, 40];
        for base in [-12i64, -3, 0, 4, 11] {
            for divisor in [1u64, 2, 3, 7] {
                for &lo in &points {
                    for &hi in &points {
                        let (low, high) =
                            super::i64_slot_bounds(lo, hi, base as u64, divisor).unwrap();
                        for slot in 0u32..40 {
                            let value = base + i64::from(slot) * divisor as i64 - divisor as i64;
                            let expected = slot != 0 && lo <= value && value <= hi;
                            let got = low <= high && slot.wrapping_sub(low) <= high - low;
                            assert_eq!(got, expected, "{base} {divisor} [{lo}, {hi}] slot {slot}");
                        }
                    }
                }
            }
        }
        // Values that could wrap are left to the per-value compare.
        assert_eq!(super::i64_slot_bounds(0, 10, i64::MAX as u64 - 5, 1), None);
        assert_eq!(super::i64_slot_bounds(0, 10, 0, 0), None);
    }
}
