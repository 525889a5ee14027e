//! The block store contract, checked the same way on a local directory and on a real
//! S3-compatible store (a throwaway SeaweedFS): what is put reads back whole and in ranges,
//! is listed by its id, and is gone after a delete; a large block goes up in parts.

#[path = "support/seaweedfs.rs"]
mod seaweedfs;

use quarry_format::FormatError;
use quarry_store::block_store::BLOCKS_DIR;
use quarry_store::{BlockEntry, BlockId, BlockStore, LocalDir, ObjectStorage};
use seaweedfs::SeaweedFs;

fn unknown(id: BlockId) -> BlockEntry {
    BlockEntry {
        id,
        docs: 0,
        time_min: 0,
        time_max: 0,
        bytes: 0,
        open_from: 0,
    }
}

/// Deterministic bytes that differ at every offset that matters to a range read.
fn bytes_of(len: usize, seed: u64) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect()
}

fn check_contract(store: &dyn BlockStore) {
    let bytes = bytes_of(100_000, 7);
    store.put_bytes(7, &bytes).unwrap();
    store.put_bytes(12, b"another").unwrap();
    assert_eq!(store.list().unwrap(), vec![7, 12]);
    assert_eq!(store.read_range(7, 4..8).unwrap(), bytes[4..8].to_vec());
    assert_eq!(
        store.read_range(7, 65_000..99_999).unwrap(),
        bytes[65_000..99_999].to_vec()
    );
    assert_eq!(store.read_range(7, 0..bytes.len() as u64).unwrap(), bytes);
    let not_a_block = store.open(&unknown(7));
    assert!(
        matches!(not_a_block, Err(FormatError::BadMagic { .. })),
        "{not_a_block:?}"
    );
    // Errors name the block where the store keeps it.
    let location = store.location(12);
    assert!(
        location.to_string_lossy().contains("00000012"),
        "{location:?}"
    );
    assert_eq!(store.find(&location, &[7, 12]), Some(12));
    store.delete(7).unwrap();
    store.delete(7).unwrap();
    assert_eq!(store.list().unwrap(), vec![12]);
    let gone = store.open(&unknown(7));
    assert!(matches!(gone, Err(FormatError::Io { .. })), "{gone:?}");
}

#[test]
fn a_local_directory_keeps_the_contract() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(BLOCKS_DIR)).unwrap();
    check_contract(&LocalDir::new(dir.path()));
}

#[test]
fn an_s3_store_keeps_the_contract() {
    let Some(weed) = SeaweedFs::start() else {
        return;
    };
    let cache = tempfile::tempdir().unwrap();
    let storage =
        ObjectStorage::s3_with(&weed.url("contract"), cache.path(), &weed.settings()).unwrap();
    let store = storage.tenant_blocks("default");
    check_contract(&store);
    assert!(
        store
            .location(12)
            .to_string_lossy()
            .starts_with("s3://quarry/contract/tenants/default/blocks/"),
        "{:?}",
        store.location(12)
    );
    // Another tenant's blocks are elsewhere.
    assert_eq!(
        storage.tenant_blocks("other").list().unwrap(),
        Vec::<u64>::new()
    );

    // 20 MiB goes up in parts and reads back.
    let large = bytes_of(20 << 20, 3);
    store.put_bytes(40, &large).unwrap();
    let range = (17 << 20) + 5..(19 << 20) + 11;
    assert_eq!(
        store.read_range(40, range.clone()).unwrap(),
        large[range.start as usize..range.end as usize].to_vec()
    );
    assert_eq!(store.list().unwrap(), vec![12, 40]);
}
