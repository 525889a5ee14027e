//! The leaf API's server: a node's tenants searched as leaves of a distributed search.

use crate::convert;
use crate::proto;
use crate::proto::leaf_server::{Leaf, LeafServer};
use quarry_format::BlockReader;
use quarry_query::leaf::LeafQuery;
use quarry_query::Searcher;
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};
use subtle::ConstantTimeEq;
use tonic::{Request, Response, Status};

/// Where a leaf's data comes from: a snapshot of a tenant's searcher.
pub trait Tenants: Send + Sync + 'static {
    /// A snapshot of `tenant`'s blocks (None: the node has no such tenant).
    fn searcher(&self, tenant: &str) -> Result<Option<Arc<Searcher>>, String>;
    /// `all`, `indexer` or `searcher`.
    fn role(&self) -> &'static str {
        "all"
    }
    /// Whether this node can search any published block of the cluster: its catalogs are in
    /// a shared metastore and its blocks in shared object storage.
    fn shared(&self) -> bool {
        false
    }
    /// Whether block `id` of a snapshot is published (in the shared catalog), not an
    /// indexer's events in memory.
    fn is_published(&self, id: u64) -> bool {
        let _ = id;
        true
    }
    /// Reads `tenant`'s catalog again now (a searcher asked for blocks it has not seen yet).
    fn refresh(&self, tenant: &str) -> Result<(), String> {
        let _ = tenant;
        Ok(())
    }
    /// The blocks among `ids` that left `tenant`'s catalog lately (merged, expired) and are
    /// still readable: a plan made before may deal them.
    fn recently_gone(&self, tenant: &str, ids: &[u64]) -> Vec<Arc<BlockReader>> {
        let _ = (tenant, ids);
        Vec::new()
    }
    /// A live tail of `tenant`: the matches of `query` among the events this node makes
    /// searchable from now on by its own ingest, batch by batch (an error ends it). None: the
    /// node has no such tenant.
    fn tail(&self, tenant: &str, query: &LeafQuery) -> Result<Option<TailReceiver>, String> {
        let _ = (tenant, query);
        Ok(None)
    }
    /// A snapshot of `tenant` for a plan, with the writer of each published block in it,
    /// taken together so that no commit comes between (None: the node has no such tenant).
    fn planned(&self, tenant: &str) -> Result<Option<Planned>, String> {
        let Some(searcher) = self.searcher(tenant)? else {
            return Ok(None);
        };
        let blocks = searcher
            .block_sizes()
            .filter(|&(id, _)| self.is_published(id))
            .map(|(id, bytes)| (id, None, bytes))
            .collect();
        Ok(Some(Planned {
            searcher,
            writer: None,
            blocks,
        }))
    }
}

/// A live tail's matches as a leaf finds them (`Tenants::tail`), batch by batch.
pub type TailReceiver = tokio::sync::mpsc::Receiver<Result<Vec<TailMatch>, String>>;

/// One match of a live tail: its time, where it is on its node, and the event.
#[derive(Debug, Clone, PartialEq)]
pub struct TailMatch {
    pub time: i64,
    pub block: u64,
    pub doc: u32,
    pub event: Vec<(String, quarry_format::Value)>,
}

/// A snapshot planned (`Tenants::planned`).
pub struct Planned {
    pub searcher: Arc<Searcher>,
    /// The writer this node commits the tenant's blocks as, over a metastore several
    /// indexers share; None: a catalog of its own (or a searcher).
    pub writer: Option<String>,
    /// The published blocks of the snapshot, each with its writer (None: this node's own
    /// catalog, or not known) and its bytes (what the root deals them by).
    pub blocks: Vec<(u64, Option<String>, u64)>,
}

/// How long a searched snapshot is kept for the fetch that follows, and how many are.
const SNAPSHOT_TTL: Duration = Duration::from_secs(60);
const SNAPSHOTS_KEPT: usize = 256;

/// Snapshots searched recently, by number: a fetch reads the events from the blocks its
/// search saw, even if a merge or retention has replaced them since. Each is kept for its
/// keep-alive after its last use (`SNAPSHOT_TTL`, or longer for a scroll or a point in time,
/// which a root holds open); past `SNAPSHOTS_KEPT`, the least recently used of the ordinary
/// ones goes first.
#[derive(Default)]
struct Snapshots {
    next: u64,
    /// Least recently used first.
    kept: VecDeque<Kept>,
}

struct Kept {
    number: u64,
    used: Instant,
    keep: Duration,
    tenant: String,
    searcher: Arc<Searcher>,
}

impl Snapshots {
    fn keep(&mut self, tenant: &str, searcher: Arc<Searcher>, keep: Duration) -> u64 {
        let now = Instant::now();
        self.kept
            .retain(|kept| now.duration_since(kept.used) <= kept.keep);
        if self.kept.len() >= SNAPSHOTS_KEPT {
            let ordinary = self.kept.iter().position(|k| k.keep <= SNAPSHOT_TTL);
            self.kept.remove(ordinary.unwrap_or(0));
        }
        self.next += 1;
        self.kept.push_back(Kept {
            number: self.next,
            used: now,
            keep: keep.max(SNAPSHOT_TTL),
            tenant: tenant.to_owned(),
            searcher,
        });
        self.next
    }

    /// Snapshot `id` of `tenant`, kept its keep-alive (at least `keep`) more from now: an
    /// export or a scroll reads the same snapshot page after page, for as long as it takes.
    fn get(&mut self, tenant: &str, id: u64, keep: Duration) -> Option<Arc<Searcher>> {
        let now = Instant::now();
        let position = self.kept.iter().position(|kept| {
            kept.number == id && kept.tenant == tenant && now.duration_since(kept.used) <= kept.keep
        })?;
        let mut kept = self.kept.remove(position)?;
        kept.used = now;
        kept.keep = kept.keep.max(keep);
        let searcher = kept.searcher.clone();
        self.kept.push_back(kept);
        Some(searcher)
    }
}

/// The leaf API over a node's tenants.
pub struct LeafService<T: Tenants> {
    tenants: Arc<T>,
    snapshots: Arc<Mutex<Snapshots>>,
}

impl<T: Tenants> LeafService<T> {
    pub fn new(tenants: Arc<T>) -> LeafService<T> {
        LeafService {
            tenants,
            snapshots: Arc::default(),
        }
    }

    fn searcher(&self, tenant: &str) -> Result<Arc<Searcher>, Status> {
        match self.tenants.searcher(tenant) {
            Ok(Some(searcher)) => Ok(searcher),
            Ok(None) => Err(Status::not_found(format!("no tenant {tenant:?} here"))),
            Err(message) => Err(Status::unavailable(message)),
        }
    }

    /// The blocks of `tenant` that `scope` names (all of the current snapshot without one).
    /// Blocks asked for and not here, even after reading the catalog again, are left out and
    /// listed as damaged, so the answer says it lacks them.
    fn scoped(
        &self,
        tenant: &str,
        scope: Option<proto::Scope>,
        keep: Duration,
    ) -> Result<Arc<Searcher>, Status> {
        use proto::scope::Kind;
        match scope.and_then(|s| s.kind) {
            None => self.searcher(tenant),
            Some(Kind::UnpublishedOf(snapshot)) => {
                let planned = self.kept(tenant, snapshot, Duration::ZERO)?;
                Ok(Arc::new(
                    planned.only_blocks(|id| !self.tenants.is_published(id)),
                ))
            }
            Some(Kind::Searched(snapshot)) => self.kept(tenant, snapshot, keep),
            Some(Kind::Blocks(asked)) => {
                let wanted: std::collections::HashSet<u64> = asked.ids.iter().copied().collect();
                let has_all = |searcher: &Searcher| {
                    let held: std::collections::HashSet<u64> =
                        searcher.block_ids().iter().copied().collect();
                    let damaged = searcher.damaged().iter().filter_map(|d| d.block);
                    let known: std::collections::HashSet<u64> =
                        held.into_iter().chain(damaged).collect();
                    wanted.iter().all(|id| known.contains(id))
                };
                let mut searcher = self.searcher(tenant)?;
                if !has_all(&searcher) {
                    self.tenants.refresh(tenant).map_err(Status::unavailable)?;
                    searcher = self.searcher(tenant)?;
                }
                let mut share = searcher.only_blocks(|id| wanted.contains(&id));
                let held = |share: &Searcher| -> std::collections::HashSet<u64> {
                    share
                        .block_ids()
                        .iter()
                        .copied()
                        .chain(share.damaged().iter().filter_map(|d| d.block))
                        .collect()
                };
                let missing: Vec<u64> = {
                    let held = held(&share);
                    asked
                        .ids
                        .iter()
                        .copied()
                        .filter(|id| !held.contains(id))
                        .collect()
                };
                if !missing.is_empty() {
                    let gone = self.tenants.recently_gone(tenant, &missing);
                    if !gone.is_empty() {
                        share = share.with_more_blocks(gone);
                    }
                }
                let held = held(&share);
                let mut damaged = share.damaged().to_vec();
                for &id in &asked.ids {
                    if !held.contains(&id) {
                        damaged.push(quarry_query::DamagedBlock {
                            block: Some(id),
                            path: format!("block {id}").into(),
                            error: "not in this searcher's catalog (published after it last \
                                    read it, or merged or expired more than a while ago)"
                                .into(),
                            unreadable: true,
                        });
                    }
                }
                share = share.with_damaged(damaged);
                Ok(Arc::new(share))
            }
        }
    }
}

impl<T: Tenants> LeafService<T> {
    /// Snapshot `number` of `tenant`, kept by an earlier plan or search (from now on at
    /// least `keep` after each use).
    fn kept(&self, tenant: &str, number: u64, keep: Duration) -> Result<Arc<Searcher>, Status> {
        self.snapshots
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(tenant, number, keep)
            .ok_or_else(|| gone(tenant, number))
    }
}

fn gone(tenant: &str, snapshot: u64) -> Status {
    Status::failed_precondition(format!(
        "snapshot {snapshot} of tenant {tenant:?} is no longer kept (kept {} s): search again",
        SNAPSHOT_TTL.as_secs()
    ))
}

/// Searching reads blocks (files, object storage): off the async workers.
async fn blocking<R: Send + 'static>(
    work: impl FnOnce() -> Result<R, Status> + Send + 'static,
) -> Result<R, Status> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| Status::internal(format!("a leaf's search failed: {e}")))?
}

fn query_error(error: quarry_query::QueryError) -> Status {
    match error {
        quarry_query::QueryError::Parse(_) | quarry_query::QueryError::Invalid(_) => {
            Status::invalid_argument(error.to_string())
        }
        other => Status::internal(other.to_string()),
    }
}

#[tonic::async_trait]
impl<T: Tenants> Leaf for LeafService<T> {
    async fn info(
        &self,
        _: Request<proto::InfoRequest>,
    ) -> Result<Response<proto::InfoReply>, Status> {
        Ok(Response::new(proto::InfoReply {
            role: self.tenants.role().to_owned(),
            shared: self.tenants.shared(),
        }))
    }

    async fn plan(
        &self,
        request: Request<proto::PlanRequest>,
    ) -> Result<Response<proto::PlanReply>, Status> {
        let asked = request.into_inner();
        let tenant = asked.tenant;
        if asked.fresh {
            self.tenants.refresh(&tenant).map_err(Status::unavailable)?;
        }
        let planned = match self.tenants.planned(&tenant) {
            Ok(Some(planned)) => planned,
            Ok(None) => return Err(Status::not_found(format!("no tenant {tenant:?} here"))),
            Err(message) => return Err(Status::unavailable(message)),
        };
        let Planned {
            searcher,
            writer,
            blocks,
        } = planned;
        if asked.unanswered {
            let (published, published_bytes) = blocks
                .into_iter()
                .filter(|(_, w, _)| w.as_ref().is_some_and(|w| !asked.answering.contains(w)))
                .map(|(id, _, bytes)| (id, bytes))
                .unzip();
            return Ok(Response::new(proto::PlanReply {
                snapshot: 0,
                published,
                writer: String::new(),
                published_bytes,
            }));
        }
        // An indexer of a shared catalog lists its own blocks only (it may search others'
        // too: their writers list them, or a searcher does).
        let (published, published_bytes) = blocks
            .into_iter()
            .filter(|(_, w, _)| writer.is_none() || w == &writer)
            .map(|(id, _, bytes)| (id, bytes))
            .unzip();
        let snapshot = self
            .snapshots
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .keep(&tenant, searcher, SNAPSHOT_TTL);
        Ok(Response::new(proto::PlanReply {
            snapshot,
            published,
            writer: writer.unwrap_or_default(),
            published_bytes,
        }))
    }

    async fn stats(
        &self,
        request: Request<proto::StatsRequest>,
    ) -> Result<Response<proto::Stats>, Status> {
        let request = request.into_inner();
        let (tenant, query) = convert::query_from_proto(request.query)?;
        let searcher = self.scoped(&tenant, request.scope, Duration::ZERO)?;
        let stats = blocking(move || {
            let planned = searcher.leaf_plan(&query).map_err(query_error)?;
            searcher.leaf_stats(&planned).map_err(query_error)
        })
        .await?;
        Ok(Response::new(convert::stats_to_proto(&stats)))
    }

    async fn span(
        &self,
        request: Request<proto::StatsRequest>,
    ) -> Result<Response<proto::SpanReply>, Status> {
        let (tenant, query) = convert::query_from_proto(request.into_inner().query)?;
        let searcher = self.searcher(&tenant)?;
        let span = blocking(move || {
            let planned = searcher.leaf_plan(&query).map_err(query_error)?;
            searcher.leaf_span(&planned).map_err(query_error)
        })
        .await?;
        Ok(Response::new(convert::span_to_proto(span)))
    }

    async fn search(
        &self,
        request: Request<proto::SearchRequest>,
    ) -> Result<Response<proto::SearchReply>, Status> {
        let request = request.into_inner();
        let leaf_request = convert::request_from_proto(&request)?;
        let (tenant, query) = convert::query_from_proto(request.query)?;
        let stats = request.stats.map(convert::stats_from_proto);
        // A snapshot searched before is searched again under its own number.
        let searched_before = match &request.scope {
            Some(proto::Scope {
                kind: Some(proto::scope::Kind::Searched(number)),
            }) => Some(*number),
            _ => None,
        };
        let keep = Duration::from_millis(request.keep_ms);
        let searcher = self.scoped(&tenant, request.scope, keep)?;
        let searched = searcher.clone();
        let answer = blocking(move || {
            let planned = searched.leaf_plan(&query).map_err(query_error)?;
            searched
                .leaf_search(&planned, &leaf_request, stats.as_ref())
                .map_err(query_error)
        })
        .await?;
        let snapshot = searched_before.unwrap_or_else(|| {
            self.snapshots
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .keep(&tenant, searcher, keep)
        });
        Ok(Response::new(convert::answer_to_proto(&answer, snapshot)?))
    }

    async fn fetch(
        &self,
        request: Request<proto::FetchRequest>,
    ) -> Result<Response<proto::FetchReply>, Status> {
        let request = request.into_inner();
        let searcher = self.kept(&request.tenant, request.snapshot, Duration::ZERO)?;
        let hits: Vec<_> = request
            .hits
            .iter()
            .map(|hit| convert::hit_from_proto(hit, false))
            .collect();
        let query = match request.query {
            Some(query) => Some(convert::query_from_proto(Some(query))?.1),
            None => None,
        };
        let (events, matched) = blocking(move || {
            let events = searcher.fetch_partial(&hits).map_err(query_error)?;
            let matched = match &query {
                Some(query) => searcher.leaf_matched(query, &hits).map_err(query_error)?,
                None => Vec::new(),
            };
            Ok((events, matched))
        })
        .await?;
        Ok(Response::new(proto::FetchReply {
            events: events.iter().map(|e| convert::event_to_proto(e)).collect(),
            matched: matched
                .into_iter()
                .map(|names| proto::Names { names })
                .collect(),
        }))
    }

    async fn fields(
        &self,
        request: Request<proto::FieldsRequest>,
    ) -> Result<Response<proto::FieldsReply>, Status> {
        let request = request.into_inner();
        let searcher = self.scoped(&request.tenant, request.scope, Duration::ZERO)?;
        let reply = blocking(move || {
            let failed: Vec<quarry_query::leaf::FailedBlock> =
                searcher.damaged().iter().map(Into::into).collect();
            let mut reply = convert::fields_to_proto(&searcher.field_summary(), &failed);
            reply.docs = searcher.doc_count();
            reply.bytes = searcher.blocks().iter().map(|block| block.file_len()).sum();
            Ok(reply)
        })
        .await?;
        Ok(Response::new(reply))
    }

    type TailStream = std::pin::Pin<
        Box<dyn tokio_stream::Stream<Item = Result<proto::TailBatch, Status>> + Send + 'static>,
    >;

    async fn tail(
        &self,
        request: Request<proto::Query>,
    ) -> Result<Response<Self::TailStream>, Status> {
        let (tenant, query) = convert::query_from_proto(Some(request.into_inner()))?;
        let matches = match self.tenants.tail(&tenant, &query) {
            Ok(Some(matches)) => matches,
            Ok(None) => return Err(Status::not_found(format!("no tenant {tenant:?} here"))),
            Err(message) => return Err(Status::invalid_argument(message)),
        };
        use tokio_stream::StreamExt;
        let stream =
            tokio_stream::wrappers::ReceiverStream::new(matches).map(|batch| match batch {
                Ok(found) => Ok(proto::TailBatch {
                    hits: found
                        .iter()
                        .map(|m| proto::TailHit {
                            time: m.time,
                            block: m.block,
                            doc: m.doc,
                            event: Some(convert::event_to_proto(&m.event)),
                        })
                        .collect(),
                }),
                Err(message) => Err(Status::aborted(message)),
            });
        Ok(Response::new(Box::pin(stream)))
    }
}

/// Checks the cluster token of every call.
#[derive(Clone)]
struct TokenCheck {
    expected: Arc<[u8]>,
}

impl tonic::service::Interceptor for TokenCheck {
    fn call(&mut self, request: Request<()>) -> Result<Request<()>, Status> {
        let presented = request
            .metadata()
            .get("authorization")
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.strip_prefix("Bearer "))
            .unwrap_or("");
        if bool::from(presented.as_bytes().ct_eq(&self.expected)) {
            Ok(request)
        } else {
            Err(Status::unauthenticated(
                "the leaf API needs the cluster token (authorization: Bearer)",
            ))
        }
    }
}

/// Serves the leaf API over `tenants` on `listener` until `shutdown` completes; every call
/// must carry `token`.
pub async fn serve_leaf<T: Tenants>(
    listener: tokio::net::TcpListener,
    tenants: Arc<T>,
    token: &str,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), crate::ClusterError> {
    if token.is_empty() {
        return Err(crate::ClusterError::EmptyToken);
    }
    let addr: Option<SocketAddr> = listener.local_addr().ok();
    let check = TokenCheck {
        expected: token.as_bytes().into(),
    };
    let service = LeafServer::with_interceptor(LeafService::new(tenants), check);
    tonic::transport::Server::builder()
        .add_service(service)
        .serve_with_incoming_shutdown(
            // Without TCP_NODELAY a reply's last small frame waits for the peer's delayed ACK
            // (40 ms on Linux): every call took 40 ms more on loopback (bench/cluster-searchers.py).
            tokio_stream::StreamExt::map(
                tokio_stream::wrappers::TcpListenerStream::new(listener),
                |accepted| {
                    if let Ok(stream) = &accepted {
                        let _ = stream.set_nodelay(true);
                    }
                    accepted
                },
            ),
            shutdown,
        )
        .await
        .map_err(|e| crate::ClusterError::Leaf {
            endpoint: addr.map_or_else(|| "?".to_owned(), |a| a.to_string()),
            message: e.to_string(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot() -> Arc<Searcher> {
        Arc::new(Searcher::from_shared(Vec::new(), Default::default()))
    }

    #[test]
    fn a_long_kept_snapshot_outlives_a_crowd_of_ordinary_ones() {
        let mut snapshots = Snapshots::default();
        let held = snapshots.keep("t", snapshot(), Duration::from_secs(600));
        let first = snapshots.keep("t", snapshot(), Duration::ZERO);
        for _ in 0..2 * SNAPSHOTS_KEPT {
            snapshots.keep("t", snapshot(), Duration::ZERO);
        }
        assert_eq!(snapshots.kept.len(), SNAPSHOTS_KEPT);
        // The scroll's snapshot stays; the oldest ordinary one went.
        assert!(snapshots.get("t", held, Duration::ZERO).is_some());
        assert!(snapshots.get("t", first, Duration::ZERO).is_none());
        // Another tenant's number reads nothing.
        assert!(snapshots.get("u", held, Duration::ZERO).is_none());
    }

    #[test]
    fn a_snapshot_in_use_is_kept_from_its_last_use() {
        let mut snapshots = Snapshots::default();
        let number = snapshots.keep("t", snapshot(), Duration::ZERO);
        // As if kept 50 s ago, then used: kept another SNAPSHOT_TTL from now.
        snapshots.kept[0].used -= Duration::from_secs(50);
        let before = Instant::now();
        assert!(snapshots.get("t", number, Duration::ZERO).is_some());
        assert!(snapshots.kept[0].used >= before);
        // Past its keep-alive since its last use: gone.
        snapshots.kept[0].used -= SNAPSHOT_TTL + Duration::from_secs(1);
        assert!(snapshots.get("t", number, Duration::ZERO).is_none());
    }
}
