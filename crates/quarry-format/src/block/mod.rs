//! The block file: one tenant's events, sorted by `_time`, with columns, an inverted index and a
//! sparse time index, in one immutable self-contained file.
//!
//! ```text
//! block   := magic section* manifest footer
//! footer  := manifest_offset:u64 manifest_len:u64 version:u32 manifest_crc32:u32 magic
//! ```
//! The manifest lists the fields (with their columns and text statistics), the `_time` range and
//! every section as (offset, length, crc32). Readers mmap the file, check the footer and the
//! manifest's crc, check every section lies inside the file, and copy the sections read at
//! random (term dictionary, term infos, norms, time index and offsets, chunk directories, doc
//! values) into private memory, checking each copy's crc. Column chunks carry their own crc,
//! checked each time one is decoded; postings and positions carry a crc per 16 KiB page
//! (`pages`), checked by every cursor that reads the page; so every byte a query reads is under
//! a checksum checked before use, even when the file changes under an open reader (issue 26).
//! `BlockReader::verify` checks every section's crc. A reader reads bytes, not paths: a mapped
//! file or a buffer in memory. Full byte grammar: FORMAT.md.
//!
//! Invariants: doc ids are positions in `_time` order (stable for equal times); every doc has a
//! `_time`; chunks of a column partition `[0, doc_count)`; term keys are unique and sorted.

pub mod fetch_counts;
mod manifest;
pub mod pages;
mod reader;
pub mod stored;
mod writer;

pub use fetch_counts::FetchCounts;
pub use manifest::{ColumnMeta, FieldMeta, Manifest, SectionRef, TextMeta};
pub(crate) use reader::LazyDocValues;
pub use reader::{BlockBytes, BlockReader, BlockSource, DocumentFetcher, TermInfos};
pub use writer::{encode_block, BlockInput, FieldInput, InvertedIndexWriter, TextInput};

/// The name of the time field every block has.
pub const TIME_FIELD: &str = "_time";

#[cfg(test)]
mod tests;
