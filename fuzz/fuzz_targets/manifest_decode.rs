//! A block manifest, any bytes, for each format version: `Manifest::decode` must return an
//! error or a manifest, never panic or allocate out of proportion to the input; a manifest of
//! the current version must survive `encode` and `decode` unchanged (the writer's encoding is
//! the reader's).
//!
//! Input: `version:u8` (taken as 1 + version % FORMAT_VERSION) then the manifest's bytes.

#![no_main]

use libfuzzer_sys::fuzz_target;
use quarry_format::block::Manifest;
use quarry_format::limits::FORMAT_VERSION;

fuzz_target!(|data: &[u8]| {
    let Some((&version, bytes)) = data.split_first() else {
        return;
    };
    let version = 1 + u32::from(version) % FORMAT_VERSION;
    let Ok(manifest) = Manifest::decode(bytes, version) else {
        return;
    };
    let sections = manifest.sections();
    assert!(sections.len() >= 5);
    let mut encoded = Vec::new();
    manifest.encode(&mut encoded);
    // `encode` writes the current version; older manifests lack its later sections.
    if version == FORMAT_VERSION {
        let again = Manifest::decode(&encoded, version).expect("an encoded manifest decodes");
        assert_eq!(again, manifest);
    }
});
