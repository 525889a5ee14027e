//! Property test of date and ip fields and of `dynamic`: random events (dates written as days,
//! times or epoch milliseconds; IPv4, IPv4-mapped and IPv6 addresses; an unmapped field) in
//! one or two blocks, random DSL `term`, `range` and `exists` queries, compared against a
//! brute-force model that reads the events as numbers and addresses by itself: which docs
//! match, and that every hit shows each value as it was sent.

use proptest::prelude::*;
use quarry_format::{BlockReader, Value};
use quarry_index::{Analyzer, Schema, SegmentBuilder};
use quarry_query::{HitsRequest, Searcher, SortOrder};
use quarry_store::mapping::{Dynamic, FieldMapping, FieldType, Mapping};
use serde_json::json;
use std::collections::BTreeSet;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;

const DAY: i64 = 86_400_000;
/// 2017-01-01T00:00:00Z in epoch milliseconds.
const JAN1: i64 = 1_483_228_800_000;
const ADDRESSES: &[&str] = &[
    "10.0.0.1",
    "10.0.0.200",
    "10.0.1.5",
    "192.168.1.1",
    "::ffff:10.0.0.1",
    "::1",
    "2001:db8::1",
];
const WORDS: &[&str] = &["alpha", "beta"];

/// A date written one of three ways, with the instant it names (ms).
#[derive(Debug, Clone)]
struct SentDate {
    millis: i64,
    value: Value,
}

fn date_strategy() -> impl Strategy<Value = SentDate> {
    (0i64..5, 0i64..24, 0..3).prop_map(|(day, hour, how)| {
        let millis = JAN1 + day * DAY + hour * 3_600_000;
        let value = match how {
            0 => Value::Str(format!("2017-01-{:02}T{hour:02}:00:00Z", day + 1)),
            1 => Value::I64(millis),
            _ => Value::Str(millis.to_string()),
        };
        SentDate { millis, value }
    })
}

#[derive(Debug, Clone)]
struct TestEvent {
    time: i64,
    date: Option<SentDate>,
    ip: Option<&'static str>,
    word: Option<&'static str>,
}

impl TestEvent {
    fn fields(&self) -> Vec<(String, Value)> {
        let mut fields = Vec::new();
        if let Some(date) = &self.date {
            fields.push(("d".to_owned(), date.value.clone()));
        }
        if let Some(ip) = self.ip {
            fields.push(("ip".to_owned(), Value::Str(ip.to_owned())));
        }
        if let Some(word) = self.word {
            fields.push(("u".to_owned(), Value::Str(word.to_owned())));
        }
        fields
    }
}

fn event_strategy() -> impl Strategy<Value = TestEvent> {
    (
        0i64..40,
        prop::option::of(date_strategy()),
        prop::option::of(prop::sample::select(ADDRESSES)),
        prop::option::of(prop::sample::select(WORDS)),
    )
        .prop_map(|(time, date, ip, word)| TestEvent {
            time,
            date,
            ip,
            word,
        })
}

#[derive(Debug, Clone)]
enum Q {
    /// `term` on `d` with a day (`2017-01-0N`): the whole day.
    DateTerm(i64),
    /// `range` on `d`: (key, day) pairs, `gte`/`gt`/`lte`/`lt`.
    DateRange(Vec<(&'static str, i64)>),
    /// `term` on `ip`: an address or a CIDR block.
    IpTerm(&'static str),
    /// `range` on `ip` with IPv4 bounds.
    IpRange(Vec<(&'static str, &'static str)>),
    /// `term` on the unmapped field.
    WordTerm(&'static str),
    Exists(&'static str),
}

const BLOCKS: &[&str] = &[
    "10.0.0.0/24",
    "10.0.0.0/8",
    "192.168.0.0/16",
    "0.0.0.0/0",
    "10.0.0.1/32",
];
const V4_BOUNDS: &[&str] = &["10.0.0.1", "10.0.0.200", "10.0.1.0", "192.168.1.1"];

/// At most one bound a side: a lower (`gte`, `gt`) and an upper (`lte`, `lt`), one at least.
fn bounds<T: Clone + std::fmt::Debug>(
    value: impl Strategy<Value = T> + Clone,
) -> impl Strategy<Value = Vec<(&'static str, T)>> {
    let lower = prop::option::of((prop::sample::select(&["gte", "gt"][..]), value.clone()));
    let upper = prop::option::of((prop::sample::select(&["lte", "lt"][..]), value));
    (lower, upper)
        .prop_filter("one bound at least", |(l, u)| l.is_some() || u.is_some())
        .prop_map(|(l, u)| l.into_iter().chain(u).collect())
}

fn query_strategy() -> impl Strategy<Value = Q> {
    prop_oneof![
        (0i64..6).prop_map(Q::DateTerm),
        bounds(0i64..6).prop_map(Q::DateRange),
        prop::sample::select([ADDRESSES, BLOCKS].concat()).prop_map(Q::IpTerm),
        bounds(prop::sample::select(V4_BOUNDS)).prop_map(Q::IpRange),
        prop::sample::select(WORDS).prop_map(Q::WordTerm),
        prop::sample::select(&["d", "ip", "u"][..]).prop_map(Q::Exists),
    ]
}

fn day_text(day: i64) -> String {
    format!("2017-01-{:02}", day + 1)
}

fn dsl(q: &Q) -> serde_json::Value {
    match q {
        Q::DateTerm(day) => json!({"term": {"d": day_text(*day)}}),
        Q::DateRange(bounds) => {
            let options: serde_json::Map<String, serde_json::Value> = bounds
                .iter()
                .map(|(key, day)| ((*key).to_owned(), day_text(*day).into()))
                .collect();
            json!({"range": {"d": options}})
        }
        Q::IpTerm(text) => json!({"term": {"ip": text}}),
        Q::IpRange(bounds) => {
            let options: serde_json::Map<String, serde_json::Value> = bounds
                .iter()
                .map(|(key, text)| ((*key).to_owned(), (*text).into()))
                .collect();
            json!({"range": {"ip": options}})
        }
        Q::WordTerm(word) => json!({"term": {"u": word}}),
        Q::Exists(field) => json!({"exists": {"field": field}}),
    }
}

/// The model's own reading of an address: an IPv4 one (mapped ones too) as its number.
enum Address {
    V4(u32),
    V6(std::net::Ipv6Addr),
}

fn address(text: &str) -> Address {
    match text.parse::<IpAddr>().unwrap() {
        IpAddr::V4(v4) => Address::V4(u32::from(v4)),
        IpAddr::V6(v6) => match v6.octets() {
            [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, a, b, c, d] => {
                Address::V4(u32::from(Ipv4Addr::new(a, b, c, d)))
            }
            _ => Address::V6(v6),
        },
    }
}

/// Whether the doc matches, `dynamic` being the mapping's.
fn model(q: &Q, event: &TestEvent, dynamic: Dynamic) -> bool {
    let in_bounds = |value: i64,
                     bounds: &[(&str, i64)],
                     start: &dyn Fn(i64) -> i64,
                     end: &dyn Fn(i64) -> i64| {
        bounds.iter().all(|&(key, b)| match key {
            "gte" => value >= start(b),
            "gt" => value > end(b),
            "lte" => value <= end(b),
            _ => value < start(b),
        })
    };
    let day_start = |day: i64| JAN1 + day * DAY;
    let day_end = |day: i64| JAN1 + (day + 1) * DAY - 1;
    match q {
        Q::DateTerm(day) => event
            .date
            .as_ref()
            .is_some_and(|d| d.millis >= day_start(*day) && d.millis <= day_end(*day)),
        Q::DateRange(bounds) => event.date.as_ref().is_some_and(|d| {
            let bounds: Vec<(&str, i64)> = bounds.to_vec();
            in_bounds(d.millis, &bounds, &day_start, &day_end)
        }),
        Q::IpTerm(text) => {
            let Some(sent) = event.ip else { return false };
            match (text.split_once('/'), address(sent)) {
                (Some((net, bits)), Address::V4(value)) => {
                    let Address::V4(net) = address(net) else {
                        unreachable!()
                    };
                    let bits: u32 = bits.parse().unwrap();
                    let mask = if bits == 0 {
                        0
                    } else {
                        u32::MAX << (32 - bits)
                    };
                    value & mask == net & mask
                }
                (Some(_), Address::V6(_)) => false,
                (None, sent) => match (address(text), sent) {
                    (Address::V4(a), Address::V4(b)) => a == b,
                    (Address::V6(a), Address::V6(b)) => a == b,
                    _ => false,
                },
            }
        }
        Q::IpRange(bounds) => {
            let Some(Address::V4(value)) = event.ip.map(address) else {
                return false;
            };
            bounds.iter().all(|&(key, text)| {
                let Address::V4(bound) = address(text) else {
                    unreachable!()
                };
                match key {
                    "gte" => value >= bound,
                    "gt" => value > bound,
                    "lte" => value <= bound,
                    _ => value < bound,
                }
            })
        }
        Q::WordTerm(word) => dynamic == Dynamic::True && event.word == Some(word),
        Q::Exists("d") => event.date.is_some(),
        Q::Exists("ip") => event.ip.is_some(),
        Q::Exists(_) => dynamic == Dynamic::True && event.word.is_some(),
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
            let fields = event.fields();
            segment.add_event(event.time, fields.iter().map(|(k, v)| (k.as_str(), v)));
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

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn dates_addresses_and_dynamic_search_as_the_model_says(
        events in prop::collection::vec(event_strategy(), 1..80),
        split in any::<usize>(),
        dynamic in prop::sample::select(&[Dynamic::True, Dynamic::False][..]),
        queries in prop::collection::vec(query_strategy(), 1..8),
    ) {
        let mut mapping = Mapping { dynamic: Some(dynamic), ..Mapping::default() };
        mapping.fields.insert("d".into(), FieldMapping::new(FieldType::Date));
        mapping.fields.insert("ip".into(), FieldMapping::new(FieldType::Ip));
        let schema = Arc::new(Schema::new(Arc::new(Analyzer::default()), mapping));
        for event in &events {
            let event = quarry_index::Event { time: event.time, fields: event.fields() };
            prop_assert!(schema.check(&event).is_ok(), "{:?}", event);
        }
        let dir = tempfile::tempdir().unwrap();
        let (searcher, ordered) = build(&events, split, &schema, dir.path());
        for q in &queries {
            let ast = quarry_query::dsl::compile(&dsl(q), "query", 0).unwrap();
            let query = searcher.plan(&ast).map_err(|e| TestCaseError::fail(format!("{q:?}: {e}")))?;
            let expected: BTreeSet<usize> =
                (0..ordered.len()).filter(|&i| model(q, ordered[i], dynamic)).collect();
            let hits = searcher
                .search(&query, &HitsRequest { limit: ordered.len(), count: true, sort: SortOrder::TimeAsc, ..Default::default() })
                .unwrap();
            let global = |block: u32, doc: u32| {
                searcher.blocks()[..block as usize].iter().map(|b| b.doc_count() as usize).sum::<usize>() + doc as usize
            };
            let got: BTreeSet<usize> = hits.hits.iter().map(|h| global(h.block, h.doc)).collect();
            prop_assert_eq!(&got, &expected, "hits of {:?}", q);
            // Every value shows as it was sent, the unmapped one too under `dynamic: false`.
            for (hit, fields) in hits.hits.iter().zip(searcher.events(&hits.hits).unwrap()) {
                let mut want = ordered[global(hit.block, hit.doc)].fields();
                want.sort_by(|a, b| a.0.cmp(&b.0));
                let mut shown: Vec<(String, Value)> =
                    fields.into_iter().filter(|(n, _)| n != "_time").collect();
                shown.sort_by(|a, b| a.0.cmp(&b.0));
                prop_assert_eq!(shown, want, "fields of a hit of {:?}", q);
            }
        }
    }
}

/// What ingest refuses: a date not in the field's formats, an address that is not one, a
/// field `dynamic: strict` does not let in; and what `ignore_malformed` keeps instead.
#[test]
fn ingest_refuses_what_does_not_fit() {
    let mapping = Mapping::from_json(
        r#"{"dynamic": "strict", "properties": {
            "d": {"type": "date", "format": "yyyy-MM-dd"},
            "ip": {"type": "ip"},
            "lax": {"type": "date", "ignore_malformed": true},
            "o": {"type": "object", "dynamic": false}
        }}"#,
    )
    .unwrap();
    let schema = Schema::new(Arc::new(Analyzer::default()), mapping);
    let check = |fields: &[(&str, Value)]| {
        let event = quarry_index::Event {
            time: 0,
            fields: fields
                .iter()
                .map(|(n, v)| ((*n).to_owned(), v.clone()))
                .collect(),
        };
        schema.check(&event).map_err(|e| e.to_string())
    };
    let s = |text: &str| Value::Str(text.to_owned());
    assert!(check(&[("d", s("2017-01-01")), ("ip", s("::1"))]).is_ok());
    assert!(check(&[("lax", s("not a date")), ("o.anything", s("x"))]).is_ok());
    assert!(check(&[("_id", s("x"))]).is_ok());
    let refused = [
        (
            ("d", s("2017-01-01T00:00:00")),
            "field \"d\" is mapped to take a date in the format [yyyy-MM-dd]",
        ),
        (
            ("ip", s("1.2.3")),
            "field \"ip\" is mapped to take an IP address",
        ),
        (
            ("ip", Value::I64(1)),
            "field \"ip\" is mapped to take an IP address",
        ),
        (
            ("x", s("y")),
            "mapping set to strict, dynamic introduction of [x] within [_doc] is not allowed",
        ),
        (
            ("p.x", s("y")),
            "mapping set to strict, dynamic introduction of [x] within [p] is not allowed",
        ),
    ];
    for ((name, value), message) in refused {
        let error = check(&[(name, value)]).unwrap_err();
        assert!(error.starts_with(message), "{name}: {error}");
    }
}
