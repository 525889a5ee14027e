//! Events answer alike wherever they sit: in the active segment (sealed by the search), in
//! memory blocks, compacted memory blocks, or flushed block files. A proptest ingests random
//! events into a `LiveIndex` in random batches, with random flushes, searches (which seal)
//! and background steps (compactions, merges) in between, then asks a set of requests of
//! every kind (term, phrase, boolean, ranges, tails with events, pages, counts, histograms,
//! aggregations, BM25) and compares each answer with the answer over one block file built
//! from the same events directly.

use proptest::prelude::*;
use quarry_format::BlockReader;
use quarry_index::analysis::Analyzer;
use quarry_index::event::parse_event;
use quarry_index::segment::SegmentBuilder;
use quarry_query::aggregation::AggSpec;
use quarry_query::{HistogramInterval, SearchRequest, Searcher, SortOrder};
use quarry_server::live::{Batch, IngestConfig, LiveIndex};
use quarry_server::response_json;
use quarry_store::{Catalog, Settings};
use std::sync::Arc;

const WORDS: &[&str] = &["alpha", "beta", "gamma", "delta", "failed", "login", "disk"];
const LEVELS: &[&str] = &["info", "warn", "error"];
const BASE: i64 = 1_790_000_000_000_000_000;

/// Step between one batch and the next.
#[derive(Debug, Clone)]
enum Step {
    Search,
    Flush,
    Background,
    Nothing,
}

fn event_line(i: usize, words: &[usize], level: usize, n: i64, time_slot: u32) -> String {
    let message: Vec<&str> = words.iter().map(|&w| WORDS[w % WORDS.len()]).collect();
    // Distinct times (slot * 1000 + i): ties would be ordered by block id, which differs
    // between layouts by design.
    let time = BASE + (i64::from(time_slot) * 1000 + i as i64) * 1_000_000;
    serde_json::json!({
        "_time": time,
        "message": message.join(" "),
        "level": LEVELS[level % LEVELS.len()],
        "n": n,
        "i": i,
    })
    .to_string()
}

fn requests() -> Vec<SearchRequest> {
    let request = |query: &str| SearchRequest {
        query: query.to_owned(),
        count: true,
        sort: SortOrder::TimeDesc,
        ..Default::default()
    };
    let tail = |query: &str, sort, limit| SearchRequest {
        sort,
        limit,
        ..request(query)
    };
    let mut all = vec![
        request("failed"),
        request("\"failed login\""),
        request("level:error AND NOT disk"),
        request("n:>=50"),
        request("*"),
        tail("*", SortOrder::TimeDesc, 25),
        tail("alpha OR beta", SortOrder::TimeAsc, 7),
        tail("level:warn", SortOrder::TimeDesc, 1000),
        // Every hit: equal scores are ordered by block and doc, which differ by layout.
        tail("gamma", SortOrder::Relevance, 1000),
        tail("failed OR level:warn", SortOrder::Relevance, 1000),
        SearchRequest {
            start: BASE + 5_000_000_000,
            end: BASE + 40_000_000_000,
            ..tail("login", SortOrder::TimeDesc, 5)
        },
        SearchRequest {
            limit: 0,
            histogram: Some(HistogramInterval::Fixed(3_000_000_000)),
            aggregations: vec![AggSpec::parse("stats(n)").unwrap()],
            ..request("*")
        },
        SearchRequest {
            limit: 0,
            histogram: Some(HistogramInterval::Auto),
            ..request("delta")
        },
    ];
    for agg in ["terms(level, 5)", "percentiles(n)", "stats(n)"] {
        all.push(SearchRequest {
            limit: 0,
            aggregations: vec![AggSpec::parse(agg).unwrap()],
            ..request("*")
        });
    }
    all
}

/// The answer as JSON, cursors removed (they name blocks) and scores rounded (a sum over
/// blocks in another order may differ in the last bits).
fn normalized(searcher: &Searcher, request: &SearchRequest) -> serde_json::Value {
    let mut json = response_json(&searcher.execute(request).unwrap());
    let hits = json["hits"].as_array_mut().unwrap();
    for hit in hits.iter_mut() {
        hit.as_object_mut().unwrap().remove("_cursor");
        if let Some(score) = hit["score"].as_f64() {
            hit["score"] = ((score * 1e4).round() / 1e4).into();
        }
    }
    if request.sort == SortOrder::Relevance {
        // Best first; among equal scores, by time (the layout's order is not the answer).
        hits.sort_by(|a, b| {
            let key = |h: &serde_json::Value| {
                (
                    h["score"].as_f64().unwrap(),
                    h["_time"].as_str().unwrap().to_owned(),
                )
            };
            let (sa, ta) = key(a);
            let (sb, tb) = key(b);
            sb.total_cmp(&sa).then(ta.cmp(&tb))
        });
    }
    json
}

/// One block file with every event, built without the live index.
fn reference(lines: &[String], dir: &std::path::Path) -> Searcher {
    let analyzer = Arc::new(Analyzer::default());
    let mut segment = SegmentBuilder::new(analyzer.clone());
    for line in lines {
        let event = parse_event(line.as_bytes(), 0).unwrap();
        segment.add_event(
            event.time,
            event
                .fields
                .iter()
                .map(|(name, value)| (name.as_str(), value)),
        );
    }
    let path = dir.join("00000001.qblk");
    segment.write_block(&path).unwrap();
    Searcher::new(vec![BlockReader::open(&path).unwrap()], (*analyzer).clone())
}

fn step_strategy() -> impl Strategy<Value = Step> {
    prop_oneof![
        Just(Step::Search),
        Just(Step::Flush),
        Just(Step::Background),
        Just(Step::Nothing),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn answers_do_not_depend_on_where_events_sit(
        events in prop::collection::vec(
            (prop::collection::vec(0usize..7, 1..5), 0usize..3, 0i64..100, 0u32..60),
            1..300,
        ),
        batches in prop::collection::vec((1usize..40, step_strategy()), 1..20),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let lines: Vec<String> = events
            .iter()
            .enumerate()
            .map(|(i, (words, level, n, slot))| event_line(i, words, *level, *n, *slot))
            .collect();
        let data = dir.path().join("data");
        let catalog = Catalog::open_or_create(&data, Settings::default()).unwrap();
        let config = IngestConfig {
            // Several memory blocks before a compaction, and merges of small files.
            max_memory_blocks: 3,
            ..IngestConfig::default()
        };
        let store = quarry_store::LocalDir::shared(&data);
        let (live, _) =
            LiveIndex::open(Box::new(catalog), store, "default", &data.join("wal"), config).unwrap();
        let mut next = 0;
        let mut batch_sizes = batches.iter().cycle();
        while next < lines.len() {
            let (size, step) = batch_sizes.next().unwrap();
            let end = (next + size).min(lines.len());
            let (batch, errors) = Batch::parse(
                0,
                lines[next..end].iter().enumerate().map(|(i, l)| (i + 1, l.as_bytes())),
                &quarry_index::Schema::default(),
            );
            prop_assert!(errors.is_empty());
            live.ingest(batch, false).unwrap();
            next = end;
            match step {
                Step::Search => { live.snapshot().unwrap(); }
                Step::Flush => live.flush().unwrap(),
                Step::Background => { live.background_step().unwrap(); }
                Step::Nothing => {}
            }
        }
        let got = live.snapshot().unwrap();
        let want = reference(&lines, dir.path());
        prop_assert_eq!(got.doc_count(), lines.len() as u64);
        for request in requests() {
            prop_assert_eq!(
                normalized(&got, &request),
                normalized(&want, &request),
                "{:?}", request
            );
        }
        live.close();
    }
}
