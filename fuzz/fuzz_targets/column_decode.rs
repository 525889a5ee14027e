//! Column chunks, straight into `ColumnReader` (no block): any payload must decode to an
//! error or to values in bounds, never a panic, a hang or an allocation out of proportion to
//! the chunk. The target compresses each payload (zstd, as the writer does) and writes the
//! chunk directory with valid crcs, so the payload decoder behind them is what is fuzzed.
//!
//! Input: `type:u8 flags:u8 doc_count:u32`, then chunks, each `first_doc:u32 len:u16` and
//! `len` payload bytes (FORMAT.md, "Columns": `present:varint presence values`). Flag 1: the
//! payloads are put in the data section as they are, not compressed (the frame decoder's
//! errors).

#![no_main]

use libfuzzer_sys::fuzz_target;
use quarry_format::column::ColumnReader;
use quarry_format::ColumnType;

/// Docs read one by one per chunk (a chunk may claim up to u32::MAX).
const MAX_DOCS: u32 = 1 << 12;
const MAX_CHUNKS: usize = 64;

fuzz_target!(|data: &[u8]| {
    let Some((header, mut rest)) = data.split_first_chunk::<6>() else {
        return;
    };
    let ty = ColumnType::from_u8(1 + header[0] % 7).expect("types 1 to 7");
    let raw = header[1] & 1 != 0;
    let doc_count = u32::from_le_bytes([header[2], header[3], header[4], header[5]]);
    let (mut directory, mut column_data) = (Vec::new(), Vec::new());
    while let Some((chunk_header, tail)) = rest.split_first_chunk::<6>() {
        if directory.len() / 40 == MAX_CHUNKS {
            break;
        }
        let first_doc = u32::from_le_bytes([
            chunk_header[0],
            chunk_header[1],
            chunk_header[2],
            chunk_header[3],
        ]);
        let len = (u16::from_le_bytes([chunk_header[4], chunk_header[5]]) as usize).min(tail.len());
        let (payload, tail) = tail.split_at(len);
        rest = tail;
        let stored = if raw {
            payload.to_vec()
        } else {
            zstd::bulk::compress(payload, 1).expect("zstd compresses")
        };
        // chunk_meta := first_doc present_count offset len crc32 min max
        directory.extend_from_slice(&first_doc.to_le_bytes());
        directory.extend_from_slice(&(len as u32).to_le_bytes());
        directory.extend_from_slice(&(column_data.len() as u64).to_le_bytes());
        directory.extend_from_slice(&(stored.len() as u32).to_le_bytes());
        directory.extend_from_slice(&crc32fast::hash(&stored).to_le_bytes());
        directory.extend_from_slice(&u64::from(first_doc).to_le_bytes());
        directory.extend_from_slice(&(len as u64).to_le_bytes());
        column_data.extend_from_slice(&stored);
    }
    let Ok(column) = ColumnReader::new(ty, doc_count, &directory, &column_data) else {
        return;
    };
    for chunk in 0..column.chunk_count() {
        let _ = column.chunk_min_max(chunk);
        let Ok(decoded) = column.decode_chunk(chunk) else {
            continue;
        };
        assert_eq!(decoded.ty, ty);
        let span = decoded.end_doc - decoded.first_doc;
        assert!(
            decoded.len() as u64 <= u64::from(span),
            "more values than docs"
        );
        if let Some(docs) = &decoded.docs {
            assert_eq!(docs.len(), decoded.len());
            assert!(
                docs.windows(2).all(|w| w[0] < w[1]),
                "presence not increasing"
            );
            assert!(docs
                .iter()
                .all(|&d| d >= decoded.first_doc && d < decoded.end_doc));
        }
        let end = decoded
            .end_doc
            .min(decoded.first_doc.saturating_add(MAX_DOCS));
        for doc in decoded.first_doc..end {
            if let Some(position) = decoded.position(doc) {
                assert!(position < decoded.len(), "position past the values");
                assert!(
                    decoded.value_at(position).is_some(),
                    "no value at {position}"
                );
            }
        }
        let _ = decoded.get(decoded.end_doc);
        let _ = decoded.value_at(decoded.len());
    }
    let step = (doc_count / 64).max(1);
    for doc in (0..doc_count).step_by(step as usize).take(65) {
        if let Ok(Some(chunk)) = column.chunk_of(doc) {
            assert!(chunk < column.chunk_count());
        }
    }
    for doc in [
        0,
        doc_count / 2,
        doc_count.saturating_sub(1),
        doc_count,
        u32::MAX,
    ] {
        let _ = column.get(doc);
    }
});
