//! The benchmark schema: `url`, `title` and `body` analyzed by Quarry's analyzer with
//! frequencies and positions (phrase queries need them), all three searched by bare words as
//! Quarry searches every text field; all three stored, as a search engine returning documents
//! would have them.

use anyhow::Context;
use quarry_index::analysis::Analyzer;
use tantivy::schema::{Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions};
use tantivy::Index;

use crate::tokenizer::{QuarryTokenizer, TOKENIZER_NAME};

pub const URL: &str = "url";
pub const TITLE: &str = "title";
pub const BODY: &str = "body";

#[derive(Clone, Copy, Debug)]
pub struct Fields {
    pub url: Field,
    pub title: Field,
    pub body: Field,
}

pub fn build() -> (Schema, Fields) {
    let text = TextOptions::default().set_stored().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(TOKENIZER_NAME)
            .set_index_option(IndexRecordOption::WithFreqsAndPositions),
    );
    let mut builder = Schema::builder();
    let fields = Fields {
        url: builder.add_text_field(URL, text.clone()),
        title: builder.add_text_field(TITLE, text.clone()),
        body: builder.add_text_field(BODY, text),
    };
    (builder.build(), fields)
}

impl Fields {
    pub fn of(schema: &Schema) -> anyhow::Result<Fields> {
        let field = |name| {
            schema
                .get_field(name)
                .with_context(|| format!("index has no field {name:?}"))
        };
        Ok(Fields {
            url: field(URL)?,
            title: field(TITLE)?,
            body: field(BODY)?,
        })
    }
}

/// Tokenizers are not stored in the index: every `Index` handle, for writing or for searching,
/// must have the analyzer registered before its first use.
pub fn register_tokenizer(index: &Index) {
    index
        .tokenizers()
        .register(TOKENIZER_NAME, QuarryTokenizer::new(Analyzer::default()));
}
