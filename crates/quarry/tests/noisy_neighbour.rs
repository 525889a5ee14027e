//! Noisy neighbour, a measurement (not run by `cargo test`: timings are for benchmarks, see
//! BENCHMARKS.md): a quiet tenant's acknowledgement latency alone, then while another tenant
//! pushes 10× its ingest-rate quota from 8 clients. Run with
//!
//!     cargo test --release -p quarry --test noisy_neighbour -- --ignored --nocapture

mod common;

use common::{send_to, Server};
use serde_json::json;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const ADMIN: &str = "noisy-admin";
/// The noisy tenant's quota, and what it is sent: 10× (8 clients, back to back).
const NOISY_QUOTA: u64 = 2 << 20;

fn body(word: &str, from: usize, n: usize) -> String {
    (from..from + n)
        .map(|i| format!("{}\n", json!({"message": format!("{word} event {i} with some words of padding to look like a log line"), "i": i})))
        .collect()
}

/// p50 and p99 in ms of `requests` ingests of 100 events by the quiet tenant, one at a time.
fn quiet_latencies(addr: &str, key: &str, requests: usize) -> (f64, f64) {
    let auth = format!("Bearer {key}");
    let mut times: Vec<f64> = (0..requests)
        .map(|r| {
            let started = Instant::now();
            let answer = send_to(
                addr,
                "POST",
                "/api/v1/quiet/ingest",
                &[("Authorization", &auth)],
                body("quiet", r * 100, 100).as_bytes(),
            )
            .unwrap();
            assert_eq!(answer.status, 200);
            std::thread::sleep(Duration::from_millis(20));
            started.elapsed().as_secs_f64() * 1000.0 - 20.0
        })
        .collect();
    times.sort_by(f64::total_cmp);
    (times[times.len() / 2], times[times.len() * 99 / 100])
}

#[test]
#[ignore = "a measurement: run with --ignored --nocapture, in release"]
fn a_tenant_over_its_quota_does_not_slow_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    let mut server = Server::spawn(
        &["--data", data.to_str().unwrap(), "--listen", "127.0.0.1:0"],
        &[("QUARRY_ADMIN_TOKEN", ADMIN)],
        Path::new("."),
    );
    server.token = Some(ADMIN.into());
    let create = |body: serde_json::Value| {
        let (status, answer) = server.request("POST", "/api/v1/tenants", Some(&body.to_string()));
        assert_eq!(status, 201, "{answer}");
        answer["api_key"].as_str().unwrap().to_owned()
    };
    let quiet = create(json!({"name": "quiet"}));
    let noisy = create(
        json!({"name": "noisy", "quotas": {"ingest_bytes_per_second": NOISY_QUOTA, "ingest_burst_bytes": NOISY_QUOTA}}),
    );
    let (alone_p50, alone_p99) = quiet_latencies(&server.addr, &quiet, 300);

    let stop = Arc::new(AtomicBool::new(false));
    let (sent, accepted, refused) = (
        Arc::new(AtomicU64::new(0)),
        Arc::new(AtomicU64::new(0)),
        Arc::new(AtomicU64::new(0)),
    );
    let started = Instant::now();
    let pushers: Vec<_> = (0..8)
        .map(|c| {
            let (addr, key, stop) = (server.addr.clone(), noisy.clone(), stop.clone());
            let (sent, accepted, refused) = (sent.clone(), accepted.clone(), refused.clone());
            std::thread::spawn(move || {
                let auth = format!("Bearer {key}");
                let mut r = 0;
                let limit = Instant::now();
                while !stop.load(Ordering::Relaxed) {
                    // Over 10× the quota from the 8 clients (12× asked: requests take time),
                    // paced per 100 ms.
                    let target = NOISY_QUOTA * 12 / 8 / 10;
                    let payload = body(&format!("noisy{c}"), r * 1000, (target / 110) as usize);
                    r += 1;
                    sent.fetch_add(payload.len() as u64, Ordering::Relaxed);
                    let answer = send_to(
                        &addr,
                        "POST",
                        "/api/v1/noisy/ingest",
                        &[("Authorization", &auth)],
                        payload.as_bytes(),
                    )
                    .unwrap();
                    match answer.status {
                        200 => accepted.fetch_add(payload.len() as u64, Ordering::Relaxed),
                        429 => refused.fetch_add(1, Ordering::Relaxed),
                        other => panic!("status {other}"),
                    };
                    let next = limit + Duration::from_millis(100 * r as u64);
                    std::thread::sleep(next.saturating_duration_since(Instant::now()));
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs(2));
    let (loaded_p50, loaded_p99) = quiet_latencies(&server.addr, &quiet, 300);
    stop.store(true, Ordering::Relaxed);
    for pusher in pushers {
        pusher.join().unwrap();
    }
    let seconds = started.elapsed().as_secs_f64();
    eprintln!(
        "noisy neighbour: noisy tenant sent {:.1} MB/s against a quota of {:.1} MB/s, {:.1} MB/s accepted, {} requests refused (429)",
        sent.load(Ordering::Relaxed) as f64 / seconds / 1e6,
        NOISY_QUOTA as f64 / 1e6,
        accepted.load(Ordering::Relaxed) as f64 / seconds / 1e6,
        refused.load(Ordering::Relaxed)
    );
    eprintln!(
        "quiet tenant ack latency, 100 events per request: alone p50 {alone_p50:.2} ms p99 {alone_p99:.2} ms; beside it p50 {loaded_p50:.2} ms p99 {loaded_p99:.2} ms ({:.2}x / {:.2}x)",
        loaded_p50 / alone_p50,
        loaded_p99 / alone_p99
    );
    assert!(
        loaded_p50 <= 2.0 * alone_p50,
        "the quiet tenant's p50 more than doubled"
    );
}
