//! The local-disk cache of blocks kept in object storage (issue 28): one sparse file per block,
//! filled granule by granule as ranges are fetched; a byte budget kept by evicting what was
//! used least recently; copies that survive a restart, each granule checked against its crc
//! before it is trusted again.
//!
//! **Files**, under `DIR/TENANT/`: `NNNNNNNN.qblk` holds the block's bytes where the copy has
//! them (a hole elsewhere); `NNNNNNNN.present` says which granules it has and their crc32: a
//! 16-byte header (`QPRS`, version 1 as a u32, the block's length as a u64), then 8 bytes per
//! granule (the crc32 of its bytes, then 1 when present, 0 when not). A granule's bytes are
//! written before its entry; neither is fsynced. A crash can leave an entry whose bytes never
//! reached the disk: the crc catches that when the granule is next used, and it is fetched
//! again (a copy is only a cache; the block's bytes are in the store).
//!
//! **Budget.** The cache counts the granules present in its files. When a fetch or a copy takes
//! it over the budget, blocks are evicted, least recently used first: a block that no reader
//! holds loses its files; a block that is open keeps the granules read when it opened (its
//! readers hold those sections) and loses those fetched by queries, punched out of the file,
//! once it has not been used for [`OPEN_GRACE`] (a reader between fetching a range and reading
//! it is never robbed: a range read after eviction would fail its crc, an error, never a
//! different answer). What open blocks keep can exceed the budget; the cache then says so.
//!
//! **Sharing.** One process owns a cache directory (a lock on `DIR/.lock`). Another that finds
//! it taken (a CLI command beside the running server) keeps private copies: unlinked files that
//! go when it exits, under the same budget.

use crate::object_blocks::ObjectStats;
use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The unit a copy is fetched, checked and evicted in.
pub const GRANULE: u64 = 64 << 10;
/// The budget when none is given.
pub const DEFAULT_BUDGET: u64 = 10 << 30;
/// How long an open block's fetched granules are safe from eviction after its last use.
pub const OPEN_GRACE: Duration = Duration::from_secs(30);

const SIDECAR_MAGIC: &[u8; 4] = b"QPRS";
const SIDECAR_VERSION: u32 = 1;
const SIDECAR_HEADER: u64 = 16;
const SIDECAR_ENTRY: u64 = 8;
const DATA_EXTENSION: &str = "qblk";
const SIDECAR_EXTENSION: &str = "present";

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

fn granule_count(len: u64) -> u64 {
    len.div_ceil(GRANULE)
}

/// The bytes of granule `granule` in a block of `len` bytes.
fn granule_bytes(granule: u64, len: u64) -> Range<u64> {
    granule * GRANULE..((granule + 1) * GRANULE).min(len)
}

/// A cache of block copies in one directory (see the module documentation).
#[derive(Debug)]
pub struct DiskCache {
    dir: PathBuf,
    budget: AtomicU64,
    /// The lock on `DIR/.lock`, held while this cache owns the directory; `None`: private
    /// copies.
    lock: Option<File>,
    used: AtomicU64,
    /// Every copy, by the path of its data file.
    entries: Mutex<HashMap<PathBuf, Arc<Entry>>>,
    /// Held by the one thread that evicts at a time.
    evicting: Mutex<()>,
    /// When the cache last said it could not keep its budget (ms), to say so once a minute.
    over_budget_said: AtomicU64,
    stats: Arc<ObjectStats>,
}

/// One block's copy: its size in the cache, its last use, its open file if any.
#[derive(Debug)]
struct Entry {
    data: PathBuf,
    bytes: AtomicU64,
    last_used: AtomicU64,
    /// Set when the block is deleted: its file, if still open, is no longer counted.
    removed: AtomicBool,
    open: Mutex<Weak<CachedFile>>,
}

impl Entry {
    fn sidecar(&self) -> PathBuf {
        self.data.with_extension(SIDECAR_EXTENSION)
    }

    fn touch(&self) {
        self.last_used.store(now_ms(), Ordering::Relaxed);
    }
}

impl DiskCache {
    /// The cache in `dir` (created if missing), holding at most `budget` bytes: the copies a
    /// previous run left are taken over when this process can own the directory.
    pub fn open(dir: &Path, budget: u64, stats: Arc<ObjectStats>) -> io::Result<Arc<DiskCache>> {
        std::fs::create_dir_all(dir)?;
        let lock = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(dir.join(".lock"))?;
        let lock = match lock.try_lock() {
            Ok(()) => Some(lock),
            Err(std::fs::TryLockError::WouldBlock) => {
                tracing::info!(
                    cache = %dir.display(),
                    "another process owns the cache directory: this one keeps private copies"
                );
                None
            }
            Err(std::fs::TryLockError::Error(error)) => return Err(error),
        };
        let cache = Arc::new(DiskCache {
            dir: dir.to_path_buf(),
            budget: AtomicU64::new(budget),
            lock,
            used: AtomicU64::new(0),
            entries: Mutex::new(HashMap::new()),
            evicting: Mutex::new(()),
            over_budget_said: AtomicU64::new(0),
            stats,
        });
        if cache.lock.is_some() {
            cache.take_over()?;
            cache.make_room();
        }
        Ok(cache)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Whether copies outlive this process (it owns the directory).
    pub fn is_persistent(&self) -> bool {
        self.lock.is_some()
    }

    pub fn budget(&self) -> u64 {
        self.budget.load(Ordering::Relaxed)
    }

    /// Sets the budget, evicting at once if the cache is over it.
    pub fn set_budget(&self, budget: u64) {
        self.budget.store(budget, Ordering::Relaxed);
        self.make_room();
    }

    /// The bytes the copies hold.
    pub fn used(&self) -> u64 {
        self.used.load(Ordering::Relaxed)
    }

    fn data_path(&self, tenant: &str, id: u64) -> PathBuf {
        self.dir
            .join(tenant)
            .join(format!("{id:08}.{DATA_EXTENSION}"))
    }

    /// Registers the copies a previous run left (whole granules only, checked when used) and
    /// removes files that are not a copy: a data file without its granule list, temporary
    /// files, the unlinked-copy names of earlier versions.
    fn take_over(&self) -> io::Result<()> {
        let mut entries = self.entries.lock().expect("cache entries");
        for tenant in std::fs::read_dir(&self.dir)? {
            let tenant = tenant?;
            if !tenant.file_type()?.is_dir() {
                continue;
            }
            for file in std::fs::read_dir(tenant.path())? {
                let path = file?.path();
                let extension = path.extension().and_then(|e| e.to_str()).unwrap_or("");
                if extension == SIDECAR_EXTENSION {
                    continue;
                }
                let sidecar = path.with_extension(SIDECAR_EXTENSION);
                let kept = extension == DATA_EXTENSION
                    && match read_sidecar(&sidecar) {
                        Ok(Some((len, granules))) => {
                            std::fs::metadata(&path).is_ok_and(|meta| meta.len() == len) && {
                                let bytes: u64 = granules
                                    .iter()
                                    .enumerate()
                                    .filter(|(_, (_, present))| *present)
                                    .map(|(g, _)| {
                                        let range = granule_bytes(g as u64, len);
                                        range.end - range.start
                                    })
                                    .sum();
                                let last_used = std::fs::metadata(&sidecar)
                                    .and_then(|meta| meta.modified())
                                    .ok()
                                    .and_then(|time| time.duration_since(UNIX_EPOCH).ok())
                                    .map_or(0, |d| d.as_millis() as u64);
                                self.used.fetch_add(bytes, Ordering::Relaxed);
                                entries.insert(
                                    path.clone(),
                                    Arc::new(Entry {
                                        data: path.clone(),
                                        bytes: AtomicU64::new(bytes),
                                        last_used: AtomicU64::new(last_used),
                                        removed: AtomicBool::new(false),
                                        open: Mutex::new(Weak::new()),
                                    }),
                                );
                                true
                            }
                        }
                        _ => false,
                    };
                if !kept {
                    let _ = std::fs::remove_file(&path);
                    let _ = std::fs::remove_file(&sidecar);
                }
            }
        }
        // Granule lists whose data file is gone.
        for tenant in std::fs::read_dir(&self.dir)?.flatten() {
            for file in std::fs::read_dir(tenant.path())
                .into_iter()
                .flatten()
                .flatten()
            {
                let path = file.path();
                if path.extension().and_then(|e| e.to_str()) == Some(SIDECAR_EXTENSION)
                    && !path.with_extension(DATA_EXTENSION).exists()
                {
                    let _ = std::fs::remove_file(&path);
                }
            }
        }
        Ok(())
    }

    /// The copy of block `id` of `tenant`, `len` bytes long: the one open in this process, or
    /// the one on disk, or a new empty one. Granules from `pinned_from` on (and the first) are
    /// what opening the block reads: kept while the copy is open.
    pub fn open_file(
        self: &Arc<Self>,
        tenant: &str,
        id: u64,
        len: u64,
        pinned_from: u64,
    ) -> io::Result<Arc<CachedFile>> {
        let data = self.data_path(tenant, id);
        // Declared before the lock so that it is dropped after it: dropping the last handle
        // on a private copy takes the lock.
        let superseded;
        let mut entries = self.entries.lock().expect("cache entries");
        if let Some(entry) = entries.get(&data) {
            superseded = entry.open.lock().expect("open copy").upgrade();
            if let Some(open) = superseded.as_ref().filter(|open| open.len == len) {
                entry.touch();
                return Ok(open.clone());
            }
        }
        if let Some(dir) = data.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let granules = granule_count(len);
        let crcs: Box<[AtomicU32]> = (0..granules).map(|_| AtomicU32::new(0)).collect();
        let present = Bits::new(granules);
        let (file, sidecar) = if self.is_persistent() {
            let entry = entries.get(&data);
            // A copy left on disk, if it is this block's (same length, granule list readable).
            let reused = entry.and_then(|_| {
                let (sidecar_len, kept) = read_sidecar(&data.with_extension(SIDECAR_EXTENSION))
                    .ok()
                    .flatten()?;
                let file = File::options().read(true).write(true).open(&data).ok()?;
                let on_disk = file.metadata().ok()?.len();
                (sidecar_len == len && on_disk == len).then_some((file, kept))
            });
            match reused {
                Some((file, kept)) => {
                    for (g, (crc, is_present)) in kept.iter().enumerate() {
                        crcs[g].store(*crc, Ordering::Relaxed);
                        if *is_present {
                            present.set(g as u64);
                        }
                    }
                    let sidecar = File::options()
                        .read(true)
                        .write(true)
                        .open(data.with_extension(SIDECAR_EXTENSION))?;
                    (file, Some(sidecar))
                }
                None => {
                    self.forget(&mut entries, &data);
                    let file = create_empty(&data)?;
                    file.set_len(len)?;
                    let sidecar = create_empty(&data.with_extension(SIDECAR_EXTENSION))?;
                    let mut header = Vec::with_capacity(SIDECAR_HEADER as usize);
                    header.extend_from_slice(SIDECAR_MAGIC);
                    header.extend_from_slice(&SIDECAR_VERSION.to_le_bytes());
                    header.extend_from_slice(&len.to_le_bytes());
                    sidecar.write_all_at(&header, 0)?;
                    sidecar.set_len(SIDECAR_HEADER + granules * SIDECAR_ENTRY)?;
                    (file, Some(sidecar))
                }
            }
        } else {
            // Private: a file of this process's own, unlinked at once.
            let path = data.with_extension(format!("{}.private", std::process::id()));
            let file = create_empty(&path)?;
            let _ = std::fs::remove_file(&path);
            file.set_len(len)?;
            self.forget(&mut entries, &data);
            (file, None)
        };
        // SAFETY: the file is the cache's own; bytes are written into it only where they are
        // the block's (the same bytes each time) or punched out of granules no reader relies
        // on (see `CachedFile::evict_fetched`), and every read is checked by a crc.
        let map = unsafe { memmap2::Mmap::map(&file) }?;
        let entry = entries
            .entry(data.clone())
            .or_insert_with(|| {
                Arc::new(Entry {
                    data: data.clone(),
                    bytes: AtomicU64::new(0),
                    last_used: AtomicU64::new(0),
                    removed: AtomicBool::new(false),
                    open: Mutex::new(Weak::new()),
                })
            })
            .clone();
        entry.touch();
        let copy = Arc::new(CachedFile {
            cache: self.clone(),
            entry: entry.clone(),
            file,
            map,
            len,
            pinned_from: pinned_from.min(granules).max(1),
            present,
            verified: Bits::new(granules),
            crcs,
            sidecar,
            writing: Mutex::new(()),
        });
        *entry.open.lock().expect("open copy") = Arc::downgrade(&copy);
        Ok(copy)
    }

    /// Drops the entry of the copy at `data` (being replaced) from the count.
    fn forget(&self, entries: &mut HashMap<PathBuf, Arc<Entry>>, data: &Path) {
        if let Some(stale) = entries.remove(data) {
            stale.removed.store(true, Ordering::Relaxed);
            self.used
                .fetch_sub(stale.bytes.swap(0, Ordering::Relaxed), Ordering::Relaxed);
        }
    }

    /// Removes the copy of block `id` of `tenant` (the block is deleted). A reader that still
    /// maps it keeps its bytes until it lets go.
    pub fn remove(&self, tenant: &str, id: u64) {
        let data = self.data_path(tenant, id);
        self.forget(&mut self.entries.lock().expect("cache entries"), &data);
        if self.is_persistent() {
            let _ = std::fs::remove_file(&data);
            let _ = std::fs::remove_file(data.with_extension(SIDECAR_EXTENSION));
        }
    }

    fn account(&self, entry: &Entry, added: u64, freed: u64) {
        if entry.removed.load(Ordering::Relaxed) || added == freed {
            return;
        }
        entry.bytes.fetch_add(added, Ordering::Relaxed);
        entry.bytes.fetch_sub(freed, Ordering::Relaxed);
        self.used.fetch_add(added, Ordering::Relaxed);
        self.used.fetch_sub(freed, Ordering::Relaxed);
    }

    /// Evicts, least recently used first, until the cache is within its budget or nothing
    /// more may go (see the module documentation). One thread evicts at a time; the others go
    /// on.
    pub fn make_room(&self) {
        if self.used() <= self.budget() {
            return;
        }
        let Ok(_evicting) = self.evicting.try_lock() else {
            return;
        };
        let mut candidates: Vec<Arc<Entry>> = self
            .entries
            .lock()
            .expect("cache entries")
            .values()
            .cloned()
            .collect();
        candidates.sort_by_key(|entry| entry.last_used.load(Ordering::Relaxed));
        let now = now_ms();
        for entry in candidates {
            if self.used() <= self.budget() {
                break;
            }
            let open = entry.open.lock().expect("open copy").upgrade();
            match open {
                Some(copy) => {
                    let idle = now.saturating_sub(entry.last_used.load(Ordering::Relaxed));
                    if idle >= OPEN_GRACE.as_millis() as u64 {
                        copy.evict_fetched();
                    }
                }
                None => {
                    let mut entries = self.entries.lock().expect("cache entries");
                    // Opened again since it was picked: left for the next round.
                    if entry.open.lock().expect("open copy").strong_count() > 0 {
                        continue;
                    }
                    if entries
                        .get(&entry.data)
                        .is_some_and(|current| Arc::ptr_eq(current, &entry))
                    {
                        entries.remove(&entry.data);
                        drop(entries);
                        let bytes = entry.bytes.swap(0, Ordering::Relaxed);
                        entry.removed.store(true, Ordering::Relaxed);
                        if self.is_persistent() {
                            let _ = std::fs::remove_file(&entry.data);
                            let _ = std::fs::remove_file(entry.sidecar());
                        }
                        self.used.fetch_sub(bytes, Ordering::Relaxed);
                        self.stats.evicted_bytes.fetch_add(bytes, Ordering::Relaxed);
                    }
                }
            }
        }
        let used = self.used();
        let budget = self.budget();
        if used > budget {
            let said = self.over_budget_said.load(Ordering::Relaxed);
            if now.saturating_sub(said) >= 60_000 {
                self.over_budget_said.store(now, Ordering::Relaxed);
                tracing::warn!(
                    cache = %self.dir.display(),
                    used,
                    budget,
                    "the disk cache is over its budget: open blocks' resident sections and \
                     copies used in the last 30 s stay"
                );
            }
        }
    }
}

/// Per granule of a copy: (crc32, present).
type Granules = Vec<(u32, bool)>;

/// The granule list of a copy: its block's length and its granules. `None` when the file is
/// not one (another version, cut short).
fn read_sidecar(path: &Path) -> io::Result<Option<(u64, Granules)>> {
    let bytes = std::fs::read(path)?;
    if bytes.len() < SIDECAR_HEADER as usize
        || &bytes[0..4] != SIDECAR_MAGIC
        || bytes[4..8] != SIDECAR_VERSION.to_le_bytes()
    {
        return Ok(None);
    }
    let len = u64::from_le_bytes(bytes[8..16].try_into().expect("8 bytes"));
    let granules = granule_count(len);
    let body = &bytes[SIDECAR_HEADER as usize..];
    if body.len() as u64 != granules * SIDECAR_ENTRY {
        return Ok(None);
    }
    let entries = body
        .chunks_exact(SIDECAR_ENTRY as usize)
        .map(|entry| {
            let crc = u32::from_le_bytes(entry[0..4].try_into().expect("4 bytes"));
            let flag = u32::from_le_bytes(entry[4..8].try_into().expect("4 bytes"));
            (crc, flag == 1)
        })
        .collect();
    Ok(Some((len, entries)))
}

/// A fixed set of bits that threads set and clear.
#[derive(Debug)]
struct Bits(Box<[AtomicU64]>);

impl Bits {
    fn new(len: u64) -> Bits {
        Bits((0..len.div_ceil(64)).map(|_| AtomicU64::new(0)).collect())
    }

    fn get(&self, bit: u64) -> bool {
        self.0[(bit / 64) as usize].load(Ordering::Acquire) & (1 << (bit % 64)) != 0
    }

    /// Sets `bit`; whether it was set before.
    fn set(&self, bit: u64) -> bool {
        self.0[(bit / 64) as usize].fetch_or(1 << (bit % 64), Ordering::AcqRel) & (1 << (bit % 64))
            != 0
    }

    /// Clears `bit`; whether it was set before.
    fn clear(&self, bit: u64) -> bool {
        self.0[(bit / 64) as usize].fetch_and(!(1 << (bit % 64)), Ordering::AcqRel)
            & (1 << (bit % 64))
            != 0
    }
}

/// One block's copy, mapped: which granules it holds, their crcs, and the granule list on
/// disk.
#[derive(Debug)]
pub struct CachedFile {
    cache: Arc<DiskCache>,
    entry: Arc<Entry>,
    file: File,
    map: memmap2::Mmap,
    len: u64,
    /// The first granule of the stretch opening reads (kept while open, with granule 0).
    pinned_from: u64,
    present: Bits,
    /// Present granules whose bytes matched their crc in this process.
    verified: Bits,
    crcs: Box<[AtomicU32]>,
    /// `None` for a private copy.
    sidecar: Option<File>,
    /// Held while granules are stored or evicted, so an eviction never punches out bytes
    /// just written and marked.
    writing: Mutex<()>,
}

impl CachedFile {
    /// The block's bytes: where a granule is not present, whatever the file holds (zeros).
    pub fn bytes(&self) -> &[u8] {
        &self.map
    }

    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn granules(&self, range: &Range<u64>) -> Range<u64> {
        range.start / GRANULE..range.end.min(self.len).div_ceil(GRANULE)
    }

    /// Whether some of `ranges` is not present (without checking what is).
    pub fn is_missing(&self, ranges: &[Range<u64>]) -> bool {
        ranges
            .iter()
            .filter(|r| r.start < r.end)
            .any(|r| self.granules(r).any(|granule| !self.present.get(granule)))
    }

    /// The byte runs of `ranges` to fetch: whole granules that are not present, or that a
    /// previous run left and whose bytes no longer match their crc. Marks the copy used.
    pub fn missing(&self, ranges: &[Range<u64>]) -> Vec<Range<u64>> {
        self.entry.touch();
        let mut wanted: Vec<Range<u64>> = ranges
            .iter()
            .filter(|r| r.start < r.end)
            .map(|r| self.granules(r))
            .collect();
        wanted.sort_by_key(|r| r.start);
        let mut runs: Vec<Range<u64>> = Vec::new();
        for range in wanted {
            for granule in range {
                if self.holds(granule) {
                    continue;
                }
                match runs.last_mut() {
                    Some(run) if run.end == granule => run.end += 1,
                    Some(run) if run.end > granule => {}
                    _ => runs.push(granule..granule + 1),
                }
            }
        }
        runs.into_iter()
            .map(|run| run.start * GRANULE..(run.end * GRANULE).min(self.len))
            .collect()
    }

    /// Whether granule `granule` is present with the bytes its crc names (checked once per
    /// process; a granule that fails is dropped, to be fetched again).
    fn holds(&self, granule: u64) -> bool {
        if !self.present.get(granule) {
            return false;
        }
        if self.verified.get(granule) {
            return true;
        }
        let range = granule_bytes(granule, self.len);
        let crc = crc32fast::hash(&self.map[range.start as usize..range.end as usize]);
        if crc == self.crcs[granule as usize].load(Ordering::Relaxed) {
            self.verified.set(granule);
            return true;
        }
        let _writing = self.writing.lock().expect("cache writes");
        if self.present.clear(granule) {
            tracing::warn!(
                copy = %self.entry.data.display(),
                granule,
                "a cached granule does not match its crc: fetching it again"
            );
            self.cache
                .stats
                .corrupt_granules
                .fetch_add(1, Ordering::Relaxed);
            self.cache.account(&self.entry, 0, range.end - range.start);
            self.write_entries(granule..granule + 1);
        }
        false
    }

    /// Writes `bytes`, fetched for `range` (whole granules, the last one possibly ending the
    /// block), into the copy and marks the granules present; then keeps the cache's budget.
    pub fn store(&self, range: &Range<u64>, bytes: &[u8]) -> io::Result<()> {
        if bytes.len() as u64 != range.end - range.start || range.end > self.len {
            return Err(io::Error::other(format!(
                "the store returned {} bytes for {range:?} of a {}-byte block",
                bytes.len(),
                self.len
            )));
        }
        let first = range.start.div_ceil(GRANULE);
        let last = if range.end == self.len {
            range.end.div_ceil(GRANULE)
        } else {
            range.end / GRANULE
        };
        let mut added = 0;
        {
            let _writing = self.writing.lock().expect("cache writes");
            self.file.write_all_at(bytes, range.start)?;
            for granule in first..last {
                let span = granule_bytes(granule, self.len);
                let offset = (span.start - range.start) as usize..(span.end - range.start) as usize;
                self.crcs[granule as usize]
                    .store(crc32fast::hash(&bytes[offset]), Ordering::Relaxed);
                self.verified.set(granule);
                if !self.present.set(granule) {
                    added += span.end - span.start;
                }
            }
            if first < last {
                self.write_entries(first..last);
            }
            self.cache.account(&self.entry, added, 0);
        }
        self.entry.touch();
        self.cache.make_room();
        Ok(())
    }

    /// Records granules `granules` in the granule list on disk (a failure costs the copy's
    /// future, not this read: the granules are fetched again after a restart).
    fn write_entries(&self, granules: Range<u64>) {
        let Some(sidecar) = &self.sidecar else {
            return;
        };
        let mut entries =
            Vec::with_capacity(((granules.end - granules.start) * SIDECAR_ENTRY) as usize);
        for granule in granules.clone() {
            let crc = self.crcs[granule as usize].load(Ordering::Relaxed);
            entries.extend_from_slice(&crc.to_le_bytes());
            entries.extend_from_slice(&u32::from(self.present.get(granule)).to_le_bytes());
        }
        if let Err(error) =
            sidecar.write_all_at(&entries, SIDECAR_HEADER + granules.start * SIDECAR_ENTRY)
        {
            tracing::warn!(copy = %self.entry.data.display(), %error, "could not record cached granules");
        }
    }

    /// Drops the granules queries fetched (all but the first and those from `pinned_from`
    /// on): punched out of the file, so the disk gets them back. Returns the bytes freed.
    fn evict_fetched(&self) -> u64 {
        let freed = self.drop_granules(1..self.pinned_from);
        self.cache
            .stats
            .evicted_bytes
            .fetch_add(freed, Ordering::Relaxed);
        freed
    }

    /// Drops every granule (a checksum failed in bytes read from the copy: the copy, not the
    /// block, may be damaged), so that each range is fetched again when next read. The open
    /// block's readers hold what they read at open in memory of their own.
    pub fn discard(&self) {
        self.drop_granules(0..granule_count(self.len));
    }

    /// Marks granules `granules` absent and punches them out of the file; the bytes freed.
    fn drop_granules(&self, granules: Range<u64>) -> u64 {
        let _writing = self.writing.lock().expect("cache writes");
        let mut runs: Vec<Range<u64>> = Vec::new();
        let mut freed = 0;
        for granule in granules {
            if !self.present.clear(granule) {
                continue;
            }
            self.verified.clear(granule);
            let span = granule_bytes(granule, self.len);
            freed += span.end - span.start;
            match runs.last_mut() {
                Some(run) if run.end == granule => run.end += 1,
                _ => runs.push(granule..granule + 1),
            }
        }
        for run in &runs {
            let bytes = run.start * GRANULE..(run.end * GRANULE).min(self.len);
            if let Err(error) = punch_hole(&self.file, bytes) {
                tracing::warn!(copy = %self.entry.data.display(), %error, "could not free evicted granules");
            }
            self.write_entries(run.clone());
        }
        self.cache.account(&self.entry, 0, freed);
        freed
    }
}

impl Drop for CachedFile {
    fn drop(&mut self) {
        // A private copy's bytes go with its file.
        if self.sidecar.is_none() {
            let mut entries = self.cache.entries.lock().expect("cache entries");
            if entries
                .get(&self.entry.data)
                .is_some_and(|entry| Arc::ptr_eq(entry, &self.entry))
            {
                entries.remove(&self.entry.data);
            }
            drop(entries);
            let bytes = self.entry.bytes.swap(0, Ordering::Relaxed);
            if !self.entry.removed.swap(true, Ordering::Relaxed) {
                self.cache.used.fetch_sub(bytes, Ordering::Relaxed);
            }
        }
    }
}

/// A new empty file at `path`, for reading and writing (one that was there is cut to nothing).
fn create_empty(path: &Path) -> io::Result<File> {
    File::options()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
}

/// Gives `range` of `file` back to the file system; it reads as zeros after.
fn punch_hole(file: &File, range: Range<u64>) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: a plain system call on a descriptor this function borrows.
    let result = unsafe {
        libc::fallocate(
            file.as_raw_fd(),
            libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
            range.start as libc::off_t,
            (range.end - range.start) as libc::off_t,
        )
    };
    if result == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(test)]
#[allow(clippy::single_range_in_vec_init)] // one range is what a copy is asked for
mod tests {
    use super::*;

    fn bytes_of(len: u64, seed: u8) -> Vec<u8> {
        (0..len)
            .map(|i| (i as u8).wrapping_mul(31) ^ seed)
            .collect()
    }

    fn cache(dir: &Path, budget: u64) -> Arc<DiskCache> {
        DiskCache::open(dir, budget, Arc::default()).unwrap()
    }

    /// Fills what `missing` asks for from `block`, as a fetch from the store would.
    fn fill(copy: &CachedFile, block: &[u8], ranges: &[Range<u64>]) -> u64 {
        let mut fetched = 0;
        for run in copy.missing(ranges) {
            copy.store(&run, &block[run.start as usize..run.end as usize])
                .unwrap();
            fetched += run.end - run.start;
        }
        fetched
    }

    #[test]
    fn fetched_granules_are_kept_across_a_restart_and_checked_by_crc() {
        let dir = tempfile::tempdir().unwrap();
        let len = 10 * GRANULE + 123;
        let block = bytes_of(len, 5);
        {
            let cache = cache(dir.path(), 1 << 30);
            let copy = cache.open_file("t", 3, len, 8).unwrap();
            assert_eq!(copy.missing(&[100..200]), vec![0..GRANULE]);
            assert_eq!(
                fill(&copy, &block, &[100..200, 9 * GRANULE..len]),
                2 * GRANULE + 123
            );
            assert_eq!(cache.used(), 2 * GRANULE + 123);
            assert_eq!(
                &copy.bytes()[9 * GRANULE as usize..],
                &block[9 * GRANULE as usize..]
            );
        }
        // A restart: the copy is taken over, counted, and read without a fetch.
        let cache_again = cache(dir.path(), 1 << 30);
        assert_eq!(cache_again.used(), 2 * GRANULE + 123);
        let copy = cache_again.open_file("t", 3, len, 8).unwrap();
        assert!(copy.missing(&[0..10, len - 1..len]).is_empty());
        assert_eq!(
            copy.missing(&[GRANULE..GRANULE + 1]),
            vec![GRANULE..2 * GRANULE]
        );
        drop(copy);
        drop(cache_again);

        // A garbled byte on disk: that granule is fetched again, the others are trusted.
        let data = dir.path().join("t/00000003.qblk");
        let file = File::options().write(true).open(&data).unwrap();
        file.write_all_at(&[block[10] ^ 0xff], 10).unwrap();
        drop(file);
        let cache_again = cache(dir.path(), 1 << 30);
        let copy = cache_again.open_file("t", 3, len, 8).unwrap();
        assert_eq!(copy.missing(&[0..len]), vec![0..9 * GRANULE]);
        assert_eq!(
            cache_again.stats.corrupt_granules.load(Ordering::Relaxed),
            1
        );
        fill(&copy, &block, &[0..len]);
        assert_eq!(copy.bytes(), &block[..]);
    }

    #[test]
    fn a_block_of_another_length_starts_over() {
        let dir = tempfile::tempdir().unwrap();
        let cache = cache(dir.path(), 1 << 30);
        let block = bytes_of(3 * GRANULE, 1);
        let copy = cache.open_file("t", 1, 3 * GRANULE, 2).unwrap();
        fill(&copy, &block, &[0..3 * GRANULE]);
        drop(copy);
        let copy = cache.open_file("t", 1, 2 * GRANULE, 1).unwrap();
        assert_eq!(copy.missing(&[0..1]), vec![0..GRANULE]);
        assert_eq!(cache.used(), 0);
    }

    #[test]
    fn the_least_recently_used_closed_copy_goes_first() {
        let dir = tempfile::tempdir().unwrap();
        let cache = cache(dir.path(), 5 * GRANULE);
        let block = bytes_of(2 * GRANULE, 9);
        for id in 0..2 {
            let copy = cache.open_file("t", id, 2 * GRANULE, 1).unwrap();
            fill(&copy, &block, &[0..2 * GRANULE]);
            std::thread::sleep(Duration::from_millis(5));
        }
        // Block 0 is used again: block 1 is now the least recent.
        cache
            .open_file("t", 0, 2 * GRANULE, 1)
            .unwrap()
            .missing(&[0..1]);
        std::thread::sleep(Duration::from_millis(5));
        let copy = cache.open_file("t", 2, 2 * GRANULE, 1).unwrap();
        fill(&copy, &block, &[0..2 * GRANULE]);
        assert_eq!(cache.used(), 4 * GRANULE);
        assert!(dir.path().join("t/00000000.qblk").exists());
        assert!(!dir.path().join("t/00000001.qblk").exists());
        assert!(!dir.path().join("t/00000001.present").exists());
        assert_eq!(
            cache.stats.evicted_bytes.load(Ordering::Relaxed),
            2 * GRANULE
        );
    }

    #[test]
    fn an_open_copy_keeps_what_opening_read_and_gives_back_what_queries_fetched() {
        let dir = tempfile::tempdir().unwrap();
        let cache = cache(dir.path(), 1 << 30);
        let len = 8 * GRANULE;
        let block = bytes_of(len, 3);
        let copy = cache.open_file("t", 4, len, 6).unwrap();
        fill(&copy, &block, &[0..len]);
        // Idle for longer than the grace: everything but granules 0, 6 and 7 goes.
        copy.entry.last_used.store(0, Ordering::Relaxed);
        cache.set_budget(GRANULE);
        assert_eq!(cache.used(), 3 * GRANULE);
        assert_eq!(copy.missing(&[0..len]), vec![GRANULE..6 * GRANULE]);
        let on_disk = std::fs::metadata(dir.path().join("t/00000004.qblk")).unwrap();
        assert!(
            std::os::unix::fs::MetadataExt::blocks(&on_disk) * 512 <= 4 * GRANULE,
            "the evicted granules are punched out of the file"
        );
        // Used just now: nothing goes, whatever the budget.
        fill(&copy, &block, &[0..len]);
        assert_eq!(copy.bytes(), &block[..]);
        assert_eq!(cache.used(), len);
    }

    #[test]
    fn a_second_process_keeps_private_copies() {
        let dir = tempfile::tempdir().unwrap();
        let owner = cache(dir.path(), 1 << 30);
        assert!(owner.is_persistent());
        // Another open of the directory is what a second process would see: the lock is
        // per open file description.
        let other = cache(dir.path(), 1 << 30);
        assert!(!other.is_persistent());
        let block = bytes_of(GRANULE, 2);
        let copy = other.open_file("t", 9, GRANULE, 1).unwrap();
        fill(&copy, &block, &[0..GRANULE]);
        assert_eq!(other.used(), GRANULE);
        assert!(!dir.path().join("t/00000009.qblk").exists());
        drop(copy);
        assert_eq!(other.used(), 0);
    }
}
