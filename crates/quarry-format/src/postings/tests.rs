//! `PostingsWriter` → `PostingsCursor` round trips against a model: a term's sorted docs, their
//! term frequencies and positions as plain vectors, searched by brute force.

use super::*;
use crate::limits::POSTINGS_BLOCK_LEN;
use proptest::prelude::*;

const BLOCK: usize = POSTINGS_BLOCK_LEN;

/// One term as the writer takes it, and the model the cursor is checked against.
#[derive(Debug, Clone)]
struct TermModel {
    docs: Vec<u32>,
    tfs: Vec<u32>,
    /// `positions[i]` holds `tfs[i]` ascending positions of doc `docs[i]`.
    positions: Vec<Vec<u32>>,
    with_positions: bool,
    /// Seeds the field-length id of each doc (see `norm_of`).
    norm_seed: u32,
}

impl TermModel {
    fn norm_of(&self, doc: u32) -> u8 {
        (doc.wrapping_mul(self.norm_seed | 1).rotate_left(9) >> 24) as u8
    }

    fn flat_positions(&self) -> Vec<u32> {
        self.positions.iter().flatten().copied().collect()
    }

    /// Index of the first doc `>= target`.
    fn first_at_or_after(&self, target: u32) -> usize {
        self.docs.partition_point(|&d| d < target)
    }

    fn doc_at(&self, index: usize) -> u32 {
        self.docs.get(index).copied().unwrap_or(TERMINATED)
    }

    fn full_blocks(&self) -> usize {
        self.docs.len() / BLOCK
    }

    /// (last doc, max tf, min norm id) of full block `block`.
    fn block_bound(&self, block: usize) -> (u32, u32, u8) {
        let range = block * BLOCK..(block + 1) * BLOCK;
        let max_tf = self.tfs[range.clone()].iter().copied().max().unwrap();
        let min_norm = self.docs[range.clone()]
            .iter()
            .map(|&d| self.norm_of(d))
            .min()
            .unwrap();
        // The compact layout keeps a block's max tf up to 254; above, it is unbounded.
        let max_tf = if max_tf >= 255 { u32::MAX } else { max_tf };
        (self.docs[range.end - 1], max_tf, min_norm)
    }

    /// What `block_bound(target)` answers for a cursor on doc index `at`: the first full block
    /// from the cursor's on whose last doc is `>= target`.
    fn bound_from(&self, at: usize, target: u32) -> Option<(u32, u32, u8)> {
        (at / BLOCK..self.full_blocks())
            .map(|block| self.block_bound(block))
            .find(|&(last, _, _)| last >= target)
    }
}

/// Doc gaps of every size: dense runs, sparse ones, and gaps that need 20+ bits, so packed
/// blocks use many bit widths.
fn gap_strategy() -> BoxedStrategy<u32> {
    prop_oneof![
        8 => 1u32..4,
        4 => 1u32..200,
        1 => 1u32..1 << 20,
        1 => 1u32..1 << 26,
    ]
    .boxed()
}

fn tf_strategy() -> BoxedStrategy<u32> {
    prop_oneof![8 => 1u32..4, 2 => 1u32..40, 1 => 100u32..300].boxed()
}

/// A term with 0..1000 docs (so full blocks of 128 and a tail), random tfs and positions.
fn term_strategy() -> impl Strategy<Value = TermModel> {
    let len = prop_oneof![
        1 => 0usize..3,
        2 => 120usize..140,
        1 => Just(2 * BLOCK),
        4 => 0usize..1000,
    ];
    let first = prop_oneof![Just(0u32), 0u32..1000, 0u32..u32::MAX / 2];
    (len, first, any::<bool>(), any::<u32>())
        .prop_flat_map(|(len, first, with_positions, norm_seed)| {
            let per_doc = (gap_strategy(), tf_strategy(), any::<u64>());
            (
                Just(first),
                proptest::collection::vec(per_doc, len),
                Just(with_positions),
                Just(norm_seed),
            )
        })
        .prop_map(|(first, per_doc, with_positions, norm_seed)| {
            let mut model = TermModel {
                docs: Vec::new(),
                tfs: Vec::new(),
                positions: Vec::new(),
                with_positions,
                norm_seed,
            };
            let mut doc = first;
            for (i, (gap, tf, position_seed)) in per_doc.into_iter().enumerate() {
                if i > 0 {
                    // Doc ids stop below TERMINATED; a list that would pass it is cut short.
                    match doc.checked_add(gap).filter(|&d| d < TERMINATED) {
                        Some(next) => doc = next,
                        None => break,
                    }
                }
                model.docs.push(doc);
                model.tfs.push(tf);
                model.positions.push(positions_of(tf, position_seed));
            }
            model
        })
}

/// `tf` strictly ascending positions derived from `seed`: small gaps, sometimes a large one.
fn positions_of(tf: u32, seed: u64) -> Vec<u32> {
    let mut state = seed | 1;
    let mut position = (seed % 5) as u32;
    (0..tf)
        .map(|i| {
            if i > 0 {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                let gap = if state.is_multiple_of(16) {
                    state % 100_000
                } else {
                    state % 8
                };
                position += 1 + gap as u32;
            }
            position
        })
        .collect()
}

/// Writes `terms` one after another into one writer, so later terms sit at non-zero offsets.
fn write_terms(terms: &[TermModel]) -> (PostingsWriter, Vec<TermInfo>) {
    let mut writer = PostingsWriter::default();
    let infos = terms
        .iter()
        .map(|term| {
            let positions = term.flat_positions();
            writer.write_term(
                &term.docs,
                &term.tfs,
                |doc| term.norm_of(doc),
                term.with_positions.then_some(&positions[..]),
            )
        })
        .collect();
    (writer, infos)
}

fn check_term_info(term: &TermModel, info: &TermInfo) -> Result<(), TestCaseError> {
    prop_assert_eq!(info.doc_freq as usize, term.docs.len());
    prop_assert_eq!(info.max_tf, term.tfs.iter().copied().max().unwrap_or(0));
    let min_norm = term
        .docs
        .iter()
        .map(|&d| term.norm_of(d))
        .min()
        .unwrap_or(0);
    prop_assert_eq!(info.min_norm, min_norm);
    prop_assert_eq!(info.has_positions, term.with_positions);
    if !term.with_positions {
        prop_assert_eq!(info.positions_len, 0);
    }
    Ok(())
}

/// Full iteration with `advance`: every doc, tf, positions and block bound, then `TERMINATED`.
fn check_iteration(
    term: &TermModel,
    info: &TermInfo,
    writer: &PostingsWriter,
) -> Result<(), TestCaseError> {
    let mut cursor = PostingsCursor::try_new(info, &writer.postings, &writer.positions).unwrap();
    prop_assert_eq!(cursor.doc_freq() as usize, term.docs.len());
    let mut positions = Vec::new();
    for (i, &doc) in term.docs.iter().enumerate() {
        prop_assert_eq!(cursor.doc(), doc, "doc index {}", i);
        prop_assert_eq!(cursor.term_freq(), term.tfs[i], "tf of doc {}", doc);
        if term.with_positions {
            cursor.positions(&mut positions).unwrap();
            prop_assert_eq!(&positions, &term.positions[i], "positions of doc {}", doc);
        }
        prop_assert_eq!(cursor.block_bound(doc), term.bound_from(i, doc));
        let next = cursor.advance();
        prop_assert_eq!(next, term.doc_at(i + 1));
    }
    prop_assert_eq!(cursor.doc(), TERMINATED);
    prop_assert_eq!(cursor.term_freq(), 0);
    prop_assert_eq!(cursor.advance(), TERMINATED);
    prop_assert_eq!(cursor.seek(0), TERMINATED);
    cursor.positions(&mut positions).unwrap();
    prop_assert!(positions.is_empty());
    prop_assert_eq!(cursor.error(), None);
    Ok(())
}

/// One step of a random walk over a cursor.
#[derive(Debug, Clone)]
enum Step {
    Advance,
    /// Seek to a target picked near a doc of the term (index into docs, offset) or anywhere.
    SeekNear(prop::sample::Index, i8),
    SeekAnywhere(u32),
    Positions,
    /// Block bound of a target near a doc of the term.
    BoundNear(prop::sample::Index, i8),
}

fn step_strategy() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => Just(Step::Advance),
        4 => (any::<prop::sample::Index>(), -2i8..3).prop_map(|(i, o)| Step::SeekNear(i, o)),
        1 => any::<u32>().prop_map(Step::SeekAnywhere),
        2 => Just(Step::Positions),
        2 => (any::<prop::sample::Index>(), -2i8..3).prop_map(|(i, o)| Step::BoundNear(i, o)),
    ]
}

/// A target a few ids around a doc of the term (or around 0 for an empty term).
fn target_near(term: &TermModel, index: &prop::sample::Index, offset: i8) -> u32 {
    let base = if term.docs.is_empty() {
        0
    } else {
        term.docs[index.index(term.docs.len())]
    };
    base.saturating_add_signed(i32::from(offset))
}

/// Random walks mixing advance, seek (forward, backward, past the end), positions of some docs
/// and block bounds, each answer compared with the model.
fn check_walk(
    term: &TermModel,
    info: &TermInfo,
    writer: &PostingsWriter,
    steps: &[Step],
) -> Result<(), TestCaseError> {
    let mut cursor = PostingsCursor::try_new(info, &writer.postings, &writer.positions).unwrap();
    // Model cursor: index into docs, `docs.len()` once terminated.
    let mut at = 0usize;
    let mut positions = Vec::new();
    for step in steps {
        match step {
            Step::Advance => {
                at = (at + 1).min(term.docs.len());
                prop_assert_eq!(cursor.advance(), term.doc_at(at), "{:?}", step);
            }
            Step::SeekNear(..) | Step::SeekAnywhere(_) => {
                let target = match step {
                    Step::SeekNear(index, offset) => target_near(term, index, *offset),
                    Step::SeekAnywhere(target) => *target,
                    _ => unreachable!(),
                };
                if term.doc_at(at) < target {
                    at = term.first_at_or_after(target);
                }
                prop_assert_eq!(cursor.seek(target), term.doc_at(at), "seek({})", target);
            }
            Step::Positions if term.with_positions => {
                cursor.positions(&mut positions).unwrap();
                let expected = term.positions.get(at).map_or(&[][..], |p| &p[..]);
                prop_assert_eq!(&positions[..], expected, "positions at doc index {}", at);
            }
            Step::Positions => {}
            Step::BoundNear(index, offset) => {
                // Only meaningful on a doc: once terminated the cursor has no block.
                if at < term.docs.len() {
                    let target = target_near(term, index, *offset);
                    let bound = cursor.block_bound(target);
                    prop_assert_eq!(bound, term.bound_from(at, target), "bound({})", target);
                    if let Some((last, max_tf, min_norm)) = bound {
                        // The bound covers every doc of its block at or after the target.
                        prop_assert!(last >= target);
                        let block = term.docs.partition_point(|&d| d < last) / BLOCK;
                        for i in block * BLOCK..(block + 1) * BLOCK {
                            prop_assert!(term.tfs[i] <= max_tf);
                            prop_assert!(term.norm_of(term.docs[i]) >= min_norm);
                        }
                    }
                }
            }
        }
        prop_assert_eq!(cursor.doc(), term.doc_at(at));
        prop_assert_eq!(cursor.term_freq(), term.tfs.get(at).copied().unwrap_or(0));
    }
    prop_assert_eq!(cursor.error(), None);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn postings_round_trip(
        terms in proptest::collection::vec(term_strategy(), 1..4),
        steps in proptest::collection::vec(step_strategy(), 0..200),
    ) {
        let (writer, infos) = write_terms(&terms);
        for (term, info) in terms.iter().zip(&infos) {
            check_term_info(term, info)?;
            check_iteration(term, info, &writer)?;
            check_walk(term, info, &writer, &steps)?;
        }
    }

    /// Seeks to random increasing targets land on the first doc `>= target`.
    #[test]
    fn seek_increasing_targets(
        term in term_strategy(),
        mut targets in proptest::collection::vec(any::<u32>(), 0..100),
        near in proptest::collection::vec((any::<prop::sample::Index>(), -2i8..3), 0..100),
    ) {
        targets.extend(near.iter().map(|(index, offset)| target_near(&term, index, *offset)));
        targets.sort_unstable();
        let (writer, infos) = write_terms(std::slice::from_ref(&term));
        let mut cursor = PostingsCursor::try_new(&infos[0], &writer.postings, &writer.positions)
            .unwrap();
        for target in targets {
            let expected = term.doc_at(term.first_at_or_after(target));
            prop_assert_eq!(cursor.seek(target), expected, "seek({})", target);
        }
    }

    /// Counting up to increasing bucket ends (histograms) agrees with the model, and leaves
    /// the cursor on the first doc at or after each end.
    #[test]
    fn count_until_increasing_ends(
        term in term_strategy(),
        near in proptest::collection::vec((any::<prop::sample::Index>(), -2i8..3), 0..40),
        start in any::<prop::sample::Index>(),
    ) {
        let mut ends: Vec<u32> = near
            .iter()
            .map(|(index, offset)| target_near(&term, index, *offset))
            .collect();
        ends.sort_unstable();
        let (writer, infos) = write_terms(std::slice::from_ref(&term));
        let mut cursor = PostingsCursor::try_new(&infos[0], &writer.postings, &writer.positions)
            .unwrap();
        let first = target_near(&term, &start, 0).min(ends.first().copied().unwrap_or(0));
        cursor.seek(first);
        let mut from = first;
        for end in ends {
            let expected = term.docs.iter().filter(|&&d| d >= from && d < end).count() as u32;
            prop_assert_eq!(cursor.count_until(end), expected, "count_until({})", end);
            prop_assert_eq!(cursor.doc(), term.doc_at(term.first_at_or_after(end.max(from))));
            from = end.max(from);
        }
    }

    /// Corrupt postings or positions bytes never panic or loop: the cursor yields at most
    /// `doc_freq` strictly increasing docs, whatever it is asked.
    #[test]
    fn corrupt_postings_never_panic(
        term in term_strategy(),
        flips in proptest::collection::vec(
            (any::<bool>(), any::<prop::sample::Index>(), 1u8..=255),
            1..4,
        ),
        steps in proptest::collection::vec(step_strategy(), 0..100),
    ) {
        let (mut writer, infos) = write_terms(std::slice::from_ref(&term));
        for (in_positions, at, mask) in flips {
            let target = if in_positions { &mut writer.positions } else { &mut writer.postings };
            if !target.is_empty() {
                let i = at.index(target.len());
                target[i] ^= mask;
            }
        }
        let info = &infos[0];
        let Ok(mut cursor) = PostingsCursor::try_new(info, &writer.postings, &writer.positions)
        else {
            return Ok(());
        };
        let mut positions = Vec::new();
        let mut seen = Vec::new();
        while cursor.doc() != TERMINATED {
            seen.push(cursor.doc());
            let _ = cursor.term_freq();
            let _ = cursor.positions(&mut positions);
            let _ = cursor.block_bound(cursor.doc());
            cursor.advance();
            prop_assert!(seen.len() <= info.doc_freq as usize);
        }
        prop_assert!(seen.windows(2).all(|w| w[0] < w[1]));

        let mut cursor = PostingsCursor::try_new(info, &writer.postings, &writer.positions)
            .unwrap();
        for step in &steps {
            match step {
                Step::Advance => { cursor.advance(); }
                Step::SeekNear(index, offset) => { cursor.seek(target_near(&term, index, *offset)); }
                Step::SeekAnywhere(target) => { cursor.seek(*target); }
                Step::Positions => { let _ = cursor.positions(&mut positions); }
                Step::BoundNear(index, offset) => {
                    let _ = cursor.block_bound(target_near(&term, index, *offset));
                }
            }
            let _ = cursor.term_freq();
        }
    }
}

/// A term of 2 full blocks and a tail, with positions; doc gaps of 2^23 and tfs up to 401 make
/// each block's bit widths add up to 24 + 9 = 33.
fn two_blocks_and_tail() -> (TermModel, PostingsWriter, TermInfo) {
    let count = 2 * BLOCK as u32 + 5;
    let term = TermModel {
        docs: (0..count).map(|i| i << 23).collect(),
        tfs: (0..count).map(|i| 1 + i % 3 * 200).collect(),
        positions: (0..count)
            .map(|i| (0..1 + i % 3 * 200).map(|p| p * 2).collect())
            .collect(),
        with_positions: true,
        norm_seed: 7,
    };
    let (writer, infos) = write_terms(std::slice::from_ref(&term));
    (term, writer, infos[0])
}

/// A skip entry's bit widths above 32 are errors, also when a seek jumps over that block
/// straight into the tail (whose positions start is found through the last block's tfs).
/// Moving bits from doc_bits to tf_bits keeps the block's length, so the tail still decodes.
/// (Release builds of `bitpacking` panic on a width of 33; debug builds decode garbage.)
#[test]
fn bad_bit_width_in_skipped_block_is_an_error() {
    let (term, mut writer, info) = two_blocks_and_tail();
    // The term keeps positions bytes: compact entries of 16 bytes, the widths last.
    let entry_len = PostingsLayout::Compact.skip_entry_len(true);
    let last_skip = info.postings_offset as usize + entry_len;
    let (doc_bits, tf_bits) = (last_skip + entry_len - 2, last_skip + entry_len - 1);
    let width_sum = writer.postings[doc_bits] + writer.postings[tf_bits];
    assert!(width_sum >= 33, "widths {width_sum}");
    writer.postings[doc_bits] = width_sum - 33;
    writer.postings[tf_bits] = 33;

    let mut cursor = PostingsCursor::try_new(&info, &writer.postings, &writer.positions).unwrap();
    assert_eq!(cursor.seek(*term.docs.last().unwrap()), TERMINATED);
    let reason = cursor.error().map(|e| e.reason);
    assert_eq!(reason, Some("bit width above 32"));
}

#[test]
fn empty_term() {
    let mut writer = PostingsWriter::default();
    let info = writer.write_term(&[], &[], |_| 9, Some(&[]));
    assert_eq!(info.doc_freq, 0);
    assert_eq!((info.max_tf, info.min_norm), (0, 0));
    let mut cursor = PostingsCursor::try_new(&info, &writer.postings, &writer.positions).unwrap();
    assert_eq!(cursor.doc(), TERMINATED);
    assert_eq!(cursor.advance(), TERMINATED);
    assert_eq!(cursor.seek(5), TERMINATED);
    assert_eq!(cursor.block_bound(0), None);
}

#[test]
fn term_info_and_skip_entry_encode_round_trip() {
    let info = TermInfo {
        doc_freq: 3,
        postings_offset: u64::MAX - 1,
        postings_len: 77,
        positions_offset: 1 << 40,
        positions_len: 12,
        max_tf: u32::MAX,
        min_norm: 200,
        has_positions: true,
        ..TermInfo::default()
    };
    let mut bytes = Vec::new();
    info.encode(&mut bytes);
    assert_eq!(bytes.len(), TERM_INFO_LEN);
    assert_eq!(TermInfo::decode(&bytes).unwrap(), info);
    assert!(TermInfo::decode(&bytes[..TERM_INFO_LEN - 3]).is_err());

    let entry = SkipEntry {
        last_doc: 1 << 31,
        doc_offset: 5,
        positions_offset: 6,
        max_tf: 7,
        min_norm: 8,
        doc_bits: 9,
        tf_bits: 10,
    };
    for (layout, stored_positions, len) in [
        (PostingsLayout::Wide, false, SKIP_ENTRY_LEN),
        (PostingsLayout::Wide, true, SKIP_ENTRY_LEN),
        (PostingsLayout::Compact, false, 12),
        (PostingsLayout::Compact, true, 16),
    ] {
        let mut bytes = Vec::new();
        entry.encode(layout, stored_positions, &mut bytes);
        assert_eq!(bytes.len(), len);
        assert_eq!(layout.skip_entry_len(stored_positions), len);
        let back = SkipEntry::decode(&bytes, layout, stored_positions).unwrap();
        // A compact entry without positions bytes has no positions offset to give back.
        let positions_offset = match (layout, stored_positions) {
            (PostingsLayout::Compact, false) => 0,
            _ => entry.positions_offset,
        };
        assert_eq!(
            back,
            SkipEntry {
                positions_offset,
                ..entry
            }
        );
        // (A wide entry's last byte is padding, never read.)
        assert!(SkipEntry::decode(&bytes[..len - 2], layout, stored_positions).is_err());
    }
    // A compact entry's max tf saturates: read back, it is still a bound (the largest).
    for (max_tf, back) in [(254, 254), (255, u32::MAX), (70_000, u32::MAX)] {
        let mut bytes = Vec::new();
        SkipEntry { max_tf, ..entry }.encode(PostingsLayout::Compact, false, &mut bytes);
        let entry = SkipEntry::decode(&bytes, PostingsLayout::Compact, false).unwrap();
        assert_eq!(entry.max_tf, back);
    }
}

/// Sections too short for what a term info claims are errors at `try_new`.
#[test]
fn term_outside_sections_is_an_error() {
    let (_, writer, info) = two_blocks_and_tail();
    let postings = &writer.postings;
    let positions = &writer.positions;
    let cases: &[(TermInfo, &str)] = &[
        (
            TermInfo {
                postings_offset: postings.len() as u64,
                ..info
            },
            "postings offset past end",
        ),
        (
            TermInfo {
                postings_len: info.postings_len + 1,
                ..info
            },
            "postings length past end",
        ),
        (
            TermInfo {
                postings_offset: u64::MAX,
                ..info
            },
            "postings offset huge",
        ),
        (
            TermInfo {
                doc_freq: u32::MAX,
                ..info
            },
            "doc freq needs more skip data",
        ),
        (
            TermInfo {
                positions_offset: u64::MAX,
                ..info
            },
            "positions offset huge",
        ),
        (
            TermInfo {
                positions_len: u64::MAX,
                ..info
            },
            "positions length huge",
        ),
    ];
    for (bad, why) in cases {
        assert!(
            PostingsCursor::try_new(bad, postings, positions).is_err(),
            "{why}: accepted"
        );
    }
}

/// The compact layout's bytes, counted: a term whose every tf is 1 and that keeps no
/// positions has 12-byte skip entries and a tail of doc deltas alone; one tf of 2 in its tail
/// puts every tail doc's tf back. Both read back doc for doc.
#[test]
fn compact_layout_leaves_out_unit_tfs_and_positions_offsets() {
    let count = 2 * BLOCK as u32 + 44;
    for twice in [None, Some(2 * BLOCK + 7)] {
        let mut tfs = vec![1; count as usize];
        if let Some(at) = twice {
            tfs[at] = 2;
        }
        let term = TermModel {
            docs: (0..count).map(|i| i * 3).collect(),
            tfs,
            positions: Vec::new(),
            with_positions: false,
            norm_seed: 3,
        };
        let (writer, infos) = write_terms(std::slice::from_ref(&term));
        let info = infos[0];
        // Deltas of 3 pack in 2 bits; the tf of 1 in 0 bits (a full block's are all 1).
        let blocks = 2 * (12 + 2 * BLOCK / 8);
        let tail = match twice {
            None => 44,
            Some(_) => 2 * 44,
        };
        assert_eq!(info.postings_len as usize, blocks + tail, "{twice:?}");
        assert_eq!(info.max_tf, if twice.is_some() { 2 } else { 1 });
        check_iteration(&term, &info, &writer).unwrap();
        // The wide layout reads the same bytes otherwise: not the same docs.
        let mut wide =
            PostingsCursor::try_new_in(&info, PostingsLayout::Wide, &writer.postings, &[]);
        let same = wide.as_mut().is_ok_and(|cursor| {
            term.docs.iter().all(|&doc| {
                let here = cursor.doc() == doc;
                cursor.advance();
                here
            })
        });
        assert!(!same, "{twice:?}");
    }
}
