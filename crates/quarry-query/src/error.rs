use crate::parser::ParseError;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum QueryError {
    /// The query text is malformed; the error names the position.
    #[error("bad query: {0}")]
    Parse(#[from] ParseError),
    #[error(transparent)]
    Format(#[from] quarry_format::FormatError),
    #[error(
        "the histogram would have {buckets} buckets, more than {limit}: use a larger interval"
    )]
    TooManyBuckets { buckets: i64, limit: i64 },
    #[error(
        "the aggregations would make more than {limit} buckets (Elasticsearch's \
         search.max_buckets): ask for fewer (a larger interval, a smaller size)"
    )]
    TooManyAggregationBuckets { limit: usize },
    /// A request that is well-formed but cannot be answered (e.g. a bad aggregation).
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Catalog(#[from] quarry_store::CatalogError),
}

pub type Result<T, E = QueryError> = std::result::Result<T, E>;
