//! Faults of object storage, injected between Quarry and a real S3-compatible store (a
//! throwaway SeaweedFS): an `ObjectStore` wrapper fails or truncates the requests a test
//! chooses. Whatever fails, no acknowledged event is lost and no answer is silently smaller:
//!
//! - uploads that fail leave the events in memory and the WAL, searchable, and the flush is
//!   retried until the store takes them;
//! - a block uploaded but never named by the catalog (a crash in between) is removed when the
//!   tenant opens next;
//! - reads that fail, or come back short, leave the block out of the answer by name (partial),
//!   and the same block reads whole once the store answers again; a block that could not be
//!   opened at start is opened again later;
//! - the disk cache answers a restarted node without a request, a byte garbled in it costs a
//!   fetch of its granule, never a different answer, and a budget is kept at restart.

#[path = "../../quarry-store/tests/support/seaweedfs.rs"]
mod seaweedfs;

use async_trait::async_trait;
use bytes::Bytes;
use futures_util::stream::BoxStream;
use object_store::path::Path as ObjectPath;
use object_store::{
    CopyOptions, GetOptions, GetResult, GetResultPayload, ListResult, MultipartUpload, ObjectMeta,
    ObjectStore, PutMultipartOptions, PutOptions, PutPayload, PutResult,
};
use quarry_query::{HitsRequest, SortOrder};
use quarry_server::live::{Batch, IngestConfig, LiveIndex};
use quarry_store::{BlockStore, Catalog, ObjectStorage, Settings, Storage};
use std::ops::Range;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// What the wrapper does to requests now.
#[derive(Debug, Default)]
struct Faults {
    fail_puts: AtomicBool,
    fail_gets: AtomicBool,
    truncate_gets: AtomicBool,
    /// Requests failed or truncated so far.
    injected: AtomicU64,
}

#[derive(Debug)]
struct FaultyStore {
    inner: Arc<dyn ObjectStore>,
    faults: Arc<Faults>,
}

impl std::fmt::Display for FaultyStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "FaultyStore({})", self.inner)
    }
}

impl FaultyStore {
    fn injected(&self, what: &str) -> object_store::Error {
        self.faults.injected.fetch_add(1, Ordering::Relaxed);
        object_store::Error::Generic {
            store: "faulty",
            source: format!("injected fault: {what}").into(),
        }
    }
}

#[async_trait]
impl ObjectStore for FaultyStore {
    async fn put_opts(
        &self,
        location: &ObjectPath,
        payload: PutPayload,
        opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        if self.faults.fail_puts.load(Ordering::Relaxed) {
            return Err(self.injected("put refused"));
        }
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &ObjectPath,
        opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        if self.faults.fail_puts.load(Ordering::Relaxed) {
            return Err(self.injected("multipart upload refused"));
        }
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(
        &self,
        location: &ObjectPath,
        options: GetOptions,
    ) -> object_store::Result<GetResult> {
        if self.faults.fail_gets.load(Ordering::Relaxed) && !options.head {
            return Err(self.injected("get refused"));
        }
        let result = self.inner.get_opts(location, options).await?;
        if !self.faults.truncate_gets.load(Ordering::Relaxed) || result.range.is_empty() {
            return Ok(result);
        }
        // The body comes back one byte short, as from a connection cut at the end.
        let range = result.range.clone();
        let meta = result.meta.clone();
        let attributes = result.attributes.clone();
        let mut bytes = result.bytes().await?.to_vec();
        bytes.pop();
        self.faults.injected.fetch_add(1, Ordering::Relaxed);
        let body: BoxStream<'static, object_store::Result<Bytes>> = Box::pin(
            futures_util::stream::once(async move { Ok(Bytes::from(bytes)) }),
        );
        Ok(GetResult {
            payload: GetResultPayload::Stream(body),
            meta,
            range: range.start..range.end - 1,
            attributes,
            extensions: Default::default(),
        })
    }

    async fn get_ranges(
        &self,
        location: &ObjectPath,
        ranges: &[Range<u64>],
    ) -> object_store::Result<Vec<Bytes>> {
        if self.faults.fail_gets.load(Ordering::Relaxed) {
            return Err(self.injected("get refused"));
        }
        let mut fetched = self.inner.get_ranges(location, ranges).await?;
        if self.faults.truncate_gets.load(Ordering::Relaxed) {
            self.faults.injected.fetch_add(1, Ordering::Relaxed);
            for bytes in &mut fetched {
                *bytes = bytes.slice(..bytes.len().saturating_sub(1));
            }
        }
        Ok(fetched)
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<ObjectPath>>,
    ) -> BoxStream<'static, object_store::Result<ObjectPath>> {
        self.inner.delete_stream(locations)
    }

    fn list(
        &self,
        prefix: Option<&ObjectPath>,
    ) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.inner.list(prefix)
    }

    async fn list_with_delimiter(
        &self,
        prefix: Option<&ObjectPath>,
    ) -> object_store::Result<ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(
        &self,
        from: &ObjectPath,
        to: &ObjectPath,
        options: CopyOptions,
    ) -> object_store::Result<()> {
        self.inner.copy_opts(from, to, options).await
    }
}

/// Object storage on `weed` under `prefix`, cached in `cache`, through a `FaultyStore`.
fn faulty_storage(
    weed: &seaweedfs::SeaweedFs,
    prefix: &str,
    cache: &Path,
) -> (ObjectStorage, Arc<Faults>) {
    let faults = Arc::new(Faults::default());
    let storage = ObjectStorage::s3_with(&weed.url(prefix), cache, &weed.settings())
        .unwrap()
        .wrap_store(|inner| {
            Arc::new(FaultyStore {
                inner,
                faults: faults.clone(),
            })
        });
    (storage, faults)
}

fn open_live(data: &Path, storage: &ObjectStorage) -> LiveIndex {
    open_live_with(data, storage, IngestConfig::default())
}

fn open_live_with(data: &Path, storage: &ObjectStorage, config: IngestConfig) -> LiveIndex {
    let catalog = Catalog::open_or_create(data, Settings::default()).unwrap();
    let storage = Storage::Object(storage.clone());
    let store = storage.tenant_store(data, "default");
    let config = IngestConfig { storage, ..config };
    let (live, _) = LiveIndex::open(
        Box::new(catalog),
        store,
        "default",
        &data.join("wal"),
        config,
    )
    .unwrap();
    live
}

fn ingest(live: &LiveIndex, first: usize, count: usize) {
    // Values that do not compress away, so that a block of many events is several granules.
    let noise = |n: usize| (n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let lines: Vec<String> = (first..first + count)
        .map(|n| {
            format!(
                r#"{{"message": "event number {n} of the fault test {:016x}", "n": {n}, "noise": "{:016x}"}}"#,
                noise(n),
                noise(n + 1)
            )
        })
        .collect();
    let (batch, errors) = Batch::parse(
        0,
        lines.iter().enumerate().map(|(i, l)| (i + 1, l.as_bytes())),
        &quarry_index::Schema::default(),
    );
    assert!(errors.is_empty(), "{errors:?}");
    live.ingest(batch, true).unwrap();
}

/// A data directory (in a new temporary directory, with the caches beside it) whose `count`
/// events were ingested, flushed into blocks and uploaded under `prefix` by a node that has
/// closed since.
fn uploaded(
    weed: &seaweedfs::SeaweedFs,
    prefix: &str,
    count: usize,
) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let (storage, _) = faulty_storage(weed, prefix, &dir.path().join("upload-cache"));
    let live = open_live(&data, &storage);
    ingest(&live, 0, count);
    live.flush().unwrap();
    live.close();
    (dir, data)
}

/// Counts `query` over the live index's snapshot, leaving out blocks that fail to read:
/// the count and the blocks left out, by name. The newest 20 hits' events are fetched too
/// (reading column chunks; a count alone may need no more than a block's resident parts).
fn count(live: &LiveIndex, query: &str) -> (u64, Vec<String>) {
    let mut searcher = (*live.snapshot().unwrap()).clone();
    let query = searcher.parse(query).unwrap();
    let request = HitsRequest {
        limit: 20,
        count: true,
        sort: SortOrder::TimeDesc,
        ..Default::default()
    };
    let count = searcher
        .skip_damaged(|s| {
            let result = s.search(&query, &request)?;
            let events = s.events(&result.hits)?;
            assert!(events.iter().all(|event| !event.is_empty()));
            Ok(result.count.expect("counted"))
        })
        .unwrap();
    let damaged = searcher
        .damaged()
        .iter()
        .map(|d| format!("{}: {}", d.path.display(), d.error))
        .collect();
    (count, damaged)
}

#[test]
fn failed_uploads_keep_events_and_are_retried() {
    let Some(weed) = seaweedfs::SeaweedFs::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let (storage, faults) = faulty_storage(&weed, "uploads", &dir.path().join("cache"));
    let live = open_live(&data, &storage);
    faults.fail_puts.store(true, Ordering::Relaxed);
    ingest(&live, 0, 500);
    let error = live.flush().expect_err("the upload fails");
    assert!(error.to_string().contains("injected fault"), "{error}");
    assert!(faults.injected.load(Ordering::Relaxed) > 0);
    // Nothing was named in the catalog, nothing reached the store, and every event is still
    // searchable (from memory).
    let blocks = storage.tenant_blocks("default");
    assert_eq!(blocks.list().unwrap(), Vec::<u64>::new());
    assert_eq!(count(&live, "fault"), (500, Vec::new()));
    // The store heals: the next flush uploads, commits and swaps.
    faults.fail_puts.store(false, Ordering::Relaxed);
    ingest(&live, 500, 100);
    live.flush().unwrap();
    assert!(!blocks.list().unwrap().is_empty());
    assert_eq!(count(&live, "fault"), (600, Vec::new()));
    live.close();
    drop(live);

    // Reopened with an empty cache: everything is read back from the store.
    std::fs::remove_dir_all(dir.path().join("cache")).unwrap();
    let (storage, _) = faulty_storage(&weed, "uploads", &dir.path().join("cache"));
    let live = open_live(&data, &storage);
    assert_eq!(count(&live, "fault"), (600, Vec::new()));
    assert_eq!(count(&live, "n:599"), (1, Vec::new()));
    live.close();
}

#[test]
fn a_block_no_catalog_names_is_removed_at_open() {
    let Some(weed) = seaweedfs::SeaweedFs::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let (storage, _) = faulty_storage(&weed, "orphans", &dir.path().join("cache"));
    let live = open_live(&data, &storage);
    ingest(&live, 0, 50);
    live.flush().unwrap();
    live.close();
    drop(live);
    let blocks = storage.tenant_blocks("default");
    let named = blocks.list().unwrap();
    assert!(!named.is_empty());
    // A crash after an upload and before the catalog's commit leaves such an object.
    blocks
        .put_bytes(9_999, b"uploaded, never committed")
        .unwrap();
    let live = open_live(&data, &storage);
    assert_eq!(blocks.list().unwrap(), named, "the unnamed block is gone");
    assert_eq!(count(&live, "fault"), (50, Vec::new()));
    live.close();
}

#[test]
fn failed_or_short_reads_leave_the_block_out_by_name() {
    let Some(weed) = seaweedfs::SeaweedFs::start() else {
        return;
    };
    let (dir, data) = uploaded(&weed, "reads", 50_000);

    for fault in ["fail", "truncate"] {
        // A node with an empty cache opens the blocks (their ends), then the store fails.
        let cache = dir.path().join(format!("cache-{fault}"));
        let (storage, faults) = faulty_storage(&weed, "reads", &cache);
        let live = open_live(&data, &storage);
        let flag = match fault {
            "fail" => &faults.fail_gets,
            _ => &faults.truncate_gets,
        };
        flag.store(true, Ordering::Relaxed);
        let (found, damaged) = count(&live, "fault");
        // Every block is left out, by the name of its object, and none is called damaged
        // when it could not be read (a short body is caught by its length).
        assert_eq!(found, 0, "{fault}: no block could be read");
        assert!(!damaged.is_empty(), "{fault}");
        for block in &damaged {
            assert!(
                block.starts_with("s3://quarry/reads/tenants/default/blocks/"),
                "{fault}: the block is named by its object: {damaged:?}"
            );
            assert!(
                block.contains("i/o error") && !block.contains("corrupt"),
                "{fault}: {damaged:?}"
            );
        }
        assert!(faults.injected.load(Ordering::Relaxed) > 0);
        // The store answers again: a new snapshot reads the block whole.
        flag.store(false, Ordering::Relaxed);
        assert_eq!(count(&live, "fault"), (50_000, Vec::new()), "{fault}");
        live.close();
    }
}

/// Which `.qblk` copies the cache directory holds.
/// Flips bits of the bytes at `offsets(file length)` of `path`, in place.
fn garble(path: &Path, offsets: impl Fn(u64) -> Vec<u64>) {
    use std::os::unix::fs::FileExt;
    let file = std::fs::File::options()
        .read(true)
        .write(true)
        .open(path)
        .unwrap();
    for offset in offsets(file.metadata().unwrap().len()) {
        let mut byte = [0u8];
        file.read_exact_at(&mut byte, offset).unwrap();
        file.write_all_at(&[byte[0] ^ 0x5a], offset).unwrap();
    }
}

fn cached_copies(cache: &Path) -> Vec<std::path::PathBuf> {
    let mut copies: Vec<_> = std::fs::read_dir(cache.join("default"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|e| e == "qblk"))
        .collect();
    copies.sort();
    copies
}

#[test]
fn the_disk_cache_survives_a_restart_checks_what_it_kept_and_keeps_its_budget() {
    let Some(weed) = seaweedfs::SeaweedFs::start() else {
        return;
    };
    let (dir, data) = uploaded(&weed, "cache", 50_000);
    let cache = dir.path().join("cache");
    let queries = ["fault", "n:4711", "number AND 49999"];
    // The answers, and what the searches' fetches cost (round trips, bytes, cache hits).
    let answers_costing = |storage: &ObjectStorage| {
        let live = open_live(&data, storage);
        let fetched = Arc::new(quarry_format::FetchCounts::default());
        let answers: Vec<(u64, Vec<String>)> =
            fetched.scope(|| queries.iter().map(|q| count(&live, q)).collect());
        live.close();
        let read = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        let cost = (
            read(&fetched.round_trips),
            read(&fetched.bytes),
            read(&fetched.cache_hits),
        );
        (answers, cost)
    };
    let answers = |storage: &ObjectStorage| answers_costing(storage).0;
    let gets = |storage: &ObjectStorage| storage.stats().gets.load(Ordering::Relaxed);

    // A node with an empty cache fetches what its queries read.
    let expected = {
        let (storage, _) = faulty_storage(&weed, "cache", &cache);
        let before = gets(&storage);
        let (answers, (round_trips, bytes, _)) = answers_costing(&storage);
        // The searches' own fetches are counted for them (opening the blocks is not).
        assert!(
            round_trips > 0 && bytes > 0,
            "{round_trips} round trips, {bytes} bytes"
        );
        assert!(gets(&storage) >= before + round_trips);
        answers
    };
    assert_eq!(expected[0], (50_000, Vec::new()));
    assert_eq!(expected[1], (1, Vec::new()));
    assert!(!cached_copies(&cache).is_empty());

    // Restarted: the same answers without a single request.
    {
        let (storage, faults) = faulty_storage(&weed, "cache", &cache);
        faults.fail_gets.store(true, Ordering::Relaxed);
        let (answers, (round_trips, bytes, cache_hits)) = answers_costing(&storage);
        assert_eq!(answers, expected);
        assert_eq!((round_trips, bytes), (0, 0));
        assert!(cache_hits > 0);
        assert_eq!(gets(&storage), 0);
        assert_eq!(faults.injected.load(Ordering::Relaxed), 0);
        assert!(storage.cache().used() > 0);
    }

    // A byte garbled in every copy, in a granule the queries read: fetched again, same answers.
    for copy in cached_copies(&cache) {
        garble(&copy, |len| vec![len - 100]);
    }
    {
        let (storage, _) = faulty_storage(&weed, "cache", &cache);
        assert_eq!(answers(&storage), expected);
        let stats = storage.stats();
        assert!(stats.corrupt_granules.load(Ordering::Relaxed) > 0);
        let refetched = stats.bytes_fetched.load(Ordering::Relaxed);
        assert!(
            refetched > 0 && refetched <= cached_copies(&cache).len() as u64 * (64 << 10),
            "only the garbled granules are fetched again: {refetched} bytes"
        );
    }

    // A budget smaller than what the cache holds: the closed copies go at start, and the
    // answers stay the same.
    {
        let (storage, _) = faulty_storage(&weed, "cache", &cache);
        let before = storage.cache().used();
        let storage = storage.with_cache_budget(1);
        assert!(cached_copies(&cache).is_empty());
        assert_eq!(storage.cache().used(), 0);
        assert!(storage.stats().evicted_bytes.load(Ordering::Relaxed) >= before);
        assert_eq!(answers(&storage), expected);
    }
}

#[test]
fn retention_deletes_the_objects_and_their_cached_copies() {
    let Some(weed) = seaweedfs::SeaweedFs::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let cache = dir.path().join("cache");
    let (storage, _) = faulty_storage(&weed, "retention", &cache);
    // Retired objects stay a second (searchers of the store may still read them).
    let grace = std::time::Duration::from_secs(1);
    let config = IngestConfig {
        retired_grace: grace,
        ..IngestConfig::default()
    };
    let live = open_live_with(&data, &storage, config);
    // Two blocks: the first's events a day older than the second's.
    let day = 86_400_000_000_000i64;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i64;
    for (first, time) in [(0, now - day), (1_000, now)] {
        let lines: Vec<String> = (first..first + 1_000)
            .map(|n| format!(r#"{{"_time": {time}, "message": "kept or not {n}"}}"#))
            .collect();
        let (batch, errors) = Batch::parse(
            0,
            lines.iter().enumerate().map(|(i, l)| (i + 1, l.as_bytes())),
            &quarry_index::Schema::default(),
        );
        assert!(errors.is_empty(), "{errors:?}");
        live.ingest(batch, true).unwrap();
        live.flush().unwrap();
    }
    let blocks = storage.tenant_blocks("default");
    let before = blocks.list().unwrap();
    assert_eq!(before.len(), 2, "{before:?}");
    assert_eq!(cached_copies(&cache).len(), 2);
    assert_eq!(count(&live, "kept"), (2_000, Vec::new()));

    assert_eq!(live.drop_blocks_before(now - day / 2).unwrap(), 1);
    assert_eq!(count(&live, "kept"), (1_000, Vec::new()));
    assert_eq!(blocks.list().unwrap(), before, "kept through its grace");
    std::thread::sleep(grace + std::time::Duration::from_millis(200));
    live.background_step().unwrap();
    let after = blocks.list().unwrap();
    assert_eq!(
        after,
        before[1..].to_vec(),
        "the older block's object is gone"
    );
    assert_eq!(cached_copies(&cache).len(), 1, "and its cached copy");
    assert_eq!(count(&live, "kept"), (1_000, Vec::new()));
    live.close();
    drop(live);
    // A node that starts from the catalog finds what is left, all of it.
    let (storage, _) = faulty_storage(&weed, "retention", &dir.path().join("cache-2"));
    let live = open_live(&data, &storage);
    assert_eq!(count(&live, "kept"), (1_000, Vec::new()));
    live.close();
}

#[test]
fn blocks_that_could_not_open_at_start_are_opened_again() {
    let Some(weed) = seaweedfs::SeaweedFs::start() else {
        return;
    };
    let (dir, data) = uploaded(&weed, "reopen", 2_000);
    // The store does not answer while a node with an empty cache starts.
    let (storage, faults) = faulty_storage(&weed, "reopen", &dir.path().join("cache"));
    faults.fail_gets.store(true, Ordering::Relaxed);
    let live = open_live(&data, &storage);
    let (found, left_out) = count(&live, "fault");
    assert_eq!(found, 0);
    assert_eq!(left_out.len(), 1, "{left_out:?}");
    assert!(left_out[0].contains("i/o error"), "{left_out:?}");
    assert_eq!(live.reopen_unreadable(), 0, "the store still fails");
    // It answers again: the next try opens the block.
    faults.fail_gets.store(false, Ordering::Relaxed);
    assert_eq!(live.reopen_unreadable(), 1);
    assert_eq!(count(&live, "fault"), (2_000, Vec::new()));
    assert_eq!(live.reopen_unreadable(), 0);
    live.close();
}

#[test]
fn a_checksum_failure_in_the_cache_of_an_open_block_is_fetched_again_from_the_store() {
    let Some(weed) = seaweedfs::SeaweedFs::start() else {
        return;
    };
    let (dir, data) = uploaded(&weed, "garbled-open", 50_000);
    let cache = dir.path().join("cache");
    let (storage, _) = faulty_storage(&weed, "garbled-open", &cache);
    let live = open_live(&data, &storage);
    assert_eq!(count(&live, "fault"), (50_000, Vec::new()));
    // Bytes change in the copies of blocks the server has open and has read from.
    for copy in cached_copies(&cache) {
        garble(&copy, |len| (0..len).step_by(4096).collect());
    }
    // The answer that meets the damage leaves the block out, by name...
    let (_, left_out) = count(&live, "fault");
    assert!(!left_out.is_empty(), "the garbled copy was read");
    assert!(
        left_out.iter().all(|b| b.contains("checksum")),
        "{left_out:?}"
    );
    // ...and the next ones read it whole from the store: the copy, not the block, was damaged.
    let gets = storage.stats().gets.load(Ordering::Relaxed);
    assert_eq!(count(&live, "fault"), (50_000, Vec::new()));
    assert!(storage.stats().gets.load(Ordering::Relaxed) > gets);
    assert_eq!(count(&live, "fault"), (50_000, Vec::new()));
    live.close();
}
