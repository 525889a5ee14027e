use super::{PostingsLayout, SkipEntry, TermInfo, TERMINATED};
use crate::block::pages::{PageGuard, PageMismatch};
use crate::codec::ByteReader;
use crate::error::{DecodeError, DecodeResult};
use crate::limits::POSTINGS_BLOCK_LEN;
use bitpacking::{BitPacker, BitPacker4x};

const BLOCK: usize = POSTINGS_BLOCK_LEN;
/// Docs `seek` compares at once before it searches further.
const SEEK_WINDOW: usize = 8;

/// Iterates one term's postings in one block file: `doc`, `advance`, `seek`, term frequency,
/// positions, and the skip data's per-block score bounds.
///
/// A cursor starts on its first doc. Bytes are checked as they are decoded: a corrupt posting
/// list yields a `DecodeError` from `try_new` / the `try_` methods or ends the iteration early,
/// never a panic or an endless loop (doc ids must strictly increase).
pub struct PostingsCursor<'a> {
    packer: BitPacker4x,
    skips: &'a [u8],
    /// How the skip entries and the tail are laid out: the block's layout, and for this
    /// term whether its skip entries say where positions start and its tail holds tfs.
    layout: PostingsLayout,
    stored_positions: bool,
    skip_entry_len: usize,
    tail_tfs: bool,
    blocks: &'a [u8],
    positions: &'a [u8],
    full_blocks: usize,
    doc_freq: u32,
    /// Index of the decoded block; `full_blocks` means the varint tail.
    block: usize,
    /// The decoded block's doc ids, then `TERMINATED` up to `SEEK_WINDOW` past its end, so
    /// that `seek` can compare the next `SEEK_WINDOW` docs with no bounds check or branch.
    docs: [u32; BLOCK + SEEK_WINDOW],
    tfs: [u32; BLOCK],
    /// The current full block's packed term frequencies (byte offset in `blocks`, bits), not
    /// yet unpacked into `tfs`: they are unpacked on first use, so counting and filtering,
    /// which never ask for a frequency, decode doc ids only.
    tfs_pending: Option<(usize, u8)>,
    len: usize,
    cursor: usize,
    doc: u32,
    /// Byte offset (in `positions`) of the current block's first doc.
    block_positions_start: usize,
    /// Lazily advanced: doc index within the block and its byte offset in `positions`.
    positions_doc: usize,
    positions_byte: usize,
    /// The term's one position in every doc, when its info says so (no positions bytes).
    constant_position: Option<u32>,
    error: Option<DecodeError>,
    /// Checks the pages of the postings and positions bytes this cursor reads before they
    /// are decoded (`None`: whoever made the cursor vouches for the bytes, as tests do).
    postings_guard: Option<PageGuard<'a>>,
    positions_guard: Option<PageGuard<'a>>,
    /// Where `blocks` and `positions` start in their sections (what the guards count in).
    blocks_base: u64,
    positions_base: u64,
}

/// The page guards of a cursor over a block's sections ([`PostingsCursor::try_new_guarded`]).
pub struct CursorGuards<'a> {
    pub postings: PageGuard<'a>,
    pub positions: Option<PageGuard<'a>>,
}

impl<'a> PostingsCursor<'a> {
    /// `postings` and `positions` are the block's whole sections, laid out as this build
    /// writes them; `info` locates the term.
    pub fn try_new(info: &TermInfo, postings: &'a [u8], positions: &'a [u8]) -> DecodeResult<Self> {
        Self::new_inner(
            info,
            PostingsLayout::LATEST,
            postings,
            Some(positions),
            None,
        )
    }

    /// As `try_new`, for sections laid out as `layout` says.
    pub fn try_new_in(
        info: &TermInfo,
        layout: PostingsLayout,
        postings: &'a [u8],
        positions: &'a [u8],
    ) -> DecodeResult<Self> {
        Self::new_inner(info, layout, postings, Some(positions), None)
    }

    /// A cursor that checks the page checksums of every byte before decoding it (what a block
    /// reader hands out): positions are read only when `guards` has a positions guard.
    pub fn try_new_guarded(
        info: &TermInfo,
        layout: PostingsLayout,
        postings: &'a [u8],
        positions: &'a [u8],
        guards: CursorGuards<'a>,
    ) -> DecodeResult<Self> {
        let positions = guards.positions.is_some().then_some(positions);
        Self::new_inner(info, layout, postings, positions, Some(guards))
    }

    /// A cursor that reads no positions (`positions` then fails for a doc with tf > 0): the
    /// caller need not have checked the positions' bytes.
    pub fn try_new_without_positions(info: &TermInfo, postings: &'a [u8]) -> DecodeResult<Self> {
        Self::new_inner(info, PostingsLayout::LATEST, postings, None, None)
    }

    fn new_inner(
        info: &TermInfo,
        layout: PostingsLayout,
        postings: &'a [u8],
        positions: Option<&'a [u8]>,
        guards: Option<CursorGuards<'a>>,
    ) -> DecodeResult<Self> {
        if info.template_union {
            // Its bytes list templates: `BlockReader` rebuilds its postings from them.
            return Err(DecodeError::new("a union of templates read as postings"));
        }
        let start = usize::try_from(info.postings_offset)
            .map_err(|_| DecodeError::new("postings offset"))?;
        let bytes = match info.inline_doc {
            Some(_) if info.doc_freq != 1 || info.postings_len != 0 => {
                return Err(DecodeError::new("an inline doc in a term of several docs"));
            }
            Some(_) => &[],
            None => postings
                .get(start..start.saturating_add(info.postings_len as usize))
                .ok_or(DecodeError::new("postings outside section"))?,
        };
        let full_blocks = info.doc_freq as usize / BLOCK;
        let stored_positions = info.has_positions && info.constant_position.is_none();
        let skip_entry_len = layout.skip_entry_len(stored_positions);
        let skip_len = full_blocks * skip_entry_len;
        if bytes.len() < skip_len {
            return Err(DecodeError::new("skip data truncated"));
        }
        let constant_position = positions.and(info.constant_position);
        let positions = match positions {
            Some(positions) if info.has_positions => {
                let start = usize::try_from(info.positions_offset)
                    .map_err(|_| DecodeError::new("positions offset"))?;
                let len = usize::try_from(info.positions_len)
                    .map_err(|_| DecodeError::new("positions length"))?;
                positions
                    .get(start..start.saturating_add(len))
                    .ok_or(DecodeError::new("positions outside section"))?
            }
            _ => &[],
        };
        let (postings_guard, positions_guard) = match guards {
            Some(guards) => (Some(guards.postings), guards.positions),
            None => (None, None),
        };
        let mut cursor = PostingsCursor {
            packer: BitPacker4x::new(),
            skips: &bytes[..skip_len],
            layout,
            stored_positions,
            skip_entry_len,
            tail_tfs: layout == PostingsLayout::Wide || info.max_tf != 1,
            blocks: &bytes[skip_len..],
            positions,
            full_blocks,
            doc_freq: info.doc_freq,
            block: 0,
            docs: [TERMINATED; BLOCK + SEEK_WINDOW],
            tfs: [0; BLOCK],
            tfs_pending: None,
            len: 0,
            cursor: 0,
            doc: TERMINATED,
            block_positions_start: 0,
            positions_doc: 0,
            positions_byte: 0,
            constant_position,
            error: None,
            postings_guard,
            positions_guard,
            blocks_base: info.postings_offset + skip_len as u64,
            positions_base: info.positions_offset,
        };
        // The skip entries are read in any order (binary searches): checked whole, up front.
        if let Some(guard) = &mut cursor.postings_guard {
            guard
                .check(info.postings_offset, cursor.blocks_base)
                .map_err(|_| PageMismatch::DECODE_ERROR)?;
        }
        if let Some(doc) = info.inline_doc {
            if doc == TERMINATED || info.max_tf == 0 {
                return Err(DecodeError::new("inline doc"));
            }
            // The varint tail of one doc, already decoded.
            (cursor.docs[0], cursor.tfs[0], cursor.len) = (doc, info.max_tf, 1);
            cursor.doc = doc;
        } else if info.doc_freq > 0 {
            cursor.load_block(0)?;
            cursor.doc = cursor.docs[0];
        }
        Ok(cursor)
    }

    pub fn doc_freq(&self) -> u32 {
        self.doc_freq
    }

    #[inline]
    pub fn doc(&self) -> u32 {
        self.doc
    }

    /// The current doc's term frequency; 0 once the cursor is exhausted (its position in the
    /// block may then be one past the end).
    #[inline]
    pub fn term_freq(&mut self) -> u32 {
        if self.doc == TERMINATED {
            return 0;
        }
        self.unpack_tfs();
        self.tfs[self.cursor]
    }

    #[inline]
    fn unpack_tfs(&mut self) {
        if let Some((start, bits)) = self.tfs_pending.take() {
            // In bounds: load_block checked the block's doc and tf bytes.
            let packed = &self.blocks[start..start + bits as usize * BLOCK / 8];
            self.packer.decompress(packed, &mut self.tfs, bits);
            for tf in &mut self.tfs {
                *tf = tf.wrapping_add(1);
            }
        }
    }

    /// The first decode error met, if iteration stopped early because of one.
    pub fn error(&self) -> Option<DecodeError> {
        self.error
    }

    fn skip_entry(&self, block: usize) -> DecodeResult<SkipEntry> {
        let start = block * self.skip_entry_len;
        SkipEntry::decode(
            self.skips
                .get(start..start + self.skip_entry_len)
                .ok_or(DecodeError::new("skip entry out of range"))?,
            self.layout,
            self.stored_positions,
        )
    }

    fn previous_last_doc(&self, block: usize) -> DecodeResult<u32> {
        if block == 0 {
            Ok(0)
        } else {
            Ok(self.skip_entry(block - 1)?.last_doc)
        }
    }

    fn load_block(&mut self, block: usize) -> DecodeResult<()> {
        self.block = block;
        self.cursor = 0;
        self.positions_doc = 0;
        let initial = self.previous_last_doc(block)?;
        if block < self.full_blocks {
            let entry = self.skip_entry(block)?;
            let start = entry.doc_offset as usize;
            let doc_len = entry.doc_bits as usize * BLOCK / 8;
            let tf_len = entry.tf_bits as usize * BLOCK / 8;
            let blocks = self.blocks;
            let packed = blocks
                .get(start..start + doc_len + tf_len)
                .ok_or(DecodeError::new("postings block outside term"))?;
            self.check_blocks(start, start + doc_len + tf_len)?;
            self.packer.decompress_sorted(
                initial,
                &packed[..doc_len],
                &mut self.docs[..BLOCK],
                entry.doc_bits,
            );
            self.tfs_pending = Some((start + doc_len, entry.tf_bits));
            if self.docs[BLOCK - 1] != entry.last_doc {
                return Err(DecodeError::new(
                    "block's last doc disagrees with skip entry",
                ));
            }
            self.len = BLOCK;
            self.block_positions_start = entry.positions_offset as usize;
        } else {
            // The tail starts after the last full block's bytes.
            let start = if block == 0 {
                0
            } else {
                let last = self.skip_entry(block - 1)?;
                last.doc_offset as usize + (last.doc_bits as usize + last.tf_bits as usize) * 16
            };
            let mut r = ByteReader::new(
                self.blocks
                    .get(start..)
                    .ok_or(DecodeError::new("postings tail outside term"))?,
            );
            let count = self.doc_freq as usize - block * BLOCK;
            self.tfs_pending = None;
            let mut doc = initial;
            for i in 0..count {
                let delta = r.varint_u32()?;
                doc = doc
                    .checked_add(delta)
                    .ok_or(DecodeError::new("doc id overflow"))?;
                self.docs[i] = doc;
                self.tfs[i] = match self.tail_tfs {
                    true => r
                        .varint_u32()?
                        .checked_add(1)
                        .ok_or(DecodeError::new("tf"))?,
                    false => 1,
                };
            }
            // Checked after decoding (where the varints end is known) and before the docs are
            // used: every byte read lies in the range checked.
            self.check_blocks(start, self.blocks.len() - r.remaining())?;
            self.docs[count..count + SEEK_WINDOW].fill(TERMINATED);
            self.len = count;
            self.block_positions_start = self.tail_positions_start()?;
        }
        self.positions_byte = self.block_positions_start;
        // Doc ids strictly increase within a block and across blocks (the first delta of a
        // block after the first is at least 1).
        let first_may_equal = block == 0;
        if self.len > 0 && !first_may_equal && self.docs[0] <= initial {
            return Err(DecodeError::new("doc ids not increasing across blocks"));
        }
        // Branch-free, so it vectorizes: an early-exit `windows(2).any(..)` was 40% of a
        // block decode in the 1-minute histogram profile.
        let docs = &self.docs[..self.len];
        let unsorted = docs
            .iter()
            .zip(docs.iter().skip(1))
            .fold(false, |bad, (a, b)| bad | (b <= a));
        if unsorted {
            return Err(DecodeError::new("doc ids not increasing"));
        }
        Ok(())
    }

    fn tail_positions_start(&mut self) -> DecodeResult<usize> {
        if self.positions.is_empty() || self.full_blocks == 0 {
            return Ok(0);
        }
        // Skip the last full block's positions: it starts at its skip offset and holds the
        // sum of its tfs; those tfs are not decoded here, so walk varints by count.
        let last = self.skip_entry(self.full_blocks - 1)?;
        let mut tfs = [0u32; BLOCK];
        let start = last.doc_offset as usize + last.doc_bits as usize * 16;
        let tf_end = start + last.tf_bits as usize * 16;
        let blocks = self.blocks;
        let packed = blocks
            .get(start..tf_end)
            .ok_or(DecodeError::new("postings block outside term"))?;
        self.check_blocks(start, tf_end)?;
        self.packer.decompress(packed, &mut tfs, last.tf_bits);
        let count: u64 = tfs.iter().map(|&tf| u64::from(tf) + 1).sum();
        let from = last.positions_offset as usize;
        let end = skip_varints(self.positions, from, count)?;
        self.check_positions(from, end)?;
        Ok(end)
    }

    /// Checks the pages of `blocks[start..end]` before their bytes are used.
    #[inline]
    fn check_blocks(&mut self, start: usize, end: usize) -> DecodeResult<()> {
        check_with(&mut self.postings_guard, self.blocks_base, start, end)
    }

    /// Checks the pages of `positions[start..end]` before their bytes are used.
    #[inline]
    fn check_positions(&mut self, start: usize, end: usize) -> DecodeResult<()> {
        check_with(&mut self.positions_guard, self.positions_base, start, end)
    }

    fn fail(&mut self, error: DecodeError) -> u32 {
        self.error = Some(error);
        self.doc = TERMINATED;
        TERMINATED
    }

    /// Moves to the next doc; returns it (or `TERMINATED`).
    #[inline]
    pub fn advance(&mut self) -> u32 {
        if self.doc == TERMINATED {
            return TERMINATED;
        }
        self.cursor += 1;
        if self.cursor < self.len {
            self.doc = self.docs[self.cursor];
            return self.doc;
        }
        self.next_block()
    }

    #[cold]
    fn next_block(&mut self) -> u32 {
        if self.block >= self.full_blocks || (self.block + 1) * BLOCK >= self.doc_freq as usize {
            self.doc = TERMINATED;
            return TERMINATED;
        }
        match self.load_block(self.block + 1) {
            Ok(()) => {
                self.doc = self.docs[0];
                self.doc
            }
            Err(e) => self.fail(e),
        }
    }

    /// The docs and term frequencies of the current block from the current doc on (empty
    /// once exhausted), for scoring a block at once; `finish_block` then moves past them.
    pub fn block_rest(&mut self) -> (&[u32], &[u32]) {
        if self.doc == TERMINATED {
            return (&[], &[]);
        }
        self.unpack_tfs();
        (
            &self.docs[self.cursor..self.len],
            &self.tfs[self.cursor..self.len],
        )
    }

    /// The doc ids of the current block from the current doc on (empty once exhausted).
    #[inline]
    pub fn block_docs(&self) -> &[u32] {
        if self.doc == TERMINATED {
            return &[];
        }
        &self.docs[self.cursor..self.len]
    }

    /// Moves `skip` docs on within what `block_docs` returned; `skip` equal to its length
    /// moves to the next block. Returns the new doc.
    #[inline]
    pub fn skip_in_block(&mut self, skip: usize) -> u32 {
        let next = self.cursor + skip;
        if next < self.len {
            self.cursor = next;
            self.doc = self.docs[next];
            self.doc
        } else {
            self.cursor = self.len - 1;
            self.next_block()
        }
    }

    /// Moves to the first doc of the next block (after `block_rest`); returns it.
    pub fn finish_block(&mut self) -> u32 {
        if self.doc == TERMINATED {
            return TERMINATED;
        }
        self.cursor = self.len - 1;
        self.next_block()
    }

    /// Calls `f` for the current doc and every later one, block by block (no per-doc check
    /// for the end of a block), leaving the cursor exhausted. For counting and bitsets.
    pub fn for_each_remaining(&mut self, mut f: impl FnMut(u32)) {
        while self.doc != TERMINATED {
            for &doc in &self.docs[self.cursor..self.len] {
                f(doc);
            }
            self.cursor = self.len - 1;
            self.next_block();
        }
    }

    /// The first full block from `from` on whose last doc is `>= target`, or `full_blocks`
    /// (the tail) if none (`from` itself when it is past the full blocks): galloping over the
    /// skip entries (1, 2, 4, ... blocks ahead, then a binary search of the last step), so a
    /// seek far ahead, as a tail's first window makes, reads a logarithmic number of entries,
    /// and a near one the next entry or two.
    fn first_block_reaching(&self, from: usize, target: u32) -> DecodeResult<usize> {
        if from >= self.full_blocks {
            return Ok(from);
        }
        let (mut lo, mut step) = (from, 1usize);
        // Invariant: every block in [from, lo) ends below the target.
        let mut hi = loop {
            let probe = lo + step - 1;
            if probe >= self.full_blocks {
                break self.full_blocks;
            }
            if self.skip_entry(probe)?.last_doc >= target {
                break probe;
            }
            lo = probe + 1;
            step *= 2;
        };
        // The answer is in [lo, hi]; hi is a block reaching the target or `full_blocks`.
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.skip_entry(mid)?.last_doc >= target {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        Ok(hi)
    }

    /// Moves to the first doc `>= target`; returns it (or `TERMINATED`).
    #[inline]
    pub fn seek(&mut self, target: u32) -> u32 {
        if self.doc >= target {
            return self.doc;
        }
        // In a dense intersection the target is most often among the next few docs: they are
        // compared all at once (no early exit to mispredict), and the call stays inline. The
        // out-of-line seek with its register saves, and the mispredicted exit of a doc-by-doc
        // scan, were most of counting `+national +post` on Wikipedia (3x tantivy's time).
        let window = &self.docs[self.cursor..self.cursor + SEEK_WINDOW];
        let below = window.iter().filter(|&&doc| doc < target).count();
        let next = self.cursor + below;
        if below < SEEK_WINDOW && next < self.len {
            self.cursor = next;
            self.doc = self.docs[next];
            return self.doc;
        }
        self.seek_beyond_window(target)
    }

    /// `seek` to a target past the next `SEEK_WINDOW` docs: whole blocks below it are skipped
    /// by their skip entries, the rest of the block binary-searched.
    #[inline(never)]
    fn seek_beyond_window(&mut self, target: u32) -> u32 {
        if self.block < self.full_blocks && self.docs[self.len - 1] < target {
            let block = match self.first_block_reaching(self.block + 1, target) {
                Ok(block) => block,
                Err(e) => return self.fail(e),
            };
            if block * BLOCK >= self.doc_freq as usize {
                self.doc = TERMINATED;
                return TERMINATED;
            }
            if let Err(e) = self.load_block(block) {
                return self.fail(e);
            }
        }
        let offset = self.docs[self.cursor..self.len].partition_point(|&d| d < target);
        if self.cursor + offset < self.len {
            self.cursor += offset;
            self.doc = self.docs[self.cursor];
            self.doc
        } else {
            self.cursor = self.len - 1;
            self.next_block()
        }
    }

    /// Counts the docs from the current one up to (not including) `end`, leaving the cursor on
    /// the first doc `>= end`. Whole blocks below `end` are counted from their skip entries
    /// without being decoded (histogram buckets between endpoint doc ids).
    pub fn count_until(&mut self, end: u32) -> u32 {
        if self.doc == TERMINATED || self.doc >= end {
            return 0;
        }
        let mut count = 0u32;
        if self.docs[self.len - 1] < end {
            count += (self.len - self.cursor) as u32;
            let block = match self.first_block_reaching(self.block + 1, end) {
                Ok(block) => block,
                Err(e) => {
                    self.fail(e);
                    return count;
                }
            };
            // Every full block before it lies below `end`.
            count += ((block - self.block - 1) * BLOCK) as u32;
            if block * BLOCK >= self.doc_freq as usize {
                self.doc = TERMINATED;
                return count;
            }
            if let Err(e) = self.load_block(block) {
                self.fail(e);
                return count;
            }
        }
        // The current block's last doc is >= end, so the partition point is inside it.
        let below = self.docs[self.cursor..self.len].partition_point(|&d| d < end);
        count += below as u32;
        self.cursor += below;
        if self.cursor >= self.len {
            // Only if the docs were not sorted, which the decoder rules out; stay in bounds.
            self.cursor = self.len - 1;
            self.next_block();
            return count;
        }
        self.doc = self.docs[self.cursor];
        count
    }

    /// Positions of the current doc, in `out` (whatever it held is replaced).
    pub fn positions(&mut self, out: &mut Vec<u32>) -> DecodeResult<()> {
        if self.doc == TERMINATED {
            out.clear();
            return Ok(());
        }
        if let Some(position) = self.constant_position {
            out.clear();
            out.push(position);
            return Ok(());
        }
        self.unpack_tfs();
        // Walk forward from the last doc whose positions were read in this block.
        if self.positions_doc > self.cursor {
            self.positions_doc = 0;
            self.positions_byte = self.block_positions_start;
        }
        let skip: u64 = self.tfs[self.positions_doc..self.cursor]
            .iter()
            .map(|&t| u64::from(t))
            .sum();
        let start = skip_varints(self.positions, self.positions_byte, skip)?;
        let bytes = self.positions.get(start..).unwrap_or(&[]);
        // Every slot is written below: only slots the buffer never had are zeroed first (the
        // zeroing of whole buffers was 3.6% of a common-word phrase).
        let tf = self.tfs[self.cursor] as usize;
        out.truncate(tf);
        out.resize(tf, 0);
        let mut at = 0;
        let mut position = 0u32;
        let mut slots = out.as_mut_slice();
        // Eight one-byte deltas at a time while the next eight bytes are all below 0x80 (a
        // common word's positions: `the` is about every fifteenth word), with no branch per
        // position; 8 * 127 added cannot overflow below the bound.
        while slots.len() >= 8 && position <= u32::MAX - 8 * 127 {
            let Some(word) = bytes.get(at..at + 8) else {
                break;
            };
            // unwrap: an 8-byte slice.
            let word: [u8; 8] = word.try_into().unwrap();
            if u64::from_le_bytes(word) & 0x8080_8080_8080_8080 != 0 {
                break;
            }
            let (eight, rest) = slots.split_at_mut(8);
            for (slot, delta) in eight.iter_mut().zip(word) {
                position += u32::from(delta);
                *slot = position;
            }
            slots = rest;
            at += 8;
        }
        for slot in slots.iter_mut() {
            // Most position deltas fit one byte: those are read with no reader's bookkeeping.
            let byte = *bytes
                .get(at)
                .ok_or(DecodeError::new("positions truncated"))?;
            let delta = if byte < 0x80 {
                at += 1;
                u32::from(byte)
            } else {
                let mut r = ByteReader::new(&bytes[at..]);
                let delta = r.varint_u32()?;
                at = bytes.len() - r.remaining();
                delta
            };
            position = position
                .checked_add(delta)
                .ok_or(DecodeError::new("position overflow"))?;
            *slot = position;
        }
        // Every byte read (the varints skipped to reach this doc, then its own) lies in
        // `positions_byte..start + at`: checked before the positions are returned.
        self.check_positions(self.positions_byte, start + at)?;
        self.positions_doc = self.cursor + 1;
        self.positions_byte = start + at;
        Ok(())
    }

    /// The skip data of the block that holds (or would hold) `target`: its last doc and score
    /// bound inputs (max tf, min norm id). Does not move the cursor ("shallow" seek). `None`
    /// past the last full block: the tail's bound is the term's.
    pub fn block_bound(&self, target: u32) -> Option<(u32, u32, u8)> {
        let mut block = self.block;
        while block < self.full_blocks {
            let entry = self.skip_entry(block).ok()?;
            if entry.last_doc >= target {
                return Some((entry.last_doc, entry.max_tf, entry.min_norm));
            }
            block += 1;
        }
        None
    }
}

/// Byte offset after `count` varints starting at `start`.
///
/// A varint ends at each byte below 0x80, so eight bytes at a time, the varints ending in
/// them are the zero high bits of a u64: a phrase over a common term skips most of that
/// term's positions (those of docs the rarer terms rule out), and this loop was the largest
/// part of `"the who"` (perf: 78% of its time decoding positions, before).
/// Checks bytes `start..end` of a slice that starts `base` bytes into its section, with
/// `guard` if the cursor has one.
#[inline]
fn check_with(
    guard: &mut Option<PageGuard<'_>>,
    base: u64,
    start: usize,
    end: usize,
) -> DecodeResult<()> {
    match guard {
        Some(guard) => guard
            .check(base + start as u64, base + end as u64)
            .map_err(|_| PageMismatch::DECODE_ERROR),
        None => Ok(()),
    }
}

fn skip_varints(bytes: &[u8], start: usize, count: u64) -> DecodeResult<usize> {
    const HIGH_BITS: u64 = 0x8080_8080_8080_8080;
    let mut offset = start;
    let mut left = count;
    while let Some(word) = bytes.get(offset..offset + 8) {
        // unwrap: an 8-byte slice.
        let word = u64::from_le_bytes(word.try_into().unwrap());
        let ends = u64::from((!word & HIGH_BITS).count_ones());
        if ends >= left {
            break;
        }
        left -= ends;
        offset += 8;
    }
    while left > 0 {
        let byte = *bytes
            .get(offset)
            .ok_or(DecodeError::new("positions truncated"))?;
        if byte < 0x80 {
            left -= 1;
        }
        offset += 1;
    }
    Ok(offset)
}

#[cfg(test)]
mod tests {
    use super::skip_varints;
    use crate::codec::{put_varint, ByteReader};
    use proptest::prelude::*;

    proptest! {
        /// Skipping eight bytes at a time lands where reading the varints one by one does,
        /// and fails where that would run out.
        #[test]
        fn skip_varints_lands_after_the_counted_varints(
            values in prop::collection::vec(prop_oneof![0u64..128, 0u64..1 << 20, any::<u64>()], 0..80),
            start in 0usize..4,
            extra in 0u64..3,
        ) {
            let mut bytes = vec![0x80u8; start];
            let first = bytes.len();
            for &v in &values {
                put_varint(&mut bytes, v);
            }
            // The start is a varint boundary: the padding is not read.
            for count in 0..=values.len() as u64 {
                let mut r = ByteReader::new(&bytes[first..]);
                for _ in 0..count {
                    r.varint().unwrap();
                }
                let expected = bytes.len() - r.remaining();
                prop_assert_eq!(skip_varints(&bytes, first, count).unwrap(), expected);
            }
            prop_assert!(skip_varints(&bytes, first, values.len() as u64 + 1 + extra).is_err());
        }
    }
}
