//! Side-by-side search benchmark driver: feeds queries to a search engine process over a pipe,
//! times each round trip, and summarizes; `search-report` then puts engines side by side.
//!
//! The engine protocol is the search-benchmark-game's: the driver writes `COMMAND\tquery` on the
//! engine's stdin and reads exactly one answer line from its stdout (a count, `1`, `ERROR` or
//! `UNSUPPORTED`). Timing the whole round trip, parsing included, charges each engine for the
//! same work and adds the same pipe overhead (a few microseconds) to both.

pub mod engine;
pub mod latency;
pub mod queries;
pub mod report;
