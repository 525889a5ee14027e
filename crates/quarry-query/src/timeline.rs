//! Queries in time order over time-sorted blocks: tail (newest first), head (oldest first) and
//! histograms, without visiting every match (seed 000, TencentCLS §4.5).
//!
//! Time order is (`_time`, block id, doc id): docs are in `_time` order inside a block, and the
//! block id breaks ties between blocks. Blocks are visited newest first (tail) by their time
//! range, and the walk stops once `limit` hits are held and no unvisited block can hold a
//! newer one. Inside a block a tail searches backwards: doc iterators only move forward, so
//! it runs them over a window of the newest docs, `[end - w, end)`, and doubles `w` towards
//! older docs until it has `limit` matches (the reverse binary search of the paper, with the
//! first window sized from the query's estimated match density). A histogram finds each
//! bucket's first doc id through the sparse time index and counts docs between endpoints
//! (Fig. 9): with no filter besides time the count is a subtraction; with a filter, matches
//! are bucketed by doc id, without reading their times.

use crate::cursor::Cursor;
use crate::error::{QueryError, Result};
use crate::filter::{time_overlaps, TimeLookup};
use crate::query::Query;
use crate::scorer::Scorer;
use crate::searcher::{Hit, HitsRequest, Searcher, SortOrder};
use crate::weight::Weight;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// The most buckets one histogram may have.
pub const MAX_BUCKETS: i64 = 100_000;

/// Counts per bucket: `(bucket start in ns, count)`, ascending, empty buckets between the
/// first and the last non-empty one included.
pub type Buckets = Vec<(i64, u64)>;

impl Searcher {
    pub fn cursor_of(&self, hit: &Hit) -> Cursor {
        Cursor {
            time: hit.time,
            block_id: self.block_ids[hit.block as usize],
            doc: hit.doc,
        }
    }

    /// The first `limit` matches in time order (`TimeDesc` or `TimeAsc`) after `after`.
    pub(crate) fn by_time(
        &self,
        query: &Query,
        weight: &Weight,
        limit: usize,
        order: SortOrder,
        after: Option<Cursor>,
    ) -> Result<Vec<Hit>> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let ((mut start, mut end), _) = query.time_bounds();
        if let Some(cursor) = after {
            match order {
                SortOrder::TimeAsc => start = start.max(cursor.time),
                _ => end = end.min(cursor.time.saturating_add(1)),
            }
        }
        let descending = order != SortOrder::TimeAsc;
        let skipping = self.optimizations.skipping;
        let mut blocks: Vec<usize> = (0..self.blocks.len())
            .filter(|&i| {
                let m = self.blocks[i].manifest();
                m.doc_count > 0 && (!skipping || time_overlaps(m.time_min, m.time_max, start, end))
            })
            .collect();
        if descending {
            blocks
                .sort_by_key(|&i| Reverse((self.blocks[i].manifest().time_max, self.block_ids[i])));
        } else {
            blocks.sort_by_key(|&i| (self.blocks[i].manifest().time_min, self.block_ids[i]));
        }
        // Kept hits keyed in sort direction, the worst on top: for a tail the oldest.
        let mut kept: BinaryHeap<Reverse<(i64, u64, u32, u32)>> = BinaryHeap::new();
        let mut kept_asc: BinaryHeap<(i64, u64, u32, u32)> = BinaryHeap::new();
        for index in blocks {
            let block = &self.blocks[index];
            let block_id = self.block_ids[index];
            let manifest = block.manifest();
            if skipping {
                // No hit of this block (or any later one) can beat the worst kept hit.
                let done = if descending {
                    kept.len() == limit
                        && kept
                            .peek()
                            .is_some_and(|Reverse(w)| (manifest.time_max, block_id) < (w.0, w.1))
                } else {
                    kept_asc.len() == limit
                        && kept_asc
                            .peek()
                            .is_some_and(|w| (manifest.time_min, block_id) > (w.0, w.1))
                };
                if done {
                    break;
                }
            }
            let mut lookup = TimeLookup::new(block, self.optimizations)?;
            // Past a cursor, events at the cursor's time count only in blocks after the
            // cursor's one in time order (and in its own block, after its doc).
            let (block_start, block_end) = match after {
                Some(cursor) if descending && block_id > cursor.block_id => {
                    (start, end.min(cursor.time))
                }
                Some(cursor) if !descending && block_id < cursor.block_id => {
                    (start.max(cursor.time.saturating_add(1)), end)
                }
                _ => (start, end),
            };
            let (lo, hi) = lookup.doc_range(block_start, block_end)?;
            if lo >= hi {
                continue;
            }
            // The cursor's own block and doc: only docs past it count.
            let docs = if descending {
                self.newest_matches(weight, index, lo, hi, limit, after.map(|c| (c, block_id)))?
            } else {
                self.oldest_matches(weight, index, lo, hi, limit, after.map(|c| (c, block_id)))?
            };
            if self.optimizations.time_index {
                block.prefetch_times(&docs);
            }
            for doc in docs {
                let key = (lookup.time_of(doc)?, block_id, doc, index as u32);
                if let Some(cursor) = after {
                    let position = Cursor {
                        time: key.0,
                        block_id,
                        doc,
                    };
                    let past = if descending {
                        position < cursor
                    } else {
                        position > cursor
                    };
                    if !past {
                        continue;
                    }
                }
                if descending {
                    if kept.len() < limit {
                        kept.push(Reverse(key));
                    } else if kept.peek().is_some_and(|Reverse(w)| key > *w) {
                        kept.pop();
                        kept.push(Reverse(key));
                    } else {
                        break; // older docs of this block are worse still
                    }
                } else if kept_asc.len() < limit {
                    kept_asc.push(key);
                } else if kept_asc.peek().is_some_and(|w| key < *w) {
                    kept_asc.pop();
                    kept_asc.push(key);
                } else {
                    break;
                }
            }
        }
        let mut keys: Vec<(i64, u64, u32, u32)> = if descending {
            kept.into_iter().map(|Reverse(k)| k).collect()
        } else {
            kept_asc.into_vec()
        };
        keys.sort_unstable();
        if descending {
            keys.reverse();
        }
        Ok(keys
            .into_iter()
            .map(|(time, _, doc, block)| Hit {
                block,
                doc,
                score: None,
                time,
            })
            .collect())
    }

    /// Up to `limit` matches in `[lo, hi)` of block `index`, newest first, past the cursor.
    fn newest_matches(
        &self,
        weight: &Weight,
        index: usize,
        lo: u32,
        hi: u32,
        limit: usize,
        after: Option<(Cursor, u64)>,
    ) -> Result<Vec<u32>> {
        let block = &self.blocks[index];
        // A cursor in this very block bounds the docs too.
        let hi = match after {
            Some((cursor, block_id)) if cursor.block_id == block_id => hi.min(cursor.doc),
            _ => hi,
        };
        let Some(mut scorer) = weight.scorer(index, block)? else {
            return Ok(Vec::new());
        };
        let mut found: Vec<u32> = Vec::new();
        if !self.optimizations.reverse_search || lo >= hi {
            // Visit every match in the range, keeping the last `limit`.
            let mut last = std::collections::VecDeque::with_capacity(limit);
            let mut doc = scorer.seek(lo);
            while doc < hi {
                if last.len() == limit {
                    last.pop_front();
                }
                last.push_back(doc);
                doc = scorer.advance();
            }
            self.check_scorer(index, scorer.as_ref())?;
            return Ok(last.into_iter().rev().collect());
        }
        // Size the first window so that it should hold `limit` matches, from the estimated
        // density of matches in the block; then double it backwards.
        let span = u64::from(hi - lo);
        let cost = scorer.cost().clamp(1, u64::from(block.doc_count().max(1)));
        let density = cost as f64 / f64::from(block.doc_count().max(1));
        let mut window = ((limit as f64 * 1.5 / density).ceil() as u64)
            .max(64)
            .min(span) as u32;
        let mut end = hi;
        let mut window_docs = Vec::new();
        loop {
            let start = end.saturating_sub(window).max(lo);
            window_docs.clear();
            let mut doc = scorer.seek(start);
            while doc < end {
                window_docs.push(doc);
                doc = scorer.advance();
            }
            self.check_scorer(index, scorer.as_ref())?;
            found.extend(window_docs.iter().rev());
            if found.len() >= limit || start == lo {
                break;
            }
            end = start;
            window = window.saturating_mul(2);
            // Iterators only move forward: an earlier window needs a fresh one.
            scorer = match weight.scorer(index, block)? {
                Some(scorer) => scorer,
                None => break,
            };
        }
        found.truncate(limit);
        Ok(found)
    }

    /// Up to `limit` matches in `[lo, hi)` of block `index`, oldest first, past the cursor.
    fn oldest_matches(
        &self,
        weight: &Weight,
        index: usize,
        lo: u32,
        hi: u32,
        limit: usize,
        after: Option<(Cursor, u64)>,
    ) -> Result<Vec<u32>> {
        let block = &self.blocks[index];
        let lo = match after {
            Some((cursor, block_id)) if cursor.block_id == block_id => {
                lo.max(cursor.doc.saturating_add(1))
            }
            _ => lo,
        };
        let Some(mut scorer) = weight.scorer(index, block)? else {
            return Ok(Vec::new());
        };
        let mut found = Vec::with_capacity(limit.min(4096));
        let mut doc = scorer.seek(lo);
        while doc < hi && found.len() < limit {
            found.push(doc);
            doc = scorer.advance();
        }
        self.check_scorer(index, scorer.as_ref())?;
        Ok(found)
    }

    /// Counts of matches per `interval` (ns) bucket, buckets aligned on multiples of the
    /// interval since the epoch.
    pub fn histogram(&self, query: &Query, interval: i64) -> Result<Buckets> {
        let weight = self.filter_weight_prefetched(query)?;
        // Partial counts arrive in bucket order within a block, and blocks come by their
        // first time, so the list is nearly sorted already: a sort and a merge of equal
        // buckets cost less than a map insert per bucket (a quarter of a 1-minute histogram
        // went to a BTreeMap before).
        let mut counts: Vec<(i64, u64)> = Vec::new();
        self.for_each_bucket_range(query, &weight, interval, &mut |bucket, count| {
            counts.push((bucket, count));
        })?;
        counts.sort_unstable_by_key(|&(bucket, _)| bucket);
        if let (Some(&(first, _)), Some(&(last, _))) = (counts.first(), counts.last()) {
            if last - first >= MAX_BUCKETS {
                return Err(QueryError::TooManyBuckets {
                    buckets: (last - first).saturating_add(1),
                    limit: MAX_BUCKETS,
                });
            }
        }
        Ok(fill_buckets(&counts, interval))
    }

    /// Calls `f(bucket, count)` with partial counts of matches per bucket, block by block.
    fn for_each_bucket_range(
        &self,
        query: &Query,
        weight: &Weight,
        interval: i64,
        f: &mut dyn FnMut(i64, u64),
    ) -> Result<()> {
        let ((start, end), filtered) = query.time_bounds();
        let optimizations = self.optimizations;
        for (index, block) in self.blocks.iter().enumerate() {
            let manifest = block.manifest();
            if manifest.doc_count == 0
                || optimizations.skipping
                    && !time_overlaps(manifest.time_min, manifest.time_max, start, end)
            {
                continue;
            }
            let mut lookup = TimeLookup::new(block, optimizations)?;
            let (lo, hi) = lookup.doc_range(start, end)?;
            if lo >= hi {
                continue;
            }
            if !optimizations.endpoint_histogram {
                // Read the time of every match.
                let Some(mut scorer) = weight.scorer(index, block)? else {
                    continue;
                };
                let mut doc = scorer.seek(lo);
                while doc < hi {
                    f(lookup.time_of(doc)?.div_euclid(interval), 1);
                    doc = scorer.advance();
                }
                self.check_scorer(index, scorer.as_ref())?;
                continue;
            }
            let (buckets, ends) = bucket_ends(&mut lookup, (lo, hi), interval)?;
            if !filtered {
                for (k, pair) in ends.windows(2).enumerate() {
                    if pair[1] > pair[0] {
                        f(buckets[k], u64::from(pair[1] - pair[0]));
                    }
                }
                continue;
            }
            // One posting list: whole postings blocks between two endpoints are counted from
            // their skip entries, without decoding.
            if let Some(cursor) = weight.single_postings(index, block)? {
                let Some(mut cursor) = cursor else {
                    continue;
                };
                cursor.seek(lo);
                for (k, end) in ends[1..].iter().enumerate() {
                    let count = cursor.count_until(*end);
                    if count > 0 {
                        f(buckets[k], u64::from(count));
                    }
                }
                if let Some(error) = cursor.error() {
                    return Err(block.corrupt("postings", error).into());
                }
                continue;
            }
            let Some(mut scorer) = weight.scorer(index, block)? else {
                continue;
            };
            let mut k = 0usize;
            let mut count = 0u64;
            let mut doc = scorer.seek(lo);
            while doc < hi {
                if doc >= ends[k + 1] {
                    if count > 0 {
                        f(buckets[k], count);
                        count = 0;
                    }
                    while doc >= ends[k + 1] {
                        k += 1;
                    }
                }
                count += 1;
                doc = scorer.advance();
            }
            if count > 0 {
                f(buckets[k], count);
            }
            self.check_scorer(index, scorer.as_ref())?;
        }
        Ok(())
    }

    /// An interval giving at most about `target` buckets over the time the query covers:
    /// its `_time` bounds when it has both, else the span of its matches (the oldest and the
    /// newest, a head and a tail of one hit each), so an outlier event that does not match
    /// cannot stretch the buckets.
    pub fn auto_interval(&self, query: &Query, target: i64) -> Result<i64> {
        let ((start, end), _) = query.time_bounds();
        let span = if start != i64::MIN && end != i64::MAX {
            end.saturating_sub(start)
        } else {
            self.match_edges(query)?
                .map_or(0, |(oldest, newest)| newest.saturating_sub(oldest))
        };
        Ok(interval_for_span(span, target))
    }

    /// The times of the oldest and the newest match of `query`, if any.
    pub(crate) fn match_edges(&self, query: &Query) -> Result<Option<(i64, i64)>> {
        let edge = |sort| -> Result<Option<i64>> {
            let request = HitsRequest {
                limit: 1,
                sort,
                ..Default::default()
            };
            Ok(self
                .search(query, &request)?
                .hits
                .first()
                .map(|hit| hit.time))
        };
        Ok(edge(SortOrder::TimeAsc)?.zip(edge(SortOrder::TimeDesc)?))
    }
}

/// The first round width (a second, 5 s, ... a year) that cuts `span` ns into fewer than
/// `target` buckets.
pub fn interval_for_span(span: i64, target: i64) -> i64 {
    const STEPS: [i64; 16] = [
        1, 5, 10, 30, 60, 300, 600, 1800, 3600, 10_800, 21_600, 43_200, 86_400, 604_800, 2_592_000,
        31_536_000,
    ];
    STEPS
        .iter()
        .map(|s| s * 1_000_000_000)
        .find(|step| span / step < target)
        .unwrap_or(31_536_000 * 1_000_000_000)
}

/// The buckets of the docs `[lo, hi)` and their endpoints as doc ids: bucket `buckets[k]` (an
/// index of `interval`, increasing) holds the docs `[ends[k], ends[k + 1])`, which may be
/// empty, so `ends[0] = lo` and the last entry is `hi` (seed 000, Fig. 9). Gaps are jumped,
/// so the cost follows the data, not the block's time span: one event far from the rest adds
/// one bucket, not every bucket between them.
pub(crate) fn bucket_ends(
    lookup: &mut TimeLookup,
    (lo, hi): (u32, u32),
    interval: i64,
) -> Result<(Vec<i64>, Vec<u32>)> {
    let mut buckets = Vec::new();
    let mut ends = vec![lo];
    let mut doc = lo;
    // The bucket after a non-empty one is guessed to be the next one (dense data needs one
    // endpoint look-up per bucket, as before); a guess that finds no doc is left as an empty
    // range and the next doc's time names its bucket, so a gap costs one look-up, not one per
    // empty bucket.
    let mut guess: Option<i64> = None;
    while doc < hi {
        let (bucket, known) = match guess {
            Some(bucket) => (bucket, false),
            None => (lookup.time_of(doc)?.div_euclid(interval), true),
        };
        let next = match bucket
            .checked_add(1)
            .and_then(|next| next.checked_mul(interval))
        {
            // Times are sorted, so a bucket read from `doc`'s time ends after `doc`; the clamp
            // only guards progress against a block whose times are not.
            Some(time) => {
                let end = lookup.first_at_or_after(time)?;
                end.clamp(if known { doc + 1 } else { doc }, hi)
            }
            None => hi,
        };
        buckets.push(bucket);
        ends.push(next);
        guess = (next > doc).then(|| bucket + 1);
        doc = next;
    }
    Ok((buckets, ends))
}

/// Every bucket from the first to the last of `counts` (sorted by bucket, a bucket may repeat:
/// its counts add up), empty ones included.
fn fill_buckets(counts: &[(i64, u64)], interval: i64) -> Buckets {
    let (Some(&(first, _)), Some(&(last, _))) = (counts.first(), counts.last()) else {
        return Vec::new();
    };
    let mut buckets: Buckets = (first..=last)
        .map(|bucket| (bucket.saturating_mul(interval), 0))
        .collect();
    for &(bucket, count) in counts {
        buckets[(bucket - first) as usize].1 += count;
    }
    buckets
}
