//! Quarry's storage side. For now: the local data directory's catalog (which blocks exist, what
//! was ingested from which file). Later: the WAL, object storage, the PostgreSQL metastore,
//! the block cache and retention.

pub mod block_file;
pub mod catalog;

pub use block_file::write_block_file;
pub use catalog::{BlockEntry, Catalog, CatalogError, Settings, SourceKey, SourceState};
