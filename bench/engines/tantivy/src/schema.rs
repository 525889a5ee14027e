//! The benchmark schemas, both analyzed by Quarry's analyzer with frequencies and positions
//! (phrase queries need them):
//!
//! - [`SchemaKind::Wiki`], the search benchmark's: `url`, `title` and `body`, all three searched
//!   by bare words as Quarry searches every text field, all three stored, as a search engine
//!   returning documents would have them;
//! - [`SchemaKind::Game`], the search-benchmark-game's corpus shape (bench/README.md, "The
//!   search-benchmark-game configuration"): `id` stored only, not indexed; `text` indexed, not
//!   stored, the only field bare words search.
//!
//! `index --schema` picks one; `serve` finds which from the index's fields.

use anyhow::Context;
use quarry_index::analysis::Analyzer;
use tantivy::schema::{Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, STORED};
use tantivy::Index;

use crate::tokenizer::{QuarryTokenizer, TOKENIZER_NAME};

pub const URL: &str = "url";
pub const TITLE: &str = "title";
pub const BODY: &str = "body";
pub const ID: &str = "id";
pub const TEXT: &str = "text";

/// Which documents an index holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum SchemaKind {
    /// `{"url","title","body"}` articles, every field analyzed and stored
    #[default]
    Wiki,
    /// `{"id","text"}` documents: `id` stored only, `text` analyzed and not stored
    Game,
}

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

/// The fields of [`SchemaKind::Game`].
#[derive(Clone, Copy, Debug)]
pub struct GameFields {
    pub id: Field,
    pub text: Field,
}

pub fn build_game() -> (Schema, GameFields) {
    let text = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(TOKENIZER_NAME)
            .set_index_option(IndexRecordOption::WithFreqsAndPositions),
    );
    let mut builder = Schema::builder();
    let fields = GameFields {
        id: builder.add_text_field(ID, STORED),
        text: builder.add_text_field(TEXT, text),
    };
    (builder.build(), fields)
}

/// The fields bare words search: `text` in a game index, `url`, `title` and `body` otherwise.
pub fn searched_fields(schema: &Schema) -> anyhow::Result<Vec<Field>> {
    if let Ok(text) = schema.get_field(TEXT) {
        return Ok(vec![text]);
    }
    let fields = Fields::of(schema)?;
    Ok(vec![fields.url, fields.title, fields.body])
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
