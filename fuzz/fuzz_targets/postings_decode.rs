//! One term's postings and positions, straight into `PostingsCursor` (no block, no crc): any
//! bytes and any `TermInfo` must decode to an error or to doc ids that strictly increase, never
//! a panic or a hang. When a full walk finds no error, `seek`, `count_until` and
//! `for_each_remaining` must agree with it (they skip blocks by their skip entries, which the
//! walk has checked against the decoded blocks).
//!
//! Input: `doc_freq:u32 split:u16 postings_offset:u8 positions_offset:u8 flags:u8 stride:u8`
//! then bytes, cut at `split` into the postings and the positions section. The term's
//! postings and positions run from their offset to the end of their section. Flags: 1 the
//! term has positions, 2 open without positions, 4 lengths one byte past the section, 8 an
//! inline doc, 16 a constant position, 32 the wide layout (versions 1 to 9; else the compact
//! one), 64 a max tf of 2 (the compact layout's tails then hold frequencies), 128 a union of
//! templates (refused; the postings bytes are also read as a union's list).

#![no_main]

use libfuzzer_sys::fuzz_target;
use quarry_format::postings::PostingsLayout;
use quarry_format::{PostingsCursor, TermInfo, TERMINATED};

fuzz_target!(|data: &[u8]| {
    let Some((header, rest)) = data.split_first_chunk::<10>() else {
        return;
    };
    let doc_freq = u32::from_le_bytes([header[0], header[1], header[2], header[3]]);
    let split = (u16::from_le_bytes([header[4], header[5]]) as usize).min(rest.len());
    let (postings_offset, positions_offset) = (header[6] as usize, header[7] as usize);
    let flags = header[8];
    let stride = u32::from(header[9]) + 1;
    let (postings, positions) = rest.split_at(split);
    let slack = usize::from(flags & 4 != 0);
    let info = TermInfo {
        doc_freq,
        postings_offset: postings_offset as u64,
        postings_len: (postings.len().saturating_sub(postings_offset) + slack) as u32,
        positions_offset: positions_offset as u64,
        positions_len: (positions.len().saturating_sub(positions_offset) + slack) as u64,
        max_tf: if flags & 64 != 0 { 2 } else { 1 },
        min_norm: 0,
        has_positions: flags & 1 != 0,
        inline_doc: (flags & 8 != 0).then_some(u32::from(header[9])),
        constant_position: (flags & 16 != 0).then_some(u32::from(header[7])),
        // A union's bytes are a template list, which a cursor refuses to read as postings.
        template_union: flags & 128 != 0,
    };
    // The same bytes as a union's template list (format version 11).
    let _ = quarry_format::postings::unions::decode_union(postings);
    let open = || {
        if flags & 2 != 0 {
            PostingsCursor::try_new_without_positions(&info, postings)
        } else {
            let layout = match flags & 32 {
                0 => PostingsLayout::Compact,
                _ => PostingsLayout::Wide,
            };
            PostingsCursor::try_new_in(&info, layout, postings, positions)
        }
    };

    // The full walk: doc ids strictly increase, at most doc_freq of them.
    let Ok(mut cursor) = open() else {
        return;
    };
    assert_eq!(cursor.doc_freq(), doc_freq);
    let mut docs = Vec::new();
    let mut positions_out = Vec::new();
    while cursor.doc() != TERMINATED {
        let doc = cursor.doc();
        assert!(
            docs.last().is_none_or(|&last| last < doc),
            "doc ids not increasing"
        );
        docs.push(doc);
        assert!(
            docs.len() as u64 <= u64::from(doc_freq),
            "more docs than doc_freq"
        );
        let _ = cursor.term_freq();
        if docs.len() % 3 != 1 {
            let _ = cursor.positions(&mut positions_out);
        }
        if let Some((last, _, _)) = cursor.block_bound(doc) {
            assert!(last >= doc, "block bound below its target");
        }
        let next = cursor.advance();
        assert_eq!(next, cursor.doc());
    }
    assert_eq!(cursor.advance(), TERMINATED);
    assert_eq!(cursor.term_freq(), 0);
    let clean = cursor.error().is_none();

    // Seeks forward by `stride`.
    if let Ok(mut cursor) = open() {
        let mut target = 0u32;
        loop {
            let got = cursor.seek(target);
            if clean {
                let expected = docs
                    .get(docs.partition_point(|&d| d < target))
                    .copied()
                    .unwrap_or(TERMINATED);
                assert_eq!(got, expected, "seek({target})");
            } else {
                assert!(got >= target, "seek({target}) went back to {got}");
            }
            let _ = cursor.positions(&mut positions_out);
            if got == TERMINATED {
                break;
            }
            target = got.saturating_add(stride);
        }
    }

    // Counts up to `stride * 3` past the current doc, again and again.
    if let Ok(mut cursor) = open() {
        let mut counted = 0usize;
        while cursor.doc() != TERMINATED {
            // Past the current doc, so every call moves on (and the loop ends).
            let end = cursor.doc().saturating_add(stride * 3);
            let count = cursor.count_until(end) as usize;
            if clean {
                let below = docs.partition_point(|&d| d < end);
                assert_eq!(counted + count, below, "count_until({end})");
            }
            counted += count;
            if end == u32::MAX {
                break;
            }
        }
    }

    // The rest after a seek to the middle.
    if let Ok(mut cursor) = open() {
        let middle = docs.get(docs.len() / 2).copied().unwrap_or(stride);
        cursor.seek(middle);
        let mut rest = Vec::new();
        cursor.for_each_remaining(|doc| rest.push(doc));
        if clean {
            assert_eq!(rest, docs[docs.partition_point(|&d| d < middle)..]);
        }
    }
});
