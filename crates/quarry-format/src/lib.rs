//! The Quarry block file format: the immutable, self-contained, time-sorted file that holds one
//! tenant's events with their columns, inverted index and sparse time index.
//!
//! Overview of the parts (one module each):
//! - `block`: the file as a whole (manifest, footer, writer, lazy mmap reader);
//! - `column`: typed values per field, in zstd-compressed chunks with min/max;
//! - `termdict`: the FST from (field, kind, term) to term ordinal, and the term-info table;
//! - `postings`: bit-packed doc ids and term frequencies with skip data, and positions;
//! - `fieldnorm`: one-byte field lengths for BM25;
//! - `codec`, `limits`: varints and a checked cursor; every size limit and why.
//!
//! This crate does no I/O policy (where blocks live, when they are written or merged) and no
//! async; it turns in-memory inputs into bytes and bytes back into iterators. The byte grammar is
//! in FORMAT.md beside this crate.

pub mod block;
pub mod codec;
pub mod column;
pub mod docvalues;
pub mod error;
pub mod fieldnorm;
pub mod limits;
pub mod packed;
pub mod postings;
pub mod termdict;
pub mod value;

pub use block::{BlockBytes, BlockSource, FetchCounts};
pub use block::{BlockReader, TIME_FIELD};
pub use error::{DecodeError, FormatError, Result};
pub use postings::{PostingsCursor, TermInfo, TERMINATED};
pub use termdict::{f64_term, i64_term, TermKind};
pub use value::{ColumnType, MinMax, Value};
