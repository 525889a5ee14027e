//! Property test: random events, random queries, compared against a brute-force model that
//! tokenizes every event and scores BM25 from scratch (counts, hit sets, top-k order).

use proptest::prelude::*;
use quarry_format::fieldnorm::{id_to_length, length_to_id};
use quarry_format::{BlockReader, Value};
use quarry_index::{Analyzer, SegmentBuilder};
use quarry_query::query::Query;
use quarry_query::{HitsRequest, Searcher, SortOrder};
use std::collections::HashMap;

const WORDS: &[&str] = &[
    "alpha", "beta", "gamma", "delta", "eps", "zeta", "eta", "theta",
];

#[derive(Debug, Clone)]
struct TestEvent {
    time: i64,
    fields: Vec<(String, Value)>,
}

fn event_strategy() -> impl Strategy<Value = TestEvent> {
    let text = prop::collection::vec(prop::sample::select(WORDS), 0..12).prop_map(|w| w.join(" "));
    (
        0i64..50,
        prop::option::of(text.clone()),
        prop::option::of(text),
        prop::option::of(0i64..4),
        prop::option::of(prop::sample::select(&["web-1", "web-2", "db"][..])),
    )
        .prop_map(|(time, a, b, n, host)| {
            let mut fields = Vec::new();
            if let Some(a) = a {
                fields.push(("a".to_owned(), Value::Str(a)));
            }
            if let Some(b) = b {
                fields.push(("b".to_owned(), Value::Str(b)));
            }
            if let Some(n) = n {
                fields.push(("n".to_owned(), Value::I64(n)));
            }
            if let Some(host) = host {
                fields.push(("host".to_owned(), Value::Str(host.to_owned())));
            }
            TestEvent { time, fields }
        })
}

fn query_strategy() -> impl Strategy<Value = String> {
    let word = prop::sample::select(WORDS).prop_map(str::to_owned);
    let leaf = prop_oneof![
        4 => word.clone(),
        2 => (prop::sample::select(&["a", "b"][..]), word.clone()).prop_map(|(f, w)| format!("{f}:{w}")),
        2 => (word.clone(), word.clone()).prop_map(|(x, y)| format!("\"{x} {y}\"")),
        2 => (word.clone(), word.clone(), prop::option::of(word.clone()), 1..5u32).prop_map(|(x, y, z, slop)| {
            let z = z.map(|z| format!(" {z}")).unwrap_or_default();
            format!("\"{x} {y}{z}\"~{slop}")
        }),
        1 => (0..4i64).prop_map(|n| format!("n:{n}")),
        1 => prop::sample::select(&["web-1", "db", "web-2"][..]).prop_map(|h| format!("host:=\"{h}\"")),
        1 => prop::sample::select(&["host:web", "host:\"web 1\""][..]).prop_map(str::to_owned),
        1 => (word.clone(), prop::sample::select(&["2", "0.5", "3.25"][..])).prop_map(|(w, b)| format!("{w}^{b}")),
    ];
    leaf.prop_recursive(3, 12, 4, |inner| {
        prop::collection::vec((prop::sample::select(&["", "+", "-"][..]), inner), 1..4).prop_map(
            |clauses| {
                let parts: Vec<String> = clauses
                    .into_iter()
                    .map(|(op, q)| {
                        // Sometimes a boosted group.
                        if q.len() % 5 == 0 {
                            format!("{op}({q})^2")
                        } else {
                            format!("{op}({q})")
                        }
                    })
                    .collect();
                parts.join(" ")
            },
        )
    })
}

/// The brute-force model of one indexed corpus.
struct Model {
    analyzer: Analyzer,
    /// Per event (in global doc order): field -> tokens with positions.
    tokens: Vec<HashMap<String, Vec<(u32, String)>>>,
    strings: Vec<HashMap<String, String>>,
    field_stats: HashMap<String, (u64, u64)>,
}

impl Model {
    fn new(events: &[TestEvent]) -> Model {
        let analyzer = Analyzer::default();
        let mut tokens = Vec::new();
        let mut strings = Vec::new();
        let mut field_stats: HashMap<String, (u64, u64)> = HashMap::new();
        for event in events {
            let mut per_field = HashMap::new();
            let mut per_string = HashMap::new();
            for (name, value) in &event.fields {
                let text = match value {
                    Value::Str(s) => {
                        per_string.insert(name.clone(), s.clone());
                        s.clone()
                    }
                    Value::I64(n) => n.to_string(),
                    _ => unreachable!(),
                };
                let toks = analyzer.tokens(&text);
                if !toks.is_empty() {
                    let stats = field_stats.entry(name.clone()).or_default();
                    stats.0 += 1;
                    stats.1 += toks.len() as u64;
                }
                per_field.insert(name.clone(), toks);
            }
            tokens.push(per_field);
            strings.push(per_string);
        }
        Model {
            analyzer,
            tokens,
            strings,
            field_stats,
        }
    }

    fn doc_freq(&self, field: &str, term: &str) -> u64 {
        self.tokens
            .iter()
            .filter(|doc| {
                doc.get(field)
                    .is_some_and(|t| t.iter().any(|(_, tok)| tok == term))
            })
            .count() as u64
    }

    fn bm25(&self, field: &str, idf: f64, tf: u32, doc: usize) -> f64 {
        self.bm25_freq(field, idf, f64::from(tf), doc)
    }

    fn bm25_freq(&self, field: &str, idf: f64, tf: f64, doc: usize) -> f64 {
        let (docs, total) = self.field_stats.get(field).copied().unwrap_or((0, 0));
        let avgdl = if docs == 0 {
            1.0
        } else {
            total as f64 / docs as f64
        };
        let len = self.tokens[doc].get(field).map_or(0, |t| t.len()) as u32;
        let dl = id_to_length(length_to_id(len)) as f64;
        let norm = 1.2 * (1.0 - 0.75 + 0.75 * dl / avgdl);
        idf * tf / (tf + norm)
    }

    fn idf(&self, field: &str, term: &str) -> f64 {
        self.idf_of(field, self.doc_freq(field, term))
    }

    /// BM25's idf of `df` docs of those with `field` (its text statistics' count).
    fn idf_of(&self, field: &str, df: u64) -> f64 {
        let n = self.field_stats.get(field).map_or(0, |s| s.0) as f64;
        let df = df as f64;
        (1.0 + (n.max(df) - df + 0.5) / (df + 0.5)).ln()
    }

    /// Score if `doc` matches `query`.
    fn eval(&self, query: &Query, doc: usize) -> Option<f64> {
        match query {
            Query::Term { field, term } => {
                let tf = self.tokens[doc]
                    .get(field)?
                    .iter()
                    .filter(|(_, t)| t == term)
                    .count() as u32;
                (tf > 0).then(|| self.bm25(field, self.idf(field, term), tf, doc))
            }
            Query::Phrase { field, terms, slop } if *slop > 0 => {
                let toks = self.tokens[doc].get(field)?;
                let freq = sloppy_freq(toks, terms, *slop);
                let idf: f64 = terms.iter().map(|(_, t)| self.idf(field, t)).sum();
                (freq > 0.0).then(|| self.bm25_freq(field, idf, freq, doc))
            }
            Query::Phrase { field, terms, .. } => {
                let toks = self.tokens[doc].get(field)?;
                let at = |p: u32, term: &str| toks.iter().any(|(q, t)| *q == p && t == term);
                let (first_offset, first) = &terms[0];
                let freq = toks
                    .iter()
                    .filter(|(p, t)| {
                        t == first
                            && p >= first_offset
                            && terms.iter().all(|(o, term)| at(p - first_offset + o, term))
                    })
                    .count() as u32;
                let idf: f64 = terms.iter().map(|(_, t)| self.idf(field, t)).sum();
                (freq > 0).then(|| self.bm25(field, idf, freq, doc))
            }
            // A whole value scores its idf (one occurrence, no length norm: Elasticsearch's
            // BM25 of a keyword term), over the docs the field's text statistics count.
            Query::Exact { field, value, .. } => (self.strings[doc].get(field) == Some(value))
                .then(|| {
                    let df = self
                        .strings
                        .iter()
                        .filter(|s| s.get(field) == Some(value))
                        .count();
                    self.idf_of(field, df as u64)
                }),
            Query::Boost { inner, boost } => self.eval(inner, doc).map(|s| s * f64::from(*boost)),
            Query::Any(clauses) => {
                let scores: Vec<f64> = clauses.iter().filter_map(|c| self.eval(c, doc)).collect();
                (!scores.is_empty()).then(|| scores.iter().sum())
            }
            Query::Bool {
                must,
                should,
                must_not,
            } => {
                if must_not.iter().any(|c| self.eval(c, doc).is_some()) {
                    return None;
                }
                let mut score = 0.0;
                for clause in must {
                    score += self.eval(clause, doc)?;
                }
                let optional: Vec<f64> = should.iter().filter_map(|c| self.eval(c, doc)).collect();
                if must.is_empty() && optional.is_empty() {
                    return None;
                }
                Some(score + optional.iter().sum::<f64>())
            }
            Query::AtLeast { clauses, minimum } => {
                let scores: Vec<f64> = clauses.iter().filter_map(|c| self.eval(c, doc)).collect();
                (scores.len() >= *minimum).then(|| scores.iter().sum())
            }
            Query::Constant { inner, score } => self.eval(inner, doc).map(|_| f64::from(*score)),
            Query::All => Some(0.0),
            Query::Nothing => None,
            // Not generated by `query_strategy`; the log-query model (tests/logs.rs) covers them.
            Query::TimeRange { .. }
            | Query::Range { .. }
            | Query::IndexedRange { .. }
            | Query::Exists { .. }
            | Query::ContentId { .. }
            | Query::Pattern { .. }
            | Query::WholeValues { .. } => {
                unreachable!("filters are not generated here")
            }
            // Its own model: `intervals_match_brute_force`.
            Query::Intervals { .. } => unreachable!("intervals are not generated here"),
        }
    }
}

/// A sloppy phrase's frequency by brute force: every way to give each phrase term one of its
/// token's positions (repeats of a token at different positions), each scored by its values
/// `position - offset`; for each value `s` that is the smallest of some assignment, the least
/// spread `max - s` among those assignments adds `1 / (1 + spread)` when it is within the slop.
fn sloppy_freq(tokens: &[(u32, String)], terms: &[(u32, String)], slop: u32) -> f64 {
    let positions: Vec<Vec<u32>> = terms
        .iter()
        .map(|(_, term)| {
            tokens
                .iter()
                .filter(|(_, t)| t == term)
                .map(|(p, _)| *p)
                .collect()
        })
        .collect();
    let mut least: std::collections::BTreeMap<i64, i64> = std::collections::BTreeMap::new();
    let mut chosen = vec![0u32; terms.len()];
    fn walk(
        i: usize,
        terms: &[(u32, String)],
        positions: &[Vec<u32>],
        chosen: &mut Vec<u32>,
        least: &mut std::collections::BTreeMap<i64, i64>,
    ) {
        if i == terms.len() {
            let values: Vec<i64> = chosen
                .iter()
                .zip(terms)
                .map(|(&p, (offset, _))| i64::from(p) - i64::from(*offset))
                .collect();
            let min = *values.iter().min().unwrap();
            let spread = values.iter().max().unwrap() - min;
            let entry = least.entry(min).or_insert(spread);
            *entry = (*entry).min(spread);
            return;
        }
        for &p in &positions[i] {
            let taken = (0..i).any(|j| terms[j].1 == terms[i].1 && chosen[j] == p);
            if !taken {
                chosen[i] = p;
                walk(i + 1, terms, positions, chosen, least);
            }
        }
    }
    walk(0, terms, &positions, &mut chosen, &mut least);
    least
        .values()
        .filter(|&&spread| spread <= i64::from(slop))
        .map(|&spread| 1.0 / (1.0 + spread as f64))
        .sum()
}

fn build_searcher(
    events: &[TestEvent],
    splits: &[usize],
    dir: &std::path::Path,
) -> (Searcher, Vec<TestEvent>) {
    let analyzer = std::sync::Arc::new(Analyzer::default());
    let mut blocks = Vec::new();
    let mut readers = Vec::new();
    let mut ordered = Vec::new();
    let mut start = 0;
    let mut cuts: Vec<usize> = splits.iter().map(|&s| s % (events.len() + 1)).collect();
    cuts.push(events.len());
    cuts.sort_unstable();
    for (i, &end) in cuts.iter().enumerate() {
        if end <= start {
            continue;
        }
        let mut segment = SegmentBuilder::new(analyzer.clone());
        for event in &events[start..end] {
            segment.add_event(
                event.time,
                event.fields.iter().map(|(k, v)| (k.as_str(), v)),
            );
        }
        let path = dir.join(format!("{i}.qblk"));
        // Odd blocks are encoded in memory and read from those bytes, as a server's memory
        // blocks are: answers must not depend on where a block is.
        let reader = if i % 2 == 1 {
            let (_, bytes) = segment.encode_block(&path).unwrap();
            BlockReader::from_bytes(&path, std::sync::Arc::new(bytes)).unwrap()
        } else {
            segment.write_block(&path).unwrap();
            BlockReader::open(&path).unwrap()
        };
        readers.push(reader);
        blocks.push((path, events[start..end].to_vec()));
        start = end;
    }
    let searcher = Searcher::new(readers, (*analyzer).clone());
    // The model's doc order is the searcher's: blocks by (time_min, path), docs by stable time.
    for block in searcher.blocks() {
        let (_, block_events) = blocks.iter().find(|(p, _)| p == block.path()).unwrap();
        let mut sorted = block_events.clone();
        sorted.sort_by_key(|e| e.time);
        ordered.extend(sorted);
    }
    (searcher, ordered)
}

/// Checks one query against the model: the count, every hit (set and scores, with its count)
/// and the top k for each of `ks`. Returns the model's matches, best first.
fn check_ranked(
    searcher: &Searcher,
    model: &Model,
    docs: usize,
    text: &str,
    ks: &[usize],
) -> Result<Vec<(f64, usize)>, TestCaseError> {
    let query = searcher.parse(text).unwrap();
    let expected: Vec<(f64, usize)> = (0..docs)
        .filter_map(|d| model.eval(&query, d).map(|s| (s, d)))
        .collect();
    check_expected(searcher, &query, docs, text, expected, ks)
}

/// Checks `query` (described by `text`) against the model's matches `expected` (score, doc),
/// as `check_ranked` does.
fn check_expected(
    searcher: &Searcher,
    query: &Query,
    docs: usize,
    text: &str,
    mut expected: Vec<(f64, usize)>,
    ks: &[usize],
) -> Result<Vec<(f64, usize)>, TestCaseError> {
    let query = query.clone();
    prop_assert_eq!(
        searcher.count(&query).unwrap(),
        expected.len() as u64,
        "count of {}",
        text
    );

    // All hits: same set, scores equal within f32 rounding.
    let hits = searcher
        .search(
            &query,
            &HitsRequest {
                limit: docs,
                count: true,
                sort: SortOrder::Relevance,
                ..Default::default()
            },
        )
        .unwrap();
    prop_assert_eq!(hits.count, Some(expected.len() as u64));
    let global = |block: u32, doc: u32| {
        searcher.blocks()[..block as usize]
            .iter()
            .map(|b| b.doc_count() as usize)
            .sum::<usize>()
            + doc as usize
    };
    let mut got: Vec<(f64, usize)> = hits
        .hits
        .iter()
        .map(|h| (h.score.unwrap() as f64, global(h.block, h.doc)))
        .collect();
    got.sort_by_key(|&(_, d)| d);
    prop_assert_eq!(got.len(), expected.len(), "hits of {}", text);
    for ((gs, gd), (es, ed)) in got.iter().zip(&expected) {
        prop_assert_eq!(gd, ed, "hit set of {}", text);
        prop_assert!(
            (gs - es).abs() <= 1e-4 * es.abs().max(1.0),
            "score of doc {} for {}: {} vs {}",
            gd,
            text,
            gs,
            es
        );
    }

    // Top-k (MaxScore path for disjunctions): the k best, where scores are not near-ties.
    expected.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    for &k in ks {
        // TOP_k_COUNT takes other paths (one pass, or the top k and a count apart): the same
        // hits as TOP_k, and the count.
        let (top, count) = searcher.top_k_count(&query, k).unwrap();
        prop_assert_eq!(
            count,
            expected.len() as u64,
            "top-{}-count count of {}",
            k,
            text
        );
        let top_alone = searcher.top_k(&query, k).unwrap();
        prop_assert_eq!(
            top.len(),
            top_alone.len(),
            "top-{}-count size of {}",
            k,
            text
        );
        for (a, b) in top.iter().zip(&top_alone) {
            prop_assert!(
                (a.score - b.score).abs() <= 1e-4 * b.score.abs().max(1.0),
                "top-{}-count of {}: score {} vs {}",
                k,
                text,
                a.score,
                b.score
            );
        }
        let top = top_alone;
        prop_assert_eq!(
            top.len(),
            expected.len().min(k),
            "top-{} size of {}",
            k,
            text
        );
        for (i, hit) in top.iter().enumerate() {
            let (es, _) = expected[i];
            prop_assert!(
                (hit.score as f64 - es).abs() <= 1e-4 * es.abs().max(1.0),
                "top-{} rank {} of {}: score {} vs {}",
                k,
                i,
                text,
                hit.score,
                es
            );
            let clear = |j: usize| {
                expected
                    .get(j)
                    .is_none_or(|&(s, _)| (s - es).abs() > 1e-4 * es.abs().max(1.0))
            };
            if (i == 0 || clear(i - 1)) && clear(i + 1) {
                prop_assert_eq!(
                    global(hit.block, hit.doc),
                    expected[i].1,
                    "top-{} rank {} of {}",
                    k,
                    i,
                    text
                );
            }
        }
    }
    Ok(expected)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn search_matches_brute_force(
        events in prop::collection::vec(event_strategy(), 1..300),
        splits in prop::collection::vec(any::<usize>(), 0..3),
        queries in prop::collection::vec(query_strategy(), 1..6),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let (searcher, ordered) = build_searcher(&events, &splits, dir.path());
        let model = Model::new(&ordered);
        let _ = &model.analyzer;
        for text in &queries {
            let query = searcher.parse(text).unwrap();
            let expected = check_ranked(&searcher, &model, ordered.len(), text, &[1, 3, 10])?;

            // Time order: head and tail.
            let mut by_time: Vec<(i64, usize)> = expected.iter().map(|&(_, d)| (ordered[d].time, d)).collect();
            by_time.sort();
            for (order, limit) in [(SortOrder::TimeAsc, 5usize), (SortOrder::TimeDesc, 5)] {
                let result = searcher.search(&query, &HitsRequest { limit, count: false, sort: order, ..Default::default() }).unwrap();
                let times: Vec<i64> = result.hits.iter().map(|h| h.time).collect();
                let mut want: Vec<i64> = by_time.iter().map(|&(t, _)| t).collect();
                if order == SortOrder::TimeDesc {
                    want.reverse();
                }
                want.truncate(limit);
                prop_assert_eq!(times, want, "{:?} of {}", order, text);
            }
        }
    }
}

#[test]
fn documents_round_trip_through_blocks() {
    let events = vec![
        TestEvent {
            time: 5,
            fields: vec![
                ("a".into(), Value::Str("alpha beta".into())),
                ("n".into(), Value::I64(3)),
            ],
        },
        TestEvent {
            time: 1,
            fields: vec![("host".into(), Value::Str("db".into()))],
        },
    ];
    let dir = tempfile::tempdir().unwrap();
    let (searcher, ordered) = build_searcher(&events, &[], dir.path());
    for (doc, event) in ordered.iter().enumerate() {
        let hit = quarry_query::Hit {
            block: 0,
            doc: doc as u32,
            score: None,
            time: event.time,
        };
        let mut fields = searcher.event(&hit).unwrap();
        fields.sort_by(|a, b| a.0.cmp(&b.0));
        let mut want = event.fields.clone();
        want.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(fields, want);
    }
}

/// Events of one text field `a` whose words have very different frequencies: `w0` is in most
/// events, `w5` in few, so that two-term conjunctions run both ways (a block-pair merge for
/// terms of similar frequency, a leapfrog for a rare term against a common one) over posting
/// lists of several 128-doc blocks.
fn skewed_event_strategy() -> impl Strategy<Value = TestEvent> {
    let word = prop_oneof![
        8 => Just("w0"), 4 => Just("w1"), 2 => Just("w2"), 1 => Just("w3"), 1 => Just("w4"),
    ];
    let text = prop::collection::vec(word, 0..8).prop_map(|w| w.join(" "));
    (0i64..1000, text, prop::bool::weighted(0.02)).prop_map(|(time, text, rare)| {
        let text = if rare { format!("{text} w5") } else { text };
        TestEvent {
            time,
            fields: vec![("a".to_owned(), Value::Str(text))],
        }
    })
}

fn conjunction_strategy() -> impl Strategy<Value = String> {
    let word = || prop::sample::select(&["w0", "w1", "w2", "w3", "w4", "w5"][..]);
    prop_oneof![
        (word(), word()).prop_map(|(x, y)| format!("+a:{x} +a:{y}")),
        (word(), word(), word()).prop_map(|(x, y, z)| format!("+a:{x} +a:{y} +a:{z}")),
        (word(), word(), word()).prop_map(|(x, y, z)| format!("+a:{x} +a:{y} -a:{z}")),
        // Counted as `x`'s docs less those shared with `y`.
        (word(), word()).prop_map(|(x, y)| format!("+a:{x} -a:{y}")),
        // Nested: the inner conjunction is sought to the outer clause's docs.
        (word(), word(), word()).prop_map(|(x, y, z)| format!("+(+a:{x} +a:{y}) +\"{z}\"")),
        (word(), word(), word()).prop_map(|(x, y, z)| format!("(+a:{x} +a:{y}) OR a:{z}")),
        // A phrase's top k passes over docs whose terms' frequencies bound it below the
        // threshold, alone and as a clause.
        (word(), word()).prop_map(|(x, y)| format!("\"{x} {y}\"")),
        (word(), word(), word()).prop_map(|(x, y, z)| format!("+\"{x} {y}\" +a:{z}")),
        (word(), word(), word()).prop_map(|(x, y, z)| format!("+\"{x} {y} {x}\" +a:{z} -a:{y}")),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn term_conjunctions_match_brute_force(
        events in prop::collection::vec(skewed_event_strategy(), 1..1500),
        splits in prop::collection::vec(any::<usize>(), 0..2),
        queries in prop::collection::vec(conjunction_strategy(), 1..6),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let (searcher, ordered) = build_searcher(&events, &splits, dir.path());
        let model = Model::new(&ordered);
        for text in &queries {
            check_ranked(&searcher, &model, ordered.len(), text, &[1, 10])?;
        }
    }
}

/// A `match_bool_prefix` request for the model: the words of its text, its options.
#[derive(Debug, Clone)]
struct BoolPrefixCase {
    /// (field, boost); several: a `multi_match` of type `bool_prefix`.
    fields: Vec<(&'static str, f32)>,
    words: Vec<String>,
    and: bool,
    minimum_should_match: Option<i64>,
    fuzziness: u8,
    prefix_length: usize,
}

impl BoolPrefixCase {
    fn dsl(&self) -> serde_json::Value {
        use serde_json::json;
        let mut options = serde_json::Map::new();
        options.insert("query".into(), json!(self.words.join(" ")));
        if self.and {
            options.insert("operator".into(), json!("and"));
        }
        if let Some(minimum) = self.minimum_should_match {
            options.insert("minimum_should_match".into(), json!(minimum));
        }
        if self.fuzziness > 0 {
            options.insert("fuzziness".into(), json!(self.fuzziness));
            options.insert("prefix_length".into(), json!(self.prefix_length));
        }
        match self.fields.as_slice() {
            [(field, boost)] if *boost == 1.0 => json!({"match_bool_prefix": {*field: options}}),
            fields => {
                let names: Vec<String> = fields
                    .iter()
                    .map(|(f, b)| {
                        if *b == 1.0 {
                            f.to_string()
                        } else {
                            format!("{f}^{b}")
                        }
                    })
                    .collect();
                options.insert("type".into(), json!("bool_prefix"));
                options.insert("fields".into(), json!(names));
                json!({"multi_match": options})
            }
        }
    }

    /// The score of `doc` by brute force: per field, each word but the last a term (BM25, or
    /// any token within the edits: 0), the last a prefix of any token (1), enough of them
    /// matching; the fields' scores times their boosts, summed.
    fn eval(&self, model: &Model, doc: usize) -> Option<f64> {
        let n = self.words.len();
        let required = match (self.and, self.minimum_should_match) {
            (true, _) => n,
            (false, Some(m)) if m < 0 => (n as i64 + m).max(1) as usize,
            (false, Some(m)) => (m as usize).max(1),
            (false, None) => 1,
        };
        let mut total = None;
        for (field, boost) in &self.fields {
            let Some(tokens) = model.tokens[doc].get(*field) else {
                continue;
            };
            let (last, rest) = self.words.split_last()?;
            let mut matched = 0;
            let mut score = 0.0;
            for word in rest {
                if self.fuzziness == 0 {
                    let tf = tokens.iter().filter(|(_, t)| t == word).count() as u32;
                    if tf > 0 {
                        matched += 1;
                        score += model.bm25(field, model.idf(field, word), tf, doc);
                    }
                } else if tokens.iter().any(|(_, t)| {
                    let keep: String = word.chars().take(self.prefix_length).collect();
                    t.starts_with(&keep)
                        && edits(&t[keep.len()..], &word[keep.len()..]) <= self.fuzziness as usize
                }) {
                    matched += 1;
                }
            }
            if tokens.iter().any(|(_, t)| t.starts_with(last.as_str())) {
                matched += 1;
                score += 1.0;
            }
            if matched >= required {
                *total.get_or_insert(0.0) += score * f64::from(*boost);
            }
        }
        total
    }
}

/// Edits between `a` and `b`: insertions, deletions, substitutions and swaps of two
/// neighbours (the optimal string alignment distance).
fn edits(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            d[i][j] = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d[i][j] = d[i][j].min(d[i - 2][j - 2] + 1);
            }
        }
    }
    d[a.len()][b.len()]
}

fn bool_prefix_strategy() -> impl Strategy<Value = BoolPrefixCase> {
    // Words of the corpus, misspelt ones, and cut ones (the last word is a prefix).
    let word = prop_oneof![
        3 => prop::sample::select(WORDS).prop_map(str::to_owned),
        1 => prop::sample::select(&["alpah", "bta", "gama", "deltaa", "zzz"][..]).prop_map(str::to_owned),
        2 => (prop::sample::select(WORDS), 1..4usize)
            .prop_map(|(w, n)| w.chars().take(n).collect::<String>()),
    ];
    let fields = prop_oneof![
        prop::sample::select(&["a", "b"][..]).prop_map(|f| vec![(f, 1.0f32)]),
        Just(vec![("a", 1.0f32), ("b", 2.5)]),
    ];
    (
        fields,
        prop::collection::vec(word, 1..5),
        any::<bool>(),
        prop::option::of(-2i64..5),
        0u8..3,
        0usize..3,
    )
        .prop_map(
            |(fields, words, and, minimum_should_match, fuzziness, prefix_length)| BoolPrefixCase {
                fields,
                words,
                and,
                minimum_should_match,
                fuzziness,
                prefix_length,
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// `match_bool_prefix` and `multi_match` of type `bool_prefix` (`Query::AtLeast`,
    /// `Query::Constant`, fuzzy terms with a prefix length) against brute force.
    #[test]
    fn bool_prefix_matches_brute_force(
        events in prop::collection::vec(event_strategy(), 1..200),
        splits in prop::collection::vec(any::<usize>(), 0..3),
        cases in prop::collection::vec(bool_prefix_strategy(), 1..6),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let (searcher, ordered) = build_searcher(&events, &splits, dir.path());
        let model = Model::new(&ordered);
        for case in &cases {
            let dsl = case.dsl();
            let ast = quarry_query::dsl::compile(&dsl, "query", 0).unwrap();
            let query = searcher.plan(&ast).unwrap();
            let expected: Vec<(f64, usize)> = (0..ordered.len())
                .filter_map(|d| case.eval(&model, d).map(|s| (s, d)))
                .collect();
            check_expected(&searcher, &query, ordered.len(), &dsl.to_string(), expected, &[1, 3, 10])?;
        }
    }
}

/// An `intervals` rule for the model (field `a`): `mode` 0 ordered, 1 unordered, 2
/// unordered_no_overlap.
#[derive(Debug, Clone)]
enum IntervalsCase {
    Match {
        words: Vec<&'static str>,
        mode: u8,
        max_gaps: Option<u32>,
    },
    AllOf {
        rules: Vec<IntervalsCase>,
        mode: u8,
        max_gaps: Option<u32>,
    },
    AnyOf(Vec<IntervalsCase>),
    Prefix(&'static str),
    Filter {
        rule: Box<IntervalsCase>,
        relation: &'static str,
        filter: Box<IntervalsCase>,
    },
}

const MODES: [&str; 3] = ["ordered", "unordered", "unordered_no_overlap"];

const RELATIONS: [&str; 8] = [
    "containing",
    "contained_by",
    "not_containing",
    "not_contained_by",
    "overlapping",
    "not_overlapping",
    "before",
    "after",
];

type Span = (u32, u32);

impl IntervalsCase {
    fn dsl(&self) -> serde_json::Value {
        use serde_json::json;
        let combined = |mode: u8, max_gaps: Option<u32>, mut body: serde_json::Value| {
            body["mode"] = json!(MODES[mode as usize]);
            body["max_gaps"] = json!(max_gaps.map_or(-1, i64::from));
            body
        };
        match self {
            IntervalsCase::Match {
                words,
                mode,
                max_gaps,
            } => json!({"match": combined(*mode, *max_gaps, json!({"query": words.join(" ")}))}),
            IntervalsCase::AllOf {
                rules,
                mode,
                max_gaps,
            } => {
                let rules: Vec<_> = rules.iter().map(IntervalsCase::dsl).collect();
                json!({"all_of": combined(*mode, *max_gaps, json!({"intervals": rules}))})
            }
            IntervalsCase::AnyOf(rules) => {
                let rules: Vec<_> = rules.iter().map(IntervalsCase::dsl).collect();
                json!({"any_of": {"intervals": rules}})
            }
            IntervalsCase::Prefix(prefix) => json!({"prefix": {"prefix": prefix}}),
            IntervalsCase::Filter {
                rule,
                relation,
                filter,
            } => {
                let filter = json!({*relation: filter.dsl()});
                // Only match, all_of and any_of take a filter: others go in a one-rule all_of.
                let mut rule = match rule.as_ref() {
                    IntervalsCase::Prefix(_) | IntervalsCase::Filter { .. } => {
                        json!({"all_of": {"intervals": [rule.dsl()]}})
                    }
                    _ => rule.dsl(),
                };
                let body = rule
                    .as_object_mut()
                    .and_then(|o| o.values_mut().next())
                    .unwrap();
                body["filter"] = filter;
                rule
            }
        }
    }

    /// The rule's minimal intervals in `tokens`, by brute force: every combination of one
    /// interval per sub-rule, then every span that holds another dropped.
    fn spans(&self, tokens: &[(u32, String)]) -> Vec<Span> {
        let term = |word: &str| -> Vec<Span> {
            tokens
                .iter()
                .filter(|(_, t)| t == word)
                .map(|&(p, _)| (p, p))
                .collect()
        };
        match self {
            IntervalsCase::Match {
                words,
                mode,
                max_gaps,
            } => {
                let sources: Vec<Vec<Span>> = words.iter().map(|w| term(w)).collect();
                if sources.len() == 1 {
                    return brute_minimal(sources.into_iter().next().unwrap());
                }
                brute_combine(*mode, *max_gaps, &sources)
            }
            IntervalsCase::AllOf {
                rules,
                mode,
                max_gaps,
            } => {
                let sources: Vec<Vec<Span>> = rules.iter().map(|r| r.spans(tokens)).collect();
                brute_combine(*mode, *max_gaps, &sources)
            }
            IntervalsCase::AnyOf(rules) => {
                brute_minimal(rules.iter().flat_map(|r| r.spans(tokens)).collect())
            }
            IntervalsCase::Prefix(prefix) => brute_minimal(
                tokens
                    .iter()
                    .filter(|(_, t)| t.starts_with(prefix))
                    .map(|&(p, _)| (p, p))
                    .collect(),
            ),
            IntervalsCase::Filter {
                rule,
                relation,
                filter,
            } => {
                let filter = filter.spans(tokens);
                let related = |&(s, e): &Span| {
                    filter.iter().any(|&(fs, fe)| match *relation {
                        "containing" | "not_containing" => s <= fs && fe <= e,
                        "contained_by" | "not_contained_by" => fs <= s && e <= fe,
                        "overlapping" | "not_overlapping" => fs <= e && s <= fe,
                        "before" => e < fs,
                        _ => fe < s,
                    })
                };
                let negated = relation.starts_with("not_");
                rule.spans(tokens)
                    .into_iter()
                    .filter(|span| related(span) != negated)
                    .collect()
            }
        }
    }
}

fn brute_minimal(mut spans: Vec<Span>) -> Vec<Span> {
    spans.sort_unstable();
    spans.dedup();
    let holds_another = |&(s, e): &Span, all: &[Span]| {
        all.iter()
            .any(|&(os, oe)| (os, oe) != (s, e) && s <= os && oe <= e)
    };
    spans
        .iter()
        .filter(|span| !holds_another(span, &spans))
        .copied()
        .collect()
}

/// Every choice of one interval per source.
fn choices(sources: &[Vec<Span>]) -> Vec<Vec<Span>> {
    let mut all = vec![Vec::new()];
    for source in sources {
        all = all
            .into_iter()
            .flat_map(|chosen: Vec<Span>| {
                source.iter().map(move |&span| {
                    let mut next = chosen.clone();
                    next.push(span);
                    next
                })
            })
            .collect();
    }
    all
}

fn brute_combine(mode: u8, max_gaps: Option<u32>, sources: &[Vec<Span>]) -> Vec<Span> {
    let hull = |chosen: &[Span]| {
        (
            chosen.iter().map(|s| s.0).min().unwrap(),
            chosen.iter().map(|s| s.1).max().unwrap(),
        )
    };
    let spans = match mode {
        0 => choices(sources)
            .iter()
            .filter(|c| c.windows(2).all(|w| w[0].1 < w[1].0))
            .map(|c| hull(c))
            .collect(),
        1 => choices(sources).iter().map(|c| hull(c)).collect(),
        _ => {
            let mut joined = sources[0].clone();
            for source in &sources[1..] {
                let pairs = choices(&[joined.clone(), source.clone()]);
                joined = brute_minimal(
                    pairs
                        .iter()
                        .filter(|c| c[0].1 < c[1].0 || c[1].1 < c[0].0)
                        .map(|c| hull(c))
                        .collect(),
                );
            }
            joined
        }
    };
    let mut spans = brute_minimal(spans);
    if let Some(max_gaps) = max_gaps {
        spans.retain(|&(s, e)| {
            let uncovered = (s..=e)
                .filter(|&p| {
                    !sources
                        .iter()
                        .flatten()
                        .any(|&(is, ie)| s <= is && ie <= e && is <= p && p <= ie)
                })
                .count();
            uncovered <= max_gaps as usize
        });
    }
    spans
}

fn intervals_strategy() -> impl Strategy<Value = IntervalsCase> {
    // Few words, so that rules meet in the short random texts.
    let word = prop::sample::select(&WORDS[..4]);
    let max_gaps = prop::option::of(0u32..3);
    let leaf = prop_oneof![
        3 => (prop::collection::vec(word, 1..4), 0u8..3, max_gaps.clone())
            .prop_map(|(words, mode, max_gaps)| IntervalsCase::Match { words, mode, max_gaps }),
        1 => prop::sample::select(&["al", "b", "g", "d", "x"][..]).prop_map(IntervalsCase::Prefix),
    ];
    leaf.prop_recursive(2, 8, 3, move |inner| {
        prop_oneof![
            (
                prop::collection::vec(inner.clone(), 1..4),
                0u8..3,
                prop::option::of(0u32..3)
            )
                .prop_map(|(rules, mode, max_gaps)| IntervalsCase::AllOf {
                    rules,
                    mode,
                    max_gaps
                }),
            prop::collection::vec(inner.clone(), 1..3).prop_map(IntervalsCase::AnyOf),
            (inner.clone(), prop::sample::select(&RELATIONS[..]), inner).prop_map(
                |(rule, relation, filter)| IntervalsCase::Filter {
                    rule: Box::new(rule),
                    relation,
                    filter: Box::new(filter),
                }
            ),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// `intervals` (intervals.rs: the minimal-interval operators over postings positions)
    /// against a brute-force enumeration of every combination of intervals.
    #[test]
    fn intervals_match_brute_force(
        events in prop::collection::vec(event_strategy(), 1..120),
        splits in prop::collection::vec(any::<usize>(), 0..3),
        cases in prop::collection::vec(intervals_strategy(), 1..6),
        boost in prop::sample::select(&[1.0f64, 2.5][..]),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let (searcher, ordered) = build_searcher(&events, &splits, dir.path());
        let model = Model::new(&ordered);
        for case in &cases {
            let mut field = serde_json::Map::new();
            field.insert("boost".into(), serde_json::json!(boost));
            if let serde_json::Value::Object(rule) = case.dsl() {
                field.extend(rule);
            }
            let dsl = serde_json::json!({"intervals": {"a": field}});
            let ast = quarry_query::dsl::compile(&dsl, "query", 0).unwrap();
            let query = searcher.plan(&ast).unwrap();
            let expected: Vec<(f64, usize)> = (0..ordered.len())
                .filter_map(|d| {
                    let spans = case.spans(model.tokens[d].get("a")?);
                    let freq: f64 = spans.iter().map(|&(s, e)| 1.0 / (1.0 + f64::from(e - s))).sum();
                    (!spans.is_empty()).then(|| (boost * freq / (freq + 1.0), d))
                })
                .collect();
            check_expected(&searcher, &query, ordered.len(), &dsl.to_string(), expected, &[1, 3, 10])?;
        }
    }
}

/// A `bool` query for the model: `should` terms on field `a`, maybe a `filter` term, and a
/// `minimum_should_match` (a count, negative counts, or a percentage).
#[derive(Debug, Clone)]
struct BoolCase {
    should: Vec<&'static str>,
    filter: Option<&'static str>,
    minimum: Option<serde_json::Value>,
}

impl BoolCase {
    fn dsl(&self) -> serde_json::Value {
        use serde_json::json;
        let should: Vec<_> = self
            .should
            .iter()
            .map(|w| json!({"term": {"a": w}}))
            .collect();
        let mut body = json!({ "should": should });
        if let Some(word) = self.filter {
            body["filter"] = json!({"term": {"a": word}});
        }
        if let Some(minimum) = &self.minimum {
            body["minimum_should_match"] = minimum.clone();
        }
        json!({ "bool": body })
    }

    /// How many `should` clauses must match, as Elasticsearch computes it (truncated toward
    /// zero; with no filter and no minimum, one).
    fn required(&self) -> usize {
        let n = self.should.len() as i64;
        let required = match &self.minimum {
            None => i64::from(self.filter.is_none()),
            Some(serde_json::Value::Number(count)) => {
                let count = count.as_i64().unwrap();
                if count < 0 {
                    n + count
                } else {
                    count
                }
            }
            Some(serde_json::Value::String(percent)) => {
                let percent: i64 = percent.trim_end_matches('%').parse().unwrap();
                if percent < 0 {
                    n + n * percent / 100
                } else {
                    n * percent / 100
                }
            }
            Some(other) => panic!("{other}"),
        };
        let required = required.max(0) as usize;
        // Without a filter, at least one should clause matches anyway.
        if self.filter.is_none() {
            required.max(1)
        } else {
            required
        }
    }

    /// The score of `doc`: the matching `should` terms' BM25 scores (a filter scores 0),
    /// when enough of them match and the filter does.
    fn eval(&self, model: &Model, doc: usize) -> Option<f64> {
        let tokens = model.tokens[doc].get("a");
        let tf =
            |word: &str| tokens.map_or(0, |t| t.iter().filter(|(_, t)| t == word).count()) as u32;
        if self.filter.is_some_and(|w| tf(w) == 0) {
            return None;
        }
        let mut matched = 0;
        let mut score = 0.0;
        for word in &self.should {
            let n = tf(word);
            if n > 0 {
                matched += 1;
                score += model.bm25("a", model.idf("a", word), n, doc);
            }
        }
        (matched >= self.required()).then_some(score)
    }
}

fn bool_strategy() -> impl Strategy<Value = BoolCase> {
    let word = prop::sample::select(&["w0", "w1", "w2", "w3", "w4"][..]);
    let minimum = prop_oneof![
        Just(None),
        (-3i64..5).prop_map(|n| Some(serde_json::json!(n))),
        prop::sample::select(&["50%", "75%", "-25%", "100%"][..])
            .prop_map(|p| Some(serde_json::json!(p))),
    ];
    (
        prop::collection::btree_set(word.clone(), 1..5),
        prop::option::of(word),
        minimum,
    )
        .prop_map(|(should, filter, minimum)| BoolCase {
            should: should.into_iter().collect(),
            filter,
            minimum,
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// `bool` with `minimum_should_match` of any count or percentage (`Ast::AtLeast`)
    /// against brute force, with and without a filter.
    #[test]
    fn bool_minimum_should_match_matches_brute_force(
        events in prop::collection::vec(event_strategy(), 1..200),
        splits in prop::collection::vec(any::<usize>(), 0..3),
        cases in prop::collection::vec(bool_strategy(), 1..6),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let (searcher, ordered) = build_searcher(&events, &splits, dir.path());
        let model = Model::new(&ordered);
        for case in &cases {
            let dsl = case.dsl();
            let ast = quarry_query::dsl::compile(&dsl, "query", 0).unwrap();
            let query = searcher.plan(&ast).unwrap();
            let expected: Vec<(f64, usize)> = (0..ordered.len())
                .filter_map(|d| case.eval(&model, d).map(|s| (s, d)))
                .collect();
            check_expected(&searcher, &query, ordered.len(), &dsl.to_string(), expected, &[1, 3, 10])?;
        }
    }
}
