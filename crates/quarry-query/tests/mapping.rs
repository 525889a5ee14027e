//! Property test of field mappings: random events indexed under a random mapping (text with
//! each analyzer, keyword, number, not indexed, not stored), in one to three blocks, merged
//! or not; random queries compared against a brute-force model of what each mapping means
//! (the model reads the events and the mapping, never the planned query): which docs match,
//! which queries are refused, and which fields a hit shows.

use proptest::prelude::*;
use quarry_format::{BlockReader, Value};
use quarry_index::merge::{merge_readers, MergePolicy};
use quarry_index::{Analyzer, Progress, Schema, SegmentBuilder};
use quarry_query::{HitsRequest, Searcher, SortOrder};
use quarry_store::mapping::{AnalyzerName, FieldMapping, FieldType, Mapping};
use std::collections::BTreeSet;
use std::sync::Arc;

const WORDS: &[&str] = &["alpha", "Beta", "gamma", "DELTA", "eps", "zeta"];
const HOSTS: &[&str] = &["web-1", "Web-1", "db", "cache-west-1"];
const FIELDS: &[&str] = &["a", "msg", "host", "tags", "n"];
/// Prefixes of whole values: of short ones, and of `msg`'s, often longer than
/// `EXACT_TERM_LEN` (no exact term: read from the column).
const PREFIXES: &[&str] = &[
    "alpha",
    "alpha Beta",
    "Beta gamma DELTA",
    "Web",
    "web-",
    "2",
    "eps zeta ",
];

#[derive(Debug, Clone)]
struct TestEvent {
    time: i64,
    fields: Vec<(String, Value)>,
}

fn words(range: std::ops::Range<usize>) -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(WORDS), range).prop_map(|w| w.join(" "))
}

fn event_strategy() -> impl Strategy<Value = TestEvent> {
    let host = prop::sample::select(HOSTS).prop_map(str::to_owned);
    (
        0i64..40,
        prop::option::of(words(0..5)),
        // Often longer than EXACT_TERM_LEN (32 bytes).
        prop::option::of(words(3..9)),
        prop::option::of(prop_oneof![
            3 => host.clone().prop_map(Value::Str),
            1 => (0i64..3).prop_map(Value::I64),
        ]),
        prop::option::of(prop::collection::vec(host, 1..3)),
        prop::option::of(prop_oneof![
            3 => (0i64..4).prop_map(Value::I64),
            1 => prop::sample::select(&["2", "two"][..]).prop_map(|s| Value::Str(s.to_owned())),
        ]),
    )
        .prop_map(|(time, a, msg, host, tags, n)| {
            let mut fields = Vec::new();
            if let Some(a) = a {
                fields.push(("a".to_owned(), Value::Str(a)));
            }
            if let Some(msg) = msg {
                fields.push(("msg".to_owned(), Value::Str(msg)));
            }
            if let Some(host) = host {
                fields.push(("host".to_owned(), host));
            }
            if let Some(tags) = tags {
                let json = serde_json::to_string(&tags).unwrap();
                fields.push(("tags".to_owned(), Value::Json(json)));
            }
            if let Some(n) = n {
                fields.push(("n".to_owned(), n));
            }
            TestEvent { time, fields }
        })
}

fn rules_strategy() -> impl Strategy<Value = Option<FieldMapping>> {
    let analyzer = prop::sample::select(&AnalyzerName::ALL[..]);
    prop_oneof![
        2 => Just(None),
        3 => (analyzer, any::<bool>(), any::<bool>()).prop_map(|(analyzer, norms, stored)| {
            Some(FieldMapping { analyzer, norms, stored, ..FieldMapping::new(FieldType::Text) })
        }),
        2 => (any::<bool>(), any::<bool>()).prop_map(|(stored, doc_values)| {
            Some(FieldMapping { stored, doc_values, ..FieldMapping::new(FieldType::Keyword) })
        }),
        1 => any::<bool>().prop_map(|stored| {
            Some(FieldMapping { stored, ..FieldMapping::new(FieldType::Number) })
        }),
        1 => any::<bool>().prop_map(|stored| {
            Some(FieldMapping { index: false, stored, ..FieldMapping::new(FieldType::Text) })
        }),
    ]
}

fn mapping_strategy() -> impl Strategy<Value = Mapping> {
    (
        prop::collection::vec(rules_strategy(), FIELDS.len()),
        prop::collection::vec(any::<bool>(), FIELDS.len()),
    )
        .prop_map(|(rules, search)| {
            let mut mapping = Mapping::default();
            for (name, rules) in FIELDS.iter().zip(rules) {
                if let Some(rules) = rules {
                    mapping.fields.insert((*name).to_owned(), rules);
                }
            }
            // Default search fields: some of the fields that may hold text, when any is picked.
            for (name, pick) in FIELDS.iter().zip(search) {
                let text = mapping
                    .rules(name)
                    .is_none_or(|r| r.ty == FieldType::Text && r.index);
                if pick && text && name.len() % 2 == 1 {
                    mapping.default_search_fields.push((*name).to_owned());
                }
            }
            mapping
        })
}

#[derive(Debug, Clone)]
enum Leaf {
    /// A bare word or phrase.
    Bare(String),
    /// `field:"text"` (a word, or several as a phrase).
    Field(&'static str, String),
    /// `field:="value"`.
    Exact(&'static str, String),
    /// `_exists_:field`.
    Exists(&'static str),
    /// `field.keyword:prefix*`: the field's whole values starting with the prefix, case kept
    /// (Elasticsearch's `prefix` on a `.keyword` view), however long they are.
    WholePrefix(&'static str, &'static str),
}

#[derive(Debug, Clone)]
enum Q {
    Leaf(Leaf),
    Bool(Vec<(&'static str, Q)>),
}

fn leaf_strategy() -> impl Strategy<Value = Leaf> {
    let text = prop_oneof![
        prop::sample::select(WORDS).prop_map(str::to_owned),
        prop::sample::select(HOSTS).prop_map(str::to_owned),
        words(2..3),
        prop::sample::select(&["2", "0", "two"][..]).prop_map(str::to_owned),
    ];
    let field = prop::sample::select(FIELDS);
    prop_oneof![
        2 => text.clone().prop_map(Leaf::Bare),
        4 => (field.clone(), text.clone()).prop_map(|(f, t)| Leaf::Field(f, t)),
        2 => (field.clone(), prop_oneof![text, words(3..9)]).prop_map(|(f, t)| Leaf::Exact(f, t)),
        1 => field.clone().prop_map(Leaf::Exists),
        2 => (field, prop::sample::select(PREFIXES)).prop_map(|(f, p)| Leaf::WholePrefix(f, p)),
    ]
}

fn query_strategy() -> impl Strategy<Value = Q> {
    leaf_strategy()
        .prop_map(Q::Leaf)
        .prop_recursive(2, 8, 3, |inner| {
            prop::collection::vec((prop::sample::select(&["", "+", "-"][..]), inner), 1..4)
                .prop_map(Q::Bool)
        })
}

fn render(q: &Q) -> String {
    let quoted = |t: &str| format!("\"{t}\"");
    match q {
        Q::Leaf(Leaf::Bare(t)) => quoted(t),
        Q::Leaf(Leaf::Field(f, t)) => format!("{f}:{}", quoted(t)),
        Q::Leaf(Leaf::Exact(f, t)) => format!("{f}:={}", quoted(t)),
        Q::Leaf(Leaf::Exists(f)) => format!("_exists_:{f}"),
        Q::Leaf(Leaf::WholePrefix(f, p)) => format!("{f}.keyword:{}*", p.replace(' ', "\\ ")),
        Q::Bool(clauses) => clauses
            .iter()
            .map(|(op, q)| format!("{op}({})", render(q)))
            .collect::<Vec<_>>()
            .join(" "),
    }
}

/// What a query means for one doc, from the events and the mapping alone.
struct Model<'a> {
    schema: &'a Schema,
    events: &'a [TestEvent],
    text_fields: Vec<String>,
}

/// A leaf or query's meaning: `None` for a clause that analyzes to nothing (dropped from a
/// boolean, as the query parser drops it), else the set of matching docs.
type Meaning = Option<BTreeSet<usize>>;

impl Model<'_> {
    fn value(&self, doc: usize, field: &str) -> Option<&Value> {
        let event = &self.events[doc];
        event
            .fields
            .iter()
            .find(|(n, _)| n == field)
            .map(|(_, v)| v)
    }

    fn text_of(value: &Value) -> String {
        quarry_index::event::value_text(value)
    }

    /// Keyword items: an array's items, else the value's text.
    fn items(value: &Value) -> Vec<String> {
        match value {
            Value::Json(json) => serde_json::from_str::<Vec<String>>(json).unwrap(),
            other => vec![Self::text_of(other)],
        }
    }

    /// A number field's values: numbers, and strings that spell one (Elasticsearch's
    /// `coerce`, which number fields follow).
    fn numbers(value: &Value) -> Vec<f64> {
        match value {
            Value::I64(v) => vec![*v as f64],
            Value::Str(text) => text
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite())
                .into_iter()
                .collect(),
            _ => Vec::new(),
        }
    }

    /// Whether `needle`'s tokens appear in `haystack`'s as a phrase (positions kept).
    fn phrase_in(analyzer: &Analyzer, haystack: &str, needle: &[(u32, String)]) -> bool {
        let tokens = analyzer.tokens(haystack);
        let (first_offset, first) = &needle[0];
        tokens.iter().any(|(p, t)| {
            t == first
                && p >= first_offset
                && needle.iter().all(|(offset, term)| {
                    tokens
                        .iter()
                        .any(|(q, u)| *q == p - first_offset + offset && u == term)
                })
        })
    }

    fn docs(&self, test: impl Fn(usize) -> bool) -> BTreeSet<usize> {
        (0..self.events.len()).filter(|&d| test(d)).collect()
    }

    fn field_word(&self, field: &str, text: &str) -> Result<Meaning, ()> {
        let rules = self.schema.rules(field);
        if rules.is_some_and(|r| !r.index) {
            return Err(());
        }
        match rules.map(|r| r.ty) {
            Some(FieldType::Keyword) => Ok(Some(self.docs(|d| {
                self.value(d, field)
                    .is_some_and(|v| Self::items(v).iter().any(|i| i == text))
            }))),
            Some(FieldType::Number) => {
                let Ok(number) = text.parse::<f64>() else {
                    return Err(());
                };
                Ok(Some(self.docs(|d| {
                    self.value(d, field)
                        .is_some_and(|v| Self::numbers(v).contains(&number))
                })))
            }
            Some(
                FieldType::Boolean
                | FieldType::Date
                | FieldType::DateNanos
                | FieldType::Ip
                | FieldType::Binary
                | FieldType::GeoPoint,
            ) => unreachable!("no such fields here (tests/typed_fields.rs has dates and ips)"),
            Some(FieldType::Text) | None => {
                let analyzer = self.schema.analyzer_for(field);
                let needle = analyzer.tokens(text);
                if needle.is_empty() {
                    return Ok(None);
                }
                // An array's items are apart (a gap of positions between them): a phrase is
                // within one item.
                Ok(Some(self.docs(|d| {
                    self.value(d, field).is_some_and(|v| {
                        Self::items(v)
                            .iter()
                            .any(|item| Self::phrase_in(analyzer, item, &needle))
                    })
                })))
            }
        }
    }

    fn eval(&self, q: &Q) -> Result<Meaning, ()> {
        match q {
            Q::Leaf(Leaf::Field(field, text)) => self.field_word(field, text),
            Q::Leaf(Leaf::Bare(text)) => {
                let mut any: Meaning = None;
                for field in &self.text_fields {
                    if let Some(docs) = self.field_word(field, text)? {
                        any.get_or_insert_with(BTreeSet::new).extend(docs);
                    }
                }
                Ok(any)
            }
            Q::Leaf(Leaf::Exists(field)) => {
                if self
                    .schema
                    .rules(field)
                    .is_some_and(|r| !r.index && !r.stored)
                {
                    return Err(());
                }
                Ok(Some(self.docs(|d| self.value(d, field).is_some())))
            }
            Q::Leaf(Leaf::Exact(field, value)) => {
                let rules = self.schema.rules(field);
                if rules.is_some_and(|r| !r.index) {
                    return Err(());
                }
                // A number's whole value is the number.
                if rules.is_some_and(|r| r.ty == FieldType::Number) {
                    return self.field_word(field, value);
                }
                let keyword = rules.is_some_and(|r| r.ty == FieldType::Keyword);
                let long = value.len() > quarry_format::limits::EXACT_TERM_LEN;
                if long && !keyword && rules.is_some_and(|r| !r.stored) {
                    return Err(());
                }
                // An array's items are whole values too, of any field.
                Ok(Some(self.docs(|d| match self.value(d, field) {
                    Some(v @ Value::Json(_)) => Self::items(v).iter().any(|i| i == value),
                    Some(v) if keyword => Self::items(v).iter().any(|i| i == value),
                    Some(Value::Str(s)) => s == value,
                    _ => false,
                })))
            }
            Q::Leaf(Leaf::WholePrefix(field, prefix)) => {
                let rules = self.schema.rules(field);
                let starts = |text: &String| text.starts_with(prefix);
                match rules.map(|r| (r.ty, r.index, r.stored)) {
                    Some((_, false, _) | (FieldType::Number, ..)) => Err(()),
                    Some((FieldType::Keyword, ..)) => Ok(Some(self.docs(|d| {
                        self.value(d, field)
                            .is_some_and(|v| Self::items(v).iter().any(starts))
                    }))),
                    // The longer values are read from the stored column.
                    Some((FieldType::Text, _, false)) => Err(()),
                    _ => Ok(Some(self.docs(|d| match self.value(d, field) {
                        Some(Value::Str(s)) => s.starts_with(prefix),
                        Some(v @ Value::Json(_)) => Self::items(v).iter().any(starts),
                        _ => false,
                    }))),
                }
            }
            Q::Bool(clauses) => {
                let (mut must, mut should, mut must_not) = (Vec::new(), Vec::new(), Vec::new());
                for (op, clause) in clauses {
                    if let Some(docs) = self.eval(clause)? {
                        match *op {
                            "+" => must.push(docs),
                            "-" => must_not.push(docs),
                            _ => should.push(docs),
                        }
                    }
                }
                if must.is_empty() && should.is_empty() && must_not.is_empty() {
                    return Ok(None);
                }
                Ok(Some(self.docs(|d| {
                    !must_not.iter().any(|s| s.contains(&d))
                        && must.iter().all(|s| s.contains(&d))
                        && (!must.is_empty()
                            || !must_not.is_empty() && should.is_empty()
                            || should.iter().any(|s| s.contains(&d)))
                })))
            }
        }
    }
}

/// Builds the blocks (each split a block; `merge` merges them into one by copying), returns
/// the searcher and the events in the searcher's doc order.
fn build(
    events: &[TestEvent],
    splits: &[usize],
    merge: bool,
    schema: &Arc<Schema>,
    dir: &std::path::Path,
) -> (Searcher, Vec<TestEvent>) {
    let mut cuts: Vec<usize> = splits.iter().map(|&s| s % (events.len() + 1)).collect();
    cuts.push(events.len());
    cuts.sort_unstable();
    let mut readers = Vec::new();
    let mut parts = Vec::new();
    let mut start = 0;
    for (i, &end) in cuts.iter().enumerate() {
        if end <= start {
            continue;
        }
        let mut segment = SegmentBuilder::with_schema(schema.clone());
        for event in &events[start..end] {
            segment.add_event(
                event.time,
                event.fields.iter().map(|(k, v)| (k.as_str(), v)),
            );
        }
        let path = dir.join(format!("{i}.qblk"));
        segment.write_block(&path).unwrap();
        readers.push(BlockReader::open(&path).unwrap());
        parts.push((path, events[start..end].to_vec()));
        start = end;
    }
    let mut ordered_parts = parts.clone();
    if merge && readers.len() > 1 {
        let sizes: Vec<(u64, u64)> = readers
            .iter()
            .map(|r| (1, u64::from(r.doc_count())))
            .collect();
        let path = dir.join("merged.qblk");
        merge_readers(
            &readers,
            &sizes,
            schema.clone(),
            &MergePolicy::default(),
            &Progress::default(),
            |input| Ok(quarry_store::write_block_file(&path, input)?),
        )
        .unwrap();
        // The merge orders docs by time, ties by input order.
        let mut all: Vec<TestEvent> = Vec::new();
        for (_, part) in &parts {
            let mut sorted = part.clone();
            sorted.sort_by_key(|e| e.time);
            all.extend(sorted);
        }
        all.sort_by_key(|e| e.time);
        readers = vec![BlockReader::open(&path).unwrap()];
        ordered_parts = vec![(path, all)];
    }
    let searcher = Searcher::new(readers, Analyzer::default()).with_schema(schema.clone());
    let mut ordered = Vec::new();
    for block in searcher.blocks() {
        let (_, part) = ordered_parts
            .iter()
            .find(|(p, _)| p == block.path())
            .unwrap();
        let mut sorted = part.clone();
        sorted.sort_by_key(|e| e.time);
        ordered.extend(sorted);
    }
    (searcher, ordered)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn mapped_fields_search_as_the_model_says(
        mapping in mapping_strategy(),
        events in prop::collection::vec(event_strategy(), 1..120),
        splits in prop::collection::vec(any::<usize>(), 0..3),
        merge in any::<bool>(),
        queries in prop::collection::vec(query_strategy(), 1..8),
    ) {
        let schema = Arc::new(Schema::new(Arc::new(Analyzer::default()), mapping.clone()));
        // Ingest refuses events whose values do not fit the mapping (a number field given
        // "two", though "2" is read as 2); the rest are indexed.
        let events: Vec<TestEvent> = events
            .into_iter()
            .filter(|e| {
                let event = quarry_index::Event { time: e.time, fields: e.fields.clone() };
                let fits = schema.check(&event).is_ok();
                let expected = e.fields.iter().all(|(name, value)| {
                    !mapping.rules(name).is_some_and(|r| r.index && r.ty == FieldType::Number)
                        || !Model::numbers(value).is_empty()
                });
                assert_eq!(fits, expected, "check of {:?}", e.fields);
                fits
            })
            .collect();
        prop_assume!(!events.is_empty());
        let dir = tempfile::tempdir().unwrap();
        let (searcher, ordered) = build(&events, &splits, merge, &schema, dir.path());

        let text_fields: Vec<String> = if mapping.default_search_fields.is_empty() {
            FIELDS
                .iter()
                .filter(|f| mapping.rules(f).is_none_or(|r| r.ty == FieldType::Text && r.index))
                .filter(|f| {
                    let analyzer = schema.analyzer_for(f);
                    ordered.iter().any(|e| {
                        e.fields.iter().any(|(n, v)| {
                            n == *f
                                && Model::items(v).iter().any(|i| !analyzer.tokens(i).is_empty())
                        })
                    })
                })
                .map(|f| (*f).to_owned())
                .collect::<BTreeSet<String>>()
                .into_iter()
                .collect()
        } else {
            mapping.default_search_fields.clone()
        };
        prop_assert_eq!(searcher.text_fields(), &text_fields[..]);
        let model = Model { schema: &schema, events: &ordered, text_fields };

        for q in &queries {
            let text = render(q);
            let expected = model.eval(q);
            let planned = searcher.parse(&text);
            let Ok(expected) = expected else {
                prop_assert!(planned.is_err(), "{} should be refused, planned as {:?}", text, planned);
                continue;
            };
            let query = planned.map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
            let expected = expected.unwrap_or_default();
            prop_assert_eq!(searcher.count(&query).unwrap(), expected.len() as u64, "count of {}", text);
            let hits = searcher
                .search(&query, &HitsRequest { limit: ordered.len(), count: true, sort: SortOrder::TimeAsc, ..Default::default() })
                .unwrap();
            let global = |block: u32, doc: u32| {
                searcher.blocks()[..block as usize].iter().map(|b| b.doc_count() as usize).sum::<usize>() + doc as usize
            };
            let got: BTreeSet<usize> = hits.hits.iter().map(|h| global(h.block, h.doc)).collect();
            prop_assert_eq!(&got, &expected, "hits of {}", text);
            // A hit shows exactly its stored fields, as they were sent.
            let events = searcher.events(&hits.hits).unwrap();
            for (hit, fields) in hits.hits.iter().zip(events) {
                let sent = &ordered[global(hit.block, hit.doc)];
                let mut want: Vec<(String, Value)> = sent
                    .fields
                    .iter()
                    .filter(|(name, _)| mapping.rules(name).is_none_or(|r| r.stored))
                    .cloned()
                    .collect();
                want.sort_by(|a, b| a.0.cmp(&b.0));
                let mut shown: Vec<(String, Value)> =
                    fields.into_iter().filter(|(n, _)| n != "_time").collect();
                shown.sort_by(|a, b| a.0.cmp(&b.0));
                prop_assert_eq!(shown, want, "fields of a hit of {}", text);
            }
        }
    }
}

/// `norms: false` scores a match the same whatever the value's length; with norms, the
/// shorter value scores higher (BM25's length normalization).
#[test]
fn without_norms_length_does_not_change_the_score() {
    for norms in [true, false] {
        let mut mapping = Mapping::default();
        mapping.fields.insert(
            "a".into(),
            FieldMapping {
                norms,
                ..FieldMapping::new(FieldType::Text)
            },
        );
        let schema = Arc::new(Schema::new(Arc::new(Analyzer::default()), mapping));
        let mut segment = SegmentBuilder::with_schema(schema.clone());
        let short = Value::Str("alpha beta".into());
        let long = Value::Str("alpha beta gamma delta eps zeta eta theta iota kappa".into());
        segment.add_event(1, [("a", &short)]);
        segment.add_event(2, [("a", &long)]);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("1.qblk");
        segment.write_block(&path).unwrap();
        let searcher = Searcher::new(vec![BlockReader::open(&path).unwrap()], Analyzer::default())
            .with_schema(schema);
        let query = searcher.parse("alpha").unwrap();
        let top = searcher.top_k(&query, 2).unwrap();
        assert_eq!(top.len(), 2);
        if norms {
            assert_eq!(top[0].doc, 0, "the shorter value first");
            assert!(top[0].score > top[1].score);
        } else {
            assert_eq!(top[0].score, top[1].score);
        }
    }
}

/// An array's items are whole values whatever their length: items longer than an exact term
/// (32 bytes) are found by checking the stored array, short ones by their terms; a string
/// that is only part of an item, or the array's JSON text, is not an item.
#[test]
fn array_items_are_whole_values() {
    let long = "a long item that is well past thirty-two bytes";
    let events = vec![
        TestEvent {
            time: 1,
            fields: vec![(
                "tags".into(),
                Value::Json(serde_json::to_string(&["web-1", long]).unwrap()),
            )],
        },
        TestEvent {
            time: 2,
            fields: vec![("tags".into(), Value::Str(long.into()))],
        },
        TestEvent {
            time: 3,
            fields: vec![(
                "tags".into(),
                Value::Json(serde_json::to_string(&["web-2"]).unwrap()),
            )],
        },
    ];
    let schema = Arc::new(Schema::new(
        Arc::new(Analyzer::default()),
        Mapping::default(),
    ));
    for (merge, splits) in [(false, vec![]), (false, vec![1]), (true, vec![2])] {
        let dir = tempfile::tempdir().unwrap();
        let (searcher, _) = build(&events, &splits, merge, &schema, dir.path());
        let count = |q: &str| searcher.count(&searcher.parse(q).unwrap()).unwrap();
        assert_eq!(count("tags:=\"web-1\""), 1);
        assert_eq!(count("tags:=\"web-2\""), 1);
        assert_eq!(count(&format!("tags:=\"{long}\"")), 2);
        assert_eq!(count("tags:=\"a long item\""), 0);
        assert_eq!(count("tags:=\"web\""), 0);
    }
}
