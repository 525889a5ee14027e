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
    /// A replica reads the committed settings and blocks again; returns whether they
    /// changed. A writer's catalog is its own: nothing to read.
    fn refresh(&mut self) -> Result<bool> {
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
                let catalog =
                    PgMetastore::open_or_create(postgres.clone(), name, Settings::default())?;
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
