//! Overload: clients push far more than the server can take, for a minute (CI; set
//! QUARRY_OVERLOAD_SECONDS for another length). Every request is answered 200 or 429 (never
//! an error, never a hang), the server's peak RSS stays within its configured memory, and
//! what was acknowledged is stored exactly: per client and in total, nothing lost, nothing
//! twice, nothing refused stored.

mod common;

use common::{send_to, Server};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const CLIENTS: usize = 32;
/// Events per request: about 1 MB of JSON each.
const BATCH: usize = 4000;
const PADDING: &str = "padding padding padding padding padding padding padding padding padding padding padding padding padding padding padding padding padding padding padding";

/// A line of the server's /proc status, in bytes (`VmHWM`, `RssAnon`, `RssFile`).
fn status_bytes(pid: u32, key: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with(key)).unwrap();
    let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib * 1024
}

#[test]
fn ten_times_what_the_server_takes_is_refused_explicitly_and_memory_stays_bounded() {
    let seconds: u64 = std::env::var("QUARRY_OVERLOAD_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    // The memory the configuration allows: events not yet in block files, bodies in flight,
    // the chunk cache.
    let (memory_limit, inflight, cache) = (32u64 << 20, 16u64 << 20, 8u64 << 20);
    let server = Server::start_with(
        &data,
        &[
            "--memory-limit",
            "32MB",
            "--max-inflight",
            "16MB",
            "--cache-size",
            "8MB",
            "--flush-size",
            "8MB",
            "--flush-interval",
            "1",
        ],
    );
    let pid = server.child.id();
    let stop = Arc::new(AtomicBool::new(false));
    let offered_bytes = Arc::new(AtomicU64::new(0));
    let mut clients = Vec::new();
    for client in 0..CLIENTS {
        let (addr, stop, offered_bytes) =
            (server.addr.clone(), stop.clone(), offered_bytes.clone());
        clients.push(std::thread::spawn(move || {
            let (mut acked_events, mut acked_bytes, mut refused) = (0u64, 0u64, 0u64);
            let mut seq = 0u64;
            while !stop.load(Ordering::Relaxed) {
                use std::fmt::Write;
                let mut body = String::with_capacity(BATCH * 256);
                for i in 0..BATCH {
                    let _ = writeln!(
                        body,
                        r#"{{"client": "c{client}", "seq": {seq}, "i": {i}, "message": "overload event {client} {seq} {i} {PADDING}"}}"#
                    );
                }
                seq += 1;
                // A refused body is sent again at once (no heed to Retry-After): the
                // overload goes on.
                let answer = loop {
                    offered_bytes.fetch_add(body.len() as u64, Ordering::Relaxed);
                    let answer = send_to(&addr, "POST", "/api/v1/default/ingest", &[], body.as_bytes())
                        .expect("every request is answered");
                    if answer.status != 429 || stop.load(Ordering::Relaxed) {
                        break answer;
                    }
                    assert!(answer.header("retry-after").is_some());
                    refused += 1;
                };
                match answer.status {
                    200 => {
                        let reply: serde_json::Value = serde_json::from_slice(&answer.body).unwrap();
                        assert_eq!(reply["ingested"], BATCH as u64);
                        acked_events += BATCH as u64;
                        acked_bytes += body.len() as u64;
                    }
                    429 => refused += 1,
                    other => panic!("status {other}: {}", String::from_utf8_lossy(&answer.body)),
                }
            }
            (acked_events, acked_bytes, refused)
        }));
    }
    let started = Instant::now();
    // Anonymous memory (the heap) sampled 10 times a second; mapped block files are page
    // cache, which the kernel takes back when it needs it.
    let (mut peak, mut peak_file) = (0, 0);
    while started.elapsed() < Duration::from_secs(seconds) {
        std::thread::sleep(Duration::from_millis(100));
        peak = peak.max(status_bytes(pid, "RssAnon:"));
        peak_file = peak_file.max(status_bytes(pid, "RssFile:"));
    }
    stop.store(true, Ordering::Relaxed);
    let results: Vec<(u64, u64, u64)> = clients.into_iter().map(|c| c.join().unwrap()).collect();
    let elapsed = started.elapsed().as_secs_f64();
    let hwm = status_bytes(pid, "VmHWM:");
    let acked: u64 = results.iter().map(|r| r.0).sum();
    let accepted_bytes: u64 = results.iter().map(|r| r.1).sum();
    let refused: u64 = results.iter().map(|r| r.2).sum();
    let offered = offered_bytes.load(Ordering::Relaxed);
    let accepted_requests = acked / BATCH as u64;
    eprintln!(
        "overload: {seconds} s, {CLIENTS} clients; offered {:.0} requests/s ({:.0} MB/s of bodies sent or begun), accepted {:.1} requests/s ({:.1} MB/s): {:.0}x; {acked} events acknowledged, {refused} requests refused (429); peak anonymous RSS {} MB (file-backed {} MB, VmHWM {} MB)",
        (accepted_requests + refused) as f64 / elapsed,
        offered as f64 / elapsed / 1e6,
        accepted_requests as f64 / elapsed,
        accepted_bytes as f64 / elapsed / 1e6,
        (accepted_requests + refused) as f64 / accepted_requests.max(1) as f64,
        peak >> 20,
        peak_file >> 20,
        hwm >> 20
    );
    assert!(acked > 0, "nothing was accepted");
    assert!(
        refused >= 9 * accepted_requests,
        "offered less than 10x what was accepted: not an overload"
    );
    // Peak RSS bounded by the configuration. What the configuration allows plus the
    // process's own base (the binary, the runtime, allocator slack, merges of the small
    // flushed blocks), 56 + 160 MB, is what a quiet machine needs (178 MB measured), not a
    // bound: on a loaded one flushes, merges and the allocator's purges of freed pages
    // (mimalloc, 100 ms, cli_serve.rs) run late, and the peak reached 223 MB (issue 26,
    // item 6). So the budget is twice that, 432 MB, about twice the worst peak seen. It still
    // catches memory that grows with the load, which is what this test is for: the clients
    // offer gigabytes a minute (5 GB/s in a release build, BENCHMARKS.md), so refused bodies
    // kept would pass it within seconds; without the in-flight cap, 32 clients' 1 MB bodies
    // at 11x (ingest.rs) hold 350 MB over the base; and events kept past --memory-limit grow
    // with the minute's acknowledged bodies (340 MB in a release build) and more as events.
    let budget = 2 * (memory_limit + inflight + cache + (160 << 20));
    assert!(
        peak <= budget,
        "peak RSS {} MB over the budget {} MB",
        peak >> 20,
        budget >> 20
    );

    // What was acknowledged is stored: per client and in total, after a restart.
    assert!(server.terminate());
    let server = Server::start(&data);
    let (status, answer) =
        server.get("/api/v1/default/search?query=*&count=true&limit=0&aggs=terms(client,100)");
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["count"], acked, "{answer}");
    // The one aggregation asked for, whatever its name.
    let (_, terms) = answer["aggregations"]
        .as_object()
        .unwrap()
        .iter()
        .next()
        .unwrap();
    let buckets = terms["buckets"].as_array().unwrap().clone();
    for (client, result) in results.iter().enumerate() {
        let stored = buckets
            .iter()
            .find(|b| b["key"] == format!("c{client}"))
            .map_or(0, |b| b["count"].as_u64().unwrap());
        assert_eq!(stored, result.0, "client {client}: {answer}");
    }
}
