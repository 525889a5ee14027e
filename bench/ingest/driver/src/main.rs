//! `ingest-driver`: the ingest benchmark's driver (`bench/run-ingest.sh`, bench/README.md "The
//! ingest benchmark").
//!
//! - `run` starts an engine (an HTTP server), pushes an event file to it from concurrent
//!   clients, times acks and time-to-searchable, and writes one record ([`run`]);
//! - `disk` measures the file system's fsync rate and sequential write speed ([`disk`]);
//! - `report` prints the side-by-side table of run records and writes the metric list
//!   ([`report`]).

mod disk;
mod events;
mod process;
mod report;
mod run;
mod stats;

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(about = "Ingest benchmark driver: events over HTTP, acks, time to searchable")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Start an engine, push the events, write the run's record (exit status 4: the engine
    /// answered 404 on the ingest or search endpoint)
    Run {
        /// JSON-lines events (plain or zstd), e.g. from `quarry gen-logs`
        #[arg(long)]
        events: PathBuf,
        /// Name of the engine in the record
        #[arg(long)]
        engine: String,
        #[arg(long, value_enum, default_value = "bulk")]
        format: events::Format,
        /// Path of the ingest endpoint
        #[arg(long, default_value = "/_bulk")]
        ingest_path: String,
        /// Search request target; `{marker}` is replaced by the marker (mN)
        #[arg(long, default_value = "/search?q=marker:{marker}")]
        search_path: String,
        /// Wait for this path to answer 200 after the listening line
        #[arg(long)]
        ready_path: Option<String>,
        /// After the timed span, count the events stored with this request target (answer
        /// `{"count":N}`) until every event and marker sent is there, up to
        /// --marker-timeout-s; those still missing are failed items
        #[arg(long)]
        count_path: Option<String>,
        /// Concurrent clients, one connection each
        #[arg(long, default_value_t = 8)]
        clients: usize,
        /// Events per request
        #[arg(long, default_value_t = 1000)]
        batch: usize,
        /// Use only the first N events
        #[arg(long)]
        limit: Option<u64>,
        /// A marker event every this many milliseconds
        #[arg(long, default_value_t = 200)]
        marker_interval_ms: u64,
        /// Searches for a marker every this many milliseconds until found
        #[arg(long, default_value_t = 2)]
        poll_ms: u64,
        /// A marker not found this long after its send counts as not found
        #[arg(long, default_value_t = 30)]
        marker_timeout_s: u64,
        /// How long the engine may take to print its listening line
        #[arg(long, default_value_t = 120)]
        start_timeout_s: u64,
        /// How long the engine may take to exit after SIGTERM
        #[arg(long, default_value_t = 600)]
        shutdown_timeout_s: u64,
        /// The engine's data directory, measured after it exits
        #[arg(long)]
        data: Option<PathBuf>,
        /// Write the record here (it is printed on stdout too)
        #[arg(long)]
        json: Option<PathBuf>,
        /// The engine command, which must print `... listening on http://ADDR` on stdout
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
    /// Measure fsync/s (append 4 KiB + fdatasync) and sequential write MB/s in a directory
    Disk {
        #[arg(long)]
        dir: PathBuf,
        #[arg(long, default_value_t = 3.0)]
        fsync_seconds: f64,
        /// Bytes of the sequential write
        #[arg(long, default_value_t = 1 << 30)]
        write_bytes: u64,
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// Print the table of run records and write the metric list
    Report {
        #[arg(long, default_value = "quarry")]
        subject: String,
        /// Comma-separated or repeated
        #[arg(long, value_delimiter = ',', default_value = "lucene,tantivy")]
        baseline: Vec<String>,
        /// A `disk` record: adds the machine's limits
        #[arg(long)]
        disk: Option<PathBuf>,
        /// The metric list to write
        #[arg(long)]
        out: Option<PathBuf>,
        records: Vec<PathBuf>,
    },
}

fn write_json(path: Option<&PathBuf>, text: &str) -> anyhow::Result<()> {
    if let Some(path) = path {
        std::fs::write(path, format!("{text}\n"))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    println!("{text}");
    Ok(())
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Run {
            events,
            engine,
            format,
            ingest_path,
            search_path,
            ready_path,
            count_path,
            clients,
            batch,
            limit,
            marker_interval_ms,
            poll_ms,
            marker_timeout_s,
            start_timeout_s,
            shutdown_timeout_s,
            data,
            json,
            command,
        } => {
            let options = run::RunOptions {
                events,
                engine,
                format,
                ingest_path,
                search_path,
                ready_path,
                count_path,
                clients,
                batch,
                limit,
                marker_interval: Duration::from_millis(marker_interval_ms.max(1)),
                poll_interval: Duration::from_millis(poll_ms),
                marker_timeout: Duration::from_secs(marker_timeout_s),
                start_timeout: Duration::from_secs(start_timeout_s),
                shutdown_timeout: Duration::from_secs(shutdown_timeout_s),
                data,
                command,
            };
            match run::run(&options) {
                Ok(record) => write_json(json.as_ref(), &serde_json::to_string(&record)?)?,
                Err(error) => {
                    eprintln!("ingest-driver: {}: {error:#}", options.engine);
                    let missing = error.downcast_ref::<run::NoEndpoint>().is_some();
                    std::process::exit(if missing { run::EXIT_NO_ENDPOINT } else { 1 });
                }
            }
        }
        Command::Disk {
            dir,
            fsync_seconds,
            write_bytes,
            json,
        } => {
            let record = disk::measure(&dir, Duration::from_secs_f64(fsync_seconds), write_bytes)?;
            write_json(json.as_ref(), &serde_json::to_string(&record)?)?;
        }
        Command::Report {
            subject,
            baseline,
            disk,
            out,
            records,
        } => {
            let records = records
                .iter()
                .map(|path| run::read_record(path))
                .collect::<anyhow::Result<Vec<_>>>()?;
            let disk = match disk {
                Some(path) => {
                    let text = std::fs::read_to_string(&path)
                        .with_context(|| format!("reading {}", path.display()))?;
                    Some(serde_json::from_str::<disk::DiskRecord>(&text)?)
                }
                None => None,
            };
            let (table, metrics) = report::build(&records, disk.as_ref(), &subject, &baseline);
            print!("{table}");
            if let Some(out) = out {
                std::fs::write(&out, serde_json::to_string_pretty(&metrics)? + "\n")
                    .with_context(|| format!("writing {}", out.display()))?;
            }
        }
    }
    Ok(())
}
