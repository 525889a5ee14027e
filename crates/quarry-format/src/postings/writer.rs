use super::{PostingsLayout, SkipEntry, TermInfo};
use crate::codec::put_varint;
use crate::limits::{POSTINGS_BLOCK_LEN, SHARED_POSTINGS_MIN_LEN};
use bitpacking::{BitPacker, BitPacker4x};
use std::collections::HashMap;

/// Appends terms' postings and positions to the two sections of a block.
///
/// What a term needs no bytes for, it gets none (format version 6): a term of one doc keeps
/// that doc in its term info, a term found once per doc at one position keeps that position
/// there, and a term whose postings bytes equal an earlier term's points at those bytes.
pub struct PostingsWriter {
    packer: BitPacker4x,
    pub postings: Vec<u8>,
    pub positions: Vec<u8>,
    skips: Vec<u8>,
    blocks: Vec<u8>,
    scratch: Vec<u32>,
    /// Postings written so far of at least `SHARED_POSTINGS_MIN_LEN` bytes, by their crc32
    /// and length: the offset of each.
    written: HashMap<(u32, u32), Vec<u64>>,
}

impl Default for PostingsWriter {
    fn default() -> Self {
        PostingsWriter {
            packer: BitPacker4x::new(),
            postings: Vec::new(),
            positions: Vec::new(),
            skips: Vec::new(),
            blocks: Vec::new(),
            scratch: vec![0; POSTINGS_BLOCK_LEN],
            written: HashMap::new(),
        }
    }
}

impl PostingsWriter {
    /// Writes one term. `docs` strictly increasing; `tfs[i] >= 1` is doc `i`'s term frequency;
    /// `norm_of(doc)` its field-length id (for block score bounds); `positions`, if given,
    /// holds `sum(tfs)` positions, each doc's ascending.
    pub fn write_term(
        &mut self,
        docs: &[u32],
        tfs: &[u32],
        norm_of: impl Fn(u32) -> u8,
        positions: Option<&[u32]>,
    ) -> TermInfo {
        debug_assert_eq!(docs.len(), tfs.len());
        // Once in every doc, always at the same position: the term info holds the position.
        let constant_position = positions.and_then(|all| {
            let first = *all.first()?;
            (tfs.iter().all(|&tf| tf == 1) && all.iter().all(|&p| p == first)).then_some(first)
        });
        let positions = if constant_position.is_some() {
            None
        } else {
            positions
        };
        let has_positions = positions.is_some() || constant_position.is_some();
        if let (&[doc], &[tf]) = (docs, tfs) {
            let positions_offset = self.positions.len() as u64;
            if let Some(all) = positions {
                write_positions(&mut self.positions, all, tfs);
            }
            return TermInfo {
                doc_freq: 1,
                postings_offset: self.postings.len() as u64,
                postings_len: 0,
                positions_offset,
                positions_len: self.positions.len() as u64 - positions_offset,
                max_tf: tf,
                min_norm: norm_of(doc),
                has_positions,
                inline_doc: Some(doc),
                constant_position,
                template_union: false,
            };
        }
        let postings_offset = self.postings.len() as u64;
        let positions_offset = self.positions.len() as u64;
        self.skips.clear();
        self.blocks.clear();
        let mut term_max_tf = 0;
        let mut term_min_norm = u8::MAX;
        let mut prev_last = 0u32;
        let mut position_cursor = 0usize;
        let full_blocks = docs.len() / POSTINGS_BLOCK_LEN;
        // What the compact layout leaves out: where positions start when there are none,
        // and the tails' frequencies when every one is 1 (the term's max tf says so).
        let stored_positions = positions.is_some();
        let tail_tfs = tfs.iter().any(|&tf| tf != 1);
        for block in 0..full_blocks {
            let range = block * POSTINGS_BLOCK_LEN..(block + 1) * POSTINGS_BLOCK_LEN;
            let block_docs = &docs[range.clone()];
            let block_tfs = &tfs[range];
            let mut max_tf = 0;
            let mut min_norm = u8::MAX;
            for (&doc, &tf) in block_docs.iter().zip(block_tfs) {
                max_tf = max_tf.max(tf);
                min_norm = min_norm.min(norm_of(doc));
            }
            term_max_tf = term_max_tf.max(max_tf);
            term_min_norm = term_min_norm.min(min_norm);
            let initial = prev_last;
            let doc_bits = self.packer.num_bits_sorted(initial, block_docs);
            for (slot, &tf) in self.scratch.iter_mut().zip(block_tfs) {
                *slot = tf - 1;
            }
            let tf_bits = self.packer.num_bits(&self.scratch);
            let entry = SkipEntry {
                last_doc: block_docs[POSTINGS_BLOCK_LEN - 1],
                doc_offset: self.blocks.len() as u32,
                positions_offset: (self.positions.len() as u64 - positions_offset) as u32,
                max_tf,
                min_norm,
                doc_bits,
                tf_bits,
            };
            entry.encode(PostingsLayout::LATEST, stored_positions, &mut self.skips);
            let start = self.blocks.len();
            let packed_len = (doc_bits as usize + tf_bits as usize) * POSTINGS_BLOCK_LEN / 8;
            self.blocks.resize(start + packed_len, 0);
            let written = self.packer.compress_sorted(
                initial,
                block_docs,
                &mut self.blocks[start..],
                doc_bits,
            );
            self.packer
                .compress(&self.scratch, &mut self.blocks[start + written..], tf_bits);
            prev_last = entry.last_doc;
            if let Some(all) = positions {
                let count: u32 = block_tfs.iter().sum();
                write_positions(&mut self.positions, &all[position_cursor..], block_tfs);
                position_cursor += count as usize;
            }
        }
        // Tail: fewer than a block, varint (doc delta, tf - 1) pairs, or doc deltas alone.
        let tail_start = full_blocks * POSTINGS_BLOCK_LEN;
        let mut prev = prev_last;
        for (&doc, &tf) in docs[tail_start..].iter().zip(&tfs[tail_start..]) {
            put_varint(&mut self.blocks, u64::from(doc - prev));
            if tail_tfs {
                put_varint(&mut self.blocks, u64::from(tf - 1));
            }
            prev = doc;
            term_max_tf = term_max_tf.max(tf);
            term_min_norm = term_min_norm.min(norm_of(doc));
        }
        if let Some(all) = positions {
            write_positions(
                &mut self.positions,
                &all[position_cursor..],
                &tfs[tail_start..],
            );
        }
        self.postings.extend_from_slice(&self.skips);
        self.postings.extend_from_slice(&self.blocks);
        let postings_len = (self.postings.len() as u64 - postings_offset) as u32;
        TermInfo {
            doc_freq: docs.len() as u32,
            postings_offset: self.share(postings_offset),
            postings_len,
            positions_offset,
            positions_len: self.positions.len() as u64 - positions_offset,
            max_tf: term_max_tf,
            min_norm: if docs.is_empty() { 0 } else { term_min_norm },
            has_positions,
            inline_doc: None,
            constant_position,
            template_union: false,
        }
    }

    /// Writes a term whose docs are those of the templates `list` names ((template, tf), by
    /// template; `unions::UnionFinder` found it so) as that list: `doc_freq` docs in all,
    /// `max_tf` and `min_norm` their bounds.
    pub fn write_union(
        &mut self,
        field: u16,
        list: &[(u32, u32)],
        doc_freq: u32,
        max_tf: u32,
        min_norm: u8,
    ) -> TermInfo {
        let postings_offset = self.postings.len() as u64;
        super::unions::encode_union(field, list, &mut self.postings);
        let postings_len = (self.postings.len() as u64 - postings_offset) as u32;
        TermInfo {
            doc_freq,
            postings_offset: self.share(postings_offset),
            postings_len,
            positions_offset: self.positions.len() as u64,
            positions_len: 0,
            max_tf,
            min_norm,
            has_positions: false,
            inline_doc: None,
            constant_position: None,
            template_union: true,
        }
    }

    /// Where the postings just written at `offset` (to the end) are to be read: an earlier
    /// term's equal bytes, which these then replace, or `offset`. A keyword's token and its
    /// exact term, or a number's token and its numeric term, have the same docs and
    /// frequencies; with their positions constant (or absent) their postings bytes are equal,
    /// skip entries included, so one copy serves both.
    fn share(&mut self, offset: u64) -> u64 {
        let bytes = &self.postings[offset as usize..];
        if bytes.len() < SHARED_POSTINGS_MIN_LEN {
            return offset;
        }
        let key = (crc32fast::hash(bytes), bytes.len() as u32);
        let earlier = self.written.entry(key).or_default();
        let len = bytes.len();
        let found = earlier
            .iter()
            .copied()
            .find(|&at| self.postings[at as usize..at as usize + len] == *bytes);
        match found {
            Some(at) => {
                self.postings.truncate(offset as usize);
                at
            }
            None => {
                earlier.push(offset);
                offset
            }
        }
    }
}

/// Each doc's positions as ascending deltas (the first from 0).
fn write_positions(out: &mut Vec<u8>, positions: &[u32], tfs: &[u32]) {
    let mut cursor = 0;
    for &tf in tfs {
        let mut prev = 0;
        for &position in &positions[cursor..cursor + tf as usize] {
            put_varint(out, u64::from(position - prev));
            prev = position;
        }
        cursor += tf as usize;
    }
}
