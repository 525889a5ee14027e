//! Quarry's indexing side: analysis, the event model, the in-memory segment, the parallel
//! indexing pipeline (seed 003's reader → indexer → writer) and merge.

pub mod analysis;
pub mod event;
pub mod schema;
pub mod segment;

pub use analysis::Analyzer;
pub use event::{parse_event, Event};
pub use schema::Schema;
pub use segment::SegmentBuilder;
pub mod error;
pub mod merge;
mod merge_postings;
pub mod pipeline;
pub mod textline;

pub use error::IndexError;
pub use pipeline::{
    decompressed, index_inputs, Change, IndexOptions, Input, LineError, Progress, SourceOutcome,
    SourceReport,
};
