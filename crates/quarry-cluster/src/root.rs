//! The root of a distributed search: scatter to every leaf, gather, merge, fetch.

use crate::convert;
use crate::proto;
use crate::proto::leaf_client::LeafClient;
use crate::ClusterError;
use quarry_format::Value;
use quarry_query::aggregation::AggPartial;
use quarry_query::leaf::{
    compare_hits, merge_answers, FailedBlock, LeafAnswer, LeafQuery, LeafRequest, PartialHit,
    TimeSpan,
};
use quarry_query::weight::GlobalStats;
use quarry_query::SortOrder;
use std::time::Duration;
use tonic::metadata::MetadataValue;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Channel, Endpoint};
use tonic::{Request, Status};

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
    /// Blocks leaves left out.
    pub failed_blocks: Vec<(String, FailedBlock)>,
    /// Leaves that did not answer, with why: the answer lacks their data.
    pub failed_leaves: Vec<(String, String)>,
}

impl RootAnswer {
    /// Whether data is missing from the answer (a leaf or a block left out).
    pub fn is_partial(&self) -> bool {
        !self.failed_blocks.is_empty() || !self.failed_leaves.is_empty()
    }
}

/// A root over a fixed set of leaves.
pub struct Root {
    leaves: Vec<(String, Client)>,
}

impl Root {
    /// A root over the leaves at `endpoints` (`http://host:port`), calling them with `token`.
    /// Connections are made on first use, so a leaf that is down fails its part of each
    /// search, not the root. Call it within a Tokio runtime.
    pub fn new(endpoints: &[String], token: &str) -> Result<Root, ClusterError> {
        if token.is_empty() {
            return Err(ClusterError::EmptyToken);
        }
        let value: MetadataValue<tonic::metadata::Ascii> = format!("Bearer {token}")
            .parse()
            .map_err(|_| ClusterError::Endpoint {
                endpoint: String::new(),
                message: "the cluster token must be printable ASCII".into(),
            })?;
        let mut leaves = Vec::with_capacity(endpoints.len());
        for endpoint in endpoints {
            let channel = Endpoint::from_shared(endpoint.clone())
                .map_err(|e| ClusterError::Endpoint {
                    endpoint: endpoint.clone(),
                    message: e.to_string(),
                })?
                .connect_timeout(Duration::from_secs(5))
                .timeout(LEAF_TIMEOUT)
                .connect_lazy();
            let client = LeafClient::with_interceptor(channel, Token(value.clone()))
                .max_decoding_message_size(256 << 20);
            leaves.push((endpoint.clone(), client));
        }
        Ok(Root { leaves })
    }

    /// Answers `request` for `tenant` over every leaf: statistics first for a relevance sort,
    /// then every leaf's partial answer, merged, then the kept hits' events.
    pub async fn search(
        &self,
        tenant: &str,
        query: &LeafQuery,
        request: &LeafRequest,
    ) -> Result<RootAnswer, ClusterError> {
        let mut answer = RootAnswer::default();
        let mut live: Vec<usize> = (0..self.leaves.len()).collect();

        let stats = if request.sort == SortOrder::Relevance && request.limit > 0 {
            let asked = proto::StatsRequest {
                query: Some(convert::query_to_proto(tenant, query)),
            };
            let replies = self
                .each(&live, |mut client| {
                    let asked = asked.clone();
                    async move { client.stats(asked).await }
                })
                .await;
            let mut total = GlobalStats::default();
            live.clear();
            for (index, reply) in replies {
                match reply {
                    Ok(stats) => {
                        total.merge(&convert::stats_from_proto(stats));
                        live.push(index);
                    }
                    Err(status) => answer.fail(&self.leaves[index].0, status)?,
                }
            }
            Some(total)
        } else {
            None
        };

        let asked = convert::request_to_proto(tenant, query, request, stats.as_ref());
        let replies = self
            .each(&live, |mut client| {
                let asked = asked.clone();
                async move { client.search(asked).await }
            })
            .await;
        // Each leaf's answer, with the snapshot it searched (for the fetch).
        let mut answers: Vec<(usize, u64, LeafAnswer)> = Vec::new();
        for (index, reply) in replies {
            match reply.map(|r| (r.snapshot, convert::answer_from_proto(&r, request))) {
                Ok((snapshot, Ok(leaf_answer))) => answers.push((index, snapshot, leaf_answer)),
                Ok((_, Err(message))) => answer
                    .failed_leaves
                    .push((self.leaves[index].0.clone(), message)),
                Err(status) => answer.fail(&self.leaves[index].0, status)?,
            }
        }

        // The best hits of all leaves, each with the leaf it came from (block ids are a
        // leaf's own: two leaves may both have a block 1).
        let mut tagged: Vec<(usize, u64, PartialHit)> = Vec::new();
        for (index, snapshot, leaf_answer) in &mut answers {
            for hit in std::mem::take(&mut leaf_answer.hits) {
                tagged.push((*index, *snapshot, hit));
            }
            for failed in &leaf_answer.failed {
                answer
                    .failed_blocks
                    .push((self.leaves[*index].0.clone(), failed.clone()));
            }
        }
        tagged.sort_by(|a, b| compare_hits(request, &a.2, &b.2));
        tagged.truncate(request.limit);
        let snapshots: Vec<(usize, u64)> = answers.iter().map(|(i, s, _)| (*i, *s)).collect();
        let merged = merge_answers(request, answers.into_iter().map(|(_, _, a)| a));
        answer.count = merged.count;
        answer.histogram = merged.histogram;
        answer.aggregations = merged.aggregations;

        // Fetch: each leaf's kept hits from the snapshot it searched, all leaves at once.
        let mut events: Vec<Option<Vec<(String, Value)>>> = vec![None; tagged.len()];
        let mut fetching = tokio::task::JoinSet::new();
        for (index, snapshot) in snapshots {
            let positions: Vec<usize> = (0..tagged.len())
                .filter(|&p| tagged[p].0 == index)
                .collect();
            if positions.is_empty() {
                continue;
            }
            let mut client = self.leaves[index].1.clone();
            let asked = proto::FetchRequest {
                tenant: tenant.to_owned(),
                snapshot,
                hits: positions
                    .iter()
                    .map(|&p| convert::hit_to_proto(&tagged[p].2))
                    .collect(),
            };
            fetching.spawn(async move { (index, positions, client.fetch(asked).await) });
        }
        while let Some(joined) = fetching.join_next().await {
            let (index, positions, reply) = joined.map_err(|e| ClusterError::Leaf {
                endpoint: String::new(),
                message: e.to_string(),
            })?;
            let endpoint = &self.leaves[index].0;
            let leaf_error = |message: String| ClusterError::Leaf {
                endpoint: endpoint.clone(),
                message,
            };
            // The search answered a moment ago: a fetch that fails now fails the search
            // (its hits are already chosen), named.
            let fetched = reply
                .map_err(|status| leaf_error(status.message().to_owned()))?
                .into_inner()
                .events;
            if fetched.len() != positions.len() {
                return Err(leaf_error(format!(
                    "{} events for {} hits",
                    fetched.len(),
                    positions.len()
                )));
            }
            for (&p, event) in positions.iter().zip(fetched) {
                events[p] = Some(convert::event_from_proto(event).map_err(leaf_error)?);
            }
        }
        answer.hits = tagged
            .into_iter()
            .zip(events)
            .map(|((index, _, hit), event)| RootHit {
                leaf: self.leaves[index].0.clone(),
                hit,
                event: event.unwrap_or_default(),
            })
            .collect();
        Ok(answer)
    }

    /// Before a histogram of width `auto`: the time span of the search over every leaf that
    /// answers, and the leaves that did not (the caller's search will find them down too).
    pub async fn span(&self, tenant: &str, query: &LeafQuery) -> Result<TimeSpan, ClusterError> {
        let asked = proto::StatsRequest {
            query: Some(convert::query_to_proto(tenant, query)),
        };
        let all: Vec<usize> = (0..self.leaves.len()).collect();
        let replies = self
            .each(&all, |mut client| {
                let asked = asked.clone();
                async move { client.span(asked).await }
            })
            .await;
        let mut span = TimeSpan::Matches(None);
        let mut ignored = RootAnswer::default();
        for (index, reply) in replies {
            match reply {
                Ok(reply) => span = span.merge(convert::span_from_proto(&reply)),
                Err(status) => ignored.fail(&self.leaves[index].0, status)?,
            }
        }
        Ok(span)
    }

    /// Calls `call` on the leaves `which`, all at once; answers by leaf index.
    async fn each<R, F, Fut>(&self, which: &[usize], call: F) -> Vec<(usize, Result<R, Status>)>
    where
        R: Send + 'static,
        F: Fn(Client) -> Fut,
        Fut: std::future::Future<Output = Result<tonic::Response<R>, Status>> + Send + 'static,
    {
        let mut running = tokio::task::JoinSet::new();
        for &index in which {
            let future = call(self.leaves[index].1.clone());
            running.spawn(async move { (index, future.await.map(tonic::Response::into_inner)) });
        }
        let mut replies = Vec::with_capacity(which.len());
        while let Some(joined) = running.join_next().await {
            if let Ok(reply) = joined {
                replies.push(reply);
            }
        }
        replies.sort_by_key(|(index, _)| *index);
        replies
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
