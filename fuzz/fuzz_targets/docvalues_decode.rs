//! A doc values section, any bytes: `DocValues::new` must reject it or every read after it
//! (by doc, by range, through a cursor, dictionary strings) must stay in bounds. A block
//! reader opens doc values with `new` and then reads them exactly so.
//!
//! Input: `lo:u16 hi:u16` (a doc range for `for_each_in_range`) then the section's bytes.

#![no_main]

use libfuzzer_sys::fuzz_target;
use quarry_format::docvalues::DocValues;

/// Docs read one by one per input (the section may claim up to u32::MAX).
const MAX_DOCS: u32 = 1 << 14;

fuzz_target!(|data: &[u8]| {
    let Some((header, bytes)) = data.split_first_chunk::<4>() else {
        return;
    };
    let lo = u32::from(u16::from_le_bytes([header[0], header[1]]));
    let hi = u32::from(u16::from_le_bytes([header[2], header[3]]));
    let Ok(values) = DocValues::new(bytes) else {
        return;
    };
    let doc_count = values.doc_count();
    let docs = doc_count.min(MAX_DOCS);
    let edges = [doc_count.saturating_sub(1), doc_count, u32::MAX];
    let dictionary_len = values.dictionary_len();
    for doc in (0..docs).chain(edges) {
        if let Some(ordinal) = values.ordinal(doc) {
            if (ordinal as usize) < dictionary_len {
                assert!(values.string(ordinal).is_some(), "ordinal without a string");
            }
        }
        let _ = values.raw(doc);
    }
    for ordinal in 0..dictionary_len.min(MAX_DOCS as usize) {
        let _ = values.string(ordinal as u32);
    }
    let _ = values.string(u32::MAX);
    let mut seen = 0u64;
    values.for_each_in_range(lo, hi, &mut |doc, _| {
        assert!(
            doc >= lo && doc < hi.min(doc_count),
            "doc {doc} outside {lo}..{hi}"
        );
        seen += 1;
    });
    values.for_each_in_range(docs.saturating_sub(300), u32::MAX, &mut |_, _| seen += 1);
    let mut cursor = values.cursor();
    for doc in (0..docs).chain(edges) {
        let (ordinal, raw) = (cursor.ordinal(doc), cursor.raw(doc));
        assert_eq!(ordinal, values.ordinal(doc));
        assert_eq!(raw, values.raw(doc));
    }
    assert!(values.same_as(&cursor.values()));
});
