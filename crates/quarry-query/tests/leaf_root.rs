//! Leaf and root (leaf.rs) against one searcher: random events split into blocks, the blocks
//! dealt to one to four leaves, and every answer of the leaves merged by the root (statistics
//! phase, partial hits, merge, fetch) must equal the single searcher's over all the blocks:
//! the same hits in the same order with the same scores, the same count, the same histogram,
//! the same events; hits sorted by fields and paged the same; aggregations (overall and per
//! bucket: terms, stats, percentiles, cardinality) with the same results.

use proptest::prelude::*;
use quarry_format::BlockReader;
use quarry_index::{Analyzer, SegmentBuilder};
use quarry_query::agg_tree::{
    AggNode, AggResult, FilterQuery, Metric, MetricResult, NodeKind, TimeBuckets, TopHit,
    TreePartial,
};
use quarry_query::aggregation::AggSpec;
use quarry_query::field_sort::FieldSort;
use quarry_query::leaf::{
    merge_answers, LeafAnswer, LeafQuery, LeafRequest, PartialHit, QuerySource,
};
use quarry_query::request::finish;
use quarry_query::time::Zone;
use quarry_query::weight::GlobalStats;
use quarry_query::{HistogramInterval, HitsRequest, SearchRequest, Searcher, SortOrder};
use std::sync::Arc;

const WORDS: &[&str] = &["alpha", "beta", "gamma", "delta", "error", "timeout"];
const QUERIES: &[&str] = &[
    "alpha",
    "alpha beta",
    "alpha OR error",
    "\"alpha beta\"",
    "*",
    "NOT gamma",
    "alpha AND NOT beta",
    "level:warn timeout",
    "missingword",
];
const SECOND: i64 = 1_000_000_000;

#[derive(Debug, Clone)]
struct Event {
    time: i64,
    message: String,
    level: &'static str,
    /// Not every event has one.
    latency: Option<u32>,
}

fn event_strategy() -> impl Strategy<Value = Event> {
    (
        0..40i64,
        prop::collection::vec(prop::sample::select(WORDS), 1..6),
        prop::sample::select(&["info", "warn", "error"][..]),
        prop::option::of(0..50u32),
    )
        .prop_map(|(second, words, level, latency)| Event {
            // Many ties in time: the order's tie-breaks (block id, doc) are exercised.
            time: 1_700_000_000 * SECOND + second * SECOND,
            message: words.join(" "),
            level,
            latency,
        })
}

/// Block `id` of `events`, encoded in memory.
fn block(id: u64, events: &[Event], analyzer: &Arc<Analyzer>) -> Arc<BlockReader> {
    let mut segment = SegmentBuilder::new(analyzer.clone());
    for event in events {
        let message = quarry_format::Value::Str(event.message.clone());
        let level = quarry_format::Value::Str(event.level.to_owned());
        match event.latency {
            Some(ms) => {
                let latency = quarry_format::Value::I64(i64::from(ms));
                segment.add_event(
                    event.time,
                    [
                        ("message", &message),
                        ("level", &level),
                        ("latency", &latency),
                    ],
                );
            }
            None => segment.add_event(event.time, [("message", &message), ("level", &level)]),
        }
    }
    let path = std::path::PathBuf::from(format!("{id:08}.qblk"));
    let (_, bytes) = segment.encode_block(&path).unwrap();
    Arc::new(
        BlockReader::from_bytes(&path, Arc::new(bytes))
            .unwrap()
            .with_id(id),
    )
}

fn searcher(blocks: Vec<Arc<BlockReader>>, analyzer: &Arc<Analyzer>) -> Searcher {
    Searcher::from_shared(blocks, (**analyzer).clone())
}

/// Scores equal to float rounding: a disjunction adds its clauses' scores in an order that
/// depends on how far dynamic pruning got (MaxScore's essential clauses), which differs
/// between one searcher and a leaf by the last bit, as it does between two runs of Lucene on
/// differently segmented indices.
fn close(a: Option<f32>, b: Option<f32>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => (a - b).abs() <= 1e-5 * a.abs().max(b.abs()).max(1.0),
        (a, b) => a == b,
    }
}

/// The same ranking: position by position the same hit with a close score, or two hits whose
/// scores are close to each other (a near tie that rounding may order either way).
fn same_ranking(got: &[PartialHit], want: &[PartialHit], context: &str) {
    assert_eq!(got.len(), want.len(), "{context}");
    for (g, w) in got.iter().zip(want) {
        assert!(close(g.score, w.score), "{context}: {g:?} against {w:?}");
        if (g.block, g.doc) == (w.block, w.doc) {
            assert_eq!(g.time, w.time, "{context}");
        }
    }
    // Every hit clearly above the last kept score is in both.
    let Some(last) = want.last().and_then(|hit| hit.score) else {
        return;
    };
    let clearly = |hit: &&PartialHit| !close(hit.score, Some(last));
    let mut got_above: Vec<(u64, u32)> = got
        .iter()
        .filter(clearly)
        .map(|h| (h.block, h.doc))
        .collect();
    let mut want_above: Vec<(u64, u32)> = want
        .iter()
        .filter(clearly)
        .map(|h| (h.block, h.doc))
        .collect();
    got_above.sort_unstable();
    want_above.sort_unstable();
    assert_eq!(got_above, want_above, "{context}");
}

/// The root over `leaves`: statistics phase (for relevance), search, merge. The query goes
/// to the leaves as its source (through JSON), each leaf compiles it.
fn root_search(leaves: &[Searcher], source: QuerySource, request: &LeafRequest) -> LeafAnswer {
    let query = LeafQuery {
        source,
        start: i64::MIN,
        end: i64::MAX,
    };
    let sent: LeafQuery = serde_json::from_str(&serde_json::to_string(&query).unwrap()).unwrap();
    // The request too (a tree's filters are compiled again from their DSL).
    let request: LeafRequest =
        serde_json::from_str(&serde_json::to_string(request).unwrap()).unwrap();
    let request = &request;
    let queries: Vec<_> = leaves
        .iter()
        .map(|leaf| leaf.leaf_plan(&sent).unwrap())
        .collect();
    let stats = (request.sort == SortOrder::Relevance).then(|| {
        let mut total = GlobalStats::default();
        for (leaf, query) in leaves.iter().zip(&queries) {
            // Through JSON, as between nodes.
            let stats = leaf.leaf_stats(query).unwrap();
            let sent: GlobalStats =
                serde_json::from_str(&serde_json::to_string(&stats).unwrap()).unwrap();
            total.merge(&sent);
        }
        total
    });
    let answers = leaves
        .iter()
        .zip(&queries)
        .enumerate()
        .map(|(origin, (leaf, query))| {
            let answer = leaf.leaf_search(query, request, stats.as_ref()).unwrap();
            let mut sent: LeafAnswer =
                serde_json::from_str(&serde_json::to_string(&answer).unwrap()).unwrap();
            assert_eq!(
                (&sent.hits, sent.count, &sent.histogram, &sent.failed),
                (
                    &answer.hits,
                    answer.count,
                    &answer.histogram,
                    &answer.failed
                ),
                "a leaf answer survives JSON"
            );
            if let Some(states) = &sent.aggregations {
                states.check(&request.aggregations).unwrap();
            }
            if let Some(states) = &mut sent.tree {
                states.check(&request.tree).unwrap();
                // Each leaf's top hits fetched from it, as a cluster's root tags them.
                states.found_by(origin as u32);
            }
            sent
        });
    merge_answers(request, answers.collect::<Vec<_>>())
}

fn check(events: Vec<Event>, cuts: Vec<usize>, dealt: Vec<usize>, leaves_n: usize) {
    let analyzer = Arc::new(Analyzer::default());
    let mut bounds: Vec<usize> = cuts.iter().map(|c| c % (events.len() + 1)).collect();
    bounds.extend([0, events.len()]);
    bounds.sort_unstable();
    bounds.dedup();
    let blocks: Vec<Arc<BlockReader>> = bounds
        .windows(2)
        .enumerate()
        .map(|(i, w)| block(i as u64 + 1, &events[w[0]..w[1]], &analyzer))
        .collect();
    let single = searcher(blocks.clone(), &analyzer);
    let mut parts: Vec<Vec<Arc<BlockReader>>> = vec![Vec::new(); leaves_n];
    for (i, block) in blocks.iter().enumerate() {
        parts[dealt.get(i).copied().unwrap_or(i) % leaves_n].push(block.clone());
    }
    let leaves: Vec<Searcher> = parts
        .into_iter()
        .map(|blocks| searcher(blocks, &analyzer))
        .collect();
    for text in QUERIES {
        let query = single.parse(text).unwrap();
        for sort in [
            SortOrder::Relevance,
            SortOrder::TimeDesc,
            SortOrder::TimeAsc,
        ] {
            for limit in [1, 7, 1000] {
                let request = LeafRequest {
                    limit,
                    sort,
                    count: true,
                    histogram: Some(7 * SECOND),
                    ..LeafRequest::default()
                };
                let context = format!("{text:?} {sort:?} limit {limit}");
                let expected = single
                    .search(
                        &query,
                        &HitsRequest {
                            limit,
                            count: true,
                            sort,
                            after: None,
                        },
                    )
                    .unwrap();
                let merged = root_search(&leaves, QuerySource::Text(text.to_string()), &request);
                let expected_hits: Vec<PartialHit> = expected
                    .hits
                    .iter()
                    .map(|hit| PartialHit {
                        time: hit.time,
                        block: single.cursor_of(hit).block_id,
                        doc: hit.doc,
                        score: hit.score,
                        block_start: single.blocks()[hit.block as usize].manifest().time_min,
                        sort_values: None,
                    })
                    .collect();
                if sort == SortOrder::Relevance {
                    same_ranking(&merged.hits, &expected_hits, &context);
                } else {
                    assert_eq!(merged.hits, expected_hits, "{context}");
                }
                assert_eq!(merged.count, expected.count, "{context}");
                assert!(merged.failed.is_empty());
                let histogram = single.histogram(&query, 7 * SECOND).unwrap();
                assert_eq!(merged.histogram.as_ref(), Some(&histogram), "{context}");
                // Fetch: each hit's event from the leaf that holds its block.
                let fetched: Vec<_> = expected_hits
                    .iter()
                    .map(|hit| {
                        let leaf = leaves
                            .iter()
                            .find(|leaf| leaf.blocks().iter().any(|b| b.id() == Some(hit.block)))
                            .unwrap();
                        leaf.fetch_partial(std::slice::from_ref(hit))
                            .unwrap()
                            .remove(0)
                    })
                    .collect();
                assert_eq!(fetched, single.events(&expected.hits).unwrap(), "{context}");
            }
        }
        field_sorts_and_aggregations(&single, &leaves, text);
    }
}

/// Nested aggregations: each node kind with metrics below, through the root.
fn tree() -> Vec<AggNode> {
    let metric = |field: &str, metric: Metric| AggNode {
        kind: NodeKind::Metric {
            field: field.into(),
            metric,
            missing: None,
        },
        children: Vec::new(),
    };
    let metrics = || {
        vec![
            metric("latency", Metric::Stats),
            metric("latency", Metric::Percentiles(vec![10.0, 50.0, 99.0])),
            metric("message", Metric::Cardinality),
            metric("latency", Metric::ValueCount),
            metric("latency", Metric::MedianAbsoluteDeviation),
            metric(
                "_time",
                Metric::TopHits {
                    size: 2,
                    oldest_first: false,
                },
            ),
            metric(
                "_time",
                Metric::TopHits {
                    size: 3,
                    oldest_first: true,
                },
            ),
        ]
    };
    let filter = |query: serde_json::Value| FilterQuery::from_dsl(&query, "filter", 0).unwrap();
    vec![
        AggNode {
            kind: NodeKind::Terms {
                field: "level".into(),
                missing: None,
            },
            children: vec![AggNode {
                kind: NodeKind::DateHistogram {
                    field: "_time".into(),
                    buckets: TimeBuckets::Fixed {
                        interval: 5 * SECOND,
                        offset: 0,
                        zone: Zone::Utc,
                    },
                },
                children: metrics(),
            }],
        },
        AggNode {
            kind: NodeKind::Histogram {
                field: "latency".into(),
                interval: 10.0,
                offset: 0.0,
            },
            children: metrics(),
        },
        AggNode {
            kind: NodeKind::Range {
                field: "latency".into(),
                ranges: vec![(None, Some(20.0)), (Some(10.0), None)],
            },
            children: metrics(),
        },
        AggNode {
            kind: NodeKind::Filters {
                filters: vec![
                    filter(serde_json::json!({"match": {"message": "alpha"}})),
                    filter(serde_json::json!({"term": {"level": "warn"}})),
                ],
                other: true,
            },
            children: vec![AggNode {
                kind: NodeKind::Terms {
                    field: "message".into(),
                    missing: None,
                },
                children: Vec::new(),
            }],
        },
        AggNode {
            kind: NodeKind::Missing {
                field: "latency".into(),
            },
            children: Vec::new(),
        },
        metric("latency", Metric::Stats),
    ]
}

/// `results` with every top hit kept replaced by `map` of it.
fn with_top_hits(mut results: Vec<AggResult>, map: &dyn Fn(&TopHit) -> TopHit) -> Vec<AggResult> {
    for result in &mut results {
        match result {
            AggResult::Metric(MetricResult::TopHits { hits, .. }) => {
                for hit in hits.iter_mut() {
                    *hit = map(hit);
                }
            }
            AggResult::Metric(_) => {}
            AggResult::Buckets(buckets) => {
                for bucket in buckets.iter_mut() {
                    bucket.children = with_top_hits(std::mem::take(&mut bucket.children), map);
                }
            }
        }
    }
    results
}

/// `results` with every node's buckets in key order (terms come in no particular order).
fn in_key_order(mut results: Vec<AggResult>) -> Vec<AggResult> {
    for result in &mut results {
        if let AggResult::Buckets(buckets) = result {
            buckets.sort_by_key(|bucket| format!("{:?}", bucket.key));
            for bucket in buckets.iter_mut() {
                bucket.children = in_key_order(std::mem::take(&mut bucket.children));
            }
        }
    }
    results
}

/// Field sorts (paged) and aggregations through the root, against `single.execute`.
fn field_sorts_and_aggregations(single: &Searcher, leaves: &[Searcher], text: &str) {
    let nodes = tree();
    let request = LeafRequest {
        limit: 3,
        count: true,
        tree: nodes.clone(),
        ..LeafRequest::default()
    };
    let merged = root_search(leaves, QuerySource::Text(text.to_string()), &request);
    let want = single
        .execute(&SearchRequest {
            query: text.to_string(),
            limit: 3,
            count: true,
            tree: nodes.clone(),
            ..SearchRequest::default()
        })
        .unwrap();
    let got = merged
        .tree
        .unwrap_or_else(|| TreePartial::empty(&nodes))
        .results(&nodes);
    let context = format!("{text:?} nested aggregations");
    assert_eq!(merged.count, want.count, "{context}");
    // Top hits: the same ones (ties in time ordered by block id and doc, as a time sort
    // orders them), each fetched from the leaf that found it as one searcher reads it.
    let located = |hit: &TopHit| -> TopHit {
        let fetched = leaves[hit.origin as usize]
            .fetch_partial(&[hit.partial()])
            .unwrap();
        assert_eq!(
            fetched,
            single.fetch_partial(&[hit.partial()]).unwrap(),
            "{context}"
        );
        TopHit { origin: 0, ..*hit }
    };
    assert_eq!(
        in_key_order(with_top_hits(got, &located)),
        in_key_order(want.tree.unwrap()),
        "{context}"
    );

    let specs: Vec<AggSpec> = [
        "count",
        "terms(level, 2)",
        "stats(latency)",
        "percentiles(latency, 10, 50, 99)",
        "cardinality(latency)",
        "avg(latency)",
    ]
    .iter()
    .map(|s| AggSpec::parse(s).unwrap())
    .collect();
    for histogram in [None, Some(7 * SECOND)] {
        let request = LeafRequest {
            limit: 0,
            count: true,
            histogram,
            aggregations: specs.clone(),
            ..LeafRequest::default()
        };
        let merged = root_search(leaves, QuerySource::Text(text.to_string()), &request);
        let got = finish(
            &request,
            merged.count,
            merged.histogram,
            merged.aggregations,
        )
        .unwrap();
        let want = single
            .execute(&SearchRequest {
                query: text.to_string(),
                limit: 0,
                count: true,
                histogram: histogram.map(HistogramInterval::Fixed),
                aggregations: specs.clone(),
                ..SearchRequest::default()
            })
            .unwrap();
        let context = format!("{text:?} aggregations, histogram {histogram:?}");
        assert_eq!(got.0, want.count, "{context}");
        assert_eq!(got.1, want.histogram, "{context}");
        assert_eq!(got.2, want.aggregations, "{context}");
    }
    for sort in [
        FieldSort::by("latency", true),
        FieldSort {
            keys: vec![
                FieldSort::by("level", false).keys.remove(0),
                FieldSort::by("latency", false).keys.remove(0),
            ],
        },
    ] {
        let context = format!("{text:?} sorted by {sort:?}");
        let want = single
            .execute(&SearchRequest {
                query: text.to_string(),
                limit: 1000,
                sort_field: Some(sort.clone()),
                ..SearchRequest::default()
            })
            .unwrap();
        let want: Vec<_> = want.hits.iter().map(|h| h.sort_cursor.clone()).collect();
        // Pages of 4, each after the last hit of the one before.
        let mut got = Vec::new();
        let mut after = None;
        loop {
            let request = LeafRequest {
                limit: 4,
                sort_field: Some(sort.clone()),
                sort_after: after,
                ..LeafRequest::default()
            };
            let page = root_search(leaves, QuerySource::Text(text.to_string()), &request);
            let Some(last) = page.hits.last() else {
                break;
            };
            after = last.sort_cursor();
            got.extend(page.hits.iter().map(|h| h.sort_cursor()));
        }
        assert_eq!(got, want, "{context}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

    #[test]
    fn leaves_merged_by_the_root_answer_as_one_searcher(
        events in prop::collection::vec(event_strategy(), 1..120),
        cuts in prop::collection::vec(0..200usize, 0..6),
        dealt in prop::collection::vec(0..4usize, 7),
        leaves in 1..5usize,
    ) {
        check(events, cuts, dealt, leaves);
    }
}

/// Paging a tail through the root: each page continues after the last hit of the one before
/// (`after`), and the pages together are the single searcher's whole tail.
#[test]
fn a_tail_pages_through_the_root_like_one_searcher() {
    let analyzer = Arc::new(Analyzer::default());
    let events: Vec<Event> = (0..300)
        .map(|i| Event {
            time: (i / 3) * SECOND,
            message: WORDS[i as usize % WORDS.len()].to_owned(),
            level: "info",
            latency: None,
        })
        .collect();
    let blocks: Vec<Arc<BlockReader>> = events
        .chunks(70)
        .enumerate()
        .map(|(i, chunk)| block(i as u64 + 1, chunk, &analyzer))
        .collect();
    let single = searcher(blocks.clone(), &analyzer);
    let leaves = [
        searcher(vec![blocks[0].clone(), blocks[2].clone()], &analyzer),
        searcher(
            vec![blocks[1].clone(), blocks[3].clone(), blocks[4].clone()],
            &analyzer,
        ),
    ];
    let query = single.parse("alpha OR beta").unwrap();
    let all = single
        .search(
            &query,
            &HitsRequest {
                limit: 1000,
                count: false,
                sort: SortOrder::TimeDesc,
                after: None,
            },
        )
        .unwrap();
    let mut paged = Vec::new();
    let mut after = None;
    loop {
        let request = LeafRequest {
            limit: 9,
            sort: SortOrder::TimeDesc,
            after,
            ..LeafRequest::default()
        };
        let source = QuerySource::Dsl {
            query: serde_json::json!({"query_string": {"query": "alpha OR beta"}}),
            now: 0,
        };
        let page = root_search(&leaves, source, &request);
        let Some(last) = page.hits.last() else {
            break;
        };
        after = Some(quarry_query::cursor::Cursor {
            time: last.time,
            block_id: last.block,
            doc: last.doc,
        });
        paged.extend(page.hits);
    }
    let expected: Vec<(i64, u64, u32)> = all
        .hits
        .iter()
        .map(|hit| (hit.time, single.cursor_of(hit).block_id, hit.doc))
        .collect();
    let got: Vec<(i64, u64, u32)> = paged.iter().map(|h| (h.time, h.block, h.doc)).collect();
    assert_eq!(got, expected);
    assert_eq!(got.len(), 100);
}
