//! Quarry's storage side. For now: the local data directory's catalog (which blocks exist, what
//! was ingested from which file). Later: the WAL, object storage, the PostgreSQL metastore,
//! the block cache and retention.

pub mod catalog;

pub use catalog::{BlockEntry, Catalog, CatalogError, Settings, SourceKey, SourceState};
