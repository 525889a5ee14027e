//! Elasticsearch's query DSL: any JSON compiles or is refused, never a panic, and every query
//! that compiles is answered without a panic (`quarry_fuzz::check_dsl`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    quarry_fuzz::check_dsl(data);
});
