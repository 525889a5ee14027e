//! Live tail over Server-Sent Events on the real binary: history then new matches with no gap
//! and no repeat while ingest runs concurrently, resuming with Last-Event-ID, and a reader too
//! slow for the events dropped with a final event instead of growing memory.

mod common;

use common::Server;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// Events `from..to`, each with `n` and a distinct `_time` (n ms after a fixed start).
fn batch(from: usize, to: usize, word: &str, padding: usize) -> String {
    (from..to)
        .map(|n| {
            let time = 1_700_000_000_000i64 + n as i64;
            format!(
                "{}\n",
                json!({"_time": time, "message": format!("{word} {n} {}", "x".repeat(padding)), "n": n})
            )
        })
        .collect()
}

fn ingest(addr: &str, body: &str) {
    let answer = common::send_to(addr, "POST", "/api/v1/default/ingest", &[], body.as_bytes())
        .expect("an answer");
    assert_eq!(
        answer.status,
        200,
        "{}",
        String::from_utf8_lossy(&answer.body)
    );
}

/// An open tail: HTTP/1.0, so the body is the event stream as written (no chunking).
struct Tail {
    reader: BufReader<TcpStream>,
    /// Reading gives up after this (keep-alive comments would otherwise wait for ever).
    deadline: Instant,
}

/// One SSE event: its type, id and data.
#[derive(Debug)]
struct SseEvent {
    kind: String,
    id: Option<String>,
    data: String,
}

impl Tail {
    fn open(addr: &str, query: &str, last_event_id: Option<&str>) -> Tail {
        let mut stream = TcpStream::connect(addr).unwrap();
        let resume = last_event_id
            .map(|id| format!("Last-Event-ID: {id}\r\n"))
            .unwrap_or_default();
        write!(
            stream,
            "GET /api/v1/default/tail?{query} HTTP/1.0\r\nHost: localhost\r\nAccept: text/event-stream\r\n{resume}\r\n"
        )
        .unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        let mut reader = BufReader::new(stream);
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        assert!(line.contains(" 200 "), "{line}");
        // The rest of the head.
        loop {
            line.clear();
            reader.read_line(&mut line).unwrap();
            if line.trim().is_empty() {
                break;
            }
        }
        Tail {
            reader,
            deadline: Instant::now() + Duration::from_secs(180),
        }
    }

    /// The next event (not keep-alive comments); None at the end of the stream.
    fn next(&mut self) -> Option<SseEvent> {
        let mut event = SseEvent {
            kind: "message".into(),
            id: None,
            data: String::new(),
        };
        let mut seen = false;
        let mut line = String::new();
        loop {
            line.clear();
            if self.reader.read_line(&mut line).unwrap() == 0 {
                return None;
            }
            let line = line.trim_end_matches(['\r', '\n']);
            if line.is_empty() {
                if seen {
                    return Some(event);
                }
                continue;
            }
            if line.starts_with(':') {
                if Instant::now() > self.deadline {
                    return None;
                }
                continue;
            }
            seen = true;
            let (field, value) = line.split_once(':').unwrap_or((line, ""));
            let value = value.strip_prefix(' ').unwrap_or(value);
            match field {
                "event" => event.kind = value.to_owned(),
                "id" => event.id = Some(value.to_owned()),
                "data" => event.data.push_str(value),
                _ => {}
            }
        }
    }

    /// Reads hits until every `n` in `expected` was seen (counting each), or the stream ends.
    fn collect(&mut self, expected: usize) -> BTreeMap<u64, usize> {
        let mut seen = BTreeMap::new();
        while seen.len() < expected {
            let Some(event) = self.next() else { break };
            assert_eq!(event.kind, "hit", "{event:?}");
            let data: Value = serde_json::from_str(&event.data).unwrap();
            *seen
                .entry(data["event"]["n"].as_u64().unwrap())
                .or_default() += 1;
        }
        seen
    }
}

#[test]
fn history_then_new_matches_without_gap_or_repeat() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("d"));
    ingest(&server.addr, &batch(0, 500, "tailword", 0));
    // Three tails open while 60 more batches arrive; each must see every event once.
    let addr = server.addr.clone();
    let writer = std::thread::spawn(move || {
        for b in 0..60 {
            ingest(&addr, &batch(500 + b * 50, 550 + b * 50, "tailword", 0));
            // Other events, which the tails' query does not match, in between.
            ingest(&addr, &batch(100_000 + b, 100_001 + b, "otherword", 0));
        }
    });
    let mut tails = Vec::new();
    for _ in 0..3 {
        tails.push(Tail::open(
            &server.addr,
            "query=tailword&history=10000",
            None,
        ));
        std::thread::sleep(Duration::from_millis(30));
    }
    writer.join().unwrap();
    for mut tail in tails {
        let seen = tail.collect(3500);
        let missing: Vec<u64> = (0..3500).filter(|n| !seen.contains_key(n)).collect();
        let repeated: Vec<(&u64, &usize)> = seen.iter().filter(|(_, c)| **c > 1).collect();
        assert!(
            missing.is_empty(),
            "missing {} events, e.g. {:?}",
            missing.len(),
            &missing[..missing.len().min(10)]
        );
        assert!(repeated.is_empty(), "repeated: {repeated:?}");
        assert_eq!(seen.len(), 3500, "only matches: {:?}", seen.keys().last());
    }
}

#[test]
fn last_event_id_resumes_after_the_last_event_seen() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("d"));
    ingest(&server.addr, &batch(0, 100, "resumeword", 0));
    let mut tail = Tail::open(&server.addr, "query=resumeword&history=10", None);
    let mut last = None;
    for expected in 90..100 {
        let event = tail.next().unwrap();
        let data: Value = serde_json::from_str(&event.data).unwrap();
        assert_eq!(
            data["event"]["n"], expected,
            "history is the newest 10, oldest first"
        );
        last = event.id;
    }
    // The connection drops; events arrive meanwhile; the client comes back after n = 99.
    drop(tail);
    ingest(&server.addr, &batch(100, 150, "resumeword", 0));
    let mut tail = Tail::open(
        &server.addr,
        "query=resumeword&history=1000",
        last.as_deref(),
    );
    let seen = tail.collect(50);
    assert_eq!(
        seen.keys().copied().collect::<Vec<_>>(),
        (100..150).collect::<Vec<_>>()
    );
    // Events of one request share their ingest time: resuming in the middle of them sends
    // the rest, once.
    let same_time: String = (0..10)
        .map(|n| format!("{}\n", json!({"message": "sametimeword", "n": 1000 + n})))
        .collect();
    ingest(&server.addr, &same_time);
    let mut tail = Tail::open(&server.addr, "query=sametimeword&history=10", None);
    let mut last = None;
    let mut first_four = Vec::new();
    for _ in 0..4 {
        let event = tail.next().unwrap();
        let data: Value = serde_json::from_str(&event.data).unwrap();
        first_four.push(data["event"]["n"].as_u64().unwrap());
        last = event.id;
    }
    drop(tail);
    let mut tail = Tail::open(
        &server.addr,
        "query=sametimeword&history=100",
        last.as_deref(),
    );
    let rest = tail.collect(6);
    let mut all: Vec<u64> = first_four.into_iter().chain(rest.keys().copied()).collect();
    all.sort_unstable();
    assert_eq!(all, (1000..1010).collect::<Vec<_>>());
    assert!(rest.values().all(|&count| count == 1), "{rest:?}");
    // A bad query is a 400 before any stream.
    let answer = server.send("GET", "/api/v1/default/tail?query=%22open", &[], b"");
    assert_eq!(answer.status, 400);
}

#[test]
fn a_reader_too_slow_is_dropped_with_a_final_event() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("d"));
    let mut tail = Tail::open(&server.addr, "query=slowword&history=0", None);
    // ~30 MB of matching events in 150 requests (a seal each) while the tail reads nothing:
    // more than the socket buffers and the client's queue hold, so the tail falls more than
    // its backlog of sealed blocks behind.
    for b in 0..150 {
        ingest(
            &server.addr,
            &batch(b * 400, (b + 1) * 400, "slowword", 500),
        );
    }
    let mut hits = 0;
    let mut last = None;
    while let Some(event) = tail.next() {
        if event.kind == "hit" {
            hits += 1;
        } else {
            last = Some(event);
            break;
        }
    }
    let last =
        last.unwrap_or_else(|| panic!("no final event before the stream ends, after {hits} hits"));
    assert_eq!(last.kind, "dropped", "{last:?}");
    assert!(last.data.contains("slower"), "{last:?}");
    assert!(hits < 60_000, "{hits}");
    assert!(
        tail.next().is_none(),
        "the stream ends after the final event"
    );
    // The server goes on.
    let (status, _) = server.get("/health/ready");
    assert_eq!(status, 200);
}

/// With `--peers`, a tail on any node follows the whole cluster: the history from every node,
/// then every new match made searchable on any node, each once, while ingest goes to all
/// three nodes concurrently.
#[test]
fn a_tail_on_a_node_with_peers_follows_every_node() {
    let dir = tempfile::tempdir().unwrap();
    let ports: Vec<u16> = (0..3).map(|_| common::free_port()).collect();
    let peers: Vec<String> = ports
        .iter()
        .map(|port| format!("http://127.0.0.1:{port}"))
        .collect();
    let peers = peers.join(",");
    let nodes: Vec<Server> = ports
        .iter()
        .enumerate()
        .map(|(i, port)| {
            let data = dir.path().join(format!("node-{i}"));
            let leaf = format!("127.0.0.1:{port}");
            Server::spawn(
                &[
                    "--data",
                    data.to_str().unwrap(),
                    "--listen",
                    "127.0.0.1:0",
                    "--leaf-listen",
                    &leaf,
                    "--peers",
                    &peers,
                ],
                &[("QUARRY_CLUSTER_TOKEN", "tail-token")],
                std::path::Path::new("."),
            )
        })
        .collect();
    for (i, node) in nodes.iter().enumerate() {
        ingest(&node.addr, &batch(i * 100, i * 100 + 100, "tailword", 0));
    }
    let addrs: Vec<String> = nodes.iter().map(|n| n.addr.clone()).collect();
    let writer = std::thread::spawn(move || {
        for b in 0..30 {
            let from = 300 + b * 20;
            ingest(&addrs[b % 3], &batch(from, from + 20, "tailword", 0));
            ingest(
                &addrs[(b + 1) % 3],
                &batch(100_000 + b, 100_001 + b, "otherword", 0),
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    });
    // Opened while the writer runs: some events in each tail's history, the rest streamed.
    let mut tails = Vec::new();
    for node in &nodes {
        tails.push(Tail::open(&node.addr, "query=tailword&history=10000", None));
        std::thread::sleep(Duration::from_millis(60));
    }
    writer.join().unwrap();
    // And after the writer: only streamed.
    ingest(&nodes[2].addr, &batch(900, 930, "tailword", 0));
    for mut tail in tails {
        let seen = tail.collect(930);
        let missing: Vec<u64> = (0..930).filter(|n| !seen.contains_key(n)).collect();
        let repeated: Vec<(&u64, &usize)> = seen.iter().filter(|(_, c)| **c > 1).collect();
        assert!(
            missing.is_empty(),
            "missing {}: {:?}",
            missing.len(),
            &missing[..missing.len().min(10)]
        );
        assert!(repeated.is_empty(), "repeated: {repeated:?}");
        assert_eq!(seen.len(), 930);
    }
}
