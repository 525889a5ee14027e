use crate::parser::ParseError;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum QueryError {
    /// The query text is malformed; the error names the position.
    #[error("bad query: {0}")]
    Parse(#[from] ParseError),
    #[error(transparent)]
    Format(#[from] quarry_format::FormatError),
    #[error(transparent)]
    Catalog(#[from] quarry_store::CatalogError),
}

pub type Result<T, E = QueryError> = std::result::Result<T, E>;
