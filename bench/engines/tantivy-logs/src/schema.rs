//! The log schema in tantivy: one tantivy field per field of PROTOCOL.md, typed by its
//! [`FieldKind`], and the index sorted by `_time`, newest first.
//!
//! | kind | tantivy field |
//! |---|---|
//! | `_time` | date, INDEXED + FAST + STORED, millisecond precision in the column |
//! | keyword | text through the `keyword` analyzer (raw tokenizer + lowercase), basic postings (no frequencies, positions or norms), FAST through the same analyzer (a dictionary-encoded string column, for TERMS), STORED as given |
//! | text | text through tantivy's `default` analyzer (split on non-alphanumerics, drop tokens over 40 bytes, lowercase), with frequencies and positions, STORED |
//! | integer | i64, INDEXED + FAST + STORED |
//!
//! Every field is stored, in tantivy's document store (LZ4 blocks of 16 KB, the default):
//! TAILEV returns the events, as a log engine's search does. The other answers come from
//! columns (`_time` for TAIL and HEAD), never from documents.
//!
//! **Sort.** `IndexSettings::sort_by_field` on `_time`, descending, the Lucene peer's index sort
//! too: newest first is the order a log tail reads. tantivy 0.27's top-k collector
//! (`TopDocs::order_by_fast_field`) does not stop early on a sorted segment, it scores every
//! match against its threshold, so TAIL is not faster for it; what the sort buys tantivy is
//! locality (events of one time range are neighbours, so `_time` ranges and histograms touch
//! contiguous column blocks, and the monotonic `_time` column compresses well). It costs a
//! reordering at every segment flush and a sorted merge.
//!
//! **Message-only schema.** `index --schema message` ([`SchemaKind::Message`]) indexes events
//! that have only a `message` (Loghub lines wrapped as `{"message": line}`, for the size table
//! of bench/run-sizes.sh): one text field as above (default analyzer, frequencies and
//! positions, stored), no `_time` and no index sort. `serve` does not read such an index.

use anyhow::Context;
use logs_driver::schema::{FieldKind, FIELDS, TIME};
use tantivy::schema::{
    DateOptions, DateTimePrecision, Field, IndexRecordOption, NumericOptions, Schema,
    TextFieldIndexing, TextOptions,
};
use tantivy::tokenizer::{LowerCaser, RawTokenizer, TextAnalyzer};
use tantivy::{Index, IndexSettings, IndexSortByField, Order};

/// The analyzer of keyword fields: the whole value, lowercased.
pub const KEYWORD_TOKENIZER: &str = "keyword";
/// tantivy's default analyzer, for `message` and `path`.
const TEXT_TOKENIZER: &str = "default";

/// Which schema `index` builds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum SchemaKind {
    /// Every field of PROTOCOL.md, sorted by `_time` (the log benchmark's index).
    Logs,
    /// Only `message`, a text field with positions, stored; no sort.
    Message,
}

/// The field of [`SchemaKind::Message`].
pub const MESSAGE: &str = "message";

/// The schema of [`SchemaKind::Message`].
pub fn build_message() -> Schema {
    let mut builder = Schema::builder();
    builder.add_text_field(
        MESSAGE,
        TextOptions::default()
            .set_indexing_options(
                TextFieldIndexing::default()
                    .set_tokenizer(TEXT_TOKENIZER)
                    .set_index_option(IndexRecordOption::WithFreqsAndPositions),
            )
            .set_stored(),
    );
    builder.build()
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
                        .set_stored()
                        .set_precision(DateTimePrecision::Milliseconds),
                );
            }
            FieldKind::Keyword => {
                builder.add_text_field(
                    name,
                    TextOptions::default()
                        .set_indexing_options(
                            TextFieldIndexing::default()
                                .set_tokenizer(KEYWORD_TOKENIZER)
                                .set_index_option(IndexRecordOption::Basic)
                                .set_fieldnorms(false),
                        )
                        .set_fast(KEYWORD_TOKENIZER)
                        .set_stored(),
                );
            }
            FieldKind::Text => {
                builder.add_text_field(
                    name,
                    TextOptions::default()
                        .set_indexing_options(
                            TextFieldIndexing::default()
                                .set_tokenizer(TEXT_TOKENIZER)
                                .set_index_option(IndexRecordOption::WithFreqsAndPositions),
                        )
                        .set_stored(),
                );
            }
            FieldKind::Integer => {
                builder.add_i64_field(
                    name,
                    NumericOptions::default()
                        .set_indexed()
                        .set_fast()
                        .set_stored(),
                );
            }
        }
    }
    builder.build()
}

pub fn settings() -> IndexSettings {
    IndexSettings {
        sort_by_field: Some(IndexSortByField {
            field: TIME.to_owned(),
            order: Order::Desc,
        }),
        ..IndexSettings::default()
    }
}

/// Analyzers are not stored in the index: every `Index` handle, for writing or for searching,
/// needs the keyword analyzer registered, for the inverted index and for the string columns.
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

/// The tantivy field of each schema field, by position in [`FIELDS`].
#[derive(Clone, Debug)]
pub struct Fields {
    fields: Vec<Field>,
}

impl Fields {
    pub fn of(schema: &Schema) -> anyhow::Result<Fields> {
        let fields = FIELDS
            .iter()
            .map(|(name, _)| {
                schema
                    .get_field(name)
                    .with_context(|| format!("the index has no field {name:?}"))
            })
            .collect::<anyhow::Result<_>>()?;
        Ok(Fields { fields })
    }

    /// The tantivy field of a schema field name; `None` for a name outside the schema.
    pub fn get(&self, name: &str) -> Option<Field> {
        FIELDS
            .iter()
            .position(|(field, _)| *field == name)
            .map(|index| self.fields[index])
    }
}
