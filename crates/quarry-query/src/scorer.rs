//! Doc-id iterators that score: the Scorer half of Query → Weight → Scorer.
//!
//! Every scorer starts positioned on its first match (or `TERMINATED`); `advance` moves to the
//! next match, `seek(target)` to the first match `>= target`. `max_score` is an upper bound of
//! any score the scorer can return in this block, which top-k collection uses to skip clauses
//! (MaxScore) and blocks.

use crate::bm25;
use crate::collector::{ScoredDoc, TopK};
use quarry_format::{DecodeError, PostingsCursor, TERMINATED};

pub trait Scorer {
    fn doc(&self) -> u32;
    fn advance(&mut self) -> u32;
    fn seek(&mut self, target: u32) -> u32;
    fn score(&mut self) -> f32;
    fn max_score(&self) -> f32;
    /// Estimated number of matches, to order conjunctions (rarest first).
    fn cost(&self) -> u64;
    /// The first decode error that cut an iteration short (corrupt postings).
    fn error(&self) -> Option<DecodeError> {
        None
    }
    /// Calls `f` for the current doc and every later match, exhausting the scorer. Posting
    /// lists override this to walk whole decoded blocks.
    fn for_each_doc(&mut self, f: &mut dyn FnMut(u32)) {
        let mut doc = self.doc();
        while doc != TERMINATED {
            f(doc);
            doc = self.advance();
        }
    }
    /// The number of matches from the current doc on, exhausting the scorer.
    fn count_rest(&mut self) -> u64 {
        let mut count = 0;
        let mut doc = self.doc();
        while doc != TERMINATED {
            count += 1;
            doc = self.advance();
        }
        count
    }
    /// Like `seek(target)`, but may also skip docs whose score cannot exceed `threshold`
    /// (block-max pruning from skip data). The default skips nothing.
    fn seek_competitive(&mut self, target: u32, _threshold: f32) -> u32 {
        self.seek(target)
    }
    /// `advance` for a top k: like `seek_competitive(doc + 1, threshold)`, but as cheap as
    /// `advance` for scorers that skip nothing.
    fn advance_competitive(&mut self, _threshold: f32) -> u32 {
        self.advance()
    }
    /// Two-phase iteration (as Lucene's `TwoPhaseIterator`): moves to the first doc `>=
    /// target` that may match, checking only what is cheap (a phrase: that every term is in
    /// the doc), so that a conjunction can agree on a doc with its other clauses before
    /// `confirm` does the costly check (positions). The default is exact.
    fn approximate_seek(&mut self, target: u32) -> u32 {
        self.seek(target)
    }
    /// Whether the doc `approximate_seek` stopped on matches; after `false`, the scorer must
    /// be moved on by `approximate_seek` or `seek` before anything else.
    fn confirm(&mut self) -> bool {
        true
    }
    /// An upper bound of the score of the doc `approximate_seek` stopped on, known before
    /// `confirm`, so a top k can pass over a candidate that could not enter it without the
    /// costly check. An exact scorer (whose `approximate_seek` is `seek`) knows its score.
    fn approximate_bound(&mut self) -> f32 {
        self.score()
    }
    /// Offers every match from the current doc on to `top` and returns how many there were
    /// (the top k and the count in one pass), exhausting the scorer. Scorers that can score
    /// a block of matches at once override it.
    fn collect_counted(&mut self, block: u32, top: &mut TopK) -> u64 {
        crate::collector::collect_each(self, block, top)
    }
    /// Offers the matches from the current doc on to `top`, skipping those that cannot
    /// enter it where the scorer can tell, exhausting the scorer.
    fn collect_top_k(&mut self, block: u32, top: &mut TopK) {
        crate::collector::collect_pruned(self, block, top)
    }
}

pub type BoxScorer<'a> = Box<dyn Scorer + 'a>;

/// A boxed scorer is a scorer, so collectors can be generic: over `TermScorer` they inline
/// every call, over `BoxScorer` they take any tree.
impl<S: Scorer + ?Sized> Scorer for Box<S> {
    #[inline]
    fn doc(&self) -> u32 {
        (**self).doc()
    }
    #[inline]
    fn advance(&mut self) -> u32 {
        (**self).advance()
    }
    fn seek(&mut self, target: u32) -> u32 {
        (**self).seek(target)
    }
    #[inline]
    fn score(&mut self) -> f32 {
        (**self).score()
    }
    fn max_score(&self) -> f32 {
        (**self).max_score()
    }
    fn cost(&self) -> u64 {
        (**self).cost()
    }
    fn error(&self) -> Option<DecodeError> {
        (**self).error()
    }
    fn for_each_doc(&mut self, f: &mut dyn FnMut(u32)) {
        (**self).for_each_doc(f)
    }
    fn count_rest(&mut self) -> u64 {
        (**self).count_rest()
    }
    fn seek_competitive(&mut self, target: u32, threshold: f32) -> u32 {
        (**self).seek_competitive(target, threshold)
    }
    fn advance_competitive(&mut self, threshold: f32) -> u32 {
        (**self).advance_competitive(threshold)
    }
    fn approximate_seek(&mut self, target: u32) -> u32 {
        (**self).approximate_seek(target)
    }
    fn confirm(&mut self) -> bool {
        (**self).confirm()
    }
    fn approximate_bound(&mut self) -> f32 {
        (**self).approximate_bound()
    }
    fn collect_counted(&mut self, block: u32, top: &mut TopK) -> u64 {
        (**self).collect_counted(block, top)
    }
    fn collect_top_k(&mut self, block: u32, top: &mut TopK) {
        (**self).collect_top_k(block, top)
    }
}

/// Relative slack added to score upper bounds: bounds and scores are f32 sums computed in
/// different orders, and a bound a rounding error too low would wrongly prune a hit.
const BOUND_SLACK: f32 = 1e-5;

pub fn inflate(bound: f32) -> f32 {
    bound * (1.0 + BOUND_SLACK) + f32::EPSILON
}

/// One term in one field of one block.
pub struct TermScorer<'a> {
    cursor: PostingsCursor<'a>,
    norms: &'a [u8],
    weight: f32,
    cache: &'a [f32; 256],
    max_score: f32,
    /// The postings block last bounded by `seek_competitive`: its last doc and score bound.
    bounded_block: Option<(u32, f32)>,
}

impl<'a> TermScorer<'a> {
    pub fn new(
        cursor: PostingsCursor<'a>,
        norms: &'a [u8],
        weight: f32,
        cache: &'a [f32; 256],
        max_tf: u32,
        min_norm: u8,
    ) -> Self {
        let max_score = inflate(bm25::score(weight, max_tf.max(1), cache[min_norm as usize]));
        TermScorer {
            cursor,
            norms,
            weight,
            cache,
            max_score,
            bounded_block: None,
        }
    }

    /// The term's docs in the block.
    pub fn doc_freq(&self) -> u32 {
        self.cursor.doc_freq()
    }

    #[inline]
    fn norm(&self, doc: u32) -> f32 {
        self.cache[self.norms.get(doc as usize).copied().unwrap_or(0) as usize]
    }

    /// The top k less the docs of `excluded` (`+a -b`; `None` for the term alone): only a doc
    /// that would enter the top k is looked up in `excluded`, so the exclusion costs a seek
    /// per competitive doc, where an ExclusionScorer sought it for every doc of `a` and scored
    /// them one by one.
    pub fn collect_top_k_excluding(
        &mut self,
        block: u32,
        top: &mut TopK,
        mut excluded: Option<&mut dyn Scorer>,
    ) {
        if top.threshold().is_some_and(|t| self.max_score <= t) {
            return;
        }
        let mut scores = [0f32; quarry_format::limits::POSTINGS_BLOCK_LEN];
        let mut doc_norms = [0f32; quarry_format::limits::POSTINGS_BLOCK_LEN];
        let mut doc = self.cursor.doc();
        while doc != TERMINATED {
            if let Some(threshold) = top.threshold() {
                doc = self.seek_competitive(doc, threshold);
                if doc == TERMINATED {
                    break;
                }
            }
            let (weight, norms, cache) = (self.weight, self.norms, self.cache);
            let (docs, tfs) = self.cursor.block_rest();
            // The norms gathered first, then the scores in a loop of plain arithmetic over
            // arrays, which the compiler vectorizes (four divides at a time): a common term's
            // TOP_10 (`all`, most docs, no block skipped) was 3x tantivy's, a divide per doc.
            for (slot, &doc) in doc_norms.iter_mut().zip(docs) {
                *slot = cache[norms.get(doc as usize).copied().unwrap_or(0) as usize];
            }
            for ((score, &tf), &norm) in scores.iter_mut().zip(tfs).zip(&doc_norms) {
                *score = bm25::score(weight, tf, norm);
            }
            let mut threshold = top.threshold();
            for (&score, &doc) in scores.iter().zip(docs) {
                if threshold.is_none_or(|t| score > t)
                    && excluded.as_mut().is_none_or(|e| e.seek(doc) != doc)
                    && top.offer(ScoredDoc { score, block, doc })
                {
                    threshold = top.threshold();
                }
            }
            doc = self.cursor.finish_block();
        }
    }
}

impl Scorer for TermScorer<'_> {
    #[inline]
    fn doc(&self) -> u32 {
        self.cursor.doc()
    }
    /// The top k of this term alone (a ranked one-word query): blocks whose bound cannot
    /// beat the threshold are skipped (`seek_competitive`), and each other block is scored
    /// whole in one loop with no branch per doc, then its docs above the threshold offered.
    /// The same scores as `score` (same operations), so the same hits as `collect_all`; a
    /// common term's TOP_10 spent 43% of its time in `score`, one divide waiting on the
    /// last, doc by doc.
    fn collect_top_k(&mut self, block: u32, top: &mut TopK) {
        self.collect_top_k_excluding(block, top, None);
    }
    #[inline]
    fn advance(&mut self) -> u32 {
        self.cursor.advance()
    }
    fn seek(&mut self, target: u32) -> u32 {
        self.cursor.seek(target)
    }
    #[inline]
    fn score(&mut self) -> f32 {
        bm25::score(
            self.weight,
            self.cursor.term_freq(),
            self.norm(self.cursor.doc()),
        )
    }
    fn max_score(&self) -> f32 {
        self.max_score
    }
    fn cost(&self) -> u64 {
        u64::from(self.cursor.doc_freq())
    }
    fn error(&self) -> Option<DecodeError> {
        self.cursor.error()
    }
    fn for_each_doc(&mut self, f: &mut dyn FnMut(u32)) {
        self.cursor.for_each_remaining(f);
    }
    /// Block-max skipping: whole 128-doc postings blocks whose bound (from the skip entry's
    /// max tf and min norm) is at most `threshold` are passed over without being decoded.
    fn seek_competitive(&mut self, mut target: u32, threshold: f32) -> u32 {
        loop {
            if let Some((last_doc, bound)) = self.bounded_block {
                if target <= last_doc && self.cursor.doc() <= last_doc {
                    if bound > threshold {
                        return self.cursor.seek(target);
                    }
                    target = match last_doc.checked_add(1) {
                        Some(next) => next,
                        None => return self.cursor.seek(TERMINATED),
                    };
                    continue;
                }
            }
            match self.cursor.block_bound(target.max(self.cursor.doc())) {
                Some((last_doc, max_tf, min_norm)) => {
                    let bound = inflate(bm25::score(
                        self.weight,
                        max_tf,
                        self.cache[min_norm as usize],
                    ));
                    self.bounded_block = Some((last_doc, bound));
                }
                // The varint tail has no skip entry; its bound is the term's.
                None => return self.cursor.seek(target),
            }
        }
    }
}

/// Docs of a posting list, unscored (exact-value terms).
pub struct ConstScorer<'a> {
    pub cursor: PostingsCursor<'a>,
}

impl Scorer for ConstScorer<'_> {
    fn doc(&self) -> u32 {
        self.cursor.doc()
    }
    fn advance(&mut self) -> u32 {
        self.cursor.advance()
    }
    fn seek(&mut self, target: u32) -> u32 {
        self.cursor.seek(target)
    }
    fn score(&mut self) -> f32 {
        0.0
    }
    fn max_score(&self) -> f32 {
        0.0
    }
    fn cost(&self) -> u64 {
        u64::from(self.cursor.doc_freq())
    }
    fn error(&self) -> Option<DecodeError> {
        self.cursor.error()
    }
}

/// The first doc `>= target` on which every item's iterator agrees, moving them all there
/// (leapfrog: the first item, the rarest, proposes; any other that lands further moves the
/// target). `items` must not be empty.
fn leapfrog<T>(items: &mut [T], mut target: u32, mut seek: impl FnMut(&mut T, u32) -> u32) -> u32 {
    'outer: loop {
        if target == TERMINATED {
            return TERMINATED;
        }
        target = seek(&mut items[0], target);
        if target == TERMINATED {
            return TERMINATED;
        }
        for item in &mut items[1..] {
            let doc = seek(item, target);
            if doc > target {
                target = doc;
                continue 'outer;
            }
        }
        return target;
    }
}

/// Docs matching every sub-scorer (leapfrog, rarest first); the score is the sum.
pub struct ConjunctionScorer<'a> {
    scorers: Vec<BoxScorer<'a>>,
    doc: u32,
}

impl<'a> ConjunctionScorer<'a> {
    pub fn new(mut scorers: Vec<BoxScorer<'a>>) -> Self {
        scorers.sort_by_key(|s| s.cost());
        let mut conjunction = ConjunctionScorer { scorers, doc: 0 };
        let first = conjunction.scorers[0].doc();
        conjunction.doc = conjunction.align(first);
        conjunction
    }

    /// Moves every scorer to the first common doc `>= target`: the clauses agree on a
    /// candidate by their cheap checks first (`approximate_seek`), then each confirms it, so
    /// `+"the who" +uk` checks positions only in docs that hold `uk`.
    fn align(&mut self, mut target: u32) -> u32 {
        loop {
            let doc = leapfrog(&mut self.scorers, target, |scorer, target| {
                scorer.approximate_seek(target)
            });
            if doc == TERMINATED || self.scorers.iter_mut().all(|s| s.confirm()) {
                return doc;
            }
            target = doc + 1;
        }
    }

    /// `align` for a top k: a candidate whose clauses' bounds (their scores, and a phrase's
    /// bound from its terms' frequencies) sum to at most `threshold` is passed over before
    /// any clause confirms it, so `+"a b" +c` checks positions only in docs that could enter
    /// the top k.
    fn align_competitive(&mut self, mut target: u32, threshold: f32) -> u32 {
        loop {
            let doc = leapfrog(&mut self.scorers, target, |scorer, target| {
                scorer.approximate_seek(target)
            });
            if doc == TERMINATED {
                return doc;
            }
            let bound: f32 = self.scorers.iter_mut().map(|s| s.approximate_bound()).sum();
            if inflate(bound) > threshold && self.scorers.iter_mut().all(|s| s.confirm()) {
                return doc;
            }
            target = doc + 1;
        }
    }
}

impl Scorer for ConjunctionScorer<'_> {
    fn doc(&self) -> u32 {
        self.doc
    }
    fn advance(&mut self) -> u32 {
        if self.doc == TERMINATED {
            return TERMINATED;
        }
        // Not `scorers[0].advance()`: a phrase leading the conjunction would check positions
        // in its next candidate before the other clauses agree on it.
        self.doc = self.align(self.doc + 1);
        self.doc
    }
    fn seek(&mut self, target: u32) -> u32 {
        if self.doc >= target {
            return self.doc;
        }
        self.doc = self.align(target);
        self.doc
    }
    fn score(&mut self) -> f32 {
        self.scorers.iter_mut().map(|s| s.score()).sum()
    }
    fn max_score(&self) -> f32 {
        inflate(self.scorers.iter().map(|s| s.max_score()).sum())
    }
    fn cost(&self) -> u64 {
        self.scorers[0].cost()
    }
    fn seek_competitive(&mut self, target: u32, threshold: f32) -> u32 {
        if self.doc >= target {
            return self.doc;
        }
        self.doc = self.align_competitive(target, threshold);
        self.doc
    }
    fn advance_competitive(&mut self, threshold: f32) -> u32 {
        if self.doc == TERMINATED {
            return TERMINATED;
        }
        self.doc = self.align_competitive(self.doc + 1, threshold);
        self.doc
    }
    fn error(&self) -> Option<DecodeError> {
        self.scorers.iter().find_map(|s| s.error())
    }
}

/// A conjunction of plain terms (`+national +post`), the common case, with no boxed clause: a
/// ConjunctionScorer over boxed terms made seven dynamic calls and two out-of-line seeks per
/// candidate of the rarest term.
///
/// Two terms of similar frequency are intersected a block pair at a time by a merge with no
/// branch to mispredict (`MergedBlocks`): leapfrogging `+national +post` (5,610 and 9,018 docs
/// of 30,729) mispredicted a branch or two per candidate and took 3x tantivy's time. A rare
/// term against a common one keeps the leapfrog, which skips the common term's blocks.
pub struct TermConjunctionScorer<'a> {
    /// Rarest first: the first proposes candidates, the others are sought to them.
    terms: Vec<TermScorer<'a>>,
    doc: u32,
    merged: Option<Box<MergedBlocks>>,
}

/// Merge rather than leapfrog when the second term has at most this many times the first's
/// docs: a merge step costs about a tenth of a mispredicted seek, and at this density every
/// block of the second term holds candidates anyway (nothing to skip).
const MERGE_MAX_RATIO: u32 = 8;

const BLOCK_LEN: usize = quarry_format::limits::POSTINGS_BLOCK_LEN;

/// The matches of two terms within their current decoded blocks: each match's doc and its
/// offsets in both blocks from where the merge began (where the cursors then stood).
struct MergedBlocks {
    docs: [u32; BLOCK_LEN],
    first: [u8; BLOCK_LEN],
    second: [u8; BLOCK_LEN],
    len: usize,
    /// The current match, and the one the cursors stand on (moved there for a score).
    pos: usize,
    synced: usize,
    /// How far the merge read in each block: one of them is the block's end.
    ends: (usize, usize),
    /// The first term's docs in the merged doc range, and their offsets by doc.
    bits: [u64; MERGE_WINDOW / 64],
    offsets: [u8; MERGE_WINDOW],
}

/// The widest doc range merged through a bitset; a wider one (sparse blocks) is merged step by
/// step.
const MERGE_WINDOW: usize = 4096;

impl<'a> TermConjunctionScorer<'a> {
    /// `terms` must not be empty.
    pub fn new(mut terms: Vec<TermScorer<'a>>) -> Self {
        terms.sort_by_key(|t| t.cursor.doc_freq());
        let merged = (terms.len() == 2
            && terms[1].cursor.doc_freq() / MERGE_MAX_RATIO <= terms[0].cursor.doc_freq())
        .then(|| {
            Box::new(MergedBlocks {
                docs: [0; BLOCK_LEN],
                first: [0; BLOCK_LEN],
                second: [0; BLOCK_LEN],
                len: 0,
                pos: 0,
                synced: 0,
                ends: (0, 0),
                bits: [0; MERGE_WINDOW / 64],
                offsets: [0; MERGE_WINDOW],
            })
        });
        let first = terms[0].cursor.doc();
        let mut conjunction = TermConjunctionScorer {
            terms,
            doc: 0,
            merged,
        };
        conjunction.doc = conjunction.align(first);
        if conjunction.merged.is_some() {
            conjunction.doc = conjunction.merge();
        }
        conjunction
    }

    #[inline]
    fn align(&mut self, target: u32) -> u32 {
        leapfrog(&mut self.terms, target, |term, target| {
            term.cursor.seek(target)
        })
    }

    /// With both cursors on the same doc (or exhausted), intersects what is left of their two
    /// blocks up to the lower of their last docs; returns the first match (the doc they stand
    /// on). The first term's docs are set in a bitset of that doc range (and their offsets
    /// noted by doc), then the second's looked up in it: no step waits on the one before, as
    /// in a merge, whose every step waited on a load and a compare (1.5 ns a step).
    fn merge(&mut self) -> u32 {
        let merged = self.merged.as_mut().expect("merge mode");
        let (first, second) = self.terms.split_at_mut(1);
        let (a, b) = (first[0].cursor.block_docs(), second[0].cursor.block_docs());
        let (Some(&low), Some(&a_last), Some(&b_last)) = (a.first(), a.last(), b.last()) else {
            merged.len = 0;
            return TERMINATED;
        };
        let high = a_last.min(b_last);
        let a = &a[..a.partition_point(|&doc| doc <= high)];
        let b = &b[..b.partition_point(|&doc| doc <= high)];
        let mut k = 0;
        if ((high - low) as usize) < MERGE_WINDOW {
            let words = (high - low) as usize / 64 + 1;
            merged.bits[..words].fill(0);
            for (i, &doc) in a.iter().enumerate() {
                let at = (doc - low) as usize;
                merged.bits[at / 64] |= 1 << (at % 64);
                merged.offsets[at] = i as u8;
            }
            for (j, &doc) in b.iter().enumerate() {
                let at = (doc - low) as usize;
                merged.docs[k] = doc;
                merged.first[k] = merged.offsets[at];
                merged.second[k] = j as u8;
                k += ((merged.bits[at / 64] >> (at % 64)) & 1) as usize;
            }
        } else {
            let (mut i, mut j) = (0, 0);
            while i < a.len() && j < b.len() {
                let (x, y) = (a[i], b[j]);
                merged.docs[k] = x;
                merged.first[k] = i as u8;
                merged.second[k] = j as u8;
                k += usize::from(x == y);
                i += usize::from(x <= y);
                j += usize::from(y <= x);
            }
        }
        (merged.len, merged.pos, merged.synced) = (k, 0, 0);
        merged.ends = (a.len(), b.len());
        merged.docs[0]
    }

    /// Moves on to the next match `>= target` in merge mode. The cursors stay where they are
    /// until a score needs them (`sync`): counting never moves them match by match.
    #[inline]
    fn merged_seek(&mut self, target: u32) -> u32 {
        let merged = self.merged.as_mut().expect("merge mode");
        let mut pos = merged.pos + 1;
        while pos < merged.len && merged.docs[pos] < target {
            pos += 1;
        }
        if pos < merged.len {
            merged.pos = pos;
            return merged.docs[pos];
        }
        self.next_merge(target)
    }

    /// Moves the cursors past what the last merge read, to the first common doc `>= target`,
    /// and merges from there.
    #[inline(never)]
    fn next_merge(&mut self, target: u32) -> u32 {
        let merged = self.merged.as_mut().expect("merge mode");
        let (first, second) = self.terms.split_at_mut(1);
        let (a, b) = (&mut first[0].cursor, &mut second[0].cursor);
        let (from_a, from_b) = (merged.first[merged.synced], merged.second[merged.synced]);
        let next = a.skip_in_block(merged.ends.0 - usize::from(from_a));
        b.skip_in_block(merged.ends.1 - usize::from(from_b));
        if self.align(next.max(target)) == TERMINATED {
            self.merged.as_mut().expect("merge mode").len = 0;
            return TERMINATED;
        }
        self.merge()
    }

    /// Moves the cursors to the match merge mode stands on (for its term frequencies).
    #[inline]
    fn sync(&mut self) {
        let Some(merged) = self.merged.as_mut() else {
            return;
        };
        if merged.synced == merged.pos {
            return;
        }
        let (first, second) = self.terms.split_at_mut(1);
        let (from, to) = (merged.synced, merged.pos);
        first[0]
            .cursor
            .skip_in_block(usize::from(merged.first[to] - merged.first[from]));
        second[0]
            .cursor
            .skip_in_block(usize::from(merged.second[to] - merged.second[from]));
        merged.synced = to;
    }
}

impl Scorer for TermConjunctionScorer<'_> {
    fn doc(&self) -> u32 {
        self.doc
    }
    fn advance(&mut self) -> u32 {
        if self.doc == TERMINATED {
            return TERMINATED;
        }
        self.doc = if self.merged.is_some() {
            self.merged_seek(self.doc + 1)
        } else {
            let next = self.terms[0].cursor.advance();
            self.align(next)
        };
        self.doc
    }
    fn seek(&mut self, target: u32) -> u32 {
        if self.doc >= target {
            return self.doc;
        }
        self.doc = if self.merged.is_some() {
            self.merged_seek(target)
        } else {
            self.align(target)
        };
        self.doc
    }
    fn score(&mut self) -> f32 {
        self.sync();
        self.terms.iter_mut().map(|t| t.score()).sum()
    }
    fn max_score(&self) -> f32 {
        inflate(self.terms.iter().map(|t| t.max_score()).sum())
    }
    fn cost(&self) -> u64 {
        u64::from(self.terms[0].cursor.doc_freq())
    }
    fn error(&self) -> Option<DecodeError> {
        self.terms.iter().find_map(|t| t.cursor.error())
    }
    /// Merge mode skips nothing by score, so a top k is the counted collection.
    fn collect_top_k(&mut self, block: u32, top: &mut TopK) {
        if self.merged.is_some() {
            self.collect_counted(block, top);
        } else {
            crate::collector::collect_pruned(self, block, top)
        }
    }
    /// In merge mode, each merge's matches are scored in one loop from the two blocks' term
    /// frequencies, without moving the cursors match by match: `+national +science` TOP_10
    /// spent about 200 instructions a match syncing cursors, calling `score` and collecting
    /// (callgrind). The same operations as `score`, so the same scores.
    fn collect_counted(&mut self, block: u32, top: &mut TopK) -> u64 {
        if self.merged.is_none() {
            return crate::collector::collect_each(self, block, top);
        }
        let mut scores = [0f32; BLOCK_LEN];
        let mut count = 0;
        while self.doc != TERMINATED {
            self.sync();
            let merged = self.merged.as_ref().expect("merge mode");
            let (pos, len) = (merged.pos, merged.len);
            let (base_a, base_b) = (merged.first[pos], merged.second[pos]);
            let (first, second) = self.terms.split_at_mut(1);
            let (a, b) = (&mut first[0], &mut second[0]);
            let (weight_a, norms_a, cache_a) = (a.weight, a.norms, a.cache);
            let (weight_b, norms_b, cache_b) = (b.weight, b.norms, b.cache);
            let (_, tfs_a) = a.cursor.block_rest();
            let (_, tfs_b) = b.cursor.block_rest();
            for k in pos..len {
                let doc = merged.docs[k] as usize;
                let tf_a = tfs_a[usize::from(merged.first[k] - base_a)];
                let tf_b = tfs_b[usize::from(merged.second[k] - base_b)];
                let norm_a = cache_a[norms_a.get(doc).copied().unwrap_or(0) as usize];
                let norm_b = cache_b[norms_b.get(doc).copied().unwrap_or(0) as usize];
                scores[k] =
                    bm25::score(weight_a, tf_a, norm_a) + bm25::score(weight_b, tf_b, norm_b);
            }
            let mut threshold = top.threshold();
            // Hot loop: `k` indexes both `scores` and `merged.docs`; kept as the loop that was measured.
            #[allow(clippy::needless_range_loop)]
            for k in pos..len {
                let score = scores[k];
                if threshold.is_none_or(|t| score > t)
                    && top.offer(ScoredDoc {
                        score,
                        block,
                        doc: merged.docs[k],
                    })
                {
                    threshold = top.threshold();
                }
            }
            count += (len - pos) as u64;
            let last = merged.docs[len - 1];
            self.doc = match last.checked_add(1) {
                Some(next) => self.next_merge(next),
                None => TERMINATED,
            };
        }
        count
    }
    fn count_rest(&mut self) -> u64 {
        if self.merged.is_none() {
            let mut count = 0;
            while self.doc != TERMINATED {
                count += 1;
                let next = self.terms[0].cursor.advance();
                self.doc = self.align(next);
            }
            return count;
        }
        let mut count = 0;
        while self.doc != TERMINATED {
            let merged = self.merged.as_mut().expect("merge mode");
            count += (merged.len - merged.pos) as u64;
            self.doc = self.next_merge(0);
        }
        count
    }
}

/// Docs matching any sub-scorer; the score is the sum of those that match.
pub struct UnionScorer<'a> {
    scorers: Vec<BoxScorer<'a>>,
    doc: u32,
}

impl<'a> UnionScorer<'a> {
    pub fn new(scorers: Vec<BoxScorer<'a>>) -> Self {
        let doc = scorers.iter().map(|s| s.doc()).min().unwrap_or(TERMINATED);
        UnionScorer { scorers, doc }
    }
}

impl Scorer for UnionScorer<'_> {
    fn doc(&self) -> u32 {
        self.doc
    }
    fn advance(&mut self) -> u32 {
        if self.doc == TERMINATED {
            return TERMINATED;
        }
        let current = self.doc;
        let mut next = TERMINATED;
        for scorer in &mut self.scorers {
            let doc = if scorer.doc() == current {
                scorer.advance()
            } else {
                scorer.doc()
            };
            next = next.min(doc);
        }
        self.doc = next;
        next
    }
    fn seek(&mut self, target: u32) -> u32 {
        if self.doc >= target {
            return self.doc;
        }
        let mut next = TERMINATED;
        for scorer in &mut self.scorers {
            next = next.min(scorer.seek(target));
        }
        self.doc = next;
        next
    }
    fn score(&mut self) -> f32 {
        sum_of_scores_at(&mut self.scorers, self.doc)
    }
    fn max_score(&self) -> f32 {
        inflate(self.scorers.iter().map(|s| s.max_score()).sum())
    }
    fn cost(&self) -> u64 {
        self.scorers.iter().map(|s| s.cost()).sum()
    }
    fn error(&self) -> Option<DecodeError> {
        self.scorers.iter().find_map(|s| s.error())
    }
}

/// The sum of the scores of those of `scorers` on `doc` (a union's, and an at-least's).
fn sum_of_scores_at(scorers: &mut [BoxScorer<'_>], doc: u32) -> f32 {
    scorers
        .iter_mut()
        .filter(|s| s.doc() == doc)
        .map(|s| s.score())
        .sum()
}

/// Docs matched by at least `minimum` of the scorers, scored by the sum of those that match
/// (Lucene's BooleanQuery with `minimumNumberShouldMatch`).
pub struct AtLeastScorer<'a> {
    scorers: Vec<BoxScorer<'a>>,
    minimum: usize,
    doc: u32,
}

impl<'a> AtLeastScorer<'a> {
    pub fn new(scorers: Vec<BoxScorer<'a>>, minimum: usize) -> Self {
        let mut scorer = AtLeastScorer {
            scorers,
            minimum,
            doc: 0,
        };
        scorer.doc = scorer.settle();
        scorer
    }

    /// From where the scorers stand: the first doc at least `minimum` of them are on, moving
    /// past docs with fewer.
    fn settle(&mut self) -> u32 {
        loop {
            let doc = self
                .scorers
                .iter()
                .map(|s| s.doc())
                .min()
                .unwrap_or(TERMINATED);
            if doc == TERMINATED {
                return TERMINATED;
            }
            let on = self.scorers.iter().filter(|s| s.doc() == doc).count();
            if on >= self.minimum {
                return doc;
            }
            for scorer in self.scorers.iter_mut().filter(|s| s.doc() == doc) {
                scorer.advance();
            }
        }
    }
}

impl Scorer for AtLeastScorer<'_> {
    fn doc(&self) -> u32 {
        self.doc
    }
    fn advance(&mut self) -> u32 {
        if self.doc == TERMINATED {
            return TERMINATED;
        }
        let current = self.doc;
        for scorer in self.scorers.iter_mut().filter(|s| s.doc() == current) {
            scorer.advance();
        }
        self.doc = self.settle();
        self.doc
    }
    fn seek(&mut self, target: u32) -> u32 {
        if self.doc >= target {
            return self.doc;
        }
        for scorer in &mut self.scorers {
            scorer.seek(target);
        }
        self.doc = self.settle();
        self.doc
    }
    fn score(&mut self) -> f32 {
        sum_of_scores_at(&mut self.scorers, self.doc)
    }
    fn max_score(&self) -> f32 {
        inflate(self.scorers.iter().map(|s| s.max_score()).sum())
    }
    fn cost(&self) -> u64 {
        self.scorers.iter().map(|s| s.cost()).sum()
    }
    fn error(&self) -> Option<DecodeError> {
        self.scorers.iter().find_map(|s| s.error())
    }
}

/// The docs of `inner`, their scores times `factor` (Elasticsearch's `indices_boost`).
pub struct ScaledScorer<'a> {
    inner: BoxScorer<'a>,
    factor: f32,
}

impl<'a> ScaledScorer<'a> {
    pub fn new(inner: BoxScorer<'a>, factor: f32) -> Self {
        ScaledScorer { inner, factor }
    }
}

impl Scorer for ScaledScorer<'_> {
    fn doc(&self) -> u32 {
        self.inner.doc()
    }
    fn advance(&mut self) -> u32 {
        self.inner.advance()
    }
    fn seek(&mut self, target: u32) -> u32 {
        self.inner.seek(target)
    }
    fn score(&mut self) -> f32 {
        self.inner.score() * self.factor
    }
    fn max_score(&self) -> f32 {
        self.inner.max_score() * self.factor
    }
    fn cost(&self) -> u64 {
        self.inner.cost()
    }
    fn error(&self) -> Option<DecodeError> {
        self.inner.error()
    }
    fn for_each_doc(&mut self, f: &mut dyn FnMut(u32)) {
        self.inner.for_each_doc(f)
    }
    fn count_rest(&mut self) -> u64 {
        self.inner.count_rest()
    }
}

/// The docs of `inner`, each scored `score`.
pub struct ConstantScorer<'a> {
    inner: BoxScorer<'a>,
    score: f32,
}

impl<'a> ConstantScorer<'a> {
    pub fn new(inner: BoxScorer<'a>, score: f32) -> Self {
        ConstantScorer { inner, score }
    }
}

impl Scorer for ConstantScorer<'_> {
    fn doc(&self) -> u32 {
        self.inner.doc()
    }
    fn advance(&mut self) -> u32 {
        self.inner.advance()
    }
    fn seek(&mut self, target: u32) -> u32 {
        self.inner.seek(target)
    }
    fn score(&mut self) -> f32 {
        self.score
    }
    fn max_score(&self) -> f32 {
        self.score
    }
    fn cost(&self) -> u64 {
        self.inner.cost()
    }
    fn error(&self) -> Option<DecodeError> {
        self.inner.error()
    }
    fn for_each_doc(&mut self, f: &mut dyn FnMut(u32)) {
        self.inner.for_each_doc(f)
    }
    fn count_rest(&mut self) -> u64 {
        self.inner.count_rest()
    }
}

/// Docs of `required` not matched by `excluded`.
pub struct ExclusionScorer<'a> {
    pub required: BoxScorer<'a>,
    pub excluded: BoxScorer<'a>,
}

impl<'a> ExclusionScorer<'a> {
    pub fn new(required: BoxScorer<'a>, excluded: BoxScorer<'a>) -> Self {
        let mut scorer = ExclusionScorer { required, excluded };
        let first = scorer.required.doc();
        scorer.skip_excluded(first);
        scorer
    }

    fn skip_excluded(&mut self, mut doc: u32) -> u32 {
        while doc != TERMINATED && self.excluded.seek(doc) == doc {
            doc = self.required.advance();
        }
        doc
    }

    /// `skip_excluded` for a top k: the required clause moves on competitively.
    fn skip_excluded_competitive(&mut self, mut doc: u32, threshold: f32) -> u32 {
        while doc != TERMINATED && self.excluded.seek(doc) == doc {
            doc = self.required.advance_competitive(threshold);
        }
        doc
    }
}

impl Scorer for ExclusionScorer<'_> {
    fn doc(&self) -> u32 {
        self.required.doc()
    }
    fn advance(&mut self) -> u32 {
        let doc = self.required.advance();
        self.skip_excluded(doc)
    }
    fn seek(&mut self, target: u32) -> u32 {
        let doc = self.required.seek(target);
        self.skip_excluded(doc)
    }
    /// What the required clause can skip as not competitive, the exclusion can too (it only
    /// removes docs): `+a -b`'s top k keeps `a`'s block-max pruning.
    fn seek_competitive(&mut self, target: u32, threshold: f32) -> u32 {
        let doc = self.required.seek_competitive(target, threshold);
        self.skip_excluded_competitive(doc, threshold)
    }
    fn advance_competitive(&mut self, threshold: f32) -> u32 {
        let doc = self.required.advance_competitive(threshold);
        self.skip_excluded_competitive(doc, threshold)
    }
    fn score(&mut self) -> f32 {
        self.required.score()
    }
    fn max_score(&self) -> f32 {
        self.required.max_score()
    }
    fn cost(&self) -> u64 {
        self.required.cost()
    }
    fn error(&self) -> Option<DecodeError> {
        self.required.error().or_else(|| self.excluded.error())
    }
}

/// Docs of `required`, scored plus the scores of whichever `optional` clauses also match.
pub struct OptionalScorer<'a> {
    pub required: BoxScorer<'a>,
    pub optional: BoxScorer<'a>,
}

impl Scorer for OptionalScorer<'_> {
    fn doc(&self) -> u32 {
        self.required.doc()
    }
    fn advance(&mut self) -> u32 {
        self.required.advance()
    }
    fn seek(&mut self, target: u32) -> u32 {
        self.required.seek(target)
    }
    fn score(&mut self) -> f32 {
        let doc = self.required.doc();
        let mut score = self.required.score();
        if self.optional.seek(doc) == doc {
            score += self.optional.score();
        }
        score
    }
    fn max_score(&self) -> f32 {
        inflate(self.required.max_score() + self.optional.max_score())
    }
    fn cost(&self) -> u64 {
        self.required.cost()
    }
    fn error(&self) -> Option<DecodeError> {
        self.required.error().or_else(|| self.optional.error())
    }
}

/// One term of a phrase in one block.
pub struct PhraseTerm<'a> {
    /// Its position relative to the phrase's first term.
    pub offset: u32,
    /// Terms with the same token share a group (the index of the token's first term): in a
    /// sloppy phrase they must sit at different positions.
    pub group: u32,
    pub cursor: PostingsCursor<'a>,
    /// Where its positions come from (`value_positions`).
    pub source: crate::value_positions::PositionSource<'a>,
}

/// Docs where the terms occur at their relative positions, or within `slop` of them; BM25 with
/// the phrase frequency as tf and the sum of the terms' idf as weight (as Lucene's
/// PhraseWeight).
///
/// An exact phrase's frequency is the number of positions where it starts. A sloppy phrase
/// (Lucene's `"a b"~2`) matches where each term `i` can be given a position `p_i` (different
/// positions for repeats of one token) so that the values `p_i - offset_i` lie within `slop` of
/// each other: reordering two adjacent terms costs 2, a word between them 1. Each value `s`
/// that is the smallest of such a match adds `1 / (1 + spread)` to the frequency, `spread`
/// being the least `max - s` of the matches whose smallest value is `s` (Lucene's sloppy
/// weight); an exact occurrence adds 1, as in an exact phrase.
pub struct PhraseScorer<'a> {
    /// Rarest first after construction.
    terms: Vec<PhraseTerm<'a>>,
    slop: u32,
    norms: &'a [u8],
    weight: f32,
    cache: &'a [f32; 256],
    max_score: f32,
    doc: u32,
    /// Whether `doc` is known to hold the phrase (and `freq` is its frequency), not only
    /// every term (`approximate_seek`).
    confirmed: bool,
    freq: f32,
    positions: Vec<Vec<u32>>,
    /// Scratch: candidate phrase start positions in the current doc.
    starts: Vec<u32>,
    /// Scratch for sloppy phrases: every `p - offset` of the current doc, and the terms in
    /// (group, offset) order.
    anchors: Vec<i64>,
    greedy_order: Vec<usize>,
    error: Option<DecodeError>,
}

impl<'a> PhraseScorer<'a> {
    pub fn new(
        mut terms: Vec<PhraseTerm<'a>>,
        slop: u32,
        norms: &'a [u8],
        weight: f32,
        cache: &'a [f32; 256],
        max_freq: u32,
    ) -> Self {
        terms.sort_by_key(|t| t.cursor.doc_freq());
        let max_score = inflate(bm25::score(weight, max_freq.max(1), cache[0]));
        let positions = vec![Vec::new(); terms.len()];
        let mut greedy_order: Vec<usize> = (0..terms.len()).collect();
        greedy_order.sort_by_key(|&i| (terms[i].group, terms[i].offset));
        let mut scorer = PhraseScorer {
            terms,
            slop,
            norms,
            weight,
            cache,
            max_score,
            doc: 0,
            confirmed: true,
            freq: 0.0,
            positions,
            starts: Vec::new(),
            anchors: Vec::new(),
            greedy_order,
            error: None,
        };
        let first = scorer.terms[0].cursor.doc();
        scorer.doc = scorer.next_match(first);
        scorer
    }

    fn align(&mut self, target: u32) -> u32 {
        leapfrog(&mut self.terms, target, |term, target| {
            term.cursor.seek(target)
        })
    }

    /// The BM25 length term of the current doc.
    fn doc_norm(&self) -> f32 {
        self.cache[self.norms.get(self.doc as usize).copied().unwrap_or(0) as usize]
    }

    /// The first doc `>= target` where the phrase occurs.
    fn next_match(&mut self, mut target: u32) -> u32 {
        loop {
            let doc = self.align(target);
            if doc == TERMINATED {
                return TERMINATED;
            }
            match self.freq_here() {
                Ok(0.0) => target = doc + 1,
                Ok(freq) => {
                    self.freq = freq;
                    return doc;
                }
                Err(e) => {
                    self.error = Some(e);
                    return TERMINATED;
                }
            }
        }
    }

    /// The phrase's frequency in the doc every term is on.
    #[inline(always)]
    fn freq_here(&mut self) -> Result<f32, DecodeError> {
        if self.slop == 0 {
            self.phrase_freq().map(|f| f as f32)
        } else {
            self.sloppy_freq()
        }
    }

    /// How many start positions make every term appear at its offset.
    fn phrase_freq(&mut self) -> Result<u32, DecodeError> {
        // Candidate phrase starts come from the first (rarest) term; each further term's
        // positions are decoded only while candidates remain, and filter them by a merge.
        let first = &mut self.terms[0];
        let first_offset = first.offset;
        first
            .source
            .read(&mut first.cursor, &mut self.positions[0])?;
        let mut starts = std::mem::take(&mut self.starts);
        starts.clear();
        starts.extend(
            self.positions[0]
                .iter()
                .filter_map(|p| p.checked_sub(first_offset)),
        );
        for (i, term) in self.terms.iter_mut().enumerate().skip(1) {
            if starts.is_empty() {
                break;
            }
            term.source.read(&mut term.cursor, &mut self.positions[i])?;
            let positions = &self.positions[i];
            let mut next = 0;
            starts.retain(|&start| {
                let Some(wanted) = start.checked_add(term.offset) else {
                    return false;
                };
                while next < positions.len() && positions[next] < wanted {
                    next += 1;
                }
                next < positions.len() && positions[next] == wanted
            });
        }
        let freq = starts.len() as u32;
        self.starts = starts;
        Ok(freq)
    }

    /// The sloppy frequency of the current doc (see the type's doc).
    fn sloppy_freq(&mut self) -> Result<f32, DecodeError> {
        for (i, term) in self.terms.iter_mut().enumerate() {
            term.source.read(&mut term.cursor, &mut self.positions[i])?;
        }
        let mut anchors = std::mem::take(&mut self.anchors);
        anchors.clear();
        for (term, positions) in self.terms.iter().zip(&self.positions) {
            anchors.extend(
                positions
                    .iter()
                    .map(|&p| i64::from(p) - i64::from(term.offset)),
            );
        }
        anchors.sort_unstable();
        anchors.dedup();
        let mut freq = 0.0;
        for &anchor in &anchors {
            if let Some(spread) = self.least_spread(anchor) {
                freq += 1.0 / (1.0 + spread as f32);
            }
        }
        self.anchors = anchors;
        Ok(freq)
    }

    /// The least spread (`max - anchor`, at most the slop) of the matches whose smallest value
    /// is `anchor`, if there is one. Such a match has some term at exactly `anchor + offset`;
    /// with that term pinned there, every other term takes its first free position at or after
    /// `anchor + offset`. Taken in (group, offset) order, that choice is optimal for each group
    /// (same-length windows, earliest first), and groups do not interact.
    fn least_spread(&self, anchor: i64) -> Option<i64> {
        let limit = anchor + i64::from(self.slop);
        let mut best: Option<i64> = None;
        for (pinned, term) in self.terms.iter().enumerate() {
            let wanted = anchor + i64::from(term.offset);
            let positions = &self.positions[pinned];
            let Ok(pinned_index) = positions.binary_search_by(|&p| i64::from(p).cmp(&wanted))
            else {
                continue;
            };
            let mut max = anchor;
            let mut group = u32::MAX;
            // The next index a term of the current group may take.
            let mut next_free = 0usize;
            let mut fits = true;
            for &i in &self.greedy_order {
                let term = &self.terms[i];
                if term.group != group {
                    group = term.group;
                    next_free = 0;
                }
                if i == pinned {
                    continue;
                }
                let positions = &self.positions[i];
                let lower = anchor + i64::from(term.offset);
                let mut index = positions
                    .partition_point(|&p| i64::from(p) < lower)
                    .max(next_free);
                if term.group == self.terms[pinned].group && index == pinned_index {
                    index += 1;
                }
                let Some(&position) = positions.get(index) else {
                    fits = false;
                    break;
                };
                let value = i64::from(position) - i64::from(term.offset);
                if value > limit {
                    fits = false;
                    break;
                }
                max = max.max(value);
                next_free = index + 1;
            }
            if fits {
                best = Some(best.map_or(max - anchor, |b| b.min(max - anchor)));
            }
        }
        best
    }
}

impl Scorer for PhraseScorer<'_> {
    fn doc(&self) -> u32 {
        self.doc
    }
    fn advance(&mut self) -> u32 {
        if self.doc == TERMINATED {
            return TERMINATED;
        }
        self.doc = self.next_match(self.doc + 1);
        self.confirmed = true;
        self.doc
    }
    fn seek(&mut self, target: u32) -> u32 {
        if self.doc >= target && self.confirmed {
            return self.doc;
        }
        // An unconfirmed doc at or past the target is checked first.
        self.doc = self.next_match(target.max(self.doc));
        self.confirmed = true;
        self.doc
    }
    fn approximate_seek(&mut self, target: u32) -> u32 {
        if self.doc >= target {
            return self.doc;
        }
        self.doc = self.align(target);
        self.confirmed = false;
        self.doc
    }
    fn confirm(&mut self) -> bool {
        if self.confirmed || self.doc == TERMINATED {
            return self.doc != TERMINATED;
        }
        match self.freq_here() {
            Ok(0.0) => false,
            Ok(freq) => {
                self.freq = freq;
                self.confirmed = true;
                true
            }
            Err(e) => {
                // Stop here: the error is reported by `error()`, as `next_match` does, and
                // the next `approximate_seek` ends the conjunction.
                self.error = Some(e);
                self.doc = TERMINATED;
                self.confirmed = true;
                false
            }
        }
    }
    fn score(&mut self) -> f32 {
        bm25::score_freq(self.weight, self.freq, self.doc_norm())
    }
    fn max_score(&self) -> f32 {
        self.max_score
    }
    /// Before positions are read: an exact phrase starts at most as often in a doc as its
    /// rarest term occurs there (each start takes a distinct position of every term), and
    /// BM25 grows with the frequency. A sloppy phrase's frequency has no such bound here.
    fn approximate_bound(&mut self) -> f32 {
        if self.confirmed {
            return self.score();
        }
        if self.slop != 0 || self.doc == TERMINATED {
            return self.max_score;
        }
        let least_tf = self
            .terms
            .iter_mut()
            .map(|t| t.cursor.term_freq())
            .min()
            .unwrap_or(0);
        inflate(bm25::score(self.weight, least_tf, self.doc_norm()))
    }
    /// A candidate (every term in the doc) whose bound is at most `threshold` is passed over
    /// before its positions are read: a phrase's top k reads positions only where a match
    /// could enter it.
    fn seek_competitive(&mut self, target: u32, threshold: f32) -> u32 {
        if self.doc >= target && self.confirmed {
            return self.doc;
        }
        let mut target = target.max(self.doc);
        loop {
            self.doc = self.align(target);
            self.confirmed = false;
            if self.doc == TERMINATED {
                self.confirmed = true;
                return TERMINATED;
            }
            if self.approximate_bound() > threshold && self.confirm() {
                return self.doc;
            }
            if self.doc == TERMINATED {
                // `confirm` met a decode error (kept for `error()`).
                return TERMINATED;
            }
            target = self.doc + 1;
        }
    }
    fn advance_competitive(&mut self, threshold: f32) -> u32 {
        if self.doc == TERMINATED {
            return TERMINATED;
        }
        self.seek_competitive(self.doc + 1, threshold)
    }
    fn cost(&self) -> u64 {
        u64::from(self.terms[0].cursor.doc_freq())
    }
    fn error(&self) -> Option<DecodeError> {
        self.error
            .or_else(|| self.terms.iter().find_map(|t| t.cursor.error()))
    }
}
