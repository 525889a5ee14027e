//! The query parser must never panic, every error must point inside the input, and every
//! query that parses is answered without a panic (`quarry_fuzz::check_query_text`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    quarry_fuzz::check_query_text(&String::from_utf8_lossy(data));
});
