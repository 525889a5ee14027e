//! A tenant's catalog is not held while its blocks are written: with a block store that takes
//! its time (object storage: an upload), a flush that is writing must not stop a mapping
//! change, which takes the catalog. The store here holds each write until the test lets it
//! go; the mapping change must finish meanwhile, and the flush after.

use quarry_format::block::BlockInput;
use quarry_format::{BlockReader, FormatError};
use quarry_server::live::{Batch, IngestConfig, LiveIndex};
use quarry_store::{BlockEntry, BlockId, BlockStore, Catalog, LocalDir, Mapping, Settings};
use std::ops::Range;
use std::path::PathBuf;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A local store whose writes wait for the test: each `put`/`put_bytes` says it began, then
/// waits for a go.
#[derive(Debug)]
struct GatedStore {
    inner: LocalDir,
    began: Mutex<mpsc::Sender<()>>,
    go: Mutex<mpsc::Receiver<()>>,
}

impl GatedStore {
    fn wait(&self) {
        let _ = self.began.lock().unwrap().send(());
        let _ = self.go.lock().unwrap().recv();
    }
}

impl BlockStore for GatedStore {
    fn put(&self, id: BlockId, input: BlockInput) -> Result<BlockEntry, FormatError> {
        self.wait();
        self.inner.put(id, input)
    }
    fn put_bytes(&self, id: BlockId, bytes: &[u8]) -> Result<(), FormatError> {
        self.wait();
        self.inner.put_bytes(id, bytes)
    }
    fn open(&self, block: &BlockEntry) -> Result<BlockReader, FormatError> {
        self.inner.open(block)
    }
    fn read_range(&self, id: BlockId, range: Range<u64>) -> Result<Vec<u8>, FormatError> {
        self.inner.read_range(id, range)
    }
    fn delete(&self, id: BlockId) -> Result<(), FormatError> {
        self.inner.delete(id)
    }
    fn list(&self) -> Result<Vec<BlockId>, FormatError> {
        self.inner.list()
    }
    fn location(&self, id: BlockId) -> PathBuf {
        self.inner.location(id)
    }
}

#[test]
fn a_mapping_change_does_not_wait_for_a_block_write() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let catalog = Catalog::open_or_create(&data, Settings::default()).unwrap();
    let (began_tx, began) = mpsc::channel();
    let (go, go_rx) = mpsc::channel();
    let store = Arc::new(GatedStore {
        inner: LocalDir::new(&data),
        began: Mutex::new(began_tx),
        go: Mutex::new(go_rx),
    });
    let config = IngestConfig::default();
    let (live, _) = LiveIndex::open(
        Box::new(catalog),
        store,
        "default",
        &data.join("wal"),
        config,
    )
    .unwrap();
    let live = Arc::new(live);
    let lines = [
        r#"{"message": "disk full", "n": 1}"#,
        r#"{"message": "ok", "n": 2}"#,
    ];
    let (batch, errors) = Batch::parse(
        0,
        lines.iter().enumerate().map(|(i, l)| (i + 1, l.as_bytes())),
        &quarry_index::Schema::default(),
    );
    assert!(errors.is_empty(), "{errors:?}");
    live.ingest(batch, false).unwrap();

    let flushing = {
        let live = live.clone();
        std::thread::spawn(move || live.flush())
    };
    began
        .recv_timeout(Duration::from_secs(60))
        .expect("the flush writes a block");
    // The flush is inside the store's write now. A mapping change takes the catalog: it
    // must not wait for the write.
    let (done_tx, done) = mpsc::channel();
    let changing = {
        let live = live.clone();
        std::thread::spawn(move || {
            let update =
                Mapping::from_json(r#"{"properties": {"tag": {"type": "keyword"}}}"#).unwrap();
            let result = live.set_mapping(&update).map(|_| ());
            let _ = done_tx.send(());
            result
        })
    };
    let finished = done.recv_timeout(Duration::from_secs(60)).is_ok();
    // Let every write through (the flush's, and any later one) whatever happened above.
    for _ in 0..16 {
        let _ = go.send(());
    }
    assert!(
        finished,
        "the mapping change waited for the block write (the catalog was held)"
    );
    changing.join().unwrap().unwrap();
    flushing.join().unwrap().unwrap();
    assert_eq!(live.snapshot().unwrap().doc_count(), 2);
    live.close();
}
