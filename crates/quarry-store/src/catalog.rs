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
//! inside large files"): for each source file (identified by path, size and mtime) the catalog
//! keeps the byte ranges (of its decompressed stream) whose events are in committed blocks. A
//! re-run skips those ranges, so an interrupted run resumes and a repeated run adds nothing.

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
    #[error("{path}: data directory is in use by another quarry process")]
    Locked { path: PathBuf },
    #[error("{path}: catalog version {got} is newer than this build reads ({expected})")]
    Version {
        path: PathBuf,
        expected: u32,
        got: u32,
    },
}

pub type Result<T, E = CatalogError> = std::result::Result<T, E>;

const CATALOG_VERSION: u32 = 1;
const CATALOG_FILE: &str = "catalog.json";
const BLOCKS_DIR: &str = "blocks";
const BLOCK_EXTENSION: &str = "qblk";
/// Where `quarry check --repair` moves damaged blocks.
const DAMAGED_DIR: &str = "damaged";

/// Settings fixed when the data directory is created (they shape what blocks contain).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    /// Stop words removed by the analyzer, lowercased; empty by default.
    #[serde(default)]
    pub stop_words: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BlockEntry {
    pub id: u64,
    pub docs: u64,
    pub time_min: i64,
    pub time_max: i64,
    pub bytes: u64,
}

/// Identity of an input file: same path, size and modification time means same content.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct SourceKey {
    pub path: String,
    pub size: u64,
    pub mtime_ns: i128,
}

impl SourceKey {
    pub fn of_file(path: &Path) -> std::io::Result<SourceKey> {
        let canonical = std::fs::canonicalize(path)?;
        let meta = std::fs::metadata(&canonical)?;
        let mtime_ns = meta
            .modified()?
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as i128)
            .unwrap_or(0);
        Ok(SourceKey {
            path: canonical.to_string_lossy().into_owned(),
            size: meta.len(),
            mtime_ns,
        })
    }

    fn as_string(&self) -> String {
        format!("{}|{}|{}", self.path, self.size, self.mtime_ns)
    }
}

/// What was ingested from one source: sorted, disjoint, non-adjacent byte ranges.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SourceState {
    pub key: Option<SourceKey>,
    pub done: Vec<(u64, u64)>,
}

impl SourceState {
    /// Whether `[start, end)` lies entirely within ingested ranges.
    pub fn contains(&self, start: u64, end: u64) -> bool {
        let i = self.done.partition_point(|&(_, e)| e < end);
        self.done
            .get(i)
            .is_some_and(|&(s, e)| s <= start && end <= e)
    }

    /// The high watermark: everything before it is ingested.
    pub fn watermark(&self) -> u64 {
        match self.done.first() {
            Some(&(0, end)) => end,
            _ => 0,
        }
    }

    fn add(&mut self, start: u64, end: u64) {
        self.done.push((start, end));
        self.done.sort_unstable();
        let mut merged: Vec<(u64, u64)> = Vec::with_capacity(self.done.len());
        for &(s, e) in &self.done {
            match merged.last_mut() {
                Some(last) if s <= last.1 => last.1 = last.1.max(e),
                _ => merged.push((s, e)),
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
    /// Keyed by `SourceKey::as_string` (JSON object keys must be strings).
    sources: BTreeMap<String, SourceState>,
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
        let lock_path = dir.join(".lock");
        let lock = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(io(&lock_path))?;
        if lock.try_lock().is_err() {
            return Err(CatalogError::Locked {
                path: dir.to_path_buf(),
            });
        }
        let path = dir.join(CATALOG_FILE);
        let state = match std::fs::read(&path) {
            Ok(bytes) => {
                let state: CatalogState =
                    serde_json::from_slice(&bytes).map_err(|source| CatalogError::Corrupt {
                        path: path.clone(),
                        source,
                    })?;
                if state.version > CATALOG_VERSION {
                    return Err(CatalogError::Version {
                        path,
                        expected: CATALOG_VERSION,
                        got: state.version,
                    });
                }
                state
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => CatalogState {
                version: CATALOG_VERSION,
                settings,
                next_block_id: 1,
                ..Default::default()
            },
            Err(e) => return Err(io(&path)(e)),
        };
        let mut catalog = Catalog {
            dir: dir.to_path_buf(),
            state,
            _lock: lock,
        };
        catalog.save()?;
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
        let state: CatalogState = serde_json::from_slice(&bytes)
            .map_err(|source| CatalogError::Corrupt { path, source })?;
        Ok((state.settings, state.blocks))
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn settings(&self) -> &Settings {
        &self.state.settings
    }

    pub fn blocks(&self) -> &[BlockEntry] {
        &self.state.blocks
    }

    pub fn block_path(dir: &Path, id: u64) -> PathBuf {
        dir.join(BLOCKS_DIR)
            .join(format!("{id:08}.{BLOCK_EXTENSION}"))
    }

    /// Reserves a block id (not persisted until a block with it is committed; ids of blocks
    /// that were never committed are simply skipped).
    pub fn allocate_block_id(&mut self) -> u64 {
        let id = self.state.next_block_id;
        self.state.next_block_id += 1;
        id
    }

    pub fn source(&self, key: &SourceKey) -> Option<&SourceState> {
        self.state.sources.get(&key.as_string())
    }

    /// Commits a written block, together with the source ranges whose events it holds.
    pub fn commit_block(
        &mut self,
        entry: BlockEntry,
        ingested: &[(SourceKey, u64, u64)],
    ) -> Result<()> {
        self.state.blocks.push(entry);
        self.commit_ranges(ingested)
    }

    /// Records source ranges that produced no events (blank or malformed lines only).
    pub fn commit_ranges(&mut self, ingested: &[(SourceKey, u64, u64)]) -> Result<()> {
        for (key, start, end) in ingested {
            let state = self.state.sources.entry(key.as_string()).or_default();
            state.key = Some(key.clone());
            state.add(*start, *end);
        }
        self.save()
    }

    /// Replaces blocks (by id) with new ones in one commit, then deletes the old files.
    pub fn replace_blocks(&mut self, removed: &[u64], added: Vec<BlockEntry>) -> Result<()> {
        self.state.blocks.retain(|b| !removed.contains(&b.id));
        self.state.blocks.extend(added);
        self.save()?;
        for &id in removed {
            let path = Self::block_path(&self.dir, id);
            std::fs::remove_file(&path).map_err(|source| CatalogError::Io { path, source })?;
        }
        Ok(())
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
            let from = Self::block_path(&self.dir, id);
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
        let listed: std::collections::HashSet<PathBuf> = self
            .state
            .blocks
            .iter()
            .map(|b| Self::block_path(&self.dir, b.id))
            .collect();
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
        SourceKey {
            path: path.into(),
            size: 10,
            mtime_ns: 1,
        }
    }

    #[test]
    fn source_ranges_merge_and_answer_containment() {
        let mut state = SourceState::default();
        state.add(100, 200);
        state.add(0, 100);
        state.add(300, 400);
        assert_eq!(state.done, vec![(0, 200), (300, 400)]);
        assert_eq!(state.watermark(), 200);
        assert!(state.contains(0, 50) && state.contains(150, 200) && state.contains(300, 400));
        assert!(
            !state.contains(150, 250) && !state.contains(200, 300) && !state.contains(350, 450)
        );
    }

    #[test]
    fn commits_survive_reopen_and_lock_excludes_second_writer() {
        let dir = tempfile::tempdir().unwrap();
        let settings = Settings {
            stop_words: vec!["the".into()],
        };
        {
            let mut catalog = Catalog::open_or_create(dir.path(), settings.clone()).unwrap();
            assert!(matches!(
                Catalog::open_or_create(dir.path(), Settings::default()),
                Err(CatalogError::Locked { .. })
            ));
            let id = catalog.allocate_block_id();
            std::fs::write(Catalog::block_path(dir.path(), id), b"x").unwrap();
            let entry = BlockEntry {
                id,
                docs: 3,
                time_min: 1,
                time_max: 2,
                bytes: 1,
            };
            catalog.commit_block(entry, &[(key("/a"), 0, 10)]).unwrap();
            // An orphan: written but never committed.
            std::fs::write(Catalog::block_path(dir.path(), 99), b"y").unwrap();
        }
        let catalog = Catalog::open_or_create(dir.path(), Settings::default()).unwrap();
        assert_eq!(catalog.settings(), &settings);
        assert_eq!(catalog.blocks().len(), 1);
        assert!(catalog.source(&key("/a")).unwrap().contains(0, 10));
        assert!(catalog.source(&key("/b")).is_none());
        assert!(!Catalog::block_path(dir.path(), 99).exists());
        assert!(Catalog::block_path(dir.path(), 1).exists());
    }
}
