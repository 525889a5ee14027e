use crate::size::parse_size;
use crate::{DataArgs, StorageArgs};
use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use quarry_index::merge::{merge_blocks, pick_merge_skipping, MergePolicy};
use quarry_index::{
    index_inputs, IndexError, IndexOptions, Input, LineError, Progress, Schema, SourceOutcome,
    SourceReport,
};
use quarry_store::{BlockStore, Catalog, Mapping, Settings};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[derive(clap::Args, Debug)]
pub struct IndexArgs {
    #[command(flatten)]
    data: DataArgs,
    #[command(flatten)]
    storage: StorageArgs,
    /// Indexer threads [default: all cores]
    #[arg(long)]
    threads: Option<usize>,
    /// In-memory segment budget over all threads; a block is written when a thread's share
    /// is full (e.g. 512MB, 2GB)
    #[arg(long, default_value = "1GB", value_parser = parse_size)]
    memory_budget: usize,
    /// Stop words (comma-separated), fixed when the data directory is created
    #[arg(long, value_delimiter = ',')]
    stop_words: Vec<String>,
    /// Field mapping (JSON, Elasticsearch-style `{"properties": {...}}`; see README): how
    /// named fields are indexed and kept. Stored in the data directory; a later run may add
    /// fields but not change a mapped one
    #[arg(long, value_name = "FILE")]
    mapping: Option<PathBuf>,
    /// Do not merge small blocks after indexing
    #[arg(long)]
    no_merge: bool,
    /// Read a file whose indexed content has changed (rewritten, truncated, rotated) again
    /// from its start, as a new file; its events from earlier runs stay. Without it, such a
    /// file is reported and left out (exit status 1)
    #[arg(long)]
    reindex_changed: bool,
    /// Merged blocks are cut when their inputs' bytes reach this, whatever --memory-budget
    /// is; a merge's peak memory is about 4 times this
    #[arg(long, default_value = "512MB", value_parser = parse_size)]
    target_block_size: usize,
    /// JSON-lines files (.gz and .zst are decompressed); `-` reads stdin
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
}

#[derive(clap::Args, Debug)]
pub struct MergeArgs {
    #[command(flatten)]
    data: DataArgs,
    #[command(flatten)]
    storage: StorageArgs,
    /// Output blocks are cut when their inputs' bytes reach this; the merge's peak memory is
    /// about 4 times this (`--memory-budget` is the old name)
    #[arg(long, alias = "memory-budget", default_value = "512MB", value_parser = parse_size)]
    target_block_size: usize,
}

/// Line errors printed before they are only counted.
pub(crate) const MAX_PRINTED_LINE_ERRORS: u64 = 100;

pub(crate) fn progress_bar(total: Option<u64>) -> ProgressBar {
    let bar = match total {
        Some(total) => ProgressBar::new(total),
        None => ProgressBar::new_spinner(),
    };
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {wide_bar} {bytes}/{total_bytes} {msg}",
        )
        // unwrap: the template is a constant known to parse.
        .unwrap(),
    );
    bar
}

pub(crate) fn rate(amount: f64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        amount / seconds
    } else {
        0.0
    }
}

pub fn index(args: IndexArgs) -> Result<ExitCode> {
    args.storage.require_local_metastore("quarry index")?;
    // Read before the data directory is touched: a bad mapping changes nothing.
    let mapping = match &args.mapping {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading mapping {}", path.display()))?;
            Some(Mapping::from_json(&text).with_context(|| path.display().to_string())?)
        }
        None => None,
    };
    let settings = Settings {
        stop_words: args.stop_words.iter().map(|w| w.to_lowercase()).collect(),
        mapping: Mapping::default(),
    };
    let mut catalog = Catalog::open_or_create(&args.data.data, settings)
        .with_context(|| format!("opening data directory {}", args.data.data.display()))?;
    if let (Some(mapping), Some(path)) = (&mapping, &args.mapping) {
        catalog
            .set_mapping(mapping)
            .with_context(|| path.display().to_string())?;
    }
    let schema = Arc::new(Schema::from_settings(catalog.settings()));
    let store = args.storage.store(&args.data.data)?;
    let inputs: Vec<Input> = args
        .files
        .iter()
        .map(|f| {
            if f.as_os_str() == "-" {
                Input::Stdin
            } else {
                Input::File(f.clone())
            }
        })
        .collect();
    let mut total = Some(0u64);
    for input in &inputs {
        match input {
            Input::File(path) => {
                let len = std::fs::metadata(path)
                    .with_context(|| format!("{}", path.display()))?
                    .len();
                total = total.map(|t| t + len);
            }
            Input::Stdin => total = None,
        }
    }
    let options = IndexOptions {
        threads: args
            .threads
            .unwrap_or_else(|| IndexOptions::default().threads)
            .max(1),
        memory_budget: args.memory_budget,
        reindex_changed: args.reindex_changed,
        store: Some(store.clone()),
        ..IndexOptions::default()
    };
    let progress = Progress::default();
    let printed = AtomicU64::new(0);
    let bar = progress_bar(total);
    let on_error = |error: &LineError| {
        if printed.fetch_add(1, Ordering::Relaxed) < MAX_PRINTED_LINE_ERRORS {
            bar.suspend(|| eprintln!("{error}"));
        }
    };
    let catalog = Mutex::new(catalog);
    let started = Instant::now();
    let result = with_ticker(
        || update_bar(&bar, &progress, started),
        || {
            index_inputs(
                &catalog,
                schema.clone(),
                &inputs,
                &options,
                &progress,
                &on_error,
            )
        },
    );
    update_bar(&bar, &progress, started);
    bar.finish_and_clear();
    let reports = result?;
    let status = report_sources(&reports);
    let mut catalog = catalog.into_inner().unwrap_or_else(|p| p.into_inner());
    if !args.no_merge {
        let policy = MergePolicy {
            target_block_bytes: args.target_block_size as u64,
            ..MergePolicy::default()
        };
        merge_small_blocks(&mut catalog, &*store, &schema, &policy)?;
    }
    let seconds = started.elapsed().as_secs_f64();
    let json_bytes = progress.json_bytes.load(Ordering::Relaxed)
        - progress.resumed_bytes.load(Ordering::Relaxed);
    let events = progress.events.load(Ordering::Relaxed);
    let skipped = progress.skipped_lines.load(Ordering::Relaxed);
    let resumed = progress.resumed_bytes.load(Ordering::Relaxed);
    let index_bytes: u64 = catalog.blocks().iter().map(|b| b.bytes).sum();
    eprintln!(
        "indexed {events} events ({:.1} MB) in {seconds:.2} s: {:.1} MB/s, {:.0} events/s; {} blocks, {:.1} MB on disk{}{}",
        json_bytes as f64 / 1e6,
        rate(json_bytes as f64 / 1e6, seconds),
        rate(events as f64, seconds),
        catalog.blocks().len(),
        index_bytes as f64 / 1e6,
        if resumed > 0 { format!("; {:.1} MB already indexed, skipped", resumed as f64 / 1e6) } else { String::new() },
        if skipped > 0 { format!("; {skipped} malformed lines skipped") } else { String::new() },
    );
    Ok(match status {
        SourcesStatus::Changed => ExitCode::from(1),
        _ if skipped > 0 => ExitCode::from(3),
        SourcesStatus::EarlierFailedLines => ExitCode::from(3),
        SourcesStatus::Clean => ExitCode::SUCCESS,
    })
}

/// The worst of what `report_sources` found, for the exit status.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
enum SourcesStatus {
    Clean,
    /// A file was indexed by an earlier run with bad lines: 3, as that run's status was.
    EarlierFailedLines,
    /// A file's indexed content changed and it was left out: 1.
    Changed,
}

/// Says on stderr what happened to each input that was not simply read as new.
fn report_sources(reports: &[SourceReport]) -> SourcesStatus {
    let mut status = SourcesStatus::Clean;
    for report in reports {
        let name = &report.name;
        match &report.outcome {
            SourceOutcome::New => {}
            SourceOutcome::Unchanged { indexed_bytes } => {
                eprintln!("{name}: already indexed ({indexed_bytes} bytes), nothing new")
            }
            SourceOutcome::Resumed { watermark: 0, from } => eprintln!(
                "{name}: partly indexed by an interrupted run; reading the rest from byte {from}"
            ),
            SourceOutcome::Resumed { watermark, from } => eprintln!(
                "{name}: indexed up to byte {watermark} by an earlier run; reading from byte {from}"
            ),
            SourceOutcome::Changed {
                indexed_bytes,
                change,
            } => {
                eprintln!(
                    "error: {name} was indexed up to byte {indexed_bytes} but its content changed \
                     ({change}); it was not indexed again (--reindex-changed reads it again from \
                     its start; its earlier events stay)"
                );
                status = status.max(SourcesStatus::Changed);
            }
            SourceOutcome::ReadAgain {
                indexed_bytes,
                change,
            } => eprintln!(
                "{name}: was indexed up to byte {indexed_bytes} but its content changed \
                 ({change}); read again from its start (its earlier events stay)"
            ),
            SourceOutcome::Duplicate => eprintln!("{name}: named more than once; read once"),
            SourceOutcome::Untracked => eprintln!(
                "note: {name}: {} is not tracked; running this again adds its events again",
                if name == "-" {
                    "standard input"
                } else {
                    "a pipe or device"
                }
            ),
            _ => {}
        }
        if report.earlier_failed_lines > 0 {
            let lines = report.earlier_failed_lines;
            eprintln!(
                "{name}: indexed by an earlier run with {lines} rejected line{}, reported by that run",
                if lines == 1 { "" } else { "s" }
            );
            status = status.max(SourcesStatus::EarlierFailedLines);
        }
    }
    status
}

/// The size-tiered merge loop. `pick_merge` only picks merges that write fewer blocks than
/// they read, so the block count falls on every step and the loop ends within as many steps as
/// there are blocks; a merge that did not reduce the count (a segment limit cut a block early)
/// stops it rather than risk merging the same blocks forever (issue 9, defect 1).
fn merge_small_blocks(
    catalog: &mut Catalog,
    store: &dyn BlockStore,
    schema: &Arc<Schema>,
    policy: &MergePolicy,
) -> Result<()> {
    // Blocks that failed to read while merging: left as they are (searches skip them, `quarry
    // check` lists them) and out of later merges, so one damaged block does not fail the run.
    let mut damaged: Vec<u64> = Vec::new();
    loop {
        let ids = pick_merge_skipping(catalog.blocks(), &damaged, policy);
        if ids.is_empty() {
            return Ok(());
        }
        let before = catalog.blocks().len();
        let merged = merge_blocks(
            catalog,
            store,
            schema.clone(),
            &ids,
            policy,
            &Progress::default(),
        );
        if let Err(IndexError::Format(error)) = &merged {
            let bad = error.path().and_then(|path| store.find(path, &ids));
            if let Some(id) = bad {
                eprintln!("warning: {error}; block {id} left out of merging (see `quarry check`)");
                damaged.push(id);
                continue;
            }
        }
        merged?;
        let after = catalog.blocks().len();
        if after >= before {
            eprintln!(
                "warning: merging {} blocks left {after} blocks of {before}; stopped merging",
                ids.len()
            );
            return Ok(());
        }
    }
}

/// Runs `work` while another thread calls `tick` every 100 ms (progress bars).
fn with_ticker<R>(tick: impl Fn() + Sync, work: impl FnOnce() -> R) -> R {
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            while !done.load(Ordering::Relaxed) {
                tick();
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        let result = work();
        done.store(true, Ordering::Relaxed);
        result
    })
}

fn update_bar(bar: &ProgressBar, progress: &Progress, started: Instant) {
    let seconds = started.elapsed().as_secs_f64();
    bar.set_position(progress.input_bytes.load(Ordering::Relaxed));
    let json = progress.json_bytes.load(Ordering::Relaxed) as f64 / 1e6;
    let events = progress.events.load(Ordering::Relaxed) as f64;
    bar.set_message(format!(
        "{:.1} MB/s, {:.0} events/s, {} blocks",
        rate(json, seconds),
        rate(events, seconds),
        progress.blocks.load(Ordering::Relaxed)
    ));
}

pub fn merge(args: MergeArgs) -> Result<ExitCode> {
    args.storage.require_local_metastore("quarry merge")?;
    let store = args.storage.store(&args.data.data)?;
    let mut catalog = Catalog::open_or_create(&args.data.data, Settings::default())
        .with_context(|| format!("opening data directory {}", args.data.data.display()))?;
    let schema = Arc::new(Schema::from_settings(catalog.settings()));
    // All blocks, once: one pass cannot loop, and it leaves consecutive time ranges.
    let ids: Vec<u64> = catalog.blocks().iter().map(|b| b.id).collect();
    let before = catalog.blocks().len();
    if ids.len() < 2 {
        eprintln!("nothing to merge: {before} block(s)");
        return Ok(ExitCode::SUCCESS);
    }
    let started = Instant::now();
    let docs: u64 = catalog.blocks().iter().map(|b| b.docs).sum();
    let bar = ProgressBar::new(docs);
    bar.set_style(
        ProgressStyle::with_template("{spinner} [{elapsed_precise}] {wide_bar} {pos}/{len} events")
            // unwrap: the template is a constant known to parse.
            .unwrap(),
    );
    let progress = Progress::default();
    let policy = MergePolicy {
        target_block_bytes: args.target_block_size as u64,
        ..MergePolicy::default()
    };
    let outputs = with_ticker(
        || bar.set_position(progress.events.load(Ordering::Relaxed)),
        || merge_blocks(&mut catalog, &*store, schema, &ids, &policy, &progress),
    )?;
    bar.finish_and_clear();
    eprintln!(
        "merged {before} blocks into {} in {:.2} s ({docs} events)",
        outputs.len(),
        started.elapsed().as_secs_f64()
    );
    Ok(ExitCode::SUCCESS)
}
