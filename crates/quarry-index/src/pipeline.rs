//! The parallel indexing pipeline (seed 003 §3.3.1): a reader thread cuts input files into
//! line-aligned chunks; indexer threads parse, analyze and index chunks into their own
//! in-memory segments and write a block whenever their share of the memory budget is used
//! (serialization is CPU work, so indexers write their own blocks rather than hand them to a
//! writer thread). Each committed block carries the source byte ranges it holds, which is the
//! resume record: a re-run skips chunks already committed.
//!
//! Chunk boundaries are deterministic (the last newline within the first `chunk_bytes` bytes
//! of each chunk, or the first newline after), so a re-run cuts the same chunks and the catalog's
//! ranges match exactly.

use crate::analysis::Analyzer;
use crate::error::{IndexError, Result};
use crate::event::parse_event;
use crate::segment::SegmentBuilder;
use crossbeam_channel::{bounded, Receiver};
use quarry_store::{BlockEntry, Catalog, SourceKey, SourceState};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Where events come from.
#[derive(Debug, Clone)]
pub enum Input {
    /// A JSON-lines file, plain, `.gz` or `.zst`.
    File(PathBuf),
    /// Standard input, plain JSON lines (never resumable).
    Stdin,
}

impl Input {
    pub fn name(&self) -> String {
        match self {
            Input::File(path) => path.display().to_string(),
            Input::Stdin => "-".to_owned(),
        }
    }
}

#[derive(Debug, Clone)]
pub struct IndexOptions {
    /// Indexer threads.
    pub threads: usize,
    /// Bytes of in-memory segments, over all indexer threads, before blocks are written.
    pub memory_budget: usize,
    /// Target chunk size handed from the reader to indexers.
    pub chunk_bytes: usize,
}

impl Default for IndexOptions {
    fn default() -> Self {
        IndexOptions {
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            memory_budget: 1 << 30,
            chunk_bytes: 4 << 20,
        }
    }
}

/// Live counters, read by the CLI's progress bar.
#[derive(Debug, Default)]
pub struct Progress {
    /// Bytes read from input files as stored (compressed or not).
    pub input_bytes: AtomicU64,
    /// Bytes of JSON lines (after decompression) handed to indexers or skipped as done.
    pub json_bytes: AtomicU64,
    pub events: AtomicU64,
    pub skipped_lines: AtomicU64,
    pub blocks: AtomicU64,
    /// JSON bytes skipped because an earlier run had already indexed them.
    pub resumed_bytes: AtomicU64,
}

/// A line that could not be indexed; the rest of its file still is.
#[derive(Debug, Clone, PartialEq)]
pub struct LineError {
    pub source: String,
    pub line: u64,
    pub reason: String,
}

impl std::fmt::Display for LineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}: {}", self.source, self.line, self.reason)
    }
}

struct Source {
    name: String,
    key: Option<SourceKey>,
}

struct Chunk {
    source: Arc<Source>,
    start: u64,
    end: u64,
    first_line: u64,
    bytes: Vec<u8>,
}

/// Indexes `inputs` into the catalog's directory. Line errors go to `on_error` (and are
/// counted); I/O and format errors stop the run, leaving every committed block valid.
pub fn index_inputs(
    catalog: &Mutex<Catalog>,
    analyzer: Arc<Analyzer>,
    inputs: &[Input],
    options: &IndexOptions,
    progress: &Progress,
    on_error: &(dyn Fn(&LineError) + Sync),
) -> Result<()> {
    let threads = options.threads.max(1);
    let budget_per_thread = (options.memory_budget / threads).max(1 << 20);
    let (sender, receiver) = bounded::<Chunk>(threads * 2);
    let failed = AtomicBool::new(false);
    let dir = lock(catalog).dir().to_path_buf();
    let dir = dir.as_path();
    std::thread::scope(|scope| {
        let mut workers = Vec::with_capacity(threads);
        for _ in 0..threads {
            let receiver = receiver.clone();
            let analyzer = analyzer.clone();
            let failed = &failed;
            workers.push(scope.spawn(move || {
                let result = index_chunks(
                    catalog,
                    dir,
                    analyzer,
                    receiver,
                    budget_per_thread,
                    progress,
                    on_error,
                );
                if result.is_err() {
                    failed.store(true, Ordering::Relaxed);
                }
                result
            }));
        }
        drop(receiver);
        let mut result = Ok(());
        for input in inputs {
            if failed.load(Ordering::Relaxed) {
                break;
            }
            result = read_input(
                catalog,
                input,
                options.chunk_bytes,
                progress,
                &failed,
                |chunk| {
                    // A send fails only when every indexer has stopped (after an error).
                    sender.send(chunk).is_ok()
                },
            );
            if result.is_err() {
                break;
            }
        }
        drop(sender);
        for worker in workers {
            // A panic in an indexer is a bug; propagate it rather than hide it.
            let worker_result = worker
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            if result.is_ok() {
                result = worker_result;
            }
        }
        result
    })
}

fn lock(catalog: &Mutex<Catalog>) -> std::sync::MutexGuard<'_, Catalog> {
    // A poisoned lock means another thread panicked mid-commit; the catalog on disk is still
    // either old or new (atomic rename), so continuing with the in-memory state is safe.
    catalog
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Counts bytes read from the underlying (possibly compressed) file.
struct CountingReader<'a, R> {
    inner: R,
    counter: &'a AtomicU64,
}

impl<R: Read> Read for CountingReader<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.counter.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

fn open_input<'a>(input: &Input, counter: &'a AtomicU64) -> std::io::Result<Box<dyn Read + 'a>> {
    match input {
        Input::Stdin => Ok(Box::new(CountingReader {
            inner: std::io::stdin().lock(),
            counter,
        })),
        Input::File(path) => {
            let file = std::fs::File::open(path)?;
            let raw = std::io::BufReader::with_capacity(
                1 << 20,
                CountingReader {
                    inner: file,
                    counter,
                },
            );
            let extension = path.extension().and_then(|e| e.to_str()).unwrap_or("");
            Ok(match extension {
                "gz" => Box::new(flate2::read::MultiGzDecoder::new(raw)),
                "zst" | "zstd" => Box::new(zstd::Decoder::with_buffer(raw)?),
                _ => Box::new(raw),
            })
        }
    }
}

fn read_input(
    catalog: &Mutex<Catalog>,
    input: &Input,
    chunk_bytes: usize,
    progress: &Progress,
    failed: &AtomicBool,
    mut send: impl FnMut(Chunk) -> bool,
) -> Result<()> {
    let path = match input {
        Input::File(path) => path.clone(),
        Input::Stdin => PathBuf::from("-"),
    };
    let io = |source| IndexError::Io {
        path: path.clone(),
        source,
    };
    let key = match input {
        Input::File(path) => Some(SourceKey::of_file(path).map_err(io)?),
        Input::Stdin => None,
    };
    let done: SourceState = key
        .as_ref()
        .and_then(|key| lock(catalog).source(key).cloned())
        .unwrap_or_default();
    let source = Arc::new(Source {
        name: input.name(),
        key,
    });
    let mut reader = open_input(input, &progress.input_bytes).map_err(io)?;
    let mut offset = 0u64;
    let mut line = 1u64;
    let mut buffer: Vec<u8> = Vec::with_capacity(chunk_bytes + (64 << 10));
    let mut eof = false;
    loop {
        if failed.load(Ordering::Relaxed) {
            return Ok(());
        }
        // Fill to at least chunk_bytes (or EOF).
        while !eof && buffer.len() < chunk_bytes {
            let len = buffer.len();
            buffer.resize(chunk_bytes.max(len + (64 << 10)), 0);
            let n = reader.read(&mut buffer[len..]).map_err(io)?;
            buffer.truncate(len + n);
            eof = n == 0;
        }
        if buffer.is_empty() {
            return Ok(());
        }
        let window = &buffer[..buffer.len().min(chunk_bytes)];
        let cut = match window.iter().rposition(|&b| b == b'\n') {
            Some(i) => i + 1,
            None if eof => buffer.len(),
            None => match buffer[window.len()..].iter().position(|&b| b == b'\n') {
                Some(i) => window.len() + i + 1,
                None => {
                    // One line longer than the buffer: read more before cutting.
                    let len = buffer.len();
                    buffer.resize(len + chunk_bytes, 0);
                    let n = reader.read(&mut buffer[len..]).map_err(io)?;
                    buffer.truncate(len + n);
                    eof = n == 0;
                    continue;
                }
            },
        };
        let rest = buffer.split_off(cut);
        let bytes = std::mem::replace(&mut buffer, rest);
        let lines = bytes.iter().filter(|&&b| b == b'\n').count() as u64;
        let (start, end) = (offset, offset + bytes.len() as u64);
        progress
            .json_bytes
            .fetch_add(bytes.len() as u64, Ordering::Relaxed);
        if done.contains(start, end) {
            progress
                .resumed_bytes
                .fetch_add(bytes.len() as u64, Ordering::Relaxed);
        } else if !send(Chunk {
            source: source.clone(),
            start,
            end,
            first_line: line,
            bytes,
        }) {
            return Ok(());
        }
        offset = end;
        line += lines;
    }
}

fn index_chunks(
    catalog: &Mutex<Catalog>,
    dir: &Path,
    analyzer: Arc<Analyzer>,
    receiver: Receiver<Chunk>,
    budget: usize,
    progress: &Progress,
    on_error: &(dyn Fn(&LineError) + Sync),
) -> Result<()> {
    let mut segment = SegmentBuilder::new(analyzer.clone());
    let mut ranges: Vec<(SourceKey, u64, u64)> = Vec::new();
    for chunk in receiver {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as i64);
        let mut line_number = chunk.first_line;
        for line in chunk.bytes.split(|&b| b == b'\n') {
            let number = line_number;
            line_number += 1;
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match parse_event(line, now) {
                Ok(event) => {
                    if !segment.has_room_for(event.fields.iter().map(|(k, _)| k.as_str())) {
                        // The event's new field names would pass a block's limit: write the
                        // block first, as at is_full below (an event always fits a fresh one).
                        let full =
                            std::mem::replace(&mut segment, SegmentBuilder::new(analyzer.clone()));
                        flush(catalog, dir, full, std::mem::take(&mut ranges), progress)?;
                    }
                    segment.add_event(
                        event.time,
                        event.fields.iter().map(|(k, v)| (k.as_str(), v)),
                    );
                    progress.events.fetch_add(1, Ordering::Relaxed);
                }
                Err(error) => {
                    progress.skipped_lines.fetch_add(1, Ordering::Relaxed);
                    on_error(&LineError {
                        source: chunk.source.name.clone(),
                        line: number,
                        reason: error.to_string(),
                    });
                }
            }
            if segment.is_full() {
                // A block holds at most MAX_DOCS_PER_BLOCK events (a billion): write it
                // mid-chunk. This chunk's range is committed with the next block, so a crash
                // in between re-indexes the chunk's first part on resume (duplicates, never
                // loss).
                let full = std::mem::replace(&mut segment, SegmentBuilder::new(analyzer.clone()));
                flush(catalog, dir, full, std::mem::take(&mut ranges), progress)?;
            }
        }
        if let Some(key) = &chunk.source.key {
            ranges.push((key.clone(), chunk.start, chunk.end));
        }
        if segment.memory_bytes() >= budget {
            let full = std::mem::replace(&mut segment, SegmentBuilder::new(analyzer.clone()));
            flush(catalog, dir, full, std::mem::take(&mut ranges), progress)?;
        }
    }
    flush(catalog, dir, segment, ranges, progress)
}

/// Writes a segment as a block and commits it with the source ranges it holds.
pub(crate) fn flush(
    catalog: &Mutex<Catalog>,
    dir: &Path,
    segment: SegmentBuilder,
    ranges: Vec<(SourceKey, u64, u64)>,
    progress: &Progress,
) -> Result<()> {
    if segment.is_empty() {
        if !ranges.is_empty() {
            // Chunks that held only blank or bad lines are still done.
            lock(catalog).commit_ranges(&ranges)?;
        }
        return Ok(());
    }
    let id = lock(catalog).allocate_block_id();
    let path = Catalog::block_path(dir, id);
    let manifest = segment.write_block(&path)?;
    let bytes = std::fs::metadata(&path)
        .map_err(|source| IndexError::Io {
            path: path.clone(),
            source,
        })?
        .len();
    let entry = BlockEntry {
        id,
        docs: u64::from(manifest.doc_count),
        time_min: manifest.time_min,
        time_max: manifest.time_max,
        bytes,
    };
    lock(catalog).commit_block(entry, &ranges)?;
    progress.blocks.fetch_add(1, Ordering::Relaxed);
    Ok(())
}
