//! Blocks in S3-compatible object storage (issue 28), through the `object_store` crate: one
//! object per block, `PREFIX/tenants/TENANT/blocks/NNNNNNNN.qblk`, and a local cache directory
//! that holds copies of what was read.
//!
//! **Writes.** A block is encoded in memory, uploaded (multipart when large), checked by its
//! size on the store, and only then named in the catalog (the caller commits after `put`
//! returns). The bytes just uploaded are also written to the cache as a whole copy, so the node
//! that sealed a block reads it locally.
//!
//! **Reads.** A block with a whole copy in the cache opens as a local file. Otherwise it opens
//! as a [`RemoteBlock`]: a sparse cache file of the block's length, mapped, into which ranges
//! are fetched as the reader asks for them (`BlockSource::fetch`). Opening fetches one stretch,
//! from the entry's `open_from` to the end (the resident sections, the manifest and the
//! footer); a query then fetches the postings, positions and chunks it reads, each batch as
//! parallel ranged GETs (`ObjectStore::get_ranges` coalesces nearby ranges). Every byte read
//! is checked against its crc by the reader, so a cache file that lost or garbled bytes gives
//! an error naming the block, never a different answer.
//!
//! **I/O.** `object_store` is async; the block store is called from blocking threads (query
//! workers, the sealer, merges). Requests run on one small runtime of this module's own
//! ([`run`]), and the caller's thread waits on a channel: never on a runtime's worker, so a
//! caller inside another runtime's `spawn_blocking` is fine. Requests retry with backoff on
//! 5xx and dropped connections (`object_store`'s retry), with a timeout per request.

use crate::block_store::{BlockId, BlockStore};
use crate::catalog::BlockEntry;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use quarry_format::block::{encode_block, BlockInput};
use quarry_format::{BlockReader, BlockSource, FormatError};
use std::fs::File;
use std::future::Future;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// Blocks at least this large are uploaded in parts.
const MULTIPART_THRESHOLD: usize = 16 << 20;
/// The part size of a multipart upload (S3's minimum is 5 MiB).
const PART_LEN: usize = 8 << 20;
/// What opening a block fetches from its end when its entry does not say where the resident
/// sections start (blocks recorded before `open_from`): usually all of them.
const DEFAULT_OPEN_TAIL: u64 = 256 << 10;
/// The granule of a remote block's local copy: ranges are fetched in whole granules, and which
/// granules are present is one bit each.
const GRANULE: u64 = 64 << 10;
const BLOCK_EXTENSION: &str = "qblk";

/// Runs `future` on this module's runtime and waits for it on the calling thread.
fn run<F>(future: F) -> F::Output
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    let runtime = RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("quarry-object-io")
            .enable_all()
            .build()
            .expect("the object storage runtime starts")
    });
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    runtime.spawn(async move {
        let _ = tx.send(future.await);
    });
    rx.recv()
        .expect("the object storage runtime runs every request to its end")
}

/// Requests and bytes a store has made and moved, for `/metrics`.
#[derive(Debug, Default)]
pub struct ObjectStats {
    /// Byte ranges read (`object_store` may coalesce neighbours into one request).
    pub gets: AtomicU64,
    pub bytes_fetched: AtomicU64,
    pub puts: AtomicU64,
    pub bytes_uploaded: AtomicU64,
    /// Fetches a cache copy answered without a request.
    pub cache_hits: AtomicU64,
}

/// Where a server's blocks live in object storage: the store, the key prefix, the local cache.
#[derive(Debug, Clone)]
pub struct ObjectStorage {
    store: Arc<dyn ObjectStore>,
    /// `s3://bucket/prefix`, as given (messages name blocks by it).
    url: String,
    prefix: ObjectPath,
    cache_dir: PathBuf,
    stats: Arc<ObjectStats>,
}

impl ObjectStorage {
    /// The S3-compatible store at `url` (`s3://BUCKET/PREFIX`), configured by the usual
    /// variables (`AWS_ENDPOINT_URL`, `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
    /// `AWS_REGION`, ...); an `http://` endpoint is allowed. Copies of what is read are kept
    /// under `cache_dir`.
    pub fn s3(url: &str, cache_dir: &Path) -> Result<ObjectStorage, String> {
        Self::s3_with(url, cache_dir, &[])
    }

    /// As [`ObjectStorage::s3`], with `settings` (`object_store`'s S3 keys, such as
    /// `aws_endpoint_url` or `aws_access_key_id`) over the environment's.
    pub fn s3_with(
        url: &str,
        cache_dir: &Path,
        settings: &[(&str, String)],
    ) -> Result<ObjectStorage, String> {
        let rest = url
            .strip_prefix("s3://")
            .ok_or_else(|| format!("storage {url:?}: expected s3://BUCKET/PREFIX"))?;
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        if bucket.is_empty() {
            return Err(format!("storage {url:?}: no bucket"));
        }
        // reqwest is built without a default TLS provider: Quarry uses ring throughout.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut builder = object_store::aws::AmazonS3Builder::from_env()
            .with_bucket_name(bucket)
            .with_retry(object_store::RetryConfig {
                backoff: object_store::BackoffConfig {
                    init_backoff: Duration::from_millis(100),
                    max_backoff: Duration::from_secs(5),
                    base: 2.0,
                },
                max_retries: 5,
                retry_timeout: Duration::from_secs(60),
            })
            .with_client_options(
                object_store::ClientOptions::new()
                    .with_timeout(Duration::from_secs(60))
                    .with_connect_timeout(Duration::from_secs(5)),
            );
        if std::env::var("AWS_REGION").is_err() && std::env::var("AWS_DEFAULT_REGION").is_err() {
            builder = builder.with_region("us-east-1");
        }
        for (key, value) in settings {
            let key: object_store::aws::AmazonS3ConfigKey =
                key.parse().map_err(|e| format!("storage {url:?}: {e}"))?;
            builder = builder.with_config(key, value.clone());
        }
        let endpoint = builder
            .get_config_value(&object_store::aws::AmazonS3ConfigKey::Endpoint)
            .unwrap_or_default();
        if endpoint.starts_with("http://") {
            builder = builder.with_allow_http(true);
        }
        let store = builder
            .build()
            .map_err(|e| format!("storage {url:?}: {e}"))?;
        Ok(Self::with_store(Arc::new(store), url, prefix, cache_dir))
    }

    /// Blocks in `store` under `prefix`; `url` names it in messages.
    pub fn with_store(
        store: Arc<dyn ObjectStore>,
        url: &str,
        prefix: &str,
        cache_dir: &Path,
    ) -> ObjectStorage {
        ObjectStorage {
            store,
            url: url.trim_end_matches('/').to_owned(),
            prefix: ObjectPath::from(prefix.trim_matches('/')),
            cache_dir: cache_dir.to_path_buf(),
            stats: Arc::default(),
        }
    }

    /// The same storage through `wrap(store)`: a wrapper that delays requests (the
    /// benchmark's model of a cloud store's latency) or fails chosen ones (the fault tests).
    pub fn wrap_store(
        mut self,
        wrap: impl FnOnce(Arc<dyn ObjectStore>) -> Arc<dyn ObjectStore>,
    ) -> ObjectStorage {
        self.store = wrap(self.store);
        self
    }

    /// The same storage with every read delayed as a cloud store's would be: `first_byte`
    /// per request batch and 10 ns per byte (100 MB/s); `object_store`'s `ThrottledStore`.
    /// For benchmarks on a store that is on loopback.
    pub fn with_latency(self, first_byte: Duration) -> ObjectStorage {
        self.wrap_store(|inner| {
            let config = object_store::throttle::ThrottleConfig {
                wait_get_per_call: first_byte,
                wait_get_per_byte: Duration::from_nanos(10),
                ..Default::default()
            };
            Arc::new(object_store::throttle::ThrottledStore::new(inner, config))
        })
    }

    /// Whether the store answers (a listing of the prefix): a server or command that cannot
    /// reach its blocks says so at once, with the store's answer, instead of starting with
    /// every block left out.
    pub fn check(&self) -> Result<(), String> {
        let store = self.store.clone();
        let prefix = self.prefix.clone();
        match run(async move { store.list_with_delimiter(Some(&prefix)).await }) {
            Ok(_) => Ok(()),
            // A store that creates buckets on the first upload (SeaweedFS) answers so until
            // then; elsewhere, uploads fail and say so.
            Err(e) if e.to_string().contains("NoSuchBucket") => {
                tracing::warn!(storage = %self.url, "the bucket does not exist (yet)");
                Ok(())
            }
            Err(e) => Err(format!("storage {}: {e}", self.url)),
        }
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn stats(&self) -> &Arc<ObjectStats> {
        &self.stats
    }

    /// The blocks of tenant `tenant`.
    pub fn tenant_blocks(&self, tenant: &str) -> ObjectBlocks {
        let relative = format!("tenants/{tenant}/blocks");
        let prefix = if self.prefix.as_ref().is_empty() {
            ObjectPath::from(relative.as_str())
        } else {
            ObjectPath::from(format!("{}/{relative}", self.prefix).as_str())
        };
        ObjectBlocks {
            store: self.store.clone(),
            location: format!("{}/{relative}", self.url),
            prefix,
            cache: self.cache_dir.join(tenant),
            stats: self.stats.clone(),
        }
    }
}

/// One tenant's blocks in object storage (see the module documentation).
#[derive(Debug, Clone)]
pub struct ObjectBlocks {
    store: Arc<dyn ObjectStore>,
    prefix: ObjectPath,
    /// `s3://bucket/prefix/tenants/NAME/blocks`, for messages.
    location: String,
    /// The tenant's cache directory.
    cache: PathBuf,
    stats: Arc<ObjectStats>,
}

impl ObjectBlocks {
    fn key(&self, id: BlockId) -> ObjectPath {
        self.prefix
            .clone()
            .join(format!("{id:08}.{BLOCK_EXTENSION}"))
    }

    /// The whole cached copy of block `id` (written when this node uploaded it).
    fn cached_copy(&self, id: BlockId) -> PathBuf {
        self.cache.join(format!("{id:08}.{BLOCK_EXTENSION}"))
    }

    /// The partial copy a remote block fetches into.
    fn partial_copy(&self, id: BlockId) -> PathBuf {
        self.cache.join(format!("{id:08}.partial"))
    }

    fn error(&self, id: BlockId, error: impl std::fmt::Display) -> FormatError {
        FormatError::Io {
            path: self.location(id),
            source: std::io::Error::other(error.to_string()),
        }
    }

    /// Uploads `bytes` as block `id`, checks the stored size, and keeps a whole copy in the
    /// cache.
    fn upload(&self, id: BlockId, bytes: Vec<u8>) -> Result<(), FormatError> {
        let store = self.store.clone();
        let key = self.key(id);
        let len = bytes.len() as u64;
        let bytes = bytes::Bytes::from(bytes);
        let upload = bytes.clone();
        run(async move {
            if upload.len() >= MULTIPART_THRESHOLD {
                let parts = store.put_multipart(&key).await?;
                let mut writer = object_store::WriteMultipart::new_with_chunk_size(parts, PART_LEN);
                writer.put(upload);
                writer.finish().await?;
            } else {
                store.put(&key, PutPayload::from_bytes(upload)).await?;
            }
            let meta = store.head(&key).await?;
            if meta.size != len {
                return Err(object_store::Error::Generic {
                    store: "S3",
                    source: format!("stored {} bytes of {len}", meta.size).into(),
                });
            }
            Ok(())
        })
        .map_err(|e| self.error(id, format!("upload failed: {e}")))?;
        self.stats.puts.fetch_add(1, Ordering::Relaxed);
        self.stats.bytes_uploaded.fetch_add(len, Ordering::Relaxed);
        // The cache copy is a convenience: a failure to write it costs reads, not the block.
        if let Err(error) = self.write_cached_copy(id, &bytes) {
            tracing::warn!(block = id, %error, "could not keep a cache copy of an uploaded block");
        }
        Ok(())
    }

    fn write_cached_copy(&self, id: BlockId, bytes: &[u8]) -> std::io::Result<()> {
        std::fs::create_dir_all(&self.cache)?;
        crate::block_file::write_block_bytes(&self.cached_copy(id), bytes)
    }

    fn open_remote(&self, block: &BlockEntry) -> Result<BlockReader, FormatError> {
        let id = block.id;
        let location = self.location(id);
        let io = |source| FormatError::Io {
            path: location.clone(),
            source,
        };
        std::fs::create_dir_all(&self.cache).map_err(io)?;
        // What opening reads: the magic, and the stretch from the resident sections to the
        // end (aligned down to a granule, so every granule it touches is whole).
        let open_ranges = |len: u64| {
            let tail = if block.open_from > 0 && block.open_from < len {
                block.open_from
            } else {
                len.saturating_sub(DEFAULT_OPEN_TAIL)
            };
            let tail = tail / GRANULE * GRANULE;
            if tail <= GRANULE {
                std::iter::once(0..len).collect()
            } else {
                vec![0..GRANULE, tail..len]
            }
        };
        let len = if block.bytes > 0 {
            block.bytes
        } else {
            let store = self.store.clone();
            let key = self.key(id);
            run(async move { store.head(&key).await })
                .map_err(|e| self.error(id, e))?
                .size
        };
        // One round trip: the ranges are fetched in parallel.
        let ranges = open_ranges(len);
        let fetched = self.get_ranges(id, ranges.clone())?;
        let path = self.partial_copy(id);
        let file = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .map_err(io)?;
        file.set_len(len).map_err(io)?;
        // Unlinked at once: the copy lives while readers map it, and a restart starts over.
        let _ = std::fs::remove_file(&path);
        // SAFETY: the file is this reader's own (created, truncated and unlinked above);
        // bytes are only ever written into it once each range is fetched, with the same
        // bytes a second fetch would write, and every read is checked by its crc.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(io)?;
        let remote = RemoteBlock {
            blocks: self.clone(),
            id,
            file,
            map,
            present: (0..len.div_ceil(GRANULE).div_ceil(64))
                .map(|_| AtomicU64::new(0))
                .collect(),
        };
        for (range, bytes) in ranges.iter().zip(&fetched) {
            remote.store_fetched(range, bytes)?;
        }
        BlockReader::from_bytes(&location, Arc::new(remote))
    }

    /// Fetches `ranges` of block `id`, as parallel requests (nearby ranges coalesced).
    fn get_ranges(
        &self,
        id: BlockId,
        ranges: Vec<Range<u64>>,
    ) -> Result<Vec<bytes::Bytes>, FormatError> {
        let store = self.store.clone();
        let key = self.key(id);
        let requested: u64 = ranges.iter().map(|r| r.end - r.start).sum();
        let count = ranges.len() as u64;
        let fetched = run(async move { store.get_ranges(&key, &ranges).await }).map_err(|e| {
            tracing::warn!(block = %self.location(id).display(), error = %e, "a read from object storage failed");
            self.error(id, format!("read failed: {e}"))
        })?;
        self.stats.gets.fetch_add(count, Ordering::Relaxed);
        self.stats
            .bytes_fetched
            .fetch_add(requested, Ordering::Relaxed);
        Ok(fetched)
    }
}

impl BlockStore for ObjectBlocks {
    fn put(&self, id: BlockId, input: BlockInput) -> Result<BlockEntry, FormatError> {
        let location = self.location(id);
        let mut bytes = Vec::new();
        let manifest = encode_block(&location, input, &mut bytes)?;
        let len = bytes.len() as u64;
        self.upload(id, bytes)?;
        Ok(BlockEntry::of(id, &manifest, len))
    }

    fn put_bytes(&self, id: BlockId, bytes: &[u8]) -> Result<(), FormatError> {
        self.upload(id, bytes.to_vec())
    }

    fn open(&self, block: &BlockEntry) -> Result<BlockReader, FormatError> {
        let cached = self.cached_copy(block.id);
        if cached.exists() {
            match BlockReader::open(&cached) {
                Ok(reader) => {
                    self.stats.cache_hits.fetch_add(1, Ordering::Relaxed);
                    return Ok(reader);
                }
                // A copy that does not open (a crash while it was written) is only a cache.
                Err(error) => {
                    tracing::warn!(block = block.id, %error, "dropping a damaged cache copy");
                    let _ = std::fs::remove_file(&cached);
                }
            }
        }
        self.open_remote(block)
    }

    fn read_range(&self, id: BlockId, range: Range<u64>) -> Result<Vec<u8>, FormatError> {
        let bytes = self.get_ranges(id, vec![range])?;
        Ok(bytes.into_iter().next().unwrap_or_default().to_vec())
    }

    fn delete(&self, id: BlockId) -> Result<(), FormatError> {
        let store = self.store.clone();
        let key = self.key(id);
        match run(async move { store.delete(&key).await }) {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
            Err(e) => return Err(self.error(id, format!("delete failed: {e}"))),
        }
        let _ = std::fs::remove_file(self.cached_copy(id));
        Ok(())
    }

    fn list(&self) -> Result<Vec<BlockId>, FormatError> {
        use futures_util::TryStreamExt;
        let store = self.store.clone();
        let prefix = self.prefix.clone();
        let metas: Vec<object_store::ObjectMeta> = run(async move {
            store.list(Some(&prefix)).try_collect().await
        })
        .map_err(|e| FormatError::Io {
            path: PathBuf::from(&self.location),
            source: std::io::Error::other(format!("list failed: {e}")),
        })?;
        let mut ids: Vec<BlockId> = metas
            .iter()
            .filter_map(|meta| {
                let name = meta.location.filename()?;
                name.strip_suffix(&format!(".{BLOCK_EXTENSION}"))?
                    .parse()
                    .ok()
            })
            .collect();
        ids.sort_unstable();
        Ok(ids)
    }

    fn location(&self, id: BlockId) -> PathBuf {
        PathBuf::from(format!("{}/{id:08}.{BLOCK_EXTENSION}", self.location))
    }

    fn parallel_opens(&self) -> usize {
        16
    }
}

/// A block read from object storage into a sparse local copy, granule by granule.
struct RemoteBlock {
    blocks: ObjectBlocks,
    id: BlockId,
    file: File,
    map: memmap2::Mmap,
    /// One bit per granule: whether the copy holds it.
    present: Box<[AtomicU64]>,
}

impl RemoteBlock {
    fn len(&self) -> u64 {
        self.map.len() as u64
    }

    /// The granules bytes `range` touches.
    fn granules(&self, range: &Range<u64>) -> Range<u64> {
        range.start / GRANULE..range.end.min(self.len()).div_ceil(GRANULE)
    }

    fn is_present(&self, granule: u64) -> bool {
        let (word, bit) = ((granule / 64) as usize, 1u64 << (granule % 64));
        self.present[word].load(Ordering::Acquire) & bit != 0
    }

    fn mark_present(&self, granule: u64) {
        let (word, bit) = ((granule / 64) as usize, 1u64 << (granule % 64));
        self.present[word].fetch_or(bit, Ordering::Release);
    }

    /// Writes `bytes`, fetched for `range`, into the copy and marks the granules it fills
    /// whole (and the last one, when it ends the block).
    fn store_fetched(&self, range: &Range<u64>, bytes: &[u8]) -> Result<(), FormatError> {
        let location = || self.blocks.location(self.id);
        if bytes.len() as u64 != range.end - range.start {
            return Err(FormatError::Io {
                path: location(),
                source: std::io::Error::other(format!(
                    "the store returned {} bytes for {range:?}",
                    bytes.len()
                )),
            });
        }
        let start = range.start;
        self.file
            .write_all_at(bytes, start)
            .map_err(|source| FormatError::Io {
                path: location(),
                source,
            })?;
        let end = range.end;
        let first = start.div_ceil(GRANULE);
        let last = if end == self.len() {
            end.div_ceil(GRANULE)
        } else {
            end / GRANULE
        };
        for granule in first..last {
            self.mark_present(granule);
        }
        Ok(())
    }
}

impl BlockSource for RemoteBlock {
    fn bytes(&self) -> &[u8] {
        &self.map
    }

    fn is_remote(&self) -> bool {
        true
    }

    fn is_missing(&self, ranges: &[Range<u64>]) -> bool {
        ranges
            .iter()
            .filter(|r| r.start < r.end)
            .any(|r| self.granules(r).any(|granule| !self.is_present(granule)))
    }

    fn fetch(&self, ranges: &[Range<u64>]) -> std::io::Result<()> {
        // The missing granules, as runs.
        let mut runs: Vec<Range<u64>> = Vec::new();
        let mut wanted: Vec<Range<u64>> = ranges
            .iter()
            .filter(|r| r.start < r.end)
            .map(|r| self.granules(r))
            .collect();
        wanted.sort_by_key(|r| r.start);
        for range in wanted {
            for granule in range {
                if self.is_present(granule) {
                    continue;
                }
                match runs.last_mut() {
                    Some(run) if run.end == granule => run.end += 1,
                    Some(run) if run.end > granule => {}
                    _ => runs.push(granule..granule + 1),
                }
            }
        }
        if runs.is_empty() {
            self.blocks.stats.cache_hits.fetch_add(1, Ordering::Relaxed);
            return Ok(());
        }
        let byte_runs: Vec<Range<u64>> = runs
            .iter()
            .map(|run| run.start * GRANULE..(run.end * GRANULE).min(self.len()))
            .collect();
        tracing::debug!(
            block = self.id,
            runs = byte_runs.len(),
            bytes = byte_runs.iter().map(|r| r.end - r.start).sum::<u64>(),
            "fetching from object storage"
        );

        let fetched = self
            .blocks
            .get_ranges(self.id, byte_runs.clone())
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        for (range, bytes) in byte_runs.iter().zip(&fetched) {
            self.store_fetched(range, bytes)
                .map_err(|e| std::io::Error::other(e.to_string()))?;
        }
        Ok(())
    }
}
