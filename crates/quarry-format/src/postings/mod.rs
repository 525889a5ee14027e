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
pub mod unions;
mod writer;

pub use reader::{CursorGuards, PostingsCursor};
pub use writer::PostingsWriter;

use crate::codec::{put_u32, put_u8, put_varint, unzigzag, zigzag, ByteReader};
use crate::error::{DecodeError, DecodeResult};

/// End-of-postings marker returned by `doc()` once a cursor is exhausted.
pub const TERMINATED: u32 = u32::MAX;

/// A skip entry's length in the wide layout (format versions 1 to 9).
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
    /// The term's only doc, kept in its dictionary entry (format version 6 on, for every term
    /// of one doc): `postings_len` is 0 and the doc's frequency is `max_tf`.
    pub inline_doc: Option<u32>,
    /// Every doc holds the term once, at this position (version 6 on; `has_positions` is
    /// true): `positions_len` is 0. Single-token values and the fixed words of a message
    /// template are such terms.
    pub constant_position: Option<u32>,
    /// The postings bytes list templates whose docs are the term's (version 11; `unions`):
    /// `BlockReader` rebuilds the postings from them. Such a term has no positions.
    pub template_union: bool,
}

/// How a version-6 term info says where the term's positions are.
const POSITIONS_NONE: u8 = 0;
const POSITIONS_STORED: u8 = 1;
const POSITIONS_CONSTANT: u8 = 2;
/// No positions, and the postings bytes are a union of templates (version 11).
const POSITIONS_NONE_UNION: u8 = 3;

impl TermInfo {
    /// The fixed-width entry of format versions 1 to 4 (this build only reads them; tests
    /// write them).
    #[cfg(test)]
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        use crate::codec::put_u64;
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

    /// Format version 6's entry (FORMAT.md, "Term dictionary"): varints, offsets as the gap
    /// from where the previous entry of its group (`prev`; none for a group's first) ended, a
    /// single doc in place of its postings' location, a constant position in place of the
    /// positions'. Postings and positions are written term after term, so most gaps are 0.
    pub(crate) fn encode_v6(&self, prev: Option<&TermInfo>, out: &mut Vec<u8>) {
        let (postings_base, positions_base) = prev.map_or((0, 0), TermInfo::ends);
        put_varint(out, u64::from(self.doc_freq));
        put_varint(out, u64::from(self.max_tf));
        put_u8(out, self.min_norm);
        put_u8(out, self.positions_kind());
        match self.inline_doc {
            Some(doc) => put_varint(out, u64::from(doc)),
            None => {
                put_varint(
                    out,
                    zigzag(self.postings_offset.wrapping_sub(postings_base) as i64),
                );
                put_varint(out, u64::from(self.postings_len));
            }
        }
        match self.constant_position {
            Some(position) => put_varint(out, u64::from(position)),
            None if self.has_positions => {
                put_varint(
                    out,
                    zigzag(self.positions_offset.wrapping_sub(positions_base) as i64),
                );
                put_varint(out, self.positions_len);
            }
            None => {}
        }
    }

    /// This entry as `decode_v6` gives it back after `prev`: what version 6 does not store
    /// (the location of postings or positions that have no bytes) taken from where `prev`
    /// ended.
    pub(crate) fn v6_form(&self, prev: Option<&TermInfo>) -> TermInfo {
        let (postings_base, positions_base) = prev.map_or((0, 0), TermInfo::ends);
        let mut info = *self;
        if info.inline_doc.is_some() {
            (info.postings_offset, info.postings_len) = (postings_base, 0);
        }
        if !info.has_positions || info.constant_position.is_some() {
            (info.positions_offset, info.positions_len) = (positions_base, 0);
        }
        info
    }

    fn positions_kind(&self) -> u8 {
        match (self.has_positions, self.constant_position) {
            (false, _) if self.template_union => POSITIONS_NONE_UNION,
            (false, _) => POSITIONS_NONE,
            (true, None) => POSITIONS_STORED,
            (true, Some(_)) => POSITIONS_CONSTANT,
        }
    }

    /// Reads an entry written by [`TermInfo::encode_v6`] with the same `prev`.
    pub(crate) fn decode_v6(
        r: &mut ByteReader<'_>,
        prev: Option<&TermInfo>,
    ) -> DecodeResult<TermInfo> {
        let (postings_base, positions_base) = prev.map_or((0, 0), TermInfo::ends);
        // The common entry, a term of several docs with stored positions, is 8 one-byte
        // fields: read it without a loop (as version 5 does, "Format v5" in BENCHMARKS.md).
        if let Some(
            &[doc_freq, max_tf, min_norm, POSITIONS_STORED, postings_gap, postings_len, positions_gap, positions_len],
        ) = r.rest().first_chunk::<8>()
        {
            let varints = [
                doc_freq,
                max_tf,
                postings_gap,
                postings_len,
                positions_gap,
                positions_len,
            ];
            if one_byte_varints(varints) && doc_freq != 1 {
                r.take(8)?;
                return Ok(TermInfo {
                    doc_freq: u32::from(doc_freq),
                    postings_offset: postings_base
                        .wrapping_add(unzigzag(u64::from(postings_gap)) as u64),
                    postings_len: u32::from(postings_len),
                    positions_offset: positions_base
                        .wrapping_add(unzigzag(u64::from(positions_gap)) as u64),
                    positions_len: u64::from(positions_len),
                    max_tf: u32::from(max_tf),
                    min_norm,
                    has_positions: true,
                    inline_doc: None,
                    constant_position: None,
                    template_union: false,
                });
            }
        }
        let doc_freq = r.varint_u32()?;
        let max_tf = r.varint_u32()?;
        let min_norm = r.u8()?;
        let kind = r.u8()?;
        let mut info = TermInfo {
            doc_freq,
            postings_offset: postings_base,
            postings_len: 0,
            positions_offset: positions_base,
            positions_len: 0,
            max_tf,
            min_norm,
            has_positions: !matches!(kind, POSITIONS_NONE | POSITIONS_NONE_UNION),
            inline_doc: None,
            constant_position: None,
            template_union: kind == POSITIONS_NONE_UNION,
        };
        if doc_freq == 1 {
            info.inline_doc = Some(r.varint_u32()?);
        } else {
            info.postings_offset = postings_base.wrapping_add(unzigzag(r.varint()?) as u64);
            info.postings_len = r.varint_u32()?;
        }
        match kind {
            POSITIONS_NONE => {}
            POSITIONS_NONE_UNION if doc_freq == 1 => {
                return Err(DecodeError::new("a union of one doc"));
            }
            POSITIONS_NONE_UNION => {}
            POSITIONS_STORED => {
                info.positions_offset = positions_base.wrapping_add(unzigzag(r.varint()?) as u64);
                info.positions_len = r.varint()?;
            }
            POSITIONS_CONSTANT => {
                if max_tf != 1 {
                    return Err(DecodeError::new(
                        "constant position with a frequency above 1",
                    ));
                }
                info.constant_position = Some(r.varint_u32()?);
            }
            _ => return Err(DecodeError::new("unknown positions kind in a term info")),
        }
        Ok(info)
    }

    /// Format version 5's entry: varints, offsets as the gap from where the previous entry of
    /// its group (`prev`; none for a group's first) ended. Postings and positions are written
    /// term after term, so a gap is 0 and an entry takes 8 bytes for most terms.
    pub(crate) fn encode_packed(&self, prev: Option<&TermInfo>, out: &mut Vec<u8>) {
        let (postings_base, positions_base) = prev.map_or((0, 0), TermInfo::ends);
        put_varint(out, u64::from(self.doc_freq));
        put_varint(
            out,
            zigzag(self.postings_offset.wrapping_sub(postings_base) as i64),
        );
        put_varint(out, u64::from(self.postings_len));
        put_varint(
            out,
            zigzag(self.positions_offset.wrapping_sub(positions_base) as i64),
        );
        put_varint(out, self.positions_len);
        put_varint(out, u64::from(self.max_tf));
        put_u8(out, self.min_norm);
        put_u8(out, u8::from(self.has_positions));
    }

    /// Reads an entry written by [`TermInfo::encode_packed`] with the same `prev`.
    pub(crate) fn decode_packed(
        r: &mut ByteReader<'_>,
        prev: Option<&TermInfo>,
    ) -> DecodeResult<TermInfo> {
        let (postings_base, positions_base) = prev.map_or((0, 0), TermInfo::ends);
        // Most entries are 8 bytes, every varint one byte: read those without a loop (a
        // numeric range over 10,000 terms spends more decoding infos than anything but its
        // postings, BENCHMARKS.md "Format v5").
        if let Some(
            &[doc_freq, postings_gap, postings_len, positions_gap, positions_len, max_tf, min_norm, flag],
        ) = r.rest().first_chunk::<8>()
        {
            let varints = [
                doc_freq,
                postings_gap,
                postings_len,
                positions_gap,
                positions_len,
                max_tf,
            ];
            if one_byte_varints(varints) && flag <= 1 {
                r.take(8)?;
                return Ok(TermInfo {
                    doc_freq: u32::from(doc_freq),
                    postings_offset: postings_base
                        .wrapping_add(unzigzag(u64::from(postings_gap)) as u64),
                    postings_len: u32::from(postings_len),
                    positions_offset: positions_base
                        .wrapping_add(unzigzag(u64::from(positions_gap)) as u64),
                    positions_len: u64::from(positions_len),
                    max_tf: u32::from(max_tf),
                    min_norm,
                    has_positions: flag == 1,
                    inline_doc: None,
                    constant_position: None,
                    template_union: false,
                });
            }
        }
        Ok(TermInfo {
            doc_freq: r.varint_u32()?,
            postings_offset: postings_base.wrapping_add(unzigzag(r.varint()?) as u64),
            postings_len: r.varint_u32()?,
            positions_offset: positions_base.wrapping_add(unzigzag(r.varint()?) as u64),
            positions_len: r.varint()?,
            max_tf: r.varint_u32()?,
            min_norm: r.u8()?,
            has_positions: match r.u8()? {
                0 => false,
                1 => true,
                _ => return Err(DecodeError::new("term info flag is not 0 or 1")),
            },
            inline_doc: None,
            constant_position: None,
            template_union: false,
        })
    }

    /// Where this term's postings and positions end.
    fn ends(&self) -> (u64, u64) {
        (
            self.postings_offset
                .wrapping_add(u64::from(self.postings_len)),
            self.positions_offset.wrapping_add(self.positions_len),
        )
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
            inline_doc: None,
            constant_position: None,
            template_union: false,
        })
    }
}

/// Whether each of six bytes is a whole varint (below 0x80): tested in one step.
#[inline]
fn one_byte_varints(bytes: [u8; 6]) -> bool {
    let [a, b, c, d, e, f] = bytes;
    u64::from_le_bytes([a, b, c, d, e, f, 0, 0]) & 0x0000_8080_8080_8080 == 0
}

/// How a block lays out its postings (FORMAT.md, "Postings"), by its format version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PostingsLayout {
    /// Versions 1 to 9: 20-byte skip entries; every tail doc with its term frequency.
    Wide,
    /// Version 10 on: skip entries of 12 bytes, 16 for a term with stored positions, the
    /// block's max tf saturating at 255; a term whose every frequency is 1 (`max_tf` 1) has
    /// tails of doc deltas alone. On 1M generated events the wide skip entries and the tails'
    /// frequencies of 1 took several MB (BENCHMARKS.md, "Format v10").
    Compact,
}

impl PostingsLayout {
    /// The layout this build writes.
    pub const LATEST: PostingsLayout = PostingsLayout::Compact;

    pub fn of_version(version: u32) -> PostingsLayout {
        if version >= COMPACT_POSTINGS_VERSION {
            PostingsLayout::Compact
        } else {
            PostingsLayout::Wide
        }
    }

    /// The length of each skip entry of a term (`stored_positions`: the term keeps positions
    /// bytes, so each entry says where its block's start).
    pub(crate) fn skip_entry_len(self, stored_positions: bool) -> usize {
        match (self, stored_positions) {
            (PostingsLayout::Wide, _) => SKIP_ENTRY_LEN,
            (PostingsLayout::Compact, false) => 12,
            (PostingsLayout::Compact, true) => 16,
        }
    }
}

/// The first format version with [`PostingsLayout::Compact`].
pub const COMPACT_POSTINGS_VERSION: u32 = 10;

/// A compact skip entry's max tf from this value on means "this or more" (a score bound
/// then takes the frequency as unbounded).
const SATURATED_TF: u8 = u8::MAX;

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
    /// Writes the entry in `layout` (`stored_positions` as for `skip_entry_len`). A compact
    /// entry's max tf above 254 reads back as `u32::MAX`, still a bound.
    pub(crate) fn encode(&self, layout: PostingsLayout, stored_positions: bool, out: &mut Vec<u8>) {
        put_u32(out, self.last_doc);
        put_u32(out, self.doc_offset);
        match layout {
            PostingsLayout::Wide => {
                put_u32(out, self.positions_offset);
                put_u32(out, self.max_tf);
                out.extend_from_slice(&[self.min_norm, self.doc_bits, self.tf_bits, 0]);
            }
            PostingsLayout::Compact => {
                if stored_positions {
                    put_u32(out, self.positions_offset);
                }
                let max_tf = self.max_tf.min(u32::from(SATURATED_TF)) as u8;
                out.extend_from_slice(&[max_tf, self.min_norm, self.doc_bits, self.tf_bits]);
            }
        }
    }

    /// Reads an entry `encode` wrote with the same layout and flag. Rejects bit widths above
    /// 32 here, for every user: `bitpacking` panics on them.
    #[inline]
    pub(crate) fn decode(
        bytes: &[u8],
        layout: PostingsLayout,
        stored_positions: bool,
    ) -> DecodeResult<SkipEntry> {
        let mut r = ByteReader::new(bytes);
        let entry = match layout {
            PostingsLayout::Wide => SkipEntry {
                last_doc: r.u32()?,
                doc_offset: r.u32()?,
                positions_offset: r.u32()?,
                max_tf: r.u32()?,
                min_norm: r.u8()?,
                doc_bits: r.u8()?,
                tf_bits: r.u8()?,
            },
            PostingsLayout::Compact => {
                let last_doc = r.u32()?;
                let doc_offset = r.u32()?;
                let positions_offset = if stored_positions { r.u32()? } else { 0 };
                let [max_tf, min_norm, doc_bits, tf_bits] = [r.u8()?, r.u8()?, r.u8()?, r.u8()?];
                SkipEntry {
                    last_doc,
                    doc_offset,
                    positions_offset,
                    max_tf: match max_tf {
                        SATURATED_TF => u32::MAX,
                        tf => u32::from(tf),
                    },
                    min_norm,
                    doc_bits,
                    tf_bits,
                }
            }
        };
        if entry.doc_bits > 32 || entry.tf_bits > 32 {
            return Err(DecodeError::new("bit width above 32"));
        }
        Ok(entry)
    }
}

#[cfg(test)]
mod tests;
