//! `tantivy-bench index`: builds a one-segment index from a zstd-compressed JSON-lines file of
//! `{"url", "title", "body"}` articles (or, with `--schema game`, `{"id", "text"}` documents),
//! and reports how long it took and how big it is.
//!
//! The timed span is everything a user waits for: decompressing and parsing the input,
//! indexing, the commit, and the merge into one segment. Background merges are off
//! (`NoMergePolicy`) so the work done is exactly "index with N threads, then merge once",
//! the same recipe Quarry's `index` + `merge` follow.

use std::fs::{self, File};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context};
use serde::{Deserialize, Serialize};
use tantivy::indexer::IndexWriterOptions;
use tantivy::merge_policy::NoMergePolicy;
use tantivy::{Index, IndexWriter, TantivyDocument};

use crate::schema::{self, Fields, GameFields, SchemaKind};

pub struct IndexOptions {
    pub index_dir: PathBuf,
    pub input: PathBuf,
    pub threads: usize,
    pub schema: SchemaKind,
    /// Indexing memory for all threads together, split evenly between them.
    pub heap_bytes: usize,
}

/// The line printed on stdout; the field names are the ones `search-report` reads.
#[derive(Debug, Serialize)]
pub struct IndexSummary {
    pub engine: &'static str,
    pub docs: u64,
    pub seconds: f64,
    pub input_bytes: u64,
    pub index_bytes: u64,
    pub segments: usize,
    pub threads: usize,
}

#[derive(Deserialize)]
struct Article {
    url: String,
    title: String,
    body: String,
}

/// A document of the search-benchmark-game's corpus.
#[derive(Deserialize)]
struct GameDocument {
    id: String,
    text: String,
}

/// The schema's fields, and so how a JSON line becomes a document.
#[derive(Clone, Copy)]
enum Target {
    Wiki(Fields),
    Game(GameFields),
}

impl Target {
    fn document(self, json: &str) -> serde_json::Result<TantivyDocument> {
        let mut document = TantivyDocument::new();
        match self {
            Target::Wiki(fields) => {
                let article: Article = serde_json::from_str(json)?;
                document.add_text(fields.url, article.url);
                document.add_text(fields.title, article.title);
                document.add_text(fields.body, article.body);
            }
            Target::Game(fields) => {
                let game: GameDocument = serde_json::from_str(json)?;
                document.add_text(fields.id, game.id);
                document.add_text(fields.text, game.text);
            }
        }
        Ok(document)
    }
}

pub fn run(options: &IndexOptions) -> anyhow::Result<IndexSummary> {
    if options.threads == 0 {
        bail!("--threads must be at least 1");
    }
    fs::create_dir_all(&options.index_dir)
        .with_context(|| format!("creating {}", options.index_dir.display()))?;
    let (tantivy_schema, target) = match options.schema {
        SchemaKind::Wiki => {
            let (tantivy_schema, fields) = schema::build();
            (tantivy_schema, Target::Wiki(fields))
        }
        SchemaKind::Game => {
            let (tantivy_schema, fields) = schema::build_game();
            (tantivy_schema, Target::Game(fields))
        }
    };
    let index = Index::create_in_dir(&options.index_dir, tantivy_schema)
        .with_context(|| format!("creating an index in {}", options.index_dir.display()))?;
    schema::register_tokenizer(&index);

    let started = Instant::now();
    let writer_options = IndexWriterOptions::builder()
        .num_worker_threads(options.threads)
        .memory_budget_per_thread(options.heap_bytes / options.threads)
        .num_merge_threads(1)
        .build();
    let mut writer: IndexWriter = index.writer_with_options(writer_options)?;
    writer.set_merge_policy(Box::new(NoMergePolicy));

    let input_bytes = add_articles(&writer, target, &options.input)?;
    writer.commit()?;
    let segment_ids = index.searchable_segment_ids()?;
    if segment_ids.len() > 1 {
        writer.merge(&segment_ids).wait()?;
    }
    writer.garbage_collect_files().wait()?;
    writer.wait_merging_threads()?;
    let seconds = started.elapsed().as_secs_f64();

    let metas = index.load_metas()?;
    Ok(IndexSummary {
        engine: "tantivy",
        docs: metas.segments.iter().map(|s| u64::from(s.num_docs())).sum(),
        seconds,
        input_bytes,
        index_bytes: directory_bytes(&options.index_dir)?,
        segments: metas.segments.len(),
        threads: options.threads,
    })
}

/// Adds every document of `input` and returns the uncompressed size of the input in bytes.
fn add_articles(writer: &IndexWriter, target: Target, input: &Path) -> anyhow::Result<u64> {
    let file = File::open(input).with_context(|| format!("opening {}", input.display()))?;
    let decoder = zstd::Decoder::new(file)?;
    let mut lines = BufReader::with_capacity(1 << 20, decoder);
    let mut line = String::new();
    let mut input_bytes = 0u64;
    for line_number in 1.. {
        line.clear();
        let read = lines
            .read_line(&mut line)
            .with_context(|| format!("reading {} line {line_number}", input.display()))?;
        if read == 0 {
            break;
        }
        input_bytes += read as u64;
        let json = line.trim_end();
        if json.is_empty() {
            continue;
        }
        let document = target
            .document(json)
            .with_context(|| format!("{} line {line_number}", input.display()))?;
        writer.add_document(document)?;
    }
    Ok(input_bytes)
}

/// Total size of the files under `dir`.
fn directory_bytes(dir: &Path) -> anyhow::Result<u64> {
    let mut total = 0;
    for entry in fs::read_dir(dir).with_context(|| format!("listing {}", dir.display()))? {
        let entry = entry?;
        let metadata = entry.metadata()?;
        total += if metadata.is_dir() {
            directory_bytes(&entry.path())?
        } else {
            metadata.len()
        };
    }
    Ok(total)
}
