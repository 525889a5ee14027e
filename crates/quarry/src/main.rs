//! `quarry`: the one binary. Subcommands index files into a data directory, search it, merge
//! its blocks, check it, and answer benchmark queries over a pipe; `serve` answers HTTP, and
//! `tenants`, `ingest` and `search --server` are its clients.

mod bench_logs;
mod cli_client;
mod cli_gen;
mod cli_index;
mod cli_search;
mod cli_serve;
mod cli_simulate;
mod cli_sizes;
mod size;

use clap::{Parser, Subcommand};

/// mimalloc instead of the system allocator: indexing allocates and frees many chunk, string
/// and postings buffers, and glibc's malloc returned that memory to the kernel and faulted it
/// back in, zeroed, over and over (12% of single-thread indexing time in `clear_page_erms`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

#[derive(Parser)]
#[command(
    name = "quarry",
    version,
    about = "Quarry: a log and full-text search database"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the HTTP API over a data directory: ingest (NDJSON, text, `_bulk`) and search
    ///
    /// `POST /api/v1/default/ingest` (NDJSON, or text/plain lines), `POST /_bulk`
    /// (Elasticsearch's bulk API),
    /// `GET|POST /api/v1/default/search?query=...&sort=time_desc&limit=100&count=true`
    /// (also `histogram=auto`, `aggs=terms(host,10)`), `GET /api/v1/default/fields`,
    /// `/health/live`, `/health/ready`, `/api/v1/openapi.json`. An acknowledged event is
    /// durable (WAL) and searchable at once. While it runs, the server holds the data
    /// directory: `quarry index` refuses it.
    Serve(cli_serve::ServeArgs),
    /// Send files to a server (`quarry serve`): NDJSON, or text lines with --text; `.gz` and
    /// `.zst` are decompressed, `-` is stdin.
    ///
    /// Lines go in batches to `POST /api/v1/{tenant}/ingest`; a batch answered 429 or 503 is
    /// sent again after the server's Retry-After (10 times at most). Lines the server
    /// rejects are reported as `file:line: reason`; the exit status is 3 when any was.
    Ingest(cli_client::IngestArgs),
    /// Manage a server's tenants and their API keys (needs the server's admin token).
    Tenants(cli_client::TenantsArgs),
    /// Index JSON-lines files (plain, .gz, .zst; `-` for stdin) into a data directory.
    ///
    /// Re-running on the same files adds nothing; an interrupted run resumes where it stopped.
    /// Malformed lines are reported as `file:line: reason` and skipped; the exit status is 3
    /// when any line was skipped.
    Index(cli_index::IndexArgs),
    /// Merge the blocks of a data directory into fewer, larger ones (n-way, by `_time`).
    Merge(cli_index::MergeArgs),
    /// Search a data directory, or a server with --server; prints one JSON line per hit.
    ///
    /// Query syntax (Lucene-like): `error AND service:api -status:200 "connection reset"
    /// level:(warn OR error) +must -must_not host:="exact value"`. Bare words search every
    /// text field. A bad query is reported with its position (exit status 2).
    Search(cli_search::SearchArgs),
    /// Verify every block of a data directory (checksums, decoding of every part); lists
    /// every damaged block, and `--repair` moves them aside.
    Check(cli_search::CheckArgs),
    /// Answer `COMMAND<TAB>query` lines on stdin, one line each (search-benchmark-game protocol).
    BenchServe(cli_search::BenchServeArgs),
    /// Write generated JSON-lines log events (Loghub templates) for benchmarks and tests;
    /// deterministic for a seed.
    GenLogs(cli_gen::GenLogsArgs),
    /// Simulate tenant traffic control: hashing against max-flow routing of Zipf-skewed tenants
    /// over indexers (LogStore §4.1, §6.2); prints load balance and route rules per skew.
    SimulateRouting(cli_simulate::SimulateRoutingArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Serve(args) => cli_serve::serve(args),
        Command::Ingest(args) => cli_client::ingest(args),
        Command::Tenants(args) => cli_client::tenants(args),
        Command::Index(args) => cli_index::index(args),
        Command::Merge(args) => cli_index::merge(args),
        Command::Search(args) => cli_search::search(args),
        Command::Check(args) => cli_search::check(args),
        Command::BenchServe(args) => cli_search::bench_serve(args),
        Command::GenLogs(args) => cli_gen::gen_logs(args),
        Command::SimulateRouting(args) => cli_simulate::simulate_routing(args),
    };
    match result {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {}", error_chain(&error));
            ExitCode::from(1)
        }
    }
}

/// An error and its causes, joined by ": ", leaving out a cause whose text the message already
/// holds (our errors print their source, and anyhow's chain would print it again).
fn error_chain(error: &anyhow::Error) -> String {
    let mut message = String::new();
    for cause in error.chain() {
        let text = cause.to_string();
        if message.contains(&text) {
            continue;
        }
        if !message.is_empty() {
            message.push_str(": ");
        }
        message.push_str(&text);
    }
    message
}

/// `--data DIR`, shared by every subcommand.
#[derive(clap::Args, Debug, Clone)]
pub struct DataArgs {
    /// Data directory: `index` creates it if missing, the other commands read it
    #[arg(
        long,
        value_name = "DIR",
        env = "QUARRY_DATA",
        default_value = "quarry-data"
    )]
    pub data: PathBuf,
}

impl DataArgs {
    pub const DEFAULT_DIR: &'static str = "quarry-data";
}

/// `--storage` and `--cache-dir`, for the commands that read blocks of a data directory
/// whose server keeps them in object storage.
#[derive(clap::Args, Debug, Clone)]
pub struct StorageArgs {
    /// Where block files are: `local` (the data directory) or `s3://BUCKET/PREFIX` on any
    /// S3-compatible store, configured by the usual AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID,
    /// AWS_SECRET_ACCESS_KEY and AWS_REGION. The WAL, the catalog and the tenants stay in
    /// --data either way [default: local]
    #[arg(long, env = "QUARRY_STORAGE", value_name = "URL")]
    pub storage: Option<String>,
    /// Local copies of what is read from object storage, kept across restarts
    /// [default: DATA/cache]
    #[arg(long, env = "QUARRY_CACHE_DIR", value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// The most the copies in --cache-dir may hold (least recently used go first; an open
    /// block keeps the sections it holds in memory), e.g. 50GiB [default: 10GiB]
    #[arg(long, env = "QUARRY_DISK_CACHE_SIZE", value_name = "BYTES", value_parser = size::parse_size)]
    pub disk_cache_size: Option<usize>,
    /// For benchmarks: each object-storage read waits this many milliseconds before its
    /// first byte and 10 ns per byte after (100 MB/s), as from a cloud store
    #[arg(long, value_name = "MS")]
    pub object_latency: Option<u64>,
    /// For benchmarks: every object-storage read of this node shares one link of this many
    /// bytes per second, as through one network interface (e.g. 50MB)
    #[arg(long, value_name = "SIZE", value_parser = size::parse_size)]
    pub object_bandwidth: Option<usize>,
    /// Where the catalogs (which blocks each tenant has) and the tenant registry are:
    /// `local` (catalog.json and tenants.json in --data) or a PostgreSQL database several
    /// nodes share, `postgres://USER[:PASSWORD]@HOST:PORT/DATABASE` (its schema is created
    /// on first use) [default: local]
    #[arg(
        long,
        env = "QUARRY_METASTORE",
        value_name = "URL",
        hide_env_values = true
    )]
    pub metastore: Option<String>,
}

impl StorageArgs {
    /// The metastore --metastore names, connected to.
    pub fn metastore(&self) -> anyhow::Result<quarry_store::MetastoreConfig> {
        quarry_store::MetastoreConfig::connect(self.metastore.as_deref()).map_err(Into::into)
    }

    /// Refuses a metastore other than the data directory's, for commands that write a local
    /// catalog (`what` names the command).
    pub fn require_local_metastore(&self, what: &str) -> anyhow::Result<()> {
        anyhow::ensure!(
            self.metastore.as_deref().is_none_or(|url| url == "local"),
            "{what} writes the data directory's own catalog; with a PostgreSQL metastore, send \
             events to `quarry serve --metastore ...` over HTTP instead"
        );
        Ok(())
    }

    /// The default tenant's block store for the data directory `data`.
    pub fn store(
        &self,
        data: &std::path::Path,
    ) -> anyhow::Result<Arc<dyn quarry_store::BlockStore>> {
        let storage = storage(
            self.storage.as_deref(),
            data,
            self.cache_dir.as_deref(),
            self.disk_cache_size,
            self.object_latency,
            self.object_bandwidth,
        )?;
        Ok(storage.tenant_store(data, "default"))
    }
}

/// The storage `url` names (`local` or `s3://BUCKET/PREFIX`; none: local), with its cache in
/// `cache_dir` (default `DATA/cache`) of at most `cache_bytes` (default 10 GiB).
pub fn storage(
    url: Option<&str>,
    data: &std::path::Path,
    cache_dir: Option<&std::path::Path>,
    cache_bytes: Option<usize>,
    latency_ms: Option<u64>,
    bandwidth: Option<usize>,
) -> anyhow::Result<quarry_store::Storage> {
    match url {
        None | Some("local") => Ok(quarry_store::Storage::Local),
        Some(url) if url.starts_with("s3://") => {
            let cache = cache_dir.map_or_else(|| data.join("cache"), |dir| dir.to_path_buf());
            let mut storage =
                quarry_store::ObjectStorage::s3(url, &cache).map_err(anyhow::Error::msg)?;
            if let Some(bytes) = cache_bytes {
                storage = storage.with_cache_budget(bytes as u64);
            }
            if let Some(ms) = latency_ms {
                storage = storage.with_latency(std::time::Duration::from_millis(ms));
            }
            if let Some(bytes_per_second) = bandwidth {
                storage = storage.with_bandwidth(bytes_per_second as u64);
            }
            storage.check().map_err(|e| {
                anyhow::anyhow!(
                    "{e}\n(the store is configured by AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, \
                     AWS_SECRET_ACCESS_KEY and AWS_REGION)"
                )
            })?;
            Ok(quarry_store::Storage::Object(storage))
        }
        Some(other) => anyhow::bail!("storage {other:?}: expected local or s3://BUCKET/PREFIX"),
    }
}
