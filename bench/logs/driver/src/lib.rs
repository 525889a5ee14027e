//! The log benchmark (`bench/run-logs.sh`): the protocol every engine speaks and the driver that
//! times them.
//!
//! [`PROTOCOL.md`](../../PROTOCOL.md) is the contract; this crate is its one Rust reading, shared
//! by `logs-driver` and by the tantivy and VictoriaLogs peers (`tantivy-logs`,
//! `victorialogs-logs`) so all parse requests and format answers alike. The Lucene peer (`bench/lucene-logs`) has its own Java reading of the same
//! text, checked against this one by comparing answers.
//!
//! - [`schema`]: the generated events' fields and how the peers index each one;
//! - [`protocol`]: request lines and the query language, parsed into [`protocol::Request`];
//! - [`answer`]: answer formatting shared by engines, and the comparison rules of `compare`;
//! - [`time`]: RFC 3339 timestamps to milliseconds since the epoch;
//! - [`input`]: reading JSON-lines event files, plain or zstd-compressed;
//! - [`latency`], [`queries`], [`run`], [`report`]: the driver's pieces;
//! - [`kinds`]: per-kind latency tables and count comparisons of several engines (the
//!   multi-term benchmark, bench/multiterm);
//! - [`http`]: a minimal blocking HTTP/1.1 client, shared with `ingest-driver` and used by the
//!   VictoriaLogs peer (`victorialogs-logs`), which speaks to its server over HTTP.

pub mod answer;
pub mod http;
pub mod input;
pub mod kinds;
pub mod latency;
pub mod protocol;
pub mod queries;
pub mod report;
pub mod run;
pub mod schema;
pub mod time;
