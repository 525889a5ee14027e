//! Tenant traffic control in a cluster (issue 29 item 5; LogStore §4.1): which indexer takes
//! a tenant's ingest. Any node answers the ingest API; a node over a shared metastore sends each
//! request to an indexer the routing table names for its tenant, weighted by the table's
//! shares, and the indexer takes it as any ingest (its WAL, its blocks: several indexers write
//! one tenant side by side, see quarry-store's postgres.rs).
//!
//! - **Rates.** Each indexer counts the ingest bytes it takes per tenant and reports a smoothed
//!   rate every beat (`quarry_ingest_rates`); each member beats with its HTTP API's URL and the
//!   rate it can take (`--ingest-capacity`).
//! - **Planning.** One node at a time, the holder of the `router` lease, plans every
//!   `PLAN_PERIOD` with quarry-routing's maximum flow (tenants → indexers, each indexer up to
//!   85% of its capacity, few moves) from the rates and the live indexers, and stores the table
//!   when it changes. A tenant the table does not name goes to its home indexer (rendezvous
//!   hashing), as before its first rate is seen.
//! - **Routing.** Every node reads the table and the live indexers each beat. A request goes to
//!   a routed indexer picked by the shares; one that refuses the connection is skipped for the
//!   next (nothing was sent: no event can be taken twice). An indexer that took the request
//!   and did not answer is a 502 naming it: the events may be in its WAL, and only the client
//!   can tell whether to send them again. A forwarded request carries `x-quarry-forwarded` and
//!   is taken where it lands. Elasticsearch's `_bulk` is routed by the index its path names,
//!   or (`/_bulk`) its first action names: any indexer takes any tenant's events, so the
//!   routes only spread the load, and a bulk over several indices is taken whole by one.
//! - **Idempotency keys.** A request with an `Idempotency-Key` goes to the routed indexer that
//!   key ranks first (rendezvous hashing), not to a pick by shares: its retry reaches the
//!   indexer that remembers the key for as long as the tenant's routes hold.

use crate::ApiError;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderName, Request, StatusCode};
use axum::response::{IntoResponse, Response};
use quarry_routing::{Indexer, Route, RouterConfig, RoutingTable, TenantRate};
use quarry_store::members::{Members, Traffic};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant};

/// How often the lease's holder plans the routes again.
pub const PLAN_PERIOD: Duration = Duration::from_secs(5);
/// The planning lease, and how long it lasts unrenewed.
const LEASE: &str = "router";
const LEASE_TTL: Duration = Duration::from_secs(15);
/// Rates are smoothed over about this long (an exponentially weighted mean).
const RATE_WINDOW: Duration = Duration::from_secs(10);
/// A rate reported longer ago than this is not counted (its node is gone).
const RATE_FRESH: Duration = Duration::from_secs(30);
/// The header of a request one node forwarded to another: taken where it lands.
pub const FORWARDED: &str = "x-quarry-forwarded";
/// What `--ingest-capacity` defaults to: about what one node takes on 2 cores (BENCHMARKS.md,
/// the ingest benchmark: 15-20 MB/s).
pub const DEFAULT_CAPACITY: u64 = 16 << 20;

/// A node's router: the routes as last read, and the ingest it took.
pub struct Router {
    /// This node's HTTP API's URL when it is an indexer (ingest routed to it is taken here).
    me: RwLock<Option<String>>,
    indexer: bool,
    view: RwLock<View>,
    /// Bytes taken here per tenant since the last report.
    taken: Mutex<HashMap<String, u64>>,
    /// The smoothed rates, and when they were last updated.
    rates: Mutex<(Instant, HashMap<String, f64>)>,
    client: reqwest::Client,
    picks: AtomicU64,
}

#[derive(Default)]
struct View {
    /// The live indexers, by HTTP URL.
    indexers: Vec<Indexer>,
    table: RoutingTable,
    version: i64,
}

impl Router {
    /// A router for a node that takes ingest itself (`indexer`) or only forwards it.
    pub fn new(indexer: bool) -> Router {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(2))
            .build()
            .unwrap_or_default();
        Router {
            me: RwLock::new(None),
            indexer,
            view: RwLock::default(),
            taken: Mutex::default(),
            rates: Mutex::new((Instant::now(), HashMap::new())),
            client,
            picks: AtomicU64::new(0),
        }
    }

    /// This node's HTTP API's URL, once it listens.
    pub fn set_me(&self, url: String) {
        *self.me.write().unwrap_or_else(PoisonError::into_inner) = Some(url);
    }

    pub fn me(&self) -> Option<String> {
        self.me
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Counts ingest this node takes for `tenant`.
    pub fn count(&self, tenant: &str, bytes: u64) {
        *lock(&self.taken).entry(tenant.to_owned()).or_default() += bytes;
    }

    /// The smoothed rates (bytes/s) per tenant, with what was taken since the last call.
    pub fn rates(&self) -> Vec<(String, u64)> {
        let taken = std::mem::take(&mut *lock(&self.taken));
        let mut rates = lock(&self.rates);
        let elapsed = rates.0.elapsed().as_secs_f64().max(1e-3);
        rates.0 = Instant::now();
        let weight = (elapsed / RATE_WINDOW.as_secs_f64()).min(1.0);
        for rate in rates.1.values_mut() {
            *rate *= 1.0 - weight;
        }
        for (tenant, bytes) in taken {
            *rates.1.entry(tenant).or_default() += weight * bytes as f64 / elapsed;
        }
        rates.1.retain(|_, rate| *rate >= 1.0);
        let mut out: Vec<(String, u64)> = rates
            .1
            .iter()
            .map(|(tenant, rate)| (tenant.clone(), *rate as u64))
            .collect();
        out.sort();
        out
    }

    /// Takes the live indexers and the stored routes (when their version changed).
    pub fn set_view(&self, indexers: Vec<Indexer>, routes: Option<(i64, String)>) {
        let mut view = self.view.write().unwrap_or_else(PoisonError::into_inner);
        view.indexers = indexers;
        if let Some((version, json)) = routes {
            if version != view.version {
                match table_from_json(&json) {
                    Ok(table) => {
                        view.table = table;
                        view.version = version;
                    }
                    Err(error) => {
                        tracing::warn!(%error, "the stored routing table is unreadable; keeping the last one")
                    }
                }
            }
        }
    }

    /// Where ingest for `tenant` goes, in order of preference: a routed indexer picked by the
    /// shares, the other routed ones, then the tenant's home indexer; live indexers only.
    pub fn targets(&self, tenant: &str) -> Vec<String> {
        self.targets_for(tenant, None)
    }

    /// `targets`; with an idempotency key, the routed indexers in an order that key alone
    /// sets (rendezvous hashing of key and indexer), so a retry goes where the first try went
    /// while the routes hold, and the indexer that remembers the key answers it.
    pub fn targets_for(&self, tenant: &str, key: Option<&str>) -> Vec<String> {
        let view = self.view.read().unwrap_or_else(PoisonError::into_inner);
        let live = |url: &str| view.indexers.iter().any(|ix| ix.name == url);
        let mut routes: Vec<&Route> = view
            .table
            .routes(tenant)
            .unwrap_or_default()
            .iter()
            .filter(|route| live(&route.indexer))
            .collect();
        let total: u64 = routes.iter().map(|route| route.rate.max(1)).sum();
        if let Some(key) = key {
            routes.sort_by_key(|route| {
                let mut hasher = std::collections::hash_map::DefaultHasher::new();
                std::hash::Hash::hash(&(key, &route.indexer), &mut hasher);
                std::cmp::Reverse(std::hash::Hasher::finish(&hasher))
            });
        } else if total > 0 {
            // Weighted: the n-th request's point in [0, total), spread by a fixed hash.
            let n = self.picks.fetch_add(1, Ordering::Relaxed);
            let mut point = n.wrapping_mul(0x9e37_79b9_7f4a_7c15) % total;
            let first = routes
                .iter()
                .position(|route| {
                    let weight = route.rate.max(1);
                    if point < weight {
                        return true;
                    }
                    point -= weight;
                    false
                })
                .unwrap_or(0);
            routes.swap(0, first);
        }
        let mut targets: Vec<String> = routes.iter().map(|r| r.indexer.clone()).collect();
        if let Some(home) = quarry_routing::home_indexer(tenant, &view.indexers) {
            let home = &view.indexers[home].name;
            if !targets.contains(home) {
                targets.push(home.clone());
            }
        }
        targets
    }

    /// Sends a request to `target` as it came (with `FORWARDED`), its answer as the target
    /// gave it. `Err(true)`: the connection was refused (nothing sent); `Err(false)`: sent,
    /// and no answer came.
    async fn forward(
        &self,
        target: &str,
        parts: &axum::http::request::Parts,
        body: axum::body::Bytes,
    ) -> Result<Response, (bool, String)> {
        let path = parts
            .uri
            .path_and_query()
            .map_or(parts.uri.path(), |p| p.as_str());
        let mut headers = HeaderMap::new();
        for (name, value) in &parts.headers {
            let skip = [
                axum::http::header::HOST,
                axum::http::header::CONTENT_LENGTH,
                axum::http::header::CONNECTION,
                axum::http::header::TRANSFER_ENCODING,
            ];
            if !skip.contains(name) {
                headers.append(name.clone(), value.clone());
            }
        }
        headers.insert(
            HeaderName::from_static(FORWARDED),
            "1".parse().expect("a header value"),
        );
        let sent = self
            .client
            .request(parts.method.clone(), format!("{target}{path}"))
            .headers(headers)
            .body(body)
            .send()
            .await
            .map_err(|e| (e.is_connect(), e.to_string()))?;
        let status = sent.status();
        let headers = sent.headers().clone();
        let body = sent.bytes().await.map_err(|e| (false, e.to_string()))?;
        let mut response = Response::new(Body::from(body));
        *response.status_mut() = status;
        for name in [
            axum::http::header::CONTENT_TYPE,
            axum::http::header::RETRY_AFTER,
        ] {
            if let Some(value) = headers.get(&name) {
                response.headers_mut().insert(name, value.clone());
            }
        }
        Ok(response)
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The tenant an ingest path names: `/api/v1/{tenant}/ingest` or `/api/v1/{tenant}/_bulk`.
/// The tenant an ingest path routes by: the native API's, or the index of Elasticsearch's
/// `/{index}/_bulk`. `Some("")` for `/_bulk`, which names its indices in the body
/// (`bulk_index`).
fn ingest_tenant(path: &str) -> Option<&str> {
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    match segments.as_slice() {
        ["api", "v1", tenant, "ingest" | "_bulk"] | [tenant, "_bulk"] => Some(tenant),
        ["_bulk"] => Some(""),
        _ => None,
    }
}

/// The index a bulk body's first action names (`{"index": {"_index": "logs"}}`), which routes
/// the whole body (any indexer takes any tenant's events: the routes only spread the load).
fn bulk_index(body: &[u8]) -> Option<String> {
    let first = body
        .split(|&b| b == b'\n')
        .find(|line| !line.trim_ascii().is_empty())?;
    let action: serde_json::Value = serde_json::from_slice(first).ok()?;
    let (_, meta) = action.as_object()?.iter().next()?;
    Some(meta.get("_index")?.as_str()?.to_owned())
}

/// Routes an ingest request to an indexer of its tenant (module documentation). Without a
/// router (one node, or a local metastore), it is taken here.
pub(crate) async fn route_ingest(
    State(state): State<Arc<crate::AppState>>,
    request: Request<Body>,
    next: axum::middleware::Next,
) -> Response {
    let Some(router) = state.ingest_router.clone() else {
        return next.run(request).await;
    };
    let Some(mut tenant) = ingest_tenant(request.uri().path()).map(str::to_owned) else {
        return next.run(request).await;
    };
    let length = request
        .headers()
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok())
        .unwrap_or(0);
    let forwarded = request.headers().contains_key(FORWARDED);
    if forwarded && router.indexer {
        router.count(&tenant, length);
        return next.run(request).await;
    }
    let key = request
        .headers()
        .get("idempotency-key")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let me = router.me();
    let mut targets = router.targets_for(&tenant, key.as_deref());
    let here = router.indexer
        && !tenant.is_empty()
        && (targets.is_empty() || targets.first() == me.as_ref());
    if here {
        router.count(&tenant, length);
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let body = match axum::body::to_bytes(body, state.max_body_bytes).await {
        Ok(body) => body,
        Err(error) => {
            return ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("reading the body: {error}"),
            )
            .into_response()
        }
    };
    if tenant.is_empty() {
        // `/_bulk`: routed by the index its first action names (a body naming none is
        // answered where it is, by the bulk handler's errors, or by an indexer).
        tenant = bulk_index(&body).unwrap_or_default();
        targets = router.targets_for(&tenant, key.as_deref());
    }
    let mut refused = Vec::new();
    for target in &targets {
        if Some(target) == me.as_ref() && router.indexer {
            router.count(&tenant, length);
            return next.run(Request::from_parts(parts, Body::from(body))).await;
        }
        match router.forward(target, &parts, body.clone()).await {
            Ok(response) => return response,
            Err((true, error)) => {
                tracing::warn!(indexer = %target, %error, "an indexer refused a forwarded ingest; trying the next");
                refused.push(target.clone());
            }
            Err((false, error)) => {
                return ApiError::new(
                    StatusCode::BAD_GATEWAY,
                    format!(
                        "forwarded to indexer {target}, which did not answer ({error}): it may \
                         have taken the events; send them again with an idempotency key to be sure"
                    ),
                )
                .into_response()
            }
        }
    }
    if router.indexer {
        router.count(&tenant, length);
        return next.run(Request::from_parts(parts, Body::from(body))).await;
    }
    ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        if refused.is_empty() {
            format!("no indexer is up to take tenant {tenant:?}'s ingest")
        } else {
            format!(
                "no indexer took tenant {tenant:?}'s ingest: {} refused the connection",
                refused.join(", ")
            )
        },
    )
    .into_response()
}

/// One beat of traffic control (blocking: PostgreSQL): reports this node's rates, reads the
/// live indexers and the routes into `router`.
pub fn beat(
    router: &Router,
    members: &Members,
    traffic: &Traffic,
    node: &str,
    alive: Duration,
) -> quarry_store::catalog::Result<()> {
    if router.indexer {
        traffic.report_rates(node, &router.rates())?;
    }
    router.set_view(live_indexers(members, alive)?, traffic.routes()?);
    Ok(())
}

fn live_indexers(
    members: &Members,
    alive: Duration,
) -> quarry_store::catalog::Result<Vec<Indexer>> {
    Ok(members
        .live(alive)?
        .into_iter()
        .filter(|m| m.role != "searcher" && !m.http.is_empty() && m.capacity > 0)
        .map(|m| Indexer {
            name: m.http,
            capacity: m.capacity,
        })
        .collect())
}

/// One planning round (blocking): with the `router` lease, plans the routes from the rates and
/// the live indexers and stores them when they changed. Returns the plan made, if any.
pub fn plan_round(
    members: &Members,
    traffic: &Traffic,
    node: &str,
    alive: Duration,
) -> quarry_store::catalog::Result<Option<quarry_routing::Plan>> {
    if !traffic.lease(LEASE, node, LEASE_TTL)? {
        return Ok(None);
    }
    let indexers = live_indexers(members, alive)?;
    if indexers.is_empty() {
        return Ok(None);
    }
    let rates: Vec<TenantRate> = traffic
        .rates(RATE_FRESH)?
        .into_iter()
        .map(|(tenant, rate)| TenantRate { tenant, rate })
        .collect();
    let current = match traffic.routes()? {
        Some((_, json)) => table_from_json(&json).unwrap_or_default(),
        None => RoutingTable::new(),
    };
    let plan = match quarry_routing::plan(&rates, &indexers, &current, &RouterConfig::default()) {
        Ok(plan) => plan,
        Err(error) => {
            tracing::warn!(%error, "planning the routes failed");
            return Ok(None);
        }
    };
    if plan.table != current {
        let version = traffic.store_routes(&table_to_json(&plan.table))?;
        tracing::info!(
            version,
            rebalanced = plan.rebalanced,
            rules = plan.table.rule_count(),
            demand = plan.demand,
            capacity = plan.capacity,
            "routes planned"
        );
    }
    for short in &plan.short {
        tracing::warn!(tenant = %short.tenant, rate = short.rate, routed = short.routed, "the indexers cannot take a tenant's rate: more indexers are needed");
    }
    Ok(Some(plan))
}

/// `{"tenant": [{"indexer": URL, "rate": bytes/s}, ...]}`.
pub fn table_to_json(table: &RoutingTable) -> String {
    let object: serde_json::Map<String, serde_json::Value> = table
        .iter()
        .map(|(tenant, routes)| {
            let routes = routes
                .iter()
                .map(|r| serde_json::json!({"indexer": r.indexer, "rate": r.rate}))
                .collect();
            (tenant.to_owned(), serde_json::Value::Array(routes))
        })
        .collect();
    serde_json::Value::Object(object).to_string()
}

pub fn table_from_json(json: &str) -> Result<RoutingTable, String> {
    let value: serde_json::Value = serde_json::from_str(json).map_err(|e| e.to_string())?;
    let object = value
        .as_object()
        .ok_or("the routing table is not an object")?;
    let mut table = RoutingTable::new();
    for (tenant, routes) in object {
        let routes = routes
            .as_array()
            .ok_or_else(|| format!("tenant {tenant:?}: routes are not a list"))?
            .iter()
            .map(|route| {
                Some(Route {
                    indexer: route.get("indexer")?.as_str()?.to_owned(),
                    rate: route.get("rate")?.as_u64()?,
                })
            })
            .collect::<Option<Vec<Route>>>()
            .ok_or_else(|| format!("tenant {tenant:?}: a route without indexer or rate"))?;
        table.insert(tenant, routes);
    }
    Ok(table)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn indexers(names: &[&str]) -> Vec<Indexer> {
        names
            .iter()
            .map(|name| Indexer {
                name: (*name).to_owned(),
                capacity: 100,
            })
            .collect()
    }

    #[test]
    fn a_table_survives_its_json() {
        let mut table = RoutingTable::new();
        table.insert(
            "big",
            vec![
                Route {
                    indexer: "http://a".into(),
                    rate: 70,
                },
                Route {
                    indexer: "http://b".into(),
                    rate: 30,
                },
            ],
        );
        table.insert("small", Vec::new());
        assert_eq!(table_from_json(&table_to_json(&table)).unwrap(), table);
        assert!(table_from_json(r#"{"t": [{"indexer": 3}]}"#).is_err());
    }

    /// Requests are spread by the table's shares (counted over many picks), dead indexers
    /// are skipped, and a tenant the table does not name goes to its home indexer.
    #[test]
    fn picks_follow_the_shares_and_skip_dead_indexers() {
        let router = Router::new(false);
        let mut table = RoutingTable::new();
        table.insert(
            "big",
            vec![
                Route {
                    indexer: "http://a".into(),
                    rate: 75,
                },
                Route {
                    indexer: "http://b".into(),
                    rate: 25,
                },
            ],
        );
        router.set_view(
            indexers(&["http://a", "http://b", "http://c"]),
            Some((1, table_to_json(&table))),
        );
        let mut firsts: HashMap<String, usize> = HashMap::new();
        for _ in 0..4000 {
            let targets = router.targets("big");
            assert!(targets.len() >= 2, "{targets:?}");
            *firsts.entry(targets[0].clone()).or_default() += 1;
        }
        let a = firsts["http://a"] as f64 / 4000.0;
        assert!((a - 0.75).abs() < 0.05, "{firsts:?}");
        assert!(!firsts.contains_key("http://c"));

        // b is down: every pick is a, then the home indexer if it is another.
        router.set_view(indexers(&["http://a", "http://c"]), None);
        for _ in 0..100 {
            assert_eq!(router.targets("big")[0], "http://a");
        }
        let home = router.targets("unrouted");
        assert_eq!(home.len(), 1);
        let expected =
            quarry_routing::home_indexer("unrouted", &indexers(&["http://a", "http://c"]));
        assert_eq!(home[0], ["http://a", "http://c"][expected.unwrap()]);
    }

    #[test]
    fn rates_are_smoothed_counts() {
        let router = Router::new(true);
        assert!(router.rates().is_empty());
        router.count("t", 1_000_000);
        let first = router.rates();
        assert_eq!(first.len(), 1);
        assert!(first[0].1 > 0);
        // Nothing more taken: the rate decays, never grows.
        std::thread::sleep(Duration::from_millis(20));
        let second = router.rates();
        assert!(
            second.is_empty() || second[0].1 <= first[0].1,
            "{first:?} {second:?}"
        );
    }

    #[test]
    fn ingest_paths_name_their_tenant() {
        assert_eq!(ingest_tenant("/api/v1/team-a/ingest"), Some("team-a"));
        assert_eq!(ingest_tenant("/api/v1/team-a/_bulk"), Some("team-a"));
        assert_eq!(ingest_tenant("/logs/_bulk"), Some("logs"));
        assert_eq!(ingest_tenant("/_bulk"), Some(""));
        assert_eq!(ingest_tenant("/api/v1/team-a/search"), None);
        assert_eq!(ingest_tenant("/logs/_search"), None);
        let body = b"\n{\"create\": {\"_index\": \"team-b\", \"_id\": \"1\"}}\n{\"a\": 1}\n";
        assert_eq!(bulk_index(body).as_deref(), Some("team-b"));
        assert_eq!(bulk_index(b"{\"index\": {}}\n{}\n"), None);
        assert_eq!(bulk_index(b"not json\n"), None);
    }

    /// A request with an idempotency key goes to the same indexer every time while the
    /// routes hold (the one that remembers the key), and keys spread over the routes.
    #[test]
    fn a_key_picks_the_same_indexer_each_time() {
        let router = Router::new(false);
        let mut table = RoutingTable::new();
        let route = |indexer: &str| Route {
            indexer: indexer.into(),
            rate: 50,
        };
        table.insert("t", vec![route("http://a"), route("http://b")]);
        router.set_view(
            indexers(&["http://a", "http://b"]),
            Some((1, table_to_json(&table))),
        );
        let mut firsts: HashMap<String, usize> = HashMap::new();
        for k in 0..200 {
            let key = format!("batch-{k}");
            let first = router.targets_for("t", Some(&key));
            for _ in 0..5 {
                assert_eq!(router.targets_for("t", Some(&key)), first);
            }
            *firsts.entry(first[0].clone()).or_default() += 1;
        }
        assert!(
            firsts.len() == 2 && firsts.values().all(|&n| n > 60),
            "{firsts:?}"
        );
    }
}
