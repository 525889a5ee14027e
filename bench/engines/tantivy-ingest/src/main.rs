//! `tantivy-ingest`: tantivy behind an Elasticsearch-like HTTP ingest API, the tantivy peer of
//! the ingest benchmark (`bench/run-ingest.sh`, bench/README.md "The ingest benchmark").
//!
//! ```sh
//! tantivy-ingest --index DIR [--listen 127.0.0.1:0] [--threads 2] [--heap 1GB]
//! ```
//!
//! - `POST /_bulk`: an Elasticsearch bulk body ([`bulk`]); replies once a commit holds the
//!   documents and the reader was reloaded ([`engine`]: group commit);
//! - `GET /search?q=marker:VALUE`: `{"count":N}`, the events with that marker;
//! - `GET /health`: `{"status":"ok"}`.
//!
//! Prints `tantivy-ingest listening on http://ADDR` on stdout once it accepts connections. On
//! SIGTERM or SIGINT it stops accepting, finishes the requests in flight, commits, waits for
//! merges and exits.

mod bulk;
mod engine;
mod schema;
mod server;

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{bail, Context};
use clap::Parser;

#[derive(Parser)]
#[command(about = "tantivy behind an Elasticsearch-like _bulk endpoint")]
struct Cli {
    /// Directory of the index (created if missing)
    #[arg(long)]
    index: PathBuf,
    /// Address to listen on; port 0 picks a free one (printed)
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// Indexing threads of the writer (tantivy's default is one per core)
    #[arg(long, default_value_t = default_threads())]
    threads: usize,
    /// Indexing memory of all indexing threads together, e.g. 1GB, 512MB
    #[arg(long, default_value = "1GB", value_parser = parse_bytes)]
    heap: usize,
}

fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    if cli.threads == 0 {
        bail!("--threads must be at least 1");
    }
    let engine = Arc::new(engine::Engine::open(
        &cli.index,
        &engine::EngineOptions {
            threads: cli.threads,
            heap_bytes_per_thread: cli.heap / cli.threads,
        },
    )?);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    runtime.block_on(server::serve(engine.clone(), cli.listen, |addr| {
        println!("tantivy-ingest listening on http://{addr}");
        let _ = std::io::stdout().flush();
    }))?;
    drop(runtime);
    engine.shut_down()?;
    let docs = engine.index().reader()?.searcher().num_docs();
    eprintln!("tantivy-ingest: shut down with {docs} documents");
    Ok(())
}

/// `1GB`, `512MB`, `300MiB`, `1000000` (bytes).
fn parse_bytes(text: &str) -> Result<usize, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: usize = number
        .parse()
        .map_err(|_| format!("not a size: {text:?}"))?;
    let multiplier = match unit.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 1,
        "KB" => 1_000,
        "KIB" => 1 << 10,
        "MB" => 1_000_000,
        "MIB" => 1 << 20,
        "GB" => 1_000_000_000,
        "GIB" => 1 << 30,
        _ => return Err(format!("unknown unit in {text:?}")),
    };
    number
        .checked_mul(multiplier)
        .ok_or_else(|| format!("too large: {text:?}"))
}
