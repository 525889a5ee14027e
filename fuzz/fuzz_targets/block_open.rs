//! Any bytes as a block file: open, verify, fetch every document and walk every term's postings
//! must return errors, never panic (see `quarry-format`'s "bad input never panics").
//!
//! Run with `cargo +nightly fuzz run block_open` from the repository root. A valid block as a
//! seed (any file `write_block` made, e.g. from the crate's tests) gets the fuzzer past the
//! magic and checksums much sooner.

#![no_main]

use fst::Streamer;
use libfuzzer_sys::fuzz_target;
use quarry_format::block::{BlockReader, DocumentFetcher};
use quarry_format::TERMINATED;
use std::path::PathBuf;
use std::sync::OnceLock;

/// Largest number of docs and seek targets tried per input, so one input stays fast.
const MAX_DOCS: u32 = 10_000;

/// One file per process, rewritten for each input; in /dev/shm where there is one, since
/// rewriting a file on a disk file system is slow.
fn scratch_file() -> &'static PathBuf {
    static FILE: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    &FILE
        .get_or_init(|| {
            let shm = std::path::Path::new("/dev/shm");
            let dir = if shm.is_dir() {
                tempfile::tempdir_in(shm)
            } else {
                tempfile::tempdir()
            }
            .expect("temporary directory");
            let path = dir.path().join("input.block");
            (dir, path)
        })
        .1
}

fuzz_target!(|data: &[u8]| {
    let path = scratch_file();
    std::fs::write(path, data).expect("write the input");
    let Ok(reader) = BlockReader::open(path) else {
        return;
    };
    // A server reads blocks it has not verified: go on whatever verify says.
    let _ = reader.verify();
    let doc_count = reader.doc_count().min(MAX_DOCS);
    let mut fetcher = DocumentFetcher::new(&reader);
    for doc in 0..doc_count {
        let _ = fetcher.fetch(doc);
    }
    for index in 0..=reader.sparse_time_len().min(MAX_DOCS as usize) {
        let _ = reader.sparse_time(index);
    }

    for ordinal in 0..reader.manifest().fields.len() {
        let _ = reader.norms(ordinal as u16);
    }
    let mut stream = reader.term_dictionary().stream();
    let mut positions = Vec::new();
    while let Some((_, ordinal)) = stream.next() {
        let Ok(info) = reader.term_info_by_ordinal(ordinal) else {
            continue;
        };
        let Ok(mut cursor) = reader.postings(&info) else {
            continue;
        };
        while cursor.doc() != TERMINATED {
            let _ = cursor.term_freq();
            let _ = cursor.positions(&mut positions);
            let _ = cursor.block_bound(cursor.doc());
            cursor.advance();
        }
        let Ok(mut cursor) = reader.postings(&info) else {
            continue;
        };
        for target in (0..doc_count.saturating_add(64)).step_by(61) {
            cursor.seek(target);
            let _ = cursor.positions(&mut positions);
        }
    }
});
