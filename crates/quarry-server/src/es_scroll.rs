//! Elasticsearch's scrolls and points in time: `_search?scroll=1m`, then
//! `POST /_search/scroll` page after page (what the Python client's `helpers.scan` does), and
//! `DELETE /_search/scroll`; `POST /{index}/_pit?keep_alive=1m`, searches with
//! `"pit": {"id"}` and `search_after`, and `DELETE /_pit`.
//!
//! A context holds the snapshot its first search ran on (`Arc<Searcher>`: the blocks it read
//! stay readable while merges and retention go on), so every page comes from the same data:
//! events ingested meanwhile are not seen, none is repeated or missed. A scroll keeps the
//! search and where the last page ended: the last hit's cursor for time and field sorts, the
//! number of hits already sent for relevance (re-ranked on the same snapshot, so at most
//! `MAX_RESULT_WINDOW` deep; sort by `_doc` or `@timestamp` to scroll further).
//!
//! Contexts live in memory until their keep-alive passes or they are cleared: at most
//! `MAX_OPEN_CONTEXTS` at once (429 beyond, as Elasticsearch's `search.max_open_scroll_context`),
//! each kept at most `MAX_KEEP_ALIVE`. A context answers only keys that may read its tenant.

use crate::es_api::{body_object, es_response, EsParams};
use crate::es_search::SearchPlan;
use crate::{ApiError, AppState};
use axum::body::Bytes;
use axum::extract::{Path as UrlPath, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use quarry_query::field_sort::SortCursor;
use quarry_query::leaf::QuerySource;
use quarry_query::{Cursor, SearchResponse, Searcher, SortOrder};
use serde_json::{json, Value as JsonValue};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Contexts open at once.
pub const MAX_OPEN_CONTEXTS: usize = 500;
/// The longest keep-alive a request may ask for (Elasticsearch's default maximum).
pub const MAX_KEEP_ALIVE: Duration = Duration::from_secs(24 * 3600);

/// The open scroll and point-in-time contexts.
#[derive(Default)]
pub(crate) struct Contexts {
    open: Mutex<HashMap<String, Context>>,
}

struct Context {
    tenant: String,
    held: Held,
    /// A scroll's search and position; `None` for a point in time.
    scroll: Option<Scroll>,
    expires: Instant,
}

/// What a context reads: a snapshot of this node's, or with `--peers` the snapshots the
/// cluster's leaves keep for it (for its keep-alive after each use).
#[derive(Clone)]
pub(crate) enum Held {
    Local(Arc<Searcher>),
    Cluster(quarry_cluster::root::Pin),
}

struct Scroll {
    plan: SearchPlan,
    /// In a cluster, the query as the leaves compile it.
    source: Option<QuerySource>,
    /// Hits per page.
    size: usize,
    position: Position,
}

/// Where the next page of a scroll starts.
enum Position {
    /// After this hit (time sorts).
    After(Cursor),
    /// After this hit (field sorts).
    SortAfter(SortCursor),
    /// After this many hits (relevance).
    Skip(usize),
    /// The last page had fewer hits than a page: nothing more.
    Done,
}

impl Contexts {
    fn purge_expired(open: &mut HashMap<String, Context>) {
        let now = Instant::now();
        open.retain(|_, context| context.expires > now);
    }

    fn insert(&self, context: Context) -> Result<String, ApiError> {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        Self::purge_expired(&mut open);
        if open.len() >= MAX_OPEN_CONTEXTS {
            return Err(ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                format!(
                    "{MAX_OPEN_CONTEXTS} scroll and point-in-time contexts are open: clear some (DELETE /_search/scroll, DELETE /_pit) or wait for their keep-alive to pass"
                ),
            ));
        }
        let id = new_id()?;
        open.insert(id.clone(), context);
        Ok(id)
    }

    /// Takes a context out for one use (a page), or says it is gone.
    fn take(&self, id: &str) -> Result<Context, ApiError> {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        Self::purge_expired(&mut open);
        open.remove(id).ok_or_else(|| missing(id))
    }

    fn put_back(&self, id: String, context: Context) {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        open.insert(id, context);
    }

    /// A point in time's tenant and what it reads, its keep-alive renewed (on the leaves
    /// too, from its next search on).
    pub(crate) fn point_in_time(
        &self,
        id: &str,
        keep_alive: Option<Duration>,
    ) -> Result<(String, Held), ApiError> {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        Self::purge_expired(&mut open);
        let context = open.get_mut(id).ok_or_else(|| missing(id))?;
        if let Some(keep_alive) = keep_alive {
            context.expires = Instant::now() + keep_alive;
            if let Held::Cluster(pin) = &mut context.held {
                pin.keep_for(keep_alive);
            }
        }
        Ok((context.tenant.clone(), context.held.clone()))
    }

    /// Closes the contexts named (of tenants `may_close` allows); returns how many were open.
    fn close(&self, ids: &[String], may_close: impl Fn(&str) -> bool) -> usize {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        Self::purge_expired(&mut open);
        let mut freed = 0;
        for id in ids {
            if open.get(id).is_some_and(|c| may_close(&c.tenant)) {
                open.remove(id);
                freed += 1;
            }
        }
        freed
    }

    fn close_all(&self, may_close: impl Fn(&str) -> bool) -> usize {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        let before = open.len();
        open.retain(|_, context| !may_close(&context.tenant));
        before - open.len()
    }
}

fn missing(id: &str) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        format!("No search context found for id [{id}] (cleared, or its keep-alive passed)"),
    )
    .with_kind("search_context_missing_exception")
}

/// 128 random bits in hex.
fn new_id() -> Result<String, ApiError> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(ApiError::internal)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// A keep-alive (`1m`, `30s`), at most `MAX_KEEP_ALIVE`.
pub(crate) fn keep_alive(text: &str, what: &str) -> Result<Duration, ApiError> {
    let nanos = quarry_query::time::parse_interval(text)
        .map_err(|e| ApiError::bad_request(format!("{what}: {e}")))?;
    let duration = Duration::from_nanos(nanos as u64);
    if duration > MAX_KEEP_ALIVE {
        return Err(ApiError::bad_request(format!(
            "{what}: a keep-alive of at most {}h",
            MAX_KEEP_ALIVE.as_secs() / 3600
        )));
    }
    Ok(duration)
}

/// The first page of a scroll: runs `plan` on a fresh snapshot of `tenant` and keeps the
/// context; the answer carries `_scroll_id`.
pub(crate) async fn start(
    state: &Arc<AppState>,
    tenant: &str,
    plan: SearchPlan,
    keep_alive: Duration,
    headers: &HeaderMap,
    started: Instant,
) -> Result<JsonValue, ApiError> {
    if tenant.contains([',', '*']) || tenant == "_all" {
        return Err(ApiError::bad_request(
            "unsupported: a scroll over several indices (scroll one index at a time)",
        ));
    }
    if plan.from() > 0 {
        return Err(ApiError::bad_request(
            "unsupported: [from] in a scroll (each page starts where the last ended)",
        ));
    }
    let live = state.authorize(tenant, headers)?.live.clone();
    let size = plan.request.limit;
    let run = plan.clone();
    let names = [tenant.to_owned()];
    let (snapshot, response, extras) = state
        .search(move || {
            let snapshot = live.published_snapshot();
            // A slice sees only its events, on every page.
            let snapshot = match run.slice {
                Some(slice) => Arc::new(
                    snapshot
                        .only_times(|time| slice.holds(time))
                        .map_err(ApiError::from_query)?,
                ),
                None => snapshot,
            };
            let (response, extras) = run.execute(&snapshot, &names)?;
            Ok((snapshot, response, extras))
        })
        .await?;
    let position = next_position(&plan, &response, size, 0);
    let mut answer = plan.answer(&[tenant.to_owned()], &response, extras, started);
    let context = Context {
        tenant: tenant.to_owned(),
        held: Held::Local(snapshot),
        scroll: Some(Scroll {
            plan,
            source: None,
            size,
            position,
        }),
        expires: Instant::now() + keep_alive,
    };
    answer["_scroll_id"] = state.contexts.insert(context)?.into();
    Ok(answer)
}

/// The first page of a scroll over a cluster (`--peers`): `plan` over index `name` with the
/// query `source`, every leaf keeping what it read for the keep-alive after each use; the
/// pages that follow read the same snapshots.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn start_in_cluster(
    state: &Arc<AppState>,
    root: &quarry_cluster::Root,
    tenant: &crate::Tenant,
    name: &str,
    plan: SearchPlan,
    source: QuerySource,
    keep_alive: Duration,
    started: Instant,
) -> Result<JsonValue, ApiError> {
    if plan.from() > 0 {
        return Err(ApiError::bad_request(
            "unsupported: [from] in a scroll (each page starts where the last ended)",
        ));
    }
    let size = plan.request.limit;
    let (response, extras, pin) = crate::es_search::run_in_cluster(
        state,
        root,
        tenant,
        &plan,
        source.clone(),
        None,
        keep_alive,
    )
    .await?;
    let pin = pin.ok_or_else(|| ApiError::internal("a cluster search without its snapshots"))?;
    let position = next_position(&plan, &response, size, 0);
    let mut answer = plan.answer(&[name.to_owned()], &response, extras, started);
    let context = Context {
        tenant: name.to_owned(),
        held: Held::Cluster(pin),
        scroll: Some(Scroll {
            plan,
            source: Some(source),
            size,
            position,
        }),
        expires: Instant::now() + keep_alive,
    };
    answer["_scroll_id"] = state.contexts.insert(context)?.into();
    Ok(answer)
}

/// Where the page after `response` starts (`skipped`: hits before it, for relevance).
fn next_position(
    plan: &SearchPlan,
    response: &SearchResponse,
    size: usize,
    skipped: usize,
) -> Position {
    let hits = &response.hits[plan.from().min(response.hits.len())..];
    let Some(last) = hits.last().filter(|_| hits.len() >= size) else {
        return Position::Done;
    };
    match (&plan.request.sort_field, plan.request.sort, last.cursor) {
        (Some(_), _, _) => last
            .sort_cursor
            .clone()
            .map_or(Position::Done, Position::SortAfter),
        (None, SortOrder::Relevance, _) => Position::Skip(skipped + hits.len()),
        (None, _, Some(cursor)) => Position::After(cursor),
        (None, _, None) => Position::Done,
    }
}

/// `GET|POST /_search/scroll` (and `/_search/scroll/{id}`): the next page.
pub(crate) async fn next(
    State(state): State<Arc<AppState>>,
    path_id: Option<UrlPath<String>>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let started = Instant::now();
    let answer = async {
        let params = EsParams::parse(query.as_deref())?;
        params.check("scroll")?;
        let body = body_object(&body, "the body")?;
        let mut id = path_id.map(|UrlPath(id)| id);
        let mut renew = params.get("scroll").map(str::to_owned);
        if let Some(value) = params.get("scroll_id") {
            id = Some(value.to_owned());
        }
        for (key, value) in &body {
            match (key.as_str(), value) {
                ("scroll_id", JsonValue::String(value)) => id = Some(value.clone()),
                ("scroll", JsonValue::String(value)) => renew = Some(value.clone()),
                (other, _) => {
                    return Err(ApiError::bad_request(format!(
                        "unsupported: [{other}] in a scroll request (scroll, scroll_id)"
                    )))
                }
            }
        }
        let id = id.ok_or_else(|| ApiError::bad_request("a scroll request needs a scroll_id"))?;
        let renew = renew.map(|text| keep_alive(&text, "scroll")).transpose()?;
        let mut context = state.contexts.take(&id)?;
        // The key must still read the tenant; the context is kept for the rightful owner.
        if let Err(error) = state.authorize(&context.tenant, &headers) {
            state.contexts.put_back(id, context);
            return Err(error);
        }
        let Some(mut scroll) = context.scroll.take() else {
            state.contexts.put_back(id.clone(), context);
            return Err(ApiError::bad_request(format!(
                "[{id}] is a point in time, not a scroll: search with \"pit\" and search_after"
            )));
        };
        let total_as_int = params.flag("rest_total_hits_as_int", false)?;
        if let (Some(renew), Held::Cluster(pin)) = (renew, &mut context.held) {
            pin.keep_for(renew);
        }
        let page = page(
            &state,
            &context.tenant,
            &context.held,
            &scroll,
            total_as_int,
            started,
        )
        .await;
        let answer = match page {
            Ok((answer, position)) => {
                scroll.position = position;
                Ok(answer)
            }
            Err(error) => Err(error),
        };
        if let Some(renew) = renew {
            context.expires = Instant::now() + renew;
        }
        let tenant = context.tenant.clone();
        context.scroll = Some(scroll);
        state.contexts.put_back(id.clone(), context);
        let mut answer = answer?;
        answer["_scroll_id"] = id.into();
        tracing::debug!(%tenant, "scroll page");
        Ok(answer)
    }
    .await;
    es_response(answer.map(|body| body.to_string()))
}

/// `plan` over what a scroll reads (`source`: its query, for a cluster's leaves).
async fn run_held(
    state: &Arc<AppState>,
    tenant: &str,
    held: &Held,
    plan: &SearchPlan,
    source: Option<&QuerySource>,
) -> Result<SearchResponse, ApiError> {
    match (held, state.root.as_ref(), source) {
        (Held::Local(snapshot), _, _) => {
            let (snapshot, run) = (snapshot.clone(), plan.clone());
            let (response, _) = state.search(move || run.execute(&snapshot, &[])).await?;
            Ok(response)
        }
        (Held::Cluster(pin), Some(root), Some(source)) => {
            let open = state
                .open_tenant(tenant)
                .ok_or_else(|| crate::es_indices::no_such_index(tenant))?;
            let (response, _, _) = crate::es_search::run_in_cluster(
                state,
                root,
                &open,
                plan,
                source.clone(),
                Some(pin),
                Duration::ZERO,
            )
            .await?;
            Ok(response)
        }
        _ => Err(ApiError::internal(
            "a cluster's scroll on a node without --peers",
        )),
    }
}

/// One page of a scroll after its position, and the position after it.
async fn page(
    state: &Arc<AppState>,
    tenant: &str,
    held: &Held,
    scroll: &Scroll,
    total_as_int: bool,
    started: Instant,
) -> Result<(JsonValue, Position), ApiError> {
    let mut plan = scroll.plan.without_aggregations();
    plan.set_total_as_int(total_as_int);
    let source = scroll.source.as_ref();
    let skipped = match &scroll.position {
        Position::Done => {
            let mut empty = plan.clone();
            empty.request.limit = 0;
            let response = run_held(state, tenant, held, &empty, source).await?;
            let answer = empty.answer(&[tenant.to_owned()], &response, Default::default(), started);
            return Ok((answer, Position::Done));
        }
        Position::After(cursor) => {
            plan.request.after = Some(*cursor);
            0
        }
        Position::SortAfter(cursor) => {
            plan.request.sort_after = Some(cursor.clone());
            0
        }
        Position::Skip(skipped) => {
            let window = skipped + scroll.size;
            if window > crate::MAX_SEARCH_LIMIT {
                return Err(ApiError::bad_request(format!(
                    "a scroll sorted by relevance goes {} hits deep at most; sort by _doc or @timestamp to scroll further",
                    crate::MAX_SEARCH_LIMIT
                )));
            }
            plan.request.limit = window;
            plan.set_from(*skipped);
            *skipped
        }
    };
    let response = run_held(state, tenant, held, &plan, source).await?;
    let position = next_position(&plan, &response, scroll.size, skipped);
    let answer = plan.answer(&[tenant.to_owned()], &response, Default::default(), started);
    Ok((answer, position))
}

/// `DELETE /_search/scroll` (`{"scroll_id": id or [ids]}`), `/_search/scroll/{ids}` and
/// `/_search/scroll/_all`.
pub(crate) async fn clear(
    State(state): State<Arc<AppState>>,
    path_ids: Option<UrlPath<String>>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let answer = (|| {
        let params = EsParams::parse(query.as_deref())?;
        params.check("clear scroll")?;
        state.require_some_key(&headers)?;
        let mut ids: Vec<String> = Vec::new();
        if let Some(UrlPath(list)) = &path_ids {
            ids.extend(list.split(',').map(str::to_owned));
        }
        if let Some(list) = params.get("scroll_id") {
            ids.extend(list.split(',').map(str::to_owned));
        }
        for (key, value) in body_object(&body, "the body")? {
            match (key.as_str(), value) {
                ("scroll_id", JsonValue::String(id)) => ids.push(id),
                ("scroll_id", JsonValue::Array(list)) => {
                    ids.extend(list.iter().filter_map(|v| v.as_str().map(str::to_owned)))
                }
                (other, _) => {
                    return Err(ApiError::bad_request(format!(
                        "unsupported: [{other}] in a clear-scroll request (scroll_id)"
                    )))
                }
            }
        }
        let may_close = |tenant: &str| state.authorize(tenant, &headers).is_ok();
        let freed = if ids.iter().any(|id| id == "_all") {
            state.contexts.close_all(may_close)
        } else {
            state.contexts.close(&ids, may_close)
        };
        if freed == 0 && !ids.is_empty() && !ids.iter().any(|id| id == "_all") {
            // Elasticsearch answers 404 when none of the ids was open.
            return Err(missing(&ids.join(",")));
        }
        Ok(json!({"succeeded": true, "num_freed": freed}).to_string())
    })();
    es_response(answer)
}

/// `POST /{index}/_pit?keep_alive=1m`: a point in time over the index's current snapshot.
pub(crate) async fn open_pit(
    State(state): State<Arc<AppState>>,
    UrlPath(index): UrlPath<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    let answer = async {
        let params = EsParams::parse(query.as_deref())?;
        params.check("open point in time")?;
        let keep_alive = keep_alive(
            params
                .get("keep_alive")
                .ok_or_else(|| ApiError::bad_request("a point in time needs keep_alive"))?,
            "keep_alive",
        )?;
        // One index: a point in time holds one snapshot.
        let rules = crate::es_indices::missing_rule(&params)?.reading();
        let (index, tenant) = match crate::es_indices::resolve(&state, &index, &headers, rules)?
            .as_slice()
        {
            [one] => one.clone(),
            [] => return Err(crate::es_indices::no_such_index(&index)),
            many => {
                return Err(ApiError::bad_request(format!(
                    "unsupported: a point in time over [{index}], which names {} indices (Quarry's reads one)",
                    many.len()
                )))
            }
        };
        let held = match &state.root {
            None => Held::Local(tenant.live.published_snapshot()),
            // Over a cluster: every leaf keeps the snapshot a search reads now.
            Some(root) => {
                let request = quarry_query::SearchRequest {
                    query: "*".to_owned(),
                    limit: 0,
                    ..quarry_query::SearchRequest::default()
                };
                let source = QuerySource::Text(request.query.clone());
                let (opened, pin) = crate::cluster_page(
                    root,
                    &tenant.name(),
                    source,
                    &request,
                    None,
                    keep_alive,
                )
                .await?;
                if opened.is_partial() {
                    return Err(ApiError::unavailable(format!(
                        "a point in time over [{index}] would lack data: {}",
                        opened.warnings[0]
                    )));
                }
                Held::Cluster(pin.ok_or_else(|| {
                    ApiError::internal("a cluster search without its snapshots")
                })?)
            }
        };
        let context = Context {
            tenant: index.clone(),
            held,
            scroll: None,
            expires: Instant::now() + keep_alive,
        };
        let id = state.contexts.insert(context)?;
        Ok::<_, ApiError>(json!({ "id": id }).to_string())
    }
    .await;
    es_response(answer)
}

/// `DELETE /_pit` `{"id": ...}`.
pub(crate) async fn close_pit(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let answer = (|| {
        state.require_some_key(&headers)?;
        let mut ids = Vec::new();
        for (key, value) in body_object(&body, "the body")? {
            match (key.as_str(), value) {
                ("id", JsonValue::String(id)) => ids.push(id),
                (other, _) => {
                    return Err(ApiError::bad_request(format!(
                        "unsupported: [{other}] in a close-point-in-time request (id)"
                    )))
                }
            }
        }
        let freed = state
            .contexts
            .close(&ids, |tenant| state.authorize(tenant, &headers).is_ok());
        if freed == 0 {
            return Err(missing(&ids.join(",")));
        }
        Ok(json!({"succeeded": true, "num_freed": freed}).to_string())
    })();
    es_response(answer)
}
