//! Quarry's storage side. The local data directory's catalog (which blocks exist, what was
//! ingested from which file) and the write-ahead log. Later: object storage, the PostgreSQL metastore,
//! the block cache and retention.

pub mod block_file;
pub mod catalog;
pub mod date;
pub mod mapping;
pub mod metastore;
pub mod wal;

pub use block_file::{write_block_bytes, write_block_file};
pub use catalog::{BlockEntry, Catalog, CatalogError, Settings, SourceKey, SourceState};
pub use mapping::{FieldMapping, FieldType, Mapping, MappingError, NumberType};
pub use metastore::Metastore;
pub use wal::{Replay, Wal, WalError, WalRecord};
