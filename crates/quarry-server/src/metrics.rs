//! `GET /metrics`: what the server is doing, in the Prometheus/OpenMetrics text format
//! (`prometheus-client`).
//!
//! Counted as it happens: ingested events and bytes and refused requests per tenant, and
//! every request's latency in a histogram per endpoint (the route template, so tenant names in
//! paths do not multiply the series). Read at each scrape from the tenants' state: events,
//! blocks and bytes stored, events in memory, the WAL's queue and size, and the background
//! work's counts and total seconds (flushes, compactions of memory blocks, merges, seal rounds).

use crate::admin::Tenant;
use crate::live::LiveIndex;
use crate::{ApiError, AppState};
use axum::extract::{MatchedPath, Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct TenantLabel {
    pub(crate) tenant: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct RefusedLabels {
    pub(crate) tenant: String,
    /// `quota` or `memory`.
    pub(crate) reason: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    endpoint: String,
    method: String,
    status: u16,
}

fn latency_histogram() -> Histogram {
    // 100 µs to ~26 s.
    Histogram::new(exponential_buckets(0.0001, 2.0, 19))
}

/// Per-tenant values read at scrape time: (name, help, read).
type Reading = (
    &'static str,
    &'static str,
    fn(&crate::live::LiveIndex) -> u64,
);

const GAUGES: &[Reading] = &[
    (
        "quarry_memory_events",
        "Acknowledged events not yet in block files (the flush queue)",
        |l| l.memory_usage().0,
    ),
    (
        "quarry_memory_bytes",
        "Approximate memory those events take",
        |l| l.memory_usage().1 as u64,
    ),
    (
        "quarry_stored_bytes",
        "Bytes of block files and memory blocks",
        |l| l.stored_bytes(),
    ),
    (
        "quarry_wal_queued_records",
        "WAL records queued for the writer thread",
        |l| l.wal_queued(),
    ),
    ("quarry_wal_bytes", "Bytes of WAL segments on disk", |l| {
        l.wal_bytes()
    }),
];

const COUNTS: &[Reading] = &[
    ("quarry_flushes", "Flushes of memory to block files", |l| {
        l.stats().flushes.load(Ordering::Relaxed)
    }),
    ("quarry_compactions", "Merges of small memory blocks", |l| {
        l.stats().compactions.load(Ordering::Relaxed)
    }),
    ("quarry_merges", "Size-tiered merges of block files", |l| {
        l.stats().merges.load(Ordering::Relaxed)
    }),
    (
        "quarry_seal_rounds",
        "Seal rounds (active segments made searchable)",
        |l| l.stats().seal_rounds.load(Ordering::Relaxed),
    ),
];

/// Per-tenant totals of nanoseconds read at scrape time: (name, help, read).
type NanosReading = (&'static str, &'static str, fn(&LiveIndex) -> &AtomicU64);

const SECONDS: &[NanosReading] = &[
    ("quarry_flush_seconds", "Time spent flushing", |l| {
        &l.stats().flush_nanos
    }),
    (
        "quarry_compaction_seconds",
        "Time spent merging memory blocks",
        |l| &l.stats().compaction_nanos,
    ),
    (
        "quarry_merge_seconds",
        "Time spent merging block files",
        |l| &l.stats().merge_nanos,
    ),
];

/// Object storage, server-wide (every tenant's reads and writes): (name, help, read).
type ObjectReading = (
    &'static str,
    &'static str,
    fn(&quarry_store::object_blocks::ObjectStats) -> &AtomicU64,
);

const OBJECT_COUNTS: &[ObjectReading] = &[
    (
        "quarry_object_store_gets",
        "Byte ranges read from object storage (neighbours may share a request)",
        |s| &s.gets,
    ),
    (
        "quarry_object_store_fetched_bytes",
        "Bytes read from object storage",
        |s| &s.bytes_fetched,
    ),
    (
        "quarry_object_store_puts",
        "Blocks uploaded to object storage",
        |s| &s.puts,
    ),
    (
        "quarry_object_store_uploaded_bytes",
        "Bytes uploaded to object storage",
        |s| &s.bytes_uploaded,
    ),
    (
        "quarry_object_store_cache_hits",
        "Reads of remote blocks the local cache answered without a request",
        |s| &s.cache_hits,
    ),
    (
        "quarry_object_store_cache_evicted_bytes",
        "Bytes the disk cache of object storage let go to keep its budget",
        |s| &s.evicted_bytes,
    ),
    (
        "quarry_object_store_cache_corrupt_granules",
        "Cached granules kept from an earlier run that failed their crc and were fetched again",
        |s| &s.corrupt_granules,
    ),
];

/// The disk cache of object storage, read at scrape time: (name, help, read).
type CacheReading = (
    &'static str,
    &'static str,
    fn(&quarry_store::DiskCache) -> u64,
);

const OBJECT_GAUGES: &[CacheReading] = &[
    (
        "quarry_object_cache_bytes",
        "Bytes the disk cache of object storage holds",
        quarry_store::DiskCache::used,
    ),
    (
        "quarry_object_cache_budget_bytes",
        "Bytes the disk cache of object storage may hold (--disk-cache-size)",
        quarry_store::DiskCache::budget,
    ),
];

/// A counter of seconds.
type Seconds = Counter<f64, AtomicU64>;

pub(crate) struct Metrics {
    registry: Registry,
    pub(crate) ingested_events: Family<TenantLabel, Counter>,
    pub(crate) ingested_bytes: Family<TenantLabel, Counter>,
    pub(crate) failed_lines: Family<TenantLabel, Counter>,
    pub(crate) refused: Family<RefusedLabels, Counter>,
    overloaded: Counter,
    requests: Family<RequestLabels, Histogram, fn() -> Histogram>,
    events: Family<TenantLabel, Gauge>,
    blocks: Family<TenantLabel, Gauge>,
    damaged_blocks: Family<TenantLabel, Gauge>,
    gauges: Vec<Family<TenantLabel, Gauge>>,
    counts: Vec<Family<TenantLabel, Counter>>,
    seconds: Vec<Family<TenantLabel, Seconds>>,
    object_counts: Vec<Counter>,
    object_gauges: Vec<Gauge>,
}

impl Metrics {
    pub(crate) fn new() -> Metrics {
        let mut registry = Registry::default();
        let ingested_events = Family::<TenantLabel, Counter>::default();
        registry.register(
            "quarry_ingested_events",
            "Events acknowledged",
            ingested_events.clone(),
        );
        let ingested_bytes = Family::<TenantLabel, Counter>::default();
        registry.register(
            "quarry_ingested_bytes",
            "Bytes of request bodies (decoded) acknowledged",
            ingested_bytes.clone(),
        );
        let failed_lines = Family::<TenantLabel, Counter>::default();
        registry.register(
            "quarry_failed_lines",
            "Lines or bulk items refused as malformed",
            failed_lines.clone(),
        );
        let refused = Family::<RefusedLabels, Counter>::default();
        registry.register(
            "quarry_refused_requests",
            "Ingest requests answered 429 (reason: quota or memory)",
            refused.clone(),
        );
        let overloaded = Counter::default();
        registry.register(
            "quarry_overloaded_requests",
            "Ingest requests answered 429 because in-flight bodies reached --max-inflight",
            overloaded.clone(),
        );
        let requests: Family<RequestLabels, Histogram, fn() -> Histogram> =
            Family::new_with_constructor(latency_histogram);
        registry.register(
            "quarry_http_request_duration_seconds",
            "Request latency by endpoint, method and status",
            requests.clone(),
        );
        let events = Family::<TenantLabel, Gauge>::default();
        registry.register("quarry_events", "Events searchable", events.clone());
        let blocks = Family::<TenantLabel, Gauge>::default();
        registry.register("quarry_blocks", "Blocks (files and memory)", blocks.clone());
        let damaged_blocks = Family::<TenantLabel, Gauge>::default();
        registry.register(
            "quarry_damaged_blocks",
            "Block files left out of answers: failed to open, to merge, or a checksum while read",
            damaged_blocks.clone(),
        );
        let gauges = GAUGES
            .iter()
            .map(|(name, help, _)| {
                let family = Family::<TenantLabel, Gauge>::default();
                registry.register(*name, *help, family.clone());
                family
            })
            .collect();
        let counts = COUNTS
            .iter()
            .map(|(name, help, _)| {
                let family = Family::<TenantLabel, Counter>::default();
                registry.register(*name, *help, family.clone());
                family
            })
            .collect();
        let seconds = SECONDS
            .iter()
            .map(|(name, help, _)| {
                let family = Family::<TenantLabel, Seconds>::default();
                registry.register(*name, *help, family.clone());
                family
            })
            .collect();
        let object_counts = OBJECT_COUNTS
            .iter()
            .map(|(name, help, _)| {
                let counter = Counter::default();
                registry.register(*name, *help, counter.clone());
                counter
            })
            .collect();
        let object_gauges = OBJECT_GAUGES
            .iter()
            .map(|(name, help, _)| {
                let gauge = Gauge::default();
                registry.register(*name, *help, gauge.clone());
                gauge
            })
            .collect();
        Metrics {
            object_counts,
            object_gauges,
            registry,
            ingested_events,
            ingested_bytes,
            failed_lines,
            refused,
            overloaded,
            requests,
            events,
            blocks,
            damaged_blocks,
            gauges,
            counts,
            seconds,
        }
    }

    pub(crate) fn count_overloaded(&self) {
        self.overloaded.inc();
    }

    pub(crate) fn tenant(name: &str) -> TenantLabel {
        TenantLabel {
            tenant: name.to_owned(),
        }
    }

    /// Forgets a deleted tenant's series.
    pub(crate) fn remove_tenant(&self, name: &str) {
        let label = Self::tenant(name);
        for family in [
            &self.ingested_events,
            &self.ingested_bytes,
            &self.failed_lines,
        ] {
            family.remove(&label);
        }
        for family in self
            .gauges
            .iter()
            .chain([&self.events, &self.blocks, &self.damaged_blocks])
        {
            family.remove(&label);
        }
        for family in &self.counts {
            family.remove(&label);
        }
        for family in &self.seconds {
            family.remove(&label);
        }
        for reason in ["quota", "memory"] {
            self.refused.remove(&RefusedLabels {
                tenant: name.to_owned(),
                reason: reason.to_owned(),
            });
        }
    }

    /// Brings the scrape-time series up to date with the tenants' state.
    fn read_tenants(&self, state: &AppState) {
        if let quarry_store::Storage::Object(storage) = &state.ingest_config.storage {
            for ((_, _, read), counter) in OBJECT_COUNTS.iter().zip(&self.object_counts) {
                let total = read(storage.stats()).load(Ordering::Relaxed);
                counter.inc_by(total.saturating_sub(counter.get()));
            }
            for ((_, _, read), gauge) in OBJECT_GAUGES.iter().zip(&self.object_gauges) {
                gauge.set(read(storage.cache()) as i64);
            }
        }
        for tenant in state.all_tenants() {
            let label = Self::tenant(&tenant.name());
            let live = &tenant.live;
            let snapshot = live.published_snapshot();
            self.events
                .get_or_create(&label)
                .set(snapshot.doc_count() as i64);
            self.blocks
                .get_or_create(&label)
                .set(snapshot.blocks().len() as i64);
            self.damaged_blocks
                .get_or_create(&label)
                .set(snapshot.damaged().len() as i64);
            for ((_, _, read), family) in GAUGES.iter().zip(&self.gauges) {
                family.get_or_create(&label).set(read(live) as i64);
            }
            // Counters only go up: add what happened since the last scrape.
            for ((_, _, read), family) in COUNTS.iter().zip(&self.counts) {
                let counter = family.get_or_create(&label);
                counter.inc_by(read(live).saturating_sub(counter.get()));
            }
            for ((_, _, read), family) in SECONDS.iter().zip(&self.seconds) {
                let counter = family.get_or_create(&label);
                let total = read(live).load(Ordering::Relaxed) as f64 / 1e9;
                counter.inc_by((total - counter.get()).max(0.0));
            }
        }
    }
}

impl AppState {
    /// Counts an acknowledged ingest.
    pub(crate) fn count_ingested(
        &self,
        tenant: &Tenant,
        events: usize,
        bytes: usize,
        failed: usize,
    ) {
        let label = Metrics::tenant(&tenant.name());
        self.metrics
            .ingested_events
            .get_or_create(&label)
            .inc_by(events as u64);
        self.metrics
            .ingested_bytes
            .get_or_create(&label)
            .inc_by(bytes as u64);
        self.metrics
            .failed_lines
            .get_or_create(&label)
            .inc_by(failed as u64);
    }

    /// Counts a refused ingest (429: a quota, or memory full).
    pub(crate) fn count_refused(&self, tenant: &Tenant, error: &ApiError) {
        if error.status != StatusCode::TOO_MANY_REQUESTS {
            return;
        }
        // Quota refusals say when to retry; a full memory waits for a flush and does not.
        let reason = if error.retry_after.is_some() {
            "quota"
        } else {
            "memory"
        };
        let labels = RefusedLabels {
            tenant: tenant.name(),
            reason: reason.to_owned(),
        };
        self.metrics.refused.get_or_create(&labels).inc();
    }
}

/// `GET /metrics` (with an admin token configured, only for it: the series name tenants).
pub(crate) async fn scrape(State(state): State<Arc<AppState>>, headers: HeaderMap) -> Response {
    if state.admin.is_some() {
        if let Err(error) = state.require_admin(&headers) {
            return error.into_response();
        }
    }
    let work = state.clone();
    let text = crate::blocking(move || {
        work.metrics.read_tenants(&work);
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &work.metrics.registry)
            .map_err(crate::ApiError::internal)?;
        Ok(text)
    })
    .await;
    match text {
        Ok(text) => (
            [(
                header::CONTENT_TYPE,
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
            )],
            text,
        )
            .into_response(),
        Err(error) => error.into_response(),
    }
}

/// Middleware: every request's latency, by route template, method and status.
pub(crate) async fn observe(
    State(state): State<Arc<AppState>>,
    request: Request,
    next: Next,
) -> Response {
    let started = Instant::now();
    let endpoint = request
        .extensions()
        .get::<MatchedPath>()
        // `/api/v1/:tenant/ingest`: braces inside label values trip some exposition parsers.
        .map(|path| path.as_str().replace('{', ":").replace('}', ""))
        .unwrap_or_else(|| "unmatched".to_owned());
    let method = request.method().as_str().to_owned();
    let response = next.run(request).await;
    let labels = RequestLabels {
        endpoint,
        method,
        status: response.status().as_u16(),
    };
    state
        .metrics
        .requests
        .get_or_create(&labels)
        .observe(started.elapsed().as_secs_f64());
    response
}
