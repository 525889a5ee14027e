//! Crash test: the real server, concurrent clients ingesting, SIGKILL at random points
//! (during ingest, WAL fsyncs, flushes to block files, merges: the server flushes every 30 ms
//! and merges its many small blocks, so kills land in all of them), restart, and check that
//! every acknowledged event is present exactly once, that no event is present twice, and that
//! every block opens and checks (`quarry check`).
//!
//! `QUARRY_CRASH_KILLS` kills (default 20, CI's short run); `bench/crash-soak.sh` runs 1,000.
//! `QUARRY_CRASH_SEED` repeats a run (the seed is printed). Every `EPOCH` kills the data is
//! verified in full and the directory started afresh, so a long soak stays small.

mod common;
#[path = "../../quarry-store/tests/support/seaweedfs.rs"]
mod seaweedfs;

use common::{send_to, Server};
use quarry_store::BlockStore;
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const CLIENTS: usize = 4;
const EPOCH: usize = 25;

/// xorshift64*: the test's only randomness, from one printed seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// What the clients know: uids acknowledged, and uids sent without an answer (they may or
/// may not be there, but at most once).
#[derive(Default)]
struct Ledger {
    acked: Vec<String>,
    unknown: Vec<String>,
}

fn client(
    addr: String,
    client: usize,
    next: Arc<Mutex<u64>>,
    seed: u64,
    stop: Arc<AtomicBool>,
    ledger: Arc<Mutex<Ledger>>,
) {
    let mut rng = Rng(seed | 1);
    while !stop.load(Ordering::Relaxed) {
        let size = 1 + rng.below(150) as usize;
        let first = {
            let mut next = next.lock().unwrap();
            let first = *next;
            *next += size as u64;
            first
        };
        let uids: Vec<String> = (first..first + size as u64)
            .map(|n| format!("c{client}x{n}"))
            .collect();
        // Half the clients speak the bulk API, half NDJSON.
        let (target, body) = if client.is_multiple_of(2) {
            let body: String = uids
                .iter()
                .map(|uid| format!("{{\"message\": \"crash test event\", \"uid\": \"{uid}\", \"client\": {client}}}\n"))
                .collect();
            ("/api/v1/default/ingest", body)
        } else {
            let body: String = uids
                .iter()
                .map(|uid| format!("{{\"create\":{{}}}}\n{{\"message\": \"crash test event\", \"uid\": \"{uid}\", \"client\": {client}}}\n"))
                .collect();
            ("/_bulk", body)
        };
        let answer = send_to(&addr, "POST", target, &[], body.as_bytes());
        let ok = answer.as_ref().is_some_and(|a| {
            a.status == 200
                && (target.ends_with("ingest") && a.json()["ingested"] == size
                    || target.ends_with("_bulk") && a.json()["errors"] == false)
        });
        let mut ledger = ledger.lock().unwrap();
        if ok {
            ledger.acked.extend(uids);
        } else {
            ledger.unknown.extend(uids);
            if answer.is_none() {
                // The server is gone; wait for the next one.
                drop(ledger);
                std::thread::sleep(Duration::from_millis(5));
            }
        }
    }
}

/// Every uid in the data, by count, read through the API.
fn stored_uids(server: &Server) -> HashMap<String, u32> {
    let mut uids = HashMap::new();
    for event in server.export("query=crash&sort=time_asc") {
        *uids
            .entry(event["uid"].as_str().unwrap().to_owned())
            .or_insert(0) += 1;
    }
    uids
}

/// Where a run keeps its blocks: the data directory, or object storage.
struct Storage<'a> {
    /// Flags for `serve` and `check` (`--storage URL`), none for local.
    flags: Vec<String>,
    env: Vec<(&'static str, String)>,
    /// Object storage: the server restarts with an empty cache before each verification.
    object: Option<&'a seaweedfs::SeaweedFs>,
}

impl Storage<'_> {
    fn local() -> Storage<'static> {
        Storage {
            flags: Vec::new(),
            env: Vec::new(),
            object: None,
        }
    }

    fn env(&self) -> Vec<(&str, &str)> {
        self.env.iter().map(|(k, v)| (*k, v.as_str())).collect()
    }
}

fn verify(
    data: &Path,
    flags: &[&str],
    storage: &Storage,
    ledger: &Ledger,
    log: &Path,
    seed: u64,
) -> usize {
    let storage_flags: Vec<&str> = storage.flags.iter().map(String::as_str).collect();
    let server = Server::spawn_logged(
        &[
            &["--data", data.to_str().unwrap(), "--listen", "127.0.0.1:0"],
            flags,
            &storage_flags,
        ]
        .concat(),
        &storage.env(),
        Path::new("."),
        Some(log),
    );
    let stored = stored_uids(&server);
    let context = || format!("seed {seed}; server log {}", log.display());
    // A search says what it cost the object store, when the blocks are there.
    let (status, body) = server.get("/api/v1/default/search?query=crash&limit=10&count=true");
    assert_eq!(status, 200, "{body}: {}", context());
    assert_eq!(body["count"], stored.values().sum::<u32>(), "{}", context());
    let object_store = &body["object_store"];
    if storage.object.is_none() {
        assert!(object_store.is_null(), "{body}: {}", context());
    } else if !object_store.is_null() {
        let count = |name: &str| object_store[name].as_u64().unwrap();
        assert!(count("round_trips") <= count("ranges"), "{body}");
        assert_eq!(count("round_trips") > 0, count("bytes") > 0, "{body}");
    }
    for uid in &ledger.acked {
        assert_eq!(
            stored.get(uid),
            Some(&1),
            "acknowledged {uid}: {}",
            context()
        );
    }
    let known: std::collections::HashSet<&String> =
        ledger.acked.iter().chain(&ledger.unknown).collect();
    for (uid, count) in &stored {
        assert_eq!(*count, 1, "{uid} stored {count} times: {}", context());
        assert!(known.contains(uid), "{uid} was never sent: {}", context());
    }
    drop(server);
    let check = std::process::Command::new(env!("CARGO_BIN_EXE_quarry"))
        .args(
            [
                &["check", "--data", data.to_str().unwrap()],
                &storage_flags[..],
            ]
            .concat(),
        )
        .envs(storage.env())
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "quarry check: {} {}",
        String::from_utf8_lossy(&check.stderr),
        context()
    );
    stored.len()
}

#[test]
fn acknowledged_events_survive_sigkill_exactly_once() {
    let kills: usize = std::env::var("QUARRY_CRASH_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    crash_run(kills, |_| Storage::local());
}

/// The same with blocks in object storage (a throwaway SeaweedFS): sealed blocks are
/// uploaded before the catalog names them, and every other verification restarts the server
/// with an empty cache, so every event it finds was read back from the store; the others
/// restart on the disk cache that the kills left.
#[test]
fn acknowledged_events_survive_sigkill_exactly_once_on_object_storage() {
    let Some(weed) = seaweedfs::SeaweedFs::start() else {
        return;
    };
    let kills: usize = std::env::var("QUARRY_CRASH_S3_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10);
    crash_run(kills, |epoch| Storage {
        flags: vec![
            "--storage".into(),
            weed.url(&format!("crash/epoch-{epoch}")),
        ],
        env: weed.env(),
        object: Some(&weed),
    });
}

fn crash_run<'a>(kills: usize, storage_of: impl Fn(usize) -> Storage<'a>) {
    let seed: u64 = std::env::var("QUARRY_CRASH_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    eprintln!("crash test: {kills} kills, QUARRY_CRASH_SEED={seed}");
    let mut rng = Rng(seed | 1);
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("server.log");
    let flags = ["--flush-interval", "0.03", "--flush-size", "256KB"];
    let started = Instant::now();
    let (mut acked_total, mut stored_total, mut objects_total) = (0usize, 0usize, 0usize);
    let mut epoch = 0;
    let mut done = 0;
    while done < kills {
        epoch += 1;
        let data = dir.path().join(format!("data-{epoch}"));
        let storage = storage_of(epoch);
        let storage_flags: Vec<&str> = storage.flags.iter().map(String::as_str).collect();
        let ledger = Arc::new(Mutex::new(Ledger::default()));
        let next = Arc::new(Mutex::new(0u64));
        let in_epoch = EPOCH.min(kills - done);
        for _ in 0..in_epoch {
            let server = Server::spawn_logged(
                &[
                    &["--data", data.to_str().unwrap(), "--listen", "127.0.0.1:0"],
                    &flags[..],
                    &storage_flags,
                ]
                .concat(),
                &storage.env(),
                Path::new("."),
                Some(&log),
            );
            let stop = Arc::new(AtomicBool::new(false));
            let clients: Vec<_> = (0..CLIENTS)
                .map(|c| {
                    let (addr, next, stop, ledger) = (
                        server.addr.clone(),
                        next.clone(),
                        stop.clone(),
                        ledger.clone(),
                    );
                    let client_seed = rng.next();
                    std::thread::spawn(move || client(addr, c, next, client_seed, stop, ledger))
                })
                .collect();
            std::thread::sleep(Duration::from_millis(20 + rng.below(400)));
            let mut server = server;
            server.child.kill().unwrap();
            server.child.wait().unwrap();
            stop.store(true, Ordering::Relaxed);
            for client in clients {
                client.join().unwrap();
            }
            done += 1;
        }
        let ledger = ledger.lock().unwrap();
        if storage.object.is_some() && epoch % 2 == 1 {
            // A restart on another machine, or after the cache was lost: nothing local but
            // the WAL, the catalog and the tenants. (Every other epoch restarts on the disk
            // cache the killed servers left, copies cut short included.)
            let _ = std::fs::remove_dir_all(data.join("cache"));
        }
        stored_total += verify(&data, &flags, &storage, &ledger, &log, seed);
        if let Some(weed) = storage.object {
            // The blocks are in the store, none in the data directory.
            let url = &storage.flags[1];
            let scratch = tempfile::tempdir().unwrap();
            let objects =
                quarry_store::ObjectStorage::s3_with(url, scratch.path(), &weed.settings())
                    .unwrap()
                    .tenant_blocks("default")
                    .list()
                    .unwrap_or_else(|e| panic!("{e}: seed {seed}; server log {}", log.display()));
            assert!(
                !objects.is_empty(),
                "no block reached {url}: seed {seed}; server log {}",
                log.display()
            );
            let local_blocks = std::fs::read_dir(data.join("blocks"))
                .map(|entries| entries.count())
                .unwrap_or(0);
            assert_eq!(local_blocks, 0, "block files in the data directory");
            objects_total += objects.len();
        }
        acked_total += ledger.acked.len();
        std::fs::remove_dir_all(&data).unwrap();
    }
    eprintln!(
        "crash test: {done} kills in {:.1} s, {acked_total} events acknowledged, {stored_total} stored (acknowledged + unanswered that made it), all exactly once; {objects_total} blocks in object storage",
        started.elapsed().as_secs_f64()
    );
    assert!(acked_total > 0, "no request was ever acknowledged");
}
