//! End-to-end tests of the `quarry` binary on the Loghub and Wikipedia samples in
//! ../shared/data (skipped with a message when it is absent), checked against a brute-force
//! scan of the same input.

use quarry_index::Analyzer;
use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn shared_data() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data");
    if dir.join("loghub").is_dir() {
        Some(dir)
    } else {
        eprintln!("skipped: ../shared/data is absent");
        None
    }
}

fn quarry(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_quarry"))
        .args(args)
        .output()
        .expect("run quarry")
}

fn stdout_lines(output: &Output) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad JSON line {l:?}: {e}")))
        .collect()
}

fn count(data: &Path, query: &str) -> u64 {
    let output = quarry(&[
        "search",
        "--data",
        data.to_str().unwrap(),
        "--count",
        "--limit",
        "0",
        query,
    ]);
    assert!(
        output.status.success(),
        "{query}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let lines = stdout_lines(&output);
    assert_eq!(lines.len(), 1, "{query}");
    lines[0]["count"].as_u64().unwrap()
}

/// What a query should match, by brute force: a test on an event's tokens, field by field.
type BruteMatch = Box<dyn Fn(&[Vec<String>]) -> bool>;

/// Brute force: events (field -> text) whose tokens satisfy `matches`.
fn brute_count(events: &[Vec<(String, String)>], matches: impl Fn(&[Vec<String>]) -> bool) -> u64 {
    let analyzer = Analyzer::default();
    events
        .iter()
        .filter(|event| {
            let fields: Vec<Vec<String>> = event
                .iter()
                .map(|(_, text)| analyzer.tokens(text).into_iter().map(|(_, t)| t).collect())
                .collect();
            matches(&fields)
        })
        .count() as u64
}

fn has(fields: &[Vec<String>], word: &str) -> bool {
    fields.iter().any(|tokens| tokens.iter().any(|t| t == word))
}

fn has_phrase(fields: &[Vec<String>], a: &str, b: &str) -> bool {
    fields
        .iter()
        .any(|tokens| tokens.windows(2).any(|w| w[0] == a && w[1] == b))
}

/// Loghub raw lines as events `{"system", "message"}`, plus one malformed line at a known place.
fn loghub_events(shared: &Path, out: &Path) -> (Vec<Vec<(String, String)>>, u64) {
    let mut events = Vec::new();
    let mut file = std::fs::File::create(out).unwrap();
    let mut line_number = 0u64;
    let mut bad_line = 0;
    let mut systems: Vec<PathBuf> = std::fs::read_dir(shared.join("loghub"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    systems.sort();
    for system in systems {
        let name = system.file_name().unwrap().to_string_lossy().into_owned();
        let log = system.join(format!("{name}_2k.log"));
        let text = String::from_utf8_lossy(&std::fs::read(&log).unwrap()).into_owned();
        for line in text.lines() {
            let event = serde_json::json!({ "system": name, "message": line });
            writeln!(file, "{event}").unwrap();
            line_number += 1;
            events.push(vec![
                ("system".to_owned(), name.clone()),
                ("message".to_owned(), line.to_owned()),
            ]);
            if line_number == 1000 {
                writeln!(file, "{{\"system\": \"broken").unwrap();
                line_number += 1;
                bad_line = line_number;
            }
        }
    }
    (events, bad_line)
}

#[test]
fn loghub_index_search_resume_merge() {
    let Some(shared) = shared_data() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("loghub.json");
    let (events, bad_line) = loghub_events(&shared, &input);
    let data = tmp.path().join("data");
    let data_arg = data.to_str().unwrap();

    // A small budget forces several blocks (and the automatic merge of small ones).
    let output = quarry(&[
        "index",
        "--data",
        data_arg,
        "--threads",
        "2",
        "--memory-budget",
        "2MB",
        input.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(3),
        "skipped lines set the exit status: {stderr}"
    );
    assert!(
        stderr.contains(&format!("{}:{bad_line}: invalid JSON", input.display())),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("indexed {} events", events.len())),
        "{stderr}"
    );
    assert_eq!(count(&data, "*"), events.len() as u64);

    let checks: Vec<(&str, BruteMatch)> = vec![
        ("error", Box::new(|f: &[Vec<String>]| has(f, "error"))),
        ("INFO", Box::new(|f: &[Vec<String>]| has(f, "info"))),
        (
            "failed connection",
            Box::new(|f: &[Vec<String>]| has(f, "failed") || has(f, "connection")),
        ),
        (
            "+block +terminating",
            Box::new(|f: &[Vec<String>]| has(f, "block") && has(f, "terminating")),
        ),
        (
            "packetresponder -terminating",
            Box::new(|f: &[Vec<String>]| has(f, "packetresponder") && !has(f, "terminating")),
        ),
        (
            "\"for block\"",
            Box::new(|f: &[Vec<String>]| has_phrase(f, "for", "block")),
        ),
        (
            "system:hdfs AND info",
            Box::new(|f: &[Vec<String>]| f[0].iter().any(|t| t == "hdfs") && has(f, "info")),
        ),
    ];
    for (query, matches) in &checks {
        assert_eq!(
            count(&data, query),
            brute_count(&events, matches),
            "count of {query}"
        );
    }
    assert_eq!(count(&data, "system:=\"Spark\""), 2000);

    // Hits print as JSON lines with score, _time and the event.
    let output = quarry(&["search", "--data", data_arg, "--limit", "3", "error"]);
    let hits = stdout_lines(&output);
    assert_eq!(hits.len(), 3);
    for hit in &hits {
        assert!(hit["score"].as_f64().unwrap() > 0.0);
        assert!(hit["_time"].as_str().unwrap().ends_with('Z'));
        let message = hit["event"]["message"].as_str().unwrap();
        assert!(message.to_lowercase().contains("error"), "{message}");
    }
    let scores: Vec<f64> = hits.iter().map(|h| h["score"].as_f64().unwrap()).collect();
    assert!(scores.windows(2).all(|w| w[0] >= w[1]));

    // A re-run adds nothing: every chunk is already in a committed block.
    let output = quarry(&["index", "--data", data_arg, input.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("indexed 0 events") && stderr.contains("already indexed"),
        "{stderr}"
    );
    assert_eq!(count(&data, "*"), events.len() as u64);

    // Merge into one block; answers do not change.
    let output = quarry(&["merge", "--data", data_arg]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let blocks = std::fs::read_dir(data.join("blocks")).unwrap().count();
    assert_eq!(blocks, 1);
    for (query, matches) in &checks {
        assert_eq!(
            count(&data, query),
            brute_count(&events, matches),
            "count of {query} after merge"
        );
    }
    let output = quarry(&["check", "--data", data_arg]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
}

#[test]
fn resume_after_interrupted_run_does_not_duplicate() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("events.json");
    let mut file = std::fs::File::create(&input).unwrap();
    // ~12 MB so the reader cuts several 4 MiB chunks.
    for i in 0..120_000u32 {
        writeln!(
            file,
            "{{\"time\": {}, \"message\": \"event number {i} {}\"}}",
            1_700_000_000 + i,
            "x".repeat(60)
        )
        .unwrap();
    }
    drop(file);
    let data = tmp.path().join("data");
    let data_arg = data.to_str().unwrap();
    // First run: 1 thread, a tiny budget, so a block is committed per chunk; kill it midway.
    let mut child = Command::new(env!("CARGO_BIN_EXE_quarry"))
        .args([
            "index",
            "--data",
            data_arg,
            "--threads",
            "1",
            "--memory-budget",
            "1MB",
            "--no-merge",
            input.to_str().unwrap(),
        ])
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let catalog = data.join("catalog.json");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let blocks = std::fs::read_to_string(&catalog)
            .ok()
            .map_or(0, |c| c.matches("\"time_min\"").count());
        if blocks >= 1 || std::time::Instant::now() > deadline {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let _ = child.kill();
    let _ = child.wait();
    let output = quarry(&["index", "--data", data_arg, input.to_str().unwrap()]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(count(&data, "*"), 120_000);
    assert_eq!(count(&data, "number"), 120_000);
    assert_eq!(count(&data, "\"number 77777\""), 1);
}

#[test]
fn bad_queries_name_the_position() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("one.json");
    std::fs::write(&input, "{\"message\": \"hello world\"}\n").unwrap();
    let data = tmp.path().join("data");
    assert!(quarry(&[
        "index",
        "--data",
        data.to_str().unwrap(),
        input.to_str().unwrap()
    ])
    .status
    .success());
    for (query, message) in [
        ("hello AND", "AND needs a clause after it at position 9"),
        ("\"hello world", "unterminated quote starting at position 0"),
        (
            "(hello world",
            "unclosed parenthesis starting at position 0",
        ),
        (
            "\"hello world\"~x",
            "after a phrase's '~', got \"x\" at position 13",
        ),
        (
            "f*:x",
            "wildcards in field names (`f*:x`) are not supported yet at position 1",
        ),
        (
            "msg:/a(b/",
            "invalid regular expression: unclosed group at position 4",
        ),
    ] {
        let output = quarry(&["search", "--data", data.to_str().unwrap(), query]);
        assert_eq!(output.status.code(), Some(2), "{query}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(message), "{query}: {stderr}");
    }
    assert_eq!(count(&data, "\"hello world\""), 1);
    assert_eq!(count(&data, "\"world hello\"~1"), 0);
    assert_eq!(count(&data, "\"world hello\"~2"), 1);
}

#[test]
fn wiki_slice_counts_match_brute_force() {
    let Some(shared) = shared_data() else { return };
    let wiki = shared.join("wiki/wiki-articles.json.zst");
    let tmp = tempfile::tempdir().unwrap();
    let slice = tmp.path().join("wiki.json.zst");
    // The first 400 articles, recompressed, so the .zst input path is exercised.
    let reader =
        std::io::BufReader::new(zstd::Decoder::new(std::fs::File::open(&wiki).unwrap()).unwrap());
    let mut events = Vec::new();
    let mut encoder = zstd::Encoder::new(std::fs::File::create(&slice).unwrap(), 3).unwrap();
    for line in std::io::BufRead::lines(reader).take(400) {
        let line = line.unwrap();
        writeln!(encoder, "{line}").unwrap();
        let json: serde_json::Value = serde_json::from_str(&line).unwrap();
        let mut fields: Vec<(String, String)> = ["body", "title", "url"]
            .iter()
            .map(|f| (f.to_string(), json[f].as_str().unwrap_or("").to_owned()))
            .collect();
        fields.sort();
        events.push(fields);
    }
    encoder.finish().unwrap();
    let data = tmp.path().join("data");
    let output = quarry(&[
        "index",
        "--data",
        data.to_str().unwrap(),
        slice.to_str().unwrap(),
    ]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let words: HashSet<&str> = ["the", "war", "history", "anarchism", "zebra", "1990"]
        .into_iter()
        .collect();
    for word in words {
        assert_eq!(
            count(&data, word),
            brute_count(&events, |f| has(f, word)),
            "{word}"
        );
    }
    assert_eq!(
        count(&data, "+war +history"),
        brute_count(&events, |f| has(f, "war") && has(f, "history"))
    );
    assert_eq!(
        count(&data, "body:\"united states\""),
        brute_count(&events, |f| has_phrase(&f[..1], "united", "states"))
    );
    assert_eq!(count(&data, "title:=\"Anarchism\""), 1);
}

fn index_files(data: &Path, extra: &[&str], inputs: &[&Path]) -> Output {
    let mut args = vec!["index", "--data", data.to_str().unwrap()];
    args.extend_from_slice(extra);
    args.extend(inputs.iter().map(|p| p.to_str().unwrap()));
    quarry(&args)
}

/// Issue 9: values that flatten to one name are all kept; a `_time` that does not parse and an
/// event with more fields than a block holds are reported as `file:line: reason`.
#[test]
fn ingest_keeps_every_value_or_reports_the_line() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("events.json");
    let mut too_many = String::from(r#"{"m":"three""#);
    for i in 0..65_534 {
        too_many.push_str(&format!(r#","f{i}":{i}"#));
    }
    too_many.push('}');
    let lines = [
        r#"{"a.b":"x","a":{"b":"y"},"m":"one"}"#.to_owned(),
        r#"{"_time":"yesterday","m":"two"}"#.to_owned(),
        too_many,
        r#"{"a":{"b":"z"},"x":{"_time":"kept"},"m":"four"}"#.to_owned(),
    ];
    std::fs::write(&input, lines.join("\n") + "\n").unwrap();
    let data = tmp.path().join("data");
    let output = index_files(&data, &[], &[&input]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    let file = input.display();
    for expected in [
        format!(
            r#"{file}:2: _time: cannot parse "yesterday" as a time (RFC 3339 or epoch s/ms/us/ns)"#
        ),
        format!("{file}:3: event has 65535 fields; at most 65534 are allowed"),
        "indexed 2 events".to_owned(),
    ] {
        assert!(stderr.contains(&expected), "{expected} in {stderr}");
    }
    let cases = [
        ("*", 2),
        ("a.b:x", 1),
        ("a.b:y", 1),
        ("a.b:x AND a.b:y", 1),
        ("a.b:z", 1),
        ("x._time:kept", 1),
        ("m:two", 0),
        ("m:three", 0),
    ];
    for (query, expected) in cases {
        assert_eq!(count(&data, query), expected, "{query}");
    }
    let output = quarry(&["search", "--data", data.to_str().unwrap(), "a.b:y"]);
    let hits = stdout_lines(&output);
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0]["event"]["a.b"], serde_json::json!(["x", "y"]));
}

/// Issue 9: events whose field names together pass a block's limit (65,534) go whole into the
/// next block, when indexing and when merging; a field with two types in different docs
/// survives the merge too.
#[test]
fn field_names_past_a_block_limit_are_all_kept_by_index_and_merge() {
    const FIELDS: usize = 30_000;
    let tmp = tempfile::tempdir().unwrap();
    let mut inputs = Vec::new();
    for e in 0..3 {
        let status = ["200", r#""n/a""#, "true"][e];
        let mut line = format!(r#"{{"time":{},"status":{status}"#, 1_700_000_000 + e);
        for i in 0..FIELDS {
            line.push_str(&format!(r#","e{e}_f{i}":"v{e}x{i}""#));
        }
        line.push_str("}\n");
        let path = tmp.path().join(format!("{e}.json"));
        std::fs::write(&path, line).unwrap();
        inputs.push(path);
    }
    let inputs: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();
    let data = tmp.path().join("data");
    // One indexer, so all three events meet in one segment.
    let output = index_files(&data, &["--threads", "1", "--no-merge"], &inputs);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let check = |when: &str| {
        for e in 0..3 {
            for i in [0, 1, FIELDS / 2, FIELDS - 1] {
                let query = format!("e{e}_f{i}:v{e}x{i}");
                assert_eq!(count(&data, &query), 1, "{query} {when}");
            }
        }
        for (query, expected) in [("status:200", 1), ("status:\"n/a\"", 1), ("status:true", 1)] {
            assert_eq!(count(&data, query), expected, "{query} {when}");
        }
        let blocks = std::fs::read_dir(data.join("blocks")).unwrap().count();
        assert_eq!(
            blocks, 2,
            "60,000 names fit a block, 90,000 do not ({when})"
        );
    };
    check("after index");
    let output = quarry(&["merge", "--data", data.to_str().unwrap()]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    check("after merge");
    let output = quarry(&["check", "--data", data.to_str().unwrap()]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
}
