//! The root of a distributed search: scatter to every leaf, gather, merge, fetch.

use crate::convert;
use crate::proto;
use crate::proto::leaf_client::LeafClient;
use crate::ClusterError;
use quarry_format::Value;
use quarry_query::agg_tree::{TopHit, TreePartial};
use quarry_query::aggregation::AggPartial;
use quarry_query::leaf::{
    compare_hits, merge_answers, FailedBlock, LeafAnswer, LeafQuery, LeafRequest, PartialHit,
    TimeSpan,
};
use quarry_query::weight::GlobalStats;
use quarry_query::{FieldSummary, SortOrder};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant};
use tonic::metadata::MetadataValue;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Channel, Endpoint};
use tonic::{Request, Status};

/// Why an answer lacks an indexer that is down (`Root::set_absent`).
const ABSENT_INDEXER: &str = "an indexer that stopped beating without leaving the cluster: \
     events it acknowledged and had not published yet are missing until it is back";

/// How long a leaf may take over one call before the root gives up on it.
const LEAF_TIMEOUT: Duration = Duration::from_secs(30);

/// Adds the cluster token to every call.
#[derive(Clone)]
struct Token(MetadataValue<tonic::metadata::Ascii>);

impl tonic::service::Interceptor for Token {
    fn call(&mut self, mut request: Request<()>) -> Result<Request<()>, Status> {
        request
            .metadata_mut()
            .insert("authorization", self.0.clone());
        Ok(request)
    }
}

type Client = LeafClient<InterceptedService<Channel, Token>>;

/// One hit of a distributed search: where it is (which leaf, which block) and its event.
#[derive(Debug, Clone, PartialEq)]
pub struct RootHit {
    /// The leaf's endpoint.
    pub leaf: String,
    pub hit: PartialHit,
    pub event: Vec<(String, Value)>,
    /// The named clauses of the query (`_name` in the DSL) it matches.
    pub matched: Vec<String>,
}

/// What a distributed search answers.
#[derive(Debug, Default)]
pub struct RootAnswer {
    pub hits: Vec<RootHit>,
    pub count: Option<u64>,
    /// Without aggregations (with them, the buckets are the states' groups).
    pub histogram: Option<Vec<(i64, u64)>>,
    /// The aggregations' states merged over every leaf (`AggPartial::overall`/`buckets`
    /// make the results).
    pub aggregations: Option<AggPartial>,
    /// The nested aggregations' states merged over every leaf (`TreePartial::results`).
    pub tree: Option<TreePartial>,
    /// Blocks leaves left out.
    pub failed_blocks: Vec<(String, FailedBlock)>,
    /// Leaves that did not answer, with why: the answer lacks their data.
    pub failed_leaves: Vec<(String, String)>,
    /// The snapshots the search read: later pages searched over them (`Root::search_pinned`)
    /// see the cluster as this one did.
    pub pin: Option<Pin>,
}

/// The snapshots one search read, leaf by leaf (each kept by its leaf for a while after its
/// last use): an export's pages read one snapshot of the cluster, as on one node, so
/// ingest, flushes and merges under way neither repeat nor skip an event.
#[derive(Clone)]
pub struct Pin {
    leaves: Arc<Leaves>,
    /// (leaf, snapshot) of each share that answered.
    searched: Vec<(usize, u64)>,
    /// How long the leaves keep the snapshots after each use (zero: their own time).
    keep: Duration,
}

impl std::fmt::Debug for Pin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let shares: Vec<String> = self
            .searched
            .iter()
            .map(|&(leaf, snapshot)| format!("{}#{snapshot}", self.leaves.list[leaf].0))
            .collect();
        f.debug_tuple("Pin").field(&shares).finish()
    }
}

impl Pin {
    /// From now on the leaves keep the snapshots at least `keep` after each use (a point in
    /// time's or a scroll's keep-alive, renewed).
    pub fn keep_for(&mut self, keep: Duration) {
        self.keep = keep;
    }
}

/// The fields of a tenant over a cluster (`Root::fields`).
#[derive(Debug, Default)]
pub struct RootFields {
    pub fields: std::collections::BTreeMap<String, FieldSummary>,
    /// The tenant's events (deleted ones left out), and the bytes of its blocks.
    pub docs: u64,
    pub bytes: u64,
    /// Blocks leaves left out, and leaves that did not answer: the summary lacks them.
    pub failed_blocks: Vec<(String, FailedBlock)>,
    pub failed_leaves: Vec<(String, String)>,
}

impl RootAnswer {
    /// Whether data is missing from the answer (a leaf or a block left out).
    pub fn is_partial(&self) -> bool {
        !self.failed_blocks.is_empty() || !self.failed_leaves.is_empty()
    }
}

/// The root of distributed searches over a set of leaves, which may change (`set_endpoints`:
/// the cluster's members as the metastore lists them): each search runs over the set as it
/// was when the search began.
pub struct Root {
    /// `Bearer <token>`, for every call.
    token: MetadataValue<tonic::metadata::Ascii>,
    current: RwLock<Arc<Leaves>>,
    /// Members known to be down (`set_absent`).
    absent: RwLock<Vec<String>>,
}

impl Root {
    /// A root over the leaves at `endpoints` (`http://host:port`), calling them with `token`.
    /// Connections are made on first use, so a leaf that is down fails its part of each
    /// search, not the root. Call it within a Tokio runtime.
    pub fn new(endpoints: &[String], token: &str) -> Result<Root, ClusterError> {
        if token.is_empty() {
            return Err(ClusterError::EmptyToken);
        }
        let token: MetadataValue<tonic::metadata::Ascii> = format!("Bearer {token}")
            .parse()
            .map_err(|_| ClusterError::Endpoint {
                endpoint: String::new(),
                message: "the cluster token must be printable ASCII".into(),
            })?;
        let leaves = Leaves::connect(endpoints, &token)?;
        Ok(Root {
            token,
            current: RwLock::new(Arc::new(leaves)),
            absent: RwLock::default(),
        })
    }

    /// The leaves' endpoints now.
    pub fn endpoints(&self) -> Vec<String> {
        self.leaves().list.iter().map(|(e, _)| e.clone()).collect()
    }

    /// Searches from now on go to `endpoints` (searches under way finish over the set they
    /// began with). Returns whether the set changed.
    pub fn set_endpoints(&self, endpoints: &[String]) -> Result<bool, ClusterError> {
        if self.endpoints() == endpoints {
            return Ok(false);
        }
        let leaves = Leaves::connect(endpoints, &self.token)?;
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(leaves);
        Ok(true)
    }

    fn leaves(&self) -> Arc<Leaves> {
        self.current
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Answers `request` for `tenant` over every leaf: statistics first for a relevance sort,
    /// then every leaf's partial answer, merged, then the kept hits' events. When some leaves
    /// are searchers, the search is planned first: each indexer answers for its unpublished
    /// events, and the published blocks are dealt to the searchers; a searcher that fails has
    /// its blocks searched again by the others.
    pub async fn search(
        &self,
        tenant: &str,
        query: &LeafQuery,
        request: &LeafRequest,
    ) -> Result<RootAnswer, ClusterError> {
        self.search_kept(tenant, query, request, Duration::ZERO)
            .await
    }

    /// `search`, with the snapshots it reads kept by the leaves at least `keep` after each
    /// use (a scroll's or a point in time's keep-alive; `RootAnswer::pin` searches them again).
    pub async fn search_kept(
        &self,
        tenant: &str,
        query: &LeafQuery,
        request: &LeafRequest,
        keep: Duration,
    ) -> Result<RootAnswer, ClusterError> {
        let leaves = self.leaves();
        let mut answer = RootAnswer::default();
        let (parts, mut dealer) = leaves.plan(tenant, &mut answer).await?;
        let searched = leaves
            .search(
                tenant,
                query,
                request,
                parts,
                &mut dealer,
                &mut answer,
                keep,
            )
            .await?;
        answer.pin = Some(Pin {
            leaves,
            searched,
            keep,
        });
        for endpoint in self.absent() {
            answer
                .failed_leaves
                .push((endpoint, ABSENT_INDEXER.to_owned()));
        }
        Ok(answer)
    }

    /// Answers `request` over the snapshots an earlier search read (`RootAnswer::pin`), not
    /// planned afresh: what a leaf no longer keeps, or that does not answer, is a failed
    /// leaf (a partial answer), never searched over newer data.
    pub async fn search_pinned(
        &self,
        pin: &Pin,
        tenant: &str,
        query: &LeafQuery,
        request: &LeafRequest,
    ) -> Result<RootAnswer, ClusterError> {
        let parts = pin
            .searched
            .iter()
            .map(|&(leaf, snapshot)| Part {
                leaf,
                scope: Some(proto::Scope {
                    kind: Some(proto::scope::Kind::Searched(snapshot)),
                }),
                blocks: Vec::new(),
            })
            .collect();
        let mut dealer = Dealer {
            searchers: Vec::new(),
            endpoints: Vec::new(),
            bytes: Default::default(),
        };
        let mut answer = RootAnswer::default();
        let searched = pin
            .leaves
            .search(
                tenant,
                query,
                request,
                parts,
                &mut dealer,
                &mut answer,
                pin.keep,
            )
            .await?;
        answer.pin = Some(Pin {
            leaves: pin.leaves.clone(),
            searched,
            keep: pin.keep,
        });
        Ok(answer)
    }

    /// The events of the top hits an answer's aggregations kept (`RootAnswer::tree`), from
    /// the shares that found them (`pin`, the answer's), in the order of `hits`.
    pub async fn fetch_top_hits(
        &self,
        pin: &Pin,
        tenant: &str,
        hits: &[TopHit],
    ) -> Result<Vec<Vec<(String, Value)>>, ClusterError> {
        let mut located = Vec::with_capacity(hits.len());
        for hit in hits {
            let share = pin.searched.get(hit.origin as usize).ok_or_else(|| {
                ClusterError::Request(format!(
                    "a top hit of share {} of a search of {} shares",
                    hit.origin,
                    pin.searched.len()
                ))
            })?;
            located.push((*share, hit.partial()));
        }
        let fetched = pin.leaves.fetch(tenant, &located, None).await?;
        Ok(fetched.into_iter().map(|(event, _)| event).collect())
    }

    /// Every field of `tenant` over the cluster, planned as a search is (each block read by
    /// one leaf, an indexer's events in memory by that indexer), with the events per value
    /// type summed.
    pub async fn fields(&self, tenant: &str) -> Result<RootFields, ClusterError> {
        let leaves = self.leaves();
        let mut failures = RootAnswer::default();
        let (parts, mut dealer) = leaves.plan(tenant, &mut failures).await?;
        let replies = leaves
            .scatter(parts, &mut dealer, &mut failures, |mut client, scope| {
                let asked = proto::FieldsRequest {
                    tenant: tenant.to_owned(),
                    scope,
                };
                async move { client.fields(asked).await }
            })
            .await?;
        let mut answer = RootFields::default();
        for (part, reply) in replies {
            let endpoint = &leaves.list[part.leaf].0;
            answer.docs += reply.docs;
            answer.bytes += reply.bytes;
            for field in reply.fields {
                let summary = FieldSummary {
                    types: field.types.into_iter().collect(),
                    full_text: field.full_text,
                };
                answer.fields.entry(field.name).or_default().merge(&summary);
            }
            for failed in &reply.failed {
                let failed = convert::failed_from_proto(failed);
                answer.failed_blocks.push((endpoint.clone(), failed));
            }
        }
        answer.failed_leaves = failures.failed_leaves;
        for endpoint in self.absent() {
            answer
                .failed_leaves
                .push((endpoint, ABSENT_INDEXER.to_owned()));
        }
        Ok(answer)
    }

    /// Indexers down (they stopped beating without leaving): every answer says it may lack
    /// their unpublished events, until they are back or `set_absent` forgets them.
    pub fn set_absent(&self, endpoints: Vec<String>) {
        *self.absent.write().unwrap_or_else(PoisonError::into_inner) = endpoints;
    }

    fn absent(&self) -> Vec<String> {
        self.absent
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Before a histogram of width `auto`: the time span of the search over every leaf that
    /// answers.
    pub async fn span(&self, tenant: &str, query: &LeafQuery) -> Result<TimeSpan, ClusterError> {
        self.leaves().span(tenant, query).await
    }

    /// A live tail over the cluster: a stream from every leaf that takes ingest (`all`,
    /// `indexer`: every event is made searchable by one of them, once; searchers only read
    /// what they publish), merged as matches come. Every stream is open when this returns, so
    /// an event made searchable afterwards is sent; a leaf that cannot be tailed, or whose
    /// stream breaks, is sent as `TailItem::Failed`.
    pub async fn tail(
        &self,
        tenant: &str,
        query: &LeafQuery,
    ) -> Result<tokio::sync::mpsc::Receiver<TailItem>, ClusterError> {
        let leaves = self.leaves();
        let roles = leaves.roles().await;
        let (sender, receiver) = tokio::sync::mpsc::channel(TAIL_QUEUE);
        for (i, (endpoint, client)) in leaves.list.iter().enumerate() {
            if roles[i].as_ref().is_some_and(|r| r.name == "searcher") {
                continue;
            }
            let mut client = client.clone();
            let asked = convert::query_to_proto(tenant, query);
            let mut stream = match client.tail(asked).await {
                Ok(stream) => stream.into_inner(),
                Err(status) if status.code() == tonic::Code::InvalidArgument => {
                    return Err(ClusterError::Leaf {
                        endpoint: endpoint.clone(),
                        message: status.message().to_owned(),
                    })
                }
                // The leaf does not have the tenant: nothing of it there.
                Err(status) if status.code() == tonic::Code::NotFound => continue,
                Err(status) => {
                    let _ = sender.try_send(TailItem::Failed {
                        leaf: endpoint.clone(),
                        message: format!("{}: {}", status.code(), status.message()),
                    });
                    continue;
                }
            };
            let (sender, endpoint) = (sender.clone(), endpoint.clone());
            tokio::spawn(async move {
                if let Err(message) = forward_tail(&mut stream, &endpoint, &sender).await {
                    let leaf = endpoint;
                    let _ = sender.send(TailItem::Failed { leaf, message }).await;
                }
            });
        }
        Ok(receiver)
    }
}

/// Sends the matches a leaf's tail `stream` brings as `TailItem::Hit`s until it ends or the
/// reader goes; `Err` when the stream breaks or brings an event that cannot be read.
async fn forward_tail(
    stream: &mut tonic::Streaming<proto::TailBatch>,
    endpoint: &str,
    sender: &tokio::sync::mpsc::Sender<TailItem>,
) -> Result<(), String> {
    let broken = |status: Status| format!("{}: {}", status.code(), status.message());
    while let Some(batch) = stream.message().await.map_err(broken)? {
        for hit in batch.hits {
            let event = hit
                .event
                .map(convert::event_from_proto)
                .transpose()?
                .unwrap_or_default();
            let item = TailItem::Hit {
                leaf: endpoint.to_owned(),
                time: hit.time,
                block: hit.block,
                doc: hit.doc,
                event,
            };
            if sender.send(item).await.is_err() {
                return Ok(());
            }
        }
    }
    Ok(())
}

/// Matches of a cluster's live tail queued before the reader takes them (then the leaves'
/// streams wait, and so, past their own queues, do the leaves).
const TAIL_QUEUE: usize = 1024;

/// What a cluster's live tail sends (`Root::tail`).
#[derive(Debug, Clone, PartialEq)]
pub enum TailItem {
    /// A match: its time, where it is on its leaf, the event.
    Hit {
        leaf: String,
        time: i64,
        block: u64,
        doc: u32,
        event: Vec<(String, Value)>,
    },
    /// A leaf that could not be tailed or whose stream broke: the tail lacks its events.
    Failed { leaf: String, message: String },
}

/// A fetched hit: its event, and the named clauses of the query it matches.
type Fetched = (Vec<(String, Value)>, Vec<String>);

/// One set of leaves and what the root knows of them.
struct Leaves {
    list: Vec<(String, Client)>,
    /// The leaves' roles as last asked (`roles`).
    roles: Mutex<Option<(Instant, Vec<Option<LeafRole>>)>>,
}

impl Leaves {
    fn connect(
        endpoints: &[String],
        token: &MetadataValue<tonic::metadata::Ascii>,
    ) -> Result<Leaves, ClusterError> {
        let mut list = Vec::with_capacity(endpoints.len());
        for endpoint in endpoints {
            let channel = Endpoint::from_shared(endpoint.clone())
                .map_err(|e| ClusterError::Endpoint {
                    endpoint: endpoint.clone(),
                    message: e.to_string(),
                })?
                .connect_timeout(Duration::from_secs(5))
                .timeout(LEAF_TIMEOUT)
                .connect_lazy();
            let client = LeafClient::with_interceptor(channel, Token(token.clone()))
                .max_decoding_message_size(256 << 20);
            list.push((endpoint.clone(), client));
        }
        Ok(Leaves {
            list,
            roles: Mutex::default(),
        })
    }

    /// Searches `parts` (planned by `plan`, or pinned) into `answer`, each leaf keeping what
    /// it searched at least `keep` after each use; returns the (leaf, snapshot) of each share
    /// that answered.
    #[allow(clippy::too_many_arguments)]
    async fn search(
        &self,
        tenant: &str,
        query: &LeafQuery,
        request: &LeafRequest,
        parts: Vec<Part>,
        dealer: &mut Dealer,
        answer: &mut RootAnswer,
        keep: Duration,
    ) -> Result<Vec<(usize, u64)>, ClusterError> {
        let (parts, stats) = if request.sort == SortOrder::Relevance && request.limit > 0 {
            let replies = self
                .scatter(parts, dealer, answer, |mut client, scope| {
                    let asked = proto::StatsRequest {
                        query: Some(convert::query_to_proto(tenant, query)),
                        scope,
                    };
                    async move { client.stats(asked).await }
                })
                .await?;
            let mut total = GlobalStats::default();
            let mut parts = Vec::with_capacity(replies.len());
            for (part, stats) in replies {
                total.merge(&convert::stats_from_proto(stats));
                parts.push(part);
            }
            (parts, Some(total))
        } else {
            (parts, None)
        };

        // Each part's answer, with the snapshot it searched (for the fetch).
        let mut asked = convert::request_to_proto(tenant, query, request, stats.as_ref())?;
        asked.keep_ms = u64::try_from(keep.as_millis()).unwrap_or(u64::MAX);
        let replies = self
            .scatter(parts, dealer, answer, |mut client, scope| {
                let mut asked = asked.clone();
                asked.scope = scope;
                async move { client.search(asked).await }
            })
            .await?;
        let mut answers: Vec<(usize, u64, LeafAnswer)> = Vec::new();
        for (part, reply) in replies {
            match convert::answer_from_proto(&reply, request) {
                Ok(leaf_answer) => answers.push((part.leaf, reply.snapshot, leaf_answer)),
                Err(message) => answer
                    .failed_leaves
                    .push((self.list[part.leaf].0.clone(), message)),
            }
        }

        // The best hits of all leaves, each with the leaf and snapshot it came from (block
        // ids of independent nodes may collide); the top hits of aggregations tagged with
        // their share's place in `searched` (the pin's), which fetches them.
        let mut tagged: Vec<((usize, u64), PartialHit)> = Vec::new();
        for (origin, (index, snapshot, leaf_answer)) in answers.iter_mut().enumerate() {
            for hit in std::mem::take(&mut leaf_answer.hits) {
                tagged.push(((*index, *snapshot), hit));
            }
            for failed in &leaf_answer.failed {
                answer
                    .failed_blocks
                    .push((self.list[*index].0.clone(), failed.clone()));
            }
            if let Some(tree) = &mut leaf_answer.tree {
                tree.found_by(origin as u32);
            }
        }
        tagged.sort_by(|a, b| compare_hits(request, &a.1, &b.1));
        tagged.truncate(request.limit);
        let searched: Vec<(usize, u64)> = answers.iter().map(|(i, s, _)| (*i, *s)).collect();
        let merged = merge_answers(request, answers.into_iter().map(|(_, _, a)| a));
        answer.count = merged.count;
        answer.histogram = merged.histogram;
        answer.aggregations = merged.aggregations;
        answer.tree = merged.tree;

        let fetched = self.fetch(tenant, &tagged, Some(query)).await?;
        answer.hits = tagged
            .into_iter()
            .zip(fetched)
            .map(|(((index, _), hit), (event, matched))| RootHit {
                leaf: self.list[index].0.clone(),
                hit,
                event,
                matched,
            })
            .collect();
        Ok(searched)
    }

    /// The events of `hits`, each from the (leaf, snapshot) that found it, all leaves at
    /// once, with the named clauses of `query` each matches (a DSL query's); in the order of
    /// `hits`. The search answered a moment ago: a fetch that fails now fails the answer (its
    /// hits are already chosen), named.
    async fn fetch(
        &self,
        tenant: &str,
        hits: &[((usize, u64), PartialHit)],
        query: Option<&LeafQuery>,
    ) -> Result<Vec<Fetched>, ClusterError> {
        let mut events: Vec<Fetched> = vec![Default::default(); hits.len()];
        let query = query
            .filter(|q| matches!(q.source, quarry_query::leaf::QuerySource::Dsl { .. }))
            .map(|q| convert::query_to_proto(tenant, q));
        let mut shares: std::collections::BTreeMap<(usize, u64), Vec<usize>> = Default::default();
        for (position, (share, _)) in hits.iter().enumerate() {
            shares.entry(*share).or_default().push(position);
        }
        let mut fetching = tokio::task::JoinSet::new();
        for ((index, snapshot), positions) in shares {
            let mut client = self.list[index].1.clone();
            let asked = proto::FetchRequest {
                tenant: tenant.to_owned(),
                snapshot,
                hits: positions
                    .iter()
                    .map(|&p| convert::hit_to_proto(&hits[p].1))
                    .collect(),
                query: query.clone(),
            };
            fetching.spawn(async move { (index, positions, client.fetch(asked).await) });
        }
        while let Some(joined) = fetching.join_next().await {
            let (index, positions, reply) = joined.map_err(|e| ClusterError::Leaf {
                endpoint: String::new(),
                message: e.to_string(),
            })?;
            let endpoint = &self.list[index].0;
            let leaf_error = |message: String| ClusterError::Leaf {
                endpoint: endpoint.clone(),
                message,
            };
            let reply = reply
                .map_err(|status| leaf_error(status.message().to_owned()))?
                .into_inner();
            if reply.events.len() != positions.len() {
                return Err(leaf_error(format!(
                    "{} events for {} hits",
                    reply.events.len(),
                    positions.len()
                )));
            }
            for (&p, event) in positions.iter().zip(reply.events) {
                events[p].0 = convert::event_from_proto(event).map_err(leaf_error)?;
            }
            for (&p, names) in positions.iter().zip(reply.matched) {
                events[p].1 = names.names;
            }
        }
        Ok(events)
    }

    /// Asks every part with `call`, all at once: a searcher's share that fails is dealt to
    /// the other searchers and asked again (`failed`); any other failure is named in
    /// `answer`. The replies with the parts that gave them.
    async fn scatter<R, F, Fut>(
        &self,
        parts: Vec<Part>,
        dealer: &mut Dealer,
        answer: &mut RootAnswer,
        call: F,
    ) -> Result<Vec<(Part, R)>, ClusterError>
    where
        R: Send + 'static,
        F: Fn(Client, Option<proto::Scope>) -> Fut,
        Fut: std::future::Future<Output = Result<tonic::Response<R>, Status>> + Send + 'static,
    {
        let mut answered = Vec::with_capacity(parts.len());
        let mut pending = parts;
        while !pending.is_empty() {
            let replies = self.each(&pending, &call).await;
            let mut retried = Vec::new();
            for (part, reply) in pending.into_iter().zip(replies) {
                match reply {
                    Ok(reply) => answered.push((part, reply)),
                    Err(status) => retried.extend(self.failed(answer, dealer, part, status)?),
                }
            }
            pending = retried;
        }
        Ok(answered)
    }

    /// The span over every leaf that answers (one that does not will fail the search that
    /// follows too).
    async fn span(&self, tenant: &str, query: &LeafQuery) -> Result<TimeSpan, ClusterError> {
        // Every leaf over all it holds: a block two leaves hold counts once in a span.
        let all: Vec<Part> = (0..self.list.len()).map(Part::whole).collect();
        let replies = self
            .each(&all, |mut client, _| {
                let asked = proto::StatsRequest {
                    query: Some(convert::query_to_proto(tenant, query)),
                    scope: None,
                };
                async move { client.span(asked).await }
            })
            .await;
        let mut span = TimeSpan::Matches(None);
        let mut ignored = RootAnswer::default();
        for (part, reply) in all.iter().zip(replies) {
            match reply {
                Ok(reply) => span = span.merge(convert::span_from_proto(&reply)),
                Err(status) => ignored.fail(&self.list[part.leaf].0, status)?,
            }
        }
        Ok(span)
    }

    /// Which leaf searches what. When no leaf can search blocks it did not write (nodes
    /// with data of their own), every leaf searches all it holds. Otherwise (searchers, or
    /// writers over a shared metastore and object storage) each indexer (`all` or `indexer`)
    /// plans: it keeps a snapshot and lists its published blocks in it; the indexer answers
    /// for its events in memory in that snapshot, and the published blocks (with those of
    /// writers that did not answer, listed from the catalog) are dealt by rendezvous hashing
    /// to the searchers, or without searchers to the answering indexers, so a block goes to
    /// the same node every time, whose cache holds it. Every acknowledged event is in exactly
    /// one share: a flush between the plan and the search moves events into a block the plan
    /// did not list, and the indexer's planned snapshot still has them in memory.
    async fn plan(
        &self,
        tenant: &str,
        answer: &mut RootAnswer,
    ) -> Result<(Vec<Part>, Dealer), ClusterError> {
        let roles = self.roles().await;
        let is_searcher = |i: usize| roles[i].as_ref().is_some_and(|r| r.name == "searcher");
        let searchers: Vec<usize> = (0..self.list.len()).filter(|&i| is_searcher(i)).collect();
        let shared = roles.iter().flatten().any(|r| r.shared);
        let mut dealer = Dealer {
            searchers: searchers.clone(),
            endpoints: self.list.iter().map(|(e, _)| e.clone()).collect(),
            bytes: Default::default(),
        };
        if searchers.is_empty() && !shared {
            return Ok(((0..self.list.len()).map(Part::whole).collect(), dealer));
        }
        let indexers: Vec<Part> = (0..self.list.len())
            .filter(|&i| !is_searcher(i))
            .map(Part::whole)
            .collect();
        let replies = self
            .each(&indexers, |mut client, _| {
                let asked = proto::PlanRequest {
                    tenant: tenant.to_owned(),
                    ..Default::default()
                };
                async move { client.plan(asked).await }
            })
            .await;
        let mut parts = Vec::new();
        let mut published = std::collections::BTreeSet::new();
        // The writers whose blocks an answering indexer listed, and the indexers that can
        // search any block; None once one answered without a writer (a catalog of its own).
        let mut answering = Some((Vec::new(), Vec::new()));
        let mut failed = false;
        for (indexer, reply) in indexers.into_iter().zip(replies) {
            match reply {
                Ok(plan) => {
                    let anywhere = roles[indexer.leaf].as_ref().is_some_and(|r| r.shared);
                    match (&mut answering, plan.writer.is_empty()) {
                        (Some((writers, servers)), false) => {
                            writers.push(plan.writer);
                            if anywhere {
                                servers.push(indexer.leaf);
                            }
                        }
                        _ => answering = None,
                    }
                    dealer.sized(&plan.published, &plan.published_bytes);
                    published.extend(plan.published);
                    parts.push(Part {
                        leaf: indexer.leaf,
                        scope: Some(proto::Scope {
                            kind: Some(proto::scope::Kind::UnpublishedOf(plan.snapshot)),
                        }),
                        blocks: Vec::new(),
                    });
                }
                // The indexer does not have the tenant: nothing of it there.
                Err(status) if status.code() == tonic::Code::NotFound => {}
                Err(status) => {
                    failed = true;
                    answer.fail(&self.list[indexer.leaf].0, status)?
                }
            }
        }
        match answering {
            // Indexers over a shared metastore list only their own blocks: the blocks of
            // writers that did not answer (an indexer down, or gone for good) are listed by a
            // searcher, from the catalog. Without searchers, the indexers that can search
            // any block serve them all.
            Some((writers, servers)) => {
                if dealer.searchers.is_empty() {
                    dealer.searchers = servers;
                }
                let reply = self
                    .unanswered(tenant, &dealer, writers, failed, answer)
                    .await?;
                dealer.sized(&reply.published, &reply.published_bytes);
                published.extend(reply.published);
            }
            None if searchers.is_empty() => {
                // Nodes with catalogs of their own: each searches all it holds.
                let whole = (0..self.list.len()).map(Part::whole).collect();
                return Ok((whole, dealer));
            }
            None => {}
        }
        parts.extend(dealer.deal(&published.into_iter().collect::<Vec<_>>()));
        Ok((parts, dealer))
    }

    /// The published blocks of `tenant` whose writers are not among `answering`, as the first
    /// searcher that answers lists them: from the catalog read afresh when an indexer just
    /// `failed` (its last blocks may be newer than the searcher's last read; an indexer down
    /// for longer than the members' beat window stopped publishing long before that read).
    /// Every searcher failing is a partial answer.
    async fn unanswered(
        &self,
        tenant: &str,
        dealer: &Dealer,
        answering: Vec<String>,
        failed: bool,
        answer: &mut RootAnswer,
    ) -> Result<proto::PlanReply, ClusterError> {
        let mut last = None;
        for &searcher in &dealer.searchers {
            let asked = proto::PlanRequest {
                tenant: tenant.to_owned(),
                unanswered: true,
                answering: answering.clone(),
                fresh: failed,
            };
            let mut client = self.list[searcher].1.clone();
            match client.plan(asked).await {
                Ok(reply) => return Ok(reply.into_inner()),
                Err(status) if status.code() == tonic::Code::NotFound => {
                    return Ok(proto::PlanReply::default())
                }
                Err(status) => last = Some((searcher, status)),
            }
        }
        if let Some((searcher, status)) = last {
            answer.fail(&self.list[searcher].0, status)?;
        }
        Ok(proto::PlanReply::default())
    }

    /// A part that failed: a searcher's share goes to the other searchers (returned, to be
    /// asked again), anything else is a leaf missing from the answer.
    fn failed(
        &self,
        answer: &mut RootAnswer,
        dealer: &mut Dealer,
        part: Part,
        status: Status,
    ) -> Result<Vec<Part>, ClusterError> {
        let endpoint = &self.list[part.leaf].0;
        let is_share = !part.blocks.is_empty() && dealer.searchers.contains(&part.leaf);
        if !is_share || status.code() == tonic::Code::InvalidArgument {
            answer.fail(endpoint, status)?;
            return Ok(Vec::new());
        }
        tracing::warn!(leaf = %endpoint, error = %status.message(), "a searcher failed; its blocks go to the others");
        dealer.searchers.retain(|&s| s != part.leaf);
        if dealer.searchers.is_empty() {
            answer.fail(endpoint, status)?;
            return Ok(Vec::new());
        }
        Ok(dealer.deal(&part.blocks))
    }

    /// Every leaf's role, asked at most every `ROLES_TTL` (a leaf that has not answered yet
    /// has none: it is asked as a node of its own data).
    async fn roles(&self) -> Vec<Option<LeafRole>> {
        {
            let cached = self.roles.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some((at, roles)) = &*cached {
                if at.elapsed() < ROLES_TTL {
                    return roles.clone();
                }
            }
        }
        let all: Vec<Part> = (0..self.list.len()).map(Part::whole).collect();
        let replies = self
            .each(&all, |mut client, _| async move {
                client.info(proto::InfoRequest {}).await
            })
            .await;
        let mut cached = self.roles.lock().unwrap_or_else(PoisonError::into_inner);
        let before = cached.take().map(|(_, roles)| roles);
        let roles: Vec<Option<LeafRole>> = replies
            .into_iter()
            .enumerate()
            .map(|(i, reply)| match reply {
                Ok(info) => Some(LeafRole {
                    name: info.role,
                    shared: info.shared,
                }),
                // Down now: its role as last known.
                Err(_) => before.as_ref().and_then(|b| b[i].clone()),
            })
            .collect();
        *cached = Some((Instant::now(), roles.clone()));
        roles
    }

    /// Calls `call` on each part's leaf with its scope, all at once; the replies in the
    /// parts' order.
    async fn each<R, F, Fut>(&self, parts: &[Part], call: F) -> Vec<Result<R, Status>>
    where
        R: Send + 'static,
        F: Fn(Client, Option<proto::Scope>) -> Fut,
        Fut: std::future::Future<Output = Result<tonic::Response<R>, Status>> + Send + 'static,
    {
        let mut running = tokio::task::JoinSet::new();
        for (position, part) in parts.iter().enumerate() {
            let future = call(self.list[part.leaf].1.clone(), part.scope.clone());
            running.spawn(async move { (position, future.await.map(tonic::Response::into_inner)) });
        }
        let mut replies: Vec<Option<Result<R, Status>>> = (0..parts.len()).map(|_| None).collect();
        while let Some(joined) = running.join_next().await {
            if let Ok((position, reply)) = joined {
                replies[position] = Some(reply);
            }
        }
        replies
            .into_iter()
            .map(|reply| reply.unwrap_or_else(|| Err(Status::internal("the call's task failed"))))
            .collect()
    }
}

/// What a leaf says it is (`Info`).
#[derive(Debug, Clone)]
struct LeafRole {
    /// `all`, `indexer` or `searcher`.
    name: String,
    /// It can search any block of the cluster (a shared metastore and object storage).
    shared: bool,
}

/// How long the leaves' roles are trusted before they are asked again.
const ROLES_TTL: Duration = Duration::from_secs(5);

/// One leaf's share of a search.
#[derive(Debug, Clone)]
struct Part {
    leaf: usize,
    /// Which of its blocks (None: all of them).
    scope: Option<proto::Scope>,
    /// A searcher's share: the published blocks dealt to it (given to others if it fails).
    blocks: Vec<u64>,
}

impl Part {
    fn whole(leaf: usize) -> Part {
        Part {
            leaf,
            scope: None,
            blocks: Vec::new(),
        }
    }
}

/// Deals published blocks to the searchers still answering, by rendezvous hashing with
/// bounded loads: each block, largest first, goes to the searcher ranking highest by the hash
/// of (block, endpoint) among those whose share stays within `LOAD_BOUND` times an even
/// share of the bytes. So each searcher keeps the same blocks (and its cache of them) while
/// the others come and go, a failed searcher's blocks spread over the rest, and no searcher
/// is dealt far more bytes than the others (plain rendezvous hashing over a few blocks of
/// very different sizes gave one searcher 71% of the bytes: BENCHMARKS.md).
struct Dealer {
    searchers: Vec<usize>,
    endpoints: Vec<String>,
    /// The bytes of each block the plan listed (a block not listed counts 1).
    bytes: std::collections::HashMap<u64, u64>,
}

/// A share may exceed an even share of the bytes by a quarter (a block larger than that
/// alone goes where it ranks highest among the least loaded).
const LOAD_BOUND: f64 = 1.25;

impl Dealer {
    /// Notes the bytes of `blocks` (`bytes` in their order; none from an older leaf).
    fn sized(&mut self, blocks: &[u64], bytes: &[u64]) {
        for (&block, &size) in blocks.iter().zip(bytes) {
            self.bytes.insert(block, size);
        }
    }

    fn deal(&self, blocks: &[u64]) -> Vec<Part> {
        let size = |block: u64| self.bytes.get(&block).copied().unwrap_or(0).max(1);
        let rank = |block: u64, leaf: usize| {
            let mut hasher = std::collections::hash_map::DefaultHasher::new();
            std::hash::Hash::hash(&(block, &self.endpoints[leaf]), &mut hasher);
            std::hash::Hasher::finish(&hasher)
        };
        let total: u64 = blocks.iter().map(|&b| size(b)).sum();
        let bound = total as f64 / self.searchers.len().max(1) as f64 * LOAD_BOUND;
        let mut order: Vec<u64> = blocks.to_vec();
        order.sort_unstable_by_key(|&b| (std::cmp::Reverse(size(b)), b));
        let mut load: std::collections::HashMap<usize, u64> = Default::default();
        let mut shares: std::collections::BTreeMap<usize, Vec<u64>> = Default::default();
        for block in order {
            let mut ranked = self.searchers.clone();
            ranked.sort_unstable_by_key(|&leaf| std::cmp::Reverse(rank(block, leaf)));
            let loaded = |leaf: &usize| load.get(leaf).copied().unwrap_or(0);
            let within = ranked
                .iter()
                .copied()
                .find(|leaf| (loaded(leaf) + size(block)) as f64 <= bound);
            // None fits: the least loaded, the highest ranked among equals.
            let chosen = within.or_else(|| ranked.iter().copied().min_by_key(loaded));
            if let Some(leaf) = chosen {
                *load.entry(leaf).or_default() += size(block);
                shares.entry(leaf).or_default().push(block);
            }
        }
        shares
            .into_iter()
            .map(|(leaf, blocks)| Part {
                leaf,
                scope: Some(proto::Scope {
                    kind: Some(proto::scope::Kind::Blocks(proto::BlockIds {
                        ids: blocks.clone(),
                    })),
                }),
                blocks,
            })
            .collect()
    }
}

impl RootAnswer {
    /// Records a leaf that did not answer; a request the leaf refused as malformed (a bad
    /// query) is the caller's error, not a partial answer.
    fn fail(&mut self, endpoint: &str, status: Status) -> Result<(), ClusterError> {
        if status.code() == tonic::Code::InvalidArgument {
            return Err(ClusterError::Leaf {
                endpoint: endpoint.to_owned(),
                message: status.message().to_owned(),
            });
        }
        self.failed_leaves.push((
            endpoint.to_owned(),
            format!("{}: {}", status.code(), status.message()),
        ));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dealer(searchers: usize, sizes: &[(u64, u64)]) -> Dealer {
        Dealer {
            searchers: (0..searchers).collect(),
            endpoints: (0..searchers)
                .map(|i| format!("http://10.0.0.{i}:7480"))
                .collect(),
            bytes: sizes.iter().copied().collect(),
        }
    }

    /// Each searcher's bytes, and every block dealt once.
    fn loads(dealer: &Dealer, blocks: &[u64]) -> Vec<u64> {
        let parts = dealer.deal(blocks);
        let mut dealt: Vec<u64> = parts.iter().flat_map(|p| p.blocks.clone()).collect();
        dealt.sort_unstable();
        let mut want = blocks.to_vec();
        want.sort_unstable();
        assert_eq!(dealt, want, "every block dealt once");
        let mut loads = vec![0; dealer.searchers.len()];
        for part in &parts {
            loads[part.leaf] = part.blocks.iter().map(|b| dealer.bytes[b]).sum();
        }
        loads
    }

    #[test]
    fn shares_stay_within_the_bound_and_are_the_same_each_time() {
        let mut seed = 11u64;
        for round in 0..200 {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let searchers = 2 + (seed >> 60) as usize % 4;
            let count = 3 + (seed >> 50) as usize % 40;
            let sizes: Vec<(u64, u64)> = (0..count as u64)
                .map(|i| {
                    let skewed = (seed.rotate_left(i as u32 * 7) % 1000).pow(2) + 1;
                    (1000 + i, skewed)
                })
                .collect();
            let dealer = dealer(searchers, &sizes);
            let blocks: Vec<u64> = sizes.iter().map(|(id, _)| *id).collect();
            let got = loads(&dealer, &blocks);
            assert_eq!(got, loads(&dealer, &blocks), "round {round}: the same deal");
            let total: u64 = sizes.iter().map(|(_, s)| s).sum();
            let largest = sizes.iter().map(|(_, s)| *s).max().unwrap();
            let bound = total as f64 / searchers as f64 * LOAD_BOUND;
            let most = *got.iter().max().unwrap() as f64;
            assert!(
                most <= bound.max(largest as f64) + largest as f64,
                "round {round}: {got:?}, bound {bound}, largest {largest}"
            );
        }
    }

    #[test]
    fn equal_blocks_are_spread_evenly_and_mostly_stay_put() {
        let sizes: Vec<(u64, u64)> = (0..300).map(|id| (id, 1 << 20)).collect();
        let blocks: Vec<u64> = (0..300).collect();
        let three = dealer(3, &sizes);
        for load in loads(&three, &blocks) {
            assert!(load <= 125 << 20, "{load}");
        }
        // One block more moves few others (cache affinity).
        let before = three.deal(&blocks);
        let mut more = sizes.clone();
        more.push((300, 1 << 20));
        let after = dealer(3, &more).deal(&[blocks.clone(), vec![300]].concat());
        let owner = |parts: &[Part], block: u64| {
            parts
                .iter()
                .find(|p| p.blocks.contains(&block))
                .map(|p| p.leaf)
        };
        let moved = blocks
            .iter()
            .filter(|&&b| owner(&before, b) != owner(&after, b))
            .count();
        assert!(moved <= 15, "{moved} of 300 blocks moved");
    }
}
