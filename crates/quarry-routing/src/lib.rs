//! Tenant traffic control (issue 29 item 5; LogStore §4.1 "Global traffic control"): which
//! indexers each tenant's ingest goes to, and in what shares.
//!
//! Tenants' traffic is skewed (close to Zipf, LogStore Figure 2), so hashing each tenant to one
//! indexer overloads the indexers that drew a large tenant while others idle. LogStore models
//! the assignment as a flow network, source → tenants → indexers → sink, and routes by its
//! maximum flow; that is what this crate computes, with no I/O and no async:
//!
//! - [`maxflow`]: Dinic's maximum flow over u64 capacities, with each edge's flow readable after
//!   solving and incremental solving after edges are added.
//! - [`routing`]: the plan. Input: each tenant's observed rate, each indexer's capacity, the
//!   current routing table. Output: a routing table (tenant → indexers with shares) that keeps
//!   every indexer at or under a target utilisation (LogStore's α, 85%), keeps each tenant on
//!   as few indexers as it can and moves little traffic; or, when the offered rate exceeds what
//!   the indexers can take, the best possible plan and the tenants left short (a backpressure
//!   signal).
//! - [`simulate`]: Zipf-weighted tenants on equal or varying indexers, hashing against max-flow
//!   routing, statically over a sweep of skews and over rounds of changing traffic (the
//!   evaluation of LogStore §6.2, Figures 12-14). `quarry simulate-routing` prints it.
//!
//! Not yet wired into the server: the cluster roles (routers, indexers) come later.

pub mod maxflow;
pub mod routing;
pub mod simulate;

pub use maxflow::{EdgeId, FlowNetwork};
pub use routing::{
    home_indexer, moved_rate, offered_loads, plan, Indexer, Plan, Route, RouterConfig,
    RoutingTable, RuleChanges, Shortfall, TenantRate, DEFAULT_BALANCE_MARGIN,
    DEFAULT_TARGET_UTILISATION,
};
pub use simulate::{
    dynamic_rounds, sweep, workload, Balance, Round, SimulationConfig, Surge, SweepRow, Workload,
    DEFAULT_THETAS, INDEXER_CAPACITY,
};

/// What can be wrong with a routing or simulation input.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum RoutingError {
    #[error("no indexers to route to")]
    NoIndexers,
    #[error("indexer {name:?} is listed twice")]
    DuplicateIndexer { name: String },
    #[error("tenant {tenant:?} is listed twice")]
    DuplicateTenant { tenant: String },
    #[error("the total {what} does not fit in 64 bits")]
    TotalOverflow { what: &'static str },
    #[error("{name} is {value}, expected {expected}")]
    Parameter {
        name: &'static str,
        value: f64,
        expected: &'static str,
    },
}
