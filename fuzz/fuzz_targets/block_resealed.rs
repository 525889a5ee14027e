//! A block written by a buggy writer: a valid seed block, mutated, with every checksum made
//! valid again (`quarry_fuzz::reseal`), must open to an error or be read without a panic, a
//! hang or a runaway allocation, through the format crate (verify, columns, doc values, time
//! offsets, documents, terms, postings, positions) and through searches (term, phrase, range,
//! tail, head, histogram, aggregations).
//!
//! Input: `seed:u8 flags:u8 select:u8`, then either edits (`part:u8 offset:u24 value:u8`, see
//! `quarry_fuzz::apply_edits`) of seed block `seed % seeds`, or (flag 2) the whole block as
//! raw bytes. `select` picks what one run reads, to keep runs short: below 128, one area of
//! the block (`quarry_fuzz::Area`); from 128, one query's searches. Flag 1 turns the
//! searcher's optimizations off (the plain paths: column scans, `_time` chunk decodes, no
//! skipping).
//!
//! `cargo +nightly fuzz run block_resealed -- -timeout=20`

#![no_main]

use libfuzzer_sys::fuzz_target;
use quarry_format::BlockReader;
use quarry_fuzz::Area;
use quarry_query::filter::Optimizations;
use std::path::Path;
use std::sync::Arc;

const FLAG_NO_OPTIMIZATIONS: u8 = 1;
const FLAG_RAW: u8 = 2;

fuzz_target!(|data: &[u8]| {
    let [seed, flags, select, rest @ ..] = data else {
        return;
    };
    let mut block = if flags & FLAG_RAW != 0 {
        rest.to_vec()
    } else {
        let seeds = quarry_fuzz::seeds();
        quarry_fuzz::apply_edits(&seeds[*seed as usize % seeds.len()], rest)
    };
    quarry_fuzz::reseal(&mut block);
    let Ok(reader) = BlockReader::from_bytes(Path::new("fuzz.qblk"), Arc::new(block)) else {
        return;
    };
    if *select < 128 {
        quarry_fuzz::exercise_block(&reader, Area::ALL[*select as usize % Area::ALL.len()]);
    } else {
        let optimizations = if flags & FLAG_NO_OPTIMIZATIONS != 0 {
            Optimizations::NONE
        } else {
            Optimizations::ALL
        };
        quarry_fuzz::exercise_searcher(reader, *select as usize, optimizations);
    }
});
