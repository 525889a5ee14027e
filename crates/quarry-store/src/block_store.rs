//! Where blocks' bytes live, as a trait: the one way blocks are written, read and deleted.
//! A block is named by its [`BlockId`] (its number in the tenant's catalog); the metastore
//! speaks of ids only, and the store alone knows where an id's bytes are. [`LocalDir`], a
//! data directory's `blocks/`, is the first implementation and the embedded default; an
//! object store is the next (issue 28).
//!
//! A block is stored whole and never changed: `put` makes it durable before it returns (the
//! catalog names a block only after that), and `delete` comes only after the catalog stopped
//! naming it. Ids a store holds that no catalog names are garbage a later pass removes (a crash
//! between the write and the commit leaves one).

use crate::catalog::BlockEntry;
use quarry_format::block::BlockInput;
use quarry_format::{BlockReader, FormatError};
use std::fs::File;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A block's identity: its number in the tenant's catalog, unique for the life of the data.
pub type BlockId = u64;

pub trait BlockStore: Send + Sync + std::fmt::Debug {
    /// Encodes `input` as block `id` and stores it durably; returns its catalog entry.
    fn put(&self, id: BlockId, input: BlockInput) -> Result<BlockEntry, FormatError>;
    /// Stores the encoded block `bytes` (a server's in-memory block) as block `id`, durably.
    fn put_bytes(&self, id: BlockId, bytes: &[u8]) -> Result<(), FormatError>;
    /// Opens the block `block` names for reading.
    fn open(&self, block: &BlockEntry) -> Result<BlockReader, FormatError>;
    /// The bytes `range` of block `id`.
    fn read_range(&self, id: BlockId, range: Range<u64>) -> Result<Vec<u8>, FormatError>;
    /// Deletes block `id`; one already gone is not an error.
    fn delete(&self, id: BlockId) -> Result<(), FormatError>;
    /// The ids of every block stored.
    fn list(&self) -> Result<Vec<BlockId>, FormatError>;
    /// Where block `id` is, for messages and for errors to name (a file here).
    fn location(&self, id: BlockId) -> PathBuf;
    /// How many blocks to open at once (`open_all`): 1 for a local directory, whose opens
    /// are CPU work; more for a remote store, whose opens wait on the network.
    fn parallel_opens(&self) -> usize {
        1
    }
    /// The block whose location is `location`, among `ids` (an error names the location of
    /// the block it came from).
    fn find(&self, location: &Path, ids: &[BlockId]) -> Option<BlockId> {
        ids.iter()
            .copied()
            .find(|&id| self.location(id) == location)
    }
}

/// Opens the blocks `entries` name, in their order, `store.parallel_opens()` at a time: a
/// server over object storage opens its blocks in about one round trip per that many.
pub fn open_all(
    store: &dyn BlockStore,
    entries: &[BlockEntry],
) -> Vec<Result<BlockReader, FormatError>> {
    let parallel = store.parallel_opens().max(1);
    if parallel == 1 || entries.len() < 2 {
        return entries.iter().map(|entry| store.open(entry)).collect();
    }
    let mut opened = Vec::with_capacity(entries.len());
    for group in entries.chunks(parallel) {
        std::thread::scope(|scope| {
            let handles: Vec<_> = group
                .iter()
                .map(|entry| scope.spawn(move || store.open(entry)))
                .collect();
            opened.extend(
                handles
                    .into_iter()
                    .map(|handle| handle.join().expect("opening a block does not panic")),
            );
        });
    }
    opened
}

/// The directory that holds a tenant's block files.
pub const BLOCKS_DIR: &str = "blocks";
const BLOCK_EXTENSION: &str = "qblk";

/// Blocks as files `DIR/blocks/NNNNNNNN.qblk`, opened mapped (`BlockReader::open`).
#[derive(Debug, Clone)]
pub struct LocalDir {
    blocks: PathBuf,
}

impl LocalDir {
    /// The blocks of the data directory `dir` (its `blocks/` directory).
    pub fn new(dir: &Path) -> LocalDir {
        LocalDir {
            blocks: dir.join(BLOCKS_DIR),
        }
    }

    /// The file of block `id`.
    pub fn path(&self, id: BlockId) -> PathBuf {
        self.blocks.join(format!("{id:08}.{BLOCK_EXTENSION}"))
    }

    /// A shared handle, as servers hold stores.
    pub fn shared(dir: &Path) -> Arc<dyn BlockStore> {
        Arc::new(LocalDir::new(dir))
    }
}

impl BlockStore for LocalDir {
    fn put(&self, id: BlockId, input: BlockInput) -> Result<BlockEntry, FormatError> {
        let path = self.path(id);
        let manifest = crate::block_file::write_block_file(&path, input)?;
        let bytes = std::fs::metadata(&path)
            .map_err(|source| FormatError::Io {
                path: path.clone(),
                source,
            })?
            .len();
        Ok(BlockEntry::of(id, &manifest, bytes))
    }

    fn put_bytes(&self, id: BlockId, bytes: &[u8]) -> Result<(), FormatError> {
        let path = self.path(id);
        crate::block_file::write_block_bytes(&path, bytes)
            .map_err(|source| FormatError::Io { path, source })
    }

    fn open(&self, block: &BlockEntry) -> Result<BlockReader, FormatError> {
        Ok(BlockReader::open(&self.path(block.id))?.with_id(block.id))
    }

    fn read_range(&self, id: BlockId, range: Range<u64>) -> Result<Vec<u8>, FormatError> {
        use std::os::unix::fs::FileExt;
        let path = self.path(id);
        let io = |source| FormatError::Io {
            path: path.clone(),
            source,
        };
        let file = File::open(&path).map_err(io)?;
        let len = usize::try_from(range.end.saturating_sub(range.start)).unwrap_or(usize::MAX);
        let mut bytes = vec![0; len];
        file.read_exact_at(&mut bytes, range.start).map_err(io)?;
        Ok(bytes)
    }

    fn delete(&self, id: BlockId) -> Result<(), FormatError> {
        let path = self.path(id);
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(FormatError::Io { path, source: e })
            }
            _ => Ok(()),
        }
    }

    fn list(&self) -> Result<Vec<BlockId>, FormatError> {
        let entries = std::fs::read_dir(&self.blocks).map_err(|source| FormatError::Io {
            path: self.blocks.clone(),
            source,
        })?;
        let mut ids: Vec<BlockId> = entries
            .flatten()
            .filter_map(|entry| {
                let name = entry.file_name();
                let stem = name
                    .to_str()?
                    .strip_suffix(&format!(".{BLOCK_EXTENSION}"))?;
                stem.parse().ok()
            })
            .collect();
        ids.sort_unstable();
        Ok(ids)
    }

    fn location(&self, id: BlockId) -> PathBuf {
        self.path(id)
    }
}

/// Where a server's or a command's blocks are: the data directory (the default) or object
/// storage. The catalog, the WAL and the tenants stay in the data directory either way.
#[derive(Debug, Clone, Default)]
pub enum Storage {
    #[default]
    Local,
    Object(crate::object_blocks::ObjectStorage),
}

impl Storage {
    /// The block store of tenant `tenant`, whose catalog is in `dir`.
    pub fn tenant_store(&self, dir: &Path, tenant: &str) -> Arc<dyn BlockStore> {
        match self {
            Storage::Local => LocalDir::shared(dir),
            Storage::Object(storage) => Arc::new(storage.tenant_blocks(tenant)),
        }
    }

    pub fn is_local(&self) -> bool {
        matches!(self, Storage::Local)
    }

    /// `local` or the object store's URL, for messages.
    pub fn describe(&self) -> String {
        match self {
            Storage::Local => "local".to_owned(),
            Storage::Object(storage) => storage.url().to_owned(),
        }
    }
}

// The store contract is tested on a local directory and on S3 in tests/object_blocks.rs.
