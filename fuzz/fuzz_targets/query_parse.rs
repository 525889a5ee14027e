//! The query parser must never panic, and every error must point inside the input.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Err(error) = quarry_query::parser::parse(&text) {
        assert!(error.position <= text.len());
    }
});
