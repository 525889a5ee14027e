//! Tenants at run time: each open tenant's live index and background threads, who may use
//! it (`AppState::authorize`), its quotas, and the admin API that creates, lists and deletes
//! tenants (`/api/v1/tenants`, admin token only).

use crate::live::{IngestConfig, LiveIndex};
use crate::tenants::{self, Quotas, TenantSpec, TokenBucket, DEFAULT_TENANT};
use crate::{blocking, ApiError, AppState, ServerError};
use axum::body::Bytes;
use axum::extract::{Path as UrlPath, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::Json;
use quarry_query::time::parse_interval;
use serde_json::{json, Value as JsonValue};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// An open tenant.
pub(crate) struct Tenant {
    /// Shared with the background thread, which reads the retention from it.
    pub(crate) spec: Arc<RwLock<TenantSpec>>,
    pub(crate) live: Arc<LiveIndex>,
    stop: Arc<AtomicBool>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    /// The ingest rate quota's bucket, when the tenant has one.
    bucket: Mutex<Option<TokenBucket>>,
    /// Keys of acknowledged ingests (`Idempotency-Key`).
    pub(crate) idempotency: Arc<crate::idempotency::IdempotencyKeys>,
    /// Its documents by id: versions, sequence numbers, deletes (documents.rs).
    pub(crate) documents: crate::documents::DocTable,
}

impl Tenant {
    /// Opens a tenant's catalog (creating it), replays its WAL and starts its background
    /// and sealer threads.
    pub(crate) fn open(
        data: &Path,
        spec: TenantSpec,
        config: &IngestConfig,
    ) -> Result<Tenant, ServerError> {
        let dir = tenants::catalog_dir(data, &spec.name);
        let searcher = config.role == crate::live::Role::Searcher;
        let catalog = if searcher {
            // The directory keeps only local files (an empty WAL, the block cache's).
            std::fs::create_dir_all(&dir).map_err(|source| {
                ServerError::Recover(crate::live::LiveError::Io {
                    path: dir.clone(),
                    source,
                })
            })?;
            config.metastore.open_replica(&spec.name)?
        } else {
            config.metastore.open_catalog(&dir, &spec.name)?
        };
        let store = config.storage.tenant_store(&dir, &spec.name);
        let (live, recovery) = LiveIndex::open(
            catalog,
            store,
            &spec.name,
            &tenants::wal_dir(data, &spec.name),
            config.clone(),
        )
        .map_err(ServerError::Recover)?;
        if recovery.records > 0 || recovery.torn_bytes > 0 {
            tracing::info!(
                tenant = %spec.name,
                records = recovery.records,
                events = recovery.events,
                torn_bytes = recovery.torn_bytes,
                "replayed the write-ahead log"
            );
        }
        let documents = crate::documents::DocTable::open(&dir).map_err(|source| {
            ServerError::Recover(crate::live::LiveError::Io {
                path: dir.join("documents.log"),
                source,
            })
        })?;
        let (entries, generation) = documents.entries();
        live.set_documents(entries, generation, Vec::new());
        let live = Arc::new(live);
        let stop = Arc::new(AtomicBool::new(false));
        let bucket = bucket_of(&spec.quotas);
        let spec = Arc::new(RwLock::new(spec));
        let threads = if searcher {
            vec![spawn_refresher(live.clone(), stop.clone())]
        } else if live.writer().is_some() {
            // One of several writers of a shared catalog: the others' blocks and mapping
            // are followed too.
            vec![
                spawn_background(live.clone(), stop.clone(), spec.clone()),
                spawn_sealer(live.clone(), stop.clone()),
                spawn_refresher(live.clone(), stop.clone()),
            ]
        } else {
            vec![
                spawn_background(live.clone(), stop.clone(), spec.clone()),
                spawn_sealer(live.clone(), stop.clone()),
            ]
        };
        Ok(Tenant {
            spec,
            live,
            stop,
            threads: Mutex::new(threads),
            bucket: Mutex::new(bucket),
            idempotency: Default::default(),
            documents,
        })
    }

    pub(crate) fn name(&self) -> String {
        self.read_spec().name.clone()
    }

    /// The SHA-256 of the tenant's key (None: keyless, or a malformed registry entry).
    fn key_hash(&self) -> Option<[u8; 32]> {
        self.read_spec()
            .key_sha256
            .as_deref()
            .and_then(tenants::parse_hash)
    }

    fn read_spec(&self) -> std::sync::RwLockReadGuard<'_, TenantSpec> {
        self.spec.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// Changes the retention and quotas (the registry is the caller's).
    fn reconfigure(&self, retention_seconds: Option<u64>, quotas: Quotas) {
        *self.bucket.lock().unwrap_or_else(PoisonError::into_inner) = bucket_of(&quotas);
        let mut spec = self.spec.write().unwrap_or_else(PoisonError::into_inner);
        spec.retention_seconds = retention_seconds;
        spec.quotas = quotas;
    }

    pub(crate) fn spec(&self) -> TenantSpec {
        self.read_spec().clone()
    }

    /// Takes the aliases, the closed flag and the search limits of `spec` (the registry is
    /// the caller's).
    fn set_index_state(&self, spec: &TenantSpec) {
        let mut own = self.spec.write().unwrap_or_else(PoisonError::into_inner);
        own.aliases = spec.aliases.clone();
        own.closed = spec.closed;
        own.search_limits = spec.search_limits.clone();
    }

    /// Whether the index is closed (`_close`): neither searched nor written.
    pub(crate) fn is_closed(&self) -> bool {
        self.read_spec().closed
    }

    /// Stops the threads; with `flush`, writes what is in memory to block files first (a
    /// shutdown), without (a deletion) drops it. The WAL writer stops either way.
    pub(crate) fn close(&self, flush: bool) -> Result<(), crate::live::LiveError> {
        self.stop.store(true, Ordering::Relaxed);
        let threads =
            std::mem::take(&mut *self.threads.lock().unwrap_or_else(PoisonError::into_inner));
        for thread in threads {
            let _ = thread.join();
        }
        let flushed = if flush { self.live.flush() } else { Ok(()) };
        self.live.close();
        flushed
    }

    /// The quotas an ingest of `events` events and `bytes` bytes must pass: events per
    /// request, stored bytes, then the ingest rate (checked last, so a refused request
    /// takes no tokens). 429 with the reason and when to retry.
    pub(crate) fn admit(&self, events: usize, bytes: usize) -> Result<(), ApiError> {
        let quotas = self.read_spec().quotas.clone();
        if let Some(limit) = quotas.events_per_request {
            if events as u64 > limit {
                return Err(quota_error(
                    format!("{events} events in one request; this tenant's quota is {limit}"),
                    None,
                ));
            }
        }
        if let Some(limit) = quotas.stored_bytes {
            let stored = self.live.stored_bytes();
            if stored >= limit {
                return Err(quota_error(
                    format!(
                        "the tenant stores {stored} bytes, its quota is {limit}: ingest resumes when retention frees space"
                    ),
                    Some(60),
                ));
            }
        }
        let mut bucket = self.bucket.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(bucket) = bucket.as_mut() {
            if let Err(seconds) = bucket.take(bytes as u64, Instant::now()) {
                let rate = quotas.ingest_bytes_per_second.unwrap_or_default();
                return Err(quota_error(
                    format!("over the ingest rate quota of {rate} bytes/s"),
                    Some(seconds),
                ));
            }
        }
        Ok(())
    }
}

fn bucket_of(quotas: &Quotas) -> Option<TokenBucket> {
    quotas
        .ingest_bytes_per_second
        .map(|rate| TokenBucket::new(rate, quotas.ingest_burst_bytes))
}

fn quota_error(message: String, retry_after: Option<u64>) -> ApiError {
    ApiError {
        status: StatusCode::TOO_MANY_REQUESTS,
        message,
        position: None,
        retry_after: Some(retry_after.unwrap_or(1)),
        es_kind: None,
        index: None,
    }
}

/// The background thread: flushes, memory compactions, merges and retention, one step at a
/// time, until `stop`.
fn spawn_background(
    live: Arc<LiveIndex>,
    stop: Arc<AtomicBool>,
    spec: Arc<RwLock<TenantSpec>>,
) -> JoinHandle<()> {
    std::thread::Builder::new()
        .name("quarry-background".into())
        .spawn(move || {
            // Retention is checked once a minute (and at start); blocks that could not be
            // read at start are tried again every 30 s.
            let mut next_retention = Instant::now();
            let mut next_reopen = Instant::now() + REOPEN_PERIOD;
            let mut next_adoption = Instant::now() + ADOPT_PERIOD;
            while !stop.load(Ordering::Relaxed) {
                if Instant::now() >= next_reopen {
                    next_reopen = Instant::now() + REOPEN_PERIOD;
                    live.reopen_unreadable();
                }
                if Instant::now() >= next_adoption {
                    next_adoption = Instant::now() + ADOPT_PERIOD;
                    match live.adopt_silent_writers() {
                        Ok(0) => {}
                        Ok(taken) => tracing::info!(
                            tenant = live.tenant(),
                            taken,
                            "took over the blocks of indexers that fell silent"
                        ),
                        Err(error) => {
                            tracing::warn!(%error, "taking over silent indexers' blocks failed; retrying")
                        }
                    }
                }
                let retention_seconds = spec
                    .read()
                    .unwrap_or_else(PoisonError::into_inner)
                    .retention_seconds;
                if let Some(seconds) = retention_seconds {
                    if Instant::now() >= next_retention {
                        next_retention = Instant::now() + RETENTION_PERIOD;
                        let cutoff = quarry_query::time::now_nanos().saturating_sub(
                            i64::try_from(seconds)
                                .unwrap_or(i64::MAX / 1_000_000_000)
                                .saturating_mul(1_000_000_000),
                        );
                        match live.drop_blocks_before(cutoff) {
                            Ok(0) => {}
                            Ok(dropped) => tracing::info!(
                                tenant = live.tenant(),
                                dropped,
                                "retention deleted blocks"
                            ),
                            Err(error) => tracing::error!(%error, "retention failed; retrying"),
                        }
                    }
                }
                let pause = match live.background_step() {
                    Ok(true) => Duration::ZERO,
                    Ok(false) => Duration::from_millis(100),
                    Err(error) => {
                        tracing::error!(%error, "background work failed; retrying");
                        Duration::from_secs(1)
                    }
                };
                std::thread::sleep(pause);
            }
        })
        .expect("spawning the background thread")
}

const RETENTION_PERIOD: Duration = Duration::from_secs(60);
const REOPEN_PERIOD: Duration = Duration::from_secs(30);
/// How often a writer of a shared catalog looks for silent writers to take over.
const ADOPT_PERIOD: Duration = Duration::from_secs(5);

/// The sealer thread: seal rounds for ingests waiting to be visible (`LiveIndex::run_sealer`).
/// A searcher's tenant, or a writer's of a shared catalog: reads the catalog again every
/// `REFRESH_PERIOD` (blocks published, merged, expired by the other nodes).
fn spawn_refresher(live: Arc<LiveIndex>, stop: Arc<AtomicBool>) -> JoinHandle<()> {
    std::thread::Builder::new()
        .name("quarry-refresher".into())
        .spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                match live.refresh() {
                    Ok((0, 0)) => {}
                    Ok((added, retired)) => {
                        tracing::debug!(tenant = live.tenant(), added, retired, "blocks refreshed")
                    }
                    Err(error) => {
                        tracing::warn!(tenant = live.tenant(), %error, "refreshing the catalog failed; retrying")
                    }
                }
                // In short steps, so that a stop is quick.
                let until = Instant::now() + crate::live::REFRESH_PERIOD;
                while Instant::now() < until && !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
        })
        .expect("spawning the refresher thread")
}

fn spawn_sealer(live: Arc<LiveIndex>, stop: Arc<AtomicBool>) -> JoinHandle<()> {
    std::thread::Builder::new()
        .name("quarry-sealer".into())
        .spawn(move || live.run_sealer(&stop))
        .expect("spawning the sealer thread")
}

/// The secret a request presents: its API key or the admin token, in any of the forms
/// Elasticsearch clients send it:
/// - `Authorization: Bearer <key>`;
/// - `Authorization: Basic base64(user:<key>)`: the password is the key, the user name is not
///   checked (shippers such as rsyslog's omelasticsearch know only a user and a password;
///   by convention the user is the tenant's name);
/// - `Authorization: ApiKey <key>` or `ApiKey base64(id:<key>)` (the Python client's
///   `api_key=(id, key)`): the part after the colon is the key.
fn presented_secret(headers: &HeaderMap) -> Option<String> {
    use base64::Engine as _;
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, credentials) = value.trim().split_once(' ')?;
    let credentials = credentials.trim();
    let decoded = || {
        base64::engine::general_purpose::STANDARD
            .decode(credentials)
            .ok()
            .and_then(|bytes| String::from_utf8(bytes).ok())
    };
    let after_colon = |pair: String| pair.split_once(':').map(|(_, key)| key.to_owned());
    match scheme.to_ascii_lowercase().as_str() {
        "bearer" => Some(credentials.to_owned()),
        "basic" => decoded().and_then(after_colon),
        "apikey" => Some(
            decoded()
                .and_then(after_colon)
                .unwrap_or_else(|| credentials.to_owned()),
        ),
        _ => None,
    }
}

/// A hash no key has (compared against when the tenant is unknown or keyless, so that every
/// refusal costs the same).
const NO_KEY: [u8; 32] = [0xff; 32];

const NEEDS_KEY: &str = "this server needs an API key: send Authorization: Bearer <key> (or Basic with the key as the password, or ApiKey)";

fn unauthorized(message: &str) -> ApiError {
    ApiError::new(StatusCode::UNAUTHORIZED, message)
}

fn not_found(tenant: &str) -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, format!("unknown tenant {tenant:?}"))
}

impl AppState {
    /// The tenant a request may use, or why not. Without an admin token the server is
    /// keyless: any open tenant (only `default`). With one, the request needs
    /// `Authorization: Bearer` with the tenant's key or the admin token; a wrong or missing
    /// key is 401, and so is an unknown tenant for anyone but the admin, so that names cannot
    /// be probed. Every refusal hashes and compares the same way: no timing tells which.
    pub(crate) fn authorize(
        &self,
        tenant: &str,
        headers: &HeaderMap,
    ) -> Result<Arc<Tenant>, ApiError> {
        let found = self.open_tenant(tenant);
        let Some(admin) = &self.admin else {
            return found.ok_or_else(|| not_found(tenant));
        };
        let Some(token) = presented_secret(headers) else {
            return Err(unauthorized(NEEDS_KEY));
        };
        let presented = tenants::secret_hash(&token);
        let is_admin = tenants::hashes_equal(&presented, admin);
        let expected = found.as_ref().and_then(|t| t.key_hash()).unwrap_or(NO_KEY);
        let is_tenant = tenants::hashes_equal(&presented, &expected);
        match found {
            Some(found) if is_admin || is_tenant => Ok(found),
            None if is_admin => Err(not_found(tenant)),
            _ => Err(unauthorized("invalid API key for this tenant")),
        }
    }

    /// The open tenant named so, if any.
    pub(crate) fn open_tenant(&self, name: &str) -> Option<Arc<Tenant>> {
        self.tenants
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(name)
            .cloned()
    }

    pub(crate) fn all_tenants(&self) -> Vec<Arc<Tenant>> {
        self.tenants
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .cloned()
            .collect()
    }

    /// 401 when the server needs keys and the request has none.
    pub(crate) fn require_some_key(&self, headers: &HeaderMap) -> Result<(), ApiError> {
        if self.admin.is_some() && presented_secret(headers).is_none() {
            return Err(unauthorized(NEEDS_KEY));
        }
        Ok(())
    }

    /// 401/403 unless the request carries the admin token.
    pub(crate) fn require_admin(&self, headers: &HeaderMap) -> Result<(), ApiError> {
        let Some(admin) = &self.admin else {
            return Err(ApiError::new(
                StatusCode::FORBIDDEN,
                "tenants need an admin token: start quarry serve with --admin-token (or QUARRY_ADMIN_TOKEN)",
            ));
        };
        let presented = presented_secret(headers)
            .map(|secret| tenants::secret_hash(&secret))
            .unwrap_or(NO_KEY);
        if tenants::hashes_equal(&presented, admin) {
            Ok(())
        } else {
            Err(unauthorized("the tenants API needs the admin token"))
        }
    }
}

/// What the API shows of a tenant (never its key or the key's hash).
fn describe(tenant: &Tenant) -> JsonValue {
    let spec = tenant.spec();
    let searcher = tenant.live.published_snapshot();
    json!({
        "name": spec.name,
        "created": spec.created,
        "retention_seconds": spec.retention_seconds,
        "quotas": spec.quotas,
        "events": searcher.doc_count(),
        "blocks": searcher.blocks().len(),
        "stored_bytes": tenant.live.stored_bytes(),
    })
}

/// `POST /api/v1/tenants` `{"name", "retention": "30d", "quotas": {...}}`: 201 with the API
/// key, shown this once.
pub(crate) async fn create(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<impl IntoResponse, ApiError> {
    state.require_admin(&headers)?;
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct CreateRequest {
        name: String,
        #[serde(default)]
        retention: Option<String>,
        #[serde(default)]
        quotas: Quotas,
    }
    let request: CreateRequest =
        serde_json::from_slice(&body).map_err(|e| ApiError::bad_request(format!("body: {e}")))?;
    tenants::validate_name(&request.name).map_err(ApiError::bad_request)?;
    if request.name == DEFAULT_TENANT {
        return Err(ApiError::bad_request(
            "\"default\" is the keyless tenant (the admin token reaches it); choose another name",
        ));
    }
    let retention_seconds = retention_of(request.retention.as_deref())?;
    check_quotas(&request.quotas)?;
    let key = tenants::new_key().map_err(ApiError::internal)?;
    let spec = TenantSpec {
        name: request.name.clone(),
        key_sha256: Some(tenants::hex(&tenants::secret_hash(&key))),
        retention_seconds,
        quotas: request.quotas,
        created: quarry_index::event::format_time(quarry_query::time::now_nanos()),
        search_limits: Default::default(),
        aliases: Default::default(),
        closed: false,
    };
    let tenant = add_tenant(&state, spec).await?;
    let mut body = describe(&tenant);
    body["api_key"] = key.into();
    Ok((StatusCode::CREATED, Json(body)))
}

/// Opens a new tenant and adds it to the registry (409 if the name is taken).
pub(crate) async fn add_tenant(
    state: &Arc<AppState>,
    spec: TenantSpec,
) -> Result<Arc<Tenant>, ApiError> {
    let work = state.clone();
    blocking(move || add_tenant_now(&work, spec)).await
}

/// `add_tenant` on the calling thread (it opens files: not on an async worker).
pub(crate) fn add_tenant_now(state: &AppState, spec: TenantSpec) -> Result<Arc<Tenant>, ApiError> {
    let name = spec.name.clone();
    let registry = state
        .registry
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    if state.open_tenant(&spec.name).is_some() {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            format!("tenant {:?} exists", spec.name),
        ));
    }
    // Open first: a tenant the registry lists always opens.
    let tenant = Arc::new(
        Tenant::open(&state.data, spec.clone(), &state.ingest_config)
            .map_err(ApiError::internal)?,
    );
    if let Err(error) = registry.commit(std::slice::from_ref(&spec), &[]) {
        let _ = tenant.close(false);
        return Err(ApiError::internal(error));
    }
    state
        .tenants
        .write()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(spec.name.clone(), tenant.clone());
    tracing::info!(tenant = %name, "tenant created");
    Ok(tenant)
}

/// Changes the registry's tenant specs with `change` and gives the open tenants their new
/// aliases, under the registry lock (on the calling thread: it reads and writes files).
pub(crate) fn update_specs_now(
    state: &AppState,
    change: impl FnOnce(&mut [TenantSpec]) -> Result<(), ApiError>,
) -> Result<(), ApiError> {
    let registry = state
        .registry
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    let mut specs = registry.tenants().map_err(ApiError::internal)?;
    change(&mut specs)?;
    registry.commit(&specs, &[]).map_err(ApiError::internal)?;
    for spec in specs {
        if let Some(tenant) = state.open_tenant(&spec.name) {
            tenant.set_index_state(&spec);
        }
    }
    Ok(())
}

fn retention_of(text: Option<&str>) -> Result<Option<u64>, ApiError> {
    text.map(|text| {
        parse_interval(text)
            .map(|nanos| (nanos / 1_000_000_000).max(1) as u64)
            .map_err(|m| ApiError::bad_request(format!("retention: {m}")))
    })
    .transpose()
}

fn check_quotas(quotas: &Quotas) -> Result<(), ApiError> {
    if quotas.ingest_bytes_per_second == Some(0) {
        return Err(ApiError::bad_request(
            "quotas.ingest_bytes_per_second must be above 0",
        ));
    }
    Ok(())
}

/// `PATCH /api/v1/tenants/{name}` `{"retention": "7d" | null, "quotas": {...}}`: changes a
/// tenant's retention and quotas at once, without a restart (a key given replaces that
/// setting; `quotas` replaces all quotas; `null` removes). Durable in the registry first.
pub(crate) async fn update(
    State(state): State<Arc<AppState>>,
    UrlPath(name): UrlPath<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<JsonValue>, ApiError> {
    state.require_admin(&headers)?;
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct UpdateRequest {
        #[serde(default, with = "serde_with_null")]
        retention: Option<Option<String>>,
        #[serde(default, with = "serde_with_null")]
        quotas: Option<Option<Quotas>>,
    }
    let request: UpdateRequest =
        serde_json::from_slice(&body).map_err(|e| ApiError::bad_request(format!("body: {e}")))?;
    let tenant = state.open_tenant(&name).ok_or_else(|| not_found(&name))?;
    if name == DEFAULT_TENANT {
        return Err(ApiError::bad_request(
            "the default tenant has no retention or quotas",
        ));
    }
    let current = tenant.spec();
    let retention_seconds = match request.retention {
        None => current.retention_seconds,
        Some(text) => retention_of(text.as_deref())?,
    };
    let quotas = match request.quotas {
        None => current.quotas,
        Some(quotas) => quotas.unwrap_or_default(),
    };
    check_quotas(&quotas)?;
    let work = state.clone();
    let (tenant_name, new_quotas) = (name.clone(), quotas.clone());
    blocking(move || {
        let registry = work.registry.lock().unwrap_or_else(PoisonError::into_inner);
        let mut spec = registry
            .tenants()
            .map_err(ApiError::internal)?
            .into_iter()
            .find(|spec| spec.name == tenant_name)
            .ok_or_else(|| not_found(&tenant_name))?;
        spec.retention_seconds = retention_seconds;
        spec.quotas = new_quotas;
        registry.commit(&[spec], &[]).map_err(ApiError::internal)
    })
    .await?;
    tenant.reconfigure(retention_seconds, quotas);
    tracing::info!(tenant = %name, "tenant reconfigured");
    Ok(Json(describe(&tenant)))
}

/// A field that may be absent (keep), `null` (remove) or a value (set).
mod serde_with_null {
    use serde::{Deserialize, Deserializer};

    pub fn deserialize<'de, D, T>(deserializer: D) -> Result<Option<Option<T>>, D::Error>
    where
        D: Deserializer<'de>,
        T: Deserialize<'de>,
    {
        Option::<T>::deserialize(deserializer).map(Some)
    }
}

/// `GET /api/v1/tenants`.
pub(crate) async fn list(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
) -> Result<Json<JsonValue>, ApiError> {
    state.require_admin(&headers)?;
    let tenants: Vec<JsonValue> = state.all_tenants().iter().map(|t| describe(t)).collect();
    Ok(Json(json!({ "tenants": tenants })))
}

/// `GET /api/v1/tenants/{name}`.
pub(crate) async fn show(
    State(state): State<Arc<AppState>>,
    UrlPath(name): UrlPath<String>,
    headers: HeaderMap,
) -> Result<Json<JsonValue>, ApiError> {
    state.require_admin(&headers)?;
    let tenant = state.open_tenant(&name).ok_or_else(|| not_found(&name))?;
    Ok(Json(describe(&tenant)))
}

/// `DELETE /api/v1/tenants/{name}`: the tenant stops taking requests, its registry entry is
/// removed, then its catalog directory and WAL, each first renamed aside (one atomic step, so
/// a crash leaves either the tenant or a `.deleted-*` directory that the next start removes).
pub(crate) async fn delete(
    State(state): State<Arc<AppState>>,
    UrlPath(name): UrlPath<String>,
    headers: HeaderMap,
) -> Result<Json<JsonValue>, ApiError> {
    state.require_admin(&headers)?;
    if name == DEFAULT_TENANT {
        return Err(ApiError::bad_request(
            "the default tenant holds the data directory's own catalog and cannot be deleted",
        ));
    }
    remove_tenant(&state, &name).await?;
    Ok(Json(json!({ "deleted": name })))
}

/// A searcher follows the registry the indexers write: tenants created since are opened
/// (their catalogs as replicas), deleted ones closed, and every open tenant takes its spec
/// (key, aliases, limits) as registered. Returns how many were opened and closed.
pub(crate) fn follow_registry(state: &AppState) -> Result<(usize, usize), String> {
    let registry = state
        .registry
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    let specs = registry.tenants().map_err(|e| e.to_string())?;
    let listed: std::collections::HashSet<&str> = specs.iter().map(|s| s.name.as_str()).collect();
    let mut closed = 0;
    let gone: Vec<Arc<Tenant>> = {
        let mut open = state
            .tenants
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        let names: Vec<String> = open
            .keys()
            .filter(|name| {
                name.as_str() != crate::DEFAULT_TENANT && !listed.contains(name.as_str())
            })
            .cloned()
            .collect();
        names.iter().filter_map(|name| open.remove(name)).collect()
    };
    for tenant in gone {
        let _ = tenant.close(false);
        closed += 1;
    }
    let mut opened = 0;
    for spec in specs {
        if let Some(tenant) = state.open_tenant(&spec.name) {
            *tenant.spec.write().unwrap_or_else(PoisonError::into_inner) = spec;
            continue;
        }
        let name = spec.name.clone();
        let tenant =
            Tenant::open(&state.data, spec, &state.ingest_config).map_err(|e| e.to_string())?;
        state
            .tenants
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(name, Arc::new(tenant));
        opened += 1;
    }
    Ok((opened, closed))
}

/// Closes a tenant, drops what it holds in memory and deletes its files and registry entry
/// (404 if there is none; the default tenant is the caller's to refuse).
pub(crate) async fn remove_tenant(state: &Arc<AppState>, name: &str) -> Result<(), ApiError> {
    let work = state.clone();
    let deleted = name.to_owned();
    blocking(move || {
        let registry = work.registry.lock().unwrap_or_else(PoisonError::into_inner);
        let tenant = work
            .tenants
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&deleted)
            .ok_or_else(|| not_found(&deleted))?;
        let _ = tenant.close(false);
        // The catalog first: a crash after it leaves a registered tenant that opens empty,
        // never a catalog that a new tenant of the same name would inherit.
        work.ingest_config
            .metastore
            .drop_catalog(&deleted)
            .map_err(ApiError::internal)?;
        registry
            .commit(&[], &[deleted.as_str()])
            .map_err(ApiError::internal)?;
        // Its blocks last: a crash before leaves blocks no catalog names (removed if a tenant
        // of the name is created again), never a catalog naming blocks that are gone.
        if !work.ingest_config.storage.is_local() {
            let blocks = tenant.live.delete_all_blocks();
            tracing::info!(tenant = %deleted, blocks, "deleted the tenant's blocks from object storage");
        }
        for dir in [
            tenants::catalog_dir(&work.data, &deleted),
            tenants::wal_dir(&work.data, &deleted),
        ] {
            remove_dir_durably(&dir).map_err(ApiError::internal)?;
        }
        Ok(())
    })
    .await?;
    state.metrics.remove_tenant(name);
    tracing::info!(tenant = %name, "tenant deleted");
    Ok(())
}

/// Renames `dir` to `.deleted-NAME` beside it, syncs the parent, then removes it.
fn remove_dir_durably(dir: &Path) -> std::io::Result<()> {
    if !dir.exists() {
        return Ok(());
    }
    let parent = dir.parent().unwrap_or(Path::new("."));
    let name = dir.file_name().and_then(|n| n.to_str()).unwrap_or("tenant");
    let aside = parent.join(format!(".deleted-{name}"));
    if aside.exists() {
        std::fs::remove_dir_all(&aside)?;
    }
    std::fs::rename(dir, &aside)?;
    tenants::sync_dir(parent)?;
    std::fs::remove_dir_all(&aside)
}

/// Removes what deletions interrupted by a crash left (`.deleted-*` directories).
pub(crate) fn remove_leftovers(data: &Path) -> std::io::Result<()> {
    for parent in [data.join("tenants"), data.join("wal")] {
        let Ok(entries) = std::fs::read_dir(&parent) else {
            continue;
        };
        for entry in entries {
            let entry = entry?;
            if entry.file_name().to_string_lossy().starts_with(".deleted-") {
                std::fs::remove_dir_all(entry.path())?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod auth_tests {
    use super::*;

    fn secret_of(authorization: &str) -> Option<String> {
        let mut headers = HeaderMap::new();
        headers.insert(header::AUTHORIZATION, authorization.parse().unwrap());
        presented_secret(&headers)
    }

    #[test]
    fn keys_come_as_bearer_basic_password_or_api_key() {
        use base64::Engine as _;
        let b64 = |text: &str| base64::engine::general_purpose::STANDARD.encode(text);
        assert_eq!(secret_of("Bearer qk_1").as_deref(), Some("qk_1"));
        assert_eq!(secret_of("bearer  qk_1 ").as_deref(), Some("qk_1"));
        // Basic: the password is the key, whatever the user; a key may hold colons.
        let basic = format!("Basic {}", b64("logs:qk_2:x"));
        assert_eq!(secret_of(&basic).as_deref(), Some("qk_2:x"));
        assert_eq!(secret_of(&format!("Basic {}", b64("no-colon"))), None);
        assert_eq!(secret_of("Basic not base64!"), None);
        // ApiKey: base64(id:key) as the Python client's api_key=(id, key) sends, or the key.
        let api_key = format!("ApiKey {}", b64("any-id:qk_3"));
        assert_eq!(secret_of(&api_key).as_deref(), Some("qk_3"));
        assert_eq!(secret_of("ApiKey qk_4").as_deref(), Some("qk_4"));
        assert_eq!(secret_of("Digest qk_5"), None);
        assert_eq!(secret_of("qk_6"), None);
    }
}
