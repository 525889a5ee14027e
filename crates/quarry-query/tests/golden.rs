//! Golden data directory: a block of format version 1, committed, that every later build must
//! still open and answer the same way (`golden/v1/`, answers in `golden/v1.expected.json`).
//!
//! Regenerate only when the format version changes, into a new `vN` directory:
//! `QUARRY_WRITE_GOLDEN=1 cargo test -p quarry-query --test golden`.

use quarry_format::Value;
use quarry_index::{Analyzer, SegmentBuilder};
use quarry_query::{value_to_json, SearchRequest, Searcher, SortOrder};
use quarry_store::{BlockEntry, Catalog, Settings};
use std::path::Path;

const QUERIES: &[&str] = &[
    "error",
    "connection reset",
    "\"connection reset\"",
    "+error +service:api",
    "level:(warn OR error) -status:200",
    "host:=\"web-01\"",
    "status:500",
    "*",
    "timeout",
];

fn golden_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

fn events() -> Vec<(i64, Vec<(String, Value)>)> {
    let services = ["api", "db", "auth"];
    let levels = ["info", "warn", "error"];
    let messages = [
        "connection reset by peer",
        "request served",
        "timeout waiting for upstream connection",
        "error reading config, reset to defaults",
        "user logged in",
    ];
    (0..200i64)
        .map(|i| {
            let fields = vec![
                (
                    "service".to_owned(),
                    Value::Str(services[(i % 3) as usize].to_owned()),
                ),
                (
                    "level".to_owned(),
                    Value::Str(levels[(i * 7 % 3) as usize].to_owned()),
                ),
                (
                    "message".to_owned(),
                    Value::Str(format!("{} #{i}", messages[(i * 11 % 5) as usize])),
                ),
                (
                    "status".to_owned(),
                    Value::I64([200, 500, 404][(i % 3) as usize]),
                ),
                ("host".to_owned(), Value::Str(format!("web-{:02}", i % 4))),
                ("latency".to_owned(), Value::F64(i as f64 * 1.5)),
                ("ok".to_owned(), Value::Bool(i % 2 == 0)),
            ];
            // Times out of order on purpose: the block sorts them.
            (
                1_700_000_000_000_000_000 + ((i * 37) % 200) * 1_000_000_000,
                fields,
            )
        })
        .collect()
}

fn answers(searcher: &Searcher) -> serde_json::Value {
    let mut out = serde_json::Map::new();
    for query in QUERIES {
        let parsed = searcher.parse(query).unwrap();
        let request = SearchRequest {
            limit: 5,
            count: true,
            sort: SortOrder::Relevance,
            ..Default::default()
        };
        let result = searcher.search(&parsed, &request).unwrap();
        let hits: Vec<serde_json::Value> = result
            .hits
            .iter()
            .map(|hit| {
                let event: serde_json::Map<String, serde_json::Value> =
                    searcher.event(hit).unwrap().iter().map(|(k, v)| (k.clone(), value_to_json(v))).collect();
                serde_json::json!({ "score": format!("{:.4}", hit.score.unwrap()), "time": hit.time, "event": event })
            })
            .collect();
        let tail = searcher
            .search(
                &parsed,
                &SearchRequest {
                    limit: 3,
                    count: false,
                    sort: SortOrder::TimeDesc,
                    ..Default::default()
                },
            )
            .unwrap()
            .hits
            .iter()
            .map(|h| h.time)
            .collect::<Vec<_>>();
        out.insert(
            query.to_string(),
            serde_json::json!({ "count": result.count, "top": hits, "tail": tail }),
        );
    }
    serde_json::Value::Object(out)
}

#[test]
fn golden_v1_block_still_opens_and_answers() {
    let dir = golden_dir().join("v1");
    let expected_path = golden_dir().join("v1.expected.json");
    if std::env::var_os("QUARRY_WRITE_GOLDEN").is_some() {
        let _ = std::fs::remove_dir_all(&dir);
        let mut catalog = Catalog::open_or_create(&dir, Settings::default()).unwrap();
        let mut segment = SegmentBuilder::new(std::sync::Arc::new(Analyzer::default()));
        for (time, fields) in events() {
            segment.add_event(time, fields.iter().map(|(k, v)| (k.as_str(), v)));
        }
        let id = catalog.allocate_block_id();
        let path = Catalog::block_path(&dir, id);
        let manifest = segment.write_block(&path).unwrap();
        let bytes = std::fs::metadata(&path).unwrap().len();
        let entry = BlockEntry {
            id,
            docs: manifest.doc_count.into(),
            time_min: manifest.time_min,
            time_max: manifest.time_max,
            bytes,
        };
        catalog.commit_block(entry, &[]).unwrap();
        drop(catalog);
        let _ = std::fs::remove_file(dir.join(".lock"));
        let searcher = Searcher::open(&dir).unwrap();
        let text = serde_json::to_string_pretty(&answers(&searcher)).unwrap();
        std::fs::write(&expected_path, text + "\n").unwrap();
    }
    let searcher = Searcher::open(&dir).expect("golden v1 data directory opens");
    for block in searcher.blocks() {
        block.verify().unwrap();
    }
    let expected: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&expected_path).unwrap()).unwrap();
    assert_eq!(answers(&searcher), expected);
    // The golden answers are not vacuous.
    assert_eq!(expected["*"]["count"], 200);
    assert!(expected["\"connection reset\""]["count"].as_u64().unwrap() > 0);
}
