//! `ColumnWriter` → `ColumnReader` round trips against a model: the column as one
//! `Option<Value>` per doc, scanned by brute force (tantivy `columnar/src/tests.rs`).
//!
//! Values are compared by their exact bytes, so a NaN equals itself and -0.0 differs from 0.0.

use super::*;
use crate::codec::put_varint;
use crate::docvalues::DocValues;
use crate::limits::{COLUMN_CHUNK_MAX_DOCS, COLUMN_CHUNK_TARGET_BYTES, COLUMN_ZSTD_LEVEL};
use crate::value::{ColumnType, MinMax, Value};
use proptest::prelude::*;

const ALL_TYPES: [ColumnType; 7] = [
    ColumnType::Str,
    ColumnType::I64,
    ColumnType::U64,
    ColumnType::F64,
    ColumnType::Bool,
    ColumnType::Timestamp,
    ColumnType::Json,
];

/// The raw 64-bit pattern `push_raw` takes for a non-string value (see `MinMax`).
fn raw_of(value: &Value) -> u64 {
    match value {
        Value::I64(v) | Value::Timestamp(v) => *v as u64,
        Value::U64(v) => *v,
        Value::F64(v) => v.to_bits(),
        Value::Bool(v) => u64::from(*v),
        Value::Str(_) | Value::Json(_) => panic!("strings have no raw pattern"),
    }
}

/// A value's type and exact bytes: equality that treats NaN and -0.0 by their bits.
fn exact(value: &Option<Value>) -> Option<(ColumnType, Vec<u8>)> {
    value.as_ref().map(|v| {
        let bytes = match v {
            Value::Str(s) | Value::Json(s) => s.as_bytes().to_vec(),
            other => raw_of(other).to_le_bytes().to_vec(),
        };
        (v.column_type(), bytes)
    })
}

fn present_none(model: &[Option<Value>]) -> bool {
    model.iter().all(Option::is_none)
}

fn write_column(ty: ColumnType, model: &[Option<Value>]) -> ColumnData {
    let mut writer = ColumnWriter::new(ty);
    for (doc, value) in model.iter().enumerate() {
        let doc = doc as u32;
        match value {
            None => {}
            Some(Value::Str(s) | Value::Json(s)) => writer.push_str(doc, s).unwrap(),
            Some(other) => writer.push_raw(doc, raw_of(other)).unwrap(),
        }
    }
    writer.finish(model.len() as u32).unwrap()
}

/// Min/max of the values as `MinMax::of` should give it: numeric types only; for f64 over the
/// values that are not NaN (a NaN matches no range), or NaN if there are only NaNs.
fn model_min_max<'a>(ty: ColumnType, values: impl Iterator<Item = &'a Value>) -> Option<MinMax> {
    if !ty.is_numeric() {
        return None;
    }
    let raws: Vec<u64> = values.map(raw_of).collect();
    let (min, max) = match ty {
        ColumnType::I64 | ColumnType::Timestamp => {
            let signed = raws.iter().map(|&r| r as i64);
            (signed.clone().min()? as u64, signed.max()? as u64)
        }
        ColumnType::U64 => (*raws.iter().min()?, *raws.iter().max()?),
        ColumnType::F64 => {
            let numbers: Vec<f64> = raws
                .iter()
                .map(|&r| f64::from_bits(r))
                .filter(|f| !f.is_nan())
                .collect();
            if numbers.is_empty() {
                let nan = *raws.first()?;
                (nan, nan)
            } else {
                let min = numbers.iter().copied().fold(f64::INFINITY, f64::min);
                let max = numbers.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                (min.to_bits(), max.to_bits())
            }
        }
        _ => unreachable!("non-numeric types returned above"),
    };
    Some(MinMax { min, max })
}

/// Bounds are equal as numbers of the column's type (-0.0 == 0.0, NaN == NaN for f64).
fn same_min_max(ty: ColumnType, got: Option<MinMax>, expected: Option<MinMax>) -> bool {
    let same = |a: u64, b: u64| {
        if ty == ColumnType::F64 {
            let (a, b) = (f64::from_bits(a), f64::from_bits(b));
            a == b || (a.is_nan() && b.is_nan())
        } else {
            a == b
        }
    };
    match (got, expected) {
        (None, None) => true,
        (Some(g), Some(e)) => same(g.min, e.min) && same(g.max, e.max),
        _ => false,
    }
}

fn string_strategy() -> BoxedStrategy<String> {
    prop_oneof![
        2 => Just(String::new()),
        6 => "[a-z0-9 ]{0,30}",
        6 => "\\PC{0,20}",
        // Log lines: long enough that chunks are templated (version 7), with variables.
        6 => "((GET|POST) /api/v[0-9]|blk_-?[0-9]{1,6}|from [0-9]{1,3}\\.[0-9]{1,3}|user [a-z]{1,4}|é[0-9] |[ :.-]){3,12}",
    ]
    .boxed()
}

/// A string over `COLUMN_CHUNK_TARGET_BYTES`, so it fills a chunk on its own.
fn huge_string_strategy() -> BoxedStrategy<String> {
    const UNIT: &str = "log line with ünïcödé 😀 and an id ";
    (1usize..3, "\\PC{0,8}")
        .prop_map(|(factor, tail)| {
            let repeat = factor * COLUMN_CHUNK_TARGET_BYTES / UNIT.len() + 1;
            format!("{}{tail}", UNIT.repeat(repeat))
        })
        .boxed()
}

fn i64_strategy() -> BoxedStrategy<i64> {
    prop_oneof![
        4 => any::<i64>(),
        4 => -1000i64..1000,
        1 => Just(i64::MIN),
        1 => Just(i64::MAX),
        1 => Just(0i64),
        1 => Just(-1i64),
    ]
    .boxed()
}

fn f64_strategy() -> BoxedStrategy<f64> {
    prop_oneof![
        4 => any::<u64>().prop_map(f64::from_bits),
        4 => -1e6f64..1e6,
        1 => Just(f64::NAN),
        1 => Just(-f64::NAN),
        1 => Just(-0.0f64),
        1 => Just(0.0f64),
        1 => Just(f64::INFINITY),
        1 => Just(f64::NEG_INFINITY),
        1 => Just(f64::MIN),
        1 => Just(f64::MAX),
        1 => Just(f64::MIN_POSITIVE),
    ]
    .boxed()
}

fn value_strategy(ty: ColumnType) -> BoxedStrategy<Value> {
    match ty {
        ColumnType::Str => string_strategy().prop_map(Value::Str).boxed(),
        ColumnType::Json => string_strategy().prop_map(Value::Json).boxed(),
        ColumnType::I64 => i64_strategy().prop_map(Value::I64).boxed(),
        ColumnType::Timestamp => prop_oneof![
            3 => 1_600_000_000_000_000_000i64..1_800_000_000_000_000_000,
            1 => i64_strategy(),
        ]
        .prop_map(Value::Timestamp)
        .boxed(),
        ColumnType::U64 => prop_oneof![
            4 => any::<u64>(),
            4 => 0u64..1000,
            1 => Just(u64::MAX),
            1 => Just(0u64),
        ]
        .prop_map(Value::U64)
        .boxed(),
        ColumnType::F64 => f64_strategy().prop_map(Value::F64).boxed(),
        ColumnType::Bool => any::<bool>().prop_map(Value::Bool).boxed(),
    }
}

/// A column type and its model: small columns, and with `large`, some over
/// `COLUMN_CHUNK_MAX_DOCS` docs so chunks are cut by doc count; string columns with a few values
/// over the byte target; densities from empty to full (a full chunk has no presence list).
fn column_strategy(large: bool) -> impl Strategy<Value = (ColumnType, Vec<Option<Value>>)> {
    let doc_count = if large {
        prop_oneof![6 => 1usize..300, 1 => 8_000usize..20_000].boxed()
    } else {
        (1usize..300).boxed()
    };
    let percent_present = prop_oneof![Just(0u32), Just(100u32), 1u32..100];
    (
        proptest::sample::select(ALL_TYPES.to_vec()),
        doc_count,
        percent_present,
    )
        .prop_flat_map(|(ty, doc_count, percent_present)| {
            let slot = (0u32..100, value_strategy(ty))
                .prop_map(move |(roll, value)| (roll < percent_present).then_some(value));
            let huge = if matches!(ty, ColumnType::Str | ColumnType::Json) {
                proptest::collection::vec((0..doc_count, huge_string_strategy()), 0..3).boxed()
            } else {
                Just(Vec::new()).boxed()
            };
            (proptest::collection::vec(slot, doc_count), huge).prop_map(move |(mut model, huge)| {
                for (doc, text) in huge {
                    model[doc] = Some(match ty {
                        ColumnType::Json => Value::Json(text),
                        _ => Value::Str(text),
                    });
                }
                (ty, model)
            })
        })
}

/// `get` decodes a whole chunk per call, so it is called on every doc of columns up to this many
/// docs, and on larger ones on about this many docs spread evenly plus each chunk's edges. Every
/// doc is still checked through `chunk_of` and the decoded chunk, which are what `get` composes.
const GET_EVERY_DOC_UP_TO: usize = 200;

fn check_column(ty: ColumnType, model: &[Option<Value>]) -> Result<(), TestCaseError> {
    let doc_count = model.len() as u32;
    let data = write_column(ty, model);
    // A column with doc values keeps no chunk data: its chunks come from the doc values.
    let doc_values = data
        .doc_values
        .as_deref()
        .map(|b| DocValues::new(b).unwrap());
    prop_assert_eq!(
        doc_values.is_some(),
        data.data.is_empty() && !present_none(model)
    );
    let templates = data
        .templates
        .as_deref()
        .map(|b| Templates::decode(b).unwrap());
    let dictionary = data
        .dictionary
        .as_deref()
        .map(|b| ChunkDictionary::decode(b).unwrap());
    let reader = ColumnReader::new(ty, doc_count, &data.directory, &data.data)
        .unwrap()
        .with_doc_values(doc_values)
        .with_templates(templates.as_ref())
        .with_dictionary(dictionary.as_ref());
    let present: Vec<&Value> = model.iter().flatten().collect();

    prop_assert_eq!(data.ty, ty);
    prop_assert_eq!(reader.column_type(), ty);
    prop_assert_eq!(data.present_count, present.len() as u64);
    prop_assert_eq!(reader.chunk_count(), data.chunk_count as usize);
    let expected = model_min_max(ty, present.iter().copied());
    prop_assert!(
        same_min_max(ty, data.min_max, expected),
        "column min/max {:?}, model {:?}",
        data.min_max,
        expected
    );

    // Chunks partition [0, doc_count), or there are none when no doc has a value.
    let chunk_count = reader.chunk_count();
    if present.is_empty() {
        prop_assert_eq!(chunk_count, 0);
    } else {
        prop_assert!(chunk_count > 0);
    }
    let metas: Vec<ChunkMeta> = (0..chunk_count)
        .map(|i| reader.chunk_meta(i).unwrap())
        .collect();
    let mut ends: Vec<u32> = metas.iter().skip(1).map(|m| m.first_doc).collect();
    ends.extend((chunk_count > 0).then_some(doc_count));
    if let Some(first) = metas.first() {
        prop_assert_eq!(first.first_doc, 0);
    }
    for (meta, &end) in metas.iter().zip(&ends) {
        prop_assert!(meta.first_doc < end, "empty or reversed chunk {:?}", meta);
    }
    prop_assert!(reader.chunk_meta(chunk_count).is_err());

    for (index, (meta, &end)) in metas.iter().zip(&ends).enumerate() {
        let range = meta.first_doc as usize..end as usize;
        let in_chunk: Vec<&Value> = model[range.clone()].iter().flatten().collect();
        prop_assert_eq!(meta.present_count as usize, in_chunk.len());
        prop_assert!(!in_chunk.is_empty(), "chunk {} holds no value", index);

        let expected = model_min_max(ty, in_chunk.iter().copied());
        let got = reader.chunk_min_max(index).unwrap();
        prop_assert!(
            same_min_max(ty, got, expected),
            "chunk {} min/max {:?}, model {:?}",
            index,
            got,
            expected
        );

        let chunk = reader.decode_chunk(index).unwrap();
        prop_assert_eq!(chunk.ty, ty);
        prop_assert_eq!(chunk.first_doc, meta.first_doc);
        prop_assert_eq!(chunk.end_doc, end);
        prop_assert_eq!(chunk.len(), in_chunk.len());
        prop_assert_eq!(chunk.docs.is_none(), in_chunk.len() == range.len());
        for doc in range.clone() {
            prop_assert_eq!(
                exact(&chunk.get(doc as u32)),
                exact(&model[doc]),
                "doc {}",
                doc
            );
        }
        prop_assert_eq!(chunk.get(end), None);

        // Walked for every third doc, then for all of them again from the start (an earlier
        // doc rewinds): the values the decoded chunk holds.
        let mut walker = reader.walk_chunk(index, Vec::new()).unwrap();
        prop_assert_eq!(walker.end_doc(), end);
        let every_third = range.clone().step_by(3);
        for doc in every_third.chain(range.clone()).chain([end as usize]) {
            prop_assert_eq!(
                exact(&walker.value(doc as u32).unwrap()),
                exact(&chunk.get(doc as u32)),
                "walked doc {}",
                doc
            );
        }

        // The writer closes a chunk before a value `COLUMN_CHUNK_MAX_DOCS` past its start; only
        // the chunk's first value, which opens it, may lie further.
        let docs_with_values: Vec<usize> = range.filter(|&doc| model[doc].is_some()).collect();
        if let [_, .., last] = docs_with_values[..] {
            prop_assert!((last as u32 - meta.first_doc) < COLUMN_CHUNK_MAX_DOCS);
        }
    }

    for doc in 0..doc_count {
        let index = reader.chunk_of(doc).unwrap();
        match index {
            None => prop_assert_eq!(chunk_count, 0),
            Some(i) => prop_assert!(
                metas[i].first_doc <= doc && doc < ends[i],
                "chunk_of({}) = {}",
                doc,
                i
            ),
        }
    }
    for doc in [doc_count, doc_count + 1, u32::MAX] {
        prop_assert_eq!(reader.chunk_of(doc).unwrap(), None);
        prop_assert_eq!(reader.get(doc).unwrap(), None);
    }

    let step = (model.len() / GET_EVERY_DOC_UP_TO).max(1);
    let sample = (0..model.len())
        .step_by(step)
        .chain(ends.iter().flat_map(|&end| {
            [end as usize - 1, end as usize]
                .into_iter()
                .filter(|&d| d < model.len())
        }));
    for doc in sample {
        prop_assert_eq!(
            exact(&reader.get(doc as u32).unwrap()),
            exact(&model[doc]),
            "doc {}",
            doc
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn column_round_trips((ty, model) in column_strategy(true)) {
        check_column(ty, &model)?;
    }

    /// Any bytes in a chunk directory or data never make the reader panic (the block reader
    /// crc-checks directories, but a `ColumnReader` alone must be safe too).
    #[test]
    fn corrupt_column_never_panics(
        (ty, model) in column_strategy(false),
        flips in proptest::collection::vec((any::<bool>(), any::<prop::sample::Index>(), 1u8..=255), 1..4),
    ) {
        let data = write_column(ty, &model);
        let (mut directory, mut bytes) = (data.directory, data.data);
        for (in_directory, at, mask) in flips {
            let target = if in_directory { &mut directory } else { &mut bytes };
            if !target.is_empty() {
                let i = at.index(target.len());
                target[i] ^= mask;
            }
        }
        let doc_count = model.len() as u32;
        let reader = ColumnReader::new(ty, doc_count, &directory, &bytes).unwrap();
        for index in 0..reader.chunk_count() {
            let _ = reader.chunk_min_max(index);
            let _ = reader.decode_chunk(index);
        }
        for doc in (0..doc_count).step_by(7) {
            let _ = reader.chunk_of(doc);
            let _ = reader.get(doc);
        }
    }

    /// Any decompressed payload with a valid crc decodes or errors, never panics.
    #[test]
    fn arbitrary_chunk_payload_never_panics(
        ty in proptest::sample::select(ALL_TYPES.to_vec()),
        span in 1u32..20,
        payload in proptest::collection::vec(any::<u8>(), 0..64),
    ) {
        let (directory, data) = single_chunk(&payload, span);
        // With a template dictionary, so that payloads flagged as templated (0x80) reach the
        // template decoder too.
        let templates = sample_templates();
        let reader = ColumnReader::new(ty, span, &directory, &data)
            .unwrap()
            .with_templates(Some(&templates));
        if let Ok(chunk) = reader.decode_chunk(0) {
            for doc in 0..=span {
                let _ = chunk.get(doc);
            }
        }
        // Walked lazily, doc by doc, the same payload errors or gives values, never panics.
        if let Ok(mut walker) = reader.walk_chunk(0, vec![7; 9]) {
            for doc in (0..=span).chain([span / 2, 0]) {
                let _ = walker.value(doc);
            }
        }
    }
}

/// A small template dictionary: a template without slots, one with one, one with three.
fn sample_templates() -> super::Templates {
    let mut builder = super::template::TemplateBuilder::new();
    let mut payload = Vec::new();
    for value in ["no variables here", "id 7", "from 10.0.0.1 port 22 at 9ms"] {
        builder.encode_value(value.as_bytes(), &mut payload);
    }
    super::Templates::decode(&builder.finish().unwrap()).unwrap()
}

#[test]
fn a_templated_chunk_decodes_with_its_dictionary_only() {
    // present 2, every doc, templated; template 2 ("id #") with "42", then template 0 (raw).
    let payload = [
        2,
        PRESENCE_ALL | super::template::TEMPLATED,
        2,
        2,
        b'4',
        b'2',
        0,
        1,
        b'x',
    ];
    let (directory, data) = single_chunk(&payload, 2);
    let templates = sample_templates();
    let reader = ColumnReader::new(ColumnType::Str, 2, &directory, &data).unwrap();
    assert!(reader.decode_chunk(0).is_err(), "no dictionary: an error");
    let chunk = reader
        .with_templates(Some(&templates))
        .decode_chunk(0)
        .unwrap();
    assert_eq!(chunk.get(0), Some(Value::Str("id 42".into())));
    assert_eq!(chunk.get(1), Some(Value::Str("x".into())));
    // A json column never takes templates.
    let reader = ColumnReader::new(ColumnType::Json, 2, &directory, &data).unwrap();
    assert!(reader
        .with_templates(Some(&templates))
        .decode_chunk(0)
        .is_err());
}

/// A one-chunk column over `[0, span)` whose decompressed payload is `payload`, with a valid
/// crc, so the payload decoder is reached whatever the bytes.
fn single_chunk(payload: &[u8], span: u32) -> (Vec<u8>, Vec<u8>) {
    let data = zstd::bulk::compress(payload, COLUMN_ZSTD_LEVEL).unwrap();
    let meta = ChunkMeta {
        first_doc: 0,
        present_count: span,
        offset: 0,
        len: data.len() as u32,
        crc: crc32fast::hash(&data),
        min: 0,
        max: 0,
    };
    let mut directory = Vec::new();
    meta.encode(&mut directory);
    (directory, data)
}

#[test]
fn chunk_payload_errors() {
    /// Type, span, payload as varints then raw bytes, why it is rejected.
    type Case = (ColumnType, u32, &'static [u64], &'static [u8], &'static str);
    let cases: &[Case] = &[
        (
            ColumnType::Str,
            2,
            &[2, 0, 1, u64::MAX],
            b"a",
            "string lengths overflow u64",
        ),
        (
            ColumnType::Str,
            2,
            &[2, 0, 1, 5],
            b"a",
            "string lengths exceed the chunk",
        ),
        (ColumnType::Str, 1, &[1, 0, 1], &[0xff], "string not utf-8"),
        // "é" split between two values: the bytes are UTF-8 together, not one by one.
        (
            ColumnType::Str,
            2,
            &[2, 0, 1, 1],
            "é".as_bytes(),
            "a value ends inside a character",
        ),
        (
            ColumnType::I64,
            2,
            &[3, 0, 1, 1, 1],
            b"",
            "more values than docs",
        ),
        (
            ColumnType::I64,
            3,
            &[2, 0, 1, 1],
            b"",
            "marked full but values missing",
        ),
        (
            ColumnType::I64,
            3,
            &[2, 1, 0, 0, 1, 1],
            b"",
            "presence list not increasing",
        ),
        (
            ColumnType::I64,
            3,
            &[1, 1, 3, 1],
            b"",
            "present doc outside chunk",
        ),
        (ColumnType::I64, 1, &[1, 2, 1], b"", "unknown presence flag"),
        (ColumnType::I64, 1, &[1, 0, 1, 1], b"", "trailing bytes"),
        (ColumnType::I64, 1, &[1, 0], b"", "value truncated"),
        (ColumnType::Bool, 1, &[1, 0, 2], b"", "bool not 0 or 1"),
        (ColumnType::F64, 1, &[1, 0], &[1, 2, 3], "f64 truncated"),
    ];
    for &(ty, span, varints, raw, why) in cases {
        let mut payload = Vec::new();
        for &part in varints {
            put_varint(&mut payload, part);
        }
        payload.extend_from_slice(raw);
        let (directory, data) = single_chunk(&payload, span);
        let reader = ColumnReader::new(ty, span, &directory, &data).unwrap();
        assert!(reader.decode_chunk(0).is_err(), "{why}: accepted");
    }
}

#[test]
fn ragged_directory_is_rejected() {
    assert!(ColumnReader::new(ColumnType::I64, 1, &[0; CHUNK_META_LEN + 1], &[]).is_err());
}

#[test]
fn writer_rejects_docs_out_of_order() {
    let mut writer = ColumnWriter::new(ColumnType::I64);
    writer.push_raw(5, 1).unwrap();
    assert!(writer.push_raw(5, 2).is_err(), "same doc twice");
    assert!(writer.push_raw(3, 2).is_err(), "doc going back");

    let mut writer = ColumnWriter::new(ColumnType::Str);
    writer.push_str(9, "x").unwrap();
    assert!(
        writer.finish(9).is_err(),
        "doc count below a doc with a value"
    );
}

/// Chunk boundaries where the limits put them: every `COLUMN_CHUNK_MAX_DOCS` docs for dense
/// numbers, and after the value that takes the raw size to `COLUMN_CHUNK_TARGET_BYTES`.
#[test]
fn chunks_close_at_the_limits() {
    let first_docs = |ty: ColumnType, model: &[Option<Value>]| -> Vec<u32> {
        let data = write_column(ty, model);
        let reader = ColumnReader::new(ty, model.len() as u32, &data.directory, &data.data);
        let doc_values = data
            .doc_values
            .as_deref()
            .map(|b| DocValues::new(b).unwrap());
        let templates = data
            .templates
            .as_deref()
            .map(|b| Templates::decode(b).unwrap());
        let reader = reader
            .unwrap()
            .with_doc_values(doc_values)
            .with_templates(templates.as_ref());
        (0..reader.chunk_count())
            .map(|i| reader.chunk_meta(i).unwrap().first_doc)
            .collect()
    };
    let max = COLUMN_CHUNK_MAX_DOCS;
    let numbers: Vec<Option<Value>> = (0..3 * max + 5)
        .map(|doc| Some(Value::I64(i64::from(doc))))
        .collect();
    assert_eq!(
        first_docs(ColumnType::I64, &numbers),
        [0, max, 2 * max, 3 * max]
    );

    let per_chunk = COLUMN_CHUNK_TARGET_BYTES.div_ceil(1000) as u32;
    let strings: Vec<Option<Value>> = (0..3 * per_chunk)
        .map(|_| Some(Value::Str("x".repeat(1000))))
        .collect();
    assert_eq!(
        first_docs(ColumnType::Str, &strings),
        [0, per_chunk, 2 * per_chunk]
    );

    // A sparse column: the chunk still starts at doc 0 and ends at the doc count.
    let mut sparse = vec![None; 50];
    sparse[40] = Some(Value::U64(7));
    check_column(ColumnType::U64, &sparse).unwrap();
}

/// The chunk min/max ignores NaN wherever it sits, and is NaN only for a chunk of NaNs.
#[test]
fn f64_min_max_ignores_nan() {
    let nan = f64::NAN;
    // (values, expected min, expected max)
    let cases: &[(&[f64], f64, f64)] = &[
        (&[nan, 1.0, 2.0], 1.0, 2.0),
        (&[1.0, nan, 2.0], 1.0, 2.0),
        (&[2.0, 1.0, nan], 1.0, 2.0),
        (&[-nan, -5.0, f64::INFINITY], -5.0, f64::INFINITY),
        (&[nan, nan], nan, nan),
    ];
    for &(values, min, max) in cases {
        let model: Vec<Option<Value>> = values.iter().map(|&v| Some(Value::F64(v))).collect();
        let data = write_column(ColumnType::F64, &model);
        let expected = Some(MinMax {
            min: min.to_bits(),
            max: max.to_bits(),
        });
        assert!(
            same_min_max(ColumnType::F64, data.min_max, expected),
            "{values:?}: {:?}",
            data.min_max
                .map(|m| (f64::from_bits(m.min), f64::from_bits(m.max)))
        );
        check_column(ColumnType::F64, &model).unwrap();
    }
}

/// A chunk that claims more values than it has bytes is rejected before anything is sized by
/// the claim (found by the `column_decode` fuzz target: a chunk of a few bytes claiming 2^32
/// values asked for 16 GiB for its presence list).
#[test]
fn a_chunk_claiming_more_values_than_bytes_is_rejected_before_allocating() {
    let span = u32::MAX;
    for (ty, flag) in [
        (ColumnType::Str, 1),
        (ColumnType::I64, 0),
        (ColumnType::F64, 0),
    ] {
        let mut payload = Vec::new();
        put_varint(&mut payload, u64::from(span));
        payload.extend_from_slice(&[flag, 1, 1, 1]);
        let (directory, data) = single_chunk(&payload, span);
        let reader = ColumnReader::new(ty, span, &directory, &data).unwrap();
        assert_eq!(
            reader.decode_chunk(0).unwrap_err().reason,
            "more values than bytes in chunk",
            "{ty:?}"
        );
    }
}

/// A column of log lines long enough to train a dictionary from its first chunks compresses
/// every chunk with it (format version 10), smaller than without; its values read back exactly
/// with the dictionary, and not at all without it or with another column's.
#[test]
fn chunks_compressed_with_a_trained_dictionary_read_back_only_with_it() {
    let services = ["sshd", "kernel", "nginx", "hdfs.DataNode", "spark.executor"];
    let line = |i: u32| {
        let service = services[i as usize % services.len()];
        match i % 4 {
            0 => format!("{service}[{}]: Accepted password for user{} from 10.0.{}.{} port {}", 1000 + i % 97, i % 13, i % 7, i % 251, 40000 + i),
            1 => format!("{service}: Received block blk_{} of size {} from /10.250.{}.{}", i * 7919, 67108864 - i, i % 11, i % 200),
            2 => format!("{service} GET /api/v1/items/{} HTTP/1.1 200 {} \"Mozilla/5.0 (X11; Linux x86_64)\"", i, i * 3 % 5000),
            _ => format!("{service}: Executor task {} finished in {} ms on host-{:03}", i, i % 977, i % 400),
        }
    };
    let docs = 16_000;
    let model: Vec<Option<Value>> = (0..docs).map(|i| Some(Value::Str(line(i)))).collect();
    let write = |training: usize| {
        let mut writer =
            ColumnWriter::without_doc_values(ColumnType::Str).with_training_chunks(training);
        for (doc, value) in model.iter().enumerate() {
            if let Some(Value::Str(text)) = value {
                writer.push_str(doc as u32, text).unwrap();
            }
        }
        writer.finish(model.len() as u32).unwrap()
    };
    let with = write(8);
    let without = write(usize::MAX);
    assert!(without.dictionary.is_none());
    let dictionary =
        ChunkDictionary::decode(with.dictionary.as_deref().expect("a dictionary")).unwrap();
    assert!(with.chunk_count >= 16, "{} chunks", with.chunk_count);
    // The chunks are a sixteenth smaller at least (the writer's rule; the dictionary's own
    // bytes are paid once per column, over far more chunks than these).
    assert!(
        with.data.len() * 16 < without.data.len() * 15,
        "{} against {} bytes",
        with.data.len(),
        without.data.len()
    );
    let read = |data: &ColumnData, dictionary: Option<&ChunkDictionary>| {
        let templates = data
            .templates
            .as_deref()
            .map(|b| Templates::decode(b).unwrap());
        let reader = ColumnReader::new(
            ColumnType::Str,
            model.len() as u32,
            &data.directory,
            &data.data,
        )
        .unwrap()
        .with_templates(templates.as_ref())
        .with_dictionary(dictionary);
        let mut values = Vec::new();
        for chunk in 0..reader.chunk_count() {
            let decoded = reader.decode_chunk(chunk)?;
            values.extend((0..decoded.len()).map(|i| decoded.str_at(i).unwrap().to_owned()));
        }
        Ok::<_, crate::error::DecodeError>(values)
    };
    let expected: Vec<String> = (0..docs).map(line).collect();
    assert_eq!(read(&with, Some(&dictionary)).unwrap(), expected);
    assert_eq!(read(&without, None).unwrap(), expected);
    let error = read(&with, None).unwrap_err();
    assert_eq!(error.reason, "chunk does not decompress");
    // Another column's dictionary (trained on other lines) does not stand in for it.
    let other_model: Vec<String> = (0..docs)
        .map(|i| format!("other text {i} {}", i * 31))
        .collect();
    let mut other = ColumnWriter::without_doc_values(ColumnType::Str).with_training_chunks(8);
    for (doc, text) in other_model.iter().enumerate() {
        other.push_str(doc as u32, text).unwrap();
    }
    if let Some(bytes) = other.finish(docs).unwrap().dictionary {
        let other = ChunkDictionary::decode(&bytes).unwrap();
        assert!(read(&with, Some(&other)).is_err());
    }
}
