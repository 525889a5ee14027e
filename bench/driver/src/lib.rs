//! Side-by-side search benchmark driver: feeds queries to a search engine process over a pipe,
//! times each round trip (latency) or the whole stream (throughput), and summarizes;
//! `search-report` then puts engines side by side and `search-plots` draws them.
//!
//! The engine protocol is the search-benchmark-game's: the driver writes `COMMAND\tquery` on the
//! engine's stdin and reads exactly one answer line from its stdout (a count, `1`, `ERROR` or
//! `UNSUPPORTED`). Timing the whole round trip, parsing included, charges each engine for the
//! same work and adds the same pipe overhead (a few microseconds) to both. An engine started
//! with `--threads N`, N > 1, searches on a pool of N threads and prefixes each answer with the
//! request's 0-based line number, `ID\tanswer`, since answers then come in completion order.
//! An engine started with `--engine-time` ends each plain answer with `\tNANOS`, its own time
//! for the request (bench/logs/PROTOCOL.md), reported beside the round trip; [`kinds`] makes
//! the search-benchmark-game configuration's per-kind report.

pub mod answers;
pub mod engine;
pub mod kinds;
pub mod latency;
pub mod plots;
pub mod queries;
pub mod report;
