//! What a server needs of the catalog, as a trait: the blocks that exist (by id) and the
//! commits that change them (with the WAL position). Where a block's bytes live is the block
//! store's (`block_store.rs`): the metastore speaks of ids only. The local data directory's
//! [`Catalog`] implements it and is the embedded default; [`crate::postgres::PgMetastore`]
//! keeps it in PostgreSQL, shared by several nodes. File ingest progress (`Catalog::source`, per-file
//! ranges) stays with the local catalog: `quarry index` reads local files.

use crate::catalog::{BlockEntry, Catalog, Result, Settings};
use crate::mapping::Mapping;
use crate::postgres::{PgMetastore, PgTenants, Postgres};
use crate::tenants::{LocalTenants, TenantRegistry};
use std::path::Path;
use std::sync::Arc;

pub trait Metastore: Send {
    /// Settings fixed when the data was created (they shape what blocks contain), and the
    /// field mapping, which may grow.
    fn settings(&self) -> &Settings;
    /// Grows the mapping by `update` (`Mapping::merged`) and commits it; returns the mapping
    /// now in force.
    fn set_mapping(&mut self, update: &Mapping) -> Result<Mapping>;
    /// Every committed block.
    fn blocks(&self) -> &[BlockEntry];
    /// Reserves a block id for a block about to be written (never one a committed block
    /// has; PostgreSQL's are never handed out twice at all).
    fn allocate_block_id(&mut self) -> Result<u64>;
    /// Adds written blocks with the last WAL sequence number of `tenant` they hold, in one
    /// commit.
    fn commit_flush(&mut self, entries: Vec<BlockEntry>, tenant: &str, wal_seq: u64) -> Result<()>;
    /// Replaces blocks by others in one commit (a merge, retention). The old blocks' bytes are
    /// the caller's to delete from the block store afterwards.
    fn replace_blocks(&mut self, removed: &[u64], added: Vec<BlockEntry>) -> Result<()>;
    /// The last WAL sequence number of `tenant` whose events are in committed blocks.
    fn wal_committed(&self, tenant: &str) -> u64;
    /// Whether this is a replica: a searcher's view of a catalog other nodes write, which
    /// refuses every write (`CatalogError::ReadOnly`).
    fn is_replica(&self) -> bool {
        false
    }
    /// A replica reads the committed settings and blocks again, a writer of a shared catalog
    /// the other writers' blocks and the settings; returns whether they changed. The local
    /// catalog is its own: nothing to read.
    fn refresh(&mut self) -> Result<bool> {
        Ok(false)
    }
    /// The writer this catalog commits as, where several nodes write one catalog
    /// (PostgreSQL): this indexer's, whose blocks are the ones listed. None for the local
    /// catalog, which its directory's one writer owns whole.
    fn writer(&self) -> Option<&str> {
        None
    }
    /// Where several nodes write one catalog: the other writers' blocks, as last read
    /// (`refresh`). A search sees them with `blocks`; flushes, merges and retention touch
    /// only `blocks`.
    fn others(&self) -> &[BlockEntry] {
        &[]
    }
    /// Which writer committed block `id`, as a replica knows it (a searcher serves the blocks
    /// of writers that do not answer for their own).
    fn writer_of(&self, id: u64) -> Option<&str> {
        let _ = id;
        None
    }
    /// Where several nodes write one catalog: takes over the blocks of the writers silent for
    /// `silent` or more (an indexer gone for good), which become this writer's (merged and
    /// expired with its own); those writers are fenced off. Returns the ids taken over.
    fn adopt_silent(&mut self, silent: std::time::Duration) -> Result<Vec<u64>> {
        let _ = silent;
        Ok(Vec::new())
    }
    /// After `CatalogError::Fenced`: whether the fence was another writer taking this one's
    /// blocks over (it then opened the catalog again, with none of its own, and commits
    /// again), not another process of the same writer (then it stays fenced off).
    fn reopen_if_adopted(&mut self) -> Result<bool> {
        Ok(false)
    }
}

impl Metastore for Catalog {
    fn settings(&self) -> &Settings {
        Catalog::settings(self)
    }

    fn set_mapping(&mut self, update: &Mapping) -> Result<Mapping> {
        Catalog::set_mapping(self, update)
    }

    fn blocks(&self) -> &[BlockEntry] {
        Catalog::blocks(self)
    }

    fn allocate_block_id(&mut self) -> Result<u64> {
        Ok(Catalog::allocate_block_id(self))
    }

    fn commit_flush(&mut self, entries: Vec<BlockEntry>, tenant: &str, wal_seq: u64) -> Result<()> {
        Catalog::commit_flush(self, entries, tenant, wal_seq)
    }

    fn replace_blocks(&mut self, removed: &[u64], added: Vec<BlockEntry>) -> Result<()> {
        Catalog::replace_blocks(self, removed, added)
    }

    fn wal_committed(&self, tenant: &str) -> u64 {
        Catalog::wal_committed(self, tenant)
    }
}

/// Where the catalogs and the tenant registry are kept: the data directory (`catalog.json`
/// per tenant and `tenants.json`, the embedded default) or a PostgreSQL database that several
/// nodes share (`--metastore postgres://...`).
#[derive(Debug, Clone, Default)]
pub enum MetastoreConfig {
    #[default]
    Local,
    Postgres(Arc<Postgres>),
}

impl MetastoreConfig {
    /// The metastore `url` names: `local` (or none) or `postgres://...` /
    /// `postgresql://...`, connected to and migrated.
    pub fn connect(url: Option<&str>) -> Result<MetastoreConfig> {
        match url {
            None | Some("local") => Ok(MetastoreConfig::Local),
            Some(url) if url.starts_with("postgres://") || url.starts_with("postgresql://") => {
                Ok(MetastoreConfig::Postgres(Postgres::connect(url)?))
            }
            Some(other) => Err(crate::catalog::CatalogError::Postgres {
                url: crate::postgres::shown_url(other),
                message: "a metastore is `local` or a postgres://USER@HOST:PORT/DATABASE URL"
                    .into(),
            }),
        }
    }

    pub fn is_local(&self) -> bool {
        matches!(self, MetastoreConfig::Local)
    }

    /// Opens catalog `name` for writing, creating it if new: the local catalog of `dir`, or
    /// the database's (then `dir`, which keeps the WAL and local files, is locked all the
    /// same, so one process writes it).
    pub fn open_catalog(&self, dir: &Path, name: &str) -> Result<Box<dyn Metastore>> {
        match self {
            MetastoreConfig::Local => {
                Ok(Box::new(Catalog::open_or_create(dir, Settings::default())?))
            }
            MetastoreConfig::Postgres(postgres) => {
                // The directory as a local catalog leaves it: blocks kept locally go in
                // `blocks/` (`LocalDir`).
                let blocks = dir.join(crate::block_store::BLOCKS_DIR);
                std::fs::create_dir_all(&blocks).map_err(|source| {
                    crate::catalog::CatalogError::Io {
                        path: blocks.clone(),
                        source,
                    }
                })?;
                let lock = crate::catalog::lock_dir(dir)?;
                let writer = writer_id(dir)?;
                let catalog = PgMetastore::open_or_create(
                    postgres.clone(),
                    name,
                    &writer,
                    Settings::default(),
                )?;
                Ok(Box::new(catalog.holding(lock)))
            }
        }
    }

    /// The committed settings and blocks of catalog `name` (in `dir` when local), for a
    /// reader: no lock, no writer fenced off.
    pub fn read_catalog(&self, dir: &Path, name: &str) -> Result<(Settings, Vec<BlockEntry>)> {
        match self {
            MetastoreConfig::Local => Catalog::read_only(dir),
            MetastoreConfig::Postgres(postgres) => PgMetastore::read(postgres, name),
        }
    }

    /// A searcher's read-only view of catalog `name`, following what the indexers commit
    /// (`Metastore::refresh`). Only a shared metastore has one: a local catalog is its one
    /// process's.
    pub fn open_replica(&self, name: &str) -> Result<Box<dyn Metastore>> {
        match self {
            MetastoreConfig::Local => Err(crate::catalog::CatalogError::Postgres {
                url: "local".into(),
                message: "a searcher follows a shared metastore: give --metastore postgres://..."
                    .into(),
            }),
            MetastoreConfig::Postgres(postgres) => Ok(Box::new(crate::postgres::PgReplica::open(
                postgres.clone(),
                name,
            )?)),
        }
    }

    /// The cluster's membership table, with a shared metastore.
    /// Traffic control's shared state, with a shared (PostgreSQL) metastore.
    pub fn traffic(&self) -> Option<crate::members::Traffic> {
        match self {
            MetastoreConfig::Local => None,
            MetastoreConfig::Postgres(postgres) => {
                Some(crate::members::Traffic::new(postgres.clone()))
            }
        }
    }

    pub fn members(&self) -> Option<crate::members::Members> {
        match self {
            MetastoreConfig::Local => None,
            MetastoreConfig::Postgres(postgres) => {
                Some(crate::members::Members::new(postgres.clone()))
            }
        }
    }

    /// The tenant registry (`DATA/tenants.json` when local).
    pub fn registry(&self, data: &Path) -> Box<dyn TenantRegistry> {
        match self {
            MetastoreConfig::Local => Box::new(LocalTenants::new(data)),
            MetastoreConfig::Postgres(postgres) => Box::new(PgTenants::new(postgres.clone())),
        }
    }

    /// Removes catalog `name` with a deleted tenant (a local catalog goes with its
    /// directory, which is the caller's).
    pub fn drop_catalog(&self, name: &str) -> Result<()> {
        match self {
            MetastoreConfig::Local => Ok(()),
            MetastoreConfig::Postgres(postgres) => PgMetastore::drop_catalog(postgres, name),
        }
    }

    /// `local` or the database's URL without its password, for messages.
    pub fn describe(&self) -> String {
        match self {
            MetastoreConfig::Local => "local".to_owned(),
            MetastoreConfig::Postgres(postgres) => postgres.url().to_owned(),
        }
    }
}

/// The name `dir` writes a shared catalog as: made up the first time (random, kept in
/// `DIR/writer`), the same for as long as the directory (its WAL) lives, so a restarted node
/// takes up its own blocks and WAL checkpoint and no other's.
pub fn writer_id(dir: &Path) -> Result<String> {
    made_up_id(dir, WRITER_FILE)
}

/// The id of the node whose data directory is `data` (kept in `DATA/node`, made up the first
/// time): a member of a cluster is known by it across restarts at other addresses.
pub fn node_id(data: &Path) -> Result<String> {
    made_up_id(data, NODE_FILE)
}

/// A random id kept in `dir/file`, made up the first time.
fn made_up_id(dir: &Path, file: &str) -> Result<String> {
    use std::hash::{BuildHasher, Hasher};
    let path = dir.join(file);
    let io = |source| crate::catalog::CatalogError::Io {
        path: path.clone(),
        source,
    };
    match std::fs::read_to_string(&path) {
        Ok(text) if !text.trim().is_empty() => return Ok(text.trim().to_owned()),
        Ok(_) => {}
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(error) => return Err(io(error)),
    }
    // Randomly keyed hashers are the standard library's source of randomness.
    let mut random = std::collections::hash_map::RandomState::new().build_hasher();
    random.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos(),
    );
    random.write_u32(std::process::id());
    let id = format!("{:016x}", random.finish());
    let temporary = dir.join(format!("{file}.tmp"));
    let write = || -> std::io::Result<()> {
        let mut file = std::fs::File::create(&temporary)?;
        std::io::Write::write_all(&mut file, format!("{id}\n").as_bytes())?;
        file.sync_all()?;
        std::fs::rename(&temporary, &path)?;
        std::fs::File::open(dir)?.sync_all()
    };
    write().map_err(io)?;
    Ok(id)
}

/// The file in a catalog's directory that names its writer (`writer_id`).
const WRITER_FILE: &str = "writer";
/// The file in a data directory that names its node (`node_id`).
const NODE_FILE: &str = "node";
