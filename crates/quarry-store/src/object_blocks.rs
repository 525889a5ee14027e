//! Blocks in S3-compatible object storage (issue 28), through the `object_store` crate: one
//! object per block, `PREFIX/tenants/TENANT/blocks/NNNNNNNN.qblk`, and a local cache directory
//! that holds copies of what was read.
//!
//! **Writes.** A block is encoded in memory, uploaded (multipart when large), checked by its
//! size on the store, and only then named in the catalog (the caller commits after `put`
//! returns). The bytes just uploaded are also written to the disk cache as a whole copy, so the
//! node that sealed a block reads it locally.
//!
//! **Reads.** A block opens as a [`RemoteBlock`] over its copy in the disk cache
//! ([`DiskCache`]: a sparse file of the block's length, mapped, kept across restarts, within a
//! byte budget), into which ranges are fetched as the reader asks for them
//! (`BlockSource::fetch`). Opening fetches one stretch, from the entry's `open_from` to the
//! end (the resident sections, the manifest and the footer), unless the copy has it; a query
//! then fetches the postings, positions and chunks it reads that the copy lacks, each batch as
//! parallel ranged GETs (`ObjectStore::get_ranges` coalesces nearby ranges). The cache checks
//! each granule it kept from an earlier run against its crc before using it, and the reader
//! checks every byte it reads against the format's crcs, so a cache file that lost or garbled
//! bytes costs a fetch or an error naming the block, never a different answer.
//!
//! **I/O.** `object_store` is async; the block store is called from blocking threads (query
//! workers, the sealer, merges). Requests run on one small runtime of this module's own
//! ([`run`]), and the caller's thread waits on a channel: never on a runtime's worker, so a
//! caller inside another runtime's `spawn_blocking` is fine. Requests retry with backoff on
//! 5xx and dropped connections (`object_store`'s retry), with a timeout per request.

use crate::block_store::{BlockId, BlockStore};
use crate::catalog::BlockEntry;
use crate::disk_cache::{CachedFile, DiskCache, GRANULE};
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use quarry_format::block::{encode_block, BlockInput};
use quarry_format::{BlockReader, BlockSource, FetchCounts, FormatError};
use std::future::Future;
use std::ops::Range;
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
    /// Bytes the disk cache let go to keep its budget.
    pub evicted_bytes: AtomicU64,
    /// Granules kept from an earlier run that failed their crc (and were fetched again).
    pub corrupt_granules: AtomicU64,
}

/// Where a server's blocks live in object storage: the store, the key prefix, the local cache.
#[derive(Debug, Clone)]
pub struct ObjectStorage {
    store: Arc<dyn ObjectStore>,
    /// `s3://bucket/prefix`, as given (messages name blocks by it).
    url: String,
    prefix: ObjectPath,
    cache: Arc<DiskCache>,
    stats: Arc<ObjectStats>,
    /// For benchmarks: the node's link to the store, shared by every read (`with_bandwidth`).
    link: Option<Arc<Link>>,
}

/// A node's link to the object store, for benchmarks: reads pass through it one after another
/// at `bytes_per_second`, as through one network interface, so concurrent reads share it.
#[derive(Debug)]
pub struct Link {
    bytes_per_second: f64,
    /// When the link is free again.
    free_at: std::sync::Mutex<std::time::Instant>,
}

impl Link {
    pub fn new(bytes_per_second: u64) -> Link {
        Link {
            bytes_per_second: bytes_per_second.max(1) as f64,
            free_at: std::sync::Mutex::new(std::time::Instant::now()),
        }
    }

    /// Waits until `bytes` have passed, after everything queued before them.
    fn pass(&self, bytes: u64) {
        let done = {
            let mut free_at = self
                .free_at
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let start = (*free_at).max(std::time::Instant::now());
            *free_at =
                start + std::time::Duration::from_secs_f64(bytes as f64 / self.bytes_per_second);
            *free_at
        };
        std::thread::sleep(done.saturating_duration_since(std::time::Instant::now()));
    }
}

impl ObjectStorage {
    /// The S3-compatible store at `url` (`s3://BUCKET/PREFIX`), configured by the usual
    /// variables (`AWS_ENDPOINT_URL`, `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
    /// `AWS_REGION`, ...); an `http://` endpoint is allowed. Copies of what is read are kept
    /// under `cache_dir`, within [`crate::disk_cache::DEFAULT_BUDGET`] bytes
    /// ([`ObjectStorage::with_cache_budget`]).
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
        Self::with_store(Arc::new(store), url, prefix, cache_dir)
    }

    /// Blocks in `store` under `prefix`; `url` names it in messages.
    pub fn with_store(
        store: Arc<dyn ObjectStore>,
        url: &str,
        prefix: &str,
        cache_dir: &Path,
    ) -> Result<ObjectStorage, String> {
        let stats = Arc::<ObjectStats>::default();
        let cache = DiskCache::open(cache_dir, crate::disk_cache::DEFAULT_BUDGET, stats.clone())
            .map_err(|e| format!("cache directory {}: {e}", cache_dir.display()))?;
        Ok(ObjectStorage {
            store,
            url: url.trim_end_matches('/').to_owned(),
            prefix: ObjectPath::from(prefix.trim_matches('/')),
            cache,
            stats,
            link: None,
        })
    }

    /// The same storage with a disk cache of at most `bytes` (evicting at once if it holds
    /// more).
    pub fn with_cache_budget(self, bytes: u64) -> ObjectStorage {
        self.cache.set_budget(bytes);
        self
    }

    pub fn cache(&self) -> &Arc<DiskCache> {
        &self.cache
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

    /// The same storage with every read of the node sharing one link of `bytes_per_second`
    /// (`Link`): with `with_latency`, the benchmark's model of a node's bandwidth to a cloud
    /// store, which more nodes multiply.
    pub fn with_bandwidth(mut self, bytes_per_second: u64) -> ObjectStorage {
        self.link = Some(Arc::new(Link::new(bytes_per_second)));
        self
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
            link: self.link.clone(),
            location: format!("{}/{relative}", self.url),
            prefix,
            cache: self.cache.clone(),
            tenant: tenant.to_owned(),
            stats: self.stats.clone(),
        }
    }
}

/// One tenant's blocks in object storage (see the module documentation).
#[derive(Debug, Clone)]
pub struct ObjectBlocks {
    store: Arc<dyn ObjectStore>,
    link: Option<Arc<Link>>,
    prefix: ObjectPath,
    /// `s3://bucket/prefix/tenants/NAME/blocks`, for messages.
    location: String,
    cache: Arc<DiskCache>,
    tenant: String,
    stats: Arc<ObjectStats>,
}

impl ObjectBlocks {
    fn key(&self, id: BlockId) -> ObjectPath {
        self.prefix
            .clone()
            .join(format!("{id:08}.{BLOCK_EXTENSION}"))
    }

    fn error(&self, id: BlockId, error: impl std::fmt::Display) -> FormatError {
        FormatError::Io {
            path: self.location(id),
            source: std::io::Error::other(error.to_string()),
        }
    }

    /// Uploads `bytes` as block `id`, checks the stored size, and keeps a whole copy in the
    /// cache (`open_from` as in its catalog entry).
    fn upload(&self, id: BlockId, bytes: Vec<u8>, open_from: u64) -> Result<(), FormatError> {
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
        // A process with private copies (another owns the cache) keeps none: they would go
        // at once.
        if self.cache.is_persistent() {
            let (_, pinned_from) = open_ranges(open_from, len);
            let kept = self
                .cache
                .open_file(&self.tenant, id, len, pinned_from)
                .and_then(|copy| copy.store(&(0..len), &bytes));
            if let Err(error) = kept {
                tracing::warn!(block = id, %error, "could not keep a cache copy of an uploaded block");
            }
        }
        Ok(())
    }

    fn open_remote(&self, block: &BlockEntry) -> Result<BlockReader, FormatError> {
        let id = block.id;
        let location = self.location(id);
        let len = if block.bytes > 0 {
            block.bytes
        } else {
            let store = self.store.clone();
            let key = self.key(id);
            run(async move { store.head(&key).await })
                .map_err(|e| self.error(id, e))?
                .size
        };
        let (ranges, pinned_from) = open_ranges(block.open_from, len);
        let copy = self
            .cache
            .open_file(&self.tenant, id, len, pinned_from)
            .map_err(|source| FormatError::Io {
                path: location.clone(),
                source,
            })?;
        let remote = RemoteBlock {
            blocks: self.clone(),
            id,
            copy,
        };
        // One round trip (the ranges are fetched in parallel), none if the copy has them.
        remote.fetch(&ranges).map_err(|source| FormatError::Io {
            path: location.clone(),
            source,
        })?;
        Ok(BlockReader::from_bytes(&location, Arc::new(remote))?.with_id(id))
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
        if let Some(link) = &self.link {
            link.pass(requested);
        }
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
        let entry = BlockEntry::of(id, &manifest, bytes.len() as u64);
        self.upload(id, bytes, entry.open_from)?;
        Ok(entry)
    }

    fn put_bytes(&self, id: BlockId, bytes: &[u8]) -> Result<(), FormatError> {
        self.upload(id, bytes.to_vec(), 0)
    }

    fn open(&self, block: &BlockEntry) -> Result<BlockReader, FormatError> {
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
        self.cache.remove(&self.tenant, id);
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

/// What opening a block of `len` bytes whose resident sections start at `open_from` (0:
/// not known) reads: the first granule (the magic) and the stretch from the resident
/// sections to the end, aligned down to a granule so every granule it touches is whole; and
/// the first granule of that stretch (what a copy keeps while the block is open).
fn open_ranges(open_from: u64, len: u64) -> (Vec<Range<u64>>, u64) {
    let tail = if open_from > 0 && open_from < len {
        open_from
    } else {
        len.saturating_sub(DEFAULT_OPEN_TAIL)
    };
    let tail = tail / GRANULE * GRANULE;
    if tail <= GRANULE {
        (std::iter::once(0..len).collect(), 1)
    } else {
        (vec![0..GRANULE, tail..len], tail / GRANULE)
    }
}

/// A block in object storage, read through its copy in the disk cache.
struct RemoteBlock {
    blocks: ObjectBlocks,
    id: BlockId,
    copy: Arc<CachedFile>,
}

impl BlockSource for RemoteBlock {
    fn bytes(&self) -> &[u8] {
        self.copy.bytes()
    }

    fn is_remote(&self) -> bool {
        true
    }

    fn is_missing(&self, ranges: &[Range<u64>]) -> bool {
        self.copy.is_missing(ranges)
    }

    fn discard_copy(&self) -> bool {
        self.copy.discard();
        true
    }

    fn fetch(&self, ranges: &[Range<u64>]) -> std::io::Result<()> {
        let runs = self.copy.missing(ranges);
        if runs.is_empty() {
            self.blocks.stats.cache_hits.fetch_add(1, Ordering::Relaxed);
            FetchCounts::record_cache_hit();
            return Ok(());
        }
        FetchCounts::record_fetch(
            runs.len() as u64,
            runs.iter().map(|r| r.end - r.start).sum(),
        );
        tracing::debug!(
            block = self.id,
            runs = runs.len(),
            bytes = runs.iter().map(|r| r.end - r.start).sum::<u64>(),
            "fetching from object storage"
        );
        let fetched = self
            .blocks
            .get_ranges(self.id, runs.clone())
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        for (range, bytes) in runs.iter().zip(&fetched) {
            self.copy.store(range, bytes).map_err(|e| {
                std::io::Error::other(format!("{}: {e}", self.blocks.location(self.id).display()))
            })?;
        }
        Ok(())
    }
}
