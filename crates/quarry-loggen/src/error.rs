/// Errors of the log generator.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoggenError {
    #[error(
        "bad time range [{start_ms}, {end_ms}) ms: it must be non-empty and within years 1970 to 9999"
    )]
    TimeRange { start_ms: i64, end_ms: i64 },
    #[error("{name} must be at least 1")]
    ZeroCount { name: &'static str },
    #[error("the Zipf exponent must be finite and >= 0, got {exponent}")]
    ZipfExponent { exponent: f64 },
    #[error("embedded Loghub data of {system}: {source}")]
    EmbeddedJson {
        system: &'static str,
        #[source]
        source: serde_json::Error,
    },
    #[error("embedded Loghub data of {system}, template {template:?}: {reason}")]
    EmbeddedTemplate {
        system: &'static str,
        template: String,
        reason: &'static str,
    },
    #[error("writing events: {0}")]
    Write(#[from] std::io::Error),
}
