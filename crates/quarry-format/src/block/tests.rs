//! A block encoded with `encode_block` and read back with `BlockReader`, checked against the
//! events it was built from; then the same file corrupted byte by byte: the reader reports the
//! damage, names the file, and never panics.

use super::*;
use crate::column::{ColumnData, ColumnWriter};
use crate::fieldnorm::length_to_id;
use crate::limits::{FOOTER_LEN, POSTINGS_BLOCK_LEN, TIME_INDEX_INTERVAL};
use crate::postings::unions::DocTemplates;
use crate::postings::TERMINATED;
use crate::termdict::TermKind;
use crate::value::{ColumnType, Value};
use crate::{DecodeError, FormatError};
use fst::Streamer;
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::ops::Range;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

/// The fields of the test block, sorted by name, with their column types. `status` has two
/// columns, as a field seen with two types does.
const FIELDS: &[(&str, &[ColumnType])] = &[
    (TIME_FIELD, &[ColumnType::Timestamp]),
    ("bytes", &[ColumnType::U64]),
    ("host", &[ColumnType::Str]),
    ("message", &[ColumnType::Str]),
    ("ok", &[ColumnType::Bool]),
    ("ratio", &[ColumnType::F64]),
    ("status", &[ColumnType::I64, ColumnType::Str]),
    ("tags", &[ColumnType::Json]),
];
const HOST: u16 = 2;
const MESSAGE: u16 = 3;
const RATIO: usize = 5;
const TAGS: usize = 7;

/// A table case: what is wrong, and how a valid input is changed to make it so.
type Spoil<'a, T> = (&'a str, &'a dyn Fn(&mut T));

const WORDS: [&str; 7] = ["error", "disk", "ünïcödé", "timeout", "user", "42", "retry"];

/// One term's postings as the writer takes them.
#[derive(Debug, Default, Clone)]
struct TermPostings {
    docs: Vec<u32>,
    tfs: Vec<u32>,
    /// Per doc, its positions (empty for exact terms, which have none).
    positions: Vec<Vec<u32>>,
}

/// The events of a block and everything derived from them: the model the reader is checked
/// against.
struct Corpus {
    times: Vec<i64>,
    /// Per doc, (field, value) in manifest order: by field, then by column.
    documents: Vec<Vec<(String, Value)>>,
    /// Keyed like the term dictionary: field ordinal, kind, term bytes.
    terms: BTreeMap<(u16, TermKind, Vec<u8>), TermPostings>,
    message_norms: Vec<u8>,
    message_docs: u32,
    message_tokens: u64,
}

/// The value of `field`'s column `ty` in doc `doc` of a corpus of deterministic events.
fn value_of(doc: u32, field: &str, ty: ColumnType) -> Option<Value> {
    let d = u64::from(doc);
    match (field, ty) {
        (TIME_FIELD, _) => Some(Value::Timestamp(time_of(doc))),
        ("bytes", _) => (d % 3 != 0).then(|| Value::U64(d * 37 + u64::MAX / 2)),
        ("host", _) if d % 8 < 4 => Some(Value::Str(format!("host-{}", d % 4))),
        ("host", _) => Some(Value::Str(format!("edge host-{}", d % 4))),
        ("message", _) => (d % 5 != 4).then(|| Value::Str(message_of(doc))),
        ("ok", _) => (d % 2 == 0).then_some(Value::Bool(d % 4 == 0)),
        ("ratio", _) => (d % 7 != 0).then(|| Value::F64(d as f64 / 3.0 - 50.0)),
        ("status", ColumnType::I64) => {
            (d % 10 != 9).then(|| Value::I64(200 + (d as i64 % 3) * 100))
        }
        ("status", _) => (d % 10 == 9).then(|| Value::Str("n/a".to_owned())),
        ("tags", _) => (d % 6 == 0).then(|| Value::Json(format!("[\"t{}\",{d}]", d % 3))),
        _ => unreachable!("no field {field}"),
    }
}

/// Ascending, with pairs of equal times (doc order is stable for equal times).
fn time_of(doc: u32) -> i64 {
    1_700_000_000_000_000_000 + i64::from(doc / 2) * 1_000_000
}

/// "the" is in every message, so its postings have full blocks once there are 160+ docs.
fn message_of(doc: u32) -> String {
    let d = doc as usize;
    let mut words = vec!["the", WORDS[d % 7], WORDS[d * 3 % 5]];
    if d.is_multiple_of(3) {
        words.push("the");
    }
    words.join(" ")
}

impl Corpus {
    fn new(doc_count: u32) -> Corpus {
        let mut corpus = Corpus {
            times: (0..doc_count).map(time_of).collect(),
            documents: Vec::new(),
            terms: BTreeMap::new(),
            message_norms: Vec::new(),
            message_docs: 0,
            message_tokens: 0,
        };
        for doc in 0..doc_count {
            let mut document = Vec::new();
            for &(field, types) in FIELDS {
                for &ty in types {
                    if let Some(value) = value_of(doc, field, ty) {
                        document.push((field.to_owned(), value));
                    }
                }
            }
            corpus.documents.push(document);

            if let Some(Value::Str(host)) = value_of(doc, "host", ColumnType::Str) {
                // Its tokens keep no positions: `host` is in every doc, of the field's two
                // templates (`host-#`, `edge host-#`), so it is written as a union of them.
                for token in host.split([' ', '-']) {
                    let key = (HOST, TermKind::Token, token.as_bytes().to_vec());
                    let postings = corpus.terms.entry(key).or_default();
                    postings.docs.push(doc);
                    postings.tfs.push(1);
                    postings.positions.push(Vec::new());
                }
                let key = (HOST, TermKind::Exact, host.into_bytes());
                let postings = corpus.terms.entry(key).or_default();
                postings.docs.push(doc);
                postings.tfs.push(1);
                postings.positions.push(Vec::new());
            }
            let message = value_of(doc, "message", ColumnType::Str);
            let tokens: Vec<String> = match message {
                Some(Value::Str(text)) => text.split_whitespace().map(str::to_owned).collect(),
                _ => Vec::new(),
            };
            corpus.message_norms.push(length_to_id(tokens.len() as u32));
            corpus.message_tokens += tokens.len() as u64;
            corpus.message_docs += u32::from(!tokens.is_empty());
            for (position, token) in tokens.iter().enumerate() {
                let key = (MESSAGE, TermKind::Token, token.as_bytes().to_vec());
                let postings = corpus.terms.entry(key).or_default();
                if postings.docs.last() != Some(&doc) {
                    postings.docs.push(doc);
                    postings.tfs.push(0);
                    postings.positions.push(Vec::new());
                }
                *postings.tfs.last_mut().unwrap() += 1;
                postings.positions.last_mut().unwrap().push(position as u32);
            }
        }
        corpus
    }

    fn doc_count(&self) -> u32 {
        self.times.len() as u32
    }

    fn column(&self, field: &str, ty: ColumnType) -> ColumnData {
        let mut writer = if field == TIME_FIELD {
            ColumnWriter::for_time()
        } else if field == "message" && ty == ColumnType::Str {
            // Chunks of 16 docs with their data, and a zstd dictionary trained from the first
            // 8 (version 10): a block of more than 128 docs has one, under every test here.
            ColumnWriter::with_chunk_max_docs(ty, 16)
                .no_doc_values()
                .with_training_chunks(8)
        } else {
            ColumnWriter::new(ty)
        };
        for doc in 0..self.doc_count() {
            match value_of(doc, field, ty) {
                None => {}
                Some(Value::Str(s) | Value::Json(s)) => writer.push_str(doc, &s).unwrap(),
                Some(Value::I64(v) | Value::Timestamp(v)) => {
                    writer.push_raw(doc, v as u64).unwrap()
                }
                Some(Value::U64(v)) => writer.push_raw(doc, v).unwrap(),
                Some(Value::F64(v)) => writer.push_raw(doc, v.to_bits()).unwrap(),
                Some(Value::Bool(v)) => writer.push_raw(doc, u64::from(v)).unwrap(),
            }
        }
        writer.finish(self.doc_count()).unwrap()
    }

    fn block_input(&self) -> BlockInput {
        let fields = FIELDS
            .iter()
            .map(|&(name, types)| FieldInput {
                name: name.to_owned(),
                columns: types.iter().map(|&ty| self.column(name, ty)).collect(),
                text: (name == "message").then(|| TextInput {
                    norms: self.message_norms.clone(),
                    docs_with_field: self.message_docs,
                    total_tokens: self.message_tokens,
                    positions_from_values: false,
                }),
            })
            .collect();
        let mut inverted = InvertedIndexWriter::default();
        let mut host_templates = DocTemplates::new(self.times.len() as u32);
        for (doc, document) in self.documents.iter().enumerate() {
            for (field, value) in document {
                if let ("host", Value::Str(host)) = (field.as_str(), value) {
                    host_templates.add_str(doc as u32, host.as_bytes());
                }
            }
        }
        inverted
            .set_templates(HOST, host_templates.finish(), &[])
            .unwrap();
        for ((field, kind, term), postings) in &self.terms {
            let positions: Vec<u32> = postings.positions.iter().flatten().copied().collect();
            let norms = &self.message_norms;
            inverted
                .add_term(
                    *field,
                    *kind,
                    term,
                    &postings.docs,
                    &postings.tfs,
                    |doc| {
                        if *field == MESSAGE {
                            norms[doc as usize]
                        } else {
                            0
                        }
                    },
                    (*kind == TermKind::Token && *field == MESSAGE).then_some(&positions[..]),
                )
                .unwrap();
        }
        BlockInput {
            times: self.times.clone(),
            fields,
            inverted,
        }
    }
}

/// Writes the corpus of `doc_count` docs as `name` in `dir`; returns its path and manifest.
fn write_corpus(dir: &Path, name: &str, corpus: &Corpus) -> (std::path::PathBuf, Manifest) {
    let path = dir.join(name);
    let mut bytes = Vec::new();
    let manifest = encode_block(&path, corpus.block_input(), &mut bytes).unwrap();
    std::fs::write(&path, bytes).unwrap();
    (path, manifest)
}

/// 400 docs: 4 sparse time index entries, a term with 2 full postings blocks and a tail.
const DOC_COUNT: u32 = 400;

#[test]
fn block_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = Corpus::new(DOC_COUNT);
    let (path, written) = write_corpus(dir.path(), "a.block", &corpus);
    let reader = BlockReader::open(&path).unwrap();
    reader.verify().unwrap();

    // Manifest.
    let manifest = reader.manifest();
    assert_eq!(manifest, &written);
    assert_eq!(reader.path(), path);
    assert_eq!(reader.doc_count(), DOC_COUNT);
    assert_eq!(reader.file_len(), std::fs::metadata(&path).unwrap().len());
    assert_eq!(manifest.time_min, corpus.times[0]);
    assert_eq!(manifest.time_max, *corpus.times.last().unwrap());
    // Every doc's time from the bit-packed time offsets.
    let mut group = [0i64; 128];
    for (g, expected) in corpus.times.chunks(128).enumerate() {
        let n = reader.time_group(g, &mut group).expect("packed group");
        assert_eq!(&group[..n], expected, "group {g}");
        // Ranks read in place agree with a search of the unpacked times, for every time in
        // the group, between them and around them.
        let probes = expected
            .iter()
            .flat_map(|&t| [t - 1, t, t + 1])
            .chain([i64::MIN, i64::MAX]);
        for time in probes {
            let rank = expected.partition_point(|&t| t < time);
            assert_eq!(
                reader.time_group_rank(g, time),
                Some(rank),
                "group {g} time {time}"
            );
        }
    }
    assert_eq!(
        reader.time_group(corpus.times.len().div_ceil(128), &mut group),
        None
    );
    // The corpus' terms and the templates `host` lists.
    assert_eq!(manifest.term_count, corpus.terms.len() as u64 + 2);
    assert!(
        !dir.path().join("a.tmp").exists(),
        "temporary file left behind"
    );
    for (ordinal, &(name, types)) in FIELDS.iter().enumerate() {
        let field = &manifest.fields[ordinal];
        assert_eq!(field.name, name);
        let column_types: Vec<ColumnType> = field.columns.iter().map(|c| c.ty).collect();
        assert_eq!(column_types, types);
        for column in &field.columns {
            let present = (0..DOC_COUNT)
                .filter(|&doc| value_of(doc, name, column.ty).is_some())
                .count();
            assert_eq!(
                column.present_count, present as u64,
                "{name}:{:?}",
                column.ty
            );
        }
        assert_eq!(reader.field_ordinal(name), Some(ordinal as u16));
        assert_eq!(field.text.is_some(), ordinal == MESSAGE as usize);
    }
    let text = manifest.fields[MESSAGE as usize].text.as_ref().unwrap();
    assert_eq!(text.docs_with_field, corpus.message_docs);
    assert_eq!(text.total_tokens, corpus.message_tokens);
    for absent in ["", "zzz", "Host", "_tim", "messages"] {
        assert_eq!(reader.field_ordinal(absent), None, "{absent:?}");
    }

    // Terms and postings.
    // And the two templates `host` lists.
    assert_eq!(reader.term_dictionary().len(), corpus.terms.len() + 2);
    let host = reader
        .term_info(HOST, TermKind::Token, b"host")
        .unwrap()
        .unwrap();
    assert!(host.template_union);
    let the = &corpus.terms[&(MESSAGE, TermKind::Token, b"the".to_vec())];
    assert!(
        the.docs.len() > 2 * POSTINGS_BLOCK_LEN,
        "no full postings blocks"
    );
    let mut positions = Vec::new();
    for ((field, kind, term), expected) in &corpus.terms {
        let info = reader.term_info(*field, *kind, term).unwrap().unwrap();
        assert_eq!(info.doc_freq as usize, expected.docs.len());
        assert_eq!(
            info.has_positions,
            *kind == TermKind::Token && *field == MESSAGE
        );
        assert_eq!(info.max_tf, *expected.tfs.iter().max().unwrap());
        let mut cursor = reader.postings_with_positions(&info).unwrap();
        for (i, &doc) in expected.docs.iter().enumerate() {
            assert_eq!(cursor.doc(), doc);
            assert_eq!(cursor.term_freq(), expected.tfs[i]);
            if info.has_positions {
                cursor.positions(&mut positions).unwrap();
                assert_eq!(positions, expected.positions[i], "doc {doc}");
            }
            cursor.advance();
        }
        assert_eq!(cursor.doc(), TERMINATED);
        assert_eq!(cursor.error(), None);
    }
    let absent_terms: &[(u16, TermKind, &[u8])] = &[
        (MESSAGE, TermKind::Token, b"absent"),
        (MESSAGE, TermKind::Exact, b"the"),
        (HOST, TermKind::Token, b"host-1"),
        (HOST, TermKind::Exact, b"host-"),
        (HOST, TermKind::Exact, b"host-10"),
        (MESSAGE + 1, TermKind::Token, b"the"),
        (u16::MAX, TermKind::Token, b""),
    ];
    for &(field, kind, term) in absent_terms {
        assert_eq!(reader.term_info(field, kind, term).unwrap(), None);
    }
    assert!(reader
        .term_info_by_ordinal(corpus.terms.len() as u64 + 2)
        .is_err());
    for ordinal in [u64::MAX, u64::MAX / 40, u64::MAX / 40 - 1] {
        assert!(reader.term_info_by_ordinal(ordinal).is_err(), "{ordinal}");
    }

    // Documents.
    for doc in 0..DOC_COUNT {
        assert_eq!(
            reader.document(doc).unwrap(),
            corpus.documents[doc as usize]
        );
    }
    assert_eq!(reader.document(DOC_COUNT).unwrap(), []);
    let keep = |name: &str| name == "host" || name == "status";
    let mut fetcher = DocumentFetcher::with_fields(&reader, keep);
    for doc in 0..DOC_COUNT {
        let mut expected = corpus.documents[doc as usize].clone();
        expected.retain(|(name, _)| keep(name));
        assert_eq!(fetcher.fetch(doc).unwrap(), expected);
    }

    // Time index and the time column.
    let interval = TIME_INDEX_INTERVAL as usize;
    assert_eq!(
        reader.sparse_time_len(),
        (DOC_COUNT as usize).div_ceil(interval)
    );
    for index in 0..reader.sparse_time_len() {
        assert_eq!(
            reader.sparse_time(index),
            Some(corpus.times[index * interval])
        );
    }
    for index in [reader.sparse_time_len(), usize::MAX / 8, usize::MAX] {
        assert_eq!(reader.sparse_time(index), None, "{index}");
    }
    let time = reader.time_column().unwrap();
    for doc in 0..DOC_COUNT {
        assert_eq!(
            time.get(doc).unwrap(),
            Some(Value::Timestamp(corpus.times[doc as usize]))
        );
    }

    // Norms and columns by ordinal.
    assert_eq!(
        reader.norms(MESSAGE).unwrap(),
        Some(&corpus.message_norms[..])
    );
    assert_eq!(reader.norms(HOST).unwrap(), None);
    assert_eq!(reader.norms(u16::MAX).unwrap(), None);
    assert!(reader.column(HOST, ColumnType::Str).is_some());
    assert!(reader.column(HOST, ColumnType::I64).is_none());
    assert!(reader.column(u16::MAX, ColumnType::Str).is_none());
}

#[test]
fn open_missing_file_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("missing.block");
    let error = BlockReader::open(&path).unwrap_err();
    assert!(matches!(error, FormatError::Io { .. }), "{error}");
    assert_names_file(&error, &path);
}

/// Bad writer input is an `InvalidInput` error and leaves no file behind.
#[test]
fn encode_block_rejects_bad_input() {
    let corpus = Corpus::new(10);
    let time_only = |input: &mut BlockInput| input.fields.retain(|f| f.name == TIME_FIELD);
    let cases: &[Spoil<BlockInput>] = &[
        ("no docs", &|input| input.times.clear()),
        ("times not sorted", &|input| input.times.swap(0, 5)),
        ("fields not sorted", &|input| input.fields.swap(1, 2)),
        ("field twice", &|input| {
            input.fields[2].name = "bytes".to_owned()
        }),
        ("no _time field", &|input| {
            input.fields.remove(0);
        }),
        ("_time not a timestamp", &|input| {
            input.fields[0].columns[0] = ColumnWriter::new(ColumnType::I64).finish(10).unwrap()
        }),
        ("norms too short", &|input| {
            time_only(input);
            input.fields.push(FieldInput {
                name: "text".to_owned(),
                columns: Vec::new(),
                text: Some(TextInput {
                    norms: vec![1; 9],
                    docs_with_field: 9,
                    total_tokens: 9,
                    positions_from_values: false,
                }),
            });
        }),
    ];
    for (why, spoil) in cases {
        let dir = tempfile::tempdir().unwrap();
        let mut input = corpus.block_input();
        spoil(&mut input);
        let mut bytes = Vec::new();
        let error = encode_block(&dir.path().join("a.block"), input, &mut bytes).unwrap_err();
        assert!(
            matches!(error, FormatError::InvalidInput { .. }),
            "{why}: {error}"
        );
        assert!(bytes.is_empty(), "{why}: wrote {} bytes", bytes.len());
    }
}

#[test]
fn terms_out_of_order_are_rejected() {
    let mut inverted = InvertedIndexWriter::default();
    let add = |inverted: &mut InvertedIndexWriter, field, term: &[u8]| {
        inverted.add_term(field, TermKind::Token, term, &[0], &[1], |_| 1, Some(&[0]))
    };
    add(&mut inverted, 1, b"b").unwrap();
    assert!(add(&mut inverted, 1, b"b").is_err(), "same term twice");
    assert!(add(&mut inverted, 1, b"a").is_err(), "term before the last");
    assert!(
        add(&mut inverted, 0, b"z").is_err(),
        "field before the last"
    );
    add(&mut inverted, 2, b"a").unwrap();
}

fn assert_names_file(error: &FormatError, path: &Path) {
    let text = error.to_string();
    assert!(
        text.contains(&path.display().to_string()),
        "error does not name the file: {text}"
    );
}

/// Largest number of docs read per corrupt block: a corrupt manifest never reaches here (its
/// crc is checked), but keep the loops bounded whatever `doc_count` says.
const MAX_DOCS_READ: u32 = 1_000;

/// Reads everything a query could read from a possibly corrupt block, going on after `verify`
/// fails (a server reads blocks it has not verified). Every error must name the file. Returns
/// whether `open` or `verify` reported the corruption.
fn read_everything(path: &Path) -> bool {
    let reader = match BlockReader::open(path) {
        Ok(reader) => reader,
        Err(error) => {
            assert_names_file(&error, path);
            return true;
        }
    };
    let verified = reader.verify();
    if let Err(error) = &verified {
        assert_names_file(error, path);
    }
    let doc_count = reader.doc_count().min(MAX_DOCS_READ);

    let mut fetcher = DocumentFetcher::new(&reader);
    for doc in 0..doc_count {
        if let Err(error) = fetcher.fetch(doc) {
            assert_names_file(&error, path);
        }
    }
    for doc in (0..doc_count).step_by(37) {
        if let Err(error) = reader.document(doc) {
            assert_names_file(&error, path);
        }
    }
    for (ordinal, field) in reader.manifest().fields.iter().enumerate() {
        let _ = reader.norms(ordinal as u16);
        for column in &field.columns {
            if let Some(column) = reader.column(ordinal as u16, column.ty) {
                for chunk in 0..column.chunk_count() {
                    let _ = column.chunk_min_max(chunk);
                }
                for doc in (0..doc_count).step_by(53) {
                    let _ = column.get(doc);
                }
            }
        }
    }
    for index in 0..=reader.sparse_time_len().min(MAX_DOCS_READ as usize) {
        let _ = reader.sparse_time(index);
    }

    let mut stream = reader.term_dictionary().stream();
    let mut positions = Vec::new();
    while let Some((key, ordinal)) = stream.next() {
        if let [high, low, kind, term @ ..] = key {
            let kind = if *kind == 0 {
                TermKind::Token
            } else {
                TermKind::Exact
            };
            let field = u16::from_be_bytes([*high, *low]);
            if let Err(error) = reader.term_info(field, kind, term) {
                assert_names_file(&error, path);
            }
        }
        let info = match reader.term_info_by_ordinal(ordinal) {
            Ok(info) => info,
            Err(error) => {
                assert_names_file(&error, path);
                continue;
            }
        };
        // Every doc with `advance`, reading positions and bounds on the way.
        let mut cursor = match reader.postings(&info) {
            Ok(cursor) => cursor,
            Err(error) => {
                assert_names_file(&error, path);
                continue;
            }
        };
        let mut seen = 0u32;
        while cursor.doc() != TERMINATED {
            seen += 1;
            assert!(seen <= info.doc_freq, "more docs than the doc freq");
            let _ = cursor.term_freq();
            let _ = cursor.positions(&mut positions);
            let _ = cursor.block_bound(cursor.doc());
            cursor.advance();
        }
        if let Some(error) = cursor.error() {
            assert_names_file(&reader.corrupt("postings", error), path);
        }
        // Seeks that step through, and one that jumps straight to the tail.
        let mut cursor = reader.postings(&info).unwrap();
        for target in (0..doc_count + 64).step_by(61) {
            cursor.seek(target);
            let _ = cursor.positions(&mut positions);
            let _ = cursor.block_bound(target + 100);
        }
        let mut cursor = reader.postings(&info).unwrap();
        cursor.seek(doc_count.saturating_sub(1));
        let _ = cursor.positions(&mut positions);
    }
    verified.is_err()
}

/// Named byte ranges of a block file: the magic, every section, the manifest, the footer.
fn regions(bytes: &[u8], manifest: &Manifest) -> Vec<(Range<u64>, String)> {
    let len = bytes.len() as u64;
    let footer = &bytes[bytes.len() - FOOTER_LEN..];
    let manifest_offset = u64::from_le_bytes(footer[..8].try_into().unwrap());
    let manifest_len = u64::from_le_bytes(footer[8..16].try_into().unwrap());
    let mut regions = vec![(0..8, "leading magic".to_owned())];
    for (name, section) in manifest.sections() {
        regions.push((section.offset..section.offset + section.len, name));
    }
    regions.push((
        manifest_offset..manifest_offset + manifest_len,
        "manifest".to_owned(),
    ));
    regions.push((len - FOOTER_LEN as u64..len, "footer".to_owned()));
    regions.sort_by_key(|(range, _)| (range.start, range.end));
    regions
}

fn region_of(regions: &[(Range<u64>, String)], position: u64) -> &str {
    regions
        .iter()
        .find(|(range, _)| range.contains(&position))
        .map_or("no region", |(_, name)| name.as_str())
}

/// Writes `bytes` as a new block file in `dir`, reads everything back and removes the file;
/// panics name the damage. (A new file each time: truncating and rewriting one file is slow on
/// ext4, which flushes a file truncated and written again.)
fn read_damaged(dir: &Path, bytes: &[u8], damage: &str) -> bool {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let path = dir.join(format!(
        "damaged-{}.block",
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::write(&path, bytes).unwrap();
    let detected = catch_unwind(AssertUnwindSafe(|| read_everything(&path)))
        .unwrap_or_else(|_| panic!("reading a block with {damage} panicked"));
    std::fs::remove_file(&path).unwrap();
    detected
}

/// Events fetched through a shared `ChunkCache` are the events written, whatever the cache
/// holds: chunks of another block with the same chunk numbers (a small block's chunk 0 covers
/// docs 0..12, so serving it for the large block's doc 20 would lose its fields), chunks
/// decoded by an earlier fetcher, and a cache too small to keep any chunk.
#[test]
fn fetch_through_a_shared_chunk_cache() {
    let dir = tempfile::tempdir().unwrap();
    let small = Corpus::new(12);
    let large = Corpus::new(DOC_COUNT);
    let (small_path, _) = write_corpus(dir.path(), "small.block", &small);
    let (large_path, _) = write_corpus(dir.path(), "large.block", &large);
    let small_reader = BlockReader::open(&small_path).unwrap();
    let large_reader = BlockReader::open(&large_path).unwrap();
    for capacity in [1u64, 64 << 20] {
        let cache = crate::column::ChunkCache::new(capacity);
        for round in 0..2 {
            for (reader, corpus) in [(&small_reader, &small), (&large_reader, &large)] {
                let mut fetcher = DocumentFetcher::new(reader).cached(Some(&cache));
                // Newest first, as a tail fetches, and then in doc order.
                let docs: Vec<u32> = (0..corpus.times.len() as u32).collect();
                for &doc in docs.iter().rev().chain(&docs) {
                    assert_eq!(
                        fetcher.fetch(doc).unwrap(),
                        corpus.documents[doc as usize],
                        "capacity {capacity} round {round} doc {doc}"
                    );
                }
            }
        }
        assert!(cache.held_bytes() <= capacity, "{cache:?}");
        if capacity > 1 {
            assert!(cache.held_bytes() > 0, "{cache:?}");
        }
    }
}

/// A small block (the exhaustive tests touch each of its bytes), written once.
fn small_block() -> &'static (Vec<u8>, Manifest) {
    static BLOCK: OnceLock<(Vec<u8>, Manifest)> = OnceLock::new();
    BLOCK.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let (path, manifest) = write_corpus(dir.path(), "small.block", &Corpus::new(12));
        (std::fs::read(path).unwrap(), manifest)
    })
}

/// The full-size test block, written once.
fn large_block() -> &'static (Vec<u8>, Manifest) {
    static BLOCK: OnceLock<(Vec<u8>, Manifest)> = OnceLock::new();
    BLOCK.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let (path, manifest) = write_corpus(dir.path(), "large.block", &Corpus::new(DOC_COUNT));
        (std::fs::read(path).unwrap(), manifest)
    })
}

/// Every byte of a block is under a crc or is a checked constant: the regions tile the file.
#[test]
fn regions_cover_every_byte() {
    for (bytes, manifest) in [small_block(), large_block()] {
        let mut end = 0;
        for (range, name) in regions(bytes, manifest) {
            assert!(range.start <= end, "gap before {name} at {end}");
            end = end.max(range.end);
        }
        assert_eq!(end, bytes.len() as u64);
    }
}

/// Flipping any one byte of a small block, with several masks, is detected by `open` or
/// `verify`, and reading the damaged block never panics.
#[test]
fn every_byte_flip_is_detected() {
    let (original, manifest) = small_block();
    let regions = regions(original, manifest);
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = original.clone();
    for position in 0..bytes.len() {
        for mask in [0x01u8, 0x80, 0xff] {
            bytes[position] ^= mask;
            let region = region_of(&regions, position as u64);
            let damage = format!("byte {position} ({region}) ^ {mask:#04x}");
            assert!(
                read_damaged(dir.path(), &bytes, &damage),
                "{damage} not detected"
            );
            bytes[position] = original[position];
        }
    }
}

/// A block cut at any length, or with bytes appended, does not open.
#[test]
fn truncated_or_extended_block_is_detected() {
    let (original, _) = small_block();
    let dir = tempfile::tempdir().unwrap();
    for len in 0..original.len() {
        let damage = format!("the file cut to {len} of {} bytes", original.len());
        assert!(
            read_damaged(dir.path(), &original[..len], &damage),
            "{damage} not detected"
        );
    }
    for extra in [
        &b"\0"[..],
        b"QRYBLOK1",
        &original[original.len() - FOOTER_LEN..],
    ] {
        let mut bytes = original.clone();
        bytes.extend_from_slice(extra);
        let damage = format!("{} bytes appended", extra.len());
        assert!(
            read_damaged(dir.path(), &bytes, &damage),
            "{damage} not detected"
        );
    }
}

/// One byte in each region of the large block, at its start, middle and end: each region of a
/// block with full postings blocks and several chunks is covered.
#[test]
fn flip_in_every_region_of_a_large_block_is_detected() {
    let (original, manifest) = large_block();
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = original.clone();
    for (range, name) in regions(original, manifest) {
        if range.is_empty() {
            continue;
        }
        for position in [range.start, (range.start + range.end) / 2, range.end - 1] {
            let position = position as usize;
            bytes[position] ^= 0x10;
            let damage = format!("byte {position} ({name}) ^ 0x10");
            assert!(
                read_damaged(dir.path(), &bytes, &damage),
                "{damage} not detected"
            );
            bytes[position] = original[position];
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// A few random byte changes anywhere in the large block are detected and never panic.
    #[test]
    fn random_damage_is_detected(
        flips in proptest::collection::vec((any::<prop::sample::Index>(), 1u8..=255), 1..4),
        cut in proptest::option::weighted(0.2, any::<prop::sample::Index>()),
    ) {
        let (original, manifest) = large_block();
        let regions = regions(original, manifest);
        let mut bytes = original.clone();
        let mut damage = Vec::new();
        for (at, mask) in flips {
            let position = at.index(bytes.len());
            bytes[position] ^= mask;
            damage.push(format!("byte {position} ({}) ^ {mask:#04x}", region_of(&regions, position as u64)));
        }
        if let Some(cut) = cut {
            let len = cut.index(bytes.len());
            bytes.truncate(len);
            damage.push(format!("cut to {len}"));
        }
        prop_assume!(&bytes != original, "the flips cancelled out");
        let dir = tempfile::tempdir().unwrap();
        let damage = damage.join(", ");
        prop_assert!(read_damaged(dir.path(), &bytes, &damage), "{} not detected", damage);
    }
}

/// The block `bytes` with its manifest replaced by `change(manifest)`, re-encoded with a valid
/// crc and footer: damage no checksum catches, that the reader's consistency checks must.
fn with_manifest(bytes: &[u8], change: impl Fn(&mut Manifest)) -> Vec<u8> {
    let footer = &bytes[bytes.len() - FOOTER_LEN..];
    let offset = u64::from_le_bytes(footer[..8].try_into().unwrap());
    let len = u64::from_le_bytes(footer[8..16].try_into().unwrap());
    let mut manifest = Manifest::decode(
        &bytes[offset as usize..(offset + len) as usize],
        crate::limits::FORMAT_VERSION,
    )
    .unwrap();
    change(&mut manifest);
    let mut encoded = Vec::new();
    manifest.encode(&mut encoded);
    let mut out = bytes[..offset as usize].to_vec();
    out.extend_from_slice(&encoded);
    out.extend_from_slice(&offset.to_le_bytes());
    out.extend_from_slice(&(encoded.len() as u64).to_le_bytes());
    out.extend_from_slice(&footer[16..20]);
    out.extend_from_slice(&crc32fast::hash(&encoded).to_le_bytes());
    out.extend_from_slice(&footer[24..]);
    out
}

/// A manifest with a valid crc whose content is wrong is reported, never panics.
#[test]
fn inconsistent_manifest_is_detected() {
    let (original, _) = large_block();
    let time = 0;
    let message = MESSAGE as usize;
    let empty = SectionRef {
        offset: 0,
        len: 0,
        crc: 0,
    };
    let cases: &[Spoil<Manifest>] = &[
        ("term count overflows the term infos length", &|m| {
            m.term_count = u64::MAX / 8
        }),
        ("term count off by one", &|m| m.term_count += 1),
        ("doc count not the norms length", &|m| m.doc_count += 1),
        ("doc count 0", &|m| {
            m.doc_count = 0;
            m.time_index = empty;
            m.fields[message].text.as_mut().unwrap().norms = empty;
        }),
        ("section past the end", &|m| m.postings.len += 1_000_000),
        ("section offset overflows", &|m| {
            m.postings.offset = u64::MAX - 1
        }),
        ("section over the manifest", &|m| m.positions.len += 1),
        ("fields not sorted", &|m| m.fields.swap(1, 2)),
        ("no _time field", &|m| m.fields[time].name = "_a".to_owned()),
        ("_time not a timestamp", &|m| {
            m.fields[time].columns[0].ty = ColumnType::I64
        }),
        ("term dictionary is the postings", &|m| {
            m.term_fst = m.postings
        }),
        ("term infos are the postings", &|m| {
            m.term_infos = m.postings;
            m.term_count = m.postings.len / 40;
        }),
        ("postings are the positions", &|m| m.postings = m.positions),
        // Two columns that keep their chunk data (f64 and json have no doc values).
        ("column data swapped", &|m| {
            let ratio = m.fields[RATIO].columns[0].data;
            m.fields[RATIO].columns[0].data = m.fields[TAGS].columns[0].data;
            m.fields[TAGS].columns[0].data = ratio;
        }),
        // A column whose chunks come from its doc values, given another column's.
        ("doc values of another column", &|m| {
            m.fields[HOST as usize].columns[0].doc_values = m.fields[1].columns[0].doc_values;
        }),
        // Two columns that keep their chunk data: the directory's crcs are another data's.
        ("column directory of another column", &|m| {
            m.fields[TAGS].columns[0].directory = m.fields[RATIO].columns[0].directory;
        }),
    ];
    let dir = tempfile::tempdir().unwrap();
    for (why, change) in cases {
        let bytes = with_manifest(original, change);
        assert!(read_damaged(dir.path(), &bytes, why), "{why}: not detected");
    }
    // The helper itself changes nothing when the manifest is unchanged.
    assert_eq!(&with_manifest(original, |_| {}), original);
}

/// The bytes of `section` in `bytes` with `change` applied, and its crc in the manifest made
/// valid again: what a writer with a bug in that section writes (the fuzz target
/// `block_resealed` makes such blocks).
fn with_resealed_section(
    bytes: &[u8],
    section: impl Fn(&Manifest) -> SectionRef,
    set: impl Fn(&mut Manifest, u32),
    change: impl Fn(&mut [u8]),
) -> Vec<u8> {
    let footer = &bytes[bytes.len() - FOOTER_LEN..];
    let offset = u64::from_le_bytes(footer[..8].try_into().unwrap()) as usize;
    let len = u64::from_le_bytes(footer[8..16].try_into().unwrap()) as usize;
    let manifest =
        Manifest::decode(&bytes[offset..offset + len], crate::limits::FORMAT_VERSION).unwrap();
    let range = section(&manifest);
    let range = range.offset as usize..(range.offset + range.len) as usize;
    let mut bytes = bytes.to_vec();
    change(&mut bytes[range.clone()]);
    let crc = crc32fast::hash(&bytes[range]);
    with_manifest(&bytes, |m| set(m, crc))
}

/// A term dictionary that is not what the fst builder wrote, under a valid section crc, is
/// an error at open, not a panic in a later walk: the fst crate may panic on bytes that are
/// not a valid FST, and its own checksum ties the bytes to its builder (found by the
/// `block_resealed` fuzz target: a changed byte panicked in `fst::raw::node`).
#[test]
fn a_term_dictionary_the_fst_builder_did_not_write_is_rejected() {
    let (original, manifest) = small_block();
    let dir = tempfile::tempdir().unwrap();
    for at in 0..manifest.term_fst.len as usize {
        let bytes = with_resealed_section(
            original,
            |m| m.term_fst,
            |m, crc| m.term_fst.crc = crc,
            |fst| fst[at] ^= 0x5a,
        );
        let damage = format!("term dictionary byte {at} changed, crc resealed");
        assert!(
            read_damaged(dir.path(), &bytes, &damage),
            "{damage}: not detected"
        );
    }
}

/// A block's bytes that remember the ranges a reader asked for (`BlockSource::fetch`), as a
/// remote block's would (doc values and norms are asked for when first used).
struct RecordingSource {
    bytes: Vec<u8>,
    fetched: std::sync::Mutex<Vec<Range<u64>>>,
}

impl BlockSource for RecordingSource {
    fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    fn is_remote(&self) -> bool {
        true
    }

    fn fetch(&self, ranges: &[Range<u64>]) -> std::io::Result<()> {
        self.fetched.lock().unwrap().extend(ranges.iter().cloned());
        Ok(())
    }
}

/// Everything a query reads of a block: every document, every term's docs and positions,
/// every doc value and norm.
fn read_documents_and_postings(reader: &BlockReader) -> Result<Vec<String>, FormatError> {
    let mut out = Vec::new();
    let mut fetcher = DocumentFetcher::new(reader);
    for doc in 0..reader.doc_count() {
        out.push(format!("{:?}", fetcher.fetch(doc)?));
    }
    let mut stream = reader.term_dictionary().stream();
    let mut positions = Vec::new();
    while let Some((key, ordinal)) = stream.next() {
        let info = reader.term_info_by_ordinal(ordinal)?;
        let mut cursor = reader.postings_with_positions(&info)?;
        let mut line = format!("{key:?}:");
        while cursor.doc() != TERMINATED {
            positions.clear();
            if info.has_positions {
                cursor
                    .positions(&mut positions)
                    .map_err(|e| reader.corrupt("positions", e))?;
            }
            line.push_str(&format!(
                " {}/{}{positions:?}",
                cursor.doc(),
                cursor.term_freq()
            ));
            cursor.advance();
        }
        if let Some(error) = cursor.error() {
            return Err(reader.corrupt("postings", error));
        }
        out.push(line);
    }
    for (ordinal, field) in reader.manifest().fields.iter().enumerate() {
        out.push(format!("norms {:?}", reader.norms(ordinal as u16)?));
        for column in &field.columns {
            if let Some(values) = reader.doc_values(ordinal as u16, column.ty) {
                out.push(format!("doc values {}", values.doc_count()));
            }
        }
    }
    Ok(out)
}

/// A reader asks its source for every byte before reading it: a copy of the block holding
/// only the ranges the reader fetched (zeros elsewhere, as a remote block's local copy) gives
/// the same documents and postings, without an error. Opening a remote block asks for the
/// magic and one stretch at the end: the planning sections, the manifest and the footer;
/// doc values and norms (just before them) when first used.
#[test]
fn a_reader_fetches_every_range_it_reads() {
    let (bytes, manifest) = large_block();
    let path = Path::new("recorded.block");
    let recording = Arc::new(RecordingSource {
        bytes: bytes.clone(),
        fetched: Default::default(),
    });
    let reader = BlockReader::from_bytes(path, recording.clone()).unwrap();
    let len = bytes.len() as u64;
    let planning_start = manifest.planning_start();
    let cold_end = manifest
        .fields
        .iter()
        .flat_map(|field| field.columns.iter().map(|column| column.data))
        .chain([manifest.postings, manifest.positions])
        .map(|section| section.offset + section.len)
        .max()
        .unwrap();
    let on_demand: Vec<SectionRef> = manifest.on_demand_sections().collect();
    assert!(on_demand.len() > 2);
    for section in &on_demand {
        assert!(
            section.offset >= cold_end && section.offset + section.len <= planning_start,
            "doc values and norms lie between the sections read piecemeal and the planning ones"
        );
    }
    assert_eq!(
        on_demand.iter().map(|s| s.offset).min(),
        Some(cold_end),
        "the resident sections follow the sections read piecemeal"
    );
    for range in recording.fetched.lock().unwrap().iter() {
        assert!(
            range.end <= crate::limits::BLOCK_MAGIC.len() as u64 || range.start >= planning_start,
            "opening read {range:?}, outside the magic and {planning_start}..{len}"
        );
    }
    let expected = read_documents_and_postings(&reader).unwrap();

    let mut sparse = vec![0u8; bytes.len()];
    for range in recording.fetched.lock().unwrap().iter() {
        let range = range.start as usize..range.end as usize;
        sparse[range.clone()].copy_from_slice(&bytes[range]);
    }
    let unfetched = sparse.iter().zip(bytes).filter(|(a, b)| a != b).count();
    assert_eq!(
        unfetched, 0,
        "the workload read every byte that differs from zero"
    );
    // Now without the bytes the reader never asked for in a second, smaller workload: the
    // documents only. Postings and positions stay zero.
    let recording = Arc::new(RecordingSource {
        bytes: bytes.clone(),
        fetched: Default::default(),
    });
    let reader = BlockReader::from_bytes(path, recording.clone()).unwrap();
    let mut fetcher = DocumentFetcher::new(&reader);
    let documents: Vec<String> = (0..reader.doc_count())
        .map(|doc| format!("{:?}", fetcher.fetch(doc).unwrap()))
        .collect();
    let mut sparse = vec![0u8; bytes.len()];
    for range in recording.fetched.lock().unwrap().iter() {
        let range = range.start as usize..range.end as usize;
        sparse[range.clone()].copy_from_slice(&bytes[range]);
    }
    let postings = manifest.postings;
    assert!(
        sparse[postings.offset as usize..(postings.offset + postings.len) as usize]
            .iter()
            .all(|&b| b == 0),
        "fetching documents fetched no postings"
    );
    let sparse = Arc::new(RecordingSource {
        bytes: sparse,
        fetched: Default::default(),
    });
    let reader = BlockReader::from_bytes(path, sparse).unwrap();
    let mut fetcher = DocumentFetcher::new(&reader);
    let again: Vec<String> = (0..reader.doc_count())
        .map(|doc| format!("{:?}", fetcher.fetch(doc).unwrap()))
        .collect();
    assert_eq!(again, documents);
    assert_eq!(documents[..], expected[..documents.len()]);
}

/// A remote block whose doc values and norms cannot be read, or come back changed: the
/// norms are an error for the query that asks for them (a ranked query must not score without
/// them); doc values, the only copy of some chunks' values, make those chunks fail as
/// unreadable (not damaged); the next ask tries again.
#[test]
fn doc_values_and_norms_of_a_remote_block_are_read_when_first_needed() {
    struct Flaky {
        bytes: Vec<u8>,
        /// The on-demand stretch: fetching it fails while `failing` is set.
        on_demand: Range<u64>,
        failing: std::sync::atomic::AtomicBool,
    }
    impl BlockSource for Flaky {
        fn bytes(&self) -> &[u8] {
            &self.bytes
        }
        fn is_remote(&self) -> bool {
            true
        }
        fn fetch(&self, ranges: &[Range<u64>]) -> std::io::Result<()> {
            let failing = self.failing.load(std::sync::atomic::Ordering::Relaxed);
            let touches = ranges
                .iter()
                .any(|r| r.start < self.on_demand.end && self.on_demand.start < r.end);
            if failing && touches {
                return Err(std::io::Error::other("the store did not answer"));
            }
            Ok(())
        }
    }
    let (bytes, manifest) = large_block();
    let local = BlockReader::from_bytes(Path::new("local"), Arc::new(bytes.clone())).unwrap();
    let expected = read_documents_and_postings(&local).unwrap();
    let message = local.field_ordinal("message").unwrap();
    let host = local.field_ordinal("host").unwrap();
    let start = manifest
        .on_demand_sections()
        .map(|s| s.offset)
        .min()
        .unwrap();
    let end = manifest.planning_start();
    let flaky = Arc::new(Flaky {
        bytes: bytes.clone(),
        on_demand: start..end,
        failing: true.into(),
    });
    let reader = BlockReader::from_bytes(Path::new("flaky"), flaky.clone()).unwrap();
    assert!(reader.resident_bytes() < local.resident_bytes());
    let error = reader.norms(message).unwrap_err();
    assert!(matches!(error, FormatError::Io { .. }), "{error}");
    assert!(reader.doc_values(host, ColumnType::Str).is_none());
    let mut fetcher = DocumentFetcher::new(&reader);
    let mut unreadable = 0;
    for doc in 0..reader.doc_count() {
        match fetcher.fetch(doc) {
            Ok(event) => assert_eq!(format!("{event:?}"), expected[doc as usize]),
            Err(FormatError::Io { .. }) => unreadable += 1,
            Err(other) => panic!("doc {doc}: {other}"),
        }
    }
    assert!(unreadable > 0, "some chunks are held only as doc values");
    // The store answers again: the same norms and doc values as the local block's.
    flaky
        .failing
        .store(false, std::sync::atomic::Ordering::Relaxed);
    assert_eq!(
        reader.norms(message).unwrap(),
        local.norms(message).unwrap()
    );
    assert!(reader.doc_values(host, ColumnType::Str).is_some());
    assert_eq!(read_documents_and_postings(&reader).unwrap(), expected);
    assert!(reader.resident_bytes() > 0);

    // Norms changed in the store: a checksum error naming them, never other scores.
    let mut garbled = bytes.clone();
    let norms = manifest.fields[message as usize]
        .text
        .as_ref()
        .unwrap()
        .norms;
    garbled[norms.offset as usize] ^= 0x40;
    let reader = BlockReader::from_bytes(
        Path::new("garbled"),
        Arc::new(RecordingSource {
            bytes: garbled,
            fetched: Default::default(),
        }),
    )
    .unwrap();
    let error = reader.norms(message).unwrap_err();
    assert!(
        matches!(&error, FormatError::ChecksumMismatch { part, .. } if part.contains("norms of message")),
        "{error}"
    );
    // Doc values changed: the chunks they hold fail as damaged.
    let mut garbled = bytes.clone();
    let host_values = manifest.fields[host as usize].columns[0]
        .doc_values
        .unwrap();
    garbled[host_values.offset as usize + 3] ^= 0x40;
    let reader = BlockReader::from_bytes(
        Path::new("garbled"),
        Arc::new(RecordingSource {
            bytes: garbled,
            fetched: Default::default(),
        }),
    )
    .unwrap();
    assert!(reader.doc_values(host, ColumnType::Str).is_none());
    let column = reader.column(host, ColumnType::Str).unwrap();
    let failures: Vec<DecodeError> = (0..column.chunk_count())
        .filter_map(|chunk| column.decode_chunk(chunk).err())
        .collect();
    assert!(!failures.is_empty());
    assert!(
        failures.iter().all(|e| *e != DecodeError::UNREADABLE),
        "{failures:?}"
    );
}

/// The large corpus's messages are compressed with their column's zstd dictionary (version
/// 10): the manifest names it among the sections read at open, and every message reads back.
#[test]
fn a_column_dictionary_is_written_and_read_back() {
    let (bytes, manifest) = large_block();
    let ordinal = manifest
        .fields
        .iter()
        .position(|field| field.name == "message")
        .unwrap();
    let column = manifest.fields[ordinal]
        .columns
        .iter()
        .find(|column| column.ty == ColumnType::Str)
        .unwrap();
    let dictionary = column.dictionary.expect("a dictionary");
    assert!(manifest
        .planning_sections()
        .any(|section| section == dictionary));
    assert!(column.data.len > 0);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("large.block");
    std::fs::write(&path, bytes).unwrap();
    let reader = BlockReader::open(&path).unwrap();
    let column = reader.column(ordinal as u16, ColumnType::Str).unwrap();
    let mut messages = Vec::new();
    for chunk in 0..column.chunk_count() {
        let decoded = column.decode_chunk(chunk).unwrap();
        messages.extend((0..decoded.len()).map(|i| decoded.str_at(i).unwrap().to_owned()));
    }
    let expected: Vec<String> = (0..DOC_COUNT)
        .filter_map(|doc| match value_of(doc, "message", ColumnType::Str) {
            Some(Value::Str(text)) => Some(text),
            _ => None,
        })
        .collect();
    assert_eq!(messages, expected);
}

proptest! {
    /// A union's docs sorted through a bitset come out as a comparison sort gives them,
    /// repeated and out-of-range docs included.
    #[test]
    fn union_docs_sort_as_a_comparison_sort_does(
        docs in proptest::collection::vec(0u32..700, 0..400),
        tfs in proptest::collection::vec(1u32..3, 1..3),
        doc_count in 600u32..800,
    ) {
        let mut entries: Vec<(u32, u32)> = docs
            .iter()
            .enumerate()
            .map(|(i, &doc)| (doc, tfs[i % tfs.len()]))
            .collect();
        let mut expected = entries.clone();
        expected.sort_unstable();
        super::reader::sort_docs(&mut entries, doc_count);
        prop_assert_eq!(entries, expected);
    }
}
