//! `tantivy-logs index`: indexes a JSON-lines event file (plain or zstd) and reports how long it
//! took and how big the index is.
//!
//! One indexing thread with a 1 GB memory budget and one merge thread, tantivy's default merge
//! policy (`LogMergePolicy`); the timed span runs from opening the writer to the end of the
//! last merge (`wait_merging_threads`): reading, decompressing and parsing the input, indexing,
//! sorting each flushed segment by `_time`, the commit and the merges it started.

use std::borrow::Cow;
use std::fs;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context};
use logs_driver::input;
use logs_driver::schema::TIME;
use logs_driver::time::parse_rfc3339_millis;
use serde::{Deserialize, Serialize};
use tantivy::indexer::IndexWriterOptions;
use tantivy::{DateTime, Index, IndexWriter, TantivyDocument};

use crate::schema::{self, Fields, SchemaKind};

pub struct IndexOptions {
    pub index_dir: PathBuf,
    pub input: PathBuf,
    /// The indexing thread's memory budget.
    pub heap_bytes: usize,
    pub schema: SchemaKind,
}

/// The line printed on stdout; `logs-driver report` reads `engine`, `events`, `seconds` and
/// `index_bytes`.
#[derive(Debug, Serialize)]
pub struct IndexSummary {
    pub engine: &'static str,
    pub events: u64,
    pub seconds: f64,
    pub events_per_s: f64,
    pub input_bytes: u64,
    pub index_bytes: u64,
    pub segments: usize,
    pub threads: usize,
}

/// A message-only event (`index --schema message`); other members are ignored.
#[derive(Deserialize)]
struct MessageEvent<'a> {
    #[serde(borrow)]
    message: Option<Cow<'a, str>>,
}

/// One generated event (PROTOCOL.md, "Events"): strings borrowed from the input line unless
/// they hold escapes.
#[derive(Deserialize)]
struct Event<'a> {
    #[serde(rename = "_time", borrow)]
    time: Cow<'a, str>,
    #[serde(borrow)]
    tenant: Option<Cow<'a, str>>,
    #[serde(borrow)]
    service: Option<Cow<'a, str>>,
    #[serde(borrow)]
    host: Option<Cow<'a, str>>,
    #[serde(borrow)]
    level: Option<Cow<'a, str>>,
    #[serde(borrow)]
    message: Option<Cow<'a, str>>,
    #[serde(borrow)]
    method: Option<Cow<'a, str>>,
    #[serde(borrow)]
    path: Option<Cow<'a, str>>,
    status: Option<i64>,
    latency_ms: Option<i64>,
    bytes: Option<i64>,
    #[serde(borrow)]
    client_ip: Option<Cow<'a, str>>,
}

pub fn run(options: &IndexOptions) -> anyhow::Result<IndexSummary> {
    fs::create_dir_all(&options.index_dir)
        .with_context(|| format!("creating {}", options.index_dir.display()))?;
    let builder = match options.schema {
        SchemaKind::Logs => Index::builder()
            .schema(schema::build())
            .settings(schema::settings()),
        SchemaKind::Message => Index::builder().schema(schema::build_message()),
    };
    let index = builder
        .create_in_dir(&options.index_dir)
        .with_context(|| format!("creating an index in {}", options.index_dir.display()))?;
    schema::register_tokenizers(&index);

    let started = Instant::now();
    let mut writer: IndexWriter = index.writer_with_options(
        IndexWriterOptions::builder()
            .num_worker_threads(1)
            .memory_budget_per_thread(options.heap_bytes)
            .num_merge_threads(1)
            .build(),
    )?;
    let (events, input_bytes) = match options.schema {
        SchemaKind::Logs => add_events(&writer, &Fields::of(&index.schema())?, &options.input)?,
        SchemaKind::Message => add_messages(&writer, &index.schema(), &options.input)?,
    };
    writer.commit()?;
    writer.wait_merging_threads()?;
    let seconds = started.elapsed().as_secs_f64();

    let metas = index.load_metas()?;
    Ok(IndexSummary {
        engine: "tantivy",
        events,
        seconds,
        events_per_s: events as f64 / seconds,
        input_bytes,
        index_bytes: directory_bytes(&options.index_dir)?,
        segments: metas.segments.len(),
        threads: 1,
    })
}

/// Adds every event of `input`; returns the number of events and the uncompressed input size.
fn add_events(writer: &IndexWriter, fields: &Fields, input: &Path) -> anyhow::Result<(u64, u64)> {
    let field = |name| fields.get(name).with_context(|| format!("no field {name}"));
    let time = field(TIME)?;
    let keywords = [
        field("tenant")?,
        field("service")?,
        field("host")?,
        field("level")?,
        field("method")?,
        field("client_ip")?,
    ];
    let (message, path) = (field("message")?, field("path")?);
    let (status, latency_ms, bytes) = (field("status")?, field("latency_ms")?, field("bytes")?);

    for_each_line(input, |line_number, json| {
        let event: Event = serde_json::from_str(json)
            .with_context(|| format!("{} line {line_number}", input.display()))?;
        let Some(millis) = parse_rfc3339_millis(&event.time) else {
            bail!(
                "{} line {line_number}: _time {:?} is not RFC 3339",
                input.display(),
                event.time
            );
        };
        let mut document = TantivyDocument::new();
        document.add_date(time, DateTime::from_timestamp_millis(millis));
        let keyword_values = [
            event.tenant,
            event.service,
            event.host,
            event.level,
            event.method,
            event.client_ip,
        ];
        for (field, value) in keywords.iter().zip(keyword_values) {
            if let Some(value) = value {
                document.add_text(*field, value);
            }
        }
        for (field, value) in [(message, event.message), (path, event.path)] {
            if let Some(value) = value {
                document.add_text(field, value);
            }
        }
        for (field, value) in [
            (status, event.status),
            (latency_ms, event.latency_ms),
            (bytes, event.bytes),
        ] {
            if let Some(value) = value {
                document.add_i64(field, value);
            }
        }
        writer.add_document(document)?;
        Ok(())
    })
}

/// Adds every `{"message": ...}` event of `input` (an event without one is an empty
/// document); returns the number of events and the uncompressed input size.
fn add_messages(
    writer: &IndexWriter,
    schema: &tantivy::schema::Schema,
    input: &Path,
) -> anyhow::Result<(u64, u64)> {
    let message = schema.get_field(schema::MESSAGE)?;
    for_each_line(input, |line_number, json| {
        let event: MessageEvent = serde_json::from_str(json)
            .with_context(|| format!("{} line {line_number}", input.display()))?;
        let mut document = TantivyDocument::new();
        if let Some(value) = event.message {
            document.add_text(message, value);
        }
        writer.add_document(document)?;
        Ok(())
    })
}

/// Calls `add` with every non-blank line of `input` (its number from 1, trailing whitespace
/// removed); returns the number of such lines and the uncompressed input size.
fn for_each_line(
    input: &Path,
    mut add: impl FnMut(usize, &str) -> anyhow::Result<()>,
) -> anyhow::Result<(u64, u64)> {
    let mut lines = input::open(input)?;
    let mut line = String::new();
    let (mut events, mut input_bytes) = (0u64, 0u64);
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
        add(line_number, json)?;
        events += 1;
    }
    Ok((events, input_bytes))
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
