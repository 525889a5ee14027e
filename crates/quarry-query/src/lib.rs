//! Quarry's query side: the language (`parser`), analysis into `Query`, BM25 `Weight`s with
//! collection statistics, per-block `Scorer`s (doc-id iterators), and collectors.
//!
//! A search walks Query → Weight (once, with statistics over all blocks) → Scorer (per block)
//! → Collector (top-k by score with MaxScore pruning, by time, or a count).

pub mod agg_tree;
pub mod aggregation;
pub mod bm25;
pub mod collector;
pub mod cursor;
pub mod doc_id;
pub mod dsl;
pub mod error;
mod field_names;
pub mod field_sort;
pub mod filter;
pub mod intervals;
pub mod leaf;
mod ngram;
pub mod parser;
pub mod pattern;
pub mod query;
pub mod range;
pub mod request;
pub mod scorer;
pub mod searcher;
pub mod suggest;
pub mod time;
pub mod timeline;
mod typed;
pub mod value_positions;
pub mod weight;

pub use cursor::Cursor;
pub use error::QueryError;
pub use query::Query;
pub use request::{Bucket, HistogramInterval, HitEvent, SearchRequest, SearchResponse, Warning};
pub use searcher::{
    value_to_json, DamageReport, DamagedBlock, FieldSummary, Hit, Hits, HitsRequest, Searcher,
    SortOrder,
};
