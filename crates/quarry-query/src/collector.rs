//! Collectors: the best k hits by score, and top-k by MaxScore dynamic pruning.

use crate::scorer::Scorer;
use quarry_format::TERMINATED;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// A scored hit: block position in the searcher and doc id in the block.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScoredDoc {
    pub score: f32,
    pub block: u32,
    pub doc: u32,
}

impl ScoredDoc {
    /// Higher score first; equal scores in (block, doc) order, as Lucene breaks ties by doc id.
    fn better(&self, other: &ScoredDoc) -> Ordering {
        self.score
            .total_cmp(&other.score)
            .then_with(|| (other.block, other.doc).cmp(&(self.block, self.doc)))
    }
}

/// Heap entry ordered so that the heap's top is the worst kept hit.
struct Worst(ScoredDoc);

impl PartialEq for Worst {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Worst {}
impl PartialOrd for Worst {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Worst {
    fn cmp(&self, other: &Self) -> Ordering {
        other.0.better(&self.0)
    }
}

/// Keeps the best `k` hits. Hits must be offered in increasing (block, doc) order, so that a
/// later hit with a score equal to the worst kept one never displaces it.
pub struct TopK {
    k: usize,
    heap: BinaryHeap<Worst>,
}

impl TopK {
    pub fn new(k: usize) -> Self {
        TopK {
            k,
            heap: BinaryHeap::with_capacity(k + 1),
        }
    }

    /// The score a new hit must beat, once `k` hits are held.
    #[inline]
    pub fn threshold(&self) -> Option<f32> {
        if self.heap.len() < self.k {
            None
        } else {
            self.heap.peek().map(|w| w.0.score)
        }
    }

    /// Offers a hit; returns whether the threshold may have changed.
    #[inline]
    pub fn offer(&mut self, hit: ScoredDoc) -> bool {
        if self.k == 0 {
            return false;
        }
        if self.heap.len() < self.k {
            self.heap.push(Worst(hit));
            return self.heap.len() == self.k;
        }
        if let Some(worst) = self.heap.peek() {
            if hit.score > worst.0.score {
                self.heap.pop();
                self.heap.push(Worst(hit));
                return true;
            }
        }
        false
    }

    /// Best first.
    pub fn into_sorted(self) -> Vec<ScoredDoc> {
        let mut hits: Vec<ScoredDoc> = self.heap.into_iter().map(|w| w.0).collect();
        hits.sort_by(|a, b| b.better(a));
        hits
    }
}

/// Exhaustive collection of one block's scorer (which may collect its own way).
pub fn collect_all(scorer: &mut dyn Scorer, block: u32, top: &mut TopK) {
    scorer.collect_top_k(block, top)
}

/// `Scorer::collect_top_k`'s default: every match, less those `seek_competitive` and
/// `advance_competitive` skip once the threshold is known.
pub fn collect_pruned<S: Scorer + ?Sized>(scorer: &mut S, block: u32, top: &mut TopK) {
    if let Some(threshold) = top.threshold() {
        if scorer.max_score() <= threshold {
            return;
        }
    }
    let mut doc = scorer.doc();
    while doc != TERMINATED {
        if let Some(threshold) = top.threshold() {
            doc = scorer.seek_competitive(doc, threshold);
            if doc == TERMINATED {
                break;
            }
        }
        let score = scorer.score();
        top.offer(ScoredDoc { score, block, doc });
        doc = match top.threshold() {
            Some(threshold) => scorer.advance_competitive(threshold),
            None => scorer.advance(),
        };
    }
}

/// Offers every match of `scorer` to `top`, without skipping any, and returns how many there
/// were: the top k and the count in one pass, for queries whose count has no shortcut
/// (phrases, conjunctions), where a pruned top-k pass and a counting pass would each run the
/// expensive part (intersections, position checks) again.
pub fn collect_all_counted(scorer: &mut dyn Scorer, block: u32, top: &mut TopK) -> u64 {
    scorer.collect_counted(block, top)
}

/// `Scorer::collect_counted`'s default: every match offered, one at a time.
pub fn collect_each<S: Scorer + ?Sized>(scorer: &mut S, block: u32, top: &mut TopK) -> u64 {
    let mut count = 0;
    let mut doc = scorer.doc();
    while doc != TERMINATED {
        count += 1;
        let score = scorer.score();
        top.offer(ScoredDoc { score, block, doc });
        doc = scorer.advance();
    }
    count
}

/// Top-k of a disjunction (sum of the matching clauses' scores) by MaxScore (Turtle & Flood):
/// clauses sorted by score bound; the longest prefix whose bounds sum to at most the current
/// threshold is "non-essential": a doc matching only those cannot enter the top k, so
/// candidates come from the essential clauses alone, and non-essential clauses are only
/// probed (`seek`) while the candidate can still beat the threshold.
pub fn collect_max_score<S: Scorer>(clauses: &mut [S], block: u32, top: &mut TopK) {
    // One clause left in this block (the others are not in it: a misspelt word, `american
    // tonerserv`) collects as a query of its own: a term's blocks are scored whole, where
    // this loop took 3x as long.
    if let [only] = clauses {
        only.collect_top_k(block, top);
        return;
    }
    clauses.sort_by(|a, b| a.max_score().total_cmp(&b.max_score()));
    let mut bounds = Vec::with_capacity(clauses.len());
    let mut sum = 0f32;
    for clause in clauses.iter() {
        sum = crate::scorer::inflate(sum + clause.max_score());
        bounds.push(sum);
    }
    let essential_from = |threshold: Option<f32>| match threshold {
        None => 0,
        Some(t) => bounds.partition_point(|&b| b <= t),
    };
    let mut first_essential = essential_from(top.threshold());
    while first_essential < clauses.len() {
        let mut doc = TERMINATED;
        if first_essential + 1 == clauses.len() && first_essential > 0 {
            // One essential clause: skip its blocks that cannot reach the threshold even with
            // every non-essential clause matching.
            let last = &mut clauses[first_essential];
            let current = last.doc();
            doc = match top.threshold() {
                Some(threshold) => {
                    last.seek_competitive(current, threshold - bounds[first_essential - 1])
                }
                None => current,
            };
        } else {
            for clause in &clauses[first_essential..] {
                doc = doc.min(clause.doc());
            }
        }
        if doc == TERMINATED {
            break;
        }
        let mut score = 0f32;
        for clause in &mut clauses[first_essential..] {
            if clause.doc() == doc {
                score += clause.score();
                clause.advance();
            }
        }
        let threshold = top.threshold();
        let mut competitive = true;
        for i in (0..first_essential).rev() {
            if threshold.is_some_and(|t| score + bounds[i] <= t) {
                competitive = false;
                break;
            }
            let clause = &mut clauses[i];
            if clause.seek(doc) == doc {
                score += clause.score();
            }
        }
        if competitive && top.offer(ScoredDoc { score, block, doc }) {
            first_essential = essential_from(top.threshold());
        }
    }
}
