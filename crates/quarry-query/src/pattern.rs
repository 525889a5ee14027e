//! Multi-term queries: prefix (`err*`), wildcard (`*err`, `w?ld*card`), regular expression
//! (`/err(or|no)/`) and fuzzy (`eror~1`) terms, each an automaton run over a block's term
//! dictionary (seed 002: an FST walked with an automaton visits only the keys the automaton
//! can still accept).
//!
//! A pattern is compiled once per query (`Pattern::new`, at parse time, so a bad regular
//! expression is a parse error with its position) and shared by every block. In a block, the
//! token terms of the field it accepts are found by walking the FST restricted to the field's
//! key range, and their postings are ORed into one bit set. So whatever a pattern matches, a
//! block costs at most one walk of its dictionary, one read of the matched postings, the
//! matched terms' infos (bounded by the block's dictionary) and one bit per doc: `*` over ten
//! million distinct tokens is slow, never an explosion of memory. Matches score as filters (constant, nothing added to BM25), as
//! Elasticsearch's default `constant_score` rewrite of multi-term queries does.
//!
//! A pattern matches either a field's tokens or its whole values (its exact terms, what
//! Elasticsearch's dynamic mapping shows as the `.keyword` subfield, and what a field mapped
//! `keyword` holds): the planner chooses (query.rs), `Pattern::scorer` is told which. Tokens
//! are lowercase, so prefix, wildcard and fuzzy terms are lowercased as the analyzer would; a
//! regular expression is matched against the tokens as written (`/Err.*/` matches nothing:
//! write `/err.*/`). Whole values are matched case-sensitively, as Elasticsearch's keyword
//! fields are, by the pattern as written (`Pattern::as_written`); with `case_insensitive`, by a
//! regular expression under `(?i)`. Fuzzy distance counts a transposition as one edit
//! (Lucene's `FuzzyQuery` default); `~` alone means 2, the most allowed.

use crate::filter::Optimizations;
use crate::scorer::BoxScorer;
use fst::{Automaton, IntoStreamer, Streamer};
use levenshtein_automata::{Distance, LevenshteinAutomatonBuilder, SINK_STATE};
use quarry_format::termdict::term_key;
use quarry_format::{BlockReader, Result, TermKind};
use regex_automata::dfa::{dense, Automaton as _};
use regex_automata::util::primitives::StateID;
use regex_automata::util::start;
use regex_automata::Anchored;
use std::fmt;
use std::ops::Bound;
use std::sync::{Arc, OnceLock};

/// The largest fuzzy distance (Lucene's `LevenshteinAutomata.MAXIMUM_SUPPORTED_DISTANCE`).
pub const MAX_FUZZY_DISTANCE: u8 = 2;

/// A regular expression whose DFA would need more than this many bytes is refused.
const REGEX_DFA_LIMIT: usize = 8 << 20;

/// What a pattern matches, as written (lowercased where tokens are).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PatternKind {
    /// Terms starting with these bytes (`err*`).
    Prefix(String),
    /// `*` any run of characters, `?` one character; the parts between them literal.
    Wildcard(Vec<WildcardPart>),
    /// A regular expression matching whole terms (Rust `regex` syntax).
    Regex(String),
    /// Terms within `distance` edits of `term` that start with its first `prefix_length`
    /// characters (Lucene's FuzzyQuery `prefixLength`: the edits are all after them).
    Fuzzy {
        term: String,
        distance: u8,
        prefix_length: usize,
    },
    /// Terms between two strings, byte-wise (`title:[a TO c}`, `host:>m`), Lucene's term
    /// range over an analyzed field: the bounds are lowercased as tokens are.
    TermRange {
        lower: Bound<String>,
        upper: Bound<String>,
    },
}

impl PatternKind {
    /// A wildcard from its chars, each with whether it is an operator (an unescaped `*` or
    /// `?`). Literals are lowercased, as tokens are; `lit*` is a prefix (a key range, no
    /// automaton).
    pub fn wildcard(chars: impl IntoIterator<Item = (char, bool)>) -> PatternKind {
        PatternKind::wildcard_as_written(chars).lowercased()
    }

    /// `wildcard` with its literals as written, for whole values.
    pub fn wildcard_as_written(chars: impl IntoIterator<Item = (char, bool)>) -> PatternKind {
        let mut parts: Vec<WildcardPart> = Vec::new();
        for (c, operator) in chars {
            match (c, operator) {
                ('*', true) => parts.push(WildcardPart::AnyRun),
                ('?', true) => parts.push(WildcardPart::AnyChar),
                (c, _) => match parts.last_mut() {
                    Some(WildcardPart::Literal(literal)) => literal.push(c),
                    _ => parts.push(WildcardPart::Literal(c.to_string())),
                },
            }
        }
        match parts.as_slice() {
            [WildcardPart::Literal(prefix), WildcardPart::AnyRun] => {
                PatternKind::Prefix(prefix.clone())
            }
            _ => PatternKind::Wildcard(parts),
        }
    }

    /// The pattern for tokens: prefix, wildcard and fuzzy literals lowercased char by char, as
    /// the analyzer lowercases tokens. A regular expression is matched as written (the module
    /// doc); a term range's bounds were lowercased where they were read.
    pub fn lowercased(&self) -> PatternKind {
        let lower = |text: &str| {
            text.chars()
                .flat_map(char::to_lowercase)
                .collect::<String>()
        };
        match self {
            PatternKind::Prefix(prefix) => PatternKind::Prefix(lower(prefix)),
            PatternKind::Wildcard(parts) => PatternKind::Wildcard(
                parts
                    .iter()
                    .map(|part| match part {
                        WildcardPart::Literal(text) => WildcardPart::Literal(lower(text)),
                        other => other.clone(),
                    })
                    .collect(),
            ),
            PatternKind::Fuzzy {
                term,
                distance,
                prefix_length,
            } => PatternKind::Fuzzy {
                term: lower(term),
                distance: *distance,
                prefix_length: *prefix_length,
            },
            PatternKind::Regex(_) | PatternKind::TermRange { .. } => self.clone(),
        }
    }

    /// The same pattern ignoring case: a regular expression under `(?i)` (Unicode simple case
    /// folding); `None` for fuzzy terms and term ranges, which have no such form.
    fn case_insensitive(&self) -> Option<PatternKind> {
        let regex = match self {
            PatternKind::Prefix(prefix) => format!("(?s:{}.*)", regex_syntax::escape(prefix)),
            PatternKind::Wildcard(parts) => wildcard_regex(parts),
            PatternKind::Regex(regex) => regex.clone(),
            PatternKind::Fuzzy { .. } | PatternKind::TermRange { .. } => return None,
        };
        Some(PatternKind::Regex(format!("(?i:{regex})")))
    }
}

/// A wildcard's parts as a regular expression (`.` matching any char, newlines too).
fn wildcard_regex(parts: &[WildcardPart]) -> String {
    let mut regex = String::from("(?s:");
    for part in parts {
        match part {
            WildcardPart::Literal(text) => regex.push_str(&regex_syntax::escape(text)),
            WildcardPart::AnyRun => regex.push_str(".*"),
            WildcardPart::AnyChar => regex.push('.'),
        }
    }
    regex.push(')');
    regex
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WildcardPart {
    Literal(String),
    AnyRun,
    AnyChar,
}

/// A compiled pattern, shared by every block a query searches.
pub struct Pattern {
    kind: PatternKind,
    matcher: Matcher,
    /// For a wildcard that starts with `*` (the automaton cannot prune the dictionary walk):
    /// its longest literal, which every match contains. Such a pattern streams the field's
    /// keys and runs the automaton only on keys that contain it (found with SIMD `memmem`).
    required: Option<memchr::memmem::Finder<'static>>,
    /// The same wildcard's literals, for the trigram index (`ngram.rs`).
    literals: Vec<Vec<u8>>,
    /// The pattern for whole values, where it is not this one (which then matches tokens):
    /// the pattern as written, its case kept (`as_written`).
    whole_values: Option<Arc<Pattern>>,
}

// One per pattern, built once per query: its size costs nothing, a `Box` would only add an
// indirection to each term the automaton checks.
#[allow(clippy::large_enum_variant)]
enum Matcher {
    Prefix(String),
    TermRange(Bound<String>, Bound<String>),
    Regex(RegexAutomaton),
    /// Terms starting with `prefix` whose rest the DFA accepts.
    Fuzzy {
        prefix: String,
        rest: levenshtein_automata::DFA,
    },
}

impl fmt::Debug for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Pattern({self})")
    }
}

impl PartialEq for Pattern {
    fn eq(&self, other: &Self) -> bool {
        self.kind == other.kind && self.whole_values == other.whole_values
    }
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            PatternKind::Prefix(prefix) => write!(f, "{}*", escape_wildcard(prefix)),
            PatternKind::Wildcard(parts) => {
                for part in parts {
                    match part {
                        WildcardPart::Literal(text) => write!(f, "{}", escape_wildcard(text))?,
                        WildcardPart::AnyRun => f.write_str("*")?,
                        WildcardPart::AnyChar => f.write_str("?")?,
                    }
                }
                Ok(())
            }
            PatternKind::Regex(regex) => write!(f, "/{regex}/"),
            PatternKind::Fuzzy {
                term,
                distance,
                prefix_length,
            } => {
                write!(f, "{}~{distance}", escape_wildcard(term))?;
                // Not query syntax, but the expansion cache's key must tell it apart.
                match prefix_length {
                    0 => Ok(()),
                    n => write!(f, " (first {n} exact)"),
                }
            }
            PatternKind::TermRange { lower, upper } => {
                let text = |b: &Bound<String>| match b {
                    Bound::Included(t) | Bound::Excluded(t) => escape_wildcard(t),
                    Bound::Unbounded => "*".to_owned(),
                };
                let open = if matches!(lower, Bound::Excluded(_)) {
                    '{'
                } else {
                    '['
                };
                let close = if matches!(upper, Bound::Excluded(_)) {
                    '}'
                } else {
                    ']'
                };
                write!(f, "{open}{} TO {}{close}", text(lower), text(upper))
            }
        }
    }
}

fn escape_wildcard(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(
            c,
            '*' | '?' | '\\' | '~' | '/' | ':' | '(' | ')' | '"' | ' '
        ) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Why a pattern does not compile.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PatternError(pub String);

impl Pattern {
    pub fn new(kind: PatternKind) -> Result<Pattern, PatternError> {
        let matcher = match &kind {
            PatternKind::Prefix(prefix) => Matcher::Prefix(prefix.clone()),
            PatternKind::Wildcard(parts) => {
                Matcher::Regex(RegexAutomaton::new(&wildcard_regex(parts))?)
            }
            PatternKind::Regex(regex) => Matcher::Regex(RegexAutomaton::new(regex)?),
            PatternKind::Fuzzy {
                term,
                distance,
                prefix_length,
            } => {
                if *distance > MAX_FUZZY_DISTANCE {
                    return Err(PatternError(format!(
                        "fuzzy distance {distance} is above the maximum, {MAX_FUZZY_DISTANCE}"
                    )));
                }
                let split = term
                    .char_indices()
                    .nth(*prefix_length)
                    .map_or(term.len(), |(at, _)| at);
                let (prefix, rest) = term.split_at(split);
                Matcher::Fuzzy {
                    prefix: prefix.to_owned(),
                    rest: levenshtein_builder(*distance).build_dfa(rest),
                }
            }
            PatternKind::TermRange { lower, upper } => {
                Matcher::TermRange(lower.clone(), upper.clone())
            }
        };
        let literals = match &kind {
            PatternKind::Wildcard(parts) if matches!(parts.first(), Some(WildcardPart::AnyRun)) => {
                parts
                    .iter()
                    .filter_map(|part| match part {
                        WildcardPart::Literal(text) => Some(text.as_bytes().to_vec()),
                        _ => None,
                    })
                    .collect()
            }
            _ => Vec::new(),
        };
        let required = literals
            .iter()
            .max_by_key(|literal| literal.len())
            .filter(|literal| literal.len() >= 2)
            .map(|literal| memchr::memmem::Finder::new(literal).into_owned());
        Ok(Pattern {
            kind,
            matcher,
            required,
            literals,
            whole_values: None,
        })
    }

    /// A pattern as a user wrote it (`Web-0*`), for tokens and whole values alike: tokens are
    /// matched by its lowercased form (`PatternKind::lowercased`), whole values by the pattern
    /// as written, case-sensitively as Elasticsearch's keyword fields are. `case_insensitive`
    /// (Elasticsearch's option of `prefix`, `wildcard`, `regexp` and `term`) matches whole
    /// values, and tokens for a regular expression, ignoring case.
    pub fn as_written(kind: PatternKind, case_insensitive: bool) -> Result<Pattern, PatternError> {
        let values = if case_insensitive {
            kind.case_insensitive().ok_or_else(|| {
                PatternError("case_insensitive is not supported for fuzzy terms and ranges".into())
            })?
        } else {
            kind.clone()
        };
        let tokens = match kind {
            PatternKind::Regex(_) => values.clone(),
            kind => kind.lowercased(),
        };
        let mut pattern = Pattern::new(tokens)?;
        if values != pattern.kind {
            pattern.whole_values = Some(Arc::new(Pattern::new(values)?));
        }
        Ok(pattern)
    }

    /// This pattern for terms of `kind`: the pattern as written for whole values
    /// (`TermKind::Exact`), else this one.
    pub fn for_terms(self: &Arc<Self>, kind: TermKind) -> Arc<Pattern> {
        match (&self.whole_values, kind) {
            (Some(values), TermKind::Exact) => values.clone(),
            _ => self.clone(),
        }
    }

    pub fn kind(&self) -> &PatternKind {
        &self.kind
    }

    /// Whether `term` matches (the model tests' and anyone's check of one term).
    pub fn matches(&self, term: &str) -> bool {
        match &self.matcher {
            Matcher::Prefix(prefix) => term.starts_with(prefix.as_str()),
            Matcher::Regex(automaton) => accepts(automaton, term.as_bytes()),
            Matcher::Fuzzy { prefix, rest } => term
                .strip_prefix(prefix.as_str())
                .is_some_and(|term| accepts(&FuzzyAutomaton(rest), term.as_bytes())),
            Matcher::TermRange(lower, upper) => {
                let above = match lower {
                    Bound::Included(b) => term >= b.as_str(),
                    Bound::Excluded(b) => term > b.as_str(),
                    Bound::Unbounded => true,
                };
                let below = match upper {
                    Bound::Included(b) => term <= b.as_str(),
                    Bound::Excluded(b) => term < b.as_str(),
                    Bound::Unbounded => true,
                };
                above && below
            }
        }
    }

    /// The docs of `block` whose `field` holds a term of kind `terms` (tokens, or whole values
    /// as exact terms) this pattern matches, through the expansion cache and, for tokens, the
    /// trigram index, where `optimizations` allow them.
    pub fn scorer<'a>(
        &self,
        block: &'a BlockReader,
        field: &str,
        terms: TermKind,
        optimizations: &Optimizations,
    ) -> Result<Option<BoxScorer<'a>>> {
        let infos = self.term_infos(block, field, terms, optimizations)?;
        crate::filter::postings_union(block, &infos)
    }

    /// The docs of `block` whose `field` has a whole value (an exact term) of at most `limit`
    /// characters that this pattern matches: a keyword view's values under a small
    /// `ignore_above` (query.rs, `Query::WholeValues`). Walks the field's exact terms, without
    /// the expansion cache.
    pub fn scorer_up_to<'a>(
        &self,
        block: &'a BlockReader,
        field: &str,
        limit: u32,
    ) -> Result<Option<BoxScorer<'a>>> {
        let Some(ordinal) = block.field_ordinal(field) else {
            return Ok(None);
        };
        let (start, end) = key_range(ordinal, TermKind::Exact);
        let mut stream = block
            .term_dictionary()
            .range()
            .ge(&start)
            .lt(&end)
            .into_stream();
        let mut ordinals = Vec::new();
        while let Some((key, ordinal)) = stream.next() {
            let term = std::str::from_utf8(&key[start.len()..]).unwrap_or_default();
            if term.chars().count() <= limit as usize && self.matches(term) {
                ordinals.push(ordinal);
            }
        }
        let mut term_infos = block.term_infos();
        let infos = ordinals
            .into_iter()
            .map(|ordinal| term_infos.get(ordinal))
            .collect::<Result<Vec<_>>>()?;
        crate::filter::postings_union(block, &infos)
    }

    /// The terms of kind `terms` of `field` in `block` this pattern matches (none when the
    /// block lacks the field), as `scorer` finds them.
    pub fn term_infos(
        &self,
        block: &BlockReader,
        field: &str,
        terms: TermKind,
        optimizations: &Optimizations,
    ) -> Result<Vec<quarry_format::TermInfo>> {
        let cached = optimizations.expansion_cache;
        let Some(ordinal) = block.field_ordinal(field) else {
            return Ok(Vec::new());
        };
        let (start, end) = key_range(ordinal, terms);
        // The trigram index is built over tokens only (`ngram::index_for`).
        let ngram_index = optimizations.ngram_index && terms == TermKind::Token;
        let cache_key = (block.uid(), ordinal, terms as u8, self.to_string());
        let hit = if cached {
            expansions().get(&cache_key)
        } else {
            None
        };
        let ordinals = match hit {
            Some(ordinals) => ordinals,
            None => {
                let ordinals = Arc::new(self.expand(block, ordinal, &start, &end, ngram_index));
                if cached && ordinals.len() <= MAX_CACHED_EXPANSION {
                    expansions().insert(cache_key, ordinals.clone());
                }
                ordinals
            }
        };
        let mut term_infos = block.term_infos();
        ordinals
            .iter()
            .map(|&ordinal| term_infos.get(ordinal))
            .collect::<Result<Vec<_>>>()
    }

    /// The terms of kind `terms` of `field` in `block` this pattern matches, each with its
    /// doc count (a suggester's candidates: suggest.rs). Walks the dictionary without the
    /// expansion cache, which keeps ordinals, not terms.
    pub fn terms_in(
        &self,
        block: &BlockReader,
        field: &str,
        terms: TermKind,
    ) -> Result<Vec<(String, u64)>> {
        let Some(ordinal) = block.field_ordinal(field) else {
            return Ok(Vec::new());
        };
        let (start, end) = key_range(ordinal, terms);
        let dictionary = block.term_dictionary();
        let mut found = Vec::new();
        let mut keep = |key: &[u8], ordinal: u64| {
            if let Ok(term) = std::str::from_utf8(&key[start.len()..]) {
                found.push((term.to_owned(), ordinal));
            }
        };
        match &self.matcher {
            Matcher::Fuzzy { prefix, rest } => {
                let mut from = start.clone();
                from.extend_from_slice(prefix.as_bytes());
                let keyed = AfterPrefix {
                    prefix: &from,
                    inner: &FuzzyAutomaton(rest),
                };
                let mut stream = dictionary.search(keyed).ge(&from).lt(&end).into_stream();
                while let Some((key, ordinal)) = stream.next() {
                    keep(key, ordinal);
                }
            }
            _ => {
                let mut stream = dictionary.range().ge(&start).lt(&end).into_stream();
                while let Some((key, ordinal)) = stream.next() {
                    let term = std::str::from_utf8(&key[start.len()..]).unwrap_or_default();
                    if self.matches(term) {
                        keep(key, ordinal);
                    }
                }
            }
        }
        let mut infos = block.term_infos();
        found
            .into_iter()
            .map(|(term, ordinal)| Ok((term, u64::from(infos.get(ordinal)?.doc_freq))))
            .collect()
    }

    /// The ordinals of the field's terms of one kind (keys in `start..end`) this pattern
    /// matches; `ngram_index` only for tokens.
    fn expand(
        &self,
        block: &BlockReader,
        field: u16,
        start: &[u8],
        end: &[u8],
        ngram_index: bool,
    ) -> Vec<u64> {
        let dictionary = block.term_dictionary();
        let mut ordinals = Vec::new();
        match &self.matcher {
            Matcher::Prefix(prefix) => {
                let mut lower = start.to_vec();
                lower.extend_from_slice(prefix.as_bytes());
                let mut stream = dictionary.range().ge(&lower).lt(end).into_stream();
                while let Some((key, ordinal)) = stream.next() {
                    if !key[start.len()..].starts_with(prefix.as_bytes()) {
                        break;
                    }
                    ordinals.push(ordinal);
                }
            }
            Matcher::TermRange(lower, upper) => {
                let key = |text: &String| {
                    let mut key = start.to_vec();
                    key.extend_from_slice(text.as_bytes());
                    key
                };
                let mut range = dictionary.range();
                range = match lower {
                    Bound::Included(text) => range.ge(key(text)),
                    Bound::Excluded(text) => range.gt(key(text)),
                    Bound::Unbounded => range.ge(start),
                };
                // Past the field's tokens in any case.
                range = match upper {
                    Bound::Included(text) if key(text).as_slice() < end => range.le(key(text)),
                    Bound::Excluded(text) if key(text).as_slice() < end => range.lt(key(text)),
                    _ => range.lt(end),
                };
                let mut stream = range.into_stream();
                while let Some((_, ordinal)) = stream.next() {
                    ordinals.push(ordinal);
                }
            }
            Matcher::Regex(automaton) => match &self.required {
                // A leading `*` with a literal of three bytes or more: the trigram index's
                // candidates, each decided by the automaton.
                Some(_) if ngram_index && self.literals.iter().any(|l| l.len() >= 3) => {
                    let index = crate::ngram::index_for(block, field, start);
                    let candidates = index
                        .as_ref()
                        .and_then(|index| Some((index, index.candidates(&self.literals)?)));
                    match candidates {
                        Some((index, candidates)) => {
                            for id in candidates {
                                if accepts(automaton, index.term(id)) {
                                    ordinals.push(index.ordinal(id));
                                }
                            }
                        }
                        None => {
                            return self.expand(block, field, start, end, false);
                        }
                    }
                }
                Some(literal) => {
                    // No upper bound on the stream (it compares every step's key with it,
                    // 14% of the walk in a profile): the field's keys end where the prefix does.
                    let mut stream = dictionary.range().ge(start).into_stream();
                    while let Some((key, ordinal)) = stream.next() {
                        let Some(term) = key.strip_prefix(start) else {
                            break;
                        };
                        if literal.find(term).is_some() && accepts(automaton, term) {
                            ordinals.push(ordinal);
                        }
                    }
                }
                None => collect(dictionary, start, end, automaton, &mut ordinals),
            },
            Matcher::Fuzzy { prefix, rest } => {
                let mut start = start.to_vec();
                start.extend_from_slice(prefix.as_bytes());
                collect(
                    dictionary,
                    &start,
                    end,
                    &FuzzyAutomaton(rest),
                    &mut ordinals,
                );
            }
        }
        ordinals
    }
}

/// Expansions larger than this many terms are not cached (they would push out many others).
const MAX_CACHED_EXPANSION: usize = 1 << 20;

/// Ordinals the expansion cache holds at most (8 bytes each: 64 MiB).
const EXPANSION_CACHE_ORDINALS: u64 = 8 << 20;

/// A pattern's matching terms per block and field, kept across queries (seed 002 caches the
/// automata's expansions per segment): a dashboard that refreshes `host:web-*` or `*timeout*`
/// walks each block's dictionary once. Keyed by the reader's process-unique id, so a block
/// replaced by a merge never answers from another's terms; the field's ordinal and the term
/// kind (tokens or whole values) complete the key. Bounded by the ordinals held.
fn expansions() -> &'static ExpansionCache {
    static CACHE: OnceLock<ExpansionCache> = OnceLock::new();
    CACHE.get_or_init(|| {
        quick_cache::sync::Cache::with_weighter(4096, EXPANSION_CACHE_ORDINALS, OrdinalCount)
    })
}

/// (block reader uid, field ordinal, `TermKind` byte, the pattern as `Display` writes it).
type ExpansionKey = (u64, u16, u8, String);

type ExpansionCache = quick_cache::sync::Cache<ExpansionKey, Arc<Vec<u64>>, OrdinalCount>;

#[derive(Clone)]
struct OrdinalCount;

impl quick_cache::Weighter<ExpansionKey, Arc<Vec<u64>>> for OrdinalCount {
    fn weight(&self, _key: &ExpansionKey, ordinals: &Arc<Vec<u64>>) -> u64 {
        ordinals.len() as u64 + 1
    }
}

/// The ordinals of the keys in `start..end` whose bytes after `start` `automaton` accepts.
fn collect<A: Automaton, D: AsRef<[u8]>>(
    dictionary: &fst::Map<D>,
    start: &[u8],
    end: &[u8],
    automaton: &A,
    out: &mut Vec<u64>,
) {
    let keyed = AfterPrefix {
        prefix: start,
        inner: automaton,
    };
    let mut stream = dictionary.search(keyed).ge(start).lt(end).into_stream();
    while let Some((_, ordinal)) = stream.next() {
        out.push(ordinal);
    }
}

/// The dictionary keys of a field's terms of one kind: `start..end`.
fn key_range(field: u16, terms: TermKind) -> (Vec<u8>, Vec<u8>) {
    let mut start = Vec::new();
    term_key(&mut start, field, terms, &[]);
    let mut end = start.clone();
    // The last byte is the kind (< 255): incrementing it bounds the field's terms of it.
    *end.last_mut().expect("term keys have a kind byte") += 1;
    (start, end)
}

fn accepts<A: Automaton>(automaton: &A, bytes: &[u8]) -> bool {
    let mut state = automaton.start();
    for &byte in bytes {
        if !automaton.can_match(&state) {
            return false;
        }
        state = automaton.accept(&state, byte);
    }
    automaton.is_match(&state)
}

/// One shared builder per distance: building one takes milliseconds, a DFA from it microseconds.
fn levenshtein_builder(distance: u8) -> &'static LevenshteinAutomatonBuilder {
    static BUILDERS: [OnceLock<LevenshteinAutomatonBuilder>; 3] =
        [OnceLock::new(), OnceLock::new(), OnceLock::new()];
    BUILDERS[distance as usize].get_or_init(|| LevenshteinAutomatonBuilder::new(distance, true))
}

/// `inner` run over what follows `prefix` (a term key's field ordinal and kind).
struct AfterPrefix<'a, A> {
    prefix: &'a [u8],
    inner: &'a A,
}

#[derive(Clone)]
enum AfterPrefixState<S> {
    /// This many prefix bytes read.
    Prefix(usize),
    Inner(S),
    Dead,
}

impl<A: Automaton> Automaton for AfterPrefix<'_, A> {
    type State = AfterPrefixState<A::State>;

    fn start(&self) -> Self::State {
        if self.prefix.is_empty() {
            AfterPrefixState::Inner(self.inner.start())
        } else {
            AfterPrefixState::Prefix(0)
        }
    }

    fn is_match(&self, state: &Self::State) -> bool {
        matches!(state, AfterPrefixState::Inner(s) if self.inner.is_match(s))
    }

    fn can_match(&self, state: &Self::State) -> bool {
        match state {
            AfterPrefixState::Prefix(_) => true,
            AfterPrefixState::Inner(s) => self.inner.can_match(s),
            AfterPrefixState::Dead => false,
        }
    }

    fn accept(&self, state: &Self::State, byte: u8) -> Self::State {
        match state {
            AfterPrefixState::Prefix(read) if self.prefix[*read] == byte => {
                if read + 1 == self.prefix.len() {
                    AfterPrefixState::Inner(self.inner.start())
                } else {
                    AfterPrefixState::Prefix(read + 1)
                }
            }
            AfterPrefixState::Inner(s) => AfterPrefixState::Inner(self.inner.accept(s, byte)),
            _ => AfterPrefixState::Dead,
        }
    }
}

/// A regular expression as a dense DFA that matches whole terms: anchored at the start, and
/// `$` at the end (a DFA reports a match one byte late, so without it `err` would accept
/// `errors` from the match it saw after `err`).
struct RegexAutomaton {
    dfa: dense::DFA<Vec<u32>>,
    start: StateID,
}

impl RegexAutomaton {
    fn new(regex: &str) -> Result<RegexAutomaton, PatternError> {
        if let Some(reason) = syntax_error(regex) {
            return Err(PatternError(reason));
        }
        let whole = format!("(?:{regex})$");
        let dfa = dense::Builder::new()
            .configure(
                dense::Config::new()
                    .start_kind(regex_automata::dfa::StartKind::Anchored)
                    .dfa_size_limit(Some(REGEX_DFA_LIMIT))
                    .determinize_size_limit(Some(REGEX_DFA_LIMIT)),
            )
            .build(&whole)
            .map_err(|e| {
                PatternError(format!("regular expression too large or unsupported: {e}"))
            })?;
        let config = start::Config::new().anchored(Anchored::Yes);
        let start = dfa
            .start_state(&config)
            .map_err(|e| PatternError(format!("regular expression: {e}")))?;
        Ok(RegexAutomaton { dfa, start })
    }
}

/// A regular expression's syntax error as regex-syntax names it ("unclosed group"), without
/// its multi-line rendering of the pattern, whose caret would point into the wrapped pattern.
fn syntax_error(regex: &str) -> Option<String> {
    let error = regex_syntax::Parser::new().parse(regex).err()?;
    let reason = match &error {
        regex_syntax::Error::Parse(e) => e.kind().to_string(),
        regex_syntax::Error::Translate(e) => e.kind().to_string(),
        other => other.to_string(),
    };
    Some(format!("invalid regular expression: {reason}"))
}

impl Automaton for RegexAutomaton {
    type State = StateID;

    fn start(&self) -> StateID {
        self.start
    }

    fn is_match(&self, state: &StateID) -> bool {
        self.dfa.is_match_state(self.dfa.next_eoi_state(*state))
    }

    fn can_match(&self, state: &StateID) -> bool {
        !self.dfa.is_dead_state(*state)
    }

    fn accept(&self, state: &StateID, byte: u8) -> StateID {
        self.dfa.next_state(*state, byte)
    }
}

struct FuzzyAutomaton<'a>(&'a levenshtein_automata::DFA);

impl Automaton for FuzzyAutomaton<'_> {
    type State = u32;

    fn start(&self) -> u32 {
        self.0.initial_state()
    }

    fn is_match(&self, state: &u32) -> bool {
        matches!(self.0.distance(*state), Distance::Exact(_))
    }

    fn can_match(&self, state: &u32) -> bool {
        *state != SINK_STATE
    }

    fn accept(&self, state: &u32, byte: u8) -> u32 {
        self.0.transition(*state, byte)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wildcard(text: &str) -> Pattern {
        Pattern::new(PatternKind::wildcard(
            text.chars().map(|c| (c, c == '*' || c == '?')),
        ))
        .unwrap()
    }

    #[test]
    fn whole_terms_only() {
        let regex = Pattern::new(PatternKind::Regex("err".into())).unwrap();
        assert!(regex.matches("err"));
        assert!(!regex.matches("errors"));
        assert!(!regex.matches("xerr"));
        let any = wildcard("e*r?");
        assert!(
            any.matches("errs")
                && any.matches("err")
                && !any.matches("er")
                && !any.matches("error")
        );
        assert!(wildcard("*ö*").matches("schön"));
        assert!(
            wildcard("sch?n").matches("schön"),
            "? is one character, not one byte"
        );
        let fuzzy = Pattern::new(PatternKind::Fuzzy {
            term: "error".into(),
            distance: 1,
            prefix_length: 0,
        })
        .unwrap();
        assert!(fuzzy.matches("eror") && fuzzy.matches("erorr") && fuzzy.matches("rerror"));
        assert!(!fuzzy.matches("rerro") && !fuzzy.matches("errors!!"));
        assert!(fuzzy.matches("erorr"), "a transposition is one edit");
        // A prefix length keeps the first characters as written: the edits are after them.
        let kept = |prefix_length| {
            Pattern::new(PatternKind::Fuzzy {
                term: "xylophoen".into(),
                distance: 1,
                prefix_length,
            })
            .unwrap()
        };
        for (term, matches) in [
            ("xylophone", [true, true, true]),
            ("zylophoen", [true, false, false]),
            ("xlyophoen", [true, true, false]),
        ] {
            for (prefix_length, expected) in matches.into_iter().enumerate() {
                assert_eq!(
                    kept(prefix_length).matches(term),
                    expected,
                    "{term} {prefix_length}"
                );
            }
        }
        assert_ne!(
            kept(0).to_string(),
            kept(1).to_string(),
            "the expansion cache's key"
        );
    }

    #[test]
    fn bad_patterns_are_errors() {
        let error = Pattern::new(PatternKind::Regex("a(b".into()))
            .err()
            .unwrap();
        assert!(
            error.0.starts_with("invalid regular expression"),
            "{}",
            error.0
        );
        assert!(Pattern::new(PatternKind::Fuzzy {
            term: "a".into(),
            distance: 3,
            prefix_length: 0,
        })
        .is_err());
    }

    /// A block whose field `msg` holds `words`, one per event.
    fn block(words: &[&str]) -> BlockReader {
        let mut segment =
            quarry_index::SegmentBuilder::new(Arc::new(quarry_index::Analyzer::default()));
        for (i, word) in words.iter().enumerate() {
            let value = quarry_format::Value::Str((*word).to_owned());
            segment.add_event(i as i64, [("msg", &value)]);
        }
        let path = std::path::Path::new("/same/00000001.qblk");
        let (_, bytes) = segment.encode_block(path).unwrap();
        BlockReader::from_bytes(path, Arc::new(bytes)).unwrap()
    }

    /// The docs of `block` whose `msg` terms of kind `terms` `pattern` matches.
    fn count(block: &BlockReader, pattern: &Pattern, terms: TermKind) -> usize {
        let Some(mut scorer) = pattern
            .scorer(block, "msg", terms, &crate::filter::Optimizations::ALL)
            .unwrap()
        else {
            return 0;
        };
        let mut n = 0;
        while scorer.doc() != quarry_format::TERMINATED {
            n += 1;
            scorer.advance();
        }
        n
    }

    /// The expansion cache keys blocks by reader, not by path: a block written again at the
    /// same path (a merge's output, a sealed memory block) never answers from the old terms.
    #[test]
    fn expansions_are_cached_per_reader() {
        let pattern = wildcard("*lph*");
        let first = block(&["alpha", "beta", "alphabet"]);
        assert_eq!(count(&first, &pattern, TermKind::Token), 2);
        assert_eq!(
            count(&first, &pattern, TermKind::Token),
            2,
            "from the cache"
        );
        let second = block(&["delphi", "zeta", "zeta", "zeta"]);
        assert_eq!(count(&second, &pattern, TermKind::Token), 1);
    }

    /// Whole values (exact terms) are matched by the pattern as written, case-sensitively
    /// unless asked otherwise; tokens by its lowercased form. `web-0*` matches no token
    /// (`web-01` is the tokens `web` and `01`) and one whole value.
    #[test]
    fn whole_values_are_matched_as_written() {
        use PatternKind::*;
        let block = block(&["web-01", "Web-07", "web-12", "db-1", "web-01"]);
        let cases: &[(PatternKind, bool, usize, usize)] = &[
            // (pattern as written, case_insensitive, docs by tokens, docs by whole values)
            (Prefix("web-0".into()), false, 0, 2),
            (Prefix("Web".into()), false, 4, 1),
            (Prefix("WEB-0".into()), true, 0, 3),
            (PatternKind::wildcard_as_written(chars("*-1?")), false, 0, 1),
            (
                PatternKind::wildcard_as_written(chars("W*-0?")),
                false,
                0,
                1,
            ),
            (PatternKind::wildcard_as_written(chars("w?B-*")), true, 0, 4),
            (PatternKind::wildcard_as_written(chars("0?")), false, 3, 0),
            (Regex("web-0[1-7]".into()), false, 0, 2),
            (Regex("web-0[1-7]".into()), true, 0, 3),
            (Regex("WEB".into()), true, 4, 0),
            (
                Fuzzy {
                    term: "DB-2".into(),
                    distance: 1,
                    prefix_length: 0,
                },
                false,
                0,
                0,
            ),
            (
                Fuzzy {
                    term: "db-2".into(),
                    distance: 1,
                    prefix_length: 0,
                },
                false,
                0,
                1,
            ),
        ];
        for (kind, case_insensitive, tokens, values) in cases {
            let pattern = Arc::new(Pattern::as_written(kind.clone(), *case_insensitive).unwrap());
            let got = (
                count(&block, &pattern.for_terms(TermKind::Token), TermKind::Token),
                count(&block, &pattern.for_terms(TermKind::Exact), TermKind::Exact),
            );
            assert_eq!(
                got,
                (*tokens, *values),
                "{kind:?} case_insensitive {case_insensitive}"
            );
        }
        // One pattern over both kinds: the cache keeps their expansions apart.
        let web = Pattern::new(Prefix("web".into())).unwrap();
        for _ in 0..2 {
            assert_eq!(count(&block, &web, TermKind::Token), 4);
            assert_eq!(count(&block, &web, TermKind::Exact), 3);
        }
        assert!(Pattern::as_written(
            Fuzzy {
                term: "a".into(),
                distance: 1,
                prefix_length: 0,
            },
            true
        )
        .is_err());
    }

    fn chars(text: &str) -> Vec<(char, bool)> {
        text.chars().map(|c| (c, c == '*' || c == '?')).collect()
    }
}
