//! Quarry's storage side: the block store (where blocks' bytes live: a local directory or
//! S3-compatible object storage with a disk cache), the local data directory's catalog (which
//! blocks exist, what was ingested from which file), the tenant registry and the write-ahead
//! log; the metastore (catalogs and tenant registry) on PostgreSQL (`postgres.rs`).

pub mod block_file;
pub mod block_store;
pub mod catalog;
pub mod date;
pub mod disk_cache;
pub mod mapping;
pub mod members;
pub mod metastore;
pub mod object_blocks;
pub mod postgres;
pub mod tenants;
pub mod wal;

pub use block_file::{write_block_bytes, write_block_file};
pub use block_store::{BlockId, BlockStore, LocalDir, Storage};
pub use catalog::{BlockEntry, Catalog, CatalogError, Settings, SourceKey, SourceState};
pub use disk_cache::DiskCache;
pub use mapping::{FieldMapping, FieldType, Mapping, MappingError, NumberType};
pub use metastore::{Metastore, MetastoreConfig};
pub use object_blocks::{ObjectBlocks, ObjectStorage};
pub use tenants::{LocalTenants, TenantRegistry, TenantSpec};
pub use wal::{Replay, Wal, WalError, WalRecord};
