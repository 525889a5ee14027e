//! The catalog of a local data directory.
//!
//! ```text
//! DIR/catalog.json     the catalog: settings, blocks, per-source ingest progress
//! DIR/blocks/N.qblk    block files (quarry-format)
//! DIR/.lock            held (flock) by the one process that writes DIR
//! DIR/damaged/N.qblk   blocks set aside by `quarry check --repair`, no longer listed
//! ```
//! Every change is committed by writing `catalog.json.tmp`, fsync, rename over `catalog.json`,
//! fsync of the directory: a crash leaves either the old or the new catalog, never a mix. Block
//! files are written and fsynced before the catalog names them, so a listed block always exists;
//! a block file no catalog names (a crash between the two) is garbage and removed at open.
//!
//! Ingest progress follows seed 003 §3.3.1 ("high watermark records for files and positions
//! inside large files"). A source file is identified by its canonical path (catalog version 2;
//! version 1 used path, size and mtime, so a grown or touched file was a new source and was
//! indexed again in full: issue 9, defect 2). For each source the catalog keeps the byte ranges
//! of its decompressed stream whose events are in committed blocks, and for each range:
//!
//! - a fingerprint, the crc32 of the range's first and of its last chunk (`head`, `tail`). A
//!   re-run reads those (two chunks per range, by offset in a plain file) and compares, so a
//!   rewritten or truncated file is caught without rereading everything before the watermark.
//!   A change confined to the middle of a range goes unnoticed: logs grow by appending, and a
//!   rewrite or rotation changes the first chunk;
//! - the line number at its end, so that a run resuming there numbers lines as the file does;
//! - how many of its lines failed, so that a re-run can say the file was not cleanly indexed.
//!
//! A catalog of version 1 is migrated when read: per path, the most recent (path, size, mtime)
//! entry becomes a [`LegacySource`] without fingerprints, which the indexer upgrades only while
//! the file still has that size and mtime (then nothing can have changed); otherwise it cannot
//! tell an append from a rewrite and reports the file as changed.

use crate::block_store::{LocalDir, BLOCKS_DIR};
use crate::mapping::Mapping;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CatalogError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: corrupt catalog: {source}")]
    Corrupt {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("{path}: data directory is in use by another quarry process (a running `quarry serve` holds it: send events to it over HTTP, or stop it first)")]
    Locked { path: PathBuf },
    #[error("{path}: catalog version {got} is not one this build reads (1 to {expected})")]
    Version {
        path: PathBuf,
        expected: u32,
        got: u32,
    },
    #[error(transparent)]
    Mapping(#[from] crate::mapping::MappingError),
    /// The PostgreSQL metastore could not be reached or refused a statement.
    #[error("metastore {url}: {message}")]
    Postgres { url: String, message: String },
    /// Another node opened this catalog for writing after this one did (`postgres.rs`).
    #[error("catalog {catalog:?} is read-only on this node (a searcher): writes go to an indexer")]
    ReadOnly { catalog: String },
    #[error("metastore {url}: catalog {catalog:?} was opened for writing by another node since this one opened it; this node no longer writes it")]
    Fenced { url: String, catalog: String },
}

pub type Result<T, E = CatalogError> = std::result::Result<T, E>;

/// 3: adds `wal`, per tenant the last WAL sequence number whose events are in committed
/// blocks (a build that ignored it would replay those events again, so older builds must
/// refuse version 3). 2: sources keyed by canonical path, with fingerprints, line numbers and
/// failed lines per range. 1: keyed by (path, size, mtime), ranges only; still read (migrated).
const CATALOG_VERSION: u32 = 3;
const CATALOG_FILE: &str = "catalog.json";
/// Where `quarry check --repair` moves damaged blocks.
const DAMAGED_DIR: &str = "damaged";

/// Settings fixed when the data directory is created (they shape what blocks contain).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    /// Stop words removed by the analyzer, lowercased; empty by default.
    #[serde(default)]
    pub stop_words: Vec<String>,
    /// How mapped fields are indexed (`mapping`); empty: every field dynamic. Unlike the stop
    /// words it may grow later (`Catalog::set_mapping`): new blocks follow it.
    #[serde(default, skip_serializing_if = "Mapping::is_empty")]
    pub mapping: Mapping,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BlockEntry {
    pub id: u64,
    pub docs: u64,
    pub time_min: i64,
    pub time_max: i64,
    pub bytes: u64,
    /// Where the stretch that opening the block reads starts (its resident sections, the
    /// manifest and the footer: `Manifest::planning_start`), so that a remote block opens
    /// with one ranged read. 0 for blocks recorded before it was kept.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub open_from: u64,
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}

impl BlockEntry {
    /// The entry of block `id`, `bytes` long, whose manifest is `manifest`.
    pub fn of(id: u64, manifest: &quarry_format::block::Manifest, bytes: u64) -> BlockEntry {
        BlockEntry {
            id,
            docs: u64::from(manifest.doc_count),
            time_min: manifest.time_min,
            time_max: manifest.time_max,
            bytes,
            open_from: manifest.planning_start(),
        }
    }
}

/// Identity of an input file: its canonical path. Whether its content is still what was
/// indexed is the fingerprints' business ([`DoneRange`]).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct SourceKey {
    pub path: String,
}

impl SourceKey {
    pub fn of_file(path: &Path) -> std::io::Result<SourceKey> {
        let canonical = std::fs::canonicalize(path)?;
        Ok(SourceKey {
            path: canonical.to_string_lossy().into_owned(),
        })
    }
}

/// The crc32 of the bytes `[start, end)` of a source's decompressed stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChunkSum {
    pub start: u64,
    pub end: u64,
    pub crc32: u32,
}

/// One chunk whose events are in a committed block (or that held no event), as the indexer
/// commits it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IngestedChunk {
    pub key: SourceKey,
    /// Its bytes and their crc32.
    pub sum: ChunkSum,
    /// The line number (1-based) of the line holding byte `sum.end`: one more than the
    /// newlines before it.
    pub line_at_end: u64,
    /// Lines of the chunk that could not be indexed.
    pub failed_lines: u64,
}

/// A committed byte range of a source: chunks `[start, end)`, coalesced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DoneRange {
    pub start: u64,
    pub end: u64,
    /// Its first and last chunk (the same one for a range of one chunk).
    pub head: ChunkSum,
    pub tail: ChunkSum,
    /// The line number of the line holding byte `end` (see [`IngestedChunk::line_at_end`]).
    pub line_at_end: u64,
    pub failed_lines: u64,
}

impl DoneRange {
    fn of_chunk(chunk: &IngestedChunk) -> DoneRange {
        DoneRange {
            start: chunk.sum.start,
            end: chunk.sum.end,
            head: chunk.sum,
            tail: chunk.sum,
            line_at_end: chunk.line_at_end,
            failed_lines: chunk.failed_lines,
        }
    }
}

/// A source recorded by a version-1 catalog: the identity it was indexed under and its
/// ranges, without fingerprints or line numbers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LegacySource {
    pub size: u64,
    pub mtime_ns: i128,
    pub done: Vec<(u64, u64)>,
}

impl LegacySource {
    /// Whether `path` still has the size and mtime it was indexed with.
    pub fn matches(&self, path: &Path) -> std::io::Result<bool> {
        let meta = std::fs::metadata(path)?;
        Ok(meta.len() == self.size && mtime_ns(&meta)? == self.mtime_ns)
    }
}

fn mtime_ns(meta: &std::fs::Metadata) -> std::io::Result<i128> {
    Ok(meta
        .modified()?
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i128)
        .unwrap_or(0))
}

/// What was ingested from one source: sorted, disjoint, non-adjacent ranges.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SourceState {
    pub done: Vec<DoneRange>,
    /// Set (and `done` empty) for a source migrated from a version-1 catalog until the indexer
    /// has verified it and filled in `done`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub legacy: Option<LegacySource>,
}

impl SourceState {
    /// Whether `[start, end)` lies entirely within one ingested range.
    pub fn contains(&self, start: u64, end: u64) -> bool {
        let i = self.done.partition_point(|r| r.end < end);
        self.done
            .get(i)
            .is_some_and(|r| r.start <= start && end <= r.end)
    }

    /// The high watermark: everything before it is ingested.
    pub fn watermark(&self) -> u64 {
        match self.done.first() {
            Some(r) if r.start == 0 => r.end,
            _ => 0,
        }
    }

    /// The end of the last ingested range (0 without one).
    pub fn end(&self) -> u64 {
        self.done.last().map_or(0, |r| r.end)
    }

    /// The range that starts at `offset`, if any.
    pub fn range_at(&self, offset: u64) -> Option<&DoneRange> {
        let i = self.done.partition_point(|r| r.start < offset);
        self.done.get(i).filter(|r| r.start == offset)
    }

    /// The start of the first range that starts after `offset`.
    pub fn next_start_after(&self, offset: u64) -> Option<u64> {
        let i = self.done.partition_point(|r| r.start <= offset);
        self.done.get(i).map(|r| r.start)
    }

    /// Lines that failed in all ingested ranges.
    pub fn failed_lines(&self) -> u64 {
        self.done.iter().map(|r| r.failed_lines).sum()
    }

    fn add(&mut self, chunk: &IngestedChunk) {
        if chunk.sum.start >= chunk.sum.end || self.contains(chunk.sum.start, chunk.sum.end) {
            // Empty, or already committed: nothing to record (and its failed lines were
            // counted with the range that holds it).
            return;
        }
        self.done.push(DoneRange::of_chunk(chunk));
        self.done.sort_unstable_by_key(|r| (r.start, r.end));
        let mut merged: Vec<DoneRange> = Vec::with_capacity(self.done.len());
        for range in self.done.drain(..) {
            match merged.last_mut() {
                Some(last) if range.start <= last.end => {
                    // Chunks are committed once each, so ranges only ever touch; should an
                    // overlap appear, the union is still what is ingested.
                    if range.end > last.end {
                        last.end = range.end;
                        last.tail = range.tail;
                        last.line_at_end = range.line_at_end;
                    }
                    last.failed_lines += range.failed_lines;
                }
                _ => merged.push(range),
            }
        }
        self.done = merged;
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct CatalogState {
    version: u32,
    settings: Settings,
    next_block_id: u64,
    blocks: Vec<BlockEntry>,
    /// Keyed by `SourceKey::path`.
    sources: BTreeMap<String, SourceState>,
    /// Per tenant, the last WAL sequence number whose events are in committed blocks: a
    /// server replays only the records after it (version 3).
    #[serde(default)]
    wal: BTreeMap<String, u64>,
}

/// Just the version, read first to pick the parser.
#[derive(Deserialize)]
struct VersionOnly {
    version: u32,
}

/// Version 1, read to migrate.
#[derive(Deserialize)]
struct CatalogStateV1 {
    settings: Settings,
    next_block_id: u64,
    blocks: Vec<BlockEntry>,
    /// Keyed by "path|size|mtime".
    sources: BTreeMap<String, SourceStateV1>,
}

#[derive(Deserialize)]
struct SourceStateV1 {
    key: Option<SourceKeyV1>,
    done: Vec<(u64, u64)>,
}

#[derive(Deserialize)]
struct SourceKeyV1 {
    path: String,
    size: u64,
    mtime_ns: i128,
}

impl CatalogState {
    /// Parses any version this build reads, migrating older ones.
    fn parse(path: &Path, bytes: &[u8]) -> Result<CatalogState> {
        let corrupt = |source| CatalogError::Corrupt {
            path: path.to_path_buf(),
            source,
        };
        let VersionOnly { version } = serde_json::from_slice(bytes).map_err(corrupt)?;
        match version {
            1 => Ok(serde_json::from_slice::<CatalogStateV1>(bytes)
                .map_err(corrupt)?
                .migrate()),
            // Version 2 is version 3 without `wal` (nothing was ever ingested over HTTP).
            2 | CATALOG_VERSION => {
                let mut state: CatalogState = serde_json::from_slice(bytes).map_err(corrupt)?;
                state.version = CATALOG_VERSION;
                Ok(state)
            }
            got => Err(CatalogError::Version {
                path: path.to_path_buf(),
                expected: CATALOG_VERSION,
                got,
            }),
        }
    }
}

impl CatalogStateV1 {
    /// Version 1 made a new source of every (path, size, mtime), so a file that changed
    /// between runs has several entries; only the newest can describe its current content.
    fn migrate(self) -> CatalogState {
        let mut sources: BTreeMap<String, SourceState> = BTreeMap::new();
        let mut newest: BTreeMap<String, (i128, u64)> = BTreeMap::new();
        for (name, state) in self.sources {
            // Every version-1 entry has a key; fall back to the map key's path part.
            let (path, size, mtime_ns) = match state.key {
                Some(key) => (key.path, key.size, key.mtime_ns),
                None => match name.rsplitn(3, '|').collect::<Vec<_>>().as_slice() {
                    [mtime, size, path] => (
                        (*path).to_owned(),
                        size.parse().unwrap_or(0),
                        mtime.parse().unwrap_or(0),
                    ),
                    _ => continue,
                },
            };
            if newest
                .get(&path)
                .is_some_and(|&seen| seen >= (mtime_ns, size))
            {
                continue;
            }
            newest.insert(path.clone(), (mtime_ns, size));
            sources.insert(
                path,
                SourceState {
                    done: Vec::new(),
                    legacy: Some(LegacySource {
                        size,
                        mtime_ns,
                        done: state.done,
                    }),
                },
            );
        }
        CatalogState {
            version: CATALOG_VERSION,
            settings: self.settings,
            next_block_id: self.next_block_id,
            blocks: self.blocks,
            sources,
            wal: BTreeMap::new(),
        }
    }
}

/// Takes `dir`'s lock (`DIR/.lock`, held while the file is open): one process writes a data
/// directory (its catalog, WAL and block files) at a time.
pub fn lock_dir(dir: &Path) -> Result<File> {
    let lock_path = dir.join(".lock");
    let lock = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(|source| CatalogError::Io {
            path: lock_path.clone(),
            source,
        })?;
    if lock.try_lock().is_err() {
        return Err(CatalogError::Locked {
            path: dir.to_path_buf(),
        });
    }
    Ok(lock)
}

/// The open catalog of a data directory; holds the directory's lock while alive.
pub struct Catalog {
    dir: PathBuf,
    state: CatalogState,
    _lock: File,
}

impl Catalog {
    /// Opens `dir`, creating it with `settings` if it has no catalog yet (an existing
    /// directory keeps its own settings).
    pub fn open_or_create(dir: &Path, settings: Settings) -> Result<Catalog> {
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| CatalogError::Io { path, source }
        };
        std::fs::create_dir_all(dir.join(BLOCKS_DIR)).map_err(io(dir))?;
        let lock = lock_dir(dir)?;
        let path = dir.join(CATALOG_FILE);
        let (state, on_disk) = match std::fs::read(&path) {
            Ok(bytes) => (CatalogState::parse(&path, &bytes)?, Some(bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => (
                CatalogState {
                    version: CATALOG_VERSION,
                    settings,
                    next_block_id: 1,
                    ..Default::default()
                },
                None,
            ),
            Err(e) => return Err(io(&path)(e)),
        };
        let mut catalog = Catalog {
            dir: dir.to_path_buf(),
            state,
            _lock: lock,
        };
        // Written only when new or migrated: a server must start (and answer searches) on a
        // full disk, where writing even this file fails (issue 26).
        let unchanged = on_disk.is_some_and(|bytes| {
            // unwrap: as in `save`, the state always serializes.
            serde_json::to_vec_pretty(&catalog.state).unwrap() == bytes
        });
        if !unchanged {
            catalog.save()?;
        }
        catalog.remove_orphans()?;
        Ok(catalog)
    }

    /// Opens an existing directory for reading (no lock: readers only ever see committed state).
    pub fn read_only(dir: &Path) -> Result<(Settings, Vec<BlockEntry>)> {
        let path = dir.join(CATALOG_FILE);
        let bytes = std::fs::read(&path).map_err(|source| CatalogError::Io {
            path: path.clone(),
            source,
        })?;
        let state = CatalogState::parse(&path, &bytes)?;
        Ok((state.settings, state.blocks))
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn settings(&self) -> &Settings {
        &self.state.settings
    }

    /// Grows the mapping by `update` (`Mapping::merged`: mapped fields cannot change) and
    /// saves the catalog. Returns the mapping now in force.
    pub fn set_mapping(&mut self, update: &Mapping) -> Result<Mapping> {
        let merged = self.state.settings.mapping.merged(update)?;
        if merged != self.state.settings.mapping {
            self.state.settings.mapping = merged;
            self.save()?;
        }
        Ok(self.state.settings.mapping.clone())
    }

    pub fn blocks(&self) -> &[BlockEntry] {
        &self.state.blocks
    }

    /// The block files of this data directory (the store the catalog's blocks are in).
    pub fn local_store(&self) -> LocalDir {
        LocalDir::new(&self.dir)
    }

    /// Reserves a block id (not persisted until a block with it is committed; ids of blocks
    /// that were never committed are simply skipped).
    pub fn allocate_block_id(&mut self) -> u64 {
        let id = self.state.next_block_id;
        self.state.next_block_id += 1;
        id
    }

    pub fn source(&self, key: &SourceKey) -> Option<&SourceState> {
        self.state.sources.get(&key.path)
    }

    /// Commits a written block, together with the source chunks whose events it holds.
    pub fn commit_block(&mut self, entry: BlockEntry, ingested: &[IngestedChunk]) -> Result<()> {
        self.state.blocks.push(entry);
        self.commit_ranges(ingested)
    }

    /// The last WAL sequence number of `tenant` whose events are in committed blocks (0: none).
    pub fn wal_committed(&self, tenant: &str) -> u64 {
        self.state.wal.get(tenant).copied().unwrap_or(0)
    }

    /// Commits blocks flushed from a server's memory together with the last WAL sequence
    /// number they hold, in one catalog write: after a crash, either both are there (replay
    /// starts after `wal_seq`) or neither (replay rebuilds them from the WAL).
    pub fn commit_flush(
        &mut self,
        entries: Vec<BlockEntry>,
        tenant: &str,
        wal_seq: u64,
    ) -> Result<()> {
        self.state.blocks.extend(entries);
        let committed = self.state.wal.entry(tenant.to_owned()).or_default();
        *committed = (*committed).max(wal_seq);
        self.save()
    }

    /// Records source chunks that produced no events (blank or malformed lines only).
    pub fn commit_ranges(&mut self, ingested: &[IngestedChunk]) -> Result<()> {
        for chunk in ingested {
            self.state
                .sources
                .entry(chunk.key.path.clone())
                .or_default()
                .add(chunk);
        }
        self.save()
    }

    /// Replaces a migrated source's [`LegacySource`] by ranges with fingerprints, once the
    /// indexer has checked that the file is the one version 1 indexed.
    pub fn upgrade_source(&mut self, key: &SourceKey, done: Vec<DoneRange>) -> Result<()> {
        let state = self.state.sources.entry(key.path.clone()).or_default();
        state.legacy = None;
        state.done = done;
        self.save()
    }

    /// Forgets what was ingested from a source, so that it is read again from its start (its
    /// events from earlier runs stay in their blocks).
    pub fn forget_source(&mut self, key: &SourceKey) -> Result<()> {
        if self.state.sources.remove(&key.path).is_some() {
            self.save()?;
        }
        Ok(())
    }

    /// Replaces blocks (by id) with new ones in one commit. The old blocks' bytes are the
    /// caller's to delete from their store, after this returns (a crash in between leaves
    /// blocks no catalog names, removed at the next open).
    pub fn replace_blocks(&mut self, removed: &[u64], added: Vec<BlockEntry>) -> Result<()> {
        self.state.blocks.retain(|b| !removed.contains(&b.id));
        self.state.blocks.extend(added);
        self.save()
    }

    /// Moves damaged blocks out of the catalog and into `DIR/damaged/` (kept for inspection,
    /// never read again). Each file is moved before the catalog stops listing it, so a crash in
    /// between leaves a listed block with no file, which the next repair drops; a block whose
    /// file is already gone is just dropped. Returns where each file went (None: no file).
    pub fn set_aside_blocks(&mut self, ids: &[u64]) -> Result<Vec<(u64, Option<PathBuf>)>> {
        let aside = self.dir.join(DAMAGED_DIR);
        std::fs::create_dir_all(&aside).map_err(|source| CatalogError::Io {
            path: aside.clone(),
            source,
        })?;
        let mut moved = Vec::with_capacity(ids.len());
        for &id in ids {
            let from = self.local_store().path(id);
            let to = aside.join(from.file_name().expect("block paths have a file name"));
            match std::fs::rename(&from, &to) {
                Ok(()) => moved.push((id, Some(to))),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => moved.push((id, None)),
                Err(source) => return Err(CatalogError::Io { path: from, source }),
            }
        }
        self.state.blocks.retain(|b| !ids.contains(&b.id));
        self.save()?;
        Ok(moved)
    }

    fn save(&mut self) -> Result<()> {
        let path = self.dir.join(CATALOG_FILE);
        let tmp = self.dir.join("catalog.json.tmp");
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| CatalogError::Io { path, source }
        };
        // unwrap: CatalogState has only string keys and plain data, so it always serializes.
        let bytes = serde_json::to_vec_pretty(&self.state).unwrap();
        let mut file = File::create(&tmp).map_err(io(&tmp))?;
        file.write_all(&bytes).map_err(io(&tmp))?;
        file.sync_all().map_err(io(&tmp))?;
        std::fs::rename(&tmp, &path).map_err(io(&path))?;
        File::open(&self.dir)
            .and_then(|d| d.sync_all())
            .map_err(io(&self.dir))?;
        Ok(())
    }

    /// Deletes block files (and temporary files) that no committed catalog names.
    fn remove_orphans(&self) -> Result<()> {
        let blocks_dir = self.dir.join(BLOCKS_DIR);
        let store = self.local_store();
        let listed: std::collections::HashSet<PathBuf> =
            self.state.blocks.iter().map(|b| store.path(b.id)).collect();
        let entries = std::fs::read_dir(&blocks_dir).map_err(|source| CatalogError::Io {
            path: blocks_dir.clone(),
            source,
        })?;
        for entry in entries.flatten() {
            let path = entry.path();
            if !listed.contains(&path) {
                let _ = std::fs::remove_file(&path);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(path: &str) -> SourceKey {
        SourceKey { path: path.into() }
    }

    /// A chunk of "/a" whose crc is its start (distinct per chunk, enough to tell them apart).
    fn chunk(start: u64, end: u64, line_at_end: u64, failed_lines: u64) -> IngestedChunk {
        IngestedChunk {
            key: key("/a"),
            sum: ChunkSum {
                start,
                end,
                crc32: start as u32,
            },
            line_at_end,
            failed_lines,
        }
    }

    fn sum(start: u64, end: u64) -> ChunkSum {
        ChunkSum {
            start,
            end,
            crc32: start as u32,
        }
    }

    #[test]
    fn source_ranges_coalesce_keeping_first_and_last_chunk() {
        let mut state = SourceState::default();
        state.add(&chunk(100, 200, 20, 1));
        state.add(&chunk(0, 100, 10, 0));
        state.add(&chunk(300, 400, 40, 2));
        state.add(&chunk(300, 400, 40, 2)); // committed twice: counted once
        state.add(&chunk(200, 250, 25, 4));
        let expected = vec![
            DoneRange {
                start: 0,
                end: 250,
                head: sum(0, 100),
                tail: sum(200, 250),
                line_at_end: 25,
                failed_lines: 5,
            },
            DoneRange {
                start: 300,
                end: 400,
                head: sum(300, 400),
                tail: sum(300, 400),
                line_at_end: 40,
                failed_lines: 2,
            },
        ];
        assert_eq!(state.done, expected);
        assert_eq!(
            (state.watermark(), state.end(), state.failed_lines()),
            (250, 400, 7)
        );
        assert!(state.contains(0, 50) && state.contains(150, 250) && state.contains(300, 400));
        assert!(
            !state.contains(150, 260) && !state.contains(250, 300) && !state.contains(350, 450)
        );
        assert_eq!(state.range_at(0).map(|r| r.end), Some(250));
        assert_eq!(state.range_at(300).map(|r| r.end), Some(400));
        assert!(state.range_at(100).is_none() && state.range_at(250).is_none());
        assert_eq!(state.next_start_after(0), Some(300));
        assert_eq!(state.next_start_after(250), Some(300));
        assert_eq!(state.next_start_after(300), None);
    }

    #[test]
    fn commits_survive_reopen_and_lock_excludes_second_writer() {
        let dir = tempfile::tempdir().unwrap();
        let settings = Settings {
            stop_words: vec!["the".into()],
            mapping: Mapping::from_json(r#"{"properties": {"id": {"type": "keyword"}}}"#).unwrap(),
        };
        {
            let mut catalog = Catalog::open_or_create(dir.path(), settings.clone()).unwrap();
            assert!(matches!(
                Catalog::open_or_create(dir.path(), Settings::default()),
                Err(CatalogError::Locked { .. })
            ));
            let id = catalog.allocate_block_id();
            std::fs::write(LocalDir::new(dir.path()).path(id), b"x").unwrap();
            let entry = BlockEntry {
                id,
                docs: 3,
                time_min: 1,
                time_max: 2,
                bytes: 1,
                open_from: 0,
            };
            catalog.commit_block(entry, &[chunk(0, 10, 3, 1)]).unwrap();
            // An orphan: written but never committed.
            std::fs::write(LocalDir::new(dir.path()).path(99), b"y").unwrap();
        }
        let mut catalog = Catalog::open_or_create(dir.path(), Settings::default()).unwrap();
        assert_eq!(catalog.settings(), &settings);
        assert_eq!(catalog.blocks().len(), 1);
        let state = catalog.source(&key("/a")).unwrap();
        assert!(state.contains(0, 10));
        assert_eq!((state.done[0].line_at_end, state.failed_lines()), (3, 1));
        assert!(catalog.source(&key("/b")).is_none());
        assert!(!LocalDir::new(dir.path()).path(99).exists());
        assert!(LocalDir::new(dir.path()).path(1).exists());

        catalog.forget_source(&key("/a")).unwrap();
        drop(catalog);
        let catalog = Catalog::open_or_create(dir.path(), Settings::default()).unwrap();
        assert!(catalog.source(&key("/a")).is_none());
        assert_eq!(catalog.blocks().len(), 1);
    }

    /// A version-1 catalog (as written by 0.1 at a9d1053): blocks and settings carry over;
    /// per path, only the newest (size, mtime) entry survives, as a legacy source.
    #[test]
    fn version_1_catalog_is_migrated() {
        let dir = tempfile::tempdir().unwrap();
        let v1 = r#"{
  "version": 1,
  "settings": { "stop_words": ["a"] },
  "next_block_id": 3,
  "blocks": [
    { "id": 1, "docs": 5, "time_min": 1, "time_max": 2, "bytes": 100 },
    { "id": 2, "docs": 6, "time_min": 3, "time_max": 4, "bytes": 200 }
  ],
  "sources": {
    "/logs/app.json|100|1000": {
      "key": { "path": "/logs/app.json", "size": 100, "mtime_ns": 1000 },
      "done": [[0, 100]]
    },
    "/logs/app.json|150|2000": {
      "key": { "path": "/logs/app.json", "size": 150, "mtime_ns": 2000 },
      "done": [[0, 60], [90, 150]]
    },
    "/logs/other.json|7|5": {
      "key": { "path": "/logs/other.json", "size": 7, "mtime_ns": 5 },
      "done": [[0, 7]]
    }
  }
}"#;
        std::fs::write(dir.path().join(CATALOG_FILE), v1).unwrap();
        std::fs::create_dir_all(dir.path().join(BLOCKS_DIR)).unwrap();
        for id in [1, 2] {
            std::fs::write(LocalDir::new(dir.path()).path(id), b"x").unwrap();
        }
        // Readers (search) read version 1 as it is.
        let (settings, blocks) = Catalog::read_only(dir.path()).unwrap();
        assert_eq!(settings.stop_words, vec!["a".to_owned()]);
        assert_eq!(blocks.len(), 2);

        let mut catalog = Catalog::open_or_create(dir.path(), Settings::default()).unwrap();
        assert_eq!(catalog.blocks().len(), 2);
        assert_eq!(catalog.allocate_block_id(), 3);
        let app = catalog.source(&key("/logs/app.json")).unwrap();
        assert!(app.done.is_empty());
        assert_eq!(
            app.legacy,
            Some(LegacySource {
                size: 150,
                mtime_ns: 2000,
                done: vec![(0, 60), (90, 150)],
            })
        );
        assert_eq!(
            catalog
                .source(&key("/logs/other.json"))
                .unwrap()
                .legacy
                .as_ref()
                .map(|l| l.size),
            Some(7)
        );
        // Upgrading replaces the legacy record; the catalog is saved as version 2.
        let range = DoneRange {
            start: 0,
            end: 7,
            head: sum(0, 7),
            tail: sum(0, 7),
            line_at_end: 2,
            failed_lines: 0,
        };
        catalog
            .upgrade_source(&key("/logs/other.json"), vec![range.clone()])
            .unwrap();
        drop(catalog);
        let text = std::fs::read_to_string(dir.path().join(CATALOG_FILE)).unwrap();
        assert!(text.contains("\"version\": 3"), "{text}");
        let catalog = Catalog::open_or_create(dir.path(), Settings::default()).unwrap();
        let other = catalog.source(&key("/logs/other.json")).unwrap();
        assert_eq!(
            (other.done.clone(), other.legacy.clone()),
            (vec![range], None)
        );
        assert!(catalog
            .source(&key("/logs/app.json"))
            .unwrap()
            .legacy
            .is_some());
    }

    #[test]
    fn newer_or_unknown_versions_are_refused() {
        for version in [0, CATALOG_VERSION + 1] {
            let dir = tempfile::tempdir().unwrap();
            let text = format!(
                r#"{{"version": {version}, "settings": {{}}, "next_block_id": 1, "blocks": [], "sources": {{}}}}"#
            );
            std::fs::write(dir.path().join(CATALOG_FILE), text).unwrap();
            assert!(
                matches!(
                    Catalog::open_or_create(dir.path(), Settings::default()),
                    Err(CatalogError::Version { got, .. }) if got == version
                ),
                "version {version}"
            );
        }
    }

    #[test]
    fn flushed_blocks_and_their_wal_position_commit_together() {
        let dir = tempfile::tempdir().unwrap();
        let mut catalog = Catalog::open_or_create(dir.path(), Settings::default()).unwrap();
        assert_eq!(catalog.wal_committed("default"), 0);
        let id = catalog.allocate_block_id();
        let entry = BlockEntry {
            id,
            docs: 3,
            time_min: 1,
            time_max: 2,
            bytes: 10,
            open_from: 0,
        };
        std::fs::write(LocalDir::new(dir.path()).path(id), b"block").unwrap();
        catalog
            .commit_flush(vec![entry.clone()], "default", 42)
            .unwrap();
        // A lower position never moves it back.
        catalog.commit_flush(Vec::new(), "default", 7).unwrap();
        drop(catalog);
        let catalog = Catalog::open_or_create(dir.path(), Settings::default()).unwrap();
        assert_eq!(catalog.wal_committed("default"), 42);
        assert_eq!(catalog.wal_committed("other"), 0);
        assert_eq!(catalog.blocks(), &[entry]);
    }
}
