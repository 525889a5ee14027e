//! Issue 26, defect 3: results are bounded. A search's `limit` above the maximum is a 400 that
//! names it and the ways to take more; every match of a large query streams from the export
//! endpoint with the server's memory flat, while ingest goes on.

mod common;

use common::Server;
use std::collections::HashSet;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

const EVENTS: usize = 300_000;

/// Resident set of process `pid`, in bytes.
/// The server's anonymous resident memory (its heap and stacks). Pages of the mapped block files
/// that an export reads count in VmRSS too, as page cache the kernel can drop at will, and how
/// many of them stay resident depends on the machine: they are not memory the export holds.
fn anon_rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("RssAnon:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap();
    kb << 10
}

/// An RFC 3339 UTC time with its fraction padded to 9 digits (29 bytes), so that times
/// compare as strings.
fn sortable_time(time: &str) -> String {
    let time = time.trim_end_matches('Z');
    let (seconds, fraction) = time.split_once('.').unwrap_or((time, ""));
    format!("{seconds}.{fraction:0<9}")
}

#[test]
fn limits_are_bounded_and_exports_stream_in_constant_memory() {
    let dir = tempfile::tempdir().unwrap();
    let data = common::indexed_logs(dir.path(), EVENTS, &[]);
    // Events ingested meanwhile are held to the memory limit and decoded chunks to the cache
    // size, so what the export itself holds shows. (With the default 128 MB cache, an export
    // that decodes every chunk once grew the server by 52 MB of cache alone.)
    let server = Server::start_with(&data, &["--memory-limit", "32MB", "--cache-size", "8MB"]);

    // Over the maximum: refused, naming it and the ways on.
    let (status, body) = server.get("/api/v1/default/search?query=*&limit=10000000");
    assert_eq!(status, 400, "{body}");
    let message = body["error"].as_str().unwrap();
    for needed in ["limit", "10000", "search_after", "/export"] {
        assert!(message.contains(needed), "{message}");
    }
    let (status, body) = server.get("/api/v1/default/search?query=*&limit=10000");
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["hits"].as_array().unwrap().len(), 10_000);
    let (status, body) = server.get("/api/v1/default/export?query=*&limit=5");
    assert_eq!(status, 400, "an export takes no limit: {body}");
    let (status, _) = server.get("/api/v1/default/export?query=*&sort=relevance");
    assert_eq!(status, 400);

    // Ingest goes on meanwhile (events of now, after the exported range).
    let stop = Arc::new(AtomicBool::new(false));
    let ingest = {
        let (addr, stop) = (server.addr.clone(), stop.clone());
        std::thread::spawn(move || {
            let batch: String = (0..2000)
                .map(|i| {
                    format!("{{\"message\": \"concurrent ingest {i}\", \"service\": \"other\"}}\n")
                })
                .collect();
            let mut acked = 0;
            while !stop.load(Ordering::Relaxed) {
                let answer = common::send_to(
                    &addr,
                    "POST",
                    "/api/v1/default/ingest",
                    &[("Content-Type", "application/x-ndjson")],
                    batch.as_bytes(),
                );
                if answer.is_some_and(|a| a.status == 200) {
                    acked += 1;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            acked
        })
    };

    let pid = server.child.id();
    let before = anon_rss(pid);
    let mut stream = TcpStream::connect(&server.addr).unwrap();
    write!(
        stream,
        "GET /api/v1/default/export?query=*&end=2026-01-02T00:00:00Z HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
        server.addr
    )
    .unwrap();
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    assert!(line.starts_with("HTTP/1.1 200"), "{line}");
    let mut chunked = false;
    loop {
        line.clear();
        reader.read_line(&mut line).unwrap();
        if line == "\r\n" {
            break;
        }
        chunked |= line
            .to_ascii_lowercase()
            .starts_with("transfer-encoding: chunked");
    }
    assert!(chunked, "an export streams");
    // The chunked body, read slowly enough that a server which buffered would show it.
    let (mut events, mut peak, mut body_bytes) = (Vec::new(), before, 0u64);
    let mut pending = Vec::new();
    loop {
        line.clear();
        reader.read_line(&mut line).unwrap();
        let size = usize::from_str_radix(line.trim(), 16).expect("chunk size");
        if size == 0 {
            break;
        }
        let mut chunk = vec![0u8; size + 2];
        std::io::Read::read_exact(&mut reader, &mut chunk).unwrap();
        pending.extend_from_slice(&chunk[..size]);
        body_bytes += size as u64;
        while let Some(end) = pending.iter().position(|&b| b == b'\n') {
            let event: serde_json::Value = serde_json::from_slice(&pending[..end]).unwrap();
            let time = sortable_time(event["_time"].as_str().unwrap());
            events.push(time + &event["message"].to_string());
            pending.drain(..=end);
        }
        if events.len() % 20_000 < 1_000 {
            peak = peak.max(anon_rss(pid));
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    stop.store(true, Ordering::Relaxed);
    let acked = ingest.join().unwrap();
    assert!(acked > 0, "ingest went on during the export");

    // Every event of the range once, newest first.
    assert_eq!(events.len(), EVENTS);
    if let Some(at) = events.windows(2).position(|w| w[0][..29] < w[1][..29]) {
        panic!(
            "not newest first at {at}: {:?}",
            &events[at.saturating_sub(2)..at + 3]
        );
    }
    let distinct: HashSet<&String> = events.iter().collect();
    assert!(
        distinct.len() > EVENTS * 99 / 100,
        "{} distinct",
        distinct.len()
    );
    let grew = peak.saturating_sub(before);
    eprintln!(
        "export: {} events, {} MB of NDJSON; server anonymous RSS {} MB before, peak {} MB (+{} MB); {acked} ingest batches acknowledged meanwhile",
        events.len(),
        body_bytes >> 20,
        before >> 20,
        peak >> 20,
        grew >> 20
    );
    // One page is ~1,000 events (a few hundred KB); ingest adds events in memory up to the
    // 32 MB limit and the chunk cache holds up to 8 MB. A server that held the export whole
    // would grow by more than its body (the hits' decoded events, then their JSON). Measured:
    // +12 MB for the export alone, +40 MB with ingest.
    assert!(
        grew < (32 << 20) + (8 << 20) + (48 << 20),
        "the server grew by {} MB exporting {} MB",
        grew >> 20,
        body_bytes >> 20
    );
}
