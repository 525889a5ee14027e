use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IndexError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Format(#[from] quarry_format::FormatError),
    #[error(transparent)]
    Catalog(#[from] quarry_store::CatalogError),
}

pub type Result<T, E = IndexError> = std::result::Result<T, E>;
