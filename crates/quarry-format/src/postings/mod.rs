//! Postings: for each term, the doc ids that contain it, their term frequencies and (for text)
//! the token positions.
//!
//! Doc ids are delta-encoded and bit-packed in blocks of 128 (`POSTINGS_BLOCK_LEN`) with the
//! term frequencies packed beside them; the remainder (< 128 docs) is varint-encoded. Before the
//! blocks sits one skip entry per full block: its last doc id (so `seek` jumps blocks without
//! decoding them), its byte offsets, and its max term frequency and min field-length id, from
//! which the scorer computes an upper bound of the block's BM25 score (block-max pruning).
//! Positions live in a separate section so queries without phrases never touch them.
//! Byte grammar: FORMAT.md, "Postings".

mod reader;
mod writer;

pub use reader::PostingsCursor;
pub use writer::PostingsWriter;

use crate::codec::{put_u32, put_u64, put_u8, ByteReader};
use crate::error::{DecodeError, DecodeResult};

/// End-of-postings marker returned by `doc()` once a cursor is exhausted.
pub const TERMINATED: u32 = u32::MAX;

pub(crate) const SKIP_ENTRY_LEN: usize = 20;
pub const TERM_INFO_LEN: usize = 40;

/// Where a term's postings are and what bounds its scores. Fixed width in the term-info table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TermInfo {
    pub doc_freq: u32,
    pub postings_offset: u64,
    pub postings_len: u32,
    pub positions_offset: u64,
    pub positions_len: u64,
    /// Highest term frequency of any doc, and lowest field-length id of any doc: together an
    /// upper bound of the term's BM25 score in this block (MaxScore pruning).
    pub max_tf: u32,
    pub min_norm: u8,
    pub has_positions: bool,
}

impl TermInfo {
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        put_u32(out, self.doc_freq);
        put_u64(out, self.postings_offset);
        put_u32(out, self.postings_len);
        put_u64(out, self.positions_offset);
        put_u64(out, self.positions_len);
        put_u32(out, self.max_tf);
        put_u8(out, self.min_norm);
        put_u8(out, u8::from(self.has_positions));
        out.extend_from_slice(&[0, 0]);
    }

    pub(crate) fn decode(bytes: &[u8]) -> DecodeResult<TermInfo> {
        let mut r = ByteReader::new(bytes);
        Ok(TermInfo {
            doc_freq: r.u32()?,
            postings_offset: r.u64()?,
            postings_len: r.u32()?,
            positions_offset: r.u64()?,
            positions_len: r.u64()?,
            max_tf: r.u32()?,
            min_norm: r.u8()?,
            has_positions: r.u8()? != 0,
        })
    }
}

/// One skip entry: what a cursor needs to jump to a block and to bound its scores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SkipEntry {
    pub last_doc: u32,
    pub doc_offset: u32,
    pub positions_offset: u32,
    pub max_tf: u32,
    pub min_norm: u8,
    pub doc_bits: u8,
    pub tf_bits: u8,
}

impl SkipEntry {
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        put_u32(out, self.last_doc);
        put_u32(out, self.doc_offset);
        put_u32(out, self.positions_offset);
        put_u32(out, self.max_tf);
        out.extend_from_slice(&[self.min_norm, self.doc_bits, self.tf_bits, 0]);
    }

    /// Rejects bit widths above 32 here, for every user: `bitpacking` panics on them.
    #[inline]
    pub(crate) fn decode(bytes: &[u8]) -> DecodeResult<SkipEntry> {
        let mut r = ByteReader::new(bytes);
        let entry = SkipEntry {
            last_doc: r.u32()?,
            doc_offset: r.u32()?,
            positions_offset: r.u32()?,
            max_tf: r.u32()?,
            min_norm: r.u8()?,
            doc_bits: r.u8()?,
            tf_bits: r.u8()?,
        };
        if entry.doc_bits > 32 || entry.tf_bits > 32 {
            return Err(DecodeError::new("bit width above 32"));
        }
        Ok(entry)
    }
}

#[cfg(test)]
mod tests;
