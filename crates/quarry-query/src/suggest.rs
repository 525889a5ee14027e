//! Suggesters (Elasticsearch's `suggest`): corrections of a text's words from the terms a
//! field holds.
//!
//! - **Term suggester:** each word of the text, analyzed as the field is (a keyword field's
//!   text is one word), gets the field's terms within `max_edits` edits (a transposition is
//!   one) that share its first `prefix_length` chars. A candidate's score is its similarity,
//!   `1 - edits / min(len(word), len(candidate))` in chars (Lucene's direct spell checker);
//!   candidates under `accuracy` are dropped. `suggest_mode`: `missing` corrects only words
//!   the field does not hold, `popular` only to terms in more documents than the word,
//!   `always` any word. Ordered by score, then doc count, then the term (`sort: score`), or
//!   doc count first (`sort: frequency`).
//! - **Phrase suggester:** a noisy-channel model over unigrams. Each word keeps itself or is
//!   replaced by one of its term-suggester candidates; a phrase scores the product over its
//!   words of `channel × P(term)`, where the channel is `real_word_error_likelihood` for a
//!   word kept that the field holds and `(1 - that) × similarity` for a correction, and
//!   `P(term) = (doc count + 1) / (documents + terms seen)` (add-one smoothing). Phrases with
//!   at most `max_errors` corrections that score above `confidence ×` the text's own are
//!   returned, best first. Elasticsearch's own model also weighs word n-grams where the field
//!   indexes shingles; Quarry indexes none, so its scores are not Elasticsearch's, though
//!   the corrections a one-word typo gets agree.

use crate::error::{QueryError, Result};
use crate::pattern::{Pattern, PatternKind, MAX_FUZZY_DISTANCE};
use crate::Searcher;
use quarry_format::TermKind;
use quarry_store::mapping::FieldType;
use std::collections::BTreeMap;

/// Which words the term suggester corrects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SuggestMode {
    Missing,
    Popular,
    Always,
}

/// The term suggester's options (Elasticsearch's defaults).
#[derive(Debug, Clone)]
pub struct TermOptions {
    pub field: String,
    pub size: usize,
    pub mode: SuggestMode,
    pub max_edits: u8,
    pub prefix_length: usize,
    pub min_word_length: usize,
    /// A candidate must be in at least this many documents (under 1: this fraction of them).
    pub min_doc_freq: f64,
    /// A word in more documents than this (under 1: this fraction of them) is not corrected.
    pub max_term_freq: f64,
    pub accuracy: f32,
    pub by_frequency: bool,
}

impl TermOptions {
    pub fn new(field: String) -> TermOptions {
        TermOptions {
            field,
            size: 5,
            mode: SuggestMode::Missing,
            max_edits: 2,
            prefix_length: 1,
            min_word_length: 4,
            min_doc_freq: 0.0,
            max_term_freq: 0.01,
            accuracy: 0.5,
            by_frequency: false,
        }
    }
}

/// One word of the text and what it could have been.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub text: String,
    /// Where the word is in the text, in chars.
    pub offset: usize,
    pub length: usize,
    pub options: Vec<Candidate>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub text: String,
    pub score: f64,
    pub freq: u64,
}

/// The phrase suggester's options.
#[derive(Debug, Clone)]
pub struct PhraseOptions {
    /// How each word's candidates are found (Elasticsearch's `direct_generator`).
    pub words: TermOptions,
    /// At most this many phrases.
    pub size: usize,
    pub real_word_error_likelihood: f64,
    /// At most this many corrected words (under 1: this fraction of the words).
    pub max_errors: f64,
    pub confidence: f64,
    /// `highlight`'s tags around corrected words.
    pub highlight: Option<(String, String)>,
}

impl PhraseOptions {
    pub fn new(field: String) -> PhraseOptions {
        let mut words = TermOptions::new(field);
        words.mode = SuggestMode::Always;
        words.min_word_length = 4;
        words.max_edits = 2;
        PhraseOptions {
            words,
            size: 5,
            real_word_error_likelihood: 0.95,
            max_errors: 1.0,
            confidence: 1.0,
            highlight: None,
        }
    }
}

/// A phrase suggestion: the corrected text, its score and, with `highlight`, the text with
/// the corrected words tagged.
#[derive(Debug, Clone, PartialEq)]
pub struct Phrase {
    pub text: String,
    pub highlighted: Option<String>,
    pub score: f64,
}

impl Searcher {
    /// The term suggester over `text`.
    pub fn suggest_terms(&self, text: &str, options: &TermOptions) -> Result<Vec<Entry>> {
        let kind = self.suggest_kind(&options.field)?;
        let words = self.words_of(text, &options.field, kind);
        let docs = self.doc_count();
        words
            .into_iter()
            .map(|(word, offset, length)| {
                let freq = self.doc_freq(&options.field, kind, &word)?;
                let options = self.corrections(&word, freq, kind, options, docs)?;
                Ok(Entry {
                    text: word,
                    offset,
                    length,
                    options,
                })
            })
            .collect()
    }

    /// The phrase suggester over `text`: its best rewrites, best first, at most `size`.
    pub fn suggest_phrase(
        &self,
        text: &str,
        options: &PhraseOptions,
    ) -> Result<(Entry, Vec<Phrase>)> {
        let kind = self.suggest_kind(&options.words.field)?;
        let words = self.words_of(text, &options.words.field, kind);
        let docs = self.doc_count();
        let entry = Entry {
            text: text.to_owned(),
            offset: 0,
            length: text.chars().count(),
            options: Vec::new(),
        };
        if words.is_empty() {
            return Ok((entry, Vec::new()));
        }
        // Per word: (term, log channel × P(term), corrected?).
        let mut choices: Vec<Vec<(String, f64, bool)>> = Vec::with_capacity(words.len());
        let mut seen = 0u64;
        let mut per_word = Vec::new();
        for (word, _, _) in &words {
            let freq = self.doc_freq(&options.words.field, kind, word)?;
            let candidates = self.corrections(word, freq, kind, &options.words, docs)?;
            seen += freq + candidates.iter().map(|c| c.freq).sum::<u64>();
            per_word.push((word.clone(), freq, candidates));
        }
        let total = (docs + seen).max(1) as f64;
        let probability = |freq: u64| (freq as f64 + 1.0) / total;
        let keep = options.real_word_error_likelihood;
        for (word, freq, candidates) in per_word {
            // A word the field does not hold is kept only as the text's own reading.
            let kept = if freq > 0 { keep } else { 1.0 - keep };
            let mut here = vec![(word.clone(), (kept * probability(freq)).ln(), false)];
            here.extend(candidates.into_iter().map(|c| {
                let channel = (1.0 - keep) * c.score;
                (c.text, (channel * probability(c.freq)).ln(), true)
            }));
            choices.push(here);
        }
        let max_errors = if options.max_errors >= 1.0 {
            options.max_errors.floor() as usize
        } else {
            ((options.max_errors * words.len() as f64).ceil() as usize).max(1)
        };
        let original: f64 = choices.iter().map(|c| c[0].1).sum();
        let mut phrases = Vec::new();
        let mut picked = Vec::with_capacity(choices.len());
        rewrites(
            &choices,
            max_errors,
            &mut picked,
            &mut |picked: &[usize]| {
                if picked.iter().all(|&i| i == 0) {
                    return;
                }
                let score: f64 = picked.iter().zip(&choices).map(|(&i, c)| c[i].1).sum();
                if score > original + options.confidence.ln() {
                    phrases.push((score, picked.to_vec()));
                }
            },
        );
        phrases.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        phrases.truncate(options.size);
        let phrases = phrases
            .into_iter()
            .map(|(score, picked)| {
                let terms = picked.iter().zip(&choices).map(|(&i, c)| &c[i]);
                let text = terms
                    .clone()
                    .map(|t| t.0.as_str())
                    .collect::<Vec<_>>()
                    .join(" ");
                let highlighted = options.highlight.as_ref().map(|(pre, post)| {
                    terms
                        .map(|t| match t.2 {
                            true => format!("{pre}{}{post}", t.0),
                            false => t.0.clone(),
                        })
                        .collect::<Vec<_>>()
                        .join(" ")
                });
                Phrase {
                    text,
                    highlighted,
                    score: score.exp(),
                }
            })
            .collect();
        Ok((entry, phrases))
    }

    /// Whether a field's suggestions come from its tokens or its whole values.
    fn suggest_kind(&self, field: &str) -> Result<TermKind> {
        match self.schema().rules(field).map(|r| r.ty) {
            None | Some(FieldType::Text) => Ok(TermKind::Token),
            Some(FieldType::Keyword) => Ok(TermKind::Exact),
            Some(_) => Err(QueryError::Invalid(format!(
                "field {field:?}: suggesters read text and keyword fields; this one is mapped \
                 otherwise"
            ))),
        }
    }

    /// The words of `text` as `field` is searched, each with its place in chars.
    fn words_of(&self, text: &str, field: &str, kind: TermKind) -> Vec<(String, usize, usize)> {
        if kind == TermKind::Exact {
            return match text.is_empty() {
                true => Vec::new(),
                false => vec![(text.to_owned(), 0, text.chars().count())],
            };
        }
        let lower: Vec<char> = text.to_lowercase().chars().collect();
        let mut from = 0;
        let mut words = Vec::new();
        for (_, token) in self.schema().analyzer_for(field).tokens(text) {
            let wanted: Vec<char> = token.chars().collect();
            let found = (from..lower.len())
                .find(|&at| lower[at..].starts_with(&wanted))
                .unwrap_or(from);
            from = (found + wanted.len()).min(lower.len());
            words.push((token, found, wanted.len()));
        }
        words
    }

    /// Documents holding `term`, over every block (deleted ones still counted until merged
    /// away, as Elasticsearch's term statistics count them).
    fn doc_freq(&self, field: &str, kind: TermKind, term: &str) -> Result<u64> {
        let mut freq = 0;
        for block in self.blocks() {
            let Some(ordinal) = block.field_ordinal(field) else {
                continue;
            };
            if let Some(info) = block.term_info(ordinal, kind, term.as_bytes())? {
                freq += u64::from(info.doc_freq);
            }
        }
        Ok(freq)
    }

    /// The term suggester's candidates for one word, held by `freq` documents.
    fn corrections(
        &self,
        word: &str,
        freq: u64,
        kind: TermKind,
        options: &TermOptions,
        docs: u64,
    ) -> Result<Vec<Candidate>> {
        let length = word.chars().count();
        if length < options.min_word_length {
            return Ok(Vec::new());
        }
        let of_docs = |limit: f64| match limit < 1.0 {
            true => limit * docs as f64,
            false => limit,
        };
        let skip = match options.mode {
            SuggestMode::Missing => freq > 0,
            SuggestMode::Popular | SuggestMode::Always => false,
        } || (freq as f64) > of_docs(options.max_term_freq).max(1.0) && freq > 0;
        if skip {
            return Ok(Vec::new());
        }
        let pattern = Pattern::new(PatternKind::Fuzzy {
            term: word.to_owned(),
            distance: options.max_edits.min(MAX_FUZZY_DISTANCE),
            prefix_length: options.prefix_length,
        })
        .map_err(|e| QueryError::Invalid(e.to_string()))?;
        let mut found: BTreeMap<String, u64> = BTreeMap::new();
        for block in self.blocks() {
            for (term, count) in pattern.terms_in(block, &options.field, kind)? {
                *found.entry(term).or_default() += count;
            }
        }
        let min_doc_freq = of_docs(options.min_doc_freq);
        let mut candidates: Vec<Candidate> = found
            .into_iter()
            .filter(|(term, count)| term != word && *count as f64 >= min_doc_freq)
            .filter(|(_, count)| options.mode != SuggestMode::Popular || *count > freq)
            .filter_map(|(term, count)| {
                let edits = edit_distance(word, &term) as f64;
                let shorter = length.min(term.chars().count()).max(1) as f64;
                let score = 1.0 - edits / shorter;
                (score >= f64::from(options.accuracy)).then_some(Candidate {
                    text: term,
                    score,
                    freq: count,
                })
            })
            .collect();
        candidates.sort_by(|a, b| {
            let by_score = b.score.total_cmp(&a.score);
            let by_freq = b.freq.cmp(&a.freq);
            match options.by_frequency {
                true => by_freq.then(by_score),
                false => by_score.then(by_freq),
            }
            .then_with(|| a.text.cmp(&b.text))
        });
        candidates.truncate(options.size);
        Ok(candidates)
    }
}

/// Calls `each` with every choice of one option per word that corrects at most `errors` words.
fn rewrites(
    choices: &[Vec<(String, f64, bool)>],
    errors: usize,
    picked: &mut Vec<usize>,
    each: &mut impl FnMut(&[usize]),
) {
    let Some(here) = choices.get(picked.len()) else {
        each(picked);
        return;
    };
    for (i, (_, _, corrected)) in here.iter().enumerate() {
        if *corrected && errors == 0 {
            continue;
        }
        picked.push(i);
        rewrites(choices, errors - usize::from(*corrected), picked, each);
        picked.pop();
    }
}

/// Edits (insert, delete, substitute, swap two neighbours) from `a` to `b`, in chars.
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut rows = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in rows.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in rows[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (rows[i - 1][j] + 1)
                .min(rows[i][j - 1] + 1)
                .min(rows[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(rows[i - 2][j - 2] + 1);
            }
            rows[i][j] = best;
        }
    }
    rows[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_distance_counts_swaps_as_one() {
        for (a, b, edits) in [
            ("ruth", "ruht", 1),
            ("ruth", "ruth", 0),
            ("kitten", "sitting", 3),
            ("", "abc", 3),
            ("natalie", "natale", 1),
        ] {
            assert_eq!(edit_distance(a, b), edits, "{a} {b}");
            assert_eq!(edit_distance(b, a), edits, "{b} {a}");
        }
    }

    #[test]
    fn rewrites_keep_to_the_error_budget() {
        let word = |corrections: usize| {
            let mut options = vec![("w".to_owned(), 0.0, false)];
            options.extend((0..corrections).map(|_| ("c".to_owned(), 0.0, true)));
            options
        };
        let choices = vec![word(2), word(1), word(3)];
        for errors in 0..4 {
            let mut seen = 0;
            rewrites(&choices, errors, &mut Vec::new(), &mut |picked| {
                let corrected = picked.iter().filter(|&&i| i > 0).count();
                assert!(corrected <= errors);
                seen += 1;
            });
            // Brute force: every pick, counted when within the budget.
            let mut want = 0;
            for a in 0..3 {
                for b in 0..2 {
                    for c in 0..4 {
                        let corrected = [a, b, c].iter().filter(|&&i| i > 0).count();
                        want += usize::from(corrected <= errors);
                    }
                }
            }
            assert_eq!(seen, want, "errors {errors}");
        }
    }
}
