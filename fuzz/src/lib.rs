//! What the fuzz targets share: the seed blocks, `reseal` (recompute every checksum of a block
//! after a mutation, so that the bytes look like a buggy writer's output rather than a damaged
//! file), and the `exercise_*` walks, which read everything `quarry check` and the queries
//! read.
//!
//! A checksum stops a mutated block at the first crc the reader checks, so a target that
//! mutates bytes and opens the result never reaches a decoder behind a crc (the `block_open`
//! target stayed at ~213 coverage edges). `reseal` makes every crc valid again: each column
//! chunk's crc in its directory, the page checksums of postings and positions, each section's
//! crc in the manifest, and the manifest's crc in the footer. Any error is then fine; a panic,
//! an abort, a hang or an allocation out of proportion to the input is a bug.

use fst::Streamer;
use quarry_format::block::pages::encode_page_checksums;
use quarry_format::block::{BlockReader, DocumentFetcher};
use quarry_format::limits::{FOOTER_LEN, MAX_CHECKSUM_PAGE_LEN, MIN_CHECKSUM_PAGE_LEN};
use quarry_format::{TermKind, Value, TERMINATED};
use quarry_index::{Analyzer, SegmentBuilder};
use quarry_query::aggregation::AggSpec;
use quarry_query::filter::Optimizations;
use quarry_query::{HitsRequest, Searcher, SortOrder};
use std::ops::Range;
use std::path::Path;
use std::sync::{Arc, OnceLock};

/// At most this many docs, terms, chunks or time groups are walked per input, so that a
/// manifest claiming many of them keeps one run short (the reader's own loops are what is
/// fuzzed for hangs; these are the harness's).
pub const MAX_ITEMS: u32 = 4096;

/// Bytes of a column chunk directory entry (FORMAT.md, "Columns").
const CHUNK_META_LEN: usize = 40;

/// A seed block, and the byte ranges of its parts (every section, the manifest, the footer,
/// the whole file) that mutations are aimed at.
pub struct Seed {
    pub name: &'static str,
    pub bytes: Vec<u8>,
    pub parts: Vec<Range<usize>>,
}

/// The seed blocks: two written by this build's `SegmentBuilder` (the current format) and the
/// committed golden blocks of versions 1 to 3 and 7 to 11, so the readers of old versions are
/// fuzzed too.
pub fn seeds() -> &'static [Seed] {
    static SEEDS: OnceLock<Vec<Seed>> = OnceLock::new();
    SEEDS.get_or_init(|| {
        let golden: [(&'static str, &'static [u8]); 8] = [
            (
                "golden v1",
                include_bytes!("../../crates/quarry-query/tests/golden/v1/blocks/00000001.qblk"),
            ),
            (
                "golden v2",
                include_bytes!("../../crates/quarry-query/tests/golden/v2/blocks/00000001.qblk"),
            ),
            (
                "golden v3",
                include_bytes!("../../crates/quarry-query/tests/golden/v3/blocks/00000001.qblk"),
            ),
            // Templated message chunks and their template dictionary.
            (
                "golden v7",
                include_bytes!("../../crates/quarry-query/tests/golden/v7/blocks/00000001.qblk"),
            ),
            // Positions from values: phrases on `message` analyse its values again.
            (
                "golden v8",
                include_bytes!("../../crates/quarry-query/tests/golden/v8/blocks/00000001.qblk"),
            ),
            // Resident sections stored compressed (the term FST and infos among them).
            (
                "golden v9",
                include_bytes!("../../crates/quarry-query/tests/golden/v9/blocks/00000001.qblk"),
            ),
            // The compact postings layout: short skip entries, tails without unit tfs.
            (
                "golden v10",
                include_bytes!("../../crates/quarry-query/tests/golden/v10/blocks/00000001.qblk"),
            ),
            // Token terms as unions of templates, and the template terms they list.
            (
                "golden v11",
                include_bytes!("../../crates/quarry-query/tests/golden/v11/blocks/00000001.qblk"),
            ),
        ];
        let mut blocks = vec![
            ("mixed types v4", write_block(mixed_events())),
            ("long postings v4", write_block(long_events())),
        ];
        blocks.extend(golden.iter().map(|&(name, bytes)| (name, bytes.to_vec())));
        blocks
            .into_iter()
            .map(|(name, bytes)| {
                let reader = BlockReader::from_bytes(Path::new(name), Arc::new(bytes.clone()))
                    .unwrap_or_else(|e| panic!("seed block {name} does not open: {e}"));
                let footer_at = bytes.len() - FOOTER_LEN;
                let manifest_offset = u64_at(&bytes, footer_at) as usize;
                let mut parts: Vec<Range<usize>> = reader
                    .manifest()
                    .sections()
                    .into_iter()
                    .filter(|(_, s)| s.len > 0)
                    .map(|(_, s)| s.offset as usize..(s.offset + s.len) as usize)
                    .collect();
                parts.push(manifest_offset..footer_at);
                parts.push(footer_at..bytes.len());
                parts.push(0..bytes.len());
                Seed { name, bytes, parts }
            })
            .collect()
    })
}

/// Events of every column type: sparse fields, a field with two types, NaN, a u64 above
/// `i64::MAX`, JSON arrays, equal and unsorted times, terms in more than 128 docs.
pub fn mixed_events() -> Vec<(i64, Vec<(String, Value)>)> {
    let messages = [
        "connection reset by peer",
        "request served in time",
        "timeout waiting for upstream connection",
        "error reading config, reset to defaults",
        "user logged in after connection reset",
    ];
    (0..300i64)
        .map(|i| {
            let mut fields = vec![
                ("message", Value::Str(messages[(i % 5) as usize].into())),
                (
                    "service",
                    Value::Str(["api", "db", "auth"][(i % 3) as usize].into()),
                ),
                (
                    "level",
                    Value::Str(["info", "warn", "error"][(i % 7 % 3) as usize].into()),
                ),
                ("host", Value::Str(format!("web-{:02}", i % 4))),
                ("status", Value::I64([200, 404, 500, 503][(i % 4) as usize])),
                (
                    "latency",
                    Value::F64(if i == 17 {
                        f64::NAN
                    } else {
                        (i * 37 % 200) as f64 / 2.0
                    }),
                ),
                ("ok", Value::Bool(i % 2 == 0)),
                (
                    "bytes",
                    Value::U64(if i == 5 {
                        u64::MAX - 3
                    } else {
                        i as u64 * 1000
                    }),
                ),
                ("seen", Value::Timestamp(1_600_000_000_000_000_000 + i * 3)),
            ];
            if i % 3 == 0 {
                fields.push(("tags", Value::Json(format!("[\"t{}\",{i},true]", i % 4))));
            }
            if i % 10 == 0 {
                fields.push(("user", Value::Str(format!("user {}", i / 10))));
            }
            fields.push((
                "code",
                if i % 4 == 0 {
                    Value::Str(format!("E{i}"))
                } else {
                    Value::I64(-i)
                },
            ));
            let time = 1_700_000_000_000_000_000 + ((i * 37) % 300) / 2 * 700_000_000;
            (
                time,
                fields
                    .into_iter()
                    .map(|(name, value)| (name.to_owned(), value))
                    .collect(),
            )
        })
        .collect()
}

/// Enough docs for several `_time` chunks (1024 docs each) and terms with many full postings
/// blocks (skip entries, galloping seeks).
pub fn long_events() -> Vec<(i64, Vec<(String, Value)>)> {
    (0..1300i64)
        .map(|i| {
            let message = match i % 7 {
                0 => "error connection reset",
                1..=3 => "request served",
                _ => "connection timeout error",
            };
            let fields = vec![
                ("message".to_owned(), Value::Str(message.into())),
                ("status".to_owned(), Value::I64(200 + i % 3 * 150)),
            ];
            (1_700_000_000_000_000_000 + i * i * 1_000_000, fields)
        })
        .collect()
}

/// What `now` is for the query targets (relative times are then reproducible).
const QUERY_NOW: i64 = 1_700_000_000_000_000_000;

/// A searcher over two blocks of `mixed_events` (one read from a file's bytes, one from
/// memory), for the query targets.
fn query_searcher() -> &'static Searcher {
    static SEARCHER: OnceLock<Searcher> = OnceLock::new();
    SEARCHER.get_or_init(|| {
        let mut events = mixed_events();
        let second = events.split_off(events.len() / 2);
        let blocks = [events, second]
            .into_iter()
            .enumerate()
            .map(|(i, events)| {
                let path = Path::new("/fuzz").join(format!("{:08}.qblk", i + 1));
                BlockReader::from_bytes(&path, Arc::new(write_block(events)))
                    .expect("a block this build wrote opens")
            })
            .collect();
        Searcher::new(blocks, Analyzer::default())
    })
}

/// The query language never panics: a query either fails to parse, with an error inside the
/// input, or is answered (over a small searcher, in every sort, with a histogram) without a
/// panic; an answer may be an error, never a crash.
pub fn check_query_text(text: &str) {
    match quarry_query::parser::parse_at(text, QUERY_NOW) {
        Err(error) => assert!(error.position <= text.len(), "{error:?} past {text:?}"),
        Ok(ast) => answer(ast),
    }
}

/// The same for Elasticsearch's query DSL: any JSON compiles or is refused, and what compiles
/// is answered.
pub fn check_dsl(data: &[u8]) {
    let Ok(json) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    if let Ok(ast) = quarry_query::dsl::compile(&json, "query", QUERY_NOW) {
        answer(ast);
    }
}

fn answer(ast: quarry_query::parser::Ast) {
    use quarry_query::field_sort::FieldSort;
    use quarry_query::{HistogramInterval, SearchRequest};
    let searcher = query_searcher();
    let sorts = [
        (SortOrder::Relevance, None),
        (SortOrder::TimeDesc, None),
        (SortOrder::Relevance, Some(FieldSort::by("status", true))),
    ];
    for (sort, sort_field) in sorts {
        let request = SearchRequest {
            ast: Some(ast.clone()),
            sort,
            sort_field,
            limit: 5,
            count: true,
            histogram: Some(HistogramInterval::Auto),
            ..SearchRequest::default()
        };
        let _ = searcher.execute(&request);
    }
}

/// The bytes of a block holding `events`, as the indexing pipeline writes it.
pub fn write_block(events: Vec<(i64, Vec<(String, Value)>)>) -> Vec<u8> {
    let mut segment = SegmentBuilder::new(Arc::new(Analyzer::default()));
    for (time, fields) in &events {
        segment.add_event(*time, fields.iter().map(|(k, v)| (k.as_str(), v)));
    }
    let dir = tempfile::tempdir().expect("temporary directory");
    let path = dir.path().join("00000001.qblk");
    segment.write_block(&path).expect("write the seed block");
    std::fs::read(&path).expect("read the seed block")
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"))
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"))
}

/// Where the `section_ref`s are in a manifest (absolute offsets in the block), found by
/// walking the manifest grammar of FORMAT.md for `version`; `None` if the manifest does not
/// parse that far. The crcs are then patched in place, so mutated manifest bytes (a
/// non-canonical varint, an odd flag) stay as the fuzzer made them.
struct SectionRefs {
    all: Vec<usize>,
    /// (directory, data) of every column.
    columns: Vec<(usize, usize)>,
    postings: usize,
    positions: usize,
    page_checksums: Option<usize>,
}

const SECTION_REF_LEN: usize = 20;

struct Walk<'a> {
    bytes: &'a [u8],
    at: usize,
    base: usize,
}

impl Walk<'_> {
    fn skip(&mut self, len: usize) -> Option<()> {
        let end = self.at.checked_add(len)?;
        (end <= self.bytes.len()).then(|| self.at = end)
    }
    fn u8(&mut self) -> Option<u8> {
        let byte = *self.bytes.get(self.at)?;
        self.at += 1;
        Some(byte)
    }
    fn varint(&mut self) -> Option<u64> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = self.u8()?;
            value |= u64::from(byte & 0x7f) << shift;
            if byte < 0x80 {
                return Some(value);
            }
        }
        None
    }
    fn flag(&mut self) -> Option<bool> {
        match self.u8()? {
            0 => Some(false),
            1 => Some(true),
            _ => None,
        }
    }
    fn section_ref(&mut self, refs: &mut Vec<usize>) -> Option<usize> {
        let at = self.base + self.at;
        self.skip(SECTION_REF_LEN)?;
        refs.push(at);
        Some(at)
    }
}

fn section_refs(manifest: &[u8], base: usize, version: u32) -> Option<SectionRefs> {
    let mut w = Walk {
        bytes: manifest,
        at: 0,
        base,
    };
    let mut all = Vec::new();
    let mut columns = Vec::new();
    w.skip(4 + 8 + 8)?;
    w.section_ref(&mut all)?; // time index
    let field_count = w.varint()?;
    for _ in 0..field_count {
        let name_len = usize::try_from(w.varint()?).ok()?;
        w.skip(name_len)?;
        let column_count = w.varint()?;
        for _ in 0..column_count {
            w.skip(1 + 8)?; // type, present count
            if w.flag()? {
                w.skip(16)?; // min, max
            }
            let directory = w.section_ref(&mut all)?;
            let data = w.section_ref(&mut all)?;
            columns.push((directory, data));
            if version >= 3 && w.flag()? {
                w.section_ref(&mut all)?; // doc values
            }
            if version >= 7 && w.flag()? {
                w.section_ref(&mut all)?; // templates
            }
            if version >= 10 && w.flag()? {
                w.section_ref(&mut all)?; // the chunks' zstd dictionary
            }
        }
        // Text flag: 2 (version 8 on) when the positions come from the values.
        let text = match w.u8()? {
            0 => false,
            1 => true,
            2 if version >= 8 => true,
            _ => return None,
        };
        if text {
            w.skip(4 + 8)?; // docs with field, total tokens
            w.section_ref(&mut all)?; // norms
        }
    }
    w.section_ref(&mut all)?; // term fst
    w.section_ref(&mut all)?; // term infos
    w.skip(8)?; // term count
    let postings = w.section_ref(&mut all)?;
    let positions = w.section_ref(&mut all)?;
    if version >= 2 {
        w.section_ref(&mut all)?; // time offsets
    }
    let page_checksums = if version >= 4 {
        Some(w.section_ref(&mut all)?)
    } else {
        None
    };
    Some(SectionRefs {
        all,
        columns,
        postings,
        positions,
        page_checksums,
    })
}

/// The bytes of a resident section as readers expand them, when they lie in the file as they
/// are: the whole section before version 9, after the codec byte of a section stored as it is
/// from version 9 (`None` for a compressed one).
fn stored_as_is(block: &[u8], section: Range<usize>, version: u32) -> Option<Range<usize>> {
    if version < 9 {
        return Some(section);
    }
    (block.get(section.start) == Some(&0)).then(|| section.start + 1..section.end)
}

/// The bytes a `section_ref` at `at` points to, if they lie below `limit`.
fn referenced(block: &[u8], at: usize, limit: usize) -> Option<Range<usize>> {
    let offset = usize::try_from(u64_at(block, at)).ok()?;
    let len = usize::try_from(u64_at(block, at + 8)).ok()?;
    let end = offset.checked_add(len)?;
    (end <= limit).then_some(offset..end)
}

/// Recomputes every checksum of `block` in place, so that whatever bytes it holds carry valid
/// crcs wherever the footer and the manifest point: chunk crcs in column directories, the page
/// checksums (v4), each section's crc in the manifest, the manifest's crc in the footer.
/// References that point outside the file are left alone (the reader rejects them).
pub fn reseal(block: &mut [u8]) {
    let Some(footer_at) = block.len().checked_sub(FOOTER_LEN) else {
        return;
    };
    let manifest_offset = u64_at(block, footer_at);
    let manifest_len = u64_at(block, footer_at + 8);
    let version = u32_at(block, footer_at + 16);
    let Some(manifest) = usize::try_from(manifest_offset)
        .ok()
        .zip(usize::try_from(manifest_len).ok())
        .and_then(|(offset, len)| Some(offset..offset.checked_add(len)?))
        .filter(|range| range.end <= footer_at)
    else {
        return;
    };
    // Sections must end before the manifest (the reader's bound).
    let limit = manifest.start;
    if let Some(refs) = section_refs(&block[manifest.clone()], manifest.start, version) {
        for &(directory, data) in &refs.columns {
            let (Some(directory), Some(data)) = (
                referenced(block, directory, limit),
                referenced(block, data, limit),
            ) else {
                continue;
            };
            // From version 9 a directory is a stored section (FORMAT.md, "Stored sections"):
            // its entries are patched where it is stored as it is, after the codec byte. A
            // compressed one keeps its chunk crcs (a mutated chunk then fails its crc).
            let directory = match stored_as_is(block, directory, version) {
                Some(directory) => directory,
                None => continue,
            };
            let mut entry = directory.start;
            while entry + CHUNK_META_LEN <= directory.end {
                let chunk = usize::try_from(u64_at(block, entry + 8))
                    .ok()
                    .and_then(|offset| data.start.checked_add(offset))
                    .and_then(|start| {
                        Some(start..start.checked_add(u32_at(block, entry + 16) as usize)?)
                    })
                    .filter(|chunk| chunk.end <= data.end);
                if let Some(chunk) = chunk {
                    let crc = crc32fast::hash(&block[chunk]);
                    block[entry + 20..entry + 24].copy_from_slice(&crc.to_le_bytes());
                }
                entry += CHUNK_META_LEN;
            }
        }
        if let Some(at) = refs.page_checksums {
            if let (Some(pages), Some(postings), Some(positions)) = (
                referenced(block, at, limit).and_then(|pages| stored_as_is(block, pages, version)),
                referenced(block, refs.postings, limit),
                referenced(block, refs.positions, limit),
            ) {
                let page_len = (pages.len() >= 4).then(|| u32_at(block, pages.start));
                if let Some(page_len) = page_len.filter(|&len| {
                    len.is_power_of_two()
                        && (MIN_CHECKSUM_PAGE_LEN..=MAX_CHECKSUM_PAGE_LEN).contains(&len)
                }) {
                    let mut encoded = Vec::new();
                    encode_page_checksums(
                        page_len,
                        &block[postings],
                        &block[positions],
                        &mut encoded,
                    );
                    if encoded.len() == pages.len() {
                        block[pages].copy_from_slice(&encoded);
                    }
                }
            }
        }
        for &at in &refs.all {
            if let Some(section) = referenced(block, at, limit) {
                let crc = crc32fast::hash(&block[section]);
                block[at + 16..at + 20].copy_from_slice(&crc.to_le_bytes());
            }
        }
    }
    let crc = crc32fast::hash(&block[manifest]);
    block[footer_at + 20..footer_at + 24].copy_from_slice(&crc.to_le_bytes());
}

/// Applies edits to a copy of `seed`: each is `part:u8 offset:u24 value:u8` (5 bytes), setting
/// byte `offset % len` of part `part % parts` to `value`. Aiming at parts rather than at the
/// whole file lets short sections (a directory, the manifest, skip entries) be hit as often
/// as long ones.
pub fn apply_edits(seed: &Seed, edits: &[u8]) -> Vec<u8> {
    let mut bytes = seed.bytes.clone();
    for edit in edits.chunks_exact(5) {
        let part = &seed.parts[edit[0] as usize % seed.parts.len()];
        let offset = u32::from_le_bytes([edit[1], edit[2], edit[3], 0]) as usize;
        bytes[part.start + offset % part.len()] = edit[4];
    }
    bytes
}

/// One part of what a block holds, read through the format crate's API by `exercise_block`.
/// An input reads one part (of its choosing), so that each run stays short.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Area {
    /// `verify`: every crc, every chunk, every posting list.
    Verify,
    /// The sparse time index and the bit-packed time offsets.
    Time,
    /// Column chunks, decoded.
    Columns,
    DocValues,
    /// Stored documents through a `DocumentFetcher`.
    Documents,
    /// The term dictionary, term infos, postings and positions.
    Terms,
}

impl Area {
    pub const ALL: [Area; 6] = [
        Area::Verify,
        Area::Time,
        Area::Columns,
        Area::DocValues,
        Area::Documents,
        Area::Terms,
    ];
}

/// Reads one area of a block; results are ignored (a server reads blocks it has not
/// verified, so reading goes on whatever `verify` would say).
pub fn exercise_block(reader: &BlockReader, area: Area) {
    let doc_count = reader.doc_count();
    let docs = doc_count.min(MAX_ITEMS);
    let edge_docs = [
        doc_count.saturating_sub(1),
        doc_count,
        doc_count.saturating_add(1),
        u32::MAX - 1,
        u32::MAX,
    ];
    let manifest = reader.manifest();
    match area {
        Area::Verify => {
            let _ = reader.verify();
        }
        Area::Time => {
            for index in 0..=reader.sparse_time_len().min(MAX_ITEMS as usize) {
                let _ = reader.sparse_time(index);
            }
            let groups = (doc_count.div_ceil(128).min(MAX_ITEMS) + 1) as usize;
            let mut times = [0i64; 128];
            for group in 0..groups {
                let _ = reader.time_group(group, &mut times);
                let base = reader.sparse_time(group).unwrap_or(0);
                for time in [
                    i64::MIN,
                    base.wrapping_sub(1),
                    base,
                    base.wrapping_add(1),
                    base.wrapping_add(1_000_000_000),
                    manifest.time_min,
                    manifest.time_max,
                    i64::MAX,
                ] {
                    let _ = reader.time_group_rank(group, time);
                }
            }
            let _ = reader.time_group(usize::MAX / 256, &mut times);
            let _ = reader.time_group_rank(usize::MAX / 256, 0);
            for doc in (0..docs).chain(edge_docs) {
                let _ = reader.time_of_doc(doc);
            }
            reader.prefetch_times(&[0, docs / 2, docs.saturating_sub(1)]);
            reader.prefetch_times(&[doc_count.saturating_sub(1), doc_count]);
        }
        Area::Columns => {
            for (ordinal, field) in manifest.fields.iter().enumerate() {
                let _ = reader.norms(ordinal as u16);
                for column in &field.columns {
                    let Some(column) = reader.column(ordinal as u16, column.ty) else {
                        continue;
                    };
                    for chunk in 0..column.chunk_count().min(MAX_ITEMS as usize) {
                        let _ = column.chunk_meta(chunk);
                        let _ = column.chunk_min_max(chunk);
                        let _ = column.chunk_end(chunk);
                        let Ok(decoded) = column.decode_chunk(chunk) else {
                            continue;
                        };
                        let end = decoded
                            .end_doc
                            .min(decoded.first_doc.saturating_add(MAX_ITEMS));
                        for doc in decoded.first_doc..end {
                            let _ = decoded.get(doc);
                        }
                        for position in 0..decoded.len().min(MAX_ITEMS as usize) + 1 {
                            let _ = decoded.value_at(position);
                        }
                    }
                    for doc in (0..docs).step_by(101).chain(edge_docs) {
                        let _ = column.chunk_of(doc);
                    }
                    let _ = column.get(docs / 2);
                }
            }
        }
        Area::DocValues => {
            for (ordinal, field) in manifest.fields.iter().enumerate() {
                for column in &field.columns {
                    let Some(values) = reader.doc_values(ordinal as u16, column.ty) else {
                        continue;
                    };
                    for doc in (0..docs).chain(edge_docs) {
                        if let Some(ordinal) = values.ordinal(doc) {
                            let _ = values.string(ordinal);
                        }
                        let _ = values.raw(doc);
                    }
                    for ordinal in 0..values.dictionary_len().min(MAX_ITEMS as usize) + 1 {
                        let _ = values.string(ordinal as u32);
                    }
                    let mut sum = 0u64;
                    values.for_each_in_range(0, docs, |doc, value| {
                        sum = sum.wrapping_add(u64::from(doc) ^ value);
                    });
                    values.for_each_in_range(docs / 3, u32::MAX, |doc, value| {
                        sum = sum.wrapping_add(u64::from(doc) ^ value);
                    });
                    values.for_each_group_in_range(
                        docs / 5,
                        u32::MAX,
                        |first, base, divisor, slots| {
                            for (doc, &slot) in (first..).zip(slots) {
                                let value =
                                    base.wrapping_add(u64::from(slot).wrapping_mul(divisor));
                                sum = sum.wrapping_add(u64::from(doc) ^ value);
                            }
                        },
                    );
                    let mut cursor = values.cursor();
                    for doc in (0..docs).chain(edge_docs) {
                        let _ = cursor.ordinal(doc);
                        let _ = cursor.raw(doc);
                    }
                }
            }
        }
        Area::Documents => {
            let mut fetcher = DocumentFetcher::new(reader);
            for doc in (0..docs).chain(edge_docs) {
                let _ = fetcher.fetch(doc);
            }
        }
        Area::Terms => exercise_terms(reader, docs),
    }
}

fn exercise_terms(reader: &BlockReader, docs: u32) {
    let _ = reader.term_info_by_ordinal(reader.manifest().term_count);
    let _ = reader.term_info_by_ordinal(u64::MAX);
    let mut stream = reader.term_dictionary().stream();
    let mut positions = Vec::new();
    let mut terms = 0;
    while let Some((key, ordinal)) = stream.next() {
        terms += 1;
        if terms > MAX_ITEMS {
            break;
        }
        if let (Some(field), Some(kind)) = (
            key.get(..2).map(|f| u16::from_be_bytes([f[0], f[1]])),
            key.get(2).and_then(|&k| TermKind::from_u8(k)),
        ) {
            let _ = reader.term_info(field, kind, &key[3..]);
            if terms % 64 == 0 {
                let _ = reader.has_terms_of_kind(field, kind);
                let _ = reader.term_range(field, kind, &key[3..], &[0xff; 4]);
            }
        }
        let Ok(info) = reader.term_info_by_ordinal(ordinal) else {
            continue;
        };
        if let Ok(mut cursor) = reader.postings(&info) {
            let mut steps = 0;
            while cursor.doc() != TERMINATED && steps < MAX_ITEMS {
                let _ = cursor.term_freq();
                let _ = cursor.block_bound(cursor.doc());
                cursor.advance();
                steps += 1;
            }
            let _ = cursor.error();
        }
        if let Ok(mut cursor) = reader.postings_with_positions(&info) {
            let mut steps = 0;
            while cursor.doc() != TERMINATED && steps < MAX_ITEMS {
                // Some docs' positions skipped, as a phrase query skips them.
                if steps % 3 != 1 {
                    let _ = cursor.positions(&mut positions);
                }
                cursor.advance();
                steps += 1;
            }
            if let Ok(mut cursor) = reader.postings_with_positions(&info) {
                for target in (0..docs.saturating_add(200)).step_by(61) {
                    cursor.seek(target);
                    let _ = cursor.block_bound(target.saturating_add(100));
                    let _ = cursor.positions(&mut positions);
                }
            }
        }
        if let Ok(mut cursor) = reader.postings(&info) {
            for end in (0..docs.saturating_add(300)).step_by(150) {
                cursor.count_until(end);
            }
            let mut count = 0u32;
            cursor.for_each_remaining(|_| count += 1);
        }
    }
}

/// Queries over the seed blocks' fields: terms, phrases, ranges of each numeric type, exact
/// values, time ranges, existence, negation, everything.
pub const QUERIES: &[&str] = &[
    "error",
    "\"connection reset\"",
    "\"reset by peer\" OR timeout",
    "connection AND NOT served",
    "service:api -level:info",
    "latency:[30 TO 90]",
    "status:>=500",
    "bytes:>1000",
    "host:=\"web-02\"",
    "_time:[1700000050 TO 1700000120}",
    "_exists_:user",
    "ok:true AND latency:<20",
    "*",
];

/// Searches for `QUERIES[query % len]` through a `Searcher` over `reader`: ranked with a
/// count, tail and head in time order (with a second page), histograms and aggregations.
/// Results are ignored.
pub fn exercise_searcher(reader: BlockReader, query: usize, optimizations: Optimizations) {
    static SPECS: OnceLock<Vec<AggSpec>> = OnceLock::new();
    let specs = SPECS.get_or_init(|| {
        [
            "count",
            "terms(service, 5)",
            "terms(status, 3)",
            "stats(latency)",
            "percentiles(status)",
            "cardinality(host)",
            "max(bytes)",
            "avg(code)",
        ]
        .iter()
        .map(|spec| AggSpec::parse(spec).expect("a valid aggregation"))
        .collect()
    });
    let mut searcher = Searcher::new(vec![reader], Analyzer::default());
    searcher.set_optimizations(optimizations);
    let Ok(query) = searcher.parse(QUERIES[query % QUERIES.len()]) else {
        return;
    };
    let ranked = HitsRequest {
        limit: 5,
        count: true,
        sort: SortOrder::Relevance,
        ..Default::default()
    };
    if let Ok(result) = searcher.search(&query, &ranked) {
        for hit in &result.hits {
            let _ = searcher.event(hit);
        }
    }
    for sort in [SortOrder::TimeDesc, SortOrder::TimeAsc] {
        let mut request = HitsRequest {
            limit: 7,
            sort,
            ..Default::default()
        };
        if let Ok(result) = searcher.search(&query, &request) {
            for hit in &result.hits {
                let _ = searcher.event(hit);
            }
            if let Some(last) = result.hits.last() {
                request.after = Some(searcher.cursor_of(last));
                let _ = searcher.search(&query, &request);
            }
        }
    }
    let _ = searcher.count(&query);
    let _ = searcher.histogram(&query, 10_000_000_000);
    let _ = searcher.aggregate(&query, specs);
    let _ = searcher.aggregate_histogram(&query, 60_000_000_000, specs);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Every input of a committed corpus (`fuzz/corpus/TARGET`), through `check`: the short
    /// run of the query targets that CI makes on the stable toolchain.
    fn replay(target: &str, check: impl Fn(&[u8])) -> usize {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("corpus")
            .join(target);
        let mut inputs = 0;
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{dir:?}: {e}")) {
            let path = entry.unwrap().path();
            check(&std::fs::read(&path).unwrap());
            inputs += 1;
        }
        inputs
    }

    #[test]
    fn query_corpora_replay_without_a_panic() {
        let texts = replay("query_parse", |data| {
            check_query_text(&String::from_utf8_lossy(data))
        });
        let dsl = replay("dsl_compile", check_dsl);
        assert!(
            texts >= 40 && dsl >= 20,
            "{texts} query and {dsl} DSL inputs"
        );
    }

    /// Query-shaped text: the language's operators and words, glued at random.
    fn query_text() -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            prop::sample::select(
                &[
                    "a",
                    "error",
                    "msg:",
                    "status:",
                    "_time:",
                    "_exists_:",
                    "\\",
                    "\"",
                    "(",
                    ")",
                    "[",
                    "]",
                    "{",
                    "}",
                    " TO ",
                    "*",
                    "?",
                    "~",
                    "~2",
                    "^2",
                    "/",
                    "AND",
                    " OR ",
                    "NOT",
                    "+",
                    "-",
                    "!",
                    ":=",
                    ">=",
                    "<",
                    "now-1d/d",
                    "||+1M",
                    "2026-11-01T00:00:00",
                    " ",
                    "1.5",
                    "-0",
                    "é",
                    "\u{0}",
                ][..]
            )
            .prop_map(str::to_owned),
            any::<char>().prop_map(String::from),
        ];
        prop::collection::vec(piece, 0..16).prop_map(|pieces| pieces.concat())
    }

    /// DSL-shaped JSON: query-type keys and option names with random values, nested.
    fn dsl_json() -> impl Strategy<Value = serde_json::Value> {
        let key = prop::sample::select(
            &[
                "bool",
                "must",
                "should",
                "must_not",
                "filter",
                "match",
                "match_phrase",
                "term",
                "terms",
                "range",
                "prefix",
                "wildcard",
                "regexp",
                "fuzzy",
                "exists",
                "query_string",
                "multi_match",
                "match_all",
                "constant_score",
                "query",
                "field",
                "fields",
                "gte",
                "lt",
                "slop",
                "fuzziness",
                "operator",
                "type",
                "value",
                "format",
                "message",
                "status",
                "@timestamp",
            ][..],
        );
        let leaf = prop_oneof![
            Just(serde_json::Value::Null),
            any::<bool>().prop_map(serde_json::Value::from),
            any::<i64>().prop_map(serde_json::Value::from),
            any::<f64>().prop_map(serde_json::Value::from),
            query_text().prop_map(serde_json::Value::from),
        ];
        leaf.prop_recursive(4, 32, 4, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..3).prop_map(serde_json::Value::from),
                prop::collection::vec((key.clone(), inner), 0..3).prop_map(|pairs| {
                    serde_json::Value::Object(
                        pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect(),
                    )
                }),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn random_queries_never_panic(text in query_text()) {
            check_query_text(&text);
        }

        #[test]
        fn random_dsl_never_panics(json in dsl_json()) {
            check_dsl(json.to_string().as_bytes());
        }
    }

    fn open(bytes: Vec<u8>) -> quarry_format::Result<BlockReader> {
        BlockReader::from_bytes(Path::new("test.qblk"), Arc::new(bytes))
    }

    #[test]
    fn reseal_keeps_a_valid_block_as_it_is() {
        for seed in seeds() {
            let mut bytes = seed.bytes.clone();
            reseal(&mut bytes);
            assert!(bytes == seed.bytes, "{}", seed.name);
        }
    }

    #[test]
    fn resealed_edits_pass_every_checksum() {
        for seed in seeds() {
            // A byte in the middle of each section: the reader's crcs must all hold again
            // (decoding may still fail, but not on a checksum).
            for (index, part) in seed.parts.iter().enumerate() {
                let offset = (part.len() / 2) as u32;
                let edit = [
                    index as u8,
                    offset as u8,
                    (offset >> 8) as u8,
                    (offset >> 16) as u8,
                    0x5a,
                ];
                let mut bytes = apply_edits(seed, &edit);
                reseal(&mut bytes);
                if let Err(error) = open(bytes).and_then(|reader| reader.verify()) {
                    assert!(
                        !matches!(error, quarry_format::FormatError::ChecksumMismatch { .. }),
                        "{} part {index}: {error}",
                        seed.name
                    );
                }
            }
        }
    }

    #[test]
    fn exercising_the_seeds_finds_answers() {
        for seed in seeds() {
            let reader = open(seed.bytes.clone()).unwrap();
            reader.verify().unwrap();
            for area in Area::ALL {
                exercise_block(&reader, area);
            }
            for query in 0..QUERIES.len() {
                let reader = open(seed.bytes.clone()).unwrap();
                exercise_searcher(reader, query, Optimizations::ALL);
            }
        }
    }
}

/// Writes starting inputs for every target into `fuzz/corpus/TARGET/` (taken from the seed
/// blocks: real postings, doc values, chunk payloads and manifests), so the direct decoder
/// targets start from valid data rather than from nothing:
/// `cargo test --manifest-path fuzz/Cargo.toml --lib -- --ignored write_seed_corpus`.
#[cfg(test)]
mod seed_corpus {
    use super::*;
    use quarry_format::block::SectionRef;
    use quarry_format::postings::COMPACT_POSTINGS_VERSION;

    fn section(bytes: &[u8], section: SectionRef) -> &[u8] {
        &bytes[section.offset as usize..(section.offset + section.len) as usize]
    }

    fn write(target: &str, name: String, input: &[u8]) {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("corpus")
            .join(target);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(name), input).unwrap();
    }

    #[test]
    #[ignore]
    fn write_seed_corpus() {
        for (index, seed) in seeds().iter().enumerate() {
            for select in (0..Area::ALL.len()).chain((0..QUERIES.len()).map(|q| 128 + q)) {
                write(
                    "block_resealed",
                    format!("seed-{index}-{select}"),
                    &[index as u8, 0, select as u8],
                );
            }
            let reader =
                BlockReader::from_bytes(Path::new(seed.name), Arc::new(seed.bytes.clone()))
                    .unwrap();
            let manifest = reader.manifest();
            let footer_at = seed.bytes.len() - FOOTER_LEN;
            let manifest_offset = u64_at(&seed.bytes, footer_at) as usize;
            let version = u32_at(&seed.bytes, footer_at + 16);
            let mut input = vec![(version - 1) as u8];
            input.extend_from_slice(&seed.bytes[manifest_offset..footer_at]);
            write("manifest_decode", format!("seed-{index}"), &input);

            // Postings: the terms with the most docs and a few with one block or less.
            let (postings, positions) = (
                section(&seed.bytes, manifest.postings),
                section(&seed.bytes, manifest.positions),
            );
            let mut infos: Vec<_> = (0..manifest.term_count)
                .filter_map(|ordinal| reader.term_info_by_ordinal(ordinal).ok())
                .collect();
            infos.sort_by_key(|info| std::cmp::Reverse(info.doc_freq));
            let picked = infos.iter().take(4).chain(infos.iter().step_by(97).take(4));
            for (n, info) in picked.enumerate() {
                let term_postings =
                    &postings[info.postings_offset as usize..][..info.postings_len as usize];
                let term_positions =
                    &positions[info.positions_offset as usize..][..info.positions_len as usize];
                let mut input = info.doc_freq.to_le_bytes().to_vec();
                input.extend_from_slice(&(term_postings.len() as u16).to_le_bytes());
                // The flags of postings_decode.rs: positions, the block's layout, a max tf
                // above 1 (the target's term info has 1 or 2).
                let wide = reader.format_version() < COMPACT_POSTINGS_VERSION;
                let flags = u8::from(info.has_positions)
                    | if wide { 32 } else { 0 }
                    | if info.max_tf > 1 { 64 } else { 0 };
                input.extend_from_slice(&[0, 0, flags, 7]);
                input.extend_from_slice(term_postings);
                input.extend_from_slice(term_positions);
                write("postings_decode", format!("seed-{index}-{n}"), &input);
            }

            for (ordinal, field) in manifest.fields.iter().enumerate() {
                for column in &field.columns {
                    let name = format!("seed-{index}-{}-{}", field.name, column.ty.name());
                    if let Some(values) = column.doc_values {
                        let mut input = vec![0, 0, 200, 0];
                        // The section as readers expand it (FORMAT.md, "Stored sections").
                        let stored = section(&seed.bytes, values);
                        if version >= 9 {
                            input.extend_from_slice(
                                &quarry_format::block::stored::decode(stored).unwrap(),
                            );
                        } else {
                            input.extend_from_slice(stored);
                        }
                        write("docvalues_decode", name.clone(), &input);
                    }
                    // Up to four chunks of the column, decompressed.
                    let reader_column = reader.column(ordinal as u16, column.ty).unwrap();
                    let data = section(&seed.bytes, column.data);
                    let mut input = vec![column.ty as u8 - 1, 0];
                    input.extend_from_slice(&manifest.doc_count.to_le_bytes());
                    for chunk in 0..reader_column.chunk_count().min(4) {
                        let meta = reader_column.chunk_meta(chunk).unwrap();
                        let compressed = &data[meta.offset as usize..][..meta.len as usize];
                        let payload = zstd::bulk::decompress(compressed, 1 << 24).unwrap();
                        input.extend_from_slice(&meta.first_doc.to_le_bytes());
                        input.extend_from_slice(&(payload.len() as u16).to_le_bytes());
                        input.extend_from_slice(&payload);
                    }
                    write("column_decode", name, &input);
                }
            }
        }
    }
}
