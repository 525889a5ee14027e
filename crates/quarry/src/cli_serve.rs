//! `quarry serve`: the HTTP API (`quarry-server`) on a tokio runtime, until SIGINT or SIGTERM.

use crate::size::parse_size;
use crate::{DataArgs, StorageArgs};
use anyhow::{Context, Result};
use quarry_server::ServerConfig;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(clap::Args, Debug)]
pub struct ServeArgs {
    /// A TOML file with any of the settings below (`data = "..."`, `listen = "..."`); flags
    /// and QUARRY_* environment variables override it
    #[arg(long, env = "QUARRY_CONFIG", value_name = "FILE")]
    config: Option<PathBuf>,
    /// Data directory [default: ./quarry-data]
    #[arg(long, env = "QUARRY_DATA", value_name = "DIR")]
    data: Option<PathBuf>,
    #[command(flatten)]
    storage: StorageArgs,
    /// Address to listen on; port 0 picks a free port (the address is printed)
    /// [default: 127.0.0.1:7380]
    #[arg(long, env = "QUARRY_LISTEN", value_name = "ADDR")]
    listen: Option<SocketAddr>,
    /// Largest request body, as sent and decompressed (larger: 413) [default: 64MB]
    #[arg(long, env = "QUARRY_MAX_BODY_SIZE", value_name = "SIZE", value_parser = parse_size)]
    max_body_size: Option<usize>,
    /// Events in memory are written to a block file once they take this much
    /// [default: 64MB]
    #[arg(long, env = "QUARRY_FLUSH_SIZE", value_name = "SIZE", value_parser = parse_size)]
    flush_size: Option<usize>,
    /// ... or once the oldest of them is this many seconds old [default: 10]
    #[arg(long, env = "QUARRY_FLUSH_INTERVAL", value_name = "SECONDS")]
    flush_interval: Option<f64>,
    /// Memory for events not yet in block files; over it, ingest answers 429 until a flush
    /// makes room [default: 512MB]
    #[arg(long, env = "QUARRY_MEMORY_LIMIT", value_name = "SIZE", value_parser = parse_size)]
    memory_limit: Option<usize>,
    /// Memory for decoded column chunks kept across searches, so that fetching the events of
    /// a tail asked again (a refresh, the next page) decodes nothing; 0 keeps none
    /// [default: 128MB]
    #[arg(long, env = "QUARRY_CACHE_SIZE", value_name = "SIZE", value_parser = parse_size)]
    cache_size: Option<usize>,
    /// Turns on tenants and API keys: this token manages tenants (`POST /api/v1/tenants`)
    /// and reaches every tenant; every other request needs its tenant's key. Without it the
    /// server has one keyless tenant, `default`, and listens on loopback addresses only.
    /// Prefer the environment variable or the config file to a flag (a flag shows in `ps`)
    #[arg(
        long,
        env = "QUARRY_ADMIN_TOKEN",
        value_name = "TOKEN",
        hide_env_values = true
    )]
    admin_token: Option<String>,
    /// The leaf API's URL as other nodes reach it, registered in the metastore's membership
    /// table [default: http:// and the --leaf-listen address]
    #[arg(long, env = "QUARRY_LEAF_ADVERTISE", value_name = "URL")]
    leaf_advertise: Option<String>,
    /// Ingest this indexer takes per second, in a cluster over a postgres:// metastore: tenant
    /// traffic control routes each tenant's ingest so that no indexer gets more than 85% of
    /// it (any node forwards ingest to the indexers the routes name) [default: 16MB]
    #[arg(long, env = "QUARRY_INGEST_CAPACITY", value_name = "SIZE", value_parser = parse_size)]
    ingest_capacity: Option<usize>,
    /// Over a postgres:// metastore and s3:// storage: an indexer takes over the blocks of
    /// another that wrote a tenant and has been silent this many seconds (gone for good, or
    /// not serving the tenant any more), so that they are merged and expired with its own
    /// [default: 120]
    #[arg(long, env = "QUARRY_ADOPT_AFTER", value_name = "SECONDS")]
    adopt_after: Option<f64>,
    /// What this node does: `all` (ingest and search, one machine's node), `indexer` (the same,
    /// in a cluster: owns a WAL, publishes blocks), or `searcher` (searches what indexers
    /// published, refreshing every second; writes are refused; needs a postgres:// metastore
    /// and s3:// storage)
    #[arg(long, env = "QUARRY_ROLE", value_name = "ROLE", default_value = "all")]
    role: quarry_server::live::Role,
    /// Serve the leaf API of distributed searches (gRPC) on this address: a root
    /// (quarry-cluster's `Root`) searches this node's tenants as one leaf of many. Needs
    /// --cluster-token
    #[arg(long, env = "QUARRY_LEAF_LISTEN", value_name = "ADDR")]
    leaf_listen: Option<SocketAddr>,
    /// Answer native searches (`/api/v1/{tenant}/search`) over these nodes' leaf APIs, this
    /// node's own among them: `http://HOST:PORT` of each --leaf-listen, comma-separated. Every
    /// node searched as a leaf and the answers merged (hits, counts, histograms, field sorts,
    /// aggregations, the live tail, Elasticsearch's `_search`, `_msearch` and `_count`); the
    /// reads the leaf API does not carry yet (scrolls, points in time, top_hits, export,
    /// fields) are refused by name. `metastore` instead: the nodes the PostgreSQL
    /// metastore lists as alive (every node with --leaf-listen and a postgres:// metastore
    /// registers there and beats every second). Needs --cluster-token
    #[arg(
        long = "peers",
        env = "QUARRY_PEERS",
        value_name = "URL",
        value_delimiter = ','
    )]
    peers: Vec<String>,
    /// The secret every call of the leaf API must carry (it reads every tenant). Prefer the
    /// environment variable or the config file to a flag
    #[arg(
        long,
        env = "QUARRY_CLUSTER_TOKEN",
        value_name = "TOKEN",
        hide_env_values = true
    )]
    cluster_token: Option<String>,
    /// Memory for ingest requests under way, from reading to acknowledgement (about 8× their
    /// bodies); beyond it ingest answers 429 [default: 256MB]
    #[arg(long, env = "QUARRY_MAX_INFLIGHT", value_name = "SIZE", value_parser = parse_size)]
    max_inflight: Option<usize>,
    /// Serve HTTPS with this certificate chain (PEM); needs --tls-key
    #[arg(
        long,
        env = "QUARRY_TLS_CERT",
        value_name = "FILE",
        requires = "tls_key"
    )]
    tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM)
    #[arg(
        long,
        env = "QUARRY_TLS_KEY",
        value_name = "FILE",
        requires = "tls_cert"
    )]
    tls_key: Option<PathBuf>,
    /// Longest a request may take, body included, in seconds (408 beyond) [default: 120]
    #[arg(long, env = "QUARRY_REQUEST_TIMEOUT", value_name = "SECONDS")]
    request_timeout: Option<f64>,
    /// Seconds a new connection may wait before sending its first byte; then it is closed
    /// (connections that send nothing must not hold descriptors) [default: 5]
    #[arg(long, env = "QUARRY_FIRST_BYTE_TIMEOUT", value_name = "SECONDS")]
    first_byte_timeout: Option<f64>,
    /// Seconds a connection may stay idle between requests before it is closed
    /// [default: 60]
    #[arg(long, env = "QUARRY_KEEP_ALIVE_TIMEOUT", value_name = "SECONDS")]
    keep_alive_timeout: Option<f64>,
    /// Connections open at once; beyond, a new one is answered 503 and closed
    /// [default: 10000, fewer under a low open-file limit (ulimit -n): a quarter of it, at
    /// most 1024, is kept for block files and the WAL]
    #[arg(long, env = "QUARRY_MAX_CONNECTIONS", value_name = "N")]
    max_connections: Option<usize>,
    /// Searches run at once (each holds at most 10,000 hits); more wait up to 5 s for a turn,
    /// then answer 429, so searches' memory is bounded by this times one search's
    /// [default: 4 per core]
    #[arg(long, env = "QUARRY_MAX_SEARCHES", value_name = "N")]
    max_searches: Option<usize>,
    /// Without an admin token, requests are served only if their Host is a loopback name or
    /// address (localhost, 127.0.0.1, [::1]), so that a web page cannot reach the server
    /// through DNS rebinding; this serves another name too, on any port (repeatable; the
    /// environment variable takes a comma-separated list)
    #[arg(
        long = "allowed-host",
        env = "QUARRY_ALLOWED_HOSTS",
        value_name = "NAME",
        value_delimiter = ','
    )]
    allowed_hosts: Vec<String>,
}

/// The config file: every key optional, unknown keys refused (a typo must not be ignored).
#[derive(serde::Deserialize, Debug, Default)]
#[serde(deny_unknown_fields)]
struct ConfigFile {
    data: Option<PathBuf>,
    storage: Option<String>,
    metastore: Option<String>,
    cache_dir: Option<PathBuf>,
    disk_cache_size: Option<String>,
    listen: Option<SocketAddr>,
    max_body_size: Option<String>,
    flush_size: Option<String>,
    flush_interval: Option<f64>,
    memory_limit: Option<String>,
    cache_size: Option<String>,
    admin_token: Option<String>,
    max_inflight: Option<String>,
    tls_cert: Option<PathBuf>,
    tls_key: Option<PathBuf>,
    request_timeout: Option<f64>,
    first_byte_timeout: Option<f64>,
    keep_alive_timeout: Option<f64>,
    max_connections: Option<usize>,
    allowed_hosts: Option<Vec<String>>,
    max_searches: Option<usize>,
    leaf_listen: Option<SocketAddr>,
    cluster_token: Option<String>,
    peers: Option<Vec<String>>,
    role: Option<String>,
    leaf_advertise: Option<String>,
    ingest_capacity: Option<String>,
    adopt_after: Option<f64>,
}

/// The leaf API's address and token, if it is served (a token is required).
fn leaf_api(
    listen: Option<SocketAddr>,
    token: Option<String>,
) -> Result<Option<(SocketAddr, String)>> {
    match (listen, token) {
        (None, _) => Ok(None),
        (Some(_), None) => anyhow::bail!(
            "--leaf-listen serves every tenant's data: it needs --cluster-token (or \
             QUARRY_CLUSTER_TOKEN), the secret a root presents"
        ),
        (Some(_), Some(token)) if token.is_empty() => anyhow::bail!("the cluster token is empty"),
        (Some(addr), Some(token)) => Ok(Some((addr, token))),
    }
}

/// A positive number of seconds, `what` naming it in the error.
fn positive_seconds(what: &str, seconds: f64) -> Result<Duration> {
    anyhow::ensure!(
        seconds.is_finite() && seconds > 0.0,
        "{what} must be a positive number of seconds, not {seconds}"
    );
    Duration::try_from_secs_f64(seconds).with_context(|| format!("{what}: {seconds} seconds"))
}

/// Flags and environment variables, then the config file, then the defaults.
fn settings(args: ServeArgs) -> Result<ServerConfig> {
    let file = match &args.config {
        None => ConfigFile::default(),
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading config file {}", path.display()))?;
            toml::from_str(&text).with_context(|| format!("config file {}", path.display()))?
        }
    };
    let file_size = |key: &str, value: &Option<String>| -> Result<Option<usize>> {
        value
            .as_deref()
            .map(|text| parse_size(text).map_err(|e| anyhow::anyhow!("config file: {key}: {e}")))
            .transpose()
    };
    let data = args
        .data
        .or(file.data)
        .unwrap_or_else(|| PathBuf::from(DataArgs::DEFAULT_DIR));
    let listen = match args.listen.or(file.listen) {
        Some(listen) => listen,
        None => DEFAULT_LISTEN.parse().expect("the default address parses"),
    };
    let storage = crate::storage(
        args.storage.storage.or(file.storage).as_deref(),
        &data,
        args.storage.cache_dir.or(file.cache_dir).as_deref(),
        args.storage
            .disk_cache_size
            .or(file_size("disk_cache_size", &file.disk_cache_size)?),
        args.storage.object_latency,
        args.storage.object_bandwidth,
    )?;
    let cluster_token = args.cluster_token.or(file.cluster_token);
    let leaf = leaf_api(args.leaf_listen.or(file.leaf_listen), cluster_token.clone())?;
    let peers = match (args.peers, file.peers) {
        (flags, _) if !flags.is_empty() => flags,
        (_, Some(listed)) => listed,
        _ => Vec::new(),
    };
    let peers = match (peers.is_empty(), cluster_token) {
        (true, _) => None,
        (false, None) => anyhow::bail!(
            "--peers calls other nodes' leaf APIs: it needs --cluster-token (or \
             QUARRY_CLUSTER_TOKEN)"
        ),
        (false, Some(token)) if peers == ["metastore"] => {
            Some((quarry_server::Peers::Metastore, token))
        }
        (false, Some(token)) => Some((quarry_server::Peers::Listed(peers), token)),
    };
    let metastore = quarry_store::MetastoreConfig::connect(
        args.storage.metastore.or(file.metastore).as_deref(),
    )?;
    let mut config = ServerConfig::new(data, listen);
    config.ingest.storage = storage;
    config.ingest.metastore = metastore;
    config.leaf = leaf;
    config.peers = peers;
    config.leaf_advertise = args.leaf_advertise.or(file.leaf_advertise);
    if let Some(capacity) = args
        .ingest_capacity
        .or(file_size("ingest_capacity", &file.ingest_capacity)?)
    {
        config.ingest_capacity = capacity as u64;
    }
    if let Some(seconds) = args.adopt_after.or(file.adopt_after) {
        anyhow::ensure!(
            seconds.is_finite() && seconds >= 0.0,
            "--adopt-after must be a number of seconds, not {seconds}"
        );
        config.ingest.adopt_after = Duration::from_secs_f64(seconds);
    }
    config.ingest.role = match (args.role, file.role) {
        (quarry_server::live::Role::All, Some(role)) => role
            .parse()
            .map_err(|e: String| anyhow::anyhow!("role: {e}"))?,
        (role, _) => role,
    };
    if let Some(bytes) = args
        .max_body_size
        .or(file_size("max_body_size", &file.max_body_size)?)
    {
        config.max_body_bytes = bytes;
    }
    if let Some(bytes) = args
        .flush_size
        .or(file_size("flush_size", &file.flush_size)?)
    {
        config.ingest.flush_bytes = bytes;
        config.ingest.seal_bytes = config.ingest.seal_bytes.min(bytes);
    }
    if let Some(seconds) = args.flush_interval.or(file.flush_interval) {
        anyhow::ensure!(
            seconds.is_finite() && seconds > 0.0,
            "flush interval must be a positive number of seconds, not {seconds}"
        );
        config.ingest.flush_interval = Duration::from_secs_f64(seconds);
    }
    if let Some(bytes) = args
        .memory_limit
        .or(file_size("memory_limit", &file.memory_limit)?)
    {
        config.ingest.max_memory_bytes = bytes;
    }
    if let Some(bytes) = args
        .cache_size
        .or(file_size("cache_size", &file.cache_size)?)
    {
        config.ingest.chunk_cache_bytes = bytes as u64;
    }
    config.admin_token = args.admin_token.or(file.admin_token);
    if let Some(bytes) = args
        .max_inflight
        .or(file_size("max_inflight", &file.max_inflight)?)
    {
        config.max_inflight_bytes = bytes;
    }
    config.tls = match (
        args.tls_cert.or(file.tls_cert),
        args.tls_key.or(file.tls_key),
    ) {
        (Some(cert), Some(key)) => Some((cert, key)),
        (None, None) => None,
        _ => anyhow::bail!("TLS needs both a certificate (tls_cert) and its key (tls_key)"),
    };
    if let Some(seconds) = args.request_timeout.or(file.request_timeout) {
        anyhow::ensure!(
            seconds.is_finite() && seconds > 0.0,
            "request timeout must be a positive number of seconds, not {seconds}"
        );
        config.request_timeout = Duration::from_secs_f64(seconds);
    }
    if let Some(seconds) = args.first_byte_timeout.or(file.first_byte_timeout) {
        config.first_byte_timeout = positive_seconds("first-byte timeout", seconds)?;
    }
    if let Some(seconds) = args.keep_alive_timeout.or(file.keep_alive_timeout) {
        config.keep_alive_timeout = positive_seconds("keep-alive timeout", seconds)?;
    }
    if let Some(count) = args.max_connections.or(file.max_connections) {
        anyhow::ensure!(count > 0, "max connections must be at least 1");
        config.max_connections = Some(count);
    }
    if let Some(count) = args.max_searches.or(file.max_searches) {
        anyhow::ensure!(count > 0, "max searches must be at least 1");
        config.max_searches = Some(count);
    }
    config.allowed_hosts = if args.allowed_hosts.is_empty() {
        file.allowed_hosts.unwrap_or_default()
    } else {
        args.allowed_hosts
    };
    for host in &config.allowed_hosts {
        anyhow::ensure!(
            !host.trim().is_empty() && !host.contains(['/', ' ']),
            "allowed host {host:?} is not a host name"
        );
    }
    Ok(config)
}

/// Loopback by default; any other address needs an admin token (keys guard the API).
const DEFAULT_LISTEN: &str = "127.0.0.1:7380";

/// mimalloc's `mi_option_purge_delay` (mimalloc.h, v3: the 16th option).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// A server's memory is bounded by its configuration (`--memory-limit`, `--max-inflight`,
/// `--cache-size`) only if the allocator gives freed memory back soon: by default mimalloc
/// keeps freed pages in each thread's heap for a while, and with tokio's many blocking threads
/// the overload test saw 2–4× the configured memory resident (crates/quarry/tests/overload.rs).
/// Purging at once (a delay of 0) kept it in bounds but made every seal and merge fault its
/// buffers in again: a tenth of the ingest CPU was page faults and TLB shootdowns, and ingest
/// ran at 20–22 MB/s against 24–29 at 100 ms and 29–30 at 1 s (`bench/run-ingest.sh`, quarry
/// bulk, 2026-11-23). At 1 s the overload test's peak went 8% over its budget; at 100 ms it
/// stayed at 178 of 216 MB. Indexing (`quarry index`) keeps mimalloc's default.
/// `MIMALLOC_PURGE_DELAY` in the environment (milliseconds) still wins, for measuring.
const PURGE_DELAY_MS: std::ffi::c_long = 100;

fn purge_freed_memory_soon() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
        return;
    }
    // SAFETY: sets a process-wide option before the server starts its threads; mimalloc
    // reads options atomically.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, PURGE_DELAY_MS) };
}

pub fn serve(args: ServeArgs) -> Result<ExitCode> {
    purge_freed_memory_soon();
    // Logs on stderr, `info` and up unless RUST_LOG says otherwise (e.g. RUST_LOG=quarry=debug).
    // Colours only on a terminal: a log file gets plain text.
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let config = settings(args)?;
    let data = config.data.clone();

    let scheme = if config.tls.is_some() {
        "https"
    } else {
        "http"
    };
    runtime.block_on(async move {
        quarry_server::serve(
            config,
            |addr| {
                // Printed on stdout (and flushed) so scripts and tests can read the port.
                println!(
                    "quarry listening on {scheme}://{addr} (data: {})",
                    data.display()
                );
                use std::io::Write;
                let _ = std::io::stdout().flush();
            },
            shutdown_signal(),
        )
        .await
    })?;
    eprintln!("quarry stopped");
    Ok(ExitCode::SUCCESS)
}

/// Completes on SIGINT (Ctrl-C) or SIGTERM: the server stops accepting and finishes the
/// requests under way.
async fn shutdown_signal() {
    let interrupt = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => {},
        () = terminate => {},
    }
}
