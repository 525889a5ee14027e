//! The schema: tantivy-logs' fields (bench/logs/PROTOCOL.md, "Events"), plus `marker`, the
//! keyword the driver's time-to-searchable probe looks up, and `_source`, the event as sent.
//!
//! | field | tantivy field |
//! |---|---|
//! | `_time` | date, INDEXED + FAST, millisecond precision in the column |
//! | keyword (`tenant`, `service`, `host`, `level`, `method`, `client_ip`) | text through the `keyword` analyzer (raw tokenizer + lowercase), basic postings, no norms, FAST |
//! | `message`, `path` | text through tantivy's `default` analyzer, with frequencies and positions |
//! | `status`, `latency_ms`, `bytes` | i64, INDEXED + FAST |
//! | `marker` | keyword, indexed only |
//! | `_source` | the document's JSON line, STORED only (tantivy's doc store), as the Lucene peer and Quarry keep the event |
//!
//! Unlike tantivy-logs the index is **not sorted** by `_time`: an ingest-side sort reorders every
//! segment a commit flushes, and neither Elasticsearch (no index sort by default) nor Quickwit
//! sorts what it ingests.

use logs_driver::schema::{FieldKind, FIELDS};
use tantivy::schema::{
    DateOptions, DateTimePrecision, Field, IndexRecordOption, NumericOptions, Schema,
    TextFieldIndexing, TextOptions, STORED,
};
use tantivy::tokenizer::{LowerCaser, RawTokenizer, TextAnalyzer};
use tantivy::Index;

pub const KEYWORD_TOKENIZER: &str = "keyword";
const TEXT_TOKENIZER: &str = "default";
pub const MARKER: &str = "marker";
pub const SOURCE: &str = "_source";

fn keyword_indexing() -> TextFieldIndexing {
    TextFieldIndexing::default()
        .set_tokenizer(KEYWORD_TOKENIZER)
        .set_index_option(IndexRecordOption::Basic)
        .set_fieldnorms(false)
}

pub fn build() -> Schema {
    let mut builder = Schema::builder();
    for &(name, kind) in FIELDS {
        match kind {
            FieldKind::Time => {
                builder.add_date_field(
                    name,
                    DateOptions::default()
                        .set_indexed()
                        .set_fast()
                        .set_precision(DateTimePrecision::Milliseconds),
                );
            }
            FieldKind::Keyword => {
                builder.add_text_field(
                    name,
                    TextOptions::default()
                        .set_indexing_options(keyword_indexing())
                        .set_fast(KEYWORD_TOKENIZER),
                );
            }
            FieldKind::Text => {
                builder.add_text_field(
                    name,
                    TextOptions::default().set_indexing_options(
                        TextFieldIndexing::default()
                            .set_tokenizer(TEXT_TOKENIZER)
                            .set_index_option(IndexRecordOption::WithFreqsAndPositions),
                    ),
                );
            }
            FieldKind::Integer => {
                builder.add_i64_field(name, NumericOptions::default().set_indexed().set_fast());
            }
        }
    }
    builder.add_text_field(
        MARKER,
        TextOptions::default().set_indexing_options(keyword_indexing()),
    );
    builder.add_text_field(SOURCE, STORED);
    builder.build()
}

/// Analyzers are not stored in the index: every `Index` handle registers the keyword one.
pub fn register_tokenizers(index: &Index) {
    let keyword = || {
        TextAnalyzer::builder(RawTokenizer::default())
            .filter(LowerCaser)
            .build()
    };
    index.tokenizers().register(KEYWORD_TOKENIZER, keyword());
    index
        .fast_field_tokenizer()
        .register(KEYWORD_TOKENIZER, keyword());
}

/// The tantivy field of every event field the schema indexes, resolved once.
#[derive(Clone, Copy, Debug)]
pub struct Fields {
    pub time: Field,
    /// `tenant`, `service`, `host`, `level`, `method`, `client_ip`, in that order.
    pub keywords: [Field; 6],
    pub message: Field,
    pub path: Field,
    /// `status`, `latency_ms`, `bytes`, in that order.
    pub integers: [Field; 3],
    pub marker: Field,
    pub source: Field,
}

impl Fields {
    pub fn of(schema: &Schema) -> tantivy::Result<Fields> {
        let field = |name: &str| schema.get_field(name);
        Ok(Fields {
            time: field("_time")?,
            keywords: [
                field("tenant")?,
                field("service")?,
                field("host")?,
                field("level")?,
                field("method")?,
                field("client_ip")?,
            ],
            message: field("message")?,
            path: field("path")?,
            integers: [field("status")?, field("latency_ms")?, field("bytes")?],
            marker: field(MARKER)?,
            source: field(SOURCE)?,
        })
    }
}
