//! End to end: `quarry gen-logs` events, indexed with two threads (blocks that overlap in
//! time), then tails, heads, paging, histograms, ranges and aggregations through the CLI,
//! checked against a brute-force scan of the generated JSON, with every optimization on and
//! with all of them off.

use serde_json::{json, Value as Json};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::process::{Command, Output};

fn quarry(args: &[&str]) -> Output {
    let output = Command::new(env!("CARGO_BIN_EXE_quarry"))
        .args(args)
        .output()
        .expect("run quarry");
    assert!(
        output.status.success(),
        "quarry {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

fn lines(output: &Output) -> Vec<Json> {
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad JSON {l:?}: {e}")))
        .collect()
}

struct Event {
    time_ms: i64,
    time_text: String,
    json: serde_json::Map<String, Json>,
}

fn generate(dir: &Path) -> Vec<Event> {
    let file = dir.join("events.json");
    quarry(&[
        "gen-logs",
        "--events",
        "30000",
        "--seed",
        "7",
        "--start",
        "2026-11-01T00:00:00Z",
        "--end",
        "2026-11-01T06:00:00Z",
        "--output",
        file.to_str().unwrap(),
    ]);
    let text = std::fs::read_to_string(&file).unwrap();
    let events: Vec<Event> = text
        .lines()
        .map(|line| {
            let json: serde_json::Map<String, Json> = serde_json::from_str(line).unwrap();
            let time_text = json["_time"].as_str().unwrap().to_owned();
            let time_ms = chrono::DateTime::parse_from_rfc3339(&time_text)
                .unwrap()
                .timestamp_millis();
            Event {
                time_ms,
                time_text,
                json,
            }
        })
        .collect();
    let data = dir.join("data");
    // A small memory budget and two threads: several blocks whose time ranges overlap.
    quarry(&[
        "index",
        "--data",
        data.to_str().unwrap(),
        "--threads",
        "2",
        "--memory-budget",
        "8MB",
        file.to_str().unwrap(),
    ]);
    events
}

fn field<'a>(event: &'a Event, name: &str) -> Option<&'a Json> {
    event.json.get(name)
}

fn is(event: &Event, name: &str, value: &str) -> bool {
    field(event, name)
        .and_then(Json::as_str)
        .is_some_and(|v| v.eq_ignore_ascii_case(value))
}

fn int(event: &Event, name: &str) -> Option<i64> {
    field(event, name).and_then(Json::as_i64)
}

/// RFC 3339 as Quarry prints it, to milliseconds, for comparing with the generator's text.
fn ms_of(text: &str) -> i64 {
    chrono::DateTime::parse_from_rfc3339(text)
        .unwrap()
        .timestamp_millis()
}

#[test]
fn log_queries_match_brute_force() {
    let dir = tempfile::tempdir().unwrap();
    let events = generate(dir.path());
    let data = dir.path().join("data");
    let data = data.to_str().unwrap();
    let blocks = std::fs::read_dir(dir.path().join("data/blocks"))
        .unwrap()
        .count();
    assert!(blocks >= 2, "expected several blocks, got {blocks}");

    for disable in [None, Some("all")] {
        let search = |extra: &[&str]| {
            let mut args = vec!["search", "--data", data];
            if let Some(d) = disable {
                args.extend(["--disable", d]);
            }
            args.extend(extra);
            lines(&quarry(&args))
        };

        // Tail and head of a field filter: the times of the newest / oldest 25 matches.
        let errors: Vec<&Event> = events.iter().filter(|e| is(e, "level", "ERROR")).collect();
        let mut times: Vec<i64> = errors.iter().map(|e| e.time_ms).collect();
        times.sort_unstable();
        let tail = search(&["--sort", "time_desc", "--limit", "25", "level:error"]);
        let got: Vec<i64> = tail
            .iter()
            .map(|h| ms_of(h["_time"].as_str().unwrap()))
            .collect();
        let expected: Vec<i64> = times.iter().rev().take(25).copied().collect();
        assert_eq!(got, expected, "tail, disable {disable:?}");
        let head = search(&["--sort", "time_asc", "--limit", "25", "level:error"]);
        let got: Vec<i64> = head
            .iter()
            .map(|h| ms_of(h["_time"].as_str().unwrap()))
            .collect();
        assert_eq!(got, times[..25].to_vec(), "head, disable {disable:?}");

        // Paging with cursors: four pages of 10 are the first 40.
        let mut paged = Vec::new();
        let mut after: Option<String> = None;
        for _ in 0..4 {
            let mut args = vec!["--sort", "time-desc", "--limit", "10"];
            if let Some(cursor) = &after {
                args.extend(["--after", cursor.as_str()]);
            }
            args.push("level:error");
            let page = search(&args);
            assert_eq!(page.len(), 10);
            after = Some(page[9]["_cursor"].as_str().unwrap().to_owned());
            paged.extend(page.iter().map(|h| ms_of(h["_time"].as_str().unwrap())));
        }
        let expected: Vec<i64> = times.iter().rev().take(40).copied().collect();
        assert_eq!(paged, expected, "paging, disable {disable:?}");

        // Histogram per 10 minutes of nginx events between 01:00 and 04:30.
        let start = ms_of("2026-11-01T01:00:00Z");
        let end = ms_of("2026-11-01T04:30:00Z");
        let mut buckets: BTreeMap<i64, u64> = BTreeMap::new();
        for e in &events {
            if is(e, "service", "nginx") && e.time_ms >= start && e.time_ms < end {
                *buckets
                    .entry(e.time_ms.div_euclid(600_000) * 600_000)
                    .or_default() += 1;
            }
        }
        let out = search(&[
            "--limit",
            "0",
            "--start",
            "2026-11-01T01:00:00Z",
            "--end",
            "2026-11-01T04:30:00Z",
            "--histogram",
            "10m",
            "service:nginx",
        ]);
        let got: BTreeMap<i64, u64> = out[0]["histogram"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| {
                (
                    ms_of(b["start"].as_str().unwrap()),
                    b["count"].as_u64().unwrap(),
                )
            })
            .collect();
        assert_eq!(got, buckets, "histogram, disable {disable:?}");

        // Every event per hour, no filter (endpoint counting).
        let mut hourly: BTreeMap<i64, u64> = BTreeMap::new();
        for e in &events {
            *hourly
                .entry(e.time_ms.div_euclid(3_600_000) * 3_600_000)
                .or_default() += 1;
        }
        let out = search(&["--limit", "0", "--histogram", "1h", "*"]);
        let got: BTreeMap<i64, u64> = out[0]["histogram"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| {
                (
                    ms_of(b["start"].as_str().unwrap()),
                    b["count"].as_u64().unwrap(),
                )
            })
            .collect();
        assert_eq!(got, hourly, "hourly histogram, disable {disable:?}");

        // A range with a term, counted; aggregations over a range.
        let slow = |e: &&Event| {
            is(e, "service", "nginx")
                && int(e, "latency_ms").is_some_and(|l| (500..=2000).contains(&l))
        };
        let out = search(&[
            "--limit",
            "0",
            "--count",
            "service:nginx AND latency_ms:[500 TO 2000]",
        ]);
        assert_eq!(
            out[0]["count"].as_u64().unwrap(),
            events.iter().filter(slow).count() as u64
        );
        let failing: Vec<&Event> = events
            .iter()
            .filter(|e| int(e, "status").is_some_and(|s| s >= 500))
            .collect();
        let out = search(&[
            "--limit",
            "0",
            "--agg",
            "terms(client_ip, 5)",
            "--agg",
            "stats(latency_ms)",
            "--agg",
            "count",
            "status:>=500",
        ]);
        let aggs = &out[0]["aggregations"];
        assert_eq!(aggs["count"].as_u64().unwrap(), failing.len() as u64);
        let mut by_ip: HashMap<&str, u64> = HashMap::new();
        for e in &failing {
            *by_ip
                .entry(field(e, "client_ip").unwrap().as_str().unwrap())
                .or_default() += 1;
        }
        let mut top: Vec<(&str, u64)> = by_ip.into_iter().collect();
        top.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
        let got: Vec<(String, u64)> = aggs["terms(client_ip, 5)"]["buckets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| {
                (
                    b["key"].as_str().unwrap().to_owned(),
                    b["count"].as_u64().unwrap(),
                )
            })
            .collect();
        let expected: Vec<(String, u64)> = top
            .iter()
            .take(5)
            .map(|(k, c)| (k.to_string(), *c))
            .collect();
        assert_eq!(got, expected, "terms, disable {disable:?}");
        let latencies: Vec<i64> = failing
            .iter()
            .filter_map(|e| int(e, "latency_ms"))
            .collect();
        let stats = &aggs["stats(latency_ms)"];
        assert_eq!(stats["count"].as_u64().unwrap(), latencies.len() as u64);
        assert_eq!(
            stats["min"].as_f64().unwrap(),
            *latencies.iter().min().unwrap() as f64
        );
        assert_eq!(
            stats["max"].as_f64().unwrap(),
            *latencies.iter().max().unwrap() as f64
        );
        assert_eq!(
            stats["sum"].as_f64().unwrap(),
            latencies.iter().sum::<i64>() as f64
        );
    }
    // The generator's own text round-trips through Quarry's time printing.
    let first = lines(&quarry(&[
        "search", "--data", data, "--sort", "time_asc", "--limit", "1", "*",
    ]));
    assert_eq!(
        ms_of(first[0]["_time"].as_str().unwrap()),
        ms_of(&events.iter().min_by_key(|e| e.time_ms).unwrap().time_text)
    );
}

/// `bench-serve --logs` TAILEV (bench/logs/PROTOCOL.md): `n first last digest` of the newest K
/// matches, the digest over each returned event but those of the last millisecond, checked
/// against the generated JSON.
#[test]
fn tail_with_events_matches_brute_force() {
    use std::io::Write;
    use std::process::Stdio;
    let dir = tempfile::tempdir().unwrap();
    let events = generate(dir.path());
    let data = dir.path().join("data");
    let digest = |event: &Event| -> u64 {
        event
            .json
            .iter()
            .filter(|(name, _)| *name != "_time")
            .map(|(_, value)| match value {
                Json::String(text) => 1 + text.len() as u64,
                Json::Number(number) => 1u64.wrapping_add(number.as_i64().unwrap() as u64),
                other => panic!("unexpected generated value {other}"),
            })
            .fold(0, u64::wrapping_add)
    };
    let expected = |k: usize, matches: &dyn Fn(&Event) -> bool| -> String {
        let mut hits: Vec<&Event> = events.iter().filter(|e| matches(e)).collect();
        hits.sort_by_key(|e| std::cmp::Reverse(e.time_ms));
        hits.truncate(k);
        let (Some(first), Some(last)) = (hits.first(), hits.last()) else {
            return "0".to_owned();
        };
        let sum = hits
            .iter()
            .filter(|e| e.time_ms > last.time_ms)
            .map(|e| digest(e))
            .fold(0, u64::wrapping_add);
        format!("{} {} {} {sum}", hits.len(), first.time_ms, last.time_ms)
    };
    let cases: Vec<(&str, String)> = vec![
        (
            "TAILEV\t100\tlevel:error",
            expected(100, &|e| is(e, "level", "ERROR")),
        ),
        (
            "TAILEV\t1000\tservice:nginx AND status:503",
            expected(1000, &|e| {
                is(e, "service", "nginx") && int(e, "status") == Some(503)
            }),
        ),
        ("TAILEV\t5\tservice:nothing", "0".to_owned()),
        ("TAILEV\t0\t*", "ERROR".to_owned()),
    ];
    let mut child = Command::new(env!("CARGO_BIN_EXE_quarry"))
        .args(["bench-serve", "--logs", "--data", data.to_str().unwrap()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for (request, _) in &cases {
        writeln!(stdin, "{request}").unwrap();
    }
    drop(stdin);
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success());
    let text = String::from_utf8(output.stdout).unwrap();
    let answers: Vec<&str> = text
        .lines()
        .map(|line| line.rsplit_once('\t').unwrap().0)
        .collect();
    assert_eq!(answers.len(), cases.len());
    for ((request, expected), got) in cases.iter().zip(answers) {
        assert_eq!(got, expected, "{request:?}");
    }
}

#[test]
fn bad_log_arguments_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let file = dir.path().join("e.json");
    std::fs::write(&file, "{\"_time\":\"2026-11-01T00:00:00Z\",\"a\":1}\n").unwrap();
    quarry(&[
        "index",
        "--data",
        data.to_str().unwrap(),
        file.to_str().unwrap(),
    ]);
    for (args, message) in [
        (vec!["--histogram", "5y", "*"], "unknown interval unit"),
        (vec!["--start", "yesterday", "*"], "--start"),
        (vec!["--agg", "median(a)", "*"], "bad aggregation"),
        (vec!["--disable", "turbo", "*"], "unknown optimization"),
        (vec!["--after", "1:2:3", "*"], "--after needs --sort"),
        (vec!["_time:[1 TO x]"], "expected a time"),
        (vec!["--sort", ":desc", "*"], "FIELD[:asc|:desc]"),
    ] {
        let output = Command::new(env!("CARGO_BIN_EXE_quarry"))
            .args(["search", "--data", data.to_str().unwrap()])
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(message), "{args:?}: {stderr}");
    }
}

/// `check --sizes`: the per-field table splits exactly the per-kind totals.
#[test]
fn check_sizes_split_by_field_adds_up() {
    let dir = tempfile::tempdir().unwrap();
    generate(dir.path());
    let data = dir.path().join("data");
    let output = quarry(&["check", "--data", data.to_str().unwrap(), "--sizes"]);
    let text = String::from_utf8_lossy(&output.stdout);
    let mut kinds: HashMap<String, u64> = HashMap::new();
    let mut fields: HashMap<String, Vec<u64>> = HashMap::new();
    let mut in_fields = false;
    for line in text.lines() {
        if line.starts_with("field ") {
            in_fields = true;
        } else if let Some((kind, bytes)) = line.split_once(": ").filter(|_| !in_fields) {
            let bytes = bytes.trim().trim_end_matches(" bytes").parse().unwrap();
            kinds.insert(kind.trim().to_owned(), bytes);
        } else if in_fields && !line.starts_with('(') && !line.contains("blocks checked") {
            let mut parts = line.split_whitespace();
            let name = parts.next().unwrap().to_owned();
            fields.insert(name, parts.map(|n| n.parse().unwrap()).collect());
        }
    }
    // Columns: terms, term infos, postings, positions, columns, doc values, norms, total.
    let sum = |column: usize| fields.values().map(|f| f[column]).sum::<u64>();
    assert_eq!(sum(2), kinds["postings"]);
    assert_eq!(sum(3), kinds["positions"]);
    assert_eq!(sum(1), kinds["term infos"]);
    assert_eq!(sum(5), kinds["doc values"]);
    assert_eq!(sum(6), kinds["norms"]);
    // A column's bytes include the dictionaries its chunks need (templates, zstd's).
    let dictionaries: u64 = ["columns (templates)", "columns (dictionary)"]
        .iter()
        .filter_map(|kind| kinds.get(*kind))
        .sum();
    assert_eq!(
        sum(4),
        kinds["columns (data)"] + kinds["columns (directory)"] + dictionaries
    );
    for row in fields.values() {
        assert_eq!(row[7], row[1..7].iter().sum::<u64>());
    }
    assert_eq!(fields["_time"][0], 0, "no terms for _time");
    // A keyword field with few distinct values has doc values (a free-text or id-like one,
    // more than a quarter of its values distinct, has none: FORMAT.md, "Doc values").
    assert!(fields["service"][5] > 0, "service has doc values");
}

#[test]
fn sorts_by_a_field_and_pages_with_after() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let file = dir.path().join("s.json");
    // (second, a): equal values come newest first when descending, missing ones last.
    let events = [
        (1, Some(5)),
        (2, None),
        (3, Some(-1)),
        (4, Some(5)),
        (5, Some(12)),
    ];
    let text: String = events
        .iter()
        .map(|(second, a)| {
            let mut event = json!({"_time": format!("2026-11-01T00:00:0{second}Z"), "n": second});
            if let Some(a) = a {
                event["a"] = json!(a);
            }
            format!("{event}\n")
        })
        .collect();
    std::fs::write(&file, text).unwrap();
    quarry(&[
        "index",
        "--data",
        data.to_str().unwrap(),
        file.to_str().unwrap(),
    ]);
    let mut order = Vec::new();
    let mut after: Option<String> = None;
    for _ in 0..3 {
        let mut args = vec![
            "search",
            "--data",
            data.to_str().unwrap(),
            "--sort",
            "a:desc",
        ];
        args.extend(["--limit", "2"]);
        if let Some(cursor) = &after {
            args.extend(["--after", cursor.as_str()]);
        }
        args.push("*");
        let page = lines(&quarry(&args));
        for hit in &page {
            assert_eq!(
                hit["sort"],
                hit["event"].get("a").cloned().unwrap_or(Json::Null)
            );
            order.push(hit["event"]["n"].as_i64().unwrap());
        }
        after = page
            .last()
            .map(|h| h["_cursor"].as_str().unwrap().to_owned());
    }
    assert_eq!(order, vec![5, 4, 1, 3, 2]);
}
