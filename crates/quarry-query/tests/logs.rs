//! Property tests of the log queries against a brute-force model: random events (many ties in
//! `_time`, numbers of several types, missing fields, NaN and -0.0) split into blocks with
//! overlapping or disjoint time ranges, random queries (words, ranges of every form,
//! `_exists_`, `_time` ranges, AND/OR/NOT), and every answer (count, tail and head, cursor
//! paging, histograms, aggregations) compared with a scan over the events in memory, under
//! every `Optimizations` setting.
//!
//! The model's time order is the searcher's contract (timeline.rs): (`_time`, block id, doc),
//! where the block id is the number in the block file's name and docs of a block are its
//! events stably sorted by time.

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use quarry_format::{BlockReader, Value};
use quarry_index::event::format_time;
use quarry_index::{Analyzer, SegmentBuilder};
use quarry_query::agg_tree::{
    AggNode, AggResult, BucketKey, BucketResult, FilterQuery, Metric, MetricResult, NodeKind,
    TermKey, TimeBuckets,
};
use quarry_query::aggregation::{AggKind, AggSpec, PERCENTILE_RELATIVE_ERROR};
use quarry_query::cursor::Cursor;
use quarry_query::filter::Optimizations;
use quarry_query::query::Query;
use quarry_query::{Hit, HitsRequest, Searcher, SortOrder};
use serde_json::{json, Value as Json};
use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::ops::Bound;
use std::sync::Arc;

const WORDS: &[&str] = &["alpha", "beta", "gamma", "delta", "error", "timeout"];
const LEVELS: &[&str] = &["info", "warn", "error"];
/// Messages longer than `EXACT_TERM_LEN` (no exact term: `msg:="..."` finds them through their
/// tokens and checks the column), then queries that share all their tokens but are not equal
/// (case, order, spacing), which that check must reject.
const LONG_MESSAGES: &[&str] = &[
    "disk full on volume data while writing alpha segment",
    "connection reset by peer after a timeout of 30 seconds",
    "delta",
];
/// Prefix, wildcard, regex and fuzzy terms over WORDS, LEVELS and the long messages' words.
const PATTERNS: &[&str] = &[
    "al*",
    "t*",
    "DEL*",
    "*a",
    "*e*",
    "?eta",
    "gam?a",
    "er*or",
    "**",
    "x*",
    "*ou*",
    "/(al|be)[a-z]+/",
    "/.*ou.*/",
    "/e.*/",
    "/[0-9]+/",
    "/warn|info/",
    "/zzz/",
    "alpah~1",
    "beta~0",
    "gama~1",
    "timeuot~2",
    "errr~1",
    "eror~",
    "wran~1",
    "sgment~1",
];
/// The model of a pattern over one token: wildcards by recursion, fuzzy by the optimal string
/// alignment distance (a transposition is one edit), regexes by the `regex` crate.
fn pattern_matches(pattern: &str, token: &str) -> bool {
    if let Some(regex) = pattern.strip_prefix('/').and_then(|p| p.strip_suffix('/')) {
        return regex::Regex::new(&format!("^(?:{regex})$"))
            .unwrap()
            .is_match(token);
    }
    if let Some((term, distance)) = pattern.split_once('~') {
        let distance: usize = if distance.is_empty() {
            2
        } else {
            distance.parse().unwrap()
        };
        return osa_distance(&term.to_lowercase(), token) <= distance;
    }
    fn glob(p: &[char], t: &[char]) -> bool {
        match p.split_first() {
            None => t.is_empty(),
            Some(('*', rest)) => (0..=t.len()).any(|i| glob(rest, &t[i..])),
            Some(('?', rest)) => !t.is_empty() && glob(rest, &t[1..]),
            Some((c, rest)) => t.first() == Some(c) && glob(rest, &t[1..]),
        }
    }
    let p: Vec<char> = pattern.to_lowercase().chars().collect();
    let t: Vec<char> = token.chars().collect();
    glob(&p, &t)
}

fn osa_distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
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

const LONG_DECOYS: &[&str] = &[
    "Disk full on volume data while writing alpha segment",
    "writing alpha segment while disk full on volume data",
    "disk full on volume data while writing alpha segment ",
    "connection reset by peer after a timeout of 30 seconds!",
    "connection reset by peer after a timeout of 30 seconds",
    "disk full on volume data while writing alpha segment",
];
/// Latencies far from the usual ones, only in some corpora (they void DDSketch's guarantee
/// for low quantiles, see `check_percentiles`).
const EXTREME_I64: &[i64] = &[
    i64::MIN,
    i64::MIN + 1,
    i64::MAX,
    i64::MAX - 1,
    1 << 53,
    (1 << 53) + 1,
    -(1 << 53) - 1,
];
/// Dyadic values, so float sums are exact in any order; NaN, infinities and both zeros.
const RATIOS: &[f64] = &[
    0.0,
    -0.0,
    0.5,
    -0.5,
    1.0,
    2.25,
    -1.5,
    7.0,
    f64::NAN,
    f64::INFINITY,
    f64::NEG_INFINITY,
];
/// The ratios of dense corpora: no infinities, so chunk min/max are finite and many ranges
/// hold both, NaN hidden between them.
const DENSE_RATIOS: &[f64] = &[0.0, -0.0, 0.5, 1.0, 2.25, -1.5, f64::NAN];
const BYTES: &[u64] = &[
    0,
    1,
    7,
    1000,
    i64::MAX as u64,
    1 << 63,
    (1 << 63) + 1,
    u64::MAX,
];
/// Range bounds far from the data: the ends of i64, just past them, big floats.
const EXTREME_BOUNDS: &[&str] = &[
    "9223372036854775807",
    "-9223372036854775808",
    "9223372036854775806",
    "9223372036854775808",
    "-9223372036854775809",
    "9007199254740993",
    "18446744073709551615",
    "1e19",
    "-1e19",
    "1e300",
    "-1e300",
];
const SMALL_FLOAT_BOUNDS: &[&str] = &["-0.0", "0.0", "-0", "0.25", "-0.75", "1e2", "2.5e1"];

const SPECS: &[&str] = &[
    "count",
    "terms(level, 2)",
    "min(latency)",
    "max(latency)",
    "sum(latency)",
    "avg(latency)",
    "stats(latency)",
    "percentiles(latency)",
    "percentiles(latency, 0, 10, 50, 90, 99.9, 100)",
    "cardinality(ip)",
    "cardinality(level)",
    "stats(ratio)",
    "max(bytes)",
    "min(msg)",
];
/// The specs checked per histogram bucket (fewer, to keep the run short).
const BUCKET_SPECS: &[&str] = &[
    "count",
    "terms(level, 2)",
    "stats(latency)",
    "cardinality(ip)",
];

// ---------------------------------------------------------------------------------------------
// Events and blocks

#[derive(Debug, Clone)]
struct TestEvent {
    time: i64,
    fields: Vec<(&'static str, Value)>,
}

/// One event as the model sees it, with its place in time order.
#[derive(Debug)]
struct ModelEvent {
    time: i64,
    block_id: u64,
    doc: u32,
    fields: Vec<(&'static str, Value)>,
    /// The analyzed tokens of each field (numbers are indexed as their text too).
    tokens: HashMap<&'static str, HashSet<String>>,
}

type Key = (i64, u64, u32);

impl ModelEvent {
    fn key(&self) -> Key {
        (self.time, self.block_id, self.doc)
    }

    fn value(&self, field: &str) -> Option<&Value> {
        self.fields
            .iter()
            .find(|(f, _)| *f == field)
            .map(|(_, v)| v)
    }
}

struct Corpus {
    _dir: tempfile::TempDir,
    searcher: Searcher,
    /// Every event, in time order (ascending `key`).
    events: Vec<ModelEvent>,
    /// The id of the block at each position of `searcher.blocks()`, from its file name.
    block_ids: Vec<u64>,
}

/// The text `SegmentBuilder::add_event` indexes for a value.
fn indexed_text(value: &Value) -> String {
    match value {
        Value::Str(s) | Value::Json(s) => s.clone(),
        Value::I64(v) => v.to_string(),
        Value::U64(v) => v.to_string(),
        Value::F64(v) => v.to_string(),
        Value::Bool(v) => v.to_string(),
        Value::Timestamp(_) => String::new(),
    }
}

/// Splits `events` (in arrival order) at `cuts` into blocks, with ids a permutation of
/// 1..=blocks chosen by `id_seed` (so block ids do not follow time).
fn build(events: &[TestEvent], cuts: &[usize], id_seed: u64) -> Corpus {
    let mut cuts: Vec<usize> = cuts.iter().map(|&c| c % (events.len() + 1)).collect();
    cuts.push(events.len());
    cuts.sort_unstable();
    cuts.dedup();
    let mut blocks = Vec::new();
    let mut start = 0;
    for &end in &cuts {
        if end > start {
            blocks.push(events[start..end].to_vec());
            start = end;
        }
    }
    let mut ids: Vec<u64> = (1..=blocks.len() as u64).collect();
    let mut state = id_seed | 1;
    for i in (1..ids.len()).rev() {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        ids.swap(i, (state % (i as u64 + 1)) as usize);
    }
    build_blocks(ids.into_iter().zip(blocks).collect())
}

/// The block of `segment`: written as the file `path` and mapped, or (`in_memory`) encoded
/// in memory and read from those bytes, as a server's memory blocks are. Every answer must be
/// the same either way, so the models below run over a mix (block ids are shuffled, so which
/// blocks are in memory varies from case to case).
fn open_block(segment: SegmentBuilder, path: &std::path::Path, in_memory: bool) -> BlockReader {
    if in_memory {
        let (_, bytes) = segment.encode_block(path).unwrap();
        BlockReader::from_bytes(path, Arc::new(bytes)).unwrap()
    } else {
        segment.write_block(path).unwrap();
        BlockReader::open(path).unwrap()
    }
}

/// Writes each `(id, events)` as block file `{id:08}.qblk` (the catalog's naming) and opens
/// them all as those catalog ids (the searcher orders equal times by them).
fn build_blocks(blocks: Vec<(u64, Vec<TestEvent>)>) -> Corpus {
    let dir = tempfile::tempdir().unwrap();
    let analyzer = Arc::new(Analyzer::default());
    let mut model = Vec::new();
    let mut readers = Vec::new();
    for (id, events) in blocks {
        let mut segment = SegmentBuilder::new(analyzer.clone());
        for event in &events {
            segment.add_event(event.time, event.fields.iter().map(|(k, v)| (*k, v)));
        }
        let path = dir.path().join(format!("{id:08}.qblk"));
        readers.push(open_block(segment, &path, id % 2 == 0).with_id(id));
        let mut block_events: Vec<&TestEvent> = events.iter().collect();
        block_events.sort_by_key(|e| e.time); // stable, as write_block sorts
        for (doc, event) in block_events.into_iter().enumerate() {
            let tokens = event
                .fields
                .iter()
                .map(|(name, value)| {
                    let tokens = analyzer
                        .tokens(&indexed_text(value))
                        .into_iter()
                        .map(|(_, t)| t)
                        .collect();
                    (*name, tokens)
                })
                .collect();
            model.push(ModelEvent {
                time: event.time,
                block_id: id,
                doc: doc as u32,
                fields: event.fields.clone(),
                tokens,
            });
        }
    }
    model.sort_by_key(ModelEvent::key);
    let searcher = Searcher::new(readers, (*analyzer).clone());
    let block_ids = searcher.blocks().iter().map(|b| b.id().unwrap()).collect();
    Corpus {
        _dir: dir,
        searcher,
        events: model,
        block_ids,
    }
}

/// `extremes`: some latencies at the ends of i64; `dense`: every event has a `ratio`, so its
/// column chunks have no gaps (min/max may then stand for every value of a chunk), and
/// latencies take few values.
fn event_strategy(base: i64, extremes: bool, dense: bool) -> impl Strategy<Value = TestEvent> {
    let msg = prop_oneof![
        1 => Just(None),
        1 => Just(Some(String::new())),
        8 => prop::collection::vec(prop::sample::select(WORDS), 1..5)
            .prop_map(|words| Some(words.join(" "))),
        2 => prop::sample::select(LONG_MESSAGES).prop_map(|m| Some(m.to_owned())),
    ];
    // Dense corpora have few distinct latencies, so that ranges take the numeric terms
    // (few terms, many docs each) rather than the column scan.
    let (low, high): (i64, i64) = if dense { (-3, 6) } else { (-50, 400) };
    let latency = prop_oneof![
        3 => Just(None),
        16 => (low..high).prop_map(|v| Some(Value::I64(v))),
        1 => (low..high).prop_map(|v| Some(Value::F64(v as f64 + 0.5))),
    ];
    (
        0i64..200,
        msg,
        latency,
        prop::option::weighted(0.04, prop::sample::select(EXTREME_I64)),
        (
            prop::bool::weighted(0.5),
            prop::sample::select(RATIOS),
            prop::sample::select(DENSE_RATIOS),
        )
            .prop_map(move |(present, ratio, dense_ratio)| match dense {
                true => Some(dense_ratio),
                false => present.then_some(ratio),
            }),
        prop::option::weighted(0.15, prop::sample::select(BYTES.to_vec())),
        prop::option::weighted(0.85, prop::sample::select(LEVELS)),
        prop::option::weighted(0.7, 0u8..12),
    )
        .prop_map(
            move |(offset, msg, latency, extreme, ratio, bytes, level, ip)| {
                let mut fields = Vec::new();
                if let Some(msg) = msg {
                    fields.push(("msg", Value::Str(msg)));
                }
                let latency = match extreme {
                    Some(v) if extremes => Some(Value::I64(v)),
                    _ => latency,
                };
                if let Some(latency) = latency {
                    fields.push(("latency", latency));
                }
                if let Some(ratio) = ratio {
                    fields.push(("ratio", Value::F64(ratio)));
                }
                if let Some(bytes) = bytes {
                    fields.push(("bytes", Value::U64(bytes)));
                }
                if let Some(level) = level {
                    fields.push(("level", Value::Str(level.to_owned())));
                }
                if let Some(ip) = ip {
                    fields.push(("ip", Value::Str(ip_text(ip))));
                }
                TestEvent {
                    time: base + offset,
                    fields,
                }
            },
        )
}

fn ip_text(n: u8) -> String {
    format!("10.0.{}.{n}", n / 4)
}

// ---------------------------------------------------------------------------------------------
// Queries and their model

/// A query as generated: rendered to text for the parser, evaluated directly by the model.
#[derive(Debug, Clone)]
enum Q {
    All,
    /// A bare word: any text field.
    Word(&'static str),
    FieldWord(&'static str, &'static str),
    Exact(&'static str, String),
    /// A prefix, wildcard, regex or fuzzy term (as written) over one field or every text field.
    Pattern(Option<&'static str>, &'static str),
    /// `text` is how the range is written; bounds are number texts.
    Range {
        field: &'static str,
        lower: Bound<String>,
        upper: Bound<String>,
        text: String,
    },
    /// A range of terms (string bounds, as written; tokens compare to them lowercased).
    TermRange {
        field: &'static str,
        lower: Bound<&'static str>,
        upper: Bound<&'static str>,
        text: String,
    },
    Exists(&'static str),
    Time {
        lower: Bound<i64>,
        upper: Bound<i64>,
        text: String,
    },
    And(Vec<Q>),
    Or(Vec<Q>),
    Not(Box<Q>),
}

impl Q {
    fn render(&self) -> String {
        match self {
            Q::All => "*".into(),
            Q::Word(w) => (*w).into(),
            Q::FieldWord(f, w) => format!("{f}:{w}"),
            Q::Exact(f, v) => format!("{f}:=\"{v}\""),
            Q::Pattern(Some(f), p) => format!("{f}:{p}"),
            Q::Pattern(None, p) => (*p).into(),
            Q::Range { text, .. } | Q::Time { text, .. } | Q::TermRange { text, .. } => {
                text.clone()
            }
            Q::Exists(f) => format!("_exists_:{f}"),
            Q::And(qs) => format!(
                "({})",
                qs.iter().map(Q::render).collect::<Vec<_>>().join(" AND ")
            ),
            Q::Or(qs) => format!(
                "({})",
                qs.iter().map(Q::render).collect::<Vec<_>>().join(" OR ")
            ),
            // Its own group, so that inside an OR it is "everything but", not a MUST_NOT of
            // the OR (Lucene's `a OR NOT b` means `a -b`).
            Q::Not(q) => format!("(NOT {})", q.render()),
        }
    }

    fn matches(&self, event: &ModelEvent) -> bool {
        match self {
            Q::All => true,
            Q::Word(w) => event.tokens.values().any(|t| t.contains(*w)),
            Q::FieldWord(f, w) => event.tokens.get(f).is_some_and(|t| t.contains(*w)),
            Q::Exact(f, v) => matches!(event.value(f), Some(Value::Str(s)) if s == v),
            Q::Pattern(field, pattern) => {
                let hit =
                    |tokens: &HashSet<String>| tokens.iter().any(|t| pattern_matches(pattern, t));
                match field {
                    Some(f) => event.tokens.get(f).is_some_and(hit),
                    None => event.tokens.values().any(hit),
                }
            }
            Q::Range {
                field,
                lower,
                upper,
                ..
            } => {
                let Some(value) = event.value(field).and_then(numeric) else {
                    return false;
                };
                let above = match lower {
                    Bound::Unbounded => true,
                    Bound::Included(b) => {
                        compare(value, parse_number(b)).is_some_and(|o| o != Ordering::Less)
                    }
                    Bound::Excluded(b) => {
                        compare(value, parse_number(b)) == Some(Ordering::Greater)
                    }
                };
                let below = match upper {
                    Bound::Unbounded => true,
                    Bound::Included(b) => {
                        compare(value, parse_number(b)).is_some_and(|o| o != Ordering::Greater)
                    }
                    Bound::Excluded(b) => compare(value, parse_number(b)) == Some(Ordering::Less),
                };
                // NaN compares as nothing: in no range, not even an unbounded one.
                above && below && !matches!(value, Num::Float(v) if v.is_nan())
            }
            Q::TermRange {
                field,
                lower,
                upper,
                ..
            } => {
                let bounds = (lower.map(str::to_lowercase), upper.map(str::to_lowercase));
                event.tokens.get(field).is_some_and(|tokens| {
                    tokens
                        .iter()
                        .any(|t| std::ops::RangeBounds::contains(&bounds, t))
                })
            }
            Q::Exists(f) => *f == "_time" || event.value(f).is_some(),
            Q::Time { lower, upper, .. } => {
                std::ops::RangeBounds::contains(&(*lower, *upper), &event.time)
            }
            Q::And(qs) => qs.iter().all(|q| q.matches(event)),
            Q::Or(qs) => qs.iter().any(|q| q.matches(event)),
            Q::Not(q) => !q.matches(event),
        }
    }
}

/// A number compared exactly: an integer (i64 or u64 value, integer bound) or a float.
#[derive(Debug, Clone, Copy)]
enum Num {
    Int(i128),
    Float(f64),
}

fn numeric(value: &Value) -> Option<Num> {
    match value {
        Value::I64(v) => Some(Num::Int(i128::from(*v))),
        Value::U64(v) => Some(Num::Int(i128::from(*v))),
        Value::F64(v) => Some(Num::Float(*v)),
        _ => None,
    }
}

/// A bound as the parser reads it: an integer in i64's or u64's range stays exact
/// (`Number::Big` above i64), anything else is the nearest f64.
fn parse_number(text: &str) -> Num {
    match (text.parse::<i64>(), text.parse::<u64>()) {
        (Ok(v), _) => Num::Int(i128::from(v)),
        (_, Ok(v)) => Num::Int(i128::from(v)),
        _ => Num::Float(text.parse::<f64>().unwrap()),
    }
}

/// Exact comparison (no rounding of integers to floats); `None` with NaN.
fn compare(a: Num, b: Num) -> Option<Ordering> {
    fn int_float(i: i128, x: f64) -> Option<Ordering> {
        if x.is_nan() {
            return None;
        }
        // Every integer here has |i| < 2^65.
        if x >= 1e30 {
            return Some(Ordering::Less);
        }
        if x <= -1e30 {
            return Some(Ordering::Greater);
        }
        let floor = x.floor();
        let f = floor as i128; // exact: |floor| < 1e30 is an integer-valued f64
        Some(match i.cmp(&f) {
            Ordering::Equal if x == floor => Ordering::Equal,
            Ordering::Equal => Ordering::Less,
            other => other,
        })
    }
    match (a, b) {
        (Num::Int(a), Num::Int(b)) => Some(a.cmp(&b)),
        (Num::Float(a), Num::Float(b)) => a.partial_cmp(&b),
        (Num::Int(a), Num::Float(b)) => int_float(a, b),
        (Num::Float(a), Num::Int(b)) => int_float(b, a).map(Ordering::reverse),
    }
}

/// Range bounds for `field`, mostly near its values.
fn number_text(field: &str) -> BoxedStrategy<String> {
    let near: BoxedStrategy<String> = match field {
        "ratio" => prop_oneof![
            2 => (-3i64..9).prop_map(|v| v.to_string()),
            3 => (-12i64..36).prop_map(|v| format!("{:?}", v as f64 / 4.0)),
        ]
        .boxed(),
        "bytes" => (0i64..1200).prop_map(|v| v.to_string()).boxed(),
        _ => prop_oneof![
            2 => (-60i64..420).prop_map(|v| v.to_string()),
            1 => (-120i64..840).prop_map(|v| format!("{:?}", v as f64 / 2.0)),
            2 => (-5i64..8).prop_map(|v| v.to_string()),
            1 => (-10i64..16).prop_map(|v| format!("{:?}", v as f64 / 2.0)),
        ]
        .boxed(),
    };
    prop_oneof![
        9 => near,
        1 => prop::sample::select(SMALL_FLOAT_BOUNDS).prop_map(str::to_owned),
        1 => prop::sample::select(EXTREME_BOUNDS).prop_map(str::to_owned),
    ]
    .boxed()
}

/// Swaps the values of two bounds (keeping which side is open) if the lower one is greater,
/// so that most ranges are not empty.
fn ordered<T>(
    lower: Bound<T>,
    upper: Bound<T>,
    greater: impl Fn(&T, &T) -> bool,
) -> (Bound<T>, Bound<T>) {
    let split = |b: Bound<T>| match b {
        Bound::Included(v) => (Some(v), true),
        Bound::Excluded(v) => (Some(v), false),
        Bound::Unbounded => (None, false),
    };
    let join = |v: Option<T>, inclusive: bool| match v {
        Some(v) if inclusive => Bound::Included(v),
        Some(v) => Bound::Excluded(v),
        None => Bound::Unbounded,
    };
    let ((mut a, a_inclusive), (mut b, b_inclusive)) = (split(lower), split(upper));
    if let (Some(x), Some(y)) = (&a, &b) {
        if greater(x, y) {
            std::mem::swap(&mut a, &mut b);
        }
    }
    (join(a, a_inclusive), join(b, b_inclusive))
}

fn bound<T: std::fmt::Debug + Clone>(
    value: impl Strategy<Value = T> + Clone,
) -> impl Strategy<Value = Bound<T>> {
    prop_oneof![
        4 => value.clone().prop_map(Bound::Included),
        4 => value.prop_map(Bound::Excluded),
        1 => Just(Bound::Unbounded),
    ]
}

/// `field:[a TO b]` in any bracket form, or `field:>a` and friends when one side is open.
fn render_range<T>(
    field: &str,
    lower: &Bound<T>,
    upper: &Bound<T>,
    compare_form: bool,
    open_brackets: (bool, bool),
    show: impl Fn(&T) -> String,
) -> String {
    match (lower, upper, compare_form) {
        (Bound::Included(a), Bound::Unbounded, true) => format!("{field}:>={}", show(a)),
        (Bound::Excluded(a), Bound::Unbounded, true) => format!("{field}:>{}", show(a)),
        (Bound::Unbounded, Bound::Included(b), true) => format!("{field}:<={}", show(b)),
        (Bound::Unbounded, Bound::Excluded(b), true) => format!("{field}:<{}", show(b)),
        _ => {
            let lower = match lower {
                Bound::Included(a) => format!("[{}", show(a)),
                Bound::Excluded(a) => format!("{{{}", show(a)),
                Bound::Unbounded if open_brackets.0 => "[*".into(),
                Bound::Unbounded => "{*".into(),
            };
            let upper = match upper {
                Bound::Included(b) => format!("{}]", show(b)),
                Bound::Excluded(b) => format!("{}}}", show(b)),
                Bound::Unbounded if open_brackets.1 => "*]".into(),
                Bound::Unbounded => "*}".into(),
            };
            format!("{field}:{lower} TO {upper}")
        }
    }
}

fn range_strategy() -> impl Strategy<Value = Q> {
    let field = prop_oneof![
        6 => Just("latency"),
        3 => Just("ratio"),
        2 => Just("bytes"),
        1 => Just("level"),
        1 => Just("nosuch"),
    ];
    field
        .prop_flat_map(|field| {
            let numbers = if matches!(field, "ratio" | "bytes") {
                field
            } else {
                "latency"
            };
            (
                Just(field),
                bound(number_text(numbers)),
                bound(number_text(numbers)),
                prop::bool::weighted(0.75),
                any::<bool>(),
                any::<(bool, bool)>(),
            )
        })
        .prop_map(|(field, lower, upper, sort, compare_form, brackets)| {
            let (lower, upper) = if sort {
                ordered(lower, upper, |a: &String, b: &String| {
                    compare(parse_number(a), parse_number(b)) == Some(Ordering::Greater)
                })
            } else {
                (lower, upper)
            };
            Q::Range {
                text: render_range(field, &lower, &upper, compare_form, brackets, |t| t.clone()),
                field,
                lower,
                upper,
            }
        })
}

fn term_range_strategy() -> impl Strategy<Value = Q> {
    const BOUNDS: &[&str] = &[
        "a", "d", "disk", "E", "err", "error", "errors", "info", "m", "t", "Timeout", "warn", "z",
        "10",
    ];
    (
        prop::sample::select(&["msg", "level", "nosuch"][..]),
        bound(prop::sample::select(BOUNDS)),
        bound(prop::sample::select(BOUNDS)),
        any::<bool>(),
        any::<(bool, bool)>(),
    )
        .prop_filter("not a numeric range", |(_, lower, upper, _, _)| {
            let numeric = |b: &Bound<&str>| match b {
                Bound::Included(t) | Bound::Excluded(t) => t.parse::<f64>().is_ok(),
                Bound::Unbounded => true,
            };
            !(numeric(lower) && numeric(upper))
        })
        .prop_map(
            |(field, lower, upper, compare_form, brackets)| Q::TermRange {
                text: render_range(field, &lower, &upper, compare_form, brackets, |t| {
                    (*t).to_owned()
                }),
                field,
                lower,
                upper,
            },
        )
}

fn time_strategy(base: i64) -> impl Strategy<Value = Q> {
    let time = (-10i64..210).prop_map(move |t| base + t);
    (
        bound(time.clone()),
        bound(time),
        prop::bool::weighted(0.75),
        any::<bool>(),
        any::<(bool, bool)>(),
    )
        .prop_map(|(lower, upper, sort, compare_form, brackets)| {
            let (lower, upper) = if sort {
                ordered(lower, upper, |a: &i64, b: &i64| a > b)
            } else {
                (lower, upper)
            };
            Q::Time {
                text: render_range("_time", &lower, &upper, compare_form, brackets, |t| {
                    format_time(*t)
                }),
                lower,
                upper,
            }
        })
}

fn query_strategy(base: i64) -> impl Strategy<Value = Q> {
    let word = prop::sample::select(WORDS);
    let leaf = prop_oneof![
        3 => word.clone().prop_map(Q::Word),
        2 => word.prop_map(|w| Q::FieldWord("msg", w)),
        2 => prop::sample::select(&["info", "warn", "error", "debug"][..])
            .prop_map(|l| Q::FieldWord("level", l)),
        1 => (0u8..14).prop_map(|n| Q::Exact("ip", ip_text(n))),
        1 => prop::sample::select(LONG_DECOYS).prop_map(|m| Q::Exact("msg", m.to_owned())),
        3 => (prop::option::of(prop::sample::select(&["msg", "level"][..])), prop::sample::select(PATTERNS))
            .prop_map(|(f, p)| Q::Pattern(f, p)),
        6 => range_strategy(),
        2 => term_range_strategy(),
        2 => prop::sample::select(&["ratio", "latency", "bytes", "msg", "nosuch", "_time"][..])
            .prop_map(Q::Exists),
        3 => time_strategy(base),
        1 => Just(Q::All),
    ];
    leaf.prop_recursive(3, 16, 3, |inner| {
        prop_oneof![
            2 => prop::collection::vec(inner.clone(), 2..4).prop_map(Q::And),
            2 => prop::collection::vec(inner.clone(), 2..4).prop_map(Q::Or),
            1 => inner.prop_map(|q| Q::Not(Box::new(q))),
        ]
    })
}

/// Everything one query is checked with.
#[derive(Debug, Clone)]
struct Case {
    query: Q,
    limit: usize,
    page: usize,
    interval: i64,
    /// `Query::within(start, end)` bounds, as offsets from the corpus' base time.
    within: (Option<i64>, Option<i64>),
    agg_interval: i64,
}

fn case_strategy(base: i64) -> impl Strategy<Value = Case> {
    (
        query_strategy(base),
        0usize..15,
        1usize..9,
        1i64..50,
        (
            prop::option::weighted(0.8, -10i64..210),
            prop::option::weighted(0.8, -10i64..210),
            prop::bool::weighted(0.8),
        ),
        1i64..50,
    )
        .prop_map(
            |(query, limit, page, interval, (start, end, sort), agg_interval)| {
                // Mostly `start <= end`; sometimes an empty window.
                let within = match (start, end) {
                    (Some(a), Some(b)) if sort && a > b => (Some(b), Some(a)),
                    other => other,
                };
                Case {
                    query,
                    limit,
                    page,
                    interval,
                    within,
                    agg_interval,
                }
            },
        )
}

// ---------------------------------------------------------------------------------------------
// Checks

fn settings() -> Vec<(String, Optimizations)> {
    let mut out = vec![
        ("all on".to_owned(), Optimizations::ALL),
        ("all off".to_owned(), Optimizations::NONE),
    ];
    for name in Optimizations::NAMES {
        let mut optimizations = Optimizations::ALL;
        optimizations.disable(name).unwrap();
        out.push((format!("{name} off"), optimizations));
    }
    out
}

fn keys_of(corpus: &Corpus, hits: &[Hit]) -> Vec<Key> {
    hits.iter()
        .map(|h| (h.time, corpus.block_ids[h.block as usize], h.doc))
        .collect()
}

/// `(bucket start, count)` from the first to the last non-empty bucket, empty ones included.
fn model_histogram(times: impl Iterator<Item = i64>, interval: i64) -> Vec<(i64, u64)> {
    let mut counts: BTreeMap<i64, u64> = BTreeMap::new();
    for t in times {
        *counts.entry(t.div_euclid(interval)).or_default() += 1;
    }
    let (Some(&first), Some(&last)) = (counts.keys().next(), counts.keys().next_back()) else {
        return Vec::new();
    };
    (first..=last)
        .map(|b| {
            (
                b.saturating_mul(interval),
                counts.get(&b).copied().unwrap_or(0),
            )
        })
        .collect()
}

/// Pages through every match with `after` cursors, `page` hits at a time.
fn all_pages(
    corpus: &Corpus,
    query: &Query,
    sort: SortOrder,
    page: usize,
    total: usize,
    context: &str,
) -> Result<Vec<Key>, TestCaseError> {
    let mut out = Vec::new();
    let mut after = None;
    for _ in 0..total / page + 2 {
        let request = HitsRequest {
            limit: page,
            count: false,
            sort,
            after,
        };
        let hits = corpus.searcher.search(query, &request).unwrap().hits;
        if hits.is_empty() {
            return Ok(out);
        }
        prop_assert!(hits.len() <= page, "page too long, {}", context);
        out.extend(keys_of(corpus, &hits));
        let cursor = corpus.searcher.cursor_of(hits.last().unwrap());
        prop_assert_eq!(Cursor::parse(&cursor.to_string()), Some(cursor));
        after = Some(cursor);
    }
    Err(TestCaseError::fail(format!(
        "paging does not end: {} pages of {page} for {total} matches, {context}",
        total / page + 2
    )))
}

fn check_case(corpus: &mut Corpus, base: i64, case: &Case) -> Result<(), TestCaseError> {
    let matched: Vec<usize> = (0..corpus.events.len())
        .filter(|&i| case.query.matches(&corpus.events[i]))
        .collect();
    check_answers(corpus, base, &case.query.render(), &matched, case)
}

/// Checks every answer to the query `text` under every optimization setting against the
/// model's matches (indices into `corpus.events`, ascending).
fn check_answers(
    corpus: &mut Corpus,
    base: i64,
    text: &str,
    matched: &[usize],
    case: &Case,
) -> Result<(), TestCaseError> {
    let query = corpus
        .searcher
        .parse(text)
        .map_err(|e| TestCaseError::fail(format!("parse {text:?}: {e}")))?;
    let ascending: Vec<Key> = matched.iter().map(|&i| corpus.events[i].key()).collect();
    let descending: Vec<Key> = ascending.iter().rev().copied().collect();
    let start = case.within.0.map_or(i64::MIN, |t| base + t);
    let end = case.within.1.map_or(i64::MAX, |t| base + t);
    let within = query.clone().within(start, end);
    let within_keys: Vec<Key> = ascending
        .iter()
        .copied()
        .filter(|k| (start..end).contains(&k.0))
        .collect();
    let histogram = model_histogram(ascending.iter().map(|k| k.0), case.interval);
    let histogram_within = model_histogram(within_keys.iter().map(|k| k.0), case.interval);
    let agg_histogram_within = model_histogram(within_keys.iter().map(|k| k.0), case.agg_interval);
    let specs: Vec<AggSpec> = SPECS.iter().map(|s| AggSpec::parse(s).unwrap()).collect();
    let bucket_specs: Vec<AggSpec> = BUCKET_SPECS
        .iter()
        .map(|s| AggSpec::parse(s).unwrap())
        .collect();
    let matched_events: Vec<&ModelEvent> = matched.iter().map(|&i| &corpus.events[i]).collect();
    let agg_histogram = model_histogram(ascending.iter().map(|k| k.0), case.agg_interval);

    for (name, optimizations) in settings() {
        corpus.searcher.set_optimizations(optimizations);
        let context = format!("query {text:?} ({query:?}) with {name}");
        let searcher = &corpus.searcher;

        prop_assert_eq!(
            searcher.count(&query).unwrap(),
            matched.len() as u64,
            "count, {}",
            context
        );

        for (sort, want) in [
            (SortOrder::TimeDesc, &descending),
            (SortOrder::TimeAsc, &ascending),
        ] {
            let request = HitsRequest {
                limit: case.limit,
                count: true,
                sort,
                after: None,
            };
            let result = searcher.search(&query, &request).unwrap();
            prop_assert_eq!(result.count, Some(matched.len() as u64), "{}", context);
            let got = keys_of(corpus, &result.hits);
            let expected = &want[..want.len().min(case.limit)];
            prop_assert_eq!(
                &got,
                expected,
                "{:?} limit {}, {}",
                sort,
                case.limit,
                context
            );
            let pages = all_pages(corpus, &query, sort, case.page, matched.len(), &context)?;
            prop_assert_eq!(
                &pages,
                want,
                "{:?} in pages of {}, {}",
                sort,
                case.page,
                context
            );
        }

        prop_assert_eq!(
            searcher.histogram(&query, case.interval).unwrap(),
            histogram.clone(),
            "histogram by {}, {}",
            case.interval,
            context
        );
        prop_assert_eq!(
            searcher.histogram(&within, case.interval).unwrap(),
            histogram_within.clone(),
            "histogram by {} within [{}, {}), {}",
            case.interval,
            start,
            end,
            context
        );
        for sort in [SortOrder::TimeAsc, SortOrder::TimeDesc] {
            let request = HitsRequest {
                limit: case.limit,
                sort,
                ..Default::default()
            };
            let hits = searcher.search(&within, &request).unwrap().hits;
            let want: Vec<Key> = match sort {
                SortOrder::TimeAsc => within_keys.iter().take(case.limit).copied().collect(),
                _ => within_keys.iter().rev().take(case.limit).copied().collect(),
            };
            prop_assert_eq!(
                keys_of(corpus, &hits),
                want,
                "{:?} within [{}, {}), {}",
                sort,
                start,
                end,
                context
            );
        }

        let aggregations = searcher.aggregate(&query, &specs).unwrap();
        check_aggregations(
            &specs,
            &aggregations,
            &matched_events,
            corpus_has_extremes(corpus),
            &context,
        )?;
        let buckets = searcher
            .aggregate_histogram(&query, case.agg_interval, &bucket_specs)
            .unwrap();
        let got: Vec<(i64, u64)> = buckets.iter().map(|(s, c, _)| (*s, *c)).collect();
        prop_assert_eq!(
            &got,
            &agg_histogram,
            "aggregate_histogram by {}, {}",
            case.agg_interval,
            context
        );
        for (start, _, results) in &buckets {
            let bucket_of = |e: &&ModelEvent| {
                e.time
                    .div_euclid(case.agg_interval)
                    .saturating_mul(case.agg_interval)
            };
            let in_bucket: Vec<&ModelEvent> = matched_events
                .iter()
                .copied()
                .filter(|e| bucket_of(e) == *start)
                .collect();
            check_aggregations(
                &bucket_specs,
                results,
                &in_bucket,
                true,
                &format!("bucket {start}, {context}"),
            )?;
        }
        check_tree(
            searcher,
            &query,
            &matched_events,
            case.agg_interval,
            &context,
        )?;
        let specs = [AggSpec::parse("count").unwrap()];
        let buckets = searcher
            .aggregate_histogram(&within, case.agg_interval, &specs)
            .unwrap();
        let got: Vec<(i64, u64)> = buckets.iter().map(|(s, c, _)| (*s, *c)).collect();
        prop_assert_eq!(
            &got,
            &agg_histogram_within,
            "aggregate_histogram by {} within [{}, {}), {}",
            case.agg_interval,
            start,
            end,
            context
        );
    }
    corpus.searcher.set_optimizations(Optimizations::ALL);
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Nested aggregations (agg_tree.rs) and their model

/// The filters of the tree's `filters` node, as the model reads them.
fn tree_filters() -> Vec<Q> {
    vec![
        Q::FieldWord("level", "error"),
        Q::Word("alpha"),
        Q::Exists("bytes"),
    ]
}

/// A tree using every node kind: terms (with a missing key) over time buckets and number
/// histograms, ranges over terms, filters (with the other bucket) over a missing bucket.
fn test_tree(interval: i64) -> Vec<AggNode> {
    let metric = |field: &str, metric: Metric| AggNode {
        kind: NodeKind::Metric {
            field: field.into(),
            metric,
            missing: None,
        },
        children: Vec::new(),
    };
    let node = |kind: NodeKind, children: Vec<AggNode>| AggNode { kind, children };
    vec![
        node(
            NodeKind::Terms {
                field: "level".into(),
                missing: Some(TermKey::Str("none".into())),
            },
            vec![
                node(
                    NodeKind::DateHistogram {
                        field: "_time".into(),
                        buckets: TimeBuckets::Fixed {
                            interval,
                            offset: 0,
                            zone: Default::default(),
                        },
                    },
                    vec![
                        metric("ratio", Metric::Stats),
                        metric(
                            "ratio",
                            Metric::WeightedAvg {
                                weight: "bytes".into(),
                                weight_missing: Some(TermKey::Int(3)),
                            },
                        ),
                        metric("msg", Metric::ValueCount),
                        metric(
                            "_time",
                            Metric::TopHits {
                                size: 3,
                                oldest_first: false,
                            },
                        ),
                    ],
                ),
                node(
                    NodeKind::Histogram {
                        field: "latency".into(),
                        interval: 50.0,
                        offset: 7.0,
                    },
                    vec![metric("bytes", Metric::Stats)],
                ),
            ],
        ),
        node(
            NodeKind::Range {
                field: "latency".into(),
                ranges: vec![
                    (None, Some(0.0)),
                    (Some(0.0), Some(100.0)),
                    (Some(50.0), None),
                ],
            },
            vec![node(
                NodeKind::Terms {
                    field: "ip".into(),
                    missing: None,
                },
                vec![
                    metric("ratio", Metric::ValueCount),
                    metric(
                        "_time",
                        Metric::TopHits {
                            size: 2,
                            oldest_first: true,
                        },
                    ),
                ],
            )],
        ),
        node(
            NodeKind::Filters {
                filters: tree_filters()
                    .iter()
                    .map(|q| FilterQuery::local(quarry_query::parser::parse(&q.render()).unwrap()))
                    .collect(),
                other: true,
            },
            vec![
                node(
                    NodeKind::Missing {
                        field: "ratio".into(),
                    },
                    vec![metric("ip", Metric::Cardinality)],
                ),
                metric("bytes", Metric::Stats),
            ],
        ),
        node(
            NodeKind::Terms {
                field: "bytes".into(),
                missing: None,
            },
            Vec::new(),
        ),
        node(
            NodeKind::MultiTerms {
                fields: vec![
                    ("level".into(), None),
                    ("bytes".into(), Some(TermKey::Int(-1))),
                ],
            },
            vec![metric("ratio", Metric::Stats)],
        ),
        metric("latency", Metric::ValueCount),
        AggNode {
            kind: NodeKind::Metric {
                field: "latency".into(),
                metric: Metric::Stats,
                missing: Some(TermKey::Int(-7)),
            },
            children: Vec::new(),
        },
    ]
}

/// The model's terms key of a value (`None`: no key).
fn model_term(value: &Value) -> Option<TermKey> {
    Some(match value {
        Value::Str(s) => TermKey::Str(s.clone()),
        Value::I64(v) => TermKey::Int(*v),
        Value::U64(v) => i64::try_from(*v).map_or(TermKey::Uint(*v), TermKey::Int),
        Value::F64(v) => TermKey::float(*v),
        Value::Bool(b) => TermKey::Bool(*b),
        Value::Json(_) | Value::Timestamp(_) => return None,
    })
}

/// The tree's answer by brute force: each node groups the events by their keys.
fn model_tree(nodes: &[AggNode], events: &[&ModelEvent]) -> Vec<AggResult> {
    nodes.iter().map(|node| model_node(node, events)).collect()
}

fn model_node(node: &AggNode, events: &[&ModelEvent]) -> AggResult {
    let keys_of = |event: &ModelEvent| -> Vec<BucketKey> {
        match &node.kind {
            NodeKind::Terms { field, missing } => match event.value(field) {
                Some(value) => model_term(value).map(BucketKey::Term).into_iter().collect(),
                None => missing.clone().map(BucketKey::Term).into_iter().collect(),
            },
            NodeKind::Histogram {
                field,
                interval,
                offset,
            } => number_of(event, field)
                .filter(|v| v.is_finite())
                .map(|v| BucketKey::Slot(((v - offset) / interval).floor() as i64))
                .into_iter()
                .collect(),
            NodeKind::DateHistogram {
                buckets: TimeBuckets::Fixed { interval, .. },
                ..
            } => vec![BucketKey::Slot(event.time.div_euclid(*interval) * interval)],
            NodeKind::Range { field, ranges } => match number_of(event, field) {
                Some(v) => ranges
                    .iter()
                    .enumerate()
                    .filter(|(_, (from, to))| {
                        from.is_none_or(|f| v >= f) && to.is_none_or(|t| v < t)
                    })
                    .map(|(i, _)| BucketKey::Slot(i as i64))
                    .collect(),
                None => Vec::new(),
            },
            NodeKind::Filters { other, .. } => {
                let filters = tree_filters();
                let mut keys: Vec<BucketKey> = filters
                    .iter()
                    .enumerate()
                    .filter(|(_, q)| q.matches(event))
                    .map(|(i, _)| BucketKey::Slot(i as i64))
                    .collect();
                if *other && keys.is_empty() {
                    keys.push(BucketKey::Slot(filters.len() as i64));
                }
                keys
            }
            NodeKind::MultiTerms { fields } => {
                let parts: Option<Vec<TermKey>> = fields
                    .iter()
                    .map(|(field, missing)| match event.value(field) {
                        Some(value) => model_term(value),
                        None => missing.clone(),
                    })
                    .collect();
                parts
                    .map(|p| BucketKey::Term(TermKey::Tuple(p)))
                    .into_iter()
                    .collect()
            }
            NodeKind::Missing { field } => {
                if event.value(field).is_none() {
                    vec![BucketKey::Slot(0)]
                } else {
                    Vec::new()
                }
            }
            other => panic!("no model for {other:?}"),
        }
    };
    if let NodeKind::Metric {
        field,
        metric,
        missing,
    } = &node.kind
    {
        let missing = missing.as_ref().and_then(TermKey::as_f64);
        return AggResult::Metric(match metric {
            Metric::Stats => {
                let numbers: Vec<f64> = events
                    .iter()
                    .filter_map(|e| match e.value(field) {
                        None => missing,
                        Some(_) => number_of(e, field),
                    })
                    .filter(|v| !v.is_nan())
                    .collect();
                MetricResult::Stats {
                    count: numbers.len() as u64,
                    min: numbers.iter().copied().fold(f64::INFINITY, f64::min),
                    max: numbers.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                    sum: numbers.iter().sum(),
                    sum_of_squares: numbers.iter().map(|v| v * v).sum(),
                }
            }
            Metric::ValueCount => MetricResult::ValueCount(
                events.iter().filter(|e| e.value(field).is_some()).count() as u64,
            ),
            Metric::Cardinality => MetricResult::Cardinality(
                events
                    .iter()
                    .filter_map(|e| match e.value(field) {
                        Some(Value::Str(s)) => Some(s.as_str()),
                        _ => None,
                    })
                    .collect::<HashSet<_>>()
                    .len() as u64,
            ),
            Metric::WeightedAvg {
                weight,
                weight_missing,
            } => {
                let (mut sum, mut weights) = (0.0, 0.0);
                for event in events {
                    let value = match event.value(field) {
                        None => missing,
                        Some(_) => number_of(event, field),
                    };
                    let w = match event.value(weight) {
                        None => weight_missing.as_ref().and_then(TermKey::as_f64),
                        Some(_) => number_of(event, weight),
                    };
                    if let (Some(v), Some(w)) = (value.filter(|v| v.is_finite()), w) {
                        sum += v * w;
                        weights += w;
                    }
                }
                MetricResult::WeightedAvg((weights != 0.0).then(|| sum / weights))
            }
            Metric::Percentiles(_)
            | Metric::HdrPercentiles { .. }
            | Metric::MedianAbsoluteDeviation => {
                panic!("percentiles are checked elsewhere")
            }
            // Times only: ties in time may come in any order (the tree breaks them by block
            // and doc).
            Metric::TopHits { size, oldest_first } => {
                let mut times: Vec<i64> = events.iter().map(|e| e.time).collect();
                times.sort_unstable();
                if !oldest_first {
                    times.reverse();
                }
                MetricResult::TopHits {
                    total: times.len() as u64,
                    hits: times
                        .into_iter()
                        .take(*size)
                        .map(|time| quarry_query::agg_tree::TopHit {
                            time,
                            block: 0,
                            doc: 0,
                            origin: 0,
                        })
                        .collect(),
                }
            }
        });
    }
    let mut groups: Vec<(BucketKey, Vec<&ModelEvent>)> = Vec::new();
    for event in events {
        for key in keys_of(event) {
            match groups.iter_mut().find(|(k, _)| *k == key) {
                Some((_, group)) => group.push(event),
                None => groups.push((key, vec![*event])),
            }
        }
    }
    AggResult::Buckets(
        groups
            .into_iter()
            .map(|(key, group)| BucketResult {
                key,
                count: group.len() as u64,
                children: model_tree(&node.children, &group),
            })
            .collect(),
    )
}

fn sorted_buckets(buckets: &[BucketResult]) -> Vec<&BucketResult> {
    let mut sorted: Vec<&BucketResult> = buckets.iter().collect();
    sorted.sort_by(|a, b| format!("{:?}", a.key).cmp(&format!("{:?}", b.key)));
    sorted
}

/// Compares a tree's answer with the model's: buckets in key order, sums within rounding.
fn same_tree(got: &[AggResult], want: &[AggResult], path: &str) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!(
            "{path}: {} results, model {}",
            got.len(),
            want.len()
        ));
    }
    for (i, (got, want)) in got.iter().zip(want).enumerate() {
        let path = format!("{path}/{i}");
        match (got, want) {
            (AggResult::Buckets(got), AggResult::Buckets(want)) => {
                let (got, want) = (sorted_buckets(got), sorted_buckets(want));
                let keys = |b: &[&BucketResult]| -> Vec<(BucketKey, u64)> {
                    b.iter().map(|b| (b.key.clone(), b.count)).collect()
                };
                if keys(&got) != keys(&want) {
                    return Err(format!(
                        "{path}: buckets {:?}, model {:?}",
                        keys(&got),
                        keys(&want)
                    ));
                }
                for (g, w) in got.iter().zip(&want) {
                    same_tree(&g.children, &w.children, &format!("{path}[{:?}]", g.key))?;
                }
            }
            (
                AggResult::Metric(MetricResult::Stats {
                    count,
                    min,
                    max,
                    sum,
                    sum_of_squares,
                }),
                AggResult::Metric(MetricResult::Stats {
                    count: count2,
                    min: min2,
                    max: max2,
                    sum: sum2,
                    sum_of_squares: squares2,
                }),
            ) => {
                // Sums differ by rounding in the order of addition: a few ulps of the
                // largest value, times the count.
                let largest = min.abs().max(max.abs());
                let close = |a: f64, b: f64, scale: f64| {
                    a == b
                        || (a.is_nan() && b.is_nan())
                        || (a - b).abs() <= 1e-12 * scale * (*count as f64)
                };
                if count != count2
                    || min != min2
                    || max != max2
                    || !close(*sum, *sum2, largest)
                    || !close(*sum_of_squares, *squares2, largest * largest)
                {
                    return Err(format!("{path}: {got:?}, model {want:?}"));
                }
            }
            (
                AggResult::Metric(MetricResult::WeightedAvg(Some(a))),
                AggResult::Metric(MetricResult::WeightedAvg(Some(b))),
            ) if (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0) => {}
            (
                AggResult::Metric(MetricResult::TopHits { hits, total }),
                AggResult::Metric(MetricResult::TopHits {
                    hits: model,
                    total: model_total,
                }),
            ) => {
                let times = |hits: &[quarry_query::agg_tree::TopHit]| -> Vec<i64> {
                    hits.iter().map(|h| h.time).collect()
                };
                if total != model_total || times(hits) != times(model) {
                    return Err(format!("{path}: {got:?}, model {want:?}"));
                }
            }
            _ if got == want => {}
            _ => return Err(format!("{path}: {got:?}, model {want:?}")),
        }
    }
    Ok(())
}

fn check_tree(
    searcher: &Searcher,
    query: &Query,
    events: &[&ModelEvent],
    interval: i64,
    context: &str,
) -> Result<(), TestCaseError> {
    let tree = test_tree(interval);
    let got = searcher.aggregate_tree(query, &tree).unwrap();
    let want = model_tree(&tree, events);
    same_tree(&got, &want, "tree").map_err(|e| TestCaseError::fail(format!("{e}, {context}")))
}

fn corpus_has_extremes(corpus: &Corpus) -> bool {
    corpus
        .events
        .iter()
        .any(|e| matches!(e.value("latency"), Some(Value::I64(v)) if v.unsigned_abs() > 1 << 40))
}

/// A field's value as the aggregations read numbers (strings are not numbers).
fn number_of(event: &ModelEvent, field: &str) -> Option<f64> {
    match event.value(field)? {
        Value::I64(v) => Some(*v as f64),
        Value::U64(v) => Some(*v as f64),
        Value::F64(v) => Some(*v),
        _ => None,
    }
}

/// JSON has no NaN or infinities: they come out as null.
fn finite(value: Option<f64>) -> Option<f64> {
    value.filter(|v| v.is_finite())
}

fn check_number(
    got: &Json,
    want: Option<f64>,
    tolerance: f64,
    what: &str,
    context: &str,
) -> Result<(), TestCaseError> {
    match (got.as_f64(), finite(want)) {
        (None, None) if got.is_null() => Ok(()),
        (Some(g), Some(w)) => {
            prop_assert!(
                (g - w).abs() <= tolerance,
                "{}: {} vs model {}, {}",
                what,
                g,
                w,
                context
            );
            Ok(())
        }
        _ => Err(TestCaseError::fail(format!(
            "{what}: {got} vs model {want:?}, {context}"
        ))),
    }
}

fn check_aggregations(
    specs: &[AggSpec],
    results: &serde_json::Map<String, Json>,
    events: &[&ModelEvent],
    skip_percentiles: bool,
    context: &str,
) -> Result<(), TestCaseError> {
    prop_assert_eq!(results.len(), specs.len(), "{}", context);
    for spec in specs {
        let got = &results[&spec.name];
        let what = format!("{} = {}", spec.name, got);
        let field = spec.field.as_deref().unwrap_or("");
        let numbers: Vec<f64> = events
            .iter()
            .filter_map(|e| number_of(e, field))
            .filter(|v| !v.is_nan())
            .collect();
        let count = numbers.len();
        let min = numbers.iter().copied().reduce(f64::min);
        let max = numbers.iter().copied().reduce(f64::max);
        let sum: f64 = numbers.iter().sum();
        let magnitude: f64 = numbers.iter().map(|v| v.abs()).sum();
        let sum_tolerance = 1e-9 * magnitude;
        let avg = (count > 0).then(|| sum / count as f64);
        let avg_tolerance = sum_tolerance / count.max(1) as f64;
        match &spec.kind {
            AggKind::Count => prop_assert_eq!(got, &json!(events.len()), "{}", context),
            AggKind::Terms { size } => {
                let mut counts: HashMap<&str, u64> = HashMap::new();
                for event in events {
                    if let Some(Value::Str(s)) = event.value(field) {
                        *counts.entry(s.as_str()).or_default() += 1;
                    }
                }
                let mut top: Vec<(&str, u64)> = counts.into_iter().collect();
                top.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
                let other: u64 = top.iter().skip(*size).map(|(_, n)| n).sum();
                let buckets: Vec<Json> = top
                    .iter()
                    .take(*size)
                    .map(|(key, count)| json!({"key": key, "count": count}))
                    .collect();
                let want = json!({"buckets": buckets, "other_count": other});
                prop_assert_eq!(got, &want, "{}, {}", spec.name, context);
            }
            AggKind::Min => check_number(got, min, 0.0, &what, context)?,
            AggKind::Max => check_number(got, max, 0.0, &what, context)?,
            AggKind::Sum => check_number(got, Some(sum), sum_tolerance, &what, context)?,
            AggKind::Avg => check_number(got, avg, avg_tolerance, &what, context)?,
            AggKind::Stats => {
                prop_assert_eq!(&got["count"], &json!(count), "{}, {}", what, context);
                check_number(&got["min"], min, 0.0, &what, context)?;
                check_number(&got["max"], max, 0.0, &what, context)?;
                check_number(&got["sum"], Some(sum), sum_tolerance, &what, context)?;
                check_number(&got["avg"], avg, avg_tolerance, &what, context)?;
            }
            AggKind::Percentiles(percents) => {
                let object = got.as_object().unwrap();
                prop_assert_eq!(object.len(), percents.len(), "{}, {}", what, context);
                let mut finite: Vec<f64> =
                    numbers.iter().copied().filter(|v| v.is_finite()).collect();
                finite.sort_by(f64::total_cmp);
                for (key, value) in object {
                    let percent: f64 = key.parse().unwrap();
                    prop_assert!(percents.contains(&percent), "{}, {}", what, context);
                    if finite.is_empty() {
                        prop_assert!(value.is_null(), "{}, {}", what, context);
                    } else if !skip_percentiles {
                        let estimate = value.as_f64().unwrap();
                        check_percentile(&finite, percent, estimate, &what, context)?;
                    }
                }
            }
            AggKind::Cardinality => {
                let distinct: HashSet<&str> = events
                    .iter()
                    .filter_map(|e| match e.value(field) {
                        Some(Value::Str(s)) => Some(s.as_str()),
                        _ => None,
                    })
                    .collect();
                let got = got.as_u64().unwrap() as f64;
                let want = distinct.len() as f64;
                prop_assert!(
                    (got - want).abs() <= 0.02 * want,
                    "{}: model {}, {}",
                    what,
                    want,
                    context
                );
            }
        }
    }
    Ok(())
}

/// DDSketch (sketches-ddsketch 0.3) answers quantile q with a value within `alpha` relative
/// error of the value of rank `floor(q * (n - 1))` (0-based) among the sorted values, exactly
/// the min and max for q = 0 and 1, and 0 for values of magnitude at most 1e-9. The rank is
/// computed in f64 (q = p / 100 is not exact), so neighbouring ranks within 1e-6 of the exact
/// one are accepted too. The guarantee holds while the sketch has at most 2048 bins, which
/// corpora without extreme values never reach.
fn check_percentile(
    sorted: &[f64],
    percent: f64,
    estimate: f64,
    what: &str,
    context: &str,
) -> Result<(), TestCaseError> {
    let n = sorted.len();
    if percent == 0.0 {
        prop_assert_eq!(estimate, sorted[0], "{}, {}", what, context);
        return Ok(());
    }
    if percent == 100.0 {
        prop_assert_eq!(estimate, sorted[n - 1], "{}, {}", what, context);
        return Ok(());
    }
    let rank = percent / 100.0 * (n - 1) as f64;
    let lo = (rank - 1e-6).floor().max(0.0) as usize;
    let hi = ((rank + 1e-6).floor() as usize).min(n - 1);
    let close = sorted[lo..=hi].iter().any(|&exact| {
        if exact.abs() <= 1e-9 {
            estimate == 0.0
        } else {
            (estimate - exact).abs() <= PERCENTILE_RELATIVE_ERROR * exact.abs() * (1.0 + 1e-9)
        }
    });
    prop_assert!(
        close,
        "p{} = {} is not within 1% of a value of rank {}..={} ({:?}), {}",
        percent,
        estimate,
        lo,
        hi,
        &sorted[lo..=hi],
        context
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Property tests

/// One corpus with the cases to check on it.
#[derive(Debug, Clone)]
struct Scenario {
    base: i64,
    events: Vec<TestEvent>,
    cuts: Vec<usize>,
    disjoint: bool,
    id_seed: u64,
    cases: Vec<Case>,
}

fn scenario_strategy(
    events: std::ops::Range<usize>,
    blocks: std::ops::Range<usize>,
    cases: std::ops::Range<usize>,
) -> impl Strategy<Value = Scenario> {
    (
        prop::sample::select(&[0i64, -100, 1_700_000_000_000_000_000][..]),
        prop::bool::weighted(0.25),
        prop::bool::weighted(0.25),
    )
        .prop_flat_map(move |(base, extremes, dense)| {
            (
                prop::collection::vec(event_strategy(base, extremes, dense), events.clone()),
                prop::collection::vec(any::<usize>(), blocks.clone()),
                prop::bool::weighted(0.3),
                any::<u64>(),
                prop::collection::vec(case_strategy(base), cases.clone()),
            )
                .prop_map(move |(events, cuts, disjoint, id_seed, cases)| Scenario {
                    base,
                    events,
                    cuts,
                    disjoint,
                    id_seed,
                    cases,
                })
        })
}

/// Sorting the events before splitting gives blocks with disjoint time ranges (the common
/// case of logs arriving in order); unsorted, their ranges overlap.
fn arrange(mut events: Vec<TestEvent>, disjoint: bool) -> Vec<TestEvent> {
    if disjoint {
        events.sort_by_key(|e| e.time);
    }
    events
}

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        // No regressions file beside the tests: minimal failures are kept as plain tests below.
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config(64))]

    #[test]
    fn log_queries_match_brute_force(scenario in scenario_strategy(0..220, 0..4, 1..4)) {
        let events = arrange(scenario.events, scenario.disjoint);
        let mut corpus = build(&events, &scenario.cuts, scenario.id_seed);
        for case in &scenario.cases {
            check_case(&mut corpus, scenario.base, case)?;
        }
    }
}

proptest! {
    #![proptest_config(config(6))]

    /// Blocks past one 1024-doc `_time` chunk and many 128-doc sparse time index groups.
    #[test]
    fn large_blocks_match_brute_force(scenario in scenario_strategy(1500..3000, 0..2, 1..3)) {
        let events = arrange(scenario.events, scenario.disjoint);
        let mut corpus = build(&events, &scenario.cuts, scenario.id_seed);
        for case in &scenario.cases {
            let mut case = case.clone();
            case.page = case.page * 97 + 13;
            check_case(&mut corpus, scenario.base, &case)?;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Corner cases

/// Copies of each value in corner cases that must take the numeric terms too.
const COPIES: usize = 30;

fn event(time: i64, fields: Vec<(&'static str, Value)>) -> TestEvent {
    TestEvent { time, fields }
}

fn latency_event(time: i64, latency: Option<Value>) -> TestEvent {
    let mut fields = vec![("msg", Value::Str("alpha".into()))];
    fields.extend(latency.map(|v| ("latency", v)));
    event(time, fields)
}

/// The answers to `text` must be exactly the events `expected` holds for, under every
/// optimization setting.
fn check_text(corpus: &mut Corpus, text: &str, expected: impl Fn(&ModelEvent) -> bool) {
    let matched: Vec<usize> = (0..corpus.events.len())
        .filter(|&i| expected(&corpus.events[i]))
        .collect();
    for page in 1..4 {
        let case = Case {
            query: Q::All,
            limit: 3,
            page,
            interval: 7,
            within: (None, None),
            agg_interval: 5,
        };
        if let Err(e) = check_answers(corpus, 0, text, &matched, &case) {
            panic!("{text}: {e}");
        }
    }
}

fn latency_is(event: &ModelEvent, test: impl Fn(&Value) -> bool) -> bool {
    event.value("latency").is_some_and(test)
}

#[test]
fn empty_and_fractional_ranges() {
    let events: Vec<TestEvent> = [
        Some(Value::I64(3)),
        Some(Value::I64(4)),
        Some(Value::F64(4.5)),
        Some(Value::I64(5)),
        Some(Value::I64(6)),
        None,
    ]
    .into_iter()
    .enumerate()
    .map(|(i, v)| latency_event(i as i64 * 10, v))
    .collect();
    let mut corpus = build_blocks(vec![(1, events[..3].to_vec()), (2, events[3..].to_vec())]);
    for text in [
        "latency:[5 TO 4]",
        "latency:{5 TO 5}",
        "latency:[5 TO 5}",
        "latency:{5 TO 5]",
        "latency:[4.6 TO 4.9]",
        "latency:>6",
        "latency:<3",
        "msg:alpha AND latency:[5 TO 4]",
    ] {
        check_text(&mut corpus, text, |_| false);
    }
    check_text(&mut corpus, "latency:{4 TO 5}", |e| {
        latency_is(e, |v| *v == Value::F64(4.5))
    });
    check_text(&mut corpus, "latency:[4.2 TO 4.8]", |e| {
        latency_is(e, |v| *v == Value::F64(4.5))
    });
    check_text(&mut corpus, "latency:{4.5 TO 5]", |e| {
        latency_is(e, |v| *v == Value::I64(5))
    });
    check_text(&mut corpus, "latency:[4 TO 4.5}", |e| {
        latency_is(e, |v| *v == Value::I64(4))
    });
    check_text(&mut corpus, "latency:[* TO *]", |e| {
        e.value("latency").is_some()
    });
    check_text(&mut corpus, "NOT latency:[5 TO 4]", |_| true);
}

/// A field sort's value as the model reads it: numbers as f64, strings, or nothing.
#[derive(Debug, Clone, PartialEq)]
enum SortKey {
    Number(f64),
    Str(String),
    Missing,
}

fn sort_key(event: &ModelEvent, field: &str) -> SortKey {
    match event.value(field) {
        Some(Value::I64(v)) => SortKey::Number(*v as f64),
        Some(Value::U64(v)) => SortKey::Number(*v as f64),
        Some(Value::F64(v)) => SortKey::Number(*v),
        Some(Value::Bool(v)) => SortKey::Number(f64::from(u8::from(*v))),
        Some(Value::Str(s)) => SortKey::Str(s.clone()),
        _ => SortKey::Missing,
    }
}

/// The model's order of one key's values: missing last both ways; numbers before strings;
/// reversed when descending (but for "missing last").
fn model_value_order(a: &SortKey, b: &SortKey, descending: bool) -> Ordering {
    let missing = |k: &SortKey| *k == SortKey::Missing;
    match missing(a).cmp(&missing(b)) {
        Ordering::Equal => {}
        other => return other,
    }
    let by_value = match (a, b) {
        (SortKey::Number(x), SortKey::Number(y)) => x.total_cmp(y),
        (SortKey::Str(x), SortKey::Str(y)) => x.cmp(y),
        (SortKey::Number(_), _) => Ordering::Less,
        (_, SortKey::Number(_)) => Ordering::Greater,
        _ => Ordering::Equal,
    };
    if descending {
        by_value.reverse()
    } else {
        by_value
    }
}

/// The model's field sort: key by key, then ties in time order, reversed when the first key
/// is descending.
fn model_sort_order(
    a: &(Vec<SortKey>, Key),
    b: &(Vec<SortKey>, Key),
    directions: &[bool],
) -> Ordering {
    for ((x, y), &descending) in a.0.iter().zip(&b.0).zip(directions) {
        match model_value_order(x, y, descending) {
            Ordering::Equal => {}
            other => return other,
        }
    }
    let ordering = a.1.cmp(&b.1);
    if directions[0] {
        ordering.reverse()
    } else {
        ordering
    }
}

proptest! {
    #![proptest_config(config(32))]

    /// Hits sorted by one or two fields, paged with the cursor of each page's last hit, are
    /// the model's order: every match once, in order, whatever the page size.
    #[test]
    fn field_sorts_match_brute_force(
        scenario in scenario_strategy(0..220, 0..4, 1..3),
        keys in prop::collection::vec(
            (
                prop::sample::select(&["latency", "ratio", "bytes", "level", "msg", "ip", "nosuch"][..]),
                any::<bool>(),
            ),
            1..3,
        ),
        page in 1usize..40,
    ) {
        let events = arrange(scenario.events, scenario.disjoint);
        let corpus = build(&events, &scenario.cuts, scenario.id_seed);
        let directions: Vec<bool> = keys.iter().map(|(_, descending)| *descending).collect();
        let sort = quarry_query::field_sort::FieldSort {
            keys: keys
                .iter()
                .map(|(field, descending)| quarry_query::field_sort::SortKey {
                    field: (*field).to_owned(),
                    descending: *descending,
                })
                .collect(),
        };
        for case in &scenario.cases {
            let mut want: Vec<(Vec<SortKey>, Key)> = corpus
                .events
                .iter()
                .filter(|e| case.query.matches(e))
                .map(|e| (keys.iter().map(|(field, _)| sort_key(e, field)).collect(), e.key()))
                .collect();
            want.sort_by(|a, b| model_sort_order(a, b, &directions));
            let text = case.query.render();
            let mut got: Vec<Key> = Vec::new();
            let mut after = None;
            loop {
                let request = quarry_query::SearchRequest {
                    query: text.clone(),
                    sort_field: Some(sort.clone()),
                    sort_after: after.clone(),
                    limit: page,
                    count: true,
                    ..Default::default()
                };
                let response = corpus.searcher.execute(&request).unwrap();
                prop_assert_eq!(response.count, Some(want.len() as u64), "count of {}", text);
                for hit in &response.hits {
                    let cursor = hit.sort_cursor.clone().unwrap();
                    got.push((hit.time, cursor.block_id, cursor.doc));
                    after = Some(cursor);
                }
                if response.hits.len() < page || got.len() > want.len() {
                    break;
                }
            }
            let want_keys: Vec<Key> = want.iter().map(|(_, k)| *k).collect();
            prop_assert_eq!(got, want_keys, "{} sorted by {:?}, pages of {}", text, keys, page);
        }
    }
}

#[test]
fn term_ranges_at_their_bounds() {
    let events: Vec<TestEvent> = ["alpha", "beta", "Beta gamma", "delta", "error", "timeout"]
        .into_iter()
        .enumerate()
        .map(|(i, msg)| TestEvent {
            time: i as i64 * 10,
            fields: vec![("msg", Value::Str(msg.to_owned()))],
        })
        .collect();
    let mut corpus = build_blocks(vec![(1, events[..3].to_vec()), (2, events[3..].to_vec())]);
    let has = |tokens: &'static [&'static str]| {
        move |e: &ModelEvent| tokens.iter().any(|t| e.tokens["msg"].contains(*t))
    };
    let cases: &[(&str, &'static [&'static str])] = &[
        ("msg:[beta TO delta]", &["beta", "delta"]),
        ("msg:{beta TO delta]", &["delta"]),
        ("msg:[beta TO delta}", &["beta"]),
        ("msg:{beta TO delta}", &[]),
        ("msg:[BETA TO Delta]", &["beta", "delta"]),
        ("msg:>error", &["gamma", "timeout"]),
        ("msg:>=error", &["error", "gamma", "timeout"]),
        ("msg:<beta", &["alpha"]),
        ("msg:<=beta", &["alpha", "beta"]),
        ("msg:[* TO b]", &["alpha"]),
        ("msg:[t TO *]", &["timeout"]),
        ("msg:[z TO a]", &[]),
        ("nosuch:[a TO z]", &[]),
    ];
    for &(text, tokens) in cases {
        check_text(&mut corpus, text, has(tokens));
    }
}

/// Leading wildcards stream the field's keys and test their longest literal first: every
/// token holding it in the right place, and no other.
#[test]
fn leading_wildcards_find_every_token() {
    let words = [
        "timeout", "timeouts", "out", "outage", "layout", "Timeout", "about", "alpha", "ou",
    ];
    let events: Vec<TestEvent> = words
        .iter()
        .enumerate()
        .map(|(i, msg)| TestEvent {
            time: i as i64 * 10,
            fields: vec![
                ("msg", Value::Str((*msg).to_owned())),
                ("level", Value::Str("info".to_owned())),
            ],
        })
        .collect();
    let mut corpus = build_blocks(vec![(1, events[..4].to_vec()), (2, events[4..].to_vec())]);
    for pattern in [
        "*ou*", "*out", "*meou*", "*ou", "*o?t", "*ou*s", "*OUT*", "*zz*", "*ut*a*",
    ] {
        let text = format!("msg:{pattern}");
        check_text(&mut corpus, &text, |e| {
            e.tokens["msg"].iter().any(|t| pattern_matches(pattern, t))
        });
    }
}

#[test]
fn empty_time_ranges_match_nothing() {
    let events: Vec<TestEvent> = (0..6).map(|t| latency_event(t * 10, None)).collect();
    let mut corpus = build_blocks(vec![(1, events)]);
    let time = |t: i64| format_time(t);
    let (a, b) = (time(30), time(20));
    check_text(&mut corpus, &format!("_time:[{a} TO {b}]"), |_| false);
    check_text(&mut corpus, &format!("_time:{{{a} TO {a}}}"), |_| false);
    check_text(
        &mut corpus,
        &format!("msg:alpha AND _time:[{a} TO {b}]"),
        |_| false,
    );
    check_text(&mut corpus, &format!("NOT _time:[{a} TO {b}]"), |_| true);
    check_text(
        &mut corpus,
        &format!("msg:alpha AND NOT _time:{{{a} TO {a}]"),
        |_| true,
    );
}

#[test]
fn missing_fields() {
    let events = vec![
        latency_event(1, Some(Value::I64(1))),
        event(2, vec![("level", Value::Str("info".into()))]),
        latency_event(2, None),
    ];
    let mut corpus = build_blocks(vec![(1, events)]);
    for text in [
        "nosuch:[0 TO 10]",
        "nosuch:>0",
        "nosuch:<=0",
        "_exists_:nosuch",
        "level:[* TO *]",
        "msg:>0",
    ] {
        check_text(&mut corpus, text, |_| false);
    }
    check_text(&mut corpus, "NOT _exists_:nosuch", |_| true);
    check_text(&mut corpus, "NOT nosuch:<5", |_| true);
    check_text(&mut corpus, "_exists_:_time", |_| true);
    check_text(&mut corpus, "_exists_:level", |e| {
        e.value("level").is_some()
    });
}

#[test]
fn i64_extreme_bounds() {
    let values = [i64::MIN, i64::MIN + 1, -1, 0, 1, i64::MAX - 1, i64::MAX];
    // Many copies, so that both the numeric terms and the column scan answer (see
    // `zeros_nan_and_infinities`).
    let events: Vec<TestEvent> = (0..COPIES)
        .flat_map(|_| values.iter().copied())
        .enumerate()
        .map(|(i, v)| latency_event(i as i64, Some(Value::I64(v))))
        .collect();
    let half = events.len() / 2;
    let mut corpus = build_blocks(vec![
        (1, events[..half].to_vec()),
        (2, events[half..].to_vec()),
    ]);
    let is = |want: &'static [i64]| {
        move |e: &ModelEvent| latency_is(e, |v| matches!(v, Value::I64(x) if want.contains(x)))
    };
    let cases: &[(&str, &'static [i64])] = &[
        (
            "latency:[-9223372036854775808 TO 9223372036854775807]",
            &[i64::MIN, i64::MIN + 1, -1, 0, 1, i64::MAX - 1, i64::MAX],
        ),
        (
            "latency:{-9223372036854775808 TO 9223372036854775807}",
            &[i64::MIN + 1, -1, 0, 1, i64::MAX - 1],
        ),
        ("latency:>9223372036854775807", &[]),
        ("latency:>=9223372036854775807", &[i64::MAX]),
        ("latency:>9223372036854775806", &[i64::MAX]),
        ("latency:<-9223372036854775808", &[]),
        ("latency:<=-9223372036854775808", &[i64::MIN]),
        ("latency:<-9223372036854775807", &[i64::MIN]),
        // Floats past the ends of i64.
        ("latency:>1e19", &[]),
        ("latency:<-1e19", &[]),
        // Past the ends of i128 too (`as` saturates; the +1 of an open bound must not wrap).
        ("latency:>1e300", &[]),
        ("latency:<-1e300", &[]),
        (
            "latency:{-1e300 TO 1e300}",
            &[i64::MIN, i64::MIN + 1, -1, 0, 1, i64::MAX - 1, i64::MAX],
        ),
        (
            "latency:<1e300",
            &[i64::MIN, i64::MIN + 1, -1, 0, 1, i64::MAX - 1, i64::MAX],
        ),
        ("latency:[-0.5 TO 0.5]", &[0]),
        ("latency:{-1 TO 1}", &[0]),
    ];
    for &(text, want) in cases {
        check_text(&mut corpus, text, is(want));
    }
}

#[test]
fn blocks_outside_the_time_range() {
    let block = |start: i64| -> Vec<TestEvent> {
        (0..10)
            .map(|t| latency_event(start + t, Some(Value::I64(t))))
            .collect()
    };
    let mut corpus = build_blocks(vec![(1, block(0)), (2, block(100)), (3, block(50))]);
    let time = |t: i64| format_time(t);
    check_text(
        &mut corpus,
        &format!("_time:[{} TO {}]", time(20), time(40)),
        |_| false,
    );
    check_text(&mut corpus, &format!("_time:>{}", time(200)), |_| false);
    check_text(
        &mut corpus,
        &format!("_time:[{} TO {}]", time(0), time(10)),
        |e| e.time < 10,
    );
    check_text(
        &mut corpus,
        &format!("latency:>5 AND _time:[{} TO {}}}", time(100), time(105)),
        |e| (100..105).contains(&e.time) && e.time - 100 > 5,
    );
    check_text(
        &mut corpus,
        &format!("latency:<3 AND _time:>={}", time(50)),
        |e| e.time >= 50 && e.time % 50 < 3,
    );
    // Programmatic bounds that miss every block.
    let query = corpus.searcher.parse("*").unwrap().within(20, 40);
    for (_, optimizations) in settings() {
        corpus.searcher.set_optimizations(optimizations);
        assert_eq!(corpus.searcher.count(&query).unwrap(), 0);
        assert_eq!(corpus.searcher.histogram(&query, 3).unwrap(), vec![]);
        for sort in [SortOrder::TimeAsc, SortOrder::TimeDesc] {
            let request = HitsRequest {
                limit: 5,
                sort,
                ..Default::default()
            };
            assert!(corpus
                .searcher
                .search(&query, &request)
                .unwrap()
                .hits
                .is_empty());
        }
    }
}

#[test]
fn cursor_at_the_last_hit_gives_an_empty_page() {
    let events: Vec<TestEvent> = [3, 1, 4, 1, 5, 9, 2, 6]
        .into_iter()
        .map(|t| latency_event(t, Some(Value::I64(t))))
        .collect();
    let mut corpus = build_blocks(vec![(2, events[..4].to_vec()), (1, events[4..].to_vec())]);
    for (name, optimizations) in settings() {
        corpus.searcher.set_optimizations(optimizations);
        for text in ["*", "latency:>=4"] {
            let query = corpus.searcher.parse(text).unwrap();
            for sort in [SortOrder::TimeAsc, SortOrder::TimeDesc] {
                let all = HitsRequest {
                    limit: 100,
                    sort,
                    ..Default::default()
                };
                let hits = corpus.searcher.search(&query, &all).unwrap().hits;
                let last = corpus.searcher.cursor_of(hits.last().unwrap());
                let next = HitsRequest {
                    limit: 10,
                    sort,
                    after: Some(last),
                    ..Default::default()
                };
                let page = corpus.searcher.search(&query, &next).unwrap().hits;
                assert!(page.is_empty(), "{text} {sort:?} with {name}: {page:?}");
            }
        }
    }
}

/// Paging in time order when another block holds events of the cursor's time: block 1 has
/// times [5, 5, 6], block 2 [5]; the order is (5,1,0) (5,1,1) (5,2,0) (6,1,2). After (5,2,0),
/// block 1's docs at time 5 are before the cursor; reading them as the page's candidates
/// used to crowd out (6,1,2), which was then never returned.
#[test]
fn head_pages_across_blocks_with_equal_times() {
    let events = |times: &[i64]| -> Vec<TestEvent> {
        times.iter().map(|&t| latency_event(t, None)).collect()
    };
    let mut corpus = build_blocks(vec![(1, events(&[5, 5, 6])), (2, events(&[5]))]);
    check_text(&mut corpus, "*", |_| true);
}

/// The tail's mirror image: block 1 has [5], block 2 [4, 5]; the order newest first is
/// (5,2,1) (5,1,0) (4,2,0). After (5,1,0), block 2's newest doc is at the cursor's time and
/// already returned; it used to crowd out (4,2,0).
#[test]
fn tail_pages_across_blocks_with_equal_times() {
    let events = |times: &[i64]| -> Vec<TestEvent> {
        times.iter().map(|&t| latency_event(t, None)).collect()
    };
    let mut corpus = build_blocks(vec![(1, events(&[5])), (2, events(&[4, 5]))]);
    check_text(&mut corpus, "*", |_| true);
}

/// A u64 above `i64::MAX` is compared with the bounds exactly, though its terms are rounded
/// to f64: 9223372036854775808 (2^63) is `> 9223372036854775807`, and of 10223372036854775800
/// and its next two neighbours (one f64) a range finds exactly the ones inside it.
#[test]
fn u64_above_i64_max_in_ranges() {
    let values = [
        i64::MAX as u64 - 1,
        i64::MAX as u64,
        1 << 63,
        (1 << 63) + 1,
        u64::MAX,
        10223372036854775800,
        10223372036854775801,
        10223372036854775802,
    ];
    let events: Vec<TestEvent> = values
        .iter()
        .enumerate()
        .map(|(i, &v)| event(i as i64, vec![("bytes", Value::U64(v))]))
        .collect();
    let mut corpus = build_blocks(vec![(1, events)]);
    let is = |want: &'static [u64]| {
        move |e: &ModelEvent| match e.value("bytes") {
            Some(Value::U64(x)) => want.contains(x),
            _ => false,
        }
    };
    check_text(
        &mut corpus,
        "bytes:>9223372036854775807",
        is(&[
            1 << 63,
            (1 << 63) + 1,
            u64::MAX,
            10223372036854775800,
            10223372036854775801,
            10223372036854775802,
        ]),
    );
    check_text(
        &mut corpus,
        "bytes:<=9223372036854775807",
        is(&[i64::MAX as u64 - 1, i64::MAX as u64]),
    );
    check_text(
        &mut corpus,
        "bytes:[9223372036854775806 TO 9223372036854775807]",
        is(&[i64::MAX as u64 - 1, i64::MAX as u64]),
    );
    check_text(
        &mut corpus,
        "bytes:[10223372036854775801 TO 10223372036854775802]",
        is(&[10223372036854775801, 10223372036854775802]),
    );
    check_text(
        &mut corpus,
        "bytes:>10223372036854775800",
        is(&[10223372036854775801, 10223372036854775802, u64::MAX]),
    );
    // u64::MAX as a bound is exact (the nearest f64, 2^64, is above it): excluded, it leaves
    // out u64::MAX itself.
    check_text(
        &mut corpus,
        "bytes:{665 TO 18446744073709551615}",
        is(&[
            i64::MAX as u64 - 1,
            i64::MAX as u64,
            1 << 63,
            (1 << 63) + 1,
            10223372036854775800,
            10223372036854775801,
            10223372036854775802,
        ]),
    );
}

/// Floats at the edges: both zeros are 0 (IEEE equal, and one key in the numeric terms),
/// NaN is in no range but exists, infinities are beyond every finite bound.
#[test]
fn zeros_nan_and_infinities() {
    let ratios = [-0.0, 0.0, 0.5, f64::NAN, f64::INFINITY, f64::NEG_INFINITY];
    // Many copies of each value: ranges then take the numeric terms when `range_index` is
    // on (few terms, many docs each) and scan the column when it is off.
    let events: Vec<TestEvent> = (0..COPIES)
        .flat_map(|copy| ratios.iter().map(move |&v| (copy, v)))
        .enumerate()
        .map(|(i, (_, v))| event(i as i64, vec![("ratio", Value::F64(v))]))
        .collect();
    let half = events.len() / 2;
    let mut corpus = build_blocks(vec![
        (1, events[..half].to_vec()),
        (2, events[half..].to_vec()),
    ]);
    // By bits: -0.0 and 0.0 are told apart, NaN is found.
    let is = |want: &'static [f64]| {
        move |e: &ModelEvent| match e.value("ratio") {
            Some(Value::F64(x)) => want.iter().any(|w| w.to_bits() == x.to_bits()),
            _ => false,
        }
    };
    let cases: &[(&str, &'static [f64])] = &[
        ("ratio:[0 TO 1]", &[-0.0, 0.0, 0.5]),
        ("ratio:[-0.0 TO 0.0]", &[-0.0, 0.0]),
        ("ratio:[0.0 TO -0.0]", &[-0.0, 0.0]),
        ("ratio:[-0 TO 0]", &[-0.0, 0.0]),
        ("ratio:{-1 TO 0}", &[]),
        ("ratio:{0 TO 1}", &[0.5]),
        ("ratio:{-0.0 TO 1]", &[0.5]),
        ("ratio:<0", &[f64::NEG_INFINITY]),
        ("ratio:<=-0.0", &[-0.0, 0.0, f64::NEG_INFINITY]),
        ("ratio:>0", &[0.5, f64::INFINITY]),
        ("ratio:>1e300", &[f64::INFINITY]),
        ("ratio:<-1e300", &[f64::NEG_INFINITY]),
        (
            "ratio:[* TO *]",
            &[-0.0, 0.0, 0.5, f64::INFINITY, f64::NEG_INFINITY],
        ),
        (
            "_exists_:ratio",
            &[-0.0, 0.0, 0.5, f64::NAN, f64::INFINITY, f64::NEG_INFINITY],
        ),
        ("NOT ratio:[* TO *]", &[f64::NAN]),
    ];
    for &(text, want) in cases {
        check_text(&mut corpus, text, is(want));
    }
}

/// Events at the ends of time (all but `i64::MAX`, see `event_at_i64_max_time`).
#[test]
fn events_at_the_ends_of_time() {
    let times = [i64::MIN, i64::MIN + 1, -1, 0, 1, i64::MAX - 1];
    let events: Vec<TestEvent> = times.iter().map(|&t| latency_event(t, None)).collect();
    let mut corpus = build_blocks(vec![(1, events[..3].to_vec()), (2, events[3..].to_vec())]);
    for text in ["*", "_time:[* TO *]", "_exists_:_time"] {
        check_ends_of_time(&mut corpus, text, &times);
    }
    check_ends_of_time(&mut corpus, "_time:>=1970-01-01T00:00:00Z", &times[3..]);
    check_ends_of_time(&mut corpus, "_time:<1970-01-01T00:00:00Z", &times[..3]);
}

/// Count, tail, head and histogram (by 2^62 ns, so that it has few buckets) of `text` are
/// the events at `times`.
fn check_ends_of_time(corpus: &mut Corpus, text: &str, times: &[i64]) {
    let interval = 1i64 << 62;
    let want_histogram = model_histogram(times.iter().copied(), interval);
    for (name, optimizations) in settings() {
        corpus.searcher.set_optimizations(optimizations);
        let searcher = &corpus.searcher;
        let query = searcher.parse(text).unwrap();
        let context = format!("{text} with {name}");
        assert_eq!(
            searcher.count(&query).unwrap(),
            times.len() as u64,
            "{context}"
        );
        for sort in [SortOrder::TimeAsc, SortOrder::TimeDesc] {
            let request = HitsRequest {
                limit: 3,
                sort,
                ..Default::default()
            };
            let hits = searcher.search(&query, &request).unwrap().hits;
            let got: Vec<i64> = hits.iter().map(|h| h.time).collect();
            let want: Vec<i64> = match sort {
                SortOrder::TimeAsc => times.iter().take(3).copied().collect(),
                _ => times.iter().rev().take(3).copied().collect(),
            };
            assert_eq!(got, want, "{sort:?}, {context}");
        }
        let histogram = searcher.histogram(&query, interval).unwrap();
        assert_eq!(histogram, want_histogram, "{context}");
        let specs = [AggSpec::parse("count").unwrap()];
        let buckets = searcher
            .aggregate_histogram(&query, interval, &specs)
            .unwrap();
        let got: Vec<(i64, u64)> = buckets.iter().map(|(s, c, _)| (*s, *c)).collect();
        assert_eq!(got, want_histogram, "{context}");
    }
}

/// An event at `_time` = `i64::MAX` is counted by `*` but missing from its tail and
/// histogram: `*` has time bounds `[i64::MIN, i64::MAX)` (`Query::time_bounds`), half-open,
/// and the doc range of a block stops before `i64::MAX`; `_time:[* TO *]` and
/// `_time:>=...` miss it too.
#[test]
fn event_at_i64_max_time() {
    let times = [0, 1, i64::MAX];
    let events: Vec<TestEvent> = times.iter().map(|&t| latency_event(t, None)).collect();
    let mut corpus = build_blocks(vec![(1, events[..1].to_vec()), (2, events[1..].to_vec())]);
    for text in ["*", "_time:[* TO *]", "_time:>=1970-01-01T00:00:00Z"] {
        check_ends_of_time(&mut corpus, text, &times);
    }
}

/// A bucket whose start is below `i64::MIN` (the bucket of `i64::MIN` by 7 ns starts at
/// `i64::MIN - 1`): `histogram` saturates the start, `aggregate_histogram` must too (it
/// multiplied unchecked: an overflow panic in debug builds, a wrapped start in release).
#[test]
fn bucket_start_below_i64_min() {
    let mut corpus = build_blocks(vec![(1, vec![latency_event(i64::MIN, None)])]);
    let all = corpus.searcher.parse("*").unwrap();
    for (name, optimizations) in settings() {
        corpus.searcher.set_optimizations(optimizations);
        let histogram = corpus.searcher.histogram(&all, 7).unwrap();
        assert_eq!(histogram, vec![(i64::MIN, 1)], "{name}");
        let specs = [AggSpec::parse("count").unwrap()];
        let buckets = corpus
            .searcher
            .aggregate_histogram(&all, 7, &specs)
            .unwrap();
        let got: Vec<(i64, u64)> = buckets.iter().map(|(s, c, _)| (*s, *c)).collect();
        assert_eq!(got, histogram, "{name}");
    }
}
