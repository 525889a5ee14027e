//! The parallel indexing pipeline (seed 003 §3.3.1): a reader thread cuts input files into
//! line-aligned chunks; indexer threads parse, analyze and index chunks into their own
//! in-memory segments and write a block whenever their share of the memory budget is used
//! (serialization is CPU work, so indexers write their own blocks rather than hand them to a
//! writer thread). Each committed block carries the source chunks it holds (byte range, crc32,
//! line number at the end, failed lines), which is the resume record: a re-run skips them.
//!
//! ## Re-running on a file (issue 9, defect 2)
//!
//! A file is known by its canonical path. Before reading a file indexed before, the reader
//! checks that the chunks recorded as the first and last of each committed range still have
//! their crc32 (in a plain file it reads just those chunks; a compressed file is decompressed
//! up to the end of what was indexed, since offsets are in its decompressed stream). Then:
//!
//! - unchanged, or only touched: every byte is in a committed range, nothing is added;
//! - grown: it reads only what is not committed, from the end of the last range on (and any
//!   gap an interrupted run left). A committed range is skipped whole (a seek in a plain file)
//!   and a chunk never runs into the next committed range, so no line is read twice;
//! - rewritten (a checked chunk differs) or truncated: it is not read, and the run reports it
//!   (or, with `reindex_changed`, forgets what was indexed from it and reads it as new).
//!
//! Lines end at `\n`. A file need not end with one: its last line is indexed at the end of the
//! file as it is. Bytes appended after that are read as new lines, whether or not they begin
//! with `\n`, so a complete last line stays one event and an appended event is not glued to
//! it; a last line that was still being written when it was read was reported as a bad line
//! then, and its remainder is reported as a bad line when it is read. Nothing is indexed twice
//! and nothing is dropped without a report.
//!
//! Chunks are cut at the last newline within the first `chunk_bytes` bytes (or the first
//! newline after), at the end of the stream, or where a committed range starts.

use crate::error::{IndexError, Result};
use crate::event::parse_event;
use crate::schema::Schema;
use crate::segment::SegmentBuilder;
use crossbeam_channel::{bounded, Receiver};
use quarry_store::catalog::{ChunkSum, DoneRange, IngestedChunk, LegacySource};
use quarry_store::{BlockStore, Catalog, LocalDir, SourceKey, SourceState};
use std::collections::HashSet;
use std::io::{Read, Seek, SeekFrom};
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
    /// Read a file whose indexed content changed again from its start, as a new file (its
    /// events from earlier runs stay), instead of reporting it and leaving it out.
    pub reindex_changed: bool,
    /// Where blocks are written: the catalog's directory when `None`, or another store
    /// (object storage, `quarry index --storage`).
    pub store: Option<Arc<dyn BlockStore>>,
}

impl Default for IndexOptions {
    fn default() -> Self {
        IndexOptions {
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            memory_budget: 1 << 30,
            chunk_bytes: 4 << 20,
            reindex_changed: false,
            store: None,
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

/// What a run did with one input.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceReport {
    pub name: String,
    pub outcome: SourceOutcome,
    /// Lines that failed in the ranges indexed by earlier runs (each was reported by its run).
    pub earlier_failed_lines: u64,
}

#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum SourceOutcome {
    /// Never indexed before: read from its start.
    New,
    /// Everything was indexed before (the file is unchanged, or only touched).
    Unchanged { indexed_bytes: u64 },
    /// Indexed before up to `watermark`: read what no earlier run committed (appended bytes,
    /// or what an interrupted run left), from `from` on.
    Resumed { watermark: u64, from: u64 },
    /// Its indexed content changed: not read.
    Changed { indexed_bytes: u64, change: Change },
    /// Its indexed content changed and `reindex_changed` is set: read again from its start.
    ReadAgain { indexed_bytes: u64, change: Change },
    /// Named twice (perhaps by another path): read once.
    Duplicate,
    /// Standard input (or a named pipe, a device): not tracked, so running again adds its
    /// events again.
    Untracked,
}

/// How a file's indexed content changed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Change {
    /// It is now `len` bytes long (decompressed), less than was indexed.
    Truncated { len: u64 },
    /// Its bytes `[start, end)`, indexed earlier, have a different crc32.
    Differs { start: u64, end: u64 },
    /// Indexed under a version-1 catalog, and its size or mtime has changed since: version 1
    /// kept no fingerprint, so an append cannot be told from a rewrite.
    Unverifiable { size: u64 },
}

impl std::fmt::Display for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Change::Truncated { len } => write!(f, "it is now {len} bytes long"),
            Change::Differs { start, end } => write!(f, "bytes {start}..{end} differ"),
            Change::Unverifiable { size } => write!(
                f,
                "it was indexed at {size} bytes by an older catalog without fingerprints, \
                 and its size or mtime changed since"
            ),
        }
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
    /// The line number of the line holding byte `end`.
    line_at_end: u64,
    bytes: Vec<u8>,
}

/// Indexes `inputs` into the catalog's directory and says what it did with each. Line errors
/// go to `on_error` (and are counted); I/O and format errors stop the run, leaving every
/// committed block valid.
pub fn index_inputs(
    catalog: &Mutex<Catalog>,
    schema: Arc<Schema>,
    inputs: &[Input],
    options: &IndexOptions,
    progress: &Progress,
    on_error: &(dyn Fn(&LineError) + Sync),
) -> Result<Vec<SourceReport>> {
    let threads = options.threads.max(1);
    let budget_per_thread = (options.memory_budget / threads).max(1 << 20);
    let (sender, receiver) = bounded::<Chunk>(threads * 2);
    let failed = AtomicBool::new(false);
    let store: Arc<dyn BlockStore> = match &options.store {
        Some(store) => store.clone(),
        None => LocalDir::shared(lock(catalog).dir()),
    };
    let store = &*store;
    std::thread::scope(|scope| {
        let mut workers = Vec::with_capacity(threads);
        for _ in 0..threads {
            let receiver = receiver.clone();
            let schema = schema.clone();
            let failed = &failed;
            workers.push(scope.spawn(move || {
                let result = index_chunks(
                    catalog,
                    store,
                    schema,
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
        let mut reports = Vec::with_capacity(inputs.len());
        // A file named twice would be read twice before the first read's chunks are committed.
        let mut seen = HashSet::new();
        for input in inputs {
            if failed.load(Ordering::Relaxed) {
                break;
            }
            let read = read_input(
                catalog,
                input,
                options,
                progress,
                &failed,
                &mut seen,
                |chunk| {
                    // A send fails only when every indexer has stopped (after an error).
                    sender.send(chunk).is_ok()
                },
            );
            match read {
                Ok(report) => reports.push(report),
                Err(error) => {
                    result = Err(error);
                    break;
                }
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
        result.map(|()| reports)
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

/// Where a stream's bytes come from: a plain file, which can seek past committed ranges, or a
/// decoder (gzip, zstd) or stdin, which can only read on.
enum Reader<'a> {
    Plain {
        file: std::fs::File,
        counter: &'a AtomicU64,
    },
    Decoded(Box<dyn Read + 'a>),
}

/// The (decompressed) bytes of one input, read forward through a buffer.
struct Stream<'a> {
    reader: Reader<'a>,
    /// The stream offset of `buffer[0]`.
    offset: u64,
    buffer: Vec<u8>,
    eof: bool,
    /// The least a read asks for, so that filling up to a chunk is not many small reads; no
    /// more than a chunk, so that small chunks (in tests) skip committed ranges unread.
    min_read: usize,
}

fn is_compressed(path: &Path) -> bool {
    matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("gz" | "zst" | "zstd")
    )
}

/// The decompressed bytes of `raw`, the stored bytes of `path`, by its extension: `.gz`
/// (gzip, concatenated members too), `.zst`/`.zstd`, anything else as it is.
pub fn decompressed<'a>(
    path: &Path,
    raw: impl std::io::BufRead + 'a,
) -> std::io::Result<Box<dyn Read + 'a>> {
    if !is_compressed(path) {
        return Ok(Box::new(raw));
    }
    Ok(if path.extension().is_some_and(|e| e == "gz") {
        Box::new(flate2::read::MultiGzDecoder::new(raw))
    } else {
        Box::new(zstd::Decoder::with_buffer(raw)?)
    })
}

/// Opens an input at its start; `counter` counts the bytes read as stored.
fn open_stream<'a>(
    input: &Input,
    counter: &'a AtomicU64,
    chunk_bytes: usize,
) -> std::io::Result<Stream<'a>> {
    let reader = match input {
        Input::Stdin => Reader::Decoded(Box::new(CountingReader {
            inner: std::io::stdin().lock(),
            counter,
        })),
        Input::File(path) => {
            let file = std::fs::File::open(path)?;
            if is_compressed(path) {
                let raw = std::io::BufReader::with_capacity(
                    1 << 20,
                    CountingReader {
                        inner: file,
                        counter,
                    },
                );
                Reader::Decoded(decompressed(path, raw)?)
            } else {
                Reader::Plain { file, counter }
            }
        }
    };
    Ok(Stream {
        reader,
        offset: 0,
        buffer: Vec::new(),
        eof: false,
        min_read: chunk_bytes.clamp(1, 64 << 10),
    })
}

impl Stream<'_> {
    /// Reads once into at least `room` (and `min_read`) more bytes of buffer; sets `eof` at
    /// the end.
    fn read_more(&mut self, room: usize) -> std::io::Result<()> {
        let len = self.buffer.len();
        self.buffer.resize(len + room.max(self.min_read), 0);
        let read = match &mut self.reader {
            Reader::Plain { file, counter } => file.read(&mut self.buffer[len..]).inspect(|&n| {
                counter.fetch_add(n as u64, Ordering::Relaxed);
            }),
            Reader::Decoded(reader) => reader.read(&mut self.buffer[len..]),
        };
        let n = read.inspect_err(|_| self.buffer.truncate(len))?;
        self.buffer.truncate(len + n);
        self.eof = n == 0;
        Ok(())
    }

    /// Reads until `want` bytes are buffered or the stream ends.
    fn fill(&mut self, want: usize) -> std::io::Result<()> {
        while !self.eof && self.buffer.len() < want {
            self.read_more(want - self.buffer.len())?;
        }
        Ok(())
    }

    /// Takes the first `n` buffered bytes.
    fn take(&mut self, n: usize) -> Vec<u8> {
        let rest = self.buffer.split_off(n);
        self.offset += n as u64;
        std::mem::replace(&mut self.buffer, rest)
    }

    /// Moves `n` bytes on without keeping them: a seek in a plain file, reading through
    /// otherwise.
    fn skip(&mut self, n: u64) -> std::io::Result<()> {
        let buffered = n.min(self.buffer.len() as u64) as usize;
        self.buffer.drain(..buffered);
        self.offset += buffered as u64;
        let rest = n - buffered as u64;
        if rest == 0 {
            return Ok(());
        }
        // The buffer is empty now, so the reader stands at `offset`.
        match &mut self.reader {
            Reader::Plain { file, counter } => {
                file.seek(SeekFrom::Start(self.offset + rest))?;
                counter.fetch_add(rest, Ordering::Relaxed);
                self.offset += rest;
            }
            Reader::Decoded(reader) => {
                let skipped = std::io::copy(&mut reader.by_ref().take(rest), &mut std::io::sink())?;
                self.offset += skipped;
                self.eof = skipped < rest;
            }
        }
        Ok(())
    }
}

fn newlines(bytes: &[u8]) -> u64 {
    bytes.iter().filter(|&&b| b == b'\n').count() as u64
}

/// What [`scan`] found.
struct Scanned {
    /// The crc32 of each region.
    crcs: Vec<u32>,
    /// The line number at each mark.
    lines: Vec<u64>,
}

/// Reads `stream` from its start through byte `until`, computing the crc32 of each region and
/// the line number at each mark (all within `[0, until]`). `Err(len)` when the stream ends at
/// `len < until`.
fn scan(
    stream: &mut Stream,
    regions: &[(u64, u64)],
    marks: &[u64],
    until: u64,
) -> std::io::Result<Result<Scanned, u64>> {
    debug_assert_eq!(stream.offset, 0);
    let mut hashers: Vec<crc32fast::Hasher> =
        regions.iter().map(|_| crc32fast::Hasher::new()).collect();
    let mut lines = vec![1u64; marks.len()];
    let mut lines_before = 0u64;
    while stream.offset < until {
        let wanted = usize::try_from(until - stream.offset).unwrap_or(usize::MAX);
        stream.fill(wanted.min(1 << 20))?;
        if stream.buffer.is_empty() {
            return Ok(Err(stream.offset));
        }
        let n = stream.buffer.len().min(wanted);
        let (start, end, bytes) = (stream.offset, stream.offset + n as u64, &stream.buffer[..n]);
        for (hasher, &(from, to)) in hashers.iter_mut().zip(regions) {
            let (from, to) = (from.max(start), to.min(end));
            if from < to {
                hasher.update(&bytes[(from - start) as usize..(to - start) as usize]);
            }
        }
        for (line, &mark) in lines.iter_mut().zip(marks) {
            if start < mark && mark <= end {
                *line = 1 + lines_before + newlines(&bytes[..(mark - start) as usize]);
            }
        }
        lines_before += newlines(bytes);
        stream.skip(n as u64)?;
    }
    Ok(Ok(Scanned {
        crcs: hashers.into_iter().map(|h| h.finalize()).collect(),
        lines,
    }))
}

/// The chunks whose crc32 a re-run checks: the first and last of each committed range.
fn fingerprints(state: &SourceState) -> Vec<ChunkSum> {
    let mut sums: Vec<ChunkSum> = state.done.iter().flat_map(|r| [r.head, r.tail]).collect();
    sums.sort_unstable_by_key(|s| (s.start, s.end));
    sums.dedup();
    sums
}

/// Checks a plain file's committed ranges by reading just their fingerprinted chunks.
fn verify_plain(path: &Path, state: &SourceState) -> std::io::Result<Option<Change>> {
    let mut file = std::fs::File::open(path)?;
    let len = file.metadata()?.len();
    if len < state.end() {
        return Ok(Some(Change::Truncated { len }));
    }
    let mut bytes = Vec::new();
    for sum in fingerprints(state) {
        file.seek(SeekFrom::Start(sum.start))?;
        bytes.resize((sum.end - sum.start) as usize, 0);
        match file.read_exact(&mut bytes) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                return Ok(Some(Change::Truncated { len }))
            }
            Err(e) => return Err(e),
        }
        if crc32fast::hash(&bytes) != sum.crc32 {
            return Ok(Some(Change::Differs {
                start: sum.start,
                end: sum.end,
            }));
        }
    }
    Ok(None)
}

/// Checks a compressed file's committed ranges by decompressing it through their end.
fn verify_stream(stream: &mut Stream, state: &SourceState) -> std::io::Result<Option<Change>> {
    let sums = fingerprints(state);
    let regions: Vec<(u64, u64)> = sums.iter().map(|s| (s.start, s.end)).collect();
    Ok(match scan(stream, &regions, &[], state.end())? {
        Err(len) => Some(Change::Truncated { len }),
        Ok(scanned) => sums
            .iter()
            .zip(&scanned.crcs)
            .find(|(sum, &crc)| sum.crc32 != crc)
            .map(|(sum, _)| Change::Differs {
                start: sum.start,
                end: sum.end,
            }),
    })
}

/// Fingerprints a file indexed under a version-1 catalog, which the caller found at the size
/// and mtime it was indexed with (so its content is what was indexed): the first and last
/// `chunk_bytes` of each range and the line number at each range's end. Its failed lines were
/// not recorded and count as none.
fn upgrade_legacy(
    input: &Input,
    legacy: &LegacySource,
    chunk_bytes: u64,
) -> std::io::Result<Result<Vec<DoneRange>, Change>> {
    let ranges: Vec<(u64, u64)> = legacy
        .done
        .iter()
        .copied()
        .filter(|&(start, end)| start < end)
        .collect();
    let regions: Vec<(u64, u64)> = ranges
        .iter()
        .flat_map(|&(start, end)| {
            [
                (start, end.min(start.saturating_add(chunk_bytes))),
                (end.saturating_sub(chunk_bytes).max(start), end),
            ]
        })
        .collect();
    let marks: Vec<u64> = ranges.iter().map(|&(_, end)| end).collect();
    let counter = AtomicU64::new(0);
    let mut stream = open_stream(input, &counter, chunk_bytes as usize)?;
    let until = marks.last().copied().unwrap_or(0);
    let scanned = match scan(&mut stream, &regions, &marks, until)? {
        Ok(scanned) => scanned,
        Err(len) => return Ok(Err(Change::Truncated { len })),
    };
    let sum = |i: usize| ChunkSum {
        start: regions[i].0,
        end: regions[i].1,
        crc32: scanned.crcs[i],
    };
    Ok(Ok(ranges
        .iter()
        .enumerate()
        .map(|(i, &(start, end))| DoneRange {
            start,
            end,
            head: sum(2 * i),
            tail: sum(2 * i + 1),
            line_at_end: scanned.lines[i],
            failed_lines: 0,
        })
        .collect()))
}

/// What the reader thread needs besides the input.
struct ReadContext<'a> {
    chunk_bytes: usize,
    progress: &'a Progress,
    failed: &'a AtomicBool,
}

/// Checks an input against what the catalog says was indexed from it, then sends what was not.
fn read_input(
    catalog: &Mutex<Catalog>,
    input: &Input,
    options: &IndexOptions,
    progress: &Progress,
    failed: &AtomicBool,
    seen: &mut HashSet<SourceKey>,
    mut send: impl FnMut(Chunk) -> bool,
) -> Result<SourceReport> {
    let name = input.name();
    let report = |outcome, earlier_failed_lines| SourceReport {
        name: name.clone(),
        outcome,
        earlier_failed_lines,
    };
    let context = ReadContext {
        chunk_bytes: options.chunk_bytes,
        progress,
        failed,
    };
    let path = match input {
        Input::File(path) => path.as_path(),
        Input::Stdin => Path::new("-"),
    };
    let io = |source| IndexError::Io {
        path: path.to_path_buf(),
        source,
    };
    // Stdin, a named pipe or a device: what was read cannot be found again.
    let regular = match input {
        Input::File(path) => std::fs::metadata(path).map_err(io)?.is_file(),
        Input::Stdin => false,
    };
    if !regular {
        let mut stream =
            open_stream(input, &progress.input_bytes, options.chunk_bytes).map_err(io)?;
        let source = Arc::new(Source {
            name: name.clone(),
            key: None,
        });
        send_chunks(
            &mut stream,
            &SourceState::default(),
            &source,
            1,
            &context,
            &mut send,
        )
        .map_err(io)?;
        return Ok(report(SourceOutcome::Untracked, 0));
    }
    let key = SourceKey::of_file(path).map_err(io)?;
    if !seen.insert(key.clone()) {
        return Ok(report(SourceOutcome::Duplicate, 0));
    }
    let mut state = lock(catalog).source(&key).cloned().unwrap_or_default();
    let indexed_bytes = state.end().max(
        state
            .legacy
            .as_ref()
            .and_then(|l| l.done.last())
            .map_or(0, |r| r.1),
    );
    let mut change = None;
    if let Some(legacy) = state.legacy.take() {
        if legacy.matches(path).map_err(io)? {
            match upgrade_legacy(input, &legacy, options.chunk_bytes as u64).map_err(io)? {
                Ok(done) => {
                    lock(catalog).upgrade_source(&key, done.clone())?;
                    state.done = done;
                }
                Err(found) => change = Some(found),
            }
        } else {
            change = Some(Change::Unverifiable { size: legacy.size });
        }
    }
    // A compressed file indexed in one piece from its start (a finished run, perhaps grown
    // since) is checked while reading through its indexed part, and read on from there; with
    // gaps, it is checked in a first pass so that no gap is read before every range is checked.
    let throwaway = AtomicU64::new(0);
    let mut checked: Option<(Stream, u64)> = None;
    if change.is_none() && !state.done.is_empty() {
        if is_compressed(path) {
            let one_piece = state.done.len() == 1 && state.done[0].start == 0;
            let counter = if one_piece {
                &progress.input_bytes
            } else {
                &throwaway
            };
            let mut stream = open_stream(input, counter, options.chunk_bytes).map_err(io)?;
            change = verify_stream(&mut stream, &state).map_err(io)?;
            if one_piece && change.is_none() {
                let end = state.end();
                progress.json_bytes.fetch_add(end, Ordering::Relaxed);
                progress.resumed_bytes.fetch_add(end, Ordering::Relaxed);
                checked = Some((stream, state.done[0].line_at_end));
            }
        } else {
            change = verify_plain(path, &state).map_err(io)?;
        }
    }
    let mut read_again = None;
    if let Some(change) = change {
        if !options.reindex_changed {
            return Ok(report(
                SourceOutcome::Changed {
                    indexed_bytes,
                    change,
                },
                state.failed_lines(),
            ));
        }
        lock(catalog).forget_source(&key)?;
        state = SourceState::default();
        read_again = Some(SourceOutcome::ReadAgain {
            indexed_bytes,
            change,
        });
    }
    let earlier_failed_lines = state.failed_lines();
    let (mut stream, line) = match checked {
        Some(checked) => checked,
        None => (
            open_stream(input, &progress.input_bytes, options.chunk_bytes).map_err(io)?,
            1,
        ),
    };
    let source = Arc::new(Source {
        name: name.clone(),
        key: Some(key),
    });
    let first_sent =
        send_chunks(&mut stream, &state, &source, line, &context, &mut send).map_err(io)?;
    let outcome = match (read_again, first_sent) {
        (Some(read_again), _) => read_again,
        _ if state.done.is_empty() => SourceOutcome::New,
        (None, None) => SourceOutcome::Unchanged {
            indexed_bytes: state.end(),
        },
        (None, Some(from)) => SourceOutcome::Resumed {
            watermark: state.watermark(),
            from,
        },
    };
    Ok(report(outcome, earlier_failed_lines))
}

/// Cuts the stream, from where it stands (line number `line`), into chunks and sends them,
/// skipping committed ranges. Returns the offset of the first chunk sent.
fn send_chunks(
    stream: &mut Stream,
    state: &SourceState,
    source: &Arc<Source>,
    mut line: u64,
    context: &ReadContext,
    send: &mut impl FnMut(Chunk) -> bool,
) -> std::io::Result<Option<u64>> {
    let (chunk_bytes, progress) = (context.chunk_bytes, context.progress);
    let mut first_sent = None;
    loop {
        if context.failed.load(Ordering::Relaxed) {
            return Ok(first_sent);
        }
        if let Some(range) = state.range_at(stream.offset) {
            let len = range.end - stream.offset;
            stream.skip(len)?;
            progress.json_bytes.fetch_add(len, Ordering::Relaxed);
            progress.resumed_bytes.fetch_add(len, Ordering::Relaxed);
            line = range.line_at_end;
            continue;
        }
        // A chunk ends where the next committed range starts (a line starts there: it is
        // where an earlier run cut a chunk), so that no byte is read twice.
        let limit = state
            .next_start_after(stream.offset)
            .map_or(usize::MAX, |next| {
                usize::try_from(next - stream.offset).unwrap_or(usize::MAX)
            });
        stream.fill(chunk_bytes.min(limit))?;
        if stream.buffer.is_empty() {
            return Ok(first_sent);
        }
        let view = stream.buffer.len().min(limit);
        let at_end = stream.eof || stream.buffer.len() >= limit;
        let window = view.min(chunk_bytes);
        let cut = match stream.buffer[..window].iter().rposition(|&b| b == b'\n') {
            Some(i) => i + 1,
            None => match stream.buffer[window..view].iter().position(|&b| b == b'\n') {
                Some(i) => window + i + 1,
                // The last line of the file (or before a committed range) has no newline.
                None if at_end => view,
                None => {
                    // One line longer than the buffer: read more before cutting.
                    stream.read_more(chunk_bytes)?;
                    continue;
                }
            },
        };
        let start = stream.offset;
        let bytes = stream.take(cut);
        let lines = newlines(&bytes);
        progress
            .json_bytes
            .fetch_add(bytes.len() as u64, Ordering::Relaxed);
        let chunk = Chunk {
            source: source.clone(),
            start,
            end: start + cut as u64,
            first_line: line,
            line_at_end: line + lines,
            bytes,
        };
        line += lines;
        first_sent.get_or_insert(start);
        if !send(chunk) {
            return Ok(first_sent);
        }
    }
}

fn index_chunks(
    catalog: &Mutex<Catalog>,
    store: &dyn BlockStore,
    schema: Arc<Schema>,
    receiver: Receiver<Chunk>,
    budget: usize,
    progress: &Progress,
    on_error: &(dyn Fn(&LineError) + Sync),
) -> Result<()> {
    let mut segment = SegmentBuilder::with_schema(schema.clone());
    let mut ranges: Vec<IngestedChunk> = Vec::new();
    for chunk in receiver {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as i64);
        let mut failed_lines = 0u64;
        for (line, number) in chunk.bytes.split(|&b| b == b'\n').zip(chunk.first_line..) {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match parse_event(line, now).and_then(|event| schema.check(&event).map(|()| event)) {
                Ok(event) => {
                    if !segment.has_room_for(event.fields.iter().map(|(k, _)| k.as_str())) {
                        // The event's new field names would pass a block's limit: write the
                        // block first, as at is_full below (an event always fits a fresh one).
                        let full = std::mem::replace(
                            &mut segment,
                            SegmentBuilder::with_schema(schema.clone()),
                        );
                        flush(catalog, store, full, std::mem::take(&mut ranges), progress)?;
                    }
                    segment.add_event(
                        event.time,
                        event.fields.iter().map(|(k, v)| (k.as_str(), v)),
                    );
                    progress.events.fetch_add(1, Ordering::Relaxed);
                }
                Err(error) => {
                    failed_lines += 1;
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
                let full =
                    std::mem::replace(&mut segment, SegmentBuilder::with_schema(schema.clone()));
                flush(catalog, store, full, std::mem::take(&mut ranges), progress)?;
            }
        }
        if let Some(key) = &chunk.source.key {
            ranges.push(IngestedChunk {
                key: key.clone(),
                sum: ChunkSum {
                    start: chunk.start,
                    end: chunk.end,
                    crc32: crc32fast::hash(&chunk.bytes),
                },
                line_at_end: chunk.line_at_end,
                failed_lines,
            });
        }
        if segment.memory_bytes() >= budget {
            let full = std::mem::replace(&mut segment, SegmentBuilder::with_schema(schema.clone()));
            flush(catalog, store, full, std::mem::take(&mut ranges), progress)?;
        }
    }
    flush(catalog, store, segment, ranges, progress)
}

/// Writes a segment as a block and commits it with the source ranges it holds.
pub(crate) fn flush(
    catalog: &Mutex<Catalog>,
    store: &dyn BlockStore,
    segment: SegmentBuilder,
    ranges: Vec<IngestedChunk>,
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
    let entry = store.put(id, segment.into_block_input()?)?;
    lock(catalog).commit_block(entry, &ranges)?;
    progress.blocks.fetch_add(1, Ordering::Relaxed);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A chunk sent: (start, end, first line, line at end).
    type Span = (u64, u64, u64, u64);

    /// Runs the reader over `path` as `quarry index` does; returns its report and the chunks
    /// it sent, as spans and as they would be committed.
    fn read(
        catalog: &Mutex<Catalog>,
        path: &Path,
        chunk_bytes: usize,
    ) -> (SourceReport, Vec<Span>, Vec<IngestedChunk>) {
        let options = IndexOptions {
            chunk_bytes,
            ..IndexOptions::default()
        };
        let (progress, failed) = (Progress::default(), AtomicBool::new(false));
        let mut chunks = Vec::new();
        let report = read_input(
            catalog,
            &Input::File(path.to_path_buf()),
            &options,
            &progress,
            &failed,
            &mut HashSet::new(),
            |chunk| {
                chunks.push(chunk);
                true
            },
        )
        .unwrap();
        let key = SourceKey::of_file(path).unwrap();
        let ingested = chunks
            .iter()
            .map(|c| IngestedChunk {
                key: key.clone(),
                sum: ChunkSum {
                    start: c.start,
                    end: c.end,
                    crc32: crc32fast::hash(&c.bytes),
                },
                line_at_end: c.line_at_end,
                failed_lines: 0,
            })
            .collect();
        let spans = chunks
            .iter()
            .map(|c| (c.start, c.end, c.first_line, c.line_at_end))
            .collect();
        (report, spans, ingested)
    }

    /// Every span starts on a line boundary of `content` with the right line number, and the
    /// spans plus `committed` tile `[0, content.len())` exactly.
    fn assert_tiles(content: &[u8], spans: &[Span], committed: &[(u64, u64)]) {
        let line_at = |offset: u64| 1 + newlines(&content[..offset as usize]);
        for &(start, end, first_line, line_at_end) in spans {
            assert_eq!((first_line, line_at_end), (line_at(start), line_at(end)));
        }
        let mut all: Vec<(u64, u64)> = spans.iter().map(|s| (s.0, s.1)).collect();
        all.extend_from_slice(committed);
        all.sort_unstable();
        let mut at = 0;
        for (start, end) in all {
            assert!(
                start == at && start < end,
                "gap or overlap at {at}: {start}..{end}"
            );
            at = end;
        }
        assert_eq!(at, content.len() as u64);
    }

    fn write(path: &Path, content: &[u8]) {
        let stored = if is_compressed(path) {
            zstd::encode_all(content, 1).unwrap()
        } else {
            content.to_vec()
        };
        std::fs::write(path, stored).unwrap();
    }

    fn text(lines: &[(usize, bool)]) -> Vec<u8> {
        let mut out = Vec::new();
        for (i, &(len, newline)) in lines.iter().enumerate() {
            out.extend(std::iter::repeat_n(b'a' + (i % 26) as u8, len));
            if newline {
                out.push(b'\n');
            }
        }
        out
    }

    /// The case behind the rule that a chunk ends where a committed range starts: the first
    /// run cut "aaaa\n" | "bb" at the end of the file and committed only "bb"; after "\ncc\n"
    /// is appended, a chunk from 0 would otherwise run to the new newline at 7, over "bb".
    #[test]
    fn chunk_stops_at_a_committed_range() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.json");
        let catalog = Mutex::new(
            Catalog::open_or_create(&dir.path().join("data"), Default::default()).unwrap(),
        );
        std::fs::write(&path, "aaaa\nbb").unwrap();
        let (_, spans, ingested) = read(&catalog, &path, 8);
        assert_eq!(spans, vec![(0, 5, 1, 2), (5, 7, 2, 2)]);
        lock(&catalog).commit_ranges(&ingested[1..]).unwrap();
        std::fs::write(&path, "aaaa\nbb\ncc\n").unwrap();
        let (report, spans, _) = read(&catalog, &path, 8);
        assert_eq!(spans, vec![(0, 5, 1, 2), (7, 11, 2, 4)]);
        assert_eq!(
            report.outcome,
            SourceOutcome::Resumed {
                watermark: 0,
                from: 0
            }
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// An interrupted run (any subset of its chunks committed) followed by an append: the
        /// re-run reads every byte no run committed, exactly once, in chunks that start on the
        /// file's lines with its line numbers; a changed or truncated prefix is reported and
        /// nothing is read.
        #[test]
        fn rerun_reads_each_uncommitted_byte_once(
            first in proptest::collection::vec((0usize..30, prop::bool::weighted(0.8)), 0..40),
            appended in proptest::collection::vec((0usize..30, prop::bool::weighted(0.8)), 0..10),
            committed_mask in proptest::collection::vec(any::<bool>(), 40 * 31),
            chunk_bytes in 1usize..100,
            last_line_ends in any::<bool>(),
            compressed in any::<bool>(),
            flip in any::<prop::sample::Index>(),
        ) {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join(if compressed { "a.json.zst" } else { "a.json" });
            let catalog = Mutex::new(
                Catalog::open_or_create(&dir.path().join("data"), Default::default()).unwrap(),
            );
            let mut content = text(&first);
            if !last_line_ends && content.last() == Some(&b'\n') {
                // Chunks cut at the end of a file without a final newline are the ones an
                // append would cut differently.
                content.pop();
            }
            write(&path, &content);
            let (report, spans, ingested) = read(&catalog, &path, chunk_bytes);
            prop_assert_eq!(report.outcome, SourceOutcome::New);
            assert_tiles(&content, &spans, &[]);

            // Commit a subset, as an interrupted multi-threaded run may have.
            let kept: Vec<IngestedChunk> = ingested
                .into_iter()
                .zip(&committed_mask)
                .filter(|(_, &keep)| keep)
                .map(|(chunk, _)| chunk)
                .collect();
            lock(&catalog).commit_ranges(&kept).unwrap();
            let committed: Vec<(u64, u64)> = kept.iter().map(|c| (c.sum.start, c.sum.end)).collect();

            content.extend(text(&appended));
            write(&path, &content);
            let (report, spans, _) = read(&catalog, &path, chunk_bytes);
            assert_tiles(&content, &spans, &committed);
            let expected = if committed.is_empty() {
                SourceOutcome::New
            } else if spans.is_empty() {
                SourceOutcome::Unchanged { indexed_bytes: committed.last().unwrap().1 }
            } else {
                let watermark = if committed[0].0 == 0 {
                    lock(&catalog).source(&SourceKey::of_file(&path).unwrap()).unwrap().watermark()
                } else {
                    0
                };
                SourceOutcome::Resumed { watermark, from: spans[0].0 }
            };
            prop_assert_eq!(report.outcome, expected);

            if let Some(&(start, end)) = committed.first() {
                // A flipped byte in a checked chunk (the first committed chunk is the first
                // chunk of its range), or a file cut short of the committed end: reported,
                // nothing read.
                let at = start as usize + flip.index((end - start) as usize);
                let mut changed = content.clone();
                changed[at] ^= 1;
                let truncated = content[..committed.last().unwrap().1 as usize - 1].to_vec();
                for (case, content) in [("flipped", changed), ("truncated", truncated)] {
                    write(&path, &content);
                    let (report, spans, _) = read(&catalog, &path, chunk_bytes);
                    prop_assert!(spans.is_empty(), "{}", case);
                    let expected_change = match case {
                        "flipped" => matches!(report.outcome, SourceOutcome::Changed { change: Change::Differs { .. }, .. }),
                        _ => matches!(report.outcome, SourceOutcome::Changed { change: Change::Truncated { .. }, .. }),
                    };
                    prop_assert!(expected_change, "{}: {:?}", case, report.outcome);
                }
            }
        }
    }
}
