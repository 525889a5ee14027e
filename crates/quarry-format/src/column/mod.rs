//! Columns: every field's values stored column-wise, in chunks, zstd-compressed.
//!
//! A column is one (field, type) pair. Its chunks partition the block's doc ids: chunk `i`
//! covers `[first_doc_i, first_doc_{i+1})` (the last one up to the block's doc count); a doc
//! in that range without a value of this type is "missing" and costs nothing but the presence
//! list. Each chunk has a directory entry with its byte range, crc32, value count and min/max
//! (numeric types), so a reader finds the chunk of a doc by binary search and can skip a chunk
//! by its min/max without decompressing it. Byte grammar: FORMAT.md, "Columns".

mod cache;
mod dictionary;
mod reader;
pub mod template;
mod writer;

pub use cache::ChunkCache;
pub use dictionary::ChunkDictionary;
pub use reader::{ChunkCursor, ChunkValues, ChunkWalker, ColumnReader, DecodedChunk};
pub use template::Templates;
pub use writer::{ColumnData, ColumnWriter};

/// Size of one chunk directory entry.
pub const CHUNK_META_LEN: usize = 40;

/// One chunk directory entry (fixed width, little endian).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkMeta {
    pub first_doc: u32,
    pub present_count: u32,
    pub offset: u64,
    pub len: u32,
    pub crc: u32,
    pub min: u64,
    pub max: u64,
}

impl ChunkMeta {
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        use crate::codec::*;
        put_u32(out, self.first_doc);
        put_u32(out, self.present_count);
        put_u64(out, self.offset);
        put_u32(out, self.len);
        put_u32(out, self.crc);
        put_u64(out, self.min);
        put_u64(out, self.max);
    }

    pub(crate) fn decode(bytes: &[u8]) -> crate::error::DecodeResult<ChunkMeta> {
        let mut r = crate::codec::ByteReader::new(bytes);
        Ok(ChunkMeta {
            first_doc: r.u32()?,
            present_count: r.u32()?,
            offset: r.u64()?,
            len: r.u32()?,
            crc: r.u32()?,
            min: r.u64()?,
            max: r.u64()?,
        })
    }
}

/// Presence flag at the start of a chunk payload.
pub(crate) const PRESENCE_ALL: u8 = 0;
pub(crate) const PRESENCE_LIST: u8 = 1;

#[cfg(test)]
mod tests;
