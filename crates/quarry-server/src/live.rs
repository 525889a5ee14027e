//! A tenant's write side: events acknowledged, searchable at once, flushed to blocks later.
//!
//! ```text
//!  ingest ──► parse (no lock) ──► per 1,024 events: add to an active segment, take a WAL
//!             sequence number, queue the record ──► wait for fsync and for a seal round ──► ack
//!  sealer ──► seal rounds: each active segment with events becomes a memory block
//!  search ──► the published snapshot: block files + memory blocks (no indexing work)
//!  background: compact small memory blocks, flush them to block files (catalog commit with
//!              the WAL position), drop flushed WAL segments, merge small block files
//! ```
//!
//! **Searchable at once, through the same code.** New events go into `SegmentBuilder`s, the
//! *active* segments (one per core, so requests index in parallel). A *seal* encodes one as a
//! block in memory (`SegmentBuilder::encode_block`) and opens that with
//! `BlockReader::from_bytes`. So a search sees blocks only, in memory or in files, and every
//! query feature answers alike wherever an event sits: there is no second query path to keep
//! in step. Seals run in numbered *rounds* on the sealer thread; an ingest's reply waits for
//! the first round that began after its events were added (group commit, for visibility:
//! under load rounds run back to back, each sealing what arrived during the previous one).
//! Searches therefore do no indexing work and still see every acknowledged event. An active
//! segment that reaches `seal_bytes` is sealed by the ingest that filled it. Small memory
//! blocks (every round seals a few thousand events at most, even under load) wait for the
//! flush, which merges them all at once; only past `max_memory_blocks` of them, when searches
//! would visit too many, are they merged into one in the background first.
//!
//! **Durable, then acknowledged.** Holding its active segment, an ingest takes the next WAL
//! sequence number and queues its WAL record; queueing under the sequence lock keeps the WAL
//! in sequence order, and holding the segment means a seal never sees an event without a
//! sequence number. The reply waits for the WAL writer's fsync ([`crate::wal_writer`]),
//! shared by every request queued meanwhile (group commit). An event can thus be visible a
//! moment before it is durable; it is acknowledged only after both.
//!
//! **Flush.** When memory holds `flush_bytes`, or its oldest event is `flush_interval` old,
//! the background thread seals every active segment (holding all of them, so the WAL
//! position read meanwhile is exact) and writes the memory blocks to block files: a big one
//! as it is, the small ones merged in one pass into as few files as the merge policy allows
//! (the size-tiered merge combines the flushed files later), then commits them to the catalog
//! together with the last WAL sequence number they hold (`Catalog::commit_flush`). Only then
//! are the memory blocks dropped (in the same lock as the new files join the snapshot: no
//! search sees an event twice or misses it) and the WAL segments at or below that number
//! removed. On restart, WAL records after the committed number are replayed into an active
//! segment and sealed before the first search: nothing acknowledged is lost, and nothing in a
//! committed block is added twice.

use crate::wal_writer::{WalHandle, WalWait};
use quarry_format::block::BlockInput;
use quarry_format::column::ChunkCache;
use quarry_format::{BlockReader, Value};
use quarry_index::event::{format_time, parse_event, parse_event_as_sent, Event, TimeAsSent};
use quarry_index::merge::{
    entries_of, merge_into, merge_readers, pick_merge_skipping, write_block, MergePolicy,
};
use quarry_index::pipeline::Progress;
use quarry_index::segment::SegmentBuilder;
use quarry_index::Schema;
use quarry_query::{DamagedBlock, Searcher};
use quarry_store::{BlockEntry, BlockStore, Mapping, Metastore};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// When memory is written to blocks, and how much it may hold.
#[derive(Debug, Clone)]
pub struct IngestConfig {
    /// Memory (active segment and memory blocks) at which it is flushed to a block file.
    pub flush_bytes: usize,
    /// Age of the oldest unflushed event at which it is flushed.
    pub flush_interval: Duration,
    /// Size of the active segment at which it is sealed into a memory block.
    pub seal_bytes: usize,
    /// How often the sealer thread seals active segments when no ingest waits for it
    /// (ingests that wait get a round at once).
    pub seal_interval: Duration,
    /// Memory over which ingest is refused (429) until a flush makes room.
    pub max_memory_bytes: usize,
    /// Small memory blocks beyond which they are merged into one before the flush (which
    /// merges them anyway): a bound on the blocks a search visits.
    pub max_memory_blocks: usize,
    /// The size-tiered merge of block files (`quarry index`'s). Its target is cut to a
    /// quarter of `max_memory_bytes` at open: a merge builds its output in memory, about 4×
    /// its input (merge.rs), so merging stays within the memory configured for events.
    pub merge: MergePolicy,
    /// Decoded column chunks kept across searches for fetching events (0: none kept).
    pub chunk_cache_bytes: u64,
    /// Where block files go: the data directory, or object storage (issue 28).
    pub storage: quarry_store::Storage,
    /// Where the tenants' catalogs and the tenant registry are: the data directory, or
    /// PostgreSQL (issue 29).
    pub metastore: quarry_store::MetastoreConfig,
    /// What this node does: a searcher follows the catalogs the indexers write (replicas,
    /// refreshed every `REFRESH_PERIOD`) and ingests nothing.
    pub role: Role,
    /// How long a block retired from a shared object store (merged, expired) stays readable
    /// before its bytes are deleted: searchers that have not read the catalog since, or are
    /// searching it, still read it. Local blocks go at once.
    pub retired_grace: Duration,
    /// Over a shared metastore and object storage: how long another writer of a tenant must
    /// have been silent before this one takes its blocks over (`adopt_silent_writers`).
    pub adopt_after: Duration,
}

/// A node's part in a cluster (`quarry serve --role`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Role {
    /// Ingests (WAL, seal, flush, publish, merge) and searches: one machine's node.
    #[default]
    All,
    /// Ingests and searches; in a cluster, the nodes that own WALs. The same work as `All`.
    Indexer,
    /// Searches the blocks the indexers published (a shared metastore and object storage),
    /// owning nothing but caches.
    Searcher,
}

impl std::str::FromStr for Role {
    type Err = String;

    fn from_str(text: &str) -> Result<Role, String> {
        match text {
            "all" => Ok(Role::All),
            "indexer" => Ok(Role::Indexer),
            "searcher" => Ok(Role::Searcher),
            other => Err(format!("unknown role {other:?}: all, indexer or searcher")),
        }
    }
}

/// How often a searcher reads the catalogs and the tenant registry again.
pub const REFRESH_PERIOD: Duration = Duration::from_secs(1);

/// How long a block retired from a shared object store stays readable by default: longer than
/// a searcher's refresh and than a distributed search's fetch (its leaf keeps a snapshot 60 s).
pub const RETIRED_GRACE: Duration = Duration::from_secs(90);

/// How long a writer of a shared catalog is silent by default before another takes its blocks
/// over: far longer than a restart, so an indexer restarted keeps its own.
pub const ADOPT_AFTER: Duration = Duration::from_secs(120);

impl Default for IngestConfig {
    fn default() -> Self {
        IngestConfig {
            flush_bytes: 64 << 20,
            flush_interval: Duration::from_secs(10),
            seal_bytes: 16 << 20,
            seal_interval: Duration::from_millis(50),
            max_memory_bytes: 512 << 20,
            max_memory_blocks: 128,
            merge: MergePolicy::default(),
            chunk_cache_bytes: 128 << 20,
            storage: quarry_store::Storage::Local,
            metastore: quarry_store::MetastoreConfig::Local,
            role: Role::All,
            retired_grace: RETIRED_GRACE,
            adopt_after: ADOPT_AFTER,
        }
    }
}

/// Memory blocks get ids from here up, far above any file's, so that their names never
/// collide with a block file's and cursors tell them apart.
const MEMORY_BLOCK_IDS: u64 = 1 << 48;

/// Whether a snapshot's block `id` is a published block file (in the catalog), not a memory
/// block of events not yet flushed.
pub fn is_published_block(id: u64) -> bool {
    id < MEMORY_BLOCK_IDS
}

/// Where a live index's memory block ids start: at one of 65,279 random places 2^40 apart
/// above `MEMORY_BLOCK_IDS` and below 2^56 (the searcher keeps the bits above for the union
/// of several tenants), so that two indexers' memory blocks, searched side by side in a
/// cluster where a cursor names a hit by (time, block, doc), almost never share ids: paging
/// across a tie of two such hits would skip one.
fn first_memory_id() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    const SPACING: u64 = 1 << 40;
    let places = ((1 << 56) - MEMORY_BLOCK_IDS) / SPACING - 1;
    let random = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    MEMORY_BLOCK_IDS + random % places * SPACING
}

/// Version byte of a WAL record's payload: `[1][now: i64 LE][JSON lines joined by '\n']`. The
/// lines are the events as sent (or, for plain text, as turned into JSON), and `now` is the
/// ingest time the request gave events without a time: replay parses them again and gets the
/// same events.
const PAYLOAD_VERSION: u8 = 1;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LiveError {
    #[error("ingest buffer is full ({bytes} bytes in memory, limit {limit}); retry after the next flush")]
    Full { bytes: usize, limit: usize },
    #[error("write-ahead log: {0}")]
    Wal(String),
    #[error("{0}")]
    Index(#[from] quarry_index::error::IndexError),
    #[error("{0}")]
    Format(#[from] quarry_format::FormatError),
    #[error("{0}")]
    Catalog(#[from] quarry_store::CatalogError),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("WAL record {seq}: {reason}")]
    BadRecord { seq: u64, reason: String },
}

pub type Result<T, E = LiveError> = std::result::Result<T, E>;

/// Events of one request, parsed and ready to add, with their WAL payload.
pub struct Batch {
    /// The ingest time given to events without a time.
    now: i64,
    events: Vec<Event>,
    /// The events' lines, one after the other; event i's is `text[ends[i-1]..ends[i]]`.
    text: Vec<u8>,
    ends: Vec<usize>,
}

/// Events per WAL record: a big request is added and logged in pieces, so that a search
/// waits for at most one piece being added, never for a whole request.
const RECORD_EVENTS: usize = 1024;

impl Batch {
    /// Parses JSON event lines (`(line number, bytes)`); the lines that fail come back as
    /// `(line number, reason)` and are left out of the batch, the others are kept.
    /// A line whose values do not fit `schema`'s mapping is an error too (`Schema::check`).
    pub fn parse<'a>(
        now: i64,
        lines: impl IntoIterator<Item = (usize, &'a [u8])>,
        schema: &Schema,
    ) -> (Batch, Vec<(usize, String)>) {
        let (batch, errors, _) = Self::parse_with(now, lines, schema, false);
        (batch, errors)
    }

    /// `parse`, and for each event kept, how its document gave its time where an
    /// Elasticsearch `_source` could not show it again from the event's time alone (see
    /// [`TIME_AS_SENT_FIELD`]): the value for that field, or `None`.
    pub(crate) fn parse_documents<'a>(
        now: i64,
        lines: impl IntoIterator<Item = (usize, &'a [u8])>,
        schema: &Schema,
    ) -> (Batch, Vec<(usize, String)>, Vec<Option<String>>) {
        Self::parse_with(now, lines, schema, true)
    }

    fn parse_with<'a>(
        now: i64,
        lines: impl IntoIterator<Item = (usize, &'a [u8])>,
        schema: &Schema,
        as_sent: bool,
    ) -> (Batch, Vec<(usize, String)>, Vec<Option<String>>) {
        let mut batch = Batch {
            now,
            events: Vec::new(),
            text: Vec::with_capacity(64 << 10),
            ends: Vec::new(),
        };
        let mut errors = Vec::new();
        let mut sent_times = Vec::new();
        for (number, line) in lines {
            let parsed = parse_event_as_sent(line, now).and_then(|(mut event, sent)| {
                if let (true, Some(sent)) = (as_sent, &sent) {
                    keep_time_key(&mut event, sent);
                }
                schema.check(&event).map(|()| (event, sent))
            });
            match parsed {
                Ok((event, sent)) => {
                    if as_sent {
                        sent_times.push(time_as_sent(event.time, sent));
                    }
                    batch.text.extend_from_slice(line);
                    batch.ends.push(batch.text.len());
                    batch.events.push(event);
                }
                Err(error) => errors.push((number, error.to_string())),
            }
        }
        (batch, errors, sent_times)
    }

    /// The WAL payload of events `range`: `[version][now][lines joined by '\n']`.
    fn payload(&self, range: std::ops::Range<usize>) -> Vec<u8> {
        let start = if range.start == 0 {
            0
        } else {
            self.ends[range.start - 1]
        };
        let end = self.ends[range.end - 1];
        let mut payload = Vec::with_capacity(9 + end - start + range.len());
        payload.push(PAYLOAD_VERSION);
        payload.extend_from_slice(&self.now.to_le_bytes());
        let mut from = start;
        for (i, &to) in self.ends[range].iter().enumerate() {
            if i > 0 {
                payload.push(b'\n');
            }
            payload.extend_from_slice(&self.text[from..to]);
            from = to;
        }
        payload
    }

    /// The events a WAL record holds (replay).
    fn from_payload(seq: u64, payload: &[u8]) -> Result<Vec<Event>> {
        let bad = |reason: String| LiveError::BadRecord { seq, reason };
        if payload.len() < 9 || payload[0] != PAYLOAD_VERSION {
            return Err(bad("unknown payload version".into()));
        }
        let now = i64::from_le_bytes(payload[1..9].try_into().expect("8 bytes"));
        let mut events = Vec::new();
        if payload.len() > 9 {
            for (i, line) in payload[9..].split(|&b| b == b'\n').enumerate() {
                let mut event = parse_event(line, now)
                    .map_err(|e| bad(format!("line {} does not parse again: {e}", i + 1)))?;
                // A document's time key kept under its name, as when it came (`parse_with`).
                let sent = event.fields.iter().find_map(|(name, value)| match value {
                    Value::Str(text) if name == TIME_AS_SENT_FIELD => Some(text.clone()),
                    _ => None,
                });
                let sent = sent
                    .and_then(|text| sent_time(&text, event.time))
                    .map(|sent| serde_json::Value::Object(sent).to_string());
                if let Some(Ok((_, Some(sent)))) =
                    sent.map(|text| parse_event_as_sent(text.as_bytes(), now))
                {
                    keep_time_key(&mut event, &sent);
                }
                events.push(event);
            }
        }
        Ok(events)
    }

    /// Keeps the events `keep` marks, each with the fields `added` gives it (numbers and
    /// strings; first in its line, last in its fields).
    pub(crate) fn amend(&mut self, keep: &[bool], added: &[Vec<(&str, serde_json::Value)>]) {
        let mut text = Vec::with_capacity(self.text.len() + 24 * added.len());
        let mut ends = Vec::with_capacity(self.ends.len());
        let mut events = Vec::with_capacity(self.events.len());
        let mut from = 0;
        for (i, mut event) in std::mem::take(&mut self.events).into_iter().enumerate() {
            let line = &self.text[from..self.ends[i]];
            from = self.ends[i];
            if !keep.get(i).copied().unwrap_or(true) {
                continue;
            }
            match added.get(i).filter(|fields| !fields.is_empty()) {
                Some(fields) => {
                    // A parsed event's line is a JSON object.
                    let trimmed = line.trim_ascii_start();
                    let rest = trimmed.strip_prefix(b"{").unwrap_or(trimmed);
                    text.push(b'{');
                    for (n, (name, value)) in fields.iter().enumerate() {
                        if n > 0 {
                            text.push(b',');
                        }
                        text.extend_from_slice(
                            serde_json::Value::from(*name).to_string().as_bytes(),
                        );
                        text.push(b':');
                        text.extend_from_slice(value.to_string().as_bytes());
                        let value = match value {
                            serde_json::Value::Number(n) if n.as_u64().is_some() => {
                                number_value(n.as_u64().unwrap_or_default())
                            }
                            serde_json::Value::String(s) => quarry_format::Value::Str(s.clone()),
                            other => quarry_format::Value::Str(other.to_string()),
                        };
                        event.fields.push(((*name).to_owned(), value));
                    }
                    if !rest.trim_ascii_start().starts_with(b"}") {
                        text.push(b',');
                    }
                    text.extend_from_slice(rest);
                }
                None => text.extend_from_slice(line),
            }
            ends.push(text.len());
            events.push(event);
        }
        self.text = text;
        self.ends = ends;
        self.events = events;
    }

    pub fn len(&self) -> usize {
        self.events.len()
    }

    /// The parsed events, in the order of the lines that parsed.
    pub fn events(&self) -> &[Event] {
        &self.events
    }

    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }
}

/// The hidden field that keeps how a document sent through the Elasticsearch API gave its
/// time, where its `_source` could not show it again from the event's time alone: `{}` for a
/// document without a time (its time is the ingestion time; its `_source` shows none),
/// `"key"` for a time given as the text `format_time` writes (RFC 3339 in UTC) under another
/// key than `@timestamp`, else `{"key": value}` as sent (`"timestamp": 1700000000`). A
/// document whose `@timestamp` is the text `format_time` writes (as Beats and Logstash send
/// it) needs none. `sent_time` reads it back.
pub(crate) use quarry_store::mapping::TIME_AS_SENT_FIELD;

/// A document sent through the Elasticsearch API whose time came from `timestamp` or `time`
/// keeps that key as a field too: a query, a `fields` or an aggregation on it finds it, as on
/// Elasticsearch, where it is an ordinary field (`@timestamp` is the time's own name there,
/// and Quarry's `_time` its own). The event's `_time` is the same instant.
fn keep_time_key(event: &mut Event, sent: &TimeAsSent) {
    if matches!(sent.key, "timestamp" | "time") {
        event.fields.push((sent.key.to_owned(), sent.value()));
    }
}

/// The value of [`TIME_AS_SENT_FIELD`] for an event at `time` whose document gave `sent`.
fn time_as_sent(time: i64, sent: Option<TimeAsSent>) -> Option<String> {
    match sent {
        None => Some("{}".to_owned()),
        Some(sent) if sent.is_text(&format_time(time)) => {
            // The text `format_time` writes: `@timestamp` needs nothing, another key only
            // its name (a JSON string, read back by `sent_time`). A value per event (all
            // distinct) was 9 MB of the 60 MB a million `_bulk` events with `_time` took.
            (sent.key != "@timestamp").then(|| serde_json::Value::from(sent.key).to_string())
        }
        Some(sent) => Some(format!(
            "{{{}:{}}}",
            serde_json::Value::from(sent.key),
            sent.value_json()
        )),
    }
}

/// How the document of an event at `time` gave its time, from its [`TIME_AS_SENT_FIELD`]
/// value: `{}` (no time: an empty map), `{"key": value}` as sent, or `"key"` (the key, with
/// the text `format_time` writes for `time`). `None` if the text is neither.
pub(crate) fn sent_time(
    text: &str,
    time: i64,
) -> Option<serde_json::Map<String, serde_json::Value>> {
    match serde_json::from_str::<serde_json::Value>(text).ok()? {
        serde_json::Value::Object(sent) => Some(sent),
        serde_json::Value::String(key) => {
            Some(std::iter::once((key, format_time(time).into())).collect())
        }
        _ => None,
    }
}

/// `n` as parsing its JSON gives it (I64 whenever it fits), so a replayed event is the same.
fn number_value(n: u64) -> quarry_format::Value {
    i64::try_from(n).map_or(quarry_format::Value::U64(n), quarry_format::Value::I64)
}

/// A sealed in-memory block and its encoded bytes (written as they are by a flush).
#[derive(Clone)]
struct MemoryBlock {
    reader: Arc<BlockReader>,
    bytes: Arc<Vec<u8>>,
}

struct State {
    /// Committed block files, by catalog id.
    disk: Vec<(u64, Arc<BlockReader>)>,
    /// Block files that failed to open or to merge: left out, reported with every answer.
    damaged: Vec<(u64, DamagedBlock)>,
    /// The ids among `disk` and `damaged` that other nodes write (`foreign_listing`), with
    /// their writers: only `refresh` adds and removes them; this node's flushes, merges and
    /// retention never do.
    foreign: std::collections::HashMap<u64, String>,
    /// Oldest first (ingest appends; only the background thread removes or replaces).
    memory: Vec<MemoryBlock>,
    /// When the oldest event not yet in a block file arrived.
    unflushed_since: Option<Instant>,
    next_memory_id: u64,
    /// The snapshot of the current state, made by the first search after a change.
    snapshot: Option<Arc<Searcher>>,
    /// Remote blocks whose local copy was dropped after a checksum failed in it: a second
    /// failure is the block's own damage.
    copies_dropped: std::collections::HashSet<u64>,
}

impl State {
    /// The published blocks it holds, searchable or damaged.
    fn block_ids(&self) -> std::collections::HashSet<u64> {
        self.disk
            .iter()
            .map(|(id, _)| *id)
            .chain(self.damaged.iter().map(|(id, _)| *id))
            .collect()
    }

    fn memory_block_bytes(&self) -> usize {
        self.memory.iter().map(|b| b.bytes.len()).sum::<usize>()
    }
}

/// Where new events go: one per core, so that requests index in parallel.
struct Active {
    segment: SegmentBuilder,
    /// What `active_bytes` counts for this segment.
    counted_bytes: usize,
}

/// One tenant's live index over the data directory's catalog.
///
/// Locks, always taken in this order: active segments (ascending), `last_seq`, `state`. An
/// ingest holds one active segment from adding its events until its sequence number is taken
/// and its WAL record queued. A seal round locks the active segments one at a time, waiting
/// for at most one record's worth of events being added to each (`RECORD_EVENTS`); a flush
/// holds all of them at once, so the WAL position it reads covers exactly what it seals.
pub struct LiveIndex {
    tenant: String,
    /// Blocks that left the catalog lately, still searchable for plans made before
    /// (`keep_gone`).
    gone: Mutex<Vec<(u64, Arc<BlockReader>, Instant)>>,
    /// Held through a refresh or a takeover, from reading the catalog to the searchable
    /// blocks following it: a refresh asked while another is opening blocks waits for it,
    /// else it would find the catalog read already and answer before the blocks are in.
    following: Mutex<()>,
    /// The writer this node commits the tenant's blocks as, over a shared metastore.
    writer: Option<String>,
    /// The tenant's analyzers and mapping; replaced when the mapping grows.
    schema: Mutex<Arc<Schema>>,
    config: IngestConfig,
    catalog: Mutex<Box<dyn Metastore>>,
    /// Where the catalog's blocks' bytes are.
    store: Arc<dyn BlockStore>,
    actives: Vec<Mutex<Active>>,
    /// Round robin over `actives`.
    next_active: AtomicUsize,
    /// Approximate bytes in the active segments.
    active_bytes: AtomicUsize,
    /// The last WAL sequence number handed out.
    last_seq: Mutex<u64>,
    state: Mutex<State>,
    wal: WalHandle,
    seal_rounds: SealRounds,
    /// Shared by every snapshot: the newest chunks, which tails fetch again and again.
    chunk_cache: Option<Arc<ChunkCache>>,
    wal_dir: PathBuf,
    stats: BackgroundStats,
    /// Live tails: every memory block a seal makes, i.e. the events it makes searchable, once.
    sealed: tokio::sync::broadcast::Sender<Arc<BlockReader>>,
    /// Blocks that searches found damaged while reading them (a checksum that failed after
    /// the block was opened: the file changed under the server), not yet taken out of
    /// `State::disk` (`take_reported_damage`).
    reported_damage: Arc<Mutex<Vec<DamagedBlock>>>,
    /// The ids whose events snapshots resolve (documents.rs), their generation, and the ids
    /// each recent generation added.
    documents: Mutex<DocumentIds>,
    /// The events of those ids found in each block, by the reader's unique id
    /// (`BlockReader::uid`), with the generation they were found for: a block never changes,
    /// so it is searched again only for the ids listed since.
    occurrences: Mutex<HashMap<u64, (u64, crate::documents::Occurrences)>>,
    /// Blocks retired from a shared object store, deleted once their grace has passed
    /// (`retire`).
    retired: Mutex<Vec<(u64, Instant)>>,
}

/// The ids snapshots resolve (documents.rs).
#[derive(Default)]
struct DocumentIds {
    entries: Arc<DocEntries>,
    generation: u64,
    /// (generation, the ids it listed first), the last `ADDED_KEPT` generations.
    added: std::collections::VecDeque<(u64, Vec<String>)>,
}

/// Generations whose new ids are kept: a block found for an older one is searched again
/// for every id.
const ADDED_KEPT: usize = 256;

type DocEntries = HashMap<String, crate::documents::Entry>;

/// Sealed blocks a live tail may fall behind by before it is dropped (the blocks it has not
/// read stay in memory for it until then).
const TAIL_BACKLOG_BLOCKS: usize = 64;

/// Counts and total durations of the background work, for metrics.
#[derive(Debug, Default)]
pub struct BackgroundStats {
    pub flushes: AtomicU64,
    pub flush_nanos: AtomicU64,
    pub compactions: AtomicU64,
    pub compaction_nanos: AtomicU64,
    pub merges: AtomicU64,
    pub merge_nanos: AtomicU64,
    pub seal_rounds: AtomicU64,
}

impl BackgroundStats {
    fn record(count: &AtomicU64, nanos: &AtomicU64, started: Instant) {
        count.fetch_add(1, Ordering::Relaxed);
        nanos.fetch_add(started.elapsed().as_nanos() as u64, Ordering::Relaxed);
    }
}

/// Seal rounds: numbered, requested by ingests, awaited by their replies.
struct SealRounds {
    /// The last round begun.
    begun: AtomicU64,
    /// The last round done.
    done: tokio::sync::watch::Sender<u64>,
    requested: Mutex<bool>,
    wake: Condvar,
}

/// What an ingest returns: when its events are durable, and when visible.
pub struct Ingested {
    /// Completes once the WAL record is fsynced (None: `durable` was false).
    pub durable: Option<WalWait>,
    /// The seal round after which the events are searchable ([`LiveIndex::visible`]).
    pub visible_after: u64,
}

/// What opening replayed from the WAL.
#[derive(Debug, Default, Clone, Copy)]
pub struct Recovery {
    pub records: usize,
    pub events: usize,
    pub torn_bytes: u64,
}

impl LiveIndex {
    /// Opens the tenant `tenant` over `catalog`, whose blocks are in `store` (the local
    /// `Catalog` and its directory are the embedded default): opens its blocks, replays the WAL
    /// in `wal_dir` past the catalog's committed position, and starts the WAL writer.
    pub fn open(
        catalog: Box<dyn Metastore>,
        store: Arc<dyn BlockStore>,
        tenant: &str,
        wal_dir: &Path,
        config: IngestConfig,
    ) -> Result<(LiveIndex, Recovery)> {
        let mut config = config;
        config.merge.target_block_bytes = config
            .merge
            .target_block_bytes
            .min((config.max_memory_bytes as u64 / 4).max(1 << 20));
        let schema = Arc::new(Schema::from_settings(catalog.settings()));
        // A replica's blocks, and over a shared object store the other writers' (which a
        // node of role `all` answers for too), are foreign: `refresh` follows them.
        let foreign = foreign_listing(&*catalog, &config);
        let mut entries = if catalog.is_replica() {
            Vec::new()
        } else {
            catalog.blocks().to_vec()
        };
        entries.extend(foreign.iter().map(|(entry, _)| entry.clone()));
        let mut disk = Vec::with_capacity(entries.len());
        let mut damaged = Vec::new();
        let opened = quarry_store::block_store::open_all(&*store, &entries);
        for (entry, opened) in entries.iter().zip(opened) {
            match opened {
                Ok(reader) => disk.push((entry.id, Arc::new(reader))),
                Err(error) => {
                    let path = store.location(entry.id);
                    tracing::warn!(block = %path.display(), %error, "damaged block left out");
                    damaged.push((entry.id, DamagedBlock::of(Some(entry.id), path, &error)))
                }
            }
        }
        // A replica's store is the indexers': a block not listed yet is one being published.
        // So is a shared object store that several writers put blocks in: this writer lists
        // only its own, and another's block not listed yet is one being published. (Objects
        // a writer put and never committed, before a crash, stay there: nothing lists them.)
        let shared_store = catalog.writer().is_some() && !config.storage.is_local();
        if !catalog.is_replica() && !shared_store {
            remove_unnamed_blocks(&*catalog, &*store);
        }
        let committed = catalog.wal_committed(tenant);
        let (wal, replay) = quarry_store::Wal::open(wal_dir, committed + 1)
            .map_err(|e| LiveError::Wal(e.to_string()))?;
        for damage in &replay.damaged {
            tracing::error!(
                segment = %damage.path.display(),
                offset = damage.offset,
                reason = damage.reason,
                "WAL segment damaged: records after this offset are lost"
            );
        }
        let last_seq = wal.last_seq();
        let state = State {
            disk,
            damaged,
            foreign: foreign
                .into_iter()
                .map(|(entry, writer)| (entry.id, writer))
                .collect(),
            memory: Vec::new(),
            unflushed_since: None,
            next_memory_id: first_memory_id(),
            snapshot: None,
            copies_dropped: Default::default(),
        };
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
        let actives = (0..cores)
            .map(|_| {
                Mutex::new(Active {
                    segment: SegmentBuilder::with_schema(schema.clone()),
                    counted_bytes: 0,
                })
            })
            .collect();
        let mut recovery = Recovery {
            torn_bytes: replay.torn_bytes,
            ..Default::default()
        };
        let chunk_cache = (config.chunk_cache_bytes > 0)
            .then(|| Arc::new(ChunkCache::new(config.chunk_cache_bytes)));
        let live = LiveIndex {
            gone: Mutex::default(),
            following: Mutex::default(),
            chunk_cache,
            writer: catalog.writer().map(str::to_owned),
            wal_dir: wal_dir.to_path_buf(),
            stats: BackgroundStats::default(),
            sealed: tokio::sync::broadcast::channel(TAIL_BACKLOG_BLOCKS).0,
            reported_damage: Arc::default(),
            documents: Mutex::default(),
            occurrences: Mutex::default(),
            retired: Mutex::default(),
            tenant: tenant.to_owned(),
            schema: Mutex::new(schema),
            config,
            catalog: Mutex::new(catalog),
            store,
            actives,
            next_active: AtomicUsize::new(0),
            active_bytes: AtomicUsize::new(0),
            last_seq: Mutex::new(last_seq),
            state: Mutex::new(state),
            wal: WalHandle::start(wal),
            seal_rounds: SealRounds {
                begun: AtomicU64::new(0),
                done: tokio::sync::watch::Sender::new(0),
                requested: Mutex::new(false),
                wake: Condvar::new(),
            },
        };
        let replayed = {
            let mut active = lock(&live.actives[0]);
            live.replay(&mut active, replay.records, committed)?
        };
        (recovery.records, recovery.events) = replayed;
        // Replayed events were acknowledged once: searchable before the first search.
        live.seal_round()?;
        Ok((live, recovery))
    }

    pub fn tenant(&self) -> &str {
        &self.tenant
    }

    fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// Every active segment, locked (in order).
    fn lock_actives(&self) -> Vec<MutexGuard<'_, Active>> {
        self.actives.iter().map(lock).collect()
    }

    /// A free active segment if there is one, else the next in turn (waiting for it).
    fn some_active(&self) -> MutexGuard<'_, Active> {
        let start = self.next_active.fetch_add(1, Ordering::Relaxed);
        let n = self.actives.len();
        for i in 0..n {
            if let Ok(active) = self.actives[(start + i) % n].try_lock() {
                return active;
            }
        }
        lock(&self.actives[start % n])
    }

    fn memory_bytes(&self, state: &State) -> usize {
        state.memory_block_bytes() + self.active_bytes.load(Ordering::Relaxed)
    }

    fn catalog(&self) -> MutexGuard<'_, Box<dyn Metastore>> {
        self.catalog.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Adds a batch. Its events are searchable once the seal round in the answer is done
    /// ([`LiveIndex::visible`]), and durable once its WAL wait completes (`durable` false: no
    /// wait, the WAL is synced within a second).
    pub fn ingest(&self, batch: Batch, durable: bool) -> Result<Ingested> {
        if batch.is_empty() {
            return Ok(Ingested {
                durable: None,
                visible_after: 0,
            });
        }
        if let Some(error) = self.wal.failure() {
            return Err(LiveError::Wal(error));
        }
        if self.catalog().is_replica() {
            return Err(quarry_store::CatalogError::ReadOnly {
                catalog: self.tenant.clone(),
            }
            .into());
        }
        // What `max_memory_bytes` bounds: events in memory and WAL records not yet written
        // (under `durability=async` a slow disk would otherwise let that queue grow).
        let bytes = self.memory_bytes(&self.state()) + self.wal.queued_bytes() as usize;
        if bytes > self.config.max_memory_bytes {
            return Err(LiveError::Full {
                bytes,
                limit: self.config.max_memory_bytes,
            });
        }
        let mut wait = None;
        let mut start = 0;
        while start < batch.len() {
            let end = (start + RECORD_EVENTS).min(batch.len());
            let mut active = self.some_active();
            self.add_events(&mut active, &batch.events[start..end])?;
            let mut last_seq = lock(&self.last_seq);
            *last_seq += 1;
            // Queued under the lock, so the WAL is written in sequence order. Only the last
            // record is waited for: the fsync that covers it covers the ones before.
            let last = end == batch.len();
            wait = self
                .wal
                .append(*last_seq, batch.payload(start..end), durable && last);
            drop(last_seq);
            drop(active);
            start = end;
        }
        // Every event is in an active segment now: the next round to begin seals them.
        let visible_after = self.seal_rounds.begun.load(Ordering::SeqCst) + 1;
        self.request_seal();
        Ok(Ingested {
            durable: wait,
            visible_after,
        })
    }

    /// A snapshot of everything added so far: a seal round first, then the published
    /// snapshot (for callers that add events without waiting for visibility, as tests do).
    pub fn snapshot(&self) -> Result<Arc<Searcher>> {
        self.seal_round()?;
        Ok(self.published_snapshot())
    }

    /// The snapshot of what is sealed now, without sealing: every acknowledged event is in
    /// it (an acknowledgement waits for the seal round that covers its events,
    /// [`LiveIndex::visible`]). What a server's searches use: they do no indexing work.
    pub fn published_snapshot(&self) -> Arc<Searcher> {
        let mut state = self.state();
        self.snapshot_of(&mut state)
    }

    /// Moves the block files that searches found damaged out of the searchable ones and into
    /// the damaged list, so later snapshots leave them out from the start, health and metrics
    /// count them, and merges skip them.
    fn take_reported_damage(&self, state: &mut State) {
        let reported = std::mem::take(&mut *lock(&self.reported_damage));
        for damaged in reported {
            if damaged.unreadable {
                tracing::warn!(
                    tenant = %self.tenant,
                    block = %damaged.path.display(),
                    error = %damaged.error,
                    "block could not be read: left out of that answer only"
                );
                continue;
            }
            let Some(at) = state
                .disk
                .iter()
                .position(|(id, _)| Some(*id) == damaged.block)
            else {
                // Already moved (two searches found it), or a memory block, whose bytes are
                // the server's own and cannot change under it.
                continue;
            };
            // A remote block's bytes were read from its local copy, which may be what is
            // damaged: the copy is dropped once, and later answers fetch from the store.
            let (id, reader) = &state.disk[at];
            if !state.copies_dropped.contains(id) && reader.discard_local_copy() {
                tracing::warn!(
                    tenant = %self.tenant,
                    block = %damaged.path.display(),
                    error = %damaged.error,
                    "a checksum failed in the local copy of a remote block: copy dropped, \
                     fetched again from the store"
                );
                state.copies_dropped.insert(*id);
                continue;
            }
            let (id, _) = state.disk.remove(at);
            tracing::error!(
                tenant = %self.tenant,
                block = %damaged.path.display(),
                error = %damaged.error,
                "block damaged while open: left out of answers until `quarry check --repair`"
            );
            state.damaged.push((id, damaged));
            state.snapshot = None;
        }
    }

    /// For a live tail: the snapshot of what is searchable now, and a receiver of every memory
    /// block sealed after it. Both are taken under the state lock, which seals also hold
    /// while they publish, so each event is in exactly one of the two: no gap, no repeat.
    pub fn subscribe(
        &self,
    ) -> (
        Arc<Searcher>,
        tokio::sync::broadcast::Receiver<Arc<BlockReader>>,
    ) {
        let mut state = self.state();
        let receiver = self.sealed.subscribe();
        (self.snapshot_of(&mut state), receiver)
    }

    /// The schema events are indexed and queries planned with.
    pub fn schema(&self) -> Arc<Schema> {
        lock(&self.schema).clone()
    }

    /// Grows the tenant's mapping by `update` (a mapped field cannot change) and commits it.
    /// Fields the active segments have not seen yet follow it at once; searches plan with it
    /// from the next snapshot. Returns the mapping now in force.
    pub fn set_mapping(&self, update: &Mapping) -> Result<Mapping> {
        let mapping = {
            let mut catalog = lock(&self.catalog);
            let mapping = catalog.set_mapping(update)?;
            let schema = Arc::new(Schema::from_settings(catalog.settings()));
            *lock(&self.schema) = schema.clone();
            for active in &self.actives {
                lock(active).segment.set_schema(schema.clone());
            }
            mapping
        };
        self.state().snapshot = None;
        Ok(mapping)
    }

    fn snapshot_of(&self, state: &mut State) -> Arc<Searcher> {
        self.take_reported_damage(state);
        if let Some(snapshot) = &state.snapshot {
            return snapshot.clone();
        }
        let blocks: Vec<Arc<BlockReader>> = state
            .disk
            .iter()
            .map(|(_, reader)| reader.clone())
            .chain(state.memory.iter().map(|m| m.reader.clone()))
            .collect();
        let damaged = state.damaged.iter().map(|(_, d)| d.clone()).collect();
        let deleted = self.dead_docs(&blocks);
        let searcher = Arc::new(
            Searcher::from_shared_with(blocks, self.schema())
                .with_deleted(deleted)
                .with_damaged(damaged)
                .with_damage_report({
                    let reported = self.reported_damage.clone();
                    Arc::new(move |damaged: &DamagedBlock| lock(&reported).push(damaged.clone()))
                })
                .with_chunk_cache(self.chunk_cache.clone()),
        );
        state.snapshot = Some(searcher.clone());
        searcher
    }

    /// Sets the ids whose events snapshots resolve (documents.rs), `added` being those the
    /// table did not list before: the next snapshot leaves out their dead events.
    pub(crate) fn set_documents(
        &self,
        entries: Arc<DocEntries>,
        generation: u64,
        added: Vec<String>,
    ) {
        {
            let mut documents = lock(&self.documents);
            documents.entries = entries;
            documents.generation = generation;
            documents.added.push_back((generation, added));
            while documents.added.len() > ADDED_KEPT {
                documents.added.pop_front();
            }
        }
        self.state().snapshot = None;
    }

    /// The dead events of resolved ids in `blocks` (documents.rs), by block key.
    fn dead_docs(&self, blocks: &[Arc<BlockReader>]) -> HashMap<usize, Arc<[u32]>> {
        let documents = lock(&self.documents);
        let (entries, generation) = (documents.entries.clone(), documents.generation);
        if entries.is_empty() {
            return HashMap::new();
        }
        let schema = self.schema();
        let mut cache = lock(&self.occurrences);
        let mut found = Vec::with_capacity(blocks.len());
        for block in blocks {
            let key = quarry_query::searcher::block_key(block);
            // Cached by the reader's unique id, not its address (the snapshot's key): a
            // reader dropped by a flush or merge may leave its address to a new one, which
            // must not be answered with the old block's events.
            let known = cache.get(&block.uid()).cloned();
            let events = match known {
                Some((at, events)) if at == generation => Ok(events),
                // Found before: only the ids listed since are looked for.
                Some((at, events))
                    if documents
                        .added
                        .front()
                        .is_some_and(|(first, _)| *first <= at + 1) =>
                {
                    let since: HashMap<String, crate::documents::Entry> = documents
                        .added
                        .iter()
                        .filter(|(g, _)| *g > at)
                        .flat_map(|(_, ids)| ids.iter())
                        .filter_map(|id| entries.get(id).map(|e| (id.clone(), *e)))
                        .collect();
                    if since.is_empty() {
                        // No id listed since (a listed id changed): nothing to look for.
                        Ok(events)
                    } else {
                        crate::documents::occurrences(block, &schema, &since).map(|more| {
                            let mut all = (*events).clone();
                            all.extend(more.iter().cloned());
                            Arc::new(all)
                        })
                    }
                }
                _ => crate::documents::occurrences(block, &schema, &entries),
            };
            match events {
                Ok(events) => {
                    cache.insert(block.uid(), (generation, events.clone()));
                    found.push((key, events));
                }
                Err(error) => {
                    tracing::warn!(block = %block.path().display(), %error,
                        "could not resolve the documents of a block");
                }
            }
        }
        drop(documents);
        let present: std::collections::HashSet<u64> = blocks.iter().map(|b| b.uid()).collect();
        cache.retain(|uid, _| present.contains(uid));
        crate::documents::dead_docs(&found, &entries)
    }

    pub fn stats(&self) -> &BackgroundStats {
        &self.stats
    }

    /// WAL records queued for the writer and not yet written.
    pub fn wal_queued(&self) -> u64 {
        self.wal.queued()
    }

    /// Bytes of the WAL segments on disk.
    pub fn wal_bytes(&self) -> u64 {
        std::fs::read_dir(&self.wal_dir)
            .map(|entries| {
                entries
                    .filter_map(|e| e.ok()?.metadata().ok())
                    .map(|m| m.len())
                    .sum()
            })
            .unwrap_or(0)
    }

    /// Bytes of the tenant's block files and memory blocks (what a stored-bytes quota counts).
    pub fn stored_bytes(&self) -> u64 {
        let state = self.state();
        let disk: u64 = state.disk.iter().map(|(_, reader)| reader.file_len()).sum();
        disk + state.memory_block_bytes() as u64
    }

    /// Retention: deletes the block files whose newest event is older than `cutoff` (ns since
    /// the epoch), the catalog first; returns how many. Memory blocks wait for their flush.
    pub fn drop_blocks_before(&self, cutoff: i64) -> Result<usize> {
        let mut catalog = self.catalog();
        let expired: Vec<u64> = catalog
            .blocks()
            .iter()
            .filter(|entry| entry.time_max < cutoff)
            .map(|entry| entry.id)
            .collect();
        if expired.is_empty() {
            return Ok(0);
        }
        // Out of the snapshot searches take before the files go; searches under way keep
        // their mapped copies until they end.
        {
            let mut state = self.state();
            let gone = take_out(&mut state, &expired);
            state.snapshot = None;
            drop(state);
            self.keep_gone(gone);
        }
        catalog.replace_blocks(&expired, Vec::new())?;
        drop(catalog);
        self.retire(&expired)?;
        Ok(expired.len())
    }

    /// Opens again the blocks that could not be read when the tenant opened (an object store
    /// that did not answer, `DamagedBlock::unreadable`): those that open now join the
    /// searchable ones. Returns how many did. Damage proper (a checksum) stays until
    /// `quarry check --repair`.
    /// Deletes the bytes of blocks a commit just retired (merged, expired). In a shared object
    /// store they stay `retired_grace` first: searchers that have not read the catalog since,
    /// or are searching them now, still read them (as Quickwit keeps deleted splits for a
    /// grace period). A crash before then leaves blocks no catalog names, which the next
    /// open removes.
    fn retire(&self, ids: &[u64]) -> Result<()> {
        if self.config.storage.is_local() || self.config.retired_grace.is_zero() {
            for &id in ids {
                self.store.delete(id)?;
            }
            return Ok(());
        }
        let mut retired = lock(&self.retired);
        retired.extend(ids.iter().map(|&id| (id, Instant::now())));
        Ok(())
    }

    /// Deletes the retired blocks whose grace has passed (a failure is logged and retried).
    fn delete_retired(&self) {
        let due: Vec<u64> = {
            let mut retired = lock(&self.retired);
            let (due, kept): (Vec<_>, Vec<_>) = retired
                .drain(..)
                .partition(|(_, at)| at.elapsed() >= self.config.retired_grace);
            *retired = kept;
            due.into_iter().map(|(id, _)| id).collect()
        };
        for id in due {
            if let Err(error) = self.store.delete(id) {
                tracing::warn!(tenant = %self.tenant, %error, "could not delete a retired block; retrying");
                lock(&self.retired).push((id, Instant::now()));
            }
        }
    }

    /// The writer this node commits the tenant's blocks as, where several indexers write it
    /// (a shared metastore).
    pub fn writer(&self) -> Option<String> {
        self.writer.clone()
    }

    /// `snapshot`, with the writer of each published block in it, read under the same lock
    /// the snapshot is made under (a commit or a refresh between the two could otherwise
    /// name a block the snapshot does not have, or miss one it has). Own blocks have this
    /// node's writer (None: a catalog of its own).
    pub fn planned_snapshot(&self) -> Result<(Arc<Searcher>, Vec<BlockWriter>)> {
        self.seal_round()?;
        let mut state = self.state();
        let searcher = self.snapshot_of(&mut state);
        let blocks = searcher
            .block_sizes()
            .filter(|&(id, _)| is_published_block(id))
            .map(|(id, bytes)| {
                let writer = state.foreign.get(&id).cloned();
                (id, writer.or_else(|| self.writer.clone()), bytes)
            })
            .collect();
        Ok((searcher, blocks))
    }

    /// A replica (a searcher's catalog), or a writer of a shared catalog for the other
    /// writers' blocks, reads the committed blocks again: blocks published since are opened
    /// and searchable, retired ones (merged, expired) leave, and a grown mapping is taken. Returns how many blocks came and went. New blocks are sent to
    /// live tails as a seal's are.
    pub fn refresh(&self) -> Result<(usize, usize)> {
        let _following = lock(&self.following);
        let (listing, own) = {
            let mut catalog = self.catalog();
            let settings_before = catalog.settings().clone();
            let changed = match catalog.refresh() {
                Ok(changed) => changed,
                // Another writer took this one's blocks over while it was silent: it opens
                // the catalog again (the blocks it flushes from now on are its own).
                Err(quarry_store::CatalogError::Fenced { .. })
                    if catalog.reopen_if_adopted()? =>
                {
                    tracing::warn!(tenant = %self.tenant, "another indexer took over this \
                        node's blocks while it was silent; the catalog is open again");
                    true
                }
                Err(error) => return Err(error.into()),
            };
            if !changed {
                return Ok((0, 0));
            }
            if catalog.settings() != &settings_before {
                // A mapping grown by another writer: followed as this node's own growth is.
                let schema = Arc::new(Schema::from_settings(catalog.settings()));
                *lock(&self.schema) = schema.clone();
                for active in &self.actives {
                    lock(active).segment.set_schema(schema.clone());
                }
            }
            let own: std::collections::HashSet<u64> =
                catalog.blocks().iter().map(|b| b.id).collect();
            (foreign_listing(&**catalog, &self.config), own)
        };
        let known = self.state().block_ids();
        let new: Vec<BlockEntry> = listing
            .iter()
            .filter(|(entry, _)| !known.contains(&entry.id))
            .map(|(entry, _)| entry.clone())
            .collect();
        // Opened without a lock held: over object storage an open is a round trip.
        let opened = quarry_store::block_store::open_all(&*self.store, &new);
        let listed: std::collections::HashMap<u64, String> = listing
            .into_iter()
            .map(|(entry, writer)| (entry.id, writer))
            .collect();
        let mut state = self.state();
        // Not listed any more, unless this writer took them over (`adopt_silent_writers`).
        let gone: std::collections::HashSet<u64> = state
            .foreign
            .keys()
            .filter(|id| !listed.contains_key(id) && !own.contains(id))
            .copied()
            .collect();
        let gone_ids: Vec<u64> = gone.iter().copied().collect();
        let retired = take_out(&mut state, &gone_ids);
        state.damaged.retain(|(id, _)| !gone.contains(id));
        state.foreign = listed;
        for (entry, opened) in new.iter().zip(opened) {
            if let Some(reader) = self.place_opened(&mut state, entry, opened) {
                // No tail listening is no error.
                let _ = self.sealed.send(reader);
            }
        }
        state.snapshot = None;
        drop(state);
        self.keep_gone(retired);
        Ok((new.len(), gone.len()))
    }

    /// Over a shared metastore and object storage: takes over the blocks of the tenant's
    /// writers silent for `adopt_after` (`Metastore::adopt_silent`), so that this writer
    /// merges and expires them with its own. Returns how many it took.
    pub fn adopt_silent_writers(&self) -> Result<usize> {
        if self.config.storage.is_local() || self.writer.is_none() {
            return Ok(0);
        }
        let _following = lock(&self.following);
        let ids = self.catalog().adopt_silent(self.config.adopt_after)?;
        if ids.is_empty() {
            return Ok(0);
        }
        let known = {
            let mut state = self.state();
            for id in &ids {
                state.foreign.remove(id);
            }
            state.snapshot = None;
            state.block_ids()
        };
        // Blocks published just before their writer fell silent, not read here yet.
        let unseen: Vec<BlockEntry> = self
            .catalog()
            .blocks()
            .iter()
            .filter(|entry| ids.contains(&entry.id) && !known.contains(&entry.id))
            .cloned()
            .collect();
        let opened = quarry_store::block_store::open_all(&*self.store, &unseen);
        let mut state = self.state();
        for (entry, opened) in unseen.iter().zip(opened) {
            self.place_opened(&mut state, entry, opened);
        }
        state.snapshot = None;
        Ok(ids.len())
    }

    /// A block of the catalog just opened joins the searchable ones (returned), or the
    /// damaged ones when it could not be opened.
    fn place_opened(
        &self,
        state: &mut State,
        entry: &BlockEntry,
        opened: std::result::Result<BlockReader, quarry_format::FormatError>,
    ) -> Option<Arc<BlockReader>> {
        match opened {
            Ok(reader) => {
                let reader = Arc::new(reader);
                state.disk.push((entry.id, reader.clone()));
                Some(reader)
            }
            Err(error) => {
                let path = self.store.location(entry.id);
                tracing::warn!(block = %path.display(), %error, "damaged block left out");
                state
                    .damaged
                    .push((entry.id, DamagedBlock::of(Some(entry.id), path, &error)));
                None
            }
        }
    }

    /// Keeps the readers of blocks that just left the catalog (merged, expired, retired by
    /// their writer) for `GONE_KEPT`: a plan made before they left may still deal them to
    /// this node, which then searches them as the plan saw them.
    fn keep_gone(&self, readers: Vec<(u64, Arc<BlockReader>)>) {
        let kept = GONE_KEPT.min(self.config.retired_grace);
        let mut gone = lock(&self.gone);
        gone.retain(|(_, _, at)| at.elapsed() < kept);
        let now = Instant::now();
        gone.extend(readers.into_iter().map(|(id, reader)| (id, reader, now)));
    }

    /// The blocks among `ids` (which a plan listed, so they were committed) that this node
    /// does not list: those that left within `GONE_KEPT` (`keep_gone`), and over a shared
    /// object store those it never listed (published and merged between two of its reads),
    /// opened by id, their objects staying `retired_grace` after they leave. One that cannot
    /// be opened is left out (the caller reports it).
    pub fn recently_gone(&self, ids: &[u64]) -> Vec<Arc<BlockReader>> {
        let kept = GONE_KEPT.min(self.config.retired_grace);
        let mut found: Vec<(u64, Arc<BlockReader>)> = lock(&self.gone)
            .iter()
            .filter(|(id, _, at)| ids.contains(id) && at.elapsed() < kept)
            .map(|(id, reader, _)| (*id, reader.clone()))
            .collect();
        if !self.config.storage.is_local() {
            let unseen: Vec<BlockEntry> = ids
                .iter()
                .filter(|id| !found.iter().any(|(f, _)| f == *id))
                .map(|&id| BlockEntry {
                    id,
                    docs: 0,
                    time_min: 0,
                    time_max: 0,
                    bytes: 0,
                    open_from: 0,
                })
                .collect();
            let opened = quarry_store::block_store::open_all(&*self.store, &unseen);
            let mut newly = Vec::new();
            for (entry, opened) in unseen.iter().zip(opened) {
                match opened {
                    Ok(reader) => newly.push((entry.id, Arc::new(reader))),
                    Err(error) => {
                        tracing::warn!(tenant = %self.tenant, block = entry.id, %error, "a block a plan listed is not in the store")
                    }
                }
            }
            found.extend(newly.iter().cloned());
            self.keep_gone(newly);
        }
        found.into_iter().map(|(_, reader)| reader).collect()
    }

    pub fn reopen_unreadable(&self) -> usize {
        let waiting: Vec<u64> = self
            .state()
            .damaged
            .iter()
            .filter(|(_, damage)| damage.unreadable)
            .map(|(id, _)| *id)
            .collect();
        if waiting.is_empty() {
            return 0;
        }
        let entries: Vec<BlockEntry> = {
            let catalog = self.catalog();
            catalog
                .blocks()
                .iter()
                .chain(catalog.others())
                .filter(|entry| waiting.contains(&entry.id))
                .cloned()
                .collect()
        };
        // Opened without a lock held: over object storage an open is a round trip.
        let opened = quarry_store::block_store::open_all(&*self.store, &entries);
        let mut state = self.state();
        let mut reopened = 0;
        for (entry, opened) in entries.iter().zip(opened) {
            let Ok(reader) = opened else {
                continue;
            };
            // Still waiting (retention or a repair may have taken it meanwhile).
            let Some(at) = state.damaged.iter().position(|(id, _)| *id == entry.id) else {
                continue;
            };
            state.damaged.remove(at);
            state.disk.push((entry.id, Arc::new(reader)));
            state.snapshot = None;
            reopened += 1;
            tracing::info!(
                tenant = %self.tenant,
                block = %self.store.location(entry.id).display(),
                "a block that could not be read at start is searchable"
            );
        }
        reopened
    }

    /// Events in memory (not yet in block files), and their approximate bytes.
    pub fn memory_usage(&self) -> (u64, usize) {
        let actives = self.lock_actives();
        let state = self.state();
        let events = actives
            .iter()
            .map(|a| u64::from(a.segment.doc_count()))
            .chain(state.memory.iter().map(|m| u64::from(m.reader.doc_count())))
            .sum();
        (events, self.memory_bytes(&state))
    }

    /// One round of background work: a flush if one is due, else a compaction of memory
    /// blocks if there are too many, else one merge step of block files if one is due.
    /// Returns whether it did anything.
    pub fn background_step(&self) -> Result<bool> {
        self.delete_retired();
        if self.wal.failure().is_some() {
            // Nothing is flushed from a memory that may hold events of failed requests.
            return self.recover_wal();
        }
        let due = {
            let state = self.state();
            let bytes = self.memory_bytes(&state);
            let old = state
                .unflushed_since
                .is_some_and(|since| since.elapsed() >= self.config.flush_interval);
            let has_events = state.unflushed_since.is_some();
            has_events && (old || bytes >= self.config.flush_bytes)
        };
        if due {
            self.flush()?;
            return Ok(true);
        }
        if self.compaction_due() {
            self.compact_memory()?;
            return Ok(true);
        }
        self.merge_step()
    }

    /// One seal round: every active segment with events becomes a memory block, one at a
    /// time (ingest goes on in the others). An event added before the round began is sealed
    /// by it: its ingest released the segment first. Rounds are numbered; `visible` waits for
    /// a round that began after an ingest finished adding.
    pub fn seal_round(&self) -> Result<()> {
        let round = self.seal_rounds.begun.fetch_add(1, Ordering::SeqCst) + 1;
        self.stats.seal_rounds.fetch_add(1, Ordering::Relaxed);
        for active in &self.actives {
            let mut active = lock(active);
            if let Some(segment) = self.take(&mut active) {
                self.seal(vec![segment])?;
            }
        }
        self.seal_rounds
            .done
            .send_modify(|done| *done = (*done).max(round));
        Ok(())
    }

    /// Completes once the seal round `round` (from [`Ingested::visible_after`]) is done: the
    /// request's events are then in every new snapshot.
    pub async fn visible(&self, round: u64) {
        let mut done = self.seal_rounds.done.subscribe();
        let _ = done.wait_for(|done| *done >= round).await;
    }

    /// Runs seal rounds until `stop`: at once while ingests wait for one (back to back under
    /// load, so a round seals what arrived during the previous one: group commit, for
    /// visibility), else every `seal_interval` if there are events.
    pub fn run_sealer(&self, stop: &std::sync::atomic::AtomicBool) {
        while !stop.load(Ordering::Relaxed) {
            {
                let requested = lock(&self.seal_rounds.requested);
                let (mut requested, _) = self
                    .seal_rounds
                    .wake
                    .wait_timeout_while(requested, self.config.seal_interval, |r| {
                        !*r && !stop.load(Ordering::Relaxed)
                    })
                    .unwrap_or_else(|p| p.into_inner());
                *requested = false;
            }
            if let Err(error) = self.seal_round() {
                tracing::error!(%error, "sealing failed; retrying");
                std::thread::sleep(Duration::from_secs(1));
            }
        }
        // Whoever still waits gets a last round.
        let _ = self.seal_round();
    }

    /// Wakes the sealer thread (an ingest waits for visibility).
    fn request_seal(&self) {
        *lock(&self.seal_rounds.requested) = true;
        self.seal_rounds.wake.notify_one();
    }

    /// Writes every event in memory to block files and commits them with their WAL position.
    pub fn flush(&self) -> Result<()> {
        if self.catalog().is_replica() {
            return Ok(());
        }
        let started = Instant::now();
        let (blocks, through) = {
            // All active segments held: every event with a sequence number up to `through`
            // is sealed below, and none after it is anywhere yet.
            let mut actives = self.lock_actives();
            let through = *lock(&self.last_seq);
            let segments = actives.iter_mut().filter_map(|a| self.take(a)).collect();
            self.seal(segments)?;
            let memory = self.state().memory.clone();
            (memory, through)
        };
        if blocks.is_empty() {
            return Ok(());
        }
        // A big memory block is written as it is. The small ones (seal rounds under load
        // make many) are merged into as few files as the merge policy allows, in one merge of
        // them all: written one by one they would be merged by the size-tiered merge ten at a
        // time, over and over (BENCHMARKS.md, "Fewer passes over each event").
        let small = self.small_block_bytes();
        let (mut to_merge, mut as_is): (Vec<&MemoryBlock>, Vec<&MemoryBlock>) =
            blocks.iter().partition(|b| b.bytes.len() < small);
        if to_merge.len() < 2 {
            // One small block is written as it is, like a big one.
            as_is.append(&mut to_merge);
        }
        // The catalog is held only to take ids and to commit, never while blocks are written
        // (with a remote store, that would be network I/O under the lock).
        let mut entries = Vec::with_capacity(as_is.len() + 1);
        for block in as_is {
            let id = self.catalog().allocate_block_id()?;
            self.store.put_bytes(id, &block.bytes)?;
            entries.push(BlockEntry::of(
                id,
                block.reader.manifest(),
                block.bytes.len() as u64,
            ));
        }
        if !to_merge.is_empty() {
            let readers: Vec<&BlockReader> = to_merge.iter().map(|b| &*b.reader).collect();
            let merged = merge_readers(
                &readers,
                &sizes(&readers),
                self.schema(),
                &self.config.merge,
                &Progress::default(),
                |input| {
                    let id = self.catalog().allocate_block_id()?;
                    write_block(&*self.store, id, input)
                },
            )?;
            entries.extend(merged);
        }
        // Only durable events are committed: events of requests whose WAL record failed were
        // answered with an error, and the recovery drops them.
        if let Err(error) = self.wal.barrier() {
            for entry in &entries {
                let _ = self.store.delete(entry.id);
            }
            return Err(LiveError::Wal(error));
        }
        self.catalog()
            .commit_flush(entries.clone(), &self.tenant, through)?;
        let opened = open_entries(&*self.store, &entries)?;
        {
            let mut state = self.state();
            state.memory.drain(..blocks.len());
            state.disk.extend(opened);
            if state.memory.is_empty() && self.active_bytes.load(Ordering::Relaxed) == 0 {
                state.unflushed_since = None;
            }
            state.snapshot = None;
        }
        tracing::debug!(tenant = %self.tenant, blocks = entries.len(), through, took = ?started.elapsed(), "flushed");
        BackgroundStats::record(&self.stats.flushes, &self.stats.flush_nanos, started);
        self.wal.committed(through);
        Ok(())
    }

    /// Adds the events of the WAL records past `committed` (those not in committed blocks) to
    /// `active`; returns how many records and events.
    fn replay(
        &self,
        active: &mut Active,
        records: Vec<quarry_store::WalRecord>,
        committed: u64,
    ) -> Result<(usize, usize)> {
        let (mut replayed, mut events) = (0, 0);
        for record in records.into_iter().filter(|r| r.seq > committed) {
            let batch = Batch::from_payload(record.seq, &record.payload)?;
            replayed += 1;
            events += batch.len();
            self.add_events(active, &batch)?;
        }
        Ok((replayed, events))
    }

    /// After the WAL failed (a full disk): once it can write again, drops the records it did
    /// not make durable and rebuilds memory from the records on disk, so that events of
    /// requests answered with an error are not stored (a client's retry would store them
    /// twice), while every acknowledged event stays. The same replay as a restart's. Runs on
    /// the background thread, which also flushes and compacts memory, so neither runs
    /// meanwhile; every active segment and the sequence lock are held, so no ingest or seal
    /// does either. Returns whether the log recovered.
    fn recover_wal(&self) -> Result<bool> {
        // Read before the segments are locked (the catalog lock is taken before them
        // elsewhere); only a flush, on this thread, changes it.
        let committed = self.catalog().wal_committed(&self.tenant);
        let mut actives = self.lock_actives();
        let mut last_seq = lock(&self.last_seq);
        let (durable, records) = match self.wal.recover() {
            Ok(recovered) => recovered,
            Err(reason) => {
                tracing::debug!(tenant = %self.tenant, %reason, "write-ahead log not recovered yet");
                return Ok(false);
            }
        };
        let dropped = *last_seq - durable;
        for active in actives.iter_mut() {
            drop(self.take(active));
        }
        {
            let mut state = self.state();
            state.memory.clear();
            state.unflushed_since = None;
            state.snapshot = None;
        }
        // `Wal::recover` cut off every record past `durable`.
        let (_, replayed) = self.replay(&mut actives[0], records, committed)?;
        *last_seq = durable;
        drop(last_seq);
        drop(actives);
        self.seal_round()?;
        tracing::warn!(
            tenant = %self.tenant,
            dropped_records = dropped,
            replayed_events = replayed,
            "write-ahead log recovered: records of failed requests dropped, memory rebuilt from the log"
        );
        Ok(true)
    }

    /// Memory blocks below this many bytes are merged once there are more than
    /// `max_memory_blocks` of them (searches during ingest seal many small ones); bigger ones
    /// wait for the flush as they are, so no event is merged over and over.
    fn small_block_bytes(&self) -> usize {
        (self.config.seal_bytes / 8).max(64 << 10)
    }

    /// Whether there are enough small memory blocks to merge.
    fn compaction_due(&self) -> bool {
        let small = self.small_block_bytes();
        let state = self.state();
        state
            .memory
            .iter()
            .filter(|b| b.bytes.len() < small)
            .count()
            > self.config.max_memory_blocks
    }

    /// Merges the small memory blocks there are now into one (or as few as the block limits
    /// allow), in the place of the first of them.
    fn compact_memory(&self) -> Result<()> {
        let small = self.small_block_bytes();
        let (positions, blocks): (Vec<usize>, Vec<MemoryBlock>) = self
            .state()
            .memory
            .iter()
            .enumerate()
            .filter(|(_, b)| b.bytes.len() < small)
            .map(|(i, b)| (i, b.clone()))
            .unzip();
        if blocks.len() < 2 {
            return Ok(());
        }
        let started = Instant::now();
        let readers: Vec<&BlockReader> = blocks.iter().map(|b| &*b.reader).collect();
        let sizes = sizes(&readers);
        let mut next_id = {
            let mut state = self.state();
            let first = state.next_memory_id;
            // Reserve as many ids as there are inputs: a merge never writes more.
            state.next_memory_id += blocks.len() as u64;
            first
        };
        let merged = merge_readers(
            &readers,
            &sizes,
            self.schema(),
            &self.config.merge,
            &Progress::default(),
            |input| {
                let block = encode_memory_block(input, &self.tenant, next_id)?;
                next_id += 1;
                Ok(block)
            },
        )?;
        let mut state = self.state();
        // Only this thread removes or replaces memory blocks, and ingest only appends, so
        // the positions still hold these blocks.
        for &position in positions.iter().rev() {
            state.memory.remove(position);
        }
        let at = positions[0];
        let (inputs, outputs) = (positions.len(), merged.len());
        state.memory.splice(at..at, merged);
        state.snapshot = None;
        let docs: u64 = sizes.iter().map(|(_, docs)| docs).sum();
        tracing::debug!(inputs, outputs, docs, took = ?started.elapsed(), "compacted memory blocks");
        BackgroundStats::record(
            &self.stats.compactions,
            &self.stats.compaction_nanos,
            started,
        );
        Ok(())
    }

    /// One size-tiered merge of block files, if one is due. The catalog is held to pick the
    /// inputs, to take ids and to commit, never while blocks are read and written (merges run
    /// on this tenant's background thread only, so the inputs stay as picked).
    fn merge_step(&self) -> Result<bool> {
        let (ids, inputs) = {
            let catalog = self.catalog();
            let damaged: Vec<u64> = self.state().damaged.iter().map(|(id, _)| *id).collect();
            let ids = pick_merge_skipping(catalog.blocks(), &damaged, &self.config.merge);
            if ids.is_empty() {
                return Ok(false);
            }
            let inputs = entries_of(catalog.blocks(), &ids, &*self.store)?;
            (ids, inputs)
        };
        let started = Instant::now();
        let merged = merge_into(
            &inputs,
            &*self.store,
            &mut || Ok(self.catalog().allocate_block_id()?),
            self.schema(),
            &self.config.merge,
            &Progress::default(),
        );
        let merged = match merged {
            Ok(merged) => merged,
            Err(quarry_index::error::IndexError::Format(error)) => {
                // A damaged input: leave it out of later merges and of answers.
                let bad = error.path().and_then(|path| self.store.find(path, &ids));
                let Some(id) = bad else {
                    return Err(LiveError::Format(error));
                };
                if matches!(error, quarry_format::FormatError::Io { .. }) {
                    // Unreadable, not damaged (a store that did not answer): the merge is
                    // tried again later.
                    return Err(LiveError::Format(error));
                }
                tracing::warn!(%error, block = id, "damaged block left out of merging");
                let mut state = self.state();
                state.disk.retain(|(disk_id, _)| *disk_id != id);
                state.damaged.push((
                    id,
                    DamagedBlock::of(Some(id), self.store.location(id), &error),
                ));
                state.snapshot = None;
                return Ok(true);
            }
            Err(other) => return Err(other.into()),
        };
        self.catalog().replace_blocks(&ids, merged.clone())?;
        self.retire(&ids)?;
        let opened = open_entries(&*self.store, &merged)?;
        let mut state = self.state();
        let inputs = take_out(&mut state, &ids);
        state.disk.extend(opened);
        state.snapshot = None;
        drop(state);
        self.keep_gone(inputs);
        let docs: u64 = merged.iter().map(|entry| entry.docs).sum();
        tracing::debug!(inputs = ids.len(), outputs = merged.len(), docs, took = ?started.elapsed(), "merged");
        BackgroundStats::record(&self.stats.merges, &self.stats.merge_nanos, started);
        Ok(true)
    }

    /// Adds events to an active segment, sealing it when a block limit or `seal_bytes` is
    /// reached.
    fn add_events(&self, active: &mut Active, events: &[Event]) -> Result<()> {
        for event in events {
            let names = event.fields.iter().map(|(name, _)| name.as_str());
            if !active.segment.has_room_for(names) || active.segment.is_full() {
                let full = self.take(active);
                self.seal(full.into_iter().collect())?;
            }
            active.segment.add_event(
                event.time,
                event
                    .fields
                    .iter()
                    .map(|(name, value)| (name.as_str(), value)),
            );
        }
        let bytes = active.segment.memory_bytes();
        if bytes >= self.config.seal_bytes {
            let full = self.take(active);
            self.seal(full.into_iter().collect())?;
        } else {
            self.active_bytes
                .fetch_add(bytes - active.counted_bytes, Ordering::Relaxed);
            active.counted_bytes = bytes;
        }
        let mut state = self.state();
        state.unflushed_since.get_or_insert_with(Instant::now);
        state.snapshot = None;
        Ok(())
    }

    /// The events of an active segment, leaving it empty (None if it was).
    fn take(&self, active: &mut Active) -> Option<SegmentBuilder> {
        if active.segment.is_empty() {
            return None;
        }
        self.active_bytes
            .fetch_sub(active.counted_bytes, Ordering::Relaxed);
        active.counted_bytes = 0;
        Some(std::mem::replace(
            &mut active.segment,
            SegmentBuilder::with_schema(self.schema()),
        ))
    }

    /// Turns segments taken from active ones into memory blocks. The caller still holds the
    /// active segments they came from, so no search runs between the take and the push; the
    /// encoding runs without the state lock, so other requests go on meanwhile.
    fn seal(&self, segments: Vec<SegmentBuilder>) -> Result<()> {
        if segments.is_empty() {
            return Ok(());
        }
        let first_id = {
            let mut state = self.state();
            let first = state.next_memory_id;
            state.next_memory_id += segments.len() as u64;
            first
        };
        let blocks = segments
            .into_iter()
            .zip(first_id..)
            .map(|(segment, id)| encode_memory_block(segment.into_block_input()?, &self.tenant, id))
            .collect::<Result<Vec<_>, _>>()?;
        let mut state = self.state();
        for block in &blocks {
            // No receiver (no live tail) is not an error.
            let _ = self.sealed.send(block.reader.clone());
        }
        state.memory.extend(blocks);
        state.snapshot = None;
        Ok(())
    }

    /// Why the WAL stopped taking records, if it did (then ingest is refused).
    pub fn wal_failure(&self) -> Option<String> {
        self.wal.failure()
    }

    /// Stops the WAL writer after it has synced everything queued.
    pub fn close(&self) {
        self.wal.close();
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

fn encode_memory_block(
    input: BlockInput,
    tenant: &str,
    id: u64,
) -> Result<MemoryBlock, quarry_index::error::IndexError> {
    let name = PathBuf::from(format!("memory/{tenant}/{id}.qblk"));
    let mut bytes = Vec::new();
    quarry_format::block::encode_block(&name, input, &mut bytes)?;
    let bytes = Arc::new(bytes);
    let reader = BlockReader::from_bytes(&name, bytes.clone())?.with_id(id);
    Ok(MemoryBlock {
        reader: Arc::new(reader),
        bytes,
    })
}

fn sizes(readers: &[&BlockReader]) -> Vec<(u64, u64)> {
    readers
        .iter()
        .map(|r| (r.file_len(), u64::from(r.doc_count())))
        .collect()
}

/// Deletes the blocks `store` holds that the catalog does not name: written but never
/// committed (a crash between an upload and the catalog's commit), or retired by a commit
/// whose delete then failed. Safe only while nothing writes blocks for the tenant (at open:
/// one writer per tenant holds its catalog). A failure to list or delete costs storage, not
/// data: it is logged and the next open tries again.
impl LiveIndex {
    /// Deletes every block in this tenant's store, for a deleted tenant (closed, its catalog
    /// gone): with object storage its objects would otherwise stay, billed and unnamed.
    /// Returns how many; a block that cannot be deleted is logged and left.
    pub fn delete_all_blocks(&self) -> usize {
        let stored = match self.store.list() {
            Ok(ids) => ids,
            Err(error) => {
                tracing::warn!(tenant = %self.tenant, %error, "could not list a deleted tenant's blocks");
                return 0;
            }
        };
        let mut deleted = 0;
        for id in stored {
            match self.store.delete(id) {
                Ok(()) => deleted += 1,
                Err(error) => {
                    tracing::warn!(tenant = %self.tenant, %error, "could not delete a deleted tenant's block")
                }
            }
        }
        deleted
    }
}

/// The blocks of `catalog` that other nodes write and this one searches, with their writers
/// ('' where not known): a replica's, and a writer's of a shared catalog over shared object
/// storage, the other writers' (their bytes are where this node reads them). Over local
/// storage another writer's blocks are on its own disk: none.
fn foreign_listing(catalog: &dyn Metastore, config: &IngestConfig) -> Vec<(BlockEntry, String)> {
    let entries = if catalog.is_replica() {
        catalog.blocks()
    } else if !config.storage.is_local() {
        catalog.others()
    } else {
        &[]
    };
    entries
        .iter()
        .map(|entry| {
            let writer = catalog.writer_of(entry.id).unwrap_or_default();
            (entry.clone(), writer.to_owned())
        })
        .collect()
}

/// A published block of a snapshot: its id, writer and bytes (`LiveIndex::planned_snapshot`;
/// 0 bytes for a block that could not be opened).
pub type BlockWriter = (u64, Option<String>, u64);

/// How long blocks that left the catalog stay searchable for plans made before (at most the
/// retired grace, after which a shared store's objects go).
const GONE_KEPT: Duration = Duration::from_secs(30);

/// Takes the blocks `ids` out of the searchable ones, returning their readers.
fn take_out(state: &mut State, ids: &[u64]) -> Vec<(u64, Arc<BlockReader>)> {
    let (out, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut state.disk)
        .into_iter()
        .partition(|(id, _)| ids.contains(id));
    state.disk = kept;
    out
}

fn remove_unnamed_blocks(catalog: &dyn Metastore, store: &dyn BlockStore) {
    let named: std::collections::HashSet<u64> = catalog.blocks().iter().map(|b| b.id).collect();
    let stored = match store.list() {
        Ok(ids) => ids,
        Err(error) => {
            tracing::warn!(%error, "could not list the block store to remove unnamed blocks");
            return;
        }
    };
    for id in stored.into_iter().filter(|id| !named.contains(id)) {
        match store.delete(id) {
            Ok(()) => {
                tracing::info!(block = %store.location(id).display(), "removed a block no catalog names")
            }
            Err(error) => tracing::warn!(%error, "could not remove a block no catalog names"),
        }
    }
}

fn open_entries(
    store: &dyn BlockStore,
    entries: &[BlockEntry],
) -> Result<Vec<(u64, Arc<BlockReader>)>> {
    let opened = quarry_store::block_store::open_all(store, entries);
    entries
        .iter()
        .zip(opened)
        .map(|(e, opened)| Ok((e.id, Arc::new(opened?))))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_block_ids_start_apart_and_leave_room_for_a_union_of_tenants() {
        let starts: std::collections::BTreeSet<u64> = (0..200).map(|_| first_memory_id()).collect();
        // Random places: 200 draws of 65,279 share a place with odds of about one in four,
        // never more than a few.
        assert!(starts.len() >= 195, "{}", starts.len());
        for &start in &starts {
            assert!(!is_published_block(start));
            assert_eq!((start - MEMORY_BLOCK_IDS) % (1 << 40), 0);
            // A node's next 2^40 memory blocks stay below the union's part bits (2^56).
            assert!(start + (1 << 40) <= 1 << 56, "{start}");
        }
    }
}
