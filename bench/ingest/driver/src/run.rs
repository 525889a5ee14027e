//! `ingest-driver run`: starts an engine, pushes every event to it from concurrent clients,
//! probes how soon a new event is searchable, and writes the run's record.
//!
//! 1. Starts the engine command and waits for its `... listening on http://ADDR` stdout line
//!    (then, with `--ready-path`, for that path to answer 200).
//! 2. Probe (untimed): one marker event `m0`, sent and searched for until found. An ingest or
//!    search endpoint answering 404 ends the run with exit status 4 (the engine does not have
//!    it yet); anything else unexpected with an error.
//! 3. The timed span: `--clients` threads, each with one keep-alive connection, take the next
//!    request body (`--batch` events) until none is left, and time each request from the first
//!    byte written to the last byte of the answer (the ack latency). Beside them one marker
//!    thread, every `--marker-interval-ms`, sends a request holding one event
//!    `{"_time":NOW,"marker":"mN","message":"marker"}` and then searches `marker:mN` every
//!    `--poll-ms` until the count is at least 1: the time to searchable, **from the start of
//!    the marker's send to the first search that finds it** (the time from its ack is recorded
//!    too). The span ends with the last client's last ack; the engine's CPU time is read from
//!    `/proc/PID/stat` at both ends.
//! 4. Reads the engine's peak RSS (`VmHWM`). With `--count-path` (an engine whose ingest answer
//!    does not say what it kept, format `jsonline`), counts the stored events until every event
//!    and marker sent is there or `--marker-timeout-s` has passed; those missing are failed
//!    items. Then sends SIGTERM and waits for the engine to exit (a graceful shutdown flushes
//!    what it holds), and measures its data directory (`du -sb`).

use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use serde::{Deserialize, Serialize};

use crate::events::{self, Format, Requests};
use crate::process;
use crate::stats::{millis, now_rfc3339, percentile};
use logs_driver::http::{Connection, Response};

/// Exit status when the engine answers 404 on an endpoint the run needs.
pub const EXIT_NO_ENDPOINT: i32 = 4;

pub struct RunOptions {
    pub events: PathBuf,
    pub engine: String,
    pub format: Format,
    pub ingest_path: String,
    /// Search target with `{marker}` where the marker goes.
    pub search_path: String,
    pub ready_path: Option<String>,
    /// Count target checked after the span (format `jsonline`).
    pub count_path: Option<String>,
    pub clients: usize,
    pub batch: usize,
    pub limit: Option<u64>,
    pub marker_interval: Duration,
    pub poll_interval: Duration,
    pub marker_timeout: Duration,
    pub start_timeout: Duration,
    pub shutdown_timeout: Duration,
    pub data: Option<PathBuf>,
    pub command: Vec<String>,
}

/// One run's figures. MB are 10^6 bytes of raw event JSON (one line break each; bulk action
/// lines and markers not counted); latencies in milliseconds.
#[derive(Debug, Serialize, Deserialize)]
pub struct RunRecord {
    pub engine: String,
    pub format: Format,
    pub events: u64,
    pub raw_bytes: u64,
    pub requests: u64,
    pub clients: usize,
    pub batch: usize,
    pub seconds: f64,
    pub mb_per_s: f64,
    pub events_per_s: f64,
    pub requests_per_s: f64,
    pub server_cpu_seconds: f64,
    /// CPU seconds over wall seconds: the cores the server kept busy.
    pub server_cores: f64,
    pub mb_per_cpu_s: f64,
    pub events_per_cpu_s: f64,
    pub ack_p50_ms: f64,
    pub ack_p99_ms: f64,
    pub ack_max_ms: f64,
    pub markers: u64,
    pub markers_not_found: u64,
    /// From the start of the marker's send to the first search that found it.
    pub searchable_p50_ms: f64,
    pub searchable_p99_ms: f64,
    /// From the marker's ack to the first search that found it.
    pub searchable_after_ack_p50_ms: f64,
    pub searchable_after_ack_p99_ms: f64,
    pub marker_ack_p50_ms: f64,
    /// Round trips of the marker searches, and searches per marker (median).
    #[serde(default)]
    pub search_p50_ms: f64,
    #[serde(default)]
    pub search_p99_ms: f64,
    #[serde(default)]
    pub searches_per_marker_p50: u64,
    pub peak_rss_bytes: u64,
    pub shutdown_seconds: Option<f64>,
    pub disk_bytes: Option<u64>,
    pub disk_per_raw_byte: Option<f64>,
    pub failed_items: u64,
    /// Events and markers the count after the span found (`--count-path` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counted: Option<u64>,
    /// 429/503 answers retried (the ack latency of a request includes its retries).
    #[serde(default)]
    pub throttled: u64,
}

/// A run that cannot go on; `NoEndpoint` is reported with its own exit status.
#[derive(Debug)]
pub struct NoEndpoint(pub String);

impl std::fmt::Display for NoEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NoEndpoint {}

/// The engine process; killed if still running when dropped (an error path).
struct Engine {
    child: Child,
}

impl Drop for Engine {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

impl Engine {
    fn start(command: &[String], timeout: Duration) -> anyhow::Result<(Engine, SocketAddr)> {
        let (program, args) = command.split_first().context("no engine command")?;
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .with_context(|| format!("starting {program}"))?;
        let stdout = child.stdout.take().expect("stdout is piped");
        let engine = Engine { child };
        // The reader thread hands over the address, then copies the rest of the engine's stdout
        // to stderr, so the engine never blocks on a full pipe.
        let (found, address) = mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout);
            let mut line = String::new();
            let mut found = Some(found);
            while matches!(lines.read_line(&mut line), Ok(n) if n > 0) {
                if let Some(addr) = found.as_ref().and_then(|_| listening_address(&line)) {
                    let _ = found.take().expect("checked").send(addr);
                } else {
                    eprint!("{line}");
                }
                line.clear();
            }
        });
        match address.recv_timeout(timeout) {
            Ok(addr) => Ok((engine, addr)),
            Err(_) => bail!(
                "the engine printed no 'listening on http://ADDR' line within {:?}",
                timeout
            ),
        }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGTERM, then waits up to `timeout`; the seconds it took, `None` if it had to be killed.
    fn terminate(mut self, timeout: Duration) -> anyhow::Result<Option<f64>> {
        let started = Instant::now();
        // SAFETY: kill has no memory preconditions; the pid is our child, not yet reaped.
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
        while started.elapsed() < timeout {
            if let Some(status) = self.child.try_wait()? {
                // A JVM ends with 143 (128 + SIGTERM) after its shutdown hooks ran.
                let terminated =
                    status.signal() == Some(libc::SIGTERM) || status.code() == Some(143);
                if !status.success() && !terminated {
                    eprintln!("ingest-driver: the engine exited with {status} after SIGTERM");
                }
                return Ok(Some(started.elapsed().as_secs_f64()));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        eprintln!("ingest-driver: the engine did not exit within {timeout:?} of SIGTERM: killed");
        Ok(None)
    }
}

/// The address of a `... listening on http://ADDR` line.
fn listening_address(line: &str) -> Option<SocketAddr> {
    let rest = &line[line.find("listening on http://")? + "listening on http://".len()..];
    rest.split(|c: char| c.is_whitespace() || c == '/')
        .next()?
        .parse()
        .ok()
}

/// What the client side checks of an ingest answer: first only the item count (read without
/// building the items, so that a long answer costs the client little of the shared CPU) ...
#[derive(Deserialize)]
struct BulkReply {
    errors: bool,
    items: Vec<serde::de::IgnoredAny>,
}

/// ... and the items themselves only when some failed.
#[derive(Deserialize)]
struct BulkItems {
    items: Vec<serde_json::Value>,
}

#[derive(Deserialize)]
struct IngestReply {
    ingested: u64,
    #[serde(default)]
    errors: Vec<serde_json::Value>,
}

/// A count answer: `{"count":N}`, N a number or, as VictoriaLogs' `stats count()` gives it, a
/// string of digits.
#[derive(Deserialize)]
struct CountReply {
    #[serde(deserialize_with = "number_or_string")]
    count: u64,
}

fn number_or_string<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<u64, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Count {
        Number(u64),
        Text(String),
    }
    match Count::deserialize(deserializer)? {
        Count::Number(n) => Ok(n),
        Count::Text(text) => text.parse().map_err(serde::de::Error::custom),
    }
}

/// What one ingest request came to.
#[derive(Default)]
struct Ingested {
    /// Items the engine refused.
    failed: u64,
    /// Answers 429 (or 503) before the one that took the request.
    throttled: u64,
}

/// Sends one ingest request, again after a pause while the engine answers 429 Too Many
/// Requests or 503 (back-pressure, which Elasticsearch's clients also retry).
fn ingest(
    connection: &mut Connection,
    options: &RunOptions,
    body: &[u8],
    events: u64,
) -> anyhow::Result<Ingested> {
    let mut throttled = 0;
    let mut pause = Duration::from_millis(5);
    let response = loop {
        let response = connection
            .post(&options.ingest_path, options.format.content_type(), body)
            .with_context(|| format!("POST {}", options.ingest_path))?;
        if !matches!(response.status, 429 | 503) {
            break response;
        }
        throttled += 1;
        if throttled > 10_000 {
            bail!(
                "POST {} answered 429/503 10,000 times in a row",
                options.ingest_path
            );
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(200));
    };
    check_status(&response, "POST", &options.ingest_path)?;
    let failed = failed_items(options.format, &response, events)?;
    Ok(Ingested { failed, throttled })
}

/// The items of an ingest answer that failed.
fn failed_items(format: Format, response: &Response, events: u64) -> anyhow::Result<u64> {
    match format {
        Format::Bulk => {
            let reply: BulkReply = serde_json::from_slice(&response.body)
                .with_context(|| format!("the bulk answer {}", preview(&response.body)))?;
            if reply.items.len() as u64 != events {
                bail!(
                    "{} bulk items answered for {events} sent",
                    reply.items.len()
                );
            }
            if !reply.errors {
                return Ok(0);
            }
            let items: BulkItems = serde_json::from_slice(&response.body)
                .with_context(|| format!("the bulk answer {}", preview(&response.body)))?;
            let failed = items
                .items
                .iter()
                .filter(|item| {
                    let status = item
                        .as_object()
                        .and_then(|item| item.values().next())
                        .and_then(|action| action["status"].as_u64());
                    !matches!(status, Some(200..=299))
                })
                .count() as u64;
            Ok(failed)
        }
        // The answer says nothing per event: `--count-path` checks what was kept.
        Format::Jsonline => Ok(0),
        Format::Ndjson => {
            let reply: IngestReply = serde_json::from_slice(&response.body)
                .with_context(|| format!("the ingest answer {}", preview(&response.body)))?;
            if reply.ingested > events || (reply.ingested < events && reply.errors.is_empty()) {
                bail!(
                    "{} events ingested for {events} sent, no error given",
                    reply.ingested
                );
            }
            Ok(events - reply.ingested)
        }
    }
}

fn check_status(response: &Response, method: &str, target: &str) -> anyhow::Result<()> {
    match response.status {
        200..=299 => Ok(()),
        404 => Err(NoEndpoint(format!(
            "{method} {target} answered 404: the engine has no such endpoint ({})",
            preview(&response.body)
        ))
        .into()),
        status => bail!(
            "{method} {target} answered {status}: {}",
            preview(&response.body)
        ),
    }
}

fn preview(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let mut preview: String = text.chars().take(300).collect();
    if preview.len() < text.len() {
        preview.push('…');
    }
    preview
}

/// One marker's timings.
struct MarkerTimes {
    acked: Duration,
    found: Option<Duration>,
    /// The round trip of each search sent for it.
    searches: Vec<Duration>,
}

/// Sends marker `mN` and searches until found or `marker_timeout`.
fn probe_marker(
    connection: &mut Connection,
    options: &RunOptions,
    n: u64,
) -> anyhow::Result<MarkerTimes> {
    let marker = format!("m{n}");
    let event = format!(
        r#"{{"_time":"{}","marker":"{marker}","message":"marker"}}"#,
        now_rfc3339()
    );
    let mut body = Vec::with_capacity(event.len() + events::BULK_ACTION.len() + 1);
    options.format.push_event(&mut body, event.as_bytes());
    let target = options.search_path.replace("{marker}", &marker);
    let started = Instant::now();
    let ingested = ingest(connection, options, &body, 1)?;
    if ingested.failed > 0 {
        bail!("the engine refused marker event {event}");
    }
    let acked = started.elapsed();
    let mut searches = Vec::new();
    loop {
        let sent = Instant::now();
        let response = connection
            .get(&target)
            .with_context(|| format!("GET {target}"))?;
        searches.push(sent.elapsed());
        check_status(&response, "GET", &target)?;
        let reply: CountReply = serde_json::from_slice(&response.body)
            .with_context(|| format!("the search answer {}", preview(&response.body)))?;
        if reply.count >= 1 {
            return Ok(MarkerTimes {
                acked,
                found: Some(started.elapsed()),
                searches,
            });
        }
        if started.elapsed() > options.marker_timeout {
            return Ok(MarkerTimes {
                acked,
                found: None,
                searches,
            });
        }
        std::thread::sleep(options.poll_interval);
    }
}

/// Counts the stored events with `target` every 100 ms until the count is `expected` or
/// `timeout` has passed; returns the last count.
fn count_stored(
    addr: SocketAddr,
    target: &str,
    expected: u64,
    timeout: Duration,
) -> anyhow::Result<u64> {
    let started = Instant::now();
    let mut connection = Connection::new(addr);
    loop {
        let response = connection
            .get(target)
            .with_context(|| format!("GET {target}"))?;
        check_status(&response, "GET", target)?;
        let reply: CountReply = serde_json::from_slice(&response.body)
            .with_context(|| format!("the count answer {}", preview(&response.body)))?;
        if reply.count > expected {
            bail!(
                "{target} counts {} events, more than the {expected} sent",
                reply.count
            );
        }
        if reply.count == expected || started.elapsed() > timeout {
            return Ok(reply.count);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn wait_ready(addr: SocketAddr, path: &str, timeout: Duration) -> anyhow::Result<()> {
    let started = Instant::now();
    let mut connection = Connection::new(addr);
    loop {
        match connection.get(path) {
            Ok(response) if response.status == 200 => return Ok(()),
            outcome if started.elapsed() > timeout => {
                bail!(
                    "GET {path} did not answer 200 within {timeout:?}: last {:?}",
                    outcome.map(|r| r.status)
                )
            }
            _ => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

pub fn run(options: &RunOptions) -> anyhow::Result<RunRecord> {
    anyhow::ensure!(options.clients > 0, "--clients must be at least 1");
    let Requests {
        bodies,
        events,
        raw_bytes,
    } = events::load(
        &options.events,
        options.format,
        options.batch,
        options.limit,
    )?;
    anyhow::ensure!(events > 0, "no events in {}", options.events.display());
    let last_batch = events - (bodies.len() as u64 - 1) * options.batch as u64;
    let events_in = |index: usize| {
        if index + 1 == bodies.len() {
            last_batch
        } else {
            options.batch as u64
        }
    };

    let (engine, addr) = Engine::start(&options.command, options.start_timeout)?;
    eprintln!(
        "ingest-driver: {} at http://{addr} (pid {}): {events} events, {:.1} MB in {} requests of {}, {} clients, format {:?}",
        options.engine,
        engine.pid(),
        raw_bytes as f64 / 1e6,
        bodies.len(),
        options.batch,
        options.clients,
        options.format
    );
    if let Some(path) = &options.ready_path {
        wait_ready(addr, path, options.start_timeout)?;
    }
    let probe = probe_marker(&mut Connection::new(addr), options, 0)?;
    if probe.found.is_none() {
        bail!(
            "marker m0 was acknowledged but not found by {} within {:?}",
            options.search_path,
            options.marker_timeout
        );
    }

    let next = AtomicUsize::new(0);
    let done = AtomicBool::new(false);
    let totals = Mutex::new(Ingested::default());
    let pid = engine.pid();
    let cpu_before = process::cpu_seconds(pid)?;
    let started = Instant::now();
    let (latencies, markers, seconds, cpu_after) =
        std::thread::scope(|scope| -> anyhow::Result<_> {
            let clients: Vec<_> = (0..options.clients)
                .map(|_| {
                    scope.spawn(|| -> anyhow::Result<Vec<Duration>> {
                        let mut connection = Connection::new(addr);
                        let mut latencies = Vec::new();
                        let outcome = (|| loop {
                            let index = next.fetch_add(1, Ordering::Relaxed);
                            let Some(body) = bodies.get(index) else {
                                return Ok(());
                            };
                            let sent = Instant::now();
                            let ingested =
                                ingest(&mut connection, options, body, events_in(index))?;
                            latencies.push(sent.elapsed());
                            if ingested.failed > 0 || ingested.throttled > 0 {
                                let mut totals = totals.lock().unwrap_or_else(|p| p.into_inner());
                                totals.failed += ingested.failed;
                                totals.throttled += ingested.throttled;
                            }
                        })();
                        if outcome.is_err() {
                            // Stop the others too: the run is lost.
                            next.store(bodies.len(), Ordering::Relaxed);
                        }
                        outcome.map(|()| latencies)
                    })
                })
                .collect();
            let marker_thread = scope.spawn(|| -> anyhow::Result<Vec<MarkerTimes>> {
                let mut connection = Connection::new(addr);
                let mut times = Vec::new();
                let mut next_marker = Instant::now() + options.marker_interval;
                for n in 1.. {
                    while Instant::now() < next_marker {
                        if done.load(Ordering::Relaxed) {
                            return Ok(times);
                        }
                        std::thread::sleep(Duration::from_millis(5).min(options.marker_interval));
                    }
                    if done.load(Ordering::Relaxed) {
                        break;
                    }
                    next_marker += options.marker_interval;
                    times.push(probe_marker(&mut connection, options, n)?);
                    // A marker that took longer than the interval delays the next, not bunches them.
                    next_marker = next_marker.max(Instant::now());
                }
                Ok(times)
            });
            let mut latencies = Vec::with_capacity(bodies.len());
            let mut first_error = None;
            for client in clients {
                match client.join().expect("client threads do not panic") {
                    Ok(samples) => latencies.extend(samples),
                    Err(error) => {
                        first_error.get_or_insert(error);
                    }
                }
            }
            let seconds = started.elapsed().as_secs_f64();
            let cpu_after = process::cpu_seconds(pid);
            done.store(true, Ordering::Relaxed);
            let markers = marker_thread
                .join()
                .expect("the marker thread does not panic");
            if let Some(error) = first_error {
                return Err(error);
            }
            Ok((latencies, markers?, seconds, cpu_after?))
        })?;
    let cpu_seconds = cpu_after - cpu_before;
    let peak_rss_bytes = process::peak_rss_bytes(engine.pid())?;
    let totals = totals.into_inner().unwrap_or_else(|p| p.into_inner());
    let mut failed_items = totals.failed;
    let mut counted = None;
    if let Some(target) = &options.count_path {
        // Every event, marker m0 and the markers of the span.
        let expected = events + 1 + markers.len() as u64;
        let count = count_stored(addr, target, expected, options.marker_timeout)?;
        if count < expected {
            eprintln!(
                "ingest-driver: {} stored {count} of the {expected} events and markers sent",
                options.engine
            );
        }
        failed_items += expected - count;
        counted = Some(count);
    }
    let shutdown_seconds = engine.terminate(options.shutdown_timeout)?;
    let disk_bytes = match &options.data {
        Some(dir) => Some(process::disk_bytes(dir)?),
        None => None,
    };

    let mut latencies = latencies;
    latencies.sort_unstable();
    let mut searchable: Vec<Duration> = markers.iter().filter_map(|m| m.found).collect();
    searchable.sort_unstable();
    let mut after_ack: Vec<Duration> = markers
        .iter()
        .filter_map(|m| m.found.map(|found| found.saturating_sub(m.acked)))
        .collect();
    after_ack.sort_unstable();
    let mut searches: Vec<Duration> = markers
        .iter()
        .flat_map(|m| m.searches.iter().copied())
        .collect();
    searches.sort_unstable();
    let mut searches_per_marker: Vec<usize> = markers.iter().map(|m| m.searches.len()).collect();
    searches_per_marker.sort_unstable();
    let mut marker_acks: Vec<Duration> = markers.iter().map(|m| m.acked).collect();
    marker_acks.sort_unstable();
    let mb = raw_bytes as f64 / 1e6;
    Ok(RunRecord {
        engine: options.engine.clone(),
        format: options.format,
        events,
        raw_bytes,
        requests: bodies.len() as u64,
        clients: options.clients,
        batch: options.batch,
        seconds,
        mb_per_s: mb / seconds,
        events_per_s: events as f64 / seconds,
        requests_per_s: bodies.len() as f64 / seconds,
        server_cpu_seconds: cpu_seconds,
        server_cores: cpu_seconds / seconds,
        mb_per_cpu_s: mb / cpu_seconds,
        events_per_cpu_s: events as f64 / cpu_seconds,
        ack_p50_ms: millis(percentile(&latencies, 500)),
        ack_p99_ms: millis(percentile(&latencies, 990)),
        ack_max_ms: millis(latencies.last().copied().unwrap_or_default()),
        markers: markers.len() as u64,
        markers_not_found: markers.iter().filter(|m| m.found.is_none()).count() as u64,
        searchable_p50_ms: millis(percentile(&searchable, 500)),
        searchable_p99_ms: millis(percentile(&searchable, 990)),
        searchable_after_ack_p50_ms: millis(percentile(&after_ack, 500)),
        searchable_after_ack_p99_ms: millis(percentile(&after_ack, 990)),
        marker_ack_p50_ms: millis(percentile(&marker_acks, 500)),
        search_p50_ms: millis(percentile(&searches, 500)),
        search_p99_ms: millis(percentile(&searches, 990)),
        searches_per_marker_p50: searches_per_marker
            .get(searches_per_marker.len().saturating_sub(1) / 2)
            .map_or(0, |&n| n as u64),
        peak_rss_bytes,
        shutdown_seconds,
        disk_bytes,
        disk_per_raw_byte: disk_bytes.map(|bytes| bytes as f64 / raw_bytes as f64),
        failed_items,
        counted,
        throttled: totals.throttled,
    })
}

/// Reads a whole record file (for `report`).
pub fn read_record(path: &std::path::Path) -> anyhow::Result<RunRecord> {
    let mut text = String::new();
    std::fs::File::open(path)
        .with_context(|| format!("opening {}", path.display()))?
        .read_to_string(&mut text)?;
    serde_json::from_str(&text).with_context(|| format!("reading {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_counts_as_numbers_or_strings() {
        for (text, want) in [
            (r#"{"count":12}"#, Some(12)),
            ("{\"count\":\"12\"}\n", Some(12)),
            (r#"{"count":"x"}"#, None),
        ] {
            let count = serde_json::from_str::<CountReply>(text)
                .ok()
                .map(|r| r.count);
            assert_eq!(count, want, "{text}");
        }
    }

    #[test]
    fn finds_the_listening_address() {
        let cases = [
            (
                "quarry listening on http://127.0.0.1:7380\n",
                Some("127.0.0.1:7380"),
            ),
            (
                "tantivy-ingest listening on http://127.0.0.1:40123/ (pid 7)",
                Some("127.0.0.1:40123"),
            ),
            ("listening on http://[::1]:9200", Some("[::1]:9200")),
            ("starting up", None),
            ("listening on http://localhost:80", None),
        ];
        for (line, want) in cases {
            assert_eq!(
                listening_address(line),
                want.map(|a| a.parse().unwrap()),
                "{line}"
            );
        }
    }
}
