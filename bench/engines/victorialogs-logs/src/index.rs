//! `victorialogs-logs index`: loads a JSON-lines event file into a fresh victoria-logs server
//! and reports how long it took and how big the data directory is, as bench/run-sizes.sh's
//! `index_victorialogs` does:
//!
//! 1. a server on the empty data directory ([`Server::start`]);
//! 2. the events in one chunked POST to `/insert/jsonline` with `_stream_fields=service,host`,
//!    `_msg_field=message`, `_time_field=_time` and `Content-Type: application/stream+json` (a
//!    body sent as a form is parsed as one and stores nothing);
//! 3. `/internal/force_flush`, then `* | stats count()`, which must count every event;
//! 4. `/internal/force_merge`, which merges in the background: its end is the log line
//!    `forced merge ... has been successfully finished`;
//! 5. a wait until the directory's size has not changed for 3 s (background flushes and merges),
//!    SIGINT, and the index bytes, the sum of the regular files under the directory, measured
//!    after the server exited.
//!
//! `seconds` is steps 2 and 4 (the POST until VictoriaLogs answered it, the flush, and the
//! forced merge until its log line, polled every 20 ms), not the count of step 3 nor the waits
//! of step 5. The server runs with its defaults: its ingestion and merges use every core
//! (GOMAXPROCS), where the other engines index on one thread.

use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use logs_driver::http::Connection;
use logs_driver::input;
use serde::Serialize;

use crate::logsql::INSERT_PARAMS;
use crate::server::Server;

const MERGE_TIMEOUT: Duration = Duration::from_secs(3600);
/// Size samples a second apart that must agree before the server is stopped, and the longest
/// wait for them.
const STABLE_SAMPLES: usize = 3;
const SETTLE_TIMEOUT: Duration = Duration::from_secs(120);

/// The line printed on stdout; `logs-driver report` reads `engine`, `events`, `seconds` and
/// `index_bytes`.
#[derive(Debug, Serialize)]
pub struct IndexSummary {
    pub engine: &'static str,
    pub events: u64,
    pub seconds: f64,
    pub events_per_s: f64,
    /// The POST of the events and the flush.
    pub load_seconds: f64,
    /// The forced merge.
    pub merge_seconds: f64,
    pub input_bytes: u64,
    pub index_bytes: u64,
}

/// Counts the bytes and lines read through it (a last line without a line break counts too).
struct Counting<R> {
    inner: R,
    bytes: u64,
    newlines: u64,
    ends_with_newline: bool,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let read = self.inner.read(buf)?;
        if read > 0 {
            self.bytes += read as u64;
            self.newlines += buf[..read].iter().filter(|&&b| b == b'\n').count() as u64;
            self.ends_with_newline = buf[read - 1] == b'\n';
        }
        Ok(read)
    }
}

impl<R> Counting<R> {
    fn lines(&self) -> u64 {
        self.newlines + u64::from(self.bytes > 0 && !self.ends_with_newline)
    }
}

pub fn run(bin: &Path, data: &Path, input_path: &Path) -> anyhow::Result<IndexSummary> {
    if data.exists() && fs::read_dir(data)?.next().is_some() {
        bail!("{} is not empty", data.display());
    }
    fs::create_dir_all(data).with_context(|| format!("creating {}", data.display()))?;
    let server = Server::start(bin, data, true)?;
    let mut connection = Connection::new(server.addr);

    let mut body = Counting {
        inner: input::open(input_path)?,
        bytes: 0,
        newlines: 0,
        ends_with_newline: false,
    };
    let started = Instant::now();
    let response = connection
        .post_chunked(
            &format!("/insert/jsonline?{INSERT_PARAMS}"),
            "application/stream+json",
            &mut body,
        )
        .context("POST /insert/jsonline")?;
    check(&response, "/insert/jsonline")?;
    let response = connection.get("/internal/force_flush")?;
    check(&response, "/internal/force_flush")?;
    let load_seconds = started.elapsed().as_secs_f64();

    let events = body.lines();
    let response = connection.post(
        "/select/logsql/query",
        "application/x-www-form-urlencoded",
        b"query=%2A%20%7C%20stats%20count%28%29%20n",
    )?;
    check(&response, "/select/logsql/query")?;
    let counted: serde_json::Value = serde_json::from_slice(&response.body)?;
    let counted = counted["n"].as_str().unwrap_or("none").to_owned();
    if counted != events.to_string() {
        bail!(
            "victoria-logs counts {counted} rows for {events} events sent (log: {})",
            server.log.as_deref().unwrap_or(Path::new("-")).display()
        );
    }

    let merge_started = Instant::now();
    let response = connection.get("/internal/force_merge")?;
    check(&response, "/internal/force_merge")?;
    // The merge runs in the background; its end is a log line.
    loop {
        let log = server.log_text()?;
        if log.lines().any(|line| {
            line.contains("forced merge") && line.contains("has been successfully finished")
        }) {
            break;
        }
        if merge_started.elapsed() > MERGE_TIMEOUT {
            bail!("the forced merge did not end within {MERGE_TIMEOUT:?}");
        }
        thread::sleep(Duration::from_millis(20));
    }
    let merge_seconds = merge_started.elapsed().as_secs_f64();
    let seconds = load_seconds + merge_seconds;

    wait_until_settled(data)?;
    server.stop()?;
    Ok(IndexSummary {
        engine: "victorialogs",
        events,
        seconds,
        events_per_s: events as f64 / seconds,
        load_seconds,
        merge_seconds,
        input_bytes: body.bytes,
        index_bytes: directory_bytes(data)?,
    })
}

fn check(response: &logs_driver::http::Response, what: &str) -> anyhow::Result<()> {
    if !(200..300).contains(&response.status) {
        bail!(
            "{what}: HTTP {}: {}",
            response.status,
            String::from_utf8_lossy(&response.body).trim()
        );
    }
    Ok(())
}

/// Waits until [`STABLE_SAMPLES`] sizes of `dir` a second apart agree.
fn wait_until_settled(dir: &Path) -> anyhow::Result<()> {
    let started = Instant::now();
    let mut previous = None;
    let mut stable = 0;
    while stable < STABLE_SAMPLES {
        if started.elapsed() > SETTLE_TIMEOUT {
            bail!(
                "the size of {} did not settle within {SETTLE_TIMEOUT:?}",
                dir.display()
            );
        }
        thread::sleep(Duration::from_secs(1));
        // Files come and go while VictoriaLogs merges: a vanished one is a changed size.
        let size = directory_bytes(dir).ok();
        if size.is_some() && size == previous {
            stable += 1;
        } else {
            stable = 0;
        }
        previous = size;
    }
    Ok(())
}

/// The sum of the sizes of the regular files under `dir` (symbolic links not followed).
pub fn directory_bytes(dir: &Path) -> anyhow::Result<u64> {
    let mut total = 0;
    let mut pending: Vec<PathBuf> = vec![dir.to_owned()];
    while let Some(dir) = pending.pop() {
        for entry in fs::read_dir(&dir).with_context(|| format!("listing {}", dir.display()))? {
            let entry = entry?;
            let kind = entry.file_type()?;
            if kind.is_dir() {
                pending.push(entry.path());
            } else if kind.is_file() {
                total += entry.metadata()?.len();
            }
        }
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_lines_and_bytes() {
        for (text, lines) in [("", 0), ("a\n", 1), ("a\nb", 2), ("a\nb\n", 2)] {
            let mut counting = Counting {
                inner: text.as_bytes(),
                bytes: 0,
                newlines: 0,
                ends_with_newline: false,
            };
            io::copy(&mut counting, &mut io::sink()).unwrap();
            assert_eq!(
                (counting.lines(), counting.bytes),
                (lines, text.len() as u64),
                "{text:?}"
            );
        }
    }
}
