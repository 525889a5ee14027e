//! Golden data directories: one block per format version, committed, that every later build
//! must still open and answer the same way (`golden/vN/`, answers in `golden/vN.expected.json`).
//! Both hold the same events, so the log queries (ranges, time, histograms, aggregations) must
//! also answer the same on both: version 1 blocks have no numeric terms and no time offsets,
//! and are answered by the fallbacks (column scans, `_time` chunk decodes).
//!
//! Version 3 adds doc values (aggregations read them instead of the chunks), so its answers
//! must equal version 2's exactly; version 4 adds page checksums of postings and positions,
//! and answers as version 3 does; version 5 stores term infos as grouped varints, and answers
//! as version 4 does; version 6 stores less (lone docs and constant positions in term infos,
//! shared postings, packed norms, no chunk data where doc values hold the column), and answers
//! as version 5 does; version 7 stores long strings as templates and variables and `_time` only
//! in its time offsets, and answers as version 6 does; version 8 keeps no positions of unmapped
//! fields (phrases read them back from the values), and answers as version 7 does; version 9
//! stores the resident sections compressed, and answers as version 8 does; version 10 lays
//! postings out compactly, and version 11 stores the fixed words of message templates as
//! unions of templates; each answers as version 9 does.
//!
//! Write a new version's directory only when the format version changes:
//! `QUARRY_WRITE_GOLDEN=v3 cargo test -p quarry-query --test golden`.

use quarry_format::Value;
use quarry_index::{Analyzer, SegmentBuilder};
use quarry_query::aggregation::AggSpec;
use quarry_query::{value_to_json, HitsRequest, Searcher, SortOrder};
use quarry_store::{BlockStore, Catalog, Settings};
use std::path::Path;

#[path = "../../quarry-store/tests/support/seaweedfs.rs"]
mod seaweedfs;

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

/// Log queries, answered with counts, tails, 10-second histograms and aggregations.
const LOG_QUERIES: &[&str] = &[
    "latency:[30 TO 90]",
    "latency:>=250.5",
    "status:[400 TO 499] OR status:>500",
    "_time:[1700000050 TO 1700000120}",
    "error AND _time:>=1700000100",
    "_exists_:latency -status:404",
    "ok:true AND latency:<20",
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
        let request = HitsRequest {
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
                &HitsRequest {
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

fn log_answers(searcher: &Searcher) -> serde_json::Value {
    let specs: Vec<AggSpec> = ["stats(latency)", "terms(service, 2)", "count"]
        .iter()
        .map(|s| AggSpec::parse(s).unwrap())
        .collect();
    let mut out = serde_json::Map::new();
    for query in LOG_QUERIES {
        let parsed = searcher.parse(query).unwrap();
        let tail: Vec<i64> = searcher
            .search(
                &parsed,
                &HitsRequest {
                    limit: 4,
                    sort: SortOrder::TimeDesc,
                    ..Default::default()
                },
            )
            .unwrap()
            .hits
            .iter()
            .map(|h| h.time)
            .collect();
        let histogram = searcher.histogram(&parsed, 10_000_000_000).unwrap();
        let aggregations = searcher.aggregate(&parsed, &specs).unwrap();
        out.insert(
            query.to_string(),
            serde_json::json!({
                "count": searcher.count(&parsed).unwrap(),
                "tail": tail,
                "histogram": histogram,
                "aggregations": aggregations,
            }),
        );
    }
    serde_json::Value::Object(out)
}

/// Writes the golden directory of the current format version into `dir`.
fn write_golden(dir: &Path) {
    let _ = std::fs::remove_dir_all(dir);
    let mut catalog = Catalog::open_or_create(dir, Settings::default()).unwrap();
    let mut segment = SegmentBuilder::new(std::sync::Arc::new(Analyzer::default()));
    for (time, fields) in events() {
        segment.add_event(time, fields.iter().map(|(k, v)| (k.as_str(), v)));
    }
    let id = catalog.allocate_block_id();
    let input = segment.into_block_input().unwrap();
    let entry = catalog.local_store().put(id, input).unwrap();
    catalog.commit_block(entry, &[]).unwrap();
    drop(catalog);
    let _ = std::fs::remove_file(dir.join(".lock"));
}

/// Opens golden version `version`, checks every block and returns the searcher and the
/// expected answers (written first when `QUARRY_WRITE_GOLDEN` names this version).
fn golden(version: &str, with_logs: bool) -> (Searcher, serde_json::Value) {
    let dir = golden_dir().join(version);
    let expected_path = golden_dir().join(format!("{version}.expected.json"));
    if std::env::var("QUARRY_WRITE_GOLDEN").as_deref() == Ok(version) {
        write_golden(&dir);
        let searcher = Searcher::open(&dir).unwrap();
        let mut answers = answers(&searcher);
        if with_logs {
            answers["log queries"] = log_answers(&searcher);
        }
        let text = serde_json::to_string_pretty(&answers).unwrap();
        std::fs::write(&expected_path, text + "\n").unwrap();
    }
    let searcher = Searcher::open(&dir).expect("golden data directory opens");
    for block in searcher.blocks() {
        block.verify().unwrap();
    }
    let expected: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&expected_path).unwrap()).unwrap();
    // The golden answers are not vacuous.
    assert_eq!(expected["*"]["count"], 200);
    assert!(expected["\"connection reset\""]["count"].as_u64().unwrap() > 0);
    (searcher, expected)
}

/// The current format's golden answers, with the blocks read from an S3-compatible store (a
/// throwaway SeaweedFS) through an empty cache: a block opens from one ranged read of its end
/// and a query fetches the rest piecemeal, and every answer is the one read from local files.
#[test]
fn golden_answers_are_the_same_from_object_storage() {
    let Some(weed) = seaweedfs::SeaweedFs::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    write_golden(dir.path());
    let local = Searcher::open(dir.path()).unwrap();
    let mut expected = answers(&local);
    expected["log queries"] = log_answers(&local);

    let storage = |cache: &Path| {
        quarry_store::ObjectStorage::s3_with(&weed.url("golden"), cache, &weed.settings()).unwrap()
    };
    let upload_cache = tempfile::tempdir().unwrap();
    let uploaded = storage(upload_cache.path()).tenant_blocks("default");
    let (_, entries) = Catalog::read_only(dir.path()).unwrap();
    let local_store = quarry_store::LocalDir::new(dir.path());
    for entry in &entries {
        let bytes = std::fs::read(local_store.path(entry.id)).unwrap();
        uploaded.put_bytes(entry.id, &bytes).unwrap();
        assert!(entry.open_from > 0, "new blocks record where opening reads");
    }
    let empty_cache = tempfile::tempdir().unwrap();
    let storage = storage(empty_cache.path());
    let remote = Searcher::open_with(dir.path(), &storage.tenant_blocks("default")).unwrap();
    assert!(remote.damaged().is_empty(), "{:?}", remote.damaged());
    let opened = storage
        .stats()
        .gets
        .load(std::sync::atomic::Ordering::Relaxed);
    assert!(
        opened <= 2 * entries.len() as u64,
        "{opened} requests opened {} blocks",
        entries.len()
    );
    let mut answered = answers(&remote);
    answered["log queries"] = log_answers(&remote);
    assert_eq!(answered, expected);
    for block in remote.blocks() {
        block.verify().unwrap();
    }
}

#[test]
fn golden_v1_block_still_opens_and_answers() {
    let (searcher, expected) = golden("v1", false);
    assert_eq!(answers(&searcher), expected);
    // The log queries answer the same on version 1 (fallbacks) as on version 2.
    let (v2, _) = golden("v2", true);
    assert_eq!(log_answers(&searcher), log_answers(&v2));
}

#[test]
fn golden_v2_block_still_opens_and_answers() {
    let (searcher, expected) = golden("v2", true);
    let mut answers = answers(&searcher);
    answers["log queries"] = log_answers(&searcher);
    assert_eq!(answers, expected);
    let counts: Vec<u64> = expected["log queries"]
        .as_object()
        .unwrap()
        .values()
        .map(|a| a["count"].as_u64().unwrap())
        .collect();
    assert!(counts.iter().all(|&c| c > 0 && c < 200), "{counts:?}");
}

#[test]
fn golden_v3_block_still_opens_and_answers() {
    let (searcher, expected) = golden("v3", true);
    let mut answers = answers(&searcher);
    answers["log queries"] = log_answers(&searcher);
    assert_eq!(answers, expected);
    // Doc values change how aggregations read values, not what they answer.
    let v2: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(golden_dir().join("v2.expected.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(answers, v2);
    let block = &searcher.blocks()[0];
    let service = block.field_ordinal("service").unwrap();
    assert!(block
        .doc_values(service, quarry_format::ColumnType::Str)
        .is_some());
}

#[test]
fn golden_v4_block_still_opens_and_answers() {
    let (searcher, expected) = golden("v4", true);
    let mut answers = answers(&searcher);
    answers["log queries"] = log_answers(&searcher);
    assert_eq!(answers, expected);
    // Page checksums change what is checked, not what is answered.
    let v3: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(golden_dir().join("v3.expected.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(answers, v3);
    assert!(searcher.blocks()[0].manifest().page_checksums.is_some());
}

#[test]
fn golden_v5_block_still_opens_and_answers() {
    let (searcher, expected) = golden("v5", true);
    let mut answers = answers(&searcher);
    answers["log queries"] = log_answers(&searcher);
    assert_eq!(answers, expected);
    // Grouped varint term infos change how they are stored, not what is answered.
    let v4: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(golden_dir().join("v4.expected.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(answers, v4);
    let block = &searcher.blocks()[0];
    assert_eq!(block.format_version(), 5);
    // Smaller than version 4's fixed 40 bytes an entry.
    assert!(block.manifest().term_infos.len < block.manifest().term_count * 40 / 3);
}

#[test]
fn golden_v6_block_still_opens_and_answers() {
    let (searcher, expected) = golden("v6", true);
    let mut answers = answers(&searcher);
    answers["log queries"] = log_answers(&searcher);
    assert_eq!(answers, expected);
    // Inline lone docs, constant positions, shared postings, packed norms and chunks rebuilt
    // from doc values change how the block is stored, not what is answered.
    let v5: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(golden_dir().join("v5.expected.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(answers, v5);
    let block = &searcher.blocks()[0];
    assert_eq!(block.format_version(), 6);
    // The block uses what version 6 adds: a string column with doc values and no chunk data,
    // packed norms of less than a byte a doc, and terms with a lone doc inline.
    let service = block.field_ordinal("service").unwrap();
    let column = &block.manifest().fields[service as usize].columns[0];
    assert!(column.doc_values.is_some() && column.data.len == 0);
    let text = block.manifest().fields[service as usize]
        .text
        .as_ref()
        .unwrap();
    assert!(text.norms.len < u64::from(block.doc_count()));
    let mut infos = block.term_infos();
    let inline = (0..block.manifest().term_count)
        .filter(|&ordinal| infos.get(ordinal).unwrap().inline_doc.is_some())
        .count();
    assert!(inline > 0);
}

#[test]
fn golden_v7_block_still_opens_and_answers() {
    let (searcher, expected) = golden("v7", true);
    let mut answers = answers(&searcher);
    answers["log queries"] = log_answers(&searcher);
    assert_eq!(answers, expected);
    // Templated string chunks change how messages are stored, not what is answered.
    let v6: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(golden_dir().join("v6.expected.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(answers, v6);
    let block = &searcher.blocks()[0];
    assert_eq!(block.format_version(), 7);
    // The block uses what version 7 adds: the messages' column has a template dictionary
    // (five shapes, each with the event's number as its variable), and `_time` keeps no
    // chunk data (its chunks come from the time offsets).
    let message = block.field_ordinal("message").unwrap();
    let column = &block.manifest().fields[message as usize].columns[0];
    assert!(column.templates.is_some() && column.doc_values.is_none());
    let time = block.field_ordinal("_time").unwrap();
    assert_eq!(
        block.manifest().fields[time as usize].columns[0].data.len,
        0
    );
}

#[test]
fn golden_v8_block_still_opens_and_answers() {
    let (searcher, expected) = golden("v8", true);
    let mut answers = answers(&searcher);
    answers["log queries"] = log_answers(&searcher);
    assert_eq!(answers, expected);
    // Positions read back from the values change how phrases find them, not what they find.
    let v7: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(golden_dir().join("v7.expected.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(answers, v7);
    let block = &searcher.blocks()[0];
    assert_eq!(block.format_version(), 8);
    // The block uses what version 8 adds: the messages' token terms keep no positions (the
    // phrase `"connection reset"` above found its docs by analysing their values).
    let message = block.field_ordinal("message").unwrap();
    let text = block.manifest().fields[message as usize]
        .text
        .as_ref()
        .unwrap();
    assert!(text.positions_from_values);
    assert_eq!(block.manifest().positions.len, 0);
}

#[test]
fn golden_v9_block_still_opens_and_answers() {
    let (searcher, expected) = golden("v9", true);
    let mut answers = answers(&searcher);
    answers["log queries"] = log_answers(&searcher);
    assert_eq!(answers, expected);
    // Resident sections stored compressed change how they are stored, not what is answered.
    let v8: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(golden_dir().join("v8.expected.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(answers, v8);
    let block = &searcher.blocks()[0];
    assert_eq!(block.format_version(), 9);
    // The block uses what version 9 adds: resident sections in their stored form, the term
    // FST and term infos zstd-compressed (codec 1, FORMAT.md "Stored sections"), the time
    // index (8 bytes a 128 docs: too short to pay) as it is (codec 0).
    let file = std::fs::read(block.path()).unwrap();
    let manifest = block.manifest();
    let stored = |section: quarry_format::block::SectionRef| {
        &file[section.offset as usize..(section.offset + section.len) as usize]
    };
    assert_eq!(stored(manifest.term_fst)[0], 1);
    assert_eq!(stored(manifest.term_infos)[0], 1);
    assert_eq!(stored(manifest.time_index)[0], 0);
    let expanded = quarry_format::block::stored::decode(stored(manifest.term_infos)).unwrap();
    assert!(expanded.len() as u64 > manifest.term_infos.len);
}

#[test]
fn golden_v10_block_still_opens_and_answers() {
    let (searcher, expected) = golden("v10", true);
    let mut answers = answers(&searcher);
    answers["log queries"] = log_answers(&searcher);
    assert_eq!(answers, expected);
    // The compact postings layout changes how postings are laid out, not what is answered.
    let v9: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(golden_dir().join("v9.expected.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(answers, v9);
    let block = &searcher.blocks()[0];
    assert_eq!(block.format_version(), 10);
    // The block uses what version 10 adds: the same events' postings take fewer bytes than
    // in version 9 (the skip entries of the fields' common terms, the tails' frequencies).
    let v9 = Searcher::open(&golden_dir().join("v9")).unwrap();
    let v9 = &v9.blocks()[0];
    assert_eq!(v9.format_version(), 9);
    let (postings, postings_v9) = (block.manifest().postings.len, v9.manifest().postings.len);
    assert!(
        postings < postings_v9,
        "postings {postings} bytes, {postings_v9} in version 9"
    );
}

#[test]
fn golden_v11_block_still_opens_and_answers() {
    let (searcher, expected) = golden("v11", true);
    let mut answers = answers(&searcher);
    answers["log queries"] = log_answers(&searcher);
    assert_eq!(answers, expected);
    // Unions of templates change how a term's docs are stored, not which they are.
    let v10: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(golden_dir().join("v10.expected.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(answers, v10);
    let block = &searcher.blocks()[0];
    assert_eq!(block.format_version(), 11);
    // The block uses what version 11 adds: some token terms are unions, and the template
    // terms they list are in the dictionary.
    let mut infos = block.term_infos();
    let unions = (0..block.manifest().term_count)
        .filter(|&ordinal| infos.get(ordinal).unwrap().template_union)
        .count();
    assert!(unions > 0, "no term is a union of templates");
    let message = block.field_ordinal("message").unwrap();
    assert!(block.has_terms_of_kind(message, quarry_format::TermKind::Template));
}
