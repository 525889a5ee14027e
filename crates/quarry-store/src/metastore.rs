//! What a server needs of the catalog, as a trait: the blocks that exist (by id) and the
//! commits that change them (with the WAL position). Where a block's bytes live is the block
//! store's (`block_store.rs`): the metastore speaks of ids only. The local data directory's
//! [`Catalog`] implements it and is the embedded default; [`crate::postgres::PgMetastore`]
//! keeps it in PostgreSQL, shared by several nodes. File ingest progress (`Catalog::source`, per-file
//! ranges) stays with the local catalog: `quarry index` reads local files.

use crate::catalog::{BlockEntry, Catalog, Result, Settings};
use crate::mapping::Mapping;

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
