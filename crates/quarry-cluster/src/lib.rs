//! Quarry's cluster: a search scattered over nodes and gathered again, over gRPC.
//!
//! Each node that holds data serves the *leaf API* (`proto/quarry/leaf/v1/leaf.proto`,
//! [`LeafService`]): statistics, partial answers and the events of kept hits, over its own
//! snapshot of a tenant (quarry-query's `leaf.rs` does the searching). A [`Root`] asks every
//! leaf, merges the partial answers in the request's order and fetches the events from the
//! leaves that hold them, so the answer is what one node holding every leaf's blocks would
//! give. A leaf that does not answer is named in the answer, which is then partial, never
//! silently smaller.
//!
//! The leaf API reads every tenant's data, so it takes a cluster token (`authorization:
//! Bearer`, compared in constant time) on every call.

pub mod convert;
pub mod root;
pub mod service;

/// The messages and service generated from the leaf API's `.proto` (build.rs).
pub mod proto {
    tonic::include_proto!("quarry.leaf.v1");
}

pub use root::{Root, RootAnswer, RootHit, TailItem};
pub use service::{serve_leaf, LeafService, Planned, TailMatch, TailReceiver, Tenants};

#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error("leaf {endpoint}: {message}")]
    Leaf { endpoint: String, message: String },
    #[error("bad leaf endpoint {endpoint:?}: {message}")]
    Endpoint { endpoint: String, message: String },
    #[error("the cluster token is empty")]
    EmptyToken,
    /// A request that cannot be sent to the leaves.
    #[error("{0}")]
    Request(String),
}
