//! Property test of `flat_object`, `constant_keyword` and `terms_set`: random events (a flat
//! object `catalog` of nested objects, arrays and arrays of objects holding strings, numbers
//! and booleans; a `need` count; a `genre` holding its constant or nothing) in one or two
//! blocks, random DSL queries, compared against a brute-force model that reads the events by
//! itself. The model's flat object: every leaf under it is one keyword (a number as
//! serde_json prints it, `80.0`; arrays flattened), found under its dotted path, under
//! `catalog`, and, two keys deep or more, under `catalog.<last key>`. Its constant: a query on
//! `genre` matches every event or none, as the value "book" answers it.

use proptest::prelude::*;
use quarry_format::BlockReader;
use quarry_index::{Analyzer, Event, Schema, SegmentBuilder};
use quarry_query::{HitsRequest, Searcher, SortOrder};
use quarry_store::mapping::Mapping;
use serde_json::{json, Value as Json};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

const FLAT: &str = "catalog";
const CONSTANT: &str = "book";
const KEYS: &[&str] = &["a", "b", "c"];
/// What queries look for: the leaves' keywords, and near misses (`80` for `80.0`, other
/// cases, a word of "in action").
const WORDS: &[&str] = &[
    "x",
    "xy",
    "X",
    "in",
    "in action",
    "action",
    "3",
    "3.0",
    "80",
    "80.0",
    "2.5",
    "true",
    "false",
];
const PREFIXES: &[&str] = &["", "x", "X", "in", "in ", "8", "80.", "2", "t", "a"];
const BOUNDS: &[&str] = &[
    "3",
    "80",
    "80.0",
    "X",
    "a",
    "in",
    "in action",
    "t",
    "x",
    "xy",
    "y",
];

fn mapping() -> Mapping {
    Mapping::from_value(&json!({"properties": {
        "catalog": {"type": "flat_object"},
        "need": {"type": "long"},
        "genre": {"type": "constant_keyword", "value": CONSTANT},
    }}))
    .unwrap()
}

fn leaf_strategy() -> impl Strategy<Value = Json> {
    prop::sample::select(vec![
        json!("x"),
        json!("xy"),
        json!("X"),
        json!("in"),
        json!("in action"),
        json!(3),
        json!(80.0),
        json!(2.5),
        json!(true),
        json!(false),
    ])
}

fn object_of<S: Strategy<Value = Json>>(
    inner: S,
    entries: std::ops::Range<usize>,
) -> impl Strategy<Value = Json> {
    prop::collection::btree_map(prop::sample::select(KEYS), inner, entries).prop_map(|entries| {
        Json::Object(
            entries
                .into_iter()
                .map(|(key, value)| (key.to_owned(), value))
                .collect(),
        )
    })
}

/// A value under the flat object: a leaf, an object, or an array (of leaves, arrays, objects).
fn node_strategy() -> impl Strategy<Value = Json> {
    leaf_strategy().prop_recursive(3, 24, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 1..4).prop_map(Json::Array),
            object_of(inner, 1..3),
        ]
    })
}

/// The flat object's own value: an object, or (less often) an array of objects.
fn catalog_strategy() -> impl Strategy<Value = Json> {
    prop_oneof![
        3 => object_of(node_strategy(), 0..4),
        1 => prop::collection::vec(object_of(node_strategy(), 1..3), 1..3).prop_map(Json::Array),
    ]
}

#[derive(Debug, Clone)]
struct TestEvent {
    time: i64,
    catalog: Option<Json>,
    need: Option<i64>,
    genre: bool,
}

impl TestEvent {
    /// The event as ingest hands it over: flattened to dotted names by quarry-index's own
    /// `parse_event` (arrays as their JSON text, numbers as numbers).
    fn event(&self) -> Event {
        let mut line = serde_json::Map::new();
        if let Some(catalog) = &self.catalog {
            line.insert(FLAT.into(), catalog.clone());
        }
        if let Some(need) = self.need {
            line.insert("need".into(), need.into());
        }
        if self.genre {
            line.insert("genre".into(), CONSTANT.into());
        }
        let line = serde_json::to_vec(&Json::Object(line)).unwrap();
        quarry_index::parse_event(&line, self.time).unwrap()
    }

    /// The model's keywords: field name → the values a query on it finds.
    fn keywords(&self) -> BTreeMap<String, BTreeSet<String>> {
        fn walk(node: &Json, keys: &mut Vec<String>, out: &mut BTreeMap<String, BTreeSet<String>>) {
            let text = match node {
                Json::Null => return,
                Json::Array(items) => {
                    items.iter().for_each(|item| walk(item, keys, out));
                    return;
                }
                Json::Object(entries) => {
                    for (key, item) in entries {
                        keys.push(key.clone());
                        walk(item, keys, out);
                        keys.pop();
                    }
                    return;
                }
                Json::String(text) => text.clone(),
                other => other.to_string(),
            };
            let mut names = vec![FLAT.to_owned()];
            if !keys.is_empty() {
                names.push(format!("{FLAT}.{}", keys.join(".")));
            }
            if keys.len() >= 2 {
                names.push(format!("{FLAT}.{}", keys[keys.len() - 1]));
            }
            for name in names {
                out.entry(name).or_default().insert(text.clone());
            }
        }
        let mut out = BTreeMap::new();
        if let Some(catalog) = &self.catalog {
            walk(catalog, &mut Vec::new(), &mut out);
        }
        out
    }
}

fn event_strategy() -> impl Strategy<Value = TestEvent> {
    (
        0i64..40,
        prop::option::weighted(0.8, catalog_strategy()),
        prop::option::of(0i64..4),
        any::<bool>(),
    )
        .prop_map(|(time, catalog, need, genre)| TestEvent {
            time,
            catalog,
            need,
            genre,
        })
}

/// The field a flat-object query names.
#[derive(Debug, Clone)]
enum Field {
    Root,
    /// One of the names the events' keywords are under (full or `catalog.<last key>`).
    Seen(prop::sample::Index),
    /// `catalog` and these keys, whether or not an event has that path.
    Keys(Vec<&'static str>),
}

fn field_strategy() -> impl Strategy<Value = Field> {
    prop_oneof![
        1 => Just(Field::Root),
        3 => any::<prop::sample::Index>().prop_map(Field::Seen),
        1 => prop::collection::vec(prop::sample::select(KEYS), 1..4).prop_map(Field::Keys),
    ]
}

impl Field {
    fn name(&self, seen: &[String]) -> String {
        match self {
            Field::Seen(index) if !seen.is_empty() => index.get(seen).clone(),
            Field::Root | Field::Seen(_) => FLAT.to_owned(),
            Field::Keys(keys) => format!("{FLAT}.{}", keys.join(".")),
        }
    }
}

/// How a range is written: `gt`/`gte`/`lt`/`lte`, or `from`/`to` with `include_lower` and
/// `include_upper` as booleans or as the strings "true"/"false".
#[derive(Debug, Clone, Copy)]
enum RangeStyle {
    Keys,
    FromTo,
    FromToStrings,
}

/// A lower and an upper bound (one at least), each with whether it is inclusive.
#[derive(Debug, Clone)]
struct Bounds {
    lower: Option<(&'static str, bool)>,
    upper: Option<(&'static str, bool)>,
    style: RangeStyle,
}

fn bounds_strategy(values: &'static [&'static str]) -> impl Strategy<Value = Bounds> {
    let bound = || prop::option::of((prop::sample::select(values), any::<bool>()));
    let style = prop::sample::select(
        &[
            RangeStyle::Keys,
            RangeStyle::FromTo,
            RangeStyle::FromToStrings,
        ][..],
    );
    (bound(), bound(), style)
        .prop_filter("one bound at least", |(l, u, _)| l.is_some() || u.is_some())
        .prop_map(|(lower, upper, style)| Bounds {
            lower,
            upper,
            style,
        })
}

impl Bounds {
    fn dsl(&self) -> Json {
        let mut options = serde_json::Map::new();
        let include = |inclusive: bool| match self.style {
            RangeStyle::FromToStrings => Json::from(inclusive.to_string()),
            _ => Json::from(inclusive),
        };
        for (bound, keys) in [
            (self.lower, ["gte", "gt", "from", "include_lower"]),
            (self.upper, ["lte", "lt", "to", "include_upper"]),
        ] {
            let Some((value, inclusive)) = bound else {
                continue;
            };
            match self.style {
                RangeStyle::Keys => {
                    let key = if inclusive { keys[0] } else { keys[1] };
                    options.insert(key.into(), value.into());
                }
                RangeStyle::FromTo | RangeStyle::FromToStrings => {
                    options.insert(keys[2].into(), value.into());
                    options.insert(keys[3].into(), include(inclusive));
                }
            }
        }
        Json::Object(options)
    }

    /// Whether `value` is inside, compared byte-wise as a keyword is.
    fn contains(&self, value: &str) -> bool {
        let value = value.as_bytes();
        let above = self.lower.is_none_or(|(bound, inclusive)| match inclusive {
            true => value >= bound.as_bytes(),
            false => value > bound.as_bytes(),
        });
        let below = self.upper.is_none_or(|(bound, inclusive)| match inclusive {
            true => value <= bound.as_bytes(),
            false => value < bound.as_bytes(),
        });
        above && below
    }
}

/// A query on `genre`, whose answer the constant gives.
#[derive(Debug, Clone)]
enum GenreQ {
    Term(&'static str),
    Terms(Vec<&'static str>),
    Match(&'static str),
    Prefix(&'static str),
    Regexp(&'static str),
    Wildcard(&'static str),
    Range(Bounds),
    Exists,
}

const GENRE_WORDS: &[&str] = &["book", "boo", "Book", "books", "film", "book film"];
const GENRE_BOUNDS: &[&str] = &[
    "B", "Book", "X", "a", "bo", "boo", "book", "booka", "books", "c",
];
/// Upper-case ones too: the constant is compared as a whole value, case kept.
const GENRE_PREFIXES: &[&str] = &["", "b", "bo", "book", "books", "B", "x"];
const GENRE_REGEXPS: &[&str] = &[
    "bo.*",
    "b..k",
    "boo",
    "[a-c]ook",
    "book|film",
    "b.*s",
    "B.*",
];
const GENRE_WILDCARDS: &[&str] = &[
    "bo*", "b??k", "*ok", "boo", "?ook*", "*", "book", "b?k", "B*",
];

fn genre_strategy() -> impl Strategy<Value = GenreQ> {
    prop_oneof![
        prop::sample::select(GENRE_WORDS).prop_map(GenreQ::Term),
        prop::collection::vec(prop::sample::select(GENRE_WORDS), 1..3).prop_map(GenreQ::Terms),
        prop::sample::select(GENRE_WORDS).prop_map(GenreQ::Match),
        prop::sample::select(GENRE_PREFIXES).prop_map(GenreQ::Prefix),
        prop::sample::select(GENRE_REGEXPS).prop_map(GenreQ::Regexp),
        prop::sample::select(GENRE_WILDCARDS).prop_map(GenreQ::Wildcard),
        bounds_strategy(GENRE_BOUNDS).prop_map(GenreQ::Range),
        Just(GenreQ::Exists),
    ]
}

impl GenreQ {
    fn dsl(&self) -> Json {
        match self {
            GenreQ::Term(value) => json!({"term": {"genre": value}}),
            GenreQ::Terms(values) => json!({"terms": {"genre": values}}),
            GenreQ::Match(text) => json!({"match": {"genre": text}}),
            GenreQ::Prefix(prefix) => json!({"prefix": {"genre": prefix}}),
            GenreQ::Regexp(pattern) => json!({"regexp": {"genre": pattern}}),
            GenreQ::Wildcard(pattern) => json!({"wildcard": {"genre": pattern}}),
            GenreQ::Range(bounds) => json!({"range": {"genre": bounds.dsl()}}),
            GenreQ::Exists => json!({"exists": {"field": "genre"}}),
        }
    }

    /// Whether the constant answers yes (then every event matches, else none).
    fn answer(&self) -> bool {
        match self {
            GenreQ::Term(value) | GenreQ::Match(value) => *value == CONSTANT,
            GenreQ::Terms(values) => values.contains(&CONSTANT),
            GenreQ::Prefix(prefix) => CONSTANT.starts_with(prefix),
            GenreQ::Regexp(pattern) => regex::Regex::new(&format!("^(?:{pattern})$"))
                .unwrap()
                .is_match(CONSTANT),
            GenreQ::Wildcard(pattern) => {
                let pattern: Vec<char> = pattern.chars().collect();
                let text: Vec<char> = CONSTANT.chars().collect();
                wildcard_matches(&pattern, &text)
            }
            GenreQ::Range(bounds) => bounds.contains(CONSTANT),
            GenreQ::Exists => true,
        }
    }
}

fn wildcard_matches(pattern: &[char], text: &[char]) -> bool {
    match pattern.split_first() {
        None => text.is_empty(),
        Some(('*', rest)) => (0..=text.len()).any(|at| wildcard_matches(rest, &text[at..])),
        Some(('?', rest)) => !text.is_empty() && wildcard_matches(rest, &text[1..]),
        Some((c, rest)) => text.first() == Some(c) && wildcard_matches(rest, &text[1..]),
    }
}

#[derive(Debug, Clone)]
enum Q {
    Term(Field, &'static str),
    Terms(Field, Vec<&'static str>),
    Prefix(Field, &'static str),
    Range(Field, Bounds),
    Exists(Field),
    /// `match`: on a keyword the whole text is one value.
    Match(Field, &'static str),
    /// `terms_set` with distinct terms, `minimum_should_match_field: need`.
    TermsSet(Field, BTreeSet<&'static str>),
    Genre(GenreQ),
}

fn query_strategy() -> impl Strategy<Value = Q> {
    let word = || prop::sample::select(WORDS);
    prop_oneof![
        (field_strategy(), word()).prop_map(|(f, w)| Q::Term(f, w)),
        (field_strategy(), prop::collection::vec(word(), 1..4)).prop_map(|(f, w)| Q::Terms(f, w)),
        (field_strategy(), prop::sample::select(PREFIXES)).prop_map(|(f, p)| Q::Prefix(f, p)),
        (field_strategy(), bounds_strategy(BOUNDS)).prop_map(|(f, b)| Q::Range(f, b)),
        field_strategy().prop_map(Q::Exists),
        (field_strategy(), word()).prop_map(|(f, w)| Q::Match(f, w)),
        (field_strategy(), prop::collection::btree_set(word(), 1..5))
            .prop_map(|(f, w)| Q::TermsSet(f, w)),
        genre_strategy().prop_map(Q::Genre),
    ]
}

impl Q {
    fn dsl(&self, seen: &[String]) -> Json {
        match self {
            Q::Term(f, value) => json!({"term": {f.name(seen): value}}),
            Q::Terms(f, values) => json!({"terms": {f.name(seen): values}}),
            Q::Prefix(f, prefix) => json!({"prefix": {f.name(seen): prefix}}),
            Q::Range(f, bounds) => json!({"range": {f.name(seen): bounds.dsl()}}),
            Q::Exists(f) => json!({"exists": {"field": f.name(seen)}}),
            Q::Match(f, text) => json!({"match": {f.name(seen): text}}),
            Q::TermsSet(f, terms) => json!({"terms_set": {f.name(seen): {
                "terms": terms,
                "minimum_should_match_field": "need",
            }}}),
            Q::Genre(q) => q.dsl(),
        }
    }

    /// Whether the event matches; `keywords` are the event's (`TestEvent::keywords`).
    fn model(
        &self,
        seen: &[String],
        event: &TestEvent,
        keywords: &BTreeMap<String, BTreeSet<String>>,
    ) -> bool {
        let values = |f: &Field| keywords.get(&f.name(seen)).cloned().unwrap_or_default();
        match self {
            Q::Term(f, value) | Q::Match(f, value) => values(f).contains(*value),
            Q::Terms(f, listed) => listed.iter().any(|value| values(f).contains(*value)),
            Q::Prefix(f, prefix) => values(f).iter().any(|value| value.starts_with(prefix)),
            Q::Range(f, bounds) => values(f).iter().any(|value| bounds.contains(value)),
            Q::Exists(f) => !values(f).is_empty(),
            Q::TermsSet(f, listed) => event.need.is_some_and(|need| {
                let held = listed.iter().filter(|value| values(f).contains(**value));
                held.count() as i64 >= need.max(1)
            }),
            Q::Genre(q) => q.answer(),
        }
    }
}

/// The searcher over the events cut in two blocks at `split`, and the events in its doc
/// order.
fn build<'e>(
    events: &'e [TestEvent],
    split: usize,
    schema: &Arc<Schema>,
    dir: &std::path::Path,
) -> (Searcher, Vec<&'e TestEvent>) {
    let split = split % (events.len() + 1);
    let mut readers = Vec::new();
    for (i, part) in [&events[..split], &events[split..]].into_iter().enumerate() {
        if part.is_empty() {
            continue;
        }
        let mut segment = SegmentBuilder::with_schema(schema.clone());
        for event in part {
            let event = event.event();
            segment.add_event(
                event.time,
                event.fields.iter().map(|(k, v)| (k.as_str(), v)),
            );
        }
        let path = dir.join(format!("{i}.qblk"));
        segment.write_block(&path).unwrap();
        readers.push(BlockReader::open(&path).unwrap());
    }
    let searcher = Searcher::new(readers, Analyzer::default()).with_schema(schema.clone());
    // A block's docs are in time order, ties in arrival order.
    let mut ordered = Vec::new();
    for block in searcher.blocks() {
        let part = if block.path().ends_with("0.qblk") {
            &events[..split]
        } else {
            &events[split..]
        };
        let mut part: Vec<&TestEvent> = part.iter().collect();
        part.sort_by_key(|e| e.time);
        ordered.extend(part);
    }
    (searcher, ordered)
}

/// The docs (numbered across blocks) that `dsl` finds.
fn search(searcher: &Searcher, dsl: &Json, limit: usize) -> Result<BTreeSet<usize>, String> {
    let ast = quarry_query::dsl::compile(dsl, "query", 0).map_err(|e| e.to_string())?;
    let query = searcher.plan(&ast).map_err(|e| e.to_string())?;
    let request = HitsRequest {
        limit,
        count: true,
        sort: SortOrder::TimeAsc,
        ..Default::default()
    };
    let hits = searcher
        .search(&query, &request)
        .map_err(|e| e.to_string())?;
    let global = |block: u32, doc: u32| {
        let before: usize = searcher.blocks()[..block as usize]
            .iter()
            .map(|b| b.doc_count() as usize)
            .sum();
        before + doc as usize
    };
    Ok(hits.hits.iter().map(|h| global(h.block, h.doc)).collect())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn flat_objects_constants_and_terms_set_search_as_the_model_says(
        events in prop::collection::vec(event_strategy(), 1..40),
        split in any::<usize>(),
        queries in prop::collection::vec(query_strategy(), 1..12),
    ) {
        let schema = Arc::new(Schema::new(Arc::new(Analyzer::default()), mapping()));
        for event in &events {
            let event = event.event();
            prop_assert!(schema.check(&event).is_ok(), "{:?}", event);
        }
        let dir = tempfile::tempdir().unwrap();
        let (searcher, ordered) = build(&events, split, &schema, dir.path());
        let keywords: Vec<_> = ordered.iter().map(|e| e.keywords()).collect();
        let seen: Vec<String> = keywords
            .iter()
            .flat_map(|k| k.keys().cloned())
            .collect::<BTreeSet<String>>()
            .into_iter()
            .collect();
        for q in &queries {
            let dsl = q.dsl(&seen);
            let got = search(&searcher, &dsl, ordered.len())
                .map_err(|e| TestCaseError::fail(format!("{dsl}: {e}")))?;
            let expected: BTreeSet<usize> = (0..ordered.len())
                .filter(|&i| q.model(&seen, ordered[i], &keywords[i]))
                .collect();
            prop_assert_eq!(&got, &expected, "hits of {}", dsl);
        }
    }
}

/// The cases the semantics are stated with, one line each, over two events: one holding
/// `genre` and one not.
#[test]
fn stated_cases() {
    let events = [
        TestEvent {
            time: 1,
            catalog: Some(json!({"title": "in action", "a": {"b": "x"}, "price": 80.0,
                                 "tags": ["x", [1, 2.5]]})),
            need: Some(2),
            genre: true,
        },
        TestEvent {
            time: 2,
            catalog: Some(json!({"title": "in", "count": 3})),
            need: None,
            genre: false,
        },
    ];
    let schema = Arc::new(Schema::new(Arc::new(Analyzer::default()), mapping()));
    let dir = tempfile::tempdir().unwrap();
    let (searcher, _) = build(&events, 0, &schema, dir.path());
    let cases: &[(Json, &[usize])] = &[
        (json!({"term": {"catalog": "80.0"}}), &[0]),
        (json!({"term": {"catalog.price": "80.0"}}), &[0]),
        (json!({"term": {"catalog.count": "3"}}), &[1]),
        (json!({"term": {"catalog.a.b": "x"}}), &[0]),
        (json!({"term": {"catalog.b": "x"}}), &[0]),
        (json!({"term": {"catalog.tags": "2.5"}}), &[0]),
        (json!({"term": {"catalog": "X"}}), &[]),
        (json!({"match": {"catalog": "in action"}}), &[0]),
        (json!({"match": {"catalog.title": "in"}}), &[1]),
        (json!({"match": {"catalog.title": "action"}}), &[]),
        (json!({"prefix": {"catalog.title": "in"}}), &[0, 1]),
        (json!({"range": {"catalog": {"gt": "in", "lt": "x"}}}), &[0]),
        (json!({"exists": {"field": "catalog.b"}}), &[0]),
        (json!({"exists": {"field": "catalog"}}), &[0, 1]),
        (json!({"term": {"genre": "book"}}), &[0, 1]),
        (json!({"term": {"genre": "boo"}}), &[]),
        (json!({"prefix": {"genre": "bo"}}), &[0, 1]),
        (json!({"range": {"genre": {"gt": "book"}}}), &[]),
        (json!({"range": {"genre": {"gte": "book"}}}), &[0, 1]),
        (
            json!({"range": {"genre": {"from": "book", "include_lower": "false"}}}),
            &[],
        ),
        (
            json!({"terms_set": {"catalog": {"terms": ["x", "1", "in"],
                                             "minimum_should_match_field": "need"}}}),
            &[0],
        ),
        (
            json!({"terms_set": {"catalog": {"terms": ["x", "nothing"],
                                             "minimum_should_match_field": "need"}}}),
            &[],
        ),
    ];
    for (dsl, want) in cases {
        let got = search(&searcher, dsl, events.len()).unwrap();
        let want: BTreeSet<usize> = want.iter().copied().collect();
        assert_eq!(got, want, "{dsl}");
    }
}

/// What `Schema::check` takes at a flat object's own name and at the constant field.
#[test]
fn check_takes_objects_and_the_constant_only() {
    let schema = Schema::new(Arc::new(Analyzer::default()), mapping());
    let check = |line: &str| {
        let event = quarry_index::parse_event(line.as_bytes(), 0).unwrap();
        schema.check(&event).map_err(|e| e.to_string())
    };
    for accepted in [
        r#"{"catalog": {"a": {"b": "x"}, "n": [1, [2.5, "y"]]}}"#,
        r#"{"catalog": [{"a": "x"}, {"b": {"c": true}}]}"#,
        r#"{"catalog": {}}"#,
        r#"{"genre": "book"}"#,
        r#"{"genre": ["book", "book"]}"#,
    ] {
        assert!(check(accepted).is_ok(), "{accepted}: {:?}", check(accepted));
    }
    for (refused, message) in [
        (r#"{"catalog": "x"}"#, "is mapped as a flat_object"),
        (r#"{"catalog": 3}"#, "is mapped as a flat_object"),
        (r#"{"catalog": ["x", "y"]}"#, "is mapped as a flat_object"),
        (
            r#"{"catalog": [{"a": "x"}, "y"]}"#,
            "is mapped as a flat_object",
        ),
        (r#"{"genre": "film"}"#, "is a constant_keyword field"),
        (
            r#"{"genre": ["book", "film"]}"#,
            "is a constant_keyword field",
        ),
    ] {
        let error = check(refused).unwrap_err();
        assert!(error.contains(message), "{refused}: {error}");
    }
}
