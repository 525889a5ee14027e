//! `quarry serve`: Quarry's HTTP API over a data directory.
//!
//! Ingest (`POST /api/v1/{tenant}/ingest`, the Elasticsearch bulk API) goes through the write
//! path in [`live`]: WAL with group commit, searchable at once, flushed to block files and
//! merged in the background. Searches (`GET|POST /api/v1/{tenant}/search`,
//! `GET /api/v1/{tenant}/fields`) answer from an immutable snapshot (`quarry_query::Searcher`)
//! of block files and memory blocks: a request takes the current one (an `Arc`) and holds it
//! to the end, so a flush or merge never pulls a block from under it. The search itself is
//! the CLI's: `Searcher::execute` on a `SearchRequest`, printed as JSON. Paths carry the
//! tenant ([`tenants`], [`admin`]): without an admin token the server has one keyless tenant,
//! `default`, and listens on loopback only; with one, tenants are created through
//! `/api/v1/tenants` and every request carries its tenant's key. The web UI ([`ui`], built
//! from `ui/` and embedded) answers `GET /` for browsers.
//!
//! The server holds the data directory's lock: `quarry index` refuses to write it meanwhile,
//! and `quarry search` reads what is in block files.

mod admin;
mod documents;
mod es_aggs;
mod es_aliases;
mod es_api;
mod es_composite;
mod es_docs;
mod es_field_caps;
mod es_filter_path;
mod es_hits;
mod es_indices;
mod es_number_format;
mod es_scroll;
mod es_search;
mod es_suggest;
mod export;
mod guard;
mod idempotency;
mod ingest;
pub mod listener;
pub mod live;
mod mapping;
mod metrics;
mod tail;
pub mod tenants;
pub mod traffic;
mod ui;
pub mod wal_writer;

use admin::Tenant;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path as UrlPath, RawQuery, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use axum::{Json, Router};
use live::{IngestConfig, LiveIndex};
use quarry_index::event::format_time;
use quarry_query::aggregation::AggSpec;
use quarry_query::cursor::Cursor;
use quarry_query::field_sort::{SortCursor, SortSpec, SortValue};
use quarry_query::time::{now_nanos, parse_interval, parse_time};
use quarry_query::{
    value_to_json, HistogramInterval, QueryError, SearchRequest, SearchResponse, SortOrder, Warning,
};
use serde_json::{json, Value as JsonValue};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};
use tenants::{TenantRegistry, TenantSpec};

pub use es_aggs::{AGG_OPTIONS, PIPELINE_OPTIONS};
pub use es_api::{API_PARAMS, NO_OP_PARAMS};
pub use es_docs::{MGET_BODY_KEYS, MGET_DOC_KEYS, UPDATE_BODY_KEYS};
pub use es_hits::{HIGHLIGHT_FIELD_OPTIONS, HIGHLIGHT_OPTIONS};
pub use es_indices::{CREATE_INDEX_KEYS, INDEX_SETTINGS};
pub use es_search::{
    COUNT_BODY_KEYS, COUNT_PARAMS, MSEARCH_HEADER_KEYS, MSEARCH_PARAMS, SEARCH_BODY_OPTIONS,
    SEARCH_PARAMS, SORT_OPTIONS,
};
pub use es_suggest::SUGGEST_OPTIONS;
pub use ingest::BULK_ACTION_KEYS;
pub use tenants::DEFAULT_TENANT;

/// The nodes a root searches over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Peers {
    /// These leaf APIs (`http://host:port`, this node's own among them).
    Listed(Vec<String>),
    /// The members the PostgreSQL metastore lists as alive (`--peers metastore`).
    Metastore,
}

/// How often a node beats in the membership table, and how old a beat may be for a root to
/// count the node in.
const MEMBER_BEAT: Duration = Duration::from_secs(1);
const MEMBER_ALIVE: Duration = Duration::from_secs(5);
/// Beats between two routing plans (traffic.rs).
const PLAN_EVERY: u64 = traffic::PLAN_PERIOD.as_secs() / MEMBER_BEAT.as_secs();

#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// The data directory (created if missing).
    pub data: PathBuf,
    pub listen: SocketAddr,
    /// Largest request body, as sent and decompressed (413 beyond).
    pub max_body_bytes: usize,
    pub ingest: IngestConfig,
    /// With an admin token, tenants are managed through `/api/v1/tenants` and requests need
    /// keys; without, one keyless tenant `default`, on loopback only.
    pub admin_token: Option<String>,
    /// Memory for ingest requests under way (their bodies read, parsed, waiting for their
    /// acknowledgement: about 8× the body, see ingest.rs); beyond it ingest answers 429. With `ingest.max_memory_bytes` (events not yet in block
    /// files) and the chunk cache, what bounds the server's memory under any load.
    pub max_inflight_bytes: usize,
    /// HTTPS with this certificate chain and private key (PEM files).
    pub tls: Option<(PathBuf, PathBuf)>,
    /// Longest a request may take, its body included (408 beyond): a body trickled a byte at
    /// a time does not hold a connection longer.
    pub request_timeout: Duration,
    /// A connection that sends nothing this long after accept is closed.
    pub first_byte_timeout: Duration,
    /// A connection idle this long between requests is closed.
    pub keep_alive_timeout: Duration,
    /// Connections open at once (503 beyond); `None`: `listener::max_connections_for` the
    /// open-file limit.
    pub max_connections: Option<usize>,
    /// Without an admin token, the `Host` names served besides loopback ones (guard.rs).
    pub allowed_hosts: Vec<String>,
    /// Searches run at once (each holds at most `MAX_SEARCH_LIMIT` events and its aggregation
    /// states); more wait up to `SEARCH_QUEUE_WAIT`, then answer 429. `None`: 4 per core.
    pub max_searches: Option<usize>,
    /// Serve the leaf API of distributed searches (quarry-cluster, gRPC) on this address,
    /// to callers presenting this cluster token.
    pub leaf: Option<(SocketAddr, String)>,
    /// Answer native searches over these nodes' leaf APIs, with this cluster token: scatter,
    /// gather, merge (quarry-cluster).
    pub peers: Option<(Peers, String)>,
    /// The leaf API's URL as other nodes reach it, registered in the metastore's membership
    /// table (default: `http://` and the --leaf-listen address).
    pub leaf_advertise: Option<String>,
    /// Ingest bytes/s this node takes as an indexer, what tenant traffic control plans with
    /// (traffic.rs).
    pub ingest_capacity: u64,
}

impl ServerConfig {
    pub const DEFAULT_MAX_BODY_BYTES: usize = 64 << 20;
    pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(120);
    pub const DEFAULT_MAX_INFLIGHT_BYTES: usize = 256 << 20;

    pub fn new(data: PathBuf, listen: SocketAddr) -> ServerConfig {
        ServerConfig {
            data,
            listen,
            max_body_bytes: Self::DEFAULT_MAX_BODY_BYTES,
            ingest: IngestConfig::default(),
            admin_token: None,
            max_inflight_bytes: Self::DEFAULT_MAX_INFLIGHT_BYTES,
            tls: None,
            request_timeout: Self::DEFAULT_REQUEST_TIMEOUT,
            first_byte_timeout: listener::ConnectionLimits::DEFAULT_FIRST_BYTE_TIMEOUT,
            keep_alive_timeout: listener::ConnectionLimits::DEFAULT_KEEP_ALIVE_TIMEOUT,
            max_connections: None,
            allowed_hosts: Vec::new(),
            max_searches: None,
            leaf: None,
            peers: None,
            leaf_advertise: None,
            ingest_capacity: traffic::DEFAULT_CAPACITY,
        }
    }
}

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServerError {
    #[error("--peers: {0}")]
    Cluster(quarry_cluster::ClusterError),
    #[error("listening on {addr}: {source}")]
    Listen {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("serving: {0}")]
    Serve(#[source] std::io::Error),
    #[error("opening the data directory: {0}")]
    Catalog(#[from] quarry_store::CatalogError),
    #[error("recovering from the write-ahead log: {0}")]
    Recover(#[source] live::LiveError),
    #[error("final flush: {0}")]
    Flush(#[source] live::LiveError),
    #[error("the tenant registry: {0}")]
    Registry(#[source] std::io::Error),
    #[error("refusing to listen on {addr} without an admin token: anyone who can reach it could read and write every event. Pass --admin-token (or QUARRY_ADMIN_TOKEN), or listen on a loopback address")]
    Insecure { addr: SocketAddr },
    #[error("the admin token is empty")]
    EmptyAdminToken,
    #[error("{0}")]
    Tls(String),
    #[error("{0}")]
    Role(&'static str),
}

/// Serves until `shutdown` completes, then stops accepting, finishes the requests under way,
/// flushes memory to block files and syncs the WAL. `on_listening` is told the bound address
/// (the port, when the config asked for port 0).
pub async fn serve(
    config: ServerConfig,
    on_listening: impl FnOnce(SocketAddr),
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), ServerError> {
    let admin = match config.admin_token.as_deref() {
        Some("") => return Err(ServerError::EmptyAdminToken),
        Some(token) => Some(tenants::secret_hash(token)),
        None if !config.listen.ip().is_loopback() => {
            return Err(ServerError::Insecure {
                addr: config.listen,
            })
        }
        None => None,
    };
    let tls = match &config.tls {
        Some((cert, key)) => Some(listener::tls_acceptor(cert, key).map_err(ServerError::Tls)?),
        None => None,
    };
    let searcher = config.ingest.role == live::Role::Searcher;
    if searcher && config.ingest.metastore.is_local() {
        return Err(ServerError::Role(
            "--role searcher: a searcher follows the catalogs indexers write in a shared metastore: give --metastore postgres://...",
        ));
    }
    if searcher && config.ingest.storage.is_local() {
        return Err(ServerError::Role(
            "--role searcher: a searcher reads the blocks indexers publish in object storage: give --storage s3://...",
        ));
    }
    // The default tenant's catalog is the data directory's own: opening it creates the
    // directory and takes its lock before anything else is read.
    let default_spec = TenantSpec {
        name: DEFAULT_TENANT.to_owned(),
        key_sha256: None,
        retention_seconds: None,
        quotas: Default::default(),
        created: String::new(),
        search_limits: Default::default(),
        aliases: Default::default(),
        closed: false,
    };
    tracing::info!(
        data = %config.data.display(),
        blocks = %config.ingest.storage.describe(),
        metastore = %config.ingest.metastore.describe(),
        "opening"
    );
    let default = Tenant::open(&config.data, default_spec, &config.ingest)?;
    admin::remove_leftovers(&config.data).map_err(ServerError::Registry)?;
    let mut open = BTreeMap::new();
    open.insert(DEFAULT_TENANT.to_owned(), Arc::new(default));
    let registry = config.ingest.metastore.registry(&config.data);
    for spec in registry.tenants().map_err(ServerError::Registry)? {
        let name = spec.name.clone();
        let tenant = Tenant::open(&config.data, spec, &config.ingest)?;
        open.insert(name, Arc::new(tenant));
    }
    // In KiB, so that a u32 (what a semaphore acquires at once) counts up to 4 TiB.
    let inflight_kib =
        u32::try_from(config.max_inflight_bytes.div_ceil(1024).max(1)).unwrap_or(u32::MAX);
    let members = config.ingest.metastore.members();
    // With a leaf API and a shared metastore, the node is a member: it beats, and roots
    // started with `--peers metastore` find it.
    let advertised = match (&config.leaf, &members) {
        (Some((addr, _)), Some(_)) => Some(match &config.leaf_advertise {
            Some(url) => url.clone(),
            None if addr.ip().is_unspecified() => {
                return Err(ServerError::Role(
                    "--leaf-listen on an unspecified address: give --leaf-advertise http://HOST:PORT, the address other nodes reach it at",
                ))
            }
            None => format!("http://{addr}"),
        }),
        _ => None,
    };
    let node = quarry_store::metastore::node_id(&config.data).map_err(ServerError::Catalog)?;
    let role = role_name(config.ingest.role);
    let capacity = if searcher { 0 } else { config.ingest_capacity };
    if let (Some(url), Some(members)) = (&advertised, &members) {
        let beat = quarry_store::members::Beat {
            endpoint: url,
            role,
            node: &node,
            http: "",
            capacity,
        };
        members.beat(&beat).map_err(ServerError::Catalog)?;
    }
    // A member routes each tenant's ingest to the indexers traffic control names for it.
    let ingest_router = (advertised.is_some() && members.is_some())
        .then(|| Arc::new(traffic::Router::new(!searcher)));
    let root = match &config.peers {
        None => None,
        Some((Peers::Listed(peers), token)) => Some(Arc::new(
            quarry_cluster::Root::new(peers, token).map_err(ServerError::Cluster)?,
        )),
        Some((Peers::Metastore, token)) => {
            let Some(members) = &members else {
                return Err(ServerError::Role(
                    "--peers metastore finds the nodes in a shared metastore: give --metastore postgres://...",
                ));
            };
            let live: Vec<String> = members
                .live(MEMBER_ALIVE)
                .map_err(ServerError::Catalog)?
                .into_iter()
                .map(|m| m.endpoint)
                .collect();
            Some(Arc::new(
                quarry_cluster::Root::new(&live, token).map_err(ServerError::Cluster)?,
            ))
        }
    };
    // With `--peers` or over a shared metastore, writes by `_id` are refused (ingest.rs).
    let clustered = root.is_some() || members.is_some();
    let state = Arc::new(AppState {
        root,
        clustered,
        ingest_router: ingest_router.clone(),
        data: config.data.clone(),
        ingest_config: config.ingest.clone(),
        max_body_bytes: config.max_body_bytes,
        admin,
        tenants: RwLock::new(open),
        registry: Mutex::new(registry),
        metrics: metrics::Metrics::new(),
        inflight: tokio::sync::Semaphore::new(inflight_kib as usize),
        inflight_kib,
        searches: SearchTurns::new(
            config
                .max_searches
                .unwrap_or_else(|| 4 * std::thread::available_parallelism().map_or(1, |n| n.get())),
            SEARCH_QUEUE_WAIT,
        ),
        contexts: Default::default(),
    });
    let socket = tokio::net::TcpListener::bind(config.listen)
        .await
        .map_err(|source| ServerError::Listen {
            addr: config.listen,
            source,
        })?;
    let addr = socket.local_addr().map_err(|source| ServerError::Listen {
        addr: config.listen,
        source,
    })?;
    if let Some(router) = &ingest_router {
        router.set_me(http_url(&config, addr, advertised.as_deref()));
    }
    let open_file_limit = listener::open_file_limit();
    let limits = listener::ConnectionLimits {
        first_byte_timeout: config.first_byte_timeout,
        header_timeout: listener::HEADER_READ_TIMEOUT.min(config.request_timeout),
        keep_alive_timeout: config.keep_alive_timeout,
        max_connections: config
            .max_connections
            .unwrap_or_else(|| listener::max_connections_for(open_file_limit)),
    };
    if let Some(limit) = open_file_limit {
        if limits.max_connections > listener::max_connections_for(Some(limit)) {
            tracing::warn!(max_connections = limits.max_connections, open_file_limit = limit, "--max-connections leaves few descriptors for block files and the WAL under the open-file limit (ulimit -n): idle connections could take them all");
        }
    }
    if state.admin.is_some() && !config.allowed_hosts.is_empty() {
        tracing::warn!("--allowed-host has no effect with an admin token: every Host is served, requests need keys");
    }
    // Membership: this node's beat, and a root over the members follows who is alive.
    let traffic_store = config.ingest.metastore.traffic();
    let membership = members.clone().map(|members| {
        let follow = matches!(config.peers, Some((Peers::Metastore, _)));
        let root = state.root.clone().filter(|_| follow);
        let advertised = advertised.clone();
        let router = ingest_router.clone();
        let traffic_store = traffic_store.clone();
        tokio::spawn(async move {
            let mut beats: u64 = 0;
            loop {
                tokio::time::sleep(MEMBER_BEAT).await;
                beats += 1;
                let plan_now = beats.is_multiple_of(PLAN_EVERY);
                let (members, advertised, root, node, router, traffic_store) = (
                    members.clone(),
                    advertised.clone(),
                    root.clone(),
                    node.clone(),
                    router.clone(),
                    traffic_store.clone(),
                );
                let work = tokio::task::spawn_blocking(move || {
                    if let Some(url) = &advertised {
                        let http = router.as_ref().and_then(|r| r.me()).unwrap_or_default();
                        members.beat(&quarry_store::members::Beat {
                            endpoint: url,
                            role,
                            node: &node,
                            http: &http,
                            capacity,
                        })?;
                    }
                    if let (Some(router), Some(traffic_store)) = (&router, &traffic_store) {
                        traffic::beat(router, &members, traffic_store, &node, MEMBER_ALIVE)?;
                        if plan_now {
                            traffic::plan_round(&members, traffic_store, &node, MEMBER_ALIVE)?;
                        }
                    }
                    if let Some(root) = root {
                        let absent = members
                            .absent_writers(MEMBER_ALIVE)?
                            .into_iter()
                            .map(|m| m.endpoint)
                            .collect();
                        root.set_absent(absent);
                        let live: Vec<String> = members
                            .live(MEMBER_ALIVE)?
                            .into_iter()
                            .map(|m| m.endpoint)
                            .collect();
                        match root.set_endpoints(&live) {
                            Ok(true) => tracing::info!(nodes = ?live, "cluster members changed"),
                            Ok(false) => {}
                            Err(error) => tracing::warn!(%error, "a member's endpoint is unusable"),
                        }
                    }
                    Ok::<(), quarry_store::CatalogError>(())
                });
                if let Ok(Err(error)) = work.await {
                    tracing::warn!(%error, "membership in the metastore failed; retrying");
                }
            }
        })
    });
    // Over a shared registry (PostgreSQL) every node follows it: tenants created, changed
    // (keys, retention, quotas) and deleted on any other node.
    let shared_registry = !config.ingest.metastore.is_local();
    let follower = (searcher || shared_registry).then(|| {
        let state = state.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(live::REFRESH_PERIOD).await;
                let work = state.clone();
                match tokio::task::spawn_blocking(move || admin::follow_registry(&work)).await {
                    Ok(Ok((0, 0))) => {}
                    Ok(Ok((opened, closed))) => {
                        tracing::info!(opened, closed, "followed the tenant registry")
                    }
                    Ok(Err(error)) => {
                        tracing::warn!(%error, "reading the tenant registry failed; retrying")
                    }
                    Err(_) => {}
                }
            }
        })
    });
    // The leaf API (quarry-cluster), stopped with the HTTP server.
    let (stop_leaf, leaf_stopped) = tokio::sync::oneshot::channel::<()>();
    let leaf_server = match &config.leaf {
        None => None,
        Some((leaf_addr, token)) => {
            let leaf_socket = tokio::net::TcpListener::bind(leaf_addr)
                .await
                .map_err(|source| ServerError::Listen {
                    addr: *leaf_addr,
                    source,
                })?;
            let bound = leaf_socket.local_addr().unwrap_or(*leaf_addr);
            tracing::info!(addr = %bound, "serving the leaf API (gRPC)");
            let leaves = Arc::new(LeafTenants(state.clone()));
            let token = token.clone();
            Some(tokio::spawn(async move {
                let stopped = async move {
                    let _ = leaf_stopped.await;
                };
                if let Err(error) =
                    quarry_cluster::serve_leaf(leaf_socket, leaves, &token, stopped).await
                {
                    tracing::error!(%error, "the leaf API stopped");
                }
            }))
        }
    };
    on_listening(addr);
    tracing::info!(%addr, data = %config.data.display(), tenants = state.all_tenants().len(), keys = state.admin.is_some(), tls = config.tls.is_some(), max_connections = limits.max_connections, "listening");
    let guard = guard::Guard::new(state.admin.is_none(), &config.allowed_hosts);
    let app = router(state.clone(), guard, config.request_timeout);
    let served = listener::run(socket, app, tls, limits, shutdown)
        .await
        .map_err(ServerError::Serve);
    let _ = stop_leaf.send(());
    if let Some(follower) = follower {
        follower.abort();
    }
    if let Some(membership) = membership {
        membership.abort();
    }
    // Leaving at once, so that roots stop asking this node.
    if let (Some(url), Some(members)) = (&advertised, &members) {
        let (url, members) = (url.clone(), members.clone());
        let _ = tokio::task::spawn_blocking(move || members.leave(&url)).await;
    }
    if let Some(leaf_server) = leaf_server {
        let _ = leaf_server.await;
    }
    let mut flushed = Ok(());
    for tenant in state.all_tenants() {
        if let Err(error) = tenant.close(true) {
            tracing::error!(tenant = %tenant.name(), %error, "final flush failed");
            flushed = Err(ServerError::Flush(error));
        }
    }
    served?;
    flushed
}

/// This node's HTTP API's URL as other nodes reach it (where ingest is forwarded): the
/// address it listens on, or on an unspecified address the host of `--leaf-advertise`.
fn http_url(config: &ServerConfig, addr: SocketAddr, leaf_advertised: Option<&str>) -> String {
    let scheme = if config.tls.is_some() {
        "https"
    } else {
        "http"
    };
    if !addr.ip().is_unspecified() {
        return format!("{scheme}://{addr}");
    }
    let host = leaf_advertised
        .and_then(|url| url.split("://").nth(1))
        .and_then(|rest| rest.rsplit_once(':').map(|(host, _)| host.to_owned()))
        .unwrap_or_else(|| addr.ip().to_string());
    format!("{scheme}://{host}:{}", addr.port())
}

fn role_name(role: live::Role) -> &'static str {
    match role {
        live::Role::All => "all",
        live::Role::Indexer => "indexer",
        live::Role::Searcher => "searcher",
    }
}

/// The node's open tenants as leaves of distributed searches: each search reads a snapshot.
struct LeafTenants(Arc<AppState>);

impl quarry_cluster::Tenants for LeafTenants {
    fn searcher(&self, tenant: &str) -> Result<Option<Arc<quarry_query::Searcher>>, String> {
        match self.0.open_tenant(tenant) {
            Some(open) => open.live.snapshot().map(Some).map_err(|e| e.to_string()),
            None => Ok(None),
        }
    }

    fn role(&self) -> &'static str {
        role_name(self.0.ingest_config.role)
    }

    fn shared(&self) -> bool {
        let config = &self.0.ingest_config;
        !config.metastore.is_local() && !config.storage.is_local()
    }

    fn is_published(&self, id: u64) -> bool {
        live::is_published_block(id)
    }

    fn refresh(&self, tenant: &str) -> Result<(), String> {
        match self.0.open_tenant(tenant) {
            Some(open) => open.live.refresh().map(|_| ()).map_err(|e| e.to_string()),
            None => Ok(()),
        }
    }

    fn recently_gone(&self, tenant: &str, ids: &[u64]) -> Vec<Arc<quarry_format::BlockReader>> {
        match self.0.open_tenant(tenant) {
            Some(open) => open.live.recently_gone(ids),
            None => Vec::new(),
        }
    }

    fn tail(
        &self,
        tenant: &str,
        query: &quarry_query::leaf::LeafQuery,
    ) -> Result<Option<quarry_cluster::TailReceiver>, String> {
        let Some(open) = self.0.open_tenant(tenant) else {
            return Ok(None);
        };
        let quarry_query::leaf::QuerySource::Text(text) = &query.source else {
            return Err("a live tail takes the query language, not the query DSL".into());
        };
        tail::leaf_tail(open.live.clone(), text.clone()).map(Some)
    }

    fn planned(&self, tenant: &str) -> Result<Option<quarry_cluster::Planned>, String> {
        let Some(open) = self.0.open_tenant(tenant) else {
            return Ok(None);
        };
        let (searcher, blocks) = open.live.planned_snapshot().map_err(|e| e.to_string())?;
        Ok(Some(quarry_cluster::Planned {
            searcher,
            writer: open.live.writer(),
            blocks,
        }))
    }
}

/// The API's routes.
fn router(state: Arc<AppState>, guard: guard::Guard, request_timeout: Duration) -> Router {
    let body_limit = state.max_body_bytes;
    // Ingest bodies are held from reading to acknowledgement: their bytes are reserved from
    // `max_inflight_bytes` first (429 when it is spent).
    let ingest_routes = Router::new()
        .route("/api/v1/{tenant}/ingest", post(ingest::ingest))
        // Elasticsearch takes PUT as well as POST (its Python client sends PUT).
        .route("/api/v1/{tenant}/_bulk", post(tenant_bulk).put(tenant_bulk))
        .route("/_bulk", post(ingest::bulk).put(ingest::bulk))
        .route("/{index}/_bulk", post(ingest::bulk).put(ingest::bulk))
        // In a cluster, to the tenant's indexer (inside the reservation: a forwarded body
        // is held while it travels).
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            traffic::route_ingest,
        ))
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            ingest::reserve_body,
        ));
    Router::new()
        .route(
            "/health/live",
            get(|| async { Json(json!({"status": "ok"})) }),
        )
        .route("/health/ready", get(ready))
        .route("/api/v1/{tenant}/search", get(search_get).post(search_post))
        .route("/api/v1/{tenant}/export", get(export::export))
        .route("/api/v1/{tenant}/fields", get(fields))
        .route(
            "/api/v1/{tenant}/mapping",
            get(mapping::get).put(mapping::put),
        )
        .route("/api/v1/{tenant}/tail", get(tail::tail))
        .merge(ingest_routes)
        // The web UI for browsers, Elasticsearch's info for everyone else (ui.rs).
        .route("/", get(ui::root).head(es_api::es_info))
        .route("/ui", get(ui::index))
        .route("/ui/", get(ui::index))
        .route("/ui/assets/{name}", get(ui::asset))
        .route("/_search", get(es_search::search).post(es_search::search))
        .route(
            "/{index}/_search",
            get(es_search::search).post(es_search::search),
        )
        .route(
            "/_msearch",
            get(es_search::msearch).post(es_search::msearch),
        )
        .route(
            "/{index}/_msearch",
            get(es_search::msearch).post(es_search::msearch),
        )
        .route(
            "/{index}/_mapping",
            get(es_search::mapping).put(mapping::es_put),
        )
        .route("/_mapping", get(es_search::mapping))
        .route(
            "/_field_caps",
            get(es_field_caps::field_caps).post(es_field_caps::field_caps),
        )
        .route(
            "/{index}/_field_caps",
            get(es_field_caps::field_caps).post(es_field_caps::field_caps),
        )
        .route("/_count", get(es_search::count).post(es_search::count))
        .route(
            "/{index}/_count",
            get(es_search::count).post(es_search::count),
        )
        // Elasticsearch's index APIs: an index is a tenant (es_indices.rs).
        .route(
            "/{index}",
            put(es_indices::create)
                .delete(es_indices::delete)
                .head(es_indices::exists)
                .get(es_indices::get),
        )
        .route(
            "/_refresh",
            get(es_indices::refresh).post(es_indices::refresh),
        )
        .route(
            "/{index}/_refresh",
            get(es_indices::refresh).post(es_indices::refresh),
        )
        .route(
            "/_search/scroll",
            get(es_scroll::next)
                .post(es_scroll::next)
                .delete(es_scroll::clear),
        )
        .route(
            "/_search/scroll/{id}",
            get(es_scroll::next)
                .post(es_scroll::next)
                .delete(es_scroll::clear),
        )
        .route("/{index}/_pit", post(es_scroll::open_pit))
        // Single documents (es_docs.rs).
        .route("/{index}/_doc", post(es_docs::index_auto))
        .route("/_mget", get(es_docs::mget).post(es_docs::mget))
        .route("/{index}/_mget", get(es_docs::mget).post(es_docs::mget))
        .route(
            "/{index}/_doc/{id}",
            put(es_docs::index_with_id)
                .post(es_docs::index_with_id)
                .get(es_docs::get)
                .head(es_docs::get)
                .delete(es_docs::delete),
        )
        .route(
            "/{index}/_create/{id}",
            put(es_docs::create_with_id).post(es_docs::create_with_id),
        )
        .route(
            "/{index}/_source/{id}",
            get(es_docs::source).head(es_docs::source),
        )
        .route("/{index}/_update/{id}", post(es_docs::update))
        .route("/_pit", axum::routing::delete(es_scroll::close_pit))
        // Aliases (es_aliases.rs).
        .route("/_aliases", post(es_aliases::update))
        .route("/_alias", get(es_aliases::get_all))
        .route(
            "/_alias/{name}",
            get(es_aliases::get_named).head(es_aliases::exists),
        )
        .route("/{index}/_alias", get(es_aliases::get_of_index))
        .route(
            "/{index}/_alias/{name}",
            put(es_aliases::put)
                .post(es_aliases::put)
                .delete(es_aliases::delete)
                .get(es_aliases::get_of_index_named)
                .head(es_aliases::exists_of_index),
        )
        .route(
            "/{index}/_aliases/{name}",
            put(es_aliases::put)
                .post(es_aliases::put)
                .delete(es_aliases::delete),
        )
        .route(
            "/_settings",
            get(es_indices::settings).put(es_indices::put_settings),
        )
        .route(
            "/{index}/_settings",
            get(es_indices::settings).put(es_indices::put_settings),
        )
        .route("/{index}/_close", post(es_indices::close))
        .route("/{index}/_open", post(es_indices::open))
        .route("/_cluster/health", get(es_indices::cluster_health))
        .route("/_cluster/health/{index}", get(es_indices::cluster_health))
        .route("/_cat/indices", get(es_indices::cat_indices))
        .route("/_cat/indices/{index}", get(es_indices::cat_indices))
        .route("/api/v1/openapi.json", get(openapi))
        .route("/metrics", get(metrics::scrape))
        .route("/api/v1/tenants", post(admin::create).get(admin::list))
        .route(
            "/api/v1/tenants/{name}",
            get(admin::show).patch(admin::update).delete(admin::delete),
        )
        // Latency per matched route (after routing, so the route template is known).
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            metrics::observe,
        ))
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            writes_refused_on_a_searcher,
        ))
        // `filter_path` on every Elasticsearch answer (es_filter_path.rs).
        .layer(axum::middleware::from_fn(es_filter_path::layer))
        .layer(DefaultBodyLimit::max(body_limit))
        .layer(tower_http::timeout::TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            request_timeout,
        ))
        // Before any route: the Host check (keyless) and cross-origin browser writes.
        .layer(axum::middleware::from_fn_with_state(
            Arc::new(guard),
            guard::check,
        ))
        // One span per request, its method, path, status and latency logged at debug
        // (RUST_LOG=tower_http=debug).
        .layer(tower_http::trace::TraceLayer::new_for_http())
        .with_state(state)
}

/// A searcher writes nothing: every request that would (ingest, documents, tenants, mappings,
/// aliases, settings) is a 400 saying where to send it. Searches sent with POST are reads.
async fn writes_refused_on_a_searcher(
    State(state): State<Arc<AppState>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    use axum::http::Method;
    if state.ingest_config.role != live::Role::Searcher
        || matches!(
            *request.method(),
            Method::GET | Method::HEAD | Method::OPTIONS
        )
    {
        return next.run(request).await;
    }
    let path = request.uri().path();
    let last = path.trim_end_matches('/').rsplit('/').next().unwrap_or("");
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let reads = [
        "search",
        "_search",
        "_msearch",
        "_count",
        "_mget",
        "_field_caps",
        "_refresh",
        "_pit",
        "scroll",
    ];
    // In a cluster, ingest sent to a searcher goes on to an indexer (traffic.rs): the
    // native API's and Elasticsearch's `_bulk`.
    let native_ingest = (last == "ingest" || last == "_bulk")
        && segments.len() == 4
        && segments[..2] == ["api", "v1"];
    let es_bulk = last == "_bulk" && segments.len() <= 2;
    if state.ingest_router.is_some() && (native_ingest || es_bulk) {
        return next.run(request).await;
    }
    let reading = reads.contains(&last)
        || segments.iter().any(|s| *s == "scroll" || *s == "_pit")
        // A scroll's id follows its path.
        || segments.windows(2).any(|w| w == ["_search", "scroll"]);
    if reading {
        return next.run(request).await;
    }
    let error = ApiError::bad_request(format!(
        "{} {path}: this node is a searcher (--role searcher) and writes nothing; send writes to an indexer",
        request.method()
    ));
    if segments.first() == Some(&"api") {
        error.into_response()
    } else {
        es_api::es_error(error).into_response()
    }
}

/// `/api/v1/{tenant}/_bulk` is `/{index}/_bulk` with the tenant as the default index, for a
/// key of that tenant (else 401 for the whole request; items naming another `_index` are
/// still checked one by one).
async fn tenant_bulk(
    state: State<Arc<AppState>>,
    tenant: UrlPath<String>,
    query: RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if let Err(error) = state.authorize(&tenant, &headers) {
        return es_api::es_error(error).into_response();
    }
    ingest::bulk(state, Some(tenant), query, headers, body).await
}

pub(crate) struct AppState {
    /// The root of distributed native searches, with `--peers`.
    root: Option<Arc<quarry_cluster::Root>>,
    /// Whether the node is one of several (`--peers`, or a shared metastore): documents'
    /// writes by `_id` are decided from one node's documents table (documents.rs), so they
    /// are refused (`ingest::refused_by_id`).
    clustered: bool,
    /// Where ingest goes in a cluster (traffic.rs); None: taken here.
    ingest_router: Option<Arc<traffic::Router>>,
    data: PathBuf,
    ingest_config: IngestConfig,
    max_body_bytes: usize,
    /// SHA-256 of the admin token; `None`: keyless (one tenant, loopback only).
    admin: Option<[u8; 32]>,
    tenants: RwLock<BTreeMap<String, Arc<Tenant>>>,
    /// The tenant registry; its lock is held while the registry and the open tenants change
    /// (create, delete, reconfigure).
    registry: Mutex<Box<dyn TenantRegistry>>,
    metrics: metrics::Metrics,
    /// Ingest request bodies being read, parsed or waiting for their acknowledgement, in KiB.
    inflight: tokio::sync::Semaphore,
    /// The whole of `inflight`.
    inflight_kib: u32,
    /// Searches that may run at once (`ServerConfig::max_searches`).
    searches: SearchTurns,
    /// Open Elasticsearch scrolls and points in time.
    contexts: es_scroll::Contexts,
}

/// How long a search waits for a turn before it answers 429: a burst is queued, a flood that
/// would hold every search's results in memory at once is refused.
pub const SEARCH_QUEUE_WAIT: Duration = Duration::from_secs(5);

impl AppState {
    /// Runs a search's work once one of the `max_searches` turns is free (a 429 after
    /// `SEARCH_QUEUE_WAIT`), so the memory of searches under way is bounded by configuration:
    /// turns times what one search holds (at most `MAX_SEARCH_LIMIT` events).
    pub(crate) async fn search<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
    ) -> Result<T, ApiError> {
        self.searches.run(work).await
    }
}

/// Turns for searches: at most `semaphore`'s count run at once; one that waits longer than
/// `wait` for a turn answers 429.
struct SearchTurns {
    semaphore: tokio::sync::Semaphore,
    wait: Duration,
}

impl SearchTurns {
    fn new(turns: usize, wait: Duration) -> SearchTurns {
        SearchTurns {
            semaphore: tokio::sync::Semaphore::new(turns),
            wait,
        }
    }

    async fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
    ) -> Result<T, ApiError> {
        let wait = self.wait;
        let _turn = match tokio::time::timeout(wait, self.semaphore.acquire()).await {
            Ok(Ok(turn)) => turn,
            _ => {
                return Err(ApiError::new(
                    StatusCode::TOO_MANY_REQUESTS,
                    format!(
                    "every search turn (--max-searches) stayed taken for {wait:?}: retry shortly"
                ),
                ))
            }
        };
        blocking(work).await
    }
}

#[cfg(test)]
mod search_turn_tests {
    use super::*;

    #[tokio::test]
    async fn searches_beyond_the_turns_wait_then_are_refused() {
        let turns = Arc::new(SearchTurns::new(1, Duration::from_millis(200)));
        let (started, release) = (
            Arc::new(tokio::sync::Notify::new()),
            Arc::new(std::sync::Barrier::new(2)),
        );
        let holder = {
            let (turns, started, release) = (turns.clone(), started.clone(), release.clone());
            tokio::spawn(async move {
                turns
                    .run(move || {
                        started.notify_one();
                        release.wait();
                        Ok(1)
                    })
                    .await
            })
        };
        started.notified().await;
        // The one turn is taken: a second search waits, then gets 429 with the reason.
        let refused = turns.run(|| Ok(2)).await.expect_err("refused");
        assert_eq!(refused.status, StatusCode::TOO_MANY_REQUESTS);
        assert!(
            refused.message.contains("--max-searches"),
            "{}",
            refused.message
        );
        release.wait();
        assert_eq!(holder.await.unwrap().unwrap(), 1);
        // Free again: the next one runs.
        assert_eq!(turns.run(|| Ok(3)).await.unwrap(), 3);
    }
}

/// An error answer: a status and `{"error": ..., "position": ...}`.
#[derive(Debug)]
pub(crate) struct ApiError {
    status: StatusCode,
    message: String,
    position: Option<usize>,
    /// Seconds for `Retry-After` (429 answers; 1 when a 429 does not say).
    retry_after: Option<u64>,
    /// The error type an Elasticsearch endpoint answers, when the status does not tell it
    /// (`es_api::es_error`).
    es_kind: Option<&'static str>,
    /// The index a missing-index error is about (Elasticsearch names it in the error).
    index: Option<String>,
}

impl ApiError {
    fn new(status: StatusCode, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            message: message.into(),
            position: None,
            retry_after: None,
            es_kind: None,
            index: None,
        }
    }

    /// The same error with the Elasticsearch error type `kind`.
    fn with_kind(mut self, kind: &'static str) -> ApiError {
        self.es_kind = Some(kind);
        self
    }

    fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, message)
    }

    fn unavailable(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::SERVICE_UNAVAILABLE, message)
    }

    fn internal(error: impl std::fmt::Display) -> ApiError {
        tracing::error!(%error, "request failed");
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, error.to_string())
    }

    /// The one mapping from a query error to a status.
    fn from_query(error: QueryError) -> ApiError {
        match error {
            QueryError::Parse(parse) => ApiError {
                status: StatusCode::BAD_REQUEST,
                message: format!("bad query: {parse}"),
                position: Some(parse.position),
                retry_after: None,
                es_kind: Some("parse_exception"),
                index: None,
            },
            QueryError::TooManyBuckets { .. }
            | QueryError::TooManyAggregationBuckets { .. }
            | QueryError::Invalid(_) => ApiError::bad_request(error.to_string()),
            other => ApiError::internal(other),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut body = json!({ "error": self.message });
        if let Some(position) = self.position {
            body["position"] = position.into();
        }
        let mut response = (self.status, Json(body)).into_response();
        if self.status == StatusCode::TOO_MANY_REQUESTS {
            // Memory is freed by the next flush; a second is a fair guess at it. Quotas say.
            let seconds = self.retry_after.unwrap_or(1);
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, header::HeaderValue::from(seconds));
        }
        response
    }
}

/// Ready when every tenant's WAL takes records; totals over all tenants. With keys on, the
/// status code alone for anyone without the admin token (a load balancer has no key): tenant
/// names and counts are not for everyone who can reach the port.
async fn ready(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
) -> Result<Json<JsonValue>, ApiError> {
    let details = state.admin.is_none() || state.require_admin(&headers).is_ok();
    let tenants = state.all_tenants();
    if !details {
        if tenants
            .iter()
            .any(|tenant| tenant.live.wal_failure().is_some())
        {
            return Err(ApiError::unavailable("not ready"));
        }
        return Ok(Json(json!({"status": "ready"})));
    }
    for tenant in &tenants {
        if let Some(error) = tenant.live.wal_failure() {
            return Err(ApiError::unavailable(format!(
                "not ready: the write-ahead log of tenant {:?} failed: {error}",
                tenant.name()
            )));
        }
    }
    let count = tenants.len();
    let totals = blocking(move || {
        let mut totals = [0u64; 5];
        for tenant in &tenants {
            let snapshot = tenant.live.published_snapshot();
            let (memory_events, memory_bytes) = tenant.live.memory_usage();
            totals[0] += snapshot.blocks().len() as u64;
            totals[1] += snapshot.doc_count();
            totals[2] += memory_events;
            totals[3] += memory_bytes as u64;
            totals[4] += snapshot.damaged().len() as u64;
        }
        Ok(totals)
    })
    .await?;
    Ok(Json(json!({
        "status": "ready",
        "tenants": count,
        "blocks": totals[0],
        "events": totals[1],
        "memory_events": totals[2],
        "memory_bytes": totals[3],
        "damaged_blocks": totals[4],
    })))
}

/// Runs searching (CPU and mmapped reads) off the async threads.
pub(crate) async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(ApiError::internal)?
}

async fn search_get(
    State(state): State<Arc<AppState>>,
    UrlPath(tenant): UrlPath<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Json<JsonValue>, ApiError> {
    let live = state.authorize(&tenant, &headers)?.live.clone();
    let params: Vec<(String, String)> =
        form_urlencoded::parse(query.unwrap_or_default().as_bytes())
            .into_owned()
            .collect();
    let request = search_request(&params)?;
    run_search(&state, &tenant, live, request).await
}

/// `POST`: the same parameters as a JSON object (`aggs` a list) or as a form body.
async fn search_post(
    State(state): State<Arc<AppState>>,
    UrlPath(tenant): UrlPath<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<JsonValue>, ApiError> {
    let live = state.authorize(&tenant, &headers)?.live.clone();
    let is_form = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/x-www-form-urlencoded"));
    let params: Vec<(String, String)> = if is_form {
        form_urlencoded::parse(&body).into_owned().collect()
    } else {
        let object: serde_json::Map<String, JsonValue> = serde_json::from_slice(&body)
            .map_err(|e| ApiError::bad_request(format!("body is not a JSON object: {e}")))?;
        let mut params = Vec::new();
        for (key, value) in object {
            let items = match value {
                JsonValue::Array(items) => items,
                other => vec![other],
            };
            for item in items {
                let text = match item {
                    JsonValue::String(text) => text,
                    JsonValue::Null => continue,
                    other => other.to_string(),
                };
                params.push((key.clone(), text));
            }
        }
        params
    };
    let request = search_request(&params)?;
    run_search(&state, &tenant, live, request).await
}

async fn run_search(
    state: &AppState,
    tenant: &str,
    live: Arc<LiveIndex>,
    request: SearchRequest,
) -> Result<Json<JsonValue>, ApiError> {
    let started = Instant::now();
    if let Some(root) = &state.root {
        let response = cluster_search(root, tenant, &request).await?;
        let mut body = response_json(&response);
        body["took_ms"] = (started.elapsed().as_secs_f64() * 1000.0).into();
        return Ok(Json(body));
    }
    let fetched = Arc::new(quarry_format::FetchCounts::default());
    let counts = fetched.clone();
    let response = state
        .search(move || {
            counts.scope(|| {
                let searcher = live.published_snapshot();
                searcher.execute(&request).map_err(ApiError::from_query)
            })
        })
        .await?;
    let mut body = response_json(&response);
    body["took_ms"] = (started.elapsed().as_secs_f64() * 1000.0).into();
    // What the search cost the object store, when it read blocks kept there.
    if !fetched.is_empty() {
        let read = |counter: &std::sync::atomic::AtomicU64| {
            counter.load(std::sync::atomic::Ordering::Relaxed)
        };
        body["object_store"] = json!({
            "round_trips": read(&fetched.round_trips),
            "ranges": read(&fetched.ranges),
            "bytes": read(&fetched.bytes),
            "cache_hits": read(&fetched.cache_hits),
        });
    }
    Ok(Json(body))
}

/// A native search answered over the cluster's nodes (`--peers`): every node a leaf, this
/// one the root. What the leaf API does not carry yet (the nested aggregations of
/// Elasticsearch's DSL) is refused by name, never answered from this node's data alone.
async fn cluster_search(
    root: &quarry_cluster::Root,
    tenant: &str,
    request: &SearchRequest,
) -> Result<SearchResponse, ApiError> {
    let source = quarry_query::leaf::QuerySource::Text(request.query.clone());
    cluster_search_source(root, tenant, source, request).await
}

/// `cluster_search` of the query `source` (the request's own query text is not read).
pub(crate) async fn cluster_search_source(
    root: &quarry_cluster::Root,
    tenant: &str,
    source: quarry_query::leaf::QuerySource,
    request: &SearchRequest,
) -> Result<SearchResponse, ApiError> {
    let (response, _) = cluster_page(root, tenant, source, request, None, Duration::ZERO).await?;
    Ok(response)
}

/// `cluster_search_source` over the snapshots `pin` names (an earlier page's), or planned
/// afresh without one, the leaves keeping what they read at least `keep` after each use;
/// with the pin of the snapshots it read, for the next page.
pub(crate) async fn cluster_page(
    root: &quarry_cluster::Root,
    tenant: &str,
    source: quarry_query::leaf::QuerySource,
    request: &SearchRequest,
    pin: Option<&quarry_cluster::root::Pin>,
    keep: Duration,
) -> Result<(SearchResponse, Option<quarry_cluster::root::Pin>), ApiError> {
    use quarry_query::leaf::{LeafQuery, LeafRequest};
    let query = LeafQuery {
        source,
        start: request.start,
        end: request.end,
    };
    let leaf_error = |error: quarry_cluster::ClusterError| ApiError::bad_request(error.to_string());
    let histogram = match request.histogram {
        None => None,
        Some(quarry_query::HistogramInterval::Fixed(interval)) => Some(interval),
        // The root asks every leaf how wide its matches are first (leaf.rs, `TimeSpan`).
        Some(quarry_query::HistogramInterval::Auto) => {
            let span = root.span(tenant, &query).await.map_err(leaf_error)?;
            Some(quarry_query::timeline::interval_for_span(
                span.width(),
                quarry_query::request::AUTO_BUCKETS,
            ))
        }
    };
    let leaf_request = LeafRequest {
        limit: request.limit,
        sort: request.sort,
        after: request.after,
        sort_field: request.sort_field.clone(),
        sort_after: request.sort_after.clone(),
        count: request.count,
        histogram,
        aggregations: request.aggregations.clone(),
        tree: request.tree.clone(),
    };
    let answer = match pin {
        Some(pin) => root.search_pinned(pin, tenant, &query, &leaf_request).await,
        None => root.search_kept(tenant, &query, &leaf_request, keep).await,
    }
    .map_err(leaf_error)?;
    let (count, histogram, aggregations) = quarry_query::request::finish(
        &leaf_request,
        answer.count,
        answer.histogram,
        answer.aggregations,
    )
    .map_err(ApiError::from_query)?;
    let mut response = SearchResponse {
        count,
        histogram,
        aggregations,
        ..SearchResponse::default()
    };
    if !request.tree.is_empty() {
        let tree = answer
            .tree
            .unwrap_or_else(|| quarry_query::agg_tree::TreePartial::empty(&request.tree));
        response.tree = Some(tree.results(&request.tree));
    }
    response.hits = answer
        .hits
        .into_iter()
        .map(|found| {
            let mut hit = quarry_query::request::hit_event(request.sort, found.hit, found.event);
            hit.matched = found.matched;
            hit
        })
        .collect();
    response.warnings = cluster_warnings(answer.failed_blocks, answer.failed_leaves);
    Ok((response, answer.pin))
}

/// What a cluster's answer lacks, as warnings: blocks its leaves left out, named with the
/// leaf, and leaves that did not answer.
fn cluster_warnings(
    failed_blocks: Vec<(String, quarry_query::leaf::FailedBlock)>,
    failed_leaves: Vec<(String, String)>,
) -> Vec<Warning> {
    let blocks = failed_blocks.into_iter().map(|(leaf, failed)| {
        let path = format!("{leaf}: {}", failed.location).into();
        let error = failed.error;
        if failed.unreadable {
            Warning::BlockUnavailable { path, error }
        } else {
            Warning::DamagedBlock { path, error }
        }
    });
    let leaves = failed_leaves
        .into_iter()
        .map(|(leaf, error)| Warning::LeafUnavailable { leaf, error });
    blocks.chain(leaves).collect()
}

/// The most hits one search answers with (Elasticsearch's `index.max_result_window`): more
/// would be held in memory whole and sent as one body (issue 26: `limit=10000000` took the
/// server from 80 MB to 3.3 GB). Larger result sets page with `search_after` or stream from
/// the export endpoint.
pub const MAX_SEARCH_LIMIT: usize = 10_000;

/// The request from its parameters (query string, form or JSON body): `query`, `start`,
/// `end`, `sort`, `limit`, `search_after`, `count`, `histogram`, `aggs` (repeatable).
pub(crate) fn search_request(params: &[(String, String)]) -> Result<SearchRequest, ApiError> {
    let now = now_nanos();
    let mut request = SearchRequest::default();
    let mut after = None;
    for (key, value) in params {
        match key.as_str() {
            "query" | "q" => request.query = value.clone(),
            "start" => {
                request.start = parse_time(value, now)
                    .map_err(|message| ApiError::bad_request(format!("start: {message}")))?
            }
            "end" => {
                request.end = parse_time(value, now)
                    .map_err(|message| ApiError::bad_request(format!("end: {message}")))?
            }
            "sort" => match SortSpec::parse(value).map_err(ApiError::bad_request)? {
                SortSpec::Order(order) => {
                    request.sort = order;
                    request.sort_field = None;
                }
                SortSpec::Field(field) => request.sort_field = Some(field),
            },
            "limit" => {
                request.limit = value.parse().map_err(|_| {
                    ApiError::bad_request(format!("limit: {value:?} is not a count"))
                })?;
                if request.limit > MAX_SEARCH_LIMIT {
                    return Err(ApiError::bad_request(format!(
                        "limit: {} is above the maximum {MAX_SEARCH_LIMIT}; page with search_after (the last hit's _cursor), or take every match as NDJSON from /api/v1/{{tenant}}/export",
                        request.limit
                    )));
                }
            }
            "search_after" => after = Some(value),
            "count" => {
                request.count = match value.as_str() {
                    "true" | "1" | "" => true,
                    "false" | "0" => false,
                    other => {
                        return Err(ApiError::bad_request(format!(
                            "count: {other:?} is not true or false"
                        )))
                    }
                }
            }
            "histogram" => {
                request.histogram = Some(match value.as_str() {
                    "auto" => HistogramInterval::Auto,
                    text => HistogramInterval::Fixed(
                        parse_interval(text)
                            .map_err(|m| ApiError::bad_request(format!("histogram: {m}")))?,
                    ),
                })
            }
            "aggs" | "agg" => request.aggregations.push(
                AggSpec::parse(value)
                    .map_err(|m| ApiError::bad_request(format!("aggs: {m}")))?,
            ),
            other => {
                return Err(ApiError::bad_request(format!(
                    "unknown parameter {other:?} (query, start, end, sort, limit, search_after, count, histogram, aggs)"
                )))
            }
        }
    }
    if let Some(text) = after {
        let bad = || ApiError::bad_request(format!("search_after: bad cursor {text:?}"));
        if request.sort_field.is_some() {
            request.sort_after = Some(SortCursor::parse(text).ok_or_else(bad)?);
        } else if request.sort == SortOrder::Relevance {
            return Err(ApiError::bad_request(
                "search_after needs sort=time_desc, time_asc or FIELD:desc/asc",
            ));
        } else {
            request.after = Some(Cursor::parse(text).ok_or_else(bad)?);
        }
    }
    Ok(request)
}

/// An event's fields as a JSON object.
pub(crate) fn event_json(
    fields: &[(String, quarry_format::Value)],
) -> serde_json::Map<String, JsonValue> {
    fields
        .iter()
        .map(|(name, value)| (name.clone(), value_to_json(value)))
        .collect()
}

/// An event as the native API shows it (search, export, tail): every field the user sent, not
/// the hidden one that keeps how an Elasticsearch document gave its time
/// (`live::TIME_AS_SENT_FIELD`, which only its `_source` reads).
pub(crate) fn native_event_json(
    fields: &[(String, quarry_format::Value)],
) -> serde_json::Map<String, JsonValue> {
    fields
        .iter()
        .filter(|(name, _)| name != live::TIME_AS_SENT_FIELD)
        .map(|(name, value)| (name.clone(), value_to_json(value)))
        .collect()
}

/// The response body: the fields the CLI prints as lines, in one object.
pub fn response_json(response: &SearchResponse) -> JsonValue {
    let hits: Vec<JsonValue> = response
        .hits
        .iter()
        .map(|hit| {
            let mut json = json!({
                "_time": format_time(hit.time),
                "score": hit.score.map(f64::from),
                "event": native_event_json(&hit.event),
            });
            if let Some(cursor) = hit.cursor {
                json["_cursor"] = cursor.to_string().into();
            }
            if let Some(cursor) = &hit.sort_cursor {
                json["sort"] = match &cursor.values[..] {
                    [one] => one.to_json(),
                    many => many.iter().map(SortValue::to_json).collect(),
                };
                json["_cursor"] = cursor.to_string().into();
            }
            json
        })
        .collect();
    let mut body = json!({ "hits": hits });
    if let Some(count) = response.count {
        body["count"] = count.into();
    }
    if let Some(buckets) = &response.histogram {
        let buckets: Vec<JsonValue> = buckets
            .iter()
            .map(|bucket| {
                let mut json = json!({"start": format_time(bucket.start), "count": bucket.count});
                if let Some(aggregations) = &bucket.aggregations {
                    json["aggregations"] = aggregations.clone().into();
                }
                json
            })
            .collect();
        body["histogram"] = buckets.into();
    }
    if let Some(aggregations) = &response.aggregations {
        body["aggregations"] = aggregations.clone().into();
    }
    body["warnings"] = warnings_json(&response.warnings);
    body["partial"] = response.is_partial().into();
    body
}

/// Warnings as the native API shows them: each with its kind, what it names, a message.
fn warnings_json(warnings: &[Warning]) -> JsonValue {
    let warnings: Vec<JsonValue> = warnings
        .iter()
        .map(|warning| match warning {
            Warning::UnknownFields { names } => {
                json!({"kind": "unknown_fields", "fields": names, "message": warning.to_string()})
            }
            Warning::DamagedBlock { path, .. } => json!({
                "kind": "damaged_block",
                "block": path.display().to_string(),
                "message": warning.to_string(),
            }),
            Warning::BlockUnavailable { path, .. } => json!({
                "kind": "block_unavailable",
                "block": path.display().to_string(),
                "message": warning.to_string(),
            }),
            Warning::LeafUnavailable { leaf, .. } => json!({
                "kind": "node_unavailable",
                "node": leaf,
                "message": warning.to_string(),
            }),
            other => json!({"message": other.to_string()}),
        })
        .collect();
    warnings.into()
}

/// `GET /api/v1/{tenant}/fields`: every field with its value types and how many events hold
/// each, and whether bare words search it.
async fn fields(
    State(state): State<Arc<AppState>>,
    UrlPath(tenant): UrlPath<String>,
    headers: HeaderMap,
) -> Result<Json<JsonValue>, ApiError> {
    let live = state.authorize(&tenant, &headers)?.live.clone();
    let (summary, warnings) = match &state.root {
        // Over the cluster's leaves (`--peers`), as a search is planned.
        Some(root) => {
            let answer = root
                .fields(&tenant)
                .await
                .map_err(|error| ApiError::bad_request(error.to_string()))?;
            let warnings = cluster_warnings(answer.failed_blocks, answer.failed_leaves);
            (answer.fields, warnings)
        }
        None => {
            let searcher = live.published_snapshot();
            let left_out = searcher.damaged().iter().cloned().map(Warning::left_out);
            (searcher.field_summary(), left_out.collect())
        }
    };
    let fields: Vec<JsonValue> = summary
        .into_iter()
        .map(|(name, summary)| {
            json!({
                "name": name,
                "events": summary.events(),
                "types": summary.types,
                "full_text": summary.full_text,
            })
        })
        .collect();
    Ok(Json(json!({
        "fields": fields,
        "partial": !warnings.is_empty(),
        "warnings": warnings_json(&warnings),
    })))
}

/// The API, as an OpenAPI 3 document (`openapi.json` beside this crate's manifest; a test
/// calls every operation it lists and checks the answers against its schemas).
pub const OPENAPI: &str = include_str!("../openapi.json");

async fn openapi() -> Response {
    ([(header::CONTENT_TYPE, "application/json")], OPENAPI).into_response()
}
