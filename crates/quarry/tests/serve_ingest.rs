//! Ingest over HTTP end to end, on the real binary: NDJSON (plain, gzip, zstd), plain text
//! with timestamps, the Elasticsearch bulk API; every accepted event searchable in the reply's
//! wake and stored as sent; malformed lines reported by number with the rest ingested; clear
//! errors for bad bodies; and acknowledged events present exactly once after SIGKILL, a torn
//! WAL tail, and restarts.

mod common;

use common::{quarry, Server};
use serde_json::{json, Value};
use std::io::Write;
use std::path::Path;

fn ndjson(events: &[Value]) -> String {
    events.iter().map(|e| format!("{e}\n")).collect()
}

fn count(server: &Server, query: &str) -> u64 {
    // Percent-encoded whole: queries hold quotes, `=`, `*`.
    let encoded: String = query
        .bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' => (b as char).to_string(),
            other => format!("%{other:02X}"),
        })
        .collect();
    let target = format!("/api/v1/default/search?count=true&limit=0&query={encoded}");
    let (status, answer) = server.get(&target);
    assert_eq!(status, 200, "{answer}");
    answer["count"].as_u64().unwrap()
}

/// The events of every hit, oldest first.
fn all_events(server: &Server, query: &str) -> Vec<Value> {
    server
        .export(&format!("sort=time_asc&query={query}"))
        .into_iter()
        .map(|mut event| {
            // As a search's hit has it: `_time` beside the event, not in it.
            event.as_object_mut().unwrap().remove("_time");
            event
        })
        .collect()
}

fn ingest(server: &Server, body: &[u8], headers: &[(&str, &str)]) -> Value {
    let answer = server.send("POST", "/api/v1/default/ingest", headers, body);
    assert_eq!(
        answer.status,
        200,
        "{}",
        String::from_utf8_lossy(&answer.body)
    );
    answer.json()
}

#[test]
fn every_format_is_searchable_at_once_and_stored_as_sent() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("d"));

    // NDJSON, one malformed line among good ones.
    let events: Vec<Value> = (0..50)
        .map(|i| json!({"_time": format!("2026-11-20T10:00:{:02}Z", i), "message": format!("alpha event {i}"), "n": i, "nested": {"k": i % 3}}))
        .collect();
    let mut body = ndjson(&events[..25]);
    body.push_str("{\"broken\": \n\n");
    body.push_str(&ndjson(&events[25..]));
    let reply = ingest(&server, body.as_bytes(), &[]);
    assert_eq!(reply["ingested"], 50);
    assert_eq!(reply["durability"], "fsync");
    assert_eq!(reply["errors"][0]["line"], 26, "{reply}");
    assert_eq!(count(&server, "alpha"), 50);
    // Stored as sent: the events come back field for field (nested names flattened).
    let stored = all_events(&server, "alpha");
    for (i, event) in stored.iter().enumerate() {
        assert_eq!(
            event,
            &json!({"message": format!("alpha event {i}"), "n": i, "nested.k": i % 3})
        );
    }

    // gzip and zstd bodies.
    let gz_events: Vec<Value> = (0..10)
        .map(|i| json!({"message": "gamma gz", "i": i}))
        .collect();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(ndjson(&gz_events).as_bytes()).unwrap();
    let reply = ingest(
        &server,
        &gz.finish().unwrap(),
        &[("Content-Encoding", "gzip")],
    );
    assert_eq!(reply["ingested"], 10);
    let zs = zstd::encode_all(ndjson(&gz_events).as_bytes(), 3).unwrap();
    let reply = ingest(&server, &zs, &[("Content-Encoding", "zstd")]);
    assert_eq!(reply["ingested"], 10);
    assert_eq!(count(&server, "gamma"), 20);

    // Plain text: the line is the message, its leading timestamp the time.
    let text = "2026-11-21T08:30:00Z delta service started\nNov 21 08:31:00 host sshd[42]: delta accepted\n\nno time here delta\n";
    let reply = ingest(&server, text.as_bytes(), &[("Content-Type", "text/plain")]);
    assert_eq!(reply["ingested"], 3, "{reply}");
    let (_, answer) = server.get("/api/v1/default/search?query=delta&sort=time_asc&limit=10");
    let hits = answer["hits"].as_array().unwrap();
    assert_eq!(hits[0]["_time"], "2026-11-21T08:30:00Z");
    assert_eq!(
        hits[0]["event"]["message"],
        "2026-11-21T08:30:00Z delta service started"
    );
    assert!(hits[1]["_time"]
        .as_str()
        .unwrap()
        .ends_with("-11-21T08:31:00Z"));
    assert_eq!(hits[2]["event"]["message"], "no time here delta");

    // Async durability says so.
    let reply = ingest(&server, b"{\"message\": \"epsilon\"}\n", &[]);
    assert_eq!(reply["durability"], "fsync");
    let answer = server.send(
        "POST",
        "/api/v1/default/ingest?durability=async",
        &[],
        b"{\"message\": \"epsilon\"}\n",
    );
    assert_eq!(answer.json()["durability"], "async");
    assert_eq!(count(&server, "epsilon"), 2);

    // The Elasticsearch bulk API: a status per item, in Elasticsearch's shape.
    let bulk = "{\"index\":{\"_index\":\"default\",\"_id\":\"doc-1\"}}\n{\"message\":\"zeta one\",\"@timestamp\":\"2026-11-22T00:00:00Z\"}\n{\"create\":{}}\n{\"message\":\"zeta two\"}\n{\"index\":{}}\n{\"message\": broken}\n{\"index\":{\"_index\":\"Not A Name\"}}\n{\"message\":\"zeta lost\"}\n{\"delete\":{\"_id\":\"doc-2\"}}\n";
    let answer = server.send(
        "POST",
        "/_bulk",
        &[("Content-Type", "application/x-ndjson")],
        bulk.as_bytes(),
    );
    assert_eq!(answer.status, 200);
    assert_eq!(answer.header("x-elastic-product"), Some("Elasticsearch"));
    let reply = answer.json();
    assert_eq!(reply["errors"], true);
    let statuses: Vec<(String, u64)> = reply["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| {
            let (action, body) = item.as_object().unwrap().iter().next().unwrap();
            (action.clone(), body["status"].as_u64().unwrap())
        })
        .collect();
    assert_eq!(
        statuses,
        [
            ("index".to_owned(), 201),
            ("create".to_owned(), 201),
            ("index".to_owned(), 400),
            // A missing index is created, as in Elasticsearch; this name cannot be one.
            ("index".to_owned(), 400),
            // No document has this id.
            ("delete".to_owned(), 404),
        ]
    );
    assert_eq!(reply["items"][0]["index"]["_id"], "doc-1");
    assert_eq!(count(&server, "zeta"), 2);
    let (_, answer) = server.get("/api/v1/default/search?query=_id:doc-1&limit=1");
    assert_eq!(answer["hits"][0]["_time"], "2026-11-22T00:00:00Z");
    // The tenant path form.
    let answer = server.send(
        "POST",
        "/api/v1/default/_bulk",
        &[],
        b"{\"index\":{}}\n{\"message\":\"eta\"}\n",
    );
    assert_eq!(answer.json()["errors"], false);
    assert_eq!(count(&server, "eta"), 1);
}

#[test]
fn bad_bodies_get_clear_errors_and_lose_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start_with(&dir.path().join("d"), &["--max-body-size", "4KB"]);
    let big = "{\"message\": \"x\"}\n".repeat(1000);
    let answer = server.send("POST", "/api/v1/default/ingest", &[], big.as_bytes());
    assert_eq!(answer.status, 413);
    // Small when sent, too big once decompressed.
    let zs = zstd::encode_all(big.as_bytes(), 3).unwrap();
    assert!(zs.len() < 4000);
    let answer = server.send(
        "POST",
        "/api/v1/default/ingest",
        &[("Content-Encoding", "zstd")],
        &zs,
    );
    assert_eq!(
        answer.status,
        413,
        "{}",
        String::from_utf8_lossy(&answer.body)
    );
    let answer = server.send(
        "POST",
        "/api/v1/default/ingest",
        &[("Content-Encoding", "gzip")],
        b"not gzip at all",
    );
    assert_eq!(answer.status, 400);
    assert!(answer.json()["error"].as_str().unwrap().contains("gzip"));
    let answer = server.send(
        "POST",
        "/api/v1/default/ingest",
        &[("Content-Encoding", "br")],
        b"{}",
    );
    assert_eq!(answer.status, 415);
    let answer = server.send("POST", "/api/v1/nobody/ingest", &[], b"{\"a\":1}\n");
    assert_eq!(answer.status, 404);
    let answer = server.send(
        "POST",
        "/api/v1/default/ingest?durability=maybe",
        &[],
        b"{\"a\":1}\n",
    );
    assert_eq!(answer.status, 400);
    // A malformed bulk action line fails the request, naming the line (as Elasticsearch).
    let answer = server.send(
        "POST",
        "/_bulk",
        &[],
        b"{\"index\":{}}\n{\"a\":1}\nnot an action\n{\"a\":2}\n",
    );
    assert_eq!(answer.status, 400);
    let error = answer.json();
    assert!(
        error["error"]["reason"].as_str().unwrap().contains("[3]"),
        "{error}"
    );
    // Nothing of the failed requests was ingested.
    assert_eq!(count(&server, "*"), 0);
}

/// Memory for events not yet in block files is bounded by `--memory-limit`: past it, ingest
/// answers 429 (and takes nothing of that request) until a flush makes room.
#[test]
fn ingest_past_the_memory_limit_is_refused_until_a_flush() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start_with(
        &dir.path().join("d"),
        &["--memory-limit", "256KB", "--flush-interval", "600"],
    );
    let body: String = (0..1000)
        .map(|i| format!("{{\"message\": \"iota filler text {i}\", \"n\": {i}}}\n"))
        .collect();
    let mut accepted = 0;
    let mut refused = None;
    for _ in 0..50 {
        let answer = server.send("POST", "/api/v1/default/ingest", &[], body.as_bytes());
        match answer.status {
            200 => accepted += 1,
            429 => {
                assert_eq!(answer.header("retry-after"), Some("1"));
                refused = Some(answer.json());
                break;
            }
            other => panic!("status {other}"),
        }
    }
    let refused = refused.expect("never refused: memory is not bounded");
    assert!(
        refused["error"].as_str().unwrap().contains("memory"),
        "{refused}"
    );
    // What was accepted is all there, and nothing of the refused request.
    assert_eq!(count(&server, "iota"), accepted * 1000);
}

fn wal_segments(data: &Path) -> Vec<std::path::PathBuf> {
    let mut paths: Vec<_> = std::fs::read_dir(data.join("wal/default"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    paths.sort();
    paths
}

#[test]
fn acknowledged_events_survive_sigkill_torn_tails_and_restarts_exactly_once() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    // Flushes every 200 ms, so some batches are in block files and some only in the WAL.
    let flags = ["--flush-interval", "0.2"];
    let batch = |from: usize, to: usize| -> String {
        (from..to)
            .map(|i| format!("{{\"message\": \"theta item\", \"uid\": \"u{i}\"}}\n"))
            .collect()
    };
    let mut acked = 0;
    for round in 0..4 {
        let mut server = Server::start_with(&data, &flags);
        assert_eq!(count(&server, "theta"), acked as u64, "round {round}");
        for _ in 0..5 {
            let reply = ingest(&server, batch(acked, acked + 100).as_bytes(), &[]);
            assert_eq!(reply["ingested"], 100);
            acked += 100;
            std::thread::sleep(std::time::Duration::from_millis(80));
        }
        server.child.kill().unwrap();
        server.child.wait().unwrap();
        // A torn tail: half a record at the end of the newest segment.
        if round == 1 {
            let last = wal_segments(&data).pop().unwrap();
            let mut file = std::fs::OpenOptions::new().append(true).open(last).unwrap();
            file.write_all(&[200, 0, 0, 0, 1, 2, 3]).unwrap();
        }
    }
    let server = Server::start_with(&data, &flags);
    assert_eq!(count(&server, "theta"), acked as u64);
    // Exactly once: every uid once.
    let mut uids: Vec<String> = all_events(&server, "theta")
        .iter()
        .map(|e| e["uid"].as_str().unwrap().to_owned())
        .collect();
    uids.sort();
    let mut want: Vec<String> = (0..acked).map(|i| format!("u{i}")).collect();
    want.sort();
    assert_eq!(uids, want);
    // A graceful stop flushes everything to block files: the CLI sees it all, every block
    // checks, and the WAL holds no record.
    assert!(server.terminate());
    let output = quarry(&[
        "search",
        "--data",
        data.to_str().unwrap(),
        "--count",
        "--limit",
        "0",
        "theta",
    ]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains(&format!("\"count\":{acked}")), "{stdout}");
    let check = quarry(&["check", "--data", data.to_str().unwrap()]);
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    let wal_bytes: u64 = wal_segments(&data)
        .iter()
        .map(|p| std::fs::metadata(p).unwrap().len())
        .sum();
    assert!(
        wal_bytes <= 8 * wal_segments(&data).len() as u64,
        "{wal_bytes}"
    );
}

/// Issue 26: bulk `create` with an `_id` stores the document once, as Elasticsearch does: a
/// second `create` of the `_id` (in the same request, a retry, or a request racing it)
/// answers 409 `version_conflict_engine_exception` for that item and stores nothing.
#[test]
fn bulk_create_with_an_id_stores_the_document_once() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("d"));
    let bulk = |body: &str| {
        let answer = server.send(
            "POST",
            "/_bulk",
            &[("Content-Type", "application/x-ndjson")],
            body.as_bytes(),
        );
        assert_eq!(answer.status, 200);
        answer.json()["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|item| {
                let (action, body) = item.as_object().unwrap().iter().next().unwrap();
                (action.clone(), body["status"].as_u64().unwrap())
            })
            .collect::<Vec<_>>()
    };
    let first = bulk(concat!(
        "{\"create\":{\"_id\":\"a\"}}\n{\"message\":\"created once\"}\n",
        "{\"create\":{\"_id\":\"b\"}}\n{\"message\":\"created once\"}\n",
        "{\"index\":{}}\n{\"message\":\"created once\"}\n",
        "{\"create\":{\"_id\":\"a\"}}\n{\"message\":\"created once\"}\n",
    ));
    let statuses: Vec<u64> = first.iter().map(|(_, s)| *s).collect();
    assert_eq!(statuses, [201, 201, 201, 409], "{first:?}");
    // The retry of a request whose answer was lost: what was stored is 409, the rest 201.
    let retry = bulk(concat!(
        "{\"create\":{\"_id\":\"a\"}}\n{\"message\":\"created once\"}\n",
        "{\"create\":{\"_id\":\"b\"}}\n{\"message\":\"created once\"}\n",
        "{\"create\":{\"_id\":\"c\"}}\n{\"message\":\"created once\"}\n",
    ));
    let statuses: Vec<u64> = retry.iter().map(|(_, s)| *s).collect();
    assert_eq!(statuses, [409, 409, 201]);
    // Requests racing with the same ids: each id stored by exactly one of them.
    let racers: Vec<_> = (0..4)
        .map(|_| {
            let addr = server.addr.clone();
            std::thread::spawn(move || {
                let body: String = (0..50)
                    .map(|i| format!("{{\"create\":{{\"_id\":\"race-{i}\"}}}}\n{{\"message\":\"created once\"}}\n"))
                    .collect();
                common::send_to(&addr, "POST", "/_bulk", &[], body.as_bytes())
                    .unwrap()
                    .status
            })
        })
        .collect();
    for racer in racers {
        assert_eq!(racer.join().unwrap(), 200);
    }
    assert_eq!(count(&server, "message:\"created once\""), 4 + 50);
    for id in ["a", "b", "c", "race-0", "race-49"] {
        assert_eq!(count(&server, &format!("_id:=\"{id}\"")), 1, "{id}");
    }
}
