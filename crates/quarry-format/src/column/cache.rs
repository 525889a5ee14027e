//! A cache of decoded column chunks shared across requests.
//!
//! Fetching the events of a tail decodes one chunk per column for every hit that no nearby hit
//! already paid for: sparse hits pay a whole zstd chunk each (BENCHMARKS.md, "Tails with their
//! events"). Log users ask for the same newest chunks again and again (a tail refreshed, a live
//! tail, the next page), so a server keeps decoded chunks here, bounded by their decoded size.
//! Entries are keyed by the reader's process-unique id, so a block replaced by a merge or a
//! flush never answers from another block's chunks; its entries age out.

use super::DecodedChunk;
use crate::value::ColumnType;
use std::sync::Arc;

/// (reader uid, field ordinal, column type, chunk index).
type Key = (u64, u16, ColumnType, u32);

#[derive(Clone)]
struct DecodedSize;

impl quick_cache::Weighter<Key, Arc<DecodedChunk>> for DecodedSize {
    fn weight(&self, _key: &Key, chunk: &Arc<DecodedChunk>) -> u64 {
        chunk.heap_bytes() as u64
    }
}

/// Decoded chunks of any number of blocks, at most `capacity_bytes` of them (decoded size).
/// Thread-safe; share it behind an `Arc`.
pub struct ChunkCache {
    chunks: quick_cache::sync::Cache<Key, Arc<DecodedChunk>, DecodedSize>,
    capacity_bytes: u64,
}

impl std::fmt::Debug for ChunkCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChunkCache")
            .field("capacity_bytes", &self.capacity_bytes)
            .field("weight", &self.chunks.weight())
            .finish()
    }
}

/// Decoded size assumed per chunk when sizing the cache's tables (a 64 KiB string chunk and
/// its offsets).
const TYPICAL_CHUNK_BYTES: u64 = 72 * 1024;

impl ChunkCache {
    pub fn new(capacity_bytes: u64) -> ChunkCache {
        let items = (capacity_bytes / TYPICAL_CHUNK_BYTES).max(16) as usize;
        ChunkCache {
            chunks: quick_cache::sync::Cache::with_weighter(items, capacity_bytes, DecodedSize),
            capacity_bytes,
        }
    }

    pub fn capacity_bytes(&self) -> u64 {
        self.capacity_bytes
    }

    /// Decoded bytes held now.
    pub fn held_bytes(&self) -> u64 {
        self.chunks.weight()
    }

    pub(crate) fn get(&self, key: &Key) -> Option<Arc<DecodedChunk>> {
        self.chunks.get(key)
    }

    pub(crate) fn insert(&self, key: Key, chunk: Arc<DecodedChunk>) {
        self.chunks.insert(key, chunk);
    }
}
